/*
 * postgres.c — the ledger on PostgreSQL through libpq (DESIGN §5), shared
 * by gates on many hosts: the same contracts as sqlite.c (store.h is the
 * spec), the same tables, the same migration numbers.
 *
 * libpq is loaded at run time (src/util/dl.c): the program is not linked
 * with it, so a `toolgate call` on an SQLite ledger never maps it.
 *
 * One connection per handle; store.c serialises calls on a handle with
 * the handle's lock, and a watch has a connection of its own.  Every operation
 * is one round trip where it can be: its statements go out in libpq's
 * pipeline mode, between two Syncs, which the server runs as one implicit
 * transaction (committed at the Sync, rolled back whole if any statement
 * fails).  Statements are prepared by name on first use on a connection,
 * in the same round trip as their first execution.
 *
 * Idempotency row lifecycle (scope is the key), as in sqlite.c:
 *
 *     (none) --claim--> in_flight --record DONE--> done      (replayed)
 *                           |  \---record RELEASE--> (none)   (may run again)
 *                           |   \--record UNKNOWN--> unknown
 *                           +--owner seen dead---> unknown   (never re-run)
 *                           +--its record failed--> unknown  (none for RELEASE)
 *     unknown | dead in_flight --resolve applied=1--> done
 *                              --resolve applied=0--> (none)
 *
 * The claim is one statement, INSERT ... ON CONFLICT DO NOTHING RETURNING,
 * committed (synchronous_commit on) before the tool may run; the row is
 * read back in the same round trip.  An owner is its host (hostname, boot
 * id and pid namespace: common.c), pid and process start time, its
 * PostgreSQL backend (pid and backend_start) and a lease on the server's
 * clock.  On this host the owner process itself is checked in /proc
 * (common.c, as for sqlite.c); an owner on another host is alive while its
 * lease has not run out and its backend still exists with that start time
 * or started before the server now running did (a server restart ends
 * every backend and says nothing about the processes).  A dead owner's row
 * becomes unknown by a conditional UPDATE (only if it is still that
 * in_flight row), so whoever asks next gets the same answer; it keeps its
 * owner, and `ops resolve` judges an unknown row's owner as an in-flight
 * one's.  A row its owner settles unknown itself loses its owner (no
 * process runs it any more).
 *
 * Events: seq comes from a one-row counter (event_seq), bumped by the
 * statement that inserts the events, the last one before the commit: its
 * row lock is held only through the commit, so seqs are gap-free (a
 * rollback gives them back) and in commit order across processes (a
 * follower reading seq > last never misses a row that commits later with
 * a lower seq).  The same statement sends NOTIFY toolgate_events, which
 * the server delivers at commit; a decided approval sends NOTIFY
 * toolgate_approvals with its id.
 *
 * A lost connection (the server gone, shut down, or this backend killed)
 * makes the failing call's sentence say so and tgi_store_transient() 1.
 * The next call reconnects, but not before a backoff (100 ms, doubling to
 * 5 s, back to 100 ms after a success); in the backoff a call fails at
 * once.  A connection that died while idle (a restart, a killed backend,
 * an idle timeout: the socket turned readable) is found before the next
 * round trip and made again at once; a record whose connection broke under
 * it is sent once more on a fresh one (its op_id is its key: a duplicate
 * means the first commit landed).  Reconnects wait PG_RECONNECT_S for a
 * server at most, and every connection has keepalives and a TCP user
 * timeout, so a server host that vanished does not hold a call for long.
 * After a reconnect the claims of calls still running are moved to the new
 * backend; a claim whose commit was lost with the connection is deleted
 * (its call was refused, so nothing ran under it), and one whose record
 * failed is settled unknown (or deleted when nothing was applied), never
 * moved: its call is over (struct held).  What is still unsettled when the
 * handle closes gets one bounded attempt then.
 *
 * Approvals compare expiries with the server's clock, as leases and
 * buckets do, not with each gate's.  An export reads one snapshot.
 *
 * Owns: the connection, schema and migrations, the prepared statements,
 * the claim protocol, the reconnect backoff, the watches' connections.
 * Must not: decide policy, run tools, or build envelopes (the one it writes
 * itself is the minimal envelope of an op an operator settled as applied
 * when the process that ran it left no row, made by common.c), show a
 * password, or keep its own copy of what common.c holds for both stores
 * (the argument checks and their sentences, a claim owner's liveness on
 * this host, UUIDv7 times, the values both build alike).
 * A database error is -1 with a sentence, never an abort.
 */
#include "store/impl.h"
#include "util/dl.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PG_CONNECT_TIMEOUT "10"   /* seconds, unless the URL says otherwise */
#define PG_RECONNECT_S     3      /* a reconnect's (and a watch's) connect timeout, at most */
#define PG_TCP_USER_TIMEOUT "30000" /* ms unacknowledged before the kernel gives a connection up */
#define PG_CLOSE_WAIT_MS   2000   /* the close's one attempt at unsettled claims */
#define PG_IDLE_CLOSE_MS   100    /* after a message on an idle connection: its close may follow */
#define PG_BACKOFF_MIN_MS  100
#define PG_BACKOFF_MAX_MS  5000
#define PG_CLAIM_TRIES     8      /* a scope that changes hands this often is an error */
#define PG_MAXP            16     /* parameters of one statement */
#define PG_MAXQ            8      /* statements of one round trip */
#define PG_HELD_MAX        64     /* claims remembered for a reconnect */
#define PG_WHY_MAX         512

/* pg_advisory_xact_lock(class, key) classes: "tg" and a number. */
#define PG_LOCK_SCHEMA     1952907265 /* 0x74670001 */
#define PG_LOCK_MESSAGES   1952907266 /* 0x74670002 */

/* The server's clock in unix ms (leases, rate-limit buckets); for
 * approvals the statement's start on it, one value in a statement. */
#define PG_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define PG_STMT_MS "(extract(epoch from statement_timestamp()) * 1000)::bigint"
/* A backend's start time in microseconds, as stored with a claim. */
#define PG_START_US(col) "(extract(epoch from " col ") * 1000000)::bigint"
/* A claim's owner: its backend still runs (with the start recorded), or
 * it started before the server now running did (it went with a server
 * restart, not with its process: the lease alone decides then). */
#define PG_BACKEND_ALIVE                                                          \
	"i.owner_backend_pid IS NOT NULL AND EXISTS(SELECT 1"                     \
	" FROM pg_stat_get_activity(i.owner_backend_pid) a WHERE a.backend_start" \
	" IS NULL OR " PG_START_US("a.backend_start") " = i.owner_backend_start)"
#define PG_BACKEND_BEFORE                                                         \
	"coalesce(i.owner_backend_start < " PG_START_US("pg_postmaster_start_time()") \
	", false)"
/* A claim its owner settled itself (unknown): no process runs it any more,
 * so nothing about an owner is left to judge (the host stays, for people). */
#define PG_NO_OWNER                                                               \
	"owner_pid = NULL, owner_start = NULL, owner_backend_pid = NULL,"         \
	" owner_backend_start = NULL, lease_until_ms = NULL"
#define PG_STR_(x) #x
#define PG_STR(x)  PG_STR_(x)

/*
 * The schema: the tables of sqlite.c, in PostgreSQL types.  Times are
 * bigint unix ms; JSON is kept as text (an envelope or args read back is
 * byte for byte what was written, and a key order survives, which jsonb
 * would not keep).  Keys and what the log sorts by are COLLATE "C", so
 * they order by bytes, as in SQLite, whatever the database's locale.
 *
 * PostgreSQL's own parts: event_seq, the counter events draw their seq
 * from (see the file comment); in idem, the owner's backend (pid and start
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
};

/* The columns of an eval run, in tgi_eval_row's order. */
#define PG_EVAL_COLS                                                                            \
	"id, ts_ms, provider, api, model, profile, manifest, suite, cases, runs, score_tool,"  \
	" score_valid, score_args, score_policy, score_pass, report"

/* An approval's columns as approval_row reads them (its state as stored),
 * then its MAC. */
#define PG_APPROVAL_RAW                                                                         \
	"id, op_id, tool, principal, binding, state, args, reason, created_ms, expires_ms,"     \
	" decided_by, plan, decided_ms, decided_reason, mac"

/*
 * The prepared statements, each with its number of parameters.  As in
 * sqlite.c, approval states are derived at read time: a pending or
 * approved row past expires_ms counts as expired.
 */
#define PG_STORE_SQL(X)                                                                         \
	X(ST_OP_INSERT, 14,                                                                     \
	  "INSERT INTO ops(op_id, call_id, session, tool, principal, status, error_kind,"       \
	  " idem_scope, args_redacted, args_sha256, envelope, started_ms, duration_ms, loop)"   \
	  " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::bigint,"                   \
	  " $13::double precision, $14)")                                                      \
	X(ST_OP_ENVELOPE, 1, "SELECT envelope FROM ops WHERE op_id = $1")                       \
	X(ST_OP_SET_ENVELOPE, 2, "UPDATE ops SET envelope = $2 WHERE op_id = $1")               \
	X(ST_EVENTS_INSERT, 6,                                                                  \
	  "WITH c AS (UPDATE event_seq SET last = last + $1::bigint WHERE id = 1 RETURNING last)," \
	  " ins AS (INSERT INTO events(seq, ts_ms, op_id, type, stage, data)"                    \
	  " SELECT c.last - $1::bigint + e.ord, e.ts, $2::text, e.type, e.stage, e.data"         \
	  " FROM c, unnest($3::bigint[], $4::text[], $5::text[], $6::text[])"                    \
	  " WITH ORDINALITY AS e(ts, type, stage, data, ord))"                                   \
	  " SELECT last, pg_notify('toolgate_events', '') FROM c")                              \
	X(ST_SESSION_UPSERT, 3,                                                                 \
	  "INSERT INTO sessions AS s(id, first_ms, last_ms, calls, manifest)"                   \
	  " VALUES($1, $2::bigint, $2::bigint, 1, $3)"                                          \
	  " ON CONFLICT(id) DO UPDATE SET first_ms = least(s.first_ms, excluded.first_ms),"     \
	  " last_ms = greatest(s.last_ms, excluded.last_ms), calls = s.calls + 1,"              \
	  " manifest = coalesce(excluded.manifest, s.manifest)")                                \
	X(ST_SESSION_MANIFEST, 1, "SELECT manifest FROM sessions WHERE id = $1")                \
	X(ST_LOOP_SESSION, 2,                                                                   \
	  "SELECT loop FROM ops WHERE session = $1 AND loop IS NOT NULL"                        \
	  " ORDER BY op_id DESC LIMIT $2::bigint")                                              \
	X(ST_BUCKET_GET, 2,                                                                     \
	  "SELECT tokens, updated_ms, mac FROM rate_buckets WHERE principal = $1 AND tool = $2") \
	X(ST_BUCKET_LOCK, 2,                                                                    \
	  "INSERT INTO rate_buckets AS b(principal, tool, tokens, updated_ms, took)"            \
	  " VALUES($1, $2, 0, " PG_NOW_MS ", false) ON CONFLICT(principal, tool)"               \
	  " DO UPDATE SET took = b.took RETURNING tokens, updated_ms, mac, " PG_NOW_MS)         \
	X(ST_BUCKET_SET, 6,                                                                     \
	  "UPDATE rate_buckets SET tokens = $3::double precision, updated_ms = $4::bigint,"     \
	  " mac = $5, took = $6::boolean WHERE principal = $1 AND tool = $2")                   \
	X(ST_LAST_SEQ, 0, "SELECT coalesce(max(seq), 0) FROM events")                           \
	X(ST_IDEM_CLAIM, 9,                                                                     \
	  "INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"          \
	  " owner_backend_pid, owner_backend_start, lease_until_ms, created_ms, updated_ms,"    \
	  " binding, mac) SELECT $1, $2, 'in_flight', $3, $4::bigint, $5::bigint,"             \
	  " pg_backend_pid(), $6::bigint, n.ms + $7::bigint * 1000, n.ms, n.ms, $8, $9"        \
	  " FROM (SELECT " PG_NOW_MS " AS ms) n ON CONFLICT(scope) DO NOTHING RETURNING op_id") \
	X(ST_IDEM_GET, 1,                                                                       \
	  "SELECT i.op_id, i.state, i.owner_host, i.owner_pid, i.owner_start, i.lease_until_ms," \
	  " i.binding, " PG_NOW_MS ", " PG_BACKEND_ALIVE ", " PG_BACKEND_BEFORE ","              \
	  " o.envelope, i.mac FROM idem i LEFT JOIN ops o ON i.state = 'done'"                  \
	  " AND o.op_id = i.op_id WHERE i.scope = $1")                                          \
	X(ST_IDEM_MARK_UNKNOWN, 2,                                                              \
	  "UPDATE idem SET state = 'unknown', updated_ms = " PG_NOW_MS ", mac = NULL"           \
	  " WHERE scope = $1 AND op_id = $2 AND state = 'in_flight' RETURNING op_id")           \
	X(ST_IDEM_FORGED, 3,                                                                    \
	  "UPDATE idem SET state = 'unknown', updated_ms = " PG_NOW_MS ", " PG_NO_OWNER          \
	  ", mac = NULL WHERE scope = $1 AND op_id = $2 AND state IN ('done', 'in_flight')"     \
	  " AND mac IS NOT DISTINCT FROM $3 RETURNING op_id")                                   \
	X(ST_IDEM_BY_OP, 1,                                                                     \
	  "SELECT i.scope, i.state, i.owner_host, i.owner_pid, i.owner_start, i.lease_until_ms," \
	  " " PG_NOW_MS ", " PG_BACKEND_ALIVE ", " PG_BACKEND_BEFORE ", i.binding"               \
	  " FROM idem i WHERE i.op_id = $1 AND i.state IN ('in_flight', 'unknown')"             \
	  " LIMIT 1 FOR UPDATE OF i")                                                           \
	X(ST_IDEM_DONE, 4,                                                                      \
	  "INSERT INTO idem AS i(scope, op_id, state, created_ms, updated_ms, binding, mac)"    \
	  " SELECT $1, $2, 'done', n.ms, n.ms, $3, $4 FROM (SELECT " PG_NOW_MS " AS ms) n"      \
	  " ON CONFLICT(scope) DO UPDATE SET state = 'done', updated_ms = excluded.updated_ms," \
	  " mac = excluded.mac WHERE i.op_id = excluded.op_id")                                 \
	X(ST_IDEM_UNKNOWN, 2,                                                                   \
	  "UPDATE idem SET state = 'unknown', updated_ms = " PG_NOW_MS ", " PG_NO_OWNER          \
	  ", mac = NULL WHERE scope = $1 AND op_id = $2")                                       \
	X(ST_IDEM_RELEASE, 2, "DELETE FROM idem WHERE scope = $1 AND op_id = $2")               \
	X(ST_OP_UNSETTLED, 1,                                                                   \
	  "SELECT 1 FROM ops WHERE op_id = $1 AND "                                            \
	  TGI_UNKNOWN_OPS_WHERE("toolgate_json_text(envelope, 'error', 'applied')")            \
	  " FOR UPDATE OF ops")                                                                 \
	X(ST_IDEM_SETTLE_HELD, 6,                                                               \
	  "WITH h AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])"                 \
	  " AS h(scope, op_id, how)),"                                                          \
	  " del AS (DELETE FROM idem i USING h WHERE h.how = 'delete' AND i.scope = h.scope"    \
	  " AND i.op_id = h.op_id AND i.state = 'in_flight' RETURNING 1),"                      \
	  " unk AS (UPDATE idem i SET state = 'unknown', updated_ms = " PG_NOW_MS ","            \
	  " " PG_NO_OWNER ", mac = NULL FROM h WHERE h.how = 'unknown' AND i.scope = h.scope"               \
	  " AND i.op_id = h.op_id AND i.state = 'in_flight' RETURNING 1),"                      \
	  " reb AS (UPDATE idem i SET owner_backend_pid = pg_backend_pid(),"                    \
	  " owner_backend_start = $4::bigint FROM h WHERE h.how = 'rebind'"                     \
	  " AND i.scope = h.scope AND i.op_id = h.op_id AND i.state IN ('in_flight', 'unknown')" \
	  " AND i.owner_pid = $5::bigint AND i.owner_host = $6 RETURNING 1)"                     \
	  " SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM unk),"                     \
	  " (SELECT count(*) FROM reb)")                                                        \
	X(ST_EVENT_SEQS, 2, "SELECT seq FROM events WHERE op_id = $1 ORDER BY seq LIMIT $2::bigint") \
	X(ST_APPROVAL_INSERT, 9,                                                                \
	  "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"    \
	  " created_ms, expires_ms, plan) VALUES($1, $2, $3, $4, $5, 'pending', $6, $7, "       \
	  PG_STMT_MS ", " PG_STMT_MS " + $8::bigint, $9) RETURNING created_ms, expires_ms")     \
	X(ST_APPROVAL_DECIDE, 4,                                                                \
	  "WITH u AS (UPDATE approvals SET"                                                     \
	  " state = CASE WHEN expires_ms <= " PG_STMT_MS " THEN 'expired' ELSE $2 END,"         \
	  " decided_by = CASE WHEN expires_ms <= " PG_STMT_MS " THEN decided_by ELSE $3 END,"   \
	  " decided_ms = CASE WHEN expires_ms <= " PG_STMT_MS " THEN decided_ms"                \
	  " ELSE " PG_STMT_MS " END,"                                                           \
	  " decided_reason = CASE WHEN expires_ms <= " PG_STMT_MS " THEN decided_reason"        \
	  " ELSE $4 END"                                                                        \
	  " WHERE id = $1 AND state = 'pending' RETURNING *)"                                   \
	  " SELECT " PG_APPROVAL_RAW ", pg_notify('toolgate_approvals', id) FROM u")            \
	X(ST_APPROVAL_MAC, 2, "UPDATE approvals SET mac = $2 WHERE id = $1")                    \
	X(ST_APPROVAL_STATE, 1, "SELECT state FROM approvals WHERE id = $1")                    \
	X(ST_APPROVAL_LIVE, 2,                                                                  \
	  "SELECT " PG_APPROVAL_RAW " FROM approvals WHERE binding = $1 AND principal = $2"     \
	  " AND state IN ('pending', 'approved', 'denied') AND expires_ms > " PG_STMT_MS        \
	  " AND (state <> 'approved' OR decided_ms IS NOT NULL)"                                \
	  " ORDER BY created_ms DESC, id DESC")                                                 \
	X(ST_APPROVAL_LOCK, 1,                                                                  \
	  "SELECT " PG_APPROVAL_RAW ", " PG_STMT_MS " FROM approvals WHERE id = $1 FOR UPDATE") \
	X(ST_APPROVAL_USED, 2,                                                                  \
	  "UPDATE approvals SET state = 'used', mac = $2 WHERE id = $1 AND state = 'approved'"  \
	  " RETURNING id")                                                                      \
	X(ST_APPROVAL_LIST, 1,                                                                  \
	  "SELECT id, op_id, tool, principal, binding, st, args, reason, created_ms,"          \
	  " expires_ms, decided_by, plan, decided_ms, decided_reason"                          \
	  " FROM (SELECT *, CASE WHEN state IN ('pending', 'approved')"                        \
	  " AND expires_ms <= " PG_STMT_MS " THEN 'expired' ELSE state END AS st"               \
	  " FROM approvals) a WHERE $1::text = '*' OR st = $1::text"                            \
	  " OR ($1::text IS NULL AND st IN ('pending', 'approved'))"                            \
	  " ORDER BY created_ms DESC, id DESC")                                                 \
	X(ST_APPROVAL_ONE, 1,                                                                   \
	  "SELECT id, op_id, tool, principal, binding, CASE WHEN state IN ('pending', 'approved')" \
	  " AND expires_ms <= " PG_STMT_MS " THEN 'expired' ELSE state END, args, reason,"      \
	  " created_ms, expires_ms, decided_by, plan, decided_ms, decided_reason, mac"         \
	  " FROM approvals WHERE id = $1")                                                      \
	X(ST_MSG_LOCK, 1,                                                                       \
	  "SELECT pg_advisory_xact_lock(" PG_STR(PG_LOCK_MESSAGES) ", hashtext($1))")          \
	X(ST_MSG_APPEND, 4,                                                                     \
	  "WITH last AS (SELECT seq, api FROM messages WHERE session = $1"                      \
	  " ORDER BY seq DESC LIMIT 1),"                                                        \
	  " ins AS (INSERT INTO messages(session, seq, api, ts_ms, entry)"                      \
	  " SELECT $1, coalesce((SELECT seq FROM last), 0) + e.ord, $2, $3::bigint, e.entry"    \
	  " FROM unnest($4::text[]) WITH ORDINALITY AS e(entry, ord)"                            \
	  " WHERE NOT EXISTS(SELECT 1 FROM last WHERE api <> $2) RETURNING 1)"                   \
	  " SELECT (SELECT api FROM last), (SELECT count(*) FROM ins)")                         \
	X(ST_MSG_LIST, 1, "SELECT api, entry FROM messages WHERE session = $1 ORDER BY seq")    \
	X(ST_EVAL_INSERT, 16,                                                                   \
	  "INSERT INTO eval_runs(" PG_EVAL_COLS ") VALUES($1, $2::bigint, $3, $4, $5, $6, $7,"  \
	  " $8, $9::bigint, $10::bigint, $11::double precision, $12::double precision,"         \
	  " $13::double precision, $14::double precision, $15::double precision, $16)")         \
	X(ST_EVAL_LIST, 1,                                                                      \
	  "SELECT " PG_EVAL_COLS " FROM (SELECT * FROM eval_runs"                               \
	  " ORDER BY ts_ms DESC, id DESC LIMIT $1::bigint) e ORDER BY ts_ms, id")               \
	X(ST_EVAL_LIST_MODEL, 2,                                                                \
	  "SELECT " PG_EVAL_COLS " FROM (SELECT * FROM eval_runs WHERE model = $1"              \
	  " ORDER BY ts_ms DESC, id DESC LIMIT $2::bigint) e ORDER BY ts_ms, id")               \
	X(ST_PIN_GET, 1, "SELECT digest, mac FROM pins WHERE name = $1")                        \
	X(ST_PIN_ADD, 4,                                                                        \
	  "INSERT INTO pins(name, digest, first_ms, updated_ms, mac) VALUES($1, $2, $3::bigint," \
	  " $3::bigint, $4) ON CONFLICT(name) DO NOTHING RETURNING digest")                     \
	X(ST_PIN_SET, 4,                                                                        \
	  "INSERT INTO pins(name, digest, first_ms, updated_ms, mac) VALUES($1, $2, $3::bigint," \
	  " $3::bigint, $4) ON CONFLICT(name) DO UPDATE SET digest = excluded.digest,"          \
	  " updated_ms = excluded.updated_ms, mac = excluded.mac")

