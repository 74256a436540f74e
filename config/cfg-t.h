/* SPDX-License-Identifier: MIT */
/* Types of the parsed, validated configuration. Types only: no prototypes. */
#ifndef SMCPROXY_CFG_T_H
#define SMCPROXY_CFG_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

enum cfg_transport {
	CFG_TRANSPORT_AUTO,
	CFG_TRANSPORT_RDMA,
	CFG_TRANSPORT_SHM,
	CFG_TRANSPORT_TCP,
};

/* How applications' connections reach the daemon (smcproxyd.json(5),
 * "intercept"). */
enum cfg_intercept {
	CFG_INTERCEPT_IPTABLES,	/* nat REDIRECT rules, SO_ORIGINAL_DST */
	CFG_INTERCEPT_EBPF,	/* cgroup connect hooks the daemon attaches */
};

/* A socket address as written in the config ("127.0.0.1:7001", "[::1]:7001"). */
struct cfg_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* An address prefix ("10.0.0.0/24", "fd00::/64"); host bits are zero. */
struct cfg_prefix {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];	/* network byte order; 4 bytes used for AF_INET */
	uint8_t len;		/* prefix length in bits */
};

/*
 * One element of a peer's "allow" list: ports lo..hi of this host, on
 * every address of it (family 0) or on one address. Host byte order.
 */
struct cfg_allow {
	int family;		/* 0: any address of this host; AF_INET, AF_INET6 */
	uint8_t addr[16];	/* network byte order; 4 bytes used for AF_INET */
	uint16_t lo, hi;
};

struct cfg_peer {
	struct cfg_prefix prefix;
	uint16_t control_port;
	/* Where a peer of this prefix may open flows to on this host: deny
	 * by default (n_allow 0: nowhere). */
	struct cfg_allow *allow;
	size_t n_allow;
	/* The daemon that serves this prefix, when it is not each
	 * destination's own host (a node's pod addresses, served by the
	 * node's daemon): flows go to via_addr:control_port. via_family 0:
	 * the destination's own address. */
	int via_family;		/* 0, AF_INET or AF_INET6 */
	uint8_t via_addr[16];	/* network byte order; 4 bytes used for AF_INET */
};

/* The most "listen" addresses a config may have. */
#define CFG_LISTEN_MAX		256

/*
 * Mark bits that other software on a host sets or matches, which the
 * defaults of "mark" (0x43) and "client_mark" (0x53), and smcproxy-iptables'
 * TPROXY bit (0x1000), stay clear of (smcproxyd(8), MARKS): kube-proxy's
 * masquerade and drop bits (0x4000, 0x8000: its KUBE-POSTROUTING would
 * masquerade every connection with the first), the CNI portmap plugin's
 * masquerade bit (0x2000), Cilium's magic field (0x0f00), the AWS VPC
 * CNI's 0x80 and Calico's default mask (0xffff0000). What is left is
 * 0x107f; Istio's 1337 (0x539) is a value, not a bit, and none of ours.
 */
#define CFG_MARK_KUBE_MASQ	0x00004000u	/* kube-proxy's masquerade bit */
#define CFG_MARK_KUBE_DROP	0x00008000u	/* its drop bit (older versions) */
#define CFG_MARK_FOREIGN	0xffffef80u

/*
 * The whole configuration. It is immutable once cfg_load_*() returns it:
 * a reload builds a new one and the daemon swaps the pointer.
 * Durations are in milliseconds, sizes in bytes.
 */
struct cfg {
	char *source;			/* file path, or "<default>" */

	struct cfg_addr *listen;
	size_t n_listen;
	/* IP_TRANSPARENT listeners for TPROXY'd connections (forwarded ones,
	 * from pods): the original destination is the accepted socket's own
	 * address. */
	struct cfg_addr *tproxy;
	size_t n_tproxy;
	struct cfg_addr control;
	bool has_control;		/* false when "control" is "" */
	struct cfg_peer *peers;
	size_t n_peers;
	/* Addresses besides this host's own that peers may open flows to
	 * (the pods this daemon serves), each still under the port policy
	 * of the opener's peers[] entry. */
	struct cfg_prefix *serve;
	size_t n_serve;
	enum cfg_transport transport;
	uint32_t mark;
	/* Connect to servers from the client's address where the host
	 * routes it back (core/route_back.h), marked client_mark. */
	bool client_address;
	uint32_t client_mark;
	unsigned workers;		/* 0: one per CPU */
	/* Started as root: the user to run as once set up ("": stay root,
	 * on purpose; daemon/privdrop.c). Looked up at start, not here. */
	char *user;

