/* SPDX-License-Identifier: MIT */
/*
 * The control socket's commands on the daemon's side (daemon/ctl_cmds.c,
 * ctl_lgr.c, ctl_link.c): `debug fail-link` is refused unless the
 * configuration allows it, finds its link group on whichever worker holds
 * it and fails the link on that worker's thread, and refuses unknown or
 * ambiguous groups, link indexes out of range, links that are not rdma and
 * links already down; `links` shows an rdma link's device and queue pair
 * and the down links of a group; `stats` lists each worker's CQ pool;
 * `flows` names a worker that did not answer and says the list is partial.
 *
 * There is no RDMA device here: the views reach a transport only through
 * its ops, so the link groups are fakes, with fake "rdma" and "shm" ops,
 * put on a worker's list by a job on its own thread; test_ctl_cmds.wrap
 * wraps the registry's smc_transport_at() so that the daemon finds the
 * fakes there too (the stats' "cq" table, fail-link's message).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/container.h"
#include "cfg.h"
#include "ctl_lgr.h"
#include "ctl_link.h"
#include "smc/lgr-t.h"
#include "smc/transport.h"
#include "transport/rdma/cq.h"
#include "proxy.h"
#include "ctl_pools.h"
#include "smcd.h"
#include "worker.h"

/* ---- a fake rdma transport, in a wrapped registry ----------------------- */

const struct smc_transport_ops *__wrap_smc_transport_at(unsigned i);

/* The links of this group are rdma links; any other is not. Set before
 * the jobs that read it are posted (the pool's lock orders the two). */
static struct lgr *rdma_lgr;
/* The worker whose proxy has a CQ pool. */
static unsigned cq_worker = 1;
static struct {
	unsigned n;
	struct cq cqs[4];		/* what the CQ pool of rdma reports */
} fake_pool;
/* An rdma link whose queue pair is not connected (-ENOTCONN). */
static const struct link *notconn_link;
static atomic_int fail_calls;
static pthread_t fail_thread;
static int fail_rc;

static bool is_rdma_link(const struct link *lnk)
{
	return rdma_lgr && lnk >= rdma_lgr->links && lnk < rdma_lgr->links + LGR_LINKS_MAX;
}

static int fake_link_info(const struct link *lnk, struct smc_fields *out)
{
	out->n = 0;
	if (!is_rdma_link(lnk))
		return -EOPNOTSUPP;
	if (lnk == notconn_link)
		return -ENOTCONN;
	smc_fields_str(out, "device", "rxe0");
	smc_fields_uint(out, "port", 1);
	smc_fields_str(out, "gid", "fe80::5054:ff:fe12:3456");
	smc_fields_uint(out, "qp_num", 100 + lnk->idx);
	smc_fields_uint(out, "peer_qp_num", 200 + lnk->idx);
	smc_fields_uint(out, "max_inline", 220);
	smc_fields_uint(out, "wr_in_flight", 3);
	smc_fields_uint(out, "sq_depth", 256);
	smc_fields_uint(out, "cq", lnk->idx % 2);
	smc_fields_bool(out, "relaxed_ordering", lnk->idx == 0);
	return 0;
}

static int fake_pool_info(struct smc_net *net, unsigned i, struct smc_fields *out)
{
	const struct proxy *p = container_of(net, const struct proxy, smc);

	out->n = 0;
	if (p->worker != cq_worker || i >= fake_pool.n)
		return -ENOENT;
	/* The transport's own list of a CQ's fields. */
	cq_info(&fake_pool.cqs[i], out);
	return 0;
}

static int fake_link_fail(struct link *lnk)
{
	assert_true(is_rdma_link(lnk));
	fail_thread = pthread_self();
	atomic_fetch_add(&fail_calls, 1);
	if (fail_rc)
		return fail_rc;
	lnk->state = LINK_DOWN;
	return 0;
}

static const struct smc_transport_ops fake_rdma_ops = {
	.name = "rdma",
	.mode = FLOW_MODE_RDMA,
	.clc_bit = CLC_TR_RDMA,
	.clc_tlv = CLC_TLV_RDMA_ADDR,
	.link_info = fake_link_info,
	.pool_name = "cq",
	.pool_info = fake_pool_info,
	.link_fail = fake_link_fail,
};
static const struct smc_transport_ops fake_shm_ops = {
	.name = "shm",
	.mode = FLOW_MODE_SHM,
	.clc_bit = CLC_TR_SHM,
	.clc_tlv = CLC_TLV_SHM_NAME,
};

