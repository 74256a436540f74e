/* SPDX-License-Identifier: MIT */
/*
 * Loading the config: jansson parses, then one walk over the schema table
 * (cfg_schema.c) checks every key and fills a struct cfg.
 *
 * The walk never stops at the first problem: every error is collected, then
 * sorted by position, so an operator fixes a file in one pass. Each error is
 * one line, "file:line:column: key.path: message"; the position comes from
 * the position index (cfg_pos.c) because jansson keeps none for values.
 *
 * What is accepted: an object at the top; only the keys of the schema, at
 * every level; each value of exactly the type its key wants (no string for
 * an integer, no real for a size). Missing keys take their defaults, so "{}"
 * is the built-in default config.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg-int.h"

/* A config larger than this is a mistake (a log file, a core dump), and
 * reading it whole would only waste memory. */
#define CFG_FILE_MAX (16u * 1024 * 1024)

/* Longest user string quoted back in an error line. */
#define SHOWN_MAX 64

#define DEFAULT_CONTROL_PORT 7002

struct cfg_err {
	unsigned line, col;
	size_t seq;			/* keeps equal positions in report order */
	char *text;			/* one line, with its '\n' */
};

struct load {
	const char *source;
	struct cfg__pos_index pos;
	struct cfg__buf path;
	size_t marks[8];		/* path lengths of the enclosing levels */
	unsigned depth;
	bool in_default;		/* applying a built-in default value */
	bool nomem;
	struct cfg_err *errs;
	size_t n_errs, cap_errs;
};

/* ---- key paths ---- */

static void path_push_key(struct load *ld, const char *key)
{
	if (ld->depth >= sizeof(ld->marks) / sizeof(ld->marks[0])) {
		ld->nomem = true;	/* cannot happen: the schema is 3 deep */
		return;
	}
	ld->marks[ld->depth++] = ld->path.len;
	if (cfg__path_push_key(&ld->path, key, strlen(key)) < 0)
		ld->nomem = true;
}

static void path_push_index(struct load *ld, size_t i)
{
	if (ld->depth >= sizeof(ld->marks) / sizeof(ld->marks[0])) {
		ld->nomem = true;
		return;
	}
	ld->marks[ld->depth++] = ld->path.len;
	if (cfg__path_push_index(&ld->path, i) < 0)
		ld->nomem = true;
}

static void path_pop(struct load *ld)
{
	if (ld->depth > 0)
		cfg__buf_truncate(&ld->path, ld->marks[--ld->depth]);
}

/* ---- errors ---- */

static const char *cur_path(const struct load *ld)
{
	return ld->path.s ? ld->path.s : "";
}

/*
 * Where the value at the current path starts (or its key, if at_key). A
 * value that is not in the text (a missing required key, a default) is
 * reported at its nearest enclosing value that is.
 */
static void find_pos(struct load *ld, bool at_key, unsigned *line, unsigned *col)
{
	const struct cfg__pos *p = NULL;
	struct cfg__buf tmp = { 0 };
	unsigned d = ld->depth;

	if (!ld->in_default)
		p = cfg__pos_find(&ld->pos, cur_path(ld));
	while (!p && d > 0) {
		at_key = false;
		cfg__buf_truncate(&tmp, 0);
		if (cfg__buf_add(&tmp, cur_path(ld), ld->marks[--d]) < 0) {
			ld->nomem = true;
			break;
		}
		p = cfg__pos_find(&ld->pos, tmp.s);
	}
	cfg__buf_free(&tmp);
	*line = p ? (at_key ? p->key_line : p->line) : 1;
	*col = p ? (at_key ? p->key_col : p->col) : 1;
}

static void add_error(struct load *ld, unsigned line, unsigned col, const char *path,
		      const char *msg)
{
	struct cfg__buf b = { 0 };
	struct cfg_err *v;
	size_t cap;
	int r = 0;

	if (ld->n_errs == ld->cap_errs) {
		cap = ld->cap_errs ? ld->cap_errs * 2 : 8;
		v = realloc(ld->errs, cap * sizeof(*v));
		if (!v) {
			ld->nomem = true;
			return;
		}
		ld->errs = v;
		ld->cap_errs = cap;
	}
	r |= cfg__buf_add_clean(&b, ld->source, strlen(ld->source));
	r |= cfg__buf_addf(&b, ":%u:%u: ", line, col);
	if (path) {
		r |= cfg__buf_add_clean(&b, path, strlen(path));
		r |= cfg__buf_add(&b, ": ", 2);
	}
	if (ld->in_default)
		r |= cfg__buf_addf(&b, "built-in default: ");
	r |= cfg__buf_add_clean(&b, msg, strlen(msg));
	r |= cfg__buf_add(&b, "\n", 1);
	if (r < 0) {
		cfg__buf_free(&b);
		ld->nomem = true;
		return;
	}
	ld->errs[ld->n_errs] = (struct cfg_err){ line, col, ld->n_errs, b.s };
	ld->n_errs++;
}

/* An error about the value (or, if at_key, the key) at the current path. */
static void __attribute__((format(printf, 3, 4)))
verr(struct load *ld, bool at_key, const char *fmt, ...)
{
	unsigned line, col;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	find_pos(ld, at_key, &line, &col);
	add_error(ld, line, col, ld->path.len ? cur_path(ld) : "(root)", msg);
}

