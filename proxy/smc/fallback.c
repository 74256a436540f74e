/* SPDX-License-Identifier: MIT */
/* The errno -> decline -> fallback reason table (fallback.h). */
#include <errno.h>
#include <stdbool.h>

#include "fallback.h"

unsigned clc_decline_of_errno(int err)
{
	switch (err) {
	case -ENOSPC:
	/* The decliner's host has no room for the flow's connection: no
	 * local port left to its destination, or no fd. The same answer
	 * as a full link group: another flow may fit later, and the
	 * opener's own connect over TCP may well work. */
	case -EADDRNOTAVAIL:
	case -EMFILE:
	case -ENFILE:
		return CLC_DECL_MAX_FLOWS;
	case -ENOMEM:
	case -ENOBUFS:
		return CLC_DECL_NO_MEMORY;
	case -ETIMEDOUT:
		return CLC_DECL_TIMEOUT;
	case -ENODEV:
		return CLC_DECL_NO_DEVICE;
	/* The decliner stops: its peer's flows go over TCP until it is
	 * back, which is a rolling restart, not a fault. */
	case -ESHUTDOWN:
		return CLC_DECL_STOPPING;
	default:
		return CLC_DECL_INTERNAL;
	}
}

enum fallback_reason fallback_of_decline(unsigned reason)
{
	if (reason == CLC_DECL_NONE)
		return FB_NO_LINK;	/* the link group failed under an opening flow */
	if (reason >= CLC_DECL_NO_DEVICE && reason < CLC_DECL__MAX)
		return FB_DECL_NO_DEVICE + (reason - CLC_DECL_NO_DEVICE);
	return FB_DECL_INTERNAL;
}

unsigned clc_decline_for_peer(unsigned reason, bool peer_decl_stopping)
{
	if (reason == CLC_DECL_STOPPING && !peer_decl_stopping)
		return CLC_DECL_INTERNAL;	/* what a daemon of before was told */
	return reason;
}

enum fallback_reason fallback_of_errno(int err)
{
	/* Local only: the peer accepted, we cannot reach where it waits. */
	if (err == -EADDRNOTAVAIL)
		return FB_NO_RENDEZVOUS;
	return fallback_of_decline(clc_decline_of_errno(err));
}
