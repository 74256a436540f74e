/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the rdma transport's wire decoders (rdma_pd.c):
 * the rdma_cm private data of a connect request or reply, which anyone who
 * can reach the rdma_cm port sends before a link group knows them, and the
 * RDMA_ADDR TLV of a proposal or accept. Both decoders see every input.
 * Beyond "does not crash or read past the end", the target checks that:
 *
 *  - they return only 0 or -EPROTO, and refuse NULL data at any length;
 *  - the private data is accepted exactly when it has at least 52 bytes,
 *    the magic "SR" and version 2; the TLV exactly when it has at least 20
 *    bytes, version 1 and a port other than 0 (what follows is ignored:
 *    rdma_cm pads private data to the CM message's size);
 *  - the encoding of an accepted input is its first 52 (20) bytes, as
 *    every byte there is a field, and decodes to the very same struct;
 *  - the tag check (rdma_pd_tag_ok(), what a listener runs on every
 *    decoded request) passes for an accepted input only when its tag is
 *    the one rdma_pd_tag() makes under FUZZ_SECRET for that direction,
 *    and once the right tag is put in, it passes for that direction and
 *    not for the other.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma/rdma.h"
#include "transport/rdma/rdma_pd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest private data rdma_cm hands over (a REP on IB and RoCE). */
#define PD_INPUT_MAX	196

/* The group secret the tags are checked under: bytes 0x40..0x5f, as in
 * test_rdma_pd.c, so that its valid samples (v_pd_tag_*) verify here. */
static const uint8_t FUZZ_SECRET[CLC_SECRET_LEN] = {
	0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b,
	0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
	0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
};

static void check_tag(const struct rdma_pd *in)
{
	uint8_t req[RDMA_PD_TAG_LEN], rep[RDMA_PD_TAG_LEN];
	struct rdma_pd pd = *in;

	if (rdma_pd_tag(FUZZ_SECRET, RDMA_PD_REQ, &pd, req) ||
	    rdma_pd_tag(FUZZ_SECRET, RDMA_PD_REP, &pd, rep))
		abort();
	if (rdma_pd_tag_ok(FUZZ_SECRET, RDMA_PD_REQ, &pd) != !memcmp(pd.tag, req, sizeof(req)) ||
	    rdma_pd_tag_ok(FUZZ_SECRET, RDMA_PD_REP, &pd) != !memcmp(pd.tag, rep, sizeof(rep)))
		abort();
	memcpy(pd.tag, req, sizeof(req));
	if (!rdma_pd_tag_ok(FUZZ_SECRET, RDMA_PD_REQ, &pd) ||
	    rdma_pd_tag_ok(FUZZ_SECRET, RDMA_PD_REP, &pd))
		abort();
}

static void check_pd(const uint8_t *buf, size_t len)
{
	uint8_t out[RDMA_PD_LEN];
	struct rdma_pd pd, back;
	bool valid;
	int rc;

	rc = rdma_pd_decode(buf, len, &pd);
	valid = len >= RDMA_PD_LEN && buf[0] == 'S' && buf[1] == 'R' && buf[2] == 2;
	if (rc != (valid ? 0 : -EPROTO))
		abort();
	if (!valid)
		return;
	rdma_pd_encode(&pd, out);
	if (memcmp(out, buf, RDMA_PD_LEN) != 0)
		abort();
	if (rdma_pd_decode(out, RDMA_PD_LEN, &back) != 0 || back.link != pd.link ||
	    memcmp(back.lgr_id, pd.lgr_id, CLC_LGR_ID_LEN) != 0 || back.addr != pd.addr ||
	    back.rkey != pd.rkey || back.size != pd.size ||
	    memcmp(back.tag, pd.tag, RDMA_PD_TAG_LEN) != 0)
		abort();
	check_tag(&pd);
}

static void check_tlv(const uint8_t *buf, size_t len)
{
	uint8_t out[RDMA_TLV_LEN];
	struct rdma_tlv a, back;
	bool valid;
	int rc;

	rc = rdma_tlv_decode(buf, len, &a);
	valid = len >= RDMA_TLV_LEN && buf[0] == 1 && (buf[2] | buf[3]) != 0;
	if (rc != (valid ? 0 : -EPROTO))
		abort();
	if (!valid)
		return;
	rdma_tlv_encode(&a, out);
	if (memcmp(out, buf, RDMA_TLV_LEN) != 0)
		abort();
	if (rdma_tlv_decode(out, RDMA_TLV_LEN, &back) != 0 || back.version != a.version ||
	    back.flags != a.flags || back.cm_port != a.cm_port ||
	    memcmp(back.gid, a.gid, sizeof(a.gid)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_tlv a;
	struct rdma_pd pd;
	uint8_t *copy;

	if (size > PD_INPUT_MAX)
		return 0;
	/* A CM event without private data: NULL, whatever the length says. */
	if (rdma_pd_decode(NULL, size, &pd) != -EPROTO ||
	    rdma_tlv_decode(NULL, size, &a) != -EPROTO)
		abort();
	/* A heap copy of exactly size bytes, so that AddressSanitizer sees
	 * any read past the end. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	check_pd(copy, size);
	check_tlv(copy, size);
	free(copy);
	return 0;
}
