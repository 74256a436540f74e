/* SPDX-License-Identifier: MIT */
/* Flows: one per redirected application connection. */
#ifndef SMCPROXY_FLOW_H
#define SMCPROXY_FLOW_H

#include "flow-t.h"

struct listener;
/*
 * Takes a socket that l accepted: reads its original destination
 * (SO_ORIGINAL_DST after a REDIRECT, the socket's own address after a
 * TPROXY), refuses loops, picks the flow's mode and starts carrying it.
 * Always takes ownership of fd (closes it on failure, with an RST).
 * Returns 0 or -errno.
 */
int flow_open(struct proxy *p, int fd, const struct sockaddr_storage *client,
	      const struct listener *l);

/* Resets the flow: RST to the application and to the far side. */
void flow_abort(struct flow *f);

struct lgr;
struct link;
struct llc_flow_open;
/*
 * A peer daemon opens a flow on lnk to dest (already checked to be an
 * address of this host): connects to it and accepts. -ENOSPC, -ENOMEM,
 * -ESHUTDOWN (draining) or another -errno: the caller declines.
 */
int flow_accept_peer(struct proxy *p, struct link *lnk, const struct llc_flow_open *m,
		     const struct sockaddr *dest);
/*
 * The flows of p one after another, for the stats socket: the one after
 * prev, the first with NULL, NULL after the last. On p's thread; nothing
 * may be added or freed between two calls (one event-loop turn).
 */
const struct flow *flow_next(const struct proxy *p, const struct flow *prev);
/* Bytes from the client toward the destination, and back. */
void flow_bytes(const struct flow *f, uint64_t *in, uint64_t *out);
/* The sizes of a link-carried flow's rings: ours, which the peer writes
 * (rx), and the peer's, which we write (tx); 0 where there is none (a
 * relayed flow, a flow not yet accepted). Rings grow and shrink while a
 * flow runs, and what a flow gets of its link goes by them. */
void flow_rings(const struct flow *f, uint32_t *rx, uint32_t *tx);
uint64_t flow_last_active(const struct flow *f);
/* Whether the flow has ended and only waits for its parts to close. */
bool flow_is_ending(const struct flow *f);

#endif
