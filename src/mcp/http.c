/*
 * http.c — MCP's Streamable HTTP transport (spec 2025-11-25, basic/
 * transports) on one endpoint, /mcp, served by libmicrohttpd (loaded by
 * the first start, see dl.h: a gate that serves no HTTP never maps it).
 *
 *   POST   one JSON-RPC message.  initialize without Mcp-Session-Id makes
 *          a session (its id comes back in that header); every other POST
 *          names one.  A request is answered with one application/json
 *          body, except tools/call, answered with an event stream that
 *          carries its progress, log and elicitation messages before the
 *          response.  Notifications and responses: 202, no body.
 *   GET    the session's own event stream (tools/list_changed ...), one at
 *          a time, with a ": keepalive" comment every 15 s.
 *   DELETE ends the session.
 *
 * Every request first passes the checks that keep a web page from driving
 * a local server (DNS rebinding): the Host must name a loopback host (or
 * the bound one, when a non-loopback address was allowed, or one of the
 * allowed origins' hosts), and an Origin, when sent, must be a loopback one
 * or an allowed one.  A bearer token must belong to a principal; a session
 * answers only to the token that opened it, and its calls are that
 * principal's.  Bound to a non-loopback address, only token holders are
 * served; on loopback a session without a token is the default principal's.
 *
 * Sessions end by DELETE, or when idle: no request naming them and no
 * stream of theirs open (so nothing running that the client could still
 * hear) for SESSION_IDLE_MS, looked at whenever a session is made; and
 * when the table is full, the least recently used one idle for
 * EVICT_IDLE_MS makes room.  A request for an ended session gets 404, and
 * the client initializes again.
 *
 * Threads: MHD gives every connection a thread of its own, so a request
 * that waits for its answer, and an event stream between messages, simply
 * block on their stream's condition variable.  Messages come from the
 * session (any thread) through on_send, which routes them by request id
 * to the stream of that request, or, for the session as a whole, to the
 * GET stream.  One mutex (h->mu) guards the session list, the streams and
 * their queues; it is never held while calling into the session, which
 * calls on_send with its own locks held (lock order: server, session,
 * h->mu).
 *
 *   stream life:  made with its request (linked in h->streams)
 *                 -> messages queued by on_send ... final
 *                 -> drained by MHD (event stream) or taken whole (JSON)
 *                 -> released: unlinked and freed
 *   A stream whose peer left, or whose queue overflowed, is `broken`: what
 *   comes for it is dropped (on_send says -1) and the session lives on.
 *   A stream whose session ended is `detached` (hs NULL): it ends after
 *   what it holds.
 *
 * No resumption: a stream stays open until its response went.  An event
 * stream opens with a priming event (an id, the retry delay, empty data:
 * SEP-1699) only for a session that negotiated 2025-11-25 or later, as the
 * official TypeScript, Python and Go SDKs do: clients of earlier revisions
 * parse every event's data as JSON, and an empty one ends their session.
 *
 * Owns: the listening socket, the MHD daemon, the HTTP sessions (each
 * wrapping a tgi_mcp_session) and their streams.  Must not: interpret MCP
 * methods beyond choosing JSON or SSE (server.c answers them), decide who
 * may call what (the gate does; we only refuse tokens nobody holds), or
 * write anything but MCP to a client.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gate/gate.h"
#include "util/dl.h"
#include "util/listen.h"
#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "util/util.h"

#define ENDPOINT        "/mcp"
#define SESSIONS_MAX    256
#define CONNECTIONS_MAX 512
#define IDLE_TIMEOUT_S  60u          /* an idle connection is closed after this */
#define SESSION_IDLE_MS (30 * 60e3)  /* an idle session ends after this */
#define EVICT_IDLE_MS   60e3         /* ... or after this, when a new one needs its place */
#define KEEPALIVE_MS    15000.0      /* an event stream says something this often */
#define WAKE_MS         1000         /* a waiting stream looks at its peer this often */
#define DEFAULT_BODY    (16u << 20)  /* o->max_line 0 */
#define SSE_RETRY_MS 1000     /* the retry: field of every event stream */
#define SSE_BLOCK       (16u << 10)  /* what MHD asks of an event stream at once */
#define QUEUE_MIN       (64u << 20)  /* a stream may hold at least this for a slow reader */
#define TOKEN_MAX       4096
#define SID_MAX         64           /* longest Mcp-Session-Id accepted, with its NUL */
#define SHOWN_MAX       TGI_SHOWN_MAX /* longest echo of a header value in an error */
#define HTTP_RPC_ERROR  (-32000)     /* JSON-RPC code of the transport's refusals */

enum { M_POST, M_GET, M_DELETE };

/* libmicrohttpd's functions: nothing below runs before tgi_mcp_http_start()
 * has loaded them. */
static const tgi_mhd_api *const M = &tgi_mhd;

typedef struct hsession hsession;

