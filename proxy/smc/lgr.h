/* SPDX-License-Identifier: MIT */
/*
 * Link groups (lgr-t.h): one per peer daemon and role, found by the peer's
 * address. The client side proposes (smcproxy-protocol(7)) when the first
 * flow for a peer arrives, parks flows until the group is up, and keeps a
 * negative-cache entry when the peer declined or did not answer. The
 * server side takes proposals on the control port.
 */
#ifndef SMCPROXY_LGR_H
#define SMCPROXY_LGR_H

#include <errno.h>
#include <sys/socket.h>

#include "lgr-t.h"
#include "llc-t.h"

struct smc_net;
struct smc_transport_ops;
struct conn;
struct flow;

/*
 * The link group for flows to dest (an address in the peer prefix pfx_idx
 * of the config): an ACTIVE one, one still in its handshake (the caller
 * parks the flow on lgr->waiting), or a NEGATIVE entry that has not
 * expired. Starts a handshake when there is none. NULL with *reason set
 * when the flow must use TCP right away.
 */
struct lgr *lgr_for_dest(struct smc_net *net, const struct sockaddr *dest,
			 size_t pfx_idx, enum fallback_reason *reason);

/* Puts c on the least loaded link that has room: 0, or -ENOSPC. */
int lgr_conn_add(struct lgr *lgr, struct conn *c);
/* The acceptor: puts c on the link the opener chose. */
int lgr_conn_add_on(struct lgr *lgr, struct conn *c, struct link *lnk);
void lgr_conn_del(struct lgr *lgr, struct conn *c);
/* The conn of a token; NULL for a stale or foreign one. */
struct conn *lgr_conn_find(struct lgr *lgr, uint32_t token);

/* A FLOW_OPEN from the peer (server role). */
void lgr_on_flow_open(struct link *lnk, const struct llc_flow_open *m);
/*
 * Failure. A failure found inside a receive, completion or post path (a
 * post or a write the transport refused, a message that breaks the
 * protocol, a completion in error, the peer gone) is only recorded there,
 * with lgr_fail_sched() or lgr_link_down_sched(), as the kernel's
 * smcr_link_down_cond_sched() does: the call returns into a world where
 * every conn, link and group is still whole, and its caller need not look
 * whether the group went down under it. From then on nothing is posted on
 * the group (or the link): link_conn_work() and the other link calls are
 * no-ops, and messages that still arrive for a failing group are dropped.
 * The real lgr_fail() or lgr_link_down() runs at the end of the batch, in
 * the SMC layer's LOOP_BATCH_END hook, before the doorbells and before the
 * batch's deferred frees; a failure raised there again (a survivor's post)
 * runs in the same hook. Only callers at a safe point (the housekeeping
 * timer, shutdown, an operator's command) call lgr_fail() and
 * lgr_link_down() themselves.
 */

/*
 * The link group is lost: its flows are reset (those still opening go on
 * over TCP), its memory released. A client group becomes a negative entry
 * only if it never came up; after a failure the next flow proposes again.
 * At a safe point only (above); a failure already scheduled runs now, with
 * its own first error.
 */
void lgr_fail(struct lgr *lgr, int err);
/*
 * One link is lost (its transport says so): its flows move to the least
 * loaded surviving link and resume from the last cursor the peer
 * confirmed; with no link left, or with the group's failure scheduled, the
 * group fails. At a safe point only.
 */
void lgr_link_down(struct link *lnk, int err);
/*
 * lgr_fail() and lgr_link_down() at the end of this batch, from anywhere:
 * only the first error of a group or link is kept and reported (err != 0).
 */
void lgr_fail_sched(struct lgr *lgr, int err);
void lgr_link_down_sched(struct link *lnk, int err);
/* Whether lgr is down or goes down at the end of this batch. */
static inline bool lgr_failing(const struct lgr *lgr)
{
	return lgr->fail_sched || lgr->state == LGR_DOWN;
}

/* Whether lgr may have another message handled in this batch
 * (LGR_RX_PER_BATCH): a transport that can leave the rest queued stops
 * taking them when it says no, and looks again before the loop sleeps. */
bool lgr_rx_room(const struct lgr *lgr);

/* The largest ring the peer said at the handshake its flows would have
 * (its proposal's or accept's ring_size). */
static inline uint32_t lgr_peer_ring_size(const struct lgr *lgr)
{
	return lgr->role == LGR_ROLE_SERVER ? lgr->hs.prop.ring_size : lgr->hs.acc.ring_size;
}

/* Deadlines (handshakes, opening and connecting flows, expired negative
 * entries); called from the proxy's housekeeping timer. */
void lgr_sweep(struct smc_net *net, uint64_t now);
/*
 * An orderly stop, before lgr_close_all(): a DELETE_LINK (ALL, ORDERLY) on
 * every link of every active group whose peer takes it (CLC_FEAT_DELETE),
 * so that the peer closes the group at once and quietly rather than as a
 * failure. Returns how many were posted; lgr_deletes_done() says whether
 * every one completed (the transport's tx_done(): over rdma the send left,
 * over shm the peer took it).
 */
