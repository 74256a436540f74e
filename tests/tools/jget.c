/* SPDX-License-Identifier: MIT */
/*
 * jget: print values out of a JSON document for the shell tests, so they
 * need neither jq nor python.
 *
 *   jget PATH... < doc.json
 *
 * PATH is dotted object keys and array indexes ("stats.flows.active.tcp",
 * "flows.0.dest"); "a|b" tries a, then b. Each value is printed on its own
 * line: numbers and strings bare, true/false/null as words, objects and
 * arrays as compact JSON. Exit status 1 if a path is missing, 2 if the
 * input is not JSON.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *lookup(json_t *root, const char *path)
{
	char *copy = strdup(path), *save = NULL;
	json_t *cur = root;

	for (char *tok = strtok_r(copy, ".", &save); tok && cur;
	     tok = strtok_r(NULL, ".", &save)) {
		if (json_is_object(cur)) {
			cur = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);
			cur = *end ? NULL : json_array_get(cur, i);
		} else {
			cur = NULL;
		}
	}
	free(copy);
	return cur;
}

static void print_value(json_t *v)
{
	char *s;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(v));
		break;
	case JSON_REAL:
		printf("%.17g\n", json_real_value(v));
		break;
	case JSON_STRING:
		printf("%s\n", json_string_value(v));
		break;
	case JSON_TRUE:
		puts("true");
		break;
	case JSON_FALSE:
		puts("false");
		break;
	case JSON_NULL:
		puts("null");
		break;
	default:
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		puts(s ? s : "");
		free(s);
	}
}

int main(int argc, char **argv)
{
	json_error_t err;
	int rc = 0;

	if (argc < 2) {
		fputs("usage: jget PATH... < doc.json\n", stderr);
		return 2;
	}
	/* DISABLE_EOF_CHECK: tolerate a trailing newline or a second line */
	json_t *root = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, &err);
	if (!root) {
		fprintf(stderr, "jget: input is not JSON: %d:%d: %s\n",
			err.line, err.column, err.text);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char *alts = strdup(argv[i]), *save = NULL;
		json_t *v = NULL;
		for (char *a = strtok_r(alts, "|", &save); a && !v;
		     a = strtok_r(NULL, "|", &save))
			v = lookup(root, a);
		free(alts);
		if (v) {
			print_value(v);
		} else {
			fprintf(stderr, "jget: no %s\n", argv[i]);
			rc = 1;
		}
	}
	json_decref(root);
	return rc;
}
