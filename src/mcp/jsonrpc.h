/*
 * jsonrpc.h — JSON-RPC 2.0 as MCP uses it: one message per line on stdio,
 * one per POST body or SSE event over HTTP.
 *
 * Two parts:
 *   - a line reader over a file descriptor with a cap: a line longer than
 *     the cap is skipped up to its newline and reported once, never
 *     buffered whole; a trailing "\r" is dropped;
 *   - a message classifier and the builders of replies;
 *   - the protocol revisions both ends speak (the version list).
 *
 * Owns: framing and the shape of messages.  Must not: know MCP methods,
 * run anything, or write to a descriptor (the transports do).
 */
#ifndef TGI_JSONRPC_H
#define TGI_JSONRPC_H

#include <stddef.h>
#include <jansson.h>

/* JSON-RPC error codes */
enum {
	TGI_RPC_PARSE_ERROR      = -32700,
	TGI_RPC_INVALID_REQUEST  = -32600,
	TGI_RPC_METHOD_NOT_FOUND = -32601,
	TGI_RPC_INVALID_PARAMS   = -32602,
	TGI_RPC_INTERNAL_ERROR   = -32603,
	TGI_RPC_REQUEST_TIMEOUT  = -32001,  /* MCP SDKs' "request timed out" */
	TGI_RPC_CONNECTION_CLOSED = -32000,
};

/* ---- the line reader ---- */

typedef struct tgi_linereader {
	int     fd;
	size_t  cap;       /* longest line accepted, without its newline */
	char   *buf;       /* owned */
	size_t  len, off;  /* bytes held, bytes already handed out */
	size_t  size;      /* allocated */
	int     skipping;  /* inside an over-long line: drop bytes up to its newline */
	int     eof;
	int     wake_fd;   /* -1 (init's default), or a descriptor that becomes readable to
	                      stop a blocked reader: set it after init */
} tgi_linereader;

typedef enum {
	TGI_LINE_OK,       /* *line (borrowed until the next call), *len bytes, no newline */
	TGI_LINE_TOO_LONG, /* a line over the cap was skipped (reported once per line) */
	TGI_LINE_EOF,      /* end of input (a last line without newline is returned first) */
	TGI_LINE_ERROR,    /* read() failed; errno is set */
	TGI_LINE_WOKEN,    /* wake_fd became readable before a whole line arrived (what was read
	                      so far is kept for the next call) */
} tgi_line_status;

void            tgi_linereader_init(tgi_linereader *r, int fd, size_t cap);
void            tgi_linereader_free(tgi_linereader *r);
/* Blocks until a line, an over-long line, end of input, an error, or (with
 * wake_fd set) a wake-up: then poll()s both descriptors before each read. */
tgi_line_status tgi_linereader_next(tgi_linereader *r, const char **line, size_t *len);

/* ---- messages ---- */

typedef enum {
	TGI_RPC_REQUEST,       /* method + id */
	TGI_RPC_NOTIFICATION,  /* method, no id */
	TGI_RPC_RESPONSE,      /* id + result */
	TGI_RPC_ERROR_REPLY,   /* id (may be null) + error */
	TGI_RPC_BAD,           /* not a JSON-RPC 2.0 message: *reply is the error to send */
} tgi_rpc_kind;

typedef struct tgi_rpc_msg {
	tgi_rpc_kind kind;
	json_t      *root;    /* owned: the whole message (NULL for unparseable text) */
	const char  *method;  /* REQUEST, NOTIFICATION: borrowed from root */
	json_t      *id;      /* REQUEST, RESPONSE, ERROR_REPLY: borrowed (string or integer; null
	                         for an error reply to an unreadable request) */
	json_t      *params;  /* REQUEST, NOTIFICATION: borrowed; an object, or NULL when absent */
	json_t      *result;  /* RESPONSE: borrowed */
	json_t      *error;   /* ERROR_REPLY: borrowed */
} tgi_rpc_msg;

/*
 * Parse and classify len bytes of text (not NUL-terminated; must be valid
 * UTF-8 JSON).  Never fails: what is not a JSON-RPC 2.0 message is
 * TGI_RPC_BAD with *reply set to the error response to send (-32700 for
 * text that is not JSON, -32600 for JSON that is not a request: a batch
 * array, a missing "jsonrpc":"2.0", an id that is neither a string nor an
 * integer, params that are neither an object nor absent); *reply is NULL
 * for every other kind.  Free with tgi_rpc_msg_free.
 */
void tgi_rpc_parse(const char *text, size_t len, tgi_rpc_msg *m, json_t **reply);
void tgi_rpc_msg_free(tgi_rpc_msg *m);

/* Replies and messages (new references).  id may be NULL (sent as null). */
json_t *tgi_rpc_result(json_t *id, json_t *result);                  /* steals result */
json_t *tgi_rpc_error(json_t *id, int code, const char *message, json_t *data); /* steals data */
json_t *tgi_rpc_request(json_t *id, const char *method, json_t *params); /* steals params */
json_t *tgi_rpc_notification(const char *method, json_t *params);   /* steals params */

/* Serialise a message compactly on one line (no newline added); caller
 * frees.  Never NULL (aborts on OOM like tgi_xmalloc). */
char *tgi_rpc_dump(const json_t *msg, size_t *len);

/* Are two ids the same (string == string, integer == integer)? */
int tgi_rpc_id_equal(const json_t *a, const json_t *b);

/* ---- protocol revisions ---- */

/* The MCP protocol revisions we speak, as server and as client, newest
 * first; any other requested one is answered with the first. */
extern const char *const tgi_mcp_versions[];
/* Is v one of them? */
int tgi_mcp_version_known(const char *v);
/* Does revision v define the SSE priming event (an id and empty data,
 * SEP-1699)?  2025-11-25 and later, compared as the official SDKs compare
 * (as strings); clients of earlier revisions parse every event's data as
 * JSON and fail on an empty one. */
int tgi_mcp_version_primes(const char *v);

#endif
