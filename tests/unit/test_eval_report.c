/*
 * test_eval_report.c — src/eval/report.c from the contract (eval.h and the
 * eval spec), on results built by hand: a right call, a wrong tool, an
 * invalid call, arguments that do not match, a policy that asks, a
 * provider error, no_tool cases right and wrong, a case run twice.  Exact
 * scores (ok/of/rate, null where a check never applies), the groups and
 * their order, the difference from a baseline (a group on one side only),
 * each threshold sentence and the margins (a rate printed like its limit,
 * a drop equal to the limit), the table (columns, thousands separators,
 * the failing results, model text with control characters and cut), the
 * JUnit XML checked by xmllint and parsed back by python3-junitparser
 * (counts, types, messages; a model's text full of "]]>", control bytes,
 * U+FFFE and invalid UTF-8 still valid XML), JSON that reads back equal,
 * the history with its Δpass, the definitions' sizes per profile and API,
 * and the token estimate against counts of a real BPE tokenizer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval.h"
#include "util/util.h"

#define NA (-1) /* a check that does not apply (null) */

static char dir[] = "/tmp/tg-evalreport.XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- results by hand ---- */

static json_t *check(int v)
{
	return v == NA ? json_null() : json_boolean(v);
}

/* A result of case id (expected tool, or NULL: no_tool) in run: the checks,
 * and for a failure its check and sentence.  pass as the spec defines it. */
static json_t *result(const char *id, const char *tool, int run, int c_tool, int c_valid,
                      int c_args, int c_policy, const char *fcheck, const char *fmsg)
{
	int pass = c_tool != 0 && c_valid != 0 && c_args != 0 && c_policy != 0;
	char where[64];
	snprintf(where, sizeof where, "evals/%s.yaml:%d:3", tool ? tool : "none", run * 7);
	json_t *expect = json_pack("{s:o, s:o, s:o}", "tool", tool ? json_string(tool) : json_null(),
	                           "args", tool ? json_pack("{s:s}", "path", "README.md") : json_null(),
	                           "decision", tool ? json_pack("[s]", "allow") : json_array());
	json_t *got = json_pack("{s:o, s:o, s:i, s:o}", "tool",
	                        c_tool == 1 && tool ? json_string(tool) : json_null(), "args",
	                        c_tool == 1 && tool ? json_pack("{s:s}", "path", "README") : json_null(),
	                        "calls", c_tool == 1 && tool ? 1 : 0, "text",
	                        tool ? json_null() : json_string("I cannot do that."));
	return json_pack("{s:s, s:s, s:o, s:i, s:s, s:b, s:{s:o, s:o, s:o, s:o}, s:o, s:o, s:o, "
	                 "s:o, s:o, s:f}",
	                 "case", id, "where", where, "expect", expect, "run", run, "request",
	                 "Show me the README", "pass", pass, "checks", "tool", check(c_tool),
	                 "valid", check(c_valid), "args", check(c_args), "policy", check(c_policy),
	                 "got", got, "decision", c_tool == 1 && tool ? json_string("allow") : json_null(),
	                 "rule", json_null(), "failure",
	                 fcheck ? json_pack("{s:s, s:s}", "check", fcheck, "message", fmsg) : json_null(),
	                 "error", json_null(), "ms", 12.5);
}

/* A provider error: every check false, error set. */
static json_t *provider_error(const char *id, const char *tool, int run)
{
	json_t *r = result(id, tool, run, 0, 0, 0, 0, "tool", "the provider failed: HTTP 500");
	json_object_set_new(r, "error", json_string("HTTP 500 from the provider"));
	return r;
}

/*
 * The results every test starts from:
 *   read_file#1 run 1 right; read_file#2 wrong tool; read_file#3 invalid
 *   (args matched the raw arguments); read_file#4 args mismatch;
 *   read_file#1 run 2 right; list_dir#1 policy asked; list_dir#2 a
 *   provider error; none#1 no call (right); none#2 a call (wrong).
 * A no_tool result comes first: "(none)" must still be the last group.
 */
static json_t *sample_results(void)
{
	json_t *a = json_array();
	json_array_append_new(a, result("none#1", NULL, 1, 1, NA, NA, NA, NULL, NULL));
	json_array_append_new(a, result("read_file#1", "read_file", 1, 1, 1, 1, 1, NULL, NULL));
	json_array_append_new(a, result("read_file#2", "read_file", 1, 0, 0, 0, 0, "tool",
	                                "called list_dir, expected read_file"));
	json_array_append_new(a, result("read_file#3", "read_file", 1, 1, 0, 1, 0, "valid",
	                                "invalid: /path: is required"));
	json_array_append_new(a, result("read_file#4", "read_file", 1, 1, 1, 0, 1, "args",
	                                "/path: expected \"README.md\", got \"README\""));
	json_array_append_new(a, result("read_file#1", "read_file", 2, 1, 1, 1, 1, NULL, NULL));
	json_array_append_new(a, result("list_dir#1", "list_dir", 1, 1, 1, 1, 0, "policy",
	                                "decided ask (mode default), expected allow"));
	json_array_append_new(a, provider_error("list_dir#2", "list_dir", 1));
	json_array_append_new(a, result("none#2", NULL, 1, 0, NA, NA, NA, "tool",
	                                "called read_file, expected no tool call"));
	return a;
}

/* A report around results, as run.c builds it. */
static json_t *report_of(json_t *results, const char *model, long long chars, long long tokens)
{
	return json_pack("{s:{s:s, s:i, s:[s]}, s:s, s:s, s:s, s:i, s:s, s:s, s:s, "
	                 "s:{s:s, s:s, s:i, s:I, s:I}, s:s, s:f, s:o, s:o}",
	                 "suite", "digest", "9f1c2a3b", "cases", 8, "files", "builtin:read_file.yaml",
	                 "provider", "scripted", "api", "openai-chat", "model", model, "runs", 2,
	                 "config", "toolgate.yaml", "profile", "coding", "manifest", "cb52351068d0ff",
	                 "definitions", "profile", "coding", "api", "openai-chat", "tools", 6, "chars",
	                 (json_int_t)chars, "tokens_est", (json_int_t)tokens, "started",
	                 "2026-11-30T21:04:11.123Z", "duration_ms", 1234.5, "scores",
	                 tgi_eval_scores(results), "results", results);
}

