/* SPDX-License-Identifier: MIT */
/*
 * Private to config/: the growable text buffer, the position index, the
 * schema table and the unit parsers that explain why they refused a value.
 * Names use the cfg__ prefix: not static, but not part of the module's API.
 */
#ifndef SMCPROXY_CFG_INT_H
#define SMCPROXY_CFG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cfg-t.h"

/* ---- growable NUL-terminated text (cfg_buf.c) ---- */

struct cfg__buf {
	char *s;		/* NULL until the first append */
	size_t len;
	size_t cap;
};

int cfg__buf_add(struct cfg__buf *b, const char *s, size_t n);
int cfg__buf_addf(struct cfg__buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends s, writing control bytes, DEL and bytes that are not valid UTF-8
 * as \xNN, so that the result is one line of valid UTF-8 whatever s holds. */
int cfg__buf_add_clean(struct cfg__buf *b, const char *s, size_t n);
void cfg__buf_truncate(struct cfg__buf *b, size_t len);
void cfg__buf_free(struct cfg__buf *b);

/* Key paths: "links.per_peer", "listen[1]", "peers[0].prefix". A key is
 * written through cfg__buf_add_clean() (an empty key as ""), so the
 * position index and the schema walker build byte-identical paths for the
 * same member. */
int cfg__path_push_key(struct cfg__buf *path, const char *key, size_t n);
int cfg__path_push_index(struct cfg__buf *path, size_t i);

/* ---- position index (cfg_pos.c) ---- */

/*
 * jansson reports positions of syntax errors only, not of the values it
 * returns. So after jansson has accepted a text, cfg_pos scans the same
 * text once and records where each value (and the key naming it) starts.
 * Lines and columns count like jansson's: both from 1, columns in Unicode
 * code points.
 */
struct cfg__pos {
	char *path;
	unsigned key_line, key_col;	/* the member's key; the value for array elements */
	unsigned line, col;		/* the value */
};

struct cfg__pos_index {
	struct cfg__pos *v;
	size_t n;
	size_t cap;
};

/* Values nested deeper than this are not recorded: the schema ends at
 * depth 3 (peers[0].prefix), and keeping deeper paths would only cost
 * memory on hostile input. */
#define CFG__POS_MAX_DEPTH 4

int cfg__pos_index_build(struct cfg__pos_index *idx, const char *text, size_t len);
const struct cfg__pos *cfg__pos_find(const struct cfg__pos_index *idx, const char *path);
void cfg__pos_index_free(struct cfg__pos_index *idx);

/* ---- unit parsers that say why (cfg_units.c) ---- */

/* Like the public cfg_parse_*(), but on failure *why names the problem in
 * a phrase fit for an error line. why may be NULL. */
int cfg__parse_size(const char *s, uint64_t *out, const char **why);
int cfg__parse_duration(const char *s, uint64_t *out_ms, const char **why);
int cfg__parse_addr(const char *s, struct cfg_addr *out, const char **why);
/* Syntax only: host bits may be set; see cfg__prefix_mask(). */
int cfg__parse_prefix(const char *s, struct cfg_prefix *out, const char **why);
/* Stores p with its host bits cleared in masked; true if any were set. */
bool cfg__prefix_mask(const struct cfg_prefix *p, struct cfg_prefix *masked);
/* A peers[].allow element: "6379", "8000-8100", "10.0.0.2:443",
 * "[fd00::2]:8000-8100". Numeric addresses only, ports 1-65535. */
int cfg__parse_allow(const char *s, struct cfg_allow *out, const char **why);
bool cfg__allow_equal(const struct cfg_allow *a, const struct cfg_allow *b);
/* A peers[].via: one numeric address, IPv4 or IPv6 (no brackets, no
 * port, no prefix length), neither unspecified nor multicast. */
int cfg__parse_host(const char *s, int *family, uint8_t addr[16], const char **why);
/* "0660", "660", "0o660": octal digits only, at most 0777. */
int cfg__parse_mode(const char *s, mode_t *out, const char **why);

/* Human forms for messages: "64KiB" when exact, else bytes; "2s", "250ms". */
void cfg__fmt_size(char *buf, size_t n, uint64_t v);
void cfg__fmt_duration(char *buf, size_t n, uint64_t ms);
/* "10.0.0.0/24" */
void cfg__fmt_prefix(char *buf, size_t n, const struct cfg_prefix *p);

bool cfg__addr_equal(const struct cfg_addr *a, const struct cfg_addr *b);
bool cfg__prefix_equal(const struct cfg_prefix *a, const struct cfg_prefix *b);

/* ---- schema (cfg_schema.c) ---- */

enum cfg__kind {
	CFG__SECTION,		/* a nested object; members in sub */
	CFG__UINT,		/* unsigned, integer only */
	CFG__U32,		/* uint32_t, integer only */
	CFG__SIZE,		/* uint64_t bytes: integer or "64KiB" */
	CFG__DURATION,		/* uint64_t ms: integer ms or "30s" */
	CFG__BOOL,		/* bool */
	CFG__PATH,		/* char *, an absolute path */
	CFG__MODE,		/* mode_t: octal string or integer */
	CFG__TRANSPORT,		/* enum cfg_transport */
	CFG__LOG_LEVEL,		/* int, syslog priority */
	CFG__LISTEN,		/* cfg->listen, cfg->n_listen */
	CFG__TPROXY,		/* cfg->tproxy, cfg->n_tproxy: may be empty */
	CFG__CONTROL,		/* cfg->control, cfg->has_control */
	CFG__PEERS,		/* cfg->peers, cfg->n_peers */
	CFG__SERVE,		/* cfg->serve, cfg->n_serve */
	CFG__ADDR,		/* struct cfg_addr; with CFG__F_EMPTY_OK, "" is len 0 */
	CFG__USER,		/* char *, a user name, or "" */
	CFG__INTERCEPT,		/* enum cfg_intercept */
	CFG__PREFIXES,		/* cfg->intercept.dests, .n_dests */
	CFG__PORTS,		/* cfg->intercept.ports, .n_ports */
};

/* Flags of a key. */
#define CFG__F_POW2	0x1	/* a size that must be a power of two */
#define CFG__F_EMPTY_OK	0x2	/* a path or address that may be "" */
#define CFG__F_ZERO_OK	0x4	/* 0 is accepted below min (means "off") */

struct cfg__key {
	const char *name;		/* NULL ends a table */
	enum cfg__kind kind;
	bool live;			/* a reload applies it without a restart */
	unsigned flags;
	size_t off;			/* offset of the field in struct cfg */
	uint64_t min, max;		/* range of numbers, max length of a path,
					 * or max elements of listen and peers */
	const char *def;		/* the default, as JSON text */
	const struct cfg__key *sub;	/* CFG__SECTION: its members */
};

/* The top-level keys. */
extern const struct cfg__key cfg__schema[];

/* ---- reload diff (cfg_diff.c) ---- */

/* Appends key to a comma-separated list in a buffer of size bytes; when it
 * does not fit, the list ends with "..." and takes no more keys. */
void cfg__list_add(char *list, size_t size, const char *key);

#endif
