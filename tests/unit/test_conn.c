/* SPDX-License-Identifier: MIT */
/*
 * The data path of one SMC-mode flow (proxy/smc/conn.c) on an in-memory
 * transport (fake_transport.h), the test playing the peer: it writes into
 * our receive ring and hands conn_on_cdc() the CDC messages a link would,
 * and reads the messages the flow posts. The application socket is a
 * real loopback connection. Checked: delivery in order across the ring's
 * wrap, the window update rule, stale and impossible cursors, FIN, RST
 * and CLOSED both ways, and back-pressure when the peer's ring is full.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_transport.h"

#define RING	(16u * 1024)		/* our rings and the peer's, unless said */
#define REGION	(1u << 20)

static int setup(void **state)
{
	*state = world_new(RING, REGION, 64 * 1024);
	return 0;
}

static int teardown(void **state)
{
	world_free(*state);
	return 0;
}

static uint8_t *random_bytes(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		b[i] = seed >> 16;
	}
	return b;
}

/*
 * Reads what the application socket has, up to n bytes, running the loop
 * while it waits; stops at EOF (*eof set), at n, or when nothing more
 * comes for a while. Returns the bytes read.
 */
static size_t app_read(struct world *w, struct wflow *f, uint8_t *buf, size_t n, bool *eof)
{
	size_t got = 0;
	int idle = 0;

	*eof = false;
	while (got < n && idle < 200) {
		ssize_t r = recv(f->app, buf + got, n - got, MSG_DONTWAIT);

		if (r > 0) {
			got += r;
			idle = 0;
			continue;
		}
		if (r == 0) {
			*eof = true;
			break;
		}
		assert_int_equal(errno, EAGAIN);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		usleep(500);
		idle++;
	}
	return got;
}

/* Exactly n bytes, no EOF before them. */
static void app_read_exact(struct world *w, struct wflow *f, uint8_t *buf, size_t n)
{
	bool eof;

	assert_int_equal(app_read(w, f, buf, n, &eof), n);
}

/* The application sees an RST. */
static void assert_app_reset(struct wflow *f)
{
	char c;

	assert_int_equal(recv(f->app, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, ECONNRESET);
}

/* The peer's side of the ring our flow writes into: it takes every
 * message posted so far (room back, all sends completed) and returns
 * the last CDC's consumer cursor in *cons. */
static unsigned peer_take_msgs(struct world *w, struct smc_cursor *cons)
{
	unsigned i, n = w->fake.n_msgs;

	for (i = 0; i < n; i++) {
		struct cdc_msg m = world_cdc(w, i);

		assert_int_equal(m.conn_flags, 0);
		*cons = m.cons;
	}
	w->fake.n_msgs = 0;
	w->fake.room = 64;
	w->fake.done = w->lnk->tx_seq;
	return n;
}

/* ------------------------------------------------------------------ */
/* Receiving. */

/*
 * Random amounts, never more than the free space the flow announced,
 * for many rounds of the ring: the application gets every byte in order,
 * and the flow's consumer cursor is where the peer's producer is.
 */
static void test_delivery_across_wrap(void **state)
{
	const size_t total = 1u << 20;
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(total, 7), *got = malloc(total);
	struct smc_cursor announced = { 0 };
	size_t sent = 0, recvd = 0;
	unsigned seed = 3, updates = 0;

	while (recvd < total) {
		uint32_t room = RING - (uint32_t)cursor_diff(announced, f->peer_prod, RING);
		uint32_t n;

		seed = seed * 1103515245 + 12345;
		n = (seed >> 8) % (room + 1);
		if (n > total - sent)
			n = total - sent;
		if (n) {
			world_peer_write(w, f, data + sent, n);
			sent += n;
			world_peer_cdc(w, f, 0, 0);
		}
		recvd += app_read(w, f, got + recvd, sent - recvd, &(bool){ false });
		updates += peer_take_msgs(w, &announced);
		assert_int_equal(f->c.state, CONN_ACTIVE);
	}
	assert_memory_equal(got, data, total);
	assert_true(cursor_equal(f->c.rx_cons, f->peer_prod));
	assert_true(f->c.rx_cons.wrap >= total / RING - 1);
	assert_int_equal(f->c.bytes_rx, total);
	assert_int_equal(w->stats.bytes_out, total);	/* the opener's side: toward the client */
	assert_int_equal(w->stats.window_updates, updates);
	assert_int_equal(w->stats.bad_messages, 0);
	free(data);
	free(got);
}

/*
 * The CDCs of one completion round that name one flow cost its socket one
 * write, at the end of the batch: the bytes of three CDCs arrive in one
 * write, in order, and nothing is written before the batch ends.
 */
static void test_delivery_once_per_batch(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	struct cdc_msg m = { .token = f->c.token };
	uint8_t got[9];
	unsigned i;

	for (i = 0; i < 3; i++) {
		world_peer_write(w, f, (const uint8_t *)"abcdefghi" + 3 * i, 3);
		m.prod = f->peer_prod;
		conn_on_cdc(&f->c, &m);
	}
	assert_int_equal(w->stats.cdc_received, 3);
	assert_int_equal(w->stats.sock_writes, 0);
	assert_int_equal(f->c.bytes_rx, 0);
	world_batch_end(w);
	assert_int_equal(w->stats.sock_writes, 1);
	assert_int_equal(f->c.bytes_rx, 9);
	app_read_exact(w, f, got, 9);
	assert_memory_equal(got, "abcdefghi", 9);
}

/* SMC's rule: the consumer cursor goes back once a tenth of the ring was
 * freed since the last one we sent, not before. */
static void test_window_update_threshold(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(RING, 8), buf[RING];
	struct cdc_msg m;

	world_peer_write(w, f, data, RING / 10 - 1);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, buf, RING / 10 - 1);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->stats.window_updates, 0);

	world_peer_write(w, f, data, 1);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, buf, 1);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(w->stats.window_updates, 1);
	m = world_cdc(w, 0);
	assert_int_equal(m.token, PEER_TOKEN);
	assert_int_equal(m.cons.wrap, 0);
	assert_int_equal(m.cons.count, RING / 10);
	assert_int_equal(m.prod.count, 0);		/* we sent nothing */
	assert_int_equal(m.conn_flags, 0);

	/* Counted from the last update, not from the start. */
	world_peer_write(w, f, data, RING / 10 - 1);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, buf, RING / 10 - 1);
	assert_int_equal(w->fake.n_msgs, 1);
	world_peer_write(w, f, data, 1);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, buf, 1);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_int_equal(world_cdc(w, 1).cons.count, 2 * (RING / 10));
	assert_int_equal(w->stats.window_updates, 2);
	free(data);
}

