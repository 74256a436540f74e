/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the address helpers (proxy/core/addr.c): the route source
 * toward a destination is the kernel's own choice, its port cleared.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "core/addr.h"

static void test_route_src_v4(void **state)
{
	struct sockaddr_in dest = { .sin_family = AF_INET, .sin_port = htons(80) };
	struct sockaddr_storage src;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&src;

	(void)state;
	dest.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&src, 0xa5, sizeof(src));
	assert_int_equal(addr_route_src((struct sockaddr *)&dest, &src), 0);
	assert_int_equal(s4->sin_family, AF_INET);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(s4->sin_port, 0);
}

/* ::1 where the sandbox has IPv6; else the kernel's error. */
static void test_route_src_v6(void **state)
{
	struct sockaddr_in6 dest = { .sin6_family = AF_INET6, .sin6_port = htons(80),
				     .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_storage src;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&src;
	int err;

	(void)state;
	memset(&src, 0xa5, sizeof(src));
	err = addr_route_src((struct sockaddr *)&dest, &src);
	if (err) {
		assert_true(err == -EAFNOSUPPORT || err == -EADDRNOTAVAIL || err == -ENETUNREACH);
		return;
	}
	assert_int_equal(s6->sin6_family, AF_INET6);
	assert_true(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	assert_int_equal(s6->sin6_port, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_src_v4),
		cmocka_unit_test(test_route_src_v6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
