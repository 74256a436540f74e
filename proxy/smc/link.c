/* SPDX-License-Identifier: MIT */
/*
 * The send and receive paths of a link. Conns do not queue messages: they
 * set work bits (CONN_TX_*) and the link builds each message when the
 * transport's send queue has room for it, so a CDC always carries the
 * newest cursors, a busy flow never has more than one CDC waiting, and a
 * full queue (SMC: no free send WR slot) costs no memory.
 */
#include <assert.h>
#include <errno.h>

#include "cdc.h"
#include "conn.h"
#include "fallback.h"
#include "lgr.h"
#include "link.h"
#include "llc.h"
#include "net.h"

void link_init(struct link *lnk, struct lgr *lgr, unsigned idx)
{
	*lnk = (struct link){ .lgr = lgr, .idx = idx, .state = LINK_ACTIVE };
	list_init(&lnk->kick_node);
	list_init(&lnk->tx_wait);
	list_init(&lnk->corked);
	list_init(&lnk->draining);
}

bool link_failing(const struct link *lnk)
{
	return lnk->state != LINK_ACTIVE || lnk->down_sched || lgr_failing(lnk->lgr);
}

/* Every caller asked tx_room() just before (not asked again here: shm's
 * answer comes from the peer's memory), and none posts on a failing link. */
static int link_post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN])
{
	struct lgr *lgr = lnk->lgr;
	int err;

	assert(!link_failing(lnk));
	err = lgr->ops->post(lnk, msg);

	if (err)
		return err;
	lnk->tx_seq++;
	lnk->msgs_tx++;
	if (!lnk->kick) {
		lnk->kick = true;
		smc_net__kick_link(lgr->net, lnk);
	}
	return 0;
}

/* Posts c's work in protocol order (open or accept before any CDC) while
 * there is room: 0 when all went, -EAGAIN when the queue filled. */
static int link_post_conn(struct link *lnk, struct conn *c)
{
	static const unsigned order[] = { CONN_TX_OPEN, CONN_TX_ACCEPT, CONN_TX_MOVE, CONN_TX_CDC };
	uint8_t msg[LINK_MSG_LEN];
	unsigned i;
	int err;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(c->tx_work & order[i]))
			continue;
		/* A CDC announces what it follows: the writes go first, and
		 * take their slots before the room for it is asked. */
		if (order[i] == CONN_TX_CDC) {
			err = conn_write_out(c);
			if (err)
				return err;
		}
		if (!lnk->lgr->ops->tx_room(lnk))
			return -EAGAIN;
		conn_build_msg(c, order[i], msg);
		c->tx_work &= ~order[i];
		err = link_post(lnk, msg);
		if (err) {
			lgr_fail_sched(lnk->lgr, err);
			return err;
		}
	}
	return 0;
}

/* Work waits for room or a completion: have the transport tell us. */
static void link_want_progress(struct link *lnk)
{
	if (lnk->want_progress || link_failing(lnk))
		return;		/* asked already, and not answered yet; or going */
	lnk->want_progress = true;
	lnk->lgr->ops->want_progress(lnk);
	/* A completion that came between our check and the request would
	 * not be reported: the end of the batch looks once more. */
	smc_net__kick_link(lnk->lgr->net, lnk);
}

void link_conn_work(struct conn *c, unsigned work)
{
	struct link *lnk = c->link;

	if (lgr_failing(c->lgr))
		return;
	c->tx_work |= work;
	/* Already waiting its turn, or on a link that goes down at the end
	 * of the batch: the move takes the work along. */
	if (!list_empty(&c->tx_node) || link_failing(lnk))
		return;
	if (list_empty(&lnk->tx_wait) && link_post_conn(lnk, c) == 0) {
		conn_tx_posted(c);
		return;
	}
	if (c->tx_work && !link_failing(lnk)) {
		list_add_tail(&c->tx_node, &lnk->tx_wait);
		link_want_progress(lnk);
	}
}

void link_conn_forget(struct conn *c)
{
	list_del(&c->tx_node);
	list_del(&c->drain_node);
	list_del(&c->cork_node);
	c->corked = false;
}

void link_post_decline(struct link *lnk, uint32_t token, unsigned reason)
{
	struct lgr *lgr = lnk->lgr;
	struct llc_msg m = { .type = LLC_FLOW_DECLINE };
	uint8_t msg[LINK_MSG_LEN];

	if (lgr_failing(lgr))
		return;		/* the peer's flows go with the group */
	/* Counted, and queued for a survivor, as it goes on the wire. */
	reason = clc_decline_for_peer(reason, lgr->peer_decl_stopping);
	counter_inc(&lgr->net->stats->declines_sent[reason < CLC_DECL__MAX ? reason : 0]);
	/* A link that goes down keeps it for the survivor (lgr_link_down()). */
	if (!link_failing(lnk) && list_empty(&lnk->tx_wait) && !lnk->n_decline_q &&
	    lgr->ops->tx_room(lnk)) {
		m.decline.token = token;
		m.decline.reason = (uint8_t)reason;
		llc_encode(&m, msg);
		if (link_post(lnk, msg))
			lgr_fail_sched(lgr, -EIO);
		return;
	}
	/* With the queue full and this backlog too, the opener's deadline
	 * takes over: it fails the link group, which a peer flooding us
	 * with opens has earned. */
	if (lnk->n_decline_q < sizeof(lnk->decline_q) / sizeof(lnk->decline_q[0])) {
		lnk->decline_q[lnk->n_decline_q].token = token;
		lnk->decline_q[lnk->n_decline_q].reason = (uint8_t)reason;
		lnk->n_decline_q++;
		link_want_progress(lnk);
	}
}

