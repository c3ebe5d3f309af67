/*
 * report.c — what an eval run comes to: the scores of its results, the
 * difference from a baseline, the thresholds, the report as a table, JSON
 * or JUnit XML, the history of kept runs, the definitions' sizes per
 * profile, and the estimated tokens of the tool definitions.
 *
 * The input is the report JSON run.c builds (its shape: eval.h).  Model
 * text (requests, replies, arguments, errors) is data: in the table it is
 * printed with control characters replaced and cut at TEXT_MAX characters
 * with "…"; in JUnit it is XML-escaped and the characters XML 1.0 does not
 * allow are replaced with U+FFFD.
 *
 * Owns: nothing but the values and text it returns.  Must not: ask a model,
 * judge a call, or read or write the ledger (run.c does).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "util/util.h"

/* The checks in the order a failure is named, and "pass" last. */
enum { C_TOOL, C_VALID, C_ARGS, C_POLICY, C_PASS, NCHECKS };
static const char *const check_name[NCHECKS] = {"tool", "valid", "args", "policy", "pass"};

#define NONE_GROUP  "(none)"          /* the group of the no_tool cases */
#define TEXT_MAX    200               /* characters of model text in the table */
#define NAME_MAX_CP 40                /* characters of a tool or model name in a column */
#define XML_TEXT_MAX 4096             /* characters of model text in a JUnit body */
#define XML_MSG_MAX 1000              /* characters of a JUnit message attribute */
#define RENDER_MAX  ((size_t)1 << 30) /* a rendered report's size */
#define RATE_EPS    1e-9              /* rates are ratios: compare them with a margin */

/* ---- small readers of the report ---- */

static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static double num_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* o[key] as a whole number, clamped; otherwise when missing or not a number. */
static long long whole_of(const json_t *o, const char *key, long long otherwise)
{
	double v = num_of(o, key);
	if (isnan(v))
		return otherwise;
	if (v > 9e18 || v < -9e18)
		return v > 0 ? 9000000000000000000LL : -9000000000000000000LL;
	return (long long)v;
}

/* score[check].rate, or NAN when the score, the check or its rate is missing/null. */
double tgi_eval_rate(const json_t *score, const char *check)
{
	return num_of(json_object_get(score, check), "rate");
}

/* The group of a result: its expected tool, or "(none)". */
static const char *group_of(const json_t *result)
{
	const char *t = str_of(json_object_get(result, "expect"), "tool");
	return t ? t : NONE_GROUP;
}

/* A result passed: its "pass" is true (anything else did not pass). */
static int result_passed(const json_t *r)
{
	return json_is_true(json_object_get(r, "pass"));
}

static int result_errored(const json_t *r)
{
	return json_is_string(json_object_get(r, "error"));
}

/* ---- scores ---- */

typedef struct score_acc {
	const char *name;      /* borrowed from the results */
	json_t     *cases;     /* case id -> true: the distinct cases */
	size_t      results;
	size_t      ok[NCHECKS], of[NCHECKS];
} score_acc;

static void acc_add(score_acc *a, const json_t *r)
{
	const json_t *checks = json_object_get(r, "checks");
	const char *id = str_of(r, "case");
	json_object_set_new_nocheck(a->cases, id ? id : "", json_true());
	a->results++;
	for (int c = 0; c < C_PASS; c++) {
		const json_t *v = json_object_get(checks, check_name[c]);
		if (!json_is_boolean(v))
			continue; /* null: does not apply */
		a->of[c]++;
		a->ok[c] += json_is_true(v);
	}
	a->of[C_PASS]++;
	a->ok[C_PASS] += result_passed(r);
}

static json_t *rate_json(size_t ok, size_t of)
{
	return json_pack("{s:I, s:I, s:o}", "ok", (json_int_t)ok, "of", (json_int_t)of, "rate",
	                 of ? json_real((double)ok / (double)of) : json_null());
}

static json_t *acc_json(const score_acc *a)
{
	json_t *s = json_pack("{s:I, s:I}", "cases", (json_int_t)json_object_size(a->cases),
	                      "results", (json_int_t)a->results);
	for (int c = 0; c < NCHECKS; c++)
		json_object_set_new(s, check_name[c], rate_json(a->ok[c], a->of[c]));
	return s;
}

/* The groups in the order they first appear, "(none)" last. */
json_t *tgi_eval_scores(const json_t *results)
{
	size_t n = json_array_size(results);
	score_acc all = {.cases = json_object()};
	score_acc *g = tgi_xcalloc(n ? n : 1, sizeof *g);
	size_t ng = 0;
	json_t *index = json_object(); /* group name -> its place in g */

	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(results, i);
		const char *name = group_of(r);
		const json_t *at = json_object_get(index, name);
		size_t k = at ? (size_t)json_integer_value(at) : ng;
		if (!at) {
			g[ng++] = (score_acc){.name = name, .cases = json_object()};
			json_object_set_new_nocheck(index, name, json_integer((json_int_t)k));
		}
		acc_add(&g[k], r);
		acc_add(&all, r);
	}

	json_t *tools = json_object();
	for (int last = 0; last < 2; last++)
		for (size_t k = 0; k < ng; k++)
			if ((strcmp(g[k].name, NONE_GROUP) == 0) == last)
				json_object_set_new(tools, g[k].name, acc_json(&g[k]));
	json_t *out = json_pack("{s:o, s:o}", "overall", acc_json(&all), "tools", tools);

	for (size_t k = 0; k < ng; k++)
		json_decref(g[k].cases);
	free(g);
	json_decref(all.cases);
	json_decref(index);
	return out;
}

/* ---- the difference from a baseline ---- */

static json_t *diff_score(const json_t *after, const json_t *before)
{
	json_t *d = json_object();
	for (int c = 0; c < NCHECKS; c++) {
		double a = tgi_eval_rate(after, check_name[c]);
		double b = tgi_eval_rate(before, check_name[c]);
		json_object_set_new(d, check_name[c], isnan(a) || isnan(b) ? json_null() : json_real(a - b));
	}
	return d;
}

