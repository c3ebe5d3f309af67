/*
 * console.h — the console's parts (toolgate console, tg_console).
 *
 *   server.c    the HTTP server (libmicrohttpd, loaded at run time as for
 *               MCP's Streamable HTTP; one thread per connection), the
 *               checks every request passes (Host, Origin, session cookie,
 *               CSRF on every POST), security headers, and the dispatch of
 *               a routed request to a page, an action or the event stream
 *   route.c     the request line and bodies as data: path into a route and
 *               its argument, query strings and url-encoded forms into
 *               name/value pairs (percent-decoded, bounded); no I/O, fuzzed
 *   auth.c      the access token, the one-use login codes, browser sessions
 *               (cookie) and their CSRF tokens; constant-time comparisons
 *   events.c    GET /events: Server-Sent Events of finished calls, from
 *               tg_log_follow, resumable by Last-Event-ID (the seq)
 *   html.c      the HTML every page shares: escaping, the page shell and
 *               navigation, status badges, times, the argument summary
 *   live.c approvals.c call.c stats.c sessions.c
 *               one page each (approvals.c also the approve/deny action)
 *   assets.c    console.css and console.js, embedded
 *
 * A page reads the ledger through the gate (tg_log, tg_stats, tg_approvals,
 * the store) and renders HTML into a buffer; every text that came from a
 * call (tool names, arguments, outputs, messages, ids) is escaped, and the
 * pages carry no inline script (the CSP forbids it).  What the ledger
 * holds is already redacted; the console shows nothing else.
 *
 * Owns: nothing shared; each part says what it owns.  Must not: change
 * policy or run calls: the only state it changes is an approval's decision.
 */
#ifndef TGI_CONSOLE_H
#define TGI_CONSOLE_H

#include <stddef.h>
#include <stdint.h>

#include "gate/gate.h"
#include "util/util.h"

/* ---- routing (route.c) ---- */

typedef enum {
	TGC_NOT_FOUND,
	TGC_ROOT,          /* GET  /                    → 303 /live */
	TGC_LOGIN,         /* GET  /login?code=C        one-use code → cookie, 303 /live;
	                    *                            without a code: the token form
	                    * POST /login  token=T       → cookie, 303 /live */
	TGC_LIVE,          /* GET  /live?tool=&status=&session=&principal= */
	TGC_EVENTS,        /* GET  /events?(same filters)  text/event-stream */
	TGC_APPROVALS,     /* GET  /approvals[?fragment=1]  (fragment: the list alone) */
	TGC_DECIDE,        /* POST /approvals/<id>/approve|deny  csrf=, reason= */
	TGC_CALL,          /* GET  /calls/<op_id> */
	TGC_SPILL,         /* GET  /spill/<op_id>       the spilled output, text/plain */
	TGC_STATS,         /* GET  /stats?window=hour|day|all */
	TGC_SESSIONS,      /* GET  /sessions */
	TGC_SESSION,       /* GET  /sessions/<id> */
	TGC_ASSET,         /* GET  /static/console.css|console.js */
} tgc_route;

#define TGC_MAX_PARAMS 16
#define TGC_MAX_VALUE  4096   /* bytes of one decoded name or value */

typedef struct tgc_param {
	char *name, *value;    /* decoded, NUL-terminated, valid UTF-8 */
} tgc_param;

typedef struct tgc_params {
	tgc_param v[TGC_MAX_PARAMS];
	size_t    n;
} tgc_params;

typedef struct tgc_request {
	tgc_route  route;
	int        post;         /* the method is POST (else GET or HEAD) */
	char      *arg;          /* the path's argument: an approval id, op id, session id,
	                            asset name, or "approve"/"deny"'s id; NULL when none */
	int        approve;      /* TGC_DECIDE: 1 approve, 0 deny */
	tgc_params query;        /* the query string */
	tgc_params form;         /* a POST's url-encoded body */
} tgc_request;

/*
 * Route method + target (path and query, as on the request line): 0 with
 * *r filled (route TGC_NOT_FOUND for no page: the caller answers 404), or
 * -1 with a sentence for a target that is not one (bad percent-encoding,
 * not UTF-8, a NUL, too long, too many parameters): the caller answers
 * 400.  A method other than GET, HEAD or POST, or POST to a GET route, is
 * 405 (route set, -2).  Free with tgc_request_free.
 */
int  tgc_route_parse(const char *method, const char *target, tgc_request *r, char *err,
                     size_t errlen);
/* An application/x-www-form-urlencoded body into r->form: 0, or -1 with a
 * sentence (as for the query). */
int  tgc_form_parse(const char *body, size_t len, tgc_params *out, char *err, size_t errlen);
/* The value of name, or NULL. */
const char *tgc_param_get(const tgc_params *p, const char *name);
void tgc_request_free(tgc_request *r);

/* ---- what a page gets and gives (server.c → the pages) ---- */

typedef struct tgc_ctx {
	tg_gate    *g;
	const char *csrf;        /* the browser session's CSRF token, for forms */
	const char *who;         /* who decides, as recorded: "console" */
	int64_t     now_ms;
} tgc_ctx;

typedef struct tgc_reply {
	int         status;      /* HTTP status */
	const char *type;        /* Content-Type (static) */
	tgi_buf     body;
	char       *location;    /* a 303's target (owned), or NULL */
} tgc_reply;

/* Each page fills rep (status 200 and HTML, or 404 with a page that says
 * what was not found, or 500 with the ledger's sentence). */