void link_post_test(struct link *lnk, uint32_t cookie)
{
	struct llc_msg m = { .type = LLC_TEST_LINK, .test.cookie = cookie };
	uint8_t msg[LINK_MSG_LEN];

	/* Ahead of flows waiting for room: an LLC message has no order to
	 * keep with them, and a link whose queue never empties is just the
	 * one whose peer may have stopped reading it. */
	if (link_failing(lnk) || lnk->state != LINK_ACTIVE || !lnk->lgr->ops->tx_room(lnk))
		return;		/* no room: asked again at the next sweep */
	llc_encode(&m, msg);
	if (link_post(lnk, msg))
		lgr_fail_sched(lnk->lgr, -EIO);
}

/* The answer to a TEST_LINK; without room now, once there is (link_run()).
 * Only the newest cookie is kept: the asker needs to hear something, not
 * an answer per question. */
static void link_post_test_rsp(struct link *lnk, uint32_t cookie)
{
	struct llc_msg m = { .type = LLC_TEST_LINK_RSP, .test.cookie = cookie };
	uint8_t msg[LINK_MSG_LEN];

	if (link_failing(lnk) || lnk->state != LINK_ACTIVE)
		return;
	if (!lnk->lgr->ops->tx_room(lnk)) {
		lnk->test_rsp_owed = true;
		lnk->test_rsp_cookie = cookie;
		link_want_progress(lnk);
		return;
	}
	lnk->test_rsp_owed = false;
	llc_encode(&m, msg);
	if (link_post(lnk, msg))
		lgr_fail_sched(lnk->lgr, -EIO);
}

int link_post_delete(struct link *lnk, uint8_t flags)
{
	struct llc_msg m = { .type = LLC_DELETE_LINK, .del.flags = flags };
	uint8_t msg[LINK_MSG_LEN];
	int err;

	/* Ahead of flows waiting for room, as TEST_LINK: the group ends
	 * after it, and their work with it. */
	if (link_failing(lnk))
		return -ENOLINK;
	if (!lnk->lgr->ops->tx_room(lnk))
		return -EAGAIN;
	llc_encode(&m, msg);
	err = link_post(lnk, msg);
	if (err) {
		lgr_fail_sched(lnk->lgr, err);
		return err;
	}
	return 0;
}

/*
 * The peer's DELETE_LINK. With LLC_DEL_ALL the whole group ends at the end
 * of the batch, its flows still open reset; with LLC_DEL_ORDERLY as an
 * orderly close (the peer stops: lgr->peer_stopped), else as a failure.
 * Without ALL only lnk goes down, and its flows move to another link.
 */
static void link_on_delete(struct link *lnk, uint8_t flags)
{
	struct lgr *lgr = lnk->lgr;

	if (!(flags & LLC_DEL_ALL)) {
		lgr_link_down_sched(lnk, -ECONNABORTED);
		return;
	}
	if (flags & LLC_DEL_ORDERLY)
		lgr->peer_stopped = true;
	lgr_fail_sched(lgr, flags & LLC_DEL_ORDERLY ? -ESHUTDOWN : -ECONNABORTED);
}

bool link_conn_unacked(const struct conn *c)
{
	struct link *lnk = c->link;
	uint32_t done;

	if (!c->tx_unacked_valid)
		return false;
	done = lnk->down_sched ? lnk->down_done : lnk->lgr->ops->tx_done(lnk);
	return (int32_t)(c->tx_last_seq - done) >= 0;
}

void link_drain(struct conn *c)
{
	if (list_empty(&c->drain_node))
		list_add_tail(&c->drain_node, &c->link->draining);
	link_want_progress(c->link);
}

/* Ended conns whose last send completed are released. */
static void link_run_draining(struct link *lnk)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &lnk->draining) {
		struct conn *c = list_entry(pos, struct conn, drain_node);

		if (link_conn_unacked(c))
			continue;
		list_del(&c->drain_node);
		conn_tx_posted(c);	/* releases it now */
	}
}

void link_cork(struct conn *c)
{
	struct link *lnk = c->link;

	if (!c->corked) {
		c->corked = true;
		list_add_tail(&c->cork_node, &lnk->corked);
	}
	link_want_progress(lnk);
}

/* Conns whose sends all completed get what they hold pushed. */
static void link_uncork(struct link *lnk)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &lnk->corked) {
		struct conn *c = list_entry(pos, struct conn, cork_node);

		if (link_conn_unacked(c))
			continue;
		list_del(&c->cork_node);
		c->corked = false;
		conn_tx_progress(c);
	}
}

