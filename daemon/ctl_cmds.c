/* SPDX-License-Identifier: MIT */
/*
 * What the control socket answers: the JSON bodies of ctl_proto replies.
 * Counters are summed from every worker without asking them; lists of a
 * worker's own structures (flows, and links and peers with link groups)
 * are built by the worker on its thread (a worker_job) and joined here.
 * The transports' per-worker tables, such as rdma's CQ pool, come from
 * snapshots that do not wait for a slow worker (ctl_pools.c). `debug fail-link` changes a worker's link the same way.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "ctl_lgr.h"
#include "ctl_link.h"
#include "ctl_pools.h"
#include "flow.h"
#include "intercept/intercept.h"
#include "smc/transport.h"
#include "smcd.h"
#include "version.h"

#define FLOWS_LIST_MAX 10000

static json_t *per_mode(const counter_t *v)
{
	json_t *o = json_object();
	int m;

	for (m = 0; m < FLOW_MODE__MAX; m++)
		json_object_set_new(o, flow_mode_name(m),
				    json_integer((json_int_t)counter_get(&v[m])));
	return o;
}

static uint64_t sum_modes(const counter_t *v)
{
	uint64_t n = 0;
	int m;

	for (m = 0; m < FLOW_MODE__MAX; m++)
		n += counter_get(&v[m]);
	return n;
}

/* A few counters of each worker: how the kernel spread the connections. */
static json_t *per_worker(struct smcd *d)
{
	json_t *arr = json_array();
	unsigned i;

	for (i = 0; i < d->workers.n; i++) {
		const struct loop_stats *ls = &d->workers.workers[i].proxy.core.stats;
		struct proxy_stats st = { 0 };

		worker_stats_add(&d->workers.workers[i], &st);
		/* The loop's counters: how the worker waited for work. */
		json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"worker", (int)i,
			"flows_active", (json_int_t)sum_modes(st.flows_active),
			"flows_accepted", (json_int_t)st.flows_accepted,
			"bytes_in", (json_int_t)st.bytes_in,
			"bytes_out", (json_int_t)st.bytes_out,
			"sleeps", (json_int_t)counter_get(&ls->sleeps),
			"wakeups", (json_int_t)counter_get(&ls->wakeups),
			"busy_polls", (json_int_t)counter_get(&ls->polls),
			"busy_poll_hits", (json_int_t)counter_get(&ls->poll_hits),
			"busy_poll_idle_us", (json_int_t)(counter_get(&ls->poll_ns) / 1000),
			"busy_poll_grows", (json_int_t)counter_get(&ls->poll_grows),
			"busy_poll_shrinks", (json_int_t)counter_get(&ls->poll_shrinks),
			"heartbeat_gap_max_ms", (json_int_t)atomic_load_explicit(
				&d->workers.workers[i].beat_gap_max_ms, memory_order_relaxed)));
	}
	return arr;
}

/*
 * Builds a list of a worker's structures on that worker's thread; returns
 * a JSON array (new reference, NULL for none).
 */
typedef json_t *(*ctl_list_fn)(struct proxy *p);
static json_t *ctl_workers_list(struct smcd *d, const char *name, ctl_list_fn fn,
				size_t max, char **err);

/* "intercept": the mode and, in ebpf mode, what is attached where and
 * what the programs counted. */
static json_t *stats_intercept(struct smcd *d, const struct proxy_stats *sum)
{
	struct intercept_stats st;
	json_t *o, *progs;

	if (!d->intercept_on)
		return json_pack("{s:s}", "mode", "iptables");
	intercept_stats(&d->intercept, &st);
	progs = json_array();
	for (size_t i = 0; d->intercept.attached && intercept_programs[i]; i++)
		json_array_append_new(progs, json_string(intercept_programs[i]));
	o = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I}",
		      "mode", "ebpf",
		      "cgroup", d->intercept.cgroup,
		      "attached", progs,
		      "redirected", (json_int_t)st.redirected,
		      "established", (json_int_t)st.established,
		      "self_skipped", (json_int_t)st.self,
		      "no_listener", (json_int_t)st.no_listener,
		      "map_full", (json_int_t)st.map_full);
	json_object_set_new(o, "bypass", json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"on", d->intercept.bypass.on,
		"why_off", d->intercept.bypass.why,
		"flows", (json_int_t)sum->flows_bypassed,
		"joined", (json_int_t)st.byp_joined,
		"late", (json_int_t)st.byp_late,
		"credit_out", (json_int_t)st.byp_credit,
		"peer_gone", (json_int_t)st.byp_gone,
		"msgs", (json_int_t)st.byp_msgs,
		"bytes", (json_int_t)st.byp_bytes));
	return o;
}

