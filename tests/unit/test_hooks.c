/*
 * test_hooks.c — before- and after-hooks (issue 7, src/mw/hooks.c), with
 * real hook scripts: what a hook reads, both answer shapes (toolgate's and
 * Claude Code's), exit codes, timeouts, a hook that never reads its stdin,
 * rewritten arguments (validated again, judged by policy), tighten-only,
 * order, tool globs, after-hooks, calls on several threads, and the config
 * refused at open.  The reply parser is also tested on its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "toolgate.h"
#include "mw/mw.h"

static char ws[PATH_MAX];

/* ---- the workspace, its scripts and its configuration ---- */

static void write_file_at(const char *name, const char *text, mode_t mode)
{
	char p[PATH_MAX + 128];
	snprintf(p, sizeof p, "%s/%s", ws, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static int exists(const char *name)
{
	char p[PATH_MAX + 128];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", ws, name);
	return stat(p, &st) == 0;
}

/* The file's text (caller frees), or NULL. */
static char *slurp(const char *name)
{
	char p[PATH_MAX + 128];
	snprintf(p, sizeof p, "%s/%s", ws, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 22);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 22) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/tg-hooks.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, ws));
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/hooks", ws);
	assert_int_equal(mkdir(p, 0755), 0);
	/* answers with its first argument, after reading the call */
	write_file_at("hooks/say.sh", "#!/bin/sh\ncat > /dev/null\nprintf '%s' \"$1\"\n", 0755);
	/* exits with $1, $2 on stderr */
	write_file_at("hooks/exit.sh", "#!/bin/sh\ncat > /dev/null\nprintf '%s\\n' \"$2\" >&2\n"
	              "exit \"$1\"\n", 0755);
	/* writes the call it got to $1 (a marker that it ran), no opinion */
	write_file_at("hooks/mark.sh", "#!/bin/sh\ncat > \"$1\"\n", 0755);
	/* its pid and its child's into $1, then waits far past any timeout */
	write_file_at("hooks/sleep.sh", "#!/bin/sh\necho $$ > \"$1\"\nsleep 10 &\necho $! >> \"$1\"\n"
	              "wait\n", 0755);
	/* never reads its stdin; answers after a moment */
	write_file_at("hooks/noread.sh", "#!/bin/sh\nsleep 1\necho '{\"decision\":\"allow\"}'\n", 0755);
	/* its environment and working directory */
	write_file_at("hooks/env.sh", "#!/bin/sh\ncat > /dev/null\nprintf '%s|%s|%s|%s|%s|%s%s' "
	              "\"$TOOLGATE_HOOK_EVENT\" \"$TOOLGATE_OP_ID\" \"$TOOLGATE_WORKSPACE\" "
	              "\"$CLAUDE_PROJECT_DIR\" \"$(pwd)\" \"$PGPASSWORD\" \"$PGPASSFILE\" > env.txt\n",
	              0755);
	/* a Claude Code script: denies Bash commands that hold rm, from tool_input */
	write_file_at("hooks/cc.sh", "#!/bin/sh\nin=$(cat)\ncase \"$in\" in\n"
	              "*'\"tool_name\":\"Bash\"'*'\"tool_input\":{\"command\":\"rm '*)\n"
	              "  printf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	              "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"rm is not "
	              "allowed here\"}}' ;;\nesac\nexit 0\n", 0755);
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return chdir(ws);   /* nothing lands beside the tests, whatever goes wrong */
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return chdir("/") || system(cmd);
}

static void config(const char *yaml)
{
	write_file_at("toolgate.yaml", yaml, 0644);
}

static int try_open(tg_gate **g, char **err)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = path, .workspace = ws, .sync_full = 0};
	return tg_gate_open(&o, g, err);
}

static tg_gate *open_gate(const char *yaml)
{
	config(yaml);
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = try_open(&g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	return g;
}

/* The error of opening with yaml (caller frees). */
static char *open_error(const char *yaml)
{
	config(yaml);
	tg_gate *g = NULL;
	char *err = NULL;
	assert_int_equal(try_open(&g, &err), -1);
	assert_null(g);
	assert_non_null(err);
	return err;
}

/* One call: its envelope (caller decrefs). */
static json_t *call(tg_gate *g, const char *tool, const char *args)
{
	static int n;
	char id[32];
	snprintf(id, sizeof id, "c%d", ++n);   /* a call id once: never a replay */
	tg_request req = {.tool = tool, .args = args, .session = "s1", .call_id = id};
	tg_result *r;
	tg_call(g, &req, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(env);
	tg_result_free(r);
	return env;
}

static const char *str(json_t *env, const char *ptr)
{
	json_t *v = env;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", ptr);
	for (char *tok = strtok(buf, "/"); tok && v; tok = strtok(NULL, "/")) {
		char *end;
		long i = strtol(tok, &end, 10);
		v = *end ? json_object_get(v, tok) : json_array_get(v, (size_t)i);
	}
	return json_string_value(v);
}

static void assert_status(json_t *env, const char *want)
{
	const char *st = str(env, "status");
	if (!st || strcmp(st, want)) {
		char *s = json_dumps(env, JSON_INDENT(1));
		fail_msg("expected %s, got envelope %s", want, s);
	}
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" not found in \"%s\"", needle, hay ? hay : "(null)");
}

/* The hooks stage record of the trace, or NULL. */
static json_t *hooks_stage(json_t *env)
{
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st)
		if (!strcmp(json_string_value(json_object_get(st, "stage")), "hooks"))
			return st;
	return NULL;
}

static int ledger_events(const char *op_id, const char *type)
{
	char path[PATH_MAX + 64];
	sqlite3 *db;
	sqlite3_stmt *st;
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM events WHERE op_id = ? AND "
	                                    "type = ?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, op_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* ---- the reply parser on its own ---- */

static void parse(int code, const char *out, const char *err, tgi_hook_reply *r)
{
	tgi_hook_reply_parse(code, out, out ? strlen(out) : 0, err, err ? strlen(err) : 0, r);
}

static void test_reply_shapes(void **state)
{
	static const struct {
		const char *out;
		tgi_hook_decision want;
		const char *reason;
	} cases[] = {
		{"", TGI_HOOK_NONE, ""},
		{" \n\t", TGI_HOOK_NONE, ""},
		{"{}", TGI_HOOK_NONE, ""},
		{"{\"decision\":\"allow\"}", TGI_HOOK_ALLOW, ""},
		{"{\"decision\":\"ask\",\"reason\":\"check with a human\"}", TGI_HOOK_ASK,
		 "check with a human"},
		{"{\"decision\":\"deny\",\"reason\":\"no\"}\n", TGI_HOOK_DENY, "no"},
		/* Claude Code's current shape */
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"allow\",\"permissionDecisionReason\":\"fine\"}}", TGI_HOOK_ALLOW, "fine"},
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"ask\"}}", TGI_HOOK_ASK, ""},
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"deny\",\"permissionDecisionReason\":\"rm is not allowed\"},\"suppressOutput\":true,"
		 "\"systemMessage\":\"blocked\"}", TGI_HOOK_DENY, "rm is not allowed"},
		/* Claude Code's legacy shape */
		{"{\"decision\":\"approve\",\"reason\":\"ok\"}", TGI_HOOK_ALLOW, "ok"},
		{"{\"decision\":\"block\",\"reason\":\"not today\"}", TGI_HOOK_DENY, "not today"},
		/* continue: false stops the call */
		{"{\"continue\":false,\"stopReason\":\"halt\"}", TGI_HOOK_DENY, "halt"},
		/* two opinions: the stricter holds, with its reason */
		{"{\"decision\":\"allow\",\"reason\":\"a\",\"hookSpecificOutput\":{"
		 "\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"b\"}}", TGI_HOOK_ASK, "b"},
		{"{\"decision\":\"deny\",\"reason\":\"a\",\"hookSpecificOutput\":{"
		 "\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"b\"}}", TGI_HOOK_DENY, "a"},
		/* the reason is one printable line */
		{"{\"decision\":\"deny\",\"reason\":\"line one\\nline\\u001btwo\"}", TGI_HOOK_DENY,
		 "line one line two"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tgi_hook_reply r;
		parse(0, cases[i].out, "", &r);
		if (r.decision != cases[i].want || r.failed || strcmp(r.reason, cases[i].reason))
			fail_msg("case %zu (%s): decision %d failed %d reason \"%s\"", i, cases[i].out,
			         r.decision, r.failed, r.reason);
		assert_null(r.updated_args);
	}
}

