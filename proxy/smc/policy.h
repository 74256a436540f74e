/* SPDX-License-Identifier: MIT */
/*
 * The destination policy of the accepting side: which of this host's
 * ports (and addresses) a peer prefix may open flows to. Deny by default.
 */
#ifndef SMCPROXY_POLICY_H
#define SMCPROXY_POLICY_H

#include <stdbool.h>
#include <sys/socket.h>

#include "cfg-t.h"
#include "policy-t.h"

/* The peers[] entry for a peer at sa: the longest prefix holding it, or
 * NULL when none does. sa is unmapped from ::ffff:a.b.c.d by the caller. */
const struct cfg_peer *policy_peer(const struct cfg *cfg, const struct sockaddr *sa);

/* Whether peer's allow list holds dest (an address of this host and its
 * port). A NULL peer allows nothing. */
bool policy_allows(const struct cfg_peer *peer, const struct sockaddr *dest);

/* Counts a refused open to port. The owning worker only. */
void policy_ports_count(struct policy_ports *pp, uint16_t port);

#endif
