/*
 * test_diff.c — unified diffs (src/util/diff.c) against GNU diff and patch:
 * hand-made cases whose text must equal `diff -u` byte for byte (a change
 * at the start, middle and end, hunks merged within twice the context and
 * kept apart past it, no newline at the end on either side, empty files,
 * CRLF lines kept as bytes), random pairs whose diff `patch` applies to
 * give the new file exactly and whose size equals `diff --minimal`'s (the
 * edit script is minimal), the fallback past the work bounds (one hunk,
 * still applies), binary input, the output cap, labels with control
 * characters, and a side too long to diff line by line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/diff.h"
#include "util/util.h"

static char dir[] = "/tmp/tg-diff.XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const char *data, size_t len)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static char *read_file(const char *name, size_t *len)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	tgi_buf b;
	tgi_buf_init(&b, 1u << 26);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		assert_int_equal(tgi_buf_append(&b, chunk, n), 0);
	fclose(f);
	*len = b.len;
	char *s = tgi_buf_steal(&b);
	return s ? s : tgi_strdup("");
}

/* Our diff of a -> b, as a new string; info filled. */
static char *ours(const char *a, size_t alen, const char *b, size_t blen, const char *la,
                  const char *lb, const tgi_diff_opts *o, tgi_diff_info *info)
{
	tgi_buf out;
	tgi_buf_init(&out, 1u << 26);
	tgi_diff_unified(a, alen, b, blen, la, lb, o, &out, info);
	char *s = tgi_buf_steal(&out);
	return s ? s : tgi_strdup("");
}

/* `diff -u` with the same labels (and --minimal when asked). */
static char *gnu(const char *a, size_t alen, const char *b, size_t blen, const char *la,
                 const char *lb, int minimal)
{
	char cmd[512];
	size_t len;
	write_file("old", a, alen);
	write_file("new", b, blen);
	snprintf(cmd, sizeof cmd, "diff -u %s --label '%s' --label '%s' %s/old %s/new > %s/gnu.out",
	         minimal ? "--minimal" : "", la, lb, dir, dir, dir);
	int rc = system(cmd);
	assert_true(WEXITSTATUS(rc) <= 1);
	return read_file("gnu.out", &len);
}

static void same_as_gnu(const char *a, const char *b)
{
	tgi_diff_info info;
	char *mine = ours(a, strlen(a), b, strlen(b), "a/f.txt", "b/f.txt", NULL, &info);
	char *theirs = gnu(a, strlen(a), b, strlen(b), "a/f.txt", "b/f.txt", 0);
	if (strcmp(mine, theirs))
		fail_msg("diff differs from diff -u\n--- ours:\n%s--- diff -u:\n%s", mine, theirs);
	assert_int_equal(info.identical, strcmp(a, b) == 0);
	free(mine);
	free(theirs);
}

/* Does `patch` turn a into b with our diff? */
static void applies(const char *a, size_t alen, const char *b, size_t blen, const char *d)
{
	char cmd[512];
	size_t len;
	write_file("old", a, alen);
	write_file("d.patch", d, strlen(d));
	snprintf(cmd, sizeof cmd, "patch -s -f -o %s/out %s/old < %s/d.patch > %s/patch.log 2>&1",
	         dir, dir, dir, dir);
	if (system(cmd) != 0) {
		char *log = read_file("patch.log", &len);
		fail_msg("patch refused our diff: %s\n%s", log, d);
	}
	char *got = read_file("out", &len);
	if (len != blen || memcmp(got, b, blen))
		fail_msg("patch gave other bytes than the new file\n%s", d);
	free(got);
}

/* Lines a diff adds plus lines it removes (headers left out). */
static size_t diff_size(const char *d)
{
	size_t n = 0;
	for (const char *l = d; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if ((l[0] == '+' && strncmp(l, "+++ ", 4)) || (l[0] == '-' && strncmp(l, "--- ", 4)))
			n++;
		(void)len;
		l = nl ? nl + 1 : l + len;
	}
	return n;
}

static const char ten[] = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