static void test_reply_exit_codes(void **state)
{
	tgi_hook_reply r;
	/* exit 2: deny, stderr is the reason, stdout ignored */
	parse(2, "{\"decision\":\"allow\"}", "  writes to prod are frozen\n", &r);
	assert_int_equal(r.decision, TGI_HOOK_DENY);
	assert_false(r.failed);
	assert_string_equal(r.reason, "writes to prod are frozen");
	/* any other non-zero exit fails closed, with its stderr */
	parse(1, "{\"decision\":\"allow\"}", "Traceback:\n  line 4\nSyntaxError: boom\n\n", &r);
	assert_int_equal(r.decision, TGI_HOOK_DENY);
	assert_true(r.failed);
	assert_string_equal(r.reason, "exited with status 1 (SyntaxError: boom)");
	/* exit 2's reason is the whole of stderr, one line */
	parse(2, "", "first\nsecond\n", &r);
	assert_string_equal(r.reason, "first second");
	parse(127, "", "", &r);
	assert_true(r.failed);
	assert_string_equal(r.reason, "exited with status 127");
	/* a long stderr is capped */
	char big[5000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	parse(2, "", big, &r);
	assert_true(strlen(r.reason) < 320);
}

static void test_reply_bad_shapes(void **state)
{
	static const char *const bad[] = {
		"allow",                                          /* not JSON */
		"{\"decision\":\"allow\"} trailing",
		"[\"allow\"]",                                    /* not an object */
		"\"deny\"",
		"{\"decision\":\"yes\"}",                         /* unknown word */
		"{\"decision\":\"ALLOW\"}",
		"{\"decision\":1}",
		"{\"decison\":\"deny\"}",                         /* a typo is not silence */
		"{\"decision\":\"allow\",\"decision\":\"deny\"}", /* duplicate keys */
		"{\"reason\":5}",
		"{\"updated_args\":[1]}",                         /* args must be an object */
		"{\"updated_args\":\"{}\"}",
		"{\"hookSpecificOutput\":[]}",
		"{\"hookSpecificOutput\":{\"permissionDecision\":\"approve\"}}",
		"{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\"}}",
		"{\"hookSpecificOutput\":{\"updatedInput\":5}}",
		"{\"hookSpecificOutput\":{\"other\":1}}",
		"{\"continue\":\"no\"}",
		"{\"updated_args\":{},\"hookSpecificOutput\":{\"updatedInput\":{}}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tgi_hook_reply r;
		parse(0, bad[i], "", &r);
		if (r.decision != TGI_HOOK_DENY || !r.failed || !r.reason[0])
			fail_msg("case %zu (%s) was not refused: decision %d", i, bad[i], r.decision);
		assert_null(r.updated_args);
	}
	/* a NUL inside the bytes */
	tgi_hook_reply r;
	tgi_hook_reply_parse(0, "{\"decision\":\"allow\"}\0", 21, "", 0, &r);
	assert_true(r.failed);
}

static void test_reply_updated_args(void **state)
{
	tgi_hook_reply r;
	parse(0, "{\"decision\":\"allow\",\"updated_args\":{\"path\":\"b.txt\"}}", "", &r);
	assert_int_equal(r.decision, TGI_HOOK_ALLOW);
	assert_string_equal(json_string_value(json_object_get(r.updated_args, "path")), "b.txt");
	json_decref(r.updated_args);
	parse(0, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
	      "\"allow\",\"updatedInput\":{\"command\":\"ls\"}}}", "", &r);
	assert_string_equal(json_string_value(json_object_get(r.updated_args, "command")), "ls");
	json_decref(r.updated_args);
	/* no opinion, new args: a rewrite alone */
	parse(0, "{\"updated_args\":{\"x\":1}}", "", &r);
	assert_int_equal(r.decision, TGI_HOOK_NONE);
	assert_non_null(r.updated_args);
	json_decref(r.updated_args);
	/* a deny takes no new args */
	parse(0, "{\"decision\":\"deny\",\"updated_args\":{\"x\":1}}", "", &r);
	assert_int_equal(r.decision, TGI_HOOK_DENY);
	assert_null(r.updated_args);
}

/* ---- hooks in the gate ---- */

static const char write_args[] = "{\"path\":\"a.txt\",\"content\":\"hello\"}";

/* allow, ask and deny, in toolgate's shape and Claude Code's. */
static void test_decisions_both_shapes(void **state)
{
	static const struct {
		const char *answer;
		const char *status;
		const char *decision;
	} cases[] = {
		{"{\"decision\":\"allow\"}", "persisted", "allow"},
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"allow\"}}", "persisted", "allow"},
		{"{\"decision\":\"ask\",\"reason\":\"a human should look\"}", "pending", "ask"},
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"ask\"}}", "pending", "ask"},
		{"{\"decision\":\"deny\",\"reason\":\"frozen today\"}", "denied", "deny"},
		{"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
		 "\"deny\",\"permissionDecisionReason\":\"frozen today\"}}", "denied", "deny"},
		{"", "persisted", "none"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char yaml[1024];
		json_t *ans = json_string(cases[i].answer);
		char *q = json_dumps(ans, JSON_ENCODE_ANY);
		json_decref(ans);
		snprintf(yaml, sizeof yaml, "mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
		         "    - {command: [./hooks/say.sh, %s]}\n", q);
		free(q);
		tg_gate *g = open_gate(yaml);
		json_t *env = call(g, "write_file", write_args);
		assert_status(env, cases[i].status);
		json_t *hs = hooks_stage(env);
		assert_non_null(hs);
		assert_string_equal(str(hs, "hooks/0/hook"), "before_tool_call[0] (./hooks/say.sh)");
		assert_string_equal(str(hs, "hooks/0/decision"), cases[i].decision);
		assert_true(json_is_number(json_object_get(json_array_get(json_object_get(hs, "hooks"), 0),
		                                           "ms")));
		if (!strcmp(cases[i].status, "denied")) {
			assert_string_equal(str(env, "error/kind"), "not_permitted");
			assert_string_equal(str(env, "error/rule"), "hook: before_tool_call[0] (./hooks/say.sh)");
			assert_contains(str(env, "error/message"), "frozen today");
			assert_contains(str(env, "error/message"), "before_tool_call[0] (./hooks/say.sh)");
			assert_int_equal(ledger_events(str(env, "op_id"), "tool.hook.denied"), 1);
		} else if (!strcmp(cases[i].status, "pending")) {
			/* bypassPermissions would allow: the hook's ask outranks it */
			assert_string_equal(str(env, "error/kind"), "needs_approval");
			assert_contains(str(env, "error/rule"), "hook: before_tool_call[0]");
		}
		char path[PATH_MAX + 16];
		snprintf(path, sizeof path, "%s/a.txt", ws);
		assert_int_equal(access(path, F_OK) == 0, !strcmp(cases[i].status, "persisted"));
		unlink(path);
		json_decref(env);
		tg_gate_close(g);
	}
}

