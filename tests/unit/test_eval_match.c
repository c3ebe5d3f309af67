/*
 * test_eval_match.c — an eval case's expected arguments (src/eval/match.c):
 * globs, numbers, booleans and null, arrays, JSON Schema fragments (one of
 * annotations only refused), nested subsets, the sentences a mismatch gives, what does not compile, and
 * checks from several threads at once.
 *
 * Owns: nothing beyond the test.  Must not: read files or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eval/eval.h"
#include "util/util.h"

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

static tgi_match *compile(const char *expect)
{
	char err[512] = "";
	json_t *e = js(expect);
	tgi_match *m = tgi_match_compile(e, err, sizeof err);
	json_decref(e);
	if (!m)
		fail_msg("compiling %s failed: %s", expect, err);
	return m;
}

/* expect against args: 1 for a match; otherwise why must equal want_why
 * (or, when want_why ends in '*', begin with it). */
static void check(const char *expect, const char *args, int want, const char *want_why)
{
	char why[512] = "";
	tgi_match *m = compile(expect);
	json_t *a = js(args);
	int got = tgi_match_check(m, a, why, sizeof why);
	json_decref(a);
	tgi_match_free(m);
	if (got != want)
		fail_msg("%s against %s: got %d (%s), want %d", expect, args, got, why, want);
	if (!want_why)
		return;
	size_t n = strlen(want_why);
	int prefix = n && want_why[n - 1] == '*';
	if (prefix ? strncmp(why, want_why, n - 1) : strcmp(why, want_why))
		fail_msg("%s against %s: why \"%s\", want \"%s\"", expect, args, why, want_why);
}

static void refused(const char *expect, const char *want_err)
{
	char err[512] = "";
	json_t *e = js(expect);
	tgi_match *m = tgi_match_compile(e, err, sizeof err);
	json_decref(e);
	if (m) {
		tgi_match_free(m);
		fail_msg("%s compiled; want \"%s\"", expect, want_err);
	}
	size_t n = strlen(want_err);
	int prefix = n && want_err[n - 1] == '*';
	if (prefix ? strncmp(err, want_err, n - 1) : strcmp(err, want_err))
		fail_msg("%s: error \"%s\", want \"%s\"", expect, err, want_err);
}

/* ---- strings are globs ---- */

static void test_glob(void **state)
{
	(void)state;
	check("{\"path\": \"README*\"}", "{\"path\": \"README.md\"}", 1, NULL);
	check("{\"path\": \"README*\"}", "{\"path\": \"docs/README.md\"}", 0,
	      "/path: expected \"README*\", got \"docs/README.md\"");
	check("{\"path\": \"*README.md\"}", "{\"path\": \"./README.md\"}", 1, NULL);
	/* `*` crosses '/', `?` is one character */
	check("{\"path\": \"src/*.c\"}", "{\"path\": \"src/a/b.c\"}", 1, NULL);
	check("{\"path\": \"a?c\"}", "{\"path\": \"abc\"}", 1, NULL);
	check("{\"path\": \"a?c\"}", "{\"path\": \"ac\"}", 0, "/path: expected \"a?c\", got \"ac\"");
	/* a string without wildcards is equality, case and all */
	check("{\"path\": \"README.md\"}", "{\"path\": \"readme.md\"}", 0,
	      "/path: expected \"README.md\", got \"readme.md\"");
	check("{\"path\": \"\"}", "{\"path\": \"\"}", 1, NULL);
	check("{\"path\": \"\"}", "{\"path\": \"x\"}", 0, "/path: expected \"\", got \"x\"");
}

/* `*` is always a wildcard: a literal one needs a fragment (docs/EVAL.md). */
static void test_literal_star_needs_a_fragment(void **state)
{
	(void)state;
	check("{\"glob\": \"*.c\"}", "{\"glob\": \"main.c\"}", 1, NULL);
	check("{\"glob\": {\"const\": \"*.c\"}}", "{\"glob\": \"*.c\"}", 1, NULL);
	check("{\"glob\": {\"const\": \"*.c\"}}", "{\"glob\": \"main.c\"}", 0, "/glob: *");
}