static int err_cmp(const void *a, const void *b)
{
	const struct cfg_err *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the collected errors into errs (if not NULL) and frees them. */
static void finish_errors(struct load *ld, struct cfg_errors *errs)
{
	struct cfg__buf b = { 0 };
	size_t i;

	if (ld->n_errs > 1)
		qsort(ld->errs, ld->n_errs, sizeof(ld->errs[0]), err_cmp);
	for (i = 0; i < ld->n_errs; i++) {
		if (errs && cfg__buf_add(&b, ld->errs[i].text, strlen(ld->errs[i].text)) < 0)
			ld->nomem = true;
		free(ld->errs[i].text);
	}
	free(ld->errs);
	ld->errs = NULL;
	if (errs) {
		errs->text = b.s;
		errs->len = b.len;
		errs->count = (unsigned)ld->n_errs;
	}
	ld->n_errs = 0;
}

/* ---- describing values in messages ---- */

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "null";
	}
	return "something else";
}

/* s cut to SHOWN_MAX bytes on a UTF-8 boundary, with "..." if cut. */
static const char *shown(const char *s, char buf[SHOWN_MAX + 4])
{
	size_t n = strlen(s);

	if (n <= SHOWN_MAX)
		return s;
	n = SHOWN_MAX;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

/*
 * Edit distance of a and b counting an adjacent transposition as one edit
 * ("rign" is one edit from "ring"), the optimal string alignment distance;
 * 3 when it is more than 2. Names are short, so three rows suffice.
 */
static unsigned near_miss(const char *a, const char *b)
{
	unsigned rows[3][64], *prev2, *prev, *cur, *t, best, v;
	size_t n = strlen(a), m = strlen(b), i, j;

	if (m >= sizeof(rows[0]) / sizeof(rows[0][0]) || n > m + 2 || m > n + 2)
		return 3;
	prev2 = rows[0];
	prev = rows[1];
	cur = rows[2];
	for (j = 0; j <= m; j++)
		prev[j] = (unsigned)j;
	for (i = 1; i <= n; i++) {
		cur[0] = (unsigned)i;
		best = cur[0];
		for (j = 1; j <= m; j++) {
			v = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
			if (v < best)
				best = v;
		}
		if (best > 2)
			return 3;
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[m] > 2 ? 3 : prev[m];
}

/* Names the unknown key at the current path, suggesting the closest
 * known one. */
static void unknown_key(struct load *ld, const char *key, const struct cfg__key *known)
{
	const struct cfg__key *k, *best = NULL;
	struct cfg__buf list = { 0 };
	unsigned d, best_d = 3;

	for (k = known; k->name; k++) {
		d = strcasecmp(key, k->name) == 0 ? 0 : near_miss(key, k->name);
		/* Two edits turn any short name into any other ("zz" into
		 * "cq"), so short names are suggested at one edit only. */
		if (d < best_d && !(d == 2 && strlen(k->name) <= 4)) {
			best_d = d;
			best = k;
		}
		if (cfg__buf_addf(&list, "%s%s", k == known ? "" : ", ", k->name) < 0)
			ld->nomem = true;
	}
	if (best)
		verr(ld, true, "unknown key (did you mean \"%s\"?)", best->name);
	else
		verr(ld, true, "unknown key (known here: %s)", list.s ? list.s : "none");
	cfg__buf_free(&list);
}

/* ---- setting typed values ---- */

static void *field(struct cfg *cfg, const struct cfg__key *k)
{
	return (char *)cfg + k->off;
}

/* A JSON integer in [min, max], or an error. */
static bool get_int(struct load *ld, const json_t *v, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	json_int_t i;

	if (!json_is_integer(v)) {
		if (json_is_string(v) && json_string_length(v) > 0 &&
		    strspn(json_string_value(v), "0123456789") == json_string_length(v))
			verr(ld, false, "expected an integer, got a string (remove the quotes)");
		else
			verr(ld, false, "expected an integer, got %s", type_name(v));
		return false;
	}
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max) {
		verr(ld, false, "%lld is out of range (%llu..%llu)", (long long)i,
		     (unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*out = (uint64_t)i;
	return true;
}

static bool get_size(struct load *ld, const struct cfg__key *k, const json_t *v, uint64_t *out)
{
	char sv[SHOWN_MAX + 4], a[32], b[32];
	const char *why = NULL;
	uint64_t n;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0) {
			verr(ld, false, "a size cannot be negative");
			return false;
		}
		n = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		if (cfg__parse_size(json_string_value(v), &n, &why) < 0) {
			verr(ld, false, "invalid size \"%s\": %s", shown(json_string_value(v), sv), why);
			return false;
		}
	} else {
		verr(ld, false, "expected a size (integer bytes or a string like \"64KiB\"), got %s",
		     type_name(v));
		return false;
	}
	if (n < k->min || n > k->max) {
		cfg__fmt_size(a, sizeof(a), k->min);
		cfg__fmt_size(b, sizeof(b), k->max);
		verr(ld, false, "%llu bytes is out of range (%s..%s)", (unsigned long long)n, a, b);
		return false;
	}
	if ((k->flags & CFG__F_POW2) && (n & (n - 1))) {
		verr(ld, false, "%llu bytes is not a power of two", (unsigned long long)n);
		return false;
	}
	*out = n;
	return true;
}

static bool get_duration(struct load *ld, const struct cfg__key *k, const json_t *v,
			 uint64_t *out)
{
	char sv[SHOWN_MAX + 4], a[32], b[32], has[32];
	const char *why = NULL;
	uint64_t ms;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0) {
			verr(ld, false, "a duration cannot be negative");
			return false;
		}
		ms = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		if (cfg__parse_duration(json_string_value(v), &ms, &why) < 0) {
			verr(ld, false, "invalid duration \"%s\": %s",
			     shown(json_string_value(v), sv), why);
			return false;
		}
	} else {
		verr(ld, false, "expected a duration (a string like \"30s\" or integer "
		     "milliseconds), got %s", type_name(v));
		return false;
	}
	if (ms == 0 && (k->flags & CFG__F_ZERO_OK)) {
		*out = 0;
		return true;
	}
	if (ms < k->min || ms > k->max) {
		cfg__fmt_duration(has, sizeof(has), ms);
		cfg__fmt_duration(a, sizeof(a), k->min);
		cfg__fmt_duration(b, sizeof(b), k->max);
		verr(ld, false, "%s is out of range (%s%s..%s)", has,
		     (k->flags & CFG__F_ZERO_OK) ? "0, or " : "", a, b);
		return false;
	}
	*out = ms;
	return true;
}

