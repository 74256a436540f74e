/* SPDX-License-Identifier: MIT */
/*
 * Pipes for the relay's splice(), kept for reuse: creating and sizing a
 * pipe pair costs five system calls, a quarter of a short flow's budget.
 * Only empty pipes come back; a pipe that still holds bytes of a reset
 * flow is closed instead.
 */
#ifndef SMCPROXY_PIPE_POOL_H
#define SMCPROXY_PIPE_POOL_H

#include <stdbool.h>

#include "pipe_pool-t.h"

/* max: how many idle pipes to keep. Returns 0 or -ENOMEM. */
int pipe_pool_init(struct pipe_pool *pp, size_t max, size_t size);
/* An empty pipe, reused or new. Returns 0 or -errno (-EMFILE...). */
int pipe_pool_get(struct pipe_pool *pp, struct pipe_slot *out);
/* Gives a pipe back: kept when empty and there is room, else closed. */
void pipe_pool_put(struct pipe_pool *pp, struct pipe_slot *s, bool empty);
/* Closes the idle pipes: their fds are worth more elsewhere (EMFILE). */
void pipe_pool_trim(struct pipe_pool *pp);
void pipe_pool_close(struct pipe_pool *pp);

#endif
