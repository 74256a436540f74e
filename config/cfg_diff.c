/* SPDX-License-Identifier: MIT */
/*
 * The reload diff: which keys differ between the running config and a new
 * one, split into those a running daemon applies at once ("live") and those
 * that take effect only after a restart. The split is the live flag of each
 * key in cfg_schema.c; a key is live when changing it touches no socket,
 * thread or registered memory that already exists (timeouts, log level,
 * peer policy for new handshakes, autocork for new sends, the stats socket's
 * mode, which can be chmod-ed in place).
 */
#include <stdio.h>
#include <string.h>

#include "cfg.h"
#include "cfg-int.h"

#define ELLIPSIS "..."

/*
 * Appends key to the comma-separated list in a buffer of size bytes. It
 * always leaves room for ",..." so that, once a key no longer fits, the
 * list ends with "..." instead of a cut-off name.
 */
void cfg__list_add(char *list, size_t size, const char *key)
{
	size_t len = strlen(list), n = strlen(key) + (len ? 1 : 0);

	if (size <= strlen("," ELLIPSIS))
		return;
	if (len >= strlen(ELLIPSIS) && strcmp(list + len - strlen(ELLIPSIS), ELLIPSIS) == 0)
		return;
	if (len + n + strlen("," ELLIPSIS) < size) {
		if (len)
			list[len++] = ',';
		strcpy(list + len, key);
	} else {
		strcpy(list + len, len ? "," ELLIPSIS : ELLIPSIS);
	}
}

static const void *fld(const struct cfg *cfg, const struct cfg__key *k)
{
	return (const char *)cfg + k->off;
}

static bool str_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool addrs_equal(const struct cfg_addr *a, size_t na, const struct cfg_addr *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++) {
		if (!cfg__addr_equal(&a[i], &b[i]))
			return false;
	}
	return true;
}

static bool peers_equal(const struct cfg *a, const struct cfg *b)
{
	size_t i, j;

	if (a->n_peers != b->n_peers)
		return false;
	for (i = 0; i < a->n_peers; i++) {
		if (!cfg__prefix_equal(&a->peers[i].prefix, &b->peers[i].prefix) ||
		    a->peers[i].control_port != b->peers[i].control_port ||
		    a->peers[i].n_allow != b->peers[i].n_allow ||
		    a->peers[i].via_family != b->peers[i].via_family ||
		    memcmp(a->peers[i].via_addr, b->peers[i].via_addr, 16) != 0)
			return false;
		for (j = 0; j < a->peers[i].n_allow; j++)
			if (!cfg__allow_equal(&a->peers[i].allow[j], &b->peers[i].allow[j]))
				return false;
	}
	return true;
}

static bool prefixes_equal(const struct cfg_prefix *a, size_t na, const struct cfg_prefix *b,
			   size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!cfg__prefix_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* Whether key k (not a section) has the same value in a and b. */
static bool same(const struct cfg__key *k, const struct cfg *a, const struct cfg *b)
{
	switch (k->kind) {
	case CFG__SECTION:
		return true;
	case CFG__UINT:
		return *(const unsigned *)fld(a, k) == *(const unsigned *)fld(b, k);
	case CFG__U32:
		return *(const uint32_t *)fld(a, k) == *(const uint32_t *)fld(b, k);
	case CFG__SIZE:
	case CFG__DURATION:
		return *(const uint64_t *)fld(a, k) == *(const uint64_t *)fld(b, k);
	case CFG__BOOL:
		return *(const bool *)fld(a, k) == *(const bool *)fld(b, k);
	case CFG__PATH:
	case CFG__USER:
		return str_equal(*(char *const *)fld(a, k), *(char *const *)fld(b, k));
	case CFG__MODE:
		return *(const mode_t *)fld(a, k) == *(const mode_t *)fld(b, k);
	case CFG__TRANSPORT:
		return *(const enum cfg_transport *)fld(a, k) ==
		       *(const enum cfg_transport *)fld(b, k);
	case CFG__LOG_LEVEL:
		return *(const int *)fld(a, k) == *(const int *)fld(b, k);
	case CFG__LISTEN:
		return addrs_equal(a->listen, a->n_listen, b->listen, b->n_listen);
	case CFG__TPROXY:
		return addrs_equal(a->tproxy, a->n_tproxy, b->tproxy, b->n_tproxy);
	case CFG__CONTROL:
		return a->has_control == b->has_control &&
		       (!a->has_control || cfg__addr_equal(&a->control, &b->control));
	case CFG__PEERS:
		return peers_equal(a, b);
	case CFG__SERVE:
		return prefixes_equal(a->serve, a->n_serve, b->serve, b->n_serve);
	case CFG__INTERCEPT:
		return a->intercept.mode == b->intercept.mode;
	case CFG__PREFIXES:
		return prefixes_equal(a->intercept.dests, a->intercept.n_dests,
				      b->intercept.dests, b->intercept.n_dests);
	case CFG__PORTS:
		if (a->intercept.n_ports != b->intercept.n_ports)
			return false;
		for (size_t i = 0; i < a->intercept.n_ports; i++)
			if (!cfg__allow_equal(&a->intercept.ports[i], &b->intercept.ports[i]))
				return false;
		return true;
	case CFG__ADDR: {
		const struct cfg_addr *x = fld(a, k), *y = fld(b, k);

		return x->len == y->len && (!x->len || cfg__addr_equal(x, y));
	}
	}
	return false;
}

static void diff_keys(const struct cfg__key *keys, const char *section,
		      const struct cfg *a, const struct cfg *b, struct cfg_diff *diff)
{
	const struct cfg__key *k;
	char path[128];

	for (k = keys; k->name; k++) {
		if (k->kind == CFG__SECTION) {
			diff_keys(k->sub, k->name, a, b, diff);
			continue;
		}
		if (same(k, a, b))
			continue;
		if (section)
			snprintf(path, sizeof(path), "%s.%s", section, k->name);
		else
			snprintf(path, sizeof(path), "%s", k->name);
		if (k->live)
			cfg__list_add(diff->live, sizeof(diff->live), path);
		else
			cfg__list_add(diff->restart, sizeof(diff->restart), path);
	}
}

/* Both configs must be loaded ones; with either NULL, nothing differs. */
void cfg_diff(const struct cfg *old, const struct cfg *new, struct cfg_diff *diff)
{
	diff->live[0] = '\0';
	diff->restart[0] = '\0';
	if (!old || !new)
		return;
	diff_keys(cfg__schema, NULL, old, new, diff);
}
