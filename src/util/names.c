/*
 * names.c — file names as text (fs.h): the one escape by which a name
 * whose bytes are not UTF-8 is shown, and taken back.
 *
 * The text form of a name keeps its bytes where they are UTF-8 and writes
 * each byte that is not part of valid UTF-8 as \xHH (HH upper-case hex, 80
 * to FF).  A backslash that would read as such an escape -- followed by
 * 'x' and two hex digits, of either case, naming 5C or 80..FF -- is
 * written \x5C.  Every other backslash is itself.  So a name that is UTF-8
 * (nearly every one) is its own text form, every name has exactly one
 * text form, and the bytes of a text form are found by reading each
 * \xHH (HH 80..FF or 5C) as that byte.
 *
 * Taking a text back is strict: text that is not the text form of the
 * bytes it names (an escape of a byte that is UTF-8 where it stands, hex
 * in lower case, a \x5C where a backslash would do, raw bytes that are
 * not UTF-8) is refused with a sentence giving the form to use.  One
 * spelling per name keeps what policy matches on the text of a path the
 * same as what is opened.
 *
 * Owns: the escape.  Must not: know paths (a '/' is a byte like another:
 * it is never escaped, and an escape never yields one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util/fs.h"
#include "util/util.h"

#define SHOWN_MAX 160

/* The byte an escape at s[0..n) stands for (s[0] is '\\'), or -1 when
 * there is none there: \x, two hex digits, naming 5C or 80..FF. */
static int escape_at(const char *s, size_t n)
{
	if (n < 4 || s[1] != 'x')
		return -1;
	int hi = tgi_hex_value(s[2]), lo = tgi_hex_value(s[3]);
	if (hi < 0 || lo < 0)
		return -1;
	int v = hi * 16 + lo;
	return v == 0x5C || v >= 0x80 ? v : -1;
}

ssize_t tgi_name_text(const char *name, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t j = 0;

	if (!cap)
		return -1;
	if (n < cap && !memchr(name, '\\', n) && !tgi_utf8_bad(name, n, NULL)) {
		memcpy(out, name, n);           /* UTF-8 without a backslash: itself */
		out[n] = '\0';
		return (ssize_t)n;
	}
	for (size_t i = 0; i < n;) {
		size_t l = name[i] ? tgi_utf8_decode(name + i, n - i, NULL) : 1;
		unsigned char b = (unsigned char)name[i];
		int escape = !l || (b == '\\' && escape_at(name + i, n - i) >= 0);
		size_t need = escape ? 4 : l;
		if (j + need + 1 > cap) {
			out[j] = '\0';
			return -1;
		}
		if (escape) {
			out[j++] = '\\';
			out[j++] = 'x';
			out[j++] = hex[b >> 4];
			out[j++] = hex[b & 15];
			i++;
		} else {
			memcpy(out + j, name + i, l);
			j += l;
			i += l;
		}
	}
	out[j] = '\0';
	return (ssize_t)j;
}

ssize_t tgi_name_bytes(const char *text, size_t n, char *out, size_t cap, char *err,
                       size_t errlen)
{
	char shown[SHOWN_MAX + 8];
	size_t j = 0;

	if (!cap)
		return -1;
	if (n < cap && !memchr(text, '\\', n) && !tgi_utf8_bad(text, n, NULL)) {
		memcpy(out, text, n);           /* UTF-8 without a backslash: itself */
		out[n] = '\0';
		return (ssize_t)n;
	}
	for (size_t i = 0; i < n;) {
		int v = text[i] == '\\' ? escape_at(text + i, n - i) : -1;
		size_t take = v >= 0 ? 4 : 1;
		if (j + 2 > cap) {
			tgi_sanitize_n(shown, sizeof shown, text, n, SHOWN_MAX);
			tgi_snprintf(err, errlen, "\"%s\" is too long", shown);
			return -1;
		}
		out[j++] = v >= 0 ? (char)v : text[i];
		i += take;
	}
	out[j] = '\0';

	/* the one spelling: the text form of these bytes must be text itself */
	char *again = tgi_xmalloc(4 * j + 1);
	ssize_t m = tgi_name_text(out, j, again, 4 * j + 1);
	int same = m >= 0 && (size_t)m == n && !memcmp(again, text, n);
	if (!same) {
		char want[SHOWN_MAX + 8];
		tgi_sanitize_n(shown, sizeof shown, text, n, SHOWN_MAX);
		tgi_sanitize_n(want, sizeof want, again, m > 0 ? (size_t)m : 0, SHOWN_MAX);
		tgi_snprintf(err, errlen,
		             "\"%s\" is not how toolgate writes that name; write \"%s\" (\\xHH, "
		             "upper-case, stands only for a byte that is not UTF-8, and \\x5C only "
		             "for a backslash that would read as such an escape)", shown, want);
	}
	free(again);
	return same ? (ssize_t)j : -1;
}

int tgi_path_bytes(const char *text, char *out, size_t cap)
{
	char err[8];
	size_t n = strlen(text);
	if (tgi_name_bytes(text, n, out, cap, err, sizeof err) >= 0)
		return 0;
	return n + 1 > cap ? -ENAMETOOLONG : -EILSEQ;
}
