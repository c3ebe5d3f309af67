/*
 * fuzz_jv.c — libFuzzer target for the arena JSON parser (src/util/jv.c),
 * checked against jansson (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
 * JSON_ALLOW_NUL) on the same bytes.
 *
 * When jansson accepts, ours must accept too (unless the value nests deeper
 * than TGI_JV_MAX_DEPTH, or jansson skipped a NUL byte after a token) and
 * be equal both ways through tgi_jv_equal and, back through
 * tgi_jv_to_json, exactly through json_equal.  When ours
 * accepts, jansson must too, unless it refused an integer outside int64
 * (REAL here, by design).  A refusal always reads "at byte N: sentence"
 * with N inside the input and no control characters.  The result must not
 * depend on the arena: a reset and reparse, and a parse into a tiny capped
 * doc, give the same answer or (tiny doc) a cap error.  Every key must be
 * found by tgi_jv_get.  Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/jv.h"

#define INPUT_MAX (64u << 10)
#define DOC_MAX   (4u << 20)  /* never reached by INPUT_MAX bytes */
#define TINY_MAX  256

/* The offset N of an "at byte N: sentence" error, which must be well formed. */
static size_t check_error(const char *err, size_t size)
{
	char *end;
	if (strncmp(err, "at byte ", 8) != 0)
		abort();
	unsigned long long at = strtoull(err + 8, &end, 10);
	if (end == err + 8 || at > size || strncmp(end, ": ", 2) != 0 || !end[2])
		abort();
	for (const char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	json_t *s = json_string(err); /* valid UTF-8 */
	if (!s)
		abort();
	json_decref(s);
	return (size_t)at;
}

/* jansson drops a NUL byte that directly follows a number or a literal
 * ("[1\0]" reads as [1], "true\0" as true); we refuse it. */
static int nul_after_token(const char *text, size_t at)
{
	return at > 0 && text[at] == '\0' && isalnum((unsigned char)text[at - 1]);
}

/* Structural invariants of a parsed value. */
static void check_value(const tgi_jv *v)
{
	switch (v->type) {
	case TGI_JV_STRING:
		if (v->u.s[v->n] != '\0')
			abort();
		break;
	case TGI_JV_ARRAY:
		for (uint32_t i = 0; i < v->n; i++)
			check_value(&v->u.items[i]);
		break;
	case TGI_JV_OBJECT:
		for (uint32_t i = 0; i < v->n; i++) {
			const tgi_jv_member *m = &v->u.members[i];
			if (m->key[m->klen] != '\0' || memchr(m->key, '\0', m->klen) || m->pad)
				abort();
			if (tgi_jv_get(v, m->key, m->klen) != &m->value)
				abort();
			check_value(&m->value);
		}
		break;
	case TGI_JV_NULL: case TGI_JV_FALSE: case TGI_JV_TRUE: case TGI_JV_INT: case TGI_JV_REAL:
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	const char *text = (const char *)data;
	char err[256], err2[256];
	tgi_jv_doc *d = tgi_jv_doc_new(DOC_MAX), *d2 = tgi_jv_doc_new(DOC_MAX);
	tgi_jv_doc *tiny = tgi_jv_doc_new(TINY_MAX);
	json_error_t je;
	json_t *j = json_loadb(text, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	                       &je);
	const tgi_jv *v = tgi_jv_parse(d, text, size, err, sizeof err);

	/* a tiny arena answers the same, or runs out */
	const tgi_jv *t = tgi_jv_parse(tiny, text, size, err2, sizeof err2);
	if (t) {
		if (!v || !tgi_jv_equal(t, v))
			abort();
	} else if (!strstr(err2, "cap of") && (v || strcmp(err, err2) != 0)) {
		abort();
	}

	if (!v) {
		size_t at = check_error(err, size);
		if (j && !strstr(err, "nesting deeper than") && !nul_after_token(text, at))
			abort();
	} else {
		check_value(v);
		if (!tgi_jv_equal(v, v))
			abort();
		if (!j) {
			if (json_error_code(&je) != json_error_numeric_overflow || !strstr(je.text, "integer"))
				abort();
		} else {
			const tgi_jv *theirs = tgi_jv_from_json(d2, j);
			if (!theirs || !tgi_jv_equal(v, theirs) || !tgi_jv_equal(theirs, v))
				abort();
			json_t *back = tgi_jv_to_json(v);
			if (!back || !json_equal(back, j))
				abort();
			json_decref(back);
		}
		/* the same again in a reset arena */
		json_t *before = tgi_jv_to_json(v);
		tgi_jv_doc_reset(d);
		const tgi_jv *again = tgi_jv_parse(d, text, size, err, sizeof err);
		if (!again || !before)
			abort();
		tgi_jv_doc_reset(d2);
		if (!tgi_jv_equal(again, tgi_jv_from_json(d2, before)))
			abort();
		json_decref(before);
	}
	json_decref(j);
	tgi_jv_doc_free(d);
	tgi_jv_doc_free(d2);
	tgi_jv_doc_free(tiny);
	return 0;
}
