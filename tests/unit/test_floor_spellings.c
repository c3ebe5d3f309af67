/*
 * test_floor_spellings.c — the floor's spellings, from
 * tests/data/floor/spellings.txt: every case is split as the gate splits
 * it (a string, an argv, or a call with its own variables) and judged by
 * tgi_floor_judge with the workspace /srv/work and the home /srv/tester.
 * deny must be DENY, ask BLIND, allow CLEAR; a failing case prints the
 * line, what was expected, what came out and why.  The file must hold at
 * least 100 attacks and 50 harmless near-misses.
 *
 * Then the bounds: hostile lines cost bounded work and come out BLIND, not
 * hung, crashed or CLEAR: nested loops over long lists, many variables,
 * deep alias and function chains, wide recursive function bodies.
 *
 * Owns: $HOME for its own process.  Must not: touch the filesystem (but
 * for reading the data file) or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include <limits.h>

#include "policy/shell.h"
#include "util/util.h"

#define WS   "/srv/work"
#define HOME "/srv/tester"

static char *saved_home;

static int setup(void **state)
{
	const char *h = getenv("HOME");
	saved_home = h ? tgi_strdup(h) : NULL;
	setenv("HOME", HOME, 1);
	return 0;
}

static int teardown(void **state)
{
	if (saved_home)
		setenv("HOME", saved_home, 1);
	else
		unsetenv("HOME");
	free(saved_home);
	return 0;
}

static const char *verdict_name(tgi_floor_verdict v)
{
	return v == TGI_FLOOR_DENY ? "deny" : v == TGI_FLOOR_BLIND ? "ask" : "allow";
}

/* Split a case as the gate does and judge it; -1 when it does not split. */
static int judge_case(const json_t *c, tgi_floor_verdict *v, char *why, size_t cap)
{
	const json_t *cmd = json_is_object(c) ? json_object_get(c, "command") : c;
	const json_t *env = json_is_object(c) ? json_object_get(c, "env") : NULL;
	tgi_cmdline cl;
	tgi_strv vars = { 0 };
	char err[256];
	int rc;

	if (json_is_string(cmd)) {
		rc = tgi_shell_split(json_string_value(cmd), json_string_length(cmd), &cl, err, sizeof err);
	} else if (json_is_array(cmd)) {
		size_t n = json_array_size(cmd);
		const char **argv = calloc(n + 1, sizeof *argv);
		for (size_t i = 0; i < n; i++)
			argv[i] = json_string_value(json_array_get(cmd, i));
		rc = tgi_shell_from_argv(argv, n, &cl, err, sizeof err);
		free(argv);
	} else {
		snprintf(why, cap, "the case is neither a string nor an argv");
		return -1;
	}
	if (rc < 0) {
		snprintf(why, cap, "split: %s", err);
		return -1;
	}
	const char *k;
	json_t *val;
	json_object_foreach((json_t *)env, k, val) {
		char *s = malloc(strlen(k) + json_string_length(val) + 2);
		sprintf(s, "%s=%s", k, json_string_value(val));
		tgi_strv_push(&vars, s);
	}
	tgi_floor_in in = { WS, HOME, (const char *const *)vars.v, vars.n };
	*v = tgi_floor_judge(&cl, &in, why, cap);
	tgi_cmdline_free(&cl);
	tgi_strv_free(&vars);
	return 0;
}

static void test_spellings(void **state)
{
	char root[PATH_MAX], path[PATH_MAX + 64], line[8192];
	const char *env = getenv("TOOLGATE_ROOT");
	size_t counts[3] = { 0 }, bad = 0, lineno = 0;

	assert_non_null(realpath(env && *env ? env : ".", root));
	snprintf(path, sizeof path, "%s/tests/data/floor/spellings.txt", root);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	while (fgets(line, sizeof line, f)) {
		char verdict[16], why[512] = "";
		int off = 0;
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%15s %n", verdict, &off) != 1 || !off)
			fail_msg("%s:%zu: no verdict", path, lineno);
		json_error_t je;
		json_t *c = json_loads(line + off, JSON_DECODE_ANY, &je);
		if (!c)
			fail_msg("%s:%zu: %s", path, lineno, je.text);
		tgi_floor_verdict want = !strcmp(verdict, "deny")  ? TGI_FLOOR_DENY
		                       : !strcmp(verdict, "ask")   ? TGI_FLOOR_BLIND
		                       : !strcmp(verdict, "allow") ? TGI_FLOOR_CLEAR
		                                                   : (tgi_floor_verdict)-1;
		if ((int)want < 0)
			fail_msg("%s:%zu: unknown verdict %s", path, lineno, verdict);
		counts[want]++;
		tgi_floor_verdict got = TGI_FLOOR_CLEAR;
		if (judge_case(c, &got, why, sizeof why) < 0 || got != want) {
			print_error("%s:%zu: %s\n  expected %s, got %s (%s)\n", path, lineno,
			            strtok(line + off, "\n"), verdict, verdict_name(got), why);
			bad++;
		}
		json_decref(c);
	}
	fclose(f);
	print_message("%zu deny, %zu ask, %zu allow\n", counts[TGI_FLOOR_DENY],
	              counts[TGI_FLOOR_BLIND], counts[TGI_FLOOR_CLEAR]);
	assert_true(counts[TGI_FLOOR_DENY] >= 100);
	assert_true(counts[TGI_FLOOR_CLEAR] >= 50);
	assert_int_equal(bad, 0);
}

