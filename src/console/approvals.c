/*
 * approvals.c — the Approvals page (GET /approvals[?fragment=1]) and the
 * decision (POST /approvals/<id>/approve|deny).
 *
 * div#approvals holds one article.approval per pending approval: the tool,
 * its canonical arguments as the ledger keeps them (redacted), who asked,
 * the rule that asked, when it expires; for write_file and apply_patch the
 * diff of the approval's plan (the call's dry run; without one, the
 * content or patch the call carries), for shell the argv, workdir and
 * sandbox; and the Approve and Deny forms, each with the session's CSRF
 * token.  ?fragment=1 answers div#approvals alone (the script refreshes
 * it).  After a decision the page comes back with div.flash saying what
 * was decided, and the latest decisions are listed below the queue.
 *
 * Owns: the Approvals markup and the decide action.  Must not: change
 * anything but an approval's decision; never approve without the form's
 * POST (the server checked its CSRF token).
 */
#include <stdlib.h>
#include <string.h>

#include "console/console.h"

#define DIFF_SHOW_MAX (256u * 1000)   /* bytes of one diff shown */
#define RECENT_MAX    20              /* decided approvals listed */

/* ---- the diff ---- */

/* One line of a unified diff or a patch, with the class that colours it. */
static void diff_line(tgi_buf *b, const char *line, size_t n)
{
	const char *cls = NULL;
	if ((n >= 4 && (!strncmp(line, "+++ ", 4) || !strncmp(line, "--- ", 4))) ||
	    (n >= 4 && !strncmp(line, "*** ", 4)) || (n >= 1 && line[0] == '\\'))
		cls = "meta";
	else if (n >= 2 && !strncmp(line, "@@", 2))
		cls = "hunk";
	else if (n >= 1 && line[0] == '+')
		cls = "add";
	else if (n >= 1 && line[0] == '-')
		cls = "del";
	char *text = tgi_strndup(line, n);
	if (cls)
		tgi_buf_printf(b, "<span class=\"%s\">", cls);
	tgc_html_text(b, text);
	if (cls)
		tgi_buf_puts(b, "</span>");
	tgi_buf_puts(b, "\n");
	free(text);
}

/* text (a unified diff or an apply_patch patch) as pre.diff. */
static void diff_pre(tgi_buf *b, const char *text)
{
	size_t n = strlen(text), shown = n > DIFF_SHOW_MAX ? DIFF_SHOW_MAX : n;
	tgi_buf_puts(b, "<pre class=\"diff\">");
	for (size_t i = 0; i < shown;) {
		const char *nl = memchr(text + i, '\n', shown - i);
		size_t len = nl ? (size_t)(nl - (text + i)) : shown - i;
		diff_line(b, text + i, len);
		i += len + 1;
	}
	if (shown < n)
		tgi_buf_printf(b, "<span class=\"meta\">\xe2\x80\xa6 (%zu more bytes not shown)</span>\n",
		               n - shown);
	tgi_buf_puts(b, "</pre>\n");
}

static void note(tgi_buf *b, const char *cls, const char *text)
{
	tgi_buf_printf(b, "<p class=\"%s\">", cls);
	tgc_html_text(b, text);
	tgi_buf_puts(b, "</p>\n");
}

/* A file of a plan: "path (operation, +a −r)" then its diff. */
static void plan_file(tgi_buf *b, const json_t *f, const char *operation)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *from = json_string_value(json_object_get(f, "from"));
	const char *diff = json_string_value(json_object_get(f, "diff"));
	json_t *add = json_object_get(f, "added_lines"), *del = json_object_get(f, "removed_lines");
	tgi_buf_puts(b, "<p class=\"file\"><code>");
	if (from) {
		tgc_html_text(b, from);
		tgi_buf_puts(b, "</code> \xe2\x86\x92 <code>");
	}
	tgc_html_text(b, path);
	tgi_buf_puts(b, "</code>");
	if (operation) {
		tgi_buf_puts(b, " (");
		tgc_html_text(b, operation);
		tgi_buf_puts(b, ")");
	}
	if (json_is_integer(add) && json_is_integer(del))
		tgi_buf_printf(b, " <span class=\"counts\">+%lld \xe2\x88\x92%lld</span>",
		               (long long)json_integer_value(add), (long long)json_integer_value(del));
	tgi_buf_puts(b, "</p>\n");
	if (diff)
		diff_pre(b, diff);
}

