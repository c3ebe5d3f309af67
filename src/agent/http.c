/*
 * http.c — the HTTP providers: one model API over libcurl (loaded at run
 * time, src/util/dl.h), a request body in, the reply's bytes out.
 *
 *   openai-chat       POST {base}/v1/chat/completions   Authorization: Bearer
 *   openai-responses  POST {base}/v1/responses          Authorization: Bearer
 *   anthropic         POST {base}/v1/messages           x-api-key,
 *                                                       anthropic-version: 2023-06-01
 *   gemini            POST {base}/v1beta/models/{model}:generateContent, or
 *                     :streamGenerateContent?alt=sse    x-goog-api-key
 *
 * The bases are https://api.openai.com, https://api.anthropic.com and
 * https://generativelanguage.googleapis.com.  A --base-url that already
 * ends in the version segment (/v1; for Gemini /v1beta or /v1) gets only
 * the rest of the path, so both http://localhost:8080 and
 * http://localhost:8080/v1 reach {base}/v1/chat/completions.
 *
 * Default models (when neither --model nor the body names one): gpt-4.1
 * for both OpenAI APIs, claude-sonnet-4-5 for Anthropic, gemini-2.5-flash
 * for Gemini.  A body without "model" gets the provider's; Gemini names
 * the model in the URL, so its body's "model" and "stream" members are
 * taken out and choose the URL ("stream":true: the SSE endpoint).
 * Anything else in the body (Anthropic's required max_tokens included) is
 * dialogue.c's: the body is sent as it is given.
 *
 * Keys: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (else
 * GOOGLE_API_KEY).  An OpenAI API with --base-url needs none (a local
 * server); OPENAI_API_KEY is still sent when it is set, as the OpenAI
 * clients do.  The key lives in this provider and in the request's header
 * list only: never in a URL, an error, a log line or the body, and a
 * provider message that quotes it has it replaced by "[redacted]".
 * Request headers are never logged (no CURLOPT_VERBOSE).
 *
 * One send():
 *
 *     POST ──► 2xx ──► JSON: the whole body          ──► 0
 *      ▲        │      text/event-stream: the bytes, with each complete
 *      │        │      event's text given to on_text as it arrives ──► 0
 *      │        ├──► 429, 500, 502, 503, 504, 529 ─┐
 *      │        ├──► connection error, timeout,    ├─► wait, again (at most
 *      │        │    a stream cut before any text ─┘   `retries` more times)
 *      │        ├──► a stream cut after text was shown ──► -1 "ended early"
 *      │        └──► any other status ──► -1 "API: 401 Unauthorized: <msg>"
 *      └─── wait: retry-after-ms, else retry-after (seconds or an HTTP
 *           date; over 60 s is not waited for: -1), else 0.5 s, 1, 2, 4 …
 *           capped at 30 s, each less up to a quarter at random
 *
 * A bad URL or a certificate that does not verify is not tried again.
 * Timeouts: 10 s to connect, timeout_s (120) for a whole exchange.  The
 * reply is capped at 64 MiB (TGI_SSE_MAX), an error body at 64 KiB.
 * retries < 0 means none.  A provider is used by one thread at a time; its
 * easy and multi handles are kept between turns, so is the connection.
 *
 * Owns: the key, the curl handles, the retry loop.  Must not: decode calls
 * (the caller does, from the whole reply, with the API's decode_stream or
 * decode), log anything.
 */
#include "agent/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/dl.h"
#include "util/sse.h"
#include "util/util.h"

#define CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_S  120.0
#define TIMEOUT_MAX_S      86400.0
#define DEFAULT_RETRIES    4
#define BACKOFF_FIRST_MS   500.0
#define BACKOFF_MAX_MS     30000.0
#define RETRY_AFTER_MAX_MS 60000     /* a longer wait asked for is not waited */
#define REPLY_MAX          ((size_t)TGI_SSE_MAX)
#define ERROR_BODY_MAX     ((size_t)64 << 10)
#define MESSAGE_SHOWN      300       /* characters of a provider message in an error */
#define POLL_MS            100
#define ANTHROPIC_VERSION  "2023-06-01"

/* What each API needs: where, which key, how it is sent. */
typedef struct api_spec {
	const char *name;
	const char *base;         /* the API's own */
	const char *path;         /* after the version segment; Gemini: built per request */
	const char *version;      /* the version segment a base may already end in */
	const char *model;        /* default */
	const char *env[2];       /* key variables, in order */
	const char *key_header;   /* the header before the key */
	int         key_optional_with_base; /* OpenAI-compatible local servers */
	const char *missing;      /* the sentence when there is no key */
} api_spec;

