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
#include <stddef.h>
#include <string.h>

#include "clc-t.h"
#include "llc.h"
#include "rmb.h"
#include "core/wire.h"

/* Where each message's fields end: the rest of the slot is reserved. */
#define LLC_OPEN_END	sizeof(struct llc_wire_open)
#define LLC_ACCEPT_END	sizeof(struct llc_wire_accept)
#define LLC_DECLINE_END	sizeof(struct llc_wire_decline)
#define LLC_MOVE_END	sizeof(struct llc_wire_move)
#define LLC_TEST_END	sizeof(struct llc_wire_test)
#define LLC_DELETE_END	sizeof(struct llc_wire_delete)

#define LLC_AT(msg, field, off) (offsetof(struct llc_wire_##msg, field) == (off))

/* The layouts against smcproxy-protocol(7)'s tables, field by field: a
 * field moved in a struct llc_wire_*, or one whose width changed, fails
 * the build until the manual and this list say so too. */
_Static_assert(offsetof(struct llc_wire_hdr, type) == 0 && offsetof(struct llc_wire_hdr, len) == 1 &&
	       sizeof(struct llc_wire_hdr) == 4, "LLC header: type, length, two reserved bytes");
_Static_assert(LLC_AT(open, token, 4) && LLC_AT(open, rmb_offset, 8) && LLC_AT(open, rmb_size, 12) &&
	       LLC_AT(open, family, 16) && LLC_AT(open, flags, 17) && LLC_AT(open, port, 18) &&
	       LLC_AT(open, addr, 20) && LLC_AT(open, rmb_key, 36) && LLC_AT(open, src_port, 40) &&
	       LLC_AT(open, src_reserved, 42) && LLC_AT(open, src_addr, 44) && LLC_OPEN_END == 60,
	       "struct llc_wire_open is FLOW_OPEN's table of smcproxy-protocol(7)");
_Static_assert(sizeof(((struct llc_wire_open *)0)->addr) == sizeof(((struct llc_flow_open *)0)->addr) &&
	       sizeof(((struct llc_wire_open *)0)->src_addr) == sizeof(((struct llc_flow_open *)0)->src_addr),
	       "FLOW_OPEN: 16-byte addresses");
_Static_assert(LLC_AT(accept, token, 4) && LLC_AT(accept, peer_token, 8) &&
	       LLC_AT(accept, rmb_offset, 12) && LLC_AT(accept, rmb_size, 16) &&
	       LLC_AT(accept, rmb_key, 20) && LLC_ACCEPT_END == 24,
	       "struct llc_wire_accept is FLOW_ACCEPT's table of smcproxy-protocol(7)");
_Static_assert(LLC_AT(decline, token, 4) && LLC_AT(decline, reason, 8) && LLC_DECLINE_END == 9,
	       "struct llc_wire_decline is FLOW_DECLINE's table of smcproxy-protocol(7)");
_Static_assert(LLC_AT(move, token, 4) && LLC_AT(move, gen, 8) && LLC_AT(move, reserved, 9) &&
	       LLC_AT(move, rmb_offset, 12) && LLC_AT(move, rmb_size, 16) &&
	       LLC_AT(move, rmb_key, 20) && LLC_MOVE_END == 24,
	       "struct llc_wire_move is RMB_MOVE's table of smcproxy-protocol(7)");
_Static_assert(LLC_AT(test, cookie, 4) && LLC_TEST_END == 8,
	       "struct llc_wire_test is TEST_LINK's table of smcproxy-protocol(7)");
_Static_assert(LLC_AT(delete, flags, 4) && LLC_DELETE_END == 5,
	       "struct llc_wire_delete is DELETE_LINK's table of smcproxy-protocol(7)");
