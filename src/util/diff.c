/*
 * diff.c — unified line diffs (diff.h).
 *
 *   1. a NUL byte on either side: "Binary files A and B differ";
 *   2. split both sides into lines (end of line included) and set aside
 *      the common head and tail;
 *   3. number the lines left (equal bytes, equal number) and run Myers'
 *      greedy forward search for the shortest edit script, keeping each
 *      round's furthest points so the path can be traced back; past the
 *      distance or work bound, every middle line is changed instead;
 *   4. mark each line removed or added, group the changes that lie within
 *      twice the context of each other into hunks, and write them.
 * A side with more than LINES_MAX lines skips 2-4: one hunk replaces it
 * whole, written as the text is scanned (no per-line memory).
 *
 * Owns: the edit script and the unified format.  Must not: touch files.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/diff.h"
#include "util/util.h"

#define LINES_MAX (1u << 20)    /* lines of one side diffed line by line */

/* One side: its bytes and where each line starts (start[n] == len). */
typedef struct side {
	const char *p;
	size_t      len;
	uint32_t   *start;
	size_t      n;
	uint32_t   *id;        /* the line's number among distinct lines (middle only) */
	unsigned char *mark;   /* 1: removed (a) or added (b) */
} side;

static const char *line_at(const side *s, size_t i, size_t *len)
{
	*len = s->start[i + 1] - s->start[i];
	return s->p + s->start[i];
}

static int lines_equal(const side *a, size_t i, const side *b, size_t j)
{
	size_t la, lb;
	const char *x = line_at(a, i, &la), *y = line_at(b, j, &lb);
	return la == lb && memcmp(x, y, la) == 0;
}

static size_t count_lines(const char *p, size_t len)
{
	size_t n = 0;
	for (const char *q = p, *end = p + len; q < end; n++) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		q = nl ? nl + 1 : end;
	}
	return n;
}

static void split(side *s)
{
	s->n = count_lines(s->p, s->len);
	s->start = tgi_xmalloc((s->n + 1) * sizeof *s->start);
	size_t i = 0;
	for (const char *q = s->p, *end = s->p + s->len; q < end; i++) {
		s->start[i] = (uint32_t)(q - s->p);
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		q = nl ? nl + 1 : end;
	}
	s->start[s->n] = (uint32_t)s->len;
	s->mark = tgi_xcalloc(s->n ? s->n : 1, 1);
}

/* ---- numbering the middle lines ---- */

static uint64_t line_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;     /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

typedef struct slot {
	uint64_t hash;
	const char *p;
	uint32_t len;
	uint32_t id;       /* 0: empty; else id + 1 */
} slot;

/* Give a->id[from..to) and b->id[from..to) the same number for the same
 * bytes (the tables are indexed from each side's `lo`). */
static void number_lines(side *a, size_t alo, size_t ahi, side *b, size_t blo, size_t bhi)
{
	size_t total = (ahi - alo) + (bhi - blo), cap = 16;
	while (cap < 2 * total)
		cap <<= 1;
	slot *t = tgi_xcalloc(cap, sizeof *t);
	uint32_t next = 0;
	side *sides[2] = {a, b};
	size_t lo[2] = {alo, blo}, hi[2] = {ahi, bhi};
	for (int k = 0; k < 2; k++) {
		side *s = sides[k];
		s->id = tgi_xmalloc((hi[k] - lo[k] + 1) * sizeof *s->id);
		for (size_t i = lo[k]; i < hi[k]; i++) {
			size_t len;
			const char *p = line_at(s, i, &len);
			uint64_t h = line_hash(p, len);
			size_t at = (size_t)h & (cap - 1);
			while (t[at].id && !(t[at].hash == h && t[at].len == len &&
			                     memcmp(t[at].p, p, len) == 0))
				at = (at + 1) & (cap - 1);
			if (!t[at].id)
				t[at] = (slot){h, p, (uint32_t)len, ++next};
			s->id[i - lo[k]] = t[at].id - 1;
		}
	}
	free(t);
}

/* ---- Myers ---- */

/* The furthest x on diagonal k after round d, as kept for the trace:
 * round d keeps d + 1 values, for k = -d, -d + 2, ..., d. */
