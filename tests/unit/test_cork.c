/* SPDX-License-Identifier: MIT */
/*
 * Autocork (proxy/smc/cork.h): the decision itself, then the behaviour through
 * the real conn and link code on an in-memory transport (fake_transport.h):
 * the first write leaves at once, writes while it is unacknowledged are
 * held, the completion pushes them in one CDC, max_bytes pushes early, the
 * FIN is never held, and a full send queue keeps work without losing it or
 * its order. The fake transport plugs in through transport-t.h alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "smc/cork.h"
#include "fake_transport.h"
#include "smc/net.h"
#include "relay/relay-t.h"

#define RING	(64u * 1024)
#define REGION	(1u << 20)
#define CORK_MAX	1000u		/* autocork.max_bytes of most tests */

/* ------------------------------------------------------------------ */
/* The decision. */

static void test_should_hold_disabled(void **state)
{
	struct cork_params cp = { .enabled = false, .max_bytes = CORK_MAX };

	assert_false(cork_should_hold(&cp, false, 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, true, 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, true, CORK_MAX - 1, UINT32_MAX));
}

/* Nothing unacknowledged (a flow's first write, or all sends completed):
 * never held, whatever the amount. */
static void test_should_hold_nothing_unacked(void **state)
{
	struct cork_params cp = { .enabled = true, .max_bytes = CORK_MAX };

	assert_false(cork_should_hold(&cp, false, 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, false, CORK_MAX - 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, false, CORK_MAX, UINT32_MAX));
}

static void test_should_hold_below_at_above_max(void **state)
{
	struct cork_params cp = { .enabled = true, .max_bytes = CORK_MAX };

	assert_true(cork_should_hold(&cp, true, 1, UINT32_MAX));
	assert_true(cork_should_hold(&cp, true, CORK_MAX - 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, true, CORK_MAX, UINT32_MAX));
	assert_false(cork_should_hold(&cp, true, CORK_MAX + 1, UINT32_MAX));
	assert_false(cork_should_hold(&cp, true, UINT32_MAX, UINT32_MAX));
	cp.max_bytes = 0;	/* holds nothing */
	assert_false(cork_should_hold(&cp, true, 1, UINT32_MAX));
}

/* Never more than half the peer's ring, whatever max_bytes says. */
static void test_should_hold_half_the_ring(void **state)
{
	struct cork_params cp = { .enabled = true, .max_bytes = CORK_MAX };

	assert_true(cork_should_hold(&cp, true, 511, 1024));
	assert_false(cork_should_hold(&cp, true, 512, 1024));
	assert_true(cork_should_hold(&cp, true, CORK_MAX - 1, 4 * CORK_MAX));
	assert_false(cork_should_hold(&cp, true, CORK_MAX, 4 * CORK_MAX));
	assert_false(cork_should_hold(&cp, true, 1, 1));
	assert_false(cork_should_hold(&cp, false, 1, 1024));
}

/* ------------------------------------------------------------------ */
/* Through conn and link. */

static int setup(void **state)
{
	*state = world_new(RING, REGION, CORK_MAX);
	return 0;
}

static int teardown(void **state)
{
	world_free(*state);
	return 0;
}

/* The application writes n bytes of b and the flow reads them all into
 * the peer's ring. */
static void app_write(struct world *w, struct wflow *f, const void *b, size_t n)
{
	uint64_t before = f->c.bytes_tx;

	assert_int_equal(write(f->app, b, n), (ssize_t)n);
	assert_true(world_run_until(w, f->c.bytes_tx == before + n));
}

static void assert_cdc(struct world *w, unsigned i, struct wflow *f, uint32_t prod_bytes,
		       uint8_t conn_flags)
{
	struct cdc_msg m = world_cdc(w, i);
	struct smc_cursor want = cursor_add((struct smc_cursor){ 0 }, prod_bytes, f->c.tx_size);

	assert_int_equal(m.token, PEER_TOKEN + (unsigned)(f - w->flows));
	assert_int_equal(m.prod.wrap, want.wrap);
	assert_int_equal(m.prod.count, want.count);
	assert_int_equal(m.conn_flags, conn_flags);
}