static void test_exit_2_reason(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/exit.sh, \"2\", \"writes are frozen until "
	                       "Monday\"]}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_string_equal(str(env, "error/message"), "hook before_tool_call[0] (./hooks/exit.sh) "
	                    "denied the call: writes are frozen until Monday");
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);
}

static void test_exit_1_fails_closed(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/exit.sh, \"1\", \"boom\"]}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	const char *msg = str(env, "error/message");
	assert_contains(msg, "hook before_tool_call[0] (./hooks/exit.sh) exited with status 1 (boom)");
	assert_contains(msg, "fail closed");
	assert_string_equal(str(env, "error/rule"), "hook: before_tool_call[0] (./hooks/exit.sh)");
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);

	/* a program that does not exist fails closed too */
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/missing.sh]}\n");
	env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"), "hook before_tool_call[0] (./hooks/missing.sh)");
	json_decref(env);
	tg_gate_close(g);
}

static void test_garbage_stdout(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, \"sure, go ahead\"]}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"), "hook before_tool_call[0] (./hooks/say.sh) "
	                "answered with something that is not JSON");
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);
}

static int process_gone(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	/* a killed orphan may wait a moment for its reaper */
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] == 'Z';
}

static void test_timeout(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/sleep.sh, pids.txt], timeout_s: 1}\n");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	json_t *env = call(g, "write_file", write_args);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"),
	                "hook before_tool_call[0] (./hooks/sleep.sh) timed out after 1 s");
	assert_true(s >= 0.9 && s < 3.0);
	/* the hook and its child are gone */
	char *pids = slurp("pids.txt");
	assert_non_null(pids);
	int a = 0, b = 0;
	assert_int_equal(sscanf(pids, "%d %d", &a, &b), 2);
	free(pids);
	for (int i = 0; i < 100 && !(process_gone(a) && process_gone(b)); i++)
		usleep(10000);
	assert_true(process_gone(a));
	assert_true(process_gone(b));
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);
}

/* 1 MiB of arguments to a hook that never reads them: no deadlock. */
static void test_hook_never_reads(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nlimits: {max_args_bytes: 4194304}\n"
	                       "hooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/noread.sh], timeout_s: 20}\n"
	                       "    - {command: [/bin/true]}\n");
	size_t n = 1 << 20;
	char *args = malloc(n + 64);
	assert_non_null(args);
	int k = snprintf(args, n + 64, "{\"path\":\"big.txt\",\"content\":\"");
	memset(args + k, 'y', n);
	strcpy(args + k + n, "\"}");
	json_t *env = call(g, "write_file", args);
	assert_status(env, "persisted");
	assert_string_equal(str(hooks_stage(env), "hooks/0/decision"), "allow");
	assert_string_equal(str(hooks_stage(env), "hooks/1/decision"), "none");
	assert_true(exists("big.txt"));
	free(args);
	json_decref(env);
	tg_gate_close(g);
}

static void test_rewrite_valid(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"updated_args\":{\"path\":"
	                       "\"b.txt\",\"content\":\"rewritten\"}}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "persisted");
	assert_false(exists("a.txt"));
	char *b = slurp("b.txt");
	assert_non_null(b);
	assert_string_equal(b, "rewritten");
	free(b);
	json_t *hs = hooks_stage(env);
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(hs, "hooks"), 0),
	                                         "rewrote")));
	assert_int_equal(ledger_events(str(env, "op_id"), "tool.hook.rewrote"), 1);
	/* one validate record in the trace */
	size_t i, nvalidate = 0;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st)
		nvalidate += !strcmp(json_string_value(json_object_get(st, "stage")), "validate");
	assert_int_equal(nvalidate, 1);
	json_decref(env);
	tg_gate_close(g);

	/* Claude Code's updatedInput, for a shell command */
	g = open_gate("mode: bypassPermissions\nsandbox: danger-full-access\nhooks:\n"
	              "  before_tool_call:\n"
	              "    - {command: [./hooks/say.sh, '{\"hookSpecificOutput\":{\"hookEventName\":"
	              "\"PreToolUse\",\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":"
	              "\"echo rewritten\"}}}'], tools: [shell]}\n");
	env = call(g, "shell", "{\"command\":\"echo original\"}");
	assert_status(env, "persisted");
	assert_string_equal(str(env, "output/stdout"), "rewritten\n");
	assert_int_equal(ledger_events(str(env, "op_id"), "tool.hook.rewrote"), 1);
	json_decref(env);
	tg_gate_close(g);
}

/* Policy judges the rewritten args: a path rewritten into a denied one. */
static void test_rewrite_judged_by_policy(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\npermissions:\n"
	                       "  deny: [\"write_file(./secret/**)\"]\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"allow\","
	                       "\"updated_args\":{\"path\":\"secret/x.txt\",\"content\":\"x\"}}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_string_equal(str(env, "error/rule"), "deny: write_file(./secret/**)");
	assert_false(exists("secret/x.txt"));
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);
}

static void test_rewrite_invalid(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"updated_args\":{\"path\":42}}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "invalid");
	assert_string_equal(str(env, "error/kind"), "invalid_input");
	const char *msg = str(env, "error/message");
	assert_contains(msg, "hook before_tool_call[0] (./hooks/say.sh) rewrote the arguments into "
	                "something the schema refuses");
	assert_contains(msg, "/path");
	json_t *hs = hooks_stage(env);
	assert_non_null(hs);
	assert_true(json_is_false(json_object_get(hs, "ok")));
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);

	/* updated_args that are not an object: the answer itself is refused */
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/say.sh, '{\"updated_args\":[1,2]}']}\n");
	env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"), "must be a JSON object");
	json_decref(env);
	tg_gate_close(g);
}

/* A hook's allow lifts neither an ask rule nor a deny rule. */
static void test_allow_is_not_a_grant(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\npermissions:\n  ask: [write_file]\n"
	                       "  deny: [\"write_file(./locked.txt)\"]\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"allow\"}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "pending");
	assert_string_equal(str(env, "error/rule"), "ask: write_file");
	assert_false(exists("a.txt"));
	json_decref(env);
	env = call(g, "write_file", "{\"path\":\"locked.txt\",\"content\":\"x\"}");
	assert_status(env, "denied");
	assert_string_equal(str(env, "error/rule"), "deny: write_file(./locked.txt)");
	assert_false(exists("locked.txt"));
	json_decref(env);
	tg_gate_close(g);
}

