/*
 * test_readonly.c — the read-only class of shell commands.
 *
 * Command lines are split by tgi_shell_split, as the gate splits them, and
 * classed with the built-in list, then with config entries added and in
 * place of the list.  A line is read-only only if every simple command in
 * it is, so most "no" cases differ from a "yes" case by one word.
 *
 * Owns: nothing.  Must not: touch the filesystem or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/shell.h"
#include "util/util.h"

typedef struct ro_case {
	const char *cmd;
	int         ro;
} ro_case;

static const ro_case builtin[] = {
	/* read-only */
	{ "ls -la", 1 },
	{ "cat README.md", 1 },
	{ "head -n 5 a.txt", 1 },
	{ "tail -n 20 build.log", 1 },
	{ "wc -l src/*.c", 1 },
	{ "grep -rn TODO src", 1 },
	{ "egrep 'a|b' f", 1 },
	{ "rg -n foo", 1 },
	{ "ag foo src", 1 },
	{ "pwd", 1 },
	{ "echo hi", 1 },
	{ "printf '%s\\n' x", 1 },
	{ "which gcc", 1 },
	{ "whoami", 1 },
	{ "id -u", 1 },
	{ "date +%s", 1 },
	{ "date -d yesterday +%F", 1 },
	{ "uname -a", 1 },
	{ "env", 1 },
	{ "du -sh .", 1 },
	{ "df -h", 1 },
	{ "file a.out", 1 },
	{ "stat -c %s x", 1 },
	{ "tree -L 2", 1 },
	{ "sort a.txt | uniq -c", 1 },
	{ "cut -d: -f1 /etc/passwd", 1 },
	{ "tr a-z A-Z < in.txt", 1 },
	{ "diff -u a b", 1 },
	{ "cmp a b", 1 },
	{ "md5sum x", 1 },
	{ "sha256sum x", 1 },
	{ "basename /a/b.c .c", 1 },
	{ "dirname /a/b", 1 },
	{ "realpath .", 1 },
	{ "readlink -f x", 1 },
	{ "test -f x", 1 },
	{ "[ -d src ]", 1 },
	{ "true", 1 },
	{ "false", 1 },
	{ "find . -name '*.c' -type f", 1 },
	{ "find src -newer x -print", 1 },
	{ "sed -n '1,5p' f", 1 },
	{ "sed -n '/foo/p' f", 1 },
	{ "sed -n -e '$p' -e 3p f", 1 },
	{ "sed -n '10q;p' f", 1 },
	{ "git status", 1 },
	{ "git status --short", 1 },
	{ "git log --oneline -5", 1 },
	{ "git diff HEAD~1 -- src", 1 },
	{ "git show HEAD:README.md", 1 },
	{ "git branch", 1 },
	{ "git branch -a", 1 },
	{ "git branch --list 'feat/*'", 1 },
	{ "git rev-parse HEAD", 1 },
	{ "git ls-files", 1 },
	{ "git blame src/main.c", 1 },
	{ "git describe --tags", 1 },
	{ "git remote -v", 1 },
	{ "git config --get user.name", 1 },
	{ "git config --list --show-origin", 1 },
	{ "git -C sub status", 1 },
	{ "git --no-pager log", 1 },
	{ "/usr/bin/ls", 1 },
	{ "/bin/cat x", 1 },
	{ "ls > /dev/null 2>&1", 1 },
	{ "cat a 2>/dev/null", 1 },
	{ "echo oops >&2", 1 },
	{ "git status && git diff", 1 },
	{ "ls | wc -l", 1 },
	{ "cd src && ls", 1 },
	{ "bash -lc \"git status && ls\"", 1 },
	{ "ls; pwd; echo done", 1 },
	{ "cat <<EOF\nhi\nEOF", 1 }, /* a here-doc into cat only prints */
	{ "grep -c x <<< \"$X\"", 1 },

	/* not read-only */
	{ "tail -f build.log", 0 },
	{ "tail -5f build.log", 0 },
	{ "tail -F x", 0 },
	{ "tail --follow=name x", 0 },
	{ "find . -delete", 0 },
	{ "find . -name x -exec rm {} ;", 0 },
	{ "find . -execdir cat {} +", 0 },
	{ "find . -ok rm {} ;", 0 },
	{ "find . -fprint out.txt", 0 },
	{ "find . -fls out.txt", 0 },
	{ "sed -i 's/a/b/' f", 0 },
	{ "sed -n -i 1p f", 0 },
	{ "sed 's/a/b/' f", 0 },
	{ "sed -n 's/a/b/p' f", 0 },
	{ "sed -n 'w out' f", 0 },
	{ "sed -n '1e touch x' f", 0 },
	{ "sed -n -f script.sed f", 0 },
	{ "sed -n '/a/r x' f", 0 },
	{ "awk '{print}' f", 0 },
	{ "less f", 0 },
	{ "more f", 0 },
	{ "ls > out.txt", 0 },
	{ "echo hi >> f", 0 },
	{ "cat a &> log", 0 },
	{ "cat a >&log", 0 },
	{ "sudo ls", 0 },
	{ "env FOO=1 ls", 0 },
	{ "env -i", 0 },
	{ "FOO=1 ls", 0 },
	{ "xargs ls", 0 },
	{ "nice ls", 0 },
	{ "echo $(rm x)", 0 },
	{ "cat <<EOF > out.txt\nhi\nEOF", 0 },
	{ "bash <<EOF\nls\nEOF", 0 },
	{ "bash <<< ls", 0 },
	{ "echo ls | sh", 0 },
	{ "rm x", 0 },
	{ "ls && rm x", 0 },
	{ "ls | tee out", 0 },
	{ "./ls", 0 },
	{ "/tmp/ls", 0 },
	{ "bin/cat x", 0 },
	{ "sort -o out in", 0 },
	{ "sort --output=out in", 0 },
	{ "sort --compress-program=gzip in", 0 },
	{ "uniq a b", 0 },
	{ "date -s 2020-01-01", 0 },
	{ "date 010100002020", 0 },
	{ "tree -o out.txt", 0 },
	{ "file -C -m magic", 0 },
	{ "rg --pre cat x", 0 },
	{ "rg --pre=cat x", 0 },
	{ "rg -z x", 0 },
	{ "ag --pager less x", 0 },
	{ "git push", 0 },
	{ "git stash", 0 },
	{ "git branch new-feature", 0 },
	{ "git branch -D old", 0 },
	{ "git branch -m a b", 0 },
	{ "git remote add origin x", 0 },
	{ "git config user.name x", 0 },
	{ "git config --unset user.name", 0 },
	{ "git -c core.pager=evil log", 0 },
	{ "git log --output=x", 0 },
	{ "git diff --ext-diff", 0 },
	{ "git checkout main", 0 },
	{ "bash -c 'ls && rm -rf build'", 0 },
	{ "make", 0 },
	{ "npm test", 0 },
};

