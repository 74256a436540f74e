/* SPDX-License-Identifier: MIT */
/*
 * Ring moves (smcproxy-protocol(7), "Ring moves"; ringmove.c): a flow starts
 * on a small ring, its owner offers a larger one (LLC RMB_MOVE) when the
 * peer's traffic fills it, and the writer switches once the owner
 * consumed the old one, saying so with the CDC's prod_gen. On the fake
 * transport (fake_transport.h), the test playing the peer. Checked: both
 * roles, every byte in order across the switch, repeats and generations
 * out of turn, the budget's reserve, and a failover during the switch.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_transport.h"

#define SMALL	(16u * 1024)
#define BIG	(256u * 1024)
#define REGION	(2u << 20)
#define NEXT_OFF	(3u << 20)	/* where the peer's new ring is */

static struct world *moving_world(unsigned links)
{
	struct world *w = world_new_links(BIG, REGION, 64 * 1024, links);

	w->lgr->ring_move = true;
	w->lgr->ring_init = SMALL;
	return w;
}

static uint8_t *random_bytes(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		b[i] = seed >> 16;
	}
	return b;
}

/* Exactly n bytes from the application socket, running the loop. */
static void app_read_exact(struct world *w, struct wflow *f, uint8_t *buf, size_t n)
{
	size_t got = 0;
	int idle = 0;

	while (got < n && idle < 400) {
		ssize_t r = recv(f->app, buf + got, n - got, MSG_DONTWAIT);

		if (r > 0) {
			got += r;
			idle = 0;
			continue;
		}
		uv_run(&w->loop, UV_RUN_NOWAIT);
		usleep(500);
		idle++;
	}
	assert_int_equal(got, n);
}

/* The last LLC message of type t that link f posted, or fails. */
static struct llc_msg last_llc(const struct fake *f, uint8_t t)
{
	for (unsigned i = f->n_msgs; i-- > 0;) {
		if (f->msgs[i].b[0] == t)
			return fake_llc(f, i);
	}
	fail_msg("no LLC message of type %#x", t);
	return (struct llc_msg){ 0 };
}

static bool has_llc(const struct fake *f, uint8_t t)
{
	for (unsigned i = 0; i < f->n_msgs; i++)
		if (f->msgs[i].b[0] == t)
			return true;
	return false;
}

static struct cdc_msg last_cdc(const struct fake *f)
{
	for (unsigned i = f->n_msgs; i-- > 0;) {
		if (f->msgs[i].b[0] == CDC_MSG_TYPE)
			return fake_cdc(f, i);
	}
	fail_msg("no CDC");
	return (struct cdc_msg){ 0 };
}

/* ------------------------------------------------------------------ */
/* Our ring: we own it and offer the move. */

/*
 * The peer fills our 16 KiB ring: we offer a larger one (gen 1; the lone
 * flow of its budget: straight to the group's largest, 256 KiB), keep
 * reading the old ring, and announce every byte consumed at once (so the
 * peer can switch). The peer's CDC of gen 1 switches us: the old ring goes
 * back to the pool, and bytes in the new ring reach the application in
 * order after the old ring's.
 */
