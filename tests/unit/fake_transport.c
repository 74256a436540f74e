/* SPDX-License-Identifier: MIT */
/*
 * The in-memory transport and the test world of fake_transport.h: what
 * they do and why is said there, next to the declarations.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/container.h"
#include "fake_transport.h"

/* ------------------------------------------------------------------ */
/* The transport. */

static unsigned fake_tx_room(struct link *lnk)
{
	return fake_of_link(lnk)->room;
}

/* A post on a link that failed is a bug of the caller, as one without
 * room is: counted, and refused. */
static int fake_post(struct link *lnk, const uint8_t msg[LINK_MSG_LEN])
{
	struct fake *f = fake_of_link(lnk);

	if (!f->room || f->n_msgs == FAKE_MSGS || lnk->state != LINK_ACTIVE) {
		f->bad_calls++;
		return lnk->state != LINK_ACTIVE ? -ENOTCONN : -ENOSPC;
	}
	if (f->post_err)
		return f->post_err;
	f->room--;
	f->msgs[f->n_msgs].seq = lnk->tx_seq;
	memcpy(f->msgs[f->n_msgs].b, msg, LINK_MSG_LEN);
	f->n_msgs++;
	return 0;
}

static void fake_flush(struct link *lnk)
{
	fake_of_link(lnk)->flushes++;
}

static uint32_t fake_tx_done(struct link *lnk)
{
	return fake_of_link(lnk)->done;
}

static void fake_want_progress(struct link *lnk)
{
	fake_of_link(lnk)->progress_asks++;
}

/* Mirror mode: the ring is a private buffer of the ring's size (tx_priv),
 * so that ASan sees a write past it. */
static int fake_conn_attach(struct conn *c, const struct llc_rmb *rmb)
{
	struct fake *f = c->lgr->tp;

	if (rmb->offset > FAKE_PEER_SIZE || rmb->size > FAKE_PEER_SIZE - rmb->offset ||
	    rmb_class(rmb->size) < 0)
		return -EINVAL;
	if (f->attach_err)
		return f->attach_err;
	if (f->mirror) {
		c->tx_priv = calloc(1, rmb->size);
		if (!c->tx_priv)
			return -ENOMEM;
		c->tx_ring = c->tx_priv;
		return 0;
	}
	c->tx_ring = f->peer + rmb->offset;
	return 0;
}

static void fake_conn_detach(struct conn *c)
{
	free(c->tx_priv);
	c->tx_priv = NULL;
	c->tx_ring = NULL;
}

/* Bytes [off, off + len) of c's ring reach the peer's ring over link f,
 * unless f loses them; nothing to copy when the ring is the peer's. */
static void fake_carry(struct fake *f, struct conn *c, uint32_t off, uint32_t len)
{
	uint8_t *dst = f->peer + c->tx_peer_off + off;

	if (f->drop_writes || dst == c->tx_ring + off)
		return;
	memcpy(dst, c->tx_ring + off, len);
}

/* Recorded on the link that carries the write (c->link). */
static int fake_write(struct conn *c, uint32_t off, uint32_t len)
{
	struct fake *f = fake_of_link(c->link);

	if (!len || off >= c->tx_size || len > c->tx_size - off ||
	    c->link->state != LINK_ACTIVE) {
		f->bad_calls++;
		return -EINVAL;
	}
	if (f->write_err)
		return f->write_err;
	if (f->n_writes < FAKE_WRITES) {
		f->writes[f->n_writes].off = off;
		f->writes[f->n_writes].len = len;
	}
	f->n_writes++;
	f->written += len;
	fake_carry(f, c, off, len);
	return 0;
}

static void fake_rewrite(struct fake *f, struct conn *c, uint32_t off, uint32_t len)
{
	if (f->n_rewrites < FAKE_REWRITES) {
		f->rewrites[f->n_rewrites].token = c->token;
		f->rewrites[f->n_rewrites].off = off;
		f->rewrites[f->n_rewrites].len = len;
		f->rewrites[f->n_rewrites].after_msgs = f->n_msgs;
	}
	f->n_rewrites++;
	f->rewritten += len;
	fake_carry(f, c, off, len);
}

