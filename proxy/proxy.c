/* SPDX-License-Identifier: MIT */
/*
 * Redirect listeners and the flows of one event loop. Accepting is done by
 * hand on a uv_poll handle: on EMFILE/ENFILE/ENOBUFS/ENOMEM we stop polling
 * the listeners and retry after a back-off that doubles up to a second, so
 * fd exhaustion never turns into a busy loop, and no connection is accepted
 * only to be dropped (libuv's uv_tcp does that).
 */
#include <assert.h>
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

#include "core/container.h"
#include "core/addr.h"
#include "core/epset.h"
#include "core/loop.h"
#include "core/pipe_pool.h"
#include "flow.h"
#include "core/sock.h"
#include "proxy.h"
#include "relay/relay.h"
#include "smc/net.h"

#define ACCEPT_BATCH		64
#define PAUSE_MIN_MS		10
#define PAUSE_MAX_MS		1000
#define IDLE_SWEEP_MAX_MS	1000
#define ADOPT_MAX		64	/* inherited listening sockets */
#define PIPE_POOL_MAX		64	/* empty pipes kept for reuse */

#define proxy_of_net(n)	container_of(n, struct proxy, smc)

static void proxy_on_acceptable(uv_poll_t *h, int status, int events);

static void proxy_on_loop_closed(struct loop *l)
{
	struct proxy *p = container_of(l, struct proxy, core);

	free(p->listeners);
	p->listeners = NULL;
	pipe_pool_close(&p->pipes);
	if (p->close_cb) {
		void (*cb)(struct proxy *p) = p->close_cb;

		p->close_cb = NULL;
		cb(p);
	}
}

/* Closing, once the last flow is gone and freed: the transports (their
 * fds are in the loop's set), then the loop itself. */
static void proxy_maybe_closed(struct proxy *p)
{
	if (!p->closing || p->n_flows || loop_has_deferred(&p->core) || p->loop_closing)
		return;
	p->loop_closing = true;
	smc_net_close(&p->smc);
	loop_close(&p->core, proxy_on_loop_closed);
}

static bool proxy_on_batch_done(struct loop_hook *h, bool run)
{
	proxy_maybe_closed(container_of(h, struct proxy, done_hook));
	return false;
}

void proxy__flow_freed(struct proxy *p)
{
	if (p->n_flows == 0 && p->ops->idle)
		p->ops->idle(p);
	proxy_maybe_closed(p);
}

int proxy_run(struct proxy *p)
{
	return loop_run(&p->core);
}

/* The SMC layer's calls up to the flows. */
static int proxy_smc_flow_open(struct smc_net *net, struct link *lnk,
			       const struct llc_flow_open *m, const struct sockaddr *dest)
{
	return flow_accept_peer(proxy_of_net(net), lnk, m, dest);
}

static bool proxy_smc_dest_is_listener(struct smc_net *net, const struct sockaddr *dest)
{
	return proxy_check_loop(proxy_of_net(net), dest) != 0;
}

static void proxy_smc_exhausted(struct smc_net *net, int err)
{
	proxy__pause_accepting(proxy_of_net(net), err);
}

static void proxy_smc_lgr_event(struct smc_net *net, enum lgr_event ev,
				const struct lgr *lgr, int err)
{
	struct proxy *p = proxy_of_net(net);

	if (p->ops->lgr_event)
		p->ops->lgr_event(p, ev, lgr, err);
}

static void proxy_smc_peer_refused(struct smc_net *net, const struct sockaddr *peer,
				   enum smc_refusal why)
{
	struct proxy *p = proxy_of_net(net);

	if (p->ops->peer_refused)
		p->ops->peer_refused(p, peer, why);
}

static void proxy_smc_ring_short(struct smc_net *net, enum rmb_short why,
				 const struct rmb_peer *peer)
{
	struct proxy *p = proxy_of_net(net);

	if (p->ops->ring_short)
		p->ops->ring_short(p, why, peer);
}

static void proxy_smc_no_port(struct smc_net *net, const struct sockaddr *dest)
{
	proxy__no_port(proxy_of_net(net), dest);
}

