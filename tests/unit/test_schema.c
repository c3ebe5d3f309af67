/*
 * test_schema.c — the JSON Schema compiler and validator (src/schema).
 *
 * Behaviour from DESIGN.md §1 (validate stage: an error carries a JSON
 * pointer and a sentence a model can act on; defaults applied) and the
 * schema contract in src/schema/schema.h: messages and pointers, error
 * collection and its cap, defaults (and not when invalid), compile errors
 * that name the keyword's pointer, $ref recursion and cycles, depth caps,
 * formats on and off, code-point lengths, thread safety, and the
 * calendar_event benchmark fixtures (copied in below).  Every instance is
 * validated through both entry points, tgi_schema_validate_text() on its
 * JSON text and tgi_schema_validate() on its jansson value, yes/no and
 * reporting, and all four answers (and both error lists) must agree.
 * Then what only the text path has: parse errors, duplicate keys, NUL in
 * strings and keys, the nesting cap; and the sticky "pattern too
 * expensive" failure under every keyword that could have hidden it.
 *
 * Owns: nothing.  Must not: read files outside the repository.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "schema/schema.h"
#include "util/jv.h"

/* ---- helpers ---------------------------------------------------------- */

/* JSON from text written with ' for " (C strings stay readable). */
static json_t *js(const char *text)
{
	char *t = strdup(text);
	json_error_t je;
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_t *v = json_loads(t, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!v)
		fail_msg("bad test JSON (%s): %s", je.text, t);
	free(t);
	return v;
}

static tgi_schema *compile(const char *text, unsigned flags)
{
	char err[256];
	json_t *j = js(text);
	tgi_schema *s = tgi_schema_compile(j, flags, err, sizeof err);
	json_decref(j); /* the compiled schema must not need the document */
	if (!s)
		fail_msg("schema did not compile: %s", err);
	return s;
}

/* Compiling must fail with an error that starts with `prefix` and
 * contains `part`. */
static void compile_fails(const char *text, const char *prefix, const char *part)
{
	char err[256];
	json_t *j = js(text);
	tgi_schema *s = tgi_schema_compile(j, 0, err, sizeof err);
	json_decref(j);
	if (s) {
		tgi_schema_free(s);
		fail_msg("schema compiled but should not: %s", text);
	}
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, part))
		fail_msg("error \"%s\" should start with \"%s\" and mention \"%s\"", err, prefix, part);
}

static void same_result(const tgi_schema_result *a, const tgi_schema_result *b)
{
	assert_int_equal(a->nerrors, b->nerrors);
	assert_int_equal(a->truncated, b->truncated);
	for (int i = 0; i < a->nerrors; i++) {
		assert_string_equal(a->errors[i].pointer, b->errors[i].pointer);
		assert_string_equal(a->errors[i].message, b->errors[i].message);
	}
}

/* Validate through both entry points in both modes; they must agree.  The
 * text path sees v's JSON text; when that text is past the parser's caps
 * (nesting), the jansson path must say no.  res may be NULL. */
static int validate_v(const tgi_schema *s, json_t *v, tgi_schema_result *res)
{
	tgi_schema_result local, text_res;
	if (!res)
		res = &local;
	int quick = tgi_schema_validate(s, v, 0, NULL);
	int full = tgi_schema_validate(s, v, 0, res);
	assert_int_equal(quick, full);
	if (!full)
		assert_true(res->nerrors >= 1);
	else
		assert_int_equal(res->nerrors, 0);

	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	char err[256];
	assert_non_null(text);
	int tquick = tgi_schema_validate_text(s, text, strlen(text), NULL, err, sizeof err);
	int tfull = tgi_schema_validate_text(s, text, strlen(text), &text_res, err, sizeof err);
	assert_int_equal(tquick, tfull);
	if (tfull < 0) {
		assert_int_equal(full, 0);
		assert_non_null(strstr(err, "at byte "));
	} else {
		assert_int_equal(tfull, full);
		same_result(res, &text_res);
	}
	free(text);
	return full;
}

static int validate(const tgi_schema *s, const char *inst, tgi_schema_result *res)
{
	json_t *v = js(inst);
	int ok = validate_v(s, v, res);
	json_decref(v);
	return ok;
}

/* The single error of an invalid instance. */
static void one_error(const tgi_schema *s, const char *inst, const char *ptr, const char *msg)
{
	tgi_schema_result r;
	assert_int_equal(validate(s, inst, &r), 0);
	if (r.nerrors != 1)
		fail_msg("%s: %d errors, first %s: %s", inst, r.nerrors, r.errors[0].pointer,
		         r.errors[0].message);
	assert_string_equal(r.errors[0].pointer, ptr);
	assert_string_equal(r.errors[0].message, msg);
}

static void check_all(const char *schema, unsigned flags, const char *const *valid,
                      const char *const *invalid)
{
	tgi_schema *s = compile(schema, flags);
	for (; valid && *valid; valid++)
		if (!validate(s, *valid, NULL))
			fail_msg("%s should be valid against %s", *valid, schema);
	for (; invalid && *invalid; invalid++)
		if (validate(s, *invalid, NULL))
			fail_msg("%s should be invalid against %s", *invalid, schema);
	tgi_schema_free(s);
}

static const char *deploy_schema =
	"{'type':'object','properties':{'env':{'type':'string','enum':['staging','prod']},"
	"'version':{'type':'string','pattern':'^v[0-9]+$'}},"
	"'required':['env','version'],'additionalProperties':false}";

/* ---- messages and pointers ---------------------------------------------- */

static void test_env_and_version(void **state)
{
	tgi_schema *s = compile(deploy_schema, 0);
	tgi_schema_result r;
	assert_int_equal(validate(s, "{'env':'qa'}", &r), 0);
	assert_int_equal(r.nerrors, 2);
	assert_int_equal(r.truncated, 0);
	assert_string_equal(r.errors[0].pointer, "/env");
	assert_string_equal(r.errors[0].message, "must be one of \"staging\", \"prod\"; got \"qa\"");
	assert_string_equal(r.errors[1].pointer, "/version");
	assert_string_equal(r.errors[1].message, "is required");

	assert_int_equal(validate(s, "{'env':'prod','version':'v12'}", NULL), 1);
	one_error(s, "{'env':'prod','version':'12'}", "/version", "must match ^v[0-9]+$");
	one_error(s, "{'env':5,'version':'v1'}", "/env", "must be a string, got number");
	one_error(s, "{'env':'prod','version':'v1','force':true}", "/force",
	          "is not allowed (allowed: env, version)");
	one_error(s, "[]", "", "must be an object, got array");
	tgi_schema_free(s);
}

