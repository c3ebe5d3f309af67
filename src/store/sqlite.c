/*
 * sqlite.c — the ledger on SQLite in WAL mode (DESIGN §1 "Idempotency", §5).
 *
 * Tables: ops (one row per call, with its loop-window entry), idem (scope
 * -> op: in_flight | done | unknown, with the owner's host, pid, process
 * start time and lease), events (append-only, seq never reused),
 * approvals, sessions (with the tool manifest each last ran with), pins
 * (the first-seen digest of each bridged MCP tool's description),
 * rate_buckets (the rate limiter's token buckets: every process using the
 * ledger takes its tokens here, and a restart does not refill them),
 * messages (an agent session's conversation), eval_runs (toolgate eval:
 * who was tested on what, and how it scored).  The schema
 * version lives in PRAGMA user_version; an older ledger is upgraded in
 * place, a newer one is refused.
 *
 * Many toolgate processes share one ledger at once, so every write is one
 * BEGIN IMMEDIATE transaction (the writer lock is taken up front, waiting up
 * to TGI_BUSY_MS, never upgraded half-way), and an idempotency claim commits
 * with synchronous=FULL before any side effect may run.  Statements are
 * prepared once per handle and cached (st_sql below); one call's record is
 * one transaction with no extra queries: this is the hot path.  What it
 * costs is mostly the WAL pages it writes, so the schema touches few b-trees
 * per record (see the schema), and checkpoints run on a thread of the
 * handle rather than on the committing call (see sqlite_checkpoint.c).
 *
 * Idempotency row lifecycle (scope is the key):
 *
 *     (none) --claim--> in_flight --record DONE--> done      (replayed)
 *                           |  \---record RELEASE--> (none)   (may run again)
 *                           |   \--record UNKNOWN--> unknown
 *                           +--owner seen dead---> unknown   (never re-run)
 *     unknown | dead in_flight --resolve applied=1--> done
 *                              --resolve applied=0--> (none)
 *
 * A row marked unknown because its owner was seen dead keeps its owner
 * (`ops resolve` judges it as an in-flight one's: an owner on another host
 * may only have outrun its lease); one its owner settled unknown itself
 * loses it (no process runs it any more).
 *
 * The backend is three files (sqlite_int.h is what they share): this one,
 * the schema, the statements, open and close, the writes each call of the
 * table makes, the watches and the table; sqlite_checkpoint.c, the
 * checkpointer thread; sqlite_read.c, the log, stats, export and unknown
 * outcomes.
 *
 * Owns: the database connection, schema and migrations, cached statements,
 * the claim protocol and the writes, the watches.
 * Must not: decide policy, run tools, or build envelopes (the one it writes
 * itself is the minimal envelope of an op an operator settled as applied
 * when the process that ran it left no row, made by common.c); nor keep
 * its own copy of what common.c holds for both stores (the argument checks
 * and their sentences, a claim owner's liveness on this host, UUIDv7
 * times, the values both build alike).
 * A database error is -1 with a sentence, never an abort.
 */
#include "store/sqlite_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

/*
 * The schema is shaped by the hot path: a record writes every b-tree page it
 * touches to the WAL, whole, so it touches few.
 *
 * ops is a rowid table: a row carries the envelope (1-2 KB, more with a
 * large output), which fits a table leaf whole but would spill to an
 * overflow page in a WITHOUT ROWID table (whose rows should stay under
 * ~1/20 of a page); measured, the rowid table plus its op_id index writes
 * fewer pages and is faster.  Small columns come first so that a scan never
 * reads an overflowing envelope.  op_id is a UUIDv7 made by the gate (48
 * bits of unix ms first, in lowercase hex), so its index is in time order:
 * new rows append at its right edge, and `since` is an op_id range on it
 * (no started_ms index).  ops_tool serves `log --tool`: a full scan of a
 * million rows (2.4 GB) takes most of a second even from the page cache.
 * ops_status serves `log --status` but holds only the rows that are not
 * `persisted`, so an ordinary successful call never writes to it.
 *
 * events: seq is the rowid, not AUTOINCREMENT (no sqlite_sequence row to
 * update per record).  Events are append-only and never deleted, so a new
 * row's max(rowid) + 1 is never a seq seen before and seq stays a global,
 * gap-free order for `log --follow`.
 *
 * pins: one small row per bridged MCP tool, read once per tool each time a
 * server's tools are listed; a row is written when a tool is first seen or
 * an operator approves a change.
 *
 * Version 3 (the middleware).  ops_tool also carries status, started_ms
 * and duration_ms, so that `toolgate stats` reads that index alone (a few
 * MB for 100k calls) instead of every row with its envelope (~200 MB):
 * the entries grow by a few bytes, the pages a record writes stay the
 * same.  Loop windows are the newest calls of a session, read by every
 * call of the session: ops_session is (session, op_id, loop), so the
 * newest entries are read from the index alone, newest first, without a
 * sort; it also serves `log --session`.  Calls without a session have no
 * window.  The loop column comes last (ALTER TABLE appends it, after the
 * envelope), which is why the index carries it; a loop entry is short
 * (hashes and a status), so it fits an index entry.  rate_buckets is
 * WITHOUT ROWID: small rows looked up by their key.  The upgrade rebuilds
 * ops_tool, once, in the migration's transaction (seconds for a million
 * calls).
 *
 * Version 4 (toolgate agent).  messages: a session's conversation, one
 * row per history entry in the shape of one model API, numbered from 1 in
 * the session; WITHOUT ROWID so that an append and a resume read one range
 * of the primary key.  The entries are redacted before they get here.
 *
 * Version 5 (the console).  approvals.plan: the call's dry-run plan (a
 * JSON object, redacted; NULL when the tool has none), so an operator sees
 * what the call would do before deciding; approvals.decided_reason: what
 * the decider said.  Columns appended to a small table: the upgrade
 * rewrites nothing.
 *
 * Version 6 (toolgate eval).  eval_runs: one row per run of an eval suite
 * (a handful a day), its scores as columns (NULL: no rate) and its report
 * as JSON text; eval_runs_ts serves the history of every model, newest
 * first, eval_runs_model that of one model.  A new table: the upgrade
 * rewrites nothing.
 *
 * Version 7 (a record that cannot be forged).  ledger: the ledger's
 * identity, one row: a UUID, what it is bound to (the ledger file's real
 * path; a copy elsewhere is another ledger), when it was made, and its MAC
 * under the machine key (mac.c): a ledger whose identity does not verify
 * is foreign.  A `mac` column on each kind of row that carries authority
 * (approvals, idem, rate_buckets, pins): a row whose MAC does not verify
 * carries none.  Columns appended and a new one-row table: the upgrade
 * rewrites nothing; rows written before it have no MAC, and so no
 * authority.
 * Also in version 7: an idempotency key is the model's text and may
 * hold a secret: idem.scope and ops.idem_scope keep "sha256:" and the
 * sha256 hex of the scope (tgi_scope_digest), and the key in a kept
 * envelope, args or approval's args is masked.  The upgrade rewrites the
 * scopes of earlier rows (the same digest a new call's scope has, so they
 * still replay) and masks their keys, with two functions of ours
 * (register_functions); rows are found without parsing every envelope.
 *
 * Version 8 (a record of a few pages).  A call's record writes each b-tree
 * page it touches to the WAL, so it now touches two b-trees, at their right
 * edges.  ops is keyed by seq, the seq of the call's last event: its events
 * are a column of the row ([ts_ms, type, stage, data] each, oldest first)
 * and take the nev seqs up to it, so a record writes no events rows, and
 * the newest seq is the larger of the two rightmost rowids, ops' and
 * event_rows' (TGI_SEQ_NEWEST).  event_rows (the events table before
 * version 8) keeps the events written on their own (of no call, or after a
 * call's row: an after-hook's, an operator's resolve) and those of the
 * rows before version 8; it is written with seqs from the same count, so
 * seq stays one gap-free order in commit order.  events is now a view of
 * both, every event as one row as before, for whoever reads the ledger
 * with SQL (the readers here read the two apart, by seq range).  An ops row with no events (an operator's settling of a call that
 * left none; a row from before version 8) takes a seq below 0, outside
 * that order.  ops_id (op_id, tool, status, started_ms, duration_ms)
 * replaces both the op_id key's index and ops_tool: lookups by op id,
 * `since` ranges, and `toolgate stats` reading that index alone; `log
 * --tool` walks it newest first.  It is not UNIQUE (an op id index that
 * carries the other columns cannot be): a record looks the op id up first,
 * inside its write transaction.  idem is WITHOUT ROWID, keyed by scope
 * (one b-tree, not a table and the index of its key), and idem_op is gone:
 * a claim is found by its op id only by an operator (`ops resolve`, the
 * unknown outcomes), whose reads already walk the claims.  The upgrade
 * rebuilds ops and idem, once, in the migration's transaction: the rows
 * before it keep their envelopes and their events rows.
 *
 * Migration i takes user_version i to i + 1.
 */
