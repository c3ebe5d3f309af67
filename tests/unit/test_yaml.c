/*
 * test_yaml.c — YAML → JSON (src/util/yaml.c): core-schema typing, what is
 * refused and where, and the pointer → line:col source map.
 *
 * Owns: nothing beyond the test.  Must not: read files or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "util/util.h"

/* Parse text (NUL-terminated) and return the compact canonical JSON, or
 * NULL with err filled.  Caller frees. */
static char *parse_canon(const char *text, char *err, size_t errlen)
{
	json_t *v = tgi_yaml_parse(text, strlen(text), NULL, err, errlen);
	if (!v)
		return NULL;
	char *s = tgi_json_canonical(v);
	json_decref(v);
	return s;
}

static void expect_json(const char *text, const char *want)
{
	char err[512] = "";
	char *got = parse_canon(text, err, sizeof err);
	if (!got)
		fail_msg("parsing %s failed: %s", text, err);
	if (strcmp(got, want))
		fail_msg("parsing %s: got %s, want %s", text, got, want);
	free(got);
}

static void expect_error(const char *text, size_t len, const char *want)
{
	char err[512] = "";
	tgi_srcmap *map = (tgi_srcmap *)1;
	json_t *v = tgi_yaml_parse(text, len, &map, err, sizeof err);
	if (v) {
		char *s = tgi_json_canonical(v);
		json_decref(v);
		tgi_srcmap_free(map);
		fail_msg("parsing %s succeeded with %s; want error %s", text, s, want);
	}
	assert_null(map);
	if (strncmp(err, want, strlen(want)))
		fail_msg("parsing %s: error \"%s\", want it to start with \"%s\"", text, err, want);
}

#define ERR(text, want) expect_error((text), strlen(text), (want))

static void test_plain_scalars_core_schema(void **state)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "a: ~",            "{\"a\":null}" },
		{ "a: null",         "{\"a\":null}" },
		{ "a: Null",         "{\"a\":null}" },
		{ "a: NULL",         "{\"a\":null}" },
		{ "a:",              "{\"a\":null}" },
		{ "a: true",         "{\"a\":true}" },
		{ "a: True",         "{\"a\":true}" },
		{ "a: TRUE",         "{\"a\":true}" },
		{ "a: false",        "{\"a\":false}" },
		{ "a: False",        "{\"a\":false}" },
		{ "a: FALSE",        "{\"a\":false}" },
		{ "a: 0",            "{\"a\":0}" },
		{ "a: -17",          "{\"a\":-17}" },
		{ "a: +17",          "{\"a\":17}" },
		{ "a: 007",          "{\"a\":7}" },
		{ "a: 0x1F",         "{\"a\":31}" },
		{ "a: 0xff",         "{\"a\":255}" },
		{ "a: 0o17",         "{\"a\":15}" },
		{ "a: 9223372036854775807",  "{\"a\":9223372036854775807}" },
		{ "a: -9223372036854775808", "{\"a\":-9223372036854775808}" },
		{ "a: 1.5",          "{\"a\":1.5}" },
		{ "a: -.5",          "{\"a\":-0.5}" },
		{ "a: 1.",           "{\"a\":1.0}" },
		{ "a: 1e3",          "{\"a\":1000.0}" },
		{ "a: 2.5E-1",       "{\"a\":0.25}" },
		/* YAML 1.1 booleans and other near misses stay strings */
		{ "a: yes",          "{\"a\":\"yes\"}" },
		{ "a: on",           "{\"a\":\"on\"}" },
		{ "a: tRUE",         "{\"a\":\"tRUE\"}" },
		{ "a: 0x",           "{\"a\":\"0x\"}" },
		{ "a: 0o8",          "{\"a\":\"0o8\"}" },
		{ "a: 1_000",        "{\"a\":\"1_000\"}" },
		{ "a: 1.2.3",        "{\"a\":\"1.2.3\"}" },
		{ "a: .",            "{\"a\":\".\"}" },
		{ "a: e3",           "{\"a\":\"e3\"}" },
		{ "a: inf",          "{\"a\":\"inf\"}" },
		{ "a: v1",           "{\"a\":\"v1\"}" },
		{ "a: hello world",  "{\"a\":\"hello world\"}" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		expect_json(cases[i].text, cases[i].want);
}

