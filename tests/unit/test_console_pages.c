/*
 * test_console_pages.c — the console's pages (src/console/html.c live.c
 * approvals.c call.c stats.c sessions.c assets.c) rendered from a real gate
 * on a temporary workspace after real calls: each page carries the DOM
 * contract's ids and classes (body[data-page], nav, the csrf meta, one
 * deferred script and no inline script or style); hostile text in a tool's
 * arguments, a principal-chosen session id and an unknown tool's name comes
 * out escaped; a pending write_file approval shows its diff, shell its
 * argv/workdir/sandbox, and a decision releases it with a 303 and a flash;
 * the stats charts have one bar per tool; a session's timeline puts each
 * call after the turn that asked for it; an unknown op is a 404 page; the
 * spill page refuses what is not a UUID, an op that did not spill and a
 * spill file that is a symlink, and serves a real spill.
 *
 * Owns: nothing outside its temporary workspace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "console/console.h"
#include "gate/gate.h"
#include "toolgate.h"
#include "util/util.h"

#define CSRF "c5rf-0123456789abcdef"

/* What hostile callers put in front of the console. */
#define EVIL_CONTENT "</pre><script>alert(1)</script>\"'&\n"
#define EVIL_SESSION "s-\"><b>x&y</b>"
#define EVIL_TOOL    "<img src=x onerror=alert(1)>"

static char ws[64];
static tg_gate *g;

/* ---- helpers ---- */

static void write_text(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* One call through the gate; its op id into op_id[37] (may be NULL). */
static tg_status call(const char *tool, const char *args, const char *session, char *op_id)
{
	tg_request req = {.tool = tool, .args = args, .session = session};
	tg_result *res = NULL;
	tg_status st = tg_call(g, &req, &res);
	if (op_id)
		snprintf(op_id, 37, "%s", tg_result_op_id(res));
	tg_result_free(res);
	return st;
}

static void q_set(tgc_params *p, const char *name, const char *value)
{
	assert_true(p->n < TGC_MAX_PARAMS);
	p->v[p->n].name = tgi_strdup(name);
	p->v[p->n].value = tgi_strdup(value);
	p->n++;
}

static void q_free(tgc_params *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].value);
	}
	p->n = 0;
}

typedef void (*page_fn)(const tgc_ctx *, const tgc_request *, tgc_reply *);

typedef struct page {
	int         status;
	const char *type;
	char       *body;      /* NUL-terminated */
	char       *location;
} page;

static tgc_ctx ctx(void)
{
	tgc_ctx c = {.g = g, .csrf = CSRF, .who = "console", .now_ms = tgi_unix_ms()};
	return c;
}

static page finish(tgc_reply *rep)
{
	page p = {.status = rep->status, .type = rep->type, .location = rep->location};
	p.body = rep->body.p ? tgi_buf_steal(&rep->body) : tgi_strdup("");
	return p;
}

static page render(page_fn fn, tgc_route route, const char *arg, tgc_params *query)
{
	tgc_request r = {.route = route, .arg = (char *)arg};
	if (query)
		r.query = *query;
	tgc_ctx c = ctx();
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	fn(&c, &r, &rep);
	return finish(&rep);
}

