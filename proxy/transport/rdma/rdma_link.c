/* SPDX-License-Identifier: MIT */
/*
 * An rdma link: its RC queue pair on a CQ of the pool, the send queue
 * that carries a link group's writes and messages, the receives, the
 * completions of both, and the link's life from creation to the teardown
 * markers, with keepalives and the reaping of links stuck draining. Apart
 * from rdma_cm (rdma_cm.c), which only drives a link's state, and from the
 * link group's memory (rdma_lgr.c), which the send queue only names.
 *
 * The send queue: SMC's CDC and our LLC messages go by SEND, always
 * signalled (a message's completion is what autocork waits for); RDMA
 * WRITEs are unsignalled, except one in every sq_depth/2, so that a queue
 * full of writes still completes. Work requests are queued in the link's
 * slot array and posted as one chain when the event-loop batch ends
 * (smc_transport_ops.flush): one doorbell for all of a batch's writes and
 * messages. A slot is taken per work request, so the queue never
 * overflows; writes that find no slot wait on the link and hold back the
 * messages (tx_room() 0) that would announce them.
 *
 * Teardown: a link's QP is moved to the error state and one more
 * signalled SEND and one receive are posted as markers. The queue pair
 * completes in order, so once both markers come back nothing of the link
 * is left in the CQ, which is shared, and its memory can go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/container.h"
#include "smc/conn.h"
#include "cq.h"
#include "core/loop.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "rdma-int.h"
#include "smc/rmb.h"
#include "verbs.h"

#define RDMA_KEEPALIVE_MS	5000	/* idle time before a TEST_LINK */
#define RDMA_DRAIN_MS		30000	/* markers that long overdue: give up */
#define RDMA_DRAIN_NEW_MS	1000	/* the same, for a link that never came up */

/* ------------------------------------------------------------------ */
/* The send queue. */

static unsigned rl_free_slots(const struct rdma_link *rl)
{
	uint32_t used = rl->sq_queued - rl->sq_done;

	return used >= rl->sq_depth ? 0 : rl->sq_depth - used;
}

/* Takes the next slot for a work request; the caller checked there is
 * one. Chained after the previous unposted one. */
static struct ibv_send_wr *rl_queue(struct rdma_link *rl, bool msg, bool signal)
{
	unsigned i = rl->sq_queued % rl->sq_depth;
	struct rdma_tx_slot *s = &rl->tx[i];
	struct ibv_send_wr *wr = &rl->wr[i];

	s->idx = rl->sq_queued;
	s->msg = msg;
	s->marker = false;
	if (rl->sq_queued - rl->last_signalled >= rl->sq_depth / 2)
		signal = true;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uintptr_t)&s->cqe;
	wr->sg_list = &rl->sge[i];
	wr->num_sge = 1;
	wr->send_flags = signal ? IBV_SEND_SIGNALED : 0;
	if (signal)
		rl->last_signalled = rl->sq_queued;
	if (rl->sq_queued != rl->sq_posted)
		rl->wr[(rl->sq_queued - 1) % rl->sq_depth].next = wr;
	rl->sq_queued++;
	return wr;
}

/* Hands every queued work request to the device in one call. */
static int rl_post(struct rdma_link *rl)
{
	struct ibv_send_wr *bad = NULL;
	uint64_t now;
	int err;

	if (rl->sq_posted == rl->sq_queued)
		return 0;
	rl->wr[(rl->sq_queued - 1) % rl->sq_depth].next = NULL;
	err = vb_post_send(rl->qp, &rl->wr[rl->sq_posted % rl->sq_depth], &bad);
	if (err)
		return -err;
	/* For the time a message takes to complete (a wire round trip,
	 * what autocork waits for): stats rdma.msg_complete_us. */
	now = uv_hrtime() / 1000;
	for (; rl->sq_posted != rl->sq_queued; rl->sq_posted++)
		rl->tx[rl->sq_posted % rl->sq_depth].posted_us = now;
	return 0;
}

/*
 * Whether the link can let its send completions wait for whatever wakes
 * the worker next: up, with a peer whose messages raise solicited events,
 * and nobody waiting for a completion (a progress request, bytes waiting
 * for slots). Called where one of these may change; one left out only
 * leaves the link loud, which costs a wake-up, not a stall, as long as
 * every change to loud is seen: a request (rdma__want_progress()), a
 * write that waits for slots, the link going down.
 */
