/* SPDX-License-Identifier: MIT */
/* The CDC message codec (smcproxy-protocol(7), "CDC messages"). */
#ifndef SMCPROXY_CDC_H
#define SMCPROXY_CDC_H

#include <stddef.h>

#include "cdc-t.h"

/* Writes m into one LINK_MSG_LEN slot (reserved bytes zeroed). */
void cdc_encode(const struct cdc_msg *m, uint8_t buf[LINK_MSG_LEN]);
/*
 * Decodes a slot of len bytes: 0, or -EBADMSG when len is not
 * LINK_MSG_LEN, the type or length byte is wrong, unknown flag bits or
 * reserved bytes are set, or STOPPING comes without ABORT. Cursor ranges depend on the ring and are the
 * caller's to check.
 */
int cdc_decode(const uint8_t *buf, size_t len, struct cdc_msg *m);

#endif
