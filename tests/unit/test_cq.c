/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the completion-queue pool (proxy/transport/rdma/cq.c) without a device.
 * The verbs calls are wrapped (test_cq.wrap): the data-path shims
 * vb_poll_cq()/vb_req_notify_cq() and libibverbs' exported
 * ibv_create_comp_channel(), ibv_create_cq(), ibv_get_cq_event(),
 * ibv_ack_cq_events() and their destructors. The two inline verbs
 * cq_pool_init() calls, ibv_query_device_ex() and ibv_modify_cq(), reach
 * the provider through struct verbs_context: the test hands cq.c a context
 * of its own whose ops are the fakes below.
 *
 * A fake CQ is a queue of work completions with the arming rule of a real
 * one: armed, the next completion raises one event on the channel (an
 * eventfd in semaphore mode, so the worker's epoll set sees it) and
 * disarms it (armed for solicited completions only, only a solicited one
 * does). Every poll, re-arm and acknowledgement is written to a trace, so
 * that a test can say in which order cq.c did what:
 * "P<cq>:<asked>=<returned>", "A<cq>" (re-arm), "S<cq>" (re-arm for
 * solicited completions only), "K<cq>:<n>" (ack).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/container.h"
#include "transport/rdma/cq.h"
#include "core/epset.h"
#include "transport/rdma/verbs.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FQ_MAX		1024	/* completions a fake CQ can hold */
#define N_ENTRIES	512
/* A test whose cq.c polls this often is spinning: it fails, not hangs. */
#define POLL_LIMIT	100000

/* ------------------------------------------------------------------ */
/* Fake CQs and channels. */

struct fcq {
	struct ibv_cq ibv;		/* what cq.c holds */
	bool live;
	struct ibv_wc q[FQ_MAX];
	unsigned head, tail;
	bool armed;			/* the fake's own view */
	bool armed_solicited;		/* for solicited completions only */
	bool next_solicited;		/* the completions that come now are */
	int poll_err;			/* < 0: every poll returns it */
	int notify_err;			/* != 0: every re-arm returns it */
	/* Completions that arrive while cq.c re-arms, before the arm takes
	 * effect: the race of an empty poll and ibv_req_notify_cq(). */
	unsigned arrive_on_arm;
	struct cq_entry *arrive_entry;
	unsigned events_raised;		/* on the channel */
	unsigned events_read;		/* by ibv_get_cq_event() */
	unsigned acked;
	int create_cqe;			/* what ibv_create_cq() was asked for */
	int comp_vector;
};

struct fchan {
	struct ibv_comp_channel ibv;
	bool live;
	struct fcq *cq;			/* the CQ created on it */
};

static struct fcq fcqs[CQ_POOL_MAX];
static struct fchan fchans[CQ_POOL_MAX];
static unsigned n_fcqs, n_fchans;
static char trace[16384];
static unsigned polls_total;

/* The provider side of the fake context. */
static struct verbs_context fake_vctx;
static struct ibv_device_attr_ex fake_attr;
static int fake_query_err;
static int fake_modify_err;
static unsigned modify_calls;
static struct ibv_modify_cq_attr last_modify;

/* Failure injection for cq_pool_init(): the index of the object whose
 * creation (or first arm) fails, -1 for none. */
static int fail_channel_at, fail_cq_at, fail_arm_at;

static struct cq_pool pool;
static struct epset es;

static void tracef(const char *fmt, ...)
{
	size_t len = strlen(trace);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(trace + len, sizeof(trace) - len, fmt, ap);
	va_end(ap);
}

static struct fcq *fcq_of(struct ibv_cq *cq)
{
	return container_of(cq, struct fcq, ibv);
}

static struct fchan *fchan_of(struct ibv_comp_channel *ch)
{
	return container_of(ch, struct fchan, ibv);
}

static unsigned fcq_idx(const struct fcq *f)
{
	return (unsigned)(f - fcqs);
}

static unsigned fq_len(const struct fcq *f)
{
	return f->tail - f->head;
}

/* A completion arrives: queued, and an event when the CQ was armed. */
static void fcq_complete(struct fcq *f, struct cq_entry *e, enum ibv_wc_status st,
			 uint32_t byte_len)
{
	struct ibv_wc *wc;

	assert_true(fq_len(f) < FQ_MAX);
	wc = &f->q[f->tail++ % FQ_MAX];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = (uintptr_t)e;
	wc->status = st;
	wc->opcode = IBV_WC_SEND;
	wc->byte_len = byte_len;
	wc->qp_num = fcq_idx(f);
	/* Armed for solicited ones only, another leaves it armed, silent. */
	if (f->armed && (!f->armed_solicited || f->next_solicited)) {
		f->armed = false;
		f->events_raised++;
		if (f->ibv.channel) {
			uint64_t one = 1;

			assert_int_equal(write(f->ibv.channel->fd, &one, sizeof(one)),
					 sizeof(one));
		}
	}
}

int __wrap_vb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int __wrap_vb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fcq *f = fcq_of(cq);
	int i;

	if (++polls_total > POLL_LIMIT)
		fail_msg("cq.c is spinning: %u polls; trace starts: %.120s", polls_total, trace);
	assert_true(f->live);
	assert_true(n > 0);
	if (f->poll_err) {
		tracef("P%u:%d=%d ", fcq_idx(f), n, f->poll_err);
		return f->poll_err;
	}
	for (i = 0; i < n && fq_len(f); i++)
		wc[i] = f->q[f->head++ % FQ_MAX];
	tracef("P%u:%d=%d ", fcq_idx(f), n, i);
	return i;
}

int __wrap_vb_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int __wrap_vb_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct fcq *f = fcq_of(cq);

	assert_true(f->live);
	tracef("%c%u ", solicited_only ? 'S' : 'A', fcq_idx(f));
	/* What arrives now is before the arm: it raises no event. */
	while (f->arrive_on_arm) {
		f->arrive_on_arm--;
		fcq_complete(f, f->arrive_entry, IBV_WC_SUCCESS, 64);
	}
	if (f->notify_err)
		return f->notify_err;	/* an errno value, as libibverbs returns */
	f->armed = true;
	f->armed_solicited = solicited_only;
	return 0;
}

