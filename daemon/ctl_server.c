/* SPDX-License-Identifier: MIT */
/*
 * Serves the stats/control socket. Every client is checked with SO_PEERCRED
 * on accept: root, our own uid, and members of the socket file's group may
 * talk; the rest get one "permission denied" reply. Clients that send
 * nothing for CTL_IDLE_MS, or more than CTL_REQUEST_MAX bytes without a
 * newline, are dropped; at most CTL_MAX_CLIENTS are served at once. A
 * client that sends requests faster than it reads the replies is not read
 * while CTL_WQ_HIGH bytes of replies wait for it: memory stays bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_server.h"
#include "log.h"

#define CTL_MAX_CLIENTS	64
#define CTL_IDLE_MS	30000
#define CTL_WQ_HIGH	(256 * 1024)
#define CTL_WQ_LOW	(64 * 1024)

struct ctl_client {
	struct list_head node;
	struct ctl_server *server;
	uv_pipe_t pipe;
	uv_timer_t idle;
	char *buf;
	size_t len, cap;
	bool closing;
	bool ending;			/* closes once the replies are written */
	bool eof;			/* the client half-closed: answer, then end */
	bool read_paused;		/* replies piled up: not reading */
	unsigned open_handles;
};

struct ctl_write {
	uv_write_t req;
	struct ctl_client *client;
	char data[];
};

static void ctl_server_maybe_closed(struct ctl_server *s)
{
	if (s->close_cb && !s->listening && s->open_handles == 0 && s->n_clients == 0)
		s->close_cb(s);
}

static void ctl_client_on_closed(uv_handle_t *h)
{
	struct ctl_client *c = h->data;
	struct ctl_server *s = c->server;

	if (--c->open_handles)
		return;
	list_del(&c->node);
	s->n_clients--;
	free(c->buf);
	free(c);
	ctl_server_maybe_closed(s);
}

static void ctl_client_close(struct ctl_client *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->pipe, ctl_client_on_closed);
	uv_close((uv_handle_t *)&c->idle, ctl_client_on_closed);
}

static void ctl_client_process(struct ctl_client *c);

static void ctl_on_shutdown(uv_shutdown_t *req, int status)
{
	struct ctl_client *c = req->data;

	free(req);
	ctl_client_close(c);
}

/* Closes after what is queued has been written. */
static void ctl_client_end(struct ctl_client *c)
{
	uv_shutdown_t *req;

	if (c->ending || c->closing)
		return;
	c->ending = true;
	req = malloc(sizeof(*req));
	if (!req || uv_shutdown(req, (uv_stream_t *)&c->pipe, ctl_on_shutdown) < 0) {
		free(req);
		ctl_client_close(c);
		return;
	}
	req->data = c;
	uv_read_stop((uv_stream_t *)&c->pipe);
}

static void ctl_on_written(uv_write_t *req, int status)
{
	struct ctl_write *w = (struct ctl_write *)req;
	struct ctl_client *c = w->client;

	free(w);
	if (status < 0) {
		ctl_client_close(c);
		return;
	}
	if ((c->read_paused || c->eof) && !c->closing && !c->ending &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) < CTL_WQ_LOW)
		ctl_client_process(c);
}

/* Takes a malloc'd line (from ctl_proto) and frees it. */
static void ctl_client_send(struct ctl_client *c, char *line, size_t len, bool close_after)
{
	struct ctl_write *w;
	uv_buf_t b;

	if (!line) {
		ctl_client_close(c);
		return;
	}
	w = malloc(sizeof(*w) + len);
	if (!w) {
		free(line);
		ctl_client_close(c);
		return;
	}
	memcpy(w->data, line, len);
	free(line);
	w->client = c;
	b = uv_buf_init(w->data, len);
	if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, ctl_on_written) < 0) {
		free(w);
		ctl_client_close(c);
		return;
	}
	/* The reply is queued; the connection ends after it (libuv writes
	 * queued data before it closes a stream with uv_shutdown). */
	if (close_after)
		ctl_client_end(c);
}

static void ctl_client_error(struct ctl_client *c, const char *msg, bool close_after)
{
	size_t len;
	char *line = ctl_reply_error_line(msg, &len);

	ctl_client_send(c, line, len, close_after);
}

