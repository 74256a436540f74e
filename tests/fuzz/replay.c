/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer (as systemd's fuzz-main.c does):
 * calls LLVMFuzzerTestOneInput() once for every file named on the command
 * line and every file in every directory named there (not recursive, in
 * name order). A crash, an abort or a sanitizer report fails the run; a
 * file that cannot be read fails it too, so a broken corpus is noticed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	uint8_t *buf = NULL, *nbuf;
	size_t len = 0, cap = 0, n;
	FILE *f;

	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* Flushed first, so a crash report names the input that caused it. */
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	struct dirent **ents;
	unsigned ran = 0, bad = 0;
	struct stat st;
	char path[4096];
	int i, j, n;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				bad++;
			else
				ran++;
			continue;
		}
		n = scandir(argv[i], &ents, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		for (j = 0; j < n; j++) {
			snprintf(path, sizeof(path), "%s/%s", argv[i], ents[j]->d_name);
			if (ents[j]->d_name[0] != '.' && stat(path, &st) == 0 &&
			    S_ISREG(st.st_mode)) {
				if (run_file(path) < 0)
					bad++;
				else
					ran++;
			}
			free(ents[j]);
		}
		free(ents);
	}
	printf("replay: %u inputs ran, %u unreadable\n", ran, bad);
	return bad ? 1 : 0;
}
