/*
 * bridged.c — the handler of every tool bridged from a downstream MCP
 * server (src/mcp/bridge.c makes the rows; DESIGN §2, §6).
 *
 * One call is one tools/call on the tool's server, with the downstream
 * name, the validated arguments, the call's timeout and its cancel flag;
 * the server's progress notifications go to ctx->cb->progress.  The answer
 * becomes the tool's output or error:
 *
 *   result                 -> output {content[, structuredContent, ...]}
 *   result, isError: true  -> tool_error, the text content as the message,
 *                             applied unknown
 *   JSON-RPC error         -> tool_error with the server's message, applied
 *                             no for -32601/-32602 (nothing ran), else unknown
 *   no answer in time      -> timeout, applied unknown
 *   the exchange failed    -> tool_error with the client's sentence (an
 *   (connection still up)     HTTP error status, an answer too long),
 *                             applied unknown
 *   cancelled              -> tool_error "cancelled", applied unknown
 *   connection lost        -> tool_error, applied unknown
 *   server not running     -> transient with retry_after_s, applied no
 *
 * A dry run's plan names the server, the tool's name there and the
 * arguments it would get; nothing is sent.
 *
 * Owns: turning one call into one request and its answer into a result.
 * Must not: check permissions (the pipeline did), retry, touch the ledger,
 * or close the connection (the bridge does, when no call holds it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/bridge.h"
#include "mcp/client.h"
#include "registry.h"
#include "util/util.h"

#define ERROR_TEXT_MAX 500 /* characters of a tool's error text kept in the message */

static void set_error(tgi_tool_out *out, tg_errkind kind, tgi_applied applied, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

static void set_error(tgi_tool_out *out, tg_errkind kind, tgi_applied applied, const char *fmt,
                      ...)
{
	char msg[sizeof out->message];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_sanitize(out->message, sizeof out->message, msg);
	out->kind = kind;
	out->applied = applied;
}

/* notifications/progress params -> the caller's progress callback. */
static void on_progress(void *arg, const json_t *params)
{
	const tgi_exec_ctx *ctx = arg;
	json_t *p = json_object_get(params, "progress");
	json_t *t = json_object_get(params, "total");
	if (!json_is_number(p))
		return;
	ctx->cb->progress(ctx->cb->arg, json_number_value(p),
	                  json_is_number(t) ? json_number_value(t) : -1,
	                  json_string_value(json_object_get(params, "message")));
}

/* The text blocks of an error result, joined: at most ERROR_TEXT_MAX
 * characters, sanitised.  "" when there is none. */
static void error_text(const json_t *result, char *out, size_t cap)
{
	tgi_buf b;
	size_t i;
	json_t *block;

	tgi_buf_init(&b, 4 * ERROR_TEXT_MAX);
	json_array_foreach(json_object_get(result, "content"), i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));
		const char *text = json_string_value(json_object_get(block, "text"));
		if (!type || strcmp(type, "text") || !text)
			continue;
		if ((b.len && tgi_buf_puts(&b, " ") < 0) || tgi_buf_puts(&b, text) < 0)
			break; /* what fits is enough */
	}
	tgi_sanitize_n(out, cap, b.p ? b.p : "", b.len, ERROR_TEXT_MAX);
	tgi_buf_free(&b);
}

/* A successful result as the tool's output: the result without isError and
 * _meta, with a content list whatever the server sent. */
static json_t *output_of(const json_t *result)
{
	json_t *o = json_deep_copy(result);
	json_object_del(o, "isError");
	json_object_del(o, "_meta");
	if (!json_is_array(json_object_get(o, "content")))
		json_object_set_new(o, "content", json_array());
	return o;
}

/* The server answered with a JSON-RPC error object. */
static void rpc_error(const tgi_bridge_target *t, const json_t *error, tgi_tool_out *out)
{
	json_int_t code = json_integer_value(json_object_get(error, "code"));
	const char *m = json_string_value(json_object_get(error, "message"));
	char msg[ERROR_TEXT_MAX + 4];
	tgi_sanitize_n(msg, sizeof msg, m ? m : "(no message)", m ? strlen(m) : 12, ERROR_TEXT_MAX);
	int refused = code == -32601 || code == -32602;
	set_error(out, TG_ERR_TOOL_ERROR, refused ? TGI_APPLIED_NO : TGI_APPLIED_UNKNOWN,
	          "the MCP server \"%s\" %s the call of %s: %s", t->server,
	          refused ? "refused" : "failed", t->remote, msg);
}

