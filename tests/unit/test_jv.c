/*
 * test_jv.c — the arena JSON parser (src/util/jv.c): every JSON type,
 * escapes, numbers against strtod, RFC 8259 corners refused with the byte
 * they are at, the depth and arena caps, reset reuse, lookup in large
 * objects, JSON equality, and agreement with jansson on the calendar
 * fixtures (copied in below) and on every file of the JSON Schema Test
 * Suite (draft 7).
 *
 * Owns: nothing beyond the test.  Must not: need the network or any file
 * outside the repository other than the Debian package's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>

#include <cmocka.h>

#include "util/jv.h"
#include "util/util.h"

#define SUITE "/usr/share/json-schema-test-suite/tests/draft7"
#define FILE_MAX (1u << 20)

static const char calendar_valid[] =
	"{\"title\":\"Quarterly planning sync\",\"start\":\"2025-03-14T15:30:00Z\","
	"\"duration_minutes\":45,\"location\":null,\"priority\":\"high\","
	"\"attendees\":[{\"email\":\"alice@example.com\",\"name\":\"Alice\","
	"\"optional\":false},{\"email\":\"bob@example.org\",\"name\":\"Bob\","
	"\"optional\":true},{\"email\":\"carol@example.net\",\"name\":\"Carol\","
	"\"optional\":false}],\"reminders\":[{\"method\":\"popup\",\"minutes\":10},"
	"{\"method\":\"email\",\"minutes\":60}],\"kind\":\"meeting\"}\n";

static const char calendar_invalid[] =
	"{\"title\":\"Quarterly planning sync\",\"start\":\"2025-03-14T15:30:00Z\","
	"\"duration_minutes\":45,\"location\":null,\"priority\":\"high\","
	"\"attendees\":[{\"email\":\"alice@example.com\",\"name\":\"Alice\","
	"\"optional\":false},{\"email\":\"not-an-email\",\"name\":\"Bob\","
	"\"optional\":true},{\"email\":\"carol@example.net\",\"name\":\"Carol\","
	"\"optional\":false}],\"reminders\":[{\"method\":\"popup\",\"minutes\":10},"
	"{\"method\":\"email\",\"minutes\":60}],\"kind\":\"meeting\",\"extra\":1}\n";

/* The schema keeps its original layout: newlines and indentation. */
static const char calendar_schema[] =
	"{\n"
	"  \"type\": \"object\",\n"
	"  \"description\": \"Create a calendar event\",\n"
	"  \"properties\": {\n"
	"    \"title\": {\n"
	"      \"type\": \"string\",\n"
	"      \"minLength\": 1,\n"
	"      \"maxLength\": 200,\n"
	"      \"description\": \"Event title\"\n"
	"    },\n"
	"    \"start\": {\n"
	"      \"type\": \"string\",\n"
	"      \"format\": \"date-time\"\n"
	"    },\n"
	"    \"duration_minutes\": {\n"
	"      \"type\": \"integer\",\n"
	"      \"minimum\": 5,\n"
	"      \"maximum\": 1440\n"
	"    },\n"
	"    \"location\": {\n"
	"      \"anyOf\": [\n"
	"        {\n"
	"          \"type\": \"string\"\n"
	"        },\n"
	"        {\n"
	"          \"type\": \"null\"\n"
	"        }\n"
	"      ]\n"
	"    },\n"
	"    \"priority\": {\n"
	"      \"type\": \"string\",\n"
	"      \"enum\": [\n"
	"        \"low\",\n"
	"        \"normal\",\n"
	"        \"high\"\n"
	"      ]\n"
	"    },\n"
	"    \"attendees\": {\n"
	"      \"type\": \"array\",\n"
	"      \"minItems\": 1,\n"
	"      \"maxItems\": 50,\n"
	"      \"items\": {\n"
	"        \"type\": \"object\",\n"
	"        \"properties\": {\n"
	"          \"email\": {\n"
	"            \"type\": \"string\",\n"
	"            \"pattern\": \"^[^@\\\\s]+@[^@\\\\s]+\\\\.[a-z]{2,}$\"\n"
	"          },\n"
	"          \"name\": {\n"
	"            \"type\": \"string\"\n"
	"          },\n"
	"          \"optional\": {\n"
	"            \"type\": \"boolean\"\n"
	"          }\n"
	"        },\n"
	"        \"required\": [\n"
	"          \"email\",\n"
	"          \"name\",\n"
	"          \"optional\"\n"
	"        ],\n"
	"        \"additionalProperties\": false\n"
	"      }\n"
	"    },\n"
	"    \"reminders\": {\n"
	"      \"type\": \"array\",\n"
	"      \"items\": {\n"
	"        \"$ref\": \"#/$defs/reminder\"\n"
	"      }\n"
	"    },\n"
	"    \"kind\": {\n"
	"      \"const\": \"meeting\"\n"
	"    }\n"
	"  },\n"
	"  \"required\": [\n"
	"    \"title\",\n"
	"    \"start\",\n"
	"    \"duration_minutes\",\n"
	"    \"location\",\n"
	"    \"priority\",\n"
	"    \"attendees\",\n"
	"    \"reminders\",\n"
	"    \"kind\"\n"
	"  ],\n"
	"  \"additionalProperties\": false,\n"
	"  \"$defs\": {\n"
	"    \"reminder\": {\n"
	"      \"type\": \"object\",\n"
	"      \"properties\": {\n"
	"        \"method\": {\n"
	"          \"type\": \"string\",\n"
	"          \"enum\": [\n"
	"            \"email\",\n"
	"            \"popup\"\n"
	"          ]\n"
	"        },\n"
	"        \"minutes\": {\n"
	"          \"type\": \"integer\",\n"
	"          \"minimum\": 0\n"
	"        }\n"
	"      },\n"
	"      \"required\": [\n"
	"        \"method\",\n"
	"        \"minutes\"\n"
	"      ],\n"
	"      \"additionalProperties\": false\n"
	"    }\n"
	"  }\n"
	"}\n";

/* ---- helpers ---- */

static const tgi_jv *parse_ok(tgi_jv_doc *d, const char *text, size_t len)
{
	char err[256];
	const tgi_jv *v = tgi_jv_parse(d, text, len, err, sizeof err);
	if (!v)
		fail_msg("parsing \"%.*s\" failed: %s", (int)(len > 200 ? 200 : len), text, err);
	return v;
}

#define PARSE(d, s) parse_ok((d), (s), strlen(s))

/* ours and jansson's agree on text: both ways through tgi_jv_equal, and
 * exactly (integer vs real, every double bit) through json_equal. */
static void agree(const char *name, const char *text, size_t len)
{
	tgi_jv_doc *d = tgi_jv_doc_new(16 * len + 4096), *d2 = tgi_jv_doc_new(16 * len + 4096);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	                       &je);
	if (!j)
		fail_msg("%s: jansson refuses it: %s", name, je.text);
	const tgi_jv *ours = parse_ok(d, text, len);
	const tgi_jv *theirs = tgi_jv_from_json(d2, j);
	assert_non_null(theirs);
	if (!tgi_jv_equal(ours, theirs) || !tgi_jv_equal(theirs, ours))
		fail_msg("%s: the parsers disagree", name);
	json_t *back = tgi_jv_to_json(ours);
	assert_non_null(back);
	if (!json_equal(back, j))
		fail_msg("%s: to_json differs from jansson's parse", name);
	json_decref(back);
	json_decref(j);
	tgi_jv_doc_free(d);
	tgi_jv_doc_free(d2);
}

#define AGREE(s) agree((s), (s), strlen(s))

static void want_string(const tgi_jv *v, const char *want, size_t n)
{
	assert_non_null(v);
	assert_int_equal(v->type, TGI_JV_STRING);
	assert_int_equal(v->n, n);
	assert_memory_equal(v->u.s, want, n);
	assert_int_equal(v->u.s[n], '\0');
}

/* ---- values ---- */

static void test_scalars(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	const tgi_jv *v;

	assert_int_equal(PARSE(d, "null")->type, TGI_JV_NULL);
	assert_int_equal(PARSE(d, "true")->type, TGI_JV_TRUE);
	assert_int_equal(PARSE(d, "false")->type, TGI_JV_FALSE);
	v = PARSE(d, " \t\r\n 42 \n");
	assert_int_equal(v->type, TGI_JV_INT);
	assert_int_equal(v->u.i, 42);
	v = PARSE(d, "-1.5");
	assert_int_equal(v->type, TGI_JV_REAL);
	assert_true(v->u.d == -1.5);
	want_string(PARSE(d, "\"\""), "", 0);
	want_string(PARSE(d, "\"hello\""), "hello", 5);
	v = PARSE(d, "[]");
	assert_int_equal(v->type, TGI_JV_ARRAY);
	assert_int_equal(v->n, 0);
	v = PARSE(d, "{ }");
	assert_int_equal(v->type, TGI_JV_OBJECT);
	assert_int_equal(v->n, 0);
	assert_null(tgi_jv_get(v, "a", 1));
	tgi_jv_doc_free(d);
	tgi_jv_doc_free(NULL);
}

static void test_containers(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	const tgi_jv *v = PARSE(d, "[1, [2, [3]], {\"b\": {\"c\": []}, \"a\": \"x\"}, {}, null]");
	assert_int_equal(v->type, TGI_JV_ARRAY);
	assert_int_equal(v->n, 5);
	assert_int_equal(v->u.items[0].u.i, 1);
	const tgi_jv *inner = &v->u.items[1];
	assert_int_equal(inner->n, 2);
	assert_int_equal(inner->u.items[1].type, TGI_JV_ARRAY);
	assert_int_equal(inner->u.items[1].u.items[0].u.i, 3);

	const tgi_jv *o = &v->u.items[2];
	assert_int_equal(o->type, TGI_JV_OBJECT);
	assert_int_equal(o->n, 2);
	/* document order, keys terminated, pad zero */
	assert_string_equal(o->u.members[0].key, "b");
	assert_int_equal(o->u.members[0].klen, 1);
	assert_int_equal(o->u.members[0].pad, 0);
	assert_string_equal(o->u.members[1].key, "a");
	want_string(tgi_jv_get(o, "a", 1), "x", 1);
	const tgi_jv *c = tgi_jv_get(tgi_jv_get(o, "b", 1), "c", 1);
	assert_non_null(c);
	assert_int_equal(c->type, TGI_JV_ARRAY);
	assert_int_equal(c->n, 0);
	assert_null(tgi_jv_get(o, "ab", 2));
	assert_null(tgi_jv_get(o, "a", 0));
	assert_null(tgi_jv_get(v, "a", 1)); /* not an object */
	assert_null(tgi_jv_get(NULL, "a", 1));
	assert_int_equal(v->u.items[3].n, 0);
	assert_int_equal(v->u.items[4].type, TGI_JV_NULL);
	tgi_jv_doc_free(d);
}

static void test_escapes(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	want_string(PARSE(d, "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), "\"\\/\b\f\n\r\t", 8);
	/* one, two, three and four UTF-8 bytes; upper-case hex; a surrogate pair */
	want_string(PARSE(d, "\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\uD834\\uDD1E\""),
	              "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf0\x9d\x84\x9e", 14);
	/* NUL inside: n is authoritative and a terminator still follows */
	want_string(PARSE(d, "\"a\\u0000b\""), "a\0b", 3);
	want_string(PARSE(d, "\"\\u0000\""), "\0", 1);
	/* raw UTF-8 and DEL pass through unchanged */
	want_string(PARSE(d, "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\""),
	              "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \x7f", 17);
	/* the largest code point, raw and escaped */
	want_string(PARSE(d, "\"\xf4\x8f\xbf\xbf\\udbff\\udfff\""),
	              "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf", 8);
	/* a NUL in a string value, not a key, is fine inside objects too */
	const tgi_jv *o = PARSE(d, "{\"k\":\"\\u0000\"}");
	want_string(tgi_jv_get(o, "k", 1), "\0", 1);
	tgi_jv_doc_free(d);
}

/* Every string length around the 16-byte chunks, with and without an
 * escape or a non-ASCII character at each position, at the end of the
 * input and in the middle of it. */
static void test_string_boundaries(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char text[256], want[128];
	for (int len = 0; len < 70; len++) {
		for (int special = -1; special < len; special++) {
			for (int kind = 0; kind < 2; kind++) {
				size_t t = 0, w = 0;
				text[t++] = '"';
				for (int i = 0; i < len; i++) {
					if (i == special && kind == 0) {
						memcpy(text + t, "\\n", 2);
						t += 2;
						want[w++] = '\n';
					} else if (i == special) {
						memcpy(text + t, "\xc3\xa9", 2);
						t += 2;
						memcpy(want + w, "\xc3\xa9", 2);
						w += 2;
					} else {
						text[t++] = (char)('a' + i % 26);
						want[w++] = (char)('a' + i % 26);
					}
				}
				text[t++] = '"';
				want_string(parse_ok(d, text, t), want, w);
				/* inside an array with more input after it */
				char arr[300];
				int n = snprintf(arr, sizeof arr, "[%.*s, %.*s, 1234567890123456789]",
				                 (int)t, text, (int)t, text);
				const tgi_jv *a = parse_ok(d, arr, (size_t)n);
				assert_int_equal(a->n, 3);
				want_string(&a->u.items[0], want, w);
				want_string(&a->u.items[1], want, w);
			}
		}
		tgi_jv_doc_reset(d);
	}
	tgi_jv_doc_free(d);
}

static void test_long_strings(void **state)
{
	size_t n = 100000;
	char *text = malloc(n + 3);
	text[0] = '"';
	for (size_t i = 0; i < n; i++)
		text[i + 1] = (char)('A' + i % 23);
	text[n + 1] = '"';
	text[n + 2] = '\0';
	tgi_jv_doc *d = tgi_jv_doc_new(1 << 20);
	const tgi_jv *v = parse_ok(d, text, n + 2);
	want_string(v, text + 1, n);
	/* with an escape near the end, the decoder path */
	text[n - 5] = '\\';
	text[n - 4] = 't';
	v = parse_ok(d, text, n + 2);
	assert_int_equal(v->n, n - 1);
	assert_int_equal(v->u.s[n - 6], '\t');
	assert_int_equal(v->u.s[n - 1], '\0');
	tgi_jv_doc_free(d);
	free(text);
}

/* ---- numbers ---- */

static void expect_int(tgi_jv_doc *d, const char *text, int64_t want)
{
	const tgi_jv *v = PARSE(d, text);
	if (v->type != TGI_JV_INT || v->u.i != want)
		fail_msg("%s: want INT %lld, got type %u", text, (long long)want, v->type);
}

/* REAL, bit for bit what strtod says (so -0.0 and 0.0 differ here). */
static void expect_real(tgi_jv_doc *d, const char *text)
{
	const tgi_jv *v = PARSE(d, text);
	double want = strtod(text, NULL);
	if (v->type != TGI_JV_REAL || memcmp(&v->u.d, &want, sizeof want) != 0)
		fail_msg("%s: want REAL %.17g, got type %u value %.17g", text, want, v->type,
		         v->type == TGI_JV_REAL ? v->u.d : 0.0);
}

static void test_numbers(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	expect_int(d, "0", 0);
	expect_int(d, "-0", 0);
	expect_int(d, "7", 7);
	expect_int(d, "-7", -7);
	expect_int(d, "1234567890123456789", 1234567890123456789LL);
	expect_int(d, "9223372036854775807", INT64_MAX);
	expect_int(d, "-9223372036854775807", -INT64_MAX);
	expect_int(d, "-9223372036854775808", INT64_MIN);
	expect_int(d, "9007199254740993", 9007199254740993LL); /* 2^53 + 1: no double in the way */

	/* past int64: REAL, correctly rounded */
	expect_real(d, "9223372036854775808");
	expect_real(d, "-9223372036854775809");
	expect_real(d, "18446744073709551616");
	expect_real(d, "123456789012345678901234567890");
	/* fraction or exponent: REAL even when integral */
	expect_real(d, "1.0");
	expect_real(d, "1e2");
	expect_real(d, "1E+2");
	expect_real(d, "100e-2");
	expect_real(d, "-0.0");
	expect_real(d, "0e0");
	expect_real(d, "-0e-5");
	expect_real(d, "0.1");
	expect_real(d, "0.30000000000000004");
	expect_real(d, "3.141592653589793238462643383279");
	expect_real(d, "1.7976931348623157e308");
	expect_real(d, "2.2250738585072011e-308");
	expect_real(d, "2.2250738585072012e-308");
	expect_real(d, "4.9e-324");
	expect_real(d, "1e-400"); /* underflow is zero, not an error */
	expect_real(d, "0.000000000000000000000000000001");
	expect_real(d, "9007199254740993.0");
	expect_real(d, "9007199254740993e0");
	expect_real(d, "1e22");
	expect_real(d, "1e23");
	expect_real(d, "123456789e-22");
	expect_real(d, "8.98846567431158e307");
	expect_real(d, "0e99999999999999999999");
	expect_real(d, "1.00000000000000000000000000000000000000000000001");

	const tgi_jv *v = PARSE(d, "1.0");
	assert_true(v->u.d == 1.0);
	v = PARSE(d, "-0.0");
	assert_true(signbit(v->u.d));
	tgi_jv_doc_free(d);
}

/* A deterministic pseudo-random number below n. */
static int rnd(uint64_t *seed, int n)
{
	*seed = *seed * 6364136223846793005u + 1442695040888963407u;
	return (int)((*seed >> 33) % (uint64_t)n);
}

/* Random numbers of every shape: INT when strtoll takes them whole, else
 * REAL and bit-exact with strtod, or refused when strtod overflows. */
static void test_numbers_vs_strtod(void **state)
{
	static const char *const exps[] = { "e", "E", "e+", "E-", "e-" };
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	uint64_t seed = 0x9e3779b97f4a7c15u;
	char text[96], err[256];
	for (int round = 0; round < 30000; round++) {
		size_t t = 0;
		if (round % 1000 == 0)
			tgi_jv_doc_reset(d);
		if (rnd(&seed, 2))
			text[t++] = '-';
		int ndig = 1 + rnd(&seed, 22);
		text[t++] = (char)(ndig == 1 ? '0' + rnd(&seed, 10) : '1' + rnd(&seed, 9));
		for (int i = 1; i < ndig; i++)
			text[t++] = (char)('0' + rnd(&seed, 10));
		int frac = rnd(&seed, 3) ? rnd(&seed, 22) : 0;
		if (frac) {
			text[t++] = '.';
			for (int i = 0; i < frac; i++)
				text[t++] = (char)('0' + rnd(&seed, 10));
		}
		int has_exp = rnd(&seed, 3) == 0;
		if (has_exp) {
			const char *e = exps[rnd(&seed, 5)];
			t += (size_t)snprintf(text + t, sizeof text - t, "%s%d", e, rnd(&seed, 340));
		}
		text[t] = '\0';

		const tgi_jv *v = tgi_jv_parse(d, text, t, err, sizeof err);
		errno = 0;
		long long ll = strtoll(text, NULL, 10);
		if (!frac && !has_exp && errno == 0) {
			if (!v || v->type != TGI_JV_INT || v->u.i != ll)
				fail_msg("%s: want INT %lld", text, ll);
			continue;
		}
		errno = 0;
		double want = strtod(text, NULL);
		if (errno == ERANGE && isinf(want)) {
			if (v || !strstr(err, "too large for a double"))
				fail_msg("%s: want refused as too large, got %s", text, v ? "a value" : err);
			continue;
		}
		if (!v || v->type != TGI_JV_REAL || memcmp(&v->u.d, &want, sizeof want) != 0)
			fail_msg("%s: want REAL %.17g, got %s", text, want, v ? "another value" : err);
	}
	tgi_jv_doc_free(d);
}

/* Numbers that take the strtod path must not depend on the locale. */
static void test_numbers_locale(void **state)
{
	const char *old = setlocale(LC_NUMERIC, NULL);
	char saved[64];
	snprintf(saved, sizeof saved, "%s", old ? old : "C");
	if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
		skip(); /* no locale with a decimal comma installed */
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	const tgi_jv *v = PARSE(d, "1.25e300");
	assert_int_equal(v->type, TGI_JV_REAL);
	setlocale(LC_NUMERIC, saved);
	assert_true(v->u.d == 1.25e300);
	tgi_jv_doc_free(d);
}

/* ---- errors ---- */

typedef struct bad_case {
	const char *text;
	size_t      len;
	size_t      at;
	const char *msg; /* the sentence after "at byte N: " starts with this */
} bad_case;

#define B(text, at, msg) { text, sizeof(text) - 1, at, msg }

static const bad_case bad[] = {
	/* empty and whitespace */
	B("", 0, "the input is empty"),
	B(" \t\r\n", 4, "the input is empty (only whitespace)"),
	B("\x0c[]", 0, "expected a value, found byte 0x0c"),           /* form feed is not JSON space */
	B("\xef\xbb\xbf{}", 0, "expected a value, found byte 0xef"),   /* nor is a BOM */
	B("\xc2\xa0" "1", 0, "expected a value, found byte 0xc2"),     /* nor NBSP */
	/* trailing commas, missing separators */
	B("[1,2,]", 5, "trailing comma before ']'"),
	B("[\"a\",\n]", 6, "trailing comma before ']'"),
	B("{\"a\":1,}", 7, "trailing comma before '}'"),
	B("{\"a\":1 , }", 9, "trailing comma before '}'"),
	B("[,1]", 1, "expected a value, found ','"),
	B("[1 2]", 3, "expected ',' or ']' after an array item, found '2'"),
	B("[1", 2, "expected ',' or ']' after an array item, found the end of the input"),
	B("[", 1, "expected a value, found the end of the input"),
	B("[1,", 3, "expected a value, found the end of the input"),
	B("{\"a\" 1}", 5, "expected ':' after the key, found '1'"),
	B("{\"a\":1 \"b\":2}", 7, "expected ',' or '}' after an object member, found '\"'"),
	B("{\"a\":}", 5, "expected a value, found '}'"),
	B("{1:2}", 1, "expected a string key, found '1'"),
	B("{\"a\":1,,}", 7, "expected a string key, found ','"),
	B("{", 1, "expected a string key, found the end of the input"),
	/* single quotes */
	B("['a']", 1, "strings take double quotes, not single quotes"),
	B("{'a':1}", 1, "strings take double quotes, not single quotes"),
	/* strings */
	B("\"abc", 0, "unterminated string"),
	B("[\"abc\\\"]", 1, "unterminated string"),
	B("\"\\", 0, "unterminated string"),
	B("\"a\tb\"", 2, "control character 0x09 in a string must be escaped"),
	B("\"a\nb\"", 2, "control character 0x0a in a string must be escaped"),
	B("\"\x00\"", 1, "control character 0x00 in a string must be escaped"),
	B("\"\x1f\"", 1, "control character 0x1f in a string must be escaped"),
	B("\"\\x\"", 1, "invalid escape: a backslash followed by 'x'"),
	B("\"\\'\"", 1, "invalid escape: a backslash followed by a single quote"),
	B("\"\\U0041\"", 1, "invalid escape: a backslash followed by 'U'"),
	B("\"\\u12\"", 1, "invalid escape: \"\\u\" takes four hex digits"),
	B("\"\\u00g0\"", 1, "invalid escape: \"\\u\" takes four hex digits"),
	B("\"\\u00", 1, "invalid escape: \"\\u\" takes four hex digits"),
	/* surrogates */
	B("\"\\ud800\"", 1, "lone high surrogate \"\\ud800\" (a low surrogate must follow)"),
	B("\"x\\uDBFF\"", 2, "lone high surrogate \"\\udbff\""),
	B("\"\\ud800\\u0041\"", 1, "lone high surrogate \"\\ud800\""),
	B("\"\\ud800\\ud800\"", 1, "lone high surrogate \"\\ud800\""),
	B("\"\\ud800x\"", 1, "lone high surrogate \"\\ud800\""),
	B("\"\\udc00\"", 1, "lone low surrogate \"\\udc00\" (no high surrogate before it)"),
	B("\"\\ud83d\\ude00\\ude00\"", 13, "lone low surrogate \"\\ude00\""),
	/* invalid UTF-8 */
	B("\"\xff\"", 1, "invalid UTF-8 in a string"),
	B("\"ok\x80\"", 3, "invalid UTF-8 in a string"),
	B("\"\xc3\x28\"", 1, "invalid UTF-8 in a string"),
	B("\"\xc0\xaf\"", 1, "invalid UTF-8 in a string"),           /* overlong '/' */
	B("\"\xe0\x80\xaf\"", 1, "invalid UTF-8 in a string"),       /* overlong, 3 bytes */
	B("\"\xed\xa0\x80\"", 1, "invalid UTF-8 in a string"),       /* an encoded surrogate */
	B("\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8 in a string"),   /* above U+10FFFF */
	B("\"\xe2\x82\"", 1, "invalid UTF-8 in a string"),           /* cut short */
	B("\"0123456789abcdef\xe2\"", 17, "invalid UTF-8 in a string"),
	/* numbers */
	B("01", 0, "numbers may not have leading zeros"),
	B("-01", 1, "numbers may not have leading zeros"),
	B("[00]", 1, "numbers may not have leading zeros"),
	B("+1", 0, "a number starts with a digit or '-', not '+'"),
	B(".5", 0, "a number starts with a digit or '-', not '.'"),
	B("-", 1, "expected a digit after '-', found the end of the input"),
	B("-a", 1, "expected a digit after '-', found 'a'"),
	B("1.", 2, "expected a digit after the decimal point, found the end of the input"),
	B("1.e5", 2, "expected a digit after the decimal point, found 'e'"),
	B("1e", 2, "expected a digit in the exponent, found the end of the input"),
	B("1e+", 3, "expected a digit in the exponent, found the end of the input"),
	B("0x10", 1, "unexpected 'x' after the value"),
	B("1.5.2", 3, "unexpected '.' after the value"),
	B("NaN", 0, "NaN and Infinity are not JSON numbers"),
	B("[Infinity]", 1, "NaN and Infinity are not JSON numbers"),
	B("-Infinity", 0, "NaN and Infinity are not JSON numbers"),
	B("1e400", 0, "the number is too large for a double"),
	B("[-1.5e99999]", 1, "the number is too large for a double"),
	/* literals */
	B("tru", 0, "invalid literal (expected \"true\")"),
	B("nul", 0, "invalid literal (expected \"null\")"),
	B("fals", 0, "invalid literal (expected \"false\")"),
	B("True", 0, "expected a value, found 'T'"),
	B("[nil]", 1, "invalid literal (expected \"null\")"),
	/* trailing garbage */
	B("[1] x", 4, "unexpected 'x' after the value"),
	B("{} {}", 3, "unexpected '{' after the value"),
	B("[1]]", 3, "unexpected ']' after the value"),
	B("[1]\x00", 3, "unexpected byte 0x00 after the value"),
	B("\"a\"\"b\"", 3, "unexpected '\"' after the value"),
	B("truex", 4, "unexpected 'x' after the value"),
	/* duplicate keys, compared after unescaping */
	B("{\"a\":1,\"a\":2}", 7, "duplicate key \"a\""),
	B("{\"a\":1,\"\\u0061\":2}", 7, "duplicate key \"a\""),
	B("{\"\":1,\"b\":{},\"\":2}", 13, "duplicate key \"\""),
	B("[{\"x\":{\"y\":1,\"y\":1}}]", 13, "duplicate key \"y\""),
	/* keys never hold NUL */
	B("{\"a\\u0000b\":1}", 1, "keys may not hold \"\\u0000\" (NUL)"),
};

static void test_errors(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char err[256], want[300];
	assert_true(TGI_ARRAY_LEN(bad) >= 40);
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad); i++) {
		const bad_case *c = &bad[i];
		memset(err, 'x', sizeof err);
		const tgi_jv *v = tgi_jv_parse(d, c->text, c->len, err, sizeof err);
		if (v)
			fail_msg("case %zu (%s): accepted; want \"%s\"", i, c->text, c->msg);
		int n = snprintf(want, sizeof want, "at byte %zu: %s", c->at, c->msg);
		if (strncmp(err, want, (size_t)n) != 0)
			fail_msg("case %zu (%s): got \"%s\"; want \"%s\"", i, c->text, err, want);
		for (const char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20)
				fail_msg("case %zu: control character in \"%s\"", i, err);
		/* the doc stays usable after a failure */
		tgi_jv_doc_reset(d);
	}
	/* no error buffer, or a tiny one */
	assert_null(tgi_jv_parse(d, "[1,]", 4, NULL, 0));
	err[0] = 'x';
	assert_null(tgi_jv_parse(d, "[1,]", 4, err, 1));
	assert_int_equal(err[0], '\0');
	assert_null(tgi_jv_parse(d, "[1,]", 4, err, 8));
	assert_string_equal(err, "at byte");
	assert_null(tgi_jv_parse(d, NULL, 0, err, sizeof err));
	assert_string_equal(err, "at byte 0: the input is empty");
	/* success clears err */
	assert_non_null(tgi_jv_parse(d, "1", 1, err, sizeof err));
	assert_string_equal(err, "");
	tgi_jv_doc_free(d);
}