unsigned lgr_delete_all(struct smc_net *net);
bool lgr_deletes_done(struct smc_net *net);
/* Every link group down, for shutdown: an active one is counted as our
 * orderly close (lgr_closes, LGR_EV_CLOSED), unless a failure of it was
 * raised before. */
void lgr_close_all(struct smc_net *net);

/* The control port: listens on cfg->control. */
int lgr_listen(struct smc_net *net, char *errbuf, size_t errlen);
void lgr_unlisten(struct smc_net *net);
/* Starts or stops taking connections on the control port. */
void lgr_poll_control(struct smc_net *net, bool on);

/*
 * The link groups of net one after another, for the stats socket: the one
 * after prev, the first with NULL, NULL after the last. On net's thread;
 * nothing may be added or freed between two calls (one event-loop turn).
 */
struct lgr *lgr_next(const struct smc_net *net, const struct lgr *prev);

/*
 * Each active link group of net on transport ops (the transports' polls,
 * sweeps and keepalives): lgr the group, next a struct list_head * the
 * loop keeps. The body may fail or free the group it is at, as with
 * list_for_each_safe(): next is read before the body runs.
 */
#define lgr_for_each_active(lgr, next, net, ops) \
	for ((lgr) = lgr__next_active((net), (net)->lgrs.next, (ops)); \
	     (lgr) && ((next) = (lgr)->node.next, true); \
	     (lgr) = lgr__next_active((net), (next), (ops)))
/* The first group at pos or after it that is active on ops, or NULL. */
struct lgr *lgr__next_active(struct smc_net *net, struct list_head *pos,
			     const struct smc_transport_ops *ops);

/*
 * The server-side group of transport ops whose links are awaited
 * (LGR_RENDEZVOUS) and whose id is id, or NULL: what a transport's
 * rendezvous names (shm's hello, rdma's connect request).
 */
struct lgr *lgr_find_by_id(struct smc_net *net, const struct smc_transport_ops *ops,
			   const uint8_t id[CLC_LGR_ID_LEN]);

const char *lgr_state_name(enum lgr_state s);
const char *lgr_role_name(enum lgr_role r);
/* The address (no port) of a peer's account in the ring budget. */
void lgr_rmb_peer_addr(const struct rmb_peer *peer, struct sockaddr_storage *ss);

/* Private to proxy/: the handshake (lgr_clc.c) and the transports. */

/*
 * Limits of one worker. Outbound groups (negative entries included) and
 * inbound ones are counted apart; inbound handshakes still in progress
 * have their own limits, per source address and in all, so that peers
 * that connect and stay silent, or propose without the secret, cannot
 * take the slots of established groups or of other peers.
 */
#define LGR_OUT_MAX		1024	/* groups we proposed, and negative entries */
#define LGR_IN_MAX		1024	/* groups peers proposed, past the handshake */
#define LGR_IN_PER_HOST		256	/* ... from one source address */
#define LGR_HS_MAX		64	/* inbound handshakes in progress */
#define LGR_HS_PER_HOST		8	/* ... from one source address */

/*
 * What one peer may make a worker do. A group's messages handled in one
 * batch of the loop: the rest wait in the link's queue for the next one,
 * so that other groups, timers and the heartbeat get their turn
 * (lgr_rx_room(); a transport that cannot leave messages queued reads on).
 * And declined flow opens: an honest peer's come from applications aimed
 * at a port the policy refuses, at the pace they connect; more than
 * LGR_DECLINES_MAX in a second is a scan or a flood, and the group fails
 * with LGR_ERR_FLOOD (counted in refused.floods).
 */
#define LGR_RX_PER_BATCH	1024
#define LGR_DECLINES_MAX	512
#define LGR_DECLINES_WINDOW_MS	1000
#define LGR_ERR_FLOOD		(-EDQUOT)

struct lgr_inbound {
	unsigned handshakes, handshakes_host;	/* in all, and from host */
	unsigned groups, groups_host;		/* past the handshake */
};
/* Counts the inbound link groups of net, and those from host (an
 * unmapped address; the port is not compared). */
void lgr__count_inbound(const struct smc_net *net, const struct sockaddr *host,
			struct lgr_inbound *n);

struct lgr *lgr__new(struct smc_net *net, enum lgr_role role, const struct sockaddr *peer);
void lgr__free(struct lgr *lgr);
/* The handshake or rendezvous finished: 0 brings the group up, else the
 * group fails with reason (client: the parked flows go to TCP). */
void lgr__established(struct lgr *lgr);
void lgr__handshake_failed(struct lgr *lgr, enum fallback_reason reason);
/* Sizes the link group's local state for links and flows, after the
 * handshake agreed on them. */
int lgr__setup_links(struct lgr *lgr, unsigned links, unsigned max_flows_per_link);
/* The failures scheduled in this batch, from the SMC layer's end of
 * batch (net.c), until none is left. */
void lgr__run_sched(struct smc_net *net);
/* Client: connects to the peer's control port (lgr->peer) and proposes. */
void lgr__hs_start_client(struct lgr *lgr);
void lgr__hs_close(struct lgr *lgr);

#endif
