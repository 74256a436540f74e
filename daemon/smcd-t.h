/* SPDX-License-Identifier: MIT */
/* Types of the daemon (smcd.h). Types only. */
#ifndef SMCPROXY_SMCD_T_H
#define SMCPROXY_SMCD_T_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "cfg-t.h"
#include "ctl_pools-t.h"
#include "intercept/intercept-t.h"
#include "ctl_server-t.h"
#include "metrics-t.h"
#include "worker-t.h"

/* The main thread's state: the data plane runs in the workers. */
struct smcd {
	uv_loop_t loop;
	struct cfg *cfg;
	char *cfg_path;			/* NULL: the embedded default */
	struct worker_pool workers;
	struct ctl_server ctl;
	struct ctl_pools pools;		/* the stats reply's per-worker tables */
	struct metrics metrics;		/* the HTTP endpoint, when configured */
	struct intercept intercept;	/* intercept ebpf: the attached programs */
	bool intercept_on;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t housekeeping;	/* watchdog and STATUS */
	uv_timer_t drain_timer;
	uint64_t watchdog_usec;
	uint64_t housekeeping_ms;
	uint64_t start_ms;
	uint64_t reloads;
	bool stopping;
	bool finishing;
	bool stall_logged;		/* a worker's loop stopped: said once */
	unsigned stalled_worker;	/* which, for the all-clear */
	unsigned open_handles;
	int ready_fd;			/* daemonized: tells the parent we are up */
	/* Why a configured transport is not up ("" when all are), found at
	 * start: transports do not come or go while the daemon runs. */
	char transports_down[192];
	/* What the last probe of the client's address found, per family
	 * (enum route_back; -1: not probed): said again only when it changes. */
	int client_route[2];
};

#endif
