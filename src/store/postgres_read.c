/*
 * postgres_read.c — the PostgreSQL ledger read for people: the log (ops
 * and events through the filters), `toolgate stats`, the calls whose
 * outcome is unknown, and the export, which streams one snapshot.  Each is
 * what sqlite_read.c gives for the same records.
 *
 * Owns: the reading queries and the JSON each row becomes.  Must not:
 * write the ledger, or hold more than a window of rows at once.
 */
#include "store/postgres_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- reading the log ---- */

static json_t *col_string(const PGresult *r, int row, int col)
{
	return tgi_val_string(tgi_pg_val(r, row, col));
}

static json_t *col_parsed(const PGresult *r, int row, int col)
{
	return tgi_val_parsed(tgi_pg_val(r, row, col));
}

static json_t *col_time(const PGresult *r, int row, int col)
{
	return tgi_val_time(tgi_pg_val_i64(r, row, col, 0));
}

static json_t *op_json(const PGresult *r, int i)
{
	static const char *const text[] = { "op_id", "call_id", "session", "tool",
	                                    "principal", "status", "error_kind" };
	json_t *o = json_object();
	for (int c = 0; c < (int)TGI_ARRAY_LEN(text); c++)
		json_object_set_new(o, text[c], col_string(r, i, c));
	json_object_set_new(o, "started", col_time(r, i, 7));
	json_object_set_new(o, "duration_ms", json_real(tgi_pg_val_f64(r, i, 8)));
	json_object_set_new(o, "args_sha256", col_string(r, i, 9));
	json_object_set_new(o, "envelope", col_parsed(r, i, 10));
	return o;
}

/* The columns events_sql selects: the event's, then whether it has an op
 * row, then what comes from that row. */
static json_t *event_json(const PGresult *r, int i)
{
	static const char *const from_op[] = { "session", "principal", "tool", "status",
	                                       "error_kind", "message", "args" };
	json_t *o = json_object();
	json_object_set_new(o, "seq", json_integer(tgi_pg_val_i64(r, i, 0, 0)));
	json_object_set_new(o, "ts", col_time(r, i, 1));
	json_object_set_new(o, "op_id", col_string(r, i, 2));
	json_object_set_new(o, "type", col_string(r, i, 3));
	json_object_set_new(o, "stage", col_string(r, i, 4));
	json_object_set_new(o, "data", col_parsed(r, i, 5));
	if (tgi_pg_val_bool(r, i, 6))
		for (int c = 0; c < (int)TGI_ARRAY_LEN(from_op); c++)
			json_object_set_new(o, from_op[c], col_string(r, i, 7 + c));
	return o;
}

/* The filter's conditions, values as parameters ($2.. after the first
 * one the caller binds), appended to sql; col is the ops table's alias. */
static void filter_sql(tgi_buf *sql, q *x, const tgi_log_filter *f, const char *col,
                       const char *op_col)
{
	if (f->tool) {
		tgi_pg_q_text(x, f->tool);
		tgi_buf_printf(sql, " AND %s.tool = $%d", col, x->n);
	}
	if (f->status) {
		tgi_pg_q_text(x, f->status);
		tgi_buf_printf(sql, " AND %s.status = $%d", col, x->n);
		if (strcmp(f->status, "persisted"))
			tgi_buf_printf(sql, " AND %s.status <> 'persisted'", col); /* ops_status */
	}
	if (f->session) {
		tgi_pg_q_text(x, f->session);
		tgi_buf_printf(sql, " AND %s.session = $%d", col, x->n);
	}
	if (f->op_id) {
		tgi_pg_q_text(x, f->op_id);
		tgi_buf_printf(sql, " AND %s = $%d", op_col, x->n);
	}
}

/* Run one built query and collect its rows with row(). */
static int log_query(pg *s, q *x, json_t *(*row)(const PGresult *, int), json_t **out)
{
	if (tgi_pg_run(s, x, 1) < 0)
		return -1;
	json_t *a = json_array();
	for (int i = 0; i < tgi_pg_rows(x); i++)
		json_array_append_new(a, row(x->res, i));
	*out = a;
	return 0;
}

/*
 * Ops matching the filter, oldest first (op_id order is start time order:
 * op ids are UUIDv7), values as parameters.  `since` is an op_id range and
 * the exact started_ms bound; with a limit, the newest `limit` rows, still
 * oldest first.
 */