static int classify(const char *cmd, const tgi_strv *extra, int replace)
{
	tgi_cmdline cl = { 0 };
	char err[256];
	int got;

	if (tgi_shell_split(cmd, strlen(cmd), &cl, err, sizeof err) < 0) {
		fprintf(stderr, "split \"%s\": %s\n", cmd, err);
		return -1;
	}
	got = tgi_shell_readonly(&cl, extra, replace);
	tgi_cmdline_free(&cl);
	return got;
}

static void test_builtin(void **state)
{
	size_t yes = 0, no = 0;
	int bad = 0;

	for (size_t i = 0; i < TGI_ARRAY_LEN(builtin); i++) {
		int got = classify(builtin[i].cmd, NULL, 0);
		if (got != builtin[i].ro) {
			fprintf(stderr, "readonly `%s`: got %d, want %d\n", builtin[i].cmd, got, builtin[i].ro);
			bad++;
		}
		builtin[i].ro ? yes++ : no++;
	}
	assert_int_equal(bad, 0);
	assert_true(yes >= 40 && no >= 40);
}

static void strv_of(tgi_strv *sv, const char *const *items)
{
	for (size_t i = 0; items[i]; i++)
		tgi_strv_push(sv, tgi_strdup(items[i]));
}

/* Config entries are added to the built-in list: "prog" covers any
 * arguments, "prog word ..." those beginning with the words. */
