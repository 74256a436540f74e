/* SPDX-License-Identifier: MIT */
/*
 * Worker threads. Each worker is set up on the main thread (its loop, its
 * proxy and listeners, so that a port in use fails the start-up there and
 * then), then handed to its thread, which runs the loop until the main
 * thread asks it to close. After pthread_create() only the worker touches
 * its loop and proxy, except for the counters (read lock-free) and what
 * the pool's lock guards: the command flags, the job queue, the
 * configuration to switch to.
 *
 * The main thread never waits on a worker without a deadline except to
 * join a thread that has said it is exiting.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/sock.h"
#include "cfg.h"
#include "log.h"
#include "smc/transport.h"
#include "worker.h"
#include "worker_log.h"

/* The generic sum in worker_stats_add() depends on this. */
_Static_assert(sizeof(struct proxy_stats) % sizeof(counter_t) == 0 &&
	       _Alignof(struct proxy_stats) == _Alignof(counter_t),
	       "struct proxy_stats must hold only counter_t counters");

#define WORKERS_MAX 256		/* the config's bound */
#define ADOPT_MAX 64		/* passed sockets: smcd_inherited_listeners() takes 64 */

unsigned worker_default_count(void)
{
	cpu_set_t set;
	long n;

	/* The CPUs we may run on (taskset, cpuset), not all the machine's. */
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > WORKERS_MAX ? WORKERS_MAX : (unsigned)n;
}

/* ---- on the worker's thread ------------------------------------------ */

/* Tells the main thread once: no longer accepting, and no flow left. */
static void worker_check_drained(struct worker *w)
{
	if (!w->draining || w->proxy.n_flows ||
	    atomic_load_explicit(&w->drained, memory_order_relaxed))
		return;
	atomic_store_explicit(&w->drained, true, memory_order_release);
	if (w->started)		/* else closed before the pool's notify exists */
		uv_async_send(&w->pool->notify);
}

static void worker_on_proxy_idle(struct proxy *p)
{
	worker_check_drained(p->data);
}

static const struct proxy_ops worker_proxy_ops = {
	.event = worker_on_proxy_event,
	.lgr_event = worker_on_lgr_event,
	.peer_refused = worker_on_peer_refused,
	.ring_short = worker_on_ring_short,
	.no_port = worker_on_no_port,
	.idle = worker_on_proxy_idle,
};

static void worker_on_heartbeat(uv_timer_t *t)
{
	struct worker *w = t->data;
	uint64_t now = uv_now(&w->loop);

	/* A loop that did not turn shows here as a long gap: the watchdog
	 * and /ready judge by the last beat, this keeps the worst one. */
	if (now - w->beat_prev_ms > atomic_load_explicit(&w->beat_gap_max_ms, memory_order_relaxed))
		atomic_store_explicit(&w->beat_gap_max_ms, now - w->beat_prev_ms,
				      memory_order_relaxed);
	w->beat_prev_ms = now;
	atomic_fetch_add_explicit(&w->beats, 1, memory_order_relaxed);
	atomic_store_explicit(&w->beat_ms, now, memory_order_relaxed);
}

static void worker_stop_accepting(struct worker *w)
{
	if (!w->draining) {
		w->draining = true;
		proxy_stop_accepting(&w->proxy);
	}
	worker_check_drained(w);
}

/* A job is done with, run or not; whoever lets go last releases it. */
static void worker_job_finish(struct worker_pool *pool, struct worker_job *job,
			      enum worker_job_state state)
{
	bool last;

	pthread_mutex_lock(&pool->lock);
	job->state = state;
	last = --job->refs == 0;
	pthread_cond_broadcast(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
	if (!last)
		return;
	if (job->release)
		job->release(job);
	else
		free(job);
}

/*
 * Nothing can be posted once this returns; jobs still queued are dropped.
 * Returns them so that the caller finishes them outside the lock.
 */
static struct worker_job *worker_mailbox_shut(struct worker *w)
{
	struct worker_job *jobs;