/* The way out for one request's messages (POST) or a session's (GET). */
typedef struct stream {
	tgi_mcp_http   *h;
	hsession       *hs;     /* NULL once the session ended (detached) */
	json_t         *id;     /* the request it answers (owned copy); NULL: the GET stream */
	int             sse;    /* an event stream; else one JSON body, the final message */
	int             fd;     /* the connection's socket, to notice a peer that left */
	tgi_buf         out;    /* SSE: bytes queued; JSON: the final message */
	size_t          off;    /* SSE: bytes of out already handed to MHD */
	int             final;  /* the last message about the request came */
	int             broken; /* the peer left or the queue overflowed: drop what comes */
	double          last_ms;/* when bytes last went out (keepalives) */
	pthread_cond_t  cv;     /* something for the stream, or the end */
	struct stream  *next;   /* h->streams */
} stream;

/* One Mcp-Session-Id. */
struct hsession {
	tgi_mcp_http    *h;
	tgi_mcp_session *ss;
	char             id[SID_MAX];
	char            *token;  /* the bearer token that opened it (owned), or NULL */
	stream          *get;    /* the open GET stream, or NULL */
	int              users;  /* requests inside tgi_mcp_session_handle right now */
	int              nstreams; /* its streams not yet released (POST and GET) */
	double           last_ms;  /* its last request, or the end of its last stream */
	hsession        *next;   /* h->sessions (once initialized) */
};

struct tgi_mcp_http {
	tgi_mcp_server     *srv;
	tg_gate            *g;
	struct MHD_Daemon  *d;
	size_t              max_body;   /* a POST body over it: 413 */
	size_t              max_queue;  /* bytes one stream may hold: 4 bodies, QUEUE_MIN at least */
	int                 any;        /* a non-loopback address was allowed */
	int                 network;    /* bound to a non-loopback address: tokens only */
	char                host[256];  /* the host bound, as written (no brackets) */
	const char *const  *origins;    /* borrowed from the options */
	size_t              norigins;

	pthread_mutex_t     mu;         /* everything below, and every stream and hsession */
	pthread_cond_t      idle;       /* a session's users fell to 0 */
	hsession           *sessions;
	size_t              nsessions;
	stream             *streams;
	unsigned long       event_seq;  /* the last SSE event id given out */
	int                 stopping;
};

/* What the transport remembers of one HTTP request between MHD's calls. */
typedef struct request {
	int     method;
	int     has_sid;          /* an Mcp-Session-Id header came */
	char    sid[SID_MAX];     /* ... its value ("" when unusable: no session has it) */
	char   *token;            /* the bearer token presented (owned), or NULL */
	const tgi_principal_cfg *who; /* the token's owner (borrowed from the config) */
	tgi_buf body;
	int     too_large;        /* the body went over the cap: dropped, answered 413 */
	size_t  dropped;          /* bytes dropped since */
} request;

/* The stream of the POST being handled on this thread: where the session's
 * reply to a message it could not read goes (related NULL, final). */
static _Thread_local stream *tl_posting;

/* Has the peer on fd closed its side (or the connection failed)? */
static int peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    M->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* ---- replies ---- */

/* Queue a reply; body (may be NULL) is taken and freed with free(). */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len, const char *hname, const char *hval)
{
	struct MHD_Response *res = body
	    ? M->create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
	    : M->create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!res) {
		free(body);
		return MHD_NO;
	}
	if (type)
		M->add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (hname)
		M->add_response_header(res, hname, hval);
	enum MHD_Result rc = M->queue_response(c, status, res);
	M->destroy_response(res);
	return rc;
}

static enum MHD_Result respond_json(struct MHD_Connection *c, unsigned status, json_t *msg)
{
	size_t len;
	char *text = tgi_rpc_dump(msg, &len);
	json_decref(msg);
	return respond(c, status, "application/json", text, len, NULL, NULL);
}

/* Refuse the request: status, and a JSON-RPC error without id saying why
 * (plus one header when hname is not NULL). */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *hname,
                              const char *hval, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *hname,
                              const char *hval, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t len;
	json_t *e = tgi_rpc_error(NULL, HTTP_RPC_ERROR, msg, NULL);
	char *text = tgi_rpc_dump(e, &len);
	json_decref(e);
	return respond(c, status, "application/json", text, len, hname, hval);
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return M->lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* ---- header checks ---- */

/* The host of an origin "scheme://authority[/]" into host; 0 or -1. */
static int origin_host(const char *origin, char *host, size_t cap)
{
	size_t skip;
	if (!strncasecmp(origin, "http://", 7))
		skip = 7;
	else if (!strncasecmp(origin, "https://", 8))
		skip = 8;
	else
		return -1;
	const char *a = origin + skip;
	size_t n = strlen(a);
	if (n && a[n - 1] == '/')
		n--;
	return tgi_split_authority(a, n, host, cap, NULL);
}

/* Is v the origin o, ignoring case and one trailing slash on either? */
static int same_origin(const char *v, const char *o)
{
	size_t nv = strlen(v), no = strlen(o);
	if (nv && v[nv - 1] == '/')
		nv--;
	if (no && o[no - 1] == '/')
		no--;
	return nv == no && !strncasecmp(v, o, nv);
}

static int host_ok(const tgi_mcp_http *h, const char *v)
{
	char host[256], oh[256];
	if (!v || tgi_split_authority(v, strlen(v), host, sizeof host, NULL) < 0)
		return 0;
	if (tgi_loopback_name(host) || (h->any && !strcasecmp(host, h->host)))
		return 1;
	for (size_t i = 0; i < h->norigins; i++)
		if (origin_host(h->origins[i], oh, sizeof oh) == 0 && !strcasecmp(host, oh))
			return 1;
	return 0;
}

