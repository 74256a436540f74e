/* SPDX-License-Identifier: MIT */
/*
 * What the files of the rdma transport call of each other (libuv's
 * internal.h): the ops each one implements for the table in rdma.c, and
 * the few link, link-group and device helpers that cross a file boundary.
 * Everything else stays static in its file. Private to this folder.
 */
#ifndef SMCPROXY_RDMA_INT_H
#define SMCPROXY_RDMA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-t.h"
#include "rdma.h"
#include "smc/net.h"
#include "smc/transport.h"

#define RDMA_RESOLVE_MS		2000

struct llc_rmb;

/* The worker's device side (net->tp[]), NULL when rdma is off. */
static inline struct rdma_dev *rdma_dev_of(const struct smc_net *net)
{
	return net->tp[smc_transport_slot(&rdma_ops)];
}

/* rdma_dev.c: the device, protection domains, the CQ pool. */
int rdma__init(struct smc_net *net, char *errbuf, size_t errlen);
void rdma__close(struct smc_net *net);
bool rdma__before_sleep(struct smc_net *net, bool run);
bool rdma__poll(struct smc_net *net);
void rdma__sweep(struct smc_net *net, uint64_t now);
/* The device's async events: a port event is acted on at the next sweep. */
void rdma__on_async(struct epset_entry *e, uint32_t events);
struct rdma_dom *rdma__dom_new(struct ibv_context *ctx);
void rdma__dom_put(struct rdma_dom *d);

/* rdma_cm.c: the rdma_cm event channel (the listener's and the links'). */
void rdma__on_cm(struct epset_entry *e, uint32_t events);

/* rdma_link.c: queue pairs, send queues, completions, link lifecycle. */
unsigned rdma__tx_room(struct link *lnk);
int rdma__post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN]);
void rdma__flush(struct link *lnk);
uint32_t rdma__tx_done(struct link *lnk);
void rdma__want_progress(struct link *lnk);
void rl_kick(struct rdma_link *rl);
void rl_quiet_update(struct rdma_link *rl);
bool rc_queue_pending(struct rdma_link *rl, struct conn *c);
struct rdma_link *rl_new(struct rdma_dev *dev, struct rdma_lgr *rg, unsigned idx);
int rl_create_qp(struct rdma_link *rl);
void rl_established(struct rdma_link *rl, uint32_t peer_qpn);
void rl_free_now(struct rdma_link *rl);
void rdma__link_free(struct rdma_link *rl);
void rdma__link_down(struct rdma_link *rl, int err);
void rdma__link_fail(struct rdma_link *rl, int err);
void rdma__each_link(struct smc_net *net, void (*fn)(struct rdma_link *rl, void *arg), void *arg);
void rdma__keepalive(struct smc_net *net);
void rdma__reap_stuck(struct rdma_dev *dev, uint64_t now);

/* rdma_lgr.c: link groups' regions and the flows on them. */
int rdma__lgr_prepare(struct lgr *lgr);
int rdma__lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len);
void rdma__lgr_close(struct lgr *lgr);
int rdma__conn_attach(struct conn *c, const struct llc_rmb *rmb);
void rdma__conn_detach(struct conn *c);
int rdma__write(struct conn *c, uint32_t off, uint32_t len);
void rdma__conn_moved(struct conn *c);

#endif