static json_t *stats_body(struct smcd *d)
{
	struct proxy_stats sum, *st = &sum;
	json_t *fb = json_object(), *body;
	int r;

	worker_pool_stats(&d->workers, st);
	for (r = FB_NONE + 1; r < FB__MAX; r++)
		json_object_set_new(fb, fallback_reason_name(r), json_integer(st->fallback[r]));
	body = json_pack("{s:s, s:i, s:I, s:i, s:I, s:{s:I, s:o, s:o}, s:o,"
			 " s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			 "version", SMCPROXY_VERSION,
			 "pid", (int)getpid(),
			 "uptime_ms", (json_int_t)(uv_now(&d->loop) - d->start_ms),
			 "workers", (int)d->workers.n,
			 "reloads", (json_int_t)d->reloads,
			 "flows",
			   "accepted", (json_int_t)st->flows_accepted,
			   "active", per_mode(st->flows_active),
			   "closed", per_mode(st->flows_closed),
			 "fallback", fb,
			 "bytes", "in", (json_int_t)st->bytes_in, "out", (json_int_t)st->bytes_out,
			 "connect_failures", (json_int_t)st->connect_failures,
			 "connect_timeouts", (json_int_t)st->connect_timeouts,
			 "connect_no_port", (json_int_t)st->connect_no_port,
			 "connect_client_addr", (json_int_t)st->connect_client_addr,
			 "connect_host_addr", (json_int_t)st->connect_host_addr,
			 "connect_port_taken", (json_int_t)st->connect_port_taken,
			 "resets", (json_int_t)st->resets,
			 "accept_pauses", (json_int_t)st->accept_pauses,
			 "loops_refused", (json_int_t)st->loops_refused,
			 "idle_timeouts", (json_int_t)st->idle_timeouts,
			 "per_worker", per_worker(d));
	ctl_lgr_stats(body, st);
	for (r = 0; r < (int)d->workers.n; r++)
		ctl_lgr_policy_ports(body, &d->workers.workers[r].proxy.smc.policy_ports);
	ctl_pools_add(&d->pools, &d->workers, body);
	if (body)
		json_object_set_new(body, "intercept", stats_intercept(d, st));
	return body;
}

/* On the worker's thread: its flows, at most one more than are listed so
 * that the caller knows when the list is cut. */
static json_t *flows_json(struct proxy *p)
{
	json_t *arr = json_array();
	const struct flow *f;
	uint64_t now = uv_now(p->loop);
	char client[ADDR_STRLEN], dest[ADDR_STRLEN];

	for (f = flow_next(p, NULL); f; f = flow_next(p, f)) {
		uint64_t in, out;
		uint32_t rx, tx;

		if (json_array_size(arr) > FLOWS_LIST_MAX)
			break;
		flow_bytes(f, &in, &out);
		flow_rings(f, &rx, &tx);
		json_array_append_new(arr, json_pack(
			"{s:I, s:i, s:s, s:s, s:s, s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:I}",
			"id", (json_int_t)f->id,
			"worker", (int)p->worker,
			"mode", flow_mode_name(f->mode),
			"reason", fallback_reason_name(f->reason),
			"state", flow_state_name(f),
			"bypass", f->bypass,
			"client", addr_format((const struct sockaddr *)&f->client, client, sizeof(client)),
			"dest", addr_format((const struct sockaddr *)&f->dest, dest, sizeof(dest)),
			"bytes_in", (json_int_t)in,
			"bytes_out", (json_int_t)out,
			"rx_ring", (json_int_t)rx,
			"tx_ring", (json_int_t)tx,
			"age_ms", (json_int_t)(now - f->created_ms)));
	}
	return arr;
}

struct ctl_list_job {
	struct worker_job job;
	ctl_list_fn fn;
	json_t *items;
};

static void ctl_list_job_run(struct worker *w, struct worker_job *job)
{
	struct ctl_list_job *j = container_of(job, struct ctl_list_job, job);

	j->items = j->fn(&w->proxy);
}

static void ctl_list_job_release(struct worker_job *job)
{
	struct ctl_list_job *j = container_of(job, struct ctl_list_job, job);

	json_decref(j->items);
	free(j);
}

/*
 * The members {name: [...]} of a reply: fn's lists of every worker, run on
 * each worker's thread at once, joined in worker order. An object without
 * "worker" gets its worker's index. With max, at most max entries,
 * "truncated", and "partial": true when entries are missing for either
 * reason. Workers that did not answer within WORKER_ANSWER_MS (or are
 * closing) are listed in "workers_not_answering" and their entries are
 * missing; the reply does not wait longer for them.
 */