static int origin_ok(const tgi_mcp_http *h, const char *v)
{
	char host[256];
	for (size_t i = 0; i < h->norigins; i++)
		if (same_origin(v, h->origins[i]))
			return 1;
	return origin_host(v, host, sizeof host) == 0 && tgi_loopback_name(host);
}

/* Does the Accept value list the media type `type` (parameters aside)? */
static int accepts(const char *v, const char *type)
{
	size_t tl = strlen(type);
	while (v && *v) {
		v += strspn(v, " \t,");
		size_t n = strcspn(v, ",;");
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (n == tl && !strncasecmp(v, type, tl))
			return 1;
		v += strcspn(v, ",");
	}
	return 0;
}

/* Is the Content-Type application/json (parameters aside)? */
static int is_json_type(const char *v)
{
	return v && tgi_media_type_is(v, "application/json");
}

/* The token of "Bearer TOKEN" (owned, into *out); 0, or -1 when v is not one. */
static int bearer_token(const char *v, char **out)
{
	v += strspn(v, " \t");
	if (strncasecmp(v, "Bearer", 6) || (v[6] != ' ' && v[6] != '\t'))
		return -1;
	v += 6;
	v += strspn(v, " \t");
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n == 0 || n > TOKEN_MAX)
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f)
			return -1;
	*out = tgi_strndup(v, n);
	return 0;
}

/* Equal tokens (both absent, or the same bytes), compared in constant time. */
static int same_token(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	size_t na = strlen(a), nb = strlen(b);
	unsigned char d = na != nb;
	for (size_t i = 0; i < na; i++)
		d |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
	return d == 0;
}

/* ---- streams (h->mu held unless said otherwise) ---- */

static stream *stream_new(tgi_mcp_http *h, hsession *hs, const json_t *id, int sse, int fd)
{
	stream *s = tgi_xcalloc(1, sizeof *s);
	s->h = h;
	s->hs = hs;
	if (hs)
		hs->nstreams++;
	s->id = id ? json_deep_copy(id) : NULL;
	s->sse = sse;
	s->fd = fd;
	tgi_buf_init(&s->out, h->max_queue);
	/* an event stream opens with a priming event (an id, no data) and the
	 * reconnection delay a client should use (SEP-1699), for a session whose
	 * revision has it */
	if (sse && hs && tgi_mcp_version_primes(tgi_mcp_session_version(hs->ss)))
		tgi_buf_printf(&s->out, "id: %lu\nretry: %d\ndata: \n\n", ++h->event_seq,
		               SSE_RETRY_MS);
	s->last_ms = tgi_now_ms();
	tgi_cond_init(&s->cv);
	s->next = h->streams;
	h->streams = s;
	return s;
}

/* Unlink and free s; takes h->mu itself.  (MHD's free callback of an
 * event stream's response, and the end of a JSON reply.) */
