/* SPDX-License-Identifier: MIT */
/*
 * container_of(): the struct that holds a member, from the member's
 * address, as the kernel's. An epoll entry, a deferred free or a hook is
 * embedded in what it is for, and its callback finds that struct so.
 */
#ifndef SMCPROXY_CONTAINER_H
#define SMCPROXY_CONTAINER_H

#include <stddef.h>

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif
