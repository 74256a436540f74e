/* SPDX-License-Identifier: MIT */
/* The daemon's socket recipes (sock.h). */
#include <errno.h>
#include <netinet/in.h>
#include <unistd.h>

#include "addr.h"
#include "sock.h"

int sock_open_marked(int family, uint32_t mark)
{
	int fd, err;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int sock_connect(int fd, const struct sockaddr *dest)
{
	if (connect(fd, dest, addr_len(dest)) < 0 && errno != EINPROGRESS)
		return -errno;
	return 0;
}

int sock_bind(const struct sockaddr *sa, socklen_t len, unsigned flags)
{
	int one = 1, fd, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC |
		    (flags & SOCK_BIND_NONBLOCK ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	/* Best effort, as ever: a kernel without one of these still binds. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (flags & SOCK_BIND_REUSEPORT)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (sa->sa_family == AF_INET6) {
		int v6only = !((flags & SOCK_BIND_DUALSTACK_ANY) && addr_is_any(sa));

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	}
	if (bind(fd, sa, len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int sock_set_rst_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ? -errno : 0;
}
