/* SPDX-License-Identifier: MIT */
/*
 * An in-memory link transport, and a link group of one link (or of
 * several, world_new_links()) on it, for the unit tests of the data plane
 * (test_cork.c, test_conn.c, test_failover.c).
 *
 * The transport is written against transport-t.h alone, as every one is,
 * and only its data path: the link group here is built by hand, not by a
 * handshake, so the whole-life ops stay NULL. It keeps every message the link posts for the test to
 * decode, lets the test say how much room the send queue has (each post
 * takes a slot) and how far sends have completed, and points a flow's
 * outgoing ring into a "peer region" the test can read. Nothing is sent
 * anywhere: the test plays the peer by calling conn_on_cdc() /
 * link_tx_progress() the way a transport's receive path would.
 *
 * Each link has a struct fake of its own (its send queue, its message
 * log, the writes it carried); they share the one peer region. By default
 * a flow's outgoing ring is the peer's ring itself, as with shm. With
 * mirror set on the link group's fake (w->fake), a flow writes into a
 * private buffer instead and write() copies each range into the peer
 * region, as rdma mirrors rings by RDMA WRITE: a link whose drop_writes is
 * set then loses what it carries (in flight when it failed), and
 * conn_moved() copies [tx_prod_done, tx_prod) again on the new link, so that a
 * test sees in the peer region exactly what the peer would.
 *
 * The rest builds what the flow code needs around it, without
 * proxy_init() (which wants listeners and a config): a loop, the epoll
 * set the application sockets go into, the proxy's counters, and the
 * end-of-batch work of proxy.c (flush kicked links, free the dead).
 * Application sockets are loopback TCP connections rather than a
 * socketpair, so that an RST is an RST.
 *
 * The code is in fake_transport.c, linked into each test that names it in
 * tests/unit/test_X.helpers (see the Makefile). Its functions fail the
 * running cmocka test on what they check (assert_*), as a test would.
 */
#ifndef SMCPROXY_TEST_FAKE_TRANSPORT_H
#define SMCPROXY_TEST_FAKE_TRANSPORT_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/container.h"
#include "smc/cdc.h"
#include "cfg-t.h"
#include "smc/conn.h"
#include "smc/cursor.h"
#include "core/epset.h"
#include "smc/lgr.h"
#include "smc/link.h"
#include "smc/llc.h"
#include "core/loop.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "smc/transport-t.h"

/* ------------------------------------------------------------------ */
/* The transport. */

#define FAKE_MSGS	256
#define FAKE_WRITES	1024
#define FAKE_REWRITES	64
#define FAKE_PEER_SIZE	(4u << 20)	/* the peer's region */
#define FAKE_RXQ	16		/* messages the peer may queue unread */

struct fake_msg {
	uint32_t seq;			/* lnk->tx_seq when it was posted */
	uint8_t b[LINK_MSG_LEN];
};

struct fake {
	/* Send queue: what the test controls. */
	unsigned room;			/* free slots; each post takes one */
	uint32_t done;			/* first sequence not completed */
	int post_err, write_err;	/* returned by post() / write() when set */
	int attach_err;			/* conn_attach() of a valid ring, when set
					 * (the link group's fake) */
	/* What the link did. */
	struct fake_msg msgs[FAKE_MSGS];
	unsigned n_msgs;
	unsigned flushes;		/* doorbells */
	unsigned progress_asks;		/* want_progress() calls */
	unsigned bad_calls;		/* a post without room, a write out of range */
	/* The peer's region, which our flows write into. */
	uint8_t *peer;
	struct {
		uint32_t off, len;
	} writes[FAKE_WRITES];		/* the first FAKE_WRITES */
	unsigned n_writes;
	uint64_t written;
	/* rdma-like rings (see the top); mirror is read on the link group's
	 * fake only, drop_writes on the link that carries a write. */
	bool mirror;
	bool drop_writes;
	/* conn_moved() calls on this link (the new one), and the ranges it
	 * carried again: after_msgs is how many messages this link had
	 * posted then, so a test can tell that the CDC came after. */
	unsigned moved_calls;
	struct {
		uint32_t token, off, len;
		unsigned after_msgs;
	} rewrites[FAKE_REWRITES];
	unsigned n_rewrites;
	uint64_t rewritten;
	/* Messages the peer queued on this link that no event announced
	 * (an shm peer skips the doorbell while we run, a CQ holds
	 * completions we did not poll): the transport's poll() hands them
	 * to link_rx(), as shm_poll() does. */
	uint8_t rxq[FAKE_RXQ][LINK_MSG_LEN];
	unsigned rx_prod, rx_cons;
};

