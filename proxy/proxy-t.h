/* SPDX-License-Identifier: MIT */
/* Types of the data plane of one event loop. Types only. */
#ifndef SMCPROXY_PROXY_T_H
#define SMCPROXY_PROXY_T_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "cfg-t.h"
#include "core/list.h"
#include "core/loop-t.h"
#include "core/pipe_pool-t.h"
#include "relay/relay-t.h"
#include "smc/net-t.h"
#include "smc/stats-t.h"

struct proxy;
struct flow;
struct link;

#define PROXY_OUT_HASH_SIZE 4096	/* a power of two */

/* A redirect listener. We accept by hand (not uv_tcp) so that fd
 * exhaustion pauses accepting instead of libuv's accept-and-drop. */
struct listener {
	struct proxy *proxy;
	uv_poll_t poll;
	int fd;
	struct sockaddr_storage addr;	/* as bound */
	/* A "tproxy" listener (IP_TRANSPARENT): what it accepts was TPROXY'd
	 * in PREROUTING, and its original destination is the accepted
	 * socket's own address. Else a REDIRECT listener (SO_ORIGINAL_DST). */
	bool transparent;
};

/* Things the daemon may want to log; proxy/ itself never logs. */
enum proxy_event {
	PROXY_EV_ACCEPT_PAUSED,		/* err: accept4()'s error */
	PROXY_EV_ACCEPT_RESUMED,
	PROXY_EV_ACCEPT_ERROR,		/* err: an unexpected accept4() error */
	/* flow: client set; err: -ENOENT not redirected, -ELOOP aimed at our
	 * listener, -EHOSTUNREACH our own outbound connection came back */
	PROXY_EV_LOOP_REFUSED,
	PROXY_EV_FLOW_SETUP_FAILED,	/* flow: client and dest set; err */
	PROXY_EV_FLOW_ENDED,		/* flow; err: relay's, if any */
};

struct lgr;

struct proxy_ops {
	void (*event)(struct proxy *p, enum proxy_event ev,
		      const struct flow *f, int err);
	/* May be NULL. */
	void (*lgr_event)(struct proxy *p, enum lgr_event ev,
			  const struct lgr *lgr, int err);
	/* A peer daemon refused on the control port or in its handshake
	 * (smc_net_ops.peer_refused). May be NULL. */
	void (*peer_refused)(struct proxy *p, const struct sockaddr *peer,
			     enum smc_refusal why);
	/* The ring budget ran out or has room again (smc_net_ops.ring_short).
	 * May be NULL. */
	void (*ring_short)(struct proxy *p, enum rmb_short why,
			   const struct rmb_peer *peer);
	/* An outbound connect (the relay's, or one a peer opened) found no
	 * free source port to dest: once when an episode starts. dest NULL:
	 * a connect found one again, after refused connects found none.
	 * May be NULL. */
	void (*no_port)(struct proxy *p, const struct sockaddr *dest, uint64_t refused);
	/* The last flow ended (used by the shutdown drain). */
	void (*idle)(struct proxy *p);
};

/*
 * Where a proxy runs, from its owner to proxy_init() (NULL: one worker
 * alone, nothing to adopt).
 */
struct proxy_params {
	unsigned worker;		/* index of the worker running this proxy */
	unsigned n_workers;		/* how many there are (0 counts as 1) */
	bool reuseport;			/* other workers bind the same addresses */
	/* Listening sockets opened by someone else (systemd socket
	 * activation): a listen address that one of them is bound to uses
	 * it instead of a new socket. proxy_init() owns them, whatever it
	 * returns: it closes those no listen address wants and counts them
	 * in n_adopt_unused. */
	const int *adopt_fds;
	size_t n_adopt;
};

struct intercept;

struct proxy {
	uv_loop_t *loop;
	const struct cfg *cfg;		/* current config: live keys only */
	const struct proxy_ops *ops;
	void *data;			/* the owner's */
	/* From struct proxy_params, at proxy_init(). */
	unsigned worker;		/* index of the worker running this proxy */
	unsigned n_workers;		/* how many there are (0 counts as 1) */
	bool reuseport;			/* other workers bind the same addresses */
	/* intercept ebpf: where accepted connections' original destinations
	 * are (NULL: iptables, SO_ORIGINAL_DST). Owned by the daemon, set
	 * before the worker thread starts. */
	struct intercept *intercept;

	/* Captured at init: these need a restart to change, so a reload
	 * must not change them under running flows. */
	struct relay_params relay_params;
	struct relay_env relay_env;
	struct loop core;		/* the event loop: epoll set, hooks, deferred frees */
	struct loop_hook done_hook;	/* LOOP_BATCH_DONE: proxy_maybe_closed() */
	struct pipe_pool pipes;
	enum cfg_transport transport;

	struct listener *listeners;
	size_t n_listeners;
	size_t n_adopted, n_adopt_unused;
	/* Bit i: cfg->listen[i] was skipped, no IPv6 here (proxy_listen_skipped()). */
	uint64_t listen_skipped[(CFG_LISTEN_MAX + 63) / 64];
	bool accepting;
	bool paused;			/* fd exhaustion back-off running */
	uint64_t pause_ms;
	bool no_port;			/* source ports ran out, none found since */
	uint64_t no_port_from;		/* stats.connect_no_port before that */
	uv_timer_t pause_timer;
	uv_timer_t idle_timer;		/* relay.idle_timeout sweep */

	struct list_head flows;
	/* Flows by the local port of their outbound socket. */
	struct flow *out_hash[PROXY_OUT_HASH_SIZE];
	counter_t n_flows;		/* the daemon reads it (core/counter.h) */
	uint64_t next_flow_id;

	/* Link groups, the control port and the transports. */
	struct smc_net smc;
	struct proxy_stats stats;
	bool loop_open;			/* core is set up */
	bool closing;
	bool loop_closing;		/* loop_close() called */
	void (*close_cb)(struct proxy *p);
};

#endif
