/*
 * store.h — the ledger interface (DESIGN §5).
 *
 * Two implementations behind one interface, chosen at open by where the
 * ledger is: a path is SQLite in WAL mode (src/store/sqlite.c, the
 * default), a postgres:// or postgresql:// URL is PostgreSQL through libpq
 * (src/store/postgres.c), shared by gates on many hosts.  store.c
 * dispatches; nothing outside src/store/ sees SQL.  Many processes share
 * one ledger at once.
 *
 * Tables: ops (one row per call), idem (scope -> op, in_flight/done),
 * events (append-only, sequence numbered), approvals, sessions, messages
 * (an agent session's conversation), eval_runs (toolgate eval).
 *
 * Owns: the database handle and the on-disk state directory checks.
 * Must not: decide policy, run tools, or build envelopes.
 *
 * Every function returns 0 on success or -1 with a sentence in err
 * (errlen bytes); a store function never aborts on a database error.
 */
#ifndef TGI_STORE_H
#define TGI_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "util/util.h"

typedef struct tgi_store tgi_store;

/*
 * Check the state directory: <workspace>/.toolgate (created 0700 if
 * missing) and everything in it that we open must not be a symlink and
 * must be a directory/regular file owned by the current user; a hostile
 * repository must not redirect the ledger or spill files.  Returns an
 * O_DIRECTORY fd of the state dir, or -1 with err.
 */
int tgi_state_dir_open(int ws_fd, const char *ws_path, char *err, size_t errlen);
/* The same for a state directory that is there, creating nothing (not it,
 * not its .gitignore): the fd, -1 with err, or -2 when there is none. */
int tgi_state_dir_find(int ws_fd, const char *ws_path, char *err, size_t errlen);

/* Flags of tgi_store_open. */
#define TGI_STORE_SYNC_FULL  1  /* SQLite: synchronous=FULL for every write (else NORMAL;
                                 * in_flight claims are always FULL) */
#define TGI_STORE_NO_MIGRATE 2  /* open a schema that is behind as it is (toolgate migrate);
                                 * only the schema functions below may be used then */
#define TGI_STORE_MUST_EXIST 4  /* SQLite: open the file only if it is there, creating
                                 * nothing (the read-only commands); a missing one is an
                                 * error.  PostgreSQL: no effect */
#define TGI_STORE_MEMORY     8  /* SQLite: an empty ledger in memory, nothing on disk (where
                                 * is only shown): a read-only command's stand-in for a ledger
                                 * that is not there */
#define TGI_STORE_FOREIGN_OK 16 /* a foreign ledger (below) is opened all the same, to be
                                 * read: unkeyed, every write refused, tgi_store_foreign
                                 * saying why (the read-only commands: log, stats, ...) */

/* Where the machine key comes from (key.c): env, else file, else the
 * default under $XDG_STATE_HOME/toolgate (made on first use); NULL
 * members, or a NULL source, are unset. */
typedef struct tgi_key_source {
	const char *env;    /* ledger.key_env: a variable holding 64 hex digits */
	const char *file;   /* ledger.key_file: a file of 64 hex digits */
} tgi_key_source;

/* Does where name a PostgreSQL ledger (postgres:// or postgresql://)? */
int tgi_store_is_url(const char *where);

/*
 * Open (creating if needed) the ledger at where: a file path (SQLite) or a
 * PostgreSQL URL.  The schema is brought to TGI_STORE_SCHEMA_VERSION by
 * the migrations when it is behind (unless TGI_STORE_NO_MIGRATE); a schema
 * ahead of this program is refused with a sentence saying so.
 *
 * SQLite: the file and its directory get the ownership/symlink checks
 * above; a corrupt or unreadable file is an error with a sentence, never a
 * crash.  A handle that has written a lot starts one thread of its own,
 * which checkpoints the WAL (its commits never wait for it);
 * tgi_store_close stops it.
 *
 * PostgreSQL: a server that cannot be reached is an error naming the host
 * (never the password).  A connection lost later is reopened with backoff
 * by the next function that needs it; until then they fail with a sentence
 * and tgi_store_transient() says so.
 *
 * As with a database connection, a handle is not used across fork().
 * Threads share a handle with no lock of their own: each function below
 * holds the handle's lock while it runs (store.c), so the calls on one
 * handle run one at a time, as SQLite's FULLMUTEX connections do; a
 * callback given to a function (migrate's, export's) runs under that lock
 * and must not use the handle.  Two calls are two: other threads and
 * other processes may write between them.  tgi_store_close is the last
 * call, made when no other thread will use the handle again.
 */
