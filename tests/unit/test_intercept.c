/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of the eBPF intercept's maps (proxy/intercept/
 * intercept.c): the 4-tuple key intercept_origdst() builds from an
 * accepted socket's addresses must be the one the sock_ops program wrote
 * (16-byte addresses, IPv4 v4-mapped, ports in network order), and the
 * entry it reads back comes out as the original destination of its
 * family. bpf() is wrapped: the programs themselves are tested against a
 * real kernel by tests/integration/t_ebpf_*.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/addr.h"
#include "intercept/intercept.h"

/* What the wrapped map calls saw and answer. */
static struct icpt_tuple seen_key;
static struct icpt_orig answer;
static int answer_err;		/* errno to fail with, or 0 */
static unsigned n_lookup, n_delete, n_lookup_and_delete;

int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value);
int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	n_lookup++;
	memcpy(&seen_key, key, sizeof(seen_key));
	if (answer_err) {
		errno = answer_err;
		return -1;
	}
	memcpy(value, &answer, sizeof(answer));
	return 0;
}

int __wrap_bpf_map_delete_elem(int fd, const void *key);
int __wrap_bpf_map_delete_elem(int fd, const void *key)
{
	n_delete++;
	assert_memory_equal(key, &seen_key, sizeof(seen_key));
	return 0;
}

int __wrap_bpf_map_lookup_and_delete_elem(int fd, const void *key, void *value);
int __wrap_bpf_map_lookup_and_delete_elem(int fd, const void *key, void *value)
{
	n_lookup_and_delete++;
	n_lookup--;	/* counted as one call below */
	return __wrap_bpf_map_lookup_elem(fd, key, value);
}

static struct sockaddr_storage sa(int family, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };

	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
	}
	return ss;
}

static void addr16(uint8_t out[16], const char *ip6)
{
	assert_int_equal(inet_pton(AF_INET6, ip6, out), 1);
}

static int setup(void **state)
{
	memset(&seen_key, 0, sizeof(seen_key));
	memset(&answer, 0, sizeof(answer));
	answer_err = 0;
	n_lookup = n_delete = n_lookup_and_delete = 0;
	return 0;
}

/* An IPv4 client (or a dual-stack one connecting to a v4-mapped address,
 * which reaches the IPv4 listener as IPv4): v4-mapped key, IPv4 answer. */
static void test_v4_tuple(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7, .lookup_and_delete = true };
	struct sockaddr_storage local = sa(AF_INET, "127.0.0.1", 7001);
	struct sockaddr_storage peer = sa(AF_INET, "127.0.0.1", 40000);
	struct sockaddr_storage dst, want = sa(AF_INET, "10.66.1.2", 9000);
	struct icpt_tuple k = { 0 };

	addr16(answer.addr, "::ffff:10.66.1.2");
	answer.port = htons(9000);
	answer.family = AF_INET;
	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), 0);
	addr16(k.src, "::ffff:127.0.0.1");
	addr16(k.dst, "::ffff:127.0.0.1");
	k.sport = htons(40000);
	k.dport = htons(7001);
	assert_memory_equal(&seen_key, &k, sizeof(k));
	assert_true(addr_equal((struct sockaddr *)&dst, (struct sockaddr *)&want));
	assert_int_equal(n_lookup_and_delete, 1);
	assert_int_equal(n_delete, 0);
}

static void test_v6_tuple(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7, .lookup_and_delete = true };
	struct sockaddr_storage local = sa(AF_INET6, "::1", 7001);
	struct sockaddr_storage peer = sa(AF_INET6, "::1", 40001);
	struct sockaddr_storage dst, want = sa(AF_INET6, "fd66::2", 9000);
	struct icpt_tuple k = { 0 };

	addr16(answer.addr, "fd66::2");
	answer.port = htons(9000);
	answer.family = AF_INET6;
	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), 0);
	addr16(k.src, "::1");
	addr16(k.dst, "::1");
	k.sport = htons(40001);
	k.dport = htons(7001);
	assert_memory_equal(&seen_key, &k, sizeof(k));
	assert_true(addr_equal((struct sockaddr *)&dst, (struct sockaddr *)&want));
}

/* Before Linux 5.14: a lookup, then a delete of the same key. */
static void test_lookup_then_delete(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7, .lookup_and_delete = false };
	struct sockaddr_storage local = sa(AF_INET, "127.0.0.1", 7001);
	struct sockaddr_storage peer = sa(AF_INET, "127.0.0.1", 40002);
	struct sockaddr_storage dst;

	answer.family = AF_INET;
	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), 0);
	assert_int_equal(n_lookup, 1);
	assert_int_equal(n_delete, 1);
	assert_int_equal(n_lookup_and_delete, 0);
}

