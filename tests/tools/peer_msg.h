/* SPDX-License-Identifier: MIT */
/*
 * Link messages as the hostile test peers (smcpeer, rdmapeer) build and
 * print them, with the daemon's own codecs: a FLOW_OPEN to a destination,
 * and a one-line description of any 64-byte slot the daemon sent.
 */
#ifndef SMCPROXY_TEST_PEER_MSG_H
#define SMCPROXY_TEST_PEER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "smc/llc.h"

/* A FLOW_OPEN of token to dest (IPv4 or IPv6), naming rmb as our ring. */
void peer_flow_open_slot(uint8_t slot[LINK_MSG_LEN], uint32_t token,
			 const struct llc_rmb *rmb, const struct cfg_addr *dest);

/* What the len bytes at slot are, into buf: "cdc token 0x.. flags 0x..",
 * "flow_accept 0x..", "flow_decline REASON", "flow_open", "test_link",
 * "test_link_rsp" or "malformed 0xTYPE". */
void peer_describe_slot(const uint8_t *slot, size_t len, char *buf, size_t size);

#endif
