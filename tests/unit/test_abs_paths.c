/*
 * test_abs_paths.c — absolute paths inside the workspace (DESIGN §2):
 * the workspace's spellings (tgi_workspace_spelled, cfg->workspace_given),
 * and calls judged through validate and decide on a gate whose workspace
 * is reached through a symlink: an absolute path inside it, through either
 * spelling, is rewritten into the relative one in the args (each file tool,
 * every header of a patch, shell's workdir) before policy; one outside is
 * denied with the root named, never taken for a relative one; a tool with
 * paths() but no repath() is told the relative path to use.
 *
 * Owns: the temporary directories it makes.  Must not: run a tool (calls
 * are judged, not made) or touch anything outside its directories.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "gate/gate.h"
#include "registry.h"
#include "toolgate.h"
#include "util/fs.h"
#include "util/util.h"

static char dir[64];              /* the test's directory */
static char real[PATH_MAX];       /* <dir>/real, resolved: the workspace */
static char link_[PATH_MAX];      /* <dir>/link -> real: how it is configured */
static char home[PATH_MAX];       /* the current directory before a test */

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/%s", real, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char p[PATH_MAX];
	(void)state;
	strcpy(dir, "/tmp/tg-abs.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof p, "%s/real", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_non_null(realpath(p, real));
	snprintf(p, sizeof p, "%s/real/src", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/real2", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(link_, sizeof link_, "%s/link", dir);
	assert_int_equal(symlink("real", link_), 0);
	put("README.md", "hello\n");
	put("src/a.c", "int a;\n");
	assert_non_null(getcwd(home, sizeof home));
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	assert_int_equal(chdir(home), 0);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static tg_gate *open_gate(const char *workspace)
{
	tg_options o = {.workspace = workspace, .sync_full = 0, .mode = "bypassPermissions"};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) != 0)
		fail_msg("open: %s", err);
	return g;
}

/* ---- the workspace's spellings ---- */

static void spelled_is(const char *given, const char *want)
{
	char *s = tgi_workspace_spelled(given, real);
	if (!want ? s != NULL : !s || strcmp(s, want) != 0)
		fail_msg("\"%s\" spelled \"%s\", wanted \"%s\"", given, s ? s : "(null)",
		         want ? want : "(null)");
	free(s);
}

static void test_spelled(void **state)
{
	char p[PATH_MAX + 64];
	(void)state;
	spelled_is(link_, link_);
	spelled_is(real, NULL);                          /* the real path itself: no alias */
	snprintf(p, sizeof p, "%s//./link/", dir);
	spelled_is(p, link_);
	snprintf(p, sizeof p, "%s/link/../link", dir);   /* ".." taken as a shell's cd takes it */
	spelled_is(p, link_);
	snprintf(p, sizeof p, "%s/real2", dir);
	spelled_is(p, NULL);                             /* another directory */
	snprintf(p, sizeof p, "%s/missing", dir);
	spelled_is(p, NULL);
	snprintf(p, sizeof p, "%s/real/README.md", dir);
	spelled_is(p, NULL);                             /* not a directory */
	spelled_is(NULL, NULL);

	/* relative: against the current directory as the shell names it */
	assert_int_equal(chdir(dir), 0);
	setenv("PWD", dir, 1);
	spelled_is("link", link_);
	spelled_is("./link/", link_);
	assert_int_equal(chdir(link_), 0);
	setenv("PWD", link_, 1);
	spelled_is(".", link_);
	setenv("PWD", "/nonexistent", 1);                /* a stale $PWD: getcwd's answer */
	spelled_is(".", NULL);
	unsetenv("PWD");
}

static void test_config_spelling(void **state)
{
	(void)state;
	/* --workspace through the symlink */
	tg_gate *g = open_gate(link_);
	assert_string_equal(g->cfg->workspace, real);
	assert_string_equal(g->cfg->workspace_given, link_);
	tg_gate_close(g);
	/* through the real path: nothing else to accept */
	g = open_gate(real);
	assert_null(g->cfg->workspace_given);
	tg_gate_close(g);
	/* the built-in default: the current directory, reached through the symlink */
	assert_int_equal(chdir(link_), 0);
	setenv("PWD", link_, 1);
	g = open_gate(NULL);
	assert_string_equal(g->cfg->workspace, real);
	assert_string_equal(g->cfg->workspace_given, link_);
	tg_gate_close(g);
	/* a configured `workspace:` through the symlink, relative to the file */
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/toolgate.yaml", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("workspace: link\n", f);
	fclose(f);
	tg_options o = {.config_path = p, .sync_full = 0};
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) != 0)
		fail_msg("open: %s", err);
	assert_string_equal(g->cfg->workspace, real);
	assert_string_equal(g->cfg->workspace_given, link_);
	tg_gate_close(g);
	unsetenv("PWD");
}

