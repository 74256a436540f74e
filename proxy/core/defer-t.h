/* SPDX-License-Identifier: MIT */
/* Deferred frees (proxy__defer()). Types only. */
#ifndef SMCPROXY_DEFER_T_H
#define SMCPROXY_DEFER_T_H

#include "list.h"

/*
 * Embedded in an object that an event of the current epoll batch may
 * still name: fn frees it once the batch is over.
 */
struct proxy_defer {
	struct list_head node;
	void (*fn)(struct proxy_defer *d);
};

#endif
