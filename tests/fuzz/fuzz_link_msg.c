/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the link message decoders: a slot is read from
 * memory the peer daemon writes (shm) or sends (rdma), so every byte is
 * hostile. Both decoders see every input, as the link's receive path
 * dispatches on the type byte. Beyond "does not crash or read past the
 * end", the target checks that:
 *
 *  - they return only 0 or -EBADMSG, and 0 only for a whole slot;
 *  - no slot is both a CDC and an LLC message;
 *  - the encoding of an accepted message is the slot itself (every byte
 *    is either a field or a reserved zero, so there is one encoding), and
 *    decodes to the very same struct.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smc/cdc.h"
#include "smc/llc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool check_cdc(const uint8_t *buf, size_t len)
{
	uint8_t out[LINK_MSG_LEN];
	struct cdc_msg m, back;
	int rc;

	rc = cdc_decode(buf, len, &m);
	if (rc == -EBADMSG)
		return false;
	if (rc != 0 || len != LINK_MSG_LEN)
		abort();
	cdc_encode(&m, out);
	if (memcmp(out, buf, LINK_MSG_LEN) != 0)
		abort();
	if (cdc_decode(out, LINK_MSG_LEN, &back) != 0 || back.seq != m.seq ||
	    back.token != m.token || back.prod.wrap != m.prod.wrap ||
	    back.prod.count != m.prod.count || back.cons.wrap != m.cons.wrap ||
	    back.cons.count != m.cons.count || back.prod_flags != m.prod_flags ||
	    back.conn_flags != m.conn_flags || back.prod_gen != m.prod_gen ||
	    back.cons_gen != m.cons_gen)
		abort();
	return true;
}

static bool check_llc(const uint8_t *buf, size_t len)
{
	uint8_t out[LINK_MSG_LEN];
	struct llc_msg m, back;
	int rc;

	rc = llc_decode(buf, len, &m);
	if (rc == -EBADMSG)
		return false;
	if (rc != 0 || len != LINK_MSG_LEN)
		abort();
	llc_encode(&m, out);
	if (memcmp(out, buf, LINK_MSG_LEN) != 0)
		abort();
	/* llc_decode() zeroes the struct first, so memcmp() is fair. */
	if (llc_decode(out, LINK_MSG_LEN, &back) != 0 || memcmp(&m, &back, sizeof(m)) != 0)
		abort();
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	bool cdc, llc;

	/* Every length but LINK_MSG_LEN is refused up front. */
	if (size > 2 * LINK_MSG_LEN)
		return 0;
	/* A heap copy of exactly size bytes, so that AddressSanitizer sees
	 * any read past the end. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	cdc = check_cdc(copy, size);
	llc = check_llc(copy, size);
	if (cdc && llc)
		abort();
	free(copy);
	return 0;
}
