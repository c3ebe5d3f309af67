/*
 * server.c — tg_console: the console's HTTP server (libmicrohttpd, loaded
 * at run time, one thread per connection), the checks every request
 * passes, and the dispatch to pages, actions and the event stream.
 *
 * A request goes through a flat list of checks; the first that fails
 * answers it:
 *
 *   Host        missing or not an authority: 400; not this console's
 *               (the bound host and port, or localhost / 127.0.0.1 / [::1]
 *               with that port when bound to loopback; any host with the
 *               port when bound to a wildcard address): 421
 *   target      not one route.c can read: 400; a method the route does
 *               not take: 405 (with Allow)
 *   session     GET /static/... and /login are open; everything else needs
 *               the session cookie (auth.c): a page without one 303s to
 *               /login, the event stream, a fragment or a POST gets 401
 *   POST        Origin (or, without one, Referer) must be this console's
 *               own origin: 403; the body at most BODY_MAX bytes: 413,
 *               a url-encoded form: 415; then the session's CSRF token
 *               (form field csrf or header X-CSRF-Token): 403.  POST
 *               /login has no session yet: Origin only.
 *
 * Every response carries the security headers (CSP, nosniff, frame DENY,
 * referrer policy, no-store).  The referrer policy is same-origin, not
 * no-referrer: under no-referrer a browser sends "Origin: null" with a
 * form's POST, and the Origin check would refuse every form.
 *
 * GET /login?code=C spends the one-use code, and POST /login token=T
 * checks the token; either sets the cookie and 303s to /live, so that the
 * code leaves the address bar.
 *
 * Threads: MHD runs each connection in a thread of its own, so a page is
 * rendered, and the event stream waits, in the connection's thread.  The
 * console's state is set before MHD starts and read-only after, except
 * `stopping` (atomic) and the auth codes (auth.c locks them).
 *
 * Owns: the listening socket, the MHD daemon, the auth state, the stop
 * pipe.  Must not: render pages (the page files do), change anything but
 * an approval's decision (through tgc_action_decide), or echo a secret.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "console/console.h"
#include "util/dl.h"
#include "util/listen.h"

#define LISTEN_DEFAULT  "127.0.0.1:8760"
#define CONNECTIONS_MAX 64u
#define BODY_MAX        (64u << 10)   /* bytes of a POST body */
#define IDLE_TIMEOUT_S  60u           /* an idle connection is closed after this */
#define SSE_BLOCK       (16u << 10)   /* what MHD asks of the event stream at once */
#define TOKEN_MIN       16            /* characters of a token given by console.token_env */
#define SHOWN_MAX       TGI_SHOWN_MAX /* bytes of outside text echoed in a sentence */
#define WHO             "console"     /* who decides, as the ledger records it */

#define CSP "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
            "frame-ancestors 'none'; form-action 'self'"

/* libmicrohttpd's functions: nothing below runs before tg_console loaded them. */
static const tgi_mhd_api *const M = &tgi_mhd;

typedef struct console {
	tg_gate           *g;
	tgc_auth          *auth;
	struct MHD_Daemon *d;
	char               host[256];  /* the host bound, as written (no brackets) */
	unsigned           port;       /* the port bound */
	int                loopback;   /* bound to a loopback address */
	int                wildcard;   /* bound to 0.0.0.0 or :: (allow_remote) */
	int                token_set;  /* the token came from the caller or console.token_env */
	char               name[32];   /* "tg-<hex>.localhost": the console's own host name */
	volatile int       stopping;   /* tgi_flag_*: the console stops */
} console;

/* What the server keeps of one request between MHD's calls. */
typedef struct request {
	char       *target;    /* the request target as sent (path and query) */
	int         started;   /* admit ran */
	int         reading;   /* admit took a POST's headers: its body is read, then post() */
	tgc_request r;
	int         routed;    /* tgc_route_parse's answer */
	int         authed;    /* a valid session cookie came */
	char        csrf[65];  /* ... its CSRF token */
	tgi_buf     body;
	int         too_large; /* the body went over BODY_MAX: dropped, answered 413 */
	size_t      dropped;
} request;

static int wake[2] = {-1, -1};

/* ---- replies ---- */

