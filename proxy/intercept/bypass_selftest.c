/* SPDX-License-Identifier: MIT */
/*
 * The bypass's start-time self-test (bypass.h): what the daemon relies
 * on, tried on the running kernel before any application's flow is
 * joined. Mesh projects that shipped sockmap redirects met kernels where
 * a FIN, a reset or a wake-up went missing, or bytes were reordered; a
 * kernel that shows one of these keeps the bypass off.
 *
 * Each check joins a loopback connection of this process by hand, as the
 * sock_ops programs join an application's: the connecting socket plays
 * the application, the accepted one the daemon. Waits are bounded (a
 * hang is a failure, never a wait for ever), and no check depends on
 * timing otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bypass.h"

#define ST_WAIT_MS 5000			/* a wake-up that does not come in this is lost */
#define ST_CREDIT (64 * 1024)		/* the back-pressure check's credit */
#define ST_FLOOD_MAX (64u << 20)	/* how much it writes at most, looking for EAGAIN */

struct st_pair {
	int app, daemon;		/* connecting, accepted */
	struct byp_key key;		/* the flow's */
};

struct st {
	struct intercept *ic;
	char *why;
	size_t len;
	const char *check;		/* the one running, for the message */
};

static int st_fail(struct st *t, int err, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(t->why, t->len, "self-test \"%s\": %s", t->check, what);
	return err ? err : -EPROTO;
}

static void st_close(struct st *t, struct st_pair *p)
{
	if (p->app >= 0)
		close(p->app);
	if (p->daemon >= 0)
		close(p->daemon);
	p->app = p->daemon = -1;
	bpf_map_delete_elem(t->ic->bypass.flows_fd, &p->key);
	bpf_map_delete_elem(t->ic->bypass.allow_fd, &p->key);
}

static int st_add_sock(struct st *t, struct st_pair *p, enum byp_side side)
{
	struct byp_key k = p->key;
	uint64_t fd = (uint64_t)(side == BYP_APP ? p->app : p->daemon);

	k.side = side;
	if (bpf_map_update_elem(t->ic->bypass.socks_fd, &k, &fd, BPF_NOEXIST) < 0)
		return st_fail(t, -errno, "adding a socket to the sockets map: %s", strerror(errno));
	return 0;
}

static int st_get_flow(struct st *t, struct st_pair *p, struct byp_flow *f)
{
	if (bpf_map_lookup_elem(t->ic->bypass.flows_fd, &p->key, f) < 0)
		return st_fail(t, -errno, "reading the flow's state: %s", strerror(errno));
	return 0;
}

/* A loopback connection, joined as sock_ops joins one; with late, the
 * daemon's end is left out (st_join_daemon() adds it). */
static int st_open(struct st *t, struct st_pair *p, uint64_t credit, bool late)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct byp_flow f = { .app_in = 1, .daemon_in = !late };
	socklen_t len = sizeof(sa);
	int l, err;

	p->app = p->daemon = -1;
	memset(&p->key, 0, sizeof(p->key));
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return st_fail(t, -errno, "socket: %s", strerror(errno));
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0) {
		err = st_fail(t, -errno, "a loopback listener: %s", strerror(errno));
		close(l);
		return err;
	}
	p->app = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->app < 0 || connect(p->app, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = st_fail(t, -errno, "a loopback connect: %s", strerror(errno));
		close(l);
		return err;
	}
	p->daemon = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	err = p->daemon < 0 ? -errno : 0;
	close(l);
	if (err)
		return st_fail(t, err, "accept: %s", strerror(-err));
	fcntl(p->app, F_SETFL, O_NONBLOCK);
	len = sizeof(sa);
	if (getsockname(p->app, (struct sockaddr *)&sa, &len) < 0)
		return st_fail(t, -errno, "getsockname: %s", strerror(errno));
	p->key.netns = t->ic->bypass.netns;
	p->key.side = BYP_FLOW;
	p->key.addr[10] = p->key.addr[11] = 0xff;
	memcpy(p->key.addr + 12, &sa.sin_addr, 4);
	p->key.port = sa.sin_port;
	/* The sockets first, then the flow that names them. */
	err = st_add_sock(t, p, BYP_APP);
	if (!err && !late)
		err = st_add_sock(t, p, BYP_DAEMON);
	if (err)
		return err;
	if (bpf_map_update_elem(t->ic->bypass.allow_fd, &p->key, &credit, BPF_ANY) < 0 ||
	    bpf_map_update_elem(t->ic->bypass.flows_fd, &p->key, &f, BPF_ANY) < 0)
		return st_fail(t, -errno, "adding the flow: %s", strerror(errno));
	return 0;
}

