/* SPDX-License-Identifier: MIT */
/*
 * What the files of the shm transport call of each other (as rdma-int.h):
 * the ops each one implements for the table in shm.c, and the few helpers
 * that cross a file boundary. Everything else stays static in its file.
 * Private to this folder.
 *
 *   shm.c         the ops table, the data path (queues, doorbells, the
 *                 running flag) and receiving
 *   shm_region.c  a group's region: ours made, the peer's mapped
 *   shm_rv.c      the rendezvous (client and server) and the handshake's
 *                 address
 */
#ifndef SMCPROXY_SHM_INT_H
#define SMCPROXY_SHM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm-t.h"
#include "shm.h"
#include "smc/net.h"
#include "smc/transport.h"

struct clc_proposal;
struct epset_entry;

static inline struct shm_worker *shm_worker_of(const struct smc_net *net)
{
	return net->tp[smc_transport_slot(&shm_ops)];
}

/* shm.c: the data path. */
bool shm_efd_nonblocking(int fd);
void shm_on_doorbell(struct epset_entry *e, uint32_t events);
/* Takes every message queued on sl's link (a failure it finds runs at
 * the end of the batch). */
void shm_drain(struct shm_link *sl);
void shm_lgr_close(struct lgr *lgr);

/* shm_region.c: the regions. */
int shm_lgr_prepare(struct lgr *lgr);
int shm_adopt_peer(struct shm_lgr *sg, const struct shm_rv_msg *m,
		   int *fds, unsigned n_fds);

/* shm_rv.c: the rendezvous, the worker's socket, the handshake's address. */
int shm_init(struct smc_net *net, char *errbuf, size_t errlen);
void shm_close(struct smc_net *net);
int shm_listen(struct smc_net *net, char *errbuf, size_t errlen);
void shm_unlisten(struct smc_net *net);
int shm_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len);
int shm_addr_usable(const uint8_t *v, size_t len);
bool shm_can_serve(struct smc_net *net, const struct clc_proposal *pr);
int shm_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len);
void shm_rv_expire(struct shm_worker *sw, uint64_t now, bool need_slot);

#endif
