/* SPDX-License-Identifier: MIT */
/* Unit parsers of config/: sizes, durations, addresses, prefixes, modes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cfg.h"
#include "cfg-int.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)

struct num_case {
	const char *in;
	int rc;
	uint64_t want;
};

static void test_sizes(void **state)
{
	static const struct num_case cases[] = {
		{ "0", 0, 0 },
		{ "512", 0, 512 },
		{ "512B", 0, 512 },
		{ "512b", 0, 512 },
		{ "64K", 0, 64 * KiB },
		{ "64k", 0, 64 * KiB },
		{ "64KiB", 0, 64 * KiB },
		{ "64kib", 0, 64 * KiB },
		{ "64 KiB", 0, 64 * KiB },
		{ "64KB", 0, 64000 },
		{ "64kB", 0, 64000 },
		{ "1M", 0, MiB },
		{ "1MiB", 0, MiB },
		{ "1MB", 0, 1000000 },
		{ "2GiB", 0, 2 * GiB },
		{ "2G", 0, 2 * GiB },
		{ "3GB", 0, 3000000000ULL },
		{ "1TiB", 0, TiB },
		{ "1TB", 0, 1000000000000ULL },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16777215TiB", 0, 16777215ULL * TiB },
		/* refused */
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "KiB", -EINVAL, 0 },
		{ "1.5MiB", -EINVAL, 0 },
		{ "1,5MiB", -EINVAL, 0 },
		{ "64XB", -EINVAL, 0 },
		{ "64KiBx", -EINVAL, 0 },
		{ "64KiB ", -EINVAL, 0 },
		{ "64 K iB", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999999999999999", -ERANGE, 0 },
		{ "16777216TiB", -ERANGE, 0 },
		{ "18446744073709551615K", -ERANGE, 0 },
	};
	uint64_t v;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		rc = cfg_parse_size(cases[i].in, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].want))
			fail_msg("size \"%s\": rc %d value %llu, want rc %d value %llu", cases[i].in,
				 rc, (unsigned long long)v, cases[i].rc,
				 (unsigned long long)cases[i].want);
		if (rc < 0)
			assert_int_equal(v, 12345);	/* untouched on failure */
	}
	assert_int_equal(cfg_parse_size(NULL, &v), -EINVAL);
}

static void test_size_reasons(void **state)
{
	const char *why = NULL;
	uint64_t v;

	assert_int_equal(cfg__parse_size("1.5MiB", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "fractions"));
	assert_int_equal(cfg__parse_size("-3K", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "negative"));
	assert_int_equal(cfg__parse_size("3Q", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "unknown unit"));
	assert_int_equal(cfg__parse_size("", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "empty"));
	assert_int_equal(cfg__parse_size("99999999999999999999", &v, &why), -ERANGE);
	assert_non_null(strstr(why, "too large"));
}

static void test_durations(void **state)
{
	static const struct num_case cases[] = {
		{ "0", 0, 0 },
		{ "000", 0, 0 },
		{ "0s", 0, 0 },
		{ "250ms", 0, 250 },
		{ "1s", 0, 1000 },
		{ "30s", 0, 30000 },
		{ "5m", 0, 300000 },
		{ "5min", 0, 300000 },
		{ "1h", 0, 3600000 },
		{ "2d", 0, 172800000 },
		{ "1h30m", 0, 5400000 },
		{ "1h 30m", 0, 5400000 },
		{ "1m 30s 250ms", 0, 90250 },
		{ "30 s", 0, 30000 },
		{ "18446744073709551615ms", 0, UINT64_MAX },
		/* refused */
		{ "", -EINVAL, 0 },
		{ "30", -EINVAL, 0 },
		{ "1s30", -EINVAL, 0 },
		{ "-1s", -EINVAL, 0 },
		{ "+1s", -EINVAL, 0 },
		{ " 1s", -EINVAL, 0 },
		{ "1s ", -EINVAL, 0 },
		{ "1.5s", -EINVAL, 0 },
		{ "30S", -EINVAL, 0 },
		{ "30M", -EINVAL, 0 },
		{ "30sec", -EINVAL, 0 },
		{ "30us", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "1s,2s", -EINVAL, 0 },
		{ "18446744073709551616ms", -ERANGE, 0 },
		{ "18446744073709551615s", -ERANGE, 0 },
		{ "213503982334601d", -ERANGE, 0 },
		{ "18446744073709551615ms 1ms", -ERANGE, 0 },
	};
	uint64_t v;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		rc = cfg_parse_duration(cases[i].in, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].want))
			fail_msg("duration \"%s\": rc %d value %llu, want rc %d value %llu",
				 cases[i].in, rc, (unsigned long long)v, cases[i].rc,
				 (unsigned long long)cases[i].want);
		if (rc < 0)
			assert_int_equal(v, 12345);
	}
	assert_int_equal(cfg_parse_duration(NULL, &v), -EINVAL);
}

