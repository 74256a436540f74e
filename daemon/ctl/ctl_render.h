/* SPDX-License-Identifier: MIT */
/*
 * Renderers of smcproxyctl: turn a reply accepted by ctl_reply_parse() into
 * human tables, pretty JSON, or the Prometheus text exposition format
 * (version 0.0.4). They write to a FILE so that the unit tests can render
 * into memory (open_memstream); they do not log.
 *
 * This is the whole interface. Behind it: ctl_render.c checks a reply and
 * picks the format, ctl_render_text.c and ctl_render_prom.c render each
 * command, ctl_table.c is the table engine and ctl_fmt.c formats values.
 *
 * Fields the renderers do not know (a counter added by a newer daemon) are
 * still shown: as extra table rows, and in Prometheus as untyped samples
 * named smcproxy_<field>.
 *
 * The daemon is not trusted to send sane values (it may be another version,
 * or whoever bound the socket path): in tables, control characters of its
 * strings and keys are shown as '?', a column is padded to at most 64
 * characters, list entries with no fields or that are not objects are still
 * accounted for, and sums of counters are exact (128-bit). In Prometheus
 * text, label values and HELP texts are escaped.
 */
#ifndef SMCPROXY_CTL_RENDER_H
#define SMCPROXY_CTL_RENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "ctl_fmt.h"	/* ctl_fmt_count(), ctl_fmt_duration(): the tests use them */
#include "ctl_proto.h"

enum ctl_format {
	CTL_FORMAT_TABLE,
	CTL_FORMAT_JSON,
	CTL_FORMAT_PROMETHEUS,
};

/* Whether fmt can render the reply of cmd. Prometheus has no sensible
 * form for reload and debug; smcproxyctl checks this before it sends
 * anything. */
bool ctl_render_supported(enum ctl_format fmt, enum ctl_cmd cmd);

/*
 * Renders an ok reply of cmd in fmt. Returns 0, -ENOTSUP when
 * ctl_render_supported() says no, or -EBADMSG when the reply lacks the
 * payload of cmd or it has the wrong shape (err says what). Error replies
 * are not rendered here: the caller prints ctl_reply_error() as it is.
 * The JSON format prints the whole reply object, indented.
 */
int ctl_render(FILE *out, enum ctl_format fmt, enum ctl_cmd cmd,
	       const json_t *reply, char *err, size_t errlen);

#endif
