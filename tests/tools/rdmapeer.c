/* SPDX-License-Identifier: MIT */
/*
 * rdmapeer: a deliberately hostile peer daemon for the rdma guest tests
 * (tests/rdma/t_rdma_hostile.sh). It speaks smcproxy-protocol(7) from the
 * proposer's side with the daemon's own codecs (clc, llc, cdc, rdma_pd from
 * libsmcproxy.a), offering only the rdma transport, and then does over
 * rdma_cm and verbs what a well-behaved peer never would.
 *
 *   rdmapeer --connect ADDR:PORT [--mark N] [--timeout MS] [--links N]
 *            [--open DEST:PORT] [--other-source ADDR] [--verbose] [FILE...]
 *
 * ADDR:PORT is the daemon's control port. In order:
 *
 * 1. The handshake (proposal, accept, confirm, ready); the accept's
 *    RDMA_ADDR names the daemon's rdma_cm listener. Then, while the daemon
 *    waits for the group's links, connection requests whose private data
 *    is wrong, one per case, each printed as "NAME: rejected" (what a
 *    robust daemon does), "NAME: ACCEPTED", "NAME: timeout" or
 *    "NAME: unreachable":
 *      pd-empty          no private data (rdma_cm pads it with zeros)
 *      pd-garbage        random bytes
 *      pd-bad-magic      a valid layout with another magic
 *      pd-bad-version    version 3
 *      pd-v1             version 1's layout: 36 bytes without a tag
 *      pd-unknown-lgr    a valid layout naming a group that does not exist
 *      pd-no-tag         this group's link 0, the tag all zeros: what
 *                        whoever saw the group id in clear could send
 *      pd-bad-tag        the same with the right tag, one bit off
 *      pd-reflected-tag  the same with the tag of the daemon's reply
 *      pd-other-address  the same with the right tag, from ADDR of
 *                        --other-source (not the handshake's address)
 *      pd-link-range     this group, a link index past its links
 *      pd-small-region   this group, a region smaller than any ring
 *    then link 0 for real ("reply-tag: ok" when the daemon's reply proves
 *    the group's secret, "reply-tag: WRONG" when not), and with it up:
 *      pd-duplicate      this group's link 0 again
 *      pd-other-region   link 1 naming another region than link 0 did
 *    then the remaining links for real: "established". Every tag is made
 *    with the group's secret (clc_link_secret(): without a PSK, from the
 *    nonces and group id alone, as the daemon does).
 *
 * 2. Per FILE (a fuzz_link_msg corpus sample) on a live group: the file's
 *    bytes as 64-byte SENDs on link 0 (the last one zero-padded; an empty
 *    file is one zero slot), then a FLOW_OPEN to 127.0.0.1:1 as a sync
 *    marker the daemon must decline. Prints "NAME: alive (MSGS)",
 *    "NAME: failed" (the daemon disconnected every link: it failed the
 *    group) or "NAME: timeout", MSGS being what the daemon answered to the
 *    file itself, as smcpeer(links) does over shm. A failed group is
 *    replaced by a fresh one for the next sample.
 *
 * 3. Attacks only rdma has, each on a live group, printed as "NAME: failed"
 *    (every link went), "NAME: link failed, group alive" (the daemon
 *    dropped the link and answered the marker on another), "NAME: link
 *    failed" (link 0 went, the others neither went nor answered),
 *    "NAME: alive" or "NAME: timeout":
 *      early-bad         a SEND of 0 bytes the moment the last link is up
 *                        on our side (the daemon may not have seen its
 *                        ESTABLISHED yet): the whole group must still go
 *      send-zero         a SEND of 0 bytes
 *      send-short        a SEND of 1 byte
 *      send-oversize     a SEND of 128 bytes (the daemon posts 64-byte receives)
 *      write-badkey      an RDMA WRITE to the daemon's region with an rkey it never gave
 *
 * 4. With --open DEST:PORT (a destination the daemon may connect to):
 *    "early-open", three times, each on a fresh group: a FLOW_OPEN to DEST
 *    on the group's last link the moment it is up on our side, as a
 *    daemon opens the first flows of a fresh group; "early-open: accepted"
 *    is right ("flow_decline REASON", "failed" or "timeout" are not).
 *    Then "cross-group-write". Two groups, G1 and G2; a flow opened on G2 to
 *    DEST gives the daemon's ring for it (offset and rkey in its
 *    FLOW_ACCEPT). A write to that ring over G2's own link proves the
 *    address and key right; the same write over G1's link must fail,
 *    since a peer's rkeys cover only the memory of its own link group
 *    (man/smcproxy-protocol.7, RDMA TRANSPORT, Regions). Prints
 *    "cross-group-write: refused" (isolated), "cross-group-write: WRITTEN"
 *    (G1's link wrote into G2's ring), or "cross-group-write: inconclusive
 *    (WHY)".
 *
 * A handshake that does not succeed prints "declined-handshake REASON",
 * "closed", "timeout" or "bad-answer" instead and ends the run.
 *
 * Exit status: 0 when every step got an answer of some kind (the test
 * judges which), 1 on a local error (no device, cannot connect, a file),
 * 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "smc/cdc.h"
#include "cfg.h"
#include "smc/clc.h"
#include "smc/llc.h"
#include "transport/rdma/rdma.h"
#include "transport/rdma/rdma_pd.h"

#include "peer_hs.h"
#include "peer_msg.h"
#include "peer_util.h"

#define LINKS_MAX	8
#define REGION_SIZE	(1u << 20)	/* "our rings": the daemon never writes here */
#define RING_SIZE	65536u		/* the ring a FLOW_OPEN names in it */
#define SQ_DEPTH	32
#define RQ_DEPTH	32
#define SLOT_BIG	128		/* send slots: room for send-oversize */
#define FILE_MAX	(64 * LINK_MSG_LEN)
#define SYNC_TOKEN	0x53590000u	/* "SY": the markers */
#define OPEN_TOKEN	0x4f500001u	/* "OP": the cross-group flow */

