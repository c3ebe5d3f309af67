/*
 * test_config.c — the configuration (src/config.c): discovery order,
 * built-in defaults, every key and enum, relative paths, and a clear
 * file:line:col error for each kind of bad file (tests/data/config/bad,
 * one file per case, the expected error in its first line).
 *
 * Owns: the temporary directories it makes.  Must not: depend on the
 * network or on files outside the repository.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "toolgate.h"
#include "registry.h"
#include "util/util.h"

static char g_root[PATH_MAX]; /* the repository, absolute */

/* ---- helpers ---- */

typedef struct fixture {
	char tmp[PATH_MAX];   /* a fresh directory, the cwd during the test */
	char old[PATH_MAX];
} fixture;

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int setup(void **state)
{
	fixture *fx = tgi_xcalloc(1, sizeof *fx);
	const char *t = getenv("TMPDIR");
	snprintf(fx->tmp, sizeof fx->tmp, "%s/tg-config-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(fx->tmp) || !getcwd(fx->old, sizeof fx->old) || chdir(fx->tmp) < 0)
		return -1;
	/* compare against the resolved name (TMPDIR may be a symlink) */
	char *real = realpath(fx->tmp, NULL);
	snprintf(fx->tmp, sizeof fx->tmp, "%s", real);
	free(real);
	unsetenv("TOOLGATE_CONFIG");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	int rc = chdir(fx->old);
	nftw(fx->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unsetenv("TOOLGATE_CONFIG");
	free(fx);
	return rc;
}

/* Load path (NULL: discovery); fail the test with the error if it fails. */
static tgi_config *load_ok(const char *path)
{
	char err[1024] = "";
	tgi_config *c = NULL;
	if (tgi_config_load(path, &c, err, sizeof err) < 0)
		fail_msg("loading %s failed: %s", path ? path : "(discovery)", err);
	assert_non_null(c);
	return c;
}

/* Load path, expect failure with an error that starts with want. */
static void load_err(const char *path, const char *want)
{
	char err[1024] = "";
	tgi_config *c = (tgi_config *)1;
	if (tgi_config_load(path, &c, err, sizeof err) == 0) {
		tgi_config_free(c);
		fail_msg("loading %s succeeded; want error %s", path ? path : "(discovery)", want);
	}
	assert_null(c);
	if (strncmp(err, want, strlen(want)))
		fail_msg("error \"%s\"\n  want it to start with \"%s\"", err, want);
}

/* Write text to ./toolgate.yaml and load it; expect the error
 * "toolgate.yaml:" + want... */
static void yaml_err(const char *text, const char *want)
{
	char full[1024];
	write_text("toolgate.yaml", text);
	snprintf(full, sizeof full, "toolgate.yaml:%s", want);
	load_err("toolgate.yaml", full);
}

static tgi_config *yaml_ok(const char *text)
{
	write_text("toolgate.yaml", text);
	return load_ok("toolgate.yaml");
}

static void assert_strv(const tgi_strv *s, const char *const *want, size_t n)
{
	assert_int_equal(s->n, n);
	assert_non_null(s->v);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s->v[i], want[i]);
	assert_null(s->v[n]);
}

#define STRV(s, ...) do { \
	const char *const w_[] = { __VA_ARGS__ }; \
	assert_strv((s), w_, TGI_ARRAY_LEN(w_)); \
} while (0)

static void assert_empty_strv(const tgi_strv *s)
{
	assert_int_equal(s->n, 0);
	assert_non_null(s->v);
	assert_null(s->v[0]);
}

static const tgi_profile_cfg *profile(const tgi_config *c, const char *name)
{
	for (size_t i = 0; i < c->nprofiles; i++)
		if (!strcmp(c->profiles[i].name, name))
			return &c->profiles[i];
	fail_msg("no profile %s", name);
	return NULL;
}

static const tgi_tool_cfg *tool(const tgi_config *c, const char *name)
{
	for (size_t i = 0; i < c->ntools; i++)
		if (!strcmp(c->tools[i].name, name))
			return &c->tools[i];
	fail_msg("no tool %s", name);
	return NULL;
}

static void assert_builtin_profiles(const tgi_config *c)
{
	assert_true(c->nprofiles >= 4);
	assert_string_equal(c->profiles[0].name, "minimal");
	STRV(&c->profiles[0].categories, "fs");
	assert_int_equal(c->profiles[0].read_only_only, 1);
	assert_string_equal(c->profiles[1].name, "coding");
	assert_string_equal(c->profiles[2].name, "messaging");
	STRV(&c->profiles[2].categories, "messaging", "web", "memory");
	assert_int_equal(c->profiles[2].read_only_only, 0);
	assert_string_equal(c->profiles[3].name, "full");
	STRV(&c->profiles[3].categories, "*");
}

/* ---- defaults and discovery ---- */

static void test_defaults_without_a_file(void **state)
{
	fixture *fx = *state;
	char want[PATH_MAX + 32];
	tgi_config *c = load_ok(NULL);

	assert_null(c->path);
	assert_null(c->file);
	assert_null(c->srcmap);
	assert_string_equal(c->dir, fx->tmp);
	assert_string_equal(c->workspace, fx->tmp);
	snprintf(want, sizeof want, "%s/.toolgate/ledger.db", fx->tmp);
	assert_string_equal(c->store, want);
	assert_string_equal(c->profile, "coding");
	assert_int_equal(c->mode, TGI_MODE_DEFAULT);
	assert_int_equal(c->approval, TGI_APPROVAL_ASK);
	assert_int_equal(c->sandbox, TGI_SANDBOX_WORKSPACE_WRITE);
	assert_string_equal(c->default_principal, "local");
	assert_int_equal(c->nprincipals, 1);
	assert_string_equal(c->principals[0].name, "local");
	assert_empty_strv(&c->principals[0].roles);
	assert_null(c->principals[0].token_env);
	assert_int_equal(c->nroles, 0);
	assert_int_equal(c->ntools, 0);
	assert_int_equal(c->nprofiles, 4);
	assert_builtin_profiles(c);
	STRV(&c->profiles[1].categories, "fs", "runtime", "mcp");
	assert_int_equal(c->profiles[1].read_only_only, 0);
	assert_empty_strv(&c->allow);
	assert_empty_strv(&c->ask);
	assert_empty_strv(&c->deny);
	assert_empty_strv(&c->execpolicy);
	assert_int_equal(c->max_args_bytes, 1048576);
	assert_int_equal(c->max_result_chars, 50000);
	assert_int_equal(c->timeout_s, 120);
	assert_int_equal(c->assert_formats, 1);
	assert_int_equal(c->approval_ttl_s, 3600);
	assert_int_equal(c->sync_full, 0);
	assert_null(c->mcp_servers);
	assert_null(c->hooks);
	assert_null(c->loop_detection);
	assert_null(c->rate_limits);
	assert_null(c->redact);
	assert_true(json_is_object(c->root));

	char where[64];
	tgi_config_where(c, "/mode", where, sizeof where);
	assert_string_equal(where, "built-in defaults");
	tgi_config_free(c);
}

static void test_empty_file_is_all_defaults(void **state)
{
	fixture *fx = *state;
	char want[PATH_MAX + 32];
	tgi_config *c = yaml_ok("# nothing here yet\n");
	snprintf(want, sizeof want, "%s/toolgate.yaml", fx->tmp);
	assert_string_equal(c->path, want);
	assert_string_equal(c->file, "toolgate.yaml");
	assert_string_equal(c->profile, "coding");
	assert_int_equal(c->nprincipals, 1);
	assert_int_equal(c->timeout_s, 120);
	tgi_config_free(c);
}

static void test_discovery_in_the_current_directory(void **state)
{
	fixture *fx = *state;
	char want[PATH_MAX + 32];
	tgi_config *c;

	write_text("toolgate.json", "{\"mode\": \"plan\"}");
	c = load_ok(NULL);
	assert_int_equal(c->mode, TGI_MODE_PLAN);
	assert_string_equal(c->file, "toolgate.json");
	tgi_config_free(c);

	/* two configuration files: refused, never one picked over the other */
	write_text("toolgate.yml", "mode: acceptEdits\n");
	load_err(NULL, "both toolgate.yml and toolgate.json are here; keep one");
	assert_int_equal(remove("toolgate.json"), 0);
	c = load_ok(NULL);
	assert_int_equal(c->mode, TGI_MODE_ACCEPT_EDITS);
	assert_string_equal(c->file, "toolgate.yml");
	tgi_config_free(c);
	/* an empty one (all defaults) counts only alone */
	write_text("toolgate.yaml", "");
	c = load_ok(NULL);
	assert_string_equal(c->file, "toolgate.yml");
	tgi_config_free(c);
	assert_int_equal(remove("toolgate.yml"), 0);
	c = load_ok(NULL);
	assert_string_equal(c->file, "toolgate.yaml");
	assert_int_equal(c->mode, TGI_MODE_DEFAULT);
	tgi_config_free(c);

	write_text("toolgate.yaml", "mode: bypassPermissions\n");
	c = load_ok(NULL);
	assert_int_equal(c->mode, TGI_MODE_BYPASS);
	snprintf(want, sizeof want, "%s/toolgate.yaml", fx->tmp);
	assert_string_equal(c->path, want);
	tgi_config_free(c);

	/* a present but broken ./toolgate.yaml is an error, never skipped */
	write_text("toolgate.yaml", "mode: yolo\n");
	load_err(NULL, "toolgate.yaml:1:7: mode: expected one of");
	/* and so is one that is not a file */
	assert_int_equal(remove("toolgate.yaml"), 0);
	assert_int_equal(mkdir("toolgate.yaml", 0700), 0);
	load_err(NULL, "config file \"toolgate.yaml\" is not a regular file");
	assert_int_equal(rmdir("toolgate.yaml"), 0);
}

