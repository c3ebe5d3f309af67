/*
 * match.c — an eval case's expected arguments (tgi_match_*, eval.h): a
 * subset of the call's arguments whose values may be globs or JSON Schema
 * fragments.
 *
 * The expected object is compiled once into a tree of nodes, one per
 * expected value:
 *   M_GLOB    a string: tgi_text_glob against a string argument.  `*` and
 *             `?` are always wildcards; a literal one needs a fragment
 *             ({const: "*.c"}), as docs/EVAL.md says.
 *   M_NUMBER  a number: equal numerically (1 equals 1.0)
 *   M_EXACT   true, false or null: the same value
 *   M_ARRAY   an array: one of the same length, element by element
 *   M_SCHEMA  an object whose every key is a JSON Schema keyword: the
 *             argument must be valid against it (compiled here).  One
 *             that only annotates ({title: "a.txt"}) would accept
 *             anything, so it is refused: a keyword that checks (const,
 *             type, pattern, ...) must be there.
 *   M_SUBSET  any other object (and {}): an object holding every key,
 *             each matched by its node
 * The arguments object itself is always a subset, never a fragment: its
 * keys are argument names ("pattern", "path"), which may look like keywords.
 *
 * A compiled match is read-only: any number of threads may check against it
 * at once (a fragment validates in the calling thread's own document).
 *
 * Owns: the compiled tree, a copy of the expected object and the compiled
 * fragments.  Must not: change the arguments it checks, or keep them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "policy/policy.h"
#include "schema/schema.h"
#include "util/util.h"

#define MATCH_DEPTH_MAX 32      /* levels of arrays and objects in the expected arguments */
#define SHOW_MAX        120     /* bytes of a value quoted in a sentence */
#define PTR_CAP         512     /* bytes of a JSON pointer in a sentence */

typedef enum { M_GLOB, M_NUMBER, M_EXACT, M_ARRAY, M_SUBSET, M_SCHEMA } mkind;

typedef struct mnode {
	mkind         kind;
	const json_t *want;    /* the expected value (borrowed from the match's copy) */
	tgi_schema   *schema;  /* M_SCHEMA */
	size_t        n;       /* M_ARRAY elements, M_SUBSET keys */
	const char  **keys;    /* M_SUBSET: the keys as written (borrowed from want) */
	struct mnode *kids;    /* M_ARRAY, M_SUBSET: one per element or key */
} mnode;

struct tgi_match {
	json_t *expect;        /* a deep copy of what was compiled */
	mnode   root;
};

/* The keywords of draft 7 and 2020-12 (validation, applicators, references
 * and annotations).  An object made only of these is a fragment. */
static const char *const schema_keywords[] = {
	"$anchor", "$comment", "$defs", "$id", "$ref", "$schema",
	"additionalItems", "additionalProperties", "allOf", "anyOf", "const", "contains",
	"default", "definitions", "dependencies", "dependentRequired", "dependentSchemas",
	"deprecated", "description", "else", "enum", "examples", "exclusiveMaximum",
	"exclusiveMinimum", "format", "if", "items", "maxContains", "maxItems", "maxLength",
	"maxProperties", "maximum", "minContains", "minItems", "minLength", "minProperties",
	"minimum", "multipleOf", "not", "oneOf", "pattern", "patternProperties", "prefixItems",
	"properties", "propertyNames", "readOnly", "required", "then", "title", "type",
	"unevaluatedItems", "unevaluatedProperties", "uniqueItems", "writeOnly",
};

/* The keywords that only annotate or hold definitions: a fragment of
 * nothing else accepts every value. */
static const char *const annotation_keywords[] = {
	"$anchor", "$comment", "$defs", "$id", "$schema", "default", "definitions", "deprecated",
	"description", "examples", "readOnly", "title", "writeOnly",
};

static int in_list(const char *key, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(key, list[i]))
			return 1;
	return 0;
}

/* Does the fragment hold a keyword that checks the value? */
static int checks_something(const json_t *obj)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v)
		if (!in_list(key, annotation_keywords, TGI_ARRAY_LEN(annotation_keywords)))
			return 1;
	return 0;
}

static int is_fragment(const json_t *obj)
{
	const char *key;
	const json_t *v;
	if (!json_object_size(obj))
		return 0;
	json_object_foreach((json_t *)obj, key, v)
		if (!in_list(key, schema_keywords, TGI_ARRAY_LEN(schema_keywords)))
			return 0;
	return 1;
}

/* ---- compiling ---- */

static void node_free(mnode *n)
{
	for (size_t i = 0; n->kids && i < n->n; i++)
		node_free(&n->kids[i]);
	free(n->kids);
	free(n->keys);
	tgi_schema_free(n->schema);
}