struct opts {
	struct cfg_addr connect;
	bool have_connect;
	struct cfg_addr open;
	bool have_open;
	struct cfg_addr other_src;	/* --other-source: port unused */
	bool have_other_src;
	unsigned links;
	uint32_t mark;
	int timeout_ms;
	char **files;
	int n_files;
	bool verbose;
};

const char *peer_prog = "rdmapeer";
static struct opts o;
static int64_t t0_ms;

/* ------------------------------------------------------------------ */
/* The handshake over TCP, proposer's side (peer_hs.c), offering rdma. */

/* An rdma accept must name the daemon's rdma_cm listener. */
static bool rdma_accept_ok(const struct clc_accept *acc)
{
	struct rdma_tlv peer;

	return !rdma_tlv_decode(acc->addr[CLC_TLV_RDMA_ADDR - 1].value,
				acc->addr[CLC_TLV_RDMA_ADDR - 1].len, &peer);
}

/*
 * Proposal (rdma only), accept, confirm, ready. 1 with the accept in *acc
 * and the group's secret in secret; 0 after printing how the daemon
 * refused; -errno for a local error.
 */
static int hs_run(struct clc_accept *acc, uint8_t secret[CLC_SECRET_LEN])
{
	/* We never listen: the proposer connects every link. */
	struct rdma_tlv ra = { .version = 1, .cm_port = 1 };
	uint8_t addr[RDMA_TLV_LEN];
	struct peer_hs_opts ho = {
		.connect = &o.connect,
		.mark = o.mark,
		.timeout_ms = o.timeout_ms,
		.transport = CLC_TR_RDMA,
		.links = o.links,
		.ring_size = RING_SIZE,
		.rdma_addr = addr,
		.rdma_addr_len = RDMA_TLV_LEN,
		.accept_ok = rdma_accept_ok,
	};
	struct peer_hs hs;
	int rc;

	rdma_tlv_encode(&ra, addr);
	rc = peer_hs_run(&ho, &hs);
	if (rc == 0)
		printf("%s\n", hs.outcome);
	else if (rc == 1) {
		*acc = hs.acc;
		memcpy(secret, hs.secret, CLC_SECRET_LEN);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* A link group over rdma_cm. */

enum lk_state { LK_IDLE, LK_CONNECTING, LK_UP, LK_REJECTED, LK_UNREACHABLE, LK_FAILED };

struct grp;

struct lk {
	struct grp *g;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	enum lk_state state;
	bool resolved;			/* route resolved: time to connect */
	uint8_t pd[64];			/* the private data we send */
	size_t pd_len;
	struct rdma_pd peer;		/* what the daemon's accept carried */
	bool have_peer;
	enum ibv_wc_status last_status;	/* of the last signalled send */
	unsigned sends_done;
	uint8_t *tx;			/* SQ_DEPTH slots of SLOT_BIG */
	uint8_t *rx;			/* RQ_DEPTH slots of LINK_MSG_LEN */
	struct ibv_mr *tx_mr, *rx_mr;
	unsigned tx_next;
};

struct grp {
	struct clc_accept acc;
	uint8_t secret[CLC_SECRET_LEN];	/* the group's (clc_link_secret()) */
	struct sockaddr_storage cm_addr;
	struct rdma_event_channel *ech;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint8_t *region;
	struct ibv_mr *region_mr;
	unsigned n_links;
	struct lk links[LINKS_MAX];
	bool up;
};

/* What the daemon said on the links, for the step being judged. */
struct probe {
	uint32_t sync;			/* the marker's token */
	bool synced;
	uint32_t open_token;		/* the cross-group flow, 0 if none */
	bool open_done;
	struct llc_msg open_answer;
	char msgs[512];			/* answers to anything but the marker */
	size_t len;
};

static void probe_on_msg(struct probe *pr, const uint8_t *slot, size_t len)
{
	struct llc_msg m;
	char what[64];

	if (!llc_decode(slot, len, &m)) {
		if (m.type == LLC_FLOW_DECLINE && pr->sync && m.decline.token == pr->sync) {
			pr->synced = true;
			if (m.decline.reason != CLC_DECL_POLICY)
				peer_say("the marker 127.0.0.1:1 was declined with %s, not policy",
				    clc_decline_name(m.decline.reason));
			return;
		}
		if ((m.type == LLC_FLOW_ACCEPT || m.type == LLC_FLOW_DECLINE) && pr->open_token &&
		    (m.type == LLC_FLOW_ACCEPT ? m.accept.token : m.decline.token) == pr->open_token) {
			pr->open_done = true;
			pr->open_answer = m;
			return;
		}
	}
	peer_describe_slot(slot, len, what, sizeof(what));
	if (pr->len < sizeof(pr->msgs))
		pr->len += (size_t)snprintf(pr->msgs + pr->len, sizeof(pr->msgs) - pr->len,
					    "%s%s", pr->len ? ", " : "", what);
}

static unsigned links_up(const struct grp *g)
{
	unsigned i, n = 0;

	for (i = 0; i < g->n_links; i++)
		n += g->links[i].state == LK_UP;
	return n;
}

static int lk_post_recv(struct lk *l, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(l->rx + i * LINK_MSG_LEN),
		.length = LINK_MSG_LEN,
		.lkey = l->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = ((uint64_t)(l - l->g->links) << 32) | i,
				  .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(l->qp, &wr, &bad);
}

/* The device's resources, on the first link's context. */
static int grp_verbs(struct grp *g, struct ibv_context *ctx)
{
	if (g->ctx)
		return g->ctx == ctx ? 0 : -ENODEV;
	g->ctx = ctx;
	g->pd = ibv_alloc_pd(ctx);
	g->cq = g->pd ? ibv_create_cq(ctx, LINKS_MAX * (SQ_DEPTH + RQ_DEPTH) + 16, NULL, NULL, 0) : NULL;
	if (!g->pd || !g->cq)
		return -ENOMEM;
	g->region_mr = ibv_reg_mr(g->pd, g->region, REGION_SIZE,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	return g->region_mr ? 0 : -errno;
}

static int lk_create_qp(struct lk *l)
{
	struct grp *g = l->g;
	struct ibv_qp_init_attr attr = { 0 };
	unsigned i;
	int err;

	err = grp_verbs(g, l->id->verbs);
	if (err)
		return err;
	l->tx = calloc(SQ_DEPTH, SLOT_BIG);
	l->rx = calloc(RQ_DEPTH, LINK_MSG_LEN);
	if (!l->tx || !l->rx)
		return -ENOMEM;
	l->tx_mr = ibv_reg_mr(g->pd, l->tx, SQ_DEPTH * SLOT_BIG, IBV_ACCESS_LOCAL_WRITE);
	l->rx_mr = ibv_reg_mr(g->pd, l->rx, RQ_DEPTH * LINK_MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!l->tx_mr || !l->rx_mr)
		return -errno;
	attr.send_cq = g->cq;
	attr.recv_cq = g->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = SQ_DEPTH;
	attr.cap.max_recv_wr = RQ_DEPTH;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(l->id, g->pd, &attr))
		return -errno;
	l->qp = l->id->qp;
	for (i = 0; i < RQ_DEPTH; i++) {
		err = lk_post_recv(l, i);
		if (err)
			return -err;
	}
	return 0;
}

static void lk_close(struct lk *l)
{
	if (l->id) {
		if (l->state == LK_UP)
			rdma_disconnect(l->id);
		if (l->qp)
			rdma_destroy_qp(l->id);
		rdma_destroy_id(l->id);
	}
	if (l->tx_mr)
		ibv_dereg_mr(l->tx_mr);
	if (l->rx_mr)
		ibv_dereg_mr(l->rx_mr);
	free(l->tx);
	free(l->rx);
	*l = (struct lk){ .g = l->g };
}

static void grp_close(struct grp *g)
{
	unsigned i;

	for (i = 0; i < LINKS_MAX; i++)
		lk_close(&g->links[i]);
	if (g->region_mr)
		ibv_dereg_mr(g->region_mr);
	if (g->cq)
		ibv_destroy_cq(g->cq);
	if (g->pd)
		ibv_dealloc_pd(g->pd);
	if (g->ech)
		rdma_destroy_event_channel(g->ech);
	free(g->region);
	memset(g, 0, sizeof(*g));
	for (i = 0; i < LINKS_MAX; i++)
		g->links[i].g = g;
}

static void lk_on_cm(struct lk *l, struct rdma_cm_event *ev)
{
	int err;

	if (o.verbose)
		peer_say("%lld ms: link %u: %s", (long long)(peer_now_ms() - t0_ms), (unsigned)(l - l->g->links),
		    rdma_event_str(ev->event));

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(l->id, 2000))
			l->state = LK_UNREACHABLE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		l->resolved = true;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		l->state = LK_UP;
		if (!rdma_pd_decode(ev->param.conn.private_data, ev->param.conn.private_data_len,
				    &l->peer))
			l->have_peer = true;
		break;
	case RDMA_CM_EVENT_REJECTED:
		l->state = LK_REJECTED;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		l->state = LK_UNREACHABLE;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (l->state == LK_UP) {
			l->state = LK_FAILED;
			err = rdma_disconnect(l->id);	/* our half, so the id can go */
			(void)err;
		}
		break;
	default:
		break;
	}
}