static int st_join_daemon(struct st *t, struct st_pair *p)
{
	struct byp_flow f;
	int err;

	err = st_add_sock(t, p, BYP_DAEMON);
	if (!err)
		err = st_get_flow(t, p, &f);
	if (err)
		return err;
	f.daemon_in = 1;
	if (bpf_map_update_elem(t->ic->bypass.flows_fd, &p->key, &f, BPF_EXIST) < 0)
		return st_fail(t, -errno, "updating the flow: %s", strerror(errno));
	return 0;
}

/* Waits for events on fd through an edge-triggered epoll set registered
 * before: 0 when they came, -ETIMEDOUT when not. */
static int st_wait_edge(int ep, uint32_t events)
{
	struct epoll_event ev;
	int n;

	do {
		n = epoll_wait(ep, &ev, 1, ST_WAIT_MS);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 1 && (ev.events & events) ? 0 : -ETIMEDOUT;
}

static int st_epoll(int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events | EPOLLET };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		return -errno;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(ep);
		return -errno;
	}
	return ep;
}

/* Reads exactly len bytes from fd (non-blocking, polled). 0, -ETIMEDOUT,
 * -EPIPE on an early EOF, or the read's -errno. */
static int st_read_all(int fd, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(fd, (char *)buf + got, len - got, 0);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, ST_WAIT_MS) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* What fd's next read returns once something is there: 0 (EOF), 1 (a
 * byte), -errno, or -ETIMEDOUT when nothing comes. */
static int st_next(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;
	char c;

	for (;;) {
		n = recv(fd, &c, 1, 0);
		if (n >= 0)
			return (int)n;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, ST_WAIT_MS) == 0)
			return -ETIMEDOUT;
	}
}

/* One way of a joined pair: an edge wakes the reader, the bytes arrive,
 * and they were redirected (the way's counter moved). */
static int st_one_way(struct st *t, struct st_pair *p, bool a2d)
{
	int from = a2d ? p->app : p->daemon, to = a2d ? p->daemon : p->app;
	static const char msg[] = "bypass";
	char buf[sizeof(msg)];
	struct byp_flow f;
	int ep, err;

	ep = st_epoll(to, EPOLLIN);
	if (ep < 0)
		return st_fail(t, ep, "epoll: %s", strerror(-ep));
	if (send(from, msg, sizeof(msg), MSG_NOSIGNAL) != (ssize_t)sizeof(msg)) {
		err = st_fail(t, -errno, "a write failed: %s", strerror(errno));
		goto out;
	}
	err = st_wait_edge(ep, EPOLLIN);
	if (err) {
		err = st_fail(t, err, "redirected bytes raised no EPOLLIN edge");
		goto out;
	}
	err = st_read_all(to, buf, sizeof(buf));
	if (err || memcmp(buf, msg, sizeof(msg)) != 0) {
		err = st_fail(t, err, "the bytes written did not arrive (%s)",
			      err ? strerror(-err) : "different bytes");
		goto out;
	}
	err = st_get_flow(t, p, &f);
	if (!err && (a2d ? f.a2d_bytes : f.d2a_bytes) != sizeof(msg))
		err = st_fail(t, 0, "the bytes were not redirected (the programs do not see "
			      "the sockets as a flow on this kernel)");
out:
	close(ep);
	return err;
}

static int st_redirect(struct st *t)
{
	struct st_pair p;
	int err;

	t->check = "redirect";
	err = st_open(t, &p, ST_CREDIT, false);
	if (!err)
		err = st_one_way(t, &p, true);
	if (!err)
		err = st_one_way(t, &p, false);
	st_close(t, &p);
	return err;
}

/* A FIN behind redirected bytes arrives after them, each way. */
static int st_fin(struct st *t)
{
	struct st_pair p;
	int err, n;

	t->check = "FIN";
	err = st_open(t, &p, ST_CREDIT, false);
	if (err)
		goto out;
	for (int way = 0; way < 2 && !err; way++) {
		int from = way ? p.daemon : p.app, to = way ? p.app : p.daemon;

		if (send(from, "x", 1, MSG_NOSIGNAL) != 1 || shutdown(from, SHUT_WR) < 0) {
			err = st_fail(t, -errno, "write and shutdown: %s", strerror(errno));
			break;
		}
		n = st_next(to);
		if (n == 1)
			n = st_next(to);
		if (n != 0)
			err = st_fail(t, n < 0 ? n : 0, "%s: after the byte, %s instead of EOF",
				      way ? "daemon to app" : "app to daemon",
				      n < 0 ? strerror(-n) : "more data");
	}
out:
	st_close(t, &p);
	return err;
}

