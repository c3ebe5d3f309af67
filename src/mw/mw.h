/*
 * mw.h — around every call (DESIGN §4): hooks, loop detection, rate limits,
 * redaction, event sinks, deprecated-field aliases.
 *
 * Each part is built once when the gate opens, from its configuration
 * section (a bad section is refused there, with file:line), and then runs
 * as steps of the gate's chain (gate/gate.c), which is also built at open and
 * holds a step only when its part is configured: a gate without hooks has
 * no hook step and pays nothing for it (nginx's phase handlers).
 *
 *   decode → shell patch → client args → [aliases] → validate → identify → [loop check] → [before-hooks]
 *   → decide → [rate limit] → approve → execute → shape
 *   → [loop record] → persist → sinks → [after-hooks]
 *
 * A part's per-gate state (windows, buckets, subscribers) lives in its own
 * struct behind its own lock.  A step touches only its call and that state.
 *
 * Owns: nothing itself; the parts are src/mw/<part>.c.  Must not: decide
 * permission (decide does) or run tools (execute does).
 */
#ifndef TGI_MW_H
#define TGI_MW_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "pipeline/call.h"
#include "util/util.h"

/* ---- redaction (redact.c) ----
 *
 * What is persisted or streamed never holds a secret: values under the
 * configured keys (`redact.keys`, case-insensitive, any depth; a default
 * list when the section is absent), values of properties a tool's schema
 * marks `x-sensitive: true`, and every match of the secret patterns (AWS
 * access keys, bearer tokens, private key blocks, `sk-…` API keys, JWTs,
 * passwords in URLs, plus `redact.patterns`) become «redacted:<first 8 hex
 * of an HMAC of the secret under the ledger's mask key>».  The model still gets the real values.
 */
typedef struct tgi_redactor tgi_redactor;

/* Built from cfg->redact (never NULL on success: the patterns are always
 * on).  -1 with err naming file:line for a bad key list or a pattern that
 * does not compile. */
int  tgi_redactor_new(const tgi_config *cfg, tgi_redactor **out, char *err,
                      size_t errlen);
void tgi_redactor_free(tgi_redactor *r);

/* v with every secret masked: a new reference to v itself when nothing in it
 * needs masking (no copy made), else a masked deep copy.  keys (may be NULL)
 * are more key names to mask (a tool's x-sensitive properties). */
json_t *tgi_redact_json(const tgi_redactor *r, json_t *v, const tgi_strv *keys);

/* text with every secret pattern masked: a new string (caller frees). */
char *tgi_redact_text(const tgi_redactor *r, const char *text, size_t len);

/* The mask of one secret: "«redacted:" + 8 hex of HMAC(r's key, secret) +
 * "»" into out (r NULL: the built-in redactor's). */
void tgi_redact_mask(const tgi_redactor *r, const char *secret, size_t len, char out[32]);

/* Key r's masks with the ledger's mask key (32 bytes; NULL leaves r's own
 * random key): called once, after the ledger opens and before any use. */
void tgi_redactor_key(tgi_redactor *r, const unsigned char key[32]);

/* ---- event sinks (events.c) ----
 *
 * Every event of a call goes to the ledger (persist writes it, which
 * assigns seq) and then to the sinks configured under `events:`:
 *   jsonl: PATH            appended one line per event (O_APPEND: several
 *                          processes may share the file); fsync: always |
 *                          never (default) | seconds between syncs
 *   socket: PATH           a Unix stream socket; each subscriber gets every
 *                          event as a JSON line through a bounded queue;
 *                          one that falls behind is told so and dropped;
 *                          the gate never waits for one
 * An event line: {seq, ts, type, stage, op_id, session, principal, tool,
 * status, summary, data}, redacted.
 */
typedef struct tgi_sinks tgi_sinks;

/* NULL *out (and 0) when no sink is configured.  -1 with err (file:line)
 * for a bad section or a path that cannot be opened.  closed: the section
 * is read and its paths known (tgi_sinks_paths), but nothing is opened or
 * bound and nothing is ever written (a gate that creates nothing). */
int  tgi_sinks_open(const tgi_config *cfg, int closed, tgi_sinks **out, char *err,
                    size_t errlen);
void tgi_sinks_close(tgi_sinks *s);

/* Workspace files the sinks write (the JSONL file, the socket), so the gate
 * can keep tools from touching them; borrowed. */
const tgi_strv *tgi_sinks_paths(const tgi_sinks *s);

/* Fan out a call's events after persist (their seq set, 0 when the ledger
 * write failed; their data already redacted by it).  Never blocks on a
 * subscriber. */
void tgi_sinks_emit_call(tgi_sinks *s, const tgi_call *c);

/* Record an event on its own (op_id NULL: of no call) in the ledger, then
 * fan it out to the sinks; data (borrowed, may be NULL) is redacted first.
 * 0, or -1 with err when the ledger write failed (the sinks still get it). */
int tgi_gate_event(tg_gate *g, const char *op_id, const char *type, const char *stage,
                   const json_t *data, char *err, size_t errlen);

