/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the link message codecs, CDC (proxy/smc/cdc.c) and LLC
 * (proxy/smc/llc.c): the wire layout against bytes written out by hand from
 * smcproxy-protocol(7), round trips, and every byte and bit a decoder must
 * refuse. Both share one slot format, so each decoder is also fed the
 * other's messages.
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

#include "smc/cdc.h"
#include "smc/clc-t.h"
#include "smc/llc.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A slot: the given leading bytes, zeros after. */
static void slot(uint8_t out[LINK_MSG_LEN], const uint8_t *head, size_t n)
{
	memset(out, 0, LINK_MSG_LEN);
	memcpy(out, head, n);
}

/* Decoders get a heap copy of exactly n bytes, so that AddressSanitizer
 * (make check-asan) catches a read past the end. */
static int cdc_dec(const uint8_t *buf, size_t n, struct cdc_msg *m)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, n);
	r = cdc_decode(copy, n, m);
	free(copy);
	return r;
}

static int llc_dec(const uint8_t *buf, size_t n, struct llc_msg *m)
{
	uint8_t *copy = malloc(n ? n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, buf, n);
	r = llc_decode(copy, n, m);
	free(copy);
	return r;
}

static void sample_cdc(struct cdc_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->seq = 0x1234;
	m->token = 0x01020304;
	m->prod.wrap = 0x0a0b0c0d;
	m->prod.count = 0x1000;
	m->cons.wrap = 0xfffffffe;
	m->cons.count = 0xffff;
	m->prod_flags = CDC_PF_WRITE_BLOCKED;
	m->conn_flags = CDC_CF_DONE_WRITING | CDC_CF_ABORT;
	m->prod_gen = 3;
	m->cons_gen = 0xfe;
}

static void assert_cdc_equal(const struct cdc_msg *a, const struct cdc_msg *b)
{
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->token, b->token);
	assert_int_equal(a->prod.wrap, b->prod.wrap);
	assert_int_equal(a->prod.count, b->prod.count);
	assert_int_equal(a->cons.wrap, b->cons.wrap);
	assert_int_equal(a->cons.count, b->cons.count);
	assert_int_equal(a->prod_flags, b->prod_flags);
	assert_int_equal(a->conn_flags, b->conn_flags);
	assert_int_equal(a->prod_gen, b->prod_gen);
	assert_int_equal(a->cons_gen, b->cons_gen);
}

static void test_cdc_wire(void **state)
{
	static const uint8_t head[] = {
		0xfe, 0x40, 0x12, 0x34,		/* type, length, seq */
		0x01, 0x02, 0x03, 0x04,		/* token */
		0x0a, 0x0b, 0x0c, 0x0d,		/* prod.wrap */
		0x00, 0x00, 0x10, 0x00,		/* prod.count */
		0xff, 0xff, 0xff, 0xfe,		/* cons.wrap */
		0x00, 0x00, 0xff, 0xff,		/* cons.count */
		0x01, 0x05,			/* WRITE_BLOCKED; FIN|RST */
		0x03, 0xfe,			/* prod_gen, cons_gen */
	};
	uint8_t want[LINK_MSG_LEN], buf[LINK_MSG_LEN];
	struct cdc_msg m, back;

	(void)state;
	sample_cdc(&m);
	memset(buf, 0xee, sizeof(buf));
	cdc_encode(&m, buf);
	slot(want, head, sizeof(head));
	assert_memory_equal(buf, want, LINK_MSG_LEN);
	assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &back), 0);
	assert_cdc_equal(&back, &m);
}

