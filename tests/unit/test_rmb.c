/* SPDX-License-Identifier: MIT */
/*
 * The receive-ring pool (proxy/smc/rmb.c): offsets carved from a region, size
 * classes, reuse from the free lists, the fall back to smaller classes
 * when the region or the worker's budget runs short, and the budget that
 * link groups share. Only offsets are handed out, so no test needs the
 * memory itself: a 4 GiB region costs nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "smc/rmb.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KIB		1024u
#define MIB		(1024u * 1024u)
#define PAGE		4096u
#define BASE		PAGE		/* a header page before the rings, as shm has */

/* A pool of ring_bytes after BASE, with its own budget. */
struct fx {
	struct rmb_budget budget;
	struct rmb_pool pool;
};

static void fx_init(struct fx *fx, uint32_t ring_bytes, uint64_t budget)
{
	rmb_budget_init(&fx->budget, budget);
	rmb_pool_init(&fx->pool, BASE, BASE + ring_bytes, &fx->budget, NULL);
}

static struct rmb *get_ok(struct rmb_pool *p, uint32_t want, uint32_t size)
{
	struct rmb *r = rmb_get(p, want);

	assert_non_null(r);
	assert_int_equal(r->size, size);
	assert_null(r->next);
	return r;
}

/* Flows [from, to) each take a 16 KiB ring and grow it to 64 KiB (r[]),
 * so that they count among the grown ones. */
static void grow_flows(struct fx *fx, struct rmb **r, int from, int to)
{
	struct rmb *small;
	int i;

	for (i = from; i < to; i++) {
		small = get_ok(&fx->pool, 16 * KIB, 16 * KIB);
		r[i] = rmb_get_spare(&fx->pool, small, 64 * KIB);
		assert_non_null(r[i]);
		rmb_put(&fx->pool, small);
	}
}

/* The first flow grows alone, to a whole 1 MiB ring. */
static struct rmb *grow_early(struct fx *fx)
{
	struct rmb *small = get_ok(&fx->pool, 16 * KIB, 16 * KIB);
	struct rmb *early = rmb_get_spare(&fx->pool, small, 1 * MIB);

	assert_non_null(early);
	assert_int_equal(early->size, 1 * MIB);
	rmb_put(&fx->pool, small);
	return early;
}

static void test_class(void **state)
{
	static const uint32_t bad[] = { 0, 1, 4 * KIB, 8 * KIB, 16 * KIB - 1, 16 * KIB + 1,
					48 * KIB, 64 * MIB - 1, 128 * MIB, UINT32_MAX };
	size_t i;
	int c;

	for (c = 0; c < RMB_CLASSES; c++)
		assert_int_equal(rmb_class(RMB_MIN_SIZE << c), c);
	assert_int_equal(rmb_class(16 * KIB), 0);
	assert_int_equal(rmb_class(64 * MIB), RMB_CLASSES - 1);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(rmb_class(bad[i]), -1);
}

