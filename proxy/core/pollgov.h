/* SPDX-License-Identifier: MIT */
/*
 * The adaptive poll window, after the kernel's haltpoll governor: a worker
 * that blocked and was woken by work soon after its last work (within the
 * bound) would have done better polling that long, so the window grows;
 * one that slept past the bound would have polled for nothing, so the
 * window shrinks. A worker with a steady request/response rhythm ends up
 * polling just long enough to catch the next message without sleeping; an
 * idle one stops polling after a few long sleeps. Pure arithmetic: the
 * loop measures the times.
 *
 * Where we differ from haltpoll: a closed window opens only on the second
 * short wake-up in a row. A worker whose waits alternate short and long
 * (a daemon relaying a ping-pong whose other end is slow: a short wait for
 * the local application, a long one for the peer daemon) would otherwise
 * open the window on each short wait and spend it on the long one that
 * follows, polling for nothing (an epoll_wait and a sched_yield per round
 * trip), and close it on that long one again before the short one it could
 * have caught.
 */
#ifndef SMCPROXY_POLLGOV_H
#define SMCPROXY_POLLGOV_H

#include <stdbool.h>

#include "pollgov-t.h"

/* A window that grows from 0 starts at this (or at max_ns if smaller):
 * about one wake-up of a halted vCPU, the cost polling is there to save. */
#define POLLGOV_GROW_START_NS	25000ull

/* Starts with window 0 (no polling until a wake-up shows it pays), under
 * the bound max_ns (0: off, the window stays 0). */
void pollgov_init(struct pollgov *g, uint64_t max_ns);

/* A new bound (a reload), keeping what was learnt as far as it fits. */
void pollgov_set_max(struct pollgov *g, uint64_t max_ns);

/*
 * A blocking wait ended with work idle_ns after the end of the last work.
 * Within the window (the poll was cut short, by the budget): no change.
 * Past it but within the bound: the window doubles, up to the bound; a
 * closed one opens at POLLGOV_GROW_START_NS, but only if the wake-up
 * before came within the bound too. Past the bound: it halves, down to 0
 * below POLLGOV_GROW_START_NS.
 */
void pollgov_woke(struct pollgov *g, uint64_t idle_ns);

static inline uint64_t pollgov_window(const struct pollgov *g)
{
	return g->win_ns;
}

#endif