static void test_quoted_and_block_scalars_are_strings(void **state)
{
	expect_json("a: \"true\"", "{\"a\":\"true\"}");
	expect_json("a: '12'", "{\"a\":\"12\"}");
	expect_json("a: \"\"", "{\"a\":\"\"}");
	expect_json("a: 'null'", "{\"a\":\"null\"}");
	expect_json("a: \".inf\"", "{\"a\":\".inf\"}");
	expect_json("a: |\n  12\n", "{\"a\":\"12\\n\"}");
	expect_json("a: >-\n  line one\n  line two\n", "{\"a\":\"line one line two\"}");
	expect_json("a: \"tab\\there \\u00e9\"", "{\"a\":\"tab\\there \xc3\xa9\"}");
	/* keys are always their text */
	expect_json("1: a\ntrue: b\n~: c\n", "{\"1\":\"a\",\"true\":\"b\",\"~\":\"c\"}");
}

static void test_collections(void **state)
{
	expect_json("- 1\n- [2, {b: c}]\n- {}\n- []\n", "[1,[2,{\"b\":\"c\"}],{},[]]");
	expect_json("a:\n  b:\n    - x\n    - y\n  c: {d: 1}\n",
	            "{\"a\":{\"b\":[\"x\",\"y\"],\"c\":{\"d\":1}}}");
	/* JSON is YAML */
	expect_json("{\"a\": [1, 2.5, true, null, \"s\"], \"b\":{}}",
	            "{\"a\":[1,2.5,true,null,\"s\"],\"b\":{}}");
	expect_json("{\"a\":1,\"b\":[true,null]}", "{\"a\":1,\"b\":[true,null]}");
	/* one document, with explicit markers */
	expect_json("---\na: 1\n...\n", "{\"a\":1}");
	expect_json("%YAML 1.2\n---\na: 1\n", "{\"a\":1}");
}

static void test_empty_text_is_null(void **state)
{
	expect_json("", "null");
	expect_json("# only a comment\n", "null");
	expect_json("---\n", "null");
}

static void test_standard_tags(void **state)
{
	expect_json("a: !!str 12", "{\"a\":\"12\"}");
	expect_json("a: !!str", "{\"a\":\"\"}");
	expect_json("a: ! 12", "{\"a\":\"12\"}");
	expect_json("a: !!int \"12\"", "{\"a\":12}");
	expect_json("a: !!int 0x10", "{\"a\":16}");
	expect_json("a: !!float 2", "{\"a\":2.0}");
	expect_json("a: !!float 0x10", "{\"a\":16.0}");
	expect_json("a: !!bool \"true\"", "{\"a\":true}");
	expect_json("a: !!null ''", "{\"a\":null}");
	expect_json("a: !!seq [1]", "{\"a\":[1]}");
	expect_json("a: !!map {b: 1}", "{\"a\":{\"b\":1}}");
	expect_json("!!str a: 1", "{\"a\":1}");

	ERR("a: !!int abc", "1:4: \"abc\" is not a valid integer");
	ERR("a: !!bool yes", "1:4: \"yes\" is not a valid boolean");
	ERR("a: !!null x", "1:4: \"x\" is not a valid null");
	ERR("a: !!float x", "1:4: \"x\" is not a valid float");
	ERR("a: !custom x", "1:4: tag \"!custom\" is not supported");
	ERR("a: !!binary aGk=", "1:4: tag \"tag:yaml.org,2002:binary\" is not supported");
	ERR("a: !!set {b}", "1:4: tag \"tag:yaml.org,2002:set\" is not supported");
	ERR("a: !!map [1]", "1:4: tag \"tag:yaml.org,2002:map\" is not supported");
	ERR("a: !!seq {b: 1}", "1:4: tag \"tag:yaml.org,2002:seq\" is not supported");
	ERR("!!int 1: x", "1:1: key tag \"tag:yaml.org,2002:int\" is not supported");
}