/* Rings are carved from the bottom up, one after the other. */
static void test_carve(void **state)
{
	struct fx fx;
	struct rmb *a, *b, *c;

	fx_init(&fx, 1 * MIB, 1ull << 30);
	assert_int_equal(fx.pool.carved, BASE);
	a = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	b = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	c = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(a->offset, BASE);
	assert_int_equal(b->offset, BASE + 16 * KIB);
	assert_int_equal(c->offset, BASE + 80 * KIB);
	assert_int_equal(fx.pool.carved, BASE + 96 * KIB);
	assert_int_equal(fx.budget.used, 96 * KIB);
	assert_int_equal(fx.pool.n_used, 3);
	assert_int_equal(fx.pool.n_free, 0);
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	rmb_put(&fx.pool, c);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* The largest class, and every class once. */
static void test_every_class(void **state)
{
	struct rmb *r[RMB_CLASSES];
	uint32_t off = BASE;
	struct fx fx;
	int c;

	fx_init(&fx, 128 * MIB, 1ull << 32);
	for (c = RMB_CLASSES - 1; c >= 0; c--) {
		r[c] = get_ok(&fx.pool, RMB_MIN_SIZE << c, RMB_MIN_SIZE << c);
		assert_int_equal(r[c]->offset, off);
		off += RMB_MIN_SIZE << c;
	}
	assert_int_equal(fx.budget.used, 128 * MIB - 16 * KIB);
	for (c = 0; c < RMB_CLASSES; c++)
		rmb_put(&fx.pool, r[c]);
	assert_int_equal(fx.pool.n_free, RMB_CLASSES);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* A ring that comes back is the next one handed out for its class: the
 * same offset (for RDMA, memory the peer already has the rkey of), no new
 * carving, no budget. Last in, first out: the warmest ring first. */
static void test_reuse_same_offset(void **state)
{
	struct fx fx;
	struct rmb *a, *b, *again;
	uint32_t carved;

	fx_init(&fx, 1 * MIB, 1ull << 30);
	a = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	b = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	carved = fx.pool.carved;
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	assert_int_equal(fx.pool.n_used, 0);
	assert_int_equal(fx.pool.n_free, 2);

	again = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	assert_ptr_equal(again, b);
	assert_int_equal(again->offset, BASE + 64 * KIB);
	again = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	assert_ptr_equal(again, a);
	assert_int_equal(again->offset, BASE);
	assert_int_equal(fx.pool.carved, carved);
	assert_int_equal(fx.budget.used, 128 * KIB);
	assert_int_equal(fx.pool.n_used, 2);
	assert_int_equal(fx.pool.n_free, 0);

	/* A free ring of another class is not taken: that class is carved. */
	rmb_put(&fx.pool, a);
	again = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_ptr_not_equal(again, a);
	assert_int_equal(again->offset, carved);
	rmb_put(&fx.pool, again);
	rmb_put(&fx.pool, b);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* The region runs short: the largest smaller class that still fits. */
static void test_fallback_region_short(void **state)
{
	struct fx fx;
	struct rmb *a, *b, *c;

	fx_init(&fx, 64 * KIB + 16 * KIB, 1ull << 30);
	a = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	b = get_ok(&fx.pool, 64 * KIB, 16 * KIB);	/* 32 KiB does not fit either */
	assert_int_equal(b->offset, BASE + 64 * KIB);
	c = rmb_get(&fx.pool, 64 * KIB);
	assert_null(c);
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_int_equal(fx.pool.n_used, 2);
	assert_int_equal(fx.pool.carved, BASE + 80 * KIB);
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	rmb_pool_close(&fx.pool);
}

/* Falling back, a free ring of a smaller class is reused before the next
 * smaller class is carved. */
static void test_fallback_prefers_free_ring(void **state)
{
	struct fx fx;
	struct rmb *a, *b, *r;

	fx_init(&fx, 64 * KIB + 32 * KIB + 16 * KIB, 1ull << 30);
	a = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	b = get_ok(&fx.pool, 32 * KIB, 32 * KIB);
	rmb_put(&fx.pool, b);
	r = get_ok(&fx.pool, 64 * KIB, 32 * KIB);
	assert_ptr_equal(r, b);
	assert_int_equal(fx.pool.carved, BASE + 96 * KIB);
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	rmb_pool_close(&fx.pool);
}

/* The budget runs short while the region has room: the same fall back. */
static void test_fallback_budget_short(void **state)
{
	struct fx fx;
	struct rmb *a, *b;

	fx_init(&fx, 16 * MIB, 48 * KIB);
	a = get_ok(&fx.pool, 64 * KIB, 32 * KIB);
	b = get_ok(&fx.pool, 64 * KIB, 16 * KIB);
	assert_int_equal(fx.budget.used, 48 * KIB);
	assert_null(rmb_get(&fx.pool, 64 * KIB));
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_int_equal(fx.budget.used, 48 * KIB);
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* Not even 16 KiB: NULL, with nothing changed. */
static void test_null_below_min(void **state)
{
	struct fx fx;

	fx_init(&fx, 16 * KIB - 1, 1ull << 30);
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_null(rmb_get(&fx.pool, 64 * MIB));
	fx_init(&fx, 1 * MIB, 16 * KIB - 1);
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_null(rmb_get(&fx.pool, 1 * MIB));
	fx_init(&fx, 0, 0);
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_int_equal(fx.pool.carved, BASE);
	assert_int_equal(fx.pool.n_used, 0);
	assert_int_equal(fx.budget.used, 0);
	rmb_pool_close(&fx.pool);
}

/*
 * Two link groups of one worker share its budget, and a ring one of them
 * freed is the other's at once: the free ring gives its budget up (it
 * goes cold, its offsets stay its pool's) and is charged again when its
 * own pool uses it next. Closing a pool hands its bytes back.
 */
static void test_budget_shared(void **state)
{
	struct rmb_budget budget;
	struct rmb_pool pa, pb;
	struct rmb *a, *b, *c;

	rmb_budget_init(&budget, 128 * KIB);
	rmb_pool_init(&pa, BASE, BASE + 16 * MIB, &budget, NULL);
	rmb_pool_init(&pb, BASE, BASE + 16 * MIB, &budget, NULL);
	a = get_ok(&pa, 64 * KIB, 64 * KIB);
	b = get_ok(&pb, 64 * KIB, 64 * KIB);
	assert_int_equal(budget.used, 128 * KIB);
	assert_int_equal(budget.in_use, 128 * KIB);
	assert_null(rmb_get(&pa, 64 * KIB));
	assert_null(rmb_get(&pb, 16 * KIB));
	assert_int_equal(pa.refused, RMB_SHORT_POOL);

	rmb_put(&pb, b);
	assert_int_equal(budget.used, 128 * KIB);	/* warm: kept while nobody needs it */
	assert_int_equal(budget.in_use, 64 * KIB);
	c = get_ok(&pa, 64 * KIB, 64 * KIB);
	assert_int_equal(c->offset, BASE + 64 * KIB);
	assert_true(b->cold);
	assert_ptr_equal(pb.cold[rmb_class(64 * KIB)], b);
	assert_int_equal(budget.used, 128 * KIB);
	assert_null(rmb_get(&pb, 16 * KIB));

	/* pb's cold ring comes back charged, at its old offset. */
	rmb_put(&pa, c);
	b = get_ok(&pb, 64 * KIB, 64 * KIB);
	assert_false(b->cold);
	assert_int_equal(b->offset, BASE);
	assert_int_equal(pb.carved, BASE + 64 * KIB);
	assert_int_equal(budget.used, 128 * KIB);
	rmb_put(&pb, b);
	rmb_pool_close(&pb);
	assert_int_equal(budget.used, 64 * KIB);
	rmb_put(&pa, a);
	rmb_pool_close(&pa);
	assert_int_equal(budget.used, 0);
	assert_true(list_empty(&budget.pools));
}

/* Ops that count what the transport is asked to do. */
struct ops_log {
	unsigned carves, drops, releases;
};

static int log_carve(void *ctx, struct rmb *r)
{
	((struct ops_log *)ctx)->carves++;
	return 0;
}

static void log_drop(void *ctx, struct rmb *r)
{
	((struct ops_log *)ctx)->drops++;
}

static void log_release(void *ctx, struct rmb *r)
{
	((struct ops_log *)ctx)->releases++;
}

static const struct rmb_ops log_ops = {
	.carve = log_carve, .drop = log_drop, .release = log_release, .pins = true,
};

/* A dropped ring gives its memory (and its pinning) back, and is carved
 * (registered) again when used; the gauges follow, by size class. */
static void test_drop_gauges(void **state)
{
	counter_t carved = 0, in_use = 0, pinned = 0, used[RMB_CLASSES] = { 0 },
		  free_r[RMB_CLASSES] = { 0 };
	struct ops_log la = { 0 }, lb = { 0 };
	struct rmb_budget budget;
	struct rmb_pool pa, pb;
	struct rmb *a, *b;

	rmb_budget_init(&budget, 64 * KIB);
	budget.g_carved = &carved;
	budget.g_in_use = &in_use;
	budget.g_pinned = &pinned;
	budget.g_used_rings = used;
	budget.g_free_rings = free_r;
	rmb_pool_init(&pa, BASE, BASE + 16 * MIB, &budget, NULL);
	rmb_pool_init(&pb, BASE, BASE + 16 * MIB, &budget, NULL);
	pa.ops = pb.ops = &log_ops;
	pa.ops_ctx = &la;
	pb.ops_ctx = &lb;
	a = get_ok(&pa, 32 * KIB, 32 * KIB);
	b = get_ok(&pa, 32 * KIB, 32 * KIB);
	assert_int_equal(counter_get(&used[1]), 2);
	assert_int_equal(counter_get(&pinned), 64 * KIB);
	rmb_put(&pa, a);
	rmb_put(&pa, b);
	assert_int_equal(counter_get(&used[1]), 0);
	assert_int_equal(counter_get(&free_r[1]), 2);
	assert_int_equal(counter_get(&in_use), 0);
	assert_int_equal(counter_get(&carved), 64 * KIB);

	/* pb needs 16 KiB: one of pa's free rings is dropped, not both. */
	a = get_ok(&pb, 16 * KIB, 16 * KIB);
	assert_int_equal(la.drops, 1);
	assert_int_equal(counter_get(&free_r[1]), 1);
	assert_int_equal(counter_get(&used[0]), 1);
	assert_int_equal(counter_get(&pinned), 48 * KIB);
	assert_int_equal(counter_get(&carved), 48 * KIB);
	assert_int_equal(counter_get(&in_use), 16 * KIB);
	assert_int_equal(lb.carves, 1);
	rmb_put(&pb, a);
	rmb_pool_close(&pb);
	assert_int_equal(lb.releases, 1);
	rmb_pool_close(&pa);
	assert_int_equal(la.releases, 2);	/* the warm one and the cold one */
	assert_int_equal(counter_get(&pinned), 0);
	assert_int_equal(counter_get(&carved), 0);
	assert_int_equal(counter_get(&free_r[1]), 0);
}

/* A ring put back after its pool closed (its group's transport let go
 * first) is freed and uncharged, not kept on a list nobody frees; the
 * closed pool gives no ring. */
static void test_put_after_close(void **state)
{
	struct ops_log log = { 0 };
	struct fx fx;
	struct rmb *a;

	fx_init(&fx, 1 * MIB, 1 * MIB);
	fx.pool.ops = &log_ops;
	fx.pool.ops_ctx = &log;
	a = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	rmb_pool_close(&fx.pool);
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	rmb_put(&fx.pool, a);
	assert_int_equal(fx.budget.used, 0);
	assert_int_equal(fx.budget.in_use, 0);
	assert_int_equal(log.releases, 1);
	assert_int_equal(fx.pool.n_free, 0);
	rmb_pool_close(&fx.pool);	/* a second close is a no-op */
}

/* What on_short was told. */
struct shorts {
	unsigned begins, ends;
	enum rmb_short last;
	const struct rmb_peer *peer;
	uint64_t refused_at_end;
};

static void on_short(struct rmb_budget *b, enum rmb_short why, const struct rmb_peer *peer)
{
	struct shorts *sh = b->ctx;

	if (why == RMB_SHORT_NONE) {
		sh->ends++;
		sh->refused_at_end = b->short_refused;
	} else {
		sh->begins++;
		sh->last = why;
		sh->peer = peer;
	}
}

/*
 * Fair share: peer A alone fills the budget with small rings up to the
 * reserve (the last eighth); peer B, coming later, still gets rings from
 * it, while A, above its share, gets none. As A's flows end, the memory
 * goes to B below its share; A gets rings again only beyond the reserve.
 * The shortage is told once when it begins and once when it ends.
 */
static void test_fair_share(void **state)
{
	struct rmb_budget budget;
	struct rmb_pool pa, pb;
	struct rmb_peer *peer_a, *peer_b;
	struct rmb *ra[64], *rb[64];
	struct shorts sh = { 0 };
	unsigned na = 0, nb = 0, i;

	rmb_budget_init(&budget, 64 * 16 * KIB);	/* 64 rings; reserve 8 */
	budget.on_short = on_short;
	budget.ctx = &sh;
	peer_a = rmb_peer_get(&budget, "A", 1);
	peer_b = rmb_peer_get(&budget, "B", 1);
	assert_ptr_equal(rmb_peer_get(&budget, "A", 1), peer_a);
	rmb_peer_put(peer_a);
	rmb_pool_init(&pa, BASE, BASE + 16 * MIB, &budget, peer_a);
	while ((ra[na] = rmb_get(&pa, 16 * KIB)))
		na++;
	assert_int_equal(na, 56);
	assert_int_equal(pa.refused, RMB_SHORT_RESERVE);	/* no other peer yet */
	assert_int_equal(sh.begins, 1);
	assert_ptr_equal(sh.peer, peer_a);

	rmb_pool_init(&pb, BASE, BASE + 16 * MIB, &budget, peer_b);
	assert_int_equal(budget.n_peers, 2);
	assert_int_equal(rmb_peer_share(peer_b), 32 * 16 * KIB);
	assert_null(rmb_get(&pa, 16 * KIB));
	assert_int_equal(pa.refused, RMB_SHORT_PEER);
	while ((rb[nb] = rmb_get(&pb, 16 * KIB)))
		nb++;
	assert_int_equal(nb, 8);
	assert_int_equal(pb.refused, RMB_SHORT_POOL);
	assert_int_equal(peer_b->held, 8 * 16 * KIB);
	assert_int_equal(sh.begins, 1);		/* one shortage, many refusals */

	/* A's flow ends: its ring is B's, not A's. */
	rmb_put(&pa, ra[--na]);
	assert_null(rmb_get(&pa, 16 * KIB));
	rb[nb] = rmb_get(&pb, 16 * KIB);
	assert_non_null(rb[nb++]);
	assert_int_equal(sh.ends, 0);

	/* Half of A's flows end: the reserve is free again, the shortage
	 * is over, and A gets rings beyond the reserve. */
	for (i = 0; i < 28; i++)
		rmb_put(&pa, ra[--na]);
	assert_int_equal(sh.ends, 1);
	assert_int_equal(sh.refused_at_end, 4);
	ra[na] = rmb_get(&pa, 16 * KIB);
	assert_non_null(ra[na++]);
	assert_int_equal(budget.short_refused, 0);

	while (na)
		rmb_put(&pa, ra[--na]);
	while (nb)
		rmb_put(&pb, rb[--nb]);
	rmb_pool_close(&pa);
	rmb_pool_close(&pb);
	assert_int_equal(budget.n_peers, 0);
	assert_int_equal(budget.used, 0);
	rmb_peer_put(peer_a);
	rmb_peer_put(peer_b);
	assert_true(list_empty(&budget.peers));
}

/* A growing ring never takes the reserve, even for a peer below its
 * share; it takes a smaller class that leaves the reserve whole. */
static void test_grow_keeps_reserve(void **state)
{
	struct rmb from = { .size = 128 * KIB };
	struct fx fx;
	struct rmb *a, *b, *g;

	fx_init(&fx, 16 * MIB, 2 * MIB);		/* reserve 256 KiB */
	a = get_ok(&fx.pool, 1 * MIB, 1 * MIB);
	b = get_ok(&fx.pool, 512 * KIB, 512 * KIB);
	g = rmb_get_spare(&fx.pool, &from, 1 * MIB);
	assert_non_null(g);
	assert_int_equal(g->size, 256 * KIB);
	assert_null(rmb_get_spare(&fx.pool, &from, 256 * KIB));
	rmb_put(&fx.pool, g);
	rmb_put(&fx.pool, b);
	rmb_put(&fx.pool, a);
	rmb_pool_close(&fx.pool);
}

/*
 * The aggregate: 1000 bulk flows each growing to buffers.ring
 * outgrew the budget, so warm rings were dropped and faulted in again
 * and CPU per byte tripled. Grown rings share a quarter of the budget
 * and of the region (rmb-t.h, "Growth"): many flows get an equal part of
 * it, a lone one still gets the full size, and a part comes back with
 * the ring.
 */
#define GROWERS 64
static void test_grow_share(void **state)
{
	struct rmb *small[GROWERS], *mid[GROWERS], *big[GROWERS], *lone;
	uint64_t sum = 0;
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	lone = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	big[0] = rmb_get_spare(&fx.pool, lone, 1 * MIB);
	assert_non_null(big[0]);
	assert_int_equal(big[0]->size, 1 * MIB);	/* alone: the full size */
	rmb_put(&fx.pool, big[0]);
	rmb_put(&fx.pool, lone);

	for (i = 0; i < GROWERS; i++)
		small[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	for (i = 0; i < GROWERS; i++) {
		mid[i] = rmb_get_spare(&fx.pool, small[i], 64 * KIB);
		assert_non_null(mid[i]);
		assert_int_equal(mid[i]->size, 64 * KIB);
	}
	/* 64 grown flows: 256 KiB each, not the 1 MiB they ask for. */
	for (i = 0; i < GROWERS; i++) {
		big[i] = rmb_get_spare(&fx.pool, mid[i], 1 * MIB);
		assert_non_null(big[i]);
		assert_true(big[i]->size <= 256 * KIB);
		assert_true(big[i]->size >= 128 * KIB);
		sum += big[i]->size;
	}
	/* Together within the share, even before the 64 KiB ones go back. */
	assert_true(sum + GROWERS * 64 * KIB <= 16 * MIB + GROWERS * 64 * KIB);
	assert_true(fx.budget.grown_bytes <= 16 * MIB + GROWERS * 64 * KIB);
	for (i = 0; i < GROWERS; i++) {
		rmb_put(&fx.pool, mid[i]);
		rmb_put(&fx.pool, small[i]);
	}
	assert_true(fx.budget.grown_bytes <= 16 * MIB);
	/* The parts come back with the rings. */
	for (i = 0; i < GROWERS; i++)
		rmb_put(&fx.pool, big[i]);
	assert_int_equal(fx.budget.grown_bytes, 0);
	assert_int_equal(fx.budget.n_grown, 0);
	lone = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	big[0] = rmb_get_spare(&fx.pool, lone, 1 * MIB);
	assert_non_null(big[0]);
	assert_int_equal(big[0]->size, 1 * MIB);
	rmb_put(&fx.pool, big[0]);
	rmb_put(&fx.pool, lone);
	rmb_pool_close(&fx.pool);
}

/*
 * A flow that grew while few others had holds more than twice its part
 * once many have grown: it is offered a ring of its part (rmb_get_fair()),
 * still counted as grown; a flow within its part is offered none, and
 * one whose part is below the first ring gets the first ring, uncounted.
 */
static void test_fair_gives_back(void **state)
{
	struct rmb *early, *r[GROWERS], *fair;
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	early = grow_early(&fx);
	assert_null(rmb_get_fair(&fx.pool, early, 16 * KIB));	/* alone: its part */
	grow_flows(&fx, r, 1, GROWERS);
	/* 64 grown flows: a part of 256 KiB, 1 MiB is more than twice it. */
	fair = rmb_get_fair(&fx.pool, early, 16 * KIB);
	assert_non_null(fair);
	assert_int_equal(fair->size, 256 * KIB);
	assert_true(fair->grown);
	assert_null(rmb_get_fair(&fx.pool, r[1], 16 * KIB));	/* 64 KiB: within */
	rmb_put(&fx.pool, early);
	assert_int_equal(fx.budget.n_grown, GROWERS);
	rmb_put(&fx.pool, fair);
	for (i = 1; i < GROWERS; i++)
		rmb_put(&fx.pool, r[i]);
	assert_int_equal(fx.budget.n_grown, 0);
	assert_int_equal(fx.budget.grown_bytes, 0);
	rmb_pool_close(&fx.pool);
}

/*
 * The starvation of late growers: 1000 bulk flows, the early ones on
 * 512 KiB rings (twice their 256 KiB part, which the old rule of "more
 * than twice" let them keep) while the growth share was spent and late
 * ones stayed at 64 KiB, got shares from 1 to 10 MB in 5 s. A grown ring
 * more than a quarter above its part is offered the part's class; one at
 * its part's class is not, even while the part dips a little (flows that
 * move count two rings for a moment).
 */
static void test_fair_no_hoard(void **state)
{
	struct rmb *early, *r[GROWERS], *fair;
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	early = grow_early(&fx);
	/* 16 grown flows: a part of 1 MiB, early keeps its 1 MiB. */
	grow_flows(&fx, r, 1, 16);
	assert_null(rmb_get_fair(&fx.pool, early, 16 * KIB));
	/* 18 grown: the part dips to 910 KiB, within the slack. */
	grow_flows(&fx, r, 16, 18);
	assert_null(rmb_get_fair(&fx.pool, early, 16 * KIB));
	/* 32 grown: a part of 512 KiB; 1 MiB is twice it, and gives back. */
	grow_flows(&fx, r, 18, 32);
	fair = rmb_get_fair(&fx.pool, early, 16 * KIB);
	assert_non_null(fair);
	assert_int_equal(fair->size, 512 * KIB);
	assert_true(fair->grown);
	rmb_put(&fx.pool, early);
	/* At its part's class now: offered nothing more. */
	assert_null(rmb_get_fair(&fx.pool, fair, 16 * KIB));
	rmb_put(&fx.pool, fair);
	for (i = 1; i < 32; i++)
		rmb_put(&fx.pool, r[i]);
	assert_int_equal(fx.budget.n_grown, 0);
	assert_int_equal(fx.budget.grown_bytes, 0);
	rmb_pool_close(&fx.pool);
}

/*
 * The deadlock behind the late growers' starvation: 32 flows that grew
 * alone hold the whole growth share at 512 KiB, their part while only
 * they count, so no late flow could grow, so none counted, so the early
 * ones never gave back. A late flow now grows into an overdraft of up
 * to twice the share, to its equal part; once enough did, the early
 * ones are above their part and give back (rmb_get_fair()).
 */
static void test_grow_late(void **state)
{
	struct rmb *early[32], *late[32], *small, *fair;
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	for (i = 0; i < 32; i++) {
		small = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
		early[i] = rmb_get_spare(&fx.pool, small, 1 * MIB);
		assert_non_null(early[i]);
		rmb_put(&fx.pool, small);
	}
	/* The first ones took 1 MiB while few had grown, the last ones
	 * what was left: the share is spent. */
	assert_true(fx.budget.grown_bytes >= 16 * MIB - 512 * KIB);
	for (i = 0; i < 32; i++) {
		small = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
		late[i] = rmb_get_spare(&fx.pool, small, 64 * KIB);
		assert_non_null(late[i]);		/* the overdraft */
		assert_int_equal(late[i]->size, 64 * KIB);
		rmb_put(&fx.pool, small);
	}
	assert_true(fx.budget.grown_bytes <= 32 * MIB);
	/* 64 grown: a part of 256 KiB; an early 1 MiB or 512 KiB ring is
	 * well above it and gives back. */
	fair = rmb_get_fair(&fx.pool, early[0], 16 * KIB);
	assert_non_null(fair);
	assert_int_equal(fair->size, 256 * KIB);
	rmb_put(&fx.pool, early[0]);
	early[0] = fair;
	for (i = 0; i < 32; i++) {
		rmb_put(&fx.pool, early[i]);
		rmb_put(&fx.pool, late[i]);
	}
	assert_int_equal(fx.budget.n_grown, 0);
	assert_int_equal(fx.budget.grown_bytes, 0);
	rmb_pool_close(&fx.pool);
}

/*
 * How far a full ring asks to grow: straight to the class of the part all
 * the budget's flows could hold at once (a quarter of the budget over the
 * rings in use, and likewise of the region, with a quarter of slack as
 * rmb_get_fair() allows), when that is more than 4x: a
 * lone flow in one move to the largest ring, 64 flows of a 64 MiB budget
 * to 256 KiB; never less than 4x (1024 flows), never more than the
 * group's largest ring. Before, a full ring always asked 4x.
 */
static void test_grow_want(void **state)
{
	struct rmb *r[1024];
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	r[0] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 1 * MIB), 1 * MIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 256 * KIB), 256 * KIB);
	for (i = 1; i < 64; i++)
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 1 * MIB), 256 * KIB);
	/* A larger ring still goes 4x: rmb_get_spare() caps it. */
	assert_int_equal(rmb_grow_want(&fx.pool, 256 * KIB, 1 * MIB), 1 * MIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 512 * KIB, 1 * MIB), 1 * MIB);
	/* 70 flows (some of them moving, two rings each): 234 KiB, within
	 * the slack rmb_get_fair() allows a 256 KiB ring. */
	for (i = 64; i < 70; i++)
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 1 * MIB), 256 * KIB);
	for (i = 70; i < 1024; i++)
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 1 * MIB), 64 * KIB);
	for (i = 0; i < 1024; i++)
		rmb_put(&fx.pool, r[i]);
	assert_int_equal(fx.budget.n_in_use, 0);
	rmb_pool_close(&fx.pool);

	/* The region's quarter bounds it too: 4 MiB over 16 flows. */
	fx_init(&fx, 16 * MIB, 1024 * MIB);
	for (i = 0; i < 16; i++)
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(rmb_grow_want(&fx.pool, 16 * KIB, 1 * MIB), 256 * KIB);
	for (i = 0; i < 16; i++)
		rmb_put(&fx.pool, r[i]);
	rmb_pool_close(&fx.pool);
}