struct ibv_comp_channel *__wrap_ibv_create_comp_channel(struct ibv_context *ctx);
struct ibv_comp_channel *__wrap_ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct fchan *c;

	assert_ptr_equal(ctx, &fake_vctx.context);
	if ((int)n_fchans == fail_channel_at) {
		errno = EMFILE;
		return NULL;
	}
	assert_true(n_fchans < CQ_POOL_MAX);
	c = &fchans[n_fchans++];
	memset(c, 0, sizeof(*c));
	c->ibv.context = ctx;
	/* Blocking, as libibverbs makes it: cq.c must make it non-blocking. */
	c->ibv.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	assert_true(c->ibv.fd >= 0);
	c->live = true;
	return &c->ibv;
}

int __wrap_ibv_destroy_comp_channel(struct ibv_comp_channel *ch);
int __wrap_ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct fchan *c = fchan_of(ch);

	assert_true(c->live);
	/* libibverbs refuses (EBUSY) while a CQ still uses the channel. */
	assert_true(!c->cq || !c->cq->live);
	close(ch->fd);
	c->live = false;
	return 0;
}

struct ibv_cq *__wrap_ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector);
struct ibv_cq *__wrap_ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector)
{
	struct fchan *c = fchan_of(ch);
	struct fcq *f;

	assert_ptr_equal(ctx, &fake_vctx.context);
	assert_true(c->live);
	if ((int)n_fcqs == fail_cq_at) {
		errno = ENOMEM;
		return NULL;
	}
	assert_true(n_fcqs < CQ_POOL_MAX);
	f = &fcqs[n_fcqs];
	memset(f, 0, sizeof(*f));
	f->ibv.context = ctx;
	f->ibv.channel = ch;
	f->ibv.cq_context = cq_context;
	/* Providers round up: report more than was asked, as mlx5 does. */
	f->ibv.cqe = cqe | 0xff;
	f->create_cqe = cqe;
	f->comp_vector = comp_vector;
	f->notify_err = (int)n_fcqs == fail_arm_at ? EIO : 0;
	f->live = true;
	c->cq = f;
	n_fcqs++;
	return &f->ibv;
}

int __wrap_ibv_destroy_cq(struct ibv_cq *cq);
int __wrap_ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fcq *f = fcq_of(cq);

	assert_true(f->live);
	/* ibv_destroy_cq() waits until every event read was acknowledged. */
	assert_int_equal(f->acked, f->events_read);
	f->live = false;
	return 0;
}

int __wrap_ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx);
int __wrap_ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	struct fchan *c = fchan_of(ch);
	uint64_t v;
	int flags = fcntl(ch->fd, F_GETFL);

	assert_true(c->live);
	/* A blocking read would hang the worker once the events are taken. */
	assert_true(flags >= 0 && (flags & O_NONBLOCK));
	if (read(ch->fd, &v, sizeof(v)) != sizeof(v))
		return -1;	/* errno EAGAIN, from read() */
	assert_non_null(c->cq);
	c->cq->events_read++;
	*cq = &c->cq->ibv;
	*ctx = c->cq->ibv.cq_context;
	return 0;
}

void __wrap_ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
void __wrap_ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct fcq *f = fcq_of(cq);

	assert_true(f->live);
	tracef("K%u:%u ", fcq_idx(f), nevents);
	f->acked += nevents;
	assert_true(f->acked <= f->events_read);
}

static int fake_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	assert_ptr_equal(ctx, &fake_vctx.context);
	if (fake_query_err)
		return fake_query_err;
	assert_true(attr_size >= sizeof(*attr));
	*attr = fake_attr;
	return 0;
}

static int fake_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	assert_true(fcq_of(cq)->live);
	modify_calls++;
	last_modify = *attr;
	return fake_modify_err;
}

/* ------------------------------------------------------------------ */
/* Work requests: what a completion's wr_id names. */

enum kind { TX, RX };

struct tentry {
	struct cq_entry e;
	enum kind kind;
	unsigned id;
	unsigned calls;
};

struct got {
	unsigned id;
	enum kind kind;
	enum ibv_wc_status status;
	uint32_t byte_len;
};

static struct tentry ents[N_ENTRIES];
static struct got got[4 * FQ_MAX];
static unsigned n_got;

static void entry_done(struct cq_entry *e, const struct ibv_wc *wc, enum kind kind)
{
	struct tentry *t = container_of(e, struct tentry, e);

	/* The completion goes to the entry its wr_id names, with its own wc. */
	assert_true(t >= ents && t < ents + N_ENTRIES);
	assert_true(wc->wr_id == (uintptr_t)e);
	assert_int_equal(t->kind, kind);
	assert_true(n_got < ARRAY_SIZE(got));
	t->calls++;
	got[n_got++] = (struct got){ t->id, kind, wc->status, wc->byte_len };
}

static void tx_done(struct cq_entry *e, const struct ibv_wc *wc)
{
	entry_done(e, wc, TX);
}

static void rx_done(struct cq_entry *e, const struct ibv_wc *wc)
{
	entry_done(e, wc, RX);
}

/* n completions of entries first.. on fake CQ f, byte_len the entry id. */
static void complete_n(struct fcq *f, unsigned first, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct tentry *t = &ents[(first + i) % N_ENTRIES];

		fcq_complete(f, &t->e, IBV_WC_SUCCESS, t->id);
	}
}

/* ------------------------------------------------------------------ */
/* Fixtures. */

