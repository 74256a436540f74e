/* SPDX-License-Identifier: MIT */
/*
 * Logging, callable from every thread: the main loop and the workers log
 * at once. The level is an atomic; the destination is chosen before any
 * worker thread starts and does not change afterwards; each message is
 * formatted into a local buffer and written with one call (stdio, syslog(3)
 * and sd_journal_send() each lock or write atomically), so lines of
 * different threads never mix.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "log.h"

static atomic_int log_level = LOG_INFO;
/* Set by log_open() and log_use_syslog(), before threads start. */
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
	atomic_store_explicit(&log_level, level, memory_order_relaxed);
	log_to_journal = stderr_is_journal();
}

void log_set_level(int level)
{
	atomic_store_explicit(&log_level, level, memory_order_relaxed);
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
	return atomic_load_explicit(&log_level, memory_order_relaxed);
}

#define RATELIMIT_INTERVAL_MS	5000
#define RATELIMIT_BURST		10
#define RL_COUNT_BITS		16
#define RL_COUNT_MASK		((1ull << RL_COUNT_BITS) - 1)

/*
 * Lock-free, because the workers share one limiter per kind of message
 * (the burst is the daemon's, not each thread's) and call it on the path
 * of every refused connection. The state packs the start of the window
 * (loop milliseconds, far below 2^48) and the count of lines in it into
 * one 64-bit word, changed with compare-and-swap. Loops read the clock
 * at slightly different times: a now_ms before the window start counts
 * in the current window rather than opening a new one.
 */
bool log_ratelimit_ok(struct log_ratelimit *rl, uint64_t now_ms)
{
	uint64_t old = atomic_load_explicit(&rl->state, memory_order_relaxed), nw;
	unsigned suppressed;

	for (;;) {
		uint64_t start = old >> RL_COUNT_BITS, count = old & RL_COUNT_MASK;

		if (now_ms > start && now_ms - start >= RATELIMIT_INTERVAL_MS) {
			nw = now_ms << RL_COUNT_BITS | 1;
			if (!atomic_compare_exchange_weak_explicit(&rl->state, &old, nw,
								   memory_order_relaxed,
								   memory_order_relaxed))
				continue;
			suppressed = atomic_exchange_explicit(&rl->suppressed, 0,
							      memory_order_relaxed);
			if (suppressed)
				log_msg(LOG_NOTICE, "%u similar messages suppressed in the last %u s",
					suppressed, RATELIMIT_INTERVAL_MS / 1000);
			return true;
		}
		if (count >= RATELIMIT_BURST) {
			atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
			return false;
		}
		if (atomic_compare_exchange_weak_explicit(&rl->state, &old, old + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	}
}

void log_msg(int prio, const char *fmt, ...)
{
	static const char *const names[] = {
		"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug",
	};
	char buf[1024];
	va_list ap;

	if (prio > log_get_level())
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
