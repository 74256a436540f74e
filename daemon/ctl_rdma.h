/* SPDX-License-Identifier: MIT */
/*
 * The rdma parts of the control socket: a link's device and queue pair in
 * `links`, the CQ pool of a worker in `stats`, and `debug fail-link`. All
 * of these read or change a worker's own structures, so they run on that
 * worker's thread (a worker_job), never on the main thread.
 */
#ifndef SMCPROXY_CTL_RDMA_H
#define SMCPROXY_CTL_RDMA_H

#include <stddef.h>

#include <jansson.h>

struct proxy;
struct link;

/* Adds the rdma members of lnk (device, port, gid, qp_num, ...) to obj;
 * nothing for a link of another transport. */
void ctl_rdma_link_fields(json_t *obj, const struct link *lnk);

/* One entry per CQ of p's pool: its counters and the links using it; an
 * empty array when rdma is off. */
json_t *ctl_cq_json(struct proxy *p);

/*
 * Fails link `link` of the one active link group of p whose id starts with
 * prefix (lower-case hex), through rdma_link_fail(). Returns 0 with the
 * group's shown id in id; else -ENOENT (no such group), -EEXIST (several),
 * -ERANGE (no such link), -ENOTSUP (not an rdma link), -ENOLINK (down
 * already, or its queue pair not connected) or rdma_link_fail()'s error,
 * with a message for the operator in errbuf.
 */
int ctl_rdma_fail_link(struct proxy *p, const char *prefix, unsigned link,
		       char id[17], char *errbuf, size_t errlen);

#endif