static void test_cdc_round_trips(void **state)
{
	uint8_t buf[LINK_MSG_LEN], again[LINK_MSG_LEN];
	struct cdc_msg m, back;

	(void)state;
	for (unsigned pf = 0; pf <= CDC_PF_WRITE_BLOCKED; pf++) {
		for (unsigned cf = 0; cf < 8; cf++) {
			sample_cdc(&m);
			m.prod_flags = (uint8_t)pf;
			m.conn_flags = (uint8_t)cf;
			cdc_encode(&m, buf);
			assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &back), 0);
			assert_cdc_equal(&back, &m);
			cdc_encode(&back, again);
			assert_memory_equal(again, buf, LINK_MSG_LEN);
		}
	}
	memset(&m, 0, sizeof(m));
	cdc_encode(&m, buf);
	assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &back), 0);
	assert_cdc_equal(&back, &m);
	memset(&m, 0xff, sizeof(m));
	m.prod_flags = CDC_PF_WRITE_BLOCKED;
	m.conn_flags = 7;
	cdc_encode(&m, buf);
	assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &back), 0);
	assert_cdc_equal(&back, &m);
}

static void test_cdc_rejects(void **state)
{
	uint8_t buf[LINK_MSG_LEN + 1];
	struct cdc_msg m;

	(void)state;
	sample_cdc(&m);
	cdc_encode(&m, buf);
	buf[LINK_MSG_LEN] = 0;
	/* Every length but one slot. */
	for (size_t n = 0; n <= LINK_MSG_LEN + 1; n++)
		assert_int_equal(cdc_dec(buf, n, &m), n == LINK_MSG_LEN ? 0 : -EBADMSG);
	/* The type byte and the length byte. */
	for (unsigned v = 0; v < 256; v++) {
		buf[0] = (uint8_t)v;
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), v == 0xfe ? 0 : -EBADMSG);
	}
	buf[0] = CDC_MSG_TYPE;
	for (unsigned v = 0; v < 256; v++) {
		buf[1] = (uint8_t)v;
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), v == 64 ? 0 : -EBADMSG);
	}
	buf[1] = LINK_MSG_LEN;
	/* Undefined flag bits, each alone. */
	for (unsigned bit = 1; bit < 8; bit++) {
		buf[24] = (uint8_t)(1u << bit);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		buf[24] = (uint8_t)(CDC_PF_WRITE_BLOCKED | 1u << bit);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	buf[24] = 0;
	for (unsigned bit = 3; bit < 8; bit++) {
		buf[25] = (uint8_t)(1u << bit);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	for (unsigned bit = 4; bit < 8; bit++) {
		buf[25] = (uint8_t)(CDC_CF_ABORT | CDC_CF_STOPPING | 1u << bit);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	/* STOPPING says why a reset came: only with ABORT. */
	for (unsigned cf = 0; cf < 8; cf++) {
		buf[25] = (uint8_t)(cf | CDC_CF_STOPPING);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m),
				 cf & CDC_CF_ABORT ? 0 : -EBADMSG);
		if (cf & CDC_CF_ABORT)
			assert_int_equal(m.conn_flags, cf | CDC_CF_STOPPING);
	}
	buf[25] = 0;
	/* Each reserved byte, with a low and a high bit. */
	for (size_t off = 28; off < LINK_MSG_LEN; off++) {
		buf[off] = 0x01;
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		buf[off] = 0x80;
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		buf[off] = 0;
	}
	assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &m), 0);
}

/* One sample of each LLC message, with its hand-written wire form. */
#define LLC_CASES	8

struct llc_case {
	struct llc_msg m;
	uint8_t head[LINK_MSG_LEN];
	size_t head_len;
	size_t end;		/* first reserved byte after the fields */
};

