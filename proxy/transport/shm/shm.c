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
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "smc/clc.h"
#include "smc/conn.h"
#include "core/epset.h"
#include "core/loop.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "smc/transport.h"
#include "shm.h"

#define SHM_MAGIC	"SMCPSHM1"
#define SHM_RV_MAGIC	"SMCPRV02"	/* 02: with the group secret's tag */
#define SHM_VERSION	1
#define SHM_SLOTS	1024		/* messages per link queue, a power of two */
#define SHM_HDR_SIZE	4096
#define SHM_RING_MAX	(1u << 30)	/* ring area of one region */
#define SHM_RV_MAX	64		/* rendezvous connections not yet matched */

/* The header at the start of a region; informational for debugging, we
 * trust our own constants, not the peer's header. */
struct shm_hdr {
	char magic[8];
	uint32_t version;
	uint32_t links;
	uint32_t slots;
	uint32_t size;
	/* Written by the owner: 1 while it runs, 0 when it may block waiting
	 * for events. A producer skips the doorbell while it is 1: the owner
	 * looks at its queues again before it blocks. A peer that never sets
	 * it is simply always rung. */
	_Alignas(64) uint32_t running;
};

/* A link's message queue in its consumer's region. */
struct shm_queue {
	_Alignas(64) uint32_t prod;	/* written by the producer (the peer) */
	_Alignas(64) uint32_t cons;	/* written by the consumer (the owner) */
	_Alignas(64) uint32_t waiting;	/* producer wants a doorbell on progress */
	_Alignas(64) uint8_t slots[SHM_SLOTS][LINK_MSG_LEN];
};

#define SHM_Q_SIZE	((sizeof(struct shm_queue) + 4095) & ~(size_t)4095)

/* The region's layout, which the peer daemon shares (it maps ours). */
_Static_assert((SHM_SLOTS & (SHM_SLOTS - 1)) == 0, "SHM_SLOTS a power of two: indices wrap as uint32_t");
_Static_assert(sizeof(((struct shm_queue *)0)->slots[0]) == LINK_MSG_LEN, "a slot holds one link message");
_Static_assert(offsetof(struct shm_queue, cons) - offsetof(struct shm_queue, prod) >= 64 &&
	       offsetof(struct shm_queue, waiting) - offsetof(struct shm_queue, cons) >= 64 &&
	       offsetof(struct shm_queue, slots) % 64 == 0,
	       "each index on a cache line of its own, slots aligned");
_Static_assert(sizeof(struct shm_hdr) <= SHM_HDR_SIZE && SHM_HDR_SIZE % 4096 == 0,
	       "the header fits its page");
_Static_assert(SHM_Q_SIZE % 4096 == 0, "queues, and so the rings after them, start on a page");
_Static_assert(SHM_HDR_SIZE + LGR_LINKS_MAX * SHM_Q_SIZE < SHM_RING_MAX,
	       "queues of the most links leave room for rings (shm_rmb_base() fits 32 bits)");

/* What each side sends at rendezvous, with its memfd and one eventfd per
 * link as SCM_RIGHTS. The link group id came over the network in clear:
 * with auth.psk_file, the tag proves that the sender holds the group's
 * secret too (shm_rv_tag()); without, it is zero. */
struct shm_rv_msg {
	char magic[8];
	uint8_t lgr_id[CLC_LGR_ID_LEN];
	uint32_t links;
	uint32_t size;			/* of the memfd */
	uint32_t status;		/* reply: 0, or a decline reason */
	uint8_t tag[CLC_MAC_LEN];
};
_Static_assert(offsetof(struct shm_rv_msg, links) == 8 + CLC_LGR_ID_LEN &&
	       offsetof(struct shm_rv_msg, tag) == offsetof(struct shm_rv_msg, status) + 4 &&
	       sizeof(struct shm_rv_msg) == 68,
	       "the rendezvous message has no padding: the tag covers all before it");

struct shm_lgr;

struct shm_link {
	struct link *lnk;
	struct shm_lgr *sg;
	int efd_rx;			/* ours: the peer rings it */
	int efd_tx;			/* the peer's */
	struct epset_entry ev;
	struct shm_queue *rxq;		/* in our region */
	struct shm_queue *txq;		/* in the peer's */
	uint32_t tx_prod;
	uint32_t rx_cons;
};

