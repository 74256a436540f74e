/* SPDX-License-Identifier: MIT */
/* Logging: journald under systemd, stderr otherwise. Only daemon/ logs. */
#ifndef SMCPROXY_LOG_H
#define SMCPROXY_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

/* Any thread may log. log_open() and log_use_syslog() are called before
 * threads start. */

/* Chooses journald when stderr is the journal stream systemd gave us
 * ($JOURNAL_STREAM names stderr's device and inode). */
void log_open(int level);
/* Detached without journald: stderr is gone, use syslog(3). */
void log_use_syslog(void);
void log_set_level(int level);
int log_get_level(void);
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * For messages that outside events can trigger at will (a local user
 * connecting to the listener in a loop): at most burst per interval, then
 * one line saying how many were dropped. Zero-initialised; several threads
 * may share one.
 */
struct log_ratelimit {
	_Atomic uint64_t state;		/* window start << 16 | lines in it */
	atomic_uint suppressed;
};

/* Whether to log now; now_ms from the caller's event loop. */
bool log_ratelimit_ok(struct log_ratelimit *rl, uint64_t now_ms);

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