	pthread_mutex_lock(&w->pool->lock);
	w->mailbox_open = false;
	jobs = w->jobs;
	w->jobs = NULL;
	w->jobs_tail = &w->jobs;
	w->cmd_done = w->cmd_posted;	/* nothing pending is still to do */
	pthread_cond_broadcast(&w->pool->cond);
	pthread_mutex_unlock(&w->pool->lock);
	return jobs;
}

static void worker_drop_jobs(struct worker *w, struct worker_job *job)
{
	struct worker_job *next;

	for (; job; job = next) {
		next = job->next;
		worker_job_finish(w->pool, job, WORKER_JOB_DROPPED);
	}
}

/* Everything of the worker closes; its loop then ends by itself. */
static void worker_close(struct worker *w)
{
	if (w->closing)
		return;
	w->closing = true;
	w->draining = true;
	proxy_close(&w->proxy, NULL);
	uv_close((uv_handle_t *)&w->heartbeat, NULL);
	worker_drop_jobs(w, worker_mailbox_shut(w));
	uv_close((uv_handle_t *)&w->mailbox, NULL);
}

static void worker_on_mailbox(uv_async_t *a)
{
	struct worker *w = a->data;
	struct worker_pool *pool = w->pool;
	struct worker_job *jobs, *job, *next;
	bool switched = false;
	uint64_t posted;
	unsigned cmds;

	pthread_mutex_lock(&pool->lock);
	cmds = w->cmds;
	w->cmds = 0;
	posted = w->cmd_posted;
	jobs = w->jobs;
	w->jobs = NULL;
	w->jobs_tail = &w->jobs;
	/*
	 * Under the lock: the main thread frees a replaced configuration
	 * once no worker's cfg_in_use is it, so taking the new one and
	 * saying so must be one step. Always the newest: a worker that was
	 * slow skips the ones in between.
	 */
	if ((cmds & WORKER_CMD_SET_CFG) && w->cfg_in_use != pool->cfg) {
		proxy_set_cfg(&w->proxy, pool->cfg);
		w->cfg_in_use = pool->cfg;
		switched = true;
	}
	pthread_mutex_unlock(&pool->lock);

	if (cmds & WORKER_CMD_STOP_ACCEPTING)
		worker_stop_accepting(w);
	if (cmds & WORKER_CMD_ABORT_FLOWS)
		proxy_abort_flows(&w->proxy);
	for (job = jobs; job; job = next) {
		next = job->next;
		if (w->closing) {
			worker_job_finish(pool, job, WORKER_JOB_DROPPED);
			continue;
		}
		job->run(w, job);
		worker_job_finish(pool, job, WORKER_JOB_RAN);
	}
	if (cmds & WORKER_CMD_CLOSE)
		worker_close(w);

	pthread_mutex_lock(&pool->lock);
	if (w->mailbox_open)
		w->cmd_done = posted;
	pthread_cond_broadcast(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
	if (switched)
		uv_async_send(&pool->notify);	/* the old one may be freed now */
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct worker_pool *pool = w->pool;
	char t[24];

	proxy_start(&w->proxy);
	if (pool->heartbeat_ms) {
		/* The first beat's gap counts from here: a loop stuck
		 * before it is a stall like any other. */
		w->beat_prev_ms = uv_now(&w->loop);
		uv_timer_start(&w->heartbeat, worker_on_heartbeat,
			       pool->heartbeat_ms, pool->heartbeat_ms);
	}
	pthread_mutex_lock(&pool->lock);
	pool->n_up++;
	pthread_cond_broadcast(&pool->cond);
	pthread_mutex_unlock(&pool->lock);

	proxy_run(&w->proxy);
	/* Drain what closing left behind, then the loop must be empty. */
	uv_run(&w->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&w->loop) == UV_EBUSY)
		log_warn("%sevent loop still had handles at exit", worker_tag(w, t, sizeof(t)));
	/* The main thread joins us once it sees this; notify stays open
	 * until every worker is joined, so the send below is safe. */
	atomic_store_explicit(&w->exited, true, memory_order_release);
	uv_async_send(&pool->notify);
	return NULL;
}

/* ---- on the main thread ---------------------------------------------- */

/* Transports that could not start here (proxy_init() kept why): asked
 * for by name, the absence is a problem; under "auto" it is what most
 * hosts are (no RDMA device). */
static void worker_log_transports_off(const struct proxy *p, const struct cfg *cfg)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i) {
		const char *why = p->smc.tp_off[smc_transport_slot(t)];

		if (!why[0])
			continue;
		/* Asked for by name, its absence is a problem; so is a
		 * same-host transport off (never how a host is meant to
		 * be); under "auto" no RDMA device is what most hosts are. */
		if (smc_transport_named(cfg, t) || t->needs_host_id)
			log_warn("%s is off: %s; flows to peers go over tcp", t->name, why);
		else
			log_info("%s is off: %s; flows to peers %s go over tcp", t->name, why,
				 t->serves);
	}
}

