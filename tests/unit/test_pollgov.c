/* SPDX-License-Identifier: MIT */
/*
 * The adaptive poll window (proxy/core/pollgov.c), as the kernel's
 * haltpoll governor: it grows when work came back after the window but
 * within the bound, shrinks when the wait outlasted the bound, stays put
 * when work came within it, and never passes the bound. Unlike haltpoll
 * a closed window opens only on the second short wait in a row, so that
 * waits alternating short and long poll for nothing never.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pollgov.h"

#define US 1000ull

/* Off (bound 0): nothing ever opens the window. */
static void test_off(void **state)
{
	struct pollgov g;

	(void)state;
	pollgov_init(&g, 0);
	pollgov_woke(&g, 10 * US);
	assert_int_equal(pollgov_window(&g), 0);
}

/* A request/response rhythm of 60 us under a 300 us bound: the window
 * opens on the second short wait (25 us), grows (50, 100) until it
 * catches the next message, then stays. */
static void test_grows_to_the_rhythm(void **state)
{
	struct pollgov g;

	(void)state;
	pollgov_init(&g, 300 * US);
	assert_int_equal(pollgov_window(&g), 0);
	pollgov_woke(&g, 60 * US);
	assert_int_equal(pollgov_window(&g), 0);
	pollgov_woke(&g, 60 * US);
	assert_int_equal(pollgov_window(&g), POLLGOV_GROW_START_NS);
	pollgov_woke(&g, 60 * US);
	assert_int_equal(pollgov_window(&g), 2 * POLLGOV_GROW_START_NS);
	pollgov_woke(&g, 60 * US);
	assert_int_equal(pollgov_window(&g), 4 * POLLGOV_GROW_START_NS);
	/* Caught within the window: a poll, not a sleep; no change. */
	pollgov_woke(&g, 60 * US);
	assert_int_equal(pollgov_window(&g), 4 * POLLGOV_GROW_START_NS);
}

/* Never past the bound, however often work comes just within it. */
static void test_bounded(void **state)
{
	struct pollgov g;
	int i;

	(void)state;
	pollgov_init(&g, 300 * US);
	for (i = 0; i < 20; i++)
		pollgov_woke(&g, 299 * US);
	assert_int_equal(pollgov_window(&g), 300 * US);
	/* A smaller bound (reload) cuts the window at once. */
	pollgov_set_max(&g, 40 * US);
	assert_int_equal(pollgov_window(&g), 40 * US);
	/* A bound below the start: the window is the bound or nothing. */
	pollgov_init(&g, 10 * US);
	pollgov_woke(&g, 5 * US);
	pollgov_woke(&g, 5 * US);
	assert_int_equal(pollgov_window(&g), 10 * US);
	pollgov_woke(&g, 11 * US);
	assert_int_equal(pollgov_window(&g), 0);
}

/* Idle: each sleep past the bound halves the window; below the start
 * it closes, so an idle worker stops polling after a few wake-ups. */
static void test_shrinks_when_idle(void **state)
{
	struct pollgov g;
	int i;

	(void)state;
	pollgov_init(&g, 300 * US);
	for (i = 0; i < 6; i++)
		pollgov_woke(&g, 299 * US);
	assert_int_equal(pollgov_window(&g), 300 * US);
	pollgov_woke(&g, 5000000 * US);
	assert_int_equal(pollgov_window(&g), 150 * US);
	pollgov_woke(&g, 301 * US);
	assert_int_equal(pollgov_window(&g), 75 * US);
	pollgov_woke(&g, 1000 * US);
	assert_int_equal(pollgov_window(&g), 37500);
	pollgov_woke(&g, 1000 * US);
	assert_int_equal(pollgov_window(&g), 0);
	pollgov_woke(&g, 1000 * US);
	assert_int_equal(pollgov_window(&g), 0);
}

/*
 * Waits that alternate short and long, as a daemon's relaying a ping-pong
 * whose far end is slow (200 us for the local application, 6 ms for the
 * peer daemon, under a 300 us bound): a window opened by a short wait
 * would be spent on the long one that follows and closed by it. It never
 * opens. Two short waits in a row, whatever came before, open it.
 */
static void test_alternating_stays_closed(void **state)
{
	struct pollgov g;
	int i;

	(void)state;
	pollgov_init(&g, 300 * US);
	for (i = 0; i < 10; i++) {
		pollgov_woke(&g, 200 * US);
		assert_int_equal(pollgov_window(&g), 0);
		pollgov_woke(&g, 6000 * US);
		assert_int_equal(pollgov_window(&g), 0);
	}
	pollgov_woke(&g, 200 * US);
	pollgov_woke(&g, 200 * US);
	assert_int_equal(pollgov_window(&g), POLLGOV_GROW_START_NS);
	/* Open, it grows on a single short wait, as before. */
	pollgov_woke(&g, 6000 * US);
	assert_int_equal(pollgov_window(&g), 0);
	pollgov_woke(&g, 200 * US);
	assert_int_equal(pollgov_window(&g), 0);
	pollgov_woke(&g, 200 * US);
	pollgov_woke(&g, 200 * US);
	assert_int_equal(pollgov_window(&g), 2 * POLLGOV_GROW_START_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_grows_to_the_rhythm),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_shrinks_when_idle),
		cmocka_unit_test(test_alternating_stays_closed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
