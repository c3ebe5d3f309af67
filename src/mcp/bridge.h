/*
 * bridge.h — downstream MCP servers from config `mcp_servers:` (DESIGN §6),
 * their tools registered in the gate's registry as `<server>__<tool>`.
 *
 *   mcp_servers:
 *     fs:
 *       command: npx                 # a string, or an argv list
 *       args: [-y, "@modelcontextprotocol/server-filesystem", "."]
 *       env: {NAME: value}           # added to a small base environment
 *       cwd: .                       # relative to the config's directory
 *       url: http://127.0.0.1:9000/mcp  # instead of command: Streamable HTTP
 *       token_env: FS_TOKEN          # HTTP: Authorization: Bearer $FS_TOKEN
 *       trusted: false               # annotations become the contract only when true;
 *                                    # sampling/createMessage is relayed only when true
 *       pin: false                   # a changed definition disables the tool until approved
 *       prefix: "fs__"               # default "<server>__"; no listed name may start
 *                                    # with another server's non-empty prefix
 *       category: mcp                # for profiles (default mcp)
 *       tools: {include: [globs], exclude: [globs]}
 *       aliases: {tool: {old_field: new_field}}  # tool as the server lists it; what its
 *                                    # listed schema does not allow is left out (stderr)
 *       timeout_s: 120               # per call
 *       startup_timeout_s: 30        # spawn to tools listed
 *       sandbox: read-only           # stdio: the profile it runs in for its whole life
 *                                    # (config.h tgi_sb_profile_parse: a mode or
 *                                    # {mode, network, read, write, sockets, accept});
 *                                    # default read-only, network off
 *
 * No server starts with the gate: a server is started when one of its
 * tools is first needed -- a call that names one (tgi_bridge_need_tool),
 * or a listing of the tools (tgi_bridge_need_all: `toolgate tools`, MCP
 * tools/list, an agent's tools) -- and never for a built-in or configured
 * tool.  A stdio server's stderr goes to .toolgate/logs/<server>.log
 * (LOG_MAX bytes, then moved to <server>.log.1 and begun again), not to
 * the gate's stderr; the last line it wrote is quoted when it fails to
 * start or exits.
 *
 * A stdio server is started inside the sandbox of its profile
 * (exec/sandbox.h) and stays in it until it exits: the system read-only
 * with /etc's secrets hidden, the workspace (read-only by default), a
 * private /tmp and an empty private HOME, .toolgate hidden, .git and the
 * gate's own files read-only (its program and scripts among them), its own
 * pid namespace (what it starts dies with it), no network unless its
 * profile says.  Its environment is PATH, LANG, LC_ALL, TERM of the
 * gate's, HOME and TMPDIR of its sandbox, and its `env:`; nothing else.
 * With `trusted: false` said, it cannot be given more than read-only with
 * no network, no writable paths and bubblewrap (a config error).  A
 * sandbox that cannot be made (no backend, Landlock not accepted, hosts
 * without the gate's proxy) means the server is not started: its tools are
 * unavailable and the reason is the one explain and doctor give.
 *
 * Each server is started (a client.h connection), initialized and listed
 * (every page of tools/list); each tool's input schema is compiled by our
 * validator and the tool registered under its exposed name.  An untrusted
 * server's tools get the conservative contract (no flags); a trusted one's
 * annotations map to read_only/destructive/idempotent (concurrency_safe
 * with read_only).  A crashed child is restarted with backoff (1 s doubling
 * to 60 s) and its tools are unavailable meanwhile; a downstream
 * tools/list_changed re-lists and the change is passed on.  Definition
 * pinning: sha256 of each tool's description, input and output schema,
 * annotations and title (canonical JSON) is pinned in the ledger when
 * first seen; a later change is an event
 * (`mcp.tool.changed`) and, with pin: true, the tool is unavailable until
 * the approval the bridge queues for it is approved.
 *
 * Owns: the servers, their clients, the rows of their tools, pins.  Must
 * not: decide policy (the pipeline does, on the exposed name) or let a
 * downstream tool take the name of a built-in or configured tool.
 */
#ifndef TGI_MCP_BRIDGE_H
#define TGI_MCP_BRIDGE_H

#include <stddef.h>
#include <jansson.h>
#include "toolgate.h"

typedef struct tgi_bridge tgi_bridge;

