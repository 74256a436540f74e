/* SPDX-License-Identifier: MIT */
/*
 * Link failure inside a link group (man/smcproxy-protocol.7, RDMA TRANSPORT,
 * "Link failure and failover"): lgr_link_down()
 * (proxy/smc/lgr.c) and conn_move_link() (proxy/smc/conn.c) on the in-memory
 * transport of fake_transport.h, with two or three links, each with its
 * own send queue, and rings mirrored the way rdma mirrors them (a write
 * reaches the peer region only over a link, and a link that fails loses
 * what it carried). The test plays the transport (it says which link
 * failed) and the peer.
 *
 * Checked: the flows of a failed link move to the least loaded survivor
 * and nothing else moves; what the peer has not confirmed consuming is
 * carried again, followed by a CDC with the current cursors, so that the
 * peer's ring holds exactly the stream (across the wrap, and with a full
 * ring); autocorked, queued and ending flows (ABORT, CLOSED), opening
 * flows and queued declines go on over the survivor; a failure while
 * moving, and a group with no link left, reset the flows (opening ones
 * fall back to TCP); TEST_LINK on idle and busy links; and, as the peer of a
 * failover, repeated CDCs, CLOSEDs and ABORTs taken as no-ops.
 *
 * Regressions of three bugs this file found: the last message of a flow
 * released when it was posted (CLOSED, the FIN of a clean end) was lost
 * with its link (flows now stay until their last send completed); a
 * FLOW_OPEN lost with its link failed the whole group at the open's second
 * deadline (it is now sent again, marked resent); a flow whose FIN reached
 * the peer rewrote bytes into a ring the peer may have freed (replay now
 * starts after the last completed CDC).
 */
#include <errno.h>
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

#define RING	(16u * 1024)		/* our rings and the peer's */
#define REGION	(1u << 20)
#define CORK_MAX	(64u * 1024)

static int setup_links(void **state, unsigned links)
{
	struct world *w = world_new_links(RING, REGION, CORK_MAX, links);

	w->fake.mirror = true;		/* rdma-like: writes travel over a link */
	*state = w;
	return 0;
}

static int setup2(void **state)
{
	return setup_links(state, 2);
}

static int setup3(void **state)
{
	return setup_links(state, 3);
}

static int setup1(void **state)
{
	return setup_links(state, 1);
}

static int teardown(void **state)
{
	world_free(*state);
	return 0;
}

