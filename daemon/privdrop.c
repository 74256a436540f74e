/* SPDX-License-Identifier: MIT */
/*
 * Dropping root after start-up (privdrop.h). Plain prctl(2), setres[ug]id
 * and capset(2) rather than libcap: three capabilities kept and the rest
 * dropped is a few system calls, not worth a dependency.
 *
 * Why these three (as systemd/smcproxyd.service grants them): SO_MARK on
 * every outbound socket needs CAP_NET_ADMIN; the listeners, bound after
 * the drop, may use ports below 1024 (CAP_NET_BIND_SERVICE); CAP_IPC_LOCK
 * lifts RLIMIT_MEMLOCK for the rings that are registered (pinned) as
 * flows come. What needs root itself (raising RLIMIT_NOFILE and
 * RLIMIT_MEMLOCK, making the socket directories) is done before the drop;
 * the rest is set up after it, as the unit sets it up: the RDMA devices
 * must be, because the kernel refuses rdma_cm and uverbs calls on a file
 * opened under other credentials.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privdrop.h"

#ifndef CAP_BPF
#define CAP_BPF 39	/* Linux 5.8; older headers do not name it */
#endif
#define KEEP_CAPS	((1ull << CAP_NET_ADMIN) | (1ull << CAP_NET_BIND_SERVICE) | \
			 (1ull << CAP_IPC_LOCK))

static uint64_t keep_caps(const struct privdrop *pd)
{
	return KEEP_CAPS | (pd->keep_bpf ? 1ull << CAP_BPF : 0);
}

int privdrop_prepare(struct privdrop *pd, const char *user, char *errbuf, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n, err;

	memset(pd, 0, sizeof(*pd));
	if (errlen)
		errbuf[0] = '\0';
	if (geteuid() != 0 || !user || !*user)
		return 0;
	/* A missing user is an error even when it is the default's: staying
	 * root with every capability must be asked for ("user": ""), never
	 * what a typo or a forgotten useradd buys. */
	err = getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	if (err || !res) {
		snprintf(errbuf, errlen, "user \"%s\"%s%s: create it (useradd --system "
			 "--no-create-home --shell /usr/sbin/nologin %s), or name another in "
			 "\"user\", or set \"user\": \"\" to run as root on purpose",
			 user, err ? ": " : " does not exist", err ? strerror(err) : "", user);
		return err ? -err : -ENOENT;
	}
	if (pw.pw_uid == 0) {
		snprintf(errbuf, errlen, "user \"%s\" is root (uid 0): name an unprivileged user, "
			 "or set \"user\": \"\" to run as root on purpose", user);
		return -EPERM;
	}
	n = PRIVDROP_GROUPS_MAX;
	if (getgrouplist(user, pw.pw_gid, pd->groups, &n) < 0) {
		snprintf(errbuf, errlen, "user \"%s\" is in more than %d groups", user,
			 PRIVDROP_GROUPS_MAX);
		return -E2BIG;
	}
	pd->n_groups = n;
	pd->uid = pw.pw_uid;
	pd->gid = pw.pw_gid;
	snprintf(pd->user, sizeof(pd->user), "%s", user);
	pd->needed = true;
	return 0;
}

void privdrop_mkdir(const struct privdrop *pd, const char *dir, mode_t mode)
{
	if (!pd->needed || !dir || !*dir)
		return;
	/* Only what we make now: chown-ing a directory an operator made
	 * (or /run itself) would hand the user more than its sockets. */
	if (mkdir(dir, mode) == 0 && chown(dir, pd->uid, pd->gid) < 0)
		rmdir(dir);
}

/* Every capability but ours out of the bounding set, while we still have
 * CAP_SETPCAP: no later execve() could get them back. */
static int drop_bounding(uint64_t keep)
{
	unsigned long cap;

	for (cap = 0; cap < 64; cap++) {
		if (keep & (1ull << cap))
			continue;
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break;		/* past the kernel's last capability */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return -errno;
	}
	return 0;
}

static int set_caps(uint64_t eff, uint64_t perm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	data[0].effective = (uint32_t)eff;
	data[1].effective = (uint32_t)(eff >> 32);
	data[0].permitted = (uint32_t)perm;
	data[1].permitted = (uint32_t)(perm >> 32);
	return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

int privdrop_apply(const struct privdrop *pd, char *errbuf, size_t errlen)
{
	const char *step;
	int err = 0;

	if (!pd->needed)
		return 0;
	step = "clearing the ambient capabilities";
	/* EINVAL: a kernel before 4.3 has no ambient set to clear. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		goto out_errno;
	step = "dropping from the bounding set";
	err = drop_bounding(keep_caps(pd));
	if (err)
		goto out_err;
	/* Keep the permitted set across setresuid(); the effective set is
	 * cleared by it and raised again below. */
	step = "PR_SET_KEEPCAPS";
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		goto out_errno;
	step = "setgroups";
	if (setgroups((size_t)pd->n_groups, pd->groups) < 0)
		goto out_errno;
	step = "setresgid";
	if (setresgid(pd->gid, pd->gid, pd->gid) < 0)
		goto out_errno;
	step = "setresuid";
	if (setresuid(pd->uid, pd->uid, pd->uid) < 0)
		goto out_errno;
	step = "capset";
	err = set_caps(keep_caps(pd), keep_caps(pd));
	if (err)
		goto out_err;
	step = "PR_SET_KEEPCAPS";
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		goto out_errno;
	/* We never execute anything; if we did, nothing could gain. */
	step = "PR_SET_NO_NEW_PRIVS";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		goto out_errno;
	/* The proof: root must be out of reach now. */
	step = "checking that root cannot be regained";
	if (setuid(0) == 0 || setgid(0) == 0) {
		err = -EACCES;
		goto out_err;
	}
	return 0;

out_errno:
	err = -errno;
out_err:
	snprintf(errbuf, errlen, "cannot become user \"%s\" (uid %u, gid %u): %s: %s%s",
		 pd->user, (unsigned)pd->uid, (unsigned)pd->gid, step, strerror(-err),
		 err == -EPERM ? " (CAP_SETUID, CAP_SETGID or CAP_SETPCAP missing? where"
		 " something else confines the daemon, as systemd's User= or a container"
		 " does, set \"user\": \"\")" : "");
	return err;
}