static void stream_release(void *arg)
{
	stream *s = arg;
	tgi_mcp_http *h = s->h;
	pthread_mutex_lock(&h->mu);
	for (stream **p = &h->streams; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	if (s->hs) {
		if (s->hs->get == s)
			s->hs->get = NULL;
		s->hs->nstreams--;
		s->hs->last_ms = tgi_now_ms();
	}
	pthread_mutex_unlock(&h->mu);
	json_decref(s->id);
	tgi_buf_free(&s->out);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/* The open stream of hs's request id, or NULL. */
static stream *stream_of(tgi_mcp_http *h, const hsession *hs, const json_t *id)
{
	for (stream *s = h->streams; s; s = s->next)
		if (s->hs == hs && s->id && !s->final && tgi_rpc_id_equal(s->id, id))
			return s;
	return NULL;
}

/* Append one message as an SSE event (a line break in text, which compact
 * JSON never has, starts another data line).  0, or -1 with out unchanged. */
static int sse_append(tgi_buf *b, const char *text, size_t len)
{
	size_t mark = b->len, from = 0;
	int rc = tgi_buf_puts(b, "event: message\ndata: ");
	for (size_t i = 0; rc == 0 && i < len; i++)
		if (text[i] == '\n' || text[i] == '\r') {
			rc = tgi_buf_append(b, text + from, i - from) | tgi_buf_puts(b, "\ndata: ");
			from = i + 1;
		}
	if (rc == 0)
		rc = tgi_buf_append(b, text + from, len - from) | tgi_buf_puts(b, "\n\n");
	if (rc != 0 && b->p) {
		b->len = mark;
		b->p[mark] = '\0';
	}
	return rc ? -1 : 0;
}

/* Queue one message (text may be NULL: the request ends without one). */
static int stream_put(stream *s, int final, const char *text, size_t len)
{
	if (s->broken)
		return -1;
	int rc = 0;
	if (text && s->sse) {
		rc = sse_append(&s->out, text, len);
	} else if (text && final) {
		s->out.len = 0;                 /* a JSON reply is the final message alone */
		rc = tgi_buf_append(&s->out, text, len);
	}                                   /* a JSON reply drops what comes before it */
	if (rc < 0) {
		s->broken = 1;
		fprintf(stderr, "toolgate: http: session \"%s\": a reply went over the %zu-byte "
		        "limit of one stream; the stream was dropped\n",
		        s->hs ? s->hs->id : "", s->h->max_queue);
	}
	if (final)
		s->final = 1;
	pthread_cond_signal(&s->cv);
	return rc;
}

/* Wait until s has its final message, broke, lost its session or the
 * server stops.  Returns with h->mu held as on entry. */
static void stream_wait_final(tgi_mcp_http *h, stream *s)
{
	while (!s->final && !s->broken && s->hs && !h->stopping) {
		tgi_cond_wait_ms(&s->cv, &h->mu, WAKE_MS);
		if (!s->final && peer_gone(s->fd))
			s->broken = 1;
	}
}

/* MHD's content reader of an event stream: blocks (its own thread) until
 * bytes, the end, or a keepalive is due. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	stream *s = cls;
	tgi_mcp_http *h = s->h;
	ssize_t n;
	(void)pos;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		if (h->stopping || s->broken) {
			n = MHD_CONTENT_READER_END_WITH_ERROR;
			break;
		}
		if (s->off < s->out.len) {
			size_t k = s->out.len - s->off < max ? s->out.len - s->off : max;
			memcpy(buf, s->out.p + s->off, k);
			s->off += k;
			if (s->off == s->out.len)
				s->off = s->out.len = 0;
			else if (s->off > (1u << 20) && s->off > s->out.len / 2) {
				memmove(s->out.p, s->out.p + s->off, s->out.len - s->off);
				s->out.len -= s->off;
				s->off = 0;
			}
			s->last_ms = tgi_now_ms();
			n = (ssize_t)k;
			break;
		}
		if (s->final || !s->hs) {
			n = MHD_CONTENT_READER_END_OF_STREAM;
			break;
		}
		double idle = tgi_now_ms() - s->last_ms;
		if (idle >= KEEPALIVE_MS) {
			if (tgi_buf_puts(&s->out, ": keepalive\n\n") < 0)
				s->broken = 1;
			continue;
		}
		long left = (long)(KEEPALIVE_MS - idle) + 1;
		tgi_cond_wait_ms(&s->cv, &h->mu, left < WAKE_MS ? left : WAKE_MS);
		if (s->off == s->out.len && peer_gone(s->fd))
			s->broken = 1;
	}
	pthread_mutex_unlock(&h->mu);
	return n;
}

/* Reply with s as an event stream; the response owns s from here. */
static enum MHD_Result respond_stream(struct MHD_Connection *c, stream *s)
{
	struct MHD_Response *res = M->create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK,
	                                                            stream_read, s, stream_release);
	if (!res) {
		stream_release(s);
		return MHD_NO;
	}
	M->add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	M->add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result rc = M->queue_response(c, MHD_HTTP_OK, res);
	M->destroy_response(res);
	return rc;
}

/* ---- sessions ---- */

/* What the session writes (any thread, the session's locks held). */
static int on_send(void *arg, const json_t *related, int final, const char *text, size_t len)
{
	hsession *hs = arg;
	tgi_mcp_http *h = hs->h;
	pthread_mutex_lock(&h->mu);
	stream *s;
	if (related)
		s = stream_of(h, hs, related);
	else if (final && tl_posting && tl_posting->hs == hs)
		s = tl_posting;                 /* the reply to a message it could not read */
	else
		s = hs->get;
	int rc = s ? stream_put(s, final, text, len) : -1;
	pthread_mutex_unlock(&h->mu);
	return rc;
}

static int session_handle(hsession *hs, stream *s, const tgi_buf *body)
{
	tl_posting = s;
	int kind = tgi_mcp_session_handle(hs->ss, body->p ? body->p : "", body->len);
	tl_posting = NULL;
	return kind;
}

/* End hs: free its session (its running calls are cancelled and answered),
 * then let its streams end.  hs must be out of h->sessions and unused;
 * h->mu not held. */
static void session_close(tgi_mcp_http *h, hsession *hs)
{
	tgi_mcp_session_free(hs->ss);
	pthread_mutex_lock(&h->mu);
	for (stream *s = h->streams; s; s = s->next)
		if (s->hs == hs) {
			s->hs = NULL;
			pthread_cond_signal(&s->cv);
		}
	hs->get = NULL;
	pthread_mutex_unlock(&h->mu);
	free(hs->token);
	free(hs);
}

/* The session r names (h->mu held), or NULL with the HTTP status that
 * says why: 400 none named, 404 unknown, 403 another token's. */
static hsession *session_find(tgi_mcp_http *h, const request *r, unsigned *status)
{
	if (!r->has_sid) {
		*status = MHD_HTTP_BAD_REQUEST;
		return NULL;
	}
	hsession *hs = h->sessions;
	while (hs && (!r->sid[0] || strcmp(hs->id, r->sid)))
		hs = hs->next;
	if (!hs) {
		*status = MHD_HTTP_NOT_FOUND;
		return NULL;
	}
	if (!same_token(hs->token, r->token)) {
		*status = MHD_HTTP_FORBIDDEN;
		return NULL;
	}
	hs->last_ms = tgi_now_ms();
	return hs;
}

static enum MHD_Result session_refused(struct MHD_Connection *c, const request *r,
                                       unsigned status)
{
	char sid[SHOWN_MAX + 4];
	if (status == MHD_HTTP_BAD_REQUEST)
		return refuse(c, status, NULL, NULL, "the \"Mcp-Session-Id\" header is missing; "
		              "start a session with \"initialize\"");
	if (status == MHD_HTTP_NOT_FOUND)
		return refuse(c, status, NULL, NULL, "session \"%s\" is not known (it ended, or "
		              "never was); start a new one with \"initialize\"",
		              tgi_shown(sid, r->sid));
	return refuse(c, status, NULL, NULL, "session \"%s\" belongs to another bearer token",
	              tgi_shown(sid, r->sid));
}

/* Take hs out of h->sessions (h->mu held); it must be there. */
static void session_unlink(tgi_mcp_http *h, hsession *hs)
{
	hsession **p = &h->sessions;
	while (*p != hs)
		p = &(*p)->next;
	*p = hs->next;
	h->nsessions--;
}

/* Has hs been idle (h->mu held) for ms at least: no request inside it, no
 * stream of its open (no call whose answer the client could still hear)? */
static int session_idle(const hsession *hs, double now, double ms)
{
	return hs->users == 0 && hs->nstreams == 0 && now - hs->last_ms >= ms;
}

/*
 * Unlink (h->mu held) the sessions idle for SESSION_IDLE_MS and, when the
 * table is still full, the least recently used one idle for EVICT_IDLE_MS.
 * Returns them chained by next, for session_close once h->mu is released.
 */
static hsession *sessions_reap(tgi_mcp_http *h)
{
	double now = tgi_now_ms();
	hsession *gone = NULL, *lru = NULL;
	for (hsession **p = &h->sessions; *p;) {
		hsession *hs = *p;
		if (!session_idle(hs, now, SESSION_IDLE_MS)) {
			p = &hs->next;
			continue;
		}
		*p = hs->next;
		h->nsessions--;
		hs->next = gone;
		gone = hs;
	}
	if (h->nsessions < SESSIONS_MAX)
		return gone;
	for (hsession *hs = h->sessions; hs; hs = hs->next)
		if (session_idle(hs, now, EVICT_IDLE_MS) && (!lru || hs->last_ms < lru->last_ms))
			lru = hs;
	if (lru) {
		session_unlink(h, lru);
		lru->next = gone;
		gone = lru;
	}
	return gone;
}

/*
 * Make room for one more session (ending the idle ones sessions_reap
 * gives) and, when hs is not NULL, add it to h->sessions (which owns it
 * from then on).  1 when there was room, 0 when the table is full (hs is
 * still the caller's).  h->mu not held.
 */
static int session_add(tgi_mcp_http *h, hsession *hs)
{
	pthread_mutex_lock(&h->mu);
	hsession *gone = sessions_reap(h);
	int room = h->nsessions < SESSIONS_MAX;
	if (room && hs) {
		hs->last_ms = tgi_now_ms();
		hs->next = h->sessions;
		h->sessions = hs;
		h->nsessions++;
	}
	double now = tgi_now_ms();
	for (hsession *e = gone; e; e = e->next)
		fprintf(stderr, "toolgate: http: session \"%s\" ended after %.0f s idle\n", e->id,
		        (now - e->last_ms) / 1e3);
	pthread_mutex_unlock(&h->mu);
	while (gone) {
		hsession *next = gone->next;
		session_close(h, gone);
		gone = next;
	}
	return room;
}

/* ---- the methods ---- */

/*
 * The JSON reply of s: wait for its final message (awaited: a response will
 * come; else what was sent is all), then release s.  1 with *body (caller frees;
 * NULL when the request ended without a message), or 0 when no reply can
 * be given (the peer left, the session ended, the server stops).
 */
static int take_reply(tgi_mcp_http *h, stream *s, int awaited, char **body, size_t *len)
{
	pthread_mutex_lock(&h->mu);
	if (!awaited)
		s->final = 1;
	stream_wait_final(h, s);
	int ok = s->final && !s->broken;
	*len = s->out.len;
	*body = ok && *len ? tgi_buf_steal(&s->out) : NULL;
	pthread_mutex_unlock(&h->mu);
	stream_release(s);
	return ok;
}

/* Answer with what take_reply gave; sid: an Mcp-Session-Id to announce. */
static enum MHD_Result respond_reply(struct MHD_Connection *c, int ok, char *body, size_t len,
                                     const char *sid)
{
	if (!ok)
		return MHD_NO;                  /* nobody to answer: close */
	if (!body)
		return respond(c, MHD_HTTP_ACCEPTED, NULL, NULL, 0, NULL, NULL);
	return respond(c, MHD_HTTP_OK, "application/json", body, len, sid ? "Mcp-Session-Id" : NULL,
	               sid);
}

static enum MHD_Result too_many_sessions(struct MHD_Connection *c)
{
	return refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
	              "too many sessions (%d); end one with DELETE first", SESSIONS_MAX);
}

