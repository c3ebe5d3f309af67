/*
 * fuzz_diff.c — tgi_diff_unified on arbitrary pairs of texts.
 *
 * Input: one byte of options (context 0-4; now and then tight distance
 * bounds, which force the fallback; now and then a small output cap), two
 * bytes giving where the old text ends, then the old text and the new one.
 *
 * Invariants checked (a violation traps):
 *   - equal texts write nothing and say identical; different ones write
 *     something;
 *   - a NUL in either text gives exactly the "Binary files ... differ" line;
 *   - otherwise the diff, applied here hunk by hunk (every context and
 *     removed line must match the old text where the header says), gives
 *     the new text byte for byte; its hunks are in order and do not overlap;
 *     the + and - lines written are the counts info reports, and there are
 *     info.hunks hunks;
 *   - with a cap, the output is a prefix of whole lines of the uncapped
 *     diff, then the marker, and not much longer than the cap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/diff.h"
#include "util/util.h"
#include "fuzz.h"

typedef struct line {
	const char *s;
	size_t      len;   /* with its "\n", when it has one */
} line;

static line *split(const char *s, size_t len, size_t *n)
{
	line *v = tgi_xmalloc((len + 1) * sizeof *v);
	size_t k = 0;
	for (const char *q = s, *end = s + len; q < end; k++) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		const char *next = nl ? nl + 1 : end;
		v[k] = (line){q, (size_t)(next - q)};
		q = next;
	}
	*n = k;
	return v;
}

/* "l" or "l,n" after '-' or '+'; returns the end of the number text. */
static const char *range(const char *p, size_t *start, size_t *count)
{
	char *end;
	*start = strtoul(p, &end, 10);
	*count = 1;
	if (*end == ',')
		*count = strtoul(end + 1, &end, 10);
	return end;
}

/* Apply d (ours, uncut, not binary) to a; check it gives b. */
static void apply_check(const char *a, size_t alen, const char *b, size_t blen, const char *d,
                        size_t dlen, const tgi_diff_info *info)
{
	size_t na, nd;
	line *al = split(a, alen, &na);
	line *dl = split(d, dlen, &nd);
	tgi_buf out;
	tgi_buf_init(&out, alen + blen + 16);
	size_t i = 2, cursor = 0, blines = 0, hunks = 0, plus = 0, minus = 0;

	check(nd >= 3);
	check(!strncmp(dl[0].s, "--- ", 4) && !strncmp(dl[1].s, "+++ ", 4));
	while (i < nd) {
		check(!strncmp(dl[i].s, "@@ -", 4));
		size_t as, an, bs, bn;
		const char *p = range(dl[i].s + 4, &as, &an);
		check(*p == ' ' && p[1] == '+');
		p = range(p + 2, &bs, &bn);
		check(!strncmp(p, " @@\n", 4));
		hunks++;
		i++;
		size_t first = an ? as - 1 : as;      /* 0-based line where the hunk starts */
		check(an == 0 || as >= 1);
		check(first >= cursor && first <= na);
		for (; cursor < first; cursor++, blines++)
			check(tgi_buf_append(&out, al[cursor].s, al[cursor].len) == 0);
		check(bn == 0 || bs >= 1);
		check((bn ? bs - 1 : bs) == blines);   /* where the hunk lands in the new text */
		size_t seen_a = 0, seen_b = 0;
		while (i < nd && dl[i].s[0] != '@') {
			char kind = dl[i].s[0];
			const char *s = dl[i].s + 1;
			size_t len = dl[i].len - 1;
			check(kind == ' ' || kind == '-' || kind == '+');
			/* the marker takes the "\n" off the line before it */
			if (i + 1 < nd && dl[i + 1].s[0] == '\\') {
				check(dl[i + 1].len == strlen("\\ No newline at end of file\n") &&
				      !memcmp(dl[i + 1].s, "\\ No newline at end of file\n", dl[i + 1].len));
				check(len >= 1 && s[len - 1] == '\n');
				len--;
			}
			if (kind != '+') {
				check(cursor < na && al[cursor].len == len && !memcmp(al[cursor].s, s, len));
				cursor++;
				seen_a++;
			}
			if (kind != '-') {
				check(tgi_buf_append(&out, s, len) == 0);
				seen_b++;
				blines++;
			}
			plus += kind == '+';
			minus += kind == '-';
			i += i + 1 < nd && dl[i + 1].s[0] == '\\' ? 2 : 1;
		}
		check(seen_a == an && seen_b == bn);
	}
	for (; cursor < na; cursor++)
		check(tgi_buf_append(&out, al[cursor].s, al[cursor].len) == 0);
	check(out.len == blen && (blen == 0 || !memcmp(out.p, b, blen)));
	check(hunks == info->hunks && plus == info->added && minus == info->removed);
	tgi_buf_free(&out);
	free(al);
	free(dl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	unsigned opt = data[0];
	size_t split_at = ((size_t)data[1] << 8 | data[2]) % (size - 2);
	const char *a = (const char *)data + 3, *b = a + split_at;
	size_t alen = split_at, blen = size - 3 - split_at;

	tgi_diff_opts o = {.context = (int)(opt % 5)};
	if ((opt & 0x18) == 0x18)
		o.max_d = 1 + (opt >> 5);
	tgi_diff_info info;
	tgi_buf out;
	tgi_buf_init(&out, 1u << 24);
	tgi_diff_unified(a, alen, b, blen, "a/f", "b/f", &o, &out, &info);

	int equal = alen == blen && !memcmp(a, b, alen);
	int binary = memchr(a, 0, alen) || memchr(b, 0, blen);
	check(info.identical == equal);
	check(equal ? out.len == 0 : out.len > 0);
	check(!info.cut);
	if (!equal && binary)
		check(info.binary && out.len == strlen("Binary files a/f and b/f differ\n") &&
		      !memcmp(out.p, "Binary files a/f and b/f differ\n", out.len));
	else if (!equal)
		apply_check(a, alen, b, blen, out.p, out.len, &info);

	/* the same with a cap: whole lines of it, then the marker */
	if (!equal && (opt & 0x80)) {
		size_t cap = 64 + (opt & 0x7f);
		tgi_diff_opts oc = o;
		oc.max_out = cap;
		tgi_diff_info ic;
		tgi_buf cut;
		tgi_buf_init(&cut, 1u << 24);
		tgi_diff_unified(a, alen, b, blen, "a/f", "b/f", &oc, &cut, &ic);
		if (out.len <= cap) {
			check(!ic.cut && cut.len == out.len && !memcmp(cut.p, out.p, out.len));
		} else {
			char marker[96];
			snprintf(marker, sizeof marker, "[... the diff is cut here: it is over %zu bytes ...]\n",
			         cap);
			size_t ml = strlen(marker);
			check(ic.cut && cut.len >= ml && !memcmp(cut.p + cut.len - ml, marker, ml));
			size_t kept = cut.len - ml;
			check(kept <= cap && !memcmp(cut.p, out.p, kept));
			check(kept == 0 || cut.p[kept - 1] == '\n');
			check(cut.len <= cap + 128);
		}
		tgi_buf_free(&cut);
	}
	tgi_buf_free(&out);
	return 0;
}