struct shm_lgr {
	struct lgr *lgr;
	int memfd;
	uint8_t *local;
	uint32_t local_size;
	uint8_t *peer;
	uint32_t peer_size;
	int sock;			/* rendezvous, then liveness */
	struct epset_entry sock_ev;
	bool up;
	bool blocked;			/* the peer made a doorbell blocking */
	struct shm_link links[LGR_LINKS_MAX];
};

/* A worker's side of the transport (net->tp[]): the rendezvous socket. */
struct shm_worker {
	int fd;				/* -1: not listening */
	struct epset_entry ev;
	struct smc_net *net;
	char name[64];			/* its basename in shm.dir */
	struct list_head rvs;		/* struct shm_rv */
	unsigned n_rvs;
};

/* A rendezvous connection before its hello named a link group. */
struct shm_rv {
	struct list_head node;		/* shm_worker.rvs, oldest first */
	struct loop_defer defer;
	struct smc_net *net;
	int fd;
	uint64_t deadline_ms;		/* its hello must come by then */
	struct epset_entry ev;
};

static void shm_drain(struct shm_link *sl);
static void shm_rv_expire(struct shm_worker *sw, uint64_t now, bool need_slot);

static struct shm_worker *shm_worker_of(const struct smc_net *net)
{
	return net->tp[smc_transport_slot(&shm_ops)];
}

static uint32_t shm_rmb_base(unsigned links)
{
	return SHM_HDR_SIZE + links * (uint32_t)SHM_Q_SIZE;
}

static struct shm_queue *shm_queue(uint8_t *region, unsigned i)
{
	return (struct shm_queue *)(void *)(region + SHM_HDR_SIZE + i * SHM_Q_SIZE);
}

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
static bool shm_efd_nonblocking(int fd)
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

static void shm_want_progress(struct link *lnk)
{
	struct shm_link *sl = lnk->tp;

	__atomic_store_n(&sl->txq->waiting, 1, __ATOMIC_SEQ_CST);
}

/*
 * Before the event loop blocks: say we may sleep, then look at the queues once
 * more. Messages that came while we ran (their producers saw us running
 * and skipped the doorbell) are taken now when run allows, and we stay
 * awake (true: the caller comes back); else they ring our own doorbell.
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

		if (__atomic_load_n(&sl->rxq->prod, __ATOMIC_RELAXED) == sl->rx_cons)
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
		shm_drain(sl);
	}
	return ran;
}

/* Every active shm group of the worker; a failure one finds runs at the
 * end of the batch, in the round this asks for. */
static bool shm_before_sleep(struct smc_net *net, bool run)
{
	struct shm_worker *sw = shm_worker_of(net);
	struct list_head *pos, *tmp;
	bool more = false;

	if (sw && !list_empty(&sw->rvs))
		shm_rv_expire(sw, uv_now(net->loop), false);

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->state == LGR_ACTIVE && lgr->ops == &shm_ops && shm_lgr_idle(lgr, run))
			more = true;
	}
	return more;
}

/*
 * Busy polling: say we run (peers then skip the doorbell: the next poll
 * finds their messages), and take what the queues hold. A group that
 * fails meanwhile is torn down at the end of the batch.
 */
static bool shm_poll(struct smc_net *net)
{
	struct list_head *pos, *tmp;
	bool found = false;
	unsigned i;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);
		struct shm_lgr *sg = lgr->tp;

		if (lgr->state != LGR_ACTIVE || lgr->ops != &shm_ops || !sg || !sg->up ||
		    lgr_failing(lgr))
			continue;
		__atomic_store_n(&((struct shm_hdr *)(void *)sg->local)->running, 1,
				 __ATOMIC_RELAXED);
		for (i = 0; i < lgr->n_links; i++) {
			struct shm_link *sl = &sg->links[i];

			if (__atomic_load_n(&sl->rxq->prod, __ATOMIC_RELAXED) == sl->rx_cons)
				continue;
			found = true;
			shm_drain(sl);	/* a failure it finds runs at the batch's end */
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

static void shm_lgr_close(struct lgr *lgr)
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

static int shm_init(struct smc_net *net, char *errbuf, size_t errlen);
static void shm_close(struct smc_net *net);
static int shm_listen(struct smc_net *net, char *errbuf, size_t errlen);
static void shm_unlisten(struct smc_net *net);
static int shm_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len);
static int shm_addr_usable(const uint8_t *v, size_t len);
static bool shm_can_serve(struct smc_net *net, const struct clc_proposal *pr);
static int shm_lgr_prepare(struct lgr *lgr);
static int shm_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len);

