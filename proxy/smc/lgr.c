/* SPDX-License-Identifier: MIT */
/*
 * Link groups: the per-peer state that flows share, after the kernel's
 * smc_core.c. A flow to a peer costs one LLC exchange on an existing group;
 * only the first flow to a peer (or the first after a failure) waits for
 * the handshake, and a peer that declined or did not answer is not asked
 * again for fallback.negative_ttl.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "core/loop.h"
#include "conn.h"
#include "fallback.h"
#include "lgr.h"
#include "link.h"
#include "liveness.h"
#include "net.h"
#include "policy.h"
#include "rmb.h"


const char *lgr_state_name(enum lgr_state s)
{
	switch (s) {
	case LGR_HANDSHAKE:	return "handshake";
	case LGR_RENDEZVOUS:	return "rendezvous";
	case LGR_ACTIVE:	return "active";
	case LGR_NEGATIVE:	return "negative";
	case LGR_DOWN:		return "down";
	}
	return "unknown";
}

struct lgr *lgr_next(const struct smc_net *net, const struct lgr *prev)
{
	const struct list_head *pos = prev ? prev->node.next : net->lgrs.next;

	return pos == &net->lgrs ? NULL : list_entry(pos, struct lgr, node);
}

struct lgr *lgr__next_active(struct smc_net *net, struct list_head *pos,
			     const struct smc_transport_ops *ops)
{
	for (; pos != &net->lgrs; pos = pos->next) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->state == LGR_ACTIVE && lgr->ops == ops)
			return lgr;
	}
	return NULL;
}

struct lgr *lgr_find_by_id(struct smc_net *net, const struct smc_transport_ops *ops,
			   const uint8_t id[CLC_LGR_ID_LEN])
{
	struct list_head *pos;

	list_for_each(pos, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->role == LGR_ROLE_SERVER && lgr->state == LGR_RENDEZVOUS &&
		    lgr->ops == ops && memcmp(lgr->id, id, CLC_LGR_ID_LEN) == 0)
			return lgr;
	}
	return NULL;
}

const char *lgr_role_name(enum lgr_role r)
{
	return r == LGR_ROLE_CLIENT ? "client" : "server";
}

/* The peer's account in the ring budget: by address, without the port
 * (a server sees each of a peer's groups come from another port). */
static struct rmb_peer *lgr_rmb_peer(struct smc_net *net, const struct sockaddr *peer)
{
	uint8_t key[RMB_PEER_KEY] = { (uint8_t)peer->sa_family };

	if (peer->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)(const void *)peer)->sin_addr, 4);
	else if (peer->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr, 16);
	return rmb_peer_get(&net->rmb_budget, key, sizeof(key));
}

void lgr_rmb_peer_addr(const struct rmb_peer *peer, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = peer->key[0];
	if (ss->ss_family == AF_INET)
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, peer->key + 1, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, peer->key + 1, 16);
}

struct lgr *lgr__new(struct smc_net *net, enum lgr_role role, const struct sockaddr *peer)
{
	struct lgr *lgr;

	/* Outbound groups and negative entries have their own limit, and
	 * so have inbound ones (handshakes included): peers that propose
	 * cannot take the slots of the groups we need to reach them, nor
	 * the other way round. */
	if (net->n_lgrs_role[role] >=
	    (role == LGR_ROLE_CLIENT ? LGR_OUT_MAX : LGR_IN_MAX + LGR_HS_MAX))
		return NULL;
	lgr = calloc(1, sizeof(*lgr));
	if (!lgr)
		return NULL;
	lgr->net = net;
	lgr->role = role;
	lgr->state = LGR_HANDSHAKE;
	memcpy(&lgr->peer, peer, addr_len(peer));
	lgr->hs.fd = -1;
	lgr->created_ms = uv_now(net->loop);
	list_init(&lgr->waiting);
	list_init(&lgr->conn_list);
	list_init(&lgr->connecting);
	list_init(&lgr->grown);
	list_init(&lgr->sched_node);
	lgr->rmb_peer = lgr_rmb_peer(net, peer);
	if (!lgr->rmb_peer || getrandom(lgr->id, sizeof(lgr->id), 0) != sizeof(lgr->id)) {
		rmb_peer_put(lgr->rmb_peer);
		free(lgr);
		return NULL;
	}
	list_add_tail(&lgr->node, &net->lgrs);
	net->n_lgrs++;
	net->n_lgrs_role[role]++;
	smc_net__timer(net);
	return lgr;
}

