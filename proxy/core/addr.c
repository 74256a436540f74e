/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "cfg-t.h"

char *addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "(family %d)", sa->sa_family);
	}
	return buf;
}

bool addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

bool addr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr, 16);
	return false;
}

bool addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

bool addr_is_local(const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	int fd, r;

	memcpy(&ss, sa, addr_len(sa));
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		return false;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = bind(fd, (struct sockaddr *)&ss, addr_len(sa));
	close(fd);
	return r == 0;
}

bool addr_is_iface_address(const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;

		if (!a || a->sa_family != sa->sa_family)
			continue;
		if (a->sa_family == AF_INET)
			found = ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
				((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr;
		else if (a->sa_family == AF_INET6)
			found = !memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
					&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
					sizeof(struct in6_addr));
	}
	freeifaddrs(ifs);
	return found;
}

void addr_unmap_v4(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
		return;
	sin.sin_port = sin6->sin6_port;
	memcpy(&sin.sin_addr, &sin6->sin6_addr.s6_addr[12], 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &sin, sizeof(sin));
}

unsigned addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}

socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

bool addr_in_prefix(const struct sockaddr *sa, const struct cfg_prefix *pfx)
{
	const uint8_t *a;
	unsigned full, rest;

	if (sa->sa_family != pfx->family)
		return false;
	if (sa->sa_family == AF_INET)
		a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else
		a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	full = pfx->len / 8;
	rest = pfx->len % 8;
	if (memcmp(a, pfx->addr, full))
		return false;
	return !rest || ((a[full] ^ pfx->addr[full]) & (0xff00 >> rest) & 0xff) == 0;
}

bool addr_cache_is_local(struct addr_cache *ac, const struct sockaddr *sa, uint64_t now_ms)
{
	const unsigned n = sizeof(ac->slot) / sizeof(ac->slot[0]);
	unsigned i;

	for (i = 0; i < n; i++) {
		const struct sockaddr *a = (const struct sockaddr *)&ac->slot[i].addr;

		if (a->sa_family != sa->sa_family || now_ms - ac->slot[i].checked_ms > 5000)
			continue;
		if (a->sa_family == AF_INET ?
		    ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr :
		    memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16) == 0)
			return ac->slot[i].local;
	}
	i = ac->next++ % n;
	memcpy(&ac->slot[i].addr, sa, addr_len(sa));
	ac->slot[i].checked_ms = now_ms;
	ac->slot[i].local = addr_is_iface_address(sa);
	return ac->slot[i].local;
}
