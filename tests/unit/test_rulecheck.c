/*
 * test_rulecheck.c — the configuration's rules against the tools there are
 * (src/policy/rulecheck.c), and Claude Code's rules through the whole gate.
 *
 * A rule naming no tool, or an argument its tool lacks, must not load: the
 * gate refuses to open with the rule's file:line:col, its key path and a
 * suggestion.  What may name a bridged tool, globs that can match, and
 * Claude Code's names of tools toolgate lacks load (the last reported).
 * Then a permissions block as Claude Code's settings.json has it, placed in
 * toolgate.yaml: each call decided as a dry run, and the paths the sandbox
 * hides for its Read denials.
 *
 * Owns: its temporary workspace.  Must not: run a command or start a
 * server.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "gate/gate.h"
#include "gate/rulecheck.h"

static char ws[64];

static void put(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	char p[128];
	strcpy(ws, "/tmp/tg-rulecheck.XXXXXX");
	assert_non_null(mkdtemp(ws));
	snprintf(p, sizeof p, "%s/secrets", ws);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/src", ws);
	assert_int_equal(mkdir(p, 0755), 0);
	put(".env", "TOKEN=x\n");
	put("secrets/key", "k\n");
	put("src/a.c", "int a;\n");
	put("locked.txt", "old\n");
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

/* Open a gate on the configuration text (file name: toolgate.yaml, or
 * name): the gate, or NULL with the error in *err (caller frees). */
static tg_gate *open_named(const char *name, const char *text, char **err)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/%s", ws, name);
	put(name, text);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	tg_gate *g = NULL;
	*err = NULL;
	if (tg_gate_open(&o, &g, err) < 0)
		return NULL;
	unlink(cfg);
	return g;
}

static tg_gate *open_cfg(const char *text, char **err)
{
	return open_named("toolgate.yaml", text, err);
}

#define DEPLOY_TOOL                                                                     \
	"tools:\n"                                                                      \
	"  deploy:\n"                                                                   \
	"    description: Deploy.\n"                                                    \
	"    command: [/bin/true]\n"                                                    \
	"    input_schema: {type: object, properties: {env: {type: string}, "           \
	"version: {type: string}}}\n"                                                   \
	"  todo:\n"                                                                     \
	"    description: A todo.\n"                                                    \
	"    command: [/bin/true]\n"                                                    \
	"    input_schema: {type: object, properties: {due_date: {type: string}}}\n"    \
	"    aliases: {due: due_date}\n"                                                \
	"  anything:\n"                                                                 \
	"    description: Takes any object.\n"                                          \
	"    command: [/bin/true]\n"

typedef struct bad_case {
	const char *cfg;     /* the permissions part; DEPLOY_TOOL is appended */
	const char *where;   /* the place, after the configuration's directory */
	const char *says;    /* a phrase of it */
} bad_case;

static const bad_case bad[] = {
	{ "permissions: {deny: [\"raed_file(./.env)\"]}\n", "toolgate.yaml:1:22: permissions.deny[0]: "
	  "rule \"raed_file(./.env)\": no tool is named raed_file", "; did you mean read_file?" },
	{ "permissions: {deny: [\"deploy(enw=prod)\"]}\n", "toolgate.yaml:1:22: permissions.deny[0]",
	  "deploy has no argument \"enw\"; did you mean env?" },
	{ "permissions: {deny: [\"deploy(/enw=prod)\"]}\n", "toolgate.yaml:1:22",
	  "deploy has no argument \"enw\"; did you mean env?" },
	{ "permissions: {ask: [\"deploy(region=eu)\"]}\n", "toolgate.yaml:1:21: permissions.ask[0]",
	  "deploy has no argument \"region\"; its arguments are: env, version" },
	{ "permissions: {deny: [\"Raed(./.env)\"]}\n", "toolgate.yaml:1:22",
	  "no tool is named Raed; did you mean Read?" },
	{ "permissions: {deny: [\"shel(git push)\"]}\n", "toolgate.yaml:1:22",
	  "did you mean shell?" },
	{ "permissions: {deny: [\"zz_*\"]}\n", "toolgate.yaml:1:22",
	  "it matches no tool; the tools are: read_file, list_dir" },
	{ "permissions: {deny: [\"mcp__gh__issues\"]}\n", "toolgate.yaml:1:22",
	  "names the MCP server \"gh\", but no server of that name is configured (mcp_servers is empty)" },
	{ "permissions: {deny: [\"mcp__gh\"]}\nmcp_servers: {fs: {command: [/bin/false]}}\n",
	  "toolgate.yaml:1:22", "the servers are: fs" },
	{ "permissions: {deny: [\"gh__issues\"]}\n", "toolgate.yaml:1:22",
	  "no tool is named gh__issues; the tools are: read_file" },
	{ "roles: {r: {ask: [nope]}}\n", "toolgate.yaml:1:19: roles.r.ask[0]",
	  "no tool is named nope" },
	{ "permissions: {deny: [\"todo(due=2026*)\"]}\n", "toolgate.yaml:1:22",
	  "\"due\" is a deprecated name of \"due_date\" (aliases)" },
	{ "permissions: {deny: [\"deploy(./x)\"]}\n", "toolgate.yaml:1:22",
	  "deploy takes no paths; write key=glob pairs, e.g. deploy(env=...)" },
	{ "permissions: {deny: [\"deplo*(./x)\"]}\n", "toolgate.yaml:1:22",
	  "deploy takes no paths" },
	/* the place of a rule further down a block */
	{ "permissions:\n  allow: [read_file]\n  deny:\n    - \"read_file(./.env)\"\n"
	  "    - \"write_fiel(./x)\"\n", "toolgate.yaml:5:7: permissions.deny[1]",
	  "did you mean write_file?" },
	/* a parse error in the same form */
	{ "permissions: {allow: [\"Bash(git push\"]}\n", "toolgate.yaml:1:23: permissions.allow[0]: "
	  "rule \"Bash(git push\"", "missing ')'" },
};

