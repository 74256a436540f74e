/* SPDX-License-Identifier: MIT */
/*
 * Guards a fixed bug: a frozen peer (SIGSTOP) left flows hanging for
 * ever; nothing bounded how long a link may hear nothing from its peer
 * when it was busy, or on shm at all. Liveness (proxy/smc/liveness.c) on
 * the in-memory transport of fake_transport.h, two links: a link quiet
 * for a third of links.dead_after gets a TEST_LINK, busy or idle; a link
 * quiet for all of it goes down (failover, or the group fails and its
 * flows are reset), counted in links_silent; anything heard from the
 * peer, a TEST_LINK_RSP included, keeps a link up; a TEST_LINK is
 * answered, later when the queue is full; time this worker did not run is
 * not the peer's silence; whatever state a flow is in when the peer stops
 * (full ring, ring move, half-close, CDC waiting for room, open never
 * answered), it ends at the bound.
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
#include "smc/liveness.h"

#define RING	(16u * 1024)
#define REGION	(1u << 20)
#define DEAD	3000u		/* links.dead_after in these tests */

static int setup(void **state)
{
	struct world *w = world_new_links(RING, REGION, 64 * 1024, 2);

	w->cfg.links.dead_after_ms = DEAD;
	*state = w;
	return 0;
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

/* Sweeps every 100 ms, as the timer does, from (excluded) to to; the
 * group may fail meanwhile. */
static uint64_t sweep_to(struct world *w, uint64_t from, uint64_t to)
{
	for (from += 100; from <= to; from += 100) {
		liveness_sweep(&w->net, from);
		world_batch_end(w);
	}
	return to;
}

/* How many TEST_LINKs link f posted. */
static unsigned n_tests(const struct fake *f)
{
	unsigned i, n = 0;

	for (i = 0; i < f->n_msgs; i++)
		if (f->msgs[i].b[0] != CDC_MSG_TYPE && fake_llc(f, i).type == LLC_TEST_LINK)
			n++;
	return n;
}

static void peer_says(struct world *w, struct link *lnk, uint8_t type, uint32_t cookie)
{
	struct llc_msg m = { .type = type, .test.cookie = cookie };
	uint8_t msg[LINK_MSG_LEN];

	llc_encode(&m, msg);
	link_rx(lnk, msg, sizeof(msg));
	world_batch_end(w);
}

static void assert_app_reset(struct wflow *f)
{
	char c;

	assert_int_equal(recv(f->app, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, ECONNRESET);
}

/*
 * Idle and silent: a TEST_LINK on each link after a third of the bound
 * and another after two thirds, then both links down at the bound: the
 * group fails with -EHOSTDOWN, its flows are reset and counted.
 */
static void test_silent_idle(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	uint64_t t0 = uv_now(&w->loop), t;

	liveness_start(w->lgr, t0);
	t = sweep_to(w, t0, t0 + DEAD / 3 - 100);
	assert_int_equal(n_tests(world_fake(w, 0)) + n_tests(world_fake(w, 1)), 0);
	t = sweep_to(w, t, t0 + DEAD / 3);
	assert_int_equal(n_tests(world_fake(w, 0)), 1);
	assert_int_equal(n_tests(world_fake(w, 1)), 1);
	t = sweep_to(w, t, t0 + 2 * DEAD / 3);
	assert_int_equal(n_tests(world_fake(w, 0)), 2);
	assert_int_equal(n_tests(world_fake(w, 1)), 2);
	t = sweep_to(w, t, t0 + DEAD - 100);
	assert_int_equal(w->stats.links_silent, 0);
	assert_int_equal(w->stats.lgr_failures, 0);

	liveness_sweep(&w->net, t0 + DEAD);
	assert_int_equal(w->stats.links_silent, 2);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_event_err, -EHOSTDOWN);
	assert_int_equal(w->stats.flows_reset_link, 2);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(b->ended, CONN_END_LINK_DOWN + 1);
	w->lgr = NULL;
	world_batch_end(w);
	assert_app_reset(a);
	assert_app_reset(b);
}

/*
 * Busy and silent: a flow's work waits on link 0 whose queue the stopped
 * peer never empties (no room), yet the link goes down at the bound; a
 * busy link with room gets its TEST_LINK ahead of the waiting work.
 */
static void test_silent_busy(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint64_t t0 = uv_now(&w->loop);

	assert_ptr_equal(f->c.link, L(w, 0));
	liveness_start(w->lgr, t0);
	world_fake(w, 0)->room = 0;
	assert_int_equal(write(f->app, "x", 1), 1);
	assert_true(world_run_until(w, !list_empty(&L(w, 0)->tx_wait)));
	/* Link 1 stays heard from: only link 0 is silent. */
	sweep_to(w, t0, t0 + DEAD / 3);
	assert_int_equal(n_tests(world_fake(w, 0)), 0);		/* no room */
	assert_int_equal(n_tests(world_fake(w, 1)), 1);
	L(w, 1)->last_rx_ms = t0 + DEAD;
	world_fake(w, 0)->room = 1;
	sweep_to(w, t0 + DEAD / 3, t0 + DEAD / 3 + 100);
	assert_int_equal(n_tests(world_fake(w, 0)), 1);
	world_fake(w, 0)->room = 0;
	sweep_to(w, t0 + DEAD / 3 + 100, t0 + DEAD);
	assert_int_equal(L(w, 0)->state, LINK_DOWN);
	assert_int_equal(L(w, 1)->state, LINK_ACTIVE);
	assert_int_equal(w->stats.links_silent, 1);
	assert_int_equal(w->stats.link_failovers, 1);
	assert_int_equal(w->lgr_event_err, -EHOSTDOWN);
	assert_ptr_equal(f->c.link, L(w, 1));
	assert_int_equal(world_fake(w, 0)->bad_calls, 0);
}

/* Heard: an answer (or any message) restarts the clock of its link only. */
static void test_heard_keeps_link(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open(w, 0, RING);
	uint64_t t0 = uv_now(&w->loop) - (DEAD - 500);

	liveness_start(w->lgr, t0);
	peer_says(w, L(w, 0), LLC_TEST_LINK_RSP, 1);	/* stamped "now" */
	sweep_to(w, t0 + DEAD - 600, t0 + DEAD + 100);
	assert_int_equal(L(w, 0)->state, LINK_ACTIVE);
	assert_int_equal(L(w, 1)->state, LINK_DOWN);
	assert_int_equal(w->stats.links_silent, 1);
	assert_int_equal(f->ended, 0);
	assert_int_equal(w->stats.bad_messages, 0);
}

/* A TEST_LINK is answered with its cookie; with the queue full, once
 * there is room, with the newest cookie. */
static void test_answers_test_link(void **state)
{
	struct world *w = *state;
	struct fake *f0 = world_fake(w, 0);

	peer_says(w, L(w, 0), LLC_TEST_LINK, 7);
	assert_int_equal(f0->n_msgs, 1);
	assert_int_equal(fake_llc(f0, 0).type, LLC_TEST_LINK_RSP);
	assert_int_equal(fake_llc(f0, 0).test.cookie, 7);

	f0->room = 0;
	peer_says(w, L(w, 0), LLC_TEST_LINK, 8);
	peer_says(w, L(w, 0), LLC_TEST_LINK, 9);
	assert_int_equal(f0->n_msgs, 1);
	assert_true(L(w, 0)->test_rsp_owed);
	f0->room = 4;
	link_tx_progress(L(w, 0));
	world_batch_end(w);
	assert_int_equal(f0->n_msgs, 2);
	assert_int_equal(fake_llc(f0, 1).type, LLC_TEST_LINK_RSP);
	assert_int_equal(fake_llc(f0, 1).test.cookie, 9);
	assert_false(L(w, 0)->test_rsp_owed);
	assert_int_equal(f0->bad_calls, 0);
}

/* This worker stalled (stopped itself) longer than the bound: its own
 * pause is not the peers' silence, and the bound counts from there. */
static void test_own_stall_forgiven(void **state)
{
	struct world *w = *state;
	uint64_t t0 = uv_now(&w->loop), t;

	liveness_start(w->lgr, t0);
	liveness_sweep(&w->net, t0 + 100);
	t = t0 + 100 + 2 * DEAD;
	liveness_sweep(&w->net, t);
	assert_int_equal(w->stats.links_silent, 0);
	assert_int_equal(L(w, 0)->state, LINK_ACTIVE);
	sweep_to(w, t, t + DEAD - 300);
	assert_int_equal(w->stats.links_silent, 0);
	sweep_to(w, t + DEAD - 300, t + DEAD);
	assert_int_equal(w->stats.links_silent, 2);
	w->lgr = NULL;
	world_batch_end(w);
}

/*
 * A stopped peer leaves each flow in whatever state it was: every one of
 * them ends when the silence reaches the bound. On two links: a flow
 * blocked on the peer's full ring, one whose ring moves (it waits for the
 * peer to consume the old ring), one half-closed (our FIN sent, none
 * back), one whose CDC waits for room the peer never frees, one whose
 * open the peer never answered (it goes on over TCP with its socket), and
 * one given up at its open deadline whose ring waits for the late answer
 * (freed with the group).
 */
static void test_silent_every_state(void **state)
{
	struct world *w = *state;
	struct llc_rmb_move mv = { .gen = 1, .rmb = { .offset = 3u << 20, .size = 64 << 10 } };
	struct wflow *full, *moving, *half, *pending, *opening, *late;
	uint64_t t0 = uv_now(&w->loop);
	static uint8_t data[2 * RING];
	unsigned i;

	w->lgr->ring_move = true;
	full = world_open(w, 0, RING);				/* link 0 */
	moving = world_open(w, 1, RING);			/* link 1 */
	half = world_open(w, 2, RING);
	pending = world_open(w, 3, RING);
	assert_ptr_equal(pending->c.link, L(w, 1));
	w->flows[4].take_fd = true;
	opening = world_open_only(w, 4, 0, 0);
	late = world_open_only(w, 5, 0, 0);
	world_batch_end(w);
	liveness_start(w->lgr, t0);

	assert_int_equal(write(full->app, data, sizeof(data)), (ssize_t)sizeof(data));
	assert_true(world_run_until(w, full->c.write_blocked));
	assert_int_equal(write(moving->app, data, 1000), 1000);
	assert_true(world_run_until(w, moving->c.bytes_tx == 1000));
	mv.token = moving->c.token;
	conn_on_move(&moving->c, &mv);
	world_batch_end(w);
	assert_true(moving->c.tx_move);
	assert_int_equal(shutdown(half->app, SHUT_WR), 0);
	assert_true(world_run_until(w, half->c.fin_sent));
	world_fake(w, 1)->room = 0;
	assert_int_equal(write(pending->app, "x", 1), 1);
	assert_true(world_run_until(w, !list_empty(&L(w, 1)->tx_wait)));
	list_del(&late->c.wait_node);			/* as lgr_sweep() does */
	conn_on_deadline(&late->c);
	assert_int_equal(late->ended, CONN_END_DECLINED + 1);
	assert_int_equal(late->closed, 0);		/* its ring waits */
	for (i = 0; i < 6; i++)
		if (i != 5)
			assert_int_equal(w->flows[i].ended, 0);

	sweep_to(w, t0, t0 + DEAD - 100);
	assert_int_equal(w->stats.lgr_failures, 0);
	sweep_to(w, t0 + DEAD - 100, t0 + DEAD);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_event_err, -EHOSTDOWN);
	assert_int_equal(full->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(moving->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(half->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(pending->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(opening->ended, CONN_END_DECLINED + 1);
	assert_true(opening->taken_fd >= 0);		/* on over TCP */
	assert_int_equal(w->stats.flows_reset_link, 4);
	w->lgr = NULL;
	world_batch_end(w);
	for (i = 0; i < 6; i++)
		assert_int_equal(w->flows[i].closed, 1);
	assert_app_reset(full);
	assert_app_reset(moving);
	assert_app_reset(half);
	assert_app_reset(pending);
}

#define T(t)	cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_silent_idle),
		T(test_silent_busy),
		T(test_heard_keeps_link),
		T(test_answers_test_link),
		T(test_own_stall_forgiven),
		T(test_silent_every_state),
	};

	return cmocka_run_group_tests_name("liveness", tests, NULL, NULL);
}
