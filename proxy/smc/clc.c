/* SPDX-License-Identifier: MIT */
/*
 * The peer handshake codec: PROPOSAL, ACCEPT, CONFIRM and DECLINE on the
 * control port, their HMAC-SHA256 proofs and the shared secret file. The
 * layout is in smcproxy-protocol(7). Everything a decoder reads comes from
 * the network and is judged field by field; the encoders refuse whatever
 * the decoders would refuse, so we never send a message our own code would
 * reject.
 */
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "clc.h"
#include "rmb.h"
#include "core/wire.h"

/* Fixed parts: header included, TLVs excluded. */
#define CLC_PROPOSAL_LEN	sizeof(struct clc_wire_proposal)
#define CLC_ACCEPT_LEN		sizeof(struct clc_wire_accept)
#define CLC_CONFIRM_LEN		sizeof(struct clc_wire_confirm)
#define CLC_DECLINE_LEN		sizeof(struct clc_wire_decline)

#define CLC_LINKS_MAX		16

#define CLC_PSK_MIN		16

/* Per-flow ring sizes either side may ask for: the ring pool's classes,
 * which are what buffers.ring allows. */
static bool ring_size_ok(uint32_t size)
{
	return rmb_class(size) >= 0;
}

/* An accept names exactly one transport, one the protocol knows: the
 * proposer offered only those. */
static bool accept_transport_ok(uint8_t transport)
{
	return transport && !(transport & (transport - 1)) && (transport & CLC_TR_KNOWN);
}

/* The parameters proposal and accept share, judged the same way. */
static bool params_ok(uint32_t ring_size, uint16_t links, uint16_t max_flows_per_link)
{
	return ring_size_ok(ring_size) && links >= 1 && links <= CLC_LINKS_MAX &&
	       max_flows_per_link >= 1;
}

static size_t tlvs_len(const struct clc_addr *addr)
{
	size_t n = 0;

	for (unsigned i = 0; i < CLC_ADDRS_MAX; i++)
		n += addr[i].len ? 2u + addr[i].len : 0;
	return n;
}

/* Writes the TLVs of the addresses that are present (length not 0), in
 * the order of their types. */
static uint8_t *tlvs_put(uint8_t *p, const struct clc_addr *addr)
{
	for (unsigned i = 0; i < CLC_ADDRS_MAX; i++) {
		if (!addr[i].len)
			continue;
		p[0] = (uint8_t)(i + 1);
		p[1] = addr[i].len;
		memcpy(p + 2, addr[i].value, addr[i].len);
		p += 2 + addr[i].len;
	}
	return p;
}

/*
 * Reads the TLVs in p[0..len): they must tile it exactly, an address type
 * may appear once and not empty, any other type is skipped so that a newer
 * peer can add fields without a new version. addr starts zeroed (lengths
 * 0: absent). The values are the transports' to judge.
 */
static int tlvs_get(const uint8_t *p, size_t len, struct clc_addr *addr)
{
	size_t off = 0;

	while (off < len) {
		uint8_t type, vlen;

		if (len - off < 2)
			return -EBADMSG;
		type = p[off];
		vlen = p[off + 1];
		off += 2;
		if (vlen > len - off)
			return -EBADMSG;
		if (type >= 1 && type <= CLC_ADDRS_MAX) {
			struct clc_addr *a = &addr[type - 1];

			if (a->len || vlen < 1)
				return -EBADMSG;
			memcpy(a->value, p + off, vlen);
			a->len = vlen;
		}
		off += vlen;
	}
	return 0;
}

#define CLC_AT(type, field, off) (offsetof(struct clc_wire_##type, field) == (off))

/* The fixed layouts against smcproxy-protocol(7)'s tables, field by field:
 * a field moved in a struct clc_wire_*, or one whose width changed, fails
 * the build until the manual and this list say so too. */
_Static_assert(CLC_AT(hdr, magic, 0) && CLC_AT(hdr, version, 4) && CLC_AT(hdr, type, 5) &&
	       CLC_AT(hdr, length, 6) && sizeof(struct clc_wire_hdr) == CLC_HDR_LEN,
	       "header: magic, version, type, then the length");
