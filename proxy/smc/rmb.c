/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmb.h"

uint64_t rmb_budget_share(uint64_t pool, unsigned n_workers)
{
	if (!pool) {
		long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

		pool = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 16 : 0;
		if (pool < RMB_AUTO_MIN)
			pool = RMB_AUTO_MIN;
		if (pool > RMB_AUTO_MAX)
			pool = RMB_AUTO_MAX;
	}
	return pool / (n_workers ? n_workers : 1);
}

int rmb_class(uint32_t size)
{
	int c;

	for (c = 0; c < RMB_CLASSES; c++)
		if (size == RMB_MIN_SIZE << c)
			return c;
	return -1;
}

/* ------------------------------------------------------------------ */
/* The budget and its peers. */

void rmb_budget_init(struct rmb_budget *b, uint64_t limit)
{
	*b = (struct rmb_budget){ .limit = limit };
	list_init(&b->pools);
	list_init(&b->peers);
}

static void gauge_add(counter_t *g, int c, int64_t v)
{
	if (g)
		counter_add(&g[c], (uint64_t)v);
}

struct rmb_peer *rmb_peer_get(struct rmb_budget *b, const void *key, size_t len)
{
	uint8_t k[RMB_PEER_KEY] = { 0 };
	struct list_head *pos;
	struct rmb_peer *peer;

	memcpy(k, key, len < sizeof(k) ? len : sizeof(k));
	list_for_each(pos, &b->peers) {
		peer = list_entry(pos, struct rmb_peer, node);
		if (!memcmp(peer->key, k, sizeof(k))) {
			peer->refs++;
			return peer;
		}
	}
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->budget = b;
	memcpy(peer->key, k, sizeof(k));
	peer->refs = 1;
	list_add_tail(&peer->node, &b->peers);
	return peer;
}

void rmb_peer_put(struct rmb_peer *peer)
{
	if (!peer)
		return;
	assert(peer->refs > 0);
	if (--peer->refs)
		return;
	assert(!peer->groups);
	list_del(&peer->node);
	free(peer);
}

uint64_t rmb_peer_share(const struct rmb_peer *peer)
{
	const struct rmb_budget *b = peer->budget;

	return b->limit / (b->n_peers ? b->n_peers : 1);
}

/* ------------------------------------------------------------------ */
/* Pools. */

void rmb_pool_init(struct rmb_pool *p, uint32_t base, uint32_t size,
		   struct rmb_budget *budget, struct rmb_peer *peer)
{
	*p = (struct rmb_pool){ .base = base, .size = size, .carved = base,
				.budget = budget, .peer = peer };
	list_add_tail(&p->budget_node, &budget->pools);
	if (peer && !peer->groups++)
		budget->n_peers++;
}

static void rmb_charge(struct rmb_budget *b, int64_t size)
{
	b->used += (uint64_t)size;
	if (b->g_carved)
		counter_add(b->g_carved, (uint64_t)size);
}

static void rmb_pin(const struct rmb_pool *p, int64_t size)
{
	if (p->ops && p->ops->pins && p->budget->g_pinned)
		counter_add(p->budget->g_pinned, (uint64_t)size);
}

/* A warm free ring of p gives its memory back: cold from now on. */
static void rmb_drop(struct rmb_pool *p, int c)
{
	struct rmb *r = p->free[c];

	p->free[c] = r->next;
	gauge_add(p->budget->g_free_rings, c, -1);
	if (p->ops && p->ops->drop)
		p->ops->drop(p->ops_ctx, r);
	rmb_pin(p, -(int64_t)r->size);
	rmb_charge(p->budget, -(int64_t)r->size);
	r->cold = true;
	r->next = p->cold[c];
	p->cold[c] = r;
}

/*
 * Makes size bytes of the budget free to charge, dropping the free rings
 * of any group (largest first) if it must: a free ring is budget nobody
 * uses. false when the rings in use leave no room.
 */
