/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport (SMC-R): each link is an RC queue pair connected by
 * rdma_cm. Per link group, each side has two regions: the receive rings
 * the peer writes into (REMOTE_WRITE), and the mirrors of the peer's rings
 * its own flows write into before an RDMA WRITE carries the bytes across
 * (the socket read is the one copy; a mirror has the peer ring's size, so
 * a write lands at the same offset). A ring is registered when it is first
 * carved and stays registered while it is reused: no registration per
 * flow, and only rings in use are pinned, within buffers.pool per worker
 * for each of the two kinds.
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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "smc/conn.h"
#include "smc/cursor.h"
#include "cq.h"
#include "core/epset.h"
#include "core/loop.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "rdma.h"
#include "rdma_pd.h"
#include "smc/rmb.h"
#include "smc/transport.h"
#include "verbs.h"

#define RDMA_REGION_MAX		(1u << 30)
#define RDMA_RESOLVE_MS		2000
#define RDMA_CQ_SIZE		16384	/* entries per CQ; links take theirs */
#define RDMA_KEEPALIVE_MS	5000	/* idle time before a TEST_LINK */
#define RDMA_DRAIN_MS		30000	/* markers that long overdue: give up */
#define RDMA_DRAIN_NEW_MS	1000	/* the same, for a link that never came up */

enum rdma_link_state {
	RL_CONNECTING,
	RL_UP,
	RL_DRAINING,		/* QP in error: waiting for the markers */
};

struct rdma_link;

struct rdma_tx_slot {
	struct cq_entry cqe;
	struct rdma_link *rl;
	uint32_t idx;		/* sq_queued value when queued */
	uint32_t seq;		/* message sequence, when msg */
	bool msg;
	bool marker;
};

struct rdma_rx_slot {
	struct cq_entry cqe;
	struct rdma_link *rl;
	unsigned i;
	bool marker;
};

/* Per worker: the device, the listener and the CQ pool. */
struct rdma_dev {
	struct smc_net *net;
	struct ibv_context *ctx;
	uint8_t port;
	union ibv_gid gid;
	char name[32];
	bool relaxed_ok;
	struct rdma_event_channel *ech;
	struct epset_entry ech_ev;
	struct rdma_cm_id *listen_id;
	uint16_t cm_port;
	bool owns_async;	/* worker 0 reads the device's async events */
	struct epset_entry async_ev;
	unsigned port_gen;	/* the async generation last acted on */
	struct cq_pool cqs;
	struct rmb_budget tx_budget;	/* mirrors: buffers.pool, like the rings */
	struct list_head zombies;	/* links waiting for their markers */
	unsigned n_zombies;
};

struct rdma_lgr;

struct rdma_link {
	struct rdma_dev *dev;
	struct rdma_dom *dom;		/* its group's, held until freed */
	struct rdma_lgr *rg;		/* NULL once draining */
	struct link *lnk;		/* NULL once draining */
	enum rdma_link_state state;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct cq *cq;
	uint32_t peer_qpn;
	unsigned sq_depth, rq_depth;
	unsigned max_inline;
	bool use_inline;
	/* Send queue: slots in queue order. */
	uint32_t sq_queued;		/* work requests queued so far */
	uint32_t sq_posted;		/* of which handed to the device */
	uint32_t sq_done;		/* known completed */
	uint32_t last_signalled;	/* sq_queued at the last signalled WR */
	uint32_t msg_done;		/* message sequence not yet completed */
	struct list_head write_wait;	/* rdma_conns with unqueued bytes */
	struct list_head quarantine;	/* mirrors not yet safe to reuse */
	struct rdma_tx_slot *tx;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	struct rdma_rx_slot *rx;
	uint8_t *bufs;			/* sq_depth + rq_depth messages */
	struct ibv_mr *bufs_mr;
	unsigned markers_left;
	bool markers_lost;		/* one could not be posted */
	bool held;			/* its CQ is polled for it: not freed meanwhile */
	uint64_t last_tx_ms;		/* last doorbell: the link was used */
	uint64_t drain_since_ms;
	bool ever_up;
	struct list_head zombie_node;	/* dev->zombies, once draining */
	struct loop_defer defer;
};

struct rdma_lgr {
	struct lgr *lgr;
	struct rdma_dev *dev;
	struct rdma_dom *dom;
	uint8_t *rx;			/* our rings: the peer writes here */
	uint32_t rx_size;
	uint8_t *tx;			/* mirrors of the peer's rings */
	uint32_t tx_size;
	struct rmb_pool tx_pool;
	bool have_peer;
	uint64_t peer_addr;
	uint32_t peer_size;
	uint16_t peer_port;		/* client: the peer's listener */
	unsigned n_up;
	struct rdma_link *links[LGR_LINKS_MAX];
};

/*
 * The protection domain of one link group: its rings, its links' queue
 * pairs and buffers, so that an rkey a peer got for one group's ring is
 * useless over another group's queue pair. Links that drain after their
 * group closed hold it until they are freed.
 */
struct rdma_dom {
	struct ibv_pd *pd;
	unsigned refs;
};

static struct rdma_dom *rdma_dom_new(struct ibv_context *ctx)
{
	struct rdma_dom *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pd = ibv_alloc_pd(ctx);
	if (!d->pd) {
		free(d);
		return NULL;
	}
	d->refs = 1;
	return d;
}

static void rdma_dom_put(struct rdma_dom *d)
{
	if (d && --d->refs == 0) {
		ibv_dealloc_pd(d->pd);
		free(d);
	}
}

