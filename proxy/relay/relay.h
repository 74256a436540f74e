/* SPDX-License-Identifier: MIT */
/* The TCP relay: moves a redirected connection's bytes to its original
 * destination and back, with half-close and reset carried across. */
#ifndef SMCPROXY_RELAY_H
#define SMCPROXY_RELAY_H

#include <sys/socket.h>

#include "relay-t.h"

/*
 * Takes ownership of client_fd (non-blocking, connected) and starts a
 * non-blocking connect to dest with SO_MARK, TCP_NODELAY and keepalive.
 * Returns 0, or -errno with client_fd untouched (the caller still owns it)
 * when nothing could be set up (socket/pipe creation failed, e.g. -EMFILE,
 * SO_MARK was refused, or connect() failed at once).
 */
int relay_start(struct relay *r, const struct relay_env *env, int client_fd,
		const struct sockaddr *dest, const struct relay_params *p,
		const struct relay_ops *ops);

/* Ends the relay at once with an RST on both legs (RELAY_END_ABORTED). */
void relay_abort(struct relay *r);

const char *relay_state_name(enum relay_state s);

/* TCP_NODELAY, SO_OOBINLINE and, unless keepalive_ms is 0, keepalive.
 * Set on a listener, accepted sockets inherit them. */
void relay_tune_socket(int fd, uint64_t keepalive_ms);

#endif
