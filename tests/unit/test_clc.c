/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the peer handshake codec (proxy/smc/clc.c): the wire layout of
 * each message against bytes written out by hand from smcproxy-protocol(7),
 * round trips, every rejected field and truncation, the TLV rules, the
 * HMAC proofs against values computed independently (openssl dgst), and
 * the shared secret file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "smc/clc.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The two transports' addresses, as the codec keeps them: opaque values by
 * TLV type (their checks are the transports', test_shm.c and
 * test_rdma_pd.c). */
#define SHM_LEN(x)	((x).addr[CLC_TLV_SHM_NAME - 1].len)
#define SHM_NAME(x)	((char *)(x).addr[CLC_TLV_SHM_NAME - 1].value)
#define RDMA_LEN(x)	((x).addr[CLC_TLV_RDMA_ADDR - 1].len)
#define RDMA_ADDR(x)	((x).addr[CLC_TLV_RDMA_ADDR - 1].value)

/* p[0..n) = start, start+1, ... */
static void fill(uint8_t *p, uint8_t start, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(start + i);
}

static void sample_proposal(struct clc_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = CLC_PROPOSAL;
	m->proposal.features = CLC_FEAT_PSK;
	m->proposal.transports = CLC_TR_SHM | CLC_TR_RDMA;
	fill(m->proposal.host_id, 0x40, CLC_HOST_ID_LEN);
	fill(m->proposal.nonce, 0x10, CLC_NONCE_LEN);
	m->proposal.ring_size = 256 << 10;
	m->proposal.links = 2;
	m->proposal.max_flows_per_link = 1024;
	fill(m->proposal.mac, 0x90, CLC_MAC_LEN);
	strcpy(SHM_NAME(m->proposal), "smcp-1.a_B");
	SHM_LEN(m->proposal) = 10;
	memcpy(RDMA_ADDR(m->proposal), "\xc0\xa8\x00\x01", 4);
	RDMA_LEN(m->proposal) = 4;
}

static void sample_accept(struct clc_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = CLC_ACCEPT;
	m->accept.features = CLC_FEAT_PSK;
	m->accept.transport = CLC_TR_SHM;
	fill(m->accept.host_id, 0x50, CLC_HOST_ID_LEN);
	fill(m->accept.nonce, 0x20, CLC_NONCE_LEN);
	m->accept.ring_size = 256 << 10;
	m->accept.links = 2;
	m->accept.max_flows_per_link = 1024;
	fill(m->accept.lgr_id, 0x30, CLC_LGR_ID_LEN);
	fill(m->accept.mac, 0x60, CLC_MAC_LEN);
	strcpy(SHM_NAME(m->accept), "lgr-0001");
	SHM_LEN(m->accept) = 8;
}

static void sample_confirm(struct clc_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = CLC_CONFIRM;
	fill(m->confirm.mac, 0x80, CLC_MAC_LEN);
}

static void sample_decline(struct clc_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = CLC_DECLINE;
	m->decline.reason = CLC_DECL_POLICY;
}

static void (*const samples[])(struct clc_msg *) = {
	sample_proposal, sample_accept, sample_confirm, sample_decline,
};

/*
 * Decodes from a heap copy of exactly n bytes, so that under
 * AddressSanitizer (make check-asan) any read past the end is caught.
 */
static int decode(const uint8_t *buf, size_t n, struct clc_msg *m)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, n);
	r = clc_decode(copy, n, m);
	free(copy);
	return r;
}

static void set_len(uint8_t *buf, size_t n)
{
	buf[6] = (uint8_t)(n >> 8);
	buf[7] = (uint8_t)n;
}

/* Encodes m, checking the length the header claims. */
static size_t encode(const struct clc_msg *m, uint8_t *buf, size_t cap)
{
	int n = clc_encode(m, buf, cap);

	assert_true(n >= CLC_HDR_LEN);
	assert_int_equal((buf[6] << 8 | buf[7]), n);
	return (size_t)n;
}

/* decode(encode(m)) must give m back, with the header filled in. */
static void assert_round_trip(struct clc_msg *m)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg back;
	size_t n;

	n = encode(m, buf, sizeof(buf));
	assert_int_equal(decode(buf, n, &back), 0);
	m->hdr.version = CLC_VERSION;
	m->hdr.length = (uint16_t)n;
	assert_memory_equal(&back, m, sizeof(*m));
}

