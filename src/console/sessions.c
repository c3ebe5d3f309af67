/*
 * sessions.c — the Sessions page (GET /sessions) and one session's
 * timeline (GET /sessions/<id>).
 *
 * The list groups the ledger's newest SCAN_OPS calls by session: calls,
 * how many were denied, failed or pending, principals, first and last
 * call; the latest active first.
 *
 * A session's timeline interleaves its agent conversation (the entries
 * toolgate agent saved, in the shape of their model API) with its calls:
 * an entry that asks for tool calls is followed by the calls whose call id
 * it names; calls no entry names keep their place in time among the
 * others.  Entries carry no time of their own, so call ids are what ties
 * the two together.
 *
 * Owns: the Sessions markup and the reading of conversation entries for
 * display.  Must not: write anything.
 */
#include <stdlib.h>
#include <string.h>

#include "console/console.h"

#define SCAN_OPS      2000   /* calls the list looks at */
#define LIST_MAX      500    /* sessions listed */
#define SESSION_CALLS 2000   /* calls of one session shown */
#define EXCERPT_CPS   400    /* code points of an entry's text shown */
#define SESSION_ID_MAX 256

/* ---- the list ---- */

typedef struct sess {
	const char *id, *principal, *first, *last;   /* borrowed from the ops array */
	size_t      calls, denied, failed, pending, principals;
	size_t      latest;   /* index of its newest call in the ops (ordered by op id) */
} sess;

static sess *sess_find(sess *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return &v[i];
	return NULL;
}

static int sess_cmp(const void *a, const void *b)
{
	const sess *x = a, *y = b;
	return x->latest < y->latest ? 1 : x->latest > y->latest ? -1 : 0;   /* newest first */
}

/* ops (oldest first) grouped by session into *out; returns the count. */
static size_t sessions_group(const json_t *ops, sess **out)
{
	size_t i, n = 0;
	json_t *op;
	sess *v = tgi_xcalloc(json_array_size(ops) + 1, sizeof *v);
	json_array_foreach(ops, i, op) {
		const char *id = json_string_value(json_object_get(op, "session"));
		const char *status = json_string_value(json_object_get(op, "status"));
		const char *who = json_string_value(json_object_get(op, "principal"));
		const char *when = json_string_value(json_object_get(op, "started"));
		if (!id || !*id)
			continue;
		sess *s = sess_find(v, n, id);
		if (!s) {
			s = &v[n++];
			s->id = id;
			s->principal = who;
			s->first = when ? when : "";
			s->principals = who ? 1 : 0;
		} else if (who && (!s->principal || strcmp(s->principal, who))) {
			s->principals++;
		}
		s->last = when ? when : s->first;
		s->latest = i;
		s->calls++;
		if (status && !strcmp(status, "denied"))
			s->denied++;
		else if (status && !strcmp(status, "failed"))
			s->failed++;
		else if (status && !strcmp(status, "pending"))
			s->pending++;
	}
	qsort(v, n, sizeof *v, sess_cmp);
	*out = v;
	return n;
}

static void sessions_table(tgi_buf *b, const sess *v, size_t n)
{
	tgi_buf_puts(b, "<table id=\"sessions\">\n<thead><tr><th>Session</th><th class=\"num\">Calls"
	                "</th><th class=\"num\">Denied</th><th class=\"num\">Failed</th>"
	                "<th class=\"num\">Pending</th><th>Principal</th>"
	                "<th>First call</th><th>Last call</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < n && i < LIST_MAX; i++) {
		tgi_buf_puts(b, "<tr><td class=\"session\"><a href=\"/sessions/");
		tgc_html_url(b, v[i].id);
		tgi_buf_puts(b, "\">");
		tgc_html_text(b, v[i].id);
		tgi_buf_printf(b, "</a></td><td class=\"num\">%zu</td><td class=\"num\">%zu</td>"
		                  "<td class=\"num\">%zu</td><td class=\"num\">%zu</td>"
		                  "<td class=\"principal\">",
		               v[i].calls, v[i].denied, v[i].failed, v[i].pending);
		tgc_html_text(b, v[i].principal);
		if (v[i].principals > 1)
			tgi_buf_printf(b, " (+%zu)", v[i].principals - 1);
		tgi_buf_puts(b, "</td><td>");
		tgc_html_time(b, v[i].first, NULL);
		tgi_buf_puts(b, "</td><td>");
		tgc_html_time(b, v[i].last, NULL);
		tgi_buf_puts(b, "</td></tr>\n");
	}
	tgi_buf_puts(b, "</tbody>\n</table>\n");
}

void tgc_page_sessions(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	(void)r;
	char err[512];
	json_t *ops = NULL;
	tgi_log_filter f = {.limit = SCAN_OPS};
	int rc = tgi_store_ops(c->g->store, &f, &ops, err, sizeof err);
	if (rc < 0 || !json_is_array(ops)) {
		json_decref(ops);
		tgc_page_error(c, 500, rc < 0 ? err : "the ledger's calls could not be read", rep);
		return;
	}
	sess *v;
	size_t n = sessions_group(ops, &v);

	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, "Sessions", TGC_SESSIONS);
	tgi_buf_printf(b, "<h1>Sessions</h1>\n<p class=\"note\">The sessions of the newest %d calls, "
	                  "the latest active first.</p>\n", SCAN_OPS);
	sessions_table(b, v, n);
	if (!n)
		tgi_buf_puts(b, "<p class=\"empty\">No call has named a session yet.</p>\n");
	tgc_html_end(b);
	free(v);
	json_decref(ops);
}

