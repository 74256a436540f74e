/* SPDX-License-Identifier: MIT */
/*
 * Linked into every unit test binary: UNIT_TEST=PATTERN runs only the
 * cases whose name matches PATTERN ('*' and '?' as in cmocka's own
 * cmocka_set_test_filter()), e.g.
 *
 *	UNIT_TEST=test_user_key build/tests/test_cfg
 *
 * Set before main() runs, so that no test file has to read it. A pattern
 * that matches no case runs none: cmocka then reports "0 test(s) run".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

__attribute__((constructor)) static void unit_filter(void)
{
	const char *pattern = getenv("UNIT_TEST");

	if (pattern && *pattern)
		cmocka_set_test_filter(pattern);
}
