/* SPDX-License-Identifier: MIT */
/*
 * What conn.c and ringmove.c, the two halves of a flow's data path, call
 * of each other. Private to the SMC core: conn.h is the interface.
 */
#ifndef SMCPROXY_CONN_INT_H
#define SMCPROXY_CONN_INT_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn-t.h"
#include "cursor.h"
#include "lgr-t.h"

static inline struct smc_net *conn_net(const struct conn *c)
{
	return c->lgr->net;
}

static inline uint32_t conn_rx_size(const struct conn *c)
{
	return c->rmb->size;
}

/* Bytes announced in our ring and not yet delivered. conn_on_cdc() takes
 * no producer cursor behind our consumer or more than a ring ahead. */
static inline uint32_t conn_rx_avail(const struct conn *c)
{
	int64_t n = cursor_diff(c->rx_cons, c->rx_prod, conn_rx_size(c));

	assert(n >= 0 && n <= conn_rx_size(c));
	return (uint32_t)n;
}

/* conn.c */
/* Our side resets: RST to the socket, ABORT to the peer. */
void conn_reset(struct conn *c, enum conn_end how, int err);
/* The socket -> the peer's ring, while there is room. */
void conn_fill(struct conn *c);

/* ringmove.c */
void conn_grow(struct conn *c);
void conn_rx_switch(struct conn *c);
void conn_tx_switch(struct conn *c);
void conn_drop_next(struct conn *c);

#endif
