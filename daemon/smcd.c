/* SPDX-License-Identifier: MIT */
/*
 * Lifecycle of the daemon: start-up, systemd notification and watchdog,
 * SIGHUP reload, SIGTERM drain.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/route_back.h"
#include "ctl/ctl_render.h"
#include "ctl_pools.h"
#include "smc/clc-t.h"
#include "smc/transport.h"
#include "flow-t.h"
#include "intercept/intercept.h"
#include "log.h"
#include "metrics.h"
#include "smcd.h"
#include "worker.h"

#define STATUS_EVERY_MS 5000
/* With the HTTP endpoint on, each worker's heartbeat runs this often, and
 * /ready calls a worker stalled when it has not run for READY_STALL_MS:
 * long enough that a busy machine's scheduling hiccup is not a stall. */
#define READY_BEAT_MS	250
#define READY_STALL_MS	2000

static void smcd_shutdown(struct smcd *d);
static void smcd_finish(struct smcd *d);
static void smcd_probe_client_route(struct smcd *d);

static void smcd_on_handle_closed(uv_handle_t *h)
{
	struct smcd *d = h->data;

	d->open_handles--;
}

static void smcd_notify_status(struct smcd *d)
{
	struct proxy_stats st;

	worker_pool_stats(&d->workers, &st);
	sd_notifyf(0, "STATUS=%s%llu flows active, %llu accepted, %llu fallbacks to tcp",
		   d->stopping ? "draining: " : "",
		   (unsigned long long)worker_pool_n_flows(&d->workers),
		   (unsigned long long)st.flows_accepted,
		   (unsigned long long)st.flows_closed[FLOW_MODE_TCP] +
			   st.flows_active[FLOW_MODE_TCP]);
}

/*
 * The watchdog is fed only while every loop turns: the main one (this
 * timer runs) and each worker's (its heartbeat moved since the last tick).
 * A worker stuck for a whole WatchdogSec gets the service restarted.
 */
static void smcd_on_housekeeping(uv_timer_t *t)
{
	struct smcd *d = t->data;
	unsigned stalled = 0;

	if (d->watchdog_usec) {
		if (worker_pool_alive(&d->workers, &stalled)) {
			sd_notify(0, "WATCHDOG=1");
			if (d->stall_logged)
				log_notice("worker %u is running again; feeding the watchdog",
					   d->stalled_worker);
			d->stall_logged = false;
		} else if (!d->stall_logged) {
			log_err("worker %u: its event loop has not run for %llu ms;"
				" not feeding the watchdog", stalled,
				(unsigned long long)d->housekeeping_ms);
			d->stall_logged = true;
			d->stalled_worker = stalled;
		}
	}
	smcd_notify_status(d);
}

/* A worker drained, switched configuration or exited. */
static void smcd_on_workers_notify(struct worker_pool *pool)
{
	struct smcd *d = pool->data;

	if (d->stopping && worker_pool_drained(pool))
		smcd_finish(d);
}

int smcd_reload(struct smcd *d, char **applied, char **restart, char **err)
{
	struct cfg_errors errs = { 0 };
	struct cfg_diff diff;
	struct cfg *cfg, *old;
	unsigned late;
	int r;

	sd_notify(0, "RELOADING=1");
	if (d->cfg_path)
		r = cfg_load_file(d->cfg_path, &cfg, &errs);
	else
		r = cfg_load_default(&cfg, &errs);
	if (r < 0) {
		log_err("reload failed, keeping the running configuration:\n%s",
			errs.text ? errs.text : strerror(-r));
		if (err)
			*err = strdup(errs.text ? errs.text : strerror(-r));
		cfg_errors_free(&errs);
		sd_notify(0, "READY=1");
		return r;
	}
	cfg_diff(d->cfg, cfg, &diff);
	log_set_level(cfg->log.level);
	old = d->cfg;
	d->cfg = cfg;
	/* The old one is freed once no worker uses it. */
	late = worker_pool_set_cfg(&d->workers, cfg, old, WORKER_ANSWER_MS);
	if (late)
		log_warn("%u of %u workers did not take the new configuration within %u ms;"
			 " they will when they answer", late, d->workers.n, WORKER_ANSWER_MS);
	if (d->ctl.path)
		ctl_server_set_mode(&d->ctl, cfg->stats.mode);
	smcd_probe_client_route(d);
	d->reloads++;
	log_info("reloaded %s%s%s%s%s", cfg->source,
		 *diff.live ? "; applied: " : "; no live changes", diff.live,
		 *diff.restart ? "; needs a restart to take effect: " : "", diff.restart);
	if (applied)
		*applied = strdup(diff.live);
	if (restart)
		*restart = strdup(diff.restart);
	sd_notify(0, "READY=1");
	return 0;
}

