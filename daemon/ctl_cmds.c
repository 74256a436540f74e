/* SPDX-License-Identifier: MIT */
/* What the control socket answers: the JSON bodies of ctl_proto replies. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "flow-t.h"
#include "smcd.h"

#define FLOWS_LIST_MAX 10000

static json_t *per_mode(const uint64_t *v)
{
	json_t *o = json_object();
	int m;

	for (m = 0; m < FLOW_MODE__MAX; m++)
		json_object_set_new(o, flow_mode_name(m), json_integer(v[m]));
	return o;
}

static json_t *stats_body(struct smcd *d)
{
	const struct proxy_stats *st = &d->proxy.stats;
	json_t *fb = json_object();
	int r;

	for (r = FB_NONE + 1; r < FB__MAX; r++)
		json_object_set_new(fb, fallback_reason_name(r), json_integer(st->fallback[r]));
	return json_pack("{s:s, s:i, s:I, s:i, s:I, s:{s:I, s:o, s:o}, s:o,"
			 " s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "version", SMCPROXY_VERSION,
			 "pid", (int)getpid(),
			 "uptime_ms", (json_int_t)(uv_now(&d->loop) - d->start_ms),
			 "workers", 1,
			 "reloads", (json_int_t)d->reloads,
			 "flows",
			   "accepted", (json_int_t)st->flows_accepted,
			   "active", per_mode(st->flows_active),
			   "closed", per_mode(st->flows_closed),
			 "fallback", fb,
			 "bytes", "in", (json_int_t)st->bytes_in, "out", (json_int_t)st->bytes_out,
			 "connect_failures", (json_int_t)st->connect_failures,
			 "connect_timeouts", (json_int_t)st->connect_timeouts,
			 "resets", (json_int_t)st->resets,
			 "accept_pauses", (json_int_t)st->accept_pauses,
			 "loops_refused", (json_int_t)st->loops_refused,
			 "idle_timeouts", (json_int_t)st->idle_timeouts);
}

static json_t *flow_json(const struct flow *f, uint64_t now)
{
	char client[ADDR_STRLEN], dest[ADDR_STRLEN];

	return json_pack("{s:I, s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}",
			 "id", (json_int_t)f->id,
			 "worker", 0,
			 "mode", flow_mode_name(f->mode),
			 "reason", fallback_reason_name(f->reason),
			 "state", flow_state_name(f),
			 "client", addr_format((const struct sockaddr *)&f->client, client, sizeof(client)),
			 "dest", addr_format((const struct sockaddr *)&f->dest, dest, sizeof(dest)),
			 "bytes_in", (json_int_t)f->relay.dir[RELAY_CLIENT].bytes,
			 "bytes_out", (json_int_t)f->relay.dir[RELAY_SERVER].bytes,
			 "age_ms", (json_int_t)(now - f->created_ms));
}

static json_t *flows_members(struct smcd *d)
{
	json_t *arr = json_array();
	struct list_head *pos;
	uint64_t now = uv_now(&d->loop);
	size_t n = 0;
	bool truncated = false;

	list_for_each(pos, &d->proxy.flows) {
		if (n++ == FLOWS_LIST_MAX) {
			truncated = true;
			break;
		}
		json_array_append_new(arr, flow_json(list_entry(pos, struct flow, node), now));
	}
	return json_pack("{s:o, s:b}", "flows", arr, "truncated", truncated);
}

json_t *smcd_ctl_handle(struct ctl_server *s, enum ctl_cmd cmd, char **err)
{
	struct smcd *d = s->data;
	char *applied = NULL, *restart = NULL;
	json_t *body;

	switch (cmd) {
	case CTL_CMD_STATS:
		return json_pack("{s:o}", "stats", stats_body(d));
	case CTL_CMD_FLOWS:
		return flows_members(d);
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
		return json_pack("{s:[]}", "links");	/* no link groups yet */
	case CTL_CMD_PEERS:
		return json_pack("{s:[]}", "peers");
	case CTL_CMD__MAX:
		break;
	}
	*err = strdup("unknown command");
	return NULL;
}
