/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the stats/control socket codec (daemon/ctl/ctl_proto.c) and of
 * smcproxyctl's renderers (daemon/ctl/ctl_render*.c): request and reply
 * round-trips, every class of rejected request with the message the daemon
 * sends back, and the shape of the table and Prometheus output.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/ctl_proto.h"
#include "ctl/ctl_render.h"

/* Parses a NUL-terminated request; err receives the message. */
static int parse_req(const char *line, char *err)
{
	return ctl_request_parse(line, strlen(line), err, CTL_ERRMSG_MAX);
}

static void test_cmd_names(void **state)
{
	(void)state;
	for (int i = 0; i < CTL_CMD__MAX; i++)
		assert_int_equal(ctl_cmd_from_name(ctl_cmd_name(i)), i);
	assert_int_equal(ctl_cmd_from_name("STATS"), -EINVAL);
	assert_int_equal(ctl_cmd_from_name(""), -EINVAL);
	assert_int_equal(ctl_cmd_from_name(NULL), -EINVAL);
	assert_null(ctl_cmd_name(CTL_CMD__MAX));
	assert_null(ctl_cmd_name((enum ctl_cmd)-1));
}

static void test_request_round_trip(void **state)
{
	char err[CTL_ERRMSG_MAX];
	size_t len;
	char *line;

	(void)state;
	line = ctl_request_line(CTL_CMD_STATS, &len);
	assert_non_null(line);
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"stats\"}\n");
	assert_int_equal(len, strlen(line));
	free(line);

	for (int i = 0; i < CTL_CMD__MAX; i++) {
		/* debug has arguments: ctl_request_encode(), below. */
		if (i == CTL_CMD_DEBUG) {
			assert_null(ctl_request_line(i, &len));
			continue;
		}
		line = ctl_request_line(i, &len);
		assert_non_null(line);
		/* Exactly one newline, at the end. */
		assert_ptr_equal(strchr(line, '\n'), line + len - 1);
		assert_int_equal(ctl_request_parse(line, len, err, sizeof(err)), i);
		/* Without its newline too. */
		assert_int_equal(ctl_request_parse(line, len - 1, err, sizeof(err)), i);
		free(line);
	}
	assert_null(ctl_request_line(CTL_CMD__MAX, NULL));
}

static void test_request_accepts(void **state)
{
	char err[CTL_ERRMSG_MAX];

	(void)state;
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"flows\"}\r\n", err), CTL_CMD_FLOWS);
	assert_int_equal(parse_req(" { \"cmd\" : \"reload\" , \"v\" : 1 } ", err),
			 CTL_CMD_RELOAD);
	/* Members beyond v and cmd are ignored (forward compatibility). */
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"peers\",\"filter\":{}}", err),
			 CTL_CMD_PEERS);
}

static void test_request_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"{",
		"stats",
		"{\"v\":1,\"cmd\":\"stats\"",
		"{\"v\":1,\"cmd\":\"stats\"} {\"v\":1}",	/* two objects */
		"{\"v\":1,\"cmd\":\"stats\"}x",
		"[1]",
		"42",
		"\"stats\"",
		"null",
		"{\"cmd\":\"stats\"}",			/* no v */
		"{\"v\":\"1\",\"cmd\":\"stats\"}",	/* v as a string */
		"{\"v\":1.0,\"cmd\":\"stats\"}",	/* v as a real */
		"{\"v\":1}",				/* no cmd */
		"{\"v\":1,\"cmd\":1}",
		"{\"v\":1,\"cmd\":null}",
		"{\"v\":1,\"cmd\":\"stats\",\"cmd\":\"reload\"}", /* duplicate */
		"{\"v\":1,\"cmd\":\"st\\u0000ats\"}",
	};
	char err[CTL_ERRMSG_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse_req(bad[i], err), -EBADMSG);
		assert_true(strncmp(err, "malformed request: ", 19) == 0);
	}
	assert_int_equal(parse_req("{\"v\":1}", err), -EBADMSG);
	assert_string_equal(err, "malformed request: missing \"cmd\"");
	assert_int_equal(parse_req("{\"cmd\":\"stats\"}", err), -EBADMSG);
	assert_string_equal(err, "malformed request: missing \"v\"");
}

static void test_request_embedded_nul(void **state)
{
	static const char line[] = "{\"v\":1,\"cmd\":\"stats\"}\0garbage\n";
	char err[CTL_ERRMSG_MAX];

	(void)state;
	assert_int_equal(ctl_request_parse(line, sizeof(line) - 1, err, sizeof(err)),
			 -EBADMSG);
}

static void test_request_version(void **state)
{
	char err[CTL_ERRMSG_MAX];

	(void)state;
	assert_int_equal(parse_req("{\"v\":2,\"cmd\":\"stats\"}", err),
			 -EPROTONOSUPPORT);
	assert_string_equal(err, "unsupported protocol version 2");
	assert_int_equal(parse_req("{\"v\":0,\"cmd\":\"stats\"}", err),
			 -EPROTONOSUPPORT);
	assert_int_equal(parse_req("{\"v\":-1,\"cmd\":\"stats\"}", err),
			 -EPROTONOSUPPORT);
	assert_string_equal(err, "unsupported protocol version -1");
	/* The version is judged before the command: a v2 command is not
	 * "unknown", it belongs to another protocol. */
	assert_int_equal(parse_req("{\"v\":2,\"cmd\":\"frobnicate\"}", err),
			 -EPROTONOSUPPORT);
}

static void test_request_unknown_cmd(void **state)
{
	char err[CTL_ERRMSG_MAX], line[512], expect[128];

	(void)state;
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"x\"}", err), -EINVAL);
	assert_string_equal(err, "unknown command 'x'");
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"Stats\"}", err), -EINVAL);
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"\"}", err), -EINVAL);
	assert_string_equal(err, "unknown command ''");

	/* A long name is echoed cut to 64 characters. */
	snprintf(line, sizeof(line), "{\"v\":1,\"cmd\":\"%0300d\"}", 7);
	assert_int_equal(parse_req(line, err), -EINVAL);
	snprintf(expect, sizeof(expect), "unknown command '%064d'", 0);
	assert_string_equal(err, expect);
}