static const char *const migrations[TGI_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE IF NOT EXISTS ops("
	"  op_id TEXT PRIMARY KEY, tool TEXT, status TEXT NOT NULL, started_ms INTEGER NOT NULL,"
	"  duration_ms REAL, call_id TEXT, session TEXT, principal TEXT, error_kind TEXT,"
	"  idem_scope TEXT, args_sha256 TEXT, args_redacted TEXT, envelope TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS ops_tool ON ops(tool, op_id);"
	"CREATE INDEX IF NOT EXISTS ops_status ON ops(status, op_id) WHERE status <> 'persisted';"
	"CREATE TABLE IF NOT EXISTS idem("
	"  scope TEXT PRIMARY KEY, op_id TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'unknown')),"
	"  owner_host TEXT, owner_pid INTEGER, owner_start INTEGER, lease_until_ms INTEGER,"
	"  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, binding TEXT);"
	"CREATE INDEX IF NOT EXISTS idem_op ON idem(op_id);"
	"CREATE TABLE IF NOT EXISTS events("
	"  seq INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, op_id TEXT,"
	"  type TEXT NOT NULL, stage TEXT, data TEXT);"
	"CREATE INDEX IF NOT EXISTS events_op ON events(op_id);"
	"CREATE TABLE IF NOT EXISTS approvals("
	"  id TEXT PRIMARY KEY, op_id TEXT, tool TEXT NOT NULL, principal TEXT NOT NULL,"
	"  binding TEXT NOT NULL, state TEXT NOT NULL, args TEXT, reason TEXT,"
	"  created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, decided_by TEXT,"
	"  decided_ms INTEGER);"
	"CREATE INDEX IF NOT EXISTS approvals_binding ON approvals(binding, principal, created_ms);"
	"CREATE TABLE IF NOT EXISTS sessions("
	"  id TEXT PRIMARY KEY, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,"
	"  calls INTEGER NOT NULL);",
	"CREATE TABLE IF NOT EXISTS pins("
	"  name TEXT PRIMARY KEY, digest TEXT NOT NULL, first_ms INTEGER NOT NULL,"
	"  updated_ms INTEGER NOT NULL) WITHOUT ROWID;",
	"ALTER TABLE ops ADD COLUMN loop TEXT;"
	"ALTER TABLE sessions ADD COLUMN manifest TEXT;"
	"CREATE TABLE IF NOT EXISTS rate_buckets("
	"  principal TEXT, tool TEXT, tokens REAL NOT NULL, updated_ms INTEGER NOT NULL,"
	"  PRIMARY KEY(principal, tool)) WITHOUT ROWID;"
	"DROP INDEX IF EXISTS ops_tool;"
	"CREATE INDEX ops_tool ON ops(tool, op_id, status, started_ms, duration_ms);"
	"CREATE INDEX IF NOT EXISTS ops_session ON ops(session, op_id, loop)"
	"  WHERE session IS NOT NULL;",
	"CREATE TABLE IF NOT EXISTS messages("
	"  session TEXT NOT NULL, seq INTEGER NOT NULL, api TEXT NOT NULL,"
	"  ts_ms INTEGER NOT NULL, entry TEXT NOT NULL,"
	"  PRIMARY KEY(session, seq)) WITHOUT ROWID;",
	("ALTER TABLE approvals ADD COLUMN plan TEXT;"
	 "ALTER TABLE approvals ADD COLUMN decided_reason TEXT;"),
	"CREATE TABLE IF NOT EXISTS eval_runs("
	"  id TEXT PRIMARY KEY, ts_ms INTEGER NOT NULL, provider TEXT, api TEXT, model TEXT,"
	"  profile TEXT, manifest TEXT, suite TEXT, cases INTEGER NOT NULL, runs INTEGER NOT NULL,"
	"  score_tool REAL, score_valid REAL, score_args REAL, score_policy REAL, score_pass REAL,"
	"  report TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS eval_runs_ts ON eval_runs(ts_ms, id);"
	"CREATE INDEX IF NOT EXISTS eval_runs_model ON eval_runs(model, ts_ms, id);",
	"UPDATE idem SET scope = toolgate_scope_digest(scope) WHERE scope NOT LIKE 'sha256:%';"
	"UPDATE ops SET idem_scope = toolgate_scope_digest(idem_scope)"
	"  WHERE idem_scope IS NOT NULL AND idem_scope NOT LIKE 'sha256:%';"
	"UPDATE ops SET envelope = json_set(envelope, '$.idempotency_key',"
	"    toolgate_key_mask(json_extract(envelope, '$.idempotency_key')))"
	"  WHERE instr(envelope, '\"idempotency_key\"') AND json_valid(envelope)"
	"    AND json_type(envelope, '$.idempotency_key') = 'text';"
	"UPDATE ops SET args_redacted = json_set(args_redacted, '$.idempotency_key',"
	"    toolgate_key_mask(json_extract(args_redacted, '$.idempotency_key')))"
	"  WHERE instr(args_redacted, '\"idempotency_key\"') AND json_valid(args_redacted)"
	"    AND json_type(args_redacted, '$.idempotency_key') = 'text';"
	"UPDATE approvals SET args = json_set(args, '$.idempotency_key',"
	"    toolgate_key_mask(json_extract(args, '$.idempotency_key')))"
	"  WHERE instr(args, '\"idempotency_key\"') AND json_valid(args)"
	"    AND json_type(args, '$.idempotency_key') = 'text';"
	"CREATE TABLE IF NOT EXISTS ledger("
	"  one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, bound TEXT NOT NULL,"
	"  created_ms INTEGER NOT NULL, mac TEXT NOT NULL);"
	"ALTER TABLE approvals ADD COLUMN mac TEXT;"
	"ALTER TABLE idem ADD COLUMN mac TEXT;"
	"ALTER TABLE rate_buckets ADD COLUMN mac TEXT;"
	"ALTER TABLE pins ADD COLUMN mac TEXT;",
	"CREATE TABLE ops_v8("
	"  seq INTEGER PRIMARY KEY, op_id TEXT NOT NULL, tool TEXT, status TEXT NOT NULL,"
	"  started_ms INTEGER NOT NULL, duration_ms REAL, call_id TEXT, session TEXT,"
	"  principal TEXT, error_kind TEXT, idem_scope TEXT, args_sha256 TEXT, loop TEXT,"
	"  args_redacted TEXT, events TEXT, envelope TEXT NOT NULL);"
	"INSERT INTO ops_v8(seq, op_id, tool, status, started_ms, duration_ms, call_id, session,"
	"    principal, error_kind, idem_scope, args_sha256, loop, args_redacted, envelope)"
	"  SELECT -row_number() OVER (ORDER BY op_id DESC), op_id, tool, status, started_ms,"
	"    duration_ms, call_id, session, principal, error_kind, idem_scope, args_sha256, loop,"
	"    args_redacted, envelope FROM ops ORDER BY op_id;"
	"DROP TABLE ops;"
	"ALTER TABLE ops_v8 RENAME TO ops;"
	"CREATE INDEX ops_id ON ops(op_id, tool, status, started_ms, duration_ms);"
	"CREATE INDEX ops_status ON ops(status, op_id) WHERE status <> 'persisted';"
	"CREATE INDEX ops_session ON ops(session, op_id, loop) WHERE session IS NOT NULL;"
	"CREATE TABLE idem_v8("
	"  scope TEXT PRIMARY KEY, op_id TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'unknown')),"
	"  owner_host TEXT, owner_pid INTEGER, owner_start INTEGER, lease_until_ms INTEGER,"
	"  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, binding TEXT, mac TEXT)"
	"  WITHOUT ROWID;"
	"INSERT INTO idem_v8 SELECT scope, op_id, state, owner_host, owner_pid, owner_start,"
	"  lease_until_ms, created_ms, updated_ms, binding, mac FROM idem;"
	"DROP TABLE idem;"
	"ALTER TABLE idem_v8 RENAME TO idem;"
	"ALTER TABLE events RENAME TO event_rows;"
	"CREATE VIEW events(seq, ts_ms, op_id, type, stage, data) AS"
	"  SELECT seq, ts_ms, op_id, type, stage, data FROM event_rows"
	"  UNION ALL"
	"  SELECT o.seq - json_array_length(o.events) + 1 + j.key, j.value ->> 0, o.op_id,"
	"    j.value ->> 1, j.value ->> 2, nullif(j.value -> 3, 'null')"
	"  FROM ops o, json_each(o.events) j WHERE o.events IS NOT NULL;",
};

/* Migration 7's functions (registered on every connection that may run
 * it).  toolgate_scope_digest(scope): tgi_scope_digest.  toolgate_key_mask
 * (key): a key as redact.c masked a secret when these rows were written
 * («redacted:» and 8 hex digits of its sha256), a mask left as it is. */
static void fn_scope_digest(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	char d[TGI_SCOPE_DIGEST_LEN + 1];
	const char *t = (const char *)sqlite3_value_text(argv[0]);
	(void)argc;
	if (!t) {
		sqlite3_result_null(cx);
		return;
	}
	tgi_scope_digest(t, d);
	sqlite3_result_text(cx, d, -1, SQLITE_TRANSIENT);
}

static void fn_key_mask(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	static const char pre[] = "\xC2\xABredacted:", suf[] = "\xC2\xBB";
	char hex[65], m[40];
	const char *t = (const char *)sqlite3_value_text(argv[0]);
	int n = sqlite3_value_bytes(argv[0]);
	(void)argc;
	if (!t) {
		sqlite3_result_null(cx);
		return;
	}
	if (n == (int)(sizeof pre - 1 + 8 + sizeof suf - 1) && !memcmp(t, pre, sizeof pre - 1)) {
		sqlite3_result_value(cx, argv[0]);
		return;
	}
	tgi_sha256_hex(t, (size_t)n, hex);
	tgi_snprintf(m, sizeof m, "%s%.8s%s", pre, hex, suf);
	sqlite3_result_text(cx, m, -1, SQLITE_TRANSIENT);
}

static int register_functions(sqlite3 *db)
{
	int fl = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY;
	int rc = sqlite3_create_function(db, "toolgate_scope_digest", 1, fl, NULL, fn_scope_digest,
	                                 NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "toolgate_key_mask", 1, fl, NULL, fn_key_mask, NULL,
		                             NULL);
	return rc;
}

/* One quick query per table at open: every column we use must exist and
 * the first page must read back. */
static const char *const verify_sql[] = {
	"SELECT seq, op_id, call_id, session, tool, principal, status, error_kind, idem_scope,"
	" args_redacted, args_sha256, envelope, started_ms, duration_ms, loop, events"
	" FROM ops LIMIT 1",
	"SELECT scope, op_id, state, owner_host, owner_pid, owner_start, lease_until_ms,"
	" created_ms, updated_ms, binding FROM idem LIMIT 1",
	"SELECT seq, ts_ms, op_id, type, stage, data FROM event_rows ORDER BY seq DESC LIMIT 1",
	"SELECT seq, ts_ms, op_id, type, stage, data FROM events LIMIT 1",
	"SELECT id, op_id, tool, principal, binding, state, args, reason, created_ms,"
	" expires_ms, decided_by, decided_ms, plan, decided_reason FROM approvals LIMIT 1",
	"SELECT id, first_ms, last_ms, calls, manifest FROM sessions LIMIT 1",
	"SELECT name, digest, first_ms, updated_ms FROM pins LIMIT 1",
	"SELECT principal, tool, tokens, updated_ms FROM rate_buckets LIMIT 1",
	"SELECT session, seq, api, ts_ms, entry FROM messages LIMIT 1",
	"SELECT " TGI_EVAL_COLS " FROM eval_runs LIMIT 1",
};
static const char *const st_sql[ST__COUNT] = { TGI_STORE_SQL(TGI_ST_SQL) };
/* ---- errors ---- */

/* Describe rc as a sentence a person can act on.  sys_errno is errno as
 * the failing call left it: SQLite does not always keep the system error
 * of a failed write to the WAL (EFBIG, ENOSPC), and it is what says why. */
static void describe(const sq *s, int rc, int sys_errno, char *out, size_t cap)
{
	int e = s->db ? sqlite3_system_errno(s->db) : 0;

	if (!e)
		e = sys_errno;

	switch (rc & 0xff) {
	case SQLITE_FULL:
		tgi_snprintf(out, cap, "the disk is full");
		break;
	case SQLITE_IOERR:
		if (e == EFBIG)
			tgi_snprintf(out, cap, "the ledger file is too large (the file size limit was reached)");
		else if (e == ENOSPC)
			tgi_snprintf(out, cap, "the disk is full");
		else if (e == EDQUOT)
			tgi_snprintf(out, cap, "the disk quota is exceeded");
		else
			tgi_snprintf(out, cap, "an I/O error occurred on the ledger (%s)",
			             e ? strerror(e) : sqlite3_errstr(rc));
		break;
	case SQLITE_READONLY:
		tgi_snprintf(out, cap,
		             "the ledger '%s' is read-only (the file and its directory must be writable by the current user)",
		             s->shown);
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		tgi_snprintf(out, cap, "the ledger is locked by another process for too long; try again");
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		tgi_snprintf(out, cap,
		             "the ledger file '%s' is not a valid database; move it aside (e.g. to '%s.corrupt') and run again to start a new ledger",
		             s->shown, s->shown);
		break;
	case SQLITE_NOMEM:
		tgi_snprintf(out, cap, "out of memory");
		break;
	case SQLITE_CANTOPEN:
		if (rc == SQLITE_CANTOPEN_SYMLINK)
			tgi_snprintf(out, cap, "the ledger path '%s' goes through a symlink; refusing to use it",
			             s->shown);
		else
			tgi_snprintf(out, cap,
			             "the ledger '%s' cannot be opened (the file and its directory must be writable by the current user)",
			             s->shown);
		break;
	default:
		tgi_snprintf(out, cap, "%s", s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		break;
	}
}

/* Fail with "<what>: <why>", rolling back any open transaction.  The
 * sentence is taken before the rollback, which resets the error state. */
__attribute__((format(printf, 5, 6)))
int tgi_sq_fail(sq *s, int rc, char *err, size_t errlen, const char *fmt, ...)
{
	char what[512], why[PATH_MAX + 256];
	int sys_errno = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	describe(s, rc, sys_errno, why, sizeof why);
	if (s->db)
		tgi_sq_tx_rollback(s);
	tgi_snprintf(err, errlen, "%s: %s", what, why);
	return -1;
}

/* ---- statements ---- */

/* Bind positional arguments by fmt: t text (NULL binds NULL), i int64_t,
 * f double.  Text is SQLITE_STATIC: it must outlive the step. */
static int bind_v(sqlite3_stmt *st, const char *fmt, va_list ap)
{
	int rc = SQLITE_OK;
	for (int i = 1; *fmt && rc == SQLITE_OK; fmt++, i++) {
		switch (*fmt) {
		case 't':
			rc = sqlite3_bind_text(st, i, va_arg(ap, const char *), -1, SQLITE_STATIC);
			break;
		case 'i':
			rc = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
			break;
		case 'f':
			rc = sqlite3_bind_double(st, i, va_arg(ap, double));
			break;
		default:
			rc = SQLITE_MISUSE;
			break;
		}
	}
	return rc;
}

void tgi_sq_st_reset(sq *s, enum st id)
{
	if (s->st[id]) {
		sqlite3_reset(s->st[id]);
		sqlite3_clear_bindings(s->st[id]);
	}
}

static int st_prepare(sq *s, enum st id)
{
	if (s->st[id])
		return SQLITE_OK;
	return sqlite3_prepare_v3(s->db, st_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &s->st[id], NULL);
}

/* Bind and step a cached statement once.  On SQLITE_ROW the row stays
 * readable until the caller's tgi_sq_st_reset; any other result is reset here.
 * Returns SQLITE_ROW, SQLITE_DONE or an error code. */
static int st_stepv(sq *s, enum st id, const char *fmt, va_list ap)
{
	TGI_STORE_HELD(&s->base);   /* the connection is NOMUTEX: one thread at a time */
	int rc = st_prepare(s, id);
	if (rc != SQLITE_OK)
		return rc;
	rc = bind_v(s->st[id], fmt, ap);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s->st[id]);
	if (rc != SQLITE_ROW)
		tgi_sq_st_reset(s, id);
	return rc;
}

int tgi_sq_st_step(sq *s, enum st id, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = st_stepv(s, id, fmt, ap);
	va_end(ap);
	return rc;
}

/* Run a statement to completion (no row wanted): SQLITE_OK or an error. */
static int st_run(sq *s, enum st id, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = st_stepv(s, id, fmt, ap);
	va_end(ap);
	if (rc == SQLITE_ROW) {
		tgi_sq_st_reset(s, id);
		rc = SQLITE_DONE;
	}
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Copy a text column into a fixed buffer ("" for NULL). */
static void col_copy(sqlite3_stmt *st, int i, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	tgi_snprintf(out, cap, "%s", t ? (const char *)t : "");
}

/* ---- transactions ---- */

void tgi_sq_tx_rollback(sq *s)
{
	if (!sqlite3_get_autocommit(s->db))
		st_run(s, ST_ROLLBACK, "");
}

static int tx_begin(sq *s)
{
	tgi_sq_tx_rollback(s); /* finish a rollback that failed earlier (out of memory) */
	return st_run(s, ST_BEGIN, "");
}

static int tx_commit(sq *s)
{
	int rc = st_run(s, ST_COMMIT, "");
	if (rc == SQLITE_OK)
		tgi_sq_ckpt_after_commit(s);
	return rc;
}

/* Claims commit with FULL; a handle opened FULL stays FULL. */
static int set_sync_full(sq *s, int full)
{
	if (s->sync_full)
		return SQLITE_OK;
	return st_run(s, full ? ST_SYNC_FULL : ST_SYNC_NORMAL, "");
}

/* ---- open ---- */

/* One-off query returning an integer or text in its first column. */
static int query_one(sqlite3 *db, const char *sql, int64_t *num, char *text, size_t cap)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (num)
			*num = sqlite3_column_int64(st, 0);
		if (text)
			col_copy(st, 0, text, cap);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Check the path, its directory and the SQLite side files, then open it
 * through the directory's real path (SQLITE_OPEN_NOFOLLOW refuses a
 * symlink anywhere in the path; the ledger's own directory and file were
 * just checked, the directories above belong to the user). */
static int open_db(sq *s, const char *path, char *err, size_t errlen)
{
	static const char *const side[] = { "", "-wal", "-shm", "-journal" };
	char dir[PATH_MAX], real[PATH_MAX], file[PATH_MAX], what[PATH_MAX + 32];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;

	if (s->memory) {
		int rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
		                                             SQLITE_OPEN_NOMUTEX, NULL);
		if (rc != SQLITE_OK)
			return tgi_sq_fail(s, s->db ? sqlite3_extended_errcode(s->db) : rc, err, errlen,
			                   "cannot open an empty ledger in memory");
		sqlite3_extended_result_codes(s->db, 1);
		return 0;
	}

	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		tgi_snprintf(err, errlen, "the ledger path '%s' names a directory, not a file", s->shown);
		return -1;
	}
	if (!slash)
		tgi_snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		tgi_snprintf(dir, sizeof dir, "/");
	else
		tgi_snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);

	char shown_dir[PATH_MAX];
	tgi_snprintf(what, sizeof what, "the ledger directory '%s'",
	             tgi_quoted(shown_dir, sizeof shown_dir, dir));
	if (tgi_state_check_path(dir, 1, 0, what, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(side); i++) {
		tgi_snprintf(file, sizeof file, "%s%s", path, side[i]);
		tgi_snprintf(what, sizeof what, "the ledger file '%s%s'", s->shown, side[i]);
		if (tgi_state_check_path(file, 0, 1, what, err, errlen) < 0)
			return -1;
	}
	if (!realpath(dir, real)) {
		tgi_snprintf(err, errlen, "cannot resolve the ledger directory '%s': %s", shown_dir,
		             strerror(errno));
		return -1;
	}
	int n = snprintf(file, sizeof file, "%s/%s", strcmp(real, "/") ? real : "", base);
	if (n < 0 || (size_t)n >= sizeof file) {
		tgi_snprintf(err, errlen, "the ledger path '%s' is too long", s->shown);
		return -1;
	}

	/* Create it ourselves so that it (and so its -wal and -shm, which
	 * SQLite gives the same mode) is 0600: it holds call records. */
	int fd = s->must_exist ? -1
	       : open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
	} else if (!s->must_exist && errno != EEXIST) {
		tgi_snprintf(err, errlen, "cannot create the ledger '%s': %s", s->shown, strerror(errno));
		return -1;
	}

	tgi_snprintf(s->file, sizeof s->file, "%s", file);
	/* a ledger that must exist is opened read-write all the same (WAL
	 * readers need the -shm), but never made */
	int rc = sqlite3_open_v2(file, &s->db,
	                         SQLITE_OPEN_READWRITE | (s->must_exist ? 0 : SQLITE_OPEN_CREATE) |
	                                 SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
	                         NULL);
	if (rc == SQLITE_CANTOPEN && s->must_exist && access(file, F_OK) < 0 && errno == ENOENT) {
		tgi_snprintf(err, errlen, "there is no ledger at '%s'", s->shown);
		return -1;
	}
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, s->db ? sqlite3_extended_errcode(s->db) : rc, err, errlen,
		                   "cannot open the ledger");
	sqlite3_extended_result_codes(s->db, 1);
	if (sqlite3_db_readonly(s->db, "main") == 1) {
		tgi_snprintf(err, errlen, "the ledger file '%s' is not writable by the current user",
		             s->shown);
		return -1;
	}
	return 0;
}

