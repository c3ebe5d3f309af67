/*
 * test_execpolicy.c — Codex-compatible .rules files (DESIGN §3, execpolicy.h).
 *
 * Data-driven: tests/data/execpolicy/cases.json lists rule files, a
 * command's argv, how a program path is read ("resolve": "exact", Codex's
 * default; "host", its --resolve-host-executables, the default here;
 * "gate", the gate's reading with a stand-in that vouches for paths under
 * /usr/ only), the decision and every matched prefix (with
 * resolvedProgram and justifications where they matter) over the good
 * files beside it: alternatives in every position, several rules on one
 * command, host_executable lists, basename matching, every piece of the
 * syntax.  Each tests/data/execpolicy/bad/ files opens with
 * "# expect: LINE: sentence", the load error it must get; self-test
 * failures there use Codex's wording.  Around them: the exact JSON of
 * `policy check`, the envelope's rule text, loads that fail keeping
 * nothing, host entries across files and under ~/, the size limits, and
 * a 200-rule file loaded and evaluated in well under a millisecond.
 *
 * Owns: $HOME for its own process, files under a fresh temporary
 * directory.  Must not: touch the network or files outside the repo and
 * its temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/execpolicy.h"
#include "util/util.h"

static char g_root[PATH_MAX]; /* the repository, absolute */
static char g_data[PATH_MAX + 64];
#define PATHCAP (2 * PATH_MAX) /* room for g_data and a name */

/* ---- helpers ---- */

static tgi_execpolicy *load(const char *text)
{
	char err[1024] = "";
	tgi_execpolicy *ep = tgi_execpolicy_new();
	int rc = tgi_execpolicy_add_text(ep, "t.rules", text, strlen(text), err, sizeof err);
	if (rc != 0)
		fail_msg("load failed: %s", err);
	return ep;
}

/* The load error of text, as a fresh string in a static buffer. */
static const char *load_error(const char *text)
{
	static char err[1024];
	tgi_execpolicy *ep = tgi_execpolicy_new();
	err[0] = '\0';
	assert_int_equal(tgi_execpolicy_add_text(ep, "t.rules", text, strlen(text), err, sizeof err), -1);
	assert_int_equal(tgi_execpolicy_nrules(ep), 0);
	tgi_execpolicy_free(ep);
	return err;
}

/* The gate's reading with a stand-in for hostpath.c: /usr/ is safe. */
static int vouch_usr(void *ctx, const char *path)
{
	(void)ctx;
	return !strncmp(path, "/usr/", 5);
}

static const tgi_ep_resolve r_host = { TGI_EP_HOST, NULL, NULL };
static const tgi_ep_resolve r_gate = { TGI_EP_TRUSTED, vouch_usr, NULL };

static const tgi_ep_resolve *reading(const char *name)
{
	if (!name || !strcmp(name, "host"))
		return &r_host;
	if (!strcmp(name, "gate"))
		return &r_gate;
	if (strcmp(name, "exact"))
		fail_msg("unknown reading %s", name);
	return NULL;
}

/* Codex's --resolve-host-executables reading. */
static tgi_ep_decision eval_words(const tgi_execpolicy *ep, const char *words, json_t *matched)
{
	char buf[512], *argv[32], *save = NULL;
	size_t argc = 0;
	tgi_snprintf(buf, sizeof buf, "%s", words);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	return tgi_execpolicy_eval(ep, &r_host, (const char *const *)argv, argc, matched, NULL, 0);
}

static char *dumps(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	assert_non_null(s);
	return s;
}

/* ---- the corpus ---- */