/* POST initialize without a session: a new session, kept if it initialized. */
static enum MHD_Result post_initialize(tgi_mcp_http *h, struct MHD_Connection *c,
                                       const request *r, const tgi_rpc_msg *m)
{
	if (!session_add(h, NULL))
		return too_many_sessions(c);

	hsession *hs = tgi_xcalloc(1, sizeof *hs);
	hs->h = h;
	hs->token = tgi_strdup(r->token);
	/* who calls is the token's owner, named explicitly, or without a token the
	 * default principal: never whoever the serving process is
	 * ($TOOLGATE_PRINCIPAL, $TOOLGATE_TOKEN) */
	if (hs->token)
		hs->ss = tgi_mcp_session_new(h->srv, r->who->name, hs->token, on_send, hs);
	else
		hs->ss = tgi_mcp_session_new(h->srv, h->g->cfg->default_principal, "", on_send, hs);
	char sid[SID_MAX];
	tgi_snprintf(sid, sizeof sid, "%s", tgi_mcp_session_id(hs->ss));
	memcpy(hs->id, sid, sizeof sid);
	pthread_mutex_lock(&h->mu);
	stream *s = stream_new(h, hs, m->id, 0, conn_fd(c));
	pthread_mutex_unlock(&h->mu);

	int kind = session_handle(hs, s, &r->body);
	char *body;
	size_t len;
	int ok = take_reply(h, s, kind == TGI_RPC_REQUEST, &body, &len);
	int keep = ok && tgi_mcp_session_version(hs->ss)[0] != '\0';
	int full = keep && !session_add(h, hs);
	if (!keep || full)
		session_close(h, hs);           /* hs is gone from here */
	if (full) {
		free(body);
		return too_many_sessions(c);
	}
	return respond_reply(c, ok, body, len, keep ? sid : NULL);
}

