/* SPDX-License-Identifier: MIT */
/*
 * Guards a fixed bug: over rdma, the receives that completed before
 * the peer disconnected were dropped when rdma_cm's DISCONNECTED was
 * handled before the CQ was polled (the link was marked draining first),
 * so a FIN or CLOSED the peer counted as delivered was lost.
 *
 * The same holds when the failure is local: `smcproxyctl debug fail-link`
 * (the transport's link_fail) and a port that went down, seen by the
 * device's async handler and acted on at the next sweep (rdma__sweep):
 * what completed before is taken, then the link goes down. The same
 * sweep sends the keepalives (a TEST_LINK on an up link idle for five
 * seconds), which go over the same walk of every link of every group.
 *
 * The order is forced here, which no guest can do: one link of the rdma
 * transport (proxy/transport/rdma/rdma_link.c, rdma_cm.c, cq.c) on fakes.
 * rdma_get_cm_event() hands it a DISCONNECTED while the fake CQ still
 * holds the peer's last receive; the verbs shims (verbs.h) and the verbs
 * and rdma_cm calls of a link's teardown are wrapped (test_rdma_cm.wrap),
 * and so are the SMC core's entry points the link reports to: link_rx(),
 * lgr_link_down_sched() and loop_defer(). Each call is written to a trace
 * ("rx:<first byte>", "down:<err>", "defer") so that a test can say in
 * which order the link did what.
 *
 * The fake QP behaves as rxe's: moved to the error state, it flushes the
 * receives posted to it (each completes with a flush error, in order, in
 * the same CQ), and a send posted to it afterwards completes likewise at
 * once: that is how the teardown markers come back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <cmocka.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <uv.h>

#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "smc/stats-t.h"
#include "transport/rdma/cq.h"
#include "transport/rdma/rdma-int.h"
#include "transport/rdma/verbs.h"

#define FQ_MAX	64
#define DEPTH	16	/* rdma.sq_depth and rq_depth */

/* ------------------------------------------------------------------ */
/* The world: one worker's device, a group with one link on a fake CQ. */

static struct {
	struct cfg cfg;
	struct proxy_stats stats;
	struct smc_net net;
	struct rdma_dev dev;
	struct lgr lgr;
	struct rdma_lgr rg;
	struct rdma_dom *dom;
	struct cq_pool pool;
	struct ibv_cq ibv_cq;
	struct ibv_qp ibv_qp;
	struct ibv_mr mr;
	struct rdma_cm_id id;
	struct rdma_link *rl;

	/* The fake CQ: completions in order. */
	struct ibv_wc q[FQ_MAX];
	unsigned head, tail;
	bool qp_error;			/* ibv_modify_qp(IBV_QPS_ERR) happened */
	uint64_t posted_rx[FQ_MAX];	/* receives posted since the setup */
	unsigned n_posted_rx;

	/* The device's async events: at most one, and the port's state. */
	struct ibv_context ctx;
	bool async_ready;
	enum ibv_event_type async_type;
	enum ibv_port_state port_state;

	/* The fake event channel: at most one event. */
	struct rdma_cm_event ev;
	bool ev_ready;
	unsigned acks;

	struct loop_defer *deferred;
	char trace[1024];
} w;

static void tracef(const char *fmt, ...)
{
	size_t len = strlen(w.trace);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w.trace + len, sizeof(w.trace) - len, fmt, ap);
	va_end(ap);
}

static void cq_push(uint64_t wr_id, enum ibv_wc_status status, uint32_t len)
{
	assert_true(w.tail - w.head < FQ_MAX);
	w.q[w.tail % FQ_MAX] = (struct ibv_wc){
		.wr_id = wr_id, .status = status, .opcode = IBV_WC_RECV, .byte_len = len,
	};
	w.tail++;
}

/* The peer's message into receive slot i, its completion into the CQ. */
static void peer_sends(unsigned i, uint8_t first, enum ibv_wc_status status)
{
	struct rdma_link *rl = w.rl;

	memset(rl->bufs + (rl->sq_depth + i) * LINK_MSG_LEN, first, LINK_MSG_LEN);
	cq_push((uintptr_t)&rl->rx[i].cqe, status, status == IBV_WC_SUCCESS ? LINK_MSG_LEN : 0);
}