static void test_duration_reasons(void **state)
{
	const char *why = NULL;
	uint64_t v;

	assert_int_equal(cfg__parse_duration("30", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "missing unit"));
	assert_int_equal(cfg__parse_duration("30S", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "lower case"));
	assert_int_equal(cfg__parse_duration("-2s", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "negative"));
	assert_int_equal(cfg__parse_duration("1.5s", &v, &why), -EINVAL);
	assert_non_null(strstr(why, "fractions"));
}

static void test_addr_v4(void **state)
{
	const struct sockaddr_in *sin;
	struct cfg_addr a;

	assert_int_equal(cfg_parse_addr("127.0.0.1:7001", &a), 0);
	sin = (const struct sockaddr_in *)&a.ss;
	assert_int_equal(a.len, sizeof(struct sockaddr_in));
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 7001);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0x7f000001);

	assert_int_equal(cfg_parse_addr("0.0.0.0:65535", &a), 0);
	assert_int_equal(ntohs(sin->sin_port), 65535);
	assert_int_equal(sin->sin_addr.s_addr, 0);
}

static void test_addr_v6(void **state)
{
	const struct sockaddr_in6 *sin6;
	struct in6_addr want;
	struct cfg_addr a;

	assert_int_equal(cfg_parse_addr("[::1]:7001", &a), 0);
	sin6 = (const struct sockaddr_in6 *)&a.ss;
	assert_int_equal(a.len, sizeof(struct sockaddr_in6));
	assert_int_equal(sin6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(sin6->sin6_port), 7001);
	assert_true(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));

	assert_int_equal(cfg_parse_addr("[fd00:1::2]:1", &a), 0);
	inet_pton(AF_INET6, "fd00:1::2", &want);
	assert_memory_equal(&sin6->sin6_addr, &want, sizeof(want));
	assert_int_equal(ntohs(sin6->sin6_port), 1);
}

static void test_addr_errors(void **state)
{
	static const struct {
		const char *in;
		const char *why;
	} cases[] = {
		{ "", "empty" },
		{ "127.0.0.1", "missing port" },
		{ "127.0.0.1:", "missing port" },
		{ "127.0.0.1:0", "port 0" },
		{ "127.0.0.1:65536", "1 to 65535" },
		{ "127.0.0.1:-1", "1 to 65535" },
		{ "127.0.0.1:80x", "1 to 65535" },
		{ "127.0.0.1: 80", "1 to 65535" },
		{ "127.1:80", "IPv4" },
		{ "256.0.0.1:80", "IPv4" },
		{ "localhost:80", "host names" },
		{ "::1:80", "brackets" },
		{ "[::1]", "missing port" },
		{ "[::1]80", "missing port" },
		{ "[::1:80", "missing ']'" },
		{ "[1.2.3.4]:80", "IPv6" },
		{ "[fe80::1%eth0]:80", "scope" },
		{ "[]:80", "IPv6" },
	};
	struct cfg_addr a;
	const char *why;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		rc = cfg__parse_addr(cases[i].in, &a, &why);
		if (rc != -EINVAL || !why || !strstr(why, cases[i].why))
			fail_msg("addr \"%s\": rc %d why \"%s\", want -EINVAL and \"%s\"",
				 cases[i].in, rc, why ? why : "(null)", cases[i].why);
		assert_int_equal(cfg_parse_addr(cases[i].in, &a), -EINVAL);
	}
}