/* A peer that said it is blocked on our ring gets the update at once. */
static void test_window_update_when_peer_blocked(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t buf[10];

	world_peer_write(w, f, (const uint8_t *)"0123456789", 10);
	world_peer_cdc(w, f, CDC_PF_WRITE_BLOCKED, 0);
	app_read_exact(w, f, buf, 10);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(world_cdc(w, 0).cons.count, 10);
	assert_false(f->c.peer_write_blocked);
}

/* A full ring (exactly its size announced) is fine, and counted. */
static void test_full_ring_accepted(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(RING, 9), *got = malloc(RING);

	world_peer_write(w, f, data, RING);
	assert_int_equal(f->peer_prod.wrap, 1);
	assert_int_equal(f->peer_prod.count, 0);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, got, RING);
	assert_memory_equal(got, data, RING);
	assert_int_equal(w->stats.ring_full_local, 1);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	free(data);
	free(got);
}

/* Cursors behind the ones we have are stale: ignored, nothing delivered
 * twice, the flow goes on. */
static void test_stale_cursor_ignored(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	struct smc_cursor now;
	uint8_t *data = random_bytes(RING, 10), *got = malloc(RING);
	bool eof;

	world_peer_write(w, f, data, 5000);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, got, 5000);
	now = f->peer_prod;

	f->peer_prod = (struct smc_cursor){ 0, 4000 };
	world_peer_cdc(w, f, 0, 0);
	f->peer_prod = (struct smc_cursor){ UINT32_MAX, 6000 };	/* a wrap behind */
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(app_read(w, f, got, RING, &eof), 0);
	assert_false(eof);
	assert_true(cursor_equal(f->c.rx_prod, now));
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(w->stats.bad_messages, 0);

	/* And the stream goes on from where it was. */
	f->peer_prod = now;
	world_peer_write(w, f, data + 5000, 100);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, got + 5000, 100);
	assert_memory_equal(got, data, 5100);
	free(data);
	free(got);
}

/* The same cursor again (a duplicate) is no new data either. */
static void test_duplicate_cursor_ignored(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t buf[8];
	bool eof;

	world_peer_write(w, f, (const uint8_t *)"abc", 3);
	world_peer_cdc(w, f, 0, 0);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, buf, 3);
	assert_int_equal(app_read(w, f, buf, sizeof(buf), &eof), 0);
	assert_int_equal(f->c.bytes_rx, 3);
}

/*
 * A protocol error resets the flow: counted, ABORT to the peer, RST to
 * the application, the owner told; the ring stays ours until the peer's
 * CLOSED says it stopped writing into it.
 */
static void assert_reset_by_protocol(struct world *w, struct wflow *f)
{
	struct cdc_msg m;

	assert_int_equal(w->stats.bad_messages, 1);
	assert_int_equal(f->ended, CONN_END_PROTOCOL + 1);
	assert_int_equal(f->c.state, CONN_CLOSED);
	assert_app_reset(f);
	assert_int_equal(w->fake.n_msgs, 1);
	m = world_cdc(w, 0);
	assert_int_equal(m.token, PEER_TOKEN);
	assert_true(m.conn_flags & CDC_CF_ABORT);
	assert_int_equal(f->closed, 0);
	assert_int_equal(w->lgr->rmbs.n_used, 1);

	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
	assert_int_equal(w->lgr->n_conns, 0);
	assert_int_equal(w->stats.bad_messages, 1);
}

/* A producer count that is not below the ring size. */
static void test_cursor_count_beyond_ring_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	f->peer_prod = (struct smc_cursor){ 0, RING };
	world_peer_cdc(w, f, 0, 0);
	assert_reset_by_protocol(w, f);
}

/* A producer more than a ring ahead of what we consumed. */
static void test_cursor_more_than_ring_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	f->peer_prod = (struct smc_cursor){ 1, 1 };
	world_peer_cdc(w, f, 0, 0);
	assert_reset_by_protocol(w, f);
}

/* A consumer cursor beyond what we ever wrote into the peer's ring. */
static void test_consumer_beyond_produced_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	f->peer_cons = (struct smc_cursor){ 0, 1 };
	world_peer_cdc(w, f, 0, 0);
	assert_reset_by_protocol(w, f);
}

/* Bytes announced after DONE_WRITING. */
static void test_data_after_fin_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t buf[4];
	bool eof;

	world_peer_write(w, f, (const uint8_t *)"end", 3);
	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	assert_int_equal(app_read(w, f, buf, sizeof(buf), &eof), 3);
	assert_true(eof);
	world_peer_write(w, f, (const uint8_t *)"x", 1);
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(w->stats.bad_messages, 1);
	assert_int_equal(f->ended, CONN_END_PROTOCOL + 1);
	assert_true(world_cdc(w, w->fake.n_msgs - 1).conn_flags & CDC_CF_ABORT);
}

/*
 * DONE_WRITING with a full ring the application reads slowly: the socket
 * blocks, and its write side is shut only after the last byte, so the
 * application reads everything, then EOF. Then the application's FIN
 * ends the flow cleanly and gives the ring back.
 */
static void test_done_writing_after_last_byte(void **state)
{
	const uint32_t ring = 256u * 1024;
	struct world *w = world_new(ring, REGION, 64 * 1024);
	uint8_t *data = random_bytes(ring, 11), *got = malloc(ring);
	struct wflow *f;
	size_t n = 0;
	bool eof = false;

	world_free(*state);
	*state = w;
	f = world_open_only(w, 0, 4096, 4096);
	world_batch_end(w);
	w->fake.n_msgs = 0;
	world_accept(w, 0, RING);

	world_peer_write(w, f, data, ring);
	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	assert_true(f->c.peer_fin);
	assert_true(f->c.out_blocked);		/* else the test proves nothing */
	assert_false(f->c.app_shut);

	while (!eof) {
		size_t r = app_read(w, f, got + n, ring - n + 1, &eof);

		assert_true(r > 0 || eof);
		n += r;
		peer_take_msgs(w, &(struct smc_cursor){ 0 });
	}
	assert_int_equal(n, ring);
	assert_memory_equal(got, data, ring);
	assert_true(f->c.app_shut);
	assert_int_equal(f->ended, 0);		/* our direction is still open */

	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->ended));
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_CLEAN + 1);
	assert_true(f->c.fin_sent);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
	free(data);
	free(got);
}

