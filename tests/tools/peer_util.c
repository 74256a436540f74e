/* SPDX-License-Identifier: MIT */
/* Messages, clock and command line of the test peers (see peer_util.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peer_util.h"

void peer_say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", peer_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int64_t peer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int peer_left_ms(int64_t deadline)
{
	int64_t d = deadline - peer_now_ms();

	return d < 0 ? 0 : (int)d;
}

const char *peer_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *peer_arg_value(int *i, int argc, char **argv)
{
	if (*i + 1 >= argc) {
		peer_say("%s needs a value", argv[*i]);
		peer_usage();
	}
	return argv[++*i];
}

void peer_parse_addr(const char *s, struct cfg_addr *a)
{
	if (cfg_parse_addr(s, a) < 0) {
		peer_say("not an address with a port: %s", s);
		peer_usage();
	}
}

unsigned long peer_parse_num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (!*s || *end || v > max) {
		peer_say("not a number up to %lu: %s", max, s);
		peer_usage();
	}
	return v;
}
