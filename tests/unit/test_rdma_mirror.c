/* SPDX-License-Identifier: MIT */
/*
 * Guards the rdma send mirrors against a peer that sizes them (a mirror
 * is pinned memory of the peer ring's size): a mirror is never larger
 * than our buffers.ring (the group's ring_size) nor than the ring size
 * the peer announced at its handshake, and each peer's mirrors have an
 * account in the worker's mirror budget with the receive rings' fairness
 * (rmb-t.h): one peer cannot pin the whole budget and refuse every other
 * peer's flows. (Regression: 8 opens of 64 MiB rings took a 512 MiB share
 * and other peers' opens were then declined out_of_memory.)
 *
 * The daemon's own functions, rdma__lgr_prepare(), rdma__conn_attach(),
 * rdma__conn_detach() and rdma__lgr_close(), over fake verbs: the
 * protection domain and the memory registrations are wrapped
 * (test_rdma_mirror.wrap), the regions are the daemon's own mmaps.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/verbs.h>
#include <uv.h>

#include "smc/conn-t.h"
#include "smc/lgr.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "smc/stats-t.h"
#include "smc/transport.h"
#include "transport/rdma/rdma-int.h"

#define MIB		(1024u * 1024u)
#define BUDGET		(64ull * MIB)	/* the worker's share of buffers.pool */
#define N_CONNS		32

struct ibv_pd *__wrap_ibv_alloc_pd(struct ibv_context *ctx);
int __wrap_ibv_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *__wrap_ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
int __wrap_ibv_dereg_mr(struct ibv_mr *mr);

static unsigned n_mrs;			/* registrations alive */

struct ibv_pd *__wrap_ibv_alloc_pd(struct ibv_context *ctx)
{
	return calloc(1, sizeof(struct ibv_pd));
}

int __wrap_ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

struct ibv_mr *__wrap_ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	if (mr) {
		mr->addr = addr;
		mr->length = length;
		mr->lkey = mr->rkey = 0x1234;
		n_mrs++;
	}
	return mr;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
	n_mrs--;
	free(mr);
	return 0;
}

/* One worker with the rdma transport's device state, and link groups to
 * peers 192.0.2.1, .2, ... */
static struct {
	struct cfg cfg;
	struct proxy_stats stats;
	struct smc_net net;
	struct rdma_dev dev;
	struct ibv_context ctx;
	struct lgr lgr[3];
	struct conn c[3][N_CONNS];
} w;

static void group_up(struct lgr *lgr, unsigned peer, uint32_t our_ring, uint32_t peer_ring)
{
	uint8_t key[RMB_PEER_KEY] = { AF_INET, 192, 0, 2, (uint8_t)peer };
	struct rdma_lgr *rg;

	memset(lgr, 0, sizeof(*lgr));
	lgr->net = &w.net;
	lgr->role = LGR_ROLE_SERVER;
	lgr->hs.fd = -1;
	lgr->hs.prop.ring_size = peer_ring;	/* the peer's proposal */
	lgr->ring_size = our_ring;		/* our buffers.ring */
	lgr->rmb_peer = rmb_peer_get(&w.net.rmb_budget, key, sizeof(key));
	assert_non_null(lgr->rmb_peer);
	assert_int_equal(rdma__lgr_prepare(lgr), 0);
	rg = lgr->tp;
	/* The rendezvous told us the peer's region. */
	rg->have_peer = true;
	rg->peer_size = 1u << 30;
}

static void group_down(struct lgr *lgr)
{
	rdma__lgr_close(lgr);
	rmb_pool_close(&lgr->rmbs);
	rmb_peer_put(lgr->rmb_peer);
}

static int attach(struct lgr *lgr, struct conn *c, uint32_t off, uint32_t size)
{
	struct llc_rmb r = { .offset = off, .size = size, .key = 7 };

	memset(c, 0, sizeof(*c));
	c->lgr = lgr;
	return rdma__conn_attach(c, &r);
}