/* Takes lgr off net's list; what is left of it is the caller's. */
static void lgr_unlink(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;

	assert(net->n_lgrs && net->n_lgrs_role[lgr->role]);
	list_del(&lgr->node);
	net->n_lgrs--;
	net->n_lgrs_role[lgr->role]--;
}

void lgr__count_inbound(const struct smc_net *net, const struct sockaddr *host,
			struct lgr_inbound *n)
{
	const struct list_head *pos;

	memset(n, 0, sizeof(*n));
	list_for_each(pos, &net->lgrs) {
		const struct lgr *lgr = list_entry(pos, struct lgr, node);
		bool same;

		if (lgr->role != LGR_ROLE_SERVER || lgr->state == LGR_DOWN)
			continue;
		same = addr_same_host((const struct sockaddr *)&lgr->peer, host);
		if (lgr->state == LGR_HANDSHAKE) {
			n->handshakes++;
			n->handshakes_host += same;
		} else {
			n->groups++;
			n->groups_host += same;
		}
	}
}

/* Releases everything but the struct: fds, memory, conn tables. */
static void lgr_release(struct lgr *lgr)
{
	if (lgr->sched) {
		list_del(&lgr->sched_node);
		lgr->sched = false;
	}
	lgr__hs_close(lgr);
	if (lgr->ops) {
		lgr->ops->lgr_close(lgr);
		lgr->ops = NULL;
	}
	rmb_pool_close(&lgr->rmbs);	/* if the transport did not */
	if (lgr->conns) {
		free(lgr->conns);
		free(lgr->gen);
		lgr->conns = NULL;
		lgr->gen = NULL;
	}
	lgr->region = NULL;
}

void lgr__free(struct lgr *lgr)
{
	if (!lgr)
		return;
	lgr_release(lgr);
	rmb_peer_put(lgr->rmb_peer);
	free(lgr);
}

static void lgr_reap(struct loop_defer *d)
{
	lgr__free(container_of(d, struct lgr, defer));
}

