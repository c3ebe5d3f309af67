/*
 * fuzz_redact.c — libFuzzer target for redaction (src/record/redact.c):
 * arbitrary bytes through tgi_redact_text, and, when they parse as JSON,
 * through tgi_redact_json and tgi_schema_sensitive_keys; with the built-in
 * redactor and with a configured one (keys and a pattern of its own).
 *
 * Properties: text comes back as a string; text that was valid UTF-8
 * stays valid UTF-8; redacting what was redacted changes nothing (text:
 * the same bytes; JSON: the same value back, no copy); the input value is
 * never modified; a value with nothing to mask comes back as itself.  Any
 * crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: the two redactors (for the life of the process).  Must not: touch
 * the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "fuzz.h"
#include "mw/mw.h"
#include "schema/schema.h"
#include "util/util.h"

#define INPUT_MAX (64u << 10)

static tgi_redactor *configured;
static tgi_strv extra;

static void init(void)
{
	char err[512];
	json_t *doc = json_loads("{\"redact\":{\"keys\":[\"pin\",\"note\",\"api_key\"],"
	                         "\"patterns\":[\"ACME-[0-9]{6}\",\"id (?<secret>E[0-9]{4})\"]}}",
	                         0, NULL);
	tgi_config *cfg = NULL;
	check(doc && tgi_config_from_json(doc, NULL, "fuzz.yaml", "/nonexistent", &cfg, err,
	                                  sizeof err) == 0);
	check(tgi_redactor_new(cfg, &configured, err, sizeof err) == 0);
	tgi_config_free(cfg);
	tgi_strv_push(&extra, tgi_strdup("card"));
	tgi_strv_push(&extra, tgi_strdup("Secret-Answer"));
}

static int valid_utf8(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	json_decref(j);
	return j != NULL;
}

static void text(const tgi_redactor *r, const char *s, size_t n)
{
	char *once = tgi_redact_text(r, s, n);
	check(once != NULL);
	size_t len = strlen(once);
	if (!memchr(s, '\0', n) && valid_utf8(s, n))
		check(valid_utf8(once, len));
	char *twice = tgi_redact_text(r, once, len);
	check(strcmp(once, twice) == 0);
	free(once);
	free(twice);
}

static void value(const tgi_redactor *r, json_t *v, const tgi_strv *keys)
{
	json_t *before = json_deep_copy(v);
	json_t *once = tgi_redact_json(r, v, keys);
	check(once != NULL);
	check(json_equal(v, before));          /* the input is untouched */
	if (once != v) {
		check(!json_equal(once, v));    /* a copy is made only to change something */
		char *dump = json_dumps(once, JSON_COMPACT | JSON_ENCODE_ANY);
		check(dump != NULL);
		free(dump);
	}
	json_t *twice = tgi_redact_json(r, once, keys);
	check(twice == once);                   /* nothing left to mask */
	json_decref(twice);
	json_decref(once);
	json_decref(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	if (!configured)
		init();
	const char *s = (const char *)data;
	text(NULL, s, size);
	text(configured, s, size);

	json_t *v = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (v) {
		value(NULL, v, NULL);
		value(configured, v, &extra);
		tgi_strv keys = {0};
		tgi_schema_sensitive_keys(v, &keys);
		for (size_t i = 0; i < keys.n; i++)
			check(keys.v[i] != NULL);
		tgi_strv_free(&keys);
		json_decref(v);
	}
	return 0;
}
