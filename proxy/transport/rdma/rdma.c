/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport (SMC-R): each link is an RC queue pair connected by
 * rdma_cm. This file is its face: the ops table the registry finds, the
 * handshake address (RDMA_ADDR) and what smcproxyctl shows. The rest is
 * split by concern: rdma_dev.c (device, protection domains, CQ pool,
 * per-worker init and close), rdma_cm.c (rdma_cm events, connect and
 * accept), rdma_link.c (queue pair, send queue, completions, a link's
 * life), rdma_lgr.c (a link group's regions and the flows on them); their
 * shared types are in rdma-t.h, their shared functions in rdma-int.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "cq.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "rdma.h"
#include "rdma-int.h"
#include "smc/transport.h"

static int rdma_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len);
static int rdma_addr_usable(const uint8_t *v, size_t len);
static bool rdma_can_serve(struct smc_net *net, const struct clc_proposal *pr);
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
	.init = rdma__init,
	.close = rdma__close,
	.before_sleep = rdma__before_sleep,
	.poll = rdma__poll,
	.sweep = rdma__sweep,
	.addr_encode = rdma_addr_encode,
	.addr_check = rdma_tlv_check,
	.addr_usable = rdma_addr_usable,
	.can_serve = rdma_can_serve,
	.lgr_prepare = rdma__lgr_prepare,
	.lgr_connect = rdma__lgr_connect,
	.tx_room = rdma__tx_room,
	.post = rdma__post,
	.flush = rdma__flush,
	.tx_done = rdma__tx_done,
	.want_progress = rdma__want_progress,
	.conn_attach = rdma__conn_attach,
	.conn_detach = rdma__conn_detach,
	.conn_moved = rdma__conn_moved,
	.write = rdma__write,
	.lgr_close = rdma__lgr_close,
	.link_info = rdma_link_info,
	.pool_name = "cq",
	.pool_info = rdma_pool_info,
	.link_fail = rdma_link_fail,
};

/* Our RDMA_ADDR, the same in a proposal and an accept. */
static int rdma_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len)
{
	const struct rdma_dev *dev = rdma_dev_of(net);
	struct rdma_tlv a = { .version = 1, .flags = RDMA_TLV_F_SOLICIT };

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
	rdma__link_fail(rl, -ECONNABORTED);
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
	cq_info(cq, out);
	return 0;
}
