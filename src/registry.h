/*
 * registry.h — tool rows, the contract, categories, profiles, availability.
 *
 * A tool is one const row: name, description, input schema, category,
 * handler and contract.  Runtime facts (compiled schema, availability,
 * counters) live apart in tgi_entry, never in the row.
 *
 * Owns: the table of entries for one gate.  Must not: decide policy or run
 * tools (the pipeline enforces the contract; handlers never check
 * permissions themselves).
 */
#ifndef TGI_REGISTRY_H
#define TGI_REGISTRY_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include "toolgate.h"
#include "contract.h"
#include "util/fs.h"
#include "util/util.h"

struct tgi_config;
struct tgi_schema;
struct tgi_cmdline;

struct tgi_exec_ctx;
struct tgi_sb_profile;

/*
 * May a tool that walks directories (list_dir, search_files) show or read
 * this entry?  relpath is workspace-relative and normalised; is_dir says
 * whether it is a directory (a refused directory is not descended).  The
 * pipeline answers with the hard floor, protected paths and the deny/ask
 * read rules, exactly as if the entry had been named in the call.  Returns
 * 1 if allowed, 0 if the entry must be left out (silently: the result
 * counts withheld entries, never names them).
 */
typedef int (*tgi_may_read_fn)(const struct tgi_exec_ctx *ctx, const char *relpath, int is_dir);

/* What a handler gets.  All borrowed for the call. */
typedef struct tgi_exec_ctx {
	int                       ws_fd;      /* O_PATH|O_DIRECTORY fd of the workspace */
	const char               *workspace;  /* its absolute path */
	const char               *state_dir;  /* absolute path of <workspace>/.toolgate */
	const char               *op_id;
	const char               *tool;
	const char               *principal;
	const char               *session;    /* the call's session id ("" when none) */
	const char               *idempotency_key; /* or NULL */
	const struct tgi_config  *cfg;
	const void               *data;       /* the row's data pointer */
	int                       timeout_s;
	size_t                    max_result_chars; /* the result cap the shape stage applies
	                                          (characters of its JSON text; 0: none) */
	double                    deadline_ms; /* tgi_now_ms() past which in-process tools stop
	                                          with TG_ERR_TIMEOUT */
	tgi_may_read_fn           may_read;   /* per-entry policy for directory walks (never NULL) */
	const void               *policy;     /* opaque, for may_read */
	const char *const        *protect;    /* workspace-relative files read-only to tools (the
	                                         gate's own configuration and programs) */
	size_t                    nprotect;
	/* The call's paths as the policy stage judged them (decide.c): resolved
	 * inside the workspace, in the order paths() gave them (for a tool that
	 * writes, as tgi_path_resolve_parent places what it replaces).  A file
	 * tool's open must land there, or it fails with nothing done
	 * (tgi_tool_landed, tools/walk.h).  NULL: nothing was judged (a
	 * handler run on its own, as the tests run one). */
	const char *const        *checked;
	size_t                    nchecked;
	volatile const int       *cancel;     /* set nonzero when the caller cancels (may be NULL) */
	const tg_callbacks       *cb;         /* the caller's progress/log/request hooks (may be NULL) */
	/* Network by host for a sandbox this call starts: a tgi_sb_attach_fn
	 * (exec/sandbox.h) and its argument, or NULL (a profile with a hosts
	 * list is then refused). */
	int                     (*net_attach)(void *arg, pid_t pid, const struct tgi_sb_profile *profile,
	                                      char *err, size_t errlen);
	void                     *net_attach_arg;
	/* Read rules inside the sandbox: append to out the absolute paths a
	 * sandbox this call starts must hide (what deny rules for reading name;
	 * gate.h tgi_read_masks), 0; or -1 with a sentence in err (run nothing).
	 * NULL: none. */
	int                     (*read_masks)(const struct tgi_exec_ctx *ctx, tgi_strv *out,
	                                      char *err, size_t errlen);
} tgi_exec_ctx;

