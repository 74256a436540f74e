/* SPDX-License-Identifier: MIT */
/* The daemon: owns the config, the main event loop, the worker threads
 * (the data plane) and the control socket, and ties them to signals and
 * systemd. */
#ifndef SMCPROXY_SMCD_H
#define SMCPROXY_SMCD_H

#include <jansson.h>

#include "cfg.h"
#include "ctl_server.h"
#include "smcd-t.h"
#include "worker.h"

/* Sets up everything; on failure logs why and returns -errno. */
int smcd_init(struct smcd *d, struct cfg *cfg, const char *cfg_path, int ready_fd);
/* Runs until shutdown finishes; returns the exit status. */
int smcd_run(struct smcd *d);

/*
 * Reloads the config file. On success returns 0 and, when applied/restart
 * are not NULL, malloc'd comma-separated key lists; on failure -errno with
 * a malloc'd message (file:line:column lines) in *err.
 */
int smcd_reload(struct smcd *d, char **applied, char **restart, char **err);

/* Control socket commands (ctl_cmds.c). */
json_t *smcd_ctl_handle(struct ctl_server *s, const struct ctl_request *req, char **err);
/* The whole ok reply to "stats", as the socket sends it: what both the
 * socket and the HTTP endpoint render (new reference, NULL: no memory). */
json_t *smcd_stats_reply(struct smcd *d);

#endif
