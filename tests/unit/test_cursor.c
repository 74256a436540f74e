/* SPDX-License-Identifier: MIT */
/*
 * Ring cursors (proxy/smc/cursor.h): advancing across the ring's wrap and the
 * wrap counter's own wrap at 2^32, the distance between two cursors (full
 * ring vs empty, stale cursors as negative distances), at the smallest and
 * the largest ring size. Every case is checked against the plain stream
 * position wrap * size + count, computed in 128 bits where it must be.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "smc/cursor.h"
#include "smc/rmb-t.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KIB		1024u
#define MIB		(1024u * 1024u)
#define RING_MIN	(16u * KIB)
#define RING_MAX	(64u * MIB)

static const uint32_t sizes[] = { RING_MIN, RING_MAX };

static struct smc_cursor cur(uint32_t wrap, uint32_t count)
{
	return (struct smc_cursor){ .wrap = wrap, .count = count };
}

static void assert_cursor(struct smc_cursor c, uint32_t wrap, uint32_t count)
{
	assert_int_equal(c.wrap, wrap);
	assert_int_equal(c.count, count);
}

/* The two ends of the size classes are the ones the pool hands out. */
static void test_sizes_are_the_class_ends(void **state)
{
	assert_int_equal(RING_MIN, RMB_MIN_SIZE);
	assert_int_equal(RING_MAX, RMB_MIN_SIZE << (RMB_CLASSES - 1));
}

static void test_valid(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_true(cursor_valid(cur(0, 0), s));
		assert_true(cursor_valid(cur(0, s - 1), s));
		assert_true(cursor_valid(cur(UINT32_MAX, s - 1), s));
		assert_false(cursor_valid(cur(0, s), s));
		assert_false(cursor_valid(cur(7, s + 1), s));
		assert_false(cursor_valid(cur(0, UINT32_MAX), s));
	}
}

static void test_add_within_ring(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_cursor(cursor_add(cur(3, 0), 0, s), 3, 0);
		assert_cursor(cursor_add(cur(3, 0), 100, s), 3, 100);
		assert_cursor(cursor_add(cur(3, 100), s - 101, s), 3, s - 1);
	}
}

static void test_add_across_wrap(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		/* Landing exactly on the end is offset 0 of the next round. */
		assert_cursor(cursor_add(cur(0, s - 10), 10, s), 1, 0);
		assert_cursor(cursor_add(cur(0, s - 10), 25, s), 1, 15);
		assert_cursor(cursor_add(cur(0, s - 1), 1, s), 1, 0);
		/* A whole ring from anywhere: same offset, next wrap. */
		assert_cursor(cursor_add(cur(0, 0), s, s), 1, 0);
		assert_cursor(cursor_add(cur(9, 1234), s, s), 10, 1234);
		assert_cursor(cursor_add(cur(9, s - 1), s, s), 10, s - 1);
	}
}

/* The wrap counter is modulo 2^32 on the wire: it wraps to 0. */
static void test_add_wrap_counter_wraps(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_cursor(cursor_add(cur(UINT32_MAX, s - 10), 25, s), 0, 15);
		assert_cursor(cursor_add(cur(UINT32_MAX, 0), s, s), 0, 0);
		assert_cursor(cursor_add(cur(UINT32_MAX, s - 1), s, s), 0, s - 1);
		/* Not at the end: the counter stays. */
		assert_cursor(cursor_add(cur(UINT32_MAX, 0), s - 1, s), UINT32_MAX, s - 1);
	}
}

/* Whatever the start and the step, the result is a valid cursor. */
static void test_add_stays_valid(void **state)
{
	static const uint32_t starts[] = { 0, 1, 4095, 4096 };
	size_t i, j, k;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];
		uint32_t steps[] = { 0, 1, s / 2, s - 1, s };

		for (j = 0; j < ARRAY_SIZE(starts); j++) {
			for (k = 0; k < ARRAY_SIZE(steps); k++) {
				struct smc_cursor a = cur(UINT32_MAX, starts[j]);
				struct smc_cursor b = cur(UINT32_MAX, s - 1 - starts[j]);

				assert_true(cursor_valid(cursor_add(a, steps[k], s), s));
				assert_true(cursor_valid(cursor_add(b, steps[k], s), s));
			}
		}
	}
}

/* Producer == consumer is an empty ring; a producer one wrap ahead at the
 * same offset is a full one. The wrap count is what tells them apart. */
static void test_diff_full_vs_empty(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_int_equal(cursor_diff(cur(5, 100), cur(5, 100), s), 0);
		assert_int_equal(cursor_diff(cur(5, 100), cur(6, 100), s), s);
		assert_int_equal(cursor_diff(cur(0, 0), cur(1, 0), s), s);
		assert_int_equal(cursor_diff(cur(0, s - 1), cur(1, s - 1), s), s);
		/* The same at the counter's own wrap. */
		assert_int_equal(cursor_diff(cur(UINT32_MAX, 7), cur(UINT32_MAX, 7), s), 0);
		assert_int_equal(cursor_diff(cur(UINT32_MAX, 7), cur(0, 7), s), s);
		assert_true(cursor_equal(cur(UINT32_MAX, 7), cur(UINT32_MAX, 7)));
		assert_false(cursor_equal(cur(UINT32_MAX, 7), cur(0, 7)));
		assert_false(cursor_equal(cur(1, 7), cur(1, 8)));
	}
}