_Static_assert(CLC_MSG_MAX <= UINT16_MAX, "the header's length is 16 bits");
_Static_assert(CLC_AT(proposal, params.features, 8) && CLC_AT(proposal, params.transport, 12) &&
	       CLC_AT(proposal, params.reserved, 13) && CLC_AT(proposal, params.host_id, 16) &&
	       CLC_AT(proposal, params.nonce, 32) && CLC_AT(proposal, params.ring_size, 48) &&
	       CLC_AT(proposal, params.links, 52) && CLC_AT(proposal, params.max_flows_per_link, 54) &&
	       CLC_AT(accept, params, 8) && sizeof(struct clc_wire_params) == 56 - 8,
	       "parameters: features at 8, host id at 16, nonce at 32, ring size at 48");
_Static_assert(CLC_AT(proposal, params, 8) && CLC_AT(proposal, mac, CLC_PROPOSAL_MAC_OFF) &&
	       CLC_PROPOSAL_MAC_OFF == 56 && CLC_PROPOSAL_LEN == 88,
	       "proposal: the parameters, then the MAC (version 2)");
_Static_assert(CLC_AT(accept, params, 8) && CLC_AT(accept, lgr_id, 56) && CLC_AT(accept, mac, 72) &&
	       CLC_ACCEPT_LEN == 104, "accept: the parameters, the group id at 56, then the MAC");
_Static_assert(CLC_AT(confirm, mac, 8) && CLC_CONFIRM_LEN == 40, "confirm: the MAC after the header");
_Static_assert(CLC_AT(decline, reason, 8) && CLC_AT(decline, reserved, 9) && CLC_DECLINE_LEN == 12,
	       "decline: a reason byte and three zero bytes");
_Static_assert(CLC_ACCEPT_LEN <= CLC_MSG_MAX && CLC_PROPOSAL_LEN <= CLC_MSG_MAX,
	       "fixed parts fit the longest message");
_Static_assert(CLC_ADDR_MAX <= UINT8_MAX, "a TLV's length is one byte");

/* The parameters proposal and accept share. */
static void params_put(struct clc_wire_params *w, uint32_t features, uint8_t transport,
		       const uint8_t *host_id, const uint8_t *nonce, uint32_t ring_size,
		       uint16_t links, uint16_t max_flows_per_link)
{
	wire_put32(w->features, features);
	w->transport = transport;
	memset(w->reserved, 0, sizeof(w->reserved));
	memcpy(w->host_id, host_id, CLC_HOST_ID_LEN);
	memcpy(w->nonce, nonce, CLC_NONCE_LEN);
	wire_put32(w->ring_size, ring_size);
	wire_put16(w->links, links);
	wire_put16(w->max_flows_per_link, max_flows_per_link);
}

static int encode_proposal(const struct clc_proposal *pr, uint8_t *buf, size_t len)
{
	struct clc_wire_proposal *w = (struct clc_wire_proposal *)(void *)buf;
	size_t n;

	if (!pr->transports || !params_ok(pr->ring_size, pr->links, pr->max_flows_per_link))
		return -EINVAL;
	n = CLC_PROPOSAL_LEN + tlvs_len(pr->addr);
	if (n > len)
		return -ENOSPC;
	params_put(&w->params, pr->features, pr->transports, pr->host_id, pr->nonce,
		   pr->ring_size, pr->links, pr->max_flows_per_link);
	memcpy(w->mac, pr->mac, CLC_MAC_LEN);
	tlvs_put(buf + CLC_PROPOSAL_LEN, pr->addr);
	return (int)n;
}

static int encode_accept(const struct clc_accept *a, uint8_t *buf, size_t len)
{
	struct clc_wire_accept *w = (struct clc_wire_accept *)(void *)buf;
	size_t n;

	if (!accept_transport_ok(a->transport) ||
	    !params_ok(a->ring_size, a->links, a->max_flows_per_link))
		return -EINVAL;
	n = CLC_ACCEPT_LEN + tlvs_len(a->addr);
	if (n > len)
		return -ENOSPC;
	params_put(&w->params, a->features, a->transport, a->host_id, a->nonce, a->ring_size,
		   a->links, a->max_flows_per_link);
	memcpy(w->lgr_id, a->lgr_id, CLC_LGR_ID_LEN);
	memcpy(w->mac, a->mac, CLC_MAC_LEN);
	tlvs_put(buf + CLC_ACCEPT_LEN, a->addr);
	return (int)n;
}

