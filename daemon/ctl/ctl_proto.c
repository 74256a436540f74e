/* SPDX-License-Identifier: MIT */
/*
 * Codec of the stats/control socket protocol (see ctl_proto.h). Pure
 * functions over buffers and jansson values: no logging, no I/O, so the
 * daemon and smcproxyctl agree on every byte, and the unit tests can feed
 * it anything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

static const char *const ctl_cmd_names[CTL_CMD__MAX] = {
	[CTL_CMD_STATS]  = "stats",
	[CTL_CMD_FLOWS]  = "flows",
	[CTL_CMD_RELOAD] = "reload",
	[CTL_CMD_LINKS]  = "links",
	[CTL_CMD_PEERS]  = "peers",
	[CTL_CMD_DEBUG]  = "debug",
};

static const char *const ctl_debug_op_names[CTL_DEBUG__MAX] = {
	[CTL_DEBUG_FAIL_LINK] = "fail-link",
};

const char *ctl_cmd_name(enum ctl_cmd cmd)
{
	if ((unsigned)cmd >= CTL_CMD__MAX)
		return NULL;
	return ctl_cmd_names[cmd];
}

int ctl_cmd_from_name(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = 0; i < CTL_CMD__MAX; i++)
		if (strcmp(name, ctl_cmd_names[i]) == 0)
			return i;
	return -EINVAL;
}

const char *ctl_debug_op_name(enum ctl_debug_op op)
{
	if ((unsigned)op >= CTL_DEBUG__MAX)
		return NULL;
	return ctl_debug_op_names[op];
}

int ctl_debug_op_from_name(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = 0; i < CTL_DEBUG__MAX; i++)
		if (strcmp(name, ctl_debug_op_names[i]) == 0)
			return i;
	return -EINVAL;
}

int ctl_lgr_prefix(const char *s, char out[CTL_LGR_PREFIX_MAX + 1])
{
	size_t i;

	out[0] = '\0';
	if (!s)
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (i == CTL_LGR_PREFIX_MAX)
			goto out_invalid;
		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			goto out_invalid;
		out[i] = c;
	}
	if (i == 0)
		return -EINVAL;
	out[i] = '\0';
	return 0;

out_invalid:
	out[0] = '\0';
	return -EINVAL;
}

/*
 * Length of the longest prefix of s, at most max bytes, that does not end
 * inside a UTF-8 sequence. s must be valid UTF-8 (jansson strings are): a
 * cut through a multi-byte character would make the message invalid, and
 * jansson then refuses to put it in the error reply at all.
 */
static size_t ctl_utf8_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return n;
	n = max;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t ctl_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Replaces, in place, every byte of s that is not part of a well-formed
 * UTF-8 sequence by '?'. */
static void ctl_utf8_scrub(char *s)
{
	size_t n = strlen(s), i = 0, k;

	while (i < n) {
		k = ctl_utf8_seq((const unsigned char *)s + i, n - i);
		if (k == 0) {
			s[i] = '?';
			k = 1;
		}
		i += k;
	}
}

/*
 * Formats into err (when there is one) and returns rc, so that every
 * rejection is a single statement. The message is made valid UTF-8: jansson's
 * error texts quote the input near the error byte by byte, so they can end
 * inside a multi-byte character, and so can a message cut at errlen.
 */
__attribute__((format(printf, 4, 5)))
static int ctl_fail(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		ctl_utf8_scrub(err);
	}
	return rc;
}

/* A line's length without its trailing "\n" or "\r\n". */
static size_t ctl_strip_eol(const char *line, size_t len)
{
	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	return len;
}