/* Mirrors lgr's peer gets, size bytes each, until one is refused. */
static unsigned attach_all(struct lgr *lgr, struct conn *cs, uint32_t size)
{
	unsigned n = 0;

	while (n < N_CONNS && attach(lgr, &cs[n], n * size, size) == 0)
		n++;
	return n;
}

static int setup(void **state)
{
	memset(&w, 0, sizeof(w));
	w.net.cfg = &w.cfg;
	w.net.stats = &w.stats;
	list_init(&w.net.lgrs);
	rmb_budget_init(&w.net.rmb_budget, BUDGET);
	w.dev.net = &w.net;
	w.dev.ctx = &w.ctx;
	rmb_budget_init(&w.dev.tx_budget, BUDGET);	/* as rdma__init() does */
	list_init(&w.dev.zombies);
	w.net.tp[smc_transport_slot(&rdma_ops)] = &w.dev;
	n_mrs = 0;
	*state = NULL;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(n_mrs, 0);
	assert_int_equal(w.dev.tx_budget.in_use, 0);
	return 0;
}

/* A mirror is no larger than our buffers.ring: a peer that announces
 * 64 MiB rings is refused them (the open declined out_of_memory, or over
 * TCP), and pins nothing; one larger than the peer's own handshake
 * ring_size is a protocol error. */
static void test_mirror_size_bounded(void **state)
{
	struct lgr *lgr = &w.lgr[0];
	struct conn *cs = w.c[0];

	group_up(lgr, 1, 1 * MIB, 64 * MIB);
	assert_int_equal(attach(lgr, &cs[0], 0, 64 * MIB), -ENOMEM);
	assert_int_equal(attach(lgr, &cs[0], 0, 2 * MIB), -ENOMEM);
	assert_int_equal(w.dev.tx_budget.in_use, 0);
	assert_int_equal(n_mrs, 0);
	assert_int_equal(attach(lgr, &cs[0], 0, 1 * MIB), 0);
	assert_int_equal(w.dev.tx_budget.in_use, 1 * MIB);
	rdma__conn_detach(&cs[0]);
	group_down(lgr);

	group_up(lgr, 1, 64 * MIB, 512 * 1024);
	assert_int_equal(attach(lgr, &cs[0], 0, 1 * MIB), -EINVAL);
	assert_int_equal(attach(lgr, &cs[0], 0, 512 * 1024), 0);
	rdma__conn_detach(&cs[0]);
	group_down(lgr);
}

/*
 * Two peers, each allowed rings as large as the whole budget: the first
 * takes mirrors until it is refused, and the second still gets its own
 * (the last eighth of the budget is for peers below their share).
 */
static void test_mirror_fair_share(void **state)
{
	unsigned na, nb, i;

	group_up(&w.lgr[0], 1, 64 * MIB, 64 * MIB);
	group_up(&w.lgr[1], 2, 64 * MIB, 64 * MIB);
	na = attach_all(&w.lgr[0], w.c[0], 8 * MIB);
	assert_true(na >= 1);
	assert_true((uint64_t)na * 8 * MIB <= BUDGET - BUDGET / 8);
	nb = attach_all(&w.lgr[1], w.c[1], 8 * MIB);
	print_message("peer 1: %u mirrors of 8 MiB, then peer 2: %u\n", na, nb);
	assert_true(nb >= 1);
	/* A second group of the first peer shares its account. */
	group_up(&w.lgr[2], 1, 64 * MIB, 64 * MIB);
	assert_int_equal(attach(&w.lgr[2], &w.c[2][0], 0, 8 * MIB), -ENOMEM);
	assert_true(w.dev.tx_budget.in_use <= BUDGET);
	for (i = 0; i < na; i++)
		rdma__conn_detach(&w.c[0][i]);
	for (i = 0; i < nb; i++)
		rdma__conn_detach(&w.c[1][i]);
	group_down(&w.lgr[2]);
	group_down(&w.lgr[1]);
	group_down(&w.lgr[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mirror_size_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mirror_fair_share, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