/* Per flow: the mirror and the bytes not yet queued as writes. */
struct rdma_conn {
	struct conn *conn;
	struct rmb *mirror;
	uint32_t rkey;			/* of the peer's ring */
	uint32_t wr_pos;		/* ring offset of the first unqueued byte */
	uint32_t pending;		/* bytes from wr_pos not yet queued */
	struct list_head wait_node;	/* rl->write_wait */
};

/* A mirror that writes may still read: back to the pool once sq_done
 * passes idx. */
struct rdma_quarantine {
	struct list_head node;
	struct rmb *mirror;
	struct rdma_lgr *rg;
	uint32_t idx;
};

/* Port events, seen by the worker that owns the device's async fd and
 * acted on by every worker at its next sweep. */
static atomic_uint rdma_port_gen;

static void rdma_link_down(struct rdma_link *rl, int err);
static void rdma_link_free(struct rdma_link *rl);
static void rl_peer_disconnected(struct rdma_link *rl);
static void rdma_flush(struct link *lnk);

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
	int err;

	if (rl->sq_posted == rl->sq_queued)
		return 0;
	rl->wr[(rl->sq_queued - 1) % rl->sq_depth].next = NULL;
	err = vb_post_send(rl->qp, &rl->wr[rl->sq_posted % rl->sq_depth], &bad);
	if (err)
		return -err;
	rl->sq_posted = rl->sq_queued;
	return 0;
}

/* Makes sure the link is flushed at the end of the batch. */
static void rl_kick(struct rdma_link *rl)
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
static bool rc_queue_pending(struct rdma_link *rl, struct conn *c)
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
	 * still hold work: rdma_reap_stuck() decides. */
	if (--rl->markers_left == 0 && !rl->markers_lost && !rl->held)
		rdma_link_free(rl);
}

static void rdma_on_send(struct cq_entry *e, const struct ibv_wc *wc)
{
	struct rdma_tx_slot *s = (struct rdma_tx_slot *)e;
	struct rdma_link *rl = s->rl;
	struct link *lnk;

	if (s->marker) {
		rl_marker_done(rl);
		return;
	}
	if (rl->state == RL_DRAINING)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		rdma_link_down(rl, wc->status == IBV_WC_RETRY_EXC_ERR ? -ETIMEDOUT : -EIO);
		return;
	}
	rl->sq_done = s->idx + 1;
	/* Messages complete in order, and a completion covers every
	 * unsignalled work request before it. */
	if (s->msg)
		rl->msg_done = s->seq + 1;
	rl_release_quarantine(rl);
	lnk = rl->lnk;
	if (!list_empty(&rl->write_wait)) {
		rl_run_writes(rl);
		rl_kick(rl);
	}
	if (lnk->want_progress)
		link_tx_progress(lnk);
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

static void rl_established(struct rdma_link *rl, uint32_t peer_qpn);

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

	if (s->marker) {
		rl_marker_done(rl);
		return;
	}
	if (rl->state == RL_DRAINING)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		rdma_link_down(rl, -EIO);
		return;
	}
	/* This link may have had its event already and another not yet. */
	if (rl->rg->lgr->state == LGR_RENDEZVOUS && rl->rg->lgr->role == LGR_ROLE_SERVER)
		rg_implicit_up(rl->rg);
	link_rx(rl->lnk, rl->bufs + (rl->sq_depth + s->i) * LINK_MSG_LEN, wc->byte_len);
	/* link_rx() only schedules failures (lgr.h), so the link is still up;
	 * a draining one must not take a receive after its marker, though. */
	if (rl->state != RL_DRAINING && rl_post_recv(rl, s->i))
		rdma_link_down(rl, -EIO);
}

/* ------------------------------------------------------------------ */
/* The transport interface. */

static unsigned rdma_tx_room(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;

	if (!rl || rl->state != RL_UP || !list_empty(&rl->write_wait))
		return 0;
	return rl_free_slots(rl);
}

static int rdma_post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN])
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

static void rdma_flush(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;
	int err;

	if (!rl || rl->state != RL_UP)
		return;
	err = rl_post(rl);
	if (err)
		rdma_link_down(rl, err);
	else
		rl->last_tx_ms = uv_now(rl->dev->net->loop);
}

static uint32_t rdma_tx_done(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;

	return rl ? rl->msg_done : lnk->tx_seq;
}

static void rdma_want_progress(struct link *lnk)
{
	/* Every message is signalled, and a full queue holds a signalled
	 * write: a completion always comes while anything is in flight. */
}

static int rdma_conn_attach(struct conn *c, const struct llc_rmb *rmb)
{
	struct rdma_lgr *rg = c->lgr->tp;
	struct rdma_conn *rc;

	if (!rg || !rg->have_peer || rmb->offset > rg->peer_size ||
	    rmb->size > rg->peer_size - rmb->offset || rmb_class(rmb->size) < 0)
		return -EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	/* The mirror must have exactly the peer ring's size: offsets are
	 * shared. A smaller class would not do. */
	rc->mirror = rmb_get(&rg->tx_pool, rmb->size);
	if (!rc->mirror || rc->mirror->size != rmb->size) {
		rmb_put(&rg->tx_pool, rc->mirror);
		free(rc);
		return -ENOMEM;
	}
	list_init(&rc->wait_node);
	rc->conn = c;
	rc->rkey = rmb->key;
	c->tx_priv = rc;
	c->tx_ring = rg->tx + rc->mirror->offset;
	return 0;
}