/* ---- one entry of a conversation ---- */

static void say(tgi_buf *t, const char *text)
{
	if (!text || !*text)
		return;
	if (t->len)
		tgi_buf_puts(t, " ");
	tgi_buf_puts(t, text);
}

static void say_call(tgi_buf *t, const char *arrow, const char *name)
{
	if (t->len)
		tgi_buf_puts(t, " ");
	tgi_buf_puts(t, arrow);
	tgi_buf_puts(t, name ? name : "?");
}

/* A tool result's content: a string, or parts with text. */
static void say_content(tgi_buf *t, const json_t *v)
{
	size_t i;
	json_t *p;
	if (json_is_string(v))
		say(t, json_string_value(v));
	json_array_foreach(v, i, p)
		say(t, json_string_value(json_object_get(p, "text")));
}

static void push_id(json_t *ids, const json_t *id)
{
	if (json_is_string(id) && json_string_length(id))
		json_array_append(ids, (json_t *)id);
}

/* One part of an entry's content (Anthropic blocks, Responses content
 * items, Gemini parts): its text into t, the call ids it asks for into ids. */
static void entry_part(const json_t *p, tgi_buf *t, json_t *ids)
{
	const char *type = json_string_value(json_object_get(p, "type"));
	const json_t *fc = json_object_get(p, "functionCall");
	const json_t *fr = json_object_get(p, "functionResponse");
	if (type && !strcmp(type, "tool_use")) {
		push_id(ids, json_object_get(p, "id"));
		say_call(t, "\xe2\x86\x92 ", json_string_value(json_object_get(p, "name")));
	} else if (type && !strcmp(type, "tool_result")) {
		say_call(t, "\xe2\x86\x90 ", "result:");
		say_content(t, json_object_get(p, "content"));
	} else if (json_is_object(fc)) {
		push_id(ids, json_object_get(fc, "id"));
		say_call(t, "\xe2\x86\x92 ", json_string_value(json_object_get(fc, "name")));
	} else if (json_is_object(fr)) {
		say_call(t, "\xe2\x86\x90 ", json_string_value(json_object_get(fr, "name")));
	} else {
		say(t, json_string_value(json_object_get(p, "text")));
	}
}

/*
 * An entry of any of the four APIs: role into role (cap bytes), its text
 * (with a mark for each call asked and each result) into t, and the call
 * ids it asks for into ids.
 */
static void entry_view(const json_t *e, char *role, size_t cap, tgi_buf *t, json_t *ids)
{
	const char *r = json_string_value(json_object_get(e, "role"));
	const char *type = json_string_value(json_object_get(e, "type"));
	const json_t *content = json_object_get(e, "content");
	size_t i;
	json_t *p;

	if (type && !strcmp(type, "function_call")) {           /* OpenAI Responses */
		push_id(ids, json_object_get(e, "call_id"));
		say_call(t, "\xe2\x86\x92 ", json_string_value(json_object_get(e, "name")));
		r = "assistant";
	} else if (type && !strcmp(type, "function_call_output")) {
		say_call(t, "\xe2\x86\x90 ", "result:");
		say_content(t, json_object_get(e, "output"));
		r = "tool";
	}
	tgi_snprintf(role, cap, "%s", r ? r : type ? type : "entry");

	if (json_is_string(content))
		say(t, json_string_value(content));
	json_array_foreach(content, i, p)
		entry_part(p, t, ids);
	json_array_foreach(json_object_get(e, "parts"), i, p)    /* Gemini */
		entry_part(p, t, ids);
	json_array_foreach(json_object_get(e, "tool_calls"), i, p) { /* OpenAI Chat */
		push_id(ids, json_object_get(p, "id"));
		say_call(t, "\xe2\x86\x92 ",
		         json_string_value(json_object_get(json_object_get(p, "function"), "name")));
	}
}

static void turn_li(tgi_buf *b, const char *role, const char *text)
{
	tgi_buf_puts(b, "<li class=\"turn role-");
	tgc_html_url(b, role);
	tgi_buf_puts(b, "\"><span class=\"role\">");
	tgc_html_text(b, role);
	tgi_buf_puts(b, "</span> <span class=\"text\">");
	size_t n = strlen(text), cut = tgi_utf8_offset(text, n, EXCERPT_CPS);
	char *s = tgi_strndup(text, cut);
	tgc_html_text(b, s);
	free(s);
	if (cut < n)
		tgi_buf_puts(b, "\xe2\x80\xa6");
	tgi_buf_puts(b, "</span></li>\n");
}

/* ---- calls in the timeline ---- */

