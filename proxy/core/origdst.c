/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

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
