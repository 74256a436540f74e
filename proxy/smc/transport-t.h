/* SPDX-License-Identifier: MIT */
/*
 * The link transport interface: all that the proxy, the handshake, flow
 * and link-group logic and the control socket ask of a transport (shm,
 * rdma), over its whole life: per-worker setup and teardown, listening,
 * its address in the handshake, connecting and accepting a link group,
 * the data path, the work before the event loop sleeps, and what the
 * stats socket shows of it. Transports are found through the registry
 * (transport.h), as HAProxy finds its xprt_ops: a new one plugs in by
 * adding its ops to proxy/transport/transports.c, without touching
 * anything outside its own folder. Types only.
 *
 * A transport moves two things: 64-byte messages (CDC and LLC) over a
 * link's send queue, and flow bytes into the peer's receive rings. It
 * reports back through link.h: link_rx() for each message received,
 * link_tx_progress() when sends completed or queue space came free; and
 * through lgr.h: lgr_link_down_sched() when a link is lost,
 * lgr_fail_sched() when the link group is. Both are deferred to the end
 * of the batch (doc/architecture.md, "Failure"): a transport reports from
 * inside its completion or receive handler, where no link or group may be
 * torn down under its callers.
 *
 * Per-worker state: a transport keeps what it needs per worker (a device,
 * a rendezvous socket) behind net->tp[smc_transport_slot(ops)], which its
 * init() allocates and its close() frees; nobody else looks inside.
 */
#ifndef SMCPROXY_TRANSPORT_T_H
#define SMCPROXY_TRANSPORT_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cdc-t.h"
#include "clc-t.h"
#include "llc-t.h"
#include "fallback-t.h"

struct smc_net;
struct lgr;
struct link;
struct conn;

/* One slot per CLC transport bit: net->tp[] and net->tp_off[]. */
#define SMC_TRANSPORT_SLOTS	8

/*
 * Name/value pairs a transport reports for the stats socket, which
 * renders them without knowing them (a link's device and queue pair in
 * `links`, a counter of its pool in `stats`). Names are static strings.
 */
#define SMC_FIELDS_MAX		16
#define SMC_FIELD_STR_MAX	48

enum smc_field_type {
	SMC_FIELD_STR,
	SMC_FIELD_UINT,
	SMC_FIELD_BOOL,
};

struct smc_field {
	const char *name;
	enum smc_field_type type;
	union {
		char str[SMC_FIELD_STR_MAX];	/* NUL-terminated */
		uint64_t uint;
		bool boolean;
	};
};

struct smc_fields {
	unsigned n;
	struct smc_field f[SMC_FIELDS_MAX];
};

struct smc_transport_ops {
	const char *name;		/* "shm", "rdma" */
	enum flow_mode mode;
	/* Its CLC_TR_* bit in proposal and accept, and the type of the
	 * CLC TLV that carries its address (clc-t.h: the protocol assigns
	 * both). */
	uint8_t clc_bit;
	uint8_t clc_tlv;
	/* Which peers it serves, for the daemon's "off" log line: flows to
	 * peers <this> go over tcp when it is off ("on other hosts"). */
	const char *serves;
	/* It tells peers of this host by host id: off without one. */
	bool needs_host_id;
	/* It can only be of use with a control port (it has no client
	 * side without the peer's listener): not set up without one. */
	bool needs_control;
	/* Its sends complete when the peer takes them, within the peer's
	 * next poll, not a network round trip later: autocork may leave a
	 * small-write flow's bytes in the socket until then (cork.h). */
	bool completes_locally;

	/* ---- per worker ------------------------------------------------- */
	/*
	 * Sets up the worker's side (net->tp[slot]): 0, or -ENODEV when the
	 * transport cannot run here, with the reason in errbuf (the daemon
	 * logs it once; empty: nothing to say). The transport is then not
	 * offered. Any other -errno as well. NULL: nothing to set up.
	 */
	int (*init)(struct smc_net *net, char *errbuf, size_t errlen);
	/* Undoes init(); also after a failed init(); NULL state allowed.
	 * Called before the epoll set closes: its fds are in it. */
	void (*close)(struct smc_net *net);
	/* With a control port: what peers connect to at rendezvous (shm's
	 * UNIX socket). May be NULL. -errno with errbuf filled. */
	int (*listen)(struct smc_net *net, char *errbuf, size_t errlen);
	void (*unlisten)(struct smc_net *net);
	/*
	 * The event loop is about to block (may be NULL); once per worker,
	 * for all the transport's groups. A transport whose peers skip the
	 * doorbell while we run handles what came meanwhile when run is
	 * true and says so (the caller then ends the batch and asks again),
	 * else makes sure the loop wakes for it.
	 */
	bool (*before_sleep)(struct smc_net *net, bool run);
	/*
	 * Busy polling (busy_poll.usecs): the loop polls instead of
	 * sleeping. Takes what came on the worker's links without saying the
	 * worker may sleep, so peers that skip the doorbell while we run
	 * keep skipping it; true when it found work. May be NULL.
	 */
	bool (*poll)(struct smc_net *net);
	/* Every link-group sweep (100 ms) while there are groups; may be
	 * NULL. */
	void (*sweep)(struct smc_net *net, uint64_t now);

