/* SPDX-License-Identifier: MIT */
/*
 * The CDC message codec: one link slot carrying a flow's cursors and
 * flags (smcproxy-protocol(7), "CDC messages"). A slot is read from memory
 * the peer writes, so the decoder takes nothing on trust: every bit that
 * has no meaning must be zero, which also keeps those bits free for a
 * later version to give a meaning to.
 */
#include <errno.h>
#include <string.h>

#include "cdc.h"
#include "core/wire.h"

#define CDC_PF_KNOWN	CDC_PF_WRITE_BLOCKED
#define CDC_CF_KNOWN	(CDC_CF_DONE_WRITING | CDC_CF_CLOSED | CDC_CF_ABORT)
#define CDC_RESERVED	28	/* first reserved byte; reserved up to the end */

/* The layout the codec writes, checked where the compiler can: the flags
 * and the two ring generations are the last fields, and a CDC fits one
 * link slot whose size its length byte holds. */
_Static_assert(20 + 4 + 2 + 2 == CDC_RESERVED,
	       "CDC: cons.count at 20, then two flag bytes and two ring generations");
_Static_assert(sizeof(((struct cdc_msg *)0)->prod_gen) == 1 &&
	       sizeof(((struct cdc_msg *)0)->cons_gen) == 1, "ring generations are one byte each");
_Static_assert(CDC_RESERVED <= LINK_MSG_LEN, "a CDC fits one link slot");
_Static_assert(LINK_MSG_LEN <= UINT8_MAX, "byte 1 holds the slot's length");
_Static_assert(sizeof(((struct cdc_msg *)0)->prod.count) == 4 &&
	       sizeof(((struct cdc_msg *)0)->seq) == 2, "CDC fields: 32-bit cursors, 16-bit seq");
_Static_assert((CDC_PF_KNOWN | CDC_CF_KNOWN) <= UINT8_MAX, "the flags are one byte each");

/*
 * Writes the flags as given: the encoder trusts its caller, and a flag bit
 * we do not define would be refused by the peer's decoder, which is where
 * such a bug shows.
 */
void cdc_encode(const struct cdc_msg *m, uint8_t buf[LINK_MSG_LEN])
{
	memset(buf, 0, LINK_MSG_LEN);
	buf[0] = CDC_MSG_TYPE;
	buf[1] = LINK_MSG_LEN;
	wire_put16(buf + 2, m->seq);
	wire_put32(buf + 4, m->token);
	wire_put32(buf + 8, m->prod.wrap);
	wire_put32(buf + 12, m->prod.count);
	wire_put32(buf + 16, m->cons.wrap);
	wire_put32(buf + 20, m->cons.count);
	buf[24] = m->prod_flags;
	buf[25] = m->conn_flags;
	buf[26] = m->prod_gen;
	buf[27] = m->cons_gen;
}

int cdc_decode(const uint8_t *buf, size_t len, struct cdc_msg *m)
{
	if (len != LINK_MSG_LEN || buf[0] != CDC_MSG_TYPE || buf[1] != LINK_MSG_LEN)
		return -EBADMSG;
	if ((buf[24] & ~CDC_PF_KNOWN) || (buf[25] & ~CDC_CF_KNOWN))
		return -EBADMSG;
	for (size_t i = CDC_RESERVED; i < LINK_MSG_LEN; i++)
		if (buf[i])
			return -EBADMSG;
	m->seq = wire_get16(buf + 2);
	m->token = wire_get32(buf + 4);
	m->prod.wrap = wire_get32(buf + 8);
	m->prod.count = wire_get32(buf + 12);
	m->cons.wrap = wire_get32(buf + 16);
	m->cons.count = wire_get32(buf + 20);
	m->prod_flags = buf[24];
	m->conn_flags = buf[25];
	m->prod_gen = buf[26];
	m->cons_gen = buf[27];
	return 0;
}