static void test_numbers_json_cannot_hold(void **state)
{
	ERR("a: .inf", "1:4: \".inf\": infinity and NaN cannot be represented in JSON");
	ERR("a: -.Inf", "1:4: \"-.Inf\": infinity and NaN cannot be represented in JSON");
	ERR("a: +.INF", "1:4: \"+.INF\": infinity and NaN cannot be represented in JSON");
	ERR("a: .nan", "1:4: \".nan\": infinity and NaN cannot be represented in JSON");
	ERR("a: .NaN", "1:4: \".NaN\": infinity and NaN cannot be represented in JSON");
	ERR("a: !!float .nan", "1:4: \".nan\": infinity and NaN cannot be represented in JSON");
	ERR("a: 1e999", "1:4: number \"1e999\" is out of range");
	ERR("a: 9223372036854775808", "1:4: integer \"9223372036854775808\" is out of range");
	ERR("a: -9223372036854775809", "1:4: integer \"-9223372036854775809\" is out of range");
	ERR("a: 0x10000000000000000", "1:4: integer \"0x10000000000000000\" is out of range");
}

static void test_anchors_and_aliases_refused(void **state)
{
	ERR("a: &x 1\nb: *x\n", "1:4: anchor \"x\": anchors and aliases are not supported");
	ERR("a: *x\n", "1:4: alias \"x\": aliases are not supported");
	ERR("- &l [1]\n", "1:3: anchor \"l\": anchors and aliases are not supported");
	ERR("a: &m {b: 1}\n", "1:4: anchor \"m\": anchors and aliases are not supported");
	ERR("*k : v\n", "1:1: alias \"k\": aliases are not supported");
	/* the merge key is just a key, and its alias is refused */
	ERR("base: {a: 1}\nx:\n  <<: *base\n", "3:7: alias \"base\": aliases are not supported");
}

static void test_duplicate_and_non_scalar_keys(void **state)
{
	ERR("a: 1\nb: 2\na: 3\n", "3:1: duplicate key \"a\"");
	ERR("x:\n  k: 1\n  \"k\": 2\n", "3:3: duplicate key \"k\"");
	ERR("{a: 1, a: 1}", "1:8: duplicate key \"a\"");
	ERR("? [a, b]\n: 1\n", "1:3: mapping keys must be scalars, not lists");
	ERR("? {a: b}\n: 1\n", "1:3: mapping keys must be scalars, not mappings");
	ERR("{[a]: 1}", "1:2: mapping keys must be scalars, not lists");
	/* keys differing only in what a pointer would escape are different */
	expect_json("a/b: 1\na~b: 2\n", "{\"a/b\":1,\"a~b\":2}");
}

static void test_multiple_documents_refused(void **state)
{
	ERR("a: 1\n---\nb: 2\n", "2:1: multiple documents are not supported");
	ERR("--- 1\n--- 2\n", "2:1: multiple documents are not supported");
}

static char *nested(int levels, int flow)
{
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	for (int i = 0; i < levels; i++) {
		if (flow)
			tgi_buf_puts(&b, "[");
		else
			tgi_buf_printf(&b, "%*sk:\n", 2 * i, "");
	}
	if (flow)
		for (int i = 0; i < levels; i++)
			tgi_buf_puts(&b, "]");
	else
		tgi_buf_printf(&b, "%*sk: 1\n", 2 * levels, "");
	return tgi_buf_steal(&b);
}

