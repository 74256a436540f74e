/* SPDX-License-Identifier: MIT */
/*
 * The loader of the intercept programs (intercept.h): finds the cgroup v2
 * hierarchy, opens the skeleton that the Makefile built from
 * intercept.bpf.c, fills its maps from the config, attaches each program
 * to the target cgroup as a bpf_link, and reads the original destination
 * of accepted connections back.
 *
 * libbpf prints its own diagnostics to stderr unless told otherwise; this
 * layer does not log, so they are silenced and the failure is said in the
 * error buffer, in words that name what is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bypass.h"
#include "intercept.h"
#include "proxy/intercept/intercept.skel.h"

const char *const intercept_programs[] = {
	"connect4", "connect6", "sock_ops", "getpeername4", "getpeername6", NULL,
};

static int icpt_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The mount point of the cgroup v2 hierarchy into buf: the first cgroup2
 * line of /proc/self/mountinfo (on a hybrid layout it is not
 * /sys/fs/cgroup itself). -ENOENT when there is none. */
static int icpt_cgroup2_mount(char *buf, size_t len)
{
	char line[4096], mnt[4096], *sep;
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SRC SUPER" */
		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (strlen(mnt) >= len) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(buf, mnt);	/* mountinfo escapes blanks as \040: kept */
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* This process's cgroup v2 path ("/" or "/system.slice/x.service"). */
static int icpt_self_cgroup(char *buf, size_t len)
{
	char line[4096];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) >= len) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(buf, line + 3);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* The id bpf_get_current_cgroup_id() returns for the cgroup at path: its
 * kernfs node id, which the kernel hands out as the directory's file
 * handle. */
static int icpt_cgroup_id(const char *path, uint64_t *id)
{
	union {
		struct file_handle fh;
		char b[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	int mount_id;

	h.fh.handle_bytes = sizeof(uint64_t);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0)
		return -errno;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

/* The listener connects of family go to: the first listen address of it,
 * a wildcard one as loopback. */
static bool icpt_target(const struct cfg *cfg, int family, struct sockaddr_storage *to)
{
	for (size_t i = 0; i < cfg->n_listen; i++) {
		const struct sockaddr_storage *ss = &cfg->listen[i].ss;

		if (ss->ss_family != family)
			continue;
		*to = *ss;
		if (family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)to;

			if (in->sin_addr.s_addr == htonl(INADDR_ANY))
				in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)to;

			if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
				in6->sin6_addr = in6addr_loopback;
		}
		return true;
	}
	return false;
}

/* addr (4 or 16 bytes of family) as the maps keep it: 16 bytes, IPv4
 * v4-mapped. */
static void icpt_addr16(uint8_t out[16], int family, const void *addr)
{
	if (family == AF_INET6) {
		memcpy(out, addr, 16);
		return;
	}
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, addr, 4);
}

static int icpt_fill(struct intercept *ic, const struct cfg *cfg)
{
	uint64_t bits[ICPT_PORT_WORDS] = { 0 };
	int dests = bpf_map__fd(ic->skel->maps.icpt_dests);
	int ports = bpf_map__fd(ic->skel->maps.icpt_ports);
	uint8_t one = 1;
	uint32_t w;

	for (size_t i = 0; i < cfg->intercept.n_dests; i++) {
		const struct cfg_prefix *p = &cfg->intercept.dests[i];
		struct icpt_dest_key k = {
			.prefixlen = p->len + (p->family == AF_INET ? 96 : 0),
		};

		icpt_addr16(k.addr, p->family, p->addr);
		if (bpf_map_update_elem(dests, &k, &one, BPF_ANY) < 0)
			return -errno;
	}
	for (size_t i = 0; i < cfg->intercept.n_ports; i++)
		for (uint32_t port = cfg->intercept.ports[i].lo; port <= cfg->intercept.ports[i].hi;
		     port++)
			bits[port / 64] |= 1ull << (port % 64);
	for (w = 0; w < ICPT_PORT_WORDS; w++)
		if (bits[w] && bpf_map_update_elem(ports, &w, &bits[w], BPF_ANY) < 0)
			return -errno;
	return 0;
}

static void icpt_set_rodata(struct intercept *ic, const struct cfg *cfg)
{
	struct intercept_bpf__rodata *ro = ic->skel->rodata;

	ro->icpt_mark = cfg->mark;
	ro->byp_credit = cfg->intercept.bypass_credit;
	ro->icpt_self_cgroup = ic->self_cgroup_id;
	if (ic->has_to4) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ic->to4;

		ro->icpt_has_to4 = 1;
		ro->icpt_to4 = in->sin_addr.s_addr;
		ro->icpt_to4_port = in->sin_port;
	}
	if (ic->has_to6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ic->to6;

		ro->icpt_has_to6 = 1;
		memcpy((void *)ro->icpt_to6, &in6->sin6_addr, 16);
		ro->icpt_to6_port = in6->sin6_port;
	}
}