/*
 * Runs the group until done(pr) says so, every link is down (unless
 * past_loss), or the deadline: rdma_cm events, receives (to the probe,
 * reposted) and send completions (their status kept per link). A wait for
 * a completion goes on past the loss: a failed link's queue pair is
 * flushed, and its flush, which comes after the DISCONNECTED that made
 * the link fail, is that completion.
 */
static void grp_run(struct grp *g, struct probe *pr, bool (*done)(struct grp *, struct probe *),
		    int64_t deadline, bool past_loss)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc[16];
	int n, i;

	for (;;) {
		while (rdma_get_cm_event(g->ech, &ev) == 0) {
			struct lk *l = ev->id->context;

			/* The private data lives in the event: decoded first. */
			if (l)
				lk_on_cm(l, ev);
			rdma_ack_cm_event(ev);
		}
		while (g->cq && (n = ibv_poll_cq(g->cq, 16, wc)) > 0) {
			for (i = 0; i < n; i++) {
				unsigned li = (unsigned)(wc[i].wr_id >> 32);
				struct lk *l = &g->links[li < LINKS_MAX ? li : 0];

				if (wc[i].opcode & IBV_WC_RECV) {
					if (wc[i].status != IBV_WC_SUCCESS) {
						if (l->state == LK_UP)
							l->state = LK_FAILED;
						continue;
					}
					if (pr)
						probe_on_msg(pr, l->rx + (wc[i].wr_id & 0xffffffffu) *
							     LINK_MSG_LEN, wc[i].byte_len);
					if (l->state == LK_UP &&
					    lk_post_recv(l, (unsigned)(wc[i].wr_id & 0xffffffffu)))
						l->state = LK_FAILED;
				} else {
					l->last_status = wc[i].status;
					l->sends_done++;
					if (wc[i].status != IBV_WC_SUCCESS && l->state == LK_UP)
						l->state = LK_FAILED;
				}
			}
		}
		if (done && done(g, pr))
			return;
		if (g->up && !links_up(g) && !past_loss)
			return;
		if (peer_now_ms() >= deadline)
			return;
		{
			struct pollfd pfd = { .fd = g->ech->fd, .events = POLLIN };

			poll(&pfd, 1, 5);
		}
	}
}

