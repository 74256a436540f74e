/* SPDX-License-Identifier: MIT */
/*
 * Types of connection data control (CDC) messages: the small messages
 * that carry a flow's cursors and flags over its link, as SMC's struct
 * smc_cdc_msg. Types only; wire layout in smcproxy-protocol(7).
 */
#ifndef SMCPROXY_CDC_T_H
#define SMCPROXY_CDC_T_H

#include <stdint.h>

/* Every message on a link (CDC or LLC) fills one slot of this size. */
#define LINK_MSG_LEN		64

#define CDC_MSG_TYPE		0xfe	/* SMC's CDC type byte */

struct smc_cursor {
	uint32_t wrap;
	uint32_t count;
};

/* Producer flags. */
#define CDC_PF_WRITE_BLOCKED	(1u << 0)	/* sender has data but our ring is full */
/* Connection state flags. */
#define CDC_CF_DONE_WRITING	(1u << 0)	/* FIN: no data after prod */
#define CDC_CF_CLOSED		(1u << 1)	/* sender released the flow */
#define CDC_CF_ABORT		(1u << 2)	/* RST */
/* With ABORT only, to a peer that set CLC_FEAT_STOP_ABORT: the reset is
 * the sender's stop (its drain ran out), not its application's. */
#define CDC_CF_STOPPING		(1u << 3)

struct cdc_msg {
	uint16_t seq;			/* per link, wrapping; for tracing */
	uint32_t token;			/* the receiver's flow token */
	struct smc_cursor prod;		/* bytes the sender wrote into the receiver's ring */
	struct smc_cursor cons;		/* bytes the sender consumed from its own ring */
	uint8_t prod_flags;		/* CDC_PF_* */
	uint8_t conn_flags;		/* CDC_CF_* */
	/* Which ring each cursor is in (ring moves, llc-t.h LLC_RMB_MOVE):
	 * prod in the receiver's ring of generation prod_gen, cons in the
	 * sender's own ring of generation cons_gen. Both start at 0 and
	 * count modulo 256. */
	uint8_t prod_gen;
	uint8_t cons_gen;
};

/*
 * A CDC message as its slot holds it, the one definition of its layout
 * (smcproxy-protocol(7), "CDC messages"): bytes only, so the compiler adds
 * no padding and the struct is the wire; integers big-endian (core/wire.h).
 * The rest of the slot, from sizeof(struct cdc_wire), is reserved. cdc.c
 * encodes and decodes through it and checks it against the manual.
 */
struct cdc_wire {
	uint8_t type;			/* CDC_MSG_TYPE */
	uint8_t len;			/* LINK_MSG_LEN */
	uint8_t seq[2];
	uint8_t token[4];
	uint8_t prod_wrap[4];
	uint8_t prod_count[4];
	uint8_t cons_wrap[4];
	uint8_t cons_count[4];
	uint8_t prod_flags;
	uint8_t conn_flags;
	uint8_t prod_gen;
	uint8_t cons_gen;
};

#endif