static void test_discovery_through_the_environment(void **state)
{
	fixture *fx = *state;
	char other[PATH_MAX + 32];
	tgi_config *c;

	assert_int_equal(mkdir("elsewhere", 0700), 0);
	write_text("elsewhere/mine.yaml", "mode: plan\n");
	write_text("toolgate.yaml", "mode: acceptEdits\n");

	/* $TOOLGATE_CONFIG beats ./toolgate.yaml */
	snprintf(other, sizeof other, "%s/elsewhere/mine.yaml", fx->tmp);
	setenv("TOOLGATE_CONFIG", other, 1);
	c = load_ok(NULL);
	assert_int_equal(c->mode, TGI_MODE_PLAN);
	assert_string_equal(c->path, other);
	tgi_config_free(c);

	/* relative values are relative to the current directory */
	setenv("TOOLGATE_CONFIG", "elsewhere/mine.yaml", 1);
	c = load_ok(NULL);
	assert_string_equal(c->path, other);
	assert_string_equal(c->file, "elsewhere/mine.yaml");
	tgi_config_free(c);

	/* set but empty: as if unset */
	setenv("TOOLGATE_CONFIG", "", 1);
	c = load_ok(NULL);
	assert_int_equal(c->mode, TGI_MODE_ACCEPT_EDITS);
	tgi_config_free(c);

	/* set to a missing file: an error, no fallback */
	setenv("TOOLGATE_CONFIG", "missing.yaml", 1);
	load_err(NULL, "$TOOLGATE_CONFIG names \"missing.yaml\", which does not exist");

	/* an explicit path beats the environment */
	c = load_ok("toolgate.yaml");
	assert_int_equal(c->mode, TGI_MODE_ACCEPT_EDITS);
	tgi_config_free(c);
}

static void test_explicit_path(void **state)
{
	write_text("toolgate.yaml", "mode: plan\n");
	/* a missing explicit path is an error even with ./toolgate.yaml there */
	load_err("nope.yaml", "config file \"nope.yaml\" does not exist");
	load_err("", "config file \"\" does not exist");
	load_err(".", "config file \".\" is not a regular file");
	load_err("/dev/null/x", "cannot read config file \"/dev/null/x\": not a directory");
}

static void test_file_size_cap(void **state)
{
	enum { MiB = 1 << 20 };
	char *big = tgi_xmalloc(4 * MiB + 2);
	/* exactly 4 MiB of comments: accepted */
	for (size_t i = 0; i < 4 * MiB; i += 64) {
		memset(big + i, 'x', 64);
		big[i] = '#';
		big[i + 63] = '\n';
	}
	big[4 * MiB] = '\0';
	write_text("big.yaml", big);
	tgi_config *c = load_ok("big.yaml");
	tgi_config_free(c);
	/* one byte more: refused before parsing */
	big[4 * MiB] = '\n';
	big[4 * MiB + 1] = '\0';
	write_text("big.yaml", big);
	free(big);
	load_err("big.yaml", "config file \"big.yaml\" is larger than 4 MiB");
}

static void test_nul_in_file(void **state)
{
	static const char text[] = "mode: plan\nstore: a\0b\n";
	FILE *f = fopen("toolgate.yaml", "w");
	assert_non_null(f);
	fwrite(text, 1, sizeof text - 1, f);
	fclose(f);
	load_err("toolgate.yaml", "toolgate.yaml:2:9: the text contains a NUL byte");
}

/* ---- values ---- */

static void test_every_enum_value(void **state)
{
	static const struct { const char *name; tgi_mode v; } modes[] = {
		{ "default", TGI_MODE_DEFAULT }, { "acceptEdits", TGI_MODE_ACCEPT_EDITS },
		{ "plan", TGI_MODE_PLAN }, { "bypassPermissions", TGI_MODE_BYPASS },
		{ "dryRun", TGI_MODE_DRY_RUN },
	};
	/* on-request and never, the former names (Codex's), read as ask and deny */
	static const struct { const char *name; tgi_approval v; const char *canon; } approvals[] = {
		{ "ask", TGI_APPROVAL_ASK, "ask" }, { "deny", TGI_APPROVAL_DENY, "deny" },
		{ "on-request", TGI_APPROVAL_ASK, "ask" }, { "never", TGI_APPROVAL_DENY, "deny" },
		{ "untrusted", TGI_APPROVAL_UNTRUSTED, "untrusted" },
	};
	static const struct { const char *name; tgi_sandbox v; } sandboxes[] = {
		{ "read-only", TGI_SANDBOX_READ_ONLY }, { "workspace-write", TGI_SANDBOX_WORKSPACE_WRITE },
		{ "danger-full-access", TGI_SANDBOX_FULL },
	};
	char text[256];
	tgi_config *c;

	for (size_t i = 0; i < TGI_ARRAY_LEN(modes); i++) {
		tgi_mode m = (tgi_mode)-1;
		assert_int_equal(tgi_mode_parse(modes[i].name, &m), 0);
		assert_int_equal(m, modes[i].v);
		assert_string_equal(tgi_mode_name(modes[i].v), modes[i].name);
		snprintf(text, sizeof text, "mode: %s\n", modes[i].name);
		c = yaml_ok(text);
		assert_int_equal(c->mode, modes[i].v);
		tgi_config_free(c);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(approvals); i++) {
		tgi_approval a = (tgi_approval)-1;
		assert_int_equal(tgi_approval_parse(approvals[i].name, &a), 0);
		assert_int_equal(a, approvals[i].v);
		assert_string_equal(tgi_approval_name(approvals[i].v), approvals[i].canon);
		snprintf(text, sizeof text, "approval: %s\n", approvals[i].name);
		c = yaml_ok(text);
		assert_int_equal(c->approval, approvals[i].v);
		tgi_config_free(c);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(sandboxes); i++) {
		tgi_sandbox s = (tgi_sandbox)-1;
		assert_int_equal(tgi_sandbox_parse(sandboxes[i].name, &s), 0);
		assert_int_equal(s, sandboxes[i].v);
		assert_string_equal(tgi_sandbox_name(sandboxes[i].v), sandboxes[i].name);
		snprintf(text, sizeof text, "sandbox: %s\n", sandboxes[i].name);
		c = yaml_ok(text);
		assert_int_equal(c->sandbox, sandboxes[i].v);
		tgi_config_free(c);
	}
	c = yaml_ok("ledger: {sync: full, lease_grace_s: 5}\nformats: {assert: false}\n");
	assert_int_equal(c->sync_full, 1);
	assert_int_equal(c->lease_grace_s, 5);
	assert_int_equal(c->assert_formats, 0);
	tgi_config_free(c);
	c = yaml_ok("ledger: {sync: normal}\nformats: {assert: true}\n");
	assert_int_equal(c->sync_full, 0);
	assert_int_equal(c->lease_grace_s, 60);
	assert_int_equal(c->assert_formats, 1);
	tgi_config_free(c);

	/* names are exact */
	tgi_mode m = TGI_MODE_PLAN;
	tgi_approval a = TGI_APPROVAL_DENY;
	tgi_sandbox s = TGI_SANDBOX_FULL;
	assert_int_equal(tgi_mode_parse("Plan", &m), -1);
	assert_int_equal(tgi_mode_parse("acceptedits", &m), -1);
	assert_int_equal(tgi_mode_parse("", &m), -1);
	assert_int_equal(tgi_mode_parse(NULL, &m), -1);
	assert_int_equal(m, TGI_MODE_PLAN);
	assert_int_equal(tgi_approval_parse("on_request", &a), -1);
	assert_int_equal(a, TGI_APPROVAL_DENY);
	assert_int_equal(tgi_sandbox_parse("full", &s), -1);
	assert_int_equal(s, TGI_SANDBOX_FULL);
	assert_string_equal(tgi_mode_name((tgi_mode)42), "unknown");
	assert_string_equal(tgi_approval_name((tgi_approval)42), "unknown");
	assert_string_equal(tgi_sandbox_name((tgi_sandbox)-1), "unknown");
}