static size_t trace_at(size_t d, long k)
{
	return d * (d + 1) / 2 + (size_t)((k + (long)d) / 2);
}

/*
 * The shortest edit script from A (n ids) to B (m ids): marks del[x] for
 * each removed line of A, ins[y] for each added line of B.  0, or -1 when
 * the distance or work bound was reached (the marks are then meaningless).
 */
static int myers(const uint32_t *A, long n, const uint32_t *B, long m, unsigned char *del,
                 unsigned char *ins, size_t max_d, size_t max_work)
{
	long dmax = n + m < (long)max_d ? n + m : (long)max_d;
	long *v = tgi_xcalloc((size_t)(2 * dmax + 3), sizeof *v);
	long *vk = v + dmax + 1;            /* vk[k], k in [-dmax-1, dmax+1] */
	size_t tcap = 1024, work = 0;
	long *trace = tgi_xmalloc(tcap * sizeof *trace);
	long found = -1;

	vk[1] = 0;
	for (long d = 0; d <= dmax && found < 0; d++) {
		size_t need = trace_at((size_t)d, d) + 1;
		if (need > tcap) {
			while (tcap < need)
				tcap *= 2;
			trace = tgi_xrealloc(trace, tcap * sizeof *trace);
		}
		for (long k = -d; k <= d; k += 2) {
			long x = (k == -d || (k != d && vk[k - 1] < vk[k + 1])) ? vk[k + 1] : vk[k - 1] + 1;
			long y = x - k;
			while (x < n && y < m && A[x] == B[y])
				x++, y++, work++;
			vk[k] = x;
			trace[trace_at((size_t)d, k)] = x;
			if (x >= n && y >= m) {
				found = d;
				break;
			}
		}
		work += (size_t)d + 1;
		if (work > max_work)
			break;
	}
	if (found < 0) {
		free(v);
		free(trace);
		return -1;
	}

	/* back from (n, m): each round added one step before a diagonal; a
	 * step that would leave the grid never happens, and is refused */
	long x = n, y = m;
	int bad = 0;
	for (long d = found; d > 0 && !bad; d--) {
		long k = x - y;
		if (k < -d || k > d) {
			bad = 1;
			break;
		}
		long up = k + 1 <= d - 1 ? trace[trace_at((size_t)d - 1, k + 1)] : -1;
		long left = k - 1 >= -(d - 1) ? trace[trace_at((size_t)d - 1, k - 1)] : -1;
		long pk = (k == -d || (k != d && left < up)) ? k + 1 : k - 1;
		long px = pk == k + 1 ? up : left, py = px - pk;
		bad = px < 0 || py < 0 || (pk == k + 1 ? py >= m || px > n : px >= n || py > m);
		if (bad)
			break;
		if (pk == k + 1)
			ins[py] = 1;       /* down: B[py] added */
		else
			del[px] = 1;       /* right: A[px] removed */
		x = px;
		y = py;
	}
	free(v);
	free(trace);
	/* what is left is the first snake: equal lines from (0, 0) */
	return !bad && x == y ? 0 : -1;
}

/* ---- writing ---- */

typedef struct writer {
	tgi_buf *out;
	size_t   base, max;
	int      cut;
} writer;

/* Append n bytes as one unit: all of it, or the marker and nothing more. */
static void put(writer *w, const char *s, size_t n)
{
	if (w->cut)
		return;
	if ((!w->max || w->out->len - w->base + n <= w->max) && tgi_buf_append(w->out, s, n) == 0)
		return;
	w->cut = 1;
	tgi_buf_printf(w->out, "[... the diff is cut here: it is over %zu bytes ...]\n",
	               w->max ? w->max : w->out->len - w->base);
}

static void put_label(writer *w, const char *tag, const char *label)
{
	tgi_buf b;
	tgi_buf_init(&b, strlen(label) + 8);
	tgi_buf_puts(&b, tag);
	for (const char *c = label; *c; c++) {
		char ch = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
		tgi_buf_append(&b, &ch, 1);
	}
	tgi_buf_append(&b, "\n", 1);
	put(w, b.p, b.len);
	tgi_buf_free(&b);
}

