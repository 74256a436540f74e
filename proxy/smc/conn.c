/* SPDX-License-Identifier: MIT */
/*
 * The SMC data path of one flow, after the kernel's smc_tx.c / smc_rx.c /
 * smc_cdc.c: socket bytes are read straight into the peer's receive ring
 * at our producer cursor and announced with a CDC message; bytes the peer
 * announced in our ring are written straight to the socket, and our
 * consumer cursor goes back once a tenth of the ring is free again.
 *
 * The socket sits in the proxy's edge-triggered epoll set from start to
 * close (as in relay.c): every handler runs until the socket would block
 * or a ring is full/empty, so no edge is lost. A full peer ring stops the
 * socket reads (back-pressure to TCP); the peer's window update resumes
 * them.
 *
 * Where we differ from SMC: a flow is opened by an LLC message on an
 * existing link group (no CLC handshake per flow), and a conn's ring is
 * freed only once the peer said it stopped writing into it (FIN, ABORT or
 * CLOSED), so that a reused ring never receives a late write.
 *
 * Ring moves (a flow's ring grown or shrunk while it runs) are in
 * ringmove.c.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/container.h"
#include "core/addr.h"
#include "cdc.h"
#include "conn.h"
#include "conn-int.h"
#include "cork.h"
#include "cursor.h"
#include "fallback.h"
#include "core/epset.h"
#include "core/sock.h"
#include "lgr.h"
#include "link.h"
#include "llc.h"
#include "core/loop.h"
#include "core/route_back.h"
#include "net.h"
#include "policy.h"
#include "rmb.h"

#define CONN_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI)
/* How much longer than connect_timeout a peer may leave a flow open
 * unanswered before its link group is given up. */
#define CONN_OPEN_GRACE	4

#define conn_of_ev(e)	container_of(e, struct conn, ev)

static void conn_on_event(struct epset_entry *e, uint32_t events);
static void conn_drain(struct conn *c);
static void conn_connected(struct conn *c, uint32_t events);
static void conn_end(struct conn *c, enum conn_end how, int err);

const char *conn_state_name(const struct conn *c)
{
	switch (c->state) {
	case CONN_OPENING:	return "opening";
	case CONN_CONNECTING:	return "connecting";
	case CONN_ACTIVE:
		return c->app_eof || c->peer_fin ? "half_closed" : "established";
	case CONN_CLOSED:	return "closing";
	}
	return "unknown";
}

/* The opener reads the application; the acceptor writes the destination:
 * bytes_in counts client-to-server bytes on both daemons. */
static bool conn_is_opener(const struct conn *c)
{
	return c->lgr->role == LGR_ROLE_CLIENT;
}

/* Room left in the peer's ring; none while it moves. We never produce
 * more than it holds, and conn_on_cdc() takes no consumer cursor beyond
 * what we produced. */
static uint32_t conn_tx_space(const struct conn *c)
{
	int64_t used;

	if (c->tx_move)
		return 0;
	used = cursor_diff(c->tx_cons, c->tx_prod, c->tx_size);
	assert(used >= 0 && used <= c->tx_size);
	return c->tx_size - (uint32_t)used;
}

static int conn_init_rx(struct conn *c, struct lgr *lgr)
{
	struct proxy_stats *st = lgr->net->stats;

	c->rmb = rmb_get(&lgr->rmbs, lgr->ring_init);
	if (!c->rmb) {
		counter_inc(&st->rings_refused);
		if (lgr->rmbs.refused == RMB_SHORT_PEER)
			counter_inc(&st->rings_refused_share);
		return -ENOMEM;
	}
	c->rx_ring = lgr->region + c->rmb->offset;
	return 0;
}

/* c waits on its group's deadline list (lgr_sweep()) for the peer's
 * answer, times fallback.connect_timeout from now. */
static void conn_await_answer(struct conn *c, unsigned times)
{
	struct smc_net *net = conn_net(c);

	c->deadline_ms = uv_now(net->loop) + times * net->cfg->fallback.connect_timeout_ms;
	list_add_tail(&c->wait_node, &c->lgr->connecting);
}

static void conn_common_init(struct conn *c, struct lgr *lgr, int fd,
			     const struct conn_ops *ops)
{
	struct conn zero = { 0 };

	*c = zero;
	c->lgr = lgr;
	c->ops = ops;
	c->fd = fd;
	c->ev.cb = conn_on_event;
	list_init(&c->lgr_node);
	list_init(&c->tx_node);
	list_init(&c->cork_node);
	list_init(&c->drain_node);
	list_init(&c->rx_node);
	list_init(&c->wait_node);
	list_init(&c->grown_node);
	c->last_active_ms = uv_now(lgr->net->loop);
}

/*
 * A loopback client of a destination elsewhere came through the eBPF
 * intercept: its connect hook sent the app to our loopback listener
 * before the kernel chose a source, so the app's socket is loopback to
 * loopback. Without the hook the kernel would have chosen this host's
 * address toward the destination's host; the one our control connection
 * to that host's daemon leaves from stands for it (known since the
 * handshake: no system call per flow), with the app's port. A group whose
 * control connection is of the other family asks the kernel its route's
 * source toward the first such destination, once; where that fails the
 * loopback client stays, and the acceptor connects from its own address.
 */
static void conn_client_host(struct conn *c, const struct sockaddr *dest)
{
	struct lgr *lgr = c->lgr;
	struct sockaddr_storage *local = &lgr->local;

	if (!addr_is_loopback((const struct sockaddr *)&c->client) || addr_is_loopback(dest))
		return;
	if (local->ss_family != c->client.ss_family) {
		local = &lgr->local_other;
		if (local->ss_family != c->client.ss_family && addr_route_src(dest, local) < 0)
			local->ss_family = 0;
		if (local->ss_family != c->client.ss_family || addr_is_loopback((struct sockaddr *)local))
			return;
	}
	if (local->ss_family == AF_INET)
		((struct sockaddr_in *)&c->client)->sin_addr = ((const struct sockaddr_in *)local)->sin_addr;
	else
		((struct sockaddr_in6 *)&c->client)->sin6_addr =
			((const struct sockaddr_in6 *)local)->sin6_addr;
}

