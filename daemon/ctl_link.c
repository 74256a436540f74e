/* SPDX-License-Identifier: MIT */
/*
 * The transports' views of the control socket (ctl_link.h), rendered from
 * the name/value fields each transport reports through its ops. They run
 * on the worker's thread: a transport's counters are plain integers only
 * that thread writes, and a link group may go away between two turns of
 * its loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl_lgr.h"
#include "ctl_link.h"
#include "smc/lgr-t.h"
#include "smc/transport.h"
#include "proxy-t.h"

/*
 * A text field of a transport as a JSON string: at most len bytes, up to
 * its NUL, with anything but printable ASCII as '?'. Device names and gids
 * are ASCII; a stray byte must not make json_pack() fail and lose the
 * whole entry.
 */
static json_t *ascii_string(const char *s, size_t len)
{
	char buf[64];
	size_t i, n = strnlen(s, len);

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	for (i = 0; i < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[n] = '\0';
	return json_string(buf);
}

static void fields_render(json_t *obj, const struct smc_fields *fs)
{
	unsigned i;

	for (i = 0; i < fs->n && i < SMC_FIELDS_MAX; i++) {
		const struct smc_field *f = &fs->f[i];
		json_t *v = NULL;

		switch (f->type) {
		case SMC_FIELD_STR:
			v = ascii_string(f->str, sizeof(f->str));
			break;
		case SMC_FIELD_UINT:
			v = json_integer((json_int_t)f->uint);
			break;
		case SMC_FIELD_BOOL:
			v = json_boolean(f->boolean);
			break;
		}
		json_object_set_new(obj, f->name, v);
	}
}

void ctl_link_fields(json_t *obj, const struct link *lnk)
{
	const struct smc_transport_ops *t = lnk->lgr->ops;
	struct smc_fields fs;

	fs.n = 0;
	if (!obj || !t || !t->link_info || t->link_info(lnk, &fs) < 0)
		return;
	fields_render(obj, &fs);
}

json_t *ctl_pool_json(struct proxy *p, const struct smc_transport_ops *t)
{
	json_t *arr = json_array(), *e;
	struct smc_fields fs;
	unsigned i;

	if (!arr || !t->pool_info)
		return arr;
	for (i = 0; t->pool_info(&p->smc, i, &fs) == 0; i++) {
		e = json_pack("{s:i}", "worker", (int)p->worker);
		if (!e)
			break;
		fields_render(e, &fs);
		json_array_append_new(arr, e);
	}
	return arr;
}

/* "rdma": the transports whose links can fail alone, for the message that
 * refuses a link of another ("not an rdma link"). */
static void fail_link_kinds(char *buf, size_t len)
{
	const struct smc_transport_ops *t;
	size_t off = 0;
	unsigned i;

	buf[0] = '\0';
	smc_transport_foreach(t, i)
		if (t->link_fail && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						off ? " or " : "", t->name);
}

int ctl_link_fail(struct proxy *p, const char *prefix, unsigned link,
		  char id[17], char *errbuf, size_t errlen)
{
	struct smc_fields fs;
	struct lgr *lgr = NULL;
	struct link *lnk;
	char kinds[64];
	unsigned n;
	int err;

	id[0] = '\0';
	n = ctl_lgr_find(p, prefix, &lgr);
	if (n == 0) {
		snprintf(errbuf, errlen, "no active link group with an id starting with %s "
			 "(smcproxyctl links lists them)", prefix);
		return -ENOENT;
	}
	if (n > 1) {
		snprintf(errbuf, errlen, "%u active link groups have ids starting with %s: "
			 "give more digits", n, prefix);
		return -EEXIST;
	}
	ctl_lgr_id(lgr, id);
	if (link >= lgr->n_links) {
		snprintf(errbuf, errlen, "link group %s has no link %u (its links are 0..%u)",
			 id, link, lgr->n_links ? lgr->n_links - 1 : 0);
		return -ERANGE;
	}
	lnk = &lgr->links[link];
	if (!lgr->ops || !lgr->ops->link_fail) {
		fail_link_kinds(kinds, sizeof(kinds));
		snprintf(errbuf, errlen, "link %u of link group %s: link is not an %s link "
			 "(transport %s)", link, id, kinds, lgr->ops ? lgr->ops->name : "-");
		return -ENOTSUP;
	}
	if (lnk->state != LINK_ACTIVE) {
		snprintf(errbuf, errlen, "link %u of link group %s is down already", link, id);
		return -ENOLINK;
	}
	/* A link the transport has no state for (its queue pair gone, or
	 * not connected yet) is not failed again. */
	err = lgr->ops->link_info ? lgr->ops->link_info(lnk, &fs) : 0;
	err = err < 0 ? err : lgr->ops->link_fail(lnk);
	if (err == -ENOTCONN) {
		snprintf(errbuf, errlen, "link %u of link group %s is not connected (going "
			 "down, or still being set up)", link, id);
		return -ENOLINK;
	}
	if (err < 0) {
		snprintf(errbuf, errlen, "link %u of link group %s: cannot fail it: %s",
			 link, id, strerror(-err));
		return err;
	}
	return 0;
}
