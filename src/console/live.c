/*
 * live.c — the Live page (GET /live?tool=&status=&session=&principal=):
 * the filter form and the newest LIVE_ROWS matching calls, newest first,
 * as table#calls rows; the script then opens /events with the same query
 * and puts each new call at the top.
 *
 * A row: time, session, principal, tool (its link to /calls/<op_id>), the
 * redacted argument summary, the status badge, the stage that stopped the
 * call, the duration.  The ledger filters by tool, status and session;
 * the principal is filtered here, over a wider window of calls.
 *
 * Owns: the Live page's markup.  Must not: write anything.
 */
#include <stdlib.h>
#include <string.h>

#include "console/console.h"

#define LIVE_ROWS     100
#define LIVE_SCAN_MAX 5000   /* calls looked at when filtering by principal */

/* A filter value: NULL when absent or empty. */
static const char *filter(const tgc_request *r, const char *name)
{
	const char *v = tgc_param_get(&r->query, name);
	return v && *v ? v : NULL;
}

static void filter_input(tgi_buf *b, const char *name, const char *label, const char *value)
{
	tgi_buf_printf(b, "<label>%s <input type=\"text\" name=\"%s\" value=\"", label, name);
	tgc_html_text(b, value);
	tgi_buf_puts(b, "\"></label>\n");
}

static void filter_form(tgi_buf *b, const tgc_request *r)
{
	const char *status = filter(r, "status");
	tgi_buf_puts(b, "<form id=\"filters\" method=\"get\" action=\"/live\">\n");
	filter_input(b, "tool", "Tool", filter(r, "tool"));
	tgi_buf_puts(b, "<label>Status <select name=\"status\">\n<option value=\"\">any</option>\n");
	for (int s = 0; s < TG_STATUS__COUNT; s++) {
		const char *name = tg_status_name((tg_status)s);
		tgi_buf_printf(b, "<option value=\"%s\"%s>%s</option>\n", name,
		               status && !strcmp(status, name) ? " selected" : "", name);
	}
	tgi_buf_puts(b, "</select></label>\n");
	filter_input(b, "session", "Session", filter(r, "session"));
	filter_input(b, "principal", "Principal", filter(r, "principal"));
	tgi_buf_puts(b, "<button type=\"submit\">Filter</button>\n"
	                "<a class=\"clear\" href=\"/live\">Clear</a>\n</form>\n");
}

/* The redacted args of a tg_log op: its events carry them. */
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

static void live_row(tgi_buf *b, const json_t *op)
{
	const char *op_id = json_string_value(json_object_get(op, "op_id"));
	const char *session = json_string_value(json_object_get(op, "session"));
	const char *status = json_string_value(json_object_get(op, "status"));
	const json_t *env = json_object_get(op, "envelope");
	json_t *dur = json_object_get(op, "duration_ms");

	tgi_buf_puts(b, "<tr class=\"call\" data-op-id=\"");
	tgc_html_text(b, op_id);
	tgi_buf_puts(b, "\" data-status=\"");
	tgc_html_text(b, status);
	tgi_buf_puts(b, "\">\n<td class=\"time\">");
	tgc_html_time(b, json_string_value(json_object_get(op, "started")), NULL);
	tgi_buf_puts(b, "</td><td class=\"session\">");
	if (session) {
		tgi_buf_puts(b, "<a href=\"/sessions/");
		tgc_html_url(b, session);
		tgi_buf_puts(b, "\">");
		tgc_html_text(b, session);
		tgi_buf_puts(b, "</a>");
	}
	tgi_buf_puts(b, "</td><td class=\"principal\">");
	tgc_html_text(b, json_string_value(json_object_get(op, "principal")));
	tgi_buf_puts(b, "</td><td class=\"tool\"><a href=\"/calls/");
	tgc_html_url(b, op_id);
	tgi_buf_puts(b, "\">");
	tgc_html_text(b, json_string_value(json_object_get(op, "tool")));
	tgi_buf_puts(b, "</a></td><td class=\"summary\">");
	char *sum = tgc_args_summary(op_args(op));
	tgc_html_text(b, sum);
	free(sum);
	tgi_buf_puts(b, "</td><td class=\"status\">");
	tgc_html_badge(b, status);
	tgi_buf_puts(b, "</td><td class=\"stage\">");
	tgc_html_text(b, tgc_stop_stage(env));
	tgi_buf_puts(b, "</td><td class=\"duration\">");
	tgc_html_duration(b, json_is_number(dur) ? json_number_value(dur) : -1);
	tgi_buf_puts(b, "</td>\n</tr>\n");
}

void tgc_page_live(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	const char *principal = filter(r, "principal");
	tg_log_query q = {
		.tool = filter(r, "tool"),
		.status = filter(r, "status"),
		.session = filter(r, "session"),
		.limit = principal ? LIVE_SCAN_MAX : LIVE_ROWS,
	};
	/* the newest seq before the rows are read: the page's stream starts after
	 * it, so a call that ends between the two is streamed (the page replaces
	 * a row it has by op id), never missed */
	char why[256];
	int64_t seq = 0;
	int src = tgi_store_last_seq(c->g->store, &seq, why, sizeof why);
	if (src < 0) {
		tgc_page_error(c, 500, why, rep);
		return;
	}
	char *err = NULL;
	char *text = tg_log(c->g, &q, &err);
	json_t *ops = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!json_is_array(ops)) {
		json_decref(ops);
		tgc_page_error(c, 500, err ? err : "the ledger's calls could not be read", rep);
		free(err);
		return;
	}

	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, "Live", TGC_LIVE);
	tgi_buf_puts(b, "<h1>Live</h1>\n");
	filter_form(b, r);
	tgi_buf_printf(b, "<table id=\"calls\" data-seq=\"%lld\">\n", (long long)seq);
	tgi_buf_puts(b, "<thead><tr><th>Time</th><th>Session</th>"
	                "<th>Principal</th><th>Tool</th><th>Arguments</th><th>Status</th>"
	                "<th>Stopped at</th><th>Duration</th></tr></thead>\n<tbody>\n");
	size_t shown = 0;
	for (size_t i = json_array_size(ops); i-- > 0 && shown < LIVE_ROWS;) {
		json_t *op = json_array_get(ops, i);
		const char *who = json_string_value(json_object_get(op, "principal"));
		if (principal && (!who || strcmp(who, principal)))
			continue;
		live_row(b, op);
		shown++;
	}
	tgi_buf_puts(b, "</tbody>\n</table>\n");
	tgi_buf_printf(b, "<p class=\"empty\" id=\"no-calls\"%s>No calls match yet; new ones appear "
	                  "here as they finish.</p>\n", shown ? " hidden" : "");
	tgc_html_end(b);
	json_decref(ops);
}
