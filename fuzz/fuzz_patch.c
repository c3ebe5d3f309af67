/*
 * fuzz_patch.c — tgi_patch_parse on arbitrary bytes, and tgi_patch_seek on
 * what it parses (each chunk's old lines sought in its new lines, its
 * context line too), so the matcher sees fuzzed bytes as well.
 *
 * Invariants checked (a violation traps):
 *   - parse gives 0 and a patch, or -1, no patch and one printable sentence
 *     starting "Invalid patch";
 *   - a patch is well formed: at most TGI_PATCH_OPS_MAX operations, each
 *     with a non-empty path, line numbers rising from 2, chunks only in
 *     Updates (at least one each, none empty), Move targets only there,
 *     every line a slice of the patch's own text holding no "\n" or NUL;
 *     tgi_patch_deletes says whether a Delete is among them;
 *   - seek answers -1 or a position in [start, n - m] (exactly n - m with
 *     eof); an empty pattern answers start; when an exact occurrence exists
 *     the answer is the first one (the exact pass runs before the fuzzy
 *     ones); a pattern sought in itself is found at 0.
 *   - each operation's path_at / move_at points at its path in the input;
 *   - tgi_patch_map_paths, with a map that makes paths under "/w" relative
 *     (tgi_path_within), gives a text that parses to the same operations,
 *     each path the mapped one ("./" before one that starts with a space,
 *     "/" after one that ends with one) or, unmapped, the same; and gives
 *     1 exactly when some path mapped.
 * Seek work per input is capped so that a slow input is a real finding.
 * Nothing here touches the file system.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "fuzz.h"

#define SEEK_BUDGET 4000000u    /* line comparisons per input, all passes */


/* A line of the patch: inside text[0..cap), no "\n" and no NUL in it. */
static void check_line(const tgi_patch *p, size_t cap, tgi_patch_line l)
{
	check(l.s != NULL && l.s >= p->text && l.len <= cap && l.s + l.len <= p->text + cap);
	check(memchr(l.s, '\n', l.len) == NULL && memchr(l.s, '\0', l.len) == NULL);
}

static int same(tgi_patch_line a, tgi_patch_line b)
{
	return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

/* The first exact occurrence of pat in lines[from..], or -1. */
static long first_exact(const tgi_patch_line *lines, size_t n, const tgi_patch_line *pat,
                        size_t m, size_t from, size_t last)
{
	for (size_t i = from; i <= last && last < n; i++) {
		size_t k = 0;
		while (k < m && same(lines[i + k], pat[k]))
			k++;
		if (k == m)
			return (long)i;
	}
	return -1;
}

static void seek_checked(const tgi_patch_line *lines, size_t n, const tgi_patch_line *pat,
                         size_t m, size_t start, int eof, size_t *budget)
{
	size_t cost = (n >= m ? n - m + 1 : 1) * (m ? m : 1) * 4;
	if (cost > *budget)
		return;
	*budget -= cost;

	long r = tgi_patch_seek(lines, n, pat, m, start, eof);
	if (m == 0) {
		check(r == (long)start);
		return;
	}
	if (m > n) {
		check(r == -1);
		return;
	}
	size_t from = eof ? n - m : start, last = n - m;
	long exact = from < start ? -1 : first_exact(lines, n, pat, m, from, eof ? from : last);
	check(r == -1 || ((size_t)r >= start && (size_t)r <= last));
	check(!eof || r == -1 || (size_t)r == n - m);
	if (exact >= 0)
		check(r == exact);
}

static void walk(const tgi_patch *p, size_t cap)
{
	size_t budget = SEEK_BUDGET, prev = 1;
	int deletes = 0;

	check(p->nops <= TGI_PATCH_OPS_MAX);
	check(p->text != NULL);
	for (size_t i = 0; i < p->nops; i++) {
		const tgi_patch_op *op = &p->ops[i];
		check(op->kind == TGI_PATCH_ADD || op->kind == TGI_PATCH_DELETE ||
		      op->kind == TGI_PATCH_UPDATE);
		check(op->path && op->path[0] && !strchr(op->path, '\n'));
		check(op->lineno > prev);
		prev = op->lineno;
		deletes |= op->kind == TGI_PATCH_DELETE;
		if (op->kind != TGI_PATCH_ADD)
			check(op->nadd == 0);
		for (size_t k = 0; k < op->nadd; k++)
			check_line(p, cap, op->add[k]);
		if (op->kind != TGI_PATCH_UPDATE) {
			check(op->nchunks == 0 && op->move_to == NULL);
			continue;
		}
		check(op->nchunks >= 1);
		if (op->move_to)
			check(op->move_to[0] && !strchr(op->move_to, '\n'));
		for (size_t c = 0; c < op->nchunks; c++) {
			const tgi_patch_chunk *ch = &op->chunks[c];
			check(ch->lineno > prev);
			prev = ch->lineno;
			check(ch->nold + ch->nnew >= 1);
			if (ch->ctx.s)
				check_line(p, cap, ch->ctx);
			for (size_t k = 0; k < ch->nold; k++)
				check_line(p, cap, ch->old[k]);
			for (size_t k = 0; k < ch->nnew; k++)
				check_line(p, cap, ch->new[k]);

			/* the matcher: old lines in new lines, from a few starts */
			size_t n = ch->nnew, m = ch->nold;
			size_t starts[] = {0, n / 2, n};
			for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++)
				for (int eof = 0; eof <= 1; eof++)
					seek_checked(ch->new, n, ch->old, m, starts[s], eof, &budget);
			seek_checked(ch->old, m, ch->old, m, 0, ch->eof, &budget);
			if (m && (size_t)(m + 1) * 4 <= budget) {
				budget -= (m + 1) * 4;
				check(tgi_patch_seek(ch->old, m, ch->old, m, 0, 0) == 0);
				check(tgi_patch_seek(ch->old, m, ch->old, m, 0, 1) == 0);
			}
			if (ch->ctx.s) {
				seek_checked(ch->new, n, &ch->ctx, 1, 0, 0, &budget);
				seek_checked(ch->old, m, &ch->ctx, 1, 0, 0, &budget);
			}
		}
	}
	check(tgi_patch_deletes(p) == deletes);
}

