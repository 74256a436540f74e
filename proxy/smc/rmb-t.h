/* SPDX-License-Identifier: MIT */
/*
 * Types of the receive-ring pool. SMC calls a flow's receive ring its RMB
 * (remote memory buffer): the peer writes into it. Types only.
 */
#ifndef SMCPROXY_RMB_T_H
#define SMCPROXY_RMB_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/counter.h"
#include "core/list.h"

#define RMB_MIN_SIZE	(16u * 1024)	/* smallest size class */
#define RMB_CLASSES	13		/* 16 KiB .. 64 MiB, powers of two */
#define RMB_AUTO_MIN	(64ull << 20)	/* buffers.pool auto: RAM / 16, within these */
#define RMB_AUTO_MAX	(16ull << 30)
#define RMB_INIT_SIZE	RMB_MIN_SIZE	/* a new flow's ring, when rings move */
#define RMB_GROW_SHIFT	2		/* a full ring grows 4x at least: rmb_grow_want() */
#define RMB_RESERVE_SHIFT 3		/* the budget's last eighth: see struct rmb_budget */
#define RMB_GROWN_SHIFT	2		/* grown rings share a quarter: see struct rmb_budget */
#define RMB_FAIR_SLACK_SHIFT 2		/* a grown ring a quarter above its part gives back */
#define RMB_PEER_KEY	17		/* an address family byte and up to 16 address bytes */

/* One ring, carved once from a link group's region and reused after. */
struct rmb {
	uint32_t offset;		/* in the region */
	uint32_t size;			/* a size class */
	struct rmb *next;		/* free list */
	void *mr;			/* the transport's registration of it */
	uint32_t key;			/* what the peer names it by (rdma: rkey) */
	/* On a free list with its memory given back (rmb_ops.drop) and not
	 * charged to the budget: its offsets stay the pool's, but a reuse
	 * must find budget for it again. */
	bool cold;
	/* Taken for a flow that grew (rmb_get_spare()): counts in the
	 * growth share until it is put back. */
	bool grown;
};

/*
 * A transport that registers memory does it per ring, when the ring is
 * first carved (rdma: ibv_reg_mr), and undoes it when the pool closes: a
 * ring is registered once however many flows use it, and only the rings
 * in use are pinned, not the whole region.
 */
struct rmb_ops {
	int (*carve)(void *ctx, struct rmb *r);		/* 0 or -errno; may be NULL */
	void (*release)(void *ctx, struct rmb *r);	/* may be NULL */
	/* A free ring's memory goes back to the host while its offsets stay
	 * reserved (shm: a hole punched in the memfd; rdma: deregistered and
	 * its pages dropped); carve() makes it usable again. May be NULL. */
	void (*drop)(void *ctx, struct rmb *r);
	bool pins;			/* carve() pins the ring's pages (ibv_reg_mr) */
};

/* Why a ring was refused (enum rmb_short), for the log and the stats. */
enum rmb_short {
	RMB_SHORT_NONE,
	RMB_SHORT_POOL,		/* the worker's share of buffers.pool is spent */
	RMB_SHORT_RESERVE,	/* the one peer holds all but the eighth kept for others */
	RMB_SHORT_PEER,		/* the peer holds its fair share and the rest is reserved */
	RMB_SHORT_REGION,	/* the link group's region has no room (offsets) */
	RMB_SHORT_HOST,		/* the host said no: calloc or the registration failed */
};

/*
 * A peer daemon as the budget sees it: all link groups to or from one
 * address (groups to one peer are many when one is full), and the ring
 * bytes its flows hold. Counted per worker, as the budget is.
 */
struct rmb_peer {
	struct list_head node;		/* rmb_budget.peers */
	struct rmb_budget *budget;
	uint8_t key[RMB_PEER_KEY];
	unsigned refs;			/* link groups naming it */
	unsigned groups;		/* of them, with a ring pool */
	uint64_t held;			/* bytes of rings its flows hold */
	uint64_t refused;		/* rings refused to it (flows declined) */
};

