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
#include <unistd.h>

#include "clc.h"
#include "core/loop.h"
#include "lgr.h"
#include "link.h"
#include "net.h"
#include "transport/rdma/rdma.h"
#include "transport/shm/shm.h"

static struct smc_net *net_of_hook(struct loop_hook *h, size_t off)
{
	return (struct smc_net *)((char *)h - off);
}

/* End of a batch: ring the doorbells of links that posted, one per link
 * however many flows wrote. */
void smc_net__flush(struct smc_net *net)
{
	while (!list_empty(&net->kick_links)) {
		struct link *lnk = list_entry(net->kick_links.next, struct link, kick_node);

		list_del(&lnk->kick_node);
		link_flush(lnk);
	}
}

static bool smc_net_on_batch_end(struct loop_hook *h, bool run)
{
	smc_net__flush(net_of_hook(h, offsetof(struct smc_net, flush_hook)));
	return false;
}

/* Before the loop sleeps: the transports' look at their queues (see
 * smc_transport_ops.idle). */
static bool smc_net_on_before_sleep(struct loop_hook *h, bool run)
{
	struct smc_net *net = net_of_hook(h, offsetof(struct smc_net, sleep_hook));
	struct list_head *pos, *tmp;
	bool more = false;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->state == LGR_ACTIVE && lgr->ops->idle && lgr->ops->idle(lgr, run))
			more = true;
	}
	if (rdma_proxy_idle(net, run))
		more = true;
	return more;
}

void smc_net__kick_link(struct smc_net *net, struct link *lnk)
{
	if (list_empty(&lnk->kick_node))
		list_add_tail(&lnk->kick_node, &net->kick_links);
}

static void smc_net_on_timer(uv_timer_t *t)
{
	struct smc_net *net = t->data;

	rdma_sweep(net);
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

static int smc_net_read_host_id(uint8_t id[CLC_HOST_ID_LEN])
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

void smc_net_set_cfg(struct smc_net *net, const struct cfg *cfg)
{
	net->cfg = cfg;
	net->cork.enabled = cfg->autocork.enabled;
	net->cork.max_bytes = (uint32_t)cfg->autocork.max_bytes;
}

int smc_net_init(struct smc_net *net, char *errbuf, size_t errlen)
{
	const struct cfg *cfg = net->cfg;
	int err;

	net->control_fd = -1;
	net->shm_fd = -1;
	list_init(&net->lgrs);
	list_init(&net->shm_rvs);
	list_init(&net->kick_links);
	smc_net_set_cfg(net, cfg);
	net->rmb_budget.limit = cfg->buffers.pool;
	if (cfg->transport == CFG_TRANSPORT_AUTO || cfg->transport == CFG_TRANSPORT_SHM)
		net->lgr_transports |= CLC_TR_SHM;
	/* rdma only where a peer could use it: with a control port. */
	if ((cfg->transport == CFG_TRANSPORT_AUTO || cfg->transport == CFG_TRANSPORT_RDMA) &&
	    cfg->has_control && cfg->n_peers) {
		err = rdma_init(net, net->rdma_status, sizeof(net->rdma_status));
		if (!err)
			net->lgr_transports |= CLC_TR_RDMA;
	}
	err = smc_net_read_host_id(net->host_id);
	if (err && (net->lgr_transports & CLC_TR_SHM)) {
		/* No identity, no same-host detection: shm is off, and the
		 * daemon says why (a sandbox that hides /proc/sys does this). */
		net->lgr_transports &= ~CLC_TR_SHM;
		snprintf(net->shm_status, sizeof(net->shm_status),
			 "cannot read the host id from %s: %s", SMC_NET_HOST_ID_PATH,
			 strerror(-err));
	}
	if (cfg->auth.psk_file[0]) {
		err = clc_psk_load(cfg->auth.psk_file, net->psk, &net->psk_len);
		if (err) {
			snprintf(errbuf, errlen, "auth.psk_file %s: %s", cfg->auth.psk_file,
				 err == -EINVAL ? "must hold 16 to 1024 bytes" : strerror(-err));
			goto out_close_rdma;
		}
	}
	/* With no peer prefix, no proposal could be taken: no port. */
	if (cfg->has_control && cfg->n_peers) {
		err = lgr_listen(net, errbuf, errlen);
		if (err)
			goto out_close_rdma;
		if (net->lgr_transports & CLC_TR_SHM) {
			err = shm_listen(net, errbuf, errlen);
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
	return 0;

out_unlisten:
	lgr_unlisten(net);
out_close_rdma:
	rdma_close(net);
	return err;
}

void smc_net_poll_control(struct smc_net *net, bool on)
{
	lgr_poll_control(net, on);
}

void smc_net_unlisten(struct smc_net *net)
{
	lgr_unlisten(net);
	shm_unlisten(net);
}

void smc_net_shutdown(struct smc_net *net)
{
	net->closing = true;
	if (net->timer_open) {
		net->timer_open = false;
		loop_close_handle(net->core, (uv_handle_t *)&net->lgr_timer);
	}
	lgr_close_all(net);
}

void smc_net_close(struct smc_net *net)
{
	rdma_close(net);	/* its fds are in the loop's set */
}
