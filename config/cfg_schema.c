/* SPDX-License-Identifier: MIT */
/*
 * The schema: every key of the config, its type, range, default and
 * whether a reload can apply it to a running daemon. The loader (cfg.c)
 * and the reload diff (cfg_diff.c) both walk this one table, so a key added
 * here is parsed, defaulted, validated and diffed without further code.
 *
 * Defaults are JSON text run through the same parser as user input; the
 * embedded default config (cfg_default.c) must agree with them, which
 * test_cfg checks. man/smcproxyd.json.5 documents the same table.
 */
#include <stddef.h>
#include <syslog.h>

#include "cfg-int.h"

/* Columns: { name, kind, live, flags, field, min, max, default, sub }. */
#define F(field) offsetof(struct cfg, field)

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)
#define SEC 1000ULL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

/* UNIX socket paths must fit sockaddr_un.sun_path (108 bytes with NUL).
 * shm.dir holds the sockets the shm transport passes eventfds over, so
 * leave room for their names below it. */
#define SUN_PATH_MAX 107
#define SHM_DIR_MAX 64

static const struct cfg__key links_keys[] = {
	{ "per_peer", CFG__UINT, false, 0, F(links.per_peer), 1, 16, "2", NULL },
	{ "max_flows_per_link", CFG__UINT, false, 0, F(links.max_flows_per_link),
	  1, 65535, "255", NULL },
	/* Live: each sweep reads it. Not 0: a silent peer must have a bound. */
	{ "dead_after", CFG__DURATION, true, 0, F(links.dead_after_ms), 1 * SEC, HOUR,
	  "\"15s\"", NULL },
	{ 0 },
};

static const struct cfg__key buffers_keys[] = {
	{ "ring", CFG__SIZE, false, CFG__F_POW2, F(buffers.ring),
	  16 * KiB, 64 * MiB, "\"1MiB\"", NULL },
	/* Must also be <= ring: checked in cfg.c after both are known. */
	{ "ring_initial", CFG__SIZE, false, CFG__F_POW2, F(buffers.ring_initial),
	  16 * KiB, 64 * MiB, "\"16KiB\"", NULL },
	/* Must also be >= ring: checked in cfg.c after both are known. */
	/* 0: auto, from the host's memory (rmb_budget_share()). */
	{ "pool", CFG__SIZE, false, 0, F(buffers.pool), 0, 64 * GiB, "0", NULL },
	{ 0 },
};

static const struct cfg__key autocork_keys[] = {
	{ "enabled", CFG__BOOL, true, 0, F(autocork.enabled), 0, 1, "true", NULL },
	{ "max_bytes", CFG__SIZE, true, 0, F(autocork.max_bytes), 1, 16 * MiB, "\"64KiB\"", NULL },
	{ 0 },
};

static const struct cfg__key cq_keys[] = {
	{ "pool", CFG__UINT, false, 0, F(cq.pool), 0, 16, "0", NULL },
	{ "poll_budget", CFG__UINT, false, 0, F(cq.poll_budget), 1, 1024, "16", NULL },
	{ 0 },
};

/* Live: each worker's loop takes the new values at once. */
static const struct cfg__key busy_poll_keys[] = {
	{ "usecs", CFG__UINT, true, 0, F(busy_poll.usecs), 0, 100000, "300", NULL },
	{ "budget", CFG__UINT, true, 0, F(busy_poll.budget), 1, 100, "50", NULL },
	{ "adaptive", CFG__BOOL, true, 0, F(busy_poll.adaptive), 0, 1, "true", NULL },
	{ 0 },
};

static const struct cfg__key shm_keys[] = {
	{ "dir", CFG__PATH, false, 0, F(shm.dir), 0, SHM_DIR_MAX, "\"/run/smcproxy\"", NULL },
	{ 0 },
};

static const struct cfg__key stats_keys[] = {
	{ "socket", CFG__PATH, false, 0, F(stats.socket), 0, SUN_PATH_MAX,
	  "\"/run/smcproxy/smcproxyd.sock\"", NULL },
	{ "mode", CFG__MODE, true, 0, F(stats.mode), 0, 0777, "\"0660\"", NULL },
	{ 0 },
};