static char *nested(const char *open, const char *leaf, const char *close, int depth)
{
	size_t lo = strlen(open), ll = strlen(leaf), lc = strlen(close);
	char *s = malloc((size_t)depth * (lo + lc) + ll + 1), *p = s;
	for (int i = 0; i < depth; i++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, leaf, ll);
	p += ll;
	for (int i = 0; i < depth; i++, p += lc)
		memcpy(p, close, lc);
	*p = '\0';
	return s;
}

static void test_depth(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char err[256];
	char *ok = nested("[", "1", "]", TGI_JV_MAX_DEPTH);
	char *deep = nested("[", "1", "]", TGI_JV_MAX_DEPTH + 1);
	const tgi_jv *v = parse_ok(d, ok, strlen(ok));
	for (int i = 1; i < TGI_JV_MAX_DEPTH; i++)
		v = &v->u.items[0];
	assert_int_equal(v->u.items[0].u.i, 1);
	assert_null(tgi_jv_parse(d, deep, strlen(deep), err, sizeof err));
	assert_string_equal(err, "at byte 128: nesting deeper than 128");
	free(ok);
	free(deep);

	ok = nested("{\"a\":", "[]", "}", TGI_JV_MAX_DEPTH - 1);
	deep = nested("{\"a\":", "[]", "}", TGI_JV_MAX_DEPTH);
	parse_ok(d, ok, strlen(ok));
	assert_null(tgi_jv_parse(d, deep, strlen(deep), err, sizeof err));
	assert_string_equal(err, "at byte 640: nesting deeper than 128");
	free(ok);
	free(deep);

	/* far deeper than the cap: refused quickly, no stack overflow */
	deep = nested("[", "", "]", 100000);
	assert_null(tgi_jv_parse(d, deep, strlen(deep), err, sizeof err));
	assert_string_equal(err, "at byte 128: nesting deeper than 128");
	free(deep);
	tgi_jv_doc_free(d);
}