/* The file is an SQLite database, but not a ledger (or one damaged by
 * hand): another program's tables, or ours without the columns we use. */
static int not_a_ledger(sq *s, char *err, size_t errlen)
{
	tgi_snprintf(err, errlen,
	             "the ledger '%s' does not have the tables toolgate expects (%s); move it aside and run again to start a new ledger",
	             s->shown, sqlite3_errmsg(s->db));
	tgi_sq_tx_rollback(s);
	return -1;
}

static int schema_ahead(sq *s, int64_t v, char *err, size_t errlen)
{
	tgi_snprintf(err, errlen,
	             "the ledger '%s' has schema version %lld, newer than this toolgate understands (%d); upgrade toolgate or use another ledger",
	             s->shown, (long long)v, TGI_STORE_SCHEMA_VERSION);
	return -1;
}

static int sq_schema_version(tgi_store *base, int *version, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	int64_t v = 0;
	int rc = query_one(s->db, "PRAGMA user_version", &v, NULL, 0);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger schema");
	*version = (int)(v < 0 || v > INT_MAX ? -1 : v);
	return 0;
}

/* Migrations from the current version up to `to`, told to fn before each;
 * dry_run tells without applying.  Each step is one transaction taken with
 * the writer lock (so that two processes upgrading one ledger apply each
 * once) — or, with whole, all steps are one transaction, so that a ledger
 * upgraded at open is either as it was or current. */
static int migrate_to(sq *s, int to, int dry_run, int whole, void (*fn)(void *, int), void *arg,
                      char *err, size_t errlen)
{
	int64_t v = 0;
	int rc = query_one(s->db, "PRAGMA user_version", &v, NULL, 0);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger schema");
	if (v > TGI_STORE_SCHEMA_VERSION || v < 0)
		return schema_ahead(s, v, err, errlen);
	if (to < v) {
		tgi_snprintf(err, errlen,
		             "the ledger '%s' is at schema version %lld; migrations only go forward",
		             s->shown, (long long)v);
		return -1;
	}
	int open_tx = 0;
	for (; v < to; v++) {
		if (dry_run) {
			if (fn)
				fn(arg, (int)v + 1);
			continue;
		}
		if (!open_tx) {
			/* again under the writer lock: another process may have done it */
			int64_t now = 0;
			rc = tx_begin(s);
			if (rc == SQLITE_OK)
				rc = query_one(s->db, "PRAGMA user_version", &now, NULL, 0);
			if (rc != SQLITE_OK)
				return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger schema");
			if (now > v) {   /* done by another process meanwhile */
				tgi_sq_tx_rollback(s);
				v = now - 1;
				continue;
			}
			open_tx = 1;
		}
		if (fn)
			fn(arg, (int)v + 1);
		char sql[64];
		tgi_snprintf(sql, sizeof sql, "PRAGMA user_version = %d", (int)v + 1);
		rc = sqlite3_exec(s->db, migrations[v], NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK && (!whole || v + 1 == to)) {
			rc = tx_commit(s);
			open_tx = 0;
		}
		if ((rc & 0xff) == SQLITE_ERROR)
			return not_a_ledger(s, err, errlen);
		if (rc != SQLITE_OK)
			return tgi_sq_fail(s, sqlite3_extended_errcode(s->db), err, errlen,
			                   "cannot apply migration %d to the ledger", (int)v + 1);
	}
	return 0;
}

