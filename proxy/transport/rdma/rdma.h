/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport: link groups between daemons on different hosts over
 * RC queue pairs (SMC-R). rdma_cm resolves and connects each link; its
 * private data carries the link-group id and each side's region (address,
 * rkey). Flow bytes go by one-sided RDMA WRITE into the peer's receive
 * ring; the 64-byte CDC and LLC messages go by SEND, inline when they fit.
 */
#ifndef SMCPROXY_RDMA_H
#define SMCPROXY_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cq-t.h"
#include "smc/transport-t.h"

struct smc_net;
struct lgr;
struct link;

extern const struct smc_transport_ops rdma_ops;

/* The RDMA_ADDR TLV of a proposal or accept (smcproxy-protocol(7)). */
#define RDMA_TLV_LEN	20
struct rdma_tlv {
	uint8_t version;		/* 1 */
	uint8_t flags;
	uint16_t cm_port;		/* the sender's rdma_cm listener */
	uint8_t gid[16];		/* informational */
};

/*
 * Opens this worker's RDMA side: the first device with an active port, a
 * protection domain, the CQ pool and an rdma_cm listener. -ENODEV when the
 * host has no usable device (the caller then does not offer rdma).
 */
int rdma_init(struct smc_net *net, char *errbuf, size_t errlen);
void rdma_close(struct smc_net *net);
bool rdma_available(const struct smc_net *net);
/* Our TLV for a proposal or an accept. */
void rdma_local_addr(const struct smc_net *net, struct rdma_tlv *a);
void rdma_tlv_encode(const struct rdma_tlv *a, uint8_t out[RDMA_TLV_LEN]);
int rdma_tlv_decode(const uint8_t *in, size_t len, struct rdma_tlv *a);
/* Server, before its accept: our registered region for lgr. */
int rdma_lgr_prepare(struct lgr *lgr);
/* Client, after the peer's ready: connects every link of lgr to the peer's
 * listener; the group comes up (lgr__established) or fails later. */
int rdma_lgr_connect(struct lgr *lgr, const struct rdma_tlv *peer);
/* Fails one link on purpose (smcproxyctl debug fail-link): 0, or
 * -EOPNOTSUPP (not rdma), -ENOTCONN (the link is not up). */
int rdma_link_fail(struct link *lnk);
/* Called by the lgr sweep: port state changes seen by the async handler. */
void rdma_sweep(struct smc_net *net);
/* Before the loop blocks: another round for busy CQs (cq_pool_idle()). */
bool rdma_proxy_idle(struct smc_net *net, bool run);

/* What `smcproxyctl links` shows of an rdma link. */
struct rdma_link_info {
	char device[32];
	unsigned port;
	char gid[40];			/* text form */
	uint32_t qp_num, peer_qp_num;
	unsigned max_inline;		/* of the created QP */
	unsigned wr_in_flight;		/* send work requests not completed */
	unsigned sq_depth;
	unsigned cq;			/* index in the worker's CQ pool */
	bool relaxed_ordering;		/* the region's MR has it */
};
/* 0; -EOPNOTSUPP for a link of another transport; -ENOTCONN for an rdma
 * link without a queue pair (failed, or not connected yet). */
int rdma_link_info(const struct link *lnk, struct rdma_link_info *info);
/* The worker's CQ pool, for stats (NULL when rdma is off). On the worker's
 * own thread only: rdma_close() frees it there. */
const struct cq_pool *rdma_cq_pool(const struct smc_net *net);

#endif