/* A reset ends the peer's reads with ECONNRESET, and its writes fail as
 * TCP's do (EPIPE or ECONNRESET), not with the redirect's EACCES. */
static int st_rst(struct st *t)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct st_pair p;
	int err, n;

	t->check = "RST";
	err = st_open(t, &p, ST_CREDIT, false);
	if (err)
		goto out;
	if (send(p.daemon, "x", 1, MSG_NOSIGNAL) != 1 ||
	    setsockopt(p.daemon, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0) {
		err = st_fail(t, -errno, "write: %s", strerror(errno));
		goto out;
	}
	close(p.daemon);
	p.daemon = -1;
	n = st_next(p.app);
	if (n == 1)
		n = st_next(p.app);
	if (n != -ECONNRESET) {
		err = st_fail(t, n < 0 ? n : 0, "the reset read as %s, not ECONNRESET",
			      n == 0 ? "EOF" : n > 0 ? "data" : strerror(-n));
		goto out;
	}
	n = (int)send(p.app, "y", 1, MSG_NOSIGNAL);
	if (n >= 0 || (errno != EPIPE && errno != ECONNRESET))
		err = st_fail(t, 0, "a write after the reset %s",
			      n >= 0 ? "succeeded" : strerror(errno));
out:
	st_close(t, &p);
	return err;
}

