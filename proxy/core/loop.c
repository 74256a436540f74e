/* SPDX-License-Identifier: MIT */
/*
 * A worker's event loop (loop.h). proxy_run used to be this and to call
 * the link groups, the flows and the transports by name; now they hook in.
 */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "container.h"
#include "epset.h"
#include "loop.h"
#include "pollgov.h"

#define LOOP_RUN_BATCH 64

static void loop_run_hooks(struct loop *l, enum loop_phase phase)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &l->hooks[phase]) {
		struct loop_hook *h = list_entry(pos, struct loop_hook, node);

		h->fn(h, true);
	}
}

/*
 * The end of a batch of events, and of every loop iteration: the layers'
 * end-of-batch work (doorbells of links that posted, one per link however
 * many flows wrote), then what the batch let go of is freed.
 */
static void loop_batch_end(struct loop *l)
{
	loop_run_hooks(l, LOOP_BATCH_END);
	while (!list_empty(&l->grave)) {
		struct loop_defer *d = list_entry(l->grave.next, struct loop_defer, node);

		list_del(&d->node);
		d->fn(d);
	}
	loop_run_hooks(l, LOOP_BATCH_DONE);
}

static void loop_before_sleep(struct loop *l)
{
	struct list_head *pos, *tmp;
	unsigned round;
	bool more = true;

	for (round = 0; more; round++) {
		loop_batch_end(l);
		more = false;
		list_for_each_safe(pos, tmp, &l->hooks[LOOP_BEFORE_SLEEP]) {
			struct loop_hook *h = list_entry(pos, struct loop_hook, node);

			if (h->fn(h, round < LOOP_SLEEP_ROUNDS))
				more = true;
		}
	}
}

static void loop_on_epset_batch(struct epset *s)
{
	loop_batch_end(container_of(s, struct loop, epset));
}

static void loop_on_tick(uv_prepare_t *h)
{
	loop_before_sleep(h->data);
}

int loop_init(struct loop *l, uv_loop_t *uv)
{
	int err, i;

	*l = (struct loop){ .uv = uv };
	for (i = 0; i < LOOP_PHASE__MAX; i++)
		list_init(&l->hooks[i]);
	list_init(&l->grave);
	err = epset_init(&l->epset, uv);
	if (err)
		return err;
	l->epset.batch_end = loop_on_epset_batch;
	/* Events libuv dispatches itself (timers, its own fds) end their
	 * batch here. Unreferenced: it keeps nothing alive. */
	uv_prepare_init(uv, &l->tick);
	l->tick.data = l;
	uv_prepare_start(&l->tick, loop_on_tick);
	uv_unref((uv_handle_t *)&l->tick);
	return 0;
}

void loop_discard(struct loop *l)
{
	uv_close((uv_handle_t *)&l->tick, NULL);
	uv_close((uv_handle_t *)&l->epset.poll, NULL);
	close(l->epset.fd);
	l->epset.fd = -1;
}

void loop_hook_add(struct loop *l, enum loop_phase phase, struct loop_hook *h)
{
	assert(phase < LOOP_PHASE__MAX && h->fn);
	list_add_tail(&h->node, &l->hooks[phase]);
}

void loop_defer(struct loop *l, struct loop_defer *d, void (*fn)(struct loop_defer *d))
{
	assert(fn);
	d->fn = fn;
	list_add_tail(&d->node, &l->grave);
}

bool loop_has_deferred(const struct loop *l)
{
	return !list_empty(&l->grave);
}

void loop_set_busy_poll(struct loop *l, unsigned usecs, unsigned budget_pct, bool adaptive)
{
	l->busy_ns = (uint64_t)usecs * 1000;
	l->budget_ns = (uint64_t)(budget_pct > 100 ? 100 : budget_pct) * 10000000;
	pollgov_set_max(&l->gov, adaptive ? l->busy_ns : 0);
	l->adaptive = adaptive;
	if (!l->busy_ns)
		l->busy_until = 0;
}

/* After work: poll for the window from now on. */
static void loop_worked(struct loop *l)
{
	l->last_work = uv_hrtime();
	l->busy_until = l->last_work + (l->adaptive ? pollgov_window(&l->gov) : l->busy_ns);
}

/* A blocking wait returned work: teach the adaptive window how long
 * after the last work it came. */
static void loop_woke(struct loop *l)
{
	uint64_t before = pollgov_window(&l->gov);

	if (!l->adaptive || !l->last_work)
		return;
	pollgov_woke(&l->gov, uv_hrtime() - l->last_work);
	if (pollgov_window(&l->gov) > before)
		counter_inc(&l->stats.poll_grows);
	else if (pollgov_window(&l->gov) < before)
		counter_inc(&l->stats.poll_shrinks);
}

/*
 * Whether to poll rather than block now: within busy_ns of the last work,
 * and with this second's budget of fruitless polling left.
 */
static bool loop_busy(struct loop *l, uint64_t now)
{
	if (!l->busy_ns || now >= l->busy_until)
		return false;
	if (now - l->budget_start >= 1000000000) {
		l->budget_start = now;
		l->budget_spent = 0;
	}
	if (l->budget_spent >= l->budget_ns) {
		counter_inc(&l->stats.poll_budget_hits);
		l->busy_until = 0;
		return false;
	}
	return true;
}