/* Why the kernel would not load or attach, in words for the one line. */
static const char *icpt_why(int err)
{
	switch (err) {
	case -EACCES:
		return "the kernel's verifier rejected them (a kernel older than the "
		       "programs need?)";
	case -EPERM:
		return "permission denied: loading and attaching need CAP_BPF and "
		       "CAP_NET_ADMIN (the unit's eBPF drop-in adds CAP_BPF; smcproxyd(8))";
	case -EINVAL:
	case -EOPNOTSUPP:
	case -524:		/* the kernel's ENOTSUPP, which libc does not name */
		return "the kernel refused it (it needs cgroup BPF, CONFIG_CGROUP_BPF, and the "
		       "connect, getpeername and sock_ops hooks of Linux 5.8 or later)";
	case -ENOSYS:
		return "this kernel has no bpf() system call (CONFIG_BPF_SYSCALL)";
	default:
		return NULL;
	}
}

static int icpt_fail(char *errbuf, size_t errlen, const char *step, int err)
{
	const char *why = icpt_why(err);

	snprintf(errbuf, errlen, "intercept ebpf: %s: %s", step, why ? why : strerror(-err));
	return err;
}

/* Whether the kernel takes an entry out of a hash map in one call (Linux
 * 5.14): a key that is not there says ENOENT where it does, EINVAL or
 * ENOTSUPP where it does not. */
static bool icpt_has_lookup_and_delete(int fd)
{
	struct icpt_tuple t = { 0 };
	struct icpt_orig o;

	return bpf_map_lookup_and_delete_elem(fd, &t, &o) == 0 || errno == ENOENT;
}

/*
 * The target cgroup, opened, and its id and the daemon's own: the target
 * is intercept.cgroup below the cgroup v2 mount, wherever that is.
 */
static int icpt_open_cgroup(struct intercept *ic, const struct cfg *cfg, char *errbuf,
			    size_t errlen)
{
	char mnt[2048], self[2048];
	int err;

	err = icpt_cgroup2_mount(mnt, sizeof(mnt));
	if (err == -ENOENT) {
		snprintf(errbuf, errlen, "intercept ebpf: no cgroup v2 hierarchy is mounted "
			 "(mount -t cgroup2 none /sys/fs/cgroup/unified, or boot with "
			 "systemd.unified_cgroup_hierarchy)");
		return err;
	}
	if (err)
		return icpt_fail(errbuf, errlen, "reading /proc/self/mountinfo", err);
	if ((size_t)snprintf(ic->cgroup, sizeof(ic->cgroup), "%s%s", mnt,
			     strcmp(cfg->intercept.cgroup, "/") ? cfg->intercept.cgroup : "") >=
	    sizeof(ic->cgroup))
		return icpt_fail(errbuf, errlen, "intercept.cgroup", -ENAMETOOLONG);
	ic->cgroup_fd = open(ic->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ic->cgroup_fd < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "intercept ebpf: cgroup %s (intercept.cgroup \"%s\" in the "
			 "cgroup v2 hierarchy at %s): %s", ic->cgroup, cfg->intercept.cgroup, mnt,
			 strerror(-err));
		return err;
	}
	err = icpt_cgroup_id(ic->cgroup, &ic->cgroup_id);
	if (!err)
		err = icpt_self_cgroup(self, sizeof(self));
	if (!err && (size_t)snprintf(ic->self_cgroup, sizeof(ic->self_cgroup), "%s%s", mnt,
				     strcmp(self, "/") ? self : "") >= sizeof(ic->self_cgroup))
		err = -ENAMETOOLONG;
	if (!err)
		err = icpt_cgroup_id(ic->self_cgroup, &ic->self_cgroup_id);
	if (err)
		return icpt_fail(errbuf, errlen, "finding the cgroups' ids", err);
	/* The daemon's connects are told by its cgroup too: one shared with
	 * the applications would exempt them all. */
	if (ic->self_cgroup_id == ic->cgroup_id) {
		snprintf(errbuf, errlen, "intercept ebpf: intercept.cgroup \"%s\" is smcproxyd's own "
			 "cgroup: run the applications in a cgroup of their own (or the daemon in "
			 "one, as its systemd unit does)", cfg->intercept.cgroup);
		return -EINVAL;
	}
	return 0;
}

