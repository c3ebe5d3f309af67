/*
 * fuzz_dialect.c — libFuzzer target for the schema dialects and the
 * tool-name rule (src/protocol/dialect.c).
 *
 * Input: a JSON text, taken as a tool's input schema and translated both
 * ways.  Neither translation may change the input.  An OpenAI strict
 * result must be strict by the rules, checked here independently: the
 * root an object, every object closed with every property required, only
 * the keywords strict mode supports, every $ref alone and resolving to
 * the root or a root definition, every subschema typed, every array with
 * items, at most 10 levels of objects; and made strict again it must come
 * back the same.  A Gemini result must use only the Schema object's
 * fields, uppercase types, string enums, formats Gemini knows for the
 * type, required names that are properties, and no $ref; translated
 * again it must come back the same; a refusal must be one printable line.
 * The input's first bytes are also tried as a tool name for each API:
 * accepted exactly when the API's rule says so, refused with a printable
 * sentence.  Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "protocol/protocol.h"

#define INPUT_MAX 16384

static int in(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* A valid UTF-8 line with no control characters. */
static void sentence(const char *s)
{
	check(s && *s && printable(s));
	json_t *v = json_string(s);
	check(v != NULL);
	json_decref(v);
}

/* ---- OpenAI strict, by the rules ------------------------------------- */

static const char *const oai_keys[] = {
	"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
	"const", "$ref", "description", "title", "pattern", "format", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", NULL
};
static const char *const oai_formats[] = {
	"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", NULL
};
static const char *const json_types[] = {
	"string", "number", "integer", "boolean", "object", "array", "null", NULL
};

static int has_type(const json_t *type, const char *name)
{
	size_t i;
	json_t *t;
	if (json_is_string(type))
		return strcmp(json_string_value(type), name) == 0;
	json_array_foreach(type, i, t)
		if (strcmp(json_string_value(t), name) == 0)
			return 1;
	return 0;
}

static void oai_check(const json_t *root, const json_t *s, int objects)
{
	const char *k;
	json_t *v;
	size_t i;

	check(json_is_object(s));
	json_object_foreach((json_t *)s, k, v)
		check(in(k, oai_keys) || (s == root && (!strcmp(k, "$defs") || !strcmp(k, "definitions"))));

	json_t *ref = json_object_get(s, "$ref");
	if (ref) {
		const char *r = json_string_value(ref);
		check(json_object_size(s) == 1 && r && r[0] == '#');
		if (r[1]) {
			const char *name = !strncmp(r, "#/$defs/", 8) ? r + 8
			                   : !strncmp(r, "#/definitions/", 14) ? r + 14 : NULL;
			check(name && *name && !strchr(name, '/'));
			check(json_is_object(json_object_get(json_object_get(root, r[2] == '$' ? "$defs"
			                                                     : "definitions"), name)));
		}
		return;
	}
	json_t *type = json_object_get(s, "type");
	json_t *any = json_object_get(s, "anyOf");
	check(type || any || json_object_get(s, "enum") || json_object_get(s, "const"));
	if (type) {
		if (json_is_string(type)) {
			check(in(json_string_value(type), json_types));
		} else {
			check(json_is_array(type) && json_array_size(type) > 0);
			json_array_foreach(type, i, v)
				check(in(json_string_value(v), json_types));
		}
	}
	json_t *desc = json_object_get(s, "description");
	check(!desc || json_is_string(desc));
	json_t *format = json_object_get(s, "format");
	check(!format || in(json_string_value(format), oai_formats));
	json_t *en = json_object_get(s, "enum");
	check(!en || (json_is_array(en) && json_array_size(en) > 0));

	if (type && has_type(type, "object")) {
		json_t *props = json_object_get(s, "properties");
		json_t *req = json_object_get(s, "required");
		check(++objects <= 10);
		check(json_is_object(props) && json_is_array(req));
		check(json_is_false(json_object_get(s, "additionalProperties")));
		check(json_array_size(req) == json_object_size(props));
		json_array_foreach(req, i, v)
			check(json_is_string(v) && json_object_get(props, json_string_value(v)));
		json_object_foreach(props, k, v)
			oai_check(root, v, objects);
	} else {
		check(!json_object_get(s, "properties") && !json_object_get(s, "additionalProperties"));
	}
	if (type && has_type(type, "array"))
		check(json_object_get(s, "items") != NULL);
	if (json_object_get(s, "items"))
		oai_check(root, json_object_get(s, "items"), objects);
	if (any) {
		check(json_is_array(any) && json_array_size(any) > 0);
		json_array_foreach(any, i, v)
			oai_check(root, v, objects);
	}
}

