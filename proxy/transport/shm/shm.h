/* SPDX-License-Identifier: MIT */
/*
 * The shm transport: link groups between two daemons of one host (what
 * SMC-D loopback does for containers). Each side's receive rings and
 * message queues live in a sealed memfd the peer maps; eventfds are the
 * doorbells; both travel over a UNIX socket in shm.dir, which then stays
 * open so that the peer's death is seen at once.
 */
#ifndef SMCPROXY_SHM_H
#define SMCPROXY_SHM_H

#include <stddef.h>

#include "smc/transport-t.h"

struct smc_net;
struct lgr;

extern const struct smc_transport_ops shm_ops;

/* The rendezvous socket <shm.dir>/<net->shm_name>. */
int shm_listen(struct smc_net *net, char *errbuf, size_t errlen);
void shm_unlisten(struct smc_net *net);
/* Server, before its accept: our region and doorbells for lgr. */
int shm_lgr_prepare(struct lgr *lgr);
/* Client, after the peer's ready: connects to the peer's rendezvous socket
 * name; the group comes up (lgr__established) or fails later. */
int shm_lgr_connect(struct lgr *lgr, const char *name);

#endif
