/*
 * postgres_schema.c — the PostgreSQL ledger's schema: its tables in
 * PostgreSQL types and the versioned migrations that make them, numbered
 * as sqlite.c's (store.h), applied one transaction each under an advisory
 * lock.
 *
 * Owns: the DDL and the schema version.  Must not: read or write rows,
 * or apply a migration twice (two gates starting at once apply it once).
 */
#include "store/postgres_int.h"

#include <string.h>

/*
 * The schema: the tables of sqlite.c, in PostgreSQL types.  Times are
 * bigint unix ms; JSON is kept as text (an envelope or args read back is
 * byte for byte what was written, and a key order survives, which jsonb
 * would not keep).  Keys and what the log sorts by are COLLATE "C", so
 * they order by bytes, as in SQLite, whatever the database's locale.
 *
 * PostgreSQL's own parts: event_seq, the counter events draw their seq
 * from (see postgres.c); in idem, the owner's backend (pid and start
 * time, microseconds); in rate_buckets, `took`, the answer of the last
 * bucket_take (the one statement that takes a token returns it); and
 * toolgate_json_text(doc, path...), which reads a member of a JSON text
 * that may not be JSON (NULL then) for the log's messages and the
 * statistics' denial rules.  ops_tool and ops_session carry the columns
 * stats and loop windows read (INCLUDE), as in SQLite.
 *
 * Version 5 adds approvals.plan (the call's dry-run plan, redacted JSON
 * text) and approvals.decided_reason, as in sqlite.c.  Version 6 adds
 * eval_runs (toolgate eval), with the indexes of sqlite.c.  Version 7
 * adds the ledger's identity (table ledger) and a mac column on approvals,
 * idem, rate_buckets and pins, as in sqlite.c.
 * Also in version 7, as in sqlite.c: scopes become their digest (sha256(),
 * PostgreSQL 11) and kept keys masks; a row whose envelope is not JSON jsonb
 * takes is left as it is, and a rewritten one keeps jsonb's spelling of it.
 *
 * The version lives in toolgate_schema, one row per migration applied.
 * Migration n takes the schema from version n - 1 to n, in one transaction
 * under pg_advisory_xact_lock, so two gates starting at once apply it once.
 * Tables are made without IF NOT EXISTS: a database holding other tables
 * of these names is refused, not mixed with.
 */