int  tgi_store_open(const char *where, int flags, tgi_store **out, char *err, size_t errlen);
void tgi_store_close(tgi_store *s);

/*
 * The ledger's identity (identity.c).  tgi_store_open is
 * tgi_store_open_keyed with the default key (NULL).  A ledger at the
 * current schema has one identity: a UUID, what it is bound to (SQLite:
 * the file's real path; PostgreSQL: the database's name), when it was
 * made, and a MAC under the machine key.  A new, empty ledger gets one at
 * open.  A ledger whose identity does not verify under this machine's key,
 * is bound elsewhere (a copy), or that holds records but no identity (a
 * ledger from before identities, or made by hand) is foreign: the open
 * fails with a sentence saying what was found and what to do, unless
 * TGI_STORE_FOREIGN_OK.  A key that cannot be loaded fails the open with
 * its sentence (with TGI_STORE_FOREIGN_OK: opened as foreign, that
 * sentence saying why).  Otherwise the store is keyed: the rows that carry
 * authority are MACed under keys derived from the machine key and the
 * ledger's id.  TGI_STORE_MEMORY: a random one-off identity and key.  A
 * schema left behind (TGI_STORE_NO_MIGRATE) has no identity yet: the store
 * is neither keyed nor foreign until tgi_store_identify.
 */
int tgi_store_open_keyed(const char *where, int flags, const tgi_key_source *key,
                         tgi_store **out, char *err, size_t errlen);

/*
 * Open the ledger a configuration names (open.c), as a gate and the ledger
 * commands do: where it is (cfg->store, a file or a URL), its sync
 * (cfg->sync_full) and the machine key's source (cfg->key_env, key_file),
 * with tgi_store_open_keyed.  flags: TGI_STORE_NO_MIGRATE and
 * TGI_STORE_FOREIGN_OK as there, and these two, which apply to a ledger
 * file only:
 */
#define TGI_STORE_EXISTING  32  /* a ledger file that is there (MUST_EXIST); when there is
                                 * none, an empty one in memory (MEMORY) and *missing 1 */
#define TGI_STORE_STATE_DIR 64  /* without EXISTING: check (and make) the workspace's state
                                 * directory first (tgi_state_dir_open) */
struct tgi_config;
int tgi_store_open_for(const struct tgi_config *cfg, int flags, tgi_store **out, int *missing,
                       char *err, size_t errlen);

/* A ledger's where (a path, or a URL) fit for a sentence into out (open.c):
 * a URL keeps its scheme, host, port, database and its host and port
 * parameters; never its user, password (whatever it holds: '?', '#', '/'
 * or '@') or another parameter.  Control characters are stripped. */
void tgi_ledger_shown_where(const char *where, char *out, size_t cap);

/* Check (or give, when new and empty) the identity of s, as open does: for
 * a ledger migrated after an open with TGI_STORE_NO_MIGRATE.  flags:
 * TGI_STORE_FOREIGN_OK or 0.  0 (keyed, or foreign with the flag), or -1
 * with err. */
int tgi_store_identify(tgi_store *s, const tgi_key_source *key, int flags, char *err,
                       size_t errlen);

/* The default key's directory ($XDG_STATE_HOME/toolgate, else
 * ~/.local/state/toolgate) into out: 0, or -1 when there is none. */
int tgi_key_default_dir(char *out, size_t cap);

/* NULL when s is this machine's ledger (or not identified yet); else the
 * sentence that says why it is foreign (borrowed). */
const char *tgi_store_foreign(const tgi_store *s);

/* The key redaction's masks are made with (32 bytes), or NULL when s is
 * not keyed. */
const unsigned char *tgi_store_mask_key(const tgi_store *s);

/* What a ledger holds that adopting it leaves without authority. */
typedef struct tgi_ledger_rows {
	int64_t ops, events, approvals, idem, pins, buckets;
} tgi_ledger_rows;

/* Give s a new identity bound here under this machine's key (toolgate
 * ledger adopt).  Nothing is re-signed: every approval, claim, pin and
 * bucket already there (counted into *rows) keeps its MAC, which no longer
 * verifies, and so carries no authority; the history stays readable.  A
 * ledger that is this machine's already is refused (adopting it would
 * only void its authority).  0, or -1 with err. */