static inline struct fake *fake_of_link(struct link *lnk)
{
	return lnk->tp;
}

/* The transport of a world of one link (shm-like, CLC_TR_SHM), for a
 * test that puts it in the registry (wraps smc_transport_at()). */
extern const struct smc_transport_ops fake_ops;
/* fake_ops with completes_locally: a test sets it as w->lgr->ops. */
extern struct smc_transport_ops fake_local_ops;

/* The peer queues msg on the link of f, unread until poll(). */
void fake_queue_rx(struct fake *f, const uint8_t msg[LINK_MSG_LEN]);

/* ------------------------------------------------------------------ */
/* A proxy with one link group of one link (or a few) on the fake
 * transport. */

#define WORLD_FLOWS	8
#define WORLD_LINKS_MAX	4
#define PEER_TOKEN	0x00050001u	/* what the peer calls flow 0; +i for flow i */

/* One flow: the conn and what its owner was told. */
struct wflow {
	struct conn c;
	int app;			/* the application's end of the socket */
	int ended;			/* enum conn_end + 1; 0: not yet */
	int n_ended;			/* how often ended() came (once) */
	int end_err;
	enum fallback_reason fb;	/* ended()'s: why a declined flow goes over TCP */
	int closed;
	/* The peer's view of our receive ring. */
	struct smc_cursor peer_prod;
	/* What the peer consumed of the ring our flow writes into. */
	struct smc_cursor peer_cons;
	/* The generations the peer's CDCs name (ring moves): of our ring
	 * its producer cursor is in, of its ring its consumer cursor is. */
	uint8_t peer_prod_gen, peer_cons_gen;
	/* Set by the test: ended() takes the socket of a declined flow, as
	 * flow.c does to go on over TCP; taken_fd is it (-1: none). */
	bool take_fd;
	int taken_fd;
};

struct world {
	uv_loop_t loop;
	struct cfg cfg;
	struct loop core;
	struct proxy_stats stats;
	struct smc_net net;
	struct lgr *lgr;
	struct link *lnk;		/* links[0] */
	struct fake fake;		/* link 0's; also the link group's */
	struct fake fake_more[WORLD_LINKS_MAX - 1];	/* links 1.. */
	unsigned n_links;
	uint8_t *region;
	uint32_t region_size;
	struct wflow flows[WORLD_FLOWS];
	/* smc_net_ops.lgr_event: how often each event came, the last err. */
	unsigned lgr_events[LGR_EVENTS];
	int lgr_event_err;
	/* smc_net_ops.flow_open returns this (0: -EPERM, no flow layer). */
	int flow_open_err;
	/* smc_net_ops.no_port: how often it came, and its last dest. */
	unsigned no_port_calls;
	struct sockaddr_storage no_port_dest;
	/* The loop's end of batch runs the failures the batch scheduled, as
	 * the SMC layer's hook does (the doorbells wait for
	 * world_batch_end()). */
	struct loop_hook sched_hook;
};

/* The fake of link i. */
static inline struct fake *world_fake(struct world *w, unsigned i)
{
	return i ? &w->fake_more[i - 1] : &w->fake;
}