int clc_encode(const struct clc_msg *m, uint8_t *buf, size_t len)
{
	struct clc_wire_hdr *h = (struct clc_wire_hdr *)(void *)buf;
	struct clc_wire_confirm *c = (struct clc_wire_confirm *)(void *)buf;
	struct clc_wire_decline *d = (struct clc_wire_decline *)(void *)buf;
	int n;

	switch (m->hdr.type) {
	case CLC_PROPOSAL:
		n = encode_proposal(&m->proposal, buf, len);
		break;
	case CLC_ACCEPT:
		n = encode_accept(&m->accept, buf, len);
		break;
	case CLC_CONFIRM:
		n = CLC_CONFIRM_LEN;
		if ((size_t)n > len)
			return -ENOSPC;
		memcpy(c->mac, m->confirm.mac, CLC_MAC_LEN);
		break;
	case CLC_DECLINE:
		if (m->decline.reason == CLC_DECL_NONE || m->decline.reason >= CLC_DECL__MAX)
			return -EINVAL;
		n = CLC_DECLINE_LEN;
		if ((size_t)n > len)
			return -ENOSPC;
		d->reason = m->decline.reason;
		memset(d->reserved, 0, sizeof(d->reserved));
		break;
	default:
		return -EINVAL;
	}
	if (n < 0)
		return n;
	/* The header last: the length is known only now. */
	wire_put32(h->magic, CLC_MAGIC);
	h->version = CLC_VERSION;
	h->type = m->hdr.type;
	wire_put16(h->length, (uint16_t)n);
	return n;
}

int clc_decode_hdr(const uint8_t *buf, size_t len, struct clc_hdr *hdr)
{
	const struct clc_wire_hdr *h = (const struct clc_wire_hdr *)(const void *)buf;
	uint16_t length;

	if (len < CLC_HDR_LEN)
		return -EAGAIN;
	if (wire_get32(h->magic) != CLC_MAGIC)
		return -EBADMSG;
	length = wire_get16(h->length);
	if (length < CLC_HDR_LEN || length > CLC_MSG_MAX)
		return -EBADMSG;
	hdr->version = h->version;
	hdr->type = h->type;
	hdr->length = length;
	return 0;
}

/* The parameters of proposal and accept; the caller judges the transport byte. */
static int params_get(const struct clc_wire_params *w, uint32_t *features, uint8_t *transport,
		      uint8_t *host_id, uint8_t *nonce, uint32_t *ring_size,
		      uint16_t *links, uint16_t *max_flows_per_link)
{
	if (!wire_all_zero(w->reserved, sizeof(w->reserved)))
		return -EBADMSG;
	*features = wire_get32(w->features);
	*transport = w->transport;
	memcpy(host_id, w->host_id, CLC_HOST_ID_LEN);
	memcpy(nonce, w->nonce, CLC_NONCE_LEN);
	*ring_size = wire_get32(w->ring_size);
	*links = wire_get16(w->links);
	*max_flows_per_link = wire_get16(w->max_flows_per_link);
	if (!params_ok(*ring_size, *links, *max_flows_per_link))
		return -EBADMSG;
	return 0;
}

/*
 * Unknown feature and transport bits are kept as received: they are not
 * errors (a newer peer may offer more), and the caller intersects them
 * with what it speaks. A proposal must still offer something.
 */
static int decode_proposal(const uint8_t *buf, size_t len, struct clc_proposal *pr)
{
	const struct clc_wire_proposal *w = (const struct clc_wire_proposal *)(const void *)buf;
	int r;

	if (len < CLC_PROPOSAL_LEN)
		return -EBADMSG;
	r = params_get(&w->params, &pr->features, &pr->transports, pr->host_id, pr->nonce,
		       &pr->ring_size, &pr->links, &pr->max_flows_per_link);
	if (r < 0)
		return r;
	if (!pr->transports)
		return -EBADMSG;
	memcpy(pr->mac, w->mac, CLC_MAC_LEN);
	/* Without a proof the field is reserved: zero. */
	if (!(pr->features & CLC_FEAT_PSK) && !wire_all_zero(pr->mac, CLC_MAC_LEN))
		return -EBADMSG;
	return tlvs_get(buf + CLC_PROPOSAL_LEN, len - CLC_PROPOSAL_LEN, pr->addr);
}

