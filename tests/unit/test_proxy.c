/* SPDX-License-Identifier: MIT */
/*
 * Redirect listeners: fd exhaustion pauses accepting with back-off instead
 * of spinning (after libuv's test-emfile.c), loops are refused, peer
 * prefixes match as they should, and a flow goes to the peer of the
 * longest prefix that holds its destination. accept4() is wrapped to count
 * calls; origdst_get() and lgr_for_dest() to give a flow a destination and
 * see which peers[] entry it was sent to; sock_bind() and setsockopt() to
 * see a tproxy listener's IP_TRANSPARENT and SO_MARK without
 * CAP_NET_ADMIN.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/addr.h"
#include "core/sock.h"
#include "cfg.h"
#include "core/origdst.h"
#include "proxy.h"
#include "smc/lgr.h"

static unsigned long accept_calls;

int __real_accept4(int fd, struct sockaddr *a, socklen_t *l, int flags);
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *l, int flags)
{
	accept_calls++;
	return __real_accept4(fd, a, l, flags);
}

/* A host without IPv6: binding an IPv6 address fails as it does there. */
static bool no_ipv6;

/* IP_TRANSPARENT and SO_MARK need CAP_NET_ADMIN, which the unit tests do
 * not have: the fds bound transparent and the mark set on each fd are
 * recorded, and neither option reaches the kernel. */
enum { FDS_SEEN = 1024 };
static bool bound_transparent[FDS_SEEN];
static uint32_t fd_mark[FDS_SEEN];

int __real_sock_bind(const struct sockaddr *sa, socklen_t len, unsigned flags);
int __wrap_sock_bind(const struct sockaddr *sa, socklen_t len, unsigned flags)
{
	int fd;

	if (no_ipv6 && sa->sa_family == AF_INET6)
		return -EAFNOSUPPORT;
	fd = __real_sock_bind(sa, len, flags & ~SOCK_BIND_TRANSPARENT);
	if (fd >= 0 && fd < FDS_SEEN) {
		bound_transparent[fd] = flags & SOCK_BIND_TRANSPARENT;
		fd_mark[fd] = 0;
	}
	return fd;
}

int __real_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_SOCKET && name == SO_MARK) {
		assert_int_equal(len, sizeof(uint32_t));
		if (fd >= 0 && fd < FDS_SEEN)
			memcpy(&fd_mark[fd], val, sizeof(uint32_t));
		return 0;
	}
	return __real_setsockopt(fd, level, name, val, len);
}

/* When set, the original destination of every accepted connection. */
static const struct sockaddr_storage *fake_dest;

