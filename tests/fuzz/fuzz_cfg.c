/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the config schema layer. jansson itself is fuzzed
 * upstream; what we fuzz is everything after it: the position index, the
 * schema walk, the unit parsers, error formatting and the reload diff.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every value jansson returns, down to the depth the index keeps, must
 * have an entry under the same key path. */
static void walk(json_t *v, unsigned depth, struct cfg__buf *path,
		 const struct cfg__pos_index *idx)
{
	const struct cfg__pos *pos;
	const char *key;
	size_t mark, i;
	json_t *child;

	if (depth > CFG__POS_MAX_DEPTH)
		return;
	pos = cfg__pos_find(idx, path->s ? path->s : "");
	if (!pos || pos->line < 1 || pos->col < 1 || pos->key_line < 1 || pos->key_col < 1)
		abort();
	mark = path->len;
	if (json_is_object(v)) {
		json_object_foreach(v, key, child) {
			if (cfg__path_push_key(path, key, strlen(key)) < 0)
				abort();
			walk(child, depth + 1, path, idx);
			cfg__buf_truncate(path, mark);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child) {
			if (cfg__path_push_index(path, i) < 0)
				abort();
			walk(child, depth + 1, path, idx);
			cfg__buf_truncate(path, mark);
		}
	}
}

/*
 * The position index is a second tokenizer next to jansson's; whenever
 * jansson accepts a text, ours must too and must know every value.
 */
static void check_positions(const char *text, size_t len)
{
	struct cfg__pos_index idx = { 0 };
	struct cfg__buf path = { 0 };
	json_t *root;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	if (!root)
		return;
	if (cfg__pos_index_build(&idx, text, len) != 0)
		abort();
	walk(root, 0, &path, &idx);
	cfg__buf_free(&path);
	cfg__pos_index_free(&idx);
	json_decref(root);
}

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

	check_positions(text, strlen(text));

	/* The unit parsers see the raw bytes as one value too. */
	cfg_parse_size(text, &v);
	cfg_parse_duration(text, &v);
	cfg_parse_addr(text, &addr);
	cfg_parse_prefix(text, &prefix);

	free(text);
	return 0;
}
