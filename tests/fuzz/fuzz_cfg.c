/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the config schema layer. jansson itself is fuzzed
 * upstream; what we fuzz is everything after it: the position index, the
 * schema walk, the unit parsers, error formatting and the reload diff.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg *cfg = NULL, *def = NULL;
	struct cfg_errors errs;
	struct cfg_prefix prefix;
	struct cfg_addr addr;
	struct cfg_diff diff;
	uint64_t v;
	char *text;

	/* Config files are small; huge inputs only slow the fuzzer down. */
	if (size > 64 * 1024)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	if (cfg_load_string(text, "fuzz.json", &cfg, &errs) == 0) {
		/* A loaded config is complete: the diff must be able to read
		 * every field of it. */
		if (cfg_load_default(&def, NULL) == 0)
			cfg_diff(def, cfg, &diff);
		cfg_free(def);
	} else if (errs.text && strlen(errs.text) != errs.len) {
		abort();	/* the length must describe the text */
	}
	cfg_free(cfg);
	cfg_errors_free(&errs);

	/* The unit parsers see the raw bytes as one value too. */
	cfg_parse_size(text, &v);
	cfg_parse_duration(text, &v);
	cfg_parse_addr(text, &addr);
	cfg_parse_prefix(text, &prefix);

	free(text);
	return 0;
}