static const char *header(struct MHD_Connection *c, const char *name)
{
	return M->lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static void security_headers(struct MHD_Response *res)
{
	M->add_response_header(res, "Content-Security-Policy", CSP);
	M->add_response_header(res, "X-Content-Type-Options", "nosniff");
	M->add_response_header(res, "X-Frame-Options", "DENY");
	M->add_response_header(res, "Referrer-Policy", "same-origin");
	M->add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
}

/* Send rep (its body and location are taken), with one more header when
 * hname is not NULL. */
static enum MHD_Result send_reply(struct MHD_Connection *c, tgc_reply *rep, const char *hname,
                                  const char *hval)
{
	size_t len = rep->body.len;
	char *body = tgi_buf_steal(&rep->body);
	struct MHD_Response *res = body
	    ? M->create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
	    : M->create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!res) {
		free(body);
		free(rep->location);
		return MHD_NO;
	}
	security_headers(res);
	M->add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE,
	                       rep->type ? rep->type : "text/html; charset=utf-8");
	if (rep->location)
		M->add_response_header(res, MHD_HTTP_HEADER_LOCATION, rep->location);
	if (hname)
		M->add_response_header(res, hname, hval);
	enum MHD_Result rc = M->queue_response(c, (unsigned)rep->status, res);
	M->destroy_response(res);
	free(rep->location);
	rep->location = NULL;
	return rc;
}

static void ctx_of(const console *h, const request *q, tgc_ctx *ctx)
{
	ctx->g = h->g;
	ctx->csrf = q && q->authed ? q->csrf : NULL;
	ctx->who = WHO;
	ctx->now_ms = tgi_unix_ms();
}

/* An error page: status and a sentence (allow: a 405's Allow, else NULL). */
__attribute__((format(printf, 6, 7)))
static enum MHD_Result refuse(const console *h, const request *q, struct MHD_Connection *c,
                              unsigned status, const char *allow, const char *fmt, ...)
{
	char sentence[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sentence, sizeof sentence, fmt, ap);
	va_end(ap);
	tgc_ctx ctx;
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	ctx_of(h, q, &ctx);
	tgc_page_error(&ctx, (int)status, sentence, &rep);
	rep.status = (int)status;
	return send_reply(c, &rep, allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
}

/* 303 to location (a path of ours). */
static enum MHD_Result see_other(struct MHD_Connection *c, const char *location,
                                 const char *cookie)
{
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	rep.status = MHD_HTTP_SEE_OTHER;
	rep.type = "text/plain; charset=utf-8";
	rep.location = tgi_strdup(location);
	return send_reply(c, &rep, cookie ? MHD_HTTP_HEADER_SET_COOKIE : NULL, cookie);
}

/* The browser is signed in as sid: the cookie, and on to /live. */
static enum MHD_Result signed_in(struct MHD_Connection *c, const char *sid)
{
	char cookie[160];
	tgi_snprintf(cookie, sizeof cookie,
	             "tgc_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200", sid);
	return see_other(c, "/live", cookie);
}

/* ---- header checks ---- */

/* The Host header v: 1 this console's, 0 another's, -1 not an authority. */
static int host_ok(const console *h, const char *v)
{
	char host[256];
	unsigned port;
	if (!v || tgi_split_authority(v, strlen(v), host, sizeof host, &port) < 0)
		return -1;
	if ((port ? port : 80) != h->port)
		return 0;
	return h->wildcard || !strcasecmp(host, h->host) ||
	       (h->loopback && (tgi_loopback_name(host) || !strcasecmp(host, h->name)));
}

/*
 * Does the request come from a page of this console?  Its Origin, or
 * without one its Referer, must be http://<the Host it was sent to>
 * (already checked to be ours).
 */
static int same_origin(struct MHD_Connection *c)
{
	const char *host = header(c, MHD_HTTP_HEADER_HOST);
	const char *origin = header(c, "Origin");
	const char *from = origin ? origin : header(c, MHD_HTTP_HEADER_REFERER);
	if (!host || !from || strncasecmp(from, "http://", 7))
		return 0;
	from += 7;
	size_t hl = strlen(host);
	if (strncasecmp(from, host, hl))
		return 0;
	from += hl;
	/* Origin is scheme://authority (a trailing "/" tolerated); a Referer
	 * goes on with its path */
	return origin ? !strcmp(from, "") || !strcmp(from, "/") : from[0] == '/' || !from[0];
}

/* Is the Content-Type of a form (or absent, for an empty body)? */
static int form_type(const char *v)
{
	return !v || tgi_media_type_is(v, "application/x-www-form-urlencoded");
}

/* ---- the event stream ---- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	long n = tgc_stream_read(cls, buf, max);
	if (n > 0)
		return (ssize_t)n;
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
	tgc_stream_close(cls);
}

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    M->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* GET /events: resumed after Last-Event-ID (a seq: the browser's own
 * reconnect), else after the query's `after` (the seq the page was rendered
 * at), else from now. */
static enum MHD_Result events(console *h, request *q, struct MHD_Connection *c, int head)
{
	char a[SHOWN_MAX + 4], err[256];
	long long after = -1;
	const char *last = header(c, "Last-Event-ID");
	if (!last || !*last)
		last = tgc_param_get(&q->r.query, "after");
	if (last && *last) {
		size_t n = strlen(last);
		if (n > 18 || strspn(last, "0123456789") != n)
			return refuse(h, q, c, MHD_HTTP_BAD_REQUEST, NULL, "\"%s\" is not an event's seq "
			              "(Last-Event-ID or after)", tgi_shown(a, last));
		after = atoll(last);
	}
	tgc_stream *s = head ? NULL : tgc_stream_open(h->g, &q->r.query, after, conn_fd(c),
	                                              &h->stopping, err, sizeof err);
	if (!head && !s)
		return refuse(h, q, c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", err);
	struct MHD_Response *res =
	    s ? M->create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK, stream_read, s,
	                                         stream_free)
	      : M->create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!res) {
		tgc_stream_close(s);
		return MHD_NO;
	}
	security_headers(res);
	M->add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	M->add_response_header(res, "X-Accel-Buffering", "no");
	enum MHD_Result rc = M->queue_response(c, MHD_HTTP_OK, res);
	M->destroy_response(res);
	return rc;
}