static void test_nesting_capped(void **state)
{
	char err[512];
	/* 64 nested collections are fine ... */
	char *ok = nested(64, 1);
	json_t *v = tgi_yaml_parse(ok, strlen(ok), NULL, err, sizeof err);
	assert_non_null(v);
	json_decref(v);
	free(ok);
	ok = nested(63, 0); /* 63 "k:" levels + the innermost mapping = 64 */
	v = tgi_yaml_parse(ok, strlen(ok), NULL, err, sizeof err);
	if (!v)
		fail_msg("63 block levels: %s", err);
	json_decref(v);
	free(ok);

	/* ... the 65th is not, and the error says where */
	char *deep = nested(65, 1);
	ERR(deep, "1:65: nesting is deeper than 64 levels");
	free(deep);
	deep = nested(64, 0);
	ERR(deep, "65:129: nesting is deeper than 64 levels");
	free(deep);

	/* a hostile depth does not take time or stack */
	deep = nested(100000, 1);
	ERR(deep, "1:65: nesting is deeper than 64 levels");
	free(deep);
}

static void test_nul_refused(void **state)
{
	static const char text[] = "a: 1\nbc: x\0y\n";
	expect_error(text, sizeof text - 1, "2:6: the text contains a NUL byte");
	expect_error("\0", 1, "1:1: the text contains a NUL byte");
	/* an escaped NUL inside a quoted string */
	ERR("a: \"x\\0y\"", "1:4: strings must not contain NUL bytes");
	ERR("\"k\\0\": 1", "1:1: keys must not contain NUL bytes");
}

static void test_len_is_respected(void **state)
{
	/* bytes past len are not read, even if they would be an error */
	const char text[] = "a: 1\nmode: [unclosed";
	char err[256];
	json_t *v = tgi_yaml_parse(text, 5, NULL, err, sizeof err);
	assert_non_null(v);
	assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
	json_decref(v);
}

static void test_syntax_errors_have_line_and_column(void **state)
{
	ERR("a: 1\nb: [1, 2\n", "3:1: did not find expected ',' or ']' (while parsing a flow sequence that started at 2:4)");
	ERR("a: 1\n b: 2\n", "2:3: mapping values are not allowed in this context");
	ERR("a:\n  - 1\n  b: 2\n", "3:3: did not find expected '-' indicator");
	ERR("a: \"open\n", "2:1: found unexpected end of stream");
	ERR("a: b\n\tc: d\n", "2:1: found a tab character that violates indentation");
	/* invalid UTF-8 is reported where it is */
	ERR("a: 1\nb: \xc3\x28\n", "2:5: invalid trailing UTF-8 octet");
}

