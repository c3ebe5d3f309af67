/*
 * gate.h — the gate: its lifetime (open, close), its context (struct
 * tg_gate, which stages and parts read as data) and its driver (a call
 * begun, walked through the chain, finished).
 *
 * The chain is built once at open from the stages in their order
 * (stages.h) and the parts that are open (mw/part.h, listed in
 * gate/parts.c): a call walks an array and never asks what is enabled
 * (nginx's phase handlers).  The gate names no part.
 *
 * Owns: struct tg_gate, the chain's step, the driver's entry points.
 * Must not: be called by a stage or a part (they read g, never call it).
 */
#ifndef TGI_GATE_H
#define TGI_GATE_H

#include <limits.h>
#include <pthread.h>
#include <jansson.h>

#include "toolgate.h"
#include "config.h"
#include "registry.h"
#include "pipeline/call.h"
#include "pipeline/stages.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "policy/execpolicy.h"
#include "policy/hostpath.h"
#include "store/store.h"
#include "gate/pool.h"

/* One step of the chain: a stage, or the step of an open part.  phase is
 * the stage it is, or the one it follows. */
typedef struct tgi_step {
	const char  *name;
	tgi_phase    phase;
	tgi_verdict (*stage)(tgi_call *c);              /* a stage, or NULL */
	tgi_verdict (*part)(tgi_call *c, void *state);  /* a part's step, or NULL */
	void        *state;                             /* the part's */
	int          judge;   /* part of a judgment (tgi_call_judge): keeps no state, runs
	                         no program, spends no approval */
} tgi_step;

#define TGI_CHAIN_MAX 24   /* steps in the chain: 7 stages and the parts' steps */
#define TGI_PARTS_MAX 16   /* parts the gate can hold (gate/parts.c) */

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
	struct tgi_rulecheck *rulecheck; /* owned: what the rules' check found (rulecheck.h) */
	struct tgi_netgate *net;  /* owned: network by host (exec/netgate.h): the filtering
	                             proxy, started on first need */

	/* the record (src/record/): always there, though sinks may be NULL */
	struct tgi_redactor  *redact;  /* owned */
	struct tgi_sinks     *sinks;   /* owned */
	/* the parts (mw/part.h, gate/parts.c): part[i] is tgi_parts[i]'s state,
	 * part_on[i] whether it opened */
	void         *part[TGI_PARTS_MAX];   /* owned, each by its part */
	unsigned char part_on[TGI_PARTS_MAX];

	/* the chain, built at open from the stages and the open parts: the
	 * admit chain is chain[0, nadmit), the run chain chain[nadmit, nchain) */
	tgi_step      chain[TGI_CHAIN_MAX];
	size_t        nadmit, nchain;
};

/*
 * The driver in parts, for the batch runner (src/gate/batch.c); tg_call is
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

/* The definitions a model may use under profile (NULL: the gate's), as
 * tg_tools_json documents them; NULL with *errmsg (unknown profile).  A
 * listing: bridged servers not started yet are started first. */
json_t *tgi_tool_defs(tg_gate *g, const char *profile, char **errmsg);

/* Is the tool hidden from this principal's tool list: a bare deny rule
 * (global or one of its roles) names it, or it requires a grant that no
 * allow rule could give?  (src/pipeline/decide.c) */
int tgi_tool_hidden(tg_gate *g, const tgi_principal_cfg *p, const tgi_entry *e);

/* The principal a request names (req->principal, its token, the
 * environment, the default), or NULL when it is unknown or its token is
 * wrong: the identify stage's answer without a call.  A token presented
 * without a principal must belong to one (it never falls back to the
 * default principal).  (src/pipeline/identify.c) */
const tgi_principal_cfg *tgi_principal_of(tg_gate *g, const char *principal, const char *token);
/* The configured principals' names, "a, b, c" (as many as fit, then how
 * many more), or the configured profiles' names, into out; returns out.
 * For the sentence that refuses an unknown one.  (src/pipeline/identify.c, src/gate/gate.c) */
const char *tgi_principal_names(const tgi_config *cfg, char *out, size_t cap);

/* Open the late parts that are off (mw/part.h: the bridge when the
 * caller did not ask for it) and ask every source for its tools: for a
 * report that needs every tool (doctor, policy test).  Not while calls
 * run.  0, or -1 with err (a part that would not open). */
int tgi_gate_every_tool(tg_gate *g, char *err, size_t errlen);

/* The files the gate's start left while undoing interrupted patches
 * (finish_patches in gate.c), each {tx, path, message}; NULL when none.
 * Borrowed.  `toolgate apply-patch` opens a gate to recover and says these. */
const json_t *tgi_gate_patch_kept(const tg_gate *g);


#endif
