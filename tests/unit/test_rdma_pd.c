/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rdma transport's wire codecs (proxy/transport/rdma/rdma_pd.c): the
 * rdma_cm private data (with its tag of the group secret) and the RDMA_ADDR
 * TLV, against bytes written out by hand from smcproxy-protocol(7) ("RDMA
 * TRANSPORT"), round trips, and every malformed input a decoder must
 * refuse. Neither needs a device.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/rdma/rdma.h"
#include "transport/rdma/rdma_pd.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Decoders get a heap copy of exactly n bytes, so that AddressSanitizer
 * (make check-asan) catches a read past the end. */
static int pd_dec(const uint8_t *buf, size_t n, struct rdma_pd *pd)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, n);
	r = rdma_pd_decode(copy, n, pd);
	free(copy);
	return r;
}

static int tlv_dec(const uint8_t *buf, size_t n, struct rdma_tlv *a)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, n);
	r = rdma_tlv_decode(copy, n, a);
	free(copy);
	return r;
}

/* ------------------------------------------------------------------ */
/* Private data. */

/* The group secret of the examples below (lgr->secret). */
static const uint8_t test_secret[CLC_SECRET_LEN] = {
	0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b,
	0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
	0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
};

/*
 * The tags of the example's first 36 bytes under test_secret, computed
 * outside this code (Python's hmac module: the first 16 bytes of
 * HMAC-SHA256(secret, label || bytes 0..35)) from smcproxy-protocol(7).
 */
static const uint8_t want_tag_req[RDMA_PD_TAG_LEN] = {	/* "smcproxy rdma req v2" */
	0xde, 0x95, 0xa9, 0x58, 0x49, 0xfc, 0x9b, 0x66,
	0xd8, 0x27, 0xb5, 0x1d, 0x2f, 0x2e, 0x3b, 0xcf,
};
static const uint8_t want_tag_rep[RDMA_PD_TAG_LEN] = {	/* "smcproxy rdma rep v2" */
	0xe4, 0x42, 0x12, 0x8c, 0xd1, 0xbc, 0x7f, 0x3c,
	0x5d, 0x8a, 0x6c, 0x3e, 0xf0, 0xd7, 0x96, 0xda,
};

/* The example of the tests below, and its 52 bytes written out by hand:
 * every multi-byte field big-endian, at the offsets of the man page; a
 * connect request's, with its tag under test_secret. */
static const uint8_t pd_wire[RDMA_PD_LEN] = {
	'S', 'R',				/*  0 magic */
	0x02,					/*  2 version */
	0x02,					/*  3 link index */
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, /*  4 lgr_id */
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, /* 20 addr */
	0xde, 0xad, 0xbe, 0xef,			/* 28 rkey */
	0x00, 0x01, 0x00, 0x00,			/* 32 size: 64 KiB */
	0xde, 0x95, 0xa9, 0x58, 0x49, 0xfc, 0x9b, 0x66, /* 36 tag */
	0xd8, 0x27, 0xb5, 0x1d, 0x2f, 0x2e, 0x3b, 0xcf,
};

static void sample_pd(struct rdma_pd *pd)
{
	unsigned i;

	memset(pd, 0, sizeof(*pd));
	pd->link = 2;
	for (i = 0; i < CLC_LGR_ID_LEN; i++)
		pd->lgr_id[i] = (uint8_t)(0x10 + i);
	pd->addr = 0x0123456789abcdefull;
	pd->rkey = 0xdeadbeef;
	pd->size = 65536;
	memcpy(pd->tag, want_tag_req, RDMA_PD_TAG_LEN);
}

static void assert_pd_equal(const struct rdma_pd *a, const struct rdma_pd *b)
{
	assert_int_equal(a->link, b->link);
	assert_memory_equal(a->lgr_id, b->lgr_id, CLC_LGR_ID_LEN);
	assert_true(a->addr == b->addr);
	assert_int_equal(a->rkey, b->rkey);
	assert_int_equal(a->size, b->size);
	assert_memory_equal(a->tag, b->tag, RDMA_PD_TAG_LEN);
}

static void test_pd_wire(void **state)
{
	uint8_t out[RDMA_PD_LEN + 8];
	struct rdma_pd pd;

	assert_int_equal(RDMA_PD_LEN, 52);
	assert_int_equal(RDMA_PD_VERSION, 2);
	sample_pd(&pd);
	/* Bytes past RDMA_PD_LEN are not the encoder's. */
	memset(out, 0xa5, sizeof(out));
	rdma_pd_encode(&pd, out);
	assert_memory_equal(out, pd_wire, RDMA_PD_LEN);
	for (size_t i = RDMA_PD_LEN; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xa5);
}