static struct link *L(struct world *w, unsigned i)
{
	return &w->lgr->links[i];
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

/* The application writes n bytes; the loop runs until the flow read them
 * into the peer's ring. */
static void app_send(struct world *w, struct wflow *f, const void *b, size_t n)
{
	uint64_t want = f->c.bytes_tx + n;

	assert_int_equal(write(f->app, b, n), (ssize_t)n);
	assert_true(world_run_until(w, f->c.bytes_tx == want));
}

/* Reads what the application socket has, up to n bytes, running the loop
 * while it waits; stops at EOF (*eof set), at n, or when nothing more
 * comes for a while. */
static size_t app_read(struct world *w, int fd, uint8_t *buf, size_t n, bool *eof)
{
	size_t got = 0;
	int idle = 0;

	*eof = false;
	while (got < n && idle < 100) {
		ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);

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

static void assert_app_reset(struct wflow *f)
{
	char c;

	assert_int_equal(recv(f->app, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, ECONNRESET);
}

/* Flow i opened and accepted; it must land on link idx. */
static struct wflow *open_on(struct world *w, unsigned i, unsigned idx)
{
	struct wflow *f = world_open(w, i, RING);

	assert_ptr_equal(f->c.link, L(w, idx));
	return f;
}

/* The peer's ring of flow f, in the peer region. */
static uint8_t *peer_ring(struct world *w, struct wflow *f)
{
	return w->fake.peer + f->c.tx_peer_off;
}

/*
 * What the peer reads from its ring of flow f between cursors from and to
 * (at most a ring), into out: the bytes an application over there gets.
 */
static uint32_t peer_read(struct world *w, struct wflow *f, struct smc_cursor from,
			  struct smc_cursor to, uint8_t *out)
{
	uint32_t size = f->c.tx_size, n = (uint32_t)cursor_diff(from, to, size);
	uint32_t first = size - from.count;
	uint8_t *ring = peer_ring(w, f);

	assert_true(n <= size);
	if (first > n)
		first = n;
	memcpy(out, ring + from.count, first);
	memcpy(out + first, ring, n - first);
	return n;
}

static void assert_cursor(struct smc_cursor c, uint32_t wrap, uint32_t count)
{
	assert_int_equal(c.wrap, wrap);
	assert_int_equal(c.count, count);
}

/* The peer sends a CDC through the link's receive path, as a transport
 * hands it over. */
static void peer_rx_cdc(struct world *w, struct link *lnk, struct wflow *f, uint32_t token,
			uint8_t conn_flags)
{
	struct cdc_msg m = {
		.token = token, .prod = f->peer_prod, .cons = f->peer_cons,
		.conn_flags = conn_flags,
	};
	uint8_t msg[LINK_MSG_LEN];

	cdc_encode(&m, msg);
	link_rx(lnk, msg, sizeof(msg));
	world_batch_end(w);
}

/* ------------------------------------------------------------------ */
/* Which flows move, and where. */

/*
 * Flows 0 and 2 on link 0, 1 and 3 on link 1; link 0 fails. Its flows are
 * on link 1 with one CDC each; those already there get nothing; the
 * counts per link follow; the event and counters say a failover; the dead
 * link is down and carries nothing more; the moved flows go on.
 */
static void test_moves_flows_to_survivor(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f[4];
	bool seen0 = false, seen2 = false;
	unsigned i;

	for (i = 0; i < 4; i++)
		f[i] = open_on(w, i, i % 2);
	assert_int_equal(L(w, 0)->n_conns, 2);
	assert_int_equal(f1->n_msgs, 0);

	lgr_link_down(L(w, 0), -ECONNRESET);
	world_batch_end(w);

	assert_int_equal(L(w, 0)->state, LINK_DOWN);
	assert_int_equal(L(w, 1)->state, LINK_ACTIVE);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	for (i = 0; i < 4; i++) {
		assert_ptr_equal(f[i]->c.link, L(w, 1));
		assert_int_equal(f[i]->c.state, CONN_ACTIVE);
		assert_int_equal(f[i]->ended, 0);
	}
	assert_int_equal(L(w, 0)->n_conns, 0);
	assert_int_equal(L(w, 1)->n_conns, 4);
	assert_int_equal(w->lgr->n_conns, 4);
	assert_true(list_empty(&L(w, 0)->tx_wait));
	assert_true(list_empty(&L(w, 0)->corked));
	assert_int_equal(w->stats.link_failovers, 1);
	assert_int_equal(w->stats.flows_moved, 2);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->stats.flows_reset_link, 0);
	assert_int_equal(w->lgr_events[LGR_EV_LINK_FAILOVER], 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 0);
	assert_int_equal(w->lgr_event_err, -ECONNRESET);

	/* One CDC for each moved flow, none for the others. */
	assert_int_equal(f1->moved_calls, 2);
	assert_int_equal(f1->n_msgs, 2);
	for (i = 0; i < f1->n_msgs; i++) {
		struct cdc_msg m = fake_cdc(f1, i);

		assert_true(m.token == PEER_TOKEN || m.token == PEER_TOKEN + 2);
		seen0 |= m.token == PEER_TOKEN;
		seen2 |= m.token == PEER_TOKEN + 2;
		assert_int_equal(m.conn_flags, 0);
	}
	assert_true(seen0 && seen2);
	assert_int_equal(w->fake.n_msgs, 0);

	/* A moved flow carries on over link 1, and link 0 sees nothing. */
	world_complete_link(w, 1);
	f1->n_msgs = 0;
	app_send(w, f[0], "hello", 5);
	assert_int_equal(f1->n_msgs, 1);
	assert_cursor(fake_cdc(f1, 0).prod, 0, 5);
	assert_int_equal(f1->n_writes, 1);
	assert_int_equal(w->fake.n_writes, 0);
	assert_memory_equal(peer_ring(w, f[0]), "hello", 5);
	assert_int_equal(w->fake.bad_calls, 0);
}

/*
 * Three links: the flows of the failed one go to the least loaded
 * survivor, not the first; when that one fails too, all go to the last.
 */
static void test_survivor_least_loaded(void **state)
{
	struct world *w = *state;
	struct wflow *f[5];
	unsigned i;

	for (i = 0; i < 5; i++)
		f[i] = open_on(w, i, i % 3);	/* 2, 2 and 1 flows */

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_ptr_equal(f[0]->c.link, L(w, 2));
	assert_ptr_equal(f[3]->c.link, L(w, 2));
	assert_ptr_equal(f[1]->c.link, L(w, 1));
	assert_int_equal(L(w, 1)->n_conns, 2);
	assert_int_equal(L(w, 2)->n_conns, 3);
	assert_int_equal(world_fake(w, 2)->n_msgs, 2);
	assert_int_equal(world_fake(w, 1)->n_msgs, 0);

	lgr_link_down(L(w, 2), -EIO);
	world_batch_end(w);
	for (i = 0; i < 5; i++) {
		assert_ptr_equal(f[i]->c.link, L(w, 1));
		assert_int_equal(f[i]->c.state, CONN_ACTIVE);
	}
	assert_int_equal(L(w, 1)->n_conns, 5);
	assert_int_equal(L(w, 2)->n_conns, 0);
	assert_int_equal(world_fake(w, 1)->n_msgs, 3);
	assert_int_equal(w->stats.link_failovers, 2);
	assert_int_equal(w->stats.flows_moved, 5);
	assert_int_equal(w->lgr_events[LGR_EV_LINK_FAILOVER], 2);
	assert_int_equal(w->stats.lgr_failures, 0);
}

/* ------------------------------------------------------------------ */
/* Replay. */

/*
 * 10000 bytes arrive (their CDC completes) and the peer confirms consuming
 * 6000; 9000 more are written (the ring wraps) and lost with link 0. On
 * link 1, exactly what the peer may not have, [10000, tx_prod) (after the
 * last completed CDC, as the kernel's SMC replays from tx_curs_fin), is
 * written again, as two ranges, then a CDC whose producer cursor is
 * tx_prod: what the peer reads from its consumer cursor to the announced
 * producer is the stream, no byte missing, none twice.
 */
static void test_replay_unconfirmed_across_wrap(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t *data = random_bytes(30000, 21), *got = malloc(RING);
	struct smc_cursor cons = { 0, 6000 };
	unsigned sent0;
	struct cdc_msg m;

	memset(peer_ring(w, f), 0xee, RING);
	app_send(w, f, data, 10000);
	assert_memory_equal(peer_ring(w, f), data, 10000);
	world_complete_link(w, 0);
	f->peer_cons = cons;
	world_peer_cdc(w, f, 0, 0);
	assert_true(cursor_equal(f->c.tx_cons, cons));

	w->fake.drop_writes = true;
	app_send(w, f, data + 10000, 9000);
	assert_cursor(f->c.tx_prod, 1, 2616);	/* 19000 = RING + 2616 */
	/* Lost: the peer still has the old bytes there. */
	assert_memory_not_equal(peer_ring(w, f) + 10000, data + 10000, RING - 10000);
	sent0 = w->fake.n_msgs;

	lgr_link_down(L(w, 0), -ETIMEDOUT);
	world_batch_end(w);

	assert_int_equal(f1->moved_calls, 1);
	assert_int_equal(f1->n_rewrites, 2);
	assert_int_equal(f1->rewrites[0].token, f->c.token);
	assert_int_equal(f1->rewrites[0].off, 10000);
	assert_int_equal(f1->rewrites[0].len, RING - 10000);
	assert_int_equal(f1->rewrites[1].off, 0);
	assert_int_equal(f1->rewrites[1].len, 2616);
	assert_int_equal(f1->rewritten, 9000);
	/* Then the CDC, on the new link. */
	assert_int_equal(f1->rewrites[1].after_msgs, 0);
	assert_int_equal(f1->n_msgs, 1);
	m = fake_cdc(f1, 0);
	assert_int_equal(m.token, PEER_TOKEN);
	assert_true(cursor_equal(m.prod, f->c.tx_prod));
	assert_true(cursor_equal(m.cons, f->c.rx_cons));
	assert_int_equal(m.conn_flags, 0);
	/* The peer's view. */
	assert_int_equal(peer_read(w, f, cons, m.prod, got), 13000);
	assert_memory_equal(got, data + 6000, 13000);
	/* Nothing more went to the dead link. */
	assert_int_equal(w->fake.n_msgs, sent0);

	/* And the stream goes on over link 1. */
	world_complete_link(w, 1);
	f->peer_cons = m.prod;
	world_peer_cdc(w, f, 0, 0);
	app_send(w, f, data + 19000, 1000);
	m = fake_cdc(f1, f1->n_msgs - 1);
	assert_cursor(m.prod, 1, 3616);
	assert_int_equal(peer_read(w, f, f->peer_cons, m.prod, got), 1000);
	assert_memory_equal(got, data + 19000, 1000);
	free(data);
	free(got);
}

/*
 * The peer's ring is full (nothing consumed since 1000): the whole ring
 * is carried again, from 1000 around to 1000, and the CDC says the flow is
 * blocked; once the peer consumes, the rest follows over link 1.
 */
static void test_replay_full_ring(void **state)
{
	const size_t total = 1000 + RING + 500;
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t *data = random_bytes(total, 22), *got = malloc(RING);
	struct cdc_msg m;

	app_send(w, f, data, 1000);
	world_complete_link(w, 0);
	f->peer_cons = (struct smc_cursor){ 0, 1000 };
	world_peer_cdc(w, f, 0, 0);

	w->fake.drop_writes = true;
	assert_int_equal(write(f->app, data + 1000, RING + 500), (ssize_t)(RING + 500));
	assert_true(world_run_until(w, f->c.bytes_tx == 1000 + RING));
	world_settle(w);
	assert_true(f->c.write_blocked);
	assert_cursor(f->c.tx_prod, 1, 1000);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_rewrites, 2);
	assert_int_equal(f1->rewrites[0].off, 1000);
	assert_int_equal(f1->rewrites[0].len, RING - 1000);
	assert_int_equal(f1->rewrites[1].off, 0);
	assert_int_equal(f1->rewrites[1].len, 1000);
	assert_int_equal(f1->n_msgs, 1);
	m = fake_cdc(f1, 0);
	assert_cursor(m.prod, 1, 1000);
	assert_true(m.prod_flags & CDC_PF_WRITE_BLOCKED);
	assert_int_equal(peer_read(w, f, f->peer_cons, m.prod, got), RING);
	assert_memory_equal(got, data + 1000, RING);

	world_complete_link(w, 1);
	f->peer_cons = m.prod;
	world_peer_cdc(w, f, 0, 0);
	assert_true(world_run_until(w, f->c.bytes_tx == total));
	world_settle(w);
	m = fake_cdc(f1, f1->n_msgs - 1);
	assert_cursor(m.prod, 1, 1500);
	assert_int_equal(peer_read(w, f, f->peer_cons, m.prod, got), 500);
	assert_memory_equal(got, data + 1000 + RING, 500);
	assert_int_equal(w->fake.bad_calls, 0);
	free(data);
	free(got);
}

/* Everything consumed: nothing to carry again, but the CDC still goes
 * (it may be what the dead link lost). */
static void test_replay_nothing_unconfirmed(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	app_send(w, f, "0123456789", 10);
	f->peer_cons = (struct smc_cursor){ 0, 10 };
	world_peer_cdc(w, f, 0, 0);
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->moved_calls, 1);
	assert_int_equal(f1->n_rewrites, 0);
	assert_int_equal(f1->n_msgs, 1);
	assert_cursor(fake_cdc(f1, 0).prod, 0, 10);
}