/* ---- assertions on scores ---- */

static void assert_rate(const json_t *score, const char *checkname, long long ok, long long of)
{
	const json_t *r = json_object_get(score, checkname);
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "ok")), ok);
	assert_int_equal(json_integer_value(json_object_get(r, "of")), of);
	const json_t *rate = json_object_get(r, "rate");
	if (!of) {
		assert_true(json_is_null(rate));
		return;
	}
	assert_true(json_is_real(rate));
	assert_true(json_real_value(rate) == (double)ok / (double)of);
}

static void assert_score(const json_t *s, long long cases, long long results, const long long okof[10])
{
	assert_non_null(s);
	assert_int_equal(json_integer_value(json_object_get(s, "cases")), cases);
	assert_int_equal(json_integer_value(json_object_get(s, "results")), results);
	static const char *const names[] = {"tool", "valid", "args", "policy", "pass"};
	for (int c = 0; c < 5; c++)
		assert_rate(s, names[c], okof[2 * c], okof[2 * c + 1]);
}

static void test_scores_exact(void **state)
{
	json_t *results = sample_results();
	json_t *s = tgi_eval_scores(results);
	const json_t *tools = json_object_get(s, "tools");
	assert_int_equal(json_object_size(tools), 3);

	/* the groups in the order they appear, "(none)" last */
	const char *order[3], *k;
	json_t *v;
	size_t i = 0;
	json_object_foreach ((json_t *)tools, k, v)
		order[i++] = k;
	assert_string_equal(order[0], "read_file");
	assert_string_equal(order[1], "list_dir");
	assert_string_equal(order[2], "(none)");

	/* read_file: 4 cases, 5 results (case 1 twice) */
	assert_score(json_object_get(tools, "read_file"), 4, 5,
	             (const long long[]){4, 5, 3, 5, 3, 5, 3, 5, 2, 5});
	/* list_dir: policy asked; a provider error is false on every check */
	assert_score(json_object_get(tools, "list_dir"), 2, 2,
	             (const long long[]){1, 2, 1, 2, 1, 2, 0, 2, 0, 2});
	/* (none): only tool applies; pass counts every result */
	assert_score(json_object_get(tools, "(none)"), 2, 2,
	             (const long long[]){1, 2, 0, 0, 0, 0, 0, 0, 1, 2});
	/* overall: 8 distinct cases, 9 results */
	assert_score(json_object_get(s, "overall"), 8, 9,
	             (const long long[]){6, 9, 4, 7, 4, 7, 3, 7, 3, 9});
	json_decref(s);
	json_decref(results);
}

static void test_scores_empty(void **state)
{
	json_t *empty = json_array();
	json_t *s = tgi_eval_scores(empty);
	assert_int_equal(json_object_size(json_object_get(s, "tools")), 0);
	assert_score(json_object_get(s, "overall"), 0, 0,
	             (const long long[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
	json_decref(s);
	/* not an array: no results, not a crash */
	s = tgi_eval_scores(NULL);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "overall"), "results")), 0);
	json_decref(s);
	json_decref(empty);
}

/* tgi_eval_rate: a SCORE's rate of one check, NAN where there is none. */
static void test_rate(void **state)
{
	json_t *results = sample_results();
	json_t *s = tgi_eval_scores(results);
	const json_t *rf = json_object_get(json_object_get(s, "tools"), "read_file");
	const json_t *none = json_object_get(json_object_get(s, "tools"), "(none)");
	assert_true(tgi_eval_rate(rf, "tool") == 4.0 / 5);
	assert_true(tgi_eval_rate(rf, "pass") == 2.0 / 5);
	assert_true(tgi_eval_rate(json_object_get(s, "overall"), "policy") == 3.0 / 7);
	assert_true(tgi_eval_rate(none, "tool") == 1.0 / 2);
	assert_true(isnan(tgi_eval_rate(none, "valid")));  /* of = 0: rate null */
	assert_true(isnan(tgi_eval_rate(rf, "speed")));    /* no such check */
	assert_true(isnan(tgi_eval_rate(NULL, "pass")));
	json_decref(s);
	json_decref(results);
}

/* ---- the difference ---- */

static json_t *n_results(const char *tool, int n, int passed)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		char id[64];
		snprintf(id, sizeof id, "%s#%d", tool ? tool : "none", i + 1);
		json_array_append_new(a, i < passed ? result(id, tool, 1, 1, tool ? 1 : NA, tool ? 1 : NA,
		                                             tool ? 1 : NA, NULL, NULL)
		                                    : result(id, tool, 1, 1, tool ? 1 : NA,
		                                             tool ? 0 : NA, tool ? 1 : NA, "args",
		                                             "/path: expected \"a\", got \"b\""));
	}
	return a;
}