/* ABORT from the peer: RST to the application, CLOSED back, and the
 * flow's token and ring are free at once. */
static void test_peer_abort(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint32_t token = f->c.token;
	struct cdc_msg m;

	world_peer_cdc(w, f, 0, CDC_CF_ABORT);
	assert_int_equal(f->ended, CONN_END_RESET + 1);
	assert_int_equal(f->end_err, -ECONNRESET);
	assert_app_reset(f);
	assert_int_equal(w->fake.n_msgs, 1);
	m = world_cdc(w, 0);
	assert_int_equal(m.token, PEER_TOKEN);
	assert_int_equal(m.conn_flags, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
	assert_null(lgr_conn_find(w->lgr, token));
	assert_int_equal(w->lgr->rmbs.n_used, 0);
	assert_int_equal(w->stats.bad_messages, 0);
}

/* The same with the send queue full: the CLOSED waits for room, and the
 * ring is released only once it left. */
static void test_peer_abort_queue_full(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	w->fake.room = 0;
	world_peer_cdc(w, f, 0, CDC_CF_ABORT);
	assert_int_equal(f->ended, CONN_END_RESET + 1);
	assert_app_reset(f);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(f->closed, 0);
	w->fake.room = 4;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(world_cdc(w, 0).conn_flags, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
}

/* CLOSED without ABORT before the flow finished breaks the protocol. */
static void test_peer_closed_early_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	assert_int_equal(f->ended, CONN_END_PROTOCOL + 1);
	assert_int_equal(w->stats.bad_messages, 1);
	assert_app_reset(f);
	assert_true(world_cdc(w, 0).conn_flags & CDC_CF_ABORT);
	/* The peer already let go: nothing to wait for. */
	assert_int_equal(f->closed, 1);
}

/* ------------------------------------------------------------------ */
/* Sending. */

/*
 * The peer's ring fills: the flow stops reading the socket (counted once)
 * and says WRITE_BLOCKED; the peer's window update resumes the reads, and
 * the bytes land after the wrap in order.
 */
static void test_full_peer_ring_stops_reading(void **state)
{
	const size_t total = RING + 5000;
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(total, 12);
	struct cdc_msg m;

	assert_int_equal(write(f->app, data, total), (ssize_t)total);
	assert_true(world_run_until(w, f->c.bytes_tx == RING));
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, RING);
	assert_int_equal(w->stats.ring_full_remote, 1);
	assert_true(f->c.in_pending);
	m = world_cdc(w, w->fake.n_msgs - 1);
	assert_int_equal(m.prod.wrap, 1);
	assert_int_equal(m.prod.count, 0);
	assert_true(m.prod_flags & CDC_PF_WRITE_BLOCKED);
	assert_memory_equal(w->fake.peer, data, RING);

	/* A CDC that frees nothing changes nothing. */
	world_peer_cdc(w, f, 0, 0);
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, RING);

	/* The peer consumed 8000 bytes, and our sends completed. */
	w->fake.n_msgs = 0;
	w->fake.done = w->lnk->tx_seq;
	f->peer_cons = (struct smc_cursor){ 0, 8000 };
	world_peer_cdc(w, f, 0, 0);
	assert_true(world_run_until(w, f->c.bytes_tx == total));
	assert_false(f->c.in_pending);
	assert_false(f->c.write_blocked);
	assert_int_equal(w->stats.ring_full_remote, 1);
	m = world_cdc(w, w->fake.n_msgs - 1);
	assert_int_equal(m.prod.wrap, 1);
	assert_int_equal(m.prod.count, 5000);
	assert_false(m.prod_flags & CDC_PF_WRITE_BLOCKED);
	assert_memory_equal(w->fake.peer, data + RING, 5000);
	assert_memory_equal(w->fake.peer + 5000, data + 5000, RING - 5000);
	assert_int_equal(w->fake.written, total);
	free(data);
}

/*
 * The application filled the peer's ring exactly and then wrote nothing
 * more: once the peer frees space, the flow is not blocked any more and
 * must not say so (a WRITE_BLOCKED makes the peer answer at once with a
 * window update, and bypasses autocork).
 *
 * (Regression: conn.c cleared c->write_blocked
 * only after a successful socket read (conn_fill). Here the read after
 * the window update finds EAGAIN, so the flag stays set, and conn_push()
 * (which never holds or skips a flow with write_blocked) posts a CDC with
 * nothing new in it but WRITE_BLOCKED; every later conn_push() without a
 * read does the same.)
 */
static void test_write_blocked_cleared_when_room_returns(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(RING, 14);
	unsigned i, n;

	assert_int_equal(write(f->app, data, RING), (ssize_t)RING);
	assert_true(world_run_until(w, f->c.bytes_tx == RING));
	world_settle(w);
	assert_true(world_cdc(w, w->fake.n_msgs - 1).prod_flags & CDC_PF_WRITE_BLOCKED);
	n = w->fake.n_msgs;

	w->fake.done = w->lnk->tx_seq;
	f->peer_cons = (struct smc_cursor){ 1, 0 };	/* the peer took it all */
	world_peer_cdc(w, f, 0, 0);
	world_settle(w);
	assert_false(f->c.write_blocked);
	for (i = n; i < w->fake.n_msgs; i++)
		assert_false(world_cdc(w, i).prod_flags & CDC_PF_WRITE_BLOCKED);
	free(data);
}

/* A socket read that crosses the end of the peer's ring is handed to the
 * transport as two ranges. */
static void test_send_across_wrap_two_writes(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t *data = random_bytes(20000, 13);

	assert_int_equal(write(f->app, data, 10000), 10000);
	assert_true(world_run_until(w, f->c.bytes_tx == 10000));
	f->peer_cons = (struct smc_cursor){ 0, 10000 };
	w->fake.done = w->lnk->tx_seq;
	world_peer_cdc(w, f, 0, 0);
	w->fake.n_writes = 0;
	assert_int_equal(write(f->app, data + 10000, 10000), 10000);
	assert_true(world_run_until(w, f->c.bytes_tx == 20000));
	assert_int_equal(w->fake.writes[0].off, 10000);
	assert_int_equal(w->fake.writes[0].len, RING - 10000);
	assert_int_equal(w->fake.writes[1].off, 0);
	assert_int_equal(w->fake.writes[1].len, 20000 - RING);
	assert_memory_equal(w->fake.peer + 10000, data + 10000, RING - 10000);
	assert_memory_equal(w->fake.peer, data + RING, 20000 - RING);
	free(data);
}