static int setup(void **state)
{
	unsigned i;

	memset(fcqs, 0, sizeof(fcqs));
	memset(fchans, 0, sizeof(fchans));
	n_fcqs = n_fchans = 0;
	trace[0] = '\0';
	polls_total = 0;
	fail_channel_at = fail_cq_at = fail_arm_at = -1;

	memset(&fake_vctx, 0, sizeof(fake_vctx));
	fake_vctx.sz = sizeof(fake_vctx);
	fake_vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	fake_vctx.query_device_ex = fake_query_device_ex;
	fake_vctx.context.num_comp_vectors = 2;	/* fewer than some pools: shared */
	fake_vctx.modify_cq = fake_modify_cq;
	memset(&fake_attr, 0, sizeof(fake_attr));
	fake_attr.orig_attr.max_cqe = 4194303;
	fake_query_err = fake_modify_err = 0;
	modify_calls = 0;
	memset(&last_modify, 0, sizeof(last_modify));

	for (i = 0; i < N_ENTRIES; i++) {
		ents[i].kind = i % 3 == 2 ? RX : TX;
		ents[i].e.done = ents[i].kind == RX ? rx_done : tx_done;
		ents[i].id = i;
		ents[i].calls = 0;
	}
	n_got = 0;

	memset(&pool, 0, sizeof(pool));
	memset(&es, 0, sizeof(es));
	es.fd = epoll_create1(EPOLL_CLOEXEC);
	assert_true(es.fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	unsigned i;

	for (i = 0; i < n_fchans; i++)
		if (fchans[i].live)
			close(fchans[i].ibv.fd);
	if (es.fd >= 0)
		close(es.fd);
	return 0;
}

/* A fresh fixture within a test. */
static void reset(void **state)
{
	teardown(state);
	setup(state);
}

/*
 * A pool of n CQs built by hand, as cq_pool_init() leaves it (armed, one
 * re-arm counted), without channels: for the polling logic alone.
 */
static void hand_pool(unsigned n, unsigned budget)
{
	unsigned i;

	pool.budget = budget;
	pool.n = n;
	for (i = 0; i < n; i++) {
		struct cq *cq = &pool.cqs[i];

		fcqs[i].live = true;
		fcqs[i].armed = true;
		fcqs[i].ibv.cqe = 1000;
		cq->pool = &pool;
		cq->idx = i;
		cq->cq = &fcqs[i].ibv;
		cq->cqe = 1000;
		cq->armed = true;
		cq->st.rearms = 1;
	}
	n_fcqs = n;
}

/* What cq_on_event() does once it took the CQ's events: the CQ is no
 * longer armed, and polled one round. */
static bool woken(struct cq *cq)
{
	cq->armed = false;
	return cq_poll(cq, false);
}

static void assert_trace(const char *want)
{
	assert_string_equal(trace, want);
	trace[0] = '\0';
}

/* The entries of the completions taken so far: ids first..first+n-1. */
static void assert_got_run(unsigned from, unsigned first, unsigned n)
{
	unsigned i;

	assert_true(n_got >= from + n);
	for (i = 0; i < n; i++)
		assert_int_equal(got[from + i].id, (first + i) % N_ENTRIES);
}

static void assert_stats(const struct cq *cq, uint64_t polls, uint64_t completions,
			 uint64_t empty, uint64_t rearms)
{
	assert_int_equal(cq->st.polls, polls);
	assert_int_equal(cq->st.completions, completions);
	assert_int_equal(cq->st.empty_polls, empty);
	assert_int_equal(cq->st.rearms, rearms);
}

/* ------------------------------------------------------------------ */
/* Dispatch. */

/* Each completion reaches the entry its wr_id names, its own callback,
 * with its own work completion, in the order the CQ gave them. */
static void test_dispatch_by_wr_id(void **state)
{
	static const unsigned order[] = { 7, 2, 500, 3, 0, 255, 8, 5, 511, 1 };
	static const enum ibv_wc_status st[] = {
		IBV_WC_SUCCESS, IBV_WC_WR_FLUSH_ERR, IBV_WC_SUCCESS, IBV_WC_REM_ACCESS_ERR,
		IBV_WC_SUCCESS, IBV_WC_RETRY_EXC_ERR, IBV_WC_SUCCESS, IBV_WC_SUCCESS,
		IBV_WC_LOC_PROT_ERR, IBV_WC_SUCCESS,
	};
	struct cq *cq;
	unsigned i;

	hand_pool(2, 64);
	cq = &pool.cqs[1];
	for (i = 0; i < ARRAY_SIZE(order); i++)
		fcq_complete(&fcqs[1], &ents[order[i]].e, st[i], 1000 + i);
	assert_false(woken(cq));
	assert_int_equal(n_got, ARRAY_SIZE(order));
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		assert_int_equal(got[i].id, order[i]);
		assert_int_equal(got[i].kind, ents[order[i]].kind);
		assert_int_equal(got[i].status, st[i]);
		assert_int_equal(got[i].byte_len, 1000 + i);
		assert_int_equal(ents[order[i]].calls, 1);
	}
	/* The other CQ was not touched. */
	assert_int_equal(pool.cqs[0].st.polls, 0);
	assert_trace("P1:16=10 P1:16=0 A1 P1:16=0 ");
}

/* ------------------------------------------------------------------ */
/* The budget. */

/* A full round: poll_budget completions and no more, and the CQ stays
 * unarmed and busy, for cq_pool_idle() to come back to. */
static void test_budget_small(void **state)
{
	struct cq *cq;

	hand_pool(1, 4);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 10);
	assert_true(woken(cq));
	assert_trace("P0:4=4 ");
	assert_int_equal(n_got, 4);
	assert_got_run(0, 0, 4);
	assert_true(cq->busy);
	assert_false(cq->armed);
	assert_false(fcqs[0].armed);
	assert_int_equal(fq_len(&fcqs[0]), 6);
	assert_stats(cq, 1, 4, 0, 1);
}

/* A budget above the batch of one ibv_poll_cq() call: batches of 16, and
 * the last asks for no more than what is left of the budget. */
static void test_budget_over_batch(void **state)
{
	struct cq *cq;

	hand_pool(1, 40);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 100);
	assert_true(woken(cq));
	assert_trace("P0:16=16 P0:16=16 P0:8=8 ");
	assert_int_equal(n_got, 40);
	assert_got_run(0, 0, 40);
	assert_true(cq->busy);
	assert_false(cq->armed);
	assert_stats(cq, 3, 40, 0, 1);
}

