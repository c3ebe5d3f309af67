/*
 * dispatch.c — a model's response through the gate: decode it with the
 * API's protocol, run every call as one batch, encode the results the way
 * that API expects; and the API-shaped tool definitions.
 *
 * A custom/freeform call (raw text input) goes to a tool that takes one
 * required string argument: the text becomes that argument (apply_patch's
 * `patch`); any other tool gets it as an invalid call.  A call the decoder
 * marked invalid (bad JSON, a cut stream) is recorded as `invalid` with its
 * sentence and not run.  Every call gets exactly one result.
 *
 * Owns: the mapping between wire calls and gate requests.  Must not:
 * parse wire formats (the protocol files do) or decide anything.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "protocol/protocol.h"
#include "util/util.h"

char *tg_tools_format(tg_gate *g, const char *profile, const char *api, int gemini_legacy,
                      char **errmsg)
{
	char err[512];
	const tgi_protocol *p = tgi_protocol_find(api);
	if (!p) {
		tgi_fail(errmsg, "unknown API \"%s\"; expected openai-chat, openai-responses, "
		         "anthropic or gemini", api ? api : "");
		return NULL;
	}
	json_t *defs = tgi_tool_defs(g, profile, errmsg);
	if (!defs)
		return NULL;
	json_t *tools = p->tools(defs, gemini_legacy ? TGI_DIALECT_GEMINI_LEGACY : 0, err, sizeof err);
	json_decref(defs);
	if (!tools) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	char *s = json_dumps(tools, JSON_INDENT(2));
	json_decref(tools);
	return s;
}

/* The one required string argument of a tool, for raw input; NULL if the
 * tool has not exactly one such. */
static const char *raw_arg(tg_gate *g, const char *tool)
{
	const tgi_entry *e = tool ? tgi_registry_need(g->reg, tool) : NULL;
	const json_t *req = e ? json_object_get(e->schema_json, "required") : NULL;
	const json_t *props = e ? json_object_get(e->schema_json, "properties") : NULL;
	if (json_array_size(req) != 1)
		return NULL;
	const char *name = json_string_value(json_array_get(req, 0));
	const json_t *type = json_object_get(json_object_get(props, name), "type");
	return name && json_is_string(type) && !strcmp(json_string_value(type), "string") ? name : NULL;
}

/* Does the schema accept null itself? */
static int allows_null(const json_t *schema)
{
	const json_t *t = json_object_get(schema, "type");
	size_t i;
	json_t *v;
	if (json_is_string(t))
		return !strcmp(json_string_value(t), "null");
	json_array_foreach(t, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), "null"))
			return 1;
	return !t && !json_object_get(schema, "properties");   /* untyped: anything */
}

/*
 * OpenAI strict mode makes every property required and the optional ones
 * nullable (dialect.c), so a strict model sends `"offset": null` for what
 * it leaves out.  Drop such nulls where the tool's own schema has the
 * property optional and not nullable, at any depth, before the gate
 * validates against that schema.
 */
static void strip_strict_nulls(json_t *v, const json_t *schema, int depth)
{
	if (!json_is_object(schema) || depth > 32)
		return;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
			strip_strict_nulls(e, json_object_get(schema, "items"), depth + 1);
		return;
	}
	const json_t *props = json_object_get(schema, "properties"), *req = json_object_get(schema, "required");
	const char *key;
	json_t *val, *tmp;
	if (!json_is_object(v) || !json_is_object(props))
		return;
	json_object_foreach_safe(v, tmp, key, val) {
		const json_t *ps = json_object_get(props, key);
		int required = 0;
		size_t i;
		json_t *r;
		json_array_foreach(req, i, r)
			required |= json_is_string(r) && !strcmp(json_string_value(r), key);
		if (json_is_null(val) && ps && !required && !allows_null(ps))
			json_object_del(v, key);
		else
			strip_strict_nulls(val, ps, depth + 1);
	}
}

/* The args text of a strict OpenAI call with its nulls dropped (new
 * string), or NULL to keep the text as it is. */