#define PG_ST_ENUM(name, n, sql) name,
#define PG_ST_SQL(name, n, sql) { sql, n },
enum st { PG_STORE_SQL(PG_ST_ENUM) ST__COUNT, ST_ADHOC = -1 };
static const struct { const char *sql; int nparams; } st_def[ST__COUNT] = {
	PG_STORE_SQL(PG_ST_SQL)
};
_Static_assert(ST__COUNT <= 64, "one bit per statement in pg.prepared");

/* A claim this handle made and has not settled, and what the next
 * connection (or the close) does with it:
 *   HELD_RUNNING  its tool runs: moved to the new backend (a live owner);
 *   HELD_DELETE   its commit reply was lost and its call refused, or its
 *                 record (settling "nothing applied") failed: deleted, if
 *                 still in flight;
 *   HELD_UNKNOWN  its record failed after its tool ran (or may have):
 *                 unknown, with no owner left, if still in flight.
 * Neither of the last two is ever moved to a new backend: the call is
 * over, and a live-looking claim would make every retry `pending`. */
enum held_state { HELD_RUNNING, HELD_DELETE, HELD_UNKNOWN };

struct held {
	char            *scope;
	char             op_id[37];
	enum held_state  state;
};

typedef struct pg {
	tgi_store    base;            /* first: the handle callers hold */
	PGconn      *conn;            /* NULL while lost */
	char        *url;             /* as given, password and all: never shown */
	char         password[256];   /* scrubbed from every sentence ("" if none) */
	int          reconnect_s;     /* a reconnect's connect timeout: PG_RECONNECT_S, or the
	                               * URL's connect_timeout when shorter */
	char         shown[512];      /* "database 'db' at host:port", for sentences */
	int          no_migrate;
	int          transient;       /* tgi_store_transient */
	int          lost;            /* the connection is gone: reconnect first */
	int          tx;              /* an explicit transaction is open on it (tx_begin):
	                               * no reconnect until tx_commit or tx_abort */
	int          backoff_ms;      /* the wait before the next reconnect; 0 when connected */
	double       retry_at;        /* monotonic ms of the next reconnect */
	int          sent;            /* the last round trip sent something */
	char         lost_why[PG_WHY_MAX]; /* why the connection is lost (libpq's words) */
	char         why[PG_WHY_MAX]; /* the last failure, a sentence part */
	char         sqlstate[6];     /* ... its SQLSTATE ("" when none) */
	char         constraint[64];  /* ... the constraint it broke, if any */
	uint64_t     prepared;        /* bit i: statement i is prepared on this connection */
	tgi_self     me;              /* this process, as a claim's owner */
	int64_t      backend_start;   /* our backend's start, microseconds */
	struct held  held[PG_HELD_MAX];
	size_t       nheld;
} pg;

/* The owner of an idem row as read from it, with the server's clock. */
struct owner {
	char    host[256];
	int64_t pid, start, lease_until, now;
	int     backend_alive;
	int     backend_before;   /* its backend started before the server did */
};

/* One statement of a round trip: a prepared one (st) or an ad hoc text
 * (st ST_ADHOC, sql), its parameters as text (NULL: SQL NULL), and after
 * the trip its result (cleared by q_free). */
typedef struct q {
	int         st;
	const char *sql;
	int         n;
	const char *v[PG_MAXP];
	char        num[PG_MAXP][32];
	char       *owned[PG_MAXP];
	PGresult   *res;
} q;

static const tgi_store_impl postgres_impl;

/* ---- statements and their parameters ---- */

static void q_init(q *x, int st, const char *sql)
{
	memset(x, 0, sizeof *x);
	x->st = st;
	x->sql = sql;
}

static void q_text(q *x, const char *v)
{
	if (x->n < PG_MAXP)
		x->v[x->n] = v;
	x->n++;
}

/* Takes v (malloc'd): freed with the statement. */
static void q_owned(q *x, char *v)
{
	if (x->n < PG_MAXP) {
		x->owned[x->n] = v;
		x->v[x->n] = v;
	} else {
		free(v);
	}
	x->n++;
}

static void q_i64(q *x, int64_t v)
{
	if (x->n < PG_MAXP) {
		snprintf(x->num[x->n], sizeof x->num[x->n], "%lld", (long long)v);
		x->v[x->n] = x->num[x->n];
	}
	x->n++;
}

/* A double as PostgreSQL reads it back exactly; not finite: NULL (as
 * SQLite stores a NaN). */
static void q_f64(q *x, double v)
{
	if (x->n < PG_MAXP) {
		snprintf(x->num[x->n], sizeof x->num[x->n], "%.17g", v);
		x->v[x->n] = isfinite(v) ? x->num[x->n] : NULL;
	}
	x->n++;
}

/* The results only: the statements can be run again. */
static void q_results_free(q *qs, int n)
{
	for (int i = 0; i < n; i++) {
		if (qs[i].res)
			tgi_pq.clear(qs[i].res);
		qs[i].res = NULL;
	}
}

static void q_free(q *qs, int n)
{
	q_results_free(qs, n);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < PG_MAXP; j++) {
			free(qs[i].owned[j]);
			qs[i].owned[j] = NULL;
		}
	}
}

/* Result accessors: a NULL value reads as NULL, 0, or def. */
static const char *val(const PGresult *r, int row, int col)
{
	return tgi_pq.getisnull(r, row, col) ? NULL : tgi_pq.getvalue(r, row, col);
}

static int64_t val_i64(const PGresult *r, int row, int col, int64_t def)
{
	const char *t = val(r, row, col);
	return t ? (int64_t)strtoll(t, NULL, 10) : def;
}

static double val_f64(const PGresult *r, int row, int col)
{
	const char *t = val(r, row, col);
	return t ? strtod(t, NULL) : 0.0;
}

static int val_bool(const PGresult *r, int row, int col)
{
	const char *t = val(r, row, col);
	return t && t[0] == 't';
}

static void val_copy(const PGresult *r, int row, int col, char *out, size_t cap)
{
	const char *t = val(r, row, col);
	tgi_snprintf(out, cap, "%s", t ? t : "");
}

static int rows(const q *x)
{
	return x->res ? tgi_pq.ntuples(x->res) : 0;
}

/* A text[] literal of n strings (NULL elements allowed), for unnest():
 * each element quoted, with backslash and quote escaped.  Caller frees. */
