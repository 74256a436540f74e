/* SPDX-License-Identifier: MIT */
/* Link messages of the test peers (see peer_msg.h). */
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "smc/cdc.h"
#include "smc/clc.h"

#include "peer_msg.h"

void peer_flow_open_slot(uint8_t slot[LINK_MSG_LEN], uint32_t token,
			 const struct llc_rmb *rmb, const struct cfg_addr *dest)
{
	struct llc_msg m = { .type = LLC_FLOW_OPEN };

	m.open.token = token;
	m.open.rmb = *rmb;
	if (dest->ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&dest->ss;

		m.open.family = 4;
		m.open.port = ntohs(sin->sin_port);
		memcpy(m.open.addr, &sin->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)&dest->ss;

		m.open.family = 6;
		m.open.port = ntohs(sin6->sin6_port);
		memcpy(m.open.addr, &sin6->sin6_addr, 16);
	}
	llc_encode(&m, slot);
}

void peer_describe_slot(const uint8_t *slot, size_t len, char *buf, size_t size)
{
	struct llc_msg m;
	struct cdc_msg c;

	if (!cdc_decode(slot, len, &c)) {
		snprintf(buf, size, "cdc token 0x%08" PRIx32 " flags 0x%02x", c.token, c.conn_flags);
		return;
	}
	if (llc_decode(slot, len, &m)) {
		snprintf(buf, size, "malformed 0x%02x", len ? slot[0] : 0);
		return;
	}
	switch (m.type) {
	case LLC_FLOW_ACCEPT:
		snprintf(buf, size, "flow_accept 0x%08" PRIx32, m.accept.peer_token);
		break;
	case LLC_FLOW_DECLINE:
		snprintf(buf, size, "flow_decline %s", clc_decline_name(m.decline.reason));
		break;
	case LLC_FLOW_OPEN:
		snprintf(buf, size, "flow_open");
		break;
	case LLC_TEST_LINK:
		snprintf(buf, size, "test_link");
		break;
	default:
		snprintf(buf, size, "test_link_rsp");
		break;
	}
}