/* ---- objects ---- */

/* {"key0":0,"key1":1,...}, with keys[i] as each key. */
static char *object_text(int n, const char *const *keys)
{
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	tgi_buf_puts(&b, "{");
	for (int i = 0; i < n; i++) {
		if (keys && keys[i])
			tgi_buf_printf(&b, "%s\"%s\":%d", i ? "," : "", keys[i], i);
		else
			tgi_buf_printf(&b, "%s\"key%d\":%d", i ? "," : "", i, i);
	}
	tgi_buf_puts(&b, "}");
	return tgi_buf_steal(&b);
}

static void test_get_sizes(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	static const int sizes[] = { 1, 2, 15, 16, 17, 18, 31, 100, 1000, 5000 };
	char key[32];
	for (size_t s = 0; s < TGI_ARRAY_LEN(sizes); s++) {
		int n = sizes[s];
		char *text = object_text(n, NULL);
		const tgi_jv *o = parse_ok(d, text, strlen(text));
		assert_int_equal(o->n, n);
		for (int i = 0; i < n; i++) {
			int k = snprintf(key, sizeof key, "key%d", i);
			const tgi_jv *v = tgi_jv_get(o, key, (size_t)k);
			if (!v || v->type != TGI_JV_INT || v->u.i != i)
				fail_msg("object of %d: \"%s\" not found", n, key);
			assert_string_equal(o->u.members[i].key, key); /* document order kept */
		}
		int k = snprintf(key, sizeof key, "key%d", n);
		assert_null(tgi_jv_get(o, key, (size_t)k));
		assert_null(tgi_jv_get(o, "key", 3));
		assert_null(tgi_jv_get(o, "", 0));
		if (n > 1) /* only klen bytes of the key count: this is "key1" */
			assert_non_null(tgi_jv_get(o, "key10", 4));
		else
			assert_null(tgi_jv_get(o, "key10", 4));
		free(text);
		tgi_jv_doc_reset(d);
	}
	tgi_jv_doc_free(d);
}

