/*
 * test_glob.c — path globs (gitignore semantics) and text globs.
 *
 * The path table follows gitignore(5)'s own examples and rules, plus the
 * choices documented in src/policy/glob.c: a pattern that matches a
 * directory matches everything under it, "src/" + "**" matches "src", a
 * trailing '/' cannot tell a directory from a file, "." is the root, and
 * absolute patterns match nothing.  Hostile patterns must finish quickly.
 *
 * Owns: its tables.  Must not: touch the filesystem or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "util/util.h"

typedef struct glob_case {
	const char *pattern;
	const char *path;
	int         match;
} glob_case;

static const glob_case path_cases[] = {
	/* "*" matches anything except '/'; dotfiles are not special */
	{ "*.html", "index.html", 1 },
	{ "*.html", "docs/index.html", 1 },
	{ "*.html", "index.htm", 0 },
	{ "*", "a", 1 },
	{ "*", "a/b/c", 1 },
	{ "*", ".env", 1 },
	{ "*.env", ".env", 1 },
	{ "hello.*", "hello.c", 1 },
	{ "hello.*", "src/hello.txt", 1 },
	{ "hello.*", "hello", 0 },
	{ "hello.*", "ahello.c", 0 },
	/* no slash: the name at any depth */
	{ ".env", ".env", 1 },
	{ ".env", "config/.env", 1 },
	{ ".env", ".env.local", 0 },
	{ ".env", "x.env", 0 },
	{ "frotz", "a/b/frotz", 1 },
	/* and what lies under a matching name */
	{ ".env", ".env/secret", 1 },
	{ "node_modules", "web/node_modules/x/index.js", 1 },
	/* a leading "/" or "./" anchors at the workspace root */
	{ "/bar", "bar", 1 },
	{ "/bar", "a/bar", 0 },
	{ "./.env", ".env", 1 },
	{ "./.env", "config/.env", 0 },
	{ "./.env", ".env.example", 0 },
	{ "./src/**", "src/a.c", 1 },
	{ "/secrets/**", "secrets/prod/key", 1 },
	{ "/secrets/**", "app/secrets/key", 0 },
	/* a slash in the middle anchors too */
	{ "doc/frotz", "doc/frotz", 1 },
	{ "doc/frotz", "a/doc/frotz", 0 },
	{ "/doc/frotz", "doc/frotz", 1 },
	{ "doc/frotz/", "doc/frotz", 1 },
	{ "doc/frotz/", "a/doc/frotz", 0 },
	/* a trailing '/': the directory and everything under it, at any depth */
	{ "frotz/", "frotz", 1 },
	{ "frotz/", "a/frotz", 1 },
	{ "frotz/", "a/frotz/b", 1 },
	{ "docs/", "docs/guide/intro.md", 1 },
	{ "docs/", "mydocs/x", 0 },
	/* "foo/" + "*": one level, and (as git ignores an ignored directory's
	 * contents) everything below it */
	{ "foo/*", "foo/test.json", 1 },
	{ "foo/*", "foo/bar", 1 },
	{ "foo/*", "foo/bar/hello.c", 1 },
	{ "foo/*", "foo", 0 },
	{ "foo/*", "a/foo/bar", 0 },
	{ "src/*.c", "src/a.c", 1 },
	{ "src/*.c", "src/sub/a.c", 0 },
	/* leading "**" + "/": in all directories */
	{ "**/foo", "foo", 1 },
	{ "**/foo", "a/b/foo", 1 },
	{ "**/foo", "a/foo/x", 1 },
	{ "**/foo/bar", "foo/bar", 1 },
	{ "**/foo/bar", "x/y/foo/bar", 1 },
	{ "**/foo/bar", "x/foo/y/bar", 0 },
	{ "**/*.pem", "key.pem", 1 },
	{ "**/*.pem", "certs/prod/key.pem", 1 },
	{ "**/*.pem", "key.pem.bak", 0 },
	/* trailing "/" + "**": everything inside, and (our choice) the directory */
	{ "abc/**", "abc/x", 1 },
	{ "abc/**", "abc/x/y/z", 1 },
	{ "abc/**", "abc", 1 },
	{ "abc/**", "abcd", 0 },
	{ "abc/**", "x/abc/y", 0 },
	{ "src/**", "src", 1 },
	{ "src/**", "lib/src/a.c", 0 },
	/* "a" + "/" + "**" + "/" + "b": zero or more directories */
	{ "a/**/b", "a/b", 1 },
	{ "a/**/b", "a/x/b", 1 },
	{ "a/**/b", "a/x/y/b", 1 },
	{ "a/**/b", "a/x/y/c", 0 },
	{ "a/**/b", "b/a/b", 0 },
	{ "a/**/**/b", "a/b", 1 },
	{ "a/**/b/**/c", "a/1/b/2/3/c", 1 },
	{ "a/**/b/**/c", "a/1/c/2/b", 0 },
	/* other consecutive asterisks are ordinary ones */
	{ "foo**bar", "foobar", 1 },
	{ "foo**bar", "fooxbar", 1 },
	{ "foo**bar", "foo/bar", 0 },
	{ "a/b**", "a/bcd", 1 },
	/* "?" matches one character, never '/' */
	{ "?.txt", "a.txt", 1 },
	{ "?.txt", "ab.txt", 0 },
	{ "a?b", "a/b", 0 },
	{ "file?", "file", 0 },
	/* bracket expressions */
	{ "[a-c].txt", "b.txt", 1 },
	{ "[a-c].txt", "d.txt", 0 },
	{ "[!a-c].txt", "d.txt", 1 },
	{ "[!a-c].txt", "a.txt", 0 },
	{ "[^a-c].txt", "a.txt", 0 },
	{ "[]x].txt", "].txt", 1 },
	{ "[a-].txt", "-.txt", 1 },
	{ "*.[ch]", "src/main.h", 1 },
	{ "*.[ch]", "src/main.o", 0 },
	{ "[[:digit:]]*.log", "2024.log", 1 },
	{ "[[:digit:]]*.log", "x2024.log", 0 },
	{ "[[:upper:][:digit:]]x", "Qx", 1 },
	/* escapes: a literal metacharacter */
	{ "\\*.txt", "*.txt", 1 },
	{ "\\*.txt", "a.txt", 0 },
	{ "\\!important!.txt", "!important!.txt", 1 },
	{ "\\#notes", "#notes", 1 },
	{ "a\\?", "a?", 1 },
	{ "a\\?", "ab", 0 },
	{ "\\[x]", "[x]", 1 },
	{ "[\\]a]", "a", 1 },
	{ "[\\]a]", "]", 1 },
	{ "[a\\-z]", "-", 1 },
	{ "[a\\-z]", "b", 0 },
	/* an unclosed '[' and a trailing '\' are literal */
	{ "[abc", "[abc", 1 },
	{ "[abc", "a", 0 },
	{ "ab\\", "ab\\", 1 },
	/* patterns and paths are normalised */
	{ "./src//a.c", "src/a.c", 1 },
	{ "src/./a.c", "src/a.c", 1 },
	{ "src/a.c", "src//a.c", 1 },
	{ "src/a.c", "./src/a.c", 1 },
	{ "src/a.c/", "src/a.c", 1 },
	/* case is significant */
	{ ".env", ".ENV", 0 },
	/* the workspace root: only patterns that need no segment */
	{ "./", ".", 1 },
	{ "/", ".", 1 },
	{ ".", ".", 1 },
	{ "**", ".", 1 },
	{ "**", "a/b/c", 1 },
	{ "./", "src/a.c", 1 },
	{ "*", ".", 0 },
	{ ".env", ".", 0 },
	{ "src/**", ".", 0 },
	{ "./src", "", 0 },
	/* absolute patterns wait for paths outside the workspace */
	{ "~/.aws/**", ".aws/credentials", 0 },
	{ "~", ".", 0 },
	{ "//etc/passwd", "etc/passwd", 0 },
	/* the empty pattern matches nothing */
	{ "", "a", 0 },
	{ "", ".", 0 },
};

