/* SPDX-License-Identifier: MIT */
/*
 * smcnl: configure the kernel's own SMC-R so that the bench can measure it
 * beside smcproxy, without smc-tools (Debian has no package for it).
 *
 *   smcnl ueid-add EID
 *   smcnl pnet-add PNETID NETDEV IBDEV IBPORT
 *   smcnl stats
 *
 * Kernel SMC-R v2 between two hosts needs both to share a user EID, and a
 * PNET ID that ties the RoCE device to the netdev the TCP handshake leaves
 * by (otherwise it falls back to TCP, reason 0x03030000). Both are generic
 * netlink commands: SMC_NETLINK_ADD_UEID of family SMC_GEN_NETLINK and
 * SMC_PNETID_ADD of family SMC_PNETID (<linux/smc.h>). A raw netlink socket
 * keeps the tool free of libnl. `stats` prints the kernel's SMC-R counters
 * (connections per side and version, bytes, handshake errors, and a count
 * per reason it fell back to TCP), "name value"
 * a line, so that a bench can prove its flows really took SMC-R.
 *
 * Exit status 0 when the kernel acknowledged the command (EEXIST counts:
 * the entry is there), 1 with the kernel's error otherwise, 2 on usage.
 */
#include <ctype.h>
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PNETID_MAX 16	/* the kernel's SMC_MAX_PNETID_LEN, not in the uapi */

struct nl_req {
	struct nlmsghdr nh;
	struct genlmsghdr gh;
	char attrs[512];
};

static void put_attr(struct nl_req *req, uint16_t type, const void *data, size_t len)
{
	struct nlattr *nla = (struct nlattr *)((char *)req + NLMSG_ALIGN(req->nh.nlmsg_len));

	nla->nla_type = type;
	nla->nla_len = NLA_HDRLEN + len;
	memcpy((char *)nla + NLA_HDRLEN, data, len);
	req->nh.nlmsg_len = NLMSG_ALIGN(req->nh.nlmsg_len) + NLA_ALIGN(nla->nla_len);
}

static void req_init(struct nl_req *req, uint16_t family, uint8_t cmd, uint8_t version)
{
	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req->nh.nlmsg_type = family;
	req->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req->nh.nlmsg_seq = 1;
	req->gh.cmd = cmd;
	req->gh.version = version;
}

typedef void (*nl_msg_cb)(struct genlmsghdr *gh, int len, void *arg);

/* Visits the well-formed attributes of one nesting level. */
#define nla_for_each(nla, head, len, left)					\
	for (nla = (struct nlattr *)(head), left = (len);			\
	     left >= NLA_HDRLEN && nla->nla_len >= NLA_HDRLEN && nla->nla_len <= left; \
	     left -= NLA_ALIGN(nla->nla_len),					\
	     nla = (struct nlattr *)((char *)nla + NLA_ALIGN(nla->nla_len)))

#define nla_data(nla) ((char *)(nla) + NLA_HDRLEN)
#define nla_payload(nla) ((int)(nla)->nla_len - NLA_HDRLEN)

/* Sends req and reads up to its ACK (or the end of a dump), handing every
 * answer to cb. Returns 0 or -errno. */
static int nl_talk(int fd, struct nl_req *req, nl_msg_cb cb, void *arg)
{
	char buf[16384];
	ssize_t n;

	if (send(fd, req, req->nh.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			return -errno;
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *err = NLMSG_DATA(nh);

				return err->error;	/* 0: the ACK */
			}
			if (nh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (cb && nh->nlmsg_len >= NLMSG_LENGTH(GENL_HDRLEN))
				cb(NLMSG_DATA(nh), nh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), arg);
		}
	}
}