static bool rmb_make_room(struct rmb_budget *b, uint32_t size)
{
	struct list_head *pos;
	int c;

	for (c = RMB_CLASSES - 1; c >= 0; c--) {
		list_for_each(pos, &b->pools) {
			struct rmb_pool *p = list_entry(pos, struct rmb_pool, budget_node);

			if (b->used <= b->limit && b->limit - b->used >= size)
				return true;
			while (p->free[c] && (b->used > b->limit || b->limit - b->used < size))
				rmb_drop(p, c);
		}
	}
	return b->used <= b->limit && b->limit - b->used >= size;
}

/* What a ring is for: a flow's first, a larger one, or a smaller one. */
enum rmb_want {
	RMB_WANT_FLOW,
	RMB_WANT_GROW,
	RMB_WANT_SHRINK,
	RMB_WANT_FAIR,		/* a smaller grown ring: down to the flow's part */
};

/*
 * Whether p's flows may have one more ring of size bytes (struct
 * rmb_budget, "Fairness"); if not, *why says which budget ran out.
 */
static bool rmb_admit(const struct rmb_pool *p, uint32_t size, enum rmb_want how,
		      enum rmb_short *why)
{
	const struct rmb_budget *b = p->budget;
	uint64_t reserve = b->limit >> RMB_RESERVE_SHIFT;

	if (b->in_use > b->limit || b->limit - b->in_use < size) {
		*why = RMB_SHORT_POOL;
		return false;
	}
	if (b->limit - b->in_use - size >= reserve || how == RMB_WANT_SHRINK ||
	    how == RMB_WANT_FAIR)
		return true;
	if (how == RMB_WANT_GROW) {
		*why = RMB_SHORT_POOL;
		return false;
	}
	if (!p->peer || (b->n_peers >= 2 && p->peer->held + size <= rmb_peer_share(p->peer)))
		return true;
	*why = b->n_peers >= 2 ? RMB_SHORT_PEER : RMB_SHORT_RESERVE;
	return false;
}

static struct rmb *rmb_carve(struct rmb_pool *p, uint32_t size, enum rmb_short *why)
{
	struct rmb *r;

	/* Every class is a multiple of 4 KiB and base is page aligned, so
	 * every ring starts on a page. */
	if (p->size - p->carved < size) {
		*why = RMB_SHORT_REGION;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out_host;
	r->offset = p->carved;
	r->size = size;
	if (p->ops && p->ops->carve && p->ops->carve(p->ops_ctx, r)) {
		free(r);
		goto out_host;
	}
	p->carved += size;
	return r;

out_host:
	*why = RMB_SHORT_HOST;
	return NULL;
}

/* The smallest class above c with a ring on list (cold or free), or -1. */
static int rmb_larger(struct rmb *const *list, int c)
{
	for (c++; c < RMB_CLASSES; c++)
		if (list[c])
			return c;
	return -1;
}

/*
 * Splits a cold ring of the smallest class above c in halves, buddy style
 * (halves are never merged back), until one half is of class c: then
 * p->cold[c] has two rings, and one of every class between. Rings are
 * carved once from the bottom of the region, so once the region is
 * carved out into larger rings, a new flow's small ring would otherwise
 * be refused while the budget has room. A warm free ring is dropped
 * first when no cold one is larger (its memory goes back either way: it
 * is reused piecemeal). false, with nothing changed, when there is no
 * larger ring or no memory for the halves' descriptors.
 */
static bool rmb_split(struct rmb_pool *p, int c)
{
	struct rmb *half[RMB_CLASSES], *r;
	int big = rmb_larger(p->cold, c), i;

	if (big < 0) {
		big = rmb_larger(p->free, c);
		if (big < 0)
			return false;
	}
	for (i = c; i < big; i++) {
		half[i] = calloc(1, sizeof(*half[i]));
		if (!half[i]) {
			while (i-- > c)
				free(half[i]);
			return false;
		}
	}
	if (!p->cold[big])
		rmb_drop(p, big);
	r = p->cold[big];
	p->cold[big] = r->next;
	/* r keeps the lowest piece; each upper half goes cold at its class. */
	for (i = big - 1; i >= c; i--) {
		uint32_t size = RMB_MIN_SIZE << i;

		half[i]->offset = r->offset + size;
		half[i]->size = size;
		half[i]->cold = true;
		half[i]->next = p->cold[i];
		p->cold[i] = half[i];
		p->n_free++;
		r->size = size;
	}
	r->next = p->cold[c];
	p->cold[c] = r;
	return true;
}

/*
 * A ring of class c for p, charged to the budget: a warm free one, else
 * a cold one made usable again, else a new one, else (split) a piece of
 * a larger free or cold ring. Budget is made (free rings dropped) only
 * when one of those can follow.
 */
static struct rmb *rmb_take(struct rmb_pool *p, int c, bool split, enum rmb_short *why)
{
	uint32_t size = RMB_MIN_SIZE << c;
	struct rmb *r = p->free[c];