static void test_proposal_wire(void **state)
{
	static const uint8_t want[] = {
		0x53, 0x4d, 0x43, 0x50, 0x02, 0x01, 0x00, 0x6a,	/* "SMCP" v2 PROPOSAL 106 */
		0x00, 0x00, 0x00, 0x01,				/* features: PSK */
		0x03, 0x00, 0x00, 0x00,				/* shm|rdma, reserved */
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,	/* host_id */
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,	/* nonce */
		0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
		0x00, 0x04, 0x00, 0x00,				/* ring_size 256 KiB */
		0x00, 0x02, 0x04, 0x00,				/* links 2, flows 1024 */
		0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,	/* mac */
		0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
		0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
		0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
		0x01, 0x0a, 's', 'm', 'c', 'p', '-', '1', '.', 'a', '_', 'B',
		0x02, 0x04, 0xc0, 0xa8, 0x00, 0x01,
	};
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;

	(void)state;
	sample_proposal(&m);
	assert_int_equal(clc_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_accept_wire(void **state)
{
	static const uint8_t want[] = {
		0x53, 0x4d, 0x43, 0x50, 0x02, 0x02, 0x00, 0x72,	/* v2 ACCEPT 114 */
		0x00, 0x00, 0x00, 0x01,				/* features: PSK */
		0x01, 0x00, 0x00, 0x00,				/* shm, reserved */
		0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,	/* host_id */
		0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,	/* nonce */
		0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
		0x00, 0x04, 0x00, 0x00,				/* ring_size */
		0x00, 0x02, 0x04, 0x00,				/* links, flows */
		0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,	/* lgr_id */
		0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
		0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67,	/* mac */
		0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f,
		0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77,
		0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f,
		0x01, 0x08, 'l', 'g', 'r', '-', '0', '0', '0', '1',
	};
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;

	(void)state;
	sample_accept(&m);
	assert_int_equal(clc_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_confirm_decline_wire(void **state)
{
	static const uint8_t decline[] = {
		0x53, 0x4d, 0x43, 0x50, 0x02, 0x04, 0x00, 0x0c, 0x05, 0x00, 0x00, 0x00,
	};
	static const uint8_t confirm_hdr[] = {
		0x53, 0x4d, 0x43, 0x50, 0x02, 0x03, 0x00, 0x28,
	};
	uint8_t buf[CLC_MSG_MAX], mac[CLC_MAC_LEN];
	struct clc_msg m;

	(void)state;
	sample_decline(&m);
	assert_int_equal(clc_encode(&m, buf, sizeof(buf)), sizeof(decline));
	assert_memory_equal(buf, decline, sizeof(decline));

	sample_confirm(&m);
	assert_int_equal(clc_encode(&m, buf, sizeof(buf)), 40);
	assert_memory_equal(buf, confirm_hdr, sizeof(confirm_hdr));
	fill(mac, 0x80, sizeof(mac));
	assert_memory_equal(buf + 8, mac, sizeof(mac));
}

static void test_round_trips(void **state)
{
	struct clc_msg m;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(samples); i++) {
		samples[i](&m);
		assert_round_trip(&m);
	}

	/* Without TLVs, with each one alone, and at the limits. */
	sample_proposal(&m);
	SHM_LEN(m.proposal) = 0;
	memset(SHM_NAME(m.proposal), 0, CLC_ADDR_MAX);
	assert_round_trip(&m);
	RDMA_LEN(m.proposal) = 0;
	memset(RDMA_ADDR(m.proposal), 0, CLC_ADDR_MAX);
	assert_round_trip(&m);
	RDMA_LEN(m.proposal) = CLC_ADDR_MAX;
	fill(RDMA_ADDR(m.proposal), 0xc0, CLC_ADDR_MAX);
	assert_round_trip(&m);

	sample_accept(&m);
	memset(SHM_NAME(m.accept), 'x', CLC_ADDR_MAX);
	SHM_LEN(m.accept) = CLC_ADDR_MAX;
	RDMA_LEN(m.accept) = 1;
	m.accept.transport = CLC_TR_RDMA;
	m.accept.features = 0xfffffffe;		/* unknown bits are kept */
	m.accept.ring_size = 64u << 20;
	m.accept.links = 16;
	m.accept.max_flows_per_link = 65535;
	assert_round_trip(&m);
	m.accept.ring_size = 16u << 10;
	m.accept.links = 1;
	m.accept.max_flows_per_link = 1;
	assert_round_trip(&m);

	/* A proposal may offer transports we do not know; the caller finds
	 * nothing in common and declines no_device. */
	sample_proposal(&m);
	m.proposal.transports = 0x80;
	assert_round_trip(&m);

	for (unsigned r = 1; r < CLC_DECL__MAX; r++) {
		sample_decline(&m);
		m.decline.reason = (uint8_t)r;
		assert_round_trip(&m);
	}
}

static void test_decode_hdr(void **state)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_hdr hdr;
	struct clc_msg m;
	size_t n;

	(void)state;
	sample_decline(&m);
	n = encode(&m, buf, sizeof(buf));
	for (size_t i = 0; i < CLC_HDR_LEN; i++)
		assert_int_equal(clc_decode_hdr(buf, i, &hdr), -EAGAIN);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), 0);
	assert_int_equal(hdr.version, CLC_VERSION);
	assert_int_equal(hdr.type, CLC_DECLINE);
	assert_int_equal(hdr.length, n);
	/* The header alone is enough to frame. */
	assert_int_equal(clc_decode_hdr(buf, CLC_HDR_LEN, &hdr), 0);

	/* Every byte of the magic matters. */
	for (size_t i = 0; i < 4; i++) {
		buf[i] ^= 0x20;
		assert_int_equal(clc_decode_hdr(buf, n, &hdr), -EBADMSG);
		buf[i] ^= 0x20;
	}
	/* Lengths outside 8..512. */
	set_len(buf, 0);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), -EBADMSG);
	set_len(buf, 7);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), -EBADMSG);
	set_len(buf, 513);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), -EBADMSG);
	set_len(buf, 0xffff);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), -EBADMSG);
	set_len(buf, 8);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), 0);
	set_len(buf, 512);
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), 0);
	assert_int_equal(hdr.length, 512);

	/* The version and type are the caller's to judge. */
	buf[4] = 2;
	buf[5] = 200;
	assert_int_equal(clc_decode_hdr(buf, n, &hdr), 0);
	assert_int_equal(hdr.version, 2);
	assert_int_equal(hdr.type, 200);
}

static void test_version_mismatch(void **state)
{
	static const uint8_t versions[] = { 0, 1, 3, 255 };
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;
	size_t n;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(samples); i++) {
		samples[i](&m);
		n = encode(&m, buf, sizeof(buf));
		for (size_t v = 0; v < ARRAY_SIZE(versions); v++) {
			buf[4] = versions[v];
			assert_int_equal(decode(buf, n, &m), -EPROTONOSUPPORT);
			/* Even with a body this version would call malformed:
			 * another version may lay it out differently. */
			buf[5] = 77;
			assert_int_equal(decode(buf, n, &m), -EPROTONOSUPPORT);
			buf[5] = (uint8_t)(i + 1);
		}
	}
	/* A broken header is still broken, whatever the version says. */
	buf[0] = 'X';
	assert_int_equal(decode(buf, n, &m), -EBADMSG);
}

/*
 * Every prefix of every message fails: as is (the header's length no
 * longer matches) and with the header's length patched to the prefix,
 * which must then fail the type's own size rule. A proposal or accept cut
 * exactly between two TLVs is a valid shorter message.
 */