/*
 * Parse the gate's cfg->mcp_servers (an error names file:line through
 * tgi_config_where); no server is started.  No servers configured: 0 with
 * *out NULL.
 */
int tgi_bridge_new(tg_gate *g, tgi_bridge **out, char *err, size_t errlen);

/*
 * The sandbox profile of server `name` (its section v of cfg->mcp_servers):
 * read-only, network off, then its `sandbox:`; with `trusted: false` said,
 * anything more than read-only with no network, no writable paths and
 * bubblewrap is refused.  0, or -1 with "file:line:col: mcp_servers.NAME.
 * sandbox: ..." in err; *out is valid for tgi_sb_profile_free either way.
 * (The bridge and `toolgate doctor` both ask it.)
 */
struct tgi_sb_profile;
struct tgi_config;
int tgi_bridge_profile(const struct tgi_config *cfg, const char *name, const json_t *v,
                       struct tgi_sb_profile *out, char *err, size_t errlen);

/* A listing of the tools is about to be made: start every server not
 * started yet, and wait until each has been listed once or has failed to
 * start (up to its startup timeout).  Thread-safe; NULL is fine. */
void tgi_bridge_need_all(tgi_bridge *b);

/* A call names `name`, which no registered tool has: start the server(s)
 * that could offer it (the one whose prefix it carries, else those with
 * prefix ""), and wait as tgi_bridge_need_all does.  1 when one was
 * started or waited for (look the name up again), 0 when no server could
 * offer it. */
int tgi_bridge_need_tool(tgi_bridge *b, const char *name);

/* Has every server been through its first start (listed, or failed)?
 * Until then the set of tools is not known (the manifest digest waits). */
int tgi_bridge_all_listed(tgi_bridge *b);

/* fn(arg) is called (from a bridge thread) whenever the set of bridged
 * tools or their availability changes.  One listener; NULL removes it. */
void tgi_bridge_on_change(tgi_bridge *b, void (*fn)(void *arg), void *arg);

/* For an unknown tool name: if it carries a configured server's prefix,
 * a sentence saying why that server offers no such tool (not running, not
 * listed, filtered out) into out; else 0. */
int tgi_bridge_explain(tgi_bridge *b, const char *name, char *out, size_t cap);

/* Shut every server down (stdin closed, SIGTERM, SIGKILL) and stop
 * restarting them; their tools become unavailable.  Then free. */
void tgi_bridge_stop(tgi_bridge *b);
void tgi_bridge_free(tgi_bridge *b); /* after the registry is freed; NULL is fine */

/* ---- between the bridge and its tools' handler (src/mcp/bridged.c) ---- */

struct tgi_exec_ctx;
struct tgi_tool_out;
struct tgi_mcp_client;

/* The handler of every bridged tool: tools/call on its server. */
int tgi_bridged_run(const struct tgi_exec_ctx *ctx, const json_t *args, struct tgi_tool_out *out);
/* Its dry-run plan: {server, tool (the name on that server), arguments}. */
json_t *tgi_bridged_plan(const struct tgi_exec_ctx *ctx, const json_t *args);

/* The server's name and the tool's name on it, of the bridged tool whose
 * row data is tool (borrowed: as long as the row). */
void tgi_bridge_tool_names(const void *tool, const char **server, const char **remote);

typedef struct tgi_bridge_call tgi_bridge_call;

/* What one call of a bridged tool needs of its server (borrowed until
 * tgi_bridge_call_end). */
typedef struct tgi_bridge_target {
	struct tgi_mcp_client *client;
	const char            *server;  /* the server's name in config */
	const char            *remote;  /* the tool's name on that server */
} tgi_bridge_target;

/*
 * Start a call of the bridged tool whose row data is tool: its server's
 * connection is held (never closed under the call).  While it is the only
 * call in flight on that server, the server's log messages and requests
 * are relayed to it (through ctx->cb); while several are, to none (the
 * server's requests are refused).  NULL when the server is
 * not running: *retry_after_s is the time to its next start and err says
 * why.  End every call begun with tgi_bridge_call_end, which waits for a
 * relay in progress to return.
 */
tgi_bridge_call *tgi_bridge_call_begin(const void *tool, const struct tgi_exec_ctx *ctx,
                                       tgi_bridge_target *t, double *retry_after_s, char *err,
                                       size_t errlen);
void tgi_bridge_call_end(tgi_bridge_call *call);

#endif
