/* SPDX-License-Identifier: MIT */
/*
 * A worker's events as log lines (worker_log.c): the handlers of struct
 * proxy_ops that only log, which worker.c puts in its table. Each runs on
 * the worker's thread, with p->data the worker.
 */
#ifndef SMCPROXY_WORKER_LOG_H
#define SMCPROXY_WORKER_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "worker-t.h"

/* "worker 1: " in front of a worker's log lines when there are several,
 * else "": written into buf (len bytes) or a constant. */
const char *worker_tag(const struct worker *w, char *buf, size_t len);

void worker_on_proxy_event(struct proxy *p, enum proxy_event ev,
			   const struct flow *f, int err);
void worker_on_lgr_event(struct proxy *p, enum lgr_event ev,
			 const struct lgr *lgr, int err);
void worker_on_peer_refused(struct proxy *p, const struct sockaddr *peer,
			    enum smc_refusal why);
void worker_on_ring_short(struct proxy *p, enum rmb_short why,
			  const struct rmb_peer *peer);
void worker_on_no_port(struct proxy *p, const struct sockaddr *dest, uint64_t refused);

#endif
