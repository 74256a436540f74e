/* SPDX-License-Identifier: MIT */
/*
 * Redirect listeners and the flows of one event loop. Accepting is done by
 * hand on a uv_poll handle: on EMFILE/ENFILE/ENOBUFS/ENOMEM we stop polling
 * the listeners and retry after a back-off that doubles up to a second, so
 * fd exhaustion never turns into a busy loop, and no connection is accepted
 * only to be dropped (libuv's uv_tcp does that).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfg.h"
#include "core/addr.h"
#include "smc/clc.h"
#include "core/epset.h"
#include "flow.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "core/pipe_pool.h"
#include "proxy.h"
#include "relay/relay.h"
#include "smc/transport.h"

#define ACCEPT_BATCH		64
#define PAUSE_MIN_MS		10
#define PAUSE_MAX_MS		1000
#define IDLE_SWEEP_MAX_MS	1000
#define ADOPT_MAX		64	/* inherited listening sockets */
#define PIPE_POOL_MAX		64	/* empty pipes kept for reuse */

static void proxy_on_acceptable(uv_poll_t *h, int status, int events);

static void proxy_maybe_closed(struct proxy *p);
static void proxy_on_handle_closed(uv_handle_t *h);
static void proxy_close_transports(struct proxy *p);

static void proxy_on_epset_closed(struct epset *s)
{
	struct proxy *p = (struct proxy *)((char *)s - offsetof(struct proxy, epset));

	p->open_handles--;
	proxy_maybe_closed(p);
}

static void proxy_maybe_closed(struct proxy *p)
{
	if (!p->closing || p->n_flows || !list_empty(&p->grave))
		return;
	if (!p->tick_closing) {
		p->tick_closing = true;
		p->open_handles++;
		uv_close((uv_handle_t *)&p->tick, proxy_on_handle_closed);
	}
	if (p->epset.fd >= 0 && !p->epset_closing) {
		proxy_close_transports(p);	/* their fds are in the set */
		/* Last: the flows that just closed were in it. */
		p->epset_closing = true;
		p->open_handles++;
		epset_close(&p->epset, proxy_on_epset_closed);
	}
	if (p->open_handles)
		return;
	free(p->listeners);
	p->listeners = NULL;
	pipe_pool_close(&p->pipes);
	if (p->close_cb) {
		void (*cb)(struct proxy *p) = p->close_cb;

		p->close_cb = NULL;
		cb(p);
	}
}

void proxy__flow_freed(struct proxy *p)
{
	if (p->n_flows == 0 && p->ops->idle)
		p->ops->idle(p);
	proxy_maybe_closed(p);
}

static void proxy_on_handle_closed(uv_handle_t *h)
{
	struct proxy *p = h->data;

	p->open_handles--;
	proxy_maybe_closed(p);
}

void proxy__on_handle_closed(uv_handle_t *h)
{
	proxy_on_handle_closed(h);
}

void proxy__kick_link(struct proxy *p, struct link *lnk)
{
	if (list_empty(&lnk->kick_node))
		list_add_tail(&lnk->kick_node, &p->kick_links);
}

void proxy__defer(struct proxy *p, struct proxy_defer *d, void (*fn)(struct proxy_defer *d))
{
	d->fn = fn;
	list_add_tail(&d->node, &p->grave);
}

/*
 * The end of a batch of events, and of every loop iteration: ring the
 * doorbells of links that posted (one per link however many flows wrote),
 * then free what the batch let go of.
 */
static void proxy_batch_end(struct proxy *p)
{
	while (!list_empty(&p->kick_links)) {
		struct link *lnk = list_entry(p->kick_links.next, struct link, kick_node);

		list_del(&lnk->kick_node);
		link_flush(lnk);
	}
	while (!list_empty(&p->grave)) {
		struct proxy_defer *d = list_entry(p->grave.next, struct proxy_defer, node);

		list_del(&d->node);
		d->fn(d);
	}
	proxy_maybe_closed(p);
}

static void proxy_on_epset_batch(struct epset *s)
{
	proxy_batch_end((struct proxy *)((char *)s - offsetof(struct proxy, epset)));
}

/* Rounds of link work done before blocking, at most, so that sockets and
 * timers get their turn under a steady stream of messages. */
#define PROXY_IDLE_ROUNDS 8