/* ---- dispatch ---- */

static enum MHD_Result asset(struct MHD_Connection *c, const char *name)
{
	size_t len;
	const char *type;
	const char *bytes = tgc_asset(name, &len, &type);
	if (!bytes)
		return MHD_NO;
	struct MHD_Response *res =
	    M->create_response_from_buffer(len, (void *)bytes, MHD_RESPMEM_PERSISTENT);
	if (!res)
		return MHD_NO;
	security_headers(res);
	M->add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result rc = M->queue_response(c, MHD_HTTP_OK, res);
	M->destroy_response(res);
	return rc;
}

/* GET /login: with a code, spend it; else the form (or /live when the
 * browser is signed in already).  HEAD spends nothing. */
static enum MHD_Result login_get(console *h, request *q, struct MHD_Connection *c, int head)
{
	char sid[65];
	const char *code = head ? NULL : tgc_param_get(&q->r.query, "code");
	tgc_ctx ctx;
	tgc_reply rep;
	if (code && tgc_auth_login_code(h->auth, code, sid))
		return signed_in(c, sid);
	if (!code && q->authed)
		return see_other(c, "/live", NULL);
	memset(&rep, 0, sizeof rep);
	ctx_of(h, NULL, &ctx);
	tgc_page_login(&ctx, code ? "This sign-in link was used already or has expired; paste "
	                            "the access token instead." : NULL, &rep);
	return send_reply(c, &rep, NULL, NULL);
}

/* POST /login token=T. */
static enum MHD_Result login_post(console *h, request *q, struct MHD_Connection *c)
{
	char sid[65];
	const char *token = tgc_param_get(&q->r.form, "token");
	if (token && tgc_auth_login_token(h->auth, token, sid))
		return signed_in(c, sid);
	tgc_ctx ctx;
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	ctx_of(h, NULL, &ctx);
	tgc_page_login(&ctx, "That is not the access token.", &rep);
	return send_reply(c, &rep, NULL, NULL);
}

/* A page, or the action, for a request that passed every check. */
static enum MHD_Result dispatch(console *h, request *q, struct MHD_Connection *c, int head)
{
	tgc_ctx ctx;
	tgc_reply rep;
	const tgc_request *r = &q->r;
	memset(&rep, 0, sizeof rep);
	ctx_of(h, q, &ctx);
	switch (r->route) {
	case TGC_ROOT:      return see_other(c, "/live", NULL);
	case TGC_EVENTS:    return events(h, q, c, head);
	case TGC_LIVE:      tgc_page_live(&ctx, r, &rep); break;
	case TGC_APPROVALS: tgc_page_approvals(&ctx, r, &rep); break;
	case TGC_DECIDE:    tgc_action_decide(&ctx, r, &rep); break;
	case TGC_CALL:      tgc_page_call(&ctx, r, &rep); break;
	case TGC_SPILL:     tgc_page_spill(&ctx, r, &rep); break;
	case TGC_STATS:     tgc_page_stats(&ctx, r, &rep); break;
	case TGC_SESSIONS:  tgc_page_sessions(&ctx, r, &rep); break;
	case TGC_SESSION:   tgc_page_session(&ctx, r, &rep); break;
	default: {
		char a[SHOWN_MAX + 4];
		return refuse(h, q, c, MHD_HTTP_NOT_FOUND, NULL, "There is nothing at \"%s\".",
		              tgi_shown(a, q->target));
	}
	}
	if (rep.body.over) {
		/* never a page cut short and called complete */
		tgi_buf_free(&rep.body);
		free(rep.location);
		memset(&rep, 0, sizeof rep);
		tgc_page_error(&ctx, MHD_HTTP_INTERNAL_SERVER_ERROR,
		               "This page is larger than the console serves; narrow it with the "
		               "filters, or read the ledger with toolgate log.", &rep);
	}
	if (!rep.status)
		rep.status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	return send_reply(c, &rep, NULL, NULL);
}