static bool get_string(struct load *ld, const json_t *v, const char *what, const char **out)
{
	if (!json_is_string(v)) {
		verr(ld, false, "expected %s, got %s", what, type_name(v));
		return false;
	}
	*out = json_string_value(v);
	return true;
}

static void set_path(struct load *ld, const struct cfg__key *k, const json_t *v, char **out)
{
	char sv[SHOWN_MAX + 4];
	const char *s;

	if (!get_string(ld, v, "a string (an absolute path)", &s))
		return;
	if (*s != '/' && !(*s == '\0' && (k->flags & CFG__F_EMPTY_OK))) {
		verr(ld, false, "\"%s\" is not an absolute path (one starting with /)%s",
		     shown(s, sv), (k->flags & CFG__F_EMPTY_OK) ? ", nor \"\"" : "");
		return;
	}
	if (strlen(s) > k->max) {
		verr(ld, false, "path is %zu bytes long, longer than the %llu allowed here",
		     strlen(s), (unsigned long long)k->max);
		return;
	}
	free(*out);
	*out = strdup(s);
	if (!*out)
		ld->nomem = true;
}

/*
 * A user name as useradd(8) takes it by default: letters, digits, ".",
 * "_" and "-", not starting with "-", at most k->max bytes; or "". Whether
 * it exists is the daemon's to find out at start (the config may be
 * checked on another host).
 */
static void set_user(struct load *ld, const struct cfg__key *k, const json_t *v, char **out)
{
	char sv[SHOWN_MAX + 4];
	const char *s, *p;

	if (!get_string(ld, v, "a string (a user name, or \"\")", &s))
		return;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      (*p == '-' && p != s)))
			break;
	if (*p || strlen(s) > k->max) {
		verr(ld, false, "\"%s\" is not a user name (up to %llu of A-Z a-z 0-9 . _ -, "
		     "not starting with -), nor \"\"", shown(s, sv), (unsigned long long)k->max);
		return;
	}
	free(*out);
	*out = strdup(s);
	if (!*out)
		ld->nomem = true;
}

static void set_mode(struct load *ld, const json_t *v, mode_t *out)
{
	char sv[SHOWN_MAX + 4];
	const char *why = NULL;
	json_int_t i;

	if (json_is_string(v)) {
		if (cfg__parse_mode(json_string_value(v), out, &why) < 0)
			verr(ld, false, "invalid mode \"%s\": %s", shown(json_string_value(v), sv), why);
		return;
	}
	if (!json_is_integer(v)) {
		verr(ld, false, "expected a mode (an octal string like \"0660\"), got %s",
		     type_name(v));
		return;
	}
	i = json_integer_value(v);
	if (i < 0) {
		verr(ld, false, "a mode cannot be negative");
		return;
	}
	if (i > 0777) {
		/* Most likely "mode": 660, meant as octal. */
		verr(ld, false, "%lld is 0%llo in octal, above 0777; write the mode as an octal "
		     "string like \"0660\"", (long long)i, (unsigned long long)i);
		return;
	}
	*out = (mode_t)i;
}

static const char *const transport_names[] = {
	[CFG_TRANSPORT_AUTO] = "auto",
	[CFG_TRANSPORT_RDMA] = "rdma",
	[CFG_TRANSPORT_SHM] = "shm",
	[CFG_TRANSPORT_TCP] = "tcp",
};

static void set_transport(struct load *ld, const json_t *v, enum cfg_transport *out)
{
	char sv[SHOWN_MAX + 4];
	const char *s;
	size_t i;

	if (!get_string(ld, v, "a string (auto, rdma, shm or tcp)", &s))
		return;
	for (i = 0; i < sizeof(transport_names) / sizeof(transport_names[0]); i++) {
		if (strcmp(s, transport_names[i]) == 0) {
			*out = (enum cfg_transport)i;
			return;
		}
	}
	verr(ld, false, "unknown transport \"%s\" (expected auto, rdma, shm or tcp)", shown(s, sv));
}