static const api_spec specs[] = {
	{"openai-chat", "https://api.openai.com", "/chat/completions", "/v1", "gpt-4.1",
	 {"OPENAI_API_KEY", NULL}, "Authorization: Bearer ", 1,
	 "set OPENAI_API_KEY (or use --base-url for a local OpenAI-compatible server)"},
	{"openai-responses", "https://api.openai.com", "/responses", "/v1", "gpt-4.1",
	 {"OPENAI_API_KEY", NULL}, "Authorization: Bearer ", 1,
	 "set OPENAI_API_KEY (or use --base-url for a local OpenAI-compatible server)"},
	{"anthropic", "https://api.anthropic.com", "/messages", "/v1", "claude-sonnet-4-5",
	 {"ANTHROPIC_API_KEY", NULL}, "x-api-key: ", 0, "set ANTHROPIC_API_KEY"},
	{"gemini", "https://generativelanguage.googleapis.com", NULL, "/v1beta",
	 "gemini-2.5-flash", {"GEMINI_API_KEY", "GOOGLE_API_KEY"}, "x-goog-api-key: ", 0,
	 "set GEMINI_API_KEY (or GOOGLE_API_KEY)"},
};

typedef struct http_provider {
	tgi_provider    base;
	const api_spec *spec;
	char           *url;       /* without the Gemini model part: {base}/v1beta */
	char           *shown_url; /* for messages: no user:password@, no query */
	char           *model;
	char           *key;       /* NULL: none sent */
	int             loopback;  /* never through a proxy */
	double          timeout_s;
	int             retries;
	CURLM          *multi;
	CURL           *easy;
} http_provider;

static const tgi_curl_api *const C = &tgi_curl;

/* ---- the provider's own messages ----------------------------------------- */

static const char *status_reason(long status)
{
	static const struct { long code; const char *text; } t[] = {
		{400, "Bad Request"}, {401, "Unauthorized"}, {402, "Payment Required"},
		{403, "Forbidden"}, {404, "Not Found"}, {405, "Method Not Allowed"},
		{408, "Request Timeout"}, {409, "Conflict"}, {413, "Payload Too Large"},
		{415, "Unsupported Media Type"}, {422, "Unprocessable Entity"},
		{429, "Too Many Requests"}, {500, "Internal Server Error"},
		{501, "Not Implemented"}, {502, "Bad Gateway"}, {503, "Service Unavailable"},
		{504, "Gateway Timeout"}, {529, "Overloaded"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++)
		if (t[i].code == status)
			return t[i].text;
	return NULL;
}

static const char *json_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

void tgi_http_error_message(const char *body, size_t len, char *out, size_t cap)
{
	json_t *root, *top, *e;
	const char *msg = NULL, *status = NULL;

	if (!cap)
		return;
	out[0] = '\0';
	if (!body || !len)
		return;
	root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	if (!root) {
		size_t i = 0;
		while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' ||
		                   body[i] == '\t'))
			i++;
		if (i < len && body[i] != '<') /* an HTML page says nothing useful */
			tgi_sanitize_n(out, cap, body + i, len - i, 160);
		return;
	}
	top = json_is_array(root) ? json_array_get(root, 0) : root;
	e = json_object_get(top, "error");
	if (json_is_string(e)) {
		msg = json_string_value(e);
	} else if (json_is_object(e)) {
		msg = json_str(e, "message");
		status = json_str(e, "status");
	}
	if (!msg)
		msg = json_str(top, "message");
	if (!msg)
		msg = json_str(top, "detail");
	if (msg && status && *status) {
		size_t n = strlen(msg) + strlen(status) + 4;
		char *both = tgi_xmalloc(n);
		snprintf(both, n, "%s (%s)", msg, status);
		tgi_sanitize(out, cap, both);
		free(both);
	} else if (msg) {
		tgi_sanitize(out, cap, msg);
	}
	json_decref(root);
}

/* ---- retry-after ---------------------------------------------------------- */

/* digits[.digits] and nothing else (blanks around allowed); -1 if not. */
static double decimal(const char *s)
{
	double v = 0, scale = 1;
	int digits = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if (v < 1e12)
			v = v * 10 + (*s - '0');
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (scale > 1e-9)
				v += (*s - '0') * (scale /= 10);
	}
	while (*s == ' ' || *s == '\t')
		s++;
	return digits && !*s ? v : -1;
}

static int64_t clamp_ms(double ms)
{
	const double day = 86400000.0;
	if (ms < 0)
		return 0;
	return (int64_t)(ms > day ? day : ms);
}

static int two_digits(const char *s, int *out)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return -1;
	*out = (s[0] - '0') * 10 + (s[1] - '0');
	return 0;
}

