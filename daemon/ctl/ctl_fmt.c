/* SPDX-License-Identifier: MIT */
/*
 * Values as smcproxyctl's tables show them (see ctl_fmt.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl_fmt.h"

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
char *ctl_fmt_count128(char *buf, size_t buflen, ctl_i128 n)
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
const char *ctl_fmt_iec(char *buf, size_t buflen, int64_t n)
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
const char *ctl_fmt_value(char *buf, size_t buflen, const json_t *v)
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

/* "connect_failures" -> "connect failures" */
void ctl_fmt_humanise(char *buf, size_t buflen, const char *key)
{
	snprintf(buf, buflen, "%s", key);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = ' ';
}
