/*
 * plan_text.c — what a call would do, for a person at a terminal: a plan
 * (tgi_call_plan's object, as a dry run and an approval carry it) as
 * lines — a write's or a patch's paths and unified diff, a command's argv
 * (quoted as a shell would need it), workdir, sandbox and timeout — and the
 * colour a status is shown in.  The approval prompt (approve.c), the agent
 * transcript (agent/loop.c) and the CLI (tg_plan_text, tg_status_sgr) use
 * them, so a plan reads the same wherever a person decides on it.
 *
 * Owns: those texts.  Must not: make a plan (the tools do) or decide
 * whether to colour (the caller knows where the text goes).  Text from
 * files, models and tools is data: control characters never reach the
 * terminal as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "util/util.h"

#define PLAN_TEXT_MAX (8u << 20)

#define SGR_RESET "\033[0m"

static const struct {
	const char *status, *sgr;
} status_sgr[] = {
	{"persisted", "32"}, {"replayed", "32"}, {"dry_run", "36"}, {"pending", "33"},
	{"denied", "31"},    {"invalid", "31"},  {"failed", "1;31"}, {"committed", "35"},
};

const char *tgi_status_sgr(const char *status)
{
	for (size_t i = 0; status && i < TGI_ARRAY_LEN(status_sgr); i++)
		if (!strcmp(status, status_sgr[i].status))
			return status_sgr[i].sgr;
	return "";
}

const char *tg_status_sgr(const char *status)
{
	return tgi_status_sgr(status);
}

/* n bytes of s with C0 and C1 control characters (but newline and tab) and
 * DEL as spaces: what a file or a model wrote is shown, never obeyed. */
static void put_clean(tgi_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f) {
			tgi_buf_puts(b, "  ");
			i++;
		} else {
			char c = (ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? ' ' : (char)ch;
			tgi_buf_append(b, &c, 1);
		}
	}
}

static void paint(tgi_buf *b, int color, const char *sgr, const char *s, size_t n)
{
	if (color && sgr && *sgr)
		tgi_buf_printf(b, "\033[%sm", sgr);
	put_clean(b, s, n);
	if (color && sgr && *sgr)
		tgi_buf_puts(b, SGR_RESET);
}

/* A word as a POSIX shell would need it written: bare when it holds only
 * safe characters, else in single quotes, or in $'...' when it holds
 * control characters (which are then escaped, never written). */
static void put_word(tgi_buf *b, const char *w)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                           "0123456789_@%+=:,./-";
	size_t n = strlen(w);
	int ctl = 0;
	for (size_t i = 0; i < n; i++)
		ctl |= (unsigned char)w[i] < 0x20 || w[i] == 0x7f;
	if (n && strspn(w, safe) == n) {
		tgi_buf_puts(b, w);
	} else if (!ctl) {
		tgi_buf_puts(b, "'");
		for (const char *p = w; *p; p++)
			tgi_buf_puts(b, *p == '\'' ? "'\\''" : (char[2]){*p, 0});
		tgi_buf_puts(b, "'");
	} else {
		tgi_buf_puts(b, "$'");
		for (const char *p = w; *p; p++) {
			unsigned char ch = (unsigned char)*p;
			if (ch == '\n')
				tgi_buf_puts(b, "\\n");
			else if (ch == '\t')
				tgi_buf_puts(b, "\\t");
			else if (ch < 0x20 || ch == 0x7f)
				tgi_buf_printf(b, "\\x%02x", ch);
			else if (ch == '\'' || ch == '\\')
				tgi_buf_printf(b, "\\%c", ch);
			else
				tgi_buf_append(b, p, 1);
		}
		tgi_buf_puts(b, "'");
	}
}

/* A unified diff, each line indented, coloured as git colours it. */
static void put_diff(tgi_buf *b, const char *diff, int color)
{
	const char *p = diff;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *sgr = !strncmp(p, "+++", 3) || !strncmp(p, "---", 3) ? "1"
		                : *p == '+' ? "32" : *p == '-' ? "31" : *p == '@' ? "36" : NULL;
		tgi_buf_puts(b, "    ");
		paint(b, color, sgr, p, n);
		tgi_buf_puts(b, "\n");
		p += n + (nl ? 1 : 0);
	}
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* "+3 -1" when the plan counted the lines, into out. */
static const char *counts(const json_t *o, char *out, size_t cap)
{
	const json_t *a = json_object_get(o, "added_lines"), *r = json_object_get(o, "removed_lines");
	if (json_is_integer(a) && json_is_integer(r))
		tgi_snprintf(out, cap, ", +%lld -%lld", (long long)json_integer_value(a),
		             (long long)json_integer_value(r));
	else
		out[0] = '\0';
	return out;
}

static void put_line(tgi_buf *b, const char *label, const char *text)
{
	tgi_buf_printf(b, "  %s ", label);
	put_clean(b, text, strlen(text));
	tgi_buf_puts(b, "\n");
}