/* "Sun, 06 Nov 1994 08:49:37 GMT" → unix ms, or -1. */
static int64_t imf_fixdate(const char *s)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	static const char days[] = "MonTueWedThuFriSatSun";
	int day, mon = -1, year, hh, mm, ss, yh, yl;

	while (*s == ' ' || *s == '\t')
		s++;
	if (strlen(s) < 29)
		return -1;
	int wday_ok = 0;
	for (int i = 0; i < 7; i++)
		wday_ok |= strncmp(s, days + 3 * i, 3) == 0;
	if (!wday_ok || s[3] != ',' || s[4] != ' ' || two_digits(s + 5, &day) < 0 || s[7] != ' ')
		return -1;
	for (int i = 0; i < 12; i++)
		if (strncmp(s + 8, months + 3 * i, 3) == 0)
			mon = i + 1;
	if (mon < 0 || s[11] != ' ' || two_digits(s + 12, &yh) < 0 ||
	    two_digits(s + 14, &yl) < 0 || s[16] != ' ' || two_digits(s + 17, &hh) < 0 ||
	    s[19] != ':' || two_digits(s + 20, &mm) < 0 || s[22] != ':' ||
	    two_digits(s + 23, &ss) < 0 || strncmp(s + 25, " GMT", 4) != 0)
		return -1;
	for (const char *t = s + 29; *t; t++)
		if (*t != ' ' && *t != '\t')
			return -1;
	year = yh * 100 + yl;
	if (day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60)
		return -1;
	return (tgi_days_from_civil(year, mon, day) * 86400 + hh * 3600 + mm * 60 + ss) * 1000;
}

int64_t tgi_http_retry_after(const char *value, int64_t now_unix_ms)
{
	double secs;
	int64_t at;

	if (!value)
		return -1;
	secs = decimal(value);
	if (secs >= 0)
		return clamp_ms(secs * 1000);
	at = imf_fixdate(value);
	if (at < 0)
		return -1;
	return clamp_ms((double)(at - now_unix_ms));
}

int64_t tgi_http_retry_after_ms(const char *value)
{
	double ms = value ? decimal(value) : -1;
	return ms < 0 ? -1 : clamp_ms(ms);
}

/* ---- the text of a stream as it comes ------------------------------------- */

static int give(const json_t *s, tgi_agent_text_fn cb, void *arg)
{
	if (!json_is_string(s) || json_string_length(s) == 0)
		return 0;
	if (cb)
		cb(arg, json_string_value(s), json_string_length(s));
	return 1;
}

int tgi_http_event_text(const char *api, const char *data, size_t len, tgi_agent_text_fn cb,
                        void *arg)
{
	json_t *root, *v;
	const char *type;
	size_t i, j;
	int n = 0;

	if (!api || !data || !len || (len == 6 && memcmp(data, "[DONE]", 6) == 0))
		return 0;
	root = json_loadb(data, len, 0, NULL);
	if (!json_is_object(root)) {
		json_decref(root);
		return 0;
	}
	type = json_str(root, "type");
	if (strcmp(api, "openai-chat") == 0) {
		json_array_foreach(json_object_get(root, "choices"), i, v)
			n += give(json_object_get(json_object_get(v, "delta"), "content"), cb, arg);
	} else if (strcmp(api, "openai-responses") == 0) {
		if (type && strcmp(type, "response.output_text.delta") == 0)
			n += give(json_object_get(root, "delta"), cb, arg);
	} else if (strcmp(api, "anthropic") == 0) {
		json_t *d = json_object_get(root, "delta");
		if (type && strcmp(type, "content_block_delta") == 0 &&
		    json_str(d, "type") && strcmp(json_str(d, "type"), "text_delta") == 0)
			n += give(json_object_get(d, "text"), cb, arg);
	} else if (strcmp(api, "gemini") == 0) {
		json_array_foreach(json_object_get(root, "candidates"), i, v) {
			json_t *part;
			json_array_foreach(json_object_get(json_object_get(v, "content"), "parts"),
			                   j, part)
				if (!json_is_true(json_object_get(part, "thought")))
					n += give(json_object_get(part, "text"), cb, arg);
		}
	}
	json_decref(root);
	return n;
}

/* ---- one exchange ---------------------------------------------------------- */

typedef struct rx {
	http_provider    *hp;
	long              status;
	char              reason[64];  /* from the status line, when it had one */
	int               classified;
	int               sse;         /* a 2xx text/event-stream */
	int               ok;          /* a 2xx */
	tgi_buf           body;
	int               overflow;    /* a 2xx body went past REPLY_MAX */
	tgi_sse_cutter    cutter;      /* SSE: where the complete events end */
	size_t            done;        /* SSE: bytes whose text was given out */
	int               shown;       /* text went to on_text */
	tgi_agent_text_fn on_text;
	void             *arg;
	int64_t           retry_ms;    /* retry-after-ms, -1: none */
	int64_t           retry_s_ms;  /* retry-after, -1: none */
} rx;