/*
 * Growth and give-back use one band: a flow grows to its part and a
 * quarter more, where rmb_get_fair() asks nothing back. With 70 grown
 * flows the part is 234 KiB: a flow grows to 256 KiB, as the flows that
 * grew while the part was 256 KiB keep (growth used to stop at the
 * part's class, 128 KiB, so two classes stayed side by side, and the
 * flows on the smaller one got half the share).
 */
static void test_grow_band(void **state)
{
	struct rmb *r[70], *big;
	struct fx fx;
	int i;

	fx_init(&fx, 1024 * MIB - BASE, 64 * MIB);	/* growth share 16 MiB */
	grow_flows(&fx, r, 0, 70);
	big = rmb_get_spare(&fx.pool, r[0], 1 * MIB);
	assert_non_null(big);
	assert_int_equal(big->size, 256 * KIB);
	rmb_put(&fx.pool, r[0]);
	r[0] = big;
	assert_null(rmb_get_fair(&fx.pool, big, 16 * KIB));	/* kept */
	for (i = 0; i < 70; i++)
		rmb_put(&fx.pool, r[i]);
	assert_int_equal(fx.budget.n_grown, 0);
	rmb_pool_close(&fx.pool);
}

/* The region bounds growth as the budget does: with a budget to spare,
 * 8 flows growing 4x at a time in a 16 MiB region share its quarter. */