static void test_limits_and_numbers(void **state)
{
	tgi_config *c = yaml_ok("limits: {max_args_bytes: 2048, max_result_chars: 0x100, timeout_s: 86400}\n"
	                        "approvals: {ttl_s: 60}\n");
	assert_int_equal(c->max_args_bytes, 2048);
	assert_int_equal(c->max_result_chars, 256);
	assert_int_equal(c->timeout_s, 86400);
	assert_int_equal(c->approval_ttl_s, 60);
	tgi_config_free(c);

	/* empty sections are empty */
	c = yaml_ok("limits:\npermissions:\nroles:\n");
	assert_int_equal(c->max_args_bytes, 1048576);
	assert_int_equal(c->nroles, 0);
	tgi_config_free(c);

	yaml_err("limits: {timeout_s: 86401}\n",
	         "1:21: limits.timeout_s: expected an integer from 1 to 86400, got 86401");
	yaml_err("limits: {max_args_bytes: true}\n",
	         "1:26: limits.max_args_bytes: expected an integer from 1 to 1073741824, got true");
	yaml_err("limits: {max_result_chars: \"100\"}\n",
	         "1:28: limits.max_result_chars: expected an integer from 1 to 1073741824, got \"100\"");
	yaml_err("approvals: {ttl_s: 0}\n",
	         "1:20: approvals.ttl_s: expected an integer from 1 to 31536000, got 0");
}

/* approvals.via (how toolgate serve asks) and mcp.strip_client_args: both
 * optional, checked, and apart from the approval policy (`approval:`). */
static void test_mcp_approvals_and_client_args(void **state)
{
	tgi_config *c = yaml_ok("approval: deny\n");
	assert_int_equal(c->approvals_via, TGI_VIA_BOTH);        /* the default */
	assert_int_equal(c->approval, TGI_APPROVAL_DENY);        /* the policy, apart */
	assert_int_equal(c->mcp_strip_args.n, 0);
	assert_null(c->mcp_strip_args.v[0]);
	tgi_config_free(c);

	static const struct { const char *name; tgi_approvals_via via; } vias[] = {
		{ "both", TGI_VIA_BOTH }, { "elicitation", TGI_VIA_ELICITATION },
		{ "queue", TGI_VIA_QUEUE },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(vias); i++) {
		char text[96];
		snprintf(text, sizeof text, "approvals: {ttl_s: 60, via: %s}\n", vias[i].name);
		c = yaml_ok(text);
		assert_int_equal(c->approvals_via, vias[i].via);
		assert_int_equal(c->approval_ttl_s, 60);
		tgi_config_free(c);
		tgi_approvals_via v = TGI_VIA_QUEUE;
		assert_int_equal(tgi_approvals_via_parse(vias[i].name, &v), 0);
		assert_int_equal(v, vias[i].via);
		assert_string_equal(tgi_approvals_via_name(vias[i].via), vias[i].name);
	}
	tgi_approvals_via v;
	assert_int_equal(tgi_approvals_via_parse("ask", &v), -1);
	assert_string_equal(tgi_approvals_via_name((tgi_approvals_via)9), "unknown");
	yaml_err("approvals: {via: ask}\n",
	         "1:18: approvals.via: expected one of both, elicitation, queue, got \"ask\"");
	yaml_err("approvals: {via: true}\n",
	         "1:18: approvals.via: expected one of both, elicitation, queue, got true");

	c = yaml_ok("mcp:\n  strip_client_args: [client_hint, x]\n");
	assert_int_equal(c->mcp_strip_args.n, 2);
	assert_string_equal(c->mcp_strip_args.v[0], "client_hint");
	assert_string_equal(c->mcp_strip_args.v[1], "x");
	assert_null(c->mcp_strip_args.v[2]);
	tgi_config_free(c);
	c = yaml_ok("mcp:\n");                                   /* empty: the built-ins alone */
	assert_int_equal(c->mcp_strip_args.n, 0);
	tgi_config_free(c);
	yaml_err("mcp: {strip_client_args: wait_for_previous}\n",
	         "1:26: mcp.strip_client_args: expected a list of strings, got \"wait_for_previous\"");
	yaml_err("mcp: {strip_client_args: [\"\"]}\n",
	         "1:27: mcp.strip_client_args[0]: expected a non-empty string, got \"\"");
	yaml_err("mcp: {strip_client_args: [3]}\n",
	         "1:27: mcp.strip_client_args[0]: expected a string, got 3");
	yaml_err("mcp: [x]\n", "1:1: mcp: expected a mapping, got a list");
	char many[1024] = "mcp: {strip_client_args: [a";
	for (int i = 0; i < 64; i++)
		strcat(many, ", a");
	strcat(many, "]}\n");
	yaml_err(many, "1:7: mcp.strip_client_args: expected at most 64 names, got 65");

	/* mcp.max_calls_per_principal: 1 to the server's 256 threads; 0 (unset): the default */
	c = yaml_ok("mcp: {max_calls_per_principal: 16}\n");
	assert_int_equal(c->mcp_max_calls_per_principal, 16);
	tgi_config_free(c);
	c = yaml_ok("mcp: {}\n");
	assert_int_equal(c->mcp_max_calls_per_principal, 0);
	tgi_config_free(c);
	yaml_err("mcp: {max_calls_per_principal: 0}\n",
	         "1:32: mcp.max_calls_per_principal: expected an integer from 1 to 256, got 0");
	yaml_err("mcp: {max_calls_per_principal: 257}\n",
	         "1:32: mcp.max_calls_per_principal: expected an integer from 1 to 256, got 257");
}

static void test_unknown_keys_in_every_section(void **state)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "Mode: plan\n",                        "1:1: unknown key \"Mode\"; expected one of workspace," },
		{ "principals: {local: {role: [a]}}\n",  "1:22: principals.local: unknown key \"role\"; expected one of roles, token_env" },
		{ "roles: {r: {deny: [x], denied: [y]}}\n", "1:24: roles.r: unknown key \"denied\"; expected one of allow, ask, deny" },
		{ "permissions: {allow: [a], dney: [b]}\n", "1:27: permissions: unknown key \"dney\"; expected one of allow, ask, deny" },
		{ "profiles: {p: {categories: [fs], readonly: true}}\n", "1:34: profiles.p: unknown key \"readonly\"; expected one of categories, read_only" },
		{ "limits: {timeout: 5}\n",              "1:10: limits: unknown key \"timeout\"; expected one of max_args_bytes, max_result_chars, timeout_s" },
		{ "formats: {asserts: true}\n",          "1:11: formats: unknown key \"asserts\"; expected one of assert" },
		{ "approvals: {ttl: 5}\n",               "1:13: approvals: unknown key \"ttl\"; expected one of ttl_s, wait_s, via" },
		{ "mcp: {strip_args: [x]}\n",            "1:7: mcp: unknown key \"strip_args\"; expected one of strip_client_args" },
		{ "ledger: {synchronous: full}\n",       "1:10: ledger: unknown key \"synchronous\"; expected one of sync, lease_grace_s" },
		{ "tools: {t: {description: d, command: [x], readonly: true}}\n",
		  "1:43: tools.t: unknown key \"readonly\"; expected one of description," },
		{ "spill: {kept: 5}\n",                  "1:9: spill: unknown key \"kept\"; expected one of keep" },
		{ "shell: {timeout_s: 5}\n",             "1:9: shell: unknown key \"timeout_s\"; expected one of max_timeout_s," },
		{ "shell:\n  rlimits: {cpu: 5}\n",      "2:13: shell.rlimits: unknown key \"cpu\"; expected one of cpu_s, address_space_mb," },
		{ "console: {port: 80}\n",               "1:11: console: unknown key \"port\"; expected one of listen, token_env" },
		{ "sandbox: {mode: read-only, net: true}\n", "1:28: sandbox: unknown key \"net\"; expected one of mode, network," },
		{ "tools: {t: {description: d, command: [x], sandbox: {mounts: []}}}\n",
		  "1:53: tools.t.sandbox: unknown key \"mounts\"; expected one of mode," },
		{ "permissions:\n  tests: [{call: {tool: t}, expected: deny}]\n",
		  "2:29: permissions.tests[0]: unknown key \"expected\"; expected one of call, expect" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		yaml_err(cases[i].text, cases[i].want);
}

/* The sections the parts read at a gate's open (config/section.c tables
 * too): an unknown key is said at its line:column, under its mapping's
 * path, naming the keys known there. */