static void page_free(page *p)
{
	free(p->body);
	free(p->location);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

static int has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

/* hay from needle on (fails the test when it is not there). */
static const char *at(const char *hay, const char *needle)
{
	const char *s = strstr(hay, needle);
	if (!s)
		fail_msg("\"%s\" is not on the page", needle);
	return s;
}

/*
 * What every full page must be: the shell of the DOM contract, with no
 * script but the one deferred file, no inline style or handler, and none
 * of the hostile markup raw.
 */
static void check_shell(const page *p, const char *data_page)
{
	char want[64];
	snprintf(want, sizeof want, "<body data-page=\"%s\"", data_page);
	assert_true(has(p->body, want));
	assert_true(has(p->body, "<!DOCTYPE html>"));
	assert_true(has(p->body, "<meta name=\"csrf-token\" content=\"" CSRF "\">"));
	assert_int_equal(count(p->body, "<link rel=\"stylesheet\""), 1);
	assert_true(has(p->body, "<link rel=\"stylesheet\" href=\"/static/console.css\">"));
	assert_int_equal(count(p->body, "<script"), 1);
	assert_true(has(p->body, "<script src=\"/static/console.js\" defer></script>"));
	const char *nav = at(p->body, "<nav>");
	const char *end = at(nav, "</nav>");
	static const char *const links[] = {"/live", "/approvals", "/stats", "/sessions"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(want, sizeof want, "<a href=\"%s\"", links[i]);
		const char *a = strstr(nav, want);
		assert_true(a && a < end);
	}
	assert_false(has(p->body, "style="));
	assert_false(has(p->body, "<img"));
	assert_false(has(p->body, "<b>"));
	assert_int_equal(count(p->body, "<pre"), count(p->body, "</pre>"));
	assert_true(has(p->body, "</html>"));
}

/* ---- fixtures ---- */

static int setup(void **state)
{
	(void)state;
	strcpy(ws, "/tmp/tg-console.XXXXXX");
	assert_non_null(mkdtemp(ws));
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_STORE");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	write_text("toolgate.yaml",
	           "default_principal: local\n"
	           "principals:\n  local: {roles: [owner]}\n"
	           "roles:\n  owner: {allow: [list_dir, read_file]}\n"
	           "permissions:\n"
	           "  ask: [write_file, apply_patch, shell]\n"
	           "  deny: [\"read_file(./secret.txt)\"]\n"
	           "limits: {max_result_chars: 600}\n");
	write_text("notes.txt", "one\ntwo\nthree\n");
	write_text("secret.txt", "hunter2\n");
	char big[4096] = "";
	for (int i = 0; i < 100; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big),
		         "line %04d abcdefghijklmnopqrstuvwxyz\n", i);
	write_text("big.txt", big);

	char cfg[128], *err = NULL;
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = -1};
	if (tg_gate_open(&o, &g, &err) < 0)
		fail_msg("gate: %s", err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tg_gate_close(g);
	g = NULL;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

/* ---- html.c ---- */

static void test_escaping(void **state)
{
	(void)state;
	tgi_buf b;
	tgi_buf_init(&b, 4096);
	tgc_html_text(&b, "<a href=\"x\">'&'</a>");
	assert_string_equal(b.p, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
	tgi_buf_free(&b);

	/* controls (but tab and newline) and bytes that are not UTF-8 become U+FFFD */
	tgi_buf_init(&b, 4096);
	tgc_html_text(&b, "a\x01" "b\tc\nd\x7f" "e\xc3\x28" "f\xe2\x82" "\xed\xa0\x80" "\xc2\x85"
	                  "\xc3\xa9");
	assert_string_equal(b.p, "a\xef\xbf\xbd" "b\tc\nd\xef\xbf\xbd" "e\xef\xbf\xbd(f\xef\xbf\xbd\xef"
	                         "\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	                         "\xc3\xa9");
	tgi_buf_free(&b);

	tgi_buf_init(&b, 4096);
	tgc_html_url(&b, "a b/\"<>?&=\xc3\xa9-._~");
	assert_string_equal(b.p, "a%20b%2F%22%3C%3E%3F%26%3D%C3%A9-._~");
	tgi_buf_free(&b);

	/* a badge's class is a known status or "unknown", its text escaped */
	tgi_buf_init(&b, 4096);
	tgc_html_badge(&b, "persisted");
	tgc_html_badge(&b, "x\" onclick=\"y");
	assert_string_equal(b.p, "<span class=\"badge badge-persisted\">persisted</span>"
	                         "<span class=\"badge badge-unknown\">x&quot; onclick=&quot;y</span>");
	tgi_buf_free(&b);

	/* times: <time datetime>; what is not the ledger's shape is plain text */
	tgi_buf_init(&b, 4096);
	tgc_html_time(&b, "2026-11-30T03:49:36.123Z", "expires");
	tgc_html_time(&b, "\"><script>", NULL);
	assert_string_equal(b.p, "<time class=\"expires\" datetime=\"2026-11-30T03:49:36.123Z\" "
	                         "title=\"2026-11-30T03:49:36.123Z\">03:49:36</time>"
	                         "&quot;&gt;&lt;script&gt;");
	tgi_buf_free(&b);

	tgi_buf_init(&b, 4096);
	tgc_html_duration(&b, 0.4321);
	tgc_html_duration(&b, -1);
	tgc_html_duration(&b, 1250);
	assert_string_equal(b.p, "0.4 ms1.25 s");
	tgi_buf_free(&b);
}

static void test_summary(void **state)
{
	(void)state;
	char *s = tgc_args_summary("{\"path\":\"a.txt\"}");
	assert_string_equal(s, "{\"path\":\"a.txt\"}");
	free(s);
	s = tgc_args_summary(NULL);
	assert_string_equal(s, "");
	free(s);

	/* cut at TGC_SUMMARY_CPS code points (not bytes) with an ellipsis */
	char long_args[1024] = "{\"t\":\"";
	for (int i = 0; i < 200; i++)
		strcat(long_args, "\xc3\xa9");
	strcat(long_args, "\"}");
	s = tgc_args_summary(long_args);
	assert_int_equal(tgi_utf8_len(s, strlen(s)), TGC_SUMMARY_CPS + 1);
	assert_string_equal(s + strlen(s) - 3, "\xe2\x80\xa6");
	free(s);

	/* one line */
	s = tgc_args_summary("a\nb\rc");
	assert_string_equal(s, "a b c");
	free(s);

	json_t *env = json_loads("{\"stages\":[{\"stage\":\"decode\",\"ok\":true},"
	                         "{\"stage\":\"decide\",\"ok\":false}]}", 0, NULL);
	assert_string_equal(tgc_stop_stage(env), "decide");
	json_decref(env);
	assert_string_equal(tgc_stop_stage(NULL), "");
}

static void test_login_and_error(void **state)
{
	(void)state;
	tgc_ctx c = {.g = g};
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	tgc_page_login(&c, NULL, &rep);
	page p = finish(&rep);
	assert_int_equal(p.status, 200);
	assert_true(has(p.body, "<body data-page=\"login\""));
	assert_true(has(p.body, "<form id=\"login\" method=\"post\" action=\"/login\">"));
	assert_true(has(p.body, "name=\"token\""));
	assert_false(has(p.body, "csrf-token"));     /* not signed in: no token to give */
	assert_false(has(p.body, "class=\"error\""));
	page_free(&p);

	memset(&rep, 0, sizeof rep);
	tgc_page_login(&c, "that token is not <right>", &rep);
	p = finish(&rep);
	assert_true(has(p.body, "<p class=\"error\">that token is not &lt;right&gt;</p>"));
	page_free(&p);

	tgc_ctx full = ctx();
	memset(&rep, 0, sizeof rep);
	tgc_page_error(&full, 404, "no page </p><script>x</script>", &rep);
	p = finish(&rep);
	assert_int_equal(p.status, 404);
	check_shell(&p, "error");
	assert_true(has(p.body, "<h1>404 Not Found</h1>"));
	assert_true(has(p.body, "<p>no page &lt;/p&gt;&lt;script&gt;x&lt;/script&gt;</p>"));
	page_free(&p);
}

static void test_assets(void **state)
{
	(void)state;
	size_t len = 0;
	const char *type = NULL;
	const char *css = tgc_asset("console.css", &len, &type);
	assert_non_null(css);
	assert_int_equal(len, strlen(css));
	assert_string_equal(type, "text/css; charset=utf-8");
	assert_true(has(css, ".badge-persisted"));
	assert_true(has(css, "prefers-color-scheme: dark"));
	const char *js = tgc_asset("console.js", &len, &type);
	assert_non_null(js);
	assert_string_equal(type, "text/javascript; charset=utf-8");
	assert_true(has(js, "new EventSource('/events'"));
	assert_true(has(js, "data-stream"));
	assert_true(has(js, "/approvals?fragment=1"));
	assert_false(has(js, "innerHTML"));   /* rows are built from text, never parsed */
	assert_false(has(js, "eval("));
	assert_null(tgc_asset("../console.css", &len, &type));
	assert_null(tgc_asset("console.js.map", &len, &type));
	assert_null(tgc_asset(NULL, &len, &type));
}

/* ---- live.c ---- */

static void test_live(void **state)
{
	(void)state;
	char first[37], pending[37], invalid[37], last[37];
	assert_int_equal(call("list_dir", "{}", EVIL_SESSION, first), TG_PERSISTED);
	assert_int_equal(call("write_file", "{\"path\":\"x.txt\",\"content\":\"" "</pre><script>"
	                      "alert(1)</script>\\\"'&\\n" "\"}", NULL, pending), TG_PENDING);
	assert_int_equal(call(EVIL_TOOL, "{}", NULL, invalid), TG_INVALID);
	assert_int_equal(call("read_file", "{\"path\":\"secret.txt\"}", "s2", last), TG_DENIED);

	page p = render(tgc_page_live, TGC_LIVE, NULL, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "live");
	assert_true(has(p.body, "<a href=\"/live\" class=\"active\""));
	assert_true(has(p.body, "<form id=\"filters\" method=\"get\" action=\"/live\">"));
	assert_true(has(p.body, "name=\"tool\""));
	assert_true(has(p.body, "<select name=\"status\">"));
	assert_true(has(p.body, "<option value=\"\">"));
	for (int s = 0; s < TG_STATUS__COUNT; s++) {
		char opt[64];
		snprintf(opt, sizeof opt, "<option value=\"%s\">", tg_status_name((tg_status)s));
		assert_true(has(p.body, opt));
	}
	assert_true(has(p.body, "name=\"session\""));
	assert_true(has(p.body, "name=\"principal\""));
	assert_int_equal(count(p.body, "<tr class=\"call\""), 4);

	/* newest first: the denied read, ..., the list_dir */
	char row[128];
	snprintf(row, sizeof row, "<tr class=\"call\" data-op-id=\"%s\" data-status=\"denied\">", last);
	const char *r_last = at(p.body, row);
	snprintf(row, sizeof row, "<tr class=\"call\" data-op-id=\"%s\" data-status=\"persisted\">",
	         first);
	const char *r_first = at(p.body, row);
	assert_true(r_last < r_first);
	assert_ptr_equal(r_last, strstr(p.body, "<tr class=\"call\""));

	/* the cells of a row */
	const char *tr = r_last;
	static const char *const cells[] = {"<td class=\"time\"><time datetime=\"",
	                                    "<td class=\"session\"><a href=\"/sessions/s2\">s2</a>",
	                                    "<td class=\"principal\">local</td>",
	                                    "<td class=\"tool\"><a href=\"/calls/",
	                                    "<td class=\"summary\">{&quot;",
	                                    "&quot;path&quot;:&quot;secret.txt&quot;}</td>",
	                                    "<td class=\"status\"><span class=\"badge badge-denied\">",
	                                    "<td class=\"stage\">decide</td>",
	                                    "<td class=\"duration\">"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cells); i++) {
		const char *cell = strstr(tr, cells[i]);
		if (!cell || cell > strstr(tr, "</tr>"))
			fail_msg("the row has no %s", cells[i]);
	}

	/* hostile text: escaped in the summary, the session link and the tool name */
	assert_false(has(p.body, "<script>alert"));
	assert_true(has(p.body, "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_true(has(p.body, "<a href=\"/sessions/s-%22%3E%3Cb%3Ex%26y%3C%2Fb%3E\">"
	                        "s-&quot;&gt;&lt;b&gt;x&amp;y&lt;/b&gt;</a>"));
	assert_true(has(p.body, "&lt;img src=x onerror=alert(1)&gt;"));
	page_free(&p);

	/* filters: status (the select keeps it), session, principal */
	tgc_params q = {0};
	q_set(&q, "status", "pending");
	p = render(tgc_page_live, TGC_LIVE, NULL, &q);
	assert_int_equal(count(p.body, "<tr class=\"call\""), 1);
	snprintf(row, sizeof row, "data-op-id=\"%s\"", pending);
	assert_true(has(p.body, row));
	assert_true(has(p.body, "<option value=\"pending\" selected>"));
	page_free(&p);
	q_free(&q);

	q_set(&q, "session", EVIL_SESSION);
	p = render(tgc_page_live, TGC_LIVE, NULL, &q);
	assert_int_equal(count(p.body, "<tr class=\"call\""), 1);
	assert_true(has(p.body, "name=\"session\" value=\"s-&quot;&gt;&lt;b&gt;x&amp;y&lt;/b&gt;\""));
	check_shell(&p, "live");
	page_free(&p);
	q_free(&q);

	q_set(&q, "principal", "nobody");
	p = render(tgc_page_live, TGC_LIVE, NULL, &q);
	assert_int_equal(count(p.body, "<tr class=\"call\""), 0);
	assert_true(has(p.body, "<p class=\"empty\" id=\"no-calls\">"));
	page_free(&p);
	q_free(&q);

	q_set(&q, "principal", "local");
	q_set(&q, "tool", "list_dir");
	p = render(tgc_page_live, TGC_LIVE, NULL, &q);
	assert_int_equal(count(p.body, "<tr class=\"call\""), 1);
	assert_true(has(p.body, "<p class=\"empty\" id=\"no-calls\" hidden>"));
	page_free(&p);
	q_free(&q);
}

/* ---- approvals.c ---- */

/* The approval of a pending call: its id into id[37]. */
static void approval_of(const char *op_id, char *id)
{
	char *err = NULL, *text = tg_approvals(g, 0, &err);
	assert_non_null(text);
	json_t *list = json_loads(text, 0, NULL);
	free(text);
	size_t i;
	json_t *a;
	id[0] = '\0';
	json_array_foreach(list, i, a)
		if (!strcmp(json_string_value(json_object_get(a, "op_id")), op_id))
			snprintf(id, 37, "%s", json_string_value(json_object_get(a, "id")));
	json_decref(list);
	assert_true(id[0]);
}

static page decide(const char *id, int approve, const char *reason)
{
	tgc_request r = {.route = TGC_DECIDE, .post = 1, .arg = (char *)id, .approve = approve};
	if (reason)
		q_set(&r.form, "reason", reason);
	tgc_ctx c = ctx();
	tgc_reply rep;
	memset(&rep, 0, sizeof rep);
	tgc_action_decide(&c, &r, &rep);
	q_free(&r.form);
	return finish(&rep);
}

static void test_approvals(void **state)
{
	(void)state;
	char op_w[37], op_s[37], op_p[37], id_w[37], id_s[37], id_p[37];

	page p = render(tgc_page_approvals, TGC_APPROVALS, NULL, NULL);
	check_shell(&p, "approvals");
	assert_true(has(p.body, "<div id=\"approvals\">\n<p class=\"empty\">"));
	page_free(&p);

	assert_int_equal(call("write_file", "{\"path\":\"notes.txt\",\"content\":\"one\\n2 "
	                      "</pre><script>alert(1)</script>\\nthree\\n\"}", NULL, op_w),
	                 TG_PENDING);
	assert_int_equal(call("shell", "{\"command\":\"echo '<b>hi</b>'\",\"workdir\":\".\"}", NULL,
	                      op_s), TG_PENDING);
	assert_int_equal(call("apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: new.txt\\n"
	                      "+<script>x</script>\\n*** End Patch\\n\"}", NULL, op_p), TG_PENDING);
	approval_of(op_w, id_w);
	approval_of(op_s, id_s);
	approval_of(op_p, id_p);

	p = render(tgc_page_approvals, TGC_APPROVALS, NULL, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "approvals");
	assert_int_equal(count(p.body, "<article class=\"approval\""), 3);
	assert_false(has(p.body, "<script>alert"));
	assert_false(has(p.body, "<script>x"));

	/* write_file: its article, with a diff from the file as it is */
	char want[256];
	snprintf(want, sizeof want,
	         "<article class=\"approval\" data-id=\"%s\" data-tool=\"write_file\">", id_w);
	const char *art = at(p.body, want);
	const char *art_end = at(art, "</article>");
	const char *diff = strstr(art, "<pre class=\"diff\">");
	assert_true(diff && diff < art_end);
	const char *del = strstr(diff, "<span class=\"del\">-two</span>");
	const char *add = strstr(diff, "<span class=\"add\">+2 &lt;/pre&gt;&lt;script&gt;alert(1)"
	                               "&lt;/script&gt;</span>");
	assert_true(del && add && del < add && add < art_end);
	assert_true(has(diff, "<span class=\"hunk\">@@"));
	assert_true(has(art, "<h2 class=\"tool\">write_file</h2>"));
	assert_true(has(art, "<dd class=\"principal\">local</dd>"));
	assert_true(has(art, "<dd class=\"reason\">ask: write_file</dd>"));
	assert_true(has(art, "<time class=\"expires\" datetime=\""));
	assert_true(has(art, "<pre class=\"args\">{&quot;content&quot;:"));
	snprintf(want, sizeof want, "<form class=\"approve\" method=\"post\" action=\"/approvals/%s/"
	                            "approve\">\n<input type=\"hidden\" name=\"csrf\" value=\"" CSRF
	                            "\">", id_w);
	assert_true(has(art, want));
	snprintf(want, sizeof want, "<form class=\"deny\" method=\"post\" action=\"/approvals/%s/"
	                            "deny\">\n<input type=\"hidden\" name=\"csrf\" value=\"" CSRF
	                            "\">\n<input type=\"text\" name=\"reason\"", id_w);
	assert_true(has(art, want));
	assert_true(has(art, "<button type=\"submit\" class=\"approve\">"));
	assert_true(has(art, "<button type=\"submit\" class=\"deny\">"));

	/* shell: argv, workdir, sandbox */
	snprintf(want, sizeof want, "data-id=\"%s\" data-tool=\"shell\">", id_s);
	art = at(p.body, want);
	const char *plan = at(art, "<dl class=\"plan\">");
	assert_true(plan < at(art, "</article>"));
	assert_true(has(plan, "<dt>argv</dt><dd><code>[&quot;"));
	assert_true(has(plan, "echo &#39;&lt;b&gt;hi&lt;/b&gt;&#39;"));
	assert_true(has(plan, "<dt>workdir</dt><dd><code>.</code></dd>"));
	assert_true(has(plan, "<dt>sandbox</dt><dd><code>workspace-write"));

	/* apply_patch: the added file */
	snprintf(want, sizeof want, "data-id=\"%s\" data-tool=\"apply_patch\">", id_p);
	art = at(p.body, want);
	assert_true(has(art, "<span class=\"add\">+&lt;script&gt;x&lt;/script&gt;</span>"));
	page_free(&p);

	/* the fragment: div#approvals alone */
	tgc_params q = {0};
	q_set(&q, "fragment", "1");
	p = render(tgc_page_approvals, TGC_APPROVALS, NULL, &q);
	assert_int_equal(p.status, 200);
	assert_int_equal(strncmp(p.body, "<div id=\"approvals\">", 20), 0);
	assert_false(has(p.body, "<html"));
	assert_false(has(p.body, "<nav"));
	assert_int_equal(count(p.body, "<article class=\"approval\""), 3);
	page_free(&p);
	q_free(&q);

	/* deny with a reason: 303 to the flash, recorded with who and why */
	p = decide(id_w, 0, "not <now>");
	assert_int_equal(p.status, 303);
	snprintf(want, sizeof want, "/approvals?decided=%s&d=denied", id_w);
	assert_string_equal(p.location, want);
	page_free(&p);

	q_set(&q, "decided", id_w);
	q_set(&q, "d", "denied");
	p = render(tgc_page_approvals, TGC_APPROVALS, NULL, &q);
	check_shell(&p, "approvals");
	const char *fl = at(p.body, "<div class=\"flash flash-denied\"");
	assert_true(has(fl, "Denied <code>write_file</code>"));
	assert_true(has(fl, ": not &lt;now&gt;."));
	assert_int_equal(count(p.body, "<article class=\"approval\""), 2);
	snprintf(want, sizeof want, "data-id=\"%s\"", id_w);
	assert_false(has(p.body, want));
	assert_true(has(p.body, "<section id=\"decided\">"));
	assert_true(has(at(p.body, "<section id=\"decided\">"), "<td>console</td>"));
	page_free(&p);
	q_free(&q);

	char *err = NULL, *text = tg_approvals(g, 1, &err);
	json_t *all = json_loads(text, 0, NULL);
	free(text);
	size_t i;
	json_t *a;
	int seen = 0;
	json_array_foreach(all, i, a) {
		if (strcmp(json_string_value(json_object_get(a, "id")), id_w))
			continue;
		seen = 1;
		assert_string_equal(json_string_value(json_object_get(a, "state")), "denied");
		assert_string_equal(json_string_value(json_object_get(a, "decided_by")), "console");
		assert_string_equal(json_string_value(json_object_get(a, "decided_reason")), "not <now>");
	}
	assert_true(seen);
	json_decref(all);

	/* approve; then deciding it again is a 409 with the store's sentence */
	p = decide(id_s, 1, NULL);
	assert_int_equal(p.status, 303);
	snprintf(want, sizeof want, "/approvals?decided=%s&d=approved", id_s);
	assert_string_equal(p.location, want);
	page_free(&p);
	p = decide(id_s, 0, NULL);
	assert_int_equal(p.status, 409);
	check_shell(&p, "error");
	assert_true(has(p.body, "already approved"));
	page_free(&p);

	/* an id that is not one, and an unknown one */
	p = decide("../../x", 1, NULL);
	assert_int_equal(p.status, 404);
	assert_null(p.location);
	page_free(&p);
	p = decide("01a22d4a-47d9-768f-9eef-a0c4ce53b0e4", 1, NULL);
	assert_int_equal(p.status, 409);
	assert_null(p.location);
	page_free(&p);

	/* the approved one left the queue too */
	p = render(tgc_page_approvals, TGC_APPROVALS, NULL, NULL);
	assert_int_equal(count(p.body, "<article class=\"approval\""), 1);
	page_free(&p);
}

/* ---- call.c ---- */

static void test_call(void **state)
{
	(void)state;
	char op[37];
	assert_int_equal(call("read_file", "{\"path\":\"notes.txt\"}", "s1", op), TG_PERSISTED);
	page p = render(tgc_page_call, TGC_CALL, op, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "call");
	assert_true(has(p.body, "<h1><span class=\"tool\">read_file</span> <span class=\"badge "
	                        "badge-persisted\">persisted</span></h1>"));
	const char *env = at(p.body, "<section id=\"envelope\">");
	assert_true(has(env, "<pre>{\n  &quot;op_id&quot;: &quot;"));
	const char *trace = at(p.body, "<table id=\"trace\">");
	assert_true(has(trace, "<td class=\"stage\">execute</td><td class=\"ok\">yes</td>"
	                       "<td class=\"ms\">"));
	assert_true(has(p.body, "<p class=\"rule\">Decided <strong>allow</strong> by <code>"));
	const char *result = at(p.body, "<section id=\"result\">");
	/* a read-only call's output is kept as its size and sha256 */
	assert_true(has(result, "<p class=\"digest\">The output of this read-only call was not kept"
	                        " (ledger.keep_output): "));
	assert_false(has(result, "<pre class=\"output\">"));
	assert_false(has(p.body, "class=\"spill\""));
	const char *events = at(p.body, "<table id=\"events\">");
	assert_true(has(events, "<td class=\"type\">tool.call.received</td>"));
	assert_true(has(events, "<td class=\"type\">tool.call.persisted</td>"));
	assert_true(has(p.body, "<a href=\"/sessions/s1\">s1</a>"));
	page_free(&p);

	/* hostile arguments and error text on the call page */
	assert_int_equal(call("write_file", "{\"path\":\"y.txt\",\"content\":\"</pre><script>"
	                      "alert(1)</script>\"}", NULL, op), TG_PENDING);
	p = render(tgc_page_call, TGC_CALL, op, NULL);
	check_shell(&p, "call");
	assert_false(has(p.body, "<script>alert"));
	assert_true(has(p.body, "<span class=\"badge badge-pending\">pending</span>"));
	assert_true(has(p.body, "<dt>kind</dt><dd>needs_approval</dd>"));
	page_free(&p);

	/* an unknown op, and what is not an op id */
	p = render(tgc_page_call, TGC_CALL, "01a22d4a-47d9-768f-9eef-a0c4ce53b0e4", NULL);
	assert_int_equal(p.status, 404);
	check_shell(&p, "error");
	assert_true(has(p.body, "<h1>404 Not Found</h1>"));
	page_free(&p);
	p = render(tgc_page_call, TGC_CALL, "<script>", NULL);
	assert_int_equal(p.status, 404);
	check_shell(&p, "error");
	assert_false(has(p.body, "<script>"));
	page_free(&p);
	p = render(tgc_page_call, TGC_CALL, NULL, NULL);
	assert_int_equal(p.status, 404);
	page_free(&p);
}

static void test_spill(void **state)
{
	(void)state;
	char op[37], plain[37];
	assert_int_equal(call("read_file", "{\"path\":\"big.txt\"}", NULL, op), TG_PERSISTED);
	assert_int_equal(call("list_dir", "{}", NULL, plain), TG_PERSISTED);

	page p = render(tgc_page_call, TGC_CALL, op, NULL);
	char want[128];
	snprintf(want, sizeof want, "<a class=\"spill\" href=\"/spill/%s\">", op);
	assert_true(has(p.body, want));
	page_free(&p);

	p = render(tgc_page_spill, TGC_SPILL, op, NULL);
	assert_int_equal(p.status, 200);
	assert_string_equal(p.type, "text/plain; charset=utf-8");
	/* the whole of it, not the capped output */
	assert_true(has(p.body, "line 0000 abcdefghijklmnopqrstuvwxyz"));
	assert_true(has(p.body, "line 0050 abcdefghijklmnopqrstuvwxyz"));
	assert_true(has(p.body, "line 0099 abcdefghijklmnopqrstuvwxyz"));
	assert_false(has(p.body, "characters omitted"));
	page_free(&p);

	/* not a UUID; no such op; an op that did not spill */
	static const char *const bad[] = {"../ledger.db", "x", "01a22d4a-47d9-768f-9eef-a0c4ce53b0e4/"
	                                  "../../x", ""};
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad); i++) {
		p = render(tgc_page_spill, TGC_SPILL, bad[i], NULL);
		assert_int_equal(p.status, 400);
		assert_string_equal(p.type, "text/html; charset=utf-8");
		page_free(&p);
	}
	p = render(tgc_page_spill, TGC_SPILL, "01a22d4a-47d9-768f-9eef-a0c4ce53b0e4", NULL);
	assert_int_equal(p.status, 404);
	page_free(&p);
	p = render(tgc_page_spill, TGC_SPILL, plain, NULL);
	assert_int_equal(p.status, 404);
	assert_true(has(p.body, "not spilled"));
	page_free(&p);

	/* the spill file swapped for a symlink to a file outside: refused */
	char path[256], outside[256];
	snprintf(path, sizeof path, "%s/.toolgate/spill/%s.txt", ws, op);
	snprintf(outside, sizeof outside, "%s/secret.txt", ws);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(outside, path), 0);
	p = render(tgc_page_spill, TGC_SPILL, op, NULL);
	assert_int_equal(p.status, 404);
	assert_false(has(p.body, "hunter2"));
	page_free(&p);

	/* no spill directory at all (the call ran on another host): a 404, and
	 * the page does not make one */
	char cmd[256], dir[160];
	snprintf(dir, sizeof dir, "%s/.toolgate/spill", ws);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	p = render(tgc_page_spill, TGC_SPILL, op, NULL);
	assert_int_equal(p.status, 404);
	check_shell(&p, "error");
	page_free(&p);
	struct stat st;
	assert_int_equal(lstat(dir, &st), -1);
}