/* Registration order; the first deny stops the chain. */
static void test_order_first_deny_stops(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/mark.sh, first.json]}\n"
	                       "    - {command: [./hooks/exit.sh, \"2\", \"second says no\"]}\n"
	                       "    - {command: [./hooks/mark.sh, third.json]}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"), "before_tool_call[1] (./hooks/exit.sh) denied "
	                "the call: second says no");
	assert_true(exists("first.json"));
	assert_false(exists("third.json"));
	json_t *hs = hooks_stage(env);
	assert_int_equal(json_array_size(json_object_get(hs, "hooks")), 2);
	json_decref(env);
	tg_gate_close(g);
}

/* An ask, then an allow: still an ask; the rule names the hook that asked. */
static void test_ask_then_allow(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"ask\"}']}\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"allow\"}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "pending");
	assert_string_equal(str(env, "error/rule"), "hook: before_tool_call[0] (./hooks/say.sh)");
	json_decref(env);
	tg_gate_close(g);
}

/* An ask never loosens plan mode's deny; it still tightens its allow. */
static void test_ask_in_plan_mode(void **state)
{
	tg_gate *g = open_gate("mode: plan\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"ask\"}']}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	assert_string_equal(str(env, "error/rule"), "mode plan");
	assert_false(exists("a.txt"));
	json_decref(env);
	write_file_at("r.txt", "one\n", 0644);
	env = call(g, "read_file", "{\"path\":\"r.txt\"}");
	assert_status(env, "pending");
	assert_string_equal(str(env, "error/rule"), "hook: before_tool_call[0] (./hooks/say.sh)");
	json_decref(env);
	tg_gate_close(g);
}

static void test_tool_globs(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/exit.sh, \"2\", \"no writes\"], "
	                       "tools: [\"write_*\", apply_patch]}\n");
	write_file_at("r.txt", "one\n", 0644);
	json_t *env = call(g, "read_file", "{\"path\":\"r.txt\"}");
	assert_status(env, "persisted");
	assert_null(hooks_stage(env));   /* no hook matched: none ran */
	json_decref(env);
	env = call(g, "write_file", write_args);
	assert_status(env, "denied");
	json_decref(env);
	tg_gate_close(g);
}

/* What a before-hook reads: toolgate's fields, Claude Code's (in toolgate's
 * words with format: toolgate, in Claude Code's by default), the
 * environment and the working directory. */
static void test_before_input(void **state)
{
	tg_gate *g = open_gate("mode: acceptEdits\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/mark.sh, in.json], format: toolgate}\n"
	                       "    - {command: [./hooks/mark.sh, cc.json]}\n"
	                       "    - {command: [./hooks/env.sh]}\n");
	/* the ledger's credentials are not the hook's business */
	setenv("PGPASSWORD", "s3cret", 1);
	setenv("PGPASSFILE", "/tmp/pgpass", 1);
	json_t *env = call(g, "write_file", write_args);
	unsetenv("PGPASSWORD");
	unsetenv("PGPASSFILE");
	assert_status(env, "persisted");
	char *text = slurp("in.json");
	assert_non_null(text);
	json_t *in = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(in);
	assert_string_equal(str(in, "op_id"), str(env, "op_id"));
	assert_string_equal(str(in, "session"), "s1");
	assert_string_equal(str(in, "principal"), "local");
	assert_string_equal(str(in, "tool"), "write_file");
	assert_string_equal(str(in, "args/path"), "a.txt");
	assert_string_equal(str(in, "args/content"), "hello");
	assert_string_equal(str(in, "mode"), "acceptEdits");
	assert_string_equal(str(in, "hook_event_name"), "PreToolUse");
	assert_string_equal(str(in, "tool_name"), "write_file");
	assert_string_equal(str(in, "tool_input/path"), "a.txt");
	assert_string_equal(str(in, "session_id"), "s1");
	assert_string_equal(str(in, "tool_use_id"), str(env, "call_id"));
	assert_string_equal(str(in, "cwd"), ws);
	assert_string_equal(str(in, "permission_mode"), "acceptEdits");
	assert_true(json_is_null(json_object_get(in, "transcript_path")));
	json_decref(in);

	/* the default: Claude Code's names, an absolute file_path; toolgate's fields too */
	text = slurp("cc.json");
	assert_non_null(text);
	in = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(in);
	char fp[PATH_MAX + 16];
	snprintf(fp, sizeof fp, "%s/a.txt", ws);
	assert_string_equal(str(in, "hook_event_name"), "PreToolUse");
	assert_string_equal(str(in, "tool_name"), "Write");
	assert_string_equal(str(in, "tool_input/file_path"), fp);
	assert_string_equal(str(in, "tool_input/content"), "hello");
	assert_int_equal(json_object_size(json_object_get(in, "tool_input")), 2);
	assert_string_equal(str(in, "tool_use_id"), str(env, "call_id"));
	assert_string_equal(str(in, "session_id"), "s1");
	assert_string_equal(str(in, "cwd"), ws);
	assert_string_equal(str(in, "permission_mode"), "acceptEdits");
	assert_true(json_is_null(json_object_get(in, "transcript_path")));
	assert_string_equal(str(in, "tool"), "write_file");
	assert_string_equal(str(in, "args/path"), "a.txt");
	json_decref(in);

	char want[PATH_MAX * 4];
	snprintf(want, sizeof want, "before_tool_call|%s|%s|%s|%s|", str(env, "op_id"), ws, ws, ws);
	char *e = slurp("env.txt");
	assert_non_null(e);
	assert_string_equal(e, want);
	free(e);
	json_decref(env);
	tg_gate_close(g);
}

/* A Claude Code hook script, unchanged, on a shell command. */
static void test_claude_code_script(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/cc.sh], tools: [shell]}\n");
	json_t *env = call(g, "shell", "{\"command\":\"rm -rf build\"}");
	assert_status(env, "denied");
	assert_string_equal(str(env, "error/message"),
	                    "hook before_tool_call[0] (./hooks/cc.sh) denied the call: rm is not "
	                    "allowed here");
	json_decref(env);
	tg_gate_close(g);
}

static void test_after_hooks(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  after_tool_call:\n"
	                       "    - {command: [./hooks/mark.sh, after.json]}\n"
	                       "    - {command: [./hooks/exit.sh, \"1\", \"audit sink down\"]}\n"
	                       "    - {command: [./hooks/sleep.sh, after-pids.txt], timeout_s: 1}\n");
	json_t *env = call(g, "write_file", write_args);
	assert_status(env, "persisted");
	assert_true(exists("a.txt"));
	const char *op = str(env, "op_id");

	char *text = slurp("after.json");
	assert_non_null(text);
	json_t *in = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(in);
	assert_string_equal(str(in, "op_id"), op);
	assert_string_equal(str(in, "tool"), "write_file");
	assert_string_equal(str(in, "args/path"), "a.txt");
	assert_string_equal(str(in, "envelope/status"), "persisted");
	assert_string_equal(str(in, "envelope/op_id"), op);
	assert_string_equal(str(in, "hook_event_name"), "PostToolUse");
	assert_string_equal(str(in, "tool_name"), "Write");
	char fp[PATH_MAX + 16];
	snprintf(fp, sizeof fp, "%s/a.txt", ws);
	assert_string_equal(str(in, "tool_input/file_path"), fp);
	assert_true(json_equal(json_object_get(in, "tool_response"),
	                       json_object_get(json_object_get(in, "envelope"), "output")));
	assert_false(json_is_null(json_object_get(in, "tool_response")));
	json_decref(in);

	/* the failing and the timed-out after-hooks are events, not a new status */
	assert_int_equal(ledger_events(op, "tool.hook.failed"), 2);
	json_decref(env);

	/* after-hooks run for a call that stopped early too, and cannot change it */
	unlink("after.json");
	env = call(g, "no_such_tool", "{}");
	assert_string_equal(str(env, "status"), "invalid");
	assert_true(exists("after.json"));
	json_decref(env);
	tg_gate_close(g);
}

