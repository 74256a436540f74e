/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
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

int addr_route_src(const struct sockaddr *dest, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, err = 0;

	fd = socket(dest->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, dest, addr_len(dest)) < 0 || getsockname(fd, (struct sockaddr *)src, &len) < 0)
		err = -errno;
	close(fd);
	if (!err && src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else if (!err)
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return err;
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

static int addr_cmp_v4(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int addr_cmp_v6(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

int addr_local_set(struct addr_local *al, const struct sockaddr_storage *ss, size_t n,
		   uint64_t now_ms)
{
	uint32_t *v4 = malloc((n ? n : 1) * sizeof(*v4));
	uint8_t (*v6)[16] = malloc((n ? n : 1) * sizeof(*v6));
	size_t i, n4 = 0, n6 = 0;

	if (!v4 || !v6) {
		free(v4);
		free(v6);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (ss[i].ss_family == AF_INET)
			v4[n4++] = ((const struct sockaddr_in *)&ss[i])->sin_addr.s_addr;
		else if (ss[i].ss_family == AF_INET6)
			memcpy(v6[n6++], &((const struct sockaddr_in6 *)&ss[i])->sin6_addr, 16);
	}
	qsort(v4, n4, sizeof(*v4), addr_cmp_v4);
	qsort(v6, n6, sizeof(*v6), addr_cmp_v6);
	free(al->v4);
	free(al->v6);
	al->v4 = v4;
	al->v6 = v6;
	al->n_v4 = n4;
	al->n_v6 = n6;
	al->taken = true;
	al->taken_ms = now_ms;
	al->stale = false;
	al->refreshes++;
	return 0;
}

/* The notices' socket, opened once: only the address groups, and nothing
 * ever sent on it. */
static void addr_local_watch(struct addr_local *al)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd;

	if (al->watching || al->watch_failed)
		return;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (fd < 0) {
		al->watch_failed = true;
		return;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		al->watch_failed = true;
		return;
	}
	al->nl_fd = fd;
	al->watching = true;
}

/* Whether an address may have changed since the last snapshot: a notice
 * came, or one was lost (ENOBUFS), or we cannot be told. Reads every
 * notice queued; their content does not matter, the dump says it all. */
static bool addr_local_changed(struct addr_local *al)
{
	char buf[4096];
	bool changed = false;
	ssize_t r;

	if (!al->watching)
		return true;
	for (;;) {
		r = recv(al->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0) {
			changed = true;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == ENOBUFS) {
			changed = true;
			continue;
		}
		return changed;	/* EAGAIN, or a socket that broke: as it was */
	}
}

/* A fresh snapshot from getifaddrs(); a failure keeps the old one, and a
 * second later it is tried again. */
static void addr_local_refresh(struct addr_local *al, uint64_t now_ms)
{
	struct ifaddrs *ifs, *i;
	struct sockaddr_storage *ss = NULL;
	size_t n = 0, k = 0;

	al->taken = true;
	al->taken_ms = now_ms;
	al->stale = true;
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next)
		n++;
	ss = calloc(n ? n : 1, sizeof(*ss));
	if (!ss)
		goto out_free;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;

		if (a && (a->sa_family == AF_INET || a->sa_family == AF_INET6))
			memcpy(&ss[k++], a, addr_len(a));
	}
	if (!addr_local_set(al, ss, k, now_ms))
		al->stale = !al->watching;
	free(ss);
out_free:
	freeifaddrs(ifs);
}

bool addr_local_has(struct addr_local *al, const struct sockaddr *sa, uint64_t now_ms)
{
	if (!al->taken || now_ms - al->taken_ms >= ADDR_LOCAL_REFRESH_MS) {
		/* Watching before the dump: a change during it is seen next
		 * time. Every notice so far is in the dump we take now. */
		addr_local_watch(al);
		if (addr_local_changed(al) || al->stale || !al->taken)
			addr_local_refresh(al, now_ms);
		else
			al->taken_ms = now_ms;	/* looked: the next look in a second */
	}
	if (sa->sa_family == AF_INET)
		return bsearch(&((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr,
			       al->v4, al->n_v4, sizeof(*al->v4), addr_cmp_v4) != NULL;
	if (sa->sa_family == AF_INET6)
		return bsearch(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			       al->v6, al->n_v6, sizeof(*al->v6), addr_cmp_v6) != NULL;
	return false;
}

void addr_local_close(struct addr_local *al)
{
	if (al->watching)
		close(al->nl_fd);
	free(al->v4);
	free(al->v6);
	memset(al, 0, sizeof(*al));
}