/* Keys that share their first 8 bytes, non-ASCII keys and keys of every
 * short length, in objects large enough to be indexed. */
static void test_get_mixed_keys(void **state)
{
	static const struct { const char *before, *after; } patterns[] = {
		{ "property_name_", "" }, { "\xc3\xa9t\xc3\xa9_", "\xe2\x82\xac" }, { "", "" },
		{ "\x7f", "" },
	};
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char names[64][32];
	const char *keys[64];
	for (size_t p = 0; p < TGI_ARRAY_LEN(patterns); p++) {
		for (int i = 0; i < 64; i++) {
			if (i < 12) { /* "", "z", "zz", ... */
				memset(names[i], 'z', (size_t)i);
				names[i][i] = '\0';
			} else {
				snprintf(names[i], sizeof names[i], "%s%d%s", patterns[p].before, i,
				         patterns[p].after);
			}
			keys[i] = names[i];
		}
		char *text = object_text(64, keys);
		const tgi_jv *o = parse_ok(d, text, strlen(text));
		for (int i = 0; i < 64; i++) {
			const tgi_jv *v = tgi_jv_get(o, names[i], strlen(names[i]));
			if (!v || v->u.i != i)
				fail_msg("\"%s\" not found", names[i]);
		}
		assert_null(tgi_jv_get(o, "property_name_", 14));
		assert_null(tgi_jv_get(o, "property_name_64", 16));
		assert_null(tgi_jv_get(o, "zzzzzzzzzzzz", 12));
		assert_null(tgi_jv_get(o, "\xc3\xa9t\xc3\xa9_1", 8));
		free(text);
	}
	tgi_jv_doc_free(d);
}

