/* SPDX-License-Identifier: MIT */
/*
 * Flows: one per redirected application connection, carried over a link
 * group to the destination host's daemon when there is one, else relayed
 * over plain TCP with the reason counted. The application cannot tell:
 * a flow only ever reads its socket once its path is settled, so a decline
 * or a failed handshake falls back without losing a byte.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "smc/conn.h"
#include "smc/fallback.h"
#include "flow.h"
#include "smc/lgr.h"
#include "smc/policy.h"
#include "core/origdst.h"
#include "intercept/bypass.h"
#include "intercept/intercept.h"
#include "core/sock.h"
#include "proxy.h"
#include "relay/relay.h"

const char *flow_mode_name(enum flow_mode m)
{
	static const char *const names[] = {
		[FLOW_MODE_TCP] = "tcp", [FLOW_MODE_SHM] = "shm", [FLOW_MODE_RDMA] = "rdma",
	};

	return m < FLOW_MODE__MAX ? names[m] : "unknown";
}

const char *fallback_reason_name(enum fallback_reason r)
{
	static const char *const names[] = {
		[FB_NONE] = "none", [FB_NO_PEER] = "no_peer",
		[FB_TRANSPORT_TCP] = "transport_tcp", [FB_NO_LINK] = "no_link",
		[FB_PEER_UNREACHABLE] = "peer_unreachable",
		[FB_NO_RENDEZVOUS] = "no_rendezvous", [FB_PEER_STOPPED] = "peer_stopped",
		[FB_DECL_NO_DEVICE] = "no_device", [FB_DECL_VERSION] = "version_mismatch",
		[FB_DECL_MAX_FLOWS] = "max_flows", [FB_DECL_NO_MEMORY] = "out_of_memory",
		[FB_DECL_POLICY] = "policy", [FB_DECL_TIMEOUT] = "timeout",
		[FB_DECL_INTERNAL] = "internal", [FB_DECL_STOPPING] = "stopping",
	};

	return r < FB__MAX ? names[r] : "unknown";
}

const char *flow_state_name(const struct flow *f)
{
	if (f->lgr)
		return "handshake";
	if (f->conn_carries)
		return conn_state_name(&f->conn);
	return relay_state_name(f->relay.state);
}

const struct flow *flow_next(const struct proxy *p, const struct flow *prev)
{
	const struct list_head *pos = prev ? prev->node.next : p->flows.next;

	return pos == &p->flows ? NULL : list_entry(pos, struct flow, node);
}

void flow_bytes(const struct flow *f, uint64_t *in, uint64_t *out)
{
	if (f->conn_carries) {
		/* The opener reads the client; the acceptor writes the server. */
		*in = f->peer_opened ? f->conn.bytes_rx : f->conn.bytes_tx;
		*out = f->peer_opened ? f->conn.bytes_tx : f->conn.bytes_rx;
	} else {
		*in = f->relay.dir[RELAY_CLIENT].bytes;
		*out = f->relay.dir[RELAY_SERVER].bytes;
	}
}

void flow_rings(const struct flow *f, uint32_t *rx, uint32_t *tx)
{
	*rx = f->conn_carries && f->conn.rmb ? f->conn.rmb->size : 0;
	*tx = f->conn_carries && f->conn.tx_ring ? f->conn.tx_size : 0;
}

uint64_t flow_last_active(const struct flow *f)
{
	if (f->lgr)
		return uv_now(f->proxy->loop);	/* the handshake has its own deadline */
	return f->conn_carries ? f->conn.last_active_ms : f->relay.last_active_ms;
}

bool flow_is_ending(const struct flow *f)
{
	if (f->lgr)
		return false;
	return f->conn_carries ? f->conn.state == CONN_CLOSED : f->relay.state == RELAY_CLOSING;
}

