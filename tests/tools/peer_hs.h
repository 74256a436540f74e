/* SPDX-License-Identifier: MIT */
/*
 * The handshake client of the hostile test peers (smcpeer over shm,
 * rdmapeer over rdma): smcproxy-protocol(7)'s HANDSHAKE from the
 * proposer's side, with the daemon's own codecs, over a TCP connection to
 * the daemon's control port. It plays by the rules (a tool misbehaves
 * after it, or sends its own bytes with peer_tcp_connect() and
 * peer_send_all()), except that with a secret it confirms even when the
 * accept's MAC does not verify, so that the daemon is the one to judge.
 */
#ifndef SMCPROXY_TEST_PEER_HS_H
#define SMCPROXY_TEST_PEER_HS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "smc/clc.h"

/* A connected blocking TCP socket to addr, marked with mark when it is not
 * 0 (the client host's REDIRECT rule spares only marked traffic), or
 * -errno (-ETIMEDOUT past deadline). */
int peer_tcp_connect(const struct cfg_addr *addr, uint32_t mark, int64_t deadline);

/* All len bytes of buf by deadline: 0, -ETIMEDOUT, or -errno (-EPIPE when
 * the daemon closed). */
int peer_send_all(int fd, const uint8_t *buf, size_t len, int64_t deadline);

/* One whole handshake message by deadline: 0, -EBADMSG for anything
 * clc_decode() refuses, -ECONNRESET when the daemon closed, -ETIMEDOUT. */
int peer_clc_recv(int fd, struct clc_msg *m, int64_t deadline);

/* What a handshake proposes. */
struct peer_hs_opts {
	const struct cfg_addr *connect;	/* the daemon's control port */
	uint32_t mark;			/* SO_MARK, 0: none */
	int timeout_ms;			/* for the whole handshake */
	const char *psk_file;		/* prove this secret; NULL: no proof */
	/* With psk_file: say CLC_FEAT_PSK but send a proposal MAC of zeros
	 * (a proposer without the secret that claims to have it). */
	bool zero_proposal_mac;
	uint8_t transport;		/* the one CLC_TR_* offered */
	unsigned links;
	uint32_t ring_size;
	const uint8_t *rdma_addr;	/* RDMA_ADDR to propose, rdma_addr_len */
	size_t rdma_addr_len;		/* bytes of it; 0: none */
	/* Whether the tool can use this accept of its transport (its
	 * address, say); NULL: any. Refused, it counts as "bad-answer". */
	bool (*accept_ok)(const struct clc_accept *acc);
};

struct peer_hs {
	struct clc_proposal prop;	/* what was proposed */
	struct clc_accept acc;		/* what the daemon accepted */
	/* The link group's secret (clc_link_secret()), which the
	 * transport's rendezvous must prove: keyed by psk_file when
	 * has_secret, else derived from the nonces alone. */
	bool has_secret;
	uint8_t secret[CLC_SECRET_LEN];
	/* How the daemon refused, when peer_hs_run() returns 0:
	 * "declined-handshake REASON", "closed", "timeout" or "bad-answer". */
	char outcome[64];
};

/*
 * Proposal, accept, confirm, ready. Returns 1 with the accept in hs->acc,
 * 0 with hs->outcome saying how the daemon refused, or -errno for a local
 * error (the secret, the boot id, connect), which it reports on stderr.
 * An accept must name the transport offered and 1..links links.
 */
int peer_hs_run(const struct peer_hs_opts *o, struct peer_hs *hs);

#endif
