/*
 * config.h — the configuration (DESIGN §7): YAML or JSON, discovery order,
 * built-in defaults, and a clear file:line:column error for a bad file.
 *
 * Owns: the parsed tgi_config and the source map of the file.  Must not:
 * compile rules or schemas (the registry and policy do that), touch the
 * ledger, or run anything.
 */
#ifndef TGI_CONFIG_H
#define TGI_CONFIG_H

#include <stddef.h>
#include <jansson.h>
#include "config/section.h"
#include "toolgate.h"
#include "util/util.h"
#include "util/yaml.h"

/* dryRun: every call is a dry run (decode sets tgi_call.dry_run); decided as in default. */
#define TGI_MODE_MAP(XX) XX(DEFAULT, "default") XX(ACCEPT_EDITS, "acceptEdits") \
	XX(PLAN, "plan") XX(BYPASS, "bypassPermissions") XX(DRY_RUN, "dryRun")
typedef enum {
#define XX(m, name) TGI_MODE_##m,
	TGI_MODE_MAP(XX)
#undef XX
} tgi_mode;
/* The approval policy: what an ask becomes (approve.c).  ask: put to a
 * person; deny: refused; untrusted: as ask, and decide asks for more.
 * on-request and never are read as ask and deny. */
typedef enum { TGI_APPROVAL_ASK, TGI_APPROVAL_DENY, TGI_APPROVAL_UNTRUSTED } tgi_approval;
typedef enum { TGI_SANDBOX_READ_ONLY, TGI_SANDBOX_WORKSPACE_WRITE, TGI_SANDBOX_FULL } tgi_sandbox;
/* How `toolgate serve` puts an ask to an MCP client's user (approvals.via):
 * elicitation only; the queue only; or elicitation, and the queue when the
 * client cancels the question or cannot ask.  Not the approval policy
 * (`approval:`), which says whether an ask is put to anyone at all. */
typedef enum { TGI_VIA_BOTH, TGI_VIA_ELICITATION, TGI_VIA_QUEUE } tgi_approvals_via;

int tgi_mode_parse(const char *s, tgi_mode *out);          /* 0 ok, -1 unknown */
int tgi_approval_parse(const char *s, tgi_approval *out);
const char *tgi_mode_name(tgi_mode m);
const char *tgi_approval_name(tgi_approval a);
int tgi_sandbox_parse(const char *s, tgi_sandbox *out);    /* read-only | workspace-write | danger-full-access */
const char *tgi_sandbox_name(tgi_sandbox s);
int tgi_approvals_via_parse(const char *s, tgi_approvals_via *out); /* both | elicitation | queue */
const char *tgi_approvals_via_name(tgi_approvals_via v);

/* Lists of strings are tgi_strv (util.h).  In a config from
 * tgi_config_load v is never NULL (an empty list is {NULL}). */

struct tgi_config;

/* A sandbox profile's network: none, all of it, or only the listed hosts
 * (through the filtering proxy the gate runs). */
typedef enum { TGI_NET_OFF, TGI_NET_ON, TGI_NET_HOSTS } tgi_net;

/* The weaker backends a profile accepts by name (bubblewrap always). */
enum { TGI_SB_ACCEPT_LANDLOCK = 1u << 0 };

/*
 * A sandbox profile (DESIGN §3): what a process the gate starts may read,
 * write and reach.  The shell tool's is `sandbox:`; a command tool's or a
 * bridged server's section is parsed by the same tgi_sb_profile_parse.
 * Paths are absolute (a leading ~ expanded to the home directory at load)
 * or relative to the workspace (resolved when a sandbox is prepared, after
 * any --workspace).  The lists are never NULL in a loaded profile.
 */
typedef struct tgi_sb_profile {
	tgi_sandbox mode;
	tgi_net     net;
	tgi_strv    hosts;    /* TGI_NET_HOSTS: "host", "*.domain", either with ":port";
	                         lowercase */
	tgi_strv    read;     /* shown read-only */
	tgi_strv    write;    /* shown writable */
	tgi_strv    sockets;  /* unix sockets (or directories of them) reachable */
	unsigned    accept;   /* TGI_SB_ACCEPT_* */
} tgi_sb_profile;

/*
 * Parse a sandbox profile from v (the node at JSON pointer ptr of cfg's
 * document): a mode name ("workspace-write"), or a mapping
 *   {mode, network: true | false | [host[:port], ...], read: [...],
 *    write: [...], sockets: [...], accept: [landlock]}
 * whose absent keys keep what *out holds on entry (the caller's defaults,
 * a valid profile).  0, or -1 with tgi_config_fail's sentence ("file:line:
 * col: sandbox.read[0]: ..."); either way *out stays valid for
 * tgi_sb_profile_free.
 */
int  tgi_sb_profile_parse(const struct tgi_config *cfg, const json_t *v, const char *ptr,
                          tgi_sb_profile *out, char *err, size_t errlen);
