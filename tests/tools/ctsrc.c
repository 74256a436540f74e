/* SPDX-License-Identifier: MIT */
/*
 * ctsrc: the original source of a redirected connection, as the daemon
 * reads it from conntrack (origdst_src()), for the shell tests.
 *
 *   ctsrc LOCAL PEER
 *
 * LOCAL and PEER are the accepted socket's addresses ("127.0.0.1:7001",
 * "[::1]:7001"). Prints the original source ("10.0.0.1:40000"); exit
 * status 1 with the error when there is none, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "core/origdst.h"

static int parse(const char *s, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t hl;
	long port;

	if (!colon || colon == s)
		return -1;
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port > 65535)
		return -1;
	hl = (size_t)(colon - s);
	if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	} else {
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage local, peer, orig;
	char buf[ADDR_STRLEN];
	int err;

	if (argc != 3 || parse(argv[1], &local) || parse(argv[2], &peer)) {
		fprintf(stderr, "usage: ctsrc LOCAL PEER (addr:port each)\n");
		return 2;
	}
	err = origdst_src((struct sockaddr *)&local, (struct sockaddr *)&peer, &orig);
	if (err) {
		fprintf(stderr, "ctsrc: %s\n", strerror(-err));
		return 1;
	}
	printf("%s\n", addr_format((struct sockaddr *)&orig, buf, sizeof(buf)));
	return 0;
}