/* ---- Claude Code's view (format: claude-code, the default) ---- */

/* Every line of the file as JSON, in an array (caller decrefs). */
static json_t *runs_of(const char *name)
{
	json_t *a = json_array();
	char *text = slurp(name);
	if (!text)
		return a;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *v = json_loads(line, 0, NULL);
		assert_non_null(v);
		json_array_append_new(a, v);
	}
	free(text);
	return a;
}

/* ws + "/" + rel */
static const char *in_ws(const char *rel)
{
	static char buf[4][PATH_MAX + 64];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, sizeof buf[0], "%s%s%s", ws, *rel ? "/" : "", rel);
	return b;
}

static void assert_run(json_t *runs, size_t i, const char *name, const char *input)
{
	json_t *r = json_array_get(runs, i);
	json_t *want = json_loads(input, 0, NULL);
	assert_non_null(want);
	if (!r || !json_equal(json_object_get(r, "tool_name") ? json_object_get(r, "tool_input")
	                                                       : NULL, want) ||
	    strcmp(str(r, "tool_name"), name)) {
		char *got = r ? json_dumps(json_pack("{s:O, s:O}", "tool_name",
		                                     json_object_get(r, "tool_name"), "tool_input",
		                                     json_object_get(r, "tool_input")), 0) : NULL;
		fail_msg("run %zu: expected %s %s, got %s", i, name, input, got ? got : "(none)");
	}
	json_decref(want);
}

static void write_runs_hook(void)
{
	/* appends each call it is asked about as one line */
	write_file_at("hooks/log.sh", "#!/bin/sh\ncat >> \"$1\"\necho >> \"$1\"\n", 0755);
}

/* Each built-in tool as Claude Code's tool, with Claude Code's arguments. */
static void test_cc_tool_mapping(void **state)
{
	write_runs_hook();
	write_file_at("r.txt", "one\n", 0644);
	write_file_at("gone.txt", "bye\n", 0644);
	write_file_at("m.txt", "a\n", 0644);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/sub", ws);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/link.txt", ws);
	assert_int_equal(symlink("r.txt", p), 0);
	tg_gate *g = open_gate("mode: bypassPermissions\nsandbox: danger-full-access\n"
	                       "tools:\n  echo_tool:\n    description: Echoes.\n"
	                       "    input_schema: {type: object, properties: {n: {type: integer}}}\n"
	                       "    command: [./hooks/say.sh, 'ok']\n"
	                       "hooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/log.sh, runs.jsonl]}\n");
	char want[PATH_MAX * 3];
	const char *calls[][2] = {
		{"read_file", "{\"path\":\"./r.txt\"}"},
		{"write_file", "{\"path\":\"sub/../w.txt\",\"content\":\"x\"}"},
		{"list_dir", "{}"},
		{"list_dir", "{\"path\":\"sub\",\"depth\":3}"},
		{"search_files", "{\"pattern\":\"on.\",\"glob\":\"*.txt\"}"},
		{"shell", "{\"command\":[\"printf\",\"%s\\n\",\"a b\",\"it's\"],\"workdir\":\"sub\","
		          "\"timeout_s\":5}"},
		{"shell", "{\"command\":\"echo hi | cat\"}"},
		{"apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: new.txt\\n+n1\\n+n2\\n"
		                "*** Update File: r.txt\\n@@\\n-one\\n+uno\\n*** Delete File: gone.txt\\n"
		                "*** Update File: m.txt\\n*** Move to: sub/moved.txt\\n@@\\n-a\\n+b\\n"
		                "*** End Patch\"}"},
		{"read_file", "{\"path\":\"link.txt\"}"},
		{"echo_tool", "{\"n\":1}"},
	};
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		json_t *env = call(g, calls[i][0], calls[i][1]);
		assert_status(env, "persisted");
		json_decref(env);
	}
	json_t *runs = runs_of("runs.jsonl");
	size_t k = 0;
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"offset\":1,\"limit\":2000}", in_ws("r.txt"));
	assert_run(runs, k++, "Read", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"content\":\"x\"}", in_ws("w.txt"));
	assert_run(runs, k++, "Write", want);
	snprintf(want, sizeof want, "{\"pattern\":\"*\",\"path\":\"%s\"}", ws);
	assert_run(runs, k++, "Glob", want);
	snprintf(want, sizeof want, "{\"pattern\":\"**/*\",\"path\":\"%s\"}", in_ws("sub"));
	assert_run(runs, k++, "Glob", want);
	snprintf(want, sizeof want, "{\"pattern\":\"on.\",\"path\":\"%s\",\"glob\":\"*.txt\","
	         "\"output_mode\":\"content\",\"-n\":true,\"head_limit\":100}", ws);
	assert_run(runs, k++, "Grep", want);
	/* an argv is one command line, quoted as a shell reads it back; workdir is cwd */
	assert_run(runs, k, "Bash", "{\"command\":\"printf '%s\\n' 'a b' 'it'\\\\''s'\","
	           "\"timeout\":5000}");
	assert_string_equal(str(json_array_get(runs, k++), "cwd"), in_ws("sub"));
	assert_run(runs, k, "Bash", "{\"command\":\"echo hi | cat\"}");
	assert_string_equal(str(json_array_get(runs, k++), "cwd"), ws);
	/* a patch: one run per file, in order; a move names both files */
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"content\":\"n1\\nn2\\n\"}", in_ws("new.txt"));
	assert_run(runs, k++, "Write", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"old_string\":\"one\",\"new_string\":"
	         "\"uno\",\"replace_all\":false}", in_ws("r.txt"));
	assert_run(runs, k++, "Edit", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"old_string\":\"\",\"new_string\":\"\","
	         "\"replace_all\":false}", in_ws("gone.txt"));
	assert_run(runs, k++, "Edit", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"old_string\":\"a\",\"new_string\":\"b\","
	         "\"replace_all\":false}", in_ws("m.txt"));
	assert_run(runs, k++, "Edit", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"old_string\":\"a\",\"new_string\":\"b\","
	         "\"replace_all\":false}", in_ws("sub/moved.txt"));
	assert_run(runs, k++, "Edit", want);
	/* a path through a symlink: asked under both names */
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"offset\":1,\"limit\":2000}",
	         in_ws("link.txt"));
	assert_run(runs, k++, "Read", want);
	snprintf(want, sizeof want, "{\"file_path\":\"%s\",\"offset\":1,\"limit\":2000}", in_ws("r.txt"));
	assert_run(runs, k++, "Read", want);
	/* a configured tool keeps its name and arguments */
	assert_run(runs, k++, "echo_tool", "{\"n\":1}");
	assert_int_equal(json_array_size(runs), k);
	json_decref(runs);
	tg_gate_close(g);

	/* a bridged tool is named as Claude Code names MCP tools */
	char *name = tgi_cc_name(TGI_CC_MCP, "fs__read_file");
	assert_string_equal(name, "mcp__fs__read_file");
	free(name);
	tgi_cc_runs rs;
	json_t *args = json_pack("{s:s}", "path", "x");
	tgi_cc_runs_make(TGI_CC_MCP, "fs__read_file", args, ws, -1, &rs);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.v[0].name, "mcp__fs__read_file");
	assert_true(json_equal(rs.v[0].input, args));
	tgi_cc_runs_free(&rs);
	json_decref(args);
}

