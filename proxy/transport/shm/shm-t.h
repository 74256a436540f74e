/* SPDX-License-Identifier: MIT */
/*
 * The shm transport's own types: a link group's two regions and doorbells,
 * a worker's rendezvous socket, a rendezvous connection not yet matched.
 * Private to this folder.
 */
#ifndef SMCPROXY_SHM_T_H
#define SMCPROXY_SHM_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/epset-t.h"
#include "core/list.h"
#include "core/loop-t.h"
#include "shm-wire.h"

struct link;
struct lgr;
struct smc_net;

struct shm_lgr;

struct shm_link {
	struct link *lnk;
	struct shm_lgr *sg;
	int efd_rx;			/* ours: the peer rings it */
	int efd_tx;			/* the peer's */
	struct epset_entry ev;
	struct shm_queue *rxq;		/* in our region */
	struct shm_queue *txq;		/* in the peer's */
	uint32_t tx_prod;
	uint32_t rx_cons;
	bool tx_waiting;		/* txq->waiting is ours, not yet cleared */
};

struct shm_lgr {
	struct lgr *lgr;
	int memfd;
	uint8_t *local;
	uint32_t local_size;
	uint8_t *peer;
	uint32_t peer_size;
	int sock;			/* rendezvous, then liveness */
	struct epset_entry sock_ev;
	bool up;
	bool blocked;			/* the peer made a doorbell blocking */
	struct shm_link links[LGR_LINKS_MAX];
};

/* A worker's side of the transport (net->tp[]): the rendezvous socket. */
struct shm_worker {
	int fd;				/* -1: not listening */
	struct epset_entry ev;
	struct smc_net *net;
	char name[64];			/* its basename in shm.dir */
	struct list_head rvs;		/* struct shm_rv */
	unsigned n_rvs;
};

/* A rendezvous connection before its hello named a link group. */
struct shm_rv {
	struct list_head node;		/* shm_worker.rvs, oldest first */
	struct loop_defer defer;
	struct smc_net *net;
	int fd;
	uint64_t deadline_ms;		/* its hello must come by then */
	struct epset_entry ev;
};

#endif
