/*
 * sqlite_int.h — what the pieces of the SQLite ledger share (internal to
 * sqlite*.c): the constants, the cached statements, the checkpointer's
 * state, the handle, and the functions one piece defines for the others.
 *
 * The pieces: sqlite.c (schema, statements, open, the table's writes, the
 * watches, the table), sqlite_checkpoint.c (the checkpointer),
 * sqlite_read.c (log, stats, export, unknown outcomes).  A function one
 * piece defines for another is named tgi_sq_*, so nothing else in the
 * program meets it.
 *
 * Owns: nothing.  Must not: be included outside src/store/sqlite*.c.
 */
#ifndef TGI_STORE_SQLITE_INT_H
#define TGI_STORE_SQLITE_INT_H

#include "store/impl.h"
#include "util/util.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <sqlite3.h>

#define TGI_BUSY_MS        5000   /* many processes share the ledger */
#define TGI_LOG_WINDOW     16     /* seqs read per event wanted (with a filter) before all are */
/* WAL frames (pages) past which a commit wakes the checkpointer (see
 * sqlite_checkpoint.c): ~1,100 records of ~7 pages, a WAL of ~33 MB.  Past
 * TGI_CKPT_HARD_FRAMES (the checkpointer cannot keep up, or cannot run) the
 * committing call checkpoints itself, as SQLite's automatic checkpoint
 * would. */
#define TGI_CKPT_FRAMES      8000
#define TGI_CKPT_HARD_FRAMES (3 * TGI_CKPT_FRAMES)
#define TGI_CKPT_TAIL        128  /* a tail short enough for a commit to copy (see ckpt_rounds) */
#define TGI_CKPT_ROUNDS      32   /* rounds of the thread per wake */
#define TGI_CKPT_COMMITS     16   /* commits a handle makes before it starts the thread */
#define TGI_CKPT_THREAD_NAME "tg-checkpoint"

/* The newest event's seq (0: none).  A call's events are a column of its
 * ops row, whose seq is that of its last event; an event written on its
 * own is a row of event_rows (see the schema in sqlite.c).  Both are the
 * rightmost entry of a rowid b-tree: two short descents, no scan. */
#define TGI_SEQ_NEWEST                                                                          \
	"max(coalesce((SELECT max(seq) FROM ops), 0),"                                          \
	" coalesce((SELECT max(seq) FROM event_rows), 0))"

/* The columns of an eval run, in tgi_eval_row's order. */
#define TGI_EVAL_COLS                                                                           \
	"id, ts_ms, provider, api, model, profile, manifest, suite, cases, runs, score_tool,"  \
	" score_valid, score_args, score_policy, score_pass, report"

/* An approval's columns as approval_row reads them (its state as stored),
 * then its MAC. */
#define TGI_APPROVAL_RAW                                                                        \
	"id, op_id, tool, principal, binding, state, args, reason, created_ms, expires_ms,"     \
	" decided_by, plan, decided_ms, decided_reason, mac"

/* The cached statements.  Approval states are derived at read time: a
 * pending or approved row past expires_ms counts as expired (every approval expires,
 * and an approved row counts only with its decision recorded). */