static void rdma_conn_detach(struct conn *c)
{
	struct rdma_conn *rc = c->tx_priv;
	struct rdma_lgr *rg = c->lgr->tp;
	struct rdma_link *rl = c->link ? c->link->tp : NULL;

	c->tx_ring = NULL;
	c->tx_priv = NULL;
	if (!rc)
		return;
	list_del(&rc->wait_node);
	if (rg && rl && rl->state == RL_UP && rl->sq_done != rl->sq_queued) {
		struct rdma_quarantine *q = malloc(sizeof(*q));

		if (q) {
			q->mirror = rc->mirror;
			q->rg = rg;
			q->idx = rl->sq_queued;
			list_add_tail(&q->node, &rl->quarantine);
			free(rc);
			return;
		}
		/* No memory to remember it: leak the mirror rather than let
		 * a new flow overwrite bytes a write still reads. */
		free(rc);
		return;
	}
	if (rg)
		rmb_put(&rg->tx_pool, rc->mirror);
	free(rc);
}

static int rdma_write(struct conn *c, uint32_t off, uint32_t len)
{
	struct rdma_conn *rc = c->tx_priv;
	struct rdma_link *rl = c->link->tp;

	if (!rl || rl->state != RL_UP)
		return -ENOTCONN;
	if (!rc->pending)
		rc->wr_pos = off;
	rc->pending += len;
	if (!list_empty(&rc->wait_node) || !list_empty(&rl->write_wait) ||
	    !rc_queue_pending(rl, c)) {
		if (list_empty(&rc->wait_node))
			list_add_tail(&rc->wait_node, &rl->write_wait);
	}
	rl_kick(rl);
	return 0;
}

static void rdma_conn_moved(struct conn *c)
{
	struct rdma_conn *rc = c->tx_priv;
	struct rdma_link *rl = c->link->tp;

	if (!rc || !rl)
		return;
	/*
	 * What the peer may not have is written again on the new link:
	 * bytes it already had are rewritten with the same values at the
	 * same place, and it reads none of them before the CDC that follows
	 * announces them. No byte is lost or duplicated.
	 */
	list_del(&rc->wait_node);
	rc->wr_pos = c->tx_prod_done.count;
	rc->pending = (uint32_t)cursor_diff(c->tx_prod_done, c->tx_prod, c->tx_size);
	if (rc->pending && (!list_empty(&rl->write_wait) || !rc_queue_pending(rl, c)))
		list_add_tail(&rc->wait_node, &rl->write_wait);
	rl_kick(rl);
}

static void rdma_lgr_close(struct lgr *lgr)
{
	struct rdma_lgr *rg = lgr->tp;
	unsigned i;

	if (!rg)
		return;
	for (i = 0; i < LGR_LINKS_MAX; i++) {
		struct rdma_link *rl = rg->links[i];

		if (!rl)
			continue;
		rdma_link_down(rl, 0);
		if (i < lgr->n_links)
			lgr->links[i].tp = NULL;
	}
	/* The QPs are in the error state: no more DMA to or from these. The
	 * receive rings' registrations go with their pool, here, while rg
	 * (the pool's context) lives. */
	rmb_pool_close(&lgr->rmbs);
	lgr->rmbs.ops = NULL;
	rmb_pool_close(&rg->tx_pool);
	rdma_dom_put(rg->dom);
	if (rg->rx)
		munmap(rg->rx, rg->rx_size);
	if (rg->tx)
		munmap(rg->tx, rg->tx_size);
	free(rg);
	lgr->tp = NULL;
	lgr->region = NULL;
}

static int rdma_init(struct smc_net *net, char *errbuf, size_t errlen);
static void rdma_close(struct smc_net *net);
static bool rdma_before_sleep(struct smc_net *net, bool run);
static bool rdma_poll(struct smc_net *net);
static void rdma_sweep(struct smc_net *net, uint64_t now);
static int rdma_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len);
static int rdma_addr_usable(const uint8_t *v, size_t len);
static bool rdma_can_serve(struct smc_net *net, const struct clc_proposal *pr);
static int rdma_lgr_prepare(struct lgr *lgr);
static int rdma_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len);
static int rdma_link_info(const struct link *lnk, struct smc_fields *out);
static int rdma_pool_info(struct smc_net *net, unsigned i, struct smc_fields *out);
static int rdma_link_fail(struct link *lnk);

/* In the registry's table (transports.c). */
const struct smc_transport_ops rdma_ops = {
	.name = "rdma",
	.mode = FLOW_MODE_RDMA,
	.clc_bit = CLC_TR_RDMA,
	.clc_tlv = CLC_TLV_RDMA_ADDR,
	.serves = "on other hosts",
	.needs_control = true,
	.init = rdma_init,
	.close = rdma_close,
	.before_sleep = rdma_before_sleep,
	.poll = rdma_poll,
	.sweep = rdma_sweep,
	.addr_encode = rdma_addr_encode,
	.addr_check = rdma_tlv_check,
	.addr_usable = rdma_addr_usable,
	.can_serve = rdma_can_serve,
	.lgr_prepare = rdma_lgr_prepare,
	.lgr_connect = rdma_lgr_connect,
	.tx_room = rdma_tx_room,
	.post = rdma_post,
	.flush = rdma_flush,
	.tx_done = rdma_tx_done,
	.want_progress = rdma_want_progress,
	.conn_attach = rdma_conn_attach,
	.conn_detach = rdma_conn_detach,
	.conn_moved = rdma_conn_moved,
	.write = rdma_write,
	.lgr_close = rdma_lgr_close,
	.link_info = rdma_link_info,
	.pool_name = "cq",
	.pool_info = rdma_pool_info,
	.link_fail = rdma_link_fail,
};

