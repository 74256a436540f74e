/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The intercept programs, attached to one cgroup v2 by intercept.c: TCP
 * connects from the cgroup's processes to the configured destinations go
 * to smcproxyd's listener instead, rewritten in the connect hook before any
 * packet exists (no NAT, no conntrack), and the original destination is
 * kept in maps:
 *
 *   connect4/6     a matching connect: cookie -> original destination
 *                  (icpt_by_cookie), address rewritten to the listener
 *   sock_ops       TCP_CONNECT: a redirected socket asks to hear of its
 *                  close; ACTIVE_ESTABLISHED: the entry copied under the
 *                  connection's 4-tuple (icpt_by_tuple), which the daemon
 *                  reads right after accept() and deletes; at close (also
 *                  of a connect that failed) both entries go
 *   getpeername4/6 the app sees the address it connected to, not ours
 *
 * And, once bypass.c's self-test passed and set byp_enabled, the bypass
 * of the local hop (maps-t.h, struct byp_flow):
 *
 *   sock_ops       ACTIVE_ESTABLISHED: the app's socket into byp_socks,
 *                  its flow into byp_flows with its credit in byp_allow;
 *                  at close both entries go
 *   byp_sockops    (attached to the daemon's own cgroup) PASSIVE_ESTABLISHED
 *                  of our end of such a flow: into byp_socks, before the
 *                  handshake's last ACK is acknowledged to anyone
 *   byp_msg        (attached to byp_socks) each sendmsg of either end goes
 *                  to the other's receive queue, skipping TCP, while the
 *                  peer is in and the direction has credit; else over TCP,
 *                  and from then on over TCP for good
 *
 * The daemon's own connects are never redirected: they carry its mark, and
 * its cgroup (which the loader makes sure is not the target) is skipped.
 * Compiled with clang -target bpf against the UAPI headers only.
 * GPL-2.0 OR MIT: the kernel's GPL-only helpers need a GPL-compatible
 * licence string; the rest of the project is MIT.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/socket.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "maps-t.h"

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1

/* One 32-bit load of a context field: clang would merge two neighbouring
 * loads into a 64-bit one, which the verifier refuses on these contexts. */
#define CTX32(field) (*(volatile __u32 *)&(field))

/* Set by the loader before the programs load (the skeleton's rodata). */
const volatile __u32 icpt_mark;
const volatile __u64 icpt_self_cgroup;
const volatile __u32 icpt_to4;		/* our IPv4 listener, network order */
const volatile __u16 icpt_to4_port;
const volatile __u32 icpt_to6[4];	/* our IPv6 listener */
const volatile __u16 icpt_to6_port;
const volatile __u8 icpt_has_to4, icpt_has_to6;
/* The bypass: the credit of a flow's app-to-daemon direction (bytes in
 * flight, refilled by the daemon as it reads) and the budget of the
 * daemon-to-app one (bytes in all: nothing can tell us what the app has
 * read). */
const volatile __u64 byp_credit;

/* Set by the loader (a writable global) once the self-test passed. */
volatile __u32 byp_enabled;

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, ICPT_DESTS_MAX);
	__type(key, struct icpt_dest_key);
	__type(value, __u8);
} icpt_dests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ICPT_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} icpt_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ICPT_FLOWS_MAX);
	__type(key, __u64);
	__type(value, struct icpt_orig);
} icpt_by_cookie SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ICPT_FLOWS_MAX);
	__type(key, struct icpt_tuple);
	__type(value, struct icpt_orig);
} icpt_by_tuple SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ICPT_ST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} icpt_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 2 * ICPT_FLOWS_MAX);
	__type(key, struct byp_key);
	__type(value, __u64);
} byp_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ICPT_FLOWS_MAX);
	__type(key, struct byp_key);
	__type(value, struct byp_flow);
} byp_flows SEC(".maps");

/* App-to-daemon bytes a flow may redirect in all (cumulative), written by
 * the daemon as it reads (bypass_refill()), created by sock_ops. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ICPT_FLOWS_MAX);
	__type(key, struct byp_key);
	__type(value, __u64);
} byp_allow SEC(".maps");

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&icpt_stats, &which);

	if (v)
		*v += n;
}

static __always_inline void stat_inc(__u32 which)
{
	stat_add(which, 1);
}

/* A port read from a context's remote_port: the kernel stores the
 * network-order port in its upper 16 bits on little-endian machines. */