/* The work before the loop blocks: the end of the batch, then each
 * transport's look at its queues (smc_transport_ops.before_sleep). */
static void proxy_before_block(struct proxy *p)
{
	const struct smc_transport_ops *t;
	unsigned round, i;
	bool more = true;

	for (round = 0; more; round++) {
		proxy_batch_end(p);
		more = false;
		smc_transport_foreach(t, i)
			if (t->before_sleep && t->before_sleep(p, round < PROXY_IDLE_ROUNDS))
				more = true;
	}
}

static void proxy_on_tick(uv_prepare_t *h)
{
	proxy_before_block(h->data);
}

#define PROXY_RUN_BATCH 64

/*
 * Runs the proxy's event loop until nothing is left in it, with our epoll
 * set as the outer poller and libuv's own epoll fd inside it: one
 * epoll_wait per wake-up instead of two (libuv's, then ours), which was a
 * third of the system calls of a short connection and of a small message
 * over a link. libuv runs (its timers, its own fds, closing handles) only
 * when its fd is readable or a timer is due. The set lives until the
 * proxy closed (proxy_close()), which is what ends this.
 */
int proxy_run(struct proxy *p)
{
	uv_loop_t *loop = p->loop;
	struct epoll_event ev[PROXY_RUN_BATCH];
	struct epoll_event uv_ev = { .events = EPOLLIN, .data.ptr = NULL };
	int n, i, timeout;

	if (p->epset.fd < 0 ||
	    epoll_ctl(p->epset.fd, EPOLL_CTL_ADD, uv_backend_fd(loop), &uv_ev) < 0)
		return uv_run(loop, UV_RUN_DEFAULT);
	uv_poll_stop(&p->epset.poll);
	while (p->epset.fd >= 0 && !p->epset_closing) {
		bool run_uv;

		proxy_before_block(p);
		uv_update_time(loop);
		timeout = uv_backend_timeout(loop);
		n = epoll_wait(p->epset.fd, ev, PROXY_RUN_BATCH, timeout);
		uv_update_time(loop);
		/* Nothing came in time: a timer is due. */
		run_uv = n <= 0 || timeout == 0;
		for (i = 0; i < n; i++) {
			struct epset_entry *e = ev[i].data.ptr;

			if (!e)
				run_uv = true;
			else
				e->cb(e, ev[i].events);
		}
		proxy_batch_end(p);
		/* Not its return value: with our set no longer polled by
		 * libuv, a closing proxy may have no libuv handle left active
		 * while deferred frees and the set itself still wait. */
		if (run_uv)
			uv_run(loop, UV_RUN_NOWAIT);
	}
	/* Closing: the set is going, libuv closes the rest. */
	return uv_run(loop, UV_RUN_DEFAULT);
}

static void proxy_on_lgr_timer(uv_timer_t *t)
{
	struct proxy *p = t->data;
	const struct smc_transport_ops *tr;
	unsigned i;

	smc_transport_foreach(tr, i)
		if (tr->sweep)
			tr->sweep(p, uv_now(p->loop));
	lgr_sweep(p, uv_now(p->loop));
	if (!p->n_lgrs)
		uv_timer_stop(&p->lgr_timer);
}

void proxy__lgr_timer(struct proxy *p)
{
	if (!p->closing && !uv_is_active((uv_handle_t *)&p->lgr_timer))
		uv_timer_start(&p->lgr_timer, proxy_on_lgr_timer, 100, 100);
}

bool proxy__addr_is_local(struct proxy *p, const struct sockaddr *sa)
{
	uint64_t now = uv_now(p->loop);
	unsigned i;

	/* Addresses come and go: trust an answer for a few seconds. */
	for (i = 0; i < sizeof(p->local_cache) / sizeof(p->local_cache[0]); i++) {
		struct sockaddr_storage a = p->local_cache[i].addr;

		if (a.ss_family != sa->sa_family || now - p->local_cache[i].checked_ms > 5000)
			continue;
		if (a.ss_family == AF_INET ?
		    ((struct sockaddr_in *)&a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr :
		    memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
			   &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16) == 0)
			return p->local_cache[i].local;
	}
	i = p->local_next++ % (sizeof(p->local_cache) / sizeof(p->local_cache[0]));
	memcpy(&p->local_cache[i].addr, sa, addr_len(sa));
	p->local_cache[i].checked_ms = now;
	p->local_cache[i].local = addr_is_iface_address(sa);
	return p->local_cache[i].local;
}