json_t *tgi_eval_difference(const json_t *rep, const json_t *baseline)
{
	const json_t *a = json_object_get(rep, "scores"), *b = json_object_get(baseline, "scores");
	json_t *at = json_object_get(a, "tools"), *bt = json_object_get(b, "tools");
	json_t *tools = json_object();
	const char *k;
	json_t *v;

	json_object_foreach (at, k, v)
		if (strcmp(k, NONE_GROUP))
			json_object_set_new(tools, k, diff_score(v, json_object_get(bt, k)));
	json_object_foreach (bt, k, v)
		if (strcmp(k, NONE_GROUP) && !json_object_get(tools, k))
			json_object_set_new(tools, k, diff_score(NULL, v));
	if (json_object_get(at, NONE_GROUP) || json_object_get(bt, NONE_GROUP))
		json_object_set_new(tools, NONE_GROUP, diff_score(json_object_get(at, NONE_GROUP),
		                                                  json_object_get(bt, NONE_GROUP)));
	return json_pack("{s:o, s:o}", "overall",
	                 diff_score(json_object_get(a, "overall"), json_object_get(b, "overall")),
	                 "tools", tools);
}

/* ---- thresholds ---- */

/* The fewest decimals (2 to 6) that print x back exactly. */
static int decimals_of(double x)
{
	for (int d = 2; d < 6; d++) {
		char b[64];
		snprintf(b, sizeof b, "%.*f", d, x);
		if (strtod(b, NULL) == x)
			return d;
	}
	return 6;
}

/* v and limit printed with the limit's decimals, more while they would
 * print the same (a rate of 0.899 is not shown "under 0.90" as 0.90). */
static int decimals_vs(double v, double limit)
{
	int d = decimals_of(limit);
	for (; d < 6; d++) {
		char a[64], b[64];
		snprintf(a, sizeof a, "%.*f", d, v);
		snprintf(b, sizeof b, "%.*f", d, limit);
		if (strcmp(a, b))
			break;
	}
	return d;
}

static json_t *check_new(const char *group, const char *which, double limit, char *failed)
{
	json_t *c = json_pack("{s:s, s:s, s:f, s:o}", "group", group, "threshold", which, "limit",
	                      limit, "failed", failed ? tgi_json_text(failed, strlen(failed)) : json_null());
	free(failed);
	return c;
}

static char *fail_under_sentence(const char *group, double pass, double limit)
{
	char s[512];
	if (isnan(pass)) {
		tgi_snprintf(s, sizeof s, "%s: pass has no results, so it is not %.*f or more", group,
		             decimals_of(limit), limit);
		return tgi_strdup(s);
	}
	if (pass >= limit - RATE_EPS)
		return NULL;
	int d = decimals_vs(pass, limit);
	tgi_snprintf(s, sizeof s, "%s: pass %.*f is under %.*f", group, d, pass, d, limit);
	return tgi_strdup(s);
}

static char *max_drop_sentence(const char *group, double before, double after, double limit)
{
	char s[512];
	double drop = before - after;
	if (drop <= limit + RATE_EPS)
		return NULL;
	/* more decimals while the rates shown would not give the drop shown */
	int d = decimals_vs(drop, limit);
	for (; d < 4; d++) {
		char a[64], z[64], dz[64];
		snprintf(a, sizeof a, "%.*f", d, before);
		snprintf(z, sizeof z, "%.*f", d, after);
		snprintf(dz, sizeof dz, "%.*f", d, strtod(a, NULL) - strtod(z, NULL));
		snprintf(a, sizeof a, "%.*f", d, drop);
		if (!strcmp(a, dz))
			break;
	}
	tgi_snprintf(s, sizeof s, "%s: pass dropped %.*f (%.*f → %.*f), more than %.*f", group, d,
	             drop, d, before, d, after, d, limit);
	return tgi_strdup(s);
}

/* The checks of one group (now: its score; was: the baseline's, or NULL). */
static void group_checks(json_t *checks, const char *group, const json_t *now, const json_t *was,
                         double fail_under, double max_drop)
{
	double pass = tgi_eval_rate(now, "pass"), before = tgi_eval_rate(was, "pass");
	if (fail_under >= 0)
		json_array_append_new(checks, check_new(group, "fail_under", fail_under,
		                                        fail_under_sentence(group, pass, fail_under)));
	if (max_drop >= 0 && !isnan(pass) && !isnan(before))
		json_array_append_new(checks, check_new(group, "max_drop", max_drop,
		                                        max_drop_sentence(group, before, pass, max_drop)));
}

/* The thresholds checked, in order (overall, then each group; fail_under
 * before max_drop): [{"group", "threshold", "limit", "failed": sentence |
 * null}].  max_drop only with a baseline, and for a group both sides have. */
static json_t *threshold_checks(const json_t *rep, double fail_under, double max_drop)
{
	const json_t *scores = json_object_get(rep, "scores");
	const json_t *base = json_object_get(json_object_get(rep, "baseline"), "scores");
	json_t *checks = json_array();
	if (!json_is_object(base))
		max_drop = -1;
	group_checks(checks, "overall", json_object_get(scores, "overall"),
	             json_object_get(base, "overall"), fail_under, max_drop);
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(scores, "tools"), k, v)
		group_checks(checks, k, v, json_object_get(json_object_get(base, "tools"), k), fail_under,
		             max_drop);
	return checks;
}

int tgi_eval_thresholds(json_t *rep, double fail_under, double max_drop)
{
	json_t *checks = threshold_checks(rep, fail_under, max_drop);
	json_t *failed = json_array();
	size_t i;
	json_t *c;
	json_array_foreach (checks, i, c) {
		json_t *s = json_object_get(c, "failed");
		if (json_is_string(s))
			json_array_append(failed, s);
	}
	json_decref(checks);
	int n = (int)json_array_size(failed);
	json_object_set_new(rep, "thresholds",
	                    json_pack("{s:o, s:o, s:o}", "fail_under",
	                              fail_under >= 0 ? json_real(fail_under) : json_null(), "max_drop",
	                              max_drop >= 0 ? json_real(max_drop) : json_null(), "failed",
	                              failed));
	return n;
}

/* ---- text helpers ---- */