static void test_truncated(void **state)
{
	uint8_t buf[CLC_MSG_MAX], cut[CLC_MSG_MAX];
	struct clc_msg m;
	size_t n, fixed;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(samples); i++) {
		samples[i](&m);
		n = encode(&m, buf, sizeof(buf));
		fixed = m.hdr.type == CLC_PROPOSAL ? 88 : m.hdr.type == CLC_ACCEPT ? 104 : n;
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(decode(buf, k, &m), -EBADMSG);
			if (k < CLC_HDR_LEN)
				continue;
			memcpy(cut, buf, k);
			set_len(cut, k);
			if (k == fixed || (i == 0 && k == 88 + 12))
				assert_int_equal(decode(cut, k, &m), 0);
			else
				assert_int_equal(decode(cut, k, &m), -EBADMSG);
		}
		/* Longer than the header says. */
		buf[n] = 0;
		assert_int_equal(decode(buf, n + 1, &m), -EBADMSG);
		assert_int_equal(decode(buf, n, &m), 0);
	}

	/* Bytes past the header's length are not read as TLVs, even when
	 * they would be valid ones. */
	sample_proposal(&m);
	SHM_LEN(m.proposal) = 0;
	RDMA_LEN(m.proposal) = 0;
	n = encode(&m, buf, sizeof(buf));
	memcpy(buf + n, "\x09\x00", 2);
	assert_int_equal(decode(buf, n + 2, &m), -EBADMSG);
	set_len(buf, n + 2);
	assert_int_equal(decode(buf, n + 2, &m), 0);

	/* The valid cut proposals lost exactly the TLVs cut off. */
	sample_proposal(&m);
	n = encode(&m, buf, sizeof(buf));
	set_len(buf, 100);
	assert_int_equal(decode(buf, 100, &m), 0);
	assert_string_equal(SHM_NAME(m.proposal), "smcp-1.a_B");
	assert_int_equal(RDMA_LEN(m.proposal), 0);
	set_len(buf, 88);
	assert_int_equal(decode(buf, 88, &m), 0);
	assert_int_equal(SHM_LEN(m.proposal), 0);
	assert_string_equal(SHM_NAME(m.proposal), "");
}

/* Encodes sample s, applies one byte change at off, expects rc. */
static void expect_patched(void (*s)(struct clc_msg *), size_t off, uint8_t val, int rc)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;
	size_t n;

	s(&m);
	n = encode(&m, buf, sizeof(buf));
	assert_true(off < n);
	buf[off] = val;
	assert_int_equal(decode(buf, n, &m), rc);
}

/* Encodes sample s with a big-endian value of width bytes at off. */
static void expect_patched_be(void (*s)(struct clc_msg *), size_t off, uint32_t v,
			      size_t width, int rc)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;
	size_t n;

	s(&m);
	n = encode(&m, buf, sizeof(buf));
	for (size_t i = 0; i < width; i++)
		buf[off + i] = (uint8_t)(v >> (8 * (width - 1 - i)));
	assert_int_equal(decode(buf, n, &m), rc);
}

#define expect_patched16(s, off, v, rc) expect_patched_be(s, off, v, 2, rc)
#define expect_patched32(s, off, v, rc) expect_patched_be(s, off, v, 4, rc)

/* Fields shared by proposal and accept, at the same offsets. */
static void check_params(void (*s)(struct clc_msg *), int rc_no_features)
{
	static const uint32_t bad_rings[] = {
		0, 1, 8 << 10, (16 << 10) - 1, (16 << 10) + 1, 3 << 14,
		(64u << 20) - 1, 128u << 20, 1u << 31, 0xffffffff,
	};
	static const uint32_t good_rings[] = { 16 << 10, 32 << 10, 1 << 20, 64u << 20 };

	/* Reserved bytes after the transport byte, each alone. */
	for (size_t off = 13; off < 16; off++) {
		expect_patched(s, off, 0x01, -EBADMSG);
		expect_patched(s, off, 0x80, -EBADMSG);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_rings); i++)
		expect_patched32(s, 48, bad_rings[i], -EBADMSG);
	for (size_t i = 0; i < ARRAY_SIZE(good_rings); i++)
		expect_patched32(s, 48, good_rings[i], 0);
	expect_patched16(s, 52, 0, -EBADMSG);
	expect_patched16(s, 52, 17, -EBADMSG);
	expect_patched16(s, 52, 0xffff, -EBADMSG);
	expect_patched16(s, 52, 1, 0);
	expect_patched16(s, 52, 16, 0);
	expect_patched16(s, 54, 0, -EBADMSG);
	expect_patched16(s, 54, 1, 0);
	expect_patched16(s, 54, 65535, 0);
	/* Unknown feature bits are not errors. */
	expect_patched32(s, 8, 0xffffffff, 0);
	expect_patched32(s, 8, 0, rc_no_features);
}

static void test_proposal_fields(void **state)
{
	(void)state;
	/* Without PSK the MAC field is reserved: the sample's is not zero. */
	check_params(sample_proposal, -EBADMSG);
	expect_patched(sample_proposal, 12, 0, -EBADMSG);	/* offers nothing */
	expect_patched(sample_proposal, 12, CLC_TR_SHM, 0);
	expect_patched(sample_proposal, 12, CLC_TR_RDMA, 0);
	expect_patched(sample_proposal, 12, 0xff, 0);
}

static void test_accept_fields(void **state)
{
	static const uint8_t bad[] = { 0, 3, 4, 0x80, 0x81, 0xff };

	(void)state;
	check_params(sample_accept, 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		expect_patched(sample_accept, 12, bad[i], -EBADMSG);
	expect_patched(sample_accept, 12, CLC_TR_RDMA, 0);
}

static void test_confirm_decline_fields(void **state)
{
	uint8_t buf[CLC_MSG_MAX] = { 0 };
	struct clc_msg m;
	size_t n;

	(void)state;
	/* Sizes other than exactly 40 and 12, with a consistent header. */
	for (size_t i = 2; i < 4; i++) {
		samples[i](&m);
		n = encode(&m, buf, sizeof(buf));
		for (size_t k = CLC_HDR_LEN; k < 60; k++) {
			set_len(buf, k);
			assert_int_equal(decode(buf, k, &m), k == n ? 0 : -EBADMSG);
		}
	}

	/* Decline reasons 1..8 only, reserved bytes zero. */
	for (unsigned r = 0; r < 256; r++)
		expect_patched(sample_decline, 8, (uint8_t)r,
			       r >= 1 && r <= 8 ? 0 : -EBADMSG);
	for (size_t off = 9; off < 12; off++)
		expect_patched(sample_decline, off, 1, -EBADMSG);

	/* A confirm's mac is opaque: any bytes. */
	expect_patched(sample_confirm, 8, 0, 0);
	expect_patched(sample_confirm, 39, 0xff, 0);
}

static void test_unknown_types(void **state)
{
	(void)state;
	for (unsigned t = 0; t < 256; t++) {
		if (t >= CLC_PROPOSAL && t <= CLC_DECLINE)
			continue;
		expect_patched(sample_decline, 5, (uint8_t)t, -EBADMSG);
		expect_patched(sample_accept, 5, (uint8_t)t, -EBADMSG);
	}
}

/* A proposal without TLVs followed by the given TLV bytes. */
static int decode_with_tlvs(const uint8_t *tlvs, size_t tlen, struct clc_msg *m)
{
	uint8_t buf[CLC_MSG_MAX];
	size_t n;

	sample_proposal(m);
	SHM_LEN(m->proposal) = 0;
	RDMA_LEN(m->proposal) = 0;
	n = encode(m, buf, sizeof(buf));
	assert_int_equal(n, 88);
	assert_true(n + tlen <= sizeof(buf));
	memcpy(buf + n, tlvs, tlen);
	set_len(buf, n + tlen);
	return decode(buf, n + tlen, m);
}

#define TLVS(m, ...) ({							\
	static const uint8_t t_[] = { __VA_ARGS__ };			\
	decode_with_tlvs(t_, sizeof(t_), (m));				\
})

