/*
 * command.c — configured command tools (DESIGN §2, "Configured tools").
 *
 * The gate runs the tool's argv in the workspace with the call JSON
 * {"op_id","tool","args","principal","idempotency_key"} on stdin and reads
 * a JSON result (or plain text) from stdout.  Exit 0 = success, 75
 * (EX_TEMPFAIL) = transient (nothing applied), anything else = tool_error
 * whose effect is unknown unless the tool's JSON says "applied": false.
 * The environment is clean: PATH, HOME, LANG, TERM, TMPDIR, TOOLGATE_OP_ID,
 * plus the variables the tool declares in requires_env.
 *
 * It runs inside the sandbox of its profile (tgi_tool_cfg.sandbox: the
 * entry's `sandbox:` over the shell tool's; exec/sandbox.h), as the shell
 * tool's commands do: the gate's own files (its program and the scripts
 * its argv names among them) and .git read-only, .toolgate hidden, a
 * private /tmp and HOME (the ones HOME and TMPDIR name), its own pid
 * namespace (nothing it starts outlives the call), network by its
 * profile (by host through ctx->net_attach).  A sandbox that cannot be
 * made runs nothing (not_permitted; decide.c already denies the call when
 * no backend can hold the profile: registry.c's availability).
 *
 * A dry run's plan shows the argv, the stdin JSON, the environment's
 * names (never the values of requires_env: they are the tool's secrets),
 * the sandbox and the timeout.
 *
 * Owns: turning one call into one process and its answer into a result.
 * Must not: check permissions (the pipeline did), retry, or touch the ledger.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"
#include "registry.h"
#include "util/util.h"

#define MAX_STDOUT (16u * 1024 * 1024)
#define EX_TEMPFAIL_CODE 75

static void env_add(char **envp, size_t *n, const char *name, const char *value)
{
	if (!value)
		return;
	size_t len = strlen(name) + strlen(value) + 2;
	envp[*n] = tgi_xmalloc(len);
	snprintf(envp[*n], len, "%s=%s", name, value);
	(*n)++;
}

/* Last line of stderr, sanitised: the tool's own sentence. */
static void stderr_reason(const char *err, char *out, size_t cap)
{
	size_t len = strlen(err);
	while (len && (err[len - 1] == '\n' || err[len - 1] == '\r' || err[len - 1] == ' '))
		len--;
	size_t start = len;
	while (start && err[start - 1] != '\n')
		start--;
	char line[400];
	size_t n = len - start < sizeof line - 1 ? len - start : sizeof line - 1;
	memcpy(line, err + start, n);
	line[n] = '\0';
	tgi_sanitize(out, cap, line);
}

/* What the tool reads on stdin (new reference). */
static json_t *call_json(const tgi_exec_ctx *ctx, const json_t *args)
{
	return json_pack("{s:s, s:s, s:O, s:s, s:o}", "op_id", ctx->op_id, "tool", ctx->tool,
	                 "args", args, "principal", ctx->principal ? ctx->principal : "",
	                 "idempotency_key", ctx->idempotency_key
	                     ? json_string(ctx->idempotency_key) : json_null());
}

/* The environment's fixed names, then the tool's requires_env. */
static const char *const base_env[] = {"PATH", "HOME", "LANG", "TERM", "TMPDIR", "TOOLGATE_OP_ID"};

json_t *tgi_command_plan(const tgi_exec_ctx *ctx, const json_t *args)
{
	const tgi_tool_cfg *tc = ctx->data;
	json_t *argv = json_array(), *env = json_array();
	for (size_t i = 0; i < tc->command.n; i++)
		json_array_append_new(argv, tgi_json_text(tc->command.v[i], strlen(tc->command.v[i])));
	for (size_t i = 0; i < TGI_ARRAY_LEN(base_env); i++)
		if (i != 1 || getenv("HOME"))           /* HOME only when the gate has one */
			json_array_append_new(env, json_string(base_env[i]));
	for (size_t i = 0; i < tc->requires_env.n; i++)
		if (getenv(tc->requires_env.v[i]))
			json_array_append_new(env, json_string(tc->requires_env.v[i]));
	const tgi_sb_profile *pr = &tc->sandbox;
	tgi_sb_backend backend = pr->mode == TGI_SANDBOX_FULL ? TGI_SB_NONE
	                                                      : tgi_sandbox_probe()->backend;
	return json_pack("{s:o, s:s, s:o, s:o, s:{s:s, s:s, s:b}, s:i}", "argv", argv, "workdir",
	                 ".", "stdin", call_json(ctx, args), "env", env, "sandbox", "mode",
	                 tgi_sandbox_name(pr->mode), "backend", tgi_sb_backend_name(backend),
	                 "network", pr->net != TGI_NET_OFF, "timeout_s", ctx->timeout_s);
}

/* ---- the sandbox (as the shell tool sets it up: tools/shell.c) ---- */

