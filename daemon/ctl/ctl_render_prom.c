/* SPDX-License-Identifier: MIT */
/*
 * smcproxyctl --prometheus: the replies of stats, flows, links and peers in
 * the Prometheus text exposition format, version 0.0.4 (see ctl_render.h).
 * Members of the stats reply it does not know come out as untyped samples
 * named smcproxy_<member>; label values and HELP texts are escaped, as the
 * daemon's strings are not trusted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_render_int.h"

/* Label values escape backslash, double quote and newline. */
static void prom_label_value(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '"')
			fputs("\\\"", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

/* Metric and label names: [a-zA-Z_:][a-zA-Z0-9_:]*; anything else
 * becomes '_' (our keys are already snake_case). */
static void prom_name(FILE *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  c == '_' || c == ':' || (p != s && c >= '0' && c <= '9');

		fputc(ok ? c : '_', out);
	}
}

/* HELP text escapes backslash and newline: a key with a newline must not
 * start a line of its own (a forged sample). */
static void prom_help_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

static void prom_family(FILE *out, const char *name, const char *type,
			const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_number(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		fprintf(out, "%.17g", json_real_value(v));
	else if (json_is_true(v))
		fputs("1", out);
	else
		fputs("0", out);
}

/* One family whose samples are the numeric members of obj, labelled
 * label="<member name>". */
static void prom_labelled(FILE *out, const char *name, const char *type,
			  const char *help, const char *label, const json_t *obj)
{
	const char *key;
	const json_t *v;

	if (!json_is_object(obj))
		return;
	prom_family(out, name, type, help);
	json_object_foreach((json_t *)obj, key, v) {
		if (!json_is_number(v))
			continue;
		fprintf(out, "%s{%s=\"", name, label);
		prom_label_value(out, key);
		fputs("\"} ", out);
		prom_number(out, v);
		fputc('\n', out);
	}
}

static void prom_scalar(FILE *out, const char *name, const char *type,
			const char *help, const json_t *v)
{
	prom_family(out, name, type, help);
	fprintf(out, "%s ", name);
	prom_number(out, v);
	fputc('\n', out);
}

/* Fields of the stats reply with a known meaning. Members not listed here
 * (and not handled specially below) come out untyped. */
static const struct {
	const char *key, *name, *type, *help;
} prom_stats_scalars[] = {
	{ "workers", "smcproxy_workers", "gauge",
	  "Worker threads (event loops) of smcproxyd." },
	{ "reloads", "smcproxy_reloads_total", "counter",
	  "Configuration reloads applied since start." },
	{ "connect_failures", "smcproxy_connect_failures_total", "counter",
	  "Outbound connects that were refused or found no route." },
	{ "connect_timeouts", "smcproxy_connect_timeouts_total", "counter",
	  "Outbound connects abandoned after fallback.connect_timeout." },
	{ "connect_no_port", "smcproxy_connect_no_port_total", "counter",
	  "Outbound connects that found no free source port (ip_local_port_range, TIME_WAIT)." },
	{ "connect_client_addr", "smcproxy_connect_client_addr_total", "counter",
	  "Flows peers opened that reached the server from the client's own address." },
	{ "connect_host_addr", "smcproxy_connect_host_addr_total", "counter",
	  "Flows peers opened that reached the server from this host's address." },
	{ "connect_port_taken", "smcproxy_connect_port_taken_total", "counter",
	  "Of those, connected from a port the kernel chose: the client's was held." },
	{ "resets", "smcproxy_resets_total", "counter",
	  "Flows ended by a reset on either leg." },
	{ "accept_pauses", "smcproxy_accept_pauses_total", "counter",
	  "Times accepting paused for lack of file descriptors or buffers." },
	{ "loops_refused", "smcproxy_loops_refused_total", "counter",
	  "Connections closed because they were not redirected or aimed at the daemon itself." },
	{ "idle_timeouts", "smcproxy_idle_timeouts_total", "counter",
	  "Flows closed by relay.idle_timeout." },
	{ "cq_age_ms", "smcproxy_cq_snapshot_age_milliseconds", "gauge",
	  "Age of the oldest worker's snapshot of its CQ counters (rdma): they are not waited for." },
};

/* The per_worker counters, labelled worker="<index>". */
static void prom_per_worker(FILE *out, const json_t *workers)
{
	static const struct {
		const char *key, *name, *type, *help, *extra;
	} fam[] = {
		{ "flows_active", "smcproxy_worker_flows_active", "gauge",
		  "Flows open now, by worker thread.", NULL },
		{ "flows_accepted", "smcproxy_worker_flows_accepted_total", "counter",
		  "Redirected connections accepted, by worker thread.", NULL },
		{ "bytes_in", "smcproxy_worker_bytes_total", "counter",
		  "Bytes relayed by worker thread: in = from clients toward servers, out = from servers back to clients.",
		  "in" },
		{ "bytes_out", "smcproxy_worker_bytes_total", NULL, NULL, "out" },
		{ "heartbeat_gap_max_ms", "smcproxy_worker_heartbeat_gap_max_milliseconds", "gauge",
		  "The longest time between two heartbeats of the worker's event loop since start (a stall).",
		  NULL },
	};
	const json_t *w, *v, *idx;
	size_t f, i;

	if (!json_is_array(workers) || !json_array_size(workers))
		return;
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		if (fam[f].type)
			prom_family(out, fam[f].name, fam[f].type, fam[f].help);
		json_array_foreach(workers, i, w) {
			v = json_object_get(w, fam[f].key);
			idx = json_object_get(w, "worker");
			if (!json_is_number(v))
				continue;
			fprintf(out, "%s{worker=\"%" JSON_INTEGER_FORMAT "\"", fam[f].name,
				json_is_integer(idx) ? json_integer_value(idx) : (json_int_t)i);
			if (fam[f].extra)
				fprintf(out, ",direction=\"%s\"", fam[f].extra);
			fputs("} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
}

/* A label value from the daemon's JSON: an integer as its digits, a
 * string escaped, anything else as "?". */
static void prom_label_json(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_string(v))
		prom_label_value(out, json_string_value(v));
	else
		fputc('?', out);
}

/* The CQ pools' counters, labelled worker="<index>",cq="<index>". */
static void prom_cq(FILE *out, const json_t *cqs)
{
	static const struct {
		const char *key, *name, *type, *help;
	} fam[] = {
		{ "polls", "smcproxy_cq_polls_total", "counter",
		  "Polls of each completion queue (ibv_poll_cq calls), by worker and CQ." },
		{ "completions", "smcproxy_cq_completions_total", "counter",
		  "Work completions taken from each completion queue." },
		{ "empty_polls", "smcproxy_cq_empty_polls_total", "counter",
		  "Polls of each completion queue that found nothing." },
		{ "rearms", "smcproxy_cq_rearms_total", "counter",
		  "Times each completion queue was re-armed for an event." },
		{ "rearms_solicited", "smcproxy_cq_rearms_solicited_total", "counter",
		  "Of those re-arms, the ones for the peers' (solicited) messages only." },
		{ "events", "smcproxy_cq_events_total", "counter",
		  "Completion-channel events that woke the worker, by CQ." },
		{ "rearm_failures", "smcproxy_cq_rearm_failures_total", "counter",
		  "Re-arms of each completion queue that failed (polled at each wake-up since)." },
		{ "links", "smcproxy_cq_links", "gauge",
		  "Links whose completions go to each completion queue." },
	};
	const json_t *e, *v;
	size_t f, i;

	if (!json_is_array(cqs) || !json_array_size(cqs))
		return;
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		prom_family(out, fam[f].name, fam[f].type, fam[f].help);
		json_array_foreach(cqs, i, e) {
			v = json_object_get(e, fam[f].key);
			if (!json_is_number(v))
				continue;
			fprintf(out, "%s{worker=\"", fam[f].name);
			prom_label_json(out, json_object_get(e, "worker"));
			fputs("\",cq=\"", out);
			prom_label_json(out, json_object_get(e, "cq"));
			fputs("\"} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
}

/*
 * links: how many, how many are down, and for each rdma link its send
 * queue's fill (labelled by worker, group, link and device: a bounded set,
 * as links are few). Counters per link are left out: a group's id changes
 * whenever it is set up again, and every change would start new series.
 */
static int render_links_prometheus(FILE *out, const json_t *links)
{
	static const struct {
		const char *key, *name, *help;
	} fam[] = {
		{ "wr_in_flight", "smcproxy_link_wr_in_flight",
		  "Send work requests posted on an rdma link and not completed yet." },
		{ "sq_depth", "smcproxy_link_sq_depth",
		  "Send work requests an rdma link's queue pair holds (rdma.sq_depth)." },
	};
	const json_t *e, *v, *state;
	size_t i, f, down = 0;

	prom_family(out, "smcproxy_links", "gauge", "Links of all link groups.");
	fprintf(out, "smcproxy_links %zu\n", json_array_size(links));
	json_array_foreach(links, i, e) {
		state = json_object_get(e, "state");
		down += json_is_string(state) && strcmp(json_string_value(state), "active") != 0;
	}
	prom_family(out, "smcproxy_links_down", "gauge",
		    "Links of active link groups that are not active (failed, not replaced yet).");
	fprintf(out, "smcproxy_links_down %zu\n", down);
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		bool declared = false;

		json_array_foreach(links, i, e) {
			v = json_object_get(e, fam[f].key);
			if (!json_is_number(v))
				continue;
			if (!declared) {
				prom_family(out, fam[f].name, "gauge", fam[f].help);
				declared = true;
			}
			fprintf(out, "%s{worker=\"", fam[f].name);
			prom_label_json(out, json_object_get(e, "worker"));
			fputs("\",lgr=\"", out);
			prom_label_json(out, json_object_get(e, "lgr"));
			fputs("\",link=\"", out);
			prom_label_json(out, json_object_get(e, "link"));
			fputs("\",device=\"", out);
			prom_label_json(out, json_object_get(e, "device"));
			fputs("\"} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
	return 0;
}

/* rings.by_size: smcproxy_rings{size="16KiB",state="used"|"free"}. */
static void prom_rings_by_size(FILE *out, const json_t *by_size)
{
	static const char *const states[] = { "used", "free" };
	const json_t *v, *n;
	const char *key;
	size_t i;

	if (!json_is_object(by_size) || !json_object_size(by_size))
		return;
	prom_family(out, "smcproxy_rings", "gauge",
		    "Receive rings by size class: held by flows (used) or free and kept for the next flow.");
	json_object_foreach((json_t *)by_size, key, v) {
		for (i = 0; i < 2; i++) {
			n = json_object_get(v, states[i]);
			if (!json_is_number(n))
				continue;
			fputs("smcproxy_rings{size=\"", out);
			prom_label_value(out, key);
			fprintf(out, "\",state=\"%s\"} ", states[i]);
			prom_number(out, n);
			fputc('\n', out);
		}
	}
}

/* intercept.bypass: on as a gauge, what the programs and the workers
 * counted as counters. */
static void prom_bypass(FILE *out, const json_t *b)
{
	static const struct {
		const char *key, *name, *help;
	} counters[] = {
		{ "flows", "smcproxy_intercept_bypass_flows_total",
		  "Accepted flows whose socket was joined in the bypass of the local hop." },
		{ "joined", "smcproxy_intercept_bypass_joined_total",
		  "Flows whose two ends the bypass programs joined." },
		{ "late", "smcproxy_intercept_bypass_late_total",
		  "Flows whose app wrote before the daemon's end was in: that way over TCP." },
		{ "credit_out", "smcproxy_intercept_bypass_credit_out_total",
		  "Ways of bypassed flows that ran out of credit and went over TCP." },
		{ "peer_gone", "smcproxy_intercept_bypass_peer_gone_total",
		  "Writes of bypassed flows whose peer socket had left: that way over TCP." },
		{ "msgs", "smcproxy_intercept_bypass_msgs_total",
		  "Writes redirected by the bypass." },
		{ "bytes", "smcproxy_intercept_bypass_bytes_total",
		  "Bytes redirected by the bypass." },
	};
	const json_t *on = json_object_get(b, "on");

	if (!json_is_object(b))
		return;
	if (json_is_boolean(on)) {
		prom_family(out, "smcproxy_intercept_bypass_on", "gauge",
			    "1 while the bypass of the local hop runs (intercept.bypass and its "
			    "self-test passed).");
		fprintf(out, "smcproxy_intercept_bypass_on %d\n", json_is_true(on));
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		const json_t *v = json_object_get(b, counters[i].key);

		if (json_is_number(v))
			prom_scalar(out, counters[i].name, "counter", counters[i].help, v);
	}
}

/*
 * intercept: the mode (and, in ebpf mode, the cgroup) as an info gauge,
 * the programs attached as a gauge, and what the programs counted as
 * counters. A member this list does not know comes out untyped, named
 * smcproxy_intercept_<member>, as the stats reply's own unknown members do.
 */
static void prom_intercept(FILE *out, const json_t *ic)
{
	static const struct {
		const char *key, *name, *help;
	} counters[] = {
		{ "redirected", "smcproxy_intercept_redirected_total",
		  "TCP connects the eBPF connect hooks sent to the daemon's listener." },
		{ "established", "smcproxy_intercept_established_total",
		  "Redirected connects that reached the listener (their original destination recorded)." },
		{ "self_skipped", "smcproxy_intercept_self_skipped_total",
		  "Connects to intercepted destinations left alone: the daemon's own." },
		{ "no_listener", "smcproxy_intercept_no_listener_total",
		  "Connects left alone: the daemon has no listener of their address family." },
		{ "map_full", "smcproxy_intercept_map_full_total",
		  "Connects left alone: their original destination could not be recorded." },
	};
	const json_t *mode = json_object_get(ic, "mode");
	const json_t *cgroup = json_object_get(ic, "cgroup");
	const json_t *attached = json_object_get(ic, "attached");
	const json_t *v;
	const char *key;
	size_t i;

	if (!json_is_object(ic))
		return;
	if (json_is_string(mode)) {
		prom_family(out, "smcproxy_intercept_info", "gauge",
			    "How connections reach the daemon (intercept.mode) and, in ebpf mode, the "
			    "cgroup the programs are attached to; the value is always 1.");
		fputs("smcproxy_intercept_info{mode=\"", out);
		prom_label_value(out, json_string_value(mode));
		if (json_is_string(cgroup)) {
			fputs("\",cgroup=\"", out);
			prom_label_value(out, json_string_value(cgroup));
		}
		fputs("\"} 1\n", out);
	}
	if (json_is_array(attached)) {
		prom_family(out, "smcproxy_intercept_programs_attached", "gauge",
			    "eBPF programs attached to the intercept cgroup (0 once detached).");
		fprintf(out, "smcproxy_intercept_programs_attached %zu\n", json_array_size(attached));
	}
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		v = json_object_get(ic, counters[i].key);
		if (json_is_number(v))
			prom_scalar(out, counters[i].name, "counter", counters[i].help, v);
	}
	json_object_foreach((json_t *)ic, key, v) {
		bool known = false;

		for (i = 0; !known && i < sizeof(counters) / sizeof(counters[0]); i++)
			known = !strcmp(key, counters[i].key);
		if (known || !json_is_number(v))
			continue;
		fputs("# HELP smcproxy_intercept_", out);
		prom_name(out, key);
		fputs(" smcproxyd stats field intercept.", out);
		prom_help_text(out, key);
		fputs(".\n# TYPE smcproxy_intercept_", out);
		prom_name(out, key);
		fputs(" untyped\nsmcproxy_intercept_", out);
		prom_name(out, key);
		fputc(' ', out);
		prom_number(out, v);
		fputc('\n', out);
	}
	prom_bypass(out, json_object_get(ic, "bypass"));
}

static int render_stats_prometheus(FILE *out, const json_t *st)
{
	const json_t *flows = json_object_get(st, "flows");
	const json_t *v, *sub;
	const char *key, *subkey;
	size_t i;

	v = json_object_get(st, "version");
	if (json_is_string(v)) {
		prom_family(out, "smcproxy_info", "gauge",
			    "Version of the running smcproxyd; the value is always 1.");
		fputs("smcproxy_info{version=\"", out);
		prom_label_value(out, json_string_value(v));
		fputs("\"} 1\n", out);
	}
	v = json_object_get(st, "uptime_ms");
	if (json_is_integer(v)) {
		prom_family(out, "smcproxy_uptime_seconds", "gauge",
			    "Seconds since smcproxyd started.");
		fprintf(out, "smcproxy_uptime_seconds %.3f\n",
			(double)json_integer_value(v) / 1000.0);
	}
	if (json_is_object(flows)) {
		v = json_object_get(flows, "accepted");
		if (json_is_integer(v))
			prom_scalar(out, "smcproxy_flows_accepted_total", "counter",
				    "Redirected connections accepted.", v);
		prom_labelled(out, "smcproxy_flows_active", "gauge",
			      "Flows open now, by how they are carried (tcp, shm, rdma).",
			      "mode", json_object_get(flows, "active"));
		prom_labelled(out, "smcproxy_flows_closed_total", "counter",
			      "Flows closed, by how they were carried (tcp, shm, rdma).",
			      "mode", json_object_get(flows, "closed"));
	}
	prom_labelled(out, "smcproxy_fallbacks_total", "counter",
		      "Flows that fell back to the TCP relay, by reason.",
		      "reason", json_object_get(st, "fallback"));
	prom_labelled(out, "smcproxy_bytes_total", "counter",
		      "Bytes relayed: in = from clients toward servers, out = from servers back to clients.",
		      "direction", json_object_get(st, "bytes"));
	prom_per_worker(out, json_object_get(st, "per_worker"));
	prom_cq(out, json_object_get(st, "cq"));
	prom_rings_by_size(out, json_object_get(json_object_get(st, "rings"), "by_size"));
	prom_intercept(out, json_object_get(st, "intercept"));
	for (i = 0; i < sizeof(prom_stats_scalars) / sizeof(prom_stats_scalars[0]); i++) {
		v = json_object_get(st, prom_stats_scalars[i].key);
		if (json_is_number(v))
			prom_scalar(out, prom_stats_scalars[i].name,
				    prom_stats_scalars[i].type,
				    prom_stats_scalars[i].help, v);
	}

	/* Whatever a newer daemon added: untyped, named after its key. pid is
	 * left out on purpose: it is not a measurement. */
	json_object_foreach((json_t *)st, key, v) {
		bool known = ctl_stats_key_in_header(key) || !strcmp(key, "bytes") ||
			     !strcmp(key, "pid") || !strcmp(key, "intercept");

		for (i = 0; !known && i < sizeof(prom_stats_scalars) /
						sizeof(prom_stats_scalars[0]); i++)
			known = !strcmp(key, prom_stats_scalars[i].key);
		if (known)
			continue;
		if (json_is_number(v)) {
			fputs("# HELP smcproxy_", out);
			prom_name(out, key);
			fputs(" smcproxyd stats field ", out);
			prom_help_text(out, key);
			fputs(".\n# TYPE smcproxy_", out);
			prom_name(out, key);
			fputs(" untyped\nsmcproxy_", out);
			prom_name(out, key);
			fputc(' ', out);
			prom_number(out, v);
			fputc('\n', out);
		} else if (json_is_object(v)) {
			json_object_foreach((json_t *)v, subkey, sub) {
				if (!json_is_number(sub))
					continue;
				fputs("# TYPE smcproxy_", out);
				prom_name(out, key);
				fputc('_', out);
				prom_name(out, subkey);
				fputs(" untyped\nsmcproxy_", out);
				prom_name(out, key);
				fputc('_', out);
				prom_name(out, subkey);
				fputc(' ', out);
				prom_number(out, sub);
				fputc('\n', out);
			}
		}
	}
	return 0;
}

/* flows in Prometheus form: counts by mode and state, never one series per
 * flow (that would be unbounded cardinality). */
static int render_flows_prometheus(FILE *out, const json_t *reply,
				   const json_t *flows)
{
	json_t *count = json_object();
	const json_t *f, *v;
	const char *key;
	size_t i;

	if (!count)
		return -ENOMEM;
	json_array_foreach(flows, i, f) {
		const char *mode = json_string_value(json_object_get(f, "mode"));
		const char *state = json_string_value(json_object_get(f, "state"));
		char *k;

		/* mode and state hold no '\x1f'; it separates them in the key. */
		if (asprintf(&k, "%s\x1f%s", mode ?: "unknown", state ?: "unknown") < 0) {
			json_decref(count);
			return -ENOMEM;
		}
		json_object_set_new(count, k, json_integer(
			ctl_json_int(count, k) + 1));
		free(k);
	}
	prom_family(out, "smcproxy_flows_listed", "gauge",
		    "Flows in the daemon's flow list, by mode and state.");
	json_object_foreach(count, key, v) {
		const char *sep = strchr(key, '\x1f');
		char *mode = strndup(key, (size_t)(sep - key));

		fputs("smcproxy_flows_listed{mode=\"", out);
		prom_label_value(out, mode ?: "");
		fputs("\",state=\"", out);
		prom_label_value(out, sep + 1);
		fprintf(out, "\"} %" JSON_INTEGER_FORMAT "\n", json_integer_value(v));
		free(mode);
	}
	json_decref(count);
	prom_family(out, "smcproxy_flows_listed_truncated", "gauge",
		    "1 when the daemon had more flows than it lists (10000).");
	fprintf(out, "smcproxy_flows_listed_truncated %d\n",
		json_is_true(json_object_get(reply, "truncated")) ? 1 : 0);
	prom_family(out, "smcproxy_flows_listed_workers_not_answering", "gauge",
		    "Workers that did not answer in time: their flows are not in the list.");
	fprintf(out, "smcproxy_flows_listed_workers_not_answering %zu\n",
		json_array_size(json_object_get(reply, "workers_not_answering")));
	return 0;
}

int ctl_render_prom(FILE *out, enum ctl_cmd cmd, const json_t *reply,
		    const json_t *body)
{
	switch (cmd) {
	case CTL_CMD_STATS:
		return render_stats_prometheus(out, body);
	case CTL_CMD_FLOWS:
		return render_flows_prometheus(out, reply, body);
	case CTL_CMD_LINKS:
		return render_links_prometheus(out, body);
	case CTL_CMD_PEERS:
		prom_family(out, "smcproxy_peers", "gauge",
			    "Peers the daemon knows (link groups and negative cache).");
		fprintf(out, "smcproxy_peers %zu\n", json_array_size(body));
		return 0;
	default:
		return -ENOTSUP;
	}
}