static void grp_pump(struct grp *g, struct probe *pr, bool (*done)(struct grp *, struct probe *),
		     int64_t deadline)
{
	grp_run(g, pr, done, deadline, false);
}

static bool lk_settled(struct grp *g, struct probe *pr)
{
	unsigned i;

	for (i = 0; i < LINKS_MAX; i++) {
		struct lk *l = &g->links[i];

		if (l->state == LK_CONNECTING && l->resolved && l->id && !l->qp) {
			struct rdma_conn_param cp = {
				.private_data = l->pd_len ? l->pd : NULL,
				.private_data_len = (uint8_t)l->pd_len,
				.retry_count = 7,
				.rnr_retry_count = 7,
			};
			int err = lk_create_qp(l);

			if (err || rdma_connect(l->id, &cp)) {
				peer_say("link %u: cannot connect: %s", i, strerror(err ? -err : errno));
				l->state = LK_UNREACHABLE;
			}
		}
		if (l->state == LK_CONNECTING)
			return false;
	}
	return true;
}

/* Connects g->links[i] with the private data pd (len bytes), from src
 * (NULL: wherever the route says): its state says how it went. */
static void lk_connect_from(struct grp *g, unsigned i, const uint8_t *pd, size_t len,
			    const struct sockaddr *src)
{
	struct lk *l = &g->links[i];

	lk_close(l);
	l->state = LK_CONNECTING;
	memcpy(l->pd, pd, len);
	l->pd_len = len;
	if (rdma_create_id(g->ech, &l->id, l, RDMA_PS_TCP) ||
	    rdma_resolve_addr(l->id, (struct sockaddr *)src, (struct sockaddr *)&g->cm_addr,
			      2000)) {
		peer_say("link %u: rdma_cm: %s", i, strerror(errno));
		l->state = LK_UNREACHABLE;
		return;
	}
	grp_pump(g, NULL, lk_settled, peer_now_ms() + o.timeout_ms);
}

static void lk_connect(struct grp *g, unsigned i, const uint8_t *pd, size_t len)
{
	lk_connect_from(g, i, pd, len, NULL);
}

/* A request's private data for link, tagged with g's secret as the
 * daemon does (rdma_cm.c); dir RDMA_PD_REP makes the wrong label. */
static void my_pd_dir(const struct grp *g, unsigned link, enum rdma_pd_dir dir,
		      uint8_t out[RDMA_PD_LEN])
{
	struct rdma_pd pd = {
		.link = (uint8_t)link,
		.addr = (uintptr_t)g->region,
		.size = REGION_SIZE,
	};

	memcpy(pd.lgr_id, g->acc.lgr_id, CLC_LGR_ID_LEN);
	if (rdma_pd_tag(g->secret, dir, &pd, pd.tag))
		memset(pd.tag, 0, sizeof(pd.tag));	/* the case says wrong */
	rdma_pd_encode(&pd, out);
}

/* p tagged with g's secret as a request, encoded: the cases that test a
 * field must pass the tag check to reach it. */
static void seal_pd(const struct grp *g, struct rdma_pd *p, uint8_t out[RDMA_PD_LEN])
{
	if (rdma_pd_tag(g->secret, RDMA_PD_REQ, p, p->tag))
		memset(p->tag, 0, sizeof(p->tag));
	rdma_pd_encode(p, out);
}

static void my_pd(const struct grp *g, unsigned link, uint8_t out[RDMA_PD_LEN])
{
	my_pd_dir(g, link, RDMA_PD_REQ, out);
}

/* One bad connection request on a scratch link (the last index), from
 * src (NULL: the route's). */
static void cm_case_from(struct grp *g, const char *name, const uint8_t *pd, size_t len,
			 const struct sockaddr *src)
{
	struct lk *l = &g->links[LINKS_MAX - 1];

	lk_connect_from(g, LINKS_MAX - 1, pd, len, src);
	printf("%s: %s\n", name, l->state == LK_REJECTED ? "rejected" :
	       l->state == LK_UP ? "ACCEPTED" : l->state == LK_CONNECTING ? "timeout" :
	       "unreachable");
	lk_close(l);
}

