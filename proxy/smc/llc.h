/* SPDX-License-Identifier: MIT */
/* The LLC message codec (smcproxy-protocol(7), "Link messages"). */
#ifndef SMCPROXY_LLC_H
#define SMCPROXY_LLC_H

#include <stddef.h>

#include "llc-t.h"

/* Writes m into one LINK_MSG_LEN slot (reserved bytes zeroed). */
void llc_encode(const struct llc_msg *m, uint8_t buf[LINK_MSG_LEN]);
/*
 * Decodes a slot of len bytes: 0, or -EBADMSG when len is not
 * LINK_MSG_LEN, the type is unknown, the length byte is wrong, a reserved
 * byte or an undefined DELETE_LINK flag is set, the family is not 4 or 6 (bytes 4..15 of a family-4 address
 * must be zero), the port is 0 or the decline reason out of range.
 */
int llc_decode(const uint8_t *buf, size_t len, struct llc_msg *m);

#endif