int conn_open(struct conn *c, struct lgr *lgr, int fd, const struct sockaddr *dest,
	      const struct sockaddr *client, const struct conn_ops *ops)
{
	int err;

	conn_common_init(c, lgr, fd, ops);
	c->state = CONN_OPENING;
	memcpy(&c->dest, dest, addr_len(dest));
	/* FLOW_OPEN has one family byte: a client of the other family (a
	 * v4-mapped one is unmapped first) is not sent. */
	if (client) {
		memcpy(&c->client, client, addr_len(client));
		addr_unmap_v4(&c->client);
		conn_client_host(c, dest);
		if (c->client.ss_family != dest->sa_family)
			c->client.ss_family = 0;
	}
	err = conn_init_rx(c, lgr);
	if (err)
		return err;
	err = lgr_conn_add(lgr, c);
	if (err)
		goto out_put_rmb;
	conn_await_answer(c, 1);
	link_conn_work(c, CONN_TX_OPEN);
	return 0;

out_put_rmb:
	rmb_put(&lgr->rmbs, c->rmb);
	c->rmb = NULL;
	return err;
}

int conn_take_fd(struct conn *c)
{
	int fd = c->fd;

	c->fd = -1;
	return fd;
}

/* The peer's ring for our sends, from its FLOW_OPEN or FLOW_ACCEPT. */
static int conn_attach_peer(struct conn *c, const struct llc_rmb *rmb)
{
	int err = c->lgr->ops->conn_attach(c, rmb);

	if (err)
		return err;
	c->tx_size = rmb->size;
	c->tx_peer_off = rmb->offset;
	return 0;
}

/*
 * The acceptor's source for the connection to dest, into c->client: the
 * client m names, where the group carries it and the caller wants it
 * (want: the config asks for it and the host routes the server's replies
 * back to it); else the unspecified address, which the kernel turns into
 * the address its route to dest leaves from (dest itself for an address
 * of this host; this host's address toward a pod of a "serve" prefix),
 * with the client's port if m names one. A loopback, any,
 * multicast or link-local client is never taken: a peer must not make a
 * server on this host see a connection from its own loopback. Returns whether the
 * client's address was chosen.
 */
static bool conn_source(struct conn *c, const struct sockaddr *dest, const struct llc_flow_open *m,
			bool want)
{
	const struct lgr *lgr = c->lgr;
	struct sockaddr_storage *src = &c->client;
	bool given = lgr->client_addr && m->src_port;
	bool client = false;

	memset(src, 0, sizeof(*src));
	if (dest->sa_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)src;

		s6->sin6_family = AF_INET6;
		if (given) {
			struct in6_addr a;

			memcpy(&a, m->src_addr, 16);
			/* A link-local client names no link of ours. */
			client = want && !IN6_IS_ADDR_LOOPBACK(&a) && !IN6_IS_ADDR_UNSPECIFIED(&a) &&
				 !IN6_IS_ADDR_MULTICAST(&a) && !IN6_IS_ADDR_V4MAPPED(&a) &&
				 !IN6_IS_ADDR_LINKLOCAL(&a);
			if (client)
				s6->sin6_addr = a;
			s6->sin6_port = htons(m->src_port);
		}
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)src;

		s4->sin_family = AF_INET;
		if (given) {
			uint32_t a;

			memcpy(&a, m->src_addr, 4);
			a = ntohl(a);
			client = want && (a >> 24) != 127 && a != INADDR_ANY && !IN_MULTICAST(a) &&
				 a != INADDR_BROADCAST;
			if (client)
				s4->sin_addr.s_addr = htonl(a);
			s4->sin_port = htons(m->src_port);
		}
	}
	return client;
}

/*
 * Connects c's socket to dest from conn_source()'s address. The client's
 * address may still fail (IP_TRANSPARENT refused: the daemon lost its
 * capability; no port left for the client's address): then the host's
 * own, counted as such, so that a flow is never refused for it. Which source and
 * whether the client's port was kept are counted.
 */
