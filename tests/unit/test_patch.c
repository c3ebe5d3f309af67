/*
 * test_patch.c — the apply_patch engine's C API (src/patch/patch.h).
 *
 * Written from the contract (issue 3, the pinned behaviour and patch.h's
 * comments), not from the code's output:
 *   - tgi_patch_parse: every directive, every message with its line number
 *     (plain and inside each heredoc wrapper), the tolerances, the limits;
 *   - tgi_patch_seek: each of the four passes alone and against each other,
 *     every folded code point, Unicode trimming, eof, invalid UTF-8;
 *   - tgi_patch_plan_make in a temporary workspace: final bytes, results
 *     and summary, operations seeing each other, line endings, refusals,
 *     and that planning writes nothing;
 *   - tgi_patch_commit and tgi_patch_recover: the exact tree afterwards, a
 *     commit that really fails part-way and is rolled back, recovery of
 *     hand-made journals, a locked journal, a hostile journal.
 * Owns: these tests.  Must not: depend on anything outside its temporary
 * directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <unistd.h>

#include "patch/patch.h"

#define ERRCAP 8192
#define DIR_   "<dir>"        /* a directory in an expected tree */

/* ==== parsing ============================================================= */

#define PATCH(body) "*** Begin Patch\n" body "*** End Patch\n"

static tgi_patch *parse_ok(const char *text)
{
	tgi_patch *p = (tgi_patch *)1;
	char err[ERRCAP] = "";
	if (tgi_patch_parse(text, strlen(text), &p, err, sizeof err) != 0)
		fail_msg("parse failed: %s\n--- patch:\n%s", err, text);
	assert_non_null(p);
	return p;
}

static void parse_fails(const char *text, const char *want)
{
	tgi_patch *p = (tgi_patch *)1;
	char err[ERRCAP] = "";
	int r = tgi_patch_parse(text, strlen(text), &p, err, sizeof err);
	if (r != -1) {
		tgi_patch_free(r == 0 ? p : NULL);
		fail_msg("parse of this patch succeeded, want \"%s\":\n%s", want, text);
	}
	assert_null(p);
	if (strcmp(err, want) != 0)
		fail_msg("error\n  \"%s\"\nwant\n  \"%s\"\n--- patch:\n%s", err, want, text);
}

static void line_is(tgi_patch_line l, const char *want)
{
	assert_non_null(l.s);
	if (l.len != strlen(want) || memcmp(l.s, want, l.len) != 0)
		fail_msg("line \"%.*s\", want \"%s\"", (int)l.len, l.s, want);
}

/* lines[0..n) equal the NULL-terminated want. */
static void lines_are(const tgi_patch_line *lines, size_t n, const char *const *want)
{
	size_t k = 0;
	while (want[k])
		k++;
	if (n != k)
		fail_msg("%zu lines, want %zu", n, k);
	for (size_t i = 0; i < n; i++)
		line_is(lines[i], want[i]);
}

#define LINES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NOLINES    ((const char *const[]){NULL})

static void test_parse_directives(void **state)
{
	(void)state;
	tgi_patch *p = parse_ok(PATCH("*** Add File: src/new.c\n"           /* 2 */
	                              "+int x;\n"
	                              "+\n"
	                              "+}\n"
	                              "*** Delete File: old.txt\n"          /* 6 */
	                              "*** Update File: a.txt\n"            /* 7 */
	                              "*** Move to: b/c.txt\n"
	                              "@@ def f():\n"                       /* 9 */
	                              " ctx\n"
	                              "-old\n"
	                              "+new\n"
	                              "@@\n"                                /* 13 */
	                              "-tail\n"
	                              "+TAIL\n"
	                              "+more\n"
	                              "*** End of File\n"
	                              "*** Add File: empty.txt\n"           /* 18 */
	                              "*** Update File: plain.txt\n"        /* 19 */
	                              " keep\n"
	                              "-x\n"));
	assert_int_equal(p->nops, 5);

	const tgi_patch_op *op = &p->ops[0];
	assert_int_equal(op->kind, TGI_PATCH_ADD);
	assert_string_equal(op->path, "src/new.c");
	assert_null(op->move_to);
	assert_int_equal(op->lineno, 2);
	lines_are(op->add, op->nadd, LINES("int x;", "", "}"));
	assert_int_equal(op->nchunks, 0);

	op = &p->ops[1];
	assert_int_equal(op->kind, TGI_PATCH_DELETE);
	assert_string_equal(op->path, "old.txt");
	assert_null(op->move_to);
	assert_int_equal(op->lineno, 6);
	assert_int_equal(op->nadd, 0);
	assert_int_equal(op->nchunks, 0);

	op = &p->ops[2];
	assert_int_equal(op->kind, TGI_PATCH_UPDATE);
	assert_string_equal(op->path, "a.txt");
	assert_non_null(op->move_to);
	assert_string_equal(op->move_to, "b/c.txt");
	assert_int_equal(op->lineno, 7);
	assert_int_equal(op->nchunks, 2);
	const tgi_patch_chunk *ch = &op->chunks[0];
	line_is(ch->ctx, "def f():");
	lines_are(ch->old, ch->nold, LINES("ctx", "old"));
	lines_are(ch->new, ch->nnew, LINES("ctx", "new"));
	assert_int_equal(ch->eof, 0);
	assert_int_equal(ch->lineno, 9);
	ch = &op->chunks[1];
	assert_null(ch->ctx.s);
	lines_are(ch->old, ch->nold, LINES("tail"));
	lines_are(ch->new, ch->nnew, LINES("TAIL", "more"));
	assert_int_equal(ch->eof, 1);
	assert_int_equal(ch->lineno, 13);

	op = &p->ops[3];                        /* Add with zero lines: an empty file */
	assert_int_equal(op->kind, TGI_PATCH_ADD);
	assert_string_equal(op->path, "empty.txt");
	assert_int_equal(op->nadd, 0);
	assert_int_equal(op->lineno, 18);

	op = &p->ops[4];                        /* the first chunk may omit @@ */
	assert_int_equal(op->kind, TGI_PATCH_UPDATE);
	assert_null(op->move_to);
	assert_int_equal(op->nchunks, 1);
	assert_null(op->chunks[0].ctx.s);
	lines_are(op->chunks[0].old, op->chunks[0].nold, LINES("keep", "x"));
	lines_are(op->chunks[0].new, op->chunks[0].nnew, LINES("keep"));
	assert_int_equal(op->chunks[0].eof, 0);

	assert_int_equal(tgi_patch_deletes(p), 1);
	tgi_patch_free(p);
}

static void test_parse_chunk_lines(void **state)
{
	(void)state;
	/* a fully empty line is empty context; "@@ " keeps what follows verbatim;
	 * a whitespace-only line starting with ' ' is context of the rest */
	tgi_patch *p = parse_ok(PATCH("*** Update File: f\n"
	                              "@@  two  spaces \n"
	                              " a\n"
	                              "\n"
	                              "-b\n"
	                              "+\n"
	                              "-\n"
	                              "   \n"
	                              " c\n"));
	assert_int_equal(p->nops, 1);
	const tgi_patch_chunk *ch = &p->ops[0].chunks[0];
	assert_int_equal(p->ops[0].nchunks, 1);
	line_is(ch->ctx, " two  spaces ");
	lines_are(ch->old, ch->nold, LINES("a", "", "b", "", "  ", "c"));
	lines_are(ch->new, ch->nnew, LINES("a", "", "", "  ", "c"));
	assert_int_equal(tgi_patch_deletes(p), 0);
	tgi_patch_free(p);

	/* only additions; only removals; only context */
	p = parse_ok(PATCH("*** Update File: f\n@@\n+x\n+y\n"
	                   "*** Update File: g\n@@ ctx\n-x\n"
	                   "*** Update File: h\n@@\n same\n*** End of File\n"));
	assert_int_equal(p->nops, 3);
	lines_are(p->ops[0].chunks[0].old, p->ops[0].chunks[0].nold, NOLINES);
	lines_are(p->ops[0].chunks[0].new, p->ops[0].chunks[0].nnew, LINES("x", "y"));
	line_is(p->ops[1].chunks[0].ctx, "ctx");
	lines_are(p->ops[1].chunks[0].old, p->ops[1].chunks[0].nold, LINES("x"));
	lines_are(p->ops[1].chunks[0].new, p->ops[1].chunks[0].nnew, NOLINES);
	lines_are(p->ops[2].chunks[0].old, p->ops[2].chunks[0].nold, LINES("same"));
	lines_are(p->ops[2].chunks[0].new, p->ops[2].chunks[0].nnew, LINES("same"));
	assert_int_equal(p->ops[2].chunks[0].eof, 1);
	tgi_patch_free(p);

	/* an Add's content stops at the first line not starting with '+' */
	p = parse_ok(PATCH("*** Add File: a\n+1\n+ 2\n++3\n*** Delete File: b\n"));
	assert_int_equal(p->nops, 2);
	lines_are(p->ops[0].add, p->ops[0].nadd, LINES("1", " 2", "+3"));
	assert_int_equal(p->ops[1].kind, TGI_PATCH_DELETE);
	tgi_patch_free(p);

	/* an empty patch parses (it is the plan that says "No files were modified.") */
	p = parse_ok("*** Begin Patch\n*** End Patch");
	assert_int_equal(p->nops, 0);
	assert_int_equal(tgi_patch_deletes(p), 0);
	tgi_patch_free(p);
}

/* A patch with many chunks and operations: arrays past their first growth. */
static void test_parse_many(void **state)
{
	(void)state;
	char *text = malloc(1 << 20);
	size_t n = (size_t)sprintf(text, "*** Begin Patch\n");
	for (int f = 0; f < 37; f++) {
		n += (size_t)sprintf(text + n, "*** Update File: f%d\n", f);
		for (int c = 0; c < 19; c++) {
			n += (size_t)sprintf(text + n, "@@ c%d\n", c);
			for (int l = 0; l < 9; l++)
				n += (size_t)sprintf(text + n, " k%d\n-o%d\n+n%d\n", l, l, l);
		}
	}
	sprintf(text + n, "*** End Patch\n");
	tgi_patch *p = parse_ok(text);
	assert_int_equal(p->nops, 37);
	size_t line = 2;
	for (size_t f = 0; f < p->nops; f++) {
		char want[32];
		sprintf(want, "f%zu", f);
		assert_string_equal(p->ops[f].path, want);
		assert_int_equal(p->ops[f].lineno, line++);
		assert_int_equal(p->ops[f].nchunks, 19);
		for (size_t c = 0; c < 19; c++) {
			const tgi_patch_chunk *ch = &p->ops[f].chunks[c];
			assert_int_equal(ch->lineno, line);
			line += 1 + 27;
			assert_int_equal(ch->nold, 18);
			assert_int_equal(ch->nnew, 18);
			line_is(ch->old[17], "o8");
			line_is(ch->new[17], "n8");
		}
	}
	tgi_patch_free(p);
	free(text);
}

static void test_parse_markers(void **state)
{
	(void)state;
	const char *first = "Invalid patch: The first line of the patch must be '*** Begin Patch'";
	const char *last = "Invalid patch: The last line of the patch must be '*** End Patch'";

	parse_fails("", first);
	parse_fails("  \n\t\n\r\n", first);
	parse_fails("hello", first);
	parse_fails("*** End Patch", first);
	parse_fails("*** Begin Patch2\n*** End Patch", first);
	parse_fails("** Begin Patch\n*** End Patch", first);
	parse_fails("x\n*** Begin Patch\n*** End Patch", first);
	parse_fails("*** Begin Patch", last);
	parse_fails("*** Begin Patch\n", last);
	parse_fails("*** Begin Patch\n*** Add File: a\n+x\n", last);
	parse_fails("*** Begin Patch\n*** End Patch\nx", last);
	parse_fails("*** Begin Patch\n*** End Patch!", last);
	parse_fails("*** Begin Patch\n*** End of File", last);

	/* not a heredoc: wrong delimiter, unmatched quotes, too short, no word */
	parse_fails("<<EOF\n*** Begin Patch\n*** End Patch\nEND", first);
	parse_fails("<<EOF\n*** Begin Patch\n*** End Patch\n", first);
	parse_fails("<<'EOF\"\n*** Begin Patch\n*** End Patch\nEOF", first);
	parse_fails("<<\n*** Begin Patch\n*** End Patch\nEOF", first);
	parse_fails("<<EOF\n*** Begin Patch\nEOF", first);
	/* a heredoc around something else names what is wrong inside */
	parse_fails("<<EOF\nfoo\n*** End Patch\nEOF", first);
	parse_fails("<<'EOF'\n*** Begin Patch\n*** Add File: a\nEOF", last);
}

/*
 * Every hunk message with its line number, as written and inside each
 * wrapper: the number counts lines after unwrapping and trimming.
 */
static void test_parse_messages(void **state)
{
	(void)state;
	static const struct { const char *body, *msg; } cases[] = {
		{"*** Frobnicate File: x\n",
		 "Invalid patch hunk on line 2: '*** Frobnicate File: x' is not a valid hunk header. "
		 "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
		 "'*** Update File: {path}'"},
		{"*** Add File: a\n+x\n\n\n+y\n",
		 "Invalid patch hunk on line 6: '+y' is not a valid hunk header. "
		 "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
		 "'*** Update File: {path}'"},
		{"*** Delete File: a\n   *** Add file: b   \n",
		 "Invalid patch hunk on line 3: '*** Add file: b' is not a valid hunk header. "
		 "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
		 "'*** Update File: {path}'"},
		{"*** Update File: a\n@@\n-x\n*** Move to: b\n",
		 "Invalid patch hunk on line 5: '*** Move to: b' is not a valid hunk header. "
		 "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
		 "'*** Update File: {path}'"},
		{"*** Add File: a\n+x\n*** Update File: b\n",
		 "Invalid patch hunk on line 4: Update file hunk for path 'b' is empty"},
		{"*** Update File: a\n*** Move to: b\n",
		 "Invalid patch hunk on line 2: Update file hunk for path 'a' is empty"},
		{"*** Update File: a\n\n\n*** Delete File: c\n",
		 "Invalid patch hunk on line 2: Update file hunk for path 'a' is empty"},
		{"*** Update File: a\n@@\n-x\n+y\nbad\n",
		 "Invalid patch hunk on line 6: Expected update hunk to start with a @@ context marker, "
		 "got: 'bad'"},
		{"*** Update File: a\n@@\n-x\n\t\n@@ok\n",
		 "Invalid patch hunk on line 6: Expected update hunk to start with a @@ context marker, "
		 "got: '@@ok'"},
		{"*** Update File: a\n@@\nbad\n",
		 "Invalid patch hunk on line 4: Unexpected line found in update hunk: 'bad'. Every line "
		 "should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"*** Update File: a\n-x\n@@\n*** Delete File: z\n",
		 "Invalid patch hunk on line 5: Unexpected line found in update hunk: "
		 "'*** Delete File: z'. Every line should start with ' ' (context line), '+' (added "
		 "line), or '-' (removed line)"},
		{"*** Update File: a\n@@x\n",
		 "Invalid patch hunk on line 3: Unexpected line found in update hunk: '@@x'. Every line "
		 "should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"*** Update File: a\n@@\n",
		 "Invalid patch hunk on line 4: Update hunk does not contain any lines"},
		{"*** Update File: a\n@@\n*** End of File\n",
		 "Invalid patch hunk on line 4: Update hunk does not contain any lines"},
		{"*** Update File: a\n@@ x\n-a\n@@ y\n",
		 "Invalid patch hunk on line 6: Update hunk does not contain any lines"},
	};
	static const char *const wrap[][2] = {
		{"", ""},
		{"\n \n\t", "\n\n  "},
		{"<<EOF\n", "EOF"},
		{"<<'EOF'\n", "EOF\n"},
		{"<<\"EOF\"\n", "EOF"},
		{"apply_patch <<'PATCH'\n", "PATCH\n"},
		{"  apply_patch <<'EOF'  \n", "  EOF  \n"},
	};
	for (size_t w = 0; w < sizeof wrap / sizeof wrap[0]; w++)
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			char text[1024];
			snprintf(text, sizeof text, "%s*** Begin Patch\n%s*** End Patch\n%s", wrap[w][0],
			         cases[i].body, wrap[w][1]);
			parse_fails(text, cases[i].msg);
			/* the same as CRLF text */
			char crlf[2048], *o = crlf;
			for (const char *s = text; *s; s++) {
				if (*s == '\n')
					*o++ = '\r';
				*o++ = *s;
			}
			*o = '\0';
			parse_fails(crlf, cases[i].msg);
		}
}

