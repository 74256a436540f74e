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

#include "epset-t.h"

int epset_init(struct epset *s, uv_loop_t *loop);
/* Registers fd with EPOLLET | events. Returns 0 or -errno. */
int epset_add(struct epset *s, int fd, uint32_t events, struct epset_entry *e);
/*
 * Takes fd out of the set. Closing an fd is enough only when no other
 * descriptor shares its open file: one passed to another process (or
 * dup()ed) stays registered, and its events would name a freed entry.
 */
void epset_del(struct epset *s, int fd);
/* Closes the set; close_cb (may be NULL) runs once libuv let go of it. */
void epset_close(struct epset *s, void (*close_cb)(struct epset *s));

#endif
