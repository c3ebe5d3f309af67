/*
 * toolgate.h — the public contract of libtoolgate.
 *
 * A gate is opened from a configuration (YAML or JSON) and takes tool calls.
 * Every call passes decode → validate → identify → decide → approve →
 * execute → shape → persist and ends with exactly one result whose status
 * says how far it got.
 *
 * Ownership, once for the whole API: a function that returns a pointer
 * through an out-parameter transfers it to the caller, who releases it with
 * the matching *_free / *_close function (or free() for plain strings, as
 * stated).  Every destroy function accepts NULL.  Pointers passed in are
 * borrowed for the duration of the call only.  Anything not declared here
 * is private.
 */
#ifndef TOOLGATE_H
#define TOOLGATE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Statuses: stable and append-only.  X(ENUM, "name", exit code of
 * `toolgate call`).
 */
#define TG_STATUS_MAP(X)           \
	X(INVALID,   "invalid",   2) \
	X(DENIED,    "denied",    3) \
	X(PENDING,   "pending",   5) \
	X(FAILED,    "failed",    4) \
	X(COMMITTED, "committed", 6) \
	X(PERSISTED, "persisted", 0) \
	X(REPLAYED,  "replayed",  0) \
	X(DRY_RUN,   "dry_run",   0)

typedef enum tg_status {
#define TG_X_(e, name, code) TG_##e,
	TG_STATUS_MAP(TG_X_)
#undef TG_X_
	TG_STATUS__COUNT
} tg_status;

/*
 * Error kinds (`error.kind`): stable and append-only.
 * X(ENUM, "name", what it means).
 */
#define TG_ERRKIND_MAP(X)                                                        \
	X(NONE,            "none",            "no error")                          \
	X(INVALID_INPUT,   "invalid_input",   "the arguments do not fit the schema") \
	X(UNKNOWN_TOOL,    "unknown_tool",    "no such tool is available")         \
	X(NOT_PERMITTED,   "not_permitted",   "policy does not allow this call")   \
	X(NEEDS_APPROVAL,  "needs_approval",  "the call waits for an approval")    \
	X(AMBIGUOUS,       "ambiguous",       "the request matches more than one thing") \
	X(TRANSIENT,       "transient",       "a temporary failure; retry later")  \
	X(TIMEOUT,         "timeout",         "the tool ran out of time")          \
	X(LOOP_DETECTED,   "loop_detected",   "the same call repeats without progress") \
	X(RATE_LIMITED,    "rate_limited",    "too many calls; retry later")       \
	X(TOOL_ERROR,      "tool_error",      "the tool ran and reported an error") \
	X(UNKNOWN_OUTCOME, "unknown_outcome", "the call may or may not have taken effect")

typedef enum tg_errkind {
#define TG_X_(e, name, text) TG_ERR_##e,
	TG_ERRKIND_MAP(TG_X_)
#undef TG_X_
	TG_ERR__COUNT
} tg_errkind;

const char *tg_status_name(tg_status s);     /* "persisted"; "?" if out of range */
int         tg_status_exit_code(tg_status s); /* 0..6 */
const char *tg_errkind_name(tg_errkind k);
const char *tg_errkind_text(tg_errkind k);
const char *tg_version(void);

/* ---- the gate ---------------------------------------------------------- */

typedef struct tg_gate tg_gate;

typedef struct tg_options {
	const char *config_path; /* NULL: $TOOLGATE_CONFIG, else toolgate.yaml in the current
	                            directory (or workspace, when given) or the nearest one
	                            above it, else built-in defaults */
	const char *workspace;   /* NULL: from the config (its `workspace`, else a found file's
	                            directory, else ".") */
	const char *mode;        /* NULL or default|acceptEdits|plan|bypassPermissions|dryRun */
	const char *approval;    /* NULL or ask|deny|untrusted (on-request, never: ask, deny) */
	const char *profile;     /* NULL: from the config (default "coding") */
	int         sync_full;   /* ledger durability: -1 config, 0 NORMAL, 1 FULL */
	int         interactive; /* nonzero: `ask` may prompt on the terminal */
	int         max_parallel;/* 0: config (limits.max_parallel, default 8); 1: serial */
	int         bridge;      /* nonzero: offer the tools of the configuration's
	                            mcp_servers, each server started when one of its tools
	                            is first needed (serve, call, dispatch); 0: leave them alone */
	int         approval_wait_s; /* a call queued for approval waits this long for the
	                            decision (then runs, or is denied) before it answers
	                            pending: -1 or 0 config (approvals.wait_s, default 0) */
	int         no_create;   /* nonzero: the gate creates nothing in the workspace (the
	                            read-only commands: log, stats, doctor, tools, ...): not
	                            .toolgate/, not the ledger file; a ledger that is there is
	                            opened, and without one the gate holds an empty ledger in
	                            memory, whose records are gone at close (tg_gate_ledger
	                            says which); a patch a crash interrupted is finished
	                            all the same when .toolgate/journal is there */
	int         foreign_ok;  /* nonzero: a ledger this machine's key does not know (a
	                            foreign one, which arrived with a repository, say) is opened
	                            to be read (the read-only commands), tg_gate_foreign saying
	                            why; nothing is written to it and no call runs.  0: such a
	                            ledger fails the open with that sentence */
} tg_options;

