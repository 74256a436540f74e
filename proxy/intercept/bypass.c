/* SPDX-License-Identifier: MIT */
/*
 * The loader's part of the bypass (bypass.h): attaches byp_msg to the
 * sockets map and byp_sockops to our own cgroup, turns the programs'
 * switch on once the self-test passed, and answers the daemon's two
 * questions about a flow: was it joined, and how far may it go.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bypass.h"
#include "proxy/intercept/intercept.skel.h"

/* The flow key of a client address, in our namespace. */
static int byp_key_of(const struct intercept *ic, const struct sockaddr *client,
		      struct byp_key *k)
{
	memset(k, 0, sizeof(*k));
	k->netns = ic->bypass.netns;
	k->side = BYP_FLOW;
	if (client->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)client;

		k->addr[10] = k->addr[11] = 0xff;
		memcpy(k->addr + 12, &in->sin_addr, 4);
		k->port = in->sin_port;
		return 0;
	}
	if (client->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)client;

		memcpy(k->addr, &in6->sin6_addr, 16);
		k->port = in6->sin6_port;
		return 0;
	}
	return -EAFNOSUPPORT;
}

static int byp_netns_cookie(uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len) < 0)
		err = -errno;
	close(fd);
	return err;
}

int bypass_open(struct intercept *ic, const char *self_cgroup)
{
	struct bypass *b = &ic->bypass;
	int prog = bpf_program__fd(ic->skel->progs.byp_msg);
	int err, cg;

	b->socks_fd = bpf_map__fd(ic->skel->maps.byp_socks);
	b->flows_fd = bpf_map__fd(ic->skel->maps.byp_flows);
	b->allow_fd = bpf_map__fd(ic->skel->maps.byp_allow);
	err = byp_netns_cookie(&b->netns);
	if (err) {
		snprintf(b->why, sizeof(b->why), "reading the namespace's cookie "
			 "(SO_NETNS_COOKIE, Linux 5.14): %s", strerror(-err));
		return err;
	}
	if (bpf_prog_attach(prog, b->socks_fd, BPF_SK_MSG_VERDICT, 0) < 0) {
		err = -errno;
		snprintf(b->why, sizeof(b->why), "attaching the sk_msg program: %s",
			 strerror(-err));
		return err;
	}
	ic->skel->bss->byp_enabled = 1;
	err = bypass_selftest(ic, b->why, sizeof(b->why));
	if (err)
		goto out_off;
	cg = open(self_cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0) {
		err = -errno;
		snprintf(b->why, sizeof(b->why), "opening our own cgroup %s: %s", self_cgroup,
			 strerror(-err));
		goto out_off;
	}
	ic->skel->links.byp_sockops = bpf_program__attach_cgroup(ic->skel->progs.byp_sockops, cg);
	err = ic->skel->links.byp_sockops ? 0 : -errno;
	close(cg);
	if (err) {
		snprintf(b->why, sizeof(b->why), "attaching byp_sockops to our own cgroup %s: %s",
			 self_cgroup, strerror(-err));
		goto out_off;
	}
	b->on = true;
	return 0;

out_off:
	ic->skel->bss->byp_enabled = 0;
	bpf_prog_detach2(prog, b->socks_fd, BPF_SK_MSG_VERDICT);
	return err;
}

int bypass_joined(struct intercept *ic, int fd, const struct sockaddr *client)
{
	struct byp_flow f;
	struct byp_key k;
	int one = 1, err;

	if (!ic->bypass.on)
		return 0;
	err = byp_key_of(ic, client, &k);
	if (err)
		return err;
	/* byp_sockops runs under the socket's lock, which the accept queue
	 * can hand the socket out before: setting an option takes that lock,
	 * so after it the join happened or never will. (Accepted sockets
	 * have TCP_NODELAY from the listener already.) */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	if (bpf_map_lookup_elem(ic->bypass.flows_fd, &k, &f) < 0)
		return errno == ENOENT ? 0 : -errno;
	return f.daemon_in;
}

int bypass_refill(struct intercept *ic, const struct sockaddr *client, uint64_t total)
{
	uint64_t allow = total + ic->bypass.credit;
	struct byp_key k;
	int err;

	err = byp_key_of(ic, client, &k);
	if (err)
		return err;
	/* Only an entry that is there: the app's close deletes it. */
	if (bpf_map_update_elem(ic->bypass.allow_fd, &k, &allow, BPF_EXIST) < 0)
		return -errno;
	return 0;
}

void bypass_detach(struct intercept *ic)
{
	if (!ic->skel)
		return;
	bpf_link__destroy(ic->skel->links.byp_sockops);
	ic->skel->links.byp_sockops = NULL;
}
