/* SPDX-License-Identifier: MIT */
/*
 * Types of the rdma transport, private to this folder: the worker's device,
 * a link (its queue pair and send queue), a link group's regions, a
 * flow's mirror. Shared by the files that split the transport by concern
 * (rdma-int.h); nothing outside proxy/transport/rdma/ sees them. Types only.
 */
#ifndef SMCPROXY_RDMA_T_H
#define SMCPROXY_RDMA_T_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "cq-t.h"
#include "core/list.h"
#include "core/loop-t.h"
#include "smc/lgr-t.h"
#include "smc/rmb-t.h"

struct conn;
struct link;
struct lgr;
struct smc_net;
struct rdma_cm_id;
struct rdma_event_channel;

enum rdma_link_state {
	RL_CONNECTING,
	RL_UP,
	RL_DRAINING,		/* QP in error: waiting for the markers */
};

struct rdma_link;

struct rdma_tx_slot {
	struct cq_entry cqe;
	struct rdma_link *rl;
	uint32_t idx;		/* sq_queued value when queued */
	uint32_t seq;		/* message sequence, when msg */
	uint64_t posted_us;	/* when its doorbell rang, when msg */
	bool msg;
	bool marker;
};

struct rdma_rx_slot {
	struct cq_entry cqe;
	struct rdma_link *rl;
	unsigned i;
	bool marker;
};

/* Per worker: the device, the listener and the CQ pool. */
struct rdma_dev {
	struct smc_net *net;
	struct ibv_context *ctx;
	uint8_t port;
	union ibv_gid gid;
	char name[32];
	bool relaxed_ok;
	struct rdma_event_channel *ech;
	struct epset_entry ech_ev;
	struct rdma_cm_id *listen_id;
	uint16_t cm_port;
	bool owns_async;	/* worker 0 reads the device's async events */
	struct epset_entry async_ev;
	unsigned port_gen;	/* the async generation last acted on */
	struct cq_pool cqs;
	struct rmb_budget tx_budget;	/* mirrors: buffers.pool, like the rings */
	struct list_head zombies;	/* links waiting for their markers */
	unsigned n_zombies;
};

struct rdma_lgr;

struct rdma_link {
	struct rdma_dev *dev;
	struct rdma_dom *dom;		/* its group's, held until freed */
	struct rdma_lgr *rg;		/* NULL once draining */
	struct link *lnk;		/* NULL once draining */
	enum rdma_link_state state;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct cq *cq;
	uint32_t peer_qpn;
	unsigned sq_depth, rq_depth;
	unsigned max_inline;
	bool use_inline;
	bool quiet;			/* counted in cq->n_quiet (rl_quiet_update()) */
	/* Send queue: slots in queue order. */
	uint32_t sq_queued;		/* work requests queued so far */
	uint32_t sq_posted;		/* of which handed to the device */
	uint32_t sq_done;		/* known completed */
	uint32_t last_signalled;	/* sq_queued at the last signalled WR */
	uint32_t msg_done;		/* message sequence not yet completed */
	struct list_head write_wait;	/* rdma_conns with unqueued bytes */
	struct list_head quarantine;	/* mirrors not yet safe to reuse */
	struct rdma_tx_slot *tx;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	struct rdma_rx_slot *rx;
	uint8_t *bufs;			/* sq_depth + rq_depth messages */
	struct ibv_mr *bufs_mr;
	unsigned markers_left;
	bool markers_lost;		/* one could not be posted */
	bool held;			/* its CQ is polled for it: not freed meanwhile */
	uint64_t last_tx_ms;		/* last doorbell: the link was used */
	uint64_t drain_since_ms;
	bool ever_up;
	struct list_head zombie_node;	/* dev->zombies, once draining */
	struct loop_defer defer;
};

struct rdma_lgr {
	struct lgr *lgr;
	struct rdma_dev *dev;
	struct rdma_dom *dom;
	uint8_t *rx;			/* our rings: the peer writes here */
	uint32_t rx_size;
	uint8_t *tx;			/* mirrors of the peer's rings */
	uint32_t tx_size;
	struct rmb_pool tx_pool;
	struct rmb_peer *tx_peer;	/* the peer's account in dev->tx_budget */
	bool have_peer;
	uint64_t peer_addr;
	uint32_t peer_size;
	uint16_t peer_port;		/* client: the peer's listener */
	bool peer_solicits;		/* its messages raise solicited events */
	unsigned n_up;
	struct rdma_link *links[LGR_LINKS_MAX];
};

/*
 * The protection domain of one link group: its rings, its links' queue
 * pairs and buffers, so that an rkey a peer got for one group's ring is
 * useless over another group's queue pair. Links that drain after their
 * group closed hold it until they are freed.
 */
struct rdma_dom {
	struct ibv_pd *pd;
	unsigned refs;
};

/* Per flow: the mirror and the bytes not yet queued as writes. */
struct rdma_conn {
	struct conn *conn;
	struct rmb *mirror;
	uint32_t rkey;			/* of the peer's ring */
	uint32_t wr_pos;		/* ring offset of the first unqueued byte */
	uint32_t pending;		/* bytes from wr_pos not yet queued */
	struct list_head wait_node;	/* rl->write_wait */
};

/* A mirror that writes may still read: back to the pool once sq_done
 * passes idx. */
struct rdma_quarantine {
	struct list_head node;
	struct rmb *mirror;
	struct rdma_lgr *rg;
	uint32_t idx;
};

#endif
