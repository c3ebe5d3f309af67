/*
 * client.c — an MCP client connection to one downstream server (see
 * client.h for the contract): a stdio child or Streamable HTTP.
 *
 * One part is the same for both transports: the waiting table.  Every
 * request gets the next integer id and a `pending` row; whatever thread
 * reads the server's answer hands it to tgi_mcpc_dispatch(), which wakes
 * the row with that id (a condition variable, on CLOCK_MONOTONIC), passes
 * progress for the row's token (the id itself) to its callback, gives other
 * notifications to handlers.notify, and runs each server request (ping
 * included) on a detached thread of its own so that an elicitation waiting
 * for a human never stops the reading.  At most SERVER_REQUESTS_MAX such
 * threads run for one client: past that a request is answered at once on
 * the reading thread (-32603 "too many requests from this server at once";
 * a ping still gets its empty result), so a server cannot make us start
 * threads without end.
 *
 * The transports are rows of a small table (client_int.h), one file each:
 * client_stdio.c (a child with pipes) and client_http.c (Streamable HTTP);
 * this file is the protocol and calls only the row.
 *
 * Life of a connection:
 *
 *     open ──► initialized ──► gone (EOF, broken stream, unreachable)
 *       │            │            │
 *       └────────────┴──► closing (close() was called) ──► freed
 *
 * `gone` fails every waiting request with `why`; handlers.closed hears it
 * once, and only for a connection that open() returned and that close()
 * is not already taking down.
 *
 * notify, progress and closed run on the thread that read the message (the
 * stdio reader; for HTTP the thread whose reply carried it, or the
 * listener).  They may notify, but a stdio one that makes a request gets
 * an error at once (the answer could only come through its own thread);
 * handlers.request has a thread of its own and may.  None may call close()
 * (it joins those threads and waits for their users).
 *
 * Owns: ids, the waiting table, the server-request threads, the
 * connection's state; the transport its own (client_int.h).  Must not:
 * know tools, policy or the gate.
 */
#include "mcp/client.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/dl.h"
#include "mcp/client_int.h"
#include "mcp/jsonrpc.h"
#include "toolgate.h"
#include "util/util.h"

#define PROTOCOL_VERSION       "2025-11-25"
#define DEFAULT_MAX_MESSAGE    ((size_t)16 << 20)
#define DEFAULT_INIT_TIMEOUT_S 30
#define SEND_TIMEOUT_MS        5000     /* a notification or reply POSTed over HTTP */
#define SERVER_REQUESTS_MAX    16       /* server requests answered at once, each on a thread */

/* ---- small helpers ---------------------------------------------------------- */

/* A line for the operator on stderr (MCP keeps stdout for messages). */
void tgi_mcpc_note(const tgi_mcp_client *c, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(stderr, "toolgate: mcp server \"%s\": %s\n", c->name, text);
}

/* "No such file" → "no such file" for the middle of our sentences (an
 * acronym such as "SSL" keeps its case). */
