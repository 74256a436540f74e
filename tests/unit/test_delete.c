/* SPDX-License-Identifier: MIT */
/*
 * Guards the orderly stop (DELETE_LINK, smcproxy-protocol(7)): a daemon
 * that stops posts DELETE_LINK (ALL, ORDERLY) on every link of a group
 * whose peer takes it, none to a peer that does not (an older daemon),
 * and knows when each completed; a receiver closes the group at the end
 * of the batch as an orderly close (lgr_peer_closes, LGR_EV_PEER_CLOSED,
 * not a failure), resetting the flows still open with a reason of their
 * own (CONN_END_PEER_STOPPED, flows_reset_peer_stopped) and sending those
 * still opening to TCP as peer_stopped; the resets of a stop's drain (an
 * ABORT with STOPPING, to a peer that takes it) are counted the same way;
 * without ORDERLY it is a
 * failure, without ALL only that link goes down and its flows move. The
 * stopping daemon counts the groups it closes as its own orderly closes
 * (lgr_closes, LGR_EV_CLOSED), not as failures. On the in-memory
 * transport of fake_transport.h, two links.
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

#define RING	(16u * 1024)
#define REGION	(1u << 20)

static int setup(void **state)
{
	struct world *w = world_new_links(RING, REGION, 64 * 1024, 2);

	w->lgr->peer_delete = true;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world_free(*state);
	return 0;
}

static void peer_deletes(struct world *w, unsigned link, uint8_t flags)
{
	struct llc_msg m = { .type = LLC_DELETE_LINK, .del.flags = flags };
	uint8_t msg[LINK_MSG_LEN];

	llc_encode(&m, msg);
	link_rx(&w->lgr->links[link], msg, sizeof(msg));
	world_batch_end(w);
}

static void assert_app_reset(struct wflow *f)
{
	char c;

	assert_int_equal(recv(f->app, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, ECONNRESET);
}

/* How many DELETE_LINKs (ALL, ORDERLY) link f posted. */
static unsigned n_deletes(const struct fake *f)
{
	unsigned i, n = 0;

	for (i = 0; i < f->n_msgs; i++) {
		struct llc_msg m;

		if (f->msgs[i].b[0] == CDC_MSG_TYPE)
			continue;
		m = fake_llc(f, i);
		if (m.type == LLC_DELETE_LINK) {
			assert_int_equal(m.del.flags, LLC_DEL_ALL | LLC_DEL_ORDERLY);
			n++;
		}
	}
	return n;
}

/* Our stop: one on each link, done once each completed; a link without
 * room is skipped (the other tells the peer). */
static void test_stop_posts_delete(void **state)
{
	struct world *w = *state;

	assert_int_equal(lgr_delete_all(&w->net), 2);
	assert_int_equal(n_deletes(world_fake(w, 0)), 1);
	assert_int_equal(n_deletes(world_fake(w, 1)), 1);
	assert_false(lgr_deletes_done(&w->net));
	world_complete_link(w, 0);
	assert_false(lgr_deletes_done(&w->net));
	world_complete_link(w, 1);
	assert_true(lgr_deletes_done(&w->net));

	world_fake(w, 0)->room = 0;
	assert_int_equal(lgr_delete_all(&w->net), 1);
	assert_int_equal(n_deletes(world_fake(w, 0)), 1);
	assert_int_equal(n_deletes(world_fake(w, 1)), 2);
	assert_int_equal(world_fake(w, 0)->bad_calls + world_fake(w, 1)->bad_calls, 0);
}

/* Our stop closes the group: an orderly close of our own, not a
 * failure, told to the peer or not. */
static void test_stop_closes_own(void **state)
{
	struct world *w = *state;

	assert_int_equal(lgr_delete_all(&w->net), 2);
	world_complete_link(w, 0);
	world_complete_link(w, 1);
	lgr_close_all(&w->net);
	assert_int_equal(w->stats.lgr_closes, 1);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->stats.lgr_peer_closes, 0);
	assert_int_equal(w->lgr_events[LGR_EV_CLOSED], 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 0);
	assert_int_equal(w->lgr_event_err, -ESHUTDOWN);
	w->lgr = NULL;
	world_batch_end(w);
}

