/* SPDX-License-Identifier: MIT */
/*
 * The verbs calls of the data path. libibverbs defines them inline (they
 * jump straight into the provider), so tests could not wrap them with
 * -Wl,--wrap; these out-of-line shims can be, at the cost of one call.
 */
#ifndef SMCPROXY_VERBS_H
#define SMCPROXY_VERBS_H

#include <infiniband/verbs.h>

int vb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int vb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int vb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

#endif