int __real_origdst_get(int fd, struct sockaddr_storage *local, struct sockaddr_storage *dst);
int __wrap_origdst_get(int fd, struct sockaddr_storage *local, struct sockaddr_storage *dst)
{
	socklen_t len = sizeof(*local);

	if (!fake_dest)
		return __real_origdst_get(fd, local, dst);
	if (getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return -errno;
	*dst = *fake_dest;
	return 0;
}

/* The peers[] entry of the last flow offered to a link group, or -1. */
static long routed_pfx = -1;

struct lgr *__wrap_lgr_for_dest(struct smc_net *net, const struct sockaddr *dest,
				size_t pfx_idx, enum fallback_reason *reason)
{
	routed_pfx = (long)pfx_idx;
	*reason = FB_NO_LINK;	/* and over TCP it goes */
	return NULL;
}

static void ev_ignore(struct proxy *p, enum proxy_event ev, const struct flow *f, int err)
{
}

static const struct proxy_ops ops = { .event = ev_ignore };

static struct cfg *cfg_loopback_any_port(void)
{
	struct cfg *cfg;
	struct sockaddr_in *in;

	assert_int_equal(cfg_load_string("{\"listen\": [\"127.0.0.1:7001\"]}", "test", &cfg, NULL), 0);
	in = (struct sockaddr_in *)&cfg->listen[0].ss;
	in->sin_port = 0;	/* the config refuses port 0; tests want any */
	return cfg;
}

static void on_deadline(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void run_for(uv_loop_t *loop, unsigned ms)
{
	uv_timer_t t;

	uv_timer_init(loop, &t);
	uv_timer_start(&t, on_deadline, ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static int closed;
static void on_proxy_closed(struct proxy *p)
{
	closed = 1;
}

/* Closes p, runs its loop until the close completes, and frees cfg. */
static void proxy_teardown(struct proxy *p, uv_loop_t *loop, struct cfg *cfg)
{
	closed = 0;
	proxy_close(p, on_proxy_closed);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_true(closed);
	assert_int_equal(uv_loop_close(loop), 0);
	cfg_free(cfg);
}

static void test_emfile_pauses_without_spinning(void **state)
{
	enum { CLIENTS = 8 };
	struct cfg *cfg = cfg_loopback_any_port();
	struct rlimit old, low;
	struct proxy p;
	uv_loop_t loop;
	char err[256];
	int c[CLIENTS], i, maxfd;

	uv_loop_init(&loop);
	assert_int_equal(proxy_init(&p, &loop, cfg, NULL, &ops, err, sizeof(err)), 0);
	proxy_start(&p);
	/* Connections complete in the kernel's backlog before we accept. */
	for (i = 0; i < CLIENTS; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(c[i], (struct sockaddr *)&p.listeners[0].addr,
					 sizeof(struct sockaddr_in)), 0);
	}
	maxfd = dup(0);
	close(maxfd);
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = maxfd;	/* no fd left for accept4 */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);

	accept_calls = 0;
	run_for(&loop, 600);
	assert_true(p.stats.accept_pauses >= 3);
	/* Back-off 10, 20, 40, ... ms: a handful of tries, not a spin. */
	assert_true(accept_calls < 30);
	assert_true(p.paused);
	assert_int_equal(p.stats.flows_accepted, 0);

	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	run_for(&loop, 1200);
	assert_int_equal(p.stats.flows_accepted, CLIENTS);
	/* Connected straight to the listener: refused as not redirected. */
	assert_int_equal(p.stats.loops_refused, CLIENTS);
	assert_false(p.paused);

	for (i = 0; i < CLIENTS; i++)
		close(c[i]);
	proxy_teardown(&p, &loop, cfg);
}

/*
 * (Regression: the skipped listen addresses were a 64-bit mask, so on a
 * host without IPv6 an IPv6 address past the 64th of the 256 the config
 * allows failed the start instead of being skipped.) 66 IPv4 addresses,
 * then 4 IPv6 ones that cannot be bound: the IPv6 ones are skipped, each
 * said so, and the others listen.
 */
static void test_listen_skips_past_64(void **state)
{
	enum { N_V4 = 66, N_V6 = 4, N = N_V4 + N_V6 };
	char json[N * 24 + 32], err[256];
	struct cfg *cfg;
	struct proxy p;
	uv_loop_t loop;
	size_t i, off;

	(void)state;
	off = (size_t)snprintf(json, sizeof(json), "{\"listen\": [");
	for (i = 0; i < N; i++)
		off += (size_t)snprintf(json + off, sizeof(json) - off,
					i < N_V4 ? "%s\"127.0.0.1:%zu\"" : "%s\"[::1]:%zu\"",
					i ? ", " : "", 7100 + i);
	snprintf(json + off, sizeof(json) - off, "]}");
	assert_int_equal(cfg_load_string(json, "test", &cfg, NULL), 0);
	assert_int_equal(cfg->n_listen, N);
	for (i = 0; i < N_V4; i++)	/* any port: the config refuses 0 */
		((struct sockaddr_in *)&cfg->listen[i].ss)->sin_port = 0;

	no_ipv6 = true;
	uv_loop_init(&loop);
	assert_int_equal(proxy_init(&p, &loop, cfg, NULL, &ops, err, sizeof(err)), 0);
	no_ipv6 = false;
	assert_int_equal(p.n_listeners, N_V4);
	for (i = 0; i < N; i++)
		assert_int_equal(proxy_listen_skipped(&p, i), i >= N_V4);
	assert_false(proxy_listen_skipped(&p, CFG_LISTEN_MAX));

	proxy_teardown(&p, &loop, cfg);
}

/*
 * A tproxy listener carries the daemon's mark: with tcp_fwmark_accept=1 a
 * listener without one gives its connections their SYN's mark, whose
 * TPROXY bit routes every reply to this host instead of to the pod. A
 * config whose mark is 0 (which the config file refuses, so only a
 * caller's own) is refused rather than given unmarked tproxy listeners.
 * (Before, mark 0 left them unmarked without a word.)
 */
static void test_tproxy_listener_marked(void **state)
{
	struct cfg *cfg;
	struct proxy p;
	uv_loop_t loop;
	char err[256];
	int fd;

	(void)state;
	assert_int_equal(cfg_load_string("{\"listen\": [\"127.0.0.1:7001\"], "
					 "\"tproxy\": [\"127.0.0.1:7003\"], \"mark\": 67}",
					 "test", &cfg, NULL), 0);
	((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port = 0;
	((struct sockaddr_in *)&cfg->tproxy[0].ss)->sin_port = 0;
	uv_loop_init(&loop);
	assert_int_equal(proxy_init(&p, &loop, cfg, NULL, &ops, err, sizeof(err)), 0);
	assert_int_equal(p.n_listeners, 2);
	fd = p.listeners[0].fd;
	assert_true(fd >= 0 && fd < FDS_SEEN);
	assert_false(p.listeners[0].transparent);
	assert_false(bound_transparent[fd]);
	fd = p.listeners[1].fd;
	assert_true(fd >= 0 && fd < FDS_SEEN);
	assert_true(p.listeners[1].transparent);
	assert_true(bound_transparent[fd]);
	assert_int_equal(fd_mark[fd], 67);
	proxy_teardown(&p, &loop, cfg);

	assert_int_equal(cfg_load_string("{\"listen\": [\"127.0.0.1:7001\"], "
					 "\"tproxy\": [\"127.0.0.1:7003\"]}", "test", &cfg, NULL), 0);
	((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port = 0;
	((struct sockaddr_in *)&cfg->tproxy[0].ss)->sin_port = 0;
	cfg->mark = 0;
	uv_loop_init(&loop);
	err[0] = '\0';
	assert_int_equal(proxy_init(&p, &loop, cfg, NULL, &ops, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tproxy listen on 127.0.0.1:0: a tproxy listener needs \"mark\""));
	assert_int_equal(uv_loop_close(&loop), 0);
	cfg_free(cfg);
}

static struct sockaddr_storage sa(const char *ip, unsigned port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (void *)&ss;
	struct sockaddr_in6 *in6 = (void *)&ss;

	if (strchr(ip, ':')) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &in6->sin6_addr);
	} else {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		inet_pton(AF_INET, ip, &in->sin_addr);
	}
	return ss;
}

static void test_loop_check(void **state)
{
	struct listener l[3];
	struct proxy p = { .listeners = l, .n_listeners = 3 };
	struct sockaddr_storage d;

	l[0].addr = sa("127.0.0.1", 7001);
	l[1].addr = sa("::", 7001);
	l[2].addr = sa("0.0.0.0", 7002);

	d = sa("127.0.0.1", 7001);
	assert_int_equal(proxy_check_loop(&p, (void *)&d), -ELOOP);
	d = sa("10.0.0.2", 7001);	/* another address, specific listener */
	assert_int_equal(proxy_check_loop(&p, (void *)&d), 0);
	d = sa("127.0.0.1", 6379);
	assert_int_equal(proxy_check_loop(&p, (void *)&d), 0);
	d = sa("::1", 7001);		/* the IPv6 wildcard answers on ::1 */
	assert_int_equal(proxy_check_loop(&p, (void *)&d), -ELOOP);
	d = sa("2001:db8::2", 7001);	/* but not for a remote host */
	assert_int_equal(proxy_check_loop(&p, (void *)&d), 0);
	d = sa("127.0.0.3", 7002);	/* all of 127/8 is ours */
	assert_int_equal(proxy_check_loop(&p, (void *)&d), -ELOOP);
	d = sa("192.0.2.7", 7002);	/* regression: remote, same port */
	assert_int_equal(proxy_check_loop(&p, (void *)&d), 0);
}

static void test_addr_in_prefix(void **state)
{
	struct cfg_prefix pfx;
	struct sockaddr_storage a;

	assert_int_equal(cfg_parse_prefix("10.0.0.0/24", &pfx), 0);
	a = sa("10.0.0.77", 1);
	assert_true(addr_in_prefix((void *)&a, &pfx));
	a = sa("10.0.1.1", 1);
	assert_false(addr_in_prefix((void *)&a, &pfx));
	a = sa("::ffff:10.0.0.1", 1);	/* another family never matches */
	assert_false(addr_in_prefix((void *)&a, &pfx));

	assert_int_equal(cfg_parse_prefix("172.16.0.0/12", &pfx), 0);
	a = sa("172.31.255.255", 1);
	assert_true(addr_in_prefix((void *)&a, &pfx));
	a = sa("172.32.0.0", 1);
	assert_false(addr_in_prefix((void *)&a, &pfx));

	assert_int_equal(cfg_parse_prefix("0.0.0.0/0", &pfx), 0);
	a = sa("192.0.2.1", 1);
	assert_true(addr_in_prefix((void *)&a, &pfx));

	assert_int_equal(cfg_parse_prefix("fd00:1::/33", &pfx), 0);
	a = sa("fd00:1:7fff::1", 1);
	assert_true(addr_in_prefix((void *)&a, &pfx));
	a = sa("fd00:1:8000::1", 1);
	assert_false(addr_in_prefix((void *)&a, &pfx));
}

/*
 * (Regression: a flow went to the first peers[] entry whose prefix held
 * its destination, while proposals are judged by the longest one, as
 * smcproxyd.json(5) says of both.) Whatever the order of the entries, a
 * flow to 127.0.1.9 goes to the /24's daemon, not the /8's, and one to
 * 127.0.2.9 to the /8's.
 */
static void test_route_longest_prefix(void **state)
{
	static const char *const peers[] = {
		"[{\"prefix\": \"127.0.0.0/8\", \"via\": \"192.0.2.8\"},"
		" {\"prefix\": \"127.0.1.0/24\", \"via\": \"192.0.2.24\"}]",
		"[{\"prefix\": \"127.0.1.0/24\", \"via\": \"192.0.2.24\"},"
		" {\"prefix\": \"127.0.0.0/8\", \"via\": \"192.0.2.8\"}]",
	};
	static const struct { const char *dest; const char *via; } cases[] = {
		{ "127.0.1.9", "192.0.2.24" },
		{ "127.0.2.9", "192.0.2.8" },
	};
	char json[512], err[256], via[INET6_ADDRSTRLEN];
	size_t i, j;

	for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		for (j = 0; j < sizeof(cases) / sizeof(cases[0]); j++) {
			struct sockaddr_storage d = sa(cases[j].dest, 9);	/* discard: refused */
			const struct cfg_peer *peer;
			struct cfg *cfg;
			struct proxy p;
			uv_loop_t loop;
			int c;

			snprintf(json, sizeof(json),
				 "{\"listen\": [\"127.0.0.1:7001\"], \"transport\": \"shm\", "
				 "\"control\": \"\", \"peers\": %s}", peers[i]);
			assert_int_equal(cfg_load_string(json, "test", &cfg, NULL), 0);
			((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port = 0;
			uv_loop_init(&loop);
			assert_int_equal(proxy_init(&p, &loop, cfg, NULL, &ops, err, sizeof(err)), 0);
			proxy_start(&p);

			fake_dest = &d;
			routed_pfx = -1;
			c = socket(AF_INET, SOCK_STREAM, 0);
			assert_int_equal(connect(c, (struct sockaddr *)&p.listeners[0].addr,
						 sizeof(struct sockaddr_in)), 0);
			while (p.stats.flows_accepted == 0)
				uv_run(&loop, UV_RUN_ONCE);
			fake_dest = NULL;
			assert_true(routed_pfx >= 0 && (size_t)routed_pfx < cfg->n_peers);
			peer = &cfg->peers[routed_pfx];
			assert_int_equal(peer->via_family, AF_INET);
			inet_ntop(AF_INET, peer->via_addr, via, sizeof(via));
			if (strcmp(via, cases[j].via) != 0)
				fail_msg("peers %zu: a flow to %s went to %s, not %s", i,
					 cases[j].dest, via, cases[j].via);

			close(c);
			proxy_teardown(&p, &loop, cfg);
		}
	}
}

static void test_addr_format(void **state)
{
	char buf[ADDR_STRLEN];
	struct sockaddr_storage a = sa("10.1.2.3", 6379), b = sa("fd00::1", 443);

	assert_string_equal(addr_format((void *)&a, buf, sizeof(buf)), "10.1.2.3:6379");
	assert_string_equal(addr_format((void *)&b, buf, sizeof(buf)), "[fd00::1]:443");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emfile_pauses_without_spinning),
		cmocka_unit_test(test_listen_skips_past_64),
		cmocka_unit_test(test_tproxy_listener_marked),
		cmocka_unit_test(test_loop_check),
		cmocka_unit_test(test_addr_in_prefix),
		cmocka_unit_test(test_addr_format),
		cmocka_unit_test(test_route_longest_prefix),
	};

	return cmocka_run_group_tests_name("proxy", tests, NULL, NULL);
}