static void test_pd_decode_example(void **state)
{
	struct rdma_pd pd, want;

	sample_pd(&want);
	memset(&pd, 0x5a, sizeof(pd));
	assert_int_equal(pd_dec(pd_wire, sizeof(pd_wire), &pd), 0);
	assert_pd_equal(&pd, &want);
}

static void test_pd_round_trips(void **state)
{
	struct rdma_pd in[4], back;
	uint8_t buf[RDMA_PD_LEN];
	unsigned i;

	memset(in, 0, sizeof(in));		/* [0]: every field zero */
	memset(&in[1], 0xff, sizeof(in[1]));	/* [1]: every field all ones */
	sample_pd(&in[2]);
	sample_pd(&in[3]);			/* [3]: the highest bit of each field */
	in[3].link = 0x80;
	in[3].lgr_id[0] = 0x80;
	in[3].lgr_id[CLC_LGR_ID_LEN - 1] = 0x01;
	in[3].addr = 1ull << 63;
	in[3].rkey = 1u << 31;
	in[3].size = 1u << 31;
	in[3].tag[0] = 0x80;
	in[3].tag[RDMA_PD_TAG_LEN - 1] = 0x01;
	for (i = 0; i < ARRAY_SIZE(in); i++) {
		rdma_pd_encode(&in[i], buf);
		memset(&back, 0, sizeof(back));
		assert_int_equal(pd_dec(buf, sizeof(buf), &back), 0);
		assert_pd_equal(&back, &in[i]);
	}
}

/*
 * rdma_cm hands over the private data padded with zeros to the size of the
 * CM message (56 bytes in a REQ, 196 in a REP on IB and RoCE), so a longer
 * buffer is the normal case and what follows the 52 bytes is not ours.
 */
static void test_pd_decode_padded(void **state)
{
	static const size_t lens[] = { RDMA_PD_LEN + 1, 56, 196 };
	struct rdma_pd pd, want;
	uint8_t buf[196];
	unsigned i;

	sample_pd(&want);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		memset(buf, i ? 0 : 0xff, sizeof(buf));
		memcpy(buf, pd_wire, RDMA_PD_LEN);
		memset(&pd, 0, sizeof(pd));
		assert_int_equal(pd_dec(buf, lens[i], &pd), 0);
		assert_pd_equal(&pd, &want);
	}
}

/* A refused input leaves the struct as it was. */
static void assert_pd_refused(const uint8_t *buf, size_t len)
{
	struct rdma_pd pd, before;

	memset(&pd, 0x5a, sizeof(pd));
	before = pd;
	assert_int_equal(pd_dec(buf, len, &pd), -EPROTO);
	assert_memory_equal(&pd, &before, sizeof(pd));
}

static void test_pd_short(void **state)
{
	uint8_t buf[196];
	size_t len;

	/* Every length short of 52, of a valid example and of one padded:
	 * version 1's 36 bytes, without a tag, among them. */
	for (len = 0; len < RDMA_PD_LEN; len++)
		assert_pd_refused(pd_wire, len);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, pd_wire, RDMA_PD_LEN);
	for (len = 0; len < RDMA_PD_LEN; len++)
		assert_pd_refused(buf, len);
}

