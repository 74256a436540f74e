/* SPDX-License-Identifier: MIT */
/*
 * Why a flow or a link group could not be set up, as a decline reason for
 * the peer and a fallback reason for the counters: one table for every
 * layer, so that one error is counted alike wherever it happened.
 */
#ifndef SMCPROXY_FALLBACK_H
#define SMCPROXY_FALLBACK_H

#include "fallback-t.h"

/*
 * The decline reason (enum clc_decline) of a setup error, a -errno:
 *   -ENOSPC            no room in a link group or on its links: max_flows
 *   -ENOMEM, -ENOBUFS  out of memory or of a buffer pool: out_of_memory
 *   -ETIMEDOUT         timeout
 *   -ENODEV            no usable device for the transport: no_device
 *   anything else      internal
 * Never CLC_DECL_NONE. A transport that runs out of a bounded pool of its
 * own (CQs, registered memory) says -ENOBUFS, not -ENOSPC.
 */
unsigned clc_decline_of_errno(int err);

/* The fallback reason of a decline (enum clc_decline); CLC_DECL_NONE is a
 * link group that failed under an opening flow: no_link. */
enum fallback_reason fallback_of_decline(unsigned reason);

/* The fallback reason of a setup error: fallback_of_decline() of
 * clc_decline_of_errno(). */
enum fallback_reason fallback_of_errno(int err);

#endif