static void test_tlvs(void **state)
{
	uint8_t tlvs[2 + 255 + 2 + 255];
	struct clc_msg m;

	(void)state;
	/* Either order; an unknown type anywhere, empty or not, repeated,
	 * is skipped. */
	assert_int_equal(TLVS(&m, 2, 1, 0xaa, 1, 1, 'x'), 0);
	assert_string_equal(SHM_NAME(m.proposal), "x");
	assert_int_equal(RDMA_LEN(m.proposal), 1);
	assert_int_equal(RDMA_ADDR(m.proposal)[0], 0xaa);
	assert_int_equal(TLVS(&m, 0, 0, 3, 2, 1, 2, 1, 1, 'y', 3, 2, 1, 2, 255, 0), 0);
	assert_string_equal(SHM_NAME(m.proposal), "y");
	assert_int_equal(RDMA_LEN(m.proposal), 0);
	assert_int_equal(TLVS(&m, 9, 0), 0);
	assert_int_equal(SHM_LEN(m.proposal), 0);

	/* They must end exactly at the message's end. */
	assert_int_equal(TLVS(&m, 1), -EBADMSG);
	assert_int_equal(TLVS(&m, 9), -EBADMSG);
	assert_int_equal(TLVS(&m, 1, 2, 'a'), -EBADMSG);
	assert_int_equal(TLVS(&m, 1, 1, 'a', 2), -EBADMSG);
	assert_int_equal(TLVS(&m, 9, 1), -EBADMSG);
	assert_int_equal(TLVS(&m, 9, 3, 0, 0), -EBADMSG);
	assert_int_equal(TLVS(&m, 2, 255, 1, 2, 3), -EBADMSG);

	/* A known type twice. */
	assert_int_equal(TLVS(&m, 1, 1, 'a', 1, 1, 'a'), -EBADMSG);
	assert_int_equal(TLVS(&m, 1, 1, 'a', 9, 0, 1, 1, 'b'), -EBADMSG);
	assert_int_equal(TLVS(&m, 2, 1, 0, 2, 1, 0), -EBADMSG);

	/* Lengths of the address types: not empty, and up to what a TLV
	 * holds (the transports judge more: test_shm.c, test_rdma_pd.c). */
	assert_int_equal(TLVS(&m, 1, 0), -EBADMSG);
	assert_int_equal(TLVS(&m, 2, 0), -EBADMSG);
	memset(tlvs, 'n', sizeof(tlvs));
	tlvs[0] = CLC_TLV_SHM_NAME;
	tlvs[1] = CLC_ADDR_MAX;
	assert_int_equal(decode_with_tlvs(tlvs, 2 + CLC_ADDR_MAX, &m), 0);
	assert_int_equal(SHM_LEN(m.proposal), CLC_ADDR_MAX);
	assert_memory_equal(SHM_NAME(m.proposal), tlvs + 2, CLC_ADDR_MAX);
	tlvs[0] = CLC_TLV_RDMA_ADDR;
	assert_int_equal(decode_with_tlvs(tlvs, 2 + CLC_ADDR_MAX, &m), 0);
	assert_int_equal(RDMA_LEN(m.proposal), CLC_ADDR_MAX);
	/* An unknown type may be as long as a TLV can be. */
	tlvs[0] = 200;
	tlvs[1] = 255;
	assert_int_equal(decode_with_tlvs(tlvs, 2 + 255, &m), 0);

	/* The accept reads its TLVs the same way, after its longer body. */
	{
		uint8_t buf[CLC_MSG_MAX];
		size_t n;

		sample_accept(&m);
		n = encode(&m, buf, sizeof(buf));
		memcpy(buf + n, "\x01\x01z", 3);
		set_len(buf, n + 3);
		assert_int_equal(decode(buf, n + 3, &m), -EBADMSG);
		memcpy(buf + n, "\x02\x01z", 3);
		assert_int_equal(decode(buf, n + 3, &m), 0);
		assert_string_equal(SHM_NAME(m.accept), "lgr-0001");
		assert_int_equal(RDMA_LEN(m.accept), 1);
	}
}

/* Names travel as opaque bytes: whether one is a plain basename is the
 * shm transport's to judge (test_shm.c), so a name it refuses still
 * decodes and encodes here, unchanged. */
static void test_shm_names_opaque(void **state)
{
	static const char *const names[] = { ".", "..", "a/b", "a\nb", "a\0b", "a" };
	uint8_t tlv[2 + 8];
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;
	size_t len;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		len = i == 4 ? 3 : strlen(names[i]);
		tlv[0] = CLC_TLV_SHM_NAME;
		tlv[1] = (uint8_t)len;
		memcpy(tlv + 2, names[i], len);
		assert_int_equal(decode_with_tlvs(tlv, 2 + len, &m), 0);
		assert_int_equal(SHM_LEN(m.proposal), len);
		assert_memory_equal(SHM_NAME(m.proposal), names[i], len);

		sample_accept(&m);
		memset(SHM_NAME(m.accept), 0, CLC_ADDR_MAX);
		memcpy(SHM_NAME(m.accept), names[i], len);
		SHM_LEN(m.accept) = (uint8_t)len;
		assert_int_equal(clc_encode(&m, buf, sizeof(buf)), 104 + 2 + (int)len);
		assert_round_trip(&m);
	}
}

static void test_encode_rejects(void **state)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_msg m;
	int n;

	(void)state;
