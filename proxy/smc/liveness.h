/* SPDX-License-Identifier: MIT */
/*
 * Liveness of the peer behind each link, on every transport (SMC-R's
 * TEST_LINK): a link whose peer said nothing for links.dead_after is
 * down, whether the link was busy or idle.
 */
#ifndef SMCPROXY_LIVENESS_H
#define SMCPROXY_LIVENESS_H

#include <stdint.h>

#include "net-t.h"

/* A TEST_LINK goes on a link quiet for this part of links.dead_after,
 * and again after as long, so a live peer is asked twice before the
 * bound. */
#define LIVENESS_PROBES		3
/* A sweep later than this after the one before means this worker did not
 * run (stopped, or its host suspended): that time is not the peers'
 * silence. */
#define LIVENESS_STALL_MS	1000

/* Every link-group sweep (smc_net's timer, 100 ms): probes quiet links and
 * takes down the links whose peer stayed silent for links.dead_after
 * (counted in links_silent; the failover or the group's failure follows,
 * with -EHOSTDOWN). */
void liveness_sweep(struct smc_net *net, uint64_t now);
/* A link group came up: its links count as heard now. */
void liveness_start(struct lgr *lgr, uint64_t now);

#endif