/* Less than a budget waiting: taken, then the empty poll re-arms and
 * polls once more; the CQ is armed and not busy. */
static void test_budget_partial_round(void **state)
{
	struct cq *cq;

	hand_pool(1, 4);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 3);
	assert_false(woken(cq));
	assert_trace("P0:4=3 P0:1=0 A0 P0:1=0 ");
	assert_int_equal(n_got, 3);
	assert_false(cq->busy);
	assert_true(cq->armed);
	assert_true(fcqs[0].armed);
	assert_stats(cq, 3, 3, 2, 2);
}

/* Exactly a budget waiting: the round cannot know the CQ is empty, so it
 * is busy; the next round finds it empty and re-arms. */
static void test_budget_exact(void **state)
{
	struct cq *cq;

	hand_pool(1, 4);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 4);
	assert_true(woken(cq));
	assert_trace("P0:4=4 ");
	assert_true(cq->busy);
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("P0:4=0 A0 P0:4=0 ");
	assert_false(cq->busy);
	assert_true(cq->armed);
	assert_int_equal(n_got, 4);
	assert_stats(cq, 3, 4, 2, 2);
}

/* ------------------------------------------------------------------ */
/* cq_pool_idle(). */

/* run: one more round for each busy CQ, and only for those (an armed CQ's
 * completions come with its event); true while a round took completions. */
static void test_idle_run(void **state)
{
	hand_pool(3, 4);
	complete_n(&fcqs[0], 0, 10);
	complete_n(&fcqs[1], 100, 5);	/* armed: raises its event */
	complete_n(&fcqs[2], 200, 2);
	pool.cqs[0].armed = false;
	pool.cqs[0].busy = true;
	pool.cqs[2].armed = false;
	pool.cqs[2].busy = true;
	fcqs[0].armed = fcqs[2].armed = false;

	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P0:4=4 P2:4=2 P2:2=0 A2 P2:2=0 ");
	assert_true(pool.cqs[0].busy);
	assert_false(pool.cqs[0].armed);
	assert_false(pool.cqs[2].busy);
	assert_true(pool.cqs[2].armed);

	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P0:4=4 ");
	/* The last round took completions: true, though nothing is busy now
	 * (their handlers queued work for the end of a batch). */
	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P0:4=2 P0:2=0 A0 P0:2=0 ");
	assert_false(pool.cqs[0].busy);
	assert_true(pool.cqs[0].armed);
	/* Nothing busy: nothing polled, nothing taken. */
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("");

	assert_int_equal(n_got, 12);
	assert_got_run(0, 0, 4);
	assert_got_run(4, 200, 2);
	assert_got_run(6, 4, 4);
	assert_got_run(10, 8, 2);
	assert_int_equal(fq_len(&fcqs[1]), 5);
	assert_stats(&pool.cqs[1], 0, 0, 0, 1);
}

/* Not run (the loop is about to sleep): drain each busy CQ until it is
 * empty, whatever the budget, then re-arm; nothing is left unarmed. */
static void test_idle_drain(void **state)
{
	hand_pool(2, 4);
	complete_n(&fcqs[0], 0, 100);
	complete_n(&fcqs[1], 300, 3);	/* armed: raises its event */
	pool.cqs[0].armed = false;
	pool.cqs[0].busy = true;
	fcqs[0].armed = false;

	assert_true(cq_pool_idle(&pool, false));
	assert_trace("P0:16=16 P0:16=16 P0:16=16 P0:16=16 P0:16=16 P0:16=16 P0:16=4 "
		     "P0:16=0 A0 P0:16=0 ");
	assert_int_equal(n_got, 100);
	assert_got_run(0, 0, 100);
	assert_false(pool.cqs[0].busy);
	assert_true(pool.cqs[0].armed);
	assert_true(fcqs[0].armed);
	assert_int_equal(fq_len(&fcqs[1]), 3);
	assert_stats(&pool.cqs[0], 9, 100, 2, 2);

	assert_false(cq_pool_idle(&pool, false));
	assert_trace("");
}

/* A drain takes what arrives while it drains, and the completion that
 * races its re-arm. */
static void test_idle_drain_race(void **state)
{
	hand_pool(1, 4);
	fcqs[0].armed = false;		/* its event was taken already */
	complete_n(&fcqs[0], 0, 20);
	pool.cqs[0].armed = false;
	pool.cqs[0].busy = true;
	fcqs[0].arrive_on_arm = 2;
	fcqs[0].arrive_entry = &ents[42].e;

	assert_true(cq_pool_idle(&pool, false));
	assert_trace("P0:16=16 P0:16=4 P0:16=0 A0 P0:16=2 P0:16=0 ");
	assert_int_equal(n_got, 22);
	assert_int_equal(ents[42].calls, 2);
	assert_int_equal(fcqs[0].events_raised, 0);
	assert_true(pool.cqs[0].armed);
	assert_false(pool.cqs[0].busy);
}

/* ------------------------------------------------------------------ */
/* Re-arm. */

/*
 * The race: a completion that arrives after the last empty poll but
 * before ibv_req_notify_cq() takes effect raises no event. cq.c must poll
 * once more after re-arming, or the completion waits for an event that
 * never comes (a stalled link).
 */
static void test_rearm_race(void **state)
{
	struct cq *cq;

	hand_pool(1, 64);
	cq = &pool.cqs[0];
	fcqs[0].armed = false;
	fcqs[0].arrive_on_arm = 1;
	fcqs[0].arrive_entry = &ents[9].e;
	assert_false(woken(cq));
	assert_trace("P0:16=0 A0 P0:16=1 P0:16=0 ");
	assert_int_equal(ents[9].calls, 1);
	assert_int_equal(fcqs[0].events_raised, 0);
	assert_int_equal(fq_len(&fcqs[0]), 0);
	assert_true(cq->armed);
	assert_false(cq->busy);
	assert_stats(cq, 3, 1, 2, 2);
}