static void smcd_on_workers_closed(struct worker_pool *pool)
{
	struct smcd *d = pool->data;

	d->open_handles--;
}

/* Everything stops; the loop ends when the last handle has closed, the
 * workers' notification last, once every worker thread is joined. */
static void smcd_finish(struct smcd *d)
{
	if (d->finishing)
		return;
	d->finishing = true;
	uv_timer_stop(&d->drain_timer);
	d->open_handles++;
	worker_pool_close(&d->workers, smcd_on_workers_closed);
	ctl_server_close(&d->ctl, NULL);
	metrics_close(&d->metrics, NULL);
	uv_close((uv_handle_t *)&d->sig_term, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->sig_int, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->sig_hup, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->housekeeping, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->drain_timer, smcd_on_handle_closed);
	/*
	 * Closing the last handle of a signal gives it back its default
	 * action, which for these is to kill us: a second SIGTERM while the
	 * workers close and are joined would turn a clean exit into status
	 * 143. There is nothing left for it to do: ignore it.
	 */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
}

static void smcd_on_drain_timeout(uv_timer_t *t)
{
	struct smcd *d = t->data;

	log_warn("drain timeout: resetting %llu remaining flows",
		 (unsigned long long)worker_pool_n_flows(&d->workers));
	worker_pool_command(&d->workers, WORKER_CMD_ABORT_FLOWS, 0);
}

/*
 * Every worker closes its listeners (new connections are refused) and
 * says when its last flow has ended; we exit once all have, or reset what
 * is left at the drain timeout.
 */
static void smcd_shutdown(struct smcd *d)
{
	unsigned late;

	if (d->stopping) {
		log_warn("second stop signal: resetting %llu flows now",
			 (unsigned long long)worker_pool_n_flows(&d->workers));
		worker_pool_command(&d->workers, WORKER_CMD_ABORT_FLOWS, 0);
		return;
	}
	d->stopping = true;
	sd_notify(0, "STOPPING=1");
	/* Before the listeners close: from now on connects go direct. */
	if (d->intercept_on) {
		intercept_detach(&d->intercept);
		log_info("intercept ebpf: detached from %s; new connects go direct",
			 d->intercept.cgroup);
	}
	late = worker_pool_command(&d->workers, WORKER_CMD_STOP_ACCEPTING, WORKER_ANSWER_MS);
	if (late)
		log_warn("%u of %u workers did not stop accepting within %u ms; waiting for them",
			 late, d->workers.n, WORKER_ANSWER_MS);
	if (worker_pool_drained(&d->workers)) {
		log_info("stopping");
		smcd_finish(d);
		return;
	}
	log_info("stopping: draining %llu flows for up to %llu ms",
		 (unsigned long long)worker_pool_n_flows(&d->workers),
		 (unsigned long long)d->cfg->shutdown.drain_timeout_ms);
	smcd_notify_status(d);
	uv_timer_start(&d->drain_timer, smcd_on_drain_timeout,
		       d->cfg->shutdown.drain_timeout_ms, 0);
}

static void smcd_on_signal(uv_signal_t *s, int signum)
{
	struct smcd *d = s->data;

	if (signum == SIGHUP)
		smcd_reload(d, NULL, NULL, NULL);
	else
		smcd_shutdown(d);
}

/*
 * Listening sockets systemd passed us (smcproxyd.socket). Only stream
 * sockets that listen qualify; anything else is closed with a warning.
 */
static size_t smcd_inherited_listeners(int *fds, size_t max)
{
	int n = sd_listen_fds(1), i;
	size_t k = 0;

	if (n < 0)
		log_warn("socket activation: %s; binding our own sockets", strerror(-n));
	for (i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		if (k < max && sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) > 0) {
			fds[k++] = fd;
		} else {
			log_warn("socket activation: fd %d is not a listening stream socket"
				 " we can use; closing it", fd);
			close(fd);
		}
	}
	return k;
}

/* /metrics: the stats reply of the socket, through smcproxyctl's own
 * Prometheus renderer, so that both say the same under the same names. */
static int smcd_metrics_render(struct metrics *m, FILE *out)
{
	struct smcd *d = m->data;
	json_t *reply = smcd_stats_reply(d);
	char err[CTL_ERRMSG_MAX];
	int rc;

	if (!reply)
		return -ENOMEM;
	rc = ctl_render(out, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS, reply, err, sizeof(err));
	json_decref(reply);
	return rc;
}

