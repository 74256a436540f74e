/* SPDX-License-Identifier: MIT */
/*
 * smcproxyctl's human output, a renderer per command (see ctl_render.h):
 * tables built with ctl_table.h, values shown with ctl_fmt.h. The shapes
 * they read are those of smcproxyctl(8); members they do not know are
 * shown generically (one more counter row, one more column) rather than
 * dropped, so that a newer daemon's counters stay visible through an older
 * smcproxyctl.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_fmt.h"
#include "ctl_render_int.h"
#include "ctl_table.h"

/*
 * The flows-by-mode table. Modes are the union of the keys of "active" and
 * "closed", in order of first appearance, so a new mode gets a column; past
 * CTL_TBL_MAXCOL - 2 of them the rest are left out, and a note says so. The
 * total of a row is the exact sum of all its integer members, shown ones
 * or not (in 128 bits: 64-bit counters can add up past INT64_MAX), or "?"
 * when a member is not an integer and cannot be added up.
 */
static int stats_flows_table(FILE *out, const json_t *flows)
{
	const json_t *active = json_object_get(flows, "active");
	const json_t *closed = json_object_get(flows, "closed");
	const char *mode[CTL_TBL_MAXCOL - 2];
	const json_t *v;
	const char *key;
	size_t nmode = 0;
	bool more = false;
	struct ctl_tbl t;
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
			if (nmode < CTL_TBL_MAXCOL - 2)
				mode[nmode++] = key;
			else
				more = true;
		}
	}

	ctl_tbl_init(&t, nmode + 2);
	for (size_t c = 1; c < t.ncol; c++)
		t.right[c] = true;
	ctl_tbl_row(&t);
	ctl_tbl_set(&t, 0, "flows");
	for (size_t i = 0; i < nmode; i++)
		ctl_tbl_set(&t, i + 1, "%s", mode[i]);
	ctl_tbl_set(&t, nmode + 1, "total");
	for (int pass = 0; pass < 2; pass++) {
		const json_t *row = pass ? closed : active;
		ctl_i128 sum = 0;
		bool summable = true;

		if (!json_is_object(row))
			continue;
		ctl_tbl_row(&t);
		ctl_tbl_set(&t, 0, "%s", pass ? "closed" : "active");
		for (size_t i = 0; i < nmode; i++) {
			v = json_object_get(row, mode[i]);
			ctl_tbl_set(&t, i + 1, "%s", ctl_fmt_value(buf, sizeof(buf), v));
		}
		json_object_foreach((json_t *)row, key, v) {
			if (json_is_integer(v))
				sum += json_integer_value(v);
			else
				summable = false;
		}
		if (summable)
			ctl_tbl_set(&t, nmode + 1, "%s", ctl_fmt_count128(buf, sizeof(buf), sum));
		else
			ctl_tbl_set(&t, nmode + 1, "?");
	}
	/* "accepted" and any other plain count of flows. */
	json_object_foreach((json_t *)flows, key, v) {
		if (!json_is_integer(v))
			continue;
		ctl_tbl_row(&t);
		ctl_fmt_humanise(buf, sizeof(buf), key);
		ctl_tbl_set(&t, 0, "%s", buf);
		ctl_tbl_set(&t, nmode + 1, "%s",
			ctl_fmt_count(buf, sizeof(buf), json_integer_value(v)));
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
	if (rc == 0 && more)
		fprintf(out, "(more than %d modes: the rest are counted in the totals; "
			"--json shows them)\n", CTL_TBL_MAXCOL - 2);
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
	struct ctl_tbl t;
	char buf[64];
	size_t i;
	int rc;

	ctl_tbl_init(&t, ncol);
	ctl_tbl_row(&t);
	for (size_t c = 0; c < ncol; c++) {
		t.right[c] = c > 0;
		ctl_tbl_set(&t, c, "%s", col[c].head);
	}
	json_array_foreach(arr, i, e) {
		ctl_tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			const json_t *v = json_object_get(e, col[c].key);

			if (col[c].id && json_is_integer(v))
				ctl_tbl_set(&t, c, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			else
				ctl_tbl_set(&t, c, "%s", ctl_fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
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
	{ "rearms_solicited", "solicited", false },
	{ "events", "events", false },
	{ "rearm_failures", "rearm failures", false },
};

static void note_not_answering(FILE *out, const json_t *reply, const char *what);

/* The ring budget by size class: rings flows hold, and free ones kept
 * warm for the next flow (any group takes their budget when it needs it). */
static int stats_rings_table(FILE *out, const json_t *by_size)
{
	const json_t *v;
	const char *key;
	char buf[64];
	struct ctl_tbl t;
	int rc;

	if (!json_is_object(by_size) || !json_object_size(by_size))
		return 0;
	ctl_tbl_init(&t, 3);
	t.right[0] = t.right[1] = t.right[2] = true;
	ctl_tbl_row(&t);
	ctl_tbl_set(&t, 0, "ring size");
	ctl_tbl_set(&t, 1, "in use");
	ctl_tbl_set(&t, 2, "free");
	json_object_foreach((json_t *)by_size, key, v) {
		ctl_tbl_row(&t);
		ctl_tbl_set(&t, 0, "%s", key);
		ctl_tbl_set(&t, 1, "%s", ctl_fmt_value(buf, sizeof(buf), json_object_get(v, "used")));
		ctl_tbl_set(&t, 2, "%s", ctl_fmt_value(buf, sizeof(buf), json_object_get(v, "free")));
	}
	fputc('\n', out);
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
	return rc;
}

static int render_stats_table(FILE *out, const json_t *st)
{
	const json_t *v, *sub;
	const char *key, *subkey;
	char buf[128], name[128], iec[32];
	struct ctl_tbl t;
	int rc;

	/* Header: who answered and for how long it has run. */
	v = json_object_get(st, "version");
	fputs("smcproxyd ", out);
	ctl_put_text(out, json_is_string(v) && json_string_length(v) ?
		     json_string_value(v) : "(unknown version)");
	if (json_is_integer(json_object_get(st, "pid")))
		fprintf(out, ", pid %" JSON_INTEGER_FORMAT, ctl_json_int(st, "pid"));
	if (json_is_integer(json_object_get(st, "uptime_ms")))
		fprintf(out, ", up %s", ctl_fmt_duration(buf, sizeof(buf),
							 ctl_json_int(st, "uptime_ms")));
	if (json_is_integer(json_object_get(st, "workers")))
		fprintf(out, ", %" JSON_INTEGER_FORMAT " worker%s",
			ctl_json_int(st, "workers"),
			ctl_json_int(st, "workers") == 1 ? "" : "s");
	if (json_is_integer(json_object_get(st, "reloads")))
		fprintf(out, ", %" JSON_INTEGER_FORMAT " reload%s",
			ctl_json_int(st, "reloads"),
			ctl_json_int(st, "reloads") == 1 ? "" : "s");
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
		ctl_tbl_init(&t, 2);
		t.right[1] = true;
		ctl_tbl_row(&t);
		ctl_tbl_set(&t, 0, "fallback reason");
		ctl_tbl_set(&t, 1, "flows");
		json_object_foreach((json_t *)v, key, sub) {
			ctl_tbl_row(&t);
			ctl_tbl_set(&t, 0, "%s", key);
			ctl_tbl_set(&t, 1, "%s", ctl_fmt_value(buf, sizeof(buf), sub));
		}
		rc = ctl_tbl_print(out, &t, "");
		ctl_tbl_free(&t);
		if (rc < 0)
			return rc;
		fputc('\n', out);
	}

	/* Every other member, in the daemon's order: plain counters, and
	 * objects of counters ("bytes": {"in", "out"}) one row per member. */
	ctl_tbl_init(&t, 3);
	t.right[1] = true;
	ctl_tbl_row(&t);
	ctl_tbl_set(&t, 0, "counter");
	ctl_tbl_set(&t, 1, "value");
	json_object_foreach((json_t *)st, key, v) {
		if (ctl_stats_key_in_header(key))
			continue;
		if (!json_is_object(v)) {
			ctl_tbl_row(&t);
			ctl_fmt_humanise(name, sizeof(name), key);
			ctl_tbl_set(&t, 0, "%s", name);
			ctl_tbl_set(&t, 1, "%s", ctl_fmt_value(buf, sizeof(buf), v));
			continue;
		}
		json_object_foreach((json_t *)v, subkey, sub) {
			if (json_is_object(sub))
				continue;	/* rings.by_size: its own table */
			ctl_tbl_row(&t);
			ctl_fmt_humanise(name, sizeof(name), key);
			ctl_tbl_set(&t, 0, "%s %s", name, subkey);
			ctl_tbl_set(&t, 1, "%s", ctl_fmt_value(buf, sizeof(buf), sub));
			if (strcmp(key, "bytes") == 0 && json_is_integer(sub) &&
			    *ctl_fmt_iec(iec, sizeof(iec), json_integer_value(sub)))
				ctl_tbl_set(&t, 2, "%s", iec);
		}
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
	if (rc < 0)
		return rc;
	return stats_rings_table(out, json_object_get(json_object_get(st, "rings"), "by_size"));
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
		{ "bypass", "BYPASS", COL_TEXT },
		{ "client", "CLIENT", COL_TEXT },
		{ "dest", "DEST", COL_TEXT },
		{ "bytes_in", "IN", COL_COUNT },
		{ "bytes_out", "OUT", COL_COUNT },
		{ "age_ms", "AGE", COL_AGE },
	};
	size_t ncol = 0, i, n = json_array_size(flows), pick[sizeof(col) / sizeof(col[0])];
	size_t late = json_array_size(json_object_get(reply, "workers_not_answering"));
	bool any_bypass = false;
	const json_t *f;
	struct ctl_tbl t;
	char buf[128];
	int rc;

	/* A worker that did not answer may have flows: say only what was
	 * listed (note_not_answering() says whose are missing). */
	if (n == 0) {
		fputs(late ? "no flows listed\n" : "no active flows\n", out);
		return 0;
	}
	/* BYPASS only where a flow is bypassed (intercept.bypass). */
	json_array_foreach(flows, i, f)
		any_bypass |= json_is_true(json_object_get(f, "bypass"));
	for (size_t c = 0; c < sizeof(col) / sizeof(col[0]); c++)
		if (any_bypass || strcmp(col[c].key, "bypass") != 0)
			pick[ncol++] = c;
	ctl_tbl_init(&t, ncol);
	ctl_tbl_row(&t);
	for (size_t k = 0; k < ncol; k++) {
		t.right[k] = col[pick[k]].kind != COL_TEXT;
		ctl_tbl_set(&t, k, "%s", col[pick[k]].head);
	}
	json_array_foreach(flows, i, f) {
		ctl_tbl_row(&t);
		for (size_t k = 0; k < ncol; k++) {
			size_t c = pick[k];
			const json_t *v = json_object_get(f, col[c].key);

			if (json_is_integer(v) && col[c].kind == COL_AGE)
				ctl_tbl_set(&t, k, "%s",
					    ctl_fmt_duration(buf, sizeof(buf),
							     json_integer_value(v)));
			else if (json_is_integer(v) && col[c].kind == COL_ID)
				ctl_tbl_set(&t, k, "%" JSON_INTEGER_FORMAT,
					json_integer_value(v));
			else
				ctl_tbl_set(&t, k, "%s", ctl_fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
	if (rc < 0)
		return rc;
	fprintf(out, "\n%zu flow%s", n, n == 1 ? "" : "s");
	if (json_is_true(json_object_get(reply, "truncated")))
		fputs(" listed; more are active (the daemon lists at most 10000)", out);
	else if (late)
		fputs(" listed; more may be active", out);
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
 * CTL_TBL_MAXCOL columns are left out with a note, and entries that have no
 * members at all (there are then no columns) are counted in one line.
 */

static int render_list_table(FILE *out, const char *what, const json_t *list,
			     const char *const *skip)
{
	const char *colkey[CTL_TBL_MAXCOL];	/* NULL: the ENTRY column */
	size_t ncol = 0, n = json_array_size(list), i;
	bool more = false;
	const json_t *e, *v;
	const char *key;
	struct ctl_tbl t;
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
			if (c == ncol && ncol < CTL_TBL_MAXCOL)
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
			if (c == ncol && ncol < CTL_TBL_MAXCOL)
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
	ctl_tbl_init(&t, ncol);
	ctl_tbl_row(&t);
	for (size_t c = 0; c < ncol; c++) {
		char *p;

		snprintf(buf, sizeof(buf), "%s", colkey[c] ?: "entry");
		for (p = buf; *p; p++)
			*p = (char)(*p == '_' ? ' ' : (*p >= 'a' && *p <= 'z') ? *p - 32 : *p);
		ctl_tbl_set(&t, c, "%s", buf);
	}
	json_array_foreach(list, i, e) {
		ctl_tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			if (colkey[c])
				v = json_object_get(e, colkey[c]);
			else
				v = json_is_object(e) ? NULL : e;
			if (json_is_number(v))
				t.right[c] = true;
			ctl_tbl_set(&t, c, "%s", ctl_fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
	if (rc == 0 && more)
		fprintf(out, "(more than %d fields: the rest are left out; "
			"--json shows them)\n", CTL_TBL_MAXCOL);
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
	struct ctl_tbl t;
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
	ctl_tbl_init(&t, ncol);
	ctl_tbl_row(&t);
	for (size_t c = 0; c < ncol; c++)
		ctl_tbl_set(&t, c, "%s", col[c].head);
	json_array_foreach(links, i, e) {
		const char *key;
		bool rdma = false;

		json_object_foreach((json_t *)e, key, v)
			rdma = rdma || key_in(key, links_rdma_keys);
		if (!rdma)
			continue;
		ctl_tbl_row(&t);
		for (size_t c = 0; c < ncol; c++) {
			v = json_object_get(e, col[c].key);
			if (json_is_number(v))
				t.right[c] = true;
			if (col[c].id && json_is_integer(v))
				ctl_tbl_set(&t, c, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			else if (json_is_boolean(v))
				ctl_tbl_set(&t, c, "%s", json_is_true(v) ? "yes" : "no");
			else
				ctl_tbl_set(&t, c, "%s", ctl_fmt_value(buf, sizeof(buf), v));
		}
	}
	rc = ctl_tbl_print(out, &t, "");
	ctl_tbl_free(&t);
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
		ctl_put_text(out, ctl_fmt_value(buf, sizeof(buf), json_object_get(r, "link")));
		fputs(" of link group ", out);
		ctl_put_text(out, ctl_fmt_value(buf, sizeof(buf), json_object_get(r, "lgr")));
		fputs(" on worker ", out);
		ctl_put_text(out, ctl_fmt_value(buf, sizeof(buf), json_object_get(r, "worker")));
		fputs(" was failed; its flows move to a surviving link of the group, or are "
		      "reset when there is none\n", out);
	}
	json_object_foreach((json_t *)r, key, v) {
		if (op && strcmp(op, "fail-link") == 0 &&
		    (!strcmp(key, "op") || !strcmp(key, "link") || !strcmp(key, "lgr") ||
		     !strcmp(key, "worker")))
			continue;
		ctl_put_text(out, key);
		fputs(": ", out);
		ctl_put_text(out, ctl_fmt_value(buf, sizeof(buf), v));
		fputc('\n', out);
	}
	return 0;
}

/* A member of the reload reply as text: ctl_fmt_value() of it, or absent when
 * it is missing, null or an empty string. Not only strings: a daemon that
 * sends a list of settings should not read as "(no change)". */
static const char *reload_field(char *buf, size_t buflen, const json_t *r,
				const char *key, const char *absent)
{
	const json_t *v = json_object_get(r, key);

	if (!v || json_is_null(v) ||
	    (json_is_string(v) && json_string_length(v) == 0))
		return absent;
	return ctl_fmt_value(buf, buflen, v);
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
	ctl_put_text(out, source);
	fputs("\napplied:        ", out);
	ctl_put_text(out, applied);
	fputs("\nrestart needed: ", out);
	ctl_put_text(out, restart ?: "(none)");
	fputc('\n', out);
	json_object_foreach((json_t *)r, key, v) {
		if (strcmp(key, "applied") && strcmp(key, "restart_needed") &&
		    strcmp(key, "source")) {
			ctl_put_text(out, key);
			fputs(": ", out);
			ctl_put_text(out, ctl_fmt_value(buf, sizeof(buf), v));
			fputc('\n', out);
		}
	}
	if (restart)
		fputs("(restart smcproxyd to apply the settings listed as needing it)\n", out);
	return 0;
}

int ctl_render_text(FILE *out, enum ctl_cmd cmd, const json_t *reply,
		    const json_t *body)
{
	const char *name = ctl_cmd_name(cmd);
	int rc;

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
	return rc;
}
