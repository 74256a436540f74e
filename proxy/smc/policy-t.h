/* SPDX-License-Identifier: MIT */
/* Types of the destination policy (policy.c). Types only. */
#ifndef SMCPROXY_POLICY_T_H
#define SMCPROXY_POLICY_T_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/counter.h"

/* Ports of refused flow opens a worker tells apart; more land in other. */
#define POLICY_PORTS 32

/*
 * Flow opens the port policy refused, by destination port, one table per
 * worker. Only the worker writes; the daemon reads with relaxed loads.
 * A slot packs the port in its top 16 bits and the count below, so that a
 * reader never sees a port with another port's count. Not a proxy_stats
 * member: that struct is summed counter by counter, and ports are not
 * summable.
 */
struct policy_ports {
	_Atomic uint64_t slot[POLICY_PORTS];	/* 0: free */
	counter_t other;			/* ports past the table */
};

#define POLICY_SLOT_PORT(v)	((uint16_t)((v) >> 48))
#define POLICY_SLOT_COUNT(v)	((v) & ((1ULL << 48) - 1))

#endif
