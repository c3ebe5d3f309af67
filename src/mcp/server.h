/*
 * server.h — the MCP server, apart from its transports (DESIGN §6).
 *
 * One tgi_mcp_server per `toolgate serve`; one tgi_mcp_session per client
 * (the stdio peer, or one Mcp-Session-Id over HTTP).  A transport hands
 * every message it reads to tgi_mcp_session_handle and writes what the
 * session gives its send function.  Requests are answered through send,
 * possibly later and from another thread (tools/call runs on a thread of
 * its own, so ping, cancellation and elicitation answers keep flowing
 * while tools run, unless it is a quick read: tgi_mcp_session_inline);
 * responses may therefore go out of order.
 *
 * Owns: MCP methods (initialize, ping, tools/list with cursors,
 * tools/call, logging/setLevel, notifications/cancelled, progress,
 * list_changed, elicitation/create towards the client) and the state of
 * each session.  Must not: read or write a descriptor (transports do),
 * decide policy (the gate does), or know HTTP.
 */
#ifndef TGI_MCP_SERVER_H
#define TGI_MCP_SERVER_H

#include <stddef.h>
#include <jansson.h>
#include "toolgate.h"

typedef struct tgi_mcp_server tgi_mcp_server;
typedef struct tgi_mcp_session tgi_mcp_session;

/*
 * Write one message to the client.  related: the id of the client request
 * this message belongs to (its response, or a notification or request sent
 * while serving it), or NULL for a message of the session as a whole
 * (tools/list_changed).  final: this is the response to `related`, the
 * last message about it.  Called from any thread; the transport serialises.
 * Returns 0, or -1 when the client is gone (the message is dropped).
 * text NULL sends nothing: with final, the request ended without a
 * response (cancelled); without, a probe before a call starts: -1 means
 * its answer has nowhere to go, and the call is not started.
 */
typedef int (*tgi_mcp_send_fn)(void *arg, const json_t *related, int final, const char *text,
                               size_t len);

/* o is copied (its strings must outlive the server).  The gate is borrowed. */
tgi_mcp_server *tgi_mcp_server_new(tg_gate *g, const tg_serve_options *o);
/* Every session must be freed first. */
void            tgi_mcp_server_free(tgi_mcp_server *s);
/* The gate served (borrowed), and the options as given. */
tg_gate                *tgi_mcp_server_gate(tgi_mcp_server *s);
const tg_serve_options *tgi_mcp_server_options(const tgi_mcp_server *s);

/*
 * A new session.  principal / token (borrowed, may be NULL) identify every
 * call of the session (HTTP: the bearer token).  send/arg receive what the
 * session writes, until tgi_mcp_session_free.
 */
tgi_mcp_session *tgi_mcp_session_new(tgi_mcp_server *s, const char *principal, const char *token,
                                     tgi_mcp_send_fn send, void *arg);

/*
 * Let quick read-only calls run on the thread that hands them in (within
 * tgi_mcp_session_handle, which then sends their answer before it
 * returns), rather than on a call thread: only calls that can never wait
 * for the client (server.c, quick_read).  For a transport whose reader
 * may be held for the few microseconds such a call takes (stdio).  Call
 * once, before the first message.
 */
void tgi_mcp_session_inline(tgi_mcp_session *ss);

/*
 * Handle one message of len bytes from the client (a line, a POST body).
 * Returns what it was: TGI_RPC_REQUEST when a response will follow through
 * send (now or later), anything else when none will (notifications,
 * responses to our requests, and bad messages, whose error reply has
 * already been sent with related NULL and final 1).
 */
int tgi_mcp_session_handle(tgi_mcp_session *ss, const char *text, size_t len);

/* The session's id (a UUID, for Mcp-Session-Id) and negotiated protocol
 * revision ("" before initialize). */
const char *tgi_mcp_session_id(const tgi_mcp_session *ss);
const char *tgi_mcp_session_version(const tgi_mcp_session *ss);
int         tgi_mcp_session_initialized(const tgi_mcp_session *ss);

/* Tell every session the tool list changed (notifications/tools/list_changed
 * to each initialized session).  Thread-safe. */
void tgi_mcp_server_list_changed(tgi_mcp_server *s);

/* The client's input ended: let the running calls finish (their answers
 * still go out; questions to the client fail at once) and wait for them,
 * or until wake_fd (-1: none) becomes readable: the server is stopping
 * (1, and the caller frees the session, which cancels them; else 0). */
int tgi_mcp_session_drain(tgi_mcp_session *ss, int wake_fd);

/* Cancel the session's running calls, answer its waiting elicitations as
 * cancelled, wait for its threads, and free it.  send is not called after
 * this returns.  The calls' cancel says why (tgi_mcp_stop_cancel). */
void tgi_mcp_session_free(tgi_mcp_session *ss);

/* The value a call's cancel flag gets when its session is freed
 * (toolgate.h tg_request.cancel): TG_CANCEL_SIGNAL(sig) once the server
 * was stopped by signal sig (tg_serve_stop_signal), else 1 (the client
 * went away).  Async-signal-safe to set; read on any thread.  (serve.c) */
int tgi_mcp_stop_cancel(void);

/*
 * The transports (src/mcp/stdio.c, src/mcp/http.c).  stdio serves one
 * session on stdin/stdout until stdin ends (then the running calls finish
 * and answer) or wake_fd becomes readable (then they are cancelled).
 * While it runs, descriptor 1 points at stderr so that nothing but MCP
 * can reach the real stdout.  -1 with a sentence in err when it cannot
 * start.
 */
int tgi_mcp_stdio_run(tgi_mcp_server *s, int wake_fd, char *err, size_t errlen);

typedef struct tgi_mcp_http tgi_mcp_http;
int  tgi_mcp_http_start(tgi_mcp_server *s, const tg_serve_options *o, tgi_mcp_http **out,
                        char *err, size_t errlen);
void tgi_mcp_http_stop(tgi_mcp_http *h);   /* closes every session; NULL is fine */

#endif
