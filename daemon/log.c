/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int log_level = LOG_INFO;
static bool log_to_journal;
static bool log_to_syslog;

static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_open(int level)
{
	log_level = level;
	log_to_journal = stderr_is_journal();
}

void log_set_level(int level)
{
	log_level = level;
}

void log_use_syslog(void)
{
	if (log_to_journal)
		return;
	openlog("smcproxyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_to_syslog = true;
}

int log_get_level(void)
{
	return log_level;
}

#define RATELIMIT_INTERVAL_MS	5000
#define RATELIMIT_BURST		10

bool log_ratelimit_ok(struct log_ratelimit *rl, uint64_t now_ms)
{
	if (now_ms - rl->window_start_ms >= RATELIMIT_INTERVAL_MS) {
		if (rl->suppressed)
			log_msg(LOG_NOTICE, "%u similar messages suppressed in the last %u s",
				rl->suppressed, RATELIMIT_INTERVAL_MS / 1000);
		rl->window_start_ms = now_ms;
		rl->count = rl->suppressed = 0;
	}
	if (rl->count < RATELIMIT_BURST) {
		rl->count++;
		return true;
	}
	rl->suppressed++;
	return false;
}

void log_msg(int prio, const char *fmt, ...)
{
	static const char *const names[] = {
		"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug",
	};
	char buf[1024];
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_to_syslog)
		syslog(prio, "%s", buf);
	else if (log_to_journal)
		sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", prio,
				"SYSLOG_IDENTIFIER=smcproxyd", NULL);
	else
		fprintf(stderr, "smcproxyd: %s: %s\n", names[prio & 7], buf);
}