/* The plan of a write_file or apply_patch call (tools/plan.h shapes). */
static void plan_edits(tgi_buf *b, const json_t *plan)
{
	const char *fail = json_string_value(json_object_get(plan, "would_fail"));
	const char *unchecked = json_string_value(json_object_get(plan, "unchecked"));
	const json_t *files = json_object_get(plan, "files");
	if (fail)
		note(b, "would-fail", fail);
	if (unchecked)
		note(b, "note", unchecked);
	if (json_is_array(files)) {
		size_t i;
		json_t *f;
		json_array_foreach(files, i, f)
			plan_file(b, f, json_string_value(json_object_get(f, "operation")));
	} else if (json_object_get(plan, "diff")) {
		plan_file(b, plan, json_is_true(json_object_get(plan, "exists")) ? "update" : "add");
	}
}

/* Without a plan: the content a write_file call carries, as added lines. */
static void args_write(tgi_buf *b, const json_t *args)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	const char *content = json_string_value(json_object_get(args, "content"));
	if (!path || !content)
		return;
	note(b, "note", "no plan was recorded for this call: its new content is shown, not a diff "
	                "from the file as it is");
	tgi_buf t;
	tgi_buf_init(&t, DIFF_SHOW_MAX + 4096);
	tgi_buf_puts(&t, "+++ b/");
	tgi_buf_puts(&t, path);
	tgi_buf_puts(&t, "\n");
	for (const char *s = content; *s && t.len < DIFF_SHOW_MAX;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		tgi_buf_puts(&t, "+");
		tgi_buf_append(&t, s, len);
		tgi_buf_puts(&t, "\n");
		s += len + (nl != NULL);
	}
	diff_pre(b, t.p ? t.p : "");
	tgi_buf_free(&t);
}

/* Without a plan: the patch an apply_patch call carries. */
static void args_patch(tgi_buf *b, const json_t *args)
{
	const char *patch = json_string_value(json_object_get(args, "patch"));
	if (!patch)
		return;
	note(b, "note", "no plan was recorded for this call: its patch is shown as it was sent");
	diff_pre(b, patch);
}

/* ---- shell ---- */

static void dt_dd(tgi_buf *b, const char *dt, const char *dd)
{
	tgi_buf_printf(b, "<dt>%s</dt><dd><code>", dt);
	tgc_html_text(b, dd);
	tgi_buf_puts(b, "</code></dd>\n");
}

static const char *str_or(const json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : "?";
}

/* dl.plan: argv, workdir, sandbox — from the plan, else from the args and
 * the gate's configuration. */
static void shell_plan(tgi_buf *b, const tgc_ctx *c, const json_t *plan, const json_t *args)
{
	const json_t *argv = plan ? json_object_get(plan, "argv") : NULL;
	json_t *made = NULL;
	if (!argv) {
		const json_t *cmd = json_object_get(args, "command");
		if (json_is_string(cmd))
			argv = made = json_pack("[s, s, O]", "/bin/sh", "-c", cmd);
		else
			argv = cmd;
	}
	const char *fail = plan ? json_string_value(json_object_get(plan, "would_fail")) : NULL;
	if (fail)
		note(b, "would-fail", fail);
	if (!plan)
		note(b, "note", "no plan was recorded for this call: argv and workdir are read from its "
		                "arguments, the sandbox from the configuration");

	tgi_buf_puts(b, "<dl class=\"plan\">\n");
	char *av = argv ? json_dumps(argv, JSON_COMPACT) : NULL;
	dt_dd(b, "argv", av ? av : "");
	free(av);
	json_decref(made);

	const char *wd = json_string_value(json_object_get(plan ? plan : args, "workdir"));
	dt_dd(b, "workdir", wd ? wd : ".");

	char sb[160];
	const json_t *s = plan ? json_object_get(plan, "sandbox") : NULL;
	if (json_is_object(s))
		tgi_snprintf(sb, sizeof sb, "%s (%s), network %s",
		             str_or(json_object_get(s, "mode")), str_or(json_object_get(s, "backend")),
		             json_is_true(json_object_get(s, "network")) ? "on" : "off");
	else
		tgi_snprintf(sb, sizeof sb, "%s, network %s", tgi_sandbox_name(c->g->cfg->sandbox),
		             c->g->cfg->sandbox_network ? "on" : "off");
	dt_dd(b, "sandbox", sb);
	json_t *t = plan ? json_object_get(plan, "timeout_s") : NULL;
	if (json_is_integer(t)) {
		char ts[32];
		tgi_snprintf(ts, sizeof ts, "%lld s", (long long)json_integer_value(t));
		dt_dd(b, "timeout", ts);
	}
	tgi_buf_puts(b, "</dl>\n");
}

