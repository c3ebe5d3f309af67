/*
 * jv.c — the arena JSON parser's throughput against jansson's, one core.
 *
 *   build/bench/jv [DOCUMENT]
 *
 * Defaults to the calendar_event valid fixture in ../shared/bench (relative
 * to the repository root).  Checks that both parsers read the document and
 * agree on it, then runs BENCH_ROUNDS rounds (default 5) that each time
 * both loops for BENCH_SECONDS / BENCH_ROUNDS seconds (BENCH_SECONDS
 * defaults to 2), alternating so that both see the same machine, and
 * prints the median of each, one line apiece:
 *
 *   jv_parse_per_s 2400000          (tgi_jv_parse into a reset arena)
 *   jansson_loadb_per_s 80000       (json_loadb + json_decref)
 *
 * Owns: nothing but its own run.  Must not: write anything but stdout and,
 * on a failed check, stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/jv.h"

#define DEFAULT_DOC "../shared/bench/calendar_event.valid.json"
#define MAX_ROUNDS  51
#define DOC_MAX     (1u << 20)
#define BATCH       256 /* parses between clock reads */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The whole file, at most DOC_MAX bytes; caller frees.  NULL on error. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(DOC_MAX + 1);
	size_t n = buf ? fread(buf, 1, DOC_MAX + 1, f) : 0;
	fclose(f);
	if (!buf || n > DOC_MAX) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static double env_num(const char *name, double dflt, double lo, double hi)
{
	const char *v = getenv(name);
	double x = v ? atof(v) : dflt;
	return x < lo ? lo : x > hi ? hi : x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Keeps the optimiser from dropping the loops' results. */
static volatile uint32_t sink;

static double run_jv(tgi_jv_doc *d, const char *text, size_t len, double secs)
{
	long count = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < BATCH; i++) {
			tgi_jv_doc_reset(d);
			const tgi_jv *v = tgi_jv_parse(d, text, len, NULL, 0);
			sink += v ? v->n : 0;
		}
		count += BATCH;
	} while ((t = now_s() - t0) < secs);
	return (double)count / t;
}

static double run_jansson(const char *text, size_t len, double secs)
{
	long count = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < BATCH / 16; i++) {
			json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
			sink += v ? (uint32_t)json_typeof(v) : 0;
			json_decref(v);
		}
		count += BATCH / 16;
	} while ((t = now_s() - t0) < secs);
	return (double)count / t;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : DEFAULT_DOC;
	size_t len;
	char *text = slurp(path, &len);
	if (!text) {
		fprintf(stderr, "jv: cannot read \"%s\"\n", path);
		return 1;
	}
	int rounds = (int)env_num("BENCH_ROUNDS", 5, 1, MAX_ROUNDS);
	double secs = env_num("BENCH_SECONDS", 2, 0.05, 600) / rounds;

	char err[256];
	tgi_jv_doc *d = tgi_jv_doc_new(16 * (size_t)len + 4096);
	tgi_jv_doc *check = tgi_jv_doc_new(16 * (size_t)len + 4096);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	const tgi_jv *v = tgi_jv_parse(d, text, len, err, sizeof err);
	if (!j || !v) {
		fprintf(stderr, "jv: \"%s\" does not parse: %s\n", path, j ? err : je.text);
		return 1;
	}
	if (!tgi_jv_equal(v, tgi_jv_from_json(check, j))) {
		fprintf(stderr, "jv: the parsers disagree on \"%s\"\n", path);
		return 1;
	}
	json_decref(j);
	tgi_jv_doc_free(check);

	double jv[MAX_ROUNDS], js[MAX_ROUNDS];
	run_jv(d, text, len, secs / 4); /* warm up */
	for (int r = 0; r < rounds; r++) {
		jv[r] = run_jv(d, text, len, secs);
		js[r] = run_jansson(text, len, secs);
	}
	qsort(jv, (size_t)rounds, sizeof jv[0], cmp_double);
	qsort(js, (size_t)rounds, sizeof js[0], cmp_double);
	printf("jv_parse_per_s %.0f\n", jv[rounds / 2]);
	printf("jansson_loadb_per_s %.0f\n", js[rounds / 2]);
	tgi_jv_doc_free(d);
	free(text);
	return 0;
}