static void test_messages(void **state)
{
	tgi_schema *s = compile("{'properties':{"
		"'n':{'type':'integer','minimum':5,'exclusiveMaximum':10},"
		"'m':{'multipleOf':0.5},"
		"'s':{'minLength':2,'maxLength':3},"
		"'a':{'type':'array','minItems':1,'maxItems':2,'uniqueItems':true},"
		"'o':{'type':'object','minProperties':1,'maxProperties':1},"
		"'k':{'const':'meeting'},"
		"'t':{'type':['string','null']},"
		"'d':{'dependentRequired':{'a':['b']}},"
		"'p':{'propertyNames':{'pattern':'^[a-z]+$'}},"
		"'x':{'not':{'type':'string'}},"
		"'one':{'oneOf':[{'type':'integer'},{'minimum':0}]},"
		"'c':{'contains':{'const':1}},"
		"'tuple':{'prefixItems':[{'type':'string'}],'items':false}"
		"}}", 0);
	one_error(s, "{'n':4}", "/n", "must be >= 5, got 4");
	one_error(s, "{'n':10}", "/n", "must be < 10, got 10");
	one_error(s, "{'n':5.5}", "/n", "must be an integer, got number");
	one_error(s, "{'m':0.75}", "/m", "must be a multiple of 0.5, got 0.75");
	one_error(s, "{'s':'a'}", "/s", "must be at least 2 characters long, got 1");
	one_error(s, "{'s':'abcd'}", "/s", "must be at most 3 characters long, got 4");
	one_error(s, "{'a':[]}", "/a", "must have at least 1 item, got 0");
	one_error(s, "{'a':[1,2,3]}", "/a", "must have at most 2 items, got 3");
	one_error(s, "{'a':[1,1.0]}", "/a",
	          "must not contain duplicate items (items 0 and 1 are equal)");
	one_error(s, "{'o':{}}", "/o", "must have at least 1 property, got 0");
	one_error(s, "{'k':'party'}", "/k", "must be \"meeting\"; got \"party\"");
	one_error(s, "{'t':1}", "/t", "must be a string or null, got number");
	one_error(s, "{'d':{'a':1}}", "/d/b", "is required when \"a\" is present");
	one_error(s, "{'p':{'ok':1,'Bad':2}}", "/p/Bad",
	          "is not an allowed property name (must match ^[a-z]+$)");
	one_error(s, "{'x':'str'}", "/x", "must not match the \"not\" schema");
	one_error(s, "{'one':3}", "/one",
	          "must match exactly one of the oneOf schemas, but matches 0 and 1");
	one_error(s, "{'c':[2,3]}", "/c",
	          "must contain at least one item that matches the \"contains\" schema");
	one_error(s, "{'tuple':['a','b']}", "/tuple/1", "is not allowed (at most 1 item)");
	one_error(s, "{'tuple':[1]}", "/tuple/0", "must be a string, got number");
	tgi_schema_free(s);

	/* anyOf: no branch takes the type → the types that would; else the
	 * first error of the closest branch */
	s = compile("{'anyOf':[{'type':'string','minLength':3},{'type':'null'}]}", 0);
	one_error(s, "5", "", "must be a string or null, got number");
	one_error(s, "'ab'", "",
	          "does not match any of the anyOf schemas; closest: must be at least 3 "
	          "characters long, got 2");
	tgi_schema_free(s);
	s = compile("{'oneOf':[{'type':'object','properties':{'a':{'type':'integer'}}},"
	            "{'type':'array'}]}", 0);
	one_error(s, "{'a':'x'}", "",
	          "does not match any of the oneOf schemas; closest: /a must be an integer, "
	          "got string");
	tgi_schema_free(s);
	s = compile("false", 0);
	one_error(s, "1", "", "no value is allowed here");
	tgi_schema_free(s);
	s = compile("{'if':{'properties':{'kind':{'const':'a'}}},'then':{'required':['x']},"
	            "'else':{'required':['y']}}", 0);
	one_error(s, "{'kind':'a'}", "/x", "is required");
	one_error(s, "{'kind':'b'}", "/y", "is required");
	assert_int_equal(validate(s, "{'kind':'a','x':1}", NULL), 1);
	tgi_schema_free(s);
}

/* Echoed values are cut and carry no control characters; pointers are
 * escaped (RFC 6901) and sanitised too. */
static void test_echo_is_capped_and_clean(void **state)
{
	tgi_schema *s = compile("{'properties':{'e':{'enum':['a','b']}},"
	                        "'additionalProperties':false}", 0);
	char inst[600];
	char big[300];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	snprintf(inst, sizeof inst, "{'e':'%s'}", big);
	tgi_schema_result r;
	assert_int_equal(validate(s, inst, &r), 0);
	assert_int_equal(r.nerrors, 1);
	assert_non_null(strstr(r.errors[0].message, "..."));
	assert_true(strlen(r.errors[0].message) < 120);

	json_t *v = json_object();
	json_object_set_new(v, "e", json_string("line\nbreak\x01"));
	json_object_set_new(v, "a/b~\x07", json_true());
	assert_int_equal(validate_v(s, v, &r), 0);
	assert_int_equal(r.nerrors, 2);
	for (int i = 0; i < r.nerrors; i++) {
		for (const char *p = r.errors[i].message; *p; p++)
			assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
		for (const char *p = r.errors[i].pointer; *p; p++)
			assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
	}
	assert_string_equal(r.errors[1].pointer, "/a~1b~0 ");
	json_decref(v);
	tgi_schema_free(s);

	/* cuts fall on character boundaries: messages stay valid UTF-8 */
	char pat[400] = "{'pattern':'^", val[400] = "'";
	for (int i = 0; i < 90; i++) {
		strcat(pat, "\u00e9");
		strcat(val, i % 2 ? "\u00e9" : "\u20ac");
	}
	strcat(pat, "$'}");
	strcat(val, "'");
	for (int k = 0; k < 2; k++) {
		s = compile(k ? "{'enum':['a','b']}" : pat, 0);
		assert_int_equal(validate(s, val, &r), 0);
		json_t *m = json_string(r.errors[0].message);
		assert_non_null(m);
		assert_non_null(strstr(r.errors[0].message, "..."));
		json_decref(m);
		tgi_schema_free(s);
	}
}

