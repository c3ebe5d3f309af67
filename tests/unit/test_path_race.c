/*
 * test_path_race.c — a path swapped between the check and the open.
 *
 * Decide judges a file tool's path as written and as resolved; the tool
 * then opens the path again.  A symlink, or a directory on the way,
 * replaced in between (by a process the model started, say) must not
 * carry the open past the read rules or the edit rules: the tool's open
 * has to land where decide looked, or the call fails (`failed`,
 * `transient`, nothing read or written).
 *
 * The window is made deterministic with an `ask` rule and the caller's
 * approver (tg_callbacks.approve), which runs after decide and before
 * execute: it swaps the path, then allows the call.  Each case is also
 * run with no swap, to show the approved call itself works.
 *
 * Owns: its temporary workspace.  Must not: run a command.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "toolgate.h"

static char ws[64];

static void wpath(char *out, size_t cap, const char *rel)
{
	snprintf(out, cap, "%s/%s", ws, rel);
}

static void put(const char *rel, const char *text)
{
	char p[256];
	wpath(p, sizeof p, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void mkd(const char *rel)
{
	char p[256];
	wpath(p, sizeof p, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void link_to(const char *target, const char *rel)
{
	char p[256];
	wpath(p, sizeof p, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int exists(const char *rel)
{
	char p[256];
	struct stat st;
	wpath(p, sizeof p, rel);
	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	(void)state;
	strcpy(ws, "/tmp/tg-pathrace.XXXXXX");
	assert_non_null(mkdtemp(ws));
	mkd("ok");
	mkd("secret");
	mkd("d");
	put("ok.txt", "fine\n");
	put("secret.txt", "TOKEN=hidden\n");
	put("ok/x.txt", "fine too\n");
	put("secret/x.txt", "TOKEN=hidden too\n");
	put("d/x.txt", "plain\n");
	put("toolgate.yaml",
	    "mode: default\n"
	    "approval: on-request\n"
	    "permissions:\n"
	    "  deny: [\"read_file(./secret.txt)\", \"read_file(./secret/**)\",\n"
	    "         \"read_file(./secret)\", \"write_file(./secret/**)\",\n"
	    "         \"write_file(./secret.txt)\"]\n"
	    "  ask: [\"read_file(./link)\", \"read_file(./dl/**)\", \"read_file(./d/**)\",\n"
	    "        \"list_dir(./dl)\", \"search_files(./link)\", \"search_files(./dl)\",\n"
	    "        \"write_file(./dl/**)\", \"write_file(./d/**)\"]\n");
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	if (chdir("/") < 0)
		return -1;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

static tg_gate *open_gate(void)
{
	char cfg[128];
	wpath(cfg, sizeof cfg, "toolgate.yaml");
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err))
		fail_msg("open: %s", err);
	return g;
}

/* What the approver does before it allows: move `from` aside (to
 * from.old) when set, then make `link` point at `target`. */
typedef struct swap {
	const char *link, *target, *from;
	int asked;
} swap;

static int approve_swapping(void *arg, const char *tool, const char *args, const char *rule,
                            char *reason, size_t cap)
{
	swap *s = arg;
	char p[256], q[300];
	(void)tool;
	(void)args;
	(void)rule;
	s->asked++;
	if (s->from) {
		wpath(p, sizeof p, s->from);
		snprintf(q, sizeof q, "%s.old", p);
		assert_int_equal(rename(p, q), 0);
	}
	if (s->link) {
		wpath(p, sizeof p, s->link);
		if (unlink(p) < 0)
			assert_int_equal(errno, ENOENT);
		assert_int_equal(symlink(s->target, p), 0);
	}
	snprintf(reason, cap, "test");
	return 1;
}

