/* SPDX-License-Identifier: MIT */
/*
 * An SMC-mode flow's data path (conn-t.h). The socket's bytes go straight
 * into the peer's ring (one copy, the socket read); bytes the peer wrote
 * into our ring go straight to the socket (one copy, the socket write).
 */
#ifndef SMCPROXY_CONN_H
#define SMCPROXY_CONN_H

#include <sys/socket.h>

#include "conn-t.h"
#include "llc-t.h"

struct smc_net;

/*
 * Opener: puts the application socket fd on a link of lgr and posts
 * FLOW_OPEN for dest, naming client (the application's address, or NULL)
 * where the group carries it. The socket is not read until the peer
 * accepts. Returns 0, or -EMFILE-like errors with nothing changed (fd
 * untouched): -ENOSPC when the link group is full, -ENOMEM when no ring
 * is left.
 */
int conn_open(struct conn *c, struct lgr *lgr, int fd, const struct sockaddr *dest,
	      const struct sockaddr *client, const struct conn_ops *ops);
/*
 * Acceptor: for the peer's FLOW_OPEN m on lnk, connects a new socket to
 * dest and posts FLOW_ACCEPT at once; bytes the peer sends meanwhile wait
 * in our ring. The socket comes from m's client address (IP_TRANSPARENT,
 * the net's client_mark) where the host routes it back and the config
 * allows, else from dest's own address, and from the client's port where
 * it is free (conn_socket_connect()). -errno with nothing changed (the
 * caller declines the flow).
 */
int conn_accept(struct conn *c, struct link *lnk, const struct llc_flow_open *m,
		const struct sockaddr *dest, const struct conn_ops *ops);
/* Resets the flow: RST to the socket, ABORT to the peer; while the daemon
 * stops (smc_net.stopping), an ABORT that says so where the peer takes it
 * (CDC_CF_STOPPING). */
void conn_abort(struct conn *c);
/* The link group failed: RST to the socket; ends with CONN_END_LINK_DOWN. */
void conn_link_down(struct conn *c);
/* c's link failed: carry on over to, from the last confirmed cursor. */
void conn_move_link(struct conn *c, struct link *to);
/* A resent FLOW_OPEN named c (acceptor): the accept goes again, unless c
 * already ended and said so. */
void conn_resend_accept(struct conn *c);
/* Closes nothing and hands back the socket of a declined OPENING conn. */
int conn_take_fd(struct conn *c);

/* From the link's receive path. */
void conn_on_accept(struct conn *c, const struct llc_flow_accept *m);
void conn_on_decline(struct conn *c, unsigned reason);
void conn_on_cdc(struct conn *c, const struct cdc_msg *m);
/* The end of a batch: the conns whose CDCs announced bytes in it write
 * them to their sockets, once each (smc_net__flush()). */
void conn_rx_run(struct smc_net *net);
void conn_on_move(struct conn *c, const struct llc_rmb_move *m);
/* From the link's send path: builds the message for one CONN_TX_* bit. */
void conn_build_msg(struct conn *c, unsigned work, uint8_t msg[LINK_MSG_LEN]);
/* Before c's CDC: the transport writes what the CDC will announce. */
int conn_write_out(struct conn *c);
/* One of c's messages was posted. */
void conn_tx_posted(struct conn *c);
/* Sends completed on c's link: push what autocork holds. */
void conn_tx_progress(struct conn *c);
/* Deadline passed (OPENING or CONNECTING). */
void conn_on_deadline(struct conn *c);
/*
 * From the group's sweep, for a conn on lgr->grown: once the flow has
 * been idle for CONN_SHRINK_IDLE_MS with its ring empty, offers the peer
 * a ring of ring_init bytes through the same move as growing (LLC
 * RMB_MOVE), and the large ring goes back to the budget at the switch.
 * Busy or not, a flow holding more than its part of the growth share
 * by over a quarter (it grew while few others had) is offered a ring of
 * its part (rmb_get_fair()).
 */
void conn_maybe_shrink(struct conn *c, uint64_t now);

const char *conn_state_name(const struct conn *c);

#endif
