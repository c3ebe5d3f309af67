/*
 * sqlite_read.c — the SQLite ledger read for people: the log (ops and
 * events through the filters), `toolgate stats`, the export, which reads
 * one snapshot, and the calls whose outcome is unknown.  Each is what
 * postgres_read.c gives for the same records.
 *
 * Owns: the reading queries and the JSON each row becomes.  Must not:
 * write the ledger.
 */
#include "store/sqlite_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- reading the log ---- */

static json_t *col_string(sqlite3_stmt *st, int i)
{
	return tgi_val_string((const char *)sqlite3_column_text(st, i));
}

static json_t *col_parsed(sqlite3_stmt *st, int i)
{
	return tgi_val_parsed((const char *)sqlite3_column_text(st, i));
}

static json_t *col_time(sqlite3_stmt *st, int i)
{
	return tgi_val_time(sqlite3_column_int64(st, i));
}

static json_t *op_json(sqlite3_stmt *st)
{
	static const char *const text[] = { "op_id", "call_id", "session", "tool",
	                                    "principal", "status", "error_kind" };
	json_t *o = json_object();
	for (int i = 0; i < (int)TGI_ARRAY_LEN(text); i++)
		json_object_set_new(o, text[i], col_string(st, i));
	json_object_set_new(o, "started", col_time(st, 7));
	json_object_set_new(o, "duration_ms", json_real(sqlite3_column_double(st, 8)));
	json_object_set_new(o, "args_sha256", col_string(st, 9));
	json_object_set_new(o, "envelope", col_parsed(st, 10));
	return o;
}

/* The columns events_sql selects: the event's, then whether it has an op
 * row, then what comes from that row. */
static json_t *event_json(sqlite3_stmt *st)
{
	static const char *const from_op[] = { "session", "principal", "tool", "status",
	                                       "error_kind", "message", "args" };
	json_t *o = json_object();
	json_object_set_new(o, "seq", json_integer(sqlite3_column_int64(st, 0)));
	json_object_set_new(o, "ts", col_time(st, 1));
	json_object_set_new(o, "op_id", col_string(st, 2));
	json_object_set_new(o, "type", col_string(st, 3));
	json_object_set_new(o, "stage", col_string(st, 4));
	json_object_set_new(o, "data", col_parsed(st, 5));
	if (sqlite3_column_int(st, 6))
		for (int i = 0; i < (int)TGI_ARRAY_LEN(from_op); i++)
			json_object_set_new(o, from_op[i], col_string(st, 7 + i));
	return o;
}

static int bind_named(sqlite3_stmt *st, const char *name, const char *text, int64_t num)
{
	int i = sqlite3_bind_parameter_index(st, name);
	if (!i)
		return SQLITE_OK;
	return text ? sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC) : sqlite3_bind_int64(st, i, num);
}

/* Run a log query built from the filter and collect its rows with row(). */
static int log_query(sq *s, const char *sql, const tgi_log_filter *f, int64_t after_seq,
                     int64_t window, json_t *(*row)(sqlite3_stmt *), json_t **out)
{
	char since_id[37];
	sqlite3_stmt *st = NULL;
	tgi_uuid_floor(f->since_ms, since_id);
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":since_id", since_id, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":tool", f->tool, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":status", f->status, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":session", f->session, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":op", f->op_id, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":since", NULL, f->since_ms);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":after", NULL, after_seq);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":limit", NULL, f->limit > INT64_MAX ? INT64_MAX : (int64_t)f->limit);
	if (rc == SQLITE_OK)
		rc = bind_named(st, ":window", NULL, window);
	json_t *a = json_array();
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_array_append_new(a, row(st));
		rc = SQLITE_OK;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	else if (rc != SQLITE_OK)
		rc = sqlite3_extended_errcode(s->db);
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return SQLITE_OK;
}