static char *text_array(const char *const *v, size_t n)
{
	size_t len = 3;
	for (size_t i = 0; i < n; i++)
		len += v[i] ? 2 * strlen(v[i]) + 3 : 5;
	char *out = tgi_xmalloc(len), *p = out;
	*p++ = '{';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		if (!v[i]) {
			memcpy(p, "NULL", 4);
			p += 4;
			continue;
		}
		*p++ = '"';
		for (const char *c = v[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return out;
}

static char *int_array(const int64_t *v, size_t n)
{
	char *out = tgi_xmalloc(3 + n * 22), *p = out;
	*p++ = '{';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%lld", i ? "," : "", (long long)v[i]);
	*p++ = '}';
	*p = '\0';
	return out;
}

/* ---- sentences ---- */

/* Copy s into out as one line fit for a sentence: whitespace runs (libpq's
 * messages span lines) become one space, the password is masked, control
 * characters are stripped. */
static void one_line(const char *password, char *out, size_t cap, const char *msg)
{
	char flat[PG_WHY_MAX];
	size_t j = 0;
	int space = 0;
	for (const char *c = msg ? msg : ""; *c && j + 1 < sizeof flat; c++) {
		if (*c == '\n' || *c == '\t' || *c == '\r' || *c == ' ') {
			space = j > 0;
			continue;
		}
		if (space && j + 2 < sizeof flat)
			flat[j++] = ' ';
		space = 0;
		flat[j++] = *c;
	}
	flat[j] = '\0';
	/* libpq does not echo passwords, but a sentence is shown anywhere */
	size_t pl = password ? strlen(password) : 0;
	if (pl >= 4) {
		char *at;
		while ((at = strstr(flat, password)) != NULL) {
			memmove(at + 3, at + pl, strlen(at + pl) + 1);
			memcpy(at, "***", 3);
		}
	}
	tgi_sanitize(out, cap, flat);
}

/* Why the last statement failed, from its result (or the connection). */
static void result_why(pg *s, const PGresult *r)
{
	const char *primary = r ? tgi_pq.resultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *code = r ? tgi_pq.resultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *cons = r ? tgi_pq.resultErrorField(r, PG_DIAG_CONSTRAINT_NAME) : NULL;
	const char *msg = primary ? primary
	                : r && *tgi_pq.resultErrorMessage(r) ? tgi_pq.resultErrorMessage(r)
	                : s->conn ? tgi_pq.errorMessage(s->conn) : "no connection";
	one_line(s->password, s->why, sizeof s->why, msg);
	tgi_snprintf(s->sqlstate, sizeof s->sqlstate, "%s", code ? code : "");
	tgi_snprintf(s->constraint, sizeof s->constraint, "%s", cons ? cons : "");
}

/* Is the failure in r (NULL: libpq gave no result) the database being
 * out of reach: the connection broken, or the server shutting down or
 * killing this backend (SQLSTATE class 08, 57P01..57P03)?  Only for a
 * failure. */
static int conn_error(const pg *s, const PGresult *r)
{
	if (!s->conn || tgi_pq.status(s->conn) != CONNECTION_OK)
		return 1;
	const char *code = r ? tgi_pq.resultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (!code)
		return !r; /* no result at all: the stream broke off */
	return !strncmp(code, "08", 2) || !strcmp(code, "57P01") || !strcmp(code, "57P02") ||
	       !strcmp(code, "57P03");
}

/* The connection is gone: drop it, and wait a backoff before the next
 * reconnect (100 ms after a working connection, doubling after each
 * failed reconnect, up to 5 s).  detail is why, already one line. */
static void conn_lost(pg *s, const char *detail)
{
	tgi_snprintf(s->lost_why, sizeof s->lost_why, "%s",
	             detail && *detail ? detail : "the connection was lost");
	tgi_snprintf(s->why, sizeof s->why, "the ledger database is unreachable (%s)", s->lost_why);
	s->sqlstate[0] = '\0';
	s->constraint[0] = '\0';
	s->transient = 1;
	s->lost = 1;
	if (s->conn)
		tgi_pq.finish(s->conn);
	s->conn = NULL;
	s->prepared = 0;
	s->backoff_ms = !s->backoff_ms ? PG_BACKOFF_MIN_MS
	              : s->backoff_ms >= PG_BACKOFF_MAX_MS / 2 ? PG_BACKOFF_MAX_MS
	                                                       : 2 * s->backoff_ms;
	s->retry_at = tgi_now_ms() + s->backoff_ms;
}

/* The sentence of a call refused while the connection is lost. */
static void unreachable(pg *s, double wait_ms)
{
	tgi_snprintf(s->why, sizeof s->why,
	             "the ledger database is unreachable (%s); retrying in %d ms", s->lost_why,
	             wait_ms > 0 ? (int)ceil(wait_ms) : 0);
	s->sqlstate[0] = '\0';
	s->constraint[0] = '\0';
	s->transient = 1;
}

/* Fail with "<what>: <why>" (the last failure). */
__attribute__((format(printf, 4, 5)))
static int fail(pg *s, char *err, size_t errlen, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tgi_snprintf(err, errlen, "%s: %s", what, s->why[0] ? s->why : "unknown error");
	return -1;
}

/* Every public function starts here: transient says only what the last
 * call met. */
static pg *enter(tgi_store *base)
{
	pg *s = (pg *)base;
	TGI_STORE_HELD(base);
	s->transient = 0;
	return s;
}

/* ---- connecting ---- */

/* Connect to url: connect_timeout, application_name, keepalives, the TCP
 * user timeout (a server host that vanished does not hold a call, and the
 * handle's lock, for the kernel's quarter of an hour) and the client
 * encoding are ours unless the URL says otherwise (it comes after them,
 * expanded).  A reconnect (reconnect_s > 0) gives that connect timeout
 * the last word instead: a gate that lost its server, or a watch waiting
 * out a timeout, must not wait ten seconds a try.  NULL with why (one
 * line) on failure. */
static PGconn *connect_url(const char *url, const char *password, int reconnect_s, char *why,
                           size_t cap)
{
	char rs[16];
	const char *keys[] = {
		"connect_timeout", "application_name", "client_encoding", "keepalives",
		"keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
		"dbname", reconnect_s > 0 ? "connect_timeout" : NULL, NULL,
	};
	snprintf(rs, sizeof rs, "%d", reconnect_s);
	const char *vals[] = { PG_CONNECT_TIMEOUT, "toolgate", "UTF8", "1", "10", "5", "3",
		               PG_TCP_USER_TIMEOUT, url, rs, NULL };
	PGconn *c = tgi_pq.connectdbParams(keys, vals, 1);
	if (!c) {
		tgi_snprintf(why, cap, "out of memory");
		return NULL;
	}
	if (tgi_pq.status(c) != CONNECTION_OK) {
		one_line(password, why, cap, tgi_pq.errorMessage(c));
		tgi_pq.finish(c);
		return NULL;
	}
	return c;
}

static void no_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* A connection made without blocking past deadline (monotonic ms), for
 * the close's last attempt: libpq's connect timeout is per host and at
 * least two seconds, this is the whole.  NULL when it is not made in time. */
static PGconn *connect_by(const char *url, double deadline)
{
	const char *keys[] = { "application_name", "client_encoding", "tcp_user_timeout", "dbname",
		               NULL };
	const char *vals[] = { "toolgate", "UTF8", "2000", url, NULL };
	PGconn *c = tgi_pq.connectStartParams(keys, vals, 1);
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (c && tgi_pq.status(c) != CONNECTION_BAD && st != PGRES_POLLING_FAILED) {
		if (st == PGRES_POLLING_OK) {
			tgi_pq.setNoticeProcessor(c, no_notices, NULL);
			return c;
		}
		int left = (int)ceil(deadline - tgi_now_ms());
		struct pollfd p = { .fd = tgi_pq.socket(c),
			            .events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
		if (left <= 0 || p.fd < 0)
			break;
		int rc = poll(&p, 1, left);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0)
			st = tgi_pq.connectPoll(c);
	}
	if (c)
		tgi_pq.finish(c);
	return NULL;
}

/* Run one statement on c without blocking past deadline.  0, or -1 when
 * it failed or the time ran out (c is then not fit for more). */
static int exec_by(PGconn *c, const char *sql, const q *x, double deadline)
{
	int ok = 1;
	if (!tgi_pq.sendQueryParams(c, sql, x->n, NULL, x->v, NULL, NULL, 0))
		return -1;
	for (;;) {
		if (!tgi_pq.consumeInput(c))
			return -1;
		while (!tgi_pq.isBusy(c)) {
			PGresult *r = tgi_pq.getResult(c);
			if (!r)
				return ok ? 0 : -1;
			ExecStatusType st = tgi_pq.resultStatus(r);
			ok &= st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
			tgi_pq.clear(r);
		}
		int left = (int)ceil(deadline - tgi_now_ms());
		struct pollfd p = { .fd = tgi_pq.socket(c), .events = POLLIN };
		if (left <= 0 || p.fd < 0)
			return -1;
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -1;
	}
}

/* "database 'db' at host:port" from what the connection used (or, before
 * one, the URL said). */
static void describe_target(pg *s, PGconn *c, const char *host, const char *port, const char *db)
{
	char h[128], p[16], d[128];
	const char *ch = c ? tgi_pq.host(c) : NULL, *cp = c ? tgi_pq.port(c) : NULL;
	const char *cd = c ? tgi_pq.db(c) : NULL;
	tgi_quoted(h, sizeof h, ch && *ch ? ch : host && *host ? host : "localhost");
	tgi_quoted(p, sizeof p, cp && *cp ? cp : port && *port ? port : "5432");
	tgi_quoted(d, sizeof d, cd && *cd ? cd : db && *db ? db : "(default)");
	tgi_snprintf(s->shown, sizeof s->shown, "database '%s' at %s:%s", d, h, p);
}

/* The session every connection of a handle has: synchronous_commit on
 * (a claim or a record is on disk when it is reported), no notices, and
 * our backend's start time for claim owners. */
static int session_setup(pg *s)
{
	tgi_pq.setNoticeProcessor(s->conn, no_notices, NULL);
	PGresult *r = tgi_pq.exec(s->conn,
	                          "SET synchronous_commit = on; SET client_min_messages = warning;"
	                          " SELECT " PG_START_US("backend_start")
	                          " FROM pg_stat_get_activity(pg_backend_pid())");
	int ok = r && tgi_pq.resultStatus(r) == PGRES_TUPLES_OK && tgi_pq.ntuples(r) == 1;
	if (ok)
		s->backend_start = val_i64(r, 0, 0, 0);
	else
		result_why(s, r);
	if (r)
		tgi_pq.clear(r);
	return ok ? 0 : -1;
}

static int run_raw(pg *s, q *qs, int n);

static const char *const held_how[] = {
	[HELD_RUNNING] = "rebind", [HELD_DELETE] = "delete", [HELD_UNKNOWN] = "unknown",
};

/* The statement that settles the held claims (only the finished ones
 * unless running), with this process and backend as the owner a running
 * one moves to.  Returns how many claims it names. */
static size_t held_q(pg *s, int running, q *x)
{
	const char *scopes[PG_HELD_MAX], *ops[PG_HELD_MAX], *hows[PG_HELD_MAX];
	size_t n = 0;
	for (size_t i = 0; i < s->nheld; i++) {
		if (s->held[i].state == HELD_RUNNING && !running)
			continue;
		scopes[n] = s->held[i].scope;
		ops[n] = s->held[i].op_id;
		hows[n++] = held_how[s->held[i].state];
	}
	q_init(x, ST_IDEM_SETTLE_HELD, NULL);
	q_owned(x, text_array(scopes, n));
	q_owned(x, text_array(ops, n));
	q_owned(x, text_array(hows, n));
	q_i64(x, s->backend_start);
	q_i64(x, (int64_t)getpid());
	tgi_self_start(&s->me);
	q_text(x, s->me.host);
	return n;
}

/* Forget the held claims a settle statement took care of (all but the
 * running ones). */
static void held_forget_settled(pg *s)
{
	size_t keep = 0;
	for (size_t i = 0; i < s->nheld; i++) {
		if (s->held[i].state == HELD_RUNNING)
			s->held[keep++] = s->held[i];
		else
			free(s->held[i].scope);
	}
	s->nheld = keep;
}

/* On a (new) connection, in one statement: running claims now belong to
 * its backend, finished ones are settled (see struct held).  Best effort:
 * only the connection lost again is a failure (-1); a settle that failed
 * otherwise is tried again by the next connection or the close. */
static int settle_held(pg *s)
{
	if (!s->nheld)
		return 0;
	q x;
	int sent = s->sent;   /* the caller's statements were, or were not, sent */
	held_q(s, 1, &x);
	int rc = run_raw(s, &x, 1);
	q_free(&x, 1);
	s->sent = sent;
	if (rc == 0)
		held_forget_settled(s);
	return rc < 0 && s->lost ? -1 : 0;
}

/* Is the connection, idle since the last call, still there?  A server
 * restarted, this backend killed, an idle timeout: the server said why
 * (when it could) and closed it, so the socket turned readable.  Read what
 * came; when something did, give the close that follows it a moment.
 * 0: it is there (or nothing says otherwise); -1 with why: it is gone. */
static int conn_idle_ok(pg *s, char *why, size_t cap)
{
	int wait_ms = 0;
	for (int round = 0; round < 2; round++) {
		struct pollfd p = { .fd = tgi_pq.socket(s->conn), .events = POLLIN };
		int rc = p.fd < 0 ? 1 : poll(&p, 1, wait_ms);
		if (rc <= 0)
			return 0;   /* nothing came (or a signal: the call finds out) */
		if (p.fd < 0 || !tgi_pq.consumeInput(s->conn) ||
		    tgi_pq.status(s->conn) != CONNECTION_OK) {
			one_line(s->password, why, cap, tgi_pq.errorMessage(s->conn));
			return -1;
		}
		wait_ms = PG_IDLE_CLOSE_MS;
	}
	return 0;
}

/*
 * Before any statement: a connection that died while idle is made again
 * at once (no call has failed on it); a lost one once its backoff has
 * passed; until then, and when that fails, -1 (transient).  Inside an
 * explicit transaction nothing is made again: the transaction went with
 * the connection, and the caller aborts it.
 */
static int conn_ready(pg *s)
{
	char why[PG_WHY_MAX];
	if (!s->lost) {
		if (s->tx || conn_idle_ok(s, why, sizeof why) == 0)
			return 0;
		conn_lost(s, why);
		s->retry_at = 0;
	}
	if (s->tx) {
		s->transient = 1;   /* s->why says it was lost */
		return -1;
	}
	double now = tgi_now_ms();
	if (now < s->retry_at) {
		unreachable(s, s->retry_at - now);
		return -1;
	}
	s->conn = connect_url(s->url, s->password, s->reconnect_s, why, sizeof why);
	if (s->conn) {
		s->lost = 0;
		s->prepared = 0;
		if (session_setup(s) == 0 && settle_held(s) == 0) {
			s->backoff_ms = 0;
			s->transient = 0;
			return 0;
		}
		if (!s->lost)      /* the session could not be set up */
			conn_lost(s, s->why);
	} else {
		conn_lost(s, why);
	}
	unreachable(s, s->backoff_ms);
	return -1;
}

/* ---- one round trip ---- */

static const char *st_name(int st, char buf[16])
{
	snprintf(buf, 16, "tg%d", st);
	return buf;
}

/* Send the statements (preparing those not yet prepared on this
 * connection, once each) and a Sync.  -1 when the connection broke while
 * sending. */
static int send_all(pg *s, q *qs, int n, int *prep)
{
	char name[16];
	uint64_t parsing = 0; /* Parse sent in this trip */
	for (int i = 0; i < n; i++) {
		q *x = &qs[i];
		int ok;
		prep[i] = 0;
		if (x->st == ST_ADHOC) {
			ok = tgi_pq.sendQueryParams(s->conn, x->sql, x->n, NULL, x->v, NULL, NULL, 0);
		} else {
			uint64_t bit = UINT64_C(1) << x->st;
			if (!((s->prepared | parsing) & bit)) {
				if (!tgi_pq.sendPrepare(s->conn, st_name(x->st, name), st_def[x->st].sql,
				                        st_def[x->st].nparams, NULL))
					return -1;
				parsing |= bit;
				prep[i] = 1;
			}
			ok = tgi_pq.sendQueryPrepared(s->conn, st_name(x->st, name), x->n, x->v, NULL,
			                              NULL, 0);
		}
		if (!ok)
			return -1;
	}
	return tgi_pq.pipelineSync(s->conn) ? 0 : -1;
}

/* Read the results up to the Sync: each statement's first result into its
 * q (a Parse's result checked on the way), a NULL after each.  The first
 * failure is the one remembered.  -1 when the stream broke off. */
static int read_all(pg *s, q *qs, int n, const int *prep, PGresult **first_bad)
{
	int item = 0, part = prep[0] ? 0 : 1; /* part 0: the Parse of item, 1: its execution */
	int guard = 4 * n + 8;
	for (;;) {
		PGresult *r = tgi_pq.getResult(s->conn);
		if (!r) {
			if (tgi_pq.status(s->conn) != CONNECTION_OK || --guard < 0)
				return -1;
			if (part == 0) {
				part = 1;
			} else if (++item < n) {
				part = prep[item] ? 0 : 1;
			}
			continue;
		}
		ExecStatusType st = tgi_pq.resultStatus(r);
		if (st == PGRES_PIPELINE_SYNC) {
			tgi_pq.clear(r);
			return 0;
		}
		int bad = st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK;
		if (bad && !*first_bad && st != PGRES_PIPELINE_ABORTED) {
			*first_bad = r;
			r = NULL;
		} else if (item < n && part == 1 && !qs[item].res) {
			qs[item].res = r;
			r = NULL;
		} else if (item < n && part == 0 && !bad) {
			s->prepared |= UINT64_C(1) << qs[item].st;
		}
		if (r)
			tgi_pq.clear(r);
	}
}

/*
 * Run qs (n of them) in one round trip, as one implicit transaction (or
 * inside the caller's BEGIN).  0: every statement succeeded (each q->res
 * holds its result; q_free clears them).  -1: s->why says why (the
 * connection lost: transient, and the next call reconnects).  Without the
 * reconnect step: settle_held uses it while reconnecting.
 */
static int run_raw(pg *s, q *qs, int n)
{
	int prep[PG_MAXQ];
	PGresult *bad = NULL;

	TGI_STORE_HELD(&s->base);   /* one round trip at a time on the connection */

	if (n > PG_MAXQ) {
		tgi_snprintf(s->why, sizeof s->why, "too many statements in one round trip");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (qs[i].n > PG_MAXP || (qs[i].st != ST_ADHOC && qs[i].n != st_def[qs[i].st].nparams)) {
			tgi_snprintf(s->why, sizeof s->why, "a statement has the wrong number of parameters");
			return -1;
		}
	}
	if (!tgi_pq.enterPipelineMode(s->conn)) {
		result_why(s, NULL);
		conn_lost(s, s->why);
		return -1;
	}
	s->sent = 1;
	int rc = send_all(s, qs, n, prep);
	if (rc == 0)
		rc = read_all(s, qs, n, prep, &bad);
	if (rc < 0 || (bad && conn_error(s, bad))) {
		result_why(s, bad);
		if (bad)
			tgi_pq.clear(bad);
		conn_lost(s, s->why);
		return -1;
	}
	tgi_pq.exitPipelineMode(s->conn);
	if (bad) {
		result_why(s, bad);
		tgi_pq.clear(bad);
		/* an explicit transaction the failure left open is rolled back */
		if (tgi_pq.transactionStatus(s->conn) != PQTRANS_IDLE) {
			PGresult *r = tgi_pq.exec(s->conn, "ROLLBACK");
			if (r)
				tgi_pq.clear(r);
		}
		s->tx = 0;
		return -1;
	}
	s->why[0] = '\0';
	return 0;
}

static int run(pg *s, q *qs, int n)
{
	s->sent = 0;
	if (conn_ready(s) < 0)
		return -1;
	return run_raw(s, qs, n);
}

/* One ad hoc statement without parameters (transaction control). */
static int run_sql(pg *s, const char *sql)
{
	q x;
	q_init(&x, ST_ADHOC, sql);
	int rc = run(s, &x, 1);
	q_free(&x, 1);
	return rc;
}

/* Open an explicit transaction (sql: BEGIN ...): until tx_commit or
 * tx_abort, a lost connection is not made again under it. */
static int tx_begin(pg *s, const char *sql)
{
	int rc = run_sql(s, sql);
	s->tx = rc == 0;
	return rc;
}

static int tx_commit(pg *s)
{
	int rc = run_sql(s, "COMMIT");
	s->tx = 0;
	return rc;
}

/* Roll back the explicit transaction a failure left open (if the
 * connection is still there). */
static void tx_abort(pg *s)
{
	s->tx = 0;
	if (s->conn && !s->lost && tgi_pq.transactionStatus(s->conn) != PQTRANS_IDLE) {
		char why[PG_WHY_MAX];
		tgi_snprintf(why, sizeof why, "%s", s->why); /* the failure says why, not this */
		PGresult *r = tgi_pq.exec(s->conn, "ROLLBACK");
		if (r)
			tgi_pq.clear(r);
		tgi_snprintf(s->why, sizeof s->why, "%s", why);
	}
}

/* ---- held claims ---- */

/* Remember (or change) what becomes of the claim of op_id on scope. */
static void held_add(pg *s, const char *scope, const char *op_id, enum held_state state)
{
	for (size_t i = 0; i < s->nheld; i++) {
		if (!strcmp(s->held[i].op_id, op_id) && !strcmp(s->held[i].scope, scope)) {
			s->held[i].state = state;
			return;
		}
	}
	if (s->nheld == PG_HELD_MAX) {
		/* the oldest running claim only misses a move to a new backend
		 * (and turns unknown to others sooner); a finished one, to be
		 * settled, goes only when all are */
		size_t i = 0;
		while (i < s->nheld && s->held[i].state != HELD_RUNNING)
			i++;
		if (i == s->nheld)
			i = 0;
		free(s->held[i].scope);
		memmove(&s->held[i], &s->held[i + 1], (s->nheld - i - 1) * sizeof *s->held);
		s->nheld--;
	}
	struct held *h = &s->held[s->nheld++];
	h->scope = tgi_strdup(scope);
	tgi_snprintf(h->op_id, sizeof h->op_id, "%s", op_id);
	h->state = state;
}

/* Any claim held that is not running (to settle before the handle goes)? */
static int held_unsettled(const pg *s)
{
	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].state != HELD_RUNNING)
			return 1;
	return 0;
}