static void test_unknown_keys_in_the_parts(void **state)
{
	fixture *fx = *state;
	static const struct { const char *text, *want; } cases[] = {
		{ "loop_detection:\n  windw: 10\n",
		  "toolgate.yaml:2:3: loop_detection: unknown key \"windw\"; expected one of enabled, "
		  "window, warn, block, mode" },
		{ "events:\n  jsonl: e.jsonl\n  colour: red\n",
		  "toolgate.yaml:3:3: events: unknown key \"colour\"; expected one of jsonl, fsync, socket, "
		  "queue" },
		{ "redact:\n  key: [a]\n",
		  "toolgate.yaml:2:3: redact: unknown key \"key\"; expected one of keys, patterns" },
		{ "hooks:\n  before: []\n",
		  "toolgate.yaml:2:3: hooks: unknown key \"before\"; expected one of before_tool_call, "
		  "after_tool_call" },
		{ "hooks:\n  after_tool_call:\n    - {command: [./x], tool: [shell]}\n",
		  "toolgate.yaml:3:24: hooks.after_tool_call[0]: unknown key \"tool\"; expected one of "
		  "command, tools, timeout_s, format" },
		{ "mcp_servers:\n  fs:\n    command: x\n    colour: red\n",
		  "toolgate.yaml:4:5: mcp_servers.fs: unknown key \"colour\"; expected one of command, "
		  "args, env, cwd, url, token_env, trusted, pin, prefix, sandbox, category, tools, "
		  "timeout_s, startup_timeout_s, aliases" },
		{ "mcp_servers:\n  fs:\n    command: x\n    tools: {include: [a], exlude: [b]}\n",
		  "toolgate.yaml:4:27: mcp_servers.fs.tools: unknown key \"exlude\"; expected one of "
		  "include, exclude" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		tg_options o = { .config_path = "toolgate.yaml", .workspace = fx->tmp, .bridge = 1,
		                 .no_create = 1 };
		tg_gate *g = NULL;
		char *err = NULL;
		write_text("toolgate.yaml", cases[i].text);
		assert_int_equal(tg_gate_open(&o, &g, &err), -1);
		assert_null(g);
		if (!err || !strstr(err, cases[i].want))
			fail_msg("for %s\n  got  %s\n  want %s", cases[i].text, err ? err : "(none)",
			         cases[i].want);
		free(err);
	}
}

static void test_bad_configs_from_data(void **state)
{
	char dir[PATH_MAX + 64];
	struct dirent **ents;
	snprintf(dir, sizeof dir, "%s/tests/data/config/bad", g_root);
	int n = scandir(dir, &ents, NULL, alphasort);
	assert_true(n > 0);
	int cases = 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		size_t len = strlen(name);
		int yaml = len > 5 && !strcmp(name + len - 5, ".yaml");
		int json = len > 5 && !strcmp(name + len - 5, ".json");
		if (yaml || json) {
			char path[2 * PATH_MAX], xpath[2 * PATH_MAX + 16], line[512] = "", want[3 * PATH_MAX];
			snprintf(path, sizeof path, "%s/%s", dir, name);
			/* the expected error: first line "# expect: ..." or NAME.expect */
			snprintf(xpath, sizeof xpath, "%s%s", path, json ? ".expect" : "");
			FILE *f = fopen(xpath, "r");
			assert_non_null(f);
			assert_non_null(fgets(line, sizeof line, f));
			fclose(f);
			line[strcspn(line, "\n")] = '\0';
			const char *exp = json ? line : line + strlen("# expect: ");
			if (yaml && strncmp(line, "# expect: ", 10))
				fail_msg("%s: first line must be \"# expect: ...\"", name);
			snprintf(want, sizeof want, "%s:%s", path, exp);
			load_err(path, want);
			cases++;
		}
		free(ents[i]);
	}
	free(ents);
	assert_true(cases >= 50);
}

static void assert_strv_equal(const tgi_strv *a, const tgi_strv *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++)
		assert_string_equal(a->v[i], b->v[i]);
}

static void test_yaml_and_json_load_equal(void **state)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/tests/data/config/good/full.yaml", g_root);
	tgi_config *y = load_ok(path);
	snprintf(path, sizeof path, "%s/tests/data/config/good/full.json", g_root);
	tgi_config *j = load_ok(path);
	char ws[PATH_MAX + 64], want[PATH_MAX + 128];

	/* the values, once, on the YAML side */
	snprintf(ws, sizeof ws, "%s/tests/data/config", g_root);
	assert_string_equal(y->workspace, ws);
	snprintf(want, sizeof want, "%s/state/ledger.db", ws);
	assert_string_equal(y->store, want);
	assert_string_equal(y->profile, "review");
	assert_int_equal(y->mode, TGI_MODE_ACCEPT_EDITS);
	assert_int_equal(y->approval, TGI_APPROVAL_UNTRUSTED);
	assert_int_equal(y->sandbox, TGI_SANDBOX_READ_ONLY);
	assert_string_equal(y->default_principal, "ci-bot");
	assert_int_equal(y->nprincipals, 2);
	assert_string_equal(y->principals[1].name, "ci-bot");
	STRV(&y->principals[1].roles, "deployer", "reader");
	assert_string_equal(y->principals[1].token_env, "CI_BOT_TOKEN");
	assert_null(y->principals[0].token_env);
	assert_int_equal(y->nroles, 3);
	STRV(&y->roles[1].allow, "deploy(env=staging)");
	STRV(&y->roles[1].ask, "deploy(env=qa)");
	STRV(&y->roles[1].deny, "deploy(env=prod)");
	assert_empty_strv(&y->roles[2].allow);
	STRV(&y->allow, "read_file", "shell(git status)");
	snprintf(want, sizeof want, "%s/tests/data/config/good/rules/default.rules", g_root);
	STRV(&y->execpolicy, want, "/etc/toolgate/site.rules");
	assert_int_equal(y->ntools, 2);
	const tgi_tool_cfg *d = tool(y, "deploy");
	/* destructive: true is confirmed as well (docs/MODES.md, "Destructive tools") */
	assert_int_equal(d->flags, TGI_T_DESTRUCTIVE | TGI_T_CONFIRM | TGI_T_REQUIRES_GRANT |
	                           TGI_T_REQUIRES_KEY | TGI_T_EDITS_FILES);
	assert_string_equal(d->category, "ops");
	assert_int_equal(d->max_result_chars, 2000);
	assert_int_equal(d->timeout_s, 30);
	STRV(&d->requires_env, "DEPLOY_TOKEN");
	snprintf(want, sizeof want, "%s/tests/data/config/good/bin/deploy", g_root);
	STRV(&d->command, want, "--verbose");
	snprintf(want, sizeof want, "%s/tests/data/config/good/../bin/deploy-check", g_root);
	STRV(&d->check, want);
	assert_true(json_is_object(d->output_schema));
	const tgi_tool_cfg *cnt = tool(y, "count");
	assert_int_equal(cnt->flags, TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE | TGI_T_IDEMPOTENT);
	STRV(&cnt->command, "wc", "-w");
	STRV(&cnt->requires_env, "LANG", "HOME");
	assert_int_equal(y->nprofiles, 5);
	STRV(&profile(y, "coding")->categories, "fs");
	STRV(&profile(y, "review")->categories, "fs", "web");
	assert_int_equal(profile(y, "review")->read_only_only, 1);
	assert_int_equal(y->max_args_bytes, 2048);
	assert_int_equal(y->max_result_chars, 4096);
	assert_int_equal(y->timeout_s, 10);
	assert_int_equal(y->assert_formats, 0);
	assert_int_equal(y->approval_ttl_s, 60);
	assert_int_equal(y->sync_full, 1);

	/* and the JSON file says exactly the same */
	assert_string_equal(j->workspace, y->workspace);
	assert_string_equal(j->store, y->store);
	assert_string_equal(j->profile, y->profile);
	assert_int_equal(j->mode, y->mode);
	assert_int_equal(j->approval, y->approval);
	assert_int_equal(j->sandbox, y->sandbox);
	assert_string_equal(j->default_principal, y->default_principal);
	assert_int_equal(j->nprincipals, y->nprincipals);
	for (size_t i = 0; i < y->nprincipals; i++) {
		assert_string_equal(j->principals[i].name, y->principals[i].name);
		assert_strv_equal(&j->principals[i].roles, &y->principals[i].roles);
	}
	assert_int_equal(j->nroles, y->nroles);
	for (size_t i = 0; i < y->nroles; i++) {
		assert_string_equal(j->roles[i].name, y->roles[i].name);
		assert_strv_equal(&j->roles[i].allow, &y->roles[i].allow);
		assert_strv_equal(&j->roles[i].ask, &y->roles[i].ask);
		assert_strv_equal(&j->roles[i].deny, &y->roles[i].deny);
	}
	assert_strv_equal(&j->allow, &y->allow);
	assert_strv_equal(&j->ask, &y->ask);
	assert_strv_equal(&j->deny, &y->deny);
	assert_strv_equal(&j->execpolicy, &y->execpolicy);
	assert_int_equal(j->ntools, y->ntools);
	for (size_t i = 0; i < y->ntools; i++) {
		const tgi_tool_cfg *a = &y->tools[i], *b = &j->tools[i];
		assert_string_equal(a->name, b->name);
		assert_string_equal(a->description, b->description);
		assert_true(json_equal(a->input_schema, b->input_schema));
		assert_true(a->output_schema ? json_equal(a->output_schema, b->output_schema) : !b->output_schema);
		assert_strv_equal(&a->command, &b->command);
		assert_string_equal(a->category, b->category);
		assert_int_equal(a->flags, b->flags);
		assert_int_equal(a->max_result_chars, b->max_result_chars);
		assert_int_equal(a->timeout_s, b->timeout_s);
		assert_strv_equal(&a->requires_env, &b->requires_env);
		assert_strv_equal(&a->check, &b->check);
	}
	assert_int_equal(j->nprofiles, y->nprofiles);
	for (size_t i = 0; i < y->nprofiles; i++) {
		assert_string_equal(j->profiles[i].name, y->profiles[i].name);
		assert_strv_equal(&j->profiles[i].categories, &y->profiles[i].categories);
		assert_int_equal(j->profiles[i].read_only_only, y->profiles[i].read_only_only);
	}
	assert_int_equal(j->max_args_bytes, y->max_args_bytes);
	assert_int_equal(j->max_result_chars, y->max_result_chars);
	assert_int_equal(j->timeout_s, y->timeout_s);
	assert_int_equal(j->assert_formats, y->assert_formats);
	assert_int_equal(j->approval_ttl_s, y->approval_ttl_s);
	assert_int_equal(j->sync_full, y->sync_full);
	assert_true(json_equal(j->mcp_servers, y->mcp_servers));
	assert_true(json_equal(j->hooks, y->hooks));
	assert_true(json_equal(j->loop_detection, y->loop_detection));
	assert_true(json_equal(j->rate_limits, y->rate_limits));
	assert_true(json_equal(j->redact, y->redact));
	assert_true(json_equal(j->root, y->root));

	/* both know where things are */
	char where[PATH_MAX + 128];
	tgi_config_where(j, "/tools/deploy/timeout_s", where, sizeof where);
	snprintf(want, sizeof want, "%s/tests/data/config/good/full.json:41:20", g_root);
	assert_string_equal(where, want);
	tgi_config_where(y, "/tools/deploy/timeout_s", where, sizeof where);
	snprintf(want, sizeof want, "%s/tests/data/config/good/full.yaml:37:16", g_root);
	assert_string_equal(where, want);
	tgi_config_free(y);
	tgi_config_free(j);
}

