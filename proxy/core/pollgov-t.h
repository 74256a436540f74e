/* SPDX-License-Identifier: MIT */
/* Types of the adaptive poll window (pollgov.h). Types only. */
#ifndef SMCPROXY_POLLGOV_T_H
#define SMCPROXY_POLLGOV_T_H

#include <stdbool.h>
#include <stdint.h>

/*
 * How long a worker polls after its last work before it blocks, adapted
 * to how soon work came back after it blocked, as the kernel's haltpoll
 * cpuidle governor adapts a vCPU's poll before it halts.
 */
struct pollgov {
	uint64_t max_ns;		/* the window's bound (busy_poll.usecs) */
	uint64_t win_ns;		/* the window now: 0..max_ns */
	bool short_wake;		/* the last wake-up came within max_ns */
};

#endif