/* ---- one approval ---- */

/* The approval's plan as an object: tg_approvals gives it parsed or as
 * text (or not at all).  New reference or NULL. */
static json_t *plan_of(const json_t *a)
{
	json_t *p = json_object_get(a, "plan");
	if (json_is_object(p))
		return json_incref(p);
	if (json_is_string(p))
		return json_loads(json_string_value(p), 0, NULL);
	return NULL;
}

static void decide_form(tgi_buf *b, const tgc_ctx *c, const char *id, int approve)
{
	const char *what = approve ? "approve" : "deny";
	tgi_buf_printf(b, "<form class=\"%s\" method=\"post\" action=\"/approvals/", what);
	tgc_html_url(b, id);
	tgi_buf_printf(b, "/%s\">\n<input type=\"hidden\" name=\"csrf\" value=\"", what);
	tgc_html_text(b, c->csrf);
	tgi_buf_puts(b, "\">\n");
	if (!approve)
		tgi_buf_puts(b, "<input type=\"text\" name=\"reason\" maxlength=\"500\" "
		                "placeholder=\"reason (optional)\" aria-label=\"reason\">\n");
	tgi_buf_printf(b, "<button type=\"submit\" class=\"%s\">%s</button>\n</form>\n", what,
	               approve ? "Approve" : "Deny");
}

static void approval_article(tgi_buf *b, const tgc_ctx *c, const json_t *a)
{
	const char *id = json_string_value(json_object_get(a, "id"));
	const char *tool = json_string_value(json_object_get(a, "tool"));
	const char *args_text = json_string_value(json_object_get(a, "args"));
	const char *op_id = json_string_value(json_object_get(a, "op_id"));
	if (!id || !tool)
		return;

	tgi_buf_puts(b, "<article class=\"approval\" data-id=\"");
	tgc_html_text(b, id);
	tgi_buf_puts(b, "\" data-tool=\"");
	tgc_html_text(b, tool);
	tgi_buf_puts(b, "\">\n<h2 class=\"tool\">");
	tgc_html_text(b, tool);
	tgi_buf_puts(b, "</h2>\n<dl class=\"meta\">\n<dt>Asked by</dt><dd class=\"principal\">");
	tgc_html_text(b, json_string_value(json_object_get(a, "principal")));
	tgi_buf_puts(b, "</dd>\n<dt>Rule</dt><dd class=\"reason\">");
	tgc_html_text(b, json_string_value(json_object_get(a, "reason")));
	tgi_buf_puts(b, "</dd>\n<dt>Asked at</dt><dd>");
	tgc_html_time(b, json_string_value(json_object_get(a, "created")), "created");
	tgi_buf_puts(b, "</dd>\n<dt>Expires</dt><dd>");
	tgc_html_time(b, json_string_value(json_object_get(a, "expires")), "expires");
	tgi_buf_puts(b, "</dd>\n");
	if (op_id) {
		tgi_buf_puts(b, "<dt>Call</dt><dd><a href=\"/calls/");
		tgc_html_url(b, op_id);
		tgi_buf_puts(b, "\">");
		tgc_html_text(b, op_id);
		tgi_buf_puts(b, "</a></dd>\n");
	}
	tgi_buf_puts(b, "</dl>\n<pre class=\"args\">");
	tgc_html_text(b, args_text);
	tgi_buf_puts(b, "</pre>\n");

	json_t *args = args_text ? json_loads(args_text, 0, NULL) : NULL;
	json_t *plan = plan_of(a);
	if (!strcmp(tool, "write_file") || !strcmp(tool, "apply_patch")) {
		if (plan)
			plan_edits(b, plan);
		else if (!strcmp(tool, "write_file"))
			args_write(b, args);
		else
			args_patch(b, args);
	} else if (!strcmp(tool, "shell")) {
		shell_plan(b, c, plan, args);
	}
	json_decref(plan);
	json_decref(args);

	tgi_buf_puts(b, "<div class=\"decide\">\n");
	decide_form(b, c, id, 1);
	decide_form(b, c, id, 0);
	tgi_buf_puts(b, "</div>\n</article>\n");
}

