/* SPDX-License-Identifier: MIT */
/* Configuration: JSON loading (jansson), schema, defaults, validation,
 * reload diff. This module does not log: errors go to struct cfg_errors. */
#ifndef SMCPROXY_CFG_H
#define SMCPROXY_CFG_H

#include "cfg-t.h"

/* The embedded default configuration, as JSON text. */
const char *cfg_default_json(void);

/*
 * Parse and validate. On success returns 0 and stores a new struct cfg in
 * *out. On failure returns -EINVAL (bad content: errs holds one line per
 * problem), -ENOMEM, or -errno from opening/reading the file (errs holds a
 * line naming the file). errs may be NULL. Caller frees errs->text with
 * cfg_errors_free().
 */
int cfg_load_file(const char *path, struct cfg **out, struct cfg_errors *errs);
int cfg_load_string(const char *json, const char *source,
		    struct cfg **out, struct cfg_errors *errs);
/* The embedded default, parsed. */
int cfg_load_default(struct cfg **out, struct cfg_errors *errs);

void cfg_free(struct cfg *cfg);	/* accepts NULL */
void cfg_errors_free(struct cfg_errors *errs);

/* Fills diff with what changes from old to new (see struct cfg_diff). */
void cfg_diff(const struct cfg *old, const struct cfg *new, struct cfg_diff *diff);

/* Unit parsers, exposed for tests and for smcproxyctl.
 * Sizes: "64KiB", "1MiB", "2GiB", "512B", "64KB"(=64000), "64k"... or a plain
 * integer; durations: "250ms", "30s", "5m", "1h", "0"; plain integers are
 * milliseconds. Return 0 or -EINVAL / -ERANGE. */
int cfg_parse_size(const char *s, uint64_t *out);
int cfg_parse_duration(const char *s, uint64_t *out_ms);
int cfg_parse_addr(const char *s, struct cfg_addr *out);
int cfg_parse_prefix(const char *s, struct cfg_prefix *out);

const char *cfg_transport_name(enum cfg_transport t);

#endif
