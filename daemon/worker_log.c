/* SPDX-License-Identifier: MIT */
/*
 * A worker's events as log lines: what the data plane tells the daemon
 * through struct proxy_ops (proxy-t.h), said once per event or rate-limited
 * where a client or a peer chooses how often it happens. Runs on the
 * worker's thread; the rate limits are the pool's, shared by the workers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "flow.h"
#include "log.h"
#include "smc/lgr.h"
#include "smc/rmb.h"
#include "worker.h"
#include "worker_log.h"

/* "worker 1: " in front of a worker's log lines, when there are several. */
const char *worker_tag(const struct worker *w, char *buf, size_t len)
{
	if (w->pool->n < 2)
		return "";
	snprintf(buf, len, "worker %u: ", w->index);
	return buf;
}

void worker_on_proxy_event(struct proxy *p, enum proxy_event ev,
			   const struct flow *f, int err)
{
	struct worker *w = p->data;
	struct worker_pool *pool = w->pool;
	uint64_t now = uv_now(p->loop), in, out;
	char a[ADDR_STRLEN], b[ADDR_STRLEN], t[24];

	switch (ev) {
	case PROXY_EV_ACCEPT_PAUSED:
		log_warn("%saccept: %s; pausing accepts, retrying with back-off up to 1 s",
			 worker_tag(w, t, sizeof(t)), strerror(-err));
		break;
	case PROXY_EV_ACCEPT_RESUMED:
		log_info("%saccepting again after %llu pauses in all",
			 worker_tag(w, t, sizeof(t)),
			 (unsigned long long)p->stats.accept_pauses);
		break;
	case PROXY_EV_ACCEPT_ERROR:
		if (log_ratelimit_ok(&pool->rl_accept, now))
			log_warn("%saccept: %s; going on", worker_tag(w, t, sizeof(t)),
				 strerror(-err));
		break;
	case PROXY_EV_LOOP_REFUSED:
		if (!log_ratelimit_ok(&pool->rl_refused, now))
			break;
		log_notice("%srefused connection from %s: %s", worker_tag(w, t, sizeof(t)),
			   addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
			   err == -ELOOP ? "its destination is our own listener" :
			   err == -ENOENT ? "it was not redirected (no original destination)" :
			   err == -EHOSTUNREACH ? "it is our own outbound connection, redirected "
			   "back: the redirect rule must skip packets with our mark" :
			   err == -EADDRINUSE ? "it is another worker's outbound connection, "
			   "redirected back: the redirect rule must skip packets with our mark" :
			   err == -ENOTUNIQ ? "another worker had an outbound connection on its "
			   "tuple, and the kernel would not say whose socket holds it now" :
			   strerror(-err));
		break;
	case PROXY_EV_FLOW_SETUP_FAILED:
		if (!log_ratelimit_ok(&pool->rl_setup, now))
			break;
		log_warn("%sflow %s -> %s: %s; reset the client", worker_tag(w, t, sizeof(t)),
			 addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
			 addr_format((const struct sockaddr *)&f->dest, b, sizeof(b)),
			 strerror(-err));
		break;
	case PROXY_EV_FLOW_ENDED:
		if (log_get_level() < LOG_DEBUG)
			break;
		flow_bytes(f, &in, &out);
		log_debug("%sflow %llu %s -> %s ended%s%s: %llu bytes in, %llu out",
			  worker_tag(w, t, sizeof(t)), (unsigned long long)f->id,
			  addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
			  addr_format((const struct sockaddr *)&f->dest, b, sizeof(b)),
			  err ? ": " : "", err ? strerror(-err) : "",
			  (unsigned long long)in, (unsigned long long)out);
		break;
	}
}

/* Why a link went down, for the log: a silent peer says how long. */
static const char *worker_link_err(const struct proxy *p, int err, char *buf, size_t len)
{
	if (err == LGR_ERR_FLOOD) {
		snprintf(buf, len, "the peer opened more than %u flows in %u ms that were declined",
			 LGR_DECLINES_MAX, LGR_DECLINES_WINDOW_MS);
		return buf;
	}
	if (err != -EHOSTDOWN)
		return strerror(-err);
	snprintf(buf, len, "the peer said nothing for %llu ms (links.dead_after)",
		 (unsigned long long)p->cfg->links.dead_after_ms);
	return buf;
}

/* A peer can fail or close the groups it proposes at will: their end is
 * said within the setup rate limit; our own proposals' always. */
static bool lgr_end_log_ok(struct worker *w, const struct proxy *p, const struct lgr *lgr)
{
	return lgr->role != LGR_ROLE_SERVER ||
	       log_ratelimit_ok(&w->pool->rl_setup, uv_now(p->loop));
}

