/* SPDX-License-Identifier: MIT */
/*
 * The registry of link transports (transport-t.h), as HAProxy's
 * xprt_register() and Redis' connTypeRegister() keep theirs. The table is
 * in proxy/transport/transports.c, the one file that names every
 * transport; everybody else finds them here: by the CLC bit of an accept,
 * by a flow's mode, by an address TLV's type, or all of them in order of
 * preference (the server picks the first one both sides offer).
 */
#ifndef SMCPROXY_TRANSPORT_H
#define SMCPROXY_TRANSPORT_H

#include "transport-t.h"

/* NULL-terminated, in order of preference; defined by transports.c. */
extern const struct smc_transport_ops *const smc_transport_table[];

/* The i-th transport, NULL past the last. */
const struct smc_transport_ops *smc_transport_at(unsigned i);
/* The transport of exactly one CLC_TR_* bit, NULL for none. */
const struct smc_transport_ops *smc_transport_by_clc(unsigned bit);
const struct smc_transport_ops *smc_transport_by_mode(enum flow_mode mode);
/* The transport whose address TLV has this type, NULL for none. */
const struct smc_transport_ops *smc_transport_by_tlv(unsigned type);

/* Its slot in net->tp[] and net->tp_off[]: the position of its CLC bit. */
static inline unsigned smc_transport_slot(const struct smc_transport_ops *t)
{
	_Static_assert(SMC_TRANSPORT_SLOTS == 8, "one slot per bit of the CLC transports byte");
	return (unsigned)__builtin_ctz(t->clc_bit);
}

/*
 * Appends a field to out for the stats socket; a field past
 * SMC_FIELDS_MAX is dropped, a string cut to SMC_FIELD_STR_MAX - 1.
 */
void smc_fields_str(struct smc_fields *out, const char *name, const char *v);
void smc_fields_uint(struct smc_fields *out, const char *name, uint64_t v);
void smc_fields_bool(struct smc_fields *out, const char *name, bool v);

struct cfg;
/* Whether the config's "transport" names t itself (not "auto"): its
 * absence is then a problem worth a warning. */
bool smc_transport_named(const struct cfg *cfg, const struct smc_transport_ops *t);

#define smc_transport_foreach(t, i) \
	for ((i) = 0; ((t) = smc_transport_at(i)) != NULL; (i)++)

#endif