/* ------------------------------------------------------------------ */
/* Opening, and transport failures. */

/* The link full (max_flows_per_link): -ENOSPC, the ring back, the
 * socket untouched for the caller's TCP fallback. */
static void test_open_link_full(void **state)
{
	struct sockaddr_storage dest = world_dest();
	struct world *w = *state;
	struct conn *extra = calloc(1, sizeof(*extra));
	int fd = dup(1);

	w->lgr->max_flows_per_link = 1;
	world_open(w, 0, RING);
	assert_int_equal(conn_open(extra, w->lgr, fd, (struct sockaddr *)&dest, NULL,
				   &world_conn_ops), -ENOSPC);
	assert_int_equal(w->lgr->rmbs.n_used, 1);
	assert_int_equal(w->lgr->n_conns, 1);
	assert_int_equal(fcntl(fd, F_GETFD), 0);
	assert_int_equal(w->fake.n_msgs, 0);
	close(fd);
	free(extra);
}

/*
 * conn_open() takes a struct sockaddr: a sockaddr_in is a valid one.
 * Only under AddressSanitizer (make check-asan) does this test fail.
 *
 * (Regression: conn_open() and conn_accept()
 * (proxy/smc/conn.c, "c->dest = *(const struct sockaddr_storage *)dest") used to
 * copy sizeof(struct sockaddr_storage) = 128 bytes from dest, reading
 * past a 16-byte sockaddr_in. Today's callers (flow.c, lgr.c) happen to
 * pass a sockaddr_storage.)
 */
static void test_open_dest_sockaddr_in(void **state)
{
	struct sockaddr_in *dest = malloc(sizeof(*dest));	/* heap: exact bounds */
	struct world *w = *state;
	struct wflow *f = &w->flows[0];
	int fd = world_socket(&f->app, 0, 0);

	*dest = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(443),
				      .sin_addr.s_addr = htonl(0x0a000002) };
	assert_int_equal(conn_open(&f->c, w->lgr, fd, (struct sockaddr *)dest, NULL,
				   &world_conn_ops), 0);
	free(dest);
	world_batch_end(w);
	assert_int_equal(world_llc(w, 0).open.port, 443);
}

/* No ring left: -ENOMEM, nothing taken. */
static void test_open_no_ring(void **state)
{
	struct sockaddr_storage dest = world_dest();
	struct world *w = world_new(RING, RING, 64 * 1024);	/* room for one ring */
	struct conn *extra = calloc(1, sizeof(*extra));
	int fd = dup(1);

	world_free(*state);
	*state = w;
	world_open(w, 0, RING);
	assert_int_equal(conn_open(extra, w->lgr, fd, (struct sockaddr *)&dest, NULL,
				   &world_conn_ops), -ENOMEM);
	assert_int_equal(w->lgr->n_conns, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 1);
	assert_int_equal(fcntl(fd, F_GETFD), 0);
	close(fd);
	free(extra);
}

/* An accept naming a ring outside the peer's region: the flow is reset
 * (ABORT to the peer token it just learnt, RST to the application). */
static void test_accept_bad_ring_resets(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct llc_flow_accept a = {
		.token = f->c.token,
		.peer_token = PEER_TOKEN,
		.rmb = { .offset = FAKE_PEER_SIZE - RING / 2, .size = RING },
	};

	world_batch_end(w);
	w->fake.n_msgs = 0;
	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	assert_reset_by_protocol(w, f);
}

/* A post the transport refuses fails the link group: every flow on it
 * is reset, nothing is leaked. */
static void test_post_failure_fails_link_group(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);

	w->fake.post_err = -EIO;
	assert_int_equal(write(a->app, "x", 1), 1);
	assert_true(world_run_until(w, a->ended));
	w->lgr = NULL;			/* freed at the end of that batch */
	world_settle(w);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(b->ended, CONN_END_LINK_DOWN + 1);
	assert_app_reset(a);
	assert_app_reset(b);
	assert_int_equal(a->closed, 1);
	assert_int_equal(b->closed, 1);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/*
 * A write the transport could not carry (rdma: the RDMA WRITE post
 * failed) must not be announced: the peer would deliver whatever its ring
 * holds at those offsets. The flow (or the link group) has to go.
 *
 * (Regression: conn_fill() (proxy/smc/conn.c) ignored
 * the return value of ops->write() and advances tx_prod regardless; the
 * next CDC announces the bytes. shm's write() cannot fail, so this only
 * bites with rdma, which transport-t.h says is next.)
 */
static void test_write_failure_not_announced(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	unsigned i;

	w->fake.write_err = -EIO;
	assert_int_equal(write(f->app, "x", 1), 1);
	world_settle(w);
	for (i = 0; i < w->fake.n_msgs; i++)
		assert_int_equal(world_cdc(w, i).prod.count, 0);
	if (w->stats.lgr_failures)
		w->lgr = NULL;		/* freed: the fix may fail the group */
	assert_int_not_equal(f->ended, 0);
}

/* ------------------------------------------------------------------ */
/* Through the link's receive path. */

/* A CDC found by its token is handled; one for a token of a flow that is
 * gone (an older generation of the index) is dropped quietly. */
static void test_link_rx_token(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	struct cdc_msg m = { .token = f->c.token, .prod = { 0, 3 } };
	uint8_t msg[LINK_MSG_LEN], buf[3];

	world_peer_write(w, f, (const uint8_t *)"xyz", 3);
	cdc_encode(&m, msg);
	link_rx(w->lnk, msg, sizeof(msg));
	world_batch_end(w);
	app_read_exact(w, f, buf, 3);
	assert_memory_equal(buf, "xyz", 3);

	m.token = f->c.token + 0x10000;		/* next generation, same index */
	m.conn_flags = CDC_CF_ABORT;
	cdc_encode(&m, msg);
	link_rx(w->lnk, msg, sizeof(msg));
	world_batch_end(w);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(w->stats.cdc_received, 1);
}