static void on_family(struct genlmsghdr *gh, int len, void *arg)
{
	struct nlattr *nla;
	int left;

	nla_for_each(nla, (char *)gh + GENL_HDRLEN, len, left)
		if ((nla->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID &&
		    nla_payload(nla) >= (int)sizeof(uint16_t))
			memcpy(arg, nla_data(nla), sizeof(uint16_t));
}

static uint64_t nla_u64(struct nlattr *nla)
{
	uint64_t v = 0;

	if (nla_payload(nla) >= (int)sizeof(v))
		memcpy(&v, nla_data(nla), sizeof(v));
	return v;
}

/* SMC_GEN_STATS { SMCR_TECH { CLNT/SRV_V1/V2_SUCC, TX/RX_BYTES }, *_HS_ERR_CNT } */
static void on_stats(struct genlmsghdr *gh, int len, void *arg)
{
	static const struct { int type; const char *name; } tech[] = {
		{ SMC_NLA_STATS_T_CLNT_V1_SUCC, "smcr_client_v1" },
		{ SMC_NLA_STATS_T_CLNT_V2_SUCC, "smcr_client_v2" },
		{ SMC_NLA_STATS_T_SRV_V1_SUCC, "smcr_server_v1" },
		{ SMC_NLA_STATS_T_SRV_V2_SUCC, "smcr_server_v2" },
		{ SMC_NLA_STATS_T_TX_BYTES, "smcr_tx_bytes" },
		{ SMC_NLA_STATS_T_RX_BYTES, "smcr_rx_bytes" },
	};
	struct nlattr *top, *st, *t;
	int l1, l2, l3;

	nla_for_each(top, (char *)gh + GENL_HDRLEN, len, l1) {
		if ((top->nla_type & NLA_TYPE_MASK) != SMC_GEN_STATS)
			continue;
		nla_for_each(st, nla_data(top), nla_payload(top), l2) {
			int type = st->nla_type & NLA_TYPE_MASK;

			if (type == SMC_NLA_STATS_CLNT_HS_ERR_CNT)
				printf("client_handshake_errors %llu\n", (unsigned long long)nla_u64(st));
			if (type == SMC_NLA_STATS_SRV_HS_ERR_CNT)
				printf("server_handshake_errors %llu\n", (unsigned long long)nla_u64(st));
			if (type != SMC_NLA_STATS_SMCR_TECH)
				continue;
			nla_for_each(t, nla_data(st), nla_payload(st), l3)
				for (size_t i = 0; i < sizeof(tech) / sizeof(tech[0]); i++)
					if ((t->nla_type & NLA_TYPE_MASK) == tech[i].type)
						printf("%s %llu\n", tech[i].name,
						       (unsigned long long)nla_u64(t));
		}
	}
	(void)arg;
}

/* SMC_GEN_FBACK_STATS { TYPE (1: server side), RSN_CODE, RSN_CNT }: one
 * message per reason the kernel fell back to TCP. */
static void on_fallback(struct genlmsghdr *gh, int len, void *arg)
{
	struct nlattr *top, *a;
	int l1, l2;

	nla_for_each(top, (char *)gh + GENL_HDRLEN, len, l1) {
		uint32_t code = 0;
		uint16_t cnt = 0;
		uint8_t server = 0;

		if ((top->nla_type & NLA_TYPE_MASK) != SMC_GEN_FBACK_STATS)
			continue;
		nla_for_each(a, nla_data(top), nla_payload(top), l2) {
			int type = a->nla_type & NLA_TYPE_MASK;

			if (type == SMC_NLA_FBACK_STATS_TYPE && nla_payload(a) >= 1)
				memcpy(&server, nla_data(a), 1);
			if (type == SMC_NLA_FBACK_STATS_RSN_CODE && nla_payload(a) >= 4)
				memcpy(&code, nla_data(a), 4);
			if (type == SMC_NLA_FBACK_STATS_RSN_CNT && nla_payload(a) >= 2)
				memcpy(&cnt, nla_data(a), 2);
		}
		if (code)
			printf("fallback_%s_0x%08x %u\n", server ? "server" : "client", code, cnt);
	}
	(void)arg;
}

static int family_id(int fd, const char *name, uint16_t *id)
{
	struct nl_req req;
	int rc;

	*id = 0;
	req_init(&req, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	put_attr(&req, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	rc = nl_talk(fd, &req, on_family, id);
	if (rc == 0 && *id == 0)
		rc = -ENOENT;
	return rc;
}

/* The kernel takes a user EID of exactly SMC_MAX_EID_LEN characters, upper
 * case, digits, '.' and '-', padded with blanks. */
static int ueid_pad(const char *eid, char out[SMC_MAX_EID_LEN + 1])
{
	size_t len = strlen(eid);

	if (len == 0 || len > SMC_MAX_EID_LEN || !isalnum((unsigned char)eid[0]))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!(isupper((unsigned char)eid[i]) || isdigit((unsigned char)eid[i]) ||
		      eid[i] == '.' || eid[i] == '-'))
			return -EINVAL;
	snprintf(out, SMC_MAX_EID_LEN + 1, "%-*s", SMC_MAX_EID_LEN, eid);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: smcnl ueid-add EID\n"
			"       smcnl pnet-add PNETID NETDEV IBDEV IBPORT\n"
			"       smcnl stats\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nl_req req;
	uint16_t fam;
	int fd, rc;

	if (argc < 2)
		return usage();
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "smcnl: netlink socket: %s\n", strerror(errno));
		return 1;
	}

	if (strcmp(argv[1], "ueid-add") == 0 && argc == 3) {
		char eid[SMC_MAX_EID_LEN + 1];

		if (ueid_pad(argv[2], eid) < 0) {
			fprintf(stderr, "smcnl: '%s' is no user EID: 1-%d of A-Z 0-9 . -, "
				"starting with a letter or digit\n", argv[2], SMC_MAX_EID_LEN);
			return 2;
		}
		rc = family_id(fd, SMC_GENL_FAMILY_NAME, &fam);
		if (rc == 0) {
			req_init(&req, fam, SMC_NETLINK_ADD_UEID, SMC_GENL_FAMILY_VERSION);
			put_attr(&req, SMC_NLA_EID_TABLE_ENTRY, eid, sizeof(eid));
			rc = nl_talk(fd, &req, NULL, NULL);
		}
	} else if (strcmp(argv[1], "pnet-add") == 0 && argc == 6) {
		char *end;
		unsigned long port = strtoul(argv[5], &end, 10);
		uint8_t port8 = (uint8_t)port;

		if (*end || port == 0 || port > 255 || strlen(argv[2]) > PNETID_MAX)
			return usage();
		rc = family_id(fd, SMCR_GENL_FAMILY_NAME, &fam);
		if (rc == 0) {
			req_init(&req, fam, SMC_PNETID_ADD, SMCR_GENL_FAMILY_VERSION);
			put_attr(&req, SMC_PNETID_NAME, argv[2], strlen(argv[2]) + 1);
			put_attr(&req, SMC_PNETID_ETHNAME, argv[3], strlen(argv[3]) + 1);
			put_attr(&req, SMC_PNETID_IBNAME, argv[4], strlen(argv[4]) + 1);
			put_attr(&req, SMC_PNETID_IBPORT, &port8, sizeof(port8));
			rc = nl_talk(fd, &req, NULL, NULL);
		}
	} else if (strcmp(argv[1], "stats") == 0 && argc == 2) {
		rc = family_id(fd, SMC_GENL_FAMILY_NAME, &fam);
		if (rc == 0) {
			req_init(&req, fam, SMC_NETLINK_GET_STATS, SMC_GENL_FAMILY_VERSION);
			req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
			rc = nl_talk(fd, &req, on_stats, NULL);
		}
		if (rc == 0) {
			req_init(&req, fam, SMC_NETLINK_GET_FBACK_STATS, SMC_GENL_FAMILY_VERSION);
			req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
			rc = nl_talk(fd, &req, on_fallback, NULL);
		}
	} else {
		return usage();
	}
	close(fd);
	if (rc == -EEXIST)
		rc = 0;
	if (rc < 0) {
		fprintf(stderr, "smcnl: %s: %s%s\n", argv[1], strerror(-rc),
			rc == -ENOENT ? " (is the smc module loaded?)" : "");
		return 1;
	}
	return 0;
}
