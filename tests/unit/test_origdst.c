/* SPDX-License-Identifier: MIT */
/*
 * The conntrack question of the loop check (proxy/core/origdst.c): the
 * CT_GET request by reply tuple, and the reading of an answer, which is
 * bounds-checked as if anyone had written it: short, lying lengths,
 * missing attributes and netlink errors give an error, never a read past
 * the buffer. (t_origsrc_nat asks a real kernel.)
 *
 * And the socket origdst_src() asks on, over wrapped socket calls
 * (test_origdst.wrap): connected to the kernel, non-blocking, the wait
 * for the answer bounded, and only the answer with our port id and
 * sequence number taken. (Regression: an unconnected socket, a blocking
 * recv() on the worker, and whatever came first read as the answer.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* ---- origdst_src() on fake socket calls ---------------------------- */

int __wrap_socket(int domain, int type, int protocol);
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
int __wrap_getsockname(int fd, struct sockaddr *sa, socklen_t *len);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout);

#define OUR_PID		4242u
#define QUEUE_MAX	4

static struct {
	int fd;				/* the fake socket: an eventfd */
	int type;
	bool connected_to_kernel;
	uint32_t seq;			/* of the request sent */
	struct sockaddr_storage src;	/* the request's tuple, for answers */
	struct sockaddr_storage dst;
	/* What arrives, in order: each an answer built at send time. */
	struct {
		uint32_t seq_delta, pid;
	} queue[QUEUE_MAX];
	unsigned n_queue, next;
	unsigned polls;
	int max_poll_ms;
	bool blocking_recv;		/* a recv that would have slept */
} fk;

int __wrap_socket(int domain, int type, int protocol)
{
	assert_int_equal(domain, AF_NETLINK);
	assert_int_equal(protocol, NETLINK_NETFILTER);
	fk.type = type;
	fk.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return fk.fd;
}

int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr_nl *nl = (const void *)sa;

	assert_int_equal(fd, fk.fd);
	fk.connected_to_kernel = len >= sizeof(*nl) && nl->nl_family == AF_NETLINK &&
				 nl->nl_pid == 0;
	return 0;
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	const struct nlmsghdr *nlh = buf;

	assert_int_equal(fd, fk.fd);
	fk.seq = nlh->nlmsg_seq;
	return (ssize_t)len;
}

int __wrap_getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK, .nl_pid = OUR_PID };

	assert_int_equal(fd, fk.fd);
	memcpy(sa, &nl, sizeof(nl));
	*len = sizeof(nl);
	return 0;
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	struct nlmsghdr *nlh = buf;
	size_t n;

	assert_int_equal(fd, fk.fd);
	if (!(flags & MSG_DONTWAIT) && !(fk.type & SOCK_NONBLOCK))
		fk.blocking_recv = true;
	if (fk.next == fk.n_queue) {
		errno = EAGAIN;
		return -1;
	}
	n = answer_from(buf, len, &fk.src, &fk.dst);
	nlh->nlmsg_seq = fk.seq + fk.queue[fk.next].seq_delta;
	nlh->nlmsg_pid = fk.queue[fk.next].pid;
	fk.next++;
	return (ssize_t)n;
}

int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	fk.polls++;
	if (timeout < 0 || timeout > fk.max_poll_ms)
		fk.max_poll_ms = timeout;
	return 0;			/* nothing more comes */
}

static int ask(const char *client, struct sockaddr_storage *got)
{
	struct sockaddr_storage l = v4("127.0.0.1", 7001), p = v4("10.0.0.1", 42028);

	fk.src = v4(client, 42000);
	fk.dst = v4("10.0.0.2", 80);
	return origdst_src((struct sockaddr *)&l, (struct sockaddr *)&p, got);
}

/* Connected to the kernel, non-blocking; a stale answer (an earlier
 * sequence number) and one for another port id are skipped, ours taken. */
static void test_src_takes_only_its_answer(void **state)
{
	struct sockaddr_storage got;

	memset(&fk, 0, sizeof(fk));
	fk.queue[0].seq_delta = (uint32_t)-1;
	fk.queue[0].pid = OUR_PID;
	fk.queue[1].pid = OUR_PID + 1;
	fk.queue[2].pid = OUR_PID;
	fk.n_queue = 3;
	assert_int_equal(ask("10.0.0.9", &got), 0);
	assert_true(fk.connected_to_kernel);
	assert_true(fk.type & SOCK_NONBLOCK);
	assert_false(fk.blocking_recv);
	assert_int_equal(fk.next, 3);
	assert_string_equal(inet_ntoa(((struct sockaddr_in *)&got)->sin_addr), "10.0.0.9");
}

/* No answer of ours: a bounded wait, then -ETIMEDOUT, never a recv that
 * sleeps. */
static void test_src_bounded_wait(void **state)
{
	struct sockaddr_storage got;

	memset(&fk, 0, sizeof(fk));
	fk.queue[0].pid = OUR_PID + 1;	/* someone else's */
	fk.n_queue = 1;
	assert_int_equal(ask("10.0.0.9", &got), -ETIMEDOUT);
	assert_false(fk.blocking_recv);
	assert_true(fk.polls >= 1);
	assert_true(fk.max_poll_ms >= 0 && fk.max_poll_ms <= ORIGDST_CT_WAIT_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_answer_round_trip),
		cmocka_unit_test(test_answer_errors),
		cmocka_unit_test(test_src_takes_only_its_answer),
		cmocka_unit_test(test_src_bounded_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
