/*
 * gate.h — the gate and one call's state as it moves through the stages.
 *
 * decode → validate → identify → decide → approve → execute → shape → persist
 *
 * Each stage is its own file with one entry point.  A stage returns a
 * verdict (continue or stop); a stop has already set the call's status and
 * error through tgi_stop().  The driver (gate.c) is a flat list of stage
 * calls whose first stop exits through the one persist path.
 */
#ifndef TGI_GATE_H
#define TGI_GATE_H

#include <limits.h>
#include <pthread.h>
#include <jansson.h>

#include "toolgate.h"
#include "config.h"
#include "registry.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "policy/execpolicy.h"
#include "policy/hostpath.h"
#include "store/store.h"
#include "exec/pool.h"

/* A stage's verdict: not the call's status. */
typedef enum { TGI_NEXT, TGI_STOP } tgi_verdict;

typedef struct tgi_call tgi_call;

/* One step of the chain: a stage, or a configured part of the middleware. */
typedef struct tgi_step {
	const char *name;
	tgi_verdict (*run)(tgi_call *c);
	int         judge;   /* part of a judgment (tgi_call_judge): keeps no state, runs
	                        no program, spends no approval */
} tgi_step;

struct tg_gate {
	tgi_config   *cfg;        /* owned */
	tgi_registry *reg;        /* owned */
	tgi_ruleset  *rules;      /* owned: permissions allow/ask/deny */
	tgi_ruleset **role_rules; /* owned: one per cfg->roles[i] */
	tgi_ruleset  *named;      /* owned: the allow rules of rules that name their tool (no
	                             wildcard in the tool part), which alone lift a configured
	                             `destructive: true` (TGI_T_CONFIRM) */
	tgi_ruleset **role_named; /* owned: the same, one per cfg->roles[i] */
	tgi_execpolicy *execpolicy; /* owned: the config's .rules files */
	tgi_hostpath *hostpath;   /* owned: where a program cannot have been planted */
	tgi_ep_resolve ep_resolve;/* how the gate reads execpolicy: TGI_EP_TRUSTED by hostpath */
	tgi_store    *store;      /* owned; shared by the gate's threads (it locks itself) */
	int           no_ledger;  /* tg_options.no_create found no ledger: store is an empty
	                             one in memory */
	int           ws_fd;      /* O_PATH|O_DIRECTORY */
	int           state_fd;   /* <workspace>/.toolgate, checked (-1: tg_options.no_create
	                             found none) */
	char         *state_dir;  /* its absolute path */
	json_t       *patch_kept; /* owned: the files the start's patch recovery left, each
	                             {tx, path, message} (tgi_patch_recover), or NULL */
	char         *profile;    /* active profile */
	char        **protected;  /* owned: workspace-relative files the gate itself reads or
	                             runs (its config, command scripts, rule files): read-only */
	size_t        nprotected;
	char         *key_dir;    /* owned: the machine key's default directory when it lies in
	                             the workspace (the workspace is $HOME, say): absolute and
	                             workspace-relative; hidden from every tool; NULL otherwise */
	char         *key_dir_rel;
	int           interactive;
	tgi_pool     *pool;       /* owned: the batch workers (cfg->max_parallel - 1 of them; the
	                             caller of a batch is the last), started on first use */
	struct tgi_bridge *bridge;/* owned: downstream MCP servers (tg_options.bridge), or NULL */
	struct tgi_rulecheck *rulecheck; /* owned: what the rules' check found (rulecheck.h) */
	struct tgi_netgate *net;  /* owned: network by host (exec/netgate.h): the filtering
	                             proxy, started on first need */

	/* middleware (src/mw/): each NULL when not configured, except redact */
	struct tgi_redactor  *redact;  /* owned */
	struct tgi_sinks     *sinks;   /* owned */
	struct tgi_loop      *loop;    /* owned */
	struct tgi_ratelimit *rate;    /* owned */
	struct tgi_hooks     *hooks;   /* owned */
	char          manifest[65];   /* sha256 of the active profile's definitions */
	int           manifest_fresh; /* manifest is for the tools as they are now */
	unsigned      manifest_gen;   /* counts changes of the tools (bridged servers) */
	pthread_mutex_t manifest_mu;  /* guards the three above */