/* The worker's device side (net->tp[]), NULL when rdma is off. */
static struct rdma_dev *rdma_dev_of(const struct smc_net *net)
{
	return net->tp[smc_transport_slot(&rdma_ops)];
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
	cq_put(rl->cq, rl->sq_depth + rl->rq_depth + 2);
	if (rl->bufs_mr)
		ibv_dereg_mr(rl->bufs_mr);
	rdma_dom_put(rl->dom);
	rl->qp = NULL;
	rl->id = NULL;
	rl->cq = NULL;
	rl->bufs_mr = NULL;
	rl->dom = NULL;
}

static void rl_free_now(struct rdma_link *rl)
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
	struct rdma_link *rl = (struct rdma_link *)((char *)d - offsetof(struct rdma_link, defer));

	if (!list_empty(&rl->zombie_node)) {
		list_del(&rl->zombie_node);
		rl->dev->n_zombies--;
		counter_set(&rl->dev->net->stats->rdma_links_draining, rl->dev->n_zombies);
	}
	rl_free_now(rl);
}

/* Both markers came back: nothing of the link is left in the CQ. Freed at
 * the end of the batch, after the completions polled with the markers. */
static void rdma_link_free(struct rdma_link *rl)
{
	loop_defer(rl->dev->net->core, &rl->defer, rl_reap);
}

static struct rdma_link *rl_new(struct rdma_dev *dev, struct rdma_lgr *rg, unsigned idx)
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
static int rl_create_qp(struct rdma_link *rl)
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

static void rl_fill_pd(const struct rdma_link *rl, uint8_t out[RDMA_PD_LEN])
{
	const struct rdma_lgr *rg = rl->rg;
	struct rdma_pd pd = {
		.link = (uint8_t)rl->lnk->idx,
		.addr = (uintptr_t)rg->rx,
		.rkey = 0,	/* reserved: each ring has its own key */
		.size = rg->rx_size,
	};

	memcpy(pd.lgr_id, rg->lgr->id, CLC_LGR_ID_LEN);
	rdma_pd_encode(&pd, out);
}

static void rl_conn_param(struct rdma_conn_param *cp, const uint8_t *pd)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pd;
	cp->private_data_len = RDMA_PD_LEN;
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;	/* receives come back quickly: wait */
}

/* The peer's region, the same for every link of the group. */
static int rg_set_peer(struct rdma_lgr *rg, const struct rdma_pd *pd)
{
	if (memcmp(pd->lgr_id, rg->lgr->id, CLC_LGR_ID_LEN))
		return -EPROTO;
	if (rg->have_peer)
		return rg->peer_addr == pd->addr && rg->peer_size == pd->size ? 0 : -EPROTO;
	if (pd->size < RMB_MIN_SIZE)
		return -EPROTO;
	rg->peer_addr = pd->addr;
	rg->peer_size = pd->size;
	rg->have_peer = true;
	return 0;
}

/*
 * A link is gone: failure (err), or its group is closing (err 0). Its QP
 * goes to the error state, the peer learns by rdma_cm, and the markers go
 * in; the memory waits for them. At the end of the batch the group moves
 * the link's flows elsewhere, or fails when none is left: this runs inside
 * completion and rdma_cm handlers (lgr.h, "Failure").
 */
static void rdma_link_down(struct rdma_link *rl, int err)
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
		 * the CQ is clean of this link: rdma_reap_stuck() gives up
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
		rdma_link_free(rl);	/* never had a QP: nothing in the CQ */
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

/* ------------------------------------------------------------------ */
/* Link groups. */

