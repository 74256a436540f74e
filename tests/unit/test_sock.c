/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the socket recipes (proxy/core/sock.c): an outbound socket
 * whose mark cannot be set is refused, not returned unmarked (its
 * connection would be redirected back to the daemon), and the bind
 * recipe's IPv6-only rule for listeners, control ports and port probes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sock.h"

static bool fail_mark;
static bool fake_mark;		/* no CAP_NET_ADMIN: SO_MARK recorded, not set */
static uint32_t asked_mark;
static int last_fd = -1;

int __real_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	last_fd = fd;
	if (level == SOL_SOCKET && name == SO_MARK) {
		if (fail_mark) {
			errno = EPERM;
			return -1;
		}
		if (len == sizeof(asked_mark))
			memcpy(&asked_mark, val, sizeof(asked_mark));
		if (fake_mark)
			return 0;
	}
	return __real_setsockopt(fd, level, name, val, len);
}

/* SO_MARK needs CAP_NET_ADMIN. Without it (make check-units as a plain
 * user) the kernel cannot be asked what mark a socket carries, so the
 * test checks the value sock_open_marked() asked for instead. */
static bool can_mark(void)
{
	uint32_t mark = 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

	assert_true(fd >= 0);
	rc = __real_setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	close(fd);
	return rc == 0;
}

static void test_marked(void **state)
{
	uint32_t mark = 0;
	socklen_t len = sizeof(mark);
	int fd;

	(void)state;
	fail_mark = false;
	fake_mark = !can_mark();
	asked_mark = 0;
	fd = sock_open_marked(AF_INET, 0x534d43);
	assert_true(fd >= 0);
	assert_int_equal(asked_mark, 0x534d43);
	if (!fake_mark) {
		assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_MARK, &mark, &len), 0);
		assert_int_equal(mark, 0x534d43);
	}
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* The mark refused: no socket, and the one made is closed. */
	fail_mark = true;
	last_fd = -1;
	assert_int_equal(sock_open_marked(AF_INET, 0x534d43), -EPERM);
	assert_true(last_fd >= 0);
	assert_int_equal(fcntl(last_fd, F_GETFD), -1);
	/* No mark configured: nothing to set, nothing to refuse. */
	fd = sock_open_marked(AF_INET6, 0);
	assert_true(fd >= 0);
	close(fd);
	fail_mark = false;
	fake_mark = false;
}

static int v6only_of(const struct sockaddr_in6 *sin6, unsigned flags)
{
	int fd = sock_bind((const struct sockaddr *)sin6, sizeof(*sin6), flags), v = -1;
	socklen_t len = sizeof(v);

	if (fd < 0)
		return fd;
	assert_int_equal(getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len), 0);
	close(fd);
	return v;
}

static void test_bind(void **state)
{
	struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in6 lo = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in got;
	socklen_t len = sizeof(got);
	int fd, fd2, r;

	(void)state;
	r = v6only_of(&any, 0);
	if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL)
		skip();		/* no IPv6 here */
	assert_int_equal(r, 1);					/* listeners */
	assert_int_equal(v6only_of(&any, SOCK_BIND_DUALSTACK_ANY), 0);	/* "[::]" control */
	assert_int_equal(v6only_of(&lo, SOCK_BIND_DUALSTACK_ANY), 1);
	assert_int_equal(v6only_of(&lo, 0), 1);

	/* Two workers share a port with SOCK_BIND_REUSEPORT; a probe
	 * without it finds the port taken. */
	fd = sock_bind((const struct sockaddr *)&sin, sizeof(sin),
		       SOCK_BIND_NONBLOCK | SOCK_BIND_REUSEPORT);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&got, &len), 0);
	fd2 = sock_bind((const struct sockaddr *)&got, sizeof(got), SOCK_BIND_REUSEPORT);
	assert_true(fd2 >= 0);
	assert_false(fcntl(fd2, F_GETFL) & O_NONBLOCK);
	close(fd2);
	assert_int_equal(sock_bind((const struct sockaddr *)&got, sizeof(got), 0), -EADDRINUSE);
	close(fd);
}

static unsigned port_of(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	return ntohs(sin.sin_port);
}

static void wait_fd(int fd, short events)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	assert_int_equal(poll(&pfd, 1, 5000), 1);
}

/*
 * sock_connect_from() keeps the source's port, also over a TIME_WAIT of
 * its own on the very tuple (we close first: the daemon's case when the
 * client did), and takes a port of the kernel's when a listener holds the
 * one asked for.
 */
static void test_connect_from(void **state)
{
	struct sockaddr_in dest = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in src = dest;
	unsigned flags, sport;
	int l, fd, a, held, round;
	char c;

	(void)state;
	l = sock_bind((const struct sockaddr *)&dest, sizeof(dest), 0);
	assert_true(l >= 0);
	assert_int_equal(listen(l, 4), 0);
	dest.sin_port = htons(port_of(l));
	/* A free port to send from. */
	fd = sock_bind((const struct sockaddr *)&src, sizeof(src), 0);
	assert_true(fd >= 0);
	sport = port_of(fd);
	close(fd);
	src.sin_port = htons(sport);

	for (round = 0; round < 2; round++) {
		flags = 0;
		fd = sock_connect_from((struct sockaddr *)&dest, (struct sockaddr *)&src, 0, &flags);
		assert_true(fd >= 0);
		assert_true(flags & SOCK_FROM_PORT_KEPT);
		assert_int_equal(port_of(fd), sport);
		a = accept(l, NULL, NULL);
		assert_true(a >= 0);
		/* We close first: our socket ends in TIME_WAIT. */
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
		assert_int_equal(read(a, &c, 1), 0);
		close(a);
		wait_fd(fd, POLLIN);
		assert_int_equal(read(fd, &c, 1), 0);
		close(fd);
	}

	/* A listener on the port asked for: the kernel's port instead. */
	held = sock_bind((const struct sockaddr *)&src, sizeof(src), 0);
	assert_true(held >= 0);
	assert_int_equal(listen(held, 1), 0);
	flags = SOCK_FROM_PORT_KEPT;
	fd = sock_connect_from((struct sockaddr *)&dest, (struct sockaddr *)&src, 0, &flags);
	assert_true(fd >= 0);
	assert_false(flags & SOCK_FROM_PORT_KEPT);
	assert_int_not_equal(port_of(fd), sport);
	close(fd);
	close(held);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marked),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_connect_from),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