static void test_duplicates_large(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	char err[256], want[64], name[40][16];
	const char *keys[40];
	for (int i = 0; i < 40; i++) {
		snprintf(name[i], sizeof name[i], "k%d", i);
		keys[i] = name[i];
	}
	/* two duplicates past the 16th member: the earlier one is reported */
	keys[30] = "k3";
	keys[20] = "k7";
	char *text = object_text(40, keys);
	assert_null(tgi_jv_parse(d, text, strlen(text), err, sizeof err));
	snprintf(want, sizeof want, "at byte %zu: duplicate key \"k7\"",
	         (size_t)(strstr(strstr(text, "\"k7\"") + 1, "\"k7\"") - text));
	assert_string_equal(err, want);
	free(text);

	/* a duplicate among the first members of a large object */
	keys[30] = name[30];
	keys[20] = name[20];
	keys[5] = "k2";
	text = object_text(40, keys);
	assert_null(tgi_jv_parse(d, text, strlen(text), err, sizeof err));
	snprintf(want, sizeof want, "at byte %zu: duplicate key \"k2\"",
	         (size_t)(strstr(strstr(text, "\"k2\"") + 1, "\"k2\"") - text));
	assert_string_equal(err, want);
	free(text);

	/* the 17th member repeating the 1st */
	keys[5] = name[5];
	keys[16] = "k0";
	text = object_text(17, keys);
	assert_null(tgi_jv_parse(d, text, strlen(text), err, sizeof err));
	snprintf(want, sizeof want, "at byte %zu: duplicate key \"k0\"",
	         (size_t)(strstr(text, ",\"k0\"") + 1 - text));
	assert_string_equal(err, want);
	free(text);

	/* same length, same first byte, different keys: fine */
	keys[16] = "k0x";
	text = object_text(17, keys);
	assert_non_null(tgi_jv_parse(d, text, strlen(text), err, sizeof err));
	free(text);

	/* a long duplicate key is shown cut short */
	char longkey[300];
	memset(longkey, 'z', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	tgi_buf b;
	tgi_buf_init(&b, 4096);
	tgi_buf_printf(&b, "{\"%s\":1,\"%s\":2}", longkey, longkey);
	assert_null(tgi_jv_parse(d, b.p, b.len, err, sizeof err));
	assert_true(strncmp(err, "at byte 305: duplicate key \"zzz", 31) == 0);
	assert_true(strlen(err) < 120);
	tgi_buf_free(&b);
	tgi_jv_doc_free(d);
}

/* ---- equality ---- */

static int eq(tgi_jv_doc *d, const char *a, const char *b)
{
	return tgi_jv_equal(PARSE(d, a), PARSE(d, b));
}

static void test_equal(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	assert_true(eq(d, "1", "1.0"));
	assert_true(eq(d, "1.0", "1"));
	assert_true(eq(d, "100", "1e2"));
	assert_true(eq(d, "0", "-0.0"));
	assert_true(eq(d, "-0.0", "0.0"));
	assert_true(eq(d, "-5", "-5.0"));
	assert_false(eq(d, "1", "1.5"));
	assert_false(eq(d, "1", "2"));
	/* exact, not through a double */
	assert_false(eq(d, "9007199254740993", "9007199254740992.0"));
	assert_true(eq(d, "9007199254740992", "9007199254740992.0"));
	assert_false(eq(d, "9223372036854775807", "9223372036854775808"));
	assert_true(eq(d, "-9223372036854775808", "-9223372036854775808.0"));

	assert_true(eq(d, "null", "null"));
	assert_true(eq(d, "true", "true"));
	assert_false(eq(d, "true", "false"));
	assert_false(eq(d, "null", "false"));
	assert_false(eq(d, "0", "false"));
	assert_false(eq(d, "\"1\"", "1"));

	assert_true(eq(d, "\"a\\u0000b\"", "\"a\\u0000b\""));
	assert_false(eq(d, "\"a\\u0000b\"", "\"a\\u0000c\""));
	assert_false(eq(d, "\"a\"", "\"a\\u0000\""));
	assert_true(eq(d, "\"\\u00e9\"", "\"\xc3\xa9\""));

	assert_true(eq(d, "[1,[2,{}]]", "[1.0,[2,{}]]"));
	assert_false(eq(d, "[1,2]", "[2,1]"));
	assert_false(eq(d, "[1,2]", "[1,2,3]"));
	assert_false(eq(d, "[]", "{}"));

	assert_true(eq(d, "{\"a\":1,\"b\":[1,2]}", "{\"b\":[1,2.0],\"a\":1.0}"));
	assert_false(eq(d, "{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":2}"));
	assert_false(eq(d, "{\"a\":1,\"b\":2}", "{\"a\":1}"));
	assert_false(eq(d, "{\"a\":1}", "{\"a\":1,\"b\":2}"));
	assert_false(eq(d, "{\"a\":{\"x\":1}}", "{\"a\":{\"x\":2}}"));

	/* large objects, reversed */
	char *fwd = object_text(300, NULL);
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	tgi_buf_puts(&b, "{");
	for (int i = 299; i >= 0; i--)
		tgi_buf_printf(&b, "\"key%d\":%d.0%s", i, i, i ? "," : "}");
	assert_true(eq(d, fwd, b.p));
	b.p[b.len - 4] = '1'; /* "key0":0.0 becomes 1.0 */
	assert_false(eq(d, fwd, b.p));
	free(fwd);
	tgi_buf_free(&b);

	assert_true(tgi_jv_equal(NULL, NULL));
	assert_false(tgi_jv_equal(NULL, PARSE(d, "null")));
	assert_false(tgi_jv_equal(PARSE(d, "null"), NULL));
	tgi_jv_doc_free(d);
}

static void test_type_names(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	static const struct { const char *text, *name; } cases[] = {
		{ "null", "null" }, { "true", "boolean" }, { "false", "boolean" },
		{ "1", "integer" }, { "1.0", "number" }, { "\"\"", "string" },
		{ "[]", "array" }, { "{}", "object" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		assert_string_equal(tgi_jv_type_name(PARSE(d, cases[i].text)), cases[i].name);
	assert_string_equal(tgi_jv_type_name(NULL), "unknown");
	tgi_jv_doc_free(d);
}

/* ---- the arena ---- */

static void test_arena_cap(void **state)
{
	char err[256];
	tgi_jv_doc *d = tgi_jv_doc_new(64);
	/* 3 items (48 bytes) and the root (16) fill 64 exactly */
	const tgi_jv *v = parse_ok(d, "[1,2,3]", 7);
	assert_int_equal(v->n, 3);
	tgi_jv_doc_reset(d);
	assert_null(tgi_jv_parse(d, "[1,2,3,4]", 9, err, sizeof err));
	assert_string_equal(err, "at byte 9: the document does not fit in the cap of 64 bytes");
	tgi_jv_doc_reset(d);
	assert_null(tgi_jv_parse(d, "[1,2,3,4,5,6]", 13, err, sizeof err));
	assert_true(strstr(err, "does not fit in the cap of 64 bytes") != NULL);
	/* input longer than the cap is refused before reading it */
	char big[65];
	memset(big, ' ', sizeof big);
	big[0] = '1';
	tgi_jv_doc_reset(d);
	assert_null(tgi_jv_parse(d, big, sizeof big, err, sizeof err));
	assert_string_equal(err, "at byte 0: the input is 65 bytes, over the cap of 64");
	/* a string bigger than what is left */
	tgi_jv_doc_reset(d);
	assert_null(tgi_jv_parse(d, "\"0123456789012345678901234567890123456789012345678901234567890\"",
	                         63, err, sizeof err));
	assert_true(strstr(err, "does not fit") != NULL);
	/* still usable */
	tgi_jv_doc_reset(d);
	want_string(parse_ok(d, "\"ok\"", 4), "ok", 2);
	tgi_jv_doc_free(d);

	/* a cap over several blocks: the arena grows, then stops at the cap */
	d = tgi_jv_doc_new(200000);
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	tgi_buf_puts(&b, "[0");
	for (int i = 1; i < 10000; i++)
		tgi_buf_puts(&b, ",0");
	tgi_buf_puts(&b, "]");
	v = parse_ok(d, b.p, b.len); /* 160 KB of items */
	assert_int_equal(v->n, 10000);
	tgi_jv_doc_reset(d);
	b.len -= 1;
	for (int i = 0; i < 3000; i++)
		tgi_buf_puts(&b, ",0");
	tgi_buf_puts(&b, "]");
	assert_null(tgi_jv_parse(d, b.p, b.len, err, sizeof err));
	assert_true(strstr(err, "does not fit in the cap of 200000 bytes") != NULL);
	tgi_buf_free(&b);
	tgi_jv_doc_free(d);
}

/* A document of about 60 KB: several arena blocks. */
static char *big_document(void)
{
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	tgi_buf_puts(&b, "[");
	for (int i = 0; i < 500; i++)
		tgi_buf_printf(&b, "%s{\"id\":%d,\"name\":\"item number %d\",\"tags\":[\"a\",\"b\"],"
		               "\"score\":%d.5,\"ok\":%s}", i ? "," : "", i, i, i, i % 2 ? "true" : "false");
	tgi_buf_puts(&b, "]");
	return tgi_buf_steal(&b);
}

static void test_reset_reuse(void **state)
{
	char *text = big_document();
	size_t len = strlen(text);
	tgi_jv_doc *d = tgi_jv_doc_new(1 << 20);
	const tgi_jv *first = parse_ok(d, text, len);
	assert_int_equal(first->n, 500);
	AGREE(text);
	/* after the first reset the blocks are merged: every parse from then
	 * on lands in the same memory */
	tgi_jv_doc_reset(d);
	const tgi_jv *second = parse_ok(d, text, len);
	tgi_jv_doc_reset(d);
	const tgi_jv *third = parse_ok(d, text, len);
	assert_ptr_equal(second, third);
	assert_ptr_equal(second->u.items, third->u.items);
	want_string(tgi_jv_get(&third->u.items[499], "name", 4), "item number 499", 15);

	/* several documents share an arena until it is reset */
	const tgi_jv *a = PARSE(d, "{\"a\":[1,2,3]}");
	const tgi_jv *b = PARSE(d, "\"second\"");
	assert_int_equal(tgi_jv_get(a, "a", 1)->u.items[2].u.i, 3);
	want_string(b, "second", 6);
	assert_int_equal(third->u.items[10].n, 5);
	free(text);
	tgi_jv_doc_free(d);
}

/* ---- jansson ---- */

static void test_calendar_fixtures(void **state)
{
	agree("calendar_event.valid.json", calendar_valid, sizeof calendar_valid - 1);
	agree("calendar_event.invalid.json", calendar_invalid, sizeof calendar_invalid - 1);
	agree("calendar_event.schema.json", calendar_schema, sizeof calendar_schema - 1);

	tgi_jv_doc *d = tgi_jv_doc_new(0);
	const tgi_jv *v = parse_ok(d, calendar_valid, sizeof calendar_valid - 1);
	assert_int_equal(v->n, 8);
	assert_int_equal(tgi_jv_get(v, "duration_minutes", 16)->u.i, 45);
	assert_int_equal(tgi_jv_get(v, "location", 8)->type, TGI_JV_NULL);
	const tgi_jv *att = tgi_jv_get(v, "attendees", 9);
	assert_int_equal(att->n, 3);
	want_string(tgi_jv_get(&att->u.items[1], "email", 5), "bob@example.org", 15);
	assert_int_equal(tgi_jv_get(&att->u.items[1], "optional", 8)->type, TGI_JV_TRUE);
	const tgi_jv *s = parse_ok(d, calendar_schema, sizeof calendar_schema - 1);
	const tgi_jv *pat = tgi_jv_get(tgi_jv_get(tgi_jv_get(tgi_jv_get(tgi_jv_get(
		tgi_jv_get(s, "properties", 10), "attendees", 9), "items", 5), "properties", 10),
		"email", 5), "pattern", 7);
	want_string(pat, "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$", 28);
	tgi_jv_doc_free(d);
}

static void test_jansson_conversions(void **state)
{
	tgi_jv_doc *d = tgi_jv_doc_new(0);
	AGREE("{\"b\":1,\"a\":[true,false,null,\"x\\u0000y\",1.5,-0.0,-9223372036854775808]}");
	AGREE("[\"\\ud83d\\ude00\",{\"\":{}},[],1e-300]");

	/* to_json keeps member order and NULs */
	json_t *j = tgi_jv_to_json(PARSE(d, "{\"b\":1,\"a\":\"x\\u0000y\"}"));
	char *s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "{\"b\":1,\"a\":\"x\\u0000y\"}");
	assert_int_equal(json_string_length(json_object_get(j, "a")), 3);
	free(s);
	json_decref(j);
	assert_null(tgi_jv_to_json(NULL));

	/* from_json: the depth cap, keys with NUL, NULL, the arena cap */
	json_t *deep = json_array(), *cur = deep;
	for (int i = 1; i < TGI_JV_MAX_DEPTH; i++) {
		json_t *next = json_array();
		json_array_append_new(cur, next);
		cur = next;
	}
	assert_non_null(tgi_jv_from_json(d, deep));
	json_array_append_new(cur, json_object());
	assert_null(tgi_jv_from_json(d, deep));
	json_decref(deep);

	json_t *o = json_object();
	json_object_setn_new(o, "a\0b", 3, json_true());
	assert_null(tgi_jv_from_json(d, o));
	json_decref(o);
	assert_null(tgi_jv_from_json(d, NULL));

	tgi_jv_doc *tiny = tgi_jv_doc_new(64);
	j = json_loads("[1,2,3,4,5,6,7,8]", 0, NULL);
	assert_null(tgi_jv_from_json(tiny, j));
	json_decref(j);
	tgi_jv_doc_free(tiny);

	/* a large object from jansson gets an index like a parsed one */
	char *text = object_text(200, NULL);
	j = json_loads(text, 0, NULL);
	const tgi_jv *v = tgi_jv_from_json(d, j);
	assert_int_equal(v->n, 200);
	assert_int_equal(tgi_jv_get(v, "key123", 6)->u.i, 123);
	assert_null(tgi_jv_get(v, "key200", 6));
	assert_true(tgi_jv_equal(v, parse_ok(d, text, strlen(text))));
	json_decref(j);
	free(text);
	tgi_jv_doc_free(d);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(FILE_MAX + 1);
	size_t n = fread(buf, 1, FILE_MAX + 1, f);
	fclose(f);
	if (n > FILE_MAX) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* bignum.json holds integers past int64: jansson refuses them, we read
 * them as REAL; check ours round-trips through jansson instead. */
static void agree_bignum(const char *path, const char *text, size_t len)
{
	tgi_jv_doc *d = tgi_jv_doc_new(16 * len + 4096);
	const tgi_jv *ours = parse_ok(d, text, len);
	json_t *j = tgi_jv_to_json(ours);
	assert_non_null(j);
	assert_true(tgi_jv_equal(ours, tgi_jv_from_json(d, j)));
	json_decref(j);
	tgi_jv_doc_free(d);
}

static int walk(const char *dir)
{
	DIR *dh = opendir(dir);
	int files = 0;
	if (!dh)
		return 0;
	struct dirent *e;
	while ((e = readdir(dh))) {
		char path[1024];
		size_t n = strlen(e->d_name), len;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0) {
			char *text = read_file(path, &len);
			if (!text)
				fail_msg("cannot read %s", path);
			json_error_t je;
			json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
			                       JSON_ALLOW_NUL, &je);
			if (!j && json_error_code(&je) == json_error_numeric_overflow)
				agree_bignum(path, text, len);
			else
				agree(path, text, len);
			json_decref(j);
			free(text);
			files++;
		} else {
			files += walk(path);
		}
	}
	closedir(dh);
	return files;
}

static void test_json_schema_suite(void **state)
{
	DIR *dh = opendir(SUITE);
	if (!dh)
		fail_msg("the JSON Schema Test Suite is missing: %s does not exist; install the "
		         "json-schema-test-suite package (scripts/install-deps)", SUITE);
	closedir(dh);
	assert_true(walk(SUITE) >= 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_string_boundaries),
		cmocka_unit_test(test_long_strings),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_numbers_vs_strtod),
		cmocka_unit_test(test_numbers_locale),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_get_sizes),
		cmocka_unit_test(test_get_mixed_keys),
		cmocka_unit_test(test_duplicates_large),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_arena_cap),
		cmocka_unit_test(test_reset_reuse),
		cmocka_unit_test(test_calendar_fixtures),
		cmocka_unit_test(test_jansson_conversions),
		cmocka_unit_test(test_json_schema_suite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