char *tgi_mcpc_lower_first(char *s)
{
	if (s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z'))
		s[0] = (char)(s[0] - 'A' + 'a');
	return s;
}

/* The message of a JSON-RPC error object, fit to quote ("" when none). */
static const char *error_message(const json_t *error, char *out, size_t cap)
{
	json_t *msg = json_object_get(error, "message");
	tgi_sanitize(out, cap, json_is_string(msg) ? json_string_value(msg) : "");
	return out;
}

/* Wait on c->cv for at most ms milliseconds (mu held). */
void tgi_mcpc_cv_wait_ms(tgi_mcp_client *c, double ms)
{
	tgi_cond_wait_ms(&c->cv, &c->mu, ms < 1 ? 1 : (long)ms);
}

static void wait_ms_text(char *out, size_t cap, int ms)
{
	if (ms % 1000 == 0)
		tgi_snprintf(out, cap, "%d s", ms / 1000);
	else
		tgi_snprintf(out, cap, "%d ms", ms);
}

/* ---- the connection's state ----------------------------------------------- */

/*
 * The connection is gone: remember why (the first reason wins), wake every
 * waiter, and tell handlers.closed once — unless open() has not returned
 * the client yet or close() is taking it down.
 */
void tgi_mcpc_connection_lost(tgi_mcp_client *c, const char *why)
{
	int tell;

	pthread_mutex_lock(&c->mu);
	tell = !c->gone && c->opened && !c->closing;
	if (!c->gone) {
		c->gone = 1;
		tgi_snprintf(c->why, sizeof c->why, "%s", why);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (tell && c->h.closed)
		c->h.closed(c->h.arg, c->why);
}

/* Why the connection cannot carry a request now (mu held): NULL when it can. */
static const char *unusable(tgi_mcp_client *c, char *buf, size_t cap)
{
	if (c->gone)
		return c->why;
	if (c->closing) {
		tgi_snprintf(buf, cap, "the connection to the server \"%s\" is closed", c->name);
		return buf;
	}
	return NULL;
}

/* A thread starts using c (0), or may not (-1, why in err). */
static int enter(tgi_mcp_client *c, char *err, size_t errlen)
{
	char buf[256];
	const char *why;

	pthread_mutex_lock(&c->mu);
	why = unusable(c, buf, sizeof buf);
	if (why) {
		tgi_snprintf(err, errlen, "%s", why);
		pthread_mutex_unlock(&c->mu);
		return -1;
	}
	c->users++;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static void leave(tgi_mcp_client *c)
{
	pthread_mutex_lock(&c->mu);
	c->users--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* ---- the waiting table ------------------------------------------------------ */

static void pending_add(tgi_mcp_client *c, pending *p)
{
	pthread_mutex_lock(&c->mu);
	p->id = c->next_id++;
	p->next = c->waiting;
	c->waiting = p;
	pthread_mutex_unlock(&c->mu);
}

static pending *pending_find(tgi_mcp_client *c, const json_t *id)
{
	if (!json_is_integer(id))
		return NULL;
	for (pending *p = c->waiting; p; p = p->next)
		if (p->id == json_integer_value(id))
			return p;
	return NULL;
}

/* Should a wait for p (may be NULL) end now?  mu held.  deadline: monotonic
 * ms, 0 for none. */
wait_end tgi_mcpc_wait_check(tgi_mcp_client *c, const pending *p, volatile const int *cancel,
                             double deadline)
{
	if (p && p->done)
		return WAIT_DONE;
	if (c->gone || c->closing)
		return WAIT_GONE;
	if (tgi_flag_get(cancel))
		return WAIT_CANCELLED;
	if (deadline > 0 && tgi_now_ms() >= deadline)
		return WAIT_TIMEOUT;
	return WAIT_ON;
}

/* Wait for p's answer on the condition variable. */
wait_end tgi_mcpc_wait_answer(tgi_mcp_client *c, pending *p, volatile const int *cancel,
                              double deadline)
{
	wait_end w;

	pthread_mutex_lock(&c->mu);
	while ((w = tgi_mcpc_wait_check(c, p, cancel, deadline)) == WAIT_ON) {
		double ms = POLL_MS;
		if (deadline > 0 && deadline - tgi_now_ms() < ms)
			ms = deadline - tgi_now_ms();
		tgi_mcpc_cv_wait_ms(c, ms);
	}
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* ---- what the server sends -------------------------------------------------- */

/*
 * Take member key out of a message (a new reference, or NULL), so that the
 * thread it goes to is the only one that touches it: jansson's reference
 * counts are not a synchronisation the thread sanitizer can see.
 */
static json_t *detach(json_t *root, const char *key)
{
	json_t *v = json_incref(json_object_get(root, key));
	json_object_del(root, key);
	return v;
}

static int send_message(tgi_mcp_client *c, json_t *msg, double deadline);

/* A request from the server, answered on a thread of its own. */
typedef struct server_request {
	tgi_mcp_client *c;
	json_t         *id;      /* owned */
	char           *method;  /* owned */
	json_t         *params;  /* owned, may be NULL */
} server_request;

/* A JSON-RPC error object as the server should see it: the handler's when
 * it is one, else an internal error. */
static json_t *error_object(json_t *given)
{
	if (json_is_object(given) && json_is_integer(json_object_get(given, "code")) &&
	    json_is_string(json_object_get(given, "message")))
		return given;
	json_decref(given);
	return json_pack("{s:i,s:s}", "code", TGI_RPC_INTERNAL_ERROR, "message",
	                 "the request could not be answered");
}

static void server_request_free(server_request *r)
{
	json_decref(r->id);
	json_decref(r->params);
	free(r->method);
	free(r);
}

/* Send the reply to a server request (reply stolen); a failure is noted. */
static void send_reply(tgi_mcp_client *c, json_t *reply, const char *method)
{
	if (send_message(c, reply, tgi_now_ms() + SEND_TIMEOUT_MS) < 0)
		tgi_mcpc_note(c, "the answer to its \"%s\" request could not be sent", method);
}

/* A thread answering the server is done: its slot and its use of c. */
static void answered(tgi_mcp_client *c)
{
	pthread_mutex_lock(&c->mu);
	c->answering--;
	pthread_mutex_unlock(&c->mu);
	leave(c);
}

static void *answer_server(void *arg)
{
	server_request *r = arg;
	tgi_mcp_client *c = r->c;
	json_t *result = NULL, *error = NULL, *reply;

	if (strcmp(r->method, "ping") == 0)
		result = json_object();
	else if (!c->h.request)
		error = json_pack("{s:i,s:s}", "code", TGI_RPC_METHOD_NOT_FOUND, "message",
		                  "method not found");
	else if (c->h.request(c->h.arg, r->method, r->params, &result, &error) < 0)
		error = error_object(error);

	if (error) {
		json_decref(result);
		reply = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", r->id, "error", error);
	} else {
		json_decref(error);
		reply = tgi_rpc_result(r->id, result);
	}
	send_reply(c, reply, r->method);
	server_request_free(r);
	answered(c);
	return NULL;
}

/*
 * A request from the server: answered on a thread of its own while fewer
 * than SERVER_REQUESTS_MAX are; else at once here (a ping with its empty
 * result, anything else with -32603), so that the reading goes on and the
 * threads stay bounded.
 */
static void on_server_request(tgi_mcp_client *c, const tgi_rpc_msg *m)
{
	char ignored[64];
	server_request *r;
	pthread_attr_t attr;
	pthread_t t;
	int rc, full;

	if (enter(c, ignored, sizeof ignored) < 0)
		return; /* closing: nobody is left to answer */
	pthread_mutex_lock(&c->mu);
	full = c->answering >= SERVER_REQUESTS_MAX;
	if (!full)
		c->answering++;
	pthread_mutex_unlock(&c->mu);
	if (full) {
		send_reply(c, strcmp(m->method, "ping") == 0
		                  ? tgi_rpc_result(m->id, json_object())
		                  : tgi_rpc_error(m->id, TGI_RPC_INTERNAL_ERROR,
		                                  "too many requests from this server at once", NULL),
		           m->method);
		leave(c);
		return;
	}
	r = tgi_xcalloc(1, sizeof *r);
	r->c = c;
	r->method = tgi_strdup(m->method);
	r->params = detach(m->root, "params");
	r->id = detach(m->root, "id");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, answer_server, r);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		send_reply(c, tgi_rpc_error(r->id, TGI_RPC_INTERNAL_ERROR,
		                            "the client has no thread left to answer", NULL),
		           r->method);
		server_request_free(r);
		answered(c);
	}
}

/* notifications/progress for one of our requests goes to its callback;
 * progress for a request no longer waiting is dropped. */
static void on_progress(tgi_mcp_client *c, const json_t *params)
{
	tgi_mcp_progress_fn fn = NULL;
	void *arg = NULL;
	pending *p;

	pthread_mutex_lock(&c->mu);
	p = pending_find(c, json_object_get(params, "progressToken"));
	if (p && p->progress && !p->done) {
		fn = p->progress;
		arg = p->parg;
		p->busy++;
	}
	pthread_mutex_unlock(&c->mu);
	if (!fn)
		return;
	fn(arg, params);
	pthread_mutex_lock(&c->mu);
	p->busy--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void on_answer(tgi_mcp_client *c, const tgi_rpc_msg *m)
{
	pending *p;

	pthread_mutex_lock(&c->mu);
	p = pending_find(c, m->id);
	if (p && !p->done) {
		p->result = detach(m->root, "result");
		p->error = detach(m->root, "error");
		p->done = 1;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	if (!p && json_is_null(m->id)) {
		char text[200];
		tgi_mcpc_note(c, "it reported an error about no request: %s",
		              error_message(m->error, text, sizeof text));
	}
}

/* One message from the server (len bytes of text, not NUL-terminated). */
void tgi_mcpc_dispatch(tgi_mcp_client *c, const char *text, size_t len)
{
	tgi_rpc_msg m;
	json_t *reply;

	tgi_rpc_parse(text, len, &m, &reply);
	switch (m.kind) {
	case TGI_RPC_RESPONSE:
	case TGI_RPC_ERROR_REPLY:
		on_answer(c, &m);
		break;
	case TGI_RPC_NOTIFICATION:
		if (strcmp(m.method, "notifications/progress") == 0)
			on_progress(c, m.params);
		else if (c->h.notify)
			c->h.notify(c->h.arg, m.method, m.params);
		break;
	case TGI_RPC_REQUEST:
		on_server_request(c, &m);
		break;
	case TGI_RPC_BAD: {
		char shown[200];
		tgi_mcpc_note(c, "a message was dropped: %s",
		              error_message(json_object_get(reply, "error"), shown, sizeof shown));
		break;
	}
	}
	json_decref(reply);
	tgi_rpc_msg_free(&m);
}

/* ---- sending ---------------------------------------------------------------- */

/* Send one message that needs no answer (msg stolen).  0, or -1. */
static int send_message(tgi_mcp_client *c, json_t *msg, double deadline)
{
	size_t len;
	char *text = tgi_rpc_dump(msg, &len);
	int rc;

	json_decref(msg);
	rc = c->t->send(c, text, len, deadline);
	free(text);
	return rc;
}

/* ---- requests --------------------------------------------------------------- */

static void cancel_request(tgi_mcp_client *c, const pending *p, const char *reason)
{
	json_t *params = json_pack("{s:I,s:s}", "requestId", (json_int_t)p->id, "reason", reason);
	send_message(c, tgi_rpc_notification("notifications/cancelled", params),
	             tgi_now_ms() + SEND_TIMEOUT_MS);
}

/* params with _meta.progressToken = id (params stolen, may be NULL). */
static json_t *with_progress_token(json_t *params, int64_t id)
{
	json_t *meta;

	if (!params)
		params = json_object();
	meta = json_object_get(params, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(params, "_meta", meta);
	}
	json_object_set_new(meta, "progressToken", json_integer(id));
	return params;
}

/* Take p out of the table; wait until no progress callback of it runs.
 * After this nothing else touches p. */
static void pending_unlink(tgi_mcp_client *c, pending *p)
{
	pthread_mutex_lock(&c->mu);
	for (pending **pp = &c->waiting; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	while (p->busy)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* Send the request of p (msg stolen) and wait for its answer. */
static wait_end exchange(tgi_mcp_client *c, pending *p, json_t *msg, volatile const int *cancel,
                         double deadline, char *why, size_t whylen)
{
	size_t len;
	char *text = tgi_rpc_dump(msg, &len);
	wait_end w;

	json_decref(msg);
	w = c->t->exchange(c, p, text, len, cancel, deadline, why, whylen);
	free(text);
	return w;
}

int tgi_mcp_client_request(tgi_mcp_client *c, const char *method, json_t *params, int timeout_ms,
                           volatile const int *cancel, tgi_mcp_progress_fn progress,
                           void *parg, json_t **result, json_t **error, int *cancelled,
                           char *err, size_t errlen)
{
	pending p = {.method = method, .progress = progress, .parg = parg};
	double deadline = timeout_ms > 0 ? tgi_now_ms() + timeout_ms : 0;
	char why[512] = "", t[32];
	json_t *msg;
	wait_end w;
	int rc = -1;

	*result = NULL;
	*error = NULL;
	if (cancelled)
		*cancelled = 0;
	if (errlen)
		err[0] = '\0';
	if (c->reader_started && pthread_equal(pthread_self(), c->reader)) {
		/* its answer could only come through this very thread */
		json_decref(params);
		tgi_snprintf(err, errlen,
		             "a request to the server \"%s\" cannot be made from a handler; make it "
		             "from another thread", c->name);
		return -1;
	}
	if (params && !json_is_object(params)) {
		json_decref(params);
		tgi_snprintf(err, errlen, "the parameters of \"%s\" must be an object", method);
		return -1;
	}
	if (enter(c, err, errlen) < 0) {
		json_decref(params);
		return -1;
	}
	pending_add(c, &p);
	if (progress)
		params = with_progress_token(params, p.id);
	msg = tgi_rpc_request(NULL, method, params);
	json_object_set_new(msg, "id", json_integer(p.id));

	w = exchange(c, &p, msg, cancel, deadline, why, sizeof why);
	pending_unlink(c, &p);
	if (p.done)
		w = WAIT_DONE; /* an answer that came in while the wait was ending counts */

	switch (w) {
	case WAIT_DONE:
		if (p.error) {
			char shown[300];
			tgi_snprintf(err, errlen,
			             "the server \"%s\" answered \"%s\" with error %" JSON_INTEGER_FORMAT
			             ": %s", c->name, method,
			             json_integer_value(json_object_get(p.error, "code")),
			             error_message(p.error, shown, sizeof shown));
			*error = p.error;
		} else {
			*result = p.result ? p.result : json_object();
			rc = 0;
		}
		p.result = p.error = NULL;
		break;
	case WAIT_CANCELLED:
		cancel_request(c, &p, "cancelled by the client");
		tgi_snprintf(err, errlen, "the request \"%s\" to the server \"%s\" was cancelled",
		             method, c->name);
		if (cancelled)
			*cancelled = 1;
		break;
	case WAIT_TIMEOUT:
		cancel_request(c, &p, "timed out");
		wait_ms_text(t, sizeof t, timeout_ms);
		tgi_snprintf(err, errlen, "the server \"%s\" did not answer \"%s\" within %s", c->name,
		             method, t);
		break;
	case WAIT_GONE:
	case WAIT_ON:
		if (!why[0]) {
			pthread_mutex_lock(&c->mu);
			const char *u = unusable(c, why, sizeof why);
			if (u && u != why)
				tgi_snprintf(why, sizeof why, "%s", u);
			pthread_mutex_unlock(&c->mu);
			if (!why[0])
				tgi_snprintf(why, sizeof why, "the server \"%s\" closed the connection",
				             c->name);
		}
		tgi_snprintf(err, errlen, "%s", why);
		break;
	}
	json_decref(p.result);
	json_decref(p.error);
	leave(c);
	return rc;
}

int tgi_mcp_client_notify(tgi_mcp_client *c, const char *method, json_t *params)
{
	char err[300];
	int rc;

	if ((params && !json_is_object(params)) || enter(c, err, sizeof err) < 0) {
		json_decref(params);
		return -1;
	}
	rc = send_message(c, tgi_rpc_notification(method, params), tgi_now_ms() + SEND_TIMEOUT_MS);
	leave(c);
	return rc;
}

/* ---- open and close --------------------------------------------------------- */

/* initialize, check the answer, notifications/initialized. */
static int initialize(tgi_mcp_client *c, int timeout_s, char *err, size_t errlen)
{
	json_t *params, *result, *error;
	const char *version;

	params = json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion", PROTOCOL_VERSION,
	                   "capabilities", "elicitation", "sampling", "clientInfo", "name",
	                   "toolgate", "version", tg_version());
	if (tgi_mcp_client_request(c, "initialize", params, timeout_s * 1000, NULL, NULL, NULL,
	                           &result, &error, NULL, err, errlen) < 0) {
		if (error) {
			char shown[300];
			tgi_snprintf(err, errlen, "the server \"%s\" refused to initialize: %s", c->name,
			             error_message(error, shown, sizeof shown));
			json_decref(error);
		}
		return -1;
	}
	version = json_string_value(json_object_get(result, "protocolVersion"));
	if (!version || !tgi_mcp_version_known(version)) {
		char shown[64];
		tgi_sanitize(shown, sizeof shown, version ? version : "");
		if (version)
			tgi_snprintf(err, errlen,
			             "the server \"%s\" speaks protocol %s, which toolgate does not",
			             c->name, shown);
		else
			tgi_snprintf(err, errlen,
			             "the server \"%s\" answered initialize without a \"protocolVersion\"",
			             c->name);
		json_decref(result);
		return -1;
	}
	pthread_mutex_lock(&c->mu);
	c->init_result = result;
	tgi_snprintf(c->version, sizeof c->version, "%s", version);
	pthread_mutex_unlock(&c->mu);
	if (c->t->initialized)
		c->t->initialized(c);
	if (tgi_mcp_client_notify(c, "notifications/initialized", NULL) < 0) {
		pthread_mutex_lock(&c->mu);
		if (c->gone)
			tgi_snprintf(err, errlen, "%s", c->why);
		else
			tgi_snprintf(err, errlen,
			             "the server \"%s\" did not take notifications/initialized", c->name);
		pthread_mutex_unlock(&c->mu);
		return -1;
	}
	return 0;
}

static void client_free(tgi_mcp_client *c)
{
	json_decref(c->init_result);
	for (size_t i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
	free(c->headers);
	c->t->release(c);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->write_mu);
	free(c->url);
	free(c->name);
	free(c);
}

static tgi_mcp_client *client_new(const tgi_mcp_client_cfg *cfg, const tgi_mcp_client_handlers *h)
{
	tgi_mcp_client *c = tgi_xcalloc(1, sizeof *c);

	c->name = tgi_strdup(cfg->name && cfg->name[0] ? cfg->name : "mcp");
	c->max_message = cfg->max_message ? cfg->max_message : DEFAULT_MAX_MESSAGE;
	if (h)
		c->h = *h;
	c->to_child = c->from_child = c->err_child = c->wake[0] = c->wake[1] = -1;
	c->stderr_data = cfg->stderr_data;
	c->stderr_arg = cfg->stderr_arg;
	c->next_id = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->write_mu, NULL);
	tgi_cond_init(&c->cv);
	return c;
}

int tgi_mcp_client_open(const tgi_mcp_client_cfg *cfg, const tgi_mcp_client_handlers *h,
                        tgi_mcp_client **out, char *err, size_t errlen)
{
	tgi_mcp_client *c;
	int stdio = cfg->argv && cfg->argv[0] && cfg->argv[0][0];
	int timeout_s = cfg->init_timeout_s > 0 ? cfg->init_timeout_s : DEFAULT_INIT_TIMEOUT_S;
	int rc;

	*out = NULL;
	if (stdio == !!(cfg->url && cfg->url[0])) {
		tgi_snprintf(err, errlen, "the server \"%s\" needs either a command or a url",
		             cfg->name ? cfg->name : "mcp");
		return -1;
	}
	if (!stdio && strncasecmp(cfg->url, "http://", 7) != 0 &&
	    strncasecmp(cfg->url, "https://", 8) != 0) {
		char url[200];
		tgi_sanitize(url, sizeof url, cfg->url);
		tgi_snprintf(err, errlen, "the url \"%s\" of the server \"%s\" is not http or https",
		             url, cfg->name ? cfg->name : "mcp");
		return -1;
	}
	for (size_t i = 0; !stdio && i < cfg->nheaders; i++) {
		const char *line = cfg->headers[i];
		if (!line || strpbrk(line, "\r\n") || !strchr(line, ':')) {
			tgi_snprintf(err, errlen,
			             "header %zu of the server \"%s\" is not one \"Name: value\" line",
			             i + 1, cfg->name ? cfg->name : "mcp");
			return -1;
		}
	}
	if (!stdio && tgi_curl_load(err, errlen) < 0)
		return -1;
	c = client_new(cfg, h);
	c->t = stdio ? &tgi_mcpc_stdio : &tgi_mcpc_http;
	if (c->t->start(c, cfg, err, errlen) < 0) {
		client_free(c);
		return -1;
	}
	rc = 0;
	if (c->t->reader) {
		rc = pthread_create(&c->reader, NULL, c->t->reader, c);
		c->reader_started = rc == 0;
	}
	if (rc != 0) {
		tgi_snprintf(err, errlen, "cannot start a thread for the server \"%s\"", c->name);
		tgi_mcp_client_close(c);
		return -1;
	}
	if (initialize(c, timeout_s, err, errlen) < 0) {
		tgi_mcp_client_close(c);
		return -1;
	}

	pthread_mutex_lock(&c->mu);
	if (c->gone)
		tgi_snprintf(err, errlen, "%s", c->why);
	else
		c->opened = 1;
	rc = c->opened ? 0 : -1;
	pthread_mutex_unlock(&c->mu);
	if (rc < 0) {
		tgi_mcp_client_close(c);
		return -1;
	}
	*out = c;
	return 0;
}

void tgi_mcp_client_close(tgi_mcp_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->closing = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);

	c->t->close(c);

	/* requests still leaving, and the server's requests still being answered */
	pthread_mutex_lock(&c->mu);
	while (c->users)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	client_free(c);
}

/* ---- what initialize said ---------------------------------------------------- */

const json_t *tgi_mcp_client_capabilities(const tgi_mcp_client *c)
{
	return json_object_get(c->init_result, "capabilities");
}

const json_t *tgi_mcp_client_server_info(const tgi_mcp_client *c)
{
	return json_object_get(c->init_result, "serverInfo");
}

const char *tgi_mcp_client_version(const tgi_mcp_client *c)
{
	return c->version;
}

pid_t tgi_mcp_client_pid(const tgi_mcp_client *c)
{
	return c->t == &tgi_mcpc_stdio ? c->pid : 0;
}

int tgi_mcp_client_alive(const tgi_mcp_client *c)
{
	tgi_mcp_client *m = (tgi_mcp_client *)c; /* the lock is not part of the value */
	int alive;

	pthread_mutex_lock(&m->mu);
	alive = !m->gone && !m->closing;
	pthread_mutex_unlock(&m->mu);
	return alive;
}
