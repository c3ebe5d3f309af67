/*
 * test_utf8.c — tgi_utf8_decode (src/util/util.c), the one UTF-8 decoder
 * the report's XML and the string helpers share: every valid length with
 * its code point (the first and last of each length), NUL as U+0000, and
 * each way a sequence is invalid (a stray continuation byte, C0/C1 and
 * F5..FF leads, overlong forms, surrogates, past U+10FFFF, a sequence cut
 * by n or by a byte that does not continue it, n = 0); and that
 * tgi_utf8_len agrees with it on every 1- and 2-byte input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "util/util.h"

static void valid(const char *s, size_t n, size_t want_len, uint32_t want_cp)
{
	uint32_t cp = 0xDEADBEEF;
	size_t len = tgi_utf8_decode(s, n, &cp);
	if (len != want_len || cp != want_cp)
		fail_msg("decode of %zu bytes: length %zu, U+%04X; want %zu, U+%04X", n, len,
		         (unsigned)cp, want_len, (unsigned)want_cp);
	assert_int_equal(tgi_utf8_decode(s, n, NULL), want_len); /* cp may be NULL */
}

static void invalid(const char *s, size_t n)
{
	uint32_t cp = 0xDEADBEEF;
	if (tgi_utf8_decode(s, n, &cp) != 0)
		fail_msg("decode of \"%.*s\" (%zu bytes) was not refused", (int)n, s, n);
	assert_true(cp == 0xDEADBEEF); /* untouched when invalid */
}

static void test_valid(void **state)
{
	(void)state;
	valid("A", 1, 1, 0x41);
	valid("", 1, 1, 0);                      /* a NUL byte is U+0000 */
	valid("\x7F", 1, 1, 0x7F);
	valid("\xC2\x80", 2, 2, 0x80);
	valid("\xDF\xBF", 2, 2, 0x7FF);
	valid("\xE0\xA0\x80", 3, 3, 0x800);
	valid("\xED\x9F\xBF", 3, 3, 0xD7FF);
	valid("\xEE\x80\x80", 3, 3, 0xE000);
	valid("\xEF\xBF\xBE", 3, 3, 0xFFFE);     /* a noncharacter is still UTF-8 */
	valid("\xEF\xBF\xBF", 3, 3, 0xFFFF);
	valid("\xF0\x90\x80\x80", 4, 4, 0x10000);
	valid("\xF4\x8F\xBF\xBF", 4, 4, 0x10FFFF);
	/* only the first sequence is read; more bytes after it do not matter */
	valid("\xC3\xA9tail", 6, 2, 0xE9);
	valid("ab", 2, 1, 'a');
}

static void test_invalid(void **state)
{
	(void)state;
	invalid("A", 0);                           /* nothing to read */
	invalid("\x80", 1);                        /* a stray continuation byte */
	invalid("\xBF", 1);
	invalid("\xC0\x80", 2);                    /* overlong leads */
	invalid("\xC1\xBF", 2);
	invalid("\xE0\x9F\xBF", 3);                /* overlong U+07FF */
	invalid("\xF0\x8F\xBF\xBF", 4);            /* overlong U+FFFF */
	invalid("\xED\xA0\x80", 3);                /* surrogates */
	invalid("\xED\xBF\xBF", 3);
	invalid("\xF4\x90\x80\x80", 4);            /* past U+10FFFF */
	invalid("\xF5\x80\x80\x80", 4);
	invalid("\xFF", 1);
	invalid("\xC3\xA9", 1);                    /* cut by n */
	invalid("\xE2\x82\xAC", 2);
	invalid("\xF0\x9F\x98\x80", 3);
	invalid("\xC3" "A", 2);                    /* cut by a byte that does not continue */
	invalid("\xE2\x82" "A", 3);
	invalid("\xF0\x9F\x98" "A", 4);
}

/* tgi_utf8_len counts a valid sequence once and an invalid byte once:
 * what stepping with tgi_utf8_decode gives, on every 1- and 2-byte input
 * and on a mixed text. */
static size_t count(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; c++) {
		size_t l = tgi_utf8_decode(s + i, n - i, NULL);
		i += l ? l : 1;
	}
	return c;
}

static void test_len_agrees(void **state)
{
	(void)state;
	for (unsigned a = 0; a < 256; a++) {
		char s[2] = {(char)a, 0};
		assert_int_equal(tgi_utf8_len(s, 1), count(s, 1));
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (char)b;
			assert_int_equal(tgi_utf8_len(s, 2), count(s, 2));
		}
	}
	const char *mixed = "a\xC3\xA9\xFF\xE2\x82\xAC\xED\xA0\x80\xF0\x9F\x98\x80z\xC3";
	assert_int_equal(tgi_utf8_len(mixed, strlen(mixed)), count(mixed, strlen(mixed)));
	assert_int_equal(count(mixed, strlen(mixed)), 10); /* ED A0 80: three */
}

/* tgi_utf8_bad counts what tgi_json_text replaces with U+FFFD: each byte
 * not part of a valid sequence, and NUL; and where the first one is. */
static void test_bad_counts_replacements(void **state)
{
	(void)state;
	const char *mixed = "a\xC3\xA9\xFF\xE2\x82\xAC\xED\xA0\x80\xF0\x9F\x98\x80z\xC3";
	size_t n = strlen(mixed), first = 99;
	assert_int_equal(tgi_utf8_bad(mixed, n, &first), 5);     /* FF, ED A0 80, the last C3 */
	assert_int_equal(first, 3);
	json_t *j = tgi_json_text(mixed, n);
	const char *t = json_string_value(j);
	size_t k = 0;
	for (const char *p = t; (p = strstr(p, "\xEF\xBF\xBD")); p += 3)
		k++;
	assert_int_equal(k, 5);
	json_decref(j);
	assert_int_equal(tgi_utf8_bad("a\0b", 3, NULL), 1);
	assert_int_equal(tgi_utf8_bad("caf\xC3\xA9", 5, NULL), 0);
	first = 7;
	assert_int_equal(tgi_utf8_bad("", 0, &first), 0);
	assert_int_equal(first, 7);                              /* untouched when none */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_len_agrees),
		cmocka_unit_test(test_bad_counts_replacements),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
