/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the rdma transport's wire decoders (rdma_pd.c):
 * the rdma_cm private data of a connect request or reply, which anyone who
 * can reach the rdma_cm port sends before a link group knows them, and the
 * RDMA_ADDR TLV of a proposal or accept. Both decoders see every input.
 * Beyond "does not crash or read past the end", the target checks that:
 *
 *  - they return only 0 or -EPROTO, and refuse NULL data at any length;
 *  - the private data is accepted exactly when it has at least 36 bytes,
 *    the magic "SR" and version 1; the TLV exactly when it has at least 20
 *    bytes, version 1 and a port other than 0 (what follows is ignored:
 *    rdma_cm pads private data to the CM message's size);
 *  - the encoding of an accepted input is its first 36 (20) bytes, as
 *    every byte there is a field, and decodes to the very same struct.
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

static void check_pd(const uint8_t *buf, size_t len)
{
	uint8_t out[RDMA_PD_LEN];
	struct rdma_pd pd, back;
	bool valid;
	int rc;

	rc = rdma_pd_decode(buf, len, &pd);
	valid = len >= RDMA_PD_LEN && buf[0] == 'S' && buf[1] == 'R' && buf[2] == 1;
	if (rc != (valid ? 0 : -EPROTO))
		abort();
	if (!valid)
		return;
	rdma_pd_encode(&pd, out);
	if (memcmp(out, buf, RDMA_PD_LEN) != 0)
		abort();
	if (rdma_pd_decode(out, RDMA_PD_LEN, &back) != 0 || back.link != pd.link ||
	    memcmp(back.lgr_id, pd.lgr_id, CLC_LGR_ID_LEN) != 0 || back.addr != pd.addr ||
	    back.rkey != pd.rkey || back.size != pd.size)
		abort();
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