#define EXPECT_EINVAL(sample, change) do {				\
		sample(&m);						\
		change;							\
		assert_int_equal(clc_encode(&m, buf, sizeof(buf)), -EINVAL); \
	} while (0)
	EXPECT_EINVAL(sample_proposal, m.proposal.transports = 0);
	EXPECT_EINVAL(sample_proposal, m.proposal.ring_size = 3 << 14);
	EXPECT_EINVAL(sample_proposal, m.proposal.ring_size = 8 << 10);
	EXPECT_EINVAL(sample_proposal, m.proposal.ring_size = 128 << 20);
	EXPECT_EINVAL(sample_proposal, m.proposal.links = 0);
	EXPECT_EINVAL(sample_proposal, m.proposal.links = 17);
	EXPECT_EINVAL(sample_proposal, m.proposal.max_flows_per_link = 0);
	EXPECT_EINVAL(sample_accept, m.accept.transport = 0);
	EXPECT_EINVAL(sample_accept, m.accept.transport = CLC_TR_SHM | CLC_TR_RDMA);
	EXPECT_EINVAL(sample_accept, m.accept.transport = 4);
	EXPECT_EINVAL(sample_accept, m.accept.links = 0);
	EXPECT_EINVAL(sample_decline, m.decline.reason = CLC_DECL_NONE);
	EXPECT_EINVAL(sample_decline, m.decline.reason = CLC_DECL__MAX);
	EXPECT_EINVAL(sample_decline, m.hdr.type = 0);
	EXPECT_EINVAL(sample_decline, m.hdr.type = 5);
#undef EXPECT_EINVAL

	/* Too small a buffer, by one byte and entirely; nothing past the
	 * given length is written. */
	for (size_t i = 0; i < ARRAY_SIZE(samples); i++) {
		samples[i](&m);
		n = clc_encode(&m, buf, sizeof(buf));
		assert_true(n > 0);
		memset(buf, 0xee, sizeof(buf));
		assert_int_equal(clc_encode(&m, buf, (size_t)n - 1), -ENOSPC);
		assert_int_equal(clc_encode(&m, buf, 0), -ENOSPC);
		for (size_t k = 0; k < sizeof(buf); k++)
			assert_int_equal(buf[k], 0xee);
		assert_int_equal(clc_encode(&m, buf, (size_t)n), n);
	}
}

static const uint8_t test_psk[] = "0123456789abcdef0123456789abcdef";
#define TEST_PSK_LEN 32

/*
 * Expected MACs for sample_proposal and sample_accept under test_psk, on a
 * control connection from 10.0.0.1:40000 to [fd00::2]:7002, computed
 * outside this code (Python's hmac module) over the inputs
 * smcproxy-protocol(7) lists; the proposal's and the accept's over the
 * hand-written bytes of test_proposal_wire and test_accept_wire with the
 * MAC field zeroed.
 */
static const uint8_t want_mac_proposal[32] = {
	0x58, 0x40, 0xac, 0x42, 0x42, 0x20, 0x99, 0x43, 0x49, 0x44, 0xb1, 0xb6,
	0x10, 0xe2, 0x36, 0xa6, 0x76, 0x45, 0xbd, 0xdb, 0xa3, 0xbf, 0x6e, 0xb4,
	0x02, 0x71, 0x65, 0x03, 0x7b, 0xdc, 0x58, 0xb4,
};
/* Over test_accept_wire's bytes with the MAC field zeroed. */
static const uint8_t want_mac_accept[32] = {
	0x64, 0x79, 0xbf, 0x0b, 0x8f, 0xb3, 0xa5, 0xe8, 0xed, 0xf1, 0x2f, 0xd8,
	0x65, 0x91, 0x83, 0x99, 0x90, 0xbe, 0x14, 0x4c, 0x3e, 0xcd, 0x3e, 0x14,
	0x5e, 0xce, 0xd3, 0x51, 0xc4, 0xac, 0x6c, 0xee,
};
static const uint8_t want_mac_confirm[32] = {
	0x2d, 0x88, 0x36, 0xf5, 0x60, 0x05, 0x9d, 0x7d, 0xd8, 0x5a, 0xb3, 0xdb,
	0x86, 0xc5, 0x3c, 0x4b, 0x32, 0xe8, 0x19, 0x5a, 0xd0, 0xd5, 0x6b, 0x6c,
	0xb1, 0xb4, 0xb3, 0x99, 0x12, 0x19, 0x6d, 0x3f,
};
static const uint8_t want_link_secret[32] = {
	0x38, 0x1a, 0x09, 0xab, 0x8b, 0x5e, 0xe2, 0xd4, 0x0d, 0xcf, 0x3a, 0x71,
	0x3d, 0x68, 0x16, 0x84, 0xe2, 0x8c, 0xc7, 0x08, 0x43, 0x21, 0xb1, 0xf6,
	0xba, 0x29, 0x02, 0x57, 0xf9, 0x2f, 0x7c, 0xd2,
};
/* The same without a PSK: keyed with "smcproxy link v2 without psk". */
static const uint8_t want_link_secret_open[32] = {
	0xa3, 0x2f, 0x00, 0xc8, 0x9d, 0x37, 0xe2, 0x0b, 0x9a, 0xba, 0x39, 0x3b,
	0x0a, 0x0a, 0x6e, 0xa5, 0xfc, 0xae, 0x4e, 0x3f, 0x17, 0x70, 0x2d, 0xcf,
	0x58, 0x68, 0x07, 0x6b, 0xa7, 0xbc, 0x6f, 0x7f,
};
static const uint8_t want_tag[16] = {
	0x22, 0xcf, 0x15, 0xa0, 0xd1, 0x99, 0x15, 0xbe, 0x2a, 0x7d, 0x72, 0x3d,
	0xd2, 0x17, 0x7d, 0xea,
};

static void sample_endpoints(struct clc_endpoints *ep)
{
	struct sockaddr_in c = { .sin_family = AF_INET, .sin_port = htons(40000) };
	struct sockaddr_in6 sv = { .sin6_family = AF_INET6, .sin6_port = htons(7002) };

	c.sin_addr.s_addr = htonl(0x0a000001);
	sv.sin6_addr.s6_addr[0] = 0xfd;
	sv.sin6_addr.s6_addr[15] = 2;
	assert_int_equal(clc_endpoint_put((struct sockaddr *)&c, ep->client), 0);
	assert_int_equal(clc_endpoint_put((struct sockaddr *)&sv, ep->server), 0);
}

/* An IPv4 end and its v4-mapped IPv6 form are one endpoint: a dual-stack
 * listener sees the latter. Other families are refused. */