static const struct cfg__key fallback_keys[] = {
	{ "connect_timeout", CFG__DURATION, true, 0, F(fallback.connect_timeout_ms),
	  1, HOUR, "\"2s\"", NULL },
	/* 0 turns the negative cache off: every flow probes the peer again. */
	{ "negative_ttl", CFG__DURATION, true, 0, F(fallback.negative_ttl_ms),
	  0, DAY, "\"30s\"", NULL },
	{ 0 },
};

/* Restart: the secret is read once at start, where a missing or short
 * file stops the daemon with a clear error instead of a silent reload. */
static const struct cfg__key auth_keys[] = {
	{ "psk_file", CFG__PATH, false, CFG__F_EMPTY_OK, F(auth.psk_file), 0, 4096, "\"\"", NULL },
	{ 0 },
};

static const struct cfg__key log_keys[] = {
	{ "level", CFG__LOG_LEVEL, true, 0, F(log.level), LOG_ERR, LOG_DEBUG, "\"info\"", NULL },
	{ 0 },
};

static const struct cfg__key relay_keys[] = {
	{ "buffer", CFG__SIZE, false, 0, F(relay.buffer), 4 * KiB, 64 * MiB, "\"1MiB\"", NULL },
	/* TCP_KEEPIDLE takes whole seconds up to 32767 (MAX_TCP_KEEPIDLE). */
	{ "keepalive", CFG__DURATION, true, CFG__F_ZERO_OK, F(relay.keepalive_ms),
	  1 * SEC, 32767 * SEC, "\"60s\"", NULL },
	{ "idle_timeout", CFG__DURATION, true, 0, F(relay.idle_timeout_ms),
	  0, 30 * DAY, "\"0\"", NULL },
	{ 0 },
};

static const struct cfg__key shutdown_keys[] = {
	{ "drain_timeout", CFG__DURATION, true, 0, F(shutdown.drain_timeout_ms),
	  0, HOUR, "\"10s\"", NULL },
	{ 0 },
};

static const struct cfg__key rdma_keys[] = {
	{ "inline", CFG__BOOL, false, 0, F(rdma.inline_data), 0, 1, "true", NULL },
	/* A link's sq + rq + 2 entries must fit one CQ (16384). */
	{ "sq_depth", CFG__UINT, false, 0, F(rdma.sq_depth), 16, 4096, "256", NULL },
	{ "rq_depth", CFG__UINT, false, 0, F(rdma.rq_depth), 16, 4096, "256", NULL },
	{ 0 },
};

/* Test hooks, off by default: a production daemon refuses them. */
static const struct cfg__key debug_keys[] = {
	{ "fail_link", CFG__BOOL, true, 0, F(debug.fail_link), 0, 1, "false", NULL },
	{ "bypass_skip_blocking_read", CFG__BOOL, false, 0, F(debug.bypass_skip_blocking_read), 0, 1,
	  "false", NULL },
	{ 0 },
};

/*
 * Restart: the listening socket is bound once at start, like every other
 * listener. The timeout is applied by libmicrohttpd in whole seconds, so
 * it is at least one second.
 */
static const struct cfg__key metrics_keys[] = {
	{ "listen", CFG__ADDR, false, CFG__F_EMPTY_OK, F(metrics.listen), 0, 0, "\"\"", NULL },
	{ "max_clients", CFG__UINT, false, 0, F(metrics.max_clients), 1, 1024, "16", NULL },
	{ "timeout", CFG__DURATION, false, 0, F(metrics.timeout_ms), 1 * SEC, HOUR,
	  "\"10s\"", NULL },
	{ 0 },
};

/*
 * Restart: the programs are attached once, at start, and their maps
 * filled then. max of destinations is the trie's size (ICPT_DESTS_MAX in
 * proxy/intercept/maps-t.h); of ports, ranges ORed into one bitmap.
 */
