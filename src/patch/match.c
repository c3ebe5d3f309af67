/*
 * match.c — find a chunk's old lines in a file, as Codex does.
 *
 * Four passes, each over every candidate position, of decreasing
 * strictness: exact; trailing whitespace ignored; both ends trimmed; both
 * ends trimmed with typographic punctuation folded to ASCII (dashes U+2010
 * to U+2015 and U+2212 to '-', single quotes U+2018 to U+201B to '\'',
 * double quotes U+201C to U+201F to '"', odd spaces to ' ').  Whitespace is
 * Unicode's White_Space, as Rust's trim() reads it.
 *
 * Owns: comparing lines.  Must not: allocate.
 */
#include <string.h>

#include "patch/patch.h"

/* Bytes of the whitespace character starting at s (0 if none). */
static size_t space_at(const unsigned char *s, size_t n)
{
	if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
		return 1;
	if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
		return 2;
	if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
		return 3;                               /* U+1680 */
	if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
	    (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF) && s[2] >= 0x80)
		return 3;                               /* U+2000-200A, 2028, 2029, 202F */
	if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
		return 3;                               /* U+205F */
	if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;                               /* U+3000 */
	return 0;
}

/* Bytes of the whitespace character that ends s[0..n) (0 if none). */
static size_t space_before(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (space_at(s + n - k, k) == k)
			return k;
	return 0;
}

static tgi_patch_line trim_end(tgi_patch_line l)
{
	size_t k;
	while ((k = space_before((const unsigned char *)l.s, l.len)))
		l.len -= k;
	return l;
}

static tgi_patch_line trim(tgi_patch_line l)
{
	size_t k;
	l = trim_end(l);
	while ((k = space_at((const unsigned char *)l.s, l.len)))
		l.s += k, l.len -= k;
	return l;
}

/* Decode one UTF-8 character at s (n > 0 bytes) into *cp; returns its
 * length.  A byte that starts no valid sequence (truncated, overlong, a
 * surrogate, past U+10FFFF) stands for itself, set apart from every
 * character (0x110000 + byte). */
static size_t decode(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0];
	size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
	             (c & 0xF8) == 0xF0 ? 4 : 0;
	if (len == 0 || len > n)
		goto bad;
	if (len == 1) {
		*cp = c;
		return 1;
	}
	static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
	c &= 0x7Fu >> len;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			goto bad;
		c = (c << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates and values past U+10FFFF are not characters */
	if (c < least[len] || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		goto bad;
	*cp = c;
	return len;
bad:
	*cp = 0x110000u + s[0];
	return 1;
}

static unsigned fold(unsigned c)
{
	if ((c >= 0x2010 && c <= 0x2015) || c == 0x2212)
		return '-';
	if (c >= 0x2018 && c <= 0x201B)
		return '\'';
	if (c >= 0x201C && c <= 0x201F)
		return '"';
	if (c == 0xA0 || (c >= 0x2002 && c <= 0x200A) || c == 0x202F || c == 0x205F || c == 0x3000)
		return ' ';
	return c;
}

static int same(tgi_patch_line a, tgi_patch_line b)
{
	return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

static int same_folded(tgi_patch_line a, tgi_patch_line b)
{
	const unsigned char *p = (const unsigned char *)a.s, *q = (const unsigned char *)b.s;
	size_t i = 0, j = 0;

	while (i < a.len && j < b.len) {
		unsigned x, y;
		i += decode(p + i, a.len - i, &x);
		j += decode(q + j, b.len - j, &y);
		if (fold(x) != fold(y))
			return 0;
	}
	return i == a.len && j == b.len;
}

static int line_eq(int pass, tgi_patch_line a, tgi_patch_line b)
{
	switch (pass) {
	case 0:
		return same(a, b);
	case 1:
		return same(trim_end(a), trim_end(b));
	case 2:
		return same(trim(a), trim(b));
	default:
		return same_folded(trim(a), trim(b));
	}
}

long tgi_patch_seek(const tgi_patch_line *lines, size_t n, const tgi_patch_line *pattern,
                    size_t m, size_t start, int eof)
{
	if (m == 0)
		return (long)start;
	if (m > n)
		return -1;
	size_t from = eof ? n - m : start, last = n - m;
	if (from < start)
		return -1;      /* the end lies before the cursor: chunks would overlap */
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = from; i <= last; i++) {
			size_t k = 0;
			while (k < m && line_eq(pass, lines[i + k], pattern[k]))
				k++;
			if (k == m)
				return (long)i;
		}
	return -1;
}