/* A failure raised before the stop closes the group stays a failure. */
static void test_stop_after_failure(void **state)
{
	struct world *w = *state;

	lgr_fail_sched(w->lgr, -ECONNRESET);
	lgr_close_all(&w->net);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->stats.lgr_closes, 0);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, -ECONNRESET);
	w->lgr = NULL;
	world_batch_end(w);
}

/* A peer that did not say it takes DELETE_LINK (an older daemon) gets
 * none: it would take it for a malformed message. */
static void test_stop_old_peer(void **state)
{
	struct world *w = *state;

	w->lgr->peer_delete = false;
	assert_int_equal(lgr_delete_all(&w->net), 0);
	assert_int_equal(world_fake(w, 0)->n_msgs + world_fake(w, 1)->n_msgs, 0);
	assert_true(lgr_deletes_done(&w->net));
}

/* The peer stops: the group closes at the end of the batch, orderly; the
 * flows still open are reset because the peer stopped, not as after a
 * failure, and one still opening goes over TCP saying so. */
static void test_peer_stops(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	struct wflow *o = world_open_only(w, 2, 0, 0);

	assert_ptr_not_equal(a->c.link, b->c.link);
	assert_int_equal(o->c.state, CONN_OPENING);
	o->take_fd = true;
	peer_deletes(w, 1, LLC_DEL_ALL | LLC_DEL_ORDERLY);
	assert_int_equal(w->stats.lgr_peer_closes, 1);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->lgr_events[LGR_EV_PEER_CLOSED], 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 0);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_int_equal(a->ended, CONN_END_PEER_STOPPED + 1);
	assert_int_equal(b->ended, CONN_END_PEER_STOPPED + 1);
	assert_int_equal(w->stats.flows_reset_peer_stopped, 2);
	assert_int_equal(w->stats.flows_reset_link, 0);
	assert_int_equal(o->ended, CONN_END_DECLINED + 1);
	assert_int_equal(o->fb, FB_PEER_STOPPED);
	assert_true(o->taken_fd >= 0);
	w->lgr = NULL;
	world_batch_end(w);
	assert_app_reset(a);
	assert_app_reset(b);
}

/* What follows the peer's DELETE in the same batch (its socket's end, a
 * disconnect) does not make the close a failure. */
static void test_peer_stops_then_vanishes(void **state)
{
	struct world *w = *state;
	struct llc_msg m = { .type = LLC_DELETE_LINK, .del.flags = LLC_DEL_ALL | LLC_DEL_ORDERLY };
	uint8_t msg[LINK_MSG_LEN];

	llc_encode(&m, msg);
	link_rx(&w->lgr->links[0], msg, sizeof(msg));
	lgr_fail_sched(w->lgr, -ECONNRESET);
	lgr_link_down_sched(&w->lgr->links[1], -ECONNRESET);
	world_batch_end(w);
	assert_int_equal(w->stats.lgr_peer_closes, 1);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->stats.link_failovers, 0);
	w->lgr = NULL;
	world_batch_end(w);
}

/* The last CDC the link of flow wf posted. */
static struct cdc_msg last_cdc(struct world *w, const struct wflow *wf)
{
	const struct fake *f = world_fake(w, (unsigned)(wf->c.link - w->lgr->links));

	assert_true(f->n_msgs > 0);
	assert_int_equal(f->msgs[f->n_msgs - 1].b[0], CDC_MSG_TYPE);
	return fake_cdc(f, f->n_msgs - 1);
}

/* Our stop resets the flows its drain left (proxy_abort_flows()): the
 * ABORT says so to a peer that takes it, and only while we stop. */
