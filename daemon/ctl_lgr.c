/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "core/addr.h"
#include "smc/clc.h"
#include "ctl_lgr.h"
#include "ctl_link.h"
#include "flow.h"
#include "smc/lgr.h"
#include "smc/rmb.h"
#include "proxy.h"

static const char *lgr_transport_name(const struct lgr *lgr)
{
	return lgr->ops ? lgr->ops->name : "-";
}

/* Enough of the id to tell groups apart in a table. */
const char *ctl_lgr_id(const struct lgr *lgr, char buf[17])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 8; i++) {
		buf[2 * i] = hex[lgr->id[i] >> 4];
		buf[2 * i + 1] = hex[lgr->id[i] & 15];
	}
	buf[16] = '\0';
	return buf;
}

unsigned ctl_lgr_find(struct proxy *p, const char *prefix, struct lgr **found)
{
	size_t n = strlen(prefix);
	unsigned matches = 0;
	struct lgr *lgr;
	char id[17];

	*found = NULL;
	for (lgr = lgr_next(&p->smc, NULL); lgr; lgr = lgr_next(&p->smc, lgr)) {
		if (lgr->state != LGR_ACTIVE || n == 0 || n > 16 ||
		    strncmp(ctl_lgr_id(lgr, id), prefix, n) != 0)
			continue;
		if (!matches++)
			*found = lgr;
	}
	return matches;
}

static const char *link_state_name(enum link_state s)
{
	switch (s) {
	case LINK_ACTIVE:
		return "active";
	case LINK_DOWN:
		return "down";
	}
	return "?";
}

/*
 * A row of `links` or `peers`: which worker, peer, role and group, then
 * rest (taken; NULL gives NULL, as json_pack() failing does).
 */
static json_t *ctl_lgr_row(const struct proxy *p, const struct lgr *lgr, json_t *rest)
{
	char peer[ADDR_STRLEN], id[17];
	json_t *row;

	if (!rest)
		return NULL;
	row = json_pack("{s:i, s:s, s:s, s:s}",
		"worker", (int)p->worker,
		"peer", addr_format((const struct sockaddr *)&lgr->peer, peer, sizeof(peer)),
		"role", lgr_role_name(lgr->role),
		"lgr", ctl_lgr_id(lgr, id));
	if (!row) {
		json_decref(rest);
		return NULL;
	}
	/* rest goes either way; its keys follow ours, in its order. */
	if (json_object_update_new(row, rest)) {
		json_decref(row);
		return NULL;
	}
	return row;
}

/*
 * Every link of the active groups, the down ones too: a group keeps a
 * failed link's slot, and an operator checking a failover wants to see it.
 * Each adds what its transport reports of it (ctl_link_fields(): an rdma
 * link its device and queue pair).
 */
json_t *ctl_links_json(struct proxy *p)
{
	json_t *arr = json_array();
	const struct lgr *lgr;

	for (lgr = lgr_next(&p->smc, NULL); lgr; lgr = lgr_next(&p->smc, lgr)) {
		unsigned i;

		if (lgr->state != LGR_ACTIVE)
			continue;
		for (i = 0; i < lgr->n_links; i++) {
			const struct link *lnk = &lgr->links[i];
			json_t *e;

			e = ctl_lgr_row(p, lgr, json_pack(
				"{s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:I}",
				"link", (int)i,
				"transport", lgr_transport_name(lgr),
				"state", link_state_name(lnk->state),
				"flows", (int)lnk->n_conns,
				"msgs_tx", (json_int_t)lnk->msgs_tx,
				"msgs_rx", (json_int_t)lnk->msgs_rx,
				"bytes_tx", (json_int_t)lnk->bytes_tx,
				"bytes_rx", (json_int_t)lnk->bytes_rx));
			ctl_link_fields(e, lnk);
			json_array_append_new(arr, e);
		}
	}
	return arr;
}

/*
 * A group's ring bytes, and its peer's account in this worker's budget:
 * what the peer's flows hold, its fair share and what is left of it, its
 * groups, and the rings it was refused.
 */
