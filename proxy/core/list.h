/* SPDX-License-Identifier: MIT */
/* Intrusive doubly-linked list, after the kernel's list_head. */
#ifndef SMCPROXY_LIST_H
#define SMCPROXY_LIST_H

#include <stddef.h>
#include <stdbool.h>

#include "container.h"

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)
#define list_for_each(pos, head) \
	for (pos = (head)->next; pos != (head); pos = pos->next)

static inline void list_init(struct list_head *h)
{
	h->next = h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

/* Leaves the node self-linked so a second list_del() is harmless. */
static inline void list_del(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* Moves every node of from to the end of to; from is left empty. */
static inline void list_splice_tail(struct list_head *from, struct list_head *to)
{
	if (list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	list_init(from);
}

#endif
