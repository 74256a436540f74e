/* SPDX-License-Identifier: MIT */
/*
 * Codec of the stats/control socket protocol, version 1
 * (smcproxyctl(8), PROTOCOL). Shared by the server side in
 * smcproxyd and by smcproxyctl. This module does not log and does no I/O:
 * it turns lines into commands and JSON values, and back, and explains what
 * it rejects in a caller-supplied error buffer.
 *
 * Framing: one JSON object per line. Lines passed in may carry their
 * trailing "\n" (or "\r\n"); lines built here always end in exactly one
 * "\n" and never contain another, because compact JSON escapes newlines
 * inside strings.
 *
 * Error texts are valid UTF-8: every message written to a caller's err
 * buffer, and the msg of ctl_reply_error_line(), has each byte that is not
 * part of a well-formed UTF-8 sequence (RFC 3629) replaced by '?'. JSON
 * text must be UTF-8 and json_pack() refuses a string that is not, yet
 * messages quote bytes this module cannot vouch for: jansson's error texts
 * quote the input byte by byte, a path may be in any encoding, and a
 * message cut at errlen can end inside a character.
 */
#ifndef SMCPROXY_CTL_PROTO_H
#define SMCPROXY_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define CTL_PROTO_VERSION	1

/* Longest request line, newline included. A server that has buffered this
 * many bytes without finding a newline should reply with
 * ctl_reply_error_line(CTL_ERR_TOO_LONG) and close the connection. */
#define CTL_REQUEST_MAX		(64 * 1024)

/* Longest reply line smcproxyctl accepts. A flows reply lists at most 10000
 * flows of a few hundred bytes each, far below this. */
#define CTL_REPLY_MAX		(64 * 1024 * 1024)

/* The daemon's reply to a client that fails the SO_PEERCRED check. */
#define CTL_ERR_PERMISSION	"permission denied"
#define CTL_ERR_TOO_LONG	"malformed request: line longer than 65536 bytes"

/* Enough for every message ctl_request_parse() and ctl_reply_parse() write;
 * longer messages are truncated, never overflowed. */
#define CTL_ERRMSG_MAX		256

enum ctl_cmd {
	CTL_CMD_STATS,
	CTL_CMD_FLOWS,
	CTL_CMD_RELOAD,
	CTL_CMD_LINKS,
	CTL_CMD_PEERS,
	CTL_CMD_DEBUG,		/* needs arguments: struct ctl_request */
	CTL_CMD__MAX
};

/* What a "debug" request asks for (its "op" member). */
enum ctl_debug_op {
	CTL_DEBUG_FAIL_LINK,	/* "fail-link": fail one rdma link on purpose */
	CTL_DEBUG__MAX
};

/* Longest link-group id prefix a request may name: the 8 bytes of the id
 * that `links` and `peers` show, in hex. */
#define CTL_LGR_PREFIX_MAX	16
/* Highest link index a request may name (the daemon checks the group's
 * real count). */
#define CTL_LINK_INDEX_MAX	65535

/*
 * A request with its arguments. Only "debug" has any:
 *   {"v":1,"cmd":"debug","op":"fail-link","lgr":"1f2e3d4c","link":1}
 * lgr is 1 to CTL_LGR_PREFIX_MAX hex digits (stored in lower case), a
 * prefix of the "lgr" field of `links`; link is the "link" field.
 */
struct ctl_request {
	enum ctl_cmd cmd;
	enum ctl_debug_op op;
	char lgr[CTL_LGR_PREFIX_MAX + 1];
	unsigned link;
};

/* "stats", "flows", ...; NULL for a value outside the enum. */
const char *ctl_cmd_name(enum ctl_cmd cmd);

/* The command named name (exact, case-sensitive), or -EINVAL. */
int ctl_cmd_from_name(const char *name);

/* "fail-link"; NULL outside the enum. */
const char *ctl_debug_op_name(enum ctl_debug_op op);
/* The operation named name (exact), or -EINVAL. */
int ctl_debug_op_from_name(const char *name);

