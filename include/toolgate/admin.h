/*
 * toolgate/admin.h — the operator's entry points of libtoolgate: the ledger
 * read (log, follow, stats, approvals, unknown outcomes) and acted on
 * (approve, deny, settle), the ledger alone without a gate (migrate,
 * export, import, adopt), the policy checked and explained, the doctor.
 * `toolgate log|stats|approvals|ops|migrate|ledger|policy|doctor` are
 * built on these.
 *
 * Included by toolgate.h, which holds the core (tg_gate, tg_options, the
 * statuses) and the ownership rule every function here keeps: a pointer
 * returned through an out-parameter is the caller's (freed as stated),
 * every destroy function accepts NULL, pointers passed in are borrowed for
 * the call.
 */
#ifndef TOOLGATE_ADMIN_H
#define TOOLGATE_ADMIN_H

#include <stddef.h>

#include "../toolgate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reading the ledger ---------------------------------------------------- */

typedef struct tg_log_query {
	const char *tool;     /* only calls of this tool, or NULL */
	const char *status;   /* only calls that ended so, or NULL */
	const char *session;  /* only calls of this session, or NULL */
	const char *op_id;    /* one call, or NULL */
	long long   since_ms; /* unix ms; 0: from the start */
	size_t      limit;    /* the newest N calls; 0: all */
} tg_log_query;

/*
 * The calls matching q, oldest first, as a JSON array of objects {op_id,
 * call_id, session, tool, principal, status, error_kind, started,
 * duration_ms, args_sha256, envelope, events: [{seq, ts, type, stage,
 * data}]}: every call with all of its events.  Caller frees with free();
 * NULL with *errmsg on error.
 */
char *tg_log(tg_gate *g, const tg_log_query *q, char **errmsg);

/*
 * Follow the ledger's events as they are written, by this process or any
 * other: each event matching q (tool, status, session; since_ms and limit
 * are ignored) after seq after_seq (-1: only events written from now on)
 * is passed to fn as one JSON line {seq, ts, type, stage, op_id, session,
 * principal, tool, status, summary, data} (redacted), oldest first.  Waits
 * for new events without polling the database in a busy loop.  Returns 0
 * when fn returns nonzero or *stop becomes nonzero (checked at least every
 * 250 ms), -1 with *errmsg when the ledger cannot be read.
 */
int tg_log_follow(tg_gate *g, const tg_log_query *q, long long after_seq,
                  int (*fn)(void *arg, const char *event_json), void *arg,
                  volatile const int *stop, char **errmsg);

/*
 * Per-tool counts by status, p50/p99 duration and denials by rule for the
 * calls started at or after since_ms (0: all), as JSON: {"since", "calls",
 * "tools": [{"tool", "calls", "by_status": {...}, "p50_ms", "p99_ms"}],
 * "denials": [{"rule", "kind", "count"}]} (rule null: denied by no rule,
 * e.g. an unknown principal).  Caller frees; NULL with *errmsg.
 */
char *tg_stats(tg_gate *g, long long since_ms, char **errmsg);

/* ---- approvals and unknown outcomes ------------------------------------- */

/*
 * Approvals as a JSON array of {id, state, tool, principal, args, reason,
 * op_id, created, expires, plan, decided, decided_by, decided_reason},
 * newest first: the open ones (pending or approved, unexpired), or every
 * one with all != 0.  args is the call's arguments as JSON text
 * (redacted); reason why it was asked (the rule); plan what the call would
 * do, as a dry run shows it (an object, redacted: for write_file and
 * apply_patch the paths and a unified diff, for shell the argv, workdir,
 * sandbox and environment names), or null when the tool has none;
 * decided (ISO 8601), decided_by and decided_reason are null until it is
 * decided (decided_reason stays null when none was given).  Caller frees
 * with free(); NULL with *errmsg on error.
 */
char *tg_approvals(tg_gate *g, int all, char **errmsg);

/*
 * Decide a queued approval: approve (1) or deny (0), recorded with who
 * decided (by; NULL: "operator"), when, and why (reason; NULL or blank:
 * none).  The reason is kept as the ledger keeps text: secrets masked,
 * control characters as spaces, at most 500 bytes (a longer one is
 * refused).  A call denied by it is told "the owner denied this call
 * (approval ID, by WHO): REASON; do not retry; ask the owner", whether it
 * was waiting for the decision or is retried after it.  0 on success, -1
 * with *errmsg (no such approval, not pending, expired, reason too long).
 */
int tg_approval_decide(tg_gate *g, const char *approval_id, int approve,
                       const char *by, const char *reason, char **errmsg);

/*
 * Settle an unknown outcome: the operator says whether op_id's side effect
 * happened.  A later repeat of the call then replays (applied) or may run
 * again (not applied); a call without a claim (no key, no call id) is only
 * marked settled.  0 on success, -1 with *errmsg.
 */
