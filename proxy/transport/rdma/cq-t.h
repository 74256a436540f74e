/* SPDX-License-Identifier: MIT */
/*
 * Types of the completion-queue pool: a few CQs shared by all RDMA links
 * of a worker instead of one per link (kernel SMC keeps one pair per
 * device for the same reason: fewer interrupts, fewer fds, batched polls).
 * Types only.
 */
#ifndef SMCPROXY_CQ_T_H
#define SMCPROXY_CQ_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/counter.h"
#include "core/epset-t.h"

#define CQ_POOL_MAX	16

struct ibv_wc;
struct ibv_cq;
struct ibv_comp_channel;
struct ibv_context;

/*
 * Embedded in whatever a work request is for; the work request's wr_id is
 * its address, so a completion finds its context in O(1) (the kernel's
 * struct ib_cqe).
 */
struct cq_entry {
	void (*done)(struct cq_entry *e, const struct ibv_wc *wc);
};

/* Written by the worker that owns the pool; read on any thread. */
struct cq_stats {
	counter_t polls;			/* ibv_poll_cq calls */
	counter_t completions;
	counter_t empty_polls;		/* polls that found nothing */
	counter_t rearms;		/* ibv_req_notify_cq calls */
	counter_t rearms_solicited;	/* of which for solicited ones only */
	counter_t events;		/* completion-channel wake-ups */
	counter_t rearm_failures;	/* ibv_req_notify_cq errors */
};

struct cq {
	struct cq_pool *pool;
	unsigned idx;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct epset_entry ev;
	unsigned n_links;		/* links using it */
	unsigned n_quiet;		/* of which need no send completion event */
	unsigned cqe;			/* its size */
	unsigned used;			/* entries the links on it may need */
	bool moderated;			/* ibv_modify_cq took */
	bool armed;
	bool armed_solicited;		/* for the peers' messages only */
	bool busy;			/* a full round: poll again before blocking */
	struct cq_stats st;
};

struct cq_pool {
	struct ibv_context *ctx;
	struct epset *epset;
	unsigned budget;		/* cq.poll_budget */
	unsigned n;
	struct cq cqs[CQ_POOL_MAX];
};

#endif