/* This host's identity for the handshake: the kernel's boot id, shared by
 * every network namespace of the host and different in every VM, which is
 * exactly when shared memory between two daemons is possible. */
static int proxy_read_host_id(uint8_t id[CLC_HOST_ID_LEN])
{
	char buf[64];
	ssize_t n;
	int fd, i, k = 0;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	for (i = 0; buf[i] && k < 2 * CLC_HOST_ID_LEN; i++) {
		char c = buf[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			continue;
		if (k % 2 == 0)
			id[k / 2] = (uint8_t)(v << 4);
		else
			id[k / 2] |= (uint8_t)v;
		k++;
	}
	return k == 2 * CLC_HOST_ID_LEN ? 0 : -EINVAL;
}

bool proxy_transport_named(const struct cfg *cfg, const struct smc_transport_ops *t)
{
	return strcmp(cfg_transport_name(cfg->transport), t->name) == 0;
}

static void proxy_close_transports(struct proxy *p)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->close)
			t->close(p);
}

static void proxy_unlisten_transports(struct proxy *p)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->unlisten)
			t->unlisten(p);
}

/*
 * Sets up every transport the config allows and this host can run; a
 * transport that cannot (-ENODEV, or any other error of its init()) is
 * not offered, and the reason waits in p->tp_off for the daemon's log.
 */
static void proxy_init_transports(struct proxy *p, const struct cfg *cfg, bool host_id)
{
	const struct smc_transport_ops *t;
	unsigned i;
	int err;

	smc_transport_foreach(t, i) {
		char *off = p->tp_off[smc_transport_slot(t)];

		if (cfg->transport != CFG_TRANSPORT_AUTO && !proxy_transport_named(cfg, t))
			continue;
		/* Only where a peer could use it: with a control port. */
		if (t->needs_control && (!cfg->has_control || !cfg->n_peers))
			continue;
		/* No identity, no same-host detection. */
		if (t->needs_host_id && !host_id)
			continue;
		err = t->init ? t->init(p, off, sizeof(p->tp_off[0])) : 0;
		if (!err)
			p->lgr_transports |= t->clc_bit;
	}
}

/* Link groups, the control port and the transports' listeners. */
static int proxy_init_lgr(struct proxy *p, const struct cfg *cfg, char *errbuf, size_t errlen)
{
	const struct smc_transport_ops *t;
	unsigned i;
	int err;

	p->cork.enabled = cfg->autocork.enabled;
	p->cork.max_bytes = (uint32_t)cfg->autocork.max_bytes;
	p->rmb_budget.limit = cfg->buffers.pool;
	proxy_init_transports(p, cfg, proxy_read_host_id(p->host_id) == 0);
	if (cfg->auth.psk_file[0]) {
		err = clc_psk_load(cfg->auth.psk_file, p->psk, &p->psk_len);
		if (err) {
			snprintf(errbuf, errlen, "auth.psk_file %s: %s", cfg->auth.psk_file,
				 err == -EINVAL ? "must hold 16 to 1024 bytes" : strerror(-err));
			goto out_close;
		}
	}
	/* With no peer prefix, no proposal could be taken: no port. */
	if (!cfg->has_control || !cfg->n_peers)
		return 0;
	err = lgr_listen(p, errbuf, errlen);
	if (err)
		goto out_close;
	smc_transport_foreach(t, i) {
		if (!(p->lgr_transports & t->clc_bit) || !t->listen)
			continue;
		err = t->listen(p, errbuf, errlen);
		if (err)
			goto out_unlisten;
	}
	return 0;

out_unlisten:
	proxy_unlisten_transports(p);
	lgr_unlisten(p);
out_close:
	proxy_close_transports(p);
	return err;
}

void proxy_adopt_listeners(struct proxy *p, const int *fds, size_t n)
{
	p->adopt_fds = fds;
	p->n_adopt = n;
}

/* An adopted socket bound to a, or -1. Taken ones are marked in used. */
static int listener_find_adopted(const struct proxy *p, const struct cfg_addr *a, bool *used)
{
	struct sockaddr_storage ss;
	socklen_t len;
	size_t i;

	for (i = 0; i < p->n_adopt; i++) {
		len = sizeof(ss);
		if (used[i] || getsockname(p->adopt_fds[i], (struct sockaddr *)&ss, &len) < 0)
			continue;
		if (addr_equal((struct sockaddr *)&ss, (const struct sockaddr *)&a->ss)) {
			used[i] = true;
			return p->adopt_fds[i];
		}
	}
	return -1;
}