/*
 * Which peers[] entry dest goes to (*pfx), or why the flow has no peer to
 * go to: "transport": "tcp", or no prefix. The longest prefix that holds
 * dest decides, whatever the order of the entries, as it does for the
 * proposals a peer makes (policy_peer()): a pod CIDR inside a wider
 * prefix of hosts goes to its node's daemon.
 */
static enum fallback_reason flow_route(const struct proxy *p, const struct sockaddr *dest,
				       size_t *pfx)
{
	const struct cfg_peer *peer;

	if (p->transport == CFG_TRANSPORT_TCP)
		return FB_TRANSPORT_TCP;
	peer = policy_peer(p->cfg, dest);
	if (!peer)
		return FB_NO_PEER;
	*pfx = (size_t)(peer - p->cfg->peers);
	return FB_NONE;
}

static void flow_reject(int fd)
{
	sock_set_rst_on_close(fd);
	close(fd);
}

/* Unlinks and frees a flow once nothing refers to it. */
static void flow_maybe_free(struct flow *f)
{
	struct proxy *p = f->proxy;

	if (f->conn_live || f->relay_live || f->lgr)
		return;
	list_del(&f->node);
	proxy__out_del(p, f);
	counter_dec(&p->n_flows);
	free(f);
	proxy__flow_freed(p);
}

static void flow_ended(struct flow *f, int err)
{
	struct proxy_stats *st = &f->proxy->stats;

	counter_dec(&st->flows_active[f->mode]);
	counter_inc(&st->flows_closed[f->mode]);
	f->proxy->ops->event(f->proxy, PROXY_EV_FLOW_ENDED, f, err);
}

/* ------------------------------------------------------------------ */
/* Over TCP. */

static void flow_relay_ended(struct relay *r, enum relay_end how, int err)
{
	struct flow *f = container_of(r, struct flow, relay);
	struct proxy_stats *st = &f->proxy->stats;

	switch (how) {
	case RELAY_END_CONNECT_FAILED:
		counter_inc(&st->connect_failures);
		break;
	case RELAY_END_CONNECT_TIMEOUT:
		counter_inc(&st->connect_timeouts);
		break;
	case RELAY_END_RESET:
		counter_inc(&st->resets);
		break;
	case RELAY_END_CLEAN:
	case RELAY_END_ABORTED:
		break;
	}
	flow_ended(f, err);
}

static void flow_relay_closed(struct relay *r)
{
	struct flow *f = container_of(r, struct flow, relay);

	assert(f->relay_live && !f->conn_carries);
	f->relay_live = false;
	flow_maybe_free(f);
}

/* The credit a bypassed flow's reads give back, in steps of a quarter. */
static uint64_t flow_bypass_step(const struct flow *f)
{
	uint64_t step = f->proxy->intercept->bypass.credit / 4;

	return step ? step : 1;
}

/* Errors are not ours to act on: a flow whose entry is gone (the app
 * closed) or that cannot be refilled goes over TCP when its credit ends,
 * which is safe. */
static void flow_relay_bypass_read(struct relay *r, uint64_t total)
{
	struct flow *f = container_of(r, struct flow, relay);

	(void)bypass_refill(f->proxy->intercept, (struct sockaddr *)&f->client,
			    f->bypass_base + total);
}

static const struct relay_ops flow_relay_ops = {
	.ended = flow_relay_ended,
	.closed = flow_relay_closed,
	.bypass_read = flow_relay_bypass_read,
};

/* Relays fd to the destination over TCP. On failure fd is closed with an
 * RST, and the flow is not counted as active. */