static const struct smc_net_ops proxy_smc_ops = {
	.flow_open = proxy_smc_flow_open,
	.dest_is_listener = proxy_smc_dest_is_listener,
	.exhausted = proxy_smc_exhausted,
	.lgr_event = proxy_smc_lgr_event,
	.peer_refused = proxy_smc_peer_refused,
	.ring_short = proxy_smc_ring_short,
	.no_port = proxy_smc_no_port,
};

/* Link groups, the control port and the transports. */
static int proxy_init_smc(struct proxy *p, const struct cfg *cfg, char *errbuf, size_t errlen)
{
	struct smc_net *net = &p->smc;

	*net = (struct smc_net){ .loop = p->loop, .core = &p->core, .cfg = cfg,
				 .ops = &proxy_smc_ops, .stats = &p->stats,
				 .worker = p->worker, .n_workers = p->n_workers,
				 .reuseport = p->reuseport, .mark = cfg->mark };
	return smc_net_init(net, errbuf, errlen);
}

/* One of the n adopted sockets fds bound to a, or -1. Taken ones are
 * marked in used. */
static int listener_find_adopted(const int *fds, size_t n, const struct cfg_addr *a, bool *used)
{
	struct sockaddr_storage ss;
	socklen_t len;
	size_t i;

	for (i = 0; i < n; i++) {
		len = sizeof(ss);
		if (used[i] || getsockname(fds[i], (struct sockaddr *)&ss, &len) < 0)
			continue;
		if (addr_equal((struct sockaddr *)&ss, (const struct sockaddr *)&a->ss)) {
			used[i] = true;
			return fds[i];
		}
	}
	return -1;
}

