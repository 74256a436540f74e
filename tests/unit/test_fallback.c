/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the errno -> decline -> fallback reason table
 * (proxy/smc/fallback.c): one mapping for every layer, so that an error is
 * counted alike whether a flow, a link group's handshake or a peer's flow
 * open hit it (ENOSPC was out_of_memory in two places and max_flows in two
 * others), and the reasons' names as the stats socket shows them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "flow.h"
#include "proxy.h"
#include "smc/clc.h"
#include "smc/fallback.h"

static void test_errno_table(void **state)
{
	static const struct {
		int err;
		unsigned decline;
		enum fallback_reason fb;
		const char *name;
	} want[] = {
		{ -ENOSPC, CLC_DECL_MAX_FLOWS, FB_DECL_MAX_FLOWS, "max_flows" },
		{ -ENOMEM, CLC_DECL_NO_MEMORY, FB_DECL_NO_MEMORY, "out_of_memory" },
		{ -ENOBUFS, CLC_DECL_NO_MEMORY, FB_DECL_NO_MEMORY, "out_of_memory" },
		{ -ETIMEDOUT, CLC_DECL_TIMEOUT, FB_DECL_TIMEOUT, "timeout" },
		{ -ENODEV, CLC_DECL_NO_DEVICE, FB_DECL_NO_DEVICE, "no_device" },
		{ -EPROTO, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
		{ -EINVAL, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
		{ -ENOLINK, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
		{ -EPROTONOSUPPORT, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
		/* The acceptor's connect to the destination found no port or
		 * fd: no room for the flow, not a fault (was internal). */
		{ -EMFILE, CLC_DECL_MAX_FLOWS, FB_DECL_MAX_FLOWS, "max_flows" },
		{ -ENFILE, CLC_DECL_MAX_FLOWS, FB_DECL_MAX_FLOWS, "max_flows" },
		/* The acceptor drains (it stops): a reason of its own, not
		 * a fault (was internal). */
		{ -ESHUTDOWN, CLC_DECL_STOPPING, FB_DECL_STOPPING, "stopping" },
		/* A positive errno is a caller's bug, not a reason. */
		{ ENOSPC, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
		{ 0, CLC_DECL_INTERNAL, FB_DECL_INTERNAL, "internal" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		unsigned d = clc_decline_of_errno(want[i].err);

		assert_int_equal(d, want[i].decline);
		assert_int_equal(fallback_of_errno(want[i].err), want[i].fb);
		assert_int_equal(fallback_of_decline(d), want[i].fb);
		assert_string_equal(fallback_reason_name(want[i].fb), want[i].name);
		/* The peer sees the same word in its decline counters. */
		assert_string_equal(clc_decline_name(d), want[i].name);
	}
}

static void test_decline_to_fallback(void **state)
{
	(void)state;
	/* A link group lost under an opening flow: no decline, no link. */
	assert_int_equal(fallback_of_decline(CLC_DECL_NONE), FB_NO_LINK);
	for (unsigned r = CLC_DECL_NO_DEVICE; r < CLC_DECL__MAX; r++) {
		enum fallback_reason fb = fallback_of_decline(r);

		assert_int_equal(fb, FB_DECL_NO_DEVICE + (r - CLC_DECL_NO_DEVICE));
		assert_string_equal(fallback_reason_name(fb), clc_decline_name(r));
	}
	/* The newest reason is counted under its own name... */
	assert_int_equal(fallback_of_decline(CLC_DECL_STOPPING), FB_DECL_STOPPING);
	assert_string_equal(fallback_reason_name(FB_DECL_STOPPING), "stopping");
	assert_string_equal(clc_decline_name(CLC_DECL_STOPPING), "stopping");
	/* ...and one past it (the wire has 8 bits) counts as internal. */
	assert_int_equal(fallback_of_decline(CLC_DECL__MAX), FB_DECL_INTERNAL);
	assert_int_equal(fallback_of_decline(255), FB_DECL_INTERNAL);
	assert_int_equal(fallback_of_decline(~0u), FB_DECL_INTERNAL);
}

/* What a peer is sent: stopping only to one that said it takes it
 * (CLC_FEAT_DECL_STOPPING); a daemon of before, whose decoder refuses
 * reason 8 as malformed, is told internal, as it was before. Every other
 * reason goes as it is either way. */
static void test_decline_for_peer(void **state)
{
	(void)state;
	assert_int_equal(clc_decline_for_peer(CLC_DECL_STOPPING, true), CLC_DECL_STOPPING);
	assert_int_equal(clc_decline_for_peer(CLC_DECL_STOPPING, false), CLC_DECL_INTERNAL);
	for (unsigned r = CLC_DECL_NO_DEVICE; r < CLC_DECL__MAX; r++) {
		if (r == CLC_DECL_STOPPING)
			continue;
		assert_int_equal(clc_decline_for_peer(r, true), r);
		assert_int_equal(clc_decline_for_peer(r, false), r);
	}
}

/* A rendezvous the handshake named but we cannot reach has a reason of
 * its own (it used to read "internal"); it is local. The
 * same errno on the acceptor's connect to the destination (no local port
 * left) declines the flow with max_flows: no room there, not a fault
 * (it read "internal"). */
static void test_no_rendezvous(void **state)
{
	(void)state;
	assert_int_equal(fallback_of_errno(-EADDRNOTAVAIL), FB_NO_RENDEZVOUS);
	assert_string_equal(fallback_reason_name(FB_NO_RENDEZVOUS), "no_rendezvous");
	assert_int_equal(clc_decline_of_errno(-EADDRNOTAVAIL), CLC_DECL_MAX_FLOWS);
}

/* Every reason has a name of its own: a new one without a name would be
 * counted as "unknown" (or read as NULL). */
static void test_reason_names(void **state)
{
	(void)state;
	assert_string_equal(fallback_reason_name(FB_PEER_STOPPED), "peer_stopped");
	for (unsigned r = FB_NONE; r < FB__MAX; r++) {
		const char *name = fallback_reason_name(r);

		assert_non_null(name);
		assert_string_not_equal(name, "unknown");
		for (unsigned q = FB_NONE; q < r; q++)
			assert_string_not_equal(name, fallback_reason_name(q));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_table),
		cmocka_unit_test(test_decline_to_fallback),
		cmocka_unit_test(test_decline_for_peer),
		cmocka_unit_test(test_no_rendezvous),
		cmocka_unit_test(test_reason_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