/* Fan out one event that belongs to no call (seq may be 0). */
void tgi_sinks_emit(tgi_sinks *s, const json_t *event);

/* Stop serving the socket for good (its subscribers closed, the file
 * removed if ours), so that a gate that only reads the log (`toolgate log
 * --follow`) leaves it to a process that makes calls.  s may be NULL. */
void tgi_sinks_yield_socket(tgi_sinks *s);

/* One line for people: "tool {args…}" cut to ~160 characters, then
 * " → status kind: message" when the call did not succeed.  All inputs
 * already redacted; any may be NULL.  Caller frees. */
char *tgi_event_summary(const char *tool, const char *args_redacted, const char *status,
                        const char *kind, const char *message);

/* ---- loop detection (loop.c) ----
 *
 * Per session, a window of the last `loop_detection.window` calls (calls
 * without a session are not tracked): signature (tool + sha256 of the
 * canonical args) and outcome (status, error kind and message, or output,
 * with volatile fields — timestamps, durations, ids — left out).  The same
 * call with the same outcome `warn` times gets a hint; the `block`th is
 * denied `loop_detected` (and counts itself).  A ping-pong between two
 * calls, at least one not read-only, counts the same way.  A call with
 * side effects that succeeded in between breaks a read's streak.
 * Windows live in the ledger: each call reads its session's window there,
 * so every process serving a session sees the others' calls.
 */
typedef struct tgi_loop tgi_loop;

/* NULL *out when loop_detection.enabled is false.  -1 with err (file:line). */
int  tgi_loop_new(const tgi_config *cfg, tgi_loop **out, char *err, size_t errlen);
void tgi_loop_free(tgi_loop *l);


/* Exposed for the tests and fuzz/fuzz_loop.c: the outcome digest (sha256
 * hex) the window compares, and a window entry read back from the ledger
 * ("v1 SIG OUTCOME FLAGS TOOL"): 0 with its parts, -1 if it is not one. */
void tgi_loop_outcome(tg_status st, tg_errkind kind, const char *message, const json_t *output,
                      char out[65]);
int  tgi_loop_entry_parse(const char *text, char sig[65], char outcome[65], char flags[4],
                          char tool[129]);

/* ---- rate limits (ratelimit.c) ----
 *
 * `rate_limits: {"tool-glob": "N/sec|min|hour"}`: a token bucket per
 * (principal, tool), the first matching glob's rate.  Buckets live in the
 * ledger and every token is taken there (tgi_store_bucket_take), so the
 * processes sharing a ledger draw from one bucket and a restart does not
 * reset it; a high rate (20 a second and up) draws up to 100 ms of its
 * refill at a time and spends it within 100 ms.
 */
typedef struct tgi_ratelimit tgi_ratelimit;

/* NULL *out when no limit is configured.  -1 with err (file:line). */
int  tgi_ratelimit_new(const tgi_config *cfg, tgi_ratelimit **out, char *err,
                       size_t errlen);
void tgi_ratelimit_free(tgi_ratelimit *r);


/* ---- hooks (hooks.c) ----
 *
 * `hooks: {before_tool_call: [{command: [argv], tools: [globs], timeout_s}],
 * after_tool_call: [...]}`.  See docs/MIDDLEWARE.md for what a hook reads
 * and may answer (toolgate's shape and Claude Code's).
 */
typedef struct tgi_hooks tgi_hooks;

/* NULL *out when no hook is configured.  -1 with err (file:line). */
int  tgi_hooks_new(const tgi_config *cfg, tgi_hooks **out, char *err, size_t errlen);
void tgi_hooks_free(tgi_hooks *h);
int  tgi_hooks_any_before(const tgi_hooks *h);
int  tgi_hooks_any_after(const tgi_hooks *h);


/* The files the configured hooks run (argv[0] when it is a path, and any
 * argument naming a regular file), so the gate can keep tools from
 * rewriting them; borrowed. */
const tgi_strv *tgi_hooks_programs(const tgi_hooks *h);

/* What one before-hook answered. */
typedef enum { TGI_HOOK_NONE, TGI_HOOK_ALLOW, TGI_HOOK_ASK, TGI_HOOK_DENY } tgi_hook_decision;

typedef struct tgi_hook_reply {
	tgi_hook_decision decision;
	int     failed;       /* the hook failed or answered in no known shape: decision
	                         is TGI_HOOK_DENY (fail closed) and reason says what went wrong */
	char    reason[512];  /* one printable line, capped; "" when none was given */
	json_t *updated_args; /* owned: an object, or NULL */
	int     updated_cc;   /* updated_args came as Claude Code's updatedInput (a hook in
	                         claude-code format names Claude Code's arguments there) */
} tgi_hook_reply;

/* Turn a before-hook's exit code, stdout and stderr (any bytes) into its
 * answer: exit 0 with nothing = no opinion, exit 0 with toolgate's or Claude
 * Code's JSON, exit 2 = deny with stderr as the reason, anything else =
 * failed.  Never fails itself; caller frees r->updated_args. */
void tgi_hook_reply_parse(int exit_code, const char *out, size_t out_len, const char *err,
                          size_t err_len, tgi_hook_reply *r);

