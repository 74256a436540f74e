/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's two wire codecs, apart from the verbs code so that
 * tests and fuzzers can take them without a device (smcproxy-protocol(7),
 * "RDMA TRANSPORT"):
 *
 *  - the rdma_cm private data of rdma_connect() and rdma_accept(), and its
 *    tag, declared here (private to the transport);
 *  - the RDMA_ADDR TLV of a proposal or accept: struct rdma_tlv and
 *    rdma_tlv_encode()/decode()/check() are declared in rdma.h, for the
 *    test peers, and defined in rdma_pd.c; the handshake reaches them
 *    through the transport's ops.
 */
#ifndef SMCPROXY_RDMA_PD_H
#define SMCPROXY_RDMA_PD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smc/clc-t.h"

#define RDMA_PD_MAGIC		"SR"
#define RDMA_PD_VERSION		2	/* 2: the group secret's tag */
#define RDMA_PD_TAG_OFF		36	/* the tag covers every byte before it */
#define RDMA_PD_TAG_LEN		16	/* a truncated HMAC-SHA256: 128 bits */
#define RDMA_PD_LEN		52	/* fits the 56 bytes a RoCE REQ carries */

/*
 * What rdma_cm private data carries, both ways: who we are, where the
 * sender's receive rings are, and the proof that the sender took part in
 * the group's handshake (rdma_pd_tag()).
 */
struct rdma_pd {
	uint8_t link;
	uint8_t lgr_id[CLC_LGR_ID_LEN];
	uint64_t addr;
	uint32_t rkey;			/* reserved, 0: each ring carries its own */
	uint32_t size;
	uint8_t tag[RDMA_PD_TAG_LEN];
};

/* Which message the private data rides in: the proposer's connect
 * request or the acceptor's reply. Each has its own tag label, so that
 * a request cannot be reflected as a reply. */
enum rdma_pd_dir {
	RDMA_PD_REQ,
	RDMA_PD_REP,
};

/* Writes pd as RDMA_PD_LEN bytes: magic, version, then big-endian fields
 * and the tag as it is. */
void rdma_pd_encode(const struct rdma_pd *pd, uint8_t out[RDMA_PD_LEN]);
/*
 * Decodes len bytes of private data (NULL when the peer sent none): 0, or
 * -EPROTO when short, or magic or version are wrong. Bytes past
 * RDMA_PD_LEN are ignored, as rdma_cm pads private data to the size of the
 * CM message. The field values, and the tag, are the caller's to check.
 */
int rdma_pd_decode(const void *data, size_t len, struct rdma_pd *pd);
/*
 * The tag of pd sent in dir, for the link group whose secret is given
 * (lgr->secret): the first RDMA_PD_TAG_LEN bytes of HMAC-SHA256(secret,
 * label || the first RDMA_PD_TAG_OFF bytes of pd's encoding). 0 or -errno.
 */
int rdma_pd_tag(const uint8_t secret[CLC_SECRET_LEN], enum rdma_pd_dir dir,
		const struct rdma_pd *pd, uint8_t tag[RDMA_PD_TAG_LEN]);
/* Whether pd, as received in dir, carries the tag of that secret;
 * compared in constant time. */
bool rdma_pd_tag_ok(const uint8_t secret[CLC_SECRET_LEN], enum rdma_pd_dir dir,
		    const struct rdma_pd *pd);

#endif