/* v with thousands separators. */
static const char *grouped(long long v, char out[32])
{
	char raw[32];
	int n = snprintf(raw, sizeof raw, "%lld", v), k = 0;
	for (int i = 0; i < n; i++) {
		if (i && raw[i - 1] != '-' && (n - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = raw[i];
	}
	out[k] = '\0';
	return out;
}

static const char *pct(double rate, char out[16])
{
	if (isnan(rate))
		return strcpy(out, "-");
	snprintf(out, 16, "%.0f%%", floor(rate * 100 + 0.5));
	return out;
}

/* A difference of rates in points: "+3 pts", "-6 pts", "0 pts", "-". */
static const char *pts(double d, char out[24])
{
	if (isnan(d))
		return strcpy(out, "-");
	long v = lround(fmax(-1e9, fmin(1e9, d * 100)));
	snprintf(out, 24, v > 0 ? "+%ld pts" : "%ld pts", v);
	return out;
}

/* s (a C string) as data on one line: control characters replaced, at most
 * max characters, "…" when cut.  Caller frees. */
static char *clipped_tail(const char *s, size_t max, const char *tail)
{
	size_t n = s ? strlen(s) : 0;
	size_t cut = tgi_utf8_offset(s ? s : "", n, max);
	char *part = tgi_strndup(s ? s : "", cut);
	size_t cap = cut * 3 + 4; /* an invalid byte becomes U+FFFD: 3 bytes */
	char *out = tgi_xmalloc(cap + 3);
	tgi_sanitize(out, cap, part);
	free(part);
	if (cut < n)
		strcat(out, tail);
	return out;
}

static char *clipped(const char *s, size_t max)
{
	return clipped_tail(s, max, "…");
}

static const char *or_str(const char *s, const char *otherwise)
{
	return s ? s : otherwise;
}

static void put_clipped(tgi_buf *b, const char *s, size_t max)
{
	char *c = clipped(s, max);
	tgi_buf_puts(b, c);
	free(c);
}

/* A JSON value compactly, as clipped data. */
static void put_json_clipped(tgi_buf *b, const json_t *v, size_t max)
{
	char *j = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	put_clipped(b, j ? j : "?", max);
	free(j);
}

/* s in a column of width characters, left- or right-aligned. */
static void put_col(tgi_buf *b, const char *s, size_t width, int right)
{
	size_t w = tgi_utf8_len(s, strlen(s));
	if (!right)
		tgi_buf_puts(b, s);
	if (right && w >= width)
		tgi_buf_puts(b, " ");   /* a value as wide as its column still stands apart */
	for (; w < width; w++)
		tgi_buf_puts(b, " ");
	if (right)
		tgi_buf_puts(b, s);
}

/* A name for a column: clipped, and its width in characters. */
static char *col_name(const char *s, size_t *width)
{
	char *c = clipped(s ? s : "-", NAME_MAX_CP);
	size_t w = tgi_utf8_len(c, strlen(c));
	if (width && w > *width)
		*width = w;
	return c;
}

/* ---- the table ---- */

/* The width of the group column: the widest of "overall" and the groups
 * (the keys of tools), two spaces, at least 16. */
static size_t group_width(const json_t *tools)
{
	size_t w = strlen("overall");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)tools, k, v)
		free(col_name(k, &w));
	return w + 2 < 16 ? 16 : w + 2;
}

static void score_row(tgi_buf *b, const char *name, const json_t *s, size_t width)
{
	static const size_t colw[NCHECKS] = {7, 7, 7, 8, 7};
	char *n = col_name(name, NULL), cases[32], p[16];
	put_col(b, n, width, 0);
	free(n);
	put_col(b, grouped(whole_of(s, "cases", 0), cases), 5, 1);
	for (int c = 0; c < NCHECKS; c++)
		put_col(b, pct(tgi_eval_rate(s, check_name[c]), p), colw[c], 1);
	tgi_buf_puts(b, "\n");
}

static void table_scores(tgi_buf *b, const json_t *scores)
{
	const json_t *tools = json_object_get(scores, "tools");
	size_t width = group_width(tools);
	put_col(b, "tool", width, 0);
	tgi_buf_puts(b, "cases   tool  valid   args  policy   pass\n");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)tools, k, v)
		score_row(b, k, v, width);
	score_row(b, "overall", json_object_get(scores, "overall"), width);
}

static void table_header(tgi_buf *b, const json_t *rep)
{
	char n1[32], n2[32];
	const json_t *suite = json_object_get(rep, "suite");
	long long cases = whole_of(suite, "cases", -1);
	if (cases < 0)
		cases = whole_of(json_object_get(json_object_get(rep, "scores"), "overall"), "cases", 0);
	long long nruns = whole_of(rep, "runs", 1);
	tgi_buf_printf(b, "eval: %s case%s × %lld run%s", grouped(cases, n1),
	               cases == 1 ? "" : "s", nruns, nruns == 1 ? "" : "s");
	const char *provider = str_of(rep, "provider"), *model = str_of(rep, "model");
	if (provider || model) {
		tgi_buf_puts(b, ", ");
		put_clipped(b, provider ? provider : "", NAME_MAX_CP);
		if (provider && model)
			tgi_buf_puts(b, " ");
		put_clipped(b, model ? model : "", NAME_MAX_CP * 2);
	}
	if (str_of(rep, "profile")) {
		tgi_buf_puts(b, ", profile ");
		put_clipped(b, str_of(rep, "profile"), NAME_MAX_CP);
	}
	tgi_buf_puts(b, "\n");

	const json_t *d = json_object_get(rep, "definitions");
	if (!json_is_object(d))
		return;
	long long ntools = whole_of(d, "tools", 0);
	tgi_buf_printf(b, "definitions: %lld tool%s, %s chars, ~%s tokens", ntools,
	               ntools == 1 ? "" : "s", grouped(whole_of(d, "chars", 0), n1),
	               grouped(whole_of(d, "tokens_est", 0), n2));
	if (str_of(d, "api")) {
		tgi_buf_puts(b, " (");
		put_clipped(b, str_of(d, "api"), NAME_MAX_CP);
		tgi_buf_puts(b, ")");
	}
	tgi_buf_puts(b, "\n");
}

/* "read_file {"path":"README.md"} (decision ask or allow)", "no tool call" */
static void put_expected(tgi_buf *b, const json_t *expect, size_t max)
{
	const char *tool = str_of(expect, "tool");
	if (!tool) {
		tgi_buf_puts(b, "no tool call");
		return;
	}
	put_clipped(b, tool, NAME_MAX_CP);
	const json_t *args = json_object_get(expect, "args");
	if (json_is_object(args)) {
		tgi_buf_puts(b, " ");
		put_json_clipped(b, args, max);
	}
	const json_t *dec = json_object_get(expect, "decision");
	size_t nd = json_array_size(dec);
	if (nd && !(nd == 1 && !strcmp(or_str(json_string_value(json_array_get(dec, 0)), ""), "allow"))) {
		tgi_buf_puts(b, " (decided ");
		for (size_t i = 0; i < nd; i++) {
			tgi_buf_puts(b, i ? " or " : "");
			put_clipped(b, or_str(json_string_value(json_array_get(dec, i)), "?"), NAME_MAX_CP);
		}
		tgi_buf_puts(b, ")");
	}
}

