/* SPDX-License-Identifier: MIT */
/*
 * The shm transport (shm.h). The same ring and cursor protocol as RDMA,
 * with the peer's memory mapped instead of registered: a socket read lands
 * straight in the peer's ring, and a message is a 64-byte slot in the
 * peer's queue plus, once per batch, an eventfd doorbell.
 *
 * Everything in shared memory can be changed by the peer at any time, so
 * indices are read once and range-checked, a slot is copied out before it
 * is decoded, and the regions are sealed memfds whose size the peer cannot
 * change under our mappings (no SIGBUS).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/container.h"
#include "smc/clc.h"
#include "smc/conn.h"
#include "core/epset.h"
#include "core/loop.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "smc/transport.h"
#include "shm-int.h"


/*
 * Whether a doorbell of this group can be written without sleeping. The
 * peer shares the open file description of every eventfd we write (its
 * own, and ours that it holds), so it can clear O_NONBLOCK at any time
 * and fill the counter: a write would then sleep until the peer reads,
 * and the worker with it. So the flag is checked before each write, and
 * a peer that cleared it loses its link group. A peer that clears it in
 * the few instructions between the check and the write still wins; no
 * per-call non-blocking write exists for an eventfd.
 */
bool shm_efd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* The peer made a doorbell blocking: a protocol error of its own group. */
static void shm_blocked(struct shm_link *sl)
{
	struct lgr *lgr = sl->sg->lgr;

	counter_inc(&lgr->net->stats->bad_messages);
	lgr_fail_sched(lgr, -EPROTO);
}

/* false when the peer made the doorbell blocking: the caller fails the
 * group (shm_blocked(): at the end of the batch). */
static bool shm_ring(struct shm_link *sl)
{
	uint64_t one = 1;

	if (!shm_efd_nonblocking(sl->efd_tx))
		return false;
	/* EAGAIN means the counter is already huge: the peer is awake. */
	if (write(sl->efd_tx, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return true;
	return true;
}

/* ------------------------------------------------------------------ */
/* The transport interface. */

static unsigned shm_tx_room(struct link *lnk)
{
	struct shm_link *sl = lnk->tp;
	uint32_t cons = __atomic_load_n(&sl->txq->cons, __ATOMIC_ACQUIRE);
	uint32_t used = sl->tx_prod - cons;

	/* A consumer index ahead of what we produced is the peer's lie:
	 * report no room; the link group fails on its next bad act. */
	return used > SHM_SLOTS ? 0 : SHM_SLOTS - used;
}

static int shm_post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN])
{
	struct shm_link *sl = lnk->tp;

	memcpy(sl->txq->slots[sl->tx_prod % SHM_SLOTS], msg, LINK_MSG_LEN);
	sl->tx_prod++;
	__atomic_store_n(&sl->txq->prod, sl->tx_prod, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The doorbell, unless the owner is running: it then finds our messages
 * when it looks at its queues before blocking (shm_before_sleep()). Our producer
 * index store and its running store are each followed by a full fence
 * before the other's load (Dekker), so one of us always sees the other.
 */
static void shm_flush(struct link *lnk)
{
	struct shm_link *sl = lnk->tp;
	const struct shm_hdr *peer = (const void *)sl->sg->peer;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&peer->running, __ATOMIC_RELAXED) == 1) {
		counter_inc(&sl->sg->lgr->net->stats->doorbells_saved);
		return;
	}
	/* Not failed here: the flush hook goes on with this link and
	 * others. shm_lgr_idle(), before the loop sleeps, fails it. */
	if (!shm_ring(sl))
		sl->sg->blocked = true;
}

/* A message is complete once the peer took it from its queue: the
 * nearest thing to an RDMA send completion that shared memory has. */
static uint32_t shm_tx_done(struct link *lnk)
{
	struct shm_link *sl = lnk->tp;

	return __atomic_load_n(&sl->txq->cons, __ATOMIC_SEQ_CST);
}