int tgi_store_adopt(tgi_store *s, const tgi_key_source *key, tgi_ledger_rows *rows, char *err,
                    size_t errlen);

/* "sqlite" or "postgres". */
const char *tgi_store_kind(const tgi_store *s);

/* 1 when several gates on several hosts share this store at once
 * (PostgreSQL): times that must agree between gates are the store's clock.
 * (Whatever the store, middleware keeps no private copy of what lives in
 * it: rate-limit buckets are taken in the store, loop windows read from it
 * on every call, since several processes may use one SQLite ledger too.) */
int tgi_store_shared(const tgi_store *s);

/* 1 when the last failure of this handle, in the calling thread's last
 * call on it, was the database being out of reach (connection lost, server
 * shutting down, reconnect backoff): a retry later may succeed.  0 after a
 * success or any other failure.  (A thread that made no call on the handle
 * yet: what its last call, by any thread, met.) */
int tgi_store_transient(const tgi_store *s);

/* ---- schema: versioned migrations, numbered alike for both stores ---- */

/* Migration n (1-based) takes the schema from version n - 1 to n. */
#define TGI_STORE_SCHEMA_VERSION 8

/* A one-line description of migration n (1..TGI_STORE_SCHEMA_VERSION). */
const char *tgi_store_migration_title(int n);

/* The schema version of the open ledger (0: empty). */
int tgi_store_schema_version(tgi_store *s, int *version, char *err, size_t errlen);

/* Apply migrations from the current version up to `to` (0: the latest),
 * each in its own transaction, in order; fn (may be NULL) is told each
 * migration's number before it is applied (or, with dry_run, instead).
 * A `to` below the current version is refused (migrations only go
 * forward), as is a schema ahead of this program.  A failed migration
 * leaves the schema at the version before it.  fn runs under the handle's
 * lock: it must not use s. */
int tgi_store_migrate(tgi_store *s, int to, int dry_run, void (*fn)(void *arg, int n), void *arg,
                      char *err, size_t errlen);

/* ---- ops + events: one call's record, written in one transaction ---- */

typedef struct tgi_event {
	const char *type;    /* "tool.call.received", ... */
	const char *stage;   /* or NULL */
	json_t     *data;    /* borrowed, may be NULL */
	int64_t     ts_ms;   /* unix ms */
	int64_t     seq;     /* set by the store when written (0 until then) */
} tgi_event;

typedef struct tgi_op_record {
	const char *op_id, *call_id, *session, *tool, *principal;
	const char *status;          /* tg_status_name() */
	const char *error_kind;      /* or NULL */
	const char *idem_scope;      /* or NULL */
	const char *args_redacted;   /* JSON text */
	const char *args_sha256;     /* of the raw canonical args */
	const char *envelope;        /* JSON text */
	int64_t     started_ms;      /* unix ms */
	double      duration_ms;
	const char *loop;            /* the loop-detection window entry (opaque text, short:
	                              * the ledger keeps it in an index), or NULL */
	const char *manifest;        /* the session's tool manifest digest now, or NULL */
	const char *idem_binding;    /* the binding its claim was made with (a `done` row's MAC
	                              * covers it), or NULL */
} tgi_op_record;

/* What the same transaction does to the call's idempotency row. */
typedef enum {
	TGI_SETTLE_NONE,     /* no idem row involved (or leave it as it is) */
	TGI_SETTLE_DONE,     /* the side effect happened: scope -> done, this op_id */
	TGI_SETTLE_RELEASE,  /* nothing was applied: delete the claim so a retry may run */
	TGI_SETTLE_UNKNOWN,  /* may have been applied: scope -> unknown (never re-run) */
} tgi_idem_settle;

/* Insert the ops row and its events atomically (and the sessions row is
 * upserted: first/last seen, call count, manifest).
 * If idem_scope is not NULL, its idem row is settled as `settle` in the
 * same transaction.  Each ev[i].seq is set to the seq it was given (0
 * when the record fails: nothing was written). */
int tgi_store_record(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle settle, char *err, size_t errlen);

/* ---- what middleware keeps across processes and restarts ---- */

/* The manifest digest the session last ran with (sessions.manifest) into
 * out[65]; "" when the session is new or has none. */
