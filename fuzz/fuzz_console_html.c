/*
 * fuzz_console_html.c — the console's escaping (src/console/html.c) on
 * arbitrary bytes: what a tool's arguments, outputs or a session id may
 * hold reaches the pages only through these.
 *
 * Input: the text (cut at its first NUL, as a C string is).
 *
 * Invariants checked (a violation traps):
 *   - tgc_html_text writes valid UTF-8 with no < > " ' and no control
 *     byte but tab and newline, and every & starts one of its five
 *     entities;
 *   - tgc_html_url writes only unreserved bytes and %XX, and decoding it
 *     gives the text back;
 *   - tgc_args_summary is one line of at most TGC_SUMMARY_CPS code points
 *     (plus the ellipsis when cut), a prefix of the text with control
 *     characters as spaces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "console/console.h"
#include "util/util.h"
#include "fuzz.h"

/* Is s[0..n) valid UTF-8 (shortest forms, no surrogates, <= U+10FFFF)? */
static int utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], cp;
		size_t len;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		else
			return 0;
		if (n - i < len)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

static void check_text(const char *text)
{
	static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
	tgi_buf b;
	tgi_buf_init(&b, 1u << 24);
	tgc_html_text(&b, text);
	const char *out = b.p ? b.p : "";
	check(utf8_ok((const unsigned char *)out, b.len));
	for (size_t i = 0; i < b.len; i++) {
		unsigned char c = (unsigned char)out[i];
		check(c != '<' && c != '>' && c != '"' && c != '\'');
		check(c >= 0x20 || c == '\t' || c == '\n');
		check(c != 0x7f);
		if (c == '&') {
			int known = 0;
			for (size_t k = 0; k < TGI_ARRAY_LEN(entities); k++)
				known |= !strncmp(out + i, entities[k], strlen(entities[k]));
			check(known);
		}
	}
	tgi_buf_free(&b);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void check_url(const char *text)
{
	tgi_buf b;
	tgi_buf_init(&b, 1u << 24);
	tgc_html_url(&b, text);
	const char *out = b.p ? b.p : "";
	char *back = tgi_xmalloc(b.len + 1);
	size_t n = 0;
	for (size_t i = 0; i < b.len; i++) {
		char c = out[i];
		if (c == '%') {
			check(i + 2 < b.len);
			int hi = hexval(out[i + 1]), lo = hi >= 0 ? hexval(out[i + 2]) : -1;
			check(hi >= 0 && lo >= 0);
			back[n++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			check((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			      c == '-' || c == '.' || c == '_' || c == '~');
			back[n++] = c;
		}
	}
	back[n] = '\0';
	check(n == strlen(text) && !memcmp(back, text, n));
	free(back);
	tgi_buf_free(&b);
}

/* Does s[0..n) equal text's first n bytes with control characters as spaces? */
static int same_line(const char *s, const char *text, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char t = (unsigned char)text[i];
		if (s[i] != (t < 0x20 || t == 0x7f ? ' ' : (char)t))
			return 0;
	}
	return 1;
}

static void check_summary(const char *text)
{
	static const char ell[] = "\xe2\x80\xa6";
	char *s = tgc_args_summary(text);
	size_t n = strlen(s), len = strlen(text);
	if (!*text || !strcmp(text, "null")) {
		check(n == 0);
		free(s);
		return;
	}
	for (size_t i = 0; i < n; i++)
		check((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
	size_t body = n;
	if (!(n == len && same_line(s, text, n))) {
		/* cut: a prefix, then the ellipsis */
		check(n >= 3 && !strcmp(s + n - 3, ell));
		body = n - 3;
		check(body < len && same_line(s, text, body));
	}
	check(tgi_utf8_len(s, body) <= TGC_SUMMARY_CPS);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = tgi_strndup((const char *)data, strnlen((const char *)data, size));
	check_text(text);
	check_url(text);
	check_summary(text);
	free(text);
	return 0;
}