static __always_inline __u16 ctx_remote_port(__u32 v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (__u16)(v >> 16);
#else
	return (__u16)v;
#endif
}

static __always_inline void v4_mapped(__u8 *out, __u32 a)
{
	__builtin_memset(out, 0, 10);
	out[10] = 0xff;
	out[11] = 0xff;
	__builtin_memcpy(out + 12, &a, 4);
}

static __always_inline int is_v4_mapped(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

/* Is a connect to addr (16 bytes) port (network order) one to intercept? */
static __always_inline int wanted(const __u8 *addr, __u16 port)
{
	struct icpt_dest_key k = { .prefixlen = 128 };
	__u32 p = bpf_ntohs(port), w = p / 64;
	__u64 *bits;

	__builtin_memcpy(k.addr, addr, 16);
	if (!bpf_map_lookup_elem(&icpt_dests, &k))
		return 0;
	bits = bpf_map_lookup_elem(&icpt_ports, &w);
	return bits && (*bits >> (p % 64)) & 1;
}

/* The daemon's own sockets: its mark, or its cgroup. */
static __always_inline int from_self(struct bpf_sock_addr *ctx)
{
	struct bpf_sock *sk = ctx->sk;

	if (sk && icpt_mark && sk->mark == icpt_mark)
		return 1;
	return icpt_self_cgroup && bpf_get_current_cgroup_id() == icpt_self_cgroup;
}

/* Whether this connect, to o's destination, is one to send to the daemon:
 * a configured destination, and not the daemon's own (counted). */
static __always_inline int intercepts(struct bpf_sock_addr *ctx, const struct icpt_orig *o)
{
	if (!wanted(o->addr, o->port))
		return 0;
	if (from_self(ctx)) {
		stat_inc(ICPT_ST_SELF);
		return 0;
	}
	return 1;
}

/* Records where the socket was going; false when it cannot (the connect
 * then goes where it was going, not to a listener that could not tell). */
static __always_inline int remember(struct bpf_sock_addr *ctx, struct icpt_orig *o)
{
	__u64 cookie = bpf_get_socket_cookie(ctx);

	if (bpf_map_update_elem(&icpt_by_cookie, &cookie, o, BPF_ANY)) {
		stat_inc(ICPT_ST_MAP_FULL);
		return 0;
	}
	stat_inc(ICPT_ST_REDIRECTED);
	return 1;
}

SEC("cgroup/connect4")
int icpt_connect4(struct bpf_sock_addr *ctx)
{
	struct icpt_orig o = { .family = AF_INET };

	if (ctx->type != SOCK_STREAM || ctx->protocol != IPPROTO_TCP)
		return 1;
	v4_mapped(o.addr, ctx->user_ip4);
	o.port = (__u16)ctx->user_port;
	if (!intercepts(ctx, &o))
		return 1;
	if (!icpt_has_to4) {
		stat_inc(ICPT_ST_NO_LISTENER);
		return 1;
	}
	v4_mapped(o.to_addr, icpt_to4);
	o.to_port = icpt_to4_port;
	if (!remember(ctx, &o))
		return 1;
	ctx->user_ip4 = icpt_to4;
	ctx->user_port = icpt_to4_port;
	return 1;
}

SEC("cgroup/connect6")
int icpt_connect6(struct bpf_sock_addr *ctx)
{
	struct icpt_orig o = { .family = AF_INET6 };
	__u32 a[4];
	int mapped;

	if (ctx->type != SOCK_STREAM || ctx->protocol != IPPROTO_TCP)
		return 1;
	a[0] = CTX32(ctx->user_ip6[0]);
	a[1] = CTX32(ctx->user_ip6[1]);
	a[2] = CTX32(ctx->user_ip6[2]);
	a[3] = CTX32(ctx->user_ip6[3]);
	__builtin_memcpy(o.addr, a, 16);
	o.port = (__u16)ctx->user_port;
	if (!intercepts(ctx, &o))
		return 1;
	/* A dual-stack socket's connect to ::ffff:a.b.c.d is IPv4 on the
	 * wire: it goes to the IPv4 listener, as ::ffff:listener. */
	mapped = is_v4_mapped(a);
	if (mapped ? !icpt_has_to4 : !icpt_has_to6) {
		stat_inc(ICPT_ST_NO_LISTENER);
		return 1;
	}
	if (mapped) {
		o.family = AF_INET;
		v4_mapped(o.to_addr, icpt_to4);
		o.to_port = icpt_to4_port;
	} else {
		a[0] = icpt_to6[0];
		a[1] = icpt_to6[1];
		a[2] = icpt_to6[2];
		a[3] = icpt_to6[3];
		__builtin_memcpy(o.to_addr, a, 16);
		o.to_port = icpt_to6_port;
	}
	if (!remember(ctx, &o))
		return 1;
	__builtin_memcpy(a, o.to_addr, 16);
	ctx->user_ip6[0] = a[0];
	ctx->user_ip6[1] = a[1];
	ctx->user_ip6[2] = a[2];
	ctx->user_ip6[3] = a[3];
	ctx->user_port = o.to_port;
	return 1;
}

/* The 4-tuple of an established client socket, as our accepted socket
 * will see it (client = src). */
static __always_inline void ops_tuple(struct bpf_sock_ops *skops, const struct icpt_orig *o,
				      struct icpt_tuple *t)
{
	__u32 a[4];

	if (skops->family == AF_INET) {
		v4_mapped(t->src, skops->local_ip4);
	} else {
		a[0] = CTX32(skops->local_ip6[0]);
		a[1] = CTX32(skops->local_ip6[1]);
		a[2] = CTX32(skops->local_ip6[2]);
		a[3] = CTX32(skops->local_ip6[3]);
		__builtin_memcpy(t->src, a, 16);
	}
	/* The listener end is the one connect4/6 chose: no need to read
	 * remote_port, whose layout in the context changed over kernels. */
	__builtin_memcpy(t->dst, o->to_addr, 16);
	t->sport = bpf_htons((__u16)skops->local_port);
	t->dport = o->to_port;
}

/* The app's end of a redirected flow into the bypass: its socket first,
 * then the flow and its credit, so that whoever finds the flow finds the
 * socket. Not when a byte already left (a fast-open SYN's): it went over
 * TCP, and the bypass would overtake it. */
static __always_inline void byp_join_app(struct bpf_sock_ops *skops, const struct icpt_tuple *t)
{
	struct byp_key k = { .side = BYP_APP };
	struct byp_flow f = { .app_in = 1 };
	__u64 credit = byp_credit;

	if (!byp_enabled || skops->data_segs_out)
		return;
	k.netns = bpf_get_netns_cookie(skops);
	__builtin_memcpy(k.addr, t->src, 16);
	k.port = t->sport;
	if (bpf_sock_hash_update(skops, &byp_socks, &k, BPF_NOEXIST))
		return;
	k.side = BYP_FLOW;
	if (bpf_map_update_elem(&byp_allow, &k, &credit, BPF_ANY) == 0 &&
	    bpf_map_update_elem(&byp_flows, &k, &f, BPF_ANY) == 0)
		return;
	/* No flow: the socket stays a plain one. */
	bpf_map_delete_elem(&byp_allow, &k);
	k.side = BYP_APP;
	bpf_map_delete_elem(&byp_socks, &k);
}

/* The app's socket closed: its flow goes (the sockets leave byp_socks by
 * themselves when they close). */
static __always_inline void byp_leave(struct bpf_sock_ops *skops, const struct icpt_tuple *t)
{
	struct byp_key k = { .side = BYP_FLOW };

	k.netns = bpf_get_netns_cookie(skops);
	__builtin_memcpy(k.addr, t->src, 16);
	k.port = t->sport;
	bpf_map_delete_elem(&byp_flows, &k);
	bpf_map_delete_elem(&byp_allow, &k);
}

SEC("sockops")
int icpt_sockops(struct bpf_sock_ops *skops)
{
	struct icpt_tuple t = {};
	struct icpt_orig *o;
	__u64 cookie;

	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB &&
	    skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB &&
	    !(skops->op == BPF_SOCK_OPS_STATE_CB && skops->args[1] == BPF_TCP_CLOSE))
		return 1;
	cookie = bpf_get_socket_cookie(skops);
	o = bpf_map_lookup_elem(&icpt_by_cookie, &cookie);
	if (!o)
		return 1;
	/* Right after connect4/6, before the SYN: from here the socket's
	 * close, established or not, reaches us and frees its entries. */
	if (skops->op == BPF_SOCK_OPS_TCP_CONNECT_CB) {
		bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_STATE_CB_FLAG);
		return 1;
	}
	ops_tuple(skops, o, &t);
	if (skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB) {
		/* Before the ACK that completes the handshake leaves, so the
		 * entry is there before our accept() can return. */
		if (bpf_map_update_elem(&icpt_by_tuple, &t, o, BPF_ANY) == 0)
			stat_inc(ICPT_ST_ESTABLISHED);
		byp_join_app(skops, &t);
		return 1;
	}
	/* Closed: the daemon took its entry long ago, or never will. */
	bpf_map_delete_elem(&icpt_by_tuple, &t);
	bpf_map_delete_elem(&icpt_by_cookie, &cookie);
	byp_leave(skops, &t);
	return 1;
}