static void check_case(size_t idx, json_t *c)
{
	char err[1024] = "", path[PATHCAP];
	json_t *files = json_object_get(c, "rules"), *argvj = json_object_get(c, "argv");
	json_t *want = json_object_get(c, "matched"), *justs = json_object_get(c, "justifications");
	const char *decision = json_string_value(json_object_get(c, "decision"));
	const char *resolved = json_string_value(json_object_get(c, "resolved"));
	const tgi_ep_resolve *res = reading(json_string_value(json_object_get(c, "resolve")));
	const char *argv[32];
	size_t i, argc = json_array_size(argvj);
	json_t *f, *m, *got = json_array();

	assert_non_null(decision);
	assert_true(argc < 32);
	tgi_execpolicy *ep = tgi_execpolicy_new();
	json_array_foreach(files, i, f) {
		snprintf(path, sizeof path, "%s/%s", g_data, json_string_value(f));
		if (tgi_execpolicy_add_file(ep, path, err, sizeof err) != 0)
			fail_msg("case %zu: %s", idx, err);
	}
	for (i = 0; i < argc; i++)
		argv[i] = json_string_value(json_array_get(argvj, i));

	tgi_ep_decision d = tgi_execpolicy_eval(ep, res, argv, argc, got, NULL, 0);
	if (strcmp(tgi_ep_decision_name(d), decision))
		fail_msg("case %zu: decision %s, want %s", idx, tgi_ep_decision_name(d), decision);
	if (json_array_size(got) != json_array_size(want))
		fail_msg("case %zu: %zu matches, want %zu: %s", idx, json_array_size(got),
		         json_array_size(want), json_dumps(got, JSON_COMPACT));
	json_array_foreach(got, i, m) {
		json_t *pm = json_object_get(m, "prefixRuleMatch");
		assert_non_null(pm);
		if (!json_equal(json_object_get(pm, "matchedPrefix"), json_array_get(want, i)))
			fail_msg("case %zu: match %zu is %s", idx, i, json_dumps(pm, JSON_COMPACT));
		const char *dn = json_string_value(json_object_get(pm, "decision"));
		assert_true(dn && (!strcmp(dn, "allow") || !strcmp(dn, "prompt") || !strcmp(dn, "forbidden")));
		const char *rp = json_string_value(json_object_get(pm, "resolvedProgram"));
		if (resolved ? !rp || strcmp(rp, resolved) : rp != NULL)
			fail_msg("case %zu: resolvedProgram %s, want %s", idx, rp ? rp : "(none)",
			         resolved ? resolved : "(none)");
		if (justs) {
			json_t *wj = json_array_get(justs, i), *gj = json_object_get(pm, "justification");
			if (json_is_null(wj) ? gj != NULL : !json_equal(wj, gj))
				fail_msg("case %zu: justification of match %zu is %s", idx, i,
				         gj ? json_string_value(gj) : "(none)");
		}
	}
	json_decref(got);
	tgi_execpolicy_free(ep);
}

static void test_corpus(void **state)
{
	char path[PATHCAP];
	json_error_t jerr;
	snprintf(path, sizeof path, "%s/cases.json", g_data);
	json_t *cases = json_load_file(path, 0, &jerr);
	if (!cases)
		fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
	assert_true(json_array_size(cases) >= 30);
	size_t i;
	json_t *c;
	json_array_foreach(cases, i, c)
		check_case(i, c);
	json_decref(cases);
}

/* Every bad file gets exactly the error its first line names. */
static void test_bad_files(void **state)
{
	char dir[PATHCAP], path[PATHCAP + 400], want[PATHCAP + 1500], err[1024], line[1024];
	struct dirent **ents;
	snprintf(dir, sizeof dir, "%s/bad", g_data);
	int n = scandir(dir, &ents, NULL, alphasort), files = 0;
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		size_t len = strlen(name);
		if (len > 6 && !strcmp(name + len - 6, ".rules")) {
			snprintf(path, sizeof path, "%s/%s", dir, name);
			FILE *f = fopen(path, "r");
			assert_non_null(f);
			assert_non_null(fgets(line, sizeof line, f));
			fclose(f);
			line[strcspn(line, "\n")] = '\0';
			if (strncmp(line, "# expect: ", 10))
				fail_msg("%s: no `# expect:` line", name);
			snprintf(want, sizeof want, "%s:%s", path, line + 10);

			tgi_execpolicy *ep = tgi_execpolicy_new();
			err[0] = '\0';
			int rc = tgi_execpolicy_add_file(ep, path, err, sizeof err);
			if (rc != -1 || strcmp(err, want))
				fail_msg("%s:\n  got  %s\n  want %s", name, rc ? err : "(loaded)", want);
			assert_int_equal(tgi_execpolicy_nrules(ep), 0);
			assert_int_equal(tgi_execpolicy_nexamples(ep), 0);
			tgi_execpolicy_free(ep);
			files++;
		}
		free(ents[i]);
	}
	free(ents);
	assert_true(files >= 40);
}

/* ---- the JSON of `policy check` and the envelope's rule text ---- */

