/*
 * call.c — one call in full (GET /calls/<op_id>) and its spilled output
 * (GET /spill/<op_id>).
 *
 * The Call page: the tool and its status badge, who and when, the rule
 * that decided, the result (error, output, and a link to the spilled file
 * when the output was capped), the per-stage trace with its timings, the
 * envelope as pretty JSON, and every event of the call.
 *
 * The spill page serves <state dir>/spill/<op_id>.txt as text/plain, only
 * for an op id shaped like a UUID whose envelope names exactly that spill
 * path, opened beneath the gate's checked state directory (no symlink, a
 * regular file of ours): the request never names a path.
 *
 * Owns: the Call page's markup and the spill reply.  Must not: write
 * anything, or open a file any request names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "console/console.h"
#include "gate/gate.h"
#include "mw/mw.h"

#define SHOW_JSON_MAX  (512u * 1000)      /* bytes of the envelope or output shown */
#define EVENT_DATA_MAX 1000               /* bytes of an event's data shown */
#define SPILL_MAX      (8ull << 20)       /* bytes of a spill file served */

/* The one op of op_id as tg_log gives it (new reference), or NULL with
 * the page answered (404 for none, 500 for a ledger error). */
static json_t *op_read(const tgc_ctx *c, const char *op_id, tgc_reply *rep)
{
	if (!op_id || !tgi_uuid_ok(op_id)) {
		tgc_page_error(c, 404, "there is no call with that op id (op ids are UUIDs)", rep);
		return NULL;
	}
	tg_log_query q = {.op_id = op_id, .limit = 1};
	char *err = NULL;
	char *text = tg_log(c->g, &q, &err);
	json_t *ops = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	json_t *op = json_is_array(ops) ? json_incref(json_array_get(ops, 0)) : NULL;
	if (!json_is_array(ops)) {
		tgc_page_error(c, 500, err ? err : "the ledger's calls could not be read", rep);
	} else if (!op) {
		char msg[128];
		tgi_snprintf(msg, sizeof msg, "there is no call %s in the ledger", op_id);
		tgc_page_error(c, 404, msg, rep);
	}
	json_decref(ops);
	free(err);
	return op;
}

/* text escaped, cut at max bytes (on a UTF-8 boundary) with a note. */
static void text_cut(tgi_buf *b, char *text, size_t max)
{
	size_t n = strlen(text);
	if (n <= max) {
		tgc_html_text(b, text);
		return;
	}
	size_t cut = max;
	while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
		cut--;
	text[cut] = '\0';
	tgc_html_text(b, text);
	tgi_buf_printf(b, "\xe2\x80\xa6 (%zu more bytes not shown)", n - cut);
}

/* v as JSON text (a string as its own text), escaped, cut at max bytes. */
static void json_shown(tgi_buf *b, const json_t *v, size_t flags, size_t max)
{
	char *text = json_is_string(v) ? tgi_strdup(json_string_value(v))
	                               : json_dumps(v, flags | JSON_ENCODE_ANY);
	if (text)
		text_cut(b, text, max);
	free(text);
}

static void meta_row(tgi_buf *b, const char *dt, const char *dd)
{
	if (!dd)
		return;
	tgi_buf_printf(b, "<dt>%s</dt><dd>", dt);
	tgc_html_text(b, dd);
	tgi_buf_puts(b, "</dd>\n");
}

static void call_meta(tgi_buf *b, const json_t *op, const json_t *env)
{
	const char *session = json_string_value(json_object_get(op, "session"));
	json_t *dur = json_object_get(op, "duration_ms");
	tgi_buf_puts(b, "<dl class=\"meta\">\n");
	meta_row(b, "Op id", json_string_value(json_object_get(op, "op_id")));
	meta_row(b, "Call id", json_string_value(json_object_get(op, "call_id")));
	if (session) {
		tgi_buf_puts(b, "<dt>Session</dt><dd><a href=\"/sessions/");
		tgc_html_url(b, session);
		tgi_buf_puts(b, "\">");
		tgc_html_text(b, session);
		tgi_buf_puts(b, "</a></dd>\n");
	}
	meta_row(b, "Principal", json_string_value(json_object_get(op, "principal")));
	tgi_buf_puts(b, "<dt>Started</dt><dd>");
	tgc_html_time(b, json_string_value(json_object_get(op, "started")), NULL);
	tgi_buf_puts(b, "</dd>\n<dt>Duration</dt><dd>");
	tgc_html_duration(b, json_is_number(dur) ? json_number_value(dur) : -1);
	tgi_buf_puts(b, "</dd>\n");
	meta_row(b, "Idempotency key", json_string_value(json_object_get(env, "idempotency_key")));
	meta_row(b, "Arguments sha256", json_string_value(json_object_get(op, "args_sha256")));
	tgi_buf_puts(b, "</dl>\n");
}

