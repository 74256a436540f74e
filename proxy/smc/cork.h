/* SPDX-License-Identifier: MIT */
/*
 * Autocork, with the semantics of the kernel's smc_should_autocork(): a
 * flow's first send is never held; while the flow has sends the transport
 * has not completed, new data is held, until the last completion (which
 * pushes it) or until autocork.max_bytes of it wait. Small writes that
 * arrive while the link is busy thus leave in one message instead of one
 * each, and a lone write is never delayed.
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
 * in flight.
 */
static inline bool cork_should_hold(const struct cork_params *cp, bool unacked,
				    uint32_t held)
{
	if (!cp->enabled || !unacked)
		return false;
	return held < cp->max_bytes;
}

#endif