/* The methods a route takes, for a 405's Allow. */
static const char *allowed(tgc_route route)
{
	if (route == TGC_DECIDE)
		return "POST";
	if (route == TGC_LOGIN || route == TGC_NOT_FOUND)
		return "GET, HEAD, POST";
	return "GET, HEAD";
}

/* Without a session: a page sends the browser to sign in; the stream, a
 * fragment and an action are refused. */
static enum MHD_Result not_signed_in(console *h, request *q, struct MHD_Connection *c)
{
	const tgc_request *r = &q->r;
	const char *frag = tgc_param_get(&r->query, "fragment");
	if (!r->post && r->route != TGC_EVENTS && !(r->route == TGC_APPROVALS && frag && *frag))
		return see_other(c, "/login", NULL);
	return refuse(h, q, c, MHD_HTTP_UNAUTHORIZED, NULL, "Sign in first: open the link "
	              "`toolgate console` printed, or enter its access token at /login.");
}

/* The first call for a request: its headers.  Answers what can be
 * answered before a body, and every GET and HEAD. */
static enum MHD_Result admit(console *h, request *q, struct MHD_Connection *c, const char *method)
{
	char a[SHOWN_MAX + 4], err[256];
	int hok = host_ok(h, header(c, MHD_HTTP_HEADER_HOST));
	if (hok < 0)
		return refuse(h, q, c, MHD_HTTP_BAD_REQUEST, NULL, "The request needs a Host header "
		              "naming this console (%s:%u).", h->host, h->port);
	if (hok == 0)
		return refuse(h, q, c, MHD_HTTP_MISDIRECTED_REQUEST, NULL, "Host \"%s\" is not this "
		              "console; use %s:%u.", tgi_shown(a, header(c, MHD_HTTP_HEADER_HOST)),
		              h->host, h->port);
	q->routed = tgc_route_parse(method, q->target, &q->r, err, sizeof err);
	if (q->routed == -1)
		return refuse(h, q, c, MHD_HTTP_BAD_REQUEST, NULL, "%s.", err);
	if (q->routed == -2)
		return refuse(h, q, c, MHD_HTTP_METHOD_NOT_ALLOWED, allowed(q->r.route),
		              "Method %s is not allowed here.", tgi_shown(a, method));

	q->authed = tgc_auth_session(h->auth, header(c, MHD_HTTP_HEADER_COOKIE), q->csrf);
	int open = q->r.route == TGC_ASSET || q->r.route == TGC_LOGIN;
	if (!open && !q->authed)
		return not_signed_in(h, q, c);
	if (!q->r.post) {
		int head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
		if (q->r.route == TGC_ASSET)
			return asset(c, q->r.arg);
		if (q->r.route == TGC_LOGIN)
			return login_get(h, q, c, head);
		return dispatch(h, q, c, head);
	}