static void cm_event(enum rdma_cm_event_type type)
{
	memset(&w.ev, 0, sizeof(w.ev));
	w.ev.event = type;
	w.ev.id = &w.id;
	w.ev_ready = true;
}

/* What the next batch of the worker does: the CM channel's events, then
 * the CQ's, then the end of the batch (the deferred frees). */
static void cm_ready(void)
{
	rdma__on_cm(&w.dev.ech_ev, EPOLLIN);
}

static void cq_ready(void)
{
	cq_poll(&w.pool.cqs[0], false);
}

static void batch_end(void)
{
	struct loop_defer *d = w.deferred;

	w.deferred = NULL;
	if (d)
		d->fn(d);
}

static int setup(void **state)
{
	memset(&w, 0, sizeof(w));
	w.cfg.rdma.sq_depth = DEPTH;
	w.cfg.rdma.rq_depth = DEPTH;
	w.net.cfg = &w.cfg;
	w.net.stats = &w.stats;
	w.net.loop = uv_default_loop();
	list_init(&w.net.lgrs);
	w.dev.net = &w.net;
	list_init(&w.dev.zombies);
	w.pool.budget = 16;
	w.pool.n = 1;
	w.pool.cqs[0].pool = &w.pool;
	w.pool.cqs[0].cq = &w.ibv_cq;
	w.pool.cqs[0].cqe = 4096;
	w.pool.cqs[0].armed = true;
	w.lgr.net = &w.net;
	w.lgr.role = LGR_ROLE_CLIENT;
	w.lgr.state = LGR_ACTIVE;
	w.lgr.n_links = 1;
	w.lgr.ops = &rdma_ops;
	w.lgr.tp = &w.rg;
	w.lgr.links[0].lgr = &w.lgr;
	w.rg.lgr = &w.lgr;
	w.rg.dev = &w.dev;
	w.dom = calloc(1, sizeof(*w.dom));
	assert_non_null(w.dom);
	w.dom->pd = (struct ibv_pd *)&w.dom;	/* never dereferenced */
	w.dom->refs = 1;
	w.rg.dom = w.dom;

	w.rl = rl_new(&w.dev, &w.rg, 0);
	assert_non_null(w.rl);
	w.rl->id = &w.id;
	w.id.context = w.rl;
	w.id.qp = &w.ibv_qp;
	w.rl->qp = &w.ibv_qp;
	w.rl->cq = cq_get(&w.pool, w.rl->sq_depth + w.rl->rq_depth + 2);
	assert_non_null(w.rl->cq);
	rl_established(w.rl, 1);
	assert_int_equal(w.rl->state, RL_UP);
	*state = NULL;
	return 0;
}

static int teardown(void **state)
{
	/* A link still up or waiting for its markers goes now. */
	if (w.rl && w.deferred != &w.rl->defer) {
		if (!list_empty(&w.rl->zombie_node))
			list_del(&w.rl->zombie_node);
		rl_free_now(w.rl);
	}
	batch_end();
	rdma__dom_put(w.rg.dom);	/* the group's reference */
	return 0;
}

/* ------------------------------------------------------------------ */
/* Wrapped calls. */

int __wrap_rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	if (!w.ev_ready) {
		errno = EAGAIN;
		return -1;
	}
	w.ev_ready = false;
	*ev = &w.ev;
	return 0;
}

int __wrap_ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	if (!w.async_ready) {
		errno = EAGAIN;
		return -1;
	}
	w.async_ready = false;
	memset(ev, 0, sizeof(*ev));
	ev->event_type = w.async_type;
	return 0;
}

void __wrap_ibv_ack_async_event(struct ibv_async_event *ev) {}

/* What libibverbs' inline ibv_query_port() calls on a context of no
 * provider (ours): the compat form, whose first member is the state. */
int __wrap_ibv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa)
{
	pa->state = w.port_state;
	return 0;
}

int __wrap_rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	w.acks++;
	return 0;
}

int __wrap_rdma_disconnect(struct rdma_cm_id *id)
{
	tracef("disconnect ");
	return 0;
}

int __wrap_rdma_destroy_qp(struct rdma_cm_id *id) { return 0; }
int __wrap_rdma_destroy_id(struct rdma_cm_id *id) { return 0; }
int __wrap_ibv_dealloc_pd(struct ibv_pd *pd) { return 0; }
int __wrap_ibv_dereg_mr(struct ibv_mr *mr) { return 0; }