static json_t *ctl_workers_list(struct smcd *d, const char *name, ctl_list_fn fn,
				size_t max, char **err)
{
	struct worker_pool *pool = &d->workers;
	struct worker_job **jobs = calloc(pool->n, sizeof(*jobs));
	json_t *all = json_array(), *late = json_array(), *body = NULL, *item;
	bool truncated = false;
	unsigned i;
	size_t k;

	if (!jobs || !all || !late)
		goto out_nomem;
	for (i = 0; i < pool->n; i++) {
		struct ctl_list_job *j = calloc(1, sizeof(*j));

		if (!j)
			goto out_free_jobs;
		j->fn = fn;
		j->job.run = ctl_list_job_run;
		j->job.release = ctl_list_job_release;
		jobs[i] = &j->job;
	}
	worker_pool_run(pool, jobs, WORKER_ANSWER_MS);
	for (i = 0; i < pool->n; i++) {
		struct ctl_list_job *j;

		if (!jobs[i] || jobs[i]->state != WORKER_JOB_RAN) {
			json_array_append_new(late, json_integer(i));
			continue;
		}
		j = container_of(jobs[i], struct ctl_list_job, job);
		json_array_foreach(j->items, k, item) {
			if (max && json_array_size(all) == max) {
				truncated = true;
				break;
			}
			if (json_is_object(item) && !json_object_get(item, "worker"))
				json_object_set_new(item, "worker", json_integer(i));
			json_array_append(all, item);
		}
	}
	body = json_pack("{s:O}", name, all);
	if (body && max) {
		json_object_set_new(body, "truncated", json_boolean(truncated));
		json_object_set_new(body, "partial",
				    json_boolean(truncated || json_array_size(late)));
	}
	if (body && json_array_size(late))
		json_object_set(body, "workers_not_answering", late);
out_free_jobs:
	for (i = 0; i < pool->n; i++)
		if (jobs[i])
			ctl_list_job_release(jobs[i]);
out_nomem:
	free(jobs);
	json_decref(all);
	json_decref(late);
	if (!body)
		*err = strdup("out of memory");
	return body;
}

/*
 * debug fail-link: first every worker counts its active link groups whose
 * id starts with the prefix (ids are per worker, so which one holds it is
 * not known here), then the one that holds the only match fails the link
 * on its thread. The group may go away in between: the second step looks
 * it up again and says so.
 */
struct ctl_fail_job {
	struct worker_job job;
	bool act;			/* false: count the matches only */
	char lgr[CTL_LGR_PREFIX_MAX + 1];
	unsigned link;
	/* The answer. */
	unsigned matches;
	int rc;
	char id[17];
	char msg[256];
};

static struct ctl_fail_job *fail_job_of(struct worker_job *job)
{
	return container_of(job, struct ctl_fail_job, job);
}

static void ctl_fail_job_run(struct worker *w, struct worker_job *job)
{
	struct ctl_fail_job *j = fail_job_of(job);
	struct lgr *lgr;

	if (!j->act) {
		j->matches = ctl_lgr_find(&w->proxy, j->lgr, &lgr);
		return;
	}
	j->rc = ctl_link_fail(&w->proxy, j->lgr, j->link, j->id, j->msg, sizeof(j->msg));
}

static void ctl_fail_job_release(struct worker_job *job)
{
	free(fail_job_of(job));
}

static struct ctl_fail_job *ctl_fail_job_new(const struct ctl_request *req, bool act)
{
	struct ctl_fail_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->job.run = ctl_fail_job_run;
	j->job.release = ctl_fail_job_release;
	j->act = act;
	memcpy(j->lgr, req->lgr, sizeof(j->lgr));
	j->lgr[CTL_LGR_PREFIX_MAX] = '\0';
	j->link = req->link;
	return j;
}

/* "worker 1" or "workers 1, 3": those whose job worker_pool_run() left
 * to them (NULL), having not run it in time. */
static void late_workers(char *buf, size_t len, struct worker_job **jobs, unsigned n)
{
	size_t off;
	unsigned i, k = 0;

	for (i = 0; i < n; i++)
		k += !jobs[i];
	off = (size_t)snprintf(buf, len, "worker%s", k == 1 ? "" : "s");
	for (i = 0, k = 0; i < n && off < len; i++)
		if (!jobs[i])
			off += (size_t)snprintf(buf + off, len - off, "%s%u", k++ ? ", " : " ", i);
}

