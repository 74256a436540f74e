/* SPDX-License-Identifier: MIT */
/*
 * smcpeer: a scriptable, deliberately hostile peer daemon for the
 * integration tests. It speaks smcproxy-protocol(7) from the proposer's
 * side with the daemon's own codecs (clc, llc, cdc from libsmcproxy.a), so
 * that a test can ask a real smcproxyd for what a well-behaved peer daemon
 * never would: flows to loopback or to other hosts, a wrong proof of the
 * shared secret, malformed handshake messages, garbage link messages and
 * queue indices that point anywhere.
 *
 *   smcpeer propose --connect ADDR:PORT [--psk FILE] [--shm-dir DIR] [--links N]
 *                   [--open DEST:PORT]... [--mark N] [--timeout MS] [--scribble PID]
 *   smcpeer raw     --connect ADDR:PORT [--mark N] [--timeout MS] [--half-close] FILE...
 *   smcpeer links   --connect ADDR:PORT --shm-dir DIR [--psk FILE] [--mark N]
 *                   [--timeout MS] FILE...
 *   smcpeer rv      --shm-dir DIR [--count N] [--fds K] [--hold MS]
 *   smcpeer flood   --connect ADDR:PORT [--count N] [--silent] [--hold MS] [--mark N]
 *   smcpeer opens   --connect ADDR:PORT --open DEST:PORT [--count N] [--mark N]
 *                   [--timeout MS]
 *   smcpeer serve   --listen ADDR:PORT --psk FILE [--tamper FIELD] [--timeout MS]
 *
 * serve: the acceptor's side of one handshake, as an on-path attacker
 * would leave it: it takes one connection (a daemon's proposal of shm),
 * answers an ACCEPT proven with the secret of FILE, then, with --tamper,
 * changes one field of it after the proof: "features" (ring moves
 * dropped), "ring_size" (halved), "links" (one fewer) or "addr" (another
 * rendezvous path). Prints what the daemon answered: "confirm",
 * "decline REASON", "closed" or "timeout".
 *
 * opens: a link group as propose brings up, then N FLOW_OPENs as fast as
 * the daemon's queue takes them, the first to DEST and each next one to
 * the address after (IPv4: DEST + i; IPv6: its last 32 bits + i), all
 * with the same ring, as a peer that scans or floods would. Prints one
 * line: "opens sent S accept A decline D open|closed": what went out
 * before the group ended or all did, what the daemon answered (a
 * daemon whose own queue to us was full may drop answers), and whether
 * the group was still up at the end.
 *
 * flood: N connections to the control port, kept
 * open together. Each sends a proposal of shm that claims the shared
 * secret (CLC_FEAT_PSK) with a MAC of zeros, as a proposer without the
 * key would; with --silent, nothing. After --hold MS (default 1000) it
 * prints one line of counts: "accept A policy P max_flows M timeout T
 * other O closed C none X": what the daemon answered on each connection
 * (a decline by its reason; closed without a word; nothing yet).
 *
 * propose --scribble PID: once the group is up, a byte into every page of
 * the daemon's ring area (scribble()), reported with the daemon's RssShmem
 * around it (smcproxy-protocol(7), Security model: what a peer can make
 * the host commit through a region).
 *
 * propose --rv-no-proof: the rendezvous hello names the group but does not
 * prove its secret; a daemon with auth.psk_file
 * must close it ("closed" or "timeout").
 *
 * propose --hugetlb: our region is a hugetlbfs memfd (MFD_HUGETLB, sealed
 * as a tmpfs one would be), which a daemon must refuse: a hole punched
 * in it once the huge pages ran out makes the daemon's next access a
 * SIGBUS. Needs free huge pages (vm.nr_hugepages); exit status 1 without.
 *
 * propose --blocking-efd: the eventfds we pass for the daemon to ring are
 * blocking and hold the largest count, so that a daemon that writes to
 * them without checking sleeps for ever.
 *
 * rv: no handshake at all, straight at every rendezvous socket in DIR
 * (smcproxyd-*.sock): N connections each. With --fds K, each sends a
 * rendezvous message for an unknown link group carrying K fds (of
 * /dev/null) and closes; prints "sent N". With --hold MS, each stays
 * silent for MS and prints "held N closed-by-daemon C refused R": C of
 * them the daemon closed meanwhile, R it closed before we could send.
 *
 * propose: the handshake (with --psk, a proof made with that file's
 * secret, right or wrong: a wrong accept MAC is reported on stderr and the
 * handshake goes on, so that the daemon is the one to judge the confirm),
 * the shm rendezvous (our sealed memfd and one eventfd per link out, the
 * daemon's back, its region mapped), then a FLOW_OPEN per --open, each with
 * its own 64 KiB ring in our region. Prints exactly one line per --open,
 * in order: "accept 0xTOKEN" (the daemon's token) or "decline REASON", or
 * "closed" (the link group was torn down first) or "timeout". A handshake
 * or rendezvous that does not succeed prints one line instead:
 * "declined-handshake REASON", "closed", "timeout", "bad-answer" or
 * "rendezvous-declined REASON". Without --open, a link group that comes up
 * prints "established". Accepted flows are aborted (CDC ABORT) before exit.
 *
 * raw: per FILE a fresh TCP connection to the control port; the file's
 * bytes go out as they are, and what comes back within the timeout is
 * printed as "NAME: WHAT": the decoded messages ("decline REASON",
 * "accept", "confirm", "garbage"), then "closed" if the daemon closed
 * without a decline, "reset", "timeout" if it neither answered nor closed,
 * or "not closed" after a decline the daemon did not close behind.
 * --half-close shuts our side down after the bytes, so a truncated message
 * ends at once instead of at the daemon's handshake deadline.
 *
 * links: brings a link group up as propose does, then per FILE writes the
 * file's bytes as link messages into the daemon's queue of link 0 (64-byte
 * slots, the last one zero-padded; an empty file is one zero slot), then a
 * FLOW_OPEN to 127.0.0.1:1 as a sync marker, moves the producer index and
 * rings the doorbell. The daemon takes a queue in order, so the decline of
 * the marker proves that everything before it was handled without killing
 * the group; end of file on the rendezvous socket is the daemon failing
 * the group. Prints "NAME: alive (MSGS)" / "NAME: failed" / "NAME: timeout",
 * MSGS being what the daemon answered to the file itself. A failed group
 * is replaced by a fresh one for the next file. Then the index attacks,
 * each on a live group: "prod-far" (producer index far beyond the queue),
 * "prod-back" (producer index behind the consumer's) and "cons-lie" (our
 * own queue's consumer index claims far more than the daemon produced, so
 * the daemon must hold its answers back; then the truth, and the answer
 * must come): "prod-far: failed", "prod-back: failed", "cons-lie: stalled
 * then answered" are what a robust daemon gives.
 *
 * Exit status: 0 when every step got an answer of some kind (the test
 * judges which), 1 on a local error (cannot connect, a file, memfd, mmap),
 * 2 on usage errors.
 *
 * The rendezvous message and the layout of a region (its header, queues
 * and where rings start) are the daemon's own, from
 * proxy/transport/shm/shm-wire.h: smcproxy-protocol(7) leaves them to the
 * implementation ("CAVEATS"), and this tool must match the daemon it tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "smc/cdc.h"
#include "cfg.h"
#include "smc/clc.h"
#include "smc/llc.h"
#include "smc/rmb-t.h"
#include "core/sock.h"
#include "transport/shm/shm-wire.h"

#include "peer_hs.h"
#include "peer_msg.h"
#include "peer_util.h"

/* A queue's indices and slots by their byte offsets in the daemon's own
 * layout (shm-wire.h), as a hostile peer writes them. */
