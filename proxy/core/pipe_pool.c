/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "pipe_pool.h"

int pipe_pool_init(struct pipe_pool *pp, size_t max, size_t size)
{
	pp->slots = max ? calloc(max, sizeof(*pp->slots)) : NULL;
	if (max && !pp->slots)
		return -ENOMEM;
	pp->n = 0;
	pp->max = max;
	pp->size = size;
	return 0;
}

int pipe_pool_get(struct pipe_pool *pp, struct pipe_slot *out)
{
	int p[2], cap;

	if (pp->n) {
		*out = pp->slots[--pp->n];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	/* A larger pipe may be refused (pipe-user-pages-soft without
	 * CAP_SYS_RESOURCE): the relay then runs with what it got. */
	if (pp->size)
		fcntl(p[1], F_SETPIPE_SZ, (int)pp->size);
	cap = fcntl(p[1], F_GETPIPE_SZ);
	*out = (struct pipe_slot){ .rd = p[0], .wr = p[1],
				   .cap = cap > 0 ? (size_t)cap : 65536 };
	return 0;
}

void pipe_pool_put(struct pipe_pool *pp, struct pipe_slot *s, bool empty)
{
	if (s->rd < 0)
		return;
	if (empty && pp->n < pp->max) {
		pp->slots[pp->n++] = *s;
	} else {
		close(s->rd);
		close(s->wr);
	}
	s->rd = s->wr = -1;
}

void pipe_pool_trim(struct pipe_pool *pp)
{
	while (pp->n) {
		pp->n--;
		close(pp->slots[pp->n].rd);
		close(pp->slots[pp->n].wr);
	}
}

void pipe_pool_close(struct pipe_pool *pp)
{
	pipe_pool_trim(pp);
	free(pp->slots);
	pp->slots = NULL;
	pp->max = 0;
}