/* SHM_WAIT_LOOK: while we run, the peer may answer by clearing the word
 * alone (shm_ring_progress()); shm_tx_answered() looks for that. */
static void shm_want_progress(struct link *lnk)
{
	struct shm_link *sl = lnk->tp;

	sl->tx_waiting = true;
	__atomic_store_n(&sl->txq->waiting, SHM_WAIT_LOOK, __ATOMIC_SEQ_CST);
}

/*
 * Whether the peer took our progress request since we made it: it cleared
 * the word, which it does only after storing its consumer index. Acquire,
 * so that the tx_done() of the link_tx_progress() that follows sees that
 * index. True once per request. The word, not the index: a drain that
 * stored its index before we asked again may clear the new request too
 * (its exchange comes after), and the index then does not move for it.
 * A peer that clears the word without consuming only gets us to look at
 * tx_done() again.
 */
static bool shm_tx_answered(struct shm_link *sl)
{
	if (!sl->tx_waiting || __atomic_load_n(&sl->txq->waiting, __ATOMIC_ACQUIRE))
		return false;
	sl->tx_waiting = false;
	return true;
}

/*
 * Before the event loop blocks: say we may sleep, then look at the queues once
 * more. Messages that came while we ran (their producers saw us running
 * and skipped the doorbell), and progress requests the peer answered
 * without a doorbell for the same reason (shm_ring_progress()), are
 * handled now when run allows, and we stay awake (true: the caller comes
 * back); else they ring our own doorbell, whose handler does both.
 */
static bool shm_lgr_idle(struct lgr *lgr, bool run)
{
	struct shm_lgr *sg = lgr->tp;
	struct shm_hdr *hdr;
	bool ran = false;
	unsigned i;

	if (!sg || !sg->up)
		return false;
	if (sg->blocked) {
		shm_blocked(&sg->links[0]);
		return true;
	}
	hdr = (struct shm_hdr *)(void *)sg->local;
	__atomic_store_n(&hdr->running, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < lgr->n_links; i++) {
		struct shm_link *sl = &sg->links[i];
		uint64_t one = 1;
		bool rx = __atomic_load_n(&sl->rxq->prod, __ATOMIC_RELAXED) != sl->rx_cons;
		bool answered = shm_tx_answered(sl);

		if (!rx && !answered)
			continue;
		if (!run) {
			/* Our own doorbell, but the peer holds it too. */
			if (!shm_efd_nonblocking(sl->efd_rx)) {
				shm_blocked(sl);
				return true;
			}
			if (write(sl->efd_rx, &one, sizeof(one)) < 0 && errno != EAGAIN)
				continue;
			continue;
		}
		__atomic_store_n(&hdr->running, 1, __ATOMIC_RELAXED);
		ran = true;
		if (rx)
			shm_drain(sl);	/* and link_tx_progress() */
		else
			link_tx_progress(sl->lnk);
	}
	return ran;
}

/* Every active shm group of the worker; a failure one finds runs at the
 * end of the batch, in the round this asks for. */
static bool shm_before_sleep(struct smc_net *net, bool run)
{
	struct shm_worker *sw = shm_worker_of(net);
	struct list_head *next;
	struct lgr *lgr;
	bool more = false;

	if (sw && !list_empty(&sw->rvs))
		shm_rv_expire(sw, uv_now(net->loop), false);

	lgr_for_each_active(lgr, next, net, &shm_ops)
		if (shm_lgr_idle(lgr, run))
			more = true;
	return more;
}

/*
 * Busy polling: say we run (peers then skip the doorbell: the next poll
 * finds their messages, or that they took our progress request), and take
 * what the queues hold. A group that fails meanwhile is torn down at the
 * end of the batch.
 */