static int listener_open(struct listener *l, const struct cfg_addr *a, uint64_t keepalive_ms,
			 bool reuseport)
{
	int one = 1, fd, err;
	socklen_t len = sizeof(l->addr);

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Each worker binds its own socket and the kernel spreads
	 * connections over them. Only then: it would also let a second
	 * daemon share our port unnoticed. */
	if (reuseport)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	/* "[::]:7001" next to "0.0.0.0:7001" must not collide. */
	if (a->ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* Accepted sockets inherit these: none of it per flow. */
	relay_tune_socket(fd, keepalive_ms);
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0 ||
	    listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&l->addr, &len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	l->fd = fd;
	return 0;
}

/* Idle pipes hold two fds each: keep at most 1/16 of the fd limit. */
/* The fd share is the process's, split among the workers. */
static size_t proxy_pipe_pool_max(unsigned n_workers)
{
	struct rlimit rl;
	size_t max = PIPE_POOL_MAX;

	if (!n_workers)
		n_workers = 1;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 16 / n_workers < max)
		max = rl.rlim_cur / 16 / n_workers;
	return max;
}

static void proxy_capture_params(struct proxy *p, const struct cfg *cfg)
{
	p->relay_params.mark = cfg->mark;
	p->relay_params.connect_timeout_ms = cfg->fallback.connect_timeout_ms;
	p->relay_params.keepalive_ms = cfg->relay.keepalive_ms;
	p->relay_params.client_tuned = true;
	p->transport = cfg->transport;
}

static void proxy_on_idle_sweep(uv_timer_t *t)
{
	struct proxy *p = t->data;
	uint64_t now = uv_now(p->loop), limit = p->cfg->relay.idle_timeout_ms;
	struct list_head *pos, *n;

	if (!limit)
		return;
	list_for_each_safe(pos, n, &p->flows) {
		struct flow *f = list_entry(pos, struct flow, node);

		if (!flow_is_ending(f) && now - flow_last_active(f) >= limit) {
			p->stats.idle_timeouts++;
			flow_abort(f);
		}
	}
}

static void proxy_arm_idle_sweep(struct proxy *p)
{
	uint64_t limit = p->cfg->relay.idle_timeout_ms, every;

	if (!limit) {
		uv_timer_stop(&p->idle_timer);
		return;
	}
	every = limit / 4 ? limit / 4 : 1;
	if (every > IDLE_SWEEP_MAX_MS)
		every = IDLE_SWEEP_MAX_MS;
	uv_timer_start(&p->idle_timer, proxy_on_idle_sweep, every, every);
}

