/* SPDX-License-Identifier: MIT */
/*
 * The HTTP endpoint of "metrics.listen" (metrics.h), on libmicrohttpd.
 *
 * MHD runs without a thread: MHD_USE_EPOLL gives one epoll fd that holds
 * the listener and every connection; the main loop watches it with a
 * uv_poll and calls MHD_run() when it is readable, and a uv_timer fires at
 * MHD_get_timeout() for idle connections and for work MHD left pending.
 * So a request is parsed and answered on the main thread, between the
 * stats socket's requests, and never on a worker: the data plane does not
 * see HTTP at all. The counters are read as the stats socket reads them
 * (the owner renders them; see smcd.c).
 *
 * Hostile clients are bounded: a request line and headers larger than
 * METRICS_REQUEST_MAX are refused (431, 414), at most max_clients
 * connections are served at once (the next ones wait in the kernel's
 * backlog of METRICS_BACKLOG, then SYNs are dropped), of them a quarter
 * from one address (metrics_per_addr(); more are closed at once), and a
 * connection is closed timeout after it was accepted, whatever it sent
 * meanwhile. MHD's own timeout only closes idle connections: a client
 * that sends a byte now and then (a slowloris) would keep its slot for
 * ever, and 40 of them kept /ready from answering. So each connection
 * has a deadline of ours (struct metrics_conn), and at the deadline we
 * shut its socket down, which MHD sees as the client's end and closes.
 * What the listener can be reached from is what it is bound to:
 * there is no authentication, so the default is off, and a listener on a
 * non-loopback address is the operator's choice.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/list.h"
#include "log.h"
#include "metrics.h"

#define METRICS_BACKLOG		16
#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/* MHD's own complaints (a client that broke the protocol, the connection
 * limit reached) are about clients, not about us: debug level, so that a
 * hostile client cannot fill the journal. */
static void metrics_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	log_debug("metrics: %s", buf);
}

/* Queues a response of len bytes at text, which MHD takes over (free()). */
static enum MHD_Result metrics_reply(struct MHD_Connection *c, unsigned status,
				     const char *type, char *text, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;	/* MHD closes the connection */
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result metrics_reply_text(struct MHD_Connection *c, unsigned status,
					  const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	return metrics_reply(c, status, "text/plain; charset=utf-8", text, (size_t)n);
}

static enum MHD_Result metrics_serve_metrics(struct metrics *m, struct MHD_Connection *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int err;

	if (!f)
		return metrics_reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "cannot render: %s\n", strerror(errno));
	err = m->ops->render(m, f);
	if (fclose(f) != 0 && !err)
		err = -ENOMEM;
	if (err) {
		free(text);
		return metrics_reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "cannot render: %s\n", strerror(-err));
	}
	return metrics_reply(c, MHD_HTTP_OK, PROM_CONTENT_TYPE, text, len);
}

static enum MHD_Result metrics_serve_ready(struct metrics *m, struct MHD_Connection *c)
{
	char why[256] = "";

	if (m->ops->ready(m, why, sizeof(why)))
		return metrics_reply_text(c, MHD_HTTP_OK, "ready\n");
	return metrics_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s\n",
				  why[0] ? why : "unknown");
}

/*
 * One request, called by MHD once its headers are in. Every request is
 * answered at that first call: a body (there should be none) is not read,
 * and MHD closes the connection after the reply rather than reading it.
 */
static enum MHD_Result metrics_on_request(void *cls, struct MHD_Connection *c,
					  const char *url, const char *method,
					  const char *version, const char *upload_data,
					  size_t *upload_data_size, void **req_cls)
{
	struct metrics *m = cls;

	m->requests++;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return metrics_reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "only GET and HEAD\n");
	if (!strcmp(url, "/metrics"))
		return metrics_serve_metrics(m, c);
	if (!strcmp(url, "/ready"))
		return metrics_serve_ready(m, c);
	if (!strcmp(url, "/"))
		return metrics_reply_text(c, MHD_HTTP_OK,
					  "smcproxyd: /metrics (Prometheus), /ready\n");
	return metrics_reply_text(c, MHD_HTTP_NOT_FOUND, "not found: /metrics or /ready\n");
}

static void metrics_on_timer(uv_timer_t *t);

/* One connection's deadline, from its accept to its close. */
struct metrics_conn {
	struct list_head node;		/* in m->conns */
	int fd;				/* MHD's: shut down, never closed here */
	uint64_t deadline_ms;
	bool cut;
};

unsigned metrics_per_addr(unsigned max_clients)
{
	return max_clients / 4 ? max_clients / 4 : 1;
}

static void metrics_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
				  enum MHD_ConnectionNotificationCode toe)
{
	struct metrics *m = cls;
	struct metrics_conn *mc = *socket_context;
	const union MHD_ConnectionInfo *info;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (mc) {
			list_del(&mc->node);
			free(mc);
			*socket_context = NULL;
		}
		return;
	}
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	mc = calloc(1, sizeof(*mc));
	if (!mc) {
		/* No deadline to keep: not served at all. */
		if (info)
			shutdown(info->connect_fd, SHUT_RDWR);
		return;
	}
	mc->fd = info ? info->connect_fd : -1;
	mc->deadline_ms = uv_now(m->loop) + m->request_ms;
	list_add_tail(&mc->node, &m->conns);
	*socket_context = mc;
}

