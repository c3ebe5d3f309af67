/*
 * redact.c — `make bench`: what redaction costs a call, alone.  The secret
 * patterns are always on, so the middleware on/off rounds of pipeline.c pay
 * for them on both sides; this measures them: tgi_redact_json on a typical
 * read_file envelope (no secret: no copy is made), on a 50,000-character
 * output (the default result cap) with no secret and with one secret, and
 * tgi_redact_text on a 200-byte log line.  Reports ns per call, the median
 * of rounds.
 *
 *   build/bench/redact [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "mw/mw.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ns per tgi_redact_json of v, the median of rounds of about 0.2 s each. */
static double per_json(const tgi_redactor *r, json_t *v, int rounds)
{
	double m[64];
	for (int k = 0; k < rounds; k++) {
		size_t n = 0;
		double t0 = now_ns(), t;
		do {
			json_decref(tgi_redact_json(r, v, NULL));
			n++;
		} while ((t = now_ns()) - t0 < 2e8);
		m[k] = (t - t0) / (double)n;
	}
	qsort(m, (size_t)rounds, sizeof *m, cmp_double);
	return m[rounds / 2];
}

static double per_text(const tgi_redactor *r, const char *s, int rounds)
{
	double m[64];
	size_t len = strlen(s);
	for (int k = 0; k < rounds; k++) {
		size_t n = 0;
		double t0 = now_ns(), t;
		do {
			free(tgi_redact_text(r, s, len));
			n++;
		} while ((t = now_ns()) - t0 < 2e8);
		m[k] = (t - t0) / (double)n;
	}
	qsort(m, (size_t)rounds, sizeof *m, cmp_double);
	return m[rounds / 2];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1 || rounds > 64)
		return fprintf(stderr, "usage: redact [rounds]\n"), 2;
	tgi_redactor *r;
	char err[512];
	if (tgi_redactor_new(NULL, &r, err, sizeof err) < 0)
		return fprintf(stderr, "redact: %s\n", err), 1;

	json_t *env = json_loads(
	    "{\"op_id\":\"01a22c49-13c9-75da-a60d-0ce99f531d0e\",\"call_id\":null,\"session\":\"s1\","
	    "\"tool\":\"read_file\",\"status\":\"persisted\",\"error\":null,\"output\":{\"path\":"
	    "\"src/main.c\",\"content\":\"     1\\tline 1 of a small file read through the gate\\n"
	    "     2\\tline 2 of a small file read through the gate\\n\",\"lines\":2,\"total_lines\":20,"
	    "\"truncated\":false},\"truncated\":null,\"idempotency_key\":null,\"principal\":\"local\","
	    "\"stages\":[{\"stage\":\"decode\",\"ok\":true},{\"stage\":\"validate\",\"ok\":true},"
	    "{\"stage\":\"identify\",\"ok\":true,\"principal\":\"local\"},{\"stage\":\"decide\","
	    "\"ok\":true,\"decision\":\"allow\",\"rule\":\"mode default\"},{\"stage\":\"execute\","
	    "\"ok\":true,\"ms\":0.05},{\"stage\":\"shape\",\"ok\":true}],\"duration_ms\":0.21}",
	    0, NULL);
	/* 50,000 characters of C-like text, then the same with one key in it */
	size_t big = 50000;
	char *text = malloc(big + 1);
	const char line[] = "\tif (rc != SQLITE_OK) return fail(s, rc, err, errlen, \"x\"); /* y */\n";
	for (size_t i = 0; i < big; i++)
		text[i] = line[i % (sizeof line - 1)];
	text[big] = '\0';
	json_t *plain = json_pack("{s:s}", "content", text);
	memcpy(text + big / 2, "AKIAIOSFODNN7EXAMPLE", 20);
	json_t *secret = json_pack("{s:s}", "content", text);
	const char *log_line = "bridged server \"fs\": read_text_file: ENOENT: no such file or "
	                       "directory, open '/srv/app/config/settings.local.json' (retrying in 2 s)";

	printf("envelope_no_secret   ns_per_call %.0f (no copy)\n", per_json(r, env, rounds));
	printf("output_50k_no_secret ns_per_call %.0f\n", per_json(r, plain, rounds));
	printf("output_50k_one_key   ns_per_call %.0f (masked copy)\n", per_json(r, secret, rounds));
	printf("log_line_200b        ns_per_call %.0f\n", per_text(r, log_line, rounds));
	json_decref(env);
	json_decref(plain);
	json_decref(secret);
	free(text);
	tgi_redactor_free(r);
	return 0;
}