static void test_error_cap(void **state)
{
	tgi_schema *s = compile("{'additionalProperties':false}", 0);
	json_t *v = json_object();
	char key[16];
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "k%02d", i);
		json_object_set_new(v, key, json_integer(i));
	}
	tgi_schema_result r;
	assert_int_equal(validate_v(s, v, &r), 0);
	assert_int_equal(r.nerrors, TGI_SCHEMA_MAX_ERRORS);
	assert_int_equal(r.truncated, 1);
	assert_string_equal(r.errors[0].pointer, "/k00");
	assert_string_equal(r.errors[0].message, "is not allowed (this object takes no properties)");
	json_decref(v);
	tgi_schema_free(s);

	/* errors across sibling properties and items are all collected */
	s = compile("{'items':{'properties':{'a':{'type':'string'},'b':{'type':'string'}}}}", 0);
	assert_int_equal(validate(s, "[{'a':1,'b':2},{'a':3}]", &r), 0);
	assert_int_equal(r.nerrors, 3);
	assert_int_equal(r.truncated, 0);
	assert_string_equal(r.errors[0].pointer, "/0/a");
	assert_string_equal(r.errors[1].pointer, "/0/b");
	assert_string_equal(r.errors[2].pointer, "/1/a");
	tgi_schema_free(s);
}

/* ---- defaults ----------------------------------------------------------- */

static void test_defaults_applied(void **state)
{
	tgi_schema *s = compile("{'type':'object','properties':{"
		"'limit':{'type':'integer','default':100},"
		"'path':{'type':'string','default':'.'},"
		"'opts':{'type':'object','default':{},'properties':{'depth':{'default':1}}},"
		"'nested':{'type':'object','properties':{'flag':{'default':false}}},"
		"'list':{'type':'array','items':{'$ref':'#/$defs/item'}}},"
		"'$defs':{'item':{'type':'object','properties':{'w':{'default':2}}}},"
		"'required':['nested']}", 0);
	json_t *v = js("{'limit':5,'nested':{},'list':[{},{'w':3}]}");
	assert_int_equal(tgi_schema_validate(s, v, 1, NULL), 1);
	json_t *want = js("{'limit':5,'path':'.','opts':{'depth':1},'nested':{'flag':false},"
	                  "'list':[{'w':2},{'w':3}]}");
	if (!json_equal(v, want)) {
		char *got = json_dumps(v, JSON_SORT_KEYS);
		fail_msg("defaults gave %s", got);
	}
	json_decref(want);
	json_decref(v);

	/* not applied when the instance is invalid (and not when not asked) */
	v = js("{'limit':'many','nested':{}}");
	tgi_schema_result r;
	assert_int_equal(tgi_schema_validate(s, v, 1, &r), 0);
	assert_string_equal(r.errors[0].pointer, "/limit");
	assert_int_equal(json_object_size(v), 2);
	assert_int_equal(json_object_size(json_object_get(v, "nested")), 0);
	json_decref(v);
	v = js("{'nested':{}}");
	assert_int_equal(tgi_schema_validate(s, v, 0, NULL), 1);
	assert_int_equal(json_object_size(v), 1);
	json_decref(v);
	tgi_schema_free(s);
}

/* ---- compile errors ---------------------------------------------------------- */

static void test_compile_errors(void **state)
{
	compile_fails("{'properties':{'env':{'pattern':'(unclosed'}}}",
	              "/properties/env/pattern: invalid regular expression", "parenthesis");
	compile_fails("{'patternProperties':{'[a':{}}}", "/patternProperties/[a: ",
	              "invalid regular expression");
	compile_fails("{'pattern':'a\\\\Z'}", "/pattern: ", "not an ECMA-262 escape");
	compile_fails("{'$ref':'#/definitions/missing'}", "/$ref: ", "does not point");
	compile_fails("{'properties':{'a':{'$ref':'http://example.com/s.json'}}}",
	              "/properties/a/$ref: ", "remote reference");
	compile_fails("{'minLength':'x'}", "/minLength: ", "non-negative integer");
	compile_fails("{'maxItems':-1}", "/maxItems: ", "non-negative integer");
	compile_fails("{'properties':{'a':{'type':'strnig'}}}", "/properties/a/type: ",
	              "type name");
	compile_fails("{'items':5}", "/items: ", "object or a boolean");
	compile_fails("{'allOf':[]}", "/allOf: ", "non-empty array");
	compile_fails("{'required':['a',1]}", "/required: ", "property names");
	compile_fails("{'exclusiveMinimum':true}", "/exclusiveMinimum: ", "draft 4");
	compile_fails("{'multipleOf':0}", "/multipleOf: ", "greater than 0");
	compile_fails("{'uniqueItems':'yes'}", "/uniqueItems: ", "boolean");
	compile_fails("{'definitions':{'a~b/c':{'minimum':'x'}},'$ref':'#/definitions/a~0b~1c'}",
	              "/definitions/a~0b~1c/minimum: ", "must be a number");
	compile_fails("5", "schema root: ", "object or a boolean");

	char err[64];
	assert_null(tgi_schema_compile(NULL, 0, err, sizeof err));
	assert_string_equal(err, "no schema given");
	tgi_schema_free(NULL);

	/* unknown keywords and formats are ignored */
	tgi_schema *s = compile("{'x-sensitive':true,'format':'no-such-format','foo':{'bar':1}}",
	                        TGI_SCHEMA_ASSERT_FORMATS);
	assert_int_equal(validate(s, "'anything'", NULL), 1);
	tgi_schema_free(s);
}

/* ---- $ref -------------------------------------------------------------------- */

static void test_ref_recursion(void **state)
{
	tgi_schema *s = compile("{'$defs':{'node':{'type':'object','properties':{"
		"'value':{'type':'integer'},"
		"'children':{'type':'array','items':{'$ref':'#/$defs/node'}}},"
		"'required':['value'],'additionalProperties':false}},"
		"'$ref':'#/$defs/node'}", 0);
	assert_int_equal(validate(s, "{'value':1,'children':[{'value':2,'children':"
	                             "[{'value':3},{'value':4,'children':[]}]}]}", NULL), 1);
	one_error(s, "{'value':1,'children':[{'value':2,'children':[{'value':3},{'value':'x'}]}]}",
	          "/children/0/children/1/value", "must be an integer, got string");
	tgi_schema_free(s);

	/* escaped and percent-encoded pointers, anchors and $id-relative refs */
	s = compile("{'$id':'http://example.com/root.json',"
		"'$defs':{'a/b':{'type':'string'},'c%d':{'type':'integer'},"
		"'named':{'$anchor':'thing','type':'boolean'},"
		"'other':{'$id':'other.json','type':'null'}},"
		"'properties':{'p':{'$ref':'#/$defs/a~1b'},'q':{'$ref':'#/$defs/c%25d'},"
		"'r':{'$ref':'#thing'},'s':{'$ref':'other.json'},"
		"'t':{'$ref':'http://example.com/other.json'}}}", 0);
	assert_int_equal(validate(s, "{'p':'x','q':1,'r':true,'s':null,'t':null}", NULL), 1);
	one_error(s, "{'q':'x'}", "/q", "must be an integer, got string");
	one_error(s, "{'s':1}", "/s", "must be null, got number");
	tgi_schema_free(s);

	/* cycles that never reach the instance end, with an error */
	static const char *const loops[] = {
		"{'$ref':'#'}",
		"{'definitions':{'a':{'$ref':'#/definitions/b'},'b':{'$ref':'#/definitions/a'}},"
		"'$ref':'#/definitions/a'}",
		"{'allOf':[{'$ref':'#'}]}",
	};
	for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
		tgi_schema_result r;
		s = compile(loops[i], 0);
		assert_int_equal(validate(s, "{}", &r), 0);
		assert_non_null(strstr(r.errors[0].message, "nested too deeply"));
		tgi_schema_free(s);
	}
}