/* The first write is announced at once, even with autocork on. */
static void test_first_write_not_held(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_cdc(w, 0, f, 1, 0);
	assert_int_equal(w->stats.cork_events, 0);
	assert_false(f->c.corked);
	assert_memory_equal(w->fake.peer, "a", 1);
	assert_int_equal(w->fake.written, 1);
}

/* While that CDC is not completed, more writes are held: no new message,
 * one cork event however many writes, and no transport write either (over
 * rdma an RDMA WRITE each); the completion pushes one CDC with all of
 * them, after one write that covers them all. */
static void test_held_until_completion(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	app_write(w, f, "bb", 2);
	app_write(w, f, "ccc", 3);
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(w->stats.cork_events, 1);
	assert_true(f->c.corked);
	assert_true(w->fake.progress_asks >= 1);
	assert_memory_equal(w->fake.peer, "abbccc", 6);
	assert_int_equal(w->fake.n_writes, 1);
	assert_int_equal(w->fake.written, 1);

	world_complete(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 6, 0);
	assert_int_equal(w->fake.n_writes, 2);
	assert_int_equal(w->fake.writes[1].off, 1);
	assert_int_equal(w->fake.writes[1].len, 5);
	assert_int_equal(w->fake.written, 6);
	assert_false(f->c.corked);
	assert_int_equal(w->stats.cdc_sent, 2);
	assert_int_equal(w->stats.cork_events, 1);
	/* Two batches: the first write alone, then the five bytes held. */
	assert_int_equal(w->stats.tx_batches, 2);
	assert_int_equal(w->stats.tx_batch_bytes, 6);

	/* The pushed CDC is unacknowledged in turn: the next write waits
	 * for its completion. */
	app_write(w, f, "d", 1);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_int_equal(w->stats.cork_events, 2);
	world_complete(w);
	assert_int_equal(w->fake.n_msgs, 3);
	assert_cdc(w, 2, f, 7, 0);
}

/* A completion of an earlier send is not enough: only once the flow's
 * last CDC completed does the push happen. */
static void test_partial_completion_keeps_holding(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint32_t cdc_seq;

	app_write(w, f, "a", 1);
	cdc_seq = w->fake.msgs[0].seq;
	app_write(w, f, "b", 1);
	w->fake.done = cdc_seq;		/* everything before the CDC, not it */
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(f->c.corked);
	w->fake.done = cdc_seq + 1;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 2, 0);
}

/* A completion the transport did not report still pushes at the end of
 * the batch (link_flush looks again). */
static void test_completion_seen_at_batch_end(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	app_write(w, f, "b", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	w->fake.done = w->lnk->tx_seq;
	smc_net__kick_link(&w->net, w->lnk);	/* any batch in which the link posted */
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 2, 0);
}

/* max_bytes held: pushed at once, without a completion. Below it, held. */
static void test_max_bytes_pushes(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint8_t b[CORK_MAX];

	memset(b, 'x', sizeof(b));
	app_write(w, f, "a", 1);
	app_write(w, f, b, 600);
	app_write(w, f, b, CORK_MAX - 600 - 1);	/* CORK_MAX - 1 held */
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 1);
	app_write(w, f, b, 1);			/* CORK_MAX held */
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 1 + CORK_MAX, 0);

	/* Above max_bytes in one go: not held either. */
	app_write(w, f, b, CORK_MAX);
	assert_int_equal(w->fake.n_msgs, 3);
	assert_cdc(w, 2, f, 1 + 2 * CORK_MAX, 0);
	assert_int_equal(w->stats.cork_events, 1);
}

/* A max_bytes as large as the peer's ring: half the ring held at most,
 * so that the cork never fills the ring and stops the flow reading its
 * socket (the old rule held up to max_bytes here, the whole ring). */