/*
 * Our end of a flow whose app end is in the bypass, as it establishes:
 * into byp_socks. This runs under the new socket's lock, so a system call
 * of ours that takes that lock after accept() finds it done
 * (bypass_joined()). The app may have written already: then its
 * direction is over TCP for good (byp_msg), ours still may bypass.
 */
SEC("sockops")
int byp_sockops(struct bpf_sock_ops *skops)
{
	struct byp_key k = { .side = BYP_FLOW };
	struct byp_flow *f;
	__u32 a[4];

	if (skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB || !byp_enabled)
		return 1;
	k.netns = bpf_get_netns_cookie(skops);
	if (skops->family == AF_INET) {
		v4_mapped(k.addr, skops->remote_ip4);
	} else {
		a[0] = CTX32(skops->remote_ip6[0]);
		a[1] = CTX32(skops->remote_ip6[1]);
		a[2] = CTX32(skops->remote_ip6[2]);
		a[3] = CTX32(skops->remote_ip6[3]);
		__builtin_memcpy(k.addr, a, 16);
	}
	k.port = ctx_remote_port(CTX32(skops->remote_port));
	f = bpf_map_lookup_elem(&byp_flows, &k);
	if (!f || !f->app_in || f->daemon_in)
		return 1;
	k.side = BYP_DAEMON;
	if (bpf_sock_hash_update(skops, &byp_socks, &k, BPF_NOEXIST) == 0) {
		f->daemon_in = 1;
		stat_inc(ICPT_ST_BYP_JOINED);
	}
	return 1;
}

