/*
 * smcperf: a small TCP benchmark for the smcproxy bench (tests/bench/run).
 *
 *   smcperf serve --listen ADDR:PORT [--listen ...] [--threads N] [--for SECS]
 *   smcperf bw  --connect ADDR:PORT [-s SIZE] [-t SECS] [-c CONNS] [-n WRITES]
 *               [--threads T]
 *   smcperf lat --connect ADDR:PORT [-s SIZE] [-t SECS] [-c CONNS] [-n COUNT]
 *   smcperf crr --connect ADDR:PORT [-t SECS] [-c LOOPS] [-n COUNT]
 *
 * One server serves all three client modes; the first byte a client sends
 * says what it wants:
 *   'B'  sink: the server discards everything, and on EOF answers with the
 *        number of bytes it received (8 bytes, big endian) and closes.  The
 *        client measures bandwidth with the server's count, so bytes still
 *        queued in a relay when the client stops writing are not counted as
 *        moved until they have really arrived.
 *   'L'  echo: the server writes back whatever it reads (ping-pong latency).
 *   'C'  connect/request/response: the mode byte is the 1-byte request; the
 *        server answers one byte and closes when the client has closed.
 *        The client closes first, so TIME_WAIT stays on the client host.
 *
 * bw runs a thread per connection (at most 64); with --threads T it runs
 * the connections (up to 10000) non-blocking over T epoll threads instead,
 * for aggregate throughput over many flows, and reports how evenly the
 * flows were served (flow_min_bytes, flow_max_bytes, and flow_jain, Jain's
 * fairness index of their bytes).  Each connection
 * gets at most 4 writes per turn before the others, so that the spread
 * is the relay's, not the client's.  -n bounds the writes
 * of each connection (a fixed transfer: -s 65536 -n 1024 is 64 MiB).
 * --sndbuf sets SO_SNDBUF on client sockets, so that many connections do
 * not queue gigabytes in the kernel between them.
 *
 * Every client run is bounded by time (-t) and by count (-n where it makes
 * sense), and an alarm aborts a run that hangs (a wedged relay must not wedge
 * the bench).  A client prints exactly one machine-readable line on stdout:
 *
 *   RESULT mode=bw size=65536 conns=1 secs=2.004 bytes=... gbps=... \
 *          cpu_user=... cpu_sys=... errors=0
 *
 * Everything is plain sockets, threads and epoll: the tool must not share
 * code or libraries with the daemon it measures.  TCP_NODELAY is set on
 * every connection, as the relay sets it on both legs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_LISTEN	16
#define MAX_THREADS	64
#define MAX_CONNS	10000	/* bw --threads: connections over epoll threads */
#define MAX_SIZE	(16u << 20)
#define MAX_SECS	600
#define LAT_SAMPLES_CAP	(4u << 20)	/* all threads together */
#define SINK_BUF	(256u << 10)
#define ECHO_BUF	(64u << 10)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "smcperf: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Parse "1.2.3.4:80", "[::1]:80" or "host:80".  Returns 0 or -EINVAL. */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;

	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, e - s - 1);
		host[e - s - 1] = '\0';
		port = e + 2;
	} else {
		const char *c = strrchr(s, ':');

		if (!c || (size_t)(c - s) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, c - s);
		host[c - s] = '\0';
		port = c + 1;
	}
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* ------------------------------------------------------------------ server */

enum { OBJ_LISTENER, OBJ_CONN };

struct srv_obj {
	int type;
	int fd;
};

struct srv_conn {
	struct srv_obj o;
	char mode;		/* 0 until the first byte arrived */
	uint64_t count;		/* sink: bytes received after the mode byte */
	char *buf;		/* echo: pending bytes to write back */
	size_t off, len;
};

static struct sockaddr_storage srv_addr[MAX_LISTEN];
static socklen_t srv_addrlen[MAX_LISTEN];
static int srv_nlisten;

