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
/* The source address the kernel's route to dest leaves from (a connected
 * UDP socket's own, port 0), into *src: 0 or -errno. Costs a socket and
 * three system calls; not for every packet. */
int addr_route_src(const struct sockaddr *dest, struct sockaddr_storage *src);
/* Rewrites a v4-mapped IPv6 address (::ffff:a.b.c.d) as the AF_INET one it
 * stands for, so that checks made per family see what the kernel will use. */
void addr_unmap_v4(struct sockaddr_storage *ss);
unsigned addr_port(const struct sockaddr *sa);
socklen_t addr_len(const struct sockaddr *sa);

/*
 * This host's interface addresses (in our network namespace), as a sorted
 * snapshot: a lookup is a binary search. The snapshot is taken again at
 * most once a second, and only once rtnetlink said that an address came
 * or went (RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR; without that socket,
 * or after a notice was lost, every second): a getifaddrs() dump costs
 * milliseconds on a host with hundreds of links, and a peer decides how
 * often we would look. So an address added just now may be unknown for
 * up to a second, and one removed known as long. Only addresses
 * configured on an interface count: a subnet's broadcast address, which
 * bind() would take, does not. Zeroed is a valid empty state (the socket
 * opens at the first lookup); addr_local_close() frees.
 */
#define ADDR_LOCAL_REFRESH_MS 1000

struct addr_local {
	uint32_t *v4;			/* s_addr values, sorted */
	uint8_t (*v6)[16];		/* sorted as memcmp() orders them */
	size_t n_v4, n_v6;
	uint64_t taken_ms;		/* uv_now() of the last snapshot */
	uint64_t refreshes;		/* snapshots taken (for the tests) */
	bool taken;			/* a snapshot exists */
	bool stale;			/* take the next one whatever the notices */
	bool watching;			/* nl_fd is open */
	bool watch_failed;		/* it could not be: refresh by time */
	int nl_fd;			/* rtnetlink address notices */
};
/* Whether sa's address is one of the snapshot's (taken again first if it
 * is due, see above). */
bool addr_local_has(struct addr_local *al, const struct sockaddr *sa, uint64_t now_ms);
/* Replaces the snapshot with n addresses (AF_INET and AF_INET6 sockaddrs
 * in ss) taken at now_ms; -ENOMEM keeps the old one. The refresh uses
 * it; a test may too. */
int addr_local_set(struct addr_local *al, const struct sockaddr_storage *ss, size_t n,
		   uint64_t now_ms);
void addr_local_close(struct addr_local *al);

struct cfg_prefix;
/* Whether sa's address lies in the prefix (families must match). */
bool addr_in_prefix(const struct sockaddr *sa, const struct cfg_prefix *pfx);

#endif