	if (!same_origin(c))
		return refuse(h, q, c, MHD_HTTP_FORBIDDEN, NULL, "This form was not sent from a page "
		              "of this console (its Origin is \"%s\"); nothing was changed.",
		              tgi_shown(a, header(c, "Origin") ? header(c, "Origin") : "none"));
	if (!form_type(header(c, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return refuse(h, q, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, "Send the form as "
		              "application/x-www-form-urlencoded.");
	const char *cl = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > BODY_MAX)
		return refuse(h, q, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "The form is over the limit "
		              "of %u bytes.", BODY_MAX);
	tgi_buf_init(&q->body, BODY_MAX);
	q->reading = 1;
	return MHD_YES;
}

/* A POST whose body has arrived. */
static enum MHD_Result post(console *h, request *q, struct MHD_Connection *c)
{
	char err[256];
	if (q->too_large)
		return refuse(h, q, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "The form is over the limit "
		              "of %u bytes.", BODY_MAX);
	if (tgc_form_parse(q->body.p, q->body.len, &q->r.form, err, sizeof err) < 0)
		return refuse(h, q, c, MHD_HTTP_BAD_REQUEST, NULL, "%s.", err);
	if (q->r.route == TGC_LOGIN)
		return login_post(h, q, c);
	const char *token = header(c, "X-CSRF-Token");
	if (!token)
		token = tgc_param_get(&q->r.form, "csrf");
	if (!tgc_auth_csrf_ok(q->csrf, token))
		return refuse(h, q, c, MHD_HTTP_FORBIDDEN, NULL, "The form's CSRF token is %s; reload "
		              "the page and try again. Nothing was changed.", token ? "wrong" : "missing");
	return dispatch(h, q, c, 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
	console *h = cls;
	request *q = *con_cls;
	(void)url, (void)version;
	if (!q)
		return MHD_NO;                  /* the URI callback made one for every request */
	if (!q->started) {
		q->started = 1;
		if (tgi_flag_get(&h->stopping))
			return MHD_NO;
		return admit(h, q, c, method);
	}
	if (!q->reading) {                  /* answered already: what comes is dropped */
		*size = 0;
		return MHD_YES;
	}
	if (*size) {
		if (!q->too_large && tgi_buf_append(&q->body, data, *size) < 0) {
			q->too_large = 1;           /* answered 413 at the end; keep nothing */
			tgi_buf_free(&q->body);
		}
		if (q->too_large)
			q->dropped += *size;
		*size = 0;
		/* a client that goes on and on past the cap is cut off */
		return q->dropped > BODY_MAX ? MHD_NO : MHD_YES;
	}
	return post(h, q, c);
}

/* Before the headers are read: the target as sent, in a new request. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls, (void)c;
	request *q = tgi_xcalloc(1, sizeof *q);
	q->target = tgi_strdup(uri ? uri : "");
	return q;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	request *q = *con_cls;
	(void)cls, (void)c, (void)toe;
	if (!q)
		return;
	tgc_request_free(&q->r);
	tgi_buf_free(&q->body);
	free(q->target);
	free(q);
	*con_cls = NULL;
}

/* MHD decodes nothing: route.c reads the target as it came. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls, (void)c;
	return strlen(s);
}

/* ---- start and stop ---- */

/*
 * Listen on spec ("HOST:PORT" or "[V6]:PORT"): h->host, h->port, whether
 * it is loopback.  The socket, or -1 with a sentence.
 */
static int listen_on(console *h, const char *spec, int allow_remote, int *v6, char *err,
                     size_t errlen)
{
	char serv[8], a[SHOWN_MAX + 4];
	unsigned port;
	if (tgi_split_authority(spec, strlen(spec), h->host, sizeof h->host, &port) < 0 || !strrchr(spec, ':') ||
	    (spec[0] != '[' && strchr(h->host, ':'))) {
		tgi_snprintf(err, errlen, "\"%s\" is not HOST:PORT (127.0.0.1:8760, [::1]:8760)",
		             tgi_shown(a, spec));
		return -1;
	}
	tgi_snprintf(serv, sizeof serv, "%u", port);
	tgi_listen_opts lo = {.spec = spec, .host = h->host, .serv = serv, .any = allow_remote,
	                      .any_flag = "--allow-remote", .inuse_flag = "--http"};
	tgi_listener l;
	if (tgi_listen(&lo, &l, err, errlen) < 0)
		return -1;
	*v6 = l.v6;
	h->loopback = l.loopback;
	h->wildcard = l.wildcard;
	h->port = l.port;
	return l.fd;
}

/* The access token: the options', else console.token_env's variable, else
 * NULL (a random one).  -1 with a sentence when the variable is named but
 * unusable. */
static int token_of(tg_gate *g, const tg_console_options *o, const char **out, char *err,
                    size_t errlen)
{
	const char *name = g->cfg->console_token_env;
	*out = o->token;
	if (*out || !name)
		return 0;
	const char *v = getenv(name);
	if (!v || !*v) {
		tgi_snprintf(err, errlen, "console.token_env names $%s, which is not set; set it to "
		             "the console's access token, or remove console.token_env for a random one",
		             name);
		return -1;
	}
	if (strlen(v) < TOKEN_MIN) {
		tgi_snprintf(err, errlen, "the console's access token ($%s) is shorter than %d "
		             "characters; use a longer one", name, TOKEN_MIN);
		return -1;
	}
	*out = v;
	return 0;
}

/* Can the ledger be read?  0, or -1 with the store's sentence. */
static int ledger_readable(tg_gate *g, char *err, size_t errlen)
{
	char why[400];
	int64_t seq;
	int rc = tgi_store_last_seq(g->store, &seq, why, sizeof why);
	if (rc < 0)
		tgi_snprintf(err, errlen, "the ledger cannot be read: %s", why);
	return rc;
}

static struct MHD_Daemon *daemon_start(console *h, int fd, int v6)
{
	/* MHD owns fd from here: it closes it when it stops (and when starting
	 * fails once it has taken it) */
	return M->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                           MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0),
	                       0, NULL, NULL, on_request, h,
	                       MHD_OPTION_LISTEN_SOCKET, fd,
	                       MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
	                       MHD_OPTION_CONNECTION_LIMIT, CONNECTIONS_MAX,
	                       MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
	                       MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, h,
	                       MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	                       MHD_OPTION_END);
}

/*
 * The console's own host name on loopback, "tg-<8 hex of sha256(token)>.localhost"
 * (browsers send *.localhost to loopback): a browser keeps cookies per host,
 * not per port, so a session cookie set for 127.0.0.1 would also go to every
 * other server on 127.0.0.1 — one an agent started, say — which could then
 * replay it.  Signed in under this name, the cookie goes nowhere else.  The
 * same token gives the same name, so pages outlive a restart with it.
 */
static void own_name(console *h, const char *token)
{
	unsigned char md[32];
	char hex[65];
	tgi_sha256 s;
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, token, strlen(token));
	tgi_sha256_final(&s, md);
	tgi_hex(md, 4, hex);
	tgi_snprintf(h->name, sizeof h->name, "tg-%s.localhost", hex);
}

