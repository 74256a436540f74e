/* SPDX-License-Identifier: MIT */
/* Types of the HTTP metrics endpoint (metrics.h). Types only. */
#ifndef SMCPROXY_METRICS_T_H
#define SMCPROXY_METRICS_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "core/addr.h"
#include "core/list.h"

struct MHD_Daemon;
struct metrics;

/* What the endpoint asks its owner, on the main thread. */
struct metrics_ops {
	/* Writes the body of /metrics (Prometheus text 0.0.4); 0 or -errno. */
	int (*render)(struct metrics *m, FILE *out);
	/* Whether the daemon is ready; when not, why (one line) in why. */
	bool (*ready)(struct metrics *m, char *why, size_t len);
};

/*
 * The HTTP listener of "metrics.listen": libmicrohttpd without a thread
 * of its own, driven by the main loop through its epoll fd (a uv_poll)
 * and its next timeout (a uv_timer). Off (mhd NULL) when no address is
 * configured.
 */
struct metrics {
	uv_loop_t *loop;
	struct MHD_Daemon *mhd;
	uv_poll_t poll;			/* MHD's epoll fd */
	uv_timer_t timer;		/* MHD_get_timeout() */
	const struct metrics_ops *ops;
	void *data;			/* the owner's */
	char addr[ADDR_STRLEN];		/* bound to, for the log */
	uint64_t requests;		/* answered, any status */
	uint64_t request_ms;		/* a connection's whole life at most */
	struct list_head conns;		/* struct metrics_conn, oldest first */
	uint64_t cut;			/* connections shut down at their deadline */
	unsigned open_handles;
	bool closing;
	void (*close_cb)(struct metrics *m);
};

#endif
