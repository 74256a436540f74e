/* SPDX-License-Identifier: MIT */
/*
 * Worker threads: jobs run on the worker's own thread; a worker that does
 * not answer in time is reported and its job freed later, by the worker;
 * counters are summed over every member of struct proxy_stats; a stuck
 * loop shows in the heartbeat; a reload frees the old configuration only
 * once every worker switched, also when one was late; stop-accepting
 * drains; close joins every thread. Also: the shared log rate limiter
 * gives the burst once for all threads, and the loop check of one worker
 * sees the outbound connections of another. Run under ASan/LSan by make
 * check-asan, which catches a job or a configuration freed twice or never.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "cfg.h"
#include "flow-t.h"
#include "log.h"
#include "proxy.h"
#include "worker.h"

static struct cfg *cfg_any_port(const char *extra)
{
	char json[256];
	struct cfg *cfg;

	snprintf(json, sizeof(json),
		 "{\"listen\": [\"127.0.0.1:7001\"], \"control\": \"\", \"transport\": \"tcp\"%s}",
		 extra);
	assert_int_equal(cfg_load_string(json, "test", &cfg, NULL), 0);
	/* The config refuses port 0; tests want any (each worker its own). */
	((struct sockaddr_in *)&cfg->listen[0].ss)->sin_port = 0;
	return cfg;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * Waits for cond, polling. The bound (10 s and more) times nothing: it
 * only turns a hang into a failure. The tests wait for what the code
 * does, never for a time to pass, so a loaded machine cannot fail them.
 */
#define WAIT_FOR(cond)                                                  \
	do {                                                            \
		for (int wait_ = 0; wait_ < 10000 && !(cond); wait_++)  \
			sleep_ms(1);                                    \
	} while (0)

/* Runs the main loop once without blocking, as often as it takes. */
static void spin_main(uv_loop_t *loop, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		sleep_ms(1);
	}
}

/* A stuck loop, for as long as the test wants: a gated job holds its
 * worker until the gate opens, and says that it started. */
static atomic_bool gate_open;
static atomic_int gated_started;

struct fixture {
	uv_loop_t main;
	struct worker_pool pool;
	struct cfg *cfg;
	bool closed;
};

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
	uv_loop_init(&fx->main);
	fx->cfg = cfg_any_port("");
	assert_int_equal(worker_pool_init(&fx->pool, &fx->main, 2, fx->cfg, NULL, 0,
					  err, sizeof(err)), 0);
	fx->pool.data = fx;
	assert_int_equal(worker_pool_start(&fx->pool, 5), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	/* A failed test may leave a worker in a gated job: let it go, or
	 * the join below would wait for ever. */
	atomic_store(&gate_open, true);
	worker_pool_close(&fx->pool, on_pool_closed);
	uv_run(&fx->main, UV_RUN_DEFAULT);
	assert_true(fx->closed);
	assert_int_equal(uv_loop_close(&fx->main), 0);
	cfg_free(fx->cfg);
	free(fx);
	return 0;
}

/* ---- jobs ------------------------------------------------------------ */

static atomic_int released;

struct probe_job {
	struct worker_job job;
	pthread_t thread;
	unsigned index, proxy_worker;
	bool gated;
	const struct cfg *cfg;
};

static void probe_run(struct worker *w, struct worker_job *job)
{
	struct probe_job *j = (struct probe_job *)job;

	if (j->gated) {
		atomic_fetch_add(&gated_started, 1);
		while (!atomic_load(&gate_open))
			sleep_ms(1);
	}
	j->thread = pthread_self();
	j->index = w->index;
	j->proxy_worker = w->proxy.worker;
	j->cfg = w->proxy.cfg;
}

static void probe_release(struct worker_job *job)
{
	atomic_fetch_add(&released, 1);
	free(job);
}

static struct worker_job *probe_new(bool gated)
{
	struct probe_job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->job.run = probe_run;
	j->job.release = probe_release;
	j->gated = gated;
	return &j->job;
}

/* Closes the gate for the gated jobs to come; none started yet. */
static void gate_close(void)
{
	atomic_store(&gate_open, false);
	atomic_store(&gated_started, 0);
	atomic_store(&released, 0);
}