static void test_example_loads(void **state)
{
	char path[PATH_MAX + 64], want[PATH_MAX + 128];
	snprintf(path, sizeof path, "%s/examples/toolgate.yaml", g_root);
	tgi_config *c = load_ok(path);

	snprintf(want, sizeof want, "%s/examples", g_root);
	assert_string_equal(c->workspace, want);
	assert_string_equal(c->dir, want);
	assert_string_equal(c->profile, "coding");
	assert_int_equal(c->mode, TGI_MODE_DEFAULT);
	assert_int_equal(c->approval, TGI_APPROVAL_ASK);
	assert_int_equal(c->sandbox, TGI_SANDBOX_WORKSPACE_WRITE);
	assert_int_equal(c->nprincipals, 2);
	assert_int_equal(c->nroles, 2);
	STRV(&c->deny, "read_file(./.env)", "deploy_service(env=prod)");
	const tgi_tool_cfg *t = tool(c, "deploy_service");
	assert_true(t->flags & TGI_T_REQUIRES_GRANT);
	assert_true(t->flags & TGI_T_REQUIRES_KEY);
	assert_true(t->flags & TGI_T_DESTRUCTIVE);
	assert_false(t->flags & TGI_T_READ_ONLY);
	snprintf(want, sizeof want, "%s/examples/scripts/deploy.sh", g_root);
	STRV(&t->command, want);
	assert_string_equal(json_string_value(json_object_get(t->input_schema, "type")), "object");
	/* its own sandbox; a tool without one has a copy of the shell's */
	assert_int_equal(t->sandbox.mode, TGI_SANDBOX_WORKSPACE_WRITE);
	assert_int_equal(t->sandbox.net, TGI_NET_HOSTS);
	STRV(&t->sandbox.hosts, "deploy.example.com:443");
	const tgi_tool_cfg *wc = tool(c, "word_count");
	assert_int_equal(wc->sandbox.mode, c->sandbox_profile.mode);
	assert_int_equal(wc->sandbox.net, TGI_NET_OFF);
	assert_true(json_is_object(c->mcp_servers));
	assert_true(json_is_object(c->hooks));
	assert_true(json_is_object(c->loop_detection));
	assert_true(json_is_object(c->rate_limits));
	assert_true(json_is_object(c->redact));
	assert_builtin_profiles(c);
	tgi_config_free(c);
}

static void test_relative_paths(void **state)
{
	fixture *fx = *state;
	char want[PATH_MAX + 64];
	assert_int_equal(mkdir("conf", 0700), 0);
	assert_int_equal(mkdir("ws", 0700), 0);
	write_text("conf/toolgate.yaml",
	           "workspace: ../ws\n"
	           "store: db/ledger.db\n"
	           "execpolicy: [rules/a.rules, ./rules//b.rules, /opt/site.rules]\n"
	           "tools:\n"
	           "  a: {description: a, command: [./bin/a, ./not-resolved]}\n"
	           "  b: {description: b, command: [bin/b], check: [../check.sh, x]}\n"
	           "  c: {description: c, command: [python3, -c, pass], check: [\"true\"]}\n"
	           "  d: {description: d, command: [/usr/bin/env, x]}\n");
	tgi_config *c = load_ok("conf/toolgate.yaml");
	snprintf(want, sizeof want, "%s/conf/toolgate.yaml", fx->tmp);
	assert_string_equal(c->path, want);
	assert_string_equal(c->file, "conf/toolgate.yaml");
	snprintf(want, sizeof want, "%s/conf", fx->tmp);
	assert_string_equal(c->dir, want);
	snprintf(want, sizeof want, "%s/ws", fx->tmp);
	assert_string_equal(c->workspace, want);   /* resolved, no ".." left */
	snprintf(want, sizeof want, "%s/ws/db/ledger.db", fx->tmp);
	assert_string_equal(c->store, want);       /* against the workspace */

	char a[PATH_MAX + 64], b[PATH_MAX + 64];
	snprintf(a, sizeof a, "%s/conf/rules/a.rules", fx->tmp);
	snprintf(b, sizeof b, "%s/conf/rules/b.rules", fx->tmp);
	STRV(&c->execpolicy, a, b, "/opt/site.rules");
	snprintf(a, sizeof a, "%s/conf/bin/a", fx->tmp);
	STRV(&tool(c, "a")->command, a, "./not-resolved"); /* only argv[0] */
	snprintf(a, sizeof a, "%s/conf/bin/b", fx->tmp);
	snprintf(b, sizeof b, "%s/conf/../check.sh", fx->tmp);
	STRV(&tool(c, "b")->command, a);
	STRV(&tool(c, "b")->check, b, "x");
	STRV(&tool(c, "c")->command, "python3", "-c", "pass"); /* found in PATH when run */
	STRV(&tool(c, "c")->check, "true");
	STRV(&tool(c, "d")->command, "/usr/bin/env", "x");
	tgi_config_free(c);

	/* no workspace key: the current directory, not the file's */
	write_text("conf/toolgate.yaml", "store: /var/lib/toolgate/l.db\n");
	c = load_ok("conf/toolgate.yaml");
	assert_string_equal(c->workspace, fx->tmp);
	assert_string_equal(c->store, "/var/lib/toolgate/l.db");
	tgi_config_free(c);

	/* a PostgreSQL URL is kept as it is; $TOOLGATE_STORE names the ledger
	 * over the file (a relative path against the workspace) */
	write_text("conf/toolgate.yaml", "store: postgresql://gate@db.example/toolgate\n");
	c = load_ok("conf/toolgate.yaml");
	assert_string_equal(c->store, "postgresql://gate@db.example/toolgate");
	tgi_config_free(c);
	setenv("TOOLGATE_STORE", "postgres://other@db2/tg?sslmode=require", 1);
	c = load_ok("conf/toolgate.yaml");
	assert_string_equal(c->store, "postgres://other@db2/tg?sslmode=require");
	tgi_config_free(c);
	setenv("TOOLGATE_STORE", "state/l.db", 1);
	c = load_ok("conf/toolgate.yaml");
	snprintf(want, sizeof want, "%s/state/l.db", fx->tmp);
	assert_string_equal(c->store, want);
	tgi_config_free(c);
	unsetenv("TOOLGATE_STORE");

	/* workspace "." is the file's directory */
	write_text("conf/toolgate.yaml", "workspace: .\n");
	c = load_ok("conf/toolgate.yaml");
	snprintf(want, sizeof want, "%s/conf", fx->tmp);
	assert_string_equal(c->workspace, want);
	tgi_config_free(c);

	/* a workspace through a symlink is stored resolved */
	assert_int_equal(symlink("ws", "link"), 0);
	write_text("toolgate.yaml", "workspace: link\n");
	c = load_ok(NULL);
	snprintf(want, sizeof want, "%s/ws", fx->tmp);
	assert_string_equal(c->workspace, want);
	tgi_config_free(c);
}