/* Serialises obj (reference stolen) as one compact line ending in "\n". */
static char *ctl_line_from(json_t *obj, size_t *len)
{
	char *text, *line;
	size_t n;

	if (!obj)
		return NULL;
	text = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (!text)
		return NULL;
	n = strlen(text);
	line = realloc(text, n + 2);
	if (!line) {
		free(text);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return line;
}

char *ctl_request_line(enum ctl_cmd cmd, size_t *len)
{
	const char *name = ctl_cmd_name(cmd);

	if (!name || cmd == CTL_CMD_DEBUG)
		return NULL;
	return ctl_line_from(json_pack("{s:i, s:s}", "v", CTL_PROTO_VERSION,
				       "cmd", name), len);
}

char *ctl_request_encode(const struct ctl_request *req, size_t *len)
{
	char lgr[CTL_LGR_PREFIX_MAX + 1];
	const char *op;

	if (!req)
		return NULL;
	if (req->cmd != CTL_CMD_DEBUG)
		return ctl_request_line(req->cmd, len);
	op = ctl_debug_op_name(req->op);
	if (!op || ctl_lgr_prefix(req->lgr, lgr) < 0 || req->link > CTL_LINK_INDEX_MAX)
		return NULL;
	return ctl_line_from(json_pack("{s:i, s:s, s:s, s:s, s:I}", "v", CTL_PROTO_VERSION,
				       "cmd", ctl_cmd_name(req->cmd), "op", op,
				       "lgr", lgr, "link", (json_int_t)req->link), len);
}

/*
 * Decodes the JSON object of a line and checks its "v". Shared by both
 * directions: what is malformed for a request is malformed for a reply.
 * what is "request" or "reply", for the messages.
 */
static int ctl_decode(const char *line, size_t len, size_t max,
		      const char *what, json_t **out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *obj, *v;

	*out = NULL;
	if (len > max)
		return ctl_fail(-EMSGSIZE, err, errlen,
				"malformed %s: line longer than %zu bytes",
				what, (size_t)max);
	len = ctl_strip_eol(line, len);
	if (len == 0)
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed %s: empty line", what);

	/* A line is one object; jansson rejects trailing garbage itself, and
	 * an embedded NUL stays an error because JSON_ALLOW_NUL is not set.
	 * Duplicate keys are refused so that a request means one thing to
	 * every reader ({"cmd":"stats","cmd":"reload"} is not a stats). */
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj)
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed %s: %s at column %d",
				what, jerr.text, jerr.column);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed %s: not a JSON object", what);
	}

	v = json_object_get(obj, "v");
	if (!v) {
		json_decref(obj);
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed %s: missing \"v\"", what);
	}
	if (!json_is_integer(v)) {
		json_decref(obj);
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed %s: \"v\" must be an integer", what);
	}
	if (json_integer_value(v) != CTL_PROTO_VERSION) {
		json_int_t n = json_integer_value(v);

		json_decref(obj);
		return ctl_fail(-EPROTONOSUPPORT, err, errlen,
				"unsupported protocol version %" JSON_INTEGER_FORMAT,
				n);
	}
	*out = obj;
	return 0;
}

/*
 * The arguments of a debug request: "op", and for fail-link "lgr" and
 * "link". A missing member or one of the wrong type is malformed; a value
 * that cannot name anything is invalid. Values from the client are echoed
 * cut, as command names are.
 */
static int ctl_debug_decode(const json_t *obj, struct ctl_request *req,
			    char *err, size_t errlen)
{
	const json_t *op = json_object_get(obj, "op");
	const json_t *lgr, *link;
	const char *name;
	json_int_t n;
	int rc;

	if (!op)
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed request: debug needs \"op\"");
	if (!json_is_string(op))
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed request: \"op\" must be a string");
	name = json_string_value(op);
	rc = ctl_debug_op_from_name(name);
	if (rc < 0)
		return ctl_fail(-EINVAL, err, errlen,
				"unknown debug operation '%.*s' (expected fail-link)",
				(int)ctl_utf8_cut(name, 64), name);
	req->op = (enum ctl_debug_op)rc;

	lgr = json_object_get(obj, "lgr");
	link = json_object_get(obj, "link");
	if (!json_is_string(lgr))
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed request: fail-link needs \"lgr\", a string");
	if (!json_is_integer(link))
		return ctl_fail(-EBADMSG, err, errlen,
				"malformed request: fail-link needs \"link\", an integer");
	name = json_string_value(lgr);
	if (json_string_length(lgr) != strlen(name) ||
	    ctl_lgr_prefix(name, req->lgr) < 0)
		return ctl_fail(-EINVAL, err, errlen,
				"invalid lgr '%.*s': expected 1 to %d hex digits of a link-group id",
				(int)ctl_utf8_cut(name, 64), name, CTL_LGR_PREFIX_MAX);
	n = json_integer_value(link);
	if (n < 0 || n > CTL_LINK_INDEX_MAX)
		return ctl_fail(-EINVAL, err, errlen,
				"invalid link %" JSON_INTEGER_FORMAT ": expected a link index",
				n);
	req->link = (unsigned)n;
	return 0;
}