static void test_endpoint_put(void **state)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(40000) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(40000) };
	struct sockaddr un = { .sa_family = AF_UNIX };
	uint8_t a[CLC_EP_LEN], b[CLC_EP_LEN];

	(void)state;
	v4.sin_addr.s_addr = htonl(0x0a000001);
	memcpy(v6.sin6_addr.s6_addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x01", 16);
	assert_int_equal(clc_endpoint_put((struct sockaddr *)&v4, a), 0);
	assert_int_equal(clc_endpoint_put((struct sockaddr *)&v6, b), 0);
	assert_memory_equal(a, b, CLC_EP_LEN);
	v6.sin6_port = htons(40001);
	assert_int_equal(clc_endpoint_put((struct sockaddr *)&v6, b), 0);
	assert_memory_not_equal(a, b, CLC_EP_LEN);
	assert_int_equal(clc_endpoint_put(&un, b), -EAFNOSUPPORT);
}

static void test_mac_known_answer(void **state)
{
	struct clc_msg p, a;
	struct clc_endpoints ep;
	uint8_t mac[CLC_MAC_LEN], buf[CLC_MSG_MAX], secret[CLC_SECRET_LEN], tag[16];
	static const uint8_t msg[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	int n;

	(void)state;
	sample_proposal(&p);
	sample_accept(&a);
	sample_endpoints(&ep);
	n = clc_encode(&p, buf, sizeof(buf));
	assert_int_equal(n, 106);
	/* The MAC field's content is not covered: it is read as zero. */
	assert_int_equal(clc_mac_proposal(test_psk, TEST_PSK_LEN, &ep, buf, (size_t)n, mac), 0);
	assert_memory_equal(mac, want_mac_proposal, CLC_MAC_LEN);
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, &ep, &p.proposal, &a.accept, mac),
			 0);
	assert_memory_equal(mac, want_mac_accept, CLC_MAC_LEN);
	assert_int_equal(clc_mac_confirm(test_psk, TEST_PSK_LEN, &ep, &p.proposal, &a.accept,
					 mac), 0);
	assert_memory_equal(mac, want_mac_confirm, CLC_MAC_LEN);
	assert_int_equal(clc_link_secret(test_psk, TEST_PSK_LEN, &p.proposal, &a.accept, secret),
			 0);
	assert_memory_equal(secret, want_link_secret, CLC_SECRET_LEN);
	/* Without auth.psk_file the group still gets a secret, from the
	 * nonces and id alone (the rdma rendezvous requires its tag). */
	assert_int_equal(clc_link_secret(NULL, 0, &p.proposal, &a.accept, secret), 0);
	assert_memory_equal(secret, want_link_secret_open, CLC_SECRET_LEN);
	assert_int_equal(clc_link_secret(test_psk, TEST_PSK_LEN, &p.proposal, &a.accept, secret),
			 0);
	assert_int_equal(clc_secret_tag(secret, "label", msg, sizeof(msg), tag, sizeof(tag)), 0);
	assert_memory_equal(tag, want_tag, sizeof(tag));
	assert_true(clc_tag_equal(tag, want_tag, sizeof(tag)));
	tag[15] ^= 1;
	assert_false(clc_tag_equal(tag, want_tag, sizeof(tag)));

	/* No key, or one HMAC() cannot take, is a caller bug; so is a
	 * proposal shorter than its fixed part, or a tag of no bytes. */
	assert_int_equal(clc_mac_accept(test_psk, 0, &ep, &p.proposal, &a.accept, mac), -EINVAL);
	assert_int_equal(clc_mac_confirm(test_psk, CLC_PSK_MAX + 1, &ep, &p.proposal, &a.accept,
					 mac), -EINVAL);
	assert_int_equal(clc_mac_proposal(test_psk, TEST_PSK_LEN, &ep, buf, 87, mac), -EINVAL);
	assert_int_equal(clc_secret_tag(secret, "label", msg, sizeof(msg), tag, 0), -EINVAL);
}

static void mac_both(const struct clc_endpoints *ep, const struct clc_msg *p,
		     const struct clc_msg *a, uint8_t acc[CLC_MAC_LEN], uint8_t con[CLC_MAC_LEN])
{
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, ep, &p->proposal, &a->accept,
					acc), 0);
	assert_int_equal(clc_mac_confirm(test_psk, TEST_PSK_LEN, ep, &p->proposal, &a->accept,
					 con), 0);
}

/*
 * A server could only judge the secret at CONFIRM,
 * after allocating. The proposal's MAC covers every byte of the proposal
 * but its own field, and both endpoints (finding 5: a relayed proposal
 * comes on another connection).
 */
static void test_mac_proposal_binding(void **state)
{
	struct clc_msg p;
	struct clc_endpoints ep;
	uint8_t buf[CLC_MSG_MAX], mac[CLC_MAC_LEN];
	int n;

	(void)state;
	sample_proposal(&p);
	sample_endpoints(&ep);
	n = clc_encode(&p, buf, sizeof(buf));
	for (int i = 0; i < n; i++) {
		buf[i] ^= 0x01;
		assert_int_equal(clc_mac_proposal(test_psk, TEST_PSK_LEN, &ep, buf, (size_t)n, mac),
				 0);
		if (i >= CLC_PROPOSAL_MAC_OFF && i < CLC_PROPOSAL_MAC_OFF + CLC_MAC_LEN)
			assert_memory_equal(mac, want_mac_proposal, CLC_MAC_LEN);
		else
			assert_memory_not_equal(mac, want_mac_proposal, CLC_MAC_LEN);
		buf[i] ^= 0x01;
	}
	for (size_t i = 0; i < sizeof(ep); i++) {
		((uint8_t *)&ep)[i] ^= 0x80;
		assert_int_equal(clc_mac_proposal(test_psk, TEST_PSK_LEN, &ep, buf, (size_t)n, mac),
				 0);
		assert_memory_not_equal(mac, want_mac_proposal, CLC_MAC_LEN);
		((uint8_t *)&ep)[i] ^= 0x80;
	}
	/* Client and server swapped: a reflected proposal. */
	{
		struct clc_endpoints sw;

		memcpy(sw.client, ep.server, CLC_EP_LEN);
		memcpy(sw.server, ep.client, CLC_EP_LEN);
		assert_int_equal(clc_mac_proposal(test_psk, TEST_PSK_LEN, &sw, buf, (size_t)n, mac),
				 0);
		assert_memory_not_equal(mac, want_mac_proposal, CLC_MAC_LEN);
	}
}

