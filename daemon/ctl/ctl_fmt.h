/* SPDX-License-Identifier: MIT */
/*
 * Values as smcproxyctl's human tables show them: counts grouped by
 * thousands, durations, byte sizes, and any JSON scalar of the daemon's
 * replies. Each writes at most buflen bytes, always NUL-terminated.
 */
#ifndef SMCPROXY_CTL_FMT_H
#define SMCPROXY_CTL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * Sums of counters are kept in 128 bits: the daemon's counters are 64-bit,
 * and a sum of a few of them (or of a hostile daemon's INT64_MAX) does not
 * fit in 64. Both gcc and clang have the type on every 64-bit target.
 */
typedef __int128 ctl_i128;
typedef unsigned __int128 ctl_u128;

/* 1234567 -> "1,234,567"; negative values keep their sign. Returns buf. */
char *ctl_fmt_count(char *buf, size_t buflen, int64_t n);
/* ctl_fmt_count() for a 128-bit sum. */
char *ctl_fmt_count128(char *buf, size_t buflen, ctl_i128 n);
/* Milliseconds -> "250ms", "1.5s", "2m 05s", "1h 02m 03s", "3d 04h 05m";
 * negative durations as 0. Returns buf. */
char *ctl_fmt_duration(char *buf, size_t buflen, int64_t ms);
/* Bytes -> "(12.1 KiB)", "" below 1 KiB. Returns buf. */
const char *ctl_fmt_iec(char *buf, size_t buflen, int64_t n);
/* A JSON scalar as table text ("-" for NULL). Returns buf or a pointer
 * into v. */
const char *ctl_fmt_value(char *buf, size_t buflen, const json_t *v);
/* "connect_failures" -> "connect failures" */
void ctl_fmt_humanise(char *buf, size_t buflen, const char *key);

#endif
