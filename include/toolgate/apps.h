/*
 * toolgate/apps.h — the applications of libtoolgate, each built on a gate:
 * dispatching a model's response, the agent loop, evals, the MCP server,
 * the console, apply-patch, and the text the CLI shows people.
 * `toolgate dispatch|agent|eval|serve|console|apply-patch` are built on
 * these.
 *
 * Included by toolgate.h, which holds the core (tg_gate, tg_options,
 * tg_call, the statuses) and the ownership rule every function here keeps:
 * a pointer returned through an out-parameter is the caller's (freed as
 * stated), every destroy function accepts NULL, pointers passed in are
 * borrowed for the call.
 */
#ifndef TOOLGATE_APPS_H
#define TOOLGATE_APPS_H

#include <stddef.h>

#include "../toolgate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dispatch: the tool calls of a model's response ---------------------- */

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
#endif /* TOOLGATE_APPS_H */