/* ---- stats.c ---- */

/* The svg of id on the page, NUL-terminated copy (caller frees). */
static char *svg_of(const char *body, const char *id)
{
	char want[64];
	snprintf(want, sizeof want, "<svg class=\"chart\" id=\"%s\"", id);
	const char *s = at(body, want);
	const char *e = at(s, "</svg>");
	return tgi_strndup(s, (size_t)(e - s));
}

static void test_stats(void **state)
{
	(void)state;
	page p = render(tgc_page_stats, TGC_STATS, NULL, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "stats");
	assert_true(has(p.body, "<p class=\"empty\">No calls in this window.</p>"));
	char *none = svg_of(p.body, "chart-calls");       /* the charts are there, empty */
	assert_int_equal(count(none, "<g class=\"bar\""), 0);
	assert_true(has(none, "<text class=\"none\""));
	free(none);
	assert_true(has(p.body, "<table id=\"tools\">"));
	page_free(&p);

	assert_int_equal(call("list_dir", "{}", NULL, NULL), TG_PERSISTED);
	assert_int_equal(call("list_dir", "{}", NULL, NULL), TG_PERSISTED);
	assert_int_equal(call("read_file", "{\"path\":\"notes.txt\"}", NULL, NULL), TG_PERSISTED);
	assert_int_equal(call("read_file", "{\"path\":\"secret.txt\"}", NULL, NULL), TG_DENIED);
	assert_int_equal(call("read_file", "{\"path\":\"nope.txt\"}", NULL, NULL), TG_FAILED);
	assert_int_equal(call(EVIL_TOOL, "{}", NULL, NULL), TG_INVALID);

	tgc_params q = {0};
	q_set(&q, "window", "all");
	p = render(tgc_page_stats, TGC_STATS, NULL, &q);
	assert_int_equal(p.status, 200);
	check_shell(&p, "stats");
	assert_true(has(p.body, "<nav class=\"windows\">"));
	assert_true(has(p.body, "<a href=\"/stats?window=all\" class=\"active\""));
	assert_true(has(p.body, "<a href=\"/stats?window=hour\">"));

	char *err = NULL, *text = tg_stats(g, 0, &err);
	json_t *st = json_loads(text, 0, NULL);
	free(text);
	size_t ntools = json_array_size(json_object_get(st, "tools"));
	size_t ndenials = json_array_size(json_object_get(st, "denials"));
	json_decref(st);
	assert_int_equal(ntools, 3);       /* list_dir, read_file and the unknown one */

	char *svg = svg_of(p.body, "chart-calls");
	assert_int_equal(count(svg, "<g class=\"bar\""), ntools);
	assert_true(has(svg, "data-name=\"list_dir\""));
	assert_true(has(svg, "<rect class=\"seg seg-persisted\""));
	assert_true(has(svg, "<rect class=\"seg seg-denied\""));
	assert_true(has(svg, "<rect class=\"seg seg-failed\""));
	assert_true(has(svg, "&lt;img src=x onerror=alert(1)&gt;"));
	free(svg);
	svg = svg_of(p.body, "chart-latency");
	assert_int_equal(count(svg, "<g class=\"bar\""), ntools);
	assert_true(has(svg, "<rect class=\"p99\""));
	free(svg);
	svg = svg_of(p.body, "chart-denials");
	assert_int_equal(count(svg, "<g class=\"bar\""), ndenials);
	assert_true(has(svg, "read_file(./secret.txt)"));
	free(svg);
	const char *tools = at(p.body, "<table id=\"tools\">");
	assert_int_equal(count(tools, "<tr><td class=\"tool\">"), ntools);
	page_free(&p);
	q_free(&q);

	q_set(&q, "window", "hour");
	p = render(tgc_page_stats, TGC_STATS, NULL, &q);
	svg = svg_of(p.body, "chart-calls");
	assert_int_equal(count(svg, "<g class=\"bar\""), ntools);
	free(svg);
	page_free(&p);
	q_free(&q);

	q_set(&q, "window", "week\"><script>");
	p = render(tgc_page_stats, TGC_STATS, NULL, &q);
	assert_int_equal(p.status, 400);
	check_shell(&p, "error");
	page_free(&p);
	q_free(&q);
}

