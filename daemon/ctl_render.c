/* SPDX-License-Identifier: MIT */
/*
 * Renderers of smcproxyctl (see ctl_render.h). The shapes they read are
 * those of smcproxyctl(8); anything they do not recognise is
 * shown generically rather than dropped, so that a newer daemon's counters
 * stay visible through an older smcproxyctl.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_render.h"

#define TBL_MAXCOL 16

/*
 * Widest a column is padded to. A longer cell is printed whole but does not
 * widen its column: a daemon that sends a megabyte string would otherwise
 * have every other row padded with a megabyte of blanks.
 */
#define TBL_MAXWIDTH 64

/*
 * A text table: cells are copied in, widths are computed at print time,
 * numeric columns are right-aligned. Out of memory is remembered in err and
 * reported by tbl_print(), so that building a table needs no checks at
 * every cell. A table may have no columns (a list whose entries have no
 * fields): its rows are counted but hold nothing, and it prints nothing.
 */
struct tbl {
	size_t ncol;
	size_t nrow;
	size_t cap;
	char **cell;			/* nrow * ncol, NULL for an empty cell */
	bool right[TBL_MAXCOL];
	int err;
};

static void tbl_init(struct tbl *t, size_t ncol)
{
	memset(t, 0, sizeof(*t));
	t->ncol = ncol < TBL_MAXCOL ? ncol : TBL_MAXCOL;
}

static void tbl_free(struct tbl *t)
{
	for (size_t i = 0; i < t->nrow * t->ncol; i++)
		free(t->cell[i]);
	free(t->cell);
	t->cell = NULL;
	t->nrow = t->cap = 0;
}

/* Starts a new row of empty cells. */
static void tbl_row(struct tbl *t)
{
	char **cell;

	if (t->err)
		return;
	/* Nothing to store without columns; and realloc(cell, 0) would free
	 * cell and return NULL, leaving t->cell dangling. */
	if (t->ncol == 0) {
		t->nrow++;
		return;
	}
	if (t->nrow == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;

		if (cap > SIZE_MAX / sizeof(*cell) / t->ncol) {
			t->err = -ENOMEM;
			return;
		}
		cell = realloc(t->cell, cap * t->ncol * sizeof(*cell));
		if (!cell) {
			t->err = -ENOMEM;
			return;
		}
		t->cell = cell;
		t->cap = cap;
	}
	memset(&t->cell[t->nrow * t->ncol], 0, t->ncol * sizeof(*t->cell));
	t->nrow++;
}

/*
 * Length of the terminal control character at s, or 0: C0 controls and
 * DEL (one byte), and C1 controls (U+0080..U+009F, two bytes in UTF-8),
 * which some terminals obey as CSI and the like.
 */
static size_t ctrl_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (p[0] < 0x20 || p[0] == 0x7f)
		return 1;
	if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
		return 2;
	return 0;
}

/*
 * Replaces, in place, each control character of s by one '?'. Text from the
 * daemon goes to a terminal: an escape sequence in a key or a string must
 * not move the cursor or retitle the window, and a newline must not break
 * a table row in two.
 */