static void test_owner_grows_and_switches(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(SMALL + 40000, 1), *got = malloc(SMALL + 40000);
	struct rmb *old = f->c.rmb;
	struct llc_msg mv;
	struct cdc_msg m;
	unsigned used;

	assert_int_equal(f->c.rmb->size, SMALL);
	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(w->stats.rings_grown, 1);
	assert_non_null(f->c.rx_next);
	mv = last_llc(&w->fake, LLC_RMB_MOVE);
	assert_int_equal(mv.move.token, PEER_TOKEN);
	assert_int_equal(mv.move.gen, 1);
	assert_int_equal(mv.move.rmb.size, BIG);
	assert_int_equal(mv.move.rmb.offset, f->c.rx_next->offset);

	/* The application takes all of it: the consumer cursor goes back at
	 * once, not only after a tenth of the ring. */
	app_read_exact(w, f, got, SMALL);
	assert_memory_equal(got, data, SMALL);
	world_settle(w);
	m = last_cdc(&w->fake);
	assert_int_equal(m.cons.wrap, 1);
	assert_int_equal(m.cons.count, 0);
	assert_int_equal(m.cons_gen, 0);

	/* A second fill does not offer again while one is open. */
	used = w->lgr->rmbs.n_used;

	/* The peer switched: gen 1, cursors from the new ring's start. */
	memcpy(w->region + f->c.rx_next->offset, data + SMALL, 40000);
	f->peer_prod = (struct smc_cursor){ 0, 40000 };
	f->peer_prod_gen = 1;
	world_peer_cdc(w, f, 0, 0);
	assert_ptr_not_equal(f->c.rmb, old);
	assert_null(f->c.rx_next);
	assert_int_equal(f->c.rx_gen, 1);
	assert_int_equal(f->c.rmb->size, BIG);
	assert_int_equal(w->lgr->rmbs.n_used, used - 1);
	app_read_exact(w, f, got + SMALL, 40000);
	assert_memory_equal(got, data, SMALL + 40000);
	world_settle(w);
	m = last_cdc(&w->fake);
	assert_int_equal(m.cons_gen, 1);

	/* A CDC from before the switch (resent after a failover) is stale:
	 * its producer cursor is ignored, the flow goes on. */
	f->peer_prod_gen = 0;
	f->peer_prod = (struct smc_cursor){ 1, 0 };
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(f->c.rx_prod.count, 40000);
	free(data);
	free(got);
	world_free(w);
}

/* The link group set up again as the handshake does, with
 * buffers.ring_initial = init (0: a config built by hand). */
static void setup_again(struct world *w, uint32_t init)
{
	free(w->lgr->conns);
	free(w->lgr->gen);
	w->cfg.buffers.ring_initial = init;
	assert_int_equal(lgr__setup_links(w->lgr, 1, 16), 0);
	w->lgr->links[0].tp = world_fake(w, 0);
	w->lnk = &w->lgr->links[0];
}

/*
 * buffers.ring_initial picks a new flow's ring. At buffers.ring the flow
 * starts there and never grows, as rings did before they moved: a full
 * ring offers no move.
 */
static void test_ring_initial_from_config(void **state)
{
	struct world *w = world_new_links(BIG, REGION, 64 * 1024, 1);
	uint8_t *data = random_bytes(BIG, 4);
	struct wflow *f;

	w->lgr->ring_move = true;
	setup_again(w, 4 * SMALL);
	assert_int_equal(w->lgr->ring_init, 4 * SMALL);
	setup_again(w, 0);
	assert_int_equal(w->lgr->ring_init, SMALL);
	setup_again(w, BIG);
	assert_int_equal(w->lgr->ring_init, BIG);

	f = world_open(w, 0, SMALL);
	assert_int_equal(f->c.rmb->size, BIG);
	world_peer_write(w, f, data, BIG);
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_null(f->c.rx_next);
	assert_int_equal(w->stats.rings_grown, 0);
	free(data);
	world_free(w);
}

/* The peer switches before we consumed the old ring: bytes would be
 * lost, so it broke the protocol and the flow is reset. */
static void test_owner_early_switch_resets(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f;
	uint8_t *data = random_bytes(SMALL, 2);

	/* Small socket buffers, and an application that does not read:
	 * bytes stay in the ring. */
	f = world_open_only(w, 0, 2048, 2048);
	world_batch_end(w);
	w->fake.n_msgs = 0;
	world_accept(w, 0, SMALL);
	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	world_settle(w);
	assert_non_null(f->c.rx_next);
	assert_false(cursor_equal(f->c.rx_cons, f->c.rx_prod));
	f->peer_prod = (struct smc_cursor){ 0, 0 };
	f->peer_prod_gen = 1;
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_CLOSED);
	assert_int_equal(w->stats.bad_messages, 1);
	free(data);
	world_free(w);
}

/* Generations the peer cannot have: two ahead, or one ahead with no
 * offer open, reset the flow. */
static void test_owner_bad_generation_resets(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);

	f->peer_prod_gen = 1;		/* nothing was offered */
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_CLOSED);
	f = world_open(w, 1, SMALL);
	f->peer_cons_gen = 1;		/* its ring never moved */
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_CLOSED);
	assert_int_equal(w->stats.bad_messages, 2);
	world_free(w);
}