int tg_op_resolve(tg_gate *g, const char *op_id, int applied, char **errmsg);

/*
 * The calls whose outcome is unknown, oldest first, as a JSON array of
 * {op_id, tool, principal, session, status, started, message, claim,
 * scope}: every call recorded with `applied: unknown` (interrupted, timed
 * out, killed) that no operator has settled with tg_op_resolve, and every
 * idempotency claim whose process stopped before it could record its call
 * (tool, status and message null; claim "in_flight" or "unknown").  claim
 * and scope are the call's idempotency claim, null for a call without one.
 * Caller frees with free(); NULL with *errmsg on error.
 */
char *tg_ops_unknown(tg_gate *g, char **errmsg);

/* ---- the ledger alone: toolgate migrate, toolgate ledger export|import ---- */

typedef struct tg_ledger tg_ledger;

/* Flags of tg_ledger_open. */
#define TG_LEDGER_MIGRATE  1  /* a schema that is behind is brought up to date (as a gate does
                                 at open); without it, it is left as it is, and only
                                 tg_ledger_version and tg_ledger_migrate may be used */
#define TG_LEDGER_EXISTING 2  /* open only a ledger file that is there, creating nothing (not
                                 .toolgate/, not the file): without one, return 1 with an
                                 empty ledger in memory standing in for it */
#define TG_LEDGER_FOREIGN_OK 4 /* a foreign ledger (one this machine's key does not know:
                                 see tg_ledger_foreign) is opened to be read or adopted;
                                 without it such a ledger fails the open with a sentence */

/*
 * Open the ledger a configuration names (config_path as for tg_options):
 * its `store:`, or $TOOLGATE_STORE, which wins; a file path (SQLite) or a
 * postgres:// URL.  No gate is opened: tools, policy and middleware are
 * not compiled.  flags: TG_LEDGER_*.  A schema ahead of this program is
 * refused.  0; 1 with TG_LEDGER_EXISTING when there is no ledger, *out an
 * empty one in memory (schema version 0 without TG_LEDGER_MIGRATE: what
 * creating it would apply) and *errmsg saying where it would be; or -1
 * with *errmsg (caller frees).
 */
int  tg_ledger_open(const char *config_path, int flags, tg_ledger **out, char **errmsg);
void tg_ledger_close(tg_ledger *l);

/*
 * NULL when the ledger is this machine's; else the sentence that says why it
 * is foreign (borrowed): its identity was not made by this machine's key
 * (ledger.key_file, ledger.key_env, else $XDG_STATE_HOME/toolgate/key), it
 * is bound to another place (a copy), or it holds records but no identity.
 * Nothing is written to a foreign ledger until it is adopted.
 */
const char *tg_ledger_foreign(const tg_ledger *l);

/* What adopting left without authority: the rows already there. */
typedef struct tg_ledger_adopted {
	size_t ops, events, approvals, claims, pins, buckets;
} tg_ledger_adopted;

/*
 * Adopt a foreign ledger (opened with TG_LEDGER_FOREIGN_OK and
 * TG_LEDGER_MIGRATE): give it a new identity bound here under this
 * machine's key.  Nothing is re-signed: its approvals, idempotency claims,
 * pins and rate-limit buckets carry no authority from then on (an approval
 * is absent, a done claim an unknown outcome), and its history stays
 * readable.  A ledger that is this machine's already is refused.  0 with
 * *n, or -1 with *errmsg.
 */
int tg_ledger_adopt(tg_ledger *l, tg_ledger_adopted *n, char **errmsg);

/* "sqlite" or "postgres"; where: the file, or the URL without its user,
 * password and parameters.  Borrowed until tg_ledger_close. */
const char *tg_ledger_kind(const tg_ledger *l);
const char *tg_ledger_where(const tg_ledger *l);

/* The schema version of the ledger (0: empty); 0, or -1 with *errmsg. */
int tg_ledger_version(tg_ledger *l, int *version, char **errmsg);
/* The newest schema version this program knows, and migration n's title
 * (1..newest; NULL otherwise). */
int         tg_ledger_latest(void);
const char *tg_ledger_migration_title(int n);

/*
 * Apply the migrations from the ledger's version up to `to` (0: the
 * newest), in order, each in its own transaction; fn (may be NULL) hears
 * each one's number and title before it is applied (with dry_run: instead).
 * A `to` below the ledger's version is refused: migrations only go
 * forward.  A failed migration leaves the ledger at the version before it.
 * 0, or -1 with *errmsg.
 */
int tg_ledger_migrate(tg_ledger *l, int to, int dry_run,
                      void (*fn)(void *arg, int n, const char *title), void *arg, char **errmsg);