void tgc_page_live(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_approvals(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_call(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_stats(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_sessions(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_session(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
void tgc_page_spill(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
/* POST /approvals/<id>/approve|deny (the CSRF token was checked): decides
 * as c->who with the form's reason, then 303 back to /approvals (or a 409
 * page with the store's sentence: not pending, expired). */
void tgc_action_decide(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep);
/* The login form (GET /login without a code, or a wrong token). */
void tgc_page_login(const tgc_ctx *c, const char *error, tgc_reply *rep);
/* A plain error page: status and a sentence. */
void tgc_page_error(const tgc_ctx *c, int status, const char *sentence, tgc_reply *rep);

/* ---- the live stream (events.c) ---- */

/*
 * One finished call as the Live page shows it, from an event line of
 * tg_log_follow whose type ends a call: {seq, op_id, ts, session,
 * principal, tool, summary, status, stage, duration_ms}, or NULL when the
 * event does not end a call or does not pass the filters (query: tool,
 * status, session, principal).  Caller decrefs.
 */
json_t *tgc_live_row(tg_gate *g, const char *event_json, const tgc_params *filters);

/* One GET /events stream: its follower (a thread running tg_log_follow)
 * and the bytes it queued for the connection (server.c sends them). */
typedef struct tgc_stream tgc_stream;
/* Follow g's ledger after seq `after` (-1: from now) for the rows that
 * pass filters (copied); fd is the connection's socket (its peer leaving
 * ends the stream), stop the console's stop flag.  NULL with a sentence
 * when the follower cannot start. */
tgc_stream *tgc_stream_open(tg_gate *g, const tgc_params *filters, long long after, int fd,
                            volatile const int *stop, char *err, size_t errlen);
/* Up to max bytes of the stream, waiting for them (a keepalive comment
 * after 15 s of silence): > 0 bytes, 0 the stream ended (the console
 * stops, the ledger cannot be read), -1 the peer left.  The connection's
 * thread only. */
long        tgc_stream_read(tgc_stream *s, char *buf, size_t max);
/* Stop the follower, wait for it, free s.  NULL is a no-op. */
void        tgc_stream_close(tgc_stream *s);

/* ---- shared HTML (html.c) ---- */

/* Append text HTML-escaped (& < > " ' and control characters). */
void tgc_html_text(tgi_buf *b, const char *text);
/* The page shell up to <main>: title, stylesheet, script, navigation with
 * `active` marked (a route), the CSRF token in a <meta>. */
void tgc_html_begin(tgi_buf *b, const tgc_ctx *c, const char *title, tgc_route active);
void tgc_html_end(tgi_buf *b);
/* A status as a coloured badge. */
void tgc_html_badge(tgi_buf *b, const char *status);

#define TGC_PAGE_MAX    (16u << 20)  /* bytes of one page */
#define TGC_SUMMARY_CPS 120          /* code points of an argument summary */

/* Make rep an HTML reply of status: its body emptied and capped at
 * TGC_PAGE_MAX (rep starts zeroed, or as a page left it). */
void tgc_reply_html(tgc_reply *rep, int status);
/* Append text percent-encoded as one URL path segment or query value
 * (safe inside an attribute as it is). */
void tgc_html_url(tgi_buf *b, const char *text);
/* An ISO 8601 UTC time (as the ledger writes it) as <time datetime>
 * showing HH:MM:SS (the script shows it in local time); cls may be NULL. */
void tgc_html_time(tgi_buf *b, const char *iso, const char *cls);
/* A duration: "0.4 ms", "1.25 s"; nothing when ms < 0. */
void tgc_html_duration(tgi_buf *b, double ms);
/* The one-line summary of redacted arguments (JSON text, NULL: none):
 * compact, control characters as spaces, cut at TGC_SUMMARY_CPS code
 * points with "…".  Caller frees. */
char *tgc_args_summary(const char *args);
/* The stage that stopped a call (its envelope's first stage not ok), or
 * "" when none did. */
const char *tgc_stop_stage(const json_t *envelope);

/* ---- assets (assets.c) ---- */

/* The embedded file name ("console.css", "console.js"): its bytes and
 * Content-Type, or NULL. */
const char *tgc_asset(const char *name, size_t *len, const char **type);

/* ---- auth (auth.c) ---- */

typedef struct tgc_auth tgc_auth;

/* token: the access token (copied), or NULL for a random one. */
tgc_auth   *tgc_auth_new(const char *token);
void        tgc_auth_free(tgc_auth *a);
/* The wall clock codes and sessions are timed by (unix ms; NULL: the
 * real one): for tests. */
void        tgc_auth_clock(tgc_auth *a, int64_t (*now_ms)(void));
const char *tgc_auth_token(const tgc_auth *a);
/* A new one-use login code (valid 10 minutes); borrowed until the next call. */
const char *tgc_auth_code(tgc_auth *a);
/* Spend a login code, or check the token: 1 with a new session id in
 * sid[65] (the cookie's value), 0 refused. */
int         tgc_auth_login_code(tgc_auth *a, const char *code, char sid[65]);
int         tgc_auth_login_token(tgc_auth *a, const char *token, char sid[65]);
/* The session of a cookie header's value (NULL: none): 1 and its CSRF
 * token in csrf[65], or 0. */
int         tgc_auth_session(tgc_auth *a, const char *cookie_header, char csrf[65]);
/* Does token match the session's CSRF token?  Constant time. */
int         tgc_auth_csrf_ok(const char *want, const char *got);

#endif