static void oai_check_root(const json_t *o)
{
	static const char *const defs[] = {"$defs", "definitions"};
	const char *k;
	json_t *v;
	check(json_is_string(json_object_get(o, "type")) &&
	      !strcmp(json_string_value(json_object_get(o, "type")), "object"));
	oai_check(o, o, 0);
	for (size_t i = 0; i < 2; i++)
		json_object_foreach(json_object_get(o, defs[i]), k, v)
			oai_check(o, v, 0);
}

/* ---- Gemini legacy, by its Schema object ------------------------------ */

static const char *const gem_keys[] = {
	"type", "format", "title", "description", "nullable", "enum", "properties", "required",
	"items", "anyOf", "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength",
	"pattern", "minProperties", "maxProperties", NULL
};
static const char *const gem_types[] = {
	"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", NULL
};

static void gem_check(const json_t *s)
{
	const char *k;
	json_t *v;
	size_t i;

	check(json_is_object(s));
	json_object_foreach((json_t *)s, k, v)
		check(in(k, gem_keys));
	const char *type = json_string_value(json_object_get(s, "type"));
	check(!json_object_get(s, "type") || in(type, gem_types));
	json_t *n = json_object_get(s, "nullable");
	check(!n || json_is_true(n));
	json_t *desc = json_object_get(s, "description");
	check(!desc || json_is_string(desc));
	const char *f = json_string_value(json_object_get(s, "format"));
	if (json_object_get(s, "format")) {
		static const char *const num[] = {"float", "double", NULL};
		static const char *const integer[] = {"int32", "int64", NULL};
		static const char *const str[] = {"enum", "date-time", NULL};
		check(type && ((!strcmp(type, "NUMBER") && in(f, num)) ||
		               (!strcmp(type, "INTEGER") && in(f, integer)) ||
		               (!strcmp(type, "STRING") && in(f, str))));
	}
	json_t *en = json_object_get(s, "enum");
	if (en) {
		check(json_is_array(en) && json_array_size(en) > 0);
		json_array_foreach(en, i, v)
			check(json_is_string(v));
	}
	json_t *props = json_object_get(s, "properties");
	json_t *req = json_object_get(s, "required");
	check(!props || json_is_object(props));
	if (req) {
		check(json_is_array(req) && props);
		json_array_foreach(req, i, v)
			check(json_is_string(v) && json_object_get(props, json_string_value(v)));
	}
	json_object_foreach(props, k, v)
		gem_check(v);
	if (json_object_get(s, "items"))
		gem_check(json_object_get(s, "items"));
	json_t *any = json_object_get(s, "anyOf");
	if (any) {
		check(json_is_array(any) && json_array_size(any) > 0);
		json_array_foreach(any, i, v)
			gem_check(v);
	}
}

/* ---- names ------------------------------------------------------------ */

static void names(const uint8_t *data, size_t size)
{
	static const char *const apis[] = {"openai-chat", "openai-responses", "anthropic", "gemini"};
	char name[80], err[256];
	size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
	memcpy(name, data, n);
	name[n] = '\0';
	size_t len = strlen(name);
	for (size_t a = 0; a < 4; a++) {
		int gemini = a == 3, want = len >= 1 && len <= 64;
		for (size_t i = 0; i < len && want; i++) {
			unsigned char c = (unsigned char)name[i];
			int alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
			want = alpha || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
			       (gemini && (c == '.' || c == ':'));
			if (gemini && i == 0)
				want = want && (alpha || c == '_');
		}
		int rc = tgi_dialect_name_ok(apis[a], name, err, sizeof err);
		check(rc == (want ? 0 : -1));
		if (rc)
			sentence(err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	json_error_t je;

	if (size > INPUT_MAX)
		return 0;
	names(data, size);
	json_t *s = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
	if (!s)
		return 0;
	json_t *before = json_deep_copy(s);

	json_t *o = tgi_dialect_openai_strict(s);
	if (o) {
		oai_check_root(o);
		json_t *again = tgi_dialect_openai_strict(o);
		check(again && json_equal(again, o));
		json_decref(again);
	}

	err[0] = '\0';
	json_t *g = tgi_dialect_gemini_legacy(s, err, sizeof err);
	if (g) {
		check(!err[0]);
		gem_check(g);
		json_t *again = tgi_dialect_gemini_legacy(g, err, sizeof err);
		check(again && json_equal(again, g));
		json_decref(again);
	} else {
		sentence(err);
	}
	check(json_equal(before, s));

	json_decref(o);
	json_decref(g);
	json_decref(before);
	json_decref(s);
	return 0;
}