int proxy_init(struct proxy *p, uv_loop_t *loop, const struct cfg *cfg,
	       const struct proxy_ops *ops, char *errbuf, size_t errlen)
{
	const int *adopt_fds = p->adopt_fds;
	size_t n_adopt = p->n_adopt;
	unsigned worker = p->worker, n_workers = p->n_workers;
	bool reuseport = p->reuseport;
	bool used[ADOPT_MAX] = { false };
	char a[ADDR_STRLEN];
	size_t i;
	int err, fd;

	*p = (struct proxy){ .loop = loop, .cfg = cfg, .ops = ops,
			     .worker = worker, .n_workers = n_workers,
			     .reuseport = reuseport,
			     .adopt_fds = adopt_fds,
			     .n_adopt = n_adopt < ADOPT_MAX ? n_adopt : ADOPT_MAX };
	p->epset.fd = -1;
	p->control_fd = -1;
	list_init(&p->flows);
	list_init(&p->lgrs);
	list_init(&p->kick_links);
	list_init(&p->grave);
	proxy_capture_params(p, cfg);
	p->relay_env = (struct relay_env){ .loop = loop, .epset = &p->epset,
					   .pipes = &p->pipes, .stats = &p->stats };

	err = pipe_pool_init(&p->pipes, proxy_pipe_pool_max(p->n_workers), cfg->relay.buffer);
	if (err)
		goto out_close_unused;
	p->listeners = calloc(cfg->n_listen, sizeof(*p->listeners));
	if (!p->listeners) {
		err = -ENOMEM;
		goto out_free_pipes;
	}
	for (i = 0; i < cfg->n_listen; i++) {
		struct listener *l = &p->listeners[p->n_listeners];
		const struct cfg_addr *ca = &cfg->listen[i];

		fd = listener_find_adopted(p, ca, used);
		if (fd >= 0) {
			socklen_t len = sizeof(l->addr);

			l->fd = fd;
			relay_tune_socket(fd, cfg->relay.keepalive_ms);
			getsockname(fd, (struct sockaddr *)&l->addr, &len);
			p->n_adopted++;
		} else {
			err = listener_open(l, ca, cfg->relay.keepalive_ms, p->reuseport);
			/*
			 * A host without IPv6 (disabled in the kernel or on
			 * lo) cannot have IPv6 connections to redirect
			 * either: skip such an address (the default listens
			 * on [::1] too) rather than refuse to start.
			 */
			if ((err == -EAFNOSUPPORT || err == -EADDRNOTAVAIL) &&
			    ca->ss.ss_family == AF_INET6 && i < 64) {
				p->listen_skipped |= 1ull << i;
				continue;
			}
			if (err) {
				snprintf(errbuf, errlen, "listen on %s: %s",
					 addr_format((const struct sockaddr *)&ca->ss, a, sizeof(a)),
					 strerror(-err));
				goto out_close_listeners;
			}
		}
		l->proxy = p;
		p->n_listeners++;
	}
	if (!p->n_listeners) {
		snprintf(errbuf, errlen, "no listen address can be used (IPv6 is not available)");
		err = -EAFNOSUPPORT;
		goto out_close_listeners;
	}
	err = epset_init(&p->epset, loop);
	if (err) {
		snprintf(errbuf, errlen, "epoll: %s", strerror(-err));
		goto out_close_listeners;
	}
	p->epset.batch_end = proxy_on_epset_batch;
	err = proxy_init_lgr(p, cfg, errbuf, errlen);
	if (err) {
		uv_close((uv_handle_t *)&p->epset.poll, NULL);
		close(p->epset.fd);
		p->epset.fd = -1;
		goto out_close_listeners;
	}
	for (i = 0; i < p->n_listeners; i++) {
		uv_poll_init_socket(loop, &p->listeners[i].poll, p->listeners[i].fd);
		p->listeners[i].poll.data = &p->listeners[i];
	}
	uv_timer_init(loop, &p->pause_timer);
	uv_timer_init(loop, &p->idle_timer);
	uv_timer_init(loop, &p->lgr_timer);
	uv_prepare_init(loop, &p->tick);
	p->pause_timer.data = p->idle_timer.data = p->lgr_timer.data = p->tick.data = p;
	uv_prepare_start(&p->tick, proxy_on_tick);
	uv_unref((uv_handle_t *)&p->tick);
	proxy_arm_idle_sweep(p);
	err = 0;
	goto out_close_unused;

out_close_listeners:
	while (p->n_listeners)
		close(p->listeners[--p->n_listeners].fd);
	free(p->listeners);
	p->listeners = NULL;
out_free_pipes:
	pipe_pool_close(&p->pipes);
out_close_unused:
	/* Adopted sockets no listen address wants would hold their ports
	 * without being served: close them. Used ones are listeners now
	 * (closed above on failure). */
	for (i = 0; i < n_adopt; i++) {
		if (i < ADOPT_MAX && used[i])
			continue;
		close(adopt_fds[i]);
		p->n_adopt_unused++;
	}
	p->adopt_fds = NULL;
	p->n_adopt = 0;
	return err;
}

static void proxy_poll_listeners(struct proxy *p, bool on)
{
	size_t i;

	for (i = 0; i < p->n_listeners; i++) {
		if (on)
			uv_poll_start(&p->listeners[i].poll, UV_READABLE, proxy_on_acceptable);
		else
			uv_poll_stop(&p->listeners[i].poll);
	}
	lgr_poll_control(p, on);
}

void proxy_start(struct proxy *p)
{
	p->accepting = true;
	proxy_poll_listeners(p, true);
}

static void proxy_on_pause_end(uv_timer_t *t)
{
	struct proxy *p = t->data;

	p->paused = false;
	if (p->accepting)
		proxy_poll_listeners(p, true);
}

