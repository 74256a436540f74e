/* SPDX-License-Identifier: MIT */
/*
 * Ring cursors with a wrap count, as SMC's union smc_host_cursor: count is
 * the offset in the ring (0..size-1), wrap how many times the ring wrapped.
 * A cursor names a position in the endless byte stream through the ring
 * (wrap * size + count), and the wrap count is what tells "full" from
 * "empty" and a stale cursor from a new one.
 */
#ifndef SMCPROXY_CURSOR_H
#define SMCPROXY_CURSOR_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "cdc-t.h"

static inline bool cursor_valid(struct smc_cursor c, uint32_t size)
{
	return c.count < size;
}

/* c advanced by n bytes, n <= size. Our own cursors only: a peer's is
 * checked with cursor_valid() first. */
static inline struct smc_cursor cursor_add(struct smc_cursor c, uint32_t n, uint32_t size)
{
	uint64_t count = (uint64_t)c.count + n;

	assert(c.count < size && n <= size);

	if (count >= size) {
		count -= size;
		c.wrap++;
	}
	c.count = (uint32_t)count;
	return c;
}

/*
 * Bytes from old to new: new - old in stream positions, computed modulo
 * 2^32 wraps so that the wrap counter itself may wrap. Negative when new
 * is behind old (a stale cursor). Only meaningful when the two are within
 * 2^31 wraps of each other, which holds between a ring's two cursors.
 */
static inline int64_t cursor_diff(struct smc_cursor old, struct smc_cursor new, uint32_t size)
{
	int32_t wraps = (int32_t)(new.wrap - old.wrap);

	return (int64_t)wraps * size + (int64_t)new.count - (int64_t)old.count;
}

static inline bool cursor_equal(struct smc_cursor a, struct smc_cursor b)
{
	return a.wrap == b.wrap && a.count == b.count;
}

#endif