int lgr__setup_links(struct lgr *lgr, unsigned links, unsigned max_flows_per_link)
{
	unsigned i, cap;
	uint32_t init;

	if (!links || links > LGR_LINKS_MAX || !max_flows_per_link)
		return -EINVAL;
	cap = links * max_flows_per_link;
	if (cap > LGR_CONNS_MAX)
		cap = LGR_CONNS_MAX;
	lgr->conns = calloc(cap + 1, sizeof(*lgr->conns));
	lgr->gen = calloc(cap + 1, sizeof(*lgr->gen));
	if (!lgr->conns || !lgr->gen) {
		free(lgr->conns);
		free(lgr->gen);
		lgr->conns = NULL;
		lgr->gen = NULL;
		return -ENOMEM;
	}
	lgr->conns_cap = cap + 1;
	/* Flows start on buffers.ring_initial (16 KiB by default, where the
	 * kernel's SMC-R starts) and grow when their traffic fills it
	 * (ringmove.c); a peer that cannot move rings gets the full size at
	 * once. A config built by hand may leave it 0: the smallest ring. */
	init = (uint32_t)lgr->net->cfg->buffers.ring_initial;
	if (init < RMB_INIT_SIZE)
		init = RMB_INIT_SIZE;
	lgr->ring_init = lgr->ring_move && lgr->ring_size > init ? init : lgr->ring_size;
	lgr->next_index = 1;
	lgr->n_links = links;
	lgr->max_flows_per_link = max_flows_per_link;
	for (i = 0; i < links; i++)
		link_init(&lgr->links[i], lgr, i);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Conn tokens: index in the low 16 bits, generation in the high 16. */

static int lgr_token_alloc(struct lgr *lgr, struct conn *c)
{
	unsigned i, idx;

	for (i = 1; i < lgr->conns_cap; i++) {
		idx = lgr->next_index;
		lgr->next_index = idx + 1 < lgr->conns_cap ? idx + 1 : 1;
		if (!lgr->conns[idx]) {
			lgr->gen[idx]++;
			lgr->conns[idx] = c;
			c->token = idx | (uint32_t)lgr->gen[idx] << 16;
			lgr->n_conns++;
			assert(lgr->n_conns < lgr->conns_cap);
			list_add_tail(&c->lgr_node, &lgr->conn_list);
			return 0;
		}
	}
	return -ENOSPC;
}

int lgr_conn_add_on(struct lgr *lgr, struct conn *c, struct link *lnk)
{
	int err;

	if (lgr->state != LGR_ACTIVE || lnk->state != LINK_ACTIVE || lgr->fail_sched ||
	    lnk->down_sched)
		return -ENOLINK;
	if (lnk->n_conns >= lgr->max_flows_per_link)
		return -ENOSPC;
	err = lgr_token_alloc(lgr, c);
	if (err)
		return err;
	c->link = lnk;
	lnk->n_conns++;
	assert(lnk->n_conns <= lgr->max_flows_per_link);
	lgr->flows_total++;
	return 0;
}

int lgr_conn_add(struct lgr *lgr, struct conn *c)
{
	struct link *best = NULL;
	unsigned i;

	for (i = 0; i < lgr->n_links; i++) {
		struct link *lnk = &lgr->links[i];

		if (lnk->state != LINK_ACTIVE || lnk->down_sched ||
		    lnk->n_conns >= lgr->max_flows_per_link)
			continue;
		if (!best || lnk->n_conns < best->n_conns)
			best = lnk;
	}
	if (!best)
		return -ENOSPC;
	return lgr_conn_add_on(lgr, c, best);
}

void lgr_conn_del(struct lgr *lgr, struct conn *c)
{
	unsigned idx = c->token & 0xffff;

	if (!c->token)
		return;
	if (idx < lgr->conns_cap && lgr->conns[idx] == c)
		lgr->conns[idx] = NULL;
	c->token = 0;
	assert(c->link->n_conns > 0 && lgr->n_conns > 0);
	c->link->n_conns--;
	lgr->n_conns--;
	list_del(&c->lgr_node);
}

struct conn *lgr_conn_find(struct lgr *lgr, uint32_t token)
{
	unsigned idx = token & 0xffff;
	struct conn *c;

	if (!lgr->conns || idx == 0 || idx >= lgr->conns_cap)
		return NULL;
	c = lgr->conns[idx];
	return c && c->token == token ? c : NULL;
}

/* ------------------------------------------------------------------ */
/* Client side. */

/* Whether lgr can take one more flow now: an active link with room. */
static bool lgr_has_room(const struct lgr *lgr)
{
	unsigned i;

	if (lgr->state != LGR_ACTIVE)
		return false;
	for (i = 0; i < lgr->n_links; i++)
		if (lgr->links[i].state == LINK_ACTIVE &&
		    lgr->links[i].n_conns < lgr->max_flows_per_link)
			return true;
	return false;
}

/*
 * The client group a new flow to peer should use: an active one with
 * room, else one whose handshake runs (the flow waits for it), else NULL:
 * with *neg the peer's unexpired negative entry, if any (expired ones
 * are freed here). Groups to one peer are many when one is full, as the
 * kernel's SMC-R opens another link group when one has no room.
 */
static struct lgr *lgr_find_client(struct smc_net *net, const struct sockaddr *peer,
				   uint64_t now, struct lgr **neg)
{
	struct list_head *pos, *tmp;
	struct lgr *pending = NULL;

	*neg = NULL;
	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->role != LGR_ROLE_CLIENT || lgr->state == LGR_DOWN ||
		    !addr_equal((struct sockaddr *)&lgr->peer, peer))
			continue;
		if (lgr->state == LGR_NEGATIVE) {
			if (now < lgr->neg_until_ms) {
				*neg = lgr;
			} else if (list_empty(&lgr->waiting)) {
				lgr_unlink(lgr);
				lgr__free(lgr);
			}
			continue;
		}
		if (lgr_has_room(lgr))
			return lgr;
		if (lgr->state != LGR_ACTIVE && !pending)
			pending = lgr;
	}
	return pending;
}