static bool shm_poll(struct smc_net *net)
{
	struct list_head *next;
	struct lgr *lgr;
	bool found = false;
	unsigned i;

	lgr_for_each_active(lgr, next, net, &shm_ops) {
		struct shm_lgr *sg = lgr->tp;

		if (!sg || !sg->up || lgr_failing(lgr))
			continue;
		__atomic_store_n(&((struct shm_hdr *)(void *)sg->local)->running, 1,
				 __ATOMIC_RELAXED);
		for (i = 0; i < lgr->n_links; i++) {
			struct shm_link *sl = &sg->links[i];

			if (__atomic_load_n(&sl->rxq->prod, __ATOMIC_RELAXED) != sl->rx_cons) {
				found = true;
				shm_drain(sl);	/* a failure it finds runs at the batch's end */
			} else if (shm_tx_answered(sl)) {
				found = true;
				link_tx_progress(sl->lnk);
			}
		}
	}
	return found;
}

static int shm_conn_attach(struct conn *c, const struct llc_rmb *rmb)
{
	struct shm_lgr *sg = c->lgr->tp;
	uint32_t base = shm_rmb_base(c->lgr->n_links);

	if (rmb->offset < base || rmb->offset > sg->peer_size ||
	    rmb->size > sg->peer_size - rmb->offset || rmb_class(rmb->size) < 0)
		return -EINVAL;
	c->tx_ring = sg->peer + rmb->offset;
	return 0;
}

static void shm_conn_detach(struct conn *c)
{
	c->tx_ring = NULL;
}

static int shm_write(struct conn *c, uint32_t off, uint32_t len)
{
	return 0;	/* the socket read already wrote the peer's ring */
}

void shm_lgr_close(struct lgr *lgr)
{
	struct shm_lgr *sg = lgr->tp;
	unsigned i;

	if (!sg)
		return;
	for (i = 0; i < LGR_LINKS_MAX; i++) {
		/* The peer holds a descriptor of this eventfd: closing ours
		 * would leave it in our epoll set, and the peer's next
		 * doorbell would name the freed link. */
		if (sg->links[i].efd_rx >= 0) {
			epset_del(&lgr->net->core->epset, sg->links[i].efd_rx);
			close(sg->links[i].efd_rx);
		}
		if (sg->links[i].efd_tx >= 0)
			close(sg->links[i].efd_tx);
		if (i < lgr->n_links)
			lgr->links[i].tp = NULL;
	}
	if (sg->sock >= 0)
		close(sg->sock);
	rmb_pool_close(&lgr->rmbs);	/* its ops use sg */
	if (sg->memfd >= 0)
		close(sg->memfd);
	if (sg->local)
		munmap(sg->local, sg->local_size);
	if (sg->peer)
		munmap(sg->peer, sg->peer_size);
	free(sg);
	lgr->tp = NULL;
	lgr->region = NULL;
}

/* In the registry's table (transports.c). */
const struct smc_transport_ops shm_ops = {
	.name = "shm",
	.mode = FLOW_MODE_SHM,
	.clc_bit = CLC_TR_SHM,
	.clc_tlv = CLC_TLV_SHM_NAME,
	.serves = "on this host",
	.needs_host_id = true,
	.completes_locally = true,
	.init = shm_init,
	.close = shm_close,
	.listen = shm_listen,
	.unlisten = shm_unlisten,
	.before_sleep = shm_before_sleep,
	.poll = shm_poll,
	.addr_encode = shm_addr_encode,
	.addr_check = shm_addr_check,
	.addr_usable = shm_addr_usable,
	.can_serve = shm_can_serve,
	.lgr_prepare = shm_lgr_prepare,
	.lgr_connect = shm_lgr_connect,
	.tx_room = shm_tx_room,
	.post = shm_post,
	.flush = shm_flush,
	.tx_done = shm_tx_done,
	.want_progress = shm_want_progress,
	.conn_attach = shm_conn_attach,
	.conn_detach = shm_conn_detach,
	.write = shm_write,
	.lgr_close = shm_lgr_close,
};

