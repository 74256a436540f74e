/* SPDX-License-Identifier: MIT */
/*
 * The shm transport: link groups between two daemons of one host (what
 * SMC-D loopback does for containers). Each side's receive rings and
 * message queues live in a sealed memfd the peer maps; eventfds are the
 * doorbells; both travel over the server's UNIX socket in its shm.dir
 * (the handshake names its path), which then stays
 * open so that the peer's death is seen at once. Everything else reaches
 * it through its ops, found in the registry (smc/transport.h).
 */
#ifndef SMCPROXY_SHM_H
#define SMCPROXY_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "smc/transport-t.h"

#define SHM_NAME_MAX	100		/* the socket's basename, at most */
#define SHM_PATH_MAX	107		/* a whole path: sun_path less its NUL */

extern const struct smc_transport_ops shm_ops;

/*
 * Judges a basename: 1 to SHM_NAME_MAX bytes, no slash, not "." or "..",
 * and a character set ([A-Za-z0-9._-]) that needs no quoting in logs or
 * shells. 0 or -EBADMSG.
 */
int shm_name_check(const uint8_t *v, size_t len);

/*
 * Judges the address of a handshake (CLC_TLV_SHM_NAME): where the
 * server's rendezvous socket is, so that two daemons need not agree on
 * shm.dir. Either an absolute path of at most SHM_PATH_MAX bytes whose
 * every component passes shm_name_check() (so no "//", no "." or "..",
 * no trailing slash), or, from a daemon of before, a bare basename that
 * the client joins to its own shm.dir. 0 or -EBADMSG, which makes the
 * whole message malformed.
 */
int shm_addr_check(const uint8_t *v, size_t len);

#endif
