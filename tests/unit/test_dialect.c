/*
 * test_dialect.c — tool names and schema dialects (src/protocol/dialect.c).
 *
 * Behaviour from DESIGN.md §6 and the dialect contract in
 * src/protocol/protocol.h.  Data first: every file in
 * tests/data/protocols/dialect/ is one rule, an input schema with the
 * OpenAI strict schema it must give (null: it cannot be strict) and the
 * Gemini legacy schema (or the exact error) it must give; names.json
 * lists tool names per API with the exact refusal.  Each golden is also
 * checked for what holds of every translation: the input is not changed,
 * and translating the result again gives the result back.  Then the
 * limits too large to be golden files (5000 properties, 120000
 * characters, inlining that multiplies, nesting past the walker's cap),
 * the notes' cap, and bad arguments.
 *
 * Owns: nothing.  Must not: read files outside the repository.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "protocol/protocol.h"

static char g_dir[PATH_MAX + 64]; /* tests/data/protocols/dialect, absolute */

/* ---- helpers ---------------------------------------------------------- */

static json_t *load(const char *name)
{
	char path[PATH_MAX + 320];
	json_error_t je;
	snprintf(path, sizeof path, "%s/%s", g_dir, name);
	json_t *v = json_load_file(path, JSON_DECODE_ANY, &je);
	if (!v)
		fail_msg("%s: %s at line %d", name, je.text, je.line);
	return v;
}

static void print_json(const char *label, const json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
	print_error("    %s: %s\n", label, t ? t : "null");
	free(t);
}

/* want == got (both may be NULL), else a report naming the file; 0 or 1. */
static int same(const char *file, const char *what, const json_t *want, const json_t *got)
{
	if ((!want && !got) || (want && got && json_equal(want, got)))
		return 0;
	print_error("%s: %s differs\n", file, what);
	print_json("want", want);
	print_json("got ", got);
	return 1;
}

static json_t *gemini(const json_t *schema, char *err, size_t errlen)
{
	err[0] = '\0';
	json_t *g = tgi_dialect_gemini_legacy(schema, err, errlen);
	if (g && err[0])
		fail_msg("gemini_legacy gave a schema and an error: %s", err);
	if (!g && !err[0])
		fail_msg("gemini_legacy gave neither a schema nor an error");
	return g;
}

/* ---- goldens ---------------------------------------------------------- */

/* One golden file: both translations as written, the input untouched,
 * and each result its own translation.  Returns the number of failures. */
static int check_golden(const char *file)
{
	char err[512];
	int bad = 0;
	json_t *g = load(file);
	json_t *schema = json_object_get(g, "schema");
	json_t *before = json_deep_copy(schema);

	assert_non_null(schema);
	assert_true(json_is_string(json_object_get(g, "rule")));
	assert_true(json_object_get(g, "openai_strict") != NULL);
	assert_true(!json_object_get(g, "gemini_legacy") != !json_object_get(g, "gemini_error"));

	json_t *want_o = json_object_get(g, "openai_strict");
	json_t *o = tgi_dialect_openai_strict(schema);
	bad += same(file, "openai_strict", json_is_null(want_o) ? NULL : want_o, o);
	if (o) {
		json_t *again = tgi_dialect_openai_strict(o);
		bad += same(file, "openai_strict of its own result", o, again);
		json_decref(again);
	}

	json_t *gm = gemini(schema, err, sizeof err);
	json_t *want_err = json_object_get(g, "gemini_error");
	if (want_err) {
		if (gm || strcmp(err, json_string_value(want_err)) != 0) {
			print_error("%s: gemini_legacy should fail\n    want: %s\n    got:  %s\n", file,
			            json_string_value(want_err), gm ? "a schema" : err);
			bad++;
		}
	} else {
		bad += same(file, "gemini_legacy", json_object_get(g, "gemini_legacy"), gm);
		if (!gm)
			print_error("    error: %s\n", err);
		if (gm) {
			json_t *again = gemini(gm, err, sizeof err);
			bad += same(file, "gemini_legacy of its own result", gm, again);
			json_decref(again);
		}
	}
	bad += same(file, "the input schema (it must not change)", before, schema);

	json_decref(o);
	json_decref(gm);
	json_decref(before);
	json_decref(g);
	return bad;
}

