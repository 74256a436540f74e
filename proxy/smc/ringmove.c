/* SPDX-License-Identifier: MIT */
/*
 * Rings move (smcproxy-protocol(7), "Ring moves"): a flow starts on a
 * small ring, and the ring's owner offers a larger one (LLC RMB_MOVE)
 * when the peer's traffic fills it. The writer stops writing the old ring
 * at once, switches when the owner consumed all of it (so no byte lies in
 * the old ring after the switch, and failover replays only into the new
 * one), and says so in its next CDC (prod_gen). The kernel's SMC-R sizes
 * an RMB once per connection; this is what lets thousands of idle flows
 * share a budget while a bulk flow still gets buffers.ring.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "conn-int.h"
#include "cursor.h"
#include "lgr.h"
#include "link.h"
#include "llc.h"
#include "net.h"
#include "rmb.h"

/* How long a flow with a grown ring must stay idle before it is offered a
 * small ring again: long enough that a flow pausing between requests
 * keeps its ring, short against the budget a burst left behind. */
#define CONN_SHRINK_IDLE_MS	10000

/*
 * Our ring filled (or the peer said it waits on it): offer a larger one,
 * RMB_GROW_SHIFT classes up, or straight to the part every flow could
 * have at once (rmb_grow_want()), up to the group's ring_size, if the
 * budget has one to spare (rmb_get_spare(): growing never takes the last
 * of the budget that new flows' small rings need, and many flows growing
 * at once share a quarter of it). One offer at a time; none once the
 * peer finished writing.
 */
void conn_grow(struct conn *c)
{
	struct lgr *lgr = c->lgr;
	uint32_t size = c->rmb->size, want;
	struct rmb *r;

	if (!lgr->ring_move || c->rx_next || c->state != CONN_ACTIVE || c->peer_fin ||
	    size >= lgr->ring_size)
		return;
	want = rmb_grow_want(&lgr->rmbs, size, lgr->ring_size);
	r = rmb_get_spare(&lgr->rmbs, c->rmb, want);
	if (!r)
		return;
	c->rx_next = r;
	counter_inc(&conn_net(c)->stats->rings_grown);
	link_conn_work(c, CONN_TX_MOVE);
}

void conn_maybe_shrink(struct conn *c, uint64_t now)
{
	struct lgr *lgr = c->lgr;
	struct rmb *r;

	if (c->rx_next || c->state != CONN_ACTIVE || c->peer_fin ||
	    c->rmb->size <= lgr->ring_init)
		return;
	r = rmb_get_fair(&lgr->rmbs, c->rmb, lgr->ring_init);
	if (!r && (conn_rx_avail(c) || now - c->last_active_ms < CONN_SHRINK_IDLE_MS))
		return;
	if (!r)
		r = rmb_get_shrink(&lgr->rmbs, lgr->ring_init);
	if (!r)
		return;		/* not even that: asked again next sweep */
	c->rx_next = r;
	counter_inc(&conn_net(c)->stats->rings_shrunk);
	link_conn_work(c, CONN_TX_MOVE);
}

/* The peer switched to our next ring: the old one, all consumed, is free
 * for the next flow; cursors start again at the new ring's start. */
void conn_rx_switch(struct conn *c)
{
	struct smc_cursor zero = { 0, 0 };

	rmb_put(&c->lgr->rmbs, c->rmb);
	c->rmb = c->rx_next;
	c->rx_next = NULL;
	c->rx_ring = c->lgr->region + c->rmb->offset;
	list_del(&c->grown_node);
	if (c->rmb->size > c->lgr->ring_init)
		list_add_tail(&c->grown_node, &c->lgr->grown);
	c->rx_prod = c->rx_cons = c->rx_cons_sent = zero;
	c->rx_gen++;
}

/*
 * Switches our writes to the peer's next ring once the peer consumed
 * everything in the old one: then the peer surely has every byte we wrote
 * (tx_prod_done may jump to tx_prod), nothing of the old ring is left to
 * replay on a failover, and the transport's hold on it can go (rdma keeps
 * the mirror until its writes completed). The CDC that follows tells the
 * peer, even with no data to announce.
 */
void conn_tx_switch(struct conn *c)
{
	struct smc_cursor zero = { 0, 0 };

	if (!c->tx_move || !cursor_equal(c->tx_cons, c->tx_prod))
		return;
	if (c->tx_ring || c->tx_priv)
		c->lgr->ops->conn_detach(c);
	c->tx_ring = c->tx_next_ring;
	c->tx_priv = c->tx_next_priv;
	c->tx_next_ring = NULL;
	c->tx_next_priv = NULL;
	c->tx_size = c->tx_next.size;
	c->tx_peer_off = c->tx_next.offset;
	c->tx_prod = c->tx_prod_written = c->tx_prod_sent = c->tx_cons = c->tx_prod_done = zero;
	c->tx_gen++;
	c->tx_move = false;
	c->write_blocked = false;
	link_conn_work(c, CONN_TX_CDC);
}

/*
 * The peer offers a new ring for our writes. A repeat (a failover resends
 * the offer) is a no-op; a generation out of turn breaks the protocol. A
 * ring outside the peer's region resets the flow; one we cannot attach
 * (rdma: no mirror of that size left) is not taken: the flow goes on in
 * the old ring, and the peer frees the offered one when the flow ends.
 */
void conn_on_move(struct conn *c, const struct llc_rmb_move *m)
{
	uint8_t *ring = c->tx_ring;
	void *priv = c->tx_priv;
	int err;

	if (c->state != CONN_ACTIVE || !c->lgr->ring_move)
		return;
	if (m->gen == c->tx_gen || c->tx_move)
		return;
	if (m->gen != (uint8_t)(c->tx_gen + 1)) {
		conn_reset(c, CONN_END_PROTOCOL, -EPROTO);
		return;
	}
	c->tx_ring = NULL;
	c->tx_priv = NULL;
	err = c->lgr->ops->conn_attach(c, &m->rmb);
	c->tx_next_ring = c->tx_ring;
	c->tx_next_priv = c->tx_priv;
	c->tx_ring = ring;
	c->tx_priv = priv;
	if (err == -EINVAL) {
		conn_reset(c, CONN_END_PROTOCOL, -EPROTO);
		return;
	}
	if (err) {
		counter_inc(&conn_net(c)->stats->ring_moves_refused);
		return;
	}
	c->tx_move = true;
	c->tx_next = m->rmb;
	conn_tx_switch(c);
	if (!c->tx_move) {
		if (c->in_pending)
			conn_fill(c);
	} else {
		/* Bytes still in the old ring: the peer's next window update
		 * switches us, and a write-blocked note asks it for that at
		 * once rather than after a tenth of the ring. */
		c->write_blocked = true;
		link_conn_work(c, CONN_TX_CDC);
	}
}

/* The peer's next ring, attached when it was offered and never used. */
void conn_drop_next(struct conn *c)
{
	uint8_t *ring = c->tx_ring;
	void *priv = c->tx_priv;

	if (!c->tx_next_ring && !c->tx_next_priv)
		return;
	c->tx_ring = c->tx_next_ring;
	c->tx_priv = c->tx_next_priv;
	c->lgr->ops->conn_detach(c);
	c->tx_ring = ring;
	c->tx_priv = priv;
	c->tx_next_ring = NULL;
	c->tx_next_priv = NULL;
	c->tx_move = false;
}