static void test_prefix(void **state)
{
	struct cfg_prefix p;
	uint8_t v6[16];

	assert_int_equal(cfg_parse_prefix("10.0.0.0/24", &p), 0);
	assert_int_equal(p.family, AF_INET);
	assert_int_equal(p.len, 24);
	assert_memory_equal(p.addr, "\x0a\x00\x00\x00", 4);

	assert_int_equal(cfg_parse_prefix("10.1.2.3", &p), 0);
	assert_int_equal(p.len, 32);
	assert_memory_equal(p.addr, "\x0a\x01\x02\x03", 4);

	assert_int_equal(cfg_parse_prefix("0.0.0.0/0", &p), 0);
	assert_int_equal(p.len, 0);

	assert_int_equal(cfg_parse_prefix("fd00:1::/64", &p), 0);
	assert_int_equal(p.family, AF_INET6);
	assert_int_equal(p.len, 64);
	inet_pton(AF_INET6, "fd00:1::", v6);
	assert_memory_equal(p.addr, v6, 16);

	assert_int_equal(cfg_parse_prefix("::1", &p), 0);
	assert_int_equal(p.len, 128);

	/* 10.0.0.128/25 has no host bits; /24 would. */
	assert_int_equal(cfg_parse_prefix("10.0.0.128/25", &p), 0);
	assert_int_equal(cfg_parse_prefix("10.0.0.128/24", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.1/24", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("fd00::1/64", &p), -EINVAL);
	/* bit 64 is the top bit of the fifth group, bit 65 the next */
	assert_int_equal(cfg_parse_prefix("fd00:0:0:0:8000::/64", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("fd00:0:0:0:8000::/65", &p), 0);
	assert_int_equal(cfg_parse_prefix("fd00:0:0:0:4000::/65", &p), -EINVAL);

	assert_int_equal(cfg_parse_prefix("", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/33", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/-1", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/24x", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/24/1", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0/24", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("fd00::/129", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("[fd00::]/64", &p), -EINVAL);
	assert_int_equal(cfg_parse_prefix("10.0.0.0/99999999999999999999999", &p), -EINVAL);
}

static void test_prefix_mask(void **state)
{
	struct cfg_prefix p, m;
	char buf[64];

	assert_int_equal(cfg__parse_prefix("10.1.2.3/12", &p, NULL), 0);
	assert_true(cfg__prefix_mask(&p, &m));
	cfg__fmt_prefix(buf, sizeof(buf), &m);
	assert_string_equal(buf, "10.0.0.0/12");

	assert_int_equal(cfg__parse_prefix("fd00::ff00/120", &p, NULL), 0);
	assert_false(cfg__prefix_mask(&p, &m));
	assert_int_equal(cfg__parse_prefix("fd00::1ff/120", &p, NULL), 0);
	assert_true(cfg__prefix_mask(&p, &m));
	cfg__fmt_prefix(buf, sizeof(buf), &m);
	assert_string_equal(buf, "fd00::100/120");
}

static void test_mode(void **state)
{
	const char *why = NULL;
	mode_t m = 0;

	assert_int_equal(cfg__parse_mode("0660", &m, NULL), 0);
	assert_int_equal(m, 0660);
	assert_int_equal(cfg__parse_mode("600", &m, NULL), 0);
	assert_int_equal(m, 0600);
	assert_int_equal(cfg__parse_mode("0", &m, NULL), 0);
	assert_int_equal(m, 0);
	assert_int_equal(cfg__parse_mode("0000000000000777", &m, NULL), 0);
	assert_int_equal(m, 0777);
	assert_int_equal(cfg__parse_mode("1777", &m, &why), -ERANGE);
	assert_non_null(strstr(why, "0777"));
	assert_int_equal(cfg__parse_mode("0999", &m, &why), -EINVAL);
	assert_non_null(strstr(why, "octal"));
	assert_int_equal(cfg__parse_mode("", &m, NULL), -EINVAL);
	assert_int_equal(cfg__parse_mode("0o660", &m, NULL), -EINVAL);
	assert_int_equal(cfg__parse_mode("77777777777777777777777", &m, NULL), -ERANGE);
}

static void test_formatters(void **state)
{
	char b[32];

	cfg__fmt_size(b, sizeof(b), 0);
	assert_string_equal(b, "0B");
	cfg__fmt_size(b, sizeof(b), 1000);
	assert_string_equal(b, "1000B");
	cfg__fmt_size(b, sizeof(b), 16 * KiB);
	assert_string_equal(b, "16KiB");
	cfg__fmt_size(b, sizeof(b), 64 * MiB);
	assert_string_equal(b, "64MiB");
	cfg__fmt_size(b, sizeof(b), 3 * GiB);
	assert_string_equal(b, "3GiB");
	cfg__fmt_size(b, sizeof(b), 1536 * KiB);
	assert_string_equal(b, "1536KiB");

	cfg__fmt_duration(b, sizeof(b), 0);
	assert_string_equal(b, "0");
	cfg__fmt_duration(b, sizeof(b), 250);
	assert_string_equal(b, "250ms");
	cfg__fmt_duration(b, sizeof(b), 2000);
	assert_string_equal(b, "2s");
	cfg__fmt_duration(b, sizeof(b), 3600000);
	assert_string_equal(b, "1h");
	cfg__fmt_duration(b, sizeof(b), 90000);
	assert_string_equal(b, "90s");
}

static void test_transport_names(void **state)
{
	assert_string_equal(cfg_transport_name(CFG_TRANSPORT_AUTO), "auto");
	assert_string_equal(cfg_transport_name(CFG_TRANSPORT_RDMA), "rdma");
	assert_string_equal(cfg_transport_name(CFG_TRANSPORT_SHM), "shm");
	assert_string_equal(cfg_transport_name(CFG_TRANSPORT_TCP), "tcp");
	assert_string_equal(cfg_transport_name((enum cfg_transport)42), "unknown");
}

static void test_buf_clean(void **state)
{
	struct cfg__buf b = { 0 };

	assert_int_equal(cfg__buf_add_clean(&b, "a\nb\x7f\xff\xc3\xa9", 7), 0);
	assert_string_equal(b.s, "a\\x0ab\\x7f\\xff\xc3\xa9");
	cfg__buf_truncate(&b, 0);
	/* a truncated sequence and an overlong '/' are not valid UTF-8 */
	assert_int_equal(cfg__buf_add_clean(&b, "\xe2\x82\xc0\xaf", 4), 0);
	assert_string_equal(b.s, "\\xe2\\x82\\xc0\\xaf");
	cfg__buf_free(&b);
	assert_null(b.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_size_reasons),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_duration_reasons),
		cmocka_unit_test(test_addr_v4),
		cmocka_unit_test(test_addr_v6),
		cmocka_unit_test(test_addr_errors),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_prefix_mask),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_formatters),
		cmocka_unit_test(test_transport_names),
		cmocka_unit_test(test_buf_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
