/* SPDX-License-Identifier: MIT */
/*
 * The rdma transport's wire codecs (rdma_pd.h): the rdma_cm private data
 * and the RDMA_ADDR TLV. Both come from the peer daemon, so the decoders
 * check length, magic and version before reading a field; what the fields
 * mean (the link index, the region, the tag) is checked by rdma_cm.c, which
 * knows the link group.
 */
#include <errno.h>
#include <string.h>

#include "rdma.h"
#include "rdma_pd.h"
#include "core/wire.h"
#include "smc/clc.h"

/* The layouts the codecs write, field by field. */
_Static_assert(4 + CLC_LGR_ID_LEN == 20, "private data: the group id at 4, the region's address at 20");
_Static_assert(20 + sizeof(((struct rdma_pd *)0)->addr) == 28 &&
	       28 + sizeof(((struct rdma_pd *)0)->rkey) == 32 &&
	       32 + sizeof(((struct rdma_pd *)0)->size) == RDMA_PD_TAG_OFF,
	       "private data: address, rkey, then the size before the tag");
_Static_assert(RDMA_PD_TAG_OFF + RDMA_PD_TAG_LEN == RDMA_PD_LEN &&
	       sizeof(((struct rdma_pd *)0)->tag) == RDMA_PD_TAG_LEN,
	       "private data: the tag is its last field");
_Static_assert(RDMA_PD_LEN <= 56, "a RoCE connect request carries 56 bytes of private data");
_Static_assert(RDMA_PD_TAG_LEN <= CLC_MAC_LEN, "the tag is a truncated HMAC-SHA256");
_Static_assert(sizeof(((struct rdma_pd *)0)->lgr_id) == CLC_LGR_ID_LEN, "the group id, whole");
_Static_assert(4 + sizeof(((struct rdma_tlv *)0)->gid) == RDMA_TLV_LEN, "RDMA_ADDR: the gid is its last field");
_Static_assert(RDMA_TLV_LEN <= RDMA_TLV_MAX && RDMA_TLV_MAX <= CLC_ADDR_MAX,
	       "our RDMA_ADDR fits what we take and an address TLV");

void rdma_pd_encode(const struct rdma_pd *pd, uint8_t out[RDMA_PD_LEN])
{
	memcpy(out, RDMA_PD_MAGIC, 2);
	out[2] = RDMA_PD_VERSION;
	out[3] = pd->link;
	memcpy(out + 4, pd->lgr_id, CLC_LGR_ID_LEN);
	wire_put64(out + 20, pd->addr);
	wire_put32(out + 28, pd->rkey);
	wire_put32(out + 32, pd->size);
	memcpy(out + RDMA_PD_TAG_OFF, pd->tag, RDMA_PD_TAG_LEN);
}

int rdma_pd_decode(const void *data, size_t len, struct rdma_pd *pd)
{
	const uint8_t *in = data;

	if (!in || len < RDMA_PD_LEN || memcmp(in, RDMA_PD_MAGIC, 2) || in[2] != RDMA_PD_VERSION)
		return -EPROTO;
	pd->link = in[3];
	memcpy(pd->lgr_id, in + 4, CLC_LGR_ID_LEN);
	pd->addr = wire_get64(in + 20);
	pd->rkey = wire_get32(in + 28);
	pd->size = wire_get32(in + 32);
	memcpy(pd->tag, in + RDMA_PD_TAG_OFF, RDMA_PD_TAG_LEN);
	return 0;
}

int rdma_pd_tag(const uint8_t secret[CLC_SECRET_LEN], enum rdma_pd_dir dir,
		const struct rdma_pd *pd, uint8_t tag[RDMA_PD_TAG_LEN])
{
	uint8_t buf[RDMA_PD_LEN];

	rdma_pd_encode(pd, buf);
	return clc_secret_tag(secret, dir == RDMA_PD_REQ ? "smcproxy rdma req v2" :
			      "smcproxy rdma rep v2", buf, RDMA_PD_TAG_OFF, tag, RDMA_PD_TAG_LEN);
}

bool rdma_pd_tag_ok(const uint8_t secret[CLC_SECRET_LEN], enum rdma_pd_dir dir,
		    const struct rdma_pd *pd)
{
	uint8_t want[RDMA_PD_TAG_LEN];

	if (rdma_pd_tag(secret, dir, pd, want))
		return false;
	return clc_tag_equal(want, pd->tag, RDMA_PD_TAG_LEN);
}

void rdma_tlv_encode(const struct rdma_tlv *a, uint8_t out[RDMA_TLV_LEN])
{
	out[0] = a->version;
	out[1] = a->flags;
	wire_put16(out + 2, a->cm_port);
	memcpy(out + 4, a->gid, 16);
}

int rdma_tlv_decode(const uint8_t *in, size_t len, struct rdma_tlv *a)
{
	if (!in || len < RDMA_TLV_LEN || in[0] != 1)
		return -EPROTO;
	a->version = in[0];
	a->flags = in[1];
	a->cm_port = wire_get16(in + 2);
	memcpy(a->gid, in + 4, 16);
	return a->cm_port ? 0 : -EPROTO;
}

int rdma_tlv_check(const uint8_t *v, size_t len)
{
	return len >= 1 && len <= RDMA_TLV_MAX ? 0 : -EBADMSG;
}