#define Q_PROD		offsetof(struct shm_queue, prod)
#define Q_CONS		offsetof(struct shm_queue, cons)
#define Q_WAITING	offsetof(struct shm_queue, waiting)
#define Q_SLOTS		offsetof(struct shm_queue, slots)

#define LINKS_MAX	16
#define RING_SIZE	65536u		/* each FLOW_OPEN's ring in our region */
#define OPENS_MAX	256
#define FILE_MAX	(64 * LINK_MSG_LEN)
#define SYNC_TOKEN	0x53590000u	/* "SY": the links mode's markers */
#define OPEN_TOKEN	0x00010000u	/* generation 1, index i + 1 */
#define SCAN_TOKEN	0x00020000u	/* opens: generation 2, then i */

struct opts {
	struct cfg_addr connect;
	bool have_connect;
	const char *psk_file;
	const char *shm_dir;
	unsigned links;
	uint32_t mark;
	int timeout_ms;
	bool half_close;
	bool blocking_efd;
	bool hugetlb;			/* propose --hugetlb */
	struct cfg_addr listen;		/* serve --listen */
	bool have_listen;
	const char *tamper;		/* serve --tamper FIELD */
	unsigned count;
	unsigned rv_fds;
	int hold_ms;
	bool silent;
	bool rv_no_proof;
	int scribble_pid;		/* propose --scribble: the daemon's pid */
	struct cfg_addr opens[OPENS_MAX];
	unsigned n_opens;
	char **files;
	int n_files;
};

const char *peer_prog = "smcpeer";

/* ------------------------------------------------------------------ */
/* The handshake, proposer's side (peer_hs.c), offering shm. */

/* Outcomes other than success, printed as they are. */
struct outcome {
	char text[64];
};

static void outcome_set(struct outcome *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
}

/* An shm accept must name the daemon's rendezvous socket. */
static bool shm_accept_ok(const struct clc_accept *acc)
{
	return acc->addr[CLC_TLV_SHM_NAME - 1].len != 0;
}

/*
 * Proposal, accept, confirm, ready. 1 with the accept in hs; 0 with
 * *out saying how the daemon refused; -errno for a local error.
 */