/* ---- sessions.c ---- */

static void test_sessions(void **state)
{
	(void)state;
	page p = render(tgc_page_sessions, TGC_SESSIONS, NULL, NULL);
	check_shell(&p, "sessions");
	assert_true(has(p.body, "<table id=\"sessions\">"));
	assert_true(has(p.body, "<p class=\"empty\">"));
	page_free(&p);

	/* an agent session (the built-in scripted demo), and calls of a hostile session id */
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(out);
	tg_agent_options ao = {.prompt = "Bump the port", .session = "agent-1", .out = out};
	char *err = NULL;
	int rc = tg_agent(g, &ao, &err);
	if (rc < 0)
		fail_msg("agent: %s", err);
	fclose(out);
	char op1[37], op2[37];
	assert_int_equal(call("list_dir", "{}", EVIL_SESSION, op1), TG_PERSISTED);
	assert_int_equal(call("read_file", "{\"path\":\"secret.txt\"}", EVIL_SESSION, op2), TG_DENIED);

	p = render(tgc_page_sessions, TGC_SESSIONS, NULL, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "sessions");
	const char *evil = at(p.body, "<a href=\"/sessions/s-%22%3E%3Cb%3Ex%26y%3C%2Fb%3E\">"
	                              "s-&quot;&gt;&lt;b&gt;x&amp;y&lt;/b&gt;</a>");
	const char *agent = at(p.body, "<a href=\"/sessions/agent-1\">agent-1</a>");
	assert_true(evil < agent);          /* the latest active first */
	assert_true(has(evil, "<td class=\"num\">2</td><td class=\"num\">1</td>"));
	page_free(&p);

	/* the hostile session's timeline: its two calls, in order */
	p = render(tgc_page_session, TGC_SESSION, EVIL_SESSION, NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "session");
	char want[128];
	snprintf(want, sizeof want, "<li class=\"call\" data-op-id=\"%s\">", op1);
	const char *c1 = at(p.body, want);
	snprintf(want, sizeof want, "<li class=\"call\" data-op-id=\"%s\">", op2);
	const char *c2 = at(p.body, want);
	assert_true(c1 < c2);
	assert_true(has(c2, "<span class=\"badge badge-denied\">"));
	snprintf(want, sizeof want, "<a href=\"/calls/%s\">list_dir</a>", op1);
	assert_true(has(c1, want));
	assert_int_equal(count(p.body, "<li class=\"turn"), 0);
	page_free(&p);

	/* the agent's: turns and calls, each call after the turn that asked for it */
	tg_log_query lq = {.session = "agent-1"};
	char *text = tg_log(g, &lq, &err);
	json_t *ops = json_loads(text, 0, NULL);
	free(text);
	assert_true(json_array_size(ops) >= 3);
	p = render(tgc_page_session, TGC_SESSION, "agent-1", NULL);
	assert_int_equal(p.status, 200);
	check_shell(&p, "session");
	const char *tl = at(p.body, "<ol id=\"timeline\">");
	assert_ptr_equal(strstr(tl, "<li"), strstr(tl, "<li class=\"turn role-user\">"));
	assert_true(has(tl, "Bump the port"));
	assert_int_equal(count(tl, "<li class=\"call\""), json_array_size(ops));
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		const char *id = json_string_value(json_object_get(op, "op_id"));
		const char *tool = json_string_value(json_object_get(op, "tool"));
		snprintf(want, sizeof want, "<li class=\"call\" data-op-id=\"%s\">", id);
		const char *li = at(tl, want);
		/* the nearest turn before it is the assistant's that asked for this tool */
		const char *turn = NULL;
		for (const char *s = tl; (s = strstr(s, "<li class=\"turn")) && s < li; s++)
			turn = s;
		assert_non_null(turn);
		assert_int_equal(strncmp(turn, "<li class=\"turn role-assistant\">", 32), 0);
		char asked[160];
		snprintf(asked, sizeof asked, "\xe2\x86\x92 %s", tool);
		const char *mark = strstr(turn, asked);
		assert_true(mark && mark < li);
	}
	json_decref(ops);
	page_free(&p);

	/* an unknown session */
	p = render(tgc_page_session, TGC_SESSION, "nobody-<here>", NULL);
	assert_int_equal(p.status, 404);
	check_shell(&p, "error");
	page_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_login_and_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_assets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_approvals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
