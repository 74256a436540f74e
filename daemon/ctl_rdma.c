/* SPDX-License-Identifier: MIT */
/*
 * The rdma views of the control socket (ctl_rdma.h). They run on the
 * worker's thread: the CQ counters are plain integers only that thread
 * writes, and a link group may go away between two turns of its loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl_lgr.h"
#include "ctl_rdma.h"
#include "transport/rdma/cq-t.h"
#include "smc/lgr-t.h"
#include "proxy-t.h"
#include "transport/rdma/rdma.h"

/*
 * A fixed-size text field of the transport as a JSON string: at most len
 * bytes, up to its NUL, with anything but printable ASCII as '?'. Device
 * names and gids are ASCII; a stray byte must not make json_pack() fail
 * and lose the whole entry.
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

void ctl_rdma_link_fields(json_t *obj, const struct link *lnk)
{
	struct rdma_link_info info;

	memset(&info, 0, sizeof(info));
	if (!obj || rdma_link_info(lnk, &info) < 0)
		return;
	json_object_set_new(obj, "device", ascii_string(info.device, sizeof(info.device)));
	json_object_set_new(obj, "port", json_integer(info.port));
	json_object_set_new(obj, "gid", ascii_string(info.gid, sizeof(info.gid)));
	json_object_set_new(obj, "qp_num", json_integer(info.qp_num));
	json_object_set_new(obj, "peer_qp_num", json_integer(info.peer_qp_num));
	json_object_set_new(obj, "max_inline", json_integer(info.max_inline));
	json_object_set_new(obj, "wr_in_flight", json_integer(info.wr_in_flight));
	json_object_set_new(obj, "sq_depth", json_integer(info.sq_depth));
	json_object_set_new(obj, "cq", json_integer(info.cq));
	json_object_set_new(obj, "relaxed_ordering", json_boolean(info.relaxed_ordering));
}

json_t *ctl_cq_json(struct proxy *p)
{
	const struct cq_pool *pool = rdma_cq_pool(&p->smc);
	json_t *arr = json_array();
	unsigned i;

	if (!arr || !pool)
		return arr;
	for (i = 0; i < pool->n && i < CQ_POOL_MAX; i++) {
		const struct cq *cq = &pool->cqs[i];

		json_array_append_new(arr, json_pack(
			"{s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:b}",
			"worker", (int)p->worker,
			"cq", (int)i,
			"polls", (json_int_t)cq->st.polls,
			"completions", (json_int_t)cq->st.completions,
			"empty_polls", (json_int_t)cq->st.empty_polls,
			"rearms", (json_int_t)cq->st.rearms,
			"events", (json_int_t)cq->st.events,
			"rearm_failures", (json_int_t)cq->st.rearm_failures,
			"links", (int)cq->n_links,
			"cqe", (int)cq->cqe,
			"moderated", (int)cq->moderated));
	}
	return arr;
}

int ctl_rdma_fail_link(struct proxy *p, const char *prefix, unsigned link,
		       char id[17], char *errbuf, size_t errlen)
{
	struct rdma_link_info info;
	struct lgr *lgr = NULL;
	struct link *lnk;
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
	err = rdma_link_info(lnk, &info);
	if (err == -ENOTSUP || err == -EOPNOTSUPP) {
		snprintf(errbuf, errlen, "link %u of link group %s: link is not an rdma link "
			 "(transport %s)", link, id, lgr->ops ? lgr->ops->name : "-");
		return -ENOTSUP;
	}
	if (lnk->state != LINK_ACTIVE) {
		snprintf(errbuf, errlen, "link %u of link group %s is down already", link, id);
		return -ENOLINK;
	}
	err = err < 0 ? err : rdma_link_fail(lnk);
	if (err == -ENOTCONN) {
		/* The link's queue pair is gone or not connected yet. */
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
