/* SPDX-License-Identifier: MIT */
/*
 * Lifecycle of the daemon: start-up, systemd notification and watchdog,
 * SIGHUP reload, SIGTERM drain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "addr.h"
#include "flow-t.h"
#include "log.h"
#include "smcd.h"

#define STATUS_EVERY_MS 5000

static void smcd_shutdown(struct smcd *d);

static void smcd_on_handle_closed(uv_handle_t *h)
{
	struct smcd *d = h->data;

	d->open_handles--;
}

static void smcd_notify_status(struct smcd *d)
{
	const struct proxy_stats *st = &d->proxy.stats;

	sd_notifyf(0, "STATUS=%s%llu flows active, %llu accepted, %llu fallbacks to tcp",
		   d->stopping ? "draining: " : "",
		   (unsigned long long)d->proxy.n_flows,
		   (unsigned long long)st->flows_accepted,
		   (unsigned long long)st->flows_closed[FLOW_MODE_TCP] +
			   st->flows_active[FLOW_MODE_TCP]);
}

static void smcd_on_housekeeping(uv_timer_t *t)
{
	struct smcd *d = t->data;

	if (d->watchdog_usec)
		sd_notify(0, "WATCHDOG=1");
	smcd_notify_status(d);
}

/* The daemon's log lines for what proxy/ reports. */
static void smcd_on_proxy_event(struct proxy *p, enum proxy_event ev,
				const struct flow *f, int err)
{
	struct smcd *d = p->data;
	uint64_t now = uv_now(p->loop);
	char a[ADDR_STRLEN], b[ADDR_STRLEN];

	switch (ev) {
	case PROXY_EV_ACCEPT_PAUSED:
		log_warn("accept: %s; pausing accepts, retrying with back-off up to 1 s",
			 strerror(-err));
		break;
	case PROXY_EV_ACCEPT_RESUMED:
		log_info("accepting again after %llu pauses in all",
			 (unsigned long long)p->stats.accept_pauses);
		break;
	case PROXY_EV_ACCEPT_ERROR:
		if (log_ratelimit_ok(&d->rl_accept, now))
			log_warn("accept: %s; going on", strerror(-err));
		break;
	case PROXY_EV_LOOP_REFUSED:
		if (!log_ratelimit_ok(&d->rl_refused, now))
			break;
		log_notice("refused connection from %s: %s",
			   addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
			   err == -ELOOP ? "its destination is our own listener" :
			   err == -ENOENT ? "it was not redirected (no original destination)" :
			   err == -EHOSTUNREACH ? "it is our own outbound connection, redirected "
			   "back: the redirect rule must skip packets with our mark" :
			   strerror(-err));
		break;
	case PROXY_EV_FLOW_SETUP_FAILED:
		if (!log_ratelimit_ok(&d->rl_setup, now))
			break;
		log_warn("flow %s -> %s: %s; reset the client",
			 addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
			 addr_format((const struct sockaddr *)&f->dest, b, sizeof(b)),
			 strerror(-err));
		break;
	case PROXY_EV_FLOW_ENDED:
		if (log_get_level() >= LOG_DEBUG)
			log_debug("flow %llu %s -> %s ended%s%s: %llu bytes in, %llu out",
				  (unsigned long long)f->id,
				  addr_format((const struct sockaddr *)&f->client, a, sizeof(a)),
				  addr_format((const struct sockaddr *)&f->dest, b, sizeof(b)),
				  err ? ": " : "", err ? strerror(-err) : "",
				  (unsigned long long)f->relay.dir[RELAY_CLIENT].bytes,
				  (unsigned long long)f->relay.dir[RELAY_SERVER].bytes);
		break;
	}
}

static void smcd_finish(struct smcd *d);

static void smcd_on_proxy_idle(struct proxy *p)
{
	struct smcd *d = p->data;

	if (d->stopping)
		smcd_finish(d);
}

static const struct proxy_ops smcd_proxy_ops = {
	.event = smcd_on_proxy_event,
	.idle = smcd_on_proxy_idle,
};

