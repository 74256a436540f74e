/* SPDX-License-Identifier: MIT */
/*
 * The TCP relay. Each direction splices from one socket into a pipe and from
 * the pipe into the other socket: the bytes stay in kernel pages, so this
 * daemon copies nothing on the fallback path (DESIGN.md: at most one copy
 * per daemon).
 *
 * Readiness comes from two uv_poll handles (one per leg) whose interest is
 * recomputed after every event from the state of both directions, so that
 * a leg we cannot make progress on is never polled for it (no busy loop).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "relay.h"

#define SPLICE_FLAGS (SPLICE_F_MOVE | SPLICE_F_NONBLOCK)

static void relay_on_poll(uv_poll_t *h, int status, int events);

const char *relay_state_name(enum relay_state s)
{
	switch (s) {
	case RELAY_CONNECTING:	return "connecting";
	case RELAY_ESTABLISHED:	return "established";
	case RELAY_HALF_CLOSED:	return "half_closed";
	case RELAY_CLOSING:	return "closing";
	}
	return "unknown";
}

int relay_set_rst_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ? -errno : 0;
}

/* Options both legs get. Failures here are not fatal: they cost latency or
 * dead-peer detection, not correctness. */
static void relay_tune_socket(int fd, uint64_t keepalive_ms)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Urgent data must stay in the byte stream: splice stops at the
	 * urgent mark and we read past it inline (relay_fill_urgent). */
	setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
	if (keepalive_ms) {
		int idle = keepalive_ms / 1000 ? (int)(keepalive_ms / 1000) : 1;
		int intvl = idle >= 40 ? 10 : (idle / 4 ? idle / 4 : 1);
		int cnt = 4;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
}

static int relay_dir_init(struct relay_dir *d, size_t buffer)
{
	int p[2];
	int cap;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	d->pipe_rd = p[0];
	d->pipe_wr = p[1];
	/* A larger pipe may be refused (pipe-user-pages-soft without
	 * CAP_SYS_RESOURCE): the relay then runs with what it got. */
	if (buffer)
		fcntl(d->pipe_wr, F_SETPIPE_SZ, (int)buffer);
	cap = fcntl(d->pipe_wr, F_GETPIPE_SZ);
	d->cap = cap > 0 ? (size_t)cap : 65536;
	return 0;
}

static void relay_dir_close(struct relay_dir *d)
{
	if (d->pipe_rd >= 0)
		close(d->pipe_rd);
	if (d->pipe_wr >= 0)
		close(d->pipe_wr);
	d->pipe_rd = d->pipe_wr = -1;
}

static void relay_on_handle_closed(uv_handle_t *h)
{
	struct relay *r = h->data;

	if (--r->open_handles == 0)
		r->ops->closed(r);
}

/* Stops everything. how decides whether the legs see FIN or RST. */
static void relay_finish(struct relay *r, enum relay_end how, int err)
{
	int i;

	if (r->state == RELAY_CLOSING)
		return;
	r->state = RELAY_CLOSING;
	r->ops->ended(r, how, err);

	for (i = 0; i < 2; i++) {
		if (how != RELAY_END_CLEAN && r->fd[i] >= 0)
			relay_set_rst_on_close(r->fd[i]);
		/* uv_close() takes the fd out of epoll at once, so closing
		 * the fd right after it is safe. */
		uv_close((uv_handle_t *)&r->poll[i], relay_on_handle_closed);
		close(r->fd[i]);
		r->fd[i] = -1;
		relay_dir_close(&r->dir[i]);
	}
	uv_close((uv_handle_t *)&r->connect_timer, relay_on_handle_closed);
}

void relay_abort(struct relay *r)
{
	relay_finish(r, RELAY_END_ABORTED, 0);
}

static int sock_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return -err;
}

/*
 * splice() stops at TCP's urgent mark and then reports EAGAIN although the
 * socket stays readable, which would spin us. With SO_OOBINLINE a plain
 * recv() reads the urgent byte in line and moves past the mark. Returns
 * bytes moved into the pipe, 0 when not at the mark, or -errno.
 */