/* Address space only: pages are pinned ring by ring as they are carved. */
static void *rdma_region(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/*
 * A receive ring: local write, remote write, and relaxed ordering, which
 * lets the device reorder the PCIe writes of one RDMA WRITE (the CDC that
 * announces them still comes after); devices that refuse it get it
 * without, from then on.
 */
static int rdma_rx_carve(void *ctx, struct rmb *r)
{
	struct rdma_lgr *rg = ctx;
	struct rdma_dev *dev = rg->dev;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr = NULL;

	if (dev->relaxed_ok)
		mr = ibv_reg_mr(rg->dom->pd, rg->rx + r->offset, r->size,
				access | IBV_ACCESS_RELAXED_ORDERING);
	if (!mr) {
		mr = ibv_reg_mr(rg->dom->pd, rg->rx + r->offset, r->size, access);
		/* Refused with the flag only: the device lacks it, for good.
		 * Refused both ways: memory or memlock, not the flag. */
		if (mr && dev->relaxed_ok)
			dev->relaxed_ok = false;
	}
	if (!mr)
		return errno ? -errno : -ENOMEM;
	r->mr = mr;
	r->key = mr->rkey;
	return 0;
}

/* A mirror: only the device reads it, for our RDMA WRITEs. */
static int rdma_tx_carve(void *ctx, struct rmb *r)
{
	struct rdma_lgr *rg = ctx;
	struct ibv_mr *mr = ibv_reg_mr(rg->dom->pd, rg->tx + r->offset, r->size,
				       IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		return errno ? -errno : -ENOMEM;
	r->mr = mr;
	r->key = mr->lkey;
	return 0;
}

static void rdma_rmb_release(void *ctx, struct rmb *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	r->mr = NULL;
}

static const struct rmb_ops rdma_rx_rmb_ops = { rdma_rx_carve, rdma_rmb_release };
static const struct rmb_ops rdma_tx_rmb_ops = { rdma_tx_carve, rdma_rmb_release };

/* Server, before its accept: our registered region for lgr. */
static int rdma_lgr_prepare(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	struct rdma_dev *dev = rdma_dev_of(net);
	struct rdma_lgr *rg;
	uint64_t size = net->rmb_budget.limit;
	int err;

	if (!dev)
		return -ENODEV;
	if (size > RDMA_REGION_MAX)
		size = RDMA_REGION_MAX;
	size &= ~(uint64_t)4095;
	if (size < RMB_MIN_SIZE)
		return -ENOBUFS;	/* buffers.pool too small for one ring */
	rg = calloc(1, sizeof(*rg));
	if (!rg)
		return -ENOMEM;
	rg->lgr = lgr;
	rg->dev = dev;
	lgr->tp = rg;
	lgr->ops = &rdma_ops;
	rg->dom = rdma_dom_new(dev->ctx);
	if (!rg->dom)
		goto out_errno;
	rg->rx_size = rg->tx_size = (uint32_t)size;
	rg->rx = rdma_region(size);
	rg->tx = rdma_region(size);
	if (!rg->rx || !rg->tx)
		goto out_errno;
	rmb_pool_init(&rg->tx_pool, 0, (uint32_t)size, &dev->tx_budget);
	rg->tx_pool.ops = &rdma_tx_rmb_ops;
	rg->tx_pool.ops_ctx = rg;
	lgr->region = rg->rx;
	lgr->region_size = (uint32_t)size;
	rmb_pool_init(&lgr->rmbs, 0, (uint32_t)size, &net->rmb_budget);
	lgr->rmbs.ops = &rdma_rx_rmb_ops;
	lgr->rmbs.ops_ctx = rg;
	return 0;

out_errno:
	err = errno ? -errno : -ENOMEM;
	rdma_lgr_close(lgr);
	lgr->ops = NULL;
	return err;
}

/*
 * Client, after the peer's ready: connects every link of lgr to the peer's
 * listener, at the control port's address and the RDMA_ADDR's port; the
 * group comes up (lgr__established) or fails later.
 */
static int rdma_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len)
{
	struct rdma_dev *dev = rdma_dev_of(lgr->net);
	struct sockaddr_storage ss = lgr->peer;
	struct rdma_tlv peer;
	struct rdma_lgr *rg;
	unsigned i;
	int err;

	err = rdma_tlv_decode(addr, len, &peer);
	if (err)
		return err;
	err = rdma_lgr_prepare(lgr);
	if (err)
		return err;
	rg = lgr->tp;
	rg->peer_port = peer.cm_port;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(peer.cm_port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(peer.cm_port);
	for (i = 0; i < lgr->n_links; i++) {
		struct rdma_link *rl = rl_new(dev, rg, i);

		if (!rl)
			return -ENOMEM;
		if (rdma_create_id(dev->ech, &rl->id, rl, RDMA_PS_TCP))
			return -errno;
		if (rdma_resolve_addr(rl->id, NULL, (struct sockaddr *)&ss, RDMA_RESOLVE_MS))
			return -errno;
	}
	return 0;
}

/* A link came up: the group is ready once all have. */
static void rl_established(struct rdma_link *rl, uint32_t peer_qpn)
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
	if (lgr->state == LGR_RENDEZVOUS && rg->n_up == lgr->n_links)
		lgr__established(lgr);
}

/* A link failed before or while coming up. */
static void rl_connect_failed(struct rdma_link *rl, int err)
{
	struct rdma_lgr *rg = rl->rg;
	struct lgr *lgr = rg ? rg->lgr : NULL;

	if (lgr && lgr->state == LGR_RENDEZVOUS) {
		/* The group never came up: no failover, its flows go TCP. */
		lgr__handshake_failed(lgr, err == -ENODEV ? FB_DECL_NO_DEVICE : FB_PEER_UNREACHABLE);
		return;
	}
	rdma_link_down(rl, err);
}

static struct lgr *rdma_find_lgr(struct smc_net *net, const uint8_t *id)
{
	struct list_head *pos;

	list_for_each(pos, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->role == LGR_ROLE_SERVER && lgr->state == LGR_RENDEZVOUS &&
		    lgr->ops == &rdma_ops && memcmp(lgr->id, id, CLC_LGR_ID_LEN) == 0)
			return lgr;
	}
	return NULL;
}

/* Server: a peer connects a link. Admission is by the id of a link group
 * whose handshake we accepted, for a link it has not connected yet. */