int smcd_reload(struct smcd *d, char **applied, char **restart, char **err)
{
	struct cfg_errors errs = { 0 };
	struct cfg_diff diff;
	struct cfg *cfg;
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
	proxy_set_cfg(&d->proxy, cfg);
	if (d->ctl.path)
		ctl_server_set_mode(&d->ctl, cfg->stats.mode);
	cfg_free(d->cfg);
	d->cfg = cfg;
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

/* Everything stops; the loop ends when the last handle has closed. */
static void smcd_finish(struct smcd *d)
{
	uv_timer_stop(&d->drain_timer);
	proxy_close(&d->proxy, NULL);
	ctl_server_close(&d->ctl, NULL);
	uv_close((uv_handle_t *)&d->sig_term, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->sig_int, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->sig_hup, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->housekeeping, smcd_on_handle_closed);
	uv_close((uv_handle_t *)&d->drain_timer, smcd_on_handle_closed);
}

static void smcd_on_drain_timeout(uv_timer_t *t)
{
	struct smcd *d = t->data;

	log_warn("drain timeout: resetting %llu remaining flows",
		 (unsigned long long)d->proxy.n_flows);
	proxy_abort_flows(&d->proxy);
}

static void smcd_shutdown(struct smcd *d)
{
	if (d->stopping) {
		log_warn("second stop signal: resetting %llu flows now",
			 (unsigned long long)d->proxy.n_flows);
		proxy_abort_flows(&d->proxy);
		return;
	}
	d->stopping = true;
	sd_notify(0, "STOPPING=1");
	proxy_stop_accepting(&d->proxy);
	if (d->proxy.n_flows == 0) {
		log_info("stopping");
		smcd_finish(d);
		return;
	}
	log_info("stopping: draining %llu flows for up to %llu ms",
		 (unsigned long long)d->proxy.n_flows,
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

int smcd_init(struct smcd *d, struct cfg *cfg, const char *cfg_path, int ready_fd)
{
	int inherited[64];
	size_t n_inherited;
	char errbuf[512] = "";
	uv_signal_t *sigs[] = { &d->sig_term, &d->sig_int, &d->sig_hup };
	int signums[] = { SIGTERM, SIGINT, SIGHUP };
	uint64_t every;
	int err, i;

	*d = (struct smcd){ .cfg = cfg, .ready_fd = ready_fd };
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
	proxy_adopt_listeners(&d->proxy, inherited, n_inherited);
	err = proxy_init(&d->proxy, &d->loop, cfg, &smcd_proxy_ops, errbuf, sizeof(errbuf));
	if (d->proxy.n_adopt_unused)
		log_warn("socket activation: %zu passed sockets match no \"listen\" address;"
			 " closed them", d->proxy.n_adopt_unused);
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	if (n_inherited)
		log_info("socket activation: using %zu of %zu passed sockets",
			 d->proxy.n_adopted, n_inherited);
	for (size_t i = 0; i < cfg->n_listen && i < 64; i++) {
		char a[ADDR_STRLEN];

		if (d->proxy.listen_skipped & (1ull << i))
			log_warn("not listening on %s: IPv6 is not available on this host",
				 addr_format((const struct sockaddr *)&cfg->listen[i].ss,
					     a, sizeof(a)));
	}
	d->proxy.data = d;
	err = ctl_server_init(&d->ctl, &d->loop, cfg->stats.socket, cfg->stats.mode,
			      smcd_ctl_handle, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	d->ctl.data = d;

	for (i = 0; i < 3; i++) {
		uv_signal_init(&d->loop, sigs[i]);
		sigs[i]->data = d;
		uv_signal_start(sigs[i], smcd_on_signal, signums[i]);
	}
	uv_timer_init(&d->loop, &d->housekeeping);
	uv_timer_init(&d->loop, &d->drain_timer);
	d->housekeeping.data = d->drain_timer.data = d;
	d->open_handles = 5;

	/* The watchdog is fed from the loop, so a stuck loop gets us
	 * restarted; half the interval leaves room for a slow tick. */
	if (sd_watchdog_enabled(0, &d->watchdog_usec) <= 0)
		d->watchdog_usec = 0;
	every = STATUS_EVERY_MS;
	if (d->watchdog_usec && d->watchdog_usec / 2000 < every)
		every = d->watchdog_usec / 2000 ? d->watchdog_usec / 2000 : 1;
	uv_timer_start(&d->housekeeping, smcd_on_housekeeping, every, every);
	return 0;
}

int smcd_run(struct smcd *d)
{
	char a[ADDR_STRLEN];
	size_t i;

	proxy_start(&d->proxy);
	for (i = 0; i < d->proxy.n_listeners; i++)
		log_info("listening on %s",
			 addr_format((const struct sockaddr *)&d->proxy.listeners[i].addr,
				     a, sizeof(a)));
	log_info("ready (config %s, stats socket %s)", d->cfg->source, d->cfg->stats.socket);
	sd_notify(0, "READY=1");
	smcd_notify_status(d);
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
	cfg_free(d->cfg);
	d->cfg = NULL;
	free(d->cfg_path);
	log_info("stopped");
	return 0;
}