/* The daemon (and the workers' proxies) see these two transports only:
 * inert, they set up nothing. */
const struct smc_transport_ops *__wrap_smc_transport_at(unsigned i)
{
	static const struct smc_transport_ops *const table[] = {
		&fake_shm_ops, &fake_rdma_ops,
	};

	return i < 2 ? table[i] : NULL;
}

/* ---- fake link groups ----------------------------------------------------- */


/* An active group of n links (link 1 down) with id bytes id0, id0+1, ...;
 * inert: no timer, no queues, an ops table without idle(). */
static struct lgr *fake_lgr(uint8_t id0, unsigned n, const struct smc_transport_ops *ops)
{
	struct lgr *lgr = calloc(1, sizeof(*lgr));
	struct sockaddr_in *sin = (struct sockaddr_in *)&lgr->peer;
	unsigned i;

	assert_non_null(lgr);
	lgr->role = LGR_ROLE_CLIENT;
	lgr->state = LGR_ACTIVE;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(7002);
	inet_pton(AF_INET, "10.0.0.2", &sin->sin_addr);
	for (i = 0; i < sizeof(lgr->id); i++)
		lgr->id[i] = (uint8_t)(id0 + i);
	lgr->ops = ops;
	lgr->n_links = n;
	list_init(&lgr->waiting);
	list_init(&lgr->conn_list);
	list_init(&lgr->connecting);
	for (i = 0; i < n; i++) {
		struct link *lnk = &lgr->links[i];

		lnk->lgr = lgr;
		lnk->idx = i;
		lnk->state = i == 1 ? LINK_DOWN : LINK_ACTIVE;
		list_init(&lnk->kick_node);
		list_init(&lnk->tx_wait);
		list_init(&lnk->corked);
		lnk->msgs_tx = 10 + i;
	}
	return lgr;
}

/* A proxy with nothing but a list of link groups, for the worker-side
 * functions called directly. */
static void bare_proxy(struct proxy *p, unsigned worker)
{
	memset(p, 0, sizeof(*p));
	list_init(&p->smc.lgrs);
	p->worker = worker;
}

/* ---- on a bare proxy -------------------------------------------------------- */

static void test_find_by_prefix(void **state)
{
	struct lgr *a = fake_lgr(0x00, 2, &fake_rdma_ops), *b = fake_lgr(0x01, 1, &fake_shm_ops);
	struct lgr *found;
	struct proxy p;
	char id[17];

	(void)state;
	bare_proxy(&p, 0);
	list_add_tail(&a->node, &p.smc.lgrs);
	list_add_tail(&b->node, &p.smc.lgrs);
	assert_string_equal(ctl_lgr_id(a, id), "0001020304050607");
	assert_string_equal(ctl_lgr_id(b, id), "0102030405060708");
	assert_int_equal(ctl_lgr_find(&p, "0001020304050607", &found), 1);
	assert_ptr_equal(found, a);
	assert_int_equal(ctl_lgr_find(&p, "01", &found), 1);
	assert_ptr_equal(found, b);
	assert_int_equal(ctl_lgr_find(&p, "0", &found), 2);
	assert_ptr_equal(found, a);
	assert_int_equal(ctl_lgr_find(&p, "02", &found), 0);
	assert_null(found);
	/* Only active groups: a negative entry or a group going down is not
	 * in `links` either. */
	b->state = LGR_NEGATIVE;
	assert_int_equal(ctl_lgr_find(&p, "01", &found), 0);
	b->state = LGR_DOWN;
	assert_int_equal(ctl_lgr_find(&p, "0", &found), 1);
	assert_int_equal(ctl_lgr_find(&p, "", &found), 0);
	free(a);
	free(b);
}

