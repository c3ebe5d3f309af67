/*
 * server.c — the MCP server's methods and sessions (see server.h).
 *
 * A session is one client.  Its messages arrive through
 * tgi_mcp_session_handle on the transport's reader thread; initialize,
 * ping, tools/list and logging/setLevel are answered there, tools/call runs
 * on a call thread through tg_call, so the reader stays free for
 * cancellations and for the answers to our own requests (elicitation).
 * But where the transport allows it (tgi_mcp_session_inline: stdio), a
 * quick read-only call that can never ask anything (read_file or list_dir,
 * with no hook and no ask rule that could hold for it: see quick_read)
 * runs on the reader's thread itself: it takes a few microseconds, has
 * nobody to wait for, and costs no hand-off; its answer goes out before
 * the next line is read.
 * Call threads are kept while busy or recently idle and made when none is
 * idle (up to MAX_WORKERS; beyond, calls wait their turn), so a long call
 * never holds up a short one and a steady stream of calls makes no threads.
 * Shares: a session runs at most SESSION_THREADS calls at once, and all the
 * sessions of one principal at most mcp.max_calls_per_principal (default a
 * quarter of MAX_WORKERS), so that no client and no principal takes every
 * thread from the others.
 *
 * A call waiting for the client's answer (an approval question, a bridged
 * server's elicitation) is parked: its thread stops counting against the
 * server's, the session's and the principal's share while it waits, and a
 * queued call may take the place (a new thread is made for it); when the
 * answer comes the call counts again and goes on, on the same thread.
 * The pipeline is synchronous (the question is asked from inside the
 * approve stage, or mid-execution for a bridged tool), so the waiting
 * thread itself stays; parked threads are bounded apart (MAX_PARKED per
 * server, PRINCIPAL_PARKED per principal); past these a question waits on
 * its counted thread as any running call does.
 *
 * A call whose client is gone (the transport's probe says so) is never
 * started: no ledger row, no side effect.  One that started finishes and
 * is recorded, so that its key or call id replays it.
 *
 * One ticker thread per server sends heartbeat progress for long calls
 * whose request carried a progress token; once no such call has run for
 * a tick it sleeps until one starts (nticking, ticker_asleep), so that an
 * idle server and calls without a token cost it nothing, and a steady
 * stream of calls with one never has to wake it.
 *
 * Locks: server->mu (the session list) before session->mu (its state)
 * before server->pool_mu (the queue and the shares).  Messages about a call
 * are sent with session->mu held, so that a progress notification can
 * never follow the call's response.
 *
 * Owns: sessions, running calls, our outgoing requests and their waits.
 * Must not: decide anything the gate decides (visibility only mirrors
 * policy), or touch a descriptor.
 */
#include "mcp/server.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gate/gate.h"
#include "mcp/jsonrpc.h"
#include "mcp/result.h"
#include "mw/part.h"
#include "util/util.h"

#define MAX_CALLS        1024        /* tools/call running or waiting, per session */
#define MAX_WORKERS      256         /* call threads of one server; more calls wait */
#define SESSION_THREADS  32          /* call threads one session may hold at once */
#define PRINCIPAL_SHARE  (MAX_WORKERS / 4) /* default mcp.max_calls_per_principal */
#define MAX_PARKED       1024        /* calls parked for the client's answer, per server */
#define PRINCIPAL_PARKED 256         /* ... per principal */
#define WORKER_IDLE_S    30          /* an idle call thread ends after this */
#define DEFAULT_PAGE     100
#define DEFAULT_LINE     (16u << 20)
#define DEFAULT_ELICIT_S 300
#define DEFAULT_TICK_MS  1000

/* MCP's logging levels, in order (RFC 5424 names). */
static const char *const levels[] = {"debug",  "info",     "notice", "warning",
                                     "error",  "critical", "alert",  "emergency"};

static int level_index(const char *s)
{
	for (size_t i = 0; s && i < TGI_ARRAY_LEN(levels); i++)
		if (!strcmp(s, levels[i]))
			return (int)i;
	return -1;
}

/* One of our requests to the client, waiting for its answer. */
typedef struct outreq {
	json_int_t     id;
	json_t        *reply;   /* the whole response message, once it came */
	struct outreq *next;
} outreq;

/* One running tools/call. */
typedef struct call_run {
	tgi_mcp_session *ss;
	json_t          *id;        /* the client's request id (owned copy) */
	json_t          *token;     /* progress token (owned) or NULL */
	char            *tool;
	char            *args;      /* arguments as JSON text */
	char            *client_call_id; /* _meta: the client's id of the tool use, or NULL */
	volatile int     cancel;
	int              done;      /* the response went (under ss->mu) */
	int              own_progress; /* the tool reports progress itself: no heartbeat */
	int              dry_run;   /* _meta.dry_run: run every stage up to execute, show the plan */
	int              parked;    /* waits for the client's answer, off the shares (pool_mu) */
	int              inlined;   /* runs on the reader's thread, not a call thread */
	int              ticking;   /* counted in the server's nticking */
	int              envelope;  /* the result's _meta gets the envelope (not ss->no_envelope) */
	double           progress;  /* the last progress value sent */
	double           started_ms, next_tick_ms;
	tg_callbacks     cb;
	struct call_run *next;      /* the session's list */
	struct call_run *qnext;     /* the server's queue */
} call_run;

/* The calls of one principal's sessions (under the server's pool_mu). */
typedef struct share {
	char         *name;       /* the sessions' principal as given ("" for none) */
	int           sessions;   /* sessions that hold it */
	int           running;    /* its calls on call threads now, parked ones not counted */
	int           parked;
	struct share *next;
} share;

struct tgi_mcp_session {
	tgi_mcp_server  *s;
	share           *share;       /* its principal's (the server's pool_mu) */
	char             id[37];
	char            *principal, *token;
	tgi_mcp_send_fn  send;
	void            *arg;

	pthread_mutex_t  mu;
	pthread_cond_t   cv;          /* calls ending, answers arriving */
	int              initialized; /* initialize answered */
	char             version[16];
	int              elicit_form; /* the client declared form elicitation */
	int              elicit_url;  /* ... and URL elicitation */
	int              sampling;    /* ... and sampling */
	int              no_envelope; /* the client shows the model _meta (tgi_mcp_client_shows_meta) */
	int              min_level;   /* logging/setLevel; -1: everything */
	call_run        *calls;
	size_t           ncalls;
	size_t           nasking;     /* calls waiting for the client's answer */
	outreq          *out;
	json_int_t       next_id;
	int              closing;     /* being freed: running calls are cancelled */
	int              draining;    /* the client's input ended: no more questions to it */
	int              warned_principal;
	int              inline_ok;   /* quick reads may run on the reader's thread */
	int              running;     /* its calls on call threads now (under the server's pool_mu) */
	struct tgi_mcp_session *next; /* the server's list */
};

