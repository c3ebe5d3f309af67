/*
 * validate.c — the schema validator's throughput, single-threaded.
 *
 *   build/bench/validate [SCHEMA VALID INVALID]
 *
 * Defaults to the calendar_event fixtures in ../shared/bench (relative to
 * the repository root).  Compiles the schema once with formats asserted,
 * checks that VALID validates and INVALID does not (through every entry
 * point), then measures three loops, BENCH_ROUNDS rounds (default 5) of
 * BENCH_SECONDS each (default 2), taking turns so that each sees the same
 * machine, and prints the median of each, one line apiece:
 *
 *   validate_only_per_s 1834567     (instance already parsed into a tgi_jv:
 *                                    tgi_schema_validate_jv)
 *   parse_validate_per_s 812345     (from the text: tgi_schema_validate_text)
 *   jansson_validate_per_s 912345   (an already-parsed json_t, the pipeline's
 *                                    path: tgi_schema_validate, no defaults)
 *
 * Owns: nothing but its own run.  Must not: write anything but stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "schema/schema.h"
#include "util/jv.h"

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

enum { ONLY, PARSE, JANSSON, NLOOPS };

typedef struct subject {
	const tgi_schema *s;
	const tgi_jv     *dom;
	json_t           *json;
	const char       *text;
	size_t            len;
} subject;

/* One timed loop: validations per second. */
static double run(const subject *x, int loop, double seconds)
{
	volatile int sink = 0;
	long done = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 1024; i++) {
			switch (loop) {
			case ONLY:
				sink += tgi_schema_validate_jv(x->s, x->dom, NULL);
				break;
			case PARSE:
				sink += tgi_schema_validate_text(x->s, x->text, x->len, NULL, NULL, 0);
				break;
			default:
				sink += tgi_schema_validate(x->s, x->json, 0, NULL);
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
	tgi_jv_doc *jd = tgi_jv_doc_new(0);
	const tgi_jv *dom[2];
	for (int i = 0; i < 2; i++) {
		dom[i] = tgi_jv_parse(jd, text[i], len[i], err, sizeof err);
		if (!dom[i]) {
			fprintf(stderr, "validate: cannot parse \"%s\": %s\n", paths[i + 1], err);
			return 1;
		}
	}
	if (tgi_schema_validate_jv(s, dom[0], NULL) != 1 ||
	    tgi_schema_validate_text(s, text[0], len[0], NULL, err, sizeof err) != 1 ||
	    tgi_schema_validate_jv(s, dom[1], NULL) != 0 ||
	    tgi_schema_validate_text(s, text[1], len[1], NULL, err, sizeof err) != 0) {
		fprintf(stderr, "validate: the entry points disagree on the fixtures\n");
		return 1;
	}
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

	static const char *const names[NLOOPS] = {
		"validate_only_per_s", "parse_validate_per_s", "jansson_validate_per_s",
	};
	static const char *const what[NLOOPS] = {
		"instance already parsed into a tgi_jv", "tgi_schema_validate_text from the string",
		"tgi_schema_validate on a parsed json_t",
	};
	subject x = {s, dom[0], doc[0], text[0], len[0]};
	double per_s[NLOOPS][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++)
		for (int l = 0; l < NLOOPS; l++)
			per_s[l][r] = run(&x, l, seconds);
	for (int l = 0; l < NLOOPS; l++) {
		qsort(per_s[l], (size_t)rounds, sizeof per_s[l][0], cmp_double);
		printf("# %s: %s\n", names[l], what[l]);
	}
	for (int l = 0; l < NLOOPS; l++)
		printf("%s %.0f\n", names[l], per_s[l][rounds / 2]);
	tgi_jv_doc_free(jd);

	for (int i = 0; i < 2; i++) {
		json_decref(doc[i]);
		free(text[i]);
	}
	tgi_schema_free(s);
	return 0;
}