static void test_jobs_run_on_the_workers_threads(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2] = { probe_new(false), probe_new(false) };
	struct probe_job *a, *b;

	assert_int_equal(worker_pool_run(&fx->pool, jobs, WORKER_ANSWER_MS), 0);
	a = (struct probe_job *)jobs[0];
	b = (struct probe_job *)jobs[1];
	assert_int_equal(a->job.state, WORKER_JOB_RAN);
	assert_int_equal(b->job.state, WORKER_JOB_RAN);
	assert_int_equal(a->index, 0);
	assert_int_equal(b->index, 1);
	/* The proxy knows its worker: the flows' "worker" comes from it. */
	assert_int_equal(a->proxy_worker, 0);
	assert_int_equal(b->proxy_worker, 1);
	assert_false(pthread_equal(a->thread, pthread_self()));
	assert_false(pthread_equal(b->thread, pthread_self()));
	assert_false(pthread_equal(a->thread, b->thread));
	free(a);
	free(b);
}

static void test_late_worker_is_reported_and_frees_its_job(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2] = { probe_new(false), probe_new(true) };
	struct timespec t0, t1;
	long ms;

	gate_close();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(worker_pool_run(&fx->pool, jobs, 150), 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	/* It waited its time (a floor: load only makes it longer), and not
	 * for the stuck worker, which still holds its job: it returned. */
	assert_true(ms >= 140);
	assert_int_equal(atomic_load(&released), 0);
	assert_non_null(jobs[0]);
	assert_int_equal(jobs[0]->state, WORKER_JOB_RAN);
	assert_null(jobs[1]);		/* the worker's now */
	free(jobs[0]);
	/* The worker runs it when it can, and frees it. */
	atomic_store(&gate_open, true);
	WAIT_FOR(atomic_load(&released));
	assert_int_equal(atomic_load(&released), 1);
}

/* ---- counters --------------------------------------------------------- */

static void fill_stats(struct worker *w, struct worker_job *job)
{
	uint64_t *v = (uint64_t *)&w->proxy.stats;

	/* Only the worker writes its counters: do it on its thread. */
	for (size_t i = 0; i < sizeof(w->proxy.stats) / sizeof(uint64_t); i++)
		v[i] = (w->index + 1) * 1000 + i;
}

static void test_stats_sum_every_member(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2];
	struct proxy_stats sum;
	const uint64_t *v = (const uint64_t *)&sum;
	size_t i;

	for (i = 0; i < 2; i++) {
		jobs[i] = calloc(1, sizeof(*jobs[i]));
		jobs[i]->run = fill_stats;
	}
	assert_int_equal(worker_pool_run(&fx->pool, jobs, WORKER_ANSWER_MS), 0);
	free(jobs[0]);
	free(jobs[1]);
	worker_pool_stats(&fx->pool, &sum);
	for (i = 0; i < sizeof(sum) / sizeof(uint64_t); i++)
		assert_int_equal(v[i], 1000 + i + 2000 + i);
	/* The last member too: nothing is left out of the sum. */
	assert_int_equal(sum.flows_reset_link,
			 3000 + 2 * (offsetof(struct proxy_stats, flows_reset_link) / 8));
}

/* ---- heartbeat --------------------------------------------------------- */

static uint64_t beats(struct fixture *fx, unsigned i)
{
	return atomic_load(&fx->pool.workers[i].beats);
}

/* worker_pool_alive() since a look at which both loops beat again: the
 * beats counted, not a time slept, so that a slow machine cannot make a
 * live loop look stuck. */
static bool alive_after_both_beat(struct fixture *fx, unsigned *stalled)
{
	uint64_t b0, b1;

	worker_pool_alive(&fx->pool, NULL);
	b0 = beats(fx, 0);
	b1 = beats(fx, 1);
	WAIT_FOR(beats(fx, 0) > b0 && beats(fx, 1) > b1);
	assert_true(beats(fx, 0) > b0 && beats(fx, 1) > b1);
	return worker_pool_alive(&fx->pool, stalled);
}