static void test_string_is_never_a_number_or_boolean(void **state)
{
	(void)state;
	check("{\"limit\": \"20\"}", "{\"limit\": 20}", 0, "/limit: expected \"20\", got 20");
	check("{\"limit\": \"*\"}", "{\"limit\": 20}", 0, "/limit: expected \"*\", got 20");
	check("{\"all\": \"true\"}", "{\"all\": true}", 0, "/all: expected \"true\", got true");
	check("{\"x\": \"*\"}", "{\"x\": null}", 0, "/x: expected \"*\", got null");
	check("{\"x\": \"*\"}", "{\"x\": [\"a\"]}", 0, "/x: expected \"*\", got [\"a\"]");
}

/* ---- numbers, booleans, null ---- */

static void test_numbers(void **state)
{
	(void)state;
	check("{\"limit\": 20}", "{\"limit\": 20}", 1, NULL);
	check("{\"limit\": 1}", "{\"limit\": 1.0}", 1, NULL);
	check("{\"limit\": 1.0}", "{\"limit\": 1}", 1, NULL);
	check("{\"limit\": 0.5}", "{\"limit\": 0.5}", 1, NULL);
	check("{\"limit\": 20}", "{\"limit\": 21}", 0, "/limit: expected 20, got 21");
	check("{\"limit\": 20}", "{\"limit\": \"20\"}", 0, "/limit: expected 20, got \"20\"");
	check("{\"limit\": 1}", "{\"limit\": true}", 0, "/limit: expected 1, got true");
	check("{\"n\": 9007199254740993}", "{\"n\": 9007199254740992}", 0,
	      "/n: expected 9007199254740993, got 9007199254740992");
	check("{\"n\": -3}", "{\"n\": -3.0}", 1, NULL);
}

static void test_booleans_and_null(void **state)
{
	(void)state;
	check("{\"all\": true}", "{\"all\": true}", 1, NULL);
	check("{\"all\": false}", "{\"all\": false}", 1, NULL);
	check("{\"all\": true}", "{\"all\": false}", 0, "/all: expected true, got false");
	check("{\"all\": false}", "{\"all\": 0}", 0, "/all: expected false, got 0");
	check("{\"all\": true}", "{\"all\": \"true\"}", 0, "/all: expected true, got \"true\"");
	check("{\"x\": null}", "{\"x\": null}", 1, NULL);
	check("{\"x\": null}", "{\"x\": 0}", 0, "/x: expected null, got 0");
	check("{\"x\": null}", "{}", 0, "/x is missing");
}

/* ---- keys ---- */

static void test_missing_and_extra_keys(void **state)
{
	(void)state;
	check("{\"path\": \"a\", \"limit\": 20}", "{\"path\": \"a\"}", 0, "/limit is missing");
	check("{\"path\": \"a\"}", "{\"path\": \"a\", \"limit\": 5, \"x\": [1]}", 1, NULL);
	check("{}", "{\"anything\": 1}", 1, NULL);
	check("{}", "{}", 1, NULL);
	/* the first key written is the first reported */
	check("{\"b\": 1, \"a\": 2}", "{}", 0, "/b is missing");
	/* pointers escape '/' and '~' */
	check("{\"a/b\": 1}", "{}", 0, "/a~1b is missing");
	check("{\"m~n\": 1}", "{\"m~n\": 2}", 0, "/m~0n: expected 1, got 2");
}

/* The arguments object is a subset even when its keys are keyword names:
 * search_files has "pattern" and may have "type". */
static void test_root_is_never_a_fragment(void **state)
{
	(void)state;
	check("{\"pattern\": \"TODO\"}", "{\"pattern\": \"TODO\", \"path\": \".\"}", 1, NULL);
	check("{\"pattern\": \"TODO\"}", "{\"pattern\": \"FIXME\"}", 0,
	      "/pattern: expected \"TODO\", got \"FIXME\"");
	check("{\"type\": \"f\"}", "{}", 0, "/type is missing");
}

/* ---- arrays ---- */