/* ------------------------------------------------------------------ */
/* Work that waited on the dead link. */

/*
 * The first write left at once, the second is held by autocork until
 * link 0's sends complete, which they never will: on link 1 the held
 * bytes are announced at once, without a completion there. Autocork then
 * goes on with link 1's own sequence numbers.
 */
static void test_corked_flow_pushed(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	app_send(w, f, "a", 1);
	assert_int_equal(w->fake.n_msgs, 1);
	app_send(w, f, "bb", 2);
	world_settle(w);
	assert_true(f->c.corked);
	assert_int_equal(w->fake.n_msgs, 1);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_false(f->c.corked);
	assert_true(list_empty(&L(w, 0)->corked));
	assert_true(list_empty(&L(w, 1)->corked));
	assert_int_equal(f1->done, 0);
	assert_int_equal(f1->n_msgs, 1);
	assert_cursor(fake_cdc(f1, 0).prod, 0, 3);

	app_send(w, f, "ccc", 3);
	world_settle(w);
	assert_true(f->c.corked);
	assert_int_equal(f1->n_msgs, 1);
	world_complete_link(w, 1);
	assert_int_equal(f1->n_msgs, 2);
	assert_cursor(fake_cdc(f1, 1).prod, 0, 6);
	assert_memory_equal(peer_ring(w, f), "abbccc", 6);
}

/* A CDC that found link 0's queue full waits on its tx_wait: it goes on
 * link 1, and link 0 keeps nothing. */
static void test_queued_cdc_moves(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	w->fake.room = 0;
	app_send(w, f, "xyz", 3);
	assert_false(list_empty(&L(w, 0)->tx_wait));
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_true(list_empty(&L(w, 0)->tx_wait));
	assert_int_equal(f1->n_msgs, 1);
	assert_cursor(fake_cdc(f1, 0).prod, 0, 3);
	assert_memory_equal(peer_ring(w, f), "xyz", 3);
	assert_int_equal(w->fake.n_msgs, 0);
}

/* The survivor's queue is full: the moved flow's CDC waits there, and
 * goes when room comes. */
static void test_survivor_queue_full(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	app_send(w, f, "xyz", 3);
	f1->room = 0;
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 0);
	assert_false(list_empty(&L(w, 1)->tx_wait));
	assert_true(f1->progress_asks >= 1);
	f1->room = 8;
	link_tx_progress(L(w, 1));
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_cdc(f1, 0).token, PEER_TOKEN);
	assert_cursor(fake_cdc(f1, 0).prod, 0, 3);
	assert_true(list_empty(&L(w, 1)->tx_wait));
}

/* ------------------------------------------------------------------ */
/* Flows that are ending. */

/* An ABORT posted on link 0 may be lost with it: it goes again on link 1,
 * and the peer's CLOSED there releases the flow. */
static void test_abort_reposted(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	conn_abort(&f->c);
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_ABORTED + 1);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(world_cdc(w, 0).conn_flags & CDC_CF_ABORT);
	assert_int_equal(f->closed, 0);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_cdc(f1, 0).token, PEER_TOKEN);
	assert_true(fake_cdc(f1, 0).conn_flags & CDC_CF_ABORT);
	assert_int_equal(f->n_ended, 1);

	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	/* Released once the ABORT sent again has completed too. */
	assert_int_equal(f->closed, 0);
	world_complete_link(w, 1);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
	assert_int_equal(L(w, 1)->n_conns, 0);
	assert_int_equal(w->stats.bad_messages, 0);
}

/*
 * Once our ABORT reached the peer, its ring is no longer ours: the peer
 * frees it as soon as it answered CLOSED, and may give it to a new flow.
 * A flow that was reset must not write anything into it again after a
 * failover (its bytes have no reader anyway).
 *
 * (Regression: conn_move_link() called the transport's conn_moved() for
 * every flow with a ring, so a reset flow whose peer had not confirmed
 * consuming everything wrote [tx_cons, tx_prod) again into a ring the
 * peer may have reused: another flow's data overwritten.)
 */
