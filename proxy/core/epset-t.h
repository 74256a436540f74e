/* SPDX-License-Identifier: MIT */
/* Types of the edge-triggered epoll set (epset.h). Types only. */
#ifndef SMCPROXY_EPSET_T_H
#define SMCPROXY_EPSET_T_H

#include <stdint.h>
#include <uv.h>

struct epset_entry;
typedef void (*epset_cb)(struct epset_entry *e, uint32_t events);

/* Embedded in whatever owns the fd; must live until the fd is closed and
 * the current batch of events is over (owners free in a close callback). */
struct epset_entry {
	epset_cb cb;
};

struct epset {
	int fd;
	uv_poll_t poll;
	/* After each batch of events: work the handlers left for the end of
	 * the batch (doorbells, deferred frees). May be NULL. */
	void (*batch_end)(struct epset *s);
	void (*close_cb)(struct epset *s);
};

#endif