static void llc_cases(struct llc_case *c, size_t *n)
{
	static const uint8_t open4[] = {
		0x20, 0x40, 0x00, 0x00,		/* FLOW_OPEN, length, reserved */
		0x00, 0x07, 0x00, 0x03,		/* token */
		0x00, 0x01, 0x00, 0x00,		/* rmb.offset */
		0x00, 0x01, 0x00, 0x00,		/* rmb.size 64 KiB */
		0x04, 0x00, 0x01, 0xbb,		/* family 4, reserved, port 443 */
		0x0a, 0x00, 0x00, 0x02,		/* 10.0.0.2 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x12, 0x34, 0x56, 0x78,		/* rmb.key */
		0xc3, 0x50, 0x00, 0x00,		/* the client's port 50000, reserved */
		0x0a, 0x00, 0x00, 0x01,		/* the client, 10.0.0.1 */
	};
	static const uint8_t open6[] = {
		0x20, 0x40, 0x00, 0x00,
		0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xc0, 0x00,
		0x04, 0x00, 0x00, 0x00,		/* 64 MiB */
		0x06, 0x00, 0xff, 0xff,		/* family 6, port 65535 */
		0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,	/* 2001:db8::1 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00,		/* rmb.key 0 (shm) */
	};
	static const uint8_t accept[] = {
		0x21, 0x40, 0x00, 0x00,
		0x00, 0x07, 0x00, 0x03,		/* the opener's token */
		0x00, 0x02, 0x00, 0x09,		/* the acceptor's */
		0x00, 0x20, 0x00, 0x00,		/* rmb.offset */
		0x00, 0x00, 0x40, 0x00,		/* rmb.size 16 KiB */
		0xff, 0xff, 0xff, 0xfe,		/* rmb.key */
	};
	static const uint8_t decline[] = {
		0x22, 0x40, 0x00, 0x00,
		0x00, 0x07, 0x00, 0x03,
		0x03,				/* max_flows */
	};
	static const uint8_t move[] = {
		0x23, 0x40, 0x00, 0x00,
		0x00, 0x02, 0x00, 0x09,		/* the writer's token */
		0x02, 0x00, 0x00, 0x00,		/* gen 2, reserved */
		0x00, 0x30, 0x00, 0x00,		/* rmb.offset */
		0x00, 0x01, 0x00, 0x00,		/* rmb.size 64 KiB */
		0x00, 0x00, 0x00, 0x07,		/* rmb.key */
	};
	static const uint8_t test[] = { 0x30, 0x40, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef };
	static const uint8_t rsp[] = { 0x31, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t del[] = { 0x32, 0x40, 0x00, 0x00, 0x03 };	/* ALL | ORDERLY */
	size_t i = 0;

	memset(c, 0, LLC_CASES * sizeof(*c));
	c[i].m.type = LLC_FLOW_OPEN;
	c[i].m.open.token = 0x00070003;
	c[i].m.open.rmb.offset = 0x10000;
	c[i].m.open.rmb.size = 64 << 10;
	c[i].m.open.family = 4;
	c[i].m.open.port = 443;
	memcpy(c[i].m.open.addr, "\x0a\x00\x00\x02", 4);
	c[i].m.open.rmb.key = 0x12345678;
	c[i].m.open.src_port = 50000;
	memcpy(c[i].m.open.src_addr, "\x0a\x00\x00\x01", 4);
	memcpy(c[i].head, open4, sizeof(open4));
	c[i].head_len = sizeof(open4);
	c[i++].end = 60;

	c[i].m.type = LLC_FLOW_OPEN;
	c[i].m.open.token = 0xffffffff;
	c[i].m.open.rmb.offset = 0xffffc000;
	c[i].m.open.rmb.size = 64u << 20;
	c[i].m.open.family = 6;
	c[i].m.open.port = 65535;
	memcpy(c[i].m.open.addr, open6 + 20, 16);
	memcpy(c[i].head, open6, sizeof(open6));
	c[i].head_len = sizeof(open6);
	c[i++].end = 60;

	c[i].m.type = LLC_FLOW_ACCEPT;
	c[i].m.accept.token = 0x00070003;
	c[i].m.accept.peer_token = 0x00020009;
	c[i].m.accept.rmb.offset = 0x200000;
	c[i].m.accept.rmb.size = 16 << 10;
	c[i].m.accept.rmb.key = 0xfffffffe;
	memcpy(c[i].head, accept, sizeof(accept));
	c[i].head_len = sizeof(accept);
	c[i++].end = 24;

	c[i].m.type = LLC_FLOW_DECLINE;
	c[i].m.decline.token = 0x00070003;
	c[i].m.decline.reason = CLC_DECL_MAX_FLOWS;
	memcpy(c[i].head, decline, sizeof(decline));
	c[i].head_len = sizeof(decline);
	c[i++].end = 9;

	c[i].m.type = LLC_RMB_MOVE;
	c[i].m.move.token = 0x00020009;
	c[i].m.move.gen = 2;
	c[i].m.move.rmb.offset = 0x300000;
	c[i].m.move.rmb.size = 64 << 10;
	c[i].m.move.rmb.key = 7;
	memcpy(c[i].head, move, sizeof(move));
	c[i].head_len = sizeof(move);
	c[i++].end = 24;

	c[i].m.type = LLC_TEST_LINK;
	c[i].m.test.cookie = 0xdeadbeef;
	memcpy(c[i].head, test, sizeof(test));
	c[i].head_len = sizeof(test);
	c[i++].end = 8;

	c[i].m.type = LLC_TEST_LINK_RSP;
	c[i].m.test.cookie = 1;
	memcpy(c[i].head, rsp, sizeof(rsp));
	c[i].head_len = sizeof(rsp);
	c[i++].end = 8;

	c[i].m.type = LLC_DELETE_LINK;
	c[i].m.del.flags = LLC_DEL_ALL | LLC_DEL_ORDERLY;
	memcpy(c[i].head, del, sizeof(del));
	c[i].head_len = sizeof(del);
	c[i++].end = 5;
	assert_int_equal(i, LLC_CASES);
	*n = i;
}

static void test_llc_wire(void **state)
{
	uint8_t want[LINK_MSG_LEN], buf[LINK_MSG_LEN];
	struct llc_case c[LLC_CASES];
	struct llc_msg back;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	for (size_t i = 0; i < n; i++) {
		memset(buf, 0xee, sizeof(buf));
		llc_encode(&c[i].m, buf);
		slot(want, c[i].head, c[i].head_len);
		assert_memory_equal(buf, want, LINK_MSG_LEN);
		/* llc_decode zeroes the whole struct, as the cases are. */
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &back), 0);
		assert_memory_equal(&back, &c[i].m, sizeof(back));
	}
}

