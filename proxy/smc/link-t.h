/* SPDX-License-Identifier: MIT */
/* Types of a link: one send/receive channel of a link group. Types only. */
#ifndef SMCPROXY_LINK_T_H
#define SMCPROXY_LINK_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/list.h"

struct lgr;

enum link_state {
	LINK_ACTIVE,
	LINK_DOWN,
};

struct link {
	struct lgr *lgr;
	unsigned idx;
	enum link_state state;
	unsigned n_conns;		/* flows placed on this link */
	uint32_t tx_seq;		/* messages posted so far */
	uint16_t cdc_seq;
	bool kick;			/* posted since the last flush */
	bool want_progress;		/* asked the transport for a completion */
	struct list_head kick_node;	/* proxy->kick_links */
	struct list_head tx_wait;	/* conns with work the queue had no room for */
	struct list_head corked;	/* conns holding autocorked bytes */
	struct list_head draining;	/* ended conns whose last send is in flight */
	/* Flow declines that found the queue full. */
	struct {
		uint32_t token;
		uint8_t reason;
	} decline_q[16];
	unsigned n_decline_q;
	/* lgr_link_down_sched(): the first error (0: none), and what the
	 * transport's tx_done() said then, where the flows' replay starts
	 * (the transport may let go of the link before the batch ends). */
	int down_sched;
	uint32_t down_done;
	/* Liveness (liveness.c): when the peer was last heard on this link
	 * and when we last asked it with a TEST_LINK; a TEST_LINK_RSP we owe
	 * and had no room for. */
	uint64_t last_rx_ms;
	uint64_t last_test_ms;
	bool test_rsp_owed;
	uint32_t test_rsp_cookie;
	/* Our DELETE_LINK of a stop is posted (delete_posted) and complete
	 * once the transport's tx_done() reaches delete_seq. */
	bool delete_posted;
	uint32_t delete_seq;
	void *tp;			/* the transport's */
	uint64_t msgs_tx, msgs_rx, bytes_tx, bytes_rx;
};

#endif