#define TGI_STORE_SQL(X)                                                                        \
	X(ST_BEGIN, "BEGIN IMMEDIATE")                                                          \
	X(ST_COMMIT, "COMMIT")                                                                  \
	X(ST_ROLLBACK, "ROLLBACK")                                                              \
	X(ST_SYNC_FULL, "PRAGMA synchronous = FULL")                                            \
	X(ST_SYNC_NORMAL, "PRAGMA synchronous = NORMAL")                                        \
	X(ST_OP_INSERT,                                                                         \
	  "INSERT INTO ops(seq, op_id, call_id, session, tool, principal, status, error_kind,"  \
	  " idem_scope, args_redacted, args_sha256, envelope, started_ms, duration_ms, loop,"   \
	  " events) VALUES(CASE WHEN ?15 > 0 THEN " TGI_SEQ_NEWEST " + ?15"                    \
	  " ELSE min(0, (SELECT min(seq) FROM ops)) - 1 END,"                                   \
	  " ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16)")                 \
	X(ST_OP_EXISTS, "SELECT 1 FROM ops WHERE op_id = ?1")                                   \
	X(ST_OP_ENVELOPE, "SELECT envelope FROM ops WHERE op_id = ?1")                          \
	X(ST_OP_SET_ENVELOPE, "UPDATE ops SET envelope = ?2 WHERE op_id = ?1")                  \
	X(ST_EVENT_INSERT,                                                                      \
	  "INSERT INTO event_rows(seq, ts_ms, op_id, type, stage, data)"                       \
	  " VALUES(" TGI_SEQ_NEWEST " + 1, ?1, ?2, ?3, ?4, ?5)")                               \
	X(ST_SESSION_UPSERT,                                                                    \
	  "INSERT INTO sessions(id, first_ms, last_ms, calls, manifest)"                       \
	  " VALUES(?1, ?2, ?2, 1, ?3)"                                                          \
	  " ON CONFLICT(id) DO UPDATE SET first_ms = min(first_ms, excluded.first_ms),"         \
	  " last_ms = max(last_ms, excluded.last_ms), calls = calls + 1,"                      \
	  " manifest = coalesce(excluded.manifest, manifest)")                                 \
	X(ST_SESSION_MANIFEST, "SELECT manifest FROM sessions WHERE id = ?1")                   \
	X(ST_LOOP_SESSION,                                                                      \
	  "SELECT loop FROM ops WHERE session = ?1 AND loop IS NOT NULL"                       \
	  " ORDER BY op_id DESC LIMIT ?2")                                                      \
	X(ST_BUCKET_SET,                                                                        \
	  "INSERT INTO rate_buckets(principal, tool, tokens, updated_ms, mac)"                  \
	  " VALUES(?1, ?2, ?3, ?4, ?5)"                                                         \
	  " ON CONFLICT(principal, tool) DO UPDATE SET tokens = excluded.tokens,"               \
	  " updated_ms = excluded.updated_ms, mac = excluded.mac")                              \
	X(ST_BUCKET_GET,                                                                        \
	  "SELECT tokens, updated_ms, mac FROM rate_buckets WHERE principal = ?1 AND tool = ?2") \
	X(ST_LAST_SEQ, "SELECT " TGI_SEQ_NEWEST)                                                \
	X(ST_IDEM_GET,                                                                          \
	  "SELECT op_id, state, owner_host, owner_pid, owner_start, lease_until_ms, binding,"  \
	  " mac FROM idem WHERE scope = ?1")                                                    \
	X(ST_IDEM_BY_OP,                                                                        \
	  "SELECT scope, state, owner_host, owner_pid, owner_start, lease_until_ms, binding"   \
	  " FROM idem WHERE op_id = ?1 AND state IN ('in_flight', 'unknown') LIMIT 1")         \
	X(ST_IDEM_INSERT,                                                                       \
	  "INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"          \
	  " lease_until_ms, created_ms, updated_ms, binding, mac)"                              \
	  " VALUES(?1, ?2, 'in_flight', ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9)")                      \
	X(ST_IDEM_DONE,                                                                         \
	  "INSERT INTO idem(scope, op_id, state, created_ms, updated_ms, binding, mac)"        \
	  " VALUES(?1, ?2, 'done', ?3, ?3, ?4, ?5) ON CONFLICT(scope) DO UPDATE"                \
	  " SET state = 'done', updated_ms = excluded.updated_ms, mac = excluded.mac"           \
	  " WHERE op_id = excluded.op_id")                                                      \
	X(ST_IDEM_UNKNOWN,                                                                      \
	  "UPDATE idem SET state = 'unknown', updated_ms = ?3, owner_pid = NULL,"              \
	  " owner_start = NULL, lease_until_ms = NULL, mac = NULL"                              \
	  " WHERE scope = ?1 AND op_id = ?2")                                                   \
	X(ST_IDEM_MARK_UNKNOWN,                                                                 \
	  "UPDATE idem SET state = 'unknown', updated_ms = ?3, mac = NULL"                      \
	  " WHERE scope = ?1 AND op_id = ?2 AND state = 'in_flight'")                           \
	X(ST_IDEM_RELEASE, "DELETE FROM idem WHERE scope = ?1 AND op_id = ?2")                  \
	X(ST_OP_UNSETTLED,                                                                      \
	  "SELECT 1 FROM ops WHERE op_id = ?1 AND "                                            \
	  TGI_UNKNOWN_OPS_WHERE("CASE WHEN json_valid(envelope)"                              \
	                        " THEN json_extract(envelope, '$.error.applied') END"))       \
	X(ST_APPROVAL_INSERT,                                                                   \
	  "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"    \
	  " created_ms, expires_ms, plan)"                                                      \
	  " VALUES(?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10)")                        \
	X(ST_APPROVAL_RAW,                                                                      \
	  "SELECT " TGI_APPROVAL_RAW " FROM approvals WHERE id = ?1")                           \
	X(ST_APPROVAL_STATE, "UPDATE approvals SET state = ?2 WHERE id = ?1")                   \
	X(ST_APPROVAL_DECIDE,                                                                   \
	  "UPDATE approvals SET state = ?2, decided_by = ?3, decided_ms = ?4,"                 \
	  " decided_reason = ?5, mac = ?6 WHERE id = ?1")                                       \
	X(ST_APPROVAL_USED,                                                                     \
	  "UPDATE approvals SET state = 'used', mac = ?2 WHERE id = ?1 AND state = 'approved'") \
	X(ST_APPROVAL_LIVE,                                                                     \
	  "SELECT " TGI_APPROVAL_RAW " FROM approvals WHERE binding = ?1 AND principal = ?2"    \
	  " AND state IN ('pending', 'approved', 'denied')"                                     \
	  " AND expires_ms > ?3 AND (state <> 'approved' OR decided_ms IS NOT NULL)"           \
	  " ORDER BY created_ms DESC, id DESC")                                                 \
	X(ST_APPROVAL_LIST,                                                                     \
	  "SELECT id, op_id, tool, principal, binding, st, args, reason, created_ms,"          \
	  " expires_ms, decided_by, plan, decided_ms, decided_reason"                          \
	  " FROM (SELECT *, CASE WHEN state IN ('pending', 'approved')"                        \
	  " AND expires_ms <= ?2 THEN 'expired' ELSE state END AS st"                          \
	  " FROM approvals) WHERE ?1 = '*' OR st = ?1"                                          \
	  " OR (?1 IS NULL AND st IN ('pending', 'approved'))"                                  \
	  " ORDER BY created_ms DESC, id DESC")                                                 \
	X(ST_APPROVAL_ONE,                                                                      \
	  "SELECT id, op_id, tool, principal, binding, CASE WHEN state IN ('pending', 'approved')" \
	  " AND expires_ms <= ?2 THEN 'expired' ELSE state END, args, reason, created_ms,"      \
	  " expires_ms, decided_by, plan, decided_ms, decided_reason, mac"                     \
	  " FROM approvals WHERE id = ?1")                                                      \
	X(ST_EXPORT_EVENTS,                                                                     \
	  "SELECT ts_ms, type, stage, data FROM event_rows WHERE op_id = ?1 ORDER BY seq")      \
	X(ST_EXPORT_IDEM, "SELECT state, binding FROM idem WHERE scope = ?1 AND op_id = ?2")    \
	X(ST_MSG_LAST,                                                                          \
	  "SELECT seq, api FROM messages WHERE session = ?1 ORDER BY seq DESC LIMIT 1")        \
	X(ST_MSG_INSERT,                                                                        \
	  "INSERT INTO messages(session, seq, api, ts_ms, entry) VALUES(?1, ?2, ?3, ?4, ?5)")  \
	X(ST_MSG_LIST, "SELECT api, entry FROM messages WHERE session = ?1 ORDER BY seq")       \
	X(ST_EVAL_INSERT,                                                                       \
	  "INSERT INTO eval_runs(" TGI_EVAL_COLS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"  \
	  " ?10, ?11, ?12, ?13, ?14, ?15, ?16)")                                                \
	X(ST_EVAL_LIST,                                                                         \
	  "SELECT " TGI_EVAL_COLS " FROM (SELECT * FROM eval_runs"                              \
	  " ORDER BY ts_ms DESC, id DESC LIMIT ?1) ORDER BY ts_ms, id")                         \
	X(ST_EVAL_LIST_MODEL,                                                                   \
	  "SELECT " TGI_EVAL_COLS " FROM (SELECT * FROM eval_runs WHERE model = ?1"             \
	  " ORDER BY ts_ms DESC, id DESC LIMIT ?2) ORDER BY ts_ms, id")                         \
	X(ST_PIN_GET, "SELECT digest, mac FROM pins WHERE name = ?1")                           \
	X(ST_PIN_ADD,                                                                           \
	  "INSERT INTO pins(name, digest, first_ms, updated_ms, mac) VALUES(?1, ?2, ?3, ?3, ?4)" \
	  " ON CONFLICT(name) DO NOTHING")                                                      \
	X(ST_PIN_SET,                                                                           \
	  "INSERT INTO pins(name, digest, first_ms, updated_ms, mac) VALUES(?1, ?2, ?3, ?3, ?4)" \
	  " ON CONFLICT(name) DO UPDATE SET digest = excluded.digest,"                          \
	  " updated_ms = excluded.updated_ms, mac = excluded.mac")