/* debug fail-link: its arguments travel and come back as they went. */
static void test_request_debug_round_trip(void **state)
{
	struct ctl_request req = { .cmd = CTL_CMD_DEBUG, .op = CTL_DEBUG_FAIL_LINK,
				   .lgr = "0123456789ABCDEF", .link = 3 }, back;
	char err[CTL_ERRMSG_MAX], *line;
	size_t len;

	(void)state;
	line = ctl_request_encode(&req, &len);
	assert_non_null(line);
	/* The prefix goes in lower case, as the views show ids. */
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\","
			    "\"lgr\":\"0123456789abcdef\",\"link\":3}\n");
	assert_int_equal(len, strlen(line));
	assert_int_equal(ctl_request_decode(line, len, &back, err, sizeof(err)), CTL_CMD_DEBUG);
	assert_int_equal(back.cmd, CTL_CMD_DEBUG);
	assert_int_equal(back.op, CTL_DEBUG_FAIL_LINK);
	assert_string_equal(back.lgr, "0123456789abcdef");
	assert_int_equal(back.link, 3);
	assert_int_equal(ctl_request_parse(line, len, err, sizeof(err)), CTL_CMD_DEBUG);
	free(line);

	/* A one-digit prefix and the highest index are fine. */
	assert_int_equal(parse_req("{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\","
				   "\"lgr\":\"A\",\"link\":65535}", err), CTL_CMD_DEBUG);
	/* Other commands encode as ctl_request_line() does and ignore the
	 * arguments. */
	req.cmd = CTL_CMD_LINKS;
	line = ctl_request_encode(&req, NULL);
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"links\"}\n");
	free(line);
	line = "{\"v\":1,\"cmd\":\"links\",\"lgr\":5}";
	assert_int_equal(ctl_request_decode(line, strlen(line), &back, err, sizeof(err)),
			 CTL_CMD_LINKS);
	assert_string_equal(back.lgr, "");
	/* Nothing to encode when an argument is out of range. */
	req.cmd = CTL_CMD_DEBUG;
	req.link = CTL_LINK_INDEX_MAX + 1;
	assert_null(ctl_request_encode(&req, NULL));
	req.link = 0;
	strcpy(req.lgr, "xyz");
	assert_null(ctl_request_encode(&req, NULL));
	strcpy(req.lgr, "ab");
	req.op = CTL_DEBUG__MAX;
	assert_null(ctl_request_encode(&req, NULL));
	assert_null(ctl_request_encode(NULL, NULL));
	assert_string_equal(ctl_debug_op_name(CTL_DEBUG_FAIL_LINK), "fail-link");
	assert_null(ctl_debug_op_name(CTL_DEBUG__MAX));
	assert_int_equal(ctl_debug_op_from_name("fail-link"), CTL_DEBUG_FAIL_LINK);
	assert_int_equal(ctl_debug_op_from_name("fail_link"), -EINVAL);
	assert_int_equal(ctl_debug_op_from_name(NULL), -EINVAL);
}

