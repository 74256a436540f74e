/* SPDX-License-Identifier: MIT */
/*
 * The daemon's socket recipes, once: the outbound socket that carries our
 * mark, and the bound socket of a listener or a port probe. Each returns
 * a file descriptor or -errno, and closes what it opened when it fails.
 */
#ifndef SMCPROXY_SOCK_H
#define SMCPROXY_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * A non-blocking, close-on-exec TCP socket of family for a connection out
 * of the daemon, with SO_MARK set to mark unless mark is 0 (no mark
 * configured). The redirect rules skip marked packets; an unmarked
 * connection of ours would be redirected back to us, so a mark that
 * cannot be set fails the socket (-EPERM without CAP_NET_ADMIN) instead of
 * returning it unmarked. Options the caller needs (TCP_NODELAY, ...) go
 * on before sock_connect().
 */
int sock_open_marked(int family, uint32_t mark);

/* Starts a non-blocking connect: 0 when connected or in progress, or the
 * -errno of an immediate failure. The caller still owns fd either way. */
int sock_connect(int fd, const struct sockaddr *dest);

/* sock_connect_from() flags and what it tells. */
#define SOCK_FROM_TRANSPARENT	0x1	/* src is not ours: IP_TRANSPARENT */
#define SOCK_FROM_PORT_KEPT	0x2	/* out: the connection has src's port */

/* One request to a kernel netlink family and its answer (sock.c). */
ssize_t sock_nl_ask(int proto, const void *req, size_t len, void *resp, size_t cap);

/*
 * A marked socket (sock_open_marked()) whose non-blocking connect to dest
 * started from src: the fd, or -errno (-EPERM: IP_TRANSPARENT refused;
 * -EADDRNOTAVAIL: no source port was free). src's own port first, with
 * SO_REUSEADDR, so that a TIME_WAIT of ours on the very tuple is taken
 * over at once (the kernel checks the timestamps, as for tcp_tw_reuse;
 * an explicitly bound connect needs no sysctl for it); when that port is
 * held (a listener, a live connection on the tuple), src's address with a
 * port the kernel picks (IP_BIND_ADDRESS_NO_PORT). src's port 0: the
 * kernel's port only. *flags: SOCK_FROM_* in, SOCK_FROM_PORT_KEPT out.
 */
int sock_connect_from(const struct sockaddr *dest, const struct sockaddr *src, uint32_t mark,
		      unsigned *flags);

/* Whether the kernel finished fd's connect, well or badly (SO_ERROR
 * says which), whether or not the event loop has seen it yet: for a
 * connect deadline, which a loop checks before the batch's socket
 * events. One poll(2), not for the hot path. */
bool sock_connect_done(int fd);

/* The most descriptors one message carries: the kernel's SCM_MAX_FD. */
#define SOCK_FDS_MAX		253

/*
 * Sends len bytes of buf with n descriptors (SCM_RIGHTS; none when n is
 * 0) as one message on the UNIX socket fd, sendmsg(2) flags as given.
 * The bytes sent, or -errno (-EINVAL: more than SOCK_FDS_MAX).
 */
ssize_t sock_send_fds(int fd, const void *buf, size_t len, const int *fds, unsigned n,
		      int flags);

/*
 * Receives one message of at most len bytes into buf on the UNIX socket
 * fd, with its descriptors (sendmsg(2) flags as given). The control buffer
 * admits exactly room of them (CMSG_LEN, not CMSG_SPACE, which rounds up
 * to room for one more that the kernel would install and nobody close),
 * and the kernel drops the rest with MSG_CTRUNC; of those it installs,
 * the first max (at most room) go into fds[] (*n_fds of them) and any
 * beyond are closed here, so that none is left open whatever the sender
 * sent. *msg_flags: the message's flags (MSG_CTRUNC, MSG_TRUNC). The
 * bytes received, or -errno (-EINVAL: room above SOCK_FDS_MAX).
 */
ssize_t sock_recv_fds(int fd, void *buf, size_t len, int *fds, unsigned max, unsigned room,
		      unsigned *n_fds, int *msg_flags, int flags);

/* sock_bind() flags. */
#define SOCK_BIND_NONBLOCK	0x1	/* SOCK_NONBLOCK (a listener on a loop) */
#define SOCK_BIND_REUSEPORT	0x2	/* SO_REUSEPORT: each worker binds its own */
#define SOCK_BIND_DUALSTACK_ANY	0x4	/* "[::]:port" also takes IPv4 */
#define SOCK_BIND_TRANSPARENT	0x8	/* IP(V6)_TRANSPARENT: takes TPROXY'd connections */

/*
 * A close-on-exec TCP socket bound to sa, with SO_REUSEADDR (a restarted
 * daemon rebinds at once over TIME_WAIT) and the flags above. An IPv6
 * socket is IPv6 only, so that "[::]:7001" and "0.0.0.0:7001" can both be
 * bound, except an any address with SOCK_BIND_DUALSTACK_ANY. The caller
 * listens, or closes it (a probe whether the address is free).
 */
int sock_bind(const struct sockaddr *sa, socklen_t len, unsigned flags);

/* close() then sends an RST instead of a FIN: how a reset is carried on
 * to an application. 0 or -errno. */
int sock_set_rst_on_close(int fd);

/* Whether the TCP connection of fd still holds its 4-tuple: false once it
 * ended (closed, or in TIME_WAIT, where a client may take the tuple
 * over), or when fd is no TCP socket. */
bool sock_tcp_holds_tuple(int fd);

/*
 * The mark of the TCP socket that holds the 4-tuple (local, remote) in
 * this network namespace, asked of the kernel (sock_diag): 0 and *mark,
 * -ENOENT when no socket holds it or only a TIME_WAIT one, -EOPNOTSUPP
 * when the kernel does not say the mark (without CAP_NET_ADMIN), or
 * another -errno. One netlink round trip: not for the hot path.
 */
int sock_tuple_mark(const struct sockaddr *local, const struct sockaddr *remote, uint32_t *mark);

#endif
