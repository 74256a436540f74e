/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport: link groups between daemons on different hosts over
 * RC queue pairs (SMC-R). rdma_cm resolves and connects each link; its
 * private data carries the link-group id and each side's region (address,
 * rkey). Flow bytes go by one-sided RDMA WRITE into the peer's receive
 * ring; the 64-byte CDC and LLC messages go by SEND, inline when they fit.
 * Everything else reaches it through its ops, found in the registry
 * (smc/transport.h); what is declared here besides is its handshake
 * address codec, for tests, fuzzers and the test peers.
 */
#ifndef SMCPROXY_RDMA_H
#define SMCPROXY_RDMA_H

#include <stddef.h>
#include <stdint.h>

#include "smc/transport-t.h"

extern const struct smc_transport_ops rdma_ops;

/* The RDMA_ADDR TLV of a proposal or accept (smcproxy-protocol(7)). */
#define RDMA_TLV_LEN	20
#define RDMA_TLV_MAX	64		/* longest value taken: room to grow */
/* flags: every message we send asks for a solicited event, so the peer
 * may arm its CQ for those only (cq.c); peers without it get all. */
#define RDMA_TLV_F_SOLICIT	0x01
struct rdma_tlv {
	uint8_t version;		/* 1 */
	uint8_t flags;
	uint16_t cm_port;		/* the sender's rdma_cm listener */
	uint8_t gid[16];		/* informational */
};

void rdma_tlv_encode(const struct rdma_tlv *a, uint8_t out[RDMA_TLV_LEN]);
/* -EPROTO unless a version 1 address of at least RDMA_TLV_LEN bytes with
 * a port. */
int rdma_tlv_decode(const uint8_t *in, size_t len, struct rdma_tlv *a);
/*
 * Whether an RDMA_ADDR value is well-formed at all (1 to RDMA_TLV_MAX
 * bytes): 0 or -EBADMSG, which makes the message malformed. One we cannot
 * use (rdma_tlv_decode() fails) only makes rdma unusable with that peer.
 */
int rdma_tlv_check(const uint8_t *v, size_t len);

#endif