/*
 * Filters become SQL conditions (values are bound, never pasted), so the
 * indexes serve them: `since` is a range of ops_id (an op's id is made at
 * decode, just after its start time is read, so the two agree to the
 * millisecond; started_ms keeps the bound exact), --tool is read from
 * ops_id's entries as it is walked (newest first with a limit), --status
 * is ops_status unless it is `persisted` (which that index leaves out: the
 * constant condition added below is what lets the planner use it),
 * --session ops_session.
 * Rows come in op_id order, which is start time order, without a sort.
 * With a limit the
 * newest `limit` rows are returned, still oldest first (like tail); events
 * after after_seq are the next `limit` instead (for --follow, so none is
 * skipped).
 */
int tgi_sq_ops(tgi_store *base, const tgi_log_filter *f, json_t **out, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	static const tgi_log_filter all;
	char sql[1024];

	*out = NULL;
	if (!f)
		f = &all;
	tgi_snprintf(sql, sizeof sql,
	             "SELECT op_id, call_id, session, tool, principal, status, error_kind, started_ms,"
	             " duration_ms, args_sha256, envelope FROM ops"
	             " WHERE op_id >= :since_id AND started_ms >= :since%s%s%s%s%s",
	             f->tool ? " AND tool = :tool" : "", f->status ? " AND status = :status" : "",
	             f->status && strcmp(f->status, "persisted") ? " AND status <> 'persisted'" : "",
	             f->session ? " AND session = :session" : "", f->op_id ? " AND op_id = :op" : "");
	if (f->limit) {
		char inner[1024];
		tgi_snprintf(inner, sizeof inner, "%s", sql);
		tgi_snprintf(sql, sizeof sql,
		             "SELECT * FROM (%s ORDER BY op_id DESC LIMIT :limit) ORDER BY op_id", inner);
	} else {
		strcat(sql, " ORDER BY op_id");
	}
	int rc = log_query(s, sql, f, 0, 0, op_json, out);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	return 0;
}

/*
 * Events come in seq order from two places (see the schema in sqlite.c): a
 * call's events are a column of its ops row, expanded here (json_each),
 * each with its seq counted back from the row's; the events written on
 * their own are rows of event_rows, each with its op's columns (NULL for an
 * event of no op: the LEFT JOIN).  The two are merged by seq.  Both are
 * read by seq range: the ops rows and the events rows after a lower bound
 * are the rightmost of their trees.  A query with a limit and no after_seq
 * (the newest `limit`) first reads only the newest TGI_LOG_WINDOW x limit
 * seqs, and reads them all only when fewer than `limit` of those match;
 * both answers are exact.  With --op the op's row is found by ops_id and
 * its lone events by events_op, whatever the range.  The message is read
 * from the envelope only for calls with an error (the envelope is parsed
 * for those alone; one that is not JSON gives no message rather than
 * failing the query).
 */
