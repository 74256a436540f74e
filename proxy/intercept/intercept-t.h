/* SPDX-License-Identifier: MIT */
/* Types of the eBPF intercept (intercept.h). Types only. */
#ifndef SMCPROXY_INTERCEPT_T_H
#define SMCPROXY_INTERCEPT_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "maps-t.h"

struct intercept_bpf;	/* the generated skeleton */

/*
 * The sk_msg bypass of the local hop (bypass.h), part of the intercept:
 * on once its self-test passed on the running kernel. The maps' fds are
 * used by every worker (thread-safe system calls).
 */
struct bypass {
	bool on;
	int socks_fd, flows_fd, allow_fd;
	uint64_t netns;			/* our network namespace's cookie */
	uint64_t credit;		/* intercept.bypass_credit */
	bool skip_blocking_read;	/* debug.bypass_skip_blocking_read */
	/* Why it is off although asked for: the self-test's failed check. */
	char why[512];
};

/*
 * The intercept programs as the daemon owns them: loaded, their maps
 * filled, attached to one cgroup by bpf_links that only this process
 * holds (nothing is pinned), so that when it exits, however it exits, the
 * kernel detaches them and new connects go where they were going.
 */
struct intercept {
	struct intercept_bpf *skel;
	int cgroup_fd;
	int by_tuple_fd;		/* read by every worker: thread-safe syscalls */
	int stats_fd;
	unsigned n_cpus;		/* of the per-CPU stats map */
	char cgroup[4096];		/* the attached cgroup's directory */
	char self_cgroup[4096];		/* the daemon's own */
	uint64_t cgroup_id, self_cgroup_id;
	struct sockaddr_storage to4, to6;	/* the listeners connects go to */
	bool has_to4, has_to6;
	bool attached;			/* the links are there */
	bool lookup_and_delete;		/* the kernel has it for hash maps */
	struct bypass bypass;
};

/* What the programs counted, summed over the CPUs. */
struct intercept_stats {
	uint64_t redirected;		/* connects sent to our listener */
	uint64_t self;			/* the daemon's own, left alone */
	uint64_t established;		/* redirected and connected */
	uint64_t no_listener;		/* matched, no listener of the family */
	uint64_t map_full;		/* could not be remembered: left alone */
	/* The bypass, counted by its programs. */
	uint64_t byp_joined;		/* flows with both ends in the bypass */
	uint64_t byp_late;		/* the app wrote first: its way over TCP */
	uint64_t byp_credit;		/* a direction ran out of credit */
	uint64_t byp_gone;		/* the peer socket had left */
	uint64_t byp_msgs, byp_bytes;	/* sendmsg calls and bytes redirected */
};

#endif