/* 2019-09 and later: $ref is one keyword among others; draft 7: alone. */
static void test_ref_siblings(void **state)
{
	const char *schema = "{'$defs':{'s':{'type':'string'}},"
	                     "'properties':{'a':{'$ref':'#/$defs/s','maxLength':2}}}";
	tgi_schema *s = compile(schema, 0);
	one_error(s, "{'a':'abc'}", "/a", "must be at most 2 characters long, got 3");
	tgi_schema_free(s);
	s = compile(schema, TGI_SCHEMA_DRAFT7);
	assert_int_equal(validate(s, "{'a':'abc'}", NULL), 1);
	assert_int_equal(validate(s, "{'a':1}", NULL), 0);
	tgi_schema_free(s);
	s = compile("{'$schema':'http://json-schema.org/draft-07/schema#',"
	            "'definitions':{'s':{'type':'string'}},"
	            "'properties':{'a':{'$ref':'#/definitions/s','maxLength':2}}}", 0);
	assert_int_equal(validate(s, "{'a':'abc'}", NULL), 1);
	tgi_schema_free(s);
}

/* ---- depth ------------------------------------------------------------------- */

static char *nested(const char *open, const char *mid, const char *close, int depth)
{
	size_t n = (strlen(open) + strlen(close)) * (size_t)depth + strlen(mid) + 1;
	char *s = malloc(n), *p = s;
	for (int i = 0; i < depth; i++)
		p += sprintf(p, "%s", open);
	p += sprintf(p, "%s", mid);
	for (int i = 0; i < depth; i++)
		p += sprintf(p, "%s", close);
	return s;
}

static void test_depth_caps(void **state)
{
	tgi_schema *s = compile("{'type':'array','items':{'$ref':'#'}}", 0);
	char *ok = nested("[", "", "]", 50);
	assert_int_equal(validate(s, ok, NULL), 1);
	free(ok);
	char *deep = nested("[", "", "]", 1000);
	tgi_schema_result r;
	assert_int_equal(validate(s, deep, &r), 0);
	assert_int_equal(r.nerrors, 1);
	assert_non_null(strstr(r.errors[0].message, "is nested too deeply"));
	assert_true(strncmp(r.errors[0].pointer, "/0/0/0/0", 8) == 0);
	free(deep);
	tgi_schema_free(s);

	/* a schema nested past the cap does not compile */
	char *schema = nested("{'items':", "true", "}", 300);
	char err[256];
	json_t *j = js(schema);
	assert_null(tgi_schema_compile(j, 0, err, sizeof err));
	assert_non_null(strstr(err, "nested more than"));
	assert_true(strncmp(err, "/items/items/items", 18) == 0);
	json_decref(j);
	free(schema);

	/* enum/const over a deep instance terminates and rejects */
	s = compile("{'const':[[[1]]]}", 0);
	deep = nested("[", "1", "]", 1500);
	assert_int_equal(validate(s, deep, NULL), 0);
	free(deep);
	tgi_schema_free(s);
}

/* ---- formats ----------------------------------------------------------------- */

static void test_formats_on_off(void **state)
{
	tgi_schema *off = compile("{'format':'date-time'}", 0);
	tgi_schema *on = compile("{'format':'date-time'}", TGI_SCHEMA_ASSERT_FORMATS);
	assert_int_equal(validate(off, "'next tuesday'", NULL), 1);
	one_error(on, "'next tuesday'", "",
	          "must be a valid date-time (RFC 3339), got \"next tuesday\"");
	assert_int_equal(validate(on, "'2026-02-28T10:00:00+01:00'", NULL), 1);
	assert_int_equal(validate(on, "42", NULL), 1); /* formats apply to strings */
	tgi_schema_free(off);
	tgi_schema_free(on);
}