_Static_assert(LLC_OPEN_END <= LINK_MSG_LEN && LLC_ACCEPT_END <= LINK_MSG_LEN &&
	       LLC_DECLINE_END <= LINK_MSG_LEN && LLC_MOVE_END <= LINK_MSG_LEN &&
	       LLC_TEST_END <= LINK_MSG_LEN && LLC_DELETE_END <= LINK_MSG_LEN,
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
	struct llc_wire_hdr *h = (struct llc_wire_hdr *)(void *)buf;
	struct llc_wire_open *o = (struct llc_wire_open *)(void *)buf;
	struct llc_wire_accept *a = (struct llc_wire_accept *)(void *)buf;
	struct llc_wire_decline *d = (struct llc_wire_decline *)(void *)buf;
	struct llc_wire_move *mv = (struct llc_wire_move *)(void *)buf;
	struct llc_wire_test *t = (struct llc_wire_test *)(void *)buf;
	struct llc_wire_delete *dl = (struct llc_wire_delete *)(void *)buf;

	memset(buf, 0, LINK_MSG_LEN);
	h->type = m->type;
	h->len = LINK_MSG_LEN;
	switch (m->type) {
	case LLC_FLOW_OPEN:
		wire_put32(o->token, m->open.token);
		wire_put32(o->rmb_offset, m->open.rmb.offset);
		wire_put32(o->rmb_size, m->open.rmb.size);
		o->family = m->open.family;
		o->flags = m->open.flags;
		wire_put16(o->port, m->open.port);
		memcpy(o->addr, m->open.addr, m->open.family == 4 ? 4 : 16);
		wire_put32(o->rmb_key, m->open.rmb.key);
		wire_put16(o->src_port, m->open.src_port);
		memcpy(o->src_addr, m->open.src_addr, m->open.family == 4 ? 4 : 16);
		break;
	case LLC_FLOW_ACCEPT:
		wire_put32(a->token, m->accept.token);
		wire_put32(a->peer_token, m->accept.peer_token);
		wire_put32(a->rmb_offset, m->accept.rmb.offset);
		wire_put32(a->rmb_size, m->accept.rmb.size);
		wire_put32(a->rmb_key, m->accept.rmb.key);
		break;
	case LLC_FLOW_DECLINE:
		wire_put32(d->token, m->decline.token);
		d->reason = m->decline.reason;
		break;
	case LLC_RMB_MOVE:
		wire_put32(mv->token, m->move.token);
		mv->gen = m->move.gen;
		wire_put32(mv->rmb_offset, m->move.rmb.offset);
		wire_put32(mv->rmb_size, m->move.rmb.size);
		wire_put32(mv->rmb_key, m->move.rmb.key);
		break;
	case LLC_TEST_LINK:
	case LLC_TEST_LINK_RSP:
		wire_put32(t->cookie, m->test.cookie);
		break;
	case LLC_DELETE_LINK:
		dl->flags = m->del.flags;
		break;
	}
}

/* One encoding per address: a family-4 address is not also 12 bytes of
 * something else. */
static bool addr_ok(uint8_t family, const uint8_t addr[16])
{
	if (family == 4)
		return wire_all_zero(addr + 4, 12);
	return family == 6;
}

static int decode_open(const uint8_t *buf, struct llc_flow_open *o)
{
	const struct llc_wire_open *w = (const struct llc_wire_open *)(const void *)buf;

	if ((w->flags & ~LLC_OPEN_RESENT) || !wire_all_zero(w->src_reserved, sizeof(w->src_reserved)) ||
	    !wire_all_zero(buf + LLC_OPEN_END, LINK_MSG_LEN - LLC_OPEN_END))
		return -EBADMSG;
	o->token = wire_get32(w->token);
	o->rmb.offset = wire_get32(w->rmb_offset);
	o->rmb.size = wire_get32(w->rmb_size);
	o->family = w->family;
	o->flags = w->flags;
	o->port = wire_get16(w->port);
	memcpy(o->addr, w->addr, sizeof(o->addr));
	o->rmb.key = wire_get32(w->rmb_key);
	o->src_port = wire_get16(w->src_port);
	memcpy(o->src_addr, w->src_addr, sizeof(o->src_addr));
	/* Token 0 is the receiver's "no peer token yet": a flow stored with
	 * it could never be addressed, and would look unanswered. */
	if (o->token == 0 || !rmb_ok(&o->rmb) || o->port == 0)
		return -EBADMSG;
	if (!addr_ok(o->family, o->addr) || !addr_ok(o->family, o->src_addr))
		return -EBADMSG;
	/* The client is given whole or not at all: a port without an
	 * address, or an address without a port, is no client. */
	if ((o->src_port == 0) != wire_all_zero(o->src_addr, sizeof(o->src_addr)))
		return -EBADMSG;
	return 0;
}