static void on_piece(void *arg, const char *text, size_t len)
{
	rx *r = arg;
	r->shown = 1;
	r->on_text(r->arg, text, len);
}

static int sse_event(const tgi_sse_event *ev, void *arg)
{
	rx *r = arg;
	tgi_http_event_text(r->hp->spec->name, ev->data, ev->data_len, on_piece, r);
	return 0;
}

/* Give the text of the events complete since the last call. */
static void sse_show(rx *r)
{
	size_t cut = tgi_sse_cut(&r->cutter, r->body.p, r->body.len);
	char perr[128];
	int truncated;

	if (!r->on_text || cut <= r->done)
		return;
	tgi_sse_parse(r->body.p + r->done, cut - r->done, sse_event, r, &truncated, perr,
	              sizeof perr);
	r->done = cut;
}

static void classify(rx *r)
{
	const char *ctype = NULL;

	r->classified = 1;
	C->easy_getinfo(r->hp->easy, CURLINFO_RESPONSE_CODE, &r->status);
	C->easy_getinfo(r->hp->easy, CURLINFO_CONTENT_TYPE, &ctype);
	r->ok = r->status >= 200 && r->status < 300;
	r->sse = r->ok && ctype && strncasecmp(ctype, "text/event-stream", 17) == 0;
	tgi_buf_init(&r->body, r->ok ? REPLY_MAX : ERROR_BODY_MAX);
}

static size_t rx_write(char *data, size_t size, size_t nmemb, void *arg)
{
	rx *r = arg;
	size_t n = size * nmemb;

	if (!r->classified)
		classify(r);
	if (tgi_buf_append(&r->body, data, n) < 0) {
		if (!r->ok)
			return n; /* an error body: its head is enough */
		r->overflow = 1;
		return 0;     /* stops the transfer */
	}
	if (r->sse)
		sse_show(r);
	return n;
}

/* One header line: the status line, retry-after, retry-after-ms. */
static size_t rx_header(char *data, size_t size, size_t nmemb, void *arg)
{
	rx *r = arg;
	size_t n = size * nmemb, name_len;
	char value[80];
	const char *colon, *v, *end = data + n;

	while (end > data && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	if (n > 5 && strncmp(data, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue): forget the last one's */
		const char *sp = memchr(data, ' ', (size_t)(end - data));
		r->reason[0] = '\0';
		r->retry_ms = r->retry_s_ms = -1;
		if (sp && (sp = memchr(sp + 1, ' ', (size_t)(end - sp - 1))))
			tgi_sanitize_n(r->reason, sizeof r->reason, sp + 1, (size_t)(end - sp - 1),
			               60);
		return n;
	}
	colon = memchr(data, ':', (size_t)(end - data));
	if (!colon)
		return n;
	name_len = (size_t)(colon - data);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	if ((size_t)(end - v) >= sizeof value)
		return n;
	memcpy(value, v, (size_t)(end - v));
	value[end - v] = '\0';
	if (name_len == 11 && strncasecmp(data, "retry-after", 11) == 0)
		r->retry_s_ms = tgi_http_retry_after(value, tgi_unix_ms());
	else if (name_len == 14 && strncasecmp(data, "retry-after-ms", 14) == 0)
		r->retry_ms = tgi_http_retry_after_ms(value);
	return n;
}

typedef struct exchange {
	CURLcode rc;
	char     errbuf[CURL_ERROR_SIZE];
} exchange;

static struct curl_slist *request_headers(const http_provider *hp)
{
	struct curl_slist *l = NULL;
	char ua[64];

	l = C->slist_append(l, "Content-Type: application/json");
	l = C->slist_append(l, "Accept: application/json, text/event-stream");
	tgi_snprintf(ua, sizeof ua, "User-Agent: toolgate/%s", TG_VERSION_STRING);
	l = C->slist_append(l, ua);
	if (strcmp(hp->spec->name, "anthropic") == 0)
		l = C->slist_append(l, "anthropic-version: " ANTHROPIC_VERSION);
	if (hp->key) {
		size_t n = strlen(hp->spec->key_header) + strlen(hp->key) + 1;
		char *line = tgi_xmalloc(n);
		snprintf(line, n, "%s%s", hp->spec->key_header, hp->key);
		l = C->slist_append(l, line);
		explicit_bzero(line, n);
		free(line);
	}
	l = C->slist_append(l, "Expect:"); /* no 100-continue round trip */
	if (!l) {
		fputs("toolgate: out of memory\n", stderr);
		abort();
	}
	return l;
}

/* POST payload to url once; what came back is in r. */
static void run_exchange(http_provider *hp, const char *url, const char *payload, size_t len,
                         rx *r, exchange *x)
{
	CURL *e = hp->easy;
	struct curl_slist *headers = request_headers(hp);
	int running = 1;

	x->rc = CURLE_OK;
	x->errbuf[0] = '\0';
	C->easy_reset(e);
	C->easy_setopt(e, CURLOPT_URL, url);
	C->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	C->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (hp->loopback)
		C->easy_setopt(e, CURLOPT_PROXY, ""); /* whatever http_proxy says */
	C->easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	C->easy_setopt(e, CURLOPT_POSTFIELDS, payload);
	C->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	C->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	C->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(hp->timeout_s * 1000));
	C->easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	C->easy_setopt(e, CURLOPT_WRITEFUNCTION, rx_write);
	C->easy_setopt(e, CURLOPT_WRITEDATA, r);
	C->easy_setopt(e, CURLOPT_HEADERFUNCTION, rx_header);
	C->easy_setopt(e, CURLOPT_HEADERDATA, r);
	C->easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);

	C->multi_add_handle(hp->multi, e);
	for (;;) {
		CURLMcode mrc = C->multi_perform(hp->multi, &running);
		if (mrc != CURLM_OK) {
			x->rc = CURLE_FAILED_INIT;
			tgi_snprintf(x->errbuf, sizeof x->errbuf, "%s", C->multi_strerror(mrc));
			break;
		}
		if (!running) {
			int left;
			CURLMsg *msg;
			while ((msg = C->multi_info_read(hp->multi, &left)))
				if (msg->msg == CURLMSG_DONE)
					x->rc = msg->data.result;
			break;
		}
		C->multi_poll(hp->multi, NULL, 0, POLL_MS, NULL);
	}
	C->multi_remove_handle(hp->multi, e);
	if (!r->classified)
		classify(r); /* no body came: the status is all there is */
	C->slist_free_all(headers);
}

