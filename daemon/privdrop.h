/* SPDX-License-Identifier: MIT */
/*
 * Dropping root (smcproxyd.json(5), "user"): a daemon started as root
 * outside systemd sets up what needs root, then becomes the configured
 * user, keeping only the capabilities the systemd unit grants.
 */
#ifndef SMCPROXY_PRIVDROP_H
#define SMCPROXY_PRIVDROP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PRIVDROP_GROUPS_MAX	64
/* What the unit's AmbientCapabilities= grant, by name for the log. */
#define PRIVDROP_CAPS_TEXT	"CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_IPC_LOCK"

struct privdrop {
	bool needed;			/* started as root, with a user to become */
	uid_t uid;
	gid_t gid;
	gid_t groups[PRIVDROP_GROUPS_MAX];	/* the user's, from the group database */
	int n_groups;
	char user[33];
	/* intercept ebpf: CAP_BPF kept too, for the bpf() calls on the
	 * intercept's maps (kernels before 6.4 refuse every bpf() command
	 * without it when unprivileged BPF is off). Set by the caller. */
	bool keep_bpf;
};

/*
 * Looks user up, before anything is set up, so that a wrong name stops
 * the daemon at once. Nothing to do (pd->needed false) when we do not run
 * as root (systemd's User= or DynamicUser=, or an unprivileged start) or
 * user is "" (root on purpose). 0, or -errno with errbuf saying why:
 * -ENOENT when the user does not exist (the default's "smcproxy" as much
 * as a name the operator wrote), -EPERM when it is root itself.
 */
int privdrop_prepare(struct privdrop *pd, const char *user, char *errbuf, size_t errlen);
/*
 * Still root: creates dir (its parent must exist) with mode, owned by
 * the user, when it does not exist, so that the daemon can create and
 * remove its sockets there once it dropped root (what systemd's
 * RuntimeDirectory= does for the unit). A directory that exists is left
 * as the operator made it.
 */
void privdrop_mkdir(const struct privdrop *pd, const char *dir, mode_t mode);
/*
 * Becomes the user and its groups for good, keeping CAP_NET_ADMIN
 * (SO_MARK), CAP_NET_BIND_SERVICE and CAP_IPC_LOCK (pinned RDMA memory)
 * as effective and permitted; empties the bounding set of every other
 * capability and the ambient and inheritable sets, and sets
 * no_new_privs. Call it before any other thread starts: capabilities
 * are per thread, and threads made later inherit these. 0, or -errno
 * with errbuf saying which step failed.
 */
int privdrop_apply(const struct privdrop *pd, char *errbuf, size_t errlen);

#endif