static void events_sql(char *sql, size_t cap, const tgi_log_filter *f, int64_t after_seq,
                       int windowed /* only when after_seq <= 0 */)
{
	static const char opcols[] =
		" o.session, o.principal, o.tool, o.status, o.error_kind,"
		" CASE WHEN o.error_kind IS NOT NULL AND json_valid(o.envelope)"
		" THEN json_extract(o.envelope, '$.error.message') END AS message,"
		" o.args_redacted";
	char lo[128], opf[512];
	int join = f->tool || f->status || f->session;

	tgi_snprintf(lo, sizeof lo, "%s", windowed ? "(SELECT " TGI_SEQ_NEWEST ") - :window"
	                                           : ":after");
	tgi_snprintf(opf, sizeof opf, "%s%s%s%s",
	             f->tool ? " AND o.tool = :tool" : "", f->status ? " AND o.status = :status" : "",
	             f->status && strcmp(f->status, "persisted") ? " AND o.status <> 'persisted'" : "",
	             f->session ? " AND o.session = :session" : "");
	char lone[1536], kept[1536], both[3200];
	/* the events written on their own lead (few), their ops looked up by
	 * op id; a call's events are read from its row, by seq range, or, for
	 * all of them with a tool, through ops_id's tool column */
	int all = !windowed && after_seq <= 0;
	tgi_snprintf(lone, sizeof lone,
	             "SELECT e.seq AS seq, e.ts_ms AS ts_ms, e.op_id, e.type, e.stage, e.data,"
	             " o.op_id IS NOT NULL,%s FROM event_rows e %s ops o ON o.op_id = e.op_id"
	             " WHERE %s%s%s",
	             opcols, join ? "CROSS JOIN" : "LEFT JOIN",
	             f->op_id ? "e.op_id = :op" : "e.seq > ", f->op_id ? "" : lo, opf);
	tgi_snprintf(kept, sizeof kept,
	             "SELECT o.seq - json_array_length(o.events) + 1 + j.key AS seq,"
	             " j.value ->> 0 AS ts_ms, o.op_id, j.value ->> 1, j.value ->> 2,"
	             " nullif(j.value -> 3, 'null'), 1,%s FROM ops o%s, json_each(o.events) j"
	             " WHERE %s%s AND o.events IS NOT NULL%s",
	             opcols, all && f->tool && !f->op_id ? " INDEXED BY ops_id" : "",
	             f->op_id ? "o.op_id = :op" : all ? "1" : "o.seq > ",
	             f->op_id || all ? "" : lo, opf);
	tgi_snprintf(both, sizeof both,
	             "SELECT * FROM (%s UNION ALL %s) WHERE seq > %s AND ts_ms >= :since",
	             lone, kept, lo);
	if (f->limit && after_seq <= 0)
		tgi_snprintf(sql, cap, "SELECT * FROM (%s ORDER BY seq DESC LIMIT :limit) ORDER BY seq",
		             both);
	else
		tgi_snprintf(sql, cap, "%s ORDER BY seq%s", both, f->limit ? " LIMIT :limit" : "");
}

int tgi_sq_events(tgi_store *base, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                  char *err, size_t errlen)
{
	sq *s = (sq *)base;
	static const tgi_log_filter all;
	char sql[8192];
	int rc;

	*out = NULL;
	if (!f)
		f = &all;
	if (f->limit && after_seq <= 0 && !f->op_id) {
		/* seqs are gap-free: without a filter the newest `limit` events
		 * are the newest `limit` seqs */
		int64_t window = f->limit > INT64_MAX / TGI_LOG_WINDOW ? INT64_MAX
		               : (int64_t)f->limit * (f->tool || f->status || f->session ? TGI_LOG_WINDOW : 1);
		events_sql(sql, sizeof sql, f, after_seq, 1);
		rc = log_query(s, sql, f, after_seq, window, event_json, out);
		if (rc == SQLITE_OK && json_array_size(*out) < f->limit) {
			json_decref(*out);
			*out = NULL;
			events_sql(sql, sizeof sql, f, after_seq, 0);
			rc = log_query(s, sql, f, after_seq, 0, event_json, out);
		}
	} else {
		events_sql(sql, sizeof sql, f, after_seq, 0);
		rc = log_query(s, sql, f, after_seq, 0, event_json, out);
	}
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	return 0;
}

