/* SPDX-License-Identifier: MIT */
/*
 * Interception without iptables: cgroup connect hooks that send the
 * configured TCP connects to our listener, and the original destination
 * read back from a map (intercept.bpf.c has the programs). Does not log:
 * failures come back as -errno and one line in errbuf that names what is
 * missing.
 */
#ifndef SMCPROXY_INTERCEPT_H
#define SMCPROXY_INTERCEPT_H

#include <stddef.h>
#include <sys/socket.h>

#include "cfg-t.h"
#include "intercept-t.h"

/*
 * Loads the programs, fills their maps from cfg->intercept (destinations,
 * ports) and cfg->mark, and attaches them to cfg->intercept.cgroup (a path
 * in the cgroup v2 hierarchy, found through /proc/self/mountinfo). Connects
 * go to the first IPv4 and the first IPv6 address of cfg->listen (a
 * wildcard one as loopback). Refuses a target cgroup that is the daemon's
 * own (the daemon is recognised by its cgroup as well as its mark). On
 * failure nothing stays attached; errbuf says what is missing (no cgroup
 * v2, no CAP_BPF, a kernel without the hooks).
 */
int intercept_open(struct intercept *ic, const struct cfg *cfg, char *errbuf, size_t errlen);

/*
 * The original destination of the connection accepted with local address
 * local from peer, into *dst, and its map entry deleted. Returns 0,
 * -ENOENT when the map has none (not a redirected connect), or -errno.
 * One system call (a lookup and a delete before Linux 5.14), no lock.
 */
int intercept_origdst(struct intercept *ic, const struct sockaddr *local,
		      const struct sockaddr *peer, struct sockaddr_storage *dst);

/*
 * Our end of a connection the connect hooks redirected from peer, into
 * *local: the listener they send peer's family to (the IPv4 one for a
 * v4-mapped peer, in peer's form), as getsockname() on the accepted socket
 * would say, without the system call. -ENOENT when they send that family
 * nowhere, or peer is not IP (then the connection was not theirs: ask the
 * socket).
 */
int intercept_local(const struct intercept *ic, const struct sockaddr *peer,
		    struct sockaddr_storage *local);

void intercept_stats(const struct intercept *ic, struct intercept_stats *st);

/* The names of the attached programs, for listings: NULL-terminated. */
extern const char *const intercept_programs[];

/* Detaches the programs (closes the links): new connects go where they
 * were going. The maps stay readable for connections already accepted. */
void intercept_detach(struct intercept *ic);

/* Detaches (closes the links) and frees: one that intercept_open()
 * returned 0 for, or after it failed (it closes itself then). */
void intercept_close(struct intercept *ic);

#endif