static void test_extra(void **state)
{
	tgi_strv extra = { 0 };
	strv_of(&extra, (const char *const[]){ "make -n", "npm test", "git push --dry-run", "jq",
	                                       "./scripts/lint.sh", "  cargo   check  ", NULL });

	assert_int_equal(classify("make -n all", &extra, 0), 1);
	assert_int_equal(classify("make all", &extra, 0), 0);
	assert_int_equal(classify("make", &extra, 0), 0);
	assert_int_equal(classify("npm test", &extra, 0), 1);
	assert_int_equal(classify("npm install", &extra, 0), 0);
	assert_int_equal(classify("git push --dry-run origin", &extra, 0), 1);
	assert_int_equal(classify("git push origin", &extra, 0), 0);
	assert_int_equal(classify("jq . a.json", &extra, 0), 1);
	assert_int_equal(classify("/usr/bin/jq .", &extra, 0), 1);
	assert_int_equal(classify("./jq .", &extra, 0), 0);
	assert_int_equal(classify("./scripts/lint.sh src", &extra, 0), 1);
	assert_int_equal(classify("scripts/lint.sh src", &extra, 0), 0);
	assert_int_equal(classify("cargo check", &extra, 0), 1);
	/* the built-in list still holds, and so do the other conditions */
	assert_int_equal(classify("git status && npm test", &extra, 0), 1);
	assert_int_equal(classify("npm test > out.txt", &extra, 0), 0);
	assert_int_equal(classify("sudo npm test", &extra, 0), 0);
	assert_int_equal(classify("CI=1 npm test", &extra, 0), 0);
	tgi_strv_free(&extra);
}

/* With replace the config's entries are the whole list. */
static void test_replace(void **state)
{
	tgi_strv extra = { 0 };
	strv_of(&extra, (const char *const[]){ "ls", "git status", NULL });

	assert_int_equal(classify("ls -la", &extra, 1), 1);
	assert_int_equal(classify("git status", &extra, 1), 1);
	assert_int_equal(classify("cat x", &extra, 1), 0);
	assert_int_equal(classify("git log", &extra, 1), 0);
	assert_int_equal(classify("ls", NULL, 1), 0);
	tgi_strv_free(&extra);

	/* an empty entry covers nothing */
	strv_of(&extra, (const char *const[]){ "", "   ", NULL });
	assert_int_equal(classify("ls", &extra, 1), 0);
	assert_int_equal(classify("ls", &extra, 0), 1);
	tgi_strv_free(&extra);
}

/* No command is not a read-only command; nor is a bare assignment or a
 * bare redirection. */
static void test_edges(void **state)
{
	tgi_cmdline empty = { 0 };

	assert_int_equal(tgi_shell_readonly(NULL, NULL, 0), 0);
	assert_int_equal(tgi_shell_readonly(&empty, NULL, 0), 0);
	assert_int_equal(classify("FOO=1", NULL, 0), 0);
	assert_int_equal(classify("> out.txt", NULL, 0), 0);
}

/* The argv form is classed the same way. */
static void test_argv(void **state)
{
	const char *const st[] = { "git", "status" };
	const char *const pu[] = { "git", "push" };
	const char *const sh[] = { "bash", "-lc", "ls && pwd" };
	tgi_cmdline cl = { 0 };
	char err[256];

	assert_int_equal(tgi_shell_from_argv(st, 2, &cl, err, sizeof err), 0);
	assert_int_equal(tgi_shell_readonly(&cl, NULL, 0), 1);
	tgi_cmdline_free(&cl);
	assert_int_equal(tgi_shell_from_argv(pu, 2, &cl, err, sizeof err), 0);
	assert_int_equal(tgi_shell_readonly(&cl, NULL, 0), 0);
	tgi_cmdline_free(&cl);
	assert_int_equal(tgi_shell_from_argv(sh, 3, &cl, err, sizeof err), 0);
	assert_int_equal(tgi_shell_readonly(&cl, NULL, 0), 1);
	tgi_cmdline_free(&cl);
}

/* ---- what a read-only command reads (tgi_shell_read_paths) */

typedef struct reads_case {
	const char *cmd;
	const char *paths;   /* the words, joined by '|' */
	int         recursive;
} reads_case;