/* A new client group to peer, its handshake started; NULL with *reason. */
static struct lgr *lgr_new_client(struct smc_net *net, const struct sockaddr *peer,
				  uint64_t now, enum fallback_reason *reason)
{
	struct lgr *lgr;

	if (!net->lgr_transports) {
		*reason = FB_NO_LINK;	/* nothing to offer (rdma without a device) */
		return NULL;
	}
	lgr = lgr__new(net, LGR_ROLE_CLIENT, peer);
	if (!lgr) {
		*reason = FB_DECL_NO_MEMORY;
		return NULL;
	}
	lgr->deadline_ms = now + net->cfg->fallback.connect_timeout_ms;
	lgr__hs_start_client(lgr);
	if (lgr->state == LGR_NEGATIVE) {	/* failed at once */
		*reason = lgr->neg_reason;
		return NULL;
	}
	return lgr;
}

struct lgr *lgr_for_dest(struct smc_net *net, const struct sockaddr *dest,
			 size_t pfx_idx, enum fallback_reason *reason)
{
	uint64_t now = uv_now(net->loop);
	struct sockaddr_storage peer;
	struct lgr *lgr, *neg;

	/* The destination's own daemon, or the one its peers[] entry names
	 * (a node's, for its pods): FLOW_OPEN carries dest either way. */
	policy_daemon_addr(&net->cfg->peers[pfx_idx], dest, &peer);

	lgr = lgr_find_client(net, (struct sockaddr *)&peer, now, &neg);
	if (lgr)
		return lgr;
	/* Every group to the peer is full; a negative entry says a new one
	 * would fail (the peer declined or did not answer lately). */
	if (neg) {
		counter_inc(&net->stats->negative_cache_hits);
		*reason = neg->neg_reason;
		return NULL;
	}
	if (!net->lgr_transports) {
		*reason = FB_NO_LINK;	/* nothing to offer (rdma without a device) */
		return NULL;
	}
	return lgr_new_client(net, (struct sockaddr *)&peer, now, reason);
}

/*
 * Parked flows go on: over the group, or over TCP with reason. A group
 * that came up with more flows waiting than it has room for hands the
 * rest to another group to the peer (one with room, one in its
 * handshake, or a new one), so a burst of new flows opens as many groups
 * as it needs instead of falling back with max_flows.
 */
static void lgr_release_waiting(struct lgr *lgr, enum fallback_reason reason)
{
	struct smc_net *net = lgr->net;

	while (!list_empty(&lgr->waiting)) {
		struct lgr_waiter *w = list_entry(lgr->waiting.next, struct lgr_waiter, node);
		struct lgr *to = lgr, *neg;
		enum fallback_reason why = reason;

		if (reason == FB_NONE && !lgr_has_room(lgr)) {
			uint64_t now = uv_now(net->loop);

			to = lgr_find_client(net, (struct sockaddr *)&lgr->peer, now, &neg);
			if (!to && !neg)
				to = lgr_new_client(net, (struct sockaddr *)&lgr->peer, now, &why);
			else if (!to)
				why = neg->neg_reason;
			if (to && to->state != LGR_ACTIVE) {
				/* All of them wait for that one. */
				list_splice_tail(&lgr->waiting, &to->waiting);
				return;
			}
		}
		list_del(&w->node);
		w->ready(w, why == FB_NONE ? to : NULL, why);
	}
}

static void lgr_report(struct lgr *lgr, enum lgr_event ev, int err)
{
	struct smc_net *net = lgr->net;

	net->ops->lgr_event(net, ev, lgr, err);
}