static void scrub_controls(char *s)
{
	char *w = s;

	while (*s) {
		size_t k = ctrl_len(s);

		if (k) {
			*w++ = '?';
			s += k;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* fputs() with the replacement of scrub_controls(). */
static void put_text(FILE *out, const char *s)
{
	while (*s) {
		size_t n = 0, k;

		while (s[n] && !ctrl_len(s + n))
			n++;
		fwrite(s, 1, n, out);
		s += n;
		k = *s ? ctrl_len(s) : 0;
		if (k) {
			fputc('?', out);
			s += k;
		}
	}
}

/* Sets a cell of the last row. */
__attribute__((format(printf, 3, 4)))
static void tbl_set(struct tbl *t, size_t col, const char *fmt, ...)
{
	va_list ap;
	char **cell;

	if (t->err || t->nrow == 0 || col >= t->ncol)
		return;
	cell = &t->cell[(t->nrow - 1) * t->ncol + col];
	free(*cell);
	va_start(ap, fmt);
	if (vasprintf(cell, fmt, ap) < 0) {
		*cell = NULL;
		t->err = -ENOMEM;
	} else {
		scrub_controls(*cell);
	}
	va_end(ap);
}

/* Columns are separated by two spaces; a left-aligned last column is not
 * padded, so lines carry no trailing blanks. A table without columns
 * prints nothing: the caller says why. */
static int tbl_print(FILE *out, const struct tbl *t, const char *indent)
{
	size_t width[TBL_MAXCOL] = { 0 };

	if (t->err)
		return t->err;
	if (t->ncol == 0)
		return 0;
	for (size_t r = 0; r < t->nrow; r++)
		for (size_t c = 0; c < t->ncol; c++) {
			const char *s = t->cell[r * t->ncol + c];
			size_t n = s ? strlen(s) : 0;

			if (n > TBL_MAXWIDTH)
				n = TBL_MAXWIDTH;
			if (n > width[c])
				width[c] = n;
		}
	for (size_t r = 0; r < t->nrow; r++) {
		size_t last = 0;

		/* Trailing empty cells are not printed either. */
		for (size_t c = 0; c < t->ncol; c++)
			if (t->cell[r * t->ncol + c])
				last = c;
		fputs(indent, out);
		for (size_t c = 0; c <= last; c++) {
			const char *s = t->cell[r * t->ncol + c];
			int w = (int)width[c];

			if (!s)
				s = "";
			if (c)
				fputs("  ", out);
			if (t->right[c])
				fprintf(out, "%*s", w, s);
			else if (c == last)
				fputs(s, out);
			else
				fprintf(out, "%-*s", w, s);
		}
		fputc('\n', out);
	}
	return 0;
}

/*
 * Sums of counters are kept in 128 bits: the daemon's counters are 64-bit,
 * and a sum of a few of them (or of a hostile daemon's INT64_MAX) does not
 * fit in 64. Both gcc and clang have the type on every 64-bit target.
 */
typedef __int128 ctl_i128;
typedef unsigned __int128 ctl_u128;

/* Writes the magnitude mag, with a '-' when neg, grouped by thousands. */
static char *fmt_grouped(char *buf, size_t buflen, bool neg, ctl_u128 mag)
{
	char digits[48], tmp[72];	/* 2^128 has 39 digits: 12 commas, a sign */
	size_t nd = 0, j = 0;

	if (!buflen)
		return buf;
	do {
		digits[nd++] = (char)('0' + (int)(mag % 10));
		mag /= 10;
	} while (mag);
	if (neg)
		tmp[j++] = '-';
	/* digits[] holds them least significant first. */
	for (size_t i = nd; i-- > 0;) {
		tmp[j++] = digits[i];
		if (i && i % 3 == 0)
			tmp[j++] = ',';
	}
	tmp[j] = '\0';
	snprintf(buf, buflen, "%s", tmp);
	return buf;
}

char *ctl_fmt_count(char *buf, size_t buflen, int64_t n)
{
	/* Negated in unsigned arithmetic: -INT64_MIN does not exist. */
	return fmt_grouped(buf, buflen, n < 0,
			   n < 0 ? (ctl_u128)0 - (ctl_u128)n : (ctl_u128)n);
}

/* ctl_fmt_count() for a 128-bit sum. */
static char *fmt_count128(char *buf, size_t buflen, ctl_i128 n)
{
	return fmt_grouped(buf, buflen, n < 0,
			   n < 0 ? (ctl_u128)0 - (ctl_u128)n : (ctl_u128)n);
}

char *ctl_fmt_duration(char *buf, size_t buflen, int64_t ms)
{
	int64_t s, m, h, d;

	if (ms < 0)
		ms = 0;
	s = ms / 1000;
	m = s / 60;
	h = m / 60;
	d = h / 24;
	if (ms < 1000)
		snprintf(buf, buflen, "%" PRId64 "ms", ms);
	else if (s < 60)
		snprintf(buf, buflen, "%" PRId64 ".%" PRId64 "s", s, ms % 1000 / 100);
	else if (m < 60)
		snprintf(buf, buflen, "%" PRId64 "m %02" PRId64 "s", m, s % 60);
	else if (h < 24)
		snprintf(buf, buflen, "%" PRId64 "h %02" PRId64 "m %02" PRId64 "s",
			 h, m % 60, s % 60);
	else
		snprintf(buf, buflen, "%" PRId64 "d %02" PRId64 "h %02" PRId64 "m",
			 d, h % 24, m % 60);
	return buf;
}

/* "12.1 KiB" for byte counts, "" below 1 KiB where the count says it all. */
static const char *fmt_iec(char *buf, size_t buflen, int64_t n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = -1;

	buf[0] = '\0';
	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	if (u >= 0)
		snprintf(buf, buflen, "(%.1f %s)", v, unit[u]);
	return buf;
}

/* A JSON scalar as table text: integers grouped, strings bare, others
 * compact JSON. Returns a pointer to buf or into the value. */
static const char *fmt_value(char *buf, size_t buflen, const json_t *v)
{
	char *dump;

	if (!v)
		return "-";
	if (json_is_integer(v))
		return ctl_fmt_count(buf, buflen, json_integer_value(v));
	if (json_is_string(v))
		return json_string_value(v);
	dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(buf, buflen, "%s", dump ? dump : "?");
	free(dump);
	return buf;
}

static json_int_t int_member(const json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

/* "connect_failures" -> "connect failures" */
static void humanise(char *buf, size_t buflen, const char *key)
{
	snprintf(buf, buflen, "%s", key);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = ' ';
}

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

/* ---- human tables --------------------------------------------------- */

static bool stats_key_in_header(const char *key)
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

/*
 * The flows-by-mode table. Modes are the union of the keys of "active" and
 * "closed", in order of first appearance, so a new mode gets a column; past
 * TBL_MAXCOL - 2 of them the rest are left out, and a note says so. The
 * total of a row is the exact sum of all its integer members, shown ones
 * or not (in 128 bits: 64-bit counters can add up past INT64_MAX), or "?"
 * when a member is not an integer and cannot be added up.
 */
static int stats_flows_table(FILE *out, const json_t *flows)
{
	const json_t *active = json_object_get(flows, "active");
	const json_t *closed = json_object_get(flows, "closed");
	const char *mode[TBL_MAXCOL - 2];
	const json_t *v;
	const char *key;
	size_t nmode = 0;
	bool more = false;
	struct tbl t;
	char buf[64];
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		json_object_foreach((json_t *)(pass ? closed : active), key, v) {
			size_t i;

			for (i = 0; i < nmode; i++)
				if (strcmp(mode[i], key) == 0)
					break;
			if (i < nmode)
				continue;
			if (nmode < TBL_MAXCOL - 2)
				mode[nmode++] = key;
			else
				more = true;
		}
	}

	tbl_init(&t, nmode + 2);
	for (size_t c = 1; c < t.ncol; c++)
		t.right[c] = true;
	tbl_row(&t);
	tbl_set(&t, 0, "flows");
	for (size_t i = 0; i < nmode; i++)
		tbl_set(&t, i + 1, "%s", mode[i]);
	tbl_set(&t, nmode + 1, "total");
	for (int pass = 0; pass < 2; pass++) {
		const json_t *row = pass ? closed : active;
		ctl_i128 sum = 0;
		bool summable = true;

		if (!json_is_object(row))
			continue;
		tbl_row(&t);
		tbl_set(&t, 0, "%s", pass ? "closed" : "active");
		for (size_t i = 0; i < nmode; i++) {
			v = json_object_get(row, mode[i]);
			tbl_set(&t, i + 1, "%s", fmt_value(buf, sizeof(buf), v));
		}
		json_object_foreach((json_t *)row, key, v) {
			if (json_is_integer(v))
				sum += json_integer_value(v);
			else
				summable = false;
		}
		if (summable)
			tbl_set(&t, nmode + 1, "%s", fmt_count128(buf, sizeof(buf), sum));
		else
			tbl_set(&t, nmode + 1, "?");
	}
	/* "accepted" and any other plain count of flows. */
	json_object_foreach((json_t *)flows, key, v) {
		if (!json_is_integer(v))
			continue;
		tbl_row(&t);
		humanise(buf, sizeof(buf), key);
		tbl_set(&t, 0, "%s", buf);
		tbl_set(&t, nmode + 1, "%s",
			ctl_fmt_count(buf, sizeof(buf), json_integer_value(v)));
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	if (rc == 0 && more)
		fprintf(out, "(more than %d modes: the rest are counted in the totals; "
			"--json shows them)\n", TBL_MAXCOL - 2);
	return rc;
}

/* A column of an array-of-objects table: the member and its heading; id
 * columns are names (a worker or CQ index), printed without grouping. */
struct stats_col {
	const char *key, *head;
	bool id;
};

/* One row per element of arr, the columns given; the first column is
 * left-aligned, the rest right-aligned. Members not listed are left to
 * --json. */
static int stats_array_table(FILE *out, const json_t *arr, const struct stats_col *col,
			     size_t ncol)
{
	const json_t *e;
	struct tbl t;
	char buf[64];
	size_t i;
	int rc;

	tbl_init(&t, ncol);
	tbl_row(&t);
	for (size_t c = 0; c < ncol; c++) {
		t.right[c] = c > 0;
		tbl_set(&t, c, "%s", col[c].head);
	}
	json_array_foreach(arr, i, e) {
		tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			const json_t *v = json_object_get(e, col[c].key);

			if (col[c].id && json_is_integer(v))
				tbl_set(&t, c, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			else
				tbl_set(&t, c, "%s", fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	return rc;
}

/* "per_worker": one row per worker. */
static const struct stats_col stats_worker_cols[] = {
	{ "worker", "worker", true },
	{ "flows_active", "active", false },
	{ "flows_accepted", "accepted", false },
	{ "bytes_in", "bytes in", false },
	{ "bytes_out", "bytes out", false },
};

/*
 * "cq": one row per completion queue of each worker's pool (rdma only):
 * how often it was polled, what the polls found, how often it was re-armed
 * and woke the loop.
 */
static const struct stats_col stats_cq_cols[] = {
	{ "worker", "worker", true },
	{ "cq", "cq", true },
	{ "links", "links", false },
	{ "polls", "polls", false },
	{ "completions", "completions", false },
	{ "empty_polls", "empty polls", false },
	{ "rearms", "rearms", false },
	{ "events", "events", false },
	{ "rearm_failures", "rearm failures", false },
};

static void note_not_answering(FILE *out, const json_t *reply, const char *what);

static int render_stats_table(FILE *out, const json_t *st)
{
	const json_t *v, *sub;
	const char *key, *subkey;
	char buf[128], name[128], iec[32];
	struct tbl t;
	int rc;

	/* Header: who answered and for how long it has run. */
	v = json_object_get(st, "version");
	fputs("smcproxyd ", out);
	put_text(out, json_is_string(v) && json_string_length(v) ?
		 json_string_value(v) : "(unknown version)");
	if (json_is_integer(json_object_get(st, "pid")))
		fprintf(out, ", pid %" JSON_INTEGER_FORMAT, int_member(st, "pid"));
	if (json_is_integer(json_object_get(st, "uptime_ms")))
		fprintf(out, ", up %s", ctl_fmt_duration(buf, sizeof(buf),
							 int_member(st, "uptime_ms")));
	if (json_is_integer(json_object_get(st, "workers")))
		fprintf(out, ", %" JSON_INTEGER_FORMAT " worker%s",
			int_member(st, "workers"),
			int_member(st, "workers") == 1 ? "" : "s");
	if (json_is_integer(json_object_get(st, "reloads")))
		fprintf(out, ", %" JSON_INTEGER_FORMAT " reload%s",
			int_member(st, "reloads"),
			int_member(st, "reloads") == 1 ? "" : "s");
	fputs("\n\n", out);

	if (json_is_object(json_object_get(st, "flows"))) {
		rc = stats_flows_table(out, json_object_get(st, "flows"));
		if (rc < 0)
			return rc;
		fputc('\n', out);
	}

	v = json_object_get(st, "per_worker");
	if (json_is_array(v) && json_array_size(v)) {
		rc = stats_array_table(out, v, stats_worker_cols,
				       sizeof(stats_worker_cols) / sizeof(stats_worker_cols[0]));
		if (rc < 0)
			return rc;
		fputc('\n', out);
	}

	v = json_object_get(st, "cq");
	if (json_is_array(v) && json_array_size(v)) {
		rc = stats_array_table(out, v, stats_cq_cols,
				       sizeof(stats_cq_cols) / sizeof(stats_cq_cols[0]));
		if (rc < 0)
			return rc;
	}
	note_not_answering(out, st, "CQ counters");
	if ((json_is_array(v) && json_array_size(v)) ||
	    json_array_size(json_object_get(st, "workers_not_answering")))
		fputc('\n', out);

	v = json_object_get(st, "fallback");
	if (json_is_object(v)) {
		tbl_init(&t, 2);
		t.right[1] = true;
		tbl_row(&t);
		tbl_set(&t, 0, "fallback reason");
		tbl_set(&t, 1, "flows");
		json_object_foreach((json_t *)v, key, sub) {
			tbl_row(&t);
			tbl_set(&t, 0, "%s", key);
			tbl_set(&t, 1, "%s", fmt_value(buf, sizeof(buf), sub));
		}
		rc = tbl_print(out, &t, "");
		tbl_free(&t);
		if (rc < 0)
			return rc;
		fputc('\n', out);
	}

	/* Every other member, in the daemon's order: plain counters, and
	 * objects of counters ("bytes": {"in", "out"}) one row per member. */
	tbl_init(&t, 3);
	t.right[1] = true;
	tbl_row(&t);
	tbl_set(&t, 0, "counter");
	tbl_set(&t, 1, "value");
	json_object_foreach((json_t *)st, key, v) {
		if (stats_key_in_header(key))
			continue;
		if (!json_is_object(v)) {
			tbl_row(&t);
			humanise(name, sizeof(name), key);
			tbl_set(&t, 0, "%s", name);
			tbl_set(&t, 1, "%s", fmt_value(buf, sizeof(buf), v));
			continue;
		}
		json_object_foreach((json_t *)v, subkey, sub) {
			tbl_row(&t);
			humanise(name, sizeof(name), key);
			tbl_set(&t, 0, "%s %s", name, subkey);
			tbl_set(&t, 1, "%s", fmt_value(buf, sizeof(buf), sub));
			if (strcmp(key, "bytes") == 0 && json_is_integer(sub) &&
			    *fmt_iec(iec, sizeof(iec), json_integer_value(sub)))
				tbl_set(&t, 2, "%s", iec);
		}
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	return rc;
}

static int render_flows_table(FILE *out, const json_t *reply, const json_t *flows)
{
	/* ids are not digit-grouped: they are names, not quantities. */
	enum col_kind { COL_ID, COL_TEXT, COL_COUNT, COL_AGE };
	static const struct {
		const char *key, *head;
		enum col_kind kind;
	} col[] = {
		{ "id", "ID", COL_ID },
		{ "worker", "WORKER", COL_ID },
		{ "mode", "MODE", COL_TEXT },
		{ "reason", "REASON", COL_TEXT },
		{ "state", "STATE", COL_TEXT },
		{ "client", "CLIENT", COL_TEXT },
		{ "dest", "DEST", COL_TEXT },
		{ "bytes_in", "IN", COL_COUNT },
		{ "bytes_out", "OUT", COL_COUNT },
		{ "age_ms", "AGE", COL_AGE },
	};
	const size_t ncol = sizeof(col) / sizeof(col[0]);
	size_t i, n = json_array_size(flows);
	const json_t *f;
	struct tbl t;
	char buf[128];
	int rc;

	if (n == 0) {
		fputs("no active flows\n", out);
		return 0;
	}
	tbl_init(&t, ncol);
	tbl_row(&t);
	for (size_t c = 0; c < ncol; c++) {
		t.right[c] = col[c].kind != COL_TEXT;
		tbl_set(&t, c, "%s", col[c].head);
	}
	json_array_foreach(flows, i, f) {
		tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			const json_t *v = json_object_get(f, col[c].key);

			if (json_is_integer(v) && col[c].kind == COL_AGE)
				tbl_set(&t, c, "%s", ctl_fmt_duration(buf, sizeof(buf),
							json_integer_value(v)));
			else if (json_is_integer(v) && col[c].kind == COL_ID)
				tbl_set(&t, c, "%" JSON_INTEGER_FORMAT,
					json_integer_value(v));
			else
				tbl_set(&t, c, "%s", fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	if (rc < 0)
		return rc;
	fprintf(out, "\n%zu flow%s", n, n == 1 ? "" : "s");
	if (json_is_true(json_object_get(reply, "truncated")))
		fputs(" listed; more are active (the daemon lists at most 10000)", out);
	fputc('\n', out);
	return 0;
}

/* A worker that did not answer within the daemon's deadline: its entries
 * are missing from the list, and the reader must know. */
static void note_not_answering(FILE *out, const json_t *reply, const char *what)
{
	const json_t *late = json_object_get(reply, "workers_not_answering"), *v;
	size_t i;

	if (!json_is_array(late) || !json_array_size(late))
		return;
	fputs("(not listed: the ", out);
	fputs(what, out);
	fprintf(out, " of worker%s", json_array_size(late) == 1 ? "" : "s");
	json_array_foreach(late, i, v) {
		if (json_is_integer(v))
			fprintf(out, "%s%" JSON_INTEGER_FORMAT, i ? ", " : " ",
				json_integer_value(v));
	}
	fputs(", which did not answer in time)\n", out);
}

/* Whether key is one of the NULL-terminated keys (none when NULL). */
static bool key_in(const char *key, const char *const *keys)
{
	for (; keys && *keys; keys++)
		if (strcmp(key, *keys) == 0)
			return true;
	return false;
}

/*
 * links and peers: a table whose columns are the union of the members of
 * the entries (but those in skip, which the caller shows elsewhere), in
 * order of first appearance. It shows whatever the daemon sends: an entry
 * that is not an object goes whole into an ENTRY column, members past
 * TBL_MAXCOL columns are left out with a note, and entries that have no
 * members at all (there are then no columns) are counted in one line.
 */

static int render_list_table(FILE *out, const char *what, const json_t *list,
			     const char *const *skip)
{
	const char *colkey[TBL_MAXCOL];	/* NULL: the ENTRY column */
	size_t ncol = 0, n = json_array_size(list), i;
	bool more = false;
	const json_t *e, *v;
	const char *key;
	struct tbl t;
	char buf[256];
	int rc;

	if (n == 0) {
		fprintf(out, "no %s\n", what);
		return 0;
	}
	json_array_foreach(list, i, e) {
		size_t c;

		if (!json_is_object(e)) {
			for (c = 0; c < ncol && colkey[c]; c++)
				;
			if (c == ncol && ncol < TBL_MAXCOL)
				colkey[ncol++] = NULL;
			else if (c == ncol)
				more = true;
			continue;
		}
		json_object_foreach((json_t *)e, key, v) {
			if (key_in(key, skip))
				continue;
			for (c = 0; c < ncol; c++)
				if (colkey[c] && strcmp(colkey[c], key) == 0)
					break;
			if (c == ncol && ncol < TBL_MAXCOL)
				colkey[ncol++] = key;
			else if (c == ncol)
				more = true;
		}
	}
	if (ncol == 0) {
		fprintf(out, "%s: %zu entr%s, none with any fields\n", what, n,
			n == 1 ? "y" : "ies");
		return 0;
	}
	tbl_init(&t, ncol);
	tbl_row(&t);
	for (size_t c = 0; c < ncol; c++) {
		char *p;

		snprintf(buf, sizeof(buf), "%s", colkey[c] ?: "entry");
		for (p = buf; *p; p++)
			*p = (char)(*p == '_' ? ' ' : (*p >= 'a' && *p <= 'z') ? *p - 32 : *p);
		tbl_set(&t, c, "%s", buf);
	}
	json_array_foreach(list, i, e) {
		tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			if (colkey[c])
				v = json_object_get(e, colkey[c]);
			else
				v = json_is_object(e) ? NULL : e;
			if (json_is_number(v))
				t.right[c] = true;
			tbl_set(&t, c, "%s", fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	if (rc == 0 && more)
		fprintf(out, "(more than %d fields: the rest are left out; "
			"--json shows them)\n", TBL_MAXCOL);
	return rc;
}

/* The members an rdma link adds to its entry of `links` (rdma_link_info()
 * through ctl_link.c). */
static const char *const links_rdma_keys[] = {
	"device", "port", "gid", "qp_num", "peer_qp_num", "max_inline",
	"wr_in_flight", "sq_depth", "cq", "relaxed_ordering", NULL,
};

/*
 * links: the common members in one table (render_list_table(), so that a
 * newer daemon's members still show), then, when there are rdma links, a
 * second table of their device and queue pair, one row per rdma link,
 * named by worker, group and link index as in the first.
 */
static int render_links_table(FILE *out, const json_t *links)
{
	static const struct {
		const char *key, *head;
		bool id;		/* a name, not a quantity: no grouping */
	} col[] = {
		{ "worker", "WORKER", true },
		{ "lgr", "LGR", true },
		{ "link", "LINK", true },
		{ "device", "DEVICE", false },
		{ "port", "PORT", true },
		{ "gid", "GID", false },
		{ "qp_num", "QPN", true },
		{ "peer_qp_num", "PEER QPN", true },
		{ "max_inline", "INLINE", false },
		{ "wr_in_flight", "IN FLIGHT", false },
		{ "sq_depth", "SQ DEPTH", false },
		{ "cq", "CQ", true },
		{ "relaxed_ordering", "RELAXED", false },
	};
	const size_t ncol = sizeof(col) / sizeof(col[0]);
	const json_t *e, *v;
	size_t i, nrdma = 0;
	struct tbl t;
	char buf[128];
	int rc;

	rc = render_list_table(out, "links", links, links_rdma_keys);
	if (rc < 0)
		return rc;
	json_array_foreach(links, i, e) {
		const char *key;

		json_object_foreach((json_t *)e, key, v) {
			if (key_in(key, links_rdma_keys)) {
				nrdma++;
				break;
			}
		}
	}
	if (!nrdma)
		return 0;
	fputs("\nrdma links:\n", out);
	tbl_init(&t, ncol);
	tbl_row(&t);
	for (size_t c = 0; c < ncol; c++)
		tbl_set(&t, c, "%s", col[c].head);
	json_array_foreach(links, i, e) {
		const char *key;
		bool rdma = false;

		json_object_foreach((json_t *)e, key, v)
			rdma = rdma || key_in(key, links_rdma_keys);
		if (!rdma)
			continue;
		tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			v = json_object_get(e, col[c].key);
			if (json_is_number(v))
				t.right[c] = true;
			if (col[c].id && json_is_integer(v))
				tbl_set(&t, c, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			else if (json_is_boolean(v))
				tbl_set(&t, c, "%s", json_is_true(v) ? "yes" : "no");
			else
				tbl_set(&t, c, "%s", fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = tbl_print(out, &t, "");
	tbl_free(&t);
	return rc;
}

/* debug: what was done, then any other member as "key: value". */
static int render_debug_table(FILE *out, const json_t *r)
{
	const char *op = json_string_value(json_object_get(r, "op"));
	const json_t *v;
	const char *key;
	char buf[256];

	if (op && strcmp(op, "fail-link") == 0) {
		fputs("fail-link: link ", out);
		put_text(out, fmt_value(buf, sizeof(buf), json_object_get(r, "link")));
		fputs(" of link group ", out);
		put_text(out, fmt_value(buf, sizeof(buf), json_object_get(r, "lgr")));
		fputs(" on worker ", out);
		put_text(out, fmt_value(buf, sizeof(buf), json_object_get(r, "worker")));
		fputs(" was failed; its flows move to a surviving link of the group, or are "
		      "reset when there is none\n", out);
	}
	json_object_foreach((json_t *)r, key, v) {
		if (op && strcmp(op, "fail-link") == 0 &&
		    (!strcmp(key, "op") || !strcmp(key, "link") || !strcmp(key, "lgr") ||
		     !strcmp(key, "worker")))
			continue;
		put_text(out, key);
		fputs(": ", out);
		put_text(out, fmt_value(buf, sizeof(buf), v));
		fputc('\n', out);
	}
	return 0;
}

/* A member of the reload reply as text: fmt_value() of it, or absent when
 * it is missing, null or an empty string. Not only strings: a daemon that
 * sends a list of settings should not read as "(no change)". */
static const char *reload_field(char *buf, size_t buflen, const json_t *r,
				const char *key, const char *absent)
{
	const json_t *v = json_object_get(r, key);

	if (!v || json_is_null(v) ||
	    (json_is_string(v) && json_string_length(v) == 0))
		return absent;
	return fmt_value(buf, buflen, v);
}

static int render_reload_table(FILE *out, const json_t *r)
{
	char sbuf[256], abuf[256], rbuf[256], buf[256];
	const char *source = reload_field(sbuf, sizeof(sbuf), r, "source",
					  "the configuration");
	const char *applied = reload_field(abuf, sizeof(abuf), r, "applied",
					   "(no change)");
	const char *restart = reload_field(rbuf, sizeof(rbuf), r, "restart_needed",
					   NULL);
	const json_t *v;
	const char *key;

	fputs("reloaded ", out);
	put_text(out, source);
	fputs("\napplied:        ", out);
	put_text(out, applied);
	fputs("\nrestart needed: ", out);
	put_text(out, restart ?: "(none)");
	fputc('\n', out);
	json_object_foreach((json_t *)r, key, v) {
		if (strcmp(key, "applied") && strcmp(key, "restart_needed") &&
		    strcmp(key, "source")) {
			put_text(out, key);
			fputs(": ", out);
			put_text(out, fmt_value(buf, sizeof(buf), v));
			fputc('\n', out);
		}
	}
	if (restart)
		fputs("(restart smcproxyd to apply the settings listed as needing it)\n", out);
	return 0;
}

/* ---- Prometheus text exposition format 0.0.4 -------------------------- */

/* Label values escape backslash, double quote and newline. */
static void prom_label_value(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '"')
			fputs("\\\"", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

/* Metric and label names: [a-zA-Z_:][a-zA-Z0-9_:]*; anything else
 * becomes '_' (our keys are already snake_case). */
static void prom_name(FILE *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  c == '_' || c == ':' || (p != s && c >= '0' && c <= '9');

		fputc(ok ? c : '_', out);
	}
}

/* HELP text escapes backslash and newline: a key with a newline must not
 * start a line of its own (a forged sample). */
static void prom_help_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

static void prom_family(FILE *out, const char *name, const char *type,
			const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_number(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		fprintf(out, "%.17g", json_real_value(v));
	else if (json_is_true(v))
		fputs("1", out);
	else
		fputs("0", out);
}

/* One family whose samples are the numeric members of obj, labelled
 * label="<member name>". */
static void prom_labelled(FILE *out, const char *name, const char *type,
			  const char *help, const char *label, const json_t *obj)
{
	const char *key;
	const json_t *v;

	if (!json_is_object(obj))
		return;
	prom_family(out, name, type, help);
	json_object_foreach((json_t *)obj, key, v) {
		if (!json_is_number(v))
			continue;
		fprintf(out, "%s{%s=\"", name, label);
		prom_label_value(out, key);
		fputs("\"} ", out);
		prom_number(out, v);
		fputc('\n', out);
	}
}

static void prom_scalar(FILE *out, const char *name, const char *type,
			const char *help, const json_t *v)
{
	prom_family(out, name, type, help);
	fprintf(out, "%s ", name);
	prom_number(out, v);
	fputc('\n', out);
}

/* Fields of the stats reply with a known meaning. Members not listed here
 * (and not handled specially below) come out untyped. */
static const struct {
	const char *key, *name, *type, *help;
} prom_stats_scalars[] = {
	{ "workers", "smcproxy_workers", "gauge",
	  "Worker threads (event loops) of smcproxyd." },
	{ "reloads", "smcproxy_reloads_total", "counter",
	  "Configuration reloads applied since start." },
	{ "connect_failures", "smcproxy_connect_failures_total", "counter",
	  "Outbound connects that were refused or found no route." },
	{ "connect_timeouts", "smcproxy_connect_timeouts_total", "counter",
	  "Outbound connects abandoned after fallback.connect_timeout." },
	{ "resets", "smcproxy_resets_total", "counter",
	  "Flows ended by a reset on either leg." },
	{ "accept_pauses", "smcproxy_accept_pauses_total", "counter",
	  "Times accepting paused for lack of file descriptors or buffers." },
	{ "loops_refused", "smcproxy_loops_refused_total", "counter",
	  "Connections closed because they were not redirected or aimed at the daemon itself." },
	{ "idle_timeouts", "smcproxy_idle_timeouts_total", "counter",
	  "Flows closed by relay.idle_timeout." },
};

/* The per_worker counters, labelled worker="<index>". */
static void prom_per_worker(FILE *out, const json_t *workers)
{
	static const struct {
		const char *key, *name, *type, *help, *extra;
	} fam[] = {
		{ "flows_active", "smcproxy_worker_flows_active", "gauge",
		  "Flows open now, by worker thread.", NULL },
		{ "flows_accepted", "smcproxy_worker_flows_accepted_total", "counter",
		  "Redirected connections accepted, by worker thread.", NULL },
		{ "bytes_in", "smcproxy_worker_bytes_total", "counter",
		  "Bytes relayed by worker thread: in = from clients toward servers, out = from servers back to clients.",
		  "in" },
		{ "bytes_out", "smcproxy_worker_bytes_total", NULL, NULL, "out" },
	};
	const json_t *w, *v, *idx;
	size_t f, i;

	if (!json_is_array(workers) || !json_array_size(workers))
		return;
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		if (fam[f].type)
			prom_family(out, fam[f].name, fam[f].type, fam[f].help);
		json_array_foreach(workers, i, w) {
			v = json_object_get(w, fam[f].key);
			idx = json_object_get(w, "worker");
			if (!json_is_number(v))
				continue;
			fprintf(out, "%s{worker=\"%" JSON_INTEGER_FORMAT "\"", fam[f].name,
				json_is_integer(idx) ? json_integer_value(idx) : (json_int_t)i);
			if (fam[f].extra)
				fprintf(out, ",direction=\"%s\"", fam[f].extra);
			fputs("} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
}

/* A label value from the daemon's JSON: an integer as its digits, a
 * string escaped, anything else as "?". */
static void prom_label_json(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_string(v))
		prom_label_value(out, json_string_value(v));
	else
		fputc('?', out);
}

/* The CQ pools' counters, labelled worker="<index>",cq="<index>". */
static void prom_cq(FILE *out, const json_t *cqs)
{
	static const struct {
		const char *key, *name, *type, *help;
	} fam[] = {
		{ "polls", "smcproxy_cq_polls_total", "counter",
		  "Polls of each completion queue (ibv_poll_cq calls), by worker and CQ." },
		{ "completions", "smcproxy_cq_completions_total", "counter",
		  "Work completions taken from each completion queue." },
		{ "empty_polls", "smcproxy_cq_empty_polls_total", "counter",
		  "Polls of each completion queue that found nothing." },
		{ "rearms", "smcproxy_cq_rearms_total", "counter",
		  "Times each completion queue was re-armed for an event." },
		{ "events", "smcproxy_cq_events_total", "counter",
		  "Completion-channel events that woke the worker, by CQ." },
		{ "rearm_failures", "smcproxy_cq_rearm_failures_total", "counter",
		  "Re-arms of each completion queue that failed (polled at each wake-up since)." },
		{ "links", "smcproxy_cq_links", "gauge",
		  "Links whose completions go to each completion queue." },
	};
	const json_t *e, *v;
	size_t f, i;

	if (!json_is_array(cqs) || !json_array_size(cqs))
		return;
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		prom_family(out, fam[f].name, fam[f].type, fam[f].help);
		json_array_foreach(cqs, i, e) {
			v = json_object_get(e, fam[f].key);
			if (!json_is_number(v))
				continue;
			fprintf(out, "%s{worker=\"", fam[f].name);
			prom_label_json(out, json_object_get(e, "worker"));
			fputs("\",cq=\"", out);
			prom_label_json(out, json_object_get(e, "cq"));
			fputs("\"} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
}

/*
 * links: how many, how many are down, and for each rdma link its send
 * queue's fill (labelled by worker, group, link and device: a bounded set,
 * as links are few). Counters per link are left out: a group's id changes
 * whenever it is set up again, and every change would start new series.
 */
static int render_links_prometheus(FILE *out, const json_t *links)
{
	static const struct {
		const char *key, *name, *help;
	} fam[] = {
		{ "wr_in_flight", "smcproxy_link_wr_in_flight",
		  "Send work requests posted on an rdma link and not completed yet." },
		{ "sq_depth", "smcproxy_link_sq_depth",
		  "Send work requests an rdma link's queue pair holds (rdma.sq_depth)." },
	};
	const json_t *e, *v, *state;
	size_t i, f, down = 0;

	prom_family(out, "smcproxy_links", "gauge", "Links of all link groups.");
	fprintf(out, "smcproxy_links %zu\n", json_array_size(links));
	json_array_foreach(links, i, e) {
		state = json_object_get(e, "state");
		down += json_is_string(state) && strcmp(json_string_value(state), "active") != 0;
	}
	prom_family(out, "smcproxy_links_down", "gauge",
		    "Links of active link groups that are not active (failed, not replaced yet).");
	fprintf(out, "smcproxy_links_down %zu\n", down);
	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		bool declared = false;

		json_array_foreach(links, i, e) {
			v = json_object_get(e, fam[f].key);
			if (!json_is_number(v))
				continue;
			if (!declared) {
				prom_family(out, fam[f].name, "gauge", fam[f].help);
				declared = true;
			}
			fprintf(out, "%s{worker=\"", fam[f].name);
			prom_label_json(out, json_object_get(e, "worker"));
			fputs("\",lgr=\"", out);
			prom_label_json(out, json_object_get(e, "lgr"));
			fputs("\",link=\"", out);
			prom_label_json(out, json_object_get(e, "link"));
			fputs("\",device=\"", out);
			prom_label_json(out, json_object_get(e, "device"));
			fputs("\"} ", out);
			prom_number(out, v);
			fputc('\n', out);
		}
	}
	return 0;
}

static int render_stats_prometheus(FILE *out, const json_t *st)
{
	const json_t *flows = json_object_get(st, "flows");
	const json_t *v, *sub;
	const char *key, *subkey;
	size_t i;

	v = json_object_get(st, "version");
	if (json_is_string(v)) {
		prom_family(out, "smcproxy_info", "gauge",
			    "Version of the running smcproxyd; the value is always 1.");
		fputs("smcproxy_info{version=\"", out);
		prom_label_value(out, json_string_value(v));
		fputs("\"} 1\n", out);
	}
	v = json_object_get(st, "uptime_ms");
	if (json_is_integer(v)) {
		prom_family(out, "smcproxy_uptime_seconds", "gauge",
			    "Seconds since smcproxyd started.");
		fprintf(out, "smcproxy_uptime_seconds %.3f\n",
			(double)json_integer_value(v) / 1000.0);
	}
	if (json_is_object(flows)) {
		v = json_object_get(flows, "accepted");
		if (json_is_integer(v))
			prom_scalar(out, "smcproxy_flows_accepted_total", "counter",
				    "Redirected connections accepted.", v);
		prom_labelled(out, "smcproxy_flows_active", "gauge",
			      "Flows open now, by how they are carried (tcp, shm, rdma).",
			      "mode", json_object_get(flows, "active"));
		prom_labelled(out, "smcproxy_flows_closed_total", "counter",
			      "Flows closed, by how they were carried (tcp, shm, rdma).",
			      "mode", json_object_get(flows, "closed"));
	}
	prom_labelled(out, "smcproxy_fallbacks_total", "counter",
		      "Flows that fell back to the TCP relay, by reason.",
		      "reason", json_object_get(st, "fallback"));
	prom_labelled(out, "smcproxy_bytes_total", "counter",
		      "Bytes relayed: in = from clients toward servers, out = from servers back to clients.",
		      "direction", json_object_get(st, "bytes"));
	prom_per_worker(out, json_object_get(st, "per_worker"));
	prom_cq(out, json_object_get(st, "cq"));
	for (i = 0; i < sizeof(prom_stats_scalars) / sizeof(prom_stats_scalars[0]); i++) {
		v = json_object_get(st, prom_stats_scalars[i].key);
		if (json_is_number(v))
			prom_scalar(out, prom_stats_scalars[i].name,
				    prom_stats_scalars[i].type,
				    prom_stats_scalars[i].help, v);
	}

	/* Whatever a newer daemon added: untyped, named after its key. pid is
	 * left out on purpose: it is not a measurement. */
	json_object_foreach((json_t *)st, key, v) {
		bool known = stats_key_in_header(key) || !strcmp(key, "bytes") ||
			     !strcmp(key, "pid");

		for (i = 0; !known && i < sizeof(prom_stats_scalars) /
						sizeof(prom_stats_scalars[0]); i++)
			known = !strcmp(key, prom_stats_scalars[i].key);
		if (known)
			continue;
		if (json_is_number(v)) {
			fputs("# HELP smcproxy_", out);
			prom_name(out, key);
			fputs(" smcproxyd stats field ", out);
			prom_help_text(out, key);
			fputs(".\n# TYPE smcproxy_", out);
			prom_name(out, key);
			fputs(" untyped\nsmcproxy_", out);
			prom_name(out, key);
			fputc(' ', out);
			prom_number(out, v);
			fputc('\n', out);
		} else if (json_is_object(v)) {
			json_object_foreach((json_t *)v, subkey, sub) {
				if (!json_is_number(sub))
					continue;
				fputs("# TYPE smcproxy_", out);
				prom_name(out, key);
				fputc('_', out);
				prom_name(out, subkey);
				fputs(" untyped\nsmcproxy_", out);
				prom_name(out, key);
				fputc('_', out);
				prom_name(out, subkey);
				fputc(' ', out);
				prom_number(out, sub);
				fputc('\n', out);
			}
		}
	}
	return 0;
}

/* flows in Prometheus form: counts by mode and state, never one series per
 * flow (that would be unbounded cardinality). */
static int render_flows_prometheus(FILE *out, const json_t *reply,
				   const json_t *flows)
{
	json_t *count = json_object();
	const json_t *f, *v;
	const char *key;
	size_t i;

	if (!count)
		return -ENOMEM;
	json_array_foreach(flows, i, f) {
		const char *mode = json_string_value(json_object_get(f, "mode"));
		const char *state = json_string_value(json_object_get(f, "state"));
		char *k;

		/* mode and state hold no '\x1f'; it separates them in the key. */
		if (asprintf(&k, "%s\x1f%s", mode ?: "unknown", state ?: "unknown") < 0) {
			json_decref(count);
			return -ENOMEM;
		}
		json_object_set_new(count, k, json_integer(
			int_member(count, k) + 1));
		free(k);
	}
	prom_family(out, "smcproxy_flows_listed", "gauge",
		    "Flows in the daemon's flow list, by mode and state.");
	json_object_foreach(count, key, v) {
		const char *sep = strchr(key, '\x1f');
		char *mode = strndup(key, (size_t)(sep - key));

		fputs("smcproxy_flows_listed{mode=\"", out);
		prom_label_value(out, mode ?: "");
		fputs("\",state=\"", out);
		prom_label_value(out, sep + 1);
		fprintf(out, "\"} %" JSON_INTEGER_FORMAT "\n", json_integer_value(v));
		free(mode);
	}
	json_decref(count);
	prom_family(out, "smcproxy_flows_listed_truncated", "gauge",
		    "1 when the daemon had more flows than it lists (10000).");
	fprintf(out, "smcproxy_flows_listed_truncated %d\n",
		json_is_true(json_object_get(reply, "truncated")) ? 1 : 0);
	return 0;
}

/* ---- entry points ----------------------------------------------------- */

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

	if (fmt == CTL_FORMAT_PROMETHEUS) {
		switch (cmd) {
		case CTL_CMD_STATS:
			rc = render_stats_prometheus(out, body);
			break;
		case CTL_CMD_FLOWS:
			rc = render_flows_prometheus(out, reply, body);
			break;
		case CTL_CMD_LINKS:
			rc = render_links_prometheus(out, body);
			break;
		case CTL_CMD_PEERS:
			prom_family(out, "smcproxy_peers", "gauge",
				    "Peers the daemon knows (link groups and negative cache).");
			fprintf(out, "smcproxy_peers %zu\n", json_array_size(body));
			rc = 0;
			break;
		default:
			rc = -ENOTSUP;
			break;
		}
	} else {
		switch (cmd) {
		case CTL_CMD_STATS:
			rc = render_stats_table(out, body);
			break;
		case CTL_CMD_FLOWS:
			rc = render_flows_table(out, reply, body);
			if (rc == 0)
				note_not_answering(out, reply, "flows");
			break;
		case CTL_CMD_RELOAD:
			rc = render_reload_table(out, body);
			break;
		case CTL_CMD_LINKS:
			rc = render_links_table(out, body);
			if (rc == 0)
				note_not_answering(out, reply, name);
			break;
		case CTL_CMD_PEERS:
			rc = render_list_table(out, name, body, NULL);
			if (rc == 0)
				note_not_answering(out, reply, name);
			break;
		case CTL_CMD_DEBUG:
			rc = render_debug_table(out, body);
			break;
		default:
			rc = -ENOTSUP;
			break;
		}
	}
	if (rc < 0)
		return bad_reply(err, errlen, rc, "rendering %s: %s", name,
				 strerror(-rc));
	return 0;
}
