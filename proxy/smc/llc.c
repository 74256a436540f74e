/* SPDX-License-Identifier: MIT */
/*
 * The LLC message codec: opening flows on a link group and keeping links
 * alive (smcproxy-protocol(7), "Link messages"). As for CDC, a slot comes
 * from memory the peer writes: every byte without a meaning must be zero,
 * and every field the codec can judge without the link group's state is
 * judged here. Whether an rmb lies inside the peer's region, and whether a
 * token names a live flow, is the caller's to check.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "clc-t.h"
#include "llc.h"
#include "rmb.h"
#include "core/wire.h"

/* Where each message's fields end: the rest of the slot is reserved. */
#define LLC_OPEN_END	40
#define LLC_ACCEPT_END	24
#define LLC_DECLINE_END	9
#define LLC_MOVE_END	24
#define LLC_TEST_END	8

/* Each message's last field ends where its reserved bytes begin, and every
 * message fits one link slot. */
_Static_assert(20 + sizeof(((struct llc_flow_open *)0)->addr) == 36 && 36 + 4 == LLC_OPEN_END,
	       "FLOW_OPEN: the address (16 bytes at 20), then the rmb key");
_Static_assert(20 + 4 == LLC_ACCEPT_END, "FLOW_ACCEPT: the rmb key is its last field");
_Static_assert(8 + 1 == LLC_DECLINE_END, "FLOW_DECLINE: one reason byte at 8");
_Static_assert(4 + 4 == LLC_TEST_END, "TEST_LINK: a 32-bit cookie at 4");
_Static_assert(LLC_OPEN_END <= LINK_MSG_LEN && LLC_ACCEPT_END <= LINK_MSG_LEN &&
	       LLC_DECLINE_END <= LINK_MSG_LEN && LLC_TEST_END <= LINK_MSG_LEN,
	       "every LLC message fits one link slot");
_Static_assert(LINK_MSG_LEN <= UINT8_MAX, "byte 1 holds the slot's length");
_Static_assert(CLC_DECL__MAX - 1 <= UINT8_MAX, "a decline reason is one byte");

static bool rmb_ok(const struct llc_rmb *rmb)
{
	return rmb_class(rmb->size) >= 0;	/* a size class of the ring pool */
}

/*
 * Writes the fields of m->type as given; an unknown type leaves a slot
 * with only its type and length, which the peer's decoder refuses. For
 * family 4 only the first 4 address bytes are written, so a caller need
 * not clear the rest.
 */
void llc_encode(const struct llc_msg *m, uint8_t buf[LINK_MSG_LEN])
{
	memset(buf, 0, LINK_MSG_LEN);
	buf[0] = m->type;
	buf[1] = LINK_MSG_LEN;
	switch (m->type) {
	case LLC_FLOW_OPEN:
		wire_put32(buf + 4, m->open.token);
		wire_put32(buf + 8, m->open.rmb.offset);
		wire_put32(buf + 12, m->open.rmb.size);
		buf[16] = m->open.family;
		buf[17] = m->open.flags;
		wire_put16(buf + 18, m->open.port);
		memcpy(buf + 20, m->open.addr, m->open.family == 4 ? 4 : 16);
		wire_put32(buf + 36, m->open.rmb.key);
		break;
	case LLC_FLOW_ACCEPT:
		wire_put32(buf + 4, m->accept.token);
		wire_put32(buf + 8, m->accept.peer_token);
		wire_put32(buf + 12, m->accept.rmb.offset);
		wire_put32(buf + 16, m->accept.rmb.size);
		wire_put32(buf + 20, m->accept.rmb.key);
		break;
	case LLC_FLOW_DECLINE:
		wire_put32(buf + 4, m->decline.token);
		buf[8] = m->decline.reason;
		break;
	case LLC_RMB_MOVE:
		wire_put32(buf + 4, m->move.token);
		buf[8] = m->move.gen;
		wire_put32(buf + 12, m->move.rmb.offset);
		wire_put32(buf + 16, m->move.rmb.size);
		wire_put32(buf + 20, m->move.rmb.key);
		break;
	case LLC_TEST_LINK:
	case LLC_TEST_LINK_RSP:
		wire_put32(buf + 4, m->test.cookie);
		break;
	}
}