#define TGI_ST_ENUM(name, sql) name,
#define TGI_ST_SQL(name, sql) sql,
enum st { TGI_STORE_SQL(TGI_ST_ENUM) ST__COUNT };

/* The checkpointer thread (sqlite_checkpoint.c).  mu guards due and stop;
 * the thread holds it only to read and clear them, never while it
 * checkpoints, so a commit that wakes it never waits for a checkpoint.
 * phase is set by the thread, read by every commit without the lock, and
 * taken from CAUGHT_UP back to WAITING by the commit that copies the tail
 * (the thread is waiting then).  started, failed, pid, wake_at and
 * woken_gen belong to the handle's user. */
enum ckpt_phase {
	CKPT_WAITING,    /* for a commit to wake it */
	CKPT_COPYING,    /* woken: copying the WAL into the database in rounds */
	CKPT_CAUGHT_UP,  /* its rounds stopped shrinking: the next commit copies the rest */
};

struct ckpt {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	pthread_t       thread;
	atomic_int      phase;     /* enum ckpt_phase */
	int             due;       /* a commit woke it */
	int             stop;      /* tgi_store_close: leave */
	int             started;   /* the thread runs, in process pid */
	int             failed;    /* none could be started: commits checkpoint themselves */
	pid_t           pid;
	unsigned        wake_at;   /* WAL frames at which a commit wakes it next */
	unsigned        woken_gen; /* the wal_gen it was last woken for */
	int             sync_full; /* the handle's synchronous level, for the checkpoint's syncs */
};

