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
 * A dry run's plan shows the argv, the stdin JSON, the environment's
 * names (never the values of requires_env: they are the tool's secrets)
 * and the timeout.
 *
 * Owns: turning one call into one process and its answer into a result.
 * Must not: check permissions (the pipeline did), retry, or touch the ledger.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exec/spawn.h"
#include "gate.h"
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
	return json_pack("{s:o, s:s, s:o, s:o, s:i}", "argv", argv, "workdir", ".", "stdin",
	                 call_json(ctx, args), "env", env, "timeout_s", ctx->timeout_s);
}

int tgi_command_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	const tgi_tool_cfg *tc = ctx->data;
	json_t *in = call_json(ctx, args);
	char *in_text = json_dumps(in, JSON_COMPACT);
	json_decref(in);
	if (!in_text) {
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_NO;
		tgi_snprintf(out->message, sizeof out->message, "could not encode the call for the tool");
		return -1;
	}

	char **envp = tgi_xcalloc(8 + tc->requires_env.n, sizeof *envp);
	size_t n = 0;
	env_add(envp, &n, "PATH", getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
	env_add(envp, &n, "HOME", getenv("HOME"));
	env_add(envp, &n, "LANG", getenv("LANG") ? getenv("LANG") : "C.UTF-8");
	env_add(envp, &n, "TERM", "dumb");
	env_add(envp, &n, "TMPDIR", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	env_add(envp, &n, "TOOLGATE_OP_ID", ctx->op_id);
	for (size_t i = 0; i < tc->requires_env.n; i++)
		env_add(envp, &n, tc->requires_env.v[i], getenv(tc->requires_env.v[i]));

	tgi_spawn_opts o = {
		.cwd = ctx->workspace,
		.envp = envp,
		.in = in_text,
		.in_len = strlen(in_text),
		.timeout_s = ctx->timeout_s,
		.max_out = MAX_STDOUT,
		.cancel = ctx->cancel,
	};
	tgi_spawn_result res;
	int rc = tgi_spawn_run(tc->command.v, &o, &res);
	free(in_text);
	for (size_t i = 0; i < n; i++)
		free(envp[i]);
	free(envp);

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
	char reason[400];
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
