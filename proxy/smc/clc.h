/* SPDX-License-Identifier: MIT */
/* The peer handshake codec (smcproxy-protocol(7), "Handshake"). */
#ifndef SMCPROXY_CLC_H
#define SMCPROXY_CLC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "clc-t.h"

/*
 * Encodes m (m->hdr.type selects the member; version and length are filled
 * in) into buf. Returns the length, -EINVAL for a field out of range (an
 * accept naming other than one transport), -ENOSPC when len is too small.
 * Transport addresses go out as given: the transport that made one judged
 * it (smc_transport_ops.addr_encode).
 */
int clc_encode(const struct clc_msg *m, uint8_t *buf, size_t len);
/*
 * Reads the header at buf: 0 with hdr filled, -EAGAIN when fewer than
 * CLC_HDR_LEN bytes are there, -EBADMSG for a wrong magic or a length
 * outside CLC_HDR_LEN..CLC_MSG_MAX. The version is not judged here: the
 * caller declines versions it does not speak.
 */
int clc_decode_hdr(const uint8_t *buf, size_t len, struct clc_hdr *hdr);
/*
 * Decodes one whole message of len bytes (the header's length). Checks
 * every length and field: -EPROTONOSUPPORT for a version other than
 * CLC_VERSION, -EBADMSG for anything malformed (unknown type, wrong size
 * for the type, reserved bits set, bad TLV framing, decline reason out of
 * range). Unknown TLV types are skipped; a repeated or empty address TLV
 * is malformed. An address's value is not judged here: the handshake asks
 * its transport (smc_transport_ops.addr_check).
 */
int clc_decode(const uint8_t *buf, size_t len, struct clc_msg *m);

/* Where an encoded PROPOSAL carries its MAC (CLC_MAC_LEN bytes). */
#define CLC_PROPOSAL_MAC_OFF	56

/*
 * One end of the control connection in the form the MACs cover
 * (struct clc_endpoints): 0, or -EAFNOSUPPORT for other than IPv4/IPv6.
 */
int clc_endpoint_put(const struct sockaddr *sa, uint8_t out[CLC_EP_LEN]);

/*
 * HMAC-SHA256 proofs of the shared secret (auth.psk_file), each bound to
 * both endpoints of the control connection. The proposal's covers the
 * encoded PROPOSAL (msg, len bytes, its MAC field read as zero), so the
 * acceptor judges it before it allocates anything; the accept's covers
 * the proposal's MAC, nonce and host id and the whole ACCEPT a encodes
 * to (its MAC field zero: clc.c); the confirm's both nonces in the other
 * order. Labels name purpose and
 * version, so no MAC verifies as another. Return 0 or -errno.
 */
int clc_mac_proposal(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		     const uint8_t *msg, size_t len, uint8_t mac[CLC_MAC_LEN]);
int clc_mac_accept(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		   const struct clc_proposal *p, const struct clc_accept *a,
		   uint8_t mac[CLC_MAC_LEN]);
int clc_mac_confirm(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		    const struct clc_proposal *p, const struct clc_accept *a,
		    uint8_t mac[CLC_MAC_LEN]);
/*
 * A link group's secret: HMAC(PSK, "smcproxy link v2" || proposal nonce
 * || accept nonce || lgr_id). Both daemons derive it after a verified
 * handshake; the transports' rendezvous messages prove it
 * (clc_secret_tag()), so that knowing a group id is not enough to join
 * the group. It never crosses the wire.
 *
 * With psk_len 0 (no auth.psk_file) the key is the public string
 * "smcproxy link v2 without psk": whoever saw both nonces and the group
 * id (they cross in clear) can derive it, so a tag over it proves only
 * that the sender saw this very handshake, not who it is.
 */
int clc_link_secret(const uint8_t *psk, size_t psk_len, const struct clc_proposal *p,
		    const struct clc_accept *a, uint8_t secret[CLC_SECRET_LEN]);
/*
 * The first tag_len (1..CLC_MAC_LEN) bytes of HMAC(secret, label || msg):
 * a rendezvous message's proof of the group secret. 0 or -errno.
 */
int clc_secret_tag(const uint8_t secret[CLC_SECRET_LEN], const char *label,
		   const uint8_t *msg, size_t len, uint8_t *tag, size_t tag_len);
/* Constant-time comparison of n bytes. */
bool clc_tag_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Constant-time comparison. */
bool clc_mac_equal(const uint8_t a[CLC_MAC_LEN], const uint8_t b[CLC_MAC_LEN]);

/*
 * Reads a shared secret from path: the file's bytes with one trailing
 * newline removed, 16..CLC_PSK_MAX bytes. -errno from open/read, -EINVAL
 * when shorter than 16 bytes or longer than CLC_PSK_MAX, -EPERM when not
 * a regular file, or other users may read or write it, or the group write.
 */
int clc_psk_load(const char *path, uint8_t *psk, size_t *len);

/* "no_device", "version_mismatch", "max_flows", "out_of_memory", "policy",
 * "timeout", "internal"; "unknown" out of range. */
const char *clc_decline_name(unsigned reason);

#endif