/* Each program to the cgroup by a link of its own; sock_ops and
 * getpeername first: once the connect hooks redirect, every redirected
 * socket must find the others there. */
static int icpt_attach(struct intercept *ic, char *errbuf, size_t errlen)
{
	struct bpf_program *progs[] = {
		ic->skel->progs.icpt_connect4, ic->skel->progs.icpt_connect6,
		ic->skel->progs.icpt_sockops, ic->skel->progs.icpt_getpeername4,
		ic->skel->progs.icpt_getpeername6,
	};
	struct bpf_link **links[] = {
		&ic->skel->links.icpt_connect4, &ic->skel->links.icpt_connect6,
		&ic->skel->links.icpt_sockops, &ic->skel->links.icpt_getpeername4,
		&ic->skel->links.icpt_getpeername6,
	};
	char step[4200];
	int err;

	_Static_assert(sizeof(progs) / sizeof(progs[0]) ==
		       sizeof(intercept_programs) / sizeof(intercept_programs[0]) - 1,
		       "a name in intercept_programs per program");
	for (int i = (int)(sizeof(progs) / sizeof(progs[0])) - 1; i >= 0; i--) {
		*links[i] = bpf_program__attach_cgroup(progs[i], ic->cgroup_fd);
		if (!*links[i]) {
			err = -errno;
			snprintf(step, sizeof(step), "attaching %s to %s", intercept_programs[i],
				 ic->cgroup);
			return icpt_fail(errbuf, errlen, step, err);
		}
	}
	return 0;
}

int intercept_open(struct intercept *ic, const struct cfg *cfg, char *errbuf, size_t errlen)
{
	int err;

	memset(ic, 0, sizeof(*ic));
	ic->cgroup_fd = ic->by_tuple_fd = ic->stats_fd = -1;
	ic->bypass.socks_fd = ic->bypass.flows_fd = ic->bypass.allow_fd = -1;
	ic->bypass.credit = cfg->intercept.bypass_credit;
	ic->bypass.skip_blocking_read = cfg->debug.bypass_skip_blocking_read;
	libbpf_set_print(icpt_quiet);
	ic->has_to4 = icpt_target(cfg, AF_INET, &ic->to4);
	ic->has_to6 = icpt_target(cfg, AF_INET6, &ic->to6);
	err = icpt_open_cgroup(ic, cfg, errbuf, errlen);
	if (err)
		goto out_close;
	ic->skel = intercept_bpf__open();
	if (!ic->skel) {
		err = icpt_fail(errbuf, errlen, "opening the programs", -errno);
		goto out_close;
	}
	icpt_set_rodata(ic, cfg);
	err = intercept_bpf__load(ic->skel);
	if (err) {
		icpt_fail(errbuf, errlen, "loading the programs", err);
		goto out_close;
	}
	err = icpt_fill(ic, cfg);
	if (err) {
		icpt_fail(errbuf, errlen, "filling the destinations", err);
		goto out_close;
	}
	err = libbpf_num_possible_cpus();
	if (err < 0) {
		icpt_fail(errbuf, errlen, "counting the CPUs", err);
		goto out_close;
	}
	ic->n_cpus = (unsigned)err;
	ic->by_tuple_fd = bpf_map__fd(ic->skel->maps.icpt_by_tuple);
	ic->stats_fd = bpf_map__fd(ic->skel->maps.icpt_stats);
	ic->lookup_and_delete = icpt_has_lookup_and_delete(ic->by_tuple_fd);
	/* Before the connect hooks attach: no application's flow is joined
	 * while the self-test runs, or by a bypass that failed it. Its
	 * failure leaves the rest as it is (ic->bypass.why). */
	if (cfg->intercept.bypass)
		(void)bypass_open(ic, ic->self_cgroup);
	err = icpt_attach(ic, errbuf, errlen);
	if (err)
		goto out_close;
	ic->attached = true;
	return 0;

out_close:
	intercept_close(ic);
	return err;
}

/* addr as the maps keep it, and its port. */
static bool icpt_key_addr(const struct sockaddr *sa, uint8_t out[16], uint16_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		icpt_addr16(out, AF_INET, &in->sin_addr);
		*port = in->sin_port;
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		icpt_addr16(out, AF_INET6, &in6->sin6_addr);
		*port = in6->sin6_port;
		return true;
	}
	return false;
}

