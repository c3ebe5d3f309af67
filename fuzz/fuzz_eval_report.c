/*
 * fuzz_eval_report.c — src/eval/report.c on arbitrary reports and text.
 *
 * Input: JSON text.  An array is taken as the results of a run (scored, and
 * rendered in a report around them, as history rows and as the rows of the
 * definitions' sizes); an object as a report (and its "baseline", when it
 * has one).  Every input is also given
 * to the token estimate as bytes.
 *
 * Invariants checked (a violation traps):
 *   - the estimate is at most one token for each byte, plus a tenth;
 *   - scores: every rate is ok/of, ok <= of, pass.of = results;
 *   - the table, the history and the sizes are lines of printable text (no
 *     control character other than the newline);
 *   - the JUnit XML holds no character XML 1.0 forbids and no "]]>", and
 *     has as many <testcase> as </testcase> or "/>" closings;
 *   - the JSON renderings read back equal to the report and the rows (a
 *     real to the 15 significant digits the report prints).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "util/util.h"
#include "fuzz.h"

static void check_rate(const json_t *score, const char *name)
{
	const json_t *r = json_object_get(score, name);
	json_int_t ok = json_integer_value(json_object_get(r, "ok"));
	json_int_t of = json_integer_value(json_object_get(r, "of"));
	const json_t *rate = json_object_get(r, "rate");
	check(ok >= 0 && ok <= of);
	check(of ? json_real_value(rate) == (double)ok / (double)of : json_is_null(rate));
}

static void check_scores(const json_t *scores)
{
	static const char *const names[] = {"tool", "valid", "args", "policy", "pass"};
	const char *k;
	json_t *v;
	for (size_t i = 0; i < 5; i++)
		check_rate(json_object_get(scores, "overall"), names[i]);
	json_object_foreach (json_object_get(scores, "tools"), k, v) {
		for (size_t i = 0; i < 5; i++)
			check_rate(v, names[i]);
		check(json_integer_value(json_object_get(json_object_get(v, "pass"), "of")) ==
		      json_integer_value(json_object_get(v, "results")));
	}
}

/* Printable lines: no control character but the newline. */
static void check_lines(const char *s)
{
	check(s != NULL);
	for (; *s; s++)
		check(*s == '\n' || ((unsigned char)*s >= 0x20 && *s != 0x7f));
}

static void check_xml(const char *x)
{
	check(x != NULL);
	check(strstr(x, "]]>") == NULL);
	check(strstr(x, "\xef\xbf\xbe") == NULL && strstr(x, "\xef\xbf\xbf") == NULL);
	for (const char *p = x; *p; p++)
		check(*p == '\n' || *p == '\t' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
	size_t open = 0, closed = 0;
	for (const char *p = x; (p = strstr(p, "<testcase ")); p++) {
		open++;
		const char *end = strchr(p, '>');
		check(end != NULL);
		closed += end[-1] == '/';
	}
	for (const char *p = x; (p = strstr(p, "</testcase>")); p++)
		closed++;
	check(open == closed);
}

/* a and b equal, reals to 15 significant digits. */
static int near(const json_t *a, const json_t *b)
{
	if (json_is_real(a) && json_is_real(b)) {
		double x = json_real_value(a), y = json_real_value(b);
		return fabs(x - y) <= 1e-14 * fmax(fabs(x), fabs(y));
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!near(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach ((json_t *)a, k, v)
			if (!json_object_get(b, k) || !near(v, json_object_get(b, k)))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

static void render_all(json_t *rep)
{
	char *t = tgi_eval_render(rep, "table");
	check_lines(t);
	free(t);
	char *x = tgi_eval_render(rep, "junit");
	check_xml(x);
	free(x);
	char *j = tgi_eval_render(rep, "json");
	check(j != NULL);
	json_t *back = json_loads(j, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	check(back != NULL && near(back, rep));
	json_decref(back);
	free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t est = tgi_eval_tokens((const char *)data, size);
	check(est <= size + size / 10 + 1);

	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!in)
		return 0;
	json_t *rep;
	if (json_is_array(in)) {
		char *h = tgi_eval_history_render(in, "table");
		check_lines(h);
		free(h);
		h = tgi_eval_sizes_render(in, "table");
		check_lines(h);
		free(h);
		h = tgi_eval_sizes_render(in, "json");
		check(h != NULL);
		json_t *back = json_loads(h, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		check(back != NULL && near(back, in));
		json_decref(back);
		free(h);
		json_t *scores = tgi_eval_scores(in);
		check_scores(scores);
		rep = json_pack("{s:s, s:i, s:o, s:O}", "provider", "scripted", "runs", 1, "scores",
		                scores, "results", in);
	} else if (json_is_object(in)) {
		rep = json_incref(in);
		const json_t *base = json_object_get(rep, "baseline");
		if (json_is_object(base))
			json_object_set_new(rep, "difference", tgi_eval_difference(rep, base));
	} else {
		json_decref(in);
		return 0;
	}
	int failed = tgi_eval_thresholds(rep, size % 3 ? 0.5 : -1, size % 2 ? 0.05 : -1);
	check(failed >= 0 &&
	      (size_t)failed == json_array_size(json_object_get(json_object_get(rep, "thresholds"),
	                                                        "failed")));
	render_all(rep);
	json_decref(rep);
	json_decref(in);
	return 0;
}