struct tgi_mcp_server {
	tg_gate          *g;
	tg_serve_options  o;
	tgi_approvals_via via;         /* how an ask reaches the client's user */
	char            **client_args; /* owned, NULL-terminated: arguments clients add */
	pthread_mutex_t   mu;
	tgi_mcp_session  *sessions;
	pthread_t         ticker;
	int               ticker_on, stopping;
	int               nticking;    /* calls that want heartbeats (s->mu): the ticker ticks */
	int               ticker_asleep; /* waits for nticking without a timeout (s->mu) */
	pthread_cond_t    tick_cv;
	int               reads_may_ask; /* a hook or an ask rule could stop a quick read */

	/* call threads: kept while busy or recently idle, made when none is idle */
	pthread_mutex_t   pool_mu;
	pthread_cond_t    pool_cv;     /* work queued, or a thread ended */
	call_run         *qhead, *qtail;
	int               qlen, nworkers, nidle, pool_stop;
	int               nreturning;  /* threads past their call's answer, not back at the queue */
	int               nparked;     /* threads of parked calls (in nworkers, off the limit) */
	int               max_principal; /* mcp.max_calls_per_principal */
	share            *shares;
};

/* ---- sending ---- */

/* A message's text: on the stack while it fits (most answers do), then
 * on the heap. */
typedef struct dumped {
	char  *p;
	size_t len, cap;
	int    heap;
	char   stack[4096];
} dumped;

static int dump_more(const char *buf, size_t n, void *arg)
{
	dumped *d = arg;
	if (d->cap - d->len < n) {
		size_t cap = d->cap * 2 > d->len + n ? d->cap * 2 : d->len + n;
		char *p = d->heap ? realloc(d->p, cap) : malloc(cap);
		if (!p)
			return -1;
		if (!d->heap)
			memcpy(p, d->p, d->len);
		d->p = p;
		d->cap = cap;
		d->heap = 1;
	}
	memcpy(d->p + d->len, buf, n);
	d->len += n;
	return 0;
}

/* Send msg (stolen) about request `related` (may be NULL).  What cannot
 * be encoded goes out as tgi_rpc_dump says (an internal error). */
static int send_msg(tgi_mcp_session *ss, const json_t *related, int final, json_t *msg)
{
	dumped d;
	d.p = d.stack;
	d.len = 0;
	d.cap = sizeof d.stack;
	d.heap = 0;
	int rc;
	if (msg && json_dump_callback(msg, dump_more, &d, JSON_COMPACT | JSON_ENCODE_ANY) == 0) {
		rc = ss->send(ss->arg, related, final, d.p, d.len);
	} else {
		size_t len;
		char *text = tgi_rpc_dump(msg, &len);
		rc = ss->send(ss->arg, related, final, text, len);
		free(text);
	}
	if (d.heap)
		free(d.p);
	json_decref(msg);
	return rc;
}