static void append_all(json_t *to, json_t *from)
{
	json_array_extend(to, from);
	json_decref(from);
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void test_difference(void **state)
{
	/* candidate: read_file 17/20, shell 3/4; baseline: read_file 19/20, write_file 2/2 */
	json_t *a = n_results("read_file", 20, 17);
	append_all(a, n_results("shell", 4, 3));
	json_t *b = n_results("read_file", 20, 19);
	append_all(b, n_results("write_file", 2, 2));
	json_t *rep = report_of(a, "m", 100, 30), *base = report_of(b, "m", 90, 25);
	json_t *d = tgi_eval_difference(rep, base);

	const json_t *rf = json_object_get(json_object_get(d, "tools"), "read_file");
	assert_true(fabs(num(rf, "pass") - (17.0 / 20 - 19.0 / 20)) < 1e-12);
	assert_true(fabs(num(rf, "args") - (17.0 / 20 - 19.0 / 20)) < 1e-12);
	assert_true(fabs(num(rf, "tool")) < 1e-12);
	/* a group on one side only: null */
	const json_t *sh = json_object_get(json_object_get(d, "tools"), "shell");
	const json_t *wf = json_object_get(json_object_get(d, "tools"), "write_file");
	assert_non_null(sh);
	assert_non_null(wf);
	assert_true(json_is_null(json_object_get(sh, "pass")));
	assert_true(json_is_null(json_object_get(wf, "pass")));
	assert_int_equal(json_object_size(json_object_get(d, "tools")), 3);
	/* overall: 20/24 against 21/22 */
	const json_t *ov = json_object_get(d, "overall");
	assert_true(fabs(num(ov, "pass") - (20.0 / 24 - 21.0 / 22)) < 1e-12);
	json_decref(d);

	/* a check null on one side (no_tool cases only have tool) is null */
	json_t *c = n_results(NULL, 3, 3), *e = n_results(NULL, 3, 2);
	json_t *rc = report_of(c, "m", 1, 1), *re = report_of(e, "m", 1, 1);
	d = tgi_eval_difference(rc, re);
	const json_t *none = json_object_get(json_object_get(d, "tools"), "(none)");
	assert_true(json_is_null(json_object_get(none, "valid")));
	assert_true(fabs(num(none, "tool")) < 1e-12);
	json_decref(d);
	json_decref(rc);
	json_decref(re);
	json_decref(rep);
	json_decref(base);
}

/* ---- thresholds ---- */

static const char *failed_at(const json_t *rep, size_t i)
{
	return json_string_value(json_array_get(json_object_get(json_object_get(rep, "thresholds"),
	                                                         "failed"), i));
}

static void test_threshold_fail_under(void **state)
{
	json_t *rep = report_of(sample_results(), "m", 1, 1);
	/* overall 3/9, read_file 2/5, list_dir 0/2, (none) 1/2 exactly at the limit */
	assert_int_equal(tgi_eval_thresholds(rep, 0.5, -1), 3);
	const json_t *t = json_object_get(rep, "thresholds");
	assert_true(num(t, "fail_under") == 0.5);
	assert_true(json_is_null(json_object_get(t, "max_drop")));
	assert_int_equal(json_array_size(json_object_get(t, "failed")), 3);
	assert_string_equal(failed_at(rep, 0), "overall: pass 0.33 is under 0.50");
	assert_string_equal(failed_at(rep, 1), "read_file: pass 0.40 is under 0.50");
	assert_string_equal(failed_at(rep, 2), "list_dir: pass 0.00 is under 0.50");

	/* none given: always present, nothing failed */
	assert_int_equal(tgi_eval_thresholds(rep, -1, -1), 0);
	t = json_object_get(rep, "thresholds");
	assert_true(json_is_null(json_object_get(t, "fail_under")));
	assert_true(json_is_null(json_object_get(t, "max_drop")));
	assert_int_equal(json_array_size(json_object_get(t, "failed")), 0);
	/* a limit every rate meets */
	assert_int_equal(tgi_eval_thresholds(rep, 0, -1), 0);
	json_decref(rep);

	/* a rate that would print like its limit gets more decimals */
	rep = report_of(n_results("read_file", 1000, 899), "m", 1, 1);
	assert_int_equal(tgi_eval_thresholds(rep, 0.9, -1), 2);
	assert_string_equal(failed_at(rep, 0), "overall: pass 0.899 is under 0.900");
	assert_string_equal(failed_at(rep, 1), "read_file: pass 0.899 is under 0.900");
	json_decref(rep);

	/* 9/10 is not under 0.9 */
	rep = report_of(n_results("read_file", 10, 9), "m", 1, 1);
	assert_int_equal(tgi_eval_thresholds(rep, 0.9, -1), 0);
	json_decref(rep);

	/* no results: the limit is not met (fail closed) */
	rep = report_of(json_array(), "m", 1, 1);
	assert_int_equal(tgi_eval_thresholds(rep, 0.9, -1), 1);
	assert_string_equal(failed_at(rep, 0), "overall: pass has no results, so it is not 0.90 or more");
	json_decref(rep);
}

static void test_threshold_max_drop(void **state)
{
	/* read_file 0.95 -> 0.85 */
	json_t *rep = report_of(n_results("read_file", 20, 17), "m", 1, 1);
	json_t *base = report_of(n_results("read_file", 20, 19), "m", 1, 1);
	json_object_set_new(rep, "baseline", base);
	assert_int_equal(tgi_eval_thresholds(rep, -1, 0.05), 2);
	assert_string_equal(failed_at(rep, 0), "overall: pass dropped 0.10 (0.95 → 0.85), more than 0.05");
	assert_string_equal(failed_at(rep, 1), "read_file: pass dropped 0.10 (0.95 → 0.85), more than 0.05");
	assert_true(num(json_object_get(rep, "thresholds"), "max_drop") == 0.05);
	/* a drop equal to the limit (0.95 - 0.85 is not exactly 0.1 in binary) is not more */
	assert_int_equal(tgi_eval_thresholds(rep, -1, 0.1), 0);
	/* both at once: fail_under before max_drop, per group */
	assert_int_equal(tgi_eval_thresholds(rep, 0.9, 0.05), 4);
	assert_string_equal(failed_at(rep, 0), "overall: pass 0.85 is under 0.90");
	assert_string_equal(failed_at(rep, 1), "overall: pass dropped 0.10 (0.95 → 0.85), more than 0.05");
	assert_string_equal(failed_at(rep, 2), "read_file: pass 0.85 is under 0.90");
	json_decref(rep);

	/* 0.8 -> 0.7: 0.8 - 0.7 is 0.10000000000000009 in binary, still not more than 0.1 */
	rep = report_of(n_results("shell", 10, 7), "m", 1, 1);
	json_object_set_new(rep, "baseline", report_of(n_results("shell", 10, 8), "m", 1, 1));
	assert_int_equal(tgi_eval_thresholds(rep, -1, 0.1), 0);
	/* a rise is not a drop */
	assert_int_equal(tgi_eval_thresholds(json_object_get(rep, "baseline"), -1, 0), 0);
	json_decref(rep);

	/* no baseline: max_drop is kept but checks nothing */
	rep = report_of(n_results("shell", 10, 1), "m", 1, 1);
	assert_int_equal(tgi_eval_thresholds(rep, -1, 0.05), 0);
	assert_true(num(json_object_get(rep, "thresholds"), "max_drop") == 0.05);
	json_decref(rep);

	/* a group the baseline lacks is not compared */
	json_t *a = n_results("shell", 10, 1);
	append_all(a, n_results("read_file", 10, 10));
	rep = report_of(a, "m", 1, 1);
	json_object_set_new(rep, "baseline", report_of(n_results("read_file", 10, 10), "m", 1, 1));
	assert_int_equal(tgi_eval_thresholds(rep, -1, 0.05), 1);
	assert_string_equal(failed_at(rep, 0), "overall: pass dropped 0.45 (1.00 → 0.55), more than 0.05");
	json_decref(rep);
}

/* ---- the table ---- */

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		fprintf(stderr, "missing: [%s]\nin:\n%s\n", needle, hay);
		fail();
	}
}

