/*
 * test_conf_section.c — the section tables (src/config/section.c): each
 * row type with its bounds, an unknown key named at its line:column with
 * the keys the table knows, required keys, nested sections, setters, and
 * both ways of naming a node (key path, JSON pointer).
 *
 * Owns: nothing past a test.  Must not: read a file.
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
#include "config/section.h"
#include "util/util.h"

typedef struct limits {
	int       on;
	int       n;
	long long big;
	size_t    bytes;
} limits;

typedef struct st {
	int       flag;
	int       count;
	long long wide;
	size_t    bytes;
	double    ratio;
	char     *name;
	int       color;
	tgi_strv  list;
	long long keep;
	limits    lim;
	int       custom;   /* the setter's: the value's length */
	int       calls;    /* how often the setter ran */
} st;

static const char *const colors[] = {"red", "green", "blue", NULL};

static int set_custom(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	st *s = obj;
	s->calls++;
	if (!json_is_string(v))
		return tgi_conf_fail_type(x, ptr, v, "a word");
	s->custom = (int)json_string_length(v);
	return 0;
}

static const tgi_conf_key lim_keys[] = {
	TGI_CONF_BOOL("on", limits, on, "whether"),
	TGI_CONF_INT("n", limits, n, 0, 9, "a digit"),
	TGI_CONF_INT("big", limits, big, 0, 1LL << 40, "a wide one"),
	TGI_CONF_INT("bytes", limits, bytes, 1, 1LL << 30, "a size_t"),
};

static const tgi_conf_key keys[] = {
	TGI_CONF_BOOL("flag", st, flag, "a switch"),
	TGI_CONF_INT("count", st, count, 2, 1000, "a bounded int"),
	TGI_CONF_INT("wide", st, wide, -5, 1LL << 40, "a long long"),
	TGI_CONF_INT("bytes", st, bytes, 1, 1LL << 30, "a size_t"),
	TGI_CONF_DOUBLE("ratio", st, ratio, 0.5, 2.0, "a double"),
	TGI_CONF_STRING("name", st, name, 8, "a short string"),
	TGI_CONF_ENUM("color", st, color, colors, "one of three"),
	TGI_CONF_STRINGS("list", st, list, 3, "at most three strings"),
	TGI_CONF_DURATION("keep", st, keep, 60, 86400 * 10, "a duration"),
	TGI_CONF_SECTION("limits", st, lim, lim_keys, "a nested mapping"),
	TGI_CONF_CUSTOM("word", set_custom, "read by a setter"),
	TGI_CONF_OWN("later", "read by the caller"),
};

typedef struct doc {
	json_t      *root;
	tgi_srcmap  *map;
	tgi_conf_doc d;
	char         err[600];
	tgi_conf_ctx x;
} doc;

static void doc_parse(doc *p, const char *text, int pointers)
{
	char e[256];
	memset(p, 0, sizeof *p);
	p->root = tgi_yaml_parse(text, strlen(text), &p->map, e, sizeof e);
	if (!p->root)
		fail_msg("yaml: %s", e);
	p->d = (tgi_conf_doc){ .file = "c.yaml", .root = p->root, .map = p->map,
	                       .pointers = pointers };
	p->x = (tgi_conf_ctx){ &p->d, p->err, sizeof p->err, NULL };
}

static void doc_free(doc *p)
{
	json_decref(p->root);
	tgi_srcmap_free(p->map);
}

static void st_free(st *s)
{
	free(s->name);
	tgi_strv_free(&s->list);
}

/* Apply keys to text's /sec; expect success. */
static void ok(const char *text, st *s)
{
	doc p;
	doc_parse(&p, text, 0);
	int rc = tgi_conf_section_apply(&p.x, keys, TGI_ARRAY_LEN(keys),
	                                json_object_get(p.root, "sec"), "/sec", s);
	if (rc < 0)
		fail_msg("%s: %s", text, p.err);
	doc_free(&p);
}

/* Apply keys to text's /sec; expect exactly the error want. */
static void bad(const char *text, const char *want)
{
	doc p;
	st s = {0};
	doc_parse(&p, text, 0);
	assert_int_equal(tgi_conf_section_apply(&p.x, keys, TGI_ARRAY_LEN(keys),
	                                        json_object_get(p.root, "sec"), "/sec", &s), -1);
	if (strcmp(p.err, want))
		fail_msg("for %s\n  got  %s\n  want %s", text, p.err, want);
	st_free(&s);
	doc_free(&p);
}

