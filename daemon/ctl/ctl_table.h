/* SPDX-License-Identifier: MIT */
/*
 * A text table for smcproxyctl's human output (struct in ctl_table-t.h):
 * cells are copied in, column widths are computed when it is printed,
 * and every cell has the terminal control characters of the daemon's text
 * replaced by '?'. Building a table needs no error checks at each cell:
 * running out of memory is remembered and ctl_tbl_print() reports it.
 * The table engine knows nothing of commands or of JSON.
 */
#ifndef SMCPROXY_CTL_TABLE_H
#define SMCPROXY_CTL_TABLE_H

#include <stdio.h>

#include "ctl_table-t.h"

/* An empty table of ncol columns (at most CTL_TBL_MAXCOL: more are cut),
 * all left-aligned; set right[c] for a right-aligned column. */
void ctl_tbl_init(struct ctl_tbl *t, size_t ncol);
/* Frees the cells; t may be freed or initialised again after. */
void ctl_tbl_free(struct ctl_tbl *t);
/* Starts a new row of empty cells. */
void ctl_tbl_row(struct ctl_tbl *t);
/* Sets cell col of the last row, printf-style; ignored without a row or
 * past the last column. */
__attribute__((format(printf, 3, 4)))
void ctl_tbl_set(struct ctl_tbl *t, size_t col, const char *fmt, ...);
/* Prints the rows, each line starting with indent. Returns 0, or -ENOMEM
 * when building the table ran out of memory (then nothing is printed). */
int ctl_tbl_print(FILE *out, const struct ctl_tbl *t, const char *indent);

/* fputs() of text from the daemon, outside a table: each terminal control
 * character becomes one '?', as in cells. */
void ctl_put_text(FILE *out, const char *s);

#endif