/* Guards a fixed bug: a FLOW_ACCEPT with peer token 0 was taken as
 * "no token", so a DECLINE after it freed a live flow's ring early.
 *
 * 0 is the opener's "not accepted yet": the flow ran with it, and a
 * FLOW_DECLINE for the same token then marked the live flow peer-closed
 * (conn_on_decline() saw no peer token), so its ring went back to the pool
 * at the flow's end while the peer still wrote into it. Such an accept is
 * malformed (smcproxy-protocol(7), Tokens): the link group fails as for
 * any bad message, and the flow goes on as a never-started one would. */
static void test_accept_token_zero_is_bad_message(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct llc_msg acc = { .type = LLC_FLOW_ACCEPT };
	struct llc_msg dec = { .type = LLC_FLOW_DECLINE };
	uint8_t msg[LINK_MSG_LEN];

	world_batch_end(w);
	acc.accept.token = f->c.token;
	acc.accept.peer_token = 0;
	acc.accept.rmb.size = RING;
	llc_encode(&acc, msg);
	link_rx(w->lnk, msg, sizeof(msg));
	assert_int_equal(w->stats.bad_messages, 1);
	assert_int_not_equal(f->c.state, CONN_ACTIVE);
	/* The decline that followed it finds no flow to mark. */
	dec.decline.token = f->c.token;
	dec.decline.reason = CLC_DECL_POLICY;
	llc_encode(&dec, msg);
	link_rx(w->lnk, msg, sizeof(msg));
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	/* The group failed there, once (lgr.h, "Failure"). */
	assert_int_equal(w->stats.lgr_failures, 1);
	/* Gone on over TCP once, as an open the group never carried. */
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(f->n_ended, 1);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/* The link group fails: RST to the application, the owner told, the
 * ring back in the budget. */
static void test_link_group_failure(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	lgr_fail(w->lgr, -ECONNRESET);
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_LINK_DOWN + 1);
	assert_app_reset(f);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->stats.flows_reset_link, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/*
 * An open the peer does not answer in time: the flow goes over TCP (the
 * owner hears a decline with reason timeout) but the group stays, and the
 * ring waits for the late answer: an accept is aborted, and the peer's
 * CLOSED frees it. (Regression: one late FLOW_ACCEPT, e.g. under a burst
 * of opens on a peer with slow connects, failed the whole link group and
 * reset every flow on it.)
 */
static void test_open_timeout_falls_back(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct llc_flow_accept a = { .peer_token = PEER_TOKEN, .rmb = { .size = RING } };
	uint32_t token = f->c.token;

	world_batch_end(w);
	w->fake.n_msgs = 0;
	list_del(&f->c.wait_node);		/* as lgr_sweep() does */
	conn_on_deadline(&f->c);
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(f->closed, 0);		/* the ring waits */

	a.token = token;
	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(world_cdc(w, 0).conn_flags & CDC_CF_ABORT);
	assert_int_equal(f->closed, 0);
	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
	assert_null(lgr_conn_find(w->lgr, token));
	assert_int_equal(w->lgr->rmbs.n_used, 0);
}

/*
 * The peer accepts with a ring we cannot take (rdma: no mirror of that
 * size within buffers.ring, the budget or this peer's share). Nothing of
 * the flow crossed yet: it goes over TCP (the owner hears a decline,
 * out_of_memory) and the peer's side is aborted; its CLOSED frees our
 * ring. (Regression: the flow was reset after FLOW_ACCEPT, so a peer
 * that pinned our mirrors cost this host's applications their
 * connections.) A ring outside the peer's region still resets.
 */
static void test_accept_without_mirror_falls_back(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct llc_flow_accept a = { .peer_token = PEER_TOKEN, .rmb = { .size = RING } };
	uint32_t token = f->c.token;

	world_batch_end(w);
	w->fake.n_msgs = 0;
	w->fake.attach_err = -ENOMEM;
	a.token = token;
	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	w->fake.attach_err = 0;
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(f->n_ended, 1);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(w->stats.rings_refused, 1);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(world_cdc(w, 0).conn_flags & CDC_CF_ABORT);
	assert_int_equal(f->closed, 0);		/* our ring waits for the CLOSED */
	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
	assert_null(lgr_conn_find(w->lgr, token));
	assert_int_equal(w->lgr->rmbs.n_used, 0);

	/* A ring outside the peer's region is a lie: reset. */
	f = world_open_only(w, 1, 0, 0);
	world_batch_end(w);
	a.token = f->c.token;
	a.peer_token = PEER_TOKEN + 1;
	a.rmb.offset = FAKE_PEER_SIZE;
	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_PROTOCOL + 1);
}

/* A peer that still answers nothing CONN_OPEN_GRACE times later is
 * wedged: then the group fails. */
static void test_open_unanswered_fails_group(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);

	world_batch_end(w);
	list_del(&f->c.wait_node);
	conn_on_deadline(&f->c);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_true(f->c.deadline_ms > uv_now(&w->loop));
	list_del(&f->c.wait_node);
	conn_on_deadline(&f->c);
	assert_int_equal(w->stats.lgr_failures, 1);
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/*
 * The acceptor's connect deadline passes while its worker was busy, but
 * the destination had answered: the socket is connected, only the loop
 * has not looked yet (the deadline sweep runs before the batch's socket
 * events). The flow goes on. (Regression: such flows were reset as
 * connect timeouts, ~1000 of them when the peer's worker spent seconds
 * connecting a burst of 1000 flows among ports in TIME_WAIT.)
 */
/*
 * Flow 0 as the acceptor of an open towards a loopback socket of ours,
 * listening or only bound (then the connect is refused): conn_accept()'s
 * result; *lfd is that socket.
 */
static int world_accept_loopback(struct world *w, bool listening, int *lfd)
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct llc_flow_open open = {
		.token = 0x1234,
		.rmb = { .offset = 0, .size = RING },
		.family = 4,
	};
	struct sockaddr_storage dest = { 0 };
	socklen_t len = sizeof(dst);
	int l;

	w->lgr->role = LGR_ROLE_SERVER;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	w->net.n_lgrs_role[LGR_ROLE_SERVER]++;
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&dst, sizeof(dst)), 0);
	if (listening)
		assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&dst, &len), 0);
	memcpy(&dest, &dst, sizeof(dst));
	*lfd = l;
	return conn_accept(&w->flows[0].c, w->lnk, &open, (struct sockaddr *)&dest,
			   &world_conn_ops);
}

