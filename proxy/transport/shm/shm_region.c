/* SPDX-License-Identifier: MIT */
/*
 * The shm transport's regions (shm-int.h): ours, a sealed memfd with a
 * queue per link and the ring area, made before the rendezvous, and the
 * peer's, mapped when its rendezvous message passes our checks, with its
 * doorbells. The layout is shm-wire.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/epset.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "smc/transport.h"
#include "shm-int.h"

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
int shm_lgr_prepare(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	struct shm_lgr *sg;
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
	shm_hdr_init((struct shm_hdr *)(void *)sg->local, lgr->n_links, sg->local_size);
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
int shm_adopt_peer(struct shm_lgr *sg, const struct shm_rv_msg *m,
			  int *fds, unsigned n_fds)
{
	struct lgr *lgr = sg->lgr;
	struct smc_net *net = lgr->net;
	struct statfs sfs;
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
	/*
	 * Only a tmpfs (shmem) memfd, as memfd_create() without flags makes:
	 * a hole punched in it reads as zeros. A hugetlbfs one passes the
	 * seal and size checks, but once the peer punched a hole and the
	 * huge pages ran out, our next access to the region is a SIGBUS:
	 * the whole daemon would die for one peer's group.
	 */
	if (fstatfs(fds[0], &sfs) < 0 || sfs.f_type != TMPFS_MAGIC || !S_ISREG(st.st_mode))
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
