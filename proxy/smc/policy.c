/* SPDX-License-Identifier: MIT */
/*
 * The destination policy: where a peer may open flows to on this host.
 *
 * Kernel SMC-R's handshake rides on the real TCP connection, so the
 * destination host's firewall sees each SYN. Ours does not: the flow a peer
 * opens is connected by this daemon, from this host, so a service sees its
 * own host's address as the client and INPUT rules never see the peer.
 * Hence a flow is opened only to a port (and, if the entry names one, an
 * address) that the operator allowed for the peer's prefix; everything
 * else is declined with "policy" and goes to TCP, where the firewall
 * decides as it would without us.
 */
#include <netinet/in.h>
#include <string.h>

#include "core/addr.h"
#include "policy.h"

const struct cfg_peer *policy_peer(const struct cfg *cfg, const struct sockaddr *sa)
{
	const struct cfg_peer *best = NULL;
	size_t i;

	for (i = 0; i < cfg->n_peers; i++) {
		const struct cfg_peer *p = &cfg->peers[i];

		if (addr_in_prefix(sa, &p->prefix) && (!best || p->prefix.len > best->prefix.len))
			best = p;
	}
	return best;
}

static bool policy_addr_match(const struct cfg_allow *a, const struct sockaddr *dest)
{
	if (!a->family)
		return true;
	if (a->family != dest->sa_family)
		return false;
	if (a->family == AF_INET)
		return memcmp(a->addr, &((const struct sockaddr_in *)(const void *)dest)->sin_addr,
			      4) == 0;
	return memcmp(a->addr, &((const struct sockaddr_in6 *)(const void *)dest)->sin6_addr,
		      16) == 0;
}

bool policy_allows(const struct cfg_peer *peer, const struct sockaddr *dest)
{
	unsigned port = addr_port(dest);
	size_t i;

	if (!peer)
		return false;
	for (i = 0; i < peer->n_allow; i++) {
		const struct cfg_allow *a = &peer->allow[i];

		if (port >= a->lo && port <= a->hi && policy_addr_match(a, dest))
			return true;
	}
	return false;
}

bool policy_serves(const struct cfg *cfg, const struct sockaddr *dest)
{
	size_t i;

	for (i = 0; i < cfg->n_serve; i++)
		if (addr_in_prefix(dest, &cfg->serve[i]))
			return true;
	return false;
}

/* The address bytes of sa, NULL for a family other than IPv4 and IPv6. */
static const uint8_t *policy_addr_bytes(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	return NULL;
}

bool policy_is_via(const struct cfg *cfg, const struct sockaddr *sa)
{
	const uint8_t *a = policy_addr_bytes(sa);
	size_t i;

	for (i = 0; a && i < cfg->n_peers; i++) {
		const struct cfg_peer *p = &cfg->peers[i];

		if (p->via_family == sa->sa_family &&
		    memcmp(p->via_addr, a, sa->sa_family == AF_INET ? 4 : 16) == 0)
			return true;
	}
	return false;
}

void policy_daemon_addr(const struct cfg_peer *peer, const struct sockaddr *dest,
			struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (peer->via_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, peer->via_addr, 4);
	} else if (peer->via_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, peer->via_addr, 16);
	} else {
		memcpy(out, dest, addr_len(dest));
	}
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = htons(peer->control_port);
	else
		((struct sockaddr_in6 *)out)->sin6_port = htons(peer->control_port);
}

void policy_ports_count(struct policy_ports *pp, uint16_t port)
{
	unsigned i, h = (port * 2654435761u) >> 27;	/* 5 bits: POLICY_PORTS */

	_Static_assert(POLICY_PORTS == 32, "the hash takes 5 bits");
	for (i = 0; i < POLICY_PORTS; i++) {
		_Atomic uint64_t *s = &pp->slot[(h + i) % POLICY_PORTS];
		uint64_t v = atomic_load_explicit(s, memory_order_relaxed);

		if (v && POLICY_SLOT_PORT(v) != port)
			continue;
		if (!v)
			v = (uint64_t)port << 48;
		if (POLICY_SLOT_COUNT(v + 1) == 0)
			return;		/* 2^48 refusals: stays saturated */
		atomic_store_explicit(s, v + 1, memory_order_relaxed);
		return;
	}
	counter_inc(&pp->other);
}