static void test_table(void **state)
{
	json_t *rep = report_of(sample_results(), "gpt-4.1-mini", 6069, 1650);
	tgi_eval_thresholds(rep, 0.3, -1);
	char *t = tgi_eval_render(rep, "table");
	assert_non_null(t);
	const char *expect =
		"eval: 8 cases × 2 runs, scripted gpt-4.1-mini, profile coding\n"
		"definitions: 6 tools, 6,069 chars, ~1,650 tokens (openai-chat)\n"
		"\n"
		"tool            cases   tool  valid   args  policy   pass\n"
		"read_file           4    80%    60%    60%     60%    40%\n"
		"list_dir            2    50%    50%    50%      0%     0%\n"
		"(none)              2    50%      -      -       -    50%\n"
		"overall             8    67%    57%    57%     43%    33%\n"
		"\n"
		"failing (6):\n"
		"  read_file#2 (evals/read_file.yaml:7:3) run 1: tool: called list_dir, expected read_file\n"
		"    request: Show me the README\n"
		"    expected: read_file {\"path\":\"README.md\"}\n"
		"    got: no tool call\n"
		"  read_file#3 (evals/read_file.yaml:7:3) run 1: valid: invalid: /path: is required\n";
	if (strncmp(t, expect, strlen(expect))) {
		fprintf(stderr, "got:\n%s\nexpected the start:\n%s\n", t, expect);
		fail();
	}
	assert_contains(t, "  read_file#4 (evals/read_file.yaml:7:3) run 1: args: /path: expected "
	                   "\"README.md\", got \"README\"\n"
	                   "    request: Show me the README\n"
	                   "    expected: read_file {\"path\":\"README.md\"}\n"
	                   "    got: read_file {\"path\":\"README\"}, decided allow\n");
	assert_contains(t, "  list_dir#1 (evals/list_dir.yaml:7:3) run 1: policy: decided ask (mode "
	                   "default), expected allow\n");
	assert_contains(t, "  list_dir#2 (evals/list_dir.yaml:7:3) run 1: error: HTTP 500 from the "
	                   "provider\n    request: Show me the README\n    expected: list_dir "
	                   "{\"path\":\"README.md\"}\n  ");
	assert_contains(t, "  none#2 (evals/none.yaml:7:3) run 1: tool: called read_file, expected no "
	                   "tool call\n    request: Show me the README\n    expected: no tool call\n"
	                   "    got: no tool call; text: I cannot do that.\n");
	/* passing results are not listed */
	assert_null(strstr(t, "read_file#1"));
	assert_null(strstr(t, "none#1"));
	/* thresholds: 0.33 is not under 0.3, but list_dir's 0 is */
	assert_contains(t, "\nthreshold failed: list_dir: pass 0.00 is under 0.30\n");
	assert_null(strstr(t, "thresholds: met"));
	free(t);

	tgi_eval_thresholds(rep, 0, -1);
	t = tgi_eval_render(rep, NULL); /* the default */
	assert_contains(t, "\nthresholds: met\n");
	free(t);
	tgi_eval_thresholds(rep, -1, -1);
	t = tgi_eval_render(rep, "table");
	assert_null(strstr(t, "threshold"));
	free(t);
	json_decref(rep);

	/* all passing, one run, big numbers */
	rep = report_of(n_results("read_file", 3, 3), "m", 1234567, 1000);
	json_object_set_new(rep, "runs", json_integer(1));
	json_object_set_new(json_object_get(rep, "suite"), "cases", json_integer(12345));
	t = tgi_eval_render(rep, "table");
	assert_contains(t, "eval: 12,345 cases × 1 run, scripted m, profile coding\n");
	assert_contains(t, "1,234,567 chars, ~1,000 tokens");
	assert_contains(t, "\nfailing: none\n");
	assert_contains(t, "read_file           3   100%   100%   100%    100%   100%\n");
	free(t);
	json_decref(rep);
}

/* A JSON string holding bytes that are not UTF-8 (jansson checks them
 * otherwise): what a careless producer could hand over. */
static json_t *nocheck(const char *s)
{
	return json_stringn_nocheck(s, strlen(s));
}

