/*
 * fuzz_schema.c — libFuzzer target for the JSON Schema compiler and
 * validator.
 *
 * Input: "SCHEMA\0INSTANCE" (two JSON texts split at the first NUL byte),
 * or a lone INSTANCE, which is then validated against a few built-in
 * schemas (recursive, patterned, format-checked).  A schema that does not
 * compile must say why; one that does must answer every instance the same
 * way yes/no and with a result, store at least one error exactly when the
 * answer is no, and emit only valid UTF-8 without control characters.
 * The instance goes through both entry points: its raw text through
 * tgi_schema_validate_text() and its jansson value through
 * tgi_schema_validate(); when both parsers take the text (they differ
 * only where jv.h says), the answers and the error lists must be the
 * same, and a text the parser refuses must come back -1 with a reason.
 * Defaults are then applied to a copy.  Any crash, leak, hang or sanitizer
 * report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "schema/schema.h"

#define INPUT_MAX 16384

static const char *const builtin[] = {
	"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\","
	"\"default\":0},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"},"
	"\"uniqueItems\":true}},\"required\":[\"v\"],\"additionalProperties\":false}},"
	"\"$ref\":\"#/$defs/n\"}",
	"{\"type\":\"object\",\"properties\":{\"env\":{\"enum\":[\"staging\",\"prod\"]},"
	"\"version\":{\"type\":\"string\",\"pattern\":\"^v[0-9]+$\",\"maxLength\":8},"
	"\"when\":{\"format\":\"date-time\"},\"ip\":{\"anyOf\":[{\"format\":\"ipv4\"},"
	"{\"format\":\"ipv6\"}]},\"n\":{\"multipleOf\":0.01,\"exclusiveMinimum\":0}},"
	"\"patternProperties\":{\"^x-\":{\"type\":[\"string\",\"null\"]}},"
	"\"propertyNames\":{\"maxLength\":12},\"dependentRequired\":{\"env\":[\"version\"]},"
	"\"required\":[\"env\"],\"additionalProperties\":false}",
	"{\"type\":\"array\",\"prefixItems\":[{\"const\":{\"a\":[1,2]}},{\"format\":\"uri\"}],"
	"\"items\":{\"oneOf\":[{\"type\":\"string\",\"format\":\"email\"},{\"type\":\"number\"}]},"
	"\"contains\":{\"type\":\"number\"},\"maxContains\":3,\"minItems\":1}",
};

/* Messages end up in JSON envelopes: they must be valid UTF-8. */
static void utf8_or_die(const char *s)
{
	json_t *v = json_string(s);
	if (!v)
		abort();
	json_decref(v);
}

static void check_result(int ok, const tgi_schema_result *r)
{
	if (ok ? r->nerrors != 0 : (r->nerrors < 1 || r->nerrors > TGI_SCHEMA_MAX_ERRORS))
		abort();
	for (int i = 0; i < r->nerrors; i++) {
		const tgi_schema_error *e = &r->errors[i];
		if (!memchr(e->pointer, '\0', sizeof e->pointer) ||
		    !memchr(e->message, '\0', sizeof e->message) || !e->message[0])
			abort();
		for (const char *p = e->message; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		for (const char *p = e->pointer; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		if (e->pointer[0] && e->pointer[0] != '/')
			abort();
		utf8_or_die(e->pointer);
		utf8_or_die(e->message);
	}
}

/* instance (may be NULL: jansson refused the text) and its text. */
static void run(const tgi_schema *s, json_t *instance, const char *text, size_t len)
{
	tgi_schema_result r, tr;
	char err[256];
	int tquick = tgi_schema_validate_text(s, text, len, NULL, err, sizeof err);
	int tfull = tgi_schema_validate_text(s, text, len, &tr, err, sizeof err);
	if (tquick != tfull)
		abort();
	if (tfull < 0) {
		if (!err[0] || strncmp(err, "at byte ", 8) != 0 || tr.nerrors != 1)
			abort();
		utf8_or_die(err);
	} else {
		check_result(tfull, &tr);
	}
	if (!instance)
		return;
	int quick = tgi_schema_validate(s, instance, 0, NULL);
	int full = tgi_schema_validate(s, instance, 0, &r);
	if (quick != full)
		abort();
	check_result(full, &r);
	if (tfull >= 0) { /* both parsers took it: one answer, the same errors */
		if (tfull != full || tr.nerrors != r.nerrors || tr.truncated != r.truncated)
			abort();
		for (int i = 0; i < r.nerrors; i++)
			if (strcmp(tr.errors[i].pointer, r.errors[i].pointer) != 0 ||
			    strcmp(tr.errors[i].message, r.errors[i].message) != 0)
				abort();
	}
	json_t *copy = json_deep_copy(instance);
	if (tgi_schema_validate(s, copy, 1, NULL) != quick)
		abort();
	json_decref(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t flags = JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES;

	if (!nul) {
		json_t *instance = json_loadb(text, size, flags, NULL);
		for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
			char err[256];
			json_t *j = json_loads(builtin[i], 0, NULL);
			tgi_schema *s = tgi_schema_compile(j, TGI_SCHEMA_ASSERT_FORMATS, err, sizeof err);
			json_decref(j);
			if (!s)
				abort(); /* the built-in schemas are valid */
			run(s, instance, text, size);
			tgi_schema_free(s);
		}
		json_decref(instance);
		return 0;
	}

	size_t slen = (size_t)(nul - text);
	json_t *schema = json_loadb(text, slen, flags, NULL);
	json_t *instance = json_loadb(nul + 1, size - slen - 1, flags, NULL);
	if (schema) {
		for (unsigned f = 0; f < 4; f++) {
			char err[256];
			err[0] = '\0';
			tgi_schema *s = tgi_schema_compile(schema, f, err, sizeof err);
			if (!s) { /* a refusal always says why */
				if (!err[0] || !memchr(err, '\0', sizeof err))
					abort();
				utf8_or_die(err);
				continue;
			}
			run(s, instance, nul + 1, size - slen - 1);
			tgi_schema_free(s);
		}
	}
	json_decref(schema);
	json_decref(instance);
	return 0;
}