static void test_fail_link_checks(void **state)
{
	struct lgr *a = fake_lgr(0xa0, 3, &fake_rdma_ops), *b = fake_lgr(0xb0, 2, &fake_shm_ops);
	char id[17], msg[256];
	struct proxy p;

	(void)state;
	bare_proxy(&p, 0);
	list_add_tail(&a->node, &p.smc.lgrs);
	list_add_tail(&b->node, &p.smc.lgrs);
	rdma_lgr = a;
	fail_rc = 0;
	atomic_store(&fail_calls, 0);

	assert_int_equal(ctl_link_fail(&p, "c0", 0, id, msg, sizeof(msg)), -ENOENT);
	assert_string_equal(msg, "no active link group with an id starting with c0 "
			    "(smcproxyctl links lists them)");
	assert_string_equal(id, "");
	assert_int_equal(ctl_link_fail(&p, "a0a1", 3, id, msg, sizeof(msg)), -ERANGE);
	assert_string_equal(msg, "link group a0a1a2a3a4a5a6a7 has no link 3 (its links are 0..2)");
	assert_int_equal(ctl_link_fail(&p, "b0", 0, id, msg, sizeof(msg)), -ENOTSUP);
	assert_string_equal(msg, "link 0 of link group b0b1b2b3b4b5b6b7: link is not an rdma "
			    "link (transport shm)");
	assert_int_equal(ctl_link_fail(&p, "a0", 1, id, msg, sizeof(msg)), -ENOLINK);
	assert_string_equal(msg, "link 1 of link group a0a1a2a3a4a5a6a7 is down already");
	/* An rdma link without a connected queue pair: not failed again. */
	notconn_link = &a->links[2];
	assert_int_equal(ctl_link_fail(&p, "a0", 2, id, msg, sizeof(msg)), -ENOLINK);
	assert_string_equal(msg, "link 2 of link group a0a1a2a3a4a5a6a7 is not connected "
			    "(going down, or still being set up)");
	notconn_link = NULL;
	assert_int_equal(atomic_load(&fail_calls), 0);
	/* The transport says so itself. */
	fail_rc = -ENOTCONN;
	assert_int_equal(ctl_link_fail(&p, "a0", 2, id, msg, sizeof(msg)), -ENOLINK);
	assert_int_equal(atomic_load(&fail_calls), 1);
	atomic_store(&fail_calls, 0);

	/* The transport's refusal is passed on with its reason. */
	fail_rc = -EBUSY;
	assert_int_equal(ctl_link_fail(&p, "a0", 0, id, msg, sizeof(msg)), -EBUSY);
	assert_string_equal(msg, "link 0 of link group a0a1a2a3a4a5a6a7: cannot fail it: "
			    "Device or resource busy");
	fail_rc = 0;
	assert_int_equal(ctl_link_fail(&p, "a0a1", 0, id, msg, sizeof(msg)), 0);
	assert_string_equal(id, "a0a1a2a3a4a5a6a7");
	assert_int_equal(a->links[0].state, LINK_DOWN);
	assert_int_equal(atomic_load(&fail_calls), 2);

	/* Two groups with the prefix: the caller must say which. */
	b->id[0] = 0xa0;
	assert_int_equal(ctl_link_fail(&p, "a0", 0, id, msg, sizeof(msg)), -EEXIST);
	assert_string_equal(msg, "2 active link groups have ids starting with a0: give more digits");
	rdma_lgr = NULL;
	free(a);
	free(b);
}