/* One line with its prefix, and the marker for a last line without "\n". */
static void put_line(writer *w, char prefix, const char *p, size_t len)
{
	tgi_buf b;
	int eol = len && p[len - 1] == '\n';
	tgi_buf_init(&b, len + 64);
	tgi_buf_append(&b, &prefix, 1);
	tgi_buf_append(&b, p, len);
	if (!eol)
		tgi_buf_puts(&b, "\n\\ No newline at end of file\n");
	put(w, b.p, b.len);
	tgi_buf_free(&b);
}

static void put_side_line(writer *w, char prefix, const side *s, size_t i)
{
	size_t len;
	const char *p = line_at(s, i, &len);
	put_line(w, prefix, p, len);
}

/* "l,n" as diff -u writes a range: an empty one names the line before it;
 * a one-line one, just its line. */
static void range_text(char *out, size_t cap, size_t start, size_t count)
{
	if (count == 0)
		tgi_snprintf(out, cap, "%zu,0", start);
	else if (count == 1)
		tgi_snprintf(out, cap, "%zu", start + 1);
	else
		tgi_snprintf(out, cap, "%zu,%zu", start + 1, count);
}

static void put_header(writer *w, size_t as, size_t an, size_t bs, size_t bn)
{
	char ra[48], rb[48], h[112];
	range_text(ra, sizeof ra, as, an);
	range_text(rb, sizeof rb, bs, bn);
	tgi_snprintf(h, sizeof h, "@@ -%s +%s @@\n", ra, rb);
	put(w, h, strlen(h));
}

/* A change: lines a[i0..i1) removed, b[j0..j1) added. */
typedef struct change {
	size_t i0, i1, j0, j1;
} change;

static change *changes_of(const side *a, const side *b, size_t *nout)
{
	size_t i = 0, j = 0, n = 0, cap = 16;
	change *v = tgi_xmalloc(cap * sizeof *v);
	while (i < a->n || j < b->n) {
		if ((i < a->n && a->mark[i]) || (j < b->n && b->mark[j])) {
			change c = {i, i, j, j};
			while (c.i1 < a->n && a->mark[c.i1])
				c.i1++;
			while (c.j1 < b->n && b->mark[c.j1])
				c.j1++;
			if (n == cap)
				v = tgi_xrealloc(v, (cap *= 2) * sizeof *v);
			v[n++] = c;
			i = c.i1;
			j = c.j1;
		} else {
			i++;
			j++;
		}
	}
	*nout = n;
	return v;
}

static void put_hunks(writer *w, const side *a, const side *b, size_t ctx, tgi_diff_info *info)
{
	size_t n;
	change *ch = changes_of(a, b, &n);
	for (size_t f = 0; f < n && !w->cut;) {
		size_t l = f;
		while (l + 1 < n && ch[l + 1].i0 - ch[l].i1 <= 2 * ctx)
			l++;
		size_t as = ch[f].i0 > ctx ? ch[f].i0 - ctx : 0;
		size_t ae = ch[l].i1 + ctx < a->n ? ch[l].i1 + ctx : a->n;
		size_t bs = ch[f].j0 - (ch[f].i0 - as), be = ch[l].j1 + (ae - ch[l].i1);
		put_header(w, as, ae - as, bs, be - bs);
		info->hunks++;
		size_t i = as;
		for (size_t c = f; c <= l; c++) {
			for (; i < ch[c].i0; i++)
				put_side_line(w, ' ', a, i);
			for (; i < ch[c].i1; i++)
				put_side_line(w, '-', a, i);
			for (size_t j = ch[c].j0; j < ch[c].j1; j++)
				put_side_line(w, '+', b, j);
		}
		for (; i < ae; i++)
			put_side_line(w, ' ', a, i);
		f = l + 1;
	}
	free(ch);
}

/* Too many lines to diff one by one: one hunk replaces the whole. */
static void put_whole(writer *w, const char *a, size_t alen, const char *b, size_t blen,
                      tgi_diff_info *info)
{
	size_t na = count_lines(a, alen), nb = count_lines(b, blen);
	put_header(w, 0, na, 0, nb);
	info->hunks = 1;
	info->removed = na;
	info->added = nb;
	const char *p[2] = {a, b};
	size_t len[2] = {alen, blen};
	for (int k = 0; k < 2 && !w->cut; k++)
		for (const char *q = p[k], *end = p[k] + len[k]; q < end && !w->cut;) {
			const char *nl = memchr(q, '\n', (size_t)(end - q));
			const char *next = nl ? nl + 1 : end;
			put_line(w, k ? '+' : '-', q, (size_t)(next - q));
			q = next;
		}
}

