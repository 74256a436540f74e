/* SPDX-License-Identifier: MIT */
/*
 * The TCP relay over real loopback sockets. Threads play the application
 * (behind the redirect) and the original destination with blocking I/O,
 * while the test's main thread runs the relay's event loop. splice() is
 * wrapped to count calls: a relay that spins shows up as a call count.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <fcntl.h>

#include "core/container.h"
#include "core/epset.h"
#include "core/pipe_pool.h"
#include "relay/relay.h"

static _Atomic unsigned long splice_calls;

ssize_t __real_splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len,
		      unsigned int flags);
ssize_t __wrap_splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len,
		      unsigned int flags)
{
	splice_calls++;
	return __real_splice(in, off_in, out, off_out, len, flags);
}

struct fx {
	uv_loop_t loop;
	struct epset epset;
	struct pipe_pool pipes;
	struct relay_env env;
	struct relay r;
	counter_t bytes_in, bytes_out;
	int app;		/* the application's socket */
	int srv;		/* the destination's accepted socket */
	int srv_listen;
	struct sockaddr_in srv_addr;
	int ended;		/* enum relay_end + 1, 0: not yet */
	int ended_err;
	int closed;
};

static void fx_ended(struct relay *r, enum relay_end how, int err)
{
	struct fx *fx = container_of(r, struct fx, r);

	fx->ended = how + 1;
	fx->ended_err = err;
}

static void fx_closed(struct relay *r)
{
	struct fx *fx = container_of(r, struct fx, r);

	fx->closed = 1;
}

static const struct relay_ops fx_ops = { .ended = fx_ended, .closed = fx_closed };

static int listen_any(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	*addr = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
	return fd;
}

/* Application socket plus the relay's end of it, as accept() hands it. */
static int app_pair(int *app)
{
	struct sockaddr_in a;
	int l = listen_any(&a), fd;

	*app = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*app, (struct sockaddr *)&a, sizeof(a)), 0);
	fd = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	assert_true(fd >= 0);
	close(l);
	return fd;
}

static void fx_start_timeout(struct fx *fx, const struct sockaddr_in *dest, size_t buffer,
			     unsigned timeout_ms)
{
	struct relay_params p = { .mark = 0, .connect_timeout_ms = timeout_ms,
				  .keepalive_ms = 0, .client_tuned = false };
	int relay_client = app_pair(&fx->app);

	fx->pipes.size = buffer;
	assert_int_equal(relay_start(&fx->r, &fx->env, relay_client,
				     (const struct sockaddr *)dest, &p, &fx_ops), 0);
}

static void fx_start(struct fx *fx, const struct sockaddr_in *dest, size_t buffer)
{
	fx_start_timeout(fx, dest, buffer, 2000);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	uv_loop_init(&fx->loop);
	assert_int_equal(epset_init(&fx->epset, &fx->loop), 0);
	assert_int_equal(pipe_pool_init(&fx->pipes, 4, 65536), 0);
	fx->env = (struct relay_env){ .loop = &fx->loop, .epset = &fx->epset,
				      .pipes = &fx->pipes, .bytes_in = &fx->bytes_in,
				      .bytes_out = &fx->bytes_out };
	fx->srv = fx->app = -1;
	fx->srv_listen = listen_any(&fx->srv_addr);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	if (!fx->closed && fx->ended == 0)
		relay_abort(&fx->r);
	epset_close(&fx->epset, NULL);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	pipe_pool_close(&fx->pipes);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	if (fx->app >= 0)
		close(fx->app);
	if (fx->srv >= 0)
		close(fx->srv);
	close(fx->srv_listen);
	free(fx);
	return 0;
}