/* In the registry's table (transports.c). */
const struct smc_transport_ops shm_ops = {
	.name = "shm",
	.mode = FLOW_MODE_SHM,
	.clc_bit = CLC_TR_SHM,
	.clc_tlv = CLC_TLV_SHM_NAME,
	.serves = "on this host",
	.needs_host_id = true,
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

#define shm_link_of(e)	((struct shm_link *)((char *)(e) - offsetof(struct shm_link, ev)))

/*
 * Takes every message the peer queued, then tells it how far we got; a
 * peer waiting for that (queue full, or autocork) gets a doorbell. Then
 * our own sends may go on: the same doorbell says the peer consumed ours.
 */
/* Takes every message queued on sl's link. A failure it finds only
 * fails the group at the end of the batch (lgr.h): sl stays till then. */
static void shm_drain(struct shm_link *sl)
{
	struct link *lnk = sl->lnk;
	struct lgr *lgr = lnk->lgr;
	uint8_t msg[LINK_MSG_LEN];
	uint32_t prod;

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
	while (sl->rx_cons != prod) {
		memcpy(msg, sl->rxq->slots[sl->rx_cons % SHM_SLOTS], sizeof(msg));
		sl->rx_cons++;
		link_rx(lnk, msg, sizeof(msg));
	}
	__atomic_store_n(&sl->rxq->cons, sl->rx_cons, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&sl->rxq->waiting, 0, __ATOMIC_SEQ_CST) && !shm_ring(sl)) {
		shm_blocked(sl);
		return;
	}
	link_tx_progress(lnk);
}

static void shm_on_doorbell(struct epset_entry *e, uint32_t events)
{
	struct shm_link *sl = shm_link_of(e);

	if (!sl->lnk)
		return;
	/* Running now: producers may skip the doorbell until we block. */
	__atomic_store_n(&((struct shm_hdr *)(void *)sl->sg->local)->running, 1,
			 __ATOMIC_RELAXED);
	shm_drain(sl);
}

/* The rendezvous socket stays open: EOF is the peer daemon's death. */
static void shm_on_sock(struct epset_entry *e, uint32_t events);

/* ------------------------------------------------------------------ */
/* Regions. */

/*
 * A free ring whose budget another group needs: a hole punched in the
 * memfd gives its pages back to the host at once (they read as zeros when
 * the ring is used again). The memfd is closed once the peer has it, so
 * the hole is punched through our mapping; rings start on a page and are
 * whole pages. The peer never writes into a free ring; a hostile one that
 * does so only takes pages back, as a write anywhere in the region could.
 * It cannot fail: the mapping is shared and writable, and F_SEAL_SEAL
 * keeps the peer from adding F_SEAL_WRITE.
 */
static void shm_rmb_drop(void *ctx, struct rmb *r)
{
	struct shm_lgr *sg = ctx;

	(void)madvise(sg->local + r->offset, r->size, MADV_REMOVE);
}

static const struct rmb_ops shm_rmb_ops = { .drop = shm_rmb_drop };

/* Our side: a sealed memfd with a queue per link and the ring area, and
 * an eventfd per link for the peer to ring. */