static void test_links_json_rdma_fields(void **state)
{
	struct lgr *a = fake_lgr(0x10, 2, &fake_rdma_ops), *b = fake_lgr(0x20, 1, &fake_shm_ops);
	json_t *links, *e;
	struct proxy p;

	(void)state;
	bare_proxy(&p, 2);
	list_add_tail(&a->node, &p.smc.lgrs);
	list_add_tail(&b->node, &p.smc.lgrs);
	rdma_lgr = a;
	links = ctl_links_json(&p);
	assert_int_equal(json_array_size(links), 3);

	e = json_array_get(links, 0);
	assert_string_equal(json_string_value(json_object_get(e, "lgr")), "1011121314151617");
	assert_string_equal(json_string_value(json_object_get(e, "state")), "active");
	assert_string_equal(json_string_value(json_object_get(e, "transport")), "rdma");
	assert_string_equal(json_string_value(json_object_get(e, "device")), "rxe0");
	assert_int_equal(json_integer_value(json_object_get(e, "port")), 1);
	assert_string_equal(json_string_value(json_object_get(e, "gid")), "fe80::5054:ff:fe12:3456");
	assert_int_equal(json_integer_value(json_object_get(e, "qp_num")), 100);
	assert_int_equal(json_integer_value(json_object_get(e, "peer_qp_num")), 200);
	assert_int_equal(json_integer_value(json_object_get(e, "max_inline")), 220);
	assert_int_equal(json_integer_value(json_object_get(e, "wr_in_flight")), 3);
	assert_int_equal(json_integer_value(json_object_get(e, "sq_depth")), 256);
	assert_int_equal(json_integer_value(json_object_get(e, "cq")), 0);
	assert_true(json_is_true(json_object_get(e, "relaxed_ordering")));
	assert_int_equal(json_integer_value(json_object_get(e, "worker")), 2);

	/* The down link of the active group is listed, with its fields. */
	e = json_array_get(links, 1);
	assert_int_equal(json_integer_value(json_object_get(e, "link")), 1);
	assert_string_equal(json_string_value(json_object_get(e, "state")), "down");
	assert_int_equal(json_integer_value(json_object_get(e, "qp_num")), 101);
	assert_true(json_is_false(json_object_get(e, "relaxed_ordering")));

	/* A shm link has none of them. */
	e = json_array_get(links, 2);
	assert_string_equal(json_string_value(json_object_get(e, "transport")), "shm");
	assert_null(json_object_get(e, "device"));
	assert_null(json_object_get(e, "qp_num"));
	assert_int_equal(json_object_size(e), 12);
	json_decref(links);

	/* A group not active is not listed. */
	a->state = LGR_DOWN;
	links = ctl_links_json(&p);
	assert_int_equal(json_array_size(links), 1);
	json_decref(links);
	rdma_lgr = NULL;
	free(a);
	free(b);
}

static void test_cq_json(void **state)
{
	struct proxy p;
	json_t *cqs, *e;

	(void)state;
	memset(&fake_pool, 0, sizeof(fake_pool));
	fake_pool.n = 2;
	fake_pool.cqs[0] = (struct cq){ .idx = 0, .n_links = 3, .cqe = 1024,
		.st = { .polls = 10, .completions = 200, .empty_polls = 2, .rearms = 4,
			.rearms_solicited = 3, .events = 5 } };
	fake_pool.cqs[1] = (struct cq){ .idx = 1, .n_links = 1, .cqe = 1024, .moderated = true,
		.st = { .polls = UINT64_C(1) << 40 } };
	bare_proxy(&p, 1);
	cqs = ctl_pool_json(&p, &fake_rdma_ops);
	assert_int_equal(json_array_size(cqs), 2);
	e = json_array_get(cqs, 0);
	assert_int_equal(json_integer_value(json_object_get(e, "worker")), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "cq")), 0);
	assert_int_equal(json_integer_value(json_object_get(e, "polls")), 10);
	assert_int_equal(json_integer_value(json_object_get(e, "completions")), 200);
	assert_int_equal(json_integer_value(json_object_get(e, "empty_polls")), 2);
	assert_int_equal(json_integer_value(json_object_get(e, "rearms")), 4);
	assert_int_equal(json_integer_value(json_object_get(e, "rearms_solicited")), 3);
	assert_int_equal(json_integer_value(json_object_get(e, "events")), 5);
	assert_int_equal(json_integer_value(json_object_get(e, "links")), 3);
	assert_true(json_is_false(json_object_get(e, "moderated")));
	e = json_array_get(cqs, 1);
	assert_int_equal(json_integer_value(json_object_get(e, "polls")), (json_int_t)1 << 40);
	assert_true(json_is_true(json_object_get(e, "moderated")));
	json_decref(cqs);

	/* rdma off: an empty list, not an error. */
	bare_proxy(&p, 0);
	cqs = ctl_pool_json(&p, &fake_rdma_ops);
	assert_true(json_is_array(cqs));
	assert_int_equal(json_array_size(cqs), 0);
	json_decref(cqs);
}

/* ---- through the daemon's handler, with two worker threads ------------------ */

struct fixture {
	struct smcd d;
	struct ctl_server s;
	bool closed;
};

static struct cfg *test_cfg(bool fail_link)
{
	char json[256];
	struct cfg *cfg;