static void on_deadline(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

/* Runs the loop until *flag or ms pass; returns whether *flag was set. */
static int run_until(struct fx *fx, volatile int *flag, unsigned ms)
{
	uv_timer_t t;
	int expired = 0;

	uv_timer_init(&fx->loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_deadline, ms, 0);
	while (!*flag && !expired)
		uv_run(&fx->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	return *flag;
}

static void fx_accept_server(struct fx *fx)
{
	int connected = 0;

	/* Let the relay's connect complete, then take the server side. */
	fx->srv = accept(fx->srv_listen, NULL, NULL);
	assert_true(fx->srv >= 0);
	run_until(fx, &connected, 20);
}

/* ---- blocking peers on threads ---- */

struct io {
	int fd;
	uint8_t *buf;
	size_t len;		/* to write, or capacity to read */
	size_t done;
	int err;
	int wait_eof_fd;	/* writer: first read this fd to EOF */
	int linger_rst;		/* writer: close with RST after writing */
	int shut;		/* writer: shutdown(SHUT_WR) when done */
};

static void *writer(void *arg)
{
	struct io *io = arg;
	char sink[4096];

	if (io->wait_eof_fd >= 0)
		while (read(io->wait_eof_fd, sink, sizeof(sink)) > 0)
			;
	while (io->done < io->len) {
		ssize_t n = write(io->fd, io->buf + io->done, io->len - io->done);

		if (n < 0) {
			io->err = errno;
			return NULL;
		}
		io->done += n;
	}
	if (io->shut)
		shutdown(io->fd, SHUT_WR);
	return NULL;
}

static void *reader(void *arg)
{
	struct io *io = arg;

	for (;;) {
		ssize_t n = read(io->fd, io->buf + io->done, io->len - io->done);

		if (n < 0) {
			io->err = errno;
			return NULL;
		}
		if (n == 0)
			return NULL;
		io->done += n;
		if (io->done == io->len) {
			char extra;

			/* Anything past the expected bytes is a bug too. */
			n = read(io->fd, &extra, 1);
			if (n > 0)
				io->err = EOVERFLOW;
			return NULL;
		}
	}
}

static uint8_t *random_bytes(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n);
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		b[i] = seed >> 16;
	}
	return b;
}

/* Both directions at once, each ending with FIN: every byte arrives, in
 * order, and the relay ends cleanly. */
static void test_duplex(void **state)
{
	struct fx *fx = *state;
	const size_t up = 4 << 20, down = 3 << 20;
	uint8_t *ubuf = random_bytes(up, 1), *dbuf = random_bytes(down, 2);
	uint8_t *urecv = malloc(up), *drecv = malloc(down);
	pthread_t t[4];
	struct io aw, ar, sw, sr;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	aw = (struct io){ .fd = fx->app, .buf = ubuf, .len = up, .wait_eof_fd = -1, .shut = 1 };
	sr = (struct io){ .fd = fx->srv, .buf = urecv, .len = up, .wait_eof_fd = -1 };
	sw = (struct io){ .fd = fx->srv, .buf = dbuf, .len = down, .wait_eof_fd = -1, .shut = 1 };
	ar = (struct io){ .fd = fx->app, .buf = drecv, .len = down, .wait_eof_fd = -1 };
	pthread_create(&t[0], NULL, writer, &aw);
	pthread_create(&t[1], NULL, reader, &sr);
	pthread_create(&t[2], NULL, writer, &sw);
	pthread_create(&t[3], NULL, reader, &ar);
	assert_true(run_until(fx, &fx->closed, 20000));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);

	assert_int_equal(fx->ended, RELAY_END_CLEAN + 1);
	assert_int_equal(aw.err, 0);
	assert_int_equal(sr.err, 0);
	assert_int_equal(ar.err, 0);
	assert_int_equal(sr.done, up);
	assert_int_equal(ar.done, down);
	assert_memory_equal(urecv, ubuf, up);
	assert_memory_equal(drecv, dbuf, down);
	assert_int_equal(fx->bytes_in, up);
	assert_int_equal(fx->bytes_out, down);
	free(ubuf); free(dbuf); free(urecv); free(drecv);
}

/* The client half-closes first; the server answers only after it saw EOF,
 * so the FIN must have been passed on while the other direction is open. */
static void test_half_close_client_first(void **state)
{
	struct fx *fx = *state;
	const size_t up = 1 << 20, down = 2 << 20;
	uint8_t *ubuf = random_bytes(up, 3), *dbuf = random_bytes(down, 4), *drecv = malloc(down);
	pthread_t tw, ts, tr;
	struct io aw, sw, ar;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	aw = (struct io){ .fd = fx->app, .buf = ubuf, .len = up, .wait_eof_fd = -1, .shut = 1 };
	sw = (struct io){ .fd = fx->srv, .buf = dbuf, .len = down, .wait_eof_fd = fx->srv, .shut = 1 };
	ar = (struct io){ .fd = fx->app, .buf = drecv, .len = down, .wait_eof_fd = -1 };
	pthread_create(&tw, NULL, writer, &aw);
	pthread_create(&ts, NULL, writer, &sw);
	pthread_create(&tr, NULL, reader, &ar);
	assert_true(run_until(fx, &fx->closed, 20000));
	pthread_join(tw, NULL);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	assert_int_equal(fx->ended, RELAY_END_CLEAN + 1);
	assert_int_equal(sw.done, down);
	assert_int_equal(ar.done, down);
	assert_memory_equal(drecv, dbuf, down);
	assert_int_equal(fx->bytes_in, up);
	free(ubuf); free(dbuf); free(drecv);
}