static void test_lgr_prefix(void **state)
{
	char out[CTL_LGR_PREFIX_MAX + 1];

	(void)state;
	assert_int_equal(ctl_lgr_prefix("1f2E", out), 0);
	assert_string_equal(out, "1f2e");
	assert_int_equal(ctl_lgr_prefix("0123456789abcdef", out), 0);
	assert_int_equal(ctl_lgr_prefix("0123456789abcdef0", out), -EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(ctl_lgr_prefix("", out), -EINVAL);
	assert_int_equal(ctl_lgr_prefix("12g4", out), -EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(ctl_lgr_prefix(" 12", out), -EINVAL);
	assert_int_equal(ctl_lgr_prefix("0x12", out), -EINVAL);
	assert_int_equal(ctl_lgr_prefix(NULL, out), -EINVAL);
}

/* Every way a debug request can be wrong, with what the daemon says. */
static void test_request_debug_rejects(void **state)
{
	static const struct {
		const char *line;
		int rc;
		const char *err;
	} bad[] = {
		{ "{\"v\":1,\"cmd\":\"debug\"}", -EBADMSG,
		  "malformed request: debug needs \"op\"" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":1}", -EBADMSG,
		  "malformed request: \"op\" must be a string" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"crash\"}", -EINVAL,
		  "unknown debug operation 'crash' (expected fail-link)" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"link\":0}", -EBADMSG,
		  "malformed request: fail-link needs \"lgr\", a string" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":12,\"link\":0}",
		  -EBADMSG, "malformed request: fail-link needs \"lgr\", a string" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"ab\"}", -EBADMSG,
		  "malformed request: fail-link needs \"link\", an integer" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"ab\",\"link\":\"1\"}",
		  -EBADMSG, "malformed request: fail-link needs \"link\", an integer" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"ab\",\"link\":1.0}",
		  -EBADMSG, "malformed request: fail-link needs \"link\", an integer" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"xy\",\"link\":1}",
		  -EINVAL, "invalid lgr 'xy': expected 1 to 16 hex digits of a link-group id" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"\",\"link\":1}",
		  -EINVAL, "invalid lgr '': expected 1 to 16 hex digits of a link-group id" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\","
		  "\"lgr\":\"0123456789abcdef0\",\"link\":1}",
		  -EINVAL, "invalid lgr '0123456789abcdef0': expected 1 to 16 hex digits of a "
		  "link-group id" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"ab\",\"link\":-1}",
		  -EINVAL, "invalid link -1: expected a link index" },
		{ "{\"v\":1,\"cmd\":\"debug\",\"op\":\"fail-link\",\"lgr\":\"ab\","
		  "\"link\":65536}", -EINVAL, "invalid link 65536: expected a link index" },
	};
	struct ctl_request req;
	char err[CTL_ERRMSG_MAX], line[600], expect[200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&req, 0x5a, sizeof(req));
		assert_int_equal(ctl_request_decode(bad[i].line, strlen(bad[i].line), &req,
						    err, sizeof(err)), bad[i].rc);
		assert_string_equal(err, bad[i].err);
		/* Nothing half-filled is left for the caller. */
		assert_int_equal(req.cmd, 0);
		assert_string_equal(req.lgr, "");
	}
	/* A long value from the client is echoed cut to 64 characters. */
	snprintf(line, sizeof(line), "{\"v\":1,\"cmd\":\"debug\",\"op\":\"%0300d\"}", 7);
	assert_int_equal(parse_req(line, err), -EINVAL);
	snprintf(expect, sizeof(expect), "unknown debug operation '%064d' (expected fail-link)", 0);
	assert_string_equal(err, expect);
}

static void test_request_overlong(void **state)
{
	static const char body[] = "{\"v\":1,\"cmd\":\"stats\"}";
	char err[CTL_ERRMSG_MAX];
	char *line = malloc(CTL_REQUEST_MAX + 2);

	(void)state;
	assert_non_null(line);
	/* Exactly CTL_REQUEST_MAX bytes, newline included: accepted. */
	memset(line, ' ', CTL_REQUEST_MAX);
	memcpy(line, body, sizeof(body) - 1);
	line[CTL_REQUEST_MAX - 1] = '\n';
	assert_int_equal(ctl_request_parse(line, CTL_REQUEST_MAX, err, sizeof(err)),
			 CTL_CMD_STATS);
	/* One more: refused before any parsing, with the daemon's message. */
	line[CTL_REQUEST_MAX - 1] = ' ';
	line[CTL_REQUEST_MAX] = '\n';
	assert_int_equal(ctl_request_parse(line, CTL_REQUEST_MAX + 1, err, sizeof(err)),
			 -EMSGSIZE);
	assert_string_equal(err, CTL_ERR_TOO_LONG);
	free(line);
}

static void test_request_small_err_buffer(void **state)
{
	char err[8];

	(void)state;
	memset(err, 'X', sizeof(err));
	assert_int_equal(ctl_request_parse("{", 1, err, sizeof(err)), -EBADMSG);
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_int_equal(ctl_request_parse("{", 1, NULL, 0), -EBADMSG);
}

static void test_reply_ok_round_trip(void **state)
{
	char err[CTL_ERRMSG_MAX], *line;
	json_t *reply, *body;
	size_t len;

	(void)state;
	line = ctl_reply_ok_line("stats", json_pack("{s:i}", "pid", 42), &len);
	assert_non_null(line);
	assert_string_equal(line, "{\"v\":1,\"ok\":true,\"stats\":{\"pid\":42}}\n");
	assert_int_equal(ctl_reply_parse(line, len, &reply, err, sizeof(err)), 0);
	assert_true(ctl_reply_ok(reply));
	assert_null(ctl_reply_error(reply));
	body = ctl_reply_body(reply, CTL_CMD_STATS);
	assert_non_null(body);
	assert_int_equal(json_integer_value(json_object_get(body, "pid")), 42);
	assert_null(ctl_reply_body(reply, CTL_CMD_FLOWS));
	json_decref(reply);
	free(line);

	assert_null(ctl_reply_ok_line("stats", NULL, NULL));
	assert_null(ctl_reply_ok_line(NULL, json_object(), NULL));
}

static void test_reply_error_round_trip(void **state)
{
	static const char msg[] =
		"/etc/smcproxy/smcproxyd.json:3:5: listen[0]: bad address\n"
		"/etc/smcproxy/smcproxyd.json:9:1: frob: unknown key";
	char err[CTL_ERRMSG_MAX], *line;
	json_t *reply;
	size_t len;

	(void)state;
	line = ctl_reply_error_line(msg, &len);
	assert_non_null(line);
	/* The embedded newline travels escaped: still one line. */
	assert_ptr_equal(strchr(line, '\n'), line + len - 1);
	assert_int_equal(ctl_reply_parse(line, len, &reply, err, sizeof(err)), 0);
	assert_false(ctl_reply_ok(reply));
	assert_string_equal(ctl_reply_error(reply), msg);
	assert_null(ctl_reply_body(reply, CTL_CMD_RELOAD));
	json_decref(reply);
	free(line);

	line = ctl_reply_error_line(CTL_ERR_PERMISSION, NULL);
	assert_string_equal(line,
		"{\"v\":1,\"ok\":false,\"error\":\"permission denied\"}\n");
	free(line);
}

static void test_reply_rejects(void **state)
{
	static const struct {
		const char *line;
		int rc;
	} bad[] = {
		{ "hello\n", -EBADMSG },
		{ "", -EBADMSG },
		{ "[]\n", -EBADMSG },
		{ "{\"ok\":true}\n", -EBADMSG },
		{ "{\"v\":2,\"ok\":true}\n", -EPROTONOSUPPORT },
		{ "{\"v\":1}\n", -EBADMSG },
		{ "{\"v\":1,\"ok\":1}\n", -EBADMSG },
		{ "{\"v\":1,\"ok\":\"true\"}\n", -EBADMSG },
		{ "{\"v\":1,\"ok\":false}\n", -EBADMSG },
		{ "{\"v\":1,\"ok\":false,\"error\":7}\n", -EBADMSG },
	};
	char err[CTL_ERRMSG_MAX];
	json_t *reply;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reply = (json_t *)1;
		assert_int_equal(ctl_reply_parse(bad[i].line, strlen(bad[i].line),
						 &reply, err, sizeof(err)), bad[i].rc);
		assert_null(reply);
		assert_true(strlen(err) > 0);
	}
}

