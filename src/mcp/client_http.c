/*
 * client_http.c — the MCP client's Streamable HTTP transport
 * (client_int.h).
 *
 * Each message is a POST on the calling thread (libcurl, loaded by the
 * first HTTP open, see dl.h; a multi handle driven in steps of at most
 * POLL_MS so that cancel, the deadline and close() are seen).  A JSON reply
 * is one message; an SSE reply is cut at blank lines as it arrives and each
 * event is dispatched.  After initialize, a listener thread holds a GET SSE
 * stream for the server's own messages (405: none).  Handles are pooled, so
 * connections are reused.
 *
 * Owns: the HTTP session (Mcp-Session-Id), the pooled handles, the
 * listener thread.  Must not: know the protocol beyond a message per POST
 * or SSE event (client.c does).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/dl.h"
#include "mcp/client_int.h"
#include "util/sse.h"
#include "util/util.h"

#define DELETE_TIMEOUT_MS      2000
#define SSE_SLACK              ((size_t)64 << 10) /* SSE framing around one message */
#define HTTP_ERROR_BODY_MAX    ((size_t)64 << 10)
#define LISTEN_BACKOFF_MAX_MS  30000
#define LISTEN_SETTLE_MS       1000     /* for the GET stream to open after initialize */

/* A libcurl multi handle with its one easy handle; pooled per client so
 * that the connection cache (it lives in the multi handle) is reused. */
struct http_conn {
	CURLM            *multi;
	CURL             *easy;
	struct http_conn *next;
};

/* As tgi_xmalloc does. */
static void out_of_memory(void)
{
	fputs("toolgate: out of memory\n", stderr);
	abort();
}

/* libcurl's functions: an HTTP client exists only once tgi_mcp_client_open()
 * has loaded them. */
static const tgi_curl_api *const C = &tgi_curl;

static http_conn *conn_take(tgi_mcp_client *c)
{
	http_conn *hc;

	pthread_mutex_lock(&c->mu);
	hc = c->idle;
	if (hc)
		c->idle = hc->next;
	pthread_mutex_unlock(&c->mu);
	if (hc)
		return hc;
	hc = tgi_xcalloc(1, sizeof *hc);
	hc->multi = C->multi_init();
	hc->easy = C->easy_init();
	if (!hc->multi || !hc->easy)
		out_of_memory();
	return hc;
}

static void conn_give(tgi_mcp_client *c, http_conn *hc)
{
	pthread_mutex_lock(&c->mu);
	hc->next = c->idle;
	c->idle = hc;
	pthread_mutex_unlock(&c->mu);
}

static void conn_free_all(tgi_mcp_client *c)
{
	while (c->idle) {
		http_conn *hc = c->idle;
		c->idle = hc->next;
		C->easy_cleanup(hc->easy);
		C->multi_cleanup(hc->multi);
		free(hc);
	}
}

/* What came back for one HTTP exchange. */
typedef enum { RX_UNKNOWN, RX_JSON, RX_SSE, RX_OTHER } rx_kind;

typedef struct http_rx {
	tgi_mcp_client *c;
	CURL           *easy;
	rx_kind         kind;
	long            status;
	tgi_buf         buf;       /* a JSON body, an error body, or SSE not yet cut */
	tgi_sse_cutter  cutter;    /* SSE: where the complete events end */
	int             overflow;  /* a message went past the cap */
	int             listen;    /* the GET stream: open sets c->listening */
	char           *session;   /* initialize: Mcp-Session-Id goes here */
} http_rx;

static int sse_event(const tgi_sse_event *ev, void *arg)
{
	http_rx *rx = arg;

	if (ev->data_len == 0 || (ev->event[0] && strcmp(ev->event, "message") != 0))
		return 0; /* a priming event, or one that is not a message */
	if (ev->data_len > rx->c->max_message) {
		tgi_mcpc_note(rx->c, "a message over %zu bytes was dropped", rx->c->max_message);
		return 0;
	}
	tgi_mcpc_dispatch(rx->c, ev->data, ev->data_len);
	return 0;
}

/* Deliver the events complete in rx->buf (all of it at the end of the
 * stream) and keep the rest. */
