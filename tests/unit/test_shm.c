/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shm transport's handshake address (proxy/transport/shm):
 * where the rendezvous socket is, which an accept carries (CLC_TLV_SHM_NAME):
 * its whole path, or from a daemon of before a name in the client's
 * shm.dir. The codec carries it as opaque bytes (test_clc.c);
 * shm_addr_check() is what refuses one, and the handshake then declines
 * the whole message as malformed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "smc/transport.h"
#include "transport/shm/shm.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int check(const char *name, size_t len)
{
	return shm_name_check((const uint8_t *)name, len);
}

static void test_shm_names(void **state)
{
	static const char *const bad[] = {
		".", "..", "a/b", "/", "../x", "a b", "a\nb", "a\\b", "a:b", "a*b",
		"\xc3\xa9", "a\x7f", "~", "a%b",
	};
	static const char *const good[] = {
		"a", "...", ".a", "a..b", "-x", "_", "A-Z.a_z-09", "smcproxy.sock",
	};
	char name[SHM_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(check(bad[i], strlen(bad[i])), -EBADMSG);
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_int_equal(check(good[i], strlen(good[i])), 0);
	/* A NUL inside the name. */
	assert_int_equal(check("a\0b", 3), -EBADMSG);
	/* Empty, and the longest. */
	assert_int_equal(check("", 0), -EBADMSG);
	memset(name, 'n', sizeof(name));
	assert_int_equal(check(name, SHM_NAME_MAX), 0);
	assert_int_equal(check(name, SHM_NAME_MAX + 1), -EBADMSG);
	/* What the encoder-side checks of the codec used to refuse. */
	assert_int_equal(check("sm/p-1.a_B", 10), -EBADMSG);
	assert_int_equal(check(".", 1), -EBADMSG);
}

static int check_addr(const char *a)
{
	return shm_addr_check((const uint8_t *)a, strlen(a));
}

/*
 * Guards a fixed bug (two daemons whose shm.dir differ fell back with
 * "internal"): the accept now names the rendezvous socket by its whole
 * path, which the check takes when every component is a good name, as
 * well as a bare name from a daemon of before; nothing that could leave
 * the named directory, and nothing longer than sun_path holds.
 */
static void test_shm_paths(void **state)
{
	static const char *const bad[] = {
		"/", "//x", "/a//b", "/a/", "/a/./b", "/a/../b", "/..", "/.", "/a b/c",
		"/a/b\n", "/a/\xc3\xa9", "/a:b/c", "a/b", "./a", "../a",
	};
	static const char *const good[] = {
		"/a", "/run/smcproxy/smcproxyd-1-0.sock", "/tmp/smcp-it.AbC123/x.sock",
		"/a/.../b", "/.a/b", "smcproxyd-1-0.sock",
	};
	char path[SHM_PATH_MAX + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(check_addr(bad[i]), -EBADMSG);
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_int_equal(check_addr(good[i]), 0);
	assert_int_equal(shm_addr_check((const uint8_t *)"/a\0b", 4), -EBADMSG);
	assert_int_equal(shm_addr_check((const uint8_t *)"", 0), -EBADMSG);
	/* The longest path sun_path holds, and one byte more. */
	memset(path, 'p', sizeof(path));
	for (size_t i = 0; i < sizeof(path); i += 50)
		path[i] = '/';
	assert_int_equal(shm_addr_check((const uint8_t *)path, SHM_PATH_MAX), 0);
	assert_int_equal(shm_addr_check((const uint8_t *)path, SHM_PATH_MAX + 1), -EBADMSG);
}

/* The registry hands the handshake this check for the shm name TLV. */
static void test_registered(void **state)
{
	const struct smc_transport_ops *t = smc_transport_by_tlv(CLC_TLV_SHM_NAME);

	(void)state;
	assert_ptr_equal(t, &shm_ops);
	assert_ptr_equal(smc_transport_by_clc(CLC_TR_SHM), &shm_ops);
	assert_ptr_equal(t->addr_check, shm_addr_check);
	assert_ptr_equal(smc_transport_at(0), &shm_ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_names),
		cmocka_unit_test(test_shm_paths),
		cmocka_unit_test(test_registered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
