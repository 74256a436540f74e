/* SPDX-License-Identifier: MIT */
/*
 * The registry's table (smc/transport.h): every link transport, in order
 * of preference. A server takes the first one that both sides offer and
 * that can serve the proposer: shm before rdma, as a peer on this host is
 * best served through memory. The one file outside a transport's folder
 * that names it. A static table rather than constructors: the linker
 * drops an unreferenced object of a static library, constructor and all.
 */
#include <stddef.h>

#include "smc/transport.h"
#include "transport/rdma/rdma.h"
#include "transport/shm/shm.h"

const struct smc_transport_ops *const smc_transport_table[] = {
	&shm_ops,
	&rdma_ops,
	NULL,
};