static void test_srcmap_lookups(void **state)
{
	static const char text[] =
		"# a comment\n"                 /* 1 */
		"mode: plan\n"                  /* 2 */
		"tools:\n"                      /* 3 */
		"  deploy:\n"                   /* 4 */
		"    command: [./d, \"x y\"]\n" /* 5 */
		"    empty:\n"                  /* 6 */
		"list:\n"                       /* 7 */
		"- a\n"                         /* 8 */
		"-   b: 1\n"                    /* 9 */
		"\"a/b~c\": {x: 1}\n";          /* 10 */
	static const struct { const char *ptr; int line, col; } want[] = {
		{ "",                       2, 1 },
		{ "/mode",                  2, 7 },
		{ "/tools",                 4, 3 },
		{ "/tools/deploy",          5, 5 },
		{ "/tools/deploy/command",  5, 14 },
		{ "/tools/deploy/command/0",5, 15 },
		{ "/tools/deploy/command/1",5, 20 },
		{ "/tools/deploy/empty",    6, 11 },
		{ "/list",                  8, 1 },
		{ "/list/0",                8, 3 },
		{ "/list/1",                9, 5 },
		{ "/list/1/b",              9, 8 },
		{ "/a~1b~0c",               10, 10 },
		{ "/a~1b~0c/x",             10, 14 },
	};
	static const char *const missing[] = {
		"/nope", "/mode/x", "/list/2", "/list/01", "/tools/deploy/command/0/z",
		"mode", "/a~2b", "/a~", "/tools/", "//",
	};
	char err[256];
	tgi_srcmap *map = NULL;
	json_t *v = tgi_yaml_parse(text, sizeof text - 1, &map, err, sizeof err);
	if (!v)
		fail_msg("%s", err);
	assert_non_null(map);
	for (size_t i = 0; i < TGI_ARRAY_LEN(want); i++) {
		int line = 0, col = 0;
		if (tgi_srcmap_lookup(map, want[i].ptr, &line, &col) < 0)
			fail_msg("\"%s\" not in the map", want[i].ptr);
		if (line != want[i].line || col != want[i].col)
			fail_msg("\"%s\": got %d:%d, want %d:%d", want[i].ptr, line, col,
			         want[i].line, want[i].col);
		/* every mapped pointer names a node of the document */
		assert_non_null(tgi_json_pointer(v, want[i].ptr));
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(missing); i++) {
		int line = -7, col = -7;
		if (tgi_srcmap_lookup(map, missing[i], &line, &col) == 0)
			fail_msg("\"%s\" unexpectedly at %d:%d", missing[i], line, col);
		assert_int_equal(line, -7);
	}
	int line, col;
	assert_int_equal(tgi_srcmap_lookup(NULL, "", &line, &col), -1);
	assert_int_equal(tgi_srcmap_lookup(map, NULL, &line, &col), -1);
	json_decref(v);
	tgi_srcmap_free(map);
	tgi_srcmap_free(NULL);
}

/* Where a configuration error points: a mapping member's key (where the
 * key path the message names is written), a sequence item itself. */
static void test_srcmap_key_lookups(void **state)
{
	static const char text[] =
		"mode: plan\n"                  /* 1 */
		"tools:\n"                      /* 2 */
		"  deploy:\n"                   /* 3 */
		"    command: [./d, \"x y\"]\n" /* 4 */
		"rate_limits: {read_file: 3}\n" /* 5 */
		"list:\n"                       /* 6 */
		"- a\n";                        /* 7 */
	static const struct { const char *ptr; int line, col; } want[] = {
		{ "",                       1, 1 },
		{ "/mode",                  1, 1 },
		{ "/tools",                 2, 1 },
		{ "/tools/deploy",          3, 3 },
		{ "/tools/deploy/command",  4, 5 },
		{ "/tools/deploy/command/1",4, 20 },
		{ "/rate_limits/read_file", 5, 15 },
		{ "/list/0",                7, 3 },
	};
	char err[256];
	tgi_srcmap *map = NULL;
	json_t *v = tgi_yaml_parse(text, sizeof text - 1, &map, err, sizeof err);
	if (!v)
		fail_msg("%s", err);
	for (size_t i = 0; i < TGI_ARRAY_LEN(want); i++) {
		int line = 0, col = 0;
		if (tgi_srcmap_lookup_key(map, want[i].ptr, &line, &col) < 0)
			fail_msg("\"%s\" not in the map", want[i].ptr);
		if (line != want[i].line || col != want[i].col)
			fail_msg("\"%s\": got %d:%d, want %d:%d", want[i].ptr, line, col,
			         want[i].line, want[i].col);
	}
	int line = -7, col = -7;
	assert_int_equal(tgi_srcmap_lookup_key(map, "/nope", &line, &col), -1);
	assert_int_equal(line, -7);
	json_decref(v);
	tgi_srcmap_free(map);
}

