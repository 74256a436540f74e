/* SPDX-License-Identifier: MIT */
/* The host's routing back of replies to a client's address (route_back.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "route_back.h"
#include "sock.h"

static _Atomic unsigned route_back_bits;

unsigned route_back_families(void)
{
	return atomic_load_explicit(&route_back_bits, memory_order_relaxed);
}

void route_back_set(unsigned families)
{
	atomic_store_explicit(&route_back_bits, families, memory_order_relaxed);
}

const char *route_back_why(enum route_back rb)
{
	switch (rb) {
	case RB_OK:
		return "set up";
	case RB_NO_FWMARK_ACCEPT:
		return "net.ipv4.tcp_fwmark_accept is not 1";
	case RB_NO_RULE:
		return "no policy rule routes the mark to a local table";
	case RB_NO_PRIV:
		return "IP_TRANSPARENT refused (CAP_NET_ADMIN missing?)";
	case RB_NO_FAMILY:
		return "the address family is not available";
	case RB_ERROR:
		break;
	}
	return "the probe failed";
}

static bool fwmark_accept_on(void)
{
	char c = 0;
	int fd = open("/proc/sys/net/ipv4/tcp_fwmark_accept", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '1';
}

/* The type (RTN_*) of the route a packet marked mark to addr would take,
 * or -errno: RTM_GETROUTE with RTA_DST and RTA_MARK. */
static int route_type(int family, const void *addr, size_t alen, uint32_t mark)
{
	struct {
		struct nlmsghdr nlh;
		struct rtmsg rtm;
		char attrs[64];
	} q = { 0 };
	union {
		struct nlmsghdr nlh;
		char buf[4096];
	} r;
	struct rtattr *ra;
	ssize_t n;

	q.nlh.nlmsg_type = RTM_GETROUTE;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.rtm.rtm_family = (unsigned char)family;
	q.rtm.rtm_dst_len = (unsigned char)(alen * 8);
	ra = (struct rtattr *)q.attrs;
	ra->rta_type = RTA_DST;
	ra->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(ra), addr, alen);
	ra = (struct rtattr *)(q.attrs + RTA_ALIGN(ra->rta_len));
	ra->rta_type = RTA_MARK;
	ra->rta_len = RTA_LENGTH(sizeof(mark));
	memcpy(RTA_DATA(ra), &mark, sizeof(mark));
	q.nlh.nlmsg_len = (uint32_t)(NLMSG_LENGTH(sizeof(q.rtm)) + RTA_ALIGN(RTA_LENGTH(alen)) +
				     RTA_LENGTH(sizeof(mark)));

	/* An NLMSG_ERROR of -ENETUNREACH: no route at all. */
	n = sock_nl_ask(NETLINK_ROUTE, &q, q.nlh.nlmsg_len, &r, sizeof(r));
	if (n < 0)
		return (int)n;
	if (r.nlh.nlmsg_type != RTM_NEWROUTE || r.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
		return -EPROTO;
	return ((const struct rtmsg *)NLMSG_DATA(&r.nlh))->rtm_type;
}

/* Whether an IP_TRANSPARENT socket of ours may take a foreign address. */
static enum route_back transparent_bind(const struct sockaddr *sa, socklen_t len)
{
	int fd, one = 1;
	enum route_back rb = RB_OK;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno == EAFNOSUPPORT ? RB_NO_FAMILY : RB_ERROR;
	if (sa->sa_family == AF_INET6 ?
	    setsockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) :
	    setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)))
		rb = RB_NO_PRIV;
	else if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) ||
		 bind(fd, sa, len))
		rb = errno == EPERM || errno == EACCES ? RB_NO_PRIV : RB_ERROR;
	close(fd);
	return rb;
}

enum route_back route_back_probe(int family, uint32_t mark)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	int type;

	if (!fwmark_accept_on())
		return RB_NO_FWMARK_ACCEPT;
	if (family == AF_INET6) {
		inet_pton(AF_INET6, "2001:db8::1", &sin6.sin6_addr);
		type = route_type(family, &sin6.sin6_addr, 16, mark);
	} else {
		inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
		type = route_type(family, &sin.sin_addr, 4, mark);
	}
	if (type == -EAFNOSUPPORT)
		return RB_NO_FAMILY;
	if (type != RTN_LOCAL)
		return type < 0 && type != -ENETUNREACH && type != -EHOSTUNREACH ? RB_ERROR : RB_NO_RULE;
	if (family == AF_INET6)
		return transparent_bind((struct sockaddr *)&sin6, sizeof(sin6));
	return transparent_bind((struct sockaddr *)&sin, sizeof(sin));
}