static void test_check_json(void **state)
{
	tgi_execpolicy *ep = load(
		"prefix_rule(pattern = [\"git\"], decision = \"prompt\")\n"
		"prefix_rule(pattern = [\"git\", \"commit\"], decision = \"forbidden\",\n"
		"            justification = \"use `jj` instead\")\n"
		"prefix_rule(pattern = [\"ls\"])\n");
	const char *const status[] = { "git", "status" };
	const char *const commit[] = { "git", "commit", "-m", "hi" };
	const char *const usrls[] = { "/usr/bin/ls", "-l" };
	const char *const cat[] = { "cat", "x" };

	const char *const *one[] = { status };
	size_t one_n[] = { 2 };
	json_t *out = tgi_execpolicy_check(ep, &r_host, one, one_n, 1);
	char *s = dumps(out);
	assert_string_equal(s, "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],"
	                       "\"decision\":\"prompt\"}}],\"decision\":\"prompt\"}");
	free(s);
	json_decref(out);

	/* several commands: every match of each, the strictest decision over all */
	const char *const *two[] = { status, commit, cat };
	size_t two_n[] = { 2, 4, 2 };
	out = tgi_execpolicy_check(ep, &r_host, two, two_n, 3);
	s = dumps(out);
	assert_string_equal(s,
		"{\"matchedRules\":["
		"{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],\"decision\":\"prompt\"}},"
		"{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\"],\"decision\":\"prompt\"}},"
		"{\"prefixRuleMatch\":{\"matchedPrefix\":[\"git\",\"commit\"],\"decision\":\"forbidden\","
		"\"justification\":\"use `jj` instead\"}}],"
		"\"decision\":\"forbidden\"}");
	free(s);
	json_decref(out);

	/* through the basename: resolvedProgram, between decision and justification */
	const char *const *three[] = { usrls };
	size_t three_n[] = { 2 };
	out = tgi_execpolicy_check(ep, &r_host, three, three_n, 1);
	s = dumps(out);
	assert_string_equal(s, "{\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"ls\"],"
	                       "\"decision\":\"allow\",\"resolvedProgram\":\"/usr/bin/ls\"}}],"
	                       "\"decision\":\"allow\"}");
	free(s);
	json_decref(out);
	/* Codex's default: only rules naming the path as written */
	out = tgi_execpolicy_check(ep, NULL, three, three_n, 1);
	s = dumps(out);
	assert_string_equal(s, "{\"matchedRules\":[]}");
	free(s);
	json_decref(out);

	/* nothing matched: no decision at all */
	const char *const *none[] = { cat };
	size_t none_n[] = { 2 };
	out = tgi_execpolicy_check(ep, &r_host, none, none_n, 1);
	s = dumps(out);
	assert_string_equal(s, "{\"matchedRules\":[]}");
	free(s);
	json_decref(out);
	out = tgi_execpolicy_check(ep, &r_host, NULL, NULL, 0);
	s = dumps(out);
	assert_string_equal(s, "{\"matchedRules\":[]}");
	free(s);
	json_decref(out);
	tgi_execpolicy_free(ep);
}

static void test_rule_text(void **state)
{
	char rule[256];
	tgi_execpolicy *ep = tgi_execpolicy_new();
	const char *text = "# push asks\n"
	                   "prefix_rule(pattern = [\"git\"], decision = \"allow\")\n"
	                   "prefix_rule(pattern = [\"git\", [\"push\", \"fetch\"]], decision = \"prompt\")\n"
	                   "prefix_rule(pattern = [\"rm\", \"-rf\"], decision = \"forbidden\")\n";
	char err[256];
	assert_int_equal(tgi_execpolicy_add_text(ep, "rules/a.rules", text, strlen(text), err, sizeof err), 0);

	const char *const push[] = { "git", "push", "origin" };
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, push, 3, NULL, rule, sizeof rule), TGI_EP_PROMPT);
	assert_string_equal(rule, "execpolicy prompt: git push (rules/a.rules:3)");

	const char *const log[] = { "git", "log" };
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, log, 2, NULL, rule, sizeof rule), TGI_EP_ALLOW);
	assert_string_equal(rule, "execpolicy allow: git (rules/a.rules:2)");

	/* tokens are shell-quoted, control characters never reach the text */
	const char *const rm[] = { "/bin/rm", "-rf", "a b" };
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, rm, 3, NULL, rule, sizeof rule), TGI_EP_FORBIDDEN);
	assert_string_equal(rule, "execpolicy forbidden: rm -rf (rules/a.rules:4)");

	const char *const none[] = { "ls" };
	strcpy(rule, "stale");
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, none, 1, NULL, rule, sizeof rule), TGI_EP_NONE);
	assert_string_equal(rule, "");

	/* a short buffer is cut, still terminated */
	char tiny[12];
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, push, 3, NULL, tiny, sizeof tiny), TGI_EP_PROMPT);
	assert_true(strlen(tiny) < sizeof tiny);
	assert_memory_equal(tiny, "execpolicy ", 11);

	/* no argv, no policy */
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, push, 0, NULL, rule, sizeof rule), TGI_EP_NONE);
	assert_int_equal(tgi_execpolicy_eval(NULL, &r_gate, push, 3, NULL, rule, sizeof rule), TGI_EP_NONE);
	tgi_execpolicy_free(ep);
	tgi_execpolicy_free(NULL);

	assert_string_equal(tgi_ep_decision_name(TGI_EP_NONE), "none");
	assert_string_equal(tgi_ep_decision_name(TGI_EP_ALLOW), "allow");
	assert_string_equal(tgi_ep_decision_name(TGI_EP_PROMPT), "prompt");
	assert_string_equal(tgi_ep_decision_name(TGI_EP_FORBIDDEN), "forbidden");
}

