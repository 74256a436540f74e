/* SPDX-License-Identifier: MIT */
/*
 * The HTTP endpoint for Prometheus and for readiness probes:
 *   GET /metrics  the Prometheus text of `smcproxyctl --prometheus stats`
 *   GET /ready    200 when the owner says ready, 503 with the reason if not
 * Only GET and HEAD; everything runs on the main thread's loop, never on
 * a worker. Requests are bounded in size (METRICS_REQUEST_MAX), in number
 * (max_clients at once, metrics_per_addr() of them from one address) and
 * in time (timeout_ms from the accept, whatever the client sends).
 */
#ifndef SMCPROXY_METRICS_H
#define SMCPROXY_METRICS_H

#include "cfg-t.h"
#include "metrics-t.h"

/* The most a request's line and headers may take: a scraper sends a few
 * hundred bytes; more is refused (431) without growing anything. */
#define METRICS_REQUEST_MAX	(16 * 1024)

/*
 * Binds addr (len 0: the endpoint is off, nothing is opened) and serves
 * it on loop. Returns 0, or -errno with errbuf set and nothing left open.
 * timeout_ms bounds a connection's life (and, rounded up to whole
 * seconds, its idle time: libmicrohttpd's unit).
 */
int metrics_init(struct metrics *m, uv_loop_t *loop, const struct cfg_addr *addr,
		 unsigned max_clients, uint64_t timeout_ms,
		 const struct metrics_ops *ops, void *data, char *errbuf, size_t errlen);

/* Connections one client address may hold: a quarter of max_clients,
 * at least one. */
unsigned metrics_per_addr(unsigned max_clients);

/* Whether the endpoint is serving. */
static inline bool metrics_enabled(const struct metrics *m)
{
	return m->mhd != NULL;
}

/* Closes the listener and every connection; close_cb (may be NULL) runs
 * once the loop has let go of the handles. Accepts a disabled endpoint. */
void metrics_close(struct metrics *m, void (*close_cb)(struct metrics *m));

#endif
