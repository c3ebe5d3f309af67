/*
 * test_read_rules.c — read rules on what a shell command reads (decide.c)
 * and the paths a sandbox hides for them (readmask.c, exec/sbmask.c).
 *
 * A workspace with .env, sub/.env, secrets/key, notes/private.txt and a
 * README; rules deny reading the first three and ask before the fourth.
 * Each command line is decided as a dry run (nothing runs): the decision
 * and the rule that made it.  Then the mask paths, for a call and with the
 * ask rules left out, and the cache's answer after a change.
 *
 * Owns: its temporary workspace.  Must not: run a command.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "gate/gate.h"
#include "exec/sbmask.h"

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

static void dir(const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	(void)state;
	strcpy(ws, "/tmp/tg-readrules.XXXXXX");
	assert_non_null(mkdtemp(ws));
	dir("sub");
	dir("secrets");
	dir("notes");
	dir("src");
	put(".env", "TOKEN=x\n");
	put("sub/.env", "TOKEN=y\n");
	put("secrets/key", "k\n");
	put("notes/private.txt", "p\n");
	put("README", "hello\n");
	put("src/a.c", "int a;\n");
	put("toolgate.yaml",
	    "mode: default\n"
	    "approval: on-request\n"
	    "permissions:\n"
	    "  deny: [\"read_file(./.env)\", \"read_file(**/.env)\", \"read_file(./secrets/**)\"]\n"
	    "  ask: [\"read_file(./notes/private.txt)\"]\n");
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

static tg_gate *open_gate(const char *mode)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0, .mode = mode};
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = tg_gate_open(&o, &g, &err);
	if (rc)
		fail_msg("open: %s", err);
	return g;
}

/* The decision and rule of a dry run of the shell tool. */
static void decided(tg_gate *g, const char *cmd, const char *workdir, char *decision,
                    char *rule, size_t cap)
{
	json_t *args = workdir ? json_pack("{s:s, s:s}", "command", cmd, "workdir", workdir)
	                       : json_pack("{s:s}", "command", cmd);
	char *text = json_dumps(args, JSON_COMPACT);
	tg_request rq = {.tool = "shell", .args = text, .dry_run = 1};
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
	json_decref(args);
	free(text);
	tg_result_free(r);
}

typedef struct rr_case {
	const char *cmd;
	const char *workdir;
	const char *decision;
	const char *rule;      /* a prefix of the rule */
} rr_case;