int tgi_bridged_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	tgi_bridge_target t;
	double retry = 1;
	char err[512] = "";

	tgi_bridge_call *call = tgi_bridge_call_begin(ctx->data, ctx, &t, &retry, err, sizeof err);
	if (!call) {
		set_error(out, TG_ERR_TRANSIENT, TGI_APPLIED_NO, "%s", err);
		out->retry_after_s = retry;
		return -1;
	}

	json_t *params = json_pack("{s:s, s:O}", "name", t.remote, "arguments", args);
	int progress = ctx->cb && ctx->cb->progress;
	int timeout_ms = ctx->timeout_s > 0 ? ctx->timeout_s * 1000 : 0;
	json_t *result = NULL, *error = NULL;
	int cancelled = 0;
	double started_ms = tgi_now_ms();
	int rc = tgi_mcp_client_request(t.client, "tools/call", params, timeout_ms, ctx->cancel,
	                                progress ? on_progress : NULL, (void *)ctx, &result, &error,
	                                &cancelled, err, sizeof err);
	int alive = tgi_mcp_client_alive(t.client);
	tgi_bridge_call_end(call); /* t.client is not ours past here */

	if (rc == 0 && !json_is_object(result)) {
		set_error(out, TG_ERR_TOOL_ERROR, TGI_APPLIED_UNKNOWN,
		          "the MCP server \"%s\" answered the call of %s with something other than a "
		          "result object", t.server, t.remote);
		rc = -1;
	} else if (rc == 0 && json_is_true(json_object_get(result, "isError"))) {
		char text[ERROR_TEXT_MAX + 4];
		error_text(result, text, sizeof text);
		set_error(out, TG_ERR_TOOL_ERROR, TGI_APPLIED_UNKNOWN, "%s",
		          text[0] ? text : "the tool reported an error without a message");
		rc = -1;
	} else if (rc == 0) {
		out->output = output_of(result);
	} else if (error) {
		rpc_error(&t, error, out);
	} else if (cancelled) {
		set_error(out, TG_ERR_TOOL_ERROR, TGI_APPLIED_UNKNOWN, "cancelled");
	} else if (!alive) {
		set_error(out, TG_ERR_TOOL_ERROR, TGI_APPLIED_UNKNOWN,
		          "the MCP server \"%s\" went away during the call of %s (%s); it may have taken "
		          "effect in part; toolgate is restarting the server", t.server, t.remote, err);
	} else if (timeout_ms > 0 && tgi_now_ms() - started_ms >= timeout_ms) {
		set_error(out, TG_ERR_TIMEOUT, TGI_APPLIED_UNKNOWN,
		          "the MCP server \"%s\" did not answer the call of %s within %d s; it may have "
		          "taken effect in part", t.server, t.remote, ctx->timeout_s);
	} else {
		/* the exchange failed with the connection still up (an HTTP error
		 * status, an answer over the size limit): the client's sentence */
		set_error(out, TG_ERR_TOOL_ERROR, TGI_APPLIED_UNKNOWN,
		          "the call of %s on the MCP server \"%s\" failed: %s; it may have taken effect "
		          "in part", t.remote, t.server, err[0] ? err : "no answer came");
	}
	json_decref(result);
	json_decref(error);
	return rc == 0 ? 0 : -1;
}

json_t *tgi_bridged_plan(const tgi_exec_ctx *ctx, const json_t *args)
{
	const char *server, *remote;
	tgi_bridge_tool_names(ctx->data, &server, &remote);
	return json_pack("{s:o, s:o, s:O}", "server", tgi_json_text(server, strlen(server)), "tool",
	                 tgi_json_text(remote, strlen(remote)), "arguments", args);
}