int tgi_sq_last_seq(tgi_store *base, int64_t *seq, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	*seq = 0;
	int rc = tgi_sq_st_step(s, ST_LAST_SEQ, "");
	if (rc == SQLITE_ROW) {
		*seq = sqlite3_column_int64(s->st[ST_LAST_SEQ], 0); /* NULL: no event, 0 */
		tgi_sq_st_reset(s, ST_LAST_SEQ);
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	return 0;
}

/* ---- stats ----
 *
 * Per tool: calls, calls by status, and the 50th and 99th percentiles
 * (nearest rank) of duration_ms over the calls whose tool ran: persisted,
 * committed and failed.  A replayed call returned a stored result and a
 * dry run stopped before execute, so their durations would only pull the
 * figures toward the gate's own overhead; calls stopped before execute
 * (invalid, denied, pending) are counted but have no duration to speak of.
 *
 * The per-tool part reads ops_id alone (it carries tool, status,
 * started_ms and duration_ms) over the `since` range, in op id order: each
 * tool's figures are gathered apart as the rows come (a few tools, found
 * by name).  Denials come from ops_status (only rows that are not
 * `persisted`) and the envelopes of the denied rows.
 */

static const char stats_tools_sql[] =
	"SELECT tool, status, duration_ms FROM ops INDEXED BY ops_id"
	" WHERE op_id >= :since_id AND started_ms >= :since";

static const char stats_denials_sql[] =
	"SELECT CASE WHEN json_valid(envelope) THEN json_extract(envelope, '$.error.rule') END"
	" AS rule, error_kind, count(*) AS n FROM ops"
	" WHERE status = 'denied' AND status <> 'persisted' AND op_id >= :since_id"
	" AND started_ms >= :since GROUP BY rule, error_kind ORDER BY n DESC, rule, error_kind";

/* One tool's figures while the scan is on its rows: a few statuses, so a
 * short list searched in order (no allocation per row). */
struct status_n {
	char      *name;
	json_int_t n;
	int        ran;   /* its calls ran the tool: their durations count */
};

struct tool_stats {
	struct status_n *st;
	size_t           nst, capst;
	json_int_t       calls;
	double          *ran;    /* durations of the calls that ran */
	size_t           nran, cap;
};

static int ran(const char *status)
{
	return !strcmp(status, "persisted") || !strcmp(status, "committed") ||
	       !strcmp(status, "failed");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile p (1..100) of n sorted values. */
static double percentile(const double *v, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

static void tool_add(struct tool_stats *t, const char *status, double duration_ms)
{
	size_t i = 0;
	while (i < t->nst && strcmp(t->st[i].name, status))
		i++;
	if (i == t->nst) {
		if (t->nst == t->capst)
			t->st = tgi_xrealloc(t->st, (t->capst = t->capst ? 2 * t->capst : 8) * sizeof *t->st);
		t->st[t->nst++] = (struct status_n){ tgi_strdup(status), 0, ran(status) };
	}
	t->st[i].n++;
	t->calls++;
	if (!t->st[i].ran)
		return;
	if (t->nran == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->ran = tgi_xrealloc(t->ran, t->cap * sizeof *t->ran);
	}
	t->ran[t->nran++] = duration_ms;
}

/* Empty t for the next tool (free: and give back its memory). */
static void tool_reset(struct tool_stats *t, int free_all)
{
	for (size_t i = 0; i < t->nst; i++)
		free(t->st[i].name);
	t->nst = 0;
	t->calls = 0;
	t->nran = 0;
	if (free_all) {
		free(t->st);
		free(t->ran);
	}
}

/* The JSON object of tool name (NULL: calls stopped before a tool was
 * named); t is emptied for the next tool. */
static json_t *tool_done(struct tool_stats *t, const char *name)
{
	json_t *o = json_object(), *by = json_object();
	json_object_set_new(o, "tool", tgi_val_string(name));
	json_object_set_new(o, "calls", json_integer(t->calls));
	for (size_t i = 0; i < t->nst; i++)
		json_object_set_new(by, t->st[i].name, json_integer(t->st[i].n));
	json_object_set_new(o, "by_status", by);
	if (t->nran)
		qsort(t->ran, t->nran, sizeof *t->ran, cmp_double);
	json_object_set_new(o, "p50_ms", t->nran ? json_real(percentile(t->ran, t->nran, 50)) : json_null());
	json_object_set_new(o, "p99_ms", t->nran ? json_real(percentile(t->ran, t->nran, 99)) : json_null());
	tool_reset(t, 0);
	return o;
}

/* Prepare sql with the since bounds bound. */
static int stats_prepare(sq *s, const char *sql, int64_t since_ms, const char since_id[37],
                         sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
	if (rc == SQLITE_OK)
		rc = bind_named(*st, ":since_id", since_id, 0);
	if (rc == SQLITE_OK)
		rc = bind_named(*st, ":since", NULL, since_ms);
	return rc;
}

/* One tool's figures under its name (NULL: calls stopped before a tool
 * was named). */
struct named_stats {
	char             *name;
	struct tool_stats t;
};

/* The figures of tool in v[0..*n), added when new; last is where the
 * previous row's were (rows of one tool often come together). */
static struct tool_stats *tool_find(struct named_stats **v, size_t *n, size_t *cap,
                                    size_t *last, const char *tool)
{
	if (*last < *n && tgi_same_tool((*v)[*last].name, tool))
		return &(*v)[*last].t;
	for (size_t i = 0; i < *n; i++)
		if (tgi_same_tool((*v)[i].name, tool))
			return &(*v)[*last = i].t;
	if (*n == *cap)
		*v = tgi_xrealloc(*v, (*cap = *cap ? 2 * *cap : 16) * sizeof **v);
	(*v)[*n] = (struct named_stats){ tool ? tgi_strdup(tool) : NULL, { 0 } };
	*last = (*n)++;
	return &(*v)[*last].t;
}

/* The tools array, by calls descending, and the number of calls. */
static int stats_tools(sq *s, int64_t since_ms, const char since_id[37], json_t *tools,
                       json_int_t *total)
{
	sqlite3_stmt *st = NULL;
	struct named_stats *v = NULL;
	size_t n = 0, cap = 0, last = 0;

	int rc = stats_prepare(s, stats_tools_sql, since_ms, since_id, &st);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *tool = (const char *)sqlite3_column_text(st, 0);
		const char *status = (const char *)sqlite3_column_text(st, 1);
		if ((!tool && sqlite3_column_type(st, 0) != SQLITE_NULL) || !status) {
			rc = SQLITE_NOMEM; /* status is NOT NULL */
			break;
		}
		rc = SQLITE_OK;
		tool_add(tool_find(&v, &n, &cap, &last, tool), status, sqlite3_column_double(st, 2));
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	else if (rc != SQLITE_OK)
		rc = sqlite3_extended_errcode(s->db);
	sqlite3_finalize(st);
	json_t **o = tgi_xmalloc((n ? n : 1) * sizeof *o);
	for (size_t i = 0; i < n; i++) {
		o[i] = tool_done(&v[i].t, v[i].name);
		tool_reset(&v[i].t, 1);
		free(v[i].name);
	}
	free(v);
	tgi_tools_sort(o, n);
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		*total += json_integer_value(json_object_get(o[i], "calls"));
		if (rc == SQLITE_OK)
			json_array_append_new(tools, o[i]);
		else
			json_decref(o[i]);
	}
	free(o);
	return rc;
}

/* The denials array: by rule (and error kind), count descending. */
static int stats_denials(sq *s, int64_t since_ms, const char since_id[37], json_t *denials)
{
	sqlite3_stmt *st = NULL;
	int rc = stats_prepare(s, stats_denials_sql, since_ms, since_id, &st);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object();
		json_object_set_new(o, "rule", col_string(st, 0));
		json_object_set_new(o, "kind", col_string(st, 1));
		json_object_set_new(o, "count", json_integer(sqlite3_column_int64(st, 2)));
		json_array_append_new(denials, o);
		rc = SQLITE_OK;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	else if (rc != SQLITE_OK)
		rc = sqlite3_extended_errcode(s->db);
	sqlite3_finalize(st);
	return rc;
}

int tgi_sq_stats(tgi_store *base, int64_t since_ms, json_t **out, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char since_id[37];
	json_int_t calls = 0;
	json_t *tools = json_array(), *denials = json_array();

	*out = NULL;
	tgi_uuid_floor(since_ms, since_id);
	/* one read transaction: both parts see the same ledger */
	int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = stats_tools(s, since_ms, since_id, tools, &calls);
	if (rc == SQLITE_OK)
		rc = stats_denials(s, since_ms, since_id, denials);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		json_decref(tools);
		json_decref(denials);
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	}
	*out = tgi_stats_json(since_ms, calls, tools, denials);
	return 0;
}

/* ---- export ---- */

/* The export row of the op at the ops statement's current row (columns as
 * tgi_sq_export selects them), with its events and idempotency state. */
static int export_row(sq *s, sqlite3_stmt *st, json_t **out)
{
	static const char *const text[] = { "op_id", "call_id", "session", "tool", "principal",
	                                    "status", "error_kind", "idem_scope" };
	const char *op_id = (const char *)sqlite3_column_text(st, 0);
	const char *scope = (const char *)sqlite3_column_text(st, 7);
	json_t *o = json_object();
	for (int i = 0; i < (int)TGI_ARRAY_LEN(text); i++)
		json_object_set_new(o, text[i], col_string(st, i));

	int rc = SQLITE_DONE;
	json_t *state = json_null(), *binding = json_null();
	if (scope && op_id) {
		rc = tgi_sq_st_step(s, ST_EXPORT_IDEM, "tt", scope, op_id);
		if (rc == SQLITE_ROW) {
			json_decref(state);
			json_decref(binding);
			state = col_string(s->st[ST_EXPORT_IDEM], 0);
			binding = col_string(s->st[ST_EXPORT_IDEM], 1);
			rc = SQLITE_DONE;
		}
		tgi_sq_st_reset(s, ST_EXPORT_IDEM);
	}
	json_object_set_new(o, "idem_state", state);
	json_object_set_new(o, "idem_binding", binding);
	json_object_set_new(o, "args", col_parsed(st, 8));
	json_object_set_new(o, "args_sha256", col_string(st, 9));
	json_object_set_new(o, "envelope", col_parsed(st, 10));
	json_object_set_new(o, "started_ms", json_integer(sqlite3_column_int64(st, 11)));
	json_object_set_new(o, "duration_ms", json_real(sqlite3_column_double(st, 12)));
	json_object_set_new(o, "loop", col_string(st, 13));

	/* its events: those of its record (a column of its row), then those
	 * written after it (rows of events, as are all of a row from before
	 * version 8) */
	json_t *events = json_array(), *kept = col_parsed(st, 14);
	size_t k;
	json_t *e;
	json_array_foreach(kept, k, e) {
		json_array_append_new(events, json_pack("{s:O?, s:O?, s:O?, s:O?}", "ts_ms",
		                                        json_array_get(e, 0), "type", json_array_get(e, 1),
		                                        "stage", json_array_get(e, 2), "data",
		                                        json_array_get(e, 3)));
	}
	json_decref(kept);
	if (rc == SQLITE_DONE && op_id) {
		sqlite3_stmt *ev = NULL;
		for (rc = tgi_sq_st_step(s, ST_EXPORT_EVENTS, "t", op_id); rc == SQLITE_ROW;
		     rc = sqlite3_step(ev)) {
			ev = s->st[ST_EXPORT_EVENTS];
			json_array_append_new(events, json_pack("{s:I, s:o, s:o, s:o}", "ts_ms",
			                                        (json_int_t)sqlite3_column_int64(ev, 0),
			                                        "type", col_string(ev, 1), "stage",
			                                        col_string(ev, 2), "data", col_parsed(ev, 3)));
		}
		tgi_sq_st_reset(s, ST_EXPORT_EVENTS);
	}
	json_object_set_new(o, "events", events);
	if (rc != SQLITE_DONE) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return SQLITE_OK;
}

int tgi_sq_export(tgi_store *base, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
                  char *err, size_t errlen)
{
	sq *s = (sq *)base;
	static const char *const ops_sql =
		"SELECT op_id, call_id, session, tool, principal, status, error_kind, idem_scope,"
		" args_redacted, args_sha256, envelope, started_ms, duration_ms, loop, events FROM ops"
		" WHERE op_id >= ?1 AND started_ms >= ?2 ORDER BY op_id";
	static const char *const lone_sql =
		"SELECT ts_ms, type, stage, data FROM event_rows WHERE op_id IS NULL AND ts_ms >= ?1"
		" ORDER BY seq";
	static const char *const claims_sql =
		"SELECT scope, op_id, state, binding, created_ms FROM idem"
		" WHERE state IN ('in_flight', 'unknown') AND created_ms >= ?1"
		" AND NOT EXISTS (SELECT 1 FROM ops WHERE ops.op_id = idem.op_id)"
		" ORDER BY created_ms, scope";
	char floor_id[37];
	sqlite3_stmt *st = NULL;
	int stop = 0;

	tgi_uuid_floor(since_ms, floor_id);
	/* one read transaction: the three parts see one ledger */
	int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, ops_sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, floor_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, since_ms);
	}
	while (rc == SQLITE_OK && !stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = NULL;
		if ((rc = export_row(s, st, &row)) == SQLITE_OK) {
			stop = fn(arg, row);
			json_decref(row);
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_DONE && !stop)
		rc = sqlite3_prepare_v2(s->db, lone_sql, -1, &st, NULL);
	if (st) {
		sqlite3_bind_int64(st, 1, since_ms);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			json_t *row = json_pack("{s:{s:I, s:o, s:o, s:o}}", "event", "ts_ms",
			                        (json_int_t)sqlite3_column_int64(st, 0), "type",
			                        col_string(st, 1), "stage", col_string(st, 2), "data",
			                        col_parsed(st, 3));
			stop = fn(arg, row);
			json_decref(row);
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	/* claims whose call left no row (its process died while the tool ran) */
	if (rc == SQLITE_DONE && !stop)
		rc = sqlite3_prepare_v2(s->db, claims_sql, -1, &st, NULL);
	if (st) {
		sqlite3_bind_int64(st, 1, since_ms);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			json_t *row = json_pack("{s:{s:o, s:o, s:o, s:o, s:I}}", "claim", "scope",
			                        col_string(st, 0), "op_id", col_string(st, 1), "state",
			                        col_string(st, 2), "binding", col_string(st, 3),
			                        "created_ms", (json_int_t)sqlite3_column_int64(st, 4));
			stop = fn(arg, row);
			json_decref(row);
		}
		sqlite3_finalize(st);
	}
	if (stop) {
		tgi_sq_tx_rollback(s);
		return stop;
	}
	if (rc == SQLITE_DONE)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? SQLITE_DONE
		                                                                : sqlite3_errcode(s->db);
	if (rc != SQLITE_DONE)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger for export");
	return 0;
}

