/* SPDX-License-Identifier: MIT */
/*
 * The worker's event loop (proxy/core/loop.c) on a real libuv loop: the
 * order of the hooks and the deferred frees at the end of a batch, the
 * before-sleep rounds, busy polling after activity (the LOOP_POLL hooks
 * run instead of a blocking wait, for at most busy_poll.usecs after the
 * last work found, and a second's budget of fruitless polls stops it),
 * and the close that waits for every handle.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/container.h"
#include "core/epset.h"
#include "core/loop.h"

struct rig {
	uv_loop_t uv;
	struct loop l;
	struct loop_hook end, done, sleep, poll;
	struct loop_defer d;
	char trace[64];
	size_t n_trace;
	unsigned sleeps_wanted;		/* before-sleep rounds that ask for more */
	unsigned polls, poll_found;	/* LOOP_POLL calls; how many report work */
	int efd;
	struct epset_entry ev;
	unsigned events;
	uv_timer_t stop;
	bool closed;
};

static struct rig *rig_of(struct loop_hook *h, size_t off)
{
	return (struct rig *)((char *)h - off);
}

static void mark(struct rig *r, char c)
{
	if (r->n_trace < sizeof(r->trace) - 1)
		r->trace[r->n_trace++] = c;
}

static bool on_end(struct loop_hook *h, bool run)
{
	mark(rig_of(h, offsetof(struct rig, end)), 'E');
	return false;
}

static bool on_done(struct loop_hook *h, bool run)
{
	mark(rig_of(h, offsetof(struct rig, done)), 'D');
	return false;
}

static bool on_sleep(struct loop_hook *h, bool run)
{
	struct rig *r = rig_of(h, offsetof(struct rig, sleep));

	mark(r, run ? 'S' : 's');
	if (r->sleeps_wanted) {
		r->sleeps_wanted--;
		return true;
	}
	return false;
}

static bool on_poll(struct loop_hook *h, bool run)
{
	struct rig *r = rig_of(h, offsetof(struct rig, poll));

	assert_true(run);
	r->polls++;
	if (r->poll_found) {
		r->poll_found--;
		return true;
	}
	return false;
}

static void on_freed(struct loop_defer *d)
{
	mark(container_of(d, struct rig, d), 'F');
}

static void on_event(struct epset_entry *e, uint32_t events)
{
	struct rig *r = container_of(e, struct rig, ev);
	uint64_t v;

	r->events++;
	if (read(r->efd, &v, sizeof(v)) < 0)
		return;
}

static void on_closed(struct loop *l)
{
	container_of(l, struct rig, l)->closed = true;
}

static void on_stop(uv_timer_t *t)
{
	struct rig *r = t->data;

	loop_close_handle(&r->l, (uv_handle_t *)&r->stop);
	epset_del(&r->l.epset, r->efd);
	loop_close(&r->l, on_closed);
}

static struct rig *rig_new(void)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_int_equal(uv_loop_init(&r->uv), 0);
	assert_int_equal(loop_init(&r->l, &r->uv), 0);
	r->end.fn = on_end;
	r->done.fn = on_done;
	r->sleep.fn = on_sleep;
	r->poll.fn = on_poll;
	loop_hook_add(&r->l, LOOP_BATCH_END, &r->end);
	loop_hook_add(&r->l, LOOP_BATCH_DONE, &r->done);
	loop_hook_add(&r->l, LOOP_BEFORE_SLEEP, &r->sleep);
	loop_hook_add(&r->l, LOOP_POLL, &r->poll);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(r->efd >= 0);
	r->ev.cb = on_event;
	assert_int_equal(epset_add(&r->l.epset, r->efd, EPOLLIN, &r->ev), 0);
	uv_timer_init(&r->uv, &r->stop);
	r->stop.data = r;
	return r;
}

static void rig_free(struct rig *r)
{
	assert_true(r->closed);
	assert_int_equal(r->l.open_handles, 0);
	close(r->efd);
	assert_int_equal(uv_loop_close(&r->uv), 0);
	free(r);
}

/* End of a batch: the layers' work (E), then the deferred frees (F), then
 * the hooks that wait for them (D); nothing is freed before its batch
 * ends. */