static void reply_error(tgi_mcp_session *ss, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_error(tgi_mcp_session *ss, json_t *id, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	send_msg(ss, id, 1, tgi_rpc_error(id, code, msg, NULL));
}

static void reply(tgi_mcp_session *ss, json_t *id, json_t *result)
{
	send_msg(ss, id, 1, tgi_rpc_result(id, result));
}

/* ---- our requests to the client ---- */

/*
 * Send method(params) to the client and wait for the answer, with ss->mu
 * held (the wait releases it).  Gives up when the session closes, *cancel
 * becomes set (may be NULL) or timeout_s passes.  Returns the response
 * message (new reference) or NULL with a phrase in why.
 */
static void park(call_run *cr);
static void unpark(call_run *cr);

static json_t *ask_client(tgi_mcp_session *ss, call_run *cr, const char *method, json_t *params,
                          int timeout_s, char *why, size_t cap)
{
	const json_t *related = cr->id;
	volatile int *cancel = &cr->cancel;
	outreq r = {.id = ++ss->next_id};
	r.next = ss->out;
	ss->out = &r;
	ss->nasking++;
	pthread_cond_broadcast(&ss->cv);   /* a reader held back may read the answer */
	json_t *id = json_integer(r.id);
	if (send_msg(ss, related, 0, tgi_rpc_request(id, method, params)) < 0) {
		tgi_snprintf(why, cap, "the client is gone");
	} else {
		double until = tgi_now_ms() + timeout_s * 1000.0;
		park(cr);                      /* its thread off the shares while it waits */
		while (!r.reply && !ss->closing && !ss->draining && !tgi_flag_get(cancel)) {
			double left = until - tgi_now_ms();
			if (left <= 0)
				break;
			long step = left < 200 ? (long)left + 1 : 200; /* look at cancel often */
			tgi_cond_wait_ms(&ss->cv, &ss->mu, step);
		}
		unpark(cr);
		if (!r.reply)
			tgi_snprintf(why, cap, "%s",
			             ss->closing || ss->draining ? "the session ended"
			             : tgi_flag_get(cancel)       ? "the client cancelled the call"
			                                       : "no answer came in time");
		if (!r.reply && !ss->closing && !ss->draining)
			send_msg(ss, related, 0,
			         tgi_rpc_notification("notifications/cancelled",
			                              json_pack("{s:O, s:s}", "requestId", id, "reason",
			                                        why)));
	}
	json_decref(id);
	for (outreq **p = &ss->out; *p; p = &(*p)->next)
		if (*p == &r) {
			*p = r.next;
			break;
		}
	ss->nasking--;
	return r.reply;
}

/* ---- callbacks of a running call (tg_callbacks) ---- */

static void cb_progress(void *arg, double progress, double total, const char *message)
{
	call_run *cr = arg;
	tgi_mcp_session *ss = cr->ss;
	pthread_mutex_lock(&ss->mu);
	cr->own_progress = 1;
	if (cr->token && !cr->done && progress > cr->progress) {
		cr->progress = progress;
		json_t *p = json_pack("{s:O, s:f}", "progressToken", cr->token, "progress", progress);
		if (total >= 0)
			json_object_set_new(p, "total", json_real(total));
		if (message)
			json_object_set_new(p, "message", json_string(message));
		send_msg(ss, cr->id, 0, tgi_rpc_notification("notifications/progress", p));
	}
	pthread_mutex_unlock(&ss->mu);
}

static void cb_log(void *arg, const char *level, const char *logger, const char *data)
{
	call_run *cr = arg;
	tgi_mcp_session *ss = cr->ss;
	int li = level_index(level);
	json_t *d = data ? json_loads(data, JSON_DECODE_ANY, NULL) : NULL;
	pthread_mutex_lock(&ss->mu);
	if (!cr->done && li >= 0 && li >= ss->min_level) {
		json_t *p = json_pack("{s:s, s:o}", "level", levels[li], "data", d ? d : json_null());
		d = NULL;
		if (logger)
			json_object_set_new(p, "logger", json_string(logger));
		send_msg(ss, cr->id, 0, tgi_rpc_notification("notifications/message", p));
	}
	pthread_mutex_unlock(&ss->mu);
	json_decref(d);
}

/*
 * An ask, put to the client's user the way approvals.via says: 1 approve,
 * 0 deny (reason says why), -1 the queue (pending, approved with `toolgate
 * approvals approve ID`).
 *   queue        the queue, never a question
 *   elicitation  a question; anything but accept denies
 *   both         a question; decline denies; cancel, an error or no answer
 *                in time queues (a client that answers for nobody, such as
 *                a headless run, leaves the decision to the owner)
 * Whatever the route, a client without form elicitation and a session that
 * holds a token (a program acting for a principal, which must not approve
 * its own asks) get the queue.  The form asks for nothing but an optional
 * reason: Accept approves, Decline refuses; the reason is recorded.
 */
static int cb_approve(void *arg, const char *tool, const char *args, const char *rule,
                      char *reason, size_t cap)
{
	call_run *cr = arg;
	tgi_mcp_session *ss = cr->ss;
	const tg_serve_options *o = &ss->s->o;
	tgi_approvals_via via = ss->s->via;
	pthread_mutex_lock(&ss->mu);
	if (via == TGI_VIA_QUEUE || !ss->elicit_form || (ss->token && *ss->token)) {
		pthread_mutex_unlock(&ss->mu);
		return -1;
	}
	char msg[2048];
	tgi_snprintf(msg, sizeof msg,
	             "toolgate: a tool call needs your approval (%s).\n\nTool: %s\nArguments: %s\n\n"
	             "Accept runs this call once, with exactly these arguments; Decline refuses it.",
	             rule, tool, args);
	json_t *params = json_pack(
	    "{s:s, s:s, s:{s:s, s:{s:{s:s, s:s, s:s, s:i}}}}", "mode", "form", "message", msg,
	    "requestedSchema", "type", "object", "properties", "reason", "type", "string", "title",
	    "Reason (optional)", "description", "Why you allow or refuse this call; kept in the "
	    "gate's ledger", "maxLength", 200);
	int timeout = o->elicit_timeout_s > 0 ? o->elicit_timeout_s : DEFAULT_ELICIT_S;
	json_t *rep = ask_client(ss, cr, "elicitation/create", params, timeout, reason, cap);
	/* no answer: the call or the session ended (deny), or time ran out */
	int unanswered = !rep && !tgi_flag_get(&cr->cancel) && !ss->closing && !ss->draining;
	pthread_mutex_unlock(&ss->mu);
	if (!rep)
		return unanswered && via == TGI_VIA_BOTH ? -1 : 0;

	int yes = 0;
	json_t *res = json_object_get(rep, "result");
	const char *action = json_string_value(json_object_get(res, "action"));
	const char *why = json_string_value(json_object_get(json_object_get(res, "content"), "reason"));
	if (!res) {
		const char *m = json_string_value(json_object_get(json_object_get(rep, "error"), "message"));
		tgi_snprintf(reason, cap, "the client could not ask: %s", m ? m : "an error");
		yes = via == TGI_VIA_BOTH ? -1 : 0;
	} else if (action && !strcmp(action, "accept")) {
		yes = 1;
		tgi_snprintf(reason, cap, "%s", why ? why : "");
	} else if (action && !strcmp(action, "decline")) {
		tgi_snprintf(reason, cap, "the user declined%s%s", why ? ": " : "", why ? why : "");
	} else if (action && !strcmp(action, "cancel")) {
		tgi_snprintf(reason, cap, "the user cancelled the question");
		yes = via == TGI_VIA_BOTH ? -1 : 0;
	} else {
		tgi_snprintf(reason, cap, "the client answered neither accept, decline nor cancel");
	}
	json_decref(rep);
	return yes;
}

/* A bridged server's request, relayed to this call's client. */
static int cb_request(void *arg, const char *method, const char *params, char **result,
                      char **error)
{
	call_run *cr = arg;
	tgi_mcp_session *ss = cr->ss;
	char why[256];
	*result = *error = NULL;
	pthread_mutex_lock(&ss->mu);
	int able = !strcmp(method, "elicitation/create")          ? ss->elicit_form
	           : !strcmp(method, "sampling/createMessage")    ? ss->sampling
	                                                          : 0;
	if (!able) {
		pthread_mutex_unlock(&ss->mu);
		json_t *e = json_pack("{s:i, s:s}", "code", TGI_RPC_METHOD_NOT_FOUND, "message",
		                      "the client of this call does not offer this method");
		*error = json_dumps(e, JSON_COMPACT);
		json_decref(e);
		return -1;
	}
	json_t *p = params ? json_loads(params, 0, NULL) : NULL;
	const char *mode = json_string_value(json_object_get(p, "mode"));
	if (!strcmp(method, "elicitation/create") && mode && strcmp(mode, "form") &&
	    !(ss->elicit_url && !strcmp(mode, "url"))) {
		pthread_mutex_unlock(&ss->mu);
		json_decref(p);
		json_t *e = json_pack("{s:i, s:s}", "code", TGI_RPC_METHOD_NOT_FOUND, "message",
		                      "the client of this call does not offer this elicitation mode");
		*error = json_dumps(e, JSON_COMPACT);
		json_decref(e);
		return -1;
	}
	int timeout = ss->s->o.elicit_timeout_s > 0 ? ss->s->o.elicit_timeout_s : DEFAULT_ELICIT_S;
	json_t *rep = ask_client(ss, cr, method, p ? p : json_object(), timeout, why, sizeof why);
	pthread_mutex_unlock(&ss->mu);
	json_t *res = json_object_get(rep, "result");
	json_t *err = json_object_get(rep, "error");
	if (res) {
		*result = json_dumps(res, JSON_COMPACT);
	} else {
		json_t *e = err ? json_incref(err)
		                : json_pack("{s:i, s:s}", "code", TGI_RPC_REQUEST_TIMEOUT, "message", why);
		*error = json_dumps(e, JSON_COMPACT);
		json_decref(e);
	}
	json_decref(rep);
	return res ? 0 : -1;
}

/* ---- tools/list ---- */

static json_t *mcp_tool(const tgi_entry *e)
{
	json_t *def = tgi_tool_def(e);
	json_t *t = json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(def, "name"), "title",
	                      json_object_get(def, "title"), "description",
	                      json_object_get(def, "description"), "inputSchema",
	                      json_object_get(def, "input_schema"));
	json_t *ann = json_deep_copy(json_object_get(def, "annotations"));
	json_object_set(ann, "title", json_object_get(def, "title"));
	json_object_set_new(t, "annotations", ann);
	/* what structuredContent holds: the tool's output, or the status object
	 * (clients check it against this schema, on errors too) */
	json_t *os = tgi_mcp_output_schema(e);
	if (os)
		json_object_set_new(t, "outputSchema", os);
	json_decref(def);
	return t;
}