static int flow_start_relay(struct flow *f, int fd, enum fallback_reason reason)
{
	struct proxy *p = f->proxy;
	socklen_t len;
	int err;

	/* A flow starts on the relay once: never parked, never relayed yet
	 * (a declined conn hands its socket over, and stays to close). */
	assert(!f->lgr && !f->relay_live);
	f->mode = FLOW_MODE_TCP;
	f->reason = reason;
	f->conn_carries = false;
	err = relay_start(&f->relay, &p->relay_env, fd, (struct sockaddr *)&f->dest,
			  &p->relay_params, &flow_relay_ops);
	if (err) {
		/* An immediate connect error is the destination's answer;
		 * anything else is ours (fd exhaustion, memory, SO_MARK). */
		if (err == -ECONNREFUSED || err == -ENETUNREACH ||
		    err == -EHOSTUNREACH || err == -EADDRNOTAVAIL)
			counter_inc(&p->stats.connect_failures);
		/* No source port left: the host's budget, not this flow's
		 * fault, told once per episode rather than per flow. */
		if (err == -EADDRNOTAVAIL) {
			counter_inc(&p->stats.connect_no_port);
			proxy__no_port(p, (struct sockaddr *)&f->dest);
		} else {
			p->ops->event(p, PROXY_EV_FLOW_SETUP_FAILED, f, err);
		}
		flow_reject(fd);
		return err;
	}
	proxy__port_found(p);
	f->relay_live = true;
	if (f->bypass) {
		/* A declined conn may have read from the socket already. */
		f->bypass_base = f->conn.bytes_tx;
		f->relay.bypass_step = f->relay.bypass_next = flow_bypass_step(f);
	}
	len = sizeof(f->out_local);
	if (getsockname(f->relay.fd[RELAY_SERVER], (struct sockaddr *)&f->out_local, &len) == 0)
		proxy__out_add(p, f);
	counter_inc(&p->stats.flows_active[f->mode]);
	counter_inc(&p->stats.fallback[f->reason]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Over a link group. */

static void flow_conn_ended(struct conn *c, enum conn_end how, int err, enum fallback_reason fb)
{
	struct flow *f = container_of(c, struct flow, conn);
	struct proxy_stats *st = &f->proxy->stats;

	switch (how) {
	case CONN_END_DECLINED:
		/* Nothing crossed the link: go on over TCP. */
		counter_dec(&st->flows_active[f->mode]);
		/* A failure here was reported as FLOW_SETUP_FAILED; the flow
		 * goes once its conn closed. */
		flow_start_relay(f, conn_take_fd(c), fb);
		return;
	case CONN_END_CONNECT_FAILED:
		break;		/* counted where the connect failed */
	case CONN_END_CONNECT_TIMEOUT:
		counter_inc(&st->connect_timeouts);
		break;
	case CONN_END_RESET:
	case CONN_END_PROTOCOL:
	case CONN_END_LINK_DOWN:
	case CONN_END_PEER_STOPPED:
		counter_inc(&st->resets);
		break;
	case CONN_END_CLEAN:
	case CONN_END_ABORTED:
		break;
	}
	flow_ended(f, err);
}

static void flow_conn_closed(struct conn *c)
{
	struct flow *f = container_of(c, struct flow, conn);

	assert(f->conn_live);
	f->conn_live = false;
	flow_maybe_free(f);
}

static void flow_conn_bypass_read(struct conn *c, uint64_t total)
{
	struct flow *f = container_of(c, struct flow, conn);

	(void)bypass_refill(f->proxy->intercept, (struct sockaddr *)&f->client, total);
}

static const struct conn_ops flow_conn_ops = {
	.ended = flow_conn_ended,
	.closed = flow_conn_closed,
	.bypass_read = flow_conn_bypass_read,
};

static void flow_start_conn(struct flow *f, struct lgr *lgr)
{
	struct proxy *p = f->proxy;
	int fd = f->fd;
	int err;

	/* Only from the flow's open or its group's wake-up: nothing carries
	 * it yet, and it is parked no more. */
	assert(!f->lgr && !f->conn_live && !f->relay_live && lgr->state == LGR_ACTIVE);
	f->fd = -1;
	err = conn_open(&f->conn, lgr, fd, (struct sockaddr *)&f->dest,
			(struct sockaddr *)&f->client, &flow_conn_ops);
	if (err) {
		if (flow_start_relay(f, fd, fallback_of_errno(err)))
			flow_maybe_free(f);
		return;
	}
	f->conn_live = true;
	f->conn_carries = true;
	if (f->bypass)
		f->conn.bypass_step = f->conn.bypass_next = flow_bypass_step(f);
	f->mode = lgr->ops->mode;
	f->reason = FB_NONE;
	counter_inc(&p->stats.flows_active[f->mode]);
}

/* The link group f was parked on is up (lgr), or failed (NULL: the flow
 * goes over TCP with reason). */
static void flow_on_lgr_ready(struct lgr_waiter *w, struct lgr *lgr, enum fallback_reason reason)
{
	struct flow *f = container_of(w, struct flow, waiter);
	int fd = f->fd;

	assert(f->lgr && !f->conn_live && !f->relay_live);
	f->lgr = NULL;
	if (lgr) {
		flow_start_conn(f, lgr);
		return;
	}
	f->fd = -1;
	if (flow_start_relay(f, fd, reason))
		flow_maybe_free(f);
}

static struct flow *flow_new(struct proxy *p, const struct sockaddr_storage *client)
{
	struct flow *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->proxy = p;
	f->client = *client;
	f->fd = -1;
	list_init(&f->node);
	list_init(&f->waiter.node);
	f->waiter.ready = flow_on_lgr_ready;
	return f;
}

static void flow_register(struct proxy *p, struct flow *f)
{
	f->id = ++p->next_flow_id;
	f->created_ms = uv_now(p->loop);
	list_add_tail(&f->node, &p->flows);
	counter_inc(&p->n_flows);
}

/*
 * The original destination of a TPROXY'd connection: the address it was
 * sent to is the accepted socket's own (no NAT, no conntrack needed).
 * When that is the listener's own port, the connection was either
 * REDIRECTed to it (a bridged pod's, which TPROXY cannot take while
 * br_netfilter runs iptables inside the bridge: its NAT record names the
 * destination) or made to the listener directly, not diverted at all:
 * -ENOENT.
 */
static int flow_tproxy_dest(int fd, const struct listener *l, struct sockaddr_storage *local,
			    struct sockaddr_storage *dest)
{
	socklen_t len = sizeof(*local);

	if (getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return -errno;
	memcpy(dest, local, sizeof(*dest));
	addr_unmap_v4(dest);
	if (addr_port((struct sockaddr *)local) != addr_port((const struct sockaddr *)&l->addr))
		return 0;
	if (origdst_get(fd, local, dest) < 0)
		return -ENOENT;
	addr_unmap_v4(dest);
	if (addr_equal((struct sockaddr *)local, (struct sockaddr *)dest))
		return -ENOENT;
	return 0;
}

/* Where the accepted connection fd from client was going, and our end of
 * it: from the intercept's map (ebpf) or from its NAT record (iptables).
 * In ebpf mode our end is the listener the hooks chose, known without
 * asking the socket: one system call less per connection. */
static int flow_origdst(struct proxy *p, int fd, const struct sockaddr_storage *client,
			struct sockaddr_storage *local, struct sockaddr_storage *dest)
{
	socklen_t len = sizeof(*local);

	if (!p->intercept)
		return origdst_get(fd, local, dest);
	if (intercept_local(p->intercept, (const struct sockaddr *)client, local) < 0 &&
	    getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return -errno;
	return intercept_origdst(p->intercept, (struct sockaddr *)local,
				 (const struct sockaddr *)client, dest);
}

int flow_open(struct proxy *p, int fd, const struct sockaddr_storage *client,
	      const struct listener *l)
{
	struct sockaddr_storage local;
	enum fallback_reason reason;
	struct lgr *lgr;
	struct flow *f;
	size_t pfx = 0;
	int err;

	f = flow_new(p, client);
	if (!f) {
		flow_reject(fd);
		return -ENOMEM;
	}
	if (l->transparent) {
		err = flow_tproxy_dest(fd, l, &local, &f->dest);
	} else {
		err = flow_origdst(p, fd, client, &local, &f->dest);
		if (!err && addr_equal((struct sockaddr *)&local, (struct sockaddr *)&f->dest))
			err = -ENOENT;	/* connected to our listener directly */
	}
	if (!err)
		err = proxy_check_loop(p, (struct sockaddr *)&f->dest);
	/*
	 * One of our own outbound connections, redirected back to us because
	 * the rule does not exempt our mark: refusing it resets that flow
	 * too, instead of multiplying flows until fds run out.
	 */
	if (!err) {
		struct sockaddr_storage orig;

		err = proxy__out_find(p, (struct sockaddr *)client, (struct sockaddr *)&f->dest);
		/* Or a client whose reply tuple clashed with an older conntrack
		 * entry's, so that NAT gave it another source port: by chance
		 * that of one of our outbound connections to the same
		 * destination. Its conntrack entry says where it really came
		 * from; when it cannot, the refusal stands. No NAT in ebpf
		 * mode: the address we see is the client's. */
		if (err && !p->intercept && origdst_src((struct sockaddr *)&local, (struct sockaddr *)client, &orig) == 0 &&
		    !addr_equal((struct sockaddr *)&orig, (struct sockaddr *)client))
			err = 0;
	}
	if (err) {
		counter_inc(&p->stats.loops_refused);
		p->ops->event(p, PROXY_EV_LOOP_REFUSED, f, err);
		flow_reject(fd);
		free(f);
		return err;
	}

	/* Joined in the bypass before we accepted it: it must not be
	 * spliced. An error leaves it unknown, so it is taken as joined
	 * (reading it as one costs only speed). */
	if (p->intercept && p->intercept->bypass.on && !l->transparent) {
		f->bypass = bypass_joined(p->intercept, fd, (const struct sockaddr *)client) != 0;
		if (f->bypass)
			counter_inc(&p->stats.flows_bypassed);
	}
	reason = flow_route(p, (struct sockaddr *)&f->dest, &pfx);
	lgr = reason ? NULL : lgr_for_dest(&p->smc, (struct sockaddr *)&f->dest, pfx, &reason);
	flow_register(p, f);
	if (lgr) {
		f->fd = fd;
		if (lgr->state == LGR_ACTIVE) {
			flow_start_conn(f, lgr);
		} else {
			/* Not read until the group is up or failed. */
			f->lgr = lgr;
			list_add_tail(&f->waiter.node, &lgr->waiting);
		}
		return 0;
	}
	err = flow_start_relay(f, fd, reason);
	if (err)
		flow_maybe_free(f);
	return err;
}

int flow_accept_peer(struct proxy *p, struct link *lnk, const struct llc_flow_open *m,
		     const struct sockaddr *dest)
{
	struct lgr *lgr = lnk->lgr;
	struct flow *f;
	int err;

	if (!p->accepting)
		return -ESHUTDOWN;	/* draining: the peer goes over TCP */
	f = flow_new(p, &lgr->peer);
	if (!f)
		return -ENOMEM;
	memcpy(&f->dest, dest, addr_len(dest));
	f->peer_opened = true;
	err = conn_accept(&f->conn, lnk, m, dest, &flow_conn_ops);
	if (err) {
		free(f);
		return err;
	}
	proxy__port_found(p);
	flow_register(p, f);
	f->conn_live = true;
	f->conn_carries = true;
	f->mode = lgr->ops->mode;
	counter_inc(&p->stats.flows_active[f->mode]);
	return 0;
}

void flow_abort(struct flow *f)
{
	if (f->lgr) {
		/* Parked: nothing started yet. */
		list_del(&f->waiter.node);
		f->lgr = NULL;
		flow_reject(f->fd);
		f->fd = -1;
		flow_maybe_free(f);
		return;
	}
	if (f->conn_carries)
		conn_abort(&f->conn);
	else if (f->relay_live)
		relay_abort(&f->relay);
}