	struct {
		unsigned per_peer;
		unsigned max_flows_per_link;
		uint64_t dead_after_ms;	/* a link's peer silent this long: down */
	} links;
	struct {
		uint64_t ring;
		uint64_t ring_initial;	/* a new flow's ring, when rings move */
		uint64_t pool;
	} buffers;
	struct {
		bool enabled;
		uint64_t max_bytes;
	} autocork;
	struct {
		unsigned pool;		/* 0: one per CPU */
		unsigned poll_budget;
	} cq;
	struct {
		unsigned usecs;		/* poll this long after activity; 0: off */
		unsigned budget;	/* percent of a CPU for fruitless polls */
		bool adaptive;		/* the window adapts, up to usecs */
	} busy_poll;
	struct {
		char *dir;
	} shm;
	struct {
		char *socket;
		mode_t mode;
	} stats;
	struct {
		uint64_t connect_timeout_ms;
		uint64_t negative_ttl_ms;
	} fallback;
	struct {
		char *psk_file;		/* "" when peers are trusted by prefix */
	} auth;
	struct {
		int level;		/* syslog priority: LOG_ERR .. LOG_DEBUG */
	} log;
	/* ebpf: TCP connects from the processes of cgroup (a path in the
	 * cgroup v2 hierarchy) to one of dests, on one of ports (family 0
	 * only), go to our listener. */
	struct {
		enum cfg_intercept mode;
		char *cgroup;
		struct cfg_prefix *dests;
		size_t n_dests;
		struct cfg_allow *ports;
		size_t n_ports;
		/* The sk_msg bypass of the local hop, once its start-time
		 * self-test passed; bypass_credit bounds what one flow may
		 * hold outside TCP's accounting, each way. */
		bool bypass;
		uint64_t bypass_credit;
	} intercept;

	/* Tuning keys: the relay, the drain, rdma queues and inline sends, debug
	 * switches. Every key, its default and whether a reload applies it
	 * are in man/smcproxyd.json.5 (KEYS, RELOAD). */
	struct {
		uint64_t buffer;	/* per-direction high-water mark */
		uint64_t keepalive_ms;	/* TCP keepalive idle time, 0: off */
		uint64_t idle_timeout_ms; /* 0: no idle timeout */
	} relay;
	struct {
		uint64_t drain_timeout_ms;
	} shutdown;
	struct {
		bool inline_data;	/* IBV_SEND_INLINE for what fits */
		unsigned sq_depth;	/* send work requests per link */
		unsigned rq_depth;	/* receive work requests per link */
	} rdma;
	struct {
		bool fail_link;		/* allow `smcproxyctl debug fail-link` */
		/* The bypass's self-test skips its blocking-read check, which
		 * this host's kernel fails (tests of the rest of the bypass). */
		bool bypass_skip_blocking_read;
	} debug;
	/* The HTTP endpoint for Prometheus and readiness probes
	 * (daemon/metrics.c). */
	struct {
		struct cfg_addr listen;	/* len 0: off */
		unsigned max_clients;	/* HTTP connections served at once */
		uint64_t timeout_ms;	/* a connection idle this long is closed */
	} metrics;
};

/*
 * Errors collected while loading: one line per error, each
 * "file:line:column: key.path: message\n". text is NUL-terminated.
 */
struct cfg_errors {
	char *text;
	size_t len;
	unsigned count;
};

/* What a reload changes. Keys that can be applied to a running daemon are
 * listed in live, the others (which need a restart) in restart; both are
 * comma-separated key paths, "" when none. */
struct cfg_diff {
	char live[512];
	char restart[512];
};

#endif