static void tools_list(tgi_mcp_session *ss, json_t *id, json_t *params)
{
	tgi_mcp_server *s = ss->s;
	tg_gate *g = s->g;
	size_t page = s->o.page_size ? s->o.page_size : DEFAULT_PAGE;
	size_t start = 0;
	json_t *cur = json_object_get(params, "cursor");
	if (cur) {
		const char *cs = json_string_value(cur);
		char *end;
		unsigned long long v = cs && !strncmp(cs, "tg1:", 4) ? strtoull(cs + 4, &end, 10) : 0;
		if (!cs || strncmp(cs, "tg1:", 4) || *end || end == cs + 4) {
			reply_error(ss, id, TGI_RPC_INVALID_PARAMS,
			            "the cursor is not one this server gave out");
			return;
		}
		start = (size_t)v;
	}
	const tgi_principal_cfg *p = tgi_principal_of(g, ss->principal, ss->token);
	if (p)
		tgi_registry_need_all(g->reg); /* a listing: every server's tools are in it */
	json_t *tools = json_array();
	size_t seen = 0, i = 0;
	const tgi_entry *e;
	int more = 0;
	/* fail closed: an unknown principal is offered nothing */
	for (; p && (e = tgi_registry_at(g->reg, i)); i++) {
		if (tgi_registry_in_profile(g->cfg, g->profile, e) != 1 ||
		    tgi_registry_available(g->reg, e, NULL, 0) != 1 ||
		    (g->cfg->hide_denied && tgi_tool_hidden(g, p, e)))
			continue;
		if (seen++ < start)
			continue;
		if (json_array_size(tools) == page) {
			more = 1;
			break;
		}
		json_array_append_new(tools, mcp_tool(e));
	}
	if (!p) {
		pthread_mutex_lock(&ss->mu);
		int warn = !ss->warned_principal;
		ss->warned_principal = 1;
		pthread_mutex_unlock(&ss->mu);
		if (warn)
			fprintf(stderr, "toolgate: the principal of this MCP session is unknown or its "
			                "token is wrong; it is offered no tools\n");
	}
	json_t *res = json_pack("{s:o}", "tools", tools);
	if (more) {
		char next[32];
		tgi_snprintf(next, sizeof next, "tg1:%zu", start + page);
		json_object_set_new(res, "nextCursor", json_string(next));
	}
	reply(ss, id, res);
}

/* ---- tools/call ---- */

/* Take cr off its session's list (ss->mu held) and wake whoever waits
 * for calls to end. */
static void call_unlink(tgi_mcp_session *ss, call_run *cr)
{
	for (call_run **p = &ss->calls; *p; p = &(*p)->next)
		if (*p == cr) {
			*p = cr->next;
			break;
		}
	ss->ncalls--;
	pthread_cond_broadcast(&ss->cv);
}

/*
 * The call id a request id becomes (with the session, the idempotency
 * scope of a side-effecting call): distinct ids never give the same one.
 * "mcp-7" for an integer; "mcp-s:abc" for a short printable string;
 * "mcp-h:<sha256>" for any other string.
 */
static void call_id_of(const json_t *id, char *out, size_t cap)
{
	if (json_is_integer(id)) {
		tgi_snprintf(out, cap, "mcp-%" JSON_INTEGER_FORMAT, json_integer_value(id));
		return;
	}
	const char *v = json_string_value(id);
	size_t n = json_string_length(id);
	int plain = n > 0 && n <= 64;
	for (size_t i = 0; plain && i < n; i++)
		plain = v[i] > 0x20 && v[i] < 0x7f;
	if (plain) {
		tgi_snprintf(out, cap, "mcp-s:%s", v);
	} else {
		char h[65];
		tgi_sha256_hex(v, n, h);
		tgi_snprintf(out, cap, "mcp-h:%s", h);
	}
}

static void run_call(call_run *cr)
{
	tgi_mcp_session *ss = cr->ss;
	tg_gate *g = ss->s->g;
	char call_id[80];
	call_id_of(cr->id, call_id, sizeof call_id);
	tg_request req = {
		.tool = cr->tool,
		.args = cr->args,
		.call_id = call_id,
		.session = ss->id,
		.principal = ss->principal,
		.token = ss->token,
		.cancel = &cr->cancel,
		.cb = &cr->cb,
		.dry_run = cr->dry_run,
		.client_call_id = cr->client_call_id,
		.client_args = (const char *const *)ss->s->client_args,
	};
	tg_result *res = NULL;
	json_t *result = NULL;
	/* never start a call whose answer has nowhere to go: once the client
	 * is gone (the transport's probe), a call not yet started never is */
	int gone = ss->send(ss->arg, cr->id, 0, NULL, 0) < 0;
	if (!gone) {
		tg_call(g, &req, &res);
		result = tgi_mcp_result(tgi_registry_find(g->reg, cr->tool),
		                        tgi_result_envelope(res), cr->envelope);
	}

	/* its thread is free for the session's next call (the session lives
	 * on: this call still counts in ncalls); an inlined call held none */
	if (!cr->inlined) {
		pthread_mutex_lock(&ss->s->pool_mu);
		ss->running--;
		ss->share->running--;
		ss->s->nreturning++;           /* it looks at the queue before it waits */
		pthread_cond_broadcast(&ss->s->pool_cv);
		pthread_mutex_unlock(&ss->s->pool_mu);
	}
	if (cr->ticking) {
		pthread_mutex_lock(&ss->s->mu);
		ss->s->nticking--;
		pthread_mutex_unlock(&ss->s->mu);
	}

	pthread_mutex_lock(&ss->mu);
	cr->done = 1;
	if (gone || tgi_flag_get(&cr->cancel)) {
		json_decref(result);            /* MCP: a cancelled request gets no response */
		ss->send(ss->arg, cr->id, 1, NULL, 0);
	} else {
		reply(ss, cr->id, result);
	}
	call_unlink(ss, cr);
	pthread_mutex_unlock(&ss->mu);

	tg_result_free(res);
	json_decref(cr->id);
	json_decref(cr->token);
	free(cr->tool);
	free(cr->args);
	free(cr->client_call_id);
	free(cr);
}

