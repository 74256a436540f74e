/* SPDX-License-Identifier: MIT */
/*
 * The link transport interface: all that flow and link-group logic asks of
 * a transport (shm here, rdma next), so that a new one plugs in without
 * touching them. Flow logic never includes a transport's own header.
 * Types only.
 *
 * A transport moves two things: 64-byte messages (CDC and LLC) over a
 * link's send queue, and flow bytes into the peer's receive rings. It
 * reports back through link.h: link_rx() for each message received,
 * link_tx_progress() when sends completed or queue space came free,
 * lgr_fail() when the link group is lost.
 */
#ifndef SMCPROXY_TRANSPORT_T_H
#define SMCPROXY_TRANSPORT_T_H

#include <stdbool.h>
#include <stdint.h>

#include "cdc-t.h"
#include "llc-t.h"
#include "fallback-t.h"

struct lgr;
struct link;
struct conn;

struct smc_transport_ops {
	const char *name;		/* "shm", "rdma" */
	enum flow_mode mode;
	/* Free slots in the link's send queue now. */
	unsigned (*tx_room)(struct link *lnk);
	/*
	 * Queues one message on the link's send queue; only called when
	 * tx_room() said there is room. The message is sequence number
	 * lnk->tx_seq (the caller increments it). -errno fails the link group.
	 */
	int (*post)(struct link *lnk, const uint8_t msg[LINK_MSG_LEN]);
	/*
	 * Makes everything posted since the last call reach the peer (shm:
	 * one doorbell). The link group calls it once per event-loop batch.
	 */
	void (*flush)(struct link *lnk);
	/* Sequence number of the first send not yet completed. */
	uint32_t (*tx_done)(struct link *lnk);
	/*
	 * Asks for one link_tx_progress() once a send completes. The caller
	 * checks tx_done() again afterwards, so a completion that raced the
	 * request is not lost.
	 */
	void (*want_progress)(struct link *lnk);
	/*
	 * Points c->tx_ring at the memory the flow writes its outgoing bytes
	 * into, for the peer's ring rmb: shm maps the peer's ring itself (the
	 * one copy is the socket read); rdma a registered send buffer of the
	 * same size, mirrored by RDMA writes. -EINVAL when rmb lies outside
	 * the peer's region.
	 */
	int (*conn_attach)(struct conn *c, const struct llc_rmb *rmb);
	void (*conn_detach)(struct conn *c);
	/*
	 * c was moved to c->link from a failed link (may be NULL for a
	 * transport whose links cannot fail alone): carry again what the
	 * peer may not have, [c->tx_prod_done, c->tx_prod).
	 */
	void (*conn_moved)(struct conn *c);
	/*
	 * Bytes [off, off + len) of c->tx_ring are final: carry them into
	 * the peer's ring (rdma: an RDMA WRITE; shm: nothing to do). Wrapped
	 * ranges come as two calls.
	 */
	int (*write)(struct conn *c, uint32_t off, uint32_t len);
	/*
	 * The event loop is about to block (may be NULL). A transport whose
	 * peers skip the doorbell while we run handles what came meanwhile
	 * when run is true and says so (the caller then ends the batch and
	 * asks again), else makes sure the loop wakes for it.
	 */
	bool (*idle)(struct lgr *lgr, bool run);
	/* Releases the transport's state of a link group; calls nothing back. */
	void (*lgr_close)(struct lgr *lgr);
};

#endif