/* ---- send ------------------------------------------------------------------ */

/* Replace every copy of the key in s by "[redacted]" (never longer than
 * the key: a key of fewer than ten bytes is masked with '*' instead). */
static void scrub_key(const http_provider *hp, char *s)
{
	static const char mark[] = "[redacted]";
	size_t klen = hp->key ? strlen(hp->key) : 0, mlen = sizeof mark - 1;
	char *at, *from = s;

	if (klen == 0)
		return;
	while ((at = strstr(from, hp->key))) {
		if (klen >= mlen) {
			memcpy(at, mark, mlen);
			memmove(at + mlen, at + klen, strlen(at + klen) + 1);
			from = at + mlen;
		} else {
			memset(at, '*', klen);
			from = at + klen;
		}
	}
}

/* The same over the raw bytes of a body, before any of it is cut (a key
 * that a cut would split is masked whole); *n is the new length. */
static void scrub_key_bytes(const http_provider *hp, char *p, size_t *n)
{
	static const char mark[] = "[redacted]";
	size_t klen = hp->key ? strlen(hp->key) : 0, mlen = sizeof mark - 1, left = *n;
	char *at, *from = p;

	if (klen == 0 || !p)
		return;
	while (left >= klen && (at = memmem(from, left, hp->key, klen))) {
		size_t after = left - (size_t)(at - from) - klen;
		if (klen >= mlen) {
			memcpy(at, mark, mlen);
			memmove(at + mlen, at + klen, after);
			*n -= klen - mlen;
			from = at + mlen;
		} else {
			memset(at, '*', klen);
			from = at + klen;
		}
		left = after;
	}
	if (from != p && klen >= mlen)
		p[*n] = '\0';  /* the buffer's end stays a string's end */
}

/* "API: 401 Unauthorized: message" into err. */
static void status_error(const http_provider *hp, rx *r, int attempts, char *err,
                         size_t errlen)
{
	size_t cap = r->body.len + 64;
	char *msg = tgi_xmalloc(cap), shown[MESSAGE_SHOWN * 4 + 8], after[48] = "";
	const char *reason = status_reason(r->status);

	scrub_key_bytes(hp, r->body.p, &r->body.len);
	tgi_http_error_message(r->body.p, r->body.len, msg, cap);
	scrub_key(hp, msg);
	tgi_sanitize_n(shown, sizeof shown, msg, strlen(msg), MESSAGE_SHOWN);
	free(msg);
	if (!reason)
		reason = r->reason[0] ? r->reason : "";
	if (attempts > 1)
		tgi_snprintf(after, sizeof after, " (after %d attempts)", attempts);
	if (shown[0])
		tgi_snprintf(err, errlen, "%s: %ld%s%s: %s%s", hp->spec->name, r->status,
		             reason[0] ? " " : "", reason, shown, after);
	else
		tgi_snprintf(err, errlen, "%s: %ld%s%s (POST %s)%s", hp->spec->name, r->status,
		             reason[0] ? " " : "", reason, hp->shown_url, after);
}