/* What an export or an import went through. */
typedef struct tg_ledger_counts {
	size_t ops, events;                   /* exported, or imported (an op's own and
	                                         events of no op) */
	size_t claims;                        /* unknown outcomes of calls that left no op
	                                         (their process died mid-call) */
	size_t skipped_ops, skipped_events, skipped_claims; /* import: already there */
	size_t lines;                         /* import: lines read (a failed one included) */
	size_t eval_runs;                     /* runs of toolgate eval exported, or imported */
	size_t skipped_eval_runs;             /* import: already there (by id) */
} tg_ledger_counts;

/*
 * Export the calls started at or after since_ms (0: all) and the events of
 * no op since then, as JSON lines to fn (each without its newline): a
 * header {"toolgate_ledger": 2, "schema", "exported_at", "since", "store"},
 * then one line per op, oldest first, with its events, then one
 * {"event": ...} line per event of no op, then one {"claim": ...} line per
 * idempotency claim in flight or unknown whose call left no op (a process
 * that died while its tool ran), then one {"eval_run": ...} line per run of
 * toolgate eval started since then, oldest first.  fn returning nonzero
 * stops the export (-1).  counts (may be NULL) gets what was exported.  0,
 * or -1 with *errmsg.
 */
int tg_ledger_export(tg_ledger *l, long long since_ms,
                     int (*fn)(void *arg, const char *line, size_t len), void *arg,
                     tg_ledger_counts *counts, char **errmsg);

/*
 * Import an export read from fd into the ledger, line by line: the header
 * is checked, each op is written with its events in one transaction (an
 * op already in the ledger is skipped whole), an op whose idempotency
 * claim was done is done here too (so a repeat replays it) and one whose
 * outcome was unknown stays unknown (never re-run), as does a claim whose
 * call left no op; an event of no op, a claim or an eval run (by its id)
 * that the ledger already holds is skipped.  An export in format 1 (from
 * before eval runs were exported) is read too.  Running it twice imports
 * nothing the second time.  A line that is not an export line stops it:
 * -1 with *errmsg ("line 7: ..."), everything before that line written,
 * nothing of it or after.  counts (may be NULL) says how far it got.
 */
int tg_ledger_import(tg_ledger *l, int fd, tg_ledger_counts *counts, char **errmsg);

/* ---- policy: toolgate policy check|test, toolgate doctor -------------- */

/*
 * Codex's `execpolicy check` answer for one command, its words taken as
 * they are (no splitting, unwrapping or normalising):
 * {"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":[...],"decision":
 * ...,"resolvedProgram":...,"justification":...}}],"decision":...}, or
 * {"matchedRules":[]}.  A program given as a path is judged by the rules
 * for its basename only with TG_POLICY_RESOLVE_HOST (Codex's
 * --resolve-host-executables).  Rules from the files given, or when
 * nfiles is 0 from the configuration's `execpolicy:` (config_path as for
 * tg_options).  Caller frees; NULL with *errmsg (a file that does not
 * load, with file:line).
 */
#define TG_POLICY_PRETTY       1u  /* indented JSON, as Codex's --pretty */
#define TG_POLICY_RESOLVE_HOST 2u  /* Codex's --resolve-host-executables */
char *tg_policy_check(const char *config_path, const char *const *files, size_t nfiles,
                      const char *const *argv, size_t argc, unsigned flags, char **errmsg);

/*
 * The same command through the gate without running it:
 * {"command", "execpolicy": <as tg_policy_check, over the simple commands
 * the gate judges, as the gate reads program paths>, "floor": null or a reason,
 * "opaque": [...], "read_only", "mode", "sandbox", "decision":
 * allow|ask|deny, "rule", "stage"}.  With nfiles > 0 the execpolicy rules
 * are those files' instead of the configuration's (for this answer only;
 * g takes no other call meanwhile).  Caller frees; NULL with *errmsg (a
 * rules file that does not load, with file:line).
 */
char *tg_policy_explain(tg_gate *g, const char *const *files, size_t nfiles,
                        const char *const *argv, size_t argc, int pretty, char **errmsg);

/*
 * Every self-test of the configuration: the execpolicy examples (checked
 * as the files load) and each permissions.tests entry (the call decided
 * in a dry run: allow, ask or deny, against `expect`).  *report gets one
 * line per failure and a last line "N passed, N failed".  Returns the
 * number of failures, or -1 with *errmsg.
 */
int tg_policy_test(tg_gate *g, char **report, char **errmsg);

/*
 * What this machine gives the gate, as JSON: the sandbox backend
 * (bubblewrap, landlock, none), the Landlock ABI, seccomp, whether each
 * sandbox mode is enforceable and how, how a process limit is enforced,
 * the execpolicy files loaded.  g may be NULL (no configuration read).
 * Caller frees.
 */
char *tg_doctor(tg_gate *g, int pretty);

#ifdef __cplusplus
}
#endif
#endif /* TOOLGATE_ADMIN_H */