/*
 * What transport-t.h asks, as rdma does it: [tx_cons, tx_prod) carried
 * again on the new link, as two ranges when it wraps, none when empty.
 * Called on a link that is not active, or with cursors more than a ring
 * apart, it counts a bad call.
 */
static void fake_conn_moved(struct conn *c)
{
	struct fake *f = fake_of_link(c->link);
	int64_t n = cursor_diff(c->tx_prod_done, c->tx_prod, c->tx_size);
	uint32_t off = c->tx_prod_done.count, first = c->tx_size - off;

	f->moved_calls++;
	if (c->link->state != LINK_ACTIVE || n < 0 || n > c->tx_size) {
		f->bad_calls++;
		return;
	}
	if (first > n)
		first = (uint32_t)n;
	if (first)
		fake_rewrite(f, c, off, first);
	if (n > first)
		fake_rewrite(f, c, 0, (uint32_t)n - first);
}

static void fake_lgr_close(struct lgr *lgr)
{
	lgr->tp = NULL;
}

void fake_queue_rx(struct fake *f, const uint8_t msg[LINK_MSG_LEN])
{
	assert_true(f->rx_prod - f->rx_cons < FAKE_RXQ);
	memcpy(f->rxq[f->rx_prod++ % FAKE_RXQ], msg, LINK_MSG_LEN);
}

static bool fake_link_poll(struct link *lnk)
{
	struct fake *f = fake_of_link(lnk);
	bool found = false;

	while (f->rx_cons != f->rx_prod && lnk->state == LINK_ACTIVE) {
		found = true;
		link_rx(lnk, f->rxq[f->rx_cons++ % FAKE_RXQ], LINK_MSG_LEN);
	}
	return found;
}

/* Every active group of the worker on the fake, as shm_poll() takes its
 * queues; a failure link_rx() finds runs at the end of the batch. */
static bool fake_poll(struct smc_net *net)
{
	struct list_head *pos, *tmp;
	bool found = false;
	unsigned i;

	list_for_each_safe(pos, tmp, &net->lgrs) {
		struct lgr *lgr = list_entry(pos, struct lgr, node);

		if (lgr->state != LGR_ACTIVE || lgr->ops != &fake_ops || lgr_failing(lgr))
			continue;
		for (i = 0; i < lgr->n_links; i++)
			if (fake_link_poll(&lgr->links[i]))
				found = true;
	}
	return found;
}

const struct smc_transport_ops fake_ops = {
	.name = "fake",
	.mode = FLOW_MODE_SHM,
	.clc_bit = CLC_TR_SHM,
	.poll = fake_poll,
	.tx_room = fake_tx_room,
	.post = fake_post,
	.flush = fake_flush,
	.tx_done = fake_tx_done,
	.want_progress = fake_want_progress,
	.conn_attach = fake_conn_attach,
	.conn_detach = fake_conn_detach,
	.write = fake_write,
	.lgr_close = fake_lgr_close,
};

/* fake_ops with sends that complete within the peer's next poll, as
 * shm's do, so that autocork may defer reads (cork.h): world_new() sets
 * it up. */
struct smc_transport_ops fake_local_ops;

/*
 * A group of several links can lose one: conn_moved is what tells the flow
 * code so (as rdma has it and shm not), and a flow then stays until its
 * last send completed, to send it again after a failover.
 */
static const struct smc_transport_ops fake_failover_ops = {
	.name = "fake",
	.mode = FLOW_MODE_RDMA,
	.tx_room = fake_tx_room,
	.post = fake_post,
	.flush = fake_flush,
	.tx_done = fake_tx_done,
	.want_progress = fake_want_progress,
	.conn_attach = fake_conn_attach,
	.conn_detach = fake_conn_detach,
	.conn_moved = fake_conn_moved,
	.write = fake_write,
	.lgr_close = fake_lgr_close,
};