/* Every wrapper and tolerance reads the same operations as the plain text. */
static void same_ops(const tgi_patch *a, const tgi_patch *b)
{
	assert_int_equal(a->nops, b->nops);
	for (size_t i = 0; i < a->nops; i++) {
		const tgi_patch_op *x = &a->ops[i], *y = &b->ops[i];
		assert_int_equal(x->kind, y->kind);
		assert_string_equal(x->path, y->path);
		assert_int_equal(!x->move_to, !y->move_to);
		if (x->move_to)
			assert_string_equal(x->move_to, y->move_to);
		assert_int_equal(x->lineno, y->lineno);
		assert_int_equal(x->nadd, y->nadd);
		for (size_t k = 0; k < x->nadd; k++)
			assert_true(x->add[k].len == y->add[k].len &&
			            !memcmp(x->add[k].s, y->add[k].s, x->add[k].len));
		assert_int_equal(x->nchunks, y->nchunks);
		for (size_t c = 0; c < x->nchunks; c++) {
			const tgi_patch_chunk *p = &x->chunks[c], *q = &y->chunks[c];
			assert_int_equal(!p->ctx.s, !q->ctx.s);
			if (p->ctx.s)
				assert_true(p->ctx.len == q->ctx.len && !memcmp(p->ctx.s, q->ctx.s, p->ctx.len));
			assert_int_equal(p->nold, q->nold);
			assert_int_equal(p->nnew, q->nnew);
			for (size_t k = 0; k < p->nold; k++)
				assert_true(p->old[k].len == q->old[k].len &&
				            !memcmp(p->old[k].s, q->old[k].s, p->old[k].len));
			for (size_t k = 0; k < p->nnew; k++)
				assert_true(p->new[k].len == q->new[k].len &&
				            !memcmp(p->new[k].s, q->new[k].s, p->new[k].len));
			assert_int_equal(p->eof, q->eof);
			assert_int_equal(p->lineno, q->lineno);
		}
	}
}

static void test_parse_tolerances(void **state)
{
	(void)state;
	const char *body = "*** Add File: a.txt\n+x\n"
	                   "*** Update File: b.txt\n@@ f()\n c\n-d\n+e\n\n@@\n-g\n+h\n*** End of File\n"
	                   "*** Delete File: c.txt\n";
	char plain[1024];
	snprintf(plain, sizeof plain, PATCH("%s"), body);
	tgi_patch *ref = parse_ok(plain);
	assert_int_equal(ref->nops, 3);
	/* the blank line after the first chunk is empty context of it */
	lines_are(ref->ops[1].chunks[0].old, ref->ops[1].chunks[0].nold, LINES("c", "d", ""));

	static const char *const wrap[][2] = {
		{"  \n\n\t", " \n\n\n"},
		{"<<EOF\n", "EOF"},
		{"<<'EOF'\n", "EOF\n"},
		{"<<\"EOF\"\n", "EOF\n"},
		{"\n<<EOF\n", "EOF\n\n"},
		{"apply_patch <<'PATCH'\n", "PATCH\n"},
		{"apply_patch <<'EOF'\n", "EOF"},
		{"apply_patch <<\"EOF\"\n", "EOF"},
		{"apply_patch <<EOF\n", "EOF"},
	};
	for (size_t w = 0; w < sizeof wrap / sizeof wrap[0]; w++) {
		char text[1200];
		snprintf(text, sizeof text, "%s%s%s", wrap[w][0], plain, wrap[w][1]);
		tgi_patch *p = parse_ok(text);
		same_ops(ref, p);
		tgi_patch_free(p);
	}

	/* marker and header lines compared trimmed; CRLF text; paths trimmed */
	tgi_patch *p = parse_ok(" \t*** Begin Patch \t\r\n"
	                        "   *** Add File:    a.txt  \r\n"
	                        "+x\r\n"
	                        "\t*** Update File: b.txt \r\n"
	                        "@@ f()\r\n c\r\n-d\r\n+e\r\n\r\n@@\r\n-g\r\n+h\r\n*** End of File\r\n"
	                        "*** Delete File:  c.txt\t \r\n"
	                        "  *** End Patch  \r\n");
	same_ops(ref, p);
	tgi_patch_free(p);

	/* blank lines between operations and before the first chunk */
	p = parse_ok(PATCH("\n\n*** Add File: a.txt\n+x\n\n \n\t\n"
	                   "*** Update File: b.txt\n\n \n@@ f()\n c\n-d\n+e\n\n@@\n-g\n+h\n*** End of File\n"
	                   "\n\n*** Delete File: c.txt\n\n\n"));
	assert_int_equal(p->nops, 3);
	assert_string_equal(p->ops[0].path, "a.txt");
	lines_are(p->ops[0].add, p->ops[0].nadd, LINES("x"));
	assert_string_equal(p->ops[1].path, "b.txt");
	assert_int_equal(p->ops[1].nchunks, 2);
	assert_string_equal(p->ops[2].path, "c.txt");
	assert_int_equal(p->ops[2].kind, TGI_PATCH_DELETE);
	tgi_patch_free(p);

	/* blank (whitespace-only, not ' '-led) lines between chunks are skipped */
	p = parse_ok(PATCH("*** Update File: b\n@@\n-a\n+b\n\t\n\t \n@@\n-c\n+d\n"));
	assert_int_equal(p->ops[0].nchunks, 2);
	lines_are(p->ops[0].chunks[0].old, p->ops[0].chunks[0].nold, LINES("a"));
	lines_are(p->ops[0].chunks[1].old, p->ops[0].chunks[1].nold, LINES("c"));
	tgi_patch_free(p);

	/* the Move line right after the header; its path trimmed */
	p = parse_ok(PATCH("*** Update File: a\n*** Move to:   dir/b  \n@@\n-x\n+y\n"));
	assert_string_equal(p->ops[0].move_to, "dir/b");
	tgi_patch_free(p);

	/* a heredoc with a minimal patch (four lines) */
	p = parse_ok("<<EOF\n*** Begin Patch\n*** End Patch\nEOF");
	assert_int_equal(p->nops, 0);
	tgi_patch_free(p);

	/* a path is kept as written (after trimming), not normalised */
	p = parse_ok(PATCH("*** Add File: ./x//y/ z.txt\n"));
	assert_string_equal(p->ops[0].path, "./x//y/ z.txt");
	tgi_patch_free(p);
	tgi_patch_free(ref);
}

static void test_parse_limits(void **state)
{
	(void)state;
	tgi_patch *p = (tgi_patch *)1;
	char err[ERRCAP];

	/* TGI_PATCH_MAX bytes: fine; one more: refused with a sentence */
	char *big = malloc(TGI_PATCH_MAX + 1);
	const char *core = "*** Begin Patch\n*** Delete File: a\n*** End Patch\n";
	memset(big, ' ', TGI_PATCH_MAX + 1);
	memcpy(big, core, strlen(core));
	assert_int_equal(tgi_patch_parse(big, TGI_PATCH_MAX, &p, err, sizeof err), 0);
	assert_int_equal(p->nops, 1);
	tgi_patch_free(p);
	p = (tgi_patch *)1;
	err[0] = '\0';
	assert_int_equal(tgi_patch_parse(big, TGI_PATCH_MAX + 1, &p, err, sizeof err), -1);
	assert_null(p);
	assert_true(strncmp(err, "Invalid patch", 13) == 0);
	assert_non_null(strstr(err, "16777216"));
	free(big);

	/* a NUL byte anywhere */
	static const char nul[] = "*** Begin Patch\n*** Add File: a\n+x\0y\n*** End Patch\n";
	p = (tgi_patch *)1;
	err[0] = '\0';
	assert_int_equal(tgi_patch_parse(nul, sizeof nul - 1, &p, err, sizeof err), -1);
	assert_null(p);
	assert_true(strncmp(err, "Invalid patch", 13) == 0);
	assert_non_null(strstr(err, "NUL"));
	p = (tgi_patch *)1;
	assert_int_equal(tgi_patch_parse(nul, sizeof nul, &p, err, sizeof err), -1);  /* trailing */
	assert_null(p);

	/* TGI_PATCH_OPS_MAX operations: fine; one more: refused */
	size_t cap = (TGI_PATCH_OPS_MAX + 2) * 32;
	char *text = malloc(cap);
	for (int extra = 0; extra <= 1; extra++) {
		size_t n = (size_t)sprintf(text, "*** Begin Patch\n");
		for (int i = 0; i < TGI_PATCH_OPS_MAX + extra; i++)
			n += (size_t)sprintf(text + n, "*** Delete File: f%d\n", i);
		sprintf(text + n, "*** End Patch");
		p = (tgi_patch *)1;
		err[0] = '\0';
		int r = tgi_patch_parse(text, strlen(text), &p, err, sizeof err);
		if (!extra) {
			assert_int_equal(r, 0);
			assert_int_equal(p->nops, TGI_PATCH_OPS_MAX);
			assert_string_equal(p->ops[TGI_PATCH_OPS_MAX - 1].path, "f4095");
			assert_int_equal(tgi_patch_deletes(p), 1);
			tgi_patch_free(p);
		} else {
			assert_int_equal(r, -1);
			assert_null(p);
			assert_true(strncmp(err, "Invalid patch", 13) == 0);
			assert_non_null(strstr(err, "4096"));
		}
	}
	free(text);

	/* a long bad line is quoted cut short, and control characters are not echoed */
	char longline[4096];
	memset(longline, 'z', sizeof longline);
	memcpy(longline, "*** Begin Patch\n\x1b[2J", 20);
	strcpy(longline + 3000, "\n*** End Patch");
	p = (tgi_patch *)1;
	assert_int_equal(tgi_patch_parse(longline, strlen(longline), &p, err, sizeof err), -1);
	assert_true(strncmp(err, "Invalid patch hunk on line 2: '", 31) == 0);
	assert_true(strlen(err) < 1024);
	for (const char *s = err; *s; s++)
		assert_true((unsigned char)*s >= 0x20 && *s != 0x7f);

	/* a small error buffer is cut, never overrun */
	char small[16];
	memset(small, 'X', sizeof small);
	assert_int_equal(tgi_patch_parse("nope", 4, &p, small, 12), -1);
	assert_int_equal(strlen(small), 11);
	assert_int_equal(small[12], 'X');
	tgi_patch_free(NULL);
}

static void test_parse_deletes(void **state)
{
	(void)state;
	tgi_patch *p = parse_ok(PATCH("*** Add File: a\n+x\n*** Update File: b\n@@\n-x\n+y\n"));
	assert_int_equal(tgi_patch_deletes(p), 0);
	tgi_patch_free(p);
	p = parse_ok(PATCH("*** Update File: b\n*** Move to: c\n@@\n-x\n"));
	assert_int_equal(tgi_patch_deletes(p), 0);     /* a Move is not a delete */
	tgi_patch_free(p);
	p = parse_ok(PATCH("*** Add File: a\n*** Delete File: z\n"));
	assert_int_equal(tgi_patch_deletes(p), 1);
	tgi_patch_free(p);
	p = parse_ok(PATCH(""));
	assert_int_equal(tgi_patch_deletes(p), 0);
	tgi_patch_free(p);
}

/* ==== matching ============================================================ */

/* Seek the NULL-terminated pattern in the NULL-terminated file lines. */
static long seek(const char *const *file, const char *const *pat, size_t start, int eof)
{
	tgi_patch_line l[64], q[64];
	size_t n = 0, m = 0;
	for (; file[n]; n++)
		l[n] = (tgi_patch_line){file[n], strlen(file[n])};
	for (; pat[m]; m++)
		q[m] = (tgi_patch_line){pat[m], strlen(pat[m])};
	return tgi_patch_seek(l, n, q, m, start, eof);
}

#define F(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- tgi_patch_map_paths ---- */

/* Makes "/ws/..." relative; counts the paths it is shown. */
static int mapped;
static int map_ws(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	mapped++;
	return tgi_path_within(ud, path, len, out, cap) == 1;
}

/* A map that answers every path with a fixed text. */
static int map_to(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	(void)path, (void)len;
	tgi_snprintf(out, cap, "%s", (const char *)ud);
	return 1;
}

static void map_is(const char *text, const char *want)
{
	char *out = (char *)1;
	size_t len = 99;
	int r = tgi_patch_map_paths(text, strlen(text), map_ws, "/ws", &out, &len);
	if (!want) {
		assert_int_equal(r, 0);
		assert_null(out);
		assert_int_equal(len, 0);
		return;
	}
	assert_int_equal(r, 1);
	assert_non_null(out);
	assert_int_equal(len, strlen(want));
	assert_string_equal(out, want);
	free(out);
}