static int hs_run(const struct opts *o, struct peer_hs *hs, struct outcome *out)
{
	const struct peer_hs_opts ho = {
		.connect = &o->connect,
		.mark = o->mark,
		.timeout_ms = o->timeout_ms,
		.psk_file = o->psk_file,
		.transport = CLC_TR_SHM,
		.links = o->links,
		.ring_size = RING_SIZE,
		.accept_ok = shm_accept_ok,
	};
	int rc = peer_hs_run(&ho, hs);

	if (rc == 0)
		outcome_set(out, "%s", hs->outcome);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The shm link group. */

struct grp {
	int sock;			/* rendezvous; its end of file is the group's */
	bool failed;
	unsigned links;
	uint8_t *local;			/* ours: the daemon writes, we read */
	size_t local_size;
	uint8_t *peer;			/* the daemon's: we write */
	size_t peer_size;
	uint32_t ring_base;
	int efd_rx[LINKS_MAX];		/* the daemon rings these */
	int efd_tx[LINKS_MAX];		/* we ring these */
	uint32_t tx_prod[LINKS_MAX];
	uint32_t rx_cons[LINKS_MAX];
};

typedef void (*grp_msg_cb)(void *ctx, unsigned link, const uint8_t slot[LINK_MSG_LEN]);

static uint8_t *queue_of(uint8_t *region, unsigned link)
{
	return (uint8_t *)shm_queue(region, link);
}

static uint32_t *q_index(uint8_t *q, unsigned off)
{
	return (uint32_t *)(void *)(q + off);
}

static void grp_reset(struct grp *g)
{
	unsigned i;

	*g = (struct grp){ .sock = -1 };
	for (i = 0; i < LINKS_MAX; i++)
		g->efd_rx[i] = g->efd_tx[i] = -1;
}

static void grp_close(struct grp *g)
{
	unsigned i;

	if (g->sock >= 0)
		close(g->sock);
	for (i = 0; i < LINKS_MAX; i++) {
		if (g->efd_rx[i] >= 0)
			close(g->efd_rx[i]);
		if (g->efd_tx[i] >= 0)
			close(g->efd_tx[i]);
	}
	if (g->local)
		munmap(g->local, g->local_size);
	if (g->peer)
		munmap(g->peer, g->peer_size);
	grp_reset(g);
}

/* Our region: header, a queue per link, then rings for n_rings flows. */
static int grp_region(struct grp *g, unsigned n_rings, bool hugetlb, int *memfd)
{
	const size_t huge = 2u << 20;
	int fd, err;

	g->ring_base = shm_rmb_base(g->links);
	g->local_size = g->ring_base + (size_t)n_rings * RING_SIZE;
	/* A hugetlbfs memfd is sized in whole huge pages (2 MiB here). */
	if (hugetlb)
		g->local_size = (g->local_size + huge - 1) & ~(huge - 1);
	fd = memfd_create("smcpeer", MFD_CLOEXEC | MFD_ALLOW_SEALING | (hugetlb ? MFD_HUGETLB : 0));
	if (fd < 0)
		return -errno;
	/* Sealed as the daemon demands: it must not fear a SIGBUS from us.
	 * (The hostile part of this tool is in what it writes.) */
	if (ftruncate(fd, (off_t)g->local_size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_errno;
	g->local = mmap(NULL, g->local_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (g->local == MAP_FAILED) {
		g->local = NULL;
		goto out_errno;
	}
	shm_hdr_init((struct shm_hdr *)(void *)g->local, g->links, (uint32_t)g->local_size);
	*memfd = fd;
	return 0;

out_errno:
	err = -errno;
	close(fd);
	return err;
}

/* Up to SOCK_FDS_MAX fds (SCM_MAX_FD): the rv command sends more than a
 * daemon takes. */
static int rv_send_n(int sock, const struct shm_rv_msg *m, const int *fds, unsigned n)
{
	return sock_send_fds(sock, m, sizeof(*m), fds, n, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ?
	       0 : -EIO;
}

static int rv_send(int sock, const struct shm_rv_msg *m, const int *fds, unsigned n)
{
	return rv_send_n(sock, m, fds, n);
}

/* The daemon's answer: the length of the message (0 at end of file),
 * its fds in fds[0..*n_fds), or -errno. */
static ssize_t rv_recv(int sock, struct shm_rv_msg *m, int *fds, unsigned *n_fds,
		       int64_t deadline)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int flags;

	*n_fds = 0;
	if (poll(&pfd, 1, peer_left_ms(deadline)) == 0)
		return -ETIMEDOUT;
	/* Room for more than a daemon may send: the extra ones are closed. */
	return sock_recv_fds(sock, m, sizeof(*m), fds, 1 + LINKS_MAX, 1 + LINKS_MAX + 4, n_fds,
			     &flags, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
}

/*
 * The handshake, then the rendezvous: 1 with g up, 0 with *out saying
 * what the daemon did instead, -errno on a local error.
 */
static int grp_up(const struct opts *o, struct grp *g, unsigned n_rings, struct outcome *out)
{
	int64_t deadline;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct shm_rv_msg m = { .status = 0 };
	struct peer_hs hs;
	struct stat st;
	int fds[1 + LINKS_MAX], memfd = -1, err;
	unsigned i, n_fds;
	ssize_t n;

	grp_close(g);
	err = hs_run(o, &hs, out);
	if (err <= 0)
		return err;
	g->links = hs.acc.links;
	/* The accept names the socket by its path (a daemon of before: by
	 * its name in the shared shm.dir). */
	{
		const struct clc_addr *a = &hs.acc.addr[CLC_TLV_SHM_NAME - 1];
		bool abs = a->len && a->value[0] == '/';

		if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s%s%.*s",
				     abs ? "" : o->shm_dir, abs ? "" : "/", (int)a->len,
				     (const char *)a->value) >= sizeof(sun.sun_path))
			return -ENAMETOOLONG;
	}
	err = grp_region(g, n_rings, o->hugetlb, &memfd);
	if (err)
		goto out_err;
	for (i = 0; i < g->links; i++) {
		g->efd_rx[i] = eventfd(0, o->blocking_efd ? EFD_CLOEXEC : EFD_NONBLOCK | EFD_CLOEXEC);
		if (g->efd_rx[i] < 0) {
			err = -errno;
			goto out_err;
		}
		if (o->blocking_efd) {
			uint64_t max = 0xfffffffffffffffeULL;

			if (write(g->efd_rx[i], &max, sizeof(max)) != sizeof(max)) {
				err = -errno;
				goto out_err;
			}
		}
	}
	g->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->sock < 0 || connect(g->sock, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		peer_say("rendezvous %s: %s", sun.sun_path, strerror(errno));
		goto out_err;
	}
	memcpy(m.magic, SHM_RV_MAGIC, sizeof(m.magic));
	memcpy(m.lgr_id, hs.acc.lgr_id, CLC_LGR_ID_LEN);
	m.links = g->links;
	m.size = (uint32_t)g->local_size;
	/* The group secret's proof, as proxy/transport/shm/shm_rv.c makes it,
	 * unless --rv-no-proof: then a hello with the right group id but
	 * without the secret, as whoever saw the id in clear could send. */
	if (hs.has_secret && !o->rv_no_proof &&
	    clc_secret_tag(hs.secret, "smcproxy shm hello v2 P", (const uint8_t *)&m,
			   offsetof(struct shm_rv_msg, tag), m.tag, CLC_MAC_LEN)) {
		err = -EIO;
		goto out_err;
	}
	fds[0] = memfd;
	for (i = 0; i < g->links; i++)
		fds[1 + i] = g->efd_rx[i];
	err = rv_send(g->sock, &m, fds, 1 + g->links);
	close(memfd);
	memfd = -1;
	if (err) {
		outcome_set(out, "closed");
		return 0;
	}

	deadline = peer_now_ms() + o->timeout_ms;
	n = rv_recv(g->sock, &m, fds, &n_fds, deadline);
	if (n != (ssize_t)sizeof(m) || memcmp(m.magic, SHM_RV_MAGIC, sizeof(m.magic)) ||
	    memcmp(m.lgr_id, hs.acc.lgr_id, CLC_LGR_ID_LEN)) {
		outcome_set(out, "%s", n == -ETIMEDOUT ? "timeout" : n <= 0 ? "closed" : "bad-answer");
		goto out_fds;
	}
	if (m.status) {
		outcome_set(out, "rendezvous-declined %s", clc_decline_name(m.status));
		goto out_fds;
	}
	/* The daemon's region: sized as it says, and the file agrees. */
	if (m.links != g->links || n_fds != 1 + g->links || fstat(fds[0], &st) < 0 ||
	    (uint64_t)st.st_size != m.size || m.size < shm_rmb_base(g->links)) {
		outcome_set(out, "bad-answer");
		goto out_fds;
	}
	g->peer_size = m.size;
	g->peer = mmap(NULL, g->peer_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (g->peer == MAP_FAILED) {
		g->peer = NULL;
		err = -errno;
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		goto out_err;
	}
	close(fds[0]);
	for (i = 0; i < g->links; i++) {
		g->efd_tx[i] = fds[1 + i];
		/* Both queues start at zero (shm_region.c reads ours once). */
		g->tx_prod[i] = __atomic_load_n(q_index(queue_of(g->peer, i), Q_PROD),
						__ATOMIC_ACQUIRE);
		g->rx_cons[i] = 0;
	}
	return 1;

out_fds:
	for (i = 0; i < n_fds; i++)
		close(fds[i]);
	grp_close(g);
	return 0;
out_err:
	if (memfd >= 0)
		close(memfd);
	grp_close(g);
	return err;
}

/* Queues a slot on link l of the daemon's region; the doorbell is
 * separate, as a daemon rings once per batch. */
static int grp_post(struct grp *g, unsigned l, const uint8_t slot[LINK_MSG_LEN])
{
	uint8_t *q = queue_of(g->peer, l);
	uint32_t cons = __atomic_load_n(q_index(q, Q_CONS), __ATOMIC_ACQUIRE);

	if (g->tx_prod[l] - cons >= SHM_SLOTS)
		return -ENOBUFS;	/* the daemon is not consuming */
	memcpy(q + Q_SLOTS + (size_t)(g->tx_prod[l] % SHM_SLOTS) * LINK_MSG_LEN, slot,
	       LINK_MSG_LEN);
	g->tx_prod[l]++;
	__atomic_store_n(q_index(q, Q_PROD), g->tx_prod[l], __ATOMIC_RELEASE);
	return 0;
}

/* The hostile one: a producer index of our choosing, not what we wrote. */
static void grp_set_prod(struct grp *g, unsigned l, uint32_t prod)
{
	__atomic_store_n(q_index(queue_of(g->peer, l), Q_PROD), prod, __ATOMIC_RELEASE);
}

static void grp_ring(struct grp *g, unsigned l)
{
	uint64_t one = 1;

	if (write(g->efd_tx[l], &one, sizeof(one)) < 0 && errno != EAGAIN)
		peer_say("doorbell: %s", strerror(errno));
}

/* Takes what the daemon queued for us; a daemon that lies about its
 * producer index is reported and not followed. */
static void grp_drain(struct grp *g, grp_msg_cb cb, void *ctx)
{
	uint8_t slot[LINK_MSG_LEN];
	unsigned l;

	for (l = 0; l < g->links; l++) {
		uint8_t *q = queue_of(g->local, l);
		uint32_t prod = __atomic_load_n(q_index(q, Q_PROD), __ATOMIC_ACQUIRE);
		bool took = false;

		if (prod - g->rx_cons[l] > SHM_SLOTS) {
			peer_say("link %u: the daemon's producer index %" PRIu32 " is %" PRIu32
			      " slots ahead", l, prod, prod - g->rx_cons[l]);
			continue;
		}
		while (g->rx_cons[l] != prod) {
			memcpy(slot, q + Q_SLOTS + (size_t)(g->rx_cons[l] % SHM_SLOTS) * LINK_MSG_LEN,
			       sizeof(slot));
			g->rx_cons[l]++;
			took = true;
			cb(ctx, l, slot);
		}
		if (took)
			__atomic_store_n(q_index(q, Q_CONS), g->rx_cons[l], __ATOMIC_SEQ_CST);
		if (__atomic_exchange_n(q_index(q, Q_WAITING), 0, __ATOMIC_SEQ_CST))
			grp_ring(g, l);
	}
}

/*
 * Waits for doorbells or the end of the group until done(ctx) or the
 * deadline; every message goes to cb. Sets g->failed at end of file on the
 * rendezvous socket (the daemon tore the group down).
 */
static void grp_wait(struct grp *g, int64_t deadline, grp_msg_cb cb, bool (*done)(void *),
		     void *ctx)
{
	struct pollfd pfd[1 + LINKS_MAX];
	unsigned i, n = 0;

	pfd[n++] = (struct pollfd){ .fd = g->sock, .events = POLLIN | POLLRDHUP };
	for (i = 0; i < g->links; i++)
		pfd[n++] = (struct pollfd){ .fd = g->efd_rx[i], .events = POLLIN };
	for (;;) {
		grp_drain(g, cb, ctx);
		if (done(ctx))
			return;
		if (poll(pfd, n, peer_left_ms(deadline)) <= 0)
			return;
		for (i = 1; i < n; i++) {
			uint64_t v;

			if (pfd[i].revents && read(pfd[i].fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				peer_say("eventfd: %s", strerror(errno));
		}
		if (pfd[0].revents) {
			char c;
			ssize_t r = recv(g->sock, &c, 1, MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				grp_drain(g, cb, ctx);	/* what came before the end */
				g->failed = true;
				return;
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* propose */

enum answer_state { ANS_PENDING, ANS_ACCEPT, ANS_DECLINE };

struct answers {
	unsigned n;
	unsigned pending;
	struct {
		enum answer_state state;
		uint32_t peer_token;
		unsigned reason;
		unsigned link;
	} a[OPENS_MAX];
};

static void answers_on_msg(void *ctx, unsigned link, const uint8_t slot[LINK_MSG_LEN])
{
	struct answers *ans = ctx;
	struct llc_msg m;
	uint32_t token = 0, i;
	char what[64];

	if (!llc_decode(slot, LINK_MSG_LEN, &m) &&
	    (m.type == LLC_FLOW_ACCEPT || m.type == LLC_FLOW_DECLINE))
		token = m.type == LLC_FLOW_ACCEPT ? m.accept.token : m.decline.token;
	i = (token & 0xffff) - 1;
	if ((token & 0xffff0000) != OPEN_TOKEN || i >= ans->n || ans->a[i].state != ANS_PENDING) {
		/* The daemon's CDCs for accepted flows, or anything else. */
		peer_describe_slot(slot, LINK_MSG_LEN, what, sizeof(what));
		peer_say("link %u: %s", link, what);
		return;
	}
	if (m.type == LLC_FLOW_ACCEPT) {
		ans->a[i].state = ANS_ACCEPT;
		ans->a[i].peer_token = m.accept.peer_token;
	} else {
		ans->a[i].state = ANS_DECLINE;
		ans->a[i].reason = m.decline.reason;
	}
	ans->pending--;
}

static bool answers_done(void *ctx)
{
	return ((struct answers *)ctx)->pending == 0;
}

static void ignore_msg(void *ctx, unsigned link, const uint8_t slot[LINK_MSG_LEN])
{
}

static bool never_done(void *ctx)
{
	return false;
}

/* The daemon's resident shared memory, from /proc/PID/status; -1 if unknown. */
static long rss_shmem_kib(int pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssShmem: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/*
 * propose --scribble PID: a byte into every page of the daemon's ring
 * area, none of it a ring assigned to us, as a hostile peer that wants
 * the host to commit memory the daemon does not count. Prints "region
 * SIZE rings BYTES resident BYTES daemon_rss_shmem KIB0 KIB1": the
 * region's size as the daemon made it, its ring area, the bytes of the
 * region the host now holds (mincore), and the daemon's RssShmem before
 * and after. The group stays up meanwhile.
 */
static void scribble(struct grp *g, int pid)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n_pages, off, resident = 0;
	long before = rss_shmem_kib(pid), after;
	unsigned char *vec;

	for (off = g->ring_base; off < g->peer_size; off += page)
		__atomic_store_n(g->peer + off, 0xa5, __ATOMIC_RELAXED);
	n_pages = (g->peer_size + page - 1) / page;
	vec = calloc(n_pages, 1);
	if (vec && !mincore(g->peer, g->peer_size, vec))
		for (off = 0; off < n_pages; off++)
			resident += vec[off] & 1;
	free(vec);
	after = rss_shmem_kib(pid);
	printf("region %zu rings %zu resident %zu daemon_rss_shmem %ld %ld\n", g->peer_size,
	       g->peer_size - g->ring_base, resident * page, before, after);
	fflush(stdout);
}

static int cmd_propose(const struct opts *o)
{
	static struct answers ans;
	struct outcome out;
	struct grp g;
	uint8_t slot[LINK_MSG_LEN];
	unsigned i;
	int err;

	grp_reset(&g);
	err = grp_up(o, &g, o->n_opens ? o->n_opens : 1, &out);
	if (err < 0)
		return 1;
	if (err == 0) {
		printf("%s\n", out.text);
		return 0;
	}
	if (!o->n_opens)
		printf("established\n");
	if (o->scribble_pid)
		scribble(&g, o->scribble_pid);
	ans.n = ans.pending = o->n_opens;
	for (i = 0; i < o->n_opens; i++) {
		ans.a[i].link = i % g.links;
		peer_flow_open_slot(slot, OPEN_TOKEN | (i + 1),
				    &(struct llc_rmb){ .offset = g.ring_base + i * RING_SIZE,
						       .size = RING_SIZE },
				    &o->opens[i]);
		if (grp_post(&g, ans.a[i].link, slot)) {
			peer_say("the daemon's queue of link %u is full", ans.a[i].link);
			grp_close(&g);
			return 1;
		}
	}
	for (i = 0; i < g.links && i < o->n_opens; i++)
		grp_ring(&g, i);
	grp_wait(&g, peer_now_ms() + o->timeout_ms, answers_on_msg, answers_done, &ans);
	for (i = 0; i < o->n_opens; i++) {
		switch (ans.a[i].state) {
		case ANS_ACCEPT:
			printf("accept 0x%08" PRIx32 "\n", ans.a[i].peer_token);
			break;
		case ANS_DECLINE:
			printf("decline %s\n", clc_decline_name(ans.a[i].reason));
			break;
		default:
			printf("%s\n", g.failed ? "closed" : "timeout");
			break;
		}
	}
	fflush(stdout);
	/* Accepted flows end with an abort, as an application's reset would:
	 * the daemon closes its side to the destination at once. */
	if (!g.failed) {
		bool any = false;

		for (i = 0; i < o->n_opens; i++) {
			struct cdc_msg c = { .token = ans.a[i].peer_token,
					     .conn_flags = CDC_CF_ABORT };

			if (ans.a[i].state != ANS_ACCEPT)
				continue;
			cdc_encode(&c, slot);
			if (!grp_post(&g, ans.a[i].link, slot))
				any = true;
		}
		if (any) {
			for (i = 0; i < g.links; i++)
				grp_ring(&g, i);
			grp_wait(&g, peer_now_ms() + 50, ignore_msg, never_done, NULL);
		}
	}
	grp_close(&g);
	return 0;
}

/* ------------------------------------------------------------------ */
/* serve */

/* The accepted connection's ends, the daemon's (the proposer) first. */
static int serve_endpoints(int fd, struct clc_endpoints *ep)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	if (getpeername(fd, (struct sockaddr *)&a, &la) < 0 ||
	    getsockname(fd, (struct sockaddr *)&b, &lb) < 0)
		return -errno;
	if (clc_endpoint_put((struct sockaddr *)&a, ep->client) ||
	    clc_endpoint_put((struct sockaddr *)&b, ep->server))
		return -EAFNOSUPPORT;
	return 0;
}

/* What an attacker on the path changes in a proven accept. */
static int serve_tamper(const char *field, struct clc_accept *a)
{
	if (!field)
		return 0;
	if (!strcmp(field, "features"))
		a->features ^= CLC_FEAT_RING_MOVE;
	else if (!strcmp(field, "ring_size"))
		a->ring_size = a->ring_size > RMB_MIN_SIZE ? a->ring_size / 2 : a->ring_size * 2;
	else if (!strcmp(field, "links"))
		a->links = a->links > 1 ? (uint16_t)(a->links - 1) : a->links;
	else if (!strcmp(field, "addr"))
		memcpy(a->addr[CLC_TLV_SHM_NAME - 1].value, "evil", 4);
	else
		return -EINVAL;
	return 0;
}

static int cmd_serve(const struct opts *o)
{
	int64_t deadline = peer_now_ms() + o->timeout_ms;
	uint8_t psk[CLC_PSK_MAX], buf[CLC_MSG_MAX];
	struct clc_endpoints ep;
	struct clc_msg m, acc = { .hdr.type = CLC_ACCEPT };
	struct clc_accept *a = &acc.accept;
	struct pollfd pfd;
	size_t psk_len;
	int lfd, fd, one = 1, err, n;

	if (clc_psk_load(o->psk_file, psk, &psk_len)) {
		peer_say("cannot read the secret %s", o->psk_file);
		return 1;
	}
	lfd = socket(o->listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (const struct sockaddr *)&o->listen.ss, o->listen.len) < 0 ||
	    listen(lfd, 4) < 0) {
		peer_say("listen: %s", strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	if (poll(&pfd, 1, peer_left_ms(deadline)) <= 0) {
		printf("timeout\n");
		return 0;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (fd < 0 || serve_endpoints(fd, &ep)) {
		peer_say("accept: %s", strerror(errno));
		return 1;
	}
	err = peer_clc_recv(fd, &m, deadline);
	if (err || m.hdr.type != CLC_PROPOSAL || !(m.proposal.transports & CLC_TR_SHM)) {
		printf("no proposal of shm (%s)\n", err ? strerror(-err) : "another message");
		close(fd);
		return 0;
	}
	a->features = CLC_FEAT_PSK | (m.proposal.features & CLC_FEAT_RING_MOVE);
	a->transport = CLC_TR_SHM;
	memcpy(a->host_id, m.proposal.host_id, CLC_HOST_ID_LEN);
	a->ring_size = m.proposal.ring_size;
	a->links = m.proposal.links;
	a->max_flows_per_link = m.proposal.max_flows_per_link;
	if (getrandom(a->nonce, sizeof(a->nonce), 0) != sizeof(a->nonce) ||
	    getrandom(a->lgr_id, sizeof(a->lgr_id), 0) != sizeof(a->lgr_id))
		return 1;
	memcpy(a->addr[CLC_TLV_SHM_NAME - 1].value, "smcpeer.sock", 12);
	a->addr[CLC_TLV_SHM_NAME - 1].len = 12;
	if (clc_mac_accept(psk, psk_len, &ep, &m.proposal, a, a->mac) ||
	    serve_tamper(o->tamper, a)) {
		peer_say("cannot prove or tamper the accept");
		return 1;
	}
	n = clc_encode(&acc, buf, sizeof(buf));
	if (n < 0 || peer_send_all(fd, buf, (size_t)n, deadline)) {
		printf("closed\n");
		close(fd);
		return 0;
	}
	err = peer_clc_recv(fd, &m, deadline);
	if (err == -ETIMEDOUT)
		printf("timeout\n");
	else if (err)
		printf("closed\n");
	else if (m.hdr.type == CLC_CONFIRM)
		printf("confirm\n");
	else if (m.hdr.type == CLC_DECLINE)
		printf("decline %s\n", clc_decline_name(m.decline.reason));
	else
		printf("other\n");
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* opens */

struct scan {
	unsigned accept, decline;
	unsigned want;			/* answers to wait for at the end */
	unsigned seen;			/* answers when the wait began */
};

static void scan_on_msg(void *ctx, unsigned link, const uint8_t slot[LINK_MSG_LEN])
{
	struct scan *sc = ctx;
	struct llc_msg m;

	if (llc_decode(slot, LINK_MSG_LEN, &m))
		return;
	if (m.type == LLC_FLOW_ACCEPT)
		sc->accept++;
	else if (m.type == LLC_FLOW_DECLINE)
		sc->decline++;
}

static bool scan_answered(void *ctx)
{
	const struct scan *sc = ctx;

	return sc->accept + sc->decline != sc->seen;
}

static bool scan_done(void *ctx)
{
	const struct scan *sc = ctx;

	return sc->accept + sc->decline >= sc->want;
}

/* dest + i: the address i after dest's. */
static void scan_dest(const struct cfg_addr *dest, unsigned i, struct cfg_addr *out)
{
	uint32_t a;

	*out = *dest;
	if (out->ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;

		sin->sin_addr.s_addr = htonl(ntohl(sin->sin_addr.s_addr) + i);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;

		memcpy(&a, &sin6->sin6_addr.s6_addr[12], 4);
		a = htonl(ntohl(a) + i);
		memcpy(&sin6->sin6_addr.s6_addr[12], &a, 4);
	}
}

static int cmd_opens(const struct opts *o)
{
	struct scan sc = { 0 };
	struct outcome out;
	struct grp g;
	uint8_t slot[LINK_MSG_LEN];
	struct cfg_addr d;
	unsigned sent = 0, l;
	int64_t deadline;
	int err;

	grp_reset(&g);
	err = grp_up(o, &g, 1, &out);
	if (err < 0)
		return 1;
	if (err == 0) {
		printf("%s\n", out.text);
		return 0;
	}
	deadline = peer_now_ms() + o->timeout_ms;
	while (sent < o->count && !g.failed && peer_now_ms() < deadline) {
		scan_dest(&o->opens[0], sent, &d);
		peer_flow_open_slot(slot, SCAN_TOKEN + sent,
				    &(struct llc_rmb){ .offset = g.ring_base, .size = RING_SIZE }, &d);
		if (grp_post(&g, sent % g.links, slot)) {
			/* Full: the daemon takes them as it answers. */
			for (l = 0; l < g.links; l++)
				grp_ring(&g, l);
			sc.seen = sc.accept + sc.decline;
			grp_wait(&g, peer_now_ms() + 20, scan_on_msg, scan_answered, &sc);
			continue;
		}
		sent++;
		grp_drain(&g, scan_on_msg, &sc);
		if (sent % 64 == 0)
			for (l = 0; l < g.links; l++)
				grp_ring(&g, l);
	}
	for (l = 0; l < g.links; l++)
		grp_ring(&g, l);
	sc.want = sent;
	if (!g.failed)
		grp_wait(&g, peer_now_ms() + 1000, scan_on_msg, scan_done, &sc);
	if (!g.failed) {
		/* Whether the daemon still holds the group: its end of file
		 * comes at once once it failed it. */
		sc.want = ~0u;
		grp_wait(&g, peer_now_ms() + 200, scan_on_msg, scan_done, &sc);
	}
	printf("opens sent %u accept %u decline %u %s\n", sent, sc.accept, sc.decline,
	       g.failed ? "closed" : "open");
	grp_close(&g);
	return 0;
}

/* ------------------------------------------------------------------ */
/* links */

struct probe {
	uint32_t sync;			/* the marker's token */
	bool synced;
	char msgs[512];			/* answers to anything but the marker */
	size_t len;
};

static void probe_on_msg(void *ctx, unsigned link, const uint8_t slot[LINK_MSG_LEN])
{
	struct probe *pr = ctx;
	struct llc_msg m;
	char what[64];

	if (!llc_decode(slot, LINK_MSG_LEN, &m) && m.type == LLC_FLOW_DECLINE &&
	    m.decline.token == pr->sync) {
		pr->synced = true;
		if (m.decline.reason != CLC_DECL_POLICY)
			peer_say("the marker 127.0.0.1:1 was declined with %s, not policy",
			      clc_decline_name(m.decline.reason));
		return;
	}
	peer_describe_slot(slot, LINK_MSG_LEN, what, sizeof(what));
	if (pr->len < sizeof(pr->msgs))
		pr->len += (size_t)snprintf(pr->msgs + pr->len, sizeof(pr->msgs) - pr->len,
					    "%s%s", pr->len ? ", " : "", what);
}

static bool probe_done(void *ctx)
{
	return ((struct probe *)ctx)->synced;
}

/* Queues the marker: a FLOW_OPEN every daemon must decline at once. */
static int post_sync(struct grp *g, struct probe *pr, uint32_t n)
{
	struct cfg_addr lo = { .len = sizeof(struct sockaddr_in) };
	struct sockaddr_in *sin = (struct sockaddr_in *)&lo.ss;
	uint8_t slot[LINK_MSG_LEN];

	sin->sin_family = AF_INET;
	sin->sin_port = htons(1);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*pr = (struct probe){ .sync = SYNC_TOKEN | (n & 0xffff) };
	peer_flow_open_slot(slot, pr->sync,
				    &(struct llc_rmb){ .offset = g->ring_base, .size = RING_SIZE },
				    &lo);
	return grp_post(g, 0, slot);
}

static void print_probe(const char *name, const struct grp *g, const struct probe *pr)
{
	printf("%s: %s%s%s%s\n", name, g->failed ? "failed" : pr->synced ? "alive" : "timeout",
	       pr->len ? " (" : "", pr->msgs, pr->len ? ")" : "");
	fflush(stdout);
}

/* A live group in g, made anew if the last one failed. */
static int ensure_up(const struct opts *o, struct grp *g)
{
	struct outcome out;
	int err;

	if (g->sock >= 0 && !g->failed)
		return 0;
	if (g->failed) {
		uint64_t one = 1;
		unsigned i, k;

		/* Regression: the daemon closed its doorbells of a failed
		 * group without taking them out of its epoll set; we still
		 * hold them, so our rings reached freed memory. Ring the dead
		 * group's doorbells: the daemon must not notice. */
		for (k = 0; k < 3; k++) {
			for (i = 0; i < LINKS_MAX; i++)
				if (g->efd_tx[i] >= 0 && write(g->efd_tx[i], &one, sizeof(one)) < 0)
					peer_say("doorbell of the failed group: %s", strerror(errno));
			usleep(20000);
		}
	}
	err = grp_up(o, g, 1, &out);
	if (err > 0)
		return 0;
	if (err == 0)
		peer_say("no link group: %s", out.text);
	return -1;
}

static int cmd_links(const struct opts *o)
{
	struct probe pr;
	struct grp g;
	uint8_t buf[FILE_MAX + 1], slot[LINK_MSG_LEN];
	uint32_t n_sync = 0;
	int i, rc = 0;

	grp_reset(&g);
	for (i = 0; i < o->n_files; i++) {
		const char *name = peer_base_name(o->files[i]);
		size_t len = 0, off;
		FILE *f = fopen(o->files[i], "rb");

		if (!f) {
			peer_say("%s: %s", o->files[i], strerror(errno));
			rc = 1;
			continue;
		}
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (len > FILE_MAX) {
			peer_say("%s: longer than %d slots", o->files[i], FILE_MAX / LINK_MSG_LEN);
			rc = 1;
			continue;
		}
		if (ensure_up(o, &g))
			goto out_fail;
		off = 0;
		do {
			size_t n = len - off < LINK_MSG_LEN ? len - off : LINK_MSG_LEN;

			memset(slot, 0, sizeof(slot));
			memcpy(slot, buf + off, n);
			if (grp_post(&g, 0, slot))
				goto out_full;
			off += n;
		} while (off < len);
		if (post_sync(&g, &pr, ++n_sync))
			goto out_full;
		grp_ring(&g, 0);
		grp_wait(&g, peer_now_ms() + o->timeout_ms, probe_on_msg, probe_done, &pr);
		print_probe(name, &g, &pr);
	}

	/* A producer index far beyond the queue: the daemon must not read
	 * slots that are not there, nor trust the count. */
	if (ensure_up(o, &g))
		goto out_fail;
	grp_set_prod(&g, 0, g.tx_prod[0] + SHM_SLOTS * 1000);
	grp_ring(&g, 0);
	pr = (struct probe){ .sync = 0 };
	grp_wait(&g, peer_now_ms() + o->timeout_ms, probe_on_msg, never_done, &pr);
	print_probe("prod-far", &g, &pr);

	/* One behind what the daemon already consumed: as far as unsigned
	 * arithmetic goes, 2^32 - 1 new slots. */
	if (ensure_up(o, &g) || post_sync(&g, &pr, ++n_sync))
		goto out_fail;
	grp_ring(&g, 0);
	grp_wait(&g, peer_now_ms() + o->timeout_ms, probe_on_msg, probe_done, &pr);
	if (!pr.synced)
		goto out_fail;
	grp_set_prod(&g, 0, g.tx_prod[0] - 1);
	grp_ring(&g, 0);
	pr = (struct probe){ .sync = 0 };
	grp_wait(&g, peer_now_ms() + o->timeout_ms, probe_on_msg, never_done, &pr);
	print_probe("prod-back", &g, &pr);

	/* Our queue's consumer index claims a billion slots taken: the
	 * daemon must see no room (not write over slots we did not read),
	 * then answer once we tell the truth. */
	if (ensure_up(o, &g))
		goto out_fail;
	__atomic_store_n(q_index(queue_of(g.local, 0), Q_CONS), g.rx_cons[0] + 0x40000000u,
			 __ATOMIC_SEQ_CST);
	if (post_sync(&g, &pr, ++n_sync))
		goto out_full;
	grp_ring(&g, 0);
	grp_wait(&g, peer_now_ms() + o->timeout_ms / 4, probe_on_msg, probe_done, &pr);
	if (g.failed || pr.synced) {
		printf("cons-lie: %s\n", g.failed ? "failed" : "answered at once");
	} else {
		__atomic_store_n(q_index(queue_of(g.local, 0), Q_CONS), g.rx_cons[0],
				 __ATOMIC_SEQ_CST);
		grp_ring(&g, 0);
		grp_wait(&g, peer_now_ms() + o->timeout_ms, probe_on_msg, probe_done, &pr);
		printf("cons-lie: stalled then %s\n",
		       g.failed ? "failed" : pr.synced ? "answered" : "silent");
	}
	grp_close(&g);
	return rc;

out_full:
	peer_say("the daemon's queue of link 0 is full");
out_fail:
	grp_close(&g);
	return 1;
}

/* ------------------------------------------------------------------ */
/* raw */

/* Appends ", what" to a line that stays NUL-terminated when full. */
static void said_add(char *said, size_t size, const char *what)
{
	size_t len = strlen(said);

	snprintf(said + len, size - len, "%s%s", len ? ", " : "", what);
}

/* Sends one file's bytes on a fresh connection and says what came back. */
static int raw_one(const struct opts *o, const char *path)
{
	int64_t deadline = peer_now_ms() + o->timeout_ms;
	const char *name = peer_base_name(path);
	uint8_t out[8192], in[4 * CLC_MSG_MAX];
	char said[256] = "", tmp[48];
	size_t len, have = 0;
	bool declined = false, eof = false, reset = false, flood = false;
	struct pollfd pfd;
	FILE *f;
	int fd, err;

	f = fopen(path, "rb");
	if (!f) {
		peer_say("%s: %s", path, strerror(errno));
		return 1;
	}
	len = fread(out, 1, sizeof(out), f);
	fclose(f);
	fd = peer_tcp_connect(&o->connect, o->mark, deadline);
	if (fd < 0) {
		printf("%s: connect: %s\n", name, strerror(-fd));
		return 1;
	}
	/* The daemon may decline and close before it read everything. */
	err = peer_send_all(fd, out, len, deadline);
	if (err && err != -EPIPE && err != -ECONNRESET) {
		printf("%s: send: %s\n", name, strerror(-err));
		close(fd);
		return 1;
	}
	if (o->half_close)
		shutdown(fd, SHUT_WR);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (!eof && !reset && !flood) {
		ssize_t n = recv(fd, in + have, sizeof(in) - have, MSG_DONTWAIT);

		if (n == 0) {
			eof = true;
		} else if (n < 0 && errno == ECONNRESET) {
			reset = true;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			printf("%s: recv: %s\n", name, strerror(errno));
			close(fd);
			return 1;
		} else if (n < 0) {
			if (poll(&pfd, 1, peer_left_ms(deadline)) == 0)
				break;
			continue;
		} else {
			have += (size_t)n;
		}
		/* Whole messages, judged as a proposer would. */
		for (;;) {
			struct clc_hdr hdr;
			struct clc_msg m;
			int h = clc_decode_hdr(in, have, &hdr);

			if (h == -EAGAIN || (!h && hdr.length > have))
				break;
			if (h || clc_decode(in, hdr.length, &m)) {
				said_add(said, sizeof(said), "garbage");
				have = 0;
				continue;
			}
			memmove(in, in + hdr.length, have - hdr.length);
			have -= hdr.length;
			switch (m.hdr.type) {
			case CLC_DECLINE:
				snprintf(tmp, sizeof(tmp), "decline %s",
					 clc_decline_name(m.decline.reason));
				said_add(said, sizeof(said), tmp);
				declined = true;
				break;
			case CLC_ACCEPT:
				said_add(said, sizeof(said), "accept");
				break;
			case CLC_CONFIRM:
				said_add(said, sizeof(said), "confirm");
				break;
			default:
				said_add(said, sizeof(said), "proposal");
				break;
			}
		}
		if (have == sizeof(in))
			flood = true;
	}
	if (flood)
		said_add(said, sizeof(said), "flood");
	else if (reset)
		said_add(said, sizeof(said), "reset");
	else if (eof && !declined)
		said_add(said, sizeof(said), "closed");
	else if (!eof)
		said_add(said, sizeof(said), declined ? "not closed" : "timeout");
	printf("%s: %s\n", name, said);
	close(fd);
	return 0;
}

static int cmd_raw(const struct opts *o)
{
	int i, rc = 0;

	for (i = 0; i < o->n_files; i++)
		rc |= raw_one(o, o->files[i]);
	return rc;
}

/* ------------------------------------------------------------------ */
/* rv: the rendezvous sockets, without a handshake. */


static int rv_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int cmd_rv(const struct opts *o)
{
	char pattern[4096];
	glob_t gl;
	unsigned n = 0, closed = 0, refused = 0, i, k;
	size_t p;
	int *fds = NULL, nfd = 0, null_fd = -1, rc = 1;

	snprintf(pattern, sizeof(pattern), "%s/smcproxyd-*.sock", o->shm_dir);
	if (glob(pattern, 0, NULL, &gl) != 0) {
		peer_say("no rendezvous socket matches %s", pattern);
		return 1;
	}
	fds = calloc((size_t)o->count * gl.gl_pathc, sizeof(*fds));
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!fds || null_fd < 0)
		goto out;
	for (p = 0; p < gl.gl_pathc; p++) {
		for (i = 0; i < o->count; i++) {
			int fd = rv_connect(gl.gl_pathv[p]);

			if (fd < 0) {
				peer_say("connect %s: %s", gl.gl_pathv[p], strerror(-fd));
				goto out;
			}
			if (o->rv_fds) {
				struct shm_rv_msg m = { .links = 1, .size = 0 };
				int extra[253];

				memcpy(m.magic, SHM_RV_MAGIC, sizeof(m.magic));
				memset(m.lgr_id, 0xa5, sizeof(m.lgr_id));
				for (k = 0; k < o->rv_fds && k < 253; k++)
					extra[k] = null_fd;
				if (rv_send_n(fd, &m, extra, k))
					refused++;
				close(fd);
				n++;
				continue;
			}
			fds[nfd++] = fd;
			n++;
		}
	}
	if (o->rv_fds) {
		printf("sent %u\n", n - refused);
		rc = 0;
		goto out;
	}
	/* Silent: who does the daemon close while we hold? */
	{
		int64_t deadline = peer_now_ms() + o->hold_ms;
		bool *gone = calloc((size_t)nfd + 1, sizeof(*gone));

		if (!gone)
			goto out;
		while (peer_now_ms() < deadline && closed < (unsigned)nfd) {
			for (k = 0; k < (unsigned)nfd; k++) {
				struct pollfd pfd = { .fd = fds[k], .events = POLLIN };

				if (gone[k] || poll(&pfd, 1, 0) != 1)
					continue;
				gone[k] = true;
				closed++;
			}
			usleep(20000);
		}
		free(gone);
	}
	printf("held %u closed-by-daemon %u refused %u\n", n, closed, refused);
	rc = 0;
out:
	for (k = 0; k < (unsigned)nfd; k++)
		close(fds[k]);
	free(fds);
	if (null_fd >= 0)
		close(null_fd);
	globfree(&gl);
	return rc;
}

/* ------------------------------------------------------------------ */
/* flood: many handshakes at once, none finished. */

static int cmd_flood(const struct opts *o)
{
	struct clc_msg m = { .hdr.type = CLC_PROPOSAL };
	unsigned n[7] = { 0 };	/* accept policy max_flows timeout other closed none */
	uint8_t buf[CLC_MSG_MAX];
	int *fds, len, rc = 1;
	unsigned i;

	fds = calloc(o->count, sizeof(*fds));
	if (!fds)
		return 1;
	m.proposal.features = CLC_FEAT_PSK;	/* claimed, with a zero MAC */
	m.proposal.transports = CLC_TR_SHM;
	m.proposal.ring_size = RING_SIZE;
	m.proposal.links = 1;
	m.proposal.max_flows_per_link = 255;
	len = clc_encode(&m, buf, sizeof(buf));
	if (len < 0)
		goto out;
	for (i = 0; i < o->count; i++) {
		fds[i] = peer_tcp_connect(&o->connect, o->mark, peer_now_ms() + 2000);
		if (fds[i] < 0) {
			peer_say("connect %u: %s", i, strerror(-fds[i]));
			break;
		}
		if (!o->silent && peer_send_all(fds[i], buf, (size_t)len, peer_now_ms() + 2000)) {
			n[5]++;
			close(fds[i]);
			fds[i] = -1;
		}
	}
	usleep((useconds_t)o->hold_ms * 1000);
	for (unsigned k = 0; k < i; k++) {
		struct clc_msg r;
		uint8_t in[CLC_MSG_MAX];
		ssize_t got;

		if (fds[k] < 0)
			continue;
		got = recv(fds[k], in, sizeof(in), MSG_DONTWAIT);
		if (got < 0 && errno == EAGAIN)
			n[6]++;
		else if (got <= 0)
			n[5]++;
		else if (clc_decode(in, (size_t)got < CLC_HDR_LEN ? (size_t)got :
				    (size_t)((in[6] << 8 | in[7]) <= got ? (in[6] << 8 | in[7]) : got),
				    &r))
			n[4]++;
		else if (r.hdr.type == CLC_ACCEPT)
			n[0]++;
		else if (r.hdr.type == CLC_DECLINE && r.decline.reason == CLC_DECL_POLICY)
			n[1]++;
		else if (r.hdr.type == CLC_DECLINE && r.decline.reason == CLC_DECL_MAX_FLOWS)
			n[2]++;
		else if (r.hdr.type == CLC_DECLINE && r.decline.reason == CLC_DECL_TIMEOUT)
			n[3]++;
		else
			n[4]++;
		close(fds[k]);
	}
	printf("accept %u policy %u max_flows %u timeout %u other %u closed %u none %u\n",
	       n[0], n[1], n[2], n[3], n[4], n[5], n[6]);
	rc = 0;
out:
	free(fds);
	return rc;
}

/* ------------------------------------------------------------------ */

void peer_usage(void)
{
	fprintf(stderr,
		"usage: smcpeer propose --connect ADDR:PORT [--psk FILE] [--shm-dir DIR] [--links N]\n"
		"                       [--open DEST:PORT]... [--mark N] [--timeout MS] [--scribble PID]\n"
		"       smcpeer raw     --connect ADDR:PORT [--mark N] [--timeout MS] [--half-close] FILE...\n"
		"       smcpeer links   --connect ADDR:PORT --shm-dir DIR [--psk FILE] [--mark N]\n"
		"                       [--timeout MS] FILE...\n"
		"       smcpeer rv      --shm-dir DIR [--count N] [--fds K] [--hold MS]\n"
		"       smcpeer flood   --connect ADDR:PORT [--count N] [--silent] [--hold MS]\n"
		"       smcpeer opens   --connect ADDR:PORT --open DEST:PORT [--count N] [--timeout MS]\n"
		"       smcpeer serve   --listen ADDR:PORT --psk FILE [--tamper FIELD] [--timeout MS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct opts o = { .links = 1, .shm_dir = "/run/smcproxy" };
	const char *cmd;
	int i;

	if (argc < 2)
		peer_usage();
	cmd = argv[1];
	if (strcmp(cmd, "propose") && strcmp(cmd, "raw") && strcmp(cmd, "links") &&
	    strcmp(cmd, "rv") && strcmp(cmd, "flood") && strcmp(cmd, "opens") &&
	    strcmp(cmd, "serve"))
		peer_usage();
	o.count = 1;
	o.timeout_ms = strcmp(cmd, "raw") ? 1000 : 300;
	o.files = calloc((size_t)argc, sizeof(*o.files));
	if (!o.files)
		return 1;
	for (i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--connect")) {
			peer_parse_addr(peer_arg_value(&i, argc, argv), &o.connect);
			o.have_connect = true;
		} else if (!strcmp(a, "--psk")) {
			o.psk_file = peer_arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--shm-dir")) {
			o.shm_dir = peer_arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--links")) {
			o.links = (unsigned)peer_parse_num(peer_arg_value(&i, argc, argv), LINKS_MAX);
			if (!o.links)
				peer_usage();
		} else if (!strcmp(a, "--open")) {
			if (o.n_opens == OPENS_MAX) {
				peer_say("at most %d --open", OPENS_MAX);
				peer_usage();
			}
			peer_parse_addr(peer_arg_value(&i, argc, argv), &o.opens[o.n_opens++]);
		} else if (!strcmp(a, "--mark")) {
			o.mark = (uint32_t)peer_parse_num(peer_arg_value(&i, argc, argv), UINT32_MAX);
		} else if (!strcmp(a, "--timeout")) {
			o.timeout_ms = (int)peer_parse_num(peer_arg_value(&i, argc, argv), 600000);
		} else if (!strcmp(a, "--blocking-efd")) {
			o.blocking_efd = true;
		} else if (!strcmp(a, "--hugetlb")) {
			o.hugetlb = true;
		} else if (!strcmp(a, "--listen")) {
			peer_parse_addr(peer_arg_value(&i, argc, argv), &o.listen);
			o.have_listen = true;
		} else if (!strcmp(a, "--tamper")) {
			o.tamper = peer_arg_value(&i, argc, argv);
		} else if (!strcmp(a, "--count")) {
			o.count = (unsigned)peer_parse_num(peer_arg_value(&i, argc, argv), 100000);
		} else if (!strcmp(a, "--fds")) {
			o.rv_fds = (unsigned)peer_parse_num(peer_arg_value(&i, argc, argv), 253);
		} else if (!strcmp(a, "--hold")) {
			o.hold_ms = (int)peer_parse_num(peer_arg_value(&i, argc, argv), 600000);
		} else if (!strcmp(a, "--scribble")) {
			o.scribble_pid = (int)peer_parse_num(peer_arg_value(&i, argc, argv), INT32_MAX);
		} else if (!strcmp(a, "--rv-no-proof")) {
			o.rv_no_proof = true;
		} else if (!strcmp(a, "--silent")) {
			o.silent = true;
		} else if (!strcmp(a, "--half-close")) {
			o.half_close = true;
		} else if (a[0] == '-' && a[1]) {
			peer_say("unknown option %s", a);
			peer_usage();
		} else {
			o.files[o.n_files++] = argv[i];
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "rv"))
		return o.n_files || (!o.rv_fds && !o.hold_ms) ? (peer_usage(), 2) : cmd_rv(&o);
	if (!strcmp(cmd, "serve"))
		return o.n_files || !o.have_listen || !o.psk_file ? (peer_usage(), 2) : cmd_serve(&o);
	if (!o.have_connect)
		peer_usage();
	if (!strcmp(cmd, "flood")) {
		if (!o.hold_ms)
			o.hold_ms = 1000;
		return o.n_files ? (peer_usage(), 2) : cmd_flood(&o);
	}
	if (!strcmp(cmd, "propose"))
		return o.n_files ? (peer_usage(), 2) : cmd_propose(&o);
	if (!strcmp(cmd, "opens"))
		return o.n_files || o.n_opens != 1 ? (peer_usage(), 2) : cmd_opens(&o);
	if (!o.n_files)
		peer_usage();
	return !strcmp(cmd, "raw") ? cmd_raw(&o) : cmd_links(&o);
}