/*
 * Flips every bit of every bound field in turn: the accept's MAC must
 * change for each, the confirm's for the fields it binds and for no other.
 * (Sizes and counts, which a flipped bit can make invalid, are flipped on
 * the wire instead: test_mac_accept_whole.)
 */
static void test_mac_binding(void **state)
{
	struct clc_msg p, a;
	struct clc_endpoints ep;
	struct {
		uint8_t *field;
		size_t len;
		bool in_confirm;
	} bound[] = {
		{ ep.client, CLC_EP_LEN, true },
		{ ep.server, CLC_EP_LEN, true },
		{ p.proposal.mac, CLC_MAC_LEN, false },
		{ p.proposal.nonce, CLC_NONCE_LEN, true },
		{ a.accept.nonce, CLC_NONCE_LEN, true },
		{ a.accept.lgr_id, CLC_LGR_ID_LEN, true },
		{ p.proposal.host_id, CLC_HOST_ID_LEN, false },
		{ a.accept.host_id, CLC_HOST_ID_LEN, false },
		{ (uint8_t *)&a.accept.features, sizeof(a.accept.features), false },
		{ (uint8_t *)SHM_NAME(a.accept), 8, false },
	};
	uint8_t acc[CLC_MAC_LEN], con[CLC_MAC_LEN];
	uint8_t psk[TEST_PSK_LEN];

	(void)state;
	sample_proposal(&p);
	sample_accept(&a);
	sample_endpoints(&ep);
	for (size_t f = 0; f < ARRAY_SIZE(bound); f++) {
		for (size_t i = 0; i < bound[f].len * 8; i++) {
			bound[f].field[i / 8] ^= (uint8_t)(1u << (i % 8));
			mac_both(&ep, &p, &a, acc, con);
			bound[f].field[i / 8] ^= (uint8_t)(1u << (i % 8));
			assert_memory_not_equal(acc, want_mac_accept, CLC_MAC_LEN);
			if (bound[f].in_confirm)
				assert_memory_not_equal(con, want_mac_confirm, CLC_MAC_LEN);
			else
				assert_memory_equal(con, want_mac_confirm, CLC_MAC_LEN);
		}
	}

	/* The rest of the proposal is the proposal MAC's (which the
	 * accept's covers), and a MAC field does not cover itself. */
	p.proposal.ring_size = 1 << 20;
	memset(a.accept.mac, 0, CLC_MAC_LEN);
	mac_both(&ep, &p, &a, acc, con);
	assert_memory_equal(acc, want_mac_accept, CLC_MAC_LEN);
	assert_memory_equal(con, want_mac_confirm, CLC_MAC_LEN);

	/* The two nonces swapped give neither MAC: the labels and the
	 * order keep an accept from being replayed as a confirm. */
	sample_proposal(&p);
	sample_accept(&a);
	memcpy(p.proposal.nonce, a.accept.nonce, CLC_NONCE_LEN);
	fill(a.accept.nonce, 0x10, CLC_NONCE_LEN);
	mac_both(&ep, &p, &a, acc, con);
	assert_memory_not_equal(acc, want_mac_accept, CLC_MAC_LEN);
	assert_memory_not_equal(con, want_mac_confirm, CLC_MAC_LEN);
	assert_memory_not_equal(acc, want_mac_confirm, CLC_MAC_LEN);
	assert_memory_not_equal(con, want_mac_accept, CLC_MAC_LEN);

	/* Another secret, one bit apart or one byte shorter. */
	sample_proposal(&p);
	sample_accept(&a);
	memcpy(psk, test_psk, sizeof(psk));
	psk[31] ^= 1;
	assert_int_equal(clc_mac_accept(psk, sizeof(psk), &ep, &p.proposal, &a.accept, acc), 0);
	assert_memory_not_equal(acc, want_mac_accept, CLC_MAC_LEN);
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN - 1, &ep, &p.proposal, &a.accept,
					acc), 0);
	assert_memory_not_equal(acc, want_mac_accept, CLC_MAC_LEN);
}

/*
 * Regression: the accept's MAC left out features, ring_size, links,
 * max_flows_per_link and the address TLVs, so an on-path attacker could
 * downgrade a group or point the proposer's shm hello at a socket of its
 * choice before any tag was checked. Now every byte of the ACCEPT but its
 * MAC field is covered, as the proposal's are: each bit flipped on the
 * wire either no longer decodes or changes the MAC. And TLVs: one added,
 * one taken away.
 */
static void test_mac_accept_whole(void **state)
{
	struct clc_msg p, a, t;
	struct clc_endpoints ep;
	uint8_t wire[CLC_MSG_MAX], mac[CLC_MAC_LEN], base[CLC_MAC_LEN];
	unsigned changed = 0;
	int n;

	(void)state;
	sample_proposal(&p);
	sample_accept(&a);
	sample_endpoints(&ep);
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, &ep, &p.proposal, &a.accept, base),
			 0);
	n = clc_encode(&a, wire, sizeof(wire));
	assert_int_equal(n, 114);
	for (int i = 0; i < n * 8; i++) {
		if (i / 8 >= 72 && i / 8 < 72 + CLC_MAC_LEN)
			continue;	/* the MAC field itself */
		wire[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (!clc_decode(wire, (size_t)n, &t) && t.hdr.type == CLC_ACCEPT) {
			assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, &ep, &p.proposal,
							&t.accept, mac), 0);
			assert_memory_not_equal(mac, base, CLC_MAC_LEN);
			changed++;
		}
		wire[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	/* Most flips still decode (features, sizes, ids, the TLV's bytes). */
	assert_true(changed > 500);
	/* An rdma address TLV added, the shm one taken away. */
	t = a;
	memcpy(RDMA_ADDR(t.accept), "\xc0\xa8\x00\x02", 4);
	RDMA_LEN(t.accept) = 4;
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, &ep, &p.proposal, &t.accept, mac),
			 0);
	assert_memory_not_equal(mac, base, CLC_MAC_LEN);
	t = a;
	SHM_LEN(t.accept) = 0;
	memset(SHM_NAME(t.accept), 0, 8);
	assert_int_equal(clc_mac_accept(test_psk, TEST_PSK_LEN, &ep, &p.proposal, &t.accept, mac),
			 0);
	assert_memory_not_equal(mac, base, CLC_MAC_LEN);
}