/* Growing keeps an eighth of the budget for new flows' small rings: with
 * less spare, the ring stays small and the flow goes on. */
static void test_owner_grow_leaves_reserve(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(SMALL, 3);
	struct rmb *hog[2];

	/* Other flows hold 384 KiB of a 512 KiB budget: 96 KiB are spare
	 * beyond the reserve of 64 KiB (the growth share, 128 KiB, has room). */
	hog[0] = rmb_get(&w->lgr->rmbs, 256 << 10);
	hog[1] = rmb_get(&w->lgr->rmbs, 128 << 10);
	assert_non_null(hog[0]);
	assert_non_null(hog[1]);
	assert_int_equal(w->net.rmb_budget.in_use, 400 << 10);
	w->net.rmb_budget.limit = 512 << 10;
	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	/* 64 KiB would eat the reserve; 32 KiB leaves it. */
	assert_non_null(f->c.rx_next);
	assert_int_equal(f->c.rx_next->size, SMALL << 1);
	rmb_put(&w->lgr->rmbs, hog[1]);
	rmb_put(&w->lgr->rmbs, hog[0]);
	free(data);
	world_free(w);
}

/*
 * How far a full ring grows goes by the flows of the budget: with 31
 * other flows on their 16 KiB rings, every one of the 32 could hold 16 KiB
 * of the 512 KiB growth share (a quarter of the 2 MiB budget) at once, so
 * the flow goes 4x, to 64 KiB, not to the group's 256 KiB, which it would
 * have to give back once the others grew (before, a full ring went 4x
 * whatever the budget: a lone bulk flow took three moves to its largest
 * ring, each stopping the writer until the old ring drained).
 */
static void test_owner_grow_by_flows(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(SMALL, 5);
	struct rmb *other[31];
	unsigned i;

	for (i = 0; i < 31; i++) {
		other[i] = rmb_get(&w->lgr->rmbs, SMALL);
		assert_non_null(other[i]);
	}
	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	assert_non_null(f->c.rx_next);
	assert_int_equal(f->c.rx_next->size, SMALL << RMB_GROW_SHIFT);
	for (i = 0; i < 31; i++)
		rmb_put(&w->lgr->rmbs, other[i]);
	free(data);
	world_free(w);
}

/* ------------------------------------------------------------------ */
/* The peer's ring: we write it and switch. */

/*
 * The peer offers a new ring while 10000 of our bytes are unconsumed in
 * the old one: no more bytes go into the old ring, a CDC says we wait;
 * the peer's window update of everything switches us (CDC prod_gen 1,
 * cursors 0) and the application's next bytes land at the new ring's
 * start.
 */
static void test_writer_switches_when_drained(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(30000, 4);
	struct llc_rmb_move mv = {
		.token = f->c.token, .gen = 1,
		.rmb = { .offset = NEXT_OFF, .size = 64 << 10 },
	};
	struct cdc_msg m;

	assert_int_equal(write(f->app, data, 10000), 10000);
	assert_true(world_run_until(w, f->c.bytes_tx == 10000));
	conn_on_move(&f->c, &mv);
	world_batch_end(w);
	assert_true(f->c.tx_move);
	m = last_cdc(&w->fake);
	assert_true(m.prod_flags & CDC_PF_WRITE_BLOCKED);
	assert_int_equal(m.prod_gen, 0);
	/* The same offer again (a failover resent it): nothing changes. */
	conn_on_move(&f->c, &mv);
	assert_true(f->c.tx_move);

	/* Bytes the application writes now wait in its socket. */
	assert_int_equal(write(f->app, data + 10000, 20000), 20000);
	world_settle(w);
	assert_int_equal(f->c.bytes_tx, 10000);

	/* The peer consumed everything: we switch. */
	w->fake.done = w->lnk->tx_seq;
	f->peer_cons = (struct smc_cursor){ 0, 10000 };
	world_peer_cdc(w, f, 0, 0);
	assert_true(world_run_until(w, f->c.bytes_tx == 30000));
	assert_false(f->c.tx_move);
	assert_int_equal(f->c.tx_gen, 1);
	assert_int_equal(f->c.tx_size, 64 << 10);
	assert_int_equal(f->c.tx_peer_off, NEXT_OFF);
	assert_memory_equal(w->fake.peer + NEXT_OFF, data + 10000, 20000);
	world_complete(w);		/* autocork lets the last CDC go */
	m = last_cdc(&w->fake);
	assert_int_equal(m.prod_gen, 1);
	assert_int_equal(m.prod.wrap, 0);
	assert_int_equal(m.prod.count, 20000);

	/* The peer's consumer cursor of the old ring, late: ignored. */
	f->peer_cons = (struct smc_cursor){ 0, 10000 };
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(f->c.tx_cons.count, 0);
	/* And of the new one. */
	f->peer_cons_gen = 1;
	f->peer_cons = (struct smc_cursor){ 0, 20000 };
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.tx_cons.count, 20000);
	free(data);
	world_free(w);
}