/* What a handler returns. */
#define TGI_APPLIED_MAP(XX) XX(NO, "no") XX(UNKNOWN, "unknown") XX(YES, "yes")
typedef enum {
#define XX(a, name) TGI_APPLIED_##a,
	TGI_APPLIED_MAP(XX)
#undef XX
} tgi_applied;

typedef struct tgi_tool_out {
	json_t     *output;          /* success: the result (string or JSON); the caller takes it */
	tg_errkind  kind;            /* TG_ERR_NONE on success */
	char        message[512];    /* on error: a sentence the model can act on */
	tgi_applied applied;         /* on error: did anything happen? */
	double      retry_after_s;   /* TG_ERR_TRANSIENT: a hint, 0 if none */
	json_t     *warnings;        /* NULL or strings the model reads beside the result (the
	                                caller takes them, on success and on error) */
	json_t     *events;          /* NULL or [{"type", "data"}]: events of the call (the
	                                caller takes them) */
	json_t     *truncated;       /* NULL, or on success {"original_chars", "spill_path"}: the
	                                tool fitted its output to max_result_chars itself and
	                                spilled the whole of it (the caller takes it; the shape
	                                stage then leaves the output as it is) */
} tgi_tool_out;

/* Run the tool on validated args.  Returns 0 on success, -1 on error with
 * out->kind/message/applied set. */
typedef int (*tgi_handler)(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out);

/*
 * The paths a call touches, relative to the workspace as written by the
 * model: each appended to out as a new string.  Returns the count, or -1
 * with a sentence in err if a path argument is unusable (not a string, an
 * embedded NUL, a patch that does not parse).
 */
typedef int (*tgi_paths_fn)(const json_t *args, tgi_strv *out, char *err, size_t errlen);

/*
 * Every workspace path the args name -- those paths() reports, and those
 * it does not (shell's workdir) -- passed through map, and rewritten in
 * args where map gives a replacement (for apply_patch: in the patch text's
 * header lines, the rest of the text kept byte for byte).  Validate calls
 * it before paths(), so that the pipeline (policy, hooks, the ledger, the
 * handler) sees an absolute path inside the workspace only in its relative
 * form.  Args it cannot read are left as they are (the schema and paths()
 * refuse them).
 */
typedef void (*tgi_repath_fn)(json_t *args, tgi_path_map_fn map, void *ud);

/*
 * The simple commands a command-running call would run (shell.h), for the
 * floor, execpolicy and shell(...) rules.  0 with *out filled, or -1 with
 * a sentence in err (a command no shell would run either).
 */
typedef int (*tgi_commands_fn)(const json_t *args, struct tgi_cmdline *out, char *err,
                               size_t errlen);

/* Adjust the contract for these args: return the flags that hold for them. */
typedef unsigned (*tgi_flags_fn)(unsigned flags, const json_t *args);

/*
 * What the handler would do with these args, done in a dry run instead of
 * the handler: a JSON object (new reference, never NULL) -- for a file
 * tool the paths and a diff, for a command the argv, workdir, sandbox and
 * environment.  It may read (old content only where ctx->may_read allows
 * the path), never write, spawn, or send anything.  Where the handler
 * would refuse or fail, the plan carries "would_fail" (the sentence the
 * call would get) and "error_kind".
 */
typedef json_t *(*tgi_plan_fn)(const struct tgi_exec_ctx *ctx, const json_t *args);

/* Is the tool usable now?  1; 0 with a sentence in reason; or -1 with a
 * sentence when it is only for now (a bridged server restarting: a retry
 * may succeed).  Asked on every use (not cached). */
typedef int (*tgi_available_fn)(const void *data, char *reason, size_t cap);

