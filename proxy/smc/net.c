/* SPDX-License-Identifier: MIT */
/*
 * The SMC layer of one worker (net.h): what proxy.c did for link groups
 * before the layers were apart. It hooks into the worker's loop for the
 * doorbells at the end of each batch and for the transports' look at
 * their queues before the loop sleeps, and keeps the link-group timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clc.h"
#include "core/loop.h"
#include "lgr.h"
#include "link.h"
#include "liveness.h"
#include "net.h"
#include "conn.h"
#include "policy.h"
#include "rmb.h"
#include "transport.h"

static struct smc_net *net_of_hook(struct loop_hook *h, size_t off)
{
	return (struct smc_net *)((char *)h - off);
}

/* End of a batch: the bytes the batch's CDCs announced go to their
 * sockets, one write per flow however many CDCs came for it; then the
 * failures the batch raised (lgr.h, "Failure"), then the doorbells of
 * links that posted, one per link however many flows wrote; a doorbell
 * the transport refuses schedules one more failure. */
void smc_net__flush(struct smc_net *net)
{
	do {
		conn_rx_run(net);
		lgr__run_sched(net);
		while (!list_empty(&net->kick_links)) {
			struct link *lnk = list_entry(net->kick_links.next, struct link, kick_node);

			list_del(&lnk->kick_node);
			link_flush(lnk);
		}
	} while (!list_empty(&net->lgrs_sched));
	net->batch++;	/* the next batch: lgr_rx_room() counts anew */
}

static bool smc_net_on_batch_end(struct loop_hook *h, bool run)
{
	smc_net__flush(net_of_hook(h, offsetof(struct smc_net, flush_hook)));
	return false;
}

/* Before the loop sleeps: each transport's look at its queues
 * (smc_transport_ops.before_sleep). */
static bool smc_net_on_before_sleep(struct loop_hook *h, bool run)
{
	struct smc_net *net = net_of_hook(h, offsetof(struct smc_net, sleep_hook));
	const struct smc_transport_ops *t;
	bool more = false;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->before_sleep && t->before_sleep(net, run))
			more = true;
	return more;
}

/* Each transport's look at its queues that keeps peers from ringing us
 * (smc_transport_ops.poll): what came on the worker's links. */
static bool smc_net_poll(struct smc_net *net)
{
	const struct smc_transport_ops *t;
	bool found = false;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->poll && (net->lgr_transports & t->clc_bit) && t->poll(net))
			found = true;
	return found;
}

/* Busy polling. */
static bool smc_net_on_poll(struct loop_hook *h, bool run)
{
	return smc_net_poll(net_of_hook(h, offsetof(struct smc_net, poll_hook)));
}

void smc_net__kick_link(struct smc_net *net, struct link *lnk)
{
	if (list_empty(&lnk->kick_node))
		list_add_tail(&lnk->kick_node, &net->kick_links);
}

/*
 * The link-group timer. It runs after the batch's events, but a worker
 * kept busy (more events than one batch takes, or shm peers that skip the
 * doorbell while we run) has not read its links yet: a FLOW_ACCEPT or a
 * TEST_LINK_RSP may sit in a queue. The deadlines and the liveness sweep
 * judge what the peer said, so the queues are read first, as a busy poll
 * reads them, and what that found ends as a batch would (failures run,
 * answers rung) before anything is judged. Safe for shm's running flag:
 * the loop clears it before it blocks, after this callback.
 */
static void smc_net_on_timer(uv_timer_t *t)
{
	struct smc_net *net = t->data;
	const struct smc_transport_ops *tr;
	unsigned i;

	if (smc_net_poll(net))
		smc_net__flush(net);
	smc_transport_foreach(tr, i)
		if (tr->sweep)
			tr->sweep(net, uv_now(net->loop));
	liveness_sweep(net, uv_now(net->loop));
	lgr_sweep(net, uv_now(net->loop));
	if (!net->n_lgrs)
		uv_timer_stop(&net->lgr_timer);
}

void smc_net__timer(struct smc_net *net)
{
	if (!net->closing && !uv_is_active((uv_handle_t *)&net->lgr_timer))
		uv_timer_start(&net->lgr_timer, smc_net_on_timer, 100, 100);
}