static void test_small_peer_ring_half_held(void **state)
{
	struct world *w = *state;
	struct wflow *f;
	uint8_t *b = calloc(1, RING / 2);

	w->net.cork.max_bytes = RING;
	f = world_open(w, 0, RING);
	app_write(w, f, "a", 1);
	app_write(w, f, b, RING / 2 - 1);	/* half the ring but a byte held */
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(f->c.corked);
	app_write(w, f, b, 1);			/* half the ring */
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 1 + RING / 2, 0);
	assert_false(f->c.write_blocked);
	free(b);
}

/* With autocork off, every write is a CDC of its own. */
static void test_disabled_never_holds(void **state)
{
	struct world *w = *state;
	struct wflow *f;
	unsigned i;

	w->net.cork.enabled = false;
	f = world_open(w, 0, RING);
	for (i = 0; i < 5; i++) {
		app_write(w, f, "z", 1);
		assert_int_equal(w->fake.n_msgs, i + 1);
		assert_cdc(w, i, f, i + 1, 0);
	}
	assert_int_equal(w->stats.cork_events, 0);
	assert_false(f->c.corked);
}

/* ------------------------------------------------------------------ */
/* Reads deferred to the completion (a transport that completes locally). */

static void test_should_defer_read(void **state)
{
	struct cork_params cp = { .enabled = true, .max_bytes = CORK_MAX };

	assert_true(cork_should_defer_read(&cp, true, true, 0));
	assert_true(cork_should_defer_read(&cp, true, true, CORK_SMALL_READ - 1));
	assert_false(cork_should_defer_read(&cp, true, true, CORK_SMALL_READ));
	assert_false(cork_should_defer_read(&cp, true, false, 1));	/* nothing in flight */
	assert_false(cork_should_defer_read(&cp, false, true, 1));	/* rdma: a round trip */
	cp.enabled = false;
	assert_false(cork_should_defer_read(&cp, true, true, 1));
}

/* Writes while the first CDC is in flight stay in the socket; its
 * completion reads them in one read and pushes them in one CDC. */
static void test_read_deferred_to_completion(void **state)
{
	struct world *w = *state;
	struct wflow *f;
	uint64_t reads;

	w->lgr->ops = &fake_local_ops;
	f = world_open(w, 0, RING);
	app_write(w, f, "a", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	reads = w->stats.sock_reads;
	assert_int_equal(write(f->app, "bb", 2), 2);
	world_settle(w);
	assert_int_equal(write(f->app, "ccc", 3), 3);
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, 1);		/* still in the socket */
	assert_true(w->stats.reads_deferred >= 1);
	assert_int_equal(w->stats.sock_reads, reads);
	assert_true(f->c.corked);
	assert_int_equal(w->fake.n_msgs, 1);

	world_complete(w);
	assert_int_equal(f->c.bytes_tx, 6);
	assert_int_equal(w->stats.sock_reads, reads + 1);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 6, 0);
	assert_memory_equal(w->fake.peer, "abbccc", 6);
	assert_false(f->c.corked);
}

/* A flow whose last read was large is read at once, CDC in flight or not:
 * bulk goes to the ring as it comes. */
static void test_large_read_not_deferred(void **state)
{
	struct world *w = *state;
	static char big[CORK_SMALL_READ];
	struct wflow *f;

	w->lgr->ops = &fake_local_ops;
	f = world_open(w, 0, RING);
	memset(big, 'x', sizeof(big));
	app_write(w, f, big, sizeof(big));
	assert_int_equal(w->fake.n_msgs, 1);
	app_write(w, f, "y", 1);	/* read at once: app_write waits for it */
	assert_int_equal(w->stats.reads_deferred, 0);
}

/* FIN is read at once, deferred bytes before it with it, in one CDC. */
static void test_fin_ends_deferral(void **state)
{
	struct world *w = *state;
	struct wflow *f;

	w->lgr->ops = &fake_local_ops;
	f = world_open(w, 0, RING);
	app_write(w, f, "a", 1);
	assert_int_equal(write(f->app, "b", 1), 1);
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, 1);
	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->c.app_eof));
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, 2);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 2, CDC_CF_DONE_WRITING);
}

/* The FIN leaves at once, unacknowledged sends or not, and carries what
 * was held. */
