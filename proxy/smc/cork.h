/* SPDX-License-Identifier: MIT */
/*
 * Autocork, with the semantics of the kernel's smc_should_autocork(): a
 * flow's first send is never held; while the flow has sends the transport
 * has not completed, new data is held, until the last completion (which
 * pushes it) or until autocork.max_bytes of it wait. Small writes that
 * arrive while the link is busy thus leave in one message instead of one
 * each, and a lone write is never delayed.
 *
 * On a transport whose sends complete within the peer's next poll (shm),
 * a small-write flow with a send in flight also leaves its bytes in the
 * socket until that completion: autocork would hold them until then
 * anyway, and one read then takes the whole batch instead of one read per
 * segment, and the daemon wakes once per batch, not once per write.
 */
#ifndef SMCPROXY_CORK_H
#define SMCPROXY_CORK_H

#include <stdbool.h>
#include <stdint.h>

struct cork_params {
	bool enabled;
	uint32_t max_bytes;
};

/*
 * Whether to hold held bytes (written to the peer's ring, not yet
 * announced) rather than announce them now. unacked: the flow has sends
 * in flight; ring: the size of the peer's ring they go to. At most half
 * of that ring is held, as the kernel caps its corking size at half the
 * send buffer: bytes held fill the ring the peer cannot free before they
 * are announced, and a cork that filled it would stop the flow reading
 * its socket until a whole round trip of the peer's window update, while
 * the application's small writes pile up in the socket.
 */
static inline bool cork_should_hold(const struct cork_params *cp, bool unacked,
				    uint32_t held, uint32_t ring)
{
	uint32_t limit = cp->max_bytes < ring / 2 ? cp->max_bytes : ring / 2;

	if (!cp->enabled || !unacked)
		return false;
	return held < limit;
}

/* A socket read of less than this is a small write's. */
#define CORK_SMALL_READ		2048u
/*
 * Whether a readable socket may wait for the completion of the flow's send
 * in flight rather than be read now. locally: the transport completes a
 * send when the peer takes it, in microseconds; last_read: what the last
 * read of the flow took.
 */
static inline bool cork_should_defer_read(const struct cork_params *cp, bool locally,
					  bool unacked, uint32_t last_read)
{
	return cp->enabled && locally && unacked && last_read < CORK_SMALL_READ;
}

#endif