/* "read_file {"path":"readme.md"}, decided ask by rule r1 (1 of 2 calls)",
 * "no tool call; text: ..." */
static void put_got(tgi_buf *b, const json_t *r, size_t max)
{
	const json_t *got = json_object_get(r, "got");
	const char *tool = str_of(got, "tool"), *text = str_of(got, "text");
	if (!tool) {
		tgi_buf_puts(b, "no tool call");
		if (text && *text) {
			tgi_buf_puts(b, "; text: ");
			put_clipped(b, text, max);
		}
		return;
	}
	put_clipped(b, tool, NAME_MAX_CP);
	const json_t *args = json_object_get(got, "args");
	if (args && !json_is_null(args)) {
		tgi_buf_puts(b, " ");
		put_json_clipped(b, args, max);
	}
	if (str_of(r, "decision")) {
		tgi_buf_puts(b, ", decided ");
		put_clipped(b, str_of(r, "decision"), NAME_MAX_CP);
		if (str_of(r, "rule")) {
			tgi_buf_puts(b, " by rule ");
			put_clipped(b, str_of(r, "rule"), NAME_MAX_CP);
		}
	}
	long long calls = whole_of(got, "calls", 0);
	if (calls > 1)
		tgi_buf_printf(b, " (first of %lld calls)", calls);
}

static void table_failing(tgi_buf *b, const json_t *results)
{
	size_t i, nfail = 0;
	json_t *r;
	json_array_foreach (results, i, r)
		nfail += !result_passed(r);
	if (!nfail) {
		tgi_buf_printf(b, "failing: none\n");
		return;
	}
	char n[32];
	tgi_buf_printf(b, "failing (%s):\n", grouped((long long)nfail, n));
	json_array_foreach (results, i, r) {
		if (result_passed(r))
			continue;
		const json_t *f = json_object_get(r, "failure");
		tgi_buf_puts(b, "  ");
		put_clipped(b, str_of(r, "case") ? str_of(r, "case") : "?", TEXT_MAX);
		if (str_of(r, "where")) {
			tgi_buf_puts(b, " (");
			put_clipped(b, str_of(r, "where"), TEXT_MAX);
			tgi_buf_puts(b, ")");
		}
		tgi_buf_printf(b, " run %lld: ", whole_of(r, "run", 1));
		if (result_errored(r)) {
			tgi_buf_puts(b, "error: ");
			put_clipped(b, str_of(r, "error"), TEXT_MAX);
		} else {
			put_clipped(b, str_of(f, "check") ? str_of(f, "check") : "pass", NAME_MAX_CP);
			tgi_buf_puts(b, ": ");
			put_clipped(b, str_of(f, "message") ? str_of(f, "message") : "failed", TEXT_MAX);
		}
		tgi_buf_puts(b, "\n    request: ");
		put_clipped(b, str_of(r, "request") ? str_of(r, "request") : "", TEXT_MAX);
		tgi_buf_puts(b, "\n    expected: ");
		put_expected(b, json_object_get(r, "expect"), TEXT_MAX);
		if (!result_errored(r)) {
			tgi_buf_puts(b, "\n    got: ");
			put_got(b, r, TEXT_MAX);
		}
		tgi_buf_puts(b, "\n");
	}
}

static void diff_row(tgi_buf *b, const char *name, const json_t *after, const json_t *before,
                     const json_t *diff, size_t width)
{
	static const size_t colw[] = {8, 9, 8, 10}; /* tool Δ, valid Δ, args Δ, policy Δ */
	char *n = col_name(name, NULL), p[16], d[24];
	put_col(b, n, width, 0);
	free(n);
	put_col(b, pct(tgi_eval_rate(before, "pass"), p), 11, 1);
	put_col(b, pct(tgi_eval_rate(after, "pass"), p), 7, 1);
	put_col(b, pts(num_of(diff, "pass"), d), 9, 1);
	for (int c = 0; c < C_PASS; c++)
		put_col(b, pts(num_of(diff, check_name[c]), d), colw[c], 1);
	tgi_buf_puts(b, "\n");
}

static void table_compare(tgi_buf *b, const json_t *rep)
{
	const json_t *base = json_object_get(rep, "baseline");
	const json_t *a = json_object_get(rep, "scores"), *z = json_object_get(base, "scores");
	const json_t *diff = json_object_get(rep, "difference");
	const json_t *at = json_object_get(a, "tools"), *zt = json_object_get(z, "tools");
	const json_t *dt = json_object_get(diff, "tools");

	tgi_buf_puts(b, "\ncompared with ");
	put_clipped(b, str_of(base, "config") ? str_of(base, "config") : "the other configuration",
	            TEXT_MAX);
	tgi_buf_puts(b, " (baseline):\n");
	size_t width = group_width(dt);
	put_col(b, "tool", width, 0);
	tgi_buf_puts(b, "pass before  after        Δ  tool Δ  valid Δ  args Δ  policy Δ\n");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)dt, k, v)
		diff_row(b, k, json_object_get(at, k), json_object_get(zt, k), v, width);
	diff_row(b, "overall", json_object_get(a, "overall"), json_object_get(z, "overall"),
	         json_object_get(diff, "overall"), width);

	const json_t *da = json_object_get(rep, "definitions"), *dz = json_object_get(base, "definitions");
	if (json_is_object(da) && json_is_object(dz)) {
		char c1[32], c2[32], t1[32], t2[32];
		tgi_buf_printf(b, "definitions: %s → %s chars, ~%s → ~%s tokens\n",
		               grouped(whole_of(dz, "chars", 0), c1), grouped(whole_of(da, "chars", 0), c2),
		               grouped(whole_of(dz, "tokens_est", 0), t1),
		               grouped(whole_of(da, "tokens_est", 0), t2));
	}
}

static void table_thresholds(tgi_buf *b, const json_t *rep)
{
	const json_t *t = json_object_get(rep, "thresholds");
	if (!json_is_number(json_object_get(t, "fail_under")) &&
	    !json_is_number(json_object_get(t, "max_drop")))
		return;
	const json_t *failed = json_object_get(t, "failed");
	if (!json_array_size(failed)) {
		tgi_buf_puts(b, "\nthresholds: met\n");
		return;
	}
	tgi_buf_puts(b, "\n");
	size_t i;
	json_t *s;
	json_array_foreach (failed, i, s) {
		tgi_buf_puts(b, "threshold failed: ");
		put_clipped(b, or_str(json_string_value(s), "?"), TEXT_MAX * 2);
		tgi_buf_puts(b, "\n");
	}
}