/* The server closes its side first while the client keeps sending. */
static void test_half_close_server_first(void **state)
{
	struct fx *fx = *state;
	const size_t up = 2 << 20;
	uint8_t *ubuf = random_bytes(up, 5), *urecv = malloc(up);
	char c;
	pthread_t tw, tr;
	struct io aw, sr;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	shutdown(fx->srv, SHUT_WR);
	aw = (struct io){ .fd = fx->app, .buf = ubuf, .len = up, .wait_eof_fd = fx->app, .shut = 1 };
	sr = (struct io){ .fd = fx->srv, .buf = urecv, .len = up, .wait_eof_fd = -1 };
	pthread_create(&tw, NULL, writer, &aw);	/* waits for the server's FIN first */
	pthread_create(&tr, NULL, reader, &sr);
	assert_true(run_until(fx, &fx->closed, 20000));
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	assert_int_equal(fx->ended, RELAY_END_CLEAN + 1);
	assert_int_equal(sr.done, up);
	assert_memory_equal(urecv, ubuf, up);
	assert_int_equal(read(fx->app, &c, 1), 0);
	free(ubuf); free(urecv);
}

static void set_rst(int fd)
{
	struct linger lg = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* An RST from the server becomes an RST to the application. */
static void test_server_rst(void **state)
{
	struct fx *fx = *state;
	char c;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	set_rst(fx->srv);
	close(fx->srv);
	fx->srv = -1;
	assert_true(run_until(fx, &fx->closed, 5000));
	assert_int_equal(fx->ended, RELAY_END_RESET + 1);
	assert_int_equal(fx->ended_err, -ECONNRESET);
	assert_int_equal(read(fx->app, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
}

/* And one from the application reaches the server. */
static void test_client_rst(void **state)
{
	struct fx *fx = *state;
	char c;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	set_rst(fx->app);
	close(fx->app);
	fx->app = -1;
	assert_true(run_until(fx, &fx->closed, 5000));
	assert_int_equal(fx->ended, RELAY_END_RESET + 1);
	assert_int_equal(read(fx->srv, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
}

/* A refused destination: the application gets an RST, not a hang. */
static void test_connect_refused(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_in dead;
	int l = listen_any(&dead);
	char c;

	close(l);	/* nobody listens on that port now */
	fx_start(fx, &dead, 65536);
	assert_true(run_until(fx, &fx->closed, 5000));
	assert_int_equal(fx->ended, RELAY_END_CONNECT_FAILED + 1);
	assert_int_equal(fx->ended_err, -ECONNREFUSED);
	assert_int_equal(read(fx->app, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
}

/*
 * The connect deadline passes while the worker was busy elsewhere, but
 * the destination had answered: libuv runs the timer before it polls the
 * socket, and the relay must go on, not fail a connected flow.
 * (Regression: such flows were reset as connect timeouts.)
 */
static void test_deadline_after_connect(void **state)
{
	struct fx *fx = *state;
	char c = 0;
	int i;

	fx_start_timeout(fx, &fx->srv_addr, 65536, 1);
	fx->srv = accept(fx->srv_listen, NULL, NULL);	/* loopback: connected */
	assert_true(fx->srv >= 0);
	usleep(5000);		/* busy past the deadline */
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(fx->ended, 0);
	/* And the flow carries bytes. */
	assert_int_equal(write(fx->app, "x", 1), 1);
	for (i = 0; i < 500 && recv(fx->srv, &c, 1, MSG_DONTWAIT) != 1; i++) {
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	assert_int_equal(c, 'x');
	assert_int_equal(fx->ended, 0);
}

/*
 * The server reads nothing: the relay must hold at most its pipe and then
 * stop reading, and while blocked it must not spin (few splice calls).
 */
static void test_backpressure_no_spin(void **state)
{
	struct fx *fx = *state;
	const size_t chunk = 1 << 20;
	uint8_t *b = random_bytes(chunk, 6);
	unsigned long before;
	size_t sent = 0;
	ssize_t n;
	int never = 0;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	fcntl(fx->app, F_SETFL, O_NONBLOCK);
	/* Fill everything: app send buffer, relay, server receive buffer. */
	for (int round = 0; round < 64; round++) {
		while ((n = write(fx->app, b, chunk)) > 0)
			sent += n;
		run_until(fx, &never, 20);
	}
	assert_true(sent > 0);
	assert_true(fx->r.dir[RELAY_CLIENT].queued <= fx->r.dir[RELAY_CLIENT].pipe.cap);
	before = splice_calls;
	run_until(fx, &never, 300);
	assert_true(splice_calls - before < 10);
	assert_int_equal(fx->ended, 0);
	/* Nothing was lost: what the server can still read plus what it is
	 * owed equals what was sent once it drains. */
	assert_true(fx->bytes_in + fx->r.dir[RELAY_CLIENT].queued <= sent);
	free(b);
}

/* Urgent data stays in the stream and does not wedge splice. */
static void test_urgent_inline(void **state)
{
	struct fx *fx = *state;
	char got[16] = { 0 };
	uint8_t buf[16];
	pthread_t tr;
	struct io sr;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	sr = (struct io){ .fd = fx->srv, .buf = buf, .len = sizeof(buf), .wait_eof_fd = -1 };
	pthread_create(&tr, NULL, reader, &sr);
	assert_int_equal(send(fx->app, "abc", 3, 0), 3);
	assert_int_equal(send(fx->app, "X", 1, MSG_OOB), 1);
	assert_int_equal(send(fx->app, "def", 3, 0), 3);
	shutdown(fx->app, SHUT_WR);
	shutdown(fx->srv, SHUT_WR);
	assert_true(run_until(fx, &fx->closed, 5000));
	pthread_join(tr, NULL);
	memcpy(got, buf, sr.done);
	assert_string_equal(got, "abcXdef");
	assert_true(splice_calls < 1000);
}

/* Once the bytes have crossed, an idle flow holds its two sockets and no
 * pipe: pipes go back to the pool as soon as they are empty. */
static void test_idle_holds_no_pipe(void **state)
{
	struct fx *fx = *state;
	char buf[64];
	int never = 0;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	assert_int_equal(write(fx->app, "ping", 4), 4);
	assert_int_equal(write(fx->srv, "pong!", 5), 5);
	run_until(fx, &never, 100);
	assert_int_equal(read(fx->srv, buf, sizeof(buf)), 4);
	assert_int_equal(read(fx->app, buf, sizeof(buf)), 5);
	assert_int_equal(fx->r.state, RELAY_ESTABLISHED);
	assert_int_equal(fx->r.dir[RELAY_CLIENT].pipe.rd, -1);
	assert_int_equal(fx->r.dir[RELAY_SERVER].pipe.rd, -1);
	assert_true(fx->pipes.n >= 1);	/* kept for the next burst */
}

/* Out of fds when an idle flow needs a pipe again: the bytes go through
 * the copying fallback at once, no reset, no stall; splice resumes after. */
static void test_no_pipe_fallback(void **state)
{
	struct fx *fx = *state;
	struct rlimit old, low;
	char buf[16] = { 0 };
	int never = 0, maxfd;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	pipe_pool_trim(&fx->pipes);
	maxfd = dup(0);
	close(maxfd);
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = maxfd;	/* no fd left for a pipe */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);

	assert_int_equal(write(fx->app, "hello", 5), 5);
	run_until(fx, &never, 100);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(fx->ended, 0);
	assert_int_equal(fx->r.dir[RELAY_CLIENT].pipe.rd, -1);
	assert_int_equal(read(fx->srv, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "hello");
	assert_int_equal(fx->bytes_in, 5);

	/* A FIN crosses the same way, with the fds back: splice again. */
	assert_int_equal(write(fx->app, "bye", 3), 3);
	shutdown(fx->app, SHUT_WR);
	run_until(fx, &never, 100);
	assert_int_equal(read(fx->srv, buf, sizeof(buf)), 3);
	assert_int_equal(read(fx->srv, buf, sizeof(buf)), 0);
}

/* relay_abort() resets both legs. */
static void test_abort(void **state)
{
	struct fx *fx = *state;
	char c;

	fx_start(fx, &fx->srv_addr, 65536);
	fx_accept_server(fx);
	relay_abort(&fx->r);
	assert_true(run_until(fx, &fx->closed, 1000));
	assert_int_equal(fx->ended, RELAY_END_ABORTED + 1);
	assert_int_equal(read(fx->app, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_int_equal(read(fx->srv, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_duplex, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close_client_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close_server_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_rst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_rst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadline_after_connect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure_no_spin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_urgent_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_holds_no_pipe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_pipe_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
	};

	return cmocka_run_group_tests_name("relay", tests, NULL, NULL);
}