void worker_on_lgr_event(struct proxy *p, enum lgr_event ev,
			 const struct lgr *lgr, int err)
{
	struct worker *w = p->data;
	char a[ADDR_STRLEN], t[24], e[80];
	const char *peer = addr_format((const struct sockaddr *)&lgr->peer, a, sizeof(a));

	switch (ev) {
	case LGR_EV_UP:
		log_info("%slink group %s %s up: %s, %u links", worker_tag(w, t, sizeof(t)),
			 lgr->role == LGR_ROLE_CLIENT ? "to" : "from", peer,
			 lgr->ops ? lgr->ops->name : "?", lgr->n_links);
		break;
	case LGR_EV_NO_GROUP:
		/* At most once per peer and negative_ttl: the cache holds it. */
		log_notice("%sno link group to %s (%s%s%s): its flows use TCP for %llu ms",
			   worker_tag(w, t, sizeof(t)), peer,
			   fallback_reason_name(lgr->neg_reason), lgr->why[0] ? ": " : "",
			   lgr->why, (unsigned long long)p->cfg->fallback.negative_ttl_ms);
		break;
	case LGR_EV_FAILED:
		if (!lgr_end_log_ok(w, p, lgr))
			break;
		log_warn("%slink group %s %s failed: %s; its flows were reset",
			 worker_tag(w, t, sizeof(t)),
			 lgr->role == LGR_ROLE_CLIENT ? "to" : "from", peer,
			 worker_link_err(p, err, e, sizeof(e)));
		break;
	case LGR_EV_CLOSED:
		/* Our own stop closes every group: expected, not a warning. */
		if (!lgr_end_log_ok(w, p, lgr))
			break;
		log_info("%slink group %s %s closed: this daemon stops%s",
			 worker_tag(w, t, sizeof(t)),
			 lgr->role == LGR_ROLE_CLIENT ? "to" : "from", peer,
			 lgr->peer_delete ? " (the peer was told)" : "");
		break;
	case LGR_EV_PEER_CLOSED:
		/* An orderly stop of the peer (it said so): not a failure. Its
		 * flows drained first; any still open were reset. */
		if (!lgr_end_log_ok(w, p, lgr))
			break;
		log_info("%slink group %s %s closed: the peer daemon stopped",
			 worker_tag(w, t, sizeof(t)),
			 lgr->role == LGR_ROLE_CLIENT ? "to" : "from", peer);
		break;
	case LGR_EV_LINK_FAILOVER:
		log_warn("%sa link of link group %s %s failed: %s; its flows moved to another link",
			 worker_tag(w, t, sizeof(t)),
			 lgr->role == LGR_ROLE_CLIENT ? "to" : "from", peer,
			 worker_link_err(p, err, e, sizeof(e)));
		break;
	}
}

/* Peers choose how often they are refused: one rate limit for all of them,
 * shared by the workers, so that a flood costs a few lines a second. */
void worker_on_peer_refused(struct proxy *p, const struct sockaddr *peer,
			    enum smc_refusal why)
{
	struct worker *w = p->data;
	char a[ADDR_STRLEN], t[24];
	const char *what = "?", *where = "the control port", *then = "declined";

	if ((unsigned)why >= SMC_REFUSE_KINDS ||
	    !log_ratelimit_ok(&w->pool->rl_peers[why], uv_now(p->loop)))
		return;
	switch (why) {
	case SMC_REFUSE_PREFIX:
		what = "it is outside the peer prefixes";
		break;
	case SMC_REFUSE_AUTH:
		what = "it did not prove the auth.psk_file secret";
		break;
	case SMC_REFUSE_HANDSHAKES:
		what = "too many handshakes in progress (from it, or in all)";
		break;
	case SMC_REFUSE_GROUPS:
		what = "too many link groups (from it, or in all)";
		break;
	case SMC_REFUSE_RV_GROUP:
		what = "it names no link group waiting for its links";
		break;
	case SMC_REFUSE_RV_ADDR:
		what = "its link group's handshake came from another address";
		break;
	case SMC_REFUSE_RV_AUTH:
		what = "it did not prove its link group's secret";
		break;
	}
	if (why >= SMC_REFUSE_RV_GROUP) {
		where = "a link's rendezvous";
		then = why == SMC_REFUSE_RV_GROUP ? "rejected" :
		       "rejected; the link group waits for its real peer";
	}
	if (peer->sa_family == AF_UNSPEC)
		snprintf(a, sizeof(a), "(unknown address)");
	else
		addr_format(peer, a, sizeof(a));
	log_notice("%srefused peer %s on %s: %s; %s", worker_tag(w, t, sizeof(t)), a, where,
		   what, then);
}

