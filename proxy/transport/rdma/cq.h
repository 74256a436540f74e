/* SPDX-License-Identifier: MIT */
/*
 * The completion-queue pool. Each CQ has its own completion channel in the
 * worker's epoll set; a wake-up polls up to cq.poll_budget completions at a
 * time, re-arms, and polls once more so a completion that raced the re-arm
 * is not left waiting for an event that will never come.
 */
#ifndef SMCPROXY_CQ_H
#define SMCPROXY_CQ_H

#include <stdbool.h>

#include "cq-t.h"

/* n CQs of cqe entries each on ctx; 0 or -errno. */
int cq_pool_init(struct cq_pool *pool, struct epset *epset, struct ibv_context *ctx,
		 unsigned n, unsigned cqe, unsigned budget);
/* Destroys the CQs: every QP using them must be destroyed first. */
void cq_pool_close(struct cq_pool *pool);
/* A link on cq became quiet (needs no event for its send completions) or
 * loud again; the CQ is armed for solicited events only while all are. */
void cq_quiet(struct cq *cq, bool quiet);
/* Every sweep (100 ms): a CQ armed for solicited events only is polled,
 * so that what raises no event there (our sends' completions, and a
 * failed one: the peer died) waits no longer than that. */
void cq_pool_sweep(struct cq_pool *pool);
/*
 * Of the CQs with room for need more entries (a link's send and receive
 * depths: what it can have outstanding, so that a CQ shared by many links
 * cannot overrun), the one with the fewest links. NULL when none has room.
 */
struct cq *cq_get(struct cq_pool *pool, unsigned need);
void cq_put(struct cq *cq, unsigned need);
/* Polls one round of cq (see cq.c); true when more may wait. */
bool cq_poll(struct cq *cq, bool drain);
/* Before the loop blocks: another round for the busy CQs; true when that
 * took completions (end a batch, then call again). run false: drain them
 * instead (the loop is about to sleep). */
bool cq_pool_idle(struct cq_pool *pool, bool run);
/*
 * Busy polling: up to poll_budget completions from every CQ of the pool,
 * without touching their arming (an armed CQ whose completions we took
 * raises an event that then finds it empty, which is harmless). True when
 * completions were taken.
 */
bool cq_pool_busy_poll(struct cq_pool *pool);

struct smc_fields;
/* cq's counters and shape as `smcproxyctl stats` lists them ("cq"): the
 * one list of a CQ's fields, into out (emptied first). */
void cq_info(const struct cq *cq, struct smc_fields *out);

#endif