/* An accept names the one transport chosen, which must be one we know:
 * the proposer offered only those. */
static int decode_accept(const uint8_t *buf, size_t len, struct clc_accept *a)
{
	const struct clc_wire_accept *w = (const struct clc_wire_accept *)(const void *)buf;
	int r;

	if (len < CLC_ACCEPT_LEN)
		return -EBADMSG;
	r = params_get(&w->params, &a->features, &a->transport, a->host_id, a->nonce,
		       &a->ring_size, &a->links, &a->max_flows_per_link);
	if (r < 0)
		return r;
	if (!accept_transport_ok(a->transport))
		return -EBADMSG;
	memcpy(a->lgr_id, w->lgr_id, CLC_LGR_ID_LEN);
	memcpy(a->mac, w->mac, CLC_MAC_LEN);
	return tlvs_get(buf + CLC_ACCEPT_LEN, len - CLC_ACCEPT_LEN, a->addr);
}

int clc_decode(const uint8_t *buf, size_t len, struct clc_msg *m)
{
	const struct clc_wire_confirm *c = (const struct clc_wire_confirm *)(const void *)buf;
	const struct clc_wire_decline *d = (const struct clc_wire_decline *)(const void *)buf;
	int r;

	/* Zeroed first: absent TLVs read as length 0, and two decodes of
	 * the same message compare equal byte for byte. */
	memset(m, 0, sizeof(*m));
	r = clc_decode_hdr(buf, len, &m->hdr);
	if (r == -EAGAIN)
		return -EBADMSG;
	if (r < 0)
		return r;
	/* The caller reads exactly the header's length; anything else is
	 * a framing bug or a lie. */
	if (m->hdr.length != len)
		return -EBADMSG;
	if (m->hdr.version != CLC_VERSION)
		return -EPROTONOSUPPORT;

	switch (m->hdr.type) {
	case CLC_PROPOSAL:
		r = decode_proposal(buf, len, &m->proposal);
		break;
	case CLC_ACCEPT:
		r = decode_accept(buf, len, &m->accept);
		break;
	case CLC_CONFIRM:
		if (len != CLC_CONFIRM_LEN)
			return -EBADMSG;
		memcpy(m->confirm.mac, c->mac, CLC_MAC_LEN);
		r = 0;
		break;
	case CLC_DECLINE:
		if (len != CLC_DECLINE_LEN || !wire_all_zero(d->reserved, sizeof(d->reserved)) ||
		    d->reason == CLC_DECL_NONE || d->reason >= CLC_DECL__MAX)
			return -EBADMSG;
		m->decline.reason = d->reason;
		r = 0;
		break;
	default:
		return -EBADMSG;
	}
	return r;
}

/*
 * HMAC-SHA256 over the concatenation of the label and the parts. Each
 * label names what is proven and carries the version, so a MAC computed
 * for one purpose or version never verifies as another.
 */
static int hmac(const uint8_t *psk, size_t psk_len, const uint8_t *msg, size_t msg_len,
		uint8_t mac[CLC_MAC_LEN])
{
	unsigned int mac_len = CLC_MAC_LEN;

	/* HMAC() takes an int key length, and an empty key is a caller bug
	 * that would make every proof forgeable. */
	if (!psk_len || psk_len > CLC_PSK_MAX)
		return -EINVAL;
	if (!HMAC(EVP_sha256(), psk, (int)psk_len, msg, msg_len, mac, &mac_len) ||
	    mac_len != CLC_MAC_LEN)
		return -EIO;
	return 0;
}

static uint8_t *put_bytes(uint8_t *p, const void *src, size_t n)
{
	memcpy(p, src, n);
	return p + n;
}

_Static_assert(CLC_PROPOSAL_MAC_OFF + CLC_MAC_LEN == CLC_PROPOSAL_LEN,
	       "the proposal MAC ends the fixed part");

int clc_endpoint_put(const struct sockaddr *sa, uint8_t out[CLC_EP_LEN])
{
	memset(out, 0, CLC_EP_LEN);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;

		out[10] = out[11] = 0xff;
		memcpy(out + 12, &sin->sin_addr, 4);
		memcpy(out + 16, &sin->sin_port, 2);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)sa;

		memcpy(out, &sin6->sin6_addr, 16);
		memcpy(out + 16, &sin6->sin6_port, 2);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static uint8_t *put_endpoints(uint8_t *q, const struct clc_endpoints *ep)
{
	q = put_bytes(q, ep->client, CLC_EP_LEN);
	return put_bytes(q, ep->server, CLC_EP_LEN);
}