/* ---- unknown outcomes ---- */

int tgi_sq_unknown(tgi_store *base, json_t **out, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	static const char *const sql =
		"WITH u(op_id) AS (SELECT op_id FROM ops WHERE "
		TGI_UNKNOWN_OPS_WHERE("CASE WHEN json_valid(envelope)"
		                      " THEN json_extract(envelope, '$.error.applied') END")
		" UNION SELECT op_id FROM idem WHERE state IN ('in_flight', 'unknown'))"
		" SELECT u.op_id, o.tool, o.principal, o.session, o.status,"
		" coalesce(o.started_ms, i.created_ms) AS started,"
		" CASE WHEN json_valid(o.envelope) THEN json_extract(o.envelope, '$.error.message') END,"
		" i.state, i.scope, i.owner_host, i.owner_pid, i.owner_start, i.lease_until_ms"
		" FROM u LEFT JOIN ops o ON o.op_id = u.op_id"
		" LEFT JOIN idem i ON i.op_id = u.op_id AND i.state IN ('in_flight', 'unknown')"
		" ORDER BY started, u.op_id";
	sqlite3_stmt *st = NULL;
	int64_t now = tgi_unix_ms();
	json_t *a = json_array();

	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	while (st && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *state = tgi_sq_col_text(st, 7);
		struct owner o;
		tgi_sq_read_owner(st, 9, &o);
		if (state && !strcmp(state, "in_flight") && tgi_sq_owner_alive(s, &o, now))
			continue;               /* running now: its outcome is not known yet */
		json_array_append_new(a, tgi_unknown_row(tgi_sq_col_text(st, 0), tgi_sq_col_text(st, 1),
		                                         tgi_sq_col_text(st, 2), tgi_sq_col_text(st, 3),
		                                         tgi_sq_col_text(st, 4), sqlite3_column_int64(st, 5),
		                                         tgi_sq_col_text(st, 6), state, tgi_sq_col_text(st, 8)));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		json_decref(a);
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	}
	*out = a;
	return 0;
}
