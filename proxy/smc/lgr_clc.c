/* SPDX-License-Identifier: MIT */
/*
 * The peer handshake on the control port (smcproxy-protocol(7)), both
 * sides: proposal, accept or decline, confirm both ways, then the
 * transport's rendezvous. One TCP connection per link group, closed once
 * the group is up: flows are opened on the links afterwards. Transports
 * are the registry's (transport.h): each encodes, judges and connects to
 * its own address, carried in the TLV of its type.
 *
 * The control port faces the network. A proposal is taken only from a
 * configured peer prefix, and with auth.psk_file only from a peer that
 * proves the secret in the proposal itself (an HMAC over the message and
 * both ends of the connection); a peer that fails either is declined with
 * "policy" and counted, and learns nothing else. Nothing costly is
 * allocated before the proposer has confirmed: the accept needs only the
 * group's id, the transport's memory and doorbells come after a good
 * CONFIRM. Connections still in their handshake are limited per source
 * address and in all, apart from established groups (lgr.h).
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "clc.h"
#include "core/epset.h"
#include "core/loop.h"
#include "core/sock.h"
#include "fallback.h"
#include "lgr.h"
#include "net.h"
#include "transport.h"

#define HS_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP)

#define lgr_of_hs(e)	container_of(e, struct lgr, hs.ev)

static void hs_on_event(struct epset_entry *e, uint32_t events);

void lgr__hs_close(struct lgr *lgr)
{
	if (lgr->hs.fd >= 0) {
		close(lgr->hs.fd);
		lgr->hs.fd = -1;
	}
	lgr->hs.step = HS_DONE;
}

/* Encoded bytes of ours; the socket is fresh and the message small, so
 * a short send means the peer is not reading at all. */
