/* SPDX-License-Identifier: MIT */
/* Guards the destination policy (a fixed bug: a peer reached any port of the acceptor host): peers[].allow parsing, deny by default, the longest prefix decides, ports and addresses match, refusals counted by port. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cfg.h"
#include "cfg-int.h"
#include "smc/policy.h"

static struct sockaddr_storage sa(const char *ip, unsigned port)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
	return ss;
}

static void test_parse_allow(void **state)
{
	static const char *bad[] = {
		"", "0", "65536", "9-8", "80-", "-80", "x", "10.0.0.1", "10.0.0.1:", "fd00::1:80",
		"[fd00::1]", "[fd00::1]80", "10.0.0.300:80", "[zz]:80", "80 ", " 80", "1-2-3",
	};
	struct cfg_allow a;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;

		if (cfg__parse_allow(bad[i], &a, &why) == 0)
			fail_msg("\"%s\" parsed", bad[i]);
		assert_non_null(why);
	}
	assert_int_equal(cfg__parse_allow("6379", &a, NULL), 0);
	assert_int_equal(a.family, 0);
	assert_int_equal(a.lo, 6379);
	assert_int_equal(a.hi, 6379);
	assert_int_equal(cfg__parse_allow("8000-8100", &a, NULL), 0);
	assert_int_equal(a.lo, 8000);
	assert_int_equal(a.hi, 8100);
	assert_int_equal(cfg__parse_allow("10.0.0.2:443", &a, NULL), 0);
	assert_int_equal(a.family, AF_INET);
	assert_memory_equal(a.addr, "\x0a\x00\x00\x02", 4);
	assert_int_equal(cfg__parse_allow("[fd00::2]:1-65535", &a, NULL), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.lo, 1);
	assert_int_equal(a.hi, 65535);
}

static struct cfg *load(const char *json)
{
	struct cfg_errors errs = { 0 };
	struct cfg *c = NULL;

	if (cfg_load_string(json, "t.json", &c, &errs))
		fail_msg("%s", errs.text ? errs.text : "?");
	cfg_errors_free(&errs);
	return c;
}

static void test_allows(void **state)
{
	struct cfg *c = load("{\"peers\": ["
		"{\"prefix\": \"10.0.0.0/8\"},"
		"{\"prefix\": \"10.1.0.0/16\", \"allow\": [\"6379\", \"8000-8100\", \"10.9.9.9:443\"]},"
		"{\"prefix\": \"fd00::/64\", \"allow\": [\"[fd00::2]:22\"]}]}");
	struct sockaddr_storage p16 = sa("10.1.2.3", 40000), p8 = sa("10.2.0.1", 40000);
	struct sockaddr_storage p6 = sa("fd00::5", 1), out = sa("192.168.0.1", 1);
	struct sockaddr_storage d;
	const struct cfg_peer *peer;

	/* The longest prefix, not the first. */
	peer = policy_peer(c, (struct sockaddr *)&p16);
	assert_ptr_equal(peer, &c->peers[1]);
	d = sa("10.5.5.5", 6379);
	assert_true(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("10.5.5.5", 6380);
	assert_false(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("10.5.5.5", 8000);
	assert_true(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("10.5.5.5", 8101);
	assert_false(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("10.9.9.9", 443);
	assert_true(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("10.9.9.8", 443);
	assert_false(policy_allows(peer, (struct sockaddr *)&d));
	/* Deny by default: no allow list, nothing. */
	peer = policy_peer(c, (struct sockaddr *)&p8);
	assert_ptr_equal(peer, &c->peers[0]);
	d = sa("10.5.5.5", 6379);
	assert_false(policy_allows(peer, (struct sockaddr *)&d));
	/* An address entry matches its family only. */
	peer = policy_peer(c, (struct sockaddr *)&p6);
	d = sa("fd00::2", 22);
	assert_true(policy_allows(peer, (struct sockaddr *)&d));
	d = sa("fd00::3", 22);
	assert_false(policy_allows(peer, (struct sockaddr *)&d));
	assert_null(policy_peer(c, (struct sockaddr *)&out));
	assert_false(policy_allows(NULL, (struct sockaddr *)&d));
	cfg_free(c);
}

static void test_reload_diff(void **state)
{
	struct cfg *a = load("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"allow\": [\"80\"]}]}");
	struct cfg *b = load("{\"peers\": [{\"prefix\": \"10.0.0.0/8\", \"allow\": [\"81\"]}]}");
	struct cfg_diff d;

	cfg_diff(a, b, &d);
	assert_non_null(strstr(d.live, "peers"));
	cfg_free(a);
	cfg_free(b);
}

/* A peers[] entry with "via": flows to its prefix go to that daemon's
 * control port; "serve" says which addresses beyond our own we accept. */
static void test_via_serve(void **state)
{
	struct cfg *c = load("{\"peers\": [{\"prefix\": \"10.244.2.0/24\", \"via\": \"192.168.1.2\","
			     " \"control_port\": 7102},"
			     " {\"prefix\": \"fd00:2::/64\", \"via\": \"fd00::2\"},"
			     " {\"prefix\": \"192.168.1.0/24\"}],"
			     " \"serve\": [\"10.244.1.0/24\", \"fd00:1::/64\"]}");
	struct sockaddr_storage d, out, want;

	d = sa("10.244.2.7", 6379);
	policy_daemon_addr(&c->peers[0], (struct sockaddr *)&d, &out);
	want = sa("192.168.1.2", 7102);
	assert_memory_equal(&out, &want, sizeof(struct sockaddr_in));
	d = sa("fd00:2::7", 6379);
	policy_daemon_addr(&c->peers[1], (struct sockaddr *)&d, &out);
	want = sa("fd00::2", 7002);
	assert_memory_equal(&out, &want, sizeof(struct sockaddr_in6));
	/* Without via: the destination's own host. */
	d = sa("192.168.1.9", 6379);
	policy_daemon_addr(&c->peers[2], (struct sockaddr *)&d, &out);
	want = sa("192.168.1.9", 7002);
	assert_memory_equal(&out, &want, sizeof(struct sockaddr_in));

	want = sa("192.168.1.2", 1);
	assert_true(policy_is_via(c, (struct sockaddr *)&want));
	want = sa("fd00::2", 1);
	assert_true(policy_is_via(c, (struct sockaddr *)&want));
	want = sa("192.168.1.3", 1);
	assert_false(policy_is_via(c, (struct sockaddr *)&want));
	want = sa("10.244.2.7", 1);
	assert_false(policy_is_via(c, (struct sockaddr *)&want));

	d = sa("10.244.1.5", 80);
	assert_true(policy_serves(c, (struct sockaddr *)&d));
	d = sa("fd00:1::5", 80);
	assert_true(policy_serves(c, (struct sockaddr *)&d));
	d = sa("10.244.2.5", 80);
	assert_false(policy_serves(c, (struct sockaddr *)&d));
	d = sa("10.244.1.5", 80);
	cfg_free(c);
	c = load("{}");
	assert_false(policy_serves(c, (struct sockaddr *)&d));
	cfg_free(c);
}

static void test_ports_count(void **state)
{
	struct policy_ports pp;
	unsigned i, seen = 0;

	memset(&pp, 0, sizeof(pp));
	policy_ports_count(&pp, 9003);
	policy_ports_count(&pp, 9003);
	policy_ports_count(&pp, 22);
	for (i = 0; i < POLICY_PORTS; i++) {
		uint64_t v = pp.slot[i];

		if (POLICY_SLOT_PORT(v) == 9003 && v) {
			assert_int_equal(POLICY_SLOT_COUNT(v), 2);
			seen |= 1;
		} else if (POLICY_SLOT_PORT(v) == 22 && v) {
			assert_int_equal(POLICY_SLOT_COUNT(v), 1);
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	/* Past the table: counted in other, never lost. */
	for (i = 0; i < 100; i++)
		policy_ports_count(&pp, (uint16_t)(1000 + i));
	assert_int_equal(pp.other, 100 - (POLICY_PORTS - 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_allow),
		cmocka_unit_test(test_allows),
		cmocka_unit_test(test_reload_diff),
		cmocka_unit_test(test_ports_count),
		cmocka_unit_test(test_via_serve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