static int decode_open(const uint8_t *buf, struct llc_flow_open *o)
{
	if ((buf[17] & ~LLC_OPEN_RESENT) ||
	    !wire_all_zero(buf + LLC_OPEN_END, LINK_MSG_LEN - LLC_OPEN_END))
		return -EBADMSG;
	o->token = wire_get32(buf + 4);
	o->rmb.offset = wire_get32(buf + 8);
	o->rmb.size = wire_get32(buf + 12);
	o->family = buf[16];
	o->flags = buf[17];
	o->port = wire_get16(buf + 18);
	memcpy(o->addr, buf + 20, sizeof(o->addr));
	o->rmb.key = wire_get32(buf + 36);
	/* Token 0 is the receiver's "no peer token yet": a flow stored with
	 * it could never be addressed, and would look unanswered. */
	if (o->token == 0 || !rmb_ok(&o->rmb) || o->port == 0)
		return -EBADMSG;
	/* One encoding per address: a family-4 address is not also 12 bytes
	 * of something else. */
	if (o->family == 4)
		return wire_all_zero(o->addr + 4, sizeof(o->addr) - 4) ? 0 : -EBADMSG;
	return o->family == 6 ? 0 : -EBADMSG;
}

int llc_decode(const uint8_t *buf, size_t len, struct llc_msg *m)
{
	size_t end;

	/* Zeroed first, so two decodes of one slot compare equal. */
	memset(m, 0, sizeof(*m));
	if (len != LINK_MSG_LEN || buf[1] != LINK_MSG_LEN || buf[2] || buf[3])
		return -EBADMSG;
	m->type = buf[0];
	switch (m->type) {
	case LLC_FLOW_OPEN:
		return decode_open(buf, &m->open);
	case LLC_FLOW_ACCEPT:
		m->accept.token = wire_get32(buf + 4);
		m->accept.peer_token = wire_get32(buf + 8);
		m->accept.rmb.offset = wire_get32(buf + 12);
		m->accept.rmb.size = wire_get32(buf + 16);
		m->accept.rmb.key = wire_get32(buf + 20);
		/* The opener keeps 0 as "not accepted yet": a flow accepted
		 * with peer token 0 would run but be taken for unanswered, so
		 * a later DECLINE for it would free its ring while the peer
		 * still writes into it. */
		if (m->accept.peer_token == 0 || !rmb_ok(&m->accept.rmb))
			return -EBADMSG;
		end = LLC_ACCEPT_END;
		break;
	case LLC_FLOW_DECLINE:
		m->decline.token = wire_get32(buf + 4);
		m->decline.reason = buf[8];
		if (m->decline.reason == CLC_DECL_NONE || m->decline.reason >= CLC_DECL__MAX)
			return -EBADMSG;
		end = LLC_DECLINE_END;
		break;
	case LLC_RMB_MOVE:
		/* Bytes 9..11 are reserved (zero), as the tail is. */
		if (buf[9] || buf[10] || buf[11])
			return -EBADMSG;
		m->move.token = wire_get32(buf + 4);
		m->move.gen = buf[8];
		m->move.rmb.offset = wire_get32(buf + 12);
		m->move.rmb.size = wire_get32(buf + 16);
		m->move.rmb.key = wire_get32(buf + 20);
		if (m->move.token == 0 || !rmb_ok(&m->move.rmb))
			return -EBADMSG;
		end = LLC_MOVE_END;
		break;
	case LLC_TEST_LINK:
	case LLC_TEST_LINK_RSP:
		m->test.cookie = wire_get32(buf + 4);
		end = LLC_TEST_END;
		break;
	default:
		return -EBADMSG;
	}
	return wire_all_zero(buf + end, LINK_MSG_LEN - end) ? 0 : -EBADMSG;
}