int clc_mac_proposal(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		     const uint8_t *msg, size_t len, uint8_t mac[CLC_MAC_LEN])
{
	static const char label[] = "smcproxy proposal v2";
	uint8_t buf[sizeof(label) - 1 + 2 * CLC_EP_LEN + CLC_MSG_MAX];
	uint8_t *q = buf, *m;
	int err;

	if (len < CLC_PROPOSAL_LEN || len > CLC_MSG_MAX)
		return -EINVAL;
	q = put_bytes(q, label, sizeof(label) - 1);
	q = put_endpoints(q, ep);
	m = q;
	q = put_bytes(q, msg, len);
	memset(m + CLC_PROPOSAL_MAC_OFF, 0, CLC_MAC_LEN);
	err = hmac(psk, psk_len, buf, (size_t)(q - buf), mac);
	OPENSSL_cleanse(buf, sizeof(buf));
	return err;
}

/*
 * Over the whole ACCEPT, as the proposal's covers the whole PROPOSAL:
 * its features, ring size, link counts and address TLVs (the rdma port
 * and GID, the shm rendezvous path) are the acceptor's word as much as
 * its nonce, and a MAC that left them out let an on-path attacker
 * downgrade the group or send our shm hello to a socket of its choice.
 * The message is a's encoding with the MAC field zero: the acceptor MACs
 * what it sends, the proposer what it decoded, encoded again, which is
 * the same bytes but for TLVs this version does not know (it ignores
 * them, and they are not covered).
 */
int clc_mac_accept(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		   const struct clc_proposal *p, const struct clc_accept *a,
		   uint8_t mac[CLC_MAC_LEN])
{
	static const char label[] = "smcproxy accept v3";
	uint8_t buf[sizeof(label) - 1 + 2 * CLC_EP_LEN + CLC_MAC_LEN + CLC_NONCE_LEN +
		    CLC_HOST_ID_LEN + CLC_MSG_MAX];
	struct clc_msg m = { .hdr.type = CLC_ACCEPT, .accept = *a };
	uint8_t *q = buf;
	int n, err;

	q = put_bytes(q, label, sizeof(label) - 1);
	q = put_endpoints(q, ep);
	q = put_bytes(q, p->mac, CLC_MAC_LEN);
	q = put_bytes(q, p->nonce, CLC_NONCE_LEN);
	q = put_bytes(q, p->host_id, CLC_HOST_ID_LEN);
	memset(m.accept.mac, 0, CLC_MAC_LEN);
	n = clc_encode(&m, q, CLC_MSG_MAX);
	if (n < 0)
		return n;
	q += n;
	err = hmac(psk, psk_len, buf, (size_t)(q - buf), mac);
	OPENSSL_cleanse(buf, sizeof(buf));
	return err;
}

int clc_mac_confirm(const uint8_t *psk, size_t psk_len, const struct clc_endpoints *ep,
		    const struct clc_proposal *p, const struct clc_accept *a,
		    uint8_t mac[CLC_MAC_LEN])
{
	static const char label[] = "smcproxy confirm v2";
	uint8_t msg[sizeof(label) - 1 + 2 * CLC_EP_LEN + 2 * CLC_NONCE_LEN + CLC_LGR_ID_LEN];
	uint8_t *q = msg;

	q = put_bytes(q, label, sizeof(label) - 1);
	q = put_endpoints(q, ep);
	q = put_bytes(q, a->nonce, CLC_NONCE_LEN);
	q = put_bytes(q, p->nonce, CLC_NONCE_LEN);
	q = put_bytes(q, a->lgr_id, CLC_LGR_ID_LEN);
	return hmac(psk, psk_len, msg, (size_t)(q - msg), mac);
}