static void test_llc_round_trips(void **state)
{
	static const uint32_t sizes[] = { 16 << 10, 32 << 10, 1 << 20, 64u << 20 };
	static const uint8_t reasons[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t buf[LINK_MSG_LEN], again[LINK_MSG_LEN];
	struct llc_case c[LLC_CASES];
	struct llc_msg back;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		c[0].m.open.rmb.size = sizes[s];
		c[2].m.accept.rmb.size = sizes[s];
		c[3].m.decline.reason = reasons[s];
		for (size_t i = 0; i < n; i++) {
			llc_encode(&c[i].m, buf);
			assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &back), 0);
			assert_memory_equal(&back, &c[i].m, sizeof(back));
			llc_encode(&back, again);
			assert_memory_equal(again, buf, LINK_MSG_LEN);
		}
	}
	for (size_t r = 0; r < ARRAY_SIZE(reasons); r++) {
		c[3].m.decline.reason = reasons[r];
		llc_encode(&c[3].m, buf);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &back), 0);
		assert_int_equal(back.decline.reason, reasons[r]);
	}
}

/* A family-4 address is 4 bytes on the wire whatever else the caller
 * left in the array. */
static void test_llc_family4_encode(void **state)
{
	uint8_t buf[LINK_MSG_LEN];
	struct llc_case c[LLC_CASES];
	struct llc_msg back;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	memset(c[0].m.open.addr + 4, 0xaa, 12);
	llc_encode(&c[0].m, buf);
	for (size_t off = 24; off < 36; off++)
		assert_int_equal(buf[off], 0);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &back), 0);
	for (size_t i = 4; i < 16; i++)
		assert_int_equal(back.open.addr[i], 0);
}