static void put_command(tgi_buf *b, const json_t *plan, int color)
{
	size_t i;
	json_t *w;
	tgi_buf_puts(b, "  ");
	paint(b, color, "1", "$", 1);
	json_array_foreach(json_object_get(plan, "argv"), i, w) {
		tgi_buf_puts(b, " ");
		put_word(b, json_string_value(w) ? json_string_value(w) : "");
	}
	tgi_buf_puts(b, "\n");
	const json_t *sb = json_object_get(plan, "sandbox");
	const json_t *net = json_object_get(sb, "network");
	char line[512], hosts[256] = "";
	if (json_is_array(net)) {
		tgi_buf hb;
		tgi_buf_init(&hb, sizeof hosts - 1);
		json_array_foreach(net, i, w)
			tgi_buf_printf(&hb, "%s%s", i ? " " : "", json_string_value(w) ? json_string_value(w) : "");
		tgi_snprintf(hosts, sizeof hosts, "only to %s", hb.p ? hb.p : "");
		tgi_buf_free(&hb);
	}
	if (str(plan, "workdir"))
		put_line(b, "workdir", str(plan, "workdir"));
	if (json_is_object(sb)) {
		tgi_snprintf(line, sizeof line, "%s (%s), network %s",
		             str(sb, "mode") ? str(sb, "mode") : "?",
		             str(sb, "backend") ? str(sb, "backend") : "?",
		             hosts[0] ? hosts : json_is_true(net) ? "on" : "off");
		put_line(b, "sandbox", line);
	}
	if (json_is_integer(json_object_get(plan, "timeout_s"))) {
		tgi_snprintf(line, sizeof line, "%lld s",
		             (long long)json_integer_value(json_object_get(plan, "timeout_s")));
		put_line(b, "timeout", line);
	}
	const json_t *env = json_object_get(plan, "env");
	if (json_object_size(env) || json_array_size(env)) {
		tgi_buf eb;
		const char *k;
		json_t *v;
		tgi_buf_init(&eb, 4096);
		if (json_is_object(env))
			json_object_foreach((json_t *)env, k, v)
				tgi_buf_printf(&eb, "%s%s", eb.len ? " " : "", k);
		else
			json_array_foreach(env, i, v)
				tgi_buf_printf(&eb, "%s%s", eb.len ? " " : "",
				               json_string_value(v) ? json_string_value(v) : "");
		put_line(b, "env", eb.p ? eb.p : "");
		tgi_buf_free(&eb);
	}
	const json_t *in = json_object_get(plan, "stdin");
	if (in && !json_is_null(in)) {
		char *s = json_dumps(in, JSON_COMPACT | JSON_ENCODE_ANY);
		put_line(b, "stdin", s ? s : "");
		free(s);
	}
}

/* One file a write or a patch would change. */
static void put_file(tgi_buf *b, const json_t *f, const char *op, int color)
{
	char line[256], n[64];
	const char *path = str(f, "path");
	tgi_buf_puts(b, "  ");
	paint(b, color, "1", op, strlen(op));
	tgi_buf_puts(b, " ");
	put_clean(b, path ? path : "?", strlen(path ? path : "?"));
	if (str(f, "from")) {
		tgi_buf_puts(b, " (from ");
		put_clean(b, str(f, "from"), strlen(str(f, "from")));
		tgi_buf_puts(b, ")");
	}
	if (json_is_integer(json_object_get(f, "bytes"))) {
		tgi_snprintf(line, sizeof line, ": %lld bytes%s",
		             (long long)json_integer_value(json_object_get(f, "bytes")),
		             counts(f, n, sizeof n));
		tgi_buf_puts(b, line);
	}
	tgi_buf_puts(b, "\n");
	if (str(f, "diff"))
		put_diff(b, str(f, "diff"), color);
}

void tgi_plan_text(tgi_buf *b, const json_t *plan, int color)
{
	static const char *const known[] = {"argv", "workdir", "sandbox", "timeout_s", "env", "stdin",
	                                    "path", "exists", "bytes", "diff", "added_lines",
	                                    "removed_lines", "files", "summary", "unchecked", "reads",
	                                    "would_fail", "error_kind"};
	size_t i;
	json_t *f;
	if (json_object_get(plan, "argv"))
		put_command(b, plan, color);
	if (str(plan, "path") && !json_object_get(plan, "argv"))
		put_file(b, plan, json_is_true(json_object_get(plan, "exists")) ? "replace" : "create",
		         color);
	json_array_foreach(json_object_get(plan, "files"), i, f)
		put_file(b, f, str(f, "operation") ? str(f, "operation") : "change", color);
	if (str(plan, "unchecked"))
		put_line(b, "note:", str(plan, "unchecked"));
	json_array_foreach(json_object_get(plan, "reads"), i, f) {
		char line[64];
		const char *path = str(f, "path") ? str(f, "path") : "?";
		tgi_snprintf(line, sizeof line, " (%s)", str(f, "type") ? str(f, "type") : "?");
		tgi_buf_puts(b, "  read ");
		put_clean(b, path, strlen(path));
		tgi_buf_puts(b, line);
		tgi_buf_puts(b, "\n");
	}
	/* whatever else a tool put in its plan, as it is */
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)plan, k, v) {
		int seen = 0;
		for (size_t j = 0; j < TGI_ARRAY_LEN(known) && !seen; j++)
			seen = !strcmp(k, known[j]);
		if (seen)
			continue;
		char *s = json_is_string(v) ? tgi_strdup(json_string_value(v))
		                            : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		char label[80];
		tgi_snprintf(label, sizeof label, "%s:", k);
		put_line(b, label, s ? s : "");
		free(s);
	}
	if (str(plan, "would_fail")) {
		tgi_buf_puts(b, "  ");
		paint(b, color, "31", "would fail", 10);
		tgi_buf_printf(b, " (%s): ", str(plan, "error_kind") ? str(plan, "error_kind") : "error");
		put_clean(b, str(plan, "would_fail"), strlen(str(plan, "would_fail")));
		tgi_buf_puts(b, "\n");
	}
}

char *tg_plan_text(const char *plan_json, int color)
{
	json_t *plan = plan_json ? json_loads(plan_json, 0, NULL) : NULL;
	if (!json_is_object(plan)) {
		json_decref(plan);
		return NULL;
	}
	tgi_buf b;
	tgi_buf_init(&b, PLAN_TEXT_MAX);
	tgi_plan_text(&b, plan, color);
	json_decref(plan);
	char *s = tgi_buf_steal(&b);
	return s ? s : tgi_strdup("");
}
