/*
 * call.h — one call's state as it moves through the stages, and the
 * helpers every stage and part uses on it: the one reject path
 * (tgi_stop), the trace, the call's events, the envelope.
 *
 * A call is begun by the gate (gate/gate.h), walked through the chain of
 * stages (stages.h) and parts (mw/part.h), and ended by persist on every
 * path.  One call is touched by one thread at a time.  c->g is the gate
 * the call runs in: read as a context, never called.
 *
 * Owns: struct tgi_call, the verdict, the reject path, the trace, the
 * envelope and the result object.  Must not: know the order of the
 * stages (stages.h) or name a part.
 */
#ifndef TGI_CALL_H
#define TGI_CALL_H

#include <limits.h>
#include <jansson.h>

#include "toolgate.h"
#include "config.h"
#include "registry.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "store/store.h"
#include "util/util.h"

/* A stage's verdict: not the call's status. */
typedef enum { TGI_NEXT, TGI_STOP } tgi_verdict;

typedef struct tgi_call tgi_call;

#define TGI_MAX_PATHS 8192   /* paths one call may touch (a patch: 2 per file) */
#define TGI_MAX_EVENTS 256  /* events one call keeps at most (it has ~4) */

struct tgi_call {
	tg_gate          *g;
	const tg_request *req;

	/* decode */
	char              op_id[37];
	char              call_id[257];
	char              client_call_id[257]; /* the client's id of the tool use ("" none) */
	char              session[257];
	char              tool[129];
	char              idem_key[257];   /* "" when none */
	const tgi_entry  *entry;
	json_t           *args;            /* owned */

	/* validate */
	unsigned          contract;        /* TGI_T_* for these args */
	char             *args_canon;      /* owned: canonical args text */
	char              args_sha256[65];
	char            **paths;           /* owned: normalised, as written */
	char            **resolved;        /* owned: as resolved (NULL until decide) */
	size_t            npaths;
	char              outside[192];    /* the first absolute path of the args outside the
	                                      workspace, made printable ("" none): not in
	                                      paths; decide denies the call */
	tgi_cmdline       cmds;            /* owned: a command tool's simple commands */
	int               has_cmds;

	/* identify */
	const tgi_principal_cfg *principal;
	char              principal_name[129];

	/* decide / approve */
	tgi_decision      decision;
	char              rule[512];       /* the rule (or default) that decided */
	char              approval_id[37];
	char              approval_spend[37];  /* an approved approval found for this call,
	                                        * spent by execute as the call runs ("": none) */
	char              approval_binding[65]; /* its binding: sha256(tool, canonical args) */

	/* execute / shape */
	char             *idem_scope;      /* owned; NULL when none */
	char              idem_binding[65]; /* what the claim was made for ("" before one) */
	tgi_idem_settle   settle;
	char              replayed_from[37];
	json_t           *output;          /* owned */
	json_t           *truncated;       /* owned */

	/* outcome */
	tg_status         status;
	tg_errkind        kind;
	char              message[1024];
	char              field[256];      /* JSON pointer of the error (has_field) */
	int               has_field;
	char              error_rule[512];
	double            retry_after_s;   /* < 0: none */
	tgi_applied       applied;
	int               dry_run;

	/* middleware */
	json_t           *warnings;        /* owned: ["'due' is deprecated; ..."] or NULL */
	char             *hint;            /* owned: loop detection's hint, or NULL */
	int               hook_ask;        /* a before-hook said ask: decide asks at least */
	char              hook_rule[256];  /* which hook, for the rule that asked */
	char              loop_sig[65];    /* tool + args as the model sent them ("" unset) */
	char             *loop_entry;      /* owned: the window entry the ledger keeps */
	struct tgi_loop_window *loop_window; /* owned by mw/loop.c: the window its check read */

	/* trace */
	json_t           *stages;          /* owned: [{stage, ok, ...}] */
	tgi_event        *events;          /* owned, grows (events[i].data owned) */
	size_t            events_cap;
	size_t            nevents;
	int64_t           started_ms;
	double            t0;
	double            duration_ms;
	json_t           *envelope;        /* owned: built once by persist */
	char             *args_logged;     /* owned: the redacted args persist wrote */
};

/*
 * Stop the call: set status, kind, field (may be NULL) and a message (a
 * sentence; control characters stripped).  applied defaults to "no".
 * Always returns TGI_STOP, so a stage can `return tgi_stop(...)`.
 */
