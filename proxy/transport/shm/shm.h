/* SPDX-License-Identifier: MIT */
/*
 * The shm transport: link groups between two daemons of one host (what
 * SMC-D loopback does for containers). Each side's receive rings and
 * message queues live in a sealed memfd the peer maps; eventfds are the
 * doorbells; both travel over a UNIX socket in shm.dir, which then stays
 * open so that the peer's death is seen at once. Everything else reaches
 * it through its ops, found in the registry (smc/transport.h).
 */
#ifndef SMCPROXY_SHM_H
#define SMCPROXY_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "smc/transport-t.h"

#define SHM_NAME_MAX	100		/* the socket's basename, at most */

extern const struct smc_transport_ops shm_ops;

/*
 * Judges the address of a handshake (CLC_TLV_SHM_NAME): the peer joins the
 * name to its shm.dir, so it must stay a plain basename there: 1 to
 * SHM_NAME_MAX bytes, no slash, not "." or "..", and a character set
 * ([A-Za-z0-9._-]) that needs no quoting in logs or shells. 0 or -EBADMSG.
 */
int shm_name_check(const uint8_t *v, size_t len);

#endif