static void ctl_peer_rings(json_t *row, const struct lgr *lgr)
{
	const struct rmb_peer *peer = lgr->rmb_peer;
	uint64_t share;

	if (!row || !peer)
		return;
	share = rmb_peer_share(peer);
	json_object_update_new(row, json_pack("{s:I, s:I, s:I, s:I, s:i, s:I}",
		"ring_bytes", (json_int_t)lgr->rmbs.held,
		"peer_ring_bytes", (json_int_t)peer->held,
		"peer_share_bytes", (json_int_t)share,
		"peer_free_bytes", (json_int_t)(share > peer->held ? share - peer->held : 0),
		"peer_groups", (int)peer->groups,
		"peer_refused", (json_int_t)peer->refused));
}

json_t *ctl_peers_json(struct proxy *p)
{
	uint64_t now = uv_now(p->loop);
	json_t *arr = json_array();
	const struct lgr *lgr;

	for (lgr = lgr_next(&p->smc, NULL); lgr; lgr = lgr_next(&p->smc, lgr)) {
		bool neg = lgr->state == LGR_NEGATIVE;

		json_array_append_new(arr, ctl_lgr_row(p, lgr, json_pack(
			"{s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:s, s:I, s:I}",
			"state", lgr_state_name(lgr->state),
			"transport", lgr_transport_name(lgr),
			"links", (int)lgr->n_links,
			"flows", (int)lgr->n_conns,
			"flows_total", (json_int_t)lgr->flows_total,
			"bytes_tx", (json_int_t)lgr->bytes_tx,
			"bytes_rx", (json_int_t)lgr->bytes_rx,
			"reason", neg ? fallback_reason_name(lgr->neg_reason) : "none",
			"retry_in_ms", (json_int_t)(neg && lgr->neg_until_ms > now ?
						    lgr->neg_until_ms - now : 0),
			"age_ms", (json_int_t)(now - lgr->created_ms))));
		ctl_peer_rings(json_array_get(arr, json_array_size(arr) - 1), lgr);
	}
	return arr;
}

static json_t *per_decline(const counter_t *v)
{
	json_t *o = json_object();
	unsigned r;

	for (r = CLC_DECL_NONE + 1; r < CLC_DECL__MAX; r++)
		json_object_set_new(o, clc_decline_name(r),
				    json_integer((json_int_t)counter_get(&v[r])));
	return o;
}