static void test_tool_defaults_and_flags(void **state)
{
	tgi_config *c = yaml_ok("tools:\n"
	                        "  plain:\n"
	                        "    description: Plain.\n"
	                        "    command: [echo]\n"
	                        "  all-flags_2:\n"
	                        "    description: All.\n"
	                        "    command: [echo]\n"
	                        "    read_only: true\n    concurrency_safe: true\n    destructive: true\n"
	                        "    idempotent: true\n    requires_grant: true\n"
	                        "    requires_idempotency_key: true\n    edits_files: true\n"
	                        "    check: []\n");
	const tgi_tool_cfg *t = tool(c, "plain");
	assert_string_equal(t->description, "Plain.");
	assert_true(json_is_object(t->input_schema));
	assert_int_equal(json_object_size(t->input_schema), 1);
	assert_string_equal(json_string_value(json_object_get(t->input_schema, "type")), "object");
	assert_null(t->output_schema);
	assert_string_equal(t->category, "runtime");
	assert_int_equal(t->flags, 0);
	assert_int_equal(t->max_result_chars, 0);
	assert_int_equal(t->timeout_s, 0);
	assert_empty_strv(&t->requires_env);
	assert_empty_strv(&t->check);
	assert_string_equal(t->where, "toolgate.yaml:2");
	t = tool(c, "all-flags_2");
	assert_int_equal(t->flags, TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE | TGI_T_DESTRUCTIVE |
	                           TGI_T_CONFIRM | TGI_T_IDEMPOTENT | TGI_T_REQUIRES_GRANT |
	                           TGI_T_REQUIRES_KEY | TGI_T_EDITS_FILES);
	assert_empty_strv(&t->check);
	tgi_config_free(c);

	/* a 64-character name is the longest allowed */
	c = yaml_ok("tools: {aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: {description: d, command: [x]}}\n");
	assert_int_equal(c->ntools, 1);
	tgi_config_free(c);
	yaml_err("tools: {aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: {description: d, command: [x]}}\n",
	         "1:9: tools: expected a tool name of 1 to 64 letters");
	yaml_err("tools: {\"\": {description: d, command: [x]}}\n", "1:9: tools: expected a tool name");
	for (size_t i = 0; i < 6; i++) {
		static const char *const builtins[] = { "read_file", "list_dir", "search_files",
		                                        "write_file", "apply_patch", "shell" };
		char text[160], want[160];
		snprintf(text, sizeof text, "tools: {%s: {description: d, command: [x]}}\n", builtins[i]);
		/* at the tool's name, the key */
		snprintf(want, sizeof want, "1:9: tools: expected a name other than the built-in tools");
		yaml_err(text, want);
	}
	yaml_err("tools: {t: {description: d, command: [x], output_schema: true}}\n",
	         "1:58: tools.t.output_schema: expected a JSON Schema (a mapping), got true");
	yaml_err("tools: {t: {description: d, command: [x], category: \"\"}}\n",
	         "1:53: tools.t.category: expected a non-empty string, got \"\"");
	yaml_err("tools: {t: {description: [d], command: [x]}}\n",
	         "1:13: tools.t.description: expected a string, got a list");
	yaml_err("tools: {t: {description: d, command: [x], requires_env: 5}}\n",
	         "1:57: tools.t.requires_env: expected a list of strings, got 5");
	yaml_err("tools: {t: {description: d, command: [x], requires_env: \"A B\"}}\n",
	         "1:57: tools.t.requires_env: expected an environment variable name");
	yaml_err("tools: [a]\n", "1:1: tools: expected a mapping, got a list");
	yaml_err("tools: {t: d}\n", "1:12: tools.t: expected a mapping with description and command, got \"d\"");
}

static void test_profiles(void **state)
{
	tgi_config *c = yaml_ok("profile: research\n"
	                        "profiles:\n"
	                        "  research: [web, memory]\n"
	                        "  minimal: {categories: [fs, web]}\n"
	                        "  full: {categories: [fs], read_only: true}\n");
	assert_int_equal(c->nprofiles, 5);
	/* built-ins keep their places; a same-named entry replaces one */
	assert_string_equal(c->profiles[0].name, "minimal");
	STRV(&c->profiles[0].categories, "fs", "web");
	assert_int_equal(c->profiles[0].read_only_only, 0);
	assert_string_equal(c->profiles[1].name, "coding");
	STRV(&c->profiles[1].categories, "fs", "runtime", "mcp");
	assert_string_equal(c->profiles[3].name, "full");
	STRV(&c->profiles[3].categories, "fs");
	assert_int_equal(c->profiles[3].read_only_only, 1);
	assert_string_equal(c->profiles[4].name, "research");
	STRV(&c->profiles[4].categories, "web", "memory");
	assert_string_equal(c->profile, "research");
	tgi_config_free(c);

	/* every built-in may be selected */
	static const char *const names[] = { "minimal", "coding", "messaging", "full" };
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++) {
		char text[64];
		snprintf(text, sizeof text, "profile: %s\n", names[i]);
		c = yaml_ok(text);
		assert_string_equal(c->profile, names[i]);
		tgi_config_free(c);
	}
	yaml_err("profile: Coding\n", "1:10: profile: expected one of the profiles (minimal, coding, messaging, full), got \"Coding\"");
	yaml_err("profiles: {p: {categories: fs}}\n", "1:28: profiles.p.categories: expected a list of categories, got \"fs\"");
	yaml_err("profiles: {p: [fs, 1]}\n", "1:20: profiles.p[1]: expected a string, got 1");
	yaml_err("profiles: {p: {categories: [fs], read_only: 1}}\n", "1:45: profiles.p.read_only: expected true or false, got 1");
}

static void test_principals_and_roles(void **state)
{
	/* principals given: exactly those; the default must be among them */
	tgi_config *c = yaml_ok("default_principal: ci\n"
	                        "principals:\n"
	                        "  ci: {roles: [r1, r2], token_env: CI_TOKEN}\n"
	                        "  bot:\n"
	                        "roles:\n"
	                        "  r1: {allow: [a], ask: [b], deny: [c]}\n"
	                        "  r2: {}\n");
	assert_int_equal(c->nprincipals, 2);
	assert_string_equal(c->default_principal, "ci");
	STRV(&c->principals[0].roles, "r1", "r2");
	assert_string_equal(c->principals[0].token_env, "CI_TOKEN");
	assert_string_equal(c->principals[1].name, "bot");
	assert_empty_strv(&c->principals[1].roles);
	assert_null(c->principals[1].token_env);
	assert_int_equal(c->nroles, 2);
	STRV(&c->roles[0].allow, "a");
	STRV(&c->roles[0].ask, "b");
	STRV(&c->roles[0].deny, "c");
	assert_empty_strv(&c->roles[1].deny);
	tgi_config_free(c);

	/* no principals: the built-in "local" is the only one */
	yaml_err("default_principal: ci\n",
	         "1:20: default_principal: expected one of the principals (local), got \"ci\"");
	/* principals without "local" need a default_principal */
	yaml_err("principals: {ci: {}}\n",
	         "1:1: default_principal: expected one of the principals (ci), got \"local\"");
	yaml_err("principals: {}\n",
	         "1:1: default_principal: expected one of the principals (none), got \"local\"");
	/* a role must be defined */
	yaml_err("principals: {local: {roles: [admin]}}\n",
	         "1:30: principals.local.roles[0]: expected a role defined under roles, got \"admin\"");
	yaml_err("principals: {local: {roles: admin}}\n",
	         "1:29: principals.local.roles: expected a list of strings, got \"admin\"");
	yaml_err("roles: {r: [a]}\n", "1:9: roles.r: expected a mapping with allow, ask and deny lists, got a list");
	yaml_err("roles: {r: {allow: [a, [b]]}}\n", "1:24: roles.r.allow[1]: expected a string, got a list");
	yaml_err("principals: [local]\n", "1:1: principals: expected a mapping, got a list");
	yaml_err("default_principal: \"\"\n", "1:20: default_principal: expected a non-empty string, got \"\"");
}

/* A permissions block copied from Claude Code's .claude/settings.json
 * loads as it is: its lists are the rules, its defaultMode the mode. */
static void test_claude_permissions(void **state)
{
	tgi_config *c = yaml_ok("{\"permissions\": {\"allow\": [\"Bash(npm run test:*)\", \"Edit\"],\n"
	                        " \"deny\": [\"Read(./.env)\"], \"ask\": [\"Bash(git push:*)\"],\n"
	                        " \"defaultMode\": \"acceptEdits\"}}\n");
	STRV(&c->allow, "Bash(npm run test:*)", "Edit");
	STRV(&c->deny, "Read(./.env)");
	STRV(&c->ask, "Bash(git push:*)");
	assert_int_equal(c->mode, TGI_MODE_ACCEPT_EDITS);
	tgi_config_free(c);

	/* the same mode said twice is fine; two modes are not */
	c = yaml_ok("mode: plan\npermissions: {defaultMode: plan}\n");
	assert_int_equal(c->mode, TGI_MODE_PLAN);
	tgi_config_free(c);
	yaml_err("mode: plan\npermissions: {defaultMode: bypassPermissions}\n",
	         "2:28: permissions.defaultMode: \"bypassPermissions\" contradicts mode: plan; keep "
	         "one of them");
	yaml_err("permissions: {defaultMode: dontAsk}\n",
	         "1:28: permissions.defaultMode: expected one of default, acceptEdits, plan, "
	         "bypassPermissions, dryRun, got \"dontAsk\"");
	/* Claude Code's other keys are not toolgate's */
	yaml_err("permissions: {additionalDirectories: [../x]}\n",
	         "1:15: permissions: unknown key \"additionalDirectories\"; expected one of allow, ask, "
	         "deny, tests, defaultMode");
	/* a role's lists have no mode */
	yaml_err("roles: {r: {defaultMode: plan}}\n", "1:13: roles.r: unknown key \"defaultMode\"");
}