/* Nothing raced: the second empty poll ends the round. */
static void test_rearm_empty(void **state)
{
	struct cq *cq;

	hand_pool(1, 64);
	cq = &pool.cqs[0];
	fcqs[0].armed = false;
	assert_false(woken(cq));
	assert_trace("P0:16=0 A0 P0:16=0 ");
	assert_true(cq->armed);
	assert_true(fcqs[0].armed);
	assert_false(cq->busy);
	assert_stats(cq, 2, 0, 2, 2);
	/* The next completion raises an event, as the CQ is armed. */
	complete_n(&fcqs[0], 0, 1);
	assert_int_equal(fcqs[0].events_raised, 1);
}

/* Polling a CQ that is still armed (a busy CQ armed by the race round)
 * takes what is there and stops at the first empty poll: no re-arm. */
static void test_armed_no_rearm(void **state)
{
	struct cq *cq;

	hand_pool(1, 64);
	cq = &pool.cqs[0];
	fcqs[0].armed = false;	/* the fake raised its event already */
	complete_n(&fcqs[0], 0, 5);
	cq->busy = true;
	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P0:16=5 P0:16=0 ");
	assert_false(cq->busy);
	assert_int_equal(n_got, 5);
}

/*
 * Every link on the CQ quiet (cq_quiet()): armed for solicited events
 * only, so our own sends' completions wake nobody while the peer's
 * messages do. A link that turns loud (it waits for a send completion)
 * makes the CQ busy: before the worker blocks it is armed for all and
 * polled once more, which takes the completion that came meanwhile
 * without an event.
 */
static void test_solicited_arm(void **state)
{
	struct cq *cq;

	hand_pool(1, 64);
	cq = &pool.cqs[0];
	cq->n_links = 2;
	cq_quiet(cq, true);
	fcqs[0].armed = false;
	assert_false(woken(cq));
	assert_trace("P0:16=0 A0 P0:16=0 ");	/* one link still loud */
	cq_quiet(cq, true);
	assert_false(cq->busy);
	/* Re-armed at the next empty round: solicited only. */
	fcqs[0].armed = false;
	assert_false(woken(cq));
	assert_trace("P0:16=0 S0 P0:16=0 ");
	complete_n(&fcqs[0], 0, 2);		/* our sends completing */
	assert_int_equal(fcqs[0].events_raised, 0);
	/* A link waits for its completion: polled and armed for all. */
	cq_quiet(cq, false);
	assert_true(cq->busy);
	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P0:16=2 P0:16=0 A0 P0:16=0 ");
	assert_int_equal(n_got, 2);
	assert_false(cq->busy);
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("");
	complete_n(&fcqs[0], 2, 1);
	assert_int_equal(fcqs[0].events_raised, 1);
	/* All quiet again: a peer's message (solicited) still raises one. */
	cq_quiet(cq, true);
	assert_false(woken(cq));
	assert_trace("P0:16=1 P0:16=0 S0 P0:16=0 ");
	fcqs[0].next_solicited = true;
	complete_n(&fcqs[0], 3, 1);
	assert_int_equal(fcqs[0].events_raised, 2);
	/* Two arms of the three were for solicited events only. */
	assert_int_equal(cq->st.rearms_solicited, 2);
}

/* The sweep polls a CQ armed for solicited events only (a failed send
 * there raises no event: the peer died) and leaves the others alone. */
static void test_sweep_solicited(void **state)
{
	hand_pool(2, 64);
	pool.cqs[0].armed_solicited = true;
	pool.cqs[0].n_links = pool.cqs[0].n_quiet = 1;
	fcqs[0].armed_solicited = true;
	fcq_complete(&fcqs[0], &ents[0].e, IBV_WC_RETRY_EXC_ERR, 0);
	complete_n(&fcqs[1], 1, 1);		/* raises its event: not ours */
	assert_int_equal(fcqs[0].events_raised, 0);
	cq_pool_sweep(&pool);
	assert_trace("P0:16=1 P0:16=0 ");
	assert_int_equal(n_got, 1);
	assert_int_equal(got[0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(fq_len(&fcqs[1]), 1);
}

/* ------------------------------------------------------------------ */
/* Provider errors. */

/* ibv_poll_cq() < 0 takes nothing and ends the round: it is not a loop,
 * in a round, in a drain, or from an idle round. */
static void test_poll_error(void **state)
{
	struct cq *cq;

	hand_pool(1, 8);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 3);
	fcqs[0].poll_err = -EIO;
	assert_false(woken(cq));
	assert_trace("P0:8=-5 A0 P0:8=-5 ");
	assert_int_equal(n_got, 0);
	assert_false(cq->busy);
	assert_stats(cq, 2, 0, 2, 2);

	cq->armed = false;
	assert_false(cq_poll(cq, true));
	assert_trace("P0:16=-5 A0 P0:16=-5 ");

	cq->armed = false;
	cq->busy = true;
	assert_false(cq_pool_idle(&pool, false));
	assert_trace("P0:16=-5 A0 P0:16=-5 ");
	assert_false(cq->busy);

	/* Once the provider recovers, the completions are all there. */
	fcqs[0].poll_err = 0;
	cq->armed = false;
	assert_false(cq_poll(cq, false));
	assert_int_equal(n_got, 3);
}

/*
 * A re-arm that fails (ibv_req_notify_cq() returns an errno: rxe does so
 * through the uverbs write once its device is gone) leaves the CQ unarmed,
 * and cq_poll() polls and re-arms forever on the event-loop thread: the
 * worker hangs at 100% CPU. The round must end (and the failure be
 * visible somewhere).
 */
static void test_rearm_failure_ends(void **state)
{
	struct cq *cq;

	hand_pool(1, 8);
	cq = &pool.cqs[0];
	fcqs[0].notify_err = EIO;
	assert_false(woken(cq));
	assert_true(polls_total < 10);

	fcqs[0].poll_err = -EIO;
	polls_total = 0;
	cq->busy = true;
	assert_false(cq_pool_idle(&pool, false));
	assert_true(polls_total < 10);
	assert_true(cq->st.rearm_failures > 0);
}

/* ------------------------------------------------------------------ */
/* Statistics. */

static void test_stats(void **state)
{
	struct cq *cq;

	hand_pool(1, 8);
	cq = &pool.cqs[0];
	complete_n(&fcqs[0], 0, 20);
	assert_true(woken(cq));			/* 1 poll, 8 taken */
	assert_true(cq_pool_idle(&pool, true));	/* 1 poll, 8 taken */
	assert_true(cq_pool_idle(&pool, true));	/* 4 taken, empty, arm, empty */
	assert_trace("P0:8=8 P0:8=8 P0:8=4 P0:4=0 A0 P0:4=0 ");
	assert_stats(cq, 5, 20, 2, 2);
	assert_int_equal(cq->st.events, 0);

	/* Polling an armed CQ that has nothing: one empty poll, no re-arm. */
	assert_false(cq_poll(cq, false));
	assert_trace("P0:8=0 ");
	assert_stats(cq, 6, 20, 3, 2);
	assert_int_equal(n_got, 20);
}

/* ------------------------------------------------------------------ */
/* cq_pool_init(), the event path, cq_pool_close(). */

static void assert_registered(int fd, bool yes)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int r = epoll_ctl(es.fd, EPOLL_CTL_ADD, fd, &ev);

	if (yes) {
		assert_int_equal(r, -1);
		assert_int_equal(errno, EEXIST);
	} else {
		assert_int_equal(r, 0);
		assert_int_equal(epoll_ctl(es.fd, EPOLL_CTL_DEL, fd, NULL), 0);
	}
}

