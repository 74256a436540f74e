/* SPDX-License-Identifier: MIT */
/*
 * The TCP relay. Each direction splices from one socket into a pipe and from
 * the pipe into the other socket: the bytes stay in kernel pages, so this
 * daemon copies nothing on the fallback path (a link group copies each byte
 * once per daemon, from the socket into the peer's ring: that is the most
 * any path may cost).
 *
 * Both sockets sit in the proxy's edge-triggered epoll set from start to
 * close, registered for everything. Edge triggering is what makes that
 * safe: a leg we stop reading under back-pressure does not wake us again
 * until something changes, and every event handler runs the affected
 * directions until they block (EAGAIN on the input, or on the output,
 * which then waits for EPOLLOUT), so no edge is lost.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "core/epset.h"
#include "core/pipe_pool.h"
#include "core/sock.h"
#include "relay.h"
#include "core/sock.h"

#define SPLICE_FLAGS	(SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
#define RELAY_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI)

#define relay_of(e, leg) \
	container_of(e, struct relay, ev[leg])

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

/* Failures here are not fatal: they cost latency or dead-peer detection,
 * not correctness. */
void relay_tune_socket(int fd, uint64_t keepalive_ms)
{
	int one = 1, zero = 0;

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
	} else {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &zero, sizeof(zero));
	}
}

static void relay_on_timer_closed(uv_handle_t *h)
{
	struct relay *r = h->data;

	r->ops->closed(r);
}

/* Stops everything. how decides whether the legs see FIN or RST. */
static void relay_finish(struct relay *r, enum relay_end how, int err)
{
	int i;

	if (r->state == RELAY_CLOSING)
		return;
	assert(r->state == RELAY_CONNECTING || r->state == RELAY_ESTABLISHED ||
	       r->state == RELAY_HALF_CLOSED);
	r->state = RELAY_CLOSING;
	r->ops->ended(r, how, err);

	for (i = 0; i < 2; i++) {
		if (r->fd[i] >= 0) {
			if (how != RELAY_END_CLEAN)
				sock_set_rst_on_close(r->fd[i]);
			close(r->fd[i]);	/* also leaves the epoll set */
			r->fd[i] = -1;
		}
		pipe_pool_put(r->env->pipes, &r->dir[i].pipe, r->dir[i].queued == 0);
	}
	/* Events of this batch may still name us: the memory stays until
	 * the timer's close callback, after the batch. */
	uv_close((uv_handle_t *)&r->connect_timer, relay_on_timer_closed);
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
 * splice() stops at TCP's urgent mark and then reports EAGAIN (or 0 once a
 * FIN is queued behind it) although data is waiting. With SO_OOBINLINE a
 * plain recv() reads the urgent byte in line and moves past the mark.
 * Returns 1 when it moved the byte into the pipe, 0 when not at the mark,
 * -EAGAIN when the pipe has no room for it yet, or another -errno.
 */
static int relay_fill_urgent(struct relay_dir *d, int fd)
{
	int at_mark = 0;
	ssize_t n;
	char c;

	if (ioctl(fd, SIOCATMARK, &at_mark) < 0)
		return -errno;
	if (!at_mark)
		return 0;
	/* Peek first: if the pipe has no room we must not consume it. */
	n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
	if (n <= 0)
		return n < 0 && errno != EAGAIN ? -errno : 0;
	if (write(d->pipe.wr, &c, 1) != 1)
		return errno == EAGAIN ? -EAGAIN : -errno;
	d->queued++;	/* counted at once: a pipe holding it is never "empty" */
	if (recv(fd, &c, 1, MSG_DONTWAIT) != 1)
		return -EIO;	/* cannot happen: we peeked it */
	return 1;
}

/* After a fill found nothing (n == 0: FIN, or EAGAIN). Returns progress
 * (1/0) or -errno. */
static int relay_fill_none(struct relay_dir *d, int fd, ssize_t n)
{
	/*
	 * A 0 is checked even without EPOLLPRI seen: the urgent byte and a
	 * FIN can arrive while we pump, so splice may stop at the mark before
	 * its event is harvested. An EAGAIN there is safe: that event is
	 * queued and brings us back.
	 */
	int u = d->urgent || n == 0 ? relay_fill_urgent(d, fd) : 0;

	if (u == 1) {
		/* Past the mark. A later urgent byte raises EPOLLPRI again. */
		d->urgent = false;
		return 1;
	}
	if (u == -EAGAIN)
		return 0;	/* the drain makes room, then we come back */
	if (u < 0)
		return u;
	/*
	 * Not at the mark. Under back-pressure the EAGAIN may come from a
	 * full pipe with the mark still ahead: keep d->urgent until we have
	 * read past it, or the stream would wedge (or, with a FIN behind the
	 * mark, end early) there. Away from the mark, 0 is a real EOF.
	 */
	if (n == 0) {
		d->eof = true;
		return 1;
	}
	return 0;
}