int tgi_pg_ops(tgi_store *base, const tgi_log_filter *f, json_t **out, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	static const tgi_log_filter all;
	char since_id[37];
	tgi_buf sql;
	q x;

	*out = NULL;
	if (!f)
		f = &all;
	tgi_uuid_floor(f->since_ms, since_id);
	tgi_buf_init(&sql, 4096);
	tgi_pg_q_init(&x, ST_ADHOC, NULL);
	tgi_pg_q_text(&x, since_id);
	tgi_pg_q_i64(&x, f->since_ms);
	tgi_buf_puts(&sql, "SELECT op_id, call_id, session, tool, principal, status, error_kind,"
	                   " started_ms, duration_ms, args_sha256, envelope FROM ops o"
	                   " WHERE o.op_id >= $1 AND o.started_ms >= $2::bigint");
	filter_sql(&sql, &x, f, "o", "o.op_id");
	if (f->limit) {
		tgi_pg_q_i64(&x, f->limit > INT64_MAX ? INT64_MAX : (int64_t)f->limit);
		tgi_buf_printf(&sql, " ORDER BY o.op_id DESC LIMIT $%d::bigint", x.n);
		char *inner = tgi_buf_steal(&sql);
		tgi_buf_printf(&sql, "SELECT * FROM (%s) t ORDER BY op_id", inner);
		free(inner);
	} else {
		tgi_buf_puts(&sql, " ORDER BY o.op_id");
	}
	char *text = tgi_buf_steal(&sql);
	x.sql = text;
	int rc = log_query(s, &x, op_json, out);
	tgi_pg_q_free(&x, 1);
	free(text);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger");
	return 0;
}

/*
 * Events in seq order, each with its op's columns (an event without an op
 * row keeps them NULL: the LEFT JOIN).  The message is read from the
 * envelope only for calls with an error (one that is not JSON gives no
 * message rather than failing the query).  With a limit and no after_seq,
 * the newest `limit` events, still oldest first; after after_seq (for
 * --follow) the next `limit`, so that none is skipped.
 */
int tgi_pg_events(tgi_store *base, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                  char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	static const tgi_log_filter all;
	tgi_buf sql;
	q x;

	*out = NULL;
	if (!f)
		f = &all;
	tgi_buf_init(&sql, 4096);
	tgi_pg_q_init(&x, ST_ADHOC, NULL);
	tgi_pg_q_i64(&x, after_seq);
	tgi_pg_q_i64(&x, f->since_ms);
	tgi_buf_puts(&sql,
	             "SELECT e.seq AS seq, e.ts_ms, e.op_id, e.type, e.stage, e.data,"
	             " o.op_id IS NOT NULL, o.session, o.principal, o.tool, o.status, o.error_kind,"
	             " CASE WHEN o.error_kind IS NOT NULL"
	             " THEN toolgate_json_text(o.envelope, 'error', 'message') END, o.args_redacted"
	             " FROM events e LEFT JOIN ops o ON o.op_id = e.op_id"
	             " WHERE e.seq > $1::bigint AND e.ts_ms >= $2::bigint");
	filter_sql(&sql, &x, f, "o", "e.op_id");
	if (f->limit) {
		tgi_pg_q_i64(&x, f->limit > INT64_MAX ? INT64_MAX : (int64_t)f->limit);
		if (after_seq <= 0) {
			tgi_buf_printf(&sql, " ORDER BY e.seq DESC LIMIT $%d::bigint", x.n);
			char *inner = tgi_buf_steal(&sql);
			tgi_buf_printf(&sql, "SELECT * FROM (%s) t ORDER BY seq", inner);
			free(inner);
		} else {
			tgi_buf_printf(&sql, " ORDER BY e.seq LIMIT $%d::bigint", x.n);
		}
	} else {
		tgi_buf_puts(&sql, " ORDER BY e.seq");
	}
	char *text = tgi_buf_steal(&sql);
	x.sql = text;
	int rc = log_query(s, &x, event_json, out);
	tgi_pg_q_free(&x, 1);
	free(text);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger");
	return 0;
}

int tgi_pg_last_seq(tgi_store *base, int64_t *seq, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	*seq = 0;
	tgi_pg_q_init(&x, ST_LAST_SEQ, NULL);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1)
		*seq = tgi_pg_val_i64(x.res, 0, 0, 0);
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger");
	return 0;
}