static void sse_drain(http_rx *rx, int at_end)
{
	size_t cut = at_end ? rx->buf.len : tgi_sse_cut(&rx->cutter, rx->buf.p, rx->buf.len);
	char perr[160];
	int truncated = 0;

	if (!cut)
		return;
	if (tgi_sse_parse(rx->buf.p, cut, sse_event, rx, &truncated, perr, sizeof perr) < 0)
		tgi_mcpc_note(rx->c, "an event stream was dropped: %s", perr);
	memmove(rx->buf.p, rx->buf.p + cut, rx->buf.len - cut);
	rx->buf.len -= cut;
	rx->buf.p[rx->buf.len] = '\0';
	rx->cutter.scan -= cut;
	rx->cutter.line -= cut;
}

/* The first bytes of a body: what kind is it? */
static void rx_classify(http_rx *rx)
{
	const char *ctype = NULL;

	C->easy_getinfo(rx->easy, CURLINFO_RESPONSE_CODE, &rx->status);
	C->easy_getinfo(rx->easy, CURLINFO_CONTENT_TYPE, &ctype);
	if (rx->status >= 200 && rx->status < 300 && ctype &&
	    strncasecmp(ctype, "text/event-stream", 17) == 0) {
		rx->kind = RX_SSE;
		tgi_buf_init(&rx->buf, rx->c->max_message + SSE_SLACK);
	} else if (rx->status >= 200 && rx->status < 300 && ctype &&
	           strncasecmp(ctype, "application/json", 16) == 0) {
		rx->kind = RX_JSON;
		tgi_buf_init(&rx->buf, rx->c->max_message);
	} else {
		rx->kind = RX_OTHER;
		tgi_buf_init(&rx->buf, HTTP_ERROR_BODY_MAX);
	}
}

static size_t rx_write(char *data, size_t size, size_t nmemb, void *arg)
{
	http_rx *rx = arg;
	size_t n = size * nmemb;

	if (rx->kind == RX_UNKNOWN)
		rx_classify(rx);
	if (tgi_buf_append(&rx->buf, data, n) < 0) {
		if (rx->kind == RX_OTHER)
			return n; /* an error page: its head is enough */
		rx->overflow = 1;
		return 0; /* stops the transfer */
	}
	if (rx->kind == RX_SSE)
		sse_drain(rx, 0);
	return n;
}

static size_t rx_header(char *data, size_t size, size_t nmemb, void *arg)
{
	http_rx *rx = arg;
	size_t n = size * nmemb;
	static const char name[] = "mcp-session-id:";

	if (rx->session && n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
		const char *v = data + sizeof name - 1, *end = data + n;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			end--;
		/* visible ASCII only (0x21-0x7E), as the transport requires */
		size_t len = (size_t)(end - v);
		int ok = len > 0 && len < SESSION_ID_MAX;
		for (size_t i = 0; ok && i < len; i++)
			ok = v[i] >= 0x21 && v[i] <= 0x7e;
		if (ok) {
			pthread_mutex_lock(&rx->c->mu);
			memcpy(rx->session, v, len);
			rx->session[len] = '\0';
			pthread_mutex_unlock(&rx->c->mu);
		}
	}
	if (rx->listen && n <= 2 && (data[0] == '\r' || data[0] == '\n')) {
		long status = 0;
		C->easy_getinfo(rx->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200) {
			pthread_mutex_lock(&rx->c->mu);
			rx->c->listening = 1;
			pthread_cond_broadcast(&rx->c->cv);
			pthread_mutex_unlock(&rx->c->mu);
		}
	}
	return n;
}

/* A request's headers: ours, then the configured ones.  Caller frees. */
static struct curl_slist *http_headers(tgi_mcp_client *c, int post)
{
	struct curl_slist *l = NULL;
	char line[SESSION_ID_MAX + 64];

	if (post) {
		l = C->slist_append(l, "Content-Type: application/json");
		l = C->slist_append(l, "Accept: application/json, text/event-stream");
	} else {
		l = C->slist_append(l, "Accept: text/event-stream");
	}
	pthread_mutex_lock(&c->mu);
	if (c->session[0]) {
		tgi_snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
		l = C->slist_append(l, line);
	}
	if (c->version[0]) {
		tgi_snprintf(line, sizeof line, "MCP-Protocol-Version: %s", c->version);
		l = C->slist_append(l, line);
	}
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < c->nheaders; i++)
		l = C->slist_append(l, c->headers[i]);
	l = C->slist_append(l, "Expect:"); /* no 100-continue round trip */
	if (!l)
		out_of_memory();
	return l;
}