/* `tools` may name Claude Code's tools; a patch's runs match one by one. */
static void test_cc_tool_globs(void **state)
{
	write_runs_hook();
	write_file_at("r.txt", "one\n", 0644);
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/log.sh, runs.jsonl], tools: [Write]}\n");
	static const char upd[] = "{\"patch\":\"*** Begin Patch\\n*** Update File: r.txt\\n@@\\n"
	                          "-one\\n+uno\\n*** Add File: n.txt\\n+x\\n*** End Patch\"}";
	json_t *env = call(g, "apply_patch", upd);
	assert_status(env, "persisted");
	json_decref(env);
	env = call(g, "read_file", "{\"path\":\"r.txt\"}");
	assert_status(env, "persisted");
	assert_null(hooks_stage(env));
	json_decref(env);
	json_t *runs = runs_of("runs.jsonl");
	assert_int_equal(json_array_size(runs), 1);     /* the added file only */
	assert_string_equal(str(json_array_get(runs, 0), "tool_name"), "Write");
	json_decref(runs);
	tg_gate_close(g);

	/* toolgate's names still match, and reach Claude Code's view */
	unlink("runs.jsonl");
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/log.sh, runs.jsonl], tools: [read_file]}\n"
	              "    - {command: [./hooks/log.sh, tg.jsonl], tools: [Read], format: toolgate}\n");
	env = call(g, "read_file", "{\"path\":\"r.txt\"}");
	assert_status(env, "persisted");
	json_decref(env);
	runs = runs_of("runs.jsonl");
	assert_string_equal(str(json_array_get(runs, 0), "tool_name"), "Read");
	json_decref(runs);
	runs = runs_of("tg.jsonl");
	assert_string_equal(str(json_array_get(runs, 0), "tool_name"), "read_file");
	assert_string_equal(str(json_array_get(runs, 0), "tool_input/path"), "r.txt");
	json_decref(runs);
	tg_gate_close(g);

	/* in toolgate's format, [Write] runs (once) for a patch that adds a file */
	unlink("tg.jsonl");
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/log.sh, tg.jsonl], tools: [Write], format: toolgate}\n");
	env = call(g, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: m.txt\\n+1\\n"
	           "*** Add File: n2.txt\\n+2\\n*** End Patch\"}");
	assert_status(env, "persisted");
	json_decref(env);
	runs = runs_of("tg.jsonl");
	assert_int_equal(json_array_size(runs), 1);
	assert_string_equal(str(json_array_get(runs, 0), "tool_name"), "apply_patch");
	json_decref(runs);
	tg_gate_close(g);
}

/* A guard that reads file_path sees every file of a patch; the first
 * file it denies stops the call, and nothing is written. */
static void test_cc_patch_guard(void **state)
{
	write_file_at("hooks/guard.sh", "#!/bin/sh\nin=$(cat)\ncase \"$in\" in\n"
	              "*'\"tool_input\":{\"file_path\":\"'*'/.env\"'*) echo \"no .env\" >&2; exit 2;;\n"
	              "esac\nexit 0\n", 0755);
	write_file_at("ok.txt", "one\n", 0644);
	write_file_at(".env", "KEY=1\n", 0600);
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/guard.sh], tools: [Edit, Write]}\n");
	static const char *const denied[] = {
		"{\"patch\":\"*** Begin Patch\\n*** Update File: ok.txt\\n@@\\n-one\\n+uno\\n"
		"*** Update File: .env\\n@@\\n-KEY=1\\n+KEY=2\\n*** End Patch\"}",
		"{\"patch\":\"*** Begin Patch\\n*** Add File: sub/../.env\\n+KEY=3\\n*** End Patch\"}",
		"{\"patch\":\"*** Begin Patch\\n*** Update File: ok.txt\\n*** Move to: .env\\n@@\\n"
		"-one\\n+uno\\n*** End Patch\"}",
		"{\"patch\":\"*** Begin Patch\\n*** Delete File: .env\\n*** End Patch\"}",
	};
	for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
		json_t *env = call(g, "apply_patch", denied[i]);
		assert_status(env, "denied");
		assert_contains(str(env, "error/message"), "denied the call: no .env");
		json_decref(env);
	}
	char *t = slurp("ok.txt");
	assert_string_equal(t, "one\n");
	free(t);
	t = slurp(".env");
	assert_string_equal(t, "KEY=1\n");
	free(t);
	json_t *env = call(g, "write_file", "{\"path\":\".env\",\"content\":\"x\"}");
	assert_status(env, "denied");
	json_decref(env);
	/* a patch of files it allows: asked once per file */
	env = call(g, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Update File: ok.txt\\n@@\\n"
	           "-one\\n+uno\\n*** Add File: two.txt\\n+2\\n*** End Patch\"}");
	assert_status(env, "persisted");
	json_t *rec = json_array_get(json_object_get(hooks_stage(env), "hooks"), 0);
	assert_int_equal(json_integer_value(json_object_get(rec, "runs")), 2);
	json_decref(env);
	tg_gate_close(g);

	/* the same guard in toolgate's format sees no file_path at all */
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/guard.sh], format: toolgate}\n");
	env = call(g, "write_file", "{\"path\":\".env\",\"content\":\"x\"}");
	assert_status(env, "persisted");
	json_decref(env);
	tg_gate_close(g);
}

/* A gate whose before-hook answers ans, and whose after-hook (toolgate's
 * format) appends the call's final args to after.jsonl. */
static tg_gate *answer_gate(const char *ans)
{
	char y[PATH_MAX * 4];
	snprintf(y, sizeof y, "mode: bypassPermissions\nsandbox: danger-full-access\nhooks:\n"
	         "  before_tool_call:\n    - {command: [./hooks/say.sh, '%s']}\n"
	         "  after_tool_call:\n    - {command: [./hooks/log.sh, after.jsonl], "
	         "format: toolgate}\n", ans);
	return open_gate(y);
}

/* updatedInput in Claude Code's words, mapped back into toolgate's, or
 * refused (the call denied) when it cannot be. */
