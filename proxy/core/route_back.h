/* SPDX-License-Identifier: MIT */
/*
 * Whether this host routes the replies of a server on it back to the
 * daemon when the daemon connects to that server from a client's address
 * (smcproxyd(8), "The client's address"): the daemon's socket is
 * IP_TRANSPARENT, bound to the client's address and marked client_mark;
 * the server's accepted socket takes that mark from our SYN
 * (net.ipv4.tcp_fwmark_accept = 1), and a policy rule sends every packet
 * with the mark to a table whose one route is "local 0.0.0.0/0 dev lo"
 * (and ::/0): the replies to the client's address are delivered here, to
 * us, instead of going out to the client's host. No conntrack is needed.
 *
 * The probe asks the kernel each of those things; the answer is kept
 * process-wide, written by the daemon at start and at reload and read by
 * every worker for each flow it connects (a relaxed atomic load).
 */
#ifndef SMCPROXY_ROUTE_BACK_H
#define SMCPROXY_ROUTE_BACK_H

#include <stdint.h>

/* route_back_probe() answers, in the order it checks. */
enum route_back {
	RB_OK,
	RB_NO_FWMARK_ACCEPT,	/* net.ipv4.tcp_fwmark_accept is 0 (or unreadable) */
	RB_NO_RULE,		/* a marked packet to a foreign address is not routed locally */
	RB_NO_PRIV,		/* IP_TRANSPARENT refused (CAP_NET_ADMIN) */
	RB_NO_FAMILY,		/* no such address family on this host */
	RB_ERROR,		/* the probe itself failed */
};

/* ROUTE_BACK_FAMILY(AF_INET) and (AF_INET6): bits of route_back_families(). */
#define ROUTE_BACK_V4		0x1u
#define ROUTE_BACK_V6		0x2u
#define ROUTE_BACK_FAMILY(af)	((af) == AF_INET6 ? ROUTE_BACK_V6 : ROUTE_BACK_V4)

/*
 * Checks, for family (AF_INET or AF_INET6), that connections marked mark
 * from a foreign address would work: the sysctl, the route of a marked
 * packet to a documentation address (192.0.2.1, 2001:db8::1) being local,
 * and an IP_TRANSPARENT socket binding to that address. One netlink round
 * trip and a socket; not for the hot path.
 */
enum route_back route_back_probe(int family, uint32_t mark);

/* A few words for an answer ("net.ipv4.tcp_fwmark_accept is 0"). */
const char *route_back_why(enum route_back rb);

/* The families for which connections from a client's address are made. */
unsigned route_back_families(void);
void route_back_set(unsigned families);

#endif