static const reads_case reads[] = {
	{ "cat .env", ".env", 0 },
	{ "cat a b -- -c", "a|b|-c", 0 },
	{ "head -c 10 ./.env", "./.env", 0 },
	{ "head -n5 a", "a", 0 },
	{ "tail -n 1 sub/.env", "sub/.env", 0 },
	{ "cat < .env", ".env", 0 },
	{ "wc -l < in.txt", "in.txt", 0 },
	{ "grep TOKEN README .env", "README|.env", 0 },
	{ "grep -e TOKEN .env", ".env", 0 },
	{ "grep -f pats.txt src", "pats.txt|src", 0 },
	{ "grep -r TOKEN .", ".", 1 },
	{ "grep -rn TOKEN", ".", 1 },
	{ "grep TOKEN", "", 0 },
	{ "rg -n foo", ".", 1 },
	{ "rg -g '*.c' foo src", "src", 1 },
	{ "ag foo src", "src", 1 },
	{ "sed -n 1p .env", ".env", 0 },
	{ "sed -n -e 1p a b", "a|b", 0 },
	{ "find secrets -type f", "secrets", 1 },
	{ "find -name '*.c'", ".", 1 },
	{ "find . -newer .env", ".|.env", 1 },
	{ "ls", ".", 0 },
	{ "ls -R src", "src", 1 },
	{ "ls -I '*.o' secrets", "secrets", 0 },
	{ "du -sh .", ".", 1 },
	{ "tree", ".", 1 },
	{ "git show HEAD:.env", ".env", 0 },
	{ "git -C sub log -p -- .env", ".env", 0 },
	{ "git status", "", 0 },
	{ "echo .env", "", 0 },
	{ "test -f .env", "", 0 },
	{ "diff -r a b", "a|b", 1 },
	{ "stat -c %s .env", ".env", 0 },
	{ "sort -k 2 data", "data", 0 },
	{ "cut -d: -f1 .env", ".env", 0 },
	{ "file -f names.txt", "names.txt", 0 },
};

static void test_read_paths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		tgi_cmdline cl = {0};
		tgi_strv out = {0};
		char err[256], joined[512] = "";
		int rec = -1;
		assert_int_equal(tgi_shell_split(reads[i].cmd, strlen(reads[i].cmd), &cl, err,
		                                 sizeof err), 0);
		assert_int_equal(tgi_shell_read_paths(&cl.v[0], 0, &out, &rec), 0);
		for (size_t k = 0; k < out.n; k++) {
			if (k)
				strcat(joined, "|");
			strcat(joined, out.v[k]);
		}
		if (strcmp(joined, reads[i].paths) || rec != reads[i].recursive)
			fail_msg("%s: got \"%s\" (recursive %d), expected \"%s\" (%d)", reads[i].cmd,
			         joined, rec, reads[i].paths, reads[i].recursive);
		tgi_strv_free(&out);
		tgi_cmdline_free(&cl);
	}
}

/* A program it does not know (a config entry): every word not an option;
 * wrappers before `from` are not read. */
static void test_read_paths_generic(void **state)
{
	(void)state;
	tgi_cmdline cl = {0};
	tgi_strv out = {0};
	char err[256];
	int rec;
	const char *cmd = "nice make -n -C dir all";
	assert_int_equal(tgi_shell_split(cmd, strlen(cmd), &cl, err, sizeof err), 0);
	size_t p = tgi_shell_program(&cl.v[0]);
	assert_int_equal(p, 1);
	assert_int_equal(tgi_shell_read_paths(&cl.v[0], p, &out, &rec), 1);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0], "dir");
	assert_string_equal(out.v[1], "all");
	tgi_strv_free(&out);
	tgi_cmdline_free(&cl);
	/* the class of the program at `from`, whatever wraps it */
	cmd = "timeout 5 cat .env";
	assert_int_equal(tgi_shell_split(cmd, strlen(cmd), &cl, err, sizeof err), 0);
	assert_int_equal(tgi_shell_readonly(&cl, NULL, 0), 0);
	assert_int_equal(tgi_shell_reads_only(&cl.v[0], tgi_shell_program(&cl.v[0]), NULL, 0), 1);
	assert_int_equal(tgi_shell_reads_only(&cl.v[0], 0, NULL, 0), 0);
	tgi_cmdline_free(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_extra),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_read_paths),
		cmocka_unit_test(test_read_paths_generic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