static int hs_send_buf(struct lgr *lgr, const uint8_t *buf, int len)
{
	ssize_t n;

	if (len < 0)
		return len;
	n = send(lgr->hs.fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EMSGSIZE;
}

static int hs_send(struct lgr *lgr, const struct clc_msg *m)
{
	uint8_t buf[CLC_MSG_MAX];

	return hs_send_buf(lgr, buf, clc_encode(m, buf, sizeof(buf)));
}

/* Tells the layer above that peer was refused, and why (it logs at a
 * bounded rate: peers choose how often). */
static void hs_refused(struct smc_net *net, const struct sockaddr *peer, enum smc_refusal why)
{
	if (net->ops->peer_refused)
		net->ops->peer_refused(net, peer, why);
}

/* The two ends of the control connection fd, ours also in *local
 * (unmapped): 0 or -errno. */
static int hs_endpoints(int fd, const struct sockaddr *remote, bool client,
			struct clc_endpoints *ep, struct sockaddr_storage *local)
{
	socklen_t len = sizeof(*local);
	int err;

	if (getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return -errno;
	err = clc_endpoint_put((const struct sockaddr *)local, client ? ep->client : ep->server);
	if (!err)
		err = clc_endpoint_put(remote, client ? ep->server : ep->client);
	addr_unmap_v4(local);
	return err;
}

/* Before the peer's features are read, a reason it may not take goes as
 * internal. */
static void hs_send_decline(struct lgr *lgr, unsigned reason)
{
	struct clc_msg m = { .hdr.type = CLC_DECLINE };

	reason = clc_decline_for_peer(reason, lgr->peer_decl_stopping);
	m.decline.reason = (uint8_t)reason;
	counter_inc(&lgr->net->stats->declines_sent[reason]);
	hs_send(lgr, &m);
}

/* Client: the handshake ended without a link group. */
static void hs_fail(struct lgr *lgr, enum fallback_reason reason)
{
	lgr__hs_close(lgr);
	lgr__handshake_failed(lgr, reason);
}

/* Decline and fail: we are the side that refuses. */
static void hs_decline(struct lgr *lgr, unsigned reason)
{
	hs_send_decline(lgr, reason);
	hs_fail(lgr, fallback_of_decline(reason));
}

void lgr__hs_start_client(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	const struct sockaddr *peer = (const struct sockaddr *)&lgr->peer;	/* control port */
	int one = 1, fd;

	/* Our mark keeps the redirect rule off our own control traffic. */
	fd = sock_open_marked(peer->sa_family, net->mark);
	if (fd < 0)
		goto out_fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	lgr->hs.fd = fd;
	lgr->hs.ev.cb = hs_on_event;
	lgr->hs.step = HS_CONNECTING;
	if (sock_connect(fd, peer)) {
		hs_fail(lgr, FB_PEER_UNREACHABLE);
		return;
	}
	if (epset_add(&net->core->epset, fd, HS_EVENTS, &lgr->hs.ev) < 0)
		goto out_fail;
	return;

out_fail:
	hs_fail(lgr, FB_DECL_INTERNAL);
}

/* Where transport t's address is in a message's addr[]. */
static unsigned hs_addr_idx(const struct smc_transport_ops *t)
{
	assert(t->clc_tlv >= 1 && t->clc_tlv <= CLC_ADDRS_MAX);
	return t->clc_tlv - 1u;
}

/* Our addresses, for the transports of the bits set in which. */
static int hs_put_addrs(struct smc_net *net, unsigned which, bool accept, struct clc_addr *addr)
{
	const struct smc_transport_ops *t;
	unsigned i;
	int n;

	smc_transport_foreach(t, i) {
		struct clc_addr *a = &addr[hs_addr_idx(t)];

		if (!(which & t->clc_bit) || !t->addr_encode)
			continue;
		n = t->addr_encode(net, accept, a->value, sizeof(a->value));
		if (n < 0)
			return n;
		a->len = (uint8_t)n;
	}
	return 0;
}

/*
 * Whether every address in addr is well-formed for its transport: a
 * malformed one makes the whole message malformed (-EBADMSG), wherever
 * the handshake is, as the codec's own checks do.
 */
static int hs_check_addrs(const struct clc_addr *addr)
{
	const struct smc_transport_ops *t;
	unsigned type;

	for (type = 1; type <= CLC_ADDRS_MAX; type++) {
		const struct clc_addr *a = &addr[type - 1];

		t = smc_transport_by_tlv(type);
		if (a->len && t && t->addr_check && t->addr_check(a->value, a->len))
			return -EBADMSG;
	}
	return 0;
}

/* Client: whether the accept's address for t is one we can connect to. */
static int hs_addr_usable(const struct smc_transport_ops *t, const struct clc_accept *a)
{
	const struct clc_addr *ad = &a->addr[hs_addr_idx(t)];

	return t->addr_usable ? t->addr_usable(ad->value, ad->len) : 0;
}

static void hs_client_propose(struct lgr *lgr)
{
	struct smc_net *net = lgr->net;
	struct clc_msg m = { .hdr.type = CLC_PROPOSAL };
	struct clc_proposal *pr = &m.proposal;
	uint8_t buf[CLC_MSG_MAX];
	int len;

	pr->features = (net->psk_len ? CLC_FEAT_PSK : 0) | CLC_FEAT_RING_MOVE | CLC_FEAT_DELETE |
		       CLC_FEAT_CLIENT_ADDR | CLC_FEAT_STOP_ABORT | CLC_FEAT_DECL_STOPPING;
	pr->transports = net->lgr_transports;
	memcpy(pr->host_id, net->host_id, CLC_HOST_ID_LEN);
	if (getrandom(pr->nonce, sizeof(pr->nonce), 0) != sizeof(pr->nonce)) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	pr->ring_size = (uint32_t)net->cfg->buffers.ring;
	pr->links = (uint16_t)net->cfg->links.per_peer;
	pr->max_flows_per_link = (uint16_t)net->cfg->links.max_flows_per_link;
	if (hs_put_addrs(net, pr->transports, false, pr->addr)) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	if (hs_endpoints(lgr->hs.fd, (const struct sockaddr *)&lgr->peer, true, &lgr->hs.ep,
			 &lgr->local)) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	len = clc_encode(&m, buf, sizeof(buf));
	/* Signed as encoded: the acceptor checks these very bytes. */
	if (len < 0 || (net->psk_len &&
			clc_mac_proposal(net->psk, net->psk_len, &lgr->hs.ep, buf, (size_t)len,
					 pr->mac))) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	memcpy(buf + CLC_PROPOSAL_MAC_OFF, pr->mac, CLC_MAC_LEN);
	lgr->hs.prop = *pr;
	if (hs_send_buf(lgr, buf, len)) {
		hs_fail(lgr, FB_PEER_UNREACHABLE);
		return;
	}
	lgr->hs.step = HS_WAIT_ACCEPT;
}

static void hs_client_on_accept(struct lgr *lgr, const struct clc_accept *a)
{
	struct smc_net *net = lgr->net;
	const struct clc_proposal *pr = &lgr->hs.prop;
	const struct smc_transport_ops *t = smc_transport_by_clc(a->transport);
	struct clc_msg m = { .hdr.type = CLC_CONFIRM };
	uint8_t mac[CLC_MAC_LEN];

	/* An answer outside what we offered is the peer's bug: decline it
	 * as internal rather than guess. */
	if (!(a->transport & pr->transports) || !t || a->links > pr->links || !a->links ||
	    a->max_flows_per_link > pr->max_flows_per_link || hs_addr_usable(t, a)) {
		counter_inc(&net->stats->bad_messages);
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	if (!!net->psk_len != !!(a->features & CLC_FEAT_PSK)) {
		counter_inc(&net->stats->auth_failures);
		hs_decline(lgr, CLC_DECL_POLICY);
		return;
	}
	if (net->psk_len) {
		if (clc_mac_accept(net->psk, net->psk_len, &lgr->hs.ep, pr, a, mac) ||
		    !clc_mac_equal(mac, a->mac)) {
			counter_inc(&net->stats->auth_failures);
			hs_decline(lgr, CLC_DECL_POLICY);
			return;
		}
		if (clc_mac_confirm(net->psk, net->psk_len, &lgr->hs.ep, pr, a, m.confirm.mac)) {
			hs_decline(lgr, CLC_DECL_INTERNAL);
			return;
		}
		lgr->has_secret = true;
	}
	/* Without a PSK too: it still ties the rendezvous to these nonces. */
	if (clc_link_secret(net->psk, net->psk_len, pr, a, lgr->secret)) {
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	lgr->hs.acc = *a;
	memcpy(lgr->id, a->lgr_id, CLC_LGR_ID_LEN);
	memcpy(lgr->peer_host_id, a->host_id, CLC_HOST_ID_LEN);
	lgr->ring_size = pr->ring_size;
	lgr->ring_move = a->features & CLC_FEAT_RING_MOVE;
	lgr->peer_delete = a->features & CLC_FEAT_DELETE;
	lgr->peer_stop_abort = a->features & CLC_FEAT_STOP_ABORT;
	lgr->peer_decl_stopping = a->features & CLC_FEAT_DECL_STOPPING;
	lgr->client_addr = a->features & CLC_FEAT_CLIENT_ADDR;
	if (lgr__setup_links(lgr, a->links, a->max_flows_per_link)) {
		hs_decline(lgr, CLC_DECL_NO_MEMORY);
		return;
	}
	if (hs_send(lgr, &m)) {
		hs_fail(lgr, FB_PEER_UNREACHABLE);
		return;
	}
	lgr->hs.step = HS_WAIT_READY;
}

/* The peer is ready: connect the transport. */
static void hs_client_on_ready(struct lgr *lgr)
{
	const struct smc_transport_ops *t = smc_transport_by_clc(lgr->hs.acc.transport);
	const struct clc_addr *a;
	int err;

	lgr__hs_close(lgr);
	lgr->state = LGR_RENDEZVOUS;
	if (t && !hs_addr_usable(t, &lgr->hs.acc)) {
		a = &lgr->hs.acc.addr[hs_addr_idx(t)];
		err = t->lgr_connect(lgr, a->value, a->len);
	} else {
		err = -EPROTONOSUPPORT;
	}
	if (err && lgr->state == LGR_RENDEZVOUS)
		lgr__handshake_failed(lgr, fallback_of_errno(err));
}

/* Server: which transport to accept (the first of the registry's order
 * that both sides offer and that can serve the proposer), or NULL. */
static const struct smc_transport_ops *hs_server_pick(struct lgr *lgr,
						      const struct clc_proposal *pr)
{
	struct smc_net *net = lgr->net;
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if ((pr->transports & t->clc_bit) && (net->lgr_transports & t->clc_bit) &&
		    t->can_serve(net, pr))
			return t;
	return NULL;
}

/*
 * Server: a proposal (msg, len: as received, for its MAC). Only what the
 * accept needs is decided here; nothing is allocated until the CONFIRM
 * (hs_server_on_confirm), so a proposer without the secret, or one that
 * never confirms, costs a handshake slot and no more.
 */
static void hs_server_on_proposal(struct lgr *lgr, const struct clc_proposal *pr,
				  const uint8_t *msg, size_t len)
{
	struct smc_net *net = lgr->net;
	struct clc_msg m = { .hdr.type = CLC_ACCEPT };
	struct clc_accept *a = &m.accept;
	const struct smc_transport_ops *t;
	uint8_t mac[CLC_MAC_LEN];
	unsigned links, flows;

	if (!!net->psk_len != !!(pr->features & CLC_FEAT_PSK) ||
	    (net->psk_len &&
	     (clc_mac_proposal(net->psk, net->psk_len, &lgr->hs.ep, msg, len, mac) ||
	      !clc_mac_equal(mac, pr->mac)))) {
		counter_inc(&net->stats->auth_failures);
		hs_refused(net, (const struct sockaddr *)&lgr->peer, SMC_REFUSE_AUTH);
		hs_decline(lgr, CLC_DECL_POLICY);
		return;
	}
	t = hs_server_pick(lgr, pr);
	if (!t) {
		hs_decline(lgr, CLC_DECL_NO_DEVICE);	/* no transport in common */
		return;
	}
	a->transport = t->clc_bit;
	links = pr->links < net->cfg->links.per_peer ? pr->links : net->cfg->links.per_peer;
	flows = pr->max_flows_per_link < net->cfg->links.max_flows_per_link ?
		pr->max_flows_per_link : net->cfg->links.max_flows_per_link;
	lgr->hs.prop = *pr;
	lgr->ring_size = (uint32_t)net->cfg->buffers.ring;
	lgr->ring_move = pr->features & CLC_FEAT_RING_MOVE;
	lgr->peer_delete = pr->features & CLC_FEAT_DELETE;
	lgr->peer_stop_abort = pr->features & CLC_FEAT_STOP_ABORT;
	lgr->peer_decl_stopping = pr->features & CLC_FEAT_DECL_STOPPING;
	lgr->client_addr = pr->features & CLC_FEAT_CLIENT_ADDR;
	memcpy(lgr->peer_host_id, pr->host_id, CLC_HOST_ID_LEN);
	a->features = (net->psk_len ? CLC_FEAT_PSK : 0) | (lgr->ring_move ? CLC_FEAT_RING_MOVE : 0) |
		      CLC_FEAT_DELETE | (lgr->client_addr ? CLC_FEAT_CLIENT_ADDR : 0) |
		      CLC_FEAT_STOP_ABORT | CLC_FEAT_DECL_STOPPING;
	memcpy(a->host_id, net->host_id, CLC_HOST_ID_LEN);
	if (getrandom(a->nonce, sizeof(a->nonce), 0) != sizeof(a->nonce)) {
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	a->ring_size = lgr->ring_size;
	a->links = (uint16_t)links;
	a->max_flows_per_link = (uint16_t)flows;
	memcpy(a->lgr_id, lgr->id, CLC_LGR_ID_LEN);
	if (hs_put_addrs(net, t->clc_bit, true, a->addr)) {
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	if (net->psk_len && clc_mac_accept(net->psk, net->psk_len, &lgr->hs.ep, pr, a, a->mac)) {
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	lgr->hs.acc = *a;
	if (hs_send(lgr, &m)) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	lgr->hs.step = HS_WAIT_CONFIRM;
}

/*
 * Server: the proposer confirmed (and proved the secret once more, over
 * our fresh nonce). Only now does the group count as inbound, against its
 * limits, and get its conn table and the transport's memory and doorbells.
 */
static void hs_server_on_confirm(struct lgr *lgr, const struct clc_confirm *cf)
{
	struct smc_net *net = lgr->net;
	const struct sockaddr *peer = (const struct sockaddr *)&lgr->peer;
	const struct smc_transport_ops *t = smc_transport_by_clc(lgr->hs.acc.transport);
	struct clc_msg m = { .hdr.type = CLC_CONFIRM };
	struct lgr_inbound n;
	uint8_t mac[CLC_MAC_LEN];
	int err;

	if (net->psk_len &&
	    (clc_mac_confirm(net->psk, net->psk_len, &lgr->hs.ep, &lgr->hs.prop, &lgr->hs.acc,
			     mac) ||
	     !clc_mac_equal(mac, cf->mac))) {
		counter_inc(&net->stats->auth_failures);
		hs_refused(net, peer, SMC_REFUSE_AUTH);
		hs_decline(lgr, CLC_DECL_POLICY);
		return;
	}
	lgr__count_inbound(net, peer, &n);
	if (n.groups >= LGR_IN_MAX || n.groups_host >= LGR_IN_PER_HOST) {
		counter_inc(&net->stats->groups_refused);
		hs_refused(net, peer, SMC_REFUSE_GROUPS);
		hs_decline(lgr, CLC_DECL_MAX_FLOWS);
		return;
	}
	if (!t || lgr__setup_links(lgr, lgr->hs.acc.links, lgr->hs.acc.max_flows_per_link)) {
		hs_decline(lgr, CLC_DECL_NO_MEMORY);
		return;
	}
	err = t->lgr_prepare(lgr);
	if (err) {
		hs_decline(lgr, clc_decline_of_errno(err));
		return;
	}
	if (clc_link_secret(net->psk, net->psk_len, &lgr->hs.prop, &lgr->hs.acc, lgr->secret)) {
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	lgr->has_secret = net->psk_len != 0;
	if (hs_send(lgr, &m)) {
		hs_fail(lgr, FB_DECL_INTERNAL);
		return;
	}
	/* Only now does the rendezvous socket take this group's id. */
	lgr__hs_close(lgr);
	lgr->state = LGR_RENDEZVOUS;
}

static void hs_on_msg(struct lgr *lgr, const uint8_t *buf, size_t len)
{
	struct smc_net *net = lgr->net;
	struct clc_msg m;
	int err = clc_decode(buf, len, &m);

	if (err == -EPROTONOSUPPORT) {
		hs_decline(lgr, CLC_DECL_VERSION);
		return;
	}
	if (!err && m.hdr.type == CLC_PROPOSAL)
		err = hs_check_addrs(m.proposal.addr);
	else if (!err && m.hdr.type == CLC_ACCEPT)
		err = hs_check_addrs(m.accept.addr);
	if (err) {
		counter_inc(&net->stats->bad_messages);
		hs_decline(lgr, CLC_DECL_INTERNAL);
		return;
	}
	if (m.hdr.type == CLC_DECLINE) {
		counter_inc(&net->stats->declines_received[m.decline.reason]);
		hs_fail(lgr, fallback_of_decline(m.decline.reason));
		return;
	}
	switch (lgr->hs.step) {
	case HS_WAIT_ACCEPT:
		if (m.hdr.type == CLC_ACCEPT) {
			hs_client_on_accept(lgr, &m.accept);
			return;
		}
		break;
	case HS_WAIT_READY:
		if (m.hdr.type == CLC_CONFIRM) {
			hs_client_on_ready(lgr);
			return;
		}
		break;
	case HS_WAIT_PROPOSAL:
		if (m.hdr.type == CLC_PROPOSAL) {
			hs_server_on_proposal(lgr, &m.proposal, buf, len);
			return;
		}
		break;
	case HS_WAIT_CONFIRM:
		if (m.hdr.type == CLC_CONFIRM) {
			hs_server_on_confirm(lgr, &m.confirm);
			return;
		}
		break;
	default:
		break;
	}
	counter_inc(&net->stats->bad_messages);
	hs_decline(lgr, CLC_DECL_INTERNAL);
}

/* Reads what arrived and handles each whole message; the peer may not
 * send more than one message ahead of us. */
static void hs_read(struct lgr *lgr)
{
	struct lgr_hs *hs = &lgr->hs;
	struct clc_hdr hdr;
	ssize_t n;

	for (;;) {
		n = recv(hs->fd, hs->buf + hs->have, sizeof(hs->buf) - hs->have, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/* Closed without a decline: a peer that went away, or
			 * one that refused to talk to us. */
			hs_fail(lgr, lgr->role == LGR_ROLE_CLIENT && hs->step == HS_WAIT_ACCEPT ?
				FB_PEER_UNREACHABLE : FB_DECL_INTERNAL);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		hs->have += (uint16_t)n;
		while (hs->fd >= 0) {
			int err = clc_decode_hdr(hs->buf, hs->have, &hdr);

			if (err == -EAGAIN || (!err && hdr.length > hs->have))
				break;
			if (err) {
				counter_inc(&lgr->net->stats->bad_messages);
				hs_decline(lgr, CLC_DECL_INTERNAL);
				return;
			}
			hs_on_msg(lgr, hs->buf, hdr.length);
			if (hs->fd < 0)
				return;
			memmove(hs->buf, hs->buf + hdr.length, hs->have - hdr.length);
			hs->have -= hdr.length;
		}
		if (hs->fd < 0)
			return;
	}
}

static void hs_on_event(struct epset_entry *e, uint32_t events)
{
	struct lgr *lgr = lgr_of_hs(e);
	int err = 0;
	socklen_t len = sizeof(err);

	if (lgr->hs.fd < 0)
		return;
	if (lgr->hs.step == HS_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(lgr->hs.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			hs_fail(lgr, FB_PEER_UNREACHABLE);
			return;
		}
		hs_client_propose(lgr);
		if (lgr->hs.fd < 0)
			return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		hs_read(lgr);
}

/* ------------------------------------------------------------------ */
/* The control port. */

static bool hs_peer_allowed(const struct smc_net *net, const struct sockaddr *sa)
{
	size_t i;

	for (i = 0; i < net->cfg->n_peers; i++)
		if (addr_in_prefix(sa, &net->cfg->peers[i].prefix))
			return true;
	return false;
}

/* A DECLINE on a control connection we do not take, and its close. */
static void hs_refuse_fd(struct smc_net *net, int fd, unsigned reason)
{
	struct clc_msg m = { .hdr.type = CLC_DECLINE, .decline.reason = (uint8_t)reason };
	uint8_t buf[CLC_MSG_MAX];
	int n = clc_encode(&m, buf, sizeof(buf));

	counter_inc(&net->stats->declines_sent[reason]);
	if (n > 0)
		send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/*
 * Whether a handshake from host may start: under the limit per source
 * address, and under the limit in all once the oldest handshake that has
 * not proposed yet is closed to make room (a real peer proposes right
 * after its connect, so silent connections cannot keep it out). One scan
 * of the worker's groups: the control port is not a fast path.
 */
static bool hs_make_room(struct smc_net *net, const struct sockaddr *host)
{
	struct lgr_inbound n;
	struct lgr *lgr;

	lgr__count_inbound(net, host, &n);
	if (n.handshakes_host >= LGR_HS_PER_HOST)
		return false;
	if (n.handshakes < LGR_HS_MAX)
		return true;
	for (lgr = lgr_next(net, NULL); lgr; lgr = lgr_next(net, lgr)) {
		if (lgr->role == LGR_ROLE_SERVER && lgr->state == LGR_HANDSHAKE &&
		    lgr->hs.step == HS_WAIT_PROPOSAL) {
			counter_inc(&net->stats->handshakes_evicted);
			hs_decline(lgr, CLC_DECL_TIMEOUT);
			return true;
		}
	}
	return false;
}

static void hs_on_control(uv_poll_t *h, int status, int events)
{
	struct smc_net *net = h->data;
	struct sockaddr_storage ss;
	socklen_t len;
	struct lgr *lgr;
	int fd, one = 1;

	for (;;) {
		len = sizeof(ss);
		fd = accept4(net->control_fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* The poll is level-triggered: a connection we cannot
			 * take would wake us at once, again and again. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				net->ops->exhausted(net, -errno);
			return;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		addr_unmap_v4(&ss);
		if (!hs_peer_allowed(net, (struct sockaddr *)&ss)) {
			counter_inc(&net->stats->proposals_refused);
			hs_refused(net, (struct sockaddr *)&ss, SMC_REFUSE_PREFIX);
			hs_refuse_fd(net, fd, CLC_DECL_POLICY);
			continue;
		}
		if (!hs_make_room(net, (struct sockaddr *)&ss)) {
			counter_inc(&net->stats->handshakes_refused);
			hs_refused(net, (struct sockaddr *)&ss, SMC_REFUSE_HANDSHAKES);
			hs_refuse_fd(net, fd, CLC_DECL_MAX_FLOWS);
			continue;
		}
		lgr = lgr__new(net, LGR_ROLE_SERVER, (struct sockaddr *)&ss);
		if (!lgr) {
			close(fd);
			continue;
		}
		lgr->hs.fd = fd;
		lgr->hs.ev.cb = hs_on_event;
		lgr->hs.step = HS_WAIT_PROPOSAL;
		if (hs_endpoints(fd, (struct sockaddr *)&ss, false, &lgr->hs.ep, &lgr->local)) {
			lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
			continue;
		}
		lgr->deadline_ms = uv_now(net->loop) + net->cfg->fallback.connect_timeout_ms;
		if (epset_add(&net->core->epset, fd, HS_EVENTS, &lgr->hs.ev) < 0)
			lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
	}
}

int lgr_listen(struct smc_net *net, char *errbuf, size_t errlen)
{
	const struct cfg_addr *a = &net->cfg->control;
	char s[ADDR_STRLEN];
	int fd, err;

	/* One control address serves both families only as "[::]:port":
	 * leave that one dual-stack (v4 peers then come as ::ffff:a.b.c.d,
	 * unmapped before the prefix check); any other IPv6 address is
	 * IPv6 only. */
	fd = sock_bind((const struct sockaddr *)&a->ss, a->len, SOCK_BIND_NONBLOCK |
		       SOCK_BIND_DUALSTACK_ANY | (net->reuseport ? SOCK_BIND_REUSEPORT : 0));
	if (fd < 0) {
		err = fd;
		goto out_err;
	}
	if (listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		goto out_err;
	}
	err = uv_poll_init_socket(net->loop, &net->control_poll, fd);
	if (err) {
		close(fd);
		goto out_err;
	}
	net->control_fd = fd;
	net->control_poll.data = net;
	return 0;	/* polled from proxy_start(), with the redirect listeners */

out_err:
	snprintf(errbuf, errlen, "control port %s: %s",
		 addr_format((const struct sockaddr *)&a->ss, s, sizeof(s)), strerror(-err));
	return err;
}

void lgr_poll_control(struct smc_net *net, bool on)
{
	if (net->control_fd < 0)
		return;
	if (on)
		uv_poll_start(&net->control_poll, UV_READABLE, hs_on_control);
	else
		uv_poll_stop(&net->control_poll);
}

void lgr_unlisten(struct smc_net *net)
{
	if (net->control_fd < 0)
		return;
	loop_close_handle(net->core, (uv_handle_t *)&net->control_poll);
	close(net->control_fd);
	net->control_fd = -1;
}