	if (r) {
		p->free[c] = r->next;
		p->n_free--;
		gauge_add(p->budget->g_free_rings, c, -1);
		return r;
	}
	if (!p->cold[c] && p->size - p->carved < size &&
	    (!split || (rmb_larger(p->cold, c) < 0 && rmb_larger(p->free, c) < 0))) {
		*why = RMB_SHORT_REGION;
		return NULL;
	}
	if (!rmb_make_room(p->budget, size)) {
		*why = RMB_SHORT_POOL;
		return NULL;
	}
	if (!p->cold[c] && p->size - p->carved < size && !rmb_split(p, c)) {
		*why = RMB_SHORT_REGION;
		return NULL;
	}
	r = p->cold[c];
	if (r) {
		if (p->ops && p->ops->carve && p->ops->carve(p->ops_ctx, r)) {
			*why = RMB_SHORT_HOST;
			return NULL;
		}
		p->cold[c] = r->next;
		p->n_free--;
		r->cold = false;
	} else {
		r = rmb_carve(p, size, why);
		if (!r)
			return NULL;
	}
	rmb_pin(p, size);
	rmb_charge(p->budget, size);
	return r;
}

static struct rmb *rmb_get_range(struct rmb_pool *p, uint32_t want, int lowest,
				 enum rmb_want how, enum rmb_short *why)
{
	struct rmb_budget *b = p->budget;
	struct rmb *r;
	int top = rmb_class(want), c = top, pass;
	bool region_short = false;

	*why = RMB_SHORT_NONE;
	if (c < 0 || p->closed)
		return NULL;
	/* Splitting a larger ring is the last resort, after every class
	 * that needs none: a larger warm ring is worth keeping whole. */
	for (pass = 0; pass < 2; pass++) {
		for (c = top; c >= lowest; c--) {
			enum rmb_short w = RMB_SHORT_NONE;

			r = rmb_admit(p, RMB_MIN_SIZE << c, how, &w) ?
			    rmb_take(p, c, pass, &w) : NULL;
			if (r)
				goto out_take;
			if (*why == RMB_SHORT_NONE)
				*why = w;	/* the largest class's reason */
			if (w == RMB_SHORT_REGION)
				region_short = true;
		}
		if (!region_short)
			break;
	}
	return NULL;

out_take:
	r->next = NULL;
	r->grown = how == RMB_WANT_GROW || how == RMB_WANT_FAIR;
	if (r->grown) {
		p->n_grown++;
		p->grown_bytes += r->size;
		b->n_grown++;
		b->grown_bytes += r->size;
	}
	p->n_used++;
	p->held += r->size;
	b->in_use += r->size;
	b->n_in_use++;
	if (p->peer)
		p->peer->held += r->size;
	gauge_add(b->g_used_rings, c, 1);
	if (b->g_in_use)
		counter_add(b->g_in_use, r->size);
	return r;
}

struct rmb *rmb_get(struct rmb_pool *p, uint32_t want)
{
	struct rmb_budget *b = p->budget;
	enum rmb_short why;
	struct rmb *r = rmb_get_range(p, want, 0, RMB_WANT_FLOW, &why);