static const struct {
	const char *name;
	int prio;
} log_levels[] = {
	{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "notice", LOG_NOTICE },
	{ "warning", LOG_WARNING }, { "error", LOG_ERR },
};

static void set_log_level(struct load *ld, const json_t *v, int *out)
{
	char sv[SHOWN_MAX + 4];
	const char *s;
	size_t i;

	if (!get_string(ld, v, "a string (debug, info, notice, warning or error)", &s))
		return;
	for (i = 0; i < sizeof(log_levels) / sizeof(log_levels[0]); i++) {
		if (strcmp(s, log_levels[i].name) == 0) {
			*out = log_levels[i].prio;
			return;
		}
	}
	verr(ld, false, "unknown log level \"%s\" (expected debug, info, notice, warning or error)",
	     shown(s, sv));
}

/* An address string into *out; false (with an error) if it is not one. */
static bool get_addr(struct load *ld, const json_t *v, struct cfg_addr *out)
{
	char sv[SHOWN_MAX + 4];
	const char *s, *why = NULL;

	if (!get_string(ld, v, "a string like \"127.0.0.1:7001\" or \"[::1]:7001\"", &s))
		return false;
	if (cfg__parse_addr(s, out, &why) < 0) {
		verr(ld, false, "invalid address \"%s\": %s", shown(s, sv), why);
		return false;
	}
	return true;
}

/* listen (at least one address) or tproxy (may be empty) into *out. */
static void set_listen(struct load *ld, const struct cfg__key *k, const json_t *v,
		       struct cfg_addr **out, size_t *n_out)
{
	const char *name = k->kind == CFG__TPROXY ? "tproxy" : "listen";
	size_t i, j, n;
	bool *ok;

	if (!json_is_array(v)) {
		verr(ld, false, "expected an array of addresses like [\"127.0.0.1:7001\"], got %s",
		     type_name(v));
		return;
	}
	n = json_array_size(v);
	if (n == 0) {
		if (k->kind != CFG__TPROXY)
			verr(ld, false, "must list at least one address");
		return;
	}
	if (n > k->max) {
		verr(ld, false, "%zu addresses, more than the %llu allowed", n,
		     (unsigned long long)k->max);
		return;
	}
	*out = calloc(n, sizeof((*out)[0]));
	ok = calloc(n, sizeof(ok[0]));
	if (!*out || !ok) {
		ld->nomem = true;
		free(ok);
		return;
	}
	*n_out = n;
	for (i = 0; i < n; i++) {
		path_push_index(ld, i);
		ok[i] = get_addr(ld, json_array_get(v, i), &(*out)[i]);
		for (j = 0; ok[i] && j < i; j++) {
			if (ok[j] && cfg__addr_equal(&(*out)[i], &(*out)[j])) {
				verr(ld, false, "duplicate address, same as %s[%zu]", name, j);
				break;
			}
		}
		path_pop(ld);
	}
	free(ok);
}

static void set_control(struct load *ld, const json_t *v, struct cfg *cfg)
{
	if (json_is_string(v) && json_string_length(v) == 0) {
		cfg->has_control = false;
		return;
	}
	cfg->has_control = get_addr(ld, v, &cfg->control);
}

/* An address key other than listen and control: "" (when the key allows
 * it) turns what it names off, as len 0. */
static void set_addr(struct load *ld, const struct cfg__key *k, const json_t *v,
		     struct cfg_addr *out)
{
	memset(out, 0, sizeof(*out));
	if ((k->flags & CFG__F_EMPTY_OK) && json_is_string(v) && json_string_length(v) == 0)
		return;
	if (!get_addr(ld, v, out))
		memset(out, 0, sizeof(*out));
}

static const struct cfg__key peer_keys[] = {
	{ .name = "prefix" },
	{ .name = "control_port" },
	{ .name = "allow" },
	{ .name = "via" },
	{ 0 },
};

static bool known_key(const struct cfg__key *keys, const char *name)
{
	for (; keys->name; keys++) {
		if (strcmp(keys->name, name) == 0)
			return true;
	}
	return false;
}

/* Reports every member of obj that is not in keys. */
static void check_unknown(struct load *ld, json_t *obj, const struct cfg__key *keys)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		if (known_key(keys, key))
			continue;
		path_push_key(ld, key);
		unknown_key(ld, key, keys);
		path_pop(ld);
	}
}

/* A peer's "allow" list; false if it has an error. At most this many
 * entries: each flow a peer opens walks the list. */
#define ALLOW_MAX 256

static bool get_allow(struct load *ld, json_t *v, struct cfg_peer *peer)
{
	char sv[SHOWN_MAX + 4];
	const char *s, *why = NULL;
	bool ok = true;
	size_t i, n;

	path_push_key(ld, "allow");
	if (!json_is_array(v)) {
		verr(ld, false, "expected an array like [\"6379\", \"8000-8100\", "
		     "\"10.0.0.2:443\"], got %s", type_name(v));
		path_pop(ld);
		return false;
	}
	n = json_array_size(v);
	if (n > ALLOW_MAX) {
		verr(ld, false, "%zu entries, more than the %d allowed (use port ranges)", n,
		     ALLOW_MAX);
		path_pop(ld);
		return false;
	}
	if (n) {
		peer->allow = calloc(n, sizeof(peer->allow[0]));
		if (!peer->allow) {
			ld->nomem = true;
			path_pop(ld);
			return false;
		}
	}
	for (i = 0; i < n; i++) {
		path_push_index(ld, i);
		if (!get_string(ld, json_array_get(v, i), "a string like \"6379\" or "
				"\"8000-8100\"", &s)) {
			ok = false;
		} else if (cfg__parse_allow(s, &peer->allow[peer->n_allow], &why) < 0) {
			verr(ld, false, "invalid entry \"%s\": %s", shown(s, sv), why);
			ok = false;
		} else {
			peer->n_allow++;
		}
		path_pop(ld);
	}
	path_pop(ld);
	return ok;
}