typedef enum { HTTP_POST, HTTP_GET, HTTP_DELETE } http_method;

/* One HTTP exchange, driven in steps so that p's answer, cancel, the
 * deadline and close() end it early (*stopped says which). */
typedef struct http_call {
	http_method         method;
	const char         *body;      /* POST */
	size_t              len;
	pending            *p;         /* a request waiting for its answer, or NULL */
	volatile const int *cancel;
	double              deadline;  /* monotonic ms, 0: none */
	int                 ignore_closing; /* DELETE from close() */
	char               *session;   /* initialize: where Mcp-Session-Id goes */
	/* out */
	http_rx             rx;
	CURLcode            rc;
	wait_end            stopped;   /* WAIT_ON when the exchange ran to its end */
	char                errbuf[CURL_ERROR_SIZE];
} http_call;

static void http_run(tgi_mcp_client *c, http_call *hc)
{
	http_conn *conn = conn_take(c);
	CURL *e = conn->easy;
	struct curl_slist *headers = http_headers(c, hc->method == HTTP_POST);
	int running = 1;

	memset(&hc->rx, 0, sizeof hc->rx);
	hc->rx.c = c;
	hc->rx.easy = e;
	hc->rx.listen = hc->method == HTTP_GET;
	hc->rx.session = hc->session;
	hc->errbuf[0] = '\0';
	hc->rc = CURLE_OK;
	hc->stopped = WAIT_ON;

	C->easy_reset(e);
	C->easy_setopt(e, CURLOPT_URL, c->url);
	C->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	C->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->loopback)
		C->easy_setopt(e, CURLOPT_PROXY, ""); /* whatever http_proxy says */
	C->easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	C->easy_setopt(e, CURLOPT_WRITEFUNCTION, rx_write);
	C->easy_setopt(e, CURLOPT_WRITEDATA, &hc->rx);
	C->easy_setopt(e, CURLOPT_HEADERFUNCTION, rx_header);
	C->easy_setopt(e, CURLOPT_HEADERDATA, &hc->rx);
	C->easy_setopt(e, CURLOPT_ERRORBUFFER, hc->errbuf);
	if (hc->method == HTTP_POST) {
		C->easy_setopt(e, CURLOPT_POSTFIELDS, hc->body);
		C->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)hc->len);
	} else if (hc->method == HTTP_DELETE) {
		C->easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	}

	C->multi_add_handle(conn->multi, e);
	for (;;) {
		CURLMcode mrc = C->multi_perform(conn->multi, &running);
		if (mrc != CURLM_OK) {
			hc->rc = CURLE_FAILED_INIT;
			tgi_snprintf(hc->errbuf, sizeof hc->errbuf, "%s", C->multi_strerror(mrc));
			break;
		}
		if (!running) {
			int left;
			CURLMsg *msg;
			while ((msg = C->multi_info_read(conn->multi, &left)))
				if (msg->msg == CURLMSG_DONE)
					hc->rc = msg->data.result;
			break;
		}
		pthread_mutex_lock(&c->mu);
		if (hc->ignore_closing)
			hc->stopped = hc->deadline > 0 && tgi_now_ms() >= hc->deadline ? WAIT_TIMEOUT
			                                                               : WAIT_ON;
		else
			hc->stopped = tgi_mcpc_wait_check(c, hc->p, hc->cancel, hc->deadline);
		pthread_mutex_unlock(&c->mu);
		if (hc->stopped != WAIT_ON)
			break;
		C->multi_poll(conn->multi, NULL, 0, POLL_MS, NULL);
	}
	C->multi_remove_handle(conn->multi, e);
	if (hc->rx.kind == RX_UNKNOWN)
		C->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &hc->rx.status);
	C->slist_free_all(headers);
	conn_give(c, conn);

	if (hc->stopped == WAIT_ON && hc->rc == CURLE_OK) {
		if (hc->rx.kind == RX_SSE)
			sse_drain(&hc->rx, 1);
		else if (hc->rx.kind == RX_JSON || (hc->rx.kind == RX_OTHER && hc->rx.buf.len &&
		                                    hc->rx.buf.p[0] == '{'))
			tgi_mcpc_dispatch(c, hc->rx.buf.p, hc->rx.buf.len);
	}
}