static void test_arrays(void **state)
{
	(void)state;
	check("{\"command\": [\"ls\", \"-l*\"]}", "{\"command\": [\"ls\", \"-la\"]}", 1, NULL);
	check("{\"command\": [\"ls\", \"-l\"]}", "{\"command\": [\"ls\", \"-l\", \"src\"]}", 0,
	      "/command: expected 2 elements, got 3");
	check("{\"command\": [\"ls\"]}", "{\"command\": []}", 0,
	      "/command: expected 1 element, got 0");
	check("{\"command\": [\"ls\", \"-l*\"]}", "{\"command\": [\"ls\", \"-a\"]}", 0,
	      "/command/1: expected \"-l*\", got \"-a\"");
	check("{\"command\": [\"ls\"]}", "{\"command\": \"ls\"}", 0,
	      "/command: expected an array of 1 element, got \"ls\"");
	check("{\"ids\": []}", "{\"ids\": []}", 1, NULL);
	check("{\"ids\": [1, 2.0]}", "{\"ids\": [1.0, 2]}", 1, NULL);
	check("{\"m\": [[1], {\"a\": \"x*\"}]}", "{\"m\": [[1], {\"a\": \"xy\", \"b\": 0}]}", 1, NULL);
	check("{\"m\": [[1], {\"a\": \"x*\"}]}", "{\"m\": [[1], {\"b\": 0}]}", 0, "/m/1/a is missing");
}

/* ---- objects: fragments and nested subsets ---- */

static void test_schema_fragments(void **state)
{
	(void)state;
	check("{\"limit\": {\"minimum\": 20}}", "{\"limit\": 25}", 1, NULL);
	check("{\"limit\": {\"minimum\": 20}}", "{\"limit\": 5}", 0, "/limit: *");
	check("{\"limit\": {\"type\": \"integer\"}}", "{\"limit\": \"5\"}", 0, "/limit: *");
	check("{\"pattern\": {\"type\": \"string\", \"pattern\": \"parse_?args\"}}",
	      "{\"pattern\": \"def parseargs\"}", 1, NULL);
	check("{\"pattern\": {\"type\": \"string\", \"pattern\": \"parse_?args\"}}",
	      "{\"pattern\": \"parse\"}", 0, "/pattern: *");
	check("{\"mode\": {\"enum\": [\"fast\", \"slow\"]}}", "{\"mode\": \"slow\"}", 1, NULL);
	check("{\"cmd\": {\"contains\": {\"const\": \"-r\"}}}", "{\"cmd\": [\"grep\", \"-r\"]}", 1,
	      NULL);
	check("{\"cmd\": {\"contains\": {\"const\": \"-r\"}}}", "{\"cmd\": [\"grep\"]}", 0, "/cmd*");
	/* the schema's own pointer continues the argument's */
	check("{\"ids\": {\"items\": {\"type\": \"integer\"}}}", "{\"ids\": [1, \"x\"]}", 0,
	      "/ids/1: *");
	/* a fragment still needs its argument present */
	check("{\"limit\": {\"minimum\": 1}}", "{}", 0, "/limit is missing");
	/* the sentence quotes the schema's own first error */
	char why[512] = "";
	tgi_match *m = compile("{\"limit\": {\"minimum\": 20}}");
	json_t *a = js("{\"limit\": 5}");
	assert_int_equal(tgi_match_check(m, a, why, sizeof why), 0);
	assert_non_null(strstr(why, "20"));
	json_decref(a);
	tgi_match_free(m);
}

static void test_nested_subsets(void **state)
{
	(void)state;
	/* one key that is not a keyword makes the object a subset */
	check("{\"opts\": {\"type\": \"file\", \"name\": \"a*\"}}",
	      "{\"opts\": {\"type\": \"file\", \"name\": \"abc\", \"x\": 1}}", 1, NULL);
	check("{\"opts\": {\"mode\": \"fast\"}}", "{\"opts\": {\"depth\": 2}}", 0,
	      "/opts/mode is missing");
	check("{\"opts\": {\"mode\": \"fast\"}}", "{\"opts\": 3}", 0,
	      "/opts: expected an object, got 3");
	check("{\"opts\": {\"a\": {\"b\": {\"c\": 1}}}}", "{\"opts\": {\"a\": {\"b\": {\"c\": 2}}}}", 0,
	      "/opts/a/b/c: expected 1, got 2");
	/* {} is a subset that matches any object, and only an object */
	check("{\"opts\": {}}", "{\"opts\": {\"x\": 1}}", 1, NULL);
	check("{\"opts\": {}}", "{\"opts\": \"x\"}", 0, "/opts: expected an object, got \"x\"");
	check("{\"opts\": {}}", "{\"opts\": []}", 0, "/opts: expected an object, got []");
}

/* A fragment of annotations only would accept any value: refused, each
 * annotation keyword alone and all of them together, at any depth. */