/*
 * /ready: every worker's loop turns (its heartbeat ran within
 * READY_STALL_MS), the transports the configuration asks for are up, and
 * the daemon is not draining (a balancer should send no more work).
 */
static bool smcd_metrics_ready(struct metrics *m, char *why, size_t len)
{
	struct smcd *d = m->data;
	unsigned stalled = 0;

	if (d->stopping) {
		snprintf(why, len, "stopping (draining flows)");
		return false;
	}
	if (!worker_pool_turning(&d->workers, READY_STALL_MS, &stalled)) {
		snprintf(why, len, "worker %u: its event loop has not run for %u ms", stalled,
			 READY_STALL_MS);
		return false;
	}
	if (d->transports_down[0]) {
		snprintf(why, len, "%s", d->transports_down);
		return false;
	}
	return true;
}

static const struct metrics_ops smcd_metrics_ops = {
	.render = smcd_metrics_render,
	.ready = smcd_metrics_ready,
};

/*
 * Which transport the configuration asks for and a worker could not set
 * up. "auto" asks for none in particular: rdma and shm are used where
 * they are there. rdma and shm are only set up with a control port and
 * peers (nothing else could use them), so only then are they missed.
 */
static void smcd_check_transports(struct smcd *d)
{
	const struct cfg *cfg = d->cfg;
	bool lgrs = cfg->has_control && cfg->n_peers;
	unsigned i;

	d->transports_down[0] = '\0';
	for (i = 0; i < d->workers.n && lgrs; i++) {
		const struct smc_net *net = &d->workers.workers[i].proxy.smc;
		const struct smc_transport_ops *t;
		unsigned k;

		smc_transport_foreach(t, k) {
			const char *why = net->tp_off[smc_transport_slot(t)];

			if (!smc_transport_named(cfg, t) || (net->lgr_transports & t->clc_bit))
				continue;
			snprintf(d->transports_down, sizeof(d->transports_down),
				 "transport %s is off: %s", t->name, why[0] ? why : "not set up");
			return;
		}
	}
}

/*
 * intercept ebpf: the programs attached once the listeners are bound (a
 * connect redirected now waits in their backlog until the workers run).
 * No fallback to iptables: a mode asked for and refused stops the daemon.
 */