void lgr__established(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;

	assert(lgr->state == LGR_HANDSHAKE || lgr->state == LGR_RENDEZVOUS);
	lgr->state = LGR_ACTIVE;
	liveness_start(lgr, uv_now(net->loop));
	lgr__hs_close(lgr);
	if (lgr->role == LGR_ROLE_CLIENT)
		counter_inc(&net->stats->lgr_handshakes);
	else
		counter_inc(&net->stats->lgr_accepted);
	lgr_report(lgr, LGR_EV_UP, 0);
	lgr_release_waiting(lgr, FB_NONE);
}

void lgr__handshake_failed(struct lgr *lgr, enum fallback_reason reason)
{
	struct smc_net *net = lgr->net;

	assert(lgr->state == LGR_HANDSHAKE || lgr->state == LGR_RENDEZVOUS);
	lgr_release(lgr);
	if (lgr->role == LGR_ROLE_SERVER) {
		lgr->state = LGR_DOWN;
		lgr_unlink(lgr);
		loop_defer(net->core, &lgr->defer, lgr_reap);
		return;
	}
	/* With negative_ttl 0 every flow asks again: no entry is kept. */
	lgr->state = LGR_NEGATIVE;
	lgr->neg_reason = reason;
	lgr->neg_until_ms = uv_now(net->loop) + net->cfg->fallback.negative_ttl_ms;
	lgr_report(lgr, LGR_EV_NO_GROUP, 0);
	lgr_release_waiting(lgr, reason);
}

/* ------------------------------------------------------------------ */
/* Server side: a flow the peer opens. */

/*
 * The peer may only reach addresses configured on this host's interfaces,
 * or inside the "serve" prefixes (the pods this daemon serves for its
 * node, whose peers name it as their "via"): never loopback (which would
 * make us a relay into services bound to localhost), the unspecified address (which the kernel sends to
 * loopback), a broadcast or multicast address, another host, or one of our
 * own listeners or our control port. And only the ports (and addresses)
 * the peers[] entry of lgr's peer allows (policy.c), under the config of
 * the moment: a reload that takes a port or the whole prefix away refuses
 * the next open. dest is unmapped from ::ffff:a.b.c.d first, as the
 * kernel would connect. *by_port: the refusal is the port policy's.
 *
 * Cheapest first, and the policy before the one check that may cost a
 * netlink dump (the address snapshot, at most once a second: addr.h), so
 * that a peer without an allowed port makes us do no more than compare.
 */
static unsigned lgr_check_dest(struct lgr *lgr, const struct sockaddr *dest, bool *by_port)
{
	struct smc_net *net = lgr->net;
	const struct cfg *cfg = net->cfg;
	struct sockaddr_storage peer;

	*by_port = false;
	if (addr_is_loopback(dest) || addr_is_any(dest))
		return CLC_DECL_POLICY;
	if (net->ops->dest_is_listener(net, dest))
		return CLC_DECL_POLICY;
	if (cfg->has_control && addr_port(dest) == addr_port((const struct sockaddr *)&cfg->control.ss))
		return CLC_DECL_POLICY;
	memcpy(&peer, &lgr->peer, sizeof(peer));
	addr_unmap_v4(&peer);
	if (!policy_allows(policy_peer(cfg, (const struct sockaddr *)&peer), dest)) {
		*by_port = true;
		return CLC_DECL_POLICY;
	}
	if (!policy_serves(cfg, dest) && !addr_local_has(&net->local_addrs, dest, uv_now(net->loop)))
		return CLC_DECL_POLICY;
	return CLC_DECL_NONE;
}

bool lgr_rx_room(const struct lgr *lgr)
{
	return lgr->rx_batch != lgr->net->batch || lgr->rx_in_batch < LGR_RX_PER_BATCH;
}

/* One more declined open of lgr's peer: past LGR_DECLINES_MAX in a
 * window, its group fails at the end of the batch (a flood, not an
 * application). */