/*
 * The rings all link groups of one worker may hold: its share of
 * buffers.pool. Free rings stay carved in their group (warm) while the
 * budget has room; when it has none, any group's free rings give their
 * memory back (rmb_ops.drop) for whoever needs it, so the budget of an
 * ended flow is usable at once by any group.
 *
 * Fairness: the last eighth of the budget (the reserve) goes only to a
 * peer holding less than its share, limit / peers with a group; a peer
 * above its share, or a ring that grows, gets rings only while more than
 * the reserve is free. So a peer that filled the budget with idle flows
 * leaves a peer that comes later rings for its flows, and as flows end
 * the memory goes to the peers below their share first. Rings in use are
 * never taken back.
 *
 * Growth: the rings flows grew to share a quarter of the budget, and of
 * each group's region, as TCP's memory pressure shares tcp_mem: each flow
 * with a grown ring an equal part (growing into a quarter of slack above
 * it, the band rmb_get_fair() asks nothing back of), all of them together
 * no more than the quarter and its slack; a flow that grew while few
 * others had gives back what is more
 * than its part, with a quarter of slack (rmb_get_fair()), so that the
 * flows that grew late reach the same ring as the early ones: rings are
 * what a flow's share of the link goes by (a socket read fills at most
 * the ring), and 1000 bulk flows where early ones kept 512 KiB rings
 * while late ones stayed at 64 KiB got shares from 1 to 10 MB in 5 s
 * (Jain's index 0.81). A flow that finds the share spent by flows that
 * grew before it still grows to its part, into an overdraft of up to
 * twice the share, which the sweep takes back from the early ones. A lone
 * bulk flow still reaches
 * buffers.ring; a thousand get smaller rings that, with the smaller ones
 * they grew through and the new flows' 16 KiB ones, stay inside the
 * budget and the region. Past them, warm free rings would be dropped and
 * faulted in again flow after flow (a page fault per 4 KiB written, in
 * both daemons over shm), and every flow would first touch a full-size
 * ring (doc/architecture.md, "Ring memory").
 *
 * The gauges, when set, show it to the stats thread.
 */
struct rmb_budget {
	uint64_t limit;
	uint64_t used;			/* charged bytes: in use, and free warm rings */
	uint64_t in_use;		/* bytes of rings flows hold */
	unsigned n_in_use;		/* rings flows hold: the flows */
	uint64_t grown_bytes;		/* of them, grown rings (struct rmb.grown) */
	unsigned n_grown;
	struct list_head pools;		/* rmb_pool.budget_node: whose free rings to drop */
	struct list_head peers;		/* struct rmb_peer */
	unsigned n_peers;		/* peers with a ring pool: shares */
	/* The current shortage (RMB_SHORT_NONE: none): it begins with the
	 * first ring refused to a flow and ends once the reserve is free
	 * again, so that it is told once, not once per flow. */
	enum rmb_short short_why;
	uint64_t short_refused;		/* rings refused in it */
	/* Called when a shortage begins (why) and ends (RMB_SHORT_NONE).
	 * May be NULL. */
	void (*on_short)(struct rmb_budget *b, enum rmb_short why, const struct rmb_peer *peer);
	void *ctx;
	counter_t *g_carved;		/* = used */
	counter_t *g_in_use;		/* = in_use */
	counter_t *g_pinned;		/* bytes registered with the device */
	counter_t *g_used_rings;	/* [RMB_CLASSES]: rings in use, by class */
	counter_t *g_free_rings;	/* [RMB_CLASSES]: warm free rings, by class */
};

/*
 * The rings of one link group: carved from the bottom of its region on
 * first use, kept on a free list per size class when the flow ends, so a
 * new flow on a warm link group touches no new memory (and, for RDMA,
 * needs no registration: the region is registered once).
 */
struct rmb_pool {
	uint32_t base;			/* first offset rings may use */
	uint32_t size;			/* end of the ring area */
	uint32_t carved;		/* next never-used offset */
	struct rmb *free[RMB_CLASSES];	/* warm: charged, ready */
	struct rmb *cold[RMB_CLASSES];	/* dropped: uncharged, offsets kept */
	struct rmb_budget *budget;
	struct rmb_peer *peer;		/* NULL: no fairness (rdma's mirrors) */
	struct list_head budget_node;	/* budget->pools */
	uint64_t held;			/* bytes of its rings in use */
	uint64_t grown_bytes;		/* of them, grown rings (struct rmb.grown) */
	unsigned n_grown;
	uint32_t n_used, n_free;	/* n_free counts cold rings too */
	enum rmb_short refused;		/* why the last rmb_get() gave NULL */
	bool closed;			/* rmb_pool_close() ran: a late put frees the ring */
	const struct rmb_ops *ops;	/* may be NULL */
	void *ops_ctx;
};

#endif
