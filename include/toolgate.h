/*
 * toolgate.h — the public contract of libtoolgate: its core.
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
 * or in the two headers this one includes is private.
 *
 * This header is what every program using a gate needs: statuses and error
 * kinds, the gate's lifetime, calls and their results, the tool definitions.
 * At its end it includes, as curl.h includes easy.h and multi.h:
 *   toolgate/admin.h  the operator's: the ledger read and acted on (log,
 *                     follow, stats, approvals, unknown outcomes), the ledger
 *                     alone (migrate, export, import, adopt), policy, doctor
 *   toolgate/apps.h   the applications on a gate: dispatch, agent, eval,
 *                     the MCP server, the console, apply-patch, text for people
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

/* The largest argument text a call may carry (bytes). */
size_t tg_gate_max_args_bytes(const tg_gate *g);

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

/* ---- the tool definitions ------------------------------------------------ */

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
 * The manifest digest: sha256 (hex) of the canonical definitions a model
 * gets under profile (NULL: the gate's), into out[65].  A session whose
 * digest changes between two of its calls gets a tool.manifest.changed
 * event.  0, or -1 with *errmsg (an unknown profile).
 */
int tg_tools_digest(tg_gate *g, const char *profile, char out[65], char **errmsg);

#ifdef __cplusplus
}
#endif

#include "toolgate/admin.h"
#include "toolgate/apps.h"

#endif /* TOOLGATE_H */