static const rr_case cases[] = {
	/* controls */
	{ "cat README", NULL, "allow", "mode default" },
	{ "grep -rn int src", NULL, "allow", "mode default" },
	{ "grep -r TOKEN .", NULL, "allow", "mode default" },      /* the sandbox hides */
	{ "ls", NULL, "allow", "mode default" },
	{ "cat src/*.c", NULL, "allow", "mode default" },
	{ "echo .env", NULL, "allow", "mode default" },
	{ "grep .env README", NULL, "allow", "mode default" },      /* a pattern, not a file */
	{ "git status", NULL, "allow", "mode default" },
	{ "cat $TMPDIR/x", NULL, "allow", "mode default" },         /* a private directory */
	{ "cat $HOME/x", NULL, "allow", "mode default" },
	/* deny rules hold for the files a read-only command names */
	{ "cat .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat ./.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "head -c 10 ./.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat sub/../.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat src/../.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "tail -n1 sub/.env", NULL, "deny", "deny: read_file(**/.env)" },
	{ "cat .env", "sub", "deny", "deny: read_file(**/.env)" },
	{ "cat ../.env", "sub", "deny", "deny: read_file(./.env)" },
	{ "cd sub && cat ../.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cd secrets; cat key", NULL, "deny", "deny: read_file(./secrets/**)" },
	{ "cat secrets/key", NULL, "deny", "deny: read_file(./secrets/**)" },
	{ "ls secrets", NULL, "deny", "deny: read_file(./secrets/**)" },
	{ "find secrets -type f", NULL, "deny", "deny: read_file(./secrets/**)" },
	{ "cat < .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "wc -l README .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "grep TOKEN README .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "sed -n 1p .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "git show HEAD:.env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat .e*", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat sec*/*", NULL, "deny", "deny: read_file(./secrets/**)" },
	{ "cat README; cat .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "timeout 5 cat .env", NULL, "deny", "deny: read_file(./.env)" },
	{ "cat .toolgate/ledger.db", NULL, "deny", "protected path" },
	/* ask rules ask */
	{ "cat notes/private.txt", NULL, "ask", "ask: read_file(./notes/private.txt)" },
	{ "cd notes && head private.txt", NULL, "ask", "ask: read_file(./notes/private.txt)" },
	/* what cannot be told asks */
	{ "cat $F", NULL, "ask", "" },
	{ "cd $D && cat x", NULL, "ask", "" },
	{ "cd - && cat x", NULL, "ask", "read rules: which files" },
};

static void test_decisions(void **state)
{
	(void)state;
	char cwd[256];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(ws), 0);
	tg_gate *g = open_gate(NULL);
	char decision[512], rule[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const rr_case *c = &cases[i];
		decided(g, c->cmd, c->workdir, decision, rule, sizeof decision);
		if (strcmp(decision, c->decision) || strncmp(rule, c->rule, strlen(c->rule)))
			fail_msg("%s (workdir %s): got %s \"%s\", expected %s \"%s\"", c->cmd,
			         c->workdir ? c->workdir : ".", decision, rule, c->decision, c->rule);
	}
	tg_gate_close(g);

	/* deny rules hold in bypassPermissions; ask rules still ask */
	g = open_gate("bypassPermissions");
	decided(g, "cat .env", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "deny");
	decided(g, "cat notes/private.txt", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "ask");
	decided(g, "python3 -c \"print(open('.env').read())\"", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "allow");      /* the sandbox's to stop */
	tg_gate_close(g);

	/* no sandbox to hide what lies below: a recursive read that reaches a
	 * rule asks */
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	FILE *f = fopen(cfg, "a");
	fputs("sandbox: danger-full-access\n", f);
	fclose(f);
	g = open_gate(NULL);
	decided(g, "grep -r TOKEN .", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "ask");
	assert_non_null(strstr(rule, "no sandbox hides it"));
	decided(g, "grep -r int src", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "ask");        /* a .env may lie below src/ too */
	decided(g, "cat src/a.c", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "allow");
	decided(g, "cat .env", NULL, decision, rule, sizeof decision);
	assert_string_equal(decision, "deny");
	tg_gate_close(g);
	assert_int_equal(chdir(cwd), 0);
}

static int has(const tgi_strv *v, const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], p))
			return 1;
	return 0;
}

static void test_masks(void **state)
{
	(void)state;
	tg_gate *g = open_gate(NULL);
	tgi_strv m = {0};
	char err[512];
	assert_int_equal(tgi_read_masks_for(g, NULL, 1, &m, err, sizeof err), 0);
	assert_true(has(&m, ".env"));
	assert_true(has(&m, "sub/.env"));
	assert_true(has(&m, "secrets"));             /* the directory, whole */
	assert_true(has(&m, "notes/private.txt"));
	assert_false(has(&m, "README"));
	assert_int_equal(m.n, 4);
	tgi_strv_free(&m);

	/* without the ask rules (a person approved the call) */
	assert_int_equal(tgi_read_masks_for(g, NULL, 0, &m, err, sizeof err), 0);
	assert_false(has(&m, "notes/private.txt"));
	assert_int_equal(m.n, 3);
	tgi_strv_free(&m);

	/* a new match deep down is found: the cache sees the directory change */
	dir("src/deep");
	put("src/deep/.env", "z\n");
	assert_int_equal(tgi_read_masks_for(g, NULL, 0, &m, err, sizeof err), 0);
	assert_true(has(&m, "src/deep/.env"));
	tgi_strv_free(&m);

	/* doctor's report names the paths and the walk */
	json_t *rep = tgi_read_masks_report(g, NULL);
	assert_int_equal(json_array_size(json_object_get(rep, "hidden")), 5);
	assert_non_null(json_object_get(rep, "walk"));
	json_decref(rep);
	tg_gate_close(g);
}

static int pick_env(void *arg, const char *rel, int is_dir)
{
	(void)arg, (void)is_dir;
	const char *base = strrchr(rel, '/');
	return !strcmp(base ? base + 1 : rel, ".env");
}