static char *unstrict_args(tg_gate *g, const tgi_pcall *c)
{
	const tgi_entry *e = c->name ? tgi_registry_need(g->reg, c->name) : NULL;
	json_error_t je;
	json_t *a = e && c->args ? json_loadb(c->args, c->args_len, JSON_REJECT_DUPLICATES, &je) : NULL;
	char *s = NULL;
	if (json_is_object(a)) {
		strip_strict_nulls(a, e->schema_json, 0);
		s = json_dumps(a, JSON_COMPACT);
	}
	json_decref(a);
	return s;
}

/* What the model reads of one result: the output or the error, then the
 * gate's notes (deprecated fields, a loop hint). */
static char *result_body(const json_t *env, int is_error);

static char *result_text(const json_t *env, int is_error)
{
	char *body = result_body(env, is_error);
	char *notes = tgi_envelope_notes(env);
	if (!notes)
		return body;
	size_t n = strlen(body) + strlen(notes) + 3;
	char *s = tgi_xmalloc(n);
	snprintf(s, n, "%s%s%s", body, *body ? "\n\n" : "", notes);
	free(body);
	free(notes);
	return s;
}

static char *result_body(const json_t *env, int is_error)
{
	if (is_error) {
		const json_t *e = json_object_get(env, "error");
		const char *kind = json_string_value(json_object_get(e, "kind"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		size_t n = 64 + (kind ? strlen(kind) : 0) + (msg ? strlen(msg) : 0);
		char *s = tgi_xmalloc(n);
		snprintf(s, n, "%s (%s): %s", json_string_value(json_object_get(env, "status")),
		         kind ? kind : "error", msg ? msg : "");
		return s;
	}
	const json_t *out = json_object_get(env, "output");
	const json_t *sum = json_is_object(out) ? json_object_get(out, "summary") : NULL;
	if (json_is_string(out))
		return tgi_strdup(json_string_value(out));
	if (json_is_string(sum))
		return tgi_strdup(json_string_value(sum));
	char *s = out ? json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	return s ? s : tgi_strdup("");
}

/* invalid, denied, pending or failed: the model reads an error */
static int status_is_error(tg_status st)
{
	return st == TG_INVALID || st == TG_DENIED || st == TG_PENDING || st == TG_FAILED;
}

int tgi_status_is_error(const char *status)
{
	for (int st = 0; status && st < TG_STATUS__COUNT; st++)
		if (!strcmp(status, tg_status_name((tg_status)st)))
			return status_is_error((tg_status)st);
	return 1;
}

/*
 * The call id the gate records for call i, when it is not the call's own:
 * an id the Gemini decoder made up ("gemini-<index>-<name>") is the same in
 * every reply, and would make a later call a replay (or a conflict) of an
 * earlier one in the session, so it gets token, drawn once per batch,
 * appended.  NULL: the call's own id.  Caller frees.
 */
static char *gate_id(const tgi_protocol *p, const tgi_pcall *c, size_t i, char token[37])
{
	if (strcmp(p->name, "gemini") || !tgi_gemini_id_made_up(c, i))
		return NULL;
	if (!token[0])
		tgi_uuidv7(token);
	size_t len = strlen(c->id) + 39;
	char *s = tgi_xmalloc(len);
	snprintf(s, len, "%s@%s", c->id, token);
	return s;
}

void tgi_dispatch_request(struct tg_gate *g, const tgi_protocol *p, const tgi_pcall *c,
                          tg_request *rq, char **wrapped)
{
	*wrapped = NULL;
	*rq = (tg_request){.tool = c->name, .args = c->args, .args_len = c->args ? c->args_len : 0,
	                   .call_id = c->id, .invalid = c->error};
	if (!c->raw && !c->error && !strncmp(p->name, "openai-", 7) &&
	    (*wrapped = unstrict_args(g, c))) {
		rq->args = *wrapped;
		rq->args_len = strlen(*wrapped);
	}
	if (c->raw && !c->error) {
		const char *arg = raw_arg(g, c->name);
		if (arg) {
			json_t *o = json_pack("{s:s%}", arg, c->args ? c->args : "",
			                      c->args ? c->args_len : (size_t)0);
			*wrapped = o ? json_dumps(o, JSON_COMPACT) : NULL;
			json_decref(o);
			rq->args = *wrapped;
			rq->args_len = *wrapped ? strlen(*wrapped) : 0;
		}
		if (!arg || !*wrapped)
			rq->invalid = "this tool takes JSON arguments, not free text; call it as a "
			              "function with a JSON object";
	}
}

json_t *tgi_dispatch_calls(struct tg_gate *g, const tgi_protocol *p, const tgi_pcalls *calls,
                           const char *session, const char *principal, json_t **envelopes)
{
	size_t n = calls->n;
	tg_request *rq = tgi_xcalloc(n + 1, sizeof *rq);
	tg_result **rs = tgi_xcalloc(n + 1, sizeof *rs);
	char **wrapped = tgi_xcalloc(n + 1, sizeof *wrapped);
	char **ids = tgi_xcalloc(n + 1, sizeof *ids);
	char token[37] = "";
	for (size_t i = 0; i < n; i++) {
		const tgi_pcall *c = &calls->v[i];
		ids[i] = gate_id(p, c, i, token);
		tgi_dispatch_request(g, p, c, &rq[i], &wrapped[i]);
		rq[i].call_id = ids[i] ? ids[i] : c->id;
		rq[i].session = session;
		rq[i].principal = principal;
	}
	tg_call_batch(g, rq, n, rs);

	tgi_presult *res = tgi_xcalloc(n + 1, sizeof *res);
	json_t **envs = tgi_xcalloc(n + 1, sizeof *envs);
	char **texts = tgi_xcalloc(n + 1, sizeof *texts);
	if (envelopes)
		*envelopes = json_array();
	for (size_t i = 0; i < n; i++) {
		json_error_t je;
		tg_status st = tg_result_status(rs[i]);
		envs[i] = json_loads(tg_result_json(rs[i], 0), 0, &je);
		texts[i] = result_text(envs[i], status_is_error(st));
		res[i] = (tgi_presult){tg_status_name(st), status_is_error(st), texts[i], envs[i]};
		if (envelopes)
			json_array_append(*envelopes, envs[i] ? envs[i] : json_null());
	}
	json_t *msgs = p->results(calls, res);
	for (size_t i = 0; i < n; i++) {
		tg_result_free(rs[i]);
		json_decref(envs[i]);
		free(texts[i]);
		free(wrapped[i]);
		free(ids[i]);
	}
	free(rq);
	free(rs);
	free(wrapped);
	free(ids);
	free(res);
	free(envs);
	free(texts);
	return msgs;
}

/* The line per call of tg_dispatch's summary: "call_id tool status [kind: message]". */
static void summary_line(tgi_buf *sum, const tgi_pcall *c, const json_t *env)
{
	const char *status = json_string_value(json_object_get(env, "status"));
	const json_t *e = json_object_get(env, "error");
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	char shown[300] = "";
	tgi_sanitize(shown, sizeof shown, msg ? msg : "");
	tgi_buf_printf(sum, "%s %s %s", c->id ? c->id : "-", c->name ? c->name : "-",
	               status ? status : "?");
	if (status && tgi_status_is_error(status))
		tgi_buf_printf(sum, " %s: %s", kind ? kind : "error", shown);
	tgi_buf_puts(sum, "\n");
}

char *tg_dispatch(tg_gate *g, const char *api, const char *text, size_t len, int stream,
                  const char *session, const char *principal, char **summary, char **errmsg)
{
	char err[1024];
	tgi_pcalls calls = {0};
	const tgi_protocol *p = tgi_protocol_find(api);
	if (summary)
		*summary = NULL;
	if (!p) {
		tgi_fail(errmsg, "unknown API \"%s\"; expected openai-chat, openai-responses, "
		         "anthropic or gemini", api ? api : "");
		return NULL;
	}
	if ((stream ? p->decode_stream : p->decode)(text, len, &calls, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		tgi_pcalls_free(&calls);
		return NULL;
	}
	json_t *envs = NULL;
	json_t *msgs = tgi_dispatch_calls(g, p, &calls, session, principal, &envs);
	char *out = json_dumps(msgs, JSON_INDENT(2));
	json_decref(msgs);
	if (summary) {
		tgi_buf sum;
		tgi_buf_init(&sum, 1u << 24);
		for (size_t i = 0; i < calls.n; i++)
			summary_line(&sum, &calls.v[i], json_array_get(envs, i));
		*summary = sum.p ? tgi_buf_steal(&sum) : tgi_strdup("");
		tgi_buf_free(&sum);
	}
	json_decref(envs);
	tgi_pcalls_free(&calls);
	return out;
}