static int shm_lgr_prepare(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	struct shm_lgr *sg;
	struct shm_hdr *hdr;
	uint64_t rings = net->rmb_budget.limit;
	uint32_t base = shm_rmb_base(lgr->n_links);
	unsigned i;
	int err;

	if (rings > SHM_RING_MAX)
		rings = SHM_RING_MAX;
	rings &= ~(uint64_t)4095;
	sg = calloc(1, sizeof(*sg));
	if (!sg)
		return -ENOMEM;
	sg->lgr = lgr;
	sg->sock = -1;
	for (i = 0; i < LGR_LINKS_MAX; i++)
		sg->links[i].efd_rx = sg->links[i].efd_tx = -1;
	lgr->tp = sg;
	lgr->ops = &shm_ops;

	sg->local_size = base + (uint32_t)rings;
	sg->memfd = memfd_create("smcproxy-lgr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sg->memfd < 0)
		goto out_errno;
	/* Sparse: pages are only used as rings are carved and written. */
	if (ftruncate(sg->memfd, sg->local_size) < 0 ||
	    fcntl(sg->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_errno;
	sg->local = mmap(NULL, sg->local_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 sg->memfd, 0);
	if (sg->local == MAP_FAILED) {
		sg->local = NULL;
		goto out_errno;
	}
	hdr = (struct shm_hdr *)(void *)sg->local;
	memcpy(hdr->magic, SHM_MAGIC, sizeof(hdr->magic));
	hdr->version = SHM_VERSION;
	hdr->links = lgr->n_links;
	hdr->slots = SHM_SLOTS;
	hdr->size = sg->local_size;
	for (i = 0; i < lgr->n_links; i++) {
		struct shm_link *sl = &sg->links[i];

		sl->efd_rx = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (sl->efd_rx < 0)
			goto out_errno;
		sl->rxq = shm_queue(sg->local, i);
		sl->sg = sg;
		sl->ev.cb = shm_on_doorbell;
	}
	lgr->region = sg->local;
	lgr->region_size = sg->local_size;
	rmb_pool_init(&lgr->rmbs, base, sg->local_size, &net->rmb_budget, lgr->rmb_peer);
	lgr->rmbs.ops = &shm_rmb_ops;
	lgr->rmbs.ops_ctx = sg;
	return 0;

out_errno:
	err = -errno;
	shm_lgr_close(lgr);
	lgr->ops = NULL;
	return err;
}

/* Whether fd is an eventfd: we write 8 bytes into the peer's doorbells
 * and a pipe or socket posing as one could block us or take our data. */
static bool shm_is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

/*
 * Maps the peer's region and takes its doorbells (fds[0] the memfd,
 * fds[1..links] the eventfds; all of them are ours to close from here).
 * Then brings the links up.
 */
static int shm_adopt_peer(struct shm_lgr *sg, const struct shm_rv_msg *m,
			  int *fds, unsigned n_fds)
{
	struct lgr *lgr = sg->lgr;
	struct smc_net *net = lgr->net;
	struct stat st;
	unsigned i;
	int seals, err = -EPROTO;

	if (m->links != lgr->n_links || n_fds != 1 + lgr->n_links ||
	    m->size < shm_rmb_base(lgr->n_links))
		goto out_close;
	seals = fcntl(fds[0], F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fds[0], &st) < 0 ||
	    (uint64_t)st.st_size != m->size)
		goto out_close;
	/* Doorbells we could sleep on are refused outright. */
	for (i = 1; i < n_fds; i++)
		if (!shm_is_eventfd(fds[i]) || !shm_efd_nonblocking(fds[i]))
			goto out_close;
	sg->peer = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (sg->peer == MAP_FAILED) {
		sg->peer = NULL;
		err = -errno;
		goto out_close;
	}
	sg->peer_size = m->size;
	close(fds[0]);
	for (i = 0; i < lgr->n_links; i++) {
		struct shm_link *sl = &sg->links[i];

		sl->efd_tx = fds[1 + i];
		sl->txq = shm_queue(sg->peer, i);
		/* Both queues start at zero; a peer that pre-filled its
		 * indices only fails its own link group. */
		sl->tx_prod = __atomic_load_n(&sl->txq->prod, __ATOMIC_ACQUIRE);
		sl->rx_cons = 0;
		sl->lnk = &lgr->links[i];
		lgr->links[i].tp = sl;
		lgr->links[i].tx_seq = sl->tx_prod;
		if (epset_add(&net->core->epset, sl->efd_rx, EPOLLIN, &sl->ev) < 0)
			return -errno;
	}
	return 0;

out_close:
	for (i = 0; i < n_fds; i++)
		close(fds[i]);
	return err;
}

/*
 * The tag of m as the side of role sends it: HMAC(group secret, label ||
 * the message before the tag), the label naming the sender's role so that
 * a hello cannot be reflected as the answer. Only with a secret.
 */
static int shm_rv_tag(const struct lgr *lgr, enum lgr_role role, const struct shm_rv_msg *m,
		      uint8_t tag[CLC_MAC_LEN])
{
	return clc_secret_tag(lgr->secret, role == LGR_ROLE_CLIENT ?
			      "smcproxy shm hello v2 P" : "smcproxy shm hello v2 R",
			      (const uint8_t *)m, offsetof(struct shm_rv_msg, tag), tag, CLC_MAC_LEN);
}

/* Whether the peer's message m proves lgr's secret (all zeros without
 * one: a field we do not use must not carry anything). */
static bool shm_rv_tag_ok(const struct lgr *lgr, const struct shm_rv_msg *m)
{
	uint8_t want[CLC_MAC_LEN] = { 0 };

	if (lgr->has_secret &&
	    shm_rv_tag(lgr, lgr->role == LGR_ROLE_CLIENT ? LGR_ROLE_SERVER : LGR_ROLE_CLIENT, m,
		       want))
		return false;
	return clc_tag_equal(want, m->tag, CLC_MAC_LEN);
}

static int shm_send_rv(int fd, const struct shm_lgr *sg, const uint8_t *id, uint32_t status)
{
	const struct lgr *lgr = sg->lgr;
	struct shm_rv_msg m = { .links = lgr->n_links, .size = sg->local_size, .status = status };
	union {
		char buf[CMSG_SPACE(sizeof(int) * (1 + LGR_LINKS_MAX))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int fds[1 + LGR_LINKS_MAX];
	unsigned i, n = 0;

	memcpy(m.magic, SHM_RV_MAGIC, sizeof(m.magic));
	memcpy(m.lgr_id, id, sizeof(m.lgr_id));
	if (lgr->has_secret && shm_rv_tag(lgr, lgr->role, &m, m.tag))
		return -EIO;
	if (!status) {
		fds[n++] = sg->memfd;
		for (i = 0; i < lgr->n_links; i++)
			fds[n++] = sg->links[i].efd_rx;
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(m) ? 0 : -EIO;
}

/*
 * One rendezvous message with its fds; -EAGAIN when none is there yet.
 * Every fd the kernel installs is either returned in fds[] or closed
 * here, whatever the peer sent: the control buffer's length admits
 * exactly 1 + LGR_LINKS_MAX fds (CMSG_LEN, not CMSG_SPACE, which rounds
 * up to room for one more that the kernel would install and nobody
 * close), and the kernel drops the rest with MSG_CTRUNC.
 */
static int shm_recv_rv(int fd, struct shm_rv_msg *m, int *fds, unsigned *n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * (1 + LGR_LINKS_MAX))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = CMSG_LEN(sizeof(int) * (1 + LGR_LINKS_MAX)) };
	struct cmsghdr *cm;
	ssize_t n;
	unsigned i;

	_Static_assert(CMSG_LEN(sizeof(int) * (1 + LGR_LINKS_MAX)) <= sizeof(u.buf),
		       "the control length must fit the buffer");
	*n_fds = 0;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			unsigned k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (i = 0; i < k; i++) {
				int got;

				memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (*n_fds < 1 + LGR_LINKS_MAX)
					fds[(*n_fds)++] = got;
				else
					close(got);	/* cannot be: closed all the same */
			}
		}
	}
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
	    memcmp(m->magic, SHM_RV_MAGIC, sizeof(m->magic)) != 0) {
		for (i = 0; i < *n_fds; i++)
			close(fds[i]);
		*n_fds = 0;
		return n == 0 ? -ECONNRESET : -EPROTO;
	}
	return 0;
}