int llc_decode(const uint8_t *buf, size_t len, struct llc_msg *m)
{
	const struct llc_wire_hdr *h = (const struct llc_wire_hdr *)(const void *)buf;
	const struct llc_wire_accept *a = (const struct llc_wire_accept *)(const void *)buf;
	const struct llc_wire_decline *d = (const struct llc_wire_decline *)(const void *)buf;
	const struct llc_wire_move *mv = (const struct llc_wire_move *)(const void *)buf;
	const struct llc_wire_test *t = (const struct llc_wire_test *)(const void *)buf;
	const struct llc_wire_delete *dl = (const struct llc_wire_delete *)(const void *)buf;
	size_t end;

	/* Zeroed first, so two decodes of one slot compare equal. */
	memset(m, 0, sizeof(*m));
	if (len != LINK_MSG_LEN || h->len != LINK_MSG_LEN || h->reserved[0] || h->reserved[1])
		return -EBADMSG;
	m->type = h->type;
	switch (m->type) {
	case LLC_FLOW_OPEN:
		return decode_open(buf, &m->open);
	case LLC_FLOW_ACCEPT:
		m->accept.token = wire_get32(a->token);
		m->accept.peer_token = wire_get32(a->peer_token);
		m->accept.rmb.offset = wire_get32(a->rmb_offset);
		m->accept.rmb.size = wire_get32(a->rmb_size);
		m->accept.rmb.key = wire_get32(a->rmb_key);
		/* The opener keeps 0 as "not accepted yet": a flow accepted
		 * with peer token 0 would run but be taken for unanswered, so
		 * a later DECLINE for it would free its ring while the peer
		 * still writes into it. */
		if (m->accept.peer_token == 0 || !rmb_ok(&m->accept.rmb))
			return -EBADMSG;
		end = LLC_ACCEPT_END;
		break;
	case LLC_FLOW_DECLINE:
		m->decline.token = wire_get32(d->token);
		m->decline.reason = d->reason;
		if (m->decline.reason == CLC_DECL_NONE || m->decline.reason >= CLC_DECL__MAX)
			return -EBADMSG;
		end = LLC_DECLINE_END;
		break;
	case LLC_RMB_MOVE:
		/* The bytes after gen are reserved (zero), as the tail is. */
		if (!wire_all_zero(mv->reserved, sizeof(mv->reserved)))
			return -EBADMSG;
		m->move.token = wire_get32(mv->token);
		m->move.gen = mv->gen;
		m->move.rmb.offset = wire_get32(mv->rmb_offset);
		m->move.rmb.size = wire_get32(mv->rmb_size);
		m->move.rmb.key = wire_get32(mv->rmb_key);
		if (m->move.token == 0 || !rmb_ok(&m->move.rmb))
			return -EBADMSG;
		end = LLC_MOVE_END;
		break;
	case LLC_TEST_LINK:
	case LLC_TEST_LINK_RSP:
		m->test.cookie = wire_get32(t->cookie);
		end = LLC_TEST_END;
		break;
	case LLC_DELETE_LINK:
		/* Undefined flags are reserved: a later version may give
		 * them a meaning this one would get wrong. */
		m->del.flags = dl->flags;
		if (m->del.flags & ~(LLC_DEL_ALL | LLC_DEL_ORDERLY))
			return -EBADMSG;
		end = LLC_DELETE_END;
		break;
	default:
		return -EBADMSG;
	}
	return wire_all_zero(buf + end, LINK_MSG_LEN - end) ? 0 : -EBADMSG;
}