/*
 * Once per shortage of the ring budget, not once per flow: which budget
 * ran out, and when it has room again, how many flows went without.
 */
void worker_on_ring_short(struct proxy *p, enum rmb_short why,
			  const struct rmb_peer *peer)
{
	const struct rmb_budget *b = &p->smc.rmb_budget;
	struct worker *w = p->data;
	struct sockaddr_storage ss;
	char a[ADDR_STRLEN] = "?", t[24];

	if (peer) {
		char *colon;

		lgr_rmb_peer_addr(peer, &ss);
		addr_format((const struct sockaddr *)&ss, a, sizeof(a));
		/* The address alone: an account has no port. */
		colon = strrchr(a, ':');
		if (colon && colon[1] == '0' && !colon[2]) {
			*colon = '\0';
			if (a[0] == '[' && colon[-1] == ']') {
				colon[-1] = '\0';
				memmove(a, a + 1, strlen(a));
			}
		}
	}
	switch (why) {
	case RMB_SHORT_NONE:
		log_notice("%sring budget has room again (%llu of %llu KiB held); "
			   "%llu flows went over tcp meanwhile (out_of_memory)",
			   worker_tag(w, t, sizeof(t)), (unsigned long long)(b->in_use >> 10),
			   (unsigned long long)(b->limit >> 10),
			   (unsigned long long)b->short_refused);
		break;
	case RMB_SHORT_POOL:
		log_warn("%sring budget spent: this worker's share of buffers.pool "
			 "(%llu KiB) is held by flows (%llu KiB); a flow of peer %s and "
			 "the next ones go over tcp (out_of_memory) until rings are free",
			 worker_tag(w, t, sizeof(t)), (unsigned long long)(b->limit >> 10),
			 (unsigned long long)(b->in_use >> 10), a);
		break;
	case RMB_SHORT_RESERVE:
		log_warn("%sring budget short: peer %s holds %llu KiB, all of this worker's "
			 "share of buffers.pool (%llu KiB) but the eighth kept for other peers; "
			 "its new flows go over tcp (out_of_memory)",
			 worker_tag(w, t, sizeof(t)), a, (unsigned long long)(peer->held >> 10),
			 (unsigned long long)(b->limit >> 10));
		break;
	case RMB_SHORT_PEER:
		log_warn("%sring budget short: peer %s holds %llu KiB, above its fair share "
			 "(%llu KiB of buffers.pool's %llu KiB over %u peers), and the rest is "
			 "kept for peers below theirs; its new flows go over tcp (out_of_memory)",
			 worker_tag(w, t, sizeof(t)), a, (unsigned long long)(peer->held >> 10),
			 (unsigned long long)(rmb_peer_share(peer) >> 10),
			 (unsigned long long)(b->limit >> 10), b->n_peers);
		break;
	case RMB_SHORT_REGION:
		log_warn("%sring budget: a link group's region of peer %s has no room for a "
			 "ring; flows go over tcp (out_of_memory)", worker_tag(w, t, sizeof(t)), a);
		break;
	case RMB_SHORT_HOST:
		log_warn("%sring budget: the host refused memory for a ring of peer %s "
			 "(malloc, or registration: RLIMIT_MEMLOCK); flows go over tcp "
			 "(out_of_memory)", worker_tag(w, t, sizeof(t)), a);
		break;
	}
}

/*
 * Once per episode of source port exhaustion (proxy_ops.no_port), with a
 * rate limit on top: the end is told only when its start was.
 */
void worker_on_no_port(struct proxy *p, const struct sockaddr *dest, uint64_t refused)
{
	struct worker *w = p->data;
	char a[ADDR_STRLEN], t[24];

	if (dest) {
		if (!log_ratelimit_ok(&w->pool->rl_no_port, uv_now(p->loop)))
			return;
		w->no_port_logged = true;
		log_warn("%sno free source port to %s: %s (net.ipv4.ip_local_port_range / "
			 "TIME_WAIT); flows to it are reset, or declined to the peer "
			 "(max_flows), until a connect finds one",
			 worker_tag(w, t, sizeof(t)), addr_format(dest, a, sizeof(a)),
			 strerror(EADDRNOTAVAIL));
		return;
	}
	if (!w->no_port_logged)
		return;
	w->no_port_logged = false;
	log_notice("%ssource ports free again: %llu connects found none meanwhile "
		   "(connect_no_port)", worker_tag(w, t, sizeof(t)),
		   (unsigned long long)refused);
}