/* ---- calls judged ---- */

/* A call judged (decode, validate, identify, decide) on g, left in *c
 * (the caller drops it). */
static tgi_verdict judge(tg_gate *g, tgi_call *c, const char *tool, const char *args)
{
	tg_request rq = {.tool = tool, .args = args, .dry_run = 1};
	tgi_call_begin(c, g, &rq);
	return tgi_call_judge(c);
}

static const char *arg(const tgi_call *c, const char *key)
{
	return json_string_value(json_object_get(c->args, key));
}

/* {"path": "<prefix>/<rest>"} as JSON text, with what else tool needs. */
static char *tool_args(const char *tool, const char *prefix, const char *rest)
{
	json_t *a = json_pack("{s:s++}", "path", prefix, *rest ? "/" : "", rest);
	if (!strcmp(tool, "write_file"))
		json_object_set_new(a, "content", json_string("x"));
	if (!strcmp(tool, "search_files"))
		json_object_set_new(a, "pattern", json_string("x"));
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static void inside(tg_gate *g, const char *tool, const char *prefix, const char *rest,
                   const char *want)
{
	tgi_call c;
	char *a = tool_args(tool, prefix, rest);
	tgi_verdict v = judge(g, &c, tool, a);
	if (v != TGI_NEXT)
		fail_msg("%s %s: %s", tool, a, c.message);
	assert_string_equal(arg(&c, "path"), want);
	assert_int_equal(c.npaths, 1);
	assert_string_equal(c.paths[0], want);
	assert_string_equal(c.outside, "");
	assert_null(strstr(c.args_canon, dir));          /* what the ledger would keep */
	tgi_call_drop(&c);
	free(a);
}

static void outside(tg_gate *g, const char *tool, const char *args, const char *shown)
{
	tgi_call c;
	char want[PATH_MAX + 64];
	assert_int_equal(judge(g, &c, tool, args), TGI_STOP);
	assert_int_equal(c.status, TG_DENIED);
	assert_int_equal(c.kind, TG_ERR_NOT_PERMITTED);
	assert_string_equal(c.error_rule, "confinement: outside the workspace");
	snprintf(want, sizeof want, "path \"%s\" is outside the workspace root %s;", shown, link_);
	if (strncmp(c.message, want, strlen(want)) != 0)
		fail_msg("message \"%s\", wanted it to start \"%s\"", c.message, want);
	tgi_call_drop(&c);
}

static void test_file_tools(void **state)
{
	char p[PATH_MAX + 64];
	(void)state;
	tg_gate *g = open_gate(link_);
	static const char *const tools[] = {"read_file", "write_file", "list_dir", "search_files"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(tools); i++) {
		const char *file = !strcmp(tools[i], "list_dir") ? "src" : "src/a.c";
		char *a;
		inside(g, tools[i], link_, file, file);
		inside(g, tools[i], real, file, file);
		snprintf(p, sizeof p, "%s//./", link_);
		inside(g, tools[i], p, file, file);
		inside(g, tools[i], real, "src/../README.md", "src/../README.md");
		if (strcmp(tools[i], "write_file") != 0 && strcmp(tools[i], "read_file") != 0) {
			inside(g, tools[i], link_, "", ".");     /* the root itself */
			inside(g, tools[i], real, "", ".");
		}
		/* outside: elsewhere, a sibling sharing the root's prefix */
		a = tool_args(tools[i], "/etc", "passwd");
		outside(g, tools[i], a, "/etc/passwd");
		free(a);
		snprintf(p, sizeof p, "%s/real2", dir);
		a = tool_args(tools[i], p, "x");
		snprintf(p, sizeof p, "%s/real2/x", dir);
		outside(g, tools[i], a, p);
		free(a);
		snprintf(p, sizeof p, "%s2", link_);
		a = tool_args(tools[i], p, "x");
		snprintf(p, sizeof p, "%s2/x", link_);
		outside(g, tools[i], a, p);
		free(a);
		/* ".." out of an inside path: relative, then denied by confinement */
		tgi_call c;
		a = tool_args(tools[i], link_, "../real2/x");
		assert_int_equal(judge(g, &c, tools[i], a), TGI_STOP);
		assert_string_equal(arg(&c, "path"), "../real2/x");
		assert_string_equal(c.error_rule, "confinement: outside the workspace");
		assert_non_null(strstr(c.message, "leaves the workspace"));
		tgi_call_drop(&c);
		free(a);
	}
	/* a control character is not echoed */
	outside(g, "read_file", "{\"path\":\"/etc/\\u001b[2Jx\"}", "/etc/ [2Jx");
	tg_gate_close(g);
}

static void test_apply_patch(void **state)
{
	(void)state;
	tg_gate *g = open_gate(link_);
	tgi_call c;
	char text[8 * PATH_MAX];
	snprintf(text, sizeof text,
	         "*** Begin Patch\n*** Add File: %s/src/n.c\n+n\n*** Delete File: %s/README.md\n"
	         "*** Update File: %s/src/a.c\n*** Move to: %s/src/b.c\n@@\n-int a;\n+int b;\n"
	         "*** End Patch", link_, real, link_, real);
	json_t *a = json_pack("{s:s}", "patch", text);
	char *args = json_dumps(a, JSON_COMPACT);
	assert_int_equal(judge(g, &c, "apply_patch", args), TGI_NEXT);
	assert_string_equal(arg(&c, "patch"),
	                    "*** Begin Patch\n*** Add File: src/n.c\n+n\n*** Delete File: README.md\n"
	                    "*** Update File: src/a.c\n*** Move to: src/b.c\n@@\n-int a;\n+int b;\n"
	                    "*** End Patch");
	assert_int_equal(c.npaths, 4);
	assert_string_equal(c.paths[0], "src/n.c");
	assert_string_equal(c.paths[3], "src/b.c");
	assert_true(c.contract & TGI_T_DESTRUCTIVE);     /* the Delete is still seen */
	tgi_call_drop(&c);
	free(args);
	json_decref(a);

	/* one path outside: the whole patch is denied, naming it */
	snprintf(text, sizeof text, "*** Begin Patch\n*** Add File: %s/src/n.c\n+n\n"
	         "*** Update File: src/a.c\n*** Move to: /tmp/b.c\n@@\n-int a;\n+int b;\n"
	         "*** End Patch", link_);
	a = json_pack("{s:s}", "patch", text);
	args = json_dumps(a, JSON_COMPACT);
	outside(g, "apply_patch", args, "/tmp/b.c");
	free(args);
	json_decref(a);
	tg_gate_close(g);
}

static void test_shell_workdir(void **state)
{
	(void)state;
	tg_gate *g = open_gate(link_);
	tgi_call c;
	char args[2 * PATH_MAX];
	snprintf(args, sizeof args, "{\"command\":\"ls\",\"workdir\":\"%s/src\"}", real);
	judge(g, &c, "shell", args);          /* decide may refuse for want of a sandbox */
	assert_string_equal(arg(&c, "workdir"), "src");
	assert_string_equal(c.outside, "");
	assert_null(strstr(c.args_canon, dir));
	tgi_call_drop(&c);
	outside(g, "shell", "{\"command\":\"ls\",\"workdir\":\"/etc\"}", "/etc");
	tg_gate_close(g);
}

/* A tool with paths() but no repath(): its absolute path inside cannot be
 * rewritten, so the call is refused with the relative path to use. */
static int nothing_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	(void)ctx, (void)args;
	out->output = json_null();
	return 0;
}