static void test_llc_rejects(void **state)
{
	static const uint32_t bad_sizes[] = {
		0, 1, 8 << 10, (16 << 10) - 1, (16 << 10) + 1, 3 << 14,
		(64u << 20) - 1, 128u << 20, 1u << 31, 0xffffffff,
	};
	uint8_t buf[LINK_MSG_LEN + 1];
	struct llc_case c[LLC_CASES];
	struct llc_msg m;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	for (size_t i = 0; i < n; i++) {
		llc_encode(&c[i].m, buf);
		buf[LINK_MSG_LEN] = 0;
		for (size_t k = 0; k <= LINK_MSG_LEN + 1; k++)
			assert_int_equal(llc_dec(buf, k, &m), k == LINK_MSG_LEN ? 0 : -EBADMSG);
		for (unsigned v = 0; v < 256; v++) {
			buf[1] = (uint8_t)v;
			assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), v == 64 ? 0 : -EBADMSG);
		}
		buf[1] = LINK_MSG_LEN;
		/* Bytes 2..3 of every LLC message, and every byte after its
		 * fields, each alone. */
		for (size_t off = 2; off < LINK_MSG_LEN; off++) {
			if (off == 4)
				off = c[i].end;
			buf[off] = 0x01;
			assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
			buf[off] = 0x80;
			assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
			buf[off] = 0;
		}
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
	}

	/* FLOW_OPEN: byte 17, family, port, the unused bytes of a family-4
	 * address, the ring size. */
	llc_encode(&c[0].m, buf);
	buf[17] = LLC_OPEN_RESENT;			/* the one flag */
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
	assert_int_equal(m.open.flags, LLC_OPEN_RESENT);
	for (unsigned b = 1; b < 8; b++) {
		buf[17] = (uint8_t)(1u << b);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	buf[17] = 0;
	for (unsigned f = 0; f < 256; f++) {
		buf[16] = (uint8_t)f;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m),
				 f == 4 || f == 6 ? 0 : -EBADMSG);
	}
	buf[16] = 4;
	for (size_t off = 24; off < 36; off++) {
		buf[off] = 1;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		/* ... which are address bytes for family 6. */
		buf[16] = 6;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
		buf[16] = 4;
		buf[off] = 0;
	}
	buf[18] = 0;
	buf[19] = 0;
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	buf[19] = 1;
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
	assert_int_equal(m.open.port, 1);

	/* The client: bytes 42..43 reserved, the unused bytes of a family-4
	 * client address zero, and a port and an address together or
	 * neither. */
	llc_encode(&c[0].m, buf);
	for (size_t off = 42; off < 44; off++) {
		buf[off] = 1;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		buf[off] = 0;
	}
	for (size_t off = 48; off < 60; off++) {
		buf[off] = 1;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		buf[16] = 6;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
		buf[16] = 4;
		buf[off] = 0;
	}
	buf[40] = buf[41] = 0;				/* an address, no port */
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	memset(buf + 44, 0, 16);			/* neither: not given */
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
	assert_int_equal(m.open.src_port, 0);
	buf[41] = 1;					/* a port, no address */
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	for (size_t s = 0; s < ARRAY_SIZE(bad_sizes); s++) {
		c[0].m.open.rmb.size = bad_sizes[s];
		llc_encode(&c[0].m, buf);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
		c[2].m.accept.rmb.size = bad_sizes[s];
		llc_encode(&c[2].m, buf);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}

	/* The sender's token is never 0, the receiver's "none yet" (issue
	 * 12 item 7); the opener's token in an accept is only looked up. */
	c[0].m.open.token = 0;
	llc_encode(&c[0].m, buf);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	c[2].m.accept.rmb.size = 16 << 10;
	c[2].m.accept.peer_token = 0;
	llc_encode(&c[2].m, buf);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	c[2].m.accept.peer_token = 1;
	c[2].m.accept.token = 0;
	llc_encode(&c[2].m, buf);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);

	/* FLOW_DECLINE: reasons 1..8 only (a decoder of before took 8,
	 * stopping, for malformed: CLC_FEAT_DECL_STOPPING). */
	llc_encode(&c[3].m, buf);
	for (unsigned r = 0; r < 256; r++) {
		buf[8] = (uint8_t)r;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), r >= 1 && r <= 8 ? 0 : -EBADMSG);
	}

	/* RMB_MOVE: the reserved bytes inside its fields, token 0 (no flow
	 * has it), a ring size that is not a class; any generation goes. */
	for (size_t off = 9; off < 12; off++) {
		llc_encode(&c[4].m, buf);
		buf[off] = 0x01;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	for (size_t s = 0; s < ARRAY_SIZE(bad_sizes); s++) {
		c[4].m.move.rmb.size = bad_sizes[s];
		llc_encode(&c[4].m, buf);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	}
	c[4].m.move.rmb.size = 16 << 10;
	c[4].m.move.token = 0;
	llc_encode(&c[4].m, buf);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
	c[4].m.move.token = 1;
	for (unsigned g = 0; g < 256; g++) {
		c[4].m.move.gen = (uint8_t)g;
		llc_encode(&c[4].m, buf);
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), 0);
		assert_int_equal(m.move.gen, g);
	}
}