static char *lower_first(char *s)
{
	if (s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z'))
		s[0] = (char)(s[0] - 'A' + 'a');
	return s;
}

/* A sentence for an exchange that failed at the transport. */
static void transport_error(const http_provider *hp, const rx *r, const exchange *x,
                            int attempts, char *err, size_t errlen)
{
	char detail[CURL_ERROR_SIZE], after[48] = "";

	tgi_sanitize(detail, sizeof detail, x->errbuf[0] ? x->errbuf : C->easy_strerror(x->rc));
	lower_first(detail);
	if (attempts > 1)
		tgi_snprintf(after, sizeof after, " (after %d attempts)", attempts);
	if (r->shown)
		tgi_snprintf(err, errlen, "the stream from %s ended early: %s", hp->spec->name,
		             detail);
	else if (r->ok && r->sse)
		tgi_snprintf(err, errlen, "the stream from %s ended early: %s%s", hp->spec->name,
		             detail, after);
	else if (x->rc == CURLE_OPERATION_TIMEDOUT)
		tgi_snprintf(err, errlen, "%s: no reply from %s in time: %s%s", hp->spec->name,
		             hp->shown_url, detail, after);
	else if (r->status > 0)
		tgi_snprintf(err, errlen, "%s: the reply from %s was cut short: %s%s",
		             hp->spec->name, hp->shown_url, detail, after);
	else
		tgi_snprintf(err, errlen, "%s: cannot reach %s: %s%s", hp->spec->name,
		             hp->shown_url, detail, after);
}

static int retryable_status(long s)
{
	return s == 429 || s == 500 || s == 502 || s == 503 || s == 504 || s == 529;
}

/* A transport failure that another attempt cannot mend: a bad URL, a
 * certificate that does not verify. */
static int retryable_transport(CURLcode rc)
{
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_OUT_OF_MEMORY:
		return 0;
	default:
		return 1;
	}
}