/* One peers[] element; false if it has an error. */
static bool get_peer(struct load *ld, json_t *v, struct cfg_peer *peer)
{
	struct cfg_prefix masked;
	char sv[SHOWN_MAX + 4], m[64];
	const char *s, *why = NULL;
	bool ok = true;
	uint64_t port;
	json_t *p;

	if (!json_is_object(v)) {
		verr(ld, false, "expected an object like {\"prefix\": \"10.0.0.0/24\"}, got %s",
		     type_name(v));
		return false;
	}
	check_unknown(ld, v, peer_keys);
	peer->control_port = DEFAULT_CONTROL_PORT;
	p = json_object_get(v, "control_port");
	if (p) {
		path_push_key(ld, "control_port");
		if (get_int(ld, p, 1, 65535, &port))
			peer->control_port = (uint16_t)port;
		else
			ok = false;
		path_pop(ld);
	}
	p = json_object_get(v, "allow");
	if (p && !get_allow(ld, p, peer))
		ok = false;
	p = json_object_get(v, "via");
	if (p) {
		path_push_key(ld, "via");
		if (!get_string(ld, p, "an address like \"192.168.1.2\"", &s)) {
			ok = false;
		} else if (cfg__parse_host(s, &peer->via_family, peer->via_addr, &why) < 0) {
			verr(ld, false, "invalid address \"%s\": %s", shown(s, sv), why);
			ok = false;
		}
		path_pop(ld);
	}
	p = json_object_get(v, "prefix");
	if (!p) {
		verr(ld, false, "missing required key \"prefix\"");
		return false;
	}
	path_push_key(ld, "prefix");
	if (!get_string(ld, p, "a string like \"10.0.0.0/24\"", &s)) {
		ok = false;
	} else if (cfg__parse_prefix(s, &peer->prefix, &why) < 0) {
		verr(ld, false, "invalid prefix \"%s\": %s", shown(s, sv), why);
		ok = false;
	} else if (cfg__prefix_mask(&peer->prefix, &masked)) {
		cfg__fmt_prefix(m, sizeof(m), &masked);
		verr(ld, false, "host bits are set in \"%s\" (did you mean \"%s\"?)", shown(s, sv), m);
		ok = false;
	}
	path_pop(ld);
	return ok;
}

static void set_peers(struct load *ld, const struct cfg__key *k, const json_t *v,
		      struct cfg *cfg)
{
	size_t i, j, n;
	bool *ok;

	if (!json_is_array(v)) {
		verr(ld, false, "expected an array of {\"prefix\": ..., \"control_port\": ...}, "
		     "got %s", type_name(v));
		return;
	}
	n = json_array_size(v);
	if (n == 0)
		return;
	if (n > k->max) {
		verr(ld, false, "%zu peers, more than the %llu allowed (use wider prefixes)", n,
		     (unsigned long long)k->max);
		return;
	}
	cfg->peers = calloc(n, sizeof(cfg->peers[0]));
	ok = calloc(n, sizeof(ok[0]));
	if (!cfg->peers || !ok) {
		ld->nomem = true;
		free(ok);
		return;
	}
	cfg->n_peers = n;
	for (i = 0; i < n; i++) {
		path_push_index(ld, i);
		ok[i] = get_peer(ld, json_array_get(v, i), &cfg->peers[i]);
		for (j = 0; ok[i] && j < i; j++) {
			if (ok[j] && cfg__prefix_equal(&cfg->peers[i].prefix, &cfg->peers[j].prefix)) {
				path_push_key(ld, "prefix");
				verr(ld, false, "duplicate prefix, same as peers[%zu]", j);
				path_pop(ld);
				break;
			}
		}
		path_pop(ld);
	}
	free(ok);
}

/* A list of prefixes ("serve", "intercept.destinations"): host bits zero,
 * no duplicates; example names a valid entry in the errors. */
static void set_prefix_list(struct load *ld, const struct cfg__key *k, const json_t *v,
			    struct cfg_prefix **out, size_t *n_out, const char *example)
{
	char sv[SHOWN_MAX + 4], m[64];
	struct cfg_prefix masked, *p;
	const char *s, *why = NULL;
	size_t i, j, n;