/* An offer with nothing unconsumed switches at once; one out of turn
 * (generation 2 first) or outside the peer's region resets the flow. */
static void test_writer_offers(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	struct llc_rmb_move mv = {
		.token = f->c.token, .gen = 1,
		.rmb = { .offset = NEXT_OFF, .size = 64 << 10 },
	};
	struct cdc_msg m;

	conn_on_move(&f->c, &mv);
	world_batch_end(w);
	assert_false(f->c.tx_move);
	assert_int_equal(f->c.tx_gen, 1);
	m = last_cdc(&w->fake);
	assert_int_equal(m.prod_gen, 1);
	conn_on_move(&f->c, &mv);		/* a repeat after the switch */
	assert_int_equal(f->c.state, CONN_ACTIVE);

	f = world_open(w, 1, SMALL);
	mv.token = f->c.token;
	mv.gen = 2;
	conn_on_move(&f->c, &mv);
	assert_int_equal(f->c.state, CONN_CLOSED);

	f = world_open(w, 2, SMALL);
	mv.token = f->c.token;
	mv.gen = 1;
	mv.rmb.offset = FAKE_PEER_SIZE - SMALL;
	conn_on_move(&f->c, &mv);
	assert_int_equal(f->c.state, CONN_CLOSED);
	world_free(w);
}

/* ------------------------------------------------------------------ */
/* Failover during a move (rdma-like mirrors, two links). */

/*
 * We switched and wrote 5000 bytes into the new ring, on a link that lost
 * them with our CDC; the link fails. The flow moves and replays into the
 * new ring (nothing of the old one is owed), then a CDC of gen 1: the
 * peer sees every byte.
 */
static void test_failover_after_switch_replays_new_ring(void **state)
{
	struct world *w = moving_world(2);
	struct wflow *f;
	uint8_t *data = random_bytes(5000, 5);
	struct llc_rmb_move mv = { .gen = 1, .rmb = { .offset = NEXT_OFF, .size = 64 << 10 } };
	struct fake *f1 = world_fake(w, 1);
	struct cdc_msg m;

	w->fake.mirror = true;
	f = world_open(w, 0, SMALL);
	assert_ptr_equal(f->c.link, &w->lgr->links[0]);
	mv.token = f->c.token;
	conn_on_move(&f->c, &mv);
	world_batch_end(w);
	assert_int_equal(f->c.tx_gen, 1);
	w->fake.drop_writes = true;
	assert_int_equal(write(f->app, data, 5000), 5000);
	assert_true(world_run_until(w, f->c.bytes_tx == 5000));
	assert_memory_not_equal(w->fake.peer + NEXT_OFF, data, 5000);

	lgr_link_down(&w->lgr->links[0], -EIO);
	world_batch_end(w);
	assert_int_equal(f1->moved_calls, 1);
	assert_int_equal(f1->rewritten, 5000);
	assert_memory_equal(w->fake.peer + NEXT_OFF, data, 5000);
	m = last_cdc(f1);
	assert_int_equal(m.prod_gen, 1);
	assert_int_equal(m.prod.count, 5000);
	free(data);
	world_free(w);
}