/* One PAUSED event when an episode of exhaustion starts and one RESUMED
 * when an accept works again, not a pair per back-off round. */
void proxy__pause_accepting(struct proxy *p, int err)
{
	if (!p->pause_ms)
		p->ops->event(p, PROXY_EV_ACCEPT_PAUSED, NULL, err);
	p->stats.accept_pauses++;
	pipe_pool_trim(&p->pipes);
	p->paused = true;
	p->pause_ms = p->pause_ms ? p->pause_ms * 2 : PAUSE_MIN_MS;
	if (p->pause_ms > PAUSE_MAX_MS)
		p->pause_ms = PAUSE_MAX_MS;
	proxy_poll_listeners(p, false);
	uv_timer_start(&p->pause_timer, proxy_on_pause_end, p->pause_ms, 0);
}

static bool err_is_exhaustion(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOBUFS || err == -ENOMEM;
}

static void proxy_on_acceptable(uv_poll_t *h, int status, int events)
{
	struct listener *l = h->data;
	struct proxy *p = l->proxy;
	struct sockaddr_storage peer;
	socklen_t len;
	int fd, i, err;

	for (i = 0; i < ACCEPT_BATCH && p->accepting && !p->paused; i++) {
		len = sizeof(peer);
		fd = accept4(l->fd, (struct sockaddr *)&peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			if (err == -EAGAIN || err == -EINTR)
				return;
			if (err_is_exhaustion(err)) {
				proxy__pause_accepting(p, err);
				return;
			}
			/* ECONNABORTED and the like: that connection is gone. */
			if (err != -ECONNABORTED && err != -EPROTO && err != -EPERM)
				p->ops->event(p, PROXY_EV_ACCEPT_ERROR, NULL, err);
			continue;
		}
		p->stats.flows_accepted++;
		err = flow_open(p, fd, &peer);
		/* Out of fds between accept and connect: the connection got an
		 * RST; stop taking more until fds come back. */
		if (err_is_exhaustion(err)) {
			proxy__pause_accepting(p, err);
			return;
		}
		if (!err && p->pause_ms) {
			p->pause_ms = 0;
			p->ops->event(p, PROXY_EV_ACCEPT_RESUMED, NULL, 0);
		}
	}
}

static unsigned out_bucket(const struct sockaddr *a)
{
	return addr_port(a) & (PROXY_OUT_HASH_SIZE - 1);
}

/*
 * The outbound sockets of every proxy (worker) of the process, for the
 * loop check: with SO_REUSEPORT listeners, a connection of ours that a
 * rule sends back reaches any worker's listener, not only the one whose
 * flow made it, and that worker must recognise it too or the loop goes on
 * from worker to worker. Lock-free and shared: per local port, the XOR of
 * a keyed 64-bit hash of (local address, destination) of each of our
 * outbound sockets on that port, changed with one atomic XOR when a flow
 * connects and when it goes. A lookup that matches is ours (a false match
 * is a 2^-64 chance, blind to anyone without the key); two of our sockets
 * sharing a port (the kernel shares ports between connections to
 * different destinations) hide each other here, which costs a loop one
 * more hop before a worker's own index catches it.
 */
static _Atomic uint64_t out_ports[65536];
static _Atomic uint64_t out_key;

