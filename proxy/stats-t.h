/* SPDX-License-Identifier: MIT */
/* Counters of the data plane. Types only. */
#ifndef SMCPROXY_STATS_T_H
#define SMCPROXY_STATS_T_H

#include <stdint.h>

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
	FB__MAX
};

/*
 * One set per worker. Only the owning worker writes; the stats socket reads
 * without a lock (aligned 64-bit loads do not tear on the platforms we
 * build for, and a counter that is one event stale is fine).
 */
struct proxy_stats {
	uint64_t flows_accepted;
	uint64_t flows_active[FLOW_MODE__MAX];
	uint64_t flows_closed[FLOW_MODE__MAX];
	uint64_t fallback[FB__MAX];
	uint64_t bytes_in;		/* from redirected clients toward servers */
	uint64_t bytes_out;		/* from servers back to clients */
	uint64_t connect_failures;	/* outbound connect refused/unreachable */
	uint64_t connect_timeouts;	/* outbound connect took too long */
	uint64_t resets;		/* flows ended by an RST on either leg */
	uint64_t accept_pauses;		/* accept paused on EMFILE/ENFILE/ENOBUFS */
	uint64_t loops_refused;		/* not redirected, or aimed at ourselves */
	uint64_t idle_timeouts;		/* flows closed by relay.idle_timeout */
};

#endif
