/* SPDX-License-Identifier: MIT */
/* Types of the transports' per-worker tables as the stats reply shows
 * them (ctl_pools.h). Types only. */
#ifndef SMCPROXY_CTL_POOLS_T_H
#define SMCPROXY_CTL_POOLS_T_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "smc/transport-t.h"

struct worker_job;

/* The last table one worker gave for one transport. */
struct ctl_pool_snap {
	json_t *rows;			/* NULL: none yet */
	uint64_t taken_ms;		/* ctl_pools_now_ms() when it ran */
	uint64_t posted_ms;		/* when the job in flight was posted */
	bool in_flight;			/* a job is queued or running */
};

/*
 * A snapshot per worker and transport slot, refreshed by jobs that the
 * workers run when they get to them: a stats request reads it without
 * waiting for a worker that is slow (ctl_pools.c). The lock is taken by
 * the main thread and by the workers' job runs, never on the data path.
 */
struct ctl_pools {
	pthread_mutex_t lock;
	unsigned n_workers;
	struct ctl_pool_snap *snap;	/* [n_workers * SMC_TRANSPORT_SLOTS] */
	struct worker_job **jobs;	/* [n_workers]: a request's, main thread only */
};

#endif