	/* the chain, built at open from what is configured (see src/mw/mw.h) */
	tgi_step      admit[12], run[4];
	size_t        nadmit, nrun;
};

typedef enum { TGI_ALLOW, TGI_ASK, TGI_DENY } tgi_decision;

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

/* Stage entry points, in order (src/<stage>.c). */
tgi_verdict tgi_decode(tgi_call *c);
tgi_verdict tgi_validate(tgi_call *c);
tgi_verdict tgi_identify(tgi_call *c);
tgi_verdict tgi_decide(tgi_call *c);
tgi_verdict tgi_approve(tgi_call *c);
tgi_verdict tgi_execute(tgi_call *c);
/* The tool's plan for this call, as a dry run shows it (registry.h
 * tgi_plan_fn; reads only where read_file could): a new reference, NULL
 * when the tool has none.  Not redacted.  (src/execute.c) */
json_t     *tgi_call_plan(tgi_call *c);
/* A plan (tgi_call_plan's object) as lines for a person, appended to b,
 * with ANSI colours when color; control characters shown as spaces.  And
 * the SGR colour of a status ("" for an unknown one).  (src/plan_text.c) */
void        tgi_plan_text(tgi_buf *b, const json_t *plan, int color);
const char *tgi_status_sgr(const char *status);
tgi_verdict tgi_shape(tgi_call *c); /* never stops */
void        tgi_persist(tgi_call *c);

/*
 * The driver in parts, for the batch runner (src/exec/batch.c); tg_call is
 * begin, admit, run (when admitted), finish.  One call is touched by one
 * thread at a time.
 *   tgi_call_begin   set c up for req (g and req borrowed for the call)
 *   tgi_call_admit   decode, validate, identify, decide, approve: TGI_STOP
 *                    when the call stopped there (its status is set)
 *   tgi_call_run     execute, shape
 *   tgi_call_finish  persist (exactly once, on every path) and free the
 *                    call's state; the result (caller frees with tg_result_free)
 */
void        tgi_call_begin(tgi_call *c, tg_gate *g, const tg_request *req);
tgi_verdict tgi_call_admit(tgi_call *c);
tgi_verdict tgi_call_run(tgi_call *c);
tg_result  *tgi_call_finish(tgi_call *c);

/*
 * A call judged, not made (`toolgate eval`): begin it with req->dry_run
 * set, then tgi_call_judge runs the steps of the admit chain that judge
 * (decode, aliases, validate, identify, decide) and stops after decide:
 * TGI_NEXT when the call got past it (c->decision is allow or ask).  Loop
 * detection, hooks, rate limits and approval are not consulted.
 * tgi_call_drop frees the call's state without persisting it: no ops row,
 * no event, no sink, no after-hook.
 */
tgi_verdict tgi_call_judge(tgi_call *c);
void        tgi_call_drop(tgi_call *c);

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
 * frees.  (src/mw/redact.c) */
char *tgi_redacted_args(const tgi_call *c);

/* The error message as it may be logged (caller frees; NULL when the call
 * has none): secret patterns masked, and the whole of it masked when the
 * error's field lies under a masked key (validation quotes the value it
 * refused: "/password must be one of ...; got \"hunter2\"").
 * (src/mw/redact.c) */
char *tgi_redacted_message(const tgi_call *c);

/* What the gate tells the model beside a result, from its envelope: one
 * line per warning ("warning: 'due' is deprecated; use 'due_date'") and the
 * loop hint ("hint: ..."); NULL when there is none.  Caller frees.
 * (src/shape.c) */
char *tgi_envelope_notes(const json_t *env);

/* The envelope of DESIGN §1 for this call (new reference). */
json_t *tgi_envelope(const tgi_call *c);