/* Posts what waited for room, pushes what autocork held, and asks for
 * progress again if anything still waits. */
static void link_run(struct link *lnk)
{
	struct lgr *lgr = lnk->lgr;
	uint8_t msg[LINK_MSG_LEN];

	if (link_failing(lnk))
		return;		/* its work moves, or goes with the group */
	if (lnk->test_rsp_owed && lgr->ops->tx_room(lnk)) {
		link_post_test_rsp(lnk, lnk->test_rsp_cookie);
	}
	while (lnk->n_decline_q && lgr->ops->tx_room(lnk)) {
		struct llc_msg m = { .type = LLC_FLOW_DECLINE };
		unsigned i;

		m.decline.token = lnk->decline_q[0].token;
		m.decline.reason = lnk->decline_q[0].reason;
		llc_encode(&m, msg);
		if (link_post(lnk, msg)) {
			lgr_fail_sched(lgr, -EIO);
			return;
		}
		for (i = 1; i < lnk->n_decline_q; i++)
			lnk->decline_q[i - 1] = lnk->decline_q[i];
		lnk->n_decline_q--;
	}
	while (!list_empty(&lnk->tx_wait)) {
		struct conn *c = list_entry(lnk->tx_wait.next, struct conn, tx_node);

		if (link_post_conn(lnk, c))
			break;
		list_del(&c->tx_node);
		conn_tx_posted(c);
	}
	link_uncork(lnk);
	link_run_draining(lnk);
	/* Still waiting for room or completions: ask to be told. */
	if (!list_empty(&lnk->tx_wait) || lnk->n_decline_q || !list_empty(&lnk->corked) ||
	    !list_empty(&lnk->draining) || lnk->test_rsp_owed)
		link_want_progress(lnk);
}

void link_tx_progress(struct link *lnk)
{
	/* The transport answered (or woke us anyway): a new request is
	 * needed for the next completion. */
	lnk->want_progress = false;
	link_run(lnk);
}

/* The end of a batch: one doorbell if anything was posted, then a second
 * look for completions that raced a progress request. */
void link_flush(struct link *lnk)
{
	if (link_failing(lnk)) {
		lnk->kick = false;	/* its transport may be gone */
		return;
	}
	if (lnk->kick) {
		lnk->kick = false;
		lnk->lgr->ops->flush(lnk);
	}
	if (!list_empty(&lnk->tx_wait) || lnk->n_decline_q || !list_empty(&lnk->corked) ||
	    !list_empty(&lnk->draining) || lnk->test_rsp_owed)
		link_run(lnk);
}

void link_rx(struct link *lnk, const uint8_t *msg, size_t len)
{
	struct lgr *lgr = lnk->lgr;
	struct proxy_stats *st = lgr->net->stats;
	struct conn *c;

	lnk->msgs_rx++;
	if (lgr->rx_batch != lgr->net->batch) {
		lgr->rx_batch = lgr->net->batch;
		lgr->rx_in_batch = 0;
	}
	lgr->rx_in_batch++;
	/* Anything the peer says proves it alive (liveness.c). */
	lnk->last_rx_ms = uv_now(lgr->net->loop);
	if (lgr->fail_sched)
		return;		/* the group goes at the end of the batch, its flows too */
	if (len && msg[0] == CDC_MSG_TYPE) {
		struct cdc_msg m;

		if (cdc_decode(msg, len, &m))
			goto out_bad;
		c = lgr_conn_find(lgr, m.token);
		if (c)
			conn_on_cdc(c, &m);
		return;	/* a stale token: the flow is gone, so is its interest */
	} else {
		struct llc_msg m;

		if (llc_decode(msg, len, &m))
			goto out_bad;
		switch (m.type) {
		case LLC_FLOW_OPEN:
			if (lgr->role != LGR_ROLE_SERVER)
				goto out_bad;
			lgr_on_flow_open(lnk, &m.open);
			return;
		case LLC_FLOW_ACCEPT:
			if (lgr->role != LGR_ROLE_CLIENT)
				goto out_bad;
			c = lgr_conn_find(lgr, m.accept.token);
			if (c)
				conn_on_accept(c, &m.accept);
			return;
		case LLC_FLOW_DECLINE:
			if (lgr->role != LGR_ROLE_CLIENT)
				goto out_bad;
			counter_inc(&st->declines_received[m.decline.reason]);
			c = lgr_conn_find(lgr, m.decline.token);
			if (c)
				conn_on_decline(c, m.decline.reason);
			return;
		case LLC_RMB_MOVE:
			c = lgr_conn_find(lgr, m.move.token);
			if (c)
				conn_on_move(c, &m.move);
			return;
		case LLC_TEST_LINK:
			link_post_test_rsp(lnk, m.test.cookie);
			return;
		case LLC_TEST_LINK_RSP:
			return;	/* heard: that was all it was for */
		case LLC_DELETE_LINK:
			link_on_delete(lnk, m.del.flags);
			return;
		}
	}
out_bad:
	/* A peer that sends garbage loses the link group, not the daemon. */
	counter_inc(&st->bad_messages);
	lgr_fail_sched(lgr, -EPROTO);
}