static void test_unknown_names(void **state)
{
	(void)state;
	int failed = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[2048], *err = NULL;
		snprintf(text, sizeof text, "%s%s", bad[i].cfg, DEPLOY_TOOL);
		tg_gate *g = open_cfg(text, &err);
		if (g || !err || !strstr(err, bad[i].where) || !strstr(err, bad[i].says)) {
			fprintf(stderr, "case %zu (%s): got %s\n  want %s ... %s\n", i, bad[i].cfg,
			        g ? "a gate" : err ? err : "(no error)", bad[i].where, bad[i].says);
			failed++;
		}
		tg_gate_close(g);
		free(err);
	}
	assert_int_equal(failed, 0);

	/* a configured tool that takes Claude Code's name */
	char *err = NULL;
	tg_gate *g = open_cfg("permissions: {deny: [Read]}\ntools:\n  Read:\n    description: r\n"
	                      "    command: [/bin/true]\n", &err);
	assert_null(g);
	assert_non_null(strstr(err, "Read is Claude Code's name for read_file, list_dir, search_files "
	                            "here, and a configured tool has that name too"));
	free(err);

	/* JSON: the same error with the JSON file's place */
	g = open_named("toolgate.json", "{\n  \"permissions\": {\n    \"deny\": [\"raed_file\"]\n  }\n}\n",
	               &err);
	assert_null(g);
	assert_non_null(strstr(err, "toolgate.json:3:14: permissions.deny[0]: rule \"raed_file\": "
	                            "no tool is named raed_file; did you mean read_file?"));
	free(err);
}

/* What loads: globs that match, names a configured server may list, an
 * argument of a schema that names none, Claude Code's names. */
