/* SPDX-License-Identifier: MIT */
/*
 * The table engine of smcproxyctl's human output (see ctl_table.h), and
 * the scrubbing of the daemon's text on its way to a terminal, which table
 * cells and the renderers' free text share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_table.h"

void ctl_tbl_init(struct ctl_tbl *t, size_t ncol)
{
	memset(t, 0, sizeof(*t));
	t->ncol = ncol < CTL_TBL_MAXCOL ? ncol : CTL_TBL_MAXCOL;
}

void ctl_tbl_free(struct ctl_tbl *t)
{
	for (size_t i = 0; i < t->nrow * t->ncol; i++)
		free(t->cell[i]);
	free(t->cell);
	t->cell = NULL;
	t->nrow = t->cap = 0;
}

/* Starts a new row of empty cells. */
void ctl_tbl_row(struct ctl_tbl *t)
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
void ctl_put_text(FILE *out, const char *s)
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
void ctl_tbl_set(struct ctl_tbl *t, size_t col, const char *fmt, ...)
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
int ctl_tbl_print(FILE *out, const struct ctl_tbl *t, const char *indent)
{
	size_t width[CTL_TBL_MAXCOL] = { 0 };

	if (t->err)
		return t->err;
	if (t->ncol == 0)
		return 0;
	for (size_t r = 0; r < t->nrow; r++)
		for (size_t c = 0; c < t->ncol; c++) {
			const char *s = t->cell[r * t->ncol + c];
			size_t n = s ? strlen(s) : 0;

			if (n > CTL_TBL_MAXWIDTH)
				n = CTL_TBL_MAXWIDTH;
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