/* This host's identity for the handshake: the kernel's boot id, shared by
 * every network namespace of the host and different in every VM, which is
 * exactly when shared memory between two daemons is possible. It lives in
 * /proc/sys, which ProcSubset=pid hides: the unit must not set that. */
#define SMC_NET_HOST_ID_PATH	"/proc/sys/kernel/random/boot_id"

int smc_net_read_host_id(uint8_t id[CLC_HOST_ID_LEN])
{
	char buf[64];
	ssize_t n;
	int fd, i, k = 0;

	fd = open(SMC_NET_HOST_ID_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	for (i = 0; buf[i] && k < 2 * CLC_HOST_ID_LEN; i++) {
		char c = buf[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			continue;
		if (k % 2 == 0)
			id[k / 2] = (uint8_t)(v << 4);
		else
			id[k / 2] |= (uint8_t)v;
		k++;
	}
	return k == 2 * CLC_HOST_ID_LEN ? 0 : -EINVAL;
}

/*
 * A reload that takes a peer's prefix away cuts it off at once: its link
 * groups, either role, fail (their running flows are reset, as when the
 * peer is lost), and the next flow is judged by the new peers; a client
 * group to a "via" daemon stands while some entry still names it. A group
 * whose prefix stays keeps going; its allow list applies to its next
 * flow (lgr_check_dest()).
 */
static void smc_net_drop_unlisted(struct smc_net *net)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);
		struct sockaddr_storage peer;

		if (lgr->state == LGR_DOWN || lgr->state == LGR_NEGATIVE)
			continue;
		memcpy(&peer, &lgr->peer, sizeof(peer));
		addr_unmap_v4(&peer);
		if (!policy_peer(net->cfg, (const struct sockaddr *)&peer) &&
		    !(lgr->role == LGR_ROLE_CLIENT &&
		      policy_is_via(net->cfg, (const struct sockaddr *)&peer)))
			lgr_fail(lgr, -EACCES);
	}
}

void smc_net_set_cfg(struct smc_net *net, const struct cfg *cfg)
{
	net->cfg = cfg;
	net->cork.enabled = cfg->autocork.enabled;
	net->cork.max_bytes = (uint32_t)cfg->autocork.max_bytes;
	smc_net_drop_unlisted(net);
}

static void smc_net_close_transports(struct smc_net *net)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->close)
			t->close(net);
}

static void smc_net_unlisten_transports(struct smc_net *net)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->unlisten)
			t->unlisten(net);
}

/*
 * Sets up every transport the config allows and this host can run; one
 * that cannot (its init() failed, or it needs a host id we could not
 * read) is not offered, and the reason waits in net->tp_off for the
 * daemon's log.
 */
static void smc_net_init_transports(struct smc_net *net, int host_id_err)
{
	const struct cfg *cfg = net->cfg;
	const struct smc_transport_ops *t;
	unsigned i;
	int err;

	smc_transport_foreach(t, i) {
		char *off = net->tp_off[smc_transport_slot(t)];

		if (cfg->transport != CFG_TRANSPORT_AUTO && !smc_transport_named(cfg, t))
			continue;
		/* Only where a peer could use it: with a control port. */
		if (t->needs_control && (!cfg->has_control || !cfg->n_peers))
			continue;
		/* No identity, no same-host detection (a sandbox that hides
		 * /proc/sys does this). */
		if (t->needs_host_id && host_id_err) {
			snprintf(off, sizeof(net->tp_off[0]), "cannot read the host id from %s: %s",
				 SMC_NET_HOST_ID_PATH, strerror(-host_id_err));
			continue;
		}
		err = t->init ? t->init(net, off, sizeof(net->tp_off[0])) : 0;
		if (!err)
			net->lgr_transports |= t->clc_bit;
	}
}

/* The budget's shortages, counted and told up (the daemon logs them). */
static void smc_net_ring_short(struct rmb_budget *b, enum rmb_short why,
			       const struct rmb_peer *peer)
{
	struct smc_net *net = b->ctx;

	if (why != RMB_SHORT_NONE)
		counter_inc(&net->stats->ring_shortages);
	if (net->ops->ring_short)
		net->ops->ring_short(net, why, peer);
}