/* ---- Claude Code's view of a call (claude.c) ----
 *
 * A hook in `format: claude-code` (the default) reads a call as Claude
 * Code's PreToolUse / PostToolUse hooks read one: Claude Code's tool names
 * and argument names, absolute paths.  A built-in tool maps onto Claude
 * Code's tool:
 *
 *   read_file    Read  {file_path, offset, limit}
 *   write_file   Write {file_path, content}
 *   apply_patch  one run per file it touches: an added file is Write
 *                {file_path, content}; an updated, moved or deleted one is
 *                Edit {file_path, old_string, new_string, replace_all}
 *   list_dir     Glob  {pattern: "*" at depth 1, else the pattern of every
 *                depth, path}
 *   search_files Grep  {pattern, path, glob, output_mode: "content", -n,
 *                head_limit}
 *   shell        Bash  {command (an argv joined with shell quoting),
 *                timeout (ms)[, env]}; its workdir is the run's cwd
 *
 * a bridged MCP tool `server__tool` is `mcp__server__tool` (its arguments
 * as they are), and a configured command tool keeps its name.  A path is
 * made absolute against the workspace with "." and ".." taken out; with
 * ws_fd, a path that resolves (symlinks followed, inside the workspace)
 * to another one gets a second run with the path it resolves to, so a
 * hook that guards a file sees it under either name.
 */
typedef enum {
	TGI_CC_OTHER,   /* a configured command tool, or no tool: its own name and args */
	TGI_CC_READ, TGI_CC_LIST, TGI_CC_SEARCH, TGI_CC_WRITE, TGI_CC_PATCH, TGI_CC_SHELL,
	TGI_CC_MCP,     /* a bridged MCP tool */
} tgi_cc_kind;

#define TGI_CC_RUNS_MAX 512   /* times one hook is asked about one call, at most */

/* One hook run as Claude Code would make it. */
typedef struct tgi_cc_run {
	char   *name;   /* owned: Claude Code's tool name */
	json_t *input;  /* owned: tool_input, an object */
	char   *cwd;    /* owned, or NULL for the workspace: where a command runs */
} tgi_cc_run;

typedef struct tgi_cc_runs {
	tgi_cc_run *v;          /* owned */
	size_t      n;
} tgi_cc_runs;

tgi_cc_kind tgi_cc_kind_of(const tgi_entry *e);  /* e may be NULL */

/* Claude Code's name of a call to tool (args not looked at: apply_patch is
 * "Edit" here, though an added file's run is "Write"); caller frees. */
char *tgi_cc_name(tgi_cc_kind kind, const char *tool);

/*
 * The runs of a call to tool with args (borrowed; any JSON, an object when
 * validated): at least one (a patch: at most 4 per file it names).  ws is the
 * workspace (absolute); ws_fd < 0: no second runs for resolved paths.
 * Free with tgi_cc_runs_free.
 */
void tgi_cc_runs_make(tgi_cc_kind kind, const char *tool, const json_t *args, const char *ws,
                      int ws_fd, tgi_cc_runs *out);
void tgi_cc_runs_free(tgi_cc_runs *r);

/*
 * A hook's updatedInput for run (made from args by tgi_cc_runs_make) back
 * into toolgate's arguments for the tool: 0 with *out a new object (the
 * caller decrefs; it is validated again before anything judges it), or 0
 * with *out NULL when updated is the run's input unchanged, or -1 with a
 * sentence in why (an argument toolgate has no counterpart for, a patch
 * rewritten through one of its files): the call is then denied.
 */
int tgi_cc_args_back(tgi_cc_kind kind, const json_t *args, const tgi_cc_run *run,
                     const json_t *updated, const char *ws, json_t **out, char *why,
                     size_t cap);

/* ---- deprecated fields (aliases.c) ----
 *
 * A configured tool may declare `aliases: {old_field: new_field}` (a
 * bridged one: mcp_servers.<server>.aliases.<tool>): a call
 * that uses an old top-level name is rewritten before validation, and its
 * result carries warnings: ["'due' is deprecated; use 'due_date'"].
 */

/* ---- arguments a client adds on its own (client_args.c) ----
 *
 * The names in tg_request.client_args that the tool's input schema does not
 * declare are removed from the call's arguments before validation and named
 * in the trace: {stage: "client_args", ok: true, removed: ["wait_for_previous"]}.
 */

/* ---- Codex's apply_patch through the shell (shell_patch.c) ----
 *
 * A shell call that is Codex's apply_patch ({"command": ["apply_patch",
 * PATCH]}, or a script that is only `[cd DIR &&] apply_patch <<'EOF'`
 * with the patch, as a string or ["bash", "-lc", SCRIPT]) is rewritten
 * into an apply_patch call before validation, and judged and run as one.
 */
/* Is args (a shell call's) one of those forms?  1 with the patch text in
 * *patch (len bytes, NUL-terminated; caller frees) and the directory a
 * `cd DIR &&` names in *dir (NULL: none; caller frees); else 0, both NULL. */
int tgi_shell_patch_of(const json_t *args, char **patch, size_t *len, char **dir);

#endif