/* ---- stats ----
 *
 * What sqlite.c computes, computed by the server: per tool, calls by
 * status (each tool's statuses in the order their first call came, as
 * the SQLite scan meets them), and the nearest-rank 50th and 99th
 * percentiles of duration_ms over the calls whose tool ran (persisted,
 * committed, failed): rank ceil(n * p / 100) in integers, exactly as
 * sqlite.c's percentile(); denials grouped by their envelope's
 * error.rule and error kind.  The three queries read one snapshot
 * (REPEATABLE READ), in one round trip.
 */

static const char stats_status_sql[] =
	"SELECT tool, status, count(*) FROM ops WHERE op_id >= $1 AND started_ms >= $2::bigint"
	" GROUP BY tool, status ORDER BY tool NULLS LAST, min(op_id)";

static const char stats_ranks_sql[] =
	"SELECT tool, max(d) FILTER (WHERE i = greatest((n * 50 + 99) / 100, 1)),"
	" max(d) FILTER (WHERE i = greatest((n * 99 + 99) / 100, 1)) FROM ("
	" SELECT tool, coalesce(duration_ms, 0) AS d,"
	" row_number() OVER (PARTITION BY tool ORDER BY coalesce(duration_ms, 0)) AS i,"
	" count(*) OVER (PARTITION BY tool) AS n FROM ops"
	" WHERE status IN ('persisted', 'committed', 'failed') AND op_id >= $1"
	" AND started_ms >= $2::bigint) r GROUP BY tool";

static const char stats_denials_sql[] =
	"SELECT toolgate_json_text(envelope, 'error', 'rule') COLLATE \"C\" AS rule, error_kind,"
	" count(*) AS n FROM ops WHERE status = 'denied' AND op_id >= $1 AND started_ms >= $2::bigint"
	" GROUP BY 1, 2 ORDER BY n DESC, rule NULLS FIRST, error_kind NULLS FIRST";

/* The percentiles of tool (NULL: calls without one) from the ranks query:
 * JSON null when none of its calls ran. */
static void tool_ranks(const PGresult *ranks, const char *tool, json_t *o)
{
	json_t *p50 = NULL, *p99 = NULL;
	for (int i = 0; i < tgi_pq.ntuples(ranks); i++) {
		if (!tgi_same_tool(tgi_pg_val(ranks, i, 0), tool))
			continue;
		p50 = json_real(tgi_pg_val_f64(ranks, i, 1));
		p99 = json_real(tgi_pg_val_f64(ranks, i, 2));
		break;
	}
	json_object_set_new(o, "p50_ms", p50 ? p50 : json_null());
	json_object_set_new(o, "p99_ms", p99 ? p99 : json_null());
}

/* The tools array, by calls descending, and the number of calls. */
static json_t *stats_tools(const PGresult *by_status, const PGresult *ranks, json_int_t *total)
{
	json_t **v = NULL, *cur = NULL, *by = NULL;
	size_t n = 0, cap = 0;
	const char *cur_tool = NULL;
	json_int_t calls = 0;

	*total = 0;
	for (int i = 0; i <= tgi_pq.ntuples(by_status); i++) {
		int end = i == tgi_pq.ntuples(by_status);
		const char *tool = end ? NULL : tgi_pg_val(by_status, i, 0);
		if (cur && (end || !tgi_same_tool(tool, cur_tool))) {
			json_object_set_new(cur, "calls", json_integer(calls));
			json_object_set_new(cur, "by_status", by);
			tool_ranks(ranks, cur_tool, cur);
			if (n == cap)
				v = tgi_xrealloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
			v[n++] = cur;
			*total += calls;
			cur = NULL;
		}
		if (end)
			break;
		if (!cur) {
			cur = json_object();
			json_object_set_new(cur, "tool", tgi_val_string(tool));
			by = json_object();
			calls = 0;
			cur_tool = tool;
		}
		json_int_t k = tgi_pg_val_i64(by_status, i, 2, 0);
		json_object_set_new(by, tgi_pg_val(by_status, i, 1), json_integer(k));
		calls += k;
	}
	tgi_tools_sort(v, n);
	json_t *tools = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(tools, v[i]);
	free(v);
	return tools;
}