int tgi_store_session_manifest(tgi_store *s, const char *session, char out[65], char *err,
                               size_t errlen);

/* The loop entries (tgi_op_record.loop) of the newest `limit` calls of a
 * session, newest first; calls without an entry are skipped.  Appended to
 * out.  session is required: NULL or "" is refused (-1 with err). */
int tgi_store_loop_window(tgi_store *s, const char *session, size_t limit, tgi_strv *out,
                          char *err, size_t errlen);

/* A rate-limit bucket as tgi_store_bucket_take last left it: tokens at
 * updated_ms (not refilled since); *found 0 when there is none, or when
 * its MAC does not verify (a fresh bucket, as if it were deleted). */
int tgi_store_bucket_get(tgi_store *s, const char *principal, const char *tool, double *tokens,
                         int64_t *updated_ms, int *found, char *err, size_t errlen);

/* Take want (>= 1) tokens, or as many whole ones as there are, from the
 * bucket of (principal, tool), refilled at rate
 * tokens a second up to burst (a new bucket starts full), atomically in
 * the store, so that every process and gate using it draws from one
 * bucket: one transaction (SQLite: BEGIN IMMEDIATE, on this host's clock)
 * or one statement (PostgreSQL, on the server's clock).  A clock that went
 * backwards refills nothing and takes nothing away.  *took: how many were
 * taken; 0: empty, *retry_after_s says when the next whole token comes (to the
 * millisecond above).  *left: the tokens the bucket holds afterwards.
 * A rate that is not above 0 or a burst under 1 is refused. */
int tgi_store_bucket_take(tgi_store *s, const char *principal, const char *tool, double rate,
                          double burst, int want, int *took, double *left, double *retry_after_s, char *err,
                          size_t errlen);

/* ---- idempotency ---- */

typedef enum {
	TGI_IDEM_CLAIMED,     /* new: we own it, in_flight committed with FULL sync */
	TGI_IDEM_DONE,        /* a persisted op exists: replay it */
	TGI_IDEM_IN_FLIGHT,   /* another live owner is running it: pending */
	TGI_IDEM_UNKNOWN,     /* in_flight whose owner is gone: unknown outcome */
	TGI_IDEM_RETRYABLE,   /* settled as not applied (or failed with applied=no): may run again */
	TGI_IDEM_CONFLICT,    /* the scope is held by a different call (another binding) */
	TGI_IDEM_UNAPPROVED,  /* the claim would have been taken, but the approval to spend with
	                       * it was no longer usable (used by another call, expired, or it
	                       * did not verify): nothing was claimed or spent */
} tgi_idem_state;

typedef struct tgi_idem_info {
	tgi_idem_state state;
	int     unverified;       /* UNKNOWN: the row found (done or in_flight) did not verify
	                           * under the ledger's key: its claim of a result is no one's */
	char    op_id[37];        /* owning / original op */
	char   *envelope;         /* DONE: the original envelope JSON (caller frees) */
	double  retry_after_s;    /* IN_FLIGHT: suggested wait */
} tgi_idem_info;

/*
 * Claim scope for op_id.  binding (sha256 hex of what the call is: tool,
 * principal, canonical args; NULL: not compared) is kept with the claim; a
 * scope already held under a different binding answers CONFLICT, so one
 * key never returns another call's result.  Owner = this host (hostname,
 * boot id and pid namespace: a pid is looked up only by a process of that
 * very host and namespace), pid and process start time, with a lease of
 * lease_s seconds.  A row whose owner process is dead (or whose start time
 * differs: pid reuse), or whose lease expired on another host, is UNKNOWN
 * and is never re-run silently.  A row settled as not
 * applied (tgi_store_op_resolve applied=0, or TGI_SETTLE_RELEASE) is
 * claimed again; a row settled unknown is UNKNOWN.  The claim commits with synchronous=FULL before returning.
 */
int tgi_store_idem_claim(tgi_store *s, const char *scope, const char *op_id, const char *binding,
                         int lease_s, tgi_idem_info *info, char *err, size_t errlen);

/* What a ledger keeps of an idempotency scope: "sha256:" and the sha256
 * hex of its text (a key is the model's text and may hold a secret it was
 * shown).  A scope already in that form is kept as it is, so a digest is
 * never digested twice.  tgi_store_idem_claim and tgi_store_record take a
 * scope in either form and keep only the digest. */