static void held_drop(pg *s, const char *scope, const char *op_id)
{
	for (size_t i = 0; i < s->nheld; i++) {
		if (!strcmp(s->held[i].op_id, op_id) && !strcmp(s->held[i].scope, scope)) {
			free(s->held[i].scope);
			memmove(&s->held[i], &s->held[i + 1], (s->nheld - i - 1) * sizeof *s->held);
			s->nheld--;
			return;
		}
	}
}

/* ---- schema ---- */

static int schema_ahead(pg *s, int v, char *err, size_t errlen)
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
	q_init(&x, ST_ADHOC, "SELECT coalesce(max(version), 0) FROM toolgate_schema");
	int rc = run(s, &x, 1);
	if (rc == 0)
		*version = (int)val_i64(x.res, 0, 0, 0);
	else if (!strcmp(s->sqlstate, "42P01")) /* undefined_table: nothing here yet */
		*version = 0, rc = 0;
	q_free(&x, 1);
	return rc;
}

static int pg_schema_version(tgi_store *base, int *version, char *err, size_t errlen)
{
	pg *s = enter(base);
	*version = 0;
	if (read_version(s, version) < 0)
		return fail(s, err, errlen, "cannot read the ledger schema");
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
		result_why(s, r);
		if (conn_error(s, r)) {
			if (r)
				tgi_pq.clear(r);
			conn_lost(s, s->why);
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

	if (conn_ready(s) < 0)
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
			now = val_i64(r, 0, 0, 0);
		else
			rc = -1, result_why(s, r);
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
		tx_abort(s);
	return rc;
}

/* Migrations v + 1 .. to, v being the version just read. */
static int migrate_from(pg *s, int v, int to, int dry_run, void (*fn)(void *, int), void *arg,
                        char *err, size_t errlen)
{
	if (v > TGI_STORE_SCHEMA_VERSION || v < 0)
		return schema_ahead(s, v, err, errlen);
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
			return fail(s, err, errlen, "cannot apply migration %d to the ledger", n);
		}
		if (ahead)
			return schema_ahead(s, TGI_STORE_SCHEMA_VERSION + 1, err, errlen);
	}
	return 0;
}

static int pg_migrate(tgi_store *base, int to, int dry_run, void (*fn)(void *, int), void *arg,
                      char *err, size_t errlen)
{
	pg *s = enter(base);
	int v = 0;
	if (read_version(s, &v) < 0)
		return fail(s, err, errlen, "cannot read the ledger schema");
	return migrate_from(s, v, to, dry_run, fn, arg, err, errlen);
}

/* ---- open and close ---- */

/* Claims this handle could not settle (a claim whose commit reply was
 * lost, a record that failed with the connection): one attempt at them
 * before the handle goes, on its connection or a new one, bounded by
 * PG_CLOSE_WAIT_MS whatever the network does.  Left as they are, they
 * would turn unknown once this process is gone (a refused call's claim
 * too, though nothing ran under it), and only after their lease on
 * another host when the server restarted meanwhile. */
static void settle_at_close(pg *s)
{
	if (!held_unsettled(s))
		return;
	double deadline = tgi_now_ms() + PG_CLOSE_WAIT_MS;
	PGconn *own = NULL, *c = s->lost ? NULL : s->conn;
	if (!c)
		c = own = connect_by(s->url, deadline);
	if (c) {
		q x;
		held_q(s, 0, &x);
		exec_by(c, st_def[ST_IDEM_SETTLE_HELD].sql, &x, deadline);
		q_free(&x, 1);
	}
	if (own)
		tgi_pq.finish(own);
}

static void pg_close(tgi_store *base)
{
	pg *s = (pg *)base;
	settle_at_close(s);
	if (s->conn)
		tgi_pq.finish(s->conn);
	for (size_t i = 0; i < s->nheld; i++)
		free(s->held[i].scope);
	if (s->url) {
		explicit_bzero(s->url, strlen(s->url));
		free(s->url);
	}
	explicit_bzero(s->password, sizeof s->password);
	tgi_store_fini(&s->base);
	free(s);
}

/* What the URL says, for sentences before a connection exists, and its
 * password (to keep it out of them).  -1 with err when it is not a URL
 * libpq can read; its message is not shown (it may quote the password). */
static int parse_url(pg *s, const char *url, char *host, char *port, char *db, size_t cap,
                     char *err, size_t errlen)
{
	char *msg = NULL;
	PQconninfoOption *opts = tgi_pq.conninfoParse(url, &msg);
	if (!opts) {
		if (msg)
			tgi_pq.freemem(msg);
		tgi_snprintf(err, errlen,
		             "the ledger URL is not a PostgreSQL connection URL libpq can read (postgresql://user@host:port/database?options)");
		return -1;
	}
	if (msg)
		tgi_pq.freemem(msg);
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "password"))
			tgi_snprintf(s->password, sizeof s->password, "%s", o->val);
		else if (!strcmp(o->keyword, "host"))
			tgi_snprintf(host, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "port"))
			tgi_snprintf(port, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "dbname"))
			tgi_snprintf(db, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "connect_timeout") && atoi(o->val) > 0 &&
		         atoi(o->val) < s->reconnect_s)
			s->reconnect_s = atoi(o->val);
	}
	tgi_pq.conninfoFree(opts);
	return 0;
}

/* At open: bring the schema up to date (unless told not to), or refuse a
 * newer one. */
static int open_schema(pg *s, char *err, size_t errlen)
{
	int v;
	if (pg_schema_version(&s->base, &v, err, errlen) < 0)
		return -1;
	if (v < 0 || v > TGI_STORE_SCHEMA_VERSION)
		return schema_ahead(s, v, err, errlen);
	if (v == TGI_STORE_SCHEMA_VERSION || s->no_migrate)
		return 0;
	return migrate_from(s, v, TGI_STORE_SCHEMA_VERSION, 0, NULL, NULL, err, errlen);
}

int tgi_pg_open(const char *url, int flags, tgi_store **out, char *err, size_t errlen)
{
	char host[256] = "", port[32] = "", db[256] = "", why[PG_WHY_MAX];

	*out = NULL;
	if (tgi_pq_load(err, errlen) < 0)
		return -1;
	pg *s = tgi_xcalloc(1, sizeof *s);
	tgi_store_init(&s->base, &postgres_impl);
	s->no_migrate = flags & TGI_STORE_NO_MIGRATE ? 1 : 0;
	s->reconnect_s = PG_RECONNECT_S;
	tgi_self_init(&s->me);
	if (parse_url(s, url, host, port, db, sizeof host, err, errlen) < 0) {
		pg_close(&s->base);
		return -1;
	}
	s->url = tgi_strdup(url);
	describe_target(s, NULL, host, port, db);
	s->conn = connect_url(url, s->password, 0, why, sizeof why);
	if (!s->conn) {
		tgi_snprintf(err, errlen, "cannot connect to the ledger %s: %s", s->shown, why);
		pg_close(&s->base);
		return -1;
	}
	describe_target(s, s->conn, host, port, db);
	if (session_setup(s) < 0) {
		tgi_snprintf(err, errlen, "cannot set up the connection to the ledger %s: %s", s->shown,
		             s->why);
		pg_close(&s->base);
		return -1;
	}
	if (open_schema(s, err, errlen) < 0) {
		pg_close(&s->base);
		return -1;
	}
	s->transient = 0;
	*out = &s->base;
	return 0;
}

static int pg_transient(const tgi_store *base)
{
	return ((const pg *)base)->transient;
}

/* ---- the ledger's identity (identity.c) ---- */

static const char *pg_shown(const tgi_store *base)
{
	return ((const pg *)base)->shown;
}

/* The database's name, not a host: a fleet's gates reach one database
 * under several host names, and the name tells two ledgers of one server
 * apart. */
static int pg_ident_bound(tgi_store *base, char *out, size_t cap, char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	q_init(&x, ST_ADHOC, "SELECT current_database()");
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1) {
		char db[256];
		val_copy(x.res, 0, 0, db, sizeof db);
		tgi_snprintf(out, cap, "postgresql database %s", db);
	}
	q_free(&x, 1);
	return rc < 0 ? fail(s, err, errlen, "cannot read the ledger's database name") : 0;
}

static int pg_ident_get(tgi_store *base, tgi_ledger_ident *id, int *found, char *err,
                        size_t errlen)
{
	pg *s = enter(base);
	q x;
	memset(id, 0, sizeof *id);
	*found = 0;
	q_init(&x, ST_ADHOC, "SELECT id, bound, created_ms, mac FROM ledger WHERE one = 1");
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1) {
		val_copy(x.res, 0, 0, id->id, sizeof id->id);
		val_copy(x.res, 0, 1, id->bound, sizeof id->bound);
		id->created_ms = val_i64(x.res, 0, 2, 0);
		val_copy(x.res, 0, 3, id->mac, sizeof id->mac);
		*found = 1;
	}
	q_free(&x, 1);
	return rc < 0 ? fail(s, err, errlen, "cannot read the ledger's identity") : 0;
}

/* One statement, so one transaction: the counts, and the identity written
 * when adopting or when there is none and no records (two gates making it
 * at once: the second's insert does nothing, and both read the first's). */
static int pg_ident_put(tgi_store *base, const tgi_ledger_ident *id, int adopt, int *made,
                        tgi_ledger_rows *out, char *err, size_t errlen)
{
	static const char sql[] =
		"WITH n AS (SELECT (SELECT count(*) FROM ops) AS o, (SELECT count(*) FROM events) AS e,"
		" (SELECT count(*) FROM approvals) AS a, (SELECT count(*) FROM idem) AS i,"
		" (SELECT count(*) FROM pins) AS p, (SELECT count(*) FROM rate_buckets) AS b,"
		" (SELECT count(*) FROM ledger) AS l),"
		" ins AS (INSERT INTO ledger(one, id, bound, created_ms, mac)"
		" SELECT 1, $1, $2, $3::bigint, $4 FROM n"
		" WHERE $5::boolean OR (n.l = 0 AND n.o + n.e + n.a + n.i + n.p + n.b = 0)"
		" ON CONFLICT (one) DO UPDATE SET id = excluded.id, bound = excluded.bound,"
		" created_ms = excluded.created_ms, mac = excluded.mac WHERE $5::boolean"
		" RETURNING 1)"
		" SELECT o, e, a, i, p, b, l, (SELECT count(*) FROM ins) FROM n";
	pg *s = enter(base);
	q x;
	*made = 0;
	q_init(&x, ST_ADHOC, sql);
	q_text(&x, id->id);
	q_text(&x, id->bound);
	q_i64(&x, id->created_ms);
	q_text(&x, id->mac);
	q_text(&x, adopt ? "true" : "false");
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1) {
		int64_t n[8];
		for (int i = 0; i < 8; i++)
			n[i] = val_i64(x.res, 0, i, 0);
		if (out)
			*out = (tgi_ledger_rows){ n[0], n[1], n[2], n[3], n[4], n[5] };
		/* not inserted: another gate's identity is there (made since this
		 * statement's snapshot, when it saw none and no records), or records */
		int64_t records = n[0] + n[1] + n[2] + n[3] + n[4] + n[5];
		*made = n[7] ? 1 : n[6] || !records ? 0 : -1;
	}
	q_free(&x, 1);
	return rc < 0 ? fail(s, err, errlen, "cannot write the ledger's identity") : 0;
}

/* ---- ops + events ---- */

/* The statement that inserts n events of op_id (NULL: of no op) with seqs
 * from the counter, and notifies followers at commit. */
static void events_q(q *x, const char *op_id, const tgi_event *ev, size_t n, char **data)
{
	const char **types = tgi_xcalloc(n, sizeof *types);
	const char **stages = tgi_xcalloc(n, sizeof *stages);
	int64_t *ts = tgi_xcalloc(n, sizeof *ts);
	for (size_t i = 0; i < n; i++) {
		types[i] = ev[i].type;
		stages[i] = ev[i].stage;
		ts[i] = ev[i].ts_ms;
	}
	q_init(x, ST_EVENTS_INSERT, NULL);
	q_i64(x, (int64_t)n);
	q_text(x, op_id);
	q_owned(x, int_array(ts, n));
	q_owned(x, text_array(types, n));
	q_owned(x, text_array(stages, n));
	q_owned(x, text_array((const char *const *)data, n));
	free(types);
	free(stages);
	free(ts);
}