static void test_hunks_like_gnu(void **state)
{
	same_as_gnu(ten, ten);                                          /* nothing */
	same_as_gnu(ten, "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n");         /* middle */
	same_as_gnu(ten, "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");          /* first line */
	same_as_gnu(ten, "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n");           /* last line */
	same_as_gnu(ten, "1\n2\n3\n4\n5\n5.5\n6\n7\n8\n9\n10\n");       /* insert only */
	same_as_gnu(ten, "1\n2\n3\n4\n6\n7\n8\n9\n10\n");               /* delete only */
	same_as_gnu(ten, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");         /* insert at the top */
	same_as_gnu(ten, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n");        /* append */
	same_as_gnu("x\n", "y\n");                                      /* one line each */
	same_as_gnu("a\nb\nc\n", "a\nc\n");
}

/* Two changes 6 unchanged lines apart share a hunk (3 + 3 of context);
 * 7 apart, they are two hunks. */
static void test_context_merging(void **state)
{
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	const char *six = "1\n2\nX\n4\n5\n6\n7\n8\n9\nY\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	const char *seven = "1\n2\nX\n4\n5\n6\n7\n8\n9\n10\nY\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	tgi_diff_info info;
	char *d = ours(a, strlen(a), six, strlen(six), "a/f", "b/f", NULL, &info);
	assert_int_equal(info.hunks, 1);
	assert_int_equal(info.added, 2);
	assert_int_equal(info.removed, 2);
	free(d);
	d = ours(a, strlen(a), seven, strlen(seven), "a/f", "b/f", NULL, &info);
	assert_int_equal(info.hunks, 2);
	free(d);
	same_as_gnu(a, six);
	same_as_gnu(a, seven);

	/* context 0 and 1 */
	tgi_diff_opts o = {.context = 0};
	d = ours(a, strlen(a), six, strlen(six), "a/f", "b/f", &o, &info);
	assert_int_equal(info.hunks, 2);
	assert_non_null(strstr(d, "@@ -3 +3 @@\n-3\n+X\n"));
	free(d);
}

static void test_no_newline_at_end(void **state)
{
	same_as_gnu("a\nb", "a\nc");          /* neither ends in a newline */
	same_as_gnu("a\nb\n", "a\nb");        /* the newline removed */
	same_as_gnu("a\nb", "a\nb\n");        /* the newline added */
	same_as_gnu("a\nb", "a\nb\nc");
	same_as_gnu("1\n2\n3\n4\n5\n6\n7\n8", "1\n2\nX\n4\n5\n6\n7\n8");  /* as context */

	tgi_diff_info info;
	char *d = ours("a\nb", 3, "a\nc", 3, "a/f", "b/f", NULL, &info);
	assert_string_equal(d, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of "
	                       "file\n+c\n\\ No newline at end of file\n");
	free(d);
}

static void test_empty_files(void **state)
{
	tgi_diff_info info;
	char *d = ours(NULL, 0, "x\ny\n", 4, "/dev/null", "b/n.txt", NULL, &info);
	assert_string_equal(d, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n");
	assert_int_equal(info.added, 2);
	free(d);
	d = ours("x\ny\n", 4, "", 0, "a/n.txt", "/dev/null", NULL, &info);
	assert_string_equal(d, "--- a/n.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n");
	assert_int_equal(info.removed, 2);
	free(d);
	d = ours("", 0, NULL, 0, "a/e", "b/e", NULL, &info);
	assert_string_equal(d, "");
	assert_true(info.identical);
	free(d);
	same_as_gnu("", "only\n");
	same_as_gnu("only\n", "");
	same_as_gnu("", "no newline");
}

/* CRLF lines are bytes: "\r" stays in every line written. */
static void test_crlf_kept(void **state)
{
	const char *a = "one\r\ntwo\r\nthree\r\n", *b = "one\r\n2\r\nthree\r\n";
	tgi_diff_info info;
	char *d = ours(a, strlen(a), b, strlen(b), "a/w.txt", "b/w.txt", NULL, &info);
	assert_string_equal(d, "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n+2\r\n"
	                       " three\r\n");
	free(d);
	same_as_gnu(a, b);
	/* a line that only lost its "\r" differs */
	same_as_gnu("a\r\nb\r\n", "a\r\nb\n");
	d = ours(a, strlen(a), b, strlen(b), "a/w.txt", "b/w.txt", NULL, &info);
	applies(a, strlen(a), b, strlen(b), d);
	free(d);
}

/* Random pairs: patch applies ours, and ours is as small as GNU's minimal. */
static void test_random_pairs_apply(void **state)
{
	static const char *const words[] = {"a", "b", "c", "d", "int x;", "", "}", "  return 0;",
	                                    "e\r"};
	srand(7);
	for (int round = 0; round < 250; round++) {
		tgi_buf x, y;
		tgi_buf_init(&x, 1 << 20);
		tgi_buf_init(&y, 1 << 20);
		int nx = rand() % 40, ny;
		for (int i = 0; i < nx; i++)
			tgi_buf_printf(&x, "%s\n", words[rand() % (round % 2 ? 9 : 4)]);
		/* y: x edited here and there, or unrelated */
		if (round % 5 == 0) {
			ny = rand() % 40;
			for (int i = 0; i < ny; i++)
				tgi_buf_printf(&y, "%s\n", words[rand() % 9]);
		} else {
			const char *p = x.p ? x.p : "";
			while (*p) {
				const char *nl = strchr(p, '\n');
				int r = rand() % 10;
				if (r == 0)
					tgi_buf_printf(&y, "%s\n", words[rand() % 9]);
				if (r != 1)
					tgi_buf_append(&y, p, (size_t)(nl - p) + 1);
				p = nl + 1;
			}
			if (rand() % 4 == 0)
				tgi_buf_puts(&y, "tail\n");
		}
		if (rand() % 5 == 0 && y.len)
			y.len--, y.p[y.len] = '\0';     /* no newline at the end */
		if (rand() % 7 == 0 && x.len)
			x.len--, x.p[x.len] = '\0';
		const char *a = x.p ? x.p : "", *b = y.p ? y.p : "";
		tgi_diff_info info;
		char *d = ours(a, x.len, b, y.len, "a/r.txt", "b/r.txt", NULL, &info);
		if (info.identical) {
			assert_string_equal(d, "");
		} else {
			assert_false(info.fallback);
			applies(a, x.len, b, y.len, d);
			char *g = gnu(a, x.len, b, y.len, "a/r.txt", "b/r.txt", 1);
			assert_int_equal(diff_size(d), diff_size(g));
			assert_int_equal(info.added + info.removed, diff_size(g));
			free(g);
		}
		free(d);
		tgi_buf_free(&x);
		tgi_buf_free(&y);
	}
}

/* A real file against an edited copy of itself. */
static void test_real_file(void **state)
{
	size_t len;
	FILE *f = fopen("src/util/diff.c", "rb");
	if (!f) {
		skip();
		return;
	}
	fclose(f);
	char p[256];
	snprintf(p, sizeof p, "cp src/util/diff.c %s/real", dir);
	assert_int_equal(system(p), 0);
	char *a = read_file("real", &len);
	size_t alen = len;
	/* every 17th line dropped, a line added after every 23rd */
	tgi_buf y;
	tgi_buf_init(&y, 1 << 22);
	size_t ln = 0;
	for (const char *q = a; *q; ln++) {
		const char *nl = strchr(q, '\n');
		size_t n = nl ? (size_t)(nl - q) + 1 : strlen(q);
		if (ln % 17 != 5)
			tgi_buf_append(&y, q, n);
		if (ln % 23 == 0)
			tgi_buf_puts(&y, "/* added */\n");
		q += n;
	}
	tgi_diff_info info;
	char *d = ours(a, alen, y.p, y.len, "a/diff.c", "b/diff.c", NULL, &info);
	applies(a, alen, y.p, y.len, d);
	char *g = gnu(a, alen, y.p, y.len, "a/diff.c", "b/diff.c", 1);
	assert_int_equal(diff_size(d), diff_size(g));
	free(g);
	free(d);
	free(a);
	tgi_buf_free(&y);
}

/* Past the bounds: one hunk replacing the middle, which still applies. */
static void test_fallback(void **state)
{
	const char *a = "head\n1\n2\n3\n4\n5\n6\n7\n8\ntail\n";
	const char *b = "head\n1\nx\n3\ny\n5\nz\n7\nw\ntail\n";
	tgi_diff_opts o = {.context = 3, .max_d = 2};
	tgi_diff_info info;
	char *d = ours(a, strlen(a), b, strlen(b), "a/f", "b/f", &o, &info);
	assert_true(info.fallback);
	assert_int_equal(info.hunks, 1);
	assert_int_equal(info.removed, 7);      /* all between the common "head\n1" and "tail" */
	assert_int_equal(info.added, 7);
	assert_non_null(strstr(d, "@@ -1,10 +1,10 @@\n head\n 1\n-2\n-3\n-4\n"));
	applies(a, strlen(a), b, strlen(b), d);
	free(d);

	tgi_diff_opts w = {.context = 3, .max_work = 3};
	d = ours(a, strlen(a), b, strlen(b), "a/f", "b/f", &w, &info);
	assert_true(info.fallback);
	assert_int_equal(info.hunks, 1);
	applies(a, strlen(a), b, strlen(b), d);
	free(d);

	/* within the default bounds the same pair is a minimal diff */
	d = ours(a, strlen(a), b, strlen(b), "a/f", "b/f", NULL, &info);
	assert_false(info.fallback);
	assert_int_equal(info.removed, 4);
	free(d);
}

static void test_binary(void **state)
{
	tgi_diff_info info;
	char *d = ours("a\0b", 3, "a\0c", 3, "a/bin", "b/bin", NULL, &info);
	assert_string_equal(d, "Binary files a/bin and b/bin differ\n");
	assert_true(info.binary);
	free(d);
	d = ours("text\n", 5, "a\0c", 3, "a/bin", "b/bin", NULL, &info);
	assert_true(info.binary);
	free(d);
	d = ours("a\0b", 3, "a\0b", 3, "a/bin", "b/bin", NULL, &info);
	assert_string_equal(d, "");
	assert_true(info.identical);
	free(d);
}

/* The output stops at a line before max_out and says so. */
static void test_cut(void **state)
{
	tgi_buf big;
	tgi_buf_init(&big, 1 << 22);
	for (int i = 0; i < 20000; i++)
		tgi_buf_printf(&big, "line %d\n", i);
	tgi_diff_opts o = {.context = 3, .max_out = 1000};
	tgi_diff_info info;
	char *d = ours("", 0, big.p, big.len, "/dev/null", "b/big", &o, &info);
	assert_true(info.cut);
	assert_int_equal(info.added, 20000);
	char *m = strstr(d, "[... the diff is cut here: it is over 1000 bytes ...]\n");
	assert_non_null(m);
	assert_true((size_t)(m - d) <= 1000);
	assert_int_equal(m[-1], '\n');          /* whole lines before the marker */
	assert_string_equal(m + strlen("[... the diff is cut here: it is over 1000 bytes ...]\n"), "");
	free(d);
	tgi_buf_free(&big);
}

static void test_labels_sanitized(void **state)
{
	tgi_diff_info info;
	char *d = ours("a\n", 2, "b\n", 2, "a/x\ny", "b/x\ty", NULL, &info);
	assert_non_null(strstr(d, "--- a/x?y\n+++ b/x?y\n"));
	free(d);
}

/* More lines than are diffed one by one: one hunk, written as scanned. */
static void test_many_lines(void **state)
{
	size_t n = (1u << 20) + 5;
	char *a = tgi_xmalloc(2 * n), *b = tgi_xmalloc(2 * n);
	for (size_t i = 0; i < n; i++) {
		a[2 * i] = 'x', a[2 * i + 1] = '\n';
		b[2 * i] = i == n / 2 ? 'y' : 'x', b[2 * i + 1] = '\n';
	}
	tgi_diff_opts o = {.context = 3, .max_out = 4096};
	tgi_diff_info info;
	char *d = ours(a, 2 * n, b, 2 * n, "a/l", "b/l", &o, &info);
	assert_true(info.fallback);
	assert_true(info.cut);
	assert_int_equal(info.removed, n);
	assert_int_equal(info.added, n);
	char hdr[64];
	snprintf(hdr, sizeof hdr, "@@ -1,%zu +1,%zu @@\n", n, n);
	assert_non_null(strstr(d, hdr));
	free(d);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hunks_like_gnu),
		cmocka_unit_test(test_context_merging),
		cmocka_unit_test(test_no_newline_at_end),
		cmocka_unit_test(test_empty_files),
		cmocka_unit_test(test_crlf_kept),
		cmocka_unit_test(test_random_pairs_apply),
		cmocka_unit_test(test_real_file),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_labels_sanitized),
		cmocka_unit_test(test_many_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