static uint64_t out_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t out_word(const void *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static uint64_t out_fold_addr(uint64_t h, const struct sockaddr *a)
{
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)a;

		h = out_mix(h ^ out_word(in6->sin6_addr.s6_addr));
		h = out_mix(h ^ out_word(in6->sin6_addr.s6_addr + 8));
		return out_mix(h ^ (AF_INET6 << 16 | addr_port(a)));
	}
	return out_mix(h ^ ((uint64_t)((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr
			    << 32 | AF_INET << 16 | addr_port(a)));
}

static uint64_t out_hash_tuple(const struct sockaddr *local, const struct sockaddr *dest)
{
	uint64_t key = atomic_load_explicit(&out_key, memory_order_relaxed), k;

	if (!key) {
		/* Once per process; a racing thread takes the winner's. */
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (uint64_t)(uintptr_t)&k ^ (uint64_t)uv_hrtime();
		k |= 1;
		if (atomic_compare_exchange_strong(&out_key, &key, k))
			key = k;
	}
	return out_fold_addr(out_fold_addr(key, local), dest);
}

static void out_ports_toggle(const struct flow *f)
{
	atomic_fetch_xor_explicit(&out_ports[addr_port((const struct sockaddr *)&f->out_local)],
				  out_hash_tuple((const struct sockaddr *)&f->out_local,
						 (const struct sockaddr *)&f->dest),
				  memory_order_relaxed);
}

void proxy__out_add(struct proxy *p, struct flow *f)
{
	struct flow **head = &p->out_hash[out_bucket((struct sockaddr *)&f->out_local)];

	f->out_next = *head;
	*head = f;
	out_ports_toggle(f);
}

void proxy__out_del(struct proxy *p, struct flow *f)
{
	struct flow **pp = &p->out_hash[out_bucket((struct sockaddr *)&f->out_local)];

	for (; *pp; pp = &(*pp)->out_next) {
		if (*pp == f) {
			*pp = f->out_next;
			f->out_next = NULL;
			out_ports_toggle(f);
			return;
		}
	}
}

bool proxy__out_find(const struct proxy *p, const struct sockaddr *peer,
		     const struct sockaddr *dest)
{
	struct flow *f = p->out_hash[out_bucket(peer)];

	for (; f; f = f->out_next)
		if (addr_equal((struct sockaddr *)&f->out_local, peer) &&
		    addr_equal((struct sockaddr *)&f->dest, dest))
			return true;
	/* Another worker's? */
	return atomic_load_explicit(&out_ports[addr_port(peer)], memory_order_relaxed) ==
	       out_hash_tuple(peer, dest);
}

int proxy_check_loop(const struct proxy *p, const struct sockaddr *dest)
{
	size_t i;

	for (i = 0; i < p->n_listeners; i++) {
		const struct sockaddr *l = (const struct sockaddr *)&p->listeners[i].addr;

		if (l->sa_family != dest->sa_family || addr_port(l) != addr_port(dest))
			continue;
		if (addr_equal(l, dest))
			return -ELOOP;
		/* A wildcard listener answers on this host's addresses only:
		 * a remote host on the same port is no loop. */
		if (addr_is_any(l) && addr_is_local(dest))
			return -ELOOP;
	}
	return 0;
}

void proxy_stop_accepting(struct proxy *p)
{
	size_t i;

	p->accepting = false;
	uv_timer_stop(&p->pause_timer);
	for (i = 0; i < p->n_listeners; i++) {
		p->open_handles++;
		uv_close((uv_handle_t *)&p->listeners[i].poll, proxy_on_handle_closed);
		p->listeners[i].poll.data = p;
		close(p->listeners[i].fd);
	}
	/* The poll handles live in the array until their close callbacks:
	 * keep it, just stop using it. */
	p->n_listeners = 0;
	lgr_unlisten(p);
	proxy_unlisten_transports(p);
}

void proxy_set_cfg(struct proxy *p, const struct cfg *cfg)
{
	size_t i;

	p->cfg = cfg;
	p->cork.enabled = cfg->autocork.enabled;
	p->cork.max_bytes = (uint32_t)cfg->autocork.max_bytes;
	/* Live keys: new flows get them; running flows keep theirs. */
	p->relay_params.connect_timeout_ms = cfg->fallback.connect_timeout_ms;
	p->relay_params.keepalive_ms = cfg->relay.keepalive_ms;
	for (i = 0; i < p->n_listeners; i++)
		relay_tune_socket(p->listeners[i].fd, cfg->relay.keepalive_ms);
	if (!p->closing)
		proxy_arm_idle_sweep(p);
}

void proxy_abort_flows(struct proxy *p)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, &p->flows)
		flow_abort(list_entry(pos, struct flow, node));
}

void proxy_close(struct proxy *p, void (*close_cb)(struct proxy *p))
{
	p->close_cb = close_cb;
	proxy_stop_accepting(p);
	p->closing = true;
	p->open_handles += 3;
	uv_close((uv_handle_t *)&p->pause_timer, proxy_on_handle_closed);
	uv_close((uv_handle_t *)&p->idle_timer, proxy_on_handle_closed);
	uv_close((uv_handle_t *)&p->lgr_timer, proxy_on_handle_closed);
	proxy_abort_flows(p);
	lgr_close_all(p);
	proxy_maybe_closed(p);
}
