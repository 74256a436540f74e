/* SPDX-License-Identifier: MIT */
/*
 * The SMC layer of one worker (net-t.h): set up from the config, hooked
 * into the worker's loop, closed at shutdown. The layer above fills in
 * loop, core, cfg, ops, stats, worker, n_workers, reuseport and mark
 * before smc_net_init().
 */
#ifndef SMCPROXY_NET_H
#define SMCPROXY_NET_H

#include "net-t.h"

struct link;

/*
 * Opens what cfg asks for: the transports a peer could use, the host
 * identity, the shared secret, the control port and the shm rendezvous.
 * 0, or -errno with errbuf saying what failed (nothing left open).
 */
int smc_net_init(struct smc_net *net, char *errbuf, size_t errlen);
/*
 * This host's identity for the handshake (the kernel's boot id, as 16
 * bytes) into id: 0, or -errno (-EINVAL: not 32 hex digits). The test
 * peers name their host with it as the daemon does.
 */
int smc_net_read_host_id(uint8_t id[CLC_HOST_ID_LEN]);
/* Starts or stops taking connections on the control port. */
void smc_net_poll_control(struct smc_net *net, bool on);
/* Closes the control port and the rendezvous: no new link groups. */
void smc_net_unlisten(struct smc_net *net);
/* Applies the live keys of a reloaded config. */
void smc_net_set_cfg(struct smc_net *net, const struct cfg *cfg);
/*
 * Every link group down (their flows reset), the timer closed. Peers that
 * take it are told first (lgr_delete_all()), and the worker waits for
 * those messages to complete, at most SMC_NET_DELETE_WAIT_MS, so that
 * they close their groups as an orderly stop instead of a failure.
 */
#define SMC_NET_DELETE_WAIT_MS	200
void smc_net_shutdown(struct smc_net *net);
/* Releases the transports once nothing uses them (the loop still runs). */
void smc_net_close(struct smc_net *net);

/* Private to smc/ and the transports. */
/* Flush lnk's posts at the end of this batch of events. */
void smc_net__kick_link(struct smc_net *net, struct link *lnk);
/* Runs the failures scheduled in this batch, then rings the doorbells of
 * the links that posted in it; the batch is over (net->batch). */
void smc_net__flush(struct smc_net *net);
/* The link-group timer runs while there are link groups. */
void smc_net__timer(struct smc_net *net);

#endif
