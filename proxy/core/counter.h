/* SPDX-License-Identifier: MIT */
/*
 * Counters and gauges that one thread writes and other threads read: the
 * per-worker statistics, summed by the daemon's stats socket on the main
 * thread while the workers keep counting.
 *
 * A counter is a C11 atomic, accessed with relaxed order only (HAProxy's
 * _HA_ATOMIC_INC): a reader gets a value that does not tear and is at worst
 * a few events stale, and ThreadSanitizer can tell these accesses from a
 * data race. Nothing may be ordered by a counter; use a real
 * acquire/release pair for that.
 *
 * Each counter has a single writer (the thread that owns the structure it
 * lives in), so counter_add() is a relaxed load and a relaxed store, not a
 * locked read-modify-write: on x86-64 and arm64 it compiles to the same
 * plain load, add and store as `++` on a uint64_t. Two threads must never
 * write one counter; a counter that needs several writers takes
 * atomic_fetch_add_explicit() instead.
 *
 * Write counters only through these functions: `++` on a counter_t is
 * legal C, but a sequentially consistent locked increment.
 */
#ifndef SMCPROXY_COUNTER_H
#define SMCPROXY_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t counter_t;

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(sizeof(counter_t) == sizeof(uint64_t) &&
	       _Alignof(counter_t) == _Alignof(uint64_t),
	       "a counter_t must be laid out as a uint64_t");

/* A relaxed load: any thread. */
static inline uint64_t counter_get(const counter_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* The owning thread only (single writer). */
static inline void counter_add(counter_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline void counter_inc(counter_t *c)
{
	counter_add(c, 1);
}

/* Gauges (active flows, draining links) go down too; wraps like uint64_t. */
static inline void counter_dec(counter_t *c)
{
	counter_add(c, UINT64_MAX);
}

/* A gauge set to a value the owner computed. The owning thread only. */
static inline void counter_set(counter_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

#endif