/* DELETE_LINK: the two flags in any combination, no other bit. */
static void test_llc_delete_flags(void **state)
{
	uint8_t buf[LINK_MSG_LEN];
	struct llc_case c[LLC_CASES];
	struct llc_msg m;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	llc_encode(&c[7].m, buf);
	for (unsigned f = 0; f < 256; f++) {
		buf[4] = (uint8_t)f;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m),
				 f & ~(unsigned)(LLC_DEL_ALL | LLC_DEL_ORDERLY) ? -EBADMSG : 0);
		if (!(f & ~(unsigned)(LLC_DEL_ALL | LLC_DEL_ORDERLY)))
			assert_int_equal(m.del.flags, f);
	}
}

/* Only the five LLC types decode, and not the CDC type: each decoder
 * refuses the other's slots. */
static void test_types_disjoint(void **state)
{
	uint8_t buf[LINK_MSG_LEN];
	struct llc_case c[LLC_CASES];
	struct cdc_msg cm;
	struct llc_msg m;
	size_t n;

	(void)state;
	llc_cases(c, &n);
	llc_encode(&c[5].m, buf);	/* TEST_LINK: no field to judge */
	for (unsigned t = 0; t < 256; t++) {
		bool known = t == LLC_TEST_LINK || t == LLC_TEST_LINK_RSP;

		buf[0] = (uint8_t)t;
		assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), known ? 0 : -EBADMSG);
	}
	for (size_t i = 0; i < n; i++) {
		llc_encode(&c[i].m, buf);
		assert_int_equal(cdc_dec(buf, LINK_MSG_LEN, &cm), -EBADMSG);
	}
	sample_cdc(&cm);
	cm.seq = 0;
	cdc_encode(&cm, buf);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);

	/* An unknown type encodes to a slot the peer refuses. */
	memset(&m, 0, sizeof(m));
	m.type = 0x7f;
	llc_encode(&m, buf);
	assert_int_equal(buf[0], 0x7f);
	assert_int_equal(llc_dec(buf, LINK_MSG_LEN, &m), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cdc_wire),
		cmocka_unit_test(test_cdc_round_trips),
		cmocka_unit_test(test_cdc_rejects),
		cmocka_unit_test(test_llc_wire),
		cmocka_unit_test(test_llc_round_trips),
		cmocka_unit_test(test_llc_family4_encode),
		cmocka_unit_test(test_llc_rejects),
		cmocka_unit_test(test_llc_delete_flags),
		cmocka_unit_test(test_types_disjoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