static void test_stop_abort_says_so(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);
	struct wflow *c = world_open(w, 2, RING);
	struct cdc_msg m;

	conn_abort(&a->c);		/* not stopping: a plain reset */
	world_batch_end(w);
	m = last_cdc(w, a);
	assert_int_equal(m.token, a->c.peer_token);
	assert_int_equal(m.conn_flags, CDC_CF_ABORT);

	w->net.stopping = true;
	w->lgr->peer_stop_abort = true;
	conn_abort(&b->c);
	world_batch_end(w);
	m = last_cdc(w, b);
	assert_int_equal(m.token, b->c.peer_token);
	assert_int_equal(m.conn_flags, CDC_CF_ABORT | CDC_CF_STOPPING);
	assert_int_equal(b->ended, CONN_END_ABORTED + 1);

	w->lgr->peer_stop_abort = false;	/* an older peer: it would reject it */
	conn_abort(&c->c);
	world_batch_end(w);
	m = last_cdc(w, c);
	assert_int_equal(m.token, c->c.peer_token);
	assert_int_equal(m.conn_flags, CDC_CF_ABORT);
}

/* The peer's stop reset a flow (its drain ran out): a reset because the
 * peer stopped, not one of its application's. */
static void test_peer_stop_abort(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *b = world_open(w, 1, RING);

	world_peer_cdc(w, a, 0, CDC_CF_ABORT | CDC_CF_STOPPING);
	assert_int_equal(a->ended, CONN_END_PEER_STOPPED + 1);
	assert_int_equal(w->stats.flows_reset_peer_stopped, 1);
	world_peer_cdc(w, b, 0, CDC_CF_ABORT);
	assert_int_equal(b->ended, CONN_END_RESET + 1);
	assert_int_equal(w->stats.flows_reset_peer_stopped, 1);
	assert_int_equal(w->stats.bad_messages, 0);
	assert_app_reset(a);
	assert_app_reset(b);
}

/* Without ORDERLY the peer gave the group up: a failure, its flows reset
 * and sent to TCP as after any failure. */
static void test_peer_gives_up(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING), *o = world_open_only(w, 1, 0, 0);

	peer_deletes(w, 0, LLC_DEL_ALL);
	assert_int_equal(w->stats.lgr_peer_closes, 0);
	assert_int_equal(w->stats.lgr_failures, 1);
	assert_int_equal(w->lgr_events[LGR_EV_FAILED], 1);
	assert_int_equal(w->lgr_event_err, -ECONNABORTED);
	assert_int_equal(a->ended, CONN_END_LINK_DOWN + 1);
	assert_int_equal(w->stats.flows_reset_link, 1);
	assert_int_equal(w->stats.flows_reset_peer_stopped, 0);
	assert_int_equal(o->ended, CONN_END_DECLINED + 1);
	assert_int_equal(o->fb, FB_NO_LINK);
	w->lgr = NULL;
	world_batch_end(w);
}

/* Without ALL only the link it came on goes down: its flows move. */
static void test_peer_deletes_one_link(void **state)
{
	struct world *w = *state;
	struct wflow *a = world_open(w, 0, RING);

	assert_ptr_equal(a->c.link, &w->lgr->links[0]);
	peer_deletes(w, 0, LLC_DEL_ORDERLY);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(w->lgr->links[0].state, LINK_DOWN);
	assert_int_equal(w->stats.link_failovers, 1);
	assert_int_equal(w->stats.lgr_peer_closes + w->stats.lgr_failures, 0);
	assert_ptr_equal(a->c.link, &w->lgr->links[1]);
	assert_int_equal(a->ended, 0);
}

#define T(t)	cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_stop_posts_delete),
		T(test_stop_old_peer),
		T(test_stop_closes_own),
		T(test_stop_after_failure),
		T(test_peer_stops),
		T(test_peer_stops_then_vanishes),
		T(test_stop_abort_says_so),
		T(test_peer_stop_abort),
		T(test_peer_gives_up),
		T(test_peer_deletes_one_link),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