#define TGI_SCOPE_DIGEST_LEN 71
int  tgi_scope_is_digest(const char *scope);
void tgi_scope_digest(const char *scope, char out[TGI_SCOPE_DIGEST_LEN + 1]);

/* An approval to spend with a claim: id, of principal, for binding (the
 * approval's binding, tgi_approval_row.binding). */
typedef struct tgi_approval_spend {
	const char *id, *principal, *binding;
} tgi_approval_spend;

/*
 * tgi_store_idem_claim that spends an approval (spend, may be NULL: none)
 * in the same transaction, and only when the call will run (CLAIMED or
 * RETRYABLE): the approval becomes `used` as tgi_store_approval_use says.
 * When it cannot be used, nothing is claimed or spent and the answer is
 * UNAPPROVED.  DONE, IN_FLIGHT, UNKNOWN and CONFLICT leave it unspent.
 */
int tgi_store_idem_claim_spend(tgi_store *s, const char *scope, const char *op_id,
                               const char *binding, int lease_s,
                               const tgi_approval_spend *spend, tgi_idem_info *info, char *err,
                               size_t errlen);

/* Settle an unknown outcome (toolgate ops resolve).  applied=1: the scope
 * becomes done with that op (its envelope marked applied); applied=0: the
 * scope is released.  Error if op_id has no in_flight/unknown idem row, or
 * while its owner may still run it: an in_flight row's, or an unknown
 * row's that another process marked so (a row the owner settled unknown
 * itself has no owner left). */
int tgi_store_op_resolve(tgi_store *s, const char *op_id, int applied, char *err, size_t errlen);

/* ---- approvals ---- */

/* Bytes of a decision's reason, at most. */
#define TGI_APPROVAL_REASON_MAX 500

/*
 * An approval.  Read back (get, list), its strings are the caller's: free
 * them with tgi_approval_row_clear (one row) or tgi_approval_rows_free.
 * Given to tgi_store_approval_add, they are borrowed.
 */
typedef struct tgi_approval_row {
	char    id[37];
	char    op_id[37];
	char    tool[128];
	char    principal[128];
	char    binding[65];   /* sha256(tool + "\n" + canonical args) */
	char    state[16];     /* pending, approved, denied, used, expired */
	char   *args;          /* redacted args JSON */
	char   *reason;        /* why it was asked */
	char   *plan;          /* the call's dry-run plan (a JSON object, redacted), or NULL:
	                        * the tool has none, or it could not be made */
	int64_t created_ms, expires_ms;
	char    decided_by[128];
	int64_t decided_ms;    /* when it was decided (0: not decided) */
	char   *decided_reason; /* what the decider said, or NULL */
	int     verified;      /* read back by get or list: its MAC verifies under the
	                        * ledger's key (a pending row has none: 0) */
} tgi_approval_row;

/* Free a row's strings (read back by get or list) and zero them. */
void tgi_approval_row_clear(tgi_approval_row *row);

/* Queue a new pending approval; id is generated (UUIDv7) into row->id.
 * A shared store keeps approval times on its own clock (every gate
 * compares expiries with it): created now there, expiring expires_ms -
 * created_ms later; row->created_ms and expires_ms say what was stored.
 * row->plan, when not NULL, must be a JSON object's text. */
int tgi_store_approval_add(tgi_store *s, tgi_approval_row *row, char *err, size_t errlen);

/* pending -> approved/denied, recorded with who decided (by), when, and
 * why (reason, may be NULL: none).  The reason is kept sanitized (control
 * characters become spaces, bytes that are not UTF-8 U+FFFD, spaces
 * trimmed; nothing left is none); one over TGI_APPROVAL_REASON_MAX bytes
 * is refused.  Error if not pending or expired. */
int tgi_store_approval_decide(tgi_store *s, const char *id, int approve, const char *by,
                              const char *reason, char *err, size_t errlen);

/*
 * Find, without spending it, the approval that answers for this binding and
 * principal: the newest live one (pending, or decided and unexpired) whose
 * decision verifies under the ledger's key; a decided row whose MAC does
 * not verify is as if absent, and counted in *forged (may be NULL).
 * *found: 1 approved (its id copied: spend it with
 * tgi_store_idem_claim_spend or tgi_store_approval_use), -1 denied (id
 * copied), 2 still pending (id copied), 0 none.  id may be NULL.
 */
