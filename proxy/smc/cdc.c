/* SPDX-License-Identifier: MIT */
/*
 * The CDC message codec: one link slot carrying a flow's cursors and
 * flags (smcproxy-protocol(7), "CDC messages"). A slot is read from memory
 * the peer writes, so the decoder takes nothing on trust: every bit that
 * has no meaning must be zero, which also keeps those bits free for a
 * later version to give a meaning to.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cdc.h"
#include "core/wire.h"

#define CDC_PF_KNOWN	CDC_PF_WRITE_BLOCKED
#define CDC_CF_KNOWN	(CDC_CF_DONE_WRITING | CDC_CF_CLOSED | CDC_CF_ABORT | CDC_CF_STOPPING)
#define CDC_RESERVED	sizeof(struct cdc_wire)	/* reserved from here to the slot's end */

#define CDC_AT(field, off) (offsetof(struct cdc_wire, field) == (off))

/* The layout against smcproxy-protocol(7)'s table, field by field: a field
 * moved in struct cdc_wire, or one whose width changed, fails the build
 * until the manual and this list say so too. */
_Static_assert(CDC_AT(type, 0) && CDC_AT(len, 1) && CDC_AT(seq, 2) && CDC_AT(token, 4) &&
	       CDC_AT(prod_wrap, 8) && CDC_AT(prod_count, 12) && CDC_AT(cons_wrap, 16) &&
	       CDC_AT(cons_count, 20) && CDC_AT(prod_flags, 24) && CDC_AT(conn_flags, 25) &&
	       CDC_AT(prod_gen, 26) && CDC_AT(cons_gen, 27) && CDC_RESERVED == 28,
	       "struct cdc_wire is the CDC table of smcproxy-protocol(7)");
_Static_assert(sizeof(((struct cdc_msg *)0)->prod_gen) == sizeof(((struct cdc_wire *)0)->prod_gen) &&
	       sizeof(((struct cdc_msg *)0)->cons_gen) == sizeof(((struct cdc_wire *)0)->cons_gen),
	       "ring generations are one byte each");
_Static_assert(CDC_RESERVED <= LINK_MSG_LEN, "a CDC fits one link slot");
_Static_assert(LINK_MSG_LEN <= UINT8_MAX, "byte 1 holds the slot's length");
_Static_assert(sizeof(((struct cdc_msg *)0)->prod.count) == sizeof(((struct cdc_wire *)0)->prod_count) &&
	       sizeof(((struct cdc_msg *)0)->seq) == sizeof(((struct cdc_wire *)0)->seq),
	       "CDC fields: 32-bit cursors, 16-bit seq");
_Static_assert((CDC_PF_KNOWN | CDC_CF_KNOWN) <= UINT8_MAX, "the flags are one byte each");

/*
 * Writes the flags as given: the encoder trusts its caller, and a flag bit
 * we do not define would be refused by the peer's decoder, which is where
 * such a bug shows.
 */
void cdc_encode(const struct cdc_msg *m, uint8_t buf[LINK_MSG_LEN])
{
	struct cdc_wire *w = (struct cdc_wire *)(void *)buf;

	memset(buf, 0, LINK_MSG_LEN);
	w->type = CDC_MSG_TYPE;
	w->len = LINK_MSG_LEN;
	wire_put16(w->seq, m->seq);
	wire_put32(w->token, m->token);
	wire_put32(w->prod_wrap, m->prod.wrap);
	wire_put32(w->prod_count, m->prod.count);
	wire_put32(w->cons_wrap, m->cons.wrap);
	wire_put32(w->cons_count, m->cons.count);
	w->prod_flags = m->prod_flags;
	w->conn_flags = m->conn_flags;
	w->prod_gen = m->prod_gen;
	w->cons_gen = m->cons_gen;
}

int cdc_decode(const uint8_t *buf, size_t len, struct cdc_msg *m)
{
	const struct cdc_wire *w = (const struct cdc_wire *)(const void *)buf;

	if (len != LINK_MSG_LEN || w->type != CDC_MSG_TYPE || w->len != LINK_MSG_LEN)
		return -EBADMSG;
	if ((w->prod_flags & ~CDC_PF_KNOWN) || (w->conn_flags & ~CDC_CF_KNOWN))
		return -EBADMSG;
	if ((w->conn_flags & CDC_CF_STOPPING) && !(w->conn_flags & CDC_CF_ABORT))
		return -EBADMSG;	/* says why a reset came: only with one */
	for (size_t i = CDC_RESERVED; i < LINK_MSG_LEN; i++)
		if (buf[i])
			return -EBADMSG;
	m->seq = wire_get16(w->seq);
	m->token = wire_get32(w->token);
	m->prod.wrap = wire_get32(w->prod_wrap);
	m->prod.count = wire_get32(w->prod_count);
	m->cons.wrap = wire_get32(w->cons_wrap);
	m->cons.count = wire_get32(w->cons_count);
	m->prod_flags = w->prod_flags;
	m->conn_flags = w->conn_flags;
	m->prod_gen = w->prod_gen;
	m->cons_gen = w->cons_gen;
	return 0;
}