/* The walk's cache: a second find reads no directory; a change is seen. */
static void test_cache(void **state)
{
	(void)state;
	tgi_strv out = {0};
	tgi_sbmask_stats st;
	char err[256];
	const char *starts[] = {""};
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k1", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_false(st.cached);
	size_t n = out.n;
	assert_true(n >= 2);
	tgi_strv_free(&out);
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k1", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_true(st.cached);
	assert_int_equal(out.n, n);
	tgi_strv_free(&out);
	put("notes/.env", "n\n");
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k1", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_int_equal(st.cached, 3);          /* notes/ read again, nothing else */
	assert_int_equal(st.dirs, 1);
	assert_int_equal(out.n, n + 1);
	tgi_strv_free(&out);
	/* a new directory with a .env in it, a .env removed: found, dropped */
	dir("notes/deeper");
	dir("notes/deeper/more");
	put("notes/deeper/more/.env", "m\n");
	char gone[128];
	snprintf(gone, sizeof gone, "%s/sub/.env", ws);
	assert_int_equal(unlink(gone), 0);
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k1", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_int_equal(st.cached, 3);
	assert_int_equal(out.n, n + 1);
	int deep = 0, sub = 0;
	for (size_t i = 0; i < out.n; i++) {
		deep |= !strcmp(out.v[i], "notes/deeper/more/.env");
		sub |= !strcmp(out.v[i], "sub/.env");
	}
	assert_true(deep && !sub);
	tgi_strv_free(&out);
	/* a directory gone: everything walked again */
	snprintf(gone, sizeof gone, "rm -r '%s/notes/deeper'", ws);
	assert_int_equal(system(gone), 0);
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k1", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_int_equal(st.cached, 0);
	assert_int_equal(out.n, n);
	tgi_strv_free(&out);
	/* another key is another question */
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, "k2", -1, &out, &st, err,
	                                 sizeof err), 0);
	assert_false(st.cached);
	tgi_strv_free(&out);
	assert_int_equal(tgi_sbmask_find("/nonexistent-tg", starts, 1, pick_env, NULL, NULL, -1, &out,
	                                 NULL, err, sizeof err), -1);
}

static size_t find_env(const char *key, int store_fd, int *cached)
{
	tgi_strv out = {0};
	tgi_sbmask_stats st;
	char err[256];
	const char *starts[] = {""};
	assert_int_equal(tgi_sbmask_find(ws, starts, 1, pick_env, NULL, key, store_fd, &out, &st,
	                                 err, sizeof err), 0);
	size_t n = out.n;
	tgi_strv_free(&out);
	*cached = st.cached;
	return n;
}

/* The cache kept in a directory, for the next process; an mtime set back
 * does not fool it (the ctime moved); a broken file is a miss. */
static void test_store(void **state)
{
	(void)state;
	/* outside the workspace, as .toolgate is outside the walk */
	char a[] = "/tmp/tg-rr-store.XXXXXX", b[] = "/tmp/tg-rr-store.XXXXXX";
	int cached;
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	int fa = open(a, O_PATH | O_DIRECTORY), fb = open(b, O_PATH | O_DIRECTORY);
	assert_true(fa >= 0 && fb >= 0);
	size_t n = find_env("s1", fa, &cached);
	assert_int_equal(cached, 0);
	assert_int_equal(find_env("s2", fb, &cached), n);   /* the memory now holds s2 */
	assert_int_equal(find_env("s1", fa, &cached), n);
	assert_int_equal(cached, 2);                         /* from the file */
	assert_int_equal(find_env("s1", fa, &cached), n);
	assert_int_equal(cached, 1);                         /* from memory */

	/* a new .env, the directory's mtime put back: still seen */
	char d[128];
	struct stat st;
	snprintf(d, sizeof d, "%s/src", ws);
	assert_int_equal(stat(d, &st), 0);
	put("src/.env", "s\n");
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	assert_int_equal(utimensat(AT_FDCWD, d, ts, 0), 0);
	assert_int_equal(find_env("s1", fa, &cached), n + 1);
	assert_int_equal(cached, 3);                         /* src/ read again */

	/* a broken file is a miss */
	find_env("s2", fb, &cached);
	DIR *dp = opendir(a);
	int broken = 0;
	for (struct dirent *e; dp && (e = readdir(dp));) {
		if (strncmp(e->d_name, "readmask-", 9))
			continue;
		char f[512];
		snprintf(f, sizeof f, "%s/%s", a, e->d_name);
		FILE *fp = fopen(f, "w");
		fputs("{\"v\":1,\"dirs\":[[1]]", fp);
		fclose(fp);
		broken++;
	}
	closedir(dp);
	assert_int_equal(broken, 1);
	assert_int_equal(find_env("s1", fa, &cached), n + 1);
	assert_int_equal(cached, 0);
	close(fa);
	close(fb);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", a, b);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_decisions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_masks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