int ctl_request_decode(const char *line, size_t len, struct ctl_request *req,
		       char *err, size_t errlen)
{
	struct ctl_request r = { 0 };
	json_t *obj, *cmd;
	const char *name;
	int rc;

	if (req)
		*req = r;
	rc = ctl_decode(line, len, CTL_REQUEST_MAX, "request", &obj, err, errlen);
	if (rc < 0)
		return rc;

	cmd = json_object_get(obj, "cmd");
	if (!cmd)
		rc = ctl_fail(-EBADMSG, err, errlen,
			      "malformed request: missing \"cmd\"");
	else if (!json_is_string(cmd))
		rc = ctl_fail(-EBADMSG, err, errlen,
			      "malformed request: \"cmd\" must be a string");
	else {
		name = json_string_value(cmd);
		rc = ctl_cmd_from_name(name);
		/* The name comes from the client and is echoed back; a long
		 * one is cut rather than filling the reply. */
		if (rc < 0)
			rc = ctl_fail(-EINVAL, err, errlen,
				      "unknown command '%.*s'",
				      (int)ctl_utf8_cut(name, 64), name);
	}
	if (rc >= 0) {
		r.cmd = (enum ctl_cmd)rc;
		if (r.cmd == CTL_CMD_DEBUG) {
			int arc = ctl_debug_decode(obj, &r, err, errlen);

			if (arc < 0)
				rc = arc;
		}
	}
	json_decref(obj);
	if (rc >= 0 && req)
		*req = r;
	return rc;
}

int ctl_request_parse(const char *line, size_t len, char *err, size_t errlen)
{
	return ctl_request_decode(line, len, NULL, err, errlen);
}

char *ctl_reply_ok_line(const char *key, json_t *body, size_t *len)
{
	json_t *obj;

	if (!key || !body) {
		json_decref(body);
		return NULL;
	}
	/* "o" steals body, also when packing fails. */
	obj = json_pack("{s:i, s:b, s:o}", "v", CTL_PROTO_VERSION, "ok", 1,
			key, body);
	return ctl_line_from(obj, len);
}

/*
 * JSON text is UTF-8 and json_pack() refuses a string that is not, which
 * would leave the client without any reply. Messages may quote bytes that
 * are not ours to vouch for (a path, a jansson error about a client's
 * line), so those bytes are sent as '?' instead.
 */
char *ctl_reply_error_line(const char *msg, size_t *len)
{
	char *clean = strdup(msg ? msg : ""), *line;

	if (!clean)
		return NULL;
	ctl_utf8_scrub(clean);
	line = ctl_line_from(json_pack("{s:i, s:b, s:s}", "v", CTL_PROTO_VERSION,
				       "ok", 0, "error", clean), len);
	free(clean);
	return line;
}

int ctl_reply_parse(const char *line, size_t len, json_t **reply,
		    char *err, size_t errlen)
{
	json_t *obj, *ok, *msg;
	int rc;

	*reply = NULL;
	rc = ctl_decode(line, len, CTL_REPLY_MAX, "reply", &obj, err, errlen);
	if (rc < 0)
		return rc;

	ok = json_object_get(obj, "ok");
	msg = json_object_get(obj, "error");
	if (!json_is_boolean(ok))
		rc = ctl_fail(-EBADMSG, err, errlen,
			      "malformed reply: \"ok\" missing or not a boolean");
	else if (json_is_false(ok) && !json_is_string(msg))
		rc = ctl_fail(-EBADMSG, err, errlen,
			      "malformed reply: error reply without an \"error\" string");
	if (rc < 0) {
		json_decref(obj);
		return rc;
	}
	*reply = obj;
	return 0;
}

bool ctl_reply_ok(const json_t *reply)
{
	return json_is_true(json_object_get(reply, "ok"));
}

const char *ctl_reply_error(const json_t *reply)
{
	if (ctl_reply_ok(reply))
		return NULL;
	return json_string_value(json_object_get(reply, "error"));
}

json_t *ctl_reply_body(const json_t *reply, enum ctl_cmd cmd)
{
	const char *name = ctl_cmd_name(cmd);

	if (!name || !ctl_reply_ok(reply))
		return NULL;
	return json_object_get(reply, name);
}