static void lgr_count_decline(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	uint64_t now = uv_now(net->loop);

	if (now - lgr->decl_since_ms >= LGR_DECLINES_WINDOW_MS) {
		lgr->decl_since_ms = now;
		lgr->decl_in_window = 0;
	}
	if (++lgr->decl_in_window == LGR_DECLINES_MAX + 1) {
		counter_inc(&net->stats->floods_refused);
		lgr_fail_sched(lgr, LGR_ERR_FLOOD);
	}
}

void lgr_on_flow_open(struct link *lnk, const struct llc_flow_open *m)
{
	struct lgr *lgr = lnk->lgr;
	struct smc_net *net = lgr->net;
	struct sockaddr_storage dest = { 0 };
	unsigned reason;
	bool by_port;
	int err;

	/* Sent again after a link failed: if the first one arrived, its flow
	 * exists, and only the accept goes again. A scan, but only for
	 * resent opens, which only failover makes. */
	if (m->flags & LLC_OPEN_RESENT) {
		struct list_head *pos;

		list_for_each(pos, &lgr->conn_list) {
			struct conn *c = list_entry(pos, struct conn, lgr_node);

			if (c->peer_token == m->token) {
				conn_resend_accept(c);
				return;
			}
		}
	}
	if (m->family == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&dest;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(m->port);
		memcpy(&sin->sin_addr, m->addr, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&dest;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(m->port);
		memcpy(&sin6->sin6_addr, m->addr, 16);
	}
	addr_unmap_v4(&dest);
	reason = lgr_check_dest(lgr, (struct sockaddr *)&dest, &by_port);
	if (reason) {
		counter_inc(&net->stats->dest_refused);
		if (by_port) {
			counter_inc(&net->stats->ports_refused);
			policy_ports_count(&net->policy_ports, m->port);
		}
		link_post_decline(lnk, m->token, reason);
		lgr_count_decline(lgr);
		return;
	}
	err = net->ops->flow_open(net, lnk, m, (struct sockaddr *)&dest);
	if (err) {
		/* On the wire a full host, as a full group: the opener goes
		 * over TCP, whose connect starts from its own host's ports. */
		if (err == -EADDRNOTAVAIL) {
			counter_inc(&net->stats->connect_no_port);
			if (net->ops->no_port)
				net->ops->no_port(net, (struct sockaddr *)&dest);
		}
		link_post_decline(lnk, m->token, clc_decline_of_errno(err));
	}
}

/* ------------------------------------------------------------------ */
/* Failure and housekeeping. */

/*
 * Takes lgr down: lgr_fail(), or with stopping our own stop closing it
 * (lgr_close_all()). Counted as what it was: a failure, an orderly close
 * of the peer (it said it stops) or one of ours; a failure raised earlier
 * in the batch stays a failure.
 */
static void lgr_down(struct lgr *lgr, int err, bool stopping)
{
	struct smc_net *net = lgr->net;
	bool failed = !!lgr->fail_sched;
	unsigned i;

	if (lgr->state == LGR_DOWN || lgr->state == LGR_NEGATIVE)
		return;
	if (lgr->fail_sched)
		err = lgr->fail_sched;	/* raised first, earlier in the batch */
	if (lgr->state == LGR_HANDSHAKE || lgr->state == LGR_RENDEZVOUS) {
		lgr__handshake_failed(lgr, fallback_of_errno(err));
		return;
	}
	assert(lgr->state == LGR_ACTIVE);
	lgr->state = LGR_DOWN;
	lgr->fail_err = err;
	/* The peer said it stops (DELETE_LINK, ALL and ORDERLY): an orderly
	 * close, whatever error came after it (its socket's end, its
	 * disconnect). A peer that vanishes without a word fails. */
	if (lgr->peer_stopped) {
		counter_inc(&net->stats->lgr_peer_closes);
		lgr_report(lgr, LGR_EV_PEER_CLOSED, err);
	} else if (stopping && !failed) {
		counter_inc(&net->stats->lgr_closes);
		lgr_report(lgr, LGR_EV_CLOSED, err);
	} else {
		counter_inc(&net->stats->lgr_failures);
		lgr_report(lgr, LGR_EV_FAILED, err);
	}
	for (i = 0; i < lgr->n_links; i++) {
		lgr->links[i].state = LINK_DOWN;
		list_del(&lgr->links[i].kick_node);
	}
	while (!list_empty(&lgr->conn_list)) {
		struct conn *c = list_entry(lgr->conn_list.next, struct conn, lgr_node);

		if (c->state != CONN_CLOSED && c->state != CONN_OPENING)
			counter_inc(lgr->peer_stopped ? &net->stats->flows_reset_peer_stopped :
					&net->stats->flows_reset_link);
		conn_link_down(c);
		if (lgr->conn_list.next == &c->lgr_node)	/* not released: cannot be */
			list_del(&c->lgr_node);
	}
	lgr_release(lgr);
	lgr_unlink(lgr);
	loop_defer(net->core, &lgr->defer, lgr_reap);
}

void lgr_fail(struct lgr *lgr, int err)
{
	lgr_down(lgr, err, false);
}

void lgr_link_down(struct link *lnk, int err)
{
	struct lgr *lgr = lnk->lgr;
	struct smc_net *net = lgr->net;
	struct list_head *pos, *tmp;
	struct link *to = NULL;
	unsigned i, n_decl;

	if (lnk->state == LINK_DOWN || lgr->state == LGR_DOWN || lgr->state == LGR_NEGATIVE)
		return;
	if (lnk->down_sched)
		err = lnk->down_sched;	/* raised first, earlier in the batch */
	lnk->state = LINK_DOWN;
	list_del(&lnk->kick_node);
	lnk->kick = false;
	if (lgr->state != LGR_ACTIVE || lgr->fail_sched) {
		lgr_fail(lgr, err);
		return;
	}
	/* Not onto a link that goes down too at the end of this batch. */
	for (i = 0; i < lgr->n_links; i++) {
		struct link *l = &lgr->links[i];

		if (l->state == LINK_ACTIVE && !l->down_sched && (!to || l->n_conns < to->n_conns))
			to = l;
	}
	if (!to) {
		lgr_fail(lgr, err);	/* its flows are reset at once */
		return;
	}
	counter_inc(&net->stats->link_failovers);
	lgr_report(lgr, LGR_EV_LINK_FAILOVER, err);
	/* Declines the dead link still owed go on the survivor. Each was
	 * counted in declines_sent when it was first posted, and
	 * link_post_decline() counts again. A failed post only schedules the
	 * group's failure (lgr.h), and what follows is a no-op on it. */
	n_decl = lnk->n_decline_q;
	lnk->n_decline_q = 0;
	for (i = 0; i < n_decl; i++) {
		unsigned reason = lnk->decline_q[i].reason;

		counter_dec(&net->stats->declines_sent[reason < CLC_DECL__MAX ? reason : 0]);
		link_post_decline(to, lnk->decline_q[i].token, reason);
	}
	/* Limits per link do not hold up a move: flows are not refused. */
	list_for_each_safe(pos, tmp, &lgr->conn_list) {
		struct conn *c = list_entry(pos, struct conn, lgr_node);

		if (c->link != lnk)
			continue;
		counter_inc(&net->stats->flows_moved);
		conn_move_link(c, to);
	}
}

static void lgr_sched(struct lgr *lgr)
{
	if (lgr->sched)
		return;
	lgr->sched = true;
	list_add_tail(&lgr->sched_node, &lgr->net->lgrs_sched);
}

void lgr_fail_sched(struct lgr *lgr, int err)
{
	assert(err != 0);
	if (lgr->fail_sched || lgr->state == LGR_DOWN || lgr->state == LGR_NEGATIVE)
		return;		/* going already: the first error stands */
	lgr->fail_sched = err;
	lgr_sched(lgr);
}

void lgr_link_down_sched(struct link *lnk, int err)
{
	struct lgr *lgr = lnk->lgr;

	assert(err != 0);
	if (lnk->down_sched || lnk->state != LINK_ACTIVE || lgr->state == LGR_DOWN ||
	    lgr->state == LGR_NEGATIVE)
		return;
	lnk->down_sched = err;
	lnk->down_done = lgr->ops->tx_done(lnk);
	lgr_sched(lgr);
}

/*
 * The end of the batch: each scheduled group fails, or loses the links
 * scheduled to go down. Either may schedule more (a survivor's post
 * fails), which this runs too. A group that went down by other means
 * meanwhile left the list in lgr_release().
 */
void lgr__run_sched(struct smc_net *net)
{
	while (!list_empty(&net->lgrs_sched)) {
		struct lgr *lgr = list_entry(net->lgrs_sched.next, struct lgr, sched_node);
		unsigned i;

		list_del(&lgr->sched_node);
		lgr->sched = false;
		if (lgr->fail_sched) {
			lgr_fail(lgr, lgr->fail_sched);
			continue;
		}
		for (i = 0; i < lgr->n_links; i++)
			if (lgr->links[i].down_sched && lgr->links[i].state == LINK_ACTIVE)
				lgr_link_down(&lgr->links[i], lgr->links[i].down_sched);
	}
}

void lgr_sweep(struct smc_net *net, uint64_t now)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		switch (lgr->state) {
		case LGR_HANDSHAKE:
		case LGR_RENDEZVOUS:
			if (now >= lgr->deadline_ms)
				lgr__handshake_failed(lgr, FB_DECL_TIMEOUT);
			break;
		case LGR_NEGATIVE:
			if (now >= lgr->neg_until_ms && list_empty(&lgr->waiting)) {
				lgr_unlink(lgr);
				lgr__free(lgr);
			}
			break;
		case LGR_ACTIVE: {
			struct list_head *cpos, *ctmp;

			/* Not in deadline order: an overdue open gets a
			 * longer second deadline at the tail. */
			list_for_each_safe(cpos, ctmp, &lgr->connecting) {
				struct conn *c = list_entry(cpos, struct conn, wait_node);

				if (now < c->deadline_ms)
					continue;
				list_del(&c->wait_node);
				conn_on_deadline(c);
				if (lgr->state != LGR_ACTIVE)
					break;
			}
			if (lgr->state != LGR_ACTIVE)
				break;
			list_for_each_safe(cpos, ctmp, &lgr->grown)
				conn_maybe_shrink(list_entry(cpos, struct conn, grown_node), now);
			break;
		}
		case LGR_DOWN:
			break;
		}
	}
}