/* The flow key of a socket's own address (remote: its peer's). */
static __always_inline void msg_key(struct sk_msg_md *msg, struct byp_key *k, int remote)
{
	__u32 a[4];

	k->netns = bpf_get_netns_cookie(msg);
	k->side = BYP_FLOW;
	if (msg->family == AF_INET) {
		v4_mapped(k->addr, remote ? msg->remote_ip4 : msg->local_ip4);
	} else if (remote) {
		a[0] = CTX32(msg->remote_ip6[0]);
		a[1] = CTX32(msg->remote_ip6[1]);
		a[2] = CTX32(msg->remote_ip6[2]);
		a[3] = CTX32(msg->remote_ip6[3]);
		__builtin_memcpy(k->addr, a, 16);
	} else {
		a[0] = CTX32(msg->local_ip6[0]);
		a[1] = CTX32(msg->local_ip6[1]);
		a[2] = CTX32(msg->local_ip6[2]);
		a[3] = CTX32(msg->local_ip6[3]);
		__builtin_memcpy(k->addr, a, 16);
	}
	k->port = remote ? ctx_remote_port(CTX32(msg->remote_port))
			 : bpf_htons((__u16)CTX32(msg->local_port));
}

/*
 * Every sendmsg of a socket in byp_socks. The app's socket has the flow
 * under its own address, ours under its peer's. A direction is
 * redirected while it never went over TCP, the peer is in the map and
 * the credit holds; the first time one of these fails it goes over TCP,
 * and stays there (the peer reads what was redirected first, then TCP's
 * queue: order holds one way only).
 */