static json_t *debug_fail_link(struct smcd *d, const struct ctl_request *req, char **err)
{
	struct worker_pool *pool = &d->workers;
	struct worker_job **jobs = NULL, *one;
	struct ctl_fail_job *j;
	unsigned i, matches = 0, owner = 0, late;
	char msg[512], who[128];
	json_t *body = NULL;

	if (!d->cfg->debug.fail_link) {
		*err = strdup("not allowed: the configuration must set \"debug\": "
			      "{\"fail_link\": true} (live on reload)");
		return NULL;
	}
	jobs = calloc(pool->n ? pool->n : 1, sizeof(*jobs));
	if (!jobs)
		goto out_nomem;
	for (i = 0; i < pool->n; i++) {
		j = ctl_fail_job_new(req, false);
		if (!j)
			goto out_nomem;
		jobs[i] = &j->job;
	}
	late = worker_pool_run(pool, jobs, WORKER_ANSWER_MS);
	for (i = 0; i < pool->n; i++) {
		if (!jobs[i] || jobs[i]->state != WORKER_JOB_RAN)
			continue;
		j = fail_job_of(jobs[i]);
		if (j->matches && !matches)
			owner = i;
		matches += j->matches;
	}
	if (matches > 1) {
		snprintf(msg, sizeof(msg), "%u active link groups have ids starting with %s: "
			 "give more digits", matches, req->lgr);
		*err = strdup(msg);
		goto out_free;
	}
	/* A worker that did not answer may hold the group, or a second one
	 * with the same prefix. */
	if (late) {
		late_workers(who, sizeof(who), jobs, pool->n);
		snprintf(msg, sizeof(msg), "%s did not answer within %d ms: cannot tell which "
			 "worker holds link group %s; nothing was done", who, WORKER_ANSWER_MS,
			 req->lgr);
		*err = strdup(msg);
		goto out_free;
	}
	if (matches == 0) {
		snprintf(msg, sizeof(msg), "no active link group with an id starting with %s "
			 "(smcproxyctl links lists them)", req->lgr);
		*err = strdup(msg);
		goto out_free;
	}
	for (i = 0; i < pool->n; i++) {
		if (jobs[i])
			ctl_fail_job_release(jobs[i]);
		jobs[i] = NULL;
	}

	j = ctl_fail_job_new(req, true);
	if (!j)
		goto out_nomem;
	jobs[owner] = &j->job;
	worker_pool_run(pool, jobs, WORKER_ANSWER_MS);
	one = jobs[owner];
	if (!one || one->state != WORKER_JOB_RAN) {
		/* A late job still runs when the worker gets to it. */
		snprintf(msg, sizeof(msg), "worker %u did not answer within %d ms; link %u of "
			 "link group %s may still be failed when it does", owner,
			 WORKER_ANSWER_MS, req->link, req->lgr);
		*err = strdup(msg);
		goto out_free;
	}
	j = fail_job_of(one);
	if (j->rc < 0) {
		*err = strdup(j->msg[0] ? j->msg : "fail-link failed");
		goto out_free;
	}
	body = json_pack("{s:{s:s, s:i, s:s, s:i}}", "debug",
			 "op", ctl_debug_op_name(req->op),
			 "worker", (int)owner,
			 "lgr", j->id,
			 "link", (int)req->link);
	if (!body)
		goto out_nomem;
out_free:
	for (i = 0; i < pool->n; i++)
		if (jobs[i])
			ctl_fail_job_release(jobs[i]);
	free(jobs);
	return body;

out_nomem:
	*err = strdup("out of memory");
	goto out_free;
}

json_t *smcd_stats_reply(struct smcd *d)
{
	return json_pack("{s:i, s:b, s:o}", "v", CTL_PROTO_VERSION, "ok", 1,
			 "stats", stats_body(d));
}

json_t *smcd_ctl_handle(struct ctl_server *s, const struct ctl_request *req, char **err)
{
	struct smcd *d = s->data;
	char *applied = NULL, *restart = NULL;
	json_t *body;

	switch (req->cmd) {
	case CTL_CMD_STATS:
		return json_pack("{s:o}", "stats", stats_body(d));
	case CTL_CMD_FLOWS:
		return ctl_workers_list(d, "flows", flows_json, FLOWS_LIST_MAX, err);
	case CTL_CMD_RELOAD:
		if (smcd_reload(d, &applied, &restart, err) < 0)
			return NULL;
		body = json_pack("{s:{s:s, s:s, s:s}}", "reload",
				 "source", d->cfg->source,
				 "applied", applied ? applied : "",
				 "restart_needed", restart ? restart : "");
		free(applied);
		free(restart);
		return body;
	case CTL_CMD_LINKS:
		return ctl_workers_list(d, "links", ctl_links_json, 0, err);
	case CTL_CMD_PEERS:
		return ctl_workers_list(d, "peers", ctl_peers_json, 0, err);
	case CTL_CMD_DEBUG:
		if (req->op == CTL_DEBUG_FAIL_LINK)
			return debug_fail_link(d, req, err);
		break;
	case CTL_CMD__MAX:
		break;
	}
	*err = strdup("unknown command");
	return NULL;
}