/* May cr run now?  Its session holds fewer than SESSION_THREADS threads
 * and its principal fewer than its share (pool_mu held). */
static int eligible(const tgi_mcp_server *s, const call_run *cr)
{
	return cr->ss->running < SESSION_THREADS && cr->ss->share->running < s->max_principal;
}

/* The link to the first queued call that may run now (*result NULL when
 * there is none), so that one session's or one principal's long calls never
 * take every thread from the others. */
static call_run **next_eligible(tgi_mcp_server *s)
{
	call_run **at = &s->qhead;
	while (*at && !eligible(s, *at))
		at = &(*at)->qnext;
	return at;
}

static void *worker_main(void *arg);

/* Make one more call thread, if the limit allows (pool_mu held): 0, or an
 * errno.  Threads of parked calls do not count. */
static int spawn_locked(tgi_mcp_server *s)
{
	if (s->nworkers - s->nparked >= MAX_WORKERS)
		return EAGAIN;
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &at, worker_main, s);
	pthread_attr_destroy(&at);
	if (rc == 0)
		s->nworkers++;
	return rc;
}

/*
 * Park cr while it waits for the client's answer (its session's mu held):
 * its thread stops counting against the shares, and a queued call that may
 * now run gets an idle thread or a new one.  Past MAX_PARKED or its
 * principal's PRINCIPAL_PARKED, cr waits counted, as any running call.
 */
static void park(call_run *cr)
{
	tgi_mcp_server *s = cr->ss->s;
	share *sh = cr->ss->share;
	pthread_mutex_lock(&s->pool_mu);
	if (!cr->parked && s->nparked < MAX_PARKED && sh->parked < PRINCIPAL_PARKED) {
		cr->parked = 1;
		s->nparked++;
		sh->parked++;
		cr->ss->running--;
		sh->running--;
		if (*next_eligible(s)) {
			if (s->nidle > 0)
				pthread_cond_broadcast(&s->pool_cv);
			else
				spawn_locked(s);     /* none made: a running call's thread takes it later */
		}
	}
	pthread_mutex_unlock(&s->pool_mu);
}

/* The answer came (or the wait ended): cr counts again and goes on at once
 * (its session or principal may be over its share for as long: the calls
 * queued behind wait for it). */
static void unpark(call_run *cr)
{
	tgi_mcp_server *s = cr->ss->s;
	pthread_mutex_lock(&s->pool_mu);
	if (cr->parked) {
		cr->parked = 0;
		s->nparked--;
		cr->ss->share->parked--;
		cr->ss->running++;
		cr->ss->share->running++;
	}
	pthread_mutex_unlock(&s->pool_mu);
}

/* A call thread: runs queued calls; ends when idle too long or stopping. */
static void *worker_main(void *arg)
{
	tgi_mcp_server *s = arg;
	pthread_mutex_lock(&s->pool_mu);
	for (;;) {
		call_run **at;
		while (!*(at = next_eligible(s)) && !s->pool_stop) {
			s->nidle++;
			int rc = tgi_cond_wait_ms(&s->pool_cv, &s->pool_mu, WORKER_IDLE_S * 1000L);
			s->nidle--;
			if (rc == ETIMEDOUT && !s->qhead)
				break;
		}
		/* look again: the link found before a wait may be gone with its call */
		call_run *cr = *(at = next_eligible(s));
		if (!cr)
			break;
		*at = cr->qnext;
		if (s->qtail == cr) {
			s->qtail = NULL;
			for (call_run *q = s->qhead; q; q = q->qnext)
				s->qtail = q;
		}
		s->qlen--;
		cr->ss->running++;
		cr->ss->share->running++;
		pthread_mutex_unlock(&s->pool_mu);
		run_call(cr);
		pthread_mutex_lock(&s->pool_mu);
		s->nreturning--;
	}
	s->nworkers--;
	pthread_cond_broadcast(&s->pool_cv);
	pthread_mutex_unlock(&s->pool_mu);
	return NULL;
}

/* Queue cr for a call thread, making one when none is idle.  0, or an
 * errno when no thread could take it. */
static int submit(tgi_mcp_server *s, call_run *cr)
{
	int rc = 0;
	pthread_mutex_lock(&s->pool_mu);
	/* every idle thread (and every thread on its way back from a call: the
	 * client may send the next call as soon as it has the answer) may
	 * already be promised to a queued call; a call of a session or
	 * principal at its share waits for one of their threads */
	if (eligible(s, cr) && s->nidle + s->nreturning <= s->qlen &&
	    s->nworkers - s->nparked < MAX_WORKERS) {
		rc = spawn_locked(s);
		if (rc != 0 && s->nworkers > 0)
			rc = 0;           /* a busy thread takes it when it is free */
	}
	if (rc == 0) {
		cr->qnext = NULL;
		if (s->qtail)
			s->qtail->qnext = cr;
		else
			s->qhead = cr;
		s->qtail = cr;
		s->qlen++;
	}
	pthread_mutex_unlock(&s->pool_mu);
	/* woken after the unlock, a thread finds the lock free rather than
	 * waking only to wait for it */
	if (rc == 0)
		pthread_cond_signal(&s->pool_cv);
	return rc;
}

/*
 * May a call of e run on the reader's thread?  Only a built-in read that
 * ends in microseconds (read_file: a regular file, capped; list_dir: one
 * directory, capped) and that nothing can turn into a question to the
 * client: a read-only tool is allowed by every mode's default, so only an
 * ask rule (its own, or read_file's, which every read-only file tool
 * borrows) or a before-hook could ask (decide.c); neither exists when
 * reads_may_ask is 0.  No bridged tool (its server may ask the client),
 * no command (it may take any time).
 */
static int quick_read(const tgi_mcp_server *s, const tgi_entry *e)
{
	return e && (e->row == &tgi_tool_read_file || e->row == &tgi_tool_list_dir) &&
	       !s->reads_may_ask;
}

/* Could a hook or an ask rule hold for a quick read (read_file, list_dir)? */
static int reads_may_ask(tg_gate *g)
{
	for (size_t i = 0; tgi_parts[i]; i++)
		if (!strcmp(tgi_parts[i]->name, "hooks") && g->part_on[i])
			return 1;
	const char *const reads[] = {tgi_tool_read_file.name, tgi_tool_list_dir.name};
	for (size_t k = 0; k < TGI_ARRAY_LEN(reads); k++) {
		if (tgi_ruleset_names(g->rules, TGI_RULE_ASK, reads[k], 0))
			return 1;
		for (size_t j = 0; j < g->cfg->nroles; j++)
			if (tgi_ruleset_names(g->role_rules[j], TGI_RULE_ASK, reads[k], 0))
				return 1;
	}
	return 0;
}

