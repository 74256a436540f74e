/* SPDX-License-Identifier: MIT */
/*
 * The shm transport's rendezvous (shm-int.h): after the handshake, the
 * client connects to the server's UNIX socket in its shm.dir and both pass
 * their memfd and doorbells with a message that proves the group's secret;
 * the socket then stays open so that the peer's death is seen at once.
 * Also the worker's side of it (the listening socket, connections not yet
 * matched) and the handshake's address, the socket's path.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/container.h"
#include "smc/clc.h"
#include "core/epset.h"
#include "core/loop.h"
#include "core/sock.h"
#include "smc/lgr.h"
#include "smc/net.h"
#include "smc/transport.h"
#include "shm-int.h"

#define SHM_RV_MAX	64		/* rendezvous connections not yet matched */

/*
 * The tag of m as the side of role sends it: HMAC(group secret, label ||
 * the message before the tag), the label naming the sender's role so that
 * a hello cannot be reflected as the answer. Only with a secret.
 */
static int shm_rv_tag(const struct lgr *lgr, enum lgr_role role, const struct shm_rv_msg *m,
		      uint8_t tag[CLC_MAC_LEN])
{
	return clc_secret_tag(lgr->secret, role == LGR_ROLE_CLIENT ?
			      "smcproxy shm hello v2 P" : "smcproxy shm hello v2 R",
			      (const uint8_t *)m, offsetof(struct shm_rv_msg, tag), tag, CLC_MAC_LEN);
}

/* Whether the peer's message m proves lgr's secret (all zeros without
 * one: a field we do not use must not carry anything). */
static bool shm_rv_tag_ok(const struct lgr *lgr, const struct shm_rv_msg *m)
{
	uint8_t want[CLC_MAC_LEN] = { 0 };

	if (lgr->has_secret &&
	    shm_rv_tag(lgr, lgr->role == LGR_ROLE_CLIENT ? LGR_ROLE_SERVER : LGR_ROLE_CLIENT, m,
		       want))
		return false;
	return clc_tag_equal(want, m->tag, CLC_MAC_LEN);
}

