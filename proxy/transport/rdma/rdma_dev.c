/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's device side, per worker: the device and port it
 * picks, the protection domains of link groups, the device's async events
 * (port changes, acted on at each worker's sweep), the CQ pool and the
 * worker's init and close. Apart because it outlives every link and group.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/container.h"
#include "cq.h"
#include "core/epset.h"
#include "core/loop.h"
#include "smc/lgr.h"
#include "smc/net.h"
#include "smc/rmb.h"
#include "rdma.h"
#include "rdma-int.h"
#include "smc/transport.h"

#define RDMA_CQ_SIZE		16384	/* entries per CQ; links take theirs */

/* Port events, seen by the worker that owns the device's async fd and
 * acted on by every worker at its next sweep. */
static atomic_uint rdma_port_gen;

struct rdma_dom *rdma__dom_new(struct ibv_context *ctx)
{
	struct rdma_dom *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pd = ibv_alloc_pd(ctx);
	if (!d->pd) {
		free(d);
		return NULL;
	}
	d->refs = 1;
	return d;
}

void rdma__dom_put(struct rdma_dom *d)
{
	if (d && --d->refs == 0) {
		ibv_dealloc_pd(d->pd);
		free(d);
	}
}

/* ------------------------------------------------------------------ */
/* The device. */

void rdma__on_async(struct epset_entry *e, uint32_t events)
{
	struct rdma_dev *dev = container_of(e, struct rdma_dev, async_ev);
	struct ibv_async_event ev;

	while (ibv_get_async_event(dev->ctx, &ev) == 0) {
		counter_inc(&dev->net->stats->rdma_async_events);
		switch (ev.event_type) {
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_GID_CHANGE:
			atomic_fetch_add(&rdma_port_gen, 1);
			break;
		default:
			/* QP errors also flush the QP's work requests: the
			 * owning worker fails the link from its CQ. */
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

/* Our port went down: a live link fails (what completed is taken first),
 * one still coming up goes down. */
static void rl_port_down(struct rdma_link *rl, void *arg)
{
	if (rl->state == RL_UP)
		rdma__link_fail(rl, -ENETDOWN);
	else
		rdma__link_down(rl, -ENETDOWN);
}

/*
 * Every lgr sweep: keepalives, links stuck draining, and port events the
 * async handler saw: on a port that went down, every link of this worker
 * fails.
 */
void rdma__sweep(struct smc_net *net, uint64_t now)
{
	struct rdma_dev *dev = rdma_dev_of(net);
	unsigned gen = atomic_load(&rdma_port_gen);
	struct ibv_port_attr pa;

	if (!dev)
		return;
	cq_pool_sweep(&dev->cqs);
	rdma__keepalive(net);
	rdma__reap_stuck(dev, now);
	if (gen == dev->port_gen)
		return;
	dev->port_gen = gen;
	if (ibv_query_port(dev->ctx, dev->port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
		return;
	rdma__each_link(net, rl_port_down, NULL);
}

static struct ibv_context *rdma_pick_device(uint8_t *port)
{
	int n = 0, i;
	struct ibv_context **list = rdma_get_devices(&n);
	struct ibv_context *found = NULL;

	for (i = 0; list && i < n && !found; i++) {
		struct ibv_device_attr da;
		unsigned pt;

		if (ibv_query_device(list[i], &da))
			continue;
		for (pt = 1; pt <= da.phys_port_cnt; pt++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(list[i], (uint8_t)pt, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
				found = list[i];
				*port = (uint8_t)pt;
				break;
			}
		}
	}
	if (list)
		rdma_free_devices(list);
	return found;
}

/*
 * Opens this worker's RDMA side: the first device with an active port, a
 * protection domain, the CQ pool and an rdma_cm listener. -ENODEV when the
 * host has no usable device (rdma is then not offered).
 */
int rdma__init(struct smc_net *net, char *errbuf, size_t errlen)
{
	const struct cfg *cfg = net->cfg;
	struct sockaddr_storage ss;
	struct rdma_dev *dev;
	unsigned n_cq;
	long cpus;
	int err, flags;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->net = net;
	dev->relaxed_ok = true;
	/* The mirrors get what the rings get: this worker's share of
	 * buffers.pool (0 is auto, resolved there), not the raw setting. */
	rmb_budget_init(&dev->tx_budget, net->rmb_budget.limit);
	dev->tx_budget.g_pinned = &net->stats->ring_bytes_pinned;
	list_init(&dev->zombies);
	dev->ctx = rdma_pick_device(&dev->port);
	if (!dev->ctx) {
		free(dev);
		snprintf(errbuf, errlen, "no RDMA device with an active port");
		return -ENODEV;
	}
	net->tp[smc_transport_slot(&rdma_ops)] = dev;
	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(dev->ctx->device));
	ibv_query_gid(dev->ctx, dev->port, 0, &dev->gid);
	/* cq.pool 0: the CPUs shared out over the workers, at least one. */
	n_cq = cfg->cq.pool;
	if (!n_cq) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n_cq = cpus > 0 ? (unsigned)cpus / (net->n_workers ? net->n_workers : 1) : 1;
		if (!n_cq)
			n_cq = 1;
	}
	err = cq_pool_init(&dev->cqs, &net->core->epset, dev->ctx, n_cq, RDMA_CQ_SIZE,
			   cfg->cq.poll_budget);
	if (err) {
		snprintf(errbuf, errlen, "%s: completion queues: %s", dev->name, strerror(-err));
		goto out_close;
	}
	dev->ech = rdma_create_event_channel();
	if (!dev->ech) {
		snprintf(errbuf, errlen, "rdma_create_event_channel: %s", strerror(errno));
		goto out_close;
	}
	flags = fcntl(dev->ech->fd, F_GETFL);
	fcntl(dev->ech->fd, F_SETFL, flags | O_NONBLOCK);
	dev->ech_ev.cb = rdma__on_cm;
	if (epset_add(&net->core->epset, dev->ech->fd, EPOLLIN, &dev->ech_ev) < 0) {
		snprintf(errbuf, errlen, "epoll: %s", strerror(errno));
		goto out_close;
	}
	/* The listener: the control address on a port of its own (each
	 * worker has one; the accept names it). */
	memset(&ss, 0, sizeof(ss));
	if (cfg->has_control)
		memcpy(&ss, &cfg->control.ss, sizeof(cfg->control.ss));
	else
		ss.ss_family = AF_INET;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	if (rdma_create_id(dev->ech, &dev->listen_id, dev, RDMA_PS_TCP) ||
	    rdma_bind_addr(dev->listen_id, (struct sockaddr *)&ss) ||
	    rdma_listen(dev->listen_id, 128)) {
		snprintf(errbuf, errlen, "rdma_cm listener: %s", strerror(errno));
		goto out_close;
	}
	dev->cm_port = ntohs(rdma_get_src_port(dev->listen_id));
	if (net->worker == 0) {
		flags = fcntl(dev->ctx->async_fd, F_GETFL);
		fcntl(dev->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
		dev->async_ev.cb = rdma__on_async;
		if (epset_add(&net->core->epset, dev->ctx->async_fd, EPOLLIN, &dev->async_ev) == 0)
			dev->owns_async = true;
	}
	dev->port_gen = atomic_load(&rdma_port_gen);
	return 0;

out_close:
	rdma__close(net);
	return -ENODEV;
}

void rdma__close(struct smc_net *net)
{
	struct rdma_dev *dev = rdma_dev_of(net);
	struct list_head *pos, *tmp;

	if (!dev)
		return;
	/* Links still draining: the CQs go now, so nothing can name them. */
	list_for_each_safe(pos, tmp, &dev->zombies) {
		struct rdma_link *rl = list_entry(pos, struct rdma_link, zombie_node);

		list_del(&rl->zombie_node);
		list_del(&rl->defer.node);
		rl_free_now(rl);
	}
	if (dev->owns_async)
		epset_del(&net->core->epset, dev->ctx->async_fd);
	if (dev->listen_id)
		rdma_destroy_id(dev->listen_id);
	if (dev->ech) {
		epset_del(&net->core->epset, dev->ech->fd);
		rdma_destroy_event_channel(dev->ech);
	}
	cq_pool_close(&dev->cqs);
	free(dev);
	net->tp[smc_transport_slot(&rdma_ops)] = NULL;
}

bool rdma__poll(struct smc_net *net)
{
	struct rdma_dev *dev = rdma_dev_of(net);

	return dev ? cq_pool_busy_poll(&dev->cqs) : false;
}

/* Before the loop blocks: another round for busy CQs (cq_pool_idle()),
 * once per worker for all its links. */
bool rdma__before_sleep(struct smc_net *net, bool run)
{
	struct rdma_dev *dev = rdma_dev_of(net);

	return dev ? cq_pool_idle(&dev->cqs, run) : false;
}