static void test_init(void **state)
{
	unsigned i;

	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 3, 4000, 0), 0);
	assert_int_equal(pool.n, 3);
	assert_int_equal(pool.budget, 1);	/* 0: at least one */
	assert_ptr_equal(pool.ctx, &fake_vctx.context);
	assert_ptr_equal(pool.epset, &es);
	assert_int_equal(n_fcqs, 3);
	assert_int_equal(n_fchans, 3);
	for (i = 0; i < 3; i++) {
		struct cq *cq = &pool.cqs[i];

		assert_ptr_equal(cq->pool, &pool);
		assert_int_equal(cq->idx, i);
		assert_ptr_equal(cq->channel, &fchans[i].ibv);
		assert_ptr_equal(cq->cq, &fcqs[i].ibv);
		assert_true(fcntl(cq->channel->fd, F_GETFL) & O_NONBLOCK);
		assert_int_equal(fcqs[i].create_cqe, 4000);
		assert_int_equal(cq->cqe, 4095);	/* what the provider made */
		assert_ptr_equal(fcqs[i].ibv.channel, cq->channel);
		assert_ptr_equal(fcqs[i].ibv.cq_context, cq);
		assert_int_equal(fcqs[i].comp_vector, i % 2);	/* wrapped: 2 vectors */
		assert_true(cq->armed);
		assert_true(fcqs[i].armed);
		assert_false(cq->busy);
		assert_false(cq->moderated);
		assert_int_equal(cq->n_links, 0);
		assert_int_equal(cq->used, 0);
		assert_non_null(cq->ev.cb);
		assert_stats(cq, 0, 0, 0, 1);
		assert_registered(cq->channel->fd, true);
	}
	assert_int_equal(modify_calls, 0);	/* the device cannot moderate */
	assert_trace("A0 A1 A2 ");
	cq_pool_close(&pool);
}

static void test_init_clamps(void **state)
{
	/* n 0: one CQ. */
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 0, 100, 7), 0);
	assert_int_equal(pool.n, 1);
	assert_int_equal(pool.budget, 7);
	cq_pool_close(&pool);

	/* More than CQ_POOL_MAX: CQ_POOL_MAX. */
	n_fcqs = n_fchans = 0;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, CQ_POOL_MAX + 5, 100, 7),
			 0);
	assert_int_equal(pool.n, CQ_POOL_MAX);
	assert_int_equal(n_fcqs, CQ_POOL_MAX);
	cq_pool_close(&pool);

	/* cqe beyond the device's max_cqe: max_cqe. */
	n_fcqs = n_fchans = 0;
	fake_attr.orig_attr.max_cqe = 32768;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 1, 100000, 7), 0);
	assert_int_equal(fcqs[0].create_cqe, 32768);
	cq_pool_close(&pool);

	/* A max_cqe of 0, or a failed query: cqe as asked. */
	n_fcqs = n_fchans = 0;
	fake_attr.orig_attr.max_cqe = 0;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 1, 100000, 7), 0);
	assert_int_equal(fcqs[0].create_cqe, 100000);
	cq_pool_close(&pool);

	n_fcqs = n_fchans = 0;
	fake_attr.orig_attr.max_cqe = 10;
	fake_query_err = EINVAL;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 1, 100000, 7), 0);
	assert_int_equal(fcqs[0].create_cqe, 100000);
	cq_pool_close(&pool);
}

static void test_init_moderation(void **state)
{
	unsigned i;

	fake_attr.cq_mod_caps.max_cq_count = 255;
	fake_attr.cq_mod_caps.max_cq_period = 4095;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 2, 100, 8), 0);
	assert_int_equal(modify_calls, 2);
	assert_int_equal(last_modify.attr_mask, IBV_CQ_ATTR_MODERATE);
	assert_int_equal(last_modify.moderate.cq_count, 16);
	assert_int_equal(last_modify.moderate.cq_period, 16);
	for (i = 0; i < 2; i++)
		assert_true(pool.cqs[i].moderated);
	cq_pool_close(&pool);

	/* The device refuses: not moderated, and no failure. */
	n_fcqs = n_fchans = 0;
	modify_calls = 0;
	fake_modify_err = EINVAL;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 2, 100, 8), 0);
	assert_int_equal(modify_calls, 2);
	for (i = 0; i < 2; i++)
		assert_false(pool.cqs[i].moderated);
	cq_pool_close(&pool);
}

