/*
 * result.c — a call's envelope as an MCP CallToolResult, and the
 * outputSchema that describes its structuredContent (see result.h).
 *
 * Owns: the status object (what the model reads when a call did not simply
 * persist), the content text, the envelope under _meta.  Must not: decide
 * anything, or drop anything from the envelope.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mcp/result.h"
#include "util/util.h"

/* The status object's schema (the second branch of every outputSchema). */
static const char status_schema[] =
    "{\"description\":\"toolgate's status object: the call did not simply persist, or toolgate "
    "has notes for the model (see toolgate's docs/MCP.md)\","
    "\"type\":\"object\",\"properties\":{"
    "\"status\":{\"enum\":[\"invalid\",\"denied\",\"pending\",\"failed\",\"committed\","
    "\"persisted\",\"replayed\",\"dry_run\"]},"
    "\"output\":{},"
    "\"error\":{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\"},"
    "\"message\":{\"type\":\"string\"}},\"required\":[\"kind\",\"message\"]},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"hint\":{\"type\":\"string\"}},"
    "\"required\":[\"status\"],\"additionalProperties\":false}";

/* The statuses whose tool ran, or would have (not isError). */
static int succeeded(const char *st)
{
	return st && (!strcmp(st, "persisted") || !strcmp(st, "replayed") ||
	              !strcmp(st, "committed") || !strcmp(st, "dry_run"));
}

/* Has the gate something to tell the model beside the output? */
static int has_notes(const json_t *env)
{
	return json_array_size(json_object_get(env, "warnings")) > 0 ||
	       json_is_string(json_object_get(env, "hint"));
}

/* What the model needs of the envelope's error: the kind and the sentence,
 * and where they say something, the field, the retry delay, whether a
 * failed call may have acted, the approval and how it is given.  The rule
 * that decided stays in the envelope (terse outward, detailed inward). */
static json_t *model_error(const json_t *err, const char *st)
{
	static const char *const keep[] = {"kind", "message", "field", "retry_after_s"};
	json_t *o = json_object();
	for (size_t i = 0; i < TGI_ARRAY_LEN(keep); i++) {
		json_t *v = json_object_get(err, keep[i]);
		if (v && !json_is_null(v))
			json_object_set(o, keep[i], v);
	}
	json_t *applied = json_object_get(err, "applied");
	if (json_is_string(applied) && (!strcmp(st, "failed") || !strcmp(st, "committed")))
		json_object_set(o, "applied", applied);
	const char *aid = json_string_value(json_object_get(err, "approval_id"));
	if (aid) {
		json_object_set_new(o, "approval_id", json_string(aid));
		if (!strcmp(st, "pending")) {
			char cmd[96];
			tgi_snprintf(cmd, sizeof cmd, "toolgate approvals approve %s", aid);
			json_object_set_new(o, "approve_with", json_string(cmd));
		}
	}
	return o;
}

/* {status, output?, error?, warnings?, hint?}; output is left out when
 * with_output is 0 (a bridged tool's blocks carry it). */
static json_t *status_object(const json_t *env, int with_output)
{
	const char *st = json_string_value(json_object_get(env, "status"));
	json_t *o = json_pack("{s:s}", "status", st ? st : "failed");
	json_t *out = json_object_get(env, "output");
	if (with_output && out && !json_is_null(out))
		json_object_set(o, "output", out);
	json_t *err = json_object_get(env, "error");
	if (json_is_object(err))
		json_object_set_new(o, "error", model_error(err, st ? st : "failed"));
	json_t *w = json_object_get(env, "warnings");
	if (json_array_size(w))
		json_object_set(o, "warnings", w);
	json_t *hint = json_object_get(env, "hint");
	if (json_is_string(hint))
		json_object_set(o, "hint", hint);
	return o;
}

/* What an error result's content says, in the form of the spec's tool
 * execution errors (and of what Claude Code gives the model on an error):
 * "denied: <the sentence>", the command that approves a queued call, the
 * notes. */
