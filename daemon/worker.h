/* SPDX-License-Identifier: MIT */
/*
 * Worker threads: each runs its own libuv loop and its own struct proxy
 * (listeners, flows, counters), sharing nothing with the others on the
 * data path. The main thread keeps signals, systemd, the control socket
 * and reloads, and reaches the workers three ways, none of which takes a
 * lock on the data path:
 *
 *   - counters: read lock-free (worker_stats_add);
 *   - commands (enum worker_cmd): flags and a uv_async_t, acknowledged;
 *   - jobs: a function run on the worker's thread that reads what only
 *     the worker may touch (its flow list), waited for with a timeout so
 *     that a stuck worker is reported, not waited for forever.
 *
 * Workers tell the main thread through one uv_async_t of its loop when one
 * of them drained, switched configuration or exited.
 */
#ifndef SMCPROXY_WORKER_H
#define SMCPROXY_WORKER_H

#include <stddef.h>

#include "proxy.h"
#include "worker-t.h"

/* How long the main thread waits for workers to answer before it reports
 * them as not answering. */
#define WORKER_ANSWER_MS 1000

/* Workers for "workers": 0, one per CPU this process may run on. */
unsigned worker_default_count(void);

/*
 * Creates n workers, each with its loop and its proxy_init()'ed proxy
 * listening on cfg's addresses (with SO_REUSEPORT when n > 1, so that the
 * kernel spreads connections over the workers' listeners). The listening
 * sockets passed by systemd (adopt_fds) cannot be spread that way: every
 * worker gets its own dup() of them and polls the same socket. The pool
 * owns adopt_fds from here (closes those no listen address wants). No
 * thread runs yet. Returns 0, or -errno with errbuf set and nothing left
 * open. cfg must stay valid until worker_pool_set_cfg() replaces it.
 */
int worker_pool_init(struct worker_pool *pool, uv_loop_t *main_loop, unsigned n,
		     const struct cfg *cfg, const int *adopt_fds, size_t n_adopt,
		     char *errbuf, size_t errlen);
/*
 * Starts the threads; returns once every worker accepts, or -errno when a
 * thread cannot be created (the pool must then be closed). heartbeat_ms,
 * unless 0, makes each worker bump its beats that often.
 */
int worker_pool_start(struct worker_pool *pool, uint64_t heartbeat_ms);
/* Before worker_pool_start(): every worker reads accepted connections'
 * original destinations from ic (intercept ebpf), which must outlive the
 * pool. */
struct intercept;
void worker_pool_set_intercept(struct worker_pool *pool, struct intercept *ic);

/*
 * Asks every worker for cmd and waits up to timeout_ms (0: not at all)
 * for them to have done it. Returns how many had not.
 */
unsigned worker_pool_command(struct worker_pool *pool, unsigned cmd, unsigned timeout_ms);

/*
 * Makes cfg the workers' configuration and waits up to timeout_ms for
 * them to switch. old, the configuration cfg replaces, is freed once no
 * worker uses it any more: now, or when the last late worker switched.
 * Returns how many workers had not switched in time.
 */
unsigned worker_pool_set_cfg(struct worker_pool *pool, const struct cfg *cfg,
			     struct cfg *old, unsigned timeout_ms);

/*
 * Runs jobs[i] (NULL: nothing) on worker i's thread, all at once, and
 * waits up to timeout_ms for them. Returns how many had not run: those
 * jobs[i] are set to NULL and belong to their worker (see struct
 * worker_job); the others belong to the caller again, and job->state says
 * whether they ran (a closing worker drops them).
 */
unsigned worker_pool_run(struct worker_pool *pool, struct worker_job **jobs,
			 unsigned timeout_ms);

/* Adds w's counters to *sum (lock-free loads, see struct proxy_stats). */
void worker_stats_add(const struct worker *w, struct proxy_stats *sum);
/* The counters of all workers, summed. */
void worker_pool_stats(const struct worker_pool *pool, struct proxy_stats *sum);
/* Flows open now, all workers. */
uint64_t worker_pool_n_flows(const struct worker_pool *pool);
/* Whether every worker stopped accepting and has no flow left. */
bool worker_pool_drained(const struct worker_pool *pool);
/*
 * Whether every worker's loop ran its heartbeat since the last call (the
 * first call compares with the start). *stalled is the first that did not.
 * Only meaningful with a heartbeat shorter than the interval of the calls.
 */
bool worker_pool_alive(struct worker_pool *pool, unsigned *stalled);
/*
 * Whether every worker's heartbeat ran within the last max_age_ms, by the
 * clock, without changing what worker_pool_alive() compares with: the
 * readiness probe's view. False before a worker's first beat, and for a
 * worker that exited; *stalled is the first such. Needs a heartbeat.
 */
bool worker_pool_turning(const struct worker_pool *pool, uint64_t max_age_ms,
			 unsigned *stalled);

/*
 * Closes every worker (flows are reset) and joins its thread; close_cb
 * runs on the main loop once all are gone and the pool is freed.
 */
void worker_pool_close(struct worker_pool *pool, void (*close_cb)(struct worker_pool *pool));

#endif
