/* SPDX-License-Identifier: MIT */
/*
 * The conntrack question of the loop check (proxy/core/origdst.c): the
 * CT_GET request by reply tuple, and the reading of an answer, which is
 * bounds-checked as if anyone had written it: short, lying lengths,
 * missing attributes and netlink errors give an error, never a read past
 * the buffer. (t_origsrc_nat asks a real kernel.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include <cmocka.h>

#include "core/addr.h"
#include "core/origdst.h"

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
	return ss;
}

/*
 * A kernel's answer made from our own request: the same tuple, but as
 * the entry's original one (CT_NEW, CTA_TUPLE_ORIG), so that the answer
 * names src as the original source.
 */
static size_t answer_from(uint8_t *buf, size_t size, const struct sockaddr_storage *src,
			  const struct sockaddr_storage *dst)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(void *)buf;
	struct nlattr *tuple;
	size_t n = origdst__ct_request(buf, size, (const struct sockaddr *)src,
				       (const struct sockaddr *)dst, 7);

	assert_true(n > NLMSG_SPACE(sizeof(struct nfgenmsg)));
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
	tuple = (struct nlattr *)(void *)(buf + NLMSG_SPACE(sizeof(struct nfgenmsg)));
	assert_int_equal(tuple->nla_type & NLA_TYPE_MASK, CTA_TUPLE_REPLY);
	tuple->nla_type = CTA_TUPLE_ORIG | NLA_F_NESTED;
	return n;
}

static void test_request(void **state)
{
	struct sockaddr_storage l = v4("127.0.0.1", 7001), p = v4("10.0.0.1", 42028);
	uint8_t buf[512];
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)(const void *)buf;
	const struct nfgenmsg *nfg = NLMSG_DATA(nlh);
	const struct nlattr *a = (const void *)(buf + NLMSG_SPACE(sizeof(*nfg)));
	size_t n = origdst__ct_request(buf, sizeof(buf), (struct sockaddr *)&l,
				       (struct sockaddr *)&p, 9);

	/* header, family, then the reply tuple: listener -> client */
	assert_true(n > 0 && n == nlh->nlmsg_len);
	assert_int_equal(nlh->nlmsg_type, (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET);
	assert_int_equal(nlh->nlmsg_flags, NLM_F_REQUEST);
	assert_int_equal(nlh->nlmsg_seq, 9);
	assert_int_equal(nfg->nfgen_family, AF_INET);
	assert_int_equal(a->nla_type, CTA_TUPLE_REPLY | NLA_F_NESTED);
	assert_int_equal(a->nla_len, n - NLMSG_SPACE(sizeof(*nfg)));
	/* CTA_TUPLE_IP { V4_SRC 127.0.0.1, V4_DST 10.0.0.1 } */
	assert_int_equal(a[1].nla_type, CTA_TUPLE_IP | NLA_F_NESTED);
	assert_int_equal(a[2].nla_type, CTA_IP_V4_SRC);
	assert_memory_equal((const uint8_t *)&a[3], "\x7f\x00\x00\x01", 4);
	assert_int_equal(a[4].nla_type, CTA_IP_V4_DST);
	assert_memory_equal((const uint8_t *)&a[5], "\x0a\x00\x00\x01", 4);

	/* Mixed families, an unknown one, or no room: no request. */
	p = v6("::1", 1);
	assert_int_equal(origdst__ct_request(buf, sizeof(buf), (struct sockaddr *)&l,
					     (struct sockaddr *)&p, 1), 0);
	p = v4("10.0.0.1", 1);
	assert_int_equal(origdst__ct_request(buf, 40, (struct sockaddr *)&l,
					     (struct sockaddr *)&p, 1), 0);
	l.ss_family = AF_UNIX;
	p.ss_family = AF_UNIX;
	assert_int_equal(origdst__ct_request(buf, sizeof(buf), (struct sockaddr *)&l,
					     (struct sockaddr *)&p, 1), 0);
}

static void test_answer_round_trip(void **state)
{
	struct sockaddr_storage src = v4("10.0.0.1", 42272), dst = v4("10.0.0.2", 6401), got;
	uint8_t buf[512];
	size_t n = answer_from(buf, sizeof(buf), &src, &dst);

	assert_int_equal(origdst__ct_answer(buf, n, AF_INET, &got), 0);
	assert_true(addr_equal((struct sockaddr *)&got, (struct sockaddr *)&src));

	src = v6("fd00::1", 40000);
	dst = v6("fd00::2", 80);
	n = answer_from(buf, sizeof(buf), &src, &dst);
	assert_int_equal(origdst__ct_answer(buf, n, AF_INET6, &got), 0);
	assert_true(addr_equal((struct sockaddr *)&got, (struct sockaddr *)&src));
	/* An IPv6 answer read as IPv4 has no V4_SRC. */
	assert_int_equal(origdst__ct_answer(buf, n, AF_INET, &got), -EPROTO);
}

static void test_answer_errors(void **state)
{
	struct sockaddr_storage src = v4("10.0.0.1", 42272), dst = v4("10.0.0.2", 6401), got;
	uint8_t buf[512], copy[512];
	struct nlmsghdr *nlh = (struct nlmsghdr *)(void *)copy;
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	struct nlattr *tuple = (struct nlattr *)(void *)(copy + NLMSG_SPACE(sizeof(struct nfgenmsg)));
	size_t n = answer_from(buf, sizeof(buf), &src, &dst), cut;

	/* Every truncation of a good answer, its length cut with it or not. */
	for (cut = 0; cut < n; cut++) {
		memcpy(copy, buf, n);
		assert_int_equal(origdst__ct_answer(copy, cut, AF_INET, &got), -EPROTO);
		if (cut >= NLMSG_HDRLEN) {
			nlh->nlmsg_len = (uint32_t)cut;
			assert_int_equal(origdst__ct_answer(copy, cut, AF_INET, &got), -EPROTO);
		}
	}
	/* A nest that claims more than the message holds. */
	memcpy(copy, buf, n);
	tuple->nla_len = (uint16_t)(n + 4);
	assert_int_equal(origdst__ct_answer(copy, n, AF_INET, &got), -EPROTO);
	/* An attribute length below its header. */
	memcpy(copy, buf, n);
	tuple[1].nla_len = 2;
	assert_int_equal(origdst__ct_answer(copy, n, AF_INET, &got), -EPROTO);
	/* Another message type. */
	memcpy(copy, buf, n);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE;
	assert_int_equal(origdst__ct_answer(copy, n, AF_INET, &got), -EPROTO);
	/* The kernel's "no such entry", and a lying error of 0. */
	memset(copy, 0, sizeof(copy));
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	e->error = -ENOENT;
	assert_int_equal(origdst__ct_answer(copy, nlh->nlmsg_len, AF_INET, &got), -ENOENT);
	e->error = 0;
	assert_int_equal(origdst__ct_answer(copy, nlh->nlmsg_len, AF_INET, &got), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_answer_round_trip),
		cmocka_unit_test(test_answer_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