/*
 * Open a gate.  Returns 0 and *out, or -1 with *errmsg (caller frees with
 * free()) naming the file, line and what was expected.
 */
int  tg_gate_open(const tg_options *opts, tg_gate **out, char **errmsg);
void tg_gate_close(tg_gate *g);

/* NULL when the gate's ledger is this machine's; else (opened with
 * foreign_ok) the sentence saying why it is foreign: what was found and
 * what to do.  Borrowed until tg_gate_close. */
const char *tg_gate_foreign(const tg_gate *g);

/* Where the gate's ledger is, into where[cap] (a file, or a URL without its
 * credentials), returned; *exists (may be NULL) 0 when the gate was opened
 * with no_create and there was none (it holds an empty one in memory). */
const char *tg_gate_ledger(const tg_gate *g, int *exists, char *where, size_t cap);

/* ---- calls ------------------------------------------------------------- */

/*
 * What a long-lived caller (the MCP server) hears while one call runs, and
 * how the gate reaches the human behind it.  Every member may be NULL.
 * They are called on the thread running the call, and from a bridged
 * server's reader thread for progress and log, so they must be
 * thread-safe; text arguments are borrowed for the duration of the call.
 */
typedef struct tg_callbacks {
	void *arg;
	/* the running tool made progress (bridged servers' notifications/progress;
	 * total < 0: unknown; message may be NULL) */
	void (*progress)(void *arg, double progress, double total, const char *message);
	/* the running tool logged (bridged servers' notifications/message):
	 * level as MCP names it, logger may be NULL, data is JSON text */
	void (*log)(void *arg, const char *level, const char *logger, const char *data);
	/* an `ask` decision: ask the human now.  tool, its canonical arguments
	 * (JSON text, redacted) and the rule that asked.  Return 1 to allow this
	 * call once, 0 to deny it (declined, cancelled or no answer), -1 when
	 * nobody can be asked or the question went unanswered and the owner
	 * should decide (the approval is then queued as usual).  reason[cap]
	 * may get a phrase: why it was denied, what became of the question, or
	 * the reason the person gave for allowing it; it is recorded. */
	int (*approve)(void *arg, const char *tool, const char *args, const char *rule,
	               char *reason, size_t cap);
	/* a bridged server's request to the client (elicitation/create, ...),
	 * relayed upstream: method and params (JSON text).  Returns 0 with
	 * *result (JSON text, caller frees) or -1 with *error (a JSON-RPC error
	 * object as JSON text, caller frees). */
	int (*request)(void *arg, const char *method, const char *params, char **result,
	               char **error);
} tg_callbacks;

typedef struct tg_request {
	const char *tool;            /* tool name */
	const char *args;            /* arguments as JSON text; NULL means {} */
	size_t      args_len;        /* bytes of args; 0 with args set: strlen */
	const char *call_id;         /* provider call id, or NULL */
	const char *session;         /* session id, or NULL */
	const char *idempotency_key; /* or NULL; may also be in args */
	const char *principal;       /* claimed principal (--as), or NULL */
	const char *token;           /* presented token, or NULL */
	int         dry_run;         /* stop before execute */
	const char *invalid;         /* non-NULL: the caller could not decode this call (a
	                                truncated stream, say): it is recorded as `invalid`
	                                with this sentence and not run */
	volatile const int *cancel;  /* or NULL; becomes nonzero: stop the running tool (its
	                                process group is killed) and end the call `failed`,
	                                applied `unknown` if it may have had side effects.
	                                The value says why: TG_CANCEL_SIGNAL(sig) the caller's
	                                process received sig, anything else the client
	                                cancelled; the call's error says which */
	const tg_callbacks *cb;      /* or NULL */
	const char *client_call_id;  /* or NULL: the client's own id of this tool use (Claude
	                                Code's tool_use id, Codex's call id), as it sent it;
	                                shown to hooks (tool_use_id) and kept in the envelope,
	                                never used for idempotency.  Control characters are
	                                stripped and it is cut at 256 bytes. */
	const char *const *client_args; /* or NULL: a NULL-terminated list of argument names the
	                                caller's client may add to any call on its own (Gemini
	                                CLI's wait_for_previous).  Each one present that the
	                                tool's input schema does not declare is removed before
	                                validation; the call's trace names what was removed. */
} tg_request;

