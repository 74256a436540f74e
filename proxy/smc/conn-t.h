/* SPDX-License-Identifier: MIT */
/*
 * Types of an SMC-mode flow's data path: one application socket joined to
 * one flow on a link (the kernel's struct smc_connection). Types only.
 */
#ifndef SMCPROXY_CONN_T_H
#define SMCPROXY_CONN_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cdc-t.h"
#include "fallback-t.h"
#include "core/loop-t.h"
#include "core/epset-t.h"
#include "core/list.h"
#include "llc-t.h"
#include "rmb-t.h"

struct lgr;
struct link;
struct conn;

enum conn_state {
	CONN_OPENING,		/* opener: FLOW_OPEN sent, waiting for the accept */
	CONN_CONNECTING,	/* acceptor: connecting to the destination */
	CONN_ACTIVE,
	CONN_CLOSED,		/* ended; waiting to be freed */
};

/* How a conn ended, reported once through conn_ops.ended. */
enum conn_end {
	CONN_END_CLEAN,		/* FIN both ways, everything delivered */
	CONN_END_RESET,		/* RST from the app, or ABORT from the peer */
	CONN_END_CONNECT_FAILED,/* acceptor: the destination refused */
	CONN_END_CONNECT_TIMEOUT,
	CONN_END_PROTOCOL,	/* the peer broke the protocol: reset */
	CONN_END_LINK_DOWN,	/* the link group failed: reset */
	CONN_END_PEER_STOPPED,	/* the peer daemon stopped, closing the group: reset */
	CONN_END_ABORTED,	/* conn_abort(): drain ran out, idle... */
	CONN_END_DECLINED,	/* opener: the peer declined the flow */
};

/* Work a conn has for its link, posted when the send queue has room. */
#define CONN_TX_OPEN	(1u << 0)	/* LLC FLOW_OPEN */
#define CONN_TX_ACCEPT	(1u << 1)	/* LLC FLOW_ACCEPT */
#define CONN_TX_CDC	(1u << 2)	/* cursors or flags changed */
#define CONN_TX_MOVE	(1u << 3)	/* LLC RMB_MOVE: our next ring */

struct conn_ops {
	/* Once, when the conn stops moving data. fb: why a flow that ends
	 * CONN_END_DECLINED goes on over TCP (nothing of it crossed the
	 * link): the peer's decline, or its group went down under it
	 * (FB_NONE for any other end); err: a socket error. */
	void (*ended)(struct conn *c, enum conn_end how, int err, enum fallback_reason fb);
	/* Once, when the conn may be freed (no event of this batch can
	 * still reach it). */
	void (*closed)(struct conn *c);
	/* A bypassed socket (bypass_step): total bytes read from it so
	 * far, every bypass_step of them. */
	void (*bypass_read)(struct conn *c, uint64_t total);
};

struct conn {
	struct lgr *lgr;
	struct link *link;
	const struct conn_ops *ops;
	struct list_head lgr_node;	/* lgr->conns */
	uint32_t token;			/* ours: index | generation << 16 */
	uint32_t peer_token;
	enum conn_state state;
	int fd;				/* the application (or destination) socket */
	/* The socket is joined in the bypass of the local hop
	 * (intercept/bypass.h): read to EAGAIN, as a short read says nothing
	 * of TCP's queue behind the redirected one, and ops->bypass_read
	 * told at bypass_next, every bypass_step bytes. 0: a plain socket. */
	uint64_t bypass_step, bypass_next;
	struct epset_entry ev;
	uint64_t deadline_ms;		/* OPENING / CONNECTING */
	struct sockaddr_storage dest;	/* the flow's original destination */
	/* Opener: the application's address, sent in FLOW_OPEN (family 0:
	 * none). Acceptor: the address our socket to dest is bound to. */
	struct sockaddr_storage client;

