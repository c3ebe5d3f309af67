/*
 * client.h — an MCP client connection to one downstream server, for the
 * bridge: a stdio child (one JSON-RPC message per line) or Streamable HTTP
 * (POST with JSON or SSE replies, Mcp-Session-Id, MCP-Protocol-Version).
 *
 * A reader thread owns the incoming side: responses wake the request that
 * waits for them (ids are ours: the client numbers its requests), progress
 * notifications go to the request whose token they carry, other
 * notifications and the server's own requests go to the handlers.  `ping`
 * from the server is answered here.
 *
 * Owns: the child process (or HTTP session), its pipes, ids, the waiting
 * table.  Must not: know tools, policy or the gate.
 */
#ifndef TGI_MCP_CLIENT_H
#define TGI_MCP_CLIENT_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

typedef struct tgi_mcp_client tgi_mcp_client;

/* Called on the reader thread.  Any member may be NULL. */
typedef struct tgi_mcp_client_handlers {
	void *arg;
	/* a notification (not progress for one of our requests); params may be NULL */
	void (*notify)(void *arg, const char *method, const json_t *params);
	/* a request from the server (elicitation/create, sampling/createMessage,
	 * ...; not ping): 0 with *result, or -1 with *error (a JSON-RPC error
	 * object); both new references.  May block (the reader keeps a thread
	 * per such request so responses still flow; at most 16 at once, past
	 * which the server is answered -32603 without a call).  NULL: -32601. */
	int (*request)(void *arg, const char *method, const json_t *params, json_t **result,
	               json_t **error);
	/* the connection is gone (the child exited, the stream broke); why is a
	 * sentence.  Called once; every waiting request has already failed. */
	void (*closed)(void *arg, const char *why);
} tgi_mcp_client_handlers;

typedef struct tgi_mcp_client_cfg {
	const char        *name;        /* the server's name in config, for messages */
	/* stdio: */
	char *const       *argv;        /* argv[0] looked up in PATH when it has no '/' */
	char *const       *envp;        /* the child's whole environment (NULL: ours) */
	const char        *cwd;         /* or NULL */
	/* a sandbox around the child (exec/sandbox.h; argv is then its wrapper's):
	 * child_setup runs in the child last before exec (async-signal-safe; 0,
	 * or -errno to fail the start), started in the caller's thread once the
	 * exec succeeded and before initialize (0, or -1 with a sentence: the
	 * child is killed and the open fails with it).  Either may be NULL. */
	int              (*child_setup)(void *arg);
	void              *child_arg;
	int              (*started)(void *arg, pid_t pid, char *err, size_t errlen);
	void              *started_arg;
	/* the child's stderr: each piece it writes, passed on from the reader
	 * thread (the last pieces before close() returns); it may not call
	 * into this client.  NULL: the child writes to our stderr. */
	void             (*stderr_data)(void *arg, const char *data, size_t n);
	void              *stderr_arg;
	/* or Streamable HTTP: */
	const char        *url;         /* http(s)://host:port/path; argv must be NULL */
	const char *const *headers;     /* extra "Name: value" lines (Authorization), or NULL */
	size_t             nheaders;
	size_t             max_message; /* 0: 16 MiB */
	int                init_timeout_s; /* initialize must answer within (0: 30) */
} tgi_mcp_client_cfg;

/*
 * Start the child (or reach the URL), send initialize (protocol 2025-11-25,
 * our capabilities: elicitation when forwarding is possible, which the
 * bridge always offers) and notifications/initialized.  0 with *out, or -1
 * with a sentence in err (the command cannot start, the server exits,
 * answers garbage, or does not answer in time).  cfg and h are copied.
 */
int tgi_mcp_client_open(const tgi_mcp_client_cfg *cfg, const tgi_mcp_client_handlers *h,
                        tgi_mcp_client **out, char *err, size_t errlen);

/* From the initialize result (borrowed; valid until close). */
const json_t *tgi_mcp_client_capabilities(const tgi_mcp_client *c);
const json_t *tgi_mcp_client_server_info(const tgi_mcp_client *c);
const char   *tgi_mcp_client_version(const tgi_mcp_client *c); /* negotiated protocol */
pid_t         tgi_mcp_client_pid(const tgi_mcp_client *c);      /* stdio child, else 0 */
int           tgi_mcp_client_alive(const tgi_mcp_client *c);

/* Progress of one request: the params of its notifications/progress. */
typedef void (*tgi_mcp_progress_fn)(void *arg, const json_t *params);

/*
 * Send a request and wait for its answer.  params is stolen (may be NULL).
 * With progress set, a progress token is added to params._meta and the
 * server's progress notifications for it are passed on.  While waiting,
 * *cancel (may be NULL) is watched: when it becomes nonzero, or timeout_ms
 * passes (0: no limit), notifications/cancelled is sent and -1 returned.
 * Returns 0 with *result, or -1: *error set (the server's JSON-RPC error
 * object) or, when the failure is ours (timeout, cancelled, connection
 * lost), *error NULL and a sentence in err.  *cancelled is set to 1 when
 * it ended by *cancel.  New references.
 */
int tgi_mcp_client_request(tgi_mcp_client *c, const char *method, json_t *params, int timeout_ms,
                           volatile const int *cancel, tgi_mcp_progress_fn progress,
                           void *parg, json_t **result, json_t **error, int *cancelled,
                           char *err, size_t errlen);

/* Send a notification (params stolen, may be NULL); -1 when the connection is gone. */
int tgi_mcp_client_notify(tgi_mcp_client *c, const char *method, json_t *params);

/*
 * Shut down: stdio closes the child's stdin, waits up to 2 s, sends
 * SIGTERM, waits up to 2 s, then SIGKILL (the child's process group), and
 * reaps it; HTTP sends DELETE for the session.  Joins the reader.  Waiting
 * requests fail.  NULL is fine.
 */
void tgi_mcp_client_close(tgi_mcp_client *c);

#endif