	if (!json_is_array(v)) {
		verr(ld, false, "expected an array of prefixes like [\"%s\"], got %s", example,
		     type_name(v));
		return;
	}
	n = json_array_size(v);
	if (n > k->max) {
		verr(ld, false, "%zu prefixes, more than the %llu allowed (use wider prefixes)", n,
		     (unsigned long long)k->max);
		return;
	}
	if (!n)
		return;
	*out = calloc(n, sizeof(**out));
	if (!*out) {
		ld->nomem = true;
		return;
	}
	for (i = 0; i < n; i++) {
		char like[64];

		p = &(*out)[*n_out];
		snprintf(like, sizeof(like), "a string like \"%s\"", example);
		path_push_index(ld, i);
		if (!get_string(ld, json_array_get(v, i), like, &s)) {
			/* reported */
		} else if (cfg__parse_prefix(s, p, &why) < 0) {
			verr(ld, false, "invalid prefix \"%s\": %s", shown(s, sv), why);
		} else if (cfg__prefix_mask(p, &masked)) {
			cfg__fmt_prefix(m, sizeof(m), &masked);
			verr(ld, false, "host bits are set in \"%s\" (did you mean \"%s\"?)",
			     shown(s, sv), m);
		} else {
			for (j = 0; j < *n_out; j++)
				if (cfg__prefix_equal(p, &(*out)[j]))
					break;
			if (j < *n_out)
				verr(ld, false, "duplicate prefix \"%s\"", shown(s, sv));
			else
				(*n_out)++;
		}
		path_pop(ld);
	}
}

static const char *const intercept_names[] = { "iptables", "ebpf" };

static void set_intercept(struct load *ld, const json_t *v, enum cfg_intercept *out)
{
	char sv[SHOWN_MAX + 4];
	const char *s;
	size_t i;

	if (!get_string(ld, v, "a string (iptables or ebpf)", &s))
		return;
	for (i = 0; i < sizeof(intercept_names) / sizeof(intercept_names[0]); i++) {
		if (strcmp(s, intercept_names[i]) == 0) {
			*out = (enum cfg_intercept)i;
			return;
		}
	}
	verr(ld, false, "unknown intercept mode \"%s\" (expected iptables or ebpf)", shown(s, sv));
}

/* intercept.ports: "6379", "8000-8100"; no addresses. */
static void set_ports(struct load *ld, const struct cfg__key *k, const json_t *v,
		      struct cfg *cfg)
{
	char sv[SHOWN_MAX + 4];
	const char *s, *why = NULL;
	struct cfg_allow *a;
	size_t i, n;

	if (!json_is_array(v)) {
		verr(ld, false, "expected an array of ports like [\"6379\", \"8000-8100\"], got %s",
		     type_name(v));
		return;
	}
	n = json_array_size(v);
	if (n < k->min || n > k->max) {
		verr(ld, false, "%zu entries: expected %llu to %llu (use ranges, or \"1-65535\" "
		     "for every port)", n, (unsigned long long)k->min, (unsigned long long)k->max);
		return;
	}
	cfg->intercept.ports = calloc(n, sizeof(cfg->intercept.ports[0]));
	if (!cfg->intercept.ports) {
		ld->nomem = true;
		return;
	}
	for (i = 0; i < n; i++) {
		a = &cfg->intercept.ports[cfg->intercept.n_ports];
		path_push_index(ld, i);
		if (!get_string(ld, json_array_get(v, i), "a string like \"6379\" or \"8000-8100\"",
				&s)) {
			/* reported */
		} else if (cfg__parse_allow(s, a, &why) < 0) {
			verr(ld, false, "invalid entry \"%s\": %s", shown(s, sv), why);
		} else if (a->family) {
			verr(ld, false, "invalid entry \"%s\": ports only (addresses go in "
			     "intercept.destinations)", shown(s, sv));
		} else {
			cfg->intercept.n_ports++;
		}
		path_pop(ld);
	}
}

static void set_section(struct load *ld, const struct cfg__key *keys, json_t *obj,
			struct cfg *cfg);

/* Sets the key k (the current path) from v. */
static void set_value(struct load *ld, const struct cfg__key *k, json_t *v, struct cfg *cfg)
{
	uint64_t n;

	switch (k->kind) {
	case CFG__SECTION:
		if (!json_is_object(v)) {
			verr(ld, false, "expected an object, got %s", type_name(v));
			return;
		}
		set_section(ld, k->sub, v, cfg);
		return;
	case CFG__UINT:
		if (get_int(ld, v, k->min, k->max, &n))
			*(unsigned *)field(cfg, k) = (unsigned)n;
		return;
	case CFG__U32:
		if (get_int(ld, v, k->min, k->max, &n))
			*(uint32_t *)field(cfg, k) = (uint32_t)n;
		return;
	case CFG__SIZE:
		get_size(ld, k, v, (uint64_t *)field(cfg, k));
		return;
	case CFG__DURATION:
		get_duration(ld, k, v, (uint64_t *)field(cfg, k));
		return;
	case CFG__BOOL:
		if (json_is_boolean(v))
			*(bool *)field(cfg, k) = json_is_true(v);
		else
			verr(ld, false, "expected true or false, got %s", type_name(v));
		return;
	case CFG__PATH:
		set_path(ld, k, v, (char **)field(cfg, k));
		return;
	case CFG__MODE:
		set_mode(ld, v, (mode_t *)field(cfg, k));
		return;
	case CFG__TRANSPORT:
		set_transport(ld, v, (enum cfg_transport *)field(cfg, k));
		return;
	case CFG__LOG_LEVEL:
		set_log_level(ld, v, (int *)field(cfg, k));
		return;
	case CFG__LISTEN:
		set_listen(ld, k, v, &cfg->listen, &cfg->n_listen);
		return;
	case CFG__TPROXY:
		set_listen(ld, k, v, &cfg->tproxy, &cfg->n_tproxy);
		return;
	case CFG__CONTROL:
		set_control(ld, v, cfg);
		return;
	case CFG__PEERS:
		set_peers(ld, k, v, cfg);
		return;
	case CFG__SERVE:
		set_prefix_list(ld, k, v, &cfg->serve, &cfg->n_serve, "10.244.1.0/24");
		return;
	case CFG__ADDR:
		set_addr(ld, k, v, (struct cfg_addr *)field(cfg, k));
		return;
	case CFG__USER:
		set_user(ld, k, v, (char **)field(cfg, k));
		return;
	case CFG__INTERCEPT:
		set_intercept(ld, v, (enum cfg_intercept *)field(cfg, k));
		return;
	case CFG__PREFIXES:
		set_prefix_list(ld, k, v, &cfg->intercept.dests, &cfg->intercept.n_dests,
				"10.0.0.0/24");
		return;
	case CFG__PORTS:
		set_ports(ld, k, v, cfg);
		return;
	}
}