static void test_where(void **state)
{
	tgi_config *c = yaml_ok("mode: plan\n"
	                        "tools:\n"
	                        "  t:\n"
	                        "    description: d\n"
	                        "    command: [x]\n"
	                        "    input_schema:\n"
	                        "      type: object\n"
	                        "      properties:\n"
	                        "        env: {type: string, pattern: \"^(a\"}\n");
	char out[128];
	tgi_config_where(c, "", out, sizeof out);
	assert_string_equal(out, "toolgate.yaml:1:1");
	tgi_config_where(c, "/mode", out, sizeof out);
	assert_string_equal(out, "toolgate.yaml:1:7");
	tgi_config_where(c, "/tools/t/input_schema/properties/env/pattern", out, sizeof out);
	assert_string_equal(out, "toolgate.yaml:9:38");
	/* a node that is not there: its nearest ancestor */
	tgi_config_where(c, "/tools/t/input_schema/required", out, sizeof out);
	assert_string_equal(out, "toolgate.yaml:6:5");
	tgi_config_where(c, NULL, out, sizeof out);
	assert_string_equal(out, "toolgate.yaml:1:1");
	/* a small buffer is cut, never overrun */
	char tiny[8];
	tgi_config_where(c, "/mode", tiny, sizeof tiny);
	assert_string_equal(tiny, "toolgat");
	tgi_config_free(c);
}

/* The middleware's errors read as the loader's own: where, key path, message. */
static void test_fail_and_strings(void **state)
{
	tgi_config *c = yaml_ok("redact:\n"
	                        "  keys: [a, \"\", b]\n"
	                        "  patterns: {x: 1}\n"
	                        "rate_limits: {\"a/b~c\": 3/sec, \"7\": 1/min}\n"
	                        "events: {argv: [\"\", x]}\n");
	char err[256];
	assert_int_equal(tgi_config_fail(c, "/redact/keys/1", err, sizeof err, "bad %s", "one"), -1);
	assert_string_equal(err, "toolgate.yaml:2:13: redact.keys[1]: bad one");
	/* a token is unescaped; a number is an index only in a list */
	tgi_config_fail(c, "/rate_limits/a~1b~0c", err, sizeof err, "x");
	assert_string_equal(err, "toolgate.yaml:4:24: rate_limits.a/b~c: x");
	tgi_config_fail(c, "/rate_limits/7", err, sizeof err, "x");
	assert_string_equal(err, "toolgate.yaml:4:36: rate_limits.7: x");
	/* a node that is not there: its nearest ancestor's place */
	tgi_config_fail(c, "/redact/missing", err, sizeof err, "x");
	assert_string_equal(err, "toolgate.yaml:1:1: redact.missing: x");
	/* the message is made printable */
	tgi_config_fail(c, "/events", err, sizeof err, "got \"%s\"", "a\nb\x1b[1m\xff");
	assert_string_equal(err, "toolgate.yaml:5:1: events: got \"a b [1m\xef\xbf\xbd\"");
	/* a small buffer is cut, never overrun */
	char tiny[10];
	tgi_config_fail(c, "/events", tiny, sizeof tiny, "x");
	assert_string_equal(tiny, "toolgate.");

	const json_t *keys = json_object_get(c->redact, "keys");
	assert_int_equal(tgi_config_strings(c, keys, "/redact/keys", 8, 64, 0, err, sizeof err), -1);
	assert_string_equal(err, "toolgate.yaml:2:13: redact.keys[1]: expected a non-empty string, "
	                         "got \"\"");
	/* a command line: only the program must not be empty */
	assert_int_equal(tgi_config_strings(c, keys, "/redact/keys", 8, 64, 1, err, sizeof err), 0);
	assert_int_equal(tgi_config_strings(c, json_object_get(c->events, "argv"), "/events/argv", 8,
	                                    64, 1, err, sizeof err), -1);
	assert_string_equal(err, "toolgate.yaml:5:17: events.argv[0]: expected a non-empty string, "
	                         "got \"\"");
	assert_int_equal(tgi_config_strings(c, keys, "/redact/keys", 2, 64, 1, err, sizeof err), -1);
	assert_string_equal(err, "toolgate.yaml:2:3: redact.keys: more than 2 entries");
	assert_int_equal(tgi_config_strings(c, keys, "/redact/keys", 8, 0, 1, err, sizeof err), -1);
	assert_string_equal(err, "toolgate.yaml:2:10: redact.keys[0]: longer than 0 bytes");
	assert_int_equal(tgi_config_strings(c, json_object_get(c->redact, "patterns"),
	                                    "/redact/patterns", 8, 64, 0, err, sizeof err), -1);
	assert_string_equal(err, "toolgate.yaml:3:3: redact.patterns: expected a list of strings, "
	                         "got a mapping");
	tgi_config_free(c);

	/* no source map: the file only; a NUL inside a string is refused */
	json_t *root = json_pack("{s:{s:[s,o]}}", "redact", "keys", "a",
	                         json_stringn("b\0c", 3));
	assert_int_equal(tgi_config_from_json(root, NULL, "inline.yaml", NULL, &c, err, sizeof err), 0);
	assert_int_equal(tgi_config_strings(c, json_object_get(c->redact, "keys"), "/redact/keys",
	                                    8, 64, 0, err, sizeof err), -1);
	assert_string_equal(err, "inline.yaml: redact.keys[1]: contains a NUL character");
	tgi_config_free(c);
}

static void test_from_json_directly(void **state)
{
	fixture *fx = *state;
	char err[512];
	tgi_config *c = NULL;

	/* a document built in memory: no map, messages name the file only */
	json_t *root = json_pack("{s:s, s:{s:[s]}}", "mode", "plan", "permissions", "deny", "shell");
	assert_int_equal(tgi_config_from_json(root, NULL, "inline.yaml", fx->tmp, &c, err, sizeof err), 0);
	assert_int_equal(c->mode, TGI_MODE_PLAN);
	STRV(&c->deny, "shell");
	assert_null(c->path);
	assert_string_equal(c->dir, fx->tmp);
	tgi_config_free(c);

	/* errors: it takes root (and the map) either way */
	root = json_pack("{s:s}", "mode", "yolo");
	c = (tgi_config *)1;
	assert_int_equal(tgi_config_from_json(root, NULL, "inline.yaml", NULL, &c, err, sizeof err), -1);
	assert_null(c);
	assert_string_equal(err, "inline.yaml: mode: expected one of default, acceptEdits, plan, "
	                         "bypassPermissions, dryRun, got \"yolo\"");

	tgi_srcmap *map = NULL;
	static const char text[] = "limits:\n  timeout_s: -1\n";
	root = tgi_yaml_parse(text, sizeof text - 1, &map, err, sizeof err);
	assert_non_null(root);
	assert_int_equal(tgi_config_from_json(root, map, "mem.yaml", NULL, &c, err, sizeof err), -1);
	assert_string_equal(err, "mem.yaml:2:14: limits.timeout_s: expected an integer from 1 to 86400, got -1");

	/* a null document is the defaults; a non-mapping is refused */
	assert_int_equal(tgi_config_from_json(json_null(), NULL, "n.yaml", NULL, &c, err, sizeof err), 0);
	assert_string_equal(c->profile, "coding");
	assert_string_equal(c->workspace, fx->tmp);
	tgi_config_free(c);
	assert_int_equal(tgi_config_from_json(json_integer(3), NULL, "n.yaml", NULL, &c, err, sizeof err), -1);
	assert_string_equal(err, "n.yaml: expected a mapping at the top level, got 3");

	/* control characters never reach a message */
	root = json_pack("{s:s}", "mode", "a\nb\x1b[31m");
	assert_int_equal(tgi_config_from_json(root, NULL, "x\ty.yaml", NULL, &c, err, sizeof err), -1);
	assert_null(strchr(err, '\n'));
	assert_null(strchr(err, '\x1b'));
	assert_null(strchr(err, '\t'));

	tgi_config_free(NULL);
}