/* A tg_request.cancel value: the process making the call received signal
 * sig (SIGINT, SIGTERM), and the call is stopped because of it. */
#define TG_CANCEL_SIGNAL(sig) (0x10000 | (sig))

typedef struct tg_result tg_result;

/* Run one call; *out is always set (caller frees with tg_result_free). */
tg_status tg_call(tg_gate *g, const tg_request *req, tg_result **out);

/*
 * Run a batch; out[i] answers reqs[i], in call order, one per call.  No
 * failure cancels a sibling.  Returns the number of results (== n).
 */
size_t tg_call_batch(tg_gate *g, const tg_request *reqs, size_t n, tg_result **out);

tg_status   tg_result_status(const tg_result *r);
const char *tg_result_op_id(const tg_result *r);
/* The envelope as JSON text, borrowed until tg_result_free. */
const char *tg_result_json(const tg_result *r, int pretty);
void        tg_result_free(tg_result *r);

/* ---- definitions and operator actions ------------------------------------ */

/*
 * The tool definitions a model may use under `profile` (NULL: the gate's),
 * as a JSON array of {name, description, input_schema, annotations}.
 * Caller frees with free(); NULL with *errmsg on error.
 */
char *tg_tools_json(tg_gate *g, const char *profile, char **errmsg);

/*
 * The same definitions as the `tools` array of a model API: api is
 * "openai-chat", "openai-responses", "anthropic" or "gemini"; gemini_legacy
 * emits Gemini's OpenAPI-subset `parameters` instead of
 * `parametersJsonSchema`.  Caller frees; NULL with *errmsg (an unknown
 * api, a name the API refuses, a schema it cannot express).
 */
char *tg_tools_format(tg_gate *g, const char *profile, const char *api, int gemini_legacy,
                      char **errmsg);

/*
 * Dispatch what a model returned: len bytes of a JSON response (or, with
 * stream, its raw SSE stream) of api.  Every tool call in it runs through
 * the gate as one batch (in parallel where that is safe), and the result
 * message(s) that API expects come back as JSON text, one result per call
 * in call order, whatever happened to the others.  session and principal
 * (may be NULL) are applied to every call.  *summary (if not NULL) gets a
 * line per call: "call_id tool status [kind: message]".  Caller frees both;
 * NULL with *errmsg when the input is not that API's response at all.
 */
char *tg_dispatch(tg_gate *g, const char *api, const char *text, size_t len, int stream,
                  const char *session, const char *principal, char **summary, char **errmsg);

/* ---- toolgate agent: a model using tools through the gate ---------------- */

typedef struct tg_agent_options {
	const char *provider;  /* scripted (NULL: the default) | openai-chat | openai-responses |
	                          anthropic | gemini */
	const char *model;     /* NULL: the provider's default */
	const char *base_url;  /* NULL: the API's own (an OpenAI-compatible local server) */
	const char *script;    /* scripted: a script file; NULL: the built-in demo script */
	const char *prompt;    /* the user's message (may be NULL only with resume) */
	const char *session;   /* NULL: a new one, "agent-<UUIDv7>"; with resume: required */
	int         resume;    /* continue session's saved conversation (prompt, if any,
	                          becomes a new user message) */
	int         max_turns; /* model replies at most (0: 20) */
	int         json;      /* print one JSON line per event instead of the transcript */
	const char *principal; /* the principal of every call (--as), or NULL */
	void       *out;       /* FILE * of the transcript; NULL: stdout */
	int         color;     /* nonzero: statuses in the transcript in colour (a terminal) */
} tg_agent_options;

/*
 * Run the agent loop: each turn sends the conversation and the tool
 * definitions (in the provider's API shape) to the model, runs every call
 * of its reply through the gate as one batch (session o->session on each,
 * so `toolgate log --session` shows them), appends the results, and saves
 * the turn's conversation entries (redacted) in the ledger.  Returns 0
 * when the model answered without calls, 1 when max_turns stopped it, -1
 * with *errmsg (caller frees) for a provider error, a reply that is not
 * the API's, a session to resume that has no conversation, ...  API keys
 * are read by the HTTP providers from the environment and never printed.
 */
int tg_agent(tg_gate *g, const tg_agent_options *o, char **errmsg);