static void test_stuck_loop_shows_in_the_heartbeat(void **state)
{
	struct fixture *fx = *state;
	struct worker_job *jobs[2] = { NULL, probe_new(true) };
	unsigned stalled = 99;
	uint64_t b0;

	assert_true(alive_after_both_beat(fx, &stalled));

	/* Posted without waiting: worker 1 is stuck in it until the gate
	 * opens, and beats no more from the moment it started. */
	gate_close();
	assert_int_equal(worker_pool_run(&fx->pool, jobs, 0), 1);
	WAIT_FOR(atomic_load(&gated_started));
	assert_int_equal(atomic_load(&gated_started), 1);
	worker_pool_alive(&fx->pool, NULL);
	/* Worker 0 beat since, so the one reported is worker 1. */
	b0 = beats(fx, 0);
	WAIT_FOR(beats(fx, 0) > b0);
	assert_false(worker_pool_alive(&fx->pool, &stalled));
	assert_int_equal(stalled, 1);

	atomic_store(&gate_open, true);
	WAIT_FOR(atomic_load(&released));
	assert_int_equal(atomic_load(&released), 1);
	assert_true(alive_after_both_beat(fx, &stalled));
}

/* ---- reload ------------------------------------------------------------ */

static const struct cfg *cfg_of(struct fixture *fx, unsigned i)
{
	struct worker_job *jobs[2] = { probe_new(false), probe_new(false) };
	const struct cfg *c;

	assert_int_equal(worker_pool_run(&fx->pool, jobs, WORKER_ANSWER_MS), 0);
	c = ((struct probe_job *)jobs[i])->cfg;
	free(jobs[0]);
	free(jobs[1]);
	return c;
}

static void test_reload_frees_the_old_cfg_once_all_switched(void **state)
{
	struct fixture *fx = *state;
	struct cfg *c1 = fx->cfg, *c2 = cfg_any_port(""), *c3 = cfg_any_port("");
	struct worker_job *jobs[2] = { probe_new(true), NULL };

	assert_int_equal(worker_pool_set_cfg(&fx->pool, c2, c1, WORKER_ANSWER_MS), 0);
	assert_ptr_equal(cfg_of(fx, 0), c2);
	assert_ptr_equal(cfg_of(fx, 1), c2);
	assert_int_equal(fx->pool.n_retired, 0);	/* c1 is gone (ASan: once) */

	/* Worker 0 is stuck: it switches late, and c2 lives until then. */
	gate_close();
	assert_int_equal(worker_pool_run(&fx->pool, jobs, 0), 1);
	WAIT_FOR(atomic_load(&gated_started));
	assert_int_equal(worker_pool_set_cfg(&fx->pool, c3, c2, 100), 1);
	assert_int_equal(fx->pool.n_retired, 1);
	/* Its switch notifies the main loop, which frees c2. */
	atomic_store(&gate_open, true);
	for (int i = 0; i < 1000 && fx->pool.n_retired; i++)
		spin_main(&fx->main, 10);
	assert_int_equal(fx->pool.n_retired, 0);
	assert_ptr_equal(cfg_of(fx, 0), c3);
	fx->cfg = c3;
}

/* ---- drain ------------------------------------------------------------- */

static void test_stop_accepting_drains(void **state)
{
	struct fixture *fx = *state;

	assert_false(worker_pool_drained(&fx->pool));
	assert_int_equal(worker_pool_command(&fx->pool, WORKER_CMD_STOP_ACCEPTING,
					     WORKER_ANSWER_MS), 0);
	/* No flow was open: drained as soon as the listeners closed. */
	assert_true(worker_pool_drained(&fx->pool));
	assert_int_equal(worker_pool_n_flows(&fx->pool), 0);
	/* Asked again, or aborting nothing: harmless. */
	assert_int_equal(worker_pool_command(&fx->pool, WORKER_CMD_STOP_ACCEPTING |
					     WORKER_CMD_ABORT_FLOWS, WORKER_ANSWER_MS), 0);
}

/* ---- start-up failure ---------------------------------------------------- */

static void test_init_failure_leaves_nothing_open(void **state)
{
	struct cfg *cfg = cfg_any_port("");
	struct worker_pool pool;
	uv_loop_t main;
	char err[256] = "";

	uv_loop_init(&main);
	/* An address nobody has: every worker's bind fails. */
	inet_pton(AF_INET, "192.0.2.1", &((struct sockaddr_in *)&cfg->listen[0].ss)->sin_addr);
	assert_true(worker_pool_init(&pool, &main, 3, cfg, NULL, 0, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "192.0.2.1"));
	assert_int_equal(uv_loop_close(&main), 0);
	cfg_free(cfg);
}

