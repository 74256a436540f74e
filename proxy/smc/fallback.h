/* SPDX-License-Identifier: MIT */
/*
 * Why a flow or a link group could not be set up, as a decline reason for
 * the peer and a fallback reason for the counters: one table for every
 * layer, so that one error is counted alike wherever it happened.
 */
#ifndef SMCPROXY_FALLBACK_H
#define SMCPROXY_FALLBACK_H

#include <stdbool.h>

#include "fallback-t.h"

/*
 * The decline reason (enum clc_decline) of a setup error, a -errno:
 *   -ENOSPC            no room in a link group or on its links: max_flows
 *   -ENOMEM, -ENOBUFS  out of memory or of a buffer pool: out_of_memory
 *   -ETIMEDOUT         timeout
 *   -ENODEV            no usable device for the transport: no_device
 *   -ESHUTDOWN         the decliner stops (its drain): stopping
 *   anything else      internal
 * Never CLC_DECL_NONE. A transport that runs out of a bounded pool of its
 * own (CQs, registered memory) says -ENOBUFS, not -ENOSPC.
 */
unsigned clc_decline_of_errno(int err);

/* The fallback reason of a decline (enum clc_decline); CLC_DECL_NONE is a
 * link group that failed under an opening flow: no_link; a reason past
 * the known ones: internal. */
enum fallback_reason fallback_of_decline(unsigned reason);

/*
 * The decline reason to send a peer: reason, but CLC_DECL_STOPPING only
 * to a peer that set CLC_FEAT_DECL_STOPPING (peer_decl_stopping), and
 * CLC_DECL_INTERNAL to any other, whose decoder would refuse the reason
 * and fail the link group.
 */
unsigned clc_decline_for_peer(unsigned reason, bool peer_decl_stopping);

/* The fallback reason of a setup error: fallback_of_decline() of
 * clc_decline_of_errno(). */
enum fallback_reason fallback_of_errno(int err);

#endif