static int rdma_on_connect_request(struct rdma_dev *dev, struct rdma_cm_id *id,
				   const void *data, size_t len, uint32_t peer_qpn)
{
	struct smc_net *net = dev->net;
	struct rdma_conn_param cp;
	uint8_t mine[RDMA_PD_LEN];
	struct rdma_link *rl;
	struct rdma_lgr *rg;
	struct rdma_pd pd;
	struct lgr *lgr;
	int err;

	if (rdma_pd_decode(data, len, &pd)) {
		counter_inc(&net->stats->bad_messages);
		return -EPROTO;
	}
	lgr = rdma_find_lgr(net, pd.lgr_id);
	if (!lgr) {
		counter_inc(&net->stats->proposals_refused);
		return -ENOENT;
	}
	rg = lgr->tp;
	if (pd.link >= lgr->n_links || rg->links[pd.link] || rg_set_peer(rg, &pd)) {
		counter_inc(&net->stats->bad_messages);
		return -EPROTO;
	}
	rl = rl_new(dev, rg, pd.link);
	if (!rl)
		return -ENOMEM;
	rl->id = id;
	rl->peer_qpn = peer_qpn;
	id->context = rl;
	err = rl_create_qp(rl);
	if (!err) {
		rl_fill_pd(rl, mine);
		rl_conn_param(&cp, mine);
		if (rdma_accept(id, &cp))
			err = -errno;
	}
	if (err) {
		/* The caller rejects and destroys the id. */
		rl->id = NULL;
		if (rl->qp) {
			rdma_destroy_qp(id);
			rl->qp = NULL;
		}
		rg->links[pd.link] = NULL;
		lgr->links[pd.link].tp = NULL;
		rl_free_now(rl);
		lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
	}
	return err;
}

static void rdma_on_cm_event(struct rdma_dev *dev, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	struct rdma_link *rl = id->context;
	uint8_t data[256];
	size_t len = 0;
	uint32_t qpn = ev->param.conn.qp_num;
	struct rdma_pd pd;
	int err;

	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		len = ev->param.conn.private_data_len;	/* a uint8_t: fits */
		memcpy(data, ev->param.conn.private_data, len);
	}
	/* Acked first: destroying an id waits for its events' acks. */
	rdma_ack_cm_event(ev);

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (rdma_on_connect_request(dev, id, data, len, qpn)) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		}
		return;
	}
	if (!rl || (void *)rl == (void *)dev || rl->state == RL_DRAINING)
		return;	/* the listener's, or a link already being torn down */
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id, RDMA_RESOLVE_MS))
			rl_connect_failed(rl, -errno);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct rdma_conn_param cp;
		uint8_t mine[RDMA_PD_LEN];

		err = rl_create_qp(rl);
		if (!err) {
			rl_fill_pd(rl, mine);
			rl_conn_param(&cp, mine);
			if (rdma_connect(id, &cp))
				err = -errno;
		}
		if (err)
			rl_connect_failed(rl, err);
		return;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rl->state == RL_UP)
			return;		/* a message said so already */
		if (rl->rg->lgr->role == LGR_ROLE_CLIENT &&
		    (rdma_pd_decode(data, len, &pd) || pd.link != rl->lnk->idx ||
		     rg_set_peer(rl->rg, &pd))) {
			counter_inc(&dev->net->stats->bad_messages);
			rl_connect_failed(rl, -EPROTO);
			return;
		}
		rl_established(rl, qpn);
		return;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		rl_connect_failed(rl, -ECONNREFUSED);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rl->state == RL_UP)
			rl_peer_disconnected(rl);
		else
			rl_connect_failed(rl, -ECONNRESET);
		return;
	default:
		return;
	}
}

/*
 * The peer disconnected rl. What it sent before is complete in our CQ,
 * and its side counts it delivered (a FIN, a CLOSED: a side that released
 * its flow never sends them again); rdma_cm's event can come before the
 * CQ's, and a draining link drops what it receives. So the CQ is polled
 * first, while the link still takes its messages, and only then is the
 * link taken down. rl is held across the poll: a completion there may
 * fail the whole group, and the markers that then go in could complete
 * in the same poll and free it.
 */
static void rl_peer_disconnected(struct rdma_link *rl)
{
	rl->held = true;
	if (rl->cq)
		cq_poll(rl->cq, true);
	rl->held = false;
	if (rl->state == RL_UP) {
		rdma_link_down(rl, -ECONNRESET);
		return;
	}
	/* Went down during the poll: free it if that waited for us. */
	if (!rl->qp || (!rl->markers_left && !rl->markers_lost))
		rdma_link_free(rl);
}

static void rdma_on_cm(struct epset_entry *e, uint32_t events)
{
	struct rdma_dev *dev = (struct rdma_dev *)((char *)e - offsetof(struct rdma_dev, ech_ev));
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(dev->ech, &ev) == 0)
		rdma_on_cm_event(dev, ev);
}

/* ------------------------------------------------------------------ */
/* The device. */