typedef struct tgi_tool {
	const char   *name;
	const char   *title;             /* for people (MCP `title`); NULL: made from the name */
	const char   *description;
	const char   *category;          /* fs, runtime, messaging, web, memory, ... */
	const char   *input_schema;      /* JSON text (built-ins), or NULL: see schema_json */
	unsigned      flags;             /* TGI_T_* (contract.h) */
	tgi_flags_fn  flags_for;         /* NULL: flags hold for all args */
	tgi_paths_fn  paths;             /* NULL: touches no workspace paths */
	tgi_repath_fn repath;            /* NULL: names no workspace path (a tool with
	                                    paths() has one: else an absolute path is
	                                    refused as invalid) */
	tgi_commands_fn commands;        /* NULL: runs no command line of the model's */
	tgi_handler   handler;
	size_t        max_result_chars;  /* 0: config default (50,000) */
	int           timeout_s;         /* 0: config default (120) */
	const void   *data;              /* handler data (configured tools: their tgi_tool_cfg) */
	tgi_available_fn available;      /* NULL: always (configured tools: requires_env, check) */
	tgi_plan_fn   plan;              /* NULL: a dry run shows no plan beyond the args */
	int           mcp_result;        /* output is an MCP CallToolResult {content[,
	                                    structuredContent]}: MCP clients get its blocks */
} tgi_tool;

/* A registered tool with its runtime facts. */
typedef struct tgi_entry {
	const tgi_tool     *row;
	json_t             *schema_json;   /* owned: the input schema as exported */
	json_t             *output_schema; /* owned or NULL: the output schema, when the tool has one */
	struct tgi_schema  *schema;        /* owned: compiled */
	struct tgi_schema  *output_check;  /* owned or NULL: a command tool's output_schema,
	                                      compiled: its output is checked against it
	                                      (execute.c) */
	tgi_strv            sensitive;     /* owned: property names the schema marks
	                                      x-sensitive (masked in what is logged) */
	const json_t       *aliases;       /* borrowed from the config (a bridged
	                                      tool: its row's) or NULL:
	                                      {old_field: new_field} */
	int                 avail_checked; /* availability is computed lazily, once */
	int                 available;
	char                unavailable_reason[256];
} tgi_entry;

typedef struct tgi_registry tgi_registry;

/* Build from the built-in rows plus the config's tools; schemas compiled
 * here.  -1 with err naming the tool on a schema that does not compile.
 * Lookups are thread-safe, also while tools are put or dropped. */
int  tgi_registry_build(const struct tgi_config *cfg, tgi_registry **out, char *err, size_t errlen);
void tgi_registry_free(tgi_registry *r);

const tgi_entry *tgi_registry_find(tgi_registry *r, const char *name);
size_t           tgi_registry_count(const tgi_registry *r);
const tgi_entry *tgi_registry_at(tgi_registry *r, size_t i);

/*
 * Tools added while the gate runs (bridged MCP tools).  put adds row under
 * row->name, or replaces the tool of that name that put added before; a
 * built-in or configured tool's name is refused.  The row (and all it
 * points to) must outlive the registry.  A replaced or dropped entry stays
 * allocated until the registry is freed (a running call may hold it), so a
 * pointer from find stays valid.  aliases ({old_field: new_field}, or
 * NULL) is borrowed like the row and must outlive the registry too; it is
 * part of the entry before the entry can be found.  -1 with err (the
 * schema does not compile, the name is taken).
 */
int  tgi_registry_put(tgi_registry *r, const tgi_tool *row, const json_t *input_schema,
                      const json_t *output_schema, const json_t *aliases, int assert_formats,
                      char *err, size_t errlen);
void tgi_registry_drop(tgi_registry *r, const char *name);

/*
 * A source of tools that come and go while the gate runs (the MCP bridge,
 * a part of the chain): the registry asks it for a name it does not hold,
 * before a listing, whether every tool is known yet, and why a name is
 * missing.  Set once, by the part that owns it, while the gate opens; the
 * registry names no source.  Without one each answer is "nothing more".
 *   need        start what could offer name: 1 when it may be held now
 *   need_all    start everything that offers tools (a listing)
 *   all_listed  1 when every tool is known
 *   explain     1 with a sentence in out saying why name is not offered
 *   on_change   call fn(fnarg) (fn NULL: no one) when the tools change
 */
typedef struct tgi_tool_source {
	int  (*need)(void *arg, const char *name);
	void (*need_all)(void *arg);
	int  (*all_listed)(void *arg);
	int  (*explain)(void *arg, const char *name, char *out, size_t cap);
	void (*on_change)(void *arg, void (*fn)(void *fnarg), void *fnarg);
	void *arg;
} tgi_tool_source;