static int child_setup(void *arg)
{
	return tgi_sandbox_child(arg);
}

static int sandbox_started(void *arg, pid_t pid, char *err, size_t errlen)
{
	return tgi_sandbox_started(arg, pid, err, errlen);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* What the audit removed after the run, as the call's warnings and one
 * event (tool.sandbox.removed).  found is taken. */
static void audit_notes(json_t *found, tgi_tool_out *out)
{
	size_t i;
	json_t *f;
	if (!found)
		return;
	out->warnings = json_array();
	json_array_foreach(found, i, f) {
		char msg[1024], shown[300];
		const char *path = json_string_value(json_object_get(f, "path"));
		const char *action = json_string_value(json_object_get(f, "action"));
		tgi_sanitize(shown, sizeof shown, path ? path : "?");
		tgi_snprintf(msg, sizeof msg, "the tool created %s; %s", shown, action ? action : "");
		json_array_append_new(out->warnings, json_string(msg));
	}
	out->events = json_pack("[{s:s,s:{s:o}}]", "type", "tool.sandbox.removed", "data",
	                        "found", found);
}

int tgi_command_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	const tgi_tool_cfg *tc = ctx->data;
	char tmpdir[PATH_MAX], err[512], p[PATH_MAX];
	tgi_strv prot = {0};
	tgi_sb_exec sb = {0};
	json_t *in = call_json(ctx, args);
	char *in_text = json_dumps(in, JSON_COMPACT);
	json_decref(in);
	if (!in_text) {
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message, "could not encode the call for the tool");
		return -1;
	}

	if (tc->sandbox.mode != TGI_SANDBOX_FULL &&
	    !tgi_spawn_findable(tc->command.v[0], getenv("PATH"))) {
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message, "the tool's command could not be "
		             "started: %s; ask the owner to fix the configuration", strerror(ENOENT));
		free(in_text);
		return -1;
	}
	const char *tbase = getenv("TMPDIR");
	tgi_snprintf(tmpdir, sizeof tmpdir, "%s/toolgate-tool-XXXXXX",
	             tbase && tbase[0] == '/' ? tbase : "/tmp");
	if (!mkdtemp(tmpdir)) {
		out->kind = TG_ERR_TRANSIENT;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message,
		             "cannot make a private temporary directory: %s; nothing was run",
		             strerror(errno));
		free(in_text);
		return -1;
	}
	for (size_t i = 0; i < ctx->nprotect; i++) {
		tgi_snprintf(p, sizeof p, "%s/%s", ctx->workspace, ctx->protect[i]);
		tgi_strv_push(&prot, tgi_strdup(p));
	}
	/* hidden: the gate's state, and what read rules keep from reading */
	tgi_strv masks = {0};
	tgi_strv_push(&masks, tgi_strdup(ctx->state_dir));
	tgi_sb_spec spec = {
		.profile = &tc->sandbox,
		.workspace = ctx->workspace,
		.tmpdir = tmpdir,
		.protect = (const char *const *)prot.v,
		.nprotect = prot.n,
		.quarantine = ctx->state_dir,
		.attach = ctx->net_attach,
		.attach_arg = ctx->net_attach_arg,
	};
	int have_sb = 0;
	if (tc->sandbox.mode == TGI_SANDBOX_FULL || !ctx->read_masks ||
	    ctx->read_masks(ctx, &masks, err, sizeof err) == 0) {
		spec.mask = (const char *const *)masks.v;
		spec.nmask = masks.n;
		have_sb = tgi_sandbox_prepare(&spec, tc->command.v, &sb, err, sizeof err) == 0;
	}
	tgi_strv_free(&prot);
	if (!have_sb) {
		out->kind = TG_ERR_NOT_PERMITTED;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message, "%s; nothing was run; do not retry; "
		             "ask the owner (toolgate doctor)", err);
		tgi_sandbox_release(&sb);
		tgi_strv_free(&masks);
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(in_text);
		return -1;
	}

	size_t nsb = 0;
	while (sb.env && sb.env[nsb])
		nsb++;
	char **envp = tgi_xcalloc(8 + nsb + tc->requires_env.n, sizeof *envp);
	size_t n = 0;
	env_add(envp, &n, "PATH", getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
	env_add(envp, &n, "HOME", sb.home ? sb.home : getenv("HOME"));
	env_add(envp, &n, "LANG", getenv("LANG") ? getenv("LANG") : "C.UTF-8");
	env_add(envp, &n, "TERM", "dumb");
	env_add(envp, &n, "TMPDIR", sb.tmpdir ? sb.tmpdir : tmpdir);
	env_add(envp, &n, "TOOLGATE_OP_ID", ctx->op_id);
	for (size_t i = 0; i < nsb; i++)             /* network by host: the proxy's */
		envp[n++] = tgi_strdup(sb.env[i]);
	for (size_t i = 0; i < tc->requires_env.n; i++) {
		const char *name = tc->requires_env.v[i];
		size_t k = 0, len = strlen(name);
		while (k < nsb && !(strncmp(sb.env[k], name, len) == 0 && sb.env[k][len] == '='))
			k++;
		if (k == nsb)                             /* the proxy's variables win */
			env_add(envp, &n, name, getenv(name));
	}

	tgi_spawn_opts o = {
		.cwd = ctx->workspace,
		.envp = envp,
		.in = in_text,
		.in_len = strlen(in_text),
		.timeout_s = ctx->timeout_s,
		.max_out = MAX_STDOUT,
		.cancel = ctx->cancel,
		.child_setup = child_setup,
		.child_arg = &sb,
		.started = sandbox_started,
		.started_arg = &sb,
	};
	tgi_spawn_result res;
	int rc = tgi_spawn_run(sb.argv, &o, &res);
	free(in_text);
	for (size_t i = 0; i < n; i++)
		free(envp[i]);
	free(envp);
	/* the tool and everything it started are gone (its pid namespace with
	 * it): what it made at a refused name goes now */
	if (rc == 0)
		audit_notes(tgi_sandbox_audit(&sb), out);
	tgi_sb_backend backend = sb.backend;
	tgi_sandbox_release(&sb);
	tgi_strv_free(&masks);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);

	if (rc == 0 && res.start_error[0]) {
		out->kind = TG_ERR_NOT_PERMITTED;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message, "%s; nothing was run", res.start_error);
		tgi_spawn_result_free(&res);
		return -1;
	}
	if (rc < 0 || res.spawn_errno) {
		int e = rc < 0 ? 0 : res.spawn_errno;
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message,
		             "the tool's command could not be started%s%s; ask the owner to fix the "
		             "configuration", e ? ": " : "", e ? strerror(e) : "");
		if (rc == 0)
			tgi_spawn_result_free(&res);
		return -1;
	}

	json_error_t je;
	json_t *parsed = res.out_len ? json_loadb(res.out, res.out_len, JSON_DECODE_ANY, &je) : NULL;
	char reason[400], why[256];
	stderr_reason(res.err, reason, sizeof reason);
	int ret = -1;

	if (res.cancelled) {
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out->message, sizeof out->message,
		             "the tool was stopped because the call was cancelled; it may have partly run");
	} else if (res.timed_out) {
		out->kind = TG_ERR_TIMEOUT;
		out->applied = TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out->message, sizeof out->message,
		             "the tool did not finish within %d s and was stopped; it may have partly "
		             "run", ctx->timeout_s);
	} else if (!res.exited) {
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out->message, sizeof out->message, "the tool was killed by signal %d",
		             res.signal);
	} else if (res.exit_code == EX_TEMPFAIL_CODE) {
		out->kind = TG_ERR_TRANSIENT;
		out->applied = TGI_APPLIED_NO;
		out->retry_after_s = 5;
		json_t *ra = json_is_object(parsed) ? json_object_get(parsed, "retry_after_s") : NULL;
		if (json_is_number(ra) && json_number_value(ra) > 0)
			out->retry_after_s = json_number_value(ra);
		tgi_snprintf(out->message, sizeof out->message, "temporary failure%s%s; retry later",
		             *reason ? ": " : "", reason);
	} else if (res.exited && tgi_sandbox_exec_failed(backend, res.exit_code, res.out_len,
	                                                 res.err, why, sizeof why)) {
		/* the wrapper could not start the program inside, by its words; a
		 * program can print them too, so what ran is not known */
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out->message, sizeof out->message, "the tool's program cannot be run "
		             "inside its sandbox (%s); ask the owner to name its directory in the "
		             "tool's sandbox.read (toolgate doctor shows what it sees)", why);
	} else if (res.exit_code != 0) {
		json_t *ap = json_is_object(parsed) ? json_object_get(parsed, "applied") : NULL;
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = json_is_false(ap) ? TGI_APPLIED_NO : TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out->message, sizeof out->message, "the tool failed (exit %d)%s%s",
		             res.exit_code, *reason ? ": " : "", reason);
	} else {
		if (parsed && !res.out_truncated) {
			out->output = parsed;
			parsed = NULL;
		} else if (res.out_truncated) {
			/* keep what fits; the shape stage spills it, the marker says why */
			tgi_buf b;
			tgi_buf_init(&b, MAX_STDOUT + 128);
			tgi_buf_append(&b, res.out, res.out_len);
			tgi_buf_printf(&b, "\n[... the tool printed more than %u bytes; the gate kept the "
			               "first %u ...]\n", MAX_STDOUT, MAX_STDOUT);
			out->output = tgi_json_text(b.p, b.len);
			tgi_buf_free(&b);
		} else {
			out->output = tgi_json_text(res.out, res.out_len); /* any bytes: valid UTF-8 */
		}
		ret = 0;
	}
	json_decref(parsed);
	tgi_spawn_result_free(&res);
	return ret;
}