static void test_schema_goldens(void **state)
{
	struct dirent **ents;
	int n = scandir(g_dir, &ents, NULL, alphasort);
	int files = 0, bad = 0;
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		size_t len = strlen(name);
		if (len > 5 && strcmp(name + len - 5, ".json") == 0 &&
		    strcmp(name, "names.json") != 0) {
			bad += check_golden(name);
			files++;
		}
		free(ents[i]);
	}
	free(ents);
	assert_true(files >= 40); /* every rule has its file */
	assert_int_equal(bad, 0);
}

static void test_name_goldens(void **state)
{
	char err[512];
	json_t *g = load("names.json");
	json_t *names = json_object_get(g, "names");
	size_t i;
	json_t *c;
	int bad = 0;
	assert_true(json_array_size(names) > 20);
	json_array_foreach(names, i, c) {
		const char *api = json_string_value(json_object_get(c, "api"));
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *want = json_string_value(json_object_get(c, "error"));
		strcpy(err, "untouched");
		int rc = tgi_dialect_name_ok(api, name, err, sizeof err);
		if (want ? rc != -1 || strcmp(err, want) != 0 : rc != 0) {
			print_error("names.json #%zu (%s \"%s\")\n    want: %s\n    got:  %d %s\n", i, api,
			            name, want ? want : "accepted", rc, rc ? err : "");
			bad++;
		}
		if (!want && strcmp(err, "untouched") != 0) {
			print_error("names.json #%zu: err written on success\n", i);
			bad++;
		}
	}
	json_decref(g);
	assert_int_equal(bad, 0);
}

/* ---- what is too large for a golden file ------------------------------ */

/* {"type":"object","properties":{p0..p(n-1): {"type":"string"}}, all required} */
static json_t *wide(size_t n, size_t namelen)
{
	json_t *props = json_object(), *req = json_array();
	char name[256];
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "p%0*zu", (int)(namelen - 1), i);
		json_object_set_new(props, name, json_pack("{ss}", "type", "string"));
		json_array_append_new(req, json_string(name));
	}
	return json_pack("{ss so so}", "type", "object", "properties", props, "required", req);
}

static void test_openai_property_limit(void **state)
{
	json_t *ok = wide(5000, 6), *over = wide(5001, 6);
	json_t *o = tgi_dialect_openai_strict(ok);
	assert_non_null(o);
	assert_int_equal(json_object_size(json_object_get(o, "properties")), 5000);
	assert_null(tgi_dialect_openai_strict(over));
	json_decref(o);
	json_decref(ok);
	json_decref(over);
}

/* Property names, definition names, enum and const strings: 120000
 * characters at most. */
static void test_openai_string_limit(void **state)
{
	json_t *ok = wide(1000, 120); /* 1000 names of 120: exactly 120000 */
	json_t *over = wide(1000, 120);
	json_t *props = json_object_get(over, "properties");
	/* a const's one character is the 120001st */
	json_object_set_new(json_object_iter_value(json_object_iter(props)), "const", json_string("x"));
	json_t *o = tgi_dialect_openai_strict(ok);
	assert_non_null(o);
	assert_null(tgi_dialect_openai_strict(over));
	json_decref(o);
	json_decref(ok);
	json_decref(over);
}

/*
 * $defs d0..d(n-1), each with two properties referring to the next: the
 * schema is small but inlining it makes 2^n copies.  Gemini stops with a
 * sentence; OpenAI keeps the $refs and has no such problem.
 */