static void sleep_ms(double ms)
{
	struct timespec ts;
	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The wait before attempt number `next` (2, 3, ...): the server's word, else
 * exponential backoff with jitter. */
static double backoff_ms(const rx *r, int next)
{
	char hex[5];
	double d = BACKOFF_FIRST_MS;

	if (r->retry_ms >= 0)
		return (double)r->retry_ms;
	if (r->retry_s_ms >= 0)
		return (double)r->retry_s_ms;
	for (int i = 2; i < next && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	tgi_random_hex(hex, 2);
	return d * (1.0 - 0.25 * (double)strtoul(hex, NULL, 16) / 65535.0);
}

/* The URL and payload of one request (both caller frees), from the body.
 * -1 with err when the body cannot be sent. */
static int prepare(http_provider *hp, const json_t *body, char **url, char **payload,
                   size_t *len, char *err, size_t errlen)
{
	json_t *b;

	if (!json_is_object(body)) {
		tgi_snprintf(err, errlen, "%s: the request body is not a JSON object",
		             hp->spec->name);
		return -1;
	}
	b = json_copy((json_t *)body); /* shallow: only top-level members change */
	if (!b) {
		fputs("toolgate: out of memory\n", stderr);
		abort();
	}
	if (strcmp(hp->spec->name, "gemini") == 0) {
		const char *m = json_str(b, "model");
		if (m && strlen(m) >= 120) {
			tgi_snprintf(err, errlen, "gemini: the model name is too long");
			json_decref(b);
			return -1;
		}
		int stream = json_is_true(json_object_get(b, "stream"));
		char model[128];
		tgi_snprintf(model, sizeof model, "%s", m ? m : hp->model);
		if (strncmp(model, "models/", 7) == 0)
			memmove(model, model + 7, strlen(model + 7) + 1);
		int ok = model[0] != '\0';
		for (const char *c = model; *c; c++)
			ok &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '_';
		if (!ok) {
			char shown[64];
			tgi_sanitize_n(shown, sizeof shown, model, strlen(model), 40);
			tgi_snprintf(err, errlen, "gemini: \"%s\" is not a model name", shown);
			json_decref(b);
			return -1;
		}
		json_object_del(b, "model");
		json_object_del(b, "stream");
		size_t n = strlen(hp->url) + strlen(model) + 64;
		*url = tgi_xmalloc(n);
		snprintf(*url, n, "%s/models/%s:%s", hp->url, model,
		         stream ? "streamGenerateContent?alt=sse" : "generateContent");
	} else {
		if (!json_is_string(json_object_get(b, "model")))
			json_object_set_new(b, "model", json_string(hp->model));
		*url = tgi_strdup(hp->url);
	}
	*payload = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	if (!*payload) {
		free(*url);
		tgi_snprintf(err, errlen, "%s: the request body cannot be written as JSON",
		             hp->spec->name);
		return -1;
	}
	*len = strlen(*payload);
	return 0;
}

static int http_send(tgi_provider *p, const json_t *body, tgi_agent_text_fn on_text, void *arg,
                     char **reply, size_t *len, int *stream, char *err, size_t errlen)
{
	http_provider *hp = (http_provider *)p;
	char *url, *payload;
	size_t plen;
	int attempts = 1 + (hp->retries > 0 ? hp->retries : 0), rc = -1;

	*reply = NULL;
	*len = 0;
	*stream = 0;
	if (prepare(hp, body, &url, &payload, &plen, err, errlen) < 0)
		return -1;
	for (int n = 1;; n++) {
		rx r = {.hp = hp, .on_text = on_text, .arg = arg, .retry_ms = -1, .retry_s_ms = -1};
		exchange x;
		int again;

		run_exchange(hp, url, payload, plen, &r, &x);
		if (r.overflow) {
			tgi_snprintf(err, errlen, "%s: the reply is over %zu MiB", hp->spec->name,
			             REPLY_MAX >> 20);
			again = 0;
		} else if (x.rc != CURLE_OK) {
			transport_error(hp, &r, &x, n, err, errlen);
			/* text already shown cannot be taken back */
			again = !r.shown && retryable_transport(x.rc);
		} else if (r.ok) {
			*len = r.body.len;
			*stream = r.sse;
			*reply = r.body.p ? tgi_buf_steal(&r.body) : tgi_strdup("");
			rc = 0;
			again = 0;
		} else {
			status_error(hp, &r, n, err, errlen);
			again = retryable_status(r.status);
			int64_t asked = r.retry_ms >= 0 ? r.retry_ms : r.retry_s_ms;
			if (again && asked > RETRY_AFTER_MAX_MS) {
				size_t used = strlen(err);
				tgi_snprintf(err + used, errlen - used,
				             " (the server asks to wait %lld s)", (long long)(asked / 1000));
				again = 0;
			}
		}
		tgi_buf_free(&r.body);
		if (!again || n >= attempts)
			break;
		sleep_ms(backoff_ms(&r, n + 1));
	}
	explicit_bzero(payload, plen);
	free(payload);
	free(url);
	if (rc == 0 && errlen)
		err[0] = '\0';
	return rc;
}

/* ---- the provider ---------------------------------------------------------- */

static void http_free(tgi_provider *p)
{
	http_provider *hp = (http_provider *)p;

	if (!hp)
		return;
	if (hp->easy)
		C->easy_cleanup(hp->easy);
	if (hp->multi)
		C->multi_cleanup(hp->multi);
	if (hp->key) {
		explicit_bzero(hp->key, strlen(hp->key));
		free(hp->key);
	}
	free(hp->url);
	free(hp->shown_url);
	free(hp->model);
	free(hp);
}

static const tgi_provider_ops ops[] = {
	{"openai-chat", http_send, http_free},
	{"openai-responses", http_send, http_free},
	{"anthropic", http_send, http_free},
	{"gemini", http_send, http_free},
};

/* url for messages: without user:password@ and without the query. */
static char *url_for_messages(const char *url)
{
	char *s = tgi_strdup(url), *host = strstr(s, "://"), *q;

	if (host) {
		host += 3;
		char *slash = host + strcspn(host, "/?#");
		char *at = memchr(host, '@', (size_t)(slash - host));
		if (at)
			memmove(host, at + 1, strlen(at + 1) + 1);
	}
	if ((q = strpbrk(s, "?#")))
		*q = '\0';
	char *out = tgi_xmalloc(strlen(s) + 1);
	tgi_sanitize(out, strlen(s) + 1, s);
	free(s);
	return out;
}

/* {base}{version}{path}, the version left out when base ends with it (or,
 * for Gemini, with /v1). */
static char *endpoint(const api_spec *spec, const char *base_url)
{
	const char *base = base_url ? base_url : spec->base;
	size_t n = strlen(base);
	const char *path = spec->path ? spec->path : "";
	char *out;

	while (n > 0 && base[n - 1] == '/')
		n--;
	size_t vl = strlen(spec->version);
	int has_version = (n >= vl && strncmp(base + n - vl, spec->version, vl) == 0) ||
	                  (!spec->path && n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0);
	size_t cap = n + vl + strlen(path) + 1;
	out = tgi_xmalloc(cap);
	snprintf(out, cap, "%.*s%s%s", (int)n, base, has_version ? "" : spec->version, path);
	return out;
}

/* The key from the first of spec's variables that is set (*var names it). */
static const char *key_from_env(const api_spec *spec, const char **var)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(spec->env) && spec->env[i]; i++) {
		const char *v = getenv(spec->env[i]);
		if (v && *v) {
			*var = spec->env[i];
			return v;
		}
	}
	return NULL;
}

