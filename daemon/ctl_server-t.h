/* SPDX-License-Identifier: MIT */
/* Types of the stats/control socket server (ctl_server.h). Types only. */
#ifndef SMCPROXY_CTL_SERVER_T_H
#define SMCPROXY_CTL_SERVER_T_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "ctl/ctl_proto.h"
#include "core/list.h"

struct ctl_server;

/*
 * Answers one request (req->cmd, with its arguments): returns the members
 * of the ok reply (a new reference, e.g. {"stats": {...}}; "v" and "ok" are
 * added here), or NULL with a malloc'd message in *err.
 */
typedef json_t *(*ctl_handler_fn)(struct ctl_server *s, const struct ctl_request *req,
				  char **err);

struct ctl_server {
	uv_loop_t *loop;
	uv_pipe_t pipe;
	char *path;
	ctl_handler_fn handler;
	void *data;			/* the owner's */
	struct list_head clients;
	unsigned n_clients;
	bool listening;
	unsigned open_handles;
	void (*close_cb)(struct ctl_server *s);
};

#endif
