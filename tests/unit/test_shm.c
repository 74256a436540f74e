/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shm transport's handshake address (proxy/transport/shm):
 * where the rendezvous socket is, which an accept carries (CLC_TLV_SHM_NAME):
 * its whole path, or from a daemon of before a name in the client's
 * shm.dir. The codec carries it as opaque bytes (test_clc.c);
 * shm_addr_check() is what refuses one, and the handshake then declines
 * the whole message as malformed.
 *
 * And the completion doorbell of the data path (shm.c): a link of the
 * fake transport's world (fake_transport.h) given shm's ops and two
 * regions in this process, one its own, one standing for the peer's.
 * The test plays the peer by writing the shared words (running, the
 * producer waiting word) itself and reads the eventfds' counters to see
 * which doorbells rang.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sys/eventfd.h>

#include "fake_transport.h"
#include "smc/transport.h"
#include "transport/shm/shm-int.h"
#include "transport/shm/shm.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int check(const char *name, size_t len)
{
	return shm_name_check((const uint8_t *)name, len);
}

static void test_shm_names(void **state)
{
	static const char *const bad[] = {
		".", "..", "a/b", "/", "../x", "a b", "a\nb", "a\\b", "a:b", "a*b",
		"\xc3\xa9", "a\x7f", "~", "a%b",
	};
	static const char *const good[] = {
		"a", "...", ".a", "a..b", "-x", "_", "A-Z.a_z-09", "smcproxy.sock",
	};
	char name[SHM_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(check(bad[i], strlen(bad[i])), -EBADMSG);
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_int_equal(check(good[i], strlen(good[i])), 0);
	/* A NUL inside the name. */
	assert_int_equal(check("a\0b", 3), -EBADMSG);
	/* Empty, and the longest. */
	assert_int_equal(check("", 0), -EBADMSG);
	memset(name, 'n', sizeof(name));
	assert_int_equal(check(name, SHM_NAME_MAX), 0);
	assert_int_equal(check(name, SHM_NAME_MAX + 1), -EBADMSG);
	/* What the encoder-side checks of the codec used to refuse. */
	assert_int_equal(check("sm/p-1.a_B", 10), -EBADMSG);
	assert_int_equal(check(".", 1), -EBADMSG);
}

static int check_addr(const char *a)
{
	return shm_addr_check((const uint8_t *)a, strlen(a));
}

/*
 * Guards a fixed bug (two daemons whose shm.dir differ fell back with
 * "internal"): the accept now names the rendezvous socket by its whole
 * path, which the check takes when every component is a good name, as
 * well as a bare name from a daemon of before; nothing that could leave
 * the named directory, and nothing longer than sun_path holds.
 */
static void test_shm_paths(void **state)
{
	static const char *const bad[] = {
		"/", "//x", "/a//b", "/a/", "/a/./b", "/a/../b", "/..", "/.", "/a b/c",
		"/a/b\n", "/a/\xc3\xa9", "/a:b/c", "a/b", "./a", "../a",
	};
	static const char *const good[] = {
		"/a", "/run/smcproxy/smcproxyd-1-0.sock", "/tmp/smcp-it.AbC123/x.sock",
		"/a/.../b", "/.a/b", "smcproxyd-1-0.sock",
	};
	char path[SHM_PATH_MAX + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(check_addr(bad[i]), -EBADMSG);
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_int_equal(check_addr(good[i]), 0);
	assert_int_equal(shm_addr_check((const uint8_t *)"/a\0b", 4), -EBADMSG);
	assert_int_equal(shm_addr_check((const uint8_t *)"", 0), -EBADMSG);
	/* The longest path sun_path holds, and one byte more. */
	memset(path, 'p', sizeof(path));
	for (size_t i = 0; i < sizeof(path); i += 50)
		path[i] = '/';
	assert_int_equal(shm_addr_check((const uint8_t *)path, SHM_PATH_MAX), 0);
	assert_int_equal(shm_addr_check((const uint8_t *)path, SHM_PATH_MAX + 1), -EBADMSG);
}

/* The registry hands the handshake this check for the shm name TLV. */
static void test_registered(void **state)
{
	const struct smc_transport_ops *t = smc_transport_by_tlv(CLC_TLV_SHM_NAME);

	(void)state;
	assert_ptr_equal(t, &shm_ops);
	assert_ptr_equal(smc_transport_by_clc(CLC_TR_SHM), &shm_ops);
	assert_ptr_equal(t->addr_check, shm_addr_check);
	assert_ptr_equal(smc_transport_at(0), &shm_ops);
}

/* ------------------------------------------------------------------ */
/* The completion doorbell. */

struct shm_world {
	struct world *w;
	struct shm_lgr sg;
	struct shm_link *sl;
	uint8_t *local, *peer;
};

#define SW_REGION	(SHM_HDR_SIZE + SHM_Q_SIZE)

static struct shm_hdr *sw_hdr(uint8_t *region)
{
	return (struct shm_hdr *)(void *)region;
}

/* What an eventfd counted since the last look (0: not rung). */
static uint64_t rung(int fd)
{
	uint64_t n = 0;

	if (read(fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

/* The world's link 0 on shm's data path, as shm_adopt_peer() leaves it. */
static struct shm_world *sw_new(void)
{
	struct shm_world *sw = calloc(1, sizeof(*sw));
	struct shm_link *sl;

	assert_non_null(sw);
	sw->w = world_new(64 << 10, 1 << 20, 64 << 10);
	sw->local = aligned_alloc(4096, SW_REGION);
	sw->peer = aligned_alloc(4096, SW_REGION);
	assert_non_null(sw->local);
	assert_non_null(sw->peer);
	memset(sw->local, 0, SW_REGION);
	memset(sw->peer, 0, SW_REGION);
	sw->sg.lgr = sw->w->lgr;
	sw->sg.local = sw->local;
	sw->sg.peer = sw->peer;
	sw->sg.up = true;
	sw->sg.sock = sw->sg.memfd = -1;
	sl = sw->sl = &sw->sg.links[0];
	sl->sg = &sw->sg;
	sl->lnk = sw->w->lnk;
	sl->efd_rx = eventfd(0, EFD_NONBLOCK);
	sl->efd_tx = eventfd(0, EFD_NONBLOCK);
	assert_true(sl->efd_rx >= 0 && sl->efd_tx >= 0);
	sl->rxq = shm_queue(sw->local, 0);
	sl->txq = shm_queue(sw->peer, 0);
	sw->w->lgr->ops = &shm_ops;
	sw->w->lgr->tp = &sw->sg;
	sw->w->lnk->tp = sl;
	return sw;
}

static void sw_free(struct shm_world *sw)
{
	/* Back to the fake, which world_free() tears down. */
	sw->w->lgr->ops = &fake_ops;
	sw->w->lgr->tp = &sw->w->fake;
	sw->w->lnk->tp = &sw->w->fake;
	close(sw->sl->efd_rx);
	close(sw->sl->efd_tx);
	world_free(sw->w);
	free(sw->local);
	free(sw->peer);
	free(sw);
}

static uint64_t saved(struct shm_world *sw)
{
	return counter_get(&sw->w->stats.doorbells_saved);
}

/* The consumer's side: the peer waits on our queue (its word in our
 * region); we advance our index (shm_drain()) and answer. */
static void test_progress_doorbell(void **state)
{
	struct shm_world *sw = sw_new();
	struct shm_queue *rxq = sw->sl->rxq;
	uint64_t s0;

	(void)state;
	/* Asked with SHM_WAIT_LOOK while it runs: the word cleared, no
	 * doorbell, counted as saved. */
	s0 = saved(sw);
	__atomic_store_n(&sw_hdr(sw->peer)->running, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rxq->waiting, SHM_WAIT_LOOK, __ATOMIC_RELAXED);
	shm_drain(sw->sl);
	assert_int_equal(__atomic_load_n(&rxq->waiting, __ATOMIC_RELAXED), 0);
	assert_int_equal(rung(sw->sl->efd_tx), 0);
	assert_int_equal(saved(sw), s0 + 1);

	/* The same while it may sleep: rung. */
	__atomic_store_n(&sw_hdr(sw->peer)->running, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rxq->waiting, SHM_WAIT_LOOK, __ATOMIC_RELAXED);
	shm_drain(sw->sl);
	assert_int_equal(rung(sw->sl->efd_tx), 1);
	assert_int_equal(saved(sw), s0 + 1);

	/* A daemon of before (SHM_WAIT_RING), or any other word, is rung
	 * even while it runs: it does not look at the word. */
	__atomic_store_n(&sw_hdr(sw->peer)->running, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rxq->waiting, SHM_WAIT_RING, __ATOMIC_RELAXED);
	shm_drain(sw->sl);
	assert_int_equal(rung(sw->sl->efd_tx), 1);
	__atomic_store_n(&rxq->waiting, 7, __ATOMIC_RELAXED);
	shm_drain(sw->sl);
	assert_int_equal(rung(sw->sl->efd_tx), 1);
	assert_int_equal(saved(sw), s0 + 1);

	/* Nobody waiting: nothing rung. */
	shm_drain(sw->sl);
	assert_int_equal(rung(sw->sl->efd_tx), 0);
	sw_free(sw);
}

/* We wait on the peer's queue, as link_want_progress() asks. */
static void sw_ask(struct shm_world *sw)
{
	sw->w->lnk->want_progress = true;
	shm_ops.want_progress(sw->w->lnk);
	assert_int_equal(__atomic_load_n(&sw->sl->txq->waiting, __ATOMIC_RELAXED), SHM_WAIT_LOOK);
}

/* The peer consumed, and answered by clearing the word alone. */
static void sw_answer(struct shm_world *sw)
{
	__atomic_store_n(&sw->sl->txq->waiting, 0, __ATOMIC_RELAXED);
}

/* The producer's side: an answer without a doorbell is found by the busy
 * poll and before the loop blocks, once per request. */
static void test_progress_noticed(void **state)
{
	struct shm_world *sw = sw_new();
	struct smc_net *net = &sw->w->net;

	(void)state;
	/* Busy poll: nothing while the word is set, progress once it is
	 * cleared, and only once. */
	sw_ask(sw);
	assert_false(shm_ops.poll(net));
	assert_true(sw->w->lnk->want_progress);
	sw_answer(sw);
	assert_true(shm_ops.poll(net));
	assert_false(sw->w->lnk->want_progress);
	assert_false(shm_ops.poll(net));

	/* Before blocking, with run: progress now, and running again. */
	sw_ask(sw);
	assert_false(shm_ops.before_sleep(net, true));
	assert_int_equal(__atomic_load_n(&sw_hdr(sw->local)->running, __ATOMIC_RELAXED), 0);
	assert_true(sw->w->lnk->want_progress);
	sw_answer(sw);
	assert_true(shm_ops.before_sleep(net, true));
	assert_false(sw->w->lnk->want_progress);
	assert_int_equal(__atomic_load_n(&sw_hdr(sw->local)->running, __ATOMIC_RELAXED), 1);
	assert_false(shm_ops.before_sleep(net, true));

	/* Without run (its rounds spent): our own doorbell, once; its
	 * handler's drain gives the progress. */
	sw_ask(sw);
	sw_answer(sw);
	assert_false(shm_ops.before_sleep(net, false));
	assert_int_equal(rung(sw->sl->efd_rx), 1);
	assert_false(shm_ops.before_sleep(net, false));
	assert_int_equal(rung(sw->sl->efd_rx), 0);
	assert_true(sw->w->lnk->want_progress);
	shm_drain(sw->sl);
	assert_false(sw->w->lnk->want_progress);

	/* Answered by a drain (a message of the peer's) while the word was
	 * still set: a later clear gives one more progress, harmless. */
	sw_ask(sw);
	shm_drain(sw->sl);
	assert_false(sw->w->lnk->want_progress);
	sw_answer(sw);
	assert_true(shm_ops.poll(net));
	assert_false(shm_ops.poll(net));
	sw_free(sw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_names),
		cmocka_unit_test(test_shm_paths),
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_progress_doorbell),
		cmocka_unit_test(test_progress_noticed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