/* ---- loading: counts, atomic files, host entries ---- */

static void test_counts(void **state)
{
	char path[PATHCAP], err[512];
	tgi_execpolicy *ep = tgi_execpolicy_new();
	assert_int_equal(tgi_execpolicy_nrules(ep), 0);
	snprintf(path, sizeof path, "%s/git.rules", g_data);
	assert_int_equal(tgi_execpolicy_add_file(ep, path, err, sizeof err), 0);
	assert_int_equal(tgi_execpolicy_nrules(ep), 4);
	assert_int_equal(tgi_execpolicy_nexamples(ep), 12);
	snprintf(path, sizeof path, "%s/npm.rules", g_data);
	assert_int_equal(tgi_execpolicy_add_file(ep, path, err, sizeof err), 0);
	assert_int_equal(tgi_execpolicy_nrules(ep), 8);
	assert_int_equal(tgi_execpolicy_nexamples(ep), 12 + 4 + 3 + 1);
	/* an empty file and one of comments only are fine */
	assert_int_equal(tgi_execpolicy_add_text(ep, "e.rules", "", 0, err, sizeof err), 0);
	assert_int_equal(tgi_execpolicy_add_text(ep, "c.rules", "# x\n\n  # y", 10, err, sizeof err), 0);
	assert_int_equal(tgi_execpolicy_nrules(ep), 8);
	tgi_execpolicy_free(ep);
}

/* A file that fails halfway leaves no rule and no host entry behind. */
static void test_failed_file_keeps_nothing(void **state)
{
	char err[512];
	tgi_execpolicy *ep = load("prefix_rule(pattern = [\"git\", \"status\"])\n");
	const char *bad = "prefix_rule(pattern = [\"cat\"], decision = \"forbidden\")\n"
	                  "host_executable(name = \"git\", paths = [\"/usr/bin/git\"])\n"
	                  "prefix_rule(pattern = [\"ls\"], match = [\"cat\"])\n";
	assert_int_equal(tgi_execpolicy_add_text(ep, "bad.rules", bad, strlen(bad), err, sizeof err), -1);
	assert_string_equal(err, "bad.rules:3: expected every example to match at least one rule. "
	                         "rules: [\"ls\"]; unmatched examples: [\"cat\"]");
	assert_int_equal(tgi_execpolicy_nrules(ep), 1);
	assert_int_equal(eval_words(ep, "cat x", NULL), TGI_EP_NONE);
	/* the failed file's host entry is gone: any absolute git still counts */
	assert_int_equal(eval_words(ep, "/tmp/git status", NULL), TGI_EP_ALLOW);
	tgi_execpolicy_free(ep);
}

/* Host entries of earlier files hold for later files' examples; a later
 * definition replaces an earlier one. */
static void test_hosts_across_files(void **state)
{
	char path[PATHCAP], err[512];
	tgi_execpolicy *ep = tgi_execpolicy_new();
	snprintf(path, sizeof path, "%s/host.rules", g_data);
	assert_int_equal(tgi_execpolicy_add_file(ep, path, err, sizeof err), 0);
	const char *rules = "prefix_rule(pattern = [\"git\"], decision = \"prompt\",\n"
	                    "    match = [\"/usr/bin/git log\"], not_match = [\"/usr/local/bin/git log\"])\n";
	assert_int_equal(tgi_execpolicy_add_text(ep, "r.rules", rules, strlen(rules), err, sizeof err), 0);
	assert_int_equal(eval_words(ep, "/usr/bin/git log", NULL), TGI_EP_PROMPT);
	assert_int_equal(eval_words(ep, "/opt/homebrew/bin/git log", NULL), TGI_EP_PROMPT);
	assert_int_equal(eval_words(ep, "/usr/local/bin/git log", NULL), TGI_EP_NONE);

	const char *later = "host_executable(name = \"git\", paths = [\"/usr/local/bin/git\"])\n";
	assert_int_equal(tgi_execpolicy_add_text(ep, "l.rules", later, strlen(later), err, sizeof err), 0);
	assert_int_equal(eval_words(ep, "/usr/local/bin/git log", NULL), TGI_EP_PROMPT);
	assert_int_equal(eval_words(ep, "/usr/bin/git log", NULL), TGI_EP_NONE);
	assert_int_equal(eval_words(ep, "git log", NULL), TGI_EP_PROMPT);

	/* the same file's examples see its later host entry: here it contradicts them */
	const char *contra = "prefix_rule(pattern = [\"make\"], match = [\"/usr/bin/make all\"])\n"
	                     "host_executable(name = \"make\", paths = [\"/opt/bin/make\"])\n";
	assert_int_equal(tgi_execpolicy_add_text(ep, "m.rules", contra, strlen(contra), err, sizeof err), -1);
	assert_string_equal(err, "m.rules:1: expected every example to match at least one rule. "
	                         "rules: [\"make\"]; unmatched examples: [\"/usr/bin/make all\"]");
	tgi_execpolicy_free(ep);
}

