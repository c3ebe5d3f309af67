/*
 * fuzz_rules.c — libFuzzer target for permission rules, globs and the floor.
 *
 * Input: up to three lines, "RULE\nPATH\nVALUE".  The rule is parsed; a
 * parsed rule must report its text, reparse to the same text, and match
 * calls built from PATH and VALUE without crashing, VALUE also as a command
 * line for a shell or Bash prefix.  It is added to a ruleset anchored as a
 * configuration's are (its `/`, `~/`, `//` paths made absolute) and to one
 * that is not, and both are asked about the same call; an `mcp__` rule
 * follows a server prefix.  The line texts also go straight to the globs
 * (a path a glob matches it also reaches; its literal base fits), the glob
 * checker, the floor and the edit distance (symmetric, at most the longer
 * length).  Any crash, leak, hang or sanitizer report is a bug; a parse
 * error is an ordinary outcome.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem or
 * depend on the environment (the floor reads $HOME, set here).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/shell.h"
#include "util/util.h"

#define INPUT_MAX 8192

static void exercise(const tgi_rule *r, const char *path, const char *value)
{
	static const char *const tools[] = { "read_file", "x", "shell", "fs__read", "deploy_service" };
	const char *const paths[] = { path, "." };
	const char *const resolved[] = { value, NULL };
	const char *fmt = "{s:s, s:s, s:{s:s}, s:f, s:i, s:b, s:n, s:[s]}";
	json_t *args = json_pack(fmt, "a", value, "env", value, "nested", "key", value, "n", 1.5,
	                         "i", 42, "b", 1, "z", "arr", value);
	if (!args) /* not UTF-8: decoded args always are */
		args = json_pack(fmt, "a", "v", "env", "v", "nested", "key", "v", "n", 1.5, "i", 42,
		                 "b", 1, "z", "arr", "v");

	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		tgi_match_input in = { .tool = tools[i], .args = args, .paths = paths,
		                       .resolved = resolved, .npaths = 2, .has_paths = (int)(i & 1) };
		(void)tgi_rule_matches(r, &in);
		in.has_paths = !in.has_paths;
		in.args = NULL;
		(void)tgi_rule_matches(r, &in);
	}
	json_decref(args);

	/* VALUE as a command line, for command prefixes */
	tgi_cmdline cl = {0};
	char err[256];
	if (tgi_shell_split(value, strlen(value), &cl, err, sizeof err) == 0) {
		tgi_match_input in = { .tool = "shell", .cmds = &cl };
		int strict = tgi_rule_allows(r, &in), lenient = tgi_rule_matches(r, &in);
		if (strict && cl.n && !lenient)
			abort();          /* what an allow holds for, a deny holds for too */
	}
	tgi_cmdline_free(&cl);
}

/* The rule in an anchored ruleset and in a plain one: the same call asked
 * of both, never a crash. */
static void rulesets(const char *rule, const char *path)
{
	static const tgi_rule_env env = { .workspace = "/home/fuzz/ws", .workspace_given = "/ws",
	                                  .settings_dir = "/home/fuzz", .home = "/home/fuzz" };
	char err[256];
	tgi_ruleset *a = tgi_ruleset_new(), *b = tgi_ruleset_new();
	tgi_ruleset_anchor(a, &env);
	int ra = tgi_ruleset_add(a, TGI_RULE_DENY, rule, err, sizeof err);
	int rb = tgi_ruleset_add(b, TGI_RULE_DENY, rule, err, sizeof err);
	if (ra != rb)
		abort();          /* anchoring never decides whether a rule parses */
	tgi_ruleset_mcp_prefix(a, "fs", "f_");
	const char *paths[] = { path };
	static const char *const tools[] = { "read_file", "list_dir", "write_file", "f_read" };
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		tgi_match_input in = { .tool = tools[i], .paths = paths, .resolved = paths, .npaths = 1,
		                       .has_paths = 1 };
		(void)tgi_ruleset_first(a, TGI_RULE_DENY, &in);
		(void)tgi_ruleset_first(b, TGI_RULE_DENY, &in);
		(void)tgi_ruleset_reaches(a, TGI_RULE_DENY, tools[i], path);
	}
	tgi_strv globs = {0};
	(void)tgi_ruleset_path_globs(a, TGI_RULE_DENY, "read_file", &globs, NULL);
	tgi_strv_free(&globs);
	tgi_ruleset_free(a);
	tgi_ruleset_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[INPUT_MAX + 1];
	char err[256];
	size_t at;
	const char *what;

	if (size > INPUT_MAX)
		size = INPUT_MAX;
	memcpy(buf, data, size);
	buf[size] = '\0';

	char *rule = buf, *path = "", *value = "";
	char *nl = strchr(rule, '\n');
	if (nl) {
		*nl = '\0';
		path = nl + 1;
		if ((nl = strchr(path, '\n'))) {
			*nl = '\0';
			value = nl + 1;
		}
	}

	tgi_rule *r = tgi_rule_parse(rule, err, sizeof err);
	if (r) {
		const char *text = tgi_rule_text(r);
		if (!text)
			abort();
		tgi_rule *again = tgi_rule_parse(text, err, sizeof err);
		if (!again || strcmp(tgi_rule_text(again), text) != 0)
			abort();
		tgi_rule_free(again);
		exercise(r, path, value);
		tgi_rule_free(r);
	} else if (!memchr(err, '\0', sizeof err)) {
		abort();
	}

	rulesets(rule, path);
	size_t d = tgi_edit_distance(rule, path);
	if (d != tgi_edit_distance(path, rule))
		abort();
	if (d != SIZE_MAX && d > (strlen(rule) > strlen(path) ? strlen(rule) : strlen(path)))
		abort();
	const char *cands[] = { path, value };
	const char *near = tgi_closest(rule, cands, 2);
	if (near && near != path && near != value)
		abort();

	(void)tgi_path_glob(rule, path);
	/* a glob that matches a path reaches it; the literal base is a prefix */
	if (tgi_path_glob(rule, path) && !tgi_path_glob_reaches(rule, path))
		abort();
	char base[256];
	int b = tgi_path_glob_base(rule, base, sizeof base);
	if (b < -1 || b > 2 || (b >= 0 && strlen(base) >= sizeof base))
		abort();
	(void)tgi_text_glob(rule, value);
	if (tgi_path_glob_check(rule, &at, &what) < 0 && (at >= strlen(rule) || !what))
		abort();

	const char *const res[] = { path, value };
	setenv("HOME", "/home/fuzz", 1);
	(void)tgi_floor_paths("/", res, 2, err, sizeof err);
	(void)tgi_floor_paths("/home/fuzz", res, 2, err, sizeof err);
	return 0;
}