static int sq_migrate(tgi_store *base, int to, int dry_run, void (*fn)(void *, int), void *arg,
                      char *err, size_t errlen)
{
	return migrate_to((sq *)base, to, dry_run, 0, fn, arg, err, errlen);
}

/* At open: bring the schema up to date (unless told not to), or refuse a
 * newer one. */
static int migrate(sq *s, char *err, size_t errlen)
{
	int v;
	if (sq_schema_version(&s->base, &v, err, errlen) < 0)
		return -1;
	if (v < 0 || v > TGI_STORE_SCHEMA_VERSION)
		return schema_ahead(s, v, err, errlen);
	if (v == TGI_STORE_SCHEMA_VERSION || s->no_migrate)
		return 0;
	return migrate_to(s, TGI_STORE_SCHEMA_VERSION, 0, 1, NULL, NULL, err, errlen);
}

static int verify(sq *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(verify_sql); i++) {
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(s->db, verify_sql[i], -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW || rc == SQLITE_DONE)
				rc = SQLITE_OK;
			else
				rc = sqlite3_extended_errcode(s->db);
		}
		sqlite3_finalize(st);
		if ((rc & 0xff) == SQLITE_ERROR)
			return not_a_ledger(s, err, errlen);
		if (rc != SQLITE_OK)
			return tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger");
	}
	return 0;
}

static int setup(sq *s, char *err, size_t errlen)
{
	static const enum st eager[] = { ST_BEGIN, ST_COMMIT, ST_ROLLBACK };
	char mode[16];
	int rc;

	sqlite3_busy_timeout(s->db, TGI_BUSY_MS);
	if ((rc = register_functions(s->db)) != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot set up the ledger");
	/* The first read: a file that is not a database fails here.  Putting
	 * a new file in WAL mode needs an exclusive lock, and when several
	 * processes open a new ledger at once SQLite answers SQLITE_BUSY at
	 * once instead of calling the busy handler (waiting there could
	 * deadlock two readers that both want to write): wait here instead. */
	double deadline = tgi_now_ms() + TGI_BUSY_MS;
	while ((rc = query_one(s->db, "PRAGMA journal_mode = WAL", NULL, mode, sizeof mode)) != SQLITE_OK &&
	       (rc & 0xff) == SQLITE_BUSY && tgi_now_ms() < deadline)
		sqlite3_sleep(1 + (int)(getpid() % 8));
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot open the ledger");
	if (strcasecmp(mode, s->memory ? "memory" : "wal") != 0) {
		tgi_snprintf(err, errlen, "cannot put the ledger '%s' in WAL mode (it stays in '%s' mode)",
		             s->shown, mode);
		return -1;
	}
	/* the gate appends: the pages it touches are the rightmost few of each
	 * tree, so a small page cache (1 MiB, not SQLite's 2) costs no speed */
	rc = sqlite3_exec(s->db, s->sync_full ? "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;"
	                                        " PRAGMA cache_size = -1024"
	                                      : "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;"
	                                        " PRAGMA cache_size = -1024",
	                  NULL, NULL, NULL);
	/* replaces SQLite's automatic checkpoint (see "checkpoints") */
	sqlite3_wal_hook(s->db, tgi_sq_wal_hook, s);
	/* Transaction control is prepared now so that a rollback never needs
	 * memory it might not get. */
	for (size_t i = 0; rc == SQLITE_OK && i < TGI_ARRAY_LEN(eager); i++)
		rc = st_prepare(s, eager[i]);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, sqlite3_extended_errcode(s->db), err, errlen, "cannot open the ledger");
	int v;
	if (migrate(s, err, errlen) < 0 || sq_schema_version(&s->base, &v, err, errlen) < 0)
		return -1;
	/* a schema left behind (TGI_STORE_NO_MIGRATE) has not all the columns yet */
	return v == TGI_STORE_SCHEMA_VERSION ? verify(s, err, errlen) : 0;
}

static const tgi_store_impl sqlite_impl;
static void sq_close(tgi_store *base);

int tgi_sqlite_open(const char *path, int flags, tgi_store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (strlen(path) >= PATH_MAX - 16) {
		tgi_snprintf(err, errlen, "the ledger path is too long (at most %d bytes)", PATH_MAX - 16);
		return -1;
	}
	sq *s = tgi_xcalloc(1, sizeof *s);
	tgi_store_init(&s->base, &sqlite_impl);
	s->sync_full = flags & TGI_STORE_SYNC_FULL ? 1 : 0;
	s->no_migrate = flags & TGI_STORE_NO_MIGRATE ? 1 : 0;
	s->must_exist = flags & TGI_STORE_MUST_EXIST ? 1 : 0;
	s->memory = flags & TGI_STORE_MEMORY ? 1 : 0;
	pthread_mutex_init(&s->ckpt.mu, NULL);
	pthread_cond_init(&s->ckpt.cv, NULL);
	s->ckpt.sync_full = s->sync_full;
	s->ckpt.wake_at = TGI_CKPT_FRAMES;
	atomic_init(&s->ckpt.phase, CKPT_WAITING);
	tgi_self_init(&s->me);
	tgi_sanitize(s->shown, sizeof s->shown, path);
	if (open_db(s, path, err, errlen) < 0 || setup(s, err, errlen) < 0) {
		sq_close(&s->base);
		return -1;
	}
	*out = &s->base;
	return 0;
}

static void sq_close(tgi_store *base)
{
	sq *s = (sq *)base;
	tgi_sq_ckpt_stop(s);
	if (s->db && s->wal_frames >= TGI_CKPT_FRAMES)
		tgi_sq_ckpt_here(s);
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close_v2(s->db);
	/* a fork child's copy of a running thread's mutex may be held: leave it */
	if (!s->ckpt.started) {
		pthread_mutex_destroy(&s->ckpt.mu);
		pthread_cond_destroy(&s->ckpt.cv);
	}
	tgi_store_fini(&s->base);
	free(s);
}

/* A file does not go away and come back: no failure is transient. */
static int sq_transient(const tgi_store *base)
{
	(void)base;
	return 0;
}

/* ---- the ledger's identity (identity.c) ---- */

static const char *sq_shown(const tgi_store *base)
{
	return ((const sq *)base)->shown;
}

/* The ledger file's real path: a copy elsewhere is another ledger. */
static int sq_ident_bound(tgi_store *base, char *out, size_t cap, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	if (!s->file[0] || strlen(s->file) >= cap) {
		tgi_snprintf(err, errlen, "the ledger '%s' has no path to bind its identity to",
		             s->shown);
		return -1;
	}
	tgi_snprintf(out, cap, "%s", s->file);
	return 0;
}

static int sq_ident_get(tgi_store *base, tgi_ledger_ident *id, int *found, char *err,
                        size_t errlen)
{
	sq *s = (sq *)base;
	sqlite3_stmt *st = NULL;
	memset(id, 0, sizeof *id);
	*found = 0;
	int rc = sqlite3_prepare_v2(s->db, "SELECT id, bound, created_ms, mac FROM ledger WHERE one = 1",
	                            -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		col_copy(st, 0, id->id, sizeof id->id);
		col_copy(st, 1, id->bound, sizeof id->bound);
		id->created_ms = sqlite3_column_int64(st, 2);
		col_copy(st, 3, id->mac, sizeof id->mac);
		*found = 1;
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	} else {
		rc = sqlite3_extended_errcode(s->db);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : tgi_sq_fail(s, rc, err, errlen, "cannot read the ledger's identity");
}

static int sq_ident_put(tgi_store *base, const tgi_ledger_ident *id, int adopt, int *made,
                        tgi_ledger_rows *rows, char *err, size_t errlen)
{
	static const char count_sql[] =
		"SELECT (SELECT count(*) FROM ops), (SELECT count(*) FROM events),"
		" (SELECT count(*) FROM approvals), (SELECT count(*) FROM idem),"
		" (SELECT count(*) FROM pins), (SELECT count(*) FROM rate_buckets),"
		" (SELECT count(*) FROM ledger)";
	sq *s = (sq *)base;
	sqlite3_stmt *st = NULL;
	int64_t n[7] = {0};
	*made = 0;
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, count_sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < 7; i++)
			n[i] = sqlite3_column_int64(st, i);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rows)
		*rows = (tgi_ledger_rows){ n[0], n[1], n[2], n[3], n[4], n[5] };
	int64_t records = n[0] + n[1] + n[2] + n[3] + n[4] + n[5];
	if (rc == SQLITE_OK && !adopt && (n[6] || records)) {
		*made = n[6] ? 0 : -1;
		tgi_sq_tx_rollback(s);
		return 0;
	}
	if (rc == SQLITE_OK && adopt)
		rc = sqlite3_exec(s->db, "DELETE FROM ledger", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, "INSERT INTO ledger(one, id, bound, created_ms, mac)"
		                               " VALUES (1, ?1, ?2, ?3, ?4)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, id->bound, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, id->created_ms);
		sqlite3_bind_text(st, 4, id->mac, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : sqlite3_extended_errcode(s->db);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot write the ledger's identity");
	*made = 1;
	return 0;
}

/* ---- ops + events ---- */

/* The events of one call as its ops row keeps them: a JSON array of
 * [ts_ms, type, stage, data] (stage and data null when there are none),
 * oldest first.  NULL when they cannot be encoded (out of memory). */
static char *events_text(const tgi_event *ev, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *e = json_pack("[I, s, s?, O?]", (json_int_t)ev[i].ts_ms, ev[i].type,
		                      ev[i].stage, ev[i].data);
		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	char *t = a ? json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(a);
	return t;
}

/* scope -> done with op_id, its MAC over binding and the envelope the op
 * row holds (rowmac.c). */
static int idem_done(sq *s, const char *scope, const char *op_id, const char *binding,
                     const char *envelope, int64_t now)
{
	char mac[65];
	tgi_mac_idem(&s->base, scope, op_id, binding, "done", envelope, mac);
	return st_run(s, ST_IDEM_DONE, "ttitt", scope, op_id, now,
	              binding && *binding ? binding : NULL, tgi_mac_col(mac));
}

static int settle(sq *s, const tgi_op_record *op, const char *scope, tgi_idem_settle how,
                  int64_t now)
{
	const char *op_id = op->op_id;
	switch (how) {
	case TGI_SETTLE_DONE:
		return idem_done(s, scope, op_id, op->idem_binding, op->envelope, now);
	case TGI_SETTLE_RELEASE:
		return st_run(s, ST_IDEM_RELEASE, "tt", scope, op_id);
	case TGI_SETTLE_UNKNOWN:
		return st_run(s, ST_IDEM_UNKNOWN, "tti", scope, op_id, now);
	case TGI_SETTLE_NONE:
		break;
	}
	return SQLITE_OK;
}

/* The writes of one call's record, inside the transaction sq_record
 * holds: the ops row with its events (seq: the last event's, so the
 * events are the nev seqs up to it), the session, the claim.  The op id is
 * checked first: ops_id is not a unique index (see the schema). */
static int record_body(sq *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
                       const char *idem_scope, tgi_idem_settle how, int64_t now)
{
	int rc = tgi_sq_st_step(s, ST_OP_EXISTS, "t", op->op_id);
	if (rc == SQLITE_ROW) {
		tgi_sq_st_reset(s, ST_OP_EXISTS);
		return SQLITE_CONSTRAINT_PRIMARYKEY;
	}
	if (rc != SQLITE_DONE)
		return rc;
	char *events = nev ? events_text(ev, nev) : NULL;
	if (nev && !events)
		return SQLITE_NOMEM;
	rc = st_run(s, ST_OP_INSERT, "tttttttttttiftit", op->op_id, op->call_id, op->session,
	            op->tool, op->principal, op->status, op->error_kind, op->idem_scope,
	            op->args_redacted, op->args_sha256, op->envelope, (int64_t)op->started_ms,
	            op->duration_ms, op->loop, (int64_t)nev, events);
	free(events);
	if (rc == SQLITE_OK) {
		int64_t last = sqlite3_last_insert_rowid(s->db);
		for (size_t i = 0; i < nev; i++)
			ev[i].seq = last - (int64_t)(nev - 1 - i);
	}
	if (rc == SQLITE_OK && op->session)
		rc = st_run(s, ST_SESSION_UPSERT, "tit", op->session, (int64_t)op->started_ms,
		            op->manifest);
	if (rc == SQLITE_OK && idem_scope)
		rc = settle(s, op, idem_scope, how, now);
	return rc;
}

static int sq_record(tgi_store *base, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle how, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	if (tgi_check_record(op, ev, nev, idem_scope, how, err, errlen) < 0)
		return -1;
	int64_t now = tgi_unix_ms();
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = record_body(s, op, ev, nev, idem_scope, how, now);
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK) {
		for (size_t i = 0; i < nev; i++)
			ev[i].seq = 0; /* rolled back: those seqs were never written */
	}
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
		tgi_sq_tx_rollback(s);
		tgi_snprintf(err, errlen, "op '%s' is already in the ledger", op->op_id);
		return -1;
	}
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot record op '%s'", op->op_id);
	return 0;
}