static void render_table(tgi_buf *b, const json_t *rep)
{
	table_header(b, rep);
	tgi_buf_puts(b, "\n");
	table_scores(b, json_object_get(rep, "scores"));
	tgi_buf_puts(b, "\n");
	table_failing(b, json_object_get(rep, "results"));
	if (json_is_object(json_object_get(rep, "baseline")))
		table_compare(b, rep);
	table_thresholds(b, rep);
}

/* ---- JUnit XML ---- */

/* Is cp a character XML 1.0 allows (and not a control character)? */
static int xml_char_ok(uint32_t cp)
{
	if (cp == 0x9 || cp == 0xA || cp == 0xD)
		return 1;
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
		return 0;
	return cp != 0xFFFE && cp != 0xFFFF;
}

/* s XML-escaped, at most max characters ("…" when cut).  attr: for an
 * attribute value (tab, newline and CR as character references, so a
 * parser does not fold them). */
static void put_xml(tgi_buf *b, const char *s, size_t max, int attr)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), chars = 0;
	for (size_t i = 0; i < n; chars++) {
		if (chars == max) {
			tgi_buf_puts(b, "…");
			return;
		}
		uint32_t cp = 0;
		size_t len = tgi_utf8_decode((const char *)u + i, n - i, &cp);
		if (!len || !xml_char_ok(cp)) {
			tgi_buf_puts(b, "\xEF\xBF\xBD");
			i += len ? len : 1;
			continue;
		}
		const char *e = NULL;
		switch (cp) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&apos;"; break;
		case '\t': e = attr ? "&#9;" : NULL; break;
		case '\n': e = attr ? "&#10;" : NULL; break;
		case '\r': e = "&#13;"; break;
		}
		if (e)
			tgi_buf_puts(b, e);
		else
			tgi_buf_append(b, u + i, len);
		i += len;
	}
}

/* "2026-11-30T21:04:11" from started (ISO 8601 text), or "". */
static void junit_timestamp(const json_t *started, char out[32])
{
	const char *s = json_string_value(started);
	out[0] = '\0';
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	if (!s || strlen(s) < sizeof shape - 1)
		return;
	for (size_t i = 0; i < sizeof shape - 1; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return;
	memcpy(out, s, sizeof shape - 1);
	out[sizeof shape - 1] = '\0';
}

typedef struct junit_counts {
	size_t tests, failures, errors;
	double ms;
} junit_counts;

static void junit_count(const json_t *results, const char *group, junit_counts *k)
{
	size_t i;
	json_t *r;
	*k = (junit_counts){0};
	json_array_foreach (results, i, r) {
		if (group && strcmp(group_of(r), group))
			continue;
		k->tests++;
		if (result_errored(r))
			k->errors++;
		else if (!result_passed(r))
			k->failures++;
		double ms = num_of(r, "ms");
		k->ms += isnan(ms) || ms < 0 ? 0 : ms;
	}
}

static void junit_property(tgi_buf *b, const char *name, const char *value)
{
	tgi_buf_printf(b, "      <property name=\"%s\" value=\"", name);
	put_xml(b, value ? value : "", XML_MSG_MAX, 1);
	tgi_buf_puts(b, "\"/>\n");
}

static void junit_properties(tgi_buf *b, const json_t *rep)
{
	tgi_buf_puts(b, "    <properties>\n");
	junit_property(b, "provider", str_of(rep, "provider"));
	junit_property(b, "model", str_of(rep, "model"));
	junit_property(b, "profile", str_of(rep, "profile"));
	junit_property(b, "manifest", str_of(rep, "manifest"));
	const json_t *base = json_object_get(rep, "baseline");
	if (json_is_object(base)) {
		junit_property(b, "baseline.config", str_of(base, "config"));
		junit_property(b, "baseline.manifest", str_of(base, "manifest"));
	}
	tgi_buf_puts(b, "    </properties>\n");
}

static void junit_body(tgi_buf *b, const json_t *r)
{
	tgi_buf_puts(b, "request: ");
	put_xml(b, str_of(r, "request"), XML_TEXT_MAX, 0);
	tgi_buf_puts(b, "\nexpected: ");
	tgi_buf tmp;
	tgi_buf_init(&tmp, RENDER_MAX);
	put_expected(&tmp, json_object_get(r, "expect"), XML_TEXT_MAX);
	put_xml(b, tmp.p, (size_t)-1, 0);
	tgi_buf_free(&tmp);
	if (!result_errored(r)) {
		tgi_buf_init(&tmp, RENDER_MAX);
		put_got(&tmp, r, XML_TEXT_MAX);
		tgi_buf_puts(b, "\ngot: ");
		put_xml(b, tmp.p, (size_t)-1, 0);
		tgi_buf_free(&tmp);
	}
	if (str_of(r, "where")) {
		tgi_buf_puts(b, "\nwhere: ");
		put_xml(b, str_of(r, "where"), XML_MSG_MAX, 0);
	}
	tgi_buf_puts(b, "\n");
}

static void junit_testcase(tgi_buf *b, const json_t *r, const char *group)
{
	double ms = num_of(r, "ms");
	tgi_buf_puts(b, "    <testcase classname=\"toolgate.eval.");
	put_xml(b, group, XML_MSG_MAX, 1);
	tgi_buf_puts(b, "\" name=\"");
	put_xml(b, str_of(r, "case") ? str_of(r, "case") : "?", XML_MSG_MAX, 1);
	tgi_buf_printf(b, " [run %lld]\" time=\"%.3f\"", whole_of(r, "run", 1),
	               isnan(ms) || ms < 0 ? 0.0 : ms / 1000);
	if (result_passed(r)) {
		tgi_buf_puts(b, "/>\n");
		return;
	}
	const json_t *f = json_object_get(r, "failure");
	if (result_errored(r)) {
		tgi_buf_puts(b, ">\n      <error type=\"provider\" message=\"");
		put_xml(b, str_of(r, "error"), XML_MSG_MAX, 1);
	} else {
		tgi_buf_puts(b, ">\n      <failure type=\"");
		put_xml(b, str_of(f, "check") ? str_of(f, "check") : "pass", XML_MSG_MAX, 1);
		tgi_buf_puts(b, "\" message=\"");
		put_xml(b, str_of(f, "message") ? str_of(f, "message") : "failed", XML_MSG_MAX, 1);
	}
	tgi_buf_puts(b, "\">");
	junit_body(b, r);
	tgi_buf_puts(b, result_errored(r) ? "</error>\n" : "</failure>\n");
	tgi_buf_puts(b, "    </testcase>\n");
}

static void junit_group(tgi_buf *b, const json_t *rep, const char *group, const char *stamp)
{
	const json_t *results = json_object_get(rep, "results");
	junit_counts k;
	junit_count(results, group, &k);
	tgi_buf_puts(b, "  <testsuite name=\"");
	put_xml(b, group, XML_MSG_MAX, 1);
	tgi_buf_printf(b, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" "
	               "time=\"%.3f\"", k.tests, k.failures, k.errors, k.ms / 1000);
	if (*stamp)
		tgi_buf_printf(b, " timestamp=\"%s\"", stamp);
	tgi_buf_puts(b, ">\n");
	junit_properties(b, rep);
	size_t i;
	json_t *r;
	json_array_foreach (results, i, r)
		if (!strcmp(group_of(r), group))
			junit_testcase(b, r, group);
	tgi_buf_puts(b, "  </testsuite>\n");
}

static void junit_thresholds(tgi_buf *b, const json_t *rep, const json_t *checks,
                             const char *stamp)
{
	size_t i, nfail = 0;
	json_t *c;
	json_array_foreach (checks, i, c)
		nfail += json_is_string(json_object_get(c, "failed"));
	tgi_buf_printf(b, "  <testsuite name=\"thresholds\" tests=\"%zu\" failures=\"%zu\" "
	               "errors=\"0\" skipped=\"0\" time=\"0.000\"", json_array_size(checks), nfail);
	if (*stamp)
		tgi_buf_printf(b, " timestamp=\"%s\"", stamp);
	tgi_buf_puts(b, ">\n");
	junit_properties(b, rep);
	json_array_foreach (checks, i, c) {
		const char *which = str_of(c, "threshold");
		double limit = num_of(c, "limit");
		tgi_buf_puts(b, "    <testcase classname=\"toolgate.eval.thresholds\" name=\"");
		put_xml(b, str_of(c, "group"), XML_MSG_MAX, 1);
		tgi_buf_printf(b, " %s %.*f\" time=\"0.000\"", !strcmp(which, "max_drop") ? "max-drop"
		               : "fail-under", decimals_of(limit), limit);
		const char *failed = str_of(c, "failed");
		if (!failed) {
			tgi_buf_puts(b, "/>\n");
			continue;
		}
		tgi_buf_printf(b, ">\n      <failure type=\"%s\" message=\"", which);
		put_xml(b, failed, XML_MSG_MAX, 1);
		tgi_buf_puts(b, "\">");
		put_xml(b, failed, XML_MSG_MAX, 0);
		tgi_buf_puts(b, "</failure>\n    </testcase>\n");
	}
	tgi_buf_puts(b, "  </testsuite>\n");
}

/* The groups of the results in the table's order: the scores' tools, then
 * any group of a result they lack. */
static json_t *junit_groups(const json_t *rep)
{
	json_t *groups = json_object();
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(json_object_get(rep, "scores"), "tools"), k, v)
		json_object_set_new(groups, k, json_true());
	size_t i;
	json_array_foreach (json_object_get(rep, "results"), i, v)
		if (!json_object_get(groups, group_of(v)))
			json_object_set_new(groups, group_of(v), json_true());
	return groups;
}