static void tools_call(tgi_mcp_session *ss, json_t *id, json_t *params)
{
	json_t *name = json_object_get(params, "name");
	json_t *args = json_object_get(params, "arguments");
	json_t *meta = json_object_get(params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	json_t *dry = json_object_get(meta, "dry_run");
	if (!json_is_string(name)) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS, "tools/call needs \"name\", a string");
		return;
	}
	if (args && !json_is_object(args) && !json_is_null(args)) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS,
		            "tools/call \"arguments\" must be an object");
		return;
	}
	if (token && !json_is_string(token) && !json_is_integer(token)) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS,
		            "_meta.progressToken must be a string or an integer");
		return;
	}
	if (dry && !json_is_boolean(dry)) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS, "_meta.dry_run must be true or false");
		return;
	}
	call_run *cr = tgi_xcalloc(1, sizeof *cr);
	cr->ss = ss;
	cr->id = json_deep_copy(id);
	cr->token = token ? json_deep_copy(token) : NULL;
	cr->progress = -1;            /* a first progress of 0 is sent too */
	cr->dry_run = json_is_true(dry);
	cr->tool = tgi_strdup(json_string_value(name));
	/* the client's id of the tool use: Claude Code's, else Codex's; one that is
	 * not a string is ignored (the gate cleans and caps the string) */
	json_t *cid = json_object_get(meta, "claudecode/toolUseId");
	if (!json_is_string(cid))
		cid = json_object_get(meta, "callId");
	cr->client_call_id = json_is_string(cid) ? tgi_strdup(json_string_value(cid)) : NULL;
	cr->args = json_is_object(args) ? json_dumps(args, JSON_COMPACT) : tgi_strdup("{}");
	cr->cb = (tg_callbacks){.arg = cr, .progress = cb_progress, .log = cb_log,
	                        .approve = cb_approve, .request = cb_request};
	int tick = ss->s->o.progress_ms > 0 ? ss->s->o.progress_ms : DEFAULT_TICK_MS;
	/* a bridged tool reports its server's own progress: no heartbeat mixed in */
	const tgi_entry *e = tgi_registry_need(ss->s->g->reg, cr->tool);
	cr->own_progress = e && e->row->mcp_result;
	cr->started_ms = tgi_now_ms();
	cr->next_tick_ms = cr->started_ms + tick;
	if (cr->token && !cr->own_progress) {
		tgi_mcp_server *s = ss->s;
		pthread_mutex_lock(&s->mu);       /* the ticker wakes for it, if asleep */
		s->nticking++;
		if (s->ticker_asleep) {
			s->ticker_asleep = 0;
			pthread_cond_signal(&s->tick_cv);
		}
		pthread_mutex_unlock(&s->mu);
		cr->ticking = 1;
	}
	cr->inlined = ss->inline_ok && quick_read(ss->s, e);

	pthread_mutex_lock(&ss->mu);
	/* back-pressure: with MAX_CALLS in flight the reader waits for one to end,
	 * unless a call waits for the client: its answer may be the next line,
	 * and the calls queued behind it cannot run before it ends */
	while (ss->ncalls >= MAX_CALLS && !ss->nasking && !ss->closing)
		pthread_cond_wait(&ss->cv, &ss->mu);
	if (ss->ncalls >= MAX_CALLS || ss->closing) {
		pthread_mutex_unlock(&ss->mu);
		reply_error(ss, id, TGI_RPC_INTERNAL_ERROR,
		            "%d calls are in flight in this session and some wait for your answers; "
		            "answer them before sending more", MAX_CALLS);
		goto drop;
	}
	cr->envelope = !ss->no_envelope;
	cr->next = ss->calls;
	ss->calls = cr;
	ss->ncalls++;
	pthread_mutex_unlock(&ss->mu);
	if (cr->inlined) {
		run_call(cr);                 /* here and now: it answers, and frees cr */
		return;
	}
	int rc = submit(ss->s, cr);
	if (rc != 0) {
		pthread_mutex_lock(&ss->mu);
		call_unlink(ss, cr);
		pthread_mutex_unlock(&ss->mu);
		reply_error(ss, id, TGI_RPC_INTERNAL_ERROR, "the server could not start the call: %s",
		            strerror(rc));
		goto drop;
	}
	return;
drop:
	if (cr->ticking) {
		pthread_mutex_lock(&ss->s->mu);
		ss->s->nticking--;
		pthread_mutex_unlock(&ss->s->mu);
	}
	json_decref(cr->id);
	json_decref(cr->token);
	free(cr->tool);
	free(cr->args);
	free(cr->client_call_id);
	free(cr);
}

/* ---- the other methods ---- */

static void initialize(tgi_mcp_session *ss, json_t *id, json_t *params)
{
	const char *want = json_string_value(json_object_get(params, "protocolVersion"));
	json_t *caps = json_object_get(params, "capabilities");
	if (!want || (caps && !json_is_object(caps))) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS,
		            "initialize needs \"protocolVersion\", a string, and \"capabilities\", an "
		            "object");
		return;
	}
	json_t *el = json_object_get(caps, "elicitation");
	pthread_mutex_lock(&ss->mu);
	if (ss->initialized) {
		pthread_mutex_unlock(&ss->mu);
		reply_error(ss, id, TGI_RPC_INVALID_REQUEST, "this session is already initialized");
		return;
	}
	tgi_snprintf(ss->version, sizeof ss->version, "%s",
	             tgi_mcp_version_known(want) ? want : tgi_mcp_versions[0]);
	/* {} (the older form) or {form: {}}: form mode; {url: {}} alone is not */
	ss->elicit_form = json_is_object(el) &&
	                  (json_object_size(el) == 0 || json_object_get(el, "form"));
	ss->elicit_url = json_is_object(el) && json_object_get(el, "url");
	ss->no_envelope = tgi_mcp_client_shows_meta(
	    json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name")));
	ss->sampling = json_is_object(json_object_get(caps, "sampling"));
	ss->initialized = 1;
	pthread_mutex_unlock(&ss->mu);

	reply(ss, id,
	      json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
	                ss->version, "capabilities", "tools", "listChanged", 1, "logging",
	                "serverInfo", "name", "toolgate", "title", "toolgate", "version",
	                tg_version(), "instructions",
	                "Every tool call here passes toolgate's policy: a denied call says why and "
	                "should not be retried unchanged; a pending one waits for the owner's "
	                "approval."));
}