int tgi_store_approval_find(tgi_store *s, const char *binding, const char *principal,
                            int *found, char id[37], int *forged, char *err, size_t errlen);

/*
 * Find and spend: as find, an approved one then used (tgi_store_approval_use;
 * when another process used it first, the next is looked for).  *found 1:
 * approved and consumed, by this caller alone.  (Bridged tools' pins.)
 */
int tgi_store_approval_take(tgi_store *s, const char *binding, const char *principal,
                            int *found, char pending_id[37], char *err, size_t errlen);

/*
 * Consume the approval id itself (a call waits on that one, not on the
 * newest of its binding): in one transaction it becomes `used` only if it
 * is approved with its decision recorded, unexpired, not used yet, of
 * this principal and binding, and its MAC verifies.  *used 1: consumed,
 * by this caller alone; 0: not (pending, denied, expired, used, another
 * principal's or another call's, or no such approval); -1: approved, but
 * its MAC does not verify (no one's approval).  An id that is not a UUID,
 * or a missing principal or binding, is refused (-1).
 */
int tgi_store_approval_use(tgi_store *s, const char *id, const char *principal,
                           const char *binding, int *used, char *err, size_t errlen);

/* The approval id: *found 0 when there is none.  The caller frees the
 * row's strings (tgi_approval_row_clear); its state is as the list shows
 * it (a pending or approved one past its expiry is "expired"). */
int tgi_store_approval_get(tgi_store *s, const char *id, tgi_approval_row *row, int *found,
                           char *err, size_t errlen);

/* List approvals, newest first: state NULL: all not yet used/expired;
 * "*": every approval; else those in that state (a pending or approved one
 * past its expiry counts as "expired"). */
int  tgi_store_approval_list(tgi_store *s, const char *state, tgi_approval_row **rows, size_t *n,
                             char *err, size_t errlen);
void tgi_approval_rows_free(tgi_approval_row *rows, size_t n);

/* ---- pinned descriptions of bridged MCP tools (rug-pull defence) ---- */

typedef enum {
	TGI_PIN_NEW,      /* first seen: pinned now */
	TGI_PIN_SAME,     /* matches the pin */
	TGI_PIN_CHANGED,  /* differs from the pin (which is left as it is) */
} tgi_pin_state;

/* Compare digest (sha256 hex of description + canonical schema) with the
 * pin of name (the exposed tool name); pin it if there is none.
 * pinned[65] gets the pinned digest.  A pin whose MAC does not verify is
 * CHANGED whatever its digest (pinned[] then says what the row holds). */
int tgi_store_pin_check(tgi_store *s, const char *name, const char *digest, tgi_pin_state *st,
                        char pinned[65], char *err, size_t errlen);
/* Move the pin of name to digest (a change was approved). */
int tgi_store_pin_set(tgi_store *s, const char *name, const char *digest, char *err,
                      size_t errlen);

/* ---- an agent's conversation (toolgate agent) ---- */

/* Append entries (a JSON array of history entries in the shape of the model
 * API named api, already redacted) to session's conversation, after the
 * ones it has, in one transaction.  A session's entries all have one API:
 * appending in another is refused. */
int tgi_store_messages_append(tgi_store *s, const char *session, const char *api,
                              const json_t *entries, char *err, size_t errlen);

/* Session's conversation, oldest first: *out a new JSON array (empty when
 * the session has none), api[32] the API of its entries ("" when none). */
int tgi_store_messages(tgi_store *s, const char *session, json_t **out, char api[32],
                       char *err, size_t errlen);

/* ---- eval runs (toolgate eval) ---- */

/* One run of an eval suite: who was tested on what, and how it scored. */
typedef struct tgi_eval_row {
	const char *id;          /* UUIDv7 */
	int64_t     ts_ms;       /* when it started (unix ms) */
	const char *provider, *api, *model, *profile;
	const char *manifest;    /* sha256 of the profile's tool definitions */
	const char *suite;       /* sha256 of the suite's cases */
	int64_t     cases, runs;
	double      score[5];    /* tool, valid, args, policy, pass rates; NAN: none */
	const char *report;      /* JSON text: the report less its results (scores, definitions) */
} tgi_eval_row;

#define TGI_EVAL_TEXT_MAX 256  /* bytes of a provider, api, model, profile, manifest, suite */