/* A missing key: its default, parsed like user input. A missing section
 * is an empty one, so each of its keys takes its own default. */
static void set_default(struct load *ld, const struct cfg__key *k, struct cfg *cfg)
{
	json_error_t jerr;
	bool was = ld->in_default;
	json_t *v;

	if (k->kind == CFG__SECTION) {
		set_section(ld, k->sub, NULL, cfg);
		return;
	}
	v = json_loads(k->def, JSON_DECODE_ANY, &jerr);
	if (!v) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			ld->nomem = true;
		else
			verr(ld, false, "built-in default does not parse: %s", jerr.text);
		return;
	}
	ld->in_default = true;
	set_value(ld, k, v, cfg);
	ld->in_default = was;
	json_decref(v);
}

/* The members of one object (NULL: absent) against its schema keys. */
static void set_section(struct load *ld, const struct cfg__key *keys, json_t *obj,
			struct cfg *cfg)
{
	const struct cfg__key *k;
	json_t *v;

	if (obj)
		check_unknown(ld, obj, keys);
	for (k = keys; k->name; k++) {
		v = obj ? json_object_get(obj, k->name) : NULL;
		path_push_key(ld, k->name);
		if (v)
			set_value(ld, k, v, cfg);
		else
			set_default(ld, k, cfg);
		path_pop(ld);
	}
}

/* Rules between keys, checked once each key is valid on its own. */
static void check_cross(struct load *ld, struct cfg *cfg)
{
	char a[32], b[32];

	/* Rings are carved from the pool: one ring must fit. Both are 0 only
	 * if their own check failed, and that is already reported. */
	if (cfg->buffers.ring && cfg->buffers.pool && cfg->buffers.pool < cfg->buffers.ring) {
		cfg__fmt_size(a, sizeof(a), cfg->buffers.pool);
		cfg__fmt_size(b, sizeof(b), cfg->buffers.ring);
		path_push_key(ld, "buffers");
		path_push_key(ld, "pool");
		verr(ld, false, "%s is smaller than buffers.ring (%s)", a, b);
		path_pop(ld);
		path_pop(ld);
	}
	/* A flow's first ring is one a grown ring may reach. */
	if (cfg->buffers.ring && cfg->buffers.ring_initial > cfg->buffers.ring) {
		cfg__fmt_size(a, sizeof(a), cfg->buffers.ring_initial);
		cfg__fmt_size(b, sizeof(b), cfg->buffers.ring);
		path_push_key(ld, "buffers");
		path_push_key(ld, "ring_initial");
		verr(ld, false, "%s is larger than buffers.ring (%s)", a, b);
		path_pop(ld);
		path_pop(ld);
	}
	/* Intercepting nothing is a mistake, not a mode. */
	if (cfg->intercept.mode == CFG_INTERCEPT_EBPF && !cfg->intercept.n_dests) {
		path_push_key(ld, "intercept");
		path_push_key(ld, "destinations");
		verr(ld, false, "mode \"ebpf\" needs at least one prefix to intercept connects to");
		path_pop(ld);
		path_pop(ld);
	}
	/* The host routes every packet with client_mark to itself: the
	 * daemon's connections to other hosts must not carry it. */
	if (cfg->mark && cfg->client_mark == cfg->mark) {
		path_push_key(ld, "client_mark");
		verr(ld, false, "%u is also \"mark\": connections to other hosts would be routed back here",
		     (unsigned)cfg->client_mark);
		path_pop(ld);
	}
}

/* Line and column of byte offset off in text, counted as jansson does. */
static void offset_pos(const char *text, size_t off, unsigned *line, unsigned *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

/*
 * Two mistakes jansson reports in words that do not help: a byte order
 * mark ("invalid token near '<invisible>'") and a NUL byte, which shows up
 * as "end of file expected near end of file". True if one was reported.
 */
static bool check_text(struct load *ld, const char *text, size_t len)
{
	unsigned line, col;
	const char *nul;

	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		add_error(ld, 1, 1, "(parse)", "the file starts with a UTF-8 byte order mark; "
			  "save it without one");
		return true;
	}
	nul = memchr(text, '\0', len);
	if (nul) {
		offset_pos(text, (size_t)(nul - text), &line, &col);
		add_error(ld, line, col, "(parse)", "NUL byte in the text (is this a text file?)");
		return true;
	}
	return false;
}

