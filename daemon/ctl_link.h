/* SPDX-License-Identifier: MIT */
/*
 * The transports' parts of the control socket, without knowing any
 * transport: what a transport reports of a link in `links`
 * (smc_transport_ops.link_info), its per-worker table in `stats`
 * (pool_name, pool_info: rdma's CQ pool as "cq"), and `debug fail-link`
 * (link_fail). All of these read or change a worker's own structures, so
 * they run on that worker's thread (a worker_job), never on the main
 * thread.
 */
#ifndef SMCPROXY_CTL_LINK_H
#define SMCPROXY_CTL_LINK_H

#include <stddef.h>

#include <jansson.h>

struct proxy;
struct link;
struct smc_transport_ops;

/* Adds the fields lnk's transport reports of it (device, port, gid,
 * qp_num, ...) to obj; nothing for a transport without link_info, or a
 * link it has no state for. */
void ctl_link_fields(json_t *obj, const struct link *lnk);

/* One entry per row of transport t's table of p (t->pool_info), each with
 * "worker" first; an empty array when t is off on p or has no table. */
json_t *ctl_pool_json(struct proxy *p, const struct smc_transport_ops *t);

/*
 * Fails link `link` of the one active link group of p whose id starts with
 * prefix (lower-case hex), through its transport's link_fail. Returns 0
 * with the group's shown id in id; else -ENOENT (no such group), -EEXIST
 * (several), -ERANGE (no such link), -ENOTSUP (its transport's links
 * cannot fail alone), -ENOLINK (down already, or not connected) or
 * link_fail's error, with a message for the operator in errbuf.
 */
int ctl_link_fail(struct proxy *p, const char *prefix, unsigned link,
		  char id[17], char *errbuf, size_t errlen);

#endif