static void assert_all_destroyed(void)
{
	unsigned i;

	for (i = 0; i < n_fcqs; i++)
		assert_false(fcqs[i].live);
	for (i = 0; i < n_fchans; i++)
		assert_false(fchans[i].live);
	assert_int_equal(pool.n, 0);
}

/* A failure half-way: -errno, and everything made so far is undone. */
static void test_init_unwinds(void **state)
{
	fail_cq_at = 2;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 4, 100, 8), -ENOMEM);
	assert_int_equal(n_fcqs, 2);
	assert_int_equal(n_fchans, 3);
	assert_all_destroyed();

	reset(state);
	fail_channel_at = 0;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 4, 100, 8), -EMFILE);
	assert_int_equal(n_fchans, 0);
	assert_all_destroyed();

	reset(state);
	fail_channel_at = 3;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 4, 100, 8), -EMFILE);
	assert_int_equal(n_fcqs, 3);
	assert_all_destroyed();

	reset(state);
	fail_arm_at = 1;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 4, 100, 8), -EIO);
	assert_int_equal(n_fcqs, 2);
	assert_all_destroyed();

	/* epoll refuses the channel's fd. */
	reset(state);
	close(es.fd);
	es.fd = -1;
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 2, 100, 8), -EBADF);
	assert_int_equal(n_fcqs, 1);
	assert_all_destroyed();
}

static void test_close(void **state)
{
	unsigned i;

	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 3, 100, 8), 0);
	/* An event read and acknowledged before: destroy does not wait. */
	complete_n(&fcqs[1], 0, 1);
	pool.cqs[1].ev.cb(&pool.cqs[1].ev, EPOLLIN);
	cq_pool_close(&pool);
	assert_all_destroyed();
	for (i = 0; i < 3; i++)
		assert_null(pool.cqs[i].cq);
	/* Closing again (or a pool that never opened) is harmless. */
	cq_pool_close(&pool);
}

/* An fd leaves the epoll set when it is deregistered, before its close. */
static void test_close_deregisters(void **state)
{
	struct epoll_event ev;
	uint64_t one = 1;
	int dup_fd;

	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 1, 100, 8), 0);
	/* A second descriptor for the same open file keeps it alive. */
	dup_fd = dup(pool.cqs[0].channel->fd);
	assert_true(dup_fd >= 0);
	cq_pool_close(&pool);
	/* Had the fd stayed registered, its event would name the freed CQ. */
	assert_int_equal(write(dup_fd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(epoll_wait(es.fd, &ev, 1, 0), 0);
	close(dup_fd);
}

/* The worker's epoll set reports the channel; the callback takes one
 * event, acknowledges it, and polls a round. */
static void test_event_path(void **state)
{
	struct epoll_event ev[4];
	struct epset_entry *e;
	struct cq *cq;

	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 2, 100, 8), 0);
	trace[0] = '\0';
	cq = &pool.cqs[1];
	complete_n(&fcqs[1], 0, 3);
	assert_int_equal(fcqs[1].events_raised, 1);
	assert_int_equal(epoll_wait(es.fd, ev, 4, 0), 1);
	e = ev[0].data.ptr;
	assert_ptr_equal(e, &cq->ev);
	e->cb(e, ev[0].events);
	/* Polled, not armed: that waits until the worker would block. */
	assert_trace("K1:1 P1:8=3 P1:5=0 ");
	assert_int_equal(cq->st.events, 1);
	assert_int_equal(fcqs[1].acked, 1);
	assert_int_equal(n_got, 3);
	assert_false(cq->armed);
	assert_true(cq->busy);
	/* What completes before that is taken without an event. */
	complete_n(&fcqs[1], 3, 2);
	assert_int_equal(fcqs[1].events_raised, 1);
	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P1:8=2 P1:6=0 A1 P1:6=0 ");
	assert_int_equal(n_got, 5);
	assert_true(cq->armed);
	assert_false(cq->busy);
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("");
	assert_int_equal(cq->st.rearms, 2);	/* cq_pool_init()'s, and this one */
	/* Edge-triggered, and the channel is empty: nothing more. */
	assert_int_equal(epoll_wait(es.fd, ev, 4, 0), 0);

	/* Two events waiting (a CQ re-armed before its event was read): one
	 * read per wake-up, which never costs a failing read; the CQ is
	 * polled all the same, and the other event is read at the next. */
	{
		uint64_t one = 1;

		assert_int_equal(write(cq->channel->fd, &one, sizeof(one)), sizeof(one));
		fcqs[1].events_raised++;
	}
	complete_n(&fcqs[1], 10, 1);		/* raises the second */
	assert_int_equal(epoll_wait(es.fd, ev, 4, 0), 1);
	e = ev[0].data.ptr;
	e->cb(e, ev[0].events);
	assert_trace("K1:1 P1:8=1 P1:7=0 ");
	assert_int_equal(cq->st.events, 2);
	assert_int_equal(n_got, 6);
	cq->ev.cb(&cq->ev, EPOLLIN);
	assert_trace("K1:1 P1:8=0 ");
	assert_int_equal(cq->st.events, 3);
	assert_int_equal(fcqs[1].acked, 3);
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("P1:8=0 A1 P1:8=0 ");

	/* A wake-up without an event: no ack, no poll. */
	cq->ev.cb(&cq->ev, EPOLLIN);
	assert_trace("");
	assert_int_equal(cq->st.events, 3);

	/* Beyond the budget: busy until cq_pool_idle() took the rest. */
	complete_n(&fcqs[1], 20, 20);
	assert_int_equal(epoll_wait(es.fd, ev, 4, 0), 1);
	e = ev[0].data.ptr;
	e->cb(e, ev[0].events);
	assert_trace("K1:1 P1:8=8 ");
	assert_true(cq->busy);
	assert_true(cq_pool_idle(&pool, true));
	assert_true(cq_pool_idle(&pool, true));
	assert_trace("P1:8=8 P1:8=4 P1:4=0 A1 P1:4=0 ");
	assert_false(cq->busy);
	assert_false(cq_pool_idle(&pool, true));
	assert_trace("");
	assert_int_equal(n_got, 26);
	/* Armed again: the next completion raises an event. */
	complete_n(&fcqs[1], 50, 1);
	assert_int_equal(epoll_wait(es.fd, ev, 4, 0), 1);
	e = ev[0].data.ptr;
	e->cb(e, ev[0].events);
	assert_int_equal(n_got, 27);
	/* The other CQ saw none of it. */
	assert_stats(&pool.cqs[0], 0, 0, 0, 1);
	cq_pool_close(&pool);
}