static void set_level(tgi_mcp_session *ss, json_t *id, json_t *params)
{
	int li = level_index(json_string_value(json_object_get(params, "level")));
	if (li < 0) {
		reply_error(ss, id, TGI_RPC_INVALID_PARAMS,
		            "\"level\" must be one of debug, info, notice, warning, error, critical, "
		            "alert, emergency");
		return;
	}
	pthread_mutex_lock(&ss->mu);
	ss->min_level = li;
	pthread_mutex_unlock(&ss->mu);
	reply(ss, id, json_object());
}

static void cancelled(tgi_mcp_session *ss, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");
	pthread_mutex_lock(&ss->mu);
	for (call_run *cr = ss->calls; cr; cr = cr->next)
		if (tgi_rpc_id_equal(cr->id, rid))
			tgi_flag_set(&cr->cancel);
	pthread_cond_broadcast(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
}

/* A response (or error) to one of our requests. */
static void answered(tgi_mcp_session *ss, tgi_rpc_msg *m)
{
	if (!json_is_integer(m->id))
		return;
	pthread_mutex_lock(&ss->mu);
	for (outreq *r = ss->out; r; r = r->next)
		if (r->id == json_integer_value(m->id) && !r->reply) {
			r->reply = json_deep_copy(m->root); /* jansson counts references without atomics */
			pthread_cond_broadcast(&ss->cv);
			break;
		}
	pthread_mutex_unlock(&ss->mu);
}

int tgi_mcp_session_handle(tgi_mcp_session *ss, const char *text, size_t len)
{
	tgi_rpc_msg m;
	json_t *bad = NULL;
	tgi_rpc_parse(text, len, &m, &bad);
	int kind = m.kind;
	if (kind == TGI_RPC_BAD) {
		send_msg(ss, NULL, 1, bad);
	} else if (kind == TGI_RPC_RESPONSE || kind == TGI_RPC_ERROR_REPLY) {
		answered(ss, &m);
	} else if (kind == TGI_RPC_NOTIFICATION) {
		if (!strcmp(m.method, "notifications/cancelled"))
			cancelled(ss, m.params);
		/* notifications/initialized, progress, roots changes: nothing to do */
	} else if (!strcmp(m.method, "initialize")) {
		initialize(ss, m.id, m.params);
	} else if (!strcmp(m.method, "ping")) {
		reply(ss, m.id, json_object());
	} else if (!tgi_mcp_session_initialized(ss)) {
		reply_error(ss, m.id, TGI_RPC_INVALID_REQUEST,
		            "this session is not initialized; send initialize first");
	} else if (!strcmp(m.method, "tools/list")) {
		tools_list(ss, m.id, m.params);
	} else if (!strcmp(m.method, "tools/call")) {
		tools_call(ss, m.id, m.params);
	} else if (!strcmp(m.method, "logging/setLevel")) {
		set_level(ss, m.id, m.params);
	} else {
		char shown[96];
		tgi_sanitize(shown, sizeof shown, m.method);
		reply_error(ss, m.id, TGI_RPC_METHOD_NOT_FOUND, "method not found: %s", shown);
	}
	tgi_rpc_msg_free(&m);
	return kind;
}

/* ---- heartbeat progress ---- */

static void tick_session(tgi_mcp_session *ss, double now, int tick)
{
	pthread_mutex_lock(&ss->mu);
	for (call_run *cr = ss->calls; cr; cr = cr->next) {
		if (!cr->token || cr->done || cr->own_progress || now < cr->next_tick_ms)
			continue;
		cr->next_tick_ms = now + tick;
		cr->progress = cr->progress < 0 ? 1 : cr->progress + 1;
		char msg[200];
		tgi_snprintf(msg, sizeof msg, "%.64s has been running for %.0f s", cr->tool,
		             (now - cr->started_ms) / 1000.0);
		send_msg(ss, cr->id, 0,
		         tgi_rpc_notification("notifications/progress",
		                              json_pack("{s:O, s:f, s:s}", "progressToken", cr->token,
		                                        "progress", cr->progress, "message", msg)));
	}
	pthread_mutex_unlock(&ss->mu);
}

static void *ticker_main(void *arg)
{
	tgi_mcp_server *s = arg;
	int tick = s->o.progress_ms > 0 ? s->o.progress_ms : DEFAULT_TICK_MS;
	int step = tick < 100 ? tick : 100;
	double quiet_since = -1;            /* no call wanted heartbeats since then */
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		double now = tgi_now_ms();
		if (s->nticking)
			quiet_since = -1;
		else if (quiet_since < 0)
			quiet_since = now;
		else if (now - quiet_since >= tick) {  /* quiet for a tick: sleep till a call comes */
			s->ticker_asleep = 1;
			while (s->ticker_asleep && !s->stopping)
				pthread_cond_wait(&s->tick_cv, &s->mu);
			quiet_since = -1;
			continue;
		}
		for (tgi_mcp_session *ss = s->sessions; ss; ss = ss->next)
			tick_session(ss, now, tick);
		tgi_cond_wait_ms(&s->tick_cv, &s->mu, step);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- server and sessions ---- */

/*
 * Arguments MCP clients are known to add to every call on their own, which
 * no tool asked for (tg_request.client_args removes them where the tool's
 * schema does not declare them).  Gemini CLI adds wait_for_previous to
 * every tool's schema and passes it on (it orders parallel calls with it).
 * None found for Claude Code or Codex.  The configuration adds more
 * (mcp.strip_client_args).
 */
static const char *const builtin_client_args[] = {"wait_for_previous"};

static void client_args_build(tgi_mcp_server *s)
{
	const tgi_strv *more = &s->g->cfg->mcp_strip_args;
	size_t n = 0, cap = TGI_ARRAY_LEN(builtin_client_args) + more->n + 1;
	s->client_args = tgi_xcalloc(cap, sizeof *s->client_args);
	for (size_t i = 0; i < cap - 1; i++) {
		const char *a = i < TGI_ARRAY_LEN(builtin_client_args)
		                    ? builtin_client_args[i]
		                    : more->v[i - TGI_ARRAY_LEN(builtin_client_args)];
		size_t k = 0;
		while (k < n && strcmp(s->client_args[k], a))
			k++;
		if (k == n)
			s->client_args[n++] = tgi_strdup(a);
	}
}

tgi_mcp_server *tgi_mcp_server_new(tg_gate *g, const tg_serve_options *o)
{
	tgi_mcp_server *s = tgi_xcalloc(1, sizeof *s);
	s->g = g;
	s->o = *o;
	s->via = g->cfg->approvals_via;
	if (o->approvals_via && tgi_approvals_via_parse(o->approvals_via, &s->via) < 0)
		s->via = g->cfg->approvals_via;       /* tg_serve refuses it first */
	client_args_build(s);
	s->max_principal = g->cfg->mcp_max_calls_per_principal > 0
	                       ? g->cfg->mcp_max_calls_per_principal : PRINCIPAL_SHARE;
	s->reads_may_ask = reads_may_ask(g);
	pthread_mutex_init(&s->mu, NULL);
	tgi_cond_init(&s->tick_cv);
	pthread_mutex_init(&s->pool_mu, NULL);
	tgi_cond_init(&s->pool_cv);
	s->ticker_on = pthread_create(&s->ticker, NULL, ticker_main, s) == 0;
	return s;
}

void tgi_mcp_server_free(tgi_mcp_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	s->ticker_asleep = 0;
	pthread_cond_broadcast(&s->tick_cv);
	pthread_mutex_unlock(&s->mu);
	if (s->ticker_on)
		pthread_join(s->ticker, NULL);
	/* every session is gone, so no call is queued or running: let the idle
	 * threads go and wait for the last */
	pthread_mutex_lock(&s->pool_mu);
	s->pool_stop = 1;
	pthread_cond_broadcast(&s->pool_cv);
	while (s->nworkers)
		pthread_cond_wait(&s->pool_cv, &s->pool_mu);
	pthread_mutex_unlock(&s->pool_mu);
	pthread_cond_destroy(&s->pool_cv);
	pthread_mutex_destroy(&s->pool_mu);
	pthread_cond_destroy(&s->tick_cv);
	pthread_mutex_destroy(&s->mu);
	for (size_t i = 0; s->client_args[i]; i++)
		free(s->client_args[i]);
	free(s->client_args);
	free(s);
}

tg_gate *tgi_mcp_server_gate(tgi_mcp_server *s)
{
	return s->g;
}

const tg_serve_options *tgi_mcp_server_options(const tgi_mcp_server *s)
{
	return &s->o;
}

void tgi_mcp_server_list_changed(tgi_mcp_server *s)
{
	pthread_mutex_lock(&s->mu);
	for (tgi_mcp_session *ss = s->sessions; ss; ss = ss->next) {
		pthread_mutex_lock(&ss->mu);
		if (ss->initialized && !ss->closing)
			send_msg(ss, NULL, 0, tgi_rpc_notification("notifications/tools/list_changed", NULL));
		pthread_mutex_unlock(&ss->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

tgi_mcp_session *tgi_mcp_session_new(tgi_mcp_server *s, const char *principal, const char *token,
                                     tgi_mcp_send_fn send, void *arg)
{
	tgi_mcp_session *ss = tgi_xcalloc(1, sizeof *ss);
	ss->s = s;
	tgi_uuidv7(ss->id);
	ss->principal = tgi_strdup(principal);
	ss->token = tgi_strdup(token);
	ss->send = send;
	ss->arg = arg;
	ss->min_level = -1;
	pthread_mutex_init(&ss->mu, NULL);
	tgi_cond_init(&ss->cv);
	const char *who = principal ? principal : "";
	pthread_mutex_lock(&s->pool_mu);
	for (share *sh = s->shares; sh && !ss->share; sh = sh->next)
		if (!strcmp(sh->name, who))
			ss->share = sh;
	if (!ss->share) {
		ss->share = tgi_xcalloc(1, sizeof *ss->share);
		ss->share->name = tgi_strdup(who);
		ss->share->next = s->shares;
		s->shares = ss->share;
	}
	ss->share->sessions++;
	pthread_mutex_unlock(&s->pool_mu);
	pthread_mutex_lock(&s->mu);
	ss->next = s->sessions;
	s->sessions = ss;
	pthread_mutex_unlock(&s->mu);
	return ss;
}

void tgi_mcp_session_inline(tgi_mcp_session *ss)
{
	ss->inline_ok = 1;
}

const char *tgi_mcp_session_id(const tgi_mcp_session *ss)
{
	return ss->id;
}

const char *tgi_mcp_session_version(const tgi_mcp_session *ss)
{
	return ss->version;
}

int tgi_mcp_session_initialized(const tgi_mcp_session *css)
{
	tgi_mcp_session *ss = (tgi_mcp_session *)css; /* the lock is ours to take */
	pthread_mutex_lock(&ss->mu);
	int on = ss->initialized;
	pthread_mutex_unlock(&ss->mu);
	return on;
}

/* Is fd readable now?  (The serve loop's wake pipe: the server stops.) */
static int readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

int tgi_mcp_session_drain(tgi_mcp_session *ss, int wake_fd)
{
	int woken = 0;
	pthread_mutex_lock(&ss->mu);
	ss->draining = 1;
	pthread_cond_broadcast(&ss->cv);
	while (ss->ncalls && !(woken = readable(wake_fd))) {
		tgi_cond_wait_ms(&ss->cv, &ss->mu, 50);   /* a signal writes to wake_fd: look often */
	}
	pthread_mutex_unlock(&ss->mu);
	return woken;
}

void tgi_mcp_session_free(tgi_mcp_session *ss)
{
	if (!ss)
		return;
	tgi_mcp_server *s = ss->s;
	pthread_mutex_lock(&s->mu);
	for (tgi_mcp_session **p = &s->sessions; *p; p = &(*p)->next)
		if (*p == ss) {
			*p = ss->next;
			break;
		}
	pthread_mutex_unlock(&s->mu);

	pthread_mutex_lock(&ss->mu);
	ss->closing = 1;
	int why = tgi_mcp_stop_cancel();
	for (call_run *cr = ss->calls; cr; cr = cr->next)
		tgi_flag_set_to(&cr->cancel, why);
	pthread_cond_broadcast(&ss->cv);
	while (ss->ncalls)
		pthread_cond_wait(&ss->cv, &ss->mu);
	pthread_mutex_unlock(&ss->mu);

	pthread_mutex_lock(&s->pool_mu);        /* the last session of its principal frees the share */
	if (--ss->share->sessions == 0) {
		for (share **p = &s->shares; *p; p = &(*p)->next)
			if (*p == ss->share) {
				*p = ss->share->next;
				break;
			}
		free(ss->share->name);
		free(ss->share);
	}
	pthread_mutex_unlock(&s->pool_mu);
	pthread_cond_destroy(&ss->cv);
	pthread_mutex_destroy(&ss->mu);
	free(ss->principal);
	free(ss->token);
	free(ss);
}