static void test_cc_rewrite(void **state)
{
	write_runs_hook();
	/* answers allow with tool_input as it came, unchanged */
	write_file_at("hooks/echo.sh", "#!/bin/sh\njq -c '{hookSpecificOutput: {hookEventName: "
	              "\"PreToolUse\", permissionDecision: \"allow\", updatedInput: .tool_input}}'\n",
	              0755);
	write_file_at("b.txt", "bee\n", 0644);
	char ans[PATH_MAX * 2];

	/* Read: file_path back into a workspace path */
	snprintf(ans, sizeof ans, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	         "\"updatedInput\":{\"file_path\":\"%s\",\"limit\":1}}}", in_ws("b.txt"));
	tg_gate *g = answer_gate(ans);
	json_t *env = call(g, "read_file", "{\"path\":\"a.txt\"}");
	assert_status(env, "persisted");
	json_t *after = runs_of("after.jsonl");
	assert_string_equal(str(json_array_get(after, 0), "args/path"), "b.txt");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	                     json_array_get(after, 0), "args"), "limit")), 1);
	json_decref(after);
	json_decref(env);
	tg_gate_close(g);

	/* Write */
	unlink("after.jsonl");
	snprintf(ans, sizeof ans, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	         "\"updatedInput\":{\"file_path\":\"%s\",\"content\":\"rewritten\"}}}",
	         in_ws("w/c.txt"));
	g = answer_gate(ans);
	env = call(g, "write_file", write_args);
	assert_status(env, "persisted");
	char *t = slurp("w/c.txt");
	assert_string_equal(t, "rewritten");
	free(t);
	assert_false(exists("a.txt"));
	json_decref(env);
	tg_gate_close(g);

	/* Bash: a command line and a timeout in milliseconds */
	unlink("after.jsonl");
	g = answer_gate("{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	                "\"updatedInput\":{\"command\":\"echo rewritten\",\"timeout\":1500}}}");
	env = call(g, "shell", "{\"command\":[\"echo\",\"original\"],\"workdir\":\".\"}");
	assert_status(env, "persisted");
	assert_string_equal(str(env, "output/stdout"), "rewritten\n");
	after = runs_of("after.jsonl");
	json_t *args = json_object_get(json_array_get(after, 0), "args");
	assert_string_equal(json_string_value(json_object_get(args, "command")), "echo rewritten");
	assert_int_equal(json_integer_value(json_object_get(args, "timeout_s")), 2);
	assert_string_equal(json_string_value(json_object_get(args, "workdir")), ".");
	json_decref(after);
	json_decref(env);
	tg_gate_close(g);

	/* what cannot be mapped back is refused, and the call denied */
	static const struct { const char *tool, *args, *answer, *want; } bad[] = {
		{"search_files", "{\"pattern\":\"x\"}", "{\"pattern\":\"x\",\"-i\":true}",
		 "updatedInput has \\\"-i\\\", which search_files has no argument for"},
		{"read_file", "{\"path\":\"b.txt\"}", "{\"path\":\"b.txt\"}",
		 "updatedInput has \\\"path\\\", which read_file has no argument for"},
		{"shell", "{\"command\":\"true\"}", "{\"command\":\"true\",\"run_in_background\":true}",
		 "in the background"},
		{"list_dir", "{}", "{\"pattern\":\"*.env\"}", "changes \\\"pattern\\\""},
		{"apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: p.txt\\n+x\\n*** End Patch\"}",
		 "{\"file_path\":\"/tmp/p.txt\",\"content\":\"y\"}", "a patch cannot be rewritten"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(ans, sizeof ans, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
		         "\"permissionDecision\":\"allow\",\"updatedInput\":%s}}", bad[i].answer);
		g = answer_gate(ans);
		env = call(g, bad[i].tool, bad[i].args);
		assert_status(env, "denied");
		assert_contains(str(env, "error/message"), "(fail closed)");
		char want[256];
		snprintf(want, sizeof want, "%s", bad[i].want);
		/* the JSON escapes above are for the YAML; the message has plain quotes */
		for (char *q = want; (q = strstr(q, "\\\"")); )
			memmove(q, q + 1, strlen(q));
		assert_contains(str(env, "error/message"), want);
		assert_false(exists("p.txt"));
		json_decref(env);
		tg_gate_close(g);
	}

	/* a path outside the workspace: revalidated and denied, the root named */
	g = answer_gate("{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	                "\"updatedInput\":{\"file_path\":\"/etc/hostname\"}}}");
	env = call(g, "read_file", "{\"path\":\"b.txt\"}");
	assert_status(env, "denied");
	assert_contains(str(env, "error/message"), "is outside the workspace root");
	json_decref(env);
	tg_gate_close(g);

	/* input echoed back unchanged is no rewrite: an argv stays an argv, and a
	 * patch asked about per file may pass */
	unlink("after.jsonl");
	g = open_gate("mode: bypassPermissions\nsandbox: danger-full-access\nhooks:\n"
	              "  before_tool_call:\n    - {command: [./hooks/echo.sh]}\n"
	              "  after_tool_call:\n    - {command: [./hooks/log.sh, after.jsonl], "
	              "format: toolgate}\n");
	env = call(g, "shell", "{\"command\":[\"echo\",\"a b\"]}");
	assert_status(env, "persisted");
	assert_string_equal(str(env, "output/stdout"), "a b\n");
	json_decref(env);
	env = call(g, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: p1.txt\\n+1\\n"
	           "*** Add File: p2.txt\\n+2\\n*** End Patch\"}");
	assert_status(env, "persisted");
	assert_null(json_object_get(json_array_get(json_object_get(hooks_stage(env), "hooks"), 0),
	                            "rewrote"));
	json_decref(env);
	after = runs_of("after.jsonl");
	assert_true(json_is_array(json_object_get(json_object_get(json_array_get(after, 0), "args"),
	                                          "command")));
	json_decref(after);
	tg_gate_close(g);

	/* toolgate's format: updatedInput is in toolgate's words */
	g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	              "    - {command: [./hooks/say.sh, '{\"hookSpecificOutput\":{\"hookEventName\":"
	              "\"PreToolUse\",\"updatedInput\":{\"path\":\"tg.txt\",\"content\":\"t\"}}}'], "
	              "format: toolgate}\n");
	env = call(g, "write_file", write_args);
	assert_status(env, "persisted");
	assert_true(exists("tg.txt"));
	json_decref(env);
	tg_gate_close(g);
}

/* The client's own id of the tool use reaches hooks and the envelope,
 * cleaned and capped; the call id stays the gate's. */
static void test_client_call_id(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/mark.sh, in.json]}\n");
	tg_request req = {.tool = "write_file", .args = write_args, .session = "s1",
	                  .call_id = "mcp-7", .client_call_id = "toolu_01\x07" "AB\ncd\x7f"};
	tg_result *r;
	assert_int_equal(tg_call(g, &req, &r), TG_PERSISTED);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	tg_result_free(r);
	assert_string_equal(str(env, "client_call_id"), "toolu_01ABcd");
	assert_string_equal(str(env, "call_id"), "mcp-7");
	char *text = slurp("in.json");
	json_t *in = json_loads(text, 0, NULL);
	free(text);
	assert_string_equal(str(in, "tool_use_id"), "toolu_01ABcd");
	json_decref(in);
	json_decref(env);

	char big[700];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	req.client_call_id = big;
	req.call_id = "mcp-8";
	assert_int_equal(tg_call(g, &req, &r), TG_PERSISTED);
	env = json_loads(tg_result_json(r, 0), 0, NULL);
	tg_result_free(r);
	assert_int_equal(strlen(str(env, "client_call_id")), 256);
	json_decref(env);

	/* none given: the envelope has no client_call_id, and hooks get the call id */
	env = call(g, "write_file", write_args);
	assert_null(json_object_get(env, "client_call_id"));
	text = slurp("in.json");
	in = json_loads(text, 0, NULL);
	free(text);
	assert_string_equal(str(in, "tool_use_id"), str(env, "call_id"));
	json_decref(in);
	json_decref(env);
	tg_gate_close(g);
}

