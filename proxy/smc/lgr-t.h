/* SPDX-License-Identifier: MIT */
/*
 * Types of a link group: everything shared with one peer daemon in one
 * role (SMC's struct smc_link_group). Types only.
 */
#ifndef SMCPROXY_LGR_T_H
#define SMCPROXY_LGR_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "clc-t.h"
#include "core/loop-t.h"
#include "core/epset-t.h"
#include "link-t.h"
#include "core/list.h"
#include "rmb-t.h"
#include "fallback-t.h"
#include "transport-t.h"

#define LGR_LINKS_MAX		16
#define LGR_CONNS_MAX		65535	/* token index is 16 bits; 0 unused */

/* SMC_CLNT / SMC_SERV: who proposed. Flows are opened by the proposer. */
enum lgr_role {
	LGR_ROLE_CLIENT,
	LGR_ROLE_SERVER,
};

enum lgr_state {
	LGR_HANDSHAKE,		/* the control-port exchange runs */
	LGR_RENDEZVOUS,		/* the transport connects its links */
	LGR_ACTIVE,
	LGR_NEGATIVE,		/* client: declined or silent; retry after neg_until_ms */
	LGR_DOWN,		/* failed or closing; freed when its flows are gone */
};

/* Where the handshake of a link group is. */
enum lgr_hs_step {
	HS_CONNECTING,		/* client: TCP connect to the control port */
	HS_WAIT_ACCEPT,		/* client: proposal sent */
	HS_WAIT_READY,		/* client: confirm sent */
	HS_WAIT_PROPOSAL,	/* server */
	HS_WAIT_CONFIRM,	/* server: accept sent */
	HS_DONE,
};

struct lgr_hs {
	int fd;				/* control connection, -1 when none */
	struct epset_entry ev;
	enum lgr_hs_step step;
	uint16_t have;			/* bytes in buf */
	uint8_t buf[CLC_MSG_MAX];
	struct clc_proposal prop;	/* ours (client) or the peer's (server) */
	struct clc_accept acc;		/* the peer's (client) or ours (server) */
	struct clc_endpoints ep;	/* the control connection's two ends */
};

struct smc_net;

struct lgr {
	struct list_head node;		/* proxy->lgrs */
	struct smc_net *net;
	enum lgr_role role;
	enum lgr_state state;
	/* The peer daemon: its control address (client), or the address its
	 * proposal came from (server). */
	struct sockaddr_storage peer;
	/* Our end of the control connection (v4-mapped unmapped): the
	 * address this host reaches the peer from, which a loopback client
	 * stands for in FLOW_OPEN (conn_open()). */
	struct sockaddr_storage local;
	/* The same for destinations of the other family (a via of the
	 * other family): this host's route source toward the first such
	 * destination, looked up once (family 0: not yet). */
	struct sockaddr_storage local_other;
	uint8_t id[CLC_LGR_ID_LEN];
	uint8_t peer_host_id[CLC_HOST_ID_LEN];
	const struct smc_transport_ops *ops;
	void *tp;			/* the transport's */
	/* The group's secret (clc_link_secret()), derived after a good
	 * handshake, which the transport's rendezvous messages prove. Keyed
	 * by auth.psk_file when has_secret; else from the nonces alone (rdma
	 * still requires its tag, shm sends zeros: smcproxy-protocol(7)). */
	bool has_secret;
	uint8_t secret[CLC_SECRET_LEN];
	struct lgr_hs hs;
	uint64_t deadline_ms;		/* handshake or rendezvous */
	uint64_t created_ms;

	/* Negative cache (client): why the last attempt failed. */
	enum fallback_reason neg_reason;
	uint64_t neg_until_ms;

	struct list_head waiting;	/* client: flows waiting for the handshake */
	struct link links[LGR_LINKS_MAX];
	unsigned n_links;
	unsigned max_flows_per_link;
	uint32_t ring_size;		/* our rings' largest size; the peer's come with each flow */
	uint32_t ring_init;		/* a new flow's ring (ring_size without ring_move) */
	bool ring_move;			/* both sides move rings (CLC_FEAT_RING_MOVE) */
	/* The peer takes LLC_DELETE_LINK (CLC_FEAT_DELETE): our stop tells
	 * it so. peer_stopped: its DELETE_LINK (ALL, ORDERLY) came, and the
	 * group's end is an orderly close, not a failure. */
	bool peer_delete;
	bool peer_stopped;
	/* The peer takes CDC_CF_STOPPING (CLC_FEAT_STOP_ABORT): the resets
	 * of our stop say so. */
	bool peer_stop_abort;
	/* The peer takes decline reason CLC_DECL_STOPPING
	 * (CLC_FEAT_DECL_STOPPING): our drain's declines say so. */
	bool peer_decl_stopping;
	bool client_addr;		/* FLOW_OPEN names the client (CLC_FEAT_CLIENT_ADDR) */

	/* Local memory: the region the peer writes into. */
	uint8_t *region;
	uint32_t region_size;
	struct rmb_pool rmbs;
	struct rmb_peer *rmb_peer;	/* the peer's account in net->rmb_budget */

	/* Conns by token index; gen[i] is the generation of index i. */
	struct conn **conns;
	uint16_t *gen;
	unsigned conns_cap;		/* indices 1..conns_cap-1 */
	unsigned n_conns;
	unsigned next_index;
	struct list_head conn_list;
	struct list_head connecting;	/* conns with a deadline */
	/* Conns whose ring grew: lgr_sweep() offers an idle one a small ring
	 * again. Idle flows on small rings are on no list and cost nothing. */
	struct list_head grown;

	uint64_t flows_total;
	uint64_t bytes_tx, bytes_rx;
	int fail_err;			/* why it went down */
	/* A failure raised inside a receive, completion or post path waits
	 * for the end of the batch (lgr.h, "Failure"): fail_sched is its
	 * first error (0: none), and the group is on net->lgrs_sched while
	 * sched says so (a failure, or links to take down). */
	int fail_sched;
	/* Messages handled in batch rx_batch of net (lgr_rx_room()), and
	 * flow opens declined since decl_since_ms (LGR_DECLINES_MAX). */
	uint64_t rx_batch;
	unsigned rx_in_batch;
	uint64_t decl_since_ms;
	unsigned decl_in_window;
	bool sched;
	struct list_head sched_node;
	/* A transport's account of why its rendezvous failed, for the log
	 * (fallback reason no_rendezvous); "" when it has none. */
	char why[320];
	struct loop_defer defer;
};

#endif