	/* ---- the handshake (lgr_clc.c) ----------------------------------- */
	/*
	 * Our address for a proposal (accept false) or an accept into out:
	 * its length (0: none to send), or -errno.
	 */
	int (*addr_encode)(struct smc_net *net, bool accept, uint8_t *out, size_t len);
	/*
	 * Whether a received address TLV value is well-formed: 0, or
	 * -EBADMSG, which makes the whole message malformed. The codec
	 * checked only 1 <= len <= CLC_ADDR_MAX.
	 */
	int (*addr_check)(const uint8_t *v, size_t len);
	/* Client: whether the accept's address (len 0: absent) is one we
	 * can connect to: 0 or -errno. */
	int (*addr_usable)(const uint8_t *v, size_t len);
	/* Server: whether it can serve the proposer (shm: same host; rdma:
	 * an address we can reach). Only asked when both offer it. */
	bool (*can_serve)(struct smc_net *net, const struct clc_proposal *pr);
	/* Server, before its accept: our side of lgr (region, doorbells). */
	int (*lgr_prepare)(struct lgr *lgr);
	/* Client, after the peer's ready: connects to the peer's address
	 * (addr_usable() said yes); the group comes up (lgr__established)
	 * or fails later. -EADDRNOTAVAIL: that address cannot be reached
	 * from here (fallback reason no_rendezvous), with lgr->why filled. */
	int (*lgr_connect)(struct lgr *lgr, const uint8_t *addr, size_t len);

	/* ---- the data path ----------------------------------------------- */
	/* Free slots in the link's send queue now. */
	unsigned (*tx_room)(struct link *lnk);
	/*
	 * Queues one message on the link's send queue; only called when
	 * tx_room() said there is room. The message is sequence number
	 * lnk->tx_seq (the caller increments it). -errno fails the link group.
	 */
	int (*post)(struct link *lnk, const uint8_t msg[LINK_MSG_LEN]);
	/*
	 * Makes everything posted since the last call reach the peer (shm:
	 * one doorbell). The link group calls it once per event-loop batch.
	 */
	void (*flush)(struct link *lnk);
	/* Sequence number of the first send not yet completed. */
	uint32_t (*tx_done)(struct link *lnk);
	/*
	 * Asks for one link_tx_progress() once a send completes. The caller
	 * checks tx_done() again afterwards, so a completion that raced the
	 * request is not lost.
	 */
	void (*want_progress)(struct link *lnk);
	/*
	 * Points c->tx_ring at the memory the flow writes its outgoing bytes
	 * into, for the peer's ring rmb: shm maps the peer's ring itself (the
	 * one copy is the socket read); rdma a registered send buffer of the
	 * same size, mirrored by RDMA writes. -EINVAL when rmb lies outside
	 * the peer's region.
	 */
	int (*conn_attach)(struct conn *c, const struct llc_rmb *rmb);
	void (*conn_detach)(struct conn *c);
	/*
	 * c was moved to c->link from a failed link (may be NULL for a
	 * transport whose links cannot fail alone): carry again what the
	 * peer may not have, [c->tx_prod_done, c->tx_prod).
	 */
	void (*conn_moved)(struct conn *c);
	/*
	 * Bytes [off, off + len) of c->tx_ring are final: carry them into
	 * the peer's ring (rdma: an RDMA WRITE; shm: nothing to do). Wrapped
	 * ranges come as two calls.
	 */
	int (*write)(struct conn *c, uint32_t off, uint32_t len);
	/* Releases the transport's state of a link group; calls nothing back. */
	void (*lgr_close)(struct lgr *lgr);

	/* ---- introspection (the control socket, on the worker's thread) -- */
	/*
	 * What `smcproxyctl links` adds for lnk: 0 with out filled, or
	 * -ENOTCONN for a link without its transport state (failed, or not
	 * connected yet). May be NULL.
	 */
	int (*link_info)(const struct link *lnk, struct smc_fields *out);
	/*
	 * A per-worker table for `smcproxyctl stats`, listed under
	 * pool_name (rdma: "cq", its CQ pool): entry i into out, -ENOENT
	 * past the last (none when the transport is off). May be NULL.
	 */
	const char *pool_name;
	int (*pool_info)(struct smc_net *net, unsigned i, struct smc_fields *out);
	/*
	 * Fails one link on purpose (smcproxyctl debug fail-link): 0, or
	 * -ENOTCONN (the link is not up). NULL: its links cannot fail alone.
	 */
	int (*link_fail)(struct link *lnk);
};

#endif
