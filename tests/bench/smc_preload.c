/* SPDX-License-Identifier: MIT */
/*
 * smc_preload.so: run an unmodified TCP program over the kernel's own SMC
 * (AF_SMC), so that the bench measures kernel SMC-R beside smcproxy with
 * the same client and server binaries.
 *
 *   LD_PRELOAD=build/bench/smc_preload.so sockperf ...
 *
 * Every socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) becomes
 * socket(AF_SMC, same type, SMCPROTO_SMC or SMCPROTO_SMC6): the kernel then
 * runs the SMC handshake on the TCP connection and moves the bytes over
 * RDMA, or falls back to TCP by itself. Where AF_SMC does not exist (no smc
 * module) the program gets its TCP socket, and SMC_PRELOAD_STRICT=1 makes
 * that an error instead, so that a bench cannot label TCP as SMC-R.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define SMCPROTO_SMC  0		/* <linux/smc.h> has no user-space copy */
#define SMCPROTO_SMC6 1

int socket(int domain, int type, int protocol)
{
	static int (*real_socket)(int, int, int);
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (!real_socket)
		real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if ((domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP)) {
		int fd = real_socket(AF_SMC, type,
				     domain == AF_INET ? SMCPROTO_SMC : SMCPROTO_SMC6);
		const char *strict = getenv("SMC_PRELOAD_STRICT");

		if (fd >= 0 || (strict && *strict == '1'))
			return fd;
	}
	return real_socket(domain, type, protocol);
}
