/* SPDX-License-Identifier: MIT */
/*
 * Types of the SMC layer of one worker (the kernel keeps the same state
 * per network namespace in struct smc_net): its link groups, the control
 * port, the transports' state, and the calls up to the flows' layer.
 * Types only.
 */
#ifndef SMCPROXY_NET_T_H
#define SMCPROXY_NET_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "cfg-t.h"
#include "clc-t.h"
#include "cork.h"
#include "policy-t.h"
#include "core/addr.h"
#include "core/epset-t.h"
#include "core/list.h"
#include "core/loop-t.h"
#include "rmb-t.h"
#include "stats-t.h"
#include "transport-t.h"

struct smc_net;
struct lgr;
struct link;
struct llc_flow_open;

/* What happened to a link group, for the daemon's log. */
enum lgr_event {
	LGR_EV_UP,		/* the group is active */
	LGR_EV_NO_GROUP,	/* client: the handshake failed; reason in lgr->neg_reason */
	LGR_EV_FAILED,		/* an active group failed; err: why */
	LGR_EV_LINK_FAILOVER,	/* a link failed, its flows moved to another */
	LGR_EV_PEER_CLOSED,	/* the peer stopped and closed an active group (DELETE_LINK) */
	LGR_EV_CLOSED,		/* we stop, and closed an active group */
};
#define LGR_EVENTS (LGR_EV_CLOSED + 1)

/* Why a peer's control connection, handshake or transport rendezvous was
 * refused, for the daemon's log (each is counted in proxy_stats too). */
enum smc_refusal {
	SMC_REFUSE_PREFIX,	/* from outside the peer prefixes */
	SMC_REFUSE_AUTH,	/* no proof, or a wrong one, of auth.psk_file */
	SMC_REFUSE_HANDSHAKES,	/* too many handshakes in progress from it, or in all */
	SMC_REFUSE_GROUPS,	/* too many inbound link groups from it, or in all */
	/* A transport's rendezvous (a link's connection request): */
	SMC_REFUSE_RV_GROUP,	/* names no link group waiting for its links */
	SMC_REFUSE_RV_ADDR,	/* from another address than the group's handshake */
	SMC_REFUSE_RV_AUTH,	/* without the tag of the group's secret */
};
#define SMC_REFUSE_KINDS (SMC_REFUSE_RV_AUTH + 1)

/*
 * The calls the SMC layer makes up to the layer that owns the flows
 * (proxy/flow.c): it never names a flow. All required.
 */
struct smc_net_ops {
	/*
	 * A peer opens a flow on lnk to dest (an address of this host):
	 * 0 once the layer above took it (it calls conn_accept()), or
	 * -errno and the caller declines (-ENOSPC, -ENOMEM, -ESHUTDOWN...).
	 */
	int (*flow_open)(struct smc_net *net, struct link *lnk,
			 const struct llc_flow_open *m, const struct sockaddr *dest);
	/* Whether dest is one of our own redirect listeners: a flow opened
	 * to it would come straight back to us. */
	bool (*dest_is_listener)(struct smc_net *net, const struct sockaddr *dest);
	/* Out of fds or memory on the control port: accepting backs off. */
	void (*exhausted)(struct smc_net *net, int err);
	void (*lgr_event)(struct smc_net *net, enum lgr_event ev,
			  const struct lgr *lgr, int err);
	/* A peer was refused (peer: its address and port). May be NULL.
	 * Peers choose how often this happens: the receiver must bound
	 * what it does about it. */
	void (*peer_refused)(struct smc_net *net, const struct sockaddr *peer,
			     enum smc_refusal why);
	/* The ring budget ran out (why, and the peer whose flow got no
	 * ring), or is free again (RMB_SHORT_NONE, peer NULL): once per
	 * shortage, not per flow. May be NULL. */
	void (*ring_short)(struct smc_net *net, enum rmb_short why,
			   const struct rmb_peer *peer);
	/* The connect of a flow a peer opened to dest found no free source
	 * port (EADDRNOTAVAIL): counted, and the flow declined max_flows.
	 * The port budget is the host's, so the layer above keeps one
	 * episode for it and the relay's connects. May be NULL. */
	void (*no_port)(struct smc_net *net, const struct sockaddr *dest);
};

/*
 * A flow parked on a link group while its handshake runs (lgr->waiting):
 * ready runs once, with the group up, or with NULL and the reason the flow
 * must use TCP.
 */
struct lgr_waiter {
	struct list_head node;
	void (*ready)(struct lgr_waiter *w, struct lgr *lgr, enum fallback_reason reason);
};

struct smc_net {
	uv_loop_t *loop;
	struct loop *core;
	const struct cfg *cfg;		/* current config: live keys only */
	const struct smc_net_ops *ops;
	struct proxy_stats *stats;	/* the worker's */
	unsigned worker;		/* index of the worker running this */
	unsigned n_workers;		/* how many there are (0 counts as 1) */
	bool reuseport;			/* other workers bind the same addresses */
	uint32_t mark;			/* SO_MARK of our outbound sockets */
	bool closing;
	/* This daemon stops: the flows it resets now are reset by its stop
	 * (an ABORT with CDC_CF_STOPPING where the peer takes it). */
	bool stopping;

	struct list_head lgrs;
	unsigned n_lgrs;
	unsigned n_lgrs_role[2];	/* of them, by enum lgr_role */
	uint8_t lgr_transports;		/* CLC_TR_* this worker can offer */
	uint8_t host_id[CLC_HOST_ID_LEN];
	uint8_t psk[CLC_PSK_MAX];
	size_t psk_len;			/* 0: peers trusted by prefix */
	struct cork_params cork;
	struct rmb_budget rmb_budget;
	struct addr_local local_addrs;	/* where peers may open flows to */
	uint64_t batch;			/* loop batches ended (lgr_rx_room()) */
	struct policy_ports policy_ports;	/* refused opens by port */

	/* The control port. */
	int control_fd;
	uv_poll_t control_poll;
	bool control_polled;

	/* Each transport's own state of this worker, by
	 * smc_transport_slot(): its init() sets it, its close() clears it. */
	void *tp[SMC_TRANSPORT_SLOTS];
	char tp_off[SMC_TRANSPORT_SLOTS][128];	/* why it is off, for the log */

	struct list_head kick_links;	/* links with posts to flush */
	struct list_head rx_ready;	/* conns with new bytes for their socket */
	struct list_head lgrs_sched;	/* groups with a failure for the batch's end */
	struct loop_hook flush_hook;	/* LOOP_BATCH_END: lgrs_sched, kick_links */
	struct loop_hook sleep_hook;	/* LOOP_BEFORE_SLEEP: the transports' look */
	struct loop_hook poll_hook;	/* LOOP_POLL: the transports' busy poll */
	uv_timer_t lgr_timer;		/* lgr_sweep(), while there are groups */
	uint64_t live_sweep_ms;		/* liveness_sweep()'s last run */
	bool timer_open;
};

#endif