static int shm_send_rv(int fd, const struct shm_lgr *sg, const uint8_t *id, uint32_t status)
{
	const struct lgr *lgr = sg->lgr;
	struct shm_rv_msg m = { .links = lgr->n_links, .size = sg->local_size, .status = status };
	int fds[1 + LGR_LINKS_MAX];
	unsigned i, n = 0;

	memcpy(m.magic, SHM_RV_MAGIC, sizeof(m.magic));
	memcpy(m.lgr_id, id, sizeof(m.lgr_id));
	if (lgr->has_secret && shm_rv_tag(lgr, lgr->role, &m, m.tag))
		return -EIO;
	if (!status) {
		fds[n++] = sg->memfd;
		for (i = 0; i < lgr->n_links; i++)
			fds[n++] = sg->links[i].efd_rx;
	}
	return sock_send_fds(fd, &m, sizeof(m), fds, n, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       (ssize_t)sizeof(m) ? 0 : -EIO;
}

/*
 * One rendezvous message with its fds; -EAGAIN when none is there yet.
 * Every fd the kernel installs is either returned in fds[] or closed
 * here, whatever the peer sent: the control buffer admits exactly
 * 1 + LGR_LINKS_MAX fds, and the kernel drops the rest with MSG_CTRUNC
 * (sock_recv_fds()).
 */
static int shm_recv_rv(int fd, struct shm_rv_msg *m, int *fds, unsigned *n_fds)
{
	ssize_t n;
	unsigned i;
	int flags;

	_Static_assert(1 + LGR_LINKS_MAX <= SOCK_FDS_MAX, "a rendezvous' fds fit one message");
	n = sock_recv_fds(fd, m, sizeof(*m), fds, 1 + LGR_LINKS_MAX, 1 + LGR_LINKS_MAX, n_fds,
			  &flags, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return (int)n;
	if (n != (ssize_t)sizeof(*m) || (flags & (MSG_CTRUNC | MSG_TRUNC)) ||
	    memcmp(m->magic, SHM_RV_MAGIC, sizeof(m->magic)) != 0) {
		for (i = 0; i < *n_fds; i++)
			close(fds[i]);
		*n_fds = 0;
		return n == 0 ? -ECONNRESET : -EPROTO;
	}
	return 0;
}

/* The rendezvous socket stays open: EOF is the peer daemon's death. */
static void shm_on_sock(struct epset_entry *e, uint32_t events)
{
	struct shm_lgr *sg = container_of(e, struct shm_lgr, sock_ev);
	struct lgr *lgr = sg->lgr;
	struct shm_rv_msg m;
	int fds[1 + LGR_LINKS_MAX];
	unsigned n_fds;
	int err;

	if (sg->up) {
		char c;

		unsigned i;

		/* Nothing is ever sent after the rendezvous. */
		if (recv(sg->sock, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN &&
		    !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
			return;
		/* What the peer posted before it closed comes first: the
		 * DELETE_LINK of an orderly stop makes this end a quiet one,
		 * and its doorbell's event may come after this in the batch. */
		for (i = 0; i < lgr->n_links; i++)
			if (sg->links[i].lnk)
				shm_drain(&sg->links[i]);
		lgr_fail_sched(lgr, -ECONNRESET);
		return;
	}
	/* Client: the server's answer to our hello. */
	err = shm_recv_rv(sg->sock, &m, fds, &n_fds);
	if (err == -EAGAIN)
		return;
	if (!err && (m.status || memcmp(m.lgr_id, lgr->id, CLC_LGR_ID_LEN) != 0 ||
		     !shm_rv_tag_ok(lgr, &m))) {
		unsigned i;

		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		err = -EPROTO;
	}
	if (!err)
		err = shm_adopt_peer(sg, &m, fds, n_fds);
	if (err) {
		counter_add(&lgr->net->stats->bad_messages, err == -EPROTO);
		lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
		return;
	}
	sg->up = true;
	close(sg->memfd);
	sg->memfd = -1;
	lgr__established(lgr);
}

/*
 * Client: the server's rendezvous socket, where the accept says it is
 * (shm_addr_check() passed it). We pass our memory and doorbells to
 * whatever listens there, so only to a socket our own user or group may
 * connect to, as ours are (mode 0660, and the server checks that we are
 * its user or group): a peer cannot make us reach one that a daemon of
 * our user or group did not make. Anything in the way (no such file, a directory we
 * cannot search, another mount namespace, no listener) is
 * -EADDRNOTAVAIL, fallback reason no_rendezvous, with both paths in
 * lgr->why for the log.
 */
int shm_lgr_connect(struct lgr *lgr, const uint8_t *addr, size_t len)
{
	struct smc_net *net = lgr->net;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *why = NULL;
	struct shm_lgr *sg;
	struct stat st;
	int err, fd;

	if (addr[0] == '/')
		err = snprintf(sun.sun_path, sizeof(sun.sun_path), "%.*s", (int)len,
			       (const char *)addr);
	else	/* a daemon of before: its basename, in our shm.dir */
		err = snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%.*s", net->cfg->shm.dir,
			       (int)len, (const char *)addr);
	if (err < 0 || (size_t)err >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if (stat(sun.sun_path, &st) < 0)
		why = strerror(errno);
	else if (!S_ISSOCK(st.st_mode))
		why = "not a socket";
	else if (!((st.st_uid == geteuid() && (st.st_mode & 0600) == 0600) ||
		   (st.st_gid == getegid() && (st.st_mode & 0060) == 0060) ||
		   (st.st_mode & 0006) == 0006))
		why = "not a socket of our own user or group (mode 0660 as ours are)";
	err = shm_lgr_prepare(lgr);
	if (err)
		return err;
	sg = lgr->tp;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sg->sock = fd;
	sg->sock_ev.cb = shm_on_sock;
	if (!why && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		why = strerror(errno);
	if (why) {
		snprintf(lgr->why, sizeof(lgr->why),
			 "the peer's shm rendezvous socket %s cannot be reached from here (%s);"
			 " ours are in shm.dir %s", sun.sun_path, why, net->cfg->shm.dir);
		return -EADDRNOTAVAIL;
	}
	err = shm_send_rv(fd, sg, lgr->id, 0);
	if (err)
		return err;
	return epset_add(&net->core->epset, fd, EPOLLIN | EPOLLRDHUP, &sg->sock_ev) < 0 ? -errno : 0;
}

/* ------------------------------------------------------------------ */
/* Server: the rendezvous socket. */

static void shm_rv_reap(struct loop_defer *d)
{
	free(container_of(d, struct shm_rv, defer));
}

static void shm_rv_free(struct shm_rv *rv, bool close_fd)
{
	list_del(&rv->node);
	shm_worker_of(rv->net)->n_rvs--;
	if (close_fd && rv->fd >= 0)
		close(rv->fd);
	rv->fd = -1;
	loop_defer(rv->net->core, &rv->defer, shm_rv_reap);
}

static void shm_on_rv(struct epset_entry *e, uint32_t events)
{
	struct shm_rv *rv = container_of(e, struct shm_rv, ev);
	struct smc_net *net = rv->net;
	struct shm_rv_msg m;
	struct shm_lgr *sg;
	struct lgr *lgr;
	int fds[1 + LGR_LINKS_MAX];
	unsigned n_fds, i;
	int err;

	if (rv->fd < 0)
		return;
	err = shm_recv_rv(rv->fd, &m, fds, &n_fds);
	if (err == -EAGAIN)
		return;
	lgr = err ? NULL : lgr_find_by_id(net, &shm_ops, m.lgr_id);
	if (!lgr) {
		/* Unknown id: someone on this host who did not do the
		 * handshake, or came too late. */
		counter_inc(&net->stats->bad_messages);
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		shm_rv_free(rv, true);
		return;
	}
	if (!shm_rv_tag_ok(lgr, &m)) {
		/* Whoever knew the group's id (it crossed the network in
		 * clear) but not its secret: refused, and the group waits on
		 * for its real peer until its deadline. */
		counter_inc(&net->stats->auth_failures);
		for (i = 0; i < n_fds; i++)
			close(fds[i]);
		shm_rv_free(rv, true);
		return;
	}
	sg = lgr->tp;
	err = shm_adopt_peer(sg, &m, fds, n_fds);
	if (!err)
		err = shm_send_rv(rv->fd, sg, lgr->id, 0);
	if (!err) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET,
					  .data.ptr = &sg->sock_ev };

		sg->sock = rv->fd;
		sg->sock_ev.cb = shm_on_sock;
		if (epoll_ctl(net->core->epset.fd, EPOLL_CTL_MOD, sg->sock, &ev) < 0)
			err = -errno;
	}
	if (err) {
		counter_add(&net->stats->bad_messages, err == -EPROTO);
		shm_rv_free(rv, sg->sock != rv->fd);
		lgr__handshake_failed(lgr, FB_DECL_INTERNAL);
		return;
	}
	shm_rv_free(rv, false);
	sg->up = true;
	close(sg->memfd);
	sg->memfd = -1;
	lgr__established(lgr);
}

/*
 * Whether the process at the other end of a rendezvous connection may be
 * a peer daemon: our own user, our group, or root. The socket's mode
 * already keeps others out; this holds for a socket whose mode an
 * operator widened, or a connection made before a chmod.
 */
static bool shm_peer_cred_ok(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == 0 || cr.uid == geteuid() || cr.gid == getegid();
}

/*
 * Connections whose hello is overdue go, oldest first; with every slot
 * taken the oldest goes anyway, so that silent connections cannot keep a
 * real peer out (its hello comes right after its connect, so it is never
 * the oldest for long).
 */
void shm_rv_expire(struct shm_worker *sw, uint64_t now, bool need_slot)
{
	while (!list_empty(&sw->rvs)) {
		struct shm_rv *rv = list_entry(sw->rvs.next, struct shm_rv, node);

		if (now < rv->deadline_ms && !(need_slot && sw->n_rvs >= SHM_RV_MAX))
			return;
		counter_inc(&sw->net->stats->bad_messages);
		shm_rv_free(rv, true);
	}
}

static void shm_on_listen(struct epset_entry *e, uint32_t events)
{
	struct shm_worker *sw = container_of(e, struct shm_worker, ev);
	struct smc_net *net = sw->net;
	struct shm_rv *rv;
	int fd;

	for (;;) {
		fd = accept4(sw->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (!shm_peer_cred_ok(fd)) {
			counter_inc(&net->stats->proposals_refused);
			close(fd);
			continue;
		}
		shm_rv_expire(sw, uv_now(net->loop), true);
		if (!(rv = calloc(1, sizeof(*rv)))) {
			close(fd);
			continue;
		}
		rv->net = net;
		rv->fd = fd;
		rv->deadline_ms = uv_now(net->loop) + net->cfg->fallback.connect_timeout_ms;
		rv->ev.cb = shm_on_rv;
		list_add_tail(&rv->node, &sw->rvs);
		sw->n_rvs++;
		if (epset_add(&net->core->epset, fd, EPOLLIN | EPOLLRDHUP, &rv->ev) < 0)
			shm_rv_free(rv, true);
	}
}

/* <shm.dir>/<name> into buf: its length, or -ENAMETOOLONG. A shm.dir
 * written with a trailing slash gives the same path, which peers are
 * told (shm_addr_check() takes no "//"). */
static int shm_sock_path(const struct smc_net *net, const struct shm_worker *sw,
			 char *buf, size_t len)
{
	const char *dir = net->cfg->shm.dir;
	size_t d = strlen(dir);
	int n;

	while (d > 1 && dir[d - 1] == '/')
		d--;
	n = snprintf(buf, len, "%.*s/%s", (int)(d == 1 ? 0 : d), dir, sw->name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* The rendezvous socket <shm.dir>/<name>, with a control port only. */
int shm_listen(struct smc_net *net, char *errbuf, size_t errlen)
{
	struct shm_worker *sw = shm_worker_of(net);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	snprintf(sw->name, sizeof(sw->name), "smcproxyd-%d-%u.sock", (int)getpid(),
		 net->worker);
	err = shm_sock_path(net, sw, sun.sun_path, sizeof(sun.sun_path));
	if (err < 0)
		goto out_err;
	/* The handshake names this path to peers (shm_addr_check()). */
	if (shm_addr_check((const uint8_t *)sun.sun_path, strlen(sun.sun_path))) {
		snprintf(errbuf, errlen, "shm.dir %s: only an absolute path of "
			 "[A-Za-z0-9._-] names, without . or .. or //, can be named to peers",
			 net->cfg->shm.dir);
		return -EINVAL;
	}
	if (mkdir(net->cfg->shm.dir, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		goto out_err;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out_err;
	}
	unlink(sun.sun_path);	/* a dead daemon's with our pid */
	/* Only our user and group (peer daemons run as the same service
	 * user): the link group id of an accepted handshake then admits a
	 * connection, and shm_peer_cred_ok() checks who connected. */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(sun.sun_path, 0660) < 0 || listen(fd, 64) < 0) {
		err = -errno;
		close(fd);
		goto out_err;
	}
	sw->fd = fd;
	sw->ev.cb = shm_on_listen;
	if (epset_add(&net->core->epset, fd, EPOLLIN, &sw->ev) < 0) {
		err = -errno;
		shm_unlisten(net);
		goto out_err;
	}
	return 0;

out_err:
	snprintf(errbuf, errlen, "shm rendezvous socket in %s: %s", net->cfg->shm.dir,
		 strerror(-err));
	return err;
}

void shm_unlisten(struct smc_net *net)
{
	struct shm_worker *sw = shm_worker_of(net);
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];

	if (!sw)
		return;
	while (!list_empty(&sw->rvs))
		shm_rv_free(list_entry(sw->rvs.next, struct shm_rv, node), true);
	if (sw->fd < 0)
		return;
	close(sw->fd);
	sw->fd = -1;
	if (shm_sock_path(net, sw, path, sizeof(path)) > 0)
		unlink(path);
}

/* Nothing but the rendezvous socket's state: a client needs none. */
int shm_init(struct smc_net *net, char *errbuf, size_t errlen)
{
	struct shm_worker *sw = calloc(1, sizeof(*sw));

	if (!sw) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	sw->fd = -1;
	sw->net = net;
	list_init(&sw->rvs);
	net->tp[smc_transport_slot(&shm_ops)] = sw;
	return 0;
}

void shm_close(struct smc_net *net)
{
	struct shm_worker *sw = shm_worker_of(net);

	if (!sw)
		return;
	shm_unlisten(net);
	free(sw);
	net->tp[smc_transport_slot(&shm_ops)] = NULL;
}

/* ------------------------------------------------------------------ */
/* The handshake's address: the rendezvous socket's path. */

int shm_name_check(const uint8_t *v, size_t len)
{
	if (len < 1 || len > SHM_NAME_MAX)
		return -EBADMSG;
	if ((len == 1 && v[0] == '.') || (len == 2 && v[0] == '.' && v[1] == '.'))
		return -EBADMSG;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return -EBADMSG;
	}
	return 0;
}

int shm_addr_check(const uint8_t *v, size_t len)
{
	size_t i, start;

	if (len < 1 || v[0] != '/')
		return shm_name_check(v, len);
	if (len > SHM_PATH_MAX)
		return -EBADMSG;
	for (start = 1, i = 1; i <= len; i++) {
		if (i < len && v[i] != '/')
			continue;
		if (shm_name_check(v + start, i - start))
			return -EBADMSG;
		start = i + 1;
	}
	return 0;
}

/* Only an accept names the socket, by its whole path: the server is the
 * side that listens, and the client's shm.dir may differ. */
int shm_addr_encode(struct smc_net *net, bool accept, uint8_t *out, size_t len)
{
	const struct shm_worker *sw = shm_worker_of(net);
	char path[SHM_PATH_MAX + 1];
	int n;

	if (!accept)
		return 0;
	if (!sw || sw->fd < 0)
		return -ENOTCONN;
	n = shm_sock_path(net, sw, path, sizeof(path));
	if (n < 0 || (size_t)n > len ||
	    shm_addr_check((const uint8_t *)path, (size_t)n))
		return -EINVAL;
	memcpy(out, path, (size_t)n);
	return n;
}

int shm_addr_usable(const uint8_t *v, size_t len)
{
	return len ? 0 : -ENOENT;
}

/* A peer of this host: it has our host id. */
bool shm_can_serve(struct smc_net *net, const struct clc_proposal *pr)
{
	return memcmp(pr->host_id, net->host_id, CLC_HOST_ID_LEN) == 0;
}
