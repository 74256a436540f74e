/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm for the rdma transport: the event channel that the worker's
 * listener and all its links share, the server's admission of a link (its
 * group's id, the handshake peer's address, the group secret's tag), the
 * client's resolve/route/connect, the private data
 * each side sends (rdma_pd.h) and the peer's disconnect. Apart from the
 * links themselves (rdma_link.c): these handlers only move a link's state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/container.h"
#include "core/addr.h"
#include "cq.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "rdma-int.h"
#include "rdma_pd.h"


/* Which way private data goes: the proposer (client) requests. */
static enum rdma_pd_dir rg_dir(const struct lgr *lgr, bool sending)
{
	return (lgr->role == LGR_ROLE_CLIENT) == sending ? RDMA_PD_REQ : RDMA_PD_REP;
}

/* Our private data for rl, with the tag of its group's secret: 0, or
 * -errno when the tag cannot be made. */
static int rl_fill_pd(const struct rdma_link *rl, uint8_t out[RDMA_PD_LEN])
{
	const struct rdma_lgr *rg = rl->rg;
	struct rdma_pd pd = {
		.link = (uint8_t)rl->lnk->idx,
		.addr = (uintptr_t)rg->rx,
		.rkey = 0,	/* reserved: each ring has its own key */
		.size = rg->rx_size,
	};
	int err;

	memcpy(pd.lgr_id, rg->lgr->id, CLC_LGR_ID_LEN);
	err = rdma_pd_tag(rg->lgr->secret, rg_dir(rg->lgr, true), &pd, pd.tag);
	if (err)
		return err;
	rdma_pd_encode(&pd, out);
	return 0;
}

/*
 * rl's side of the connection, once rdma_cm knows the route (a client) or
 * the request was admitted (a server): its queue pair, then our private
 * data, then rdma_connect() or rdma_accept(). 0, or -errno; on failure the
 * queue pair may exist, for the caller to undo.
 */
static int rl_offer(struct rdma_link *rl, bool accept)
{
	uint8_t mine[RDMA_PD_LEN];
	struct rdma_conn_param cp = {
		.private_data = mine,
		.private_data_len = RDMA_PD_LEN,
		.retry_count = 7,
		.rnr_retry_count = 7,	/* receives come back quickly: wait */
	};
	int err;

	err = rl_create_qp(rl);
	if (!err)
		err = rl_fill_pd(rl, mine);
	if (err)
		return err;
	if (accept ? rdma_accept(rl->id, &cp) : rdma_connect(rl->id, &cp))
		return -errno;
	return 0;
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
	rdma__link_down(rl, err);
}

/* Tells the layer above that a connection request from id's source was
 * refused, and why (it logs at a bounded rate: anyone who reaches the
 * rdma_cm port chooses how often). */
static void rdma_refused(struct smc_net *net, struct rdma_cm_id *id, enum smc_refusal why)
{
	struct sockaddr_storage ss = { .ss_family = AF_UNSPEC };
	const struct sockaddr *src = rdma_get_peer_addr(id);

	if (src && (src->sa_family == AF_INET || src->sa_family == AF_INET6))
		memcpy(&ss, src, addr_len(src));
	addr_unmap_v4(&ss);
	if (net->ops->peer_refused)
		net->ops->peer_refused(net, (const struct sockaddr *)&ss, why);
}

/*
 * Whether id's request comes from the address lgr's handshake came from
 * (the port aside: rdma_cm picks its own). It is the address rdma_cm
 * reports for the request, which the requester's own rdma_cm writes: it
 * keeps out other hosts that run a stock rdma_cm, not one that forges
 * its CM messages (the tag does that).
 */
static bool rdma_from_peer(const struct lgr *lgr, struct rdma_cm_id *id)
{
	const struct sockaddr *src = rdma_get_peer_addr(id);
	struct sockaddr_storage ss;

	if (!src || (src->sa_family != AF_INET && src->sa_family != AF_INET6))
		return false;
	memcpy(&ss, src, addr_len(src));
	addr_unmap_v4(&ss);
	return addr_same_host((const struct sockaddr *)&ss, (const struct sockaddr *)&lgr->peer);
}

/*
 * Server: a peer connects a link. Admission is by the id of a link group
 * whose handshake we accepted, from the address that handshake came
 * from, with the tag of the group's secret (which only the two sides of
 * the handshake can make), for a link it has not connected yet. All of
 * it is judged before anything is allocated for the link; a request
 * that fails leaves the group waiting for its real peer.
 */
static int rdma_on_connect_request(struct rdma_dev *dev, struct rdma_cm_id *id,
				   const void *data, size_t len, uint32_t peer_qpn)
{
	struct smc_net *net = dev->net;
	struct rdma_link *rl;
	struct rdma_lgr *rg;
	struct rdma_pd pd;
	struct lgr *lgr;
	int err;

	if (rdma_pd_decode(data, len, &pd)) {
		counter_inc(&net->stats->bad_messages);
		return -EPROTO;
	}
	lgr = lgr_find_by_id(net, &rdma_ops, pd.lgr_id);
	if (!lgr || !rdma_from_peer(lgr, id)) {
		counter_inc(&net->stats->rendezvous_refused);
		rdma_refused(net, id, lgr ? SMC_REFUSE_RV_ADDR : SMC_REFUSE_RV_GROUP);
		return lgr ? -EACCES : -ENOENT;
	}
	if (!rdma_pd_tag_ok(lgr->secret, rg_dir(lgr, false), &pd)) {
		counter_inc(&net->stats->auth_failures);
		rdma_refused(net, id, SMC_REFUSE_RV_AUTH);
		return -EACCES;
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
	err = rl_offer(rl, true);
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

/*
 * Client: the acceptor's reply on rl (len bytes of private data). It must
 * name this link and prove the group's secret as our request did, so
 * that whoever answered is the daemon we did the handshake with; only
 * then is its region taken. 0 or -errno, counted.
 */
static int rl_check_reply(struct rdma_link *rl, const uint8_t *data, size_t len)
{
	struct proxy_stats *st = rl->dev->net->stats;
	struct rdma_pd pd;

	if (rdma_pd_decode(data, len, &pd) || pd.link != rl->lnk->idx) {
		counter_inc(&st->bad_messages);
		return -EPROTO;
	}
	if (!rdma_pd_tag_ok(rl->rg->lgr->secret, RDMA_PD_REP, &pd)) {
		counter_inc(&st->auth_failures);
		return -EACCES;
	}
	if (rg_set_peer(rl->rg, &pd)) {
		counter_inc(&st->bad_messages);
		return -EPROTO;
	}
	return 0;
}

static void rdma_on_cm_event(struct rdma_dev *dev, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	struct rdma_link *rl = id->context;
	uint8_t data[256];
	size_t len = 0;
	uint32_t qpn = ev->param.conn.qp_num;
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
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = rl_offer(rl, false);
		if (err)
			rl_connect_failed(rl, err);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rl->state == RL_UP)
			return;		/* a message said so already */
		if (rl->rg->lgr->role == LGR_ROLE_CLIENT) {
			err = rl_check_reply(rl, data, len);
			if (err) {
				rl_connect_failed(rl, err);
				return;
			}
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
			rdma__link_fail(rl, -ECONNRESET);
		else
			rl_connect_failed(rl, -ECONNRESET);
		return;
	default:
		return;
	}
}

void rdma__on_cm(struct epset_entry *e, uint32_t events)
{
	struct rdma_dev *dev = container_of(e, struct rdma_dev, ech_ev);
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(dev->ech, &ev) == 0)
		rdma_on_cm_event(dev, ev);
}