/*
 * Sets up worker w on the main thread: loop, proxy (taking fds, which
 * proxy_init() owns from here), mailbox, heartbeat timer. On failure
 * nothing is left open.
 */
static int worker_init(struct worker *w, struct worker_pool *pool, unsigned index,
		       unsigned n_workers, const struct cfg *cfg, const int *fds, size_t n_fds, bool reuseport,
		       char *errbuf, size_t errlen)
{
	const struct proxy_params params = { .worker = index, .n_workers = n_workers,
					     .reuseport = reuseport,
					     .adopt_fds = fds, .n_adopt = n_fds };
	size_t i;
	int err;

	w->pool = pool;
	w->index = index;
	w->jobs_tail = &w->jobs;
	w->cfg_in_use = cfg;
	err = uv_loop_init(&w->loop);
	if (err) {
		snprintf(errbuf, errlen, "worker %u: event loop: %s", index, uv_strerror(err));
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		return err;
	}
	err = proxy_init(&w->proxy, &w->loop, cfg, &params, &worker_proxy_ops, errbuf, errlen);
	if (err) {
		uv_loop_close(&w->loop);
		return err;
	}
	w->proxy.data = w;
	/* Once, from the first worker: they all see the same devices. */
	if (index == 0)
		worker_log_transports_off(&w->proxy, cfg);
	uv_async_init(&w->loop, &w->mailbox, worker_on_mailbox);
	w->mailbox.data = w;
	w->mailbox_open = true;
	uv_timer_init(&w->loop, &w->heartbeat);
	w->heartbeat.data = w;
	return 0;
}

/* A worker whose thread never ran: closed and its loop run out here. */
static void worker_close_here(struct worker *w)
{
	worker_close(w);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	uv_loop_close(&w->loop);
	atomic_store(&w->exited, true);
	w->joined = true;
}

