/* SPDX-License-Identifier: MIT */
/*
 * Types of link-level control (LLC) messages: opening flows on an existing
 * link group. SMC has no such message (each SMC connection does its own CLC
 * handshake over its own TCP connection); this is how a new flow here costs
 * one message exchange on a link instead. Types only.
 */
#ifndef SMCPROXY_LLC_T_H
#define SMCPROXY_LLC_T_H

#include <stdint.h>

#include "cdc-t.h"

enum llc_type {
	LLC_FLOW_OPEN = 0x20,		/* opener -> acceptor */
	LLC_FLOW_ACCEPT = 0x21,		/* acceptor -> opener */
	LLC_FLOW_DECLINE = 0x22,	/* acceptor -> opener */
	LLC_RMB_MOVE = 0x23,		/* a ring's owner -> its writer: a new ring */
	LLC_TEST_LINK = 0x30,		/* keepalive request */
	LLC_TEST_LINK_RSP = 0x31,
	LLC_DELETE_LINK = 0x32,		/* either side: a link, or the whole group, ends */
};

/* Where a flow's receive ring is in its owner's link group memory. */
struct llc_rmb {
	uint32_t offset;		/* from the start of the owner's region */
	uint32_t size;
	uint32_t key;			/* rdma: the ring's rkey; shm: 0 */
};

#define LLC_OPEN_RESENT	0x01	/* sent again after a link failed */

struct llc_flow_open {
	uint32_t token;			/* the opener's token for the flow */
	uint8_t flags;			/* LLC_OPEN_* */
	struct llc_rmb rmb;		/* the opener's receive ring */
	uint8_t family;			/* 4 or 6 */
	uint16_t port;			/* the flow's original destination */
	uint8_t addr[16];		/* 4 bytes used for family 4 */
	/* The client the flow came from, of the same family (only in a link
	 * group with CLC_FEAT_CLIENT_ADDR): so that the acceptor connects to
	 * the server from it. Port 0 and a zero address: not given. */
	uint16_t src_port;
	uint8_t src_addr[16];
};

struct llc_flow_accept {
	uint32_t token;			/* the opener's token */
	uint32_t peer_token;		/* the acceptor's token */
	struct llc_rmb rmb;		/* the acceptor's receive ring */
};

struct llc_flow_decline {
	uint32_t token;			/* the opener's token */
	uint8_t reason;			/* enum clc_decline */
};

/*
 * The owner of a flow's receive ring offers the writer a new one (a larger
 * ring for a flow whose traffic filled the old one). The writer switches
 * once the owner consumed everything in the old ring, and says so with
 * CDC prod_gen == gen; until then both rings are the owner's. Where SMC
 * has no such message: the kernel sizes a connection's RMB once, at its
 * CLC handshake.
 */
struct llc_rmb_move {
	uint32_t token;			/* the writer's token for the flow */
	uint8_t gen;			/* the new ring's generation */
	struct llc_rmb rmb;		/* the new ring */
};

struct llc_test_link {
	uint32_t cookie;		/* echoed in the response */
};

/*
 * DELETE LINK, as the kernel's SMC-R sends it (SMC_LLC_DELETE_LINK, with
 * SMC_LLC_FLAG_DEL_LINK_ALL and _ORDERLY): the sender gives up the link it
 * is sent on or, with LLC_DEL_ALL, the whole link group; with
 * LLC_DEL_ORDERLY because it stops, not because something broke. A daemon
 * that stops sends ALL | ORDERLY on every link of every group whose peer
 * said in the handshake that it takes it (CLC_FEAT_DELETE), so that the
 * peer closes the group quietly instead of reporting a failure.
 */
#define LLC_DEL_ALL	0x01
#define LLC_DEL_ORDERLY	0x02

struct llc_delete_link {
	uint8_t flags;			/* LLC_DEL_* */
};

/*
 * The LLC messages as their slot holds them, the one definition of their
 * layout (smcproxy-protocol(7), "LLC messages"): bytes only, so the
 * compiler adds no padding and each struct is the wire; integers
 * big-endian (core/wire.h). A message's reserved tail starts at its
 * sizeof. llc.c encodes and decodes through them and checks them
 * against the manual.
 */
struct llc_wire_hdr {
	uint8_t type;			/* enum llc_type */
	uint8_t len;			/* LINK_MSG_LEN */
	uint8_t reserved[2];
};

struct llc_wire_open {
	struct llc_wire_hdr hdr;
	uint8_t token[4];
	uint8_t rmb_offset[4];
	uint8_t rmb_size[4];
	uint8_t family;
	uint8_t flags;
	uint8_t port[2];
	uint8_t addr[16];
	uint8_t rmb_key[4];
	uint8_t src_port[2];		/* CLC_FEAT_CLIENT_ADDR groups; else 0 */
	uint8_t src_reserved[2];
	uint8_t src_addr[16];
};

struct llc_wire_accept {
	struct llc_wire_hdr hdr;
	uint8_t token[4];
	uint8_t peer_token[4];
	uint8_t rmb_offset[4];
	uint8_t rmb_size[4];
	uint8_t rmb_key[4];
};

struct llc_wire_decline {
	struct llc_wire_hdr hdr;
	uint8_t token[4];
	uint8_t reason;
};

struct llc_wire_move {
	struct llc_wire_hdr hdr;
	uint8_t token[4];
	uint8_t gen;
	uint8_t reserved[3];
	uint8_t rmb_offset[4];
	uint8_t rmb_size[4];
	uint8_t rmb_key[4];
};

struct llc_wire_test {
	struct llc_wire_hdr hdr;
	uint8_t cookie[4];
};

struct llc_wire_delete {
	struct llc_wire_hdr hdr;
	uint8_t flags;			/* LLC_DEL_* */
};

struct llc_msg {
	uint8_t type;			/* enum llc_type */
	union {
		struct llc_flow_open open;
		struct llc_flow_accept accept;
		struct llc_flow_decline decline;
		struct llc_rmb_move move;
		struct llc_test_link test;
		struct llc_delete_link del;
	};
};

#endif