static int map_w(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	(void)ud;
	return tgi_path_within("/w", path, len, out, cap) == 1;
}

static int space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* What map_w makes of path, as the rewritten header holds it, in out
 * (cap bytes, room for 3 more than a path). */
static int mapped(const char *path, char *out, size_t cap)
{
	if (tgi_path_within("/w", path, strlen(path), out + 2, cap - 3) != 1)
		return 0;
	size_t n = strlen(out + 2);
	if (space(out[n + 1]))
		strcpy(out + 2 + n, "/");
	if (space(out[2]))
		out[0] = '.', out[1] = '/';
	else
		memmove(out, out + 2, strlen(out + 2) + 1);
	return 1;
}

static void remap(const tgi_patch *p, const uint8_t *data, size_t size)
{
	static char want[PATH_MAX + 3];
	char *out, err[512];
	size_t outlen;
	tgi_patch *q;
	int any = 0;

	for (size_t i = 0; i < p->nops; i++) {
		const tgi_patch_op *op = &p->ops[i];
		check(op->path_at + strlen(op->path) <= size &&
		      !memcmp(data + op->path_at, op->path, strlen(op->path)));
		if (op->move_to)
			check(op->move_at + strlen(op->move_to) <= size &&
			      !memcmp(data + op->move_at, op->move_to, strlen(op->move_to)));
	}
	int r = tgi_patch_map_paths((const char *)data, size, map_w, NULL, &out, &outlen);
	check(r == 0 || r == 1);
	if (!r) {
		check(out == NULL);
		out = (char *)data;
		outlen = size;
	}
	check(tgi_patch_parse(out, outlen, &q, err, sizeof err) == 0);
	check(q->nops == p->nops);
	for (size_t i = 0; i < p->nops; i++) {
		const char *a[2] = {p->ops[i].path, p->ops[i].move_to};
		const char *b[2] = {q->ops[i].path, q->ops[i].move_to};
		check(p->ops[i].kind == q->ops[i].kind);
		for (int k = 0; k < 2; k++) {
			check(!a[k] == !b[k]);
			if (!a[k])
				continue;
			int m = mapped(a[k], want, sizeof want);
			any |= m && !strchr(want, '\n');
			check(!strcmp(b[k], m && !strchr(want, '\n') ? want : a[k]));
		}
	}
	check(r == any);
	tgi_patch_free(q);
	if (r)
		free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tgi_patch *p = (tgi_patch *)&p;
	char err[512];

	err[0] = '\0';
	if (tgi_patch_parse((const char *)data, size, &p, err, sizeof err) < 0) {
		check(p == NULL);
		check(strncmp(err, "Invalid patch", 13) == 0 && printable(err));
		return 0;
	}
	check(p != NULL);
	walk(p, size);
	remap(p, data, size);
	tgi_patch_free(p);
	return 0;
}
