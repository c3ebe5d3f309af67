/*
 * ops.c — operator actions on a gate: reading the ledger and its stats,
 * listing and deciding approvals, settling unknown outcomes.
 *
 * Owns: turning store rows into the JSON the public API promises.  Must
 * not: run tools or change a call's recorded outcome beyond what the
 * operator says (ops resolve).
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

size_t tg_gate_max_args_bytes(const tg_gate *g)
{
	return g->cfg->max_args_bytes;
}

/* The reason as the ledger may keep it: a secret an operator pasted is
 * masked as in every other text it keeps (a mask may be longer than what
 * it hides: cut back to the limit, on a code point).  NULL for none;
 * caller frees. */
static char *kept_reason(const tg_gate *g, const char *reason)
{
	if (!reason)
		return NULL;
	char *masked = tgi_redact_text(g->redact, reason, strlen(reason));
	if (strlen(masked) > TGI_APPROVAL_REASON_MAX) {
		char cut[TGI_APPROVAL_REASON_MAX + 1];
		tgi_sanitize(cut, sizeof cut, masked);
		free(masked);
		masked = tgi_strdup(cut);
	}
	return masked;
}

int tg_approval_decide(tg_gate *g, const char *approval_id, int approve, const char *by,
                       const char *reason, char **errmsg)
{
	char err[512];
	size_t n = reason ? strlen(reason) : 0;
	if (n > TGI_APPROVAL_REASON_MAX)
		return tgi_fail(errmsg, "the reason is too long (%zu bytes; at most %d)", n,
		                TGI_APPROVAL_REASON_MAX);
	char *kept = kept_reason(g, reason);
	int rc = tgi_store_approval_decide(g->store, approval_id, approve, by ? by : "operator", kept,
	                                   err, sizeof err);
	free(kept);
	return rc < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}

int tg_op_resolve(tg_gate *g, const char *op_id, int applied, char **errmsg)
{
	char err[512];
	int rc = tgi_store_op_resolve(g->store, op_id, applied, err, sizeof err);
	return rc < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}

static char *dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(v);
	return s;
}

char *tg_ops_unknown(tg_gate *g, char **errmsg)
{
	char err[512];
	json_t *rows = NULL;
	if (errmsg)
		*errmsg = NULL;
	int rc = tgi_store_unknown(g->store, &rows, err, sizeof err);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	return dump(rows);
}

char *tg_log(tg_gate *g, const tg_log_query *q, char **errmsg)
{
	char err[512];
	json_t *ops = NULL;
	tgi_log_filter f = {
		.tool = q ? q->tool : NULL,
		.status = q ? q->status : NULL,
		.session = q ? q->session : NULL,
		.op_id = q ? q->op_id : NULL,
		.since_ms = q ? q->since_ms : 0,
		.limit = q ? q->limit : 0,
	};
	int rc = tgi_store_ops(g->store, &f, &ops, err, sizeof err);
	/* each call with all of its events, whatever limit cut the calls (a
	 * read of its own: an event written meanwhile, which another process
	 * could always write, shows with its call) */
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		tgi_log_filter one = {.op_id = json_string_value(json_object_get(op, "op_id"))};
		json_t *events = NULL;
		if (rc == 0 && one.op_id)
			rc = tgi_store_events(g->store, &one, 0, &events, err, sizeof err);
		json_object_set_new(op, "events", events ? events : json_array());
	}
	if (rc < 0) {
		json_decref(ops);
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	return dump(ops);
}

char *tg_stats(tg_gate *g, long long since_ms, char **errmsg)
{
	char err[512];
	json_t *stats = NULL;
	int rc = tgi_store_stats(g->store, since_ms, &stats, err, sizeof err);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	return dump(stats);
}

/* A stored text as JSON: a string (NULL: ""), or null_if_none. */
static json_t *text_or(const char *t, int null_if_none)
{
	if (!t || !*t)
		return null_if_none ? json_null() : json_string("");
	return tgi_json_text(t, strlen(t));
}

/* One approval as tg_approvals shows it. */
static json_t *approval_json(const tgi_approval_row *r)
{
	char created[32], expires[32], decided[32];
	tgi_iso8601(r->created_ms, created);
	tgi_iso8601(r->expires_ms, expires);
	int was_decided = r->decided_ms > 0;
	if (was_decided)
		tgi_iso8601(r->decided_ms, decided);
	json_t *plan = r->plan ? json_loads(r->plan, 0, NULL) : NULL;
	if (plan && !json_is_object(plan)) {   /* a planted row: show none */
		json_decref(plan);
		plan = NULL;
	}
	json_t *o = json_object();
	json_object_set_new(o, "id", text_or(r->id, 0));
	json_object_set_new(o, "state", text_or(r->state, 0));
	json_object_set_new(o, "tool", text_or(r->tool, 0));
	json_object_set_new(o, "principal", text_or(r->principal, 0));
	json_object_set_new(o, "args", text_or(r->args, 0));
	json_object_set_new(o, "reason", text_or(r->reason, 0));
	json_object_set_new(o, "op_id", text_or(r->op_id, 0));
	json_object_set_new(o, "created", json_string(created));
	json_object_set_new(o, "expires", json_string(expires));
	json_object_set_new(o, "plan", plan ? plan : json_null());
	json_object_set_new(o, "decided", was_decided ? json_string(decided) : json_null());
	json_object_set_new(o, "decided_by", was_decided ? text_or(r->decided_by, 1) : json_null());
	json_object_set_new(o, "decided_reason",
	                    was_decided ? text_or(r->decided_reason, 1) : json_null());
	return o;
}

char *tg_approvals(tg_gate *g, int all, char **errmsg)
{
	char err[512];
	tgi_approval_row *rows = NULL;
	size_t n = 0;
	int rc = tgi_store_approval_list(g->store, all ? "*" : NULL, &rows, &n, err, sizeof err);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, approval_json(&rows[i]));
	tgi_approval_rows_free(rows, n);
	return dump(arr);
}