static void test_fmt(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), 0), "0");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), 999), "999");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), 1000), "1,000");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), 1234567), "1,234,567");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), -12345), "-12,345");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), INT64_MIN),
			    "-9,223,372,036,854,775,808");
	assert_string_equal(ctl_fmt_count(buf, 4, 1234567), "1,2");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), INT64_MAX),
			    "9,223,372,036,854,775,807");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), -1), "-1");
	assert_string_equal(ctl_fmt_count(buf, sizeof(buf), 100000), "100,000");

	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 0), "0ms");
	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 250), "250ms");
	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 1500), "1.5s");
	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 125000), "2m 05s");
	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 3723000), "1h 02m 03s");
	assert_string_equal(ctl_fmt_duration(buf, sizeof(buf), 273900000), "3d 04h 05m");
}

/* ---- renderers -------------------------------------------------------- */

static const char stats_reply[] =
	"{\"v\":1,\"ok\":true,\"stats\":{"
	"\"version\":\"0.1-abc\",\"pid\":123,\"uptime_ms\":5000,\"workers\":1,"
	"\"reloads\":0,"
	"\"flows\":{\"accepted\":1234567,"
	"\"active\":{\"tcp\":2,\"shm\":0,\"rdma\":0},"
	"\"closed\":{\"tcp\":8,\"shm\":0,\"rdma\":0}},"
	"\"fallback\":{\"no_peer\":10,\"transport_tcp\":0,\"no_link\":0},"
	"\"bytes\":{\"in\":12345,\"out\":678},"
	"\"connect_failures\":1,\"connect_timeouts\":0,\"resets\":1,"
	"\"accept_pauses\":0,\"loops_refused\":0,\"idle_timeouts\":0,"
	"\"per_worker\":[{\"worker\":0,\"flows_active\":2,\"flows_accepted\":1234000,"
	"\"bytes_in\":12000,\"bytes_out\":600},{\"worker\":1,\"flows_active\":0,"
	"\"flows_accepted\":567,\"bytes_in\":345,\"bytes_out\":78}],"
	"\"brand_new\":5}}\n";

static const char flows_reply[] =
	"{\"v\":1,\"ok\":true,\"flows\":["
	"{\"id\":7,\"worker\":0,\"mode\":\"tcp\",\"reason\":\"no_peer\","
	"\"state\":\"established\",\"client\":\"10.9.0.1:40112\","
	"\"dest\":\"10.9.0.2:6379\",\"bytes_in\":100,\"bytes_out\":200000,"
	"\"age_ms\":1500}],\"truncated\":true}\n";

/* Renders a reply line into a malloc'd string; returns ctl_render()'s rc. */
static int render(const char *line, enum ctl_format fmt, enum ctl_cmd cmd,
		  char **text)
{
	char err[CTL_ERRMSG_MAX];
	json_t *reply;
	size_t size;
	FILE *f;
	int rc;

	assert_int_equal(ctl_reply_parse(line, strlen(line), &reply, err,
					 sizeof(err)), 0);
	f = open_memstream(text, &size);
	assert_non_null(f);
	rc = ctl_render(f, fmt, cmd, reply, err, sizeof(err));
	fclose(f);
	json_decref(reply);
	return rc;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/*
 * Checks the exposition format rules we promise: every sample's family has
 * one # TYPE line before it, names start with smcproxy_, counters end in
 * _total, and every line is a comment or "name[{labels}] value".
 */
static void check_exposition(const char *text)
{
	char *copy = strdup(text), *save = NULL;
	char types[64][96];
	int ntypes = 0;

	assert_non_null(copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[96], type[32];

		if (sscanf(l, "# TYPE %95s %31s", name, type) == 2) {
			for (int i = 0; i < ntypes; i++)
				assert_string_not_equal(types[i], name);
			assert_true(ntypes < 64);
			snprintf(types[ntypes++], sizeof(types[0]), "%s", name);
			assert_true(strncmp(name, "smcproxy_", 9) == 0);
			if (strcmp(type, "counter") == 0)
				assert_string_equal(name + strlen(name) - 6, "_total");
			else
				assert_true(strcmp(type, "gauge") == 0 ||
					    strcmp(type, "untyped") == 0);
			continue;
		}
		if (strncmp(l, "# HELP smcproxy_", 16) == 0)
			continue;
		assert_true(l[0] != '#');
		/* A sample belongs to the last declared family. */
		assert_true(ntypes > 0);
		size_t n = strlen(types[ntypes - 1]);
		assert_true(strncmp(l, types[ntypes - 1], n) == 0);
		assert_true(l[n] == ' ' || l[n] == '{');
		const char *value = strrchr(l, ' ');
		char *end;
		assert_non_null(value);
		strtod(value + 1, &end);
		assert_true(*end == '\0' && end != value + 1);
	}
	free(copy);
}

static void test_render_stats_prometheus(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render(stats_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS,
				&text), 0);
	check_exposition(text);
	assert_true(has_line(text, "smcproxy_info{version=\"0.1-abc\"} 1"));
	assert_true(has_line(text, "smcproxy_uptime_seconds 5.000"));
	assert_true(has_line(text, "smcproxy_flows_accepted_total 1234567"));
	assert_true(has_line(text, "# TYPE smcproxy_flows_active gauge"));
	assert_true(has_line(text, "smcproxy_flows_active{mode=\"tcp\"} 2"));
	assert_true(has_line(text, "smcproxy_flows_closed_total{mode=\"tcp\"} 8"));
	assert_true(has_line(text, "smcproxy_fallbacks_total{reason=\"no_peer\"} 10"));
	assert_true(has_line(text, "smcproxy_bytes_total{direction=\"in\"} 12345"));
	assert_true(has_line(text, "smcproxy_bytes_total{direction=\"out\"} 678"));
	assert_true(has_line(text, "smcproxy_connect_failures_total 1"));
	assert_true(has_line(text, "smcproxy_resets_total 1"));
	assert_true(has_line(text, "smcproxy_accept_pauses_total 0"));
	assert_true(has_line(text, "# TYPE smcproxy_brand_new untyped"));
	assert_true(has_line(text, "smcproxy_brand_new 5"));
	/* One series per worker, labelled with its index. */
	assert_true(has_line(text, "smcproxy_worker_flows_active{worker=\"0\"} 2"));
	assert_true(has_line(text, "smcproxy_worker_flows_accepted_total{worker=\"1\"} 567"));
	assert_true(has_line(text,
		"smcproxy_worker_bytes_total{worker=\"1\",direction=\"out\"} 78"));
	assert_null(strstr(text, "per_worker"));
	/* pid is not a measurement. */
	assert_null(strstr(text, "pid"));
	free(text);
}