unsigned lgr_delete_all(struct smc_net *net)
{
	struct lgr *lgr = NULL;
	unsigned i, n = 0;

	while ((lgr = lgr_next(net, lgr))) {
		if (lgr->state != LGR_ACTIVE || !lgr->peer_delete || lgr_failing(lgr))
			continue;
		for (i = 0; i < lgr->n_links; i++) {
			struct link *lnk = &lgr->links[i];

			if (link_post_delete(lnk, LLC_DEL_ALL | LLC_DEL_ORDERLY))
				continue;	/* no room, or failing: the others tell it */
			lnk->delete_posted = true;
			lnk->delete_seq = lnk->tx_seq;
			n++;
		}
	}
	return n;
}

bool lgr_deletes_done(struct smc_net *net)
{
	struct lgr *lgr = NULL;
	unsigned i;

	while ((lgr = lgr_next(net, lgr))) {
		for (i = 0; i < lgr->n_links; i++) {
			struct link *lnk = &lgr->links[i];

			/* A link that failed meanwhile will send nothing more. */
			if (!lnk->delete_posted || link_failing(lnk))
				continue;
			if ((int32_t)(lgr->ops->tx_done(lnk) - lnk->delete_seq) < 0)
				return false;
		}
	}
	return true;
}

void lgr_close_all(struct smc_net *net)
{
	while (!list_empty(&net->lgrs)) {
		struct lgr *lgr = list_entry(net->lgrs.next, struct lgr, node);

		if (lgr->state == LGR_ACTIVE) {
			lgr_down(lgr, -ESHUTDOWN, true);
			continue;
		}
		lgr_release(lgr);
		lgr_release_waiting(lgr, FB_NO_LINK);
		lgr_unlink(lgr);
		loop_defer(net->core, &lgr->defer, lgr_reap);
	}
}
