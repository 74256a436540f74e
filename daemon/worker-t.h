/* SPDX-License-Identifier: MIT */
/* Types of the worker threads (worker.h). Types only. */
#ifndef SMCPROXY_WORKER_T_H
#define SMCPROXY_WORKER_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "cfg-t.h"
#include "log.h"
#include "proxy-t.h"

struct worker;
struct worker_pool;
struct worker_job;

/*
 * State changes the main thread asks of a worker. They are idempotent and
 * coalesce: asked twice before the worker looked, they happen once.
 */
enum worker_cmd {
	WORKER_CMD_SET_CFG	  = 1 << 0,	/* take pool->cfg (proxy_set_cfg) */
	WORKER_CMD_STOP_ACCEPTING = 1 << 1,	/* close the listeners; drain */
	WORKER_CMD_ABORT_FLOWS	  = 1 << 2,	/* reset every flow */
	WORKER_CMD_CLOSE	  = 1 << 3,	/* close everything; the thread ends */
};

enum worker_job_state {
	WORKER_JOB_QUEUED,		/* posted, not run yet */
	WORKER_JOB_RAN,			/* run() returned */
	WORKER_JOB_DROPPED,		/* the worker closed without running it */
};

/*
 * A question the main thread has for a worker's own structures (its flow
 * list, its link groups): run() reads them on the worker's thread, where
 * nothing changes under it, and leaves its answer in the embedding struct.
 * Owned by the poster again once it ran in time; otherwise by the worker,
 * which calls release() (NULL: free()) when it is done with it.
 */
struct worker_job {
	struct worker_job *next;	/* in the worker's queue */
	void (*run)(struct worker *w, struct worker_job *job);
	void (*release)(struct worker_job *job);
	/* Under the pool's lock. */
	enum worker_job_state state;
	unsigned refs;			/* the poster's and the worker's */
};

/*
 * One worker: a thread with its own event loop and its own data plane,
 * sharing nothing with the others on the data path. Aligned so that the
 * counters one worker writes share no cache line with another's.
 */
struct worker {
	struct worker_pool *pool;
	unsigned index;
	uv_loop_t loop;
	struct proxy proxy;		/* its stats are read lock-free */
	uv_async_t mailbox;		/* commands or jobs are waiting */
	uv_timer_t heartbeat;

	/* Under the pool's lock. */
	unsigned cmds;			/* enum worker_cmd bits not yet done */
	uint64_t cmd_posted, cmd_done;	/* commands acknowledged up to done */
	struct worker_job *jobs, **jobs_tail;
	bool mailbox_open;
	const struct cfg *cfg_in_use;	/* what its proxy points at */

	/* Written by the worker, read by the main thread without a lock. */
	atomic_uint_fast64_t beats;	/* the heartbeat timer ran */
	atomic_uint_fast64_t beat_ms;	/* uv_now() of its last heartbeat, 0: none yet */
	atomic_uint_fast64_t beat_gap_max_ms;	/* the longest time between two */
	uint64_t beat_prev_ms;		/* the worker's own: its last beat, or the timer's start */
	atomic_bool drained;		/* stopped accepting and no flow left */
	atomic_bool exited;		/* the loop has ended; about to return */

	/* The worker's thread only. */
	bool draining;
	bool closing;
	bool no_port_logged;		/* the start of this port episode was */

	/* The main thread only. */
	pthread_t thread;
	bool started;			/* the thread exists (to be joined) */
	bool joined;
	uint64_t beats_seen;
} __attribute__((aligned(64)));

struct worker_pool {
	uv_loop_t *main_loop;
	struct worker *workers;
	unsigned n;
	uint64_t heartbeat_ms;		/* 0: no heartbeat */
	uv_async_t notify;		/* a worker drained, switched or exited */
	/* The owner's: called on the main thread after a notification. */
	void (*on_notify)(struct worker_pool *pool);
	void *data;

	/* Control path only: never taken on the data path. */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a command or job done, a worker up */
	unsigned n_up;
	const struct cfg *cfg;		/* the one workers switch to */
	/* Replaced configurations a worker may still use; freed once none does. */
	struct cfg **retired;
	size_t n_retired;

	/* Shared by the workers: the burst of log lines is the daemon's. */
	struct log_ratelimit rl_refused, rl_setup, rl_accept;
	/* Episodes of source port exhaustion: ports come back one TIME_WAIT
	 * at a time, so episodes can follow each other quickly. */
	struct log_ratelimit rl_no_port;
	/* One budget per kind of refusal, so that a flood of one kind
	 * (silent connections) cannot hide another (proposals without
	 * the key) from the operator. */
	struct log_ratelimit rl_peers[SMC_REFUSE_KINDS];

	bool closing;
	bool notify_closing;
	void (*close_cb)(struct worker_pool *pool);
};

#endif
