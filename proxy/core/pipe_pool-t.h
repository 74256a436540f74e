/* SPDX-License-Identifier: MIT */
/* Types of the pipe pool (pipe_pool.h). Types only. */
#ifndef SMCPROXY_PIPE_POOL_T_H
#define SMCPROXY_PIPE_POOL_T_H

#include <stddef.h>

struct pipe_slot {
	int rd, wr;
	size_t cap;
};

struct pipe_pool {
	struct pipe_slot *slots;
	size_t n, max;
	size_t size;		/* capacity asked of new pipes */
};

#endif