static void test_home_paths(void **state)
{
	char err[512];
	const char *old = getenv("HOME");
	char *saved = old ? tgi_strdup(old) : NULL;
	const char *text = "host_executable(name = \"az\", paths = [\"~/.openai/bin/az\"])\n"
	                   "prefix_rule(pattern = [\"az\"], decision = \"prompt\")\n";

	setenv("HOME", "/home/tester/", 1);
	tgi_execpolicy *ep = load(text);
	json_t *m = json_array();
	assert_int_equal(eval_words(ep, "/home/tester/.openai/bin/az login", m), TGI_EP_PROMPT);
	char *s = dumps(m);
	assert_string_equal(s, "[{\"prefixRuleMatch\":{\"matchedPrefix\":[\"az\"],\"decision\":\"prompt\","
	                       "\"resolvedProgram\":\"/home/tester/.openai/bin/az\"}}]");
	free(s);
	json_decref(m);
	assert_int_equal(eval_words(ep, "/usr/bin/az login", NULL), TGI_EP_NONE);
	tgi_execpolicy_free(ep);

	unsetenv("HOME");
	ep = tgi_execpolicy_new();
	assert_int_equal(tgi_execpolicy_add_text(ep, "h.rules", text, strlen(text), err, sizeof err), -1);
	assert_string_equal(err, "h.rules:1: invalid rule: host_executable path `~/.openai/bin/az` "
	                         "needs HOME to be an absolute path");
	tgi_execpolicy_free(ep);
	if (saved)
		setenv("HOME", saved, 1);
	free(saved);
}

/* Codex's --resolve-host-executables makes the program absolute first:
 * "~" from the home directory, a relative path from the current one,
 * ".." folded; host_executable paths are folded the same way. */
static void test_host_reading(void **state)
{
	char cwd[PATH_MAX], want[PATH_MAX + 64];
	const char *old = getenv("HOME");
	char *saved = old ? tgi_strdup(old) : NULL;
	assert_non_null(getcwd(cwd, sizeof cwd));
	tgi_execpolicy *ep = load("prefix_rule(pattern = [\"git\", \"status\"])\n");
	static const struct { const char *prog, *resolved; } cases[] = {
		{ "~/bin/git", "/home/tester/bin/git" },
		{ "~//bin/./git/", "/home/tester/bin/git" },
		{ "~/../git", "/home/git" },
		{ "/x/../git", "/git" },
		{ "/../../git", "/git" },
		{ "./git", NULL },          /* NULL: the current directory's git */
		{ "a/b/../../git", NULL },
		{ "~user/../git", NULL },   /* only "~" and "~/" are the home directory */
	};
	setenv("HOME", "/home/tester", 1);
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		json_t *m = json_array();
		const char *const argv[] = { cases[i].prog, "status" };
		assert_int_equal(tgi_execpolicy_eval(ep, &r_host, argv, 2, m, NULL, 0), TGI_EP_ALLOW);
		if (cases[i].resolved)
			snprintf(want, sizeof want, "%s", cases[i].resolved);
		else
			snprintf(want, sizeof want, "%s/git", strcmp(cwd, "/") ? cwd : "");
		const char *rp = json_string_value(json_object_get(json_object_get(json_array_get(m, 0),
		                                   "prefixRuleMatch"), "resolvedProgram"));
		if (!rp || strcmp(rp, want))
			fail_msg("%s: resolvedProgram %s, want %s", cases[i].prog, rp ? rp : "(none)", want);
		json_decref(m);
		/* neither Codex's default nor the gate reads these by their basename */
		assert_int_equal(tgi_execpolicy_eval(ep, NULL, argv, 2, NULL, NULL, 0), TGI_EP_NONE);
		assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, argv, 2, NULL, NULL, 0), TGI_EP_NONE);
	}
	/* "~" alone is the home directory: the rules for its last component */
	tgi_execpolicy_free(ep);
	ep = load("prefix_rule(pattern = [\"tester\"], decision = \"prompt\")\n");
	assert_int_equal(eval_words(ep, "~ x", NULL), TGI_EP_PROMPT);
	assert_int_equal(eval_words(ep, "/ x", NULL), TGI_EP_NONE);
	tgi_execpolicy_free(ep);

	/* a host path is folded as it loads */
	ep = load("host_executable(name = \"git\", paths = [\"/usr/bin/../bin/./git\"])\n"
	          "prefix_rule(pattern = [\"git\"], match = [\"/usr/bin/git x\"])\n");
	assert_int_equal(eval_words(ep, "/usr/bin/git x", NULL), TGI_EP_ALLOW);
	assert_int_equal(eval_words(ep, "/usr/lib/../bin/git x", NULL), TGI_EP_ALLOW);
	const char *const listed[] = { "/usr/bin/git", "x" }, *const dotted[] = { "/usr/lib/../bin/git", "x" };
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, listed, 2, NULL, NULL, 0), TGI_EP_ALLOW);
	assert_int_equal(tgi_execpolicy_eval(ep, &r_gate, dotted, 2, NULL, NULL, 0), TGI_EP_NONE);
	tgi_execpolicy_free(ep);
	if (saved)
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");
	free(saved);
}

