/* SPDX-License-Identifier: MIT */
/* Types of the data plane of one event loop. Types only. */
#ifndef SMCPROXY_PROXY_T_H
#define SMCPROXY_PROXY_T_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "cfg-t.h"
#include "smc/clc-t.h"
#include "smc/cork.h"
#include "core/defer-t.h"
#include "core/list.h"
#include "smc/rmb-t.h"
#include "relay/relay-t.h"
#include "smc/transport-t.h"
#include "stats-t.h"

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

/* What happened to a link group, for the daemon's log. */
enum proxy_lgr_event {
	PROXY_LGR_UP,		/* the group is active */
	PROXY_LGR_NO_GROUP,	/* client: the handshake failed; reason in lgr->neg_reason */
	PROXY_LGR_FAILED,	/* an active group failed; err: why */
	PROXY_LINK_FAILOVER,	/* a link failed, its flows moved to another */
};

struct lgr;

struct proxy_ops {
	void (*event)(struct proxy *p, enum proxy_event ev,
		      const struct flow *f, int err);
	/* May be NULL. */
	void (*lgr_event)(struct proxy *p, enum proxy_lgr_event ev,
			  const struct lgr *lgr, int err);
	/* The last flow ended (used by the shutdown drain). */
	void (*idle)(struct proxy *p);
};

struct proxy {
	uv_loop_t *loop;
	const struct cfg *cfg;		/* current config: live keys only */
	const struct proxy_ops *ops;
	void *data;			/* the owner's */
	/* Set by the owner before proxy_init(), which keeps them. */
	unsigned worker;		/* index of the worker running this proxy */
	unsigned n_workers;		/* how many there are (0 counts as 1) */
	bool reuseport;			/* other workers bind the same addresses */

	/* Captured at init: these need a restart to change, so a reload
	 * must not change them under running flows. */
	struct relay_params relay_params;
	struct relay_env relay_env;
	struct epset epset;		/* every relay socket, edge-triggered */
	struct pipe_pool pipes;
	enum cfg_transport transport;

	struct listener *listeners;
	size_t n_listeners;
	const int *adopt_fds;		/* from proxy_adopt_listeners() */
	size_t n_adopt;
	size_t n_adopted, n_adopt_unused;
	uint64_t listen_skipped;	/* bit i: cfg->listen[i] has no IPv6 here */
	bool accepting;
	bool paused;			/* fd exhaustion back-off running */
	uint64_t pause_ms;
	uv_timer_t pause_timer;
	uv_timer_t idle_timer;		/* relay.idle_timeout sweep */

	struct list_head flows;
	/* Flows by the local port of their outbound socket. */
	struct flow *out_hash[PROXY_OUT_HASH_SIZE];
	uint64_t n_flows;
	uint64_t next_flow_id;

	/* Link groups (lgr.h), the control port and the transports. */
	struct list_head lgrs;
	unsigned n_lgrs;
	uint8_t lgr_transports;		/* CLC_TR_* this worker can offer */
	uint8_t host_id[CLC_HOST_ID_LEN];
	uint8_t psk[CLC_PSK_MAX];
	size_t psk_len;			/* 0: peers trusted by prefix */
	struct cork_params cork;
	struct rmb_budget rmb_budget;
	int control_fd;
	uv_poll_t control_poll;
	/* Each transport's own state of this worker, by
	 * smc_transport_slot(): its init() sets it, its close() clears it. */
	void *tp[SMC_TRANSPORT_SLOTS];
	char tp_off[SMC_TRANSPORT_SLOTS][128];	/* why it is off, for the log */
	struct list_head kick_links;	/* links with posts to flush */
	struct list_head grave;		/* struct proxy_defer */
	uv_prepare_t tick;		/* flushes links, frees the grave */
	uv_timer_t lgr_timer;		/* lgr_sweep() */
	struct {
		struct sockaddr_storage addr;
		uint64_t checked_ms;
		bool local;
	} local_cache[8];		/* destinations peers asked for */
	unsigned local_next;
	struct proxy_stats stats;
	unsigned open_handles;
	bool closing;
	bool epset_closing;
	bool tick_closing;
	void (*close_cb)(struct proxy *p);
};

#endif
