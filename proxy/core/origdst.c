/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "origdst.h"

/* From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>;
 * those headers clash with glibc's, so we take the two constants only. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

int origdst_get(int fd, struct sockaddr_storage *local, struct sockaddr_storage *dst)
{
	socklen_t len = sizeof(*local);

	if (getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return -errno;
	memset(dst, 0, sizeof(*dst));
	if (local->ss_family == AF_INET) {
		len = sizeof(struct sockaddr_in);
		if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, dst, &len) < 0)
			return -errno;
	} else if (local->ss_family == AF_INET6) {
		len = sizeof(struct sockaddr_in6);
		if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, dst, &len) < 0)
			return -errno;
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The original source, from the conntrack entry (ctnetlink). */

struct ct_buf {
	uint8_t *p;
	size_t len, size;
};

/* Appends an attribute (payload may be NULL: a nest to be closed with
 * ct_nest_end()); returns its offset, or SIZE_MAX once out of room. */
static size_t ct_put(struct ct_buf *b, uint16_t type, const void *payload, size_t plen)
{
	size_t at = b->len, total = NLA_ALIGN(NLA_HDRLEN + plen);
	struct nlattr *a;

	if (b->len == SIZE_MAX || b->size - b->len < total) {
		b->len = SIZE_MAX;
		return SIZE_MAX;
	}
	a = (struct nlattr *)(void *)(b->p + at);
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + plen);
	if (payload)
		memcpy(b->p + at + NLA_HDRLEN, payload, plen);
	memset(b->p + at + NLA_HDRLEN + plen, 0, total - NLA_HDRLEN - plen);
	b->len += total;
	return at;
}

static void ct_nest_end(struct ct_buf *b, size_t at)
{
	if (b->len == SIZE_MAX || at == SIZE_MAX)
		return;
	((struct nlattr *)(void *)(b->p + at))->nla_len = (uint16_t)(b->len - at);
}

/* Where sa keeps its address and its port (network order): the length
 * of the address, 4 or 16, or 0 for a family we do not know. */
static size_t ct_addr_of(struct sockaddr_storage *ss, void **addr, uint16_t **port)
{
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		*addr = &in->sin_addr;
		*port = &in->sin_port;
		return 4;
	}
	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		*addr = &in6->sin6_addr;
		*port = &in6->sin6_port;
		return 16;
	}
	return 0;
}

/* A TCP tuple src -> dst of one family (the caller checked it is ours). */
static void ct_put_tuple(struct ct_buf *b, uint16_t type, const struct sockaddr *src,
			 const struct sockaddr *dst)
{
	size_t tuple = ct_put(b, type | NLA_F_NESTED, NULL, 0), ip, proto, alen;
	struct sockaddr_storage s = { 0 }, d = { 0 };
	bool v4 = src->sa_family == AF_INET;
	uint8_t tcp = IPPROTO_TCP;
	uint16_t *sport = NULL, *dport = NULL;
	void *saddr = NULL, *daddr = NULL;

	memcpy(&s, src, addr_len(src));
	memcpy(&d, dst, addr_len(dst));
	alen = ct_addr_of(&s, &saddr, &sport);
	ct_addr_of(&d, &daddr, &dport);
	ip = ct_put(b, CTA_TUPLE_IP | NLA_F_NESTED, NULL, 0);
	ct_put(b, v4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, saddr, alen);
	ct_put(b, v4 ? CTA_IP_V4_DST : CTA_IP_V6_DST, daddr, alen);
	ct_nest_end(b, ip);
	proto = ct_put(b, CTA_TUPLE_PROTO | NLA_F_NESTED, NULL, 0);
	ct_put(b, CTA_PROTO_NUM, &tcp, 1);
	ct_put(b, CTA_PROTO_SRC_PORT, sport, 2);
	ct_put(b, CTA_PROTO_DST_PORT, dport, 2);
	ct_nest_end(b, proto);
	ct_nest_end(b, tuple);
}

size_t origdst__ct_request(void *buf, size_t size, const struct sockaddr *local,
			   const struct sockaddr *peer, uint32_t seq)
{
	struct ct_buf b = { .p = buf, .size = size };
	struct nlmsghdr *nlh = buf;
	struct nfgenmsg *nfg;

	if ((local->sa_family != AF_INET && local->sa_family != AF_INET6) ||
	    peer->sa_family != local->sa_family || size < NLMSG_SPACE(sizeof(*nfg)))
		return 0;
	memset(buf, 0, NLMSG_SPACE(sizeof(*nfg)));
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	nfg = NLMSG_DATA(nlh);
	nfg->nfgen_family = (uint8_t)local->sa_family;
	nfg->version = NFNETLINK_V0;
	b.len = NLMSG_SPACE(sizeof(*nfg));
	/* Replies go from our listener to the client: the reply tuple. */
	ct_put_tuple(&b, CTA_TUPLE_REPLY, local, peer);
	if (b.len == SIZE_MAX || b.len > UINT32_MAX)
		return 0;
	nlh->nlmsg_len = (uint32_t)b.len;
	return b.len;
}

/* The attribute of type within [p, p + n), or NULL. Bounds-checked: the
 * answer comes from the kernel, but is read as if anyone wrote it. */