/* A key goes into a header line: visible ASCII only, so that it can never
 * end the line and start another. */
static int key_ok(const char *key)
{
	for (; *key; key++)
		if ((unsigned char)*key < 0x21 || (unsigned char)*key > 0x7e)
			return 0;
	return 1;
}

int tgi_provider_http(const tgi_provider_opts *o, tgi_provider **out, char *err, size_t errlen)
{
	const api_spec *spec = NULL;
	const char *key, *var = NULL;
	const char *base_url = o && o->base_url && *o->base_url ? o->base_url : NULL;
	http_provider *hp;
	size_t i;

	*out = NULL;
	for (i = 0; o && o->provider && i < TGI_ARRAY_LEN(specs); i++)
		if (strcmp(o->provider, specs[i].name) == 0)
			spec = &specs[i];
	if (!spec) {
		char shown[64];
		tgi_sanitize_n(shown, sizeof shown, o && o->provider ? o->provider : "",
		               o && o->provider ? strlen(o->provider) : 0, 40);
		tgi_snprintf(err, errlen, "\"%s\" is not an HTTP provider: openai-chat, "
		             "openai-responses, anthropic or gemini", shown);
		return -1;
	}
	key = key_from_env(spec, &var);
	if (!key && !(spec->key_optional_with_base && base_url)) {
		tgi_snprintf(err, errlen, "%s", spec->missing);
		return -1;
	}
	if (key && !key_ok(key)) {
		tgi_snprintf(err, errlen, "%s holds a space or a control character: not a key",
		             var);
		return -1;
	}
	if (base_url) {
		const char *host = !strncmp(base_url, "http://", 7)    ? base_url + 7
		                 : !strncmp(base_url, "https://", 8)   ? base_url + 8 : NULL;
		if (!host || !*host || strchr("/?#@:", *host)) {
			char shown[128];
			tgi_sanitize_n(shown, sizeof shown, base_url, strlen(base_url), 80);
			tgi_snprintf(err, errlen, "--base-url \"%s\" is not an http:// or https:// URL "
			             "with a host", shown);
			return -1;
		}
	}
	if (tgi_curl_load(err, errlen) < 0)
		return -1;

	hp = tgi_xcalloc(1, sizeof *hp);
	hp->base.ops = &ops[spec - specs];
	hp->base.api = tgi_protocol_find(spec->name);
	hp->spec = spec;
	hp->url = endpoint(spec, base_url);
	hp->shown_url = url_for_messages(hp->url);
	hp->model = tgi_strdup(o->model && *o->model ? o->model : spec->model);
	hp->base.model = hp->model;
	hp->key = key ? tgi_strdup(key) : NULL;
	hp->timeout_s = o->timeout_s > 0 ? o->timeout_s : DEFAULT_TIMEOUT_S;
	if (hp->timeout_s > TIMEOUT_MAX_S)
		hp->timeout_s = TIMEOUT_MAX_S;
	hp->retries = o->retries == 0 ? DEFAULT_RETRIES : o->retries < 0 ? 0 : o->retries;
	hp->loopback = tgi_curl_url_is_loopback(hp->url);
	if (hp->key && !hp->loopback && strncmp(hp->url, "http://", 7) == 0) {
		/* a key in clear text to another machine is a key given away */
		tgi_snprintf(err, errlen, "refusing to send %s over plain http to %s; use an "
		             "https:// URL, or unset the key for a server that needs none", var,
		             hp->shown_url);
		http_free(&hp->base);
		return -1;
	}
	hp->multi = C->multi_init();
	hp->easy = C->easy_init();
	if (!hp->base.api || !hp->multi || !hp->easy) {
		tgi_snprintf(err, errlen, "%s: cannot set up an HTTP client", spec->name);
		http_free(&hp->base);
		return -1;
	}
	*out = &hp->base;
	return 0;
}