static void test_accept_deadline_after_connect(void **state)
{
	struct world *w = *state;
	struct wflow *f = &w->flows[0];
	int l;

	assert_int_equal(world_accept_loopback(w, true, &l), 0);
	assert_int_equal(f->c.state, CONN_CONNECTING);
	f->app = accept(l, NULL, NULL);	/* over loopback: connected by now */
	close(l);
	assert_true(f->app >= 0);

	list_del(&f->c.wait_node);		/* as lgr_sweep() does */
	conn_on_deadline(&f->c);
	assert_int_equal(f->ended, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(w->stats.connect_timeouts, 0);
	assert_int_equal(write(f->app, "hi", 2), 2);
	assert_true(world_run_until(w, f->c.bytes_tx == 2));
}

/* The acceptor's connect is refused: the flow ends as a connect failure
 * (an RST to the opener), counted once. Guards the EPOLLERR side of
 * conn_connected(), which asks SO_ERROR only when the events do not say
 * success. */
static void test_accept_connect_refused(void **state)
{
	struct world *w = *state;
	struct wflow *f = &w->flows[0];
	int l;

	if (world_accept_loopback(w, false, &l) == 0)	/* bound, not listening */
		assert_true(world_run_until(w, f->ended != 0));
	close(l);
	assert_int_equal(f->ended, CONN_END_CONNECT_FAILED + 1);
	assert_int_equal(w->stats.connect_failures, 1);
}

/*
 * The world's group as the acceptor of peer 192.0.2.1, whose prefix allows
 * every port, and an open from it to 192.0.2.77:8080, an address of this
 * host as far as the cache says (*dest): it passes lgr_check_dest(), so
 * what the layer above answers (w->flow_open_err) decides. The caller
 * undoes it with server_group_close_local().
 */
struct local_open {
	struct cfg_peer cp;
	struct cfg_allow allow;
	struct sockaddr_storage dest;
	struct llc_flow_open open;
};

static void server_group_open_local(struct world *w, struct local_open *lo)
{
	struct sockaddr_storage peer = { 0 };
	struct sockaddr_in *pin = (struct sockaddr_in *)&peer, *din = (struct sockaddr_in *)&lo->dest;
	struct cfg_peer *cp = &lo->cp;
	struct llc_flow_open *open = &lo->open;

	w->lgr->role = LGR_ROLE_SERVER;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	w->net.n_lgrs_role[LGR_ROLE_SERVER]++;
	pin->sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &pin->sin_addr);
	memcpy(&w->lgr->peer, &peer, sizeof(peer));
	lo->allow = (struct cfg_allow){ .family = 0, .lo = 1, .hi = 65535 };
	*cp = (struct cfg_peer){ .prefix = { .family = AF_INET, .len = 24 },
				 .allow = &lo->allow, .n_allow = 1 };
	memcpy(cp->prefix.addr, &pin->sin_addr, 4);
	w->cfg.peers = cp;
	w->cfg.n_peers = 1;
	memset(&lo->dest, 0, sizeof(lo->dest));
	din->sin_family = AF_INET;
	din->sin_port = htons(8080);
	inet_pton(AF_INET, "192.0.2.77", &din->sin_addr);
	*open = (struct llc_flow_open){ .token = 0x4321, .rmb = { .offset = 0, .size = RING },
					.family = 4, .port = 8080 };
	memcpy(open->addr, &din->sin_addr, 4);
	assert_int_equal(addr_local_set(&w->net.local_addrs, &lo->dest, 1, uv_now(&w->loop)), 0);
}

static void server_group_close_local(struct world *w)
{
	addr_local_close(&w->net.local_addrs);
	w->cfg.peers = NULL;
	w->cfg.n_peers = 0;
}

/* Message i the world sent is a FLOW_DECLINE of token for reason. */
static void assert_decline(struct world *w, unsigned i, uint32_t token, unsigned reason)
{
	struct llc_msg m = world_llc(w, i);

	assert_int_equal(m.type, LLC_FLOW_DECLINE);
	assert_int_equal(m.decline.token, token);
	assert_int_equal(m.decline.reason, reason);
}

/* A peer opens a flow whose connect finds no free source port on this host
 * (EADDRNOTAVAIL: ip_local_port_range spent, TIME_WAIT): declined
 * max_flows on the wire as before, but counted as connect_no_port and told
 * to the layer above (which logs the episode), not only as a decline. */
static void test_accept_no_port(void **state)
{
	struct world *w = *state;
	struct local_open lo;
	struct sockaddr_in *din = (struct sockaddr_in *)&lo.dest;

	server_group_open_local(w, &lo);
	w->flow_open_err = -EADDRNOTAVAIL;
	lgr_on_flow_open(w->lnk, &lo.open);
	world_batch_end(w);
	server_group_close_local(w);

	assert_int_equal(w->stats.dest_refused, 0);
	assert_decline(w, 0, 0x4321, CLC_DECL_MAX_FLOWS);
	assert_int_equal(w->stats.connect_no_port, 1);
	assert_int_equal(w->no_port_calls, 1);
	assert_int_equal(addr_port((struct sockaddr *)&w->no_port_dest), 8080);
	assert_int_equal(((struct sockaddr_in *)&w->no_port_dest)->sin_addr.s_addr,
			 din->sin_addr.s_addr);
}

/*
 * A peer opens a flow while this daemon stops (its drain: the layer above
 * says -ESHUTDOWN): declined stopping, and counted so, where it was
 * internal and a rolling restart of this daemon read as a fault on the
 * opener. A peer of before (no CLC_FEAT_DECL_STOPPING) would take reason
 * 8 for a malformed message and fail the group: it is told internal, as
 * before, and counted as what it was told.
 */
static void test_accept_stopping(void **state)
{
	struct world *w = *state;
	struct local_open lo;

	server_group_open_local(w, &lo);
	w->flow_open_err = -ESHUTDOWN;
	w->lgr->peer_decl_stopping = true;
	lgr_on_flow_open(w->lnk, &lo.open);
	w->lgr->peer_decl_stopping = false;	/* a peer of before */
	lo.open.token = 0x4322;
	lgr_on_flow_open(w->lnk, &lo.open);
	world_batch_end(w);
	server_group_close_local(w);

	assert_decline(w, 0, 0x4321, CLC_DECL_STOPPING);
	assert_decline(w, 1, 0x4322, CLC_DECL_INTERNAL);
	assert_int_equal(w->stats.declines_sent[CLC_DECL_STOPPING], 1);
	assert_int_equal(w->stats.declines_sent[CLC_DECL_INTERNAL], 1);
	assert_int_equal(w->stats.dest_refused, 0);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
}