/* Judge a line built at run time; the verdict. */
static tgi_floor_verdict judge(const char *line, char *why, size_t cap)
{
	tgi_cmdline cl;
	char err[256];
	tgi_floor_in in = { WS, HOME, NULL, 0 };
	if (tgi_shell_split(line, strlen(line), &cl, err, sizeof err) < 0)
		fail_msg("split: %s", err);
	tgi_floor_verdict v = tgi_floor_judge(&cl, &in, why, cap);
	tgi_cmdline_free(&cl);
	return v;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Lines built to blow an evaluation up: each is judged within a second,
 * and comes out BLIND (or DENY where the danger shows before a bound). */
static void test_bounds(void **state)
{
	char why[512];
	tgi_buf b;

	/* nested loops: 10 lists of 10 words, the innermost deletes */
	tgi_buf_init(&b, 1u << 20);
	for (int i = 0; i < 10; i++)
		tgi_buf_printf(&b, "for v%d in a b c d e f g h i j; do ", i);
	tgi_buf_puts(&b, "rm -rf \"$v0$v1$v2$v3$v4$v5$v6$v7$v8$v9\"");
	for (int i = 0; i < 10; i++)
		tgi_buf_puts(&b, "; done");
	double t0 = now_s();
	assert_int_equal(judge(b.p, why, sizeof why), TGI_FLOOR_BLIND);
	assert_non_null(strstr(why, "combinations"));
	tgi_buf_free(&b);

	/* a chain of 300 variables, each the one before twice */
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "v0=/");
	for (int i = 1; i < 300; i++)
		tgi_buf_printf(&b, "; v%d=$v%d$v%d", i, i - 1, i - 1);
	tgi_buf_puts(&b, "; rm -rf \"$v299\"");
	assert_int_not_equal(judge(b.p, why, sizeof why), TGI_FLOOR_CLEAR);
	tgi_buf_free(&b);

	/* functions calling each other wide and deep */
	tgi_buf_init(&b, 1u << 20);
	for (int i = 0; i < 20; i++) {
		tgi_buf_printf(&b, "f%d() { ", i);
		for (int k = 0; k < 20; k++)
			tgi_buf_printf(&b, "f%d \"$1\"; ", i + 1);
		tgi_buf_puts(&b, "}; ");
	}
	tgi_buf_puts(&b, "f20() { rm -rf \"$1\"; }; f0 /");
	assert_int_not_equal(judge(b.p, why, sizeof why), TGI_FLOOR_CLEAR);
	tgi_buf_free(&b);

	/* aliases in a chain past the depth */
	tgi_buf_init(&b, 1u << 20);
	for (int i = 0; i < 12; i++)
		tgi_buf_printf(&b, "alias a%d='a%d'; ", i, i + 1);
	tgi_buf_puts(&b, "alias a12='rm -rf \"$D\"'; a0");
	assert_int_equal(judge(b.p, why, sizeof why), TGI_FLOOR_BLIND);
	tgi_buf_free(&b);

	/* a recursive function that forks, and one that does not */
	assert_int_equal(judge("f(){ f | f & }; f", why, sizeof why), TGI_FLOOR_DENY);
	assert_int_equal(judge("f(){ f; }; f", why, sizeof why), TGI_FLOOR_CLEAR);

	/* xargs -I fed more words than are judged one by one */
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "printf '%s\\n'");
	for (int i = 0; i < 100; i++)
		tgi_buf_printf(&b, " w%d", i);
	tgi_buf_puts(&b, " | xargs -I{} rm -rf {}");
	assert_int_equal(judge(b.p, why, sizeof why), TGI_FLOOR_BLIND);
	tgi_buf_free(&b);

	assert_true(now_s() - t0 < 10.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
