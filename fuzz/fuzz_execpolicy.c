/*
 * fuzz_execpolicy.c — libFuzzer target for .rules files (execpolicy.c).
 *
 * Input: the bytes of one rules file, loaded into a policy that already
 * holds a small good file (so host entries and rules of two files meet).
 * A load error must be one printable sentence naming the file and leave
 * the rule count as it was; a load must evaluate a few fixed commands
 * (bare, relative and absolute programs, empty, odd bytes), read each way
 * a program path can be (exact, Codex's host resolution, the gate's with
 * a stub that vouches for /usr/), into Codex's JSON shape, with a
 * decision exactly when something matched, and the same answer every way
 * when a rule names the program as written.  Any crash, leak, hang
 * or sanitizer report is a bug; a load error is an ordinary outcome.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem or
 * depend on the environment (HOME is set here for `~/` paths; Codex's
 * reading makes relative paths absolute from the current directory).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "policy/execpolicy.h"

#define INPUT_MAX (64u << 10)

static const char base[] =
	"prefix_rule(pattern = [\"git\", [\"status\", \"log\"]], match = [\"git status\"])\n"
	"host_executable(name = \"ls\", paths = [\"/bin/ls\"])\n";

static const char *const cmd_git[] = { "git", "push", "--force", "origin" };
static const char *const cmd_abs[] = { "/usr/bin/git", "status", "-s" };
static const char *const cmd_ls[] = { "/bin/ls", "-l" };
static const char *const cmd_rel[] = { "./x", "a", "b", "c", "d", "e" };
static const char *const cmd_odd[] = { "\xff\xfe", "", "a b", "\n" };
static const char *const cmd_dot[] = { "/usr/bin/../bin/git", "log" };
static const char *const cmd_home[] = { "~/bin/ls", "-a" };

static const char *const *const cmds[] = { cmd_git, cmd_abs, cmd_ls, cmd_rel, cmd_odd, cmd_dot, cmd_home };
static const size_t ncmd[] = { 4, 3, 2, 6, 4, 2, 2 };

static int vouch_usr(void *ctx, const char *path)
{
	(void)ctx;
	return !strncmp(path, "/usr/", 5);
}

static const tgi_ep_resolve host = { TGI_EP_HOST, NULL, NULL };
static const tgi_ep_resolve gate = { TGI_EP_TRUSTED, vouch_usr, NULL };
static const tgi_ep_resolve *const readings[] = { NULL, &host, &gate };

static char *dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	return s;
}

static void check_eval(const tgi_execpolicy *ep)
{
	char rule[256];
	for (size_t i = 0; i < sizeof ncmd / sizeof ncmd[0]; i++) {
		for (size_t r = 0; r < sizeof readings / sizeof readings[0]; r++) {
			json_t *m = json_array();
			tgi_ep_decision d = tgi_execpolicy_eval(ep, readings[r], cmds[i], ncmd[i], m, rule,
			                                        sizeof rule);
			check(d >= TGI_EP_NONE && d <= TGI_EP_FORBIDDEN);
			check((d == TGI_EP_NONE) == (json_array_size(m) == 0));
			check(printable(rule) && (d == TGI_EP_NONE) == (rule[0] == '\0'));
			size_t k;
			json_t *e;
			json_array_foreach(m, k, e) {
				json_t *pm = json_object_get(e, "prefixRuleMatch");
				json_t *prefix = json_object_get(pm, "matchedPrefix");
				check(json_is_array(prefix) && json_array_size(prefix) >= 1 &&
				      json_array_size(prefix) <= ncmd[i]);
				check(json_is_string(json_object_get(pm, "decision")));
			}
			json_decref(m);
			(void)tgi_execpolicy_eval(ep, readings[r], cmds[i], 0, NULL, NULL, 0);
		}
		/* a rule naming the program as written: every reading agrees */
		char *exact = dump(tgi_execpolicy_check(ep, NULL, &cmds[i], &ncmd[i], 1));
		if (strcmp(exact, "{\"matchedRules\":[]}"))
			for (size_t r = 1; r < sizeof readings / sizeof readings[0]; r++) {
				char *other = dump(tgi_execpolicy_check(ep, readings[r], &cmds[i], &ncmd[i], 1));
				check(!strcmp(exact, other));
				free(other);
			}
		free(exact);
	}
	for (size_t r = 0; r < sizeof readings / sizeof readings[0]; r++) {
		json_t *all = tgi_execpolicy_check(ep, readings[r], cmds, ncmd, sizeof ncmd / sizeof ncmd[0]);
		json_t *rules = json_object_get(all, "matchedRules");
		check(json_is_array(rules));
		check((json_array_size(rules) == 0) == (json_object_get(all, "decision") == NULL));
		json_decref(all);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	if (size > INPUT_MAX)
		size = INPUT_MAX;
	setenv("HOME", "/home/fuzz", 1);

	tgi_execpolicy *ep = tgi_execpolicy_new();
	check(tgi_execpolicy_add_text(ep, "base.rules", base, strlen(base), err, sizeof err) == 0);
	size_t before = tgi_execpolicy_nrules(ep), examples = tgi_execpolicy_nexamples(ep);

	/* a copy exactly as long as the input, so reads past it are caught */
	char *text = malloc(size ? size : 1);
	if (size)
		memcpy(text, data, size);
	err[0] = 'x';
	err[1] = '\0';
	if (tgi_execpolicy_add_text(ep, "fuzz.rules", text, size, err, sizeof err) == 0) {
		check(tgi_execpolicy_nrules(ep) >= before);
	} else {
		check(memchr(err, '\0', sizeof err) != NULL);
		check(printable(err) && !strncmp(err, "fuzz.rules:", 11));
		check(tgi_execpolicy_nrules(ep) == before && tgi_execpolicy_nexamples(ep) == examples);
	}
	check_eval(ep);
	free(text);
	tgi_execpolicy_free(ep);
	return 0;
}