struct ibv_mr *__wrap_ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	w.mr.addr = addr;
	w.mr.length = length;
	w.mr.lkey = 0x1234;
	return &w.mr;
}

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	unsigned i;

	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR && !w.qp_error) {
		w.qp_error = true;
		for (i = 0; i < w.n_posted_rx; i++)
			cq_push(w.posted_rx[i], IBV_WC_WR_FLUSH_ERR, 0);
		w.n_posted_rx = 0;
	}
	return 0;
}

int __wrap_vb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;

	while (k < n && w.head != w.tail)
		wc[k++] = w.q[w.head++ % FQ_MAX];
	return k;
}

int __wrap_vb_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return 0;
}

/* rxe: a QP in the error state flushes whatever is posted to it. */
int __wrap_vb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next)
		if (w.qp_error)
			cq_push(wr->wr_id, IBV_WC_WR_FLUSH_ERR, 0);
	return 0;
}

int __wrap_vb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (w.qp_error) {
			cq_push(wr->wr_id, IBV_WC_WR_FLUSH_ERR, 0);
			continue;
		}
		assert_true(w.n_posted_rx < FQ_MAX);
		w.posted_rx[w.n_posted_rx++] = wr->wr_id;
	}
	return 0;
}

void __wrap_link_rx(struct link *lnk, const uint8_t *msg, size_t len)
{
	assert_ptr_equal(lnk, &w.lgr.links[0]);
	assert_int_equal(len, LINK_MSG_LEN);
	tracef("rx:%c ", msg[0]);
}

void __wrap_lgr_link_down_sched(struct link *lnk, int err)
{
	assert_ptr_equal(lnk, &w.lgr.links[0]);
	tracef("down:%d ", err);
}

void __wrap_link_post_test(struct link *lnk, uint32_t cookie)
{
	assert_ptr_equal(lnk, &w.lgr.links[0]);
	tracef("test ");
}

void __wrap_loop_defer(struct loop *l, struct loop_defer *d, void (*fn)(struct loop_defer *d))
{
	assert_null(w.deferred);	/* a link is freed once */
	d->fn = fn;
	w.deferred = d;
	tracef("defer ");
}

/* ------------------------------------------------------------------ */
/* Tests. */

/*
 * The peer sent a FIN-like message, then disconnected; our worker sees the
 * DISCONNECTED before it polls the CQ. The message still reaches the
 * core, before the link goes down; then the link drains and is freed.
 */
static void test_disconnect_before_receive_keeps_it(void **state)
{
	peer_sends(0, 'F', IBV_WC_SUCCESS);
	peer_sends(1, 'C', IBV_WC_SUCCESS);
	cm_event(RDMA_CM_EVENT_DISCONNECTED);
	cm_ready();
	assert_int_equal(w.acks, 1);
	/* Taken while the event was handled, before the link went down. */
	assert_string_equal(w.trace, "rx:F rx:C disconnect down:-104 ");
	cq_ready();
	assert_string_equal(w.trace, "rx:F rx:C disconnect down:-104 defer ");
	assert_int_equal(w.rl->state, RL_DRAINING);
	assert_int_equal(w.stats.rdma_link_failures, 1);
	batch_end();
	w.rl = NULL;	/* freed */
}

/* The same for DEVICE_REMOVAL, which takes the same way. */
static void test_device_removal_keeps_receives(void **state)
{
	peer_sends(0, 'F', IBV_WC_SUCCESS);
	cm_event(RDMA_CM_EVENT_DEVICE_REMOVAL);
	cm_ready();
	cq_ready();
	assert_string_equal(w.trace, "rx:F disconnect down:-104 defer ");
	batch_end();
	w.rl = NULL;
}

/*
 * What follows a failed completion is not taken: the receive that failed
 * takes the link down with its own error, once; the good one before it
 * was delivered, and the DISCONNECTED finds the link down already. Its
 * markers completed inside that same poll, while the poll held the link:
 * it is freed once, after the poll, not under it.
 */
static void test_failed_receive_in_the_drain(void **state)
{
	peer_sends(0, 'F', IBV_WC_SUCCESS);
	peer_sends(1, 'X', IBV_WC_REM_ACCESS_ERR);
	peer_sends(2, 'Y', IBV_WC_SUCCESS);
	cm_event(RDMA_CM_EVENT_DISCONNECTED);
	cm_ready();
	assert_string_equal(w.trace, "rx:F disconnect down:-5 defer ");
	assert_int_equal(w.rl->markers_left, 0);
	assert_true(w.head == w.tail);	/* the drain took all, Y ignored */
	cq_ready();
	assert_string_equal(w.trace, "rx:F disconnect down:-5 defer ");
	batch_end();
	w.rl = NULL;
}

