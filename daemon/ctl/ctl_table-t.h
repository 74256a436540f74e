/* SPDX-License-Identifier: MIT */
/*
 * The text table of smcproxyctl's human output: types only (ctl_table.h has
 * the functions).
 */
#ifndef SMCPROXY_CTL_TABLE_T_H
#define SMCPROXY_CTL_TABLE_T_H

#include <stdbool.h>
#include <stddef.h>

/* Columns a table holds; the renderers say so when a reply has more. */
#define CTL_TBL_MAXCOL 16

/*
 * Widest a column is padded to. A longer cell is printed whole but does not
 * widen its column: a daemon that sends a megabyte string would otherwise
 * have every other row padded with a megabyte of blanks.
 */
#define CTL_TBL_MAXWIDTH 64

/*
 * A text table: cells are copied in, widths are computed at print time,
 * numeric columns are right-aligned. Out of memory is remembered in err and
 * reported by ctl_tbl_print(), so that building a table needs no checks at
 * every cell. A table may have no columns (a list whose entries have no
 * fields): its rows are counted but hold nothing, and it prints nothing.
 */
struct ctl_tbl {
	size_t ncol;
	size_t nrow;
	size_t cap;
	char **cell;			/* nrow * ncol, NULL for an empty cell */
	bool right[CTL_TBL_MAXCOL];
	int err;
};

#endif
