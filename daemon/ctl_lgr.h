/* SPDX-License-Identifier: MIT */
/* The link-group views of the control socket: `links` and `peers`. */
#ifndef SMCPROXY_CTL_LGR_H
#define SMCPROXY_CTL_LGR_H

#include <jansson.h>

struct proxy;
struct lgr;

struct proxy_stats;
/* Adds the link-group counters of st to a stats body. */
void ctl_lgr_stats(json_t *body, const struct proxy_stats *st);
struct policy_ports;
/* Adds one worker's refused ports to refused.by_port of a stats body
 * (after ctl_lgr_stats()): {"6379": n, ..., "other": n}. */
void ctl_lgr_policy_ports(json_t *body, const struct policy_ports *pp);
/* One entry per link of every link group of p (run on p's thread). */
json_t *ctl_links_json(struct proxy *p);
/* One entry per link group or negative-cache entry of p. */
json_t *ctl_peers_json(struct proxy *p);

/* A group's id as the views show it: the first 8 bytes in hex. */
const char *ctl_lgr_id(const struct lgr *lgr, char buf[17]);
/*
 * How many active link groups of p have a shown id starting with prefix
 * (lower-case hex, 1 to 16 digits); *found is the first of them, NULL for
 * none. On p's thread.
 */
unsigned ctl_lgr_find(struct proxy *p, const char *prefix, struct lgr **found);

#endif