static void test_no_rewrite_after_abort(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t reused[RING];

	app_send(w, f, "unconsumed", 10);
	conn_abort(&f->c);
	world_batch_end(w);
	world_complete_link(w, 0);		/* the ABORT arrived */
	memset(reused, 0x55, sizeof(reused));
	memcpy(peer_ring(w, f), reused, RING);	/* the peer's new flow */

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_rewrites, 0);
	assert_memory_equal(peer_ring(w, f), reused, RING);
	assert_true(fake_cdc(f1, 0).conn_flags & CDC_CF_ABORT);
	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	world_complete_link(w, 1);
	assert_int_equal(f->closed, 1);
}

/* A CLOSED (our answer to the peer's ABORT) that waited for room on
 * link 0 goes on link 1, and then the flow is released. */
static void test_queued_closed_moves(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	w->fake.room = 0;
	world_peer_cdc(w, f, 0, CDC_CF_ABORT);
	assert_int_equal(f->ended, CONN_END_RESET + 1);
	assert_int_equal(f->closed, 0);
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_cdc(f1, 0).conn_flags, CDC_CF_CLOSED);
	assert_int_equal(f1->n_rewrites, 0);
	assert_int_equal(f->closed, 0);		/* until the CLOSED completed */
	world_complete_link(w, 1);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
	assert_int_equal(w->fake.n_msgs, 0);
}

/*
 * Our CLOSED (the answer to the peer's ABORT) was posted on link 0 and
 * has not completed when link 0 fails: it may not have arrived, and the
 * peer keeps its ring until it does. It must go again on link 1.
 *
 * conn_move_link() re-arms a CLOSED that was posted (end_sent), but the
 * flow is never there to move: conn_tx_posted() -> conn_maybe_release()
 * releases it as soon as the CLOSED is posted (peer_closed is set), so
 * lgr_link_down() finds nothing, and the peer's side of the flow (and
 * its ring) waits for good.
 */
static void test_posted_closed_reposted(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	world_peer_cdc(w, f, 0, CDC_CF_ABORT);
	assert_int_equal(world_cdc(w, 0).conn_flags, CDC_CF_CLOSED);
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_cdc(f1, 0).token, PEER_TOKEN);
	assert_int_equal(fake_cdc(f1, 0).conn_flags, CDC_CF_CLOSED);
}

/*
 * The same for a flow that ended cleanly: its last CDC (the last bytes
 * and DONE_WRITING) was posted, link 0 failed before it completed, and
 * the bytes were lost with it. The peer must still get them and the FIN,
 * on link 1. Today the flow was released when the CDC was posted (FIN
 * both ways), so nothing goes: the peer's application never sees the
 * last bytes nor the end of the stream.
 */
static void test_clean_end_last_cdc_reposted(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t buf[4];
	bool eof;
	struct cdc_msg m;

	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	assert_int_equal(app_read(w, f->app, buf, sizeof(buf), &eof), 0);
	assert_true(eof);
	w->fake.drop_writes = true;
	assert_int_equal(write(f->app, "bye", 3), 3);
	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->ended));
	world_batch_end(w);
	assert_int_equal(f->ended, CONN_END_CLEAN + 1);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	m = fake_cdc(f1, 0);
	assert_cursor(m.prod, 0, 3);
	assert_true(m.conn_flags & CDC_CF_DONE_WRITING);
	assert_memory_equal(peer_ring(w, f), "bye", 3);
}

/*
 * Our FIN (and every byte before it: sends complete in order) reached
 * the peer, which finished its side too and released the flow, ring and
 * all; its own FIN to us was lost with link 0, so our flow is still
 * ACTIVE. After the failover, conn_moved() carries [tx_cons, tx_prod)
 * again, tx_cons being the last consumer cursor the peer announced (it
 * announces none once it passed our FIN to its application): bytes land
 * in a ring that may belong to another flow by now.
 *
 * What may be missing at the peer is only what was posted after the last
 * send that completed (the kernel's SMC replays from tx_curs_fin, the
 * cursor of the last completed CDC); a transport cannot know that once
 * its link is gone, so conn.c would have to keep that cursor and say it.
 */
static void test_no_rewrite_after_fin_arrived(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t reused[RING];

	app_send(w, f, "the end", 7);
	shutdown(f->app, SHUT_WR);
	assert_true(world_run_until(w, f->c.fin_sent));
	world_complete_link(w, 0);
	memset(reused, 0x55, sizeof(reused));
	memcpy(peer_ring(w, f), reused, RING);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_rewrites, 0);
	assert_memory_equal(peer_ring(w, f), reused, RING);
}

/* ------------------------------------------------------------------ */
/* Opening flows. */

/* A FLOW_OPEN that found link 0's queue full goes on link 1; the flow
 * then opens there. */
static void test_unposted_open_goes_on_survivor(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f;
	struct llc_msg m;

	w->fake.room = 0;
	f = world_open_only(w, 0, 0, 0);
	world_batch_end(w);
	assert_ptr_equal(f->c.link, L(w, 0));
	assert_true(f->c.tx_work & CONN_TX_OPEN);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_ptr_equal(f->c.link, L(w, 1));
	assert_int_equal(L(w, 1)->n_conns, 1);
	assert_int_equal(f1->n_msgs, 1);
	m = fake_llc(f1, 0);
	assert_int_equal(m.type, LLC_FLOW_OPEN);
	assert_int_equal(m.open.token, f->c.token);
	assert_int_equal(m.open.rmb.offset, f->c.rmb->offset);
	assert_int_equal(m.open.port, 80);
	assert_int_equal(f->c.tx_work, 0);
	assert_int_equal(f->c.state, CONN_OPENING);

	f1->n_msgs = 0;
	world_accept(w, 0, RING);
	app_send(w, f, "up", 2);
	assert_int_equal(f1->n_msgs, 1);
	assert_memory_equal(peer_ring(w, f), "up", 2);
}

/*
 * A FLOW_OPEN that was posted on link 0 may be lost with it: it goes again
 * on link 1, marked resent (the acceptor answers again if it had it, opens
 * the flow if not), with the flow's deadline unchanged. One gets its
 * accept on link 1 and opens; the other's deadline sends it to TCP, the
 * group staying up.
 */
