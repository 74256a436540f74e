/* SPDX-License-Identifier: MIT */
/* Types of the TCP relay, the fallback path. Types only. */
#ifndef SMCPROXY_RELAY_T_H
#define SMCPROXY_RELAY_T_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/counter.h"
#include "core/epset-t.h"
#include "core/pipe_pool-t.h"

/* Legs of a relay; also the index of the direction that reads from it. */
enum relay_leg {
	RELAY_CLIENT,		/* the redirected application socket */
	RELAY_SERVER,		/* our outbound socket to the original destination */
};

enum relay_state {
	RELAY_CONNECTING,
	RELAY_ESTABLISHED,
	RELAY_HALF_CLOSED,	/* one direction finished, the other still runs */
	RELAY_CLOSING,		/* handles are closing; nothing moves any more */
};

/* How a relay ended, reported once through relay_ops.ended. */
enum relay_end {
	RELAY_END_CLEAN,	/* both directions reached EOF and were shut down */
	RELAY_END_RESET,	/* an RST or error on one leg, passed on as RST */
	RELAY_END_CONNECT_FAILED,
	RELAY_END_CONNECT_TIMEOUT,
	RELAY_END_ABORTED,	/* relay_abort(): shutdown drain ran out, idle... */
};

/*
 * One direction: bytes read from one leg are spliced into a pipe and from
 * the pipe into the other leg, so they never cross user space. The pipe's
 * capacity is the direction's high-water mark: while it holds data that the
 * other leg cannot take, we stop reading (back-pressure to TCP).
 */
struct relay_dir {
	struct pipe_slot pipe;
	size_t queued;		/* bytes in the pipe */
	bool eof;		/* the reading leg sent FIN */
	bool out_blocked;	/* the writing leg returned EAGAIN */
	bool shut;		/* FIN passed on (shutdown(SHUT_WR)) */
	bool urgent;		/* EPOLLPRI seen: the reading leg has urgent data */
	uint64_t bytes;		/* bytes delivered to the writing leg */
};

struct relay_params {
	uint32_t mark;
	uint64_t connect_timeout_ms;
	uint64_t keepalive_ms;
	/* The client socket came from a listener that already carries
	 * TCP_NODELAY, SO_OOBINLINE and keepalive (accepted sockets inherit
	 * them), so relay_start() need not set them again. */
	bool client_tuned;
};

/* What all relays of one event loop share, owned by the proxy. */
struct relay_env {
	uv_loop_t *loop;
	struct epset *epset;
	struct pipe_pool *pipes;
	/* The worker's byte counters: client to server, and back. */
	counter_t *bytes_in, *bytes_out;
};

struct relay;

struct relay_ops {
	/* Called once when the relay stops moving data, before its handles
	 * close; err is the socket error for CONNECT_FAILED / RESET. */
	void (*ended)(struct relay *r, enum relay_end how, int err);
	/* Called once when every handle is closed: the owner may free. */
	void (*closed)(struct relay *r);
	/* A bypassed client socket (bypass_step): bytes read from it so
	 * far, every bypass_step of them. */
	void (*bypass_read)(struct relay *r, uint64_t total);
};

struct relay {
	int fd[2];
	struct epset_entry ev[2];	/* registered once, edge-triggered */
	struct relay_dir dir[2];	/* dir[i] reads leg i, writes leg !i */
	uv_timer_t connect_timer;
	enum relay_state state;
	/* The client socket is joined in the bypass of the local hop
	 * (intercept/bypass.h): never spliced (splice sees TCP's queue
	 * only), and ops->bypass_read told at bypass_next, every
	 * bypass_step bytes. 0: a plain socket. */
	uint64_t bypass_step, bypass_next;
	uint64_t last_active_ms;
	const struct relay_ops *ops;
	const struct relay_env *env;
};

#endif