/* ------------------------------------------------------------------ */
/* Receiving. */

#define shm_link_of(e)	container_of(e, struct shm_link, ev)

/*
 * The answer to a producer that waits for our progress (its queue full,
 * or autocork holding its next batch), once our consumer index moved: a
 * doorbell, unless it asked with SHM_WAIT_LOOK and runs. It then sees the
 * cleared word in its busy poll or before it blocks (shm_tx_answered()).
 * We clear the word (an exchange, after our index store), fence, then
 * load its running word; it stores running 0, fences, then loads the word
 * (shm_lgr_idle()). As in shm_flush(), one of us always sees the other's
 * store: it sees the word cleared, or we see it may sleep and ring. Its
 * busy poll needs no fence: it runs, and passes shm_lgr_idle() before it
 * blocks. false when the peer made the doorbell blocking.
 */
static bool shm_ring_progress(struct shm_link *sl, uint32_t waiting)
{
	const struct shm_hdr *peer = (const void *)sl->sg->peer;

	if (waiting == SHM_WAIT_LOOK) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&peer->running, __ATOMIC_RELAXED) == 1) {
			counter_inc(&sl->sg->lgr->net->stats->doorbells_saved);
			return true;
		}
	}
	return shm_ring(sl);
}

/*
 * Takes every message the peer queued, then tells it how far we got,
 * answering its progress request (shm_ring_progress()). Then our own
 * sends may go on: the peer's doorbell may say it consumed ours. A
 * failure it finds only fails the group at the end of the batch (lgr.h):
 * sl stays till then.
 */
void shm_drain(struct shm_link *sl)
{
	struct link *lnk = sl->lnk;
	struct lgr *lgr = lnk->lgr;
	uint8_t msg[LINK_MSG_LEN];
	uint32_t prod, waiting;

	/*
	 * The eventfd is never read: an edge-triggered epoll reports every
	 * write to it, whatever its counter, so resetting the counter would
	 * only cost a system call per wake-up. (It would take 2^64 rings to
	 * fill it.) Messages posted after our load of the producer index
	 * come with a doorbell of their own, or are found by shm_before_sleep().
	 */
	/* Failing already: nothing of it is taken any more, and a lie that
	 * failed it is not counted twice (a busy poll and the doorbell's
	 * event both drain before the batch ends). */
	if (lgr_failing(lgr))
		return;
	prod = __atomic_load_n(&sl->rxq->prod, __ATOMIC_ACQUIRE);
	if (prod - sl->rx_cons > SHM_SLOTS) {
		counter_inc(&lgr->net->stats->bad_messages);
		lgr_fail_sched(lgr, -EPROTO);
		return;
	}
	/* What lgr_rx_room() leaves waits: shm_lgr_idle() comes back for it. */
	while (sl->rx_cons != prod && lgr_rx_room(lgr)) {
		memcpy(msg, sl->rxq->slots[sl->rx_cons % SHM_SLOTS], sizeof(msg));
		sl->rx_cons++;
		link_rx(lnk, msg, sizeof(msg));
	}
	__atomic_store_n(&sl->rxq->cons, sl->rx_cons, __ATOMIC_SEQ_CST);
	waiting = __atomic_exchange_n(&sl->rxq->waiting, 0, __ATOMIC_SEQ_CST);
	if (waiting && !shm_ring_progress(sl, waiting)) {
		shm_blocked(sl);
		return;
	}
	shm_tx_answered(sl);	/* answered now, if it was */
	link_tx_progress(lnk);
}

void shm_on_doorbell(struct epset_entry *e, uint32_t events)
{
	struct shm_link *sl = shm_link_of(e);

	if (!sl->lnk)
		return;
	/* Running now: producers may skip the doorbell until we block. */
	__atomic_store_n(&((struct shm_hdr *)(void *)sl->sg->local)->running, 1,
			 __ATOMIC_RELAXED);
	shm_drain(sl);
}