static void conn_close(int ep, struct srv_conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->o.fd, NULL);
	close(c->o.fd);
	free(c->buf);
	free(c);
}

static void conn_want(int ep, struct srv_conn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	epoll_ctl(ep, EPOLL_CTL_MOD, c->o.fd, &e);
}

/* Echo what is pending; returns <0 on a dead connection. */
static int conn_flush(int ep, struct srv_conn *c)
{
	while (c->off < c->len) {
		ssize_t n = write(c->o.fd, c->buf + c->off, c->len - c->off);

		if (n < 0 && errno == EAGAIN) {
			/* Stop reading until the client takes its echo back:
			 * echo never buffers more than one read's worth. */
			conn_want(ep, c, EPOLLOUT);
			return 0;
		}
		if (n <= 0)
			return -1;
		c->off += n;
	}
	c->off = c->len = 0;
	return 1;
}

static void conn_readable(int ep, struct srv_conn *c, char *sinkbuf)
{
	char *p;
	ssize_t n;

	if (c->mode == 'L' || c->mode == 0) {
		if (!c->buf && !(c->buf = malloc(ECHO_BUF)))
			goto out_close;
		p = c->buf;
		n = read(c->o.fd, p, ECHO_BUF);
	} else {
		p = sinkbuf;
		n = read(c->o.fd, p, SINK_BUF);
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0)
		goto out_close;
	if (n == 0) {
		if (c->mode == 'B') {
			unsigned char b[8];
			uint64_t v = c->count;

			for (int i = 7; i >= 0; i--, v >>= 8)
				b[i] = v & 0xff;
			/* Fresh send queue: 8 bytes always fit. */
			if (write(c->o.fd, b, 8) != 8)
				goto out_close;
		}
		goto out_close;
	}
	if (c->mode == 0) {
		c->mode = p[0];
		if (c->mode == 'C') {
			if (write(c->o.fd, "c", 1) != 1)
				goto out_close;
		} else if (c->mode != 'B' && c->mode != 'L') {
			goto out_close;
		}
		p++;
		n--;
		if (c->mode == 'L' && n > 0)
			memmove(c->buf, p, n);
	}
	if (c->mode == 'B' || c->mode == 'C') {
		c->count += n;
		return;
	}
	c->off = 0;
	c->len = n;
	if (conn_flush(ep, c) < 0)
		goto out_close;
	return;
out_close:
	conn_close(ep, c);
}

static void *serve_thread(void *arg)
{
	double until = *(double *)arg;
	char *sinkbuf = malloc(SINK_BUF);
	struct srv_obj lis[MAX_LISTEN];
	struct epoll_event ev[256];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || !sinkbuf)
		die("epoll_create1");
	for (int i = 0; i < srv_nlisten; i++) {
		int one = 1;
		int fd = socket(srv_addr[i].ss_family,
				SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &lis[i] };

		if (fd < 0)
			die("socket");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* One listener per thread: the kernel spreads connections. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		set_nodelay(fd);
		if (bind(fd, (struct sockaddr *)&srv_addr[i], srv_addrlen[i]) < 0)
			die("bind");
		if (listen(fd, 4096) < 0)
			die("listen");
		lis[i].type = OBJ_LISTENER;
		lis[i].fd = fd;
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
	}
	for (;;) {
		int n = epoll_wait(ep, ev, 256, 1000);

		if (until > 0 && now_s() > until)
			exit(0);
		for (int i = 0; i < n; i++) {
			struct srv_obj *o = ev[i].data.ptr;
			struct srv_conn *c;

			if (o->type == OBJ_LISTENER) {
				int fd;

				while ((fd = accept4(o->fd, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event e = { .events = EPOLLIN };

					c = calloc(1, sizeof(*c));
					if (!c) {
						close(fd);
						continue;
					}
					c->o.type = OBJ_CONN;
					c->o.fd = fd;
					set_nodelay(fd);
					e.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
				}
				if (errno == EMFILE || errno == ENFILE)
					usleep(10000);	/* shed load, do not spin */
				continue;
			}
			c = (struct srv_conn *)o;
			if (c->len) {
				int r = conn_flush(ep, c);

				if (r < 0)
					conn_close(ep, c);
				else if (r > 0)
					conn_want(ep, c, EPOLLIN);
				continue;
			}
			conn_readable(ep, c, sinkbuf);
		}
	}
	return NULL;
}

static int cmd_serve(int nthreads, double for_secs)
{
	pthread_t t[MAX_THREADS];
	static double until;

	if (!srv_nlisten) {
		fprintf(stderr, "smcperf serve: --listen ADDR:PORT is required\n");
		return 2;
	}
	until = for_secs > 0 ? now_s() + for_secs : 0;
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, serve_thread, &until))
			die("pthread_create");
	fprintf(stderr, "smcperf: serving with %d threads\n", nthreads);
	pthread_join(t[0], NULL);
	return 0;
}