static json_t *doubling(int n)
{
	json_t *defs = json_object();
	char name[32], ref[48];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "d%d", i);
		snprintf(ref, sizeof ref, "#/$defs/d%d", i + 1);
		json_t *props = i + 1 < n ? json_pack("{s{ss}s{ss}}", "l", "$ref", ref, "r", "$ref", ref)
		                          : json_object();
		json_object_set_new(defs, name, json_pack("{ss so s[] sb}", "type", "object", "properties",
		                                          props, "required", "additionalProperties", 0));
	}
	return json_pack("{ss s{s{ss}} s[s] so}", "type", "object", "properties", "root", "$ref",
	                 "#/$defs/d0", "required", "root", "$defs", defs);
}

static void test_gemini_inlining_cap(void **state)
{
	char err[512];
	json_t *small = doubling(6), *big = doubling(24);
	json_t *g = gemini(small, err, sizeof err);
	assert_non_null(g);
	json_decref(g);
	assert_null(gemini(big, err, sizeof err));
	assert_string_equal(err, "the schema has more than 5000 subschemas once its $refs are inlined");
	json_t *o = tgi_dialect_openai_strict(big);
	assert_non_null(o);
	json_decref(o);
	json_decref(small);
	json_decref(big);
}

/* Arrays of arrays, n deep: no object nesting, only the walker's cap. */
static json_t *deep_arrays(int n)
{
	json_t *s = json_pack("{ss}", "type", "string");
	for (int i = 0; i < n; i++)
		s = json_pack("{ss so}", "type", "array", "items", s);
	return json_pack("{ss s{so} s[s]}", "type", "object", "properties", "a", s, "required", "a");
}

static void test_nesting_cap(void **state)
{
	char err[512];
	json_t *ok = deep_arrays(40), *over = deep_arrays(60);
	json_t *o = tgi_dialect_openai_strict(ok);
	json_t *g = gemini(ok, err, sizeof err);
	assert_non_null(o);
	assert_non_null(g);
	json_decref(o);
	json_decref(g);
	assert_null(tgi_dialect_openai_strict(over));
	assert_null(gemini(over, err, sizeof err));
	assert_non_null(strstr(err, "the schema is nested deeper than 48 levels at \"#/properties/a/items"));
	json_decref(ok);
	json_decref(over);
}

/* A self-referring $ref with a sibling would be inlined for ever: the
 * walker's cap stops it. */
static void test_self_inlining_stops(void **state)
{
	char err[512];
	json_t *s = json_pack("{ss s{s{sss s}} s{s{ss ss}}}", "type", "object", "properties", "a",
	                      "$ref", "#/$defs/x", "description", "A", "$defs", "x", "$ref",
	                      "#/$defs/x", "description", "X");
	assert_null(tgi_dialect_openai_strict(s));
	assert_null(gemini(s, err, sizeof err));
	assert_string_equal(err, "the schema has a $ref cycle at \"#/$defs/x\" (\"#/$defs/x\"); "
	                         "Gemini's legacy schema cannot express it");
	json_decref(s);
}

/*
 * $refs with siblings are inlined by OpenAI strict; a definition whose 30
 * anyOf branches each inline it again would multiply without end: the
 * walk stops at its budget and the schema is not strict.  Gemini sees the
 * cycle at once.
 */
static void test_inlining_fanout_stops(void **state)
{
	char err[512];
	json_t *any = json_array();
	for (int i = 0; i < 30; i++)
		json_array_append_new(any, json_pack("{ss ss}", "$ref", "#/$defs/x", "description", "d"));
	json_t *s = json_pack("{ss s{s{ss}} s[s] s{s{so}}}", "type", "object", "properties", "r",
	                      "$ref", "#/$defs/x", "required", "r", "$defs", "x", "anyOf", any);
	assert_null(tgi_dialect_openai_strict(s));
	assert_null(gemini(s, err, sizeof err));
	assert_non_null(strstr(err, "has a $ref cycle at \"#/$defs/x/anyOf/0\""));
	json_decref(s);
}

/* A described keyword's value is cut at 160 bytes, whole code points, and
 * control characters in it become spaces. */