static void test_posted_open_resent(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *a, *b;
	uint64_t deadline;
	struct llc_msg m;

	a = world_open_only(w, 0, 0, 0);
	b = world_open_only(w, 1, 0, 0);
	world_batch_end(w);
	assert_ptr_equal(a->c.link, L(w, 0));
	assert_ptr_equal(b->c.link, L(w, 1));
	assert_int_equal(f1->n_msgs, 1);	/* b's FLOW_OPEN */
	m = fake_llc(f1, 0);
	assert_int_equal(m.open.flags, 0);
	f1->n_msgs = 0;
	deadline = a->c.deadline_ms;

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_ptr_equal(a->c.link, L(w, 1));
	assert_int_equal(f1->n_msgs, 1);
	m = fake_llc(f1, 0);
	assert_int_equal(m.type, LLC_FLOW_OPEN);
	assert_int_equal(m.open.token, a->c.token);
	assert_int_equal(m.open.flags, LLC_OPEN_RESENT);
	assert_int_equal(m.open.rmb.offset, a->c.rmb->offset);
	assert_int_equal(a->c.state, CONN_OPENING);
	assert_int_equal(a->c.deadline_ms, deadline);
	assert_false(list_empty(&a->c.wait_node));	/* on lgr->connecting */
	assert_int_equal(w->stats.flows_moved, 1);

	/* The accept comes over link 1 (a second one would be ignored). */
	world_accept(w, 0, RING);
	world_accept(w, 0, RING);
	app_send(w, a, "late", 4);
	assert_int_equal(f1->n_msgs, 2);
	assert_memory_equal(peer_ring(w, a), "late", 4);

	/* b's answer never comes: TCP, and the group stays. */
	b->take_fd = true;
	list_del(&b->c.wait_node);
	conn_on_deadline(&b->c);
	assert_int_equal(b->ended, CONN_END_DECLINED + 1);
	assert_true(b->taken_fd >= 0);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
}

/*
 * An opener that gave up (deadline: it went over TCP) while its FLOW_OPEN
 * was out keeps its ring for the late answer, and owes the peer an ABORT
 * once the accept names the peer's token. After a failover it sends its
 * open again (the peer may never have had it: without an answer its
 * second deadline would fail the group) but no CDC (no token to address);
 * the accept on link 1 then gets the ABORT, and the peer's CLOSED frees
 * the ring once the ABORT completed.
 *
 * (Regression: conn_move_link() posted a CDC for every flow with
 * abort_pending, this one too: an ABORT to token 0, which the peer drops,
 * and abort_pending was spent. The late accept then got a CDC without
 * ABORT: the peer's flow (its connection to the destination) stayed up
 * and never answered CLOSED, and our ring was never freed.)
 */
static void test_abandoned_open_aborts_after_move(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = world_open_only(w, 0, 0, 0);
	struct llc_flow_accept a = { .peer_token = PEER_TOKEN, .rmb = { .size = RING } };

	world_batch_end(w);
	list_del(&f->c.wait_node);		/* as lgr_sweep() does */
	conn_on_deadline(&f->c);
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);
	assert_int_equal(f->c.state, CONN_CLOSED);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_llc(f1, 0).type, LLC_FLOW_OPEN);
	assert_int_equal(fake_llc(f1, 0).open.flags, LLC_OPEN_RESENT);

	a.token = f->c.token;
	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 2);
	assert_int_equal(fake_cdc(f1, 1).token, PEER_TOKEN);
	assert_true(fake_cdc(f1, 1).conn_flags & CDC_CF_ABORT);
	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	world_complete_link(w, 1);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
}

/*
 * An open posted on link 0 and lost with it: the peer never heard of the
 * flow. Sent again on link 1, it is answered there, and a failover does
 * not turn into a group reset seconds later (which the opener's second
 * deadline, taking the silence for a wedged peer, would do): the flows of
 * link 1 survive.
 */
static void test_lost_open_keeps_group(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *lost = world_open_only(w, 0, 0, 0), *other;

	world_batch_end(w);
	other = open_on(w, 1, 1);
	f1->n_msgs = 0;
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_llc(f1, 0).open.flags, LLC_OPEN_RESENT);

	list_del(&lost->c.wait_node);
	conn_on_deadline(&lost->c);		/* over TCP, meanwhile */
	{
		/* The resent open's answer. */
		struct llc_flow_accept a = {
			.token = lost->c.token, .peer_token = PEER_TOKEN,
			.rmb = { .size = RING },
		};

		conn_on_accept(&lost->c, &a);
	}
	world_batch_end(w);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(other->c.state, CONN_ACTIVE);
	assert_int_equal(other->ended, 0);
	/* The late accept is aborted, as before the failover. */
	assert_true(fake_cdc(f1, f1->n_msgs - 1).conn_flags & CDC_CF_ABORT);
}

/* ------------------------------------------------------------------ */
/* Declines. */

/*
 * Two declines waited for room on link 0: they go on link 1, in order,
 * each counted once in declines_sent.
 *
 * (Regression: lgr_link_down() re-posted them through link_post_decline(),
 * which counts every decline it is given: each moved decline was counted
 * twice.)
 */
static void test_declines_move(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct llc_msg m;

	w->fake.room = 0;
	link_post_decline(L(w, 0), 0x00010001, CLC_DECL_MAX_FLOWS);
	link_post_decline(L(w, 0), 0x00020002, CLC_DECL_POLICY);
	assert_int_equal(L(w, 0)->n_decline_q, 2);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(L(w, 0)->n_decline_q, 0);
	assert_int_equal(f1->n_msgs, 2);
	m = fake_llc(f1, 0);
	assert_int_equal(m.type, LLC_FLOW_DECLINE);
	assert_int_equal(m.decline.token, 0x00010001);
	assert_int_equal(m.decline.reason, CLC_DECL_MAX_FLOWS);
	m = fake_llc(f1, 1);
	assert_int_equal(m.type, LLC_FLOW_DECLINE);
	assert_int_equal(m.decline.token, 0x00020002);
	assert_int_equal(m.decline.reason, CLC_DECL_POLICY);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->stats.declines_sent[CLC_DECL_MAX_FLOWS], 1);
	assert_int_equal(w->stats.declines_sent[CLC_DECL_POLICY], 1);
}

/* The survivor's queue is full too: they wait there, then go. */
static void test_declines_wait_on_survivor(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);

	w->fake.room = 0;
	f1->room = 0;
	link_post_decline(L(w, 0), 0x00010001, CLC_DECL_MAX_FLOWS);
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 0);
	assert_int_equal(L(w, 1)->n_decline_q, 1);
	f1->room = 4;
	link_tx_progress(L(w, 1));
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_llc(f1, 0).decline.token, 0x00010001);
	assert_int_equal(L(w, 1)->n_decline_q, 0);
}

/*
 * The survivor's post fails while the declines move: the group fails (as
 * any failed post does), and the rest of the move stops there.
 *
 * (Regression: the loop went on posting declines on a group that
 * lgr_fail() had released: link_post_decline() called lgr->ops->tx_room()
 * with lgr->ops NULL, a crash.)
 */
