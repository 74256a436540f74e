/* SPDX-License-Identifier: MIT */
/*
 * Snapshots of the transports' per-worker tables (ctl_pools.h).
 *
 * A table is its transport's and lives on the worker's thread, so a
 * worker builds it (a worker_job) and the main thread only reads what it
 * left. Before, every stats request and every scrape posted a job to
 * every worker, for every transport with a table whether it ran or not,
 * and waited up to WORKER_ANSWER_MS for each: a worker stuck in a long
 * turn held the main loop (the watchdog, the stats socket, /ready) for a
 * second per request. Now a request waits CTL_POOLS_FRESH_MS at most, and
 * not at all for a worker that still owes the last answer: that one's
 * previous snapshot is shown, aged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/container.h"
#include "ctl_link.h"
#include "ctl_pools.h"
#include "smc/transport.h"
#include "worker.h"

struct ctl_pools_job {
	struct worker_job job;
	struct ctl_pools *cp;
	const struct smc_transport_ops *tp;
	unsigned slot;			/* in cp->snap */
};

static uint64_t ctl_pools_now_ms(void)
{
	return uv_hrtime() / 1000000;	/* monotonic, the same on every thread */
}

static struct ctl_pools_job *ctl_pools_job_of(struct worker_job *job)
{
	return container_of(job, struct ctl_pools_job, job);
}

/* On the worker's thread: its table, into the snapshot. */
static void ctl_pools_job_run(struct worker *w, struct worker_job *job)
{
	struct ctl_pools_job *j = ctl_pools_job_of(job);
	json_t *rows = ctl_pool_json(&w->proxy, j->tp);
	struct ctl_pool_snap *s = &j->cp->snap[j->slot];
	json_t *old;

	pthread_mutex_lock(&j->cp->lock);
	old = s->rows;
	s->rows = rows;
	s->taken_ms = ctl_pools_now_ms();
	s->in_flight = false;
	pthread_mutex_unlock(&j->cp->lock);
	json_decref(old);
}

/* Run or dropped; a dropped one (the worker closed) asks no more. */
static void ctl_pools_job_release(struct worker_job *job)
{
	struct ctl_pools_job *j = ctl_pools_job_of(job);

	if (job->state == WORKER_JOB_DROPPED) {
		pthread_mutex_lock(&j->cp->lock);
		j->cp->snap[j->slot].in_flight = false;
		pthread_mutex_unlock(&j->cp->lock);
	}
	free(j);
}

int ctl_pools_init(struct ctl_pools *cp, unsigned n_workers)
{
	*cp = (struct ctl_pools){ .n_workers = n_workers };
	cp->snap = calloc((size_t)n_workers * SMC_TRANSPORT_SLOTS, sizeof(*cp->snap));
	cp->jobs = calloc(n_workers ? n_workers : 1, sizeof(*cp->jobs));
	if (!cp->snap || !cp->jobs) {
		free(cp->snap);
		free(cp->jobs);
		*cp = (struct ctl_pools){ 0 };
		return -ENOMEM;
	}
	pthread_mutex_init(&cp->lock, NULL);
	return 0;
}

void ctl_pools_close(struct ctl_pools *cp)
{
	size_t i;

	if (!cp->snap)
		return;
	for (i = 0; i < (size_t)cp->n_workers * SMC_TRANSPORT_SLOTS; i++)
		json_decref(cp->snap[i].rows);
	free(cp->snap);
	free(cp->jobs);
	pthread_mutex_destroy(&cp->lock);
	memset(cp, 0, sizeof(*cp));
}

/* Whether any worker offers t (decided at their start, before their
 * threads ran: read without a lock). */
static bool ctl_pools_runs(const struct worker_pool *pool, const struct smc_transport_ops *t)
{
	unsigned i;

	for (i = 0; i < pool->n; i++)
		if (pool->workers[i].proxy.smc.lgr_transports & t->clc_bit)
			return true;
	return false;
}

/* A fresh snapshot of t from each worker that owes none; waits
 * CTL_POOLS_FRESH_MS at most. */
static void ctl_pools_refresh(struct ctl_pools *cp, struct worker_pool *pool,
			      const struct smc_transport_ops *t)
{
	struct worker_job **jobs = cp->jobs;
	uint64_t now = ctl_pools_now_ms();
	unsigned i, n = 0;

	for (i = 0; i < pool->n; i++) {
		unsigned slot = i * SMC_TRANSPORT_SLOTS + smc_transport_slot(t);
		struct ctl_pools_job *j;
		bool post;

		jobs[i] = NULL;
		pthread_mutex_lock(&cp->lock);
		post = !cp->snap[slot].in_flight;
		if (post) {
			cp->snap[slot].in_flight = true;
			cp->snap[slot].posted_ms = now;
		}
		pthread_mutex_unlock(&cp->lock);
		if (!post)
			continue;
		j = calloc(1, sizeof(*j));
		if (!j) {
			pthread_mutex_lock(&cp->lock);
			cp->snap[slot].in_flight = false;
			pthread_mutex_unlock(&cp->lock);
			continue;
		}
		*j = (struct ctl_pools_job){ .cp = cp, .tp = t, .slot = slot,
					     .job = { .run = ctl_pools_job_run,
						      .release = ctl_pools_job_release } };
		jobs[i] = &j->job;
		n++;
	}
	if (!n)
		return;
	worker_pool_run(pool, jobs, CTL_POOLS_FRESH_MS);
	for (i = 0; i < pool->n; i++)
		if (jobs[i])		/* ran, or dropped: ours again */
			ctl_pools_job_release(jobs[i]);
}

void ctl_pools_add(struct ctl_pools *cp, struct worker_pool *pool, json_t *body)
{
	const struct smc_transport_ops *t;
	json_t *late = json_array();
	unsigned i, k;

	if (!body || !late || !cp->snap) {
		json_decref(late);
		return;
	}
	smc_transport_foreach(t, k) {
		json_t *all = json_array(), *item;
		uint64_t now, age = 0;
		char key[64];
		size_t n;

		if (!t->pool_name || !all) {
			json_decref(all);
			continue;
		}
		if (ctl_pools_runs(pool, t))
			ctl_pools_refresh(cp, pool, t);
		now = ctl_pools_now_ms();
		pthread_mutex_lock(&cp->lock);
		for (i = 0; i < pool->n && ctl_pools_runs(pool, t); i++) {
			const struct ctl_pool_snap *s =
				&cp->snap[i * SMC_TRANSPORT_SLOTS + smc_transport_slot(t)];

			if (!s->rows || (s->in_flight && now - s->posted_ms >= WORKER_ANSWER_MS)) {
				bool listed = false;

				json_array_foreach(late, n, item)
					listed |= json_integer_value(item) == (json_int_t)i;
				if (!listed)
					json_array_append_new(late, json_integer(i));
			}
			if (!s->rows)
				continue;
			if (now - s->taken_ms > age)
				age = now - s->taken_ms;
			/* Copies: the worker replaces its rows under the lock,
			 * and reference counts are not shared across threads. */
			json_array_foreach(s->rows, n, item)
				json_array_append_new(all, json_deep_copy(item));
		}
		pthread_mutex_unlock(&cp->lock);
		json_object_set_new(body, t->pool_name, all);
		snprintf(key, sizeof(key), "%s_age_ms", t->pool_name);
		json_object_set_new(body, key, json_integer((json_int_t)age));
	}
	if (json_array_size(late))
		json_object_set(body, "workers_not_answering", late);
	json_decref(late);
}
