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

#include "gate.h"
#include "util/util.h"

size_t tg_gate_max_args_bytes(const tg_gate *g)
{
	return g->cfg->max_args_bytes;
}

int tg_approval_decide(tg_gate *g, const char *approval_id, int approve, const char *by,
                       char **errmsg)
{
	char err[512];
	tgi_store_lock(g);
	int rc = tgi_store_approval_decide(g->store, approval_id, approve, by ? by : "operator", err,
	                                   sizeof err);
	tgi_store_unlock(g);
	return rc < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}

int tg_op_resolve(tg_gate *g, const char *op_id, int applied, char **errmsg)
{
	char err[512];
	tgi_store_lock(g);
	int rc = tgi_store_op_resolve(g->store, op_id, applied, err, sizeof err);
	tgi_store_unlock(g);
	return rc < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}

static char *dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(v);
	return s;
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
	tgi_store_lock(g);
	int rc = tgi_store_ops(g->store, &f, &ops, err, sizeof err);
	/* each call with all of its events, whatever limit cut the calls */
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		tgi_log_filter one = {.op_id = json_string_value(json_object_get(op, "op_id"))};
		json_t *events = NULL;
		if (rc == 0 && one.op_id)
			rc = tgi_store_events(g->store, &one, 0, &events, err, sizeof err);
		json_object_set_new(op, "events", events ? events : json_array());
	}
	tgi_store_unlock(g);
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
	tgi_store_lock(g);
	int rc = tgi_store_stats(g->store, since_ms, &stats, err, sizeof err);
	tgi_store_unlock(g);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	return dump(stats);
}

char *tg_approvals(tg_gate *g, int all, char **errmsg)
{
	char err[512];
	tgi_approval_row *rows = NULL;
	size_t n = 0;
	tgi_store_lock(g);
	int rc = tgi_store_approval_list(g->store, all ? "*" : NULL, &rows, &n, err, sizeof err);
	tgi_store_unlock(g);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		char created[32], expires[32];
		tgi_iso8601(rows[i].created_ms, created);
		tgi_iso8601(rows[i].expires_ms, expires);
		json_array_append_new(
		    arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", rows[i].id,
		                   "state", rows[i].state, "tool", rows[i].tool, "principal",
		                   rows[i].principal, "args", rows[i].args ? rows[i].args : "",
		                   "reason", rows[i].reason ? rows[i].reason : "", "op_id",
		                   rows[i].op_id, "created", created, "expires", expires));
	}
	tgi_approval_rows_free(rows, n);
	return dump(arr);
}