/* div#approvals: the pending ones of list (tg_approvals, newest first). */
static void approvals_div(tgi_buf *b, const tgc_ctx *c, const json_t *list)
{
	size_t i, n = 0;
	json_t *a;
	tgi_buf_puts(b, "<div id=\"approvals\">\n");
	json_array_foreach(list, i, a) {
		const char *state = json_string_value(json_object_get(a, "state"));
		if (state && !strcmp(state, "pending")) {
			approval_article(b, c, a);
			n++;
		}
	}
	if (!n)
		tgi_buf_puts(b, "<p class=\"empty\">No calls are waiting for approval.</p>\n");
	tgi_buf_puts(b, "</div>\n");
}

static const json_t *find_id(const json_t *list, const char *id)
{
	size_t i;
	json_t *a;
	json_array_foreach(list, i, a) {
		const char *aid = json_string_value(json_object_get(a, "id"));
		if (aid && !strcmp(aid, id))
			return a;
	}
	return NULL;
}

/* div.flash after a decision: ?decided=<id>&d=approved|denied. */
static void flash(tgi_buf *b, const tgc_request *r, const json_t *all)
{
	const char *id = tgc_param_get(&r->query, "decided");
	const char *d = tgc_param_get(&r->query, "d");
	if (!id || !d || (strcmp(d, "approved") && strcmp(d, "denied")))
		return;
	const json_t *a = find_id(all, id);
	const char *tool = a ? json_string_value(json_object_get(a, "tool")) : NULL;
	const char *why = a ? json_string_value(json_object_get(a, "decided_reason")) : NULL;
	tgi_buf_printf(b, "<div class=\"flash flash-%s\" role=\"status\">%s ", d,
	               !strcmp(d, "approved") ? "Approved" : "Denied");
	if (tool) {
		tgi_buf_puts(b, "<code>");
		tgc_html_text(b, tool);
		tgi_buf_puts(b, "</code> ");
	}
	tgi_buf_puts(b, "(approval <code>");
	tgc_html_text(b, id);
	tgi_buf_puts(b, "</code>)");
	if (why && *why) {
		tgi_buf_puts(b, ": ");
		tgc_html_text(b, why);
	}
	tgi_buf_puts(b, ".</div>\n");
}