static void test_grow_share_region(void **state)
{
	struct rmb *r[8], *g;
	struct fx fx;
	uint32_t want;
	int i;

	fx_init(&fx, 16 * MIB, 1024 * MIB);		/* region share 4 MiB */
	for (i = 0; i < 8; i++)
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	for (want = 64 * KIB; want <= 4 * MIB; want <<= 2) {
		for (i = 0; i < 8; i++) {
			g = rmb_get_spare(&fx.pool, r[i], want);
			if (!g)
				continue;
			rmb_put(&fx.pool, r[i]);
			r[i] = g;
		}
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(r[i]->size, 512 * KIB);
	assert_int_equal(fx.pool.grown_bytes, 4 * MIB);
	for (i = 0; i < 8; i++)
		rmb_put(&fx.pool, r[i]);
	rmb_pool_close(&fx.pool);
}

/*
 * The fragmentation gap: a region carved out into larger rings
 * that are free refused a new flow's 16 KiB ring ("region has no room")
 * although the budget had room. A free or cold larger ring is split in
 * halves, buddy style; the budget is charged for the piece only.
 */
static void test_split_larger_ring(void **state)
{
	struct rmb *big, *r[64];
	struct fx fx;
	int i;

	fx_init(&fx, 1 * MIB, 64 * MIB);
	big = get_ok(&fx.pool, 1 * MIB, 1 * MIB);
	rmb_put(&fx.pool, big);			/* warm, the region carved out */
	r[0] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	assert_int_equal(r[0]->offset, BASE);
	assert_int_equal(fx.budget.used, 16 * KIB);
	/* Every piece of the region serves, once each. */
	for (i = 1; i < 64; i++) {
		r[i] = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
		assert_int_not_equal(r[i]->offset, r[i - 1]->offset);
	}
	assert_null(rmb_get(&fx.pool, 16 * KIB));
	assert_int_equal(fx.pool.refused, RMB_SHORT_REGION);
	assert_int_equal(fx.budget.in_use, 1 * MIB);
	for (i = 0; i < 64; i++)
		rmb_put(&fx.pool, r[i]);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* A split takes the smallest larger ring, cold before warm, and leaves
 * one half of each class between: a 64 KiB ring from a 1 MiB one leaves
 * 64, 128, 256 and 512 KiB cold rings for the next. */
static void test_split_smallest_first(void **state)
{
	struct rmb *a, *b, *r;
	struct fx fx;

	fx_init(&fx, 1 * MIB + 256 * KIB, 64 * MIB);
	a = get_ok(&fx.pool, 1 * MIB, 1 * MIB);
	b = get_ok(&fx.pool, 256 * KIB, 256 * KIB);
	rmb_put(&fx.pool, a);
	rmb_put(&fx.pool, b);
	r = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	assert_int_equal(r->offset, b->offset);		/* the 256 KiB one */
	assert_non_null(fx.pool.free[rmb_class(1 * MIB)]);	/* 1 MiB kept whole */
	rmb_put(&fx.pool, r);
	r = get_ok(&fx.pool, 128 * KIB, 128 * KIB);
	assert_int_equal(r->offset, BASE + 1 * MIB + 128 * KIB);
	assert_non_null(fx.pool.free[rmb_class(1 * MIB)]);
	rmb_put(&fx.pool, r);
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
}

/* A class the region cannot give (no room, nothing larger to split)
 * drops no warm ring to make budget for it: the flow gets the warm
 * smaller ring as it is, with no page to fault in again. */
static void test_region_short_keeps_warm(void **state)
{
	struct ops_log log = { 0 };
	struct rmb *a, *b, *r;
	struct fx fx;

	/* The budget has room for the 64 KiB ring, not beside the warm one. */
	fx_init(&fx, 64 * KIB + 16 * KIB, 136 * KIB);
	fx.pool.ops = &log_ops;
	fx.pool.ops_ctx = &log;
	a = get_ok(&fx.pool, 64 * KIB, 64 * KIB);
	b = get_ok(&fx.pool, 16 * KIB, 16 * KIB);
	rmb_put(&fx.pool, b);			/* warm, charged */
	r = get_ok(&fx.pool, 64 * KIB, 16 * KIB);
	assert_ptr_equal(r, b);
	assert_int_equal(log.drops, 0);
	assert_int_equal(log.carves, 2);
	rmb_put(&fx.pool, r);
	rmb_put(&fx.pool, a);
	rmb_pool_close(&fx.pool);
}

static void test_close_returns_budget(void **state)
{
	struct rmb *r[20];
	struct fx fx;
	size_t i;

	fx_init(&fx, 64 * MIB, 1ull << 30);
	for (i = 0; i < ARRAY_SIZE(r); i++)
		r[i] = get_ok(&fx.pool, RMB_MIN_SIZE << (i % 5), RMB_MIN_SIZE << (i % 5));
	assert_true(fx.budget.used > 0);
	for (i = 0; i < ARRAY_SIZE(r); i++)
		rmb_put(&fx.pool, r[i]);
	assert_int_equal(fx.pool.n_free, ARRAY_SIZE(r));
	rmb_pool_close(&fx.pool);
	assert_int_equal(fx.budget.used, 0);
	assert_int_equal(fx.pool.n_free, 0);
	for (i = 0; i < RMB_CLASSES; i++)
		assert_null(fx.pool.free[i]);
	rmb_put(&fx.pool, NULL);	/* ignored */
	assert_int_equal(fx.pool.n_free, 0);
}

/* With a page aligned base, every ring starts on a page, whatever mix of
 * classes and fall backs carved the region. */
static void test_alignment(void **state)
{
	struct rmb *r[64];
	unsigned seed = 99, n = 0, i;
	struct fx fx;

	fx_init(&fx, 8 * MIB + 48 * KIB, 1ull << 30);
	while (n < ARRAY_SIZE(r)) {
		seed = seed * 1103515245 + 12345;
		r[n] = rmb_get(&fx.pool, RMB_MIN_SIZE << ((seed >> 16) % 8));
		if (!r[n])
			break;
		assert_int_equal(r[n]->offset % PAGE, 0);
		assert_true(r[n]->offset >= BASE);
		assert_true((uint64_t)r[n]->offset + r[n]->size <= BASE + 8 * MIB + 48 * KIB);
		/* Every ring is a class; none overlaps the one before. */
		assert_true(rmb_class(r[n]->size) >= 0);
		if (n)
			assert_true(r[n]->offset >= r[n - 1]->offset + r[n - 1]->size);
		n++;
	}
	assert_true(n > 8);
	for (i = 0; i < n; i++)
		rmb_put(&fx.pool, r[i]);
	rmb_pool_close(&fx.pool);
}

static void test_invalid_sizes(void **state)
{
	static const uint32_t bad[] = { 0, 1, 4 * KIB, 8 * KIB, 16 * KIB + 1, 48 * KIB,
					100000, 128 * MIB, 0x80000000u, UINT32_MAX };
	struct fx fx;
	size_t i;

	fx_init(&fx, 256 * MIB, 1ull << 32);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_null(rmb_get(&fx.pool, bad[i]));
	assert_int_equal(fx.pool.carved, BASE);
	assert_int_equal(fx.pool.n_used, 0);
	assert_int_equal(fx.budget.used, 0);
	rmb_pool_close(&fx.pool);
}

/* A region reaching the top of the 32-bit offset range: carving stops at
 * its end, no offset wraps around to the bottom. */
static void test_region_at_4gib(void **state)
{
	struct rmb_budget budget;
	struct rmb_pool pool;
	struct rmb *r[80];
	uint64_t total = 0;
	unsigned n = 0, i;

	rmb_budget_init(&budget, UINT64_MAX);
	rmb_pool_init(&pool, 0, UINT32_MAX, &budget, NULL);
	while (n < ARRAY_SIZE(r) && (r[n] = rmb_get(&pool, 64 * MIB))) {
		assert_true((uint64_t)r[n]->offset + r[n]->size <= UINT32_MAX);
		assert_int_equal(r[n]->offset, total);
		total += r[n]->size;
		n++;
	}
	/* 63 x 64 MiB, then one of each smaller class, 16 KiB - 1 left. */
	assert_int_equal(n, 63 + RMB_CLASSES - 1);
	assert_int_equal(total, (uint64_t)UINT32_MAX + 1 - 16 * KIB);
	assert_int_equal(budget.used, total);
	for (i = 0; i < n; i++)
		rmb_put(&pool, r[i]);
	rmb_pool_close(&pool);
	assert_int_equal(budget.used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_class),
		cmocka_unit_test(test_carve),
		cmocka_unit_test(test_every_class),
		cmocka_unit_test(test_reuse_same_offset),
		cmocka_unit_test(test_fallback_region_short),
		cmocka_unit_test(test_fallback_prefers_free_ring),
		cmocka_unit_test(test_fallback_budget_short),
		cmocka_unit_test(test_null_below_min),
		cmocka_unit_test(test_budget_shared),
		cmocka_unit_test(test_drop_gauges),
		cmocka_unit_test(test_put_after_close),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_grow_keeps_reserve),
		cmocka_unit_test(test_grow_share),
		cmocka_unit_test(test_grow_share_region),
		cmocka_unit_test(test_grow_want),
		cmocka_unit_test(test_grow_band),
		cmocka_unit_test(test_fair_gives_back),
		cmocka_unit_test(test_fair_no_hoard),
		cmocka_unit_test(test_grow_late),
		cmocka_unit_test(test_split_larger_ring),
		cmocka_unit_test(test_split_smallest_first),
		cmocka_unit_test(test_region_short_keeps_warm),
		cmocka_unit_test(test_close_returns_budget),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_invalid_sizes),
		cmocka_unit_test(test_region_at_4gib),
	};

	return cmocka_run_group_tests_name("rmb", tests, NULL, NULL);
}
