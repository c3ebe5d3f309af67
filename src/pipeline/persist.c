/*
 * persist.c — stage 8: every call ends in exactly one ledger row.
 *
 * Runs once on every path (like nginx's log phase): the envelope, the
 * redacted args and their sha256, and the call's events go to the ledger in
 * one transaction, which also settles the call's idempotency claim and
 * saves what the middleware keeps (its loop-window entry, the session's
 * manifest digest; a rate-limit token was taken in the ledger already).  What is written is redacted
 * (mw.h): the caller still gets the real envelope.  A read-only call's
 * output is kept as its size and sha256 (output_digest, output null): no
 * one replays it, and it is most of what a record writes; a side-effecting
 * call's is kept whole, since a replay returns it (ledger.keep_output:
 * all keeps every output).  A tool that succeeded but whose row could not
 * be written is `committed` (the side effect happened; the record did
 * not).
 *
 * Owns: the ops row and events of this call.  Must not: change what the
 * call did, or retry the tool.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

static const char *final_event(tg_status st)
{
	switch (st) {
	case TG_INVALID:   return "tool.call.invalid";
	case TG_DENIED:    return "tool.call.denied";
	case TG_PENDING:   return "tool.call.pending";
	case TG_FAILED:    return NULL; /* execute already said tool.call.failed */
	case TG_COMMITTED: return "tool.call.committed";
	case TG_PERSISTED: return "tool.call.persisted";
	case TG_REPLAYED:  return NULL; /* execute said tool.call.replayed */
	case TG_DRY_RUN:   return NULL;
	default:           return NULL;
	}
}

/* stored (taken) with its error message as it may be kept (tgi_redacted_message):
 * a new top level where it differs, so that the caller's envelope stays as it is. */
static json_t *kept_message(const tgi_call *c, json_t *stored)
{
	json_t *err = json_object_get(stored, "error");
	const char *have = json_string_value(json_object_get(err, "message"));
	char *msg = have ? tgi_redacted_message(c) : NULL;
	if (msg && strcmp(msg, have)) {
		json_t *top = json_copy(stored), *e = json_copy(err);
		json_object_set_new(e, "message", tgi_json_text(msg, strlen(msg)));
		json_object_set_new(top, "error", e);
		json_decref(stored);
		stored = top;
	}
	free(msg);
	return stored;
}

/* stored (taken) with its idempotency key masked like a secret: the key is
 * the model's text and may hold one; the caller's envelope keeps it. */
static json_t *kept_key(const tgi_call *c, json_t *stored)
{
	const json_t *k = json_object_get(stored, "idempotency_key");
	if (!json_is_string(k))
		return stored;
	char m[32];
	tgi_redact_mask(c->g ? c->g->redact : NULL, json_string_value(k), json_string_length(k), m);
	json_t *top = json_copy(stored);
	json_object_set_new(top, "idempotency_key", json_string(m));
	json_decref(stored);
	return top;
}

/* stored (taken) with a read-only call's output as {bytes, sha256} of its
 * compact JSON (output_digest) and output null; the caller's envelope
 * keeps it.  Nothing changes when there is no output, when the call may
 * have side effects (its contract is not read-only, or not known), or
 * with ledger.keep_output: all. */
static json_t *kept_output(const tgi_call *c, json_t *stored)
{
	const json_t *out = json_object_get(stored, "output");
	if (!out || json_is_null(out) || !(c->contract & TGI_T_READ_ONLY) ||
	    (c->g && c->g->cfg->keep_output_all))
		return stored;
	char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
	if (!text)
		return stored;   /* out of memory: kept whole, as before */
	size_t n = strlen(text);
	char sha[65];
	tgi_sha256_hex(text, n, sha);
	free(text);
	json_t *top = json_copy(stored);
	json_object_set_new(top, "output", json_null());
	json_object_set_new(top, "output_digest",
	                    json_pack("{s:I, s:s}", "bytes", (json_int_t)n, "sha256", sha));
	json_decref(stored);
	return top;
}

void tgi_persist(tgi_call *c)
{
	tg_gate *g = c->g;
	char err[512];

	c->duration_ms = tgi_now_ms() - c->t0;
	const char *fe = final_event(c->status);
	if (fe)
		tgi_event_add(c, fe, "persist",
		              c->kind ? json_pack("{s:s}", "kind", tg_errkind_name(c->kind)) : NULL);

	/* the session ran with other tools before: the tools changed under it */
	char manifest[65] = "", before[65] = "";
	if (c->session[0]) {
		tgi_registry_manifest(g->reg, g->cfg, g->profile, manifest);
		int mr = tgi_store_session_manifest(g->store, c->session, before, err, sizeof err);
		if (mr == 0 && before[0] && manifest[0] && strcmp(before, manifest))
			tgi_event_add(c, "tool.manifest.changed", "persist",
			              json_pack("{s:s, s:s}", "from", before, "to", manifest));
	}

	/* the envelope shares the stages array, so the persist record added
	 * below shows in what the caller gets, not in the stored copy */
	json_t *env = c->envelope = tgi_envelope(c);
	const tgi_strv *keys = c->entry ? &c->entry->sensitive : NULL;
	json_t *stored = kept_output(c, kept_key(c, kept_message(c, tgi_redact_json(g->redact, env,
	                                                                            keys))));
	char *env_text = json_dumps(stored, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(stored);
	for (size_t i = 0; i < c->nevents; i++) {
		if (!c->events[i].data)
			continue;
		json_t *d = tgi_redact_json(g->redact, c->events[i].data, keys);
		json_decref(c->events[i].data);
		c->events[i].data = d;
	}
	char *args = c->args_logged = tgi_redacted_args(c);  /* the sinks reuse it */
	char sha[65];
	if (!c->args_canon) {
		/* stopped before validate: hash what was sent */
		const char *raw = c->req->args ? c->req->args : "";
		size_t n = c->req->args ? (c->req->args_len ? c->req->args_len : strlen(raw)) : 0;
		tgi_sha256_hex(raw, n, sha);
	}
	tgi_op_record op = {
		.op_id = c->op_id,
		.call_id = c->call_id[0] ? c->call_id : NULL,
		.session = c->session[0] ? c->session : NULL,
		.tool = c->tool,
		.principal = c->principal_name[0] ? c->principal_name : NULL,
		.status = tg_status_name(c->status),
		.error_kind = c->kind ? tg_errkind_name(c->kind) : NULL,
		.idem_scope = c->idem_scope,
		.args_redacted = args,
		.args_sha256 = c->args_canon ? c->args_sha256 : sha,
		.envelope = env_text ? env_text : "{}",
		.started_ms = c->started_ms,
		.duration_ms = c->duration_ms,
		.loop = c->loop_entry,
		.manifest = manifest[0] ? manifest : NULL,  /* not known yet: kept as it was */
		.idem_binding = c->idem_binding[0] ? c->idem_binding : NULL,
	};
	int rc = tgi_store_record(g->store, &op, c->events, c->nevents, c->idem_scope, c->settle, err,
	                          sizeof err);
	free(env_text);

	if (rc == 0) {
		tgi_trace(c, "persist", 1, NULL);
		return;
	}
	if (c->status == TG_PERSISTED) {
		c->status = TG_COMMITTED;
		json_object_set_new(env, "status", json_string(tg_status_name(c->status)));
	}
	char clean[512];
	tgi_sanitize(clean, sizeof clean, err);
	tgi_trace(c, "persist", 0, json_pack("{s:s}", "error", clean));
}