/* p.rule: the rule of the decide stage, else the error's. */
static void call_rule(tgi_buf *b, const json_t *env)
{
	const char *rule = NULL, *decision = NULL;
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st) {
		const char *name = json_string_value(json_object_get(st, "stage"));
		if (name && !strcmp(name, "decide")) {
			rule = json_string_value(json_object_get(st, "rule"));
			decision = json_string_value(json_object_get(st, "decision"));
		}
	}
	if (!rule)
		rule = json_string_value(json_object_get(json_object_get(env, "error"), "rule"));
	tgi_buf_puts(b, "<p class=\"rule\">");
	if (rule) {
		tgi_buf_puts(b, "Decided");
		if (decision) {
			tgi_buf_puts(b, " <strong>");
			tgc_html_text(b, decision);
			tgi_buf_puts(b, "</strong>");
		}
		tgi_buf_puts(b, " by <code>");
		tgc_html_text(b, rule);
		tgi_buf_puts(b, "</code>");
	} else {
		tgi_buf_puts(b, "No rule decided this call: it stopped before the decide stage.");
	}
	tgi_buf_puts(b, "</p>\n");
}

static void call_result(tgi_buf *b, const json_t *env, const char *op_id)
{
	const json_t *err = json_object_get(env, "error");
	const json_t *out = json_object_get(env, "output");
	const json_t *trunc = json_object_get(env, "truncated");
	tgi_buf_puts(b, "<section id=\"result\">\n<h2>Result</h2>\n");
	if (json_is_object(err)) {
		tgi_buf_puts(b, "<dl class=\"error\">\n");
		static const char *const keys[] = {"kind", "message", "field", "applied", "approval_id"};
		for (size_t i = 0; i < TGI_ARRAY_LEN(keys); i++)
			meta_row(b, keys[i], json_string_value(json_object_get(err, keys[i])));
		json_t *retry = json_object_get(err, "retry_after_s");
		if (json_is_number(retry))
			tgi_buf_printf(b, "<dt>retry_after_s</dt><dd>%g</dd>\n", json_number_value(retry));
		tgi_buf_puts(b, "</dl>\n");
	}
	const char *hint = json_string_value(json_object_get(env, "hint"));
	if (hint) {
		tgi_buf_puts(b, "<p class=\"hint\">");
		tgc_html_text(b, hint);
		tgi_buf_puts(b, "</p>\n");
	}
	if (out && !json_is_null(out)) {
		tgi_buf_puts(b, "<pre class=\"output\">");
		json_shown(b, out, JSON_INDENT(2), SHOW_JSON_MAX);
		tgi_buf_puts(b, "</pre>\n");
	} else if (json_is_object(json_object_get(env, "output_digest"))) {
		/* a read-only call's output is kept as its size and sha256 (persist.c) */
		const json_t *d = json_object_get(env, "output_digest");
		const char *sha = json_string_value(json_object_get(d, "sha256"));
		tgi_buf_printf(b, "<p class=\"digest\">The output of this read-only call was not kept "
		                  "(ledger.keep_output): %lld bytes, sha256 <code>",
		               (long long)json_integer_value(json_object_get(d, "bytes")));
		tgc_html_text(b, sha ? sha : "?");
		tgi_buf_puts(b, "</code>.</p>\n");
	} else if (!json_is_object(err)) {
		tgi_buf_puts(b, "<p class=\"empty\">No output.</p>\n");
	}
	if (json_is_object(trunc)) {
		json_t *chars = json_object_get(trunc, "original_chars");
		tgi_buf_printf(b, "<p class=\"truncated\">The output was capped (%lld characters in "
		                  "all). ", (long long)json_integer_value(chars));
		if (json_is_string(json_object_get(trunc, "spill_path"))) {
			tgi_buf_puts(b, "<a class=\"spill\" href=\"/spill/");
			tgc_html_url(b, op_id);
			tgi_buf_puts(b, "\">The full output</a>.");
		} else {
			tgi_buf_puts(b, "The full output could not be saved.");
		}
		tgi_buf_puts(b, "</p>\n");
	}
	tgi_buf_puts(b, "</section>\n");
}