static void test_pd_wrong_magic(void **state)
{
	static const char *const magics[] = { "sr", "RS", "SS", "RR", "Sr", "sR", "\0\0" };
	uint8_t buf[RDMA_PD_LEN];
	unsigned i, bit;

	for (i = 0; i < ARRAY_SIZE(magics); i++) {
		memcpy(buf, pd_wire, sizeof(buf));
		memcpy(buf, magics[i], 2);
		assert_pd_refused(buf, sizeof(buf));
	}
	/* Every single-bit error in either magic byte. */
	for (bit = 0; bit < 16; bit++) {
		memcpy(buf, pd_wire, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_pd_refused(buf, sizeof(buf));
	}
}

static void test_pd_wrong_version(void **state)
{
	uint8_t buf[RDMA_PD_LEN];
	unsigned v;

	for (v = 0; v < 256; v++) {
		if (v == RDMA_PD_VERSION)
			continue;
		memcpy(buf, pd_wire, sizeof(buf));
		buf[2] = (uint8_t)v;
		assert_pd_refused(buf, sizeof(buf));
	}
}

/*
 * The tag proves the group's secret. Known answers
 * for both directions; the decoded example verifies as a request under
 * its secret, and not as a reply (a request reflected back), nor under
 * another secret.
 */
static void test_pd_tag(void **state)
{
	uint8_t tag[RDMA_PD_TAG_LEN], other[CLC_SECRET_LEN];
	struct rdma_pd pd;

	sample_pd(&pd);
	memset(pd.tag, 0, sizeof(pd.tag));	/* not an input of its own tag */
	assert_int_equal(rdma_pd_tag(test_secret, RDMA_PD_REQ, &pd, tag), 0);
	assert_memory_equal(tag, want_tag_req, RDMA_PD_TAG_LEN);
	assert_int_equal(rdma_pd_tag(test_secret, RDMA_PD_REP, &pd, tag), 0);
	assert_memory_equal(tag, want_tag_rep, RDMA_PD_TAG_LEN);

	assert_int_equal(pd_dec(pd_wire, sizeof(pd_wire), &pd), 0);
	assert_true(rdma_pd_tag_ok(test_secret, RDMA_PD_REQ, &pd));
	assert_false(rdma_pd_tag_ok(test_secret, RDMA_PD_REP, &pd));
	memcpy(other, test_secret, sizeof(other));
	other[CLC_SECRET_LEN - 1] ^= 1;
	assert_false(rdma_pd_tag_ok(other, RDMA_PD_REQ, &pd));
	/* Zeros, what a peer without the secret might send. */
	memset(pd.tag, 0, sizeof(pd.tag));
	assert_false(rdma_pd_tag_ok(test_secret, RDMA_PD_REQ, &pd));
}

/* Every single-bit change of the 52 bytes either makes them undecodable
 * or breaks the tag: the tag covers every field (the link index and the
 * region included), and itself. */
static void test_pd_tag_binding(void **state)
{
	uint8_t buf[RDMA_PD_LEN];
	struct rdma_pd pd;
	unsigned bit;

	for (bit = 0; bit < RDMA_PD_LEN * 8; bit++) {
		memcpy(buf, pd_wire, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (pd_dec(buf, sizeof(buf), &pd) == 0)
			assert_false(rdma_pd_tag_ok(test_secret, RDMA_PD_REQ, &pd));
	}
}

/* A connect request or reply without private data reaches the decoder as
 * NULL (with a length 0, or whatever the CM event said). */
static void test_pd_null(void **state)
{
	struct rdma_pd pd;

	assert_int_equal(rdma_pd_decode(NULL, 0, &pd), -EPROTO);
	assert_int_equal(rdma_pd_decode(NULL, RDMA_PD_LEN, &pd), -EPROTO);
	assert_int_equal(rdma_pd_decode(NULL, 56, &pd), -EPROTO);
}

/* ------------------------------------------------------------------ */
/* The RDMA_ADDR TLV. */

static const uint8_t tlv_wire[RDMA_TLV_LEN] = {
	0x01,					/*  0 version */
	0x00,					/*  1 flags */
	0x4e, 0x21,				/*  2 cm_port 20001 */
	0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*  4 gid */
	0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
};

static void sample_tlv(struct rdma_tlv *a)
{
	static const uint8_t gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 };

	memset(a, 0, sizeof(*a));
	a->version = 1;
	a->flags = 0;
	a->cm_port = 20001;
	memcpy(a->gid, gid, sizeof(gid));
}

static void assert_tlv_equal(const struct rdma_tlv *a, const struct rdma_tlv *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->cm_port, b->cm_port);
	assert_memory_equal(a->gid, b->gid, 16);
}

static void test_tlv_wire(void **state)
{
	uint8_t out[RDMA_TLV_LEN + 8];
	struct rdma_tlv a;

	assert_int_equal(RDMA_TLV_LEN, 20);
	sample_tlv(&a);
	memset(out, 0xa5, sizeof(out));
	rdma_tlv_encode(&a, out);
	assert_memory_equal(out, tlv_wire, RDMA_TLV_LEN);
	for (size_t i = RDMA_TLV_LEN; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xa5);
}

static void test_tlv_decode_example(void **state)
{
	struct rdma_tlv a, want;

	sample_tlv(&want);
	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(tlv_dec(tlv_wire, sizeof(tlv_wire), &a), 0);
	assert_tlv_equal(&a, &want);
}