int intercept_origdst(struct intercept *ic, const struct sockaddr *local,
		      const struct sockaddr *peer, struct sockaddr_storage *dst)
{
	struct icpt_tuple t;
	struct icpt_orig o;

	memset(&t, 0, sizeof(t));
	if (!icpt_key_addr(peer, t.src, &t.sport) || !icpt_key_addr(local, t.dst, &t.dport))
		return -EAFNOSUPPORT;
	if (ic->lookup_and_delete) {
		if (bpf_map_lookup_and_delete_elem(ic->by_tuple_fd, &t, &o) < 0)
			return -errno;
	} else {
		if (bpf_map_lookup_elem(ic->by_tuple_fd, &t, &o) < 0)
			return -errno;
		(void)bpf_map_delete_elem(ic->by_tuple_fd, &t);
	}
	memset(dst, 0, sizeof(*dst));
	if (o.family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)dst;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, o.addr + 12, 4);
		in->sin_port = o.port;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)dst;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, o.addr, 16);
		in6->sin6_port = o.port;
	}
	return 0;
}

int intercept_local(const struct intercept *ic, const struct sockaddr *peer,
		    struct sockaddr_storage *local)
{
	const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)peer;
	const struct sockaddr_in *to4 = (const struct sockaddr_in *)&ic->to4;
	struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)local;
	bool v6 = peer->sa_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&p6->sin6_addr);

	if (peer->sa_family != AF_INET && peer->sa_family != AF_INET6)
		return -ENOENT;
	if (v6 ? !ic->has_to6 : !ic->has_to4)
		return -ENOENT;
	if (v6 || peer->sa_family == AF_INET) {
		*local = v6 ? ic->to6 : ic->to4;
		return 0;
	}
	/* A dual-stack listener's view of an IPv4 connection. */
	memset(local, 0, sizeof(*local));
	l6->sin6_family = AF_INET6;
	l6->sin6_port = to4->sin_port;
	icpt_addr16(l6->sin6_addr.s6_addr, AF_INET, &to4->sin_addr);
	return 0;
}

void intercept_stats(const struct intercept *ic, struct intercept_stats *st)
{
	uint64_t sum[ICPT_ST_MAX] = { 0 }, v[512];

	memset(st, 0, sizeof(*st));
	if (ic->stats_fd < 0 || ic->n_cpus > 512)
		return;
	for (uint32_t k = 0; k < ICPT_ST_MAX; k++) {
		if (bpf_map_lookup_elem(ic->stats_fd, &k, v) < 0)
			continue;
		for (unsigned c = 0; c < ic->n_cpus; c++)
			sum[k] += v[c];
	}
	st->redirected = sum[ICPT_ST_REDIRECTED];
	st->self = sum[ICPT_ST_SELF];
	st->established = sum[ICPT_ST_ESTABLISHED];
	st->no_listener = sum[ICPT_ST_NO_LISTENER];
	st->map_full = sum[ICPT_ST_MAP_FULL];
	st->byp_joined = sum[ICPT_ST_BYP_JOINED];
	st->byp_late = sum[ICPT_ST_BYP_LATE];
	st->byp_credit = sum[ICPT_ST_BYP_CREDIT];
	st->byp_gone = sum[ICPT_ST_BYP_GONE];
	st->byp_msgs = sum[ICPT_ST_BYP_MSGS];
	st->byp_bytes = sum[ICPT_ST_BYP_BYTES];
}

void intercept_detach(struct intercept *ic)
{
	struct bpf_link **links[] = {
		&ic->skel->links.icpt_connect4, &ic->skel->links.icpt_connect6,
		&ic->skel->links.icpt_sockops, &ic->skel->links.icpt_getpeername4,
		&ic->skel->links.icpt_getpeername6,
	};

	if (!ic->skel)
		return;
	bypass_detach(ic);
	/* The connect hooks first: no connect may be redirected once the
	 * others, which remember it, are gone. */
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		bpf_link__destroy(*links[i]);
		*links[i] = NULL;
	}
	ic->attached = false;
}

void intercept_close(struct intercept *ic)
{
	if (!ic)
		return;
	/* Destroying the skeleton closes the links: the kernel detaches. */
	intercept_bpf__destroy(ic->skel);
	ic->skel = NULL;
	if (ic->cgroup_fd >= 0)
		close(ic->cgroup_fd);
	ic->cgroup_fd = ic->by_tuple_fd = ic->stats_fd = -1;
	ic->bypass.socks_fd = ic->bypass.flows_fd = ic->bypass.allow_fd = -1;
	ic->bypass.on = false;
}