static void test_fin_never_held(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	app_write(w, f, "b", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->c.app_eof));
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 2, CDC_CF_DONE_WRITING);
	assert_true(f->c.fin_sent);
}

/* Data and FIN read in one go while a CDC is unacknowledged: one CDC with
 * both. */
static void test_data_with_fin_not_held(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	assert_int_equal(write(f->app, "bcd", 3), 3);
	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->c.app_eof));
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 4, CDC_CF_DONE_WRITING);
	assert_int_equal(w->stats.cork_events, 0);
}

/*
 * A held write must not ring the peer's doorbell: nothing was posted,
 * and a doorbell per held write costs the peer a wakeup, which is most
 * of what autocork is there to save on shm.
 * (Regression: link_cork() used to set the doorbell flag to get the
 * end-of-batch second look.)
 */
static void test_held_write_rings_no_doorbell(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	unsigned flushes;

	app_write(w, f, "a", 1);
	world_settle(w);
	flushes = w->fake.flushes;
	assert_true(flushes >= 1);		/* the CDC was rung */
	app_write(w, f, "b", 1);
	app_write(w, f, "c", 1);
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(w->fake.flushes, flushes);
}

/* ------------------------------------------------------------------ */
/* A full send queue. */

/* Opens wait in the queue in arrival order, and go once there is room. */
static void test_full_queue_keeps_opens_in_order(void **state)
{
	struct world *w = *state;
	struct wflow *a, *b;
	struct llc_msg m;

	w->fake.room = 0;
	a = world_open_only(w, 0, 0, 0);
	b = world_open_only(w, 1, 0, 0);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->fake.bad_calls, 0);

	w->fake.room = 1;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 1);
	m = world_llc(w, 0);
	assert_int_equal(m.type, LLC_FLOW_OPEN);
	assert_int_equal(m.open.token, a->c.token);
	assert_true(w->fake.progress_asks >= 1);	/* b still waits: asked to be told */

	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	m = world_llc(w, 1);
	assert_int_equal(m.type, LLC_FLOW_OPEN);
	assert_int_equal(m.open.token, b->c.token);
	assert_int_equal(w->fake.msgs[0].seq + 1, w->fake.msgs[1].seq);
}

/*
 * With the queue full, a busy flow keeps one CDC's worth of work, not a
 * message per write: once there is room, one CDC carries every byte.
 * Flows are served in the order they found the queue full.
 */
static void test_full_queue_one_cdc_per_flow(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);

	w->fake.room = 0;
	app_write(w, b, "1", 1);
	app_write(w, a, "xy", 2);
	app_write(w, b, "23", 2);
	app_write(w, a, "z", 1);
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->stats.cork_events, 0);	/* first writes: waiting, not corked */

	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 0, b, 3, 0);
	assert_cdc(w, 1, a, 3, 0);
	assert_int_equal(w->stats.cdc_sent, 2);
}

/* The queue fills between a flow's two messages: the second waits and
 * follows once there is room, the order on the link kept. */
static void test_full_queue_mid_flow(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b;

	w->fake.room = 1;
	b = world_open_only(w, 1, 0, 0);		/* takes the last slot */
	app_write(w, a, "hello", 5);			/* first write: not held, but no room */
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(world_llc(w, 0).type, LLC_FLOW_OPEN);

	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, a, 5, 0);
	assert_int_equal(b->c.state, CONN_OPENING);
}

/*
 * Work that finds the queue full must ask the transport to report
 * progress: nothing else guarantees a link_tx_progress() on this link
 * (shm rings us back after consuming our messages only when we set its
 * "waiting" flag), so the flow would stall until the peer happens to
 * send us something.
 * (Regression: link_conn_work() and link_post_decline() used to queue
 * work without asking.)
 */
static void test_full_queue_asks_for_progress(void **state)
{
	struct world *w = *state;

	w->fake.room = 0;
	world_open_only(w, 0, 0, 0);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_true(w->fake.progress_asks >= 1);
}