/*
 * The way through when no pipe can be had (fd exhaustion), and for a client
 * socket in the bypass of the local hop, which splice cannot read: peek,
 * send what the output takes, then drop exactly that much from the input
 * (MSG_TRUNC). Bytes not sent stay in the input socket, so nothing is lost
 * and nothing waits on a timer; it costs a copy into and out of a stack
 * buffer. Same contract as relay_pump().
 */
static int relay_pump_copy(struct relay *r, int i)
{
	struct relay_dir *d = &r->dir[i];
	int in = r->fd[i], out = r->fd[!i];
	char buf[16384];
	ssize_t n, w;

	while (!d->eof) {
		n = recv(in, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		if (n == 0) {
			d->eof = true;
			break;
		}
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		w = send(out, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			/* No pipe holds anything: EPOLLOUT on the output
			 * brings us back here. */
			d->out_blocked = true;
			return 0;
		}
		if (recv(in, buf, w, MSG_DONTWAIT | MSG_TRUNC) != w)
			return -EIO;	/* cannot happen: we peeked them */
		d->bytes += w;
		if (i == RELAY_CLIENT)
			counter_add(r->env->bytes_in, w);
		else
			counter_add(r->env->bytes_out, w);
		if (i == RELAY_CLIENT && r->bypass_step && d->bytes >= r->bypass_next) {
			r->bypass_next = d->bytes + r->bypass_step;
			r->ops->bypass_read(r, d->bytes);
		}
		if (w < n) {
			d->out_blocked = true;
			return 0;
		}
	}
	return 0;
}

/*
 * Moves what it can from leg i to the other leg, until the input is empty
 * or the output is full. Returns 0, or -errno of a failed read (leg i) or
 * write (the other leg): either way the relay resets.
 *
 * A direction holds a pipe only while bytes are in it: an idle flow holds
 * two sockets and nothing else, so neither the fd budget nor the kernel's
 * per-user pipe allowance (fs.pipe-user-pages-soft, which shrinks new pipes
 * once exceeded) is spent on flows that move nothing.
 */
static int relay_pump(struct relay *r, int i)
{
	struct relay_dir *d = &r->dir[i];
	int in = r->fd[i], out = r->fd[!i];
	bool progress;
	ssize_t n;
	int p;

	assert(r->state == RELAY_ESTABLISHED || r->state == RELAY_HALF_CLOSED);
	if (i == RELAY_CLIENT && r->bypass_step)
		return relay_pump_copy(r, i);
	if (d->pipe.rd < 0 && !d->eof) {
		p = pipe_pool_get(r->env->pipes, &d->pipe);
		if (p == -EMFILE || p == -ENFILE || p == -ENOMEM)
			return relay_pump_copy(r, i);
		if (p < 0)
			return p;
	}
	do {
		progress = false;
		if (!d->eof && !d->out_blocked && d->pipe.rd >= 0 &&
		    d->queued < d->pipe.cap) {
			n = splice(in, NULL, d->pipe.wr, NULL, d->pipe.cap - d->queued,
				   SPLICE_FLAGS);
			if (n > 0) {
				d->queued += n;
				progress = true;
			} else if (n == 0 || errno == EAGAIN) {
				p = relay_fill_none(d, in, n);
				if (p < 0)
					return p;
				progress = p;
			} else if (errno == EINTR) {
				progress = true;
			} else {
				return -errno;
			}
		}
		if (d->queued > 0) {
			n = splice(d->pipe.rd, NULL, out, NULL, d->queued, SPLICE_FLAGS);
			if (n > 0) {
				d->queued -= n;
				d->bytes += n;
				if (i == RELAY_CLIENT)
					counter_add(r->env->bytes_in, n);
				else
					counter_add(r->env->bytes_out, n);
				progress = true;
			} else if (n < 0 && errno == EAGAIN) {
				d->out_blocked = true;
			} else if (n < 0 && errno != EINTR) {
				return -errno;
			}
		}
	} while (progress && !d->out_blocked);
	if (d->queued == 0)
		pipe_pool_put(r->env->pipes, &d->pipe, true);
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
	assert(r->state == RELAY_ESTABLISHED || r->state == RELAY_HALF_CLOSED);
	d->shut = true;
	r->state = RELAY_HALF_CLOSED;
	return 0;
}

static void relay_settle(struct relay *r, int err)
{
	int i;

	/* Bytes move only between connected and closing. */
	assert(r->state == RELAY_ESTABLISHED || r->state == RELAY_HALF_CLOSED);
	for (i = 0; !err && i < 2; i++)
		err = relay_pass_fin(r, i);
	if (err)
		relay_finish(r, RELAY_END_RESET, err);
	else if (r->dir[0].shut && r->dir[1].shut)
		relay_finish(r, RELAY_END_CLEAN, 0);
}

/* The server leg's connect finished; events are the epoll events that
 * said so, or 0 when nothing said how. A failed connect always raises
 * EPOLLERR, so EPOLLOUT alone is success and needs no SO_ERROR. */
static void relay_on_connected(struct relay *r, uint32_t events)
{
	int err = 0;

	assert(r->state == RELAY_CONNECTING);
	if (!(events & EPOLLOUT) || (events & (EPOLLERR | EPOLLHUP)))
		err = sock_error(r->fd[RELAY_SERVER]);

	if (err) {
		relay_finish(r, RELAY_END_CONNECT_FAILED, err);
		return;
	}
	uv_timer_stop(&r->connect_timer);
	r->state = RELAY_ESTABLISHED;
	/* The application may have written (even closed) while we connected:
	 * its edges are spent, so look at both legs now. */
	err = relay_pump(r, RELAY_CLIENT);
	if (!err)
		err = relay_pump(r, RELAY_SERVER);
	relay_settle(r, err);
}

static void relay_on_event(struct relay *r, int leg, uint32_t events)
{
	int err = 0;

	if (r->state == RELAY_CLOSING)
		return;
	if (events & EPOLLPRI)
		r->dir[leg].urgent = true;
	if (r->state == RELAY_CONNECTING) {
		if (leg == RELAY_SERVER)
			relay_on_connected(r, events);
		else if (events & EPOLLERR)
			relay_finish(r, RELAY_END_RESET, sock_error(r->fd[leg]) ?: -ECONNRESET);
		return;
	}
	r->last_active_ms = uv_now(r->env->loop);
	if (events & EPOLLERR) {
		relay_finish(r, RELAY_END_RESET, sock_error(r->fd[leg]) ?: -ECONNRESET);
		return;
	}
	if ((events & EPOLLOUT) && r->dir[!leg].out_blocked) {
		r->dir[!leg].out_blocked = false;
		err = relay_pump(r, !leg);
	}
	if (!err && (events & (EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLHUP)))
		err = relay_pump(r, leg);
	relay_settle(r, err);
}

static void relay_on_client_event(struct epset_entry *e, uint32_t events)
{
	relay_on_event(relay_of(e, RELAY_CLIENT), RELAY_CLIENT, events);
}

static void relay_on_server_event(struct epset_entry *e, uint32_t events)
{
	relay_on_event(relay_of(e, RELAY_SERVER), RELAY_SERVER, events);
}

static void relay_on_connect_timeout(uv_timer_t *t)
{
	struct relay *r = t->data;

	if (r->state != RELAY_CONNECTING)
		return;
	/* libuv runs timers before the batch's socket events: a worker kept
	 * busy past the deadline must not fail a connect that completed. */
	if (sock_connect_done(r->fd[RELAY_SERVER])) {
		relay_on_connected(r, 0);
		return;
	}
	relay_finish(r, RELAY_END_CONNECT_TIMEOUT, -ETIMEDOUT);
}

int relay_start(struct relay *r, const struct relay_env *env, int client_fd,
		const struct sockaddr *dest, const struct relay_params *p,
		const struct relay_ops *ops)
{
	int fd, err;

	*r = (struct relay){
		.fd = { client_fd, -1 },
		.ev = { { relay_on_client_event }, { relay_on_server_event } },
		.dir = { { .pipe = { -1, -1, 0 } }, { .pipe = { -1, -1, 0 } } },
		.state = RELAY_CONNECTING,
		.ops = ops,
		.env = env,
		.last_active_ms = uv_now(env->loop),
	};
	/* Without the mark our own connection would be redirected back to
	 * us: never connect unmarked (sock_open_marked() refuses). */
	fd = sock_open_marked(dest->sa_family, p->mark);
	if (fd == -EMFILE && env->pipes->n) {
		/* Idle pipes are worth less than a flow: free them, retry. */
		pipe_pool_trim(env->pipes);
		fd = sock_open_marked(dest->sa_family, p->mark);
	}
	if (fd < 0)
		return fd;
	relay_tune_socket(fd, p->keepalive_ms);
	if (!p->client_tuned)
		relay_tune_socket(client_fd, p->keepalive_ms);
	err = sock_connect(fd, dest);
	if (err)
		goto out_close_fd;
	/* An fd that is ready when added is reported at once, so a connect
	 * that completed already is not missed. */
	err = epset_add(env->epset, fd, RELAY_EVENTS, &r->ev[RELAY_SERVER]);
	if (err)
		goto out_close_fd;
	err = epset_add(env->epset, client_fd, RELAY_EVENTS, &r->ev[RELAY_CLIENT]);
	if (err)
		goto out_close_fd;	/* closing fd takes it out of the set */
	r->fd[RELAY_SERVER] = fd;

	uv_timer_init(env->loop, &r->connect_timer);
	r->connect_timer.data = r;
	uv_timer_start(&r->connect_timer, relay_on_connect_timeout, p->connect_timeout_ms, 0);
	return 0;

out_close_fd:
	close(fd);
	return err;
}