static void test_declines_move_survivor_fails(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	w->fake.room = 0;
	link_post_decline(L(w, 0), 0x00010001, CLC_DECL_MAX_FLOWS);
	link_post_decline(L(w, 0), 0x00020002, CLC_DECL_POLICY);
	f1->post_err = -EIO;
	lgr_link_down(L(w, 0), -ETIMEDOUT);
	world_batch_end(w);		/* the failure it scheduled runs */
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(f->ended, CONN_END_LINK_DOWN + 1);
	w->lgr = NULL;			/* freed at the end of the batch */
	world_batch_end(w);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/* ------------------------------------------------------------------ */
/* Failures while moving, and no link left. */

/* The survivor refuses the moved flow's CDC: the group fails, every flow
 * is reset, nothing leaks. */
static void test_survivor_post_failure_fails_group(void **state)
{
	struct world *w = *state;
	struct wflow *a = open_on(w, 0, 0), *b = open_on(w, 1, 1);

	world_fake(w, 1)->post_err = -EIO;
	lgr_link_down(L(w, 0), -ETIMEDOUT);
	world_batch_end(w);		/* the failure it scheduled runs */
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(b->ended, CONN_END_LINK_DOWN + 1);
	w->lgr = NULL;
	world_batch_end(w);
	assert_app_reset(a);
	assert_app_reset(b);
	assert_int_equal(a->closed, 1);
	assert_int_equal(b->closed, 1);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/*
 * Link 1 fails (its flow moves to link 0), then link 0: no link is left,
 * and the group fails at once (not after a timer): the active flows are
 * reset (their applications see ECONNRESET), the opening one goes over TCP
 * as a declined one would (its owner takes the socket, which still
 * works), and only the active ones count as reset by the link.
 */
static void test_last_link_fails_group(void **state)
{
	struct world *w = *state;
	struct wflow *a = open_on(w, 0, 0), *b = open_on(w, 1, 1), *o;
	char buf[4];
	bool eof;

	o = world_open_only(w, 2, 0, 0);
	o->take_fd = true;
	world_batch_end(w);

	lgr_link_down(L(w, 1), -EIO);
	world_batch_end(w);
	assert_ptr_equal(b->c.link, L(w, 0));
	assert_int_equal(w->stats.link_failovers, 1);

	lgr_link_down(L(w, 0), -ETIMEDOUT);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(a->end_err, -ECONNRESET);
	assert_int_equal(b->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(o->ended, CONN_END_DECLINED + 1);
	assert_int_equal(w->stats.flows_reset_link, 2);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->stats.link_failovers, 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, -ETIMEDOUT);
	w->lgr = NULL;
	world_batch_end(w);

	assert_app_reset(a);
	assert_app_reset(b);
	assert_true(o->taken_fd >= 0);
	assert_int_equal(write(o->taken_fd, "tcp", 3), 3);
	assert_int_equal(app_read(w, o->app, (uint8_t *)buf, 3, &eof), 3);
	assert_memory_equal(buf, "tcp", 3);
	assert_int_equal(a->closed + b->closed + o->closed, 3);
	assert_int_equal(w->net.rmb_budget.used, 0);
}

/* A group of one link has no survivor: its flows are reset, and no
 * failover is counted. */
static void test_single_link_fails_group(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);

	lgr_link_down(w->lnk, -EIO);
	assert_int_equal(f->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(w->stats.link_failovers, 0);
	assert_int_equal(w->stats.flows_moved, 0);
	assert_int_equal(w->stats.flows_reset_link, 1);
	assert_int_equal(w->lgr_events[LGR_EV_LINK_FAILOVER], 0);
	w->lgr = NULL;
	world_batch_end(w);
	assert_app_reset(f);
	assert_int_equal(f->closed, 1);
}

/* ------------------------------------------------------------------ */
/* No-ops, and groups that are not up. */

/* Failing a link that is down already changes nothing. */
static void test_link_down_twice(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	struct proxy_stats before;

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	before = w->stats;
	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	assert_memory_equal(&w->stats, &before, sizeof(before));
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(f1->moved_calls, 1);
	assert_int_equal(w->lgr_events[LGR_EV_LINK_FAILOVER], 1);
	assert_ptr_equal(f->c.link, L(w, 1));
	assert_int_equal(L(w, 1)->n_conns, 1);
	assert_int_equal(L(w, 0)->n_conns, 0);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
}

/* A link of a group that already failed (the batch has not ended yet):
 * nothing. */
static void test_link_down_group_down(void **state)
{
	struct world *w = *state;
	struct wflow *f = open_on(w, 0, 0);

	lgr_fail(w->lgr, -ECONNRESET);
	lgr_link_down(L(w, 1), -EIO);
	assert_int_equal(w->stats.link_failovers, 0);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(f->n_ended, 1);
	w->lgr = NULL;
	world_batch_end(w);
	assert_int_equal(f->closed, 1);
}

/*
 * A link lost while the group is still in its rendezvous (not ACTIVE):
 * the group fails as a handshake would. A client group becomes a negative
 * entry (new flows to the peer go over TCP); no failover is counted, and
 * another link's loss after it is a no-op.
 */
static void test_link_down_group_not_active(void **state)
{
	struct world *w = *state;
	struct lgr *lgr = w->lgr;

	lgr->state = LGR_RENDEZVOUS;
	lgr_link_down(L(w, 0), -EIO);
	assert_int_equal(L(w, 0)->state, LINK_DOWN);
	assert_int_equal(lgr->state, LGR_NEGATIVE);
	assert_int_equal(lgr->neg_reason, FB_DECL_INTERNAL);
	assert_int_equal(w->lgr_events[LGR_EV_NO_GROUP], 1);
	assert_int_equal(w->stats.link_failovers, 0);

	lgr_link_down(L(w, 1), -EIO);
	assert_int_equal(L(w, 1)->state, LINK_ACTIVE);
	assert_int_equal(w->lgr_events[LGR_EV_NO_GROUP], 1);

	/* The negative entry is the proxy's to drop; here the test's. */
	list_del(&lgr->node);
	w->net.n_lgrs--;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	lgr__free(lgr);
	w->lgr = NULL;
}

/* The same with a timeout: the negative entry says so. */
static void test_link_down_rendezvous_timeout(void **state)
{
	struct world *w = *state;
	struct lgr *lgr = w->lgr;

	lgr->state = LGR_RENDEZVOUS;
	lgr_link_down(L(w, 1), -ETIMEDOUT);
	assert_int_equal(lgr->state, LGR_NEGATIVE);
	assert_int_equal(lgr->neg_reason, FB_DECL_TIMEOUT);
	list_del(&lgr->node);
	w->net.n_lgrs--;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]--;
	lgr__free(lgr);
	w->lgr = NULL;
}

/* ------------------------------------------------------------------ */
/* TEST_LINK. */

/* An idle link: exactly one TEST_LINK with the cookie, rung at the end of
 * the batch; nothing on the other link. */
static void test_post_test_idle(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct llc_msg m;
	uint8_t raw[LINK_MSG_LEN];

	link_post_test(L(w, 1), 0xdeadbeef);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(f1->room, 63);
	assert_int_equal(L(w, 1)->tx_seq, 1);
	m = fake_llc(f1, 0);
	assert_int_equal(m.type, LLC_TEST_LINK);
	assert_int_equal(m.test.cookie, 0xdeadbeef);
	/* Decoded by the codec: so the peer's decoder takes it. */
	memcpy(raw, f1->msgs[0].b, sizeof(raw));
	assert_int_equal(llc_decode(raw, sizeof(raw), &m), 0);
	world_batch_end(w);
	assert_int_equal(f1->flushes, 1);
	assert_int_equal(w->fake.n_msgs, 0);
	assert_int_equal(w->fake.flushes, 0);

	/* The peer's side answers it with the cookie (test_liveness.c). */
	link_rx(L(w, 0), raw, sizeof(raw));
	world_batch_end(w);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(world_llc(w, 0).type, LLC_TEST_LINK_RSP);
	assert_int_equal(world_llc(w, 0).test.cookie, 0xdeadbeef);
}

/*
 * A link without room in its queue gets none; one with room gets one even
 * while a flow's work or a decline waits for its turn (traffic proves
 * nothing of the peer daemon: test_liveness.c); a link that failed none.
 */
static void test_post_test_busy(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);

	w->fake.room = 0;
	link_post_test(L(w, 0), 1);
	assert_int_equal(w->fake.n_msgs, 0);

	app_send(w, f, "x", 1);
	assert_false(list_empty(&L(w, 0)->tx_wait));
	w->fake.room = 8;
	link_post_test(L(w, 0), 2);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(world_llc(w, 0).test.cookie, 2);
	link_tx_progress(L(w, 0));
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);		/* the CDC */

	f1->room = 0;
	link_post_decline(L(w, 1), 0x00010001, CLC_DECL_MAX_FLOWS);
	f1->room = 8;
	link_post_test(L(w, 1), 4);
	assert_int_equal(f1->n_msgs, 1);
	assert_int_equal(fake_llc(f1, 0).type, LLC_TEST_LINK);
	link_tx_progress(L(w, 1));
	world_batch_end(w);
	assert_int_equal(f1->n_msgs, 2);
	assert_int_equal(fake_llc(f1, 1).type, LLC_FLOW_DECLINE);

	lgr_link_down(L(w, 0), -EIO);
	world_batch_end(w);
	link_post_test(L(w, 0), 5);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_int_equal(w->fake.bad_calls, 0);
}

