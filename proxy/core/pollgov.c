/* SPDX-License-Identifier: MIT */
/* The adaptive poll window (pollgov.h). */
#include "pollgov.h"

static uint64_t pollgov_grow_start(const struct pollgov *g)
{
	return POLLGOV_GROW_START_NS < g->max_ns ? POLLGOV_GROW_START_NS : g->max_ns;
}

void pollgov_init(struct pollgov *g, uint64_t max_ns)
{
	*g = (struct pollgov){ .max_ns = max_ns };
}

void pollgov_set_max(struct pollgov *g, uint64_t max_ns)
{
	g->max_ns = max_ns;
	if (g->win_ns > max_ns)
		g->win_ns = max_ns;
}

void pollgov_woke(struct pollgov *g, uint64_t idle_ns)
{
	uint64_t w = g->win_ns;
	bool short_before = g->short_wake;

	g->short_wake = idle_ns <= g->max_ns;
	if (!g->max_ns || idle_ns <= w)
		return;
	if (idle_ns <= g->max_ns) {
		/* Closed: one short wait alone says nothing of the next. */
		if (!w && !short_before)
			return;
		w = w * 2 > pollgov_grow_start(g) ? w * 2 : pollgov_grow_start(g);
		g->win_ns = w < g->max_ns ? w : g->max_ns;
		return;
	}
	w /= 2;
	g->win_ns = w < pollgov_grow_start(g) ? 0 : w;
}