static void test_annotation_only_fragment_refused(void **state)
{
	(void)state;
	static const char *const annotations[] = {
		"\"title\": \"a.txt\"", "\"description\": \"the file\"", "\"default\": \"a.txt\"",
		"\"examples\": [\"a.txt\"]", "\"$comment\": \"x\"", "\"deprecated\": true",
		"\"readOnly\": true", "\"writeOnly\": false", "\"$id\": \"urn:x\"",
		"\"$schema\": \"https://json-schema.org/draft/2020-12/schema\"", "\"$anchor\": \"a\"",
		"\"$defs\": {\"x\": {\"const\": 1}}", "\"definitions\": {\"x\": {\"const\": 1}}",
	};
	const char *sentence = "a JSON Schema fragment whose keywords only annotate matches "
	                       "anything; give a value or a checking keyword such as const";
	char want[256], expect[512];
	for (size_t i = 0; i < sizeof annotations / sizeof *annotations; i++) {
		snprintf(expect, sizeof expect, "{\"path\": {%s}}", annotations[i]);
		snprintf(want, sizeof want, "/path: %s", sentence);
		refused(expect, want);
	}
	snprintf(want, sizeof want, "/opts/1/path: %s", sentence);
	refused("{\"opts\": [1, {\"path\": {\"title\": \"a\", \"description\": \"b\", "
	        "\"default\": \"c\", \"examples\": [], \"$comment\": \"d\", \"readOnly\": true}}]}",
	        want);
	/* one keyword that checks is enough, annotations beside it are fine */
	check("{\"path\": {\"title\": \"the file\", \"const\": \"a.txt\"}}", "{\"path\": \"a.txt\"}", 1,
	      NULL);
	check("{\"path\": {\"title\": \"the file\", \"const\": \"a.txt\"}}", "{\"path\": \"b.txt\"}", 0,
	      "/path: *");
	check("{\"path\": {\"description\": \"any text\", \"type\": \"string\"}}", "{\"path\": 3}", 0,
	      "/path: *");
	check("{\"path\": {\"$defs\": {\"p\": {\"pattern\": \"^a\"}}, \"$ref\": \"#/$defs/p\"}}",
	      "{\"path\": \"bc\"}", 0, "/path*");
	/* an argument named like an annotation is matched as an argument */
	check("{\"title\": \"a*\"}", "{\"title\": \"abc\"}", 1, NULL);
}

/* ---- what does not compile ---- */

static json_t *nest(int levels)
{
	/* levels counts the arguments object: nest(1) is {} */
	json_t *v = json_object();
	for (int i = 1; i < levels; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "a", v);
		v = o;
	}
	return v;
}

static void test_deep_nesting_refused(void **state)
{
	(void)state;
	char err[512] = "";
	json_t *ok = nest(32), *deep = nest(33);
	tgi_match *m = tgi_match_compile(ok, err, sizeof err);
	assert_non_null(m);
	assert_int_equal(tgi_match_check(m, ok, err, sizeof err), 1);
	tgi_match_free(m);
	assert_null(tgi_match_compile(deep, err, sizeof err));
	assert_non_null(strstr(err, "nested more than 32 levels deep"));
	assert_int_equal(err[0], '/');
	json_decref(ok);
	json_decref(deep);

	/* arrays count as levels too */
	json_t *v = json_array();
	for (int i = 2; i < 40; i++) {
		json_t *a = json_array();
		json_array_append_new(a, v);
		v = a;
	}
	json_t *root = json_pack("{s:o}", "x", v);
	assert_null(tgi_match_compile(root, err, sizeof err));
	assert_true(strncmp(err, "/x/0/0/", 7) == 0);
	json_decref(root);
}

static void test_compile_errors(void **state)
{
	(void)state;
	refused("{\"q\": {\"pattern\": \"(\"}}", "/q/pattern: *");
	refused("{\"q\": {\"type\": \"strong\"}}", "/q*");
	refused("{\"a\": [{\"b\": {\"minimum\": \"x\"}}]}", "/a/0/b*");
	refused("[1]", "expected an object of arguments, got a list");
	refused("\"x\"", "expected an object of arguments, got \"x\"");
	char err[128];
	assert_null(tgi_match_compile(NULL, err, sizeof err));

	json_t *e = json_object();
	json_object_set_new(e, "p", json_stringn("a\0b", 3));
	assert_null(tgi_match_compile(e, err, sizeof err));
	assert_string_equal(err, "/p: a glob cannot hold a NUL character");
	json_decref(e);
}

/* ---- the sentence ---- */