/* ---- group commit (group.c): several ops' records in one transaction ---- */

static int sq_batch_begin(tgi_store *base, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	int rc = tx_begin(s);
	return rc == SQLITE_OK ? 0 : tgi_sq_fail(s, rc, err, errlen, "cannot record ops");
}

/* One op in the batch, under a savepoint of its own, so that it fails
 * alone: 0; -1 with err (the batch goes on without it); -2 when its
 * failure took the whole transaction with it (nothing of the batch is
 * left to commit). */
static int sq_batch_record(tgi_store *base, const tgi_op_record *op, tgi_event *ev, size_t nev,
                           const char *idem_scope, tgi_idem_settle how, char *err,
                           size_t errlen)
{
	sq *s = (sq *)base;
	char why[PATH_MAX + 256];
	if (tgi_check_record(op, ev, nev, idem_scope, how, err, errlen) < 0)
		return -1;
	int rc = sqlite3_exec(s->db, "SAVEPOINT rec", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = record_body(s, op, ev, nev, idem_scope, how, tgi_unix_ms());
	if (rc == SQLITE_OK && sqlite3_exec(s->db, "RELEASE rec", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	for (size_t i = 0; i < nev; i++)
		ev[i].seq = 0;
	describe(s, rc, errno, why, sizeof why);
	if (sqlite3_get_autocommit(s->db) ||
	    sqlite3_exec(s->db, "ROLLBACK TO rec; RELEASE rec", NULL, NULL, NULL) != SQLITE_OK) {
		tgi_sq_tx_rollback(s);
		return -2;
	}
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		tgi_snprintf(err, errlen, "op '%s' is already in the ledger", op->op_id);
	else
		tgi_snprintf(err, errlen, "cannot record op '%s': %s", op->op_id, why);
	return -1;
}

static int sq_batch_commit(tgi_store *base, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	int rc = tx_commit(s);
	return rc == SQLITE_OK ? 0 : tgi_sq_fail(s, rc, err, errlen, "cannot record ops");
}

/* ---- what middleware keeps across processes and restarts ---- */

static int sq_session_manifest(tgi_store *base, const char *session, char out[65], char *err,
                               size_t errlen)
{
	sq *s = (sq *)base;
	out[0] = '\0';
	if (!session)
		return 0;
	int rc = tgi_sq_st_step(s, ST_SESSION_MANIFEST, "t", session);
	if (rc == SQLITE_ROW) {
		col_copy(s->st[ST_SESSION_MANIFEST], 0, out, 65);
		tgi_sq_st_reset(s, ST_SESSION_MANIFEST);
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE) {
		char q[80];
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the manifest of session '%s'",
		                   tgi_quoted(q, sizeof q, session));
	}
	return 0;
}

/* Served by ops_session (see the schema): the newest entries of one index
 * range, no sort. */
static int sq_loop_window(tgi_store *base, const char *session, size_t limit, tgi_strv *out,
                          char *err, size_t errlen)
{
	sq *s = (sq *)base;
	enum st id = ST_LOOP_SESSION;
	if (tgi_check_loop_window(session, err, errlen) < 0)
		return -1;
	if (!limit)
		return 0;
	int rc = tgi_sq_st_step(s, id, "ti", session, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(s->st[id])) {
		const unsigned char *t = sqlite3_column_text(s->st[id], 0);
		if (!t) {
			rc = SQLITE_NOMEM; /* the query asks only for rows with an entry */
			break;
		}
		tgi_strv_push(out, tgi_strdup((const char *)t));
	}
	tgi_sq_st_reset(s, id);
	if (rc != SQLITE_DONE) {
		char q[80];
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the loop window of session '%s'",
		                   tgi_quoted(q, sizeof q, session));
	}
	return 0;
}

static int sq_bucket_get(tgi_store *base, const char *principal, const char *tool, double *tokens,
                         int64_t *updated_ms, int *found, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	*found = 0;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	int rc = tgi_sq_st_step(s, ST_BUCKET_GET, "tt", principal, tool);
	if (rc == SQLITE_ROW) {
		char mac[65];
		*tokens = sqlite3_column_double(s->st[ST_BUCKET_GET], 0);
		*updated_ms = sqlite3_column_int64(s->st[ST_BUCKET_GET], 1);
		col_copy(s->st[ST_BUCKET_GET], 2, mac, sizeof mac);
		/* one that does not verify is as a fresh bucket (as if deleted) */
		*found = tgi_mac_bucket_ok(&s->base, principal, tool, *tokens, *updated_ms, mac);
		tgi_sq_st_reset(s, ST_BUCKET_GET);
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE) {
		char q[80];
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the rate-limit bucket of '%s'",
		                   tgi_quoted(q, sizeof q, tool));
	}
	return 0;
}

/* The one take (tgi_bucket_step), inside the caller's write transaction
 * (BEGIN IMMEDIATE: no other process writes between the read and the
 * write).  All the bucket's SQL. */
static int bucket_take_tx(sq *s, const char *principal, const char *tool, double rate,
                          double burst, int want, int64_t now, int *took, double *left)
{
	double stored = 0;
	int64_t at = now;
	int found = 0;
	int rc = tgi_sq_st_step(s, ST_BUCKET_GET, "tt", principal, tool);
	if (rc == SQLITE_ROW) {
		char mac[65];
		stored = sqlite3_column_double(s->st[ST_BUCKET_GET], 0);
		at = sqlite3_column_int64(s->st[ST_BUCKET_GET], 1);
		col_copy(s->st[ST_BUCKET_GET], 2, mac, sizeof mac);
		tgi_sq_st_reset(s, ST_BUCKET_GET);
		found = tgi_mac_bucket_ok(&s->base, principal, tool, stored, at, mac);
	} else if (rc != SQLITE_DONE) {
		return rc;
	}
	if (!tgi_bucket_step(stored, at, found, now, rate, burst, want, took, left))
		return SQLITE_OK;
	char mac[65];
	tgi_mac_bucket(&s->base, principal, tool, *left, now, mac);
	return st_run(s, ST_BUCKET_SET, "ttfit", principal, tool, *left, now, tgi_mac_col(mac));
}

static int sq_bucket_take(tgi_store *base, const char *principal, const char *tool, double rate,
                          double burst, int want, int *took, double *left, double *retry_after_s, char *err,
                          size_t errlen)
{
	sq *s = (sq *)base;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = bucket_take_tx(s, principal, tool, rate, burst, want, tgi_unix_ms(), took, left);
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK) {
		char q[80];
		*took = 0;
		return tgi_sq_fail(s, rc, err, errlen, "cannot take from the rate-limit bucket of '%s'",
		                   tgi_quoted(q, sizeof q, tool));
	}
	if (!*took) {
		double ms = ceil((*left < 1 ? 1 - *left : 0) * 1000 / rate);
		*retry_after_s = (ms < 1 ? 1 : ms) / 1000;
	}
	return 0;
}

/* ---- idempotency ---- */

/* Is the owner of an in_flight row (or of an unknown one another process
 * marked so) still running it?  On this host, as tgi_owner_here_alive
 * says; for other hosts (tgi_owner_same_host), the lease decides.  A row
 * its owner settled unknown itself has no owner left: not running. */
int tgi_sq_owner_alive(sq *s, const struct owner *o, int64_t now)
{
	if (!tgi_owner_same_host(&s->me, o->host))
		return o->lease_until > now;
	return tgi_owner_here_alive(o->pid, o->start, o->lease_until > now);
}

void tgi_sq_read_owner(sqlite3_stmt *st, int col, struct owner *o)
{
	col_copy(st, col, o->host, sizeof o->host);
	o->pid = sqlite3_column_int64(st, col + 1);
	o->start = sqlite3_column_type(st, col + 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, col + 2);
	o->lease_until = sqlite3_column_int64(st, col + 3);
}

static int load_envelope(sq *s, const char *op_id, char **out)
{
	int rc = tgi_sq_st_step(s, ST_OP_ENVELOPE, "t", op_id);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s->st[ST_OP_ENVELOPE], 0);
		*out = t ? tgi_strdup((const char *)t) : NULL;
		rc = t || sqlite3_column_type(s->st[ST_OP_ENVELOPE], 0) == SQLITE_NULL ? SQLITE_DONE
		                                                                       : SQLITE_NOMEM;
		tgi_sq_st_reset(s, ST_OP_ENVELOPE);
	}
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int use_in_tx(sq *s, const char *id, const char *principal, const char *binding,
                     int64_t now, int *used);