	p->refused = why;
	if (r || why == RMB_SHORT_NONE)
		return r;
	/* A flow goes without a ring: a shortage, told when it begins. */
	b->short_refused++;
	if (p->peer)
		p->peer->refused++;
	if (b->short_why == RMB_SHORT_NONE) {
		b->short_why = why;
		if (b->on_short)
			b->on_short(b, why, p->peer);
	}
	return NULL;
}

/*
 * The flow's part of one growth share of hot bytes that n rings of bytes
 * hold already, besides from's (rmb-t.h, "Growth"): an equal part of
 * hot and, unless only the equal part counts (fair), no more than what
 * the others left of it, or of twice hot when they left less than the
 * part. That overdraft is what lets a late flow grow at all: the flows
 * that grew while few others had hold the share, and give back what is
 * above their part only once the late ones count among the grown
 * (rmb_get_fair(), at the next sweep); without it the late flows stayed
 * on their first rings for good. While flows move, old and new rings
 * both count: what is left may be short for a moment, the equal part is
 * not.
 *
 * A flow that grows (not fair) may take the part and its quarter of
 * slack (RMB_FAIR_SLACK_SHIFT), the band in which rmb_get_fair() asks
 * nothing back: with growth stopping at the part and give-back starting
 * above the slack, a part just under a class left two classes stable at
 * once (1000 bulk flows of a 1000 MiB share, a part of 256 KiB less the
 * rings of flows in a move: flows that grew while it was 256 KiB kept
 * 256 KiB rings, the others stayed at 128 KiB, and a ring is what a
 * flow's share goes by).
 */
static uint64_t rmb_grow_part(uint64_t hot, unsigned n, uint64_t bytes, const struct rmb *from,
			      bool fair)
{
	uint64_t part;

	if (from->grown) {
		n--;
		bytes -= from->size;
	}
	part = hot / (n + 1);
	if (fair)
		return part;
	part += part >> RMB_FAIR_SLACK_SHIFT;
	if (bytes <= hot && hot - bytes >= part)
		return part;
	if (bytes >= 2 * hot)
		return 0;
	return part < 2 * hot - bytes ? part : 2 * hot - bytes;
}

/* The largest ring from's flow may hold by the growth shares of the
 * budget and of p's region (rmb-t.h, "Growth"). */
static uint64_t rmb_grow_cap(const struct rmb_pool *p, const struct rmb *from, bool fair)
{
	const struct rmb_budget *b = p->budget;
	uint64_t cap, part;

	cap = rmb_grow_part(b->limit >> RMB_GROWN_SHIFT, b->n_grown, b->grown_bytes, from, fair);
	part = rmb_grow_part((uint64_t)(p->size - p->base) >> RMB_GROWN_SHIFT, p->n_grown,
			     p->grown_bytes, from, fair);
	return part < cap ? part : cap;
}

/* The largest class from lowest to want's within cap, or -1. */
static int rmb_class_within(uint32_t want, int lowest, uint64_t cap)
{
	int c;

	for (c = rmb_class(want); c >= lowest && (uint64_t)RMB_MIN_SIZE << c > cap; c--)
		;
	return c >= lowest ? c : -1;
}

uint32_t rmb_grow_want(const struct rmb_pool *p, uint32_t size, uint32_t max)
{
	const struct rmb_budget *b = p->budget;
	uint64_t all = (b->limit >> RMB_GROWN_SHIFT) / (b->n_in_use ? b->n_in_use : 1);
	uint64_t region = ((uint64_t)(p->size - p->base) >> RMB_GROWN_SHIFT) /
			  (p->n_used ? p->n_used : 1);
	uint64_t want = (uint64_t)size << RMB_GROW_SHIFT;
	int c;

	if (region < all)
		all = region;
	/* With the slack rmb_get_fair() allows: while flows move, each holds
	 * two rings, and the part must not dip below its class for that. */
	all += all >> RMB_FAIR_SLACK_SHIFT;
	if (all > max)
		all = max;
	c = rmb_class_within(max, 0, all);
	if (c >= 0 && (uint64_t)RMB_MIN_SIZE << c > want)
		want = (uint64_t)RMB_MIN_SIZE << c;
	return want > max ? max : (uint32_t)want;
}

struct rmb *rmb_get_spare(struct rmb_pool *p, const struct rmb *from, uint32_t want)
{
	enum rmb_short why;
	int lowest = rmb_class(from->size) + 1, c;

