/* SPDX-License-Identifier: MIT */
/* The receive-ring pool of a link group (rmb-t.h). */
#ifndef SMCPROXY_RMB_H
#define SMCPROXY_RMB_H

#include "rmb-t.h"

/* An empty budget of limit bytes, no peers, no pools. */
void rmb_budget_init(struct rmb_budget *b, uint64_t limit);
/*
 * The peer of key (its address bytes, at most RMB_PEER_KEY), with one
 * more reference: the link groups to or from one peer share its account.
 * NULL when out of memory.
 */
struct rmb_peer *rmb_peer_get(struct rmb_budget *b, const void *key, size_t len);
/* Drops a reference; the last frees it. NULL is ignored. */
void rmb_peer_put(struct rmb_peer *peer);
/* A peer's fair share: the budget over the peers with a ring pool. */
uint64_t rmb_peer_share(const struct rmb_peer *peer);

/* Rings go in [base, size) of the owner's region; budget is shared by the
 * link groups of one worker and must outlive the pool, as must peer
 * (NULL: the pool's rings take no part in the fair share). */
void rmb_pool_init(struct rmb_pool *p, uint32_t base, uint32_t size,
		   struct rmb_budget *budget, struct rmb_peer *peer);
/*
 * A ring of want bytes (a power of two, RMB_MIN_SIZE..64 MiB), or of the
 * largest smaller class that is free or can still be carved when the pool
 * or the budget runs short: a smaller ring only costs throughput, while no
 * ring costs the flow its link. Free rings of other groups give their
 * budget up for it. NULL when not even RMB_MIN_SIZE is left for the
 * pool's peer (rmb-t.h, "Fairness"): a shortage begins (on_short).
 */
struct rmb *rmb_get(struct rmb_pool *p, uint32_t want);
/*
 * What a flow's full ring of size bytes should grow to, at most max (a
 * class, the group's largest ring): RMB_GROW_SHIFT classes up, or further,
 * to the class of the part of the growth share (rmb-t.h, "Growth") that
 * every flow of the budget and of p's region would have if all of them
 * grew, when that is larger. A ring within that part (and its quarter of
 * slack, RMB_FAIR_SLACK_SHIFT) is never asked back (rmb_get_fair()), so
 * the steps below it buy nothing: each is a move,
 * which stops the writer until the old ring drained, and a ring whose
 * pages are touched for the first time. So a lone bulk flow reaches max
 * in one move, 1000 flows of a 1000 MiB share reach 256 KiB in one, and
 * one bulk flow among 10,000 idle ones still goes 4x at a time.
 * rmb_get_spare() still decides what the flow gets.
 */
uint32_t rmb_grow_want(const struct rmb_pool *p, uint32_t size, uint32_t max);
/*
 * A ring for a flow that grows out of from (its present ring): of want
 * bytes or, short of it, of a smaller class at least twice from's size.
 * Carving new memory for it leaves an eighth of the budget untouched, for
 * the small rings of new flows: a flow grows with what is spare, never at
 * the cost of another's link. And no larger than the flow's part of the
 * growth share (rmb-t.h, "Growth"); from's own part counts as given back.
 */
struct rmb *rmb_get_spare(struct rmb_pool *p, const struct rmb *from, uint32_t want);
/*
 * A smaller ring for a flow whose grown ring from is more than its part
 * of the growth share by over a quarter (RMB_FAIR_SLACK_SHIFT; rmb-t.h,
 * "Growth"): it grew while few others
 * had, and gives back what the many now need, as TCP under memory
 * pressure shrinks what it gave. Of the part's class, no less than min
 * (the flows' first ring, which then does not count as grown). NULL when
 * from is within its part, or no such ring is to be had.
 */
struct rmb *rmb_get_fair(struct rmb_pool *p, const struct rmb *from, uint32_t min);
/*
 * A ring of want bytes for a flow that gives a larger one back (an idle
 * flow shrinking): only the budget's room counts, not the reserve nor the
 * peer's share, since the flow frees more than it takes. NULL without
 * starting a shortage.
 */
struct rmb *rmb_get_shrink(struct rmb_pool *p, uint32_t want);
/*
 * A worker's share of the daemon's ring budget (buffers.pool, 0: auto, a
 * sixteenth of the host's memory, 64 MiB to 16 GiB), split evenly among
 * n_workers (0 counts as 1): each worker's flows draw on its own share,
 * so the data path takes no lock.
 */
uint64_t rmb_budget_share(uint64_t pool, unsigned n_workers);
/* Back on its free list for the next flow (or, when the budget is short,
 * another group's); ends a shortage once the reserve is free again. NULL
 * is ignored. */
void rmb_put(struct rmb_pool *p, struct rmb *r);
/* Frees every ring (all must have been put back) and returns the budget.
 * A pool never initialised (zeroed) or closed already is ignored. */
void rmb_pool_close(struct rmb_pool *p);
/* The class index of a ring size, or -1 if it is not one. */
int rmb_class(uint32_t size);

#endif
