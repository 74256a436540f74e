/* SPDX-License-Identifier: MIT */
/* The test peers' handshake client (see peer_hs.h). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer_hs.h"
#include "smc/net.h"
#include "peer_util.h"

int peer_tcp_connect(const struct cfg_addr *addr, uint32_t mark, int64_t deadline)
{
	struct pollfd pfd;
	int fd, one = 1, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0)
		goto out_errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0) {
		if (errno != EINPROGRESS)
			goto out_errno;
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, peer_left_ms(deadline)) == 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			goto out_errno;
		if (err) {
			close(fd);
			return -err;
		}
	}
	return fd;

out_errno:
	err = -errno;
	close(fd);
	return err;
}

int peer_send_all(int fd, const uint8_t *buf, size_t len, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, peer_left_ms(deadline)) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Exactly len bytes: 0, -ECONNRESET on end of file (or a reset),
 * -ETIMEDOUT, -errno. */
static int recv_all(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = recv(fd, buf + off, len - off, MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, peer_left_ms(deadline)) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

int peer_clc_recv(int fd, struct clc_msg *m, int64_t deadline)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_hdr hdr;
	int err;

	err = recv_all(fd, buf, CLC_HDR_LEN, deadline);
	if (err)
		return err;
	if (clc_decode_hdr(buf, CLC_HDR_LEN, &hdr))
		return -EBADMSG;
	err = recv_all(fd, buf + CLC_HDR_LEN, hdr.length - CLC_HDR_LEN, deadline);
	if (err)
		return err;
	return clc_decode(buf, hdr.length, m) ? -EBADMSG : 0;
}

/* Sends *m, then receives the answer into *m: clc_recv()'s codes, or
 * peer_send_all()'s. A proposal is signed with psk (psk_len 0: not) over
 * the endpoints of fd, as the daemon's lgr_clc.c does. */
static int clc_exchange(int fd, struct clc_msg *m, const uint8_t *psk, size_t psk_len,
			const struct clc_endpoints *ep, struct peer_hs *hs, int64_t deadline)
{
	uint8_t buf[CLC_MSG_MAX];
	int len = clc_encode(m, buf, sizeof(buf));

	if (len < 0)
		return len;
	if (m->hdr.type == CLC_PROPOSAL && psk_len) {
		if (clc_mac_proposal(psk, psk_len, ep, buf, (size_t)len, m->proposal.mac))
			return -EIO;
		memcpy(buf + CLC_PROPOSAL_MAC_OFF, m->proposal.mac, CLC_MAC_LEN);
	}
	if (m->hdr.type == CLC_PROPOSAL)
		hs->prop = m->proposal;		/* as sent, its MAC included */
	len = peer_send_all(fd, buf, (size_t)len, deadline);
	return len ? len : peer_clc_recv(fd, m, deadline);
}

/* The two ends of the TCP connection fd, ours the client's. */
static int endpoints_of(int fd, struct clc_endpoints *ep)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	if (getsockname(fd, (struct sockaddr *)&a, &la) < 0 ||
	    getpeername(fd, (struct sockaddr *)&b, &lb) < 0)
		return -errno;
	if (clc_endpoint_put((struct sockaddr *)&a, ep->client) ||
	    clc_endpoint_put((struct sockaddr *)&b, ep->server))
		return -EAFNOSUPPORT;
	return 0;
}

static bool accept_usable(const struct peer_hs_opts *o, const struct clc_accept *acc)
{
	return acc->transport == o->transport && acc->links && acc->links <= o->links &&
	       (!o->accept_ok || o->accept_ok(acc));
}

int peer_hs_run(const struct peer_hs_opts *o, struct peer_hs *hs)
{
	int64_t deadline = peer_now_ms() + o->timeout_ms;
	struct clc_msg m = { .hdr.type = CLC_PROPOSAL };
	uint8_t psk[CLC_PSK_MAX], mac[CLC_MAC_LEN];
	struct clc_endpoints ep;
	size_t psk_len = 0;
	int fd, err;

	hs->outcome[0] = '\0';
	hs->has_secret = false;
	if (o->psk_file) {
		err = clc_psk_load(o->psk_file, psk, &psk_len);
		if (err) {
			peer_say("%s: %s", o->psk_file, strerror(-err));
			return err;
		}
		m.proposal.features = CLC_FEAT_PSK;
	}
	m.proposal.transports = o->transport;
	err = smc_net_read_host_id(m.proposal.host_id);
	if (err) {
		peer_say("boot id: %s", strerror(-err));
		return err;
	}
	if (getrandom(m.proposal.nonce, CLC_NONCE_LEN, 0) != CLC_NONCE_LEN)
		return -EIO;
	m.proposal.ring_size = o->ring_size;
	m.proposal.links = (uint16_t)o->links;
	m.proposal.max_flows_per_link = 255;
	if (o->rdma_addr_len > sizeof(m.proposal.addr[CLC_TLV_RDMA_ADDR - 1].value))
		return -EINVAL;
	if (o->rdma_addr_len)
		memcpy(m.proposal.addr[CLC_TLV_RDMA_ADDR - 1].value, o->rdma_addr, o->rdma_addr_len);
	m.proposal.addr[CLC_TLV_RDMA_ADDR - 1].len = (uint8_t)o->rdma_addr_len;
	hs->prop = m.proposal;

	fd = peer_tcp_connect(o->connect, o->mark, deadline);
	if (fd < 0) {
		peer_say("connect: %s", strerror(-fd));
		return fd;
	}
	err = endpoints_of(fd, &ep);
	if (err) {
		close(fd);
		return err;
	}
	err = clc_exchange(fd, &m, o->zero_proposal_mac ? NULL : psk,
			   o->zero_proposal_mac ? 0 : psk_len, &ep, hs, deadline);
	if (err)
		goto out_closed;
	if (m.hdr.type == CLC_DECLINE)
		goto out_declined;
	if (m.hdr.type != CLC_ACCEPT || !accept_usable(o, &m.accept)) {
		err = -EBADMSG;
		goto out_closed;
	}
	hs->acc = m.accept;
	if (psk_len && (clc_mac_accept(psk, psk_len, &ep, &hs->prop, &hs->acc, mac) ||
			!clc_mac_equal(mac, hs->acc.mac)))
		peer_say("the accept's MAC does not verify with %s: confirming anyway",
			 o->psk_file);

	m = (struct clc_msg){ .hdr.type = CLC_CONFIRM };
	if ((psk_len && clc_mac_confirm(psk, psk_len, &ep, &hs->prop, &hs->acc, m.confirm.mac)) ||
	    clc_link_secret(psk, psk_len, &hs->prop, &hs->acc, hs->secret)) {
		close(fd);
		return -EIO;
	}
	hs->has_secret = psk_len != 0;
	err = clc_exchange(fd, &m, NULL, 0, &ep, hs, deadline);
	if (err)
		goto out_closed;
	if (m.hdr.type == CLC_DECLINE)
		goto out_declined;
	if (m.hdr.type != CLC_CONFIRM) {
		err = -EBADMSG;
		goto out_closed;
	}
	close(fd);
	return 1;

out_declined:
	snprintf(hs->outcome, sizeof(hs->outcome), "declined-handshake %s",
		 clc_decline_name(m.decline.reason));
	close(fd);
	return 0;
out_closed:
	/* A send that fails means the daemon closed on us, too. */
	snprintf(hs->outcome, sizeof(hs->outcome), "%s",
		 err == -EPIPE || err == -ECONNRESET ? "closed" :
		 err == -ETIMEDOUT ? "timeout" : "bad-answer");
	close(fd);
	return 0;
}
