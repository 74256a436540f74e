/* SPDX-License-Identifier: MIT */
/*
 * The sk_msg bypass of the local hop (intercept.bpf.c has the programs,
 * maps-t.h the flow state): a redirected flow's two sockets on this host,
 * the application's and our accepted one, each one's sendmsg put straight
 * into the other's receive queue, skipping TCP. What changes for the
 * sockets, and what the daemon must do about it:
 *
 *   - splice(2) sees only TCP's queue (tcp_bpf has no splice_read): a
 *     joined socket is read with recv/readv, to EAGAIN (a short read
 *     says nothing of TCP's queue behind the redirected one);
 *   - redirected bytes are charged to the global TCP memory only: the
 *     app-to-daemon way has a credit that we refill as we read
 *     (bypass_refill()); when it runs out, that way goes over TCP for
 *     good, whose buffers push back.
 *
 * Does not log: -errno, and the self-test's failure in words.
 */
#ifndef SMCPROXY_BYPASS_H
#define SMCPROXY_BYPASS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "intercept-t.h"

/*
 * Within intercept_open(), after the programs loaded and before they
 * attach: attaches byp_msg to the sockets map, runs the self-test on the
 * running kernel (bypass_selftest()) and, if it passed, attaches
 * byp_sockops to the daemon's own cgroup (self_cgroup, a directory) and
 * turns the bypass on. On failure the bypass stays off, nothing of it is
 * attached, and ic->bypass.why says which check failed; the rest of the
 * intercept is not affected.
 */
int bypass_open(struct intercept *ic, const char *self_cgroup);

/*
 * The checks, each on a loopback connection of this process joined by
 * hand as sock_ops would join it: redirect and epoll wake-up both ways,
 * FIN, RST, back-pressure (the credit runs out, the rest goes over TCP
 * in order, and a writer that saw EAGAIN is woken when room comes back),
 * a late peer. 0, or -errno with why naming the check.
 */
int bypass_selftest(struct intercept *ic, char *why, size_t len);

/*
 * Whether our accepted socket fd, from client, was joined before it was
 * accepted (the socket then must not be spliced, and its reads must call
 * bypass_refill()). Takes the socket's lock first (a setsockopt), so
 * that the join, which runs under it, is over. 1, 0, or -errno.
 */
int bypass_joined(struct intercept *ic, int fd, const struct sockaddr *client);

/* We have read total bytes of client's flow: it may redirect up to
 * total + the credit. 0 or -errno (-ENOENT: the flow is gone). */
int bypass_refill(struct intercept *ic, const struct sockaddr *client, uint64_t total);

/* Stops joining new flows (those joined keep their bypass). */
void bypass_detach(struct intercept *ic);

#endif
