/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
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

void rmb_pool_init(struct rmb_pool *p, uint32_t base, uint32_t size,
		   struct rmb_budget *budget)
{
	*p = (struct rmb_pool){ .base = base, .size = size, .carved = base,
				.budget = budget };
}

static struct rmb *rmb_carve(struct rmb_pool *p, uint32_t size, uint64_t reserve)
{
	struct rmb *r;

	/* Every class is a multiple of 4 KiB and base is page aligned, so
	 * every ring starts on a page. */
	if (p->size - p->carved < size || p->budget->used > p->budget->limit ||
	    p->budget->limit - p->budget->used < size + reserve)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->offset = p->carved;
	r->size = size;
	if (p->ops && p->ops->carve(p->ops_ctx, r)) {
		free(r);
		return NULL;
	}
	p->carved += size;
	p->budget->used += size;
	if (p->budget->g_carved)
		counter_add(p->budget->g_carved, size);
	return r;
}

static struct rmb *rmb_get_range(struct rmb_pool *p, uint32_t want, int lowest,
				  uint64_t reserve)
{
	struct rmb *r;
	int c = rmb_class(want);

	if (c < 0)
		return NULL;
	for (; c >= lowest; c--) {
		r = p->free[c];
		if (r) {
			p->free[c] = r->next;
			p->n_free--;
		} else {
			r = rmb_carve(p, RMB_MIN_SIZE << c, reserve);
		}
		if (r) {
			r->next = NULL;
			p->n_used++;
			if (p->budget->g_in_use)
				counter_add(p->budget->g_in_use, r->size);
			return r;
		}
	}
	return NULL;
}

struct rmb *rmb_get(struct rmb_pool *p, uint32_t want)
{
	return rmb_get_range(p, want, 0, 0);
}

struct rmb *rmb_get_spare(struct rmb_pool *p, uint32_t want, uint32_t min)
{
	int lowest = rmb_class(min);

	if (lowest < 0)
		return NULL;
	return rmb_get_range(p, want, lowest, p->budget->limit / 8);
}

void rmb_put(struct rmb_pool *p, struct rmb *r)
{
	int c;

	if (!r)
		return;
	c = rmb_class(r->size);
	/* One of p's rings: carved from it, and in use. */
	assert(c >= 0 && p->n_used > 0 && r->offset >= p->base && r->offset < p->carved &&
	       r->size <= p->carved - r->offset);
	r->next = p->free[c];
	p->free[c] = r;
	p->n_used--;
	p->n_free++;
	if (p->budget->g_in_use)
		counter_add(p->budget->g_in_use, 0 - (uint64_t)r->size);
}

void rmb_pool_close(struct rmb_pool *p)
{
	struct rmb *r;
	int c;

	for (c = 0; c < RMB_CLASSES; c++) {
		while ((r = p->free[c])) {
			p->free[c] = r->next;
			p->budget->used -= r->size;
			if (p->budget->g_carved)
				counter_add(p->budget->g_carved, 0 - (uint64_t)r->size);
			if (p->ops)
				p->ops->release(p->ops_ctx, r);
			free(r);
		}
	}
	p->n_free = 0;
}