/* The gate asks its caller about a path only when no host_executable
 * names the program and an allow rule could match, and never about a
 * relative path or one with "..". */
static int g_asked;
static char g_asked_path[256];
static int vouch_count(void *ctx, const char *path)
{
	g_asked++;
	tgi_snprintf(g_asked_path, sizeof g_asked_path, "%s", path);
	return *(const int *)ctx;
}

static void test_gate_reading(void **state)
{
	int yes = 1, no = 0;
	tgi_ep_resolve vouch = { TGI_EP_TRUSTED, vouch_count, &yes }, refuse = { TGI_EP_TRUSTED, vouch_count, &no };
	tgi_execpolicy *ep = load("prefix_rule(pattern = [\"git\", \"status\"])\n"
	                          "prefix_rule(pattern = [\"git\", \"push\"], decision = \"prompt\")\n"
	                          "prefix_rule(pattern = [\"rm\"], decision = \"forbidden\")\n"
	                          "host_executable(name = \"ls\", paths = [\"/bin/ls\"])\n"
	                          "prefix_rule(pattern = [\"ls\"])\n");
	const char *const st[] = { "/opt/x//./git", "status" }, *const push[] = { "/opt/x/git", "push" },
	                  *const rm[] = { "/opt/x/rm", "-r" }, *const rel[] = { "x/git", "status" },
	                  *const dots[] = { "/opt/../usr/bin/git", "status" },
	                  *const ls[] = { "/bin/ls" }, *const ls2[] = { "/usr/bin/ls" },
	                  *const bare[] = { "git", "status" };
	g_asked = 0;
	assert_int_equal(tgi_execpolicy_eval(ep, &vouch, st, 2, NULL, NULL, 0), TGI_EP_ALLOW);
	assert_int_equal(g_asked, 1);
	assert_string_equal(g_asked_path, "/opt/x/git");      /* normalised */
	assert_int_equal(tgi_execpolicy_eval(ep, &refuse, st, 2, NULL, NULL, 0), TGI_EP_NONE);
	assert_int_equal(g_asked, 2);
	/* prompt and forbidden hold for any path: asked or not, trusted or not */
	assert_int_equal(tgi_execpolicy_eval(ep, &refuse, push, 2, NULL, NULL, 0), TGI_EP_PROMPT);
	assert_int_equal(tgi_execpolicy_eval(ep, &refuse, rm, 2, NULL, NULL, 0), TGI_EP_FORBIDDEN);
	assert_int_equal(g_asked, 3);                           /* git has an allow rule; rm none */
	g_asked = 0;
	assert_int_equal(tgi_execpolicy_eval(ep, &vouch, rel, 2, NULL, NULL, 0), TGI_EP_NONE);
	assert_int_equal(tgi_execpolicy_eval(ep, &vouch, dots, 2, NULL, NULL, 0), TGI_EP_NONE);
	assert_int_equal(tgi_execpolicy_eval(ep, &vouch, bare, 2, NULL, NULL, 0), TGI_EP_ALLOW);
	/* host_executable decides for the names it lists; the caller is not asked */
	assert_int_equal(tgi_execpolicy_eval(ep, &refuse, ls, 1, NULL, NULL, 0), TGI_EP_ALLOW);
	assert_int_equal(tgi_execpolicy_eval(ep, &vouch, ls2, 1, NULL, NULL, 0), TGI_EP_NONE);
	assert_int_equal(g_asked, 0);
	/* no callback: never vouched */
	tgi_ep_resolve none = { TGI_EP_TRUSTED, NULL, NULL };
	assert_int_equal(tgi_execpolicy_eval(ep, &none, st, 2, NULL, NULL, 0), TGI_EP_NONE);
	tgi_execpolicy_free(ep);
}

/* ---- strings, examples and messages ---- */