static void test_srcmap_many_nodes(void **state)
{
	/* 2000 keys, each with a 3-item list: every node is found at its line */
	enum { N = 2000 };
	tgi_buf b;
	char err[256], ptr[64];
	tgi_buf_init(&b, 1 << 20);
	for (int i = 0; i < N; i++)
		tgi_buf_printf(&b, "key%d: [%d, x, {k: v}]\n", i, i);
	tgi_srcmap *map = NULL;
	json_t *v = tgi_yaml_parse(b.p, b.len, &map, err, sizeof err);
	if (!v)
		fail_msg("%s", err);
	double t0 = tgi_now_ms();
	for (int i = 0; i < N; i++) {
		int line, col;
		snprintf(ptr, sizeof ptr, "/key%d/2/k", i);
		assert_int_equal(tgi_srcmap_lookup(map, ptr, &line, &col), 0);
		assert_int_equal(line, i + 1);
		snprintf(ptr, sizeof ptr, "/key%d", i);
		assert_int_equal(tgi_srcmap_lookup(map, ptr, &line, &col), 0);
		assert_int_equal(line, i + 1);
		snprintf(ptr, sizeof ptr, "/key%d/3", i);
		assert_int_equal(tgi_srcmap_lookup(map, ptr, &line, &col), -1);
	}
	/* logarithmic lookups: 6000 of them take nowhere near a second */
	assert_true(tgi_now_ms() - t0 < 1000);
	json_decref(v);
	tgi_srcmap_free(map);
	tgi_buf_free(&b);
}

static void test_long_keys_stay_linear(void **state)
{
	/* a long (explicit) key above many nodes: the map stores the key once */
	tgi_buf b;
	char err[256];
	tgi_buf_init(&b, 4 << 20);
	tgi_buf_puts(&b, "? ");
	for (int i = 0; i < 100000; i++)
		tgi_buf_puts(&b, "k");
	tgi_buf_puts(&b, "\n:\n");
	for (int i = 0; i < 20000; i++)
		tgi_buf_puts(&b, "  - 1\n");
	tgi_srcmap *map = NULL;
	json_t *v = tgi_yaml_parse(b.p, b.len, &map, err, sizeof err);
	if (!v)
		fail_msg("%s", err);
	assert_int_equal(json_array_size(json_object_iter_value(json_object_iter(v))), 20000);
	json_decref(v);
	tgi_srcmap_free(map);
	tgi_buf_free(&b);
}

static void test_error_leaves_no_map_and_no_leak(void **state)
{
	/* errors deep inside a structure that already holds nodes */
	ERR("a:\n  b: [1, 2, {c: 3, c: 4}]\n", "2:20: duplicate key \"c\"");
	ERR("a: [1, 2, 3, &z 4]\n", "1:14: anchor \"z\"");
	ERR("a: {b: [1, .nan]}\n", "1:12: \".nan\"");
}

static void test_utf16_input(void **state)
{
	/* libyaml decodes a UTF-16 BOM; NUL bytes in it are refused first */
	static const char text[] = "\xff\xfe" "a\0:\0 \0" "1\0";
	expect_error(text, sizeof text - 1, "1:4: the text contains a NUL byte");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_scalars_core_schema),
		cmocka_unit_test(test_quoted_and_block_scalars_are_strings),
		cmocka_unit_test(test_collections),
		cmocka_unit_test(test_empty_text_is_null),
		cmocka_unit_test(test_standard_tags),
		cmocka_unit_test(test_numbers_json_cannot_hold),
		cmocka_unit_test(test_anchors_and_aliases_refused),
		cmocka_unit_test(test_duplicate_and_non_scalar_keys),
		cmocka_unit_test(test_multiple_documents_refused),
		cmocka_unit_test(test_nesting_capped),
		cmocka_unit_test(test_nul_refused),
		cmocka_unit_test(test_len_is_respected),
		cmocka_unit_test(test_syntax_errors_have_line_and_column),
		cmocka_unit_test(test_srcmap_lookups),
		cmocka_unit_test(test_srcmap_key_lookups),
		cmocka_unit_test(test_srcmap_many_nodes),
		cmocka_unit_test(test_long_keys_stay_linear),
		cmocka_unit_test(test_error_leaves_no_map_and_no_leak),
		cmocka_unit_test(test_utf16_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