tgi_verdict tgi_stop(tgi_call *c, tg_status st, tg_errkind kind, const char *field,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Append a stage record {stage, ok, ...extra} (extra is stolen, may be NULL). */
void tgi_trace(tgi_call *c, const char *stage, int ok, json_t *extra);

/* Queue an event for the ledger (data is stolen, may be NULL). */
void tgi_event_add(tgi_call *c, const char *type, const char *stage, json_t *data);

/* The arguments as they may be logged (redacted), canonical text; caller
 * frees.  (src/record/redact.c) */
char *tgi_redacted_args(const tgi_call *c);

/* The error message as it may be logged (caller frees; NULL when the call
 * has none): secret patterns masked, and the whole of it masked when the
 * error's field lies under a masked key (validation quotes the value it
 * refused: "/password must be one of ...; got \"hunter2\"").
 * (src/record/redact.c) */
char *tgi_redacted_message(const tgi_call *c);

/* What the gate tells the model beside a result, from its envelope: one
 * line per warning ("warning: 'due' is deprecated; use 'due_date'") and the
 * loop hint ("hint: ..."); NULL when there is none.  Caller frees.
 * (src/pipeline/shape.c) */
char *tgi_envelope_notes(const json_t *env);

/* The envelope of DESIGN §1 for this call (new reference). */
json_t *tgi_envelope(const tgi_call *c);

/* The call ended: its result (its envelope as persist built it, else
 * built now; caller frees with tg_result_free), and the call's state
 * freed.  The gate's driver ends every call through this. */
tg_result *tgi_call_result(tgi_call *c);

/* The envelope of a result (borrowed until tg_result_free). */
const json_t *tgi_result_envelope(const tg_result *r);

/* The tool's plan for this call, as a dry run shows it (registry.h
 * tgi_plan_fn; reads only where read_file could): a new reference, NULL
 * when the tool has none.  Not redacted.  (src/pipeline/execute.c) */
json_t     *tgi_call_plan(tgi_call *c);
/* A plan (tgi_call_plan's object) as lines for a person, appended to b,
 * with ANSI colours when color; control characters shown as spaces.  And
 * the SGR colour of a status ("" for an unknown one).  (src/pipeline/plan_text.c) */
void        tgi_plan_text(tgi_buf *b, const json_t *plan, int color);
const char *tgi_status_sgr(const char *status);

/* Per-entry policy for directory walks (src/pipeline/decide.c); ctx->policy is the
 * tgi_call.  See tgi_may_read_fn in registry.h. */
int tgi_may_read(const tgi_exec_ctx *ctx, const char *relpath, int is_dir);

/* The same as read_file would be judged (the floor, .toolgate, read_file's
 * deny and ask rules), whatever the call's tool: for a dry run, whose diff
 * of a file the call would write shows its current content only when the
 * call could read it.  (src/pipeline/decide.c) */
int tgi_may_read_file(const tgi_exec_ctx *ctx, const char *relpath, int is_dir);

/*
 * Read rules inside the sandbox (src/pipeline/readmask.c): the absolute paths in
 * the workspace that deny rules for reading name -- and ask rules, unless
 * a person approved the call -- for tgi_sb_spec.mask; appended to out.
 * 0, or -1 with a sentence in err (a walk the workspace's size or an
 * unreadable directory stopped; more than TGI_READ_MASKS_MAX paths): the
 * caller then runs nothing (fail closed).  tgi_read_masks is the call's
 * (ctx->policy is its tgi_call; what tgi_exec_ctx.read_masks points at);
 * tgi_read_masks_for serves a process that outlives calls (a bridged
 * server): p's rules (NULL: every role's), with_ask to add ask rules'.
 * tgi_read_masks_report: for doctor, {"hidden": [...], "not_hidden":
 * [{"rule","why"}], "walk": {dirs,entries,ms,cached} | "error"}, every
 * role's rules with ask rules; the paths also appended to out (may be
 * NULL).
 */
#define TGI_READ_MASKS_MAX 512
int     tgi_read_masks(const tgi_exec_ctx *ctx, tgi_strv *out, char *err, size_t errlen);
int     tgi_read_masks_for(tg_gate *g, const tgi_principal_cfg *p, int with_ask, tgi_strv *out,
                           char *err, size_t errlen);
json_t *tgi_read_masks_report(tg_gate *g, tgi_strv *out);

/*
 * Network by host (src/pipeline/netcall.c, over exec/netgate.h).
 *
 * For a call: execute.c begins a run before the handler (the handler's
 * ctx->net_attach/net_attach_arg are tgi_netrun_attach and it) and ends it
 * after: the sandboxes it attached are detached, and each destination the
 * proxy refused becomes a `tool.network.denied` event of the call
 * ({host, port, why, op_id, method, status, count}) and a warning.
 *
 * For a process the gate starts on its own -- a bridged server, for its
 * whole life -- tgi_gate_net_run gives a run at the same proxy: put
 * tgi_netrun_attach and the run into tgi_sb_spec.attach/attach_arg.  What
 * it refuses is kept in the run until its owner records it:
 * tgi_gate_net_record(g, op_id, tgi_netrun_take(run)) after each call the
 * server served (op_id: that call's, so the event joins it), and
 * tgi_gate_net_record(g, NULL, tgi_netrun_end(run)) once the server has
 * been reaped (which also detaches it).  Both take the denials (NULL: none).
 * One run per process started (a restarted server gets a new run), and
 * every run ended before tg_gate_close frees the proxy.  The sandbox calls
 * the hook from tgi_sandbox_started, so the spawn must have it as its
 * started callback (as shell.c does), and the process must get the
 * variables of tgi_sb_exec.env.
 */
struct tgi_netrun *tgi_net_call_begin(tgi_call *c);
void               tgi_net_call_end(tgi_call *c, struct tgi_netrun *r);
struct tgi_netrun *tgi_gate_net_run(tg_gate *g);
void               tgi_gate_net_record(tg_gate *g, const char *op_id, json_t *denials);

#endif
