/* SPDX-License-Identifier: MIT */
/* Types of a worker's event loop (loop.h). Types only. */
#ifndef SMCPROXY_LOOP_T_H
#define SMCPROXY_LOOP_T_H

#include <stdbool.h>
#include <uv.h>

#include "epset-t.h"
#include "list.h"

/*
 * Embedded in an object that an event of the current epoll batch may
 * still name: fn frees it once the batch is over (loop_defer()).
 */
struct loop_defer {
	struct list_head node;
	void (*fn)(struct loop_defer *d);
};

/* When a hook runs (loop_hook_add()). */
enum loop_phase {
	LOOP_BATCH_END,		/* after each batch of events, before deferred frees */
	LOOP_BATCH_DONE,	/* after the deferred frees of each batch */
	LOOP_BEFORE_SLEEP,	/* before the loop blocks; may ask for another round */
	LOOP_PHASE__MAX
};

/*
 * Work a layer above registers with the loop, as Redis' beforesleep and
 * libuv's prepare handles: the loop names nobody, it runs hooks.
 * LOOP_BEFORE_SLEEP: run is false after LOOP_SLEEP_ROUNDS rounds (then the
 * hook only makes sure the loop wakes for what is pending) and the return
 * value asks for one more round; the other phases ignore both.
 */
struct loop_hook {
	struct list_head node;
	bool (*fn)(struct loop_hook *h, bool run);
};

struct loop {
	uv_loop_t *uv;
	struct epset epset;		/* every data-plane fd, edge-triggered */
	struct list_head hooks[LOOP_PHASE__MAX];
	struct list_head grave;		/* struct loop_defer */
	uv_prepare_t tick;		/* the batch end of libuv's own events */
	unsigned open_handles;		/* closing through loop_close_handle() */
	bool closing;			/* loop_close() called */
	void (*close_cb)(struct loop *l);
};

#endif
