/* SPDX-License-Identifier: MIT */
/*
 * The adaptive poll window (proxy/core/pollgov.c), as the kernel's
 * haltpoll governor: it grows when work came back after the window but
 * within the bound, shrinks when the wait outlasted the bound, stays put
 * when work came within it, and never passes the bound.
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
 * grows from 0 (25, 50, 100) until it catches the next message, then
 * stays. */
static void test_grows_to_the_rhythm(void **state)
{
	struct pollgov g;

	(void)state;
	pollgov_init(&g, 300 * US);
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
	for (i = 0; i < 5; i++)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_grows_to_the_rhythm),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_shrinks_when_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