/* What a worker that cannot be created leaves: the listening sockets. */
static void close_fds(const int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * -EADDRINUSE, with errbuf saying "WHAT ADDRESS: why", when a bind of ca
 * (flags as sock_bind()'s) finds the address held; 0 when it is free, or
 * when the bind fails otherwise: the real bind reports that.
 */
static int worker_port_free(const struct cfg_addr *ca, int flags, const char *what,
			    char *errbuf, size_t errlen)
{
	char a[ADDR_STRLEN];
	int fd = sock_bind((const struct sockaddr *)&ca->ss, ca->len, flags);

	if (fd >= 0)
		close(fd);
	if (fd != -EADDRINUSE)
		return 0;
	snprintf(errbuf, errlen, "%s %s: %s", what,
		 addr_format((const struct sockaddr *)&ca->ss, a, sizeof(a)), strerror(-fd));
	return fd;
}

/*
 * With SO_REUSEPORT any socket of our user may bind our ports too, so a
 * second daemon would share them silently, each getting some of the
 * connections. Before our sockets take the listen addresses, make sure
 * nobody holds them: a bind without SO_REUSEPORT fails when anyone does.
 * Addresses that systemd passed a socket for are ours already; addresses
 * of a family the host lacks are left to proxy_init() to skip.
 */
static int worker_check_ports_free(const struct cfg *cfg, const int *adopt_fds,
				   size_t n_adopt, char *errbuf, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	size_t i, k;
	int err;

	for (i = 0; i < cfg->n_listen; i++) {
		const struct cfg_addr *ca = &cfg->listen[i];
		bool adopted = false;

		for (k = 0; k < n_adopt && !adopted; k++) {
			len = sizeof(ss);
			adopted = getsockname(adopt_fds[k], (struct sockaddr *)&ss, &len) == 0 &&
				  addr_equal((struct sockaddr *)&ss, (const struct sockaddr *)&ca->ss);
		}
		/* As proxy.c's listener_open() binds, without SO_REUSEPORT. */
		err = adopted ? 0 : worker_port_free(ca, 0, "listen on", errbuf, errlen);
		if (err)
			return err;
	}
	/* The control port, which every worker binds too (lgr_listen()). */
	if (cfg->has_control && cfg->n_peers)
		return worker_port_free(&cfg->control, SOCK_BIND_DUALSTACK_ANY, "control port",
					errbuf, errlen);
	return 0;
}

static void worker_pool_reap(struct worker_pool *pool);

static void worker_pool_on_notify(uv_async_t *a)
{
	struct worker_pool *pool = a->data;

	worker_pool_reap(pool);
	if (!pool->notify_closing && pool->on_notify)
		pool->on_notify(pool);
}

int worker_pool_init(struct worker_pool *pool, uv_loop_t *main_loop, unsigned n,
		     const struct cfg *cfg, const int *adopt_fds, size_t n_adopt,
		     char *errbuf, size_t errlen)
{
	pthread_condattr_t ca;
	int fds[ADOPT_MAX];
	unsigned i;
	size_t k;
	int err;

	*pool = (struct worker_pool){ .main_loop = main_loop, .n = n, .cfg = cfg };
	if (n < 1 || n > WORKERS_MAX) {
		snprintf(errbuf, errlen, "%u workers: out of range (1..%d)", n, WORKERS_MAX);
		close_fds(adopt_fds, n_adopt);
		return -EINVAL;
	}
	if (n_adopt > ADOPT_MAX) {
		snprintf(errbuf, errlen, "%zu passed sockets: at most %d", n_adopt, ADOPT_MAX);
		close_fds(adopt_fds, n_adopt);
		return -EINVAL;
	}
	if (n > 1) {
		err = worker_check_ports_free(cfg, adopt_fds, n_adopt, errbuf, errlen);
		if (err) {
			close_fds(adopt_fds, n_adopt);
			return err;
		}
	}
	pool->workers = aligned_alloc(_Alignof(struct worker), n * sizeof(struct worker));
	if (!pool->workers) {
		snprintf(errbuf, errlen, "%u workers: out of memory", n);
		close_fds(adopt_fds, n_adopt);
		return -ENOMEM;
	}
	memset(pool->workers, 0, n * sizeof(struct worker));
	pthread_mutex_init(&pool->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->cond, &ca);
	pthread_condattr_destroy(&ca);

	/*
	 * Last worker first: worker 0 takes the passed sockets themselves,
	 * and its proxy_init() closes those no listen address wants, so the
	 * others must have their copies by then.
	 */
	for (i = n; i-- > 0;) {
		const int *mine = adopt_fds;

		if (i > 0) {
			for (k = 0; k < n_adopt; k++) {
				fds[k] = fcntl(adopt_fds[k], F_DUPFD_CLOEXEC, 3);
				if (fds[k] < 0) {
					err = -errno;
					snprintf(errbuf, errlen, "worker %u: socket activation: dup: %s",
						 i, strerror(-err));
					close_fds(fds, k);
					close_fds(adopt_fds, n_adopt);
					goto out_close_workers;
				}
			}
			mine = fds;
		}
		err = worker_init(&pool->workers[i], pool, i, n, cfg, mine, n_adopt, n > 1,
				  errbuf, errlen);
		if (err) {
			if (i > 0)
				close_fds(adopt_fds, n_adopt);
			goto out_close_workers;
		}
	}
	err = uv_async_init(main_loop, &pool->notify, worker_pool_on_notify);
	if (err) {
		snprintf(errbuf, errlen, "workers: async handle: %s", uv_strerror(err));
		i = 0;
		goto out_close_workers_from;
	}
	pool->notify.data = pool;
	return 0;

out_close_workers:
	i++;			/* workers above i are set up */
out_close_workers_from:
	for (; i < n; i++)
		worker_close_here(&pool->workers[i]);
	pthread_cond_destroy(&pool->cond);
	pthread_mutex_destroy(&pool->lock);
	free(pool->workers);
	pool->workers = NULL;
	pool->n = 0;
	return err;
}

void worker_pool_set_intercept(struct worker_pool *pool, struct intercept *ic)
{
	/* The threads are not running yet: creating them orders this write
	 * before their first read. */
	for (unsigned i = 0; i < pool->n; i++)
		pool->workers[i].proxy.intercept = ic;
}

int worker_pool_start(struct worker_pool *pool, uint64_t heartbeat_ms)
{
	/* Signals go to the main thread, whose loop handles them; the
	 * synchronous ones stay deliverable where they happen. */
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
					 SIGABRT, SIGSYS };
	sigset_t mask, old;
	char name[32];		/* at most 15 bytes used: w0..w255 */
	unsigned i;
	int err = 0;

	pool->heartbeat_ms = heartbeat_ms;
	sigfillset(&mask);
	for (i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++)
		sigdelset(&mask, sync_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	for (i = 0; i < pool->n; i++) {
		struct worker *w = &pool->workers[i];

		/* Before the thread can look at it. */
		w->started = true;
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			w->started = false;
			break;
		}
		snprintf(name, sizeof(name), "smcproxyd/w%u", i);
		pthread_setname_np(w->thread, name);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_mutex_lock(&pool->lock);
	while (pool->n_up < pool->n)
		pthread_cond_wait(&pool->cond, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

static struct timespec deadline_in(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Under the pool's lock. */
static void worker_post_cmd(struct worker *w, unsigned cmd)
{
	if (!w->mailbox_open)
		return;
	w->cmds |= cmd;
	w->cmd_posted++;
	uv_async_send(&w->mailbox);
}

unsigned worker_pool_command(struct worker_pool *pool, unsigned cmd, unsigned timeout_ms)
{
	struct timespec deadline = deadline_in(timeout_ms);
	unsigned i, late = 0;
	bool expired = !timeout_ms;

	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->n; i++)
		if (pool->workers[i].started)
			worker_post_cmd(&pool->workers[i], cmd);
	for (i = 0; i < pool->n; i++) {
		struct worker *w = &pool->workers[i];

		while (!expired && w->started && w->cmd_done < w->cmd_posted)
			expired = pthread_cond_timedwait(&pool->cond, &pool->lock,
							 &deadline) == ETIMEDOUT;
		if (w->started && w->cmd_done < w->cmd_posted)
			late++;
	}
	pthread_mutex_unlock(&pool->lock);
	return late;
}

/* Frees the replaced configurations no worker uses any more. */
static void worker_pool_sweep(struct worker_pool *pool)
{
	size_t i, j, kept = 0;

	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->n_retired; i++) {
		struct cfg *c = pool->retired[i];
		bool used = c == pool->cfg;

		for (j = 0; !used && j < pool->n; j++)
			used = pool->workers[j].cfg_in_use == c;
		if (used)
			pool->retired[kept++] = c;
		else
			cfg_free(c);
	}
	pool->n_retired = kept;
	pthread_mutex_unlock(&pool->lock);
}

unsigned worker_pool_set_cfg(struct worker_pool *pool, const struct cfg *cfg,
			     struct cfg *old, unsigned timeout_ms)
{
	struct cfg **r;
	unsigned late;

	pthread_mutex_lock(&pool->lock);
	pool->cfg = cfg;
	if (old) {
		r = realloc(pool->retired, (pool->n_retired + 1) * sizeof(*r));
		if (r) {
			pool->retired = r;
			pool->retired[pool->n_retired++] = old;
		}
		/* else: old is never freed; a leak is better than a worker
		 * reading freed memory. */
	}
	pthread_mutex_unlock(&pool->lock);
	late = worker_pool_command(pool, WORKER_CMD_SET_CFG, timeout_ms);
	worker_pool_sweep(pool);
	return late;
}

unsigned worker_pool_run(struct worker_pool *pool, struct worker_job **jobs,
			 unsigned timeout_ms)
{
	struct timespec deadline = deadline_in(timeout_ms);
	unsigned i, late = 0;
	bool expired = !timeout_ms;

	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->n; i++) {
		struct worker *w = &pool->workers[i];
		struct worker_job *job = jobs[i];

		if (!job)
			continue;
		job->next = NULL;
		if (!w->started || !w->mailbox_open) {
			job->state = WORKER_JOB_DROPPED;
			job->refs = 1;
			continue;
		}
		job->state = WORKER_JOB_QUEUED;
		job->refs = 2;
		*w->jobs_tail = job;
		w->jobs_tail = &job->next;
		uv_async_send(&w->mailbox);
	}
	for (i = 0; i < pool->n; i++) {
		while (!expired && jobs[i] && jobs[i]->state == WORKER_JOB_QUEUED)
			expired = pthread_cond_timedwait(&pool->cond, &pool->lock,
							 &deadline) == ETIMEDOUT;
		if (!jobs[i])
			continue;
		jobs[i]->refs--;
		if (jobs[i]->state == WORKER_JOB_QUEUED) {
			jobs[i] = NULL;		/* the worker's now */
			late++;
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return late;
}

void worker_stats_add(const struct worker *w, struct proxy_stats *sum)
{
	const counter_t *in = (const counter_t *)&w->proxy.stats;
	counter_t *out = (counter_t *)sum;
	size_t i;

	/* Only the worker writes its counters; a relaxed load cannot tear
	 * and is one event stale at worst. sum is the caller's own. */
	for (i = 0; i < sizeof(*sum) / sizeof(counter_t); i++)
		counter_add(&out[i], counter_get(&in[i]));
}

void worker_pool_stats(const struct worker_pool *pool, struct proxy_stats *sum)
{
	unsigned i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < pool->n; i++)
		worker_stats_add(&pool->workers[i], sum);
}

uint64_t worker_pool_n_flows(const struct worker_pool *pool)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < pool->n; i++)
		n += counter_get(&pool->workers[i].proxy.n_flows);
	return n;
}

bool worker_pool_drained(const struct worker_pool *pool)
{
	unsigned i;

	for (i = 0; i < pool->n; i++)
		if (!atomic_load_explicit(&pool->workers[i].drained, memory_order_acquire) &&
		    !atomic_load_explicit(&pool->workers[i].exited, memory_order_acquire))
			return false;
	return true;
}

/*
 * uv_now() of every loop and uv_hrtime() read the same monotonic clock
 * (libuv may read it coarsely, a few ms behind): a beat stamped a little
 * after now is no age at all.
 */
bool worker_pool_turning(const struct worker_pool *pool, uint64_t max_age_ms,
			 unsigned *stalled)
{
	uint64_t now = uv_hrtime() / 1000000;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		const struct worker *w = &pool->workers[i];
		uint64_t b = atomic_load_explicit(&w->beat_ms, memory_order_relaxed);

		if (!b || atomic_load(&w->exited) || (now > b && now - b > max_age_ms)) {
			if (stalled)
				*stalled = i;
			return false;
		}
	}
	return true;
}

