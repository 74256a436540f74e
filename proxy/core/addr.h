/* SPDX-License-Identifier: MIT */
/* Socket address helpers shared by the data plane and the daemon. */
#ifndef SMCPROXY_ADDR_H
#define SMCPROXY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Longest "[ipv6%scope]:port" plus NUL. */
#define ADDR_STRLEN 72

/* Formats "1.2.3.4:80" or "[::1]:80" into buf; returns buf. */
char *addr_format(const struct sockaddr *sa, char *buf, size_t len);
/* Same family, address and port. */
bool addr_equal(const struct sockaddr *a, const struct sockaddr *b);
/* Same family and address, whatever the ports: the same host (unmap
 * v4-mapped addresses first, addr_unmap_v4()). */
bool addr_same_host(const struct sockaddr *a, const struct sockaddr *b);
bool addr_is_any(const struct sockaddr *sa);
/* 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104. */
bool addr_is_loopback(const struct sockaddr *sa);
/* Whether sa's address is one of this host's (in our network namespace):
 * bind() to it succeeds. Costs a socket; not for every packet. */
bool addr_is_local(const struct sockaddr *sa);
/* Whether sa's address is one configured on an interface of this host (in
 * our network namespace): stricter than addr_is_local(), which a subnet's
 * broadcast address passes. Costs a netlink dump. */
bool addr_is_iface_address(const struct sockaddr *sa);
/* Rewrites a v4-mapped IPv6 address (::ffff:a.b.c.d) as the AF_INET one it
 * stands for, so that checks made per family see what the kernel will use. */
void addr_unmap_v4(struct sockaddr_storage *ss);
unsigned addr_port(const struct sockaddr *sa);
socklen_t addr_len(const struct sockaddr *sa);

/*
 * Answers of addr_is_iface_address() for a few seconds: addresses come
 * and go, and a netlink dump per flow a peer opens is too dear.
 */
struct addr_cache {
	struct {
		struct sockaddr_storage addr;
		uint64_t checked_ms;
		bool local;
	} slot[8];
	unsigned next;
};
bool addr_cache_is_local(struct addr_cache *ac, const struct sockaddr *sa, uint64_t now_ms);

struct cfg_prefix;
/* Whether sa's address lies in the prefix (families must match). */
bool addr_in_prefix(const struct sockaddr *sa, const struct cfg_prefix *pfx);

#endif