static void http_rx_free(http_call *hc)
{
	tgi_buf_free(&hc->rx.buf);
}

/* A sentence for an exchange that failed at the transport: into out. */
static void http_failure(tgi_mcp_client *c, const http_call *hc, char *out, size_t cap)
{
	char url[200], detail[CURL_ERROR_SIZE];

	tgi_sanitize(url, sizeof url, c->url);
	tgi_sanitize(detail, sizeof detail,
	             hc->errbuf[0] ? hc->errbuf : C->easy_strerror(hc->rc));
	tgi_snprintf(out, cap, "the server \"%s\" at %s cannot be reached: %s", c->name, url,
	             tgi_mcpc_lower_first(detail));
}

/* "HTTP 400: what the body said" for an unwelcome status. */
static void http_status_text(const http_call *hc, char *out, size_t cap)
{
	char said[200] = "";
	json_t *body = hc->rx.buf.len ? json_loadb(hc->rx.buf.p, hc->rx.buf.len, 0, NULL) : NULL;
	json_t *msg = json_object_get(json_object_get(body, "error"), "message");

	if (json_is_string(msg))
		tgi_sanitize(said, sizeof said, json_string_value(msg));
	else if (hc->rx.buf.len)
		tgi_sanitize_n(said, sizeof said, hc->rx.buf.p, hc->rx.buf.len, 160);
	json_decref(body);
	tgi_snprintf(out, cap, "HTTP %ld%s%s", hc->rx.status, said[0] ? ": " : "", said);
}

/*
 * After an exchange that did not bring what was wanted: is the whole
 * connection gone (the server cannot be reached, or it forgot our
 * session)?  Then say so to everyone and return 1.
 */
static int http_lost(tgi_mcp_client *c, const http_call *hc)
{
	char why[512];

	if (hc->rc != CURLE_OK && hc->rc != CURLE_WRITE_ERROR) {
		http_failure(c, hc, why, sizeof why);
		tgi_mcpc_connection_lost(c, why);
		return 1;
	}
	if (hc->rc == CURLE_OK && hc->rx.status == 404 && c->session[0]) {
		tgi_snprintf(why, sizeof why, "the server \"%s\" ended the session", c->name);
		tgi_mcpc_connection_lost(c, why);
		return 1;
	}
	return 0;
}

/* POST one message that needs no answer (a notification, a reply). */
static int http_send(tgi_mcp_client *c, const char *text, size_t len, double deadline)
{
	http_call hc = {.method = HTTP_POST, .body = text, .len = len, .deadline = deadline};
	int ok;

	http_run(c, &hc);
	ok = hc.stopped == WAIT_ON && hc.rc == CURLE_OK && hc.rx.status >= 200 &&
	     hc.rx.status < 300;
	if (!ok && hc.stopped == WAIT_ON && !http_lost(c, &hc)) {
		char st[300];
		http_status_text(&hc, st, sizeof st);
		tgi_mcpc_note(c, "a message was refused: %s", st);
	}
	http_rx_free(&hc);
	return ok ? 0 : -1;
}

/*
 * POST a request and wait for its answer in the reply (JSON, or an SSE
 * stream that ends with it).  A 202 means the answer comes on the GET
 * stream, when there is one.  Returns how the wait ended; WAIT_GONE with a
 * sentence in err for an exchange that failed without losing the
 * connection.
 */
