/* SPDX-License-Identifier: MIT */
/* The stats/control socket: a UNIX stream socket speaking ctl_proto. */
#ifndef SMCPROXY_CTL_SERVER_H
#define SMCPROXY_CTL_SERVER_H

#include <sys/types.h>

#include "ctl_server-t.h"

/*
 * Creates the socket at path (and its directory, 0755, when missing) with
 * the given mode. A stale socket left by a dead daemon is replaced; a live
 * one is an error (-EADDRINUSE). Returns 0 or -errno, with errbuf set.
 */
int ctl_server_init(struct ctl_server *s, uv_loop_t *loop, const char *path,
		    mode_t mode, ctl_handler_fn handler, char *errbuf, size_t errlen);
int ctl_server_set_mode(struct ctl_server *s, mode_t mode);
/* Closes the socket and every client, removes the socket file. */
void ctl_server_close(struct ctl_server *s, void (*close_cb)(struct ctl_server *s));

#endif