static void cm_case(struct grp *g, const char *name, const uint8_t *pd, size_t len)
{
	cm_case_from(g, name, pd, len, NULL);
}

/*
 * A live group in g, made anew: handshake, then every link. With attacks,
 * the bad connection requests of step 1 on the way. 1 when up, 0 when the
 * daemon refused (printed), -1 on a local error.
 */
static int grp_up(struct grp *g, bool attacks, bool settle)
{
	uint8_t pd[RDMA_PD_LEN], bad[RDMA_PD_LEN];
	struct rdma_tlv ra;
	unsigned i;
	int err;

	grp_close(g);
	/* The region first: every link's private data names it. */
	g->region = aligned_alloc(4096, REGION_SIZE);
	if (!g->region)
		return -1;
	memset(g->region, 0, REGION_SIZE);
	err = hs_run(&g->acc, g->secret);
	if (err <= 0)
		return err < 0 ? -1 : 0;
	g->n_links = g->acc.links;
	rdma_tlv_decode(g->acc.addr[CLC_TLV_RDMA_ADDR - 1].value,
			g->acc.addr[CLC_TLV_RDMA_ADDR - 1].len, &ra);
	memcpy(&g->cm_addr, &o.connect.ss, sizeof(g->cm_addr));
	if (g->cm_addr.ss_family == AF_INET)
		((struct sockaddr_in *)&g->cm_addr)->sin_port = htons(ra.cm_port);
	else
		((struct sockaddr_in6 *)&g->cm_addr)->sin6_port = htons(ra.cm_port);
	g->ech = rdma_create_event_channel();
	if (!g->ech) {
		peer_say("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	fcntl(g->ech->fd, F_SETFL, fcntl(g->ech->fd, F_GETFL) | O_NONBLOCK);

	if (attacks) {
		struct rdma_pd p;

		cm_case(g, "pd-empty", NULL, 0);
		if (getrandom(bad, sizeof(bad), 0) != sizeof(bad))
			return -1;
		bad[0] ^= 'S';	/* whatever chance had, not our magic */
		cm_case(g, "pd-garbage", bad, sizeof(bad));
		my_pd(g, 0, bad);
		bad[0] = 'X';
		cm_case(g, "pd-bad-magic", bad, sizeof(bad));
		my_pd(g, 0, bad);
		bad[2] = RDMA_PD_VERSION + 1;
		cm_case(g, "pd-bad-version", bad, sizeof(bad));
		my_pd(g, 0, bad);
		bad[2] = 1;
		cm_case(g, "pd-v1", bad, RDMA_PD_TAG_OFF);
		p = (struct rdma_pd){ .link = 0, .addr = (uintptr_t)g->region, .size = REGION_SIZE };
		if (getrandom(p.lgr_id, sizeof(p.lgr_id), 0) != sizeof(p.lgr_id))
			return -1;
		rdma_pd_encode(&p, bad);
		cm_case(g, "pd-unknown-lgr", bad, sizeof(bad));
		/* The group id crosses in clear, so it
		 * must not be enough to connect a link of the group. */
		my_pd(g, 0, bad);
		memset(bad + RDMA_PD_TAG_OFF, 0, RDMA_PD_TAG_LEN);
		cm_case(g, "pd-no-tag", bad, sizeof(bad));
		my_pd(g, 0, bad);
		bad[RDMA_PD_LEN - 1] ^= 1;
		cm_case(g, "pd-bad-tag", bad, sizeof(bad));
		my_pd_dir(g, 0, RDMA_PD_REP, bad);
		cm_case(g, "pd-reflected-tag", bad, sizeof(bad));
		if (o.have_other_src) {
			my_pd(g, 0, bad);
			cm_case_from(g, "pd-other-address", bad, sizeof(bad),
				     (const struct sockaddr *)&o.other_src.ss);
		}
		my_pd(g, g->n_links, bad);
		cm_case(g, "pd-link-range", bad, sizeof(bad));
		p = (struct rdma_pd){ .link = 0, .addr = (uintptr_t)g->region, .size = 4096 };
		memcpy(p.lgr_id, g->acc.lgr_id, CLC_LGR_ID_LEN);
		seal_pd(g, &p, bad);
		cm_case(g, "pd-small-region", bad, sizeof(bad));
	}
	my_pd(g, 0, pd);
	lk_connect(g, 0, pd, sizeof(pd));
	if (g->links[0].state != LK_UP) {
		printf("link-0-%s\n", g->links[0].state == LK_REJECTED ? "rejected" : "unreachable");
		return 0;
	}
	if (attacks) {
		struct rdma_pd p = { .link = 1, .addr = (uintptr_t)g->region + 4096, .size = REGION_SIZE };

		/* The daemon's reply proves the secret too: it is the daemon
		 * of our handshake that answered. */
		printf("reply-tag: %s\n", g->links[0].have_peer &&
		       rdma_pd_tag_ok(g->secret, RDMA_PD_REP, &g->links[0].peer) ? "ok" : "WRONG");
		cm_case(g, "pd-duplicate", pd, sizeof(pd));
		if (g->n_links > 1) {
			memcpy(p.lgr_id, g->acc.lgr_id, CLC_LGR_ID_LEN);
			seal_pd(g, &p, bad);
			cm_case(g, "pd-other-region", bad, sizeof(bad));
		}
	}
	for (i = 1; i < g->n_links; i++) {
		my_pd(g, i, pd);
		lk_connect(g, i, pd, sizeof(pd));
		if (g->links[i].state != LK_UP) {
			printf("link-%u-%s\n", i,
			       g->links[i].state == LK_REJECTED ? "rejected" : "unreachable");
			return 0;
		}
	}
	g->up = true;
	/* The daemon's ESTABLISHED of the last link may still be on its way
	 * when our first message arrives on another: give it a moment, so
	 * that the samples meet a group that is up on both ends (early-bad
	 * is the attack that does not wait). */
	if (settle)
		grp_pump(g, NULL, NULL, peer_now_ms() + 200);
	if (attacks)
		printf("established\n");
	return 1;
}

/* Posts a SEND of len bytes from buf on link i (signalled). */
static int lk_send(struct lk *l, const uint8_t *buf, size_t len)
{
	uint8_t *slot = l->tx + (l->tx_next++ % SQ_DEPTH) * SLOT_BIG;
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)len,
			       .lkey = l->tx_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)(l - l->g->links) << 32,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	if (len > SLOT_BIG)
		return -EINVAL;
	memcpy(slot, buf, len);
	return -ibv_post_send(l->qp, &wr, &bad);
}