/* A profile in mode m, network off, empty lists (free it). */
void tgi_sb_profile_init(tgi_sb_profile *p, tgi_sandbox m);
void tgi_sb_profile_free(tgi_sb_profile *p);
/* dst: a copy of src (free it). */
void tgi_sb_profile_copy(tgi_sb_profile *dst, const tgi_sb_profile *src);

typedef struct tgi_principal_cfg {
	char    *name;
	tgi_strv roles;
	char    *token_env;   /* NULL: no token needed */
} tgi_principal_cfg;

typedef struct tgi_role_cfg {
	char    *name;
	tgi_strv allow, ask, deny; /* rule texts */
} tgi_role_cfg;

typedef struct tgi_profile_cfg {
	char    *name;
	tgi_strv categories;       /* "*" = all */
	int      read_only_only;   /* minimal: only read-only tools */
} tgi_profile_cfg;

/* A configured command tool (DESIGN §2, "Configured tools"). */
typedef struct tgi_tool_cfg {
	char    *name;
	char    *description;
	json_t  *input_schema;     /* owned; {"type":"object"} when absent */
	json_t  *output_schema;    /* owned or NULL */
	tgi_strv command;          /* argv; argv[0] resolved against the config dir when relative with a '/' */
	char    *category;         /* default "runtime" */
	unsigned flags;            /* TGI_T_* contract bits (registry.h) */
	size_t   max_result_chars; /* 0: default */
	int      timeout_s;        /* 0: default */
	tgi_strv requires_env;
	tgi_strv check;            /* availability check command (argv), may be empty */
	json_t  *aliases;          /* owned or NULL: {old_field: new_field} */
	tgi_sb_profile sandbox;    /* its `sandbox:` (tgi_sb_profile_parse) over a copy of the
	                              shell tool's profile (the top-level `sandbox:`) */
	char     where[64];        /* "file:line" of the entry, for errors */
} tgi_tool_cfg;

/* The shell tool (config `shell:`). */
typedef struct tgi_shell_cfg {
	int      max_timeout_s;     /* a call's timeout_s is capped here (default 600) */
	size_t   max_output_chars;  /* per stream, head + tail kept (default 50,000) */
	tgi_strv env_allow;         /* globs of variable names a call may set (default none) */
	tgi_strv read_only;         /* more read-only commands ("prog" or "prog sub") */
	int      read_only_replace; /* 1: read_only replaces the built-in list */
	char    *path;              /* PATH the command gets */
	long     cpu_s, address_space_mb, file_size_mb, open_files, processes; /* rlimits; 0: unset */
} tgi_shell_cfg;

typedef struct tgi_config {
	char        *path;          /* absolute path of the file, NULL for built-in defaults */
	char        *dir;           /* directory relative paths are resolved against */
	char        *workspace;     /* absolute, its real path */
	char        *workspace_given; /* absolute, as configured (through a symlink, say),
	                               NULL when that is the real path (tgi_workspace_spelled) */
	char        *store;         /* absolute path of the ledger file */
	char        *profile;
	tgi_mode     mode;
	tgi_approval approval;
	tgi_sandbox  sandbox;          /* sandbox_profile.mode */
	int          sandbox_network;  /* sandbox_profile.net != TGI_NET_OFF */
	tgi_sb_profile sandbox_profile; /* `sandbox:`, the shell tool's profile */
	char        *default_principal;

	tgi_principal_cfg *principals; size_t nprincipals;
	tgi_role_cfg      *roles;      size_t nroles;
	tgi_profile_cfg   *profiles;   size_t nprofiles;   /* built-ins first, then config's */
	tgi_strv           allow, ask, deny;               /* permissions */
	tgi_strv           execpolicy;                     /* rule files, absolute */
	json_t            *permission_tests;               /* permissions.tests (owned; may be NULL) */
	tgi_shell_cfg      shell;
	tgi_tool_cfg      *tools;      size_t ntools;

	size_t  max_args_bytes;      /* default 1 MiB */
	size_t  max_result_chars;    /* default 50000 */
	int     timeout_s;           /* default 120 */
	int     max_parallel;        /* calls of one batch run at once (default 8; 1: serial) */
	int     assert_formats;      /* default 1 */
	int     approval_ttl_s;      /* default 3600 */
	int     approval_wait_s;     /* approvals.wait_s: how long a queued call waits for its
	                              * decision before answering pending (default 0) */
	tgi_approvals_via approvals_via; /* approvals.via (default both) */
	int     sync_full;           /* ledger: 0 NORMAL (default), 1 FULL */
	char   *key_file;            /* ledger.key_file: the machine key's file, absolute (NULL:
	                              * $XDG_STATE_HOME/toolgate/key) */
	char   *key_env;             /* ledger.key_env: the variable holding the key (NULL: none) */
	int     lease_grace_s;       /* ledger.lease_grace_s: an in_flight claim's lease is the
	                              * tool's timeout plus this (default 60) */
	int     keep_output_all;     /* ledger.keep_output: 0 "side_effects" (default: a read-only
	                              * call's output is kept as its size and sha256), 1 "all" */
	long long spill_keep_s;      /* spill.keep: how long a spill file is kept; older ones
	                              * go when a gate opens (default 7 days) */
	int     hide_denied;         /* MCP tools/list leaves out what a bare deny rule forbids
	                                (default 1) */
	char   *console_listen;      /* console.listen: "HOST:PORT" of `toolgate console` (NULL:
	                                the default) */
	char   *console_token_env;   /* console.token_env: the variable holding its access token
	                                (NULL: a random token each start) */
	tgi_strv mcp_strip_args;     /* mcp.strip_client_args: more argument names MCP clients
	                                add to calls on their own (beyond the built-in list of
	                                src/mcp/server.c) */
	int      mcp_max_calls_per_principal; /* mcp.max_calls_per_principal: call threads one
	                                     * principal's MCP sessions hold at once; 0: 64 */

	/* sections later issues own, kept as parsed JSON (owned; may be NULL) */
	json_t *mcp_servers, *hooks, *loop_detection, *rate_limits, *redact, *events;

	json_t *root;                /* the whole document (owned) */

	char   *file;                /* the file's name as given, for messages; NULL for defaults */
	struct tgi_srcmap *srcmap;   /* owned; NULL for defaults or when unknown */
} tgi_config;