/* No entry: a connection not redirected (made to the listener itself). */
static void test_no_entry(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7, .lookup_and_delete = false };
	struct sockaddr_storage local = sa(AF_INET, "127.0.0.1", 7001);
	struct sockaddr_storage peer = sa(AF_INET, "127.0.0.1", 40003);
	struct sockaddr_storage dst;

	answer_err = ENOENT;
	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), -ENOENT);
	assert_int_equal(n_delete, 0);
}

static void test_bad_family(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7 };
	struct sockaddr_storage local = { .ss_family = AF_UNIX }, peer = { .ss_family = AF_UNIX };
	struct sockaddr_storage dst;

	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), -EAFNOSUPPORT);
	assert_int_equal(n_lookup + n_lookup_and_delete, 0);
}

/* Our end of a redirected connection without getsockname(): the listener
 * the hooks send the peer's family to, in the peer's form; nothing for a
 * family they send nowhere. The key intercept_origdst() builds from it is
 * the one the sock_ops program wrote. */
static void test_local_v4(void **state)
{
	struct intercept ic = { .by_tuple_fd = 7, .lookup_and_delete = true, .has_to4 = true };
	struct sockaddr_storage peer = sa(AF_INET, "127.0.0.1", 40004);
	struct sockaddr_storage local, dst, want = sa(AF_INET, "127.0.0.1", 7001);
	struct icpt_tuple k = { 0 };

	ic.to4 = sa(AF_INET, "127.0.0.1", 7001);
	ic.to6 = sa(AF_INET6, "::1", 7002);
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&peer, &local), 0);
	assert_true(addr_equal((struct sockaddr *)&local, (struct sockaddr *)&want));
	answer.family = AF_INET;
	assert_int_equal(intercept_origdst(&ic, (struct sockaddr *)&local, (struct sockaddr *)&peer,
					   &dst), 0);
	addr16(k.src, "::ffff:127.0.0.1");
	addr16(k.dst, "::ffff:127.0.0.1");
	k.sport = htons(40004);
	k.dport = htons(7001);
	assert_memory_equal(&seen_key, &k, sizeof(k));
}

static void test_local_v6_and_mapped(void **state)
{
	struct intercept ic = { .has_to4 = true, .has_to6 = true };
	struct sockaddr_storage peer6 = sa(AF_INET6, "::1", 40005);
	struct sockaddr_storage mapped = sa(AF_INET6, "::ffff:127.0.0.1", 40006);
	struct sockaddr_storage local, want6 = sa(AF_INET6, "::1", 7002);
	struct sockaddr_storage want_mapped = sa(AF_INET6, "::ffff:127.0.0.1", 7001);

	ic.to4 = sa(AF_INET, "127.0.0.1", 7001);
	ic.to6 = sa(AF_INET6, "::1", 7002);
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&peer6, &local), 0);
	assert_true(addr_equal((struct sockaddr *)&local, (struct sockaddr *)&want6));
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&mapped, &local), 0);
	assert_int_equal(local.ss_family, AF_INET6);
	assert_true(addr_equal((struct sockaddr *)&local, (struct sockaddr *)&want_mapped));
}

static void test_local_none(void **state)
{
	struct intercept ic = { .has_to4 = true };
	struct sockaddr_storage peer6 = sa(AF_INET6, "::1", 40007);
	struct sockaddr_storage unix_peer = { .ss_family = AF_UNIX }, local;

	ic.to4 = sa(AF_INET, "127.0.0.1", 7001);
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&peer6, &local), -ENOENT);
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&unix_peer, &local), -ENOENT);
	ic.has_to4 = false;
	peer6 = sa(AF_INET, "127.0.0.1", 40008);
	assert_int_equal(intercept_local(&ic, (struct sockaddr *)&peer6, &local), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_v4_tuple, setup),
		cmocka_unit_test_setup(test_v6_tuple, setup),
		cmocka_unit_test_setup(test_lookup_then_delete, setup),
		cmocka_unit_test_setup(test_no_entry, setup),
		cmocka_unit_test_setup(test_bad_family, setup),
		cmocka_unit_test_setup(test_local_v4, setup),
		cmocka_unit_test_setup(test_local_v6_and_mapped, setup),
		cmocka_unit_test_setup(test_local_none, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