/* The row found was judged from its MAC: one that does not verify (a done
 * row whose envelope is not the one its MAC covers, or one no gate with
 * the key wrote) has no owner and no result: unknown, for an operator to
 * settle, and marked so, so that `ops resolve` finds it. */
static int claim_row(sq *s, const char *scope, const char *binding, int64_t now,
                     tgi_idem_info *info)
{
	sqlite3_stmt *st = s->st[ST_IDEM_GET];
	char state[16], mac[65], bound[65] = "";
	struct owner o;
	col_copy(st, 0, info->op_id, sizeof info->op_id);
	col_copy(st, 1, state, sizeof state);
	tgi_sq_read_owner(st, 2, &o);
	col_copy(st, 6, bound, sizeof bound);
	col_copy(st, 7, mac, sizeof mac);
	tgi_sq_st_reset(s, ST_IDEM_GET);

	int rc = SQLITE_OK, done = !strcmp(state, "done"), flying = !strcmp(state, "in_flight");
	if (done)
		rc = load_envelope(s, info->op_id, &info->envelope);
	if (rc != SQLITE_OK)
		return rc;
	if ((done || flying) && !tgi_mac_idem_ok(&s->base, scope, info->op_id, bound, state,
	                                          info->envelope, mac)) {
		free(info->envelope);
		info->envelope = NULL;
		info->state = TGI_IDEM_UNKNOWN;
		info->unverified = 1;
		return st_run(s, ST_IDEM_UNKNOWN, "tti", scope, info->op_id, now);
	}
	if (binding && bound[0] && strcmp(binding, bound)) {
		/* the same key for a different call: never someone else's result */
		info->state = TGI_IDEM_CONFLICT;
	} else if (done) {
		info->state = TGI_IDEM_DONE;
		return SQLITE_OK;
	} else if (flying && tgi_sq_owner_alive(s, &o, now)) {
		info->state = TGI_IDEM_IN_FLIGHT;
		info->retry_after_s = tgi_retry_after(o.lease_until, now);
	} else {
		/* A dead owner's row turns unknown now, so the answer is
		 * the same whoever asks next. */
		info->state = TGI_IDEM_UNKNOWN;
		if (flying)
			rc = st_run(s, ST_IDEM_MARK_UNKNOWN, "tti", scope, info->op_id, now);
	}
	free(info->envelope);
	info->envelope = NULL;
	return rc;
}

static int claim_tx(sq *s, const char *scope, const char *op_id, const char *binding,
                    int lease_s, const tgi_approval_spend *spend, tgi_idem_info *info)
{
	int64_t now = tgi_unix_ms();
	int rc = tx_begin(s);
	if (rc != SQLITE_OK)
		return rc;
	rc = tgi_sq_st_step(s, ST_IDEM_GET, "t", scope);
	if (rc == SQLITE_DONE) {
		int64_t lease_until = now + (int64_t)(lease_s > 0 ? lease_s : 1) * 1000;
		int64_t start = tgi_self_start(&s->me);   /* first: it also renews me.host */
		char mac[65];
		tgi_mac_idem(&s->base, scope, op_id, binding, "in_flight", NULL, mac);
		rc = st_run(s, ST_IDEM_INSERT, "tttiiiitt", scope, op_id, s->me.host,
		            (int64_t)getpid(), start, lease_until, now, binding, tgi_mac_col(mac));
		info->state = TGI_IDEM_CLAIMED;
		tgi_snprintf(info->op_id, sizeof info->op_id, "%s", op_id);
		int used = 1;
		if (rc == SQLITE_OK && spend)
			rc = use_in_tx(s, spend->id, spend->principal, spend->binding, now, &used);
		if (rc == SQLITE_OK && used != 1) {
			/* the approval is gone: neither the claim nor anything else */
			tgi_sq_tx_rollback(s);
			info->state = TGI_IDEM_UNAPPROVED;
			return SQLITE_OK;
		}
	} else if (rc == SQLITE_ROW) {
		rc = claim_row(s, scope, binding, now, info);
	}
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	return rc;
}

