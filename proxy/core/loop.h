/* SPDX-License-Identifier: MIT */
/*
 * A worker's event loop: libuv's loop with the data plane's edge-triggered
 * epoll set (epset.h) as the outer poller, one epoll_wait per wake-up, and
 * the hooks the layers above register. It knows no flow, link group or
 * transport: everything it does for them is a hook or a deferred free.
 */
#ifndef SMCPROXY_LOOP_H
#define SMCPROXY_LOOP_H

#include "loop-t.h"

/* Rounds of before-sleep work, at most, before the loop blocks, so that
 * sockets and timers get their turn under a steady stream of messages. */
#define LOOP_SLEEP_ROUNDS 8

/* Opens the epoll set on uv. 0 or -errno. */
int loop_init(struct loop *l, uv_loop_t *uv);
void loop_hook_add(struct loop *l, enum loop_phase phase, struct loop_hook *h);
/* fn(d) runs once no event of the current batch can name d's object. */
void loop_defer(struct loop *l, struct loop_defer *d, void (*fn)(struct loop_defer *d));
/* Whether deferred frees are waiting for the end of the batch. */
bool loop_has_deferred(const struct loop *l);
/*
 * Busy polling: after a wake-up or a poll that found work, the loop polls
 * its epoll set and the LOOP_POLL hooks before it blocks, for up to usecs,
 * spending at most budget_pct of a CPU a second on polls that find nothing.
 * A round trip then does not pay a sleeping CPU's wake-up (tens of
 * microseconds on a virtual machine). adaptive: the window is pollgov's,
 * between 0 and usecs, learnt from how soon work comes back after the
 * loop blocked; else always usecs. usecs 0: off.
 */
void loop_set_busy_poll(struct loop *l, unsigned usecs, unsigned budget_pct, bool adaptive);
/* Undoes loop_init() for a loop that never ran: its handles close with
 * no callback, the set's fd at once. */
void loop_discard(struct loop *l);
/*
 * Runs the loop (as uv_run(UV_RUN_DEFAULT) would) until nothing is left
 * in it. The uv loop must be l's alone.
 */
int loop_run(struct loop *l);
/*
 * Closes h (libuv's uv_close) and counts it until its close callback: the
 * loop's close waits for it. h->data is the loop's from here.
 */
void loop_close_handle(struct loop *l, uv_handle_t *h);
/*
 * Closes the epoll set and the loop's own handles once the layers above
 * are done with them (their fds closed); cb runs when every handle closed
 * through loop_close_handle() is gone.
 */
void loop_close(struct loop *l, void (*cb)(struct loop *l));

#endif