static void test_why_is_one_clean_line(void **state)
{
	(void)state;
	char why[512];
	/* a key holding a newline is reported without it */
	json_t *e = json_object();
	json_object_set_new(e, "a\nb", json_integer(1));
	tgi_match *m = tgi_match_compile(e, why, sizeof why);
	json_t *a = json_object();
	assert_int_equal(tgi_match_check(m, a, why, sizeof why), 0);
	for (const char *s = why; *s; s++)
		assert_true((unsigned char)*s >= 0x20);
	tgi_match_free(m);
	json_decref(a);
	json_decref(e);

	/* a long value is cut */
	char big[2000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	m = compile("{\"p\": \"y\"}");
	a = json_pack("{s:s}", "p", big);
	assert_int_equal(tgi_match_check(m, a, why, sizeof why), 0);
	assert_true(strlen(why) < 200);
	assert_non_null(strstr(why, "..."));
	json_decref(a);

	/* a long value of multi-byte characters is cut on a character boundary */
	json_t *u = json_string("");
	for (int i = 0; i < 200; i++) {
		json_t *t = json_pack("s++", json_string_value(u), "\xc3\xa9", "");
		json_decref(u);
		u = t;
	}
	a = json_pack("{s:O}", "p", u);
	assert_int_equal(tgi_match_check(m, a, why, sizeof why), 0);
	json_t *back = json_string(why);     /* NULL for invalid UTF-8 */
	assert_non_null(back);
	json_decref(back);
	json_decref(a);
	json_decref(u);

	/* not an object: no match, a sentence */
	a = js("[1]");
	assert_int_equal(tgi_match_check(m, a, why, sizeof why), 0);
	assert_string_equal(why, "the arguments are not a JSON object");
	json_decref(a);
	tgi_match_free(m);
	tgi_match_free(NULL);
}

/* The compiled match keeps its own copy of what it was given. */
static void test_expect_is_copied(void **state)
{
	(void)state;
	char err[256];
	json_t *e = js("{\"path\": \"a*\", \"n\": [1, {\"k\": true}]}");
	tgi_match *m = tgi_match_compile(e, err, sizeof err);
	assert_non_null(m);
	json_object_set_new(e, "path", json_integer(3));
	json_decref(e);
	json_t *a = js("{\"path\": \"abc\", \"n\": [1, {\"k\": true}]}");
	assert_int_equal(tgi_match_check(m, a, err, sizeof err), 1);
	json_decref(a);
	tgi_match_free(m);
}

/* ---- threads ---- */

typedef struct worker {
	const tgi_match *m;
	int              bad;
} worker;

static void *run_checks(void *arg)
{
	worker *w = arg;
	char why[256];
	json_t *good = js("{\"path\": \"src/a.c\", \"limit\": 30, \"cmd\": [\"ls\", \"-r\"]}");
	json_t *poor = js("{\"path\": \"src/a.c\", \"limit\": 3, \"cmd\": [\"ls\", \"-r\"]}");
	for (int i = 0; i < 500; i++) {
		if (tgi_match_check(w->m, good, why, sizeof why) != 1)
			w->bad++;
		if (tgi_match_check(w->m, poor, why, sizeof why) != 0 || strncmp(why, "/limit: ", 8))
			w->bad++;
	}
	json_decref(good);
	json_decref(poor);
	return NULL;
}

static void test_threads_share_a_match(void **state)
{
	(void)state;
	tgi_match *m = compile("{\"path\": \"src/*\", \"limit\": {\"minimum\": 20}, "
	                       "\"cmd\": {\"contains\": {\"pattern\": \"^-r$\"}}}");
	pthread_t t[4];
	worker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker){m, 0};
		assert_int_equal(pthread_create(&t[i], NULL, run_checks, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	tgi_match_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_literal_star_needs_a_fragment),
		cmocka_unit_test(test_string_is_never_a_number_or_boolean),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_booleans_and_null),
		cmocka_unit_test(test_missing_and_extra_keys),
		cmocka_unit_test(test_root_is_never_a_fragment),
		cmocka_unit_test(test_arrays),
		cmocka_unit_test(test_schema_fragments),
		cmocka_unit_test(test_nested_subsets),
		cmocka_unit_test(test_annotation_only_fragment_refused),
		cmocka_unit_test(test_deep_nesting_refused),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_why_is_one_clean_line),
		cmocka_unit_test(test_expect_is_copied),
		cmocka_unit_test(test_threads_share_a_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