void rl_quiet_update(struct rdma_link *rl)
{
	bool quiet = rl->state == RL_UP && rl->rg && rl->rg->peer_solicits && rl->lnk &&
		     !rl->lnk->want_progress && list_empty(&rl->write_wait) && rl->cq;

	if (quiet == rl->quiet)
		return;
	rl->quiet = quiet;
	cq_quiet(rl->cq, quiet);
}

/* Makes sure the link is flushed at the end of the batch. */
void rl_kick(struct rdma_link *rl)
{
	struct link *lnk = rl->lnk;

	if (!lnk->kick) {
		lnk->kick = true;
		smc_net__kick_link(lnk->lgr->net, lnk);
	}
}

static void rl_queue_write(struct rdma_link *rl, struct conn *c, uint32_t off, uint32_t len)
{
	const struct rdma_conn *rc = c->tx_priv;
	struct rdma_lgr *rg = rl->rg;
	struct ibv_send_wr *wr = rl_queue(rl, false, false);
	unsigned i = rl->sq_queued - 1;

	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->wr.rdma.remote_addr = rg->peer_addr + c->tx_peer_off + off;
	wr->wr.rdma.rkey = rc->rkey;
	rl->sge[i % rl->sq_depth] = (struct ibv_sge){
		.addr = (uintptr_t)(c->tx_ring + off),
		.length = len,
		.lkey = rc->mirror->key,
	};
	/* Inline copies at post time, which is the batch's end: the mirror
	 * bytes stay put until the peer consumes them, so that is safe. */
	if (rl->use_inline && len <= rl->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* Queues the bytes a conn could not queue before, while slots last. */
bool rc_queue_pending(struct rdma_link *rl, struct conn *c)
{
	struct rdma_conn *rc = c->tx_priv;

	while (rc->pending) {
		uint32_t len = rc->pending, first = c->tx_size - rc->wr_pos;

		if (!rl_free_slots(rl))
			return false;
		if (len > first)
			len = first;
		rl_queue_write(rl, c, rc->wr_pos, len);
		rc->wr_pos = (rc->wr_pos + len) % c->tx_size;
		rc->pending -= len;
	}
	return true;
}

static void rl_run_writes(struct rdma_link *rl)
{
	while (!list_empty(&rl->write_wait)) {
		struct rdma_conn *rc = list_entry(rl->write_wait.next, struct rdma_conn, wait_node);

		if (!rc_queue_pending(rl, rc->conn))
			return;
		list_del(&rc->wait_node);
	}
}

/* ------------------------------------------------------------------ */
/* Completions. */

static void rl_release_quarantine(struct rdma_link *rl)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &rl->quarantine) {
		struct rdma_quarantine *q = list_entry(pos, struct rdma_quarantine, node);

		if ((int32_t)(rl->sq_done - q->idx) < 0)
			break;	/* in queue order: the rest are younger */
		list_del(&q->node);
		rmb_put(&q->rg->tx_pool, q->mirror);
		free(q);
	}
}

static void rl_marker_done(struct rdma_link *rl)
{
	/* With a marker that could not be posted, the queue it was for may
	 * still hold work: rdma__reap_stuck() decides. */
	if (--rl->markers_left == 0 && !rl->markers_lost && !rl->held)
		rdma__link_free(rl);
}

/*
 * What every completion of rl says first: a teardown marker came back, the
 * link drains (what it still completes is dropped), or the work request
 * failed (the link goes down: the peer stopped answering, -ETIMEDOUT, or
 * anything else, -EIO; a receive never completes with a retry error).
 * True when none of these: the slot's work is there to be taken.
 */
static bool rl_completion_live(struct rdma_link *rl, bool marker, const struct ibv_wc *wc)
{
	if (marker) {
		rl_marker_done(rl);
		return false;
	}
	if (rl->state == RL_DRAINING)
		return false;
	if (wc->status != IBV_WC_SUCCESS) {
		rdma__link_down(rl, wc->status == IBV_WC_RETRY_EXC_ERR ? -ETIMEDOUT : -EIO);
		return false;
	}
	return true;
}

