/* SPDX-License-Identifier: MIT */
/*
 * The entry point of smcproxyctl's renderers (see ctl_render.h): checks
 * that the reply carries the payload of its command and hands it to the
 * renderer of the format asked for, ctl_render_text.c (tables, built with
 * ctl_table.c) or ctl_render_prom.c; JSON is the reply itself, indented.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "ctl_render.h"
#include "ctl_render_int.h"

__attribute__((format(printf, 4, 5)))
static int bad_reply(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

bool ctl_stats_key_in_header(const char *key)
{
	static const char *const keys[] = {
		"version", "pid", "uptime_ms", "workers", "reloads",
		"flows", "fallback", "per_worker", "cq", "workers_not_answering",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

bool ctl_render_supported(enum ctl_format fmt, enum ctl_cmd cmd)
{
	if ((unsigned)cmd >= CTL_CMD__MAX)
		return false;
	return !(fmt == CTL_FORMAT_PROMETHEUS &&
		 (cmd == CTL_CMD_RELOAD || cmd == CTL_CMD_DEBUG));
}

int ctl_render(FILE *out, enum ctl_format fmt, enum ctl_cmd cmd,
	       const json_t *reply, char *err, size_t errlen)
{
	const char *name = ctl_cmd_name(cmd);
	const json_t *body;
	int rc;

	if (!ctl_render_supported(fmt, cmd))
		return bad_reply(err, errlen, -ENOTSUP,
				 "--prometheus does not apply to %s", name ?: "?");
	if (fmt == CTL_FORMAT_JSON) {
		if (json_dumpf(reply, out, JSON_INDENT(2)) < 0)
			return bad_reply(err, errlen, -EIO, "cannot write JSON");
		fputc('\n', out);
		return 0;
	}

	body = ctl_reply_body(reply, cmd);
	switch (cmd) {
	case CTL_CMD_STATS:
	case CTL_CMD_RELOAD:
	case CTL_CMD_DEBUG:
		if (!json_is_object(body))
			return bad_reply(err, errlen, -EBADMSG,
					 "malformed reply: no \"%s\" object", name);
		break;
	default:
		if (!json_is_array(body))
			return bad_reply(err, errlen, -EBADMSG,
					 "malformed reply: no \"%s\" array", name);
		break;
	}

	if (fmt == CTL_FORMAT_PROMETHEUS)
		rc = ctl_render_prom(out, cmd, reply, body);
	else
		rc = ctl_render_text(out, cmd, reply, body);
	if (rc < 0)
		return bad_reply(err, errlen, rc, "rendering %s: %s", name,
				 strerror(-rc));
	return 0;
}