/*
 * Checks a link-group id prefix: 1 to CTL_LGR_PREFIX_MAX hex digits,
 * either case. Returns 0 with the prefix in lower case in out, or -EINVAL
 * (out is then an empty string).
 */
int ctl_lgr_prefix(const char *s, char out[CTL_LGR_PREFIX_MAX + 1]);

/*
 * Request line for cmd: {"v":1,"cmd":"stats"}\n. Returns a malloc'd,
 * NUL-terminated string (free()), or NULL when out of memory, cmd is out
 * of range or needs arguments (debug: use ctl_request_encode()). *len,
 * when not NULL, receives the length without the NUL.
 */
char *ctl_request_line(enum ctl_cmd cmd, size_t *len);

/*
 * Request line for req, with its arguments; NULL as above, and also when
 * an argument is out of range (op, lgr not a valid prefix, link).
 */
char *ctl_request_encode(const struct ctl_request *req, size_t *len);

/*
 * Parses one request line of len bytes (it need not be NUL-terminated).
 * Returns the command (>= 0), or a negative errno with a message in
 * err[errlen] meant to be sent back verbatim with ctl_reply_error_line():
 *   -EMSGSIZE         line longer than CTL_REQUEST_MAX
 *   -EBADMSG          not JSON, not an object, "v" or "cmd" missing or of
 *                     the wrong type, an argument of debug missing or of
 *                     the wrong type ("malformed request: ...")
 *   -EPROTONOSUPPORT  "v" is an integer other than CTL_PROTO_VERSION
 *                     ("unsupported protocol version N")
 *   -EINVAL           "cmd" is not a known command ("unknown command 'x'"),
 *                     or an argument's value is not valid ("unknown debug
 *                     operation 'x'", "invalid lgr ...", "invalid link ...")
 * Members other than "v", "cmd" and the command's arguments are ignored,
 * so that later minor additions (a filter, say) do not break older daemons.
 */
int ctl_request_parse(const char *line, size_t len, char *err, size_t errlen);

/* ctl_request_parse() that also returns the arguments, in *req (zeroed
 * first; filled only on success). */
int ctl_request_decode(const char *line, size_t len, struct ctl_request *req,
		       char *err, size_t errlen);

/*
 * Reply lines. ctl_reply_ok_line() builds {"v":1,"ok":true,"<key>":<body>}
 * and steals the reference to body (also on failure), like
 * json_object_set_new(). ctl_reply_error_line() builds
 * {"v":1,"ok":false,"error":"<msg>"}; msg may contain newlines (reload
 * errors do), which travel escaped, and is sent made valid UTF-8 as
 * described at the top of this file. Both return a malloc'd string ending in
 * "\n", or NULL when out of memory; *len as for ctl_request_line().
 */
char *ctl_reply_ok_line(const char *key, json_t *body, size_t *len);
char *ctl_reply_error_line(const char *msg, size_t *len);

/*
 * Parses one reply line and checks the envelope: a JSON object with "v" equal
 * to CTL_PROTO_VERSION, a boolean "ok", and a string "error" when ok is
 * false. On success returns 0 and stores a new reference in *reply (caller
 * json_decref()s it); read it with the helpers below. Returns -EMSGSIZE,
 * -EBADMSG or -EPROTONOSUPPORT with a message in err, as for requests.
 * An error reply from the daemon is a valid reply: this returns 0 for it.
 */
int ctl_reply_parse(const char *line, size_t len, json_t **reply,
		    char *err, size_t errlen);

/* For a reply accepted by ctl_reply_parse(): */
bool ctl_reply_ok(const json_t *reply);
/* The daemon's error text for ok=false, else NULL. Owned by reply. */
const char *ctl_reply_error(const json_t *reply);
/* The payload member named after the command ("stats", "flows", ...):
 * borrowed reference, NULL when absent. */
json_t *ctl_reply_body(const json_t *reply, enum ctl_cmd cmd);

#endif
