/* SPDX-License-Identifier: MIT */
/*
 * config/: loading, every error class with its exact line, column and key
 * path, defaults, the embedded default, and the reload diff. The unit
 * parsers have their own binary, test_cfg_units.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "cfg.h"
#include "cfg-int.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)

/*
 * Allocation failure injection. test_cfg.wrap wraps malloc, calloc,
 * realloc and strdup for everything linked into this binary: our code, not
 * the shared libraries. jansson is left alone on purpose: it reports some
 * of its own allocation failures as syntax errors ("string or '}'
 * expected"), which no caller could tell apart. With fail_countdown at
 * n >= 0, the n-th next allocation fails, and only that one.
 */
static long fail_countdown = -1;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static bool inject_failure(void)
{
	if (fail_countdown < 0)
		return false;
	return fail_countdown-- == 0;
}

void *__wrap_malloc(size_t n)
{
	return inject_failure() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return inject_failure() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return inject_failure() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return inject_failure() ? NULL : __real_strdup(s);
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Loads json as "t.json", which must fail with exactly the error text want. */
static void expect_errors(const char *json, const char *want)
{
	struct cfg_errors e;
	struct cfg *c = (struct cfg *)&e;

	assert_int_equal(cfg_load_string(json, "t.json", &c, &e), -EINVAL);
	assert_null(c);
	assert_non_null(e.text);
	assert_string_equal(e.text, want);
	assert_int_equal(e.len, strlen(want));
	assert_int_equal(e.count, count_lines(want));
	cfg_errors_free(&e);
	assert_null(e.text);
}

/* Loads json as "t.json"; must fail with one error line starting with
 * prefix (file:line:col: path: and the start of the message). */
static void expect_error_prefix(const char *json, const char *prefix)
{
	struct cfg_errors e;
	struct cfg *c;

	assert_int_equal(cfg_load_string(json, "t.json", &c, &e), -EINVAL);
	assert_null(c);
	assert_non_null(e.text);
	if (strncmp(e.text, prefix, strlen(prefix)) != 0)
		fail_msg("for %s\n got: %s want: %s...", json, e.text, prefix);
	assert_int_equal(e.count, 1);
	assert_int_equal(count_lines(e.text), 1);
	cfg_errors_free(&e);
}

static struct cfg *load_ok(const char *json)
{
	struct cfg_errors e;
	struct cfg *c = NULL;
	int rc;

	rc = cfg_load_string(json, "t.json", &c, &e);
	if (rc != 0)
		fail_msg("rc %d for %s: %s", rc, json, e.text ? e.text : "(no text)");
	assert_non_null(c);
	assert_null(e.text);
	assert_int_equal(e.count, 0);
	return c;
}

static uint16_t port_of(const struct cfg_addr *a)
{
	if (a->ss.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
}

static void assert_addr(const struct cfg_addr *a, int family, const char *ip, uint16_t port)
{
	char buf[INET6_ADDRSTRLEN];
	const void *p;

	assert_int_equal(a->ss.ss_family, family);
	p = family == AF_INET ? (const void *)&((const struct sockaddr_in *)&a->ss)->sin_addr :
				(const void *)&((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
	assert_non_null(inet_ntop(family, p, buf, sizeof(buf)));
	assert_string_equal(buf, ip);
	assert_int_equal(port_of(a), port);
}

/* Every field from transport on (all but source, the addresses and the
 * peers), compared directly; the tests below spell out what they expect
 * there as a struct cfg. */
static void assert_settings_equal(const struct cfg *a, const struct cfg *b)
{
	assert_int_equal(a->transport, b->transport);
	assert_int_equal(a->mark, b->mark);
	assert_int_equal(a->workers, b->workers);
	assert_int_equal(a->links.per_peer, b->links.per_peer);
	assert_int_equal(a->links.max_flows_per_link, b->links.max_flows_per_link);
	assert_int_equal(a->buffers.ring, b->buffers.ring);
	assert_int_equal(a->buffers.ring_initial, b->buffers.ring_initial);
	assert_int_equal(a->buffers.pool, b->buffers.pool);
	assert_int_equal(a->autocork.enabled, b->autocork.enabled);
	assert_int_equal(a->autocork.max_bytes, b->autocork.max_bytes);
	assert_int_equal(a->cq.pool, b->cq.pool);
	assert_int_equal(a->cq.poll_budget, b->cq.poll_budget);
	assert_string_equal(a->shm.dir, b->shm.dir);
	assert_string_equal(a->stats.socket, b->stats.socket);
	assert_int_equal(a->stats.mode, b->stats.mode);
	assert_int_equal(a->fallback.connect_timeout_ms, b->fallback.connect_timeout_ms);
	assert_int_equal(a->fallback.negative_ttl_ms, b->fallback.negative_ttl_ms);
	assert_string_equal(a->auth.psk_file, b->auth.psk_file);
	assert_int_equal(a->log.level, b->log.level);
	assert_int_equal(a->relay.buffer, b->relay.buffer);
	assert_int_equal(a->relay.keepalive_ms, b->relay.keepalive_ms);
	assert_int_equal(a->relay.idle_timeout_ms, b->relay.idle_timeout_ms);
	assert_int_equal(a->shutdown.drain_timeout_ms, b->shutdown.drain_timeout_ms);
	assert_int_equal(a->rdma.inline_data, b->rdma.inline_data);
	assert_int_equal(a->rdma.sq_depth, b->rdma.sq_depth);
	assert_int_equal(a->rdma.rq_depth, b->rdma.rq_depth);
	assert_int_equal(a->debug.fail_link, b->debug.fail_link);
	assert_int_equal(a->metrics.listen.len, b->metrics.listen.len);
	if (a->metrics.listen.len)
		assert_true(cfg__addr_equal(&a->metrics.listen, &b->metrics.listen));
	assert_int_equal(a->metrics.max_clients, b->metrics.max_clients);
	assert_int_equal(a->metrics.timeout_ms, b->metrics.timeout_ms);
}

/* Every field, compared directly (not through cfg_diff, which is tested
 * against this). */
static void assert_cfg_equal(const struct cfg *a, const struct cfg *b)
{
	size_t i;

	assert_int_equal(a->n_listen, b->n_listen);
	for (i = 0; i < a->n_listen; i++)
		assert_true(cfg__addr_equal(&a->listen[i], &b->listen[i]));
	assert_int_equal(a->has_control, b->has_control);
	if (a->has_control)
		assert_true(cfg__addr_equal(&a->control, &b->control));
	assert_int_equal(a->n_peers, b->n_peers);
	for (i = 0; i < a->n_peers; i++) {
		assert_true(cfg__prefix_equal(&a->peers[i].prefix, &b->peers[i].prefix));
		assert_int_equal(a->peers[i].control_port, b->peers[i].control_port);
	}
	assert_settings_equal(a, b);
}

/* ---- defaults ---- */

static void test_defaults_values(void **state)
{
	static const struct cfg want = {
		.transport = CFG_TRANSPORT_AUTO,
		.mark = 67,
		.workers = 0,
		.links = { .per_peer = 2, .max_flows_per_link = 255 },
		.buffers = { .ring = 1 * MiB, .ring_initial = 16 * KiB, .pool = 0 },
		.autocork = { .enabled = true, .max_bytes = 64 * KiB },
		.cq = { .pool = 0, .poll_budget = 16 },
		.shm = { .dir = "/run/smcproxy" },
		.stats = { .socket = "/run/smcproxy/smcproxyd.sock", .mode = 0660 },
		.fallback = { .connect_timeout_ms = 2000, .negative_ttl_ms = 30000 },
		.auth = { .psk_file = "" },
		.log = { .level = LOG_INFO },
		.relay = { .buffer = MiB, .keepalive_ms = 60000, .idle_timeout_ms = 0 },
		.shutdown = { .drain_timeout_ms = 10000 },
		.rdma = { .inline_data = true, .sq_depth = 256, .rq_depth = 256 },
		.debug = { .fail_link = false },
		.metrics = { .max_clients = 16, .timeout_ms = 10000 },
	};
	struct cfg *c = load_ok("{}");

	assert_string_equal(c->source, "t.json");
	assert_int_equal(c->n_listen, 2);
	assert_addr(&c->listen[0], AF_INET, "127.0.0.1", 7001);
	assert_addr(&c->listen[1], AF_INET6, "::1", 7001);
	assert_true(c->has_control);
	assert_addr(&c->control, AF_INET, "0.0.0.0", 7002);
	assert_int_equal(c->n_peers, 0);
	assert_null(c->peers);
	assert_settings_equal(c, &want);
	cfg_free(c);
}

/*
 * (Regression: the default mark was 0x534d43, which has kube-proxy's
 * masquerade bit 0x4000: on a Kubernetes node, KUBE-POSTROUTING
 * masqueraded every connection the daemon made.) The default marks stay
 * clear of the bits kube-proxy and the common CNIs own, and of Istio's
 * values: 1337 for its sidecars, 0x111, 0x222 and 0x539 under the mask
 * 0xfff for ambient mode.
 */
static void test_default_marks(void **state)
{
	static const uint32_t istio_ambient[] = { 0x111, 0x222, 0x539 };
	struct cfg *c = load_ok("{}");
	const uint32_t marks[2] = { c->mark, c->client_mark };
	size_t i, j;

	_Static_assert(((CFG_MARK_KUBE_MASQ | CFG_MARK_KUBE_DROP) & ~CFG_MARK_FOREIGN) == 0,
		       "kube-proxy's bits are foreign bits");
	assert_int_equal(c->mark, 0x43);
	assert_int_equal(c->client_mark, 0x53);
	for (i = 0; i < 2; i++) {
		assert_int_equal(marks[i] & (CFG_MARK_KUBE_MASQ | CFG_MARK_KUBE_DROP), 0);
		assert_int_equal(marks[i] & CFG_MARK_FOREIGN, 0);
		assert_int_not_equal(marks[i], 1337);
		for (j = 0; j < sizeof(istio_ambient) / sizeof(istio_ambient[0]); j++)
			assert_int_not_equal(marks[i] & 0xfff, istio_ambient[j]);
	}
	assert_int_not_equal(c->mark, c->client_mark);
	cfg_free(c);
}

static void test_defaults_equal_embedded(void **state)
{
	struct cfg *empty = load_ok("{}"), *def = NULL;
	struct cfg_errors e;

	assert_int_equal(cfg_load_default(&def, &e), 0);
	assert_null(e.text);
	assert_string_equal(def->source, "<default>");
	assert_cfg_equal(empty, def);
	cfg_free(empty);
	cfg_free(def);
}

/* The embedded default spells out every key of the schema, so that
 * --print-default-config documents all of them. */
static void test_default_json_complete(void **state)
{
	const struct cfg__key *k, *s;
	json_t *root, *sec;

	root = json_loads(cfg_default_json(), JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(root);
	assert_true(json_is_object(root));
	for (k = cfg__schema; k->name; k++) {
		if (!json_object_get(root, k->name))
			fail_msg("default JSON lacks \"%s\"", k->name);
		if (k->kind != CFG__SECTION)
			continue;
		sec = json_object_get(root, k->name);
		for (s = k->sub; s->name; s++) {
			if (!json_object_get(sec, s->name))
				fail_msg("default JSON lacks \"%s.%s\"", k->name, s->name);
		}
	}
	json_decref(root);
	/* formatted for people: one key per line, trailing newline */
	assert_non_null(strstr(cfg_default_json(), "{\n  \"listen\": "));
	assert_int_equal(cfg_default_json()[strlen(cfg_default_json()) - 1], '\n');
}

static void test_default_json_round_trip(void **state)
{
	struct cfg *def = NULL, *again = NULL;
	struct cfg_diff d;
	json_t *root;
	char *text;

	assert_int_equal(cfg_load_default(&def, NULL), 0);
	root = json_loads(cfg_default_json(), 0, NULL);
	assert_non_null(root);
	text = json_dumps(root, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
	assert_non_null(text);
	assert_int_equal(cfg_load_string(text, "dumped", &again, NULL), 0);
	assert_cfg_equal(def, again);
	cfg_diff(def, again, &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "");
	free(text);
	json_decref(root);
	cfg_free(def);
	cfg_free(again);
}

/* ---- a full, valid config ---- */

static const char full_json[] =
	"{\n"
	"  \"listen\": [\"10.1.2.3:7001\", \"[fd00::1]:7003\", \"0.0.0.0:7004\"],\n"
	"  \"control\": \"[::]:7100\",\n"
	"  \"peers\": [{\"prefix\": \"10.0.0.0/24\", \"control_port\": 7102},\n"
	"            {\"prefix\": \"fd00::/64\"}],\n"
	"  \"transport\": \"rdma\",\n"
	"  \"mark\": 4294967295,\n"
	"  \"workers\": 256,\n"
	"  \"links\": {\"per_peer\": 16, \"max_flows_per_link\": 1},\n"
	"  \"buffers\": {\"ring\": 65536, \"ring_initial\": \"32KiB\", \"pool\": \"1GiB\"},\n"
	"  \"autocork\": {\"enabled\": false, \"max_bytes\": \"16MiB\"},\n"
	"  \"cq\": {\"pool\": 16, \"poll_budget\": 1024},\n"
	"  \"shm\": {\"dir\": \"/dev/shm/smc\"},\n"
	"  \"stats\": {\"socket\": \"/tmp/s.sock\", \"mode\": 384},\n"
	"  \"fallback\": {\"connect_timeout\": 1500, \"negative_ttl\": \"1m30s\"},\n"
	"  \"auth\": {\"psk_file\": \"/etc/smcproxy/psk\"},\n"
	"  \"log\": {\"level\": \"debug\"},\n"
	"  \"relay\": {\"buffer\": \"4KiB\", \"keepalive\": \"0\", \"idle_timeout\": \"1h 30m\"},\n"
	"  \"shutdown\": {\"drain_timeout\": 0},\n"
	"  \"rdma\": {\"inline\": false, \"sq_depth\": 4096, \"rq_depth\": 16},\n"
	"  \"debug\": {\"fail_link\": true},\n"
	"  \"metrics\": {\"listen\": \"[::1]:9464\", \"max_clients\": 1024, \"timeout\": \"1s\"}\n"
	"}\n";

static void test_full_config(void **state)
{
	struct cfg want = {
		.transport = CFG_TRANSPORT_RDMA,
		.mark = 0xffffffffu,
		.workers = 256,
		.links = { .per_peer = 16, .max_flows_per_link = 1 },
		.buffers = { .ring = 64 * KiB, .ring_initial = 32 * KiB, .pool = 1024 * MiB },
		.autocork = { .enabled = false, .max_bytes = 16 * MiB },
		.cq = { .pool = 16, .poll_budget = 1024 },
		.shm = { .dir = "/dev/shm/smc" },
		.stats = { .socket = "/tmp/s.sock", .mode = 0600 },
		.fallback = { .connect_timeout_ms = 1500, .negative_ttl_ms = 90000 },
		.auth = { .psk_file = "/etc/smcproxy/psk" },
		.log = { .level = LOG_DEBUG },
		.relay = { .buffer = 4 * KiB, .keepalive_ms = 0, .idle_timeout_ms = 5400000 },
		.shutdown = { .drain_timeout_ms = 0 },
		.rdma = { .inline_data = false, .sq_depth = 4096, .rq_depth = 16 },
		.debug = { .fail_link = true },
		.metrics = { .max_clients = 1024, .timeout_ms = 1000 },
	};
	struct cfg *c = load_ok(full_json);
	uint8_t v6[16];

	assert_int_equal(c->n_listen, 3);
	assert_addr(&c->listen[0], AF_INET, "10.1.2.3", 7001);
	assert_addr(&c->listen[1], AF_INET6, "fd00::1", 7003);
	assert_addr(&c->listen[2], AF_INET, "0.0.0.0", 7004);
	assert_true(c->has_control);
	assert_addr(&c->control, AF_INET6, "::", 7100);
	assert_int_equal(c->n_peers, 2);
	assert_int_equal(c->peers[0].prefix.family, AF_INET);
	assert_memory_equal(c->peers[0].prefix.addr, "\x0a\x00\x00\x00", 4);
	assert_int_equal(c->peers[0].prefix.len, 24);
	assert_int_equal(c->peers[0].control_port, 7102);
	assert_int_equal(c->peers[1].prefix.family, AF_INET6);
	inet_pton(AF_INET6, "fd00::", v6);
	assert_memory_equal(c->peers[1].prefix.addr, v6, 16);
	assert_int_equal(c->peers[1].prefix.len, 64);
	assert_int_equal(c->peers[1].control_port, 7002);	/* default */
	assert_addr(&c->metrics.listen, AF_INET6, "::1", 9464);
	memcpy(&want.metrics.listen, &c->metrics.listen,
	       sizeof(want.metrics.listen));
	assert_settings_equal(c, &want);
	cfg_free(c);
}

static void test_small_values(void **state)
{
	struct cfg *c;

	c = load_ok("{\"control\": \"\", \"transport\": \"shm\", \"stats\": {\"mode\": \"0600\"},"
		    " \"log\": {\"level\": \"error\"}}");
	assert_false(c->has_control);
	assert_int_equal(c->transport, CFG_TRANSPORT_SHM);
	assert_int_equal(c->stats.mode, 0600);
	assert_int_equal(c->log.level, LOG_ERR);
	cfg_free(c);

	c = load_ok("{\"transport\": \"tcp\", \"log\": {\"level\": \"warning\"},"
		    " \"stats\": {\"mode\": 432}, \"buffers\": {\"ring\": \"64MiB\", \"pool\": \"64MiB\"}}");
	assert_int_equal(c->transport, CFG_TRANSPORT_TCP);
	assert_int_equal(c->log.level, LOG_WARNING);
	assert_int_equal(c->stats.mode, 0660);
	assert_int_equal(c->buffers.ring, 64 * MiB);
	assert_int_equal(c->buffers.pool, 64 * MiB);	/* equal is enough */
	cfg_free(c);

	c = load_ok("{\"log\": {\"level\": \"notice\"}, \"relay\": {\"keepalive\": \"1s\"}}");
	assert_int_equal(c->log.level, LOG_NOTICE);
	assert_int_equal(c->relay.keepalive_ms, 1000);
	cfg_free(c);
}

/* ---- error classes ---- */

static void test_parse_error(void **state)
{
	expect_errors("{\n  \"mark\": ,\n}",
		      "t.json:2:11: (parse): unexpected token near ','\n");
	expect_errors("{\"mark\": 1", "t.json:1:10: (parse): '}' expected near end of file\n");
	expect_errors("{\"mark\": 1} x", "t.json:1:13: (parse): end of file expected near 'x'\n");
	expect_error_prefix("", "t.json:1:1: (parse): ");
	expect_error_prefix("{\"a\": \"\\u0000\"}", "t.json:1:14: (parse): \\u0000 is not allowed");
	expect_error_prefix("{\"mark\": 99999999999999999999}", "t.json:1:29: (parse): too big integer");
}

static void test_duplicate_key(void **state)
{
	expect_errors("{\"mark\": 1,\n \"mark\": 2}",
		      "t.json:2:7: (parse): duplicate object key near '\"mark\"'\n");
	expect_error_prefix("{\"links\": {\"per_peer\": 1, \"per_peer\": 1}}",
			    "t.json:1:36: (parse): duplicate object key");
}

static void test_not_an_object(void **state)
{
	expect_errors("[]", "t.json:1:1: (root): the configuration must be a JSON object "
		      "({...}), not an array\n");
	expect_errors("  42", "t.json:1:3: (root): the configuration must be a JSON object "
		      "({...}), not an integer\n");
	expect_errors("\n\"x\"", "t.json:2:1: (root): the configuration must be a JSON object "
		      "({...}), not a string\n");
	expect_error_prefix("null", "t.json:1:1: (root): the configuration must be a JSON object "
			    "({...}), not null");
}

static void test_unknown_keys(void **state)
{
	expect_errors("{\"listne\": []}",
		      "t.json:1:2: listne: unknown key (did you mean \"listen\"?)\n");
	expect_errors("{\"Mark\": 1}", "t.json:1:2: Mark: unknown key (did you mean \"mark\"?)\n");
	expect_errors("{\"lg\": 1}", "t.json:1:2: lg: unknown key (did you mean \"log\"?)\n");
	expect_errors("{\"buffers\": {\"rign\": 1}}",
		      "t.json:1:14: buffers.rign: unknown key (did you mean \"ring\"?)\n");
	expect_errors("{\"fallback\": {\"conect_timeotu\": 1}}",
		      "t.json:1:15: fallback.conect_timeotu: unknown key (did you mean "
		      "\"connect_timeout\"?)\n");
	/* an empty key is named "" (found by fuzzing: it once read past the path) */
	expect_errors("{\"\": 1, \"links\": {\"\": 2}}",
		      "t.json:1:2: \"\": unknown key (known here: listen, tproxy, control, peers, "
		      "serve, transport, mark, client_address, client_mark, workers, user, links, buffers, "
		      "autocork, cq, busy_poll, shm, stats, fallback, "
		      "auth, log, relay, shutdown, rdma, debug, metrics, intercept)\n"
		      "t.json:1:19: links.\"\": unknown key (known here: per_peer, "
		      "max_flows_per_link, dead_after)\n");
	/* two edits are too many for a short name */
	expect_error_prefix("{\"zz\": 1}", "t.json:1:2: zz: unknown key (known here: listen, "
			    "tproxy, control, peers, serve, transport, mark, client_address, client_mark, workers, user, links, ");
	expect_errors("{\n  \"links\": {\"per_peer\": 2, \"flows\": 3}\n}",
		      "t.json:2:28: links.flows: unknown key (known here: per_peer, "
		      "max_flows_per_link, dead_after)\n");
	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"port\": 1}]}",
		      "t.json:1:37: peers[0].port: unknown key (known here: prefix, control_port, allow, "
		      "via)\n");
	expect_error_prefix("{\"zzzzzzzzzz\": 1}",
			    "t.json:1:2: zzzzzzzzzz: unknown key (known here: listen, tproxy, control,");
}

/* peers[].via names the daemon that serves a prefix (a node's, for its
 * pods); "serve" lists the prefixes a daemon serves besides its own
 * addresses. */
static void test_via_and_serve(void **state)
{
	struct cfg *c, *d;
	struct cfg_diff diff;

	c = load_ok("{\"peers\": [{\"prefix\": \"10.244.2.0/24\", \"via\": \"192.168.1.2\"},"
		    " {\"prefix\": \"fd00:244:2::/64\", \"via\": \"fd00::2\"},"
		    " {\"prefix\": \"192.168.1.0/24\", \"allow\": [\"80\"]}],"
		    " \"serve\": [\"10.244.1.0/24\", \"fd00:244:1::/64\"]}");
	assert_int_equal(c->peers[0].via_family, AF_INET);
	assert_memory_equal(c->peers[0].via_addr, "\xc0\xa8\x01\x02", 4);
	assert_int_equal(c->peers[1].via_family, AF_INET6);
	assert_memory_equal(c->peers[1].via_addr,
			    "\xfd\x00\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	assert_int_equal(c->peers[2].via_family, 0);
	assert_int_equal(c->n_serve, 2);
	assert_int_equal(c->serve[0].family, AF_INET);
	assert_int_equal(c->serve[0].len, 24);
	assert_int_equal(c->serve[1].family, AF_INET6);

	/* Both apply at a reload, and a changed via is a change. */
	d = load_ok("{\"peers\": [{\"prefix\": \"10.244.2.0/24\", \"via\": \"192.168.1.3\"},"
		    " {\"prefix\": \"fd00:244:2::/64\", \"via\": \"fd00::2\"},"
		    " {\"prefix\": \"192.168.1.0/24\", \"allow\": [\"80\"]}],"
		    " \"serve\": [\"10.244.1.0/24\"]}");
	cfg_diff(c, d, &diff);
	assert_string_equal(diff.live, "peers,serve");
	assert_string_equal(diff.restart, "");
	cfg_free(d);
	cfg_free(c);

	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": \"10.0.0.1:7002\"}]}",
		      "t.json:1:44: peers[0].via: invalid address \"10.0.0.1:7002\": not a numeric "
		      "IPv4 or IPv6 address (no brackets, no port here)\n");
	expect_error_prefix("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": \"10.0.0.0/8\"}]}",
			    "t.json:1:44: peers[0].via: invalid address \"10.0.0.0/8\": an address, "
			    "not a prefix");
	expect_error_prefix("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": \"0.0.0.0\"}]}",
			    "t.json:1:44: peers[0].via: invalid address \"0.0.0.0\": the unspecified");
	expect_error_prefix("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": \"ff02::1\"}]}",
			    "t.json:1:44: peers[0].via: invalid address \"ff02::1\": the unspecified");
	expect_error_prefix("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": \"[fd00::1]\"}]}",
			    "t.json:1:44: peers[0].via: invalid address \"[fd00::1]\": not a numeric");
	expect_error_prefix("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"via\": 5}]}",
			    "t.json:1:44: peers[0].via: expected an address like");
	expect_errors("{\"serve\": \"10.0.0.0/8\"}",
		      "t.json:1:11: serve: expected an array of prefixes like [\"10.244.1.0/24\"], "
		      "got a string\n");
	expect_errors("{\"serve\": [\"10.0.0.1/8\"]}",
		      "t.json:1:12: serve[0]: host bits are set in \"10.0.0.1/8\" (did you mean "
		      "\"10.0.0.0/8\"?)\n");
	expect_errors("{\"serve\": [\"10.0.0.0/8\", \"10.0.0.0/8\"]}",
		      "t.json:1:26: serve[1]: duplicate prefix \"10.0.0.0/8\"\n");
	expect_error_prefix("{\"serve\": [\"10.0.0.0/33\"]}",
			    "t.json:1:12: serve[0]: invalid prefix \"10.0.0.0/33\"");
	expect_error_prefix("{\"serve\": [7]}", "t.json:1:12: serve[0]: expected a string");
}

/* "tproxy": transparent listeners, none by default, a restart to change. */
static void test_tproxy(void **state)
{
	struct cfg *c, *d;
	struct cfg_diff diff;

	c = load_ok("{}");
	assert_int_equal(c->n_tproxy, 0);
	assert_null(c->tproxy);
	d = load_ok("{\"tproxy\": [\"0.0.0.0:7003\", \"[::]:7003\"]}");
	assert_int_equal(d->n_tproxy, 2);
	assert_addr(&d->tproxy[0], AF_INET, "0.0.0.0", 7003);
	assert_addr(&d->tproxy[1], AF_INET6, "::", 7003);
	cfg_diff(c, d, &diff);
	assert_string_equal(diff.live, "");
	assert_string_equal(diff.restart, "tproxy");
	cfg_free(d);
	cfg_free(c);
	expect_errors("{\"tproxy\": [\"0.0.0.0:7003\", \"0.0.0.0:7003\"]}",
		      "t.json:1:29: tproxy[1]: duplicate address, same as tproxy[0]\n");
	expect_error_prefix("{\"tproxy\": [\"0.0.0.0\"]}", "t.json:1:13: tproxy[0]: invalid address");
	expect_error_prefix("{\"tproxy\": \"0.0.0.0:1\"}", "t.json:1:12: tproxy: expected an array");
}

/* The intercept section: defaults, a valid ebpf setup, and each refusal
 * with the line that says why. */
static void test_intercept_keys(void **state)
{
	struct cfg *c = load_ok("{}");

	assert_int_equal(c->intercept.mode, CFG_INTERCEPT_IPTABLES);
	assert_string_equal(c->intercept.cgroup, "/");
	assert_int_equal(c->intercept.n_dests, 0);
	assert_int_equal(c->intercept.n_ports, 1);
	assert_int_equal(c->intercept.ports[0].lo, 1);
	assert_int_equal(c->intercept.ports[0].hi, 65535);
	cfg_free(c);

	c = load_ok("{\"intercept\": {\"mode\": \"ebpf\", \"cgroup\": \"/apps.slice\", "
		    "\"destinations\": [\"10.0.0.0/24\", \"fd00::/64\"], "
		    "\"ports\": [\"6379\", \"8000-8100\"]}}");
	assert_int_equal(c->intercept.mode, CFG_INTERCEPT_EBPF);
	assert_string_equal(c->intercept.cgroup, "/apps.slice");
	assert_int_equal(c->intercept.n_dests, 2);
	assert_int_equal(c->intercept.dests[0].family, AF_INET);
	assert_int_equal(c->intercept.dests[0].len, 24);
	assert_int_equal(c->intercept.dests[1].family, AF_INET6);
	assert_int_equal(c->intercept.n_ports, 2);
	assert_int_equal(c->intercept.ports[1].lo, 8000);
	assert_int_equal(c->intercept.ports[1].hi, 8100);
	cfg_free(c);

	expect_errors("{\"intercept\": {\"mode\": \"ebpf\"}}",
		      "t.json:1:15: intercept.destinations: mode \"ebpf\" needs at least one prefix "
		      "to intercept connects to\n");
	expect_error_prefix("{\"intercept\": {\"mode\": \"bpf\"}}",
			    "t.json:1:24: intercept.mode: unknown intercept mode \"bpf\"");
	expect_error_prefix("{\"intercept\": {\"destinations\": [\"10.0.0.1/24\"]}}",
			    "t.json:1:33: intercept.destinations[0]: host bits are set");
	expect_error_prefix("{\"intercept\": {\"destinations\": [\"10.0.0.0/24\", \"10.0.0.0/24\"]}}",
			    "t.json:1:48: intercept.destinations[1]: duplicate prefix");
	expect_error_prefix("{\"intercept\": {\"ports\": [\"10.0.0.2:443\"]}}",
			    "t.json:1:26: intercept.ports[0]: invalid entry \"10.0.0.2:443\": ports only");
	expect_error_prefix("{\"intercept\": {\"ports\": []}}",
			    "t.json:1:25: intercept.ports: 0 entries");
	expect_error_prefix("{\"intercept\": {\"cgroup\": \"apps\"}}",
			    "t.json:1:26: intercept.cgroup: \"apps\" is not an absolute path");
}

/* "user": a name useradd takes, or "" (stay as started: root on
 * purpose); whether it exists is judged at start, not here, and the
 * default's "smcproxy" is judged as strictly as a name written out. */
static void test_user_key(void **state)
{
	struct cfg_errors errs = { 0 };
	struct cfg *cfg = NULL;

	assert_int_equal(cfg_load_string("{}", "t.json", &cfg, &errs), 0);
	assert_string_equal(cfg->user, "smcproxy");
	cfg_free(cfg);
	assert_int_equal(cfg_load_default(&cfg, &errs), 0);
	assert_string_equal(cfg->user, "smcproxy");
	cfg_free(cfg);
	assert_int_equal(cfg_load_string("{\"user\": \"\"}", "t.json", &cfg, &errs), 0);
	assert_string_equal(cfg->user, "");
	cfg_free(cfg);
	assert_int_equal(cfg_load_string("{\"user\": \"no-such_user.1\"}", "t.json", &cfg, &errs),
			 0);
	assert_string_equal(cfg->user, "no-such_user.1");
	cfg_free(cfg);
	expect_error_prefix("{\"user\": \"-x\"}", "t.json:1:10: user: \"-x\" is not a user name");
	expect_error_prefix("{\"user\": \"a b\"}", "t.json:1:10: user: \"a b\" is not a user name");
	expect_error_prefix("{\"user\": \"../root\"}", "t.json:1:10: user: \"../root\" is not");
	expect_error_prefix("{\"user\": \"abcdefghijabcdefghijabcdefghijabc\"}",
			    "t.json:1:10: user: \"abcdefghijabcdefghijabcdefghijabc\" is not");
	expect_error_prefix("{\"user\": 0}", "t.json:1:10: user: expected a string");
}

static void test_wrong_types(void **state)
{
	expect_errors("{\"listen\": \"127.0.0.1:7001\"}",
		      "t.json:1:12: listen: expected an array of addresses like "
		      "[\"127.0.0.1:7001\"], got a string\n");
	expect_errors("{\"links\": []}", "t.json:1:11: links: expected an object, got an array\n");
	expect_errors("{\"workers\": \"4\"}",
		      "t.json:1:13: workers: expected an integer, got a string (remove the quotes)\n");
	expect_errors("{\"workers\": 4.0}",
		      "t.json:1:13: workers: expected an integer, got a real number\n");
	expect_errors("{\"autocork\": {\"enabled\": \"yes\"}}",
		      "t.json:1:26: autocork.enabled: expected true or false, got a string\n");
	expect_errors("{\"buffers\": {\"ring\": 1.5}}",
		      "t.json:1:22: buffers.ring: expected a size (integer bytes or a string like "
		      "\"64KiB\"), got a real number\n");
	expect_errors("{\"fallback\": {\"connect_timeout\": true}}",
		      "t.json:1:34: fallback.connect_timeout: expected a duration (a string like "
		      "\"30s\" or integer milliseconds), got true\n");
	expect_errors("{\"cq\": {\"pool\": null}}", "t.json:1:17: cq.pool: expected an integer, got null\n");
	expect_errors("{\"transport\": 1}",
		      "t.json:1:15: transport: expected a string (auto, rdma, shm or tcp), got an integer\n");
	expect_errors("{\"control\": false}",
		      "t.json:1:13: control: expected a string like \"127.0.0.1:7001\" or "
		      "\"[::1]:7001\", got false\n");
	expect_errors("{\"peers\": {}}",
		      "t.json:1:11: peers: expected an array of {\"prefix\": ..., \"control_port\": ...}, "
		      "got an object\n");
	expect_errors("{\"peers\": [5]}",
		      "t.json:1:12: peers[0]: expected an object like {\"prefix\": \"10.0.0.0/24\"}, "
		      "got an integer\n");
	expect_errors("{\"stats\": {\"mode\": [432]}}",
		      "t.json:1:20: stats.mode: expected a mode (an octal string like \"0660\"), got an array\n");
	expect_errors("{\"auth\": {\"psk_file\": 5}}",
		      "t.json:1:23: auth.psk_file: expected a string (an absolute path), got an integer\n");
	expect_errors("{\"listen\": [7001]}",
		      "t.json:1:13: listen[0]: expected a string like \"127.0.0.1:7001\" or "
		      "\"[::1]:7001\", got an integer\n");
}

static void test_out_of_range(void **state)
{
	expect_errors("{\"workers\": 257}", "t.json:1:13: workers: 257 is out of range (0..256)\n");
	expect_errors("{\"mark\": 0}", "t.json:1:10: mark: 0 is out of range (1..4294967295)\n");
	expect_errors("{\"mark\": 4294967296}",
		      "t.json:1:10: mark: 4294967296 is out of range (1..4294967295)\n");
	expect_errors("{\"mark\": -1}", "t.json:1:10: mark: -1 is out of range (1..4294967295)\n");
	expect_errors("{\"links\": {\"per_peer\": 0}}",
		      "t.json:1:24: links.per_peer: 0 is out of range (1..16)\n");
	expect_errors("{\"links\": {\"max_flows_per_link\": 65536}}",
		      "t.json:1:34: links.max_flows_per_link: 65536 is out of range (1..65535)\n");
	expect_errors("{\"cq\": {\"pool\": 17, \"poll_budget\": 0}}",
		      "t.json:1:17: cq.pool: 17 is out of range (0..16)\n"
		      "t.json:1:36: cq.poll_budget: 0 is out of range (1..1024)\n");
	expect_errors("{\"buffers\": {\"ring\": \"8KiB\"}}",
		      "t.json:1:22: buffers.ring: 8192 bytes is out of range (16KiB..64MiB)\n");
	expect_errors("{\"buffers\": {\"ring\": \"128MiB\"}}",
		      "t.json:1:22: buffers.ring: 134217728 bytes is out of range (16KiB..64MiB)\n");
	expect_errors("{\"buffers\": {\"ring\": -1}}",
		      "t.json:1:22: buffers.ring: a size cannot be negative\n");
	expect_errors("{\"buffers\": {\"ring\": \"96KiB\"}}",
		      "t.json:1:22: buffers.ring: 98304 bytes is not a power of two\n");
	expect_errors("{\"autocork\": {\"max_bytes\": 0}}",
		      "t.json:1:28: autocork.max_bytes: 0 bytes is out of range (1B..16MiB)\n");
	expect_errors("{\"relay\": {\"buffer\": \"1KiB\"}}",
		      "t.json:1:22: relay.buffer: 1024 bytes is out of range (4KiB..64MiB)\n");
	expect_errors("{\"relay\": {\"keepalive\": \"500ms\"}}",
		      "t.json:1:25: relay.keepalive: 500ms is out of range (0, or 1s..32767s)\n");
	expect_errors("{\"fallback\": {\"connect_timeout\": 0}}",
		      "t.json:1:34: fallback.connect_timeout: 0 is out of range (1ms..1h)\n");
	expect_errors("{\"shutdown\": {\"drain_timeout\": \"2h\"}}",
		      "t.json:1:32: shutdown.drain_timeout: 2h is out of range (0..1h)\n");
	expect_errors("{\"relay\": {\"idle_timeout\": -5}}",
		      "t.json:1:28: relay.idle_timeout: a duration cannot be negative\n");
	expect_errors("{\"stats\": {\"mode\": 660}}",
		      "t.json:1:20: stats.mode: 660 is 01224 in octal, above 0777; write the mode as "
		      "an octal string like \"0660\"\n");
	expect_errors("{\"stats\": {\"mode\": \"4755\"}}",
		      "t.json:1:20: stats.mode: invalid mode \"4755\": above 0777 (setuid, setgid and "
		      "sticky bits are not allowed)\n");
	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"control_port\": 0}]}",
		      "t.json:1:53: peers[0].control_port: 0 is out of range (1..65535)\n");
	expect_errors("{\"listen\": []}", "t.json:1:12: listen: must list at least one address\n");
}

/* listen and peers have a most elements, checked before any element. */
static void test_array_limits(void **state)
{
	char *json = malloc(64 * 4200), *p;
	struct cfg *c;
	int i;

	assert_non_null(json);
	p = json + sprintf(json, "{\"listen\": [");
	for (i = 0; i < 257; i++)
		p += sprintf(p, "%s\"127.0.0.1:%d\"", i ? ", " : "", i + 1);
	strcpy(p, "]}");
	expect_errors(json, "t.json:1:12: listen: 257 addresses, more than the 256 allowed\n");
	json[strlen(json) - strlen(", \"127.0.0.1:257\"]}")] = '\0';
	strcat(json, "]}");
	c = load_ok(json);
	assert_int_equal(c->n_listen, 256);
	assert_int_equal(port_of(&c->listen[255]), 256);
	cfg_free(c);

	p = json + sprintf(json, "{\"peers\": [");
	for (i = 0; i < 4097; i++)
		p += sprintf(p, "%s{\"prefix\": \"10.%d.%d.0/24\"}", i ? ", " : "", i / 256, i % 256);
	strcpy(p, "]}");
	expect_errors(json, "t.json:1:11: peers: 4097 peers, more than the 4096 allowed (use "
		      "wider prefixes)\n");
	free(json);
}

static void test_bad_units(void **state)
{
	expect_errors("{\"buffers\": {\"pool\": \"64XB\"}}",
		      "t.json:1:22: buffers.pool: invalid size \"64XB\": unknown unit (use B, KiB, "
		      "MiB, GiB, TiB; K, M, G, T are binary too; KB, MB, GB, TB are decimal)\n");
	expect_errors("{\"buffers\": {\"pool\": \"1.5GiB\"}}",
		      "t.json:1:22: buffers.pool: invalid size \"1.5GiB\": fractions are not "
		      "supported (write \"1536KiB\", not \"1.5MiB\")\n");
	expect_errors("{\"buffers\": {\"pool\": \"\"}}",
		      "t.json:1:22: buffers.pool: invalid size \"\": empty string is not a size\n");
	expect_errors("{\"buffers\": {\"pool\": \"99999999999999999999\"}}",
		      "t.json:1:22: buffers.pool: invalid size \"99999999999999999999\": too large "
		      "(above 2^64-1 bytes)\n");
	expect_errors("{\"buffers\": {\"pool\": \"20000000TiB\"}}",
		      "t.json:1:22: buffers.pool: invalid size \"20000000TiB\": too large "
		      "(above 2^64-1 bytes)\n");
	expect_errors("{\"fallback\": {\"negative_ttl\": \"30\"}}",
		      "t.json:1:31: fallback.negative_ttl: invalid duration \"30\": missing unit "
		      "(ms, s, m, h or d)\n");
	expect_errors("{\"fallback\": {\"negative_ttl\": \"30 secs\"}}",
		      "t.json:1:31: fallback.negative_ttl: invalid duration \"30 secs\": unknown unit "
		      "(use ms, s, m or min, h, d; lower case)\n");
	expect_errors("{\"fallback\": {\"negative_ttl\": \"-1s\"}}",
		      "t.json:1:31: fallback.negative_ttl: invalid duration \"-1s\": a duration "
		      "cannot be negative\n");
	expect_errors("{\"fallback\": {\"negative_ttl\": \"99999999999999999d\"}}",
		      "t.json:1:31: fallback.negative_ttl: invalid duration \"99999999999999999d\": "
		      "too large (above 2^64-1 milliseconds)\n");
	/* a long value is shortened in the message, on a character boundary */
	expect_errors("{\"fallback\": {\"negative_ttl\": \"123456789012345678901234567890"
		      "123456789012345678901234567890123\xc3\xa9xyz\"}}",
		      "t.json:1:31: fallback.negative_ttl: invalid duration \"123456789012345678901"
		      "234567890123456789012345678901234567890123...\": unknown unit (use ms, s, "
		      "m or min, h, d; lower case)\n");
}

static void test_bad_addresses(void **state)
{
	expect_errors("{\"listen\": [\"127.0.0.1\"]}",
		      "t.json:1:13: listen[0]: invalid address \"127.0.0.1\": missing port (write "
		      "ip:port or [ip6]:port)\n");
	expect_errors("{\"listen\": [\"::1:7001\"]}",
		      "t.json:1:13: listen[0]: invalid address \"::1:7001\": an IPv6 address must be "
		      "in brackets, like [::1]:7001\n");
	expect_errors("{\"control\": \"localhost:7002\"}",
		      "t.json:1:13: control: invalid address \"localhost:7002\": not a numeric IPv4 "
		      "address (host names are not resolved)\n");
	expect_errors("{\"control\": \"1.2.3.4:70000\"}",
		      "t.json:1:13: control: invalid address \"1.2.3.4:70000\": the port must be a "
		      "number from 1 to 65535\n");
}

static void test_bad_prefixes(void **state)
{
	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.1/24\"}]}",
		      "t.json:1:23: peers[0].prefix: host bits are set in \"10.0.0.1/24\" (did you "
		      "mean \"10.0.0.0/24\"?)\n");
	expect_errors("{\"peers\": [{\"prefix\": \"fd00::1/64\"}]}",
		      "t.json:1:23: peers[0].prefix: host bits are set in \"fd00::1/64\" (did you "
		      "mean \"fd00::/64\"?)\n");
	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.0/33\"}]}",
		      "t.json:1:23: peers[0].prefix: invalid prefix \"10.0.0.0/33\": the prefix "
		      "length must be a number from 0 to 32\n");
	expect_errors("{\"peers\": [{\"control_port\": 1}]}",
		      "t.json:1:12: peers[0]: missing required key \"prefix\"\n");
	expect_errors("{\"peers\": [{\"prefix\": \"10.0.0.0/8\"}, {\"prefix\": \"10.0.0.0/8\"}]}",
		      "t.json:1:49: peers[1].prefix: duplicate prefix, same as peers[0]\n");
}

static void test_duplicate_listen(void **state)
{
	expect_errors("{\"listen\": [\"127.0.0.1:7001\", \"[::1]:7001\", \"127.0.0.1:7001\","
		      " \"[0:0::1]:7001\"]}",
		      "t.json:1:45: listen[2]: duplicate address, same as listen[0]\n"
		      "t.json:1:63: listen[3]: duplicate address, same as listen[1]\n");
	/* same address, other port: fine */
	cfg_free(load_ok("{\"listen\": [\"127.0.0.1:7001\", \"127.0.0.1:7002\"]}"));
}

static void test_paths(void **state)
{
	char json[256];

	/* {"stats": {"socket": "/aaa...a"}} with a path of 108 bytes */
	strcpy(json, "{\"stats\": {\"socket\": \"/");
	memset(json + strlen(json), 'a', 107);
	strcpy(json + 22 + 108, "\"}}");

	expect_errors("{\"shm\": {\"dir\": \"run/smcproxy\"}}",
		      "t.json:1:17: shm.dir: \"run/smcproxy\" is not an absolute path (one starting "
		      "with /)\n");
	expect_errors("{\"auth\": {\"psk_file\": \"psk\"}}",
		      "t.json:1:23: auth.psk_file: \"psk\" is not an absolute path (one starting "
		      "with /), nor \"\"\n");
	expect_errors("{\"stats\": {\"socket\": \"\"}}",
		      "t.json:1:22: stats.socket: \"\" is not an absolute path (one starting with /)\n");
	expect_errors(json, "t.json:1:22: stats.socket: path is 108 bytes long, longer than the "
		      "107 allowed here\n");
	/* 107 bytes fit sockaddr_un.sun_path with its NUL */
	json[22 + 107] = '"';
	strcpy(json + 22 + 108, "}}");
	cfg_free(load_ok(json));
}

static void test_cross_check(void **state)
{
	expect_errors("{\"buffers\": {\"ring\": \"1MiB\", \"pool\": \"512KiB\"}}",
		      "t.json:1:38: buffers.pool: 512KiB is smaller than buffers.ring (1MiB)\n");
	expect_errors("{\"buffers\": {\"ring\": \"64MiB\", \"pool\": \"32MiB\"}}",
		      "t.json:1:39: buffers.pool: 32MiB is smaller than buffers.ring (64MiB)\n");
	/* A first ring no grown ring reaches; equal is the rings of old. */
	expect_errors("{\"buffers\": {\"ring\": \"256KiB\", \"ring_initial\": \"1MiB\"}}",
		      "t.json:1:48: buffers.ring_initial: 1MiB is larger than buffers.ring (256KiB)\n");
	expect_errors("{\"buffers\": {\"ring_initial\": \"2MiB\"}}",
		      "t.json:1:30: buffers.ring_initial: 2MiB is larger than buffers.ring (1MiB)\n");
	cfg_free(load_ok("{\"buffers\": {\"ring\": \"1MiB\", \"ring_initial\": \"1MiB\"}}"));
	/* The client's mark is routed back to this host: not the mark of
	 * connections to other hosts. */
	expect_errors("{\"mark\": 83}",
		      "t.json:1:1: client_mark: 83 is also \"mark\": connections to other hosts would be routed back here\n");
	cfg_free(load_ok("{\"mark\": 83, \"client_mark\": 84}"));
}

/*
 * A multi-line file with errors at several levels, in an order different
 * from the schema's: the report is sorted by position, and each line and
 * column is where the offending key or value starts.
 */
static void test_multiline_positions(void **state)
{
	expect_errors("{\n"
		      "  \"log\": {\"level\": 3},\n"
		      "  \"links\": {\n"
		      "    \"per_peer\": 17,\n"
		      "    \"bogus\": true\n"
		      "  },\n"
		      "  \"buffers\": {\"ring\": \"300KiB\"}\n"
		      "}\n",
		      "t.json:2:20: log.level: expected a string (debug, info, notice, warning or "
		      "error), got an integer\n"
		      "t.json:4:17: links.per_peer: 17 is out of range (1..16)\n"
		      "t.json:5:5: links.bogus: unknown key (known here: per_peer, max_flows_per_link, dead_after)\n"
		      "t.json:7:23: buffers.ring: 307200 bytes is not a power of two\n");
}

/* Columns count code points, as jansson's do, not bytes. */
static void test_unicode_columns(void **state)
{
	expect_errors("{\"shm\": {\"dir\": \"/\xc3\xa9\"}, \"mark\": 0}",
		      "t.json:1:32: mark: 0 is out of range (1..4294967295)\n");
	/* an escaped key is decoded before it is looked up */
	expect_errors("{\"log\": {\"lev\\u0065l\": 9}}",
		      "t.json:1:24: log.level: expected a string (debug, info, notice, warning or "
		      "error), got an integer\n");
	expect_error_prefix("{\"\\u00e9t\\u00e9\": 1}", "t.json:1:2: \xc3\xa9t\xc3\xa9: unknown key");
	expect_error_prefix("{\"\\ud83d\\ude00\": 1}", "t.json:1:2: \xf0\x9f\x98\x80: unknown key");
}

/* A key with a newline cannot break the one-line-per-error promise. */
static void test_control_chars_escaped(void **state)
{
	expect_error_prefix("{\"a\\nb\": 1}", "t.json:1:2: a\\x0ab: unknown key");
	expect_error_prefix("{\"transport\": \"x\\ty\"}",
			    "t.json:1:15: transport: unknown transport \"x\\x09y\"");
}

static void test_many_errors_collected(void **state)
{
	struct cfg_errors e;
	struct cfg *c;

	assert_int_equal(cfg_load_string("{\"mark\": 0, \"workers\": -1, \"transport\": \"x\","
					  " \"log\": {\"level\": \"y\"}, \"cq\": {\"pool\": 99},"
					  " \"nope\": 1}", NULL, &c, &e), -EINVAL);
	assert_int_equal(e.count, 6);
	assert_int_equal(count_lines(e.text), 6);
	/* no file name given: "<string>" */
	assert_int_equal(strncmp(e.text, "<string>:1:10: mark: ", 21), 0);
	cfg_errors_free(&e);
}

/* ---- files ---- */

static char *write_temp(const char *data, size_t len)
{
	char *path = strdup("/tmp/test_cfg.XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

/* Loads data (len bytes, NULs included) from a temporary file, which must
 * fail with exactly the error text "<the file's path>" after_path. */
static void expect_file_errors(const char *data, size_t len, const char *after_path)
{
	struct cfg_errors e;
	struct cfg *c;
	char *path = write_temp(data, len), want[128];

	assert_int_equal(cfg_load_file(path, &c, &e), -EINVAL);
	assert_null(c);
	snprintf(want, sizeof(want), "%s%s", path, after_path);
	assert_string_equal(e.text, want);
	cfg_errors_free(&e);
	unlink(path);
	free(path);
}

static void test_load_file(void **state)
{
	struct cfg_errors e;
	struct cfg *c;
	char *path;

	path = write_temp(full_json, strlen(full_json));
	assert_int_equal(cfg_load_file(path, &c, &e), 0);
	assert_null(e.text);
	assert_string_equal(c->source, path);
	assert_int_equal(c->n_peers, 2);
	cfg_free(c);
	unlink(path);
	free(path);

	expect_file_errors("{\n\"mark\": \"5\"\n}\n", 16,
			   ":2:9: mark: expected an integer, got a string (remove the quotes)\n");
	/* a NUL byte is not the end of the file */
	expect_file_errors("{}\0{", 4,
			   ":1:3: (parse): NUL byte in the text (is this a text file?)\n");
}

static void test_text_checks(void **state)
{
	expect_errors("\xef\xbb\xbf{}", "t.json:1:1: (parse): the file starts with a UTF-8 byte "
		      "order mark; save it without one\n");
	/* cfg_load_string stops at a NUL, so only files can carry one; the
	 * column counts the code points before it */
	expect_file_errors("{\n \"\xc3\xa9\": \0}", 11,
			   ":2:7: (parse): NUL byte in the text (is this a text file?)\n");
}

static void test_missing_file(void **state)
{
	struct cfg_errors e;
	struct cfg *c = (struct cfg *)&e;

	assert_int_equal(cfg_load_file("/nonexistent/smcproxyd.json", &c, &e), -ENOENT);
	assert_null(c);
	assert_string_equal(e.text, "/nonexistent/smcproxyd.json: cannot open: "
			    "No such file or directory\n");
	assert_int_equal(e.count, 1);
	cfg_errors_free(&e);

	assert_int_equal(cfg_load_file("/", &c, &e), -EISDIR);
	assert_string_equal(e.text, "/: cannot read: Is a directory\n");
	cfg_errors_free(&e);

	/* errs is optional */
	assert_int_equal(cfg_load_file("/nonexistent/x", &c, NULL), -ENOENT);
}

static void test_null_arguments(void **state)
{
	struct cfg_errors e = { 0 };
	struct cfg *c;

	assert_int_equal(cfg_load_string(NULL, "x", &c, &e), -EINVAL);
	assert_null(c);
	assert_int_equal(cfg_load_string("{\"mark\": 0}", "x", &c, NULL), -EINVAL);
	assert_null(c);
	cfg_free(NULL);
	cfg_errors_free(NULL);
	cfg_errors_free(&e);
}

/* ---- reload diff ---- */

static void diff_of(const char *a, const char *b, struct cfg_diff *d)
{
	struct cfg *x = load_ok(a), *y = load_ok(b);

	cfg_diff(x, y, d);
	cfg_free(x);
	cfg_free(y);
}

static void test_diff_none(void **state)
{
	struct cfg_diff d;

	diff_of("{}", cfg_default_json(), &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "");
	/* different spelling, same value */
	diff_of("{\"buffers\": {\"ring\": 262144}, \"fallback\": {\"connect_timeout\": 2000}}",
		"{\"buffers\": {\"ring\": \"256K\"}, \"fallback\": {\"connect_timeout\": \"2s\"}}", &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "");
	cfg_diff(NULL, NULL, &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "");
}

static void test_diff_live_and_restart(void **state)
{
	struct cfg_diff d;

	diff_of("{}", "{\"relay\": {\"idle_timeout\": \"5m\"}, \"log\": {\"level\": \"debug\"},"
		" \"listen\": [\"127.0.0.1:7001\"]}", &d);
	assert_string_equal(d.live, "log.level,relay.idle_timeout");
	assert_string_equal(d.restart, "listen");

	diff_of("{\"peers\": [{\"prefix\": \"10.0.0.0/8\"}]}",
		"{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"control_port\": 7003}]}", &d);
	assert_string_equal(d.live, "peers");
	assert_string_equal(d.restart, "");

	diff_of("{}", "{\"control\": \"\"}", &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "control");
}

static void test_diff_every_key(void **state)
{
	struct cfg_diff d;

	diff_of("{}", full_json, &d);
	assert_string_equal(d.live, "peers,autocork.enabled,autocork.max_bytes,stats.mode,"
			    "fallback.connect_timeout,fallback.negative_ttl,log.level,"
			    "relay.keepalive,relay.idle_timeout,shutdown.drain_timeout,"
			    "debug.fail_link");
	assert_string_equal(d.restart, "listen,control,transport,mark,workers,links.per_peer,"
			    "links.max_flows_per_link,buffers.ring,buffers.ring_initial,buffers.pool,cq.pool,"
			    "cq.poll_budget,shm.dir,stats.socket,auth.psk_file,relay.buffer,"
			    "rdma.inline,rdma.sq_depth,rdma.rq_depth,metrics.listen,"
			    "metrics.max_clients,metrics.timeout");
}

/* The HTTP endpoint: off by default, "" is off, an address
 * turns it on; every key needs a restart. */
static void test_metrics_keys(void **state)
{
	struct cfg_diff d;
	struct cfg *c;

	c = load_ok("{}");
	assert_int_equal(c->metrics.listen.len, 0);
	cfg_free(c);
	c = load_ok("{\"metrics\": {\"listen\": \"\"}}");
	assert_int_equal(c->metrics.listen.len, 0);
	assert_int_equal(c->metrics.max_clients, 16);
	assert_int_equal(c->metrics.timeout_ms, 10000);
	cfg_free(c);
	c = load_ok("{\"metrics\": {\"listen\": \"127.0.0.1:9464\", \"max_clients\": 1,\n"
		    "\"timeout\": \"1h\"}}");
	assert_addr(&c->metrics.listen, AF_INET, "127.0.0.1", 9464);
	assert_int_equal(c->metrics.max_clients, 1);
	assert_int_equal(c->metrics.timeout_ms, 3600000);
	cfg_free(c);

	expect_errors("{\"metrics\": {\"listen\": \"localhost:9464\"}}",
		      "t.json:1:24: metrics.listen: invalid address \"localhost:9464\": "
		      "not a numeric IPv4 address (host names are not resolved)\n");
	expect_errors("{\"metrics\": {\"listen\": 9464}}",
		      "t.json:1:24: metrics.listen: expected a string like \"127.0.0.1:7001\" or "
		      "\"[::1]:7001\", got an integer\n");
	expect_errors("{\"metrics\": {\n  \"max_clients\": 0,\n  \"timeout\": \"500ms\"}}",
		      "t.json:2:18: metrics.max_clients: 0 is out of range (1..1024)\n"
		      "t.json:3:14: metrics.timeout: 500ms is out of range (1s..1h)\n");
	expect_errors("{\"metrics\": {\"port\": 9464}}",
		      "t.json:1:14: metrics.port: unknown key (known here: listen, max_clients, timeout)\n");
	expect_errors("{\"metrics\": \"127.0.0.1:9464\"}",
		      "t.json:1:13: metrics: expected an object, got a string\n");

	diff_of("{}", "{\"metrics\": {\"listen\": \"127.0.0.1:9464\"}}", &d);
	assert_string_equal(d.live, "");
	assert_string_equal(d.restart, "metrics.listen");
	diff_of("{\"metrics\": {\"listen\": \"127.0.0.1:9464\"}}",
		"{\"metrics\": {\"listen\": \"127.0.0.1:9464\"}}", &d);
	assert_string_equal(d.restart, "");
	diff_of("{\"metrics\": {\"listen\": \"127.0.0.1:9464\"}}",
		"{\"metrics\": {\"listen\": \"127.0.0.1:9465\"}}", &d);
	assert_string_equal(d.restart, "metrics.listen");
}

/* The rdma transport's keys and the debug section. */
static void test_rdma_and_debug_keys(void **state)
{
	struct cfg_diff d;
	struct cfg *c;

	c = load_ok("{\"rdma\": {\"inline\": false, \"sq_depth\": 16, \"rq_depth\": \n"
		    "4096}, \"debug\": {}}");
	assert_false(c->rdma.inline_data);
	assert_int_equal(c->rdma.sq_depth, 16);
	assert_int_equal(c->rdma.rq_depth, 4096);
	assert_false(c->debug.fail_link);
	cfg_free(c);
	c = load_ok("{\"rdma\": {}, \"debug\": {\"fail_link\": true}}");
	assert_true(c->rdma.inline_data);
	assert_int_equal(c->rdma.sq_depth, 256);
	assert_int_equal(c->rdma.rq_depth, 256);
	assert_true(c->debug.fail_link);
	cfg_free(c);

	expect_errors("{\"rdma\": {\"sq_depth\": 15, \"rq_depth\": 4097}}",
		      "t.json:1:23: rdma.sq_depth: 15 is out of range (16..4096)\n"
		      "t.json:1:39: rdma.rq_depth: 4097 is out of range (16..4096)\n");
	expect_errors("{\"rdma\": {\"inline\": 1}}",
		      "t.json:1:21: rdma.inline: expected true or false, got an integer\n");
	expect_errors("{\"rdma\": {\"sq_depth\": \"256\"}}",
		      "t.json:1:23: rdma.sq_depth: expected an integer, got a string (remove the "
		      "quotes)\n");
	expect_errors("{\"debug\": {\"fail_link\": \"yes\"}}",
		      "t.json:1:25: debug.fail_link: expected true or false, got a string\n");
	expect_errors("{\"debug\": {\"fail-link\": true}}",
		      "t.json:1:12: debug.fail-link: unknown key (did you mean \"fail_link\"?)\n");
	expect_errors("{\"rdma\": {\"inlin\": true}}",
		      "t.json:1:11: rdma.inlin: unknown key (did you mean \"inline\"?)\n");
	expect_errors("{\"debug\": true}", "t.json:1:11: debug: expected an object, got true\n");

	/* debug.fail_link applies on a reload; the rdma keys size queue pairs
	 * that exist already. */
	diff_of("{}", "{\"debug\": {\"fail_link\": true}, \"rdma\": {\"rq_depth\": 512}}", &d);
	assert_string_equal(d.live, "debug.fail_link");
	assert_string_equal(d.restart, "rdma.rq_depth");
}

static void test_diff_truncation(void **state)
{
	char list[16] = "";

	cfg__list_add(list, sizeof(list), "listen");
	assert_string_equal(list, "listen");
	cfg__list_add(list, sizeof(list), "mark");
	assert_string_equal(list, "listen,mark");
	cfg__list_add(list, sizeof(list), "workers");
	assert_string_equal(list, "listen,mark,...");
	cfg__list_add(list, sizeof(list), "cq");
	assert_string_equal(list, "listen,mark,...");

	memset(list, 0, sizeof(list));
	cfg__list_add(list, sizeof(list), "a_very_long_key_name");
	assert_string_equal(list, "...");
	cfg__list_add(list, 4, "x");	/* too small even for ",...": untouched */
	assert_string_equal(list, "...");
}

/*
 * Fails each allocation of a load in turn: every failure must come back as
 * -ENOMEM with nothing returned and nothing leaked (LeakSanitizer checks
 * that in make check-asan), and a load without a failure as usual.
 */
static void run_oom(const char *json, const char *path, int rc_ok)
{
	struct cfg_errors e;
	struct cfg *c;
	long n;
	int rc;

	for (n = 0; n < 100000; n++) {
		fail_countdown = n;
		rc = json ? cfg_load_string(json, "t.json", &c, &e) : cfg_load_file(path, &c, &e);
		if (fail_countdown >= 0) {	/* fewer than n allocations: done */
			fail_countdown = -1;
			assert_int_equal(rc, rc_ok);
			cfg_free(c);
			cfg_errors_free(&e);
			break;
		}
		if (rc != -ENOMEM)
			fail_msg("allocation %ld failed but the load returned %d", n, rc);
		assert_null(c);
		cfg_errors_free(&e);
	}
	fail_countdown = -1;
	/* a real config makes dozens of allocations of ours */
	assert_true(n > 30);
}

static void test_out_of_memory(void **state)
{
	char *path;

	run_oom(full_json, NULL, 0);
	run_oom("{\n  \"log\": {\"level\": 3},\n  \"zz\": 1,\n  \"listen\": [\"x\", \"[::1]:1\"],\n"
		"  \"peers\": [{\"prefix\": \"10.0.0.1/8\"}, {}],\n  \"buffers\": {\"pool\": \"1x\"}\n}",
		NULL, -EINVAL);
	path = write_temp(full_json, strlen(full_json));
	run_oom(NULL, path, 0);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_values),
		cmocka_unit_test(test_default_marks),
		cmocka_unit_test(test_defaults_equal_embedded),
		cmocka_unit_test(test_default_json_complete),
		cmocka_unit_test(test_default_json_round_trip),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_small_values),
		cmocka_unit_test(test_parse_error),
		cmocka_unit_test(test_via_and_serve),
		cmocka_unit_test(test_tproxy),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_not_an_object),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_intercept_keys),
		cmocka_unit_test(test_user_key),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_array_limits),
		cmocka_unit_test(test_bad_units),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_bad_prefixes),
		cmocka_unit_test(test_duplicate_listen),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_cross_check),
		cmocka_unit_test(test_multiline_positions),
		cmocka_unit_test(test_unicode_columns),
		cmocka_unit_test(test_control_chars_escaped),
		cmocka_unit_test(test_many_errors_collected),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_text_checks),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_null_arguments),
		cmocka_unit_test(test_diff_none),
		cmocka_unit_test(test_diff_live_and_restart),
		cmocka_unit_test(test_diff_every_key),
		cmocka_unit_test(test_rdma_and_debug_keys),
		cmocka_unit_test(test_metrics_keys),
		cmocka_unit_test(test_diff_truncation),
		cmocka_unit_test(test_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
