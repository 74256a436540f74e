/* SPDX-License-Identifier: MIT */
/*
 * What the hostile test peers (smcpeer, rdmapeer) share besides the
 * handshake (peer_hs.h): messages on stderr, a monotonic clock for their
 * deadlines, and the parsing of their command lines. Each tool defines
 * peer_prog and peer_usage().
 */
#ifndef SMCPROXY_TEST_PEER_UTIL_H
#define SMCPROXY_TEST_PEER_UTIL_H

#include <stdint.h>

#include "cfg.h"

/* The tool's name, for its messages; defined by the tool. */
extern const char *peer_prog;

/* Prints the tool's usage on stderr and exits 2; defined by the tool. */
void peer_usage(void) __attribute__((noreturn));

/* "PROG: message\n" on stderr. */
void peer_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CLOCK_MONOTONIC in milliseconds, and what is left of deadline (0 when
 * past), as poll() takes it. */
int64_t peer_now_ms(void);
int peer_left_ms(int64_t deadline);

/* The last component of path: how a corpus file is named in the output. */
const char *peer_base_name(const char *path);

/* Command-line values: each says what is wrong and calls peer_usage() on
 * a bad one. peer_arg_value() takes the value of the option argv[*i] and
 * moves *i past it; peer_parse_num() accepts 0..max in C notation. */
const char *peer_arg_value(int *i, int argc, char **argv);
void peer_parse_addr(const char *s, struct cfg_addr *a);
unsigned long peer_parse_num(const char *s, unsigned long max);

#endif