static int lk_write(struct lk *l, uint64_t addr, uint32_t rkey, size_t len)
{
	uint8_t *slot = l->tx + (l->tx_next++ % SQ_DEPTH) * SLOT_BIG;
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)len,
			       .lkey = l->tx_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)(l - l->g->links) << 32,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	};
	struct ibv_send_wr *bad;

	memset(slot, 0xa5, len);
	return -ibv_post_send(l->qp, &wr, &bad);
}

/* Sends the marker, a FLOW_OPEN every daemon must decline, on link i. */
static int post_sync(struct grp *g, unsigned i, struct probe *pr, uint32_t n)
{
	struct cfg_addr lo = { .len = sizeof(struct sockaddr_in) };
	struct sockaddr_in *sin = (struct sockaddr_in *)&lo.ss;
	uint8_t slot[LINK_MSG_LEN];

	sin->sin_family = AF_INET;
	sin->sin_port = htons(1);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pr->sync = SYNC_TOKEN | (n & 0xffff);
	pr->synced = false;
	peer_flow_open_slot(slot, pr->sync,
			    &(struct llc_rmb){ .size = RING_SIZE, .key = g->region_mr->rkey },
			    &lo);
	return lk_send(&g->links[i], slot, LINK_MSG_LEN);
}

static bool synced(struct grp *g, struct probe *pr)
{
	return pr->synced;
}

/* The marker came back, or link 0 (where it went) is gone. */
static bool synced_or_gone(struct grp *g, struct probe *pr)
{
	return pr->synced || g->links[0].state != LK_UP;
}

static bool all_gone(struct grp *g, struct probe *pr)
{
	return links_up(g) == 0;
}

/* Link 0 went: the daemon's disconnects of the other links, if it failed
 * the whole group, come right behind. */
static void settle_after_loss(struct grp *g, struct probe *pr)
{
	if (g->links[0].state != LK_UP)
		grp_pump(g, pr, all_gone, peer_now_ms() + o.timeout_ms);
}

static bool open_done(struct grp *g, struct probe *pr)
{
	return pr->open_done;
}

/* Link 0's signalled work request completed (flushed, if the link failed). */
static bool send_completed(struct grp *g, struct probe *pr)
{
	return g->links[0].sends_done > 0;
}

static void print_probe(const char *name, const struct grp *g, const struct probe *pr)
{
	if (o.verbose)
		peer_say("%lld ms: %s judged", (long long)(peer_now_ms() - t0_ms), name);
	printf("%s: %s%s%s%s\n", name,
	       !links_up(g) ? "failed" : pr->synced ? "alive" :
	       g->links[0].state != LK_UP ? "link failed" : "timeout",
	       pr->len ? " (" : "", pr->msgs, pr->len ? ")" : "");
}

static uint32_t n_sync;

/* A live group in g, made anew if the last one lost a link. */
static int ensure_up(struct grp *g)
{
	if (g->up && links_up(g) == g->n_links)
		return 0;
	return grp_up(g, false, true) == 1 ? 0 : -1;
}

/* Step 2: one corpus sample. */
static int run_file(struct grp *g, const char *path)
{
	uint8_t buf[FILE_MAX + 1], slot[LINK_MSG_LEN];
	struct probe pr = { 0 };
	size_t len, off = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		peer_say("%s: %s", path, strerror(errno));
		return 1;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (len > FILE_MAX) {
		peer_say("%s: longer than %d slots", path, FILE_MAX / LINK_MSG_LEN);
		return 1;
	}
	if (ensure_up(g))
		return -1;
	do {
		size_t n = len - off < LINK_MSG_LEN ? len - off : LINK_MSG_LEN;

		memset(slot, 0, sizeof(slot));
		memcpy(slot, buf + off, n);
		if (lk_send(&g->links[0], slot, LINK_MSG_LEN))
			return -1;
		off += n;
	} while (off < len);
	if (post_sync(g, 0, &pr, ++n_sync))
		return -1;
	grp_pump(g, &pr, synced_or_gone, peer_now_ms() + o.timeout_ms);
	settle_after_loss(g, &pr);
	print_probe(peer_base_name(path), g, &pr);
	return 0;
}

/*
 * Step 3: after the attack on link 0, the group either failed, dropped the
 * link (the marker then goes on another), or shrugged.
 */