/* Model text is data: control characters replaced, cut at 200 characters. */
static void test_table_model_text(void **state)
{
	json_t *results = json_array();
	json_t *r = result("shell#1", "shell", 1, 1, 1, 0, 1, "args", "/command: expected 2 elements, got 3");
	char longtext[1200];
	memset(longtext, 'x', sizeof longtext - 1);
	longtext[sizeof longtext - 1] = '\0';
	memcpy(longtext, "\x1b[31mred\r\nline\ttab\x7f", 19);
	json_object_set_new(r, "request", json_string(longtext));
	json_object_set_new(json_object_get(r, "got"), "args",
	                    json_pack("{s:s}", "command", "rm -rf /\x1b]0;pwned\x07"));
	/* invalid UTF-8 (not from jansson's checks) becomes U+FFFD */
	json_object_set_new(r, "failure", json_pack("{s:s, s:o}", "check", "args", "message",
	                                            nocheck("bad \xff\xfe byte")));
	json_array_append_new(results, r);
	json_t *rep = report_of(results, "evil\x1b[2Jmodel", 1, 1);
	char *t = tgi_eval_render(rep, "table");
	for (const char *p = t; *p; p++)
		assert_true(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
	assert_null(strstr(t, "\xff"));
	assert_contains(t, "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
	assert_contains(t, "evil [2Jmodel");
	/* the request: 200 characters then "…" */
	const char *req = strstr(t, "    request: ");
	assert_non_null(req);
	req += strlen("    request: ");
	const char *end = strchr(req, '\n');
	assert_int_equal(tgi_utf8_len(req, (size_t)(end - req)), 201);
	assert_memory_equal(end - 3, "…", 3);
	assert_memory_equal(req, " [31mred  line tab x", 20);
	free(t);
	json_decref(rep);
}

static void test_table_compare(void **state)
{
	json_t *a = n_results("read_file", 20, 17);
	append_all(a, n_results("shell", 4, 3));
	json_t *b = n_results("read_file", 20, 19);
	append_all(b, n_results("shell", 4, 4));
	json_t *rep = report_of(a, "m", 6069, 1650), *base = report_of(b, "m", 5400, 1480);
	json_object_set_new(base, "config", json_string("other.yaml"));
	json_object_set_new(rep, "difference", tgi_eval_difference(rep, base));
	json_object_set_new(rep, "baseline", base);
	tgi_eval_thresholds(rep, -1, 0.05);
	char *t = tgi_eval_render(rep, "table");
	const char *expect =
		"\ncompared with other.yaml (baseline):\n"
		"tool            pass before  after        Δ  tool Δ  valid Δ  args Δ  policy Δ\n"
		"read_file               95%    85%  -10 pts   0 pts    0 pts -10 pts     0 pts\n"
		"shell                  100%    75%  -25 pts   0 pts    0 pts -25 pts     0 pts\n"
		"overall                 96%    83%  -13 pts   0 pts    0 pts -13 pts     0 pts\n"
		"definitions: 5,400 → 6,069 chars, ~1,480 → ~1,650 tokens\n"
		"\n"
		/* 23/24 -> 20/24: 0.125 shown so that it is before minus after */
		"threshold failed: overall: pass dropped 0.125 (0.958 → 0.833), more than 0.050\n"
		"threshold failed: read_file: pass dropped 0.10 (0.95 → 0.85), more than 0.05\n"
		"threshold failed: shell: pass dropped 0.25 (1.00 → 0.75), more than 0.05\n";
	assert_contains(t, expect);
	/* the difference comes last but for the thresholds */
	assert_true(strstr(t, expect) + strlen(expect) == t + strlen(t));
	free(t);
	json_decref(rep);
}

/* ---- JSON ---- */

/* a equals b, reals to 15 significant digits (what the report prints) */
static int near_equal(const json_t *a, const json_t *b)
{
	if (json_is_real(a) && json_is_real(b)) {
		double x = json_real_value(a), y = json_real_value(b);
		return fabs(x - y) <= 1e-14 * (fabs(x) > 1 ? fabs(x) : 1);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!near_equal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k, v)
			if (!near_equal(v, json_object_get(b, k)))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

static void test_json(void **state)
{
	json_t *rep = report_of(sample_results(), "m", 1, 1);
	tgi_eval_thresholds(rep, 0.9, -1);
	char *t = tgi_eval_render(rep, "json");
	assert_non_null(t);
	json_error_t e;
	json_t *back = json_loads(t, 0, &e);
	assert_non_null(back);
	assert_true(near_equal(back, rep));
	/* rates as written (2/3 is 0.666666666666667), not 0.84999999999999998 */
	assert_null(strstr(t, "99999999"));
	assert_null(strstr(t, "00000001"));
	assert_true(strstr(t, "\n  \"scores\"") != NULL);
	json_decref(back);
	free(t);
	assert_null(tgi_eval_render(rep, "yaml"));
	assert_null(tgi_eval_render(rep, ""));
	json_decref(rep);
}

/* ---- JUnit ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	fclose(f);
}

static int have(const char *cmd)
{
	return system(cmd) == 0;
}

/* Checks by junitparser, a real consumer: argv[1] the file, then the
 * expected totals and, per suite, "name:tests:failures:errors". */
static const char checker[] =
	"import sys\n"
	"from junitparser import JUnitXml, Failure, Error\n"
	"xml = JUnitXml.fromfile(sys.argv[1])\n"
	"tests, failures, errors = map(int, sys.argv[2:5])\n"
	"assert (xml.tests, xml.failures, xml.errors) == (tests, failures, errors), "
	"(xml.tests, xml.failures, xml.errors)\n"
	"suites = list(xml)\n"
	"want = [s.split('|') for s in sys.argv[5:]]\n"
	"assert [s.name for s in suites] == [w[0] for w in want], [s.name for s in suites]\n"
	"for s, w in zip(suites, want):\n"
	"    cases = list(s)\n"
	"    nf = sum(1 for c in cases for r in c.result if isinstance(r, Failure))\n"
	"    ne = sum(1 for c in cases for r in c.result if isinstance(r, Error))\n"
	"    assert (s.tests, s.failures, s.errors) == (int(w[1]), int(w[2]), int(w[3])), (s.name, s.tests, s.failures, s.errors)\n"
	"    assert (len(cases), nf, ne) == (int(w[1]), int(w[2]), int(w[3])), (s.name, len(cases), nf, ne)\n"
	"    assert s.skipped == 0\n"
	"    props = {p.name: p.value for p in s.properties()}\n"
	"    assert props['provider'] == 'scripted' and props['profile'] == 'coding', props\n"
	"    assert props['manifest'] == 'cb52351068d0ff', props\n"
	"    for c in cases:\n"
	"        for r in c.result:\n"
	"            if s.name != 'thresholds':\n"
	"                assert c.classname == 'toolgate.eval.' + s.name, c.classname\n"
	"            assert r.message and r.type, (r.message, r.type)\n"
	"            for ch in (r.message or '') + (r.text or ''):\n"
	"                assert ch in '\\t\\n\\r' or (ord(ch) >= 0x20 and ord(ch) not in (0x7f, 0xfffe, 0xffff)), repr(ch)\n"
	"print('ok')\n";

static void check_junit(const char *xml, const char *args)
{
	char path[128], py[128], cmd[1024];
	snprintf(path, sizeof path, "%s/report.xml", dir);
	snprintf(py, sizeof py, "%s/check.py", dir);
	write_text(path, xml);
	write_text(py, checker);
	/* both consumers are installed by scripts/install-deps: missing is a failure */
	assert_true(have("command -v xmllint > /dev/null"));
	assert_true(have("/usr/bin/python3 -c 'import junitparser' 2> /dev/null"));
	snprintf(cmd, sizeof cmd, "xmllint --noout %s", path);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s > /dev/null", py, path, args);
	if (system(cmd) != 0) {
		fprintf(stderr, "%s\n", xml);
		fail_msg("junitparser: %s", cmd);
	}
}

static void test_junit(void **state)
{
	json_t *rep = report_of(sample_results(), "m", 1, 1);
	tgi_eval_thresholds(rep, 0.3, -1);
	char *x = tgi_eval_render(rep, "junit");
	assert_non_null(x);
	assert_true(!strncmp(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"toolgate eval\" ",
	                     strlen("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"toolgate eval\" ")));
	/* 9 results (5 failures, 1 error) + 4 thresholds checked (1 failed) */
	check_junit(x, "13 6 1 'read_file|5|3|0' 'list_dir|2|1|1' '(none)|2|1|0' 'thresholds|4|1|0'");
	assert_contains(x, "<testsuites name=\"toolgate eval\" tests=\"13\" failures=\"6\" errors=\"1\" "
	                   "time=\"1.234\">");
	assert_contains(x, "<testsuite name=\"read_file\" tests=\"5\" failures=\"3\" errors=\"0\" "
	                   "skipped=\"0\" time=\"0.062\" timestamp=\"2026-11-30T21:04:11\">");
	assert_contains(x, "<testcase classname=\"toolgate.eval.read_file\" name=\"read_file#1 [run 2]\" "
	                   "time=\"0.013\"/>");
	assert_contains(x, "<failure type=\"args\" message=\"/path: expected &quot;README.md&quot;, got "
	                   "&quot;README&quot;\">request: Show me the README\n");
	assert_contains(x, "<error type=\"provider\" message=\"HTTP 500 from the provider\">");
	assert_contains(x, "<testcase classname=\"toolgate.eval.thresholds\" name=\"list_dir fail-under "
	                   "0.30\" time=\"0.000\">\n      <failure type=\"fail_under\" message=\"list_dir: "
	                   "pass 0.00 is under 0.30\">");
	free(x);

	/* no thresholds given: no thresholds suite */
	tgi_eval_thresholds(rep, -1, -1);
	x = tgi_eval_render(rep, "junit");
	check_junit(x, "9 5 1 'read_file|5|3|0' 'list_dir|2|1|1' '(none)|2|1|0'");
	assert_null(strstr(x, "thresholds"));
	free(x);
	json_decref(rep);
}

/* A model's text full of markup, "]]>", control bytes, U+FFFE/U+FFFF and
 * invalid UTF-8 still gives valid XML, its text kept as data. */
static void test_junit_hostile(void **state)
{
	static const char nasty[] = "]]><![CDATA[x]]> </failure><x a='1' b=\"2\">&amp;&#0;"
	                            "\x01\x02\x08\x0b\x0c\x1b\x1f\x7f tab\there\r\n"
	                            "\xef\xbf\xbe\xef\xbf\xbf \xc2\x85 end";
	json_t *results = json_array();
	json_t *r = result("shell#1", "shell", 1, 0, 0, 0, 0, "tool", "called <x>, expected shell");
	json_object_set_new(r, "request", json_string(nasty));
	json_object_set_new(r, "failure", json_pack("{s:s, s:s}", "check", "tool", "message", nasty));
	json_object_set_new(json_object_get(r, "got"), "text",
	                    nocheck("raw \xff\xc0\x80 \xed\xa0\x80 bytes"));
	json_object_set_new(r, "case", json_string("shell\"#1<&>'"));
	json_array_append_new(results, r);
	json_array_append_new(results, provider_error("shell#2", "shell", 1));
	json_object_set_new(json_array_get(results, 1), "error", json_string(nasty));
	json_t *rep = report_of(results, "m\x01<>", 1, 1);
	char *x = tgi_eval_render(rep, "junit");
	check_junit(x, "2 1 1 'shell|2|1|1'");
	assert_null(strstr(x, "]]>"));
	assert_null(strstr(x, "\x01"));
	assert_null(strstr(x, "\xef\xbf\xbe"));
	assert_null(strstr(x, "\xff"));
	assert_contains(x, "]]&gt;&lt;![CDATA[x]]&gt; &lt;/failure&gt;&lt;x a=&apos;1&apos; b=&quot;2&quot;&gt;&amp;amp;&amp;#0;");
	assert_contains(x, "name=\"shell&quot;#1&lt;&amp;&gt;&apos; [run 1]\"");
	/* in an attribute, tab and newline are references; in text, kept */
	assert_contains(x, "tab&#9;here&#13;&#10;");
	assert_contains(x, "tab\there&#13;\n");
	free(x);
	json_decref(rep);
}

/* ---- history ---- */

static json_t *row(const char *ts, const char *model, const char *suite, double pass, int null_scores)
{
	json_t *scores = null_scores
	                     ? json_pack("{s:n, s:n, s:n, s:n, s:n}", "tool", "valid", "args", "policy", "pass")
	                     : json_pack("{s:f, s:f, s:f, s:f, s:f}", "tool", 0.95, "valid", 0.93,
	                                 "args", 0.9, "policy", 0.91, "pass", pass);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:{}}", "id",
	                 "0190d9a0-0000-7000-8000-000000000000", "ts", ts, "provider", "openai-chat",
	                 "api", "openai-chat", "model", model, "profile", "coding", "manifest",
	                 "cb52351068d0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "suite", suite,
	                 "cases", 1098, "runs", 1, "scores", scores, "report");
}

static void test_history(void **state)
{
	const char *s1 = "9f1c2a3b4c5d6e7f", *s2 = "0000111122223333";
	json_t *rows = json_array();
	json_array_append_new(rows, row("2026-11-30T21:04:11.000Z", "gpt-4.1-mini", s1, 0.87, 0));
	json_array_append_new(rows, row("2026-11-30T21:10:00.000Z", "other", s1, 0.5, 0));
	json_array_append_new(rows, row("2026-11-30T21:30:02.500Z", "gpt-4.1-mini", s1, 0.9, 0));
	json_array_append_new(rows, row("2026-11-30T21:40:00.000Z", "gpt-4.1-mini", s2, 0.7, 0));
	json_array_append_new(rows, row("2026-11-30T21:50:00.000Z", "gpt-4.1-mini", s1, 0.85, 0));
	json_array_append_new(rows, row("2026-11-30T22:00:00.000Z", "gpt-4.1-mini", s1, 0, 1));
	char *t = tgi_eval_history_render(rows, "table");
	const char *expect =
		"when (UTC)            model            manifest      suite     cases  runs  tool valid  args policy  pass   Δpass\n"
		"2026-11-30 21:04:11   gpt-4.1-mini     cb52351068d0  9f1c2a3b  1,098     1   95%   93%   90%    91%   87%       -\n"
		"2026-11-30 21:10:00   other            cb52351068d0  9f1c2a3b  1,098     1   95%   93%   90%    91%   50%       -\n"
		"2026-11-30 21:30:02   gpt-4.1-mini     cb52351068d0  9f1c2a3b  1,098     1   95%   93%   90%    91%   90%  +3 pts\n"
		"2026-11-30 21:40:00   gpt-4.1-mini     cb52351068d0  00001111  1,098     1   95%   93%   90%    91%   70%       -\n"
		"2026-11-30 21:50:00   gpt-4.1-mini     cb52351068d0  9f1c2a3b  1,098     1   95%   93%   90%    91%   85%  -5 pts\n"
		"2026-11-30 22:00:00   gpt-4.1-mini     cb52351068d0  9f1c2a3b  1,098     1     -     -     -      -     -       -\n";
	if (strcmp(t, expect)) {
		fprintf(stderr, "got:\n%s\nexpected:\n%s\n", t, expect);
		fail();
	}
	free(t);

	t = tgi_eval_history_render(rows, "json");
	json_t *back = json_loads(t, 0, NULL);
	assert_true(json_equal(back, rows));
	json_decref(back);
	free(t);
	assert_null(tgi_eval_history_render(rows, "junit"));

	/* a long model name widens its column; control characters replaced */
	json_array_clear(rows);
	json_array_append_new(rows, row("2026-11-30T21:04:11.000Z", "a-very-long-model-name\x1b-2026", s1, 1, 0));
	t = tgi_eval_history_render(rows, NULL);
	assert_contains(t, "when (UTC)            model                        manifest");
	assert_contains(t, "2026-11-30 21:04:11   a-very-long-model-name -2026 cb52351068d0");
	free(t);

	json_array_clear(rows);
	t = tgi_eval_history_render(rows, "table");
	assert_string_equal(t, "no eval runs are kept in the ledger\n");
	free(t);
	json_decref(rows);
}

/* ---- the definitions' sizes ---- */

static json_t *sizes_row(const char *profile, int tools, const long long cells[8])
{
	static const char *const apis[] = {"openai-chat", "openai-responses", "anthropic", "gemini"};
	json_t *per = json_object();
	for (int k = 0; k < 4; k++)
		json_object_set_new(per, apis[k], json_pack("{s:I, s:I}", "chars", (json_int_t)cells[2 * k],
		                                            "tokens_est", (json_int_t)cells[2 * k + 1]));
	return json_pack("{s:s, s:i, s:o}", "profile", profile, "tools", tools, "apis", per);
}

static void test_sizes(void **state)
{
	json_t *rows = json_array();
	json_array_append_new(rows, sizes_row("coding", 6, (const long long[]){6069, 1490, 5991, 1474,
	                                                                       5654, 1359, 5729, 1371}));
	json_array_append_new(rows, sizes_row("minimal", 3, (const long long[]){3227, 805, 3188, 798,
	                                                                        2945, 712, 2996, 721}));
	json_array_append_new(rows, sizes_row("full", 12, (const long long[]){1234567, 310000, 5991,
	                                                                      1474, 5654, 1359, 5729,
	                                                                      1371}));
	char *t = tgi_eval_sizes_render(rows, "table");
	/* columns of 20 characters, thousands separated; a wider cell pushes the
	 * rest; no line ends in a space */
	const char *expect =
		"profile      tools  openai-chat           openai-responses      anthropic             gemini\n"
		"coding           6  6,069 (~1,490 tok)    5,991 (~1,474 tok)    5,654 (~1,359 tok)    5,729 (~1,371 tok)\n"
		"minimal          3  3,227 (~805 tok)      3,188 (~798 tok)      2,945 (~712 tok)      2,996 (~721 tok)\n"
		"full            12  1,234,567 (~310,000 tok)  5,991 (~1,474 tok)    5,654 (~1,359 tok)    5,729 (~1,371 tok)\n"
		"characters of the tools array as each API is sent it; tokens estimated\n";
	if (strcmp(t, expect)) {
		fprintf(stderr, "got:\n%s\nexpected:\n%s\n", t, expect);
		fail();
	}
	free(t);
	t = tgi_eval_sizes_render(rows, NULL); /* the default */
	assert_string_equal(t, expect);
	free(t);

	t = tgi_eval_sizes_render(rows, "json");
	assert_non_null(strstr(t, "\n  {\n    \"profile\": \"coding\",")); /* indented */
	json_t *back = json_loads(t, 0, NULL);
	assert_true(json_equal(back, rows));
	json_decref(back);
	free(t);
	assert_null(tgi_eval_sizes_render(rows, "junit"));

	/* a profile name is data (control characters replaced); an API a row
	 * lacks is "-" */
	json_array_clear(rows);
	json_array_append_new(rows, sizes_row("evil\x1b[2J", 1, (const long long[]){10, 3, 10, 3, 10, 3,
	                                                                           10, 3}));
	json_array_append_new(rows, json_pack("{s:s, s:i, s:{}}", "profile", "bare", "tools", 0, "apis"));
	t = tgi_eval_sizes_render(rows, "table");
	assert_contains(t, "\nevil [2J         1  10 (~3 tok)  ");
	assert_contains(t, "\nbare             0  -                     -                     -                     -\n");
	free(t);
	json_decref(rows);
}

/* ---- the token estimate ---- */

/* Texts with their counts by gpt-tokenizer (cl100k_base, o200k_base). */
static const struct {
	const char *text;
	size_t cl100k, o200k;
} known[] = {
	{"[{\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"description\":\"Read a text "
	 "file in the workspace. Returns the lines numbered like `cat -n`, starting at `offset` "
	 "(1-based) and at most `limit` lines, with `total_lines` for the whole file. Lines over "
	 "2000 characters are cut. A selection over 100,000 characters is refused: page through "
	 "large files with offset and limit. Binary files are refused; use list_dir for "
	 "directories.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
	 "\"string\",\"description\":\"File path relative to the workspace root. (minLength: 1; "
	 "maxLength: 4095)\"},\"offset\":{\"type\":[\"integer\",\"null\"],\"minimum\":1,"
	 "\"description\":\"First line to return (1-based). (default: 1)\"},\"limit\":{\"type\":"
	 "[\"integer\",\"null\"],\"minimum\":1,\"description\":\"Maximum number of lines to return. "
	 "(default: 2000)\"}},\"required\":[\"path\",\"offset\",\"limit\"],\"additionalProperties\":"
	 "false},\"strict\":true}}]",
	 215, 221},
	{"{\n  \"name\": \"search_files\",\n  \"input_schema\": {\n    \"type\": \"object\",\n    "
	 "\"properties\": {\n      \"pattern\": {\n        \"type\": \"string\",\n        "
	 "\"description\": \"A regular expression (PCRE2) searched for in each line.\"\n      },\n"
	 "      \"glob\": {\n        \"type\": [\"string\", \"null\"],\n        \"description\": "
	 "\"Only files whose path matches this glob, e.g. src/**/*.c\"\n      }\n    },\n    "
	 "\"required\": [\"pattern\", \"glob\"]\n  }\n}\n",
	 112, 112},
	{"Unit tests show a tool works when called correctly; they say nothing about whether a "
	 "model calls it correctly. Give users a per-tool eval suite they can put in CI: realistic "
	 "requests, the call each should produce, scored on the right tool and valid arguments on "
	 "the first try, so that a description or schema change that confuses the model shows up "
	 "as a number.",
	 74, 74},
};

static void test_tokens(void **state)
{
	assert_int_equal(tgi_eval_tokens("", 0), 0);
	assert_int_equal(tgi_eval_tokens(NULL, 0), 0);
	assert_int_equal(tgi_eval_tokens("hello", 5), 1);
	assert_int_equal(tgi_eval_tokens("hello world", 11), 2);
	assert_int_equal(tgi_eval_tokens("123456789", 9), 3);
	/* within 15% of both tokenizers */
	for (size_t i = 0; i < TGI_ARRAY_LEN(known); i++) {
		size_t est = tgi_eval_tokens(known[i].text, strlen(known[i].text));
		size_t want[2] = {known[i].cl100k, known[i].o200k};
		for (int k = 0; k < 2; k++) {
			double err = fabs((double)est - (double)want[k]) / (double)want[k];
			if (err > 0.15)
				fail_msg("text %zu: estimate %zu, real %zu (%.0f%%)", i, est, want[k], err * 100);
		}
	}
	/* more text never costs fewer tokens; any bytes are counted, none crash */
	const char *t = known[0].text;
	size_t n = strlen(t), prev = 0;
	for (size_t cut = 0; cut <= n; cut += 37) {
		size_t e = tgi_eval_tokens(t, cut);
		assert_true(e + 1 >= prev); /* a cut may split a piece: one token of slack */
		prev = e;
	}
	unsigned char bytes[4096];
	unsigned seed = 7;
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
	size_t e = tgi_eval_tokens((const char *)bytes, sizeof bytes);
	assert_true(e > 0 && e <= sizeof bytes);
	/* a NUL is a character like another, not the end */
	assert_int_equal(tgi_eval_tokens("a\0b", 3), tgi_eval_tokens("a.b", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scores_exact),
		cmocka_unit_test(test_scores_empty),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_difference),
		cmocka_unit_test(test_threshold_fail_under),
		cmocka_unit_test(test_threshold_max_drop),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_table_model_text),
		cmocka_unit_test(test_table_compare),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_junit),
		cmocka_unit_test(test_junit_hostile),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_tokens),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