static void test_every_type_sets_its_field(void **state)
{
	st s = { .count = 30, .name = tgi_strdup("old") };
	ok("sec:\n"
	   "  flag: true\n  count: 1000\n  wide: 1099511627776\n  bytes: 4096\n"
	   "  ratio: 1.5\n  name: abcdefgh\n  color: blue\n  list: [a, b, c]\n  keep: 2h\n"
	   "  limits: {on: true, n: 9, big: 5, bytes: 7}\n  word: hello\n  later: [anything]\n",
	   &s);
	assert_int_equal(s.flag, 1);
	assert_int_equal(s.count, 1000);
	assert_true(s.wide == 1LL << 40);
	assert_int_equal(s.bytes, 4096);
	assert_true(s.ratio == 1.5);
	assert_string_equal(s.name, "abcdefgh");
	assert_int_equal(s.color, 2);
	assert_int_equal(s.list.n, 3);
	assert_string_equal(s.list.v[2], "c");
	assert_null(s.list.v[3]);
	assert_true(s.keep == 7200);
	assert_int_equal(s.lim.on, 1);
	assert_int_equal(s.lim.n, 9);
	assert_true(s.lim.big == 5);
	assert_int_equal(s.lim.bytes, 7);
	assert_int_equal(s.custom, 5);
	assert_int_equal(s.calls, 1);
	st_free(&s);

	/* absent keys keep the caller's defaults; null list: empty; an absent
	 * or null section: nothing */
	st d = { .count = 30, .color = 1, .keep = 99 };
	ok("sec: {list: null}\n", &d);
	assert_int_equal(d.count, 30);
	assert_int_equal(d.color, 1);
	assert_true(d.keep == 99);
	assert_int_equal(d.list.n, 0);
	assert_non_null(d.list.v);
	assert_int_equal(d.calls, 0);
	st_free(&d);
	ok("other: 1\n", &d);
	ok("sec:\n", &d);
	assert_int_equal(d.count, 30);
	st_free(&d);
}

static void test_types_and_bounds(void **state)
{
	bad("sec: {flag: 1}\n", "c.yaml:1:13: sec.flag: expected true or false, got 1");
	bad("sec: {count: 1}\n", "c.yaml:1:14: sec.count: expected an integer from 2 to 1000, got 1");
	bad("sec: {count: 1001}\n",
	    "c.yaml:1:14: sec.count: expected an integer from 2 to 1000, got 1001");
	bad("sec: {count: \"5\"}\n",
	    "c.yaml:1:14: sec.count: expected an integer from 2 to 1000, got \"5\"");
	bad("sec: {count: 2.5}\n",
	    "c.yaml:1:14: sec.count: expected an integer from 2 to 1000, got 2.5");
	bad("sec: {wide: -6}\n",
	    "c.yaml:1:13: sec.wide: expected an integer from -5 to 1099511627776, got -6");
	bad("sec: {ratio: 3}\n", "c.yaml:1:14: sec.ratio: expected a number from 0.5 to 2, got 3");
	bad("sec: {ratio: x}\n", "c.yaml:1:14: sec.ratio: expected a number from 0.5 to 2, got \"x\"");
	bad("sec: {name: 3}\n", "c.yaml:1:13: sec.name: expected a string, got 3");
	bad("sec: {name: \"\"}\n", "c.yaml:1:13: sec.name: expected a non-empty string, got \"\"");
	bad("sec: {name: abcdefghi}\n",
	    "c.yaml:1:13: sec.name: expected a string of at most 8 bytes, got one of 9");
	bad("sec: {color: pink}\n",
	    "c.yaml:1:14: sec.color: expected one of red, green, blue, got \"pink\"");
	bad("sec: {color: [red]}\n",
	    "c.yaml:1:7: sec.color: expected one of red, green, blue, got a list");
	bad("sec: {list: a}\n", "c.yaml:1:13: sec.list: expected a list of strings, got \"a\"");
	bad("sec: {list: [a, 2]}\n", "c.yaml:1:17: sec.list[1]: expected a string, got 2");
	bad("sec: {list: [a, \"\"]}\n",
	    "c.yaml:1:17: sec.list[1]: expected a non-empty string, got \"\"");
	bad("sec: {list: [a, b, c, d]}\n",
	    "c.yaml:1:7: sec.list: expected at most 3 entries, got 4");
	bad("sec: {keep: 59}\n",
	    "c.yaml:1:13: sec.keep: expected a duration (seconds, or N and s, m, h or d, as in 7d) "
	    "from 60s to 10d, got 59");
	bad("sec: {keep: 11d}\n",
	    "c.yaml:1:13: sec.keep: expected a duration (seconds, or N and s, m, h or d, as in 7d) "
	    "from 60s to 10d, got \"11d\"");
	bad("sec: {keep: 5x}\n",
	    "c.yaml:1:13: sec.keep: expected a duration (seconds, or N and s, m, h or d, as in 7d) "
	    "from 60s to 10d, got \"5x\"");
	bad("sec: {limits: 5}\n", "c.yaml:1:15: sec.limits: expected a mapping, got 5");
	bad("sec: {limits: {n: 10}}\n",
	    "c.yaml:1:19: sec.limits.n: expected an integer from 0 to 9, got 10");
	bad("sec: {word: [w]}\n", "c.yaml:1:7: sec.word: expected a word, got a list");
	bad("sec: [a]\n", "c.yaml:1:1: sec: expected a mapping, got a list");
}

