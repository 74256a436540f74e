/* SPDX-License-Identifier: MIT */
/*
 * Types of the receive-ring pool. SMC calls a flow's receive ring its RMB
 * (remote memory buffer): the peer writes into it. Types only.
 */
#ifndef SMCPROXY_RMB_T_H
#define SMCPROXY_RMB_T_H

#include <stdint.h>

#include "core/counter.h"

#define RMB_MIN_SIZE	(16u * 1024)	/* smallest size class */
#define RMB_CLASSES	13		/* 16 KiB .. 64 MiB, powers of two */
#define RMB_AUTO_MIN	(64ull << 20)	/* buffers.pool auto: RAM / 16, within these */
#define RMB_AUTO_MAX	(16ull << 30)
#define RMB_INIT_SIZE	RMB_MIN_SIZE	/* a new flow's ring, when rings move */
#define RMB_GROW_SHIFT	2		/* a full ring grows 4x (16 KiB -> 1 MiB: 3 moves) */

/* One ring, carved once from a link group's region and reused after. */
struct rmb {
	uint32_t offset;		/* in the region */
	uint32_t size;			/* a size class */
	struct rmb *next;		/* free list */
	void *mr;			/* the transport's registration of it */
	uint32_t key;			/* what the peer names it by (rdma: rkey) */
};

/*
 * A transport that registers memory does it per ring, when the ring is
 * first carved (rdma: ibv_reg_mr), and undoes it when the pool closes: a
 * ring is registered once however many flows use it, and only the rings
 * in use are pinned, not the whole region.
 */
struct rmb_ops {
	int (*carve)(void *ctx, struct rmb *r);		/* 0 or -errno */
	void (*release)(void *ctx, struct rmb *r);
};

/* The rings all link groups of one worker may hold: its share of
 * buffers.pool. The gauges, when set, show it to the stats thread. */
struct rmb_budget {
	uint64_t limit;
	uint64_t used;			/* carved bytes, free or not */
	counter_t *g_carved;		/* = used */
	counter_t *g_in_use;		/* bytes of rings flows hold */
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
	struct rmb *free[RMB_CLASSES];
	struct rmb_budget *budget;
	uint32_t n_used, n_free;
	const struct rmb_ops *ops;	/* may be NULL */
	void *ops_ctx;
};

#endif
