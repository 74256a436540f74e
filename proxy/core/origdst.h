/* SPDX-License-Identifier: MIT */
/* The original destination of a connection that iptables REDIRECT sent us. */
#ifndef SMCPROXY_ORIGDST_H
#define SMCPROXY_ORIGDST_H

#include <stddef.h>
#include <stdint.h>
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

/*
 * The original source of the redirected connection whose accepted socket
 * has local address local and peer address peer: its conntrack entry's
 * (ctnetlink, found by its reply tuple local -> peer). NAT gives a client
 * another source port when its reply tuple would clash with an older
 * entry's, so the peer address we see is not always the one the client
 * sent from. Returns 0, -ENOENT (no entry), -EPERM (needs CAP_NET_ADMIN),
 * -EPROTO (an answer we cannot read), -ETIMEDOUT (no answer with our port
 * id and sequence number within ORIGDST_CT_WAIT_MS) or another -errno.
 * One netlink round trip on a socket connected to the kernel, never a
 * blocking wait: not for the hot path all the same.
 */
#define ORIGDST_CT_WAIT_MS	20
int origdst_src(const struct sockaddr *local, const struct sockaddr *peer,
		struct sockaddr_storage *orig);

/* Its two halves, apart for the tests: the CT_GET request into buf
 * (returns its length, or 0 when it does not fit or the family is not
 * one we know), and the reading of an answer of n bytes into *orig. */
size_t origdst__ct_request(void *buf, size_t size, const struct sockaddr *local,
			   const struct sockaddr *peer, uint32_t seq);
int origdst__ct_answer(const void *buf, size_t n, int family, struct sockaddr_storage *orig);

#endif
