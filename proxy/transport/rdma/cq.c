/* SPDX-License-Identifier: MIT */
/*
 * The completion-queue pool. A completion names its work request's
 * struct cq_entry by wr_id, so polling is one indirect call per
 * completion whatever link or flow it belongs to.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <string.h>

#include "core/container.h"
#include "cq.h"
#include "core/epset.h"
#include "smc/transport.h"
#include "verbs.h"

#define CQ_POLL_BATCH	16	/* completions per ibv_poll_cq call */

static bool cq__poll(struct cq *cq, bool drain, bool arm);
static bool cq_poll_round(struct cq *cq, bool arm);

static void cq_on_event(struct epset_entry *e, uint32_t events)
{
	struct cq *cq = container_of(e, struct cq, ev);
	struct ibv_cq *ev_cq;
	void *ctx;
	unsigned n = 0;

	/*
	 * One read, not a loop to EAGAIN: an event needs an arm, and we arm
	 * again only after this read (cq_poll()), so the channel holds at
	 * most this one. That saves a failing read() per wake-up; were one
	 * left behind, its arrival was an edge of its own, and
	 * cq_pool_close() takes what remains before the CQ goes.
	 */
	if (ibv_get_cq_event(cq->channel, &ev_cq, &ctx) == 0)
		n = 1;
	if (!n)
		return;
	ibv_ack_cq_events(cq->cq, n);
	counter_add(&cq->st.events, n);
	cq->armed = false;
	/*
	 * Polled now, armed only when the worker is about to block
	 * (cq_pool_idle()): what completes while the batch runs or the loop
	 * busy-polls is taken without an event, and a worker that wakes
	 * for a completion, then for its socket, arms once, for what it
	 * then waits for, not once after each (over rxe an ioctl each).
	 */
	cq_poll_round(cq, false);
	cq->busy = true;
}

/*
 * One round: up to poll_budget completions. A full round means more may
 * wait: the CQ stays unarmed and busy, and the loop comes back to it after
 * the other ready events (cq_pool_idle()), as NAPI does, so one busy CQ
 * cannot starve sockets and other CQs. An empty poll re-arms (with arm),
 * then polls once more for what came between the two: it raised no
 * event. drain polls until empty whatever the budget.
 */
static bool cq_poll_round(struct cq *cq, bool arm)
{
	return cq__poll(cq, false, arm);
}

bool cq_poll(struct cq *cq, bool drain)
{
	return cq__poll(cq, drain, true);
}

static bool cq__poll(struct cq *cq, bool drain, bool arm)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	unsigned budget = cq->pool->budget, taken = 0;
	bool solicited;

	for (;;) {
		unsigned want = budget - taken;
		int i, n;

		if (!drain && !want) {
			cq->busy = true;
			return true;
		}
		if (drain || want > CQ_POLL_BATCH)
			want = CQ_POLL_BATCH;
		n = vb_poll_cq(cq->cq, (int)want, wc);
		counter_inc(&cq->st.polls);
		if (n <= 0) {
			/* n < 0 is a provider error: nothing we can take. */
			counter_inc(&cq->st.empty_polls);
			if (!arm)
				return false;
			/* Solicited only while every link on the CQ can let
			 * its send completions wait (cq_quiet()): then the
			 * completion of our own message, which comes a wire
			 * round trip after we sent it, wakes nobody; the
			 * peer's messages do, and any later wake-up takes it. */
			solicited = cq->n_links && cq->n_quiet == cq->n_links;
			if (cq->armed && (!cq->armed_solicited || solicited)) {
				cq->busy = false;
				return false;
			}
			if (vb_req_notify_cq(cq->cq, solicited)) {
				/* No event will come (the device is likely
				 * gone): leave it busy, polled again at each
				 * wake-up of the loop, and do not spin. */
				counter_inc(&cq->st.rearm_failures);
				cq->busy = true;
				return false;
			}
			counter_inc(&cq->st.rearms);
			if (solicited)
				counter_inc(&cq->st.rearms_solicited);
			cq->armed = true;
			cq->armed_solicited = solicited;
			continue;
		}
		counter_add(&cq->st.completions, (unsigned)n);
		taken += (unsigned)n;
		for (i = 0; i < n; i++) {
			struct cq_entry *e = (struct cq_entry *)(uintptr_t)wc[i].wr_id;

			e->done(e, &wc[i]);
		}
	}
}

/*
 * True when completions were taken: their handlers may have posted work
 * that the end of a batch flushes, so the caller must end one more batch
 * before blocking (and call again).
 */
bool cq_pool_idle(struct cq_pool *pool, bool run)
{
	bool ran = false;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct cq *cq = &pool->cqs[i];
		uint64_t before = cq->st.completions;

		if (!cq->busy)
			continue;
		cq_poll(cq, !run);
		if (cq->st.completions != before)
			ran = true;
	}
	return ran;
}

void cq_pool_sweep(struct cq_pool *pool)
{
	unsigned i;

	for (i = 0; i < pool->n; i++)
		if (pool->cqs[i].armed_solicited)
			cq_poll(&pool->cqs[i], false);
}

bool cq_pool_busy_poll(struct cq_pool *pool)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	bool ran = false;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct cq *cq = &pool->cqs[i];
		unsigned want = pool->budget < CQ_POLL_BATCH ? pool->budget : CQ_POLL_BATCH;
		int k, n;

		n = vb_poll_cq(cq->cq, (int)want, wc);
		counter_inc(&cq->st.polls);
		if (n <= 0) {
			counter_inc(&cq->st.empty_polls);
			continue;
		}
		counter_add(&cq->st.completions, (unsigned)n);
		ran = true;
		for (k = 0; k < n; k++) {
			struct cq_entry *e = (struct cq_entry *)(uintptr_t)wc[k].wr_id;

			e->done(e, &wc[k]);
		}
	}
	return ran;
}