/* A DISCONNECTED with nothing received: down at once, nothing lost. */
static void test_disconnect_idle(void **state)
{
	cm_event(RDMA_CM_EVENT_DISCONNECTED);
	cm_ready();
	assert_string_equal(w.trace, "disconnect down:-104 ");
	cq_ready();
	assert_string_equal(w.trace, "disconnect down:-104 defer ");
	batch_end();
	w.rl = NULL;
}

/*
 * `smcproxyctl debug fail-link`: the peer's last messages are in our CQ
 * when the operator fails the link. They reach the core first, then the
 * link goes down (ECONNABORTED), drains and is freed.
 */
static void test_fail_link_keeps_receives(void **state)
{
	peer_sends(0, 'F', IBV_WC_SUCCESS);
	peer_sends(1, 'C', IBV_WC_SUCCESS);
	assert_int_equal(rdma_ops.link_fail(&w.lgr.links[0]), 0);
	assert_string_equal(w.trace, "rx:F rx:C disconnect down:-103 ");
	cq_ready();
	assert_string_equal(w.trace, "rx:F rx:C disconnect down:-103 defer ");
	assert_int_equal(w.stats.rdma_link_failures, 1);
	/* Down already: a second command finds nothing to fail. */
	assert_int_equal(rdma_ops.link_fail(&w.lgr.links[0]), -ENOTCONN);
	batch_end();
	w.rl = NULL;
}

/*
 * The port went down: the async handler notes it, the next sweep fails
 * every link of the worker, each after what its CQ already holds.
 */
static void test_port_down_keeps_receives(void **state)
{
	w.dev.ctx = &w.ctx;
	w.net.tp[smc_transport_slot(&rdma_ops)] = &w.dev;
	list_add_tail(&w.lgr.node, &w.net.lgrs);
	w.rl->last_tx_ms = uv_now(w.net.loop);	/* no keepalive due */
	w.async_type = IBV_EVENT_PORT_ERR;
	w.async_ready = true;
	w.port_state = IBV_PORT_DOWN;
	rdma__on_async(&w.dev.async_ev, EPOLLIN);
	assert_int_equal(w.stats.rdma_async_events, 1);
	assert_string_equal(w.trace, "");	/* acted on at the sweep */

	peer_sends(0, 'F', IBV_WC_SUCCESS);
	rdma__sweep(&w.net, uv_now(w.net.loop));
	assert_string_equal(w.trace, "rx:F disconnect down:-100 ");
	cq_ready();
	assert_string_equal(w.trace, "rx:F disconnect down:-100 defer ");
	batch_end();
	w.rl = NULL;
	list_del(&w.lgr.node);
}

/*
 * The sweep's keepalive: an up link idle for five seconds gets one
 * TEST_LINK, then none until it is idle that long again; a link not up
 * gets none however long it was idle.
 */
static void test_keepalive_idle_links(void **state)
{
	uint64_t now = uv_now(w.net.loop);

	w.dev.ctx = &w.ctx;
	w.net.tp[smc_transport_slot(&rdma_ops)] = &w.dev;
	w.port_state = IBV_PORT_ACTIVE;
	list_add_tail(&w.lgr.node, &w.net.lgrs);
	w.rl->last_tx_ms = now - 4999;
	rdma__sweep(&w.net, now);
	assert_string_equal(w.trace, "");
	w.rl->last_tx_ms = now - 5000;
	rdma__sweep(&w.net, now);
	assert_string_equal(w.trace, "test ");
	assert_int_equal(w.rl->last_tx_ms, now);
	rdma__sweep(&w.net, now);
	assert_string_equal(w.trace, "test ");
	w.rl->last_tx_ms = now - 60000;
	w.rl->state = RL_CONNECTING;
	rdma__sweep(&w.net, now);
	assert_string_equal(w.trace, "test ");
	w.rl->state = RL_UP;
	list_del(&w.lgr.node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_disconnect_before_receive_keeps_it, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_removal_keeps_receives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_receive_in_the_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_link_keeps_receives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_down_keeps_receives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keepalive_idle_links, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