/* Each event's data as JSON text (NULL for none); -1 when one cannot be
 * encoded. */
static int events_data(const tgi_event *ev, size_t n, char **data)
{
	for (size_t i = 0; i < n; i++) {
		data[i] = NULL;
		if (ev[i].data && !(data[i] = json_dumps(ev[i].data, JSON_COMPACT | JSON_ENCODE_ANY))) {
			for (size_t j = 0; j < i; j++)
				free(data[j]);
			return -1;
		}
	}
	return 0;
}

/* binding and envelope: a `done` row's MAC covers them (rowmac.c). */
static void settle_q(pg *s, q *x, const char *scope, const char *op_id, tgi_idem_settle how,
                     const char *binding, const char *envelope)
{
	q_init(x, how == TGI_SETTLE_DONE      ? ST_IDEM_DONE
	        : how == TGI_SETTLE_RELEASE ? ST_IDEM_RELEASE
	                                    : ST_IDEM_UNKNOWN, NULL);
	q_text(x, scope);
	q_text(x, op_id);
	if (how == TGI_SETTLE_DONE) {
		char mac[65];
		tgi_mac_idem(&s->base, scope, op_id, binding, "done", envelope, mac);
		q_text(x, binding && *binding ? binding : NULL);
		q_owned(x, *mac ? tgi_strdup(mac) : NULL);
	}
}

/* Did the last failure refuse an ops row already there? */
static int op_exists(const pg *s)
{
	return !s->transient && !strcmp(s->sqlstate, "23505") && !strcmp(s->constraint, "ops_pkey");
}

/* A record that committed though its reply was lost: the seqs its events
 * were given, read back (its events are the op's first). */
static int read_seqs(pg *s, const char *op_id, tgi_event *ev, size_t nev)
{
	if (!nev)
		return 0;
	q x;
	q_init(&x, ST_EVENT_SEQS, NULL);
	q_text(&x, op_id);
	q_i64(&x, (int64_t)nev);
	int rc = run(s, &x, 1);
	for (int i = 0; rc == 0 && i < rows(&x) && (size_t)i < nev; i++)
		ev[i].seq = val_i64(x.res, i, 0, 0);
	q_free(&x, 1);
	return rc;
}

/* The record of a call that held a claim failed: the call is over all the
 * same (its tool ran, or was never to), so its claim must not look like a
 * live one (struct held).  It is settled now when the connection is there
 * (the record failed for another reason), else by the next connection or
 * the close.  What the record's failure said is kept. */
static void record_failed(pg *s, const char *scope, const char *op_id, tgi_idem_settle how)
{
	held_add(s, scope, op_id, how == TGI_SETTLE_RELEASE ? HELD_DELETE : HELD_UNKNOWN);
	if (s->lost)
		return;
	char why[PG_WHY_MAX], code[6], cons[64];
	int transient = s->transient;
	memcpy(why, s->why, sizeof why);
	memcpy(code, s->sqlstate, sizeof code);
	memcpy(cons, s->constraint, sizeof cons);
	settle_held(s);
	memcpy(s->why, why, sizeof why);
	memcpy(s->sqlstate, code, sizeof code);
	memcpy(s->constraint, cons, sizeof cons);
	s->transient = transient;
}

/*
 * One round trip, one transaction: the ops row, the session, the
 * idempotency row, and last the events with their seqs (and the
 * NOTIFY), so that the counter's row lock is held only through the commit.
 * Every record takes its row locks in that order: no two deadlock.
 */
static int pg_record(tgi_store *base, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle how, char *err, size_t errlen)
{
	pg *s = enter(base);
	q qs[4];
	int n = 0;

	for (size_t i = 0; ev && i < nev; i++)
		ev[i].seq = 0;
	if (tgi_check_record(op, ev, nev, idem_scope, how, err, errlen) < 0)
		return -1;
	const char *scope = idem_scope && how != TGI_SETTLE_NONE ? idem_scope : NULL;
	char **data = nev ? tgi_xcalloc(nev, sizeof *data) : NULL;
	if (nev && events_data(ev, nev, data) < 0) {
		free(data);
		if (scope)
			record_failed(s, scope, op->op_id, how);
		tgi_snprintf(err, errlen, "cannot encode the events of op '%s'", op->op_id);
		return -1;
	}

	q *x = &qs[n++];
	q_init(x, ST_OP_INSERT, NULL);
	q_text(x, op->op_id);
	q_text(x, op->call_id);
	q_text(x, op->session);
	q_text(x, op->tool);
	q_text(x, op->principal);
	q_text(x, op->status);
	q_text(x, op->error_kind);
	q_text(x, op->idem_scope);
	q_text(x, op->args_redacted);
	q_text(x, op->args_sha256);
	q_text(x, op->envelope);
	q_i64(x, op->started_ms);
	q_f64(x, op->duration_ms);
	q_text(x, op->loop);
	if (op->session) {
		x = &qs[n++];
		q_init(x, ST_SESSION_UPSERT, NULL);
		q_text(x, op->session);
		q_i64(x, op->started_ms);
		q_text(x, op->manifest);
	}
	if (scope)
		settle_q(s, &qs[n++], scope, op->op_id, how, op->idem_binding, op->envelope);
	if (nev)
		events_q(&qs[n++], op->op_id, ev, nev, data);

	int rc = run(s, qs, n), landed = 0;
	if (rc < 0 && s->lost && s->sent) {
		/* the connection broke under it: once more, on a fresh one now;
		 * the op_id is the record's key, so when the first one committed
		 * after all this one is refused on it, and that is success */
		q_results_free(qs, n);
		s->retry_at = 0;
		rc = run(s, qs, n);
		landed = rc < 0 && op_exists(s);
	}
	if (rc == 0 && nev) {
		int64_t last = val_i64(qs[n - 1].res, 0, 0, 0);
		for (size_t i = 0; i < nev; i++)
			ev[i].seq = last - (int64_t)(nev - 1 - i);
	}
	q_free(qs, n);
	for (size_t i = 0; i < nev; i++)
		free(data[i]);
	free(data);
	if (landed)
		rc = read_seqs(s, op->op_id, ev, nev);
	if (rc == 0 && scope)
		held_drop(s, scope, op->op_id);
	if (rc < 0 && scope)
		record_failed(s, scope, op->op_id, how);
	if (rc < 0 && op_exists(s)) {
		tgi_snprintf(err, errlen, "op '%s' is already in the ledger", op->op_id);
		return -1;
	}
	if (rc < 0)
		return fail(s, err, errlen, "cannot record op '%s'", op->op_id);
	return 0;
}

/* ---- what middleware keeps across processes and restarts ---- */

static int pg_session_manifest(tgi_store *base, const char *session, char out[65], char *err,
                               size_t errlen)
{
	pg *s = enter(base);
	q x;
	out[0] = '\0';
	if (!session)
		return 0;
	q_init(&x, ST_SESSION_MANIFEST, NULL);
	q_text(&x, session);
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x))
		val_copy(x.res, 0, 0, out, 65);
	q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return fail(s, err, errlen, "cannot read the manifest of session '%s'",
		            tgi_quoted(qs, sizeof qs, session));
	}
	return 0;
}

static int pg_loop_window(tgi_store *base, const char *session, size_t limit, tgi_strv *out,
                          char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	if (tgi_check_loop_window(session, err, errlen) < 0)
		return -1;
	if (!limit)
		return 0;
	q_init(&x, ST_LOOP_SESSION, NULL);
	q_text(&x, session);
	q_i64(&x, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	int rc = run(s, &x, 1);
	for (int i = 0; rc == 0 && i < rows(&x); i++) {
		const char *t = val(x.res, i, 0);
		if (t)
			tgi_strv_push(out, tgi_strdup(t));
	}
	q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return fail(s, err, errlen, "cannot read the loop window of session '%s'",
		            tgi_quoted(qs, sizeof qs, session));
	}
	return 0;
}

static int pg_bucket_get(tgi_store *base, const char *principal, const char *tool, double *tokens,
                         int64_t *updated_ms, int *found, char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	*found = 0;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	q_init(&x, ST_BUCKET_GET, NULL);
	q_text(&x, principal);
	q_text(&x, tool);
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x)) {
		char mac[65];
		*tokens = val_f64(x.res, 0, 0);
		*updated_ms = val_i64(x.res, 0, 1, 0);
		val_copy(x.res, 0, 2, mac, sizeof mac);
		/* one that does not verify is as a fresh bucket (as if deleted) */
		*found = tgi_mac_bucket_ok(&s->base, principal, tool, *tokens, *updated_ms, mac);
	}
	q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return fail(s, err, errlen, "cannot read the rate-limit bucket of '%s'",
		            tgi_quoted(qs, sizeof qs, tool));
	}
	return 0;
}

/* The take of tgi_bucket_step on the server's clock, in one transaction
 * that holds the bucket's row (made empty and unsigned when there is none:
 * a new bucket, full), with its MAC checked here and written anew.
 * Seconds until the next whole token, to the millisecond above, when there
 * is none.  (store.c checked rate and burst.) */
static int pg_bucket_take(tgi_store *base, const char *principal, const char *tool, double rate,
                          double burst, int *ok, double *left, double *retry_after_s, char *err,
                          size_t errlen)
{
	pg *s = enter(base);
	q x;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	int rc = tx_begin(s, "BEGIN");
	if (rc == 0) {
		q_init(&x, ST_BUCKET_LOCK, NULL);
		q_text(&x, principal);
		q_text(&x, tool);
		rc = run(s, &x, 1);
		if (rc == 0 && rows(&x) != 1) {
			tgi_snprintf(s->why, sizeof s->why, "the bucket was not returned");
			rc = -1;
		}
		double stored = 0;
		int64_t at = 0, now = 0;
		char mac[65] = "";
		if (rc == 0) {
			stored = val_f64(x.res, 0, 0);
			at = val_i64(x.res, 0, 1, 0);
			val_copy(x.res, 0, 2, mac, sizeof mac);
			now = val_i64(x.res, 0, 3, 0);
		}
		q_free(&x, 1);
		if (rc == 0) {
			int found = tgi_mac_bucket_ok(&s->base, principal, tool, stored, at, mac);
			if (tgi_bucket_step(stored, at, found, now, rate, burst, ok, left)) {
				tgi_mac_bucket(&s->base, principal, tool, *left, now, mac);
				q_init(&x, ST_BUCKET_SET, NULL);
				q_text(&x, principal);
				q_text(&x, tool);
				q_f64(&x, *left);
				q_i64(&x, now);
				q_text(&x, mac[0] ? mac : NULL);
				q_text(&x, *ok ? "true" : "false");
				rc = run(s, &x, 1);
				q_free(&x, 1);
			}
		}
		if (rc == 0)
			rc = tx_commit(s);
	}
	if (rc < 0) {
		char qs[80];
		tx_abort(s);
		*ok = 0;
		return fail(s, err, errlen, "cannot take from the rate-limit bucket of '%s'",
		            tgi_quoted(qs, sizeof qs, tool));
	}
	if (!*ok) {
		double ms = ceil((*left < 1 ? 1 - *left : 0) * 1000 / rate);
		*retry_after_s = (ms < 1 ? 1 : ms) / 1000;
	}
	return 0;
}

/* ---- idempotency ---- */

/* Is the owner of an in_flight row (or of an unknown one another process
 * marked so) still running it?  On this host (tgi_owner_same_host), as
 * tgi_owner_here_alive says.  On another host: its lease (on the server's
 * clock) has not run out, and its backend still exists with the recorded
 * start time, or started before the server now running did (it went with
 * a restart of the server, which says nothing about its process).  A row
 * its owner settled unknown itself has no owner left: not running. */
static int owner_alive(pg *s, const struct owner *o)
{
	if (!tgi_owner_same_host(&s->me, o->host))
		return (o->backend_alive || o->backend_before) && o->lease_until > o->now;
	return tgi_owner_here_alive(o->pid, o->start, o->lease_until > o->now);
}

/* Columns col.. of r: owner_host, owner_pid, owner_start, lease_until_ms,
 * then (at now_col) the server's now, whether the backend lives, and
 * whether it started before the server did. */
static void read_owner_at(const PGresult *r, int row, int col, int now_col, struct owner *o)
{
	val_copy(r, row, col, o->host, sizeof o->host);
	o->pid = val_i64(r, row, col + 1, 0);
	o->start = val_i64(r, row, col + 2, -1);
	o->lease_until = val_i64(r, row, col + 3, 0);
	o->now = val_i64(r, row, now_col, 0);
	o->backend_alive = val_bool(r, row, now_col + 1);
	o->backend_before = val_bool(r, row, now_col + 2);
}

static void read_owner(const PGresult *r, int col, int now_col, struct owner *o)
{
	read_owner_at(r, 0, col, now_col, o);
}

static void approval_row(const PGresult *r, int i, tgi_approval_row *a);

enum claim_step { CLAIM_DONE, CLAIM_AGAIN, CLAIM_MARK, CLAIM_FORGED };

/* Decide from the row read back (ST_IDEM_GET) what the claim answers;
 * CLAIM_MARK: its owner is dead, mark it unknown; CLAIM_FORGED: a done or
 * in_flight row whose MAC (into mac) does not verify, to mark unknown;
 * CLAIM_AGAIN: it went away meanwhile. */
static enum claim_step claim_answer(pg *s, const PGresult *r, const char *scope,
                                    const char *binding, tgi_idem_info *info, char mac[65])
{
	char state[16], bound[65];
	struct owner o;

	if (tgi_pq.ntuples(r) != 1)
		return CLAIM_AGAIN;
	val_copy(r, 0, 0, info->op_id, sizeof info->op_id);
	val_copy(r, 0, 1, state, sizeof state);
	read_owner(r, 2, 7, &o);
	val_copy(r, 0, 6, bound, sizeof bound);
	val_copy(r, 0, 11, mac, 65);
	int done = !strcmp(state, "done"), flying = !strcmp(state, "in_flight");
	const char *env = done ? val(r, 0, 10) : NULL;
	if ((done || flying) &&
	    !tgi_mac_idem_ok(&s->base, scope, info->op_id, bound, state, env, mac))
		return CLAIM_FORGED;
	if (binding && bound[0] && strcmp(binding, bound)) {
		/* the same key for a different call: never someone else's result */
		info->state = TGI_IDEM_CONFLICT;
	} else if (done) {
		info->state = TGI_IDEM_DONE;
		info->envelope = env ? tgi_strdup(env) : NULL;
	} else if (flying && owner_alive(s, &o)) {
		info->state = TGI_IDEM_IN_FLIGHT;
		info->retry_after_s = tgi_retry_after(o.lease_until, o.now);
	} else if (flying) {
		return CLAIM_MARK;
	} else {
		info->state = TGI_IDEM_UNKNOWN;
	}
	return CLAIM_DONE;
}

/* Mark the row found unknown (step CLAIM_MARK or CLAIM_FORGED): 1 marked,
 * 0 it changed meanwhile, -1 error. */
static int claim_mark(pg *s, const char *scope, enum claim_step step, const char *mac,
                      tgi_idem_info *info)
{
	q x;
	q_init(&x, step == CLAIM_MARK ? ST_IDEM_MARK_UNKNOWN : ST_IDEM_FORGED, NULL);
	q_text(&x, scope);
	q_text(&x, info->op_id);
	if (step == CLAIM_FORGED)
		q_text(&x, *mac ? mac : NULL);
	int rc = run(s, &x, 1);
	int marked = rc == 0 && rows(&x) == 1;
	q_free(&x, 1);
	if (rc < 0)
		return -1;
	if (marked) {
		info->state = TGI_IDEM_UNKNOWN;
		info->unverified = step == CLAIM_FORGED;
	}
	return marked;
}