static int sq_idem_claim(tgi_store *base, const char *scope, const char *op_id, const char *binding,
                         int lease_s, const tgi_approval_spend *spend, tgi_idem_info *info,
                         char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char q[96];

	memset(info, 0, sizeof *info);
	if (tgi_check_scope(scope, err, errlen) < 0 || tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	int rc = set_sync_full(s, 1);
	if (rc == SQLITE_OK)
		rc = claim_tx(s, scope, op_id, binding, lease_s, spend, info);
	if (rc != SQLITE_OK) {
		tgi_sq_fail(s, rc, err, errlen, "cannot claim idempotency scope '%s'",
		            tgi_quoted(q, sizeof q, scope));
		free(info->envelope);
		memset(info, 0, sizeof *info);
	}
	set_sync_full(s, 0); /* if this fails the handle is only slower */
	return rc == SQLITE_OK ? 0 : -1;
}

/* The op was applied: make its stored envelope say so, or, when the
 * process that ran it died before writing a row, insert a minimal one so
 * that a replay has something to return.  *kept (may be NULL) gets the
 * envelope the row holds then (caller frees; NULL for none). */
static int mark_applied(sq *s, const char *op_id, const char *scope, int64_t now, char **kept)
{
	char *text = NULL, *out = NULL;
	int rc = load_envelope(s, op_id, &text);
	if (rc != SQLITE_OK)
		return rc;
	int had_row = text != NULL;
	int made_env = tgi_applied_envelope(op_id, had_row, text, &out);
	if (made_env == 0) {
		/* not an object: leave the stored text as it is */
		if (kept)
			*kept = text;
		else
			free(text);
		return SQLITE_OK;
	}
	free(text);
	if (made_env < 0)
		return SQLITE_NOMEM;
	if (kept)
		*kept = tgi_strdup(out);
	int64_t made = tgi_uuid_ms(op_id); /* the op started when its id was made, not now */
	if (had_row)
		rc = st_run(s, ST_OP_SET_ENVELOPE, "tt", op_id, out);
	else
		rc = st_run(s, ST_OP_INSERT, "tttttttttttiftit", op_id, NULL, NULL, NULL, NULL,
		            "persisted", NULL, scope, NULL, NULL, out, made >= 0 ? made : now, 0.0,
		            NULL, (int64_t)0, NULL);
	free(out);
	return rc;
}

/* The end of a resolve whose settling gave rc: the operator's word as an
 * event (tool.call.resolved), and the commit. */
static int resolved(sq *s, const char *op_id, int applied, int rc, int64_t now, char *err,
                    size_t errlen)
{
	if (rc == SQLITE_OK)
		rc = st_run(s, ST_EVENT_INSERT, "itttt", now, op_id, "tool.call.resolved", NULL,
		            applied ? "{\"applied\":true}" : "{\"applied\":false}");
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot resolve op '%s'", op_id);
	return 0;
}

static int sq_op_resolve(tgi_store *base, const char *op_id, int applied, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char scope[TGI_SCOPE_MAX + 1], state[16], bound[65];
	struct owner o;

	if (tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	int64_t now = tgi_unix_ms();
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = tgi_sq_st_step(s, ST_IDEM_BY_OP, "t", op_id);
	if (rc == SQLITE_DONE) {
		/* no claim (a call without a key): an op whose outcome is unknown is
		 * settled by the record of the operator's word alone */
		rc = tgi_sq_st_step(s, ST_OP_UNSETTLED, "t", op_id);
		tgi_sq_st_reset(s, ST_OP_UNSETTLED);
		if (rc == SQLITE_DONE) {
			tgi_sq_tx_rollback(s);
			tgi_snprintf(err, errlen, "op '%s' has no unsettled idempotency claim and no "
			             "unknown outcome; nothing to resolve", op_id);
			return -1;
		}
		if (rc == SQLITE_ROW)
			rc = applied ? mark_applied(s, op_id, NULL, now, NULL) : SQLITE_OK;
		return resolved(s, op_id, applied, rc, now, err, errlen);
	}
	if (rc != SQLITE_ROW)
		return tgi_sq_fail(s, rc, err, errlen, "cannot resolve op '%s'", op_id);
	sqlite3_stmt *st = s->st[ST_IDEM_BY_OP];
	col_copy(st, 0, scope, sizeof scope);
	col_copy(st, 1, state, sizeof state);
	tgi_sq_read_owner(st, 2, &o);
	col_copy(st, 6, bound, sizeof bound);
	tgi_sq_st_reset(s, ST_IDEM_BY_OP);
	/* unknown too: one marked so by another process may still run */
	if (tgi_sq_owner_alive(s, &o, now)) {
		char host[128];
		tgi_sq_tx_rollback(s);
		tgi_snprintf(err, errlen,
		             "op '%s' is still running (pid %lld on host '%s'); wait for it to finish before resolving it",
		             op_id, (long long)o.pid, tgi_owner_host_shown(o.host, host, sizeof host));
		return -1;
	}
	if (applied) {
		/* the operator's word, with the key: the scope is done, its MAC
		 * over the envelope as it is kept now */
		char *kept = NULL;
		rc = mark_applied(s, op_id, scope, now, &kept);
		if (rc == SQLITE_OK)
			rc = idem_done(s, scope, op_id, bound, kept, now);
		free(kept);
	} else {
		rc = st_run(s, ST_IDEM_RELEASE, "tt", scope, op_id);
	}
	return resolved(s, op_id, applied, rc, now, err, errlen);
}

/* ---- approvals ---- */

static int sq_approval_add(tgi_store *base, tgi_approval_row *row, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	if (tgi_approval_new(row, err, errlen) < 0)
		return -1;
	int rc = st_run(s, ST_APPROVAL_INSERT, "tttttttiit", row->id,
	                row->op_id[0] ? row->op_id : NULL, row->tool, row->principal, row->binding,
	                row->args, row->reason, (int64_t)row->created_ms, (int64_t)row->expires_ms,
	                row->plan);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot queue an approval for '%s'", row->tool);
	return 0;
}

static int expired(int64_t expires_ms, int64_t now)
{
	return expires_ms <= now; /* every approval expires; 0 is long past */
}

static void approval_row(sqlite3_stmt *st, tgi_approval_row *r)
{
	const unsigned char *t;
	memset(r, 0, sizeof *r);
	col_copy(st, 0, r->id, sizeof r->id);
	col_copy(st, 1, r->op_id, sizeof r->op_id);
	col_copy(st, 2, r->tool, sizeof r->tool);
	col_copy(st, 3, r->principal, sizeof r->principal);
	col_copy(st, 4, r->binding, sizeof r->binding);
	col_copy(st, 5, r->state, sizeof r->state);
	t = sqlite3_column_text(st, 6);
	r->args = t ? tgi_strdup((const char *)t) : NULL;
	t = sqlite3_column_text(st, 7);
	r->reason = t ? tgi_strdup((const char *)t) : NULL;
	r->created_ms = sqlite3_column_int64(st, 8);
	r->expires_ms = sqlite3_column_int64(st, 9);
	col_copy(st, 10, r->decided_by, sizeof r->decided_by);
	t = sqlite3_column_text(st, 11);
	r->plan = t ? tgi_strdup((const char *)t) : NULL;
	r->decided_ms = sqlite3_column_int64(st, 12);
	t = sqlite3_column_text(st, 13);
	r->decided_reason = t ? tgi_strdup((const char *)t) : NULL;
}

/* The approval id as stored (approval_row, its state raw) and its MAC
 * into mac[65]: SQLITE_ROW, SQLITE_DONE when there is none, or an error.
 * The caller clears r. */
static int approval_raw(sq *s, const char *id, tgi_approval_row *r, char mac[65])
{
	int rc = tgi_sq_st_step(s, ST_APPROVAL_RAW, "t", id);
	if (rc == SQLITE_ROW) {
		approval_row(s->st[ST_APPROVAL_RAW], r);
		col_copy(s->st[ST_APPROVAL_RAW], 14, mac, 65);
		tgi_sq_st_reset(s, ST_APPROVAL_RAW);
	}
	return rc;
}

static int sq_approval_decide(tgi_store *base, const char *id, int approve, const char *by,
                              const char *reason, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char when[32], mac[65];
	tgi_approval_row row;

	if (tgi_check_approval_id(id, err, errlen) < 0)
		return -1;
	int64_t now = tgi_unix_ms();
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = approval_raw(s, id, &row, mac);
	if (rc == SQLITE_DONE) {
		tgi_sq_tx_rollback(s);
		tgi_snprintf(err, errlen, "no approval '%s'", id);
		return -1;
	}
	if (rc != SQLITE_ROW)
		return tgi_sq_fail(s, rc, err, errlen, "cannot decide approval '%s'", id);
	tgi_approval_row_clear(&row);

	if (strcmp(row.state, "pending") != 0) {
		tgi_sq_tx_rollback(s);
		tgi_snprintf(err, errlen, "approval '%s' is already %s", id, row.state);
		return -1;
	}
	if (expired(row.expires_ms, now)) {
		rc = st_run(s, ST_APPROVAL_STATE, "tt", id, "expired");
		if (rc == SQLITE_OK)
			rc = tx_commit(s);
		if (rc != SQLITE_OK)
			return tgi_sq_fail(s, rc, err, errlen, "cannot decide approval '%s'", id);
		tgi_iso8601(row.expires_ms, when);
		tgi_snprintf(err, errlen, "approval '%s' expired at %s", id, when);
		return -1;
	}
	const char *state = approve ? "approved" : "denied";
	tgi_snprintf(row.decided_by, sizeof row.decided_by, "%s", by ? by : "");
	row.decided_ms = now;
	tgi_mac_approval(base, &row, state, mac);
	rc = st_run(s, ST_APPROVAL_DECIDE, "tttitt", id, state, by, now, reason, tgi_mac_col(mac));
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot decide approval '%s'", id);
	return 0;
}

/* The newest live row whose decision verifies answers (a pending one
 * has none to verify); the rows before it that did not verify are
 * counted in *forged. */
static int sq_approval_find(tgi_store *base, const char *binding, const char *principal,
                            int *found, char id[37], int *forged, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	enum st q = ST_APPROVAL_LIVE;
	tgi_approval_row row;
	char mac[65], state[16] = "", got[37] = "";
	int rc;

	for (rc = tgi_sq_st_step(s, q, "tti", binding, principal, tgi_unix_ms()); rc == SQLITE_ROW;
	     rc = sqlite3_step(s->st[q])) {
		approval_row(s->st[q], &row);
		col_copy(s->st[q], 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		if (strcmp(row.state, "pending") && !tgi_mac_approval_ok(base, &row, mac)) {
			(*forged)++;
			continue;
		}
		memcpy(state, row.state, sizeof state);
		memcpy(got, row.id, sizeof got);
		break;
	}
	tgi_sq_st_reset(s, q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return tgi_sq_fail(s, rc, err, errlen, "cannot look for an approval");
	tgi_approval_answer(state, got, found, id);
	return 0;
}

/* Spend approval id inside the caller's transaction (store.h
 * tgi_store_approval_use): *used 1, 0, or -1 (approved, but its MAC does
 * not verify). */
static int use_in_tx(sq *s, const char *id, const char *principal, const char *binding,
                     int64_t now, int *used)
{
	tgi_approval_row row;
	char mac[65];
	*used = 0;
	int rc = approval_raw(s, id, &row, mac);
	if (rc == SQLITE_DONE)
		return SQLITE_OK;
	if (rc != SQLITE_ROW)
		return rc;
	tgi_approval_row_clear(&row);
	if (!tgi_approval_spendable(&row, principal, binding, now))
		return SQLITE_OK;
	if (!tgi_mac_approval_ok(&s->base, &row, mac)) {
		*used = -1;
		return SQLITE_OK;
	}
	tgi_mac_approval(&s->base, &row, "used", mac);
	rc = st_run(s, ST_APPROVAL_USED, "tt", id, mac);
	if (rc == SQLITE_OK)
		*used = sqlite3_changes(s->db) == 1;
	return rc;
}

static int sq_approval_use(tgi_store *base, const char *id, const char *principal,
                           const char *binding, int *used, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	*used = 0;
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = use_in_tx(s, id, principal, binding, tgi_unix_ms(), used);
	if (rc == SQLITE_OK && *used == 1)
		rc = tx_commit(s);
	else if (rc == SQLITE_OK)
		tgi_sq_tx_rollback(s);
	if (rc != SQLITE_OK) {
		*used = 0;
		return tgi_sq_fail(s, rc, err, errlen, "cannot use approval '%s'", id);
	}
	return 0;
}

static int sq_approval_list(tgi_store *base, const char *state, tgi_approval_row **rows, size_t *n,
                            char *err, size_t errlen)
{
	sq *s = (sq *)base;
	tgi_approval_row *v = NULL;
	size_t len = 0, cap = 0;
	int rc;

	*rows = NULL;
	*n = 0;
	for (rc = tgi_sq_st_step(s, ST_APPROVAL_LIST, "ti", state, tgi_unix_ms()); rc == SQLITE_ROW;
	     rc = sqlite3_step(s->st[ST_APPROVAL_LIST])) {
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			v = tgi_xrealloc(v, cap * sizeof *v);
		}
		approval_row(s->st[ST_APPROVAL_LIST], &v[len++]);
	}
	tgi_sq_st_reset(s, ST_APPROVAL_LIST);
	if (rc != SQLITE_DONE) {
		tgi_approval_rows_free(v, len);
		return tgi_sq_fail(s, rc, err, errlen, "cannot list approvals");
	}
	*rows = v;
	*n = len;
	return 0;
}

static int sq_approval_get(tgi_store *base, const char *id, tgi_approval_row *row, int *found,
                           char *err, size_t errlen)
{
	sq *s = (sq *)base;
	memset(row, 0, sizeof *row);
	*found = 0;
	int rc = tgi_sq_st_step(s, ST_APPROVAL_ONE, "ti", id, tgi_unix_ms());
	if (rc == SQLITE_ROW) {
		char mac[65];
		approval_row(s->st[ST_APPROVAL_ONE], row);
		col_copy(s->st[ST_APPROVAL_ONE], 14, mac, sizeof mac);
		row->verified = tgi_mac_approval_ok(base, row, mac);
		*found = 1;
		rc = SQLITE_DONE;
	}
	tgi_sq_st_reset(s, ST_APPROVAL_ONE);
	if (rc != SQLITE_DONE)
		return tgi_sq_fail(s, rc, err, errlen, "cannot read approval %s", id);
	return 0;
}

/* ---- pins of bridged MCP tools ---- */

/* The pinned digest of name into pinned[65], *ok whether its MAC
 * verifies: SQLITE_ROW, SQLITE_DONE when there is none, or an error. */
static int pin_get(sq *s, const char *name, char pinned[65], int *ok)
{
	char mac[65];
	int rc = tgi_sq_st_step(s, ST_PIN_GET, "t", name);
	if (rc == SQLITE_ROW) {
		col_copy(s->st[ST_PIN_GET], 0, pinned, 65);
		col_copy(s->st[ST_PIN_GET], 1, mac, sizeof mac);
		*ok = tgi_mac_pin_ok(&s->base, name, pinned, mac);
		tgi_sq_st_reset(s, ST_PIN_GET);
	}
	return rc;
}

/* A pin's state: one that does not verify is CHANGED whatever it says. */
static tgi_pin_state pin_state(const char *pinned, int ok, const char *digest)
{
	return ok && !strcmp(pinned, digest) ? TGI_PIN_SAME : TGI_PIN_CHANGED;
}

/* A pin is read without a transaction (the common case: it is there and
 * the same); only a tool seen for the first time takes the writer lock,
 * and then reads again, since another process may have pinned it first. */
static int sq_pin_check(tgi_store *base, const char *name, const char *digest, tgi_pin_state *st,
                        char pinned[65], char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char q[80];

	pinned[0] = '\0';
	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	int ok = 0;
	int rc = pin_get(s, name, pinned, &ok);
	if (rc == SQLITE_ROW) {
		*st = pin_state(pinned, ok, digest);
		return 0;
	}
	int64_t now = tgi_unix_ms();
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	if (rc == SQLITE_DONE)
		rc = tx_begin(s);
	int added = 0;
	if (rc == SQLITE_OK)
		rc = st_run(s, ST_PIN_ADD, "ttit", name, digest, now, tgi_mac_col(mac));
	if (rc == SQLITE_OK)
		added = sqlite3_changes(s->db) == 1; /* else another process pinned it first */
	if (rc == SQLITE_OK && (rc = pin_get(s, name, pinned, &ok)) == SQLITE_ROW)
		rc = tx_commit(s);
	else if (rc == SQLITE_DONE)
		rc = SQLITE_CORRUPT; /* inserted or there, yet not found */
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot pin the description of '%s'",
		                   tgi_quoted(q, sizeof q, name));
	*st = added ? TGI_PIN_NEW : pin_state(pinned, ok, digest);
	return 0;
}

static int sq_pin_set(tgi_store *base, const char *name, const char *digest, char *err,
                      size_t errlen)
{
	sq *s = (sq *)base;
	char q[80];

	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = st_run(s, ST_PIN_SET, "ttit", name, digest, tgi_unix_ms(), tgi_mac_col(mac));
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot move the pin of '%s'",
		                   tgi_quoted(q, sizeof q, name));
	return 0;
}

/* ---- an agent's conversation (toolgate agent) ---- */

static int sq_messages_append(tgi_store *base, const char *session, const char *api,
                              const json_t *entries, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char q[80], **text;
	size_t n;
	if (tgi_check_messages(session, api ? api : "", err, errlen) < 0 ||
	    tgi_messages_encode(entries, &text, &n, err, errlen) < 0)
		return -1;
	if (!n)
		return 0;

	int64_t seq = 0, now = tgi_unix_ms();
	char have[TGI_MSG_API_MAX] = "";
	int rc = tx_begin(s);
	if (rc == SQLITE_OK) {
		rc = tgi_sq_st_step(s, ST_MSG_LAST, "t", session);
		if (rc == SQLITE_ROW) {
			seq = sqlite3_column_int64(s->st[ST_MSG_LAST], 0);
			col_copy(s->st[ST_MSG_LAST], 1, have, sizeof have);
			tgi_sq_st_reset(s, ST_MSG_LAST);
			rc = SQLITE_DONE;
		}
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc == SQLITE_OK && have[0] && strcmp(have, api)) {
		tgi_sq_tx_rollback(s);
		tgi_texts_free(text, n);
		tgi_snprintf(err, errlen, "session '%s' is a conversation in the %s API, not %s",
		             tgi_quoted(q, sizeof q, session), have, api);
		return -1;
	}
	for (size_t i = 0; i < n && rc == SQLITE_OK; i++)
		rc = st_run(s, ST_MSG_INSERT, "titit", session, seq + 1 + (int64_t)i, api, now, text[i]);
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	tgi_texts_free(text, n);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot save the conversation of session '%s'",
		                   tgi_quoted(q, sizeof q, session));
	return 0;
}