static void test_tlv_round_trips(void **state)
{
	static const uint16_t ports[] = { 1, 0x00ff, 0x0100, 0x8000, 0xffff };
	static const uint8_t flags[] = { 0, 1, 0x80, 0xff };
	struct rdma_tlv a, back;
	uint8_t buf[RDMA_TLV_LEN];
	unsigned i, j;

	for (i = 0; i < ARRAY_SIZE(ports); i++)
		for (j = 0; j < ARRAY_SIZE(flags); j++) {
			sample_tlv(&a);
			a.cm_port = ports[i];
			/* No flag is defined; the decoder passes them on. */
			a.flags = flags[j];
			memset(a.gid, (int)(i * 16 + j), sizeof(a.gid));
			rdma_tlv_encode(&a, buf);
			memset(&back, 0, sizeof(back));
			assert_int_equal(tlv_dec(buf, sizeof(buf), &back), 0);
			assert_tlv_equal(&back, &a);
		}
}

static void test_tlv_short(void **state)
{
	struct rdma_tlv a;
	size_t len;

	for (len = 0; len < RDMA_TLV_LEN; len++)
		assert_int_equal(tlv_dec(tlv_wire, len, &a), -EPROTO);
}

static void test_tlv_wrong_version(void **state)
{
	uint8_t buf[RDMA_TLV_LEN];
	struct rdma_tlv a;
	unsigned v;

	for (v = 0; v < 256; v++) {
		if (v == 1)
			continue;
		memcpy(buf, tlv_wire, sizeof(buf));
		buf[0] = (uint8_t)v;
		assert_int_equal(tlv_dec(buf, sizeof(buf), &a), -EPROTO);
	}
}

/* Port 0 is no listener: the proposer would have nowhere to connect. */
static void test_tlv_zero_port(void **state)
{
	uint8_t buf[RDMA_TLV_LEN];
	struct rdma_tlv a;

	memcpy(buf, tlv_wire, sizeof(buf));
	buf[2] = 0;
	buf[3] = 0;
	assert_int_equal(tlv_dec(buf, sizeof(buf), &a), -EPROTO);
	/* Either byte alone makes a port. */
	buf[2] = 1;
	assert_int_equal(tlv_dec(buf, sizeof(buf), &a), 0);
	assert_int_equal(a.cm_port, 0x0100);
	buf[2] = 0;
	buf[3] = 1;
	assert_int_equal(tlv_dec(buf, sizeof(buf), &a), 0);
	assert_int_equal(a.cm_port, 1);
}

static void test_tlv_null(void **state)
{
	struct rdma_tlv a;

	assert_int_equal(rdma_tlv_decode(NULL, 0, &a), -EPROTO);
	assert_int_equal(rdma_tlv_decode(NULL, RDMA_TLV_LEN, &a), -EPROTO);
}

/*
 * Whether an RDMA_ADDR is well-formed at all: 1 to RDMA_TLV_MAX bytes
 * (what the handshake codec checked before the check became the
 * transport's). Anything in that range is kept, even what
 * rdma_tlv_decode() cannot use.
 */
static void test_tlv_check(void **state)
{
	uint8_t v[RDMA_TLV_MAX + 1] = { 0 };

	(void)state;
	assert_int_equal(rdma_tlv_check(v, 0), -EBADMSG);
	assert_int_equal(rdma_tlv_check(v, 1), 0);
	assert_int_equal(rdma_tlv_check(v, RDMA_TLV_LEN), 0);
	assert_int_equal(rdma_tlv_check(v, RDMA_TLV_MAX), 0);
	assert_int_equal(rdma_tlv_check(v, RDMA_TLV_MAX + 1), -EBADMSG);
	assert_int_equal(RDMA_TLV_MAX, 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pd_wire),
		cmocka_unit_test(test_pd_decode_example),
		cmocka_unit_test(test_pd_round_trips),
		cmocka_unit_test(test_pd_decode_padded),
		cmocka_unit_test(test_pd_short),
		cmocka_unit_test(test_pd_wrong_magic),
		cmocka_unit_test(test_pd_wrong_version),
		cmocka_unit_test(test_pd_null),
		cmocka_unit_test(test_pd_tag),
		cmocka_unit_test(test_pd_tag_binding),
		cmocka_unit_test(test_tlv_wire),
		cmocka_unit_test(test_tlv_decode_example),
		cmocka_unit_test(test_tlv_round_trips),
		cmocka_unit_test(test_tlv_short),
		cmocka_unit_test(test_tlv_wrong_version),
		cmocka_unit_test(test_tlv_zero_port),
		cmocka_unit_test(test_tlv_null),
		cmocka_unit_test(test_tlv_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