/* A claim taken in the transaction spend opened: spend the approval
 * (locked by the same round trip, its row in r) and commit, or roll back
 * both.  0 (info says which), -1 error. */
static int claim_spend(pg *s, const PGresult *r, const tgi_approval_spend *spend,
                       tgi_idem_info *info)
{
	tgi_approval_row row;
	char mac[65] = "";
	int ok = tgi_pq.ntuples(r) == 1;
	if (ok) {
		approval_row(r, 0, &row);
		val_copy(r, 0, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		ok = tgi_approval_spendable(&row, spend->principal, spend->binding,
		                            val_i64(r, 0, 15, 0)) &&
		     tgi_mac_approval_ok(&s->base, &row, mac);
	}
	if (!ok) {
		tx_abort(s);   /* the claim goes with it */
		info->state = TGI_IDEM_UNAPPROVED;
		return 0;
	}
	tgi_mac_approval(&s->base, &row, "used", mac);
	q qs[2];
	q_init(&qs[0], ST_APPROVAL_USED, NULL);
	q_text(&qs[0], row.id);
	q_text(&qs[0], mac);
	q_init(&qs[1], ST_ADHOC, "COMMIT");
	int rc = run(s, qs, 2);
	int used = rc == 0 && rows(&qs[0]) == 1;
	q_free(qs, 2);
	s->tx = 0;
	if (rc < 0)
		return -1;
	if (!used) {   /* cannot be: the row was locked approved; refuse all the same */
		info->state = TGI_IDEM_UNAPPROVED;
		return 0;
	}
	return 0;
}

/* The claim itself and the row read back, in one round trip; when the
 * owner of the row found is dead, its row turns unknown (only if it is
 * still that in_flight row: else look again).  With spend, the same trip
 * opens a transaction and locks the approval, spent (claim_spend) only
 * when the claim was taken. */
static int claim(pg *s, const char *scope, const char *op_id, const char *binding, int lease_s,
                 const tgi_approval_spend *spend, tgi_idem_info *info)
{
	char mine[65];
	tgi_mac_idem(&s->base, scope, op_id, binding, "in_flight", NULL, mine);
	for (int tries = 0; tries < PG_CLAIM_TRIES; tries++) {
		q qs[4];
		int n = 0;
		if (spend)
			q_init(&qs[n++], ST_ADHOC, "BEGIN");
		q *c = &qs[n++];
		q_init(c, ST_IDEM_CLAIM, NULL);
		int64_t start = tgi_self_start(&s->me);   /* first: it also renews me.host */
		q_text(c, scope);
		q_text(c, op_id);
		q_text(c, s->me.host);
		q_i64(c, (int64_t)getpid());
		q_i64(c, start);
		q_i64(c, s->backend_start);
		q_i64(c, lease_s > 0 ? lease_s : 1);
		q_text(c, binding);
		q_text(c, *mine ? mine : NULL);
		q *g = &qs[n++];
		q_init(g, ST_IDEM_GET, NULL);
		q_text(g, scope);
		q *a = NULL;
		if (spend) {
			a = &qs[n++];
			q_init(a, ST_APPROVAL_LOCK, NULL);
			q_text(a, spend->id);
		}
		if (run(s, qs, n) < 0) {
			q_free(qs, n);
			return -1;
		}
		s->tx = spend != NULL;
		if (rows(c) == 1) {
			info->state = TGI_IDEM_CLAIMED;
			tgi_snprintf(info->op_id, sizeof info->op_id, "%s", op_id);
			int rc = spend ? claim_spend(s, a->res, spend, info) : 0;
			q_free(qs, n);
			if (rc == 0 && info->state == TGI_IDEM_CLAIMED)
				held_add(s, scope, op_id, HELD_RUNNING);
			return rc;
		}
		char mac[65] = "";
		enum claim_step step = claim_answer(s, g->res, scope, binding, info, mac);
		q_free(qs, n);
		int rc = step == CLAIM_MARK || step == CLAIM_FORGED
		         ? claim_mark(s, scope, step, mac, info) : step == CLAIM_DONE;
		if (rc == 1 && spend && run_sql(s, "COMMIT") < 0)
			rc = -1;
		if (rc != 1 && spend)
			tx_abort(s);
		s->tx = 0;
		if (rc < 0) {
			free(info->envelope);
			info->envelope = NULL;
			return -1;
		}
		if (rc == 1)
			return 0;
		free(info->envelope);
		memset(info, 0, sizeof *info);
	}
	tgi_snprintf(s->why, sizeof s->why, "the scope changed hands %d times while it was claimed",
	             PG_CLAIM_TRIES);
	return -1;
}

static int pg_idem_claim(tgi_store *base, const char *scope, const char *op_id, const char *binding,
                         int lease_s, const tgi_approval_spend *spend, tgi_idem_info *info,
                         char *err, size_t errlen)
{
	pg *s = enter(base);
	char qs[96];

	memset(info, 0, sizeof *info);
	if (tgi_check_scope(scope, err, errlen) < 0 || tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	if (claim(s, scope, op_id, binding, lease_s, spend, info) < 0) {
		/* the claim may have committed before the connection broke: its
		 * call is refused, so the next connection deletes it */
		if (s->transient && s->sent)
			held_add(s, scope, op_id, HELD_DELETE);
		free(info->envelope);
		memset(info, 0, sizeof *info);
		return fail(s, err, errlen, "cannot claim idempotency scope '%s'",
		            tgi_quoted(qs, sizeof qs, scope));
	}
	return 0;
}

/* The op was applied: make its stored envelope say so, or, when the
 * process that ran it died before writing a row, insert a minimal one so
 * that a replay has something to return.  Inside the caller's
 * transaction; the statement is added to qs. */
static int mark_applied(pg *s, const char *op_id, const char *scope, q *x, char **kept)
{
	q e;
	q_init(&e, ST_OP_ENVELOPE, NULL);
	q_text(&e, op_id);
	if (run(s, &e, 1) < 0) {
		q_free(&e, 1);
		return -1;
	}
	int had_row = rows(&e) == 1;
	char *out;
	const char *text = had_row ? val(e.res, 0, 0) : NULL;
	int made_env = tgi_applied_envelope(op_id, had_row, text, &out);
	if (made_env == 0) {
		/* not an object: leave the stored text as it is */
		*kept = text ? tgi_strdup(text) : NULL;
		q_free(&e, 1);
		return 0;
	}
	q_free(&e, 1);
	if (made_env < 0) {
		tgi_snprintf(s->why, sizeof s->why, "out of memory");
		return -1;
	}
	*kept = tgi_strdup(out);
	if (had_row) {
		q_init(x, ST_OP_SET_ENVELOPE, NULL);
		q_text(x, op_id);
		q_owned(x, out);
		return 1;
	}
	int64_t made = tgi_uuid_ms(op_id); /* the op started when its id was made, not now */
	q_init(x, ST_OP_INSERT, NULL);
	q_text(x, op_id);
	for (int i = 0; i < 4; i++)
		q_text(x, NULL);           /* call_id, session, tool, principal */
	q_text(x, "persisted");
	q_text(x, NULL);               /* error_kind */
	q_text(x, scope);
	q_text(x, NULL);               /* args_redacted */
	q_text(x, NULL);               /* args_sha256 */
	q_owned(x, out);
	q_i64(x, made >= 0 ? made : tgi_unix_ms());
	q_f64(x, 0.0);
	q_text(x, NULL);               /* loop */
	return 1;
}

/* The claim of op_id, locked in the caller's transaction; *none when it
 * has no unsettled one. */
static int resolve_find(pg *s, const char *op_id, char *scope, size_t cap, char state[16],
                        char bound[65], struct owner *o, int *none)
{
	q x;
	q_init(&x, ST_IDEM_BY_OP, NULL);
	q_text(&x, op_id);
	int rc = run(s, &x, 1);
	*none = rc == 0 && rows(&x) != 1;
	if (rc == 0 && !*none) {
		val_copy(x.res, 0, 0, scope, cap);
		val_copy(x.res, 0, 1, state, 16);
		read_owner(x.res, 2, 6, o);
		val_copy(x.res, 0, 9, bound, 65);
	}
	q_free(&x, 1);
	return rc;
}

/* The rest of a resolve, after the n queries in qs (at most 1 of 5):
 * the envelope marked applied when it was (and then, with a claim on
 * scope, the scope done, its MAC over bound and that envelope), or the
 * claim released; the operator's word as an event, COMMIT.  The queries
 * are freed.  0, or -1 (the caller aborts). */
static int resolve_commit(pg *s, const char *op_id, const char *scope, const char *bound,
                          int applied, q *qs, int n)
{
	int rc = 0;
	if (applied) {
		char *kept = NULL;
		rc = mark_applied(s, op_id, scope, &qs[n], &kept);
		if (rc > 0)
			n++;
		if (rc >= 0 && scope)
			settle_q(s, &qs[n++], scope, op_id, TGI_SETTLE_DONE, bound, kept);
		free(kept);
	} else if (scope) {
		settle_q(s, &qs[n++], scope, op_id, TGI_SETTLE_RELEASE, NULL, NULL);
	}
	tgi_event ev = { .type = "tool.call.resolved", .ts_ms = tgi_unix_ms() };
	char *data = tgi_strdup(applied ? "{\"applied\":true}" : "{\"applied\":false}");
	if (rc >= 0) {
		events_q(&qs[n++], op_id, &ev, 1, &data);
		q_init(&qs[n++], ST_ADHOC, "COMMIT");
		rc = run(s, qs, n);
		if (rc == 0)
			s->tx = 0;
	}
	q_free(qs, n);
	free(data);
	return rc < 0 ? -1 : 0;
}

/* Resolve an op that holds no claim, in the caller's transaction: one
 * whose outcome is unknown is settled by the record of the operator's
 * word alone (and its envelope marked applied, when it was). */
static int resolve_claimless(pg *s, const char *op_id, int applied, char *err, size_t errlen)
{
	q qs[5];
	q_init(&qs[0], ST_OP_UNSETTLED, NULL);
	q_text(&qs[0], op_id);
	int rc = run(s, qs, 1);
	int found = rc == 0 && rows(&qs[0]) == 1;
	q_free(qs, 1);
	if (rc < 0) {
		tx_abort(s);
		return fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	if (!found) {
		tx_abort(s);
		tgi_snprintf(err, errlen, "op '%s' has no unsettled idempotency claim and no unknown "
		             "outcome; nothing to resolve", op_id);
		return -1;
	}
	if (resolve_commit(s, op_id, NULL, NULL, applied, qs, 0) < 0) {
		tx_abort(s);
		return fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	return 0;
}

static int pg_op_resolve(tgi_store *base, const char *op_id, int applied, char *err, size_t errlen)
{
	pg *s = enter(base);
	char scope[TGI_SCOPE_MAX + 1], state[16], bound[65] = "";
	struct owner o;
	int none = 0;

	if (tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	if (tx_begin(s, "BEGIN") < 0)
		return fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	if (resolve_find(s, op_id, scope, sizeof scope, state, bound, &o, &none) < 0) {
		tx_abort(s);
		return fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	if (none)     /* no claim (a call without a key): an op whose outcome is unknown? */
		return resolve_claimless(s, op_id, applied, err, errlen);
	/* unknown too: one marked so by another gate may still run */
	if (owner_alive(s, &o)) {
		char host[128];
		tx_abort(s);
		tgi_snprintf(err, errlen,
		             "op '%s' is still running (pid %lld on host '%s'); wait for it to finish before resolving it",
		             op_id, (long long)o.pid, tgi_owner_host_shown(o.host, host, sizeof host));
		return -1;
	}
	q qs[5];
	if (resolve_commit(s, op_id, scope, bound, applied, qs, 0) < 0) {
		tx_abort(s);
		return fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	held_drop(s, scope, op_id);
	return 0;
}

/* ---- approvals ---- */

static int pg_approval_add(tgi_store *base, tgi_approval_row *row, char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	if (tgi_approval_new(row, err, errlen) < 0)
		return -1;
	q_init(&x, ST_APPROVAL_INSERT, NULL);
	q_text(&x, row->id);
	q_text(&x, row->op_id[0] ? row->op_id : NULL);
	q_text(&x, row->tool);
	q_text(&x, row->principal);
	q_text(&x, row->binding);
	q_text(&x, row->args);
	q_text(&x, row->reason);
	q_i64(&x, row->expires_ms - row->created_ms);
	q_text(&x, row->plan);
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1) {
		row->created_ms = val_i64(x.res, 0, 0, row->created_ms);
		row->expires_ms = val_i64(x.res, 0, 1, row->expires_ms);
	}
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot queue an approval for '%s'", row->tool);
	return 0;
}

/* One statement: pending -> approved/denied (or expired, past its
 * expiry on the server's clock, as every approval statement reads it:
 * gates' clocks may differ), with NOTIFY toolgate_approvals at commit.
 * When it changed nothing, the row says why. */
static int pg_approval_decide(tgi_store *base, const char *id, int approve, const char *by,
                              const char *reason, char *err, size_t errlen)
{
	pg *s = enter(base);
	char state[16] = "", when[32];
	int64_t expires = 0;
	q x;

	if (tgi_check_approval_id(id, err, errlen) < 0)
		return -1;
	/* the decision on the server's clock, read back, then its MAC (made
	 * here: the key never goes to the database) in the same transaction */
	q qs[2];
	q_init(&qs[0], ST_ADHOC, "BEGIN");
	q_init(&qs[1], ST_APPROVAL_DECIDE, NULL);
	q_text(&qs[1], id);
	q_text(&qs[1], approve ? "approved" : "denied");
	q_text(&qs[1], by);
	q_text(&qs[1], reason);
	int rc = run(s, qs, 2);
	s->tx = rc == 0;
	int changed = rc == 0 && rows(&qs[1]) == 1;
	tgi_approval_row row;
	if (changed) {
		approval_row(qs[1].res, 0, &row);
		tgi_approval_row_clear(&row);
		memcpy(state, row.state, sizeof state);
		expires = row.expires_ms;
	}
	q_free(qs, 2);
	if (rc == 0 && changed && strcmp(state, "expired")) {
		char mac[65];
		tgi_mac_approval(base, &row, state, mac);
		q_init(&qs[0], ST_APPROVAL_MAC, NULL);
		q_text(&qs[0], id);
		q_text(&qs[0], tgi_mac_col(mac));
		q_init(&qs[1], ST_ADHOC, "COMMIT");
		rc = run(s, qs, 2);
		q_free(qs, 2);
	} else if (rc == 0) {
		rc = run_sql(s, "COMMIT");
	}
	if (rc < 0)
		tx_abort(s);
	s->tx = 0;
	if (rc < 0)
		return fail(s, err, errlen, "cannot decide approval '%s'", id);
	if (changed && !strcmp(state, "expired")) {
		tgi_iso8601(expires, when);
		tgi_snprintf(err, errlen, "approval '%s' expired at %s", id, when);
		return -1;
	}
	if (changed)
		return 0;
	q_init(&x, ST_APPROVAL_STATE, NULL);
	q_text(&x, id);
	rc = run(s, &x, 1);
	int found = rc == 0 && rows(&x) == 1;
	if (found)
		val_copy(x.res, 0, 0, state, sizeof state);
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot decide approval '%s'", id);
	if (!found)
		tgi_snprintf(err, errlen, "no approval '%s'", id);
	else
		tgi_snprintf(err, errlen, "approval '%s' is already %s", id, state);
	return -1;
}

/* The newest live row whose decision verifies answers (a pending one has
 * none to verify); the rows before it that did not verify are counted in
 * *forged.  Nothing is spent here. */
static int pg_approval_find(tgi_store *base, const char *binding, const char *principal,
                            int *found, char id[37], int *forged, char *err, size_t errlen)
{
	pg *s = enter(base);
	char state[16] = "", got[37] = "", mac[65];
	tgi_approval_row row;
	q x;

	q_init(&x, ST_APPROVAL_LIVE, NULL);
	q_text(&x, binding);
	q_text(&x, principal);
	int rc = run(s, &x, 1);
	for (int i = 0; rc == 0 && i < rows(&x); i++) {
		approval_row(x.res, i, &row);
		val_copy(x.res, i, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		if (strcmp(row.state, "pending") && !tgi_mac_approval_ok(base, &row, mac)) {
			(*forged)++;
			continue;
		}
		memcpy(state, row.state, sizeof state);
		memcpy(got, row.id, sizeof got);
		break;
	}
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot look for an approval");
	tgi_approval_answer(state, got, found, id);
	return 0;
}

/* The approval id, and only it, becomes used if it may (store.h): locked
 * and read in one round trip, checked and its MAC verified here, spent
 * and committed in a second. */
static int pg_approval_use(tgi_store *base, const char *id, const char *principal,
                           const char *binding, int *used, char *err, size_t errlen)
{
	pg *s = enter(base);
	tgi_approval_row row;
	char mac[65] = "";
	q qs[2];
	*used = 0;
	q_init(&qs[0], ST_ADHOC, "BEGIN");
	q_init(&qs[1], ST_APPROVAL_LOCK, NULL);
	q_text(&qs[1], id);
	int rc = run(s, qs, 2);
	s->tx = rc == 0;
	int ok = rc == 0 && rows(&qs[1]) == 1;
	if (ok) {
		approval_row(qs[1].res, 0, &row);
		val_copy(qs[1].res, 0, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		ok = tgi_approval_spendable(&row, principal, binding, val_i64(qs[1].res, 0, 15, 0));
		if (ok && !tgi_mac_approval_ok(base, &row, mac)) {
			ok = 0;
			*used = -1;
		}
	}
	q_free(qs, 2);
	if (rc == 0 && ok) {
		tgi_mac_approval(base, &row, "used", mac);
		q_init(&qs[0], ST_APPROVAL_USED, NULL);
		q_text(&qs[0], id);
		q_text(&qs[0], mac);
		q_init(&qs[1], ST_ADHOC, "COMMIT");
		rc = run(s, qs, 2);
		*used = rc == 0 && rows(&qs[0]) == 1;
		q_free(qs, 2);
	} else if (rc == 0) {
		tx_abort(s);
	}
	if (rc < 0) {
		*used = 0;
		tx_abort(s);
	}
	s->tx = 0;
	if (rc < 0)
		return fail(s, err, errlen, "cannot use approval '%s'", id);
	return 0;
}

static void approval_row(const PGresult *r, int i, tgi_approval_row *a)
{
	const char *t;
	memset(a, 0, sizeof *a);
	val_copy(r, i, 0, a->id, sizeof a->id);
	val_copy(r, i, 1, a->op_id, sizeof a->op_id);
	val_copy(r, i, 2, a->tool, sizeof a->tool);
	val_copy(r, i, 3, a->principal, sizeof a->principal);
	val_copy(r, i, 4, a->binding, sizeof a->binding);
	val_copy(r, i, 5, a->state, sizeof a->state);
	t = val(r, i, 6);
	a->args = t ? tgi_strdup(t) : NULL;
	t = val(r, i, 7);
	a->reason = t ? tgi_strdup(t) : NULL;
	a->created_ms = val_i64(r, i, 8, 0);
	a->expires_ms = val_i64(r, i, 9, 0);
	val_copy(r, i, 10, a->decided_by, sizeof a->decided_by);
	t = val(r, i, 11);
	a->plan = t ? tgi_strdup(t) : NULL;
	a->decided_ms = val_i64(r, i, 12, 0);
	t = val(r, i, 13);
	a->decided_reason = t ? tgi_strdup(t) : NULL;
}

static int pg_approval_list(tgi_store *base, const char *state, tgi_approval_row **out, size_t *n,
                            char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	*out = NULL;
	*n = 0;
	q_init(&x, ST_APPROVAL_LIST, NULL);
	q_text(&x, state);
	int rc = run(s, &x, 1);
	if (rc < 0) {
		q_free(&x, 1);
		return fail(s, err, errlen, "cannot list approvals");
	}
	size_t len = (size_t)rows(&x);
	tgi_approval_row *v = len ? tgi_xcalloc(len, sizeof *v) : NULL;
	for (size_t i = 0; i < len; i++)
		approval_row(x.res, (int)i, &v[i]);
	q_free(&x, 1);
	*out = v;
	*n = len;
	return 0;
}

static int pg_approval_get(tgi_store *base, const char *id, tgi_approval_row *row, int *found,
                           char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	memset(row, 0, sizeof *row);
	*found = 0;
	if (!id || !tgi_uuid_ok(id))
		return 0; /* not an approval id: there is none */
	q_init(&x, ST_APPROVAL_ONE, NULL);
	q_text(&x, id);
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1) {
		char mac[65];
		approval_row(x.res, 0, row);
		val_copy(x.res, 0, 14, mac, sizeof mac);
		row->verified = tgi_mac_approval_ok(base, row, mac);
		*found = 1;
	}
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot read approval %s", id);
	return 0;
}

/* ---- pins of bridged MCP tools ---- */

/* The pinned digest of name into pinned[65]; *found 0 when there is none,
 * 1 when its MAC verifies, 2 when it does not. */
static int pin_get(pg *s, const char *name, char pinned[65], int *found)
{
	char mac[65];
	q x;
	q_init(&x, ST_PIN_GET, NULL);
	q_text(&x, name);
	int rc = run(s, &x, 1);
	*found = rc == 0 && rows(&x) == 1;
	if (*found) {
		val_copy(x.res, 0, 0, pinned, 65);
		val_copy(x.res, 0, 1, mac, sizeof mac);
		if (!tgi_mac_pin_ok(&s->base, name, pinned, mac))
			*found = 2;
	}
	q_free(&x, 1);
	return rc;
}

/* A pin's state: one that does not verify is CHANGED whatever it says. */
static tgi_pin_state pin_state(const char *pinned, int found, const char *digest)
{
	return found == 1 && !strcmp(pinned, digest) ? TGI_PIN_SAME : TGI_PIN_CHANGED;
}

/* Read first (the common case: it is there and the same); a tool seen for
 * the first time is pinned by an insert that loses to another process's
 * (which is then read). */
static int pg_pin_check(tgi_store *base, const char *name, const char *digest, tgi_pin_state *st,
                        char pinned[65], char *err, size_t errlen)
{
	pg *s = enter(base);
	char qn[80];
	int found = 0;

	pinned[0] = '\0';
	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	if (pin_get(s, name, pinned, &found) < 0)
		return fail(s, err, errlen, "cannot pin the description of '%s'",
		            tgi_quoted(qn, sizeof qn, name));
	if (found) {
		*st = pin_state(pinned, found, digest);
		return 0;
	}
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	q x;
	q_init(&x, ST_PIN_ADD, NULL);
	q_text(&x, name);
	q_text(&x, digest);
	q_i64(&x, tgi_unix_ms());
	q_text(&x, tgi_mac_col(mac));
	int rc = run(s, &x, 1);
	int added = rc == 0 && rows(&x) == 1;
	q_free(&x, 1);
	if (rc == 0 && !added)
		rc = pin_get(s, name, pinned, &found);
	if (rc == 0 && !added && !found) {
		tgi_snprintf(s->why, sizeof s->why, "the pin was neither added nor found");
		rc = -1;
	}
	if (rc < 0)
		return fail(s, err, errlen, "cannot pin the description of '%s'",
		            tgi_quoted(qn, sizeof qn, name));
	if (added) {
		tgi_snprintf(pinned, 65, "%s", digest);
		*st = TGI_PIN_NEW;
	} else {
		*st = pin_state(pinned, found, digest);
	}
	return 0;
}

static int pg_pin_set(tgi_store *base, const char *name, const char *digest, char *err,
                      size_t errlen)
{
	pg *s = enter(base);
	char qn[80];
	q x;
	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	q_init(&x, ST_PIN_SET, NULL);
	q_text(&x, name);
	q_text(&x, digest);
	q_i64(&x, tgi_unix_ms());
	q_text(&x, tgi_mac_col(mac));
	int rc = run(s, &x, 1);
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot move the pin of '%s'",
		            tgi_quoted(qn, sizeof qn, name));
	return 0;
}

/* ---- an agent's conversation (toolgate agent) ---- */

/* Under a lock of the session (two appends at once number their entries
 * one after the other), in one round trip: the entries go after the last
 * one, unless the conversation is in another API (then nothing is added
 * and that API is returned). */
static int pg_messages_append(tgi_store *base, const char *session, const char *api,
                              const json_t *entries, char *err, size_t errlen)
{
	pg *s = enter(base);
	char qn[80], have[TGI_MSG_API_MAX] = "", **text;
	size_t n;
	if (tgi_check_messages(session, api ? api : "", err, errlen) < 0 ||
	    tgi_messages_encode(entries, &text, &n, err, errlen) < 0)
		return -1;
	if (!n)
		return 0;
	q qs[2];
	q_init(&qs[0], ST_MSG_LOCK, NULL);
	q_text(&qs[0], session);
	q_init(&qs[1], ST_MSG_APPEND, NULL);
	q_text(&qs[1], session);
	q_text(&qs[1], api);
	q_i64(&qs[1], tgi_unix_ms());
	q_owned(&qs[1], text_array((const char *const *)text, n));
	int rc = run(s, qs, 2);
	if (rc == 0 && rows(&qs[1]) == 1)
		val_copy(qs[1].res, 0, 0, have, sizeof have);
	q_free(qs, 2);
	tgi_texts_free(text, n);
	if (rc < 0)
		return fail(s, err, errlen, "cannot save the conversation of session '%s'",
		            tgi_quoted(qn, sizeof qn, session));
	if (have[0] && strcmp(have, api)) {
		tgi_snprintf(err, errlen, "session '%s' is a conversation in the %s API, not %s",
		             tgi_quoted(qn, sizeof qn, session), have, api);
		return -1;
	}
	return 0;
}

static int pg_messages(tgi_store *base, const char *session, json_t **out, char api[32],
                       char *err, size_t errlen)
{
	pg *s = enter(base);
	char qn[80];
	q x;
	*out = NULL;
	api[0] = '\0';
	if (tgi_check_messages(session, NULL, err, errlen) < 0)
		return -1;
	q_init(&x, ST_MSG_LIST, NULL);
	q_text(&x, session);
	if (run(s, &x, 1) < 0) {
		q_free(&x, 1);
		return fail(s, err, errlen, "cannot read the conversation of session '%s'",
		            tgi_quoted(qn, sizeof qn, session));
	}
	json_t *arr = json_array();
	for (int i = 0; i < rows(&x); i++) {
		const char *entry = val(x.res, i, 1);
		json_t *v = entry ? json_loads(entry, JSON_DECODE_ANY, NULL) : NULL;
		if (!v) {
			q_free(&x, 1);
			json_decref(arr);
			api[0] = '\0';
			tgi_snprintf(err, errlen, "the conversation of session '%s' holds an entry that is "
			             "not JSON", tgi_quoted(qn, sizeof qn, session));
			return -1;
		}
		if (!api[0])
			val_copy(x.res, i, 0, api, TGI_MSG_API_MAX);
		json_array_append_new(arr, v);
	}
	q_free(&x, 1);
	*out = arr;
	return 0;
}

/* ---- eval runs (toolgate eval) ---- */

/* One statement (a transaction of its own); a rate not given (NAN) is
 * sent as NULL by q_f64. */
static int pg_eval_put(tgi_store *base, const tgi_eval_row *r, char *err, size_t errlen)
{
	pg *s = enter(base);
	const char *text[] = { r->provider, r->api, r->model, r->profile, r->manifest, r->suite };
	q x;
	q_init(&x, ST_EVAL_INSERT, NULL);
	q_text(&x, r->id);
	q_i64(&x, r->ts_ms);
	for (size_t i = 0; i < TGI_ARRAY_LEN(text); i++)
		q_text(&x, text[i]);
	q_i64(&x, r->cases);
	q_i64(&x, r->runs);
	for (int i = 0; i < 5; i++)
		q_f64(&x, r->score[i]);
	q_text(&x, r->report);
	int rc = run(s, &x, 1);
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot keep eval run %s", r->id);
	return 0;
}

/* Row i of r, as eval_list gives it. */
static json_t *eval_row_json(const PGresult *r, int i)
{
	tgi_eval_row e = {
		.id = val(r, i, 0), .ts_ms = val_i64(r, i, 1, 0),
		.provider = val(r, i, 2), .api = val(r, i, 3), .model = val(r, i, 4),
		.profile = val(r, i, 5), .manifest = val(r, i, 6), .suite = val(r, i, 7),
		.cases = val_i64(r, i, 8, 0), .runs = val_i64(r, i, 9, 0), .report = val(r, i, 15),
	};
	for (int k = 0; k < 5; k++)
		e.score[k] = val(r, i, 10 + k) ? val_f64(r, i, 10 + k) : NAN;
	return tgi_eval_json(&e);
}

static int pg_eval_list(tgi_store *base, const char *model, int64_t limit, json_t **out,
                        char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	q_init(&x, model ? ST_EVAL_LIST_MODEL : ST_EVAL_LIST, NULL);
	if (model)
		q_text(&x, model);
	q_i64(&x, limit);
	if (run(s, &x, 1) < 0) {
		q_free(&x, 1);
		return fail(s, err, errlen, "cannot read the eval runs");
	}
	json_t *arr = json_array();
	for (int i = 0; i < rows(&x); i++)
		json_array_append_new(arr, eval_row_json(x.res, i));
	q_free(&x, 1);
	*out = arr;
	return 0;
}

/* ---- events written on their own ---- */

static int pg_event(tgi_store *base, const char *op_id, tgi_event *ev, char *err, size_t errlen)
{
	pg *s = enter(base);
	char *data;
	if (tgi_event_encode(op_id, ev, &data, err, errlen) < 0)
		return -1;
	tgi_event e = *ev;
	if (!e.ts_ms)
		e.ts_ms = tgi_unix_ms();
	q x;
	events_q(&x, op_id, &e, 1, &data);
	int rc = run(s, &x, 1);
	if (rc == 0)
		ev->seq = val_i64(x.res, 0, 0, 0);
	q_free(&x, 1);
	free(data);
	if (rc < 0) {
		char qt[80];
		return fail(s, err, errlen, "cannot record event '%s'",
		            tgi_quoted(qt, sizeof qt, ev->type));
	}
	return 0;
}

/* ---- reading the log ---- */

static json_t *col_string(const PGresult *r, int row, int col)
{
	return tgi_val_string(val(r, row, col));
}

static json_t *col_parsed(const PGresult *r, int row, int col)
{
	return tgi_val_parsed(val(r, row, col));
}

static json_t *col_time(const PGresult *r, int row, int col)
{
	return tgi_val_time(val_i64(r, row, col, 0));
}

static json_t *op_json(const PGresult *r, int i)
{
	static const char *const text[] = { "op_id", "call_id", "session", "tool",
	                                    "principal", "status", "error_kind" };
	json_t *o = json_object();
	for (int c = 0; c < (int)TGI_ARRAY_LEN(text); c++)
		json_object_set_new(o, text[c], col_string(r, i, c));
	json_object_set_new(o, "started", col_time(r, i, 7));
	json_object_set_new(o, "duration_ms", json_real(val_f64(r, i, 8)));
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
	json_object_set_new(o, "seq", json_integer(val_i64(r, i, 0, 0)));
	json_object_set_new(o, "ts", col_time(r, i, 1));
	json_object_set_new(o, "op_id", col_string(r, i, 2));
	json_object_set_new(o, "type", col_string(r, i, 3));
	json_object_set_new(o, "stage", col_string(r, i, 4));
	json_object_set_new(o, "data", col_parsed(r, i, 5));
	if (val_bool(r, i, 6))
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
		q_text(x, f->tool);
		tgi_buf_printf(sql, " AND %s.tool = $%d", col, x->n);
	}
	if (f->status) {
		q_text(x, f->status);
		tgi_buf_printf(sql, " AND %s.status = $%d", col, x->n);
		if (strcmp(f->status, "persisted"))
			tgi_buf_printf(sql, " AND %s.status <> 'persisted'", col); /* ops_status */
	}
	if (f->session) {
		q_text(x, f->session);
		tgi_buf_printf(sql, " AND %s.session = $%d", col, x->n);
	}
	if (f->op_id) {
		q_text(x, f->op_id);
		tgi_buf_printf(sql, " AND %s = $%d", op_col, x->n);
	}
}

/* Run one built query and collect its rows with row(). */
static int log_query(pg *s, q *x, json_t *(*row)(const PGresult *, int), json_t **out)
{
	if (run(s, x, 1) < 0)
		return -1;
	json_t *a = json_array();
	for (int i = 0; i < rows(x); i++)
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
static int pg_ops(tgi_store *base, const tgi_log_filter *f, json_t **out, char *err, size_t errlen)
{
	pg *s = enter(base);
	static const tgi_log_filter all;
	char since_id[37];
	tgi_buf sql;
	q x;

	*out = NULL;
	if (!f)
		f = &all;
	tgi_uuid_floor(f->since_ms, since_id);
	tgi_buf_init(&sql, 4096);
	q_init(&x, ST_ADHOC, NULL);
	q_text(&x, since_id);
	q_i64(&x, f->since_ms);
	tgi_buf_puts(&sql, "SELECT op_id, call_id, session, tool, principal, status, error_kind,"
	                   " started_ms, duration_ms, args_sha256, envelope FROM ops o"
	                   " WHERE o.op_id >= $1 AND o.started_ms >= $2::bigint");
	filter_sql(&sql, &x, f, "o", "o.op_id");
	if (f->limit) {
		q_i64(&x, f->limit > INT64_MAX ? INT64_MAX : (int64_t)f->limit);
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
	q_free(&x, 1);
	free(text);
	if (rc < 0)
		return fail(s, err, errlen, "cannot read the ledger");
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
static int pg_events(tgi_store *base, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                     char *err, size_t errlen)
{
	pg *s = enter(base);
	static const tgi_log_filter all;
	tgi_buf sql;
	q x;

	*out = NULL;
	if (!f)
		f = &all;
	tgi_buf_init(&sql, 4096);
	q_init(&x, ST_ADHOC, NULL);
	q_i64(&x, after_seq);
	q_i64(&x, f->since_ms);
	tgi_buf_puts(&sql,
	             "SELECT e.seq AS seq, e.ts_ms, e.op_id, e.type, e.stage, e.data,"
	             " o.op_id IS NOT NULL, o.session, o.principal, o.tool, o.status, o.error_kind,"
	             " CASE WHEN o.error_kind IS NOT NULL"
	             " THEN toolgate_json_text(o.envelope, 'error', 'message') END, o.args_redacted"
	             " FROM events e LEFT JOIN ops o ON o.op_id = e.op_id"
	             " WHERE e.seq > $1::bigint AND e.ts_ms >= $2::bigint");
	filter_sql(&sql, &x, f, "o", "e.op_id");
	if (f->limit) {
		q_i64(&x, f->limit > INT64_MAX ? INT64_MAX : (int64_t)f->limit);
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
	q_free(&x, 1);
	free(text);
	if (rc < 0)
		return fail(s, err, errlen, "cannot read the ledger");
	return 0;
}

static int pg_last_seq(tgi_store *base, int64_t *seq, char *err, size_t errlen)
{
	pg *s = enter(base);
	q x;
	*seq = 0;
	q_init(&x, ST_LAST_SEQ, NULL);
	int rc = run(s, &x, 1);
	if (rc == 0 && rows(&x) == 1)
		*seq = val_i64(x.res, 0, 0, 0);
	q_free(&x, 1);
	if (rc < 0)
		return fail(s, err, errlen, "cannot read the ledger");
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
		if (!tgi_same_tool(val(ranks, i, 0), tool))
			continue;
		p50 = json_real(val_f64(ranks, i, 1));
		p99 = json_real(val_f64(ranks, i, 2));
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
		const char *tool = end ? NULL : val(by_status, i, 0);
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
		json_int_t k = val_i64(by_status, i, 2, 0);
		json_object_set_new(by, val(by_status, i, 1), json_integer(k));
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
		json_object_set_new(o, "count", json_integer(val_i64(r, i, 2, 0)));
		json_array_append_new(denials, o);
	}
	return denials;
}

static int pg_stats(tgi_store *base, int64_t since_ms, json_t **out, char *err, size_t errlen)
{
	pg *s = enter(base);
	static const char *const sql[] = { stats_status_sql, stats_ranks_sql, stats_denials_sql };
	char since_id[37];
	q qs[5];

	*out = NULL;
	tgi_uuid_floor(since_ms, since_id);
	q_init(&qs[0], ST_ADHOC, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	for (int i = 0; i < 3; i++) {
		q_init(&qs[1 + i], ST_ADHOC, sql[i]);
		q_text(&qs[1 + i], since_id);
		q_i64(&qs[1 + i], since_ms);
	}
	q_init(&qs[4], ST_ADHOC, "COMMIT");
	if (run(s, qs, 5) < 0) {
		q_free(qs, 5);
		return fail(s, err, errlen, "cannot read the ledger");
	}
	json_int_t calls = 0;
	json_t *tools = stats_tools(qs[1].res, qs[2].res, &calls);
	json_t *denials = stats_denials(qs[3].res);
	q_free(qs, 5);
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
	json_object_set_new(o, "started_ms", json_integer(val_i64(r, 0, 12, 0)));
	json_object_set_new(o, "duration_ms", json_real(val_f64(r, 0, 13)));
	json_object_set_new(o, "loop", col_string(r, 0, 14));
	const char *agg = val(r, 0, 15);
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
		             tgi_quoted(id, sizeof id, val(r, 0, 0)),
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
	                 (json_int_t)val_i64(r, 0, 0, 0), "type", col_string(r, 0, 1), "stage",
	                 col_string(r, 0, 2), "data", col_parsed(r, 0, 3));
}

static json_t *export_claim(pg *s, const PGresult *r)
{
	(void)s;
	return json_pack("{s:{s:o, s:o, s:o, s:o, s:I}}", "claim", "scope", col_string(r, 0, 0),
	                 "op_id", col_string(r, 0, 1), "state", col_string(r, 0, 2), "binding",
	                 col_string(r, 0, 3), "created_ms", (json_int_t)val_i64(r, 0, 4, 0));
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
	if (conn_ready(s) < 0)
		return -1;
	if (!tgi_pq.sendQueryParams(s->conn, sql, x->n, NULL, x->v, NULL, NULL, 0) ||
	    !tgi_pq.setSingleRowMode(s->conn)) {
		result_why(s, NULL);
		conn_lost(s, s->why);
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
			result_why(s, r);
			rc = conn_error(s, r) ? -2 : -1;
		}
		tgi_pq.clear(r);
	}
	if (stop)
		stream_cancel(s);
	if (rc == -2 || tgi_pq.status(s->conn) != CONNECTION_OK) {
		conn_lost(s, s->why);
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

static int pg_unknown(tgi_store *base, json_t **out, char *err, size_t errlen)
{
	pg *s = enter(base);
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
	q_init(&x, ST_ADHOC, sql);
	if (run(s, &x, 1) < 0) {
		q_free(&x, 1);
		return fail(s, err, errlen, "cannot read the ledger");
	}
	json_t *a = json_array();
	for (int r = 0; r < rows(&x); r++) {
		const char *state = val(x.res, r, 7);
		struct owner o;
		read_owner_at(x.res, r, 9, 13, &o);
		if (state && !strcmp(state, "in_flight") && owner_alive(s, &o))
			continue;               /* running now: its outcome is not known yet */
		json_array_append_new(a, tgi_unknown_row(val(x.res, r, 0), val(x.res, r, 1),
		                                         val(x.res, r, 2), val(x.res, r, 3),
		                                         val(x.res, r, 4), val_i64(x.res, r, 5, 0),
		                                         val(x.res, r, 6), state, val(x.res, r, 8)));
	}
	q_free(&x, 1);
	*out = a;
	return 0;
}

static int pg_export(tgi_store *base, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
                     char *err, size_t errlen)
{
	pg *s = enter(base);
	char floor_id[37];
	q x;

	tgi_uuid_floor(since_ms, floor_id);
	if (tx_begin(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") < 0)
		return fail(s, err, errlen, "cannot read the ledger for export");
	q_init(&x, ST_ADHOC, NULL);
	q_text(&x, floor_id);
	q_i64(&x, since_ms);
	int rc = stream(s, export_ops_sql, &x, export_op, fn, arg);
	q_init(&x, ST_ADHOC, NULL);
	q_i64(&x, since_ms);
	if (rc == 0)
		rc = stream(s, export_lone_sql, &x, export_lone, fn, arg);
	if (rc == 0)
		rc = stream(s, export_claims_sql, &x, export_claim, fn, arg);
	if (rc == 0)
		rc = tx_commit(s);
	else
		tx_abort(s);
	if (rc < 0)
		return fail(s, err, errlen, "cannot read the ledger for export");
	return rc;
}

/* ---- watches ----
 *
 * A watch is a connection of its own that LISTENs on toolgate_events or
 * toolgate_approvals; a wait is poll() on its socket.  A lost connection
 * is made again after a backoff (as the handle's), and the wait that made
 * it returns 1: what changed meanwhile was not heard, so the caller looks.
 */

typedef struct pg_watch {
	tgi_watch   base;
	PGconn     *conn;            /* NULL while lost */
	char       *url;             /* the handle's, copied: password and all */
	char        password[256];
	char        why[PG_WHY_MAX];
	const char *channel;
	int         reconnect_s;     /* the handle's: a reconnect's connect timeout */
	int         backoff_ms;
	double      retry_at;
} pg_watch;

/* Connect and LISTEN (again, when reconnect: with the short connect
 * timeout, so that a wait overruns its timeout by seconds, not tens). */
static int watch_listen(pg_watch *w, int reconnect)
{
	char sql[64];
	w->conn = connect_url(w->url, w->password, reconnect ? w->reconnect_s : 0, w->why,
	                      sizeof w->why);
	if (!w->conn)
		return -1;
	tgi_pq.setNoticeProcessor(w->conn, no_notices, NULL);
	tgi_snprintf(sql, sizeof sql, "LISTEN %s", w->channel);
	PGresult *r = tgi_pq.exec(w->conn, sql);
	int ok = r && tgi_pq.resultStatus(r) == PGRES_COMMAND_OK;
	if (!ok) {
		one_line(w->password, w->why, sizeof w->why,
		         r ? tgi_pq.resultErrorMessage(r) : tgi_pq.errorMessage(w->conn));
		tgi_pq.finish(w->conn);
		w->conn = NULL;
	}
	if (r)
		tgi_pq.clear(r);
	return ok ? 0 : -1;
}

static void watch_lost(pg_watch *w)
{
	if (w->conn)
		tgi_pq.finish(w->conn);
	w->conn = NULL;
	w->backoff_ms = !w->backoff_ms ? PG_BACKOFF_MIN_MS
	              : w->backoff_ms >= PG_BACKOFF_MAX_MS / 2 ? PG_BACKOFF_MAX_MS
	                                                       : 2 * w->backoff_ms;
	w->retry_at = tgi_now_ms() + w->backoff_ms;
}

static void watch_free(pg_watch *w)
{
	if (w->conn)
		tgi_pq.finish(w->conn);
	explicit_bzero(w->url, strlen(w->url));
	free(w->url);
	explicit_bzero(w->password, sizeof w->password);
	free(w);
}

static int pg_watch_open(tgi_store *base, tgi_watch_what what, tgi_watch **out, char *err,
                         size_t errlen)
{
	pg *s = (pg *)base;
	pg_watch *w = tgi_xcalloc(1, sizeof *w);
	w->base.impl = &postgres_impl;
	w->channel = what == TGI_WATCH_APPROVALS ? "toolgate_approvals" : "toolgate_events";
	w->url = tgi_strdup(s->url);
	w->reconnect_s = s->reconnect_s;
	tgi_snprintf(w->password, sizeof w->password, "%s", s->password);
	if (watch_listen(w, 0) < 0) {
		tgi_snprintf(err, errlen, "cannot watch the ledger %s: %s", s->shown, w->why);
		watch_free(w);
		return -1;
	}
	*out = &w->base;
	return 0;
}

/* Drop the notifications read so far: 1 if there was one. */
static int watch_drain(pg_watch *w)
{
	int any = 0;
	PGnotify *n;
	while ((n = tgi_pq.notifies(w->conn)) != NULL) {
		any = 1;
		tgi_pq.freemem(n);
	}
	return any;
}

static void sleep_ms(double ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000),
		               .tv_nsec = (long)(fmod(ms, 1000) * 1e6) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The connection is lost: wait out its backoff (not past the caller's
 * timeout) and make it again; 1 once tried (look again), 0 when the time
 * ran out first. */
static int watch_reconnect(pg_watch *w, int timeout_ms)
{
	double left = w->retry_at - tgi_now_ms();
	if (left > timeout_ms) {
		sleep_ms(timeout_ms);
		return 0;
	}
	sleep_ms(left);
	if (watch_listen(w, 1) == 0)
		w->backoff_ms = 0;
	else
		watch_lost(w);
	return 1;
}

static int pg_watch_wait(tgi_watch *base, int timeout_ms)
{
	pg_watch *w = (pg_watch *)base;
	double start = tgi_now_ms();
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (!w->conn)
		return watch_reconnect(w, timeout_ms);
	/* what an earlier wait read but did not hand out, or a close seen now */
	if (!tgi_pq.consumeInput(w->conn) || tgi_pq.status(w->conn) != CONNECTION_OK) {
		watch_lost(w);
		return watch_reconnect(w, timeout_ms);
	}
	if (watch_drain(w))
		return 1;
	struct pollfd p = { .fd = tgi_pq.socket(w->conn), .events = POLLIN };
	int rc = p.fd < 0 ? -2 : poll(&p, 1, timeout_ms);
	if (rc == -1)
		return 1; /* a signal: early is allowed */
	if (rc == 0)
		return 0;
	if (rc == -2 || !tgi_pq.consumeInput(w->conn) || tgi_pq.status(w->conn) != CONNECTION_OK) {
		int left = timeout_ms - (int)(tgi_now_ms() - start);
		watch_lost(w);
		return watch_reconnect(w, left > 0 ? left : 0);
	}
	watch_drain(w);
	return 1;
}

static void pg_watch_close(tgi_watch *base)
{
	watch_free((pg_watch *)base);
}

static const tgi_store_impl postgres_impl = {
	.kind = "postgres",
	.shared = 1,
	.close = pg_close,
	.transient = pg_transient,
	.schema_version = pg_schema_version,
	.migrate = pg_migrate,
	.record = pg_record,
	.session_manifest = pg_session_manifest,
	.loop_window = pg_loop_window,
	.bucket_get = pg_bucket_get,
	.bucket_take = pg_bucket_take,
	.idem_claim = pg_idem_claim,
	.op_resolve = pg_op_resolve,
	.approval_add = pg_approval_add,
	.approval_decide = pg_approval_decide,
	.approval_find = pg_approval_find,
	.approval_use = pg_approval_use,
	.approval_get = pg_approval_get,
	.approval_list = pg_approval_list,
	.pin_check = pg_pin_check,
	.pin_set = pg_pin_set,
	.messages_append = pg_messages_append,
	.messages = pg_messages,
	.eval_put = pg_eval_put,
	.eval_list = pg_eval_list,
	.event = pg_event,
	.ops = pg_ops,
	.events = pg_events,
	.last_seq = pg_last_seq,
	.stats = pg_stats,
	.export = pg_export,
	.unknown = pg_unknown,
	.shown = pg_shown,
	.ident_bound = pg_ident_bound,
	.ident_get = pg_ident_get,
	.ident_put = pg_ident_put,
	.watch_open = pg_watch_open,
	.watch_wait = pg_watch_wait,
	.watch_close = pg_watch_close,
};