static void test_what_loads(void **state)
{
	(void)state;
	static const char *const ok[] = {
		"permissions: {deny: [\"*\", \"*(./.env)\", \"deploy(env=prod)\", \"anything(x=1)\"]}\n",
		"permissions: {deny: [\"dep*(env=prod)\", \"*_file(./x)\", \"Read(./.env)\", Glob, Grep, LS]}\n",
		"permissions: {deny: [\"Edit(./src/**)\", \"Write(./x)\", \"MultiEdit\", \"Bash(git push:*)\"]}\n",
		"permissions: {deny: [\"fs__read_file\", \"fs__*\", \"mcp__fs\", \"mcp__fs__write(x=1)\", "
		"\"*__read\", \"WebFetch(domain:example.com)\", WebSearch]}\n"
		"mcp_servers: {fs: {command: [/bin/false]}}\n",
		"permissions: {deny: [\"mcp__fs__read\", \"f_read\"]}\n"
		"mcp_servers: {fs: {command: [/bin/false], prefix: f_}}\n",
		"permissions: {deny: [\"anything_at_all\"]}\n"
		"mcp_servers: {all: {command: [/bin/false], prefix: \"\"}}\n",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char text[2048], *err = NULL;
		snprintf(text, sizeof text, "%s%s", ok[i], DEPLOY_TOOL);
		tg_gate *g = open_cfg(text, &err);
		if (!g)
			fail_msg("case %zu: %s", i, err);
		tg_gate_close(g);
	}

	/* Claude Code's tools toolgate lacks load, and are reported; so is a
	 * path wholly outside the workspace */
	char *err = NULL;
	tg_gate *g = open_cfg("permissions:\n  deny: [\"WebFetch(domain:example.com)\", "
	                      "\"Read(./.env)\", \"Read(//etc/shadow)\"]\n  ask: [WebSearch]\n",
	                      &err);
	assert_non_null(g);
	json_t *rep = tgi_rulecheck_report(g);
	assert_int_equal(json_array_size(rep), 3);
	json_t *third = json_array_get(rep, 2);
	assert_string_equal(json_string_value(json_object_get(third, "rule")), "Read(//etc/shadow)");
	assert_non_null(strstr(json_string_value(json_object_get(third, "why")),
	                       "its path lies outside the workspace"));
	json_t *first = json_array_get(rep, 1);   /* by list: allow, ask, deny */
	assert_string_equal(json_string_value(json_object_get(json_array_get(rep, 0), "rule")),
	                    "WebSearch");
	assert_string_equal(json_string_value(json_object_get(first, "rule")),
	                    "WebFetch(domain:example.com)");
	assert_non_null(strstr(json_string_value(json_object_get(first, "where")), "/toolgate.yaml:2:10"));
	assert_non_null(strstr(json_string_value(json_object_get(first, "why")),
	                       "Claude Code's WebFetch has no counterpart"));
	json_decref(rep);
	char *report = NULL;
	assert_int_equal(tg_policy_test(g, &report, &err), 0);
	assert_non_null(strstr(report, "/toolgate.yaml:2:10: rule \"WebFetch(domain:example.com)\": "));
	assert_int_equal(strncmp(report, "WARN ", 5), 0);
	assert_non_null(strstr(report, "0 passed, 0 failed, 3 warnings\n"));
	free(report);
	char *doc = tg_doctor(g, 0);
	json_t *d = json_loads(doc, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(json_object_get(d, "rules"), "unmatched")), 3);
	json_decref(d);
	free(doc);
	tg_gate_close(g);
}

