/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for smcproxyctl's side of the stats/control protocol: a
 * reply line from a daemon that may be confused (another version, a bug)
 * or hostile (anyone who can bind the socket path). smcproxyctl parses it
 * with ctl_reply_parse() and, when it is accepted, renders it with
 * ctl_render() in the format the user asked for; the target does the same
 * for every command and every format, so the renderers see every shape the
 * envelope check lets through: wrong member types, huge and negative
 * numbers, thousands of members, odd keys.
 *
 * Checked beyond "does not crash": the result is 0 or a documented error
 * with a terminated message, and ctl_render() returns 0 or a documented
 * error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_proto.h"
#include "ctl/ctl_render.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rendered text goes nowhere: opened once, it costs no allocation per
 * input, and every byte still goes through stdio. */
static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sink = fopen("/dev/null", "w");
	if (!sink)
		abort();
	return 0;
}

static void check_render(const json_t *reply)
{
	static const enum ctl_format fmts[] = {
		CTL_FORMAT_TABLE, CTL_FORMAT_JSON, CTL_FORMAT_PROMETHEUS,
	};
	char err[CTL_ERRMSG_MAX];
	int rc;

	/* smcproxyctl prints the error text of an error reply as it is. */
	if (!ctl_reply_ok(reply)) {
		if (!ctl_reply_error(reply))
			abort();
		return;
	}
	for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
		for (int cmd = 0; cmd < CTL_CMD__MAX; cmd++) {
			if (!ctl_render_supported(fmts[f], cmd))
				continue;
			err[0] = '\0';
			rc = ctl_render(sink, fmts[f], cmd, reply, err, sizeof(err));
			if (rc != 0 && rc != -EBADMSG && rc != -ENOMEM)
				abort();
			if (rc != 0 && strnlen(err, sizeof(err)) == sizeof(err))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CTL_ERRMSG_MAX];
	json_t *reply = NULL;
	char *copy;
	int rc;

	/* Real replies reach megabytes (10000 flows), but nothing in the
	 * parser or the renderers needs that much to go wrong. */
	if (size > 1024 * 1024)
		return 0;
	/* Exactly size bytes: ASan catches a read past an unterminated line. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);

	memset(err, 0x5a, sizeof(err));
	rc = ctl_reply_parse(copy, size, &reply, err, sizeof(err));
	if (rc == 0) {
		if (!reply)
			abort();
		check_render(reply);
		json_decref(reply);
	} else if (reply || (rc != -EMSGSIZE && rc != -EBADMSG &&
			     rc != -EPROTONOSUPPORT) ||
		   strnlen(err, sizeof(err)) == sizeof(err)) {
		abort();
	}
	free(copy);
	return 0;
}