/* POST: the body has arrived. */
static enum MHD_Result post_message(tgi_mcp_http *h, struct MHD_Connection *c, request *r)
{
	if (r->too_large)
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
		              "the message is over the limit of %zu bytes (toolgate serve --max-line)",
		              h->max_body);
	tgi_rpc_msg m;
	json_t *bad = NULL;
	tgi_rpc_parse(r->body.p ? r->body.p : "", r->body.len, &m, &bad);
	if (m.kind == TGI_RPC_BAD) {
		tgi_rpc_msg_free(&m);
		return respond_json(c, MHD_HTTP_BAD_REQUEST, bad);
	}
	enum MHD_Result rc;
	int request_msg = m.kind == TGI_RPC_REQUEST;
	if (!r->has_sid) {
		if (request_msg && !strcmp(m.method, "initialize"))
			rc = post_initialize(h, c, r, &m);
		else
			rc = session_refused(c, r, MHD_HTTP_BAD_REQUEST);
		tgi_rpc_msg_free(&m);
		return rc;
	}

	unsigned status;
	pthread_mutex_lock(&h->mu);
	hsession *hs = session_find(h, r, &status);
	if (hs && request_msg && stream_of(h, hs, m.id)) {
		pthread_mutex_unlock(&h->mu);
		rc = respond_json(c, MHD_HTTP_BAD_REQUEST,
		                  tgi_rpc_error(m.id, TGI_RPC_INVALID_REQUEST,
		                                "this request id is still in use by an earlier request "
		                                "of the session; use a new id", NULL));
		tgi_rpc_msg_free(&m);
		return rc;
	}
	stream *s = NULL;
	if (hs) {
		hs->users++;
		if (request_msg)
			s = stream_new(h, hs, m.id, !strcmp(m.method, "tools/call"), conn_fd(c));
	}
	pthread_mutex_unlock(&h->mu);
	tgi_rpc_msg_free(&m);
	if (!hs)
		return session_refused(c, r, status);

	int kind = session_handle(hs, s, &r->body);
	pthread_mutex_lock(&h->mu);
	if (--hs->users == 0)
		pthread_cond_broadcast(&h->idle);
	/* an event stream unless nothing at all is coming */
	int streamed = s && s->sse && (kind == TGI_RPC_REQUEST || s->out.len);
	if (streamed && kind != TGI_RPC_REQUEST)
		s->final = 1;
	pthread_mutex_unlock(&h->mu);

	if (!s)
		return respond(c, MHD_HTTP_ACCEPTED, NULL, NULL, 0, NULL, NULL);
	if (streamed)
		return respond_stream(c, s);
	char *body;
	size_t len;
	int ok = take_reply(h, s, kind == TGI_RPC_REQUEST, &body, &len);
	return respond_reply(c, ok, body, len, NULL);
}

/* GET: the session's own event stream. */
static enum MHD_Result open_stream(tgi_mcp_http *h, struct MHD_Connection *c, const request *r)
{
	unsigned status;
	char sid[SHOWN_MAX + 4];
	pthread_mutex_lock(&h->mu);
	hsession *hs = session_find(h, r, &status);
	if (!hs) {
		pthread_mutex_unlock(&h->mu);
		return session_refused(c, r, status);
	}
	if (hs->get) {
		pthread_mutex_unlock(&h->mu);
		return refuse(c, MHD_HTTP_CONFLICT, NULL, NULL, "session \"%s\" already has an open "
		              "event stream; use that one", tgi_shown(sid, r->sid));
	}
	stream *s = stream_new(h, hs, NULL, 1, conn_fd(c));
	hs->get = s;
	pthread_mutex_unlock(&h->mu);
	return respond_stream(c, s);
}