static int compile_node(mnode *n, const json_t *want, const char *ptr, int depth, char *err,
                        size_t errlen);

static int compile_fragment(mnode *n, const json_t *want, const char *ptr, char *err,
                            size_t errlen)
{
	char e[512];
	n->kind = M_SCHEMA;
	if (!checks_something(want)) {
		tgi_snprintf(err, errlen, "%s: a JSON Schema fragment whose keywords only annotate "
		             "matches anything; give a value or a checking keyword such as const", ptr);
		return -1;
	}
	n->schema = tgi_schema_compile(want, TGI_SCHEMA_ASSERT_FORMATS, e, sizeof e);
	if (n->schema)
		return 0;
	/* the schema's own pointer continues ours: "/limit" + "/minimum: ..." */
	tgi_snprintf(err, errlen, "%s%s%s", ptr, e[0] == '/' ? "" : ": ", e);
	return -1;
}

static int compile_subset(mnode *n, const json_t *want, const char *ptr, int depth,
                          char *err, size_t errlen)
{
	const char *key;
	const json_t *v;
	size_t i = 0;
	n->kind = M_SUBSET;
	n->n = json_object_size(want);
	n->keys = tgi_xcalloc(n->n ? n->n : 1, sizeof *n->keys);
	n->kids = tgi_xcalloc(n->n ? n->n : 1, sizeof *n->kids);
	json_object_foreach((json_t *)want, key, v) {
		char p[PTR_CAP];
		tgi_json_pointer_join(p, sizeof p, ptr, key);
		n->keys[i] = key;
		if (compile_node(&n->kids[i++], v, p, depth + 1, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static int compile_array(mnode *n, const json_t *want, const char *ptr, int depth, char *err,
                         size_t errlen)
{
	n->kind = M_ARRAY;
	n->n = json_array_size(want);
	n->kids = tgi_xcalloc(n->n ? n->n : 1, sizeof *n->kids);
	for (size_t i = 0; i < n->n; i++) {
		char p[PTR_CAP], idx[24];
		snprintf(idx, sizeof idx, "%zu", i);
		tgi_json_pointer_join(p, sizeof p, ptr, idx);
		if (compile_node(&n->kids[i], json_array_get(want, i), p, depth + 1, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static int compile_node(mnode *n, const json_t *want, const char *ptr, int depth, char *err,
                        size_t errlen)
{
	n->want = want;
	switch (json_typeof(want)) {
	case JSON_STRING:
		n->kind = M_GLOB;
		if (strlen(json_string_value(want)) != json_string_length(want)) {
			tgi_snprintf(err, errlen, "%s: a glob cannot hold a NUL character", ptr);
			return -1;
		}
		return 0;
	case JSON_INTEGER:
	case JSON_REAL:
		n->kind = M_NUMBER;
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		n->kind = M_EXACT;
		return 0;
	default:
		break;
	}
	if (depth > MATCH_DEPTH_MAX) {
		tgi_snprintf(err, errlen, "%s: nested more than %d levels deep", ptr, MATCH_DEPTH_MAX);
		return -1;
	}
	if (json_is_array(want))
		return compile_array(n, want, ptr, depth, err, errlen);
	if (is_fragment(want))
		return compile_fragment(n, want, ptr, err, errlen);
	return compile_subset(n, want, ptr, depth, err, errlen);
}

tgi_match *tgi_match_compile(const json_t *expect, char *err, size_t errlen)
{
	char got[96];
	if (!json_is_object(expect)) {
		tgi_snprintf(err, errlen, "expected an object of arguments, got %s",
		             expect ? tgi_json_describe(expect, got, sizeof got) : "nothing");
		return NULL;
	}
	tgi_match *m = tgi_xcalloc(1, sizeof *m);
	m->expect = json_deep_copy(expect);
	if (!m->expect)
		abort();
	/* the root is level 1; its keys are argument names, never keywords */
	if (compile_subset(&m->root, m->expect, "", 1, err, errlen) < 0) {
		tgi_match_free(m);
		return NULL;
	}
	return m;
}

void tgi_match_free(tgi_match *m)
{
	if (!m)
		return;
	node_free(&m->root);
	json_decref(m->expect);
	free(m);
}

/* ---- checking ---- */

/* v as compact JSON, cut at SHOW_MAX bytes (on a UTF-8 boundary) with "..."; out
 * holds at least SHOW_MAX + 4 bytes. */
static const char *show(const json_t *v, char *out, size_t cap)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s) {
		tgi_snprintf(out, cap, "a value");
		return out;
	}
	size_t len = strlen(s);
	if (len > SHOW_MAX + 3) {
		size_t cut = SHOW_MAX;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
		memcpy(s + cut, "...", 4);
	}
	tgi_sanitize(out, cap, s);
	free(s);
	return out;
}

static int mismatch(const char *ptr, const json_t *want, const json_t *got, char *why,
                    size_t cap)
{
	char w[SHOW_MAX + 8], g[SHOW_MAX + 8];
	tgi_snprintf(why, cap, "%s: expected %s, got %s", ptr, show(want, w, sizeof w),
	             show(got, g, sizeof g));
	return 0;
}

static int number_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	return json_number_value(a) == json_number_value(b);
}

static int check_node(const mnode *n, const json_t *got, const char *ptr, char *why,
                      size_t cap);

static int check_subset(const mnode *n, const json_t *got, const char *ptr, char *why,
                        size_t cap)
{
	char g[SHOW_MAX + 8];
	if (!json_is_object(got)) {
		tgi_snprintf(why, cap, "%s: expected an object, got %s", ptr, show(got, g, sizeof g));
		return 0;
	}
	for (size_t i = 0; i < n->n; i++) {
		char p[PTR_CAP];
		tgi_json_pointer_join(p, sizeof p, ptr, n->keys[i]);
		const json_t *v = json_object_get(got, n->keys[i]);
		if (!v) {
			tgi_snprintf(why, cap, "%s is missing", p);
			return 0;
		}
		if (!check_node(&n->kids[i], v, p, why, cap))
			return 0;
	}
	return 1;
}

static int check_array(const mnode *n, const json_t *got, const char *ptr, char *why,
                       size_t cap)
{
	char g[SHOW_MAX + 8];
	const char *noun = n->n == 1 ? "element" : "elements";
	if (!json_is_array(got)) {
		tgi_snprintf(why, cap, "%s: expected an array of %zu %s, got %s", ptr, n->n, noun,
		             show(got, g, sizeof g));
		return 0;
	}
	if (json_array_size(got) != n->n) {
		tgi_snprintf(why, cap, "%s: expected %zu %s, got %zu", ptr, n->n, noun,
		             json_array_size(got));
		return 0;
	}
	for (size_t i = 0; i < n->n; i++) {
		char p[PTR_CAP], idx[24];
		snprintf(idx, sizeof idx, "%zu", i);
		tgi_json_pointer_join(p, sizeof p, ptr, idx);
		if (!check_node(&n->kids[i], json_array_get(got, i), p, why, cap))
			return 0;
	}
	return 1;
}

static int check_schema(const mnode *n, const json_t *got, const char *ptr, char *why,
                        size_t cap)
{
	tgi_schema_result res;
	memset(&res, 0, sizeof res);
	/* without apply_defaults the instance is only read */
	if (tgi_schema_validate(n->schema, (json_t *)got, 0, &res))
		return 1;
	if (res.nerrors < 1)
		tgi_snprintf(why, cap, "%s: does not match the schema", ptr);
	else
		tgi_snprintf(why, cap, "%s%s: %s", ptr, res.errors[0].pointer,
		             res.errors[0].message);
	return 0;
}

static int check_node(const mnode *n, const json_t *got, const char *ptr, char *why,
                      size_t cap)
{
	switch (n->kind) {
	case M_GLOB:
		if (json_is_string(got) && tgi_text_glob_n(json_string_value(n->want),
		                                           json_string_value(got),
		                                           json_string_length(got)))
			return 1;
		return mismatch(ptr, n->want, got, why, cap);
	case M_NUMBER:
		if (json_is_number(got) && number_equal(n->want, got))
			return 1;
		return mismatch(ptr, n->want, got, why, cap);
	case M_EXACT:
		if (json_typeof(got) == json_typeof(n->want))
			return 1;
		return mismatch(ptr, n->want, got, why, cap);
	case M_ARRAY:
		return check_array(n, got, ptr, why, cap);
	case M_SUBSET:
		return check_subset(n, got, ptr, why, cap);
	case M_SCHEMA:
		return check_schema(n, got, ptr, why, cap);
	}
	return 0;
}

int tgi_match_check(const tgi_match *m, const json_t *args, char *why, size_t cap)
{
	char raw[1024];
	raw[0] = '\0';
	if (!m || !json_is_object(args)) {
		tgi_snprintf(why, cap, "the arguments are not a JSON object");
		return 0;
	}
	if (check_node(&m->root, args, "", raw, sizeof raw))
		return 1;
	/* the sentence quotes the model's text: one line, no control characters */
	tgi_sanitize(why, cap, raw);
	return 0;
}