/* table#trace: stage, ok, ms and what else the stage recorded. */
static void call_trace(tgi_buf *b, const json_t *env)
{
	tgi_buf_puts(b, "<h2>Trace</h2>\n<table id=\"trace\">\n<thead><tr><th>Stage</th><th>OK</th>"
	                "<th>ms</th><th>Details</th></tr></thead>\n<tbody>\n");
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st) {
		int ok = json_is_true(json_object_get(st, "ok"));
		json_t *ms = json_object_get(st, "ms");
		tgi_buf_printf(b, "<tr class=\"%s\"><td class=\"stage\">", ok ? "ok" : "stopped");
		tgc_html_text(b, json_string_value(json_object_get(st, "stage")));
		tgi_buf_printf(b, "</td><td class=\"ok\">%s</td><td class=\"ms\">", ok ? "yes" : "no");
		if (json_is_number(ms))
			tgi_buf_printf(b, "%.3f", json_number_value(ms));
		tgi_buf_puts(b, "</td><td class=\"details\">");
		json_t *rest = json_deep_copy(st);
		json_object_del(rest, "stage");
		json_object_del(rest, "ok");
		json_object_del(rest, "ms");
		if (json_object_size(rest))
			json_shown(b, rest, JSON_COMPACT, 4096);
		json_decref(rest);
		tgi_buf_puts(b, "</td></tr>\n");
	}
	tgi_buf_puts(b, "</tbody>\n</table>\n");
}

/* table#events: seq, time, type, stage, data. */
static void call_events(tgi_buf *b, const json_t *op)
{
	tgi_buf_puts(b, "<h2>Events</h2>\n<table id=\"events\">\n<thead><tr><th>Seq</th><th>Time</th>"
	                "<th>Type</th><th>Stage</th><th>Data</th></tr></thead>\n<tbody>\n");
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(op, "events"), i, ev) {
		json_t *seq = json_object_get(ev, "seq"), *data = json_object_get(ev, "data");
		tgi_buf_printf(b, "<tr><td class=\"seq\">%lld</td><td class=\"time\">",
		               (long long)json_integer_value(seq));
		tgc_html_time(b, json_string_value(json_object_get(ev, "ts")), NULL);
		tgi_buf_puts(b, "</td><td class=\"type\">");
		tgc_html_text(b, json_string_value(json_object_get(ev, "type")));
		tgi_buf_puts(b, "</td><td class=\"stage\">");
		tgc_html_text(b, json_string_value(json_object_get(ev, "stage")));
		tgi_buf_puts(b, "</td><td class=\"data\">");
		if (data && !json_is_null(data))
			json_shown(b, data, JSON_COMPACT, EVENT_DATA_MAX);
		tgi_buf_puts(b, "</td></tr>\n");
	}
	tgi_buf_puts(b, "</tbody>\n</table>\n");
}

void tgc_page_call(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	json_t *op = op_read(c, r->arg, rep);
	if (!op)
		return;
	const json_t *env = json_object_get(op, "envelope");
	const char *tool = json_string_value(json_object_get(op, "tool"));
	const char *op_id = json_string_value(json_object_get(op, "op_id"));
	char title[192];
	tgi_snprintf(title, sizeof title, "%s call", tool ? tool : "?");

	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, title, TGC_CALL);
	tgi_buf_puts(b, "<h1><span class=\"tool\">");
	tgc_html_text(b, tool);
	tgi_buf_puts(b, "</span> ");
	tgc_html_badge(b, json_string_value(json_object_get(op, "status")));
	tgi_buf_puts(b, "</h1>\n");
	call_meta(b, op, env);
	call_rule(b, env);
	call_result(b, env, op_id);
	call_trace(b, env);
	tgi_buf_puts(b, "<section id=\"envelope\">\n<h2>Envelope</h2>\n<pre>");
	json_shown(b, env, JSON_INDENT(2), SHOW_JSON_MAX);
	tgi_buf_puts(b, "</pre>\n</section>\n");
	call_events(b, op);
	tgc_html_end(b);
	json_decref(op);
}