static void test_opaque_sections_kept(void **state)
{
	tgi_config *c = yaml_ok("mcp_servers: {fs: {command: npx}}\n"
	                        "hooks: {before_tool_call: [{command: [x]}]}\n"
	                        "loop_detection: {enabled: true}\n"
	                        "rate_limits: {shell: \"10/min\"}\n"
	                        "redact: {keys: [token]}\n");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c->mcp_servers, "fs"), "command")), "npx");
	assert_int_equal(json_array_size(json_object_get(c->hooks, "before_tool_call")), 1);
	assert_true(json_is_true(json_object_get(c->loop_detection, "enabled")));
	assert_string_equal(json_string_value(json_object_get(c->rate_limits, "shell")), "10/min");
	assert_true(json_is_array(json_object_get(c->redact, "keys")));
	/* the same nodes as in root */
	assert_ptr_equal(c->hooks, json_object_get(c->root, "hooks"));
	tgi_config_free(c);

	yaml_err("loop_detection: [1]\n", "1:1: loop_detection: expected a mapping, got a list");
	yaml_err("mcp_servers: {fs: [npx]}\n", "1:15: mcp_servers.fs: expected a mapping, got a list");
	yaml_err("hooks: {after_tool_call: \"x\"}\n", "1:26: hooks.after_tool_call: expected a list, got \"x\"");
}

static void test_json_file_errors(void **state)
{
	write_text("c.json", "{\"mode\": \"plan\", \"mode\": \"plan\"}");
	load_err("c.json", "c.json:1:23: duplicate object key");
	write_text("c.json", "{\n  \"mode\": 1.5\n}");
	load_err("c.json", "c.json:2:11: mode: expected one of default, acceptEdits, plan, bypassPermissions, dryRun, got 1.5");
	write_text("c.json", "{\"limits\": {\"timeout_s\": 99999999999999999999}}");
	load_err("c.json", "c.json:1:");
	write_text("c.json", "{\"mode\": \"plan\"} trailing");
	load_err("c.json", "c.json:1:");
	write_text("c.json", "");
	load_err("c.json", "c.json:1:");
	/* characters JSON escapes as surrogate pairs (YAML refuses those) keep
	 * every position after them */
	write_text("c.json", "{\"tools\": {\"t\": {\"description\": \"\\ud83d\\ude00\", "
	                     "\"command\": [\"x\"], \"timeout_s\": 0}}}");
	load_err("c.json", "c.json:1:80: tools.t.timeout_s: expected an integer from 1 to 86400, got 0");
	/* after an escaped backslash: still a pair */
	write_text("c.json", "{\"store\": \"\\\\\\ud83d\\ude00\", \"mdoe\": 1}");
	load_err("c.json", "c.json:1:29: unknown key \"mdoe\"");
	/* JSON semantics are exact: a YAML-only spelling is not JSON */
	write_text("c.json", "mode: plan\n");
	load_err("c.json", "c.json:1:");
	/* a .yaml file may hold JSON */
	tgi_config *c = yaml_ok("{\"mode\": \"plan\", \"limits\": {\"timeout_s\": 5}}");
	assert_int_equal(c->mode, TGI_MODE_PLAN);
	assert_int_equal(c->timeout_s, 5);
	tgi_config_free(c);
}

/* sandbox: a mode, or a profile {mode, network, read, write, sockets,
 * accept}; paths keep their spelling but for ~, which is the home; the
 * network is off, on, or a list of hosts; bad entries are refused with
 * the key and the entry. */
static void test_sandbox_profile(void **state)
{
	(void)state;
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	setenv("HOME", "/home/someone", 1);
	tgi_config *c = yaml_ok("sandbox: read-only\n");
	assert_int_equal(c->sandbox_profile.mode, TGI_SANDBOX_READ_ONLY);
	assert_int_equal(c->sandbox_profile.net, TGI_NET_OFF);
	assert_int_equal(c->sandbox_profile.read.n, 0);
	assert_non_null(c->sandbox_profile.read.v);
	tgi_config_free(c);

	c = yaml_ok("sandbox: {mode: workspace-write, network: true}\n");
	assert_int_equal(c->sandbox_profile.net, TGI_NET_ON);
	assert_int_equal(c->sandbox_network, 1);
	assert_int_equal(c->sandbox, TGI_SANDBOX_WORKSPACE_WRITE);
	tgi_config_free(c);

	c = yaml_ok("sandbox:\n"
	            "  read: [~/.gitconfig, '~', /opt/sdk, build/cache]\n"
	            "  write: [~/.cache/pip]\n"
	            "  sockets: [~/.ssh/agent.sock]\n"
	            "  network: [API.github.com:443, registry.npmjs.org, '*.example.com', '[::1]:8080']\n"
	            "  accept: [landlock]\n");
	const tgi_sb_profile *p = &c->sandbox_profile;
	assert_int_equal(p->mode, TGI_SANDBOX_WORKSPACE_WRITE);   /* the default stays */
	STRV(&p->read, "/home/someone/.gitconfig", "/home/someone", "/opt/sdk", "build/cache");
	STRV(&p->write, "/home/someone/.cache/pip");
	STRV(&p->sockets, "/home/someone/.ssh/agent.sock");
	assert_int_equal(p->net, TGI_NET_HOSTS);
	STRV(&p->hosts, "api.github.com:443", "registry.npmjs.org", "*.example.com", "[::1]:8080");
	assert_int_equal(p->accept, TGI_SB_ACCEPT_LANDLOCK);
	assert_int_equal(c->sandbox_network, 1);
	tgi_config_free(c);

	c = yaml_ok("sandbox: {network: []}\n");         /* no host: nothing to reach */
	assert_int_equal(c->sandbox_profile.net, TGI_NET_OFF);
	tgi_config_free(c);

	yaml_err("sandbox: full\n", "1:10: sandbox: expected one of read-only, workspace-write, "
	         "danger-full-access, got \"full\"");
	yaml_err("sandbox: 3\n", "1:10: sandbox: expected one of read-only, workspace-write, "
	         "danger-full-access, or a mapping");
	yaml_err("sandbox: {mode: yolo}\n", "1:17: sandbox.mode: expected one of read-only");
	yaml_err("sandbox: {mounts: [/]}\n", "1:11: sandbox: unknown key \"mounts\"; "
	         "expected one of mode, network, read, write, sockets, accept");
	yaml_err("sandbox: {read: [~bob/x]}\n", "1:18: sandbox.read[0]: expected ~ or ~/path");
	yaml_err("sandbox: {write: [/]}\n", "1:19: sandbox.write[0]: expected a path below /");
	yaml_err("sandbox: {read: /etc}\n", "1:17: sandbox.read: expected a list of strings");
	yaml_err("sandbox: {network: [a..b]}\n", "1:21: sandbox.network[0]: expected a host name");
	yaml_err("sandbox: {network: ['x.com:0']}\n", "1:21: sandbox.network[0]: expected a port");
	yaml_err("sandbox: {network: ['x.com:99999']}\n", "1:21: sandbox.network[0]: expected a port");
	yaml_err("sandbox: {network: yes}\n", "1:20: sandbox.network: expected true, false or a list");
	/* what the proxy itself would not read (an address in another spelling) */
	yaml_err("sandbox: {network: ['127.1']}\n", "1:11: sandbox.network: network entry 1 "
	         "(\"127.1\"): the host is a number in a form other than a dotted-quad");
	yaml_err("sandbox: {accept: [none]}\n", "1:20: sandbox.accept[0]: expected a sandbox backend "
	         "to accept (landlock; bubblewrap always is), got \"none\"; to run without");

	/* a command tool: the shell's profile, then its own sandbox: over it */
	c = yaml_ok("sandbox: {mode: read-only, read: [/opt/sdk]}\n"
	            "tools:\n"
	            "  a: {description: A., command: [x], sandbox: {network: true}}\n"
	            "  b: {description: B., command: [x], sandbox: workspace-write}\n"
	            "  c: {description: C., command: [x]}\n");
	assert_int_equal(c->tools[0].sandbox.mode, TGI_SANDBOX_READ_ONLY);
	assert_int_equal(c->tools[0].sandbox.net, TGI_NET_ON);
	STRV(&c->tools[0].sandbox.read, "/opt/sdk");
	assert_int_equal(c->tools[1].sandbox.mode, TGI_SANDBOX_WORKSPACE_WRITE);
	assert_int_equal(c->tools[1].sandbox.net, TGI_NET_OFF);
	assert_int_equal(c->tools[2].sandbox.mode, TGI_SANDBOX_READ_ONLY);
	STRV(&c->tools[2].sandbox.read, "/opt/sdk");
	assert_int_equal(c->sandbox_profile.net, TGI_NET_OFF);   /* the shell's is not changed */
	tgi_config_free(c);
	yaml_err("tools:\n  a: {description: A., command: [x], sandbox: {mode: yolo}}\n",
	         "2:54: tools.a.sandbox.mode: expected one of read-only");
	if (home)
		setenv("HOME", home, 1);
	else
		unsetenv("HOME");
	free(home);
}

int main(void)
{
	const char *root = getenv("TOOLGATE_ROOT");
	if (!realpath(root && *root ? root : ".", g_root)) {
		perror("toolgate root");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sandbox_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults_without_a_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_file_is_all_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discovery_in_the_current_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discovery_through_the_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_explicit_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_size_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nul_in_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_enum_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_and_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcp_approvals_and_client_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys_in_every_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys_in_the_parts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_configs_from_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_yaml_and_json_load_equal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_example_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tool_defaults_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_principals_and_roles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claude_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_where, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_and_strings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_from_json_directly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opaque_sections_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_file_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
