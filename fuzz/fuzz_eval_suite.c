/*
 * fuzz_eval_suite.c — src/eval/suite.c and match.c on arbitrary eval files.
 *
 * Input: the text of an eval file.  It is loaded into a suite that already
 * holds one case (so that duplicate ids across files are reached); each
 * case loaded with expected arguments is then matched against a fixed
 * arguments object, and the suite's digest taken.
 *
 * Invariants checked (a violation traps):
 *   - a refused file leaves the suite as it was (one case, one file) with a
 *     "name:line:col: ..." error of one printable line;
 *   - a loaded file adds at least one case and one file name; every case
 *     has an id, a where starting with the name, a non-empty request, and
 *     args exactly when it has a compiled match, only with a tool;
 *   - a match answers 0 or 1, with a printable sentence when 0;
 *   - the digest is 64 hex digits, the same when taken twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "util/util.h"
#include "fuzz.h"

static const char seed_case[] = "- {id: seed, request: hi, expect: {no_tool: true}}\n";

static const char args_text[] =
	"{\"path\": \"src/README.md\", \"limit\": 20, \"offset\": 1.0, \"all\": true,"
	" \"command\": [\"ls\", \"-l\", \"src\"], \"opts\": {\"mode\": \"fast\", \"depth\": 2},"
	" \"none\": null, \"pattern\": \"TODO\"}";

static void check_case(const tgi_eval_case *c, const json_t *args)
{
	char why[512];
	check(c->id && *c->id && c->where && c->request && *c->request);
	check(!c->args == !c->match);
	check(c->tool || (!c->args && !c->decisions));
	check(!c->tool || c->decisions);
	if (!c->match)
		return;
	why[0] = '\0';
	int r = tgi_match_check(c->match, args, why, sizeof why);
	check(r == 0 || r == 1);
	if (!r)
		check(why[0] && printable(why));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024], d0[65], d1[65];
	tgi_eval_suite s = {0};

	if (size > (1u << 20))
		return 0;
	check(tgi_eval_suite_load(&s, "seed.yaml", seed_case, sizeof seed_case - 1, err,
	                          sizeof err) == 0);
	err[0] = '\0';
	int rc = tgi_eval_suite_load(&s, "fuzz.yaml", (const char *)data, size, err, sizeof err);
	if (rc < 0) {
		check(s.n == 1 && json_array_size(s.files) == 1);
		check(!strncmp(err, "fuzz.yaml:", 10) && printable(err));
	} else {
		check(rc == 0 && s.n >= 2 && json_array_size(s.files) == 2);
	}

	json_t *args = json_loads(args_text, 0, NULL);
	check(args != NULL);
	for (size_t i = 0; i < s.n; i++) {
		check(!strncmp(s.v[i].where, i ? "fuzz.yaml:" : "seed.yaml:", 10));
		check_case(&s.v[i], args);
	}
	json_decref(args);

	tgi_eval_suite_digest(&s, d0);
	tgi_eval_suite_digest(&s, d1);
	check(strlen(d0) == 64 && strspn(d0, "0123456789abcdef") == 64 && !strcmp(d0, d1));
	tgi_eval_suite_free(&s);
	return 0;
}