int clc_link_secret(const uint8_t *psk, size_t psk_len, const struct clc_proposal *p,
		    const struct clc_accept *a, uint8_t secret[CLC_SECRET_LEN])
{
	static const char label[] = "smcproxy link v2";
	/* Without a PSK, a key everyone knows: the secret then only binds
	 * a rendezvous to this handshake's nonces (clc.h). */
	static const char open_key[] = "smcproxy link v2 without psk";
	uint8_t msg[sizeof(label) - 1 + 2 * CLC_NONCE_LEN + CLC_LGR_ID_LEN];
	uint8_t *q = msg;

	_Static_assert(CLC_SECRET_LEN == CLC_MAC_LEN, "the secret is an HMAC-SHA256");
	if (!psk_len) {
		psk = (const uint8_t *)open_key;
		psk_len = sizeof(open_key) - 1;
	}
	q = put_bytes(q, label, sizeof(label) - 1);
	q = put_bytes(q, p->nonce, CLC_NONCE_LEN);
	q = put_bytes(q, a->nonce, CLC_NONCE_LEN);
	q = put_bytes(q, a->lgr_id, CLC_LGR_ID_LEN);
	return hmac(psk, psk_len, msg, (size_t)(q - msg), secret);
}

int clc_secret_tag(const uint8_t secret[CLC_SECRET_LEN], const char *label,
		   const uint8_t *msg, size_t len, uint8_t *tag, size_t tag_len)
{
	uint8_t buf[64 + CLC_MSG_MAX], mac[CLC_MAC_LEN];
	size_t llen = strlen(label);
	int err;

	if (!tag_len || tag_len > CLC_MAC_LEN || llen > 64 || len > CLC_MSG_MAX)
		return -EINVAL;
	memcpy(buf, label, llen);
	memcpy(buf + llen, msg, len);
	err = hmac(secret, CLC_SECRET_LEN, buf, llen + len, mac);
	if (!err)
		memcpy(tag, mac, tag_len);
	OPENSSL_cleanse(mac, sizeof(mac));
	return err;
}

bool clc_tag_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

bool clc_mac_equal(const uint8_t a[CLC_MAC_LEN], const uint8_t b[CLC_MAC_LEN])
{
	/* memcmp() returns at the first difference, which would tell an
	 * attacker how many leading bytes of a forged MAC were right. */
	return CRYPTO_memcmp(a, b, CLC_MAC_LEN) == 0;
}

/*
 * psk must have room for CLC_PSK_MAX bytes; *len receives the secret's
 * length. Exactly one trailing "\n" is removed (what an editor or echo
 * adds); anything else, "\r" and blanks included, is part of the secret.
 * Nothing is written to psk or *len on failure. The file is read into a
 * buffer one byte longer than the longest acceptable file (CLC_PSK_MAX
 * and the newline): a file that fills it is too long whatever its last
 * byte, and the rest of it is never read.
 */
int clc_psk_load(const char *path, uint8_t *psk, size_t *len)
{
	uint8_t buf[CLC_PSK_MAX + 2];
	struct stat st;
	size_t n = 0;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* As ssh with its keys: a secret others can read is no secret, and
	 * one others can write is not ours. The group may read, so that a
	 * root-owned file can serve the daemon's service group. */
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IRWXO | S_IWGRP))) {
		err = -EPERM;
		goto out_close;
	}
	while (n < sizeof(buf)) {
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out_close;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n && buf[n - 1] == '\n')
		n--;
	if (n < CLC_PSK_MIN || n > CLC_PSK_MAX) {
		err = -EINVAL;
		goto out_close;
	}
	memcpy(psk, buf, n);
	*len = n;
out_close:
	close(fd);
	/* The stack copy of the secret must not outlive the call. */
	OPENSSL_cleanse(buf, sizeof(buf));
	return err;
}

const char *clc_decline_name(unsigned reason)
{
	static const char *const names[CLC_DECL__MAX] = {
		[CLC_DECL_NO_DEVICE] = "no_device",
		[CLC_DECL_VERSION] = "version_mismatch",
		[CLC_DECL_MAX_FLOWS] = "max_flows",
		[CLC_DECL_NO_MEMORY] = "out_of_memory",
		[CLC_DECL_POLICY] = "policy",
		[CLC_DECL_TIMEOUT] = "timeout",
		[CLC_DECL_INTERNAL] = "internal",
		[CLC_DECL_STOPPING] = "stopping",
	};

	if (reason >= CLC_DECL__MAX || !names[reason])
		return "unknown";
	return names[reason];
}