static void judge_link_attack(struct grp *g, const char *name)
{
	struct probe pr = { 0 };
	unsigned i, other = g->n_links;

	/* The attack first, then the marker behind it on the same link. */
	if (post_sync(g, 0, &pr, ++n_sync) == 0)
		grp_pump(g, &pr, synced_or_gone, peer_now_ms() + o.timeout_ms);
	if (pr.synced) {
		printf("%s: alive%s%s%s\n", name, pr.len ? " (" : "", pr.msgs, pr.len ? ")" : "");
		return;
	}
	settle_after_loss(g, &pr);
	for (i = 1; i < g->n_links; i++)
		if (g->links[i].state == LK_UP)
			other = i;
	if (g->links[0].state == LK_UP) {
		printf("%s: timeout\n", name);
		return;
	}
	if (other == g->n_links) {
		printf("%s: failed\n", name);
		return;
	}
	pr = (struct probe){ 0 };
	if (post_sync(g, other, &pr, ++n_sync) == 0)
		grp_pump(g, &pr, synced, peer_now_ms() + o.timeout_ms);
	if (pr.synced)
		printf("%s: link failed, group alive\n", name);
	else
		printf("%s: link failed\n", name);
}

static int run_link_attacks(struct grp *g)
{
	static const uint8_t oversize[128] = { 0xfe };
	static const uint8_t one[1] = { LLC_FLOW_OPEN };

	/* A bad message the moment the group is up on our side. */
	if (grp_up(g, false, false) != 1 || lk_send(&g->links[0], NULL, 0))
		return -1;
	judge_link_attack(g, "early-bad");
	if (ensure_up(g) || lk_send(&g->links[0], NULL, 0))
		return -1;
	judge_link_attack(g, "send-zero");
	if (ensure_up(g) || lk_send(&g->links[0], one, sizeof(one)))
		return -1;
	judge_link_attack(g, "send-short");
	if (ensure_up(g) || lk_send(&g->links[0], oversize, sizeof(oversize)))
		return -1;
	judge_link_attack(g, "send-oversize");
	if (ensure_up(g))
		return -1;
	if (!g->links[0].have_peer) {
		printf("write-badkey: inconclusive (the daemon's accept named no region)\n");
	} else {
		/* Keys in rxe are (index << 8) | 8 random bits: index 0 with
		 * bits nobody drew is a key no MR has. */
		if (lk_write(&g->links[0], g->links[0].peer.addr, 0x00000000u ^ 0x5au, 64))
			return -1;
		judge_link_attack(g, "write-badkey");
	}
	return 0;
}

/*
 * A flow opened on the last link the moment it is up on our side, as a
 * daemon opening its first flows on a fresh group does: accepted, or the
 * daemon mishandled a message that beat its own ESTABLISHED event.
 */
static int run_early_open(void)
{
	struct grp g;
	struct probe pr = { .open_token = OPEN_TOKEN };
	uint8_t slot[LINK_MSG_LEN];
	unsigned last;
	int rc = -1;

	memset(&g, 0, sizeof(g));
	grp_close(&g);
	if (grp_up(&g, false, false) != 1)
		goto out;
	last = g.n_links - 1;
	peer_flow_open_slot(slot, OPEN_TOKEN,
			    &(struct llc_rmb){ .size = RING_SIZE, .key = g.region_mr->rkey },
			    &o.open);
	if (lk_send(&g.links[last], slot, LINK_MSG_LEN))
		goto out;
	grp_pump(&g, &pr, open_done, peer_now_ms() + o.timeout_ms);
	if (!pr.open_done)
		printf("early-open: %s\n", links_up(&g) == g.n_links ? "timeout" : "failed");
	else if (pr.open_answer.type == LLC_FLOW_ACCEPT)
		printf("early-open: accepted\n");
	else
		printf("early-open: flow_decline %s\n",
		       clc_decline_name(pr.open_answer.decline.reason));
	rc = 0;
out:
	grp_close(&g);
	return rc;
}

