/* SPDX-License-Identifier: MIT */
/* Counters of the data plane. Types only. */
#ifndef SMCPROXY_STATS_T_H
#define SMCPROXY_STATS_T_H

#include <stdint.h>

#include "core/counter.h"
#include "clc-t.h"
#include "fallback-t.h"	/* enum flow_mode, enum fallback_reason */
#include "rmb-t.h"		/* RMB_CLASSES */

/*
 * One set per worker. Only the owning worker writes (counter_inc() and
 * friends); the stats socket on the main thread reads with relaxed loads,
 * without a lock (core/counter.h). Only counter_t members: the daemon
 * sums the struct as an array of them.
 */
struct proxy_stats {
	counter_t flows_accepted;
	counter_t flows_active[FLOW_MODE__MAX];
	counter_t flows_closed[FLOW_MODE__MAX];
	counter_t fallback[FB__MAX];
	counter_t bytes_in;		/* from redirected clients toward servers */
	counter_t bytes_out;		/* from servers back to clients */
	counter_t connect_failures;	/* outbound connect refused/unreachable */
	counter_t connect_timeouts;	/* outbound connect took too long */
	counter_t connect_no_port;	/* outbound connect found no free source port */
	counter_t connect_client_addr;	/* flows connected to the server from the client's address */
	counter_t connect_host_addr;	/* ... from this host's own address */
	counter_t connect_port_taken;	/* ... not from the client's port (held): the kernel's */
	counter_t resets;		/* flows ended by an RST on either leg */
	counter_t accept_pauses;		/* accept paused on EMFILE/ENFILE/ENOBUFS */
	counter_t loops_refused;		/* not redirected, or aimed at ourselves */
	counter_t flows_bypassed;	/* accepted joined in the bypass of the local hop */
	counter_t idle_timeouts;		/* flows closed by relay.idle_timeout */

	/* Link groups and the SMC data plane. */
	counter_t lgr_handshakes;	/* link groups we proposed and got */
	counter_t lgr_accepted;		/* link groups peers proposed and we took */
	counter_t lgr_failures;		/* link groups lost (peer gone, bad message) */
	counter_t lgr_peer_closes;	/* link groups the peer closed, stopping (DELETE_LINK) */
	counter_t lgr_closes;		/* link groups we closed, stopping (not failures) */
	counter_t negative_cache_hits;	/* flows sent to tcp by the negative cache */
	counter_t declines_sent[CLC_DECL__MAX];	/* handshake and flow declines */
	counter_t declines_received[CLC_DECL__MAX];
	counter_t auth_failures;		/* a peer's proof of auth.psk_file was wrong */
	counter_t proposals_refused;	/* from outside the peer prefixes */
	counter_t handshakes_refused;	/* over the limits of handshakes in progress */
	counter_t handshakes_evicted;	/* silent handshakes closed to make room */
	counter_t groups_refused;	/* over the limits of inbound link groups */
	counter_t rendezvous_refused;	/* links naming no waiting group, or from another address */
	counter_t dest_refused;		/* flow opens aimed at loopback or another host */
	counter_t ports_refused;	/* ... of them, to a port the peer's allow list lacks */
	counter_t floods_refused;	/* groups failed: too many declined opens (lgr.h) */
	counter_t bad_messages;		/* malformed handshake or link messages */
	counter_t cdc_sent;
	counter_t cdc_received;
	counter_t window_updates;	/* CDC sent only to return ring space */
	counter_t tx_batches;		/* CDCs that announced new bytes */
	counter_t tx_batch_bytes;	/* ... the bytes they announced */
	counter_t sock_writes;		/* writes of the peer's bytes to our socket */
	counter_t cork_events;		/* sends held back by autocork */
	counter_t sock_reads;		/* reads of our sockets for the peer */
	counter_t reads_deferred;	/* ... left to the completion of a send (cork.h) */
	counter_t ring_full_local;	/* our receive ring filled: the peer waited */
	counter_t ring_full_remote;	/* the peer's ring filled: we stopped reading */
	counter_t ring_bytes_limit;	/* gauge: this worker's share of buffers.pool */
	counter_t ring_bytes_carved;	/* gauge: rings carved from it, in use or cached */
	counter_t ring_bytes_in_use;	/* gauge: rings flows hold */
	counter_t ring_bytes_pinned;	/* gauge: rings and mirrors registered (rdma) */
	counter_t rings_used[RMB_CLASSES];	/* gauge: rings flows hold, by size class */
	counter_t rings_free[RMB_CLASSES];	/* gauge: free rings kept warm, by size class */
	counter_t ring_shortages;	/* times the budget ran out (episodes) */
	counter_t rings_refused;	/* flows that got no ring: out_of_memory */
	counter_t rings_refused_share;	/* ... of them, their peer over its fair share */
	counter_t rings_grown;		/* our ring of a flow replaced by a larger one */
	counter_t rings_shrunk;		/* ... by a small one again, the flow idle */
	counter_t ring_moves_refused;	/* the peer's new ring not taken (no mirror) */
	counter_t flows_reset_link;	/* flows reset because their link group failed */
	counter_t flows_reset_peer_stopped;	/* ... because its peer stopped (DELETE_LINK) */
	counter_t links_silent;		/* links down: the peer said nothing for links.dead_after */
	counter_t doorbells_saved;	/* shm: the peer was running, no doorbell needed */
	/* rdma */
	counter_t link_failovers;	/* links lost with a survivor to move flows to */
	counter_t flows_moved;		/* flows moved to a surviving link */
	counter_t rdma_link_failures;	/* rdma links failed (any cause) */
	counter_t rdma_async_events;	/* device async events read (worker 0) */
	counter_t rdma_links_draining;	/* gauge: failed links waiting for their flush */
	counter_t rdma_links_stuck;	/* their flush never came: released anyway */
	counter_t rdma_msg_completions;	/* our messages' send completions polled */
	counter_t rdma_msg_complete_us;	/* ... microseconds from doorbell to poll, summed */
};

#endif