/* A TEST_LINK the transport refuses fails the group, as any post. */
static void test_post_test_failure(void **state)
{
	struct world *w = *state;

	world_fake(w, 1)->post_err = -EIO;
	link_post_test(L(w, 1), 1);
	world_batch_end(w);		/* the failure it scheduled runs */
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_event_err, -EIO);
	w->lgr = NULL;
	world_batch_end(w);
}

/* ------------------------------------------------------------------ */
/* A link failure found in a completion handler (lgr.h, "Failure"). */

/* The last CDC link f carried for the flow the peer calls token. */
static struct cdc_msg last_cdc_for(const struct fake *f, uint32_t token)
{
	unsigned i = f->n_msgs;

	while (i--) {
		if (f->msgs[i].b[0] == CDC_MSG_TYPE && fake_cdc(f, i).token == token)
			return fake_cdc(f, i);
	}
	fail_msg("no CDC for %08x", token);
	return fake_cdc(f, 0);
}

/*
 * lgr_link_down_sched(), as rdma calls it from a completion: until the
 * batch ends the flow stays where it is and the link is whole, a new flow
 * goes on the other link, and a second report changes nothing. At the end
 * of the batch the flow moves once, with the first error, and replays
 * from what had completed when the failure was found, though the
 * transport let go of the link since (rdma clears lnk->tp, and a link
 * without one says everything completed).
 */
static void test_link_down_sched_at_batch_end(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0), *h = open_on(w, 1, 1), *g;

	app_send(w, f, "0123456789", 10);
	assert_int_equal(w->fake.n_msgs, 1);		/* its CDC, not completed */
	lgr_link_down_sched(L(w, 0), -ETIMEDOUT);
	lgr_link_down_sched(L(w, 0), -EIO);
	w->fake.done = L(w, 0)->tx_seq;
	assert_int_equal(L(w, 0)->state, LINK_ACTIVE);
	assert_ptr_equal(f->c.link, L(w, 0));
	assert_true(link_failing(L(w, 0)));
	assert_false(link_failing(L(w, 1)));
	assert_int_equal(w->stats.link_failovers, 0);
	/* Least loaded is a tie: not the link that goes. */
	g = world_open_only(w, 2, 0, 0);
	assert_ptr_equal(g->c.link, L(w, 1));

	world_batch_end(w);
	assert_int_equal(L(w, 0)->state, LINK_DOWN);
	assert_ptr_equal(f->c.link, L(w, 1));
	assert_int_equal(f->ended, 0);
	assert_int_equal(h->ended, 0);
	assert_int_equal(w->stats.link_failovers, 1);
	assert_int_equal(w->lgr_events[LGR_EV_LINK_FAILOVER], 1);
	assert_int_equal(w->lgr_event_err, -ETIMEDOUT);
	assert_int_equal(f1->moved_calls, 1);
	assert_int_equal(f1->rewritten, 10);
	assert_cursor(last_cdc_for(f1, PEER_TOKEN).prod, 0, 10);
	world_batch_end(w);
	assert_int_equal(w->stats.link_failovers, 1);
}

/*
 * Bytes the application sends while the flow's link waits to go down are
 * read into the ring but not written over that link, nor announced there:
 * the move writes them on the survivor and announces them after.
 */
static void test_write_on_failing_link_waits_for_move(void **state)
{
	struct world *w = *state;
	struct fake *f1 = world_fake(w, 1);
	struct wflow *f = open_on(w, 0, 0);
	uint8_t *full = random_bytes(RING, 7);
	struct cdc_msg m = { .token = f->c.token, .cons = { 1, 0 } };
	unsigned writes, msgs;

	app_send(w, f, full, RING);			/* the peer's ring is full */
	assert_true(f->c.write_blocked);
	assert_int_equal(write(f->app, "abcdef", 6), 6);
	lgr_link_down_sched(L(w, 0), -EIO);
	writes = w->fake.n_writes;
	msgs = w->fake.n_msgs;
	conn_on_cdc(&f->c, &m);				/* the peer took it all */
	/* Read at the end of the batch, before the move (smc_net__flush()). */
	conn_rx_run(&w->net);
	assert_int_equal(f->c.bytes_tx, RING + 6);
	assert_int_equal(w->fake.n_writes, writes);
	assert_int_equal(w->fake.n_msgs, msgs);

	world_batch_end(w);
	assert_ptr_equal(f->c.link, L(w, 1));
	assert_int_equal(f1->rewritten, 6);
	assert_memory_equal(peer_ring(w, f), "abcdef", 6);
	assert_cursor(last_cdc_for(f1, PEER_TOKEN).prod, 1, 6);
	free(full);
}