/* Keep a run (one transaction).  Refused: an id that is not a UUID, a
 * report that is not a JSON object, negative cases or runs, a score that
 * is neither NAN nor within 0..1, a text that is not UTF-8 or is longer
 * than TGI_EVAL_TEXT_MAX (a NULL text is kept as null), an id kept
 * before.  The report is kept as the text given. */
int tgi_store_eval_put(tgi_store *s, const tgi_eval_row *r, char *err, size_t errlen);

/* The newest limit runs (limit < 1: all) of model (NULL: of every model),
 * oldest first (by ts_ms, then id): *out a new array of {"id", "ts" (ISO
 * 8601), "provider", "api", "model", "profile", "manifest", "suite",
 * "cases", "runs", "scores": {"tool", "valid", "args", "policy", "pass":
 * rate|null}, "report": {...}}; a text kept NULL reads null. */
int tgi_store_eval_list(tgi_store *s, const char *model, int64_t limit, json_t **out, char *err,
                        size_t errlen);

/* An event written on its own: one that belongs to no call (op_id NULL:
 * mcp.tool.changed, mcp.server.down, ...) or one that comes after a call's
 * row (an after-hook that failed; op_id must be a UUID).  Sets ev->seq
 * (0 on failure). */
int tgi_store_event(tgi_store *s, const char *op_id, tgi_event *ev, char *err, size_t errlen);

/* ---- reading the log ---- */

typedef struct tgi_log_filter {
	const char *tool;     /* or NULL */
	const char *status;   /* or NULL */
	const char *session;  /* or NULL */
	int64_t     since_ms; /* 0: all */
	const char *op_id;    /* or NULL */
	size_t      limit;    /* 0: all */
} tgi_log_filter;

/* Ops matching the filter, oldest first, as a JSON array of objects
 * {op_id, call_id, session, tool, principal, status, error_kind, started,
 *  duration_ms, args_sha256, envelope (object)}.  Caller decrefs. */
int tgi_store_ops(tgi_store *s, const tgi_log_filter *f, json_t **out, char *err, size_t errlen);

/* Events of the ops matching the filter (or all when f->tool/status/session
 * are NULL), oldest first: [{seq, ts, op_id, type, stage, data, session,
 * principal, tool, status, error_kind, message, args}] (the last seven from
 * the event's op — message is its envelope's error.message, args its
 * redacted args — absent for an event without one).  after_seq skips
 * events with seq <= after_seq (for --follow). */
int tgi_store_events(tgi_store *s, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                     char *err, size_t errlen);

/* The newest event's seq (0 when there is none). */
int tgi_store_last_seq(tgi_store *s, int64_t *seq, char *err, size_t errlen);

/* What `toolgate stats` shows, for calls started at or after since_ms (0:
 * all): {"since", "calls", "tools": [{"tool", "calls", "by_status":
 * {status: n}, "p50_ms", "p99_ms"}], "denials": [{"rule", "kind",
 * "count"}]} (tools by calls, denials by count, both descending).  The
 * percentiles are nearest-rank over the calls whose tool ran (persisted,
 * committed, failed), null when none did; a denial is grouped by its
 * envelope's error.rule (null: denied by no rule) and error kind.  Caller
 * decrefs. */
int tgi_store_stats(tgi_store *s, int64_t since_ms, json_t **out, char *err, size_t errlen);

/* ---- waiting for other processes ---- */

typedef enum {
	TGI_WATCH_EVENTS,     /* new events (toolgate log --follow) */
	TGI_WATCH_APPROVALS,  /* an approval was decided */
} tgi_watch_what;

typedef struct tgi_watch tgi_watch;

/* A watch on s for what: SQLite watches the ledger's files (inotify, a
 * plain timeout where it cannot), PostgreSQL LISTENs on a connection of
 * its own, so a watch never takes s's lock or touches its connection (a
 * wait holds up no call on s); a watch is used by one thread.  Open the watch before the
 * first look at the store, so that no change between the two is missed. */
int  tgi_store_watch_open(tgi_store *s, tgi_watch_what what, tgi_watch **out, char *err,
                          size_t errlen);
/* Wait up to timeout_ms for a change: 1 something may have changed (look
 * again), 0 the time ran out.  A wait may return 1 early or spuriously, and
 * a lost PostgreSQL connection returns 1 at once after its reconnect wait:
 * callers always look again. */