static void test_render_prometheus_escapes(void **state)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"stats\":{\"version\":\"a\\\"b\\\\c\\nd\","
		"\"fallback\":{\"we\\\"ird\":1}}}";
	char *text;

	(void)state;
	assert_int_equal(render(reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS, &text), 0);
	assert_true(has_line(text, "smcproxy_info{version=\"a\\\"b\\\\c\\nd\"} 1"));
	assert_true(has_line(text, "smcproxy_fallbacks_total{reason=\"we\\\"ird\"} 1"));
	free(text);
}

static void test_render_flows(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render(flows_reply, CTL_FORMAT_TABLE, CTL_CMD_FLOWS, &text), 0);
	assert_non_null(strstr(text, "CLIENT"));
	assert_non_null(strstr(text, "10.9.0.1:40112"));
	assert_non_null(strstr(text, "200,000"));
	assert_non_null(strstr(text, "1.5s"));
	assert_non_null(strstr(text, "more are active"));
	free(text);

	assert_int_equal(render(flows_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_FLOWS,
				&text), 0);
	check_exposition(text);
	assert_true(has_line(text,
		"smcproxy_flows_listed{mode=\"tcp\",state=\"established\"} 1"));
	assert_true(has_line(text, "smcproxy_flows_listed_truncated 1"));
	free(text);

	assert_int_equal(render("{\"v\":1,\"ok\":true,\"flows\":[]}",
				CTL_FORMAT_TABLE, CTL_CMD_FLOWS, &text), 0);
	assert_string_equal(text, "no active flows\n");
	free(text);

	/* A worker that did not answer: its flows are missing, and we say so;
	 * an empty list is not "no active flows" then. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"flows\":[],\"truncated\":false,"
				"\"workers_not_answering\":[1,3]}",
				CTL_FORMAT_TABLE, CTL_CMD_FLOWS, &text), 0);
	assert_string_equal(text, "no flows listed\n(not listed: the flows of workers 1, 3,"
			    " which did not answer in time)\n");
	free(text);
	/* A partial list does not pass for the whole: "listed", more may be. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"flows\":[{\"id\":1,\"worker\":0,"
				"\"mode\":\"tcp\",\"state\":\"established\"}],\"truncated\":false,"
				"\"partial\":true,\"workers_not_answering\":[1]}",
				CTL_FORMAT_TABLE, CTL_CMD_FLOWS, &text), 0);
	assert_non_null(strstr(text, "\n1 flow listed; more may be active\n"
			       "(not listed: the flows of worker 1, which did not answer in time)\n"));
	free(text);
}

static void test_render_stats_table(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render(stats_reply, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_true(has_line(text, "smcproxyd 0.1-abc, pid 123, up 5.0s, 1 worker, "
			     "0 reloads"));
	assert_non_null(strstr(text, "1,234,567"));
	assert_non_null(strstr(text, "no_peer"));
	assert_non_null(strstr(text, "connect failures"));
	assert_non_null(strstr(text, "bytes in"));
	assert_non_null(strstr(text, "brand new"));
	/* The per-worker table, not a row of JSON. */
	assert_true(has_line(text, "worker  active   accepted  bytes in  bytes out"));
	assert_true(has_line(text, "0            2  1,234,000    12,000        600"));
	assert_true(has_line(text, "1            0        567       345         78"));
	assert_null(strstr(text, "per worker"));
	/* Aligned: the rows of the flows table end at the "total" column's
	 * right edge, and no line ends in a blank. */
	size_t edge = 0;
	for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
		size_t n = strcspn(p, "\n");

		assert_true(n == 0 || p[n - 1] != ' ');
		if (strncmp(p, "active ", 7) && strncmp(p, "closed ", 7) &&
		    strncmp(p, "accepted ", 9) && strncmp(p, "flows ", 6))
			continue;
		if (!edge)
			edge = n;
		assert_int_equal(n, edge);
	}
	assert_true(edge > 0);
	free(text);
}

static void test_render_json_and_lists(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"links\":[]}",
				CTL_FORMAT_JSON, CTL_CMD_LINKS, &text), 0);
	assert_string_equal(text, "{\n  \"v\": 1,\n  \"ok\": true,\n  \"links\": []\n}\n");
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"links\":[]}",
				CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	assert_string_equal(text, "no links\n");
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"peers\":"
				"[{\"addr\":\"10.0.0.2\",\"ttl_ms\":2000}]}",
				CTL_FORMAT_TABLE, CTL_CMD_PEERS, &text), 0);
	assert_non_null(strstr(text, "ADDR"));
	assert_non_null(strstr(text, "TTL MS"));
	assert_non_null(strstr(text, "2,000"));
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"peers\":[{},{}]}",
				CTL_FORMAT_PROMETHEUS, CTL_CMD_PEERS, &text), 0);
	assert_true(has_line(text, "smcproxy_peers 2"));
	free(text);
}