static inline struct wflow *wflow_of(struct conn *c)
{
	return container_of(c, struct wflow, c);
}

/* The conn_ops of the world's flows: they record in their struct wflow
 * what the flow code told their owner. */
extern const struct conn_ops world_conn_ops;

/* What the loop does at the end of every batch of events: run the
 * failures the batch scheduled and ring the doorbells of links that
 * posted (the SMC layer's hook), then free what the batch let go of. */
void world_batch_end(struct world *w);

/*
 * rx_ring: our rings (the link group's ring_size); region: how much ring
 * area the link group has; links: how many links it has (up to
 * WORLD_LINKS_MAX), each allowed 16 flows. Every send queue starts with
 * plenty of room and nothing completed; autocork is on with max_bytes
 * cork_max.
 */
struct world *world_new_links(uint32_t rx_ring, uint32_t region,
			      uint32_t cork_max, unsigned links);

struct world *world_new(uint32_t rx_ring, uint32_t region, uint32_t cork_max);

/* Runs the loop without blocking until cond holds or two seconds pass;
 * evaluates to cond. */
#define world_run_until(w, cond) ({					\
	uint64_t end_ = uv_hrtime() + 2000000000ull;			\
	while (!(cond) && uv_hrtime() < end_) {				\
		uv_run(&(w)->loop, UV_RUN_NOWAIT);			\
		if (!(cond))						\
			usleep(200);					\
	}								\
	(cond);								\
})

/* Lets the loop handle whatever is pending, for checks that something
 * did not happen. */
void world_settle(struct world *w);

/* A connected loopback pair: *app the application's end (blocking), the
 * return value ours (non-blocking, as the proxy accepts them). rcvbuf and
 * sndbuf, when not 0, shrink the app's receive and our send buffer. */
int world_socket(int *app, int rcvbuf, int sndbuf);

/* The i-th message link f posted, as a CDC / an LLC message. */
struct cdc_msg fake_cdc(const struct fake *f, unsigned i);

struct llc_msg fake_llc(const struct fake *f, unsigned i);

/* The same on link 0. */
struct cdc_msg world_cdc(struct world *w, unsigned i);

struct llc_msg world_llc(struct world *w, unsigned i);

/* A flow's original destination, 10.0.0.1:80, in the sockaddr_storage
 * that flow.c hands conn_open() (conn.c copies a whole storage). */
struct sockaddr_storage world_dest(void);

/* Flow i opened by an application, up to the FLOW_OPEN on the link (if
 * the queue has room). */
struct wflow *world_open_only(struct world *w, unsigned i, int rcvbuf, int sndbuf);

/* The peer accepts flow i with a ring of peer_ring bytes at a distinct
 * offset of its region. */
void world_accept(struct world *w, unsigned i, uint32_t peer_ring);

/* Flow i, open and accepted; the FLOW_OPEN (the one message the open
 * posted, on the link the flow was put on: the least loaded, the first of
 * equals) is taken out of that link's log so that the test sees only what
 * the flow does after. */
struct wflow *world_open(struct world *w, unsigned i, uint32_t peer_ring);

/* Every send so far on link i completed, and the transport says so. */
void world_complete_link(struct world *w, unsigned i);

void world_complete(struct world *w);

/* The peer sends flow f a CDC with its cursors and the given flags, as
 * the link's receive path hands it over; then the batch ends. */
void world_peer_cdc(struct world *w, struct wflow *f, uint8_t prod_flags,
		    uint8_t conn_flags);

/* The peer writes n bytes into flow f's receive ring at its producer
 * cursor (not yet announced). */
void world_peer_write(struct world *w, struct wflow *f, const uint8_t *b,
		      uint32_t n);

/*
 * Tears everything down the way a failing link group does, then checks
 * that every ring went back to the budget, every conn was reported
 * closed, and the loop has nothing left open.
 */
void world_free(struct world *w);

#endif