/* The latest decided approvals of all (newest first). */
static void recent(tgi_buf *b, const json_t *all)
{
	size_t i, n = 0;
	json_t *a;
	json_array_foreach(all, i, a) {
		const char *state = json_string_value(json_object_get(a, "state"));
		if (!state || !strcmp(state, "pending") || n == RECENT_MAX)
			continue;
		if (!n++)
			tgi_buf_puts(b, "<section id=\"decided\">\n<h2>Latest decisions</h2>\n"
			                "<table>\n<thead><tr><th>Asked at</th><th>Tool</th><th>State</th>"
			                "<th>Decided by</th><th>Reason</th><th>Call</th></tr></thead>\n"
			                "<tbody>\n");
		tgi_buf_puts(b, "<tr><td>");
		tgc_html_time(b, json_string_value(json_object_get(a, "created")), NULL);
		tgi_buf_puts(b, "</td><td>");
		tgc_html_text(b, json_string_value(json_object_get(a, "tool")));
		tgi_buf_puts(b, "</td><td><span class=\"state state-");
		tgc_html_text(b, state);
		tgi_buf_puts(b, "\">");
		tgc_html_text(b, state);
		tgi_buf_puts(b, "</span></td><td>");
		tgc_html_text(b, json_string_value(json_object_get(a, "decided_by")));
		tgi_buf_puts(b, "</td><td>");
		tgc_html_text(b, json_string_value(json_object_get(a, "decided_reason")));
		tgi_buf_puts(b, "</td><td>");
		const char *op_id = json_string_value(json_object_get(a, "op_id"));
		if (op_id) {
			tgi_buf_puts(b, "<a href=\"/calls/");
			tgc_html_url(b, op_id);
			tgi_buf_puts(b, "\">call</a>");
		}
		tgi_buf_puts(b, "</td></tr>\n");
	}
	if (n)
		tgi_buf_puts(b, "</tbody>\n</table>\n</section>\n");
}

/* tg_approvals as JSON (new reference), or NULL with the page answered. */
static json_t *approvals_read(const tgc_ctx *c, int all, tgc_reply *rep)
{
	char *err = NULL;
	char *text = tg_approvals(c->g, all, &err);
	json_t *list = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!json_is_array(list)) {
		json_decref(list);
		tgc_page_error(c, 500, err ? err : "the approvals could not be read", rep);
		list = NULL;
	}
	free(err);
	return list;
}

/* The full page lists every approval (for the flash and the latest
 * decisions); the fragment, asked for every few seconds, only the open ones. */
void tgc_page_approvals(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	const char *frag = tgc_param_get(&r->query, "fragment");
	int fragment = frag && !strcmp(frag, "1");
	json_t *all = approvals_read(c, !fragment, rep);
	if (!all)
		return;
	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	if (fragment) {
		approvals_div(b, c, all);
		json_decref(all);
		return;
	}
	tgc_html_begin(b, c, "Approvals", TGC_APPROVALS);
	tgi_buf_puts(b, "<h1>Approvals</h1>\n");
	flash(b, r, all);
	approvals_div(b, c, all);
	recent(b, all);
	tgc_html_end(b);
	json_decref(all);
}

/* ---- the decision ---- */

void tgc_action_decide(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	const char *id = r->arg;
	if (!id || !tgi_uuid_ok(id)) {
		tgc_page_error(c, 404, "there is no approval with that id", rep);
		return;
	}
	/* the field takes 500 characters, the store 500 bytes: cut at a
	 * character's start (the form parser checked the UTF-8) */
	const char *given = tgc_param_get(&r->form, "reason");
	char reason[501] = "";
	if (given) {
		size_t n = strlen(given);
		if (n > 500) {
			n = 500;
			while (n && ((unsigned char)given[n] & 0xc0) == 0x80)
				n--;
		}
		memcpy(reason, given, n);
		reason[n] = '\0';
	}
	char *err = NULL;
	if (tg_approval_decide(c->g, id, r->approve, c->who ? c->who : "console",
	                       reason[0] ? reason : NULL, &err) < 0) {
		tgc_page_error(c, 409, err ? err : "the approval could not be decided", rep);
		free(err);
		return;
	}
	tgc_reply_html(rep, 303);
	tgi_buf loc;
	tgi_buf_init(&loc, 256);
	tgi_buf_puts(&loc, "/approvals?decided=");
	tgc_html_url(&loc, id);
	tgi_buf_puts(&loc, r->approve ? "&d=approved" : "&d=denied");
	rep->location = tgi_buf_steal(&loc);
	tgi_buf_puts(&rep->body, "<!DOCTYPE html>\n<title>Decided</title>\n<p>Decided: see "
	                         "<a href=\"/approvals\">Approvals</a>.</p>\n");
}