static void test_render_rejects(void **state)
{
	char *text;

	(void)state;
	assert_false(ctl_render_supported(CTL_FORMAT_PROMETHEUS, CTL_CMD_RELOAD));
	assert_true(ctl_render_supported(CTL_FORMAT_JSON, CTL_CMD_RELOAD));
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"reload\":{}}",
				CTL_FORMAT_PROMETHEUS, CTL_CMD_RELOAD, &text), -ENOTSUP);
	free(text);
	/* The payload must match the command. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"stats\":[]}",
				CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), -EBADMSG);
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"stats\":{}}",
				CTL_FORMAT_TABLE, CTL_CMD_FLOWS, &text), -EBADMSG);
	free(text);
}

static void test_render_reload(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"reload\":{\"source\":\"/x.json\","
				"\"applied\":\"log.level\",\"restart_needed\":\"\"}}",
				CTL_FORMAT_TABLE, CTL_CMD_RELOAD, &text), 0);
	assert_true(has_line(text, "reloaded /x.json"));
	assert_true(has_line(text, "applied:        log.level"));
	assert_true(has_line(text, "restart needed: (none)"));
	free(text);
}

/* Regression (libFuzzer): links/peers entries without fields made a table of
 * zero columns; the table printer (now ctl_tbl_print()) read past its cell
 * array, and from 16 entries on realloc(cells, 0) freed them and the table
 * freed them again. */
static void test_render_list_no_fields(void **state)
{
	char line[512], *text;

	(void)state;
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"links\":[{}]}",
				CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	assert_string_equal(text, "links: 1 entry, none with any fields\n");
	free(text);
	/* 15, 16 and 17 entries: around the first growth of the cell array. */
	for (int n = 15; n <= 40; n += n < 17 ? 1 : 23) {
		char expect[64];
		size_t len;

		len = (size_t)snprintf(line, sizeof(line), "{\"v\":1,\"ok\":true,\"peers\":[");
		for (int i = 0; i < n; i++)
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s{}",
						i ? "," : "");
		snprintf(line + len, sizeof(line) - len, "]}");
		assert_int_equal(render(line, CTL_FORMAT_TABLE, CTL_CMD_PEERS, &text), 0);
		snprintf(expect, sizeof(expect), "peers: %d entries, none with any fields\n", n);
		assert_string_equal(text, expect);
		free(text);
	}
}

/* Entries that are not objects are shown whole, not dropped. */
static void test_render_list_not_objects(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"links\":[1,\"two\",{\"id\":3}]}",
				CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	assert_true(has_line(text, "ENTRY  ID"));
	assert_true(has_line(text, "    1   -"));
	assert_true(has_line(text, "  two   -"));
	assert_true(has_line(text, "    -   3"));
	free(text);
}

/* Regression (UBSan): the flows table summed its counters in int64_t, which
 * overflows with huge values; the total is now exact. */