/* ------------------------------------------------------------------ client */

struct client_opts {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	size_t size;
	double secs;
	int conns;
	long count;	/* 0: no count bound besides the sample cap */
	int threads;	/* bw: 0 = a thread per connection, else epoll threads */
	int sndbuf;	/* SO_SNDBUF of client sockets; 0 = the kernel's autotuning */
};

static struct client_opts opt;
static pthread_barrier_t start_barrier;
static double t_start, t_deadline;

struct worker {
	pthread_t tid;
	uint64_t bytes;		/* bw: bytes the server confirmed */
	uint64_t sent;
	long ops;
	long errors;
	float *samples;		/* lat, crr: microseconds */
	size_t nsamples, cap;
	double t_done;
	int n;			/* bw --threads: this thread's connections */
	uint64_t min_bytes, max_bytes;	/* bw --threads: per connection */
	double sum_bytes, sumsq_bytes;	/* ... their sum and sum of squares */
	int unwritten;		/* bw --threads: connections we never wrote to */
};

/* The first errors of a run, with what failed and why, on stderr: a count
 * alone does not tell a refused connect from a reset in the middle. */
static atomic_int errors_told;

static void tell_error(const char *what, int err)
{
	if (atomic_fetch_add(&errors_told, 1) < 3)
		fprintf(stderr, "smcperf: %s: %s\n", what, err ? strerror(err) : "end of stream");
}

