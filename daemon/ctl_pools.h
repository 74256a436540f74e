/* SPDX-License-Identifier: MIT */
/*
 * The transports' per-worker tables of the stats reply (rdma's CQ pool:
 * "cq": [...]) from snapshots: a stats request or a /metrics scrape asks
 * each worker for a fresh one and waits CTL_POOLS_FRESH_MS at most, only
 * for a worker that has no request outstanding; a worker that is slow
 * keeps its last snapshot, which the reply gives with its age. A
 * transport that no worker runs asks nobody.
 */
#ifndef SMCPROXY_CTL_POOLS_H
#define SMCPROXY_CTL_POOLS_H

#include <jansson.h>

#include "ctl_pools-t.h"
#include "worker-t.h"

#define CTL_POOLS_FRESH_MS	20

int ctl_pools_init(struct ctl_pools *cp, unsigned n_workers);
/* Once no worker runs a job any more (the pool is closed). Accepts a
 * zeroed ctl_pools. */
void ctl_pools_close(struct ctl_pools *cp);
/*
 * Adds to body, for every transport with a pool_name, {NAME: [rows of
 * every worker]}, "NAME_age_ms" (the oldest snapshot's age; 0 with
 * none), and "workers_not_answering" with the workers that gave no
 * snapshot yet or left a request unanswered for WORKER_ANSWER_MS.
 */
void ctl_pools_add(struct ctl_pools *cp, struct worker_pool *pool, json_t *body);

#endif