static const char *const migrations[TGI_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE ops("
	"  op_id text COLLATE \"C\" PRIMARY KEY, tool text COLLATE \"C\","
	"  status text COLLATE \"C\" NOT NULL, started_ms bigint NOT NULL,"
	"  duration_ms double precision, call_id text, session text COLLATE \"C\", principal text,"
	"  error_kind text COLLATE \"C\", idem_scope text, args_sha256 text, args_redacted text,"
	"  envelope text NOT NULL);"
	"CREATE INDEX ops_tool ON ops(tool, op_id);"
	"CREATE INDEX ops_status ON ops(status, op_id) WHERE status <> 'persisted';"
	"CREATE TABLE idem("
	"  scope text COLLATE \"C\" PRIMARY KEY, op_id text COLLATE \"C\" NOT NULL,"
	"  state text NOT NULL CHECK (state IN ('in_flight', 'done', 'unknown')),"
	"  owner_host text, owner_pid bigint, owner_start bigint, owner_backend_pid integer,"
	"  owner_backend_start bigint, lease_until_ms bigint, created_ms bigint NOT NULL,"
	"  updated_ms bigint NOT NULL, binding text) WITH (fillfactor = 90);"
	"CREATE INDEX idem_op ON idem(op_id);"
	"CREATE TABLE events("
	"  seq bigint PRIMARY KEY, ts_ms bigint NOT NULL, op_id text COLLATE \"C\","
	"  type text NOT NULL, stage text, data text);"
	"CREATE INDEX events_op ON events(op_id);"
	"CREATE TABLE event_seq(id integer PRIMARY KEY CHECK (id = 1), last bigint NOT NULL);"
	"INSERT INTO event_seq VALUES (1, 0);"
	"CREATE TABLE approvals("
	"  id text COLLATE \"C\" PRIMARY KEY, op_id text, tool text NOT NULL, principal text NOT NULL,"
	"  binding text NOT NULL, state text NOT NULL, args text, reason text,"
	"  created_ms bigint NOT NULL, expires_ms bigint NOT NULL, decided_by text, decided_ms bigint);"
	"CREATE INDEX approvals_binding ON approvals(binding, principal, created_ms);"
	"CREATE TABLE sessions("
	"  id text COLLATE \"C\" PRIMARY KEY, first_ms bigint NOT NULL, last_ms bigint NOT NULL,"
	"  calls bigint NOT NULL);"
	"CREATE FUNCTION toolgate_json_text(doc text, VARIADIC path text[]) RETURNS text"
	"  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$"
	"  BEGIN RETURN doc::json #>> path; EXCEPTION WHEN others THEN RETURN NULL; END $$;",

	"CREATE TABLE pins("
	"  name text COLLATE \"C\" PRIMARY KEY, digest text NOT NULL, first_ms bigint NOT NULL,"
	"  updated_ms bigint NOT NULL);",

	"ALTER TABLE ops ADD COLUMN loop text;"
	"ALTER TABLE sessions ADD COLUMN manifest text;"
	"CREATE TABLE rate_buckets("
	"  principal text COLLATE \"C\", tool text COLLATE \"C\", tokens double precision NOT NULL,"
	"  updated_ms bigint NOT NULL, took boolean NOT NULL DEFAULT false,"
	"  PRIMARY KEY(principal, tool));"
	"DROP INDEX ops_tool;"
	"CREATE INDEX ops_tool ON ops(tool, op_id) INCLUDE (status, started_ms, duration_ms);"
	"CREATE INDEX ops_session ON ops(session, op_id) INCLUDE (loop) WHERE session IS NOT NULL;",

	"CREATE TABLE messages("
	"  session text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, api text NOT NULL,"
	"  ts_ms bigint NOT NULL, entry text NOT NULL, PRIMARY KEY(session, seq));",

	"ALTER TABLE approvals ADD COLUMN plan text, ADD COLUMN decided_reason text;",

	"CREATE TABLE eval_runs("
	"  id text COLLATE \"C\" PRIMARY KEY, ts_ms bigint NOT NULL, provider text, api text,"
	"  model text COLLATE \"C\", profile text, manifest text, suite text, cases bigint NOT NULL,"
	"  runs bigint NOT NULL, score_tool double precision, score_valid double precision,"
	"  score_args double precision, score_policy double precision,"
	"  score_pass double precision, report text NOT NULL);"
	"CREATE INDEX eval_runs_ts ON eval_runs(ts_ms, id);"
	"CREATE INDEX eval_runs_model ON eval_runs(model, ts_ms, id);",

	"CREATE FUNCTION toolgate_scope_digest(scope text) RETURNS text"
	"  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS"
	"  $$ SELECT CASE WHEN scope ~ '^sha256:[0-9a-f]{64}$' THEN scope"
	"    ELSE 'sha256:' || encode(sha256(convert_to(scope, 'UTF8')), 'hex') END $$;"
	"CREATE FUNCTION toolgate_key_masked(doc text) RETURNS text"
	"  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$"
	"  DECLARE k text; BEGIN"
	"    IF jsonb_typeof(doc::jsonb -> 'idempotency_key') IS DISTINCT FROM 'string' THEN"
	"      RETURN doc; END IF;"
	"    k := doc::jsonb ->> 'idempotency_key';"
	"    IF k ~ '^\xC2\xABredacted:[0-9a-f]{8}\xC2\xBB$' THEN RETURN doc; END IF;"
	"    RETURN (doc::jsonb || jsonb_build_object('idempotency_key', '\xC2\xABredacted:'"
	"      || left(encode(sha256(convert_to(k, 'UTF8')), 'hex'), 8) || '\xC2\xBB'))::text;"
	"  EXCEPTION WHEN others THEN RETURN doc; END $$;"
	"UPDATE idem SET scope = toolgate_scope_digest(scope) WHERE scope NOT LIKE 'sha256:%';"
	"UPDATE ops SET idem_scope = toolgate_scope_digest(idem_scope)"
	"  WHERE idem_scope NOT LIKE 'sha256:%';"
	"UPDATE ops SET envelope = toolgate_key_masked(envelope)"
	"  WHERE strpos(envelope, '\"idempotency_key\"') > 0;"
	"UPDATE ops SET args_redacted = toolgate_key_masked(args_redacted)"
	"  WHERE strpos(args_redacted, '\"idempotency_key\"') > 0;"
	"UPDATE approvals SET args = toolgate_key_masked(args)"
	"  WHERE strpos(args, '\"idempotency_key\"') > 0;"
	"DROP FUNCTION toolgate_key_masked(text);"
	"DROP FUNCTION toolgate_scope_digest(text);"
	"CREATE TABLE ledger("
	"  one integer PRIMARY KEY CHECK (one = 1), id text NOT NULL, bound text NOT NULL,"
	"  created_ms bigint NOT NULL, mac text NOT NULL);"
	"ALTER TABLE approvals ADD COLUMN mac text;"
	"ALTER TABLE idem ADD COLUMN mac text;"
	"ALTER TABLE rate_buckets ADD COLUMN mac text;"
	"ALTER TABLE pins ADD COLUMN mac text;",
	/* 8: SQLite keeps a call's events in its ops row; here they stay rows
	 * (a record is one round trip whatever it writes): the version only
	 * keeps the two stores' numbers in step */
	"COMMENT ON TABLE ops IS 'one row per call';",
};

/* ---- schema ---- */

int tgi_pg_schema_ahead(pg *s, int v, char *err, size_t errlen)
{
	tgi_snprintf(err, errlen,
	             "the ledger %s has schema version %d, newer than this toolgate understands (%d); upgrade toolgate or use another ledger",
	             s->shown, v, TGI_STORE_SCHEMA_VERSION);
	return -1;
}

/* The version: 0 for a database without toolgate_schema.  -1 on error. */
static int read_version(pg *s, int *version)
{
	q x;
	tgi_pg_q_init(&x, ST_ADHOC, "SELECT coalesce(max(version), 0) FROM toolgate_schema");
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0)
		*version = (int)tgi_pg_val_i64(x.res, 0, 0, 0);
	else if (!strcmp(s->sqlstate, "42P01")) /* undefined_table: nothing here yet */
		*version = 0, rc = 0;
	tgi_pg_q_free(&x, 1);
	return rc;
}

