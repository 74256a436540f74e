/* SPDX-License-Identifier: MIT */
/* The data plane of one event loop: redirect listeners and their flows. */
#ifndef SMCPROXY_PROXY_H
#define SMCPROXY_PROXY_H

#include "proxy-t.h"

/*
 * Binds and listens on every cfg->listen address, or takes the adopted
 * socket bound to it (params: where this proxy runs; NULL for one worker
 * alone). Everything of *p is set here: the caller fills in nothing
 * first. Returns 0, or -errno with errbuf naming the address that failed.
 * Nothing is accepted until proxy_start(). cfg must outlive the proxy or
 * be replaced by proxy_set_cfg() first.
 */
int proxy_init(struct proxy *p, uv_loop_t *loop, const struct cfg *cfg,
	       const struct proxy_params *params, const struct proxy_ops *ops,
	       char *errbuf, size_t errlen);
/* Whether proxy_init() skipped cfg->listen[i]: IPv6 is not available here. */
static inline bool proxy_listen_skipped(const struct proxy *p, size_t i)
{
	return i < CFG_LISTEN_MAX && (p->listen_skipped[i / 64] >> (i % 64) & 1);
}
void proxy_start(struct proxy *p);
/*
 * Runs p's event loop (as uv_run(UV_RUN_DEFAULT) would) with the data
 * plane's epoll set as the outer poller: one epoll_wait per wake-up. The
 * loop must be p's alone. Returns when nothing is left in the loop.
 */
int proxy_run(struct proxy *p);
/* Closes the listeners; flows go on. */
void proxy_stop_accepting(struct proxy *p);
/* Applies the live keys of a reloaded config. */
void proxy_set_cfg(struct proxy *p, const struct cfg *cfg);
/* Resets every flow (RST to both legs), because the daemon stops: a peer
 * daemon that takes it is told so (smcproxy-protocol(7), CDC messages). */
void proxy_abort_flows(struct proxy *p);
/* Closes everything; close_cb runs when all handles are closed. */
void proxy_close(struct proxy *p, void (*close_cb)(struct proxy *p));

/* Decides whether an accepted connection's original destination is one we
 * must refuse: 0 to proceed, -ELOOP when it is one of our listeners. */
int proxy_check_loop(const struct proxy *p, const struct sockaddr *dest);

/* Private to proxy/: flow.c tells the proxy a flow's memory is gone, and
 * keeps the index of outbound sockets. */
void proxy__flow_freed(struct proxy *p);
void proxy__out_add(struct proxy *p, struct flow *f);
void proxy__out_del(struct proxy *p, struct flow *f);
/* Whether peer -> dest is an outbound connection of ours: 0 if not;
 * -EHOSTUNREACH, one of this proxy's flows; -EADDRINUSE, another worker's
 * (the kernel says a socket with our mark, or with no mark configured a
 * live socket, holds the tuple); -ENOTUNIQ, another worker's had the
 * tuple and the kernel would not say whose socket holds it now. */
int proxy__out_find(const struct proxy *p, const struct sockaddr *peer,
		    const struct sockaddr *dest);

/* Out of fds or memory: accepting (redirect and control) backs off. */
void proxy__pause_accepting(struct proxy *p, int err);

/* An outbound connect to dest found no free source port (counted by the
 * caller in stats.connect_no_port): starts an episode if none runs. */
void proxy__no_port(struct proxy *p, const struct sockaddr *dest);
void proxy__port_found_slow(struct proxy *p);

/* An outbound connect got a source port: ends the episode, if one runs.
 * A test of one flag on the connect path. */
static inline void proxy__port_found(struct proxy *p)
{
	if (__builtin_expect(p->no_port, 0))
		proxy__port_found_slow(p);
}

const char *flow_mode_name(enum flow_mode m);
const char *fallback_reason_name(enum fallback_reason r);
const char *flow_state_name(const struct flow *f);

#endif