static json_t *stats_denials(const PGresult *r)
{
	json_t *denials = json_array();
	for (int i = 0; i < tgi_pq.ntuples(r); i++) {
		json_t *o = json_object();
		json_object_set_new(o, "rule", col_string(r, i, 0));
		json_object_set_new(o, "kind", col_string(r, i, 1));
		json_object_set_new(o, "count", json_integer(tgi_pg_val_i64(r, i, 2, 0)));
		json_array_append_new(denials, o);
	}
	return denials;
}

int tgi_pg_stats(tgi_store *base, int64_t since_ms, json_t **out, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	static const char *const sql[] = { stats_status_sql, stats_ranks_sql, stats_denials_sql };
	char since_id[37];
	q qs[5];

	*out = NULL;
	tgi_uuid_floor(since_ms, since_id);
	tgi_pg_q_init(&qs[0], ST_ADHOC, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	for (int i = 0; i < 3; i++) {
		tgi_pg_q_init(&qs[1 + i], ST_ADHOC, sql[i]);
		tgi_pg_q_text(&qs[1 + i], since_id);
		tgi_pg_q_i64(&qs[1 + i], since_ms);
	}
	tgi_pg_q_init(&qs[4], ST_ADHOC, "COMMIT");
	if (tgi_pg_run(s, qs, 5) < 0) {
		tgi_pg_q_free(qs, 5);
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger");
	}
	json_int_t calls = 0;
	json_t *tools = stats_tools(qs[1].res, qs[2].res, &calls);
	json_t *denials = stats_denials(qs[3].res);
	tgi_pg_q_free(qs, 5);
	*out = tgi_stats_json(since_ms, calls, tools, denials);
	return 0;
}

/* ---- export ----
 *
 * Ops (each with its events, gathered by the server into one JSON array,
 * and its idempotency claim's state and binding), then events of no op,
 * then claims whose call left no row, as sqlite.c gives them, all read in
 * one REPEATABLE READ transaction: one snapshot, so that what another
 * gate writes meanwhile is in none of the three parts, or in the right
 * one.  Streamed: each query runs in single-row mode, so one row is in
 * memory at a time.  A caller that stops the export cancels the query.
 */

static const char export_ops_sql[] =
	"SELECT o.op_id, o.call_id, o.session, o.tool, o.principal, o.status, o.error_kind,"
	" o.idem_scope, i.state, o.args_redacted, o.args_sha256, o.envelope, o.started_ms,"
	" o.duration_ms, o.loop, (SELECT json_agg(json_build_array(e.ts_ms, e.type, e.stage, e.data)"
	" ORDER BY e.seq) FROM events e WHERE e.op_id = o.op_id), i.binding"
	" FROM ops o LEFT JOIN idem i ON i.scope = o.idem_scope AND i.op_id = o.op_id"
	" WHERE o.op_id >= $1 AND o.started_ms >= $2::bigint ORDER BY o.op_id";

static const char export_lone_sql[] =
	"SELECT ts_ms, type, stage, data FROM events WHERE op_id IS NULL AND ts_ms >= $1::bigint"
	" ORDER BY seq";

/* claims whose call left no row (its process died while the tool ran) */
static const char export_claims_sql[] =
	"SELECT scope, op_id, state, binding, created_ms FROM idem i"
	" WHERE state IN ('in_flight', 'unknown') AND created_ms >= $1::bigint"
	" AND NOT EXISTS (SELECT 1 FROM ops o WHERE o.op_id = i.op_id)"
	" ORDER BY created_ms, scope";

/* An event of the export: {ts_ms, type, stage, data (parsed)} from the
 * server's [ts_ms, type, stage, data text]. */
static json_t *export_event(const json_t *a)
{
	const char *data = json_string_value(json_array_get(a, 3));
	json_t *parsed = data ? json_loads(data, JSON_DECODE_ANY, NULL) : NULL;
	json_t *type = json_array_get(a, 1), *stage = json_array_get(a, 2);
	return json_pack("{s:I, s:O, s:O, s:o}", "ts_ms",
	                 (json_int_t)json_integer_value(json_array_get(a, 0)), "type",
	                 type ? type : json_null(), "stage", stage ? stage : json_null(), "data",
	                 parsed ? parsed : json_null());
}

/* The op's row; NULL (s->why says why) when its events cannot be read
 * back: an export never says an op had none when it had some. */
static json_t *export_op(pg *s, const PGresult *r)
{
	static const char *const text[] = { "op_id", "call_id", "session", "tool", "principal",
	                                    "status", "error_kind", "idem_scope", "idem_state" };
	json_t *o = json_object();
	for (int i = 0; i < (int)TGI_ARRAY_LEN(text); i++)
		json_object_set_new(o, text[i], col_string(r, 0, i));
	json_object_set_new(o, "idem_binding", col_string(r, 0, 16));
	json_object_set_new(o, "args", col_parsed(r, 0, 9));
	json_object_set_new(o, "args_sha256", col_string(r, 0, 10));
	json_object_set_new(o, "envelope", col_parsed(r, 0, 11));
	json_object_set_new(o, "started_ms", json_integer(tgi_pg_val_i64(r, 0, 12, 0)));
	json_object_set_new(o, "duration_ms", json_real(tgi_pg_val_f64(r, 0, 13)));
	json_object_set_new(o, "loop", col_string(r, 0, 14));
	const char *agg = tgi_pg_val(r, 0, 15);
	json_error_t je;
	memset(&je, 0, sizeof je);
	json_t *arr = agg ? json_loads(agg, 0, &je) : json_array();
	json_t *events = json_array();
	for (size_t i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		json_t *e = export_event(json_array_get(arr, i));
		if (!e || json_array_append_new(events, e) < 0)
			break;
	}
	if (!json_is_array(arr) || json_array_size(events) != json_array_size(arr)) {
		char id[64], why[160];
		tgi_snprintf(s->why, sizeof s->why, "the events of op '%s' cannot be read back (%s)",
		             tgi_quoted(id, sizeof id, tgi_pg_val(r, 0, 0)),
		             tgi_quoted(why, sizeof why, arr ? "out of memory" : je.text));
		json_decref(arr);
		json_decref(events);
		json_decref(o);
		return NULL;
	}
	json_decref(arr);
	json_object_set_new(o, "events", events);
	return o;
}

static json_t *export_lone(pg *s, const PGresult *r)
{
	(void)s;
	return json_pack("{s:{s:I, s:o, s:o, s:o}}", "event", "ts_ms",
	                 (json_int_t)tgi_pg_val_i64(r, 0, 0, 0), "type", col_string(r, 0, 1), "stage",
	                 col_string(r, 0, 2), "data", col_parsed(r, 0, 3));
}

static json_t *export_claim(pg *s, const PGresult *r)
{
	(void)s;
	return json_pack("{s:{s:o, s:o, s:o, s:o, s:I}}", "claim", "scope", col_string(r, 0, 0),
	                 "op_id", col_string(r, 0, 1), "state", col_string(r, 0, 2), "binding",
	                 col_string(r, 0, 3), "created_ms", (json_int_t)tgi_pg_val_i64(r, 0, 4, 0));
}

/* Stop the running query: cancel it on the server and read what is left. */
static void stream_cancel(pg *s)
{
	PGcancel *c = tgi_pq.getCancel(s->conn);
	if (c) {
		char buf[256];
		tgi_pq.cancel(c, buf, sizeof buf);
		tgi_pq.freeCancel(c);
	}
	PGresult *r;
	while ((r = tgi_pq.getResult(s->conn)) != NULL)
		tgi_pq.clear(r);
}

/* Stream sql's rows to fn as made by row().  0, fn's non-zero answer, or
 * -1 with s->why (a row that row() could not make stops it too). */
static int stream(pg *s, const char *sql, q *x, json_t *(*row)(pg *, const PGresult *),
                  int (*fn)(void *, json_t *), void *arg)
{
	if (tgi_pg_conn_ready(s) < 0)
		return -1;
	if (!tgi_pq.sendQueryParams(s->conn, sql, x->n, NULL, x->v, NULL, NULL, 0) ||
	    !tgi_pq.setSingleRowMode(s->conn)) {
		tgi_pg_result_why(s, NULL);
		tgi_pg_conn_lost(s, s->why);
		return -1;
	}
	int stop = 0, rc = 0;
	PGresult *r;
	while (!stop && (r = tgi_pq.getResult(s->conn)) != NULL) {
		ExecStatusType st = tgi_pq.resultStatus(r);
		if (st == PGRES_SINGLE_TUPLE && !rc) {
			json_t *j = row(s, r);
			if (j)
				stop = fn(arg, j);
			else
				rc = -1, stop = -1;
			json_decref(j);
		} else if (st != PGRES_TUPLES_OK && st != PGRES_SINGLE_TUPLE && !rc) {
			tgi_pg_result_why(s, r);
			rc = tgi_pg_conn_error(s, r) ? -2 : -1;
		}
		tgi_pq.clear(r);
	}
	if (stop)
		stream_cancel(s);
	if (rc == -2 || tgi_pq.status(s->conn) != CONNECTION_OK) {
		tgi_pg_conn_lost(s, s->why);
		return -1;
	}
	/* libpq keeps single-row mode on until the next query sent outside a
	 * pipeline: send an empty one, or the next round trip's first result
	 * would come a row at a time */
	r = tgi_pq.exec(s->conn, "");
	if (r)
		tgi_pq.clear(r);
	return rc ? rc : stop;
}

/* ---- unknown outcomes ---- */

int tgi_pg_unknown(tgi_store *base, json_t **out, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	static const char sql[] =
		"WITH u(op_id) AS (SELECT op_id FROM ops WHERE "
		TGI_UNKNOWN_OPS_WHERE("toolgate_json_text(envelope, 'error', 'applied')")
		" UNION SELECT op_id FROM idem WHERE state IN ('in_flight', 'unknown'))"
		" SELECT u.op_id, o.tool, o.principal, o.session, o.status,"
		" coalesce(o.started_ms, i.created_ms) AS started,"
		" toolgate_json_text(o.envelope, 'error', 'message'),"
		" i.state, i.scope, i.owner_host, i.owner_pid, i.owner_start, i.lease_until_ms,"
		" " PG_NOW_MS ", " PG_BACKEND_ALIVE ", " PG_BACKEND_BEFORE
		" FROM u LEFT JOIN ops o ON o.op_id = u.op_id"
		" LEFT JOIN idem i ON i.op_id = u.op_id AND i.state IN ('in_flight', 'unknown')"
		" ORDER BY started, u.op_id";
	q x;
	tgi_pg_q_init(&x, ST_ADHOC, sql);
	if (tgi_pg_run(s, &x, 1) < 0) {
		tgi_pg_q_free(&x, 1);
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger");
	}
	json_t *a = json_array();
	for (int r = 0; r < tgi_pg_rows(&x); r++) {
		const char *state = tgi_pg_val(x.res, r, 7);
		struct owner o;
		tgi_pg_read_owner_at(x.res, r, 9, 13, &o);
		if (state && !strcmp(state, "in_flight") && tgi_pg_owner_alive(s, &o))
			continue;               /* running now: its outcome is not known yet */
		json_array_append_new(a, tgi_unknown_row(tgi_pg_val(x.res, r, 0), tgi_pg_val(x.res, r, 1),
		                                         tgi_pg_val(x.res, r, 2), tgi_pg_val(x.res, r, 3),
		                                         tgi_pg_val(x.res, r, 4), tgi_pg_val_i64(x.res, r, 5, 0),
		                                         tgi_pg_val(x.res, r, 6), state, tgi_pg_val(x.res, r, 8)));
	}
	tgi_pg_q_free(&x, 1);
	*out = a;
	return 0;
}

int tgi_pg_export(tgi_store *base, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
                  char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char floor_id[37];
	q x;

	tgi_uuid_floor(since_ms, floor_id);
	if (tgi_pg_tx_begin(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger for export");
	tgi_pg_q_init(&x, ST_ADHOC, NULL);
	tgi_pg_q_text(&x, floor_id);
	tgi_pg_q_i64(&x, since_ms);
	int rc = stream(s, export_ops_sql, &x, export_op, fn, arg);
	tgi_pg_q_init(&x, ST_ADHOC, NULL);
	tgi_pg_q_i64(&x, since_ms);
	if (rc == 0)
		rc = stream(s, export_lone_sql, &x, export_lone, fn, arg);
	if (rc == 0)
		rc = stream(s, export_claims_sql, &x, export_claim, fn, arg);
	if (rc == 0)
		rc = tgi_pg_tx_commit(s);
	else
		tgi_pg_tx_abort(s);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger for export");
	return rc;
}
