/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "epset.h"

#define EPSET_BATCH 64

static void epset_on_ready(uv_poll_t *h, int status, int events)
{
	struct epset *s = h->data;
	struct epoll_event ev[EPSET_BATCH];
	int n, i;

	/* The outer poll is level-triggered on our epoll fd: draining one
	 * batch per wake-up is enough, the rest wakes us again. */
	n = epoll_wait(s->fd, ev, EPSET_BATCH, 0);
	for (i = 0; i < n; i++) {
		struct epset_entry *e = ev[i].data.ptr;

		e->cb(e, ev[i].events);
	}
	if (s->batch_end)
		s->batch_end(s);
}

int epset_init(struct epset *s, uv_loop_t *loop)
{
	int err;

	s->close_cb = NULL;
	s->batch_end = NULL;
	s->fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	err = uv_poll_init(loop, &s->poll, s->fd);
	if (err) {
		close(s->fd);
		return err;
	}
	s->poll.data = s;
	uv_poll_start(&s->poll, UV_READABLE, epset_on_ready);
	return 0;
}

int epset_add(struct epset *s, int fd, uint32_t events, struct epset_entry *e)
{
	struct epoll_event ev = { .events = events | EPOLLET, .data.ptr = e };

	return epoll_ctl(s->fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void epset_del(struct epset *s, int fd)
{
	if (s->fd >= 0)
		epoll_ctl(s->fd, EPOLL_CTL_DEL, fd, NULL);
}

static void epset_on_closed(uv_handle_t *h)
{
	struct epset *s = h->data;

	close(s->fd);
	s->fd = -1;
	if (s->close_cb)
		s->close_cb(s);
}

void epset_close(struct epset *s, void (*close_cb)(struct epset *s))
{
	s->close_cb = close_cb;
	uv_close((uv_handle_t *)&s->poll, epset_on_closed);
}
