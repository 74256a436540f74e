/* SPDX-License-Identifier: MIT */
/*
 * An rdma link group's memory and the flows on it.
 *
 * Per link group, each side has two regions: the receive rings
 * the peer writes into (REMOTE_WRITE), and the mirrors of the peer's rings
 * its own flows write into before an RDMA WRITE carries the bytes across
 * (the socket read is the one copy; a mirror has the peer ring's size, so
 * a write lands at the same offset). A ring is registered when it is first
 * carved and stays registered while it is reused: no registration per
 * flow, and only rings in use are pinned, within buffers.pool per worker
 * for each of the two kinds.
 *
 * Here: the two regions, the carving and registration of their rings,
 * the group's preparation (server) and connection (client), and each
 * flow's mirror and the writes it queues on the send queue of its link
 * (rdma_link.c). Apart because it is the group's memory, not a link's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "smc/conn.h"
#include "smc/cursor.h"
#include "smc/lgr.h"
#include "smc/net.h"
#include "rdma.h"
#include "rdma-int.h"
#include "smc/rmb.h"

#define RDMA_REGION_MAX		(1u << 30)

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

/* A free ring whose budget another group needs: unpinned, and its pages
 * back to the host (the region is anonymous memory; a later carve
 * registers zero pages again). */
static void rdma_rx_drop(void *ctx, struct rmb *r)
{
	struct rdma_lgr *rg = ctx;

	rdma_rmb_release(ctx, r);
	madvise(rg->rx + r->offset, r->size, MADV_DONTNEED);
}

static void rdma_tx_drop(void *ctx, struct rmb *r)
{
	struct rdma_lgr *rg = ctx;

	rdma_rmb_release(ctx, r);
	madvise(rg->tx + r->offset, r->size, MADV_DONTNEED);
}

static const struct rmb_ops rdma_rx_rmb_ops = {
	.carve = rdma_rx_carve, .release = rdma_rmb_release, .drop = rdma_rx_drop, .pins = true,
};
static const struct rmb_ops rdma_tx_rmb_ops = {
	.carve = rdma_tx_carve, .release = rdma_rmb_release, .drop = rdma_tx_drop, .pins = true,
};

/* Server, before its accept: our registered region for lgr. */
/* The peer's RDMA_ADDR: in its proposal (we serve) or its accept. */
static bool rg_peer_solicits(const struct lgr *lgr)
{
	const struct clc_addr *a = lgr->role == LGR_ROLE_SERVER ?
		&lgr->hs.prop.addr[CLC_TLV_RDMA_ADDR - 1] : &lgr->hs.acc.addr[CLC_TLV_RDMA_ADDR - 1];
	struct rdma_tlv t;

	return rdma_tlv_decode(a->value, a->len, &t) == 0 && (t.flags & RDMA_TLV_F_SOLICIT);
}

int rdma__lgr_prepare(struct lgr *lgr)
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
	rg->peer_solicits = rg_peer_solicits(lgr);
	lgr->tp = rg;
	lgr->ops = &rdma_ops;
	rg->dom = rdma__dom_new(dev->ctx);
	if (!rg->dom)
		goto out_errno;
	rg->rx_size = rg->tx_size = (uint32_t)size;
	rg->rx = rdma_region(size);
	rg->tx = rdma_region(size);
	if (!rg->rx || !rg->tx)
		goto out_errno;
	/* The mirrors' budget has the receive rings' fairness: one account
	 * per peer address, so that one peer's flows cannot pin every
	 * mirror (rmb-t.h, "Fairness"). */
	rg->tx_peer = rmb_peer_get(&dev->tx_budget, lgr->rmb_peer->key, RMB_PEER_KEY);
	if (!rg->tx_peer)
		goto out_errno;
	rmb_pool_init(&rg->tx_pool, 0, (uint32_t)size, &dev->tx_budget, rg->tx_peer);
	rg->tx_pool.ops = &rdma_tx_rmb_ops;
	rg->tx_pool.ops_ctx = rg;
	lgr->region = rg->rx;
	lgr->region_size = (uint32_t)size;
	rmb_pool_init(&lgr->rmbs, 0, (uint32_t)size, &net->rmb_budget, lgr->rmb_peer);
	lgr->rmbs.ops = &rdma_rx_rmb_ops;
	lgr->rmbs.ops_ctx = rg;
	return 0;

out_errno:
	err = errno ? -errno : -ENOMEM;
	rdma__lgr_close(lgr);
	lgr->ops = NULL;
	return err;
}

/*
 * Client, after the peer's ready: connects every link of lgr to the peer's
 * listener, at the control port's address and the RDMA_ADDR's port; the
 * group comes up (lgr__established) or fails later.
 */
int rdma__lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len)
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
	err = rdma__lgr_prepare(lgr);
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

/* ------------------------------------------------------------------ */
/* Flows: a mirror per flow, and the bytes its writes still owe. */

/*
 * A mirror for the peer's ring rmb. A ring outside the peer's region, or
 * larger than the peer's own handshake ring_size, is a lie (-EINVAL: the
 * flow is reset, or the open declined). One larger than our buffers.ring
 * (lgr->ring_size) is honest but more than we pin for one flow, and one
 * the budget or the peer's share cannot give is refused alike (-ENOMEM:
 * the open is declined, or goes over TCP, a ring move is not taken).
 */
int rdma__conn_attach(struct conn *c, const struct llc_rmb *rmb)
{
	struct rdma_lgr *rg = c->lgr->tp;
	struct rdma_conn *rc;

	if (!rg || !rg->have_peer || rmb->offset > rg->peer_size ||
	    rmb->size > rg->peer_size - rmb->offset || rmb_class(rmb->size) < 0 ||
	    rmb->size > lgr_peer_ring_size(c->lgr))
		return -EINVAL;
	if (rmb->size > c->lgr->ring_size)
		return -ENOMEM;
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

void rdma__conn_detach(struct conn *c)
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

int rdma__write(struct conn *c, uint32_t off, uint32_t len)
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
		rl_quiet_update(rl);
	}
	rl_kick(rl);
	return 0;
}

void rdma__conn_moved(struct conn *c)
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
	if (rc->pending && (!list_empty(&rl->write_wait) || !rc_queue_pending(rl, c))) {
		list_add_tail(&rc->wait_node, &rl->write_wait);
		rl_quiet_update(rl);
	}
	rl_kick(rl);
}

void rdma__lgr_close(struct lgr *lgr)
{
	struct rdma_lgr *rg = lgr->tp;
	unsigned i;

	if (!rg)
		return;
	for (i = 0; i < LGR_LINKS_MAX; i++) {
		struct rdma_link *rl = rg->links[i];

		if (!rl)
			continue;
		rdma__link_down(rl, 0);
		if (i < lgr->n_links)
			lgr->links[i].tp = NULL;
	}
	/* The QPs are in the error state: no more DMA to or from these. The
	 * receive rings' registrations go with their pool, here, while rg
	 * (the pool's context) lives. */
	rmb_pool_close(&lgr->rmbs);
	lgr->rmbs.ops = NULL;
	rmb_pool_close(&rg->tx_pool);
	rmb_peer_put(rg->tx_peer);
	rdma__dom_put(rg->dom);
	if (rg->rx)
		munmap(rg->rx, rg->rx_size);
	if (rg->tx)
		munmap(rg->tx, rg->tx_size);
	free(rg);
	lgr->tp = NULL;
	lgr->region = NULL;
}