static int conn_socket_connect(struct conn *c, const struct sockaddr *dest,
			       const struct llc_flow_open *m)
{
	struct smc_net *net = c->lgr->net;
	struct proxy_stats *st = net->stats;
	bool client = conn_source(c, dest, m, net->cfg->client_address &&
				  (route_back_families() & ROUTE_BACK_FAMILY(dest->sa_family)));
	unsigned flags = client ? SOCK_FROM_TRANSPARENT : 0;
	/* The client_mark routes every packet to this host: right for a
	 * server here, whose replies it marks (tcp_fwmark_accept), wrong for
	 * a pod of ours, which must be reached through the bridge or veth
	 * and whose replies the tproxy rules' socket match delivers. */
	uint32_t mark = client && !policy_serves(net->cfg, dest) ? net->cfg->client_mark : net->mark;
	int fd, one = 1;

	fd = sock_connect_from(dest, (struct sockaddr *)&c->client, mark, &flags);
	if (fd < 0 && client) {
		client = false;
		flags = 0;
		if (dest->sa_family == AF_INET6)
			((struct sockaddr_in6 *)&c->client)->sin6_addr = in6addr_any;
		else
			((struct sockaddr_in *)&c->client)->sin_addr.s_addr = htonl(INADDR_ANY);
		fd = sock_connect_from(dest, (struct sockaddr *)&c->client, net->mark, &flags);
	}
	if (fd < 0)
		return fd;
	counter_inc(client ? &st->connect_client_addr : &st->connect_host_addr);
	if (addr_port((struct sockaddr *)&c->client) && !(flags & SOCK_FROM_PORT_KEPT))
		counter_inc(&st->connect_port_taken);
	/* A leg to this host: keepalive would find nothing the kernel does
	 * not report at once (a local peer's death is an RST), so only what
	 * the data path needs. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
	c->fd = fd;
	return 0;
}

int conn_accept(struct conn *c, struct link *lnk, const struct llc_flow_open *m,
		const struct sockaddr *dest, const struct conn_ops *ops)
{
	struct lgr *lgr = lnk->lgr;
	int err;

	conn_common_init(c, lgr, -1, ops);
	c->state = CONN_CONNECTING;
	memcpy(&c->dest, dest, addr_len(dest));
	c->peer_token = m->token;
	err = conn_init_rx(c, lgr);
	if (err)
		return err;
	err = conn_attach_peer(c, &m->rmb);
	if (err)
		goto out_put_rmb;
	err = lgr_conn_add_on(lgr, c, lnk);
	if (err)
		goto out_detach;
	err = conn_socket_connect(c, dest, m);
	if (err)
		goto out_del;
	err = epset_add(&conn_net(c)->core->epset, c->fd, CONN_EVENTS, &c->ev);
	if (err)
		goto out_close;
	conn_await_answer(c, 1);
	link_conn_work(c, CONN_TX_ACCEPT);
	return 0;

out_close:
	close(c->fd);
	c->fd = -1;
out_del:
	lgr_conn_del(lgr, c);
out_detach:
	lgr->ops->conn_detach(c);
out_put_rmb:
	rmb_put(&lgr->rmbs, c->rmb);
	c->rmb = NULL;
	return err;
}

/* ------------------------------------------------------------------ */
/* Ending. */

/* Whether the peer will never write into our ring again. */
static bool conn_peer_quiet(const struct conn *c)
{
	return c->peer_fin || c->peer_closed;
}

static void conn_reap(struct loop_defer *d)
{
	struct conn *c = container_of(d, struct conn, defer);

	c->ops->closed(c);
}

/*
 * Frees the token, the ring and the transport's per-conn state once
 * nothing can still refer to them: our last message posted, and the peer
 * done writing into our ring (or the link group gone, lgr->state DOWN).
 */
static void conn_maybe_release(struct conn *c)
{
	struct lgr *lgr = c->lgr;

	if (c->state != CONN_CLOSED || c->tx_work)
		return;
	if (!conn_peer_quiet(c) && lgr->state != LGR_DOWN)
		return;
	/* Until our last message completed, a link failure could lose it:
	 * the flow stays, to send it again on another link. */
	if (lgr->state != LGR_DOWN && lgr->ops->conn_moved && link_conn_unacked(c)) {
		link_drain(c);
		return;
	}
	link_conn_forget(c);
	if (c->token)
		lgr_conn_del(lgr, c);
	if (c->tx_ring || c->tx_priv)
		lgr->ops->conn_detach(c);
	conn_drop_next(c);
	rmb_put(&lgr->rmbs, c->rmb);
	c->rmb = NULL;
	rmb_put(&lgr->rmbs, c->rx_next);
	c->rx_next = NULL;
	list_del(&c->wait_node);
	list_del(&c->grown_node);
	list_del(&c->rx_node);
	loop_defer(lgr->net->core, &c->defer, conn_reap);
}

static void conn_close_fd(struct conn *c, bool rst)
{
	if (c->fd < 0)
		return;
	if (rst)
		sock_set_rst_on_close(c->fd);
	close(c->fd);		/* also leaves the epoll set */
	c->fd = -1;
}

/* Reports the end once; the owner may take the socket in ended() (a
 * declined flow goes on over TCP), else it is closed here. */
static void conn_end(struct conn *c, enum conn_end how, int err)
{
	if (c->state == CONN_CLOSED)
		return;
	assert(c->state == CONN_OPENING || c->state == CONN_CONNECTING || c->state == CONN_ACTIVE);
	c->state = CONN_CLOSED;
	list_del(&c->wait_node);
	c->ops->ended(c, how, err, FB_NONE);
	conn_close_fd(c, false);
	conn_maybe_release(c);
}

/* Our side resets: RST to the socket, ABORT to the peer (which answers
 * CLOSED once it stopped writing into our ring). */
void conn_reset(struct conn *c, enum conn_end how, int err)
{
	struct proxy_stats *st = conn_net(c)->stats;

	if (c->state == CONN_CLOSED)
		return;
	conn_close_fd(c, true);
	if (how == CONN_END_PROTOCOL)
		counter_inc(&st->bad_messages);
	if (c->state != CONN_OPENING || c->peer_token) {
		c->abort_pending = true;
		link_conn_work(c, CONN_TX_CDC);
	}
	/* An OPENING conn has no peer token to abort yet: it stays until
	 * the peer's accept (then aborted) or decline, or its deadline. */
	if (c->state == CONN_OPENING && !c->peer_token) {
		bool sent = !(c->tx_work & CONN_TX_OPEN);

		if (!sent) {
			/* The open never left: the peer knows nothing. */
			c->tx_work = 0;
			c->peer_closed = true;
		} else {
			c->abort_pending = true;	/* sent when the accept comes */
		}
		conn_end(c, how, err);
		if (sent && !c->peer_closed) {
			/* conn_end() took it off the deadline list: its ring
			 * waits for the answer, but not for ever. */
			c->late = true;
			conn_await_answer(c, CONN_OPEN_GRACE);
		}
		return;
	}
	conn_end(c, how, err);
}

void conn_abort(struct conn *c)
{
	/* A peer that takes it is told the reset is our stop's. */
	if (conn_net(c)->stopping && c->lgr->peer_stop_abort)
		c->stop_abort = true;
	conn_reset(c, CONN_END_ABORTED, 0);
}

/*
 * The link failed under c. What c posted there may or may not have
 * arrived, so it goes again on the new link, once more each receiver
 * takes as a no-op:
 * - bytes after the last point the peer surely has (tx_prod_done: its
 *   consumer cursor, or the cursor of our last completed CDC), written
 *   again at the same offsets, then a CDC with our newest cursors;
 * - a CLOSED or ABORT we had posted (a second one is ignored);
 * - a FLOW_OPEN, marked resent (the acceptor answers again if it knows
 *   the flow), and a FLOW_ACCEPT while the opener has not been heard from
 *   (a second accept is ignored).
 * Bytes go again only while the peer still reads the ring: not after our
 * ABORT (it may have freed it) nor after a CDC with our FIN completed.
 */
void conn_move_link(struct conn *c, struct link *to)
{
	struct link *from = c->link;
	unsigned work = c->tx_work;
	bool unacked = link_conn_unacked(c);
	bool fin_unsure = c->fin_sent && unacked;

	link_conn_forget(c);
	assert(from->n_conns > 0 && to != from);
	from->n_conns--;
	to->n_conns++;		/* beyond max_flows_per_link, maybe: a move is not refused */
	c->link = to;
	c->tx_work = 0;
	if (c->tx_unacked_valid && !unacked)
		c->tx_prod_done = c->tx_prod_sent;
	if (c->tx_ring && cursor_diff(c->tx_prod_done, c->tx_cons, c->tx_size) > 0)
		c->tx_prod_done = c->tx_cons;
	/* Its messages on the dead link will never complete. */
	c->tx_unacked_valid = false;
	if (c->end_sent == CDC_CF_ABORT)
		c->abort_pending = true;
	else if (c->end_sent == CDC_CF_CLOSED)
		c->closed_pending = true;
	if (c->tx_ring && !c->end_sent && !c->abort_pending && c->peer_token &&
	    (c->state == CONN_ACTIVE || fin_unsure) && c->lgr->ops->conn_moved) {
		/* It writes [tx_prod_done, tx_prod) again, held bytes too. */
		c->tx_prod_written = c->tx_prod;
		c->lgr->ops->conn_moved(c);
	}
	if (c->peer_token && (c->state == CONN_ACTIVE || c->abort_pending || c->closed_pending ||
			      fin_unsure))
		work |= CONN_TX_CDC;
	/* An opener still waiting for the answer (opening, or given up and
	 * waiting to abort it) asks again. */
	if (conn_is_opener(c) && !c->peer_token && !(work & CONN_TX_OPEN) &&
	    (c->state == CONN_OPENING || c->late)) {
		c->resend_open = true;
		work |= CONN_TX_OPEN;
	}
	if (!conn_is_opener(c) && c->peer_token && !c->peer_heard && !c->end_sent &&
	    !c->abort_pending)
		work |= CONN_TX_ACCEPT;
	/* An offered ring the peer has not switched to: the offer may have
	 * died with the link. A second one is a no-op to the peer. */
	if (c->rx_next && c->state == CONN_ACTIVE && !c->end_sent && !c->abort_pending)
		work |= CONN_TX_MOVE;
	if (work)
		link_conn_work(c, work);
}

void conn_resend_accept(struct conn *c)
{
	if (conn_is_opener(c) || c->end_sent || c->abort_pending)
		return;
	link_conn_work(c, CONN_TX_ACCEPT);
}

void conn_link_down(struct conn *c)
{
	/* The peer said it stops (DELETE_LINK, ORDERLY): its own reason,
	 * not a failure's. */
	bool stopped = c->lgr->peer_stopped;

	c->tx_work = 0;
	if (c->state == CONN_CLOSED) {
		conn_maybe_release(c);
		return;
	}
	/* Nothing of an opening flow crossed the link yet: it can go on
	 * over TCP, as a decline would. */
	if (c->state == CONN_OPENING) {
		c->state = CONN_CLOSED;
		list_del(&c->wait_node);
		c->ops->ended(c, CONN_END_DECLINED, 0,
			      stopped ? FB_PEER_STOPPED : FB_NO_LINK);
		conn_close_fd(c, true);
		conn_maybe_release(c);
		return;
	}
	conn_close_fd(c, true);
	conn_end(c, stopped ? CONN_END_PEER_STOPPED : CONN_END_LINK_DOWN, -ECONNRESET);
}

void conn_on_deadline(struct conn *c)
{
	struct lgr *lgr = c->lgr;

	if (c->state == CONN_CONNECTING) {
		/*
		 * The deadline is checked before the batch's socket events:
		 * a worker kept busy past it (a burst of opens, each connect
		 * searching ports among thousands in TIME_WAIT) would reset
		 * flows whose destination had long answered. The socket has
		 * the last word.
		 */
		if (sock_connect_done(c->fd)) {
			conn_connected(c, 0);
			return;
		}
		conn_reset(c, CONN_END_CONNECT_TIMEOUT, -ETIMEDOUT);
		return;
	}
	/*
	 * An open the peer has not answered in time. The peer may only be
	 * busy (its connects slow, a burst of opens): the flow goes over TCP
	 * at once, nothing of it having crossed the link, and its ring waits
	 * for the late answer (an accept is then aborted). A peer that
	 * answers nothing for CONN_OPEN_GRACE times longer is wedged: the
	 * group fails, which resets its flows and sends new ones to TCP.
	 */
	if (c->late) {
		lgr_fail(lgr, -ETIMEDOUT);
		return;
	}
	c->late = true;
	conn_await_answer(c, CONN_OPEN_GRACE);
	if (c->state == CONN_OPENING) {
		c->state = CONN_CLOSED;
		c->abort_pending = true;
		c->ops->ended(c, CONN_END_DECLINED, 0, fallback_of_decline(CLC_DECL_TIMEOUT));
		conn_close_fd(c, true);
	}
}

/* Both directions finished: FIN passed each way and everything we got
 * delivered. */
static void conn_maybe_done(struct conn *c)
{
	if (c->state != CONN_ACTIVE)
		return;
	if (c->fin_sent && c->app_shut)
		conn_end(c, CONN_END_CLEAN, 0);
}

/* ------------------------------------------------------------------ */
/* Messages from the peer. */

void conn_on_accept(struct conn *c, const struct llc_flow_accept *m)
{
	int err;

	if (c->peer_token)		/* a second accept: the peer is confused */
		return;
	c->peer_token = m->peer_token;
	if (c->state == CONN_CLOSED) {
		/* We gave up on this flow while it was opening. */
		list_del(&c->wait_node);
		link_conn_work(c, CONN_TX_CDC);
		return;
	}
	if (c->state != CONN_OPENING)
		return;
	err = conn_attach_peer(c, &m->rmb);
	if (err && err != -EINVAL) {
		/*
		 * An honest ring we cannot take (rdma: no mirror of its size
		 * within our buffers.ring, the budget or this peer's share).
		 * Nothing of the flow crossed yet: it goes over TCP, as a
		 * decline would, and the peer's side is aborted. A reset
		 * here would cost the application its connection for our
		 * shortage.
		 */
		list_del(&c->wait_node);
		c->state = CONN_CLOSED;
		c->abort_pending = true;
		counter_inc(&conn_net(c)->stats->rings_refused);
		c->ops->ended(c, CONN_END_DECLINED, 0, fallback_of_decline(CLC_DECL_NO_MEMORY));
		conn_close_fd(c, true);
		link_conn_work(c, CONN_TX_CDC);
		return;
	}
	if (!err)
		err = epset_add(&conn_net(c)->core->epset, c->fd, CONN_EVENTS, &c->ev);
	if (err) {
		conn_reset(c, CONN_END_PROTOCOL, err);
		return;
	}
	list_del(&c->wait_node);
	c->state = CONN_ACTIVE;
	/* The socket may have data (and FIN) already: edge-triggered
	 * registration reports what is pending, but read now anyway. */
	conn_fill(c);
}

void conn_on_decline(struct conn *c, unsigned reason)
{
	if (c->peer_token)
		return;
	/* The peer never writes into the ring of a flow it declined. */
	c->peer_closed = true;
	if (c->state == CONN_CLOSED) {
		c->abort_pending = false;
		c->tx_work = 0;
		conn_maybe_release(c);
		return;
	}
	if (c->state != CONN_OPENING)
		return;
	c->state = CONN_CLOSED;
	list_del(&c->wait_node);
	c->ops->ended(c, CONN_END_DECLINED, 0, fallback_of_decline(reason));
	conn_close_fd(c, true);
	conn_maybe_release(c);
}

/*
 * A CDC message: the peer's producer cursor (new bytes in our ring), its
 * consumer cursor (room in its ring), and flags. A cursor behind the one
 * we have is stale (ignored); one beyond what the ring can hold, or a
 * consumer cursor beyond what we produced, breaks the protocol and resets
 * the flow.
 */
void conn_on_cdc(struct conn *c, const struct cdc_msg *m)
{
	struct proxy_stats *st = conn_net(c)->stats;
	bool prod_stale = false, cons_stale = false, grow = false;
	uint32_t rx_size;
	int64_t d;

	counter_inc(&st->cdc_received);
	c->peer_heard = true;
	if (m->conn_flags & (CDC_CF_ABORT | CDC_CF_CLOSED)) {
		bool abort = m->conn_flags & CDC_CF_ABORT;

		c->peer_closed = true;
		if (c->state == CONN_CLOSED) {
			conn_maybe_release(c);
			return;
		}
		if (abort) {
			/* Tell the peer we stopped writing into its ring. A
			 * reset of the peer daemon's stop has a reason of its
			 * own, as its DELETE_LINK's resets have. */
			bool stopped = m->conn_flags & CDC_CF_STOPPING;

			c->closed_pending = true;
			link_conn_work(c, CONN_TX_CDC);
			conn_close_fd(c, true);
			if (stopped)
				counter_inc(&st->flows_reset_peer_stopped);
			conn_end(c, stopped ? CONN_END_PEER_STOPPED : CONN_END_RESET, -ECONNRESET);
			return;
		}
		/* CLOSED without ABORT before we finished: the peer let go
		 * early, which it must not; treat as a reset. */
		conn_reset(c, CONN_END_PROTOCOL, -EPROTO);
		return;
	}
	if (c->state == CONN_CLOSED || c->state == CONN_OPENING)
		return;

	/* Which rings the cursors are in: ours of now, or the next one the
	 * peer just switched to (it only does once we consumed all of this
	 * one), or the one before (a message older than the switch, resent
	 * after a failover: its cursor is stale). */
	if (m->prod_gen != c->rx_gen) {
		if (c->rx_next && m->prod_gen == (uint8_t)(c->rx_gen + 1)) {
			if (!cursor_equal(c->rx_cons, c->rx_prod))
				goto out_proto;
			conn_rx_switch(c);
		} else if (m->prod_gen == (uint8_t)(c->rx_gen - 1)) {
			prod_stale = true;
		} else {
			goto out_proto;
		}
	}
	if (m->cons_gen != c->tx_gen) {
		if (m->cons_gen != (uint8_t)(c->tx_gen - 1))
			goto out_proto;
		cons_stale = true;
	}
	rx_size = conn_rx_size(c);
	if ((!prod_stale && !cursor_valid(m->prod, rx_size)) ||
	    (!cons_stale && !cursor_valid(m->cons, c->tx_size)))
		goto out_proto;
	d = prod_stale ? 0 : cursor_diff(c->rx_prod, m->prod, rx_size);
	if (d > 0) {
		if (c->peer_fin || cursor_diff(c->rx_cons, m->prod, rx_size) > rx_size)
			goto out_proto;
		c->rx_prod = m->prod;
		if (conn_rx_avail(c) == rx_size) {
			counter_inc(&st->ring_full_local);
			grow = true;
		}
	}
	d = cons_stale ? 0 : cursor_diff(c->tx_cons, m->cons, c->tx_size);
	if (d > 0) {
		if (cursor_diff(m->cons, c->tx_prod, c->tx_size) < 0)
			goto out_proto;
		c->tx_cons = m->cons;
		c->write_blocked = false;	/* room again: nothing to tell */
		conn_tx_switch(c);
	}
	if (m->prod_flags & CDC_PF_WRITE_BLOCKED) {
		c->peer_write_blocked = true;
		grow = true;
	}
	if ((m->conn_flags & CDC_CF_DONE_WRITING) && !c->peer_fin)
		c->peer_fin = true;
	c->last_active_ms = uv_now(conn_net(c)->loop);
	if (grow)
		conn_grow(c);

	/* The socket gets the bytes at the end of the batch: the CDCs of
	 * one completion round that name this flow cost one write. */
	if (c->state == CONN_ACTIVE && list_empty(&c->rx_node))
		list_add_tail(&c->rx_node, &conn_net(c)->rx_ready);
	return;

out_proto:
	conn_reset(c, CONN_END_PROTOCOL, -EPROTO);
}

void conn_rx_run(struct smc_net *net)
{
	while (!list_empty(&net->rx_ready)) {
		struct conn *c = list_entry(net->rx_ready.next, struct conn, rx_node);

		list_del(&c->rx_node);
		if (c->state != CONN_ACTIVE)
			continue;
		conn_drain(c);
		if (c->state == CONN_ACTIVE && c->in_pending && conn_tx_space(c))
			conn_fill(c);
	}
}

/* ------------------------------------------------------------------ */
/* Messages to the peer. */

void conn_build_msg(struct conn *c, unsigned work, uint8_t msg[LINK_MSG_LEN])
{
	struct lgr *lgr = c->lgr;

	if (work == CONN_TX_OPEN) {
		struct llc_msg m = { .type = LLC_FLOW_OPEN };
		const struct sockaddr *sa = (const struct sockaddr *)&c->dest;

		m.open.token = c->token;
		if (c->resend_open)
			m.open.flags = LLC_OPEN_RESENT;
		m.open.rmb.offset = c->rmb->offset;
		m.open.rmb.size = c->rmb->size;
		m.open.rmb.key = c->rmb->key;
		m.open.port = addr_port(sa);
		if (sa->sa_family == AF_INET) {
			m.open.family = 4;
			memcpy(m.open.addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		} else {
			m.open.family = 6;
			memcpy(m.open.addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		}
		sa = (const struct sockaddr *)&c->client;
		if (lgr->client_addr && sa->sa_family == AF_INET) {
			m.open.src_port = addr_port(sa);
			memcpy(m.open.src_addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		} else if (lgr->client_addr && sa->sa_family == AF_INET6) {
			m.open.src_port = addr_port(sa);
			memcpy(m.open.src_addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		}
		llc_encode(&m, msg);
	} else if (work == CONN_TX_ACCEPT) {
		struct llc_msg m = { .type = LLC_FLOW_ACCEPT };

		m.accept.token = c->peer_token;
		m.accept.peer_token = c->token;
		m.accept.rmb.offset = c->rmb->offset;
		m.accept.rmb.size = c->rmb->size;
		m.accept.rmb.key = c->rmb->key;
		llc_encode(&m, msg);
	} else if (work == CONN_TX_MOVE) {
		struct llc_msg m = { .type = LLC_RMB_MOVE };

		assert(c->rx_next);
		m.move.token = c->peer_token;
		m.move.gen = (uint8_t)(c->rx_gen + 1);
		m.move.rmb.offset = c->rx_next->offset;
		m.move.rmb.size = c->rx_next->size;
		m.move.rmb.key = c->rx_next->key;
		llc_encode(&m, msg);
	} else {
		struct cdc_msg m = {
			.seq = c->link->cdc_seq++,
			.token = c->peer_token,
			.prod = c->tx_prod,
			.cons = c->rx_cons,
			.prod_gen = c->tx_gen,
			.cons_gen = c->rx_gen,
		};

		if (c->write_blocked)
			m.prod_flags |= CDC_PF_WRITE_BLOCKED;
		if (c->abort_pending) {
			m.conn_flags |= CDC_CF_ABORT;
			if (c->stop_abort)
				m.conn_flags |= CDC_CF_STOPPING;
			c->abort_pending = false;
			c->end_sent = CDC_CF_ABORT;
		} else if (c->closed_pending) {
			m.conn_flags |= CDC_CF_CLOSED;
			c->closed_pending = false;
			c->end_sent = CDC_CF_CLOSED;
		} else if (c->app_eof) {
			m.conn_flags |= CDC_CF_DONE_WRITING;
			c->fin_sent = true;
		}
		/* The previous CDC completed: the peer has what it announced. */
		if (c->tx_unacked_valid && !link_conn_unacked(c))
			c->tx_prod_done = c->tx_prod_sent;
		if (!cursor_equal(c->tx_prod_sent, c->tx_prod)) {
			counter_inc(&lgr->net->stats->tx_batches);
			counter_add(&lgr->net->stats->tx_batch_bytes,
				    (uint64_t)cursor_diff(c->tx_prod_sent, c->tx_prod, c->tx_size));
		}
		c->tx_prod_sent = c->tx_prod;
		c->rx_cons_sent = c->rx_cons;
		c->tx_last_seq = c->link->tx_seq;
		c->tx_unacked_valid = true;
		counter_inc(&lgr->net->stats->cdc_sent);
		cdc_encode(&m, msg);
	}
}

/* From the link, after a message of c's was posted: the FIN may have
 * ended the flow, or the last message of an ended one left. */
void conn_tx_posted(struct conn *c)
{
	if (c->state == CONN_ACTIVE)
		conn_maybe_done(c);
	else if (c->state == CONN_CLOSED)
		conn_maybe_release(c);
}

/*
 * Has the transport write to the peer what the socket gave since the last
 * call, just before a CDC announces it (link_post_conn()): a CDC always
 * carries tx_prod, so nothing is announced unwritten, and bytes autocork
 * holds cost no write until they go. Over rdma that is one RDMA WRITE for
 * everything held instead of one per socket read; for shm the read
 * already put the bytes in the peer's ring. On a link that goes down at
 * the end of the batch nothing is written: the move writes
 * [tx_prod_done, tx_prod) again on the survivor (conn_move_link()).
 */
int conn_write_out(struct conn *c)
{
	uint32_t len, off, first;
	int err = 0;

	if (!c->tx_ring || cursor_equal(c->tx_prod_written, c->tx_prod))
		return 0;
	len = (uint32_t)cursor_diff(c->tx_prod_written, c->tx_prod, c->tx_size);
	off = c->tx_prod_written.count;
	first = c->tx_size - off;
	if (!link_failing(c->link)) {
		if (len > first) {
			err = c->lgr->ops->write(c, off, first);
			if (!err)
				err = c->lgr->ops->write(c, 0, len - first);
		} else {
			err = c->lgr->ops->write(c, off, len);
		}
	}
	if (err) {
		/* Bytes that did not reach the peer must not be announced:
		 * the link group is lost (at the end of the batch). */
		lgr_fail_sched(c->lgr, err);
		return err;
	}
	c->tx_prod_written = c->tx_prod;
	return 0;
}

/*
 * Announces what we wrote into the peer's ring, unless autocork holds it:
 * the FIN and a write-blocked note are never held.
 */
static void conn_push(struct conn *c)
{
	const struct smc_net *net = conn_net(c);
	uint32_t held = (uint32_t)cursor_diff(c->tx_prod_sent, c->tx_prod, c->tx_size);
	bool fin = c->app_eof && !c->fin_sent;

	if (!held && !fin && !c->write_blocked)
		return;
	if (!fin && !c->write_blocked &&
	    cork_should_hold(&net->cork, link_conn_unacked(c), held, c->tx_size)) {
		if (!c->corked)
			counter_inc(&conn_net(c)->stats->cork_events);
		link_cork(c);
		return;
	}
	link_conn_work(c, CONN_TX_CDC);
}

/* c's sends completed: a read deferred to now (conn_defer_read()) takes
 * what the socket gathered and pushes it; else what autocork held goes. */
void conn_tx_progress(struct conn *c)
{
	if (c->state != CONN_ACTIVE)
		return;
	if (c->in_pending)
		conn_fill(c);
	else
		conn_push(c);
}

/* ------------------------------------------------------------------ */
/* The socket. */

static void conn_account(struct conn *c, uint32_t n, bool from_socket)
{
	struct proxy_stats *st = conn_net(c)->stats;
	bool in = from_socket == conn_is_opener(c);

	if (in)
		counter_add(&st->bytes_in, n);
	else
		counter_add(&st->bytes_out, n);
	if (from_socket) {
		c->bytes_tx += n;
		c->lgr->bytes_tx += n;
		c->link->bytes_tx += n;
	} else {
		c->bytes_rx += n;
		c->lgr->bytes_rx += n;
		c->link->bytes_rx += n;
	}
}

/* ------------------------------------------------------------------ */
/* Autocork's side of the socket (cork.h). */

/*
 * A readable socket left to the completion of the flow's send in flight,
 * which reads it (conn_tx_progress()) in one go. Not once the socket
 * reported FIN or urgent data (their reads must not wait), nor for a
 * socket in the local hop's bypass, nor while the peer's ring is full
 * (its window update reads it).
 */
static bool conn_defer_read(struct conn *c)
{
	const struct smc_net *net = conn_net(c);

	if (c->rdhup || c->urgent || c->bypass_step || c->write_blocked ||
	    !cork_should_defer_read(&net->cork, c->lgr->ops->completes_locally,
				    link_conn_unacked(c), c->last_read))
		return false;
	counter_inc(&net->stats->reads_deferred);
	link_cork(c);
	return true;
}

/*
 * Socket -> the peer's ring, until the socket is drained, the ring is full
 * or FIN. A read shorter than the room we offered means the socket had no
 * more: data arriving later raises a new edge, so we skip the read that
 * would only say EAGAIN (a system call per message). Not so once FIN was
 * reported (its 0 must be read: no further edge comes) or urgent data was
 * seen (TCP ends a read short at the urgent mark with more data behind it).
 */
void conn_fill(struct conn *c)
{
	struct proxy_stats *st = conn_net(c)->stats;
	struct iovec iov[2];
	uint32_t total = 0;
	bool read = false;
	ssize_t n;

	while (c->state == CONN_ACTIVE && !c->app_eof) {
		uint32_t space = conn_tx_space(c);
		uint32_t off = c->tx_prod.count;
		uint32_t first = c->tx_size - off;
		int cnt = 1;

		if (!space) {
			if (!c->write_blocked && !c->tx_move)
				counter_inc(&conn_net(c)->stats->ring_full_remote);
			c->in_pending = true;
			c->write_blocked = true;
			break;
		}
		if (first > space)
			first = space;
		iov[0] = (struct iovec){ c->tx_ring + off, first };
		if (space > first) {
			iov[1] = (struct iovec){ c->tx_ring, space - first };
			cnt = 2;
		}
		n = readv(c->fd, iov, cnt);
		counter_inc(&st->sock_reads);
		read = true;
		if (n > 0) {
			uint32_t len = (uint32_t)n;

			total += len;
			/* Written to the peer with the CDC that announces it
			 * (conn_write_out()): autocork may hold it. */
			c->tx_prod = cursor_add(c->tx_prod, len, c->tx_size);
			c->write_blocked = false;
			conn_account(c, len, true);
			c->last_active_ms = uv_now(conn_net(c)->loop);
			if (c->bypass_step && c->bytes_tx >= c->bypass_next) {
				c->bypass_next = c->bytes_tx + c->bypass_step;
				c->ops->bypass_read(c, c->bytes_tx);
			}
			if (len < space && !c->rdhup && !c->urgent && !c->bypass_step) {
				c->in_pending = false;
				break;
			}
			continue;
		}
		if (n == 0) {
			c->app_eof = true;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			c->in_pending = false;
			break;
		}
		conn_reset(c, CONN_END_RESET, -errno);
		return;
	}
	if (c->state != CONN_ACTIVE)
		return;
	if (read)
		c->last_read = total;	/* a small write's or not (cork.h) */
	conn_push(c);
}

/* Our ring -> the socket, until it is empty or the socket would block;
 * then the FIN, and the window update. */
static void conn_drain(struct conn *c)
{
	uint32_t size = conn_rx_size(c);
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov };
	uint32_t freed;
	ssize_t n;

	assert(c->state == CONN_ACTIVE);
	while (c->state == CONN_ACTIVE && !c->out_blocked) {
		uint32_t avail = conn_rx_avail(c);
		uint32_t off = c->rx_cons.count;
		uint32_t first = size - off;

		if (!avail)
			break;
		if (first > avail)
			first = avail;
		iov[0] = (struct iovec){ c->rx_ring + off, first };
		mh.msg_iovlen = 1;
		if (avail > first) {
			iov[1] = (struct iovec){ c->rx_ring, avail - first };
			mh.msg_iovlen = 2;
		}
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		counter_inc(&conn_net(c)->stats->sock_writes);
		if (n > 0) {
			c->rx_cons = cursor_add(c->rx_cons, (uint32_t)n, size);
			conn_account(c, (uint32_t)n, false);
			c->last_active_ms = uv_now(conn_net(c)->loop);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			c->out_blocked = true;
			break;
		}
		conn_reset(c, CONN_END_RESET, n < 0 ? -errno : -EPIPE);
		return;
	}
	if (c->state != CONN_ACTIVE)
		return;
	if (c->peer_fin && !c->app_shut && !conn_rx_avail(c)) {
		shutdown(c->fd, SHUT_WR);
		c->app_shut = true;
	}
	/* Window update: SMC's rule of a tenth of the ring, or at once for a
	 * peer that said it is blocked on us. */
	freed = (uint32_t)cursor_diff(c->rx_cons_sent, c->rx_cons, size);
	if (freed && !c->app_shut &&
	    (freed >= size / 10 || c->peer_write_blocked || c->rx_next)) {
		c->peer_write_blocked = false;
		if (!(c->tx_work & CONN_TX_CDC))
			counter_inc(&conn_net(c)->stats->window_updates);
		link_conn_work(c, CONN_TX_CDC);
	}
	conn_maybe_done(c);
}

/* c's connect finished; events are the epoll events that said so, or 0
 * when nothing said how. A failed connect always raises EPOLLERR, so
 * EPOLLOUT alone is success and needs no SO_ERROR (one system call less
 * per flow). */
static void conn_connected(struct conn *c, uint32_t events)
{
	int err = 0;
	socklen_t len = sizeof(err);

	assert(c->state == CONN_CONNECTING);
	if (!(events & EPOLLOUT) || (events & (EPOLLERR | EPOLLHUP))) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
	}
	if (err) {
		counter_inc(&conn_net(c)->stats->connect_failures);
		conn_reset(c, CONN_END_CONNECT_FAILED, -err);
		return;
	}
	list_del(&c->wait_node);
	c->state = CONN_ACTIVE;
	conn_drain(c);
	if (c->state == CONN_ACTIVE)
		conn_fill(c);
}

static void conn_on_event(struct epset_entry *e, uint32_t events)
{
	struct conn *c = conn_of_ev(e);

	if (c->state == CONN_CONNECTING) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_connected(c, events);
		return;
	}
	if (c->state != CONN_ACTIVE)
		return;
	if (events & EPOLLERR) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		conn_reset(c, CONN_END_RESET, -(err ? err : ECONNRESET));
		return;
	}
	if (events & (EPOLLRDHUP | EPOLLHUP))
		c->rdhup = true;
	if (events & EPOLLPRI)
		c->urgent = true;	/* for the rest of the flow: it is rare */
	if (events & EPOLLOUT) {
		c->out_blocked = false;
		conn_drain(c);
	}
	if (c->state == CONN_ACTIVE && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLPRI))) {
		c->in_pending = true;
		if (!conn_defer_read(c))	/* never past FIN or urgent data */
			conn_fill(c);
	}
}