static int relay_fill_urgent(struct relay_dir *d, int fd)
{
	char c;
	int at_mark = 0;
	ssize_t n;

	if (ioctl(fd, SIOCATMARK, &at_mark) < 0 || !at_mark)
		return 0;
	/* Peek first: if the pipe has no free slot we must not consume it. */
	n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
	if (n <= 0)
		return n < 0 && errno != EAGAIN ? -errno : 0;
	n = write(d->pipe_wr, &c, 1);
	if (n != 1)
		return n < 0 && errno != EAGAIN ? -errno : 0;
	if (recv(fd, &c, 1, MSG_DONTWAIT) != 1)
		return -EIO;	/* cannot happen: we peeked it */
	d->queued++;
	return 1;
}

/*
 * Moves what it can from leg i to the other leg. Returns 0, or -errno of a
 * failed read (leg i) or write (the other leg): either way the relay resets.
 */
static int relay_pump(struct relay *r, int i)
{
	struct relay_dir *d = &r->dir[i];
	int out = r->fd[!i];
	bool progress, filled = false;
	ssize_t n;
	int u;

	do {
		progress = false;
		if (!d->eof && !d->out_blocked && d->queued < d->cap) {
			n = splice(r->fd[i], NULL, d->pipe_wr, NULL,
				   d->cap - d->queued, SPLICE_FLAGS);
			if (n > 0) {
				d->queued += n;
				filled = progress = true;
			} else if (n == 0 || errno == EAGAIN) {
				/*
				 * At the urgent mark splice returns EAGAIN (or
				 * 0 once a FIN is queued behind it) although
				 * data is waiting. Look for the mark only when
				 * this can be it: at EOF, or when a readable
				 * event yielded nothing.
				 */
				u = n == 0 || !filled ? relay_fill_urgent(d, r->fd[i]) : 0;
				if (u < 0)
					return u;
				if (u > 0)
					filled = progress = true;
				else if (n == 0)
					d->eof = progress = true;
			} else if (errno != EINTR) {
				return -errno;
			}
		}
		if (d->queued > 0) {
			n = splice(d->pipe_rd, NULL, out, NULL, d->queued, SPLICE_FLAGS);
			if (n > 0) {
				d->queued -= n;
				d->bytes += n;
				if (i == RELAY_CLIENT)
					r->stats->bytes_in += n;
				else
					r->stats->bytes_out += n;
				progress = true;
			} else if (n < 0 && errno == EAGAIN) {
				d->out_blocked = true;
			} else if (n < 0 && errno != EINTR) {
				return -errno;
			}
		}
		d->out_blocked = d->out_blocked && d->queued > 0;
	} while (progress && !d->out_blocked);
	return 0;
}

/* Passes a finished direction's FIN on. Returns 0 or -errno. */
static int relay_pass_fin(struct relay *r, int i)
{
	struct relay_dir *d = &r->dir[i];

	if (!d->eof || d->queued || d->shut)
		return 0;
	if (shutdown(r->fd[!i], SHUT_WR) < 0 && errno != ENOTCONN)
		return -errno;
	d->shut = true;
	r->state = RELAY_HALF_CLOSED;
	return 0;
}

static int relay_leg_interest(const struct relay *r, int leg)
{
	const struct relay_dir *rd = &r->dir[leg];	/* reads this leg */
	const struct relay_dir *wr = &r->dir[!leg];	/* writes this leg */
	int ev = 0;

	if (!rd->eof && !rd->out_blocked && rd->queued < rd->cap)
		ev |= UV_READABLE;
	if (wr->out_blocked)
		ev |= UV_WRITABLE;
	/*
	 * A leg that sent FIN and has nothing to write to must still report
	 * an RST that arrives later: epoll always reports EPOLLERR/EPOLLHUP
	 * for a registered fd, and after FIN no urgent data (EPOLLPRI) can
	 * come, so registering for it alone cannot spin.
	 */
	if (!ev && rd->eof && !wr->shut)
		ev = UV_PRIORITIZED;
	return ev;
}

static void relay_update_interest(struct relay *r)
{
	int i, ev;

	for (i = 0; i < 2; i++) {
		ev = relay_leg_interest(r, i);
		if (ev == r->events[i])
			continue;
		r->events[i] = ev;
		if (ev)
			uv_poll_start(&r->poll[i], ev, relay_on_poll);
		else
			uv_poll_stop(&r->poll[i]);
	}
}