static int smcd_intercept_open(struct smcd *d, const struct cfg *cfg)
{
	char errbuf[512], a4[ADDR_STRLEN] = "", a6[ADDR_STRLEN] = "";
	const struct intercept *ic = &d->intercept;
	int err;

	if (cfg->intercept.mode != CFG_INTERCEPT_EBPF)
		return 0;
	err = intercept_open(&d->intercept, cfg, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	d->intercept_on = true;
	worker_pool_set_intercept(&d->workers, &d->intercept);
	if (ic->has_to4)
		addr_format((const struct sockaddr *)&ic->to4, a4, sizeof(a4));
	if (ic->has_to6)
		addr_format((const struct sockaddr *)&ic->to6, a6, sizeof(a6));
	log_info("intercept ebpf: connect4, connect6, sock_ops, getpeername4 and getpeername6 "
		 "attached to %s; TCP connects to %zu prefix%s go to %s%s%s", ic->cgroup,
		 cfg->intercept.n_dests, cfg->intercept.n_dests == 1 ? "" : "es", a4,
		 ic->has_to4 && ic->has_to6 ? " and " : "", a6);
	if (ic->bypass.on)
		log_info("intercept ebpf: bypass of the local hop on (self-test passed%s; sk_msg on "
			 "the sockets map, byp_sockops on %s); credit %llu bytes a flow",
			 ic->bypass.skip_blocking_read ? ", its blocking-read check skipped as "
			 "debug.bypass_skip_blocking_read asks: blocking readers may see EAGAIN" : "",
			 ic->self_cgroup, (unsigned long long)ic->bypass.credit);
	else if (cfg->intercept.bypass)
		log_warn("intercept ebpf: bypass of the local hop off, refused by its %s; "
			 "flows take the loopback TCP hop", ic->bypass.why);
	return 0;
}

/*
 * Whether the flows peers open reach servers here from the clients' own
 * addresses (route_back.h): probed at start and at each reload, told once
 * and again only when the answer changes. Without peers nobody opens
 * flows here, and a first run on the defaults hears nothing of it.
 */
static void smcd_probe_client_route(struct smcd *d)
{
	static const int families[2] = { AF_INET, AF_INET6 };
	const struct cfg *cfg = d->cfg;
	bool wanted = cfg->client_address && cfg->has_control && cfg->n_peers;
	unsigned bits = 0;
	int i;

	for (i = 0; i < 2; i++) {
		enum route_back rb = wanted ? route_back_probe(families[i], cfg->client_mark) : RB_OK;
		const char *fam = i ? "IPv6" : "IPv4";

		if (wanted && rb == RB_OK)
			bits |= ROUTE_BACK_FAMILY(families[i]);
		if (!wanted || (int)rb == d->client_route[i]) {
			d->client_route[i] = wanted ? (int)rb : -1;
			continue;
		}
		d->client_route[i] = (int)rb;
		if (rb == RB_OK)
			log_info("%s: servers here see the clients' own addresses (client_mark %u)",
				 fam, (unsigned)cfg->client_mark);
		else if (rb != RB_NO_FAMILY)
			log_notice("%s: servers here see this host's address, not the clients': %s"
				   " (smcproxy-iptables route add sets it up; smcproxyd(8), \"The"
				   " client's address\")", fam, route_back_why(rb));
	}
	route_back_set(bits);
}

/*
 * A "mark" or "client_mark" with bits that kube-proxy or a CNI may own
 * (CFG_MARK_FOREIGN; smcproxyd(8), MARKS): said at start, as both take a
 * restart. The daemon runs all the same: on a host without them the bits
 * are free, and a mark kept from an older default still matches the
 * rules written for it.
 */
static void smcd_check_marks(const struct cfg *cfg)
{
	const struct {
		const char *key;
		uint32_t mark;
	} m[2] = { { "mark", cfg->mark }, { "client_mark", cfg->client_mark } };
	int i;

	for (i = 0; i < 2; i++) {
		uint32_t bits = m[i].mark & CFG_MARK_FOREIGN;

		if (!bits || (i == 1 && !cfg->client_address))
			continue;
		log_notice("\"%s\" 0x%x has the mark bits 0x%x, which kube-proxy or a CNI may own%s"
			   " (smcproxyd(8), MARKS)", m[i].key, (unsigned)m[i].mark, (unsigned)bits,
			   m[i].mark & CFG_MARK_KUBE_MASQ ?
			   ": on a Kubernetes node kube-proxy masquerades every connection marked 0x4000" : "");
	}
}

int smcd_init(struct smcd *d, struct cfg *cfg, const char *cfg_path, int ready_fd)
{
	int inherited[64];
	size_t n_inherited;
	char errbuf[512] = "";
	uv_signal_t *sigs[] = { &d->sig_term, &d->sig_int, &d->sig_hup };
	int signums[] = { SIGTERM, SIGINT, SIGHUP };
	const struct proxy *p0;
	unsigned n_workers;
	int err, i;

	*d = (struct smcd){ .cfg = cfg, .ready_fd = ready_fd, .client_route = { -1, -1 } };
	if (cfg_path) {
		d->cfg_path = strdup(cfg_path);
		if (!d->cfg_path)
			return -ENOMEM;
	}
	err = uv_loop_init(&d->loop);
	if (err) {
		log_err("event loop: %s", uv_strerror(err));
		return err;
	}
	d->start_ms = uv_now(&d->loop);
	n_inherited = smcd_inherited_listeners(inherited, 64);
	n_workers = cfg->workers ? cfg->workers : worker_default_count();
	err = worker_pool_init(&d->workers, &d->loop, n_workers, cfg, inherited, n_inherited,
			       errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	d->workers.data = d;
	d->workers.on_notify = smcd_on_workers_notify;
	err = ctl_pools_init(&d->pools, d->workers.n);
	if (err) {
		log_err("the stats tables: %s; exiting", strerror(-err));
		return err;
	}
	/* Every worker listens on the same addresses: worker 0 speaks for all. */
	p0 = &d->workers.workers[0].proxy;
	if (p0->n_adopt_unused)
		log_warn("socket activation: %zu passed sockets match no \"listen\" address;"
			 " closed them", p0->n_adopt_unused);
	if (n_inherited)
		log_info("socket activation: using %zu of %zu passed sockets%s",
			 p0->n_adopted, n_inherited,
			 n_workers > 1 ? ", shared by every worker" : "");
	for (size_t l = 0; l < cfg->n_listen; l++) {
		char a[ADDR_STRLEN];

		if (proxy_listen_skipped(p0, l))
			log_warn("not listening on %s: IPv6 is not available on this host",
				 addr_format((const struct sockaddr *)&cfg->listen[l].ss,
					     a, sizeof(a)));
	}
	err = smcd_intercept_open(d, cfg);
	if (err)
		return err;
	err = ctl_server_init(&d->ctl, &d->loop, cfg->stats.socket, cfg->stats.mode,
			      smcd_ctl_handle, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	d->ctl.data = d;
	smcd_check_transports(d);
	smcd_check_marks(cfg);
	smcd_probe_client_route(d);
	err = metrics_init(&d->metrics, &d->loop, &cfg->metrics.listen, cfg->metrics.max_clients,
			   cfg->metrics.timeout_ms, &smcd_metrics_ops, d, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}

	for (i = 0; i < 3; i++) {
		uv_signal_init(&d->loop, sigs[i]);
		sigs[i]->data = d;
		uv_signal_start(sigs[i], smcd_on_signal, signums[i]);
	}
	uv_timer_init(&d->loop, &d->housekeeping);
	uv_timer_init(&d->loop, &d->drain_timer);
	d->housekeeping.data = d->drain_timer.data = d;
	d->open_handles = 5;

	/* Half the watchdog interval leaves room for a slow tick. */
	if (sd_watchdog_enabled(0, &d->watchdog_usec) <= 0)
		d->watchdog_usec = 0;
	d->housekeeping_ms = STATUS_EVERY_MS;
	if (d->watchdog_usec && d->watchdog_usec / 2000 < d->housekeeping_ms)
		d->housekeeping_ms = d->watchdog_usec / 2000 ? d->watchdog_usec / 2000 : 1;
	return 0;
}

int smcd_run(struct smcd *d)
{
	const struct proxy *p0 = &d->workers.workers[0].proxy;
	uint64_t beat;
	char a[ADDR_STRLEN];
	size_t i;
	int err;

	for (i = 0; i < p0->n_listeners; i++)
		log_info("listening on %s%s",
			 addr_format((const struct sockaddr *)&p0->listeners[i].addr,
				     a, sizeof(a)),
			 p0->listeners[i].transparent ? " (tproxy)" : "");
	/* With the watchdog, each worker's heartbeat runs four times per
	 * check, so one late turn of its loop does not look like a stall. */
	beat = d->watchdog_usec ? (d->housekeeping_ms / 4 ? d->housekeeping_ms / 4 : 1) : 0;
	if (metrics_enabled(&d->metrics) && (!beat || beat > READY_BEAT_MS))
		beat = READY_BEAT_MS;
	err = worker_pool_start(&d->workers, beat);
	if (err) {
		log_err("cannot start the worker threads: %s; exiting", strerror(-err));
		if (d->ready_fd >= 0) {
			(void)!write(d->ready_fd, (char[]){ 1 }, 1);
			close(d->ready_fd);
			d->ready_fd = -1;
		}
		smcd_finish(d);
		uv_run(&d->loop, UV_RUN_DEFAULT);
		uv_loop_close(&d->loop);
		ctl_pools_close(&d->pools);
		if (d->intercept_on)
			intercept_close(&d->intercept);
		cfg_free(d->cfg);
		free(d->cfg_path);
		return 1;
	}
	log_info("ready: %u worker%s (config %s, stats socket %s)", d->workers.n,
		 d->workers.n == 1 ? "" : "s", d->cfg->source, d->cfg->stats.socket);
	if (metrics_enabled(&d->metrics)) {
		log_info("metrics: http://%s/metrics and /ready", d->metrics.addr);
		if (d->transports_down[0])
			log_warn("/ready answers 503: %s", d->transports_down);
	}
	sd_notify(0, "READY=1");
	smcd_notify_status(d);
	uv_update_time(&d->loop);
	uv_timer_start(&d->housekeeping, smcd_on_housekeeping, d->housekeeping_ms,
		       d->housekeeping_ms);
	if (d->ready_fd >= 0) {
		(void)!write(d->ready_fd, "", 1);
		close(d->ready_fd);
		d->ready_fd = -1;
	}
	uv_run(&d->loop, UV_RUN_DEFAULT);
	/* Drain what closing left behind, then the loop must be empty. */
	uv_run(&d->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&d->loop) == UV_EBUSY)
		log_warn("event loop still had handles at exit");
	ctl_pools_close(&d->pools);	/* the workers are joined */
	/* The workers are joined: nothing reads the maps any more. */
	if (d->intercept_on)
		intercept_close(&d->intercept);
	cfg_free(d->cfg);
	d->cfg = NULL;
	free(d->cfg_path);
	log_info("stopped");
	return 0;
}
