/* SPDX-License-Identifier: MIT */
/* The daemon's socket recipes (sock.h). */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
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

/* One try of sock_connect_from(): src's port, or any (IP_BIND_ADDRESS_NO_PORT). */
static int connect_from_once(const struct sockaddr *dest, const struct sockaddr *src,
			     uint32_t mark, bool transparent, bool any_port)
{
	struct sockaddr_storage ss;
	int fd, err, one = 1;

	fd = sock_open_marked(dest->sa_family, mark);
	if (fd < 0)
		return fd;
	memcpy(&ss, src, addr_len(src));
	if (transparent &&
	    (dest->sa_family == AF_INET6 ?
	     setsockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) :
	     setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)))) {
		err = -errno;
		goto out_close;
	}
	if (any_port) {
		/* The port is chosen at connect(), for the whole 4-tuple,
		 * not at bind() for the address alone. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (ss.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		else
			((struct sockaddr_in *)&ss)->sin_port = 0;
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	}
	if (bind(fd, (struct sockaddr *)&ss, addr_len(src)) < 0) {
		err = -errno;
		goto out_close;
	}
	err = sock_connect(fd, dest);
	if (err)
		goto out_close;
	return fd;

out_close:
	close(fd);
	return err;
}

int sock_connect_from(const struct sockaddr *dest, const struct sockaddr *src, uint32_t mark,
		      unsigned *flags)
{
	bool transparent = *flags & SOCK_FROM_TRANSPARENT;
	int fd;

	*flags &= ~SOCK_FROM_PORT_KEPT;
	if (addr_port(src)) {
		fd = connect_from_once(dest, src, mark, transparent, false);
		if (fd >= 0) {
			*flags |= SOCK_FROM_PORT_KEPT;
			return fd;
		}
		/* Held: bound by a listener (EADDRINUSE), or the tuple
		 * taken by a live connection (EADDRNOTAVAIL). */
		if (fd != -EADDRINUSE && fd != -EADDRNOTAVAIL)
			return fd;
	}
	return connect_from_once(dest, src, mark, transparent, true);
}

bool sock_connect_done(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLOUT | POLLERR | POLLHUP));
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
	/* Not best effort: without it (CAP_NET_ADMIN) no TPROXY'd connection
	 * ever reaches the socket, and the daemon must say so at start. */
	if ((flags & SOCK_BIND_TRANSPARENT) &&
	    (sa->sa_family == AF_INET6 ?
	     setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) :
	     setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one))) < 0)
		goto out_err;
	if (bind(fd, sa, len) < 0)
		goto out_err;
	return fd;

out_err:
	err = -errno;
	close(fd);
	return err;
}

int sock_set_rst_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ? -errno : 0;
}

bool sock_tcp_holds_tuple(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	/* A socket whose peer's FIN came after ours went to TIME_WAIT in the
	 * kernel and reads as CLOSE here, even before we read the EOF. */
	return ti.tcpi_state != TCP_CLOSE && ti.tcpi_state != TCP_TIME_WAIT;
}

/*
 * One request to a kernel netlink family (proto) and its one answer, into
 * resp (cap bytes): the answer's length, checked to hold one whole message,
 * or -errno: the socket's, an NLMSG_ERROR's own error, -EPROTO for an answer
 * that is short, malformed or an error without one. The caller checks the
 * type it expects. The kernel answers these families within send().
 */
ssize_t sock_nl_ask(int proto, const void *req, size_t len, void *resp, size_t cap)
{
	const struct nlmsghdr *nlh = resp;
	ssize_t n;
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return -errno;
	if (send(fd, req, len, 0) < 0 || (n = recv(fd, resp, cap, 0)) < 0) {
		n = -errno;
		goto out_close;
	}
	if (n < (ssize_t)sizeof(*nlh) || !NLMSG_OK(nlh, (size_t)n)) {
		n = -EPROTO;
	} else if (nlh->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(nlh);

		n = nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? e->error : -EPROTO;
	}
out_close:
	close(fd);
	return n;
}

static void sock_diag_fill_id(struct inet_diag_sockid *id, const struct sockaddr *local,
			      const struct sockaddr *remote)
{
	id->idiag_sport = htons(addr_port(local));
	id->idiag_dport = htons(addr_port(remote));
	if (local->sa_family == AF_INET6) {
		memcpy(id->idiag_src, &((const struct sockaddr_in6 *)(const void *)local)->sin6_addr, 16);
		memcpy(id->idiag_dst, &((const struct sockaddr_in6 *)(const void *)remote)->sin6_addr, 16);
	} else {
		memcpy(id->idiag_src, &((const struct sockaddr_in *)(const void *)local)->sin_addr, 4);
		memcpy(id->idiag_dst, &((const struct sockaddr_in *)(const void *)remote)->sin_addr, 4);
	}
	id->idiag_cookie[0] = id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

int sock_tuple_mark(const struct sockaddr *local, const struct sockaddr *remote, uint32_t *mark)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
		.nlh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.req = { .sdiag_family = local->sa_family, .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = ~0u },
	};
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	} r;
	struct inet_diag_msg *msg;
	struct rtattr *rta;
	ssize_t n;
	int left;

	if (local->sa_family != remote->sa_family)
		return -EINVAL;
	sock_diag_fill_id(&q.req.id, local, remote);
	n = sock_nl_ask(NETLINK_SOCK_DIAG, &q, sizeof(q), &r, sizeof(r));
	if (n < 0)
		return (int)n;
	if (r.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    r.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*msg)))
		return -EPROTO;
	msg = NLMSG_DATA(&r.nlh);
	if (msg->idiag_state == TCP_TIME_WAIT || msg->idiag_state == TCP_CLOSE)
		return -ENOENT;
	left = (int)(r.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(*msg)));
	for (rta = (struct rtattr *)(msg + 1); RTA_OK(rta, left); rta = RTA_NEXT(rta, left)) {
		if (rta->rta_type == INET_DIAG_MARK && RTA_PAYLOAD(rta) >= sizeof(*mark)) {
			memcpy(mark, RTA_DATA(rta), sizeof(*mark));
			return 0;
		}
	}
	return -EOPNOTSUPP;
}

ssize_t sock_send_fds(int fd, const void *buf, size_t len, const int *fds, unsigned n,
		      int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t sent;

	if (n > SOCK_FDS_MAX)
		return -EINVAL;
	if (n) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	sent = sendmsg(fd, &mh, flags);
	return sent < 0 ? -errno : sent;
}

ssize_t sock_recv_fds(int fd, void *buf, size_t len, int *fds, unsigned max, unsigned room,
		      unsigned *n_fds, int *msg_flags, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf };
	struct cmsghdr *cm;
	ssize_t n;
	unsigned i;

	*n_fds = 0;
	*msg_flags = 0;
	if (room > SOCK_FDS_MAX)
		return -EINVAL;
	mh.msg_controllen = CMSG_LEN(sizeof(int) * room);
	n = recvmsg(fd, &mh, flags);
	if (n < 0)
		return -errno;
	*msg_flags = mh.msg_flags;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*n_fds < max)
				fds[(*n_fds)++] = got;
			else
				close(got);
		}
	}
	return n;
}