static void test_render_flows_total_overflow(void **state)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"stats\":{\"flows\":{"
		"\"active\":{\"tcp\":9223372036854775807,\"shm\":9223372036854775807},"
		"\"closed\":{\"tcp\":-9223372036854775808,\"shm\":-1}}}}";
	char *text;

	(void)state;
	assert_int_equal(render(reply, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_non_null(strstr(text, "  18,446,744,073,709,551,614\n"));
	assert_non_null(strstr(text, "  -9,223,372,036,854,775,809\n"));
	free(text);
}

/* A mode whose count is not an integer is shown as sent; the row's total
 * cannot be computed and says so, instead of counting it as 0. */
static void test_render_flows_odd_modes(void **state)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"stats\":{\"flows\":{"
		"\"active\":{\"tcp\":\"many\",\"shm\":2},\"closed\":{\"tcp\":1}}}}";
	char *text;

	(void)state;
	assert_int_equal(render(reply, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_true(has_line(text, "flows    tcp  shm  total"));
	assert_true(has_line(text, "active  many    2      ?"));
	assert_true(has_line(text, "closed     1    -      1"));
	free(text);
}

/* Modes past the table's 14 columns still count in the total. */
static void test_render_flows_many_modes(void **state)
{
	char line[1024], *text;
	size_t len;

	(void)state;
	len = (size_t)snprintf(line, sizeof(line),
			       "{\"v\":1,\"ok\":true,\"stats\":{\"flows\":{\"active\":{");
	for (int i = 0; i < 20; i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s\"m%02d\":1",
					i ? "," : "", i);
	snprintf(line + len, sizeof(line) - len, "}}}}");
	assert_int_equal(render(line, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_non_null(strstr(text, "  20\n"));
	assert_null(strstr(text, "m14"));
	assert_non_null(strstr(text, "(more than 14 modes"));
	free(text);
}

/* A huge cell does not widen its column for every other row. */
static void test_render_wide_cell(void **state)
{
	char line[4096], *text;
	size_t len, longest = 0;

	(void)state;
	len = (size_t)snprintf(line, sizeof(line),
			       "{\"v\":1,\"ok\":true,\"peers\":[{\"a\":\"");
	memset(line + len, 'y', 2000);
	len += 2000;
	snprintf(line + len, sizeof(line) - len, "\",\"b\":1},{\"a\":\"x\",\"b\":2}]}");
	assert_int_equal(render(line, CTL_FORMAT_TABLE, CTL_CMD_PEERS, &text), 0);
	for (const char *p = text; *p; p += strcspn(p, "\n") + 1) {
		size_t n = strcspn(p, "\n");

		if (n < 2000 && n > longest)
			longest = n;
	}
	assert_true(longest <= 64 + 2 + 1);
	assert_true(has_line(text, "x                                                                 2"));
	free(text);
}

/* Text from the daemon reaches a terminal: control characters become '?',
 * and a key cannot forge a line of Prometheus output. */
static void test_render_controls(void **state)
{
	static const char links[] =
		"{\"v\":1,\"ok\":true,\"links\":[{\"na\\nme\":\"\\u001b[2J\\u009bx\\u007f\"}]}";
	static const char stats[] =
		"{\"v\":1,\"ok\":true,\"stats\":{\"version\":\"1\\u001b]0;t\\u0007\","
		"\"x\\nsmcproxy_forged\":7}}";
	char *text;

	(void)state;
	assert_int_equal(render(links, CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	assert_string_equal(text, "NA?ME\n?[2J?x?\n");
	free(text);
	assert_int_equal(render(stats, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_true(has_line(text, "smcproxyd 1?]0;t?"));
	assert_null(strchr(text, '\033'));
	free(text);
	assert_int_equal(render(stats, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS, &text), 0);
	check_exposition(text);
	assert_true(has_line(text, "# HELP smcproxy_x_smcproxy_forged smcproxyd stats "
			     "field x\\nsmcproxy_forged."));
	assert_false(has_line(text, "smcproxy_forged."));
	free(text);
}

/* reload fields of another type are shown, not read as "no change". */
static void test_render_reload_odd_types(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"reload\":{\"applied\":[\"a\"],"
				"\"restart_needed\":[\"listen\"],\"source\":7}}",
				CTL_FORMAT_TABLE, CTL_CMD_RELOAD, &text), 0);
	assert_true(has_line(text, "reloaded 7"));
	assert_true(has_line(text, "applied:        [\"a\"]"));
	assert_true(has_line(text, "restart needed: [\"listen\"]"));
	assert_non_null(strstr(text, "(restart smcproxyd"));
	free(text);
}

/* links with an rdma link and a shm one, one of them down. */
static const char links_reply[] =
	"{\"v\":1,\"ok\":true,\"links\":["
	"{\"worker\":0,\"peer\":\"10.0.0.2:7002\",\"role\":\"client\","
	"\"lgr\":\"0011223344556677\",\"link\":0,\"transport\":\"rdma\","
	"\"state\":\"active\",\"flows\":3,\"msgs_tx\":1200,\"msgs_rx\":1100,"
	"\"bytes_tx\":1048576,\"bytes_rx\":2048,"
	"\"device\":\"rxe0\",\"port\":1,\"gid\":\"fe80::1\",\"qp_num\":17,"
	"\"peer_qp_num\":18,\"max_inline\":220,\"wr_in_flight\":5,\"sq_depth\":256,"
	"\"cq\":1,\"relaxed_ordering\":true},"
	"{\"worker\":0,\"peer\":\"10.0.0.2:7002\",\"role\":\"client\","
	"\"lgr\":\"0011223344556677\",\"link\":1,\"transport\":\"rdma\","
	"\"state\":\"down\",\"flows\":0,\"msgs_tx\":7,\"msgs_rx\":7,"
	"\"bytes_tx\":0,\"bytes_rx\":0,"
	"\"device\":\"rxe0\",\"port\":1,\"gid\":\"fe80::1\",\"qp_num\":19,"
	"\"peer_qp_num\":20,\"max_inline\":0,\"wr_in_flight\":0,\"sq_depth\":256,"
	"\"cq\":0,\"relaxed_ordering\":false},"
	"{\"worker\":1,\"peer\":\"10.0.0.3:7002\",\"role\":\"server\","
	"\"lgr\":\"8899aabbccddeeff\",\"link\":0,\"transport\":\"shm\","
	"\"state\":\"active\",\"flows\":1,\"msgs_tx\":2,\"msgs_rx\":2,"
	"\"bytes_tx\":10,\"bytes_rx\":20}]}";

static void test_render_links_rdma(void **state)
{
	char *text, *rdma;

	(void)state;
	assert_int_equal(render(links_reply, CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	/* The common columns, every link, the down one too. */
	assert_true(has_line(text, "WORKER  PEER           ROLE    LGR               LINK"
			     "  TRANSPORT  STATE   FLOWS  MSGS TX  MSGS RX   BYTES TX  BYTES RX"));
	assert_true(has_line(text, "     0  10.0.0.2:7002  client  0011223344556677     1"
			     "  rdma       down        0        7        7          0         0"));
	assert_true(has_line(text, "     1  10.0.0.3:7002  server  8899aabbccddeeff     0"
			     "  shm        active      1        2        2         10        20"));
	/* The rdma table: only the rdma links, ids not digit-grouped. */
	rdma = strstr(text, "\nrdma links:\n");
	assert_non_null(rdma);
	assert_null(strstr(text, "DEVICE") < rdma ? strstr(text, "DEVICE") : NULL);
	assert_true(has_line(rdma, "WORKER  LGR               LINK  DEVICE  PORT  GID      QPN"
			     "  PEER QPN  INLINE  IN FLIGHT  SQ DEPTH  CQ  RELAXED"));
	assert_true(has_line(rdma, "     0  0011223344556677     0  rxe0       1  fe80::1   17"
			     "        18     220          5       256   1  yes"));
	assert_true(has_line(rdma, "     0  0011223344556677     1  rxe0       1  fe80::1   19"
			     "        20       0          0       256   0  no"));
	assert_null(strstr(rdma, "8899aabbccddeeff"));
	free(text);

	/* No rdma link: no second table. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"links\":[{\"lgr\":\"ab\","
				"\"link\":0,\"transport\":\"shm\"}]}",
				CTL_FORMAT_TABLE, CTL_CMD_LINKS, &text), 0);
	assert_string_equal(text, "LGR  LINK  TRANSPORT\nab      0  shm\n");
	free(text);

	assert_int_equal(render(links_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_LINKS, &text), 0);
	check_exposition(text);
	assert_true(has_line(text, "smcproxy_links 3"));
	assert_true(has_line(text, "smcproxy_links_down 1"));
	assert_true(has_line(text, "smcproxy_link_wr_in_flight{worker=\"0\","
			     "lgr=\"0011223344556677\",link=\"0\",device=\"rxe0\"} 5"));
	assert_true(has_line(text, "smcproxy_link_sq_depth{worker=\"0\","
			     "lgr=\"0011223344556677\",link=\"1\",device=\"rxe0\"} 256"));
	assert_null(strstr(text, "8899aabbccddeeff"));
	free(text);

	/* JSON: the daemon's members as they came. */
	assert_int_equal(render(links_reply, CTL_FORMAT_JSON, CTL_CMD_LINKS, &text), 0);
	assert_non_null(strstr(text, "\"qp_num\": 17"));
	assert_non_null(strstr(text, "\"relaxed_ordering\": true"));
	free(text);
}

static const char stats_cq_reply[] =
	"{\"v\":1,\"ok\":true,\"stats\":{\"version\":\"0.2\",\"workers\":2,"
	"\"connect_failures\":0,"
	"\"cq\":[{\"worker\":0,\"cq\":0,\"polls\":1500,\"completions\":12000,"
	"\"empty_polls\":300,\"rearms\":280,\"rearms_solicited\":250,\"events\":290,\"rearm_failures\":0,"
	"\"links\":2,\"cqe\":1024,"
	"\"moderated\":false},"
	"{\"worker\":1,\"cq\":0,\"polls\":0,\"completions\":0,\"empty_polls\":0,"
	"\"rearms\":1,\"rearms_solicited\":0,\"events\":0,\"rearm_failures\":3,\"links\":0,\"cqe\":1024,"
	"\"moderated\":true}],"
	"\"workers_not_answering\":[2]}}";

static void test_render_stats_cq(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(render(stats_cq_reply, CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_true(has_line(text, "worker  cq  links  polls  completions  empty polls"
			     "  rearms  solicited  events  rearm failures"));
	assert_true(has_line(text, "0        0      2  1,500       12,000          300"
			     "     280        250     290               0"));
	assert_true(has_line(text, "1        0      0      0            0            0"
			     "       1          0       0               3"));
	assert_true(has_line(text, "(not listed: the CQ counters of worker 2, which did not "
			     "answer in time)"));
	/* Not a row of JSON among the counters. */
	assert_null(strstr(text, "[{"));
	assert_null(strstr(text, "workers not answering"));
	free(text);

	assert_int_equal(render(stats_cq_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS,
				&text), 0);
	check_exposition(text);
	assert_true(has_line(text, "# TYPE smcproxy_cq_polls_total counter"));
	assert_true(has_line(text, "smcproxy_cq_polls_total{worker=\"0\",cq=\"0\"} 1500"));
	assert_true(has_line(text, "smcproxy_cq_completions_total{worker=\"0\",cq=\"0\"} 12000"));
	assert_true(has_line(text, "smcproxy_cq_empty_polls_total{worker=\"0\",cq=\"0\"} 300"));
	assert_true(has_line(text, "smcproxy_cq_rearms_total{worker=\"1\",cq=\"0\"} 1"));
	assert_true(has_line(text, "smcproxy_cq_events_total{worker=\"0\",cq=\"0\"} 290"));
	assert_true(has_line(text, "# TYPE smcproxy_cq_links gauge"));
	assert_true(has_line(text, "smcproxy_cq_links{worker=\"0\",cq=\"0\"} 2"));
	assert_null(strstr(text, "not_answering"));
	free(text);

	/* No rdma: an empty list shows nothing. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"stats\":{\"cq\":[]}}",
				CTL_FORMAT_TABLE, CTL_CMD_STATS, &text), 0);
	assert_null(strstr(text, "completions"));
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"stats\":{\"cq\":[]}}",
				CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS, &text), 0);
	assert_null(strstr(text, "smcproxy_cq"));
	free(text);
}

static void test_render_debug(void **state)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"debug\":{\"op\":\"fail-link\",\"worker\":1,"
		"\"lgr\":\"0011223344556677\",\"link\":0}}";
	char *text;

	(void)state;
	assert_false(ctl_render_supported(CTL_FORMAT_PROMETHEUS, CTL_CMD_DEBUG));
	assert_true(ctl_render_supported(CTL_FORMAT_TABLE, CTL_CMD_DEBUG));
	assert_int_equal(render(reply, CTL_FORMAT_TABLE, CTL_CMD_DEBUG, &text), 0);
	assert_string_equal(text, "fail-link: link 0 of link group 0011223344556677 on worker 1"
			    " was failed; its flows move to a surviving link of the group, or"
			    " are reset when there is none\n");
	free(text);
	assert_int_equal(render(reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_DEBUG, &text), -ENOTSUP);
	free(text);
	/* Another operation, from a newer daemon: its members as they are. */
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"debug\":{\"op\":\"x\",\"n\":2}}",
				CTL_FORMAT_TABLE, CTL_CMD_DEBUG, &text), 0);
	assert_string_equal(text, "op: x\nn: 2\n");
	free(text);
	assert_int_equal(render("{\"v\":1,\"ok\":true,\"debug\":[]}",
				CTL_FORMAT_TABLE, CTL_CMD_DEBUG, &text), -EBADMSG);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmd_names),
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_request_accepts),
		cmocka_unit_test(test_request_malformed),
		cmocka_unit_test(test_request_embedded_nul),
		cmocka_unit_test(test_request_version),
		cmocka_unit_test(test_request_unknown_cmd),
		cmocka_unit_test(test_request_debug_round_trip),
		cmocka_unit_test(test_lgr_prefix),
		cmocka_unit_test(test_request_debug_rejects),
		cmocka_unit_test(test_request_overlong),
		cmocka_unit_test(test_request_small_err_buffer),
		cmocka_unit_test(test_reply_ok_round_trip),
		cmocka_unit_test(test_reply_error_round_trip),
		cmocka_unit_test(test_reply_rejects),
		cmocka_unit_test(test_fmt),
		cmocka_unit_test(test_render_stats_prometheus),
		cmocka_unit_test(test_render_prometheus_escapes),
		cmocka_unit_test(test_render_flows),
		cmocka_unit_test(test_render_stats_table),
		cmocka_unit_test(test_render_json_and_lists),
		cmocka_unit_test(test_render_rejects),
		cmocka_unit_test(test_render_reload),
		cmocka_unit_test(test_render_list_no_fields),
		cmocka_unit_test(test_render_list_not_objects),
		cmocka_unit_test(test_render_flows_total_overflow),
		cmocka_unit_test(test_render_flows_odd_modes),
		cmocka_unit_test(test_render_flows_many_modes),
		cmocka_unit_test(test_render_wide_cell),
		cmocka_unit_test(test_render_controls),
		cmocka_unit_test(test_render_reload_odd_types),
		cmocka_unit_test(test_render_links_rdma),
		cmocka_unit_test(test_render_stats_cq),
		cmocka_unit_test(test_render_debug),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