void ctl_lgr_stats(json_t *body, const struct proxy_stats *st)
{
	json_t *rings, *by_size;
	int c;

	if (!body)
		return;
	json_object_set_new(body, "lgr", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"handshakes", (json_int_t)st->lgr_handshakes,
		"accepted", (json_int_t)st->lgr_accepted,
		"failures", (json_int_t)st->lgr_failures,
		"peer_closes", (json_int_t)st->lgr_peer_closes,
		"closes", (json_int_t)st->lgr_closes,
		"negative_cache_hits", (json_int_t)st->negative_cache_hits,
		"flows_reset", (json_int_t)st->flows_reset_link,
		"flows_reset_peer_stopped", (json_int_t)st->flows_reset_peer_stopped,
		"link_failovers", (json_int_t)st->link_failovers,
		"flows_moved", (json_int_t)st->flows_moved,
		"links_silent", (json_int_t)st->links_silent));
	json_object_set_new(body, "declines_sent", per_decline(st->declines_sent));
	json_object_set_new(body, "declines_received", per_decline(st->declines_received));
	json_object_set_new(body, "refused", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"proposals", (json_int_t)st->proposals_refused,
		"handshakes", (json_int_t)st->handshakes_refused,
		"handshakes_evicted", (json_int_t)st->handshakes_evicted,
		"groups", (json_int_t)st->groups_refused,
		"rendezvous", (json_int_t)st->rendezvous_refused,
		"auth", (json_int_t)st->auth_failures,
		"destinations", (json_int_t)st->dest_refused,
		"ports", (json_int_t)st->ports_refused,
		"floods", (json_int_t)st->floods_refused,
		"bad_messages", (json_int_t)st->bad_messages));
	json_object_set_new(body, "cdc", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"doorbells_saved", (json_int_t)st->doorbells_saved,
		"sent", (json_int_t)st->cdc_sent,
		"received", (json_int_t)st->cdc_received,
		"window_updates", (json_int_t)st->window_updates,
		"batches", (json_int_t)st->tx_batches,
		"batch_bytes", (json_int_t)st->tx_batch_bytes,
		"socket_writes", (json_int_t)st->sock_writes,
		"cork_events", (json_int_t)st->cork_events,
		"socket_reads", (json_int_t)st->sock_reads,
		"reads_deferred", (json_int_t)st->reads_deferred,
		"ring_full_local", (json_int_t)st->ring_full_local,
		"ring_full_remote", (json_int_t)st->ring_full_remote,
		"rings_grown", (json_int_t)st->rings_grown,
		"rings_shrunk", (json_int_t)st->rings_shrunk,
		"ring_moves_refused", (json_int_t)st->ring_moves_refused));
	/* The ring budget: summed over workers, the daemon's. */
	rings = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"budget_bytes", (json_int_t)st->ring_bytes_limit,
		"carved_bytes", (json_int_t)st->ring_bytes_carved,
		"in_use_bytes", (json_int_t)st->ring_bytes_in_use,
		"free_bytes", (json_int_t)(st->ring_bytes_limit - st->ring_bytes_in_use),
		"pinned_bytes", (json_int_t)st->ring_bytes_pinned,
		"shortages", (json_int_t)st->ring_shortages,
		"refused", (json_int_t)st->rings_refused,
		"refused_share", (json_int_t)st->rings_refused_share);
	/* Rings in use and free (kept warm) by size class, those with any. */
	by_size = json_object();
	for (c = 0; c < RMB_CLASSES; c++) {
		char name[16];
		uint64_t kib = (uint64_t)(RMB_MIN_SIZE << c) >> 10;

		if (!st->rings_used[c] && !st->rings_free[c])
			continue;
		if (kib >= 1024)
			snprintf(name, sizeof(name), "%lluMiB", (unsigned long long)(kib >> 10));
		else
			snprintf(name, sizeof(name), "%lluKiB", (unsigned long long)kib);
		json_object_set_new(by_size, name, json_pack("{s:I, s:I}",
			"used", (json_int_t)st->rings_used[c],
			"free", (json_int_t)st->rings_free[c]));
	}
	json_object_set_new(rings, "by_size", by_size);
	json_object_set_new(body, "rings", rings);
	json_object_set_new(body, "rdma", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
		"link_failures", (json_int_t)st->rdma_link_failures,
		"async_events", (json_int_t)st->rdma_async_events,
		"links_draining", (json_int_t)st->rdma_links_draining,
		"links_stuck", (json_int_t)st->rdma_links_stuck,
		"msg_completions", (json_int_t)st->rdma_msg_completions,
		"msg_complete_us", (json_int_t)st->rdma_msg_complete_us));
}

void ctl_lgr_policy_ports(json_t *body, const struct policy_ports *pp)
{
	json_t *refused = body ? json_object_get(body, "refused") : NULL;
	json_t *by = refused ? json_object_get(refused, "by_port") : NULL;
	uint64_t other = counter_get(&pp->other);
	char key[16];
	unsigned i;

	if (!refused)
		return;
	if (!by) {
		by = json_object();
		json_object_set_new(refused, "by_port", by);
	}
	for (i = 0; i < POLICY_PORTS; i++) {
		uint64_t v = atomic_load_explicit(&pp->slot[i], memory_order_relaxed);
		json_t *had;

		if (!v)
			continue;
		snprintf(key, sizeof(key), "%u", (unsigned)POLICY_SLOT_PORT(v));
		had = json_object_get(by, key);
		json_object_set_new(by, key, json_integer((json_int_t)(POLICY_SLOT_COUNT(v) +
			(had ? (uint64_t)json_integer_value(had) : 0))));
	}
	if (other) {
		json_t *had = json_object_get(by, "other");

		json_object_set_new(by, "other", json_integer((json_int_t)(other +
			(had ? (uint64_t)json_integer_value(had) : 0))));
	}
}
