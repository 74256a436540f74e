/* SPDX-License-Identifier: MIT */
/*
 * The link-group timer (proxy/smc/net.c) judges only what the peer said,
 * and reads the links first: a busy worker's timer ran its deadlines and
 * the liveness sweep before the messages already queued on its links (shm
 * rings whose peer skipped the doorbell, a CQ not yet polled). A
 * FLOW_ACCEPT sitting there was ignored: the flow fell back to TCP, and
 * CONN_OPEN_GRACE deadlines later the whole group failed as wedged
 * although the peer had answered; a TEST_LINK_RSP sitting there did not
 * keep its link up.
 *
 * The real timer runs here, on the in-memory transport of
 * fake_transport.h, which the registry lists (smc_transport_at() is
 * wrapped) and whose poll() takes the messages the test queued. The
 * deadline or the silence is set in the past, so the timer's first run
 * judges it.
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

const struct smc_transport_ops *__wrap_smc_transport_at(unsigned i);

const struct smc_transport_ops *__wrap_smc_transport_at(unsigned i)
{
	return i == 0 ? &fake_ops : NULL;
}

static int setup(void **state)
{
	struct world *w = world_new(RING, REGION, 64 * 1024);

	w->cfg.links.dead_after_ms = DEAD;
	w->net.lgr_transports = CLC_TR_SHM;
	liveness_start(w->lgr, uv_now(&w->loop));
	uv_timer_init(&w->loop, &w->net.lgr_timer);
	w->net.lgr_timer.data = &w->net;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	uv_timer_stop(&w->net.lgr_timer);
	uv_close((uv_handle_t *)&w->net.lgr_timer, NULL);
	world_free(w);
	return 0;
}

static void peer_queues(struct world *w, const struct llc_msg *m)
{
	uint8_t msg[LINK_MSG_LEN];

	llc_encode(m, msg);
	fake_queue_rx(&w->fake, msg);
}

static void peer_queues_accept(struct world *w, struct wflow *f)
{
	struct llc_msg m = {
		.type = LLC_FLOW_ACCEPT,
		.accept = { .token = f->c.token, .peer_token = PEER_TOKEN,
			    .rmb = { .offset = 0, .size = RING } },
	};

	peer_queues(w, &m);
}

/* The peer answered before the deadline passed; the timer comes while the
 * answer is still queued: the flow is accepted, not sent over TCP. */
static void test_accept_queued_at_deadline(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);

	world_batch_end(w);
	peer_queues_accept(w, f);
	f->c.deadline_ms = uv_now(&w->loop);
	smc_net__timer(&w->net);
	assert_true(world_run_until(w, f->c.state != CONN_OPENING));
	assert_int_equal(w->fake.rx_cons, 1);
	assert_int_equal(f->ended, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(f->c.tx_size, RING);
	assert_int_equal(w->stats.lgr_failures, 0);
}

/* An open given up once (the flow went over TCP) whose late answer is
 * queued when the second, longer deadline passes: the peer is not wedged.
 * The accept is aborted and the group stays. */
static void test_late_accept_queued_keeps_group(void **state)
{
	struct world *w = *state;
	struct wflow *f = world_open_only(w, 0, 0, 0);

	world_batch_end(w);
	w->fake.n_msgs = 0;
	list_del(&f->c.wait_node);		/* as lgr_sweep() does */
	conn_on_deadline(&f->c);
	assert_int_equal(f->ended, CONN_END_DECLINED + 1);

	peer_queues_accept(w, f);
	f->c.deadline_ms = uv_now(&w->loop);
	smc_net__timer(&w->net);
	assert_true(world_run_until(w, w->fake.rx_cons == 1 || w->stats.lgr_failures));
	if (w->stats.lgr_failures)
		w->lgr = NULL;		/* freed: the teardown must not fail it again */
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(w->lgr->state, LGR_ACTIVE);
	assert_int_equal(w->fake.n_msgs, 1);
	assert_true(world_cdc(w, 0).conn_flags & CDC_CF_ABORT);
	world_peer_cdc(w, f, 0, CDC_CF_CLOSED);
	assert_int_equal(f->closed, 1);
	assert_int_equal(w->lgr->rmbs.n_used, 0);
}

/* A link silent for links.dead_after but for the TEST_LINK_RSP queued on
 * it: the peer is alive, the link stays. */
static void test_rsp_queued_keeps_link(void **state)
{
	struct world *w = *state;
	struct llc_msg m = { .type = LLC_TEST_LINK_RSP, .test.cookie = 1 };
	struct link *lnk = w->lnk;

	world_open(w, 0, RING);
	lnk->last_rx_ms = lnk->last_test_ms = uv_now(&w->loop) - DEAD;
	peer_queues(w, &m);
	smc_net__timer(&w->net);
	assert_true(world_run_until(w, w->fake.rx_cons == 1 || w->stats.links_silent));
	if (w->stats.lgr_failures)
		w->lgr = NULL;		/* freed: the teardown must not fail it again */
	assert_int_equal(w->stats.links_silent, 0);
	assert_int_equal(w->stats.lgr_failures, 0);
	assert_int_equal(lnk->state, LINK_ACTIVE);
}

#define T(t)	cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_accept_queued_at_deadline),
		T(test_late_accept_queued_keeps_group),
		T(test_rsp_queued_keeps_link),
	};

	return cmocka_run_group_tests_name("sweep", tests, NULL, NULL);
}