static void test_full_queue_decline_asks_for_progress(void **state)
{
	struct world *w = *state;

	w->lgr->role = LGR_ROLE_SERVER;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	w->net.n_lgrs_role[LGR_ROLE_SERVER]++;
	w->fake.room = 0;
	link_post_decline(w->lnk, 0x4321, CLC_DECL_MAX_FLOWS);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_true(w->fake.progress_asks >= 1);
	/* And it does leave once there is room. */
	w->fake.room = 1;
	link_tx_progress(w->lnk);
	assert_int_equal(world_llc(w, 0).type, LLC_FLOW_DECLINE);
	assert_int_equal(world_llc(w, 0).decline.token, 0x4321);
}

/*
 * The acceptor's FLOW_ACCEPT and the CDC of the destination's first bytes
 * both wait for a full queue; they leave in protocol order, accept first,
 * and the CDC carries everything read meanwhile.
 */
static void test_full_queue_accept_before_cdc(void **state)
{
	struct world *w = *state;
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct llc_flow_open open = {
		.token = 0x1234,
		.rmb = { .offset = 0, .size = RING },
		.family = 4,
	};
	struct wflow *f = &w->flows[0];
	struct sockaddr_storage dest = { 0 };
	socklen_t len = sizeof(dst);
	struct llc_msg m;
	int l;

	w->lgr->role = LGR_ROLE_SERVER;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	w->net.n_lgrs_role[LGR_ROLE_SERVER]++;
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&dst, sizeof(dst)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&dst, &len), 0);

	w->fake.room = 0;
	memcpy(&dest, &dst, sizeof(dst));	/* what lgr.c hands conn_accept() */
	assert_int_equal(conn_accept(&f->c, w->lnk, &open, (struct sockaddr *)&dest,
				     &world_conn_ops), 0);
	assert_int_equal(f->c.state, CONN_CONNECTING);
	f->app = accept(l, NULL, NULL);	/* the destination's end */
	close(l);
	assert_true(f->app >= 0);
	assert_int_equal(write(f->app, "hi", 2), 2);
	assert_true(world_run_until(w, f->c.state == CONN_ACTIVE && f->c.bytes_tx == 2));
	assert_int_equal(write(f->app, "!", 1), 1);
	assert_true(world_run_until(w, f->c.bytes_tx == 3));
	world_settle(w);
	assert_int_equal(w->fake.n_msgs, 0);

	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	m = world_llc(w, 0);
	assert_int_equal(m.type, LLC_FLOW_ACCEPT);
	assert_int_equal(m.accept.token, 0x1234);
	assert_int_equal(m.accept.peer_token, f->c.token);
	assert_int_equal(world_cdc(w, 1).token, 0x1234);
	assert_int_equal(world_cdc(w, 1).prod.count, 3);
	assert_memory_equal(w->fake.peer, "hi!", 3);
	assert_int_equal(f->c.tx_work, 0);
}

/* A held flow whose completion comes while the queue is full is pushed
 * once there is room. */
static void test_corked_then_queue_full(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	app_write(w, f, "a", 1);
	app_write(w, f, "b", 1);
	assert_true(f->c.corked);
	w->fake.room = 0;
	world_complete(w);
	assert_int_equal(w->fake.n_msgs, 1);
	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_cdc(w, 1, f, 2, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_should_hold_disabled),
		cmocka_unit_test(test_should_hold_nothing_unacked),
		cmocka_unit_test(test_should_hold_below_at_above_max),
		cmocka_unit_test(test_should_hold_half_the_ring),
		cmocka_unit_test(test_should_defer_read),
		cmocka_unit_test_setup_teardown(test_read_deferred_to_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_read_not_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fin_ends_deferral, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_write_not_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_until_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_completion_keeps_holding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_completion_seen_at_batch_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes_pushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_peer_ring_half_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disabled_never_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fin_never_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_with_fin_not_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_write_rings_no_doorbell, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_keeps_opens_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_one_cdc_per_flow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_mid_flow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_asks_for_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_decline_asks_for_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_accept_before_cdc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corked_then_queue_full, setup, teardown),
	};

	return cmocka_run_group_tests_name("cork", tests, NULL, NULL);
}
