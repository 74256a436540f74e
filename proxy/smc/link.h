/* SPDX-License-Identifier: MIT */
/*
 * A link: the message channel of a link group that its flows share
 * (link-t.h). Conns hand it work; it posts what the transport's send queue
 * has room for and keeps the rest, without allocating, until the transport
 * reports progress.
 */
#ifndef SMCPROXY_LINK_H
#define SMCPROXY_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include "conn-t.h"
#include "link-t.h"

void link_init(struct link *lnk, struct lgr *lgr, unsigned idx);
/* Whether nothing may be posted on lnk: it or its group is down, or goes
 * down at the end of this batch (lgr.h, "Failure"). */
bool link_failing(const struct link *lnk);
/* Work for c (CONN_TX_*): posted now if the queue has room, else later. */
void link_conn_work(struct conn *c, unsigned work);
/* Forgets c's pending work and cork (it is going away). */
void link_conn_forget(struct conn *c);
/* Declines a FLOW_OPEN that got no conn. */
void link_post_decline(struct link *lnk, uint32_t token, unsigned reason);
/*
 * A TEST_LINK, when the link's queue has room (whether or not flows wait
 * for it: a busy link proves nothing of the peer daemon). The peer answers
 * with a TEST_LINK_RSP, and any message heard keeps the link alive
 * (liveness.c); over RDMA a vanished host also makes the send fail.
 */
void link_post_test(struct link *lnk, uint32_t cookie);
/*
 * A DELETE_LINK (flags LLC_DEL_*) on lnk, ahead of any work waiting for
 * room: 0 once posted, -EAGAIN without room, -ENOLINK on a failing link,
 * or the transport's error (the group's failure is then scheduled).
 */
int link_post_delete(struct link *lnk, uint8_t flags);
/* Whether c has sends the transport has not completed. */
bool link_conn_unacked(const struct conn *c);
/* Holds c's unannounced bytes until its sends complete. */
void link_cork(struct conn *c);
/* c ended and waits for its last send to complete before it is released
 * (a transport with failover could have to send it again). */
void link_drain(struct conn *c);

/* From the transport: one received message; sends completed or queue
 * space came free. */
void link_rx(struct link *lnk, const uint8_t *msg, size_t len);
void link_tx_progress(struct link *lnk);
/* Rings the transport's doorbell if anything was posted. */
void link_flush(struct link *lnk);

#endif