static void rdma_on_async(struct epset_entry *e, uint32_t events)
{
	struct rdma_dev *dev = (struct rdma_dev *)((char *)e - offsetof(struct rdma_dev, async_ev));
	struct ibv_async_event ev;

	while (ibv_get_async_event(dev->ctx, &ev) == 0) {
		counter_inc(&dev->net->stats->rdma_async_events);
		switch (ev.event_type) {
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_GID_CHANGE:
			atomic_fetch_add(&rdma_port_gen, 1);
			break;
		default:
			/* QP errors also flush the QP's work requests: the
			 * owning worker fails the link from its CQ. */
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

/* Idle links get a TEST_LINK now and then (link_post_test()). */
static void rdma_keepalive(struct smc_net *net)
{
	uint64_t now = uv_now(net->loop);
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);
		struct rdma_lgr *rg = lgr->tp;
		unsigned i;

		if (lgr->ops != &rdma_ops || !rg || lgr->state != LGR_ACTIVE)
			continue;
		for (i = 0; i < lgr->n_links; i++) {
			struct rdma_link *rl = rg->links[i];

			if (!rl || rl->state != RL_UP || now - rl->last_tx_ms < RDMA_KEEPALIVE_MS)
				continue;
			rl->last_tx_ms = now;	/* once per period even if it found no room */
			link_post_test(rl->lnk, (uint32_t)now);
		}
	}
}

/*
 * A link whose markers never came back (a device that does not flush a
 * queue pair that never ran, seen with rxe on connections a hostile peer
 * left half-open): its queue pair, id, buffers and protection domain go,
 * but the slots that completions name stay, should one still come.
 */
static void rdma_reap_stuck(struct rdma_dev *dev, uint64_t now)
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

/*
 * Every lgr sweep: keepalives, links stuck draining, and port events the
 * async handler saw: on a port that went down, every link of this worker
 * fails.
 */
static void rdma_sweep(struct smc_net *net, uint64_t now)
{
	struct rdma_dev *dev = rdma_dev_of(net);
	unsigned gen = atomic_load(&rdma_port_gen);
	struct ibv_port_attr pa;
	struct list_head *pos, *tmp;

	if (!dev)
		return;
	rdma_keepalive(net);
	rdma_reap_stuck(dev, now);
	if (gen == dev->port_gen)
		return;
	dev->port_gen = gen;
	if (ibv_query_port(dev->ctx, dev->port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
		return;
	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);
		struct rdma_lgr *rg = lgr->tp;
		unsigned i;

		if (lgr->ops != &rdma_ops || !rg || lgr->state != LGR_ACTIVE)
			continue;
		for (i = 0; i < lgr->n_links; i++)
			if (rg->links[i])
				rdma_link_down(rg->links[i], -ENETDOWN);
	}
}

static struct ibv_context *rdma_pick_device(uint8_t *port)
{
	int n = 0, i;
	struct ibv_context **list = rdma_get_devices(&n);
	struct ibv_context *found = NULL;

	for (i = 0; list && i < n && !found; i++) {
		struct ibv_device_attr da;
		unsigned pt;

		if (ibv_query_device(list[i], &da))
			continue;
		for (pt = 1; pt <= da.phys_port_cnt; pt++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(list[i], (uint8_t)pt, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
				found = list[i];
				*port = (uint8_t)pt;
				break;
			}
		}
	}
	if (list)
		rdma_free_devices(list);
	return found;
}

/*
 * Opens this worker's RDMA side: the first device with an active port, a
 * protection domain, the CQ pool and an rdma_cm listener. -ENODEV when the
 * host has no usable device (rdma is then not offered).
 */
static int rdma_init(struct smc_net *net, char *errbuf, size_t errlen)
{
	const struct cfg *cfg = net->cfg;
	struct sockaddr_storage ss;
	struct rdma_dev *dev;
	unsigned n_cq;
	long cpus;
	int err, flags;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->net = net;
	dev->relaxed_ok = true;
	dev->tx_budget.limit = cfg->buffers.pool;
	list_init(&dev->zombies);
	dev->ctx = rdma_pick_device(&dev->port);
	if (!dev->ctx) {
		free(dev);
		snprintf(errbuf, errlen, "no RDMA device with an active port");
		return -ENODEV;
	}
	net->tp[smc_transport_slot(&rdma_ops)] = dev;
	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(dev->ctx->device));
	ibv_query_gid(dev->ctx, dev->port, 0, &dev->gid);
	/* cq.pool 0: the CPUs shared out over the workers, at least one. */
	n_cq = cfg->cq.pool;
	if (!n_cq) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n_cq = cpus > 0 ? (unsigned)cpus / (net->n_workers ? net->n_workers : 1) : 1;
		if (!n_cq)
			n_cq = 1;
	}
	err = cq_pool_init(&dev->cqs, &net->core->epset, dev->ctx, n_cq, RDMA_CQ_SIZE,
			   cfg->cq.poll_budget);
	if (err) {
		snprintf(errbuf, errlen, "%s: completion queues: %s", dev->name, strerror(-err));
		goto out_close;
	}
	dev->ech = rdma_create_event_channel();
	if (!dev->ech) {
		snprintf(errbuf, errlen, "rdma_create_event_channel: %s", strerror(errno));
		goto out_close;
	}
	flags = fcntl(dev->ech->fd, F_GETFL);
	fcntl(dev->ech->fd, F_SETFL, flags | O_NONBLOCK);
	dev->ech_ev.cb = rdma_on_cm;
	if (epset_add(&net->core->epset, dev->ech->fd, EPOLLIN, &dev->ech_ev) < 0) {
		snprintf(errbuf, errlen, "epoll: %s", strerror(errno));
		goto out_close;
	}
	/* The listener: the control address on a port of its own (each
	 * worker has one; the accept names it). */
	memset(&ss, 0, sizeof(ss));
	if (cfg->has_control)
		memcpy(&ss, &cfg->control.ss, sizeof(cfg->control.ss));
	else
		ss.ss_family = AF_INET;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	if (rdma_create_id(dev->ech, &dev->listen_id, dev, RDMA_PS_TCP) ||
	    rdma_bind_addr(dev->listen_id, (struct sockaddr *)&ss) ||
	    rdma_listen(dev->listen_id, 128)) {
		snprintf(errbuf, errlen, "rdma_cm listener: %s", strerror(errno));
		goto out_close;
	}
	dev->cm_port = ntohs(rdma_get_src_port(dev->listen_id));
	if (net->worker == 0) {
		flags = fcntl(dev->ctx->async_fd, F_GETFL);
		fcntl(dev->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
		dev->async_ev.cb = rdma_on_async;
		if (epset_add(&net->core->epset, dev->ctx->async_fd, EPOLLIN, &dev->async_ev) == 0)
			dev->owns_async = true;
	}
	dev->port_gen = atomic_load(&rdma_port_gen);
	return 0;

out_close:
	rdma_close(net);
	return -ENODEV;
}