/* ------------------------------------------------------------------ */
/* The world around it. */

static void world_conn_ended(struct conn *c, enum conn_end how, int err, enum fallback_reason fb)
{
	struct wflow *f = wflow_of(c);

	f->ended = how + 1;
	f->fb = fb;
	f->n_ended++;
	f->end_err = err;
	if (how == CONN_END_DECLINED && f->take_fd)
		f->taken_fd = conn_take_fd(c);
}

static void world_conn_closed(struct conn *c)
{
	wflow_of(c)->closed++;
}

static void world_lgr_event(struct smc_net *net, enum lgr_event ev,
			    const struct lgr *lgr, int err)
{
	struct world *w = container_of(net, struct world, net);

	if ((unsigned)ev < LGR_EVENTS)
		w->lgr_events[ev]++;
	w->lgr_event_err = err;
}

/* The flows here are bare conns: a peer's FLOW_OPEN finds no flow layer
 * (declined internal), and no destination is a listener. */
static int world_flow_open(struct smc_net *net, struct link *lnk,
			   const struct llc_flow_open *m, const struct sockaddr *dest)
{
	struct world *w = container_of(net, struct world, net);

	return w->flow_open_err ? w->flow_open_err : -EPERM;
}

static void world_no_port(struct smc_net *net, const struct sockaddr *dest)
{
	struct world *w = container_of(net, struct world, net);

	w->no_port_calls++;
	memcpy(&w->no_port_dest, dest, addr_len(dest));
}

static bool world_dest_is_listener(struct smc_net *net, const struct sockaddr *dest)
{
	return false;
}

static void world_exhausted(struct smc_net *net, int err)
{
}

static const struct smc_net_ops world_net_ops = {
	.flow_open = world_flow_open,
	.dest_is_listener = world_dest_is_listener,
	.exhausted = world_exhausted,
	.lgr_event = world_lgr_event,
	.no_port = world_no_port,
};

const struct conn_ops world_conn_ops = {
	.ended = world_conn_ended,
	.closed = world_conn_closed,
};

void world_batch_end(struct world *w)
{
	smc_net__flush(&w->net);
	while (loop_has_deferred(&w->core)) {
		struct loop_defer *d = list_entry(w->core.grave.next, struct loop_defer, node);

		list_del(&d->node);
		d->fn(d);
	}
}

static bool world_on_batch_end(struct loop_hook *h, bool run)
{
	struct world *w = container_of(h, struct world, sched_hook);

	conn_rx_run(&w->net);
	lgr__run_sched(&w->net);
	return false;
}

