/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the peer handshake decoder: the bytes a peer, or
 * anyone who can reach the control port, sends before any authentication.
 * Beyond "does not crash or read past the end", the target checks what
 * the handshake relies on:
 *
 *  - clc_decode_hdr() and clc_decode() return only their documented codes,
 *    and -EPROTONOSUPPORT only for a version other than ours;
 *  - an accepted message has a known type and the length it was given;
 *  - it re-encodes (the encoder takes whatever the decoder accepts), to no
 *    more bytes than it came in (only unknown TLVs are dropped), and the
 *    encoding decodes to the very same struct;
 *  - the encoder refuses a buffer one byte short, and writes nothing there;
 *  - an accepted ACCEPT can be proven (clc_mac_accept() encodes it again):
 *    the proposer can always judge its MAC, whatever the peer sent.
 *
 * The input goes in as one message, and framed as the daemon frames it:
 * the header first, then exactly the length it names.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smc/clc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const uint8_t *buf, size_t len)
{
	uint8_t out[CLC_MSG_MAX + 1];
	struct clc_msg m, back;
	int rc, n;

	rc = clc_decode(buf, len, &m);
	if (rc == -EPROTONOSUPPORT) {
		if (len < CLC_HDR_LEN || buf[4] == CLC_VERSION)
			abort();
		return;
	}
	if (rc == -EBADMSG)
		return;
	if (rc != 0)
		abort();
	if (m.hdr.version != CLC_VERSION || m.hdr.length != len ||
	    m.hdr.type < CLC_PROPOSAL || m.hdr.type > CLC_DECLINE)
		abort();
	if (m.hdr.type == CLC_DECLINE && !strcmp(clc_decline_name(m.decline.reason), "unknown"))
		abort();

	n = clc_encode(&m, out, CLC_MSG_MAX);
	if (n < CLC_HDR_LEN || (size_t)n > len)
		abort();
	if (clc_decode(out, (size_t)n, &back) != 0)
		abort();
	m.hdr.length = (uint16_t)n;
	if (memcmp(&m, &back, sizeof(m)) != 0)
		abort();
	/* Without unknown TLVs the encoding is the input itself, but for
	 * the order of the known TLVs. */
	if (m.hdr.type >= CLC_CONFIRM && memcmp(out, buf, len) != 0)
		abort();

	if (m.hdr.type == CLC_ACCEPT) {
		static const uint8_t psk[16] = "fuzz fuzz fuzz!";
		static const struct clc_endpoints ep;
		static const struct clc_proposal pr;
		uint8_t mac[CLC_MAC_LEN];

		if (clc_mac_accept(psk, sizeof(psk), &ep, &pr, &m.accept, mac) != 0)
			abort();
	}

	memset(out, 0x5a, sizeof(out));
	if (clc_encode(&m, out, (size_t)n - 1) != -ENOSPC)
		abort();
	for (size_t i = 0; i < sizeof(out); i++)
		if (out[i] != 0x5a)
			abort();
}

/* Runs check_msg() on a heap copy of exactly len bytes, so that
 * AddressSanitizer sees any read past the message's end. */
static void check_exact(const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return;
	memcpy(copy, data, len);
	check_msg(copy, len);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clc_hdr hdr;
	int rc;

	/* Past CLC_MSG_MAX only the header is looked at. */
	if (size > CLC_MSG_MAX + CLC_HDR_LEN)
		return 0;
	check_exact(data, size);

	rc = clc_decode_hdr(data, size, &hdr);
	if (size < CLC_HDR_LEN) {
		if (rc != -EAGAIN)
			abort();
		return 0;
	}
	if (rc == -EBADMSG)
		return 0;
	if (rc != 0 || hdr.length < CLC_HDR_LEN || hdr.length > CLC_MSG_MAX)
		abort();
	if (hdr.length <= size && hdr.length != size)
		check_exact(data, hdr.length);
	return 0;
}
