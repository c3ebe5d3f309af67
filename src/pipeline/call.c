/*
 * call.c — one call's own helpers: the reject path, the trace, the call's
 * events, the envelope of DESIGN §1 and the result a caller gets.
 *
 * Owns: what call.h declares of a call's state.  Must not: know the order
 * of the stages, name a part, or call the gate.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/call.h"
#include "util/util.h"

struct tg_result {
	tg_status status;
	char      op_id[37];
	json_t   *env;     /* owned */
	char     *compact; /* owned, lazily */
	char     *pretty;  /* owned, lazily */
};

tgi_verdict tgi_stop(tgi_call *c, tg_status st, tg_errkind kind, const char *field,
                     const char *fmt, ...)
{
	char raw[sizeof c->message];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	tgi_sanitize(c->message, sizeof c->message, raw);
	c->status = st;
	c->kind = kind;
	c->applied = TGI_APPLIED_NO;
	char clean[sizeof c->field];
	tgi_sanitize(clean, sizeof clean, field ? field : "");
	tgi_snprintf(c->field, sizeof c->field, "%s", clean);
	c->has_field = field != NULL;
	return TGI_STOP;
}

void tgi_trace(tgi_call *c, const char *stage, int ok, json_t *extra)
{
	json_t *rec = json_object();
	json_object_set_new_nocheck(rec, "stage", json_string_nocheck(stage));
	json_object_set_new_nocheck(rec, "ok", json_boolean(ok));
	if (extra) {
		json_object_update(rec, extra);
		json_decref(extra);
	}
	json_array_append_new(c->stages, rec);
}

void tgi_event_add(tgi_call *c, const char *type, const char *stage, json_t *data)
{
	if (c->nevents == TGI_MAX_EVENTS) {
		json_decref(data);
		return;
	}
	if (c->nevents == c->events_cap) {
		c->events_cap = c->events_cap ? c->events_cap * 2 : 8;
		c->events = tgi_xrealloc(c->events, c->events_cap * sizeof *c->events);
	}
	c->events[c->nevents++] = (tgi_event){
		.type = type, .stage = stage, .data = data, .ts_ms = tgi_unix_ms()};
}

json_t *tgi_envelope(const tgi_call *c)
{
	static const char *const applied[] = {
#define XX(a, name) name,
		TGI_APPLIED_MAP(XX)
#undef XX
	};
	json_t *err = json_null();
	if (c->kind != TG_ERR_NONE) {
		err = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "kind", tg_errkind_name(c->kind),
		                "message", c->message, "rule", tgi_json_str_or_null(c->error_rule),
		                "field", c->has_field ? json_string(c->field) : json_null(),
		                "retry_after_s",
		                c->retry_after_s > 0 ? json_real(c->retry_after_s) : json_null(),
		                "applied", applied[c->applied]);
		if (c->approval_id[0])
			json_object_set_new(err, "approval_id", json_string(c->approval_id));
	}
	json_t *env = json_object();
	json_object_set_new(env, "op_id", json_string(c->op_id));
	json_object_set_new(env, "call_id", tgi_json_str_or_null(c->call_id));
	if (c->client_call_id[0])
		json_object_set_new(env, "client_call_id", json_string(c->client_call_id));
	json_object_set_new(env, "session", tgi_json_str_or_null(c->session));
	json_object_set_new(env, "tool", tgi_json_str_or_null(c->tool));
	json_object_set_new(env, "status", json_string(tg_status_name(c->status)));
	json_object_set_new(env, "error", err);
	json_object_set_new(env, "output", c->output ? json_incref(c->output) : json_null());
	json_object_set_new(env, "truncated", c->truncated ? json_incref(c->truncated) : json_null());
	json_object_set_new(env, "idempotency_key", tgi_json_str_or_null(c->idem_key));
	json_object_set_new(env, "principal", tgi_json_str_or_null(c->principal_name));
	json_object_set_new(env, "stages", json_incref(c->stages));
	json_object_set_new(env, "duration_ms", json_real((double)(long)(c->duration_ms * 1000) / 1000));
	if (c->warnings)
		json_object_set(env, "warnings", c->warnings);
	if (c->hint)
		json_object_set_new(env, "hint", json_string(c->hint));
	return env;
}

/* ---- the result ---- */

tg_result *tgi_call_result(tgi_call *c)
{
	tg_result *r = tgi_xcalloc(1, sizeof *r);
	r->status = c->status;
	memcpy(r->op_id, c->op_id, sizeof r->op_id);
	r->env = c->envelope ? c->envelope : tgi_envelope(c);

	json_decref(c->args);
	json_decref(c->output);
	json_decref(c->truncated);
	json_decref(c->stages);
	json_decref(c->warnings);
	free(c->hint);
	free(c->args_logged);
	free(c->loop_entry);
	free(c->args_canon);
	free(c->idem_scope);
	for (size_t i = 0; i < c->npaths; i++) {
		free(c->paths[i]);
		free(c->resolved[i]);
	}
	free(c->paths);
	free(c->resolved);
	tgi_cmdline_free(&c->cmds);
	for (size_t i = 0; i < c->nevents; i++)
		json_decref(c->events[i].data);
	free(c->events);
	return r;
}

tg_status tg_result_status(const tg_result *r)
{
	return r->status;
}

const char *tg_result_op_id(const tg_result *r)
{
	return r->op_id;
}

const char *tg_result_json(const tg_result *r, int pretty)
{
	tg_result *m = (tg_result *)r; /* lazily rendered cache */
	char **slot = pretty ? &m->pretty : &m->compact;
	if (!*slot)
		*slot = json_dumps(r->env, (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_REAL_PRECISION(6));
	return *slot ? *slot : "{}";
}

void tg_result_free(tg_result *r)
{
	if (!r)
		return;
	json_decref(r->env);
	free(r->compact);
	free(r->pretty);
	free(r);
}

const json_t *tgi_result_envelope(const tg_result *r)
{
	return r->env;
}
