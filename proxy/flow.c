/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "flow.h"
#include "origdst.h"
#include "proxy.h"
#include "relay.h"

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
		[FB_DECL_NO_DEVICE] = "no_device", [FB_DECL_VERSION] = "version_mismatch",
		[FB_DECL_MAX_FLOWS] = "max_flows", [FB_DECL_NO_MEMORY] = "out_of_memory",
		[FB_DECL_POLICY] = "policy", [FB_DECL_TIMEOUT] = "timeout",
		[FB_DECL_INTERNAL] = "internal",
	};

	return r < FB__MAX ? names[r] : "unknown";
}

const char *flow_state_name(const struct flow *f)
{
	return relay_state_name(f->relay.state);
}

/*
 * The SMC decision, made locally for now: a destination outside every peer
 * prefix has no daemon to talk to; inside one, a link transport would be
 * tried, and until link groups exist the flow falls back with no_link.
 */
static enum fallback_reason flow_choose_reason(const struct proxy *p,
					       const struct sockaddr *dest)
{
	const struct cfg *cfg = p->cfg;
	size_t i;

	if (p->transport == CFG_TRANSPORT_TCP)
		return FB_TRANSPORT_TCP;
	for (i = 0; i < cfg->n_peers; i++)
		if (addr_in_prefix(dest, &cfg->peers[i].prefix))
			return FB_NO_LINK;
	return FB_NO_PEER;
}

static void flow_relay_ended(struct relay *r, enum relay_end how, int err)
{
	struct flow *f = (struct flow *)((char *)r - offsetof(struct flow, relay));
	struct proxy_stats *st = &f->proxy->stats;

	switch (how) {
	case RELAY_END_CONNECT_FAILED:
		st->connect_failures++;
		break;
	case RELAY_END_CONNECT_TIMEOUT:
		st->connect_timeouts++;
		break;
	case RELAY_END_RESET:
		st->resets++;
		break;
	case RELAY_END_CLEAN:
	case RELAY_END_ABORTED:
		break;
	}
	st->flows_active[f->mode]--;
	st->flows_closed[f->mode]++;
	f->proxy->ops->event(f->proxy, PROXY_EV_FLOW_ENDED, f, err);
}

static void flow_relay_closed(struct relay *r)
{
	struct flow *f = (struct flow *)((char *)r - offsetof(struct flow, relay));
	struct proxy *p = f->proxy;

	list_del(&f->node);
	proxy__out_del(p, f);
	p->n_flows--;
	free(f);
	proxy__flow_freed(p);
}

static const struct relay_ops flow_relay_ops = {
	.ended = flow_relay_ended,
	.closed = flow_relay_closed,
};

static void flow_reject(int fd)
{
	relay_set_rst_on_close(fd);
	close(fd);
}

int flow_open(struct proxy *p, int fd, const struct sockaddr_storage *client)
{
	struct sockaddr_storage local;
	socklen_t len;
	struct flow *f;
	int err;

	f = calloc(1, sizeof(*f));
	if (!f) {
		flow_reject(fd);
		return -ENOMEM;
	}
	f->proxy = p;
	f->client = *client;
	list_init(&f->node);

	err = origdst_get(fd, &local, &f->dest);
	if (!err && addr_equal((struct sockaddr *)&local, (struct sockaddr *)&f->dest))
		err = -ENOENT;	/* connected to our listener directly */
	if (!err)
		err = proxy_check_loop(p, (struct sockaddr *)&f->dest);
	/*
	 * One of our own outbound connections, redirected back to us because
	 * the rule does not exempt our mark: refusing it resets that flow
	 * too, instead of multiplying flows until fds run out.
	 */
	if (!err && proxy__out_find(p, (struct sockaddr *)client,
				    (struct sockaddr *)&f->dest))
		err = -EHOSTUNREACH;
	if (err) {
		p->stats.loops_refused++;
		p->ops->event(p, PROXY_EV_LOOP_REFUSED, f, err);
		goto out_reject;
	}

	f->mode = FLOW_MODE_TCP;
	f->reason = flow_choose_reason(p, (struct sockaddr *)&f->dest);
	err = relay_start(&f->relay, &p->relay_env, fd, (struct sockaddr *)&f->dest,
			  &p->relay_params, &flow_relay_ops);
	if (err) {
		/* An immediate connect error is the destination's answer;
		 * anything else is ours (fd exhaustion, memory, SO_MARK). */
		if (err == -ECONNREFUSED || err == -ENETUNREACH ||
		    err == -EHOSTUNREACH || err == -EADDRNOTAVAIL)
			p->stats.connect_failures++;
		p->ops->event(p, PROXY_EV_FLOW_SETUP_FAILED, f, err);
		goto out_reject;
	}

	len = sizeof(f->out_local);
	if (getsockname(f->relay.fd[RELAY_SERVER], (struct sockaddr *)&f->out_local, &len) == 0)
		proxy__out_add(p, f);

	f->id = ++p->next_flow_id;
	f->created_ms = uv_now(p->loop);
	list_add_tail(&f->node, &p->flows);
	p->n_flows++;
	p->stats.flows_active[f->mode]++;
	p->stats.fallback[f->reason]++;
	return 0;

out_reject:
	flow_reject(fd);
	free(f);
	return err;
}

void flow_abort(struct flow *f)
{
	relay_abort(&f->relay);
}