static void relay_on_connected(struct relay *r, int status)
{
	int err = sock_error(r->fd[RELAY_SERVER]);

	if (!err && status < 0)
		err = -ECONNREFUSED;
	if (err) {
		relay_finish(r, RELAY_END_CONNECT_FAILED, err);
		return;
	}
	uv_timer_stop(&r->connect_timer);
	r->state = RELAY_ESTABLISHED;
	r->events[RELAY_SERVER] = 0;
	uv_poll_stop(&r->poll[RELAY_SERVER]);
	relay_update_interest(r);
}

static void relay_on_poll(uv_poll_t *h, int status, int events)
{
	struct relay *r = h->data;
	int leg = h == &r->poll[RELAY_SERVER] ? RELAY_SERVER : RELAY_CLIENT;
	int err = 0, i;

	if (r->state == RELAY_CLOSING)
		return;
	if (r->state == RELAY_CONNECTING) {
		relay_on_connected(r, status);
		return;
	}
	r->last_active_ms = uv_now(h->loop);
	if (status < 0) {
		/* libuv reports EPOLLERR as UV_EBADF; the socket knows why. */
		err = sock_error(r->fd[leg]);
		relay_finish(r, RELAY_END_RESET, err ? err : -ECONNRESET);
		return;
	}
	if (events & UV_WRITABLE) {
		r->dir[!leg].out_blocked = false;
		err = relay_pump(r, !leg);
	}
	if (!err && (events & (UV_READABLE | UV_PRIORITIZED)))
		err = relay_pump(r, leg);
	for (i = 0; !err && i < 2; i++)
		err = relay_pass_fin(r, i);
	if (err) {
		relay_finish(r, RELAY_END_RESET, err);
		return;
	}
	if (r->dir[0].shut && r->dir[1].shut) {
		relay_finish(r, RELAY_END_CLEAN, 0);
		return;
	}
	relay_update_interest(r);
}

static void relay_on_connect_timeout(uv_timer_t *t)
{
	struct relay *r = t->data;

	if (r->state == RELAY_CONNECTING)
		relay_finish(r, RELAY_END_CONNECT_TIMEOUT, -ETIMEDOUT);
}

int relay_start(struct relay *r, uv_loop_t *loop, int client_fd,
		const struct sockaddr *dest, const struct relay_params *p,
		const struct relay_ops *ops, struct proxy_stats *stats)
{
	int fd, err, i;

	*r = (struct relay){
		.fd = { client_fd, -1 },
		.dir = { { .pipe_rd = -1, .pipe_wr = -1 },
			 { .pipe_rd = -1, .pipe_wr = -1 } },
		.state = RELAY_CONNECTING,
		.ops = ops,
		.stats = stats,
		.last_active_ms = uv_now(loop),
	};
	for (i = 0; i < 2; i++) {
		err = relay_dir_init(&r->dir[i], p->buffer);
		if (err)
			goto out_close_pipes;
	}
	fd = socket(dest->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out_close_pipes;
	}
	/* Without the mark our own connection would be redirected back to
	 * us: never connect unmarked. */
	if (p->mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &p->mark, sizeof(p->mark)) < 0) {
		err = -errno;
		goto out_close_fd;
	}
	relay_tune_socket(fd, p->keepalive_ms);
	relay_tune_socket(client_fd, p->keepalive_ms);
	if (connect(fd, dest, addr_len(dest)) < 0 && errno != EINPROGRESS) {
		err = -errno;
		goto out_close_fd;
	}
	r->fd[RELAY_SERVER] = fd;

	/* From here on nothing can fail: uv_poll_init on a socket and
	 * uv_timer_init do not. */
	for (i = 0; i < 2; i++) {
		uv_poll_init_socket(loop, &r->poll[i], r->fd[i]);
		r->poll[i].data = r;
	}
	uv_timer_init(loop, &r->connect_timer);
	r->connect_timer.data = r;
	r->open_handles = 3;
	r->events[RELAY_SERVER] = UV_WRITABLE;
	uv_poll_start(&r->poll[RELAY_SERVER], UV_WRITABLE, relay_on_poll);
	uv_timer_start(&r->connect_timer, relay_on_connect_timeout, p->connect_timeout_ms, 0);
	return 0;

out_close_fd:
	close(fd);
out_close_pipes:
	for (i = 0; i < 2; i++)
		relay_dir_close(&r->dir[i]);
	return err;
}