int tgi_pg_schema_version(tgi_store *base, int *version, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	*version = 0;
	if (read_version(s, version) < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger schema");
	return 0;
}

/* A simple-protocol statement (several in one text allowed), inside the
 * migration's transaction.  0, or -1 with s->why. */
static int exec_simple(pg *s, const char *sql)
{
	PGresult *r = tgi_pq.exec(s->conn, sql);
	ExecStatusType st = r ? tgi_pq.resultStatus(r) : PGRES_FATAL_ERROR;
	int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
	if (!ok) {
		tgi_pg_result_why(s, r);
		if (tgi_pg_conn_error(s, r)) {
			if (r)
				tgi_pq.clear(r);
			tgi_pg_conn_lost(s, s->why);
			return -1;
		}
	}
	if (r)
		tgi_pq.clear(r);
	return ok ? 0 : -1;
}

/* Apply migration n (from version n - 1) in its own transaction, under the
 * schema lock; another process may have applied it meanwhile (then
 * nothing is done).  *ahead set when the schema turned out newer. */
static int apply_one(pg *s, int n, void (*fn)(void *, int), void *arg, int *ahead)
{
	char sql[512];
	int64_t now = 0;

	if (tgi_pg_conn_ready(s) < 0)
		return -1;
	tgi_snprintf(sql, sizeof sql,
	             "BEGIN; SELECT pg_advisory_xact_lock(%d, 0);"
	             " CREATE TABLE IF NOT EXISTS toolgate_schema(version integer PRIMARY KEY,"
	             " applied_at timestamptz NOT NULL DEFAULT now())",
	             PG_LOCK_SCHEMA);
	int rc = exec_simple(s, sql);
	if (rc == 0) {
		PGresult *r = tgi_pq.exec(s->conn, "SELECT coalesce(max(version), 0) FROM toolgate_schema");
		if (r && tgi_pq.resultStatus(r) == PGRES_TUPLES_OK)
			now = tgi_pg_val_i64(r, 0, 0, 0);
		else
			rc = -1, tgi_pg_result_why(s, r);
		if (r)
			tgi_pq.clear(r);
	}
	if (rc == 0 && now >= n) {      /* done by another process meanwhile */
		*ahead = now > TGI_STORE_SCHEMA_VERSION;
		return exec_simple(s, "ROLLBACK");
	}
	if (rc == 0 && fn)
		fn(arg, n);
	if (rc == 0)
		rc = exec_simple(s, migrations[n - 1]);
	if (rc == 0) {
		tgi_snprintf(sql, sizeof sql, "INSERT INTO toolgate_schema(version) VALUES (%d); COMMIT", n);
		rc = exec_simple(s, sql);
	}
	if (rc < 0)
		tgi_pg_tx_abort(s);
	return rc;
}

/* Migrations v + 1 .. to, v being the version just read. */
int tgi_pg_migrate_from(pg *s, int v, int to, int dry_run, void (*fn)(void *, int), void *arg,
                        char *err, size_t errlen)
{
	if (v > TGI_STORE_SCHEMA_VERSION || v < 0)
		return tgi_pg_schema_ahead(s, v, err, errlen);
	if (to < v) {
		tgi_snprintf(err, errlen, "the ledger %s is at schema version %d; migrations only go forward",
		             s->shown, v);
		return -1;
	}
	for (int n = v + 1; n <= to; n++) {
		if (dry_run) {
			if (fn)
				fn(arg, n);
			continue;
		}
		int ahead = 0;
		if (apply_one(s, n, fn, arg, &ahead) < 0) {
			/* duplicate table, column or function: another program's */
			if (!s->transient && (!strcmp(s->sqlstate, "42P07") || !strcmp(s->sqlstate, "42701") ||
			                      !strcmp(s->sqlstate, "42723"))) {
				tgi_snprintf(err, errlen,
				             "the ledger %s does not have the tables toolgate expects (%s); use a database of its own",
				             s->shown, s->why);
				return -1;
			}
			return tgi_pg_fail(s, err, errlen, "cannot apply migration %d to the ledger", n);
		}
		if (ahead)
			return tgi_pg_schema_ahead(s, TGI_STORE_SCHEMA_VERSION + 1, err, errlen);
	}
	return 0;
}

int tgi_pg_migrate(tgi_store *base, int to, int dry_run, void (*fn)(void *, int), void *arg,
                   char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	int v = 0;
	if (read_version(s, &v) < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read the ledger schema");
	return tgi_pg_migrate_from(s, v, to, dry_run, fn, arg, err, errlen);
}