static void rdma_on_send(struct cq_entry *e, const struct ibv_wc *wc)
{
	struct rdma_tx_slot *s = (struct rdma_tx_slot *)e;
	struct rdma_link *rl = s->rl;
	struct link *lnk;

	if (!rl_completion_live(rl, s->marker, wc))
		return;
	rl->sq_done = s->idx + 1;
	/* Messages complete in order, and a completion covers every
	 * unsignalled work request before it. */
	if (s->msg) {
		struct proxy_stats *st = rl->dev->net->stats;

		rl->msg_done = s->seq + 1;
		counter_inc(&st->rdma_msg_completions);
		counter_add(&st->rdma_msg_complete_us, uv_hrtime() / 1000 - s->posted_us);
	}
	rl_release_quarantine(rl);
	lnk = rl->lnk;
	if (!list_empty(&rl->write_wait)) {
		rl_run_writes(rl);
		rl_kick(rl);
	}
	if (lnk->want_progress)
		link_tx_progress(lnk);
	if (rl->state == RL_UP)
		rl_quiet_update(rl);
}

static int rl_post_recv(struct rdma_link *rl, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rl->bufs + (rl->sq_depth + i) * LINK_MSG_LEN),
		.length = LINK_MSG_LEN,
		.lkey = rl->bufs_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)&rl->rx[i].cqe, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return -vb_post_recv(rl->qp, &wr, &bad);
}

/*
 * Server: a message came before rdma_cm said ESTABLISHED (the peer's side
 * comes up first, and its first message can overtake our event). The peer
 * sends only once all its links are up, which needs every one of ours
 * accepted: they are all up.
 */
static void rg_implicit_up(struct rdma_lgr *rg)
{
	unsigned i;

	for (i = 0; i < rg->lgr->n_links && rg->lgr->state == LGR_RENDEZVOUS; i++) {
		struct rdma_link *l = rg->links[i];

		if (l && l->state == RL_CONNECTING && l->qp)
			rl_established(l, 0);
	}
}

static void rdma_on_recv(struct cq_entry *e, const struct ibv_wc *wc)
{
	struct rdma_rx_slot *s = (struct rdma_rx_slot *)e;
	struct rdma_link *rl = s->rl;

	if (!rl_completion_live(rl, s->marker, wc))
		return;
	/* This link may have had its event already and another not yet. */
	if (rl->rg->lgr->state == LGR_RENDEZVOUS && rl->rg->lgr->role == LGR_ROLE_SERVER)
		rg_implicit_up(rl->rg);
	link_rx(rl->lnk, rl->bufs + (rl->sq_depth + s->i) * LINK_MSG_LEN, wc->byte_len);
	/* link_rx() only schedules failures (lgr.h), so the link is still up;
	 * a draining one must not take a receive after its marker, though. */
	if (rl->state != RL_DRAINING && rl_post_recv(rl, s->i))
		rdma__link_down(rl, -EIO);
}

/* ------------------------------------------------------------------ */
/* The transport interface: a link's send queue. */

unsigned rdma__tx_room(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;

	if (!rl || rl->state != RL_UP || !list_empty(&rl->write_wait))
		return 0;
	return rl_free_slots(rl);
}