SEC("sk_msg")
int byp_msg(struct sk_msg_md *msg)
{
	struct byp_key k = {};
	struct byp_flow *f;
	__u64 size = msg->size, limit, *allow;
	__u8 *tcp;

	if (!byp_enabled)
		return SK_PASS;
	msg_key(msg, &k, 0);
	f = bpf_map_lookup_elem(&byp_flows, &k);
	if (f) {
		tcp = &f->a2d_tcp;
		if (*tcp)
			return SK_PASS;
		if (!f->daemon_in) {
			stat_inc(ICPT_ST_BYP_LATE);
			goto to_tcp;
		}
		allow = bpf_map_lookup_elem(&byp_allow, &k);
		limit = allow ? *allow : 0;
		if (f->a2d_bytes + size > limit) {
			stat_inc(ICPT_ST_BYP_CREDIT);
			goto to_tcp;
		}
		k.side = BYP_DAEMON;
		if (bpf_msg_redirect_hash(msg, &byp_socks, &k, BPF_F_INGRESS) != SK_PASS) {
			stat_inc(ICPT_ST_BYP_GONE);
			goto to_tcp;
		}
		f->a2d_bytes += size;
	} else {
		msg_key(msg, &k, 1);
		f = bpf_map_lookup_elem(&byp_flows, &k);
		if (!f)
			return SK_PASS;
		tcp = &f->d2a_tcp;
		if (*tcp)
			return SK_PASS;
		if (f->d2a_bytes + size > byp_credit) {
			stat_inc(ICPT_ST_BYP_CREDIT);
			goto to_tcp;
		}
		k.side = BYP_APP;
		if (!f->app_in ||
		    bpf_msg_redirect_hash(msg, &byp_socks, &k, BPF_F_INGRESS) != SK_PASS) {
			stat_inc(ICPT_ST_BYP_GONE);
			goto to_tcp;
		}
		f->d2a_bytes += size;
	}
	stat_inc(ICPT_ST_BYP_MSGS);
	stat_add(ICPT_ST_BYP_BYTES, size);
	return SK_PASS;

to_tcp:
	*tcp = 1;
	return SK_PASS;
}

/* getpeername() of a redirected socket: the address the app connected
 * to. Only while the socket is connected to our listener: a socket whose
 * connect failed may connect again, elsewhere, before its entry goes. */
SEC("cgroup/getpeername4")
int icpt_getpeername4(struct bpf_sock_addr *ctx)
{
	__u64 cookie = bpf_get_socket_cookie(ctx);
	struct icpt_orig *o = bpf_map_lookup_elem(&icpt_by_cookie, &cookie);
	__u32 a;

	if (!o || o->family != AF_INET)
		return 1;
	__builtin_memcpy(&a, o->to_addr + 12, 4);
	if (ctx->user_ip4 != a || (__u16)ctx->user_port != o->to_port)
		return 1;
	__builtin_memcpy(&a, o->addr + 12, 4);
	ctx->user_ip4 = a;
	ctx->user_port = o->port;
	return 1;
}

SEC("cgroup/getpeername6")
int icpt_getpeername6(struct bpf_sock_addr *ctx)
{
	__u64 cookie = bpf_get_socket_cookie(ctx);
	struct icpt_orig *o = bpf_map_lookup_elem(&icpt_by_cookie, &cookie);
	__u32 a[4];

	if (!o)
		return 1;
	__builtin_memcpy(a, o->to_addr, 16);
	if (CTX32(ctx->user_ip6[0]) != a[0] || CTX32(ctx->user_ip6[1]) != a[1] ||
	    CTX32(ctx->user_ip6[2]) != a[2] || CTX32(ctx->user_ip6[3]) != a[3] ||
	    (__u16)ctx->user_port != o->to_port)
		return 1;
	/* A v4-mapped connect's original is kept v4-mapped already. */
	__builtin_memcpy(a, o->addr, 16);
	ctx->user_ip6[0] = a[0];
	ctx->user_ip6[1] = a[1];
	ctx->user_ip6[2] = a[2];
	ctx->user_ip6[3] = a[3];
	ctx->user_port = o->port;
	return 1;
}

char _license[] SEC("license") = "Dual MIT/GPL";