bool worker_pool_alive(struct worker_pool *pool, unsigned *stalled)
{
	bool alive = true;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct worker *w = &pool->workers[i];
		uint64_t b = atomic_load_explicit(&w->beats, memory_order_relaxed);

		if (b == w->beats_seen && !atomic_load(&w->exited)) {
			if (alive && stalled)
				*stalled = i;
			alive = false;
		}
		w->beats_seen = b;
	}
	return alive;
}

static void worker_pool_on_notify_closed(uv_handle_t *h)
{
	struct worker_pool *pool = h->data;
	size_t i;

	for (i = 0; i < pool->n_retired; i++)
		cfg_free(pool->retired[i]);
	free(pool->retired);
	pool->retired = NULL;
	pool->n_retired = 0;
	free(pool->workers);
	pool->workers = NULL;
	pool->n = 0;
	pthread_cond_destroy(&pool->cond);
	pthread_mutex_destroy(&pool->lock);
	if (pool->close_cb)
		pool->close_cb(pool);
}

/* Joins the workers that have exited; once closing and all are, the
 * notification handle closes last. */
static void worker_pool_reap(struct worker_pool *pool)
{
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct worker *w = &pool->workers[i];

		if (w->started && !w->joined &&
		    atomic_load_explicit(&w->exited, memory_order_acquire)) {
			pthread_join(w->thread, NULL);
			w->joined = true;
		}
	}
	worker_pool_sweep(pool);
	if (!pool->closing || pool->notify_closing)
		return;
	for (i = 0; i < pool->n; i++)
		if (!pool->workers[i].joined)
			return;
	pool->notify_closing = true;
	uv_close((uv_handle_t *)&pool->notify, worker_pool_on_notify_closed);
}

void worker_pool_close(struct worker_pool *pool, void (*close_cb)(struct worker_pool *pool))
{
	unsigned i;

	if (pool->closing)
		return;
	pool->closing = true;
	pool->close_cb = close_cb;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->n; i++)
		if (pool->workers[i].started)
			worker_post_cmd(&pool->workers[i], WORKER_CMD_CLOSE);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->n; i++)
		if (!pool->workers[i].started && !pool->workers[i].joined)
			worker_close_here(&pool->workers[i]);
	worker_pool_reap(pool);
}