int cq_pool_init(struct cq_pool *pool, struct epset *epset, struct ibv_context *ctx,
		 unsigned n, unsigned cqe, unsigned budget)
{
	struct ibv_device_attr_ex attr = { 0 };
	unsigned i;
	int err;

	memset(pool, 0, sizeof(*pool));
	pool->ctx = ctx;
	pool->epset = epset;
	pool->budget = budget ? budget : 1;
	if (n > CQ_POOL_MAX)
		n = CQ_POOL_MAX;
	if (!n)
		n = 1;
	if (ibv_query_device_ex(ctx, NULL, &attr) == 0 && attr.orig_attr.max_cqe > 0 &&
	    cqe > (unsigned)attr.orig_attr.max_cqe)
		cqe = (unsigned)attr.orig_attr.max_cqe;
	for (i = 0; i < n; i++) {
		struct cq *cq = &pool->cqs[i];
		int flags;

		cq->pool = pool;
		cq->idx = i;
		cq->ev.cb = cq_on_event;
		cq->channel = ibv_create_comp_channel(ctx);
		if (!cq->channel)
			goto out_errno;
		flags = fcntl(cq->channel->fd, F_GETFL);
		if (flags < 0 || fcntl(cq->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)
			goto out_errno;
		/* Spread over the device's interrupt vectors; a pool larger
		 * than it has shares them. */
		cq->cq = ibv_create_cq(ctx, (int)cqe, cq, cq->channel,
				       ctx->num_comp_vectors > 0 ? (int)i % ctx->num_comp_vectors : 0);
		if (!cq->cq)
			goto out_errno;
		cq->cqe = (unsigned)cq->cq->cqe;
		/*
		 * Moderation: an event per 16 completions or 16 us, whichever
		 * first. Where the device cannot (rxe), every completion may
		 * raise an event; the budgeted polling still batches them.
		 */
		if (attr.cq_mod_caps.max_cq_count) {
			struct ibv_modify_cq_attr mod = {
				.attr_mask = IBV_CQ_ATTR_MODERATE,
				.moderate = { .cq_count = 16, .cq_period = 16 },
			};

			cq->moderated = ibv_modify_cq(cq->cq, &mod) == 0;
		}
		errno = vb_req_notify_cq(cq->cq, 0);
		if (errno)
			goto out_errno;
		cq->armed = true;
		counter_inc(&cq->st.rearms);
		if (epset_add(epset, cq->channel->fd, EPOLLIN, &cq->ev) < 0)
			goto out_errno;
		pool->n = i + 1;
	}
	return 0;

out_errno:
	err = errno ? -errno : -ENOMEM;
	/* The half-made CQ i is not counted in pool->n yet. */
	if (pool->cqs[i].cq)
		ibv_destroy_cq(pool->cqs[i].cq);
	if (pool->cqs[i].channel)
		ibv_destroy_comp_channel(pool->cqs[i].channel);
	pool->cqs[i].cq = NULL;
	pool->cqs[i].channel = NULL;
	cq_pool_close(pool);
	return err;
}

void cq_pool_close(struct cq_pool *pool)
{
	struct ibv_cq *ev_cq;
	void *ctx;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct cq *cq = &pool->cqs[i];

		epset_del(pool->epset, cq->channel->fd);
		/* ibv_destroy_cq() waits for every event to be acked. */
		while (ibv_get_cq_event(cq->channel, &ev_cq, &ctx) == 0)
			ibv_ack_cq_events(cq->cq, 1);
		ibv_destroy_cq(cq->cq);
		ibv_destroy_comp_channel(cq->channel);
		cq->cq = NULL;
		cq->channel = NULL;
	}
	pool->n = 0;
}

struct cq *cq_get(struct cq_pool *pool, unsigned need)
{
	struct cq *best = NULL;
	unsigned i;

	for (i = 0; i < pool->n; i++) {
		struct cq *cq = &pool->cqs[i];

		if (need > cq->cqe - cq->used)	/* used <= cqe: no wrap-around */
			continue;
		if (!best || cq->n_links < best->n_links)
			best = cq;
	}
	if (best) {
		best->n_links++;
		best->used += need;
	}
	return best;
}

void cq_quiet(struct cq *cq, bool quiet)
{
	if (quiet) {
		cq->n_quiet++;
		return;
	}
	cq->n_quiet--;
	/* Armed for solicited events only: re-armed for all before the
	 * worker blocks (cq_pool_idle()), and polled after that, since
	 * what completed before the new arm raises no event. */
	if (cq->armed && cq->armed_solicited)
		cq->busy = true;
}

void cq_put(struct cq *cq, unsigned need)
{
	if (!cq || !cq->n_links)
		return;
	cq->n_links--;
	cq->used -= need < cq->used ? need : cq->used;
}

void cq_info(const struct cq *cq, struct smc_fields *out)
{
	out->n = 0;
	smc_fields_uint(out, "cq", cq->idx);
	smc_fields_uint(out, "polls", cq->st.polls);
	smc_fields_uint(out, "completions", cq->st.completions);
	smc_fields_uint(out, "empty_polls", cq->st.empty_polls);
	smc_fields_uint(out, "rearms", cq->st.rearms);
	smc_fields_uint(out, "rearms_solicited", cq->st.rearms_solicited);
	smc_fields_uint(out, "events", cq->st.events);
	smc_fields_uint(out, "rearm_failures", cq->st.rearm_failures);
	smc_fields_uint(out, "links", cq->n_links);
	smc_fields_uint(out, "cqe", cq->cqe);
	smc_fields_bool(out, "moderated", cq->moderated);
}