static int client_connect(int nonblock)
{
	int fd = socket(opt.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	set_nodelay(fd);
	if (opt.sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opt.sndbuf, sizeof(opt.sndbuf));
	if (connect(fd, (struct sockaddr *)&opt.addr, opt.addrlen) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (nonblock)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* Start all workers' measured phase together, after their connects. */
static void sync_start(void)
{
	if (pthread_barrier_wait(&start_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
		t_start = now_s();
		t_deadline = t_start + opt.secs;
	}
	pthread_barrier_wait(&start_barrier);
}

static void *bw_worker(void *arg)
{
	struct worker *w = arg;
	char *buf = malloc(opt.size);
	unsigned char ack[8];
	int fd = client_connect(0);

	if (fd >= 0 && write_all(fd, "B", 1) < 0) {
		close(fd);
		fd = -1;
	}
	sync_start();
	if (fd < 0 || !buf) {
		w->errors++;
		goto out;
	}
	memset(buf, 0x5a, opt.size);
	while (now_s() < t_deadline && (!opt.count || w->ops < opt.count)) {
		if (write_all(fd, buf, opt.size) < 0) {
			w->errors++;
			goto out_close;
		}
		w->sent += opt.size;
		w->ops++;
	}
	shutdown(fd, SHUT_WR);
	if (read_all(fd, ack, 8) < 0) {
		w->errors++;
		goto out_close;
	}
	for (int i = 0; i < 8; i++)
		w->bytes = (w->bytes << 8) | ack[i];
out_close:
	close(fd);
out:
	w->t_done = now_s();
	free(buf);
	return NULL;
}

/*
 * bw --threads: this thread's connections, non-blocking in an edge-
 * triggered epoll set.  Each writable connection gets writes of opt.size
 * until the socket would block (a partial write is finished first, so the
 * server sees whole writes); at the deadline every connection is shut
 * down and its sink count read back.
 */
struct mux_conn {
	int fd;
	size_t off;		/* into the current write */
	long writes;
	int state;		/* 0 writing, 1 waiting for the count, 2 done */
	unsigned char ack[8];
	size_t ackn;
	uint64_t bytes;
	int again;		/* on the list of those still writable */
};

/* Whole writes a connection gets per turn: one that the relay keeps
 * draining would otherwise keep the thread until the deadline while the
 * others wait, and the bench would measure the client's unfairness. */
#define MUX_TURN_WRITES	4

struct mux_list {
	struct mux_conn **c;
	int n;
};

/* Writes until the socket would block (0), the connection is done
 * writing (1), its turn is over while it is still writable (2), or an
 * error (-1). */
static int mux_write(struct mux_conn *m, const char *buf, struct worker *w)
{
	for (int turn = 0;; ) {
		ssize_t n;

		if (!m->off && turn == MUX_TURN_WRITES)
			return 2;

		if (!m->off && ((opt.count && m->writes >= opt.count) || now_s() >= t_deadline))
			return 1;	/* done writing */
		n = write(m->fd, buf + m->off, opt.size - m->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		m->off += n;
		w->sent += n;
		if (m->off == opt.size) {
			m->off = 0;
			m->writes++;
			w->ops++;
			turn++;
		}
	}
}

static int mux_read_ack(struct mux_conn *m)
{
	while (m->ackn < 8) {
		ssize_t n = read(m->fd, m->ack + m->ackn, 8 - m->ackn);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n == 0)
			errno = 0;	/* told as the end of the stream */
		if (n <= 0)
			return -1;
		m->ackn += n;
	}
	for (int i = 0; i < 8; i++)
		m->bytes = (m->bytes << 8) | m->ack[i];
	return 1;
}

/* One connection's turn: write, or read the count once done writing. */
static void mux_step(struct mux_conn *m, const char *buf, struct worker *w,
		     int *left, int *writing, struct mux_list *ready)
{
	int r;

	if (m->state == 0) {
		r = mux_write(m, buf, w);
		if (r == 1) {
			shutdown(m->fd, SHUT_WR);
			m->state = 1;
			(*writing)--;
		} else if (r == 2 && !m->again) {
			m->again = 1;
			ready->c[ready->n++] = m;
		}
		if (r < 0)
			goto fail;
	}
	if (m->state == 1) {
		r = mux_read_ack(m);
		if (r == 0)
			return;
		if (r < 0)
			goto fail;
		w->bytes += m->bytes;
		m->state = 2;
		close(m->fd);
		(*left)--;
	}
	return;
fail:
	tell_error(m->state == 0 ? "write" : "reading the count", errno);
	if (m->state == 0)
		(*writing)--;
	w->errors++;
	m->state = 2;
	close(m->fd);
	(*left)--;
}

static void *mux_worker(void *arg)
{
	struct worker *w = arg;
	struct mux_conn *mc = calloc(w->n, sizeof(*mc));
	char *buf = malloc(opt.size);
	struct epoll_event ev[256];
	int ep = epoll_create1(EPOLL_CLOEXEC), left = 0, writing = 0;
	struct mux_list ready = { calloc(w->n + 1, sizeof(*ready.c)), 0 };
	struct mux_list spare = { calloc(w->n + 1, sizeof(*spare.c)), 0 }, cur;

	if (!mc || !buf || ep < 0 || !ready.c || !spare.c) {
		w->errors++;
		sync_start();
		goto out;
	}
	memset(buf, 0x5a, opt.size);
	for (int i = 0; i < w->n; i++) {
		struct mux_conn *m = &mc[i];

		m->fd = client_connect(0);
		if (m->fd < 0)
			tell_error("connect", -m->fd);
		if (m->fd >= 0 && write_all(m->fd, "B", 1) < 0) {
			tell_error("first write", errno);
			close(m->fd);
			m->fd = -1;
		}
		if (m->fd < 0) {
			w->errors++;
			m->state = 2;
			continue;
		}
		fcntl(m->fd, F_SETFL, fcntl(m->fd, F_GETFL) | O_NONBLOCK);
		left++;
		writing++;
	}
	sync_start();
	/* Registering reports every socket writable: the first round. */
	for (int i = 0; i < w->n; i++) {
		struct epoll_event e = { .events = EPOLLOUT | EPOLLIN | EPOLLET, .data.ptr = &mc[i] };

		if (mc[i].state == 0 && epoll_ctl(ep, EPOLL_CTL_ADD, mc[i].fd, &e) < 0) {
			close(mc[i].fd);
			mc[i].state = 2;
			w->errors++;
			left--;
			writing--;
		}
	}
	while (left > 0) {
		double now = now_s();
		int timeout = writing ? (int)((t_deadline - now) * 1000) + 1 : 1000;
		int n;

		if (timeout < 0 || ready.n)
			timeout = 0;
		n = epoll_wait(ep, ev, 256, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (writing && now_s() >= t_deadline) {
			/* Time is up: every connection still writing
			 * finishes its current write and shuts down. */
			for (int i = 0; i < w->n; i++) {
				struct mux_conn *m = &mc[i];

				if (m->state != 0)
					continue;
				while (m->off) {	/* finish a partial write */
					struct pollfd p = { .fd = m->fd, .events = POLLOUT };
					int r = mux_write(m, buf, w);

					if (r < 0)
						break;
					if (m->off && poll(&p, 1, 5000) <= 0)
						break;
				}
				shutdown(m->fd, SHUT_WR);
				m->state = 1;
				writing--;
			}
		}
		/* Those still writable after their last turn, after the
		 * new events (which may include them again). */
		cur = ready;
		ready = spare;
		spare = cur;
		ready.n = 0;
		for (int i = 0; i < n; i++)
			mux_step(ev[i].data.ptr, buf, w, &left, &writing, &ready);
		for (int i = 0; i < cur.n; i++) {
			cur.c[i]->again = 0;
			mux_step(cur.c[i], buf, w, &left, &writing, &ready);
		}
		spare = cur;
	}
	w->min_bytes = UINT64_MAX;
	for (int i = 0; i < w->n; i++) {
		if (mc[i].state != 2) {		/* epoll failed */
			close(mc[i].fd);
			w->errors++;
		}
		if (!mc[i].writes && !mc[i].off)
			w->unwritten++;
		if (mc[i].bytes < w->min_bytes)
			w->min_bytes = mc[i].bytes;
		if (mc[i].bytes > w->max_bytes)
			w->max_bytes = mc[i].bytes;
		w->sum_bytes += (double)mc[i].bytes;
		w->sumsq_bytes += (double)mc[i].bytes * (double)mc[i].bytes;
	}
out:
	w->t_done = now_s();
	if (ep >= 0)
		close(ep);
	free(mc);
	free(ready.c);
	free(spare.c);
	free(buf);
	return NULL;
}

static int sample_add(struct worker *w, double us)
{
	if (w->nsamples >= w->cap)
		return -1;
	w->samples[w->nsamples++] = us;
	return 0;
}

/* One ping-pong of opt.size bytes on a non-blocking socket.  Writing and
 * reading are interleaved so a message larger than the socket buffers can
 * never deadlock against the echo. */
static int pingpong(int fd, char *out, char *in)
{
	size_t sent = 0, rcvd = 0;

	while (rcvd < opt.size) {
		int progress = 0;
		ssize_t n;

		if (sent < opt.size) {
			n = write(fd, out + sent, opt.size - sent);
			if (n > 0) {
				sent += n;
				progress = 1;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return -errno;
			}
		}
		n = read(fd, in + rcvd, opt.size - rcvd);
		if (n > 0) {
			rcvd += n;
			progress = 1;
		} else if (n == 0) {
			return -EPIPE;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
		if (!progress) {
			struct pollfd p = {
				.fd = fd,
				.events = POLLIN | (sent < opt.size ? POLLOUT : 0),
			};

			if (poll(&p, 1, 5000) == 0)
				return -ETIMEDOUT;
		}
	}
	return 0;
}

static void *lat_worker(void *arg)
{
	struct worker *w = arg;
	char *out = malloc(opt.size), *in = malloc(opt.size);
	int fd = client_connect(0);

	if (fd >= 0 && write_all(fd, "L", 1) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	sync_start();
	if (fd < 0 || !out || !in) {
		w->errors++;
		goto out;
	}
	memset(out, 0xa5, opt.size);
	for (;;) {
		double t0 = now_s(), t1;

		if (t0 >= t_deadline || (opt.count && w->ops >= opt.count))
			break;
		if (pingpong(fd, out, in) < 0) {
			w->errors++;
			break;
		}
		t1 = now_s();
		w->ops++;
		w->bytes += opt.size;
		if (sample_add(w, (t1 - t0) * 1e6) < 0)
			break;
	}
	close(fd);
out:
	w->t_done = now_s();
	free(out);
	free(in);
	return NULL;
}

static void *crr_worker(void *arg)
{
	struct worker *w = arg;

	sync_start();
	for (;;) {
		double t0 = now_s(), t1;
		char b;
		int fd;

		if (t0 >= t_deadline || (opt.count && w->ops >= opt.count))
			break;
		fd = client_connect(0);
		if (fd < 0) {
			/* Usually EADDRNOTAVAIL (ports in TIME_WAIT): count it,
			 * back off a little and keep the run bounded. */
			if (++w->errors > 10000)
				break;
			usleep(1000);
			continue;
		}
		if (write_all(fd, "C", 1) < 0 || read_all(fd, &b, 1) < 0) {
			w->errors++;
			close(fd);
			continue;
		}
		close(fd);
		t1 = now_s();
		w->ops++;
		sample_add(w, (t1 - t0) * 1e6);
	}
	w->t_done = now_s();
	return NULL;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static double pct(const float *s, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(p / 100.0 * n);
	if (i > 0)
		i--;
	if (i >= n)
		i = n - 1;
	return s[i];
}

static void on_alarm(int sig)
{
	static const char msg[] = "smcperf: run exceeded its time bound, aborting\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static int cmd_client(const char *mode)
{
	void *(*fn)(void *);
	int nw = opt.threads ? opt.threads : opt.conns;
	struct worker *w = calloc(nw, sizeof(*w));
	struct rusage r0, r1;
	uint64_t bytes = 0, sent = 0, min_b = UINT64_MAX, max_b = 0;
	long ops = 0, errors = 0, unwritten = 0;
	double sum_b = 0, sumsq_b = 0, n_b = 0;
	double t_end = 0, secs, cpu_u, cpu_s;
	size_t nall = 0;
	float *all = NULL;

	if (!w)
		die("calloc");
	if (!strcmp(mode, "bw"))
		fn = opt.threads ? mux_worker : bw_worker;
	else if (!strcmp(mode, "lat"))
		fn = lat_worker;
	else
		fn = crr_worker;
	if (fn == mux_worker) {
		for (int i = 0; i < nw; i++)
			w[i].n = (int)((long)opt.conns * (i + 1) / nw - (long)opt.conns * i / nw);
	}
	if (fn != bw_worker && fn != mux_worker) {
		for (int i = 0; i < opt.conns; i++) {
			w[i].cap = LAT_SAMPLES_CAP / opt.conns;
			if (opt.count && (size_t)opt.count < w[i].cap)
				w[i].cap = opt.count;
			w[i].samples = malloc(w[i].cap * sizeof(float));
			if (!w[i].samples)
				die("malloc");
		}
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	/* Many connections take a while to set up before the clock starts. */
	alarm((unsigned)opt.secs + 30 + (fn == mux_worker ? opt.conns / 50 : 0));
	pthread_barrier_init(&start_barrier, NULL, nw);
	getrusage(RUSAGE_SELF, &r0);
	for (int i = 0; i < nw; i++)
		if (pthread_create(&w[i].tid, NULL, fn, &w[i]))
			die("pthread_create");
	for (int i = 0; i < nw; i++) {
		pthread_join(w[i].tid, NULL);
		unwritten += w[i].unwritten;
		if (fn == mux_worker && w[i].n) {
			if (w[i].min_bytes < min_b)
				min_b = w[i].min_bytes;
			if (w[i].max_bytes > max_b)
				max_b = w[i].max_bytes;
			sum_b += w[i].sum_bytes;
			sumsq_b += w[i].sumsq_bytes;
			n_b += w[i].n;
		}
		bytes += w[i].bytes;
		sent += w[i].sent;
		ops += w[i].ops;
		errors += w[i].errors;
		nall += w[i].nsamples;
		if (w[i].t_done > t_end)
			t_end = w[i].t_done;
	}
	getrusage(RUSAGE_SELF, &r1);
	alarm(0);
	secs = t_end - t_start;
	if (secs <= 0)
		secs = 1e-9;
	cpu_u = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
		(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
	cpu_s = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
		(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;

	if (fn == bw_worker || fn == mux_worker) {
		printf("RESULT mode=bw size=%zu conns=%d secs=%.3f bytes=%llu sent=%llu "
		       "writes=%ld gbps=%.4f cpu_user=%.3f cpu_sys=%.3f errors=%ld",
		       opt.size, opt.conns, secs, (unsigned long long)bytes,
		       (unsigned long long)sent, ops, bytes * 8.0 / secs / 1e9,
		       cpu_u, cpu_s, errors);
		/* How evenly the flows were served. */
		if (fn == mux_worker)
			printf(" threads=%d flow_min_bytes=%llu flow_max_bytes=%llu flows_unwritten=%ld"
			       " flow_jain=%.4f",
			       nw, (unsigned long long)(min_b == UINT64_MAX ? 0 : min_b),
			       (unsigned long long)max_b, unwritten,
			       /* Jain's fairness index: 1 for equal shares,
				* 1/n when one flow got everything. */
			       sumsq_b > 0 ? sum_b * sum_b / (n_b * sumsq_b) : 0.0);
		printf("\n");
	} else {
		double sum = 0;

		all = malloc((nall ? nall : 1) * sizeof(float));
		if (!all)
			die("malloc");
		nall = 0;
		for (int i = 0; i < opt.conns; i++) {
			memcpy(all + nall, w[i].samples, w[i].nsamples * sizeof(float));
			nall += w[i].nsamples;
		}
		for (size_t i = 0; i < nall; i++)
			sum += all[i];
		qsort(all, nall, sizeof(float), cmp_float);
		printf("RESULT mode=%s size=%zu conns=%d secs=%.3f ops=%ld rate=%.1f "
		       "mean_us=%.2f p50_us=%.2f p99_us=%.2f max_us=%.2f "
		       "cpu_user=%.3f cpu_sys=%.3f errors=%ld\n",
		       mode, fn == crr_worker ? (size_t)1 : opt.size, opt.conns, secs,
		       ops, ops / secs, nall ? sum / nall : 0, pct(all, nall, 50),
		       pct(all, nall, 99), nall ? all[nall - 1] : 0, cpu_u, cpu_s,
		       errors);
	}
	fflush(stdout);
	/* A run that moved nothing is a failed run, not a zero result. */
	return ops > 0 ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smcperf serve --listen ADDR:PORT [--listen ...] [--threads N] [--for SECS]\n"
		"       smcperf bw  --connect ADDR:PORT [-s SIZE] [-t SECS] [-c CONNS] [-n WRITES]\n"
		"                   [--threads T]   (T epoll threads for up to %d conns)\n"
		"       (clients: --sndbuf BYTES sets SO_SNDBUF, bounding what each\n"
		"        connection queues in the kernel)\n"
		"       smcperf lat --connect ADDR:PORT [-s SIZE] [-t SECS] [-c CONNS] [-n COUNT]\n"
		"       smcperf crr --connect ADDR:PORT [-t SECS] [-c LOOPS] [-n COUNT]\n"
		"Prints one line 'RESULT key=value ...' per client run.\n", MAX_CONNS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "connect", required_argument, NULL, 'a' },
		{ "threads", required_argument, NULL, 'T' },
		{ "for", required_argument, NULL, 'F' },
		{ "size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "conns", required_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "sndbuf", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *mode;
	int nthreads = 2, have_addr = 0, have_threads = 0, ch;
	double for_secs = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	mode = argv[1];
	opt.size = 1;
	opt.secs = 2;
	opt.conns = 1;
	optind = 2;
	while ((ch = getopt_long(argc, argv, "s:t:c:n:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (srv_nlisten >= MAX_LISTEN ||
			    parse_addr(optarg, &srv_addr[srv_nlisten],
				       &srv_addrlen[srv_nlisten]) < 0) {
				fprintf(stderr, "smcperf: bad --listen %s\n", optarg);
				return 2;
			}
			srv_nlisten++;
			break;
		case 'a':
			if (parse_addr(optarg, &opt.addr, &opt.addrlen) < 0) {
				fprintf(stderr, "smcperf: bad --connect %s\n", optarg);
				return 2;
			}
			have_addr = 1;
			break;
		case 'T':
			nthreads = atoi(optarg);
			have_threads = 1;
			break;
		case 'F':
			for_secs = atof(optarg);
			break;
		case 's':
			opt.size = strtoul(optarg, NULL, 0);
			break;
		case 't':
			opt.secs = atof(optarg);
			break;
		case 'c':
			opt.conns = atoi(optarg);
			break;
		case 'n':
			opt.count = atol(optarg);
			break;
		case 'S':
			opt.sndbuf = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (have_threads && strcmp(mode, "serve")) {
		if (strcmp(mode, "bw")) {
			fprintf(stderr, "smcperf %s: --threads is for serve and bw\n", mode);
			return 2;
		}
		opt.threads = nthreads;
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || opt.conns < 1 ||
	    opt.conns > (opt.threads ? MAX_CONNS : MAX_THREADS) || opt.size < 1 ||
	    opt.size > MAX_SIZE || !(opt.secs > 0 && opt.secs <= MAX_SECS) || opt.count < 0) {
		fprintf(stderr, "smcperf: option out of range (threads 1..%d, conns 1..%d or"
			" 1..%d with bw --threads, size 1..%u, time 0..%d s)\n", MAX_THREADS,
			MAX_THREADS, MAX_CONNS, MAX_SIZE, MAX_SECS);
		return 2;
	}
	if (opt.threads > opt.conns)
		opt.threads = opt.conns;
	if (!strcmp(mode, "serve"))
		return cmd_serve(nthreads, for_secs);
	if (strcmp(mode, "bw") && strcmp(mode, "lat") && strcmp(mode, "crr")) {
		usage(stderr);
		return 2;
	}
	if (!have_addr) {
		fprintf(stderr, "smcperf %s: --connect ADDR:PORT is required\n", mode);
		return 2;
	}
	return cmd_client(mode);
}