int  tgi_store_watch_wait(tgi_watch *w, int timeout_ms);
void tgi_store_watch_close(tgi_watch *w);

/* ---- moving history between ledgers (toolgate ledger export/import) ---- */

/* Every op started at or after since_ms (0: all), oldest first, to fn one
 * at a time as {op_id, call_id, session, tool, principal, status,
 * error_kind, idem_scope, idem_state ("done", "unknown", or null),
 * idem_binding (its claim's binding, or null), args (redacted, parsed),
 * args_sha256, envelope (object), started_ms, duration_ms, loop, events:
 * [{ts_ms, type, stage, data}] (oldest first)}; then each event of no op at
 * or after since_ms as {event: {ts_ms, type, stage, data}}; then each idem
 * row in_flight or unknown made at or after since_ms whose op_id has no ops
 * row (its process died while the tool ran) as {claim: {scope, op_id,
 * state, binding, created_ms}}.  All of it from one snapshot of the
 * ledger.  fn owns nothing; a non-zero return stops the export (and is
 * returned); an op whose events cannot be read back fails it (-1).  fn
 * runs under the handle's lock: it must not use s. */
int tgi_store_export(tgi_store *s, int64_t since_ms, int (*fn)(void *arg, json_t *row), void *arg,
                     char *err, size_t errlen);

/* Calls whose outcome is unknown, oldest first: *out a new array of
 * {op_id, tool, principal, session, status, started (ISO 8601), message,
 * claim, scope}: each op whose envelope says error.applied "unknown" and
 * that no operator has settled (tool.call.resolved), with its claim's
 * state and scope when it holds one (else null), and each claim in_flight
 * or unknown that has no such op (its process died while the tool ran:
 * the op's columns null, started when the claim was made).  A claim
 * in_flight whose owner still runs it is not listed: that call is
 * running. */
int tgi_store_unknown(tgi_store *s, json_t **out, char *err, size_t errlen);

/* ---- spill files (src/store/spill.c) ---- */

/* Write text to <state_dir>/spill/<op_id>.txt atomically (0600; spill/ is
 * created 0700), with <op_id>.session beside it naming the session it was
 * made for (session NULL or "": a call of no session).  path_out receives
 * the path relative to the workspace (".toolgate/spill/<op_id>.txt"). */
int tgi_spill_write(int state_fd, const char *op_id, const char *session, const char *text,
                    size_t len, char *path_out, size_t cap, char *err, size_t errlen);

/* May a call of session (NULL or "": none) read the spill file relpath
 * (".toolgate/spill/<op_id>.txt", tgi_path_is_spill)?  1 yes; 0 no, with a
 * sentence in msg: a spill of another session, or one with no record of
 * its session. */
int tgi_spill_readable(int ws_fd, const char *relpath, const char *session, char *msg,
                       size_t msgcap);

/* Remove spill files (with their session records and leftover temp files)
 * whose mtime is more than keep_s seconds before now_ms, looking at a
 * bounded number of names.  The number removed, or -1 (nothing to say: the
 * next open tries again). */
int tgi_spill_prune(int state_fd, long long keep_s, int64_t now_ms);

/* ---- internal to src/store/ (state.c): the checks sqlite.c and spill.c share ---- */

/* Open the directory `name` beneath dir_fd (created 0700 if missing) with
 * the state checks above.  shown names it in sentences (".toolgate/spill"),
 * guards says what a redirect would hijack ("spill files"), where names the
 * parent in create/open failures (or NULL).  Returns an O_DIRECTORY fd or -1. */
int tgi_state_subdir_open(int dir_fd, const char *name, const char *shown, const char *guards,
                          const char *where, char *err, size_t errlen);

/* lstat path and apply the state checks: refuse a symlink, something that is
 * not a directory (want_dir) or regular file, or an owner other than the
 * current user.  A missing path is 0 when may_be_missing, else -1.  shown
 * names it in sentences. */
int tgi_state_check_path(const char *path, int want_dir, int may_be_missing, const char *shown,
                         char *err, size_t errlen);

/* Is s shaped like a UUID (8-4-4-4-12 lowercase or uppercase hex)?  Op ids
 * name files under the state dir, so nothing else may pass as one. */
int tgi_uuid_ok(const char *s);

#endif