/* Steps 2 and 3: mark the removed and added lines. */
static void mark_changes(side *a, side *b, const tgi_diff_opts *o, tgi_diff_info *info)
{
	size_t head = 0, tail = 0;
	while (head < a->n && head < b->n && lines_equal(a, head, b, head))
		head++;
	while (tail < a->n - head && tail < b->n - head &&
	       lines_equal(a, a->n - 1 - tail, b, b->n - 1 - tail))
		tail++;
	size_t ahi = a->n - tail, bhi = b->n - tail;
	size_t n = ahi - head, m = bhi - head;

	int ok = 0;
	if (n && m) {
		number_lines(a, head, ahi, b, head, bhi);
		ok = myers(a->id, (long)n, b->id, (long)m, a->mark + head, b->mark + head,
		           o->max_d ? o->max_d : TGI_DIFF_MAX_D,
		           o->max_work ? o->max_work : TGI_DIFF_MAX_WORK) == 0;
		info->fallback = !ok;
	}
	if (!ok) {
		memset(a->mark + head, 1, n);
		memset(b->mark + head, 1, m);
	}
	for (size_t i = 0; i < a->n; i++)
		info->removed += a->mark[i];
	for (size_t j = 0; j < b->n; j++)
		info->added += b->mark[j];
}

void tgi_diff_unified(const char *a, size_t alen, const char *b, size_t blen,
                      const char *old_label, const char *new_label, const tgi_diff_opts *o,
                      tgi_buf *out, tgi_diff_info *info)
{
	tgi_diff_opts dflt = {.context = TGI_DIFF_CONTEXT};
	tgi_diff_info none;
	if (!o)
		o = &dflt;
	if (!info)
		info = &none;
	memset(info, 0, sizeof *info);
	if (!a)
		alen = 0;
	if (!b)
		blen = 0;
	size_t ctx = o->context < 0 ? TGI_DIFF_CONTEXT : (size_t)o->context;
	writer w = {.out = out, .base = out->len, .max = o->max_out};

	if (alen == blen && (alen == 0 || memcmp(a, b, alen) == 0)) {
		info->identical = 1;
		return;
	}
	if (alen > TGI_DIFF_INPUT_MAX || blen > TGI_DIFF_INPUT_MAX) {
		info->too_large = 1;
		return;
	}
	if ((alen && memchr(a, '\0', alen)) || (blen && memchr(b, '\0', blen))) {
		tgi_buf msg;
		tgi_buf_init(&msg, strlen(old_label) + strlen(new_label) + 64);
		tgi_buf_printf(&msg, "Binary files %s and %s differ", old_label, new_label);
		for (size_t i = 0; i < msg.len; i++)
			if ((unsigned char)msg.p[i] < 0x20 || msg.p[i] == 0x7f)
				msg.p[i] = '?';
		tgi_buf_append(&msg, "\n", 1);
		put(&w, msg.p, msg.len);
		tgi_buf_free(&msg);
		info->binary = 1;
		info->cut = w.cut;
		return;
	}

	put_label(&w, "--- ", old_label);
	put_label(&w, "+++ ", new_label);
	if (count_lines(a, alen) > LINES_MAX || count_lines(b, blen) > LINES_MAX) {
		put_whole(&w, a, alen, b, blen, info);
		info->fallback = 1;
		info->cut = w.cut;
		return;
	}
	side sa = {.p = a, .len = alen}, sb = {.p = b, .len = blen};
	split(&sa);
	split(&sb);
	mark_changes(&sa, &sb, o, info);
	put_hunks(&w, &sa, &sb, ctx, info);
	info->cut = w.cut;
	free(sa.start);
	free(sb.start);
	free(sa.id);
	free(sb.id);
	free(sa.mark);
	free(sb.mark);
}