int rdma__post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN])
{
	struct rdma_link *rl = lnk->tp;
	struct ibv_send_wr *wr;
	unsigned i;
	uint8_t *buf;

	if (!rl || rl->state != RL_UP || !rl_free_slots(rl))
		return -ENOBUFS;
	wr = rl_queue(rl, true, true);
	i = (rl->sq_queued - 1) % rl->sq_depth;
	rl->tx[i].seq = lnk->tx_seq;
	/* The peer's CQ may be armed for solicited events only. */
	wr->send_flags |= IBV_SEND_SOLICITED;
	buf = rl->bufs + i * LINK_MSG_LEN;
	memcpy(buf, msg, LINK_MSG_LEN);
	wr->opcode = IBV_WR_SEND;
	rl->sge[i] = (struct ibv_sge){
		.addr = (uintptr_t)buf, .length = LINK_MSG_LEN, .lkey = rl->bufs_mr->lkey,
	};
	if (rl->use_inline && LINK_MSG_LEN <= rl->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
	return 0;
}

void rdma__flush(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;
	int err;

	if (!rl || rl->state != RL_UP)
		return;
	err = rl_post(rl);
	if (err)
		rdma__link_down(rl, err);
	else
		rl->last_tx_ms = uv_now(rl->dev->net->loop);
}

uint32_t rdma__tx_done(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;

	return rl ? rl->msg_done : lnk->tx_seq;
}

void rdma__want_progress(struct link *lnk)
{
	/* Every message is signalled, and a full queue holds a signalled
	 * write: a completion always comes while anything is in flight; its
	 * event too, once the link is loud. */
	if (lnk->tp)
		rl_quiet_update(lnk->tp);
}

/* ------------------------------------------------------------------ */
/* Links: creation, connection, teardown. */

/* The device side of a link: queue pair, id, CQ room, buffer registration
 * and its group's protection domain. Safe to call twice. */
static void rl_release_hw(struct rdma_link *rl)
{
	if (rl->qp)
		rdma_destroy_qp(rl->id);
	if (rl->id)
		rdma_destroy_id(rl->id);
	if (rl->quiet)
		cq_quiet(rl->cq, false);
	rl->quiet = false;
	cq_put(rl->cq, rl->sq_depth + rl->rq_depth + 2);
	if (rl->bufs_mr)
		ibv_dereg_mr(rl->bufs_mr);
	rdma__dom_put(rl->dom);
	rl->qp = NULL;
	rl->id = NULL;
	rl->cq = NULL;
	rl->bufs_mr = NULL;
	rl->dom = NULL;
}

void rl_free_now(struct rdma_link *rl)
{
	rl_release_hw(rl);
	free(rl->bufs);
	free(rl->tx);
	free(rl->wr);
	free(rl->sge);
	free(rl->rx);
	free(rl);
}

static void rl_reap(struct loop_defer *d)
{
	struct rdma_link *rl = container_of(d, struct rdma_link, defer);

	if (!list_empty(&rl->zombie_node)) {
		list_del(&rl->zombie_node);
		rl->dev->n_zombies--;
		counter_set(&rl->dev->net->stats->rdma_links_draining, rl->dev->n_zombies);
	}
	rl_free_now(rl);
}

/* Both markers came back: nothing of the link is left in the CQ. Freed at
 * the end of the batch, after the completions polled with the markers. */
void rdma__link_free(struct rdma_link *rl)
{
	loop_defer(rl->dev->net->core, &rl->defer, rl_reap);
}

struct rdma_link *rl_new(struct rdma_dev *dev, struct rdma_lgr *rg, unsigned idx)
{
	const struct cfg *cfg = dev->net->cfg;
	struct rdma_link *rl = calloc(1, sizeof(*rl));
	unsigned i;

	if (!rl)
		return NULL;
	rl->dev = dev;
	rl->rg = rg;
	rl->lnk = &rg->lgr->links[idx];
	rl->sq_depth = cfg->rdma.sq_depth;
	rl->rq_depth = cfg->rdma.rq_depth;
	rl->use_inline = cfg->rdma.inline_data;
	list_init(&rl->write_wait);
	list_init(&rl->quarantine);
	list_init(&rl->zombie_node);
	list_init(&rl->defer.node);
	/* One more of each for the teardown markers. */
	rl->tx = calloc(rl->sq_depth + 1, sizeof(*rl->tx));
	rl->wr = calloc(rl->sq_depth, sizeof(*rl->wr));
	rl->sge = calloc(rl->sq_depth, sizeof(*rl->sge));
	rl->rx = calloc(rl->rq_depth + 1, sizeof(*rl->rx));
	rl->bufs = calloc(rl->sq_depth + rl->rq_depth + 1, LINK_MSG_LEN);
	if (!rl->tx || !rl->wr || !rl->sge || !rl->rx || !rl->bufs)
		goto out_free;
	rl->dom = rg->dom;
	rl->dom->refs++;
	rl->bufs_mr = ibv_reg_mr(rl->dom->pd, rl->bufs,
				 (size_t)(rl->sq_depth + rl->rq_depth + 1) * LINK_MSG_LEN,
				 IBV_ACCESS_LOCAL_WRITE);
	if (!rl->bufs_mr)
		goto out_free;
	for (i = 0; i <= rl->sq_depth; i++) {
		rl->tx[i].cqe.done = rdma_on_send;
		rl->tx[i].rl = rl;
	}
	rl->tx[rl->sq_depth].marker = true;
	for (i = 0; i <= rl->rq_depth; i++) {
		rl->rx[i].cqe.done = rdma_on_recv;
		rl->rx[i].rl = rl;
		rl->rx[i].i = i;
	}
	rl->rx[rl->rq_depth].marker = true;
	rg->links[idx] = rl;
	rl->lnk->tp = rl;
	return rl;

out_free:
	rl_free_now(rl);
	return NULL;
}

/* The QP on rl->id, sharing a CQ of the pool, with its receives posted. */
int rl_create_qp(struct rdma_link *rl)
{
	struct rdma_dev *dev = rl->dev;
	struct ibv_qp_init_attr attr = { 0 };
	unsigned i;
	int err;

	if (rl->id->verbs != dev->ctx)
		return -ENODEV;	/* another device than ours: unsupported */
	rl->cq = cq_get(&dev->cqs, rl->sq_depth + rl->rq_depth + 2);
	if (!rl->cq)
		return -ENOBUFS;	/* the CQ pool is full: out_of_memory, not max_flows */
	attr.qp_context = rl;
	attr.send_cq = rl->cq->cq;
	attr.recv_cq = rl->cq->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = rl->sq_depth + 1;
	attr.cap.max_recv_wr = rl->rq_depth + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rl->use_inline ? LINK_MSG_LEN : 0;
	if (rdma_create_qp(rl->id, rl->dom->pd, &attr)) {
		/* A device without inline sends still works without it. */
		attr.cap.max_inline_data = 0;
		if (!rl->use_inline || rdma_create_qp(rl->id, rl->dom->pd, &attr))
			return -errno;
	}
	rl->qp = rl->id->qp;
	rl->max_inline = attr.cap.max_inline_data;
	for (i = 0; i < rl->rq_depth; i++) {
		err = rl_post_recv(rl, i);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A link is gone: failure (err), or its group is closing (err 0). Its QP
 * goes to the error state, the peer learns by rdma_cm, and the markers go
 * in; the memory waits for them. At the end of the batch the group moves
 * the link's flows elsewhere, or fails when none is left: this runs inside
 * completion and rdma_cm handlers (lgr.h, "Failure").
 */
void rdma__link_down(struct rdma_link *rl, int err)
{
	struct rdma_dev *dev = rl->dev;
	struct rdma_lgr *rg = rl->rg;
	struct link *lnk = rl->lnk;
	struct list_head *pos, *tmp;
	bool was_up = rl->state == RL_UP;

	if (rl->state == RL_DRAINING)
		return;
	rl->state = RL_DRAINING;
	list_for_each_safe(pos, tmp, &rl->write_wait)
		list_del(pos);
	rl_quiet_update(rl);	/* its markers' completions must wake us */
	/* In the error state the device reads no mirror any more. */
	list_for_each_safe(pos, tmp, &rl->quarantine) {
		struct rdma_quarantine *q = list_entry(pos, struct rdma_quarantine, node);

		list_del(&q->node);
		rmb_put(&q->rg->tx_pool, q->mirror);
		free(q);
	}
	if (rg) {
		rg->links[lnk->idx] = NULL;
		if (was_up)
			rg->n_up--;
	}
	rl->rg = NULL;
	rl->lnk = NULL;
	rl->drain_since_ms = uv_now(dev->net->loop);
	list_add_tail(&rl->zombie_node, &dev->zombies);
	dev->n_zombies++;
	counter_set(&dev->net->stats->rdma_links_draining, dev->n_zombies);
	if (rl->qp) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
		struct ibv_send_wr swr = {
			.wr_id = (uintptr_t)&rl->tx[rl->sq_depth].cqe,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		};
		struct ibv_recv_wr rwr = { .wr_id = (uintptr_t)&rl->rx[rl->rq_depth].cqe };
		struct ibv_send_wr *sbad;
		struct ibv_recv_wr *rbad;

		/*
		 * The receive marker goes in before the transition: rxe
		 * flushes the receive queue when the QP enters the error
		 * state and never looks at it again (user receives ring no
		 * doorbell). The send marker goes after, or it would be sent.
		 * A device that takes neither leaves us no way to know when
		 * the CQ is clean of this link: rdma__reap_stuck() gives up
		 * on it later, keeping what a completion could name.
		 */
		rl->markers_left = 2;
		if (vb_post_recv(rl->qp, &rwr, &rbad))
			rl->markers_lost = true;
		rdma_disconnect(rl->id);
		ibv_modify_qp(rl->qp, &qa, IBV_QP_STATE);
		if (vb_post_send(rl->qp, &swr, &sbad))
			rl->markers_lost = true;
	} else if (!rl->held) {
		rdma__link_free(rl);	/* never had a QP: nothing in the CQ */
	}
	/* The link still answers tx_done() with what really completed when
	 * its failure is scheduled: that is where its flows' replay starts. */
	if (lnk && err) {
		counter_inc(&dev->net->stats->rdma_link_failures);
		lgr_link_down_sched(lnk, err);
	}
	if (lnk)
		lnk->tp = NULL;
}

/*
 * A live link fails (the peer disconnected, our port went down, an
 * operator failed it). What completed before is in our CQ, and the peer
 * counts it delivered (a FIN, a CLOSED: a side that released its flow
 * never sends them again), but a draining link drops what it receives.
 * So the CQ is polled first, while the link still takes its messages,
 * and only then is the link taken down. rl is held across the poll: a
 * completion there may fail the whole group, and the markers that then
 * go in could complete in the same poll and free it.
 */
void rdma__link_fail(struct rdma_link *rl, int err)
{
	rl->held = true;
	if (rl->cq)
		cq_poll(rl->cq, true);
	rl->held = false;
	if (rl->state == RL_UP) {
		rdma__link_down(rl, err);
		return;
	}
	/* Went down during the poll: free it if that waited for us. */
	if (!rl->qp || (!rl->markers_left && !rl->markers_lost))
		rdma__link_free(rl);
}

/* A link came up: the group is ready once all have. */
void rl_established(struct rdma_link *rl, uint32_t peer_qpn)
{
	struct rdma_lgr *rg = rl->rg;
	struct lgr *lgr = rg->lgr;

	rl->state = RL_UP;
	rl->ever_up = true;
	rl->last_tx_ms = uv_now(rl->dev->net->loop);
	if (peer_qpn)
		rl->peer_qpn = peer_qpn;	/* the server learnt it from the request */
	rl->msg_done = rl->lnk->tx_seq;
	rg->n_up++;
	rl_quiet_update(rl);
	if (lgr->state == LGR_RENDEZVOUS && rg->n_up == lgr->n_links)
		lgr__established(lgr);
}

/*
 * fn(rl, arg) on each link of each active rdma group of net, up or not:
 * the sweeps' keepalives, a port that went down. A group's links[] is
 * read again at each step: fn may take a link down, and a live link's
 * drain can take another down with it (a failed completion).
 */
void rdma__each_link(struct smc_net *net, void (*fn)(struct rdma_link *rl, void *arg), void *arg)
{
	struct list_head *next;
	struct lgr *lgr;
	unsigned i;

	lgr_for_each_active(lgr, next, net, &rdma_ops) {
		struct rdma_lgr *rg = lgr->tp;

		for (i = 0; rg && i < lgr->n_links; i++)
			if (rg->links[i])
				fn(rg->links[i], arg);
	}
}

/* An up link idle for RDMA_KEEPALIVE_MS gets a TEST_LINK (arg: now). */
static void rl_keepalive(struct rdma_link *rl, void *arg)
{
	uint64_t now = *(const uint64_t *)arg;

	if (rl->state != RL_UP || now - rl->last_tx_ms < RDMA_KEEPALIVE_MS)
		return;
	rl->last_tx_ms = now;	/* once per period even if it found no room */
	link_post_test(rl->lnk, (uint32_t)now);
}

/* Idle links get a TEST_LINK now and then (link_post_test()). */
void rdma__keepalive(struct smc_net *net)
{
	uint64_t now = uv_now(net->loop);

	rdma__each_link(net, rl_keepalive, &now);
}

/*
 * A link whose markers never came back (a device that does not flush a
 * queue pair that never ran, seen with rxe on connections a hostile peer
 * left half-open): its queue pair, id, buffers and protection domain go,
 * but the slots that completions name stay, should one still come.
 */
void rdma__reap_stuck(struct rdma_dev *dev, uint64_t now)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &dev->zombies) {
		struct rdma_link *rl = list_entry(pos, struct rdma_link, zombie_node);

		if ((!rl->markers_left && !rl->markers_lost) || !rl->qp ||
		    now - rl->drain_since_ms < (rl->ever_up ? RDMA_DRAIN_MS : RDMA_DRAIN_NEW_MS))
			continue;
		rl_release_hw(rl);
		/* Off the draining list (a late marker still frees it). */
		list_del(&rl->zombie_node);
		dev->n_zombies--;
		counter_set(&dev->net->stats->rdma_links_draining, dev->n_zombies);
		counter_inc(&dev->net->stats->rdma_links_stuck);
	}
}
