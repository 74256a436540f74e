/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the daemon's side of the stats/control protocol:
 * ctl_request_parse() sees whatever a local client writes on the socket, up
 * to the newline the server splits on. Beyond "does not crash", the target
 * checks the promises the server relies on:
 *
 *  - the result is a command or one of the four documented errors;
 *  - a rejection comes with a non-empty message that ctl_reply_error_line()
 *    can turn into a reply (the server drops a client without any answer
 *    when it cannot) and that survives the round trip through
 *    ctl_reply_parse() unchanged;
 *  - an accepted request round-trips through ctl_request_encode() (and,
 *    without arguments, ctl_request_line()): the same command with the
 *    same arguments (debug fail-link: op, lgr prefix, link index).
 *
 * The input goes in as one line, as the server would pass it, and, when it
 * holds newlines, line by line as the server splits it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks the error reply built from msg: one line, and it parses back to
 * an error reply carrying msg itself. */
static void check_error_reply(const char *msg)
{
	char err[CTL_ERRMSG_MAX];
	json_t *reply = NULL;
	const char *back;
	size_t len;
	char *line;

	line = ctl_reply_error_line(msg, &len);
	if (!line)
		abort();	/* the client would get no answer at all */
	if (len != strlen(line) || len == 0 || line[len - 1] != '\n' ||
	    memchr(line, '\n', len - 1))
		abort();
	if (ctl_reply_parse(line, len, &reply, err, sizeof(err)) != 0)
		abort();
	back = ctl_reply_error(reply);
	if (ctl_reply_ok(reply) || !back || strcmp(back, msg) != 0)
		abort();
	json_decref(reply);
	free(line);
}

/* An accepted request: encoded again, it decodes to the same. */
static void check_round_trip(const struct ctl_request *r)
{
	struct ctl_request back;
	char err[CTL_ERRMSG_MAX];
	size_t rlen;
	char *req;

	req = ctl_request_encode(r, &rlen);
	if (!req || ctl_request_decode(req, rlen, &back, err, sizeof(err)) != (int)r->cmd ||
	    back.cmd != r->cmd)
		abort();
	if (r->cmd == CTL_CMD_DEBUG &&
	    (back.op != r->op || strcmp(back.lgr, r->lgr) != 0 || back.link != r->link))
		abort();
	free(req);
	req = ctl_request_line(r->cmd, &rlen);
	if ((r->cmd == CTL_CMD_DEBUG) != !req)
		abort();
	if (req && ctl_request_parse(req, rlen, err, sizeof(err)) != (int)r->cmd)
		abort();
	free(req);
}

static void check_one(const char *line, size_t len)
{
	struct ctl_request r;
	char err[CTL_ERRMSG_MAX];
	size_t errlen;
	int rc;

	/* A canary past the terminator the parser must write. */
	memset(err, 0x5a, sizeof(err));
	rc = ctl_request_decode(line, len, &r, err, sizeof(err));
	if (rc != ctl_request_parse(line, len, NULL, 0))
		abort();
	if (rc >= 0) {
		if (rc >= CTL_CMD__MAX || (int)r.cmd != rc)
			abort();
		if (r.cmd == CTL_CMD_DEBUG &&
		    (r.op >= CTL_DEBUG__MAX || r.link > CTL_LINK_INDEX_MAX ||
		     strnlen(r.lgr, sizeof(r.lgr)) == sizeof(r.lgr) || !r.lgr[0]))
			abort();
		check_round_trip(&r);
		return;
	}
	if (rc != -EMSGSIZE && rc != -EBADMSG && rc != -EPROTONOSUPPORT &&
	    rc != -EINVAL)
		abort();
	errlen = strnlen(err, sizeof(err));
	if (errlen == 0 || errlen == sizeof(err))
		abort();	/* empty, or not terminated inside the buffer */
	check_error_reply(err);

	/* A tiny buffer is truncated, never overflowed. */
	memset(err, 0x5a, sizeof(err));
	if (ctl_request_parse(line, len, err, 8) != rc || strnlen(err, 8) == 8 ||
	    err[8] != 0x5a)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nl;
	size_t off = 0;
	char *copy;

	/* Past the limit only the length is looked at; bigger inputs only
	 * slow the fuzzer down. */
	if (size > CTL_REQUEST_MAX + 16)
		return 0;
	/* A copy of exactly size bytes, so that ASan catches any read past
	 * the end of an unterminated line. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, text, size);
	check_one(copy, size);

	/* As the server frames it: each line with its "\n". */
	while (off < size && (nl = memchr(copy + off, '\n', size - off))) {
		check_one(copy + off, (size_t)(nl - (copy + off)) + 1);
		off = (size_t)(nl - copy) + 1;
	}
	free(copy);
	return 0;
}