static void test_map_paths(void **state)
{
	(void)state;
	/* every header: Add, Delete, Update, Move to; the rest byte for byte */
	mapped = 0;
	map_is("*** Begin Patch\n"
	       "*** Add File: /ws/src/new.c\n+/ws/not/a/path\n"
	       "*** Delete File:   /ws/old.c  \n"
	       "*** Update File: /ws/src/a.c\r\n*** Move to: /ws/src/b.c\n@@ /ws/ctx\n-x\n+y\n"
	       "*** Update File: rel.c\n@@\n-a\n+b\n"
	       "*** End Patch\n",
	       "*** Begin Patch\n"
	       "*** Add File: src/new.c\n+/ws/not/a/path\n"
	       "*** Delete File:   old.c  \n"
	       "*** Update File: src/a.c\r\n*** Move to: src/b.c\n@@ /ws/ctx\n-x\n+y\n"
	       "*** Update File: rel.c\n@@\n-a\n+b\n"
	       "*** End Patch\n");
	assert_int_equal(mapped, 5);
	/* around the whole text: spaces, a heredoc wrapper */
	map_is("  \n*** Begin Patch\n*** Add File: /ws/x\n+1\n*** End Patch\n\n",
	       "  \n*** Begin Patch\n*** Add File: x\n+1\n*** End Patch\n\n");
	map_is("apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: /ws/d/x\n*** End Patch\nEOF",
	       "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: d/x\n*** End Patch\nEOF");
	/* a leading space the header's trimming would eat keeps its meaning */
	map_is("*** Begin Patch\n*** Add File: /ws/ x\n+1\n*** End Patch",
	       "*** Begin Patch\n*** Add File: ./ x\n+1\n*** End Patch");
	map_is("*** Begin Patch\n*** Add File: /ws/d/x  /\n+1\n*** End Patch",
	       "*** Begin Patch\n*** Add File: d/x  /\n+1\n*** End Patch");
	/* the root itself, and ".." kept for the kernel */
	map_is("*** Begin Patch\n*** Add File: /ws/../x\n+1\n*** End Patch",
	       "*** Begin Patch\n*** Add File: ../x\n+1\n*** End Patch");
	/* nothing to map, elsewhere, or a text that does not parse: 0 */
	map_is("*** Begin Patch\n*** Add File: a\n+1\n*** End Patch", NULL);
	map_is("*** Begin Patch\n*** Add File: /etc/x\n+1\n*** End Patch", NULL);
	map_is("*** Begin Patch\n*** Add File: /ws/x\n+1\n", NULL);
	map_is("", NULL);

	/* what it gives parses to the same operations with the mapped paths */
	const char *t = "*** Begin Patch\n*** Update File: /ws/a\n*** Move to: /ws/ b\n@@\n-1\n+2\n"
	                "*** End Patch";
	char *out;
	size_t len;
	assert_int_equal(tgi_patch_map_paths(t, strlen(t), map_ws, "/ws", &out, &len), 1);
	tgi_patch *p = parse_ok(out);
	assert_int_equal(p->nops, 1);
	assert_string_equal(p->ops[0].path, "a");
	assert_string_equal(p->ops[0].move_to, "./ b");
	tgi_patch_free(p);
	free(out);

	/* a replacement longer than the path fits; one with a newline is not used */
	t = "*** Begin Patch\n*** Add File: a\n+1\n*** End Patch";
	assert_int_equal(tgi_patch_map_paths(t, strlen(t), map_to, "some/much/longer/path", &out,
	                                     &len), 1);
	assert_string_equal(out, "*** Begin Patch\n*** Add File: some/much/longer/path\n+1\n"
	                    "*** End Patch");
	free(out);
	assert_int_equal(tgi_patch_map_paths(t, strlen(t), map_to, "x\n*** Delete File: y", &out,
	                                     &len), 0);
	assert_null(out);
}

/* Where each path lies in the text given to the parser. */
static void test_parse_path_offsets(void **state)
{
	(void)state;
	const char *t = "\n  *** Begin Patch\n*** Add File:  a b \n+x\n*** Update File: c\n"
	                "  *** Move to: d\n@@\n-1\n+2\n*** End Patch";
	tgi_patch *p = parse_ok(t);
	assert_int_equal(p->nops, 2);
	for (size_t i = 0; i < p->nops; i++) {
		const tgi_patch_op *op = &p->ops[i];
		assert_memory_equal(t + op->path_at, op->path, strlen(op->path));
		if (op->move_to)
			assert_memory_equal(t + op->move_at, op->move_to, strlen(op->move_to));
	}
	assert_string_equal(p->ops[0].path, "a b");
	assert_string_equal(p->ops[1].move_to, "d");
	tgi_patch_free(p);
}

static void test_seek_passes(void **state)
{
	(void)state;
	/* pass 1: exact */
	assert_int_equal(seek(F("a", "b", "c"), F("b"), 0, 0), 1);
	assert_int_equal(seek(F("a", "b", "c"), F("b", "c"), 0, 0), 1);
	assert_int_equal(seek(F("a", "b", "c"), F("a", "b", "c"), 0, 0), 0);
	assert_int_equal(seek(F("a", "b", "c"), F("c", "b"), 0, 0), -1);
	assert_int_equal(seek(F("x", "x", "x"), F("x"), 0, 0), 0);       /* the first */
	assert_int_equal(seek(F("x", "y", "x"), F("x"), 1, 0), 2);       /* from start */
	assert_int_equal(seek(F("x", "y", "x"), F("x"), 2, 0), 2);
	assert_int_equal(seek(F("x", "y", "x"), F("x"), 3, 0), -1);
	assert_int_equal(seek(F("x", "y", "x"), F("x"), 9, 0), -1);
	assert_int_equal(seek(F("x", "y", "x"), F("y", "x"), 2, 0), -1);
	assert_int_equal(seek(F("Foo"), F("foo"), 0, 0), -1);           /* case matters */

	/* pass 2: trailing whitespace ignored, on either side */
	assert_int_equal(seek(F("a", "foo  \t"), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("a", "foo"), F("foo \t "), 0, 0), 1);
	assert_int_equal(seek(F("foo \r", "bar\v\f"), F("foo", "bar "), 0, 0), 0);
	assert_int_equal(seek(F(" foo"), F("foo"), 0, 0), 0);            /* (pass 3) */
	assert_int_equal(seek(F("fo o"), F("foo"), 0, 0), -1);           /* inner whitespace counts */
	assert_int_equal(seek(F("foo bar"), F("foo  bar"), 0, 0), -1);

	/* pass 3: both ends trimmed */
	assert_int_equal(seek(F("x", "\t  foo  "), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("x", "foo"), F("    foo"), 0, 0), 1);
	assert_int_equal(seek(F("  a", "\tb"), F("a ", "  b"), 0, 0), 0);
	assert_int_equal(seek(F("", "   "), F("\t"), 1, 0), 1);            /* blank equals blank */

	/* pass 4: folded punctuation (the table below tests every code point) */
	assert_int_equal(seek(F("x", "  a \xe2\x80\x94 b  "), F("a - b"), 0, 0), 1);

	/* all lines of one match must agree in one pass */
	assert_int_equal(seek(F("a ", "b", "a", "b "), F("a", "b"), 0, 0), 0);   /* pass 2 at 0 */
	assert_int_equal(seek(F("a", "b", "x", "a", "b"), F("a", "b"), 1, 0), 3);
}

/* The first pass that matches anywhere wins, wherever the stricter match lies. */
static void test_seek_pass_order(void **state)
{
	(void)state;
	/* exact later beats trailing-whitespace earlier */
	assert_int_equal(seek(F("foo ", "x", "foo"), F("foo"), 0, 0), 2);
	/* exact earlier beats trailing-whitespace later */
	assert_int_equal(seek(F("foo", "x", "foo "), F("foo"), 0, 0), 0);
	/* trailing-whitespace later beats trimmed earlier */
	assert_int_equal(seek(F(" foo", "x", "foo "), F("foo"), 0, 0), 2);
	assert_int_equal(seek(F("foo\t", "x", " foo"), F("foo"), 0, 0), 0);
	/* trimmed later beats folded earlier */
	assert_int_equal(seek(F("a\xe2\x80\x93" "b", "x", " a-b"), F("a-b"), 0, 0), 2);
	assert_int_equal(seek(F(" a-b", "x", "a\xe2\x80\x93" "b"), F("a-b"), 0, 0), 0);
	/* exact beats folded, both directions of the fold */
	assert_int_equal(seek(F("\xe2\x80\x9cq\xe2\x80\x9d", "\"q\""), F("\"q\""), 0, 0), 1);
	assert_int_equal(seek(F("\"q\"", "\xe2\x80\x9cq\xe2\x80\x9d"),
	                      F("\xe2\x80\x9cq\xe2\x80\x9d"), 0, 0), 1);
	/* multi-line: a looser match earlier loses to a stricter one later */
	assert_int_equal(seek(F(" a", " b", "a", "b"), F("a", "b"), 0, 0), 2);
	assert_int_equal(seek(F("a ", "b ", " a", " b"), F("a", "b"), 0, 0), 0);
	/* a stricter match before start does not count */
	assert_int_equal(seek(F("foo", "foo "), F("foo"), 1, 0), 1);
}

/* Every code point the issue lists, as UTF-8 bytes. */
static const struct {
	const char *utf8;
	char        ascii;
	unsigned    cp;
} folds[] = {
	{"\xe2\x80\x90", '-', 0x2010}, {"\xe2\x80\x91", '-', 0x2011}, {"\xe2\x80\x92", '-', 0x2012},
	{"\xe2\x80\x93", '-', 0x2013}, {"\xe2\x80\x94", '-', 0x2014}, {"\xe2\x80\x95", '-', 0x2015},
	{"\xe2\x88\x92", '-', 0x2212},
	{"\xe2\x80\x98", '\'', 0x2018}, {"\xe2\x80\x99", '\'', 0x2019},
	{"\xe2\x80\x9a", '\'', 0x201A}, {"\xe2\x80\x9b", '\'', 0x201B},
	{"\xe2\x80\x9c", '"', 0x201C}, {"\xe2\x80\x9d", '"', 0x201D},
	{"\xe2\x80\x9e", '"', 0x201E}, {"\xe2\x80\x9f", '"', 0x201F},
	{"\xc2\xa0", ' ', 0x00A0},
	{"\xe2\x80\x82", ' ', 0x2002}, {"\xe2\x80\x83", ' ', 0x2003}, {"\xe2\x80\x84", ' ', 0x2004},
	{"\xe2\x80\x85", ' ', 0x2005}, {"\xe2\x80\x86", ' ', 0x2006}, {"\xe2\x80\x87", ' ', 0x2007},
	{"\xe2\x80\x88", ' ', 0x2008}, {"\xe2\x80\x89", ' ', 0x2009}, {"\xe2\x80\x8a", ' ', 0x200A},
	{"\xe2\x80\xaf", ' ', 0x202F}, {"\xe2\x81\x9f", ' ', 0x205F}, {"\xe3\x80\x80", ' ', 0x3000},
};

static void test_seek_fold_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof folds / sizeof folds[0]; i++) {
		char uni[32], asc[32], twice[32], other[32];
		snprintf(uni, sizeof uni, "x%sy", folds[i].utf8);
		snprintf(asc, sizeof asc, "x%cy", folds[i].ascii);
		snprintf(twice, sizeof twice, "%s%s%c", folds[i].utf8, folds[i].utf8, folds[i].ascii);
		snprintf(other, sizeof other, "x%cy", folds[i].ascii == '-' ? '\'' : '-');
		if (seek(F("q", uni), F(asc), 0, 0) != 1)
			fail_msg("U+%04X in the file does not match '%c'", folds[i].cp, folds[i].ascii);
		if (seek(F("q", asc), F(uni), 0, 0) != 1)
			fail_msg("U+%04X in the pattern does not match '%c'", folds[i].cp, folds[i].ascii);
		char three[8];
		snprintf(three, sizeof three, "%c%c%c", folds[i].ascii, folds[i].ascii, folds[i].ascii);
		if (seek(F("q", twice), F(three), 0, 0) != 1)
			fail_msg("U+%04X twice does not match", folds[i].cp);
		assert_int_equal(seek(F(uni), F(other), 0, 0), -1);        /* folds to one thing only */
		assert_int_equal(seek(F(uni), F("xy"), 0, 0), -1);         /* folds, does not vanish */
		assert_int_equal(seek(F(uni), F("x  y"), 0, 0), -1);
		/* two members of one class match each other */
		for (size_t k = 0; k < sizeof folds / sizeof folds[0]; k++) {
			char u2[32];
			snprintf(u2, sizeof u2, "x%sy", folds[k].utf8);
			assert_int_equal(seek(F(uni), F(u2), 0, 0),
			                 folds[k].ascii == folds[i].ascii ? 0 : -1);
		}
	}
	/* neighbours that are not in the table stay themselves */
	static const char *const not_dash[] = {
		"\xe2\x80\x8f" /* U+200F */, "\xe2\x80\x96" /* U+2016 */, "\xe2\x80\x97" /* U+2017 */,
		"\xe2\x88\x91" /* U+2211 */, "\xe2\x88\x93" /* U+2213 */, "\xc2\xad" /* U+00AD */,
		"\xef\xbc\x8d" /* U+FF0D */, "\xe2\x81\x83" /* U+2043 */, "\xe2\x80\xa0" /* U+2020 */,
	};
	for (size_t i = 0; i < sizeof not_dash / sizeof not_dash[0]; i++) {
		char uni[32];
		snprintf(uni, sizeof uni, "x%sy", not_dash[i]);
		assert_int_equal(seek(F(uni), F("x-y"), 0, 0), -1);
		assert_int_equal(seek(F(uni), F("x'y"), 0, 0), -1);
		assert_int_equal(seek(F(uni), F("x\"y"), 0, 0), -1);
		assert_int_equal(seek(F(uni), F("x y"), 0, 0), -1);
		assert_int_equal(seek(F(uni), F(uni), 0, 0), 0);
	}
	/* U+2000, U+2001 and U+200B are not in the table: inside a line they stay */
	assert_int_equal(seek(F("x\xe2\x80\x80y"), F("x y"), 0, 0), -1);
	assert_int_equal(seek(F("x\xe2\x80\x81y"), F("x y"), 0, 0), -1);
	assert_int_equal(seek(F("x\xe2\x80\x8by"), F("x y"), 0, 0), -1);
	/* ASCII punctuation is not folded into each other */
	assert_int_equal(seek(F("x-y"), F("x'y"), 0, 0), -1);
	assert_int_equal(seek(F("x'y"), F("x\"y"), 0, 0), -1);
	assert_int_equal(seek(F("x`y"), F("x'y"), 0, 0), -1);
	/* folding with trimming, over several lines */
	assert_int_equal(seek(F("z", "\xc2\xa0" "a\xe2\x80\x94" "b\xe3\x80\x80",
	                        "\xe2\x80\x98q\xe2\x80\x99 "), F("a-b", "'q'"), 0, 0), 1);
	/* a real line of typography */
	assert_int_equal(seek(F("print(\xe2\x80\x9cit\xe2\x80\x99s \xe2\x80\x94 ok\xe2\x80\x9d)"),
	                      F("print(\"it's - ok\")"), 0, 0), 0);
}