/* Our offer died with its link: it goes again on the survivor. */
static void test_failover_resends_offer(void **state)
{
	struct world *w = moving_world(2);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(SMALL, 6);
	struct fake *f1 = world_fake(w, 1);
	struct llc_msg mv;

	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	assert_true(has_llc(&w->fake, LLC_RMB_MOVE));
	assert_false(has_llc(f1, LLC_RMB_MOVE));
	lgr_link_down(&w->lgr->links[0], -EIO);
	world_batch_end(w);
	mv = last_llc(f1, LLC_RMB_MOVE);
	assert_int_equal(mv.move.gen, 1);
	assert_int_equal(mv.move.rmb.offset, f->c.rx_next->offset);
	free(data);
	world_free(w);
}

/*
 * A flow whose ring grew and then went idle is offered a small ring again
 * by the group's sweep (the same move, generation 2), only once it has
 * been idle long enough; at the peer's switch the
 * large ring goes back to the budget, and bytes in the small ring reach
 * the application in order.
 */
static void test_owner_shrinks_when_idle(void **state)
{
	struct world *w = moving_world(1);
	struct wflow *f = world_open(w, 0, SMALL);
	uint8_t *data = random_bytes(SMALL + 3000, 7), *got = malloc(SMALL + 3000);
	uint64_t in_use;
	struct llc_msg mv;

	/* Grown to 256 KiB and switched (as in test_owner_grows_and_switches). */
	world_peer_write(w, f, data, SMALL);
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, got, SMALL);
	world_settle(w);
	f->peer_prod = (struct smc_cursor){ 0, 0 };
	f->peer_prod_gen = 1;
	world_peer_cdc(w, f, 0, 0);
	assert_int_equal(f->c.rmb->size, BIG);
	assert_false(list_empty(&w->lgr->grown));

	/* Active lately: kept. */
	memcpy(w->region + f->c.rmb->offset, data + SMALL, 1000);
	f->peer_prod = (struct smc_cursor){ 0, 1000 };
	world_peer_cdc(w, f, 0, 0);
	app_read_exact(w, f, got + SMALL, 1000);
	world_settle(w);
	lgr_sweep(&w->net, f->c.last_active_ms + 9999);
	assert_null(f->c.rx_next);
	assert_int_equal(w->stats.rings_shrunk, 0);

	/* Idle and empty: a 16 KiB ring is offered with generation 2. */
	lgr_sweep(&w->net, f->c.last_active_ms + 10000);
	assert_non_null(f->c.rx_next);
	assert_int_equal(f->c.rx_next->size, SMALL);
	assert_int_equal(w->stats.rings_shrunk, 1);
	world_settle(w);
	mv = last_llc(&w->fake, LLC_RMB_MOVE);
	assert_int_equal(mv.move.gen, 2);
	assert_int_equal(mv.move.rmb.size, SMALL);
	assert_int_equal(mv.move.rmb.offset, f->c.rx_next->offset);
	/* One offer at a time. */
	lgr_sweep(&w->net, f->c.last_active_ms + 20000);
	assert_int_equal(w->stats.rings_shrunk, 1);

	/* The peer switches and writes into the small ring. */
	in_use = w->net.rmb_budget.in_use;
	memcpy(w->region + f->c.rx_next->offset, data + SMALL + 1000, 2000);
	f->peer_prod = (struct smc_cursor){ 0, 2000 };
	f->peer_prod_gen = 2;
	world_peer_cdc(w, f, 0, 0);
	assert_null(f->c.rx_next);
	assert_int_equal(f->c.rx_gen, 2);
	assert_int_equal(f->c.rmb->size, SMALL);
	assert_true(list_empty(&w->lgr->grown));
	assert_int_equal(w->net.rmb_budget.in_use, in_use - BIG);
	app_read_exact(w, f, got + SMALL + 1000, 2000);
	assert_memory_equal(got, data, SMALL + 3000);
	free(data);
	free(got);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_grows_and_switches),
		cmocka_unit_test(test_ring_initial_from_config),
		cmocka_unit_test(test_owner_early_switch_resets),
		cmocka_unit_test(test_owner_bad_generation_resets),
		cmocka_unit_test(test_owner_grow_leaves_reserve),
		cmocka_unit_test(test_owner_grow_by_flows),
		cmocka_unit_test(test_writer_switches_when_drained),
		cmocka_unit_test(test_writer_offers),
		cmocka_unit_test(test_failover_after_switch_replays_new_ring),
		cmocka_unit_test(test_failover_resends_offer),
		cmocka_unit_test(test_owner_shrinks_when_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
