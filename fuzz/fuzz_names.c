/*
 * fuzz_names.c — file names as text (src/util/names.c): tgi_name_text on
 * arbitrary bytes taken as a name, tgi_name_bytes on the same bytes taken
 * as text a model wrote.
 *
 * Invariants checked (a violation traps):
 *   - every name without NUL has a text form, which is UTF-8 throughout
 *     and at most four times as long, holds as many '/' as the name, and
 *     reads back to exactly the name's bytes;
 *   - text that reads back gives bytes whose text form is that text, byte
 *     for byte (one spelling per name), no longer than it and with as many
 *     '/' and NULs; text that does not read back gets a printable sentence;
 *   - a text form in a buffer too small is refused, never overrun.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs.h"
#include "util/util.h"
#include "fuzz.h"

static size_t count(const char *s, size_t n, char c)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == c;
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	size_t cap = 4 * size + 1;
	char *text = tgi_xmalloc(cap), *back = tgi_xmalloc(cap), *again = tgi_xmalloc(cap);
	char err[512];

	/* the input as a name */
	if (!memchr(in, '\0', size)) {
		ssize_t t = tgi_name_text(in, size, text, cap);
		check(t >= 0 && (size_t)t <= 4 * size && text[t] == '\0');
		check(tgi_utf8_bad(text, (size_t)t, NULL) == 0);
		check(count(text, (size_t)t, '/') == count(in, size, '/'));
		ssize_t b = tgi_name_bytes(text, (size_t)t, back, cap, err, sizeof err);
		check(b == (ssize_t)size && !memcmp(back, in, size));
		if (t > 0) /* one byte short of room: refused, NUL-terminated within */
			check(tgi_name_text(in, size, again, (size_t)t) == -1 && strlen(again) < (size_t)t);
	}

	/* the input as text */
	err[0] = '\0';
	ssize_t b = tgi_name_bytes(in, size, back, cap, err, sizeof err);
	if (b < 0) {
		check(err[0] != '\0' && printable(err));
	} else {
		check((size_t)b <= size && back[b] == '\0');
		check(count(back, (size_t)b, '/') == count(in, size, '/'));
		check(count(back, (size_t)b, '\0') == count(in, size, '\0'));
		ssize_t t = tgi_name_text(back, (size_t)b, again, cap);
		check(t == (ssize_t)size && !memcmp(again, in, size));
	}
	free(text);
	free(back);
	free(again);
	return 0;
}