static void shm_on_sock(struct epset_entry *e, uint32_t events)
{
	struct shm_lgr *sg = (struct shm_lgr *)((char *)e - offsetof(struct shm_lgr, sock_ev));
	struct lgr *lgr = sg->lgr;
	struct shm_rv_msg m;
	int fds[1 + LGR_LINKS_MAX];
	unsigned n_fds;
	int err;

	if (sg->up) {
		char c;

		/* Nothing is ever sent after the rendezvous. */
		if (recv(sg->sock, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN &&
		    !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
			return;
		lgr_fail_sched(lgr, -ECONNRESET);
		return;
	}
	/* Client: the server's answer to our hello. */
	err = shm_recv_rv(sg->sock, &m, fds, &n_fds);
	if (err == -EAGAIN)
		return;
	if (!err && (m.status || memcmp(m.lgr_id, lgr->id, CLC_LGR_ID_LEN) != 0 ||
		     !shm_rv_tag_ok(lgr, &m))) {
		unsigned i;

		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		err = -EPROTO;
	}
	if (!err)
		err = shm_adopt_peer(sg, &m, fds, n_fds);
	if (err) {
		counter_add(&lgr->net->stats->bad_messages, err == -EPROTO);
		lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
		return;
	}
	sg->up = true;
	close(sg->memfd);
	sg->memfd = -1;
	lgr__established(lgr);
}

/*
 * Client: the server's rendezvous socket, where the accept says it is
 * (shm_addr_check() passed it). We pass our memory and doorbells to
 * whatever listens there, so only to a socket our own user or group may
 * connect to, as ours are (mode 0660, and the server checks that we are
 * its user or group): a peer cannot make us reach one that a daemon of
 * our user or group did not make. Anything in the way (no such file, a directory we
 * cannot search, another mount namespace, no listener) is
 * -EADDRNOTAVAIL, fallback reason no_rendezvous, with both paths in
 * lgr->why for the log.
 */
static int shm_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len)
{
	struct smc_net *net = lgr->net;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *why = NULL;
	struct shm_lgr *sg;
	struct stat st;
	int err, fd;

	if (addr[0] == '/')
		err = snprintf(sun.sun_path, sizeof(sun.sun_path), "%.*s", (int)len,
			       (const char *)addr);
	else	/* a daemon of before: its basename, in our shm.dir */
		err = snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%.*s", net->cfg->shm.dir,
			       (int)len, (const char *)addr);
	if (err < 0 || (size_t)err >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if (stat(sun.sun_path, &st) < 0)
		why = strerror(errno);
	else if (!S_ISSOCK(st.st_mode))
		why = "not a socket";
	else if (!((st.st_uid == geteuid() && (st.st_mode & 0600) == 0600) ||
		   (st.st_gid == getegid() && (st.st_mode & 0060) == 0060) ||
		   (st.st_mode & 0006) == 0006))
		why = "not a socket of our own user or group (mode 0660 as ours are)";
	err = shm_lgr_prepare(lgr);
	if (err)
		return err;
	sg = lgr->tp;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sg->sock = fd;
	sg->sock_ev.cb = shm_on_sock;
	if (!why && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		why = strerror(errno);
	if (why) {
		snprintf(lgr->why, sizeof(lgr->why),
			 "the peer's shm rendezvous socket %s cannot be reached from here (%s);"
			 " ours are in shm.dir %s", sun.sun_path, why, net->cfg->shm.dir);
		return -EADDRNOTAVAIL;
	}
	err = shm_send_rv(fd, sg, lgr->id, 0);
	if (err)
		return err;
	return epset_add(&net->core->epset, fd, EPOLLIN | EPOLLRDHUP, &sg->sock_ev) < 0 ? -errno : 0;
}

/* ------------------------------------------------------------------ */
/* Server: the rendezvous socket. */

static struct lgr *shm_find_lgr(struct smc_net *net, const uint8_t *id)
{
	struct list_head *pos;

	list_for_each(pos, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->role == LGR_ROLE_SERVER && lgr->state == LGR_RENDEZVOUS &&
		    lgr->ops == &shm_ops && memcmp(lgr->id, id, CLC_LGR_ID_LEN) == 0)
			return lgr;
	}
	return NULL;
}

static void shm_rv_reap(struct loop_defer *d)
{
	free((struct shm_rv *)((char *)d - offsetof(struct shm_rv, defer)));
}

static void shm_rv_free(struct shm_rv *rv, bool close_fd)
{
	list_del(&rv->node);
	shm_worker_of(rv->net)->n_rvs--;
	if (close_fd && rv->fd >= 0)
		close(rv->fd);
	rv->fd = -1;
	loop_defer(rv->net->core, &rv->defer, shm_rv_reap);
}

static void shm_on_rv(struct epset_entry *e, uint32_t events)
{
	struct shm_rv *rv = (struct shm_rv *)((char *)e - offsetof(struct shm_rv, ev));
	struct smc_net *net = rv->net;
	struct shm_rv_msg m;
	struct shm_lgr *sg;
	struct lgr *lgr;
	int fds[1 + LGR_LINKS_MAX];
	unsigned n_fds, i;
	int err;

	if (rv->fd < 0)
		return;
	err = shm_recv_rv(rv->fd, &m, fds, &n_fds);
	if (err == -EAGAIN)
		return;
	lgr = err ? NULL : shm_find_lgr(net, m.lgr_id);
	if (!lgr) {
		/* Unknown id: someone on this host who did not do the
		 * handshake, or came too late. */
		counter_inc(&net->stats->bad_messages);
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		shm_rv_free(rv, true);
		return;
	}
	if (!shm_rv_tag_ok(lgr, &m)) {
		/* Whoever knew the group's id (it crossed the network in
		 * clear) but not its secret: refused, and the group waits on
		 * for its real peer until its deadline. */
		counter_inc(&net->stats->auth_failures);
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		shm_rv_free(rv, true);
		return;
	}
	sg = lgr->tp;
	err = shm_adopt_peer(sg, &m, fds, n_fds);
	if (!err)
		err = shm_send_rv(rv->fd, sg, lgr->id, 0);
	if (!err) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET,
					  .data.ptr = &sg->sock_ev };

		sg->sock = rv->fd;
		sg->sock_ev.cb = shm_on_sock;
		if (epoll_ctl(net->core->epset.fd, EPOLL_CTL_MOD, sg->sock, &ev) < 0)
			err = -errno;
	}
	if (err) {
		counter_add(&net->stats->bad_messages, err == -EPROTO);
		shm_rv_free(rv, sg->sock != rv->fd);
		lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
		return;
	}
	shm_rv_free(rv, false);
	sg->up = true;
	close(sg->memfd);
	sg->memfd = -1;
	lgr__established(lgr);
}

