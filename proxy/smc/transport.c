/* SPDX-License-Identifier: MIT */
/* Lookups in the registry of link transports (transport.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cfg.h"
#include "transport.h"

const struct smc_transport_ops *smc_transport_at(unsigned i)
{
	unsigned k;

	/* Bounded by the table's terminator, not by a count it could
	 * disagree with. */
	for (k = 0; k < i && smc_transport_table[k]; k++)
		;
	return smc_transport_table[k];
}

const struct smc_transport_ops *smc_transport_by_clc(unsigned bit)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->clc_bit == bit)
			return t;
	return NULL;
}

const struct smc_transport_ops *smc_transport_by_mode(enum flow_mode mode)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->mode == mode)
			return t;
	return NULL;
}

const struct smc_transport_ops *smc_transport_by_tlv(unsigned type)
{
	const struct smc_transport_ops *t;
	unsigned i;

	smc_transport_foreach(t, i)
		if (t->clc_tlv == type)
			return t;
	return NULL;
}

static struct smc_field *fields_add(struct smc_fields *out, const char *name,
				    enum smc_field_type type)
{
	struct smc_field *f;

	if (out->n >= SMC_FIELDS_MAX)
		return NULL;
	f = &out->f[out->n++];
	f->name = name;
	f->type = type;
	return f;
}

void smc_fields_str(struct smc_fields *out, const char *name, const char *v)
{
	struct smc_field *f = fields_add(out, name, SMC_FIELD_STR);

	if (f)
		snprintf(f->str, sizeof(f->str), "%s", v);
}

void smc_fields_uint(struct smc_fields *out, const char *name, uint64_t v)
{
	struct smc_field *f = fields_add(out, name, SMC_FIELD_UINT);

	if (f)
		f->uint = v;
}

void smc_fields_bool(struct smc_fields *out, const char *name, bool v)
{
	struct smc_field *f = fields_add(out, name, SMC_FIELD_BOOL);

	if (f)
		f->boolean = v;
}

bool smc_transport_named(const struct cfg *cfg, const struct smc_transport_ops *t)
{
	return strcmp(cfg_transport_name(cfg->transport), t->name) == 0;
}