	snprintf(json, sizeof(json),
		 "{\"listen\": [\"127.0.0.1:7001\"], \"control\": \"\", \"transport\": \"tcp\","
		 " \"debug\": {\"fail_link\": %s}}", fail_link ? "true" : "false");
	assert_int_equal(cfg_load_string(json, "test", &cfg, NULL), 0);
	/* The config refuses port 0; tests want any (each worker its own). */
	((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port = 0;
	return cfg;
}

static void on_pool_closed(struct worker_pool *pool)
{
	struct fixture *fx = pool->data;

	fx->closed = true;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char err[256];

	assert_non_null(fx);
	assert_int_equal(uv_loop_init(&fx->d.loop), 0);
	fx->d.cfg = test_cfg(true);
	assert_int_equal(worker_pool_init(&fx->d.workers, &fx->d.loop, 2, fx->d.cfg, NULL, 0,
					  err, sizeof(err)), 0);
	fx->d.workers.data = fx;
	assert_int_equal(ctl_pools_init(&fx->d.pools, fx->d.workers.n), 0);
	/* Both workers offer rdma (as their start would decide). */
	fx->d.workers.workers[0].proxy.smc.lgr_transports |= CLC_TR_RDMA;
	fx->d.workers.workers[1].proxy.smc.lgr_transports |= CLC_TR_RDMA;
	assert_int_equal(worker_pool_start(&fx->d.workers, 0), 0);
	fx->d.start_ms = uv_now(&fx->d.loop);
	fx->s.data = &fx->d;
	memset(&fake_pool, 0, sizeof(fake_pool));
	fake_pool.n = 1;
	fake_pool.cqs[0].n_links = 2;
	fake_pool.cqs[0].st.completions = 77;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	worker_pool_close(&fx->d.workers, on_pool_closed);
	uv_run(&fx->d.loop, UV_RUN_DEFAULT);
	assert_true(fx->closed);
	assert_int_equal(uv_loop_close(&fx->d.loop), 0);
	ctl_pools_close(&fx->d.pools);
	cfg_free(fx->d.cfg);
	free(fx);
	return 0;
}

/* Puts lgr on (add) or takes it off worker w's list, on w's thread. */
struct lgr_job {
	struct worker_job job;
	struct lgr *lgr;
	bool add;
	unsigned sleep_ms;
};

static void lgr_job_run(struct worker *w, struct worker_job *job)
{
	struct lgr_job *j = (struct lgr_job *)job;

	if (j->sleep_ms) {
		struct timespec ts = { j->sleep_ms / 1000, (long)(j->sleep_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (!j->lgr)
		return;
	if (j->add) {
		j->lgr->net = &w->proxy.smc;
		list_add_tail(&j->lgr->node, &w->proxy.smc.lgrs);
	} else {
		list_del(&j->lgr->node);
	}
}

static void on_worker(struct fixture *fx, unsigned w, struct lgr *lgr, bool add)
{
	struct worker_job *jobs[2] = { NULL, NULL };
	struct lgr_job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->job.run = lgr_job_run;
	j->lgr = lgr;
	j->add = add;
	jobs[w] = &j->job;
	assert_int_equal(worker_pool_run(&fx->d.workers, jobs, 5000), 0);
	assert_int_equal(jobs[w]->state, WORKER_JOB_RAN);
	free(j);
}

static json_t *fail_link(struct fixture *fx, const char *lgr, unsigned link, char **err)
{
	struct ctl_request req = { .cmd = CTL_CMD_DEBUG, .op = CTL_DEBUG_FAIL_LINK, .link = link };

	assert_int_equal(ctl_lgr_prefix(lgr, req.lgr), 0);
	*err = NULL;
	return smcd_ctl_handle(&fx->s, &req, err);
}

static void expect_refusal(struct fixture *fx, const char *lgr, unsigned link, const char *want)
{
	char *err;
	json_t *body = fail_link(fx, lgr, link, &err);

	assert_null(body);
	assert_non_null(err);
	assert_string_equal(err, want);
	free(err);
}

static void test_fail_link_disabled(void **state)
{
	struct fixture *fx = *state;
	struct cfg *on = fx->d.cfg;

	/* debug.fail_link is live: the handler reads the running config. */
	fx->d.cfg = test_cfg(false);
	atomic_store(&fail_calls, 0);
	expect_refusal(fx, "00", 0, "not allowed: the configuration must set \"debug\": "
		       "{\"fail_link\": true} (live on reload)");
	assert_int_equal(atomic_load(&fail_calls), 0);
	cfg_free(fx->d.cfg);
	fx->d.cfg = on;
	/* Allowed, but there is no group to fail. */
	expect_refusal(fx, "00", 0, "no active link group with an id starting with 00 "
		       "(smcproxyctl links lists them)");
}

static void test_fail_link_on_the_owner(void **state)
{
	struct fixture *fx = *state;
	struct lgr *a = fake_lgr(0x30, 2, &fake_rdma_ops), *b = fake_lgr(0x40, 2, &fake_shm_ops);
	struct ctl_request req = { .cmd = CTL_CMD_LINKS };
	json_t *body, *e;
	char *err = NULL;
	size_t i;

	rdma_lgr = a;
	fail_rc = 0;
	atomic_store(&fail_calls, 0);
	on_worker(fx, 1, a, true);
	on_worker(fx, 0, b, true);

	/* links: both groups, each from its worker; the rdma fields only on
	 * the rdma links, the down link listed. */
	body = smcd_ctl_handle(&fx->s, &req, &err);
	assert_non_null(body);
	assert_int_equal(json_array_size(json_object_get(body, "links")), 4);
	json_array_foreach(json_object_get(body, "links"), i, e) {
		const char *lgr = json_string_value(json_object_get(e, "lgr"));
		bool rdma = strcmp(lgr, "3031323334353637") == 0;

		assert_int_equal(json_integer_value(json_object_get(e, "worker")), rdma ? 1 : 0);
		assert_int_equal(json_is_integer(json_object_get(e, "qp_num")), rdma);
	}
	assert_null(json_object_get(body, "workers_not_answering"));
	json_decref(body);

	expect_refusal(fx, "30", 5, "link group 3031323334353637 has no link 5 (its links are 0..1)");
	expect_refusal(fx, "40", 0, "link 0 of link group 4041424344454647: link is not an rdma "
		       "link (transport shm)");
	expect_refusal(fx, "3031", 1, "link 1 of link group 3031323334353637 is down already");
	expect_refusal(fx, "5", 0, "no active link group with an id starting with 5 "
		       "(smcproxyctl links lists them)");
	assert_int_equal(atomic_load(&fail_calls), 0);

	body = fail_link(fx, "3031323334353637", 0, &err);
	assert_non_null(body);
	assert_null(err);
	e = json_object_get(body, "debug");
	assert_string_equal(json_string_value(json_object_get(e, "op")), "fail-link");
	assert_int_equal(json_integer_value(json_object_get(e, "worker")), 1);
	assert_string_equal(json_string_value(json_object_get(e, "lgr")), "3031323334353637");
	assert_int_equal(json_integer_value(json_object_get(e, "link")), 0);
	json_decref(body);
	assert_int_equal(atomic_load(&fail_calls), 1);
	/* On the worker's thread, not the main one. */
	assert_false(pthread_equal(fail_thread, pthread_self()));
	expect_refusal(fx, "30", 0, "link 0 of link group 3031323334353637 is down already");

	/* The same prefix on two workers. */
	b->id[0] = 0x30;
	expect_refusal(fx, "30", 0, "2 active link groups have ids starting with 30: "
		       "give more digits");

	on_worker(fx, 1, a, false);
	on_worker(fx, 0, b, false);
	rdma_lgr = NULL;
	free(a);
	free(b);
}

static void test_fail_link_late_worker(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2] = { NULL, NULL };
	struct lgr_job *stuck = calloc(1, sizeof(*stuck));

	/* Worker 1 is busy for longer than the handler waits. */
	assert_non_null(stuck);
	stuck->job.run = lgr_job_run;
	stuck->sleep_ms = WORKER_ANSWER_MS + 300;
	jobs[1] = &stuck->job;
	assert_int_equal(worker_pool_run(&fx->d.workers, jobs, 0), 1);
	expect_refusal(fx, "ab", 0, "worker 1 did not answer within 1000 ms: cannot tell which "
		       "worker holds link group ab; nothing was done");
	/* Let it finish (and free its jobs) before the pool closes. */
	on_worker(fx, 1, NULL, false);
}

/* A stats reply whose "cq" has rows: the first ones wait CTL_POOLS_FRESH_MS
 * at most, which a worker not scheduled yet can miss (a loaded machine). */
static json_t *stats_with_cq(struct fixture *fx)
{
	struct ctl_request req = { .cmd = CTL_CMD_STATS };
	struct timespec ts = { 0, 10 * 1000000 };
	char *err = NULL;
	json_t *body;
	unsigned i;

	for (i = 0; i < 1000; i++) {
		body = smcd_ctl_handle(&fx->s, &req, &err);
		assert_non_null(body);
		if (json_array_size(json_object_get(json_object_get(body, "stats"), "cq")))
			return body;
		json_decref(body);
		nanosleep(&ts, NULL);
	}
	fail_msg("no CQ rows in 1000 stats replies");
	return NULL;
}

static void test_stats_cq(void **state)
{
	struct fixture *fx = *state;
	json_t *body, *cq, *e;

	body = stats_with_cq(fx);
	cq = json_object_get(json_object_get(body, "stats"), "cq");
	assert_true(json_is_array(cq));
	/* Only worker 1 has a pool here, of one CQ. */
	assert_int_equal(json_array_size(cq), 1);
	e = json_array_get(cq, 0);
	assert_int_equal(json_integer_value(json_object_get(e, "worker")), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "cq")), 0);
	assert_int_equal(json_integer_value(json_object_get(e, "completions")), 77);
	assert_int_equal(json_integer_value(json_object_get(e, "links")), 2);
	assert_null(json_object_get(json_object_get(body, "stats"), "workers_not_answering"));
	/* The summed counters are still there, the rdma ones too. */
	assert_non_null(json_object_get(json_object_get(body, "stats"), "per_worker"));
	e = json_object_get(json_object_get(body, "stats"), "lgr");
	assert_true(json_is_integer(json_object_get(e, "link_failovers")));
	assert_true(json_is_integer(json_object_get(e, "flows_moved")));
	e = json_object_get(json_object_get(body, "stats"), "rdma");
	assert_true(json_is_integer(json_object_get(e, "link_failures")));
	assert_true(json_is_integer(json_object_get(e, "async_events")));
	assert_true(json_is_integer(json_object_get(e, "links_draining")));
	assert_true(json_is_integer(json_object_get(json_object_get(body, "stats"), "cq_age_ms")));
	json_decref(body);
}

/* A job that keeps worker w busy for ms, then says it is done. */
static atomic_bool busy_done;

static void busy_job_run(struct worker *w, struct worker_job *job)
{
	struct timespec ts = { 0, 600 * 1000000L };

	nanosleep(&ts, NULL);
	atomic_store(&busy_done, true);
}

static void keep_busy(struct fixture *fx, unsigned w)
{
	struct worker_job *jobs[2] = { NULL, NULL };
	struct worker_job *job = calloc(1, sizeof(*job));

	assert_non_null(job);
	job->run = busy_job_run;
	jobs[w] = job;
	atomic_store(&busy_done, false);
	assert_int_equal(worker_pool_run(&fx->d.workers, jobs, 0), 1);	/* the worker frees it */
}

/*
 * Regression: every stats request (and /metrics scrape) waited up to
 * WORKER_ANSWER_MS for each worker's CQ table, blocking the main loop
 * while a worker was slow. Now a slow worker's last snapshot is shown, and
 * the request returns long before the worker is free again (it is busy
 * for 600 ms; the request waits CTL_POOLS_FRESH_MS at most).
 */
static void test_stats_slow_worker(void **state)
{
	struct fixture *fx = *state;
	struct ctl_request req = { .cmd = CTL_CMD_STATS };
	json_t *body, *cq;
	char *err = NULL;

	json_decref(stats_with_cq(fx));		/* a first snapshot */
	fake_pool.cqs[0].st.completions = 99;	/* what a fresh one would say */
	keep_busy(fx, cq_worker);
	body = smcd_ctl_handle(&fx->s, &req, &err);
	assert_false(atomic_load(&busy_done));
	assert_non_null(body);
	cq = json_object_get(json_object_get(body, "stats"), "cq");
	assert_int_equal(json_array_size(cq), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cq, 0), "completions")),
			 77);
	json_decref(body);
	/* A second request does not ask the busy worker again. */
	body = smcd_ctl_handle(&fx->s, &req, &err);
	assert_false(atomic_load(&busy_done));
	assert_non_null(body);
	json_decref(body);
	on_worker(fx, cq_worker, NULL, false);	/* free again: then the fresh one */
	fake_pool.cqs[0].st.completions = 77;
}

