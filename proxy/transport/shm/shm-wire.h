/* SPDX-License-Identifier: MIT */
/*
 * The shm transport's memory layout, which both daemons of a link group
 * share (each maps the other's region) and the hostile test peer
 * (tests/tools/smcpeer.c) speaks: a region's header, its link queues and
 * where its rings start, and the rendezvous message. smcproxy-protocol(7)
 * leaves these to the implementation, so this header is their one
 * definition. Nothing outside proxy/transport/shm/ but the tests includes
 * it.
 */
#ifndef SMCPROXY_SHM_WIRE_H
#define SMCPROXY_SHM_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "smc/cdc-t.h"
#include "smc/clc-t.h"
#include "smc/lgr-t.h"

#define SHM_MAGIC	"SMCPSHM1"
#define SHM_RV_MAGIC	"SMCPRV02"	/* 02: with the group secret's tag */
#define SHM_VERSION	1
#define SHM_SLOTS	1024		/* messages per link queue, a power of two */
#define SHM_HDR_SIZE	4096
#define SHM_RING_MAX	(1u << 30)	/* ring area of one region */

/* The header at the start of a region; informational for debugging, we
 * trust our own constants, not the peer's header. */
struct shm_hdr {
	char magic[8];
	uint32_t version;
	uint32_t links;
	uint32_t slots;
	uint32_t size;
	/* Written by the owner: 1 while it runs, 0 when it may block waiting
	 * for events. A producer skips the doorbell while it is 1: the owner
	 * looks at its queues again before it blocks. A peer that never sets
	 * it is simply always rung. */
	_Alignas(64) uint32_t running;
};

/* A link's message queue in its consumer's region. */
struct shm_queue {
	_Alignas(64) uint32_t prod;	/* written by the producer (the peer) */
	_Alignas(64) uint32_t cons;	/* written by the consumer (the owner) */
	_Alignas(64) uint32_t waiting;	/* producer wants a doorbell on progress */
	_Alignas(64) uint8_t slots[SHM_SLOTS][LINK_MSG_LEN];
};

/*
 * What a producer stores in waiting; the consumer clears it once its
 * index advanced. A daemon of before stores SHM_WAIT_RING and only hears
 * of progress by a doorbell; one that stores SHM_WAIT_LOOK also looks at
 * the word while its running word is 1 (in its busy poll, and before it
 * blocks), so a consumer may skip that doorbell then. Any other non-zero
 * value is rung, as SHM_WAIT_RING.
 */
#define SHM_WAIT_RING	1u
#define SHM_WAIT_LOOK	2u

#define SHM_Q_SIZE	((sizeof(struct shm_queue) + 4095) & ~(size_t)4095)

/* The region's layout, which the peer daemon shares (it maps ours). */
_Static_assert((SHM_SLOTS & (SHM_SLOTS - 1)) == 0, "SHM_SLOTS a power of two: indices wrap as uint32_t");
_Static_assert(sizeof(((struct shm_queue *)0)->slots[0]) == LINK_MSG_LEN, "a slot holds one link message");
_Static_assert(offsetof(struct shm_queue, cons) - offsetof(struct shm_queue, prod) >= 64 &&
	       offsetof(struct shm_queue, waiting) - offsetof(struct shm_queue, cons) >= 64 &&
	       offsetof(struct shm_queue, slots) % 64 == 0,
	       "each index on a cache line of its own, slots aligned");
_Static_assert(sizeof(struct shm_hdr) <= SHM_HDR_SIZE && SHM_HDR_SIZE % 4096 == 0,
	       "the header fits its page");
_Static_assert(SHM_Q_SIZE % 4096 == 0, "queues, and so the rings after them, start on a page");
_Static_assert(SHM_HDR_SIZE + LGR_LINKS_MAX * SHM_Q_SIZE < SHM_RING_MAX,
	       "queues of the most links leave room for rings (shm_rmb_base() fits 32 bits)");

/* What each side sends at rendezvous, with its memfd and one eventfd per
 * link as SCM_RIGHTS. The link group id came over the network in clear:
 * with auth.psk_file, the tag proves that the sender holds the group's
 * secret too (shm_rv_tag()); without, it is zero. */
struct shm_rv_msg {
	char magic[8];
	uint8_t lgr_id[CLC_LGR_ID_LEN];
	uint32_t links;
	uint32_t size;			/* of the memfd */
	uint32_t status;		/* reply: 0, or a decline reason */
	uint8_t tag[CLC_MAC_LEN];
};
_Static_assert(offsetof(struct shm_rv_msg, links) == 8 + CLC_LGR_ID_LEN &&
	       offsetof(struct shm_rv_msg, tag) == offsetof(struct shm_rv_msg, status) + 4 &&
	       sizeof(struct shm_rv_msg) == 68,
	       "the rendezvous message has no padding: the tag covers all before it");

/* A region's header, as its owner writes it once. */
static inline void shm_hdr_init(struct shm_hdr *hdr, unsigned links, uint32_t size)
{
	memcpy(hdr->magic, SHM_MAGIC, sizeof(hdr->magic));
	hdr->version = SHM_VERSION;
	hdr->links = links;
	hdr->slots = SHM_SLOTS;
	hdr->size = size;
}

/* Where a region's rings start: after its header and a queue per link. */
static inline uint32_t shm_rmb_base(unsigned links)
{
	return SHM_HDR_SIZE + links * (uint32_t)SHM_Q_SIZE;
}

/* Link i's queue in a region. */
static inline struct shm_queue *shm_queue(uint8_t *region, unsigned i)
{
	return (struct shm_queue *)(void *)(region + SHM_HDR_SIZE + i * SHM_Q_SIZE);
}

#endif