/* After-hooks in Claude Code's format: one run per file of a patch. */
static void test_cc_after_hooks(void **state)
{
	write_runs_hook();
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  after_tool_call:\n"
	                       "    - {command: [./hooks/log.sh, after.jsonl], tools: [Edit, Write]}\n");
	json_t *env = call(g, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: x.txt\\n"
	                    "+1\\n*** Add File: y.txt\\n+2\\n*** End Patch\"}");
	assert_status(env, "persisted");
	json_decref(env);
	json_t *runs = runs_of("after.jsonl");
	assert_int_equal(json_array_size(runs), 2);
	assert_string_equal(str(json_array_get(runs, 0), "hook_event_name"), "PostToolUse");
	assert_string_equal(str(json_array_get(runs, 0), "tool_input/file_path"), in_ws("x.txt"));
	assert_string_equal(str(json_array_get(runs, 1), "tool_input/file_path"), in_ws("y.txt"));
	assert_string_equal(str(json_array_get(runs, 1), "envelope/status"), "persisted");
	json_decref(runs);
	tg_gate_close(g);
}

struct worker {
	tg_gate *g;
	int      i;
	tg_status st;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char args[128], id[32];
	snprintf(args, sizeof args, "{\"path\":\"t%d.txt\",\"content\":\"x\"}", w->i);
	snprintf(id, sizeof id, "t%d", w->i);
	tg_request req = {.tool = "write_file", .args = args, .session = "s1", .call_id = id};
	tg_result *r;
	w->st = tg_call(w->g, &req, &r);
	tg_result_free(r);
	return NULL;
}

/* Hooks of calls on several threads at once, and of a batch. */
static void test_concurrent_calls(void **state)
{
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{\"decision\":\"allow\"}']}\n"
	                       "  after_tool_call:\n"
	                       "    - {command: [./hooks/exit.sh, \"3\", \"down\"]}\n");
	enum { N = 4 };
	pthread_t th[N];
	struct worker w[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct worker){.g = g, .i = i};
		assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].st, TG_PERSISTED);
	}
	tg_request reqs[N];
	char args[N][128];
	for (int i = 0; i < N; i++) {
		snprintf(args[i], sizeof args[i], "{\"path\":\"b%d.txt\",\"content\":\"x\"}", i);
		reqs[i] = (tg_request){.tool = "write_file", .args = args[i]};
	}
	tg_result *out[N];
	assert_int_equal(tg_call_batch(g, reqs, N, out), N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
		tg_result_free(out[i]);
	}
	assert_true(exists("t3.txt") && exists("b3.txt"));
	tg_gate_close(g);
}

/* Bad shapes are refused at open, with file:line and the key. */
static void test_config_refused(void **state)
{
	static const struct { const char *yaml, *want; } cases[] = {
		{"hooks:\n  before: []\n", "unknown key \"before\""},
		{"hooks:\n  before_tool_call: [{command: [./x], tool: [shell]}]\n",
		 "hooks.before_tool_call[0]: unknown key \"tool\""},
		{"hooks:\n  before_tool_call: [{tools: [shell]}]\n",
		 "hooks.before_tool_call[0]: missing required key \"command\""},
		{"hooks:\n  before_tool_call: [{command: []}]\n", "hooks.before_tool_call[0].command"},
		{"hooks:\n  before_tool_call: [{command: \"./x\"}]\n", "hooks.before_tool_call[0].command"},
		{"hooks:\n  before_tool_call: [{command: [\"\"]}]\n", "hooks.before_tool_call[0].command[0]"},
		{"hooks:\n  before_tool_call: [{command: [./x, 3]}]\n", "hooks.before_tool_call[0].command[1]"},
		{"hooks:\n  after_tool_call: [{command: [./x], tools: []}]\n", "hooks.after_tool_call[0].tools"},
		{"hooks:\n  after_tool_call: [{command: [./x], timeout_s: 0}]\n",
		 "hooks.after_tool_call[0].timeout_s: expected an integer from 1 to 600"},
		{"hooks:\n  after_tool_call: [{command: [./x], timeout_s: 601}]\n", "timeout_s"},
		{"hooks:\n  after_tool_call: [{command: [./x], timeout_s: \"5\"}]\n", "timeout_s"},
		{"hooks:\n  before_tool_call: [./x]\n", "hooks.before_tool_call[0]: expected a mapping"},
		{"hooks:\n  before_tool_call:\n    - {command: [./ok]}\n    - {command: [./x], "
		 "timeout_s: -1}\n", "toolgate.yaml:4:"},
		{"hooks:\n  before_tool_call: [{command: [./x], format: claude}]\n",
		 "hooks.before_tool_call[0].format: expected claude-code"},
		{"hooks:\n  before_tool_call: [{command: [./x], tools: [shell, \"Edit|Write\"]}]\n",
		 "hooks.before_tool_call[0].tools[1]: \"Edit|Write\" can never match a tool name"},
		{"hooks:\n  before_tool_call: [{command: [./x], tools: [\"Bash(rm *)\"]}]\n",
		 "can never match a tool name"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *err = open_error(cases[i].yaml);
		if (!strstr(err, cases[i].want) || !strstr(err, "toolgate.yaml:"))
			fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].want, err);
		free(err);
	}
}

/* A tool may not rewrite the hooks the gate runs. */
static void test_hook_programs_protected(void **state)
{
	write_file_at("hooks/check.py", "print('')\n", 0644);
	tg_gate *g = open_gate("mode: bypassPermissions\nhooks:\n  before_tool_call:\n"
	                       "    - {command: [./hooks/say.sh, '{}']}\n"
	                       "  after_tool_call:\n    - {command: [python3, hooks/check.py]}\n");
	json_t *env = call(g, "write_file", "{\"path\":\"hooks/say.sh\",\"content\":\"exit 0\"}");
	assert_status(env, "denied");
	json_decref(env);
	env = call(g, "write_file", "{\"path\":\"hooks/check.py\",\"content\":\"\"}");
	assert_status(env, "denied");
	json_decref(env);
	tg_gate_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reply_shapes),
		cmocka_unit_test(test_reply_exit_codes),
		cmocka_unit_test(test_reply_bad_shapes),
		cmocka_unit_test(test_reply_updated_args),
		cmocka_unit_test_setup_teardown(test_decisions_both_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_2_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_1_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hook_never_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_valid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_judged_by_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allow_is_not_a_grant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_order_first_deny_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_then_allow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_in_plan_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tool_globs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_before_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claude_code_script, setup, teardown),
		cmocka_unit_test_setup_teardown(test_after_hooks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cc_tool_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cc_tool_globs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cc_patch_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cc_rewrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_call_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cc_after_hooks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hook_programs_protected, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