struct world *world_new_links(uint32_t rx_ring, uint32_t region,
			      uint32_t cork_max, unsigned links)
{
	struct world *w = calloc(1, sizeof(*w));
	struct lgr *lgr;
	unsigned i;

	assert_non_null(w);
	assert_true(links >= 1 && links <= WORLD_LINKS_MAX);
	fake_local_ops = fake_ops;
	fake_local_ops.completes_locally = true;
	w->n_links = links;
	assert_int_equal(uv_loop_init(&w->loop), 0);
	w->cfg.fallback.connect_timeout_ms = 5000;

	/* The SMC layer as smc_net_init() leaves it, without a control port
	 * or a transport of its own: the fake is the transport. */
	assert_int_equal(loop_init(&w->core, &w->loop), 0);
	w->net = (struct smc_net){ .loop = &w->loop, .core = &w->core, .cfg = &w->cfg,
				   .ops = &world_net_ops, .stats = &w->stats,
				   .control_fd = -1 };
	list_init(&w->net.lgrs);
	list_init(&w->net.kick_links);
	list_init(&w->net.rx_ready);
	list_init(&w->net.lgrs_sched);
	w->sched_hook.fn = world_on_batch_end;
	loop_hook_add(&w->core, LOOP_BATCH_END, &w->sched_hook);
	w->net.cork = (struct cork_params){ .enabled = true, .max_bytes = cork_max };
	rmb_budget_init(&w->net.rmb_budget, region);

	w->fake.room = 64;
	w->fake.peer = calloc(1, FAKE_PEER_SIZE);
	assert_non_null(w->fake.peer);
	for (i = 1; i < links; i++) {
		world_fake(w, i)->room = 64;
		world_fake(w, i)->peer = w->fake.peer;
	}
	w->region_size = region;
	w->region = calloc(1, region);
	assert_non_null(w->region);

	/* The link group as the handshake and the rendezvous leave it. */
	lgr = calloc(1, sizeof(*lgr));
	assert_non_null(lgr);
	lgr->net = &w->net;
	lgr->role = LGR_ROLE_CLIENT;
	lgr->state = LGR_ACTIVE;
	lgr->hs.fd = -1;
	lgr->hs.step = HS_DONE;
	list_init(&lgr->waiting);
	list_init(&lgr->conn_list);
	list_init(&lgr->connecting);
	list_init(&lgr->grown);
	list_add_tail(&lgr->node, &w->net.lgrs);
	w->net.n_lgrs++;
	w->net.n_lgrs_role[LGR_ROLE_CLIENT]++;
	lgr->ops = links > 1 ? &fake_failover_ops : &fake_ops;
	lgr->tp = &w->fake;
	lgr->ring_size = rx_ring;
	lgr->region = w->region;
	lgr->region_size = region;
	rmb_pool_init(&lgr->rmbs, 0, region, &w->net.rmb_budget, NULL);
	assert_int_equal(lgr__setup_links(lgr, links, 16), 0);
	for (i = 0; i < links; i++)
		lgr->links[i].tp = world_fake(w, i);
	w->lgr = lgr;
	w->lnk = &lgr->links[0];
	for (i = 0; i < WORLD_FLOWS; i++)
		w->flows[i].app = w->flows[i].taken_fd = -1;
	return w;
}

struct world *world_new(uint32_t rx_ring, uint32_t region, uint32_t cork_max)
{
	return world_new_links(rx_ring, region, cork_max, 1);
}

void world_settle(struct world *w)
{
	int i;

	for (i = 0; i < 20; i++) {
		uv_run(&w->loop, UV_RUN_NOWAIT);
		usleep(500);
	}
}

int world_socket(int *app, int rcvbuf, int sndbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	*app = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*app >= 0);
	if (rcvbuf)
		setsockopt(*app, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	assert_int_equal(connect(*app, (struct sockaddr *)&a, sizeof(a)), 0);
	fd = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fd >= 0);
	if (sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	close(l);
	return fd;
}

struct cdc_msg fake_cdc(const struct fake *f, unsigned i)
{
	struct cdc_msg m;

	assert_true(i < f->n_msgs);
	assert_int_equal(f->msgs[i].b[0], CDC_MSG_TYPE);
	assert_int_equal(cdc_decode(f->msgs[i].b, LINK_MSG_LEN, &m), 0);
	return m;
}

struct llc_msg fake_llc(const struct fake *f, unsigned i)
{
	struct llc_msg m;

	assert_true(i < f->n_msgs);
	assert_int_equal(llc_decode(f->msgs[i].b, LINK_MSG_LEN, &m), 0);
	return m;
}

struct cdc_msg world_cdc(struct world *w, unsigned i)
{
	return fake_cdc(&w->fake, i);
}

struct llc_msg world_llc(struct world *w, unsigned i)
{
	return fake_llc(&w->fake, i);
}

struct sockaddr_storage world_dest(void)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	in->sin_family = AF_INET;
	in->sin_port = htons(80);
	in->sin_addr.s_addr = htonl(0x0a000001);
	return ss;
}

struct wflow *world_open_only(struct world *w, unsigned i, int rcvbuf, int sndbuf)
{
	struct sockaddr_storage dest = world_dest();
	struct wflow *f = &w->flows[i];
	int fd = world_socket(&f->app, rcvbuf, sndbuf);