static void test_strings(void **state)
{
	/* \x, \u, \U and octal give code points; unknown escapes keep the backslash */
	tgi_execpolicy *ep = load("prefix_rule(pattern = [\"p\", \"\\xe9\\u20ac\\U0001F600\\101\\7\\q\"])\n");
	const char *const argv[] = { "p", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "A\a\\q" };
	assert_int_equal(tgi_execpolicy_eval(ep, NULL, argv, 2, NULL, NULL, 0), TGI_EP_ALLOW);
	tgi_execpolicy_free(ep);

	/* CRLF line ends read as LF */
	ep = load("prefix_rule(\r\n    pattern = [\"ls\"],\r\n    decision = \"prompt\",\r\n)\r\n");
	assert_int_equal(eval_words(ep, "ls", NULL), TGI_EP_PROMPT);
	tgi_execpolicy_free(ep);

	/* a string may hold what a shell word may: spaces, quotes, '#' */
	ep = load("prefix_rule(pattern = ['a b', \"'\", '\"', \"#x\"], match = [\"'a b' \\\"'\\\" '\\\"' '#x'\"])\n");
	const char *const odd[] = { "a b", "'", "\"", "#x", "more" };
	assert_int_equal(tgi_execpolicy_eval(ep, NULL, odd, 5, NULL, NULL, 0), TGI_EP_ALLOW);
	tgi_execpolicy_free(ep);

	/* an error's line counts lines inside strings continued with a backslash */
	assert_string_equal(load_error("prefix_rule(pattern = [\"a\\\nb\"],\n decision = \"x\")\n"),
	                    "t.rules:3: invalid decision: x");
	/* control characters in a message come out as spaces */
	assert_string_equal(load_error("prefix_rule(pattern = [\"ls\"], decision = \"a\\tb\")"),
	                    "t.rules:1: invalid decision: a b");
}

/* Codex's shlex: how string examples split, and how they are quoted back. */
static void test_example_words(void **state)
{
	/* each splits into exactly `w` and `x y`: the not_match message shows the words */
	static const char *const ok[] = {
		"w 'x y'", "w \"x y\"", "w x\\ y", "  w\t'x'\" \"y  ", "w 'x y' # a comment",
		"w \"x\\\n y\"" /* backslash-newline inside double quotes is dropped */,
		"# a comment first\nw x\\\n\\ y" /* and outside quotes too */,
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(ok); i++) {
		char text[256];
		json_t *j = json_string(ok[i]);
		char *q = json_dumps(j, JSON_ENCODE_ANY);
		snprintf(text, sizeof text, "prefix_rule(pattern = [\"w\"], not_match = [%s])\n", q);
		free(q);
		json_decref(j);
		assert_string_equal(load_error(text), "t.rules:1: expected example to not match rule `w`: w 'x y'");
	}
	/* words quoted back the way the shlex crate quotes them */
	assert_string_equal(
		load_error("prefix_rule(pattern = [\"w\"],\n"
		           "    not_match = [[\"w\", \"\", \"a'b\", \"$x\", \"^y\", \"\\u00e9\"]])"),
		"t.rules:1: expected example to not match rule `w`: w '' \"a'b\" '$x' '^y' '\xc3\xa9'");
	assert_string_equal(
		load_error("prefix_rule(pattern = [\"w\"], match = [[\"v\", \"a\\\"b\\\\c\", \"it's $HOME\"]])"),
		"t.rules:1: expected every example to match at least one rule. rules: [\"w\"]; "
		"unmatched examples: [\"v \\\"a\\\\\\\"b\\\\\\\\c\\\" \\\"it's \\\"'$HOME'\"]");
}

/* ---- limits ---- */