static int listener_open(struct listener *l, const struct cfg_addr *a, uint64_t keepalive_ms,
			 bool reuseport, bool transparent, uint32_t mark)
{
	int fd, err;
	socklen_t len = sizeof(l->addr);

	/* Each worker binds its own socket and the kernel spreads
	 * connections over them (SO_REUSEPORT). Only then: it would also
	 * let a second daemon share our port unnoticed. IPv6 only, so that
	 * "[::]:7001" next to "0.0.0.0:7001" does not collide. */
	fd = sock_bind((const struct sockaddr *)&a->ss, a->len,
		       SOCK_BIND_NONBLOCK | (reuseport ? SOCK_BIND_REUSEPORT : 0) |
		       (transparent ? SOCK_BIND_TRANSPARENT : 0));
	if (fd < 0)
		return fd;
	/* Accepted sockets inherit these: none of it per flow. */
	relay_tune_socket(fd, keepalive_ms);
	/* A tproxy listener's own mark: with net.ipv4.tcp_fwmark_accept=1
	 * (which "route add" sets) an unmarked listener's connections would
	 * take the TPROXY bit of their SYN, and that bit routes every reply
	 * to this host instead of to the pod. Never 0 (proxy_init() refuses
	 * it): the kernel gives an accepted socket its SYN's mark only when
	 * the listener has none. */
	assert(!transparent || mark);
	if (transparent && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&l->addr, &len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	l->fd = fd;
	l->transparent = transparent;
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
			counter_inc(&p->stats.idle_timeouts);
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
	       const struct proxy_params *params, const struct proxy_ops *ops,
	       char *errbuf, size_t errlen)
{
	static const struct proxy_params alone = { .n_workers = 1 };
	const struct proxy_params *pp = params ? params : &alone;
	const int *adopt_fds = pp->adopt_fds;
	size_t n_adopt = pp->n_adopt;
	size_t n_seen = n_adopt < ADOPT_MAX ? n_adopt : ADOPT_MAX;
	bool used[ADOPT_MAX] = { false };
	char a[ADDR_STRLEN];
	size_t i;
	int err, fd;

	*p = (struct proxy){ .loop = loop, .cfg = cfg, .ops = ops,
			     .worker = pp->worker, .n_workers = pp->n_workers,
			     .reuseport = pp->reuseport };
	list_init(&p->flows);
	proxy_capture_params(p, cfg);
	p->relay_env = (struct relay_env){ .loop = loop, .epset = &p->core.epset,
					   .pipes = &p->pipes, .bytes_in = &p->stats.bytes_in,
					   .bytes_out = &p->stats.bytes_out };

	err = pipe_pool_init(&p->pipes, proxy_pipe_pool_max(p->n_workers), cfg->relay.buffer);
	if (err)
		goto out_close_unused;
	p->listeners = calloc(cfg->n_listen + cfg->n_tproxy, sizeof(*p->listeners));
	if (!p->listeners) {
		err = -ENOMEM;
		goto out_free_pipes;
	}
	for (i = 0; i < cfg->n_listen; i++) {
		struct listener *l = &p->listeners[p->n_listeners];
		const struct cfg_addr *ca = &cfg->listen[i];

		fd = listener_find_adopted(adopt_fds, n_seen, ca, used);
		if (fd >= 0) {
			socklen_t len = sizeof(l->addr);

			l->fd = fd;
			relay_tune_socket(fd, cfg->relay.keepalive_ms);
			getsockname(fd, (struct sockaddr *)&l->addr, &len);
			p->n_adopted++;
		} else {
			err = listener_open(l, ca, cfg->relay.keepalive_ms, p->reuseport, false, 0);
			/*
			 * A host without IPv6 (disabled in the kernel or on
			 * lo) cannot have IPv6 connections to redirect
			 * either: skip such an address (the default listens
			 * on [::1] too) rather than refuse to start.
			 */
			if ((err == -EAFNOSUPPORT || err == -EADDRNOTAVAIL) &&
			    ca->ss.ss_family == AF_INET6 && i < CFG_LISTEN_MAX) {
				p->listen_skipped[i / 64] |= 1ull << (i % 64);
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
	/* After the REDIRECT ones, never adopted (socket activation passes
	 * no transparent socket) and never skipped: a tproxy address is
	 * asked for on purpose, and TPROXY rules without it drop traffic. */
	for (i = 0; i < cfg->n_tproxy; i++) {
		struct listener *l = &p->listeners[p->n_listeners];
		const struct cfg_addr *ca = &cfg->tproxy[i];

		/* The config refuses a "mark" of 0; a caller that builds its
		 * own config is told, not given listeners whose connections
		 * take their SYN's TPROXY bit (listener_open()). */
		if (!cfg->mark) {
			snprintf(errbuf, errlen, "tproxy listen on %s: a tproxy listener needs \"mark\" (0 is none)",
				 addr_format((const struct sockaddr *)&ca->ss, a, sizeof(a)));
			err = -EINVAL;
			goto out_close_listeners;
		}
		err = listener_open(l, ca, cfg->relay.keepalive_ms, p->reuseport, true, cfg->mark);
		if (err) {
			snprintf(errbuf, errlen, "tproxy listen on %s: %s%s",
				 addr_format((const struct sockaddr *)&ca->ss, a, sizeof(a)),
				 strerror(-err), err == -EPERM ? " (IP_TRANSPARENT needs "
				 "CAP_NET_ADMIN)" : "");
			goto out_close_listeners;
		}
		l->proxy = p;
		p->n_listeners++;
	}
	if (!p->n_listeners) {
		snprintf(errbuf, errlen, "no listen address can be used (IPv6 is not available)");
		err = -EAFNOSUPPORT;
		goto out_close_listeners;
	}
	err = loop_init(&p->core, loop);
	if (err) {
		snprintf(errbuf, errlen, "epoll: %s", strerror(-err));
		goto out_close_listeners;
	}
	err = proxy_init_smc(p, cfg, errbuf, errlen);
	if (err) {
		loop_discard(&p->core);
		goto out_close_listeners;
	}
	p->loop_open = true;
	loop_set_busy_poll(&p->core, cfg->busy_poll.usecs, cfg->busy_poll.budget,
				   cfg->busy_poll.adaptive);
	p->done_hook.fn = proxy_on_batch_done;
	loop_hook_add(&p->core, LOOP_BATCH_DONE, &p->done_hook);
	for (i = 0; i < p->n_listeners; i++) {
		uv_poll_init_socket(loop, &p->listeners[i].poll, p->listeners[i].fd);
		p->listeners[i].poll.data = &p->listeners[i];
	}
	uv_timer_init(loop, &p->pause_timer);
	uv_timer_init(loop, &p->idle_timer);
	p->pause_timer.data = p->idle_timer.data = p;
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
	smc_net_poll_control(&p->smc, on);
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
	counter_inc(&p->stats.accept_pauses);
	pipe_pool_trim(&p->pipes);
	p->paused = true;
	p->pause_ms = p->pause_ms ? p->pause_ms * 2 : PAUSE_MIN_MS;
	if (p->pause_ms > PAUSE_MAX_MS)
		p->pause_ms = PAUSE_MAX_MS;
	proxy_poll_listeners(p, false);
	uv_timer_start(&p->pause_timer, proxy_on_pause_end, p->pause_ms, 0);
}

/*
 * The host's source ports are one budget for the relay's connects and those
 * of flows peers open: one episode for both, from the first connect that
 * found no port to the next that found one, so that the owner hears of it
 * twice and not once per flow. Ports come back one TIME_WAIT at a time, so
 * episodes may follow each other quickly: the owner bounds its lines.
 */
void proxy__no_port(struct proxy *p, const struct sockaddr *dest)
{
	if (p->no_port)
		return;
	p->no_port = true;
	p->no_port_from = p->stats.connect_no_port - 1;	/* this one is counted */
	if (p->ops->no_port)
		p->ops->no_port(p, dest, 1);
}

void proxy__port_found_slow(struct proxy *p)
{
	p->no_port = false;
	if (p->ops->no_port)
		p->ops->no_port(p, NULL, p->stats.connect_no_port - p->no_port_from);
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
		counter_inc(&p->stats.flows_accepted);
		err = flow_open(p, fd, &peer, l);
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

/*
 * Whether the connection from peer to dest is one of our outbound ones.
 * Our entry stays until the flow is freed, but the kernel lets go of the
 * tuple earlier: once the server's FIN answers ours, our socket is in
 * TIME_WAIT before we read the EOF, and a client host that reuses
 * TIME_WAIT tuples (tcp_tw_reuse) may connect from it. So a match counts
 * only while our socket still holds the tuple: a loop's connection comes
 * from a live socket of ours, a reused tuple from someone else's.
 */
int proxy__out_find(const struct proxy *p, const struct sockaddr *peer,
		    const struct sockaddr *dest)
{
	struct flow *f = p->out_hash[out_bucket(peer)];
	uint32_t mark;
	int err;

	for (; f; f = f->out_next)
		if (addr_equal((struct sockaddr *)&f->out_local, peer) &&
		    addr_equal((struct sockaddr *)&f->dest, dest))
			return sock_tcp_holds_tuple(f->relay.fd[RELAY_SERVER]) ? -EHOSTUNREACH : 0;
	/* Another worker's? */
	if (atomic_load_explicit(&out_ports[addr_port(peer)], memory_order_relaxed) !=
	    out_hash_tuple(peer, dest))
		return 0;
	/* Its socket is not ours to look at: ask the kernel whose socket
	 * holds the tuple now. Ours carry our mark; without a mark, or when
	 * the kernel will not say, refuse as a loop would be. */
	err = sock_tuple_mark(peer, dest, &mark);
	if (err == -ENOENT)
		return 0;
	if (err)
		return -ENOTUNIQ;
	return !p->relay_params.mark || mark == p->relay_params.mark ? -EADDRINUSE : 0;
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
		loop_close_handle(&p->core, (uv_handle_t *)&p->listeners[i].poll);
		close(p->listeners[i].fd);
	}
	/* The poll handles live in the array until their close callbacks:
	 * keep it, just stop using it. */
	p->n_listeners = 0;
	smc_net_unlisten(&p->smc);
}

void proxy_set_cfg(struct proxy *p, const struct cfg *cfg)
{
	size_t i;

	p->cfg = cfg;
	smc_net_set_cfg(&p->smc, cfg);
	if (p->loop_open)
		loop_set_busy_poll(&p->core, cfg->busy_poll.usecs, cfg->busy_poll.budget,
				   cfg->busy_poll.adaptive);
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

	p->smc.stopping = true;

	list_for_each_safe(pos, n, &p->flows)
		flow_abort(list_entry(pos, struct flow, node));
}

void proxy_close(struct proxy *p, void (*close_cb)(struct proxy *p))
{
	p->close_cb = close_cb;
	proxy_stop_accepting(p);
	p->closing = true;
	loop_close_handle(&p->core, (uv_handle_t *)&p->pause_timer);
	loop_close_handle(&p->core, (uv_handle_t *)&p->idle_timer);
	proxy_abort_flows(p);
	smc_net_shutdown(&p->smc);
	proxy_maybe_closed(p);
}