/* ---- toolgate eval: the tools tested against a model --------------------- */

typedef struct tg_eval_options {
	const char *const *files; /* eval files (YAML); nfiles 0: the built-in suite */
	size_t      nfiles;
	const char *provider;     /* as tg_agent_options: scripted (NULL) | openai-chat | ... */
	const char *model;
	const char *base_url;
	const char *script;       /* scripted: its turns answer the cases in order, each run
	                             in order, the configuration's run before --compare's */
	const char *principal;    /* the principal of every call, or NULL */
	const char *profile;      /* every case's profile; NULL: a case's own, else the gate's */
	int         runs;         /* each case this many times (0: 1) */
	int         jobs;         /* model requests at once (0: 4; scripted: always 1) */
	const char *compare;      /* a second configuration, the baseline, or NULL */
	double      fail_under;   /* a pass rate (overall, per tool) under this fails; < 0: none */
	double      max_drop;     /* with compare: a pass rate dropping more fails; < 0: none */
	const char *format;       /* table (NULL) | json | junit */
	int         no_record;    /* do not keep the run(s) in the ledger */
	double      timeout_s;    /* one request to the model (0: 60), retried twice on
	                             429/5xx/connection errors */
	volatile const int *cancel; /* or NULL; becomes nonzero: ask nothing more, return -1
	                             (requests in flight finish first) */
	/* requests answered so far of total (may be NULL; called on the caller's thread) */
	void      (*progress)(void *arg, size_t done, size_t total);
	void       *progress_arg;
} tg_eval_options;

/*
 * Run an eval suite: each case's request goes to the model with the tool
 * definitions of its profile, in the provider's API shape (the agent's
 * provider code, first turn only); the first call of the reply (the first
 * one naming the expected tool, if any does) is judged as a dry run in a
 * scratch workspace holding the case's setup files (decode, validate with
 * the tool's dry-run plan, identify, decide: nothing runs, nothing is
 * recorded as a call).  Scores: right tool, valid arguments, arguments
 * matching the expected subset, decided as expected by policy (allow
 * unless the case says), and pass (all of them), per tool and overall.
 * gate is the options g was opened with: the cases run on gates opened the
 * same way (with compare: on that configuration too) over a scratch
 * workspace.  Unless no_record, each run is kept in g's ledger.  *out
 * (caller frees) is the report in o->format.  Returns 0, 1 when a
 * threshold failed, -1 with *errmsg (a bad eval file, an unknown profile
 * or principal, a provider that fails every request, cancelled, ...).
 * Asking stops after 5 requests failed in a row; the cases not asked are
 * reported with the provider's error.  On 0 or 1 *errmsg may still hold a
 * warning: the run could not be kept in the ledger (the report is whole).
 */
int tg_eval(tg_gate *g, const tg_options *gate, const tg_eval_options *o, char **out,
            char **errmsg);

/* The size of the tool definitions a model is sent under each profile of
 * g's configuration, in each API's shape: characters and estimated tokens,
 * as "table" or "json".  NULL with *errmsg. */
char *tg_eval_sizes(tg_gate *g, const char *format, char **errmsg);

/* The eval runs kept in the ledger, oldest first, at most limit (0: 20),
 * of one model (NULL: all), as "table" or "json".  NULL with *errmsg. */
char *tg_eval_history(tg_gate *g, const char *model, int limit, const char *format,
                      char **errmsg);

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

/* The largest argument text a call may carry (bytes). */
size_t tg_gate_max_args_bytes(const tg_gate *g);

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

/*
 * The manifest digest: sha256 (hex) of the canonical definitions a model
 * gets under profile (NULL: the gate's), into out[65].  A session whose
 * digest changes between two of its calls gets a tool.manifest.changed
 * event.  0, or -1 with *errmsg (an unknown profile).
 */
int tg_tools_digest(tg_gate *g, const char *profile, char out[65], char **errmsg);

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

/* ---- MCP: toolgate serve -------------------------------------------------- */

typedef struct tg_serve_options {
	int          stdio;          /* serve MCP on stdin/stdout (one JSON-RPC message per line) */
	const char  *http;           /* "127.0.0.1:8080", "[::1]:8080" or NULL: Streamable HTTP on
	                                /mcp at that address */
	int          http_any;       /* nonzero: the HTTP address may be a non-loopback one */
	const char  *principal;      /* the principal of stdio calls (NULL: the default one);
	                                HTTP calls are identified by their bearer token */
	const char *const *origins;  /* more Origin values HTTP accepts (beyond loopback ones) */
	size_t       norigins;
	size_t       max_line;       /* stdio line cap and HTTP body cap (0: 16 MiB) */
	size_t       page_size;      /* tools/list page size (0: 100) */
	int          elicit_timeout_s; /* how long an elicitation may wait (0: 300) */
	int          progress_ms;    /* heartbeat progress interval of a long call (0: 1000) */
	const char  *approvals_via;  /* how an ask reaches the client's user: "elicitation",
	                                "queue" or "both" (NULL: the configuration's
	                                approvals.via, by default both) */
} tg_serve_options;