static void test_path_table(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(path_cases); i++) {
		const glob_case *c = &path_cases[i];
		int got = tgi_path_glob(c->pattern, c->path);
		if (got != c->match) {
			fprintf(stderr, "path glob \"%s\" on \"%s\": got %d, want %d\n", c->pattern, c->path,
			        got, c->match);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	assert_true(TGI_ARRAY_LEN(path_cases) >= 60);
}

static void test_path_null(void **state)
{
	assert_int_equal(tgi_path_glob(NULL, "a"), 0);
	assert_int_equal(tgi_path_glob("a", NULL), 0);
}

static const glob_case text_cases[] = {
	{ "*", "", 1 },
	{ "*", "anything/with/slashes", 1 },
	{ "", "", 1 },
	{ "", "a", 0 },
	{ "staging", "staging", 1 },
	{ "staging", "staging2", 0 },
	{ "staging", "Staging", 0 },
	{ "*@example.com", "bob@example.com", 1 },
	{ "*@example.com", "bob@example.com.evil", 0 },
	{ "*@example.com", "@example.com", 1 },
	{ "v*", "v1.2.3", 1 },
	{ "v?", "v1", 1 },
	{ "v?", "v", 0 },
	{ "v?", "v12", 0 },
	{ "a*b*c", "abc", 1 },
	{ "a*b*c", "axxbyyc", 1 },
	{ "a*b*c", "axxbyy", 0 },
	{ "*.*", "a.b/c", 1 },
	{ "server__*", "server__read", 1 },
	{ "server__*", "server_read", 0 },
	{ "server__*", "other__read", 0 },
	{ "[a]", "a", 0 },
	{ "[a]", "[a]", 1 },
	{ "\\*", "\\x", 1 },
	{ "**", "x", 1 },
	{ "a**", "a", 1 },
};

static void test_text_table(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(text_cases); i++) {
		const glob_case *c = &text_cases[i];
		int got = tgi_text_glob(c->pattern, c->path);
		if (got != c->match) {
			fprintf(stderr, "text glob \"%s\" on \"%s\": got %d, want %d\n", c->pattern, c->path,
			        got, c->match);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	assert_int_equal(tgi_text_glob(NULL, "a"), 0);
	assert_int_equal(tgi_text_glob("a", NULL), 0);
}

/* NUL bytes inside a value are part of it. */
static void test_text_glob_n(void **state)
{
	assert_int_equal(tgi_text_glob_n("prod", "prod\0x", 6), 0);
	assert_int_equal(tgi_text_glob_n("prod*", "prod\0x", 6), 1);
	assert_int_equal(tgi_text_glob_n("prod?x", "prod\0x", 6), 1);
	assert_int_equal(tgi_text_glob_n("*", "\0", 1), 1);
	assert_int_equal(tgi_text_glob_n("", "", 0), 1);
}

/* Patterns that make a backtracking matcher exponential finish at once. */
static void test_hostile_patterns(void **state)
{
	char text[4001], pat[4001], path[4001];
	size_t i;

	memset(text, 'a', 4000);
	text[4000] = '\0';
	for (i = 0; i + 2 < 4000; i += 2) {
		pat[i] = 'a';
		pat[i + 1] = '*';
	}
	pat[i] = 'b';
	pat[i + 1] = '\0';

	double t0 = tgi_now_ms();
	assert_int_equal(tgi_text_glob(pat, text), 0);
	assert_int_equal(tgi_path_glob(pat, text), 0);

	/* many `**` segments against a deep path that almost matches */
	for (i = 0; i + 3 < 4000; i += 3)
		memcpy(pat + i, "**/", 3);
	memcpy(pat + i, "b", 2);
	for (i = 0; i + 2 < 4000; i += 2)
		memcpy(path + i, "a/", 2);
	path[i] = 'a';
	path[i + 1] = '\0';
	assert_int_equal(tgi_path_glob(pat, path), 0);
	path[i] = 'b';
	assert_int_equal(tgi_path_glob(pat, path), 1);
	assert_true(tgi_now_ms() - t0 < 2000.0);
}

typedef struct check_case {
	const char *pattern;
	int         ok;
	size_t      at;
	const char *what;
} check_case;

static void test_check(void **state)
{
	static const check_case cases[] = {
		{ "src/**", 1, 0, NULL },
		{ "[a-z]*.c", 1, 0, NULL },
		{ "\\*x", 1, 0, NULL },
		{ "[]]", 1, 0, NULL },
		{ "[[:alpha:]]", 1, 0, NULL },
		{ "a/[bc", 0, 2, "unclosed '['" },
		{ "[a/b]", 0, 0, "unclosed '['" },
		{ "abc\\", 0, 3, "escapes nothing" },
		{ "a\\/b", 0, 1, "escapes nothing" },
		{ "x[[:bogus:]]", 0, 2, "unknown character class" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		size_t at = 999;
		const char *what = NULL;
		int rc = tgi_path_glob_check(cases[i].pattern, &at, &what);
		assert_int_equal(rc, cases[i].ok ? 0 : -1);
		if (!cases[i].ok) {
			assert_int_equal(at, cases[i].at);
			assert_non_null(strstr(what, cases[i].what));
		}
	}
}

/* tgi_path_glob_reaches: could the pattern match dir or a path below it? */
static void test_reaches(void **state)
{
	static const struct { const char *pat, *dir; int want; } cases[] = {
		{ "./.env", ".", 1 },
		{ "./.env", "src", 0 },
		{ "./.env", ".env", 1 },
		{ "**/.env", "src/deep", 1 },
		{ ".env", "src", 1 },
		{ "*.pem", "certs", 1 },
		{ "./secrets/**", "secrets", 1 },
		{ "./secrets/**", ".", 1 },
		{ "./secrets/**", "src", 0 },
		{ "./secrets/**", "secrets/sub", 1 },
		{ "secrets/key", "secrets", 1 },
		{ "secrets/key", "secret", 0 },
		{ "src/*/key", "src/a", 1 },
		{ "src/*/key", "src/a/b", 0 },
		{ "src/**/key", "src/a/b", 1 },
		{ "~/.ssh/id_rsa", ".", 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (tgi_path_glob_reaches(cases[i].pat, cases[i].dir) != cases[i].want)
			fail_msg("reaches(%s, %s) != %d", cases[i].pat, cases[i].dir, cases[i].want);
}

/* tgi_path_glob_base: the literal directory of a pattern's matches. */
static void test_base(void **state)
{
	static const struct { const char *pat, *base; int want; } cases[] = {
		{ "./.env", ".env", 1 },
		{ "/secrets/key", "secrets/key", 1 },
		{ "secrets/key", "secrets/key", 1 },
		{ "./secrets/**", "secrets", 2 },
		{ "./secrets/", "secrets", 1 },
		{ "**/.env", "", 0 },
		{ ".env", "", 0 },
		{ "*.pem", "", 0 },
		{ "./src/*.key", "src", 0 },
		{ "./a/**/k", "a", 0 },
		{ "./a/../b", "a", 0 },
		{ "./a/\\*", "a", 0 },
		{ "~/.ssh", "", -1 },
	};
	char base[64];
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int r = tgi_path_glob_base(cases[i].pat, base, sizeof base);
		if (r != cases[i].want || (r >= 0 && strcmp(base, cases[i].base)))
			fail_msg("base(%s) = %d \"%s\", expected %d \"%s\"", cases[i].pat, r, base,
			         cases[i].want, cases[i].base);
	}
	assert_int_equal(tgi_path_glob_base("./a/very/long/literal/path/beyond/the/cap", base, 8),
	                 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_table),
		cmocka_unit_test(test_path_null),
		cmocka_unit_test(test_text_table),
		cmocka_unit_test(test_text_glob_n),
		cmocka_unit_test(test_hostile_patterns),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_reaches),
		cmocka_unit_test(test_base),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