void tgi_registry_set_source(tgi_registry *r, const tgi_tool_source *src);
/* The tool of this name; a name no tool has yet asks the source to start
 * what could offer it and is looked up again (a built-in or configured
 * tool starts nothing).  NULL: none. */
const tgi_entry *tgi_registry_need(tgi_registry *r, const char *name);
void tgi_registry_need_all(tgi_registry *r);
int  tgi_registry_all_listed(tgi_registry *r);
int  tgi_registry_explain(tgi_registry *r, const char *name, char *out, size_t cap);
void tgi_registry_on_change(tgi_registry *r, void (*fn)(void *arg), void *arg);

/* A source has listed its tools (name: which part of it, a bridged server):
 * the function set with on_listed is told (any thread; NULL: no one).  The
 * rules' check (gate/rulecheck.c) listens, to check the rules that may name
 * those tools. */
void tgi_registry_on_listed(tgi_registry *r, void (*fn)(void *arg, const char *name), void *arg);
void tgi_registry_listed(tgi_registry *r, const char *name);

/* The tools changed (one was put or dropped, or a row's availability
 * moved): the manifest is computed again on its next read. */
void tgi_registry_changed(tgi_registry *r);

/* One tool's definition {name, title, description, input_schema,
 * category, annotations[, output_schema]} (new reference). */
json_t *tgi_tool_def(const tgi_entry *e);

/* The definitions a model may use under profile, as they stand (no source
 * is asked to start anything): as tg_tools_json documents them; NULL with
 * *errmsg for an unknown profile. */
json_t *tgi_registry_defs(tgi_registry *r, const struct tgi_config *cfg, const char *profile,
                          char **errmsg);

/* The sha256 of profile's definitions (canonical JSON) into out; -1 with
 * *errmsg for an unknown profile. */
int tgi_registry_digest(tgi_registry *r, const struct tgi_config *cfg, const char *profile,
                        char out[65], char **errmsg);

/* The manifest digest of profile, read by persist for each call with a
 * session: computed on the first such call (listing the tools asks each
 * one whether it is available, which may run a configured tool's check
 * command: a gate whose calls have no session never pays for it), and
 * again after tgi_registry_changed.  "" while the source has not listed
 * every tool: they are not known then, and a call does not start them to
 * know.  Computed outside the lock (a listing takes the source's and the
 * registry's locks, and the source says a change holding none); kept only
 * when the tools did not change meanwhile.  Two first calls may both
 * compute it: the same answer. */
void tgi_registry_manifest(tgi_registry *r, const struct tgi_config *cfg, const char *profile,
                           char out[65]);

/* The exposed title: row->title, else the name with '_' as spaces and the
 * first letter capitalised, into out. */
void tgi_tool_title(const tgi_tool *t, char *out, size_t cap);

/* Is the tool available (row->available, else requires_env set and the
 * check command exits 0, computed on first use and cached)?  1 yes, 0 no,
 * -1 not for now (see tgi_available_fn); reason (cap bytes, may be NULL)
 * gets why when not. */
int tgi_registry_available(tgi_registry *r, const tgi_entry *e, char *reason, size_t cap);

/* Is the tool in `profile`?  -1 if the profile does not exist. */
int tgi_registry_in_profile(const struct tgi_config *cfg, const char *profile, const tgi_entry *e);

/* The contract that holds for these args (row flags through flags_for). */
unsigned tgi_contract(const tgi_tool *t, const json_t *args);

/* Built-in tool rows (src/tools/<name>.c) */
extern const tgi_tool tgi_tool_read_file;
extern const tgi_tool tgi_tool_list_dir;
extern const tgi_tool tgi_tool_search_files;
extern const tgi_tool tgi_tool_write_file;
extern const tgi_tool tgi_tool_apply_patch;
extern const tgi_tool tgi_tool_shell;

/* Configured command tools (src/tools/command.c) */
int tgi_command_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out);
json_t *tgi_command_plan(const tgi_exec_ctx *ctx, const json_t *args);

#endif