/* ------------------------------------------------------------------ */
/* The peer of a failover: what it sends again. */

/*
 * The peer's last CDC (bytes and DONE_WRITING) comes again, as it is
 * re-posted after the peer's link failed: no byte delivered twice, no
 * error, no reset, no message in answer.
 */
static void test_repeated_cdc_is_noop(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	struct smc_cursor prod;
	uint8_t buf[16];
	unsigned posted;
	bool eof;

	world_peer_write(w, f, (const uint8_t *)"payload", 7);
	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	assert_int_equal(app_read(w, f->app, buf, sizeof(buf), &eof), 7);
	assert_true(eof);
	assert_memory_equal(buf, "payload", 7);
	prod = f->c.rx_prod;
	posted = w->fake.n_msgs;

	/* The peer's replay rewrote the same bytes, then the same CDC. */
	f->peer_prod = (struct smc_cursor){ 0, 0 };
	world_peer_write(w, f, (const uint8_t *)"payload", 7);
	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	world_peer_cdc(w, f, 0, CDC_CF_DONE_WRITING);
	world_settle(w);
	assert_true(cursor_equal(f->c.rx_prod, prod));
	assert_int_equal(f->c.bytes_rx, 7);
	assert_int_equal(w->fake.n_msgs, posted);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(f->ended, 0);
	assert_int_equal(app_read(w, f->app, buf, sizeof(buf), &eof), 0);
	assert_true(eof);

	/* Our direction still works. */
	app_send(w, f, "ok", 2);
	assert_memory_equal(peer_ring(w, f), "ok", 2);
}

/*
 * A CLOSED for a flow that already got one: through the link (a released
 * flow's token is stale) it is dropped quietly; on a flow still waiting
 * to post its ABORT it changes nothing. No reset, no error, one release.
 */
static void test_repeated_closed_is_noop(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	uint32_t token = a->c.token;

	conn_abort(&a->c);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 1);
	peer_rx_cdc(w, w->lnk, a, token, CDC_CF_CLOSED);
	assert_int_equal(a->closed, 1);
	peer_rx_cdc(w, w->lnk, a, token, CDC_CF_CLOSED);
	assert_int_equal(a->closed, 1);
	assert_int_equal(a->n_ended, 1);
	assert_int_equal(w->fake.n_msgs, 1);

	/* b: the CLOSED comes (twice) before our ABORT could be posted. */
	w->fake.room = 0;
	conn_abort(&b->c);
	world_batch_end(w);
	peer_rx_cdc(w, w->lnk, b, b->c.token, CDC_CF_CLOSED);
	peer_rx_cdc(w, w->lnk, b, b->c.token, CDC_CF_CLOSED);
	assert_int_equal(b->closed, 0);
	assert_int_equal(b->n_ended, 1);
	assert_int_equal(b->ended, CONN_END_ABORTED + 1);
	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_true(world_cdc(w, 1).conn_flags & CDC_CF_ABORT);
	assert_int_equal(b->closed, 1);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
}

/* An ABORT again, after we answered the first with CLOSED: dropped, no
 * second CLOSED; and while our CLOSED still waits for room, nothing
 * more either. */
static void test_repeated_abort_is_noop(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	uint32_t token = a->c.token;

	peer_rx_cdc(w, w->lnk, a, token, CDC_CF_ABORT);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(a->closed, 1);
	peer_rx_cdc(w, w->lnk, a, token, CDC_CF_ABORT);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_int_equal(a->n_ended, 1);

	w->fake.room = 0;
	peer_rx_cdc(w, w->lnk, b, b->c.token, CDC_CF_ABORT);
	peer_rx_cdc(w, w->lnk, b, b->c.token, CDC_CF_ABORT);
	assert_int_equal(b->n_ended, 1);
	assert_int_equal(b->closed, 0);
	w->fake.room = 8;
	link_tx_progress(w->lnk);
	world_batch_end(w);
	assert_int_equal(w->fake.n_msgs, 2);
	assert_int_equal(world_cdc(w, 1).conn_flags, CDC_CF_CLOSED);
	assert_int_equal(b->closed, 1);
	assert_int_equal(w->stats.bad_messages, 0);
}

#define T2(t)	cmocka_unit_test_setup_teardown(t, setup2, teardown)
#define T3(t)	cmocka_unit_test_setup_teardown(t, setup3, teardown)
#define T1(t)	cmocka_unit_test_setup_teardown(t, setup1, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T2(test_moves_flows_to_survivor),
		T3(test_survivor_least_loaded),
		T2(test_replay_unconfirmed_across_wrap),
		T2(test_replay_full_ring),
		T2(test_replay_nothing_unconfirmed),
		T2(test_corked_flow_pushed),
		T2(test_queued_cdc_moves),
		T2(test_survivor_queue_full),
		T2(test_abort_reposted),
		T2(test_no_rewrite_after_abort),
		T2(test_queued_closed_moves),
		T2(test_posted_closed_reposted),
		T2(test_clean_end_last_cdc_reposted),
		T2(test_no_rewrite_after_fin_arrived),
		T2(test_unposted_open_goes_on_survivor),
		T2(test_posted_open_resent),
		T2(test_abandoned_open_aborts_after_move),
		T2(test_lost_open_keeps_group),
		T2(test_declines_move),
		T2(test_declines_wait_on_survivor),
		T2(test_declines_move_survivor_fails),
		T2(test_survivor_post_failure_fails_group),
		T2(test_last_link_fails_group),
		T1(test_single_link_fails_group),
		T2(test_link_down_twice),
		T2(test_link_down_group_down),
		T2(test_link_down_group_not_active),
		T2(test_link_down_rendezvous_timeout),
		T2(test_post_test_idle),
		T2(test_post_test_busy),
		T2(test_post_test_failure),
		T2(test_link_down_sched_at_batch_end),
		T2(test_write_on_failing_link_waits_for_move),
		T1(test_repeated_cdc_is_noop),
		T1(test_repeated_closed_is_noop),
		T1(test_repeated_abort_is_noop),
	};

	return cmocka_run_group_tests_name("failover", tests, NULL, NULL);
}
