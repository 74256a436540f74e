/* SPDX-License-Identifier: MIT */
/*
 * What the renderers of smcproxyctl share behind ctl_render.h: one
 * function per format, called by ctl_render() once the reply's payload has
 * the shape of its command, and the little they both need to know of the
 * stats reply. Not for use outside ctl_render*.c.
 */
#ifndef SMCPROXY_CTL_RENDER_INT_H
#define SMCPROXY_CTL_RENDER_INT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "ctl_proto.h"

/*
 * Render body, the payload of an ok reply of cmd (an object for stats,
 * reload and debug, an array for the others, as ctl_render() checked), in
 * human tables or in the Prometheus text format. reply is the whole reply,
 * for its members beside the payload ("truncated", "workers_not_answering").
 * Return 0, -ENOMEM, or -ENOTSUP for a command the format has no form for.
 */
int ctl_render_text(FILE *out, enum ctl_cmd cmd, const json_t *reply,
		    const json_t *body);
int ctl_render_prom(FILE *out, enum ctl_cmd cmd, const json_t *reply,
		    const json_t *body);

/* Whether key is a member of the stats reply that both formats show in a
 * form of their own (the header, the flows, per-worker and CQ tables),
 * rather than as one more counter. */
bool ctl_stats_key_in_header(const char *key);

/* The integer member key of obj, 0 when missing or not an integer. */
static inline json_int_t ctl_json_int(const json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

#endif
