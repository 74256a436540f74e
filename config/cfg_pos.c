/* SPDX-License-Identifier: MIT */
/*
 * The position index: where each value of a JSON text starts, by key path.
 *
 * jansson keeps no positions for the values it returns, and a schema error
 * must name file:line:column. So once jansson has accepted a text, we scan
 * it again here (a second, much smaller tokenizer that only tracks
 * structure) and record each value's line and column under its key path.
 * The text is valid JSON by then, but this scanner still checks every bound
 * and gives up with -EINVAL on anything unexpected instead of trusting that.
 *
 * Positions count as jansson's do: lines from 1, columns from 1 in Unicode
 * code points (a byte that is not a UTF-8 continuation byte starts one), so
 * our error lines and jansson's parse errors agree for the same file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfg-int.h"

/* jansson refuses nesting deeper than 2048; this only guards the recursion
 * if the scanner were ever handed text that jansson did not check. */
#define SCAN_MAX_NESTING 4096

struct scan {
	const unsigned char *p, *end;
	unsigned line;
	unsigned col;		/* code points already consumed on this line */
	struct cfg__pos_index *idx;
	struct cfg__buf path;
	struct cfg__buf key;
};

static int peek(const struct scan *s)
{
	return s->p < s->end ? *s->p : -1;
}

static void adv(struct scan *s)
{
	unsigned char c = *s->p++;

	if (c == '\n') {
		s->line++;
		s->col = 0;
	} else if ((c & 0xc0) != 0x80) {
		s->col++;
	}
}