int smc_net_init(struct smc_net *net, char *errbuf, size_t errlen)
{
	const struct cfg *cfg = net->cfg;
	const struct smc_transport_ops *t;
	unsigned i;
	int err;

	net->control_fd = -1;
	list_init(&net->lgrs);
	list_init(&net->kick_links);
	list_init(&net->rx_ready);
	list_init(&net->lgrs_sched);
	smc_net_set_cfg(net, cfg);
	rmb_budget_init(&net->rmb_budget, rmb_budget_share(cfg->buffers.pool, net->n_workers));
	net->rmb_budget.g_carved = &net->stats->ring_bytes_carved;
	net->rmb_budget.g_in_use = &net->stats->ring_bytes_in_use;
	net->rmb_budget.g_pinned = &net->stats->ring_bytes_pinned;
	net->rmb_budget.g_used_rings = net->stats->rings_used;
	net->rmb_budget.g_free_rings = net->stats->rings_free;
	net->rmb_budget.on_short = smc_net_ring_short;
	net->rmb_budget.ctx = net;
	counter_add(&net->stats->ring_bytes_limit, net->rmb_budget.limit);
	smc_net_init_transports(net, smc_net_read_host_id(net->host_id));
	if (cfg->auth.psk_file[0]) {
		err = clc_psk_load(cfg->auth.psk_file, net->psk, &net->psk_len);
		if (err) {
			snprintf(errbuf, errlen, "auth.psk_file %s: %s", cfg->auth.psk_file,
				 err == -EINVAL ? "must hold 16 to 1024 bytes" :
				 err == -EPERM ? "must be a regular file that no other user can read "
				 "or write (chmod 600, or 640 for a group)" : strerror(-err));
			goto out_close;
		}
	}
	/* With no peer prefix, no proposal could be taken: no port. */
	if (cfg->has_control && cfg->n_peers) {
		err = lgr_listen(net, errbuf, errlen);
		if (err)
			goto out_close;
		smc_transport_foreach(t, i) {
			if (!(net->lgr_transports & t->clc_bit) || !t->listen)
				continue;
			err = t->listen(net, errbuf, errlen);
			if (err)
				goto out_unlisten;
		}
	}
	uv_timer_init(net->loop, &net->lgr_timer);
	net->lgr_timer.data = net;
	net->timer_open = true;
	net->flush_hook.fn = smc_net_on_batch_end;
	loop_hook_add(net->core, LOOP_BATCH_END, &net->flush_hook);
	net->sleep_hook.fn = smc_net_on_before_sleep;
	loop_hook_add(net->core, LOOP_BEFORE_SLEEP, &net->sleep_hook);
	net->poll_hook.fn = smc_net_on_poll;
	loop_hook_add(net->core, LOOP_POLL, &net->poll_hook);
	return 0;

out_unlisten:
	smc_net_unlisten_transports(net);
	lgr_unlisten(net);
out_close:
	smc_net_close_transports(net);
	return err;
}

void smc_net_poll_control(struct smc_net *net, bool on)
{
	lgr_poll_control(net, on);
}

void smc_net_unlisten(struct smc_net *net)
{
	lgr_unlisten(net);
	smc_net_unlisten_transports(net);
}

/*
 * Waits, at most SMC_NET_DELETE_WAIT_MS, until the DELETE_LINKs of our
 * stop completed, reading the links' queues as a busy poll does (over
 * rdma that is what sees the send completions). It blocks the worker, but
 * only once, when it stops: the flows drained or were aborted before.
 */
static void smc_net_wait_deletes(struct smc_net *net)
{
	uint64_t end = uv_hrtime() + SMC_NET_DELETE_WAIT_MS * 1000000ull;
	const struct timespec tick = { 0, 1000000 };

	smc_net__flush(net);	/* the doorbells */
	while (!lgr_deletes_done(net) && uv_hrtime() < end) {
		if (smc_net_poll(net))
			smc_net__flush(net);
		nanosleep(&tick, NULL);
	}
}

void smc_net_shutdown(struct smc_net *net)
{
	net->closing = true;
	if (net->timer_open) {
		net->timer_open = false;
		loop_close_handle(net->core, (uv_handle_t *)&net->lgr_timer);
	}
	if (lgr_delete_all(net))
		smc_net_wait_deletes(net);
	lgr_close_all(net);
}

void smc_net_close(struct smc_net *net)
{
	smc_net_close_transports(net);	/* their fds are in the loop's set */
	addr_local_close(&net->local_addrs);
}
