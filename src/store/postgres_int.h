/*
 * postgres_int.h — what the pieces of the PostgreSQL ledger share
 * (internal to postgres*.c): the constants, the prepared statements, the
 * handle, a statement of a round trip, and the functions one piece
 * defines for the others.
 *
 * The pieces: postgres.c (the table's writes: records, claims,
 * approvals, pins, conversations, eval runs, events; and the table),
 * postgres_conn.c (connecting, the round trip, backoff, held claims, open
 * and close), postgres_schema.c (tables and migrations), postgres_read.c
 * (log, stats, unknown outcomes, export), postgres_watch.c (watches).
 * A function one piece defines for another is named tgi_pg_*, so nothing
 * else in the program meets it.
 *
 * Owns: nothing.  Must not: be included outside src/store/postgres*.c.
 */
#ifndef TGI_STORE_POSTGRES_INT_H
#define TGI_STORE_POSTGRES_INT_H

#include "store/impl.h"
#include "util/dl.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

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
	int          tx;              /* an explicit transaction is open on it (tgi_pg_tx_begin):
	                               * no reconnect until tgi_pg_tx_commit or tgi_pg_tx_abort */
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
 * the trip its result (cleared by tgi_pg_q_free). */
typedef struct q {
	int         st;
	const char *sql;
	int         n;
	const char *v[PG_MAXP];
	char        num[PG_MAXP][32];
	char       *owned[PG_MAXP];
	PGresult   *res;
} q;

extern const tgi_store_impl tgi_pg_impl;

/* ---- postgres.c ---- */
int tgi_pg_owner_alive(pg *s, const struct owner *o);
void tgi_pg_read_owner_at(const PGresult *r, int row, int col, int now_col, struct owner *o);

/* ---- postgres_conn.c ---- */
void tgi_pg_q_init(q *x, int st, const char *sql);
void tgi_pg_q_text(q *x, const char *v);
void tgi_pg_q_owned(q *x, char *v);
void tgi_pg_q_i64(q *x, int64_t v);
void tgi_pg_q_f64(q *x, double v);
void tgi_pg_q_results_free(q *qs, int n);
void tgi_pg_q_free(q *qs, int n);
const char *tgi_pg_val(const PGresult *r, int row, int col);
int64_t tgi_pg_val_i64(const PGresult *r, int row, int col, int64_t def);
double tgi_pg_val_f64(const PGresult *r, int row, int col);
int tgi_pg_val_bool(const PGresult *r, int row, int col);
void tgi_pg_val_copy(const PGresult *r, int row, int col, char *out, size_t cap);
int tgi_pg_rows(const q *x);
char *tgi_pg_text_array(const char *const *v, size_t n);
char *tgi_pg_int_array(const int64_t *v, size_t n);
void tgi_pg_one_line(const char *password, char *out, size_t cap, const char *msg);
void tgi_pg_result_why(pg *s, const PGresult *r);
int tgi_pg_conn_error(const pg *s, const PGresult *r);
void tgi_pg_conn_lost(pg *s, const char *detail);
__attribute__((format(printf, 4, 5)))
int tgi_pg_fail(pg *s, char *err, size_t errlen, const char *fmt, ...);
pg *tgi_pg_enter(tgi_store *base);
PGconn *tgi_pg_connect_url(const char *url, const char *password, int reconnect_s, char *why,
                           size_t cap);
void tgi_pg_no_notices(void *arg, const char *message);
int tgi_pg_settle_held(pg *s);
int tgi_pg_conn_ready(pg *s);
int tgi_pg_run(pg *s, q *qs, int n);
int tgi_pg_run_sql(pg *s, const char *sql);
int tgi_pg_tx_begin(pg *s, const char *sql);
int tgi_pg_tx_commit(pg *s);
void tgi_pg_tx_abort(pg *s);
void tgi_pg_held_add(pg *s, const char *scope, const char *op_id, enum held_state state);
void tgi_pg_held_drop(pg *s, const char *scope, const char *op_id);
void tgi_pg_close(tgi_store *base);
int tgi_pg_transient(const tgi_store *base);

/* ---- postgres_schema.c ---- */
int tgi_pg_schema_ahead(pg *s, int v, char *err, size_t errlen);
int tgi_pg_schema_version(tgi_store *base, int *version, char *err, size_t errlen);
int tgi_pg_migrate_from(pg *s, int v, int to, int dry_run, void (*fn)(void *, int), void *arg,
                        char *err, size_t errlen);
int tgi_pg_migrate(tgi_store *base, int to, int dry_run, void (*fn)(void *, int), void *arg,
                   char *err, size_t errlen);

/* ---- postgres_read.c ---- */
int tgi_pg_ops(tgi_store *base, const tgi_log_filter *f, json_t **out, char *err, size_t errlen);
int tgi_pg_events(tgi_store *base, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                  char *err, size_t errlen);
int tgi_pg_last_seq(tgi_store *base, int64_t *seq, char *err, size_t errlen);
int tgi_pg_stats(tgi_store *base, int64_t since_ms, json_t **out, char *err, size_t errlen);
int tgi_pg_unknown(tgi_store *base, json_t **out, char *err, size_t errlen);
int tgi_pg_export(tgi_store *base, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
                  char *err, size_t errlen);

/* ---- postgres_watch.c ---- */
int tgi_pg_watch_open(tgi_store *base, tgi_watch_what what, tgi_watch **out, char *err,
                      size_t errlen);
int tgi_pg_watch_wait(tgi_watch *base, int timeout_ms);
void tgi_pg_watch_close(tgi_watch *base);

#endif