static wait_end http_exchange(tgi_mcp_client *c, pending *p, const char *text, size_t len,
                              volatile const int *cancel, double deadline, char *err,
                              size_t errlen)
{
	http_call hc = {.method = HTTP_POST, .body = text, .len = len, .p = p, .cancel = cancel,
	                .deadline = deadline};
	wait_end w;
	int listening;

	if (strcmp(p->method, "initialize") == 0)
		hc.session = c->session;
	http_run(c, &hc);
	w = hc.stopped;
	if (w == WAIT_ON) {
		pthread_mutex_lock(&c->mu);
		w = p->done ? WAIT_DONE : WAIT_ON;
		listening = c->listening;
		pthread_mutex_unlock(&c->mu);
		if (w == WAIT_ON) {
			if (hc.rx.overflow) {
				tgi_snprintf(err, errlen,
				             "the server \"%s\" answered \"%s\" with a message over %zu "
				             "bytes", c->name, p->method, c->max_message);
				w = WAIT_GONE;
			} else if (http_lost(c, &hc)) {
				w = WAIT_GONE;
			} else if (hc.rx.status == 202 && listening) {
				w = tgi_mcpc_wait_answer(c, p, cancel, deadline);
			} else if (hc.rx.status >= 200 && hc.rx.status < 300) {
				tgi_snprintf(err, errlen,
				             "the server \"%s\" ended its reply to \"%s\" without an answer",
				             c->name, p->method);
				w = WAIT_GONE;
			} else {
				char st[300];
				http_status_text(&hc, st, sizeof st);
				tgi_snprintf(err, errlen, "the server \"%s\" answered \"%s\" with %s",
				             c->name, p->method, st);
				w = WAIT_GONE;
			}
		}
	}
	http_rx_free(&hc);
	return w;
}

/*
 * The listener: a GET SSE stream for what the server sends outside any
 * request (list_changed, its own requests).  405 (or any refusal) means
 * the server offers none; a stream that ends is opened again, after a
 * pause that doubles while streams keep ending quickly.
 */
static void *http_listener(void *arg)
{
	tgi_mcp_client *c = arg;
	int backoff = 1000;

	for (;;) {
		http_call hc = {.method = HTTP_GET};
		double started = tgi_now_ms();
		int gone;

		http_run(c, &hc);
		pthread_mutex_lock(&c->mu);
		c->listening = 0;
		pthread_mutex_unlock(&c->mu);
		gone = hc.stopped != WAIT_ON || http_lost(c, &hc) || hc.rx.status != 200;
		http_rx_free(&hc);
		if (gone)
			break;
		if (tgi_now_ms() - started > 10000)
			backoff = 1000;
		pthread_mutex_lock(&c->mu);
		double until = tgi_now_ms() + backoff;
		while (tgi_mcpc_wait_check(c, NULL, NULL, until) == WAIT_ON)
			tgi_mcpc_cv_wait_ms(c, until - tgi_now_ms());
		gone = c->gone || c->closing;
		pthread_mutex_unlock(&c->mu);
		if (gone)
			break;
		backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
	}
	pthread_mutex_lock(&c->mu);
	c->listener_done = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/*
 * Start the listener and give it a moment to open its stream, so that
 * what the server sends once it hears notifications/initialized (a
 * tools/list_changed, typically) has somewhere to go.
 */
static void http_listen(tgi_mcp_client *c)
{
	double until = tgi_now_ms() + LISTEN_SETTLE_MS;

	c->listener_started = pthread_create(&c->listener, NULL, http_listener, c) == 0;
	if (!c->listener_started)
		return;
	pthread_mutex_lock(&c->mu);
	while (!c->listening && !c->listener_done && tgi_now_ms() < until)
		tgi_mcpc_cv_wait_ms(c, until - tgi_now_ms());
	pthread_mutex_unlock(&c->mu);
}

static int http_start(tgi_mcp_client *c, const tgi_mcp_client_cfg *cfg, char *err, size_t errlen)
{
	c->url = tgi_strdup(cfg->url);
	c->headers = tgi_xcalloc(cfg->nheaders + 1, sizeof *c->headers);
	for (size_t i = 0; i < cfg->nheaders; i++)
		c->headers[c->nheaders++] = tgi_strdup(cfg->headers[i]);
	c->loopback = tgi_curl_url_is_loopback(c->url);
	return 0;
}

static void http_close(tgi_mcp_client *c)
{
	if (c->listener_started)
		pthread_join(c->listener, NULL);
	if (c->session[0]) {
		http_call hc = {.method = HTTP_DELETE, .ignore_closing = 1,
		                .deadline = tgi_now_ms() + DELETE_TIMEOUT_MS};
		http_run(c, &hc);
		http_rx_free(&hc);
	}
}

const tgi_mcpc_transport tgi_mcpc_http = {
	.name        = "http",
	.start       = http_start,
	.send        = http_send,
	.exchange    = http_exchange,
	.initialized = http_listen,
	.close       = http_close,
	.release     = conn_free_all,
};