/* ------------------------------------------------------------------ */
/* cq_get(), cq_put(). */

/* Links of equal need are spread evenly over the CQs. */
static void test_get_spreads(void **state)
{
	unsigned i;

	hand_pool(3, 8);
	for (i = 0; i < 6; i++)
		assert_ptr_equal(cq_get(&pool, 100), &pool.cqs[i % 3]);
	for (i = 0; i < 3; i++) {
		assert_int_equal(pool.cqs[i].n_links, 2);
		assert_int_equal(pool.cqs[i].used, 200);
	}
	/* One gone from CQ 1: the next goes there. */
	cq_put(&pool.cqs[1], 100);
	assert_ptr_equal(cq_get(&pool, 100), &pool.cqs[1]);
}

/* The least loaded CQ is passed over when it has no room. */
static void test_get_skips_full(void **state)
{
	hand_pool(2, 8);
	pool.cqs[0].used = 950;
	pool.cqs[1].used = 100;
	pool.cqs[1].n_links = 5;
	assert_ptr_equal(cq_get(&pool, 100), &pool.cqs[1]);
	assert_int_equal(pool.cqs[1].n_links, 6);
	assert_int_equal(pool.cqs[1].used, 200);
	assert_int_equal(pool.cqs[0].n_links, 0);
	assert_int_equal(pool.cqs[0].used, 950);
	/* An exact fit has room. */
	assert_ptr_equal(cq_get(&pool, 50), &pool.cqs[0]);
	assert_int_equal(pool.cqs[0].used, 1000);
}

/* No CQ with room for need: NULL, and nothing changed. */
static void test_get_refuses(void **state)
{
	unsigned i;

	hand_pool(3, 8);
	for (i = 0; i < 3; i++) {
		pool.cqs[i].used = 950;
		pool.cqs[i].n_links = i;
	}
	assert_null(cq_get(&pool, 51));
	assert_null(cq_get(&pool, 1001));
	for (i = 0; i < 3; i++) {
		assert_int_equal(pool.cqs[i].used, 950);
		assert_int_equal(pool.cqs[i].n_links, i);
	}
	/* More than a whole CQ, on an empty pool. */
	hand_pool(3, 8);
	for (i = 0; i < 3; i++)
		pool.cqs[i].used = pool.cqs[i].n_links = 0;
	assert_null(cq_get(&pool, 1001));
	/* A pool without CQs (rdma off, or init failed). */
	memset(&pool, 0, sizeof(pool));
	assert_null(cq_get(&pool, 1));
}

/* A need so large that used + need wraps around is no fit. */
static void test_get_no_wrap(void **state)
{
	hand_pool(1, 8);
	pool.cqs[0].used = 10;
	assert_null(cq_get(&pool, UINT_MAX - 5));
	assert_int_equal(pool.cqs[0].used, 10);
	assert_int_equal(pool.cqs[0].n_links, 0);
}

static void test_put_returns_room(void **state)
{
	struct cq *cq;

	hand_pool(1, 8);
	cq = &pool.cqs[0];
	assert_ptr_equal(cq_get(&pool, 400), cq);
	assert_ptr_equal(cq_get(&pool, 400), cq);
	assert_null(cq_get(&pool, 400));
	cq_put(cq, 400);
	assert_int_equal(cq->n_links, 1);
	assert_int_equal(cq->used, 400);
	assert_ptr_equal(cq_get(&pool, 400), cq);
	cq_put(cq, 400);
	cq_put(cq, 400);
	assert_int_equal(cq->n_links, 0);
	assert_int_equal(cq->used, 0);
	assert_ptr_equal(cq_get(&pool, 1000), cq);
	cq_put(cq, 1000);

	/* NULL (a link that never got a CQ), one put too many, one too big:
	 * no harm, no wrap-around. */
	cq_put(NULL, 10);
	cq_put(cq, 10);
	assert_int_equal(cq->n_links, 0);
	assert_int_equal(cq->used, 0);
	assert_ptr_equal(cq_get(&pool, 10), cq);
	cq_put(cq, 500);
	assert_int_equal(cq->used, 0);
	assert_int_equal(cq->n_links, 0);
}

/* The size the provider made counts, not the size asked for. */
static void test_get_provider_size(void **state)
{
	assert_int_equal(cq_pool_init(&pool, &es, &fake_vctx.context, 1, 4000, 8), 0);
	assert_ptr_equal(cq_get(&pool, 4095), &pool.cqs[0]);
	assert_null(cq_get(&pool, 1));
	cq_pool_close(&pool);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dispatch_by_wr_id),
		T(test_budget_small),
		T(test_budget_over_batch),
		T(test_budget_partial_round),
		T(test_budget_exact),
		T(test_idle_run),
		T(test_idle_drain),
		T(test_idle_drain_race),
		T(test_rearm_race),
		T(test_rearm_empty),
		T(test_armed_no_rearm),
		T(test_solicited_arm),
		T(test_sweep_solicited),
		T(test_poll_error),
		T(test_rearm_failure_ends),
		T(test_stats),
		T(test_init),
		T(test_init_clamps),
		T(test_init_moderation),
		T(test_init_unwinds),
		T(test_close),
		T(test_close_deregisters),
		T(test_event_path),
		T(test_get_spreads),
		T(test_get_skips_full),
		T(test_get_refuses),
		T(test_get_no_wrap),
		T(test_put_returns_room),
		T(test_get_provider_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