static void render_junit(tgi_buf *b, const json_t *rep)
{
	const json_t *t = json_object_get(rep, "thresholds");
	const json_t *fu = json_object_get(t, "fail_under"), *md = json_object_get(t, "max_drop");
	json_t *checks = NULL;
	if (json_is_number(fu) || json_is_number(md))
		checks = threshold_checks(rep, json_is_number(fu) ? json_number_value(fu) : -1,
		                          json_is_number(md) ? json_number_value(md) : -1);
	char stamp[32];
	junit_timestamp(json_object_get(rep, "started"), stamp);

	junit_counts all;
	junit_count(json_object_get(rep, "results"), NULL, &all);
	size_t i, tfail = 0;
	json_t *c;
	json_array_foreach (checks, i, c)
		tfail += json_is_string(json_object_get(c, "failed"));
	double dur = num_of(rep, "duration_ms");
	tgi_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	               "<testsuites name=\"toolgate eval\" tests=\"%zu\" failures=\"%zu\" "
	               "errors=\"%zu\" time=\"%.3f\">\n",
	               all.tests + json_array_size(checks), all.failures + tfail, all.errors,
	               (isnan(dur) || dur < 0 ? all.ms : dur) / 1000);

	json_t *groups = junit_groups(rep);
	const char *k;
	json_t *v;
	json_object_foreach (groups, k, v)
		junit_group(b, rep, k, stamp);
	json_decref(groups);
	if (checks)
		junit_thresholds(b, rep, checks, stamp);
	json_decref(checks);
	tgi_buf_puts(b, "</testsuites>\n");
}

/* ---- the report as text ---- */

static void render_json(tgi_buf *b, const json_t *v)
{
	/* 15 significant digits: 0.85 reads 0.85 (ok and of are there for the exact rate) */
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	tgi_buf_puts(b, s ? s : "null");
	tgi_buf_puts(b, "\n");
	free(s);
}

char *tgi_eval_render(const json_t *rep, const char *format)
{
	tgi_buf b;
	if (!format)
		format = "table";
	if (strcmp(format, "table") && strcmp(format, "json") && strcmp(format, "junit"))
		return NULL;
	tgi_buf_init(&b, RENDER_MAX);
	if (!strcmp(format, "json"))
		render_json(&b, rep);
	else if (!strcmp(format, "junit"))
		render_junit(&b, rep);
	else
		render_table(&b, rep);
	return tgi_buf_steal(&b);
}

/* ---- history ---- */

/* "2026-11-30 21:04:11" from "2026-11-30T21:04:11.123Z". */
static void history_when(const char *ts, char out[32])
{
	tgi_snprintf(out, 32, "%.19s", ts ? ts : "-");
	if (strlen(out) > 10 && out[10] == 'T')
		out[10] = ' ';
	char *clean = clipped(out, 19);
	tgi_snprintf(out, 32, "%s", clean);
	free(clean);
}

