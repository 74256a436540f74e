/* SPDX-License-Identifier: MIT */
/*
 * How a flow is carried, and why it fell back to TCP. Types only.
 *
 * In smc/ rather than core/ because the handshake's decline reasons
 * (enum clc_decline, smc/clc-t.h) are a slice of enum fallback_reason and
 * core/ may not include smc/; in smc/ rather than the top of proxy/
 * because the SMC layer and the transports decide these reasons and may
 * include only smc/, core/ and config/ (tests/lint/check-layers).
 */
#ifndef SMCPROXY_FALLBACK_T_H
#define SMCPROXY_FALLBACK_T_H

#include "clc-t.h"

/* How a flow is carried past this daemon. */
enum flow_mode {
	FLOW_MODE_TCP,		/* fallback: plain TCP relay to the destination */
	FLOW_MODE_SHM,		/* shared-memory link to a daemon on this host */
	FLOW_MODE_RDMA,		/* RDMA link to the destination host's daemon */
	FLOW_MODE__MAX
};

/*
 * Why a flow uses the TCP relay. SMC's decline reasons come with the peer
 * handshake; these first ones are decided locally.
 */
enum fallback_reason {
	FB_NONE,		/* not a fallback */
	FB_NO_PEER,		/* destination matches no configured peer prefix */
	FB_TRANSPORT_TCP,	/* "transport": "tcp" in the config */
	FB_NO_LINK,		/* no link transport is available to the peer */
	FB_PEER_UNREACHABLE,	/* the peer's control port refused or is unreachable */
	FB_NO_RENDEZVOUS,	/* the handshake named a rendezvous we cannot reach */
	FB_PEER_STOPPED,	/* the peer daemon stopped under an opening flow (DELETE_LINK) */
	/* The handshake failed: the peer declined, or we did (its answer was
	 * wrong). Same order as enum clc_decline. */
	FB_DECL_NO_DEVICE,
	FB_DECL_VERSION,
	FB_DECL_MAX_FLOWS,
	FB_DECL_NO_MEMORY,
	FB_DECL_POLICY,
	FB_DECL_TIMEOUT,
	FB_DECL_INTERNAL,
	FB_DECL_STOPPING,
	FB__MAX
};

_Static_assert(FB_DECL_INTERNAL - FB_DECL_NO_DEVICE == CLC_DECL_INTERNAL - CLC_DECL_NO_DEVICE &&
	       FB__MAX - FB_DECL_NO_DEVICE == CLC_DECL__MAX - CLC_DECL_NO_DEVICE,
	       "FB_DECL_* must follow enum clc_decline, to its end");

#endif