/* Step 4: does an rkey of one group's ring work over another group's link? */
static int run_cross_group(void)
{
	struct grp g1, g2;
	struct probe pr = { .open_token = OPEN_TOKEN };
	uint8_t slot[LINK_MSG_LEN];
	uint64_t addr;
	uint32_t key;
	int rc = -1;

	memset(&g1, 0, sizeof(g1));
	memset(&g2, 0, sizeof(g2));
	grp_close(&g1);
	grp_close(&g2);
	if (grp_up(&g1, false, true) != 1 || grp_up(&g2, false, true) != 1)
		goto out;
	peer_flow_open_slot(slot, OPEN_TOKEN,
			    &(struct llc_rmb){ .size = RING_SIZE, .key = g2.region_mr->rkey },
			    &o.open);
	if (lk_send(&g2.links[0], slot, LINK_MSG_LEN))
		goto out;
	grp_pump(&g2, &pr, open_done, peer_now_ms() + o.timeout_ms);
	if (!pr.open_done || pr.open_answer.type != LLC_FLOW_ACCEPT || !g2.links[0].have_peer) {
		char what[64] = "no answer";

		if (pr.open_done && pr.open_answer.type == LLC_FLOW_DECLINE)
			snprintf(what, sizeof(what), "flow_decline %s",
				 clc_decline_name(pr.open_answer.decline.reason));
		printf("cross-group-write: inconclusive (the flow to the --open destination: %s)\n",
		       what);
		rc = 0;
		goto out;
	}
	addr = g2.links[0].peer.addr + pr.open_answer.accept.rmb.offset;
	key = pr.open_answer.accept.rmb.key;
	/* Over the ring's own group: the address and key are right. */
	g2.links[0].sends_done = 0;
	if (lk_write(&g2.links[0], addr, key, 64))
		goto out;
	grp_run(&g2, NULL, send_completed, peer_now_ms() + o.timeout_ms, true);
	if (!g2.links[0].sends_done || g2.links[0].last_status != IBV_WC_SUCCESS) {
		printf("cross-group-write: inconclusive (the write over the ring's own group: %s)\n",
		       g2.links[0].sends_done ? ibv_wc_status_str(g2.links[0].last_status) :
		       "no completion");
		rc = 0;
		goto out;
	}
	/* Over another group's link. The refusal is the responder's NAK, or
	 * (what rxe gives) a flush once the daemon tore the link down: the
	 * flush comes after the DISCONNECTED, so the wait is for the
	 * completion itself, not for the link to fail. Either comes after a
	 * round trip through the emulated rxe, which a loaded host can
	 * stretch far past --timeout, so this one wait is longer (a
	 * completion that never comes is still reported, and fails the test). */
	g1.links[0].sends_done = 0;
	if (lk_write(&g1.links[0], addr, key, 64))
		goto out;
	grp_run(&g1, NULL, send_completed, peer_now_ms() + 5 * (int64_t)o.timeout_ms, true);
	if (!g1.links[0].sends_done)
		printf("cross-group-write: inconclusive (no completion in %d ms; the link %s)\n",
		       5 * o.timeout_ms, g1.links[0].state == LK_UP ? "is up" : "failed");
	else if (g1.links[0].last_status == IBV_WC_SUCCESS)
		printf("cross-group-write: WRITTEN (a link of one group wrote into a ring of another)\n");
	else
		printf("cross-group-write: refused (%s)\n",
		       ibv_wc_status_str(g1.links[0].last_status));
	rc = 0;
out:
	grp_close(&g1);
	grp_close(&g2);
	return rc;
}

/* ------------------------------------------------------------------ */

void peer_usage(void)
{
	fprintf(stderr,
		"usage: rdmapeer --connect ADDR:PORT [--mark N] [--timeout MS] [--links N]\n"
		"                [--open DEST:PORT] [--other-source ADDR] [--verbose] [FILE...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct grp g;
	int i, rc = 0, err;

	o.links = 2;
	o.timeout_ms = 3000;
	o.files = calloc((size_t)argc, sizeof(*o.files));
	if (!o.files)
		return 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--connect")) {
			peer_parse_addr(peer_arg_value(&i, argc, argv), &o.connect);
			o.have_connect = true;
		} else if (!strcmp(a, "--open")) {
			peer_parse_addr(peer_arg_value(&i, argc, argv), &o.open);
			o.have_open = true;
		} else if (!strcmp(a, "--other-source")) {
			const char *v = peer_arg_value(&i, argc, argv);
			struct sockaddr_in *sin = (struct sockaddr_in *)&o.other_src.ss;
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o.other_src.ss;

			/* An address without a port: rdma_cm picks the port. */
			if (inet_pton(AF_INET, v, &sin->sin_addr) == 1) {
				sin->sin_family = AF_INET;
			} else if (inet_pton(AF_INET6, v, &sin6->sin6_addr) == 1) {
				sin6->sin6_family = AF_INET6;
			} else {
				peer_say("not an address: %s", v);
				peer_usage();
			}
			o.have_other_src = true;
		} else if (!strcmp(a, "--links")) {
			o.links = (unsigned)peer_parse_num(peer_arg_value(&i, argc, argv), LINKS_MAX - 1);
			if (!o.links)
				peer_usage();
		} else if (!strcmp(a, "--mark")) {
			o.mark = (uint32_t)peer_parse_num(peer_arg_value(&i, argc, argv), UINT32_MAX);
		} else if (!strcmp(a, "--timeout")) {
			o.timeout_ms = (int)peer_parse_num(peer_arg_value(&i, argc, argv), 600000);
		} else if (!strcmp(a, "--verbose")) {
			o.verbose = true;
		} else if (a[0] == '-' && a[1]) {
			peer_say("unknown option %s", a);
			peer_usage();
		} else {
			o.files[o.n_files++] = argv[i];
		}
	}
	if (!o.have_connect)
		peer_usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0_ms = peer_now_ms();

	memset(&g, 0, sizeof(g));
	grp_close(&g);
	err = grp_up(&g, true, true);
	if (err <= 0) {
		grp_close(&g);
		return err < 0 ? 1 : 0;
	}
	for (i = 0; i < o.n_files; i++) {
		err = run_file(&g, o.files[i]);
		if (err < 0) {
			peer_say("no live link group for %s", o.files[i]);
			rc = 1;
			goto out;
		}
		rc |= err;
	}
	if (run_link_attacks(&g)) {
		peer_say("no live link group for the link attacks");
		rc = 1;
		goto out;
	}
	grp_close(&g);
	/* A race: three tries, each printed. */
	for (i = 0; o.have_open && i < 3; i++) {
		if (run_early_open()) {
			peer_say("no live link group for early-open");
			rc = 1;
			break;
		}
	}
	if (o.have_open && run_cross_group()) {
		peer_say("no live link groups for cross-group-write");
		rc = 1;
	}
out:
	grp_close(&g);
	return rc;
}