/* {"v":1,"ok":true} plus the handler's members, as one line. Steals body. */
static char *ctl_reply_members_line(json_t *body, size_t *len)
{
	json_t *reply = json_pack("{s:i, s:b}", "v", CTL_PROTO_VERSION, "ok", 1);
	char *line = NULL, *dump;

	if (reply && !json_object_update(reply, body)) {
		dump = json_dumps(reply, JSON_COMPACT);
		if (dump && asprintf(&line, "%s\n", dump) < 0)
			line = NULL;
		free(dump);
	}
	json_decref(reply);
	json_decref(body);
	if (line)
		*len = strlen(line);
	return line;
}

static void ctl_client_handle_line(struct ctl_client *c, const char *line, size_t len)
{
	struct ctl_server *s = c->server;
	char errmsg[CTL_ERRMSG_MAX], *err = NULL, *out;
	struct ctl_request req;
	json_t *body;
	size_t outlen = 0;

	if (ctl_request_decode(line, len, &req, errmsg, sizeof(errmsg)) < 0) {
		ctl_client_error(c, errmsg, false);
		return;
	}
	body = s->handler(s, &req, &err);
	if (!body) {
		ctl_client_error(c, err ? err : "internal error", false);
		free(err);
		return;
	}
	out = ctl_reply_members_line(body, &outlen);
	ctl_client_send(c, out, outlen, false);
}

static void ctl_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ctl_client *c = h->data;
	size_t want = c->len + 4096;

	if (want > c->cap) {
		char *nb = realloc(c->buf, want);

		if (!nb) {
			*buf = uv_buf_init(NULL, 0);	/* libuv reports UV_ENOBUFS */
			return;
		}
		c->buf = nb;
		c->cap = want;
	}
	*buf = uv_buf_init(c->buf + c->len, c->cap - c->len);
}

static void ctl_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void ctl_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

/* Answers the complete lines buffered so far, as long as the replies
 * queued for this client stay under CTL_WQ_HIGH; reads on only then. */
static void ctl_client_process(struct ctl_client *c)
{
	uv_stream_t *st = (uv_stream_t *)&c->pipe;
	size_t used, done = 0;
	char *nl;

	while (!c->closing && uv_stream_get_write_queue_size(st) < CTL_WQ_HIGH &&
	       (nl = memchr(c->buf + done, '\n', c->len - done))) {
		used = nl - (c->buf + done) + 1;
		ctl_client_handle_line(c, c->buf + done, used);
		done += used;
	}
	if (c->closing || c->ending)
		return;
	memmove(c->buf, c->buf + done, c->len - done);
	c->len -= done;
	if (c->eof) {
		/* Half-closed: every complete line gets its reply, then the
		 * connection ends; a last line without newline is dropped. */
		if (!memchr(c->buf, '\n', c->len))
			ctl_client_end(c);
		return;
	}
	if (c->len >= CTL_REQUEST_MAX && !memchr(c->buf, '\n', c->len)) {
		uv_read_stop(st);
		ctl_client_error(c, CTL_ERR_TOO_LONG, true);
		return;
	}
	if (uv_stream_get_write_queue_size(st) >= CTL_WQ_HIGH) {
		if (!c->read_paused)
			uv_read_stop(st);
		c->read_paused = true;
	} else if (c->read_paused) {
		c->read_paused = false;
		uv_read_start(st, ctl_on_alloc, ctl_on_read);
	}
}

static void ctl_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct ctl_client *c = st->data;

	if (n == UV_EOF) {
		/* libuv stopped reading; replies already owed still go out. */
		c->eof = true;
		ctl_client_process(c);
		return;
	}
	if (n < 0) {
		ctl_client_close(c);
		return;
	}
	c->len += n;
	uv_timer_again(&c->idle);
	ctl_client_process(c);
}

static void ctl_on_idle(uv_timer_t *t)
{
	ctl_client_close(t->data);
}

/*
 * Root, our own uid, or a member of the socket file's group. Membership
 * comes from the peer process itself (SO_PEERGROUPS), not from the group
 * database: no NSS lookup (LDAP...) can stall the event loop, and what
 * counts is the groups the process really has.
 */