static int sq_messages(tgi_store *base, const char *session, json_t **out, char api[32],
                       char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char q[80];
	enum st id = ST_MSG_LIST;
	*out = NULL;
	api[0] = '\0';
	if (tgi_check_messages(session, NULL, err, errlen) < 0)
		return -1;
	json_t *arr = json_array();
	int bad = 0;
	int rc = tgi_sq_st_step(s, id, "t", session);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(s->st[id])) {
		const char *entry = (const char *)sqlite3_column_text(s->st[id], 1);
		json_error_t je;
		json_t *v = entry ? json_loads(entry, JSON_DECODE_ANY, &je) : NULL;
		if (!v) {
			bad = 1;
			break;
		}
		if (!api[0])
			col_copy(s->st[id], 0, api, TGI_MSG_API_MAX);
		json_array_append_new(arr, v);
	}
	tgi_sq_st_reset(s, id);
	if (bad) {
		json_decref(arr);
		api[0] = '\0';
		tgi_snprintf(err, errlen, "the conversation of session '%s' holds an entry that is "
		             "not JSON", tgi_quoted(q, sizeof q, session));
		return -1;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		json_decref(arr);
		api[0] = '\0';
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the conversation of session '%s'",
		                   tgi_quoted(q, sizeof q, session));
	}
	*out = arr;
	return 0;
}

/* ---- eval runs (toolgate eval) ---- */

/* A rate not given (NAN) is bound as NULL: sqlite3_bind_double binds a
 * NaN so. */
static int sq_eval_put(tgi_store *base, const tgi_eval_row *r, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = st_run(s, ST_EVAL_INSERT, "tittttttiiffffft", r->id, r->ts_ms, r->provider,
		            r->api, r->model, r->profile, r->manifest, r->suite, r->cases, r->runs,
		            r->score[0], r->score[1], r->score[2], r->score[3], r->score[4], r->report);
	if (rc == SQLITE_OK)
		rc = tx_commit(s);
	if (rc != SQLITE_OK)
		return tgi_sq_fail(s, rc, err, errlen, "cannot keep eval run %s", r->id);
	return 0;
}

const char *tgi_sq_col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* The row st is on, as eval_list gives it. */
static json_t *eval_row_json(sqlite3_stmt *st)
{
	tgi_eval_row r = {
		.id = tgi_sq_col_text(st, 0), .ts_ms = sqlite3_column_int64(st, 1),
		.provider = tgi_sq_col_text(st, 2), .api = tgi_sq_col_text(st, 3), .model = tgi_sq_col_text(st, 4),
		.profile = tgi_sq_col_text(st, 5), .manifest = tgi_sq_col_text(st, 6), .suite = tgi_sq_col_text(st, 7),
		.cases = sqlite3_column_int64(st, 8), .runs = sqlite3_column_int64(st, 9),
		.report = tgi_sq_col_text(st, 15),
	};
	for (int i = 0; i < 5; i++)
		r.score[i] = sqlite3_column_type(st, 10 + i) == SQLITE_NULL
		                     ? NAN : sqlite3_column_double(st, 10 + i);
	return tgi_eval_json(&r);
}

static int sq_eval_list(tgi_store *base, const char *model, int64_t limit, json_t **out,
                        char *err, size_t errlen)
{
	sq *s = (sq *)base;
	enum st id = model ? ST_EVAL_LIST_MODEL : ST_EVAL_LIST;
	json_t *arr = json_array();
	int rc = model ? tgi_sq_st_step(s, id, "ti", model, limit) : tgi_sq_st_step(s, id, "i", limit);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(s->st[id]))
		json_array_append_new(arr, eval_row_json(s->st[id]));
	tgi_sq_st_reset(s, id);
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		return tgi_sq_fail(s, rc, err, errlen, "cannot read the eval runs");
	}
	*out = arr;
	return 0;
}

/* ---- events written on their own ---- */

static int sq_event(tgi_store *base, const char *op_id, tgi_event *ev, char *err, size_t errlen)
{
	sq *s = (sq *)base;
	char *data;
	if (tgi_event_encode(op_id, ev, &data, err, errlen) < 0)
		return -1;
	int64_t seq = 0;
	int rc = tx_begin(s);
	if (rc == SQLITE_OK)
		rc = st_run(s, ST_EVENT_INSERT, "itttt", ev->ts_ms ? ev->ts_ms : tgi_unix_ms(), op_id,
		            ev->type, ev->stage, data);
	if (rc == SQLITE_OK) {
		seq = sqlite3_last_insert_rowid(s->db);
		rc = tx_commit(s);
	}
	if (rc == SQLITE_OK)
		ev->seq = seq;
	free(data);
	if (rc != SQLITE_OK) {
		char q[80];
		return tgi_sq_fail(s, rc, err, errlen, "cannot record event '%s'",
		                   tgi_quoted(q, sizeof q, ev->type));
	}
	return 0;
}

/* ---- watches ----
 *
 * A commit lands in the WAL, so a watch is inotify on the WAL and on the
 * database file, and on their directory for a WAL made anew (it may not
 * exist yet, or be removed and made again).  A commit writes the WAL before
 * it makes the transaction visible (the WAL index, after a sync), so a
 * look on the notification may come too early: the next waits are short
 * (5, 10, 20 ms), a wait is never longer than WATCH_SLICE_MS, and the
 * caller looks again.  Without inotify the wait is that timeout alone.
 * Approvals are commits too: both kinds watch the same files. */

#define WATCH_SLICE_MS 250

typedef struct sq_watch {
	tgi_watch   base;
	int         fd;            /* inotify, or -1 */
	int         wal_wd;        /* -1 while the WAL is not watched */
	int         soon;          /* short waits left after a notification */
	char        wal[PATH_MAX];
} sq_watch;

static void watch_wal(sq_watch *w)
{
	if (w->fd >= 0 && w->wal_wd < 0)
		w->wal_wd = inotify_add_watch(w->fd, w->wal, IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF);
}

static int sq_watch_open(tgi_store *base, tgi_watch_what what, tgi_watch **out, char *err,
                         size_t errlen)
{
	sq *s = (sq *)base;
	(void)what;
	(void)err;
	(void)errlen;
	sq_watch *w = tgi_xcalloc(1, sizeof *w);
	w->base.impl = &sqlite_impl;
	w->fd = -1;
	w->wal_wd = -1;
	*out = &w->base;
	if (!s->file[0] || strlen(s->file) + sizeof "-wal" > sizeof w->wal)
		return 0;                 /* in memory (or too long): the timeout alone */
	tgi_snprintf(w->wal, sizeof w->wal, "%s-wal", s->file);
	if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return 0;
	inotify_add_watch(w->fd, s->file, IN_MODIFY);
	const char *slash = strrchr(w->wal, '/');
	if (slash) {
		char dir[PATH_MAX];
		tgi_snprintf(dir, sizeof dir, "%.*s", (int)(slash - w->wal), w->wal);
		inotify_add_watch(w->fd, *dir ? dir : "/", IN_CREATE | IN_MOVED_TO);
	}
	watch_wal(w);
	return 0;
}

/* Read the queued notifications: the WAL's watch ends when it is removed. */
static void watch_drain(sq_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while ((n = read(w->fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			if (e->wd == w->wal_wd && (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))) {
				if (!(e->mask & IN_IGNORED))
					inotify_rm_watch(w->fd, w->wal_wd);
				w->wal_wd = -1;
			}
			p += sizeof *e + e->len;
		}
	}
}

static int sq_watch_wait(tgi_watch *base, int timeout_ms)
{
	sq_watch *w = (sq_watch *)base;
	struct pollfd p = {.fd = w->fd, .events = POLLIN};
	int slice = timeout_ms < WATCH_SLICE_MS ? timeout_ms : WATCH_SLICE_MS;
	/* after a notification the commit is most likely a moment from being
	 * visible: look again after 5, 10 and 20 ms before a whole slice */
	if (w->soon > 0 && slice > (20 >> (w->soon - 1)))
		slice = 20 >> (w->soon - 1);
	int rc = poll(&p, w->fd >= 0, slice < 0 ? 0 : slice);
	if (rc > 0) {
		watch_drain(w);
		w->soon = 3;
	} else if (w->soon > 0) {
		w->soon--;
	}
	watch_wal(w);   /* it may have appeared without a word to the directory's watch */
	/* a slice that ran out is not the caller's timeout: look again */
	return rc != 0 || slice < timeout_ms;
}

static void sq_watch_close(tgi_watch *base)
{
	sq_watch *w = (sq_watch *)base;
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

static const tgi_store_impl sqlite_impl = {
	.kind = "sqlite",
	.shared = 0,
	.close = sq_close,
	.transient = sq_transient,
	.schema_version = sq_schema_version,
	.migrate = sq_migrate,
	.record = sq_record,
	.batch_begin = sq_batch_begin,
	.batch_record = sq_batch_record,
	.batch_commit = sq_batch_commit,
	.session_manifest = sq_session_manifest,
	.loop_window = sq_loop_window,
	.bucket_get = sq_bucket_get,
	.bucket_take = sq_bucket_take,
	.idem_claim = sq_idem_claim,
	.op_resolve = sq_op_resolve,
	.approval_add = sq_approval_add,
	.approval_decide = sq_approval_decide,
	.approval_find = sq_approval_find,
	.approval_use = sq_approval_use,
	.approval_get = sq_approval_get,
	.approval_list = sq_approval_list,
	.pin_check = sq_pin_check,
	.pin_set = sq_pin_set,
	.messages_append = sq_messages_append,
	.messages = sq_messages,
	.eval_put = sq_eval_put,
	.eval_list = sq_eval_list,
	.event = sq_event,
	.ops = tgi_sq_ops,
	.events = tgi_sq_events,
	.last_seq = tgi_sq_last_seq,
	.stats = tgi_sq_stats,
	.export = tgi_sq_export,
	.unknown = tgi_sq_unknown,
	.shown = sq_shown,
	.ident_bound = sq_ident_bound,
	.ident_get = sq_ident_get,
	.ident_put = sq_ident_put,
	.watch_open = sq_watch_open,
	.watch_wait = sq_watch_wait,
	.watch_close = sq_watch_close,
};