static void test_diff_across_wrap(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_int_equal(cursor_diff(cur(0, 10), cur(0, 25), s), 15);
		assert_int_equal(cursor_diff(cur(0, s - 10), cur(1, 5), s), 15);
		assert_int_equal(cursor_diff(cur(0, s - 10), cur(1, 0), s), 10);
		assert_int_equal(cursor_diff(cur(41, 1), cur(42, 0), s), s - 1);
		/* Across the counter's 2^32 wrap. */
		assert_int_equal(cursor_diff(cur(UINT32_MAX, s - 10), cur(0, 5), s), 15);
		assert_int_equal(cursor_diff(cur(UINT32_MAX, 1), cur(0, 0), s), s - 1);
	}
}

/* A cursor behind the one we have is stale: the distance is negative,
 * also when the counter wrapped in between. */
static void test_diff_stale_is_negative(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_int_equal(cursor_diff(cur(0, 25), cur(0, 10), s), -15);
		assert_int_equal(cursor_diff(cur(1, 5), cur(0, s - 10), s), -15);
		assert_int_equal(cursor_diff(cur(6, 100), cur(5, 100), s), -(int64_t)s);
		assert_int_equal(cursor_diff(cur(0, 5), cur(UINT32_MAX, s - 10), s), -15);
		assert_int_equal(cursor_diff(cur(0, 0), cur(UINT32_MAX, 0), s), -(int64_t)s);
	}
}

/*
 * The distance is exact for cursors up to 2^31 - 1 wraps apart either
 * way, even for the largest ring (2^57 bytes: no 64-bit overflow), and a
 * cursor 2^31 wraps ahead reads as that far behind, so that a garbage
 * wrap count from a peer counts as stale rather than as a huge advance.
 */
static void test_diff_far_apart(void **state)
{
	const int64_t far = INT32_MAX;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];

		assert_int_equal(cursor_diff(cur(0, 0), cur(INT32_MAX, 0), s), far * s);
		assert_int_equal(cursor_diff(cur(INT32_MAX, 0), cur(0, 0), s), -far * s);
		assert_int_equal(cursor_diff(cur(10, 0), cur(10u + INT32_MAX, s - 1), s),
				 far * s + s - 1);
		assert_int_equal(cursor_diff(cur(0, 0), cur(0x80000000u, 0), s),
				 -(far + 1) * s);
		assert_true(cursor_diff(cur(UINT32_MAX, 0), cur(0x7fffffffu, 0), s) < 0);
	}
}

/*
 * A walk through the ring in uneven steps, starting a few rounds before
 * the wrap counter wraps: at every step the distance from the start is
 * the number of bytes added, and back from the end it is the negative.
 */
static void test_walk_matches_stream_position(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t s = sizes[i];
		struct smc_cursor start = cur(UINT32_MAX - 2, s - 3), c = start;
		unsigned seed = 12345;
		int64_t total = 0;
		int step;

		for (step = 0; step < 2000; step++) {
			uint32_t n;

			seed = seed * 1103515245 + 12345;
			/* Mostly small steps, now and then a whole ring. */
			n = step % 97 == 0 ? s : (seed >> 8) % (s / 3 + 1);
			c = cursor_add(c, n, s);
			total += n;
			assert_true(cursor_valid(c, s));
			assert_int_equal(cursor_diff(start, c, s), total);
			assert_int_equal(cursor_diff(c, start, s), -total);
			/* The stream position, modulo the counter's range. */
			assert_int_equal(c.count, (uint32_t)(((__int128)(UINT32_MAX - 2) * s +
							   s - 3 + total) % s));
			assert_int_equal(c.wrap, (uint32_t)((((__int128)(UINT32_MAX - 2) * s +
							     s - 3 + total) / s) & UINT32_MAX));
		}
		assert_true(c.wrap < 1000);	/* the counter did wrap */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_are_the_class_ends),
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_add_within_ring),
		cmocka_unit_test(test_add_across_wrap),
		cmocka_unit_test(test_add_wrap_counter_wraps),
		cmocka_unit_test(test_add_stays_valid),
		cmocka_unit_test(test_diff_full_vs_empty),
		cmocka_unit_test(test_diff_across_wrap),
		cmocka_unit_test(test_diff_stale_is_negative),
		cmocka_unit_test(test_diff_far_apart),
		cmocka_unit_test(test_walk_matches_stream_position),
	};

	return cmocka_run_group_tests_name("cursor", tests, NULL, NULL);
}
