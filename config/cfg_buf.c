/* SPDX-License-Identifier: MIT */
/*
 * A growable text buffer for error lines and key paths. Every function
 * returns 0 or -ENOMEM and leaves the buffer NUL-terminated and valid after
 * a failure, so a caller may keep going and report -ENOMEM at the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg-int.h"

static int buf_reserve(struct cfg__buf *b, size_t more)
{
	size_t need, cap;
	char *s;

	if (more > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	need = b->len + more + 1;
	if (need <= b->cap)
		return 0;
	/* A first allocation must hold a string too, even if nothing is
	 * appended after it (an empty key). */
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	s = realloc(b->s, cap);
	if (!s)
		return -ENOMEM;
	b->s = s;
	b->cap = cap;
	b->s[b->len] = '\0';
	return 0;
}

int cfg__buf_add(struct cfg__buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -ENOMEM;
	if (n > 0)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int cfg__buf_addf(struct cfg__buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	if (buf_reserve(b, (size_t)n) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF, as
 * jansson does, so that cleaned text is always accepted by json_string(). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

int cfg__buf_add_clean(struct cfg__buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run;

	while (i < n) {
		run = utf8_seq_len(p + i, n - i);
		if (run == 0 || p[i] < 0x20 || p[i] == 0x7f) {
			if (cfg__buf_addf(b, "\\x%02x", p[i]) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		if (cfg__buf_add(b, s + i, run) < 0)
			return -ENOMEM;
		i += run;
	}
	/* An empty append still makes b->s a valid string. */
	return buf_reserve(b, 0);
}

void cfg__buf_truncate(struct cfg__buf *b, size_t len)
{
	if (b->s && len < b->len) {
		b->len = len;
		b->s[len] = '\0';
	}
}

void cfg__buf_free(struct cfg__buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = 0;
	b->cap = 0;
}

int cfg__path_push_key(struct cfg__buf *path, const char *key, size_t n)
{
	if (path->len > 0 && cfg__buf_add(path, ".", 1) < 0)
		return -ENOMEM;
	/* An empty key must still show in the path, and must not turn a
	 * top-level member into the root (""). */
	if (n == 0)
		return cfg__buf_add(path, "\"\"", 2);
	return cfg__buf_add_clean(path, key, n);
}

int cfg__path_push_index(struct cfg__buf *path, size_t i)
{
	return cfg__buf_addf(path, "[%zu]", i);
}