typedef struct sq {
	tgi_store     base;           /* first: the handle callers hold */
	sqlite3      *db;
	sqlite3_stmt *st[ST__COUNT];  /* prepared on first use */
	int           sync_full;      /* 1: FULL for every write; 0: NORMAL, claims FULL */
	int           no_migrate;     /* TGI_STORE_NO_MIGRATE: leave a schema that is behind */
	int           must_exist;     /* TGI_STORE_MUST_EXIST: create nothing */
	int           memory;         /* TGI_STORE_MEMORY: no file (file is "") */
	tgi_self      me;             /* this process, as a claim's owner */
	char          shown[PATH_MAX]; /* the ledger path, fit for sentences */
	char          file[PATH_MAX]; /* the path opened, for the checkpointer's connection */
	unsigned      wal_frames;     /* frames in the WAL after our last commit (WAL hook) */
	unsigned      wal_gen;        /* times we saw the WAL start over (WAL hook) */
	unsigned      commits;        /* commits through this handle (saturating) */
	struct ckpt   ckpt;           /* the checkpointer thread */
} sq;

/* The owner of an idem row as read from it. */
struct owner {
	char    host[256];
	int64_t pid, start, lease_until;
};

/* ---- sqlite.c ---- */
__attribute__((format(printf, 5, 6)))
int tgi_sq_fail(sq *s, int rc, char *err, size_t errlen, const char *fmt, ...);
void tgi_sq_st_reset(sq *s, enum st id);
int tgi_sq_st_step(sq *s, enum st id, const char *fmt, ...);
void tgi_sq_tx_rollback(sq *s);
int tgi_sq_owner_alive(sq *s, const struct owner *o, int64_t now);
void tgi_sq_read_owner(sqlite3_stmt *st, int col, struct owner *o);
const char *tgi_sq_col_text(sqlite3_stmt *st, int i);

/* ---- sqlite_checkpoint.c ---- */
int tgi_sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames);
void tgi_sq_ckpt_here(sq *s);
void tgi_sq_ckpt_after_commit(sq *s);
void tgi_sq_ckpt_stop(sq *s);

/* ---- sqlite_read.c ---- */
int tgi_sq_ops(tgi_store *base, const tgi_log_filter *f, json_t **out, char *err, size_t errlen);
int tgi_sq_events(tgi_store *base, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                  char *err, size_t errlen);
int tgi_sq_last_seq(tgi_store *base, int64_t *seq, char *err, size_t errlen);
int tgi_sq_stats(tgi_store *base, int64_t since_ms, json_t **out, char *err, size_t errlen);
int tgi_sq_export(tgi_store *base, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
                  char *err, size_t errlen);
int tgi_sq_unknown(tgi_store *base, json_t **out, char *err, size_t errlen);

#endif