/* DELETE: end the session. */
static enum MHD_Result end_session(tgi_mcp_http *h, struct MHD_Connection *c, const request *r)
{
	unsigned status;
	pthread_mutex_lock(&h->mu);
	hsession *hs = session_find(h, r, &status);
	if (!hs) {
		pthread_mutex_unlock(&h->mu);
		return session_refused(c, r, status);
	}
	session_unlink(h, hs);
	while (hs->users)
		pthread_cond_wait(&h->idle, &h->mu);
	pthread_mutex_unlock(&h->mu);
	session_close(h, hs);
	return respond(c, MHD_HTTP_OK, NULL, NULL, 0, NULL, NULL);
}

/* The first call for a request: its headers.  Refuses what must be refused
 * before any body is read; answers GET and DELETE. */
static enum MHD_Result admit(tgi_mcp_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, request *r)
{
	char a[SHOWN_MAX + 4];
	const char *v;
	if (strcmp(url, ENDPOINT))
		return refuse(c, MHD_HTTP_NOT_FOUND, NULL, NULL,
		              "there is nothing at \"%s\"; the MCP endpoint is \"" ENDPOINT "\"",
		              tgi_shown(a, url));
	v = header(c, MHD_HTTP_HEADER_HOST);
	if (!v)
		return refuse(c, MHD_HTTP_FORBIDDEN, NULL, NULL, "a \"Host\" header is needed");
	if (!host_ok(h, v))
		return refuse(c, MHD_HTTP_FORBIDDEN, NULL, NULL,
		              "host \"%s\" is not allowed; use localhost", tgi_shown(a, v));
	v = header(c, "Origin");
	if (v && !origin_ok(h, v))
		return refuse(c, MHD_HTTP_FORBIDDEN, NULL, NULL, "origin \"%s\" is not allowed",
		              tgi_shown(a, v));
	if (!strcmp(method, MHD_HTTP_METHOD_POST))
		r->method = M_POST;
	else if (!strcmp(method, MHD_HTTP_METHOD_GET))
		r->method = M_GET;
	else if (!strcmp(method, MHD_HTTP_METHOD_DELETE))
		r->method = M_DELETE;
	else
		return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE",
		              "method \"%s\" is not allowed here; use POST, GET or DELETE",
		              tgi_shown(a, method));
	v = header(c, "MCP-Protocol-Version");
	if (v && !tgi_mcp_version_known(v))
		return refuse(c, MHD_HTTP_BAD_REQUEST, NULL, NULL, "protocol version \"%s\" is not "
		              "supported; use %s", tgi_shown(a, v), tgi_mcp_versions[0]);
	v = header(c, MHD_HTTP_HEADER_AUTHORIZATION);
	if (v && bearer_token(v, &r->token) < 0)
		return refuse(c, MHD_HTTP_UNAUTHORIZED, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer",
		              "the \"Authorization\" header must be \"Bearer\" and a token");
	if (r->token && !(r->who = tgi_principal_of(h->g, NULL, r->token)))
		return refuse(c, MHD_HTTP_UNAUTHORIZED, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		              "Bearer error=\"invalid_token\"", "the bearer token is not known");
	if (!r->token && h->network)
		return refuse(c, MHD_HTTP_UNAUTHORIZED, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer",
		              "a bearer token is needed: on a network address only token holders "
		              "are served");
	v = header(c, "Mcp-Session-Id");
	if (v) {
		size_t n = strlen(v);
		r->has_sid = 1;
		if (n < sizeof r->sid && strspn(v, "0123456789abcdefABCDEF-") == n)
			memcpy(r->sid, v, n + 1);
	}

	if (r->method == M_GET) {
		if (!accepts(header(c, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
			return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
			              "GET, POST, DELETE", "GET opens an event stream; its \"Accept\" "
			              "header must list \"text/event-stream\"");
		return open_stream(h, c, r);
	}
	if (r->method == M_DELETE)
		return end_session(h, c, r);

	v = header(c, MHD_HTTP_HEADER_ACCEPT);
	if (!accepts(v, "application/json") || !accepts(v, "text/event-stream"))
		return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, NULL, NULL, "the \"Accept\" header must list "
		              "both \"application/json\" and \"text/event-stream\"");
	v = header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!is_json_type(v))
		return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, NULL,
		              "content type \"%s\" is not accepted; send \"application/json\"",
		              v ? tgi_shown(a, v) : "");
	v = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (v && strtoull(v, NULL, 10) > h->max_body)
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
		              "the message is over the limit of %zu bytes (toolgate serve --max-line)",
		              h->max_body);
	if (r->has_sid) {
		unsigned status;
		pthread_mutex_lock(&h->mu);
		int found = session_find(h, r, &status) != NULL;
		pthread_mutex_unlock(&h->mu);
		if (!found)
			return session_refused(c, r, status);
	}
	tgi_buf_init(&r->body, h->max_body);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
	tgi_mcp_http *h = cls;
	request *r = *con_cls;
	(void)version;
	if (!r) {
		pthread_mutex_lock(&h->mu);
		int stopping = h->stopping;
		pthread_mutex_unlock(&h->mu);
		if (stopping)
			return MHD_NO;
		r = tgi_xcalloc(1, sizeof *r);
		*con_cls = r;
		return admit(h, c, url, method, r);
	}
	if (*size) {
		if (!r->too_large && tgi_buf_append(&r->body, data, *size) < 0) {
			r->too_large = 1;           /* answered 413 at the end; keep nothing */
			tgi_buf_free(&r->body);
		}
		if (r->too_large)
			r->dropped += *size;
		*size = 0;
		/* a client that goes on and on past the cap is cut off */
		return r->dropped > h->max_body ? MHD_NO : MHD_YES;
	}
	return post_message(h, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	request *r = *con_cls;
	(void)cls, (void)c, (void)toe;
	if (!r)
		return;
	tgi_buf_free(&r->body);
	free(r->token);
	free(r);
	*con_cls = NULL;
}