static unsigned char st_pattern(uint64_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

/*
 * A writer faster than its reader: the credit runs out, the rest goes
 * over TCP until TCP pushes back (EAGAIN); the writer is woken when the
 * reader makes room (the wake-up some kernels lost on sockets of a
 * sockmap), and the reader gets every byte, in order.
 */
static int st_backpressure(struct st *t)
{
	unsigned char buf[16384];
	uint64_t sent = 0, got = 0;
	struct st_pair p;
	struct byp_flow f;
	bool blocked = false, woken = false;
	int ep = -1, err;
	ssize_t n;

	t->check = "back-pressure";
	err = st_open(t, &p, ST_CREDIT, false);
	if (err)
		goto out;
	while (sent < ST_FLOOD_MAX) {
		size_t len = sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = st_pattern(sent + i);
		n = send(p.app, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			blocked = true;
			break;
		}
		if (n < 0) {
			err = st_fail(t, -errno, "a write failed: %s", strerror(errno));
			goto out;
		}
		sent += (uint64_t)n;
	}
	if (!blocked) {
		err = st_fail(t, 0, "%u MiB written without EAGAIN: redirected bytes are not "
			      "bounded", ST_FLOOD_MAX >> 20);
		goto out;
	}
	err = st_get_flow(t, &p, &f);
	if (err)
		goto out;
	if (!f.a2d_tcp || f.a2d_bytes > ST_CREDIT || !f.a2d_bytes) {
		err = st_fail(t, 0, "%llu bytes redirected with a credit of %u, then %s",
			      (unsigned long long)f.a2d_bytes, ST_CREDIT,
			      f.a2d_tcp ? "TCP" : "not TCP");
		goto out;
	}
	ep = st_epoll(p.app, EPOLLOUT);
	if (ep < 0) {
		err = st_fail(t, ep, "epoll: %s", strerror(-ep));
		goto out;
	}
	while (got < sent) {
		size_t want = sent - got < sizeof(buf) ? (size_t)(sent - got) : sizeof(buf);
		struct epoll_event ev;

		err = st_read_all(p.daemon, buf, want);
		if (err) {
			err = st_fail(t, err, "reading back byte %llu of %llu: %s",
				      (unsigned long long)got, (unsigned long long)sent,
				      strerror(-err));
			goto out;
		}
		for (size_t i = 0; i < want; i++)
			if (buf[i] != st_pattern(got + i)) {
				err = st_fail(t, 0, "byte %llu out of order",
					      (unsigned long long)(got + i));
				goto out;
			}
		got += want;
		if (!woken && epoll_wait(ep, &ev, 1, 0) == 1 && (ev.events & EPOLLOUT))
			woken = true;
	}
	if (!woken && st_wait_edge(ep, EPOLLOUT) != 0)
		err = st_fail(t, 0, "the writer got no EPOLLOUT after its EAGAIN although the "
			      "reader drained everything (lost write-space wake-up)");
out:
	if (ep >= 0)
		close(ep);
	st_close(t, &p);
	return err;
}

/* The app writes before our end is in the map: that way is over TCP for
 * good, also once our end is in (or the bypass would overtake the bytes
 * TCP still holds); ours may still bypass. */
static int st_late_peer(struct st *t)
{
	struct st_pair p;
	struct byp_flow f;
	char buf[4];
	int err;

	t->check = "late peer";
	err = st_open(t, &p, ST_CREDIT, true);
	if (err)
		goto out;
	if (send(p.app, "ab", 2, MSG_NOSIGNAL) != 2) {
		err = st_fail(t, -errno, "a write failed: %s", strerror(errno));
		goto out;
	}
	err = st_join_daemon(t, &p);
	if (err)
		goto out;
	if (send(p.app, "cd", 2, MSG_NOSIGNAL) != 2) {
		err = st_fail(t, -errno, "a write failed: %s", strerror(errno));
		goto out;
	}
	err = st_read_all(p.daemon, buf, 4);
	if (err || memcmp(buf, "abcd", 4) != 0) {
		err = st_fail(t, err, "wrote \"ab\" then \"cd\", read %s",
			      err ? strerror(-err) : "them out of order");
		goto out;
	}
	err = st_get_flow(t, &p, &f);
	if (!err && (f.a2d_bytes || !f.a2d_tcp))
		err = st_fail(t, 0, "the app's way was redirected after bytes went over TCP");
	if (!err)
		err = st_one_way(t, &p, false);
out:
	st_close(t, &p);
	return err;
}

/* The app writes until TCP pushes back (its credit runs out first). */
static int st_fill(struct st *t, struct st_pair *p)
{
	unsigned char buf[16384] = { 0 };
	uint64_t sent = 0;
	ssize_t n;

	while (sent < ST_FLOOD_MAX) {
		n = send(p->app, buf, sizeof(buf), MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return st_fail(t, -errno, "a write failed: %s", strerror(errno));
		sent += (uint64_t)n;
	}
	return st_fail(t, 0, "%u MiB written without EAGAIN", ST_FLOOD_MAX >> 20);
}

/* Our end reads what is there. */
static int st_drain(struct st *t, struct st_pair *p)
{
	unsigned char buf[65536];
	ssize_t n;

	while ((n = recv(p->daemon, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	if (n < 0 && errno != EAGAIN)
		return st_fail(t, -errno, "reading: %s", strerror(errno));
	return 0;
}

/*
 * A blocking read goes on waiting through wake-ups that bring nothing to
 * read, and ends with what TCP's read would: 0 at the FIN, not EAGAIN.
 * The reader's own writes went over TCP (its credit ran out) and fill
 * the way; as the peer reads them, the window updates wake the reader's
 * socket (write space) with nothing to read. Seen on Linux 6.18.44:
 * tcp_bpf's wait then returns -EAGAIN to the blocking reader, which
 * breaks every application that reads with blocking calls (the daemon's
 * sockets are non-blocking: it is the application's side that suffers).
 * The reader is a child process, blocked in recv() when the wake-ups
 * come (if it is not blocked yet, the check passes without having tried:
 * it never fails wrongly).
 */
static int st_blocking_read(struct st *t)
{
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	struct st_pair p;
	int err, status;
	pid_t child;

	t->check = "blocking read";
	err = st_open(t, &p, ST_CREDIT, false);
	if (err)
		goto out;
	err = st_fill(t, &p);
	if (err)
		goto out;
	child = fork();
	if (child < 0) {
		err = st_fail(t, -errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		char c;
		ssize_t n;

		alarm(ST_WAIT_MS / 1000);
		fcntl(p.app, F_SETFL, 0);
		n = recv(p.app, &c, 1, 0);
		_exit(n == 0 ? 0 : n < 0 && errno == EAGAIN ? 1 : 2);
	}
	nanosleep(&pause, NULL);
	err = st_drain(t, &p);
	if (!err)
		nanosleep(&pause, NULL);
	if (!err && shutdown(p.daemon, SHUT_WR) < 0)
		err = st_fail(t, -errno, "shutdown: %s", strerror(errno));
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (err)
		goto out;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		err = st_fail(t, 0, "a blocking recv() returned %s instead of waiting for the FIN "
			      "(the kernel's tcp_bpf returns EAGAIN to a blocking reader woken with "
			      "nothing redirected to read; applications would fail)",
			      WIFEXITED(status) && WEXITSTATUS(status) == 1 ? "EAGAIN" :
			      WIFSIGNALED(status) ? "nothing (it hung)" : "an error");
out:
	st_close(t, &p);
	return err;
}

int bypass_selftest(struct intercept *ic, char *why, size_t len)
{
	struct st t = { .ic = ic, .why = why, .len = len };
	int (*const checks[])(struct st *) = {
		st_redirect, st_fin, st_rst, st_backpressure, st_late_peer, st_blocking_read,
	};
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(checks) / sizeof(checks[0]); i++)
		if (checks[i] != st_blocking_read || !ic->bypass.skip_blocking_read)
			err = checks[i](&t);
	return err;
}