/* Run tool(args) with the approver doing s; the envelope (new reference). */
static json_t *call(tg_gate *g, const char *tool, json_t *args, swap *s)
{
	char *text = json_dumps(args, JSON_COMPACT);
	tg_callbacks cb = {.arg = s, .approve = approve_swapping};
	tg_request rq = {.tool = tool, .args = text, .cb = &cb};
	tg_result *r;
	tg_call(g, &rq, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(env);
	tg_result_free(r);
	free(text);
	json_decref(args);
	return env;
}

static const char *status(const json_t *env)
{
	return json_string_value(json_object_get(env, "status"));
}

static const char *kind(const json_t *env)
{
	return json_string_value(json_object_get(json_object_get(env, "error"), "kind"));
}

/* The envelope says nothing of `secret` content and the call failed as a
 * path that changed. */
static void assert_changed(json_t *env)
{
	char *text = json_dumps(env, JSON_COMPACT);
	if (strstr(text, "hidden"))
		fail_msg("the secret leaked: %s", text);
	if (strcmp(status(env), "failed") || !kind(env) || strcmp(kind(env), "transient"))
		fail_msg("expected failed/transient: %s", text);
	const char *msg = json_string_value(json_object_get(json_object_get(env, "error"), "message"));
	if (!msg || !strstr(msg, "changed"))
		fail_msg("expected a sentence saying the path changed: %s", text);
	free(text);
}

static void assert_ok(json_t *env, const char *want)
{
	char *text = json_dumps(env, JSON_COMPACT);
	if (strcmp(status(env), "persisted") || (want && !strstr(text, want)))
		fail_msg("expected persisted with \"%s\": %s", want ? want : "", text);
	free(text);
}

/* read_file link: link -> ok.txt when decided, -> secret.txt when opened */
static void test_read_symlink_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	link_to("ok.txt", "link");
	swap none = {0};
	json_t *env = call(g, "read_file", json_pack("{s:s}", "path", "link"), &none);
	assert_int_equal(none.asked, 1);
	assert_ok(env, "fine");
	json_decref(env);

	swap s = {.link = "link", .target = "secret.txt"};
	env = call(g, "read_file", json_pack("{s:s, s:i}", "path", "link", "limit", 5), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	/* asked again, it is judged as it now is */
	env = call(g, "read_file", json_pack("{s:s, s:i}", "path", "link", "limit", 6), &none);
	assert_string_equal(status(env), "denied");
	json_decref(env);
	tg_gate_close(g);
}

/* read_file dl/x.txt: the directory link dl -> ok swapped to -> secret */
static void test_read_parent_link_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	link_to("ok", "dl");
	swap s = {.link = "dl", .target = "secret"};
	json_t *env = call(g, "read_file", json_pack("{s:s}", "path", "dl/x.txt"), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	tg_gate_close(g);
}

/* read_file d/x.txt: the real directory d renamed aside and a link to
 * secret put in its place */
static void test_read_parent_renamed(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	swap none = {0};
	json_t *env = call(g, "read_file", json_pack("{s:s}", "path", "d/x.txt"), &none);
	assert_ok(env, "plain");
	json_decref(env);

	swap s = {.from = "d", .link = "d", .target = "secret"};
	env = call(g, "read_file", json_pack("{s:s, s:i}", "path", "d/x.txt", "limit", 3), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	tg_gate_close(g);
}

/* list_dir dl: dl -> ok swapped to -> secret */
static void test_list_dir_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	link_to("ok", "dl");
	swap s = {.link = "dl", .target = "secret"};
	json_t *env = call(g, "list_dir", json_pack("{s:s}", "path", "dl"), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	char *text = json_dumps(env, JSON_COMPACT);
	assert_null(strstr(text, "x.txt"));
	free(text);
	json_decref(env);
	tg_gate_close(g);
}

/* search_files on link (a file) and on dl (a directory), swapped */
static void test_search_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	link_to("ok.txt", "link");
	link_to("ok", "dl");
	swap s = {.link = "link", .target = "secret.txt"};
	json_t *env = call(g, "search_files",
	                   json_pack("{s:s, s:s}", "pattern", "TOKEN", "path", "link"), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	swap t = {.link = "dl", .target = "secret"};
	env = call(g, "search_files", json_pack("{s:s, s:s}", "pattern", "TOKEN", "path", "dl"), &t);
	assert_int_equal(t.asked, 1);
	assert_changed(env);
	json_decref(env);
	tg_gate_close(g);
}

/* write_file dl/new.txt: dl -> ok swapped to -> secret; and the same
 * into a directory that does not exist yet (its parents are made) */
static void test_write_parent_link_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	link_to("ok", "dl");
	swap none = {0};
	json_t *env = call(g, "write_file",
	                   json_pack("{s:s, s:s}", "path", "dl/first.txt", "content", "a\n"), &none);
	assert_ok(env, NULL);
	assert_true(exists("ok/first.txt"));
	json_decref(env);
	env = call(g, "write_file",
	           json_pack("{s:s, s:s}", "path", "dl/n1/n2/f.txt", "content", "a\n"), &none);
	assert_ok(env, NULL);
	assert_true(exists("ok/n1/n2/f.txt"));
	json_decref(env);

	swap s = {.link = "dl", .target = "secret"};
	env = call(g, "write_file", json_pack("{s:s, s:s}", "path", "dl/new.txt", "content", "x\n"),
	           &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	assert_false(exists("secret/new.txt"));

	swap t = {.link = "dl", .target = "secret"};
	char p[256];
	wpath(p, sizeof p, "dl");
	assert_int_equal(unlink(p), 0);
	link_to("ok", "dl");
	env = call(g, "write_file",
	           json_pack("{s:s, s:s}", "path", "dl/m1/m2/f.txt", "content", "x\n"), &t);
	assert_int_equal(t.asked, 1);
	assert_changed(env);
	json_decref(env);
	assert_false(exists("secret/m1"));
	tg_gate_close(g);
}

/* write_file d/new.txt: the real directory d renamed aside, a link to
 * secret in its place */
static void test_write_parent_renamed(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	swap s = {.from = "d", .link = "d", .target = "secret"};
	json_t *env = call(g, "write_file",
	                   json_pack("{s:s, s:s}", "path", "d/new.txt", "content", "x\n"), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	assert_false(exists("secret/new.txt"));
	assert_false(exists("d.old/new.txt"));
	tg_gate_close(g);
}

/* apply_patch through dl: dl -> ok swapped to -> secret (an add; an
 * update of a file whose lines the attacker knows) */
static void test_patch_parent_link_swapped(void **state)
{
	(void)state;
	tg_gate *g = open_gate();
	char p[256], buf[64] = "";
	link_to("ok", "dl");
	const char *add = "*** Begin Patch\n*** Add File: dl/added.txt\n+new\n*** End Patch\n";
	const char *upd = "*** Begin Patch\n*** Update File: dl/x.txt\n@@\n-TOKEN=hidden too\n"
	                  "+patched\n*** End Patch\n";
	swap s = {.link = "dl", .target = "secret"};
	json_t *env = call(g, "apply_patch", json_pack("{s:s}", "patch", add), &s);
	assert_int_equal(s.asked, 1);
	assert_changed(env);
	json_decref(env);
	assert_false(exists("secret/added.txt"));

	wpath(p, sizeof p, "dl");
	assert_int_equal(unlink(p), 0);
	link_to("ok", "dl");
	swap t = {.link = "dl", .target = "secret"};
	env = call(g, "apply_patch", json_pack("{s:s}", "patch", upd), &t);
	assert_int_equal(t.asked, 1);
	assert_changed(env);
	json_decref(env);
	wpath(p, sizeof p, "secret/x.txt");
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "TOKEN=hidden too\n");

	/* unswapped, the add lands in ok/ */
	wpath(p, sizeof p, "dl");
	assert_int_equal(unlink(p), 0);
	link_to("ok", "dl");
	swap none = {0};
	env = call(g, "apply_patch", json_pack("{s:s}", "patch", add), &none);
	assert_ok(env, NULL);
	json_decref(env);
	assert_true(exists("ok/added.txt"));
	tg_gate_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_symlink_swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_parent_link_swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_parent_renamed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_dir_swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search_swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_parent_link_swapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_parent_renamed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_patch_parent_link_swapped, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