/*
 * Load the configuration.  path NULL: $TOOLGATE_CONFIG, else the first
 * toolgate.yaml (or toolgate.yml, toolgate.json) in the current directory
 * or a directory above it, up to the root, found as git finds its
 * repository (a directory above owned by someone other than you or root
 * ends the search; a file someone else owns is never loaded: an error in
 * the current directory, the end of the search above it), else built-in
 * defaults with the current directory as workspace.  A found file's
 * directory is the default workspace (as `workspace: .`); a named one's is
 * the current directory.  An explicit path that does not exist is an
 * error.  On error returns -1 with a sentence in err:
 * "toolgate.yaml:12:5: mode: expected one of default, acceptEdits, plan,
 * bypassPermissions, dryRun, got \"yolo\"".
 */
int  tgi_config_load(const char *path, tgi_config **out, char *err, size_t errlen);
/* The same, with the search starting at the directory from (NULL: the
 * current one): the gate starts it at --workspace when one is given. */
int  tgi_config_find(const char *path, const char *from, tgi_config **out, char *err,
                     size_t errlen);
void tgi_config_free(tgi_config *c);


/* The workspace root as a message to a model names it: as configured
 * (else its real path), made printable, cut to fit cap bytes. */
void tgi_workspace_shown(const tgi_config *c, char *out, size_t cap);

/* The document as config/section.h reads it and says its errors. */
tgi_conf_doc tgi_config_doc(const tgi_config *c);

/* "file:line:col" of the node at JSON pointer ptr, or "file" when unknown. */
void tgi_config_where(const tgi_config *c, const char *ptr, char *out, size_t cap);

/*
 * A problem with the node at JSON pointer ptr, for the sections checked
 * elsewhere (the middleware): "file:line:col: key.path: message" into err
 * (the key path as tools.x.command[0]; the message made printable), the
 * way tgi_config_load says its own.  Returns -1.
 */
int tgi_config_fail(const tgi_config *cfg, const char *ptr, char *err, size_t errlen,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Where the ledger was given: $TOOLGATE_STORE, else the file's `store`, else
 * the default (".toolgate/ledger.db"); a path may be relative to the
 * workspace, a postgres:// URL is used as it is. */
const char *tgi_config_store_given(const tgi_config *c);

/*
 * v at ptr must be a list of at most max strings, each of 1 to maxlen
 * bytes and without a NUL; argv 1: v is a command line, whose arguments
 * after the program may be empty.  0, or -1 with tgi_config_fail's
 * sentence about the list or the first bad entry.
 */
int tgi_config_strings(const tgi_config *cfg, const json_t *v, const char *ptr, size_t max,
                       size_t maxlen, int argv, char *err, size_t errlen);

/*
 * The semantic half of tgi_config_load: check an already parsed document
 * and build the config from it.  Takes root and map (map may be NULL) and
 * frees them on error.  name is the file name used in messages; dir is the
 * absolute directory relative paths are resolved against (NULL: the current
 * directory).  The result has path NULL.  -1 with a sentence in err.
 */
int tgi_config_from_json(json_t *root, struct tgi_srcmap *map, const char *name,
                         const char *dir, tgi_config **out, char *err, size_t errlen);

/* The caller's options applied over the file (they win): mode, approval,
 * profile, sync, approval wait, parallelism, and the workspace (a store
 * not given as an absolute path follows it).  0, or -1 with *errmsg. */
int tgi_config_apply(tgi_config *cfg, const tg_options *o, char **errmsg);

/* The configured profiles' names, "a, b, c" (as many as fit, then how many
 * more), into out; returns out.  For the sentence that refuses an unknown one. */
const char *tgi_profile_names(const tgi_config *cfg, char *out, size_t cap);

#endif