/* The row before i with the same model and suite, or NULL. */
static const json_t *history_previous(const json_t *rows, size_t i)
{
	const json_t *r = json_array_get(rows, i);
	const char *model = str_of(r, "model"), *suite = str_of(r, "suite");
	while (i-- > 0) {
		const json_t *p = json_array_get(rows, i);
		const char *pm = str_of(p, "model"), *ps = str_of(p, "suite");
		if ((model ? pm && !strcmp(pm, model) : !pm) && (suite ? ps && !strcmp(ps, suite) : !ps))
			return p;
	}
	return NULL;
}

static void history_row(tgi_buf *b, const json_t *rows, size_t i, size_t model_w)
{
	static const size_t colw[NCHECKS] = {6, 6, 6, 7, 6};
	const json_t *r = json_array_get(rows, i), *scores = json_object_get(r, "scores");
	char when[32], n[32], p[16], d[24];
	history_when(str_of(r, "ts"), when);
	put_col(b, when, 22, 0);
	char *model = col_name(str_of(r, "model"), NULL);
	put_col(b, model, model_w, 0);
	free(model);
	/* the digests' first 12 and 8 characters */
	char *manifest = clipped_tail(or_str(str_of(r, "manifest"), "-"), 12, "");
	char *suite = clipped_tail(or_str(str_of(r, "suite"), "-"), 8, "");
	put_col(b, manifest, 14, 0);
	put_col(b, suite, 8, 0);
	free(manifest);
	free(suite);
	put_col(b, grouped(whole_of(r, "cases", 0), n), 7, 1);
	put_col(b, grouped(whole_of(r, "runs", 0), n), 6, 1);
	for (int c = 0; c < NCHECKS; c++) {
		const json_t *v = json_object_get(scores, check_name[c]);
		put_col(b, pct(json_is_number(v) ? json_number_value(v) : NAN, p), colw[c], 1);
	}
	const json_t *prev = history_previous(rows, i);
	const json_t *pv = json_object_get(json_object_get(prev, "scores"), "pass");
	const json_t *cv = json_object_get(scores, "pass");
	double delta = json_is_number(pv) && json_is_number(cv)
	                   ? json_number_value(cv) - json_number_value(pv) : NAN;
	put_col(b, pts(delta, d), 8, 1);
	tgi_buf_puts(b, "\n");
}

static void history_table(tgi_buf *b, const json_t *rows)
{
	size_t n = json_array_size(rows), model_w = 16;
	if (!n) {
		tgi_buf_puts(b, "no eval runs are kept in the ledger\n");
		return;
	}
	for (size_t i = 0; i < n; i++)
		free(col_name(str_of(json_array_get(rows, i), "model"), &model_w));
	model_w += 1;
	put_col(b, "when (UTC)", 22, 0);
	put_col(b, "model", model_w, 0);
	tgi_buf_puts(b, "manifest      suite     cases  runs  tool valid  args policy  pass   Δpass\n");
	for (size_t i = 0; i < n; i++)
		history_row(b, rows, i, model_w);
}

/* rows as "json", or as "table" by table (NULL format: table); NULL for
 * another format. */
static char *render_rows(const json_t *rows, const char *format,
                         void (*table)(tgi_buf *, const json_t *))
{
	tgi_buf b;
	if (!format)
		format = "table";
	if (strcmp(format, "table") && strcmp(format, "json"))
		return NULL;
	tgi_buf_init(&b, RENDER_MAX);
	if (!strcmp(format, "json"))
		render_json(&b, rows);
	else
		table(&b, rows);
	return tgi_buf_steal(&b);
}

char *tgi_eval_history_render(const json_t *rows, const char *format)
{
	return render_rows(rows, format, history_table);
}

/* ---- the definitions' sizes ---- */

/* The APIs of the rows, in the order they first appear: {name: true}. */
static json_t *sizes_apis(const json_t *rows)
{
	json_t *apis = json_object();
	size_t i;
	const json_t *r;
	json_array_foreach (rows, i, r) {
		const char *k;
		json_t *v;
		json_object_foreach (json_object_get(r, "apis"), k, v)
			json_object_set_new(apis, k, json_true());
	}
	return apis;
}

/* s as a column of width characters; the last column is not padded. */
static void put_left(tgi_buf *b, const char *s, size_t width, int last)
{
	if (last)
		tgi_buf_puts(b, s);
	else
		put_col(b, s, width, 0);
}

static void sizes_row(tgi_buf *b, const json_t *r, const json_t *apis)
{
	char n[32], c[32], t[32], cell[80];
	char *name = col_name(str_of(r, "profile"), NULL);
	put_col(b, name, 12, 0);
	free(name);
	tgi_buf_printf(b, " %5s", grouped(whole_of(r, "tools", 0), n));
	size_t k = 0, nk = json_object_size(apis);
	const char *api;
	json_t *v;
	json_object_foreach ((json_t *)apis, api, v) {
		const json_t *a = json_object_get(json_object_get(r, "apis"), api);
		if (json_is_object(a))
			snprintf(cell, sizeof cell, "%s (~%s tok)", grouped(whole_of(a, "chars", 0), c),
			         grouped(whole_of(a, "tokens_est", 0), t));
		else
			strcpy(cell, "-");
		tgi_buf_puts(b, "  ");
		put_left(b, cell, 20, ++k == nk);
	}
	tgi_buf_puts(b, "\n");
}

/* profile, tools, then "chars (~tokens tok)" per API. */
static void sizes_table(tgi_buf *b, const json_t *rows)
{
	json_t *apis = sizes_apis(rows);
	size_t k = 0, nk = json_object_size(apis);
	const char *api;
	json_t *v;
	tgi_buf_printf(b, "%-12s %5s", "profile", "tools");
	json_object_foreach (apis, api, v) {
		char *name = col_name(api, NULL);
		tgi_buf_puts(b, "  ");
		put_left(b, name, 20, ++k == nk);
		free(name);
	}
	tgi_buf_puts(b, "\n");
	size_t i;
	const json_t *r;
	json_array_foreach (rows, i, r)
		sizes_row(b, r, apis);
	tgi_buf_puts(b, "characters of the tools array as each API is sent it; tokens estimated\n");
	json_decref(apis);
}

char *tgi_eval_sizes_render(const json_t *rows, const char *format)
{
	return render_rows(rows, format, sizes_table);
}

/* ---- the token estimate ---- */