static const tgi_tool plain_row = {
	.name = "plain_read",
	.description = "Reads a path, and has no repath().",
	.category = "fs",
	.flags = TGI_T_READ_ONLY,
	.paths = tgi_paths_required_path,
	.handler = nothing_run,
};

static void test_no_repath(void **state)
{
	(void)state;
	tg_gate *g = open_gate(link_);
	json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
	                            "\"string\"}},\"required\":[\"path\"]}", 0, NULL);
	char err[256];
	assert_int_equal(tgi_registry_put(g->reg, &plain_row, schema, NULL, NULL, 1, err,
	                                  sizeof err), 0);
	tgi_call c;
	char *a = tool_args("plain_read", link_, "src/a.c");
	assert_int_equal(judge(g, &c, "plain_read", a), TGI_STOP);
	assert_int_equal(c.status, TG_INVALID);
	char want[PATH_MAX * 3];
	snprintf(want, sizeof want, "path \"%s/src/a.c\" is absolute; use \"src/a.c\", a path "
	         "relative to the workspace root %s", link_, link_);
	assert_string_equal(c.message, want);
	tgi_call_drop(&c);
	free(a);
	outside(g, "plain_read", "{\"path\":\"/etc/passwd\"}", "/etc/passwd");
	a = tool_args("plain_read", "", "src/a.c");   /* "/src/a.c": elsewhere, not "src/a.c" */
	outside(g, "plain_read", a, "/src/a.c");
	free(a);
	json_decref(schema);
	tg_gate_close(g);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_spelled),
		T(test_config_spelling),
		T(test_file_tools),
		T(test_apply_patch),
		T(test_shell_workdir),
		T(test_no_repath),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
