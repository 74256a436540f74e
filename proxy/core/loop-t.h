/* SPDX-License-Identifier: MIT */
/* Types of a worker's event loop (loop.h). Types only. */
#ifndef SMCPROXY_LOOP_T_H
#define SMCPROXY_LOOP_T_H

#include <stdbool.h>
#include <uv.h>

#include "counter.h"
#include "epset-t.h"
#include "list.h"
#include "pollgov-t.h"

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
	LOOP_POLL,		/* busy polling: look for work without sleeping */
	LOOP_PHASE__MAX
};

/*
 * Work a layer above registers with the loop, as Redis' beforesleep and
 * libuv's prepare handles: the loop names nobody, it runs hooks.
 * LOOP_BEFORE_SLEEP: run is false after LOOP_SLEEP_ROUNDS rounds (then the
 * hook only makes sure the loop wakes for what is pending) and the return
 * value asks for one more round. LOOP_POLL: the hook takes what came
 * (run is always true) without saying it may sleep, and returns whether it
 * found work. The other phases ignore both.
 */
struct loop_hook {
	struct list_head node;
	bool (*fn)(struct loop_hook *h, bool run);
};

/* What the loop did, for the stats socket: written by the loop's thread
 * only. */
struct loop_stats {
	counter_t sleeps;		/* blocking waits */
	counter_t wakeups;		/* blocking waits that returned events */
	counter_t polls;		/* busy-poll rounds */
	counter_t poll_hits;		/* busy-poll rounds that found work */
	counter_t poll_ns;		/* time spent in busy-poll rounds that found none */
	counter_t poll_budget_hits;	/* a second's budget ran out */
	counter_t poll_grows;		/* the adaptive window grew */
	counter_t poll_shrinks;		/* ... and shrank */
};

struct loop {
	uv_loop_t *uv;
	struct epset epset;		/* every data-plane fd, edge-triggered */
	struct list_head hooks[LOOP_PHASE__MAX];
	struct list_head grave;		/* struct loop_defer */
	uv_prepare_t tick;		/* the batch end of libuv's own events */
	unsigned open_handles;		/* closing through loop_close_handle() */
	/* Busy polling (loop_set_busy_poll()): after activity the loop polls
	 * instead of blocking, for the window since the last work found (gov's
	 * when adaptive, else busy_ns), and for at most budget_ns of
	 * fruitless polling a second. */
	uint64_t busy_ns;		/* the bound; 0: off */
	uint64_t budget_ns;
	struct pollgov gov;
	bool adaptive;
	bool poll_empty;		/* the last poll round found nothing */
	uint64_t last_work;		/* uv_hrtime() at the end of the last work */
	uint64_t busy_until;		/* uv_hrtime(): poll until then */
	uint64_t budget_start;		/* start of the current second */
	uint64_t budget_spent;		/* fruitless polling in it */
	struct loop_stats stats;
	bool closing;			/* loop_close() called */
	void (*close_cb)(struct loop *l);
};

#endif