static void parse_error(struct load *ld, const json_error_t *jerr)
{
	add_error(ld, jerr->line > 0 ? (unsigned)jerr->line : 1,
		  jerr->column > 0 ? (unsigned)jerr->column : 1, "(parse)", jerr->text);
}

/*
 * Parses len bytes of text (which need not be NUL-terminated) named source
 * in errors. The one place that builds a struct cfg.
 */
static int load_buf(const char *text, size_t len, const char *source,
		    struct cfg **out, struct cfg_errors *errs)
{
	struct load ld = { .source = source };
	json_error_t jerr;
	struct cfg *cfg;
	json_t *root;
	int r;

	if (check_text(&ld, text, len)) {
		r = -EINVAL;
		goto out_errors;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		/* jansson fails to set up its lexer without a word, and that
		 * only happens when an allocation fails. */
		if (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0]) {
			r = -ENOMEM;
			goto out_errors;
		}
		parse_error(&ld, &jerr);
		r = -EINVAL;
		goto out_errors;
	}
	/* -EINVAL here would mean our scanner disagrees with jansson; errors
	 * then still appear, at the nearest position known. */
	r = cfg__pos_index_build(&ld.pos, text, len);
	if (r == -ENOMEM)
		goto out_free_pos;

	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		r = -ENOMEM;
		goto out_free_pos;
	}
	cfg->source = strdup(source);
	if (!cfg->source) {
		r = -ENOMEM;
		goto out_free_cfg;
	}
	if (json_is_object(root)) {
		set_section(&ld, cfg__schema, root, cfg);
		check_cross(&ld, cfg);
	} else {
		verr(&ld, false, "the configuration must be a JSON object ({...}), not %s",
		     type_name(root));
	}
	r = ld.nomem ? -ENOMEM : ld.n_errs ? -EINVAL : 0;
	if (r == 0) {
		*out = cfg;
		cfg = NULL;
	}

out_free_cfg:
	cfg_free(cfg);
out_free_pos:
	cfg__pos_index_free(&ld.pos);
	cfg__buf_free(&ld.path);
	json_decref(root);
out_errors:
	finish_errors(&ld, errs);
	return ld.nomem ? -ENOMEM : r;
}

static void start(struct cfg **out, struct cfg_errors *errs)
{
	*out = NULL;
	if (errs)
		*errs = (struct cfg_errors){ 0 };
}

int cfg_load_string(const char *json, const char *source,
		    struct cfg **out, struct cfg_errors *errs)
{
	start(out, errs);
	if (!json)
		return -EINVAL;
	return load_buf(json, strlen(json), source ? source : "<string>", out, errs);
}

int cfg_load_default(struct cfg **out, struct cfg_errors *errs)
{
	start(out, errs);
	return load_buf(cfg_default_json(), strlen(cfg_default_json()), "<default>", out, errs);
}

/* "path: what: strerror" as the one error line of a file we cannot read. */
static void file_error(const char *path, const char *what, int err, struct cfg_errors *errs)
{
	struct cfg__buf b = { 0 };
	int r = 0;

	if (!errs)
		return;
	r |= cfg__buf_add_clean(&b, path, strlen(path));
	r |= cfg__buf_addf(&b, ": %s: %s\n", what,
			   err == EFBIG ? "larger than 16 MiB, not a config file" :
			   strerror(err));
	if (r < 0) {
		cfg__buf_free(&b);
		return;
	}
	errs->text = b.s;
	errs->len = b.len;
	errs->count = 1;
}

int cfg_load_file(const char *path, struct cfg **out, struct cfg_errors *errs)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, r;

	start(out, errs);
	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		file_error(path, "cannot open", -r, errs);
		return r;
	}
	/* Read to EOF rather than trusting st_size: the path may be a pipe
	 * or a file still being written. */
	for (;;) {
		if (len == cap) {
			if (cap >= CFG_FILE_MAX) {
				r = -EFBIG;
				file_error(path, "cannot read", EFBIG, errs);
				goto out_free_buf;
			}
			cap = cap ? cap * 2 : 4096;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				r = -ENOMEM;
				goto out_free_buf;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			file_error(path, "cannot read", -r, errs);
			goto out_free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	r = load_buf(buf ? buf : "", len, path, out, errs);

out_free_buf:
	free(buf);
	close(fd);
	return r;
}

void cfg_free(struct cfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->source);
	free(cfg->listen);
	free(cfg->tproxy);
	for (size_t i = 0; i < cfg->n_peers; i++)
		free(cfg->peers[i].allow);
	free(cfg->peers);
	free(cfg->serve);
	free(cfg->intercept.cgroup);
	free(cfg->intercept.dests);
	free(cfg->intercept.ports);
	free(cfg->shm.dir);
	free(cfg->stats.socket);
	free(cfg->auth.psk_file);
	free(cfg->user);
	free(cfg);
}

void cfg_errors_free(struct cfg_errors *errs)
{
	if (!errs)
		return;
	free(errs->text);
	*errs = (struct cfg_errors){ 0 };
}
