/* SPDX-License-Identifier: MIT */
/* Flows: one per redirected application connection. */
#ifndef SMCPROXY_FLOW_H
#define SMCPROXY_FLOW_H

#include "flow-t.h"

/*
 * Takes an accepted application socket: reads its original destination,
 * refuses loops, picks the flow's mode and starts carrying it. Always takes
 * ownership of fd (closes it on failure, with an RST). Returns 0 or -errno.
 */
int flow_open(struct proxy *p, int fd, const struct sockaddr_storage *client);

/* Resets the flow: RST to the application and to the far side. */
void flow_abort(struct flow *f);

#endif
