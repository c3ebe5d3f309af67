/*
 * fuzz_floor.c — libFuzzer target for the floor's evaluation
 * (src/policy/expand.c, src/policy/code.c, src/policy/floor.c).
 *
 * The first byte picks what the rest is:
 *   0-3  a command line: split, then judged by tgi_floor_judge (which
 *        evaluates it: variants, aliases, functions, eval, xargs, code,
 *        downloads) with a call variable or none;
 *   4    a command line split with an evaluation of its own (the facts,
 *        every variant, a here-doc feed read for each command);
 *   5-   interpreter code of a language (python, perl, ruby, js, php, awk,
 *        lua) scanned for effects.
 * Whatever the input, the work is bounded (libFuzzer's -timeout catches
 * a blow-up), the verdict is one of three with a printable reason when it
 * is not CLEAR, every effect of a scan has its words, and nothing leaks
 * or crashes.
 *
 * Owns: nothing beyond one input.  Must not: run what it judges.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "policy/code.h"
#include "policy/expand.h"
#include "policy/shell.h"

#define INPUT_MAX (64 * 1024)

static void judge_line(const char *s, size_t n, int with_env)
{
	static const char *const env[] = { "APP_DIR=/", "APP_X=a b" };
	tgi_cmdline cl;
	char err[256], why[512];

	if (tgi_shell_split(s, n, &cl, err, sizeof err) < 0)
		return;
	tgi_floor_in in = { "/srv/work", "/srv/tester", with_env ? env : NULL, with_env ? 2 : 0 };
	why[0] = '\x7f';
	tgi_floor_verdict v = tgi_floor_judge(&cl, &in, why, sizeof why);
	check(v == TGI_FLOOR_CLEAR || v == TGI_FLOOR_BLIND || v == TGI_FLOOR_DENY);
	check(v == TGI_FLOOR_CLEAR || (why[0] && printable(why)));
	tgi_cmdline_free(&cl);
}

static void evaluate(const char *s, size_t n)
{
	tgi_cmdline cl, v;
	tgi_eval_budget b;
	char err[256];

	if (tgi_shell_split(s, n, &cl, err, sizeof err) < 0)
		return;
	tgi_eval_budget_init(&b);
	tgi_eval *e = tgi_eval_new(&cl, NULL, 0, "/srv/tester", &b);
	size_t k = tgi_eval_variants(e);
	check(k <= TGI_EVAL_VARIANTS);
	check(k > 0 || tgi_eval_blind(e));
	for (size_t i = 0; i < k; i++) {
		tgi_eval_select(e, i);
		if (tgi_eval_line(e, &v, err, sizeof err) < 0)
			break;
		for (size_t c = 0; c < v.n; c++) {
			tgi_feed f = { 0 };
			tgi_eval_stdin(e, &v, c, &f);
			check(f.text != NULL);
			tgi_feed_free(&f);
			tgi_eval_stdout(e, &v, c, &f);
			check(f.text != NULL);
			tgi_feed_free(&f);
		}
		tgi_cmdline_free(&v);
	}
	tgi_eval_free(e);
	tgi_cmdline_free(&cl);
}

static void scan(tgi_lang lang, const char *s, size_t n)
{
	tgi_code_report r;
	tgi_code_scan(lang, s, n, &r);
	for (size_t i = 0; i < r.n; i++)
		check(r.v[i].words.n > 0 && r.v[i].words.v[0] != NULL);
	check(!r.floor || printable(r.floor));
	check(!r.blind || printable(r.blind));
	tgi_code_report_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[INPUT_MAX + 1];
	static const tgi_lang langs[] = { TGI_LANG_PYTHON, TGI_LANG_PERL, TGI_LANG_RUBY,
		                          TGI_LANG_JS, TGI_LANG_PHP, TGI_LANG_AWK, TGI_LANG_LUA };

	if (size < 1)
		return 0;
	uint8_t mode = data[0] % 12;
	size--;
	if (size > INPUT_MAX)
		size = INPUT_MAX;
	memcpy(buf, data + 1, size);
	buf[size] = '\0';
	if (mode < 4)
		judge_line(buf, size, mode & 1);
	else if (mode == 4)
		evaluate(buf, size);
	else
		scan(langs[(mode - 5) % 7], buf, strlen(buf));
	return 0;
}