/* ---- the spilled output ---- */

/* Read the spill file of op_id beneath the state dir into b: 0, or -1
 * with a sentence. */
static int spill_read(const tgc_ctx *c, const char *op_id, tgi_buf *b, char *err, size_t errlen)
{
	struct stat st;
	/* the checks' opener would make a missing directory: a page makes nothing */
	if (fstatat(c->g->state_fd, "spill", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
		tgi_snprintf(err, errlen, "there are no spill files here (.toolgate/spill is missing: "
		                          "the call may have run on another host)");
		return -1;
	}
	int dir = tgi_state_subdir_open(c->g->state_fd, "spill", ".toolgate/spill", "spill files",
	                                NULL, err, errlen);
	if (dir < 0)
		return -1;
	char name[64];
	tgi_snprintf(name, sizeof name, "%s.txt", op_id);
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int saved = errno;
	close(dir);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "the spill file .toolgate/spill/%s cannot be opened: %s", name,
		             strerror(saved));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		tgi_snprintf(err, errlen, "the spill file .toolgate/spill/%s is not a regular file of "
		                          "this user's", name);
		return -1;
	}
	tgi_buf_free(b);
	tgi_buf_init(b, SPILL_MAX + 256);
	char chunk[65536];
	ssize_t n;
	size_t total = 0;
	while ((n = read(fd, chunk, sizeof chunk)) > 0) {
		size_t keep = total + (size_t)n > SPILL_MAX ? SPILL_MAX - total : (size_t)n;
		tgi_buf_append(b, chunk, keep);
		total += (size_t)n;
		if (total >= SPILL_MAX)
			break;
	}
	saved = errno;
	close(fd);
	if (n < 0) {
		tgi_snprintf(err, errlen, "the spill file .toolgate/spill/%s cannot be read: %s", name,
		             strerror(saved));
		return -1;
	}
	/* the file holds the tool's output as it was: mask it as the ledger's copy is */
	char *masked = tgi_redact_text(c->g->redact, b->p ? b->p : "", b->len);
	tgi_buf_free(b);
	tgi_buf_init(b, SPILL_MAX * 2 + 256);
	tgi_buf_puts(b, masked);
	free(masked);
	if (total >= SPILL_MAX && (off_t)total < st.st_size)
		tgi_buf_printf(b, "\n\n[... cut: the file is %lld bytes; the console serves %llu ...]\n",
		               (long long)st.st_size, SPILL_MAX);
	return 0;
}

void tgc_page_spill(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	if (!r->arg || !tgi_uuid_ok(r->arg)) {
		tgc_page_error(c, 400, "a spill file is named by its call's op id, a UUID", rep);
		return;
	}
	json_t *op = op_read(c, r->arg, rep);
	if (!op)
		return;
	const json_t *trunc = json_object_get(json_object_get(op, "envelope"), "truncated");
	const char *path = json_string_value(json_object_get(trunc, "spill_path"));
	const char *op_id = json_string_value(json_object_get(op, "op_id"));
	char want[128], err[512];
	tgi_snprintf(want, sizeof want, ".toolgate/spill/%s.txt", op_id ? op_id : "");
	if (!path || !op_id || strcmp(path, want) || strcmp(op_id, r->arg)) {
		json_decref(op);
		tgc_page_error(c, 404, "this call's output was not spilled to a file", rep);
		return;
	}
	json_decref(op);
	tgc_reply_html(rep, 200);
	if (spill_read(c, r->arg, &rep->body, err, sizeof err) < 0) {
		tgc_page_error(c, 404, err, rep);
		return;
	}
	rep->type = "text/plain; charset=utf-8";
}