/*
 * Whether the process at the other end of a rendezvous connection may be
 * a peer daemon: our own user, our group, or root. The socket's mode
 * already keeps others out; this holds for a socket whose mode an
 * operator widened, or a connection made before a chmod.
 */
static bool shm_peer_cred_ok(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == 0 || cr.uid == geteuid() || cr.gid == getegid();
}

/*
 * Connections whose hello is overdue go, oldest first; with every slot
 * taken the oldest goes anyway, so that silent connections cannot keep a
 * real peer out (its hello comes right after its connect, so it is never
 * the oldest for long).
 */
static void shm_rv_expire(struct shm_worker *sw, uint64_t now, bool need_slot)
{
	while (!list_empty(&sw->rvs)) {
		struct shm_rv *rv = list_entry(sw->rvs.next, struct shm_rv, node);

		if (now < rv->deadline_ms && !(need_slot && sw->n_rvs >= SHM_RV_MAX))
			return;
		counter_inc(&sw->net->stats->bad_messages);
		shm_rv_free(rv, true);
	}
}

static void shm_on_listen(struct epset_entry *e, uint32_t events)
{
	struct shm_worker *sw = (struct shm_worker *)((char *)e - offsetof(struct shm_worker, ev));
	struct smc_net *net = sw->net;
	struct shm_rv *rv;
	int fd;

	for (;;) {
		fd = accept4(sw->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (!shm_peer_cred_ok(fd)) {
			counter_inc(&net->stats->proposals_refused);
			close(fd);
			continue;
		}
		shm_rv_expire(sw, uv_now(net->loop), true);
		if (!(rv = calloc(1, sizeof(*rv)))) {
			close(fd);
			continue;
		}
		rv->net = net;
		rv->fd = fd;
		rv->deadline_ms = uv_now(net->loop) + net->cfg->fallback.connect_timeout_ms;
		rv->ev.cb = shm_on_rv;
		list_add_tail(&rv->node, &sw->rvs);
		sw->n_rvs++;
		if (epset_add(&net->core->epset, fd, EPOLLIN | EPOLLRDHUP, &rv->ev) < 0)
			shm_rv_free(rv, true);
	}
}

/* <shm.dir>/<name> into buf: its length, or -ENAMETOOLONG. A shm.dir
 * written with a trailing slash gives the same path, which peers are
 * told (shm_addr_check() takes no "//"). */
static int shm_sock_path(const struct smc_net *net, const struct shm_worker *sw,
			 char *buf, size_t len)
{
	const char *dir = net->cfg->shm.dir;
	size_t d = strlen(dir);
	int n;

	while (d > 1 && dir[d - 1] == '/')
		d--;
	n = snprintf(buf, len, "%.*s/%s", (int)(d == 1 ? 0 : d), dir, sw->name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* The rendezvous socket <shm.dir>/<name>, with a control port only. */
static int shm_listen(struct smc_net *net, char *errbuf, size_t errlen)
{
	struct shm_worker *sw = shm_worker_of(net);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	snprintf(sw->name, sizeof(sw->name), "smcproxyd-%d-%u.sock", (int)getpid(),
		 net->worker);
	err = shm_sock_path(net, sw, sun.sun_path, sizeof(sun.sun_path));
	if (err < 0)
		goto out_err;
	/* The handshake names this path to peers (shm_addr_check()). */
	if (shm_addr_check((const uint8_t *)sun.sun_path, strlen(sun.sun_path))) {
		snprintf(errbuf, errlen, "shm.dir %s: only an absolute path of "
			 "[A-Za-z0-9._-] names, without . or .. or //, can be named to peers",
			 net->cfg->shm.dir);
		return -EINVAL;
	}
	if (mkdir(net->cfg->shm.dir, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		goto out_err;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out_err;
	}
	unlink(sun.sun_path);	/* a dead daemon's with our pid */
	/* Only our user and group (peer daemons run as the same service
	 * user): the link group id of an accepted handshake then admits a
	 * connection, and shm_peer_cred_ok() checks who connected. */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(sun.sun_path, 0660) < 0 || listen(fd, 64) < 0) {
		err = -errno;
		close(fd);
		goto out_err;
	}
	sw->fd = fd;
	sw->ev.cb = shm_on_listen;
	if (epset_add(&net->core->epset, fd, EPOLLIN, &sw->ev) < 0) {
		err = -errno;
		shm_unlisten(net);
		goto out_err;
	}
	return 0;

out_err:
	snprintf(errbuf, errlen, "shm rendezvous socket in %s: %s", net->cfg->shm.dir,
		 strerror(-err));
	return err;
}

static void shm_unlisten(struct smc_net *net)
{
	struct shm_worker *sw = shm_worker_of(net);
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];

	if (!sw)
		return;
	while (!list_empty(&sw->rvs))
		shm_rv_free(list_entry(sw->rvs.next, struct shm_rv, node), true);
	if (sw->fd < 0)
		return;
	close(sw->fd);
	sw->fd = -1;
	if (shm_sock_path(net, sw, path, sizeof(path)) > 0)
		unlink(path);
}

/* Nothing but the rendezvous socket's state: a client needs none. */
static int shm_init(struct smc_net *net, char *errbuf, size_t errlen)
{
	struct shm_worker *sw = calloc(1, sizeof(*sw));

	if (!sw) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	sw->fd = -1;
	sw->net = net;
	list_init(&sw->rvs);
	net->tp[smc_transport_slot(&shm_ops)] = sw;
	return 0;
}

static void shm_close(struct smc_net *net)
{
	struct shm_worker *sw = shm_worker_of(net);

	if (!sw)
		return;
	shm_unlisten(net);
	free(sw);
	net->tp[smc_transport_slot(&shm_ops)] = NULL;
}

/* ------------------------------------------------------------------ */
/* The handshake's address: the rendezvous socket's path. */

int shm_name_check(const uint8_t *v, size_t len)
{
	if (len < 1 || len > SHM_NAME_MAX)
		return -EBADMSG;
	if ((len == 1 && v[0] == '.') || (len == 2 && v[0] == '.' && v[1] == '.'))
		return -EBADMSG;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return -EBADMSG;
	}
	return 0;
}

int shm_addr_check(const uint8_t *v, size_t len)
{
	size_t i, start;

	if (len < 1 || v[0] != '/')
		return shm_name_check(v, len);
	if (len > SHM_PATH_MAX)
		return -EBADMSG;
	for (start = 1, i = 1; i <= len; i++) {
		if (i < len && v[i] != '/')
			continue;
		if (shm_name_check(v + start, i - start))
			return -EBADMSG;
		start = i + 1;
	}
	return 0;
}

/* Only an accept names the socket, by its whole path: the server is the
 * side that listens, and the client's shm.dir may differ. */
static int shm_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len)
{
	const struct shm_worker *sw = shm_worker_of(net);
	char path[SHM_PATH_MAX + 1];
	int n;

	if (!accept)
		return 0;
	if (!sw || sw->fd < 0)
		return -ENOTCONN;
	n = shm_sock_path(net, sw, path, sizeof(path));
	if (n < 0 || (size_t)n > len ||
	    shm_addr_check((const uint8_t *)path, (size_t)n))
		return -EINVAL;
	memcpy(out, path, (size_t)n);
	return n;
}

static int shm_addr_usable(const uint8_t *v, size_t len)
{
	return len ? 0 : -ENOENT;
}

/* A peer of this host: it has our host id. */
static bool shm_can_serve(struct smc_net *net, const struct clc_proposal *pr)
{
	return memcmp(pr->host_id, net->host_id, CLC_HOST_ID_LEN) == 0;
}