/*
 * The opener's side: a FLOW_DECLINE with reason stopping sends the flow
 * over TCP as fallback stopping, counted under its name in
 * declines_received, and the group stays. A reason past the ones this
 * decoder knows is a malformed message that fails the group (as 8 is to
 * a daemon of before, hence CLC_FEAT_DECL_STOPPING); a flow still
 * opening on it goes over TCP as for any lost group, never as a reason
 * read off the wire.
 */
static void test_decline_stopping_falls_back(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct wflow *g = world_open_only(w, 1, 0, 0);
	struct llc_msg dec = { .type = LLC_FLOW_DECLINE };
	uint8_t msg[LINK_MSG_LEN];

	world_batch_end(w);
	dec.decline.token = f->c.token;
	dec.decline.reason = CLC_DECL_STOPPING;
	llc_encode(&dec, msg);
	link_rx(w->lnk, msg, sizeof(msg));
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(f->fb, FB_DECL_STOPPING);
	assert_int_equal(w->stats.declines_received[CLC_DECL_STOPPING], 1);
	assert_int_equal(w->stats.declines_received[CLC_DECL_INTERNAL], 0);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);

	dec.decline.token = g->c.token;
	llc_encode(&dec, msg);
	msg[offsetof(struct llc_wire_decline, reason)] = CLC_DECL__MAX;
	link_rx(w->lnk, msg, sizeof(msg));
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(w->stats.bad_messages, 1);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(g->ended, CONN_END_DECLINED + 1);
	assert_int_equal(g->fb, FB_NO_LINK);
	assert_int_equal(w->stats.declines_received[CLC_DECL_STOPPING], 1);
	assert_int_equal(w->stats.declines_received[CLC_DECL_INTERNAL], 0);
}

/* A server group of peer 192.0.2.1 whose prefix allows port 9000 only. */
static void server_group_allowing_9000(struct world *w, struct cfg_peer *cp,
				       struct cfg_allow *allow)
{
	struct sockaddr_in *pin = (struct sockaddr_in *)&w->lgr->peer;

	w->lgr->role = LGR_ROLE_SERVER;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	w->net.n_lgrs_role[LGR_ROLE_SERVER]++;
	memset(&w->lgr->peer, 0, sizeof(w->lgr->peer));
	pin->sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &pin->sin_addr);
	*allow = (struct cfg_allow){ .family = 0, .lo = 9000, .hi = 9000 };
	*cp = (struct cfg_peer){ .prefix = { .family = AF_INET, .len = 24 },
				 .allow = allow, .n_allow = 1 };
	memcpy(cp->prefix.addr, &pin->sin_addr, 4);
	w->cfg.peers = cp;
	w->cfg.n_peers = 1;
}

/* Regression: the local-address check (a getifaddrs() dump, 4 ms on a
 * host with 500 links) ran before the port policy, so a peer with no
 * allowed port at all made the worker dump the host's addresses for each
 * open to a new address. The policy now comes first: a refused port
 * takes no look at the addresses and counts as refused.ports. */
static void test_open_policy_before_addresses(void **state)
{
	struct world *w = *state;
	struct cfg_allow allow;
	struct cfg_peer cp;
	struct llc_flow_open open = { .token = 0x4321, .rmb = { .offset = 0, .size = RING },
				      .family = 4, .port = 8080 };
	struct llc_msg m;
	unsigned i;

	server_group_allowing_9000(w, &cp, &allow);
	for (i = 0; i < 4; i++) {
		open.token = 0x4321 + i;
		open.addr[0] = 198;
		open.addr[1] = 51;
		open.addr[2] = 100;
		open.addr[3] = (uint8_t)(1 + i);	/* not this host's */
		lgr_on_flow_open(w->lnk, &open);
	}
	world_batch_end(w);
	assert_int_equal(w->stats.dest_refused, 4);
	assert_int_equal(w->stats.ports_refused, 4);
	assert_false(w->net.local_addrs.taken);
	assert_int_equal(w->net.local_addrs.refreshes, 0);
	m = world_llc(w, 0);
	assert_int_equal(m.type, LLC_FLOW_DECLINE);
	assert_int_equal(m.decline.reason, CLC_DECL_POLICY);
	/* An allowed port to an address that is not ours: refused, and one
	 * snapshot serves every such open (none per open). */
	open.port = 9000;
	for (i = 0; i < 8; i++) {
		open.token = 0x5000 + i;
		open.addr[3] = (uint8_t)(1 + i);
		lgr_on_flow_open(w->lnk, &open);
	}
	world_batch_end(w);
	assert_int_equal(w->stats.dest_refused, 12);
	assert_int_equal(w->stats.ports_refused, 4);
	assert_true(w->net.local_addrs.taken);
	assert_int_equal(w->net.local_addrs.refreshes, 1);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	server_group_close_local(w);
}

/* One group's messages handled in one batch are bounded: after
 * LGR_RX_PER_BATCH, lgr_rx_room() says no (shm then leaves the rest in its
 * queue), and the next batch counts anew. */
static void test_rx_bound_per_batch(void **state)
{
	struct world *w = *state;
	struct cdc_msg m = { .token = 0x7777 };	/* no such flow: ignored */
	uint8_t msg[LINK_MSG_LEN];
	unsigned i;

	cdc_encode(&m, msg);
	world_batch_end(w);
	for (i = 0; i < LGR_RX_PER_BATCH; i++) {
		assert_true(lgr_rx_room(w->lgr));
		link_rx(w->lnk, msg, sizeof(msg));
	}
	assert_false(lgr_rx_room(w->lgr));
	world_batch_end(w);
	assert_true(lgr_rx_room(w->lgr));
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
}

/* A peer that floods declined opens (LGR_DECLINES_MAX in a window) loses
 * its link group, counted once as refused.floods; up to the limit, it
 * keeps it. */