/* ---- shared by the workers ------------------------------------------------ */

static struct log_ratelimit shared_rl;
static atomic_int rl_passed;

static void *rl_hammer(void *arg)
{
	for (int i = 0; i < 1000; i++)
		if (log_ratelimit_ok(&shared_rl, 1000000 + (uintptr_t)arg))
			atomic_fetch_add(&rl_passed, 1);
	return NULL;
}

static void test_ratelimit_burst_is_the_daemons(void **state)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, rl_hammer, (void *)(uintptr_t)i);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* 4000 calls in one window, four threads: the burst of 10, once. */
	assert_int_equal(atomic_load(&rl_passed), 10);
	/* A new window opens for everyone, 5 s after whichever thread
	 * opened the first (their clocks were up to 3 ms apart). */
	assert_true(log_ratelimit_ok(&shared_rl, 1000000 + 3 + 5000));
}

/* A real loopback connection: the loop check asks the kernel whether our
 * outbound socket still holds its tuple. */
static void tcp_pair(int *client, int *server, struct sockaddr_in *local,
		     struct sockaddr_in *dest)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	*client = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*client, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*server = accept(lfd, NULL, NULL);
	assert_true(*server >= 0);
	close(lfd);
	len = sizeof(*local);
	assert_int_equal(getsockname(*client, (struct sockaddr *)local, &len), 0);
	*dest = sa;
}

static void test_loop_check_sees_other_workers(void **state)
{
	struct proxy *p0 = calloc(1, sizeof(*p0)), *p1 = calloc(1, sizeof(*p1));
	struct flow *f = calloc(1, sizeof(*f));
	struct sockaddr_in *local = (struct sockaddr_in *)&f->out_local;
	struct sockaddr_in *dest = (struct sockaddr_in *)&f->dest;
	struct sockaddr_in other;
	char c;
	int client, server;

	tcp_pair(&client, &server, local, dest);
	f->relay.fd[RELAY_SERVER] = client;
	other = *local;
	other.sin_port = htons(ntohs(local->sin_port) == 65535 ? 1 : ntohs(local->sin_port) + 1);

	assert_false(proxy__out_find(p1, (struct sockaddr *)local, (struct sockaddr *)dest));
	proxy__out_add(p0, f);
	/* Worker 0's outbound connection, come back to worker 1 (no mark
	 * configured: a live socket on the tuple is taken as ours). */
	assert_int_equal(proxy__out_find(p0, (struct sockaddr *)local, (struct sockaddr *)dest),
			 -EHOSTUNREACH);
	/* -EADDRINUSE, or -ENOTUNIQ where the kernel hides marks (no
	 * CAP_NET_ADMIN): refused either way. */
	assert_true(proxy__out_find(p1, (struct sockaddr *)local, (struct sockaddr *)dest) < 0);
	/* Another port, or another destination, is somebody else's. */
	assert_false(proxy__out_find(p1, (struct sockaddr *)&other, (struct sockaddr *)dest));
	assert_false(proxy__out_find(p1, (struct sockaddr *)local, (struct sockaddr *)&other));
	/* Our FIN, then the server's: our socket is in TIME_WAIT before the
	 * flow is freed, and a client may take the tuple over: not ours. */
	assert_int_equal(shutdown(client, SHUT_WR), 0);
	assert_int_equal(read(server, &c, 1), 0);
	close(server);
	assert_int_equal(read(client, &c, 1), 0);
	assert_false(proxy__out_find(p0, (struct sockaddr *)local, (struct sockaddr *)dest));
	assert_false(proxy__out_find(p1, (struct sockaddr *)local, (struct sockaddr *)dest));
	proxy__out_del(p0, f);
	assert_false(proxy__out_find(p1, (struct sockaddr *)local, (struct sockaddr *)dest));
	close(client);
	free(f);
	free(p0);
	free(p1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_jobs_run_on_the_workers_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_worker_is_reported_and_frees_its_job,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_sum_every_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stuck_loop_shows_in_the_heartbeat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_frees_the_old_cfg_once_all_switched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_accepting_drains, setup, teardown),
		cmocka_unit_test(test_init_failure_leaves_nothing_open),
		cmocka_unit_test(test_ratelimit_burst_is_the_daemons),
		cmocka_unit_test(test_loop_check_sees_other_workers),
	};

	log_open(LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