static void test_batch_order(void **state)
{
	struct rig *r = rig_new();

	loop_defer(&r->l, &r->d, on_freed);
	assert_true(loop_has_deferred(&r->l));
	uv_timer_start(&r->stop, on_stop, 0, 0);
	loop_run(&r->l);
	assert_false(loop_has_deferred(&r->l));
	r->trace[r->n_trace] = '\0';
	assert_non_null(strstr(r->trace, "EFD"));
	assert_null(strchr(strchr(r->trace, 'F') + 1, 'F'));	/* freed once */
	rig_free(r);
}

/* A before-sleep hook that asks for more gets another round, with run
 * true for LOOP_SLEEP_ROUNDS rounds, then run false: a steady stream of
 * work cannot keep the loop from its sockets and timers. */
static void test_sleep_rounds(void **state)
{
	struct rig *r = rig_new();
	size_t i, runs = 0, stops = 0;

	r->sleeps_wanted = LOOP_SLEEP_ROUNDS + 3;
	uv_timer_start(&r->stop, on_stop, 0, 0);
	loop_run(&r->l);
	for (i = 0; i < r->n_trace; i++) {
		runs += r->trace[i] == 'S';
		stops += r->trace[i] == 's';
	}
	assert_true(runs >= LOOP_SLEEP_ROUNDS);
	assert_true(stops >= 1);
	rig_free(r);
}

/* Busy polling off (the default): the poll hooks never run, every wait
 * blocks. */
static void test_busy_poll_off(void **state)
{
	struct rig *r = rig_new();
	uint64_t one = 1;

	assert_int_equal(write(r->efd, &one, sizeof(one)), sizeof(one));
	uv_timer_start(&r->stop, on_stop, 20, 0);
	loop_run(&r->l);
	assert_int_equal(r->events, 1);
	assert_int_equal(r->polls, 0);
	assert_int_equal(counter_get(&r->l.stats.polls), 0);
	assert_true(counter_get(&r->l.stats.wakeups) >= 1);
	rig_free(r);
}

/* On: after an event the loop polls (the hooks and the set) instead of
 * sleeping; a poll that finds work extends the window; once the window
 * passed with nothing found the loop sleeps again: the timer at 300 ms
 * still fires, and the fruitless polls take the 2 ms window, not the whole
 * 300 ms (bounds loose enough for a loaded machine). */
static void test_busy_poll_window(void **state)
{
	struct rig *r = rig_new();
	uint64_t one = 1, polls, idle_ns;

	loop_set_busy_poll(&r->l, 2000, 100, false);
	r->poll_found = 3;
	assert_int_equal(write(r->efd, &one, sizeof(one)), sizeof(one));
	uv_timer_start(&r->stop, on_stop, 300, 0);
	loop_run(&r->l);
	polls = counter_get(&r->l.stats.polls);
	idle_ns = counter_get(&r->l.stats.poll_ns);
	assert_int_equal(r->events, 1);
	assert_true(r->polls >= 4);		/* 3 that found work, then empty ones */
	assert_int_equal(polls, r->polls);
	assert_int_equal(counter_get(&r->l.stats.poll_hits), 3);	/* the hook found 3 */
	/* Fruitless polling stopped after the window and the loop slept
	 * again: before the event and after the window. */
	assert_true(idle_ns < 200 * 1000000ull);
	assert_true(counter_get(&r->l.stats.sleeps) >= 2);
	rig_free(r);
}

/* The budget: with 1 % of a CPU (10 ms a second) and a window of 100 ms,
 * fruitless polling stops at the budget and the loop sleeps. */
static void test_busy_poll_budget(void **state)
{
	struct rig *r = rig_new();
	uint64_t one = 1;

	loop_set_busy_poll(&r->l, 100000, 1, false);
	assert_int_equal(write(r->efd, &one, sizeof(one)), sizeof(one));
	uv_timer_start(&r->stop, on_stop, 300, 0);
	loop_run(&r->l);
	assert_true(counter_get(&r->l.stats.poll_budget_hits) >= 1);
	assert_true(counter_get(&r->l.stats.poll_ns) < 90 * 1000000ull);
	rig_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_order),
		cmocka_unit_test(test_sleep_rounds),
		cmocka_unit_test(test_busy_poll_off),
		cmocka_unit_test(test_busy_poll_window),
		cmocka_unit_test(test_busy_poll_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