static void test_mac_equal(void **state)
{
	uint8_t a[CLC_MAC_LEN], b[CLC_MAC_LEN];

	(void)state;
	fill(a, 0x11, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(clc_mac_equal(a, b));
	for (size_t i = 0; i < CLC_MAC_LEN; i++) {
		b[i] ^= 0x80;
		assert_false(clc_mac_equal(a, b));
		b[i] ^= 0x81;
		assert_false(clc_mac_equal(a, b));
		b[i] ^= 0x01;
	}
	assert_true(clc_mac_equal(a, b));
}

static char psk_dir[64];

static int psk_setup(void **state)
{
	(void)state;
	strcpy(psk_dir, "/tmp/test_clc.XXXXXX");
	return mkdtemp(psk_dir) ? 0 : -1;
}

static int psk_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", psk_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes n bytes of data to a new file in psk_dir and loads it. */
static int load(const void *data, size_t n, uint8_t *psk, size_t *len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/psk", psk_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
	return clc_psk_load(path, psk, len);
}

static void test_psk_load(void **state)
{
	static uint8_t data[4096];
	uint8_t psk[CLC_PSK_MAX];
	char path[128];
	size_t len;

	(void)state;
	fill(data, 0x20, sizeof(data));	/* wraps through all byte values */
	data[3] = '\0';			/* binary secrets are fine */
	data[5] = '\r';

	assert_int_equal(load(data, 16, psk, &len), 0);
	assert_int_equal(len, 16);
	assert_memory_equal(psk, data, 16);
	assert_int_equal(load(data, CLC_PSK_MAX, psk, &len), 0);
	assert_int_equal(len, CLC_PSK_MAX);
	assert_memory_equal(psk, data, CLC_PSK_MAX);

	/* One trailing newline goes, once. */
	memcpy(data + 100, "0123456789abcdef\n\n", 18);
	assert_int_equal(load(data + 100, 17, psk, &len), 0);
	assert_int_equal(len, 16);
	assert_memory_equal(psk, "0123456789abcdef", 16);
	assert_int_equal(load(data + 100, 18, psk, &len), 0);
	assert_int_equal(len, 17);
	assert_int_equal(psk[16], '\n');
	/* "\r\n": only the "\n" is the newline. */
	memcpy(data + 100, "0123456789abcdef\r\n", 18);
	assert_int_equal(load(data + 100, 18, psk, &len), 0);
	assert_int_equal(len, 17);
	assert_int_equal(psk[16], '\r');

	/* The limits, with and without the newline. */
	len = 12345;
	memcpy(data + 100, "0123456789abcde\n", 16);
	assert_int_equal(load(data + 100, 15, psk, &len), -EINVAL);
	assert_int_equal(load(data + 100, 16, psk, &len), -EINVAL);
	assert_int_equal(load(data, 0, psk, &len), -EINVAL);
	assert_int_equal(load("\n", 1, psk, &len), -EINVAL);
	assert_int_equal(load(data, CLC_PSK_MAX + 1, psk, &len), -EINVAL);
	assert_int_equal(load(data, CLC_PSK_MAX + 2, psk, &len), -EINVAL);
	assert_int_equal(load(data, sizeof(data), psk, &len), -EINVAL);
	data[CLC_PSK_MAX] = '\n';
	assert_int_equal(load(data, CLC_PSK_MAX + 1, psk, &len), 0);
	assert_int_equal(len, CLC_PSK_MAX);
	len = 12345;
	data[CLC_PSK_MAX + 1] = '\n';
	assert_int_equal(load(data, CLC_PSK_MAX + 2, psk, &len), -EINVAL);
	assert_int_equal(len, 12345);	/* untouched on failure */

	/* The file's own errors. */
	snprintf(path, sizeof(path), "%s/missing", psk_dir);
	assert_int_equal(clc_psk_load(path, psk, &len), -ENOENT);
	assert_int_equal(clc_psk_load(psk_dir, psk, &len), -EISDIR);
	/* A secret others may read (or write, or the
	 * group write) is refused, as ssh refuses such a key. */
	snprintf(path, sizeof(path), "%s/psk", psk_dir);
	assert_int_equal(load("0123456789abcdef", 16, psk, &len), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(clc_psk_load(path, psk, &len), -EPERM);
	assert_int_equal(chmod(path, 0602), 0);
	assert_int_equal(clc_psk_load(path, psk, &len), -EPERM);
	assert_int_equal(chmod(path, 0620), 0);
	assert_int_equal(clc_psk_load(path, psk, &len), -EPERM);
	assert_int_equal(clc_psk_load("/dev/null", psk, &len), -EPERM);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(clc_psk_load(path, psk, &len), 0);
	len = 12345;
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/psk", psk_dir);
		assert_int_equal(chmod(path, 0), 0);
		assert_int_equal(clc_psk_load(path, psk, &len), -EACCES);
	}
	assert_int_equal(len, 12345);
}

static void test_decline_names(void **state)
{
	static const char *const want[] = {
		"unknown", "no_device", "version_mismatch", "max_flows",
		"out_of_memory", "policy", "timeout", "internal", "stopping", "unknown",
	};

	(void)state;
	for (unsigned r = 0; r < ARRAY_SIZE(want); r++)
		assert_string_equal(clc_decline_name(r), want[r]);
	assert_string_equal(clc_decline_name(255), "unknown");
	assert_string_equal(clc_decline_name(~0u), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proposal_wire),
		cmocka_unit_test(test_accept_wire),
		cmocka_unit_test(test_confirm_decline_wire),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_decode_hdr),
		cmocka_unit_test(test_version_mismatch),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_proposal_fields),
		cmocka_unit_test(test_accept_fields),
		cmocka_unit_test(test_confirm_decline_fields),
		cmocka_unit_test(test_unknown_types),
		cmocka_unit_test(test_tlvs),
		cmocka_unit_test(test_shm_names_opaque),
		cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_endpoint_put),
		cmocka_unit_test(test_mac_known_answer),
		cmocka_unit_test(test_mac_proposal_binding),
		cmocka_unit_test(test_mac_binding),
		cmocka_unit_test(test_mac_accept_whole),
		cmocka_unit_test(test_mac_equal),
		cmocka_unit_test_setup_teardown(test_psk_load, psk_setup, psk_teardown),
		cmocka_unit_test(test_decline_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