static void skip_ws(struct scan *s)
{
	int c;

	while ((c = peek(s)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		adv(s);
}

static int record(struct scan *s, unsigned kline, unsigned kcol,
		  unsigned line, unsigned col)
{
	struct cfg__pos *v;
	size_t cap;

	if (s->idx->n == s->idx->cap) {
		cap = s->idx->cap ? s->idx->cap * 2 : 32;
		v = realloc(s->idx->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->idx->v = v;
		s->idx->cap = cap;
	}
	v = &s->idx->v[s->idx->n];
	v->path = strdup(s->path.s ? s->path.s : "");
	if (!v->path)
		return -ENOMEM;
	v->key_line = kline;
	v->key_col = kcol;
	v->line = line;
	v->col = col;
	s->idx->n++;
	return 0;
}

static int hex4(struct scan *s, uint32_t *out)
{
	uint32_t v = 0;
	int i, c;

	for (i = 0; i < 4; i++) {
		c = peek(s);
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (uint32_t)(c - 'A' + 10);
		else
			return -EINVAL;
		adv(s);
	}
	*out = v;
	return 0;
}

static int put_utf8(struct cfg__buf *out, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return cfg__buf_add(out, b, n);
}

/* A \u escape, after the "\u": decodes a surrogate pair into one code
 * point, as jansson does, so the key matches jansson's key byte for byte. */
static int scan_unicode_escape(struct scan *s, struct cfg__buf *out)
{
	uint32_t cp, lo;

	if (hex4(s, &cp) < 0)
		return -EINVAL;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (peek(s) != '\\')
			return -EINVAL;
		adv(s);
		if (peek(s) != 'u')
			return -EINVAL;
		adv(s);
		if (hex4(s, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return -EINVAL;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (cp >= 0xdc00 && cp <= 0xdfff) {
		return -EINVAL;
	}
	return out ? put_utf8(out, cp) : 0;
}

/* A string at s->p (which is '"'). Decodes it into out unless out is NULL. */
static int scan_string(struct scan *s, struct cfg__buf *out)
{
	static const char esc_in[] = "\"\\/bfnrt";
	static const char esc_out[] = "\"\\/\b\f\n\r\t";
	const char *e;
	char c;
	int r;

	adv(s);
	for (;;) {
		if (peek(s) < 0)
			return -EINVAL;
		c = (char)*s->p;
		adv(s);
		if (c == '"')
			return 0;
		if (c != '\\') {
			if (out && cfg__buf_add(out, &c, 1) < 0)
				return -ENOMEM;
			continue;
		}
		if (peek(s) < 0)
			return -EINVAL;
		c = (char)*s->p;
		adv(s);
		if (c == 'u') {
			r = scan_unicode_escape(s, out);
			if (r < 0)
				return r;
			continue;
		}
		e = c ? strchr(esc_in, c) : NULL;
		if (!e)
			return -EINVAL;
		if (out && cfg__buf_add(out, &esc_out[e - esc_in], 1) < 0)
			return -ENOMEM;
	}
}

static int scan_value(struct scan *s, unsigned depth, unsigned kline, unsigned kcol);

/* At an object's or array's opening bracket: consumes it, and returns
 * true (having consumed the closing one too) if the container is empty. */
static bool scan_open_empty(struct scan *s, int close)
{
	adv(s);
	skip_ws(s);
	if (peek(s) != close)
		return false;
	adv(s);
	return true;
}

/* After a member or an element: 1 if a ',' announces another (consumed),
 * 0 at the closing bracket (consumed), -EINVAL on anything else. */
static int scan_next(struct scan *s, int close)
{
	skip_ws(s);
	if (peek(s) == ',') {
		adv(s);
		return 1;
	}
	if (peek(s) != close)
		return -EINVAL;
	adv(s);
	return 0;
}

static int scan_object(struct scan *s, unsigned depth)
{
	unsigned kline, kcol;
	size_t mark;
	int r;

	if (scan_open_empty(s, '}'))
		return 0;
	for (;;) {
		skip_ws(s);
		if (peek(s) != '"')
			return -EINVAL;
		kline = s->line;
		kcol = s->col + 1;
		cfg__buf_truncate(&s->key, 0);
		r = scan_string(s, depth < CFG__POS_MAX_DEPTH ? &s->key : NULL);
		if (r < 0)
			return r;
		skip_ws(s);
		if (peek(s) != ':')
			return -EINVAL;
		adv(s);
		mark = s->path.len;
		if (depth < CFG__POS_MAX_DEPTH &&
		    cfg__path_push_key(&s->path, s->key.s, s->key.len) < 0)
			return -ENOMEM;
		r = scan_value(s, depth + 1, kline, kcol);
		if (r < 0)
			return r;
		cfg__buf_truncate(&s->path, mark);
		r = scan_next(s, '}');
		if (r <= 0)
			return r;
	}
}

static int scan_array(struct scan *s, unsigned depth)
{
	size_t mark, i;
	int r;

	if (scan_open_empty(s, ']'))
		return 0;
	for (i = 0;; i++) {
		mark = s->path.len;
		if (depth < CFG__POS_MAX_DEPTH && cfg__path_push_index(&s->path, i) < 0)
			return -ENOMEM;
		r = scan_value(s, depth + 1, 0, 0);
		if (r < 0)
			return r;
		cfg__buf_truncate(&s->path, mark);
		r = scan_next(s, ']');
		if (r <= 0)
			return r;
	}
}

/* A number, true, false or null: everything up to the next delimiter. */
static int scan_scalar(struct scan *s)
{
	int c = peek(s);

	/* strchr() finds the terminator for c == 0, hence the c > 0 tests. */
	if (c <= 0 || !strchr("-0123456789tfn", c))
		return -EINVAL;
	while ((c = peek(s)) > 0 && !strchr(",]} \t\r\n", c))
		adv(s);
	return 0;
}

/* kline, kcol: where the member's key starts, 0 for array elements and the
 * top-level value, which have no key. */
static int scan_value(struct scan *s, unsigned depth, unsigned kline, unsigned kcol)
{
	unsigned line, col;
	int r;

	if (depth > SCAN_MAX_NESTING)
		return -EINVAL;
	skip_ws(s);
	if (peek(s) < 0)
		return -EINVAL;
	line = s->line;
	col = s->col + 1;
	if (depth <= CFG__POS_MAX_DEPTH) {
		r = record(s, kline ? kline : line, kline ? kcol : col, line, col);
		if (r < 0)
			return r;
	}
	switch (peek(s)) {
	case '{':
		return scan_object(s, depth);
	case '[':
		return scan_array(s, depth);
	case '"':
		return scan_string(s, NULL);
	default:
		return scan_scalar(s);
	}
}

static int pos_cmp(const void *a, const void *b)
{
	const struct cfg__pos *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/*
 * Builds idx (which must be zeroed) from text. Returns 0, -ENOMEM, or
 * -EINVAL if text is not the JSON jansson should have checked. On failure
 * idx keeps what was recorded so far; free it with cfg__pos_index_free().
 */
int cfg__pos_index_build(struct cfg__pos_index *idx, const char *text, size_t len)
{
	struct scan s = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
		.line = 1,
		.idx = idx,
	};
	int r;

	r = scan_value(&s, 0, 0, 0);
	cfg__buf_free(&s.path);
	cfg__buf_free(&s.key);
	if (idx->n > 1)
		qsort(idx->v, idx->n, sizeof(idx->v[0]), pos_cmp);
	return r;
}

/* The entry for path, or NULL. Two members can share a path only when a
 * key itself contains "." or "[", and then either position is as good. */
const struct cfg__pos *cfg__pos_find(const struct cfg__pos_index *idx, const char *path)
{
	struct cfg__pos key = { .path = (char *)path };

	if (idx->n == 0)
		return NULL;
	return bsearch(&key, idx->v, idx->n, sizeof(idx->v[0]), pos_cmp);
}

void cfg__pos_index_free(struct cfg__pos_index *idx)
{
	size_t i;

	for (i = 0; i < idx->n; i++)
		free(idx->v[i].path);
	free(idx->v);
	idx->v = NULL;
	idx->n = 0;
	idx->cap = 0;
}