	if (lowest <= 0)
		return NULL;
	c = rmb_class_within(want, lowest, rmb_grow_cap(p, from, false));
	if (c < 0)
		return NULL;
	return rmb_get_range(p, RMB_MIN_SIZE << c, lowest, RMB_WANT_GROW, &why);
}

struct rmb *rmb_get_fair(struct rmb_pool *p, const struct rmb *from, uint32_t min)
{
	uint64_t cap = rmb_grow_cap(p, from, true);
	enum rmb_short why;
	int c, lowest = rmb_class(min);

	/* A quarter above the part is slack: while flows move, their old and
	 * new rings both count and the part dips for a moment, and a flow at
	 * its part's class must not be shrunk for that and grow again. */
	if (lowest < 0 || !from->grown || from->size <= cap + (cap >> RMB_FAIR_SLACK_SHIFT) ||
	    from->size <= min)
		return NULL;
	c = rmb_class_within(from->size >> 1, lowest, cap);
	if (c < 0)
		c = lowest;
	return rmb_get_range(p, RMB_MIN_SIZE << c, c, c > lowest ? RMB_WANT_FAIR : RMB_WANT_SHRINK,
			     &why);
}

struct rmb *rmb_get_shrink(struct rmb_pool *p, uint32_t want)
{
	enum rmb_short why;
	int c = rmb_class(want);

	if (c < 0)
		return NULL;
	return rmb_get_range(p, want, c, RMB_WANT_SHRINK, &why);
}

void rmb_put(struct rmb_pool *p, struct rmb *r)
{
	struct rmb_budget *b;
	int c;

	if (!r)
		return;
	b = p->budget;
	c = rmb_class(r->size);
	/* One of p's rings: carved from it, and in use. */
	assert(c >= 0 && p->n_used > 0 && r->offset >= p->base && r->offset < p->carved &&
	       r->size <= p->carved - r->offset && !r->cold && p->held >= r->size);
	if (r->grown) {
		assert(p->n_grown && p->grown_bytes >= r->size && b->n_grown &&
		       b->grown_bytes >= r->size);
		p->n_grown--;
		p->grown_bytes -= r->size;
		b->n_grown--;
		b->grown_bytes -= r->size;
		r->grown = false;
	}
	p->n_used--;
	p->held -= r->size;
	b->in_use -= r->size;
	b->n_in_use--;
	if (p->peer)
		p->peer->held -= r->size;
	gauge_add(b->g_used_rings, c, -1);
	if (b->g_in_use)
		counter_add(b->g_in_use, 0 - (uint64_t)r->size);
	if (p->closed) {
		/* Its group's transport let go of the pool while a flow still
		 * held the ring: no free list to keep it on. */
		rmb_pin(p, -(int64_t)r->size);
		rmb_charge(b, -(int64_t)r->size);
		if (p->ops && p->ops->release)
			p->ops->release(p->ops_ctx, r);
		free(r);
		return;
	}
	r->next = p->free[c];
	p->free[c] = r;
	p->n_free++;
	gauge_add(b->g_free_rings, c, 1);
	/* The shortage ends once the reserve is free again. */
	if (b->short_why != RMB_SHORT_NONE &&
	    b->limit - b->in_use >= b->limit >> RMB_RESERVE_SHIFT) {
		b->short_why = RMB_SHORT_NONE;
		if (b->on_short)
			b->on_short(b, RMB_SHORT_NONE, NULL);
		b->short_refused = 0;
	}
}

void rmb_pool_close(struct rmb_pool *p)
{
	struct rmb *r;
	int c;

	if (!p->budget || p->closed)
		return;		/* never initialised, or closed */
	for (c = 0; c < RMB_CLASSES; c++) {
		while ((r = p->free[c])) {
			p->free[c] = r->next;
			gauge_add(p->budget->g_free_rings, c, -1);
			rmb_pin(p, -(int64_t)r->size);
			rmb_charge(p->budget, -(int64_t)r->size);
			if (p->ops && p->ops->release)
				p->ops->release(p->ops_ctx, r);
			free(r);
		}
		while ((r = p->cold[c])) {
			p->cold[c] = r->next;
			if (p->ops && p->ops->release)
				p->ops->release(p->ops_ctx, r);
			free(r);
		}
	}
	p->n_free = 0;
	list_del(&p->budget_node);
	if (p->peer && !--p->peer->groups)
		p->budget->n_peers--;
	p->closed = true;
}