static json_t *error_block(const json_t *env)
{
	const json_t *err = json_object_get(env, "error");
	const char *st = json_string_value(json_object_get(env, "status"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	const char *aid = json_string_value(json_object_get(err, "approval_id"));
	tgi_buf b;
	tgi_buf_init(&b, 8192);
	tgi_buf_printf(&b, "%s: %s", st ? st : "failed", msg ? msg : "the call did not run");
	if (aid && st && !strcmp(st, "pending"))
		tgi_buf_printf(&b, "\nThe owner approves it with: toolgate approvals approve %s", aid);
	char *notes = tgi_envelope_notes(env);
	if (notes)
		tgi_buf_printf(&b, "\n%s", notes);
	free(notes);
	char *text = tgi_buf_steal(&b);
	json_t *block = json_pack("{s:s, s:s}", "type", "text", "text", text ? text : "");
	free(text);
	return block;
}

/* One text block: a string as it is, anything else as compact JSON. */
static json_t *text_block(const json_t *v)
{
	if (json_is_string(v))
		return json_pack("{s:s, s:O}", "type", "text", "text", v);
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *b = json_pack("{s:s, s:s}", "type", "text", "text", s ? s : "null");
	free(s);
	return b;
}

int tgi_mcp_client_shows_meta(const char *client_name)
{
	static const char *const shows[] = {"gemini-cli-mcp-client"};
	for (size_t i = 0; client_name && i < TGI_ARRAY_LEN(shows); i++)
		if (!strcmp(client_name, shows[i]))
			return 1;
	return 0;
}

json_t *tgi_mcp_result(const tgi_entry *e, const json_t *env, int with_envelope)
{
	const char *st = json_string_value(json_object_get(env, "status"));
	const json_t *out = json_object_get(env, "output");
	int ok = succeeded(st);
	int plain = ok && !strcmp(st, "persisted") && !has_notes(env);
	int bridged = ok && strcmp(st, "dry_run") && e && e->row->mcp_result &&
	              json_is_array(json_object_get(out, "content"));
	json_t *sc = NULL, *content = NULL;

	if (plain && bridged) {
		/* the server's own result, as it came */
		json_t *dsc = json_object_get(out, "structuredContent");
		sc = json_is_object(dsc) ? json_incref(dsc) : NULL;
		content = json_deep_copy(json_object_get(out, "content"));
	} else if (plain && json_is_object(out)) {
		sc = json_incref((json_t *)out);
	} else if (plain && (!e || !e->output_schema)) {
		content = json_pack("[o]", text_block(out));
	} else if (bridged) {
		/* the blocks stay (images, resources); what the gate adds follows them */
		sc = status_object(env, 1);
		json_t *note = status_object(env, 0);
		content = json_deep_copy(json_object_get(out, "content"));
		json_array_append_new(content, text_block(note));
		json_decref(note);
	} else {
		sc = status_object(env, 1);
		if (!ok)
			content = json_pack("[o]", error_block(env));
	}
	if (!content)
		content = json_pack("[o]", text_block(sc));

	json_t *r = json_pack("{s:o}", "content", content);
	if (sc)
		json_object_set_new(r, "structuredContent", sc);
	json_object_set_new(r, "isError", json_boolean(!ok));
	if (with_envelope)
		json_object_set_new(r, "_meta", json_pack("{s:O}", TGI_MCP_ENVELOPE_KEY, env));
	return r;
}

json_t *tgi_mcp_output_schema(const tgi_entry *e)
{
	static const char *const hoisted[] = {"$schema", "$id", "$defs", "definitions"};
	const json_t *own = e->output_schema;
	/* a bridged tool's output is its server's whole result: the registered
	 * schema is that result's, with the server's own at structuredContent */
	if (e->row->mcp_result)
		own = json_object_get(json_object_get(own, "properties"), "structuredContent");
	if (!json_is_object(own))
		return NULL;
	json_t *tool = json_deep_copy(own);
	json_t *root = json_object();
	for (size_t i = 0; i < 2; i++) {           /* $schema, $id first */
		json_t *v = json_object_get(tool, hoisted[i]);
		if (v) {
			json_object_set(root, hoisted[i], v);
			json_object_del(tool, hoisted[i]);
		}
	}
	json_object_set_new(root, "type", json_string("object"));
	json_object_set_new(root, "anyOf", json_pack("[o, o]", tool,
	                                             json_loads(status_schema, 0, NULL)));
	for (size_t i = 2; i < TGI_ARRAY_LEN(hoisted); i++) {
		json_t *v = json_object_get(tool, hoisted[i]);
		if (v) {
			json_object_set(root, hoisted[i], v);
			json_object_del(tool, hoisted[i]);
		}
	}
	return root;
}