/* An unknown key: at the key itself, under its mapping's path, naming
 * every key the table knows; nested tables name theirs. */
static void test_unknown_key_names_the_known_ones(void **state)
{
	bad("sec:\n  flag: true\n  colour: red\n",
	    "c.yaml:3:3: sec: unknown key \"colour\"; expected one of flag, count, wide, bytes, "
	    "ratio, name, color, list, keep, limits, word, later");
	bad("sec:\n  limits:\n    n: 1\n    bites: 2\n",
	    "c.yaml:4:5: sec.limits: unknown key \"bites\"; expected one of on, n, big, bytes");
	/* a key is made printable */
	bad("sec: {\"a\\u0001b\": 1}\n", "c.yaml:1:7: sec: unknown key \"a b\"; expected one of "
	    "flag, count, wide, bytes, ratio, name, color, list, keep, limits, word, later");
	/* before any value is looked at */
	bad("sec: {count: 0, zzz: 1}\n", "c.yaml:1:17: sec: unknown key \"zzz\"; expected one of "
	    "flag, count, wide, bytes, ratio, name, color, list, keep, limits, word, later");
}

static void test_required_and_pointer_paths(void **state)
{
	static const tgi_conf_key req[] = {
		{ .key = "id", .type = TGI_CONF_OWN, .flags = TGI_CONF_REQUIRED },
		TGI_CONF_OWN("note", "free text"),
	};
	doc p;
	doc_parse(&p, "cases:\n  - {note: x}\n  - {id: a, nope: 1}\n", 1);
	const json_t *cases = json_object_get(p.root, "cases");
	assert_int_equal(tgi_conf_section_apply(&p.x, req, TGI_ARRAY_LEN(req),
	                                        json_array_get(cases, 0), "/cases/0", NULL), -1);
	assert_string_equal(p.err, "c.yaml:2:5: /cases/0: missing required key \"id\"");
	assert_int_equal(tgi_conf_known_keys(&p.x, req, TGI_ARRAY_LEN(req),
	                                     json_array_get(cases, 1), "/cases/1"), -1);
	assert_string_equal(p.err, "c.yaml:3:13: /cases/1: unknown key \"nope\"; expected one of "
	                    "id, note");
	doc_free(&p);

	/* no source map: the file alone */
	json_t *root = json_pack("{s:{s:i}}", "sec", "count", 0);
	tgi_conf_doc d = { .root = root };
	char err[300];
	tgi_conf_ctx x = { &d, err, sizeof err, NULL };
	st s = {0};
	assert_int_equal(tgi_conf_section_apply(&x, keys, TGI_ARRAY_LEN(keys),
	                                        json_object_get(root, "sec"), "/sec", &s), -1);
	assert_string_equal(err, "built-in defaults: sec.count: expected an integer from 2 to "
	                    "1000, got 0");
	json_decref(root);
	/* JSON may hold a NUL in a string (YAML may not) */
	root = json_pack("{s:{s:s#}}", "sec", "name", "a\0b", (size_t)3);
	d.root = root;
	assert_int_equal(tgi_conf_section_apply(&x, keys, TGI_ARRAY_LEN(keys),
	                                        json_object_get(root, "sec"), "/sec", &s), -1);
	assert_string_equal(err, "built-in defaults: sec.name: contains a NUL character");
	json_decref(root);

	char where[64];
	doc_parse(&p, "a:\n  b: 1\n", 0);
	tgi_conf_where(&p.d, "/a/b", 0, where, sizeof where);
	assert_string_equal(where, "c.yaml:2:6");
	tgi_conf_where(&p.d, "/a/b", 1, where, sizeof where);
	assert_string_equal(where, "c.yaml:2:3");
	tgi_conf_where(&p.d, "/a/zz", 0, where, sizeof where);   /* missing: its parent's key */
	assert_string_equal(where, "c.yaml:1:1");
	doc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_type_sets_its_field),
		cmocka_unit_test(test_types_and_bounds),
		cmocka_unit_test(test_unknown_key_names_the_known_ones),
		cmocka_unit_test(test_required_and_pointer_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
