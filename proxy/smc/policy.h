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

/* Whether dest lies in one of the "serve" prefixes: addresses beyond
 * this host's own (its pods) that peers may open flows to. */
bool policy_serves(const struct cfg *cfg, const struct sockaddr *dest);

/* Whether sa (any port) is the "via" daemon of some peers[] entry. */
bool policy_is_via(const struct cfg *cfg, const struct sockaddr *sa);

/* The control address of the daemon that serves dest under peer: the via
 * address if peer names one, else dest's own, with peer's control port. */
void policy_daemon_addr(const struct cfg_peer *peer, const struct sockaddr *dest,
			struct sockaddr_storage *out);

/* Counts a refused open to port. The owning worker only. */
void policy_ports_count(struct policy_ports *pp, uint16_t port);

#endif