	/* Receive side: our ring, which the peer writes. */
	struct rmb *rmb;
	uint8_t *rx_ring;
	struct smc_cursor rx_prod;	/* peer's producer cursor: data up to here */
	struct smc_cursor rx_cons;	/* delivered to the socket */
	struct smc_cursor rx_cons_sent;	/* last consumer cursor we announced */
	/* Ring moves (smcproxy-protocol(7), "Ring moves"): the larger ring
	 * offered to the peer, ours until it switches (a CDC of generation
	 * rx_gen + 1), then it replaces rmb. */
	struct rmb *rx_next;
	uint8_t rx_gen;			/* our ring's generation */

	/* Send side: the peer's ring (or its mirror). */
	uint8_t *tx_ring;
	uint32_t tx_size;
	uint32_t tx_peer_off;		/* the peer ring's offset in its region */
	void *tx_priv;			/* the transport's, per conn */
	struct smc_cursor tx_prod;	/* read from the socket into the ring */
	/* What the transport was asked to write to the peer: behind tx_prod
	 * while autocork holds the bytes, so that held bytes cost no write
	 * (over rdma, an RDMA WRITE each) until the CDC that announces them. */
	struct smc_cursor tx_prod_written;
	struct smc_cursor tx_prod_sent;	/* last producer cursor announced */
	struct smc_cursor tx_cons;	/* peer's consumer cursor, as announced */
	/* The peer surely has every byte before this: its consumer cursor,
	 * or the producer cursor of a CDC whose send completed. Failover
	 * carries again only what lies after it. */
	struct smc_cursor tx_prod_done;
	uint32_t tx_last_seq;		/* link sequence of our last CDC */
	/* The peer offered a new ring (tx_next, already attached as
	 * tx_next_ring/tx_next_priv): nothing more goes into the old one,
	 * and we switch once the peer consumed all of it. */
	bool tx_move;
	uint8_t tx_gen;			/* generation of the peer's ring we write */
	struct llc_rmb tx_next;
	uint8_t *tx_next_ring;
	void *tx_next_priv;
	bool tx_unacked_valid;		/* tx_last_seq is set */

	/* Flags. */
	bool app_eof;			/* the socket sent FIN */
	bool fin_sent;			/* DONE_WRITING posted */
	bool peer_fin;			/* DONE_WRITING received */
	bool app_shut;			/* FIN passed to the socket */
	bool peer_closed;		/* CLOSED or ABORT received */
	bool closed_pending;		/* post CLOSED: we stopped writing the peer's ring */
	bool abort_pending;		/* post ABORT and close */
	bool stop_abort;		/* ... with CDC_CF_STOPPING: our stop resets it */
	bool write_blocked;		/* peer's ring was full when we had data */
	bool peer_write_blocked;	/* the peer told us our ring was full */
	bool out_blocked;		/* socket returned EAGAIN on write */
	bool in_pending;		/* socket readable, not drained (ring full) */
	bool rdhup;			/* the socket reported FIN: read to the end */
	bool urgent;			/* urgent data seen: reads stop short at the mark */
	bool corked;			/* on link->corked */
	bool late;			/* the open's answer is overdue: last chance */

	unsigned tx_work;		/* CONN_TX_* */
	uint8_t end_sent;		/* CDC_CF_CLOSED or _ABORT once posted */
	bool peer_heard;		/* a CDC came from the peer */
	bool resend_open;		/* failover: FLOW_OPEN again, marked resent */
	struct list_head tx_node;	/* link->tx_wait */
	struct list_head cork_node;	/* link->corked */
	struct list_head drain_node;	/* link->draining: last send in flight */
	struct list_head rx_node;	/* net->rx_ready: bytes for the socket */
	struct list_head wait_node;	/* lgr->connecting */
	struct list_head grown_node;	/* lgr->grown: our ring is larger than ring_init */
	struct loop_defer defer;

	uint32_t last_read;		/* what the last fill read (cork.h) */

	uint64_t bytes_tx;		/* socket -> peer */
	uint64_t bytes_rx;		/* peer -> socket */
	uint64_t last_active_ms;
};

#endif
