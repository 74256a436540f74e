/* SPDX-License-Identifier: MIT */
/* The original destination of a connection that iptables REDIRECT sent us. */
#ifndef SMCPROXY_ORIGDST_H
#define SMCPROXY_ORIGDST_H

#include <sys/socket.h>

/*
 * Reads SO_ORIGINAL_DST (IPv4) or IP6T_SO_ORIGINAL_DST (IPv6) of an accepted
 * socket into *dst, and its local address into *local. Returns 0, -ENOENT
 * when the kernel has no NAT record for it (not redirected, or conntrack
 * not loaded), or another -errno.
 * It does not decide whether the destination is acceptable: flow_open()
 * does, refusing a connection made to the listener directly and asking
 * proxy_check_loop() about the rest.
 */
int origdst_get(int fd, struct sockaddr_storage *local, struct sockaddr_storage *dst);

#endif