static bool ctl_peer_allowed(const struct ctl_server *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct stat st;
	gid_t groups[1024];
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	if (cred.uid == 0 || cred.uid == geteuid())
		return true;
	if (stat(s->path, &st) < 0)
		return false;
	if (cred.gid == st.st_gid)
		return true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;	/* ERANGE: more than 1024 groups, refuse */
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == st.st_gid)
			return true;
	return false;
}

static void ctl_on_connection(uv_stream_t *server, int status)
{
	struct ctl_server *s = server->data;
	struct ctl_client *c;
	uv_os_fd_t fd;

	if (status < 0) {
		log_warn("stats socket: accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->server = s;
	uv_pipe_init(s->loop, &c->pipe, 0);
	uv_timer_init(s->loop, &c->idle);
	c->pipe.data = c->idle.data = c;
	c->open_handles = 2;
	list_add_tail(&c->node, &s->clients);
	s->n_clients++;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		ctl_client_close(c);
		return;
	}
	if (s->n_clients > CTL_MAX_CLIENTS) {
		ctl_client_error(c, "too many clients", true);
		return;
	}
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 || !ctl_peer_allowed(s, fd)) {
		ctl_client_error(c, CTL_ERR_PERMISSION, true);
		return;
	}
	uv_timer_start(&c->idle, ctl_on_idle, CTL_IDLE_MS, CTL_IDLE_MS);
	uv_read_start((uv_stream_t *)&c->pipe, ctl_on_alloc, ctl_on_read);
}

static int mkdir_parents(const char *path, char *errbuf, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *p;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
		snprintf(errbuf, errlen, "stats socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(errbuf, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* A socket file nobody answers on is a dead daemon's: remove it. */
static int ctl_remove_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

int ctl_server_init(struct ctl_server *s, uv_loop_t *loop, const char *path,
		    mode_t mode, ctl_handler_fn handler, char *errbuf, size_t errlen)
{
	mode_t old_umask;
	int err;

	*s = (struct ctl_server){ .loop = loop, .handler = handler };
	list_init(&s->clients);
	s->path = strdup(path);
	if (!s->path)
		return -ENOMEM;
	err = mkdir_parents(path, errbuf, errlen);
	if (err)
		goto out_free_path;
	err = ctl_remove_stale(path);
	if (err) {
		snprintf(errbuf, errlen, "stats socket %s: %s", path,
			 err == -EADDRINUSE ? "another smcproxyd is answering on it" :
			 err == -EEXIST ? "exists and is not a socket" : strerror(-err));
		goto out_free_path;
	}
	uv_pipe_init(loop, &s->pipe, 0);
	s->pipe.data = s;
	s->open_handles = 1;
	/* No window in which the socket exists with looser permissions. */
	old_umask = umask(0177);
	err = uv_pipe_bind(&s->pipe, path);
	umask(old_umask);
	if (!err)
		err = ctl_server_set_mode(s, mode);
	if (!err)
		err = uv_listen((uv_stream_t *)&s->pipe, 16, ctl_on_connection);
	if (err) {
		snprintf(errbuf, errlen, "stats socket %s: %s", path, uv_strerror(err));
		uv_close((uv_handle_t *)&s->pipe, NULL);
		s->open_handles = 0;
		unlink(path);
		goto out_free_path;
	}
	s->listening = true;
	return 0;

out_free_path:
	free(s->path);
	s->path = NULL;
	return err;
}

int ctl_server_set_mode(struct ctl_server *s, mode_t mode)
{
	return chmod(s->path, mode) < 0 ? -errno : 0;
}

static void ctl_server_on_closed(uv_handle_t *h)
{
	struct ctl_server *s = h->data;

	s->open_handles--;
	ctl_server_maybe_closed(s);
}

void ctl_server_close(struct ctl_server *s, void (*close_cb)(struct ctl_server *s))
{
	struct list_head *pos, *n;

	s->close_cb = close_cb;
	if (s->listening) {
		s->listening = false;
		unlink(s->path);
		uv_close((uv_handle_t *)&s->pipe, ctl_server_on_closed);
	}
	list_for_each_safe(pos, n, &s->clients)
		ctl_client_close(list_entry(pos, struct ctl_client, node));
	free(s->path);
	s->path = NULL;
	ctl_server_maybe_closed(s);
}