static void test_notes_are_capped(void **state)
{
	char err[512], longval[1000];
	memset(longval, 'x', sizeof longval - 1);
	longval[sizeof longval - 1] = '\0';
	json_t *s = json_pack("{ss s{s{ss ss} s{ss ss}} s[ss]}", "type", "object", "properties",
	                      "a", "type", "string", "default", longval,
	                      "b", "type", "string", "default", "one\ntwo\x7f",
	                      "required", "a", "b");
	json_t *o = tgi_dialect_openai_strict(s);
	assert_non_null(o);
	const char *d = json_string_value(
		json_object_get(json_object_get(json_object_get(o, "properties"), "a"), "description"));
	assert_non_null(d);
	assert_int_equal(strlen(d), strlen("default: ") + 160 + 3);
	assert_string_equal(d + strlen(d) - 4, "x...");
	d = json_string_value(
		json_object_get(json_object_get(json_object_get(o, "properties"), "b"), "description"));
	assert_string_equal(d, "default: one two ");
	json_t *g = gemini(s, err, sizeof err);
	assert_non_null(g);
	json_decref(g);
	json_decref(o);
	json_decref(s);
}

/* Bad arguments: a sentence, never a crash; err cut safely. */
static void test_bad_arguments(void **state)
{
	char err[512], tiny[12];
	assert_null(tgi_dialect_openai_strict(NULL));
	assert_null(gemini(NULL, err, sizeof err));
	assert_string_equal(err, "the schema is missing");

	json_t *str = json_string("object");
	assert_null(tgi_dialect_openai_strict(str));
	assert_null(gemini(str, err, sizeof err));
	assert_string_equal(err, "the schema at \"#\" is not a schema; Gemini's legacy schema cannot "
	                         "express it");
	json_decref(str);

	assert_int_equal(tgi_dialect_name_ok(NULL, "x", err, sizeof err), -1);
	assert_string_equal(err, "unknown API \"\"; expected openai-chat, openai-responses, "
	                         "anthropic or gemini");
	assert_int_equal(tgi_dialect_name_ok("gemini", NULL, err, sizeof err), -1);
	assert_string_equal(err, "tool name \"\" is empty; gemini needs 1 to 64 characters");

	/* a short buffer gets the start of the sentence, terminated */
	assert_int_equal(tgi_dialect_name_ok("anthropic", "a b", tiny, sizeof tiny), -1);
	assert_string_equal(tiny, "tool name \"");
	/* a name cut inside a code point is not cut inside it */
	char name[80];
	memset(name, 'a', sizeof name);
	memcpy(name + 31, "\xc3\xa9", 2); /* é across the 32-byte cut */
	name[sizeof name - 1] = '\0';
	assert_int_equal(tgi_dialect_name_ok("gemini", name, err, sizeof err), -1);
	assert_non_null(strstr(err, "aaa...\" is too long for gemini (79 bytes; at most 64)"));
	json_t *ok = json_string(err);
	assert_non_null(ok); /* valid UTF-8 */
	json_decref(ok);
	/* a zero-length buffer is left alone */
	assert_int_equal(tgi_dialect_name_ok("gemini", "1", err, 0), -1);
}

int main(void)
{
	const char *root = getenv("TOOLGATE_ROOT");
	char base[PATH_MAX];
	if (!realpath(root && *root ? root : ".", base)) {
		perror("toolgate root");
		return 1;
	}
	snprintf(g_dir, sizeof g_dir, "%s/tests/data/protocols/dialect", base);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_goldens),
		cmocka_unit_test(test_name_goldens),
		cmocka_unit_test(test_openai_property_limit),
		cmocka_unit_test(test_openai_string_limit),
		cmocka_unit_test(test_gemini_inlining_cap),
		cmocka_unit_test(test_nesting_cap),
		cmocka_unit_test(test_self_inlining_stops),
		cmocka_unit_test(test_inlining_fanout_stops),
		cmocka_unit_test(test_notes_are_capped),
		cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