static const struct nlattr *ct_find(const uint8_t *p, size_t n, uint16_t type, size_t *plen)
{
	while (n >= NLA_HDRLEN) {
		const struct nlattr *a = (const void *)p;
		size_t len = a->nla_len, step = NLA_ALIGN(len);

		if (len < NLA_HDRLEN || len > n)
			return NULL;
		if ((a->nla_type & NLA_TYPE_MASK) == type) {
			*plen = len - NLA_HDRLEN;
			return a;
		}
		if (step >= n)
			return NULL;
		p += step;
		n -= step;
	}
	return NULL;
}

/* The payload of the attribute of type, at least want bytes, or NULL;
 * its length in *plen. */
static const uint8_t *ct_get(const uint8_t *p, size_t n, uint16_t type, size_t want,
			     size_t *plen)
{
	size_t len;
	const struct nlattr *a = ct_find(p, n, type, &len);

	if (!a || len < want)
		return NULL;
	if (plen)
		*plen = len;
	return (const uint8_t *)a + NLA_HDRLEN;
}

int origdst__ct_answer(const void *buf, size_t n, int family, struct sockaddr_storage *orig)
{
	const struct nlmsghdr *nlh = buf;
	const uint8_t *attrs, *tuple, *ip, *proto, *addr, *port;
	size_t alen, tlen, ilen, plen, len;
	uint16_t *oport;
	void *oaddr;

	if (n < NLMSG_HDRLEN || nlh->nlmsg_len < NLMSG_HDRLEN || nlh->nlmsg_len > n)
		return -EPROTO;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(nlh);

		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error >= 0)
			return -EPROTO;
		return e->error;
	}
	if (nlh->nlmsg_type != ((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW) ||
	    nlh->nlmsg_len < NLMSG_SPACE(sizeof(struct nfgenmsg)))
		return -EPROTO;
	attrs = (const uint8_t *)buf + NLMSG_SPACE(sizeof(struct nfgenmsg));
	alen = nlh->nlmsg_len - NLMSG_SPACE(sizeof(struct nfgenmsg));
	tuple = ct_get(attrs, alen, CTA_TUPLE_ORIG, 0, &tlen);
	ip = tuple ? ct_get(tuple, tlen, CTA_TUPLE_IP, 0, &ilen) : NULL;
	proto = tuple ? ct_get(tuple, tlen, CTA_TUPLE_PROTO, 0, &plen) : NULL;
	if (!ip || !proto)
		return -EPROTO;
	port = ct_get(proto, plen, CTA_PROTO_SRC_PORT, 2, NULL);
	memset(orig, 0, sizeof(*orig));
	orig->ss_family = (sa_family_t)family;
	len = ct_addr_of(orig, &oaddr, &oport);
	if (!len)
		return -EAFNOSUPPORT;
	addr = ct_get(ip, ilen, family == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, len, NULL);
	if (!addr || !port)
		return -EPROTO;
	memcpy(oaddr, addr, len);
	memcpy(oport, port, 2);
	return 0;
}

/* The request's sequence number: each question its own, so that a late
 * answer to an earlier one is not taken for this one. */
static _Atomic uint32_t origdst_seq;

/*
 * The socket is connected to the kernel (pid 0), so that nothing but the
 * kernel can send to it, and non-blocking: the kernel answers a CT_GET
 * while it handles our send, so the answer is there at once, and a wait
 * for it is bounded by ORIGDST_CT_WAIT_MS all the same (a worker must
 * never block). Of what arrives, only a message with our port id and our
 * sequence number is the answer; anything else is skipped.
 */
int origdst_src(const struct sockaddr *local, const struct sockaddr *peer,
		struct sockaddr_storage *orig)
{
	union {
		struct nlmsghdr nlh;
		uint8_t b[2048];
	} q, r;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK }, self;
	socklen_t slen = sizeof(self);
	uint32_t seq = atomic_fetch_add_explicit(&origdst_seq, 1, memory_order_relaxed) + 1;
	size_t len = origdst__ct_request(q.b, sizeof(q.b), local, peer, seq);
	struct timespec start, now;
	int fd, err;

	if (!len)
		return -EAFNOSUPPORT;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_NETFILTER);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&kernel, sizeof(kernel)) < 0 ||
	    send(fd, q.b, len, 0) < 0 ||
	    getsockname(fd, (struct sockaddr *)&self, &slen) < 0) {
		err = -errno;
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n = recv(fd, r.b, sizeof(r.b), MSG_DONTWAIT);
		long left;

		if (n >= (ssize_t)NLMSG_HDRLEN && r.nlh.nlmsg_seq == seq &&
		    r.nlh.nlmsg_pid == self.nl_pid) {
			err = origdst__ct_answer(r.b, (size_t)n, local->sa_family, orig);
			goto out;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			err = -errno;
			goto out;
		}
		/* Not ours (or nothing yet): wait for the rest of the bound. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = ORIGDST_CT_WAIT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
					     (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0) {
			err = -ETIMEDOUT;
			goto out;
		}
		if (n < 0 && poll(&pfd, 1, (int)left) == 0) {
			err = -ETIMEDOUT;
			goto out;
		}
	}
out:
	close(fd);
	return err;
}
