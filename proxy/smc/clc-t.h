/* SPDX-License-Identifier: MIT */
/*
 * Types of the peer handshake on the control port (the analogue of SMC's
 * CLC messages). Types only. The wire layout is in smcproxy-protocol(7);
 * these structs are the decoded, host-order form.
 */
#ifndef SMCPROXY_CLC_T_H
#define SMCPROXY_CLC_T_H

#include <stdint.h>

#define CLC_MAGIC		0x534d4350u	/* "SMCP" */
#define CLC_VERSION		2	/* 2: the proposal MAC, endpoint-bound MACs */
#define CLC_HDR_LEN		8
#define CLC_MSG_MAX		512		/* longest message we accept */
#define CLC_HOST_ID_LEN		16
#define CLC_NONCE_LEN		16
#define CLC_LGR_ID_LEN		16
#define CLC_MAC_LEN		32		/* HMAC-SHA256 */
#define CLC_ADDR_MAX		255		/* an address TLV's value, at most */
#define CLC_PSK_MAX		1024		/* longest auth.psk_file secret */
#define CLC_EP_LEN		18		/* an endpoint: IPv6 (v4-mapped) + port */
#define CLC_SECRET_LEN		32		/* a link group's secret (HMAC-SHA256) */

enum clc_type {
	CLC_PROPOSAL = 1,
	CLC_ACCEPT = 2,
	CLC_CONFIRM = 3,
	CLC_DECLINE = 4,
};

/* Feature bits of proposal and accept. */
#define CLC_FEAT_PSK		(1u << 0)	/* the sender proves auth.psk_file */
#define CLC_FEAT_RING_MOVE	(1u << 1)	/* understands LLC_RMB_MOVE: rings start small */
#define CLC_FEAT_DELETE		(1u << 2)	/* takes LLC_DELETE_LINK (an orderly stop) */
#define CLC_FEAT_CLIENT_ADDR	(1u << 3)	/* FLOW_OPEN carries the client's address */
#define CLC_FEAT_STOP_ABORT	(1u << 4)	/* takes CDC_CF_STOPPING (a reset: the sender stops) */
#define CLC_FEAT_DECL_STOPPING	(1u << 5)	/* takes decline reason CLC_DECL_STOPPING */

/*
 * Transport bits: a proposal offers a set, an accept names one. The
 * protocol assigns them; each transport names its own in its ops
 * (smc_transport_ops.clc_bit), and nothing else tells transports apart.
 */
#define CLC_TR_SHM		(1u << 0)
#define CLC_TR_RDMA		(1u << 1)
#define CLC_TR_KNOWN		(CLC_TR_SHM | CLC_TR_RDMA)

/*
 * Decline reasons, after SMC's SMC_CLC_DECL_* families. 0 is not sent.
 * A decoder of before refuses a reason it does not know as a malformed
 * message (a protocol error that fails the link group), so a reason added
 * later goes only to a peer whose feature bit says it takes it, and to
 * any other as CLC_DECL_INTERNAL (clc_decline_for_peer()).
 */
enum clc_decline {
	CLC_DECL_NONE = 0,
	CLC_DECL_NO_DEVICE = 1,		/* no transport in common */
	CLC_DECL_VERSION = 2,		/* unknown version */
	CLC_DECL_MAX_FLOWS = 3,		/* link group full */
	CLC_DECL_NO_MEMORY = 4,		/* buffer pool exhausted */
	CLC_DECL_POLICY = 5,		/* address not allowed, or auth failed */
	CLC_DECL_TIMEOUT = 6,		/* no answer in time */
	CLC_DECL_INTERNAL = 7,		/* anything else on the decliner's side */
	/* The decliner is stopping (its drain: SMC-R's "operator initiated
	 * termination") and takes no new flow; CLC_FEAT_DECL_STOPPING. */
	CLC_DECL_STOPPING = 8,
	CLC_DECL__MAX
};

/*
 * Optional type-length-value fields at the end of proposal and accept.
 * Types 1 to CLC_ADDRS_MAX carry a transport's address, one type per
 * transport (smc_transport_ops.clc_tlv). The codec keeps their values as
 * bytes, 1 to CLC_ADDR_MAX of them and each type at most once; what a
 * value must look like is the transport's to judge (addr_check). Other
 * types are skipped, so that a newer peer can add fields.
 */
enum clc_tlv {
	CLC_TLV_SHM_NAME = 1,		/* shm: rendezvous socket path (or basename) */
	CLC_TLV_RDMA_ADDR = 2,		/* rdma: its RDMA_ADDR */
};
#define CLC_ADDRS_MAX		2	/* the highest address TLV type */

