/* SPDX-License-Identifier: MIT */
/*
 * Liveness (liveness.h). The kernel's SMC-R sends TEST_LINK on a link idle
 * for net.smc's keepalive time and takes the link down when the answer
 * does not come; its data path runs in the kernel, so a link that carries
 * traffic proves the peer alive. Ours does not: the peer's NIC (or the
 * shared memory) takes our messages whether or not the daemon behind it
 * runs, and a stopped shm peer never even consumes them. So what counts
 * here is only what the peer itself sends: every message received on a
 * link (link_rx()) stamps it, a link quiet for a third of
 * links.dead_after gets a TEST_LINK (which a live peer answers) busy or
 * not, and a link quiet for all of it is down. The flows move to another
 * link of the group, and with none left they are reset and new flows use
 * TCP until a new handshake succeeds.
 */
#include <errno.h>

#include "lgr.h"
#include "link.h"
#include "liveness.h"
#include "net.h"

void liveness_start(struct lgr *lgr, uint64_t now)
{
	unsigned i;

	for (i = 0; i < lgr->n_links; i++) {
		lgr->links[i].last_rx_ms = now;
		lgr->links[i].last_test_ms = now;
	}
}

/* This worker did not run for gap ms: its links' silence stops counting
 * for that long (a stamp never moves past now). */
static void liveness_forgive(struct smc_net *net, uint64_t now, uint64_t gap)
{
	struct lgr *lgr = NULL;
	unsigned i;

	while ((lgr = lgr_next(net, lgr))) {
		for (i = 0; i < lgr->n_links; i++) {
			struct link *lnk = &lgr->links[i];

			lnk->last_rx_ms = lnk->last_rx_ms + gap < now ? lnk->last_rx_ms + gap : now;
		}
	}
}

void liveness_sweep(struct smc_net *net, uint64_t now)
{
	uint64_t dead = net->cfg->links.dead_after_ms;
	uint64_t probe = dead / LIVENESS_PROBES;
	struct lgr *lgr, *next;
	unsigned i;

	if (net->live_sweep_ms && now - net->live_sweep_ms > LIVENESS_STALL_MS)
		liveness_forgive(net, now, now - net->live_sweep_ms);
	net->live_sweep_ms = now;
	for (lgr = lgr_next(net, NULL); lgr; lgr = next) {
		/* A link going down may fail the group, which leaves the
		 * list at once (and is freed at the end of the batch). */
		next = lgr_next(net, lgr);
		if (lgr->state != LGR_ACTIVE)
			continue;
		for (i = 0; i < lgr->n_links && lgr->state == LGR_ACTIVE; i++) {
			struct link *lnk = &lgr->links[i];
			uint64_t quiet = now - lnk->last_rx_ms;

			if (lnk->state != LINK_ACTIVE || now < lnk->last_rx_ms)
				continue;
			if (quiet >= dead) {
				counter_inc(&net->stats->links_silent);
				lgr_link_down(lnk, -EHOSTDOWN);
			} else if (quiet >= probe && now - lnk->last_test_ms >= probe) {
				uint32_t seq = lnk->tx_seq;

				/* Without room it is tried again next sweep. */
				link_post_test(lnk, (uint32_t)now);
				if (lnk->tx_seq != seq)
					lnk->last_test_ms = now;
			}
		}
	}
}