/* Per-entry policy for directory walks (src/decide.c); ctx->policy is the
 * tgi_call.  See tgi_may_read_fn in registry.h. */
int tgi_may_read(const tgi_exec_ctx *ctx, const char *relpath, int is_dir);

/* The same as read_file would be judged (the floor, .toolgate, read_file's
 * deny and ask rules), whatever the call's tool: for a dry run, whose diff
 * of a file the call would write shows its current content only when the
 * call could read it.  (src/decide.c) */
int tgi_may_read_file(const tgi_exec_ctx *ctx, const char *relpath, int is_dir);

/*
 * Read rules inside the sandbox (src/readmask.c): the absolute paths in
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

/* Set *errmsg (if not NULL) to a new copy of the sentence; returns -1. */
int tgi_fail(char **errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The envelope of a result (borrowed until tg_result_free). */
const json_t *tgi_result_envelope(const tg_result *r);

/* One tool's definition {name, title, description, input_schema,
 * category, annotations[, output_schema]} (new reference). */
json_t *tgi_tool_def(const tgi_entry *e);

/* The definitions a model may use under profile (NULL: the gate's), as
 * tg_tools_json documents them; NULL with *errmsg (unknown profile).  A
 * listing: bridged servers not started yet are started first. */
json_t *tgi_tool_defs(tg_gate *g, const char *profile, char **errmsg);

/* The registered tool of this name; a name no tool has yet starts the
 * bridged server that could offer it (tgi_bridge_need_tool) and is looked
 * up again.  A built-in or configured tool starts nothing.  NULL: none. */
const tgi_entry *tgi_tool_find(tg_gate *g, const char *name);

/* Is the tool hidden from this principal's tool list: a bare deny rule
 * (global or one of its roles) names it, or it requires a grant that no
 * allow rule could give?  (src/decide.c) */
int tgi_tool_hidden(tg_gate *g, const tgi_principal_cfg *p, const tgi_entry *e);

/* The principal a request names (req->principal, its token, the
 * environment, the default), or NULL when it is unknown or its token is
 * wrong: the identify stage's answer without a call.  A token presented
 * without a principal must belong to one (it never falls back to the
 * default principal).  (src/identify.c) */
const tgi_principal_cfg *tgi_principal_of(tg_gate *g, const char *principal, const char *token);
/* The configured principals' names, "a, b, c" (as many as fit, then how
 * many more), or the configured profiles' names, into out; returns out.
 * For the sentence that refuses an unknown one.  (src/identify.c, src/gate.c) */
const char *tgi_principal_names(const tgi_config *cfg, char *out, size_t cap);
const char *tgi_profile_names(const tgi_config *cfg, char *out, size_t cap);

/* The manifest digest of the gate's profile, read by persist for each call
 * with a session: computed on the first such call (listing the tools asks
 * each one whether it is available, which may run a configured tool's
 * check command: a gate whose calls have no session never pays for it),
 * and again after tgi_manifest_update says the tools changed (bridged
 * servers).  "" while a bridged server has not been started: the tools
 * are not known then, and a call does not start them to know. */
void tgi_manifest_update(tg_gate *g);
void tgi_manifest_get(tg_gate *g, char out[65]);

/* Record an event on its own (op_id NULL: of no call) in the ledger, then
 * fan it out to the sinks; data (borrowed, may be NULL) is redacted first.
 * 0, or -1 with err when the ledger write failed (the sinks still get it). */
int tgi_gate_event(tg_gate *g, const char *op_id, const char *type, const char *stage,
                   const json_t *data, char *err, size_t errlen);

/* The files the gate's start left while undoing interrupted patches
 * (finish_patches in gate.c), each {tx, path, message}; NULL when none.
 * Borrowed.  `toolgate apply-patch` opens a gate to recover and says these. */
const json_t *tgi_gate_patch_kept(const tg_gate *g);

/*
 * Network by host (src/netcall.c, over exec/netgate.h).
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