/* One transport's address: the value of its TLV. */
struct clc_addr {
	uint8_t len;			/* 0: absent */
	uint8_t value[CLC_ADDR_MAX];
};

struct clc_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t length;		/* whole message, header included */
};

struct clc_proposal {
	uint32_t features;
	uint8_t transports;		/* CLC_TR_* offered */
	uint8_t host_id[CLC_HOST_ID_LEN];
	uint8_t nonce[CLC_NONCE_LEN];
	uint32_t ring_size;		/* per-flow receive ring the proposer uses */
	uint16_t links;			/* links per link group wanted */
	uint16_t max_flows_per_link;
	/* With CLC_FEAT_PSK: HMAC over the proposal and both endpoints
	 * (clc_proposal_sign()), checked before the acceptor allocates
	 * anything; zero without. */
	uint8_t mac[CLC_MAC_LEN];
	/* Transport addresses, by TLV type: addr[type - 1]. */
	struct clc_addr addr[CLC_ADDRS_MAX];
};

/*
 * The two ends of the control connection as each side sees them: the
 * proposer's address and port (client) and the acceptor's (server), each
 * as 16 bytes of IPv6 (IPv4 as ::ffff:a.b.c.d) and a big-endian port.
 * Every MAC covers them, so a proof made on one connection does not
 * verify on another (a relay), and NAT between two daemons that share a
 * secret makes the handshake fail.
 */
struct clc_endpoints {
	uint8_t client[CLC_EP_LEN];
	uint8_t server[CLC_EP_LEN];
};

struct clc_accept {
	uint32_t features;
	uint8_t transport;		/* exactly one CLC_TR_* bit */
	uint8_t host_id[CLC_HOST_ID_LEN];
	uint8_t nonce[CLC_NONCE_LEN];
	uint32_t ring_size;
	uint16_t links;			/* agreed: at most what was proposed */
	uint16_t max_flows_per_link;
	uint8_t lgr_id[CLC_LGR_ID_LEN];	/* names the link group at rendezvous */
	uint8_t mac[CLC_MAC_LEN];	/* zero without CLC_FEAT_PSK */
	struct clc_addr addr[CLC_ADDRS_MAX];	/* as in the proposal */
};

struct clc_confirm {
	uint8_t mac[CLC_MAC_LEN];	/* zero without CLC_FEAT_PSK */
};

struct clc_decline_msg {
	uint8_t reason;			/* enum clc_decline */
};

/*
 * The messages' fixed parts as the wire holds them, the one definition of
 * their layout (smcproxy-protocol(7), "HANDSHAKE"): bytes only, so the
 * compiler adds no padding and each struct is the wire; integers
 * big-endian (core/wire.h). Proposal and accept are followed by their
 * TLVs. clc.c encodes and decodes through them and checks them against
 * the manual.
 */
struct clc_wire_hdr {
	uint8_t magic[4];		/* CLC_MAGIC */
	uint8_t version;
	uint8_t type;			/* enum clc_type */
	uint8_t length[2];		/* whole message, header included */
};

/* What proposal and accept share, after the header. */
struct clc_wire_params {
	uint8_t features[4];
	uint8_t transport;		/* proposal: CLC_TR_* offered; accept: the one */
	uint8_t reserved[3];
	uint8_t host_id[CLC_HOST_ID_LEN];
	uint8_t nonce[CLC_NONCE_LEN];
	uint8_t ring_size[4];
	uint8_t links[2];
	uint8_t max_flows_per_link[2];
};

struct clc_wire_proposal {
	struct clc_wire_hdr hdr;
	struct clc_wire_params params;
	uint8_t mac[CLC_MAC_LEN];
};

struct clc_wire_accept {
	struct clc_wire_hdr hdr;
	struct clc_wire_params params;
	uint8_t lgr_id[CLC_LGR_ID_LEN];
	uint8_t mac[CLC_MAC_LEN];
};

struct clc_wire_confirm {
	struct clc_wire_hdr hdr;
	uint8_t mac[CLC_MAC_LEN];
};

struct clc_wire_decline {
	struct clc_wire_hdr hdr;
	uint8_t reason;			/* enum clc_decline */
	uint8_t reserved[3];
};

/* One decoded message of any type. */
struct clc_msg {
	struct clc_hdr hdr;
	union {
		struct clc_proposal proposal;
		struct clc_accept accept;
		struct clc_confirm confirm;
		struct clc_decline_msg decline;
	};
};

#endif