static void test_open_flood_fails_group(void **state)
{
	struct world *w = *state;
	struct cfg_allow allow;
	struct cfg_peer cp;
	struct llc_flow_open open = { .rmb = { .offset = 0, .size = RING },
				      .family = 4, .port = 8080,
				      .addr = { 198, 51, 100, 1 } };
	unsigned i;

	server_group_allowing_9000(w, &cp, &allow);
	for (i = 0; i < LGR_DECLINES_MAX; i++) {
		open.token = 0x10000 + i;
		lgr_on_flow_open(w->lnk, &open);
		if (i % 16 == 15)
			world_batch_end(w);	/* declines need room on the link */
	}
	world_batch_end(w);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(w->stats.floods_refused, 0);
	open.token = 0x20000;
	lgr_on_flow_open(w->lnk, &open);
	assert_int_equal(w->stats.floods_refused, 1);
	assert_true(lgr_failing(w->lgr));
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, LGR_ERR_FLOOD);
	assert_int_equal(w->stats.floods_refused, 1);
	w->cfg.peers = NULL;
	w->cfg.n_peers = 0;
}

/* ------------------------------------------------------------------ */
/* Failures found inside a receive path wait for the end of the batch
 * (lgr.h, "Failure"). */

/* A CDC from the peer: n new bytes in f's ring, and "blocked on you",
 * which asks for our window update at once. */
static void rx_blocked_cdc(struct world *w, struct wflow *f, const char *b, uint32_t n)
{
	uint8_t msg[LINK_MSG_LEN];
	struct cdc_msg m;

	world_peer_write(w, f, (const uint8_t *)b, n);
	m = (struct cdc_msg){ .token = f->c.token, .prod = f->peer_prod,
			      .prod_flags = CDC_PF_WRITE_BLOCKED };
	cdc_encode(&m, msg);
	link_rx(w->lnk, msg, sizeof(msg));
}

/*
 * The window update that the first of several received messages asks for
 * cannot be posted. Every conn stays as it was (nothing ended, nothing
 * freed, the group up), nothing more is posted, and the messages after it
 * are dropped; when the batch ends the group fails once, with that error.
 */
static void test_post_failure_mid_rx_deferred(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	uint8_t buf[3];

	w->fake.post_err = -EIO;
	rx_blocked_cdc(w, a, "abc", 3);
	/* The bytes go to the socket at the end of the batch, before its
	 * failures run (smc_net__flush()): the window update is posted
	 * there. */
	assert_false(lgr_failing(w->lgr));
	conn_rx_run(&w->net);
	assert_true(lgr_failing(w->lgr));
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(a->c.state, CONN_ACTIVE);
	assert_int_equal(b->c.state, CONN_ACTIVE);
	assert_int_equal(a->ended + b->ended, 0);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 0);
	app_read_exact(w, a, buf, 3);		/* delivered before the post */

	w->fake.post_err = 0;			/* a post now would be logged */
	rx_blocked_cdc(w, b, "xyz", 3);
	rx_blocked_cdc(w, a, "def", 3);
	assert_int_equal(b->c.rx_prod.count, 0);
	assert_int_equal(a->c.rx_prod.count, 3);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->stats.cdc_received, 1);
	assert_int_equal(a->ended + b->ended, 0);
	assert_int_equal(w->lgr->rmbs.n_used, 2);

	w->lgr = NULL;				/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, -EIO);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(b->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(a->n_ended + b->n_ended, 2);
	assert_int_equal(a->closed + b->closed, 2);
	assert_int_equal(w->net.rmb_budget.used, 0);
	assert_int_equal(w->fake.n_msgs, 0);
}

/* A failure raised twice in a batch (and a bad message after it) is
 * reported once, with the first error; a synchronous lgr_fail() at a safe
 * point runs it at once, also with the first error, and nothing is left
 * for the end of the batch. */
static void test_failure_raised_twice_reported_once(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t msg[LINK_MSG_LEN] = { 0xff };

	lgr_fail_sched(w->lgr, -ECONNRESET);
	lgr_fail_sched(w->lgr, -EPROTO);
	link_rx(w->lnk, msg, sizeof(msg));
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(f->ended, 0);
	lgr_fail(w->lgr, -ESHUTDOWN);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, -ECONNRESET);
	assert_int_equal(f->n_ended, 1);
	assert_true(list_empty(&w->net.lgrs_sched));
	w->lgr = NULL;
	world_batch_end(w);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(f->closed, 1);
}

/*
 * The group fails while a flow is being opened on it: conn_open() returns
 * into a world where its flow is whole (its owner hears nothing yet, so it
 * can take the conn), a second open in the same batch is refused at once
 * (it goes on over TCP), and at the end of the batch the first goes on
 * over TCP as a declined flow does, once.
 */
static void test_open_on_failing_group(void **state)
{
	struct world *w = *state;
	struct sockaddr_storage dest = world_dest();
	struct wflow *f, g = { .app = -1 };
	int fd;

	w->fake.post_err = -EIO;
	f = world_open_only(w, 0, 0, 0);	/* conn_open() returned 0 */
	f->take_fd = true;
	assert_int_equal(f->ended, 0);
	assert_true(lgr_failing(w->lgr));
	assert_int_equal(w->lgr->n_conns, 1);

	fd = world_socket(&g.app, 0, 0);
	assert_int_equal(conn_open(&g.c, w->lgr, fd, (struct sockaddr *)&dest, NULL,
				   &world_conn_ops), -ENOLINK);
	assert_int_equal(g.ended, 0);
	assert_int_equal(w->lgr->n_conns, 1);
	close(fd);
	close(g.app);

	w->lgr = NULL;
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(f->n_ended, 1);
	assert_true(f->taken_fd >= 0);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delivery_across_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_once_per_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_update_threshold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_update_when_peer_blocked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_ring_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_cursor_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_cursor_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_count_beyond_ring_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_more_than_ring_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_consumer_beyond_produced_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_after_fin_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_done_writing_after_last_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_abort_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_closed_early_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_peer_ring_stops_reading, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_blocked_cleared_when_room_returns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_across_wrap_two_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_link_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_no_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dest_sockaddr_in, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_bad_ring_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_failure_fails_link_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_failure_not_announced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_rx_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_no_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_stopping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decline_stopping_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_token_zero_is_bad_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_group_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_timeout_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_unanswered_fails_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_deadline_after_connect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_connect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_policy_before_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_without_mirror_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_flood_fails_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_bound_per_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_failure_mid_rx_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_raised_twice_reported_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_on_failing_group, setup, teardown),
	};

	return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