/*
 * Estimated tokens of text, without a tokenizer: it follows how the BPE
 * tokenizers of OpenAI's models (cl100k_base, o200k_base) first split text
 * into pieces, and charges each piece what such a piece costs on average:
 *   - a run of letters (split again at a lower-to-upper case change) costs
 *     one token up to 7 letters, a little more after; a piece preceded by a
 *     space is a common word, one preceded by one punctuation mark ("_file",
 *     "\"path") or by nothing costs more (word_cost);
 *   - digits, one token per three; a space before digits is a token;
 *   - a run of punctuation, one token per one or two characters; one of
 *     JSON's own characters ("\":{\"", "\"},") one per four or so;
 *   - a space before a word or punctuation is folded into it; a newline run
 *     is a token, and so is the indentation after it when longer than one;
 *   - any other character (not ASCII) one token.
 * Costs are in tenths of a token, summed and rounded at the end.
 *
 * Calibrated against gpt-tokenizer (cl100k_base and o200k_base) on the
 * definitions `toolgate tools --format API` prints, compact as they are sent
 * (and as tokens_est measures them) and indented:
 *
 *   profile  api                chars  estimate  cl100k   o200k  error vs cl100k, o200k
 *   coding   openai-chat        6,069     1,490   1,449   1,487  +2.8%  +0.2%
 *   coding   openai-responses   5,991     1,474   1,431   1,469  +3.0%  +0.3%
 *   coding   anthropic          5,654     1,359   1,327   1,351  +2.4%  +0.6%
 *   coding   gemini             5,729     1,371   1,338   1,362  +2.5%  +0.7%
 *   minimal  openai-chat        3,227       805     789     812  +2.0%  -0.9%
 *   minimal  openai-responses   3,188       798     780     803  +2.3%  -0.6%
 *   minimal  anthropic          2,945       712     701     711  +1.6%  +0.1%
 *   minimal  gemini             2,996       721     709     719  +1.7%  +0.3%
 *   full     (each API)         the same as coding (no MCP server configured)
 *   indented, as `toolgate tools` prints them:
 *   coding   openai-chat        8,555     2,054   2,005   2,018  +2.4%  +1.8%
 *   coding   anthropic          7,483     1,859   1,821   1,834  +2.1%  +1.4%
 *   coding   gemini             8,351     1,879   1,840   1,852  +2.1%  +1.5%
 *   minimal  openai-chat        4,665     1,119   1,095   1,100  +2.2%  +1.7%
 *
 * On text it was not fitted to: JSON Schema files (draft 2019-09's meta-
 * schema, JSON-Schema-Test-Suite files, indented and compact) within 4%,
 * English Markdown (design notes, READMEs) within 4%; on all the files it
 * was fitted to within 3.5%.  Outside JSON and English it is rough: base64
 * is counted about 30% low, German or Chinese text 10-100% high.  (What a
 * provider bills for the definitions also holds the text it wraps them in.)
 */
enum { W_BARE, W_SPACE, W_PUNCT };

static int tok_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static int tok_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int tok_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int tok_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int tok_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }

/* Tenths of a token for a word of n letters, by what precedes it. */
static size_t word_cost(size_t n, int kind)
{
	static const unsigned char t[3][8] = {
		/* letters: 1-4  5   6   7   8   9  10  11 */
		{10, 10, 10, 12, 12, 13, 13, 15}, /* bare */
		{10, 10, 10, 11, 11, 11, 12, 12}, /* after a space */
		{11, 11, 11, 19, 20, 20, 20, 21}, /* after one punctuation mark */
	};
	if (n <= 4)
		return t[kind][0];
	if (n <= 11)
		return t[kind][n - 4];
	return t[kind][7] + (n - 11) * 2;
}

/* A run of letters from s[i], split at each lower-to-upper change: the end. */
static size_t word_tenths(const unsigned char *s, size_t len, size_t i, int kind, size_t *tenths)
{
	while (i < len && tok_alpha(s[i])) {
		size_t k = i + 1;
		while (k < len && tok_alpha(s[k]) && !(tok_upper(s[k]) && tok_lower(s[k - 1])))
			k++;
		*tenths += word_cost(k - i, kind);
		kind = W_BARE;
		i = k;
	}
	return i;
}

static size_t punct_cost(size_t n, int json)
{
	static const unsigned char other[6] = {11, 13, 13, 16, 18, 25};
	if (json)
		return n <= 4 ? 10 : 10 + (n - 4) * 5;
	return n <= 6 ? other[n - 1] : 25 + (n - 6) * 5;
}

size_t tgi_eval_tokens(const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, tenths = 0;
	int spaced = 0; /* one space waits to be folded into the next piece */
	while (i < len) {
		unsigned char c = s[i];
		if (tok_space(c)) {
			size_t j = i, last_nl = 0;
			int nl = 0;
			for (; j < len && tok_space(s[j]); j++)
				if (s[j] == '\n' || s[j] == '\r')
					nl = 1, last_nl = j;
			if (j == len) {
				tenths += 10;
				break;
			}
			size_t tail = nl ? j - last_nl - 1 : j - i; /* blanks after the last newline */
			tenths += (nl ? 10 : 0) + (tail >= 2 ? 10 : 0);
			spaced = tail >= 1 && s[j - 1] == ' ';
			if (spaced && tok_digit(s[j])) {
				tenths += 10;
				spaced = 0;
			}
			i = j;
			continue;
		}
		if (tok_alpha(c)) {
			i = word_tenths(s, len, i, spaced ? W_SPACE : W_BARE, &tenths);
		} else if (tok_digit(c)) {
			size_t j = i;
			while (j < len && tok_digit(s[j]))
				j++;
			tenths += (j - i + 2) / 3 * 10;
			i = j;
		} else if (c >= 0x80) {
			i++;
			while (i < len && (s[i] & 0xC0) == 0x80)
				i++;
			tenths += 10;
		} else {
			size_t j = i;
			int json = 1;
			for (; j < len && s[j] < 0x80 && !tok_space(s[j]) && !tok_alpha(s[j]) && !tok_digit(s[j]); j++)
				json &= s[j] && strchr("\"{}[]:,.", s[j]);
			if (j - i == 1 && !spaced && j < len && tok_alpha(s[j])) {
				i = word_tenths(s, len, j, W_PUNCT, &tenths);
			} else {
				tenths += punct_cost(j - i, json);
				while (j < len && (s[j] == '\n' || s[j] == '\r'))
					j++; /* newlines right after punctuation join it */
				i = j;
			}
		}
		spaced = 0;
	}
	return (tenths + 5) / 10;
}