/* One busy-poll round's look at the layers' queues (shm rings, CQs). */
static bool loop_poll_hooks(struct loop *l)
{
	struct list_head *pos, *tmp;
	bool found = false;

	list_for_each_safe(pos, tmp, &l->hooks[LOOP_POLL]) {
		struct loop_hook *h = list_entry(pos, struct loop_hook, node);

		if (h->fn(h, true))
			found = true;
	}
	return found;
}

/*
 * With our epoll set as the outer poller and libuv's own epoll fd inside
 * it: one epoll_wait per wake-up instead of two (libuv's, then ours),
 * which was a third of the system calls of a short connection and of a
 * small message over a link. libuv runs (its timers, its own fds, closing
 * handles) only when its fd is readable or a timer is due. The set lives
 * until loop_close(), which is what ends this.
 */
int loop_run(struct loop *l)
{
	uv_loop_t *uv = l->uv;
	struct epoll_event ev[LOOP_RUN_BATCH];
	struct epoll_event uv_ev = { .events = EPOLLIN, .data.ptr = NULL };
	int n, i, timeout;

	if (l->epset.fd < 0 ||
	    epoll_ctl(l->epset.fd, EPOLL_CTL_ADD, uv_backend_fd(uv), &uv_ev) < 0)
		return uv_run(uv, UV_RUN_DEFAULT);
	uv_poll_stop(&l->epset.poll);
	while (l->epset.fd >= 0 && !l->closing) {
		uint64_t now = l->busy_ns ? uv_hrtime() : 0;
		bool run_uv, polling = loop_busy(l, now), found = false;

		if (polling) {
			/* A round that found nothing gives the CPU to
			 * whoever else may run on it (the peer daemon, the
			 * application we wait for) before the next look:
			 * on a CPU they share, spinning would only delay
			 * the answer it waits for. */
			if (l->poll_empty)
				sched_yield();
			/* The end of the last batch, then a look without
			 * saying we may sleep: a peer that sees us running
			 * skips its doorbell. */
			loop_batch_end(l);
			counter_inc(&l->stats.polls);
			found = loop_poll_hooks(l);
			timeout = 0;
		} else {
			loop_before_sleep(l);
			uv_update_time(uv);
			timeout = uv_backend_timeout(uv);
			counter_inc(&l->stats.sleeps);
		}
		n = epoll_wait(l->epset.fd, ev, LOOP_RUN_BATCH, timeout);
		uv_update_time(uv);
		if (polling) {
			/* Timers still run on time while we poll. */
			run_uv = uv_backend_timeout(uv) == 0;
			l->poll_empty = n <= 0 && !found;
			if (n > 0 || found) {
				counter_inc(&l->stats.poll_hits);
			} else {
				uint64_t spent = uv_hrtime() - now;

				l->budget_spent += spent;
				counter_add(&l->stats.poll_ns, spent);
			}
		} else {
			/* Nothing came in time: a timer is due. */
			run_uv = n <= 0 || timeout == 0;
			if (n > 0) {
				counter_inc(&l->stats.wakeups);
				if (l->busy_ns)
					loop_woke(l);
			}
		}
		for (i = 0; i < n; i++) {
			struct epset_entry *e = ev[i].data.ptr;

			if (!e)
				run_uv = true;
			else
				e->cb(e, ev[i].events);
		}
		loop_batch_end(l);
		if ((n > 0 || found) && l->busy_ns)
			loop_worked(l);
		/* Not its return value: with our set no longer polled by
		 * libuv, a closing layer may have no libuv handle left active
		 * while deferred frees and the set itself still wait. */
		if (run_uv)
			uv_run(uv, UV_RUN_NOWAIT);
	}
	/* Closing: the set is going, libuv closes the rest. */
	return uv_run(uv, UV_RUN_DEFAULT);
}

static void loop_maybe_closed(struct loop *l)
{
	if (!l->closing || l->open_handles || !l->close_cb)
		return;
	void (*cb)(struct loop *l) = l->close_cb;

	l->close_cb = NULL;
	cb(l);
}

static void loop_on_handle_closed(uv_handle_t *h)
{
	struct loop *l = h->data;

	assert(l->open_handles > 0);
	l->open_handles--;
	/* A layer waiting for its handles learns it at the batch's end. */
	loop_run_hooks(l, LOOP_BATCH_DONE);
	loop_maybe_closed(l);
}

void loop_close_handle(struct loop *l, uv_handle_t *h)
{
	assert(!uv_is_closing(h));
	h->data = l;
	l->open_handles++;
	uv_close(h, loop_on_handle_closed);
}

static void loop_on_epset_closed(struct epset *s)
{
	struct loop *l = container_of(s, struct loop, epset);

	assert(l->open_handles > 0);
	l->open_handles--;
	loop_maybe_closed(l);
}

void loop_close(struct loop *l, void (*cb)(struct loop *l))
{
	assert(!l->closing);
	l->closing = true;
	l->close_cb = cb;
	loop_close_handle(l, (uv_handle_t *)&l->tick);
	if (l->epset.fd >= 0) {
		l->open_handles++;
		epset_close(&l->epset, loop_on_epset_closed);
	}
	loop_maybe_closed(l);
}