static const struct cfg__key intercept_keys[] = {
	{ "mode", CFG__INTERCEPT, false, 0, F(intercept.mode), 0, 0, "\"iptables\"", NULL },
	{ "cgroup", CFG__PATH, false, 0, F(intercept.cgroup), 0, 4096, "\"/\"", NULL },
	{ "destinations", CFG__PREFIXES, false, 0, 0, 0, 4096, "[]", NULL },
	{ "ports", CFG__PORTS, false, 0, 0, 1, 256, "[\"1-65535\"]", NULL },
	{ "bypass", CFG__BOOL, false, 0, F(intercept.bypass), 0, 1, "false", NULL },
	{ "bypass_credit", CFG__SIZE, false, 0, F(intercept.bypass_credit), 16 * KiB, 1 * GiB,
	  "\"1MiB\"", NULL },
	{ 0 },
};

const struct cfg__key cfg__schema[] = {
	/* For listen and peers, max is the most elements: each listen
	 * address is a socket per worker, and duplicates are found by
	 * comparing each element with those before it. */
	{ "listen", CFG__LISTEN, false, 0, 0, 1, CFG_LISTEN_MAX,
	  "[\"127.0.0.1:7001\", \"[::1]:7001\"]", NULL },
	/* Restart, like listen. */
	{ "tproxy", CFG__TPROXY, false, 0, 0, 0, 256, "[]", NULL },
	{ "control", CFG__CONTROL, false, 0, 0, 0, 0, "\"0.0.0.0:7002\"", NULL },
	{ "peers", CFG__PEERS, true, 0, 0, 0, 4096, "[]", NULL },
	/* Live: each flow a peer opens is judged by the config of the
	 * moment. At most 256 prefixes: each such flow walks the list. */
	{ "serve", CFG__SERVE, true, 0, 0, 0, 256, "[]", NULL },
	{ "transport", CFG__TRANSPORT, false, 0, F(transport), 0, 0, "\"auto\"", NULL },
	{ "mark", CFG__U32, false, 0, F(mark), 1, 0xffffffffULL, "67", NULL },
	/* Reload: the daemon probes the host's rules again then. */
	{ "client_address", CFG__BOOL, true, 0, F(client_address), 0, 1, "true", NULL },
	{ "client_mark", CFG__U32, false, 0, F(client_mark), 1, 0xffffffffULL, "83", NULL },
	{ "workers", CFG__UINT, false, 0, F(workers), 0, 256, "0", NULL },
	/* Restart: the daemon drops root once, at start. */
	{ "user", CFG__USER, false, 0, F(user), 0, 32, "\"smcproxy\"", NULL },
	{ "links", CFG__SECTION, false, 0, 0, 0, 0, NULL, links_keys },
	{ "buffers", CFG__SECTION, false, 0, 0, 0, 0, NULL, buffers_keys },
	{ "autocork", CFG__SECTION, false, 0, 0, 0, 0, NULL, autocork_keys },
	{ "cq", CFG__SECTION, false, 0, 0, 0, 0, NULL, cq_keys },
	{ "busy_poll", CFG__SECTION, false, 0, 0, 0, 0, NULL, busy_poll_keys },
	{ "shm", CFG__SECTION, false, 0, 0, 0, 0, NULL, shm_keys },
	{ "stats", CFG__SECTION, false, 0, 0, 0, 0, NULL, stats_keys },
	{ "fallback", CFG__SECTION, false, 0, 0, 0, 0, NULL, fallback_keys },
	{ "auth", CFG__SECTION, false, 0, 0, 0, 0, NULL, auth_keys },
	{ "log", CFG__SECTION, false, 0, 0, 0, 0, NULL, log_keys },
	{ "relay", CFG__SECTION, false, 0, 0, 0, 0, NULL, relay_keys },
	{ "shutdown", CFG__SECTION, false, 0, 0, 0, 0, NULL, shutdown_keys },
	{ "rdma", CFG__SECTION, false, 0, 0, 0, 0, NULL, rdma_keys },
	{ "debug", CFG__SECTION, false, 0, 0, 0, 0, NULL, debug_keys },
	{ "metrics", CFG__SECTION, false, 0, 0, 0, 0, NULL, metrics_keys },
	{ "intercept", CFG__SECTION, false, 0, 0, 0, 0, NULL, intercept_keys },
	{ 0 },
};