/* Tell the caller where to sign in (and the token, unless it was given:
 * a configured secret is not for logs). */
static void announce(console *h, const tg_console_options *o)
{
	if (!o->ready)
		return;
	const char *host = h->host;
	if (h->wildcard)
		host = strchr(h->host, ':') ? "::1" : "127.0.0.1";
	else if (h->loopback)
		host = h->name;
	int v6 = strchr(host, ':') != NULL;
	char url[512];
	tgi_snprintf(url, sizeof url, "http://%s%s%s:%u/login?code=%s", v6 ? "[" : "", host,
	             v6 ? "]" : "", h->port, tgc_auth_code(h->auth));
	o->ready(o->arg, url, h->token_set ? NULL : tgc_auth_token(h->auth));
}

void tg_console_stop(void)
{
	int fd = wake[1];
	if (fd >= 0) {
		ssize_t n = write(fd, "x", 1);
		(void)n;
	}
}

int tg_console(tg_gate *g, const tg_console_options *o, char **errmsg)
{
	char err[512];
	const char *token;
	console h;
	int v6;
	memset(&h, 0, sizeof h);
	h.g = g;
	if (errmsg)
		*errmsg = NULL;
	const char *spec = o->listen ? o->listen
	                 : g->cfg->console_listen ? g->cfg->console_listen : LISTEN_DEFAULT;
	if (token_of(g, o, &token, err, sizeof err) < 0 || ledger_readable(g, err, sizeof err) < 0 ||
	    tgi_mhd_load(err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return tgi_fail(errmsg, "cannot make a pipe: %s", strerror(errno));
	int fd = listen_on(&h, spec, o->allow_remote, &v6, err, sizeof err);
	int rc = -1;
	if (fd < 0)
		goto out;
	h.auth = tgc_auth_new(token);
	h.token_set = token != NULL;
	own_name(&h, tgc_auth_token(h.auth));
	h.d = daemon_start(&h, fd, v6);
	if (!h.d) {
		tgi_snprintf(err, sizeof err, "cannot start the HTTP server on %s", spec);
		goto out;
	}
	announce(&h, o);
	struct pollfd p = {.fd = wake[0], .events = POLLIN};
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	tgi_flag_set(&h.stopping);
	M->stop_daemon(h.d);    /* waits for every connection's thread */
	rc = 0;
out:
	tgc_auth_free(h.auth);
	int r = wake[0], w = wake[1];
	wake[0] = wake[1] = -1;
	close(r);
	close(w);
	return rc < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}