	assert_int_equal(conn_open(&f->c, w->lgr, fd, (struct sockaddr *)&dest, NULL,
				   &world_conn_ops), 0);
	assert_int_equal(f->c.state, CONN_OPENING);
	return f;
}

void world_accept(struct world *w, unsigned i, uint32_t peer_ring)
{
	struct wflow *f = &w->flows[i];
	struct llc_flow_accept a = {
		.token = f->c.token,
		.peer_token = PEER_TOKEN + i,
		.rmb = { .offset = i * (FAKE_PEER_SIZE / WORLD_FLOWS), .size = peer_ring },
	};

	conn_on_accept(&f->c, &a);
	world_batch_end(w);
	assert_int_equal(f->c.state, CONN_ACTIVE);
	assert_int_equal(f->c.tx_size, peer_ring);
}

struct wflow *world_open(struct world *w, unsigned i, uint32_t peer_ring)
{
	struct wflow *f;
	struct fake *lf;
	struct llc_msg m;
	unsigned before[WORLD_LINKS_MAX], k;

	for (k = 0; k < w->n_links; k++)
		before[k] = world_fake(w, k)->n_msgs;
	f = world_open_only(w, i, 0, 0);
	world_batch_end(w);
	lf = fake_of_link(f->c.link);
	for (k = 0; k < w->n_links; k++)
		if (world_fake(w, k) != lf)
			assert_int_equal(world_fake(w, k)->n_msgs, before[k]);
	assert_int_equal(lf->n_msgs, before[f->c.link->idx] + 1);
	m = fake_llc(lf, lf->n_msgs - 1);
	assert_int_equal(m.type, LLC_FLOW_OPEN);
	assert_int_equal(m.open.token, f->c.token);
	lf->n_msgs--;
	world_accept(w, i, peer_ring);
	return f;
}

void world_complete_link(struct world *w, unsigned i)
{
	world_fake(w, i)->done = w->lgr->links[i].tx_seq;
	link_tx_progress(&w->lgr->links[i]);
	world_batch_end(w);
}

void world_complete(struct world *w)
{
	world_complete_link(w, 0);
}

void world_peer_cdc(struct world *w, struct wflow *f, uint8_t prod_flags,
		    uint8_t conn_flags)
{
	struct cdc_msg m = {
		.token = f->c.token,
		.prod = f->peer_prod,
		.cons = f->peer_cons,
		.prod_flags = prod_flags,
		.conn_flags = conn_flags,
		.prod_gen = f->peer_prod_gen,
		.cons_gen = f->peer_cons_gen,
	};

	conn_on_cdc(&f->c, &m);
	world_batch_end(w);
}

void world_peer_write(struct world *w, struct wflow *f, const uint8_t *b,
		      uint32_t n)
{
	uint32_t size = f->c.rmb->size, first = size - f->peer_prod.count;
	uint8_t *ring = w->region + f->c.rmb->offset;

	if (first > n)
		first = n;
	memcpy(ring + f->peer_prod.count, b, first);
	memcpy(ring, b + first, n - first);
	f->peer_prod = cursor_add(f->peer_prod, n, size);
}

void world_free(struct world *w)
{
	unsigned i;

	if (w->lgr) {
		lgr_fail(w->lgr, -ESHUTDOWN);
		world_batch_end(w);
	}
	addr_local_close(&w->net.local_addrs);	/* a test's opens may have filled it */
	assert_int_equal(w->net.rmb_budget.used, 0);
	for (i = 0; i < WORLD_FLOWS; i++) {
		if (w->flows[i].c.lgr)
			assert_int_equal(w->flows[i].closed, 1);
		if (w->flows[i].app >= 0)
			close(w->flows[i].app);
		if (w->flows[i].taken_fd >= 0)
			close(w->flows[i].taken_fd);
	}
	for (i = 0; i < w->n_links; i++)
		assert_int_equal(world_fake(w, i)->bad_calls, 0);
	loop_discard(&w->core);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&w->loop), 0);
	free(w->region);
	free(w->fake.peer);
	free(w);
}
