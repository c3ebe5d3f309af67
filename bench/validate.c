/*
 * validate.c — the schema validator's throughput, single-threaded.
 *
 *   build/bench/validate [SCHEMA VALID INVALID]
 *
 * Defaults to the calendar_event fixtures in ../shared/bench (relative to
 * the repository root).  Compiles the schema once with formats asserted,
 * checks that VALID validates and INVALID does not, then measures two
 * loops, BENCH_ROUNDS rounds (default 5) of BENCH_SECONDS each (default 2),
 * and prints the median of each, one line apiece:
 *
 *   validate_only_per_s 1834567     (arguments already parsed)
 *   parse_validate_per_s 812345     (json_loadb of the text + validate)
 *
 * Owns: nothing but its own run.  Must not: write anything but stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "schema/schema.h"

#define DEFAULT_DIR "../shared/bench/calendar_event."
#define MAX_ROUNDS  51

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0, r;
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			if (cap > (64u << 20)) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = realloc(buf, cap + 1);
			if (!buf) {
				fclose(f);
				return NULL;
			}
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int env_int(const char *name, int dflt, int lo, int hi)
{
	const char *v = getenv(name);
	int x = v ? atoi(v) : dflt;
	return x < lo ? lo : x > hi ? hi : x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One timed loop: validations per second. */
static double run(const tgi_schema *s, json_t *parsed, const char *text, size_t len,
                  double seconds)
{
	volatile int sink = 0;
	long done = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 1024; i++) {
			if (parsed) {
				sink += tgi_schema_validate(s, parsed, 0, NULL);
			} else {
				json_t *v = json_loadb(text, len, 0, NULL);
				sink += tgi_schema_validate(s, v, 0, NULL);
				json_decref(v);
			}
		}
		done += 1024;
		t = now_s() - t0;
	} while (t < seconds);
	(void)sink;
	return (double)done / t;
}

int main(int argc, char **argv)
{
	const char *paths[3] = {DEFAULT_DIR "schema.json", DEFAULT_DIR "valid.json",
	                        DEFAULT_DIR "invalid.json"};
	for (int i = 1; i < argc && i <= 3; i++)
		paths[i - 1] = argv[i];
	double seconds = env_int("BENCH_SECONDS", 2, 1, 600);
	int rounds = env_int("BENCH_ROUNDS", 5, 1, MAX_ROUNDS);

	json_error_t je;
	json_t *schema = json_load_file(paths[0], 0, &je);
	if (!schema) {
		fprintf(stderr, "validate: cannot read the schema \"%s\": %s\n", paths[0], je.text);
		return 1;
	}
	char err[512];
	tgi_schema *s = tgi_schema_compile(schema, TGI_SCHEMA_ASSERT_FORMATS, err, sizeof err);
	json_decref(schema);
	if (!s) {
		fprintf(stderr, "validate: the schema does not compile: %s\n", err);
		return 1;
	}
	size_t len[2];
	char *text[2];
	json_t *doc[2];
	for (int i = 0; i < 2; i++) {
		text[i] = slurp(paths[i + 1], &len[i]);
		doc[i] = text[i] ? json_loadb(text[i], len[i], 0, &je) : NULL;
		if (!doc[i]) {
			fprintf(stderr, "validate: cannot read \"%s\"\n", paths[i + 1]);
			return 1;
		}
	}
	tgi_schema_result res;
	if (tgi_schema_validate(s, doc[0], 0, &res) != 1) {
		fprintf(stderr, "validate: \"%s\" should validate: %s: %s\n", paths[1],
		        res.errors[0].pointer, res.errors[0].message);
		return 1;
	}
	if (tgi_schema_validate(s, doc[1], 0, &res) != 0 ||
	    tgi_schema_validate(s, doc[1], 0, NULL) != 0) {
		fprintf(stderr, "validate: \"%s\" should not validate\n", paths[2]);
		return 1;
	}
	for (int i = 0; i < res.nerrors; i++)
		printf("# invalid: %s: %s\n", res.errors[i].pointer, res.errors[i].message);

	double only[MAX_ROUNDS], parse[MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		only[r] = run(s, doc[0], NULL, 0, seconds);
		parse[r] = run(s, NULL, text[0], len[0], seconds);
	}
	qsort(only, (size_t)rounds, sizeof *only, cmp_double);
	qsort(parse, (size_t)rounds, sizeof *parse, cmp_double);
	printf("validate_only_per_s %.0f\n", only[rounds / 2]);
	printf("parse_validate_per_s %.0f\n", parse[rounds / 2]);

	for (int i = 0; i < 2; i++) {
		json_decref(doc[i]);
		free(text[i]);
	}
	tgi_schema_free(s);
	return 0;
}