static void test_format_values(void **state)
{
	static const struct {
		const char *format;
		const char *valid[12];
		const char *invalid[16];
	} cases[] = {
		{"date-time",
		 {"'1985-04-12T23:20:50.52Z'", "'1996-12-19T16:39:57-08:00'",
		  "'1990-12-31T23:59:60Z'", "'1990-12-31T15:59:60-08:00'", "'2024-02-29t00:00:00z'"},
		 {"'1985-04-12 23:20:50Z'", "'1985-04-12T23:20:50'", "'2023-02-29T00:00:00Z'",
		  "'1990-12-31T23:58:60Z'", "'1985-04-12T24:00:00Z'", "'1985-04-12T23:20:50.Z'",
		  "'1985-04-12T23:20:50+24:00'", "'١٩٨٥-04-12T23:20:50Z'", "''"}},
		{"date", {"'2000-02-29'", "'1999-12-31'"},
		 {"'1900-02-29'", "'2000-13-01'", "'2000-1-01'", "'2000-01-32'", "'20000-01-01'"}},
		{"time", {"'08:30:06Z'", "'23:59:60Z'", "'08:30:06.283185+05:30'"},
		 {"'08:30:06'", "'8:30:06Z'", "'08:30:06 PST'", "'01:01:01,1111Z'", "'12:00:60Z'"}},
		{"duration", {"'P4DT12H30M5S'", "'PT36H'", "'P2W'", "'P1Y2M'", "'PT0S'", "'P0D'"},
		 {"'P'", "'PT'", "'P1YT'", "'PT1D'", "'P2D1Y'", "'P1Y2W'", "'P1'", "'1D'",
		  "'P1D2H'"}},
		{"email",
		 {"'joe.bloggs@example.com'", "'te~st@example.com'", "'\\'joe bloggs\\'@example.com'",
		  "'a@[127.0.0.1]'", "'a@[IPv6:::1]'"},
		 {"'2962'", "'.a@example.com'", "'a.@example.com'", "'a..b@example.com'",
		  "'a@b@example.com'", "'a@-example.com'", "'a@[127.0.0.300]'", "'@example.com'"}},
		{"hostname",
		 {"'www.example.com'", "'xn--4gbwdl.xn--wgbh1c'", "'localhost'", "'a.b.'"},
		 {"'-start.example'", "'end-.example'", "'under_score'", "'a..b'", "''", "'.'",
		  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com'"}},
		{"ipv4", {"'192.168.0.1'", "'0.0.0.0'", "'255.255.255.255'"},
		 {"'256.1.1.1'", "'1.2.3'", "'1.2.3.4.5'", "'01.2.3.4'", "'0x7f000001'", "'1.2.3.4 '"}},
		{"ipv6",
		 {"'::1'", "'::'", "'2001:db8::7'", "'1:2:3:4:5:6:7:8'", "'::ffff:192.168.0.1'",
		  "'1::'", "'fe80::1:2:3:4'"},
		 {"'12345::'", "'1:2:3:4:5:6:7:8:9'", "'::laptop'", "'1::2::3'", "':1'",
		  "'1:2:3:4:5:6:7'", "'fe80::1%eth0'", "'1:2:3:4:5:6:7:1.2.3.4'"}},
		{"uri",
		 {"'http://foo.bar/?baz=qux#quux'", "'mailto:John.Doe@example.com'",
		  "'urn:oasis:names:specification:docbook:dtd:xml:4.1.2'",
		  "'ldap://[2001:db8::7]/c=GB?objectClass?one'", "'http://a:8080/%20x'"},
		 {"'//foo.bar/'", "'/abc'", "'abc'", "'http:// shouldfail.com'", "':// x'",
		  "'http://a/b c'", "'http://a/%zz'", "'http://[::1/'", "'http://a:80x/'"}},
		{"uuid",
		 {"'2eb8aa08-aa98-11ea-b4aa-73b441d16380'", "'2EB8AA08-AA98-11EA-B4AA-73B441D16380'"},
		 {"'2eb8aa08-aa98-11ea-b4aa-73b441d1638'", "'2eb8aa08aa9811eab4aa73b441d16380'",
		  "'2eb8aa08-aa98-11ea-b4aa-73b441d1638g'"}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char schema[64];
		snprintf(schema, sizeof schema, "{'format':'%s'}", cases[i].format);
		check_all(schema, TGI_SCHEMA_ASSERT_FORMATS, cases[i].valid, cases[i].invalid);
		check_all(schema, 0, cases[i].invalid, NULL); /* annotation only */
	}
}

/* ---- strings, numbers, equality ------------------------------------------------- */

static void test_code_point_lengths(void **state)
{
	tgi_schema *s = compile("{'minLength':2,'maxLength':3}", 0);
	assert_int_equal(validate(s, "'h\u00e9\u00e9'", NULL), 1);            /* 5 bytes */
	assert_int_equal(validate(s, "'\U0001F600\U0001F600\U0001F600'", NULL), 1); /* 12 */
	one_error(s, "'\U0001F600\U0001F600\U0001F600\U0001F600'", "",
	          "must be at most 3 characters long, got 4");
	one_error(s, "'\u00e9'", "", "must be at least 2 characters long, got 1");
	tgi_schema_free(s);
}

static void test_numbers_and_equality(void **state)
{
	static const char *const int_ok[] = {"1", "1.0", "-0.0", "1e3", NULL};
	static const char *const int_bad[] = {"1.5", "'1'", "null", NULL};
	check_all("{'type':'integer'}", 0, int_ok, int_bad);
	static const char *const mul_ok[] = {"0.0075", "0.0001", "0", "-0.3", "7", NULL};
	static const char *const mul_bad[] = {"0.00751", "0.00015", NULL};
	check_all("{'multipleOf':0.0001}", 0, mul_ok, mul_bad);
	static const char *const tenth_ok[] = {"0.3", "19.99", "1e-1", NULL};
	check_all("{'multipleOf':0.01}", 0, tenth_ok, NULL);
	static const char *const inf_bad[] = {"1e308", NULL};
	check_all("{'multipleOf':0.123456789}", 0, NULL, inf_bad);
	static const char *const const_ok[] = {"{'b':[1,{'c':null}],'a':1.0}", NULL};
	static const char *const const_bad[] = {"{'a':1,'b':[1,{'c':false}]}", "{'a':1}", NULL};
	check_all("{'const':{'a':1,'b':[1.0,{'c':null}]}}", 0, const_ok, const_bad);
	static const char *const enum_ok[] = {"1.0", "'1'", "[1]", "{'x':[]}", "null", NULL};
	static const char *const enum_bad[] = {"2", "'2'", "[1,1]", "{'x':{}}", "false", NULL};
	check_all("{'enum':[1,'1',[1.0],{'x':[]},null]}", 0, enum_ok, enum_bad);
	static const char *const big_ok[] = {"9223372036854775807", NULL};
	static const char *const big_bad[] = {"9223372036854775806", "9.2e18", NULL};
	check_all("{'minimum':9223372036854775807}", 0, big_ok, big_bad);

	/* uniqueItems on a long array takes the hashing path */
	tgi_schema *s = compile("{'uniqueItems':true}", 0);
	json_t *a = json_array();
	for (int i = 0; i < 200; i++)
		json_array_append_new(a, i % 2 ? json_integer(i) : json_pack("{si}", "k", i));
	assert_int_equal(validate_v(s, a, NULL), 1);
	json_array_append_new(a, json_real(77.0));
	tgi_schema_result r;
	assert_int_equal(validate_v(s, a, &r), 0);
	assert_string_equal(r.errors[0].message,
	                    "must not contain duplicate items (items 77 and 200 are equal)");
	json_decref(a);
	tgi_schema_free(s);
}

/* ECMA-262 flavour of `pattern`. */
static void test_patterns(void **state)
{
	static const char *const digits_ok[] = {"'123'", NULL};
	static const char *const digits_bad[] = {"'\u0661\u0662'", "'12\\n'", "'12a'", NULL};
	check_all("{'pattern':'^\\\\d+$'}", 0, digits_ok, digits_bad);
	static const char *const space_ok[] = {"'a b'", "'a\u00a0b'", "'a\u2003b'", NULL};
	static const char *const space_bad[] = {"'ab'", NULL};
	check_all("{'pattern':'a\\\\sb'}", 0, space_ok, space_bad);
	static const char *const uni_ok[] = {"'caf\u00e9'", NULL};
	static const char *const uni_bad[] = {"'cafe'", NULL};
	check_all("{'pattern':'\\\\u00e9$'}", 0, uni_ok, uni_bad);
	static const char *const search_ok[] = {"'xxabcxx'", NULL};
	check_all("{'pattern':'abc'}", 0, search_ok, NULL); /* unanchored, like ECMA */
	/* catastrophic backtracking hits the match limit: a refusal, not a hang */
	tgi_schema *s = compile("{'pattern':'^(a+)+$'}", 0);
	one_error(s, "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'", "",
	          "pattern too expensive to check (^(a+)+$); send a simpler value");
	tgi_schema_free(s);
	static const char *const pp_ok[] = {"{'x-a':1,'b':'s'}", NULL};
	static const char *const pp_bad[] = {"{'x-a':'s'}", "{'c':1}", NULL};
	check_all("{'patternProperties':{'^x-':{'type':'integer'}},"
	          "'additionalProperties':{'type':'string'}}", 0, pp_ok, pp_bad);
}

/* ---- the text entry point --------------------------------------------------- */

/* Text with ' for " validated through tgi_schema_validate_text(). */
static int vtext(const tgi_schema *s, const char *text, tgi_schema_result *res, char *err,
                 size_t errlen)
{
	char *t = strdup(text);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	int r = tgi_schema_validate_text(s, t, strlen(t), res, err, errlen);
	free(t);
	return r;
}

static void text_fails(const tgi_schema *s, const char *text, const char *part)
{
	tgi_schema_result r;
	char err[256];
	int quick = vtext(s, text, NULL, err, sizeof err);
	assert_int_equal(quick, -1);
	assert_int_equal(vtext(s, text, &r, err, sizeof err), -1);
	if (strncmp(err, "at byte ", 8) != 0 || !strstr(err, part))
		fail_msg("%s: error \"%s\" should start with \"at byte \" and mention \"%s\"", text,
		         err, part);
	assert_int_equal(r.nerrors, 1);
	assert_string_equal(r.errors[0].pointer, "");
	assert_string_equal(r.errors[0].message, err);
}

static void test_text_parse_errors(void **state)
{
	tgi_schema *s = compile(deploy_schema, 0);
	text_fails(s, "{'env':'prod',}", "trailing comma");
	text_fails(s, "{'env':'prod'", "");
	text_fails(s, "", "empty");
	text_fails(s, "{'env':'prod'} x", "after the value");
	text_fails(s, "{'env':'prod','env':'staging'}", "duplicate");
	text_fails(s, "{'env':'prod','e\\u006ev':'qa'}", "duplicate"); /* same key once unescaped */
	text_fails(s, "{'env':'\\ud800'}", "surrogate");
	text_fails(s, "{'a\\u0000b':1}", "NUL");
	text_fails(s, "[01]", "");

	/* err may be NULL; the answer is still -1 and res still says why */
	tgi_schema_result r;
	assert_int_equal(tgi_schema_validate_text(s, "{", 1, &r, NULL, 0), -1);
	assert_int_equal(r.nerrors, 1);
	assert_non_null(strstr(r.errors[0].message, "at byte 1"));
	/* the text need not be NUL-terminated: only len bytes are read */
	const char *t = "{\"env\":\"prod\",\"version\":\"v1\"}garbage";
	assert_int_equal(tgi_schema_validate_text(s, t, strlen(t) - 7, NULL, NULL, 0), 1);
	assert_int_equal(tgi_schema_validate_text(s, t, strlen(t), NULL, NULL, 0), -1);
	/* no schema or no text: invalid (not a parse error) */
	assert_int_equal(tgi_schema_validate_text(NULL, "1", 1, &r, NULL, 0), 0);
	assert_string_equal(r.errors[0].message, "no schema to validate");
	assert_int_equal(tgi_schema_validate_text(s, NULL, 0, &r, NULL, 0), 0);
	assert_string_equal(r.errors[0].message, "no value to validate");
	tgi_schema_free(s);
}

/* Strings may hold NUL (\u0000): lengths, enum, const and patterns see
 * every byte, and messages stay clean. */
static void test_text_nul_in_strings(void **state)
{
	tgi_schema *s = compile("{'properties':{'k':{'const':'ab'},'e':{'enum':['a','x\\u0000y']},"
	                        "'n':{'maxLength':3},'p':{'pattern':'^a$'}}}", 0);
	tgi_schema_result r;
	char err[256];
	assert_int_equal(vtext(s, "{'k':'ab','e':'x\\u0000y','n':'\\u0000\\u0000\\u0000'}", &r,
	                       err, sizeof err), 1);
	assert_int_equal(vtext(s, "{'k':'a\\u0000b'}", &r, err, sizeof err), 0);
	assert_string_equal(r.errors[0].pointer, "/k");
	assert_string_equal(r.errors[0].message, "must be \"ab\"; got \"a\\u0000b\"");
	assert_int_equal(vtext(s, "{'k':'ab\\u0000'}", &r, err, sizeof err), 0);
	assert_int_equal(vtext(s, "{'e':'x'}", &r, err, sizeof err), 0);
	assert_int_equal(vtext(s, "{'n':'\\u0000\\u0000\\u0000\\u0000'}", &r, err, sizeof err), 0);
	assert_string_equal(r.errors[0].message, "must be at most 3 characters long, got 4");
	assert_int_equal(vtext(s, "{'p':'a\\u0000'}", &r, err, sizeof err), 0);
	assert_string_equal(r.errors[0].message, "must match ^a$");
	tgi_schema_free(s);
}

static void test_text_nesting(void **state)
{
	tgi_schema *any = compile("true", 0);
	tgi_schema *rec = compile("{'type':'array','items':{'$ref':'#'}}", 0);
	char err[256];
	tgi_schema_result r;
	char *ok = nested("[", "", "]", TGI_JV_MAX_DEPTH);
	assert_int_equal(tgi_schema_validate_text(any, ok, strlen(ok), &r, err, sizeof err), 1);
	assert_int_equal(tgi_schema_validate_text(rec, ok, strlen(ok), &r, err, sizeof err), 1);
	free(ok);
	char *deep = nested("[", "", "]", TGI_JV_MAX_DEPTH + 1);
	assert_int_equal(tgi_schema_validate_text(any, deep, strlen(deep), &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "at byte 128"));
	free(deep);
	deep = nested("{'a':", "1", "}", 5000);
	for (char *p = deep; *p; p++)
		if (*p == '\'')
			*p = '"';
	assert_int_equal(tgi_schema_validate_text(any, deep, strlen(deep), NULL, err, sizeof err),
	                 -1);
	free(deep);

	/* the jansson path: too deep for the DOM copy is invalid, said where */
	json_t *v = json_object(), *inner = v;
	for (int i = 0; i < TGI_JV_MAX_DEPTH + 10; i++) {
		json_t *o = json_object();
		json_object_set_new(inner, "k/", o);
		inner = o;
	}
	assert_int_equal(tgi_schema_validate(any, v, 1, &r), 0);
	assert_int_equal(r.nerrors, 1);
	assert_string_equal(r.errors[0].message, "is nested too deeply (more than 128 levels)");
	assert_true(strncmp(r.errors[0].pointer, "/k~1/k~1/k~1", 12) == 0);
	assert_int_equal(tgi_schema_validate(any, v, 0, NULL), 0);
	json_decref(v);
	/* and so is a property name holding NUL, which JSON text cannot bring */
	v = json_object();
	json_object_set_new(v, "x", json_object());
	json_object_setn_new(json_object_get(v, "x"), "a\0b", 3, json_true());
	assert_int_equal(tgi_schema_validate(any, v, 0, &r), 0);
	assert_string_equal(r.errors[0].pointer, "/x");
	assert_string_equal(r.errors[0].message, "has a property name holding a NUL byte");
	json_decref(v);
	tgi_schema_free(any);
	tgi_schema_free(rec);
}

/* The core entry point on a DOM the caller parsed. */
static void test_validate_jv(void **state)
{
	tgi_schema *s = compile(deploy_schema, 0);
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char err[128];
	const char *t = "{\"version\":\"v1\",\"env\":\"qa\"}";
	const tgi_jv *v = tgi_jv_parse(d, t, strlen(t), err, sizeof err);
	assert_non_null(v);
	tgi_schema_result r;
	assert_int_equal(tgi_schema_validate_jv(s, v, &r), 0);
	assert_int_equal(r.nerrors, 1);
	assert_string_equal(r.errors[0].pointer, "/env");
	assert_int_equal(tgi_schema_validate_jv(s, v, NULL), 0);
	assert_int_equal(tgi_schema_validate_jv(s, &v->u.members[0].value, &r), 0);
	assert_string_equal(r.errors[0].message, "must be an object, got string");
	assert_int_equal(tgi_schema_validate_jv(s, NULL, &r), 0);
	assert_string_equal(r.errors[0].message, "no value to validate");
	tgi_jv_doc_free(d);
	tgi_schema_free(s);
}

/* A pattern PCRE2 gives up on is never "no match": under not, if, anyOf,
 * patternProperties or propertyNames that would let the value through. */
static void test_expensive_pattern_is_sticky(void **state)
{
	static const struct {
		const char *schema, *pre, *post, *ptr; /* instance: pre VALUE post */
	} cases[] = {
		{"{'properties':{'x':{'not':{'pattern':'^(a+)+$'}}}}", "{'x':'", "'}", "/x"},
		{"{'properties':{'x':{'if':{'pattern':'^(a+)+$'},'then':{'const':0}}}}",
		 "{'x':'", "'}", "/x"},
		{"{'properties':{'x':{'anyOf':[{'pattern':'^(a+)+$'},{'type':'string'}]}}}",
		 "{'x':'", "'}", "/x"},
		{"{'properties':{'x':{'oneOf':[{'pattern':'^(a+)+$'},{'type':'string'}]}}}",
		 "{'x':'", "'}", "/x"},
		{"{'properties':{'x':{'items':{'contains':{'not':{'pattern':'^(a+)+$'}}}}}}",
		 "{'x':[['", "']]}", "/x/0/0"},
		{"{'properties':{'x':{'not':{'propertyNames':{'pattern':'^(a+)+$'}}}}}",
		 "{'x':{'", "':1}}", "/x/"},
		{"{'properties':{'x':{'not':{'patternProperties':{'^(a+)+$':false}}}}}",
		 "{'x':{'", "':1}}", "/x/"},
		{"{'properties':{'x':{'patternProperties':{'^(a+)+$':true}}}}", "{'x':{'", "':1}}",
		 "/x/"},
	};
	const char *bad = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab";
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tgi_schema *s = compile(cases[i].schema, 0);
		char inst[256], ptr[128];
		size_t plen = strlen(cases[i].ptr);
		snprintf(inst, sizeof inst, "%s%s%s", cases[i].pre, bad, cases[i].post);
		/* a pointer ending in "/" ends in the property name */
		snprintf(ptr, sizeof ptr, "%s%s", cases[i].ptr, cases[i].ptr[plen - 1] == '/' ? bad : "");
		one_error(s, inst, ptr, "pattern too expensive to check (^(a+)+$); send a simpler value");
		/* a value the pattern decides quickly is judged as usual */
		snprintf(inst, sizeof inst, "%sab%s", cases[i].pre, cases[i].post);
		tgi_schema_result r;
		validate(s, inst, &r);
		for (int k = 0; k < r.nerrors; k++)
			assert_null(strstr(r.errors[k].message, "too expensive"));
		tgi_schema_free(s);
	}
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct worker {
	const tgi_schema *s;
	json_t           *valid, *invalid;
	int               bad;
} worker;

/* Each thread alternates the jansson and the text path: both use the
 * thread's own document, which its exit frees (LeakSanitizer checks). */
static void *work(void *arg)
{
	worker *w = arg;
	char *valid = json_dumps(w->valid, JSON_COMPACT), *invalid = json_dumps(w->invalid, 0);
	for (int i = 0; i < 2000; i++) {
		tgi_schema_result r;
		int ok = i % 2 ? tgi_schema_validate_text(w->s, valid, strlen(valid), NULL, NULL, 0)
		               : tgi_schema_validate(w->s, w->valid, 0, NULL);
		int bad = i % 2 ? tgi_schema_validate_text(w->s, invalid, strlen(invalid), &r, NULL, 0)
		                : tgi_schema_validate(w->s, w->invalid, 0, &r);
		if (ok != 1 || bad != 0 || r.nerrors != 3 ||
		    strcmp(r.errors[0].pointer, "/items/1/name") != 0 ||
		    strcmp(r.errors[2].message, "must be one of \"a\", \"b\"; got \"c\"") != 0)
			w->bad++;
	}
	free(valid);
	free(invalid);
	return NULL;
}

static void test_threads(void **state)
{
	tgi_schema *s = compile("{'properties':{'items':{'type':'array','items':{"
		"'properties':{'name':{'type':'string','pattern':'^[a-z]+[0-9]*$'}},"
		"'patternProperties':{'^x-[a-z]+$':{'type':'integer'}},"
		"'additionalProperties':false}},'mode':{'enum':['a','b']}}}",
		TGI_SCHEMA_ASSERT_FORMATS);
	enum { NT = 4 };
	pthread_t t[NT];
	worker w[NT];
	for (int i = 0; i < NT; i++) {
		/* each thread has its own instances; the compiled schema is shared */
		w[i] = (worker){s, js("{'items':[{'name':'abc1','x-k':1},{'name':'zz'}]}"),
		                js("{'items':[{'name':'ok'},{'name':'NO','x-k':'s'}],'mode':'c'}"), 0};
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
		json_decref(w[i].valid);
		json_decref(w[i].invalid);
	}
	tgi_schema_free(s);
}

/* ---- the benchmark fixtures ------------------------------------------------------ */

static const char *calendar_schema =
	"{'type':'object','description':'Create a calendar event','properties':{"
	"'title':{'type':'string','minLength':1,'maxLength':200,'description':'Event title'},"
	"'start':{'type':'string','format':'date-time'},"
	"'duration_minutes':{'type':'integer','minimum':5,'maximum':1440},"
	"'location':{'anyOf':[{'type':'string'},{'type':'null'}]},"
	"'priority':{'type':'string','enum':['low','normal','high']},"
	"'attendees':{'type':'array','minItems':1,'maxItems':50,'items':{'type':'object',"
	"'properties':{'email':{'type':'string','pattern':'^[^@\\\\s]+@[^@\\\\s]+\\\\.[a-z]{2,}$'},"
	"'name':{'type':'string'},'optional':{'type':'boolean'}},"
	"'required':['email','name','optional'],'additionalProperties':false}},"
	"'reminders':{'type':'array','items':{'$ref':'#/$defs/reminder'}},"
	"'kind':{'const':'meeting'}},"
	"'required':['title','start','duration_minutes','location','priority','attendees',"
	"'reminders','kind'],'additionalProperties':false,"
	"'$defs':{'reminder':{'type':'object','properties':{"
	"'method':{'type':'string','enum':['email','popup']},"
	"'minutes':{'type':'integer','minimum':0}},"
	"'required':['method','minutes'],'additionalProperties':false}}}";

#define CALENDAR_HEAD \
	"{'title':'Quarterly planning sync','start':'2025-03-14T15:30:00Z','duration_minutes':45," \
	"'location':null,'priority':'high','attendees':[{'email':'alice@example.com'," \
	"'name':'Alice','optional':false},"
#define CALENDAR_TAIL \
	"{'email':'carol@example.net','name':'Carol','optional':false}],'reminders':[" \
	"{'method':'popup','minutes':10},{'method':'email','minutes':60}],'kind':'meeting'"

static void test_calendar_fixtures(void **state)
{
	tgi_schema *s = compile(calendar_schema, TGI_SCHEMA_ASSERT_FORMATS);
	assert_int_equal(validate(s, CALENDAR_HEAD "{'email':'bob@example.org','name':'Bob',"
	                             "'optional':true}," CALENDAR_TAIL "}", NULL), 1);
	tgi_schema_result r;
	assert_int_equal(validate(s, CALENDAR_HEAD "{'email':'not-an-email','name':'Bob',"
	                             "'optional':true}," CALENDAR_TAIL ",'extra':1}", &r), 0);
	assert_int_equal(r.nerrors, 2);
	assert_string_equal(r.errors[0].pointer, "/attendees/1/email");
	assert_string_equal(r.errors[0].message, "must match ^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$");
	assert_string_equal(r.errors[1].pointer, "/extra");
	assert_string_equal(r.errors[1].message,
	                    "is not allowed (allowed: title, start, duration_minutes, location, "
	                    "priority, attendees, reminders, kind)");
	json_t *v = js(CALENDAR_HEAD "{'email':'b@example.org','name':'Bob','optional':true},"
	               CALENDAR_TAIL "}");
	json_object_set_new(v, "location", json_integer(5));
	json_object_set_new(v, "start", json_string("2025-03-14 15:30"));
	assert_int_equal(validate_v(s, v, &r), 0);
	assert_int_equal(r.nerrors, 2);
	assert_string_equal(r.errors[0].pointer, "/start");
	assert_string_equal(r.errors[0].message,
	                    "must be a valid date-time (RFC 3339), got \"2025-03-14 15:30\"");
	assert_string_equal(r.errors[1].pointer, "/location");
	assert_string_equal(r.errors[1].message, "must be a string or null, got number");
	json_decref(v);
	tgi_schema_free(s);
}

/* ---- odds and ends ------------------------------------------------------------- */

/* Many names: the property table grows while dependencies are read. */
static void test_many_names(void **state)
{
	char schema[4096] = "{'dependentRequired':{'t':[", inst[2048] = "{'t':1";
	size_t n = strlen(schema);
	for (int i = 0; i < 80; i++)
		n += (size_t)snprintf(schema + n, sizeof schema - n, "%s'n%d'", i ? "," : "", i);
	snprintf(schema + n, sizeof schema - n, "]},'dependencies':{'u':['t','z']},"
	         "'required':['r70','r71']}");
	tgi_schema *s = compile(schema, 0);
	n = strlen(inst);
	for (int i = 0; i < 80; i++)
		if (i != 65)
			n += (size_t)snprintf(inst + n, sizeof inst - n, ",'n%d':1", i);
	snprintf(inst + n, sizeof inst - n, ",'u':1,'r70':1}");
	tgi_schema_result r;
	assert_int_equal(validate(s, inst, &r), 0);
	assert_int_equal(r.nerrors, 3);
	assert_string_equal(r.errors[0].pointer, "/r71");
	assert_string_equal(r.errors[1].pointer, "/n65");
	assert_string_equal(r.errors[1].message, "is required when \"t\" is present");
	assert_string_equal(r.errors[2].pointer, "/z");
	tgi_schema_free(s);
}

static void test_boundaries(void **state)
{
	tgi_schema_result r;
	assert_int_equal(tgi_schema_validate(NULL, NULL, 0, &r), 0);
	assert_int_equal(r.nerrors, 1);
	assert_string_equal(r.errors[0].message, "no schema to validate");
	tgi_schema *s = compile("true", 0);
	assert_int_equal(tgi_schema_validate(s, NULL, 0, &r), 0);
	assert_string_equal(r.errors[0].message, "no value to validate");
	assert_int_equal(validate(s, "{'any':[1,2,3]}", NULL), 1);
	tgi_schema_free(s);
	/* a property named $ref is data, not a reference */
	s = compile("{'properties':{'$ref':{'type':'string'}}}", 0);
	assert_int_equal(validate(s, "{'$ref':'x'}", NULL), 1);
	assert_int_equal(validate(s, "{'$ref':1}", NULL), 0);
	tgi_schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_and_version),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_echo_is_capped_and_clean),
		cmocka_unit_test(test_error_cap),
		cmocka_unit_test(test_defaults_applied),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_ref_recursion),
		cmocka_unit_test(test_ref_siblings),
		cmocka_unit_test(test_depth_caps),
		cmocka_unit_test(test_formats_on_off),
		cmocka_unit_test(test_format_values),
		cmocka_unit_test(test_code_point_lengths),
		cmocka_unit_test(test_numbers_and_equality),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_text_parse_errors),
		cmocka_unit_test(test_text_nul_in_strings),
		cmocka_unit_test(test_text_nesting),
		cmocka_unit_test(test_validate_jv),
		cmocka_unit_test(test_expensive_pattern_is_sticky),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_calendar_fixtures),
		cmocka_unit_test(test_many_names),
		cmocka_unit_test(test_boundaries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