static void test_seek_unicode_trim(void **state)
{
	(void)state;
	/* Unicode whitespace at the ends is trimmed (NBSP, U+3000, U+2028, ...) */
	assert_int_equal(seek(F("x", "\xc2\xa0" "foo"), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("x", "foo\xc2\xa0"), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("x", "\xe3\x80\x80" "foo\xe3\x80\x80"), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("x", "foo"), F("\xe3\x80\x80\xc2\xa0" "foo \xe3\x80\x80"), 0, 0), 1);
	assert_int_equal(seek(F("foo\xe2\x80\xa8"), F("foo"), 0, 0), 0);        /* U+2028 */
	assert_int_equal(seek(F("\xe2\x80\xa9" "foo"), F("foo"), 0, 0), 0);     /* U+2029 */
	assert_int_equal(seek(F("\xe1\x9a\x80" "foo"), F("foo"), 0, 0), 0);     /* U+1680 */
	assert_int_equal(seek(F("foo\xc2\x85"), F("foo"), 0, 0), 0);            /* U+0085 */
	assert_int_equal(seek(F("\xe2\x80\x80" "foo\xe2\x80\x81"), F("foo"), 0, 0), 0);
	assert_int_equal(seek(F("foo\xe2\x81\x9f"), F("foo"), 0, 0), 0);        /* U+205F */
	/* trailing Unicode whitespace is the second pass: it beats a leading one */
	assert_int_equal(seek(F("\xc2\xa0" "foo", "foo\xc2\xa0"), F("foo"), 0, 0), 1);
	assert_int_equal(seek(F("\xe3\x80\x80" "foo", "foo\xe3\x80\x80"), F("foo"), 0, 0), 1);
	/* only whitespace: trimmed to an empty line */
	assert_int_equal(seek(F("x", "\xc2\xa0\xe3\x80\x80 \t"), F(""), 0, 0), 1);
	/* not whitespace: U+200B (zero width space) and U+FEFF stay */
	assert_int_equal(seek(F("foo\xe2\x80\x8b"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("\xef\xbb\xbf" "foo"), F("foo"), 0, 0), -1);
	/* whole characters only: a lone A0 or 80 byte is not a space */
	assert_int_equal(seek(F("\xa0" "foo"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("foo\xa0"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("foo\x85"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("foo\x80\x80"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("foo\xe3\x80"), F("foo"), 0, 0), -1);
	assert_int_equal(seek(F("\x80\x80" "foo"), F("foo"), 0, 0), -1);
	/* a character ending in the same bytes as a space is not one */
	assert_int_equal(seek(F("foo\xe4\x80\x80"), F("foo"), 0, 0), -1);   /* U+4000 */
	assert_int_equal(seek(F("foo\xc3\xa0"), F("foo"), 0, 0), -1);       /* U+00E0 */
}

static void test_seek_eof_and_edges(void **state)
{
	(void)state;
	/* eof: only the position that ends at the last line */
	assert_int_equal(seek(F("a", "b", "a"), F("a"), 0, 1), 2);
	assert_int_equal(seek(F("a", "b", "a"), F("a"), 0, 0), 0);
	assert_int_equal(seek(F("a", "b", "c"), F("b"), 0, 1), -1);
	assert_int_equal(seek(F("a", "b", "c"), F("b", "c"), 0, 1), 1);
	assert_int_equal(seek(F("a", "b", "c"), F("a", "b", "c"), 0, 1), 0);
	assert_int_equal(seek(F("a", "b", "c "), F("c"), 0, 1), 2);          /* fuzzy at the end */
	assert_int_equal(seek(F("a", "b", "\xe2\x80\x94"), F("-"), 0, 1), 2);
	assert_int_equal(seek(F("c", "b", "c "), F("c"), 0, 1), 2);           /* not the exact 0 */
	/* ... and not before start */
	assert_int_equal(seek(F("a", "b"), F("b"), 1, 1), 1);
	assert_int_equal(seek(F("a", "b"), F("b"), 2, 1), -1);
	assert_int_equal(seek(F("a", "b", "c"), F("b", "c"), 2, 1), -1);
	assert_int_equal(seek(F("a", "b", "c"), F("b", "c"), 1, 1), 1);
	assert_int_equal(seek(F("a"), F("a", "a"), 0, 1), -1);

	/* an empty pattern matches at start */
	assert_int_equal(seek(F("a", "b"), NOLINES, 0, 0), 0);
	assert_int_equal(seek(F("a", "b"), NOLINES, 1, 0), 1);
	assert_int_equal(seek(F("a", "b"), NOLINES, 2, 0), 2);
	assert_int_equal(seek(NOLINES, NOLINES, 0, 0), 0);
	assert_int_equal(tgi_patch_seek(NULL, 0, NULL, 0, 0, 0), 0);
	/* a pattern longer than the file */
	assert_int_equal(seek(NOLINES, F("a"), 0, 0), -1);
	assert_int_equal(seek(NOLINES, F("a"), 0, 1), -1);
	assert_int_equal(seek(F("a"), F("a", "b"), 0, 0), -1);
	assert_int_equal(seek(F("a", "b"), F("a", "b", ""), 0, 0), -1);
	assert_int_equal(seek(F("a", "b"), F("a", "b", ""), 0, 1), -1);
	/* empty lines */
	assert_int_equal(seek(F("a", "", "b"), F(""), 0, 0), 1);
	assert_int_equal(seek(F("a", "", "b"), F("", "b"), 0, 1), 1);
}

static void test_seek_invalid_utf8(void **state)
{
	(void)state;
	/* invalid bytes match only themselves */
	assert_int_equal(seek(F("a\xff" "b"), F("a\xff" "b"), 0, 0), 0);
	assert_int_equal(seek(F("a\xff" "b"), F("a\xfe" "b"), 0, 0), -1);
	assert_int_equal(seek(F("a\xff" "b"), F("a-b"), 0, 0), -1);
	assert_int_equal(seek(F("a\xff" "b"), F("a b"), 0, 0), -1);
	assert_int_equal(seek(F("a\xff" "b"), F("ab"), 0, 0), -1);
	assert_int_equal(seek(F("\x80"), F("\x81"), 0, 0), -1);
	assert_int_equal(seek(F("\x80"), F("\xc2\x80"), 0, 0), -1);
	/* truncated sequences, at the end and before ASCII */
	assert_int_equal(seek(F("a\xe2\x80"), F("a\xe2\x80"), 0, 0), 0);
	assert_int_equal(seek(F("a\xe2\x80"), F("a-"), 0, 0), -1);
	assert_int_equal(seek(F("a\xe2\x80"), F("a"), 0, 0), -1);
	assert_int_equal(seek(F("a\xe2\x80-"), F("a--"), 0, 0), -1);
	assert_int_equal(seek(F("a\xe2\x80-"), F("a-"), 0, 0), -1);
	assert_int_equal(seek(F("a\xe2"), F("a\xe2\x80\x94"), 0, 0), -1);
	assert_int_equal(seek(F("\xf0\x9f\x98"), F("\xf0\x9f\x98\x80"), 0, 0), -1);
	assert_int_equal(seek(F("\xe2\x80\x94\xe2"), F("-"), 0, 0), -1);
	/* a lead byte whose continuation is missing does not swallow the next character */
	assert_int_equal(seek(F("\xe2" "a\xe2\x80\x94"), F("\xe2" "a-"), 0, 0), 0);
	/* surrogates stay distinct */
	assert_int_equal(seek(F("\xed\xa0\x80"), F("\xed\xa0\x81"), 0, 0), -1);
	/* over-long encodings are not the character they spell, and a sequence past
	 * U+10FFFF is not some invalid byte: every pair below must stay apart */
	static const char *const apart[][2] = {
		{"a\xc0\xad" "b", "a-b"},               /* '-' in 2 bytes */
		{"a\xe0\x80\xad" "b", "a-b"},           /* '-' in 3 bytes */
		{"a\xf0\x82\x80\x94" "b", "a-b"},       /* U+2014 in 4 bytes */
		{"a\xc0\xa7" "b", "a'b"},               /* '\'' in 2 bytes */
		{"x\xc0\xa0" "y", "x y"},               /* ' ' in 2 bytes */
		{"\xc0\xa0" "foo", "foo"},
		{"a\xf4\x90\x82\x80" "b", "a\x80" "b"},  /* U+110080 against a lone 0x80 */
		{"a\xf7\xbf\xbf\xbf" "b", "a\xbf" "b"},
	};
	char bad[1024] = "";
	for (size_t i = 0; i < sizeof apart / sizeof apart[0]; i++)
		if (seek(F(apart[i][0]), F(apart[i][1]), 0, 0) != -1 ||
		    seek(F(apart[i][1]), F(apart[i][0]), 0, 0) != -1)
			snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " #%zu", i);
	if (bad[0])
		fail_msg("invalid UTF-8 matched a different character in cases%s", bad);
	/* stray bytes everywhere do not crash, and equal bytes still match */
	char junk[256];
	for (int i = 0; i < 255; i++)
		junk[i] = (char)(i + 1);
	junk[255] = '\0';
	assert_int_equal(seek(F("x", junk), F(junk), 0, 0), 1);
	assert_int_equal(seek(F("x", junk + 128), F(junk + 127), 0, 0), -1);
}

/* ==== the workspace ======================================================= */

typedef struct fx {
	char root[64];
	char ws[96];
	int  ws_fd;       /* O_PATH */
	int  jfd;         /* the journal directory, outside the workspace */
	char jdir[96];
} fx;

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	char p[160];

	strcpy(f->root, "/tmp/tg-patch-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->ws, sizeof f->ws, "%s/ws", f->root);
	snprintf(f->jdir, sizeof f->jdir, "%s/journal", f->root);
	snprintf(p, sizeof p, "%s/outside", f->root);
	if (mkdir(f->ws, 0755) < 0 || mkdir(p, 0755) < 0 || mkdir(f->jdir, 0700) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/outside/secret.txt", f->root);
	FILE *s = fopen(p, "w");
	fputs("secret\n", s);
	fclose(s);
	f->ws_fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->jfd = open(f->jdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->ws_fd < 0 || f->jfd < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	close(f->ws_fd);
	close(f->jfd);
	chmod(f->ws, 0755);
	nftw(f->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void put_mode(const fx *f, const char *rel, const char *data, mode_t mode)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", f->ws, rel);
	/* parents first */
	for (char *s = p + strlen(f->ws) + 1; (s = strchr(s, '/')); *s++ = '/') {
		*s = '\0';
		mkdir(p, 0755);
	}
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void put(const fx *f, const char *rel, const char *data)
{
	put_mode(f, rel, data, 0644);
}

static void mkdir_ws(const fx *f, const char *rel)
{
	assert_int_equal(mkdirat(f->ws_fd, rel, 0755), 0);
}

static void link_ws(const fx *f, const char *target, const char *rel)
{
	assert_int_equal(symlinkat(target, f->ws_fd, rel), 0);
}

static int exists_ws(const fx *f, const char *rel)
{
	struct stat st;
	return fstatat(f->ws_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static char *slurp_abs(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 256, n = 0;
	char *buf = malloc(cap);
	ssize_t r;
	while ((r = read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void file_is(const fx *f, const char *rel, const char *want)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", f->ws, rel);
	size_t n;
	char *got = slurp_abs(p, &n);
	if (!got)
		fail_msg("%s is missing", rel);
	if (n != strlen(want) || memcmp(got, want, n) != 0)
		fail_msg("%s is\n\"%s\"\nwant\n\"%s\"", rel, got, want);
	free(got);
}

static mode_t mode_of(const fx *f, const char *rel)
{
	struct stat st;
	assert_int_equal(fstatat(f->ws_fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_mode & 07777;
}

/* The whole tree as JSON: {"path": bytes, "dir/": "<dir>", "link": "-> target"},
 * with modes ("0644:bytes", "0755:<dir>") when asked. */
static void snap_dir(json_t *out, const char *abs, const char *rel, int modes)
{
	DIR *d = opendir(abs);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char a[PATH_MAX], r[PATH_MAX], v[PATH_MAX + 16];
		snprintf(a, sizeof a, "%s/%s", abs, e->d_name);
		snprintf(r, sizeof r, "%s%s", rel, e->d_name);
		struct stat st;
		assert_int_equal(lstat(a, &st), 0);
		char m[16] = "";
		if (modes)
			snprintf(m, sizeof m, "%04o:", (unsigned)(st.st_mode & 07777));
		if (S_ISDIR(st.st_mode)) {
			snprintf(v, sizeof v, "%s" DIR_, m);
			strcat(r, "/");
			json_object_set_new(out, r, json_string(v));
			snap_dir(out, a, r, modes);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlink(a, t, sizeof t - 1);
			assert_true(n >= 0);
			t[n] = '\0';
			snprintf(v, sizeof v, "-> %s", t);
			json_object_set_new(out, r, json_string(v));
		} else {
			size_t n;
			char *data = slurp_abs(a, &n);
			assert_non_null(data);
			char *full = malloc(strlen(m) + n + 1);
			memcpy(full, m, strlen(m));
			memcpy(full + strlen(m), data, n + 1);
			json_t *s = json_stringn(full, strlen(m) + n);
			json_object_set_new(out, r, s ? s : json_string("<binary>"));
			free(full);
			free(data);
		}
	}
	closedir(d);
}

static json_t *snapshot(const fx *f, int modes)
{
	json_t *out = json_object();
	snap_dir(out, f->ws, "", modes);
	return out;
}

static void same_tree(json_t *got, json_t *want)
{
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(1));
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(1));
		fail_msg("tree\n%s\nwant\n%s", g, w);
	}
}

/* The tree equals the pairs path, contents (DIR_ for a directory), NULL. */
static void tree_is(const fx *f, const char *const *pairs)
{
	json_t *want = json_object();
	for (size_t i = 0; pairs[i]; i += 2)
		json_object_set_new(want, pairs[i], json_string(pairs[i + 1]));
	json_t *got = snapshot(f, 0);
	same_tree(got, want);
	json_decref(got);
	json_decref(want);
}

#define TREE(...) ((const char *const[]){__VA_ARGS__, NULL})

/* No entries left in the journal directory. */
static void journal_empty(const fx *f)
{
	DIR *d = opendir(f->jdir);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fail_msg("journal directory still holds %s", e->d_name);
	closedir(d);
}

/* ==== planning ============================================================ */

static tgi_patch_err plan_text(const fx *f, const char *text, tgi_patch_plan *plan, char *err)
{
	tgi_patch *p = parse_ok(text);
	err[0] = '\0';
	tgi_patch_err rc = tgi_patch_plan_make(f->ws_fd, p, plan, err, ERRCAP);
	tgi_patch_free(p);
	return rc;
}

static void plan_ok(const fx *f, const char *text, tgi_patch_plan *plan)
{
	char err[ERRCAP];
	tgi_patch_err rc = plan_text(f, text, plan, err);
	if (rc != TGI_PATCH_OK)
		fail_msg("plan failed (%d): %s\n--- patch:\n%s", rc, err, text);
	assert_non_null(plan->summary);
	assert_non_null(plan->result);
}

static void plan_fails(const fx *f, const char *text, tgi_patch_err want, const char *msg,
                       int prefix)
{
	tgi_patch_plan plan;
	char err[ERRCAP];
	tgi_patch_err rc = plan_text(f, text, &plan, err);
	if (rc == TGI_PATCH_OK) {
		tgi_patch_plan_free(&plan);
		fail_msg("plan succeeded, want \"%s\"\n--- patch:\n%s", msg, text);
	}
	if (rc != want)
		fail_msg("plan failed with %d (%s), want %d", rc, err, want);
	if (prefix ? strncmp(err, msg, strlen(msg)) != 0 : strcmp(err, msg) != 0)
		fail_msg("error\n  \"%s\"\nwant%s\n  \"%s\"", err, prefix ? " a prefix" : "", msg);
}

static const tgi_patch_write *write_of(const tgi_patch_plan *plan, const char *path)
{
	for (size_t i = 0; i < plan->nwrites; i++)
		if (!strcmp(plan->writes[i].path, path))
			return &plan->writes[i];
	fail_msg("no write of %s in the plan", path);
	return NULL;
}

static void writes_data(const tgi_patch_plan *plan, const char *path, const char *want)
{
	const tgi_patch_write *w = write_of(plan, path);
	if (!want) {
		if (w->data)
			fail_msg("%s is written (\"%.*s\"), want it removed", path, (int)w->len, w->data);
		return;
	}
	if (!w->data)
		fail_msg("%s is removed, want \"%s\"", path, want);
	if (w->len != strlen(want) || memcmp(w->data, want, w->len) != 0)
		fail_msg("%s becomes\n\"%.*s\"\nwant\n\"%s\"", path, (int)w->len, w->data, want);
}

static void result_is(const tgi_patch_plan *plan, const char *json)
{
	json_error_t e;
	json_t *want = json_loads(json, 0, &e);
	assert_non_null(want);
	if (!json_equal(plan->result, want)) {
		char *g = json_dumps(plan->result, JSON_SORT_KEYS);
		fail_msg("result %s\nwant   %s", g, json);
	}
	json_decref(want);
}

/* Plan text against a file holding before; the file must become after. */
static void update_gives(const fx *f, const char *before, const char *chunks, const char *after)
{
	char text[4096];
	tgi_patch_plan plan;
	put(f, "u.txt", before);
	snprintf(text, sizeof text, "*** Begin Patch\n*** Update File: u.txt\n%s*** End Patch\n",
	         chunks);
	plan_ok(f, text, &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "u.txt", after);
	assert_int_equal(plan.writes[0].existed, 1);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nM u.txt\n");
	tgi_patch_plan_free(&plan);
}

static void test_plan_kinds(void **state)
{
	fx *f = *state;
	tgi_patch_plan plan;

	/* Add: new file (and new directories), content lines each with "\n" */
	plan_ok(f, PATCH("*** Add File: dir/new.txt\n+hello\n+\n+world\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "dir/new.txt", "hello\n\nworld\n");
	assert_int_equal(plan.writes[0].existed, 0);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nA dir/new.txt\n");
	result_is(&plan, "{\"added\":[\"dir/new.txt\"],\"modified\":[],\"deleted\":[],\"moved\":[]}");
	tgi_patch_plan_free(&plan);
	assert_null(plan.writes);
	assert_null(plan.summary);

	/* Add with zero lines: an empty file */
	plan_ok(f, PATCH("*** Add File: empty\n"), &plan);
	writes_data(&plan, "empty", "");
	tgi_patch_plan_free(&plan);

	/* Delete */
	put(f, "old.txt", "bye\n");
	plan_ok(f, PATCH("*** Delete File: old.txt\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "old.txt", NULL);
	assert_int_equal(plan.writes[0].existed, 1);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nD old.txt\n");
	result_is(&plan, "{\"added\":[],\"modified\":[],\"deleted\":[\"old.txt\"],\"moved\":[]}");
	tgi_patch_plan_free(&plan);

	/* Update */
	put_mode(f, "a.txt", "one\ntwo\nthree\n", 0640);
	plan_ok(f, PATCH("*** Update File: a.txt\n@@\n one\n-two\n+TWO\n+2\n three\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "a.txt", "one\nTWO\n2\nthree\n");
	assert_int_equal(plan.writes[0].existed, 1);
	assert_int_equal(plan.writes[0].mode & 07777, 0640);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nM a.txt\n");
	result_is(&plan, "{\"added\":[],\"modified\":[\"a.txt\"],\"deleted\":[],\"moved\":[]}");
	tgi_patch_plan_free(&plan);

	/* Update with Move: the old path removed, the new one written, listed M dest */
	plan_ok(f, PATCH("*** Update File: a.txt\n*** Move to: sub/b.txt\n@@\n-one\n+ONE\n"), &plan);
	assert_int_equal(plan.nwrites, 2);
	writes_data(&plan, "a.txt", NULL);
	writes_data(&plan, "sub/b.txt", "ONE\ntwo\nthree\n");
	assert_int_equal(write_of(&plan, "a.txt")->existed, 1);
	assert_int_equal(write_of(&plan, "sub/b.txt")->existed, 0);
	assert_int_equal(write_of(&plan, "sub/b.txt")->mode & 07777, 0640);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nM sub/b.txt\n");
	result_is(&plan, "{\"added\":[],\"modified\":[],\"deleted\":[],"
	                 "\"moved\":[{\"from\":\"a.txt\",\"to\":\"sub/b.txt\"}]}");
	tgi_patch_plan_free(&plan);

	/* Move onto an existing file replaces it */
	put(f, "c.txt", "c\n");
	plan_ok(f, PATCH("*** Update File: a.txt\n*** Move to: c.txt\n@@\n-one\n+1\n"), &plan);
	writes_data(&plan, "a.txt", NULL);
	writes_data(&plan, "c.txt", "1\ntwo\nthree\n");
	assert_int_equal(write_of(&plan, "c.txt")->existed, 1);
	tgi_patch_plan_free(&plan);

	/* Add over an existing file replaces it and is reported A */
	plan_ok(f, PATCH("*** Add File: c.txt\n+new\n"), &plan);
	writes_data(&plan, "c.txt", "new\n");
	assert_int_equal(plan.writes[0].existed, 1);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nA c.txt\n");
	tgi_patch_plan_free(&plan);

	/* summary: A, then M, then D, each group in patch order, paths as written */
	put(f, "m1", "x\n");
	put(f, "m2", "x\n");
	put(f, "d1", "x\n");
	put(f, "d2", "x\n");
	mkdir_ws(f, "src");
	put(f, "src/m3", "x\n");
	plan_ok(f, PATCH("*** Delete File: d2\n"
	                 "*** Update File: m2\n@@\n-x\n+y\n"
	                 "*** Add File: a2\n+1\n"
	                 "*** Update File: ./src//m3\n@@\n-x\n+y\n"
	                 "*** Delete File: d1\n"
	                 "*** Add File:   ./src/../a1  \n+1\n"
	                 "*** Update File: m1\n*** Move to: ./moved/../m4\n@@\n-x\n+y\n"),
	        &plan);
	assert_string_equal(plan.summary, "Success. Updated the following files:\n"
	                                  "A a2\nA ./src/../a1\n"
	                                  "M m2\nM ./src//m3\nM ./moved/../m4\n"
	                                  "D d2\nD d1\n");
	result_is(&plan, "{\"added\":[\"a2\",\"a1\"],\"modified\":[\"m2\",\"src/m3\"],"
	                 "\"deleted\":[\"d2\",\"d1\"],\"moved\":[{\"from\":\"m1\",\"to\":\"m4\"}]}");
	assert_int_equal(plan.nwrites, 8);
	writes_data(&plan, "src/m3", "y\n");
	writes_data(&plan, "a1", "1\n");
	writes_data(&plan, "m4", "y\n");
	writes_data(&plan, "m1", NULL);
	tgi_patch_plan_free(&plan);

	/* an empty patch */
	plan_fails(f, PATCH(""), TGI_PATCH_EINVAL, "No files were modified.", 0);
	tgi_patch_plan_free(&plan);     /* harmless on a freed plan */
}

/* Several operations on one path apply in order, each seeing the previous. */
static void test_plan_ops_see_each_other(void **state)
{
	fx *f = *state;
	tgi_patch_plan plan;

	/* Add then Update */
	plan_ok(f, PATCH("*** Add File: n.txt\n+a\n+b\n*** Update File: n.txt\n@@\n-b\n+B\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "n.txt", "a\nB\n");
	assert_int_equal(plan.writes[0].existed, 0);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nA n.txt\nM n.txt\n");
	tgi_patch_plan_free(&plan);

	/* Update twice: the second sees the first's result */
	put(f, "t.txt", "1\n2\n3\n");
	plan_ok(f, PATCH("*** Update File: t.txt\n@@\n-2\n+two\n"
	                 "*** Update File: t.txt\n@@\n-two\n+TWO\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "t.txt", "1\nTWO\n3\n");
	tgi_patch_plan_free(&plan);

	/* ... and a second Update looking for the old text fails */
	plan_fails(f, PATCH("*** Update File: t.txt\n@@\n-2\n+two\n"
	                    "*** Update File: t.txt\n@@\n-2\n+TWO\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in t.txt:\n2", 1);

	/* Delete then Add: replaced */
	plan_ok(f, PATCH("*** Delete File: t.txt\n*** Add File: t.txt\n+fresh\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "t.txt", "fresh\n");
	assert_int_equal(plan.writes[0].existed, 1);
	tgi_patch_plan_free(&plan);

	/* Delete then Update: the file is gone */
	plan_fails(f, PATCH("*** Delete File: t.txt\n*** Update File: t.txt\n@@\n-1\n+x\n"),
	           TGI_PATCH_EINVAL, "Failed to read file to update t.txt", 1);
	/* Delete twice */
	plan_fails(f, PATCH("*** Delete File: t.txt\n*** Delete File: t.txt\n"),
	           TGI_PATCH_EINVAL, "Failed to delete file t.txt", 1);

	/* Add then Delete of a new file: nothing to write */
	plan_ok(f, PATCH("*** Add File: tmp.txt\n+x\n*** Delete File: tmp.txt\n"), &plan);
	assert_int_equal(plan.nwrites, 0);
	assert_string_equal(plan.summary, "Success. Updated the following files:\nA tmp.txt\nD tmp.txt\n");
	tgi_patch_plan_free(&plan);

	/* Move, then Update at the destination, then Add at the source */
	plan_ok(f, PATCH("*** Update File: t.txt\n*** Move to: u.txt\n@@\n-1\n+one\n"
	                 "*** Update File: u.txt\n@@\n-3\n+three\n"
	                 "*** Add File: t.txt\n+again\n"), &plan);
	assert_int_equal(plan.nwrites, 2);
	writes_data(&plan, "u.txt", "one\n2\nthree\n");
	writes_data(&plan, "t.txt", "again\n");
	tgi_patch_plan_free(&plan);
	/* ... the source is gone after the Move */
	plan_fails(f, PATCH("*** Update File: t.txt\n*** Move to: u.txt\n@@\n-1\n+one\n"
	                    "*** Update File: t.txt\n@@\n-2\n+x\n"),
	           TGI_PATCH_EINVAL, "Failed to read file to update t.txt", 1);

	/* one file named two ways (through a symlinked directory, and with ..) */
	mkdir_ws(f, "real");
	put(f, "real/f", "x\n");
	link_ws(f, "real", "alias");
	plan_ok(f, PATCH("*** Update File: alias/f\n@@\n-x\n+y\n"
	                 "*** Update File: real/../real/f\n@@\n-y\n+z\n"
	                 "*** Add File: alias/g\n+g\n"), &plan);
	assert_int_equal(plan.nwrites, 2);
	writes_data(&plan, "real/f", "z\n");
	writes_data(&plan, "real/g", "g\n");
	result_is(&plan, "{\"added\":[\"real/g\"],\"modified\":[\"real/f\",\"real/f\"],"
	                 "\"deleted\":[],\"moved\":[]}");
	assert_string_equal(plan.summary, "Success. Updated the following files:\nA alias/g\n"
	                                  "M alias/f\nM real/../real/f\n");
	tgi_patch_plan_free(&plan);
}

static void test_plan_line_endings(void **state)
{
	fx *f = *state;

	/* CRLF preserved, everywhere, also on added lines */
	update_gives(f, "a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n", "a\r\nB\r\nB2\r\nc\r\n");
	/* a CRLF patch against a CRLF file */
	update_gives(f, "a\r\nb\r\n", "@@\r\n a\r\n-b\r\n+B\r\n", "a\r\nB\r\n");
	/* CRLF without a final newline gets a CRLF one */
	update_gives(f, "a\r\nb", "@@\n-a\n+A\n", "A\r\nb\r\n");
	/* a mixed file is not CRLF: its "\r"s stay as they are */
	update_gives(f, "a\r\nb\nc\n", "@@\n-b\n+B\n", "a\r\nB\nc\n");
	/* no final newline: one is added */
	update_gives(f, "a\nb", "@@\n-b\n+B\n", "a\nB\n");
	update_gives(f, "a\nb", "@@\n-a\n+A\n", "A\nb\n");
	update_gives(f, "only", "@@\n+first\n only\n", "first\nonly\n");
	/* trailing blank lines are kept */
	update_gives(f, "a\nb\n\n\n", "@@\n-a\n+A\n", "A\nb\n\n\n");
	update_gives(f, "a\r\n\r\n\r\n", "@@\n-a\n+A\n", "A\r\n\r\n\r\n");
	/* an empty file */
	update_gives(f, "", "@@\n+x\n", "x\n");
	/* whitespace inside lines is kept as the patch writes it */
	update_gives(f, "\tx  \n", "@@\n-\tx\n+\ty \n", "\ty \n");
}

static void test_plan_matching(void **state)
{
	fx *f = *state;

	/* pure addition under a bare @@: at the end */
	update_gives(f, "a\nb\n", "@@\n+c\n+d\n", "a\nb\nc\nd\n");
	/* ... also after an earlier chunk */
	update_gives(f, "a\nb\nc\n", "@@\n-a\n+A\n@@\n+z\n", "A\nb\nc\nz\n");
	/* pure addition under @@ ctx: right after the context line */
	update_gives(f, "a\nb\nc\n", "@@ a\n+x\n", "a\nx\nb\nc\n");
	update_gives(f, "a\nb\nc\n", "@@ c\n+x\n", "a\nb\nc\nx\n");
	update_gives(f, "f():\n  x\ng():\n  y\n", "@@ g():\n+  new\n", "f():\n  x\ng():\n  new\n  y\n");
	/* @@ ctx moves the cursor past the context line */
	update_gives(f, "x\ny\nx\ny\n", "@@ y\n-x\n+X\n", "x\ny\nX\ny\n");
	update_gives(f, "def a\n  r\ndef b\n  r\n", "@@ def b\n-  r\n+  R\n", "def a\n  r\ndef b\n  R\n");
	/* chunks in file order from a moving cursor */
	update_gives(f, "r\nr\nr\n", "@@\n-r\n+1\n@@\n-r\n+2\n", "1\n2\nr\n");
	update_gives(f, "a\nb\nc\nd\ne\n", "@@\n-b\n+B\n@@\n d\n-e\n+E\n*** End of File\n",
	             "a\nB\nc\nd\nE\n");
	/* End of File anchors at the end */
	update_gives(f, "x\ny\nx\n", "@@\n-x\n+X\n*** End of File\n", "x\ny\nX\n");
	/* fuzzy matches replace the file's line with the patch's */
	update_gives(f, "a  \n  b\nc\xe2\x80\x94" "d\n", "@@\n-a\n-b\n-c-d\n+z\n", "z\n");
	/* old lines ending in an empty line: retried without it */
	update_gives(f, "a\nb\n", "@@\n-b\n+B\n\n", "a\nB\n");
	update_gives(f, "a\nb\nc\nd\n", "@@\n-a\n+A\n\n@@\n-c\n+C\n", "A\nb\nC\nd\n");
	/* ... but used when it matches */
	update_gives(f, "a\n\nb\n\n", "@@\n-b\n+B\n\n", "a\n\nB\n\n");
	/* the first chunk without @@ */
	update_gives(f, "a\nb\n", "-a\n+A\n", "A\nb\n");

	/* what cannot be found */
	put(f, "f.txt", "one\ntwo\n");
	plan_fails(f, PATCH("*** Update File: f.txt\n@@ zzz\n-one\n+1\n"),
	           TGI_PATCH_EINVAL, "Failed to find context 'zzz' in f.txt", 0);
	plan_fails(f, PATCH("*** Update File: f.txt\n@@\n-q\n-r\n+s\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in f.txt:\nq\nr", 1);
	plan_fails(f, PATCH("*** Update File: f.txt\n@@\n one\n-three\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in f.txt:\none\nthree", 1);
	/* chunks out of order: the second is looked for after the first */
	plan_fails(f, PATCH("*** Update File: f.txt\n@@\n-two\n+2\n@@\n-one\n+1\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in f.txt:\none", 1);
	/* the context is looked for after the cursor too */
	plan_fails(f, PATCH("*** Update File: f.txt\n@@\n-two\n+2\n@@ one\n+x\n"),
	           TGI_PATCH_EINVAL, "Failed to find context 'one' in f.txt", 0);
	/* End of File: present, but not at the end */
	plan_fails(f, PATCH("*** Update File: f.txt\n@@\n-one\n+1\n*** End of File\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in f.txt:\none", 1);
	/* nothing at all was changed by a failing patch: no write made it into a plan */
	file_is(f, "f.txt", "one\ntwo\n");
}

/* A file that is not UTF-8: the lines without such bytes are patched and
 * the rest kept byte for byte; lines that hold them cannot be named, and
 * the message says so first, with where they are. */
static void test_plan_not_utf8(void **state)
{
	fx *f = *state;
	tgi_patch_plan plan;

	put(f, "l.txt", "caf\xE9 au lait\nsecond\n");
	plan_ok(f, PATCH("*** Update File: l.txt\n@@\n-second\n+2nd\n"), &plan);
	writes_data(&plan, "l.txt", "caf\xE9 au lait\n2nd\n");
	tgi_patch_plan_free(&plan);

	/* the line as read_file showed it (U+FFFD), or with a guess at the byte */
	static const char *const tries[] = {
		PATCH("*** Update File: l.txt\n@@\n-caf\xEF\xBF\xBD au lait\n+coffee\n second\n"),
		PATCH("*** Update File: l.txt\n@@\n-caf\xC3\xA9 au lait\n+coffee\n"),
	};
	for (size_t i = 0; i < 2; i++)
		plan_fails(f, tries[i], TGI_PATCH_EINVAL,
		           "Failed to find expected lines in l.txt (l.txt is not UTF-8: these lines "
		           "are at line 1, but there the file holds bytes that are not UTF-8 text, "
		           "which read_file shows as U+FFFD and a patch cannot name; rewrite the file "
		           "with write_file, or change it with a command):\ncaf", 1);
	/* lines that are nowhere: the file's encoding is still said */
	plan_fails(f, PATCH("*** Update File: l.txt\n@@\n-nothing\n+x\n"), TGI_PATCH_EINVAL,
	           "Failed to find expected lines in l.txt (l.txt is not UTF-8: 1 byte of it, the "
	           "first on line 1, is shown by read_file as U+FFFD, and a patch cannot name it):"
	           "\nnothing", 1);
	/* a UTF-8 file says nothing of encodings */
	put(f, "u.txt", "one\n");
	plan_fails(f, PATCH("*** Update File: u.txt\n@@\n-two\n+2\n"), TGI_PATCH_EINVAL,
	           "Failed to find expected lines in u.txt:\ntwo", 1);
}

/* What a message echoes of the patch carries no control characters. */
static void test_plan_messages_sanitized(void **state)
{
	fx *f = *state;
	static const char *const patches[] = {
		PATCH("*** Update File: f.txt\n@@\n-\x1b[2J\x07gone\n+x\n"),
		PATCH("*** Update File: f.txt\n@@ \x1b]0;title\x07\n+x\n"),
		PATCH("*** Update File: no\x1b[31mpe\n@@\n-a\n+b\n"),
		PATCH("*** Delete File: no\x1b[31mpe\n"),
		PATCH("*** Add File: ../\x1b[31mx\n+x\n"),
	};
	put(f, "f.txt", "one\n");
	for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
		tgi_patch_plan plan;
		char err[ERRCAP];
		assert_int_not_equal(plan_text(f, patches[i], &plan, err), TGI_PATCH_OK);
		assert_true(err[0] != '\0');
		for (const char *s = err; *s; s++)
			if ((unsigned char)*s < 0x20 && *s != '\n')
				fail_msg("message of patch #%zu holds byte 0x%02x: %s", i, (unsigned char)*s, err);
	}
}

/* Blank lines between chunks are skipped (issue 3), however many. */
static void test_plan_blank_lines_between_chunks(void **state)
{
	fx *f = *state;
	update_gives(f, "a\nb\nc\nd\n", "@@\n-a\n+A\n\n\n@@\n-c\n+C\n", "A\nb\nC\nd\n");
	update_gives(f, "a\nb\n", "@@\n-b\n+B\n\n\n", "a\nB\n");
}

static void test_plan_files(void **state)
{
	fx *f = *state;
	mkdir_ws(f, "d");
	put(f, "d/in.txt", "x\n");
	put(f, "target.txt", "t\n");
	link_ws(f, "target.txt", "ln");

	plan_fails(f, PATCH("*** Update File: nope.txt\n@@\n-x\n+y\n"),
	           TGI_PATCH_EINVAL, "Failed to read file to update nope.txt: ", 1);
	plan_fails(f, PATCH("*** Update File: d\n@@\n-x\n+y\n"),
	           TGI_PATCH_EINVAL, "Failed to read file to update d: ", 1);
	plan_fails(f, PATCH("*** Update File: ln\n@@\n-t\n+u\n"), TGI_PATCH_EINVAL,
	           "Failed to read file to update ln: it is a symbolic link; patch the file it "
	           "points to", 0);
	plan_fails(f, PATCH("*** Delete File: nope.txt\n"),
	           TGI_PATCH_EINVAL, "Failed to delete file nope.txt: ", 1);
	plan_fails(f, PATCH("*** Delete File: d\n"),
	           TGI_PATCH_EINVAL, "Failed to delete file d: ", 1);
	plan_fails(f, PATCH("*** Add File: d\n+x\n"), TGI_PATCH_EINVAL, "", 1);

	/* Delete of a symbolic link removes the link, not its target */
	tgi_patch_plan plan;
	plan_ok(f, PATCH("*** Delete File: ln\n"), &plan);
	assert_int_equal(plan.nwrites, 1);
	writes_data(&plan, "ln", NULL);
	assert_int_equal(plan.writes[0].existed, 1);
	tgi_patch_plan_free(&plan);

	/* a later failure fails the whole plan */
	plan_fails(f, PATCH("*** Add File: fine.txt\n+x\n*** Delete File: nope.txt\n"),
	           TGI_PATCH_EINVAL, "Failed to delete file nope.txt: ", 1);

	/* a trailing slash names a directory: no file may be made of it */
	tgi_patch_plan dplan;
	char derr[ERRCAP];
	tgi_patch_err drc = plan_text(f, PATCH("*** Add File: newdir/\n+x\n"), &dplan, derr);
	if (drc == TGI_PATCH_OK) {
		tgi_patch_plan_free(&dplan);
		fail_msg("'*** Add File: newdir/' plans a file 'newdir'");
	}
}

static void test_plan_refusals(void **state)
{
	fx *f = *state;
	put(f, "a.txt", "a\n");
	mkdir_ws(f, "src");
	mkdir_ws(f, ".git");
	put(f, ".git/config", "c\n");
	mkdir_ws(f, ".toolgate");
	link_ws(f, "../outside", "out");
	link_ws(f, "../outside/secret.txt", "secret");
	link_ws(f, "/etc/passwd", "abs");
	link_ws(f, ".git", "g");
	link_ws(f, ".toolgate", "tg");
	link_ws(f, "../..", "src/up");

	static const struct { const char *op, *path, *why; } cases[] = {
		{"Add", "/etc/x", "absolute paths are not allowed; use a path relative to the workspace"},
		{"Update", "/etc/passwd", "absolute paths are not allowed; use a path relative to the workspace"},
		{"Delete", "//a.txt", "absolute paths are not allowed; use a path relative to the workspace"},
		{"Add", "../x", "it leaves the workspace"},
		{"Add", "src/../../x", "it leaves the workspace"},
		{"Delete", "../outside/secret.txt", "it leaves the workspace"},
		{"Add", "out/new.txt", "it leaves the workspace"},
		{"Update", "out/secret.txt", "it leaves the workspace"},
		{"Update", "secret", "it leaves the workspace"},
		{"Update", "abs", "it leaves the workspace"},
		{"Add", "src/up/x", "it leaves the workspace"},
		{"Add", ".git/hooks/pre-commit", ".git/ and .toolgate/ are read-only to tools"},
		{"Update", ".git/config", ".git/ and .toolgate/ are read-only to tools"},
		{"Delete", ".git/config", ".git/ and .toolgate/ are read-only to tools"},
		{"Add", ".toolgate/ledger.db", ".git/ and .toolgate/ are read-only to tools"},
		{"Add", "sub/.git/config", ".git/ and .toolgate/ are read-only to tools"},
		{"Add", "./src/../.toolgate/x", ".git/ and .toolgate/ are read-only to tools"},
		{"Add", "g/config", ".git/ and .toolgate/ are read-only to tools"},
		{"Add", "tg/x", ".git/ and .toolgate/ are read-only to tools"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, "*** Begin Patch\n*** %s File: %s\n%s*** End Patch\n",
		         cases[i].op, cases[i].path, strcmp(cases[i].op, "Update") ? "" : "@@\n-x\n+y\n");
		snprintf(want, sizeof want, "Refused path '%s': %s", cases[i].path, cases[i].why);
		plan_fails(f, text, TGI_PATCH_EREFUSED, want, 0);
	}

	/* Move targets are checked too */
	plan_fails(f, PATCH("*** Update File: a.txt\n*** Move to: ../a.txt\n@@\n-a\n+b\n"),
	           TGI_PATCH_EREFUSED, "Refused path '../a.txt': it leaves the workspace", 0);
	plan_fails(f, PATCH("*** Update File: a.txt\n*** Move to: .git/a\n@@\n-a\n+b\n"),
	           TGI_PATCH_EREFUSED, "Refused path '.git/a': .git/ and .toolgate/ are read-only "
	           "to tools", 0);
	plan_fails(f, PATCH("*** Update File: a.txt\n*** Move to: /tmp/a\n@@\n-a\n+b\n"),
	           TGI_PATCH_EREFUSED, "Refused path '/tmp/a': absolute paths are not allowed; use "
	           "a path relative to the workspace", 0);

	/* every path is checked before any file is looked at: a refusal wins over
	 * an earlier operation that would not fit */
	plan_fails(f, PATCH("*** Update File: a.txt\n@@\n-nothing like it\n+b\n"
	                    "*** Delete File: missing\n"
	                    "*** Add File: ../evil\n+x\n"),
	           TGI_PATCH_EREFUSED, "Refused path '../evil': it leaves the workspace", 0);

	/* an empty path (an operation built by hand: the parser cannot make one) */
	tgi_patch *p = parse_ok(PATCH("*** Add File: x\n+x\n"));
	free(p->ops[0].path);
	p->ops[0].path = strdup("");
	tgi_patch_plan plan;
	char err[ERRCAP];
	assert_int_equal(tgi_patch_plan_make(f->ws_fd, p, &plan, err, sizeof err), TGI_PATCH_EREFUSED);
	assert_string_equal(err, "Refused path '': empty path");
	tgi_patch_free(p);

	/* nothing was written outside or inside */
	char o[PATH_MAX];
	snprintf(o, sizeof o, "%s/outside/new.txt", f->root);
	assert_int_equal(access(o, F_OK), -1);
	snprintf(o, sizeof o, "%s/x", f->root);
	assert_int_equal(access(o, F_OK), -1);
	file_is(f, "a.txt", "a\n");
	file_is(f, ".git/config", "c\n");
	assert_false(exists_ws(f, ".toolgate/ledger.db"));
}

/* Planning reads, never writes: the tree is the same afterwards. */
static void test_plan_writes_nothing(void **state)
{
	fx *f = *state;
	put(f, "a.txt", "a\nb\n");
	put_mode(f, "x.sh", "#!/bin/sh\necho\n", 0755);
	put(f, "del.txt", "d\n");
	mkdir_ws(f, "src");
	put(f, "src/m.c", "int m;\n");
	link_ws(f, "a.txt", "ln");
	json_t *before = snapshot(f, 1);

	tgi_patch_plan plan;
	plan_ok(f, PATCH("*** Add File: new/deep/dir/n.txt\n+n\n"
	                 "*** Update File: a.txt\n@@\n-b\n+B\n"
	                 "*** Update File: x.sh\n@@\n-echo\n+echo hi\n"
	                 "*** Delete File: del.txt\n"
	                 "*** Delete File: ln\n"
	                 "*** Update File: src/m.c\n*** Move to: lib/m.c\n@@\n-int m;\n+int n;\n"),
	        &plan);
	assert_int_equal(plan.nwrites, 7);
	tgi_patch_plan_free(&plan);

	plan_fails(f, PATCH("*** Add File: other/x\n+x\n*** Update File: a.txt\n@@\n-zzz\n+b\n"),
	           TGI_PATCH_EINVAL, "Failed to find expected lines in a.txt:", 1);

	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(before);
	json_decref(after);
	journal_empty(f);
}

/* ==== committing ========================================================== */

static int commit_text(const fx *f, const char *text, char *err)
{
	tgi_patch_plan plan;
	plan_ok(f, text, &plan);
	err[0] = '\0';
	int r = tgi_patch_commit(f->ws_fd, f->jfd, "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", &plan,
	                         err, ERRCAP);
	tgi_patch_plan_free(&plan);
	return r;
}

/* Paths whose names are not UTF-8, in their text form (\xHH): planned,
 * committed where the bytes name, and listed as text. */
static void test_commit_not_utf8_names(void **state)
{
	fx *f = *state;
	char err[ERRCAP];
	put(f, "d\xE9r/caf\xE9.txt", "one\n");
	int r = commit_text(f, PATCH("*** Update File: d\\xE9r/caf\\xE9.txt\n@@\n-one\n+1\n"
	                             "*** Add File: n\\xFF/new.txt\n+n\n"),
	                    err);
	if (r != 0)
		fail_msg("commit failed (%d): %s", r, err);
	file_is(f, "d\xE9r/caf\xE9.txt", "1\n");
	file_is(f, "n\xFF/new.txt", "n\n");
	journal_empty(f);

	tgi_patch_plan plan;
	plan_ok(f, PATCH("*** Delete File: n\\xFF/new.txt\n"), &plan);
	result_is(&plan, "{\"added\":[],\"modified\":[],\"deleted\":[\"n\\\\xFF/new.txt\"],\"moved\":[]}");
	assert_string_equal(plan.writes[0].path, "n\\xFF/new.txt");
	assert_string_equal(plan.writes[0].fspath, "n\xFF/new.txt");
	tgi_patch_plan_free(&plan);
	/* a patch file (toolgate apply-patch) may name it by its raw bytes */
	r = commit_text(f, PATCH("*** Update File: d\xE9r/caf\xE9.txt\n@@\n-1\n+one again\n"), err);
	if (r != 0)
		fail_msg("commit by raw bytes failed (%d): %s", r, err);
	file_is(f, "d\xE9r/caf\xE9.txt", "one again\n");
	/* another spelling of the name is refused */
	plan_fails(f, PATCH("*** Delete File: n\\xff/new.txt\n"), TGI_PATCH_EREFUSED,
	           "Refused path 'n\\xff/new.txt': path \"n\\xff/new.txt\" is not how toolgate "
	           "writes that name", 1);
}

static void test_commit_success(void **state)
{
	fx *f = *state;
	char err[ERRCAP];
	put(f, "a.txt", "a\nb\n");
	put_mode(f, "x.sh", "#!/bin/sh\necho\n", 0755);
	put_mode(f, "secret.txt", "s\n", 0600);
	put(f, "del.txt", "d\n");
	mkdir_ws(f, "src");
	put(f, "src/m.c", "int m;\n");
	put(f, "crlf.txt", "1\r\n2\r\n");
	put(f, "target", "t\n");
	link_ws(f, "target", "ln");

	int r = commit_text(f, PATCH("*** Add File: new/deep/n.txt\n+n\n"
	                             "*** Update File: a.txt\n@@\n-b\n+B\n"
	                             "*** Update File: x.sh\n@@\n-echo\n+echo hi\n"
	                             "*** Update File: secret.txt\n@@\n-s\n+S\n"
	                             "*** Delete File: del.txt\n"
	                             "*** Delete File: ln\n"
	                             "*** Update File: crlf.txt\n@@\n 1\n-2\n+two\n"
	                             "*** Update File: src/m.c\n*** Move to: lib/m.c\n@@\n-int m;\n+int n;\n"
	                             "*** Add File: empty\n"),
	                    err);
	if (r != 0)
		fail_msg("commit failed (%d): %s", r, err);
	tree_is(f, TREE("a.txt", "a\nB\n", "x.sh", "#!/bin/sh\necho hi\n", "secret.txt", "S\n",
	                "src/", DIR_, "lib/", DIR_, "lib/m.c", "int n;\n", "crlf.txt", "1\r\ntwo\r\n",
	                "target", "t\n", "new/", DIR_, "new/deep/", DIR_, "new/deep/n.txt", "n\n",
	                "empty", ""));
	/* modes kept for updated (and moved) files */
	assert_int_equal(mode_of(f, "x.sh"), 0755);
	assert_int_equal(mode_of(f, "secret.txt"), 0600);
	assert_int_equal(mode_of(f, "a.txt"), 0644);
	assert_int_equal(mode_of(f, "lib/m.c"), 0644);
	journal_empty(f);

	/* a second commit on top, with the same transaction id */
	r = commit_text(f, PATCH("*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: empty\n"), err);
	assert_int_equal(r, 0);
	file_is(f, "a.txt", "A\nB\n");
	assert_false(exists_ws(f, "empty"));
	journal_empty(f);

	/* a plan with nothing to write commits trivially */
	r = commit_text(f, PATCH("*** Add File: t\n+x\n*** Delete File: t\n"), err);
	assert_int_equal(r, 0);
	assert_false(exists_ws(f, "t"));
	journal_empty(f);
	/* nothing is left to recover */
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 0);
}

/* Writes land where the path resolves; a symbolic link is replaced or
 * removed, never written through. */
static void test_commit_links(void **state)
{
	fx *f = *state;
	char err[ERRCAP];
	mkdir_ws(f, "real");
	put(f, "real/f", "f\n");
	link_ws(f, "real", "alias");
	put(f, "target", "t\n");
	link_ws(f, "target", "ln");
	link_ws(f, "target", "ln2");
	put(f, "dest", "old dest\n");
	put(f, "src", "s\n");

	int r = commit_text(f, PATCH("*** Update File: alias/f\n@@\n-f\n+F\n"
	                             "*** Add File: alias/g\n+g\n"
	                             "*** Add File: ln\n+not a link\n"
	                             "*** Delete File: ln2\n"
	                             "*** Update File: src\n*** Move to: dest\n@@\n-s\n+S\n"),
	                    err);
	if (r != 0)
		fail_msg("commit failed (%d): %s", r, err);
	tree_is(f, TREE("real/", DIR_, "real/f", "F\n", "real/g", "g\n", "alias", "-> real",
	                "target", "t\n", "ln", "not a link\n", "dest", "S\n"));
	journal_empty(f);
}

/* Every file and directory as before, after a commit failing for real. */
static void fails_and_rolls_back(fx *f, const char *patch, void (*sabotage)(const fx *),
                                 const char *want)
{
	char err[ERRCAP];
	tgi_patch_plan plan;

	put(f, "a.txt", "a\nb\n");
	put_mode(f, "x.sh", "#!/bin/sh\n", 0755);
	put(f, "del.txt", "d\n");
	mkdir_ws(f, "src");
	put(f, "src/m.c", "int m;\n");
	plan_ok(f, patch, &plan);
	sabotage(f);                    /* the tree changes between plan and commit */
	json_t *before = snapshot(f, 1);

	int r = tgi_patch_commit(f->ws_fd, f->jfd, "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", &plan, err,
	                         sizeof err);
	tgi_patch_plan_free(&plan);
	assert_true(err[0] != '\0');
	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(before);
	json_decref(after);
	/* nothing was changed, so nothing is unknown: -1, no journal left, and
	 * nothing for recovery to do (were it -2, recovery must finish it) */
	char rerr[ERRCAP] = "";
	int rr = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, rerr, sizeof rerr);
	if (r != -1 || rr != 0)
		fail_msg("commit returned %d (%s), want -1; recovery then returned %d (%s), want 0",
		         r, err, rr, rr < 0 ? rerr : "");
	assert_non_null(strstr(err, "no file was changed"));
	assert_non_null(strstr(err, want));
	journal_empty(f);
}

#define MANY_OPS "*** Add File: new/deep/n.txt\n+n\n"              \
                 "*** Update File: a.txt\n@@\n-b\n+B\n"              \
                 "*** Update File: x.sh\n@@\n #!/bin/sh\n+echo\n"    \
                 "*** Delete File: del.txt\n"                        \
                 "*** Update File: src/m.c\n*** Move to: lib/m.c\n@@\n-int m;\n+int n;\n"

/* A path component that was to be a new directory is now a regular file. */
static void make_z_a_file(const fx *f)
{
	put(f, "z", "i am a file\n");
}

/* The file to be created is now a non-empty directory: the rename fails
 * after the earlier files were already renamed into place. */
static void make_last_a_dir(const fx *f)
{
	mkdir_ws(f, "zz");
	mkdir_ws(f, "zz/last.txt");
	put(f, "zz/last.txt/inside", "i\n");
}

static void test_commit_rollback_temp_stage(void **state)
{
	fails_and_rolls_back(*state, PATCH(MANY_OPS "*** Add File: z/last.txt\n+l\n"), make_z_a_file,
	                     "Failed to write file z/last.txt");
}

static void test_commit_rollback_rename_stage(void **state)
{
	fails_and_rolls_back(*state, PATCH(MANY_OPS "*** Add File: zz/last.txt\n+l\n"), make_last_a_dir,
	                     "Failed to write file zz/last.txt");
}

static void test_commit_journal_fails(void **state)
{
	fx *f = *state;
	char err[ERRCAP];
	tgi_patch_plan plan;

	put(f, "a.txt", "a\n");
	plan_ok(f, PATCH("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: n/x\n+x\n"), &plan);
	assert_int_equal(rmdir(f->jdir), 0);    /* jfd now names a deleted directory */
	json_t *before = snapshot(f, 1);
	int r = tgi_patch_commit(f->ws_fd, f->jfd, "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", &plan, err,
	                         sizeof err);
	tgi_patch_plan_free(&plan);
	assert_int_equal(r, -1);
	assert_true(strncmp(err, "Failed to write the patch journal", 33) == 0);
	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(before);
	json_decref(after);
	mkdir(f->jdir, 0700);           /* for teardown's sake */
}

/* ==== recovery ============================================================ */

static void jput(const fx *f, const char *name, const char *text)
{
	int fd = openat(f->jfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int jexists(const fx *f, const char *name)
{
	struct stat st;
	return fstatat(f->jfd, name, &st, 0) == 0;
}

static void hardlink(const fx *f, const char *from, const char *to)
{
	assert_int_equal(linkat(f->ws_fd, from, f->ws_fd, to, 0), 0);
}

#define TX "0193a5f07c1e7d2a9b1e4f0c2a9d1e77"
#define PFX ".tgpatch-" TX

/*
 * A commit that crashed part-way through its renames:
 *   0 a.txt      replaced: renamed already (new bytes in place, backup .old)
 *   1 b.txt      replaced: not renamed yet (temp and backup beside it)
 *   2 nd/c.txt   created in a created directory: renamed already
 *   3 nd2/d.txt  created in a created directory: temp only
 *   4 e.txt      removed: unlinked already (backup only)
 *   5 f.txt      removed: not yet (backup is a hard link)
 */
static void crashed_commit(const fx *f)
{
	put(f, "a.txt", "new a\n");
	put(f, PFX "-0.old", "old a\n");
	put(f, "b.txt", "old b\n");
	put(f, PFX "-1.new", "new b\n");
	hardlink(f, "b.txt", PFX "-1.old");
	put(f, "nd/c.txt", "new c\n");
	put(f, "nd2/" PFX "-3.new", "new d\n");
	put(f, PFX "-4.old", "old e\n");
	put(f, "f.txt", "old f\n");
	hardlink(f, "f.txt", PFX "-5.old");
	put(f, "bystander.txt", "b\n");
}

/* Its journal as version 1 wrote it (no identities), and as version 2
 * does, with the identity of the created nd/c.txt (made: "%s"). */
#define CRASHED_FILES(made)                                                              \
	"\"dirs\":[\"nd\",\"nd2\"],\"files\":["                                               \
	"{\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\",\"backup\":\"" PFX "-0.old\"},"          \
	"{\"path\":\"b.txt\",\"temp\":\"" PFX "-1.new\",\"backup\":\"" PFX "-1.old\"},"          \
	"{\"path\":\"nd/c.txt\",\"temp\":\"nd/" PFX "-2.new\"" made "},"                       \
	"{\"path\":\"nd2/d.txt\",\"temp\":\"nd2/" PFX "-3.new\",\"backup\":null},"             \
	"{\"path\":\"e.txt\",\"backup\":\"" PFX "-4.old\"},"                                   \
	"{\"path\":\"f.txt\",\"temp\":null,\"backup\":\"" PFX "-5.old\"}]}"

static const char crashed_journal_v1[] = "{\"version\":1," CRASHED_FILES("");

/* ,"made":{...} for the file at rel as it is now (plus delta on its inode:
 * another file's identity). */
static void made_of(const fx *f, const char *rel, long long delta, char *out, size_t cap)
{
	struct statx sx;
	assert_int_equal(statx(f->ws_fd, rel, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &sx), 0);
	int n = snprintf(out, cap, ",\"made\":{\"dev\":%llu,\"ino\":%llu",
	                 (unsigned long long)makedev(sx.stx_dev_major, sx.stx_dev_minor),
	                 (unsigned long long)sx.stx_ino + (unsigned long long)delta);
	if (sx.stx_mask & STATX_BTIME)
		n += snprintf(out + n, cap - (size_t)n, ",\"born\":[%lld,%u]",
		              (long long)sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec);
	unsigned int gen;
	int fd = openat(f->ws_fd, rel, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0)
		n += snprintf(out + n, cap - (size_t)n, ",\"gen\":%u", gen);
	close(fd);
	snprintf(out + n, cap - (size_t)n, "}");
}

/* The crashed commit's journal of version 2 (call after crashed_commit). */
static const char *crashed_journal(const fx *f)
{
	static char text[4096];
	char made[256];
	made_of(f, "nd/c.txt", 0, made, sizeof made);
	snprintf(text, sizeof text, "{\"version\":2,\"tx\":\"%s\"," CRASHED_FILES("%s"),
	         "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", made);
	return text;
}

static void test_recover_prepared(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	crashed_commit(f);
	jput(f, TX ".journal", crashed_journal(f));

	tgi_strv undone = {0};
	json_t *kept = json_array();
	int r = tgi_patch_recover(f->ws_fd, f->jfd, &undone, kept, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	/* the transaction is named, and nothing was left */
	assert_int_equal(undone.n, 1);
	assert_string_equal(undone.v[0], "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77");
	assert_int_equal(json_array_size(kept), 0);
	tgi_strv_free(&undone);
	json_decref(kept);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n"));
	journal_empty(f);
	/* again: nothing to do */
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 0);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n"));
}

/* A journal names files by the text form of their names: a crash in a
 * directory whose name is not UTF-8 is undone there. */
static void test_recover_not_utf8_names(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "d\xE9r/a.txt", "new a\n");
	put(f, "d\xE9r/" PFX "-0.old", "old a\n");
	jput(f, TX ".journal",
	     "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"d\\\\xE9r/a.txt\",\"temp\":\"d\\\\xE9r/"
	     PFX "-0.new\",\"backup\":\"d\\\\xE9r/" PFX "-0.old\"}]}");
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	file_is(f, "d\xE9r/a.txt", "old a\n");
	assert_false(exists_ws(f, "d\xE9r/" PFX "-0.old"));
	journal_empty(f);
}

/* A created directory that holds something else too is left in place. */
static void test_recover_keeps_foreign_files(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	crashed_commit(f);
	put(f, "nd2/theirs.txt", "t\n");
	jput(f, TX ".journal", crashed_journal(f));
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 1);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n", "nd2/", DIR_, "nd2/theirs.txt", "t\n"));
	journal_empty(f);
}

/* After the commit point: roll forward, the backups go, the new files stay. */
static void test_recover_committed(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "a.txt", "new a\n");
	put(f, PFX "-0.old", "old a\n");
	put(f, "nd/c.txt", "new c\n");
	put(f, PFX "-2.old", "old e\n");
	put(f, "keep.txt", "k\n");
	jput(f, TX ".commit",
	     "{\"version\":1,\"dirs\":[\"nd\"],\"files\":["
	     "{\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\",\"backup\":\"" PFX "-0.old\"},"
	     "{\"path\":\"nd/c.txt\",\"temp\":\"nd/" PFX "-1.new\"},"
	     "{\"path\":\"e.txt\",\"backup\":\"" PFX "-2.old\"}]}");
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	tree_is(f, TREE("a.txt", "new a\n", "nd/", DIR_, "nd/c.txt", "new c\n", "keep.txt", "k\n"));
	journal_empty(f);
}

/*
 * After the commit point, with renames a power loss took: the commit's
 * second flush makes the renames and the commit record durable together,
 * so the record may stand while some renames do not.  Roll forward does
 * them again:
 *   0 a.txt   replaced: not renamed (temp beside it, backup its hard link)
 *   1 nd/c.txt created in a created directory: temp only
 *   2 e.txt   removed: not unlinked (backup its hard link)
 *   3 f.txt   removed, and made again by another since: theirs stays
 *   4 g.txt   created, and made by another meanwhile: theirs stays
 *   5 h.txt   replaced: renamed already (backup only)
 */
static void test_recover_committed_redo(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "a.txt", "old a\n");
	put(f, PFX "-0.new", "new a\n");
	hardlink(f, "a.txt", PFX "-0.old");
	put(f, "nd/" PFX "-1.new", "new c\n");
	put(f, "e.txt", "old e\n");
	hardlink(f, "e.txt", PFX "-2.old");
	put(f, PFX "-3.old", "old f\n");
	put(f, "f.txt", "their f\n");
	put(f, PFX "-4.new", "new g\n");
	put(f, "g.txt", "their g\n");
	put(f, "h.txt", "new h\n");
	put(f, PFX "-5.old", "old h\n");
	put(f, "keep.txt", "k\n");
	jput(f, TX ".commit",
	     "{\"version\":2,\"tx\":\"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77\",\"dirs\":[\"nd\"],"
	     "\"files\":["
	     "{\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\",\"backup\":\"" PFX "-0.old\"},"
	     "{\"path\":\"nd/c.txt\",\"temp\":\"nd/" PFX "-1.new\",\"backup\":null},"
	     "{\"path\":\"e.txt\",\"temp\":null,\"backup\":\"" PFX "-2.old\"},"
	     "{\"path\":\"f.txt\",\"temp\":null,\"backup\":\"" PFX "-3.old\"},"
	     "{\"path\":\"g.txt\",\"temp\":\"" PFX "-4.new\",\"backup\":null},"
	     "{\"path\":\"h.txt\",\"temp\":\"" PFX "-5.new\",\"backup\":\"" PFX "-5.old\"}]}");
	tgi_strv undone = {0};
	int r = tgi_patch_recover(f->ws_fd, f->jfd, &undone, NULL, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	assert_int_equal(undone.n, 0);          /* applied, not undone */
	tgi_strv_free(&undone);
	tree_is(f, TREE("a.txt", "new a\n", "nd/", DIR_, "nd/c.txt", "new c\n", "f.txt", "their f\n",
	                "g.txt", "their g\n", "h.txt", "new h\n", "keep.txt", "k\n"));
	journal_empty(f);
}

/*
 * A journal written in full but not yet renamed into place, with what the
 * commit made before its first flush on disk (a power loss there: the
 * rename of the journal is made durable by that flush, so on disk it may
 * not have happened while the temps, backups and directories are there).
 * No file was renamed yet: what is ours goes, the files stay as they are.
 */
static void test_recover_partial_written(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "a.txt", "old a\n");
	put(f, PFX "-0.new", "new a\n");
	hardlink(f, "a.txt", PFX "-0.old");
	put(f, "nd/" PFX "-1.new", "new c\n");
	put(f, "e.txt", "old e\n");
	hardlink(f, "e.txt", PFX "-2.old");
	jput(f, TX ".journal.tmp",
	     "{\"version\":2,\"tx\":\"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77\",\"dirs\":[\"nd\"],"
	     "\"files\":["
	     "{\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\",\"backup\":\"" PFX "-0.old\"},"
	     "{\"path\":\"nd/c.txt\",\"temp\":\"nd/" PFX "-1.new\",\"backup\":null},"
	     "{\"path\":\"e.txt\",\"temp\":null,\"backup\":\"" PFX "-2.old\"}]}");
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r < 0)
		fail_msg("recover failed: %s", err);
	tree_is(f, TREE("a.txt", "old a\n", "e.txt", "old e\n"));
	journal_empty(f);
}

/* A journal still being written: nothing was done yet; it is just removed. */
static void test_recover_partial(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "a.txt", "a\n");
	put(f, PFX "-0.old", "looks like a backup\n");
	jput(f, TX ".journal.tmp",
	     "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\",\"backup\":\"" PFX "-0.old\"");
	json_t *before = snapshot(f, 1);
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r < 0)
		fail_msg("recover failed: %s", err);
	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(before);
	json_decref(after);
	journal_empty(f);
}

/* Several journals at once, and files in the journal directory that are not journals. */
static void test_recover_several(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	put(f, "a.txt", "new a\n");
	put(f, ".tgpatch-aaaa-0.old", "old a\n");
	put(f, "b.txt", "new b\n");
	put(f, ".tgpatch-bbbb-0.old", "old b\n");
	jput(f, "aaaa.journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                        "\"temp\":\".tgpatch-aaaa-0.new\",\"backup\":\".tgpatch-aaaa-0.old\"}]}");
	jput(f, "bbbb.commit", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"b.txt\","
	                       "\"temp\":\".tgpatch-bbbb-0.new\",\"backup\":\".tgpatch-bbbb-0.old\"}]}");
	jput(f, "README", "not a journal\n");
	assert_int_equal(mkdirat(f->jfd, "sub.journal", 0700), 0);
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r != 2)
		fail_msg("recover returned %d (%s), want 2", r, err);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "new b\n"));
	assert_true(jexists(f, "README"));
	assert_true(jexists(f, "sub.journal"));
	assert_false(jexists(f, "aaaa.journal"));
	assert_false(jexists(f, "bbbb.commit"));
	unlinkat(f->jfd, "README", 0);
	unlinkat(f->jfd, "sub.journal", AT_REMOVEDIR);
}

/* A journal held by a live commit (its flock) is left alone. */
static void test_recover_skips_locked(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	crashed_commit(f);
	jput(f, TX ".journal", crashed_journal(f));
	int held = openat(f->jfd, TX ".journal", O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);
	json_t *before = snapshot(f, 1);

	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 0);
	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(after);
	assert_true(jexists(f, TX ".journal"));

	/* a shared lock is held too */
	assert_int_equal(flock(held, LOCK_SH), 0);
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 0);
	after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(after);
	json_decref(before);

	/* once the commit is gone, recovery finishes it */
	close(held);
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err), 1);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n"));
	journal_empty(f);
}

/* A file the commit was to create that is not the one it made -- made,
 * or replaced, by another since -- is left, and said so. */
static void test_recover_leaves_anothers_file(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "", made[256], text[4096];
	crashed_commit(f);
	made_of(f, "nd/c.txt", 0, made, sizeof made);
	/* another replaced nd/c.txt since (a new file: another inode, born later) */
	assert_int_equal(unlinkat(f->ws_fd, "nd/c.txt", 0), 0);
	usleep(2000);
	put(f, "nd/c.txt", "theirs\n");
	snprintf(text, sizeof text, "{\"version\":2,\"tx\":\"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77\","
	         CRASHED_FILES("%s"), made);
	jput(f, TX ".journal", text);
	json_t *kept = json_array();
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, kept, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n", "nd/", DIR_, "nd/c.txt", "theirs\n"));
	assert_int_equal(json_array_size(kept), 1);
	json_t *k = json_array_get(kept, 0);
	assert_string_equal(json_string_value(json_object_get(k, "path")), "nd/c.txt");
	assert_string_equal(json_string_value(json_object_get(k, "tx")),
	                    "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77");
	assert_non_null(strstr(json_string_value(json_object_get(k, "message")), "nd/c.txt"));
	json_decref(kept);
	journal_empty(f);

	/* an identity that names another inode: the same */
	unlinkat(f->ws_fd, "nd/c.txt", 0);
	unlinkat(f->ws_fd, "nd", AT_REMOVEDIR);
	crashed_commit(f);
	made_of(f, "nd/c.txt", 1, made, sizeof made);
	snprintf(text, sizeof text, "{\"version\":2,\"tx\":\"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77\","
	         CRASHED_FILES("%s"), made);
	jput(f, TX ".journal", text);
	kept = json_array();
	assert_int_equal(tgi_patch_recover(f->ws_fd, f->jfd, NULL, kept, err, sizeof err), 1);
	file_is(f, "nd/c.txt", "new c\n");
	assert_int_equal(json_array_size(kept), 1);
	json_decref(kept);
	journal_empty(f);
}

/* A journal of version 1 is still read: backups go back; a created file
 * cannot be told from another's, so it is left and said so. */
static void test_recover_version_1(void **state)
{
	fx *f = *state;
	char err[ERRCAP] = "";
	crashed_commit(f);
	jput(f, TX ".journal", crashed_journal_v1);
	json_t *kept = json_array();
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, kept, err, sizeof err);
	if (r != 1)
		fail_msg("recover returned %d (%s), want 1", r, err);
	tree_is(f, TREE("a.txt", "old a\n", "b.txt", "old b\n", "e.txt", "old e\n", "f.txt", "old f\n",
	                "bystander.txt", "b\n", "nd/", DIR_, "nd/c.txt", "new c\n"));
	assert_int_equal(json_array_size(kept), 1);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(kept, 0), "message")),
	                       "earlier version"));
	json_decref(kept);
	journal_empty(f);
}

/* A journal that is not ours to trust: refused, and nothing touched. */
static void hostile_journal(fx *f, const char *name, const char *text)
{
	char err[ERRCAP] = "";
	put(f, "a.txt", "a\n");
	put(f, "b.txt", "b\n");
	put(f, "c.txt", "c\n");
	put(f, PFX "-0.old", "backup\n");
	jput(f, name, text);
	json_t *before = snapshot(f, 1);
	int r = tgi_patch_recover(f->ws_fd, f->jfd, NULL, NULL, err, sizeof err);
	if (r != -1)
		fail_msg("recover returned %d for the journal %s", r, text);
	assert_true(err[0] != '\0');
	for (const char *s = err; *s; s++)
		assert_true((unsigned char)*s >= 0x20);
	json_t *after = snapshot(f, 1);
	same_tree(after, before);
	json_decref(before);
	json_decref(after);
	assert_true(jexists(f, name));          /* kept for a human to look at */
	unlinkat(f->jfd, name, 0);
}

static void test_recover_refuses_hostile(void **state)
{
	fx *f = *state;
	/* temp and backup names must be ours (.tgpatch- prefix) */
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                                  "\"temp\":\"b.txt\",\"backup\":\"c.txt\"}]}");
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                                  "\"temp\":\"" PFX "-0.new\",\"backup\":\"c.txt\"}]}");
	hostile_journal(f, TX ".commit", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                                 "\"temp\":\"b.txt\",\"backup\":\"" PFX "-0.old\"}]}");
	hostile_journal(f, TX ".commit", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                                 "\"backup\":\"x.tgpatch-1.old\"}]}");
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"a.txt\","
	                                  "\"backup\":\".tgpatch-x/c.txt\"}]}");
	/* absolute names */
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":\"/etc/x\","
	                                  "\"backup\":\"" PFX "-0.old\"}]}");
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[\"/tmp\"],\"files\":[]}");
	/* not a journal at all */
	hostile_journal(f, TX ".journal", "garbage");
	hostile_journal(f, TX ".journal", "{\"version\":3,\"dirs\":[],\"files\":[]}");
	/* version 2: a tx is required, an op id's characters; identities only of created files */
	hostile_journal(f, TX ".journal", "{\"version\":2,\"dirs\":[],\"files\":[]}");
	hostile_journal(f, TX ".journal", "{\"version\":2,\"tx\":\"../x\",\"dirs\":[],\"files\":[]}");
	hostile_journal(f, TX ".journal", "{\"version\":2,\"tx\":\"ab\",\"dirs\":[],\"files\":[{"
	                                  "\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\",\"backup\":\""
	                                  PFX "-0.old\",\"made\":{\"dev\":1,\"ino\":2}}]}");
	hostile_journal(f, TX ".journal", "{\"version\":2,\"tx\":\"ab\",\"dirs\":[],\"files\":[{"
	                                  "\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\","
	                                  "\"made\":{\"dev\":\"1\",\"ino\":2}}]}");
	hostile_journal(f, TX ".journal", "{\"version\":2,\"tx\":\"ab\",\"dirs\":[],\"files\":[{"
	                                  "\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\","
	                                  "\"made\":{\"dev\":1,\"ino\":2,\"born\":[1,1000000000]}}]}");
	/* an identity in a version 1 journal */
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{"
	                                  "\"path\":\"a.txt\",\"temp\":\"" PFX "-0.new\","
	                                  "\"made\":{\"dev\":1,\"ino\":2}}]}");
	hostile_journal(f, TX ".commit", "{\"version\":1,\"files\":[]}");
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"temp\":\""
	                                  PFX "-0.new\"}]}");
	hostile_journal(f, TX ".journal", "{\"version\":1,\"dirs\":[],\"files\":[{\"path\":7}]}");
}

/* The journal's parser as the fuzzer sees it: versions, the refusal's
 * sentence, and a text read back written the same. */
static void test_journal_versions(void **state)
{
	(void)state;
	char err[ERRCAP] = "", *canon;
	const char *v9 = "{\"version\":9,\"tx\":\"ab\",\"dirs\":[],\"files\":[]}";
	assert_int_equal(tgi_patch_journal_check(v9, strlen(v9), &canon, err, sizeof err), -1);
	assert_null(canon);
	assert_non_null(strstr(err, "version 9"));
	assert_int_equal(tgi_patch_journal_check(crashed_journal_v1, strlen(crashed_journal_v1), &canon,
	                                         err, sizeof err), 1);
	char *again;
	assert_int_equal(tgi_patch_journal_check(canon, strlen(canon), &again, err, sizeof err), 1);
	assert_string_equal(again, canon);
	free(again);
	free(canon);
	const char *v2 = "{\"version\":2,\"tx\":\"0193a5f0-7c1e\",\"dirs\":[\"d\"],\"files\":[{"
	                 "\"path\":\"d/a\",\"temp\":\"d/.tgpatch-x-0.new\",\"backup\":null,"
	                 "\"made\":{\"dev\":-1,\"ino\":9223372036854775807,\"born\":[-5,999999999],"
	                 "\"gen\":4294967295}}]}";
	assert_int_equal(tgi_patch_journal_check(v2, strlen(v2), &canon, err, sizeof err), 2);
	assert_string_equal(canon, v2);
	free(canon);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_directives),
		cmocka_unit_test(test_parse_chunk_lines),
		cmocka_unit_test(test_parse_many),
		cmocka_unit_test(test_parse_markers),
		cmocka_unit_test(test_parse_messages),
		cmocka_unit_test(test_parse_tolerances),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_parse_deletes),
		cmocka_unit_test(test_parse_path_offsets),
		cmocka_unit_test(test_map_paths),
		cmocka_unit_test(test_seek_passes),
		cmocka_unit_test(test_seek_pass_order),
		cmocka_unit_test(test_seek_fold_table),
		cmocka_unit_test(test_seek_unicode_trim),
		cmocka_unit_test(test_seek_eof_and_edges),
		cmocka_unit_test(test_seek_invalid_utf8),
		T(test_plan_kinds),
		T(test_plan_ops_see_each_other),
		T(test_plan_line_endings),
		T(test_plan_matching),
		T(test_plan_not_utf8),
		T(test_commit_not_utf8_names),
		T(test_plan_messages_sanitized),
		T(test_plan_blank_lines_between_chunks),
		T(test_plan_files),
		T(test_plan_refusals),
		T(test_plan_writes_nothing),
		T(test_commit_success),
		T(test_commit_links),
		T(test_commit_rollback_temp_stage),
		T(test_commit_rollback_rename_stage),
		T(test_commit_journal_fails),
		T(test_recover_prepared),
		T(test_recover_not_utf8_names),
		T(test_recover_keeps_foreign_files),
		T(test_recover_committed),
		T(test_recover_partial),
		T(test_recover_several),
		T(test_recover_skips_locked),
		T(test_recover_refuses_hostile),
		T(test_recover_leaves_anothers_file),
		T(test_recover_version_1),
		T(test_recover_committed_redo),
		T(test_recover_partial_written),
		T(test_journal_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