/* ---- start and stop ---- */

/*
 * Listen on spec ("HOST:PORT" or "[V6]:PORT"): the host into h->host, the
 * port bound into *port.  Returns the socket, or -1 with a sentence in err.
 */
static int listen_on(tgi_mcp_http *h, const char *spec, unsigned *port, int *v6, char *err,
                     size_t errlen)
{
	char serv[8], a[SHOWN_MAX + 4];
	const char *colon = strrchr(spec, ':');
	const char *host = spec;
	size_t hl = colon ? (size_t)(colon - spec) : 0;
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	size_t pl = colon ? strlen(colon + 1) : 0;
	int bracketed = host != spec;
	if (!colon || hl == 0 || hl >= sizeof h->host || (!bracketed && memchr(host, ':', hl)) ||
	    (spec[0] == '[') != bracketed || pl == 0 || pl > 5 ||
	    strspn(colon + 1, "0123456789") != pl || atoi(colon + 1) > 65535) {
		if (colon && !bracketed && memchr(host, ':', hl))
			tgi_snprintf(err, errlen, "\"%s\" is not HOST:PORT; write an IPv6 address in "
			             "brackets: [::1]:8080", tgi_shown(a, spec));
		else
			tgi_snprintf(err, errlen, "\"%s\" is not HOST:PORT (127.0.0.1:8080, [::1]:8080)",
			             tgi_shown(a, spec));
		return -1;
	}
	memcpy(h->host, host, hl);
	h->host[hl] = '\0';
	tgi_snprintf(serv, sizeof serv, "%s", colon + 1);

	tgi_listen_opts lo = {.spec = spec, .host = h->host, .serv = serv, .any = h->any,
	                      .any_flag = "--http-any"};
	tgi_listener l;
	if (tgi_listen(&lo, &l, err, errlen) < 0)
		return -1;
	*v6 = l.v6;
	h->network = !l.loopback;
	*port = l.port;
	return l.fd;
}

int tgi_mcp_http_start(tgi_mcp_server *s, const tg_serve_options *o, tgi_mcp_http **out,
                       char *err, size_t errlen)
{
	*out = NULL;
	if (!o->http) {
		tgi_snprintf(err, errlen, "no HTTP address was given");
		return -1;
	}
	if (tgi_mhd_load(err, errlen) < 0)
		return -1;
	tgi_mcp_http *h = tgi_xcalloc(1, sizeof *h);
	h->srv = s;
	h->g = tgi_mcp_server_gate(s);
	h->any = o->http_any;
	h->origins = o->origins;
	h->norigins = o->origins ? o->norigins : 0;
	h->max_body = o->max_line ? o->max_line : DEFAULT_BODY;
	h->max_queue = h->max_body > SIZE_MAX / 4 ? SIZE_MAX : h->max_body * 4;
	if (h->max_queue < QUEUE_MIN)
		h->max_queue = QUEUE_MIN;
	unsigned port;
	int v6;
	int fd = listen_on(h, o->http, &port, &v6, err, errlen);
	if (fd < 0) {
		free(h);
		return -1;
	}
	pthread_mutex_init(&h->mu, NULL);
	tgi_cond_init(&h->idle);
	/* MHD owns fd from here: it closes it when it stops (and when starting
	 * fails once it has taken it). */
	h->d = M->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                           MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0),
	                       0, NULL, NULL, on_request, h,
	                       MHD_OPTION_LISTEN_SOCKET, fd,
	                       MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
	                       MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS_MAX,
	                       MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	                       MHD_OPTION_END);
	if (!h->d) {
		tgi_snprintf(err, errlen, "cannot start the HTTP server on %s", o->http);
		pthread_cond_destroy(&h->idle);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return -1;
	}
	int bracket = strchr(h->host, ':') != NULL;
	fprintf(stderr, "toolgate: serving MCP on http://%s%s%s:%u" ENDPOINT "\n", bracket ? "[" : "",
	        h->host, bracket ? "]" : "", port);
	fflush(stderr);
	*out = h;
	return 0;
}

void tgi_mcp_http_stop(tgi_mcp_http *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	for (stream *s = h->streams; s; s = s->next)
		pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&h->mu);
	M->stop_daemon(h->d);    /* waits for every connection's thread: no request is left */
	while (h->sessions) {
		hsession *hs = h->sessions;
		h->sessions = hs->next;
		session_close(h, hs);
	}
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