/* A job that holds its worker until the test posts held_sem: a worker
 * stuck in a long turn, however loaded the machine. */
static sem_t held_sem;

static void held_job_run(struct worker *w, struct worker_job *job)
{
	while (sem_wait(&held_sem) != 0)
		;
}

static json_t *flows_reply(struct fixture *fx)
{
	struct ctl_request req = { .cmd = CTL_CMD_FLOWS };
	char *err = NULL;
	json_t *body = smcd_ctl_handle(&fx->s, &req, &err);

	assert_null(err);
	assert_non_null(body);
	assert_true(json_is_array(json_object_get(body, "flows")));
	return body;
}

/*
 * Regression: a busy daemon's flows listing once showed 475 of 1,000
 * flows, as if complete. A worker that does not answer within
 * WORKER_ANSWER_MS is named in "workers_not_answering" and the reply says
 * "partial"; once it answers again the list is whole, and says so.
 */
static void test_flows_late_worker(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2] = { NULL, NULL };
	struct worker_job *job = calloc(1, sizeof(*job));
	json_t *body, *late;

	body = flows_reply(fx);
	assert_false(json_is_true(json_object_get(body, "partial")));
	assert_true(json_is_false(json_object_get(body, "partial")));
	assert_true(json_is_false(json_object_get(body, "truncated")));
	assert_null(json_object_get(body, "workers_not_answering"));
	json_decref(body);

	assert_non_null(job);
	assert_int_equal(sem_init(&held_sem, 0, 0), 0);
	job->run = held_job_run;
	jobs[1] = job;
	assert_int_equal(worker_pool_run(&fx->d.workers, jobs, 0), 1);	/* the worker frees it */
	body = flows_reply(fx);
	late = json_object_get(body, "workers_not_answering");
	assert_int_equal(json_array_size(late), 1);
	assert_int_equal(json_integer_value(json_array_get(late, 0)), 1);
	assert_true(json_is_true(json_object_get(body, "partial")));
	assert_true(json_is_false(json_object_get(body, "truncated")));
	json_decref(body);

	assert_int_equal(sem_post(&held_sem), 0);
	on_worker(fx, 1, NULL, false);		/* free again */
	body = flows_reply(fx);
	assert_true(json_is_false(json_object_get(body, "partial")));
	assert_null(json_object_get(body, "workers_not_answering"));
	json_decref(body);
	sem_destroy(&held_sem);
}