/*
 * Shuts down the connections past their deadline; returns the time to the
 * next deadline (UINT64_MAX: none). Connections are on the list in the
 * order they were accepted, so the first one not due ends the walk.
 */
static uint64_t metrics_cut_late(struct metrics *m)
{
	uint64_t now = uv_now(m->loop);
	struct list_head *pos;

	list_for_each(pos, &m->conns) {
		struct metrics_conn *mc = list_entry(pos, struct metrics_conn, node);

		if (mc->cut)
			continue;
		if (mc->deadline_ms > now)
			return mc->deadline_ms - now;
		mc->cut = true;
		m->cut++;
		if (mc->fd >= 0)
			shutdown(mc->fd, SHUT_RDWR);
	}
	return UINT64_MAX;
}

static unsigned metrics_n_connections(struct metrics *m)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

/*
 * Lets MHD do what is ready, then sleeps until its next deadline.
 *
 * At max_clients MHD takes the listener out of its epoll set, and puts it
 * back only at the start of a later MHD_run(), not in the run that closed
 * connections: with nothing else to wake us, connections waiting in the
 * backlog would never be accepted. So a run that closed connections is
 * followed by another one at once.
 */
static void metrics_run(struct metrics *m)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t next;
	unsigned before, cut;

	if (m->closing)
		return;
	before = metrics_n_connections(m);
	MHD_run(m->mhd);
	cut = m->cut;
	next = metrics_cut_late(m);
	/* A connection just shut down is closed by the next run. */
	if (metrics_n_connections(m) < before || m->cut != cut)
		next = 0;
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES && (uint64_t)ms < next)
		next = (uint64_t)ms;
	if (next != UINT64_MAX)
		uv_timer_start(&m->timer, metrics_on_timer, next, 0);
	else
		uv_timer_stop(&m->timer);
}

static void metrics_on_poll(uv_poll_t *p, int status, int events)
{
	metrics_run(p->data);
}

static void metrics_on_timer(uv_timer_t *t)
{
	metrics_run(t->data);
}

/* A listening TCP socket on addr, non-blocking; -errno on failure. */
static int metrics_listen_fd(const struct cfg_addr *addr)
{
	int fd, one = 1, err;

	fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto out_close;
	/* "[::]:9464" means IPv6 only, as "listen" addresses do. */
	if (addr->ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto out_close;
	if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 ||
	    listen(fd, METRICS_BACKLOG) < 0)
		goto out_close;
	return fd;

out_close:
	err = -errno;
	close(fd);
	return err;
}

static void metrics_on_closed(uv_handle_t *h)
{
	struct metrics *m = h->data;

	if (--m->open_handles == 0 && m->close_cb)
		m->close_cb(m);
}

int metrics_init(struct metrics *m, uv_loop_t *loop, const struct cfg_addr *addr,
		 unsigned max_clients, uint64_t timeout_ms,
		 const struct metrics_ops *ops, void *data, char *errbuf, size_t errlen)
{
	const union MHD_DaemonInfo *info;
	unsigned timeout_s = (unsigned)((timeout_ms + 999) / 1000);
	int fd, err;

	*m = (struct metrics){ .loop = loop, .ops = ops, .data = data,
			       .request_ms = timeout_ms };
	list_init(&m->conns);
	if (!addr->len)
		return 0;
	addr_format((const struct sockaddr *)&addr->ss, m->addr, sizeof(m->addr));
	fd = metrics_listen_fd(addr);
	if (fd < 0) {
		snprintf(errbuf, errlen, "metrics.listen %s: %s", m->addr, strerror(-fd));
		return fd;
	}
	/* MHD closes fd when it stops. When it fails to start, whether it
	 * closed fd depends on where: the fd is left alone, the daemon exits. */
	m->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  metrics_on_request, m,
				  MHD_OPTION_EXTERNAL_LOGGER, metrics_mhd_log, m,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, max_clients,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, metrics_per_addr(max_clients),
				  MHD_OPTION_NOTIFY_CONNECTION, metrics_on_connection, m,
				  MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_REQUEST_MAX,
				  MHD_OPTION_END);
	if (!m->mhd) {
		snprintf(errbuf, errlen, "metrics.listen %s: libmicrohttpd did not start", m->addr);
		return -EIO;
	}
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		err = -ENOTSUP;
		snprintf(errbuf, errlen, "metrics.listen %s: libmicrohttpd has no epoll fd", m->addr);
		goto out_stop;
	}
	err = uv_poll_init(loop, &m->poll, info->epoll_fd);
	if (err) {
		snprintf(errbuf, errlen, "metrics.listen %s: %s", m->addr, uv_strerror(err));
		goto out_stop;
	}
	uv_timer_init(loop, &m->timer);
	m->poll.data = m->timer.data = m;
	m->open_handles = 2;
	uv_poll_start(&m->poll, UV_READABLE, metrics_on_poll);
	return 0;

out_stop:
	MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
	return err;
}

void metrics_close(struct metrics *m, void (*close_cb)(struct metrics *m))
{
	if (!m->mhd || m->closing) {
		if (!m->mhd && close_cb)
			close_cb(m);
		return;
	}
	m->closing = true;
	m->close_cb = close_cb;
	/* The poll handle stops watching the epoll fd now, before MHD closes
	 * it; the handles themselves are freed by the loop later. */
	uv_close((uv_handle_t *)&m->poll, metrics_on_closed);
	uv_close((uv_handle_t *)&m->timer, metrics_on_closed);
	MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
}