static void rdma_close(struct smc_net *net)
{
	struct rdma_dev *dev = rdma_dev_of(net);
	struct list_head *pos, *tmp;

	if (!dev)
		return;
	/* Links still draining: the CQs go now, so nothing can name them. */
	list_for_each_safe(pos, tmp, &dev->zombies) {
		struct rdma_link *rl = list_entry(pos, struct rdma_link, zombie_node);

		list_del(&rl->zombie_node);
		list_del(&rl->defer.node);
		rl_free_now(rl);
	}
	if (dev->owns_async)
		epset_del(&net->core->epset, dev->ctx->async_fd);
	if (dev->listen_id)
		rdma_destroy_id(dev->listen_id);
	if (dev->ech) {
		epset_del(&net->core->epset, dev->ech->fd);
		rdma_destroy_event_channel(dev->ech);
	}
	cq_pool_close(&dev->cqs);
	free(dev);
	net->tp[smc_transport_slot(&rdma_ops)] = NULL;
}

static bool rdma_poll(struct smc_net *net)
{
	struct rdma_dev *dev = rdma_dev_of(net);

	return dev ? cq_pool_busy_poll(&dev->cqs) : false;
}

/* Before the loop blocks: another round for busy CQs (cq_pool_idle()),
 * once per worker for all its links. */
static bool rdma_before_sleep(struct smc_net *net, bool run)
{
	struct rdma_dev *dev = rdma_dev_of(net);

	return dev ? cq_pool_idle(&dev->cqs, run) : false;
}

/* Our RDMA_ADDR, the same in a proposal and an accept. */
static int rdma_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len)
{
	const struct rdma_dev *dev = rdma_dev_of(net);
	struct rdma_tlv a = { .version = 1 };

	if (len < RDMA_TLV_LEN)
		return -ENOSPC;
	if (dev) {
		a.cm_port = dev->cm_port;
		memcpy(a.gid, dev->gid.raw, 16);
	}
	rdma_tlv_encode(&a, out);
	return RDMA_TLV_LEN;
}

static int rdma_addr_usable(const uint8_t *v, size_t len)
{
	struct rdma_tlv a;

	return rdma_tlv_decode(v, len, &a);
}

/* Any peer whose RDMA_ADDR we understand: whether its device reaches ours
 * is for rdma_cm to find out. */
static bool rdma_can_serve(struct smc_net *net, const struct clc_proposal *pr)
{
	const struct clc_addr *a = &pr->addr[CLC_TLV_RDMA_ADDR - 1];

	return rdma_addr_usable(a->value, a->len) == 0;
}

static int rdma_link_fail(struct link *lnk)
{
	struct rdma_link *rl = lnk->tp;

	if (!rl || rl->state != RL_UP)
		return -ENOTCONN;
	rdma_link_down(rl, -ECONNABORTED);
	return 0;
}

/* What `smcproxyctl links` shows of an rdma link. */
static int rdma_link_info(const struct link *lnk, struct smc_fields *out)
{
	const struct rdma_link *rl = lnk->tp;
	char gid[INET6_ADDRSTRLEN], device[32];

	out->n = 0;
	if (!rl)
		return -ENOTCONN;
	/* As the stats socket always showed them: the name cut to 31. */
	snprintf(device, sizeof(device), "%s", rl->dev->name);
	inet_ntop(AF_INET6, rl->dev->gid.raw, gid, sizeof(gid));
	smc_fields_str(out, "device", device);
	smc_fields_uint(out, "port", rl->dev->port);
	smc_fields_str(out, "gid", gid);
	smc_fields_uint(out, "qp_num", rl->qp ? rl->qp->qp_num : 0);
	smc_fields_uint(out, "peer_qp_num", rl->peer_qpn);
	smc_fields_uint(out, "max_inline", rl->use_inline ? rl->max_inline : 0);
	smc_fields_uint(out, "wr_in_flight", rl->sq_queued - rl->sq_done);
	smc_fields_uint(out, "sq_depth", rl->sq_depth);
	smc_fields_uint(out, "cq", rl->cq ? rl->cq->idx : 0);
	smc_fields_bool(out, "relaxed_ordering", rl->dev->relaxed_ok);
	return 0;
}

/* CQ i of the worker's pool, for `smcproxyctl stats` ("cq"). */
static int rdma_pool_info(struct smc_net *net, unsigned i, struct smc_fields *out)
{
	const struct rdma_dev *dev = rdma_dev_of(net);
	const struct cq *cq;

	out->n = 0;
	if (!dev || i >= dev->cqs.n || i >= CQ_POOL_MAX)
		return -ENOENT;
	cq = &dev->cqs.cqs[i];
	smc_fields_uint(out, "cq", i);
	smc_fields_uint(out, "polls", cq->st.polls);
	smc_fields_uint(out, "completions", cq->st.completions);
	smc_fields_uint(out, "empty_polls", cq->st.empty_polls);
	smc_fields_uint(out, "rearms", cq->st.rearms);
	smc_fields_uint(out, "events", cq->st.events);
	smc_fields_uint(out, "rearm_failures", cq->st.rearm_failures);
	smc_fields_uint(out, "links", cq->n_links);
	smc_fields_uint(out, "cqe", cq->cqe);
	smc_fields_bool(out, "moderated", cq->moderated);
	return 0;
}