/* With rdma on no worker, a stats request asks no worker for its CQs:
 * a busy worker does not hold it, and "cq" is there, empty. */
static void test_stats_no_rdma_asks_nobody(void **state)
{
	struct fixture *fx = *state;
	struct ctl_request req = { .cmd = CTL_CMD_STATS };
	json_t *body, *cq;
	char *err = NULL;

	fx->d.workers.workers[0].proxy.smc.lgr_transports = 0;
	fx->d.workers.workers[1].proxy.smc.lgr_transports = 0;
	keep_busy(fx, 0);
	body = smcd_ctl_handle(&fx->s, &req, &err);
	assert_false(atomic_load(&busy_done));
	assert_non_null(body);
	cq = json_object_get(json_object_get(body, "stats"), "cq");
	assert_true(json_is_array(cq));
	assert_int_equal(json_array_size(cq), 0);
	assert_null(json_object_get(json_object_get(body, "stats"), "workers_not_answering"));
	json_decref(body);
	on_worker(fx, 0, NULL, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_by_prefix),
		cmocka_unit_test(test_fail_link_checks),
		cmocka_unit_test(test_links_json_rdma_fields),
		cmocka_unit_test(test_cq_json),
		cmocka_unit_test_setup_teardown(test_fail_link_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_link_on_the_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_link_late_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flows_late_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_cq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_slow_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_no_rdma_asks_nobody, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