/*
 * Serve the gate as an MCP server (spec revision 2025-11-25) until stdin
 * closes (stdio) or tg_serve_stop() is called.  Nothing but MCP is written
 * on stdout; logs go to stderr.  0 on a clean stop, -1 with *errmsg (a
 * port that cannot be bound, say).
 */
int  tg_serve(tg_gate *g, const tg_serve_options *o, char **errmsg);
/* Ask a running tg_serve to stop; async-signal-safe.  Its running calls
 * are cancelled at once, even while it waits for them after stdin closed. */
void tg_serve_stop(void);
/* The same, because the server received signal sig: the calls it stops
 * say so (TG_CANCEL_SIGNAL).  Async-signal-safe. */
void tg_serve_stop_signal(int sig);

/* ---- the console: toolgate console ------------------------------------ */

typedef struct tg_console_options {
	const char *listen;        /* "127.0.0.1:PORT" (NULL: console.listen, else 127.0.0.1:8760;
	                              port 0: any free);
	                              a non-loopback address is refused unless allow_remote */
	int         allow_remote;  /* nonzero: a non-loopback listen address is accepted */
	const char *token;         /* the access token; NULL: console.token_env's variable,
	                              else a random one */
	/* called once the socket listens: the URL that logs a browser in (one use)
	 * and the access token (for the login form); may be NULL */
	void      (*ready)(void *arg, const char *login_url, const char *token);
	void       *arg;
} tg_console_options;

/*
 * Serve the console (server-rendered pages over HTTP: Live, Approvals,
 * Call, Stats, Sessions) for g's ledger until tg_console_stop().  Every
 * request needs the session cookie a login sets (GET of the one-use login
 * URL, or POST /login with the token); every state-changing request also
 * needs the session's CSRF token, and Origin and Host are checked.  The
 * console can approve or deny queued approvals, nothing else.  0 on a
 * clean stop, -1 with *errmsg (a port that is taken, a ledger that cannot
 * be read).
 */
int  tg_console(tg_gate *g, const tg_console_options *o, char **errmsg);
/* Ask a running tg_console to stop; async-signal-safe. */
void tg_console_stop(void);

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

/* ---- text for people: what the CLI shows on a terminal ------------------ */

/*
 * The ANSI SGR parameters ("32", "1;31") a status is shown in on a
 * terminal: green persisted and replayed, cyan dry_run, yellow pending,
 * red denied and invalid, bold red failed, magenta committed; "" for a
 * name this toolgate does not know.  Static.
 */
const char *tg_status_sgr(const char *status);

/*
 * A call's plan (the "plan" of a dry run's output or of an approval, as
 * JSON text) as lines for a person: a write's or a patch's paths and
 * unified diff, a command's argv (quoted as a shell would need it),
 * workdir, sandbox, timeout and environment names, anything else as
 * "key: value"; with color, ANSI colours (the diff as git colours it).
 * Control characters are shown as spaces, never written.  Caller frees;
 * NULL when plan_json is not a JSON object.
 */
char *tg_plan_text(const char *plan_json, int color);

/*
 * Apply a V4A patch (Codex's apply_patch format) of len bytes to the files
 * under dir (NULL: the current directory), all or nothing, never writing
 * outside dir or into its .git/ or .toolgate/.  No gate, no policy: this
 * is `toolgate apply-patch`, a stand-in for Codex's apply_patch program.
 * Returns 0 with *summary ("Success. Updated the following files:\nA p\n"
 * ...), or 1 with *message (Codex's wording: "Failed to find expected
 * lines in p:\n...") when nothing was changed -- or, if undoing a failed
 * commit failed too, when the outcome is unknown (the message says so;
 * the next call finishes it).  A patch an earlier crash left part-way is
 * finished first by opening a gate on dir (creating nothing), as any
 * gate's start would: the files and the interrupted call's claim in the
 * ledger.  *message may then be set with 0 too, saying which files that
 * left as they were (not the patch's).  Caller frees both with free().
 */
int tg_apply_patch(const char *dir, const char *patch, size_t len, char **summary, char **message);

#ifdef __cplusplus
}
#endif
#endif /* TOOLGATE_H */
