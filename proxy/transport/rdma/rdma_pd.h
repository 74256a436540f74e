/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's two wire codecs, apart from the verbs code so that
 * tests and fuzzers can take them without a device (smcproxy-protocol(7),
 * "RDMA TRANSPORT"):
 *
 *  - the rdma_cm private data of rdma_connect() and rdma_accept(), declared
 *    here (private to the transport);
 *  - the RDMA_ADDR TLV of a proposal or accept: struct rdma_tlv and
 *    rdma_tlv_encode()/decode()/check() are declared in rdma.h, for the
 *    test peers, and defined in rdma_pd.c; the handshake reaches them
 *    through the transport's ops.
 */
#ifndef SMCPROXY_RDMA_PD_H
#define SMCPROXY_RDMA_PD_H

#include <stddef.h>
#include <stdint.h>

#include "smc/clc-t.h"

#define RDMA_PD_MAGIC		"SR"
#define RDMA_PD_VERSION		1
#define RDMA_PD_LEN		36	/* fits the 56 bytes a RoCE REQ carries */

/* What rdma_cm private data carries, both ways: who we are and where the
 * sender's receive rings are. */
struct rdma_pd {
	uint8_t link;
	uint8_t lgr_id[CLC_LGR_ID_LEN];
	uint64_t addr;
	uint32_t rkey;			/* reserved, 0: each ring carries its own */
	uint32_t size;
};

/* Writes pd as RDMA_PD_LEN bytes: magic, version, then big-endian fields. */
void rdma_pd_encode(const struct rdma_pd *pd, uint8_t out[RDMA_PD_LEN]);
/*
 * Decodes len bytes of private data (NULL when the peer sent none): 0, or
 * -EPROTO when short, or magic or version are wrong. Bytes past
 * RDMA_PD_LEN are ignored, as rdma_cm pads private data to the size of the
 * CM message. The field values are the caller's to check.
 */
int rdma_pd_decode(const void *data, size_t len, struct rdma_pd *pd);

#endif