static const char *op_args(const json_t *op)
{
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(op, "events"), i, ev) {
		const char *a = json_string_value(json_object_get(ev, "args"));
		if (a)
			return a;
	}
	return NULL;
}

static void call_li(tgi_buf *b, const json_t *op)
{
	const char *op_id = json_string_value(json_object_get(op, "op_id"));
	json_t *dur = json_object_get(op, "duration_ms");
	tgi_buf_puts(b, "<li class=\"call\" data-op-id=\"");
	tgc_html_text(b, op_id);
	tgi_buf_puts(b, "\">");
	tgc_html_time(b, json_string_value(json_object_get(op, "started")), NULL);
	tgi_buf_puts(b, " <a href=\"/calls/");
	tgc_html_url(b, op_id);
	tgi_buf_puts(b, "\">");
	tgc_html_text(b, json_string_value(json_object_get(op, "tool")));
	tgi_buf_puts(b, "</a> ");
	tgc_html_badge(b, json_string_value(json_object_get(op, "status")));
	tgi_buf_puts(b, " <span class=\"summary\">");
	char *sum = tgc_args_summary(op_args(op));
	tgc_html_text(b, sum);
	free(sum);
	tgi_buf_puts(b, "</span> <span class=\"duration\">");
	tgc_html_duration(b, json_is_number(dur) ? json_number_value(dur) : -1);
	tgi_buf_puts(b, "</span></li>\n");
}

/* Emit, in time order, the calls not yet shown up to and including
 * index upto (exclusive of nothing: upto = n shows them all). */
static void calls_upto(tgi_buf *b, const json_t *ops, char *shown, size_t upto)
{
	for (size_t i = 0; i < upto && i < json_array_size(ops); i++)
		if (!shown[i]) {
			call_li(b, json_array_get(ops, i));
			shown[i] = 1;
		}
}

/* The first call not yet shown whose call id is id, or (size_t)-1. */
static size_t call_of(const json_t *ops, const char *shown, const char *id)
{
	for (size_t i = 0; i < json_array_size(ops); i++) {
		const char *cid = json_string_value(json_object_get(json_array_get(ops, i), "call_id"));
		if (!shown[i] && cid && !strcmp(cid, id))
			return i;
	}
	return (size_t)-1;
}

static void timeline(tgi_buf *b, const json_t *msgs, const json_t *ops)
{
	char *shown = tgi_xcalloc(json_array_size(ops) + 1, 1);
	size_t i;
	json_t *e;
	tgi_buf_puts(b, "<ol id=\"timeline\">\n");
	json_array_foreach(msgs, i, e) {
		char role[32];
		tgi_buf t;
		tgi_buf_init(&t, 64 * 1024);
		json_t *ids = json_array();
		entry_view(e, role, sizeof role, &t, ids);
		turn_li(b, role, t.p ? t.p : "");
		tgi_buf_free(&t);
		size_t k;
		json_t *id;
		json_array_foreach(ids, k, id) {
			size_t at = call_of(ops, shown, json_string_value(id));
			if (at != (size_t)-1)
				calls_upto(b, ops, shown, at + 1);
		}
		json_decref(ids);
	}
	calls_upto(b, ops, shown, json_array_size(ops));
	tgi_buf_puts(b, "</ol>\n");
	free(shown);
}

/* ---- one session ---- */

void tgc_page_session(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	const char *id = r->arg;
	if (!id || !*id || strlen(id) > SESSION_ID_MAX) {
		tgc_page_error(c, 404, "there is no session with that id", rep);
		return;
	}
	char err[512], api[32] = "";
	json_t *msgs = NULL;
	int rc = tgi_store_messages(c->g->store, id, &msgs, api, err, sizeof err);
	if (rc < 0) {
		tgc_page_error(c, 500, err, rep);
		return;
	}
	tg_log_query q = {.session = id, .limit = SESSION_CALLS};
	char *lerr = NULL;
	char *text = tg_log(c->g, &q, &lerr);
	json_t *ops = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!json_is_array(ops)) {
		json_decref(ops);
		json_decref(msgs);
		tgc_page_error(c, 500, lerr ? lerr : "the ledger's calls could not be read", rep);
		free(lerr);
		return;
	}
	if (!json_array_size(ops) && !json_array_size(msgs)) {
		json_decref(ops);
		json_decref(msgs);
		tgc_page_error(c, 404, "no call and no conversation names that session", rep);
		return;
	}

	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, "Session", TGC_SESSION);
	tgi_buf_puts(b, "<h1>Session <code>");
	tgc_html_text(b, id);
	tgi_buf_printf(b, "</code></h1>\n<p class=\"note\">%zu calls", json_array_size(ops));
	if (json_array_size(msgs)) {
		tgi_buf_printf(b, ", %zu conversation entries (", json_array_size(msgs));
		tgc_html_text(b, api);
		tgi_buf_puts(b, ")");
	}
	tgi_buf_puts(b, ". <a href=\"/live?session=");
	tgc_html_url(b, id);
	tgi_buf_puts(b, "\">Follow it live</a>.</p>\n");
	timeline(b, msgs, ops);
	tgc_html_end(b);
	json_decref(ops);
	json_decref(msgs);
}
