/* SPDX-License-Identifier: MIT */
/*
 * An edge-triggered epoll set driven by the libuv loop. The data plane
 * registers each socket once, for every event it will ever want, and never
 * re-arms it: with edge triggering, interest does not have to follow
 * back-pressure, which with uv_poll costs an epoll_ctl DEL and ADD per
 * change. Closing an fd takes it out of the set.
 */
#ifndef SMCPROXY_EPSET_H
#define SMCPROXY_EPSET_H

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
	void (*close_cb)(struct epset *s);
};

int epset_init(struct epset *s, uv_loop_t *loop);
/* Registers fd with EPOLLET | events. Returns 0 or -errno. */
int epset_add(struct epset *s, int fd, uint32_t events, struct epset_entry *e);
/* Closes the set; close_cb (may be NULL) runs once libuv let go of it. */
void epset_close(struct epset *s, void (*close_cb)(struct epset *s));

#endif
