/* SPDX-License-Identifier: MIT */
/* Types of a flow: one redirected application connection. Types only. */
#ifndef SMCPROXY_FLOW_T_H
#define SMCPROXY_FLOW_T_H

#include <stdint.h>
#include <sys/socket.h>

#include "core/list.h"
#include "relay/relay-t.h"
#include "smc/conn-t.h"
#include "smc/net-t.h"
#include "smc/stats-t.h"

struct proxy;
struct lgr;

/* The kernel's struct smc_connection is the nearest SMC term; a flow also
 * owns the application socket, which SMC's socket layer does. */
struct flow {
	struct list_head node;		/* in proxy->flows */
	struct proxy *proxy;
	uint64_t id;
	enum flow_mode mode;
	enum fallback_reason reason;
	struct sockaddr_storage client;	/* the application's address */
	struct sockaddr_storage dest;	/* its original destination */
	/* Local address of our outbound socket, and the chain of
	 * proxy->out_hash it is on: how a connection of ours that a
	 * redirect rule sent back to us is recognised. */
	struct sockaddr_storage out_local;
	struct flow *out_next;
	uint64_t created_ms;
	/* Parked while the link group to its peer does its handshake. */
	struct lgr *lgr;
	struct lgr_waiter waiter;	/* on lgr->waiting */
	int fd;				/* the application socket, while parked */
	bool peer_opened;		/* a peer daemon opened it: we are the acceptor */
	/* Our accepted socket is joined in the bypass of the local hop
	 * (intercept/bypass.h): never spliced, its credit refilled as it is
	 * read; bypass_base is what a declined conn read before the relay. */
	bool bypass;
	uint64_t bypass_base;
	/* The parts that carry it, each freed in its own time: the flow
	 * goes when neither is live. A flow the peer declined starts on a
	 * conn and ends on the relay. */
	bool conn_live, relay_live;
	bool conn_carries;		/* the conn (not the relay) carries the flow */
	struct conn conn;		/* modes shm, rdma */
	struct relay relay;		/* mode tcp */
};

#endif
