/* SPDX-License-Identifier: MIT */
/*
 * The maps the intercept programs (intercept.bpf.c) share with their loader
 * (intercept.c): one definition of each key and value, compiled by clang
 * -target bpf and by the daemon's compiler alike, so a moved field fails
 * both builds. Fixed-width types only, no padding the two could disagree
 * on (checked below).
 *
 * Every address is 16 bytes: an IPv4 one as its v4-mapped form
 * (::ffff:a.b.c.d), so that a dual-stack socket's connect to a v4-mapped
 * address and a plain IPv4 connect find the same map entries.
 */
#ifndef SMCPROXY_INTERCEPT_MAPS_T_H
#define SMCPROXY_INTERCEPT_MAPS_T_H

#include <linux/types.h>

/* Longest-prefix-match key of the destinations trie: prefixlen counts
 * bits of addr, so an IPv4 /24 is 96 + 24. */
struct icpt_dest_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* Where an intercepted connect was going, and where we sent it instead;
 * ports in network byte order. family is that of the original
 * destination (AF_INET for a v4-mapped one). */
struct icpt_orig {
	__u8 addr[16];
	__u8 to_addr[16];
	__u16 port;
	__u16 to_port;
	__u16 family;
	__u16 pad;
};

/* A client connection as the listener's accepted socket sees it: client
 * address and port, listener address and port (network byte order). */
struct icpt_tuple {
	__u8 src[16];
	__u8 dst[16];
	__u16 sport;
	__u16 dport;
};

/* Counters, per CPU (the loader sums them). */
enum icpt_stat {
	ICPT_ST_REDIRECTED,	/* connects sent to our listener */
	ICPT_ST_SELF,		/* connects of the daemon itself, left alone */
	ICPT_ST_ESTABLISHED,	/* redirected connects that reached our listener */
	ICPT_ST_NO_LISTENER,	/* matched, but no listener of that family */
	ICPT_ST_MAP_FULL,	/* cookie map update failed: left alone */
	ICPT_ST_BYP_JOINED,	/* bypass: both ends of a flow in byp_socks */
	ICPT_ST_BYP_LATE,	/* bypass: the app wrote before our end was in */
	ICPT_ST_BYP_CREDIT,	/* bypass: a direction ran out of credit */
	ICPT_ST_BYP_GONE,	/* bypass: the peer socket had left the map */
	ICPT_ST_BYP_MSGS,	/* bypass: sendmsg calls redirected */
	ICPT_ST_BYP_BYTES,	/* bypass: bytes redirected */
	ICPT_ST_MAX,
};

/*
 * The bypass of the local hop (bypass.c): the application's socket and
 * our accepted one, both in byp_socks, each one's sendmsg redirected to
 * the other's receive queue. A flow is known by the client's address and
 * port and by the network namespace (two namespaces may hold the same
 * addresses; the maps are global): byp_flows and byp_allow are keyed with
 * side BYP_FLOW, byp_socks with the side of the socket.
 */
enum byp_side {
	BYP_FLOW,
	BYP_APP,		/* the application's socket */
	BYP_DAEMON,		/* our accepted socket */
};

struct byp_key {
	__u64 netns;		/* the namespace's cookie */
	__u8 addr[16];		/* the client's address */
	__u16 port;		/* and port, network order */
	__u16 side;		/* enum byp_side */
	__u32 pad;
};

/*
 * A flow's bypass state. Each field has one writer, so no two contexts
 * race on one: app_in by the app's sock_ops, daemon_in by ours (or by the
 * loader), a2d_* by the program on the app's sendmsg (serialised by its
 * socket lock), d2a_* by the one on ours. A direction that sent a byte
 * over TCP never comes back to the bypass (the receiver reads redirected
 * data before TCP's: mixing would reorder); leaving it is order-safe.
 */
struct byp_flow {
	__u64 a2d_bytes;	/* app to daemon: bytes redirected */
	__u64 d2a_bytes;	/* daemon to app */
	__u8 app_in;		/* the app's socket is in byp_socks */
	__u8 daemon_in;		/* ours is */
	__u8 a2d_tcp;		/* app to daemon goes over TCP for good */
	__u8 d2a_tcp;
	__u32 pad;
};

/* The ports bitmap: one bit per port (host byte order), 64 per word. */
#define ICPT_PORT_WORDS (65536 / 64)

/* Map sizes: the LRU maps hold connections between their connect and
 * their accept (tuple) or their close (cookie, read by getpeername). */
#define ICPT_DESTS_MAX 4096
#define ICPT_FLOWS_MAX 65536

#ifndef __bpf__
_Static_assert(sizeof(struct icpt_dest_key) == 20, "icpt_dest_key has padding");
_Static_assert(sizeof(struct icpt_orig) == 40, "icpt_orig has padding");
_Static_assert(sizeof(struct icpt_tuple) == 36, "icpt_tuple has padding");
_Static_assert(sizeof(struct byp_key) == 32, "byp_key has padding");
_Static_assert(sizeof(struct byp_flow) == 24, "byp_flow has padding");
#endif

#endif