/* The decision and rule of a dry run. */
static void decided(tg_gate *g, const char *tool, const char *args, char *decision, char *rule,
                    size_t cap)
{
	tg_request rq = {.tool = tool, .args = args, .dry_run = 1};
	tg_result *r;
	tg_call(g, &rq, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	size_t i;
	json_t *st;
	snprintf(decision, cap, "none");
	rule[0] = '\0';
	json_array_foreach(json_object_get(env, "stages"), i, st) {
		if (strcmp(json_string_value(json_object_get(st, "stage")), "decide"))
			continue;
		snprintf(decision, cap, "%s", json_string_value(json_object_get(st, "decision")));
		snprintf(rule, cap, "%s", json_string_value(json_object_get(st, "rule")));
	}
	json_decref(env);
	tg_result_free(r);
}

/* A permissions block copied from .claude/settings.json, as JSON in
 * toolgate.yaml (the default principal's rules). */
static const char claude_block[] =
	"{\"permissions\": {\n"
	"  \"allow\": [\"Bash(npm run test:*)\", \"Edit\"],\n"
	"  \"deny\": [\"Read(./.env)\", \"Read(./secrets/**)\", \"Bash(curl:*)\", \"Bash(git push:*)\",\n"
	"           \"Write(./locked.txt)\", \"WebFetch(domain:example.com)\"],\n"
	"  \"ask\": [\"Edit(./src/**)\"],\n"
	"  \"defaultMode\": \"default\"\n"
	"}}\n";

static const struct {
	const char *tool, *args, *decision, *rule;
} claude_cases[] = {
	{ "read_file", "{\"path\":\".env\"}", "deny", "deny: Read(./.env)" },
	{ "search_files", "{\"pattern\":\"T\",\"path\":\".env\"}", "deny", "deny: Read(./.env)" },
	{ "list_dir", "{\"path\":\"secrets\"}", "deny", "deny: Read(./secrets/**)" },
	{ "read_file", "{\"path\":\"secrets/key\"}", "deny", "deny: Read(./secrets/**)" },
	{ "read_file", "{\"path\":\"src/a.c\"}", "allow", "mode default" },
	{ "shell", "{\"command\":\"cat .env\"}", "deny", "deny: Read(./.env)" },
	{ "shell", "{\"command\":\"git push origin main\"}", "deny", "deny: Bash(git push:*)" },
	{ "shell", "{\"command\":\"git pull\"}", "ask", "mode default" },
	{ "shell", "{\"command\":\"curl -s https://example.com\"}", "deny", "deny: Bash(curl:*)" },
	{ "shell", "{\"command\":\"npm run test -- --watch\"}", "allow", "allow: Bash(npm run test:*)" },
	{ "shell", "{\"command\":\"npm run build\"}", "ask", "mode default" },
	{ "write_file", "{\"path\":\"notes.md\",\"content\":\"x\"}", "allow", "allow: Edit" },
	{ "write_file", "{\"path\":\"src/b.c\",\"content\":\"x\"}", "ask", "ask: Edit(./src/**)" },
	{ "write_file", "{\"path\":\"locked.txt\",\"content\":\"x\"}", "deny", "deny: Write(./locked.txt)" },
	{ "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: n.txt\\n+x\\n*** End Patch\\n\"}",
	  "allow", "allow: Edit" },
	{ "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Update File: src/a.c\\n@@\\n-int a;\\n+int b;\\n"
	  "*** End Patch\\n\"}", "ask", "ask: Edit(./src/**)" },
	{ "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Update File: locked.txt\\n@@\\n-old\\n+new\\n"
	  "*** End Patch\\n\"}", "deny", "deny: Write(./locked.txt)" },
};

static void test_claude_block(void **state)
{
	(void)state;
	char *err = NULL, decision[512], rule[512];
	tg_gate *g = open_cfg(claude_block, &err);
	if (!g)
		fail_msg("%s", err);
	int failed = 0;
	for (size_t i = 0; i < sizeof claude_cases / sizeof claude_cases[0]; i++) {
		decided(g, claude_cases[i].tool, claude_cases[i].args, decision, rule, sizeof rule);
		if (strcmp(decision, claude_cases[i].decision) || strcmp(rule, claude_cases[i].rule)) {
			fprintf(stderr, "%s %s: got %s \"%s\", want %s \"%s\"\n", claude_cases[i].tool,
			        claude_cases[i].args, decision, rule, claude_cases[i].decision,
			        claude_cases[i].rule);
			failed++;
		}
	}
	assert_int_equal(failed, 0);

	/* the sandbox hides what the Read denials name, as for read_file's */
	tgi_strv m = {0};
	char e[512], env_path[128], secrets[128];
	assert_int_equal(tgi_read_masks_for(g, NULL, 0, &m, e, sizeof e), 0);
	snprintf(env_path, sizeof env_path, "%s/.env", ws);
	snprintf(secrets, sizeof secrets, "%s/secrets", ws);
	int have_env = 0, have_secrets = 0;
	for (size_t i = 0; i < m.n; i++) {
		have_env |= !strcmp(m.v[i], env_path);
		have_secrets |= !strcmp(m.v[i], secrets);
	}
	assert_true(have_env);
	assert_true(have_secrets);
	tgi_strv_free(&m);
	tg_gate_close(g);

	/* defaultMode is the mode */
	g = open_cfg("permissions: {defaultMode: plan}\n", &err);
	assert_non_null(g);
	decided(g, "write_file", "{\"path\":\"n.txt\",\"content\":\"x\"}", decision, rule, sizeof rule);
	assert_string_equal(decision, "deny");
	assert_string_equal(rule, "mode plan");
	tg_gate_close(g);
	assert_null(open_cfg("mode: default\npermissions: {defaultMode: plan}\n", &err));
	assert_non_null(strstr(err, "toolgate.yaml:2:28: permissions.defaultMode: \"plan\" contradicts "
	                            "mode: default"));
	free(err);
	assert_null(open_cfg("permissions: {defaultMode: dontAsk}\n", &err));
	assert_non_null(strstr(err, "permissions.defaultMode: expected one of default, acceptEdits, "
	                            "plan, bypassPermissions"));
	free(err);
}

/* Suggestions: the nearest name within a third of the word's length. */
static void test_closest(void **state)
{
	(void)state;
	assert_int_equal(tgi_edit_distance("raed_file", "read_file"), 1);   /* a swap */
	assert_int_equal(tgi_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(tgi_edit_distance("", "abc"), 3);
	assert_int_equal(tgi_edit_distance("abc", ""), 3);
	assert_int_equal(tgi_edit_distance("Read", "read"), 0);
	assert_int_equal(tgi_edit_distance("enw", "env"), 1);
	char big[300];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_true(tgi_edit_distance(big, "a") == SIZE_MAX);

	const char *const tools[] = {"read_file", "list_dir", "write_file", "Read"};
	assert_string_equal(tgi_closest("raed_file", tools, 4), "read_file");
	assert_string_equal(tgi_closest("writefile", tools, 4), "write_file");
	assert_string_equal(tgi_closest("read", tools, 4), "Read");
	assert_null(tgi_closest("deploy", tools, 4));
	assert_null(tgi_closest("ab", tools, 4));
	assert_null(tgi_closest("read_file", tools, 1));              /* itself is no suggestion */
	const char *const envs[] = {"env", "version"};
	assert_string_equal(tgi_closest("enw", envs, 2), "env");
	assert_null(tgi_closest("e", envs, 2));                       /* fewer edits than its length */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unknown_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_what_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claude_block, setup, teardown),
		cmocka_unit_test(test_closest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
