/*
 * sensitive.c — the property names a JSON Schema marks `x-sensitive: true`,
 * for redaction (record/redact.c masks their values in what is persisted).
 *
 * The walk follows every place a subschema can sit (properties, items,
 * $defs, combinators, conditionals) and a property's local $ref, to a
 * bounded depth, over the schema's JSON (not its compiled form).
 *
 * Owns: nothing past one call.  Must not: modify the schema, fetch a
 * remote $ref, or decide what is masked.
 */
#include <string.h>
#include <jansson.h>

#include "schema/schema.h"
#include "util/util.h"

#define SENSITIVE_MAX_DEPTH 128  /* subschemas deeper are not walked */

static void push_unique(tgi_strv *out, const char *name)
{
	for (size_t i = 0; i < out->n; i++)
		if (!strcmp(out->v[i], name))
			return;
	tgi_strv_push(out, tgi_strdup(name));
}

static int marked(const json_t *s)
{
	return json_is_true(json_object_get(s, "x-sensitive"));
}

/* A local $ref's target ("#/$defs/x", "#/definitions/x", any "#/..."). */
static const json_t *ref_target(const json_t *root, const json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	if (!ref || ref[0] != '#')
		return NULL;
	return tgi_json_pointer((json_t *)root, ref + 1);
}

static void sensitive_walk(const json_t *root, const json_t *s, tgi_strv *out, int depth);

static void sensitive_each(const json_t *root, const json_t *list, tgi_strv *out, int depth)
{
	size_t i;
	const json_t *x;
	if (json_is_array(list)) {
		json_array_foreach(list, i, x)
			sensitive_walk(root, x, out, depth + 1);
	} else {
		sensitive_walk(root, list, out, depth + 1);
	}
}

static void sensitive_walk(const json_t *root, const json_t *s, tgi_strv *out, int depth)
{
	static const char *const maps[] = {"properties", "patternProperties", "$defs",
	                                   "definitions", "dependentSchemas"};
	static const char *const subs[] = {"items", "additionalProperties", "allOf", "anyOf",
	                                   "oneOf", "prefixItems", "contains", "not", "if", "then",
	                                   "else", "unevaluatedProperties", "unevaluatedItems",
	                                   "additionalItems", "propertyNames"};
	if (!json_is_object(s) || depth > SENSITIVE_MAX_DEPTH)
		return;
	const char *name;
	const json_t *sub;
	json_object_foreach((json_t *)json_object_get(s, "properties"), name, sub) {
		const json_t *t = json_is_object(sub) ? ref_target(root, sub) : NULL;
		if (json_is_object(sub) && (marked(sub) || (t && marked(t))))
			push_unique(out, name);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(maps); i++)
		json_object_foreach((json_t *)json_object_get(s, maps[i]), name, sub)
			sensitive_walk(root, sub, out, depth + 1);
	for (size_t i = 0; i < TGI_ARRAY_LEN(subs); i++)
		sensitive_each(root, json_object_get(s, subs[i]), out, depth);
}

void tgi_schema_sensitive_keys(const json_t *schema, tgi_strv *out)
{
	sensitive_walk(schema, schema, out, 0);
}