static void test_limits(void **state)
{
	char err[512];
	size_t big = (4u << 20) + 1;
	char *text = tgi_xmalloc(big + 64);
	tgi_execpolicy *ep = tgi_execpolicy_new();

	memset(text, '\n', big);
	assert_int_equal(tgi_execpolicy_add_text(ep, "big.rules", text, big, err, sizeof err), -1);
	assert_string_equal(err, "big.rules: the file is larger than 4 MiB");
	/* exactly 4 MiB of comments is fine */
	text[0] = '#';
	assert_int_equal(tgi_execpolicy_add_text(ep, "max.rules", text, big - 1, err, sizeof err), 0);

	/* a string of 64 KiB + 1 */
	size_t n = (size_t)snprintf(text, 64, "prefix_rule(pattern = [\"");
	memset(text + n, 'a', (64u << 10) + 1);
	n += (64u << 10) + 1;
	n += (size_t)snprintf(text + n, 64, "\"])\n");
	assert_int_equal(tgi_execpolicy_add_text(ep, "s.rules", text, n, err, sizeof err), -1);
	assert_string_equal(err, "s.rules:1: a string longer than 65536 bytes");

	/* a list of 4097 items */
	tgi_buf b;
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "prefix_rule(pattern = [\"x\"], match = [\n");
	for (int i = 0; i < 4097; i++)
		tgi_buf_puts(&b, "\"x\",");
	tgi_buf_puts(&b, "])\n");
	assert_int_equal(tgi_execpolicy_add_text(ep, "l.rules", b.p, b.len, err, sizeof err), -1);
	assert_string_equal(err, "l.rules:1: a list of more than 4096 items");
	tgi_buf_free(&b);

	/* a pattern of 257 elements, 257 alternatives */
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "prefix_rule(pattern = [\"x\"");
	for (int i = 0; i < 256; i++)
		tgi_buf_puts(&b, ", \"y\"");
	tgi_buf_puts(&b, "])\n");
	assert_int_equal(tgi_execpolicy_add_text(ep, "p.rules", b.p, b.len, err, sizeof err), -1);
	assert_string_equal(err, "p.rules:1: a pattern of more than 256 elements");
	tgi_buf_free(&b);
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "prefix_rule(pattern = [\"x\", [\"y\"");
	for (int i = 0; i < 256; i++)
		tgi_buf_puts(&b, ", \"z\"");
	tgi_buf_puts(&b, "]])\n");
	assert_int_equal(tgi_execpolicy_add_text(ep, "a.rules", b.p, b.len, err, sizeof err), -1);
	assert_string_equal(err, "a.rules:1: more than 256 alternatives for one pattern element");
	tgi_buf_free(&b);

	/* a file on disk over 4 MiB, a directory, a missing file */
	char dir[] = "/tmp/test_execpolicy.XXXXXX", path[PATH_MAX], want[PATH_MAX + 64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/big.rules", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	memset(text, '#', big);
	assert_int_equal(fwrite(text, 1, big, f), big);
	fclose(f);
	assert_int_equal(tgi_execpolicy_add_file(ep, path, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: the file is larger than 4 MiB", path);
	assert_string_equal(err, want);
	unlink(path);
	assert_int_equal(tgi_execpolicy_add_file(ep, dir, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: not a regular file", dir);
	assert_string_equal(err, want);
	assert_int_equal(tgi_execpolicy_add_file(ep, path, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: cannot open the rules file: No such file or directory", path);
	assert_string_equal(err, want);
	rmdir(dir);

	assert_int_equal(tgi_execpolicy_nrules(ep), 0);
	tgi_execpolicy_free(ep);
	free(text);
}

/* ---- performance ---- */

static void test_two_hundred_rules(void **state)
{
	static const char *const decisions[] = { "allow", "prompt", "forbidden" };
	tgi_buf b;
	tgi_buf_init(&b, 1u << 20);
	for (int i = 0; i < 200; i++)
		tgi_buf_printf(&b,
			"prefix_rule(\n"
			"    pattern = [\"tool%d\", [\"sub%d\", \"alt%d\"], \"--flag\"],\n"
			"    decision = \"%s\",\n"
			"    justification = \"rule %d\",\n"
			"    match = [\"tool%d sub%d --flag x\"],\n"
			"    not_match = [\"tool%d other\"],\n"
			")\n", i, i, i, decisions[i % 3], i, i, i, i);

	char err[512];
	tgi_execpolicy *ep = tgi_execpolicy_new();
	double t0 = tgi_now_ms();
	assert_int_equal(tgi_execpolicy_add_text(ep, "200.rules", b.p, b.len, err, sizeof err), 0);
	double t1 = tgi_now_ms();
	const char *const argv[] = { "tool199", "alt199", "--flag", "file" };
	json_t *m = json_array();
	assert_int_equal(tgi_execpolicy_eval(ep, NULL, argv, 4, m, NULL, 0), TGI_EP_PROMPT);
	double t2 = tgi_now_ms();
	assert_int_equal(json_array_size(m), 1);
	assert_int_equal(tgi_execpolicy_nrules(ep), 200);
	assert_int_equal(tgi_execpolicy_nexamples(ep), 400);
	/* well under a millisecond each in practice; generous bounds against noise */
	assert_true(t1 - t0 < 50.0);
	assert_true(t2 - t1 < 50.0);
	json_decref(m);
	tgi_execpolicy_free(ep);
	tgi_buf_free(&b);
}

int main(void)
{
	const char *root = getenv("TOOLGATE_ROOT");
	if (!realpath(root && *root ? root : ".", g_root)) {
		perror("toolgate root");
		return 1;
	}
	snprintf(g_data, sizeof g_data, "%s/tests/data/execpolicy", g_root);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_check_json),
		cmocka_unit_test(test_rule_text),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_failed_file_keeps_nothing),
		cmocka_unit_test(test_hosts_across_files),
		cmocka_unit_test(test_home_paths),
		cmocka_unit_test(test_host_reading),
		cmocka_unit_test(test_gate_reading),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_example_words),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_two_hundred_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
