/*
 * hooks.c — before- and after-hooks around every call (DESIGN §4, mw.h, part.h).
 *
 *   hooks:
 *     before_tool_call: [{command: [argv...], tools: [globs], timeout_s: 30,
 *                         format: claude-code}]
 *     after_tool_call:  [...]
 *
 * A hook is a program the operator configured.  It gets the call as one
 * JSON object on stdin (the real arguments): toolgate's fields, and Claude
 * Code's PreToolUse / PostToolUse fields.  In `format: claude-code` (the
 * default) those are in Claude Code's words (claude.c: `Write` with an
 * absolute `file_path`, one run per file of a patch), so a hook script
 * written for Claude Code guards the same calls here; a glob in `tools`
 * may name either tool name.  In `format: toolgate` they hold toolgate's
 * own name and arguments.  A hook runs in the workspace with the gate's
 * environment, in its own process group, with a timeout and capped output
 * (exec/spawn.c).
 *
 * Before-hooks run after identify, in registration order.  The first deny
 * stops the call; an ask makes decide ask at least (c->hook_ask); an allow
 * changes nothing, since hooks tighten and never loosen; rewritten
 * arguments replace the call's, are validated again, and decide judges
 * them (Claude Code's updatedInput is mapped back first, or refused).  A
 * hook asked several times about one call (a patch) is answered by the
 * strictest of its answers, and may not rewrite.  Whatever a hook does
 * that is not one of the answers (another exit code, a signal, a timeout,
 * output in no known shape or over the cap) denies the call, naming the
 * hook: fail closed.
 *
 * After-hooks run after persist with the envelope.  What they print is
 * ignored; a failure is an event (tool.hook.failed) and a log line, never a
 * change to the result.
 *
 * Owns: the hook lists built at open, running hooks, reading their answers.
 * Must not: decide permission (it only tightens, through c->hook_ask or a
 * stop), or touch a call's result.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"
#include "exec/spawn.h"
#include "policy/policy.h"
#include "util/util.h"

extern char **environ;

#define TIMEOUT_DEFAULT_S 30
#define TIMEOUT_MAX_S     600
#define ARGV0_SHOWN       160              /* bytes of argv[0] a label shows */
#define TEXT_MAX          300              /* bytes of a hook's own text kept */
#define OUT_EXTRA         (64u * 1024)     /* a before-hook's stdout: args + this */
#define AFTER_OUT_MAX     (64u * 1024)     /* an after-hook's stdout is read and dropped */
#define ERR_MAX           (64u * 1024)

/* What a hook reads (`format`): tool_name and tool_input in Claude Code's
 * words (claude.c), or in toolgate's. */
typedef enum { FMT_CLAUDE, FMT_TOOLGATE } hook_format;
static const char *const format_names[] = {"claude-code", "toolgate"};

typedef struct hook {
	char     label[256];  /* "before_tool_call[0] (./hooks/check.sh)", printable */
	char   **argv;        /* owned, NULL-terminated; argv[0] resolved */
	size_t   argc;
	tgi_strv tools;       /* globs over toolgate's and Claude Code's names; n == 0: every tool */
	int      timeout_s;
	hook_format format;
} hook;

typedef struct hook_list {
	hook  *v;
	size_t n;
} hook_list;

struct tgi_hooks {
	hook_list before, after;
	tgi_strv  programs;   /* files the hooks run, for the gate to protect */
	size_t    max_out;    /* a before-hook's stdout cap */
};

static const char *const decision_names[] = {"none", "allow", "ask", "deny"};

/* ---- loading: the `hooks` section, checked once at open ---- */

typedef struct loader {
	const tgi_config *cfg;
	char  *err;
	size_t errlen;
	tgi_conf_doc doc;
	tgi_conf_ctx cx;      /* user: this */
	const char  *list;    /* the hook being read: its list and index */
	size_t       idx;
} loader;

/* A non-empty list of strings into out (argv: a command line, whose
 * arguments may be empty; tgi_config_strings). */
static int load_strings(loader *x, json_t *v, const char *ptr, const char *expected, int argv,
                        tgi_strv *out)
{
	char got[96];
	size_t i;
	json_t *s;
	if (!json_is_array(v) || !json_array_size(v))
		return tgi_config_fail(x->cfg, ptr, x->err, x->errlen, "expected %s, got %s",
		                       expected, tgi_json_describe(v, got, sizeof got));
	if (tgi_config_strings(x->cfg, v, ptr, SIZE_MAX, SIZE_MAX, argv, x->err, x->errlen) < 0)
		return -1;
	json_array_foreach(v, i, s)
		tgi_strv_push(out, tgi_strdup(json_string_value(s)));
	return 0;
}

/* argv[0] relative with a '/' is the config directory's, as for command
 * tools; a bare name is looked up in PATH when the hook runs. */
static int resolve_argv0(loader *x, hook *hk, const char *ptr)
{
	const char *p0 = hk->argv[0];
	if (p0[0] == '/' || !strchr(p0, '/'))
		return 0;
	const char *dir = x->cfg->dir ? x->cfg->dir : x->cfg->workspace;
	size_t n = strlen(dir) + strlen(p0) + 2;
	if (n > PATH_MAX)
		return tgi_config_fail(x->cfg, ptr, x->err, x->errlen, "expected a shorter path, "
		                       "got one over %d bytes", PATH_MAX);
	char *abs = tgi_xmalloc(n);
	snprintf(abs, n, "%s/%s", dir, p0);
	free(hk->argv[0]);
	hk->argv[0] = abs;
	return 0;
}

/* The files a hook runs: argv[0] when it is a path, and any argument that
 * names a regular file (a script given to an interpreter), relative to the
 * workspace, where the hook runs. */
static void note_programs(tgi_hooks *h, const hook *hk, const char *ws)
{
	if (strchr(hk->argv[0], '/'))
		tgi_strv_push(&h->programs, tgi_strdup(hk->argv[0]));
	for (size_t i = 1; i < hk->argc; i++) {
		const char *a = hk->argv[i];
		char path[PATH_MAX];
		struct stat st;
		if (a[0] == '-')
			continue;
		if (a[0] == '/')
			tgi_snprintf(path, sizeof path, "%s", a);
		else
			tgi_snprintf(path, sizeof path, "%s/%s", ws, a);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			tgi_strv_push(&h->programs, tgi_strdup(path));
	}
}

/* The characters of a tool name, and the wildcards: a glob with any other
 * can never match a tool, and a hook that never runs guards nothing. */
static int load_globs(loader *x, hook *hk, const char *ptr)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*?";
	for (size_t i = 0; i < hk->tools.n; i++) {
		const char *t = hk->tools.v[i];
		if (!t[strspn(t, ok)])
			continue;
		char fp[340], clean[80];
		tgi_snprintf(fp, sizeof fp, "%s/%zu", ptr, i);
		tgi_sanitize_n(clean, sizeof clean, t, strlen(t), 60);
		return tgi_config_fail(x->cfg, fp, x->err, x->errlen, "\"%s\" can never match a tool "
		                       "name (letters, digits, _ . - and the wildcards * ?)%s", clean,
		                       strchr(t, '|') ? "; write Claude Code's matcher \"Edit|Write\" "
		                       "as tools: [Edit, Write]" : "");
	}
	return 0;
}

static int set_command(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	loader *x = cx->user;
	hook *hk = obj;
	tgi_strv argv = {0};
	if (load_strings(x, (json_t *)v, ptr, "a non-empty list of strings (the program and its "
	                 "arguments)", 1, &argv) < 0) {
		tgi_strv_free(&argv);
		return -1;
	}
	hk->argv = argv.v;
	hk->argc = argv.n;
	char shown[ARGV0_SHOWN + 8];
	tgi_sanitize_n(shown, sizeof shown, hk->argv[0], strlen(hk->argv[0]), ARGV0_SHOWN);
	tgi_snprintf(hk->label, sizeof hk->label, "%s[%zu] (%s)", x->list, x->idx, shown);
	return resolve_argv0(x, hk, ptr);
}

static int set_tools(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	hook *hk = obj;
	return load_strings(cx->user, (json_t *)v, ptr, "a non-empty list of tool-name globs "
	                    "(leave tools out for every tool)", 0, &hk->tools) < 0 ||
	       load_globs(cx->user, hk, ptr) < 0 ? -1 : 0;
}

static int set_format(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	const char *s = json_string_value(v);
	size_t k = 0;
	while (s && k < TGI_ARRAY_LEN(format_names) && strcmp(format_names[k], s))
		k++;
	if (!s || k == TGI_ARRAY_LEN(format_names))
		return tgi_conf_fail_type(cx, ptr, v, "claude-code (Claude Code's tool and argument "
		                          "names, the default) or toolgate (toolgate's)");
	((hook *)obj)->format = (hook_format)k;
	return 0;
}

static const tgi_conf_key hook_keys[] = {
	{ .key = "command", .type = TGI_CONF_CUSTOM, .flags = TGI_CONF_REQUIRED,
	  .set = set_command, .doc = "the program and its arguments" },
	TGI_CONF_CUSTOM("tools", set_tools, "globs of the tools it runs for (default: every tool)"),
	TGI_CONF_INT("timeout_s", hook, timeout_s, 1, TIMEOUT_MAX_S, "seconds before it is killed"),
	TGI_CONF_CUSTOM("format", set_format, "claude-code (the default) or toolgate"),
};

static int load_hook(loader *x, tgi_hooks *h, hook *hk, const char *list, size_t idx, json_t *v)
{
	char ptr[300], got[96];

	tgi_snprintf(ptr, sizeof ptr, "/hooks/%s/%zu", list, idx);
	hk->timeout_s = TIMEOUT_DEFAULT_S;
	if (!json_is_object(v))
		return tgi_config_fail(x->cfg, ptr, x->err, x->errlen, "expected a mapping "
		                       "{command: [program, args...], tools: [globs], "
		                       "timeout_s: N, format: claude-code|toolgate}, got %s",
		                       tgi_json_describe(v, got, sizeof got));
	x->list = list;
	x->idx = idx;
	if (tgi_conf_section_apply(&x->cx, hook_keys, TGI_ARRAY_LEN(hook_keys), v, ptr, hk) < 0)
		return -1;
	note_programs(h, hk, x->cfg->workspace);
	return 0;
}

static int load_list(loader *x, tgi_hooks *h, const char *list, json_t *v, hook_list *l)
{
	char ptr[300], got[96];
	size_t i;
	json_t *e;
	tgi_snprintf(ptr, sizeof ptr, "/hooks/%s", list);
	if (!json_is_array(v))
		return tgi_config_fail(x->cfg, ptr, x->err, x->errlen, "expected a list of hooks, "
		                       "got %s", tgi_json_describe(v, got, sizeof got));
	l->v = tgi_xcalloc(json_array_size(v) + 1, sizeof *l->v);
	json_array_foreach(v, i, e) {
		l->n++;
		if (load_hook(x, h, &l->v[i], list, i, e) < 0)
			return -1;
	}
	return 0;
}

static void free_list(hook_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		tgi_strv argv = {.v = l->v[i].argv, .n = l->v[i].argc};
		tgi_strv_free(&argv);
		tgi_strv_free(&l->v[i].tools);
	}
	free(l->v);
}

static int set_list(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	loader *x = cx->user;
	tgi_hooks *h = obj;
	const char *key = strrchr(ptr, '/') + 1;
	int before = !strcmp(key, "before_tool_call");
	return load_list(x, h, before ? "before_tool_call" : "after_tool_call", (json_t *)v,
	                 before ? &h->before : &h->after);
}

static const tgi_conf_key hooks_keys[] = {
	TGI_CONF_CUSTOM("before_tool_call", set_list, "hooks run before a call (they may deny, "
	                "ask or rewrite it)"),
	TGI_CONF_CUSTOM("after_tool_call", set_list, "hooks run after a call"),
};

int tgi_hooks_new(const tgi_config *cfg, tgi_hooks **out, char *err, size_t errlen)
{
	loader x = {.cfg = cfg, .err = err, .errlen = errlen, .doc = tgi_config_doc(cfg)};
	char got[96];
	*out = NULL;
	if (!cfg->hooks)
		return 0;
	if (!json_is_object(cfg->hooks))
		return tgi_config_fail(cfg, "/hooks", err, errlen, "expected a mapping with "
		                       "before_tool_call and after_tool_call lists, got %s",
		                       tgi_json_describe(cfg->hooks, got, sizeof got));
	x.cx = (tgi_conf_ctx){ &x.doc, err, errlen, &x };
	tgi_hooks *h = tgi_xcalloc(1, sizeof *h);
	h->max_out = cfg->max_args_bytes + OUT_EXTRA;
	if (tgi_conf_section_apply(&x.cx, hooks_keys, TGI_ARRAY_LEN(hooks_keys), cfg->hooks,
	                           "/hooks", h) < 0) {
		tgi_hooks_free(h);
		return -1;
	}
	if (!h->before.n && !h->after.n) {
		tgi_hooks_free(h);
		return 0;
	}
	*out = h;
	return 0;
}

void tgi_hooks_free(tgi_hooks *h)
{
	if (!h)
		return;
	free_list(&h->before);
	free_list(&h->after);
	tgi_strv_free(&h->programs);
	free(h);
}

int tgi_hooks_any_before(const tgi_hooks *h)
{
	return h && h->before.n;
}

int tgi_hooks_any_after(const tgi_hooks *h)
{
	return h && h->after.n;
}

const tgi_strv *tgi_hooks_programs(const tgi_hooks *h)
{
	return &h->programs;
}

/* ---- reading an answer ---- */

/* A hook's own text as one printable line: trimmed, at most TEXT_MAX bytes. */
static void hook_text(char *out, size_t cap, const char *s, size_t n)
{
	if (!s)
		n = 0;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	size_t start = 0;
	while (start < n && isspace((unsigned char)s[start]))
		start++;
	tgi_sanitize_n(out, cap, s ? s + start : "", n - start, TEXT_MAX);
}

/* The last line of a failed hook's stderr (an error's last line says what
 * went wrong: "SyntaxError: ..."), as hook_text makes it. */
static void last_line(char *out, size_t cap, const char *s, size_t n)
{
	if (!s)
		n = 0;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	size_t start = n;
	while (start && s[start - 1] != '\n')
		start--;
	hook_text(out, cap, s ? s + start : "", n - start);
}

static int reply_fail(tgi_hook_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int reply_fail(tgi_hook_reply *r, const char *fmt, ...)
{
	char raw[sizeof r->reason];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	tgi_sanitize(r->reason, sizeof r->reason, raw);
	r->decision = TGI_HOOK_DENY;
	r->failed = 1;
	json_decref(r->updated_args);
	r->updated_args = NULL;
	r->updated_cc = 0;
	return -1;
}

static int key_in(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], key))
			return 1;
	return 0;
}

/* Every key of o is one of keys; where names o in messages. */
static int known_keys(tgi_hook_reply *r, json_t *o, const char *where,
                      const char *const *keys, size_t n)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		if (key_in(key, keys, n))
			continue;
		char clean[64];
		tgi_sanitize_n(clean, sizeof clean, key, strlen(key), 40);
		return reply_fail(r, "answered with an unknown key \"%s\"%s", clean, where);
	}
	return 0;
}

/* o[key] as a string: absent or null is NULL. */
static int opt_string(tgi_hook_reply *r, json_t *o, const char *key, const char **out)
{
	json_t *v = json_object_get(o, key);
	char got[96];
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return reply_fail(r, "answered with \"%s\" as %s, not a string", key,
		                  tgi_json_describe(v, got, sizeof got));
	*out = json_string_value(v);
	return 0;
}

static int opt_bool(tgi_hook_reply *r, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	char got[96];
	if (!v || json_is_null(v) || json_is_boolean(v))
		return 0;
	return reply_fail(r, "answered with \"%s\" as %s, not true or false", key,
	                  tgi_json_describe(v, got, sizeof got));
}

/* A decision word: toolgate's allow/ask/deny, or (legacy Claude Code, top
 * level only) approve/block. */
static int decision_of(tgi_hook_reply *r, const char *key, const char *s, int legacy,
                       tgi_hook_decision *out)
{
	static const struct { const char *name; tgi_hook_decision d; int legacy; } words[] = {
		{"allow", TGI_HOOK_ALLOW, 0}, {"ask", TGI_HOOK_ASK, 0}, {"deny", TGI_HOOK_DENY, 0},
		{"approve", TGI_HOOK_ALLOW, 1}, {"block", TGI_HOOK_DENY, 1},
	};
	*out = TGI_HOOK_NONE;
	if (!s)
		return 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(words); i++)
		if (!strcmp(words[i].name, s) && (legacy || !words[i].legacy)) {
			*out = words[i].d;
			return 0;
		}
	char clean[64];
	tgi_sanitize_n(clean, sizeof clean, s, strlen(s), 40);
	return reply_fail(r, "answered with \"%s\": \"%s\"; expected allow, ask or deny", key,
	                  clean);
}

/* The new arguments: an object, or absent/null. */
static int opt_args(tgi_hook_reply *r, json_t *o, const char *key, json_t **out)
{
	json_t *v = json_object_get(o, key);
	char got[96];
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return reply_fail(r, "answered with \"%s\" as %s; the new arguments must be a JSON "
		                  "object", key, tgi_json_describe(v, got, sizeof got));
	*out = v;
	return 0;
}

/* Claude Code's hookSpecificOutput for PreToolUse. */
static int read_specific(tgi_hook_reply *r, json_t *s, tgi_hook_decision *d,
                         const char **reason, json_t **args)
{
	static const char *const keys[] = {"hookEventName", "permissionDecision",
	                                   "permissionDecisionReason", "updatedInput",
	                                   "additionalContext"};
	const char *event, *word, *ctx;
	char got[96];
	if (!json_is_object(s))
		return reply_fail(r, "answered with \"hookSpecificOutput\" as %s, not an object",
		                  tgi_json_describe(s, got, sizeof got));
	if (known_keys(r, s, " in hookSpecificOutput", keys, TGI_ARRAY_LEN(keys)) < 0 ||
	    opt_string(r, s, "hookEventName", &event) < 0 ||
	    opt_string(r, s, "permissionDecision", &word) < 0 ||
	    opt_string(r, s, "permissionDecisionReason", reason) < 0 ||
	    opt_string(r, s, "additionalContext", &ctx) < 0 ||
	    opt_args(r, s, "updatedInput", args) < 0)
		return -1;
	if (event && strcmp(event, "PreToolUse")) {
		char clean[64];
		tgi_sanitize_n(clean, sizeof clean, event, strlen(event), 40);
		return reply_fail(r, "answered for the event \"%s\", not PreToolUse", clean);
	}
	return decision_of(r, "permissionDecision", word, 0, d);
}

static tgi_hook_decision stricter(tgi_hook_decision a, tgi_hook_decision b)
{
	return a > b ? a : b;   /* none < allow < ask < deny */
}

/* An exit-0 JSON object in toolgate's shape, Claude Code's, or both. */
static void read_answer(tgi_hook_reply *r, json_t *v)
{
	static const char *const keys[] = {"decision", "reason", "updated_args",
	                                   "hookSpecificOutput", "continue", "stopReason",
	                                   "suppressOutput", "systemMessage"};
	const char *word, *reason, *stop_reason, *sys, *sreason = NULL;
	tgi_hook_decision d, sd = TGI_HOOK_NONE;
	json_t *args, *sargs = NULL, *spec;
	if (known_keys(r, v, "", keys, TGI_ARRAY_LEN(keys)) < 0 ||
	    opt_string(r, v, "decision", &word) < 0 || opt_string(r, v, "reason", &reason) < 0 ||
	    opt_string(r, v, "stopReason", &stop_reason) < 0 ||
	    opt_string(r, v, "systemMessage", &sys) < 0 ||
	    opt_bool(r, v, "continue") < 0 || opt_bool(r, v, "suppressOutput") < 0 ||
	    opt_args(r, v, "updated_args", &args) < 0 || decision_of(r, "decision", word, 1, &d) < 0)
		return;
	if ((spec = json_object_get(v, "hookSpecificOutput")) && !json_is_null(spec) &&
	    read_specific(r, spec, &sd, &sreason, &sargs) < 0)
		return;
	if (args && sargs) {
		reply_fail(r, "answered with both updated_args and hookSpecificOutput.updatedInput; "
		           "give one");
		return;
	}
	int stop = json_is_false(json_object_get(v, "continue"));
	r->decision = stricter(stricter(d, sd), stop ? TGI_HOOK_DENY : TGI_HOOK_NONE);
	/* the reason of what decided, else any reason given */
	const char *why;
	if (stop && d != TGI_HOOK_DENY && sd != TGI_HOOK_DENY)
		why = stop_reason;
	else if (sd != TGI_HOOK_NONE && sd == r->decision)
		why = sreason;
	else
		why = reason;
	if (!why)
		why = sreason ? sreason : reason ? reason : stop_reason;
	if (why)
		hook_text(r->reason, sizeof r->reason, why, strlen(why));
	json_t *na = args ? args : sargs;
	if (na && r->decision != TGI_HOOK_DENY) {
		r->updated_args = json_deep_copy(na);
		r->updated_cc = !args;
	}
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return 0;
	return 1;
}

void tgi_hook_reply_parse(int exit_code, const char *out, size_t out_len, const char *err,
                          size_t err_len, tgi_hook_reply *r)
{
	char text[TEXT_MAX + 8], got[96];
	memset(r, 0, sizeof *r);
	if (!out)
		out_len = 0;
	if (exit_code == 2) {
		r->decision = TGI_HOOK_DENY;
		hook_text(r->reason, sizeof r->reason, err, err ? err_len : 0);
		return;
	}
	if (exit_code != 0) {
		last_line(text, sizeof text, err, err ? err_len : 0);
		reply_fail(r, "exited with status %d%s%s%s", exit_code, *text ? " (" : "", text,
		           *text ? ")" : "");
		return;
	}
	if (blank(out, out_len))
		return;
	json_error_t je;
	json_t *v = json_loadb(out, out_len, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		reply_fail(r, "answered with something that is not JSON (at byte %d: %s)",
		           je.position, je.text);
		return;
	}
	if (!json_is_object(v))
		reply_fail(r, "answered with %s, not a JSON object",
		           tgi_json_describe(v, got, sizeof got));
	else
		read_answer(r, v);
	json_decref(v);
}

/* ---- running a hook ---- */

/* Left out of a hook's environment: the variables the gate sets for it, and
 * the ledger's credentials (a PostgreSQL URL may carry a password; the
 * variable ledger.key_env names holds the fleet's key). */
static int own_var(const char *entry, const char *key_env)
{
	size_t k = key_env ? strlen(key_env) : 0;
	if (k && !strncmp(entry, key_env, k) && entry[k] == '=')
		return 1;
	static const char *const names[] = {"TOOLGATE_HOOK_EVENT", "TOOLGATE_OP_ID",
	                                    "TOOLGATE_WORKSPACE", "CLAUDE_PROJECT_DIR",
	                                    "TOOLGATE_STORE", "PGPASSWORD", "PGPASSFILE",
	                                    "PGSERVICEFILE"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++) {
		size_t n = strlen(names[i]);
		if (!strncmp(entry, names[i], n) && entry[n] == '=')
			return 1;
	}
	return 0;
}

static char *env_pair(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;
	char *s = tgi_xmalloc(n);
	snprintf(s, n, "%s=%s", name, value);
	return s;
}

/* The gate's environment (but its ledger credentials) and the hook's own
 * variables; caller frees. */
static tgi_strv hook_env(const char *event, const char *op_id, const char *ws,
                         const char *key_env)
{
	tgi_strv env = {0};
	for (char **e = environ; e && *e; e++)
		if (!own_var(*e, key_env))
			tgi_strv_push(&env, tgi_strdup(*e));
	tgi_strv_push(&env, env_pair("TOOLGATE_HOOK_EVENT", event));
	tgi_strv_push(&env, env_pair("TOOLGATE_OP_ID", op_id));
	tgi_strv_push(&env, env_pair("TOOLGATE_WORKSPACE", ws));
	tgi_strv_push(&env, env_pair("CLAUDE_PROJECT_DIR", ws));
	return env;
}

/* Run hk with in on stdin: 0 with res filled (free it), or -1 (errno). */
static int run_hook(const tgi_call *c, const hook *hk, const char *event, const char *in,
                    size_t max_out, tgi_spawn_result *res)
{
	const char *ws = c->g->cfg->workspace;
	tgi_strv env = hook_env(event, c->op_id, ws, c->g->cfg->key_env);
	tgi_spawn_opts o = {
		.cwd = ws,
		.envp = env.v,
		.in = in,
		.in_len = strlen(in),
		.timeout_s = hk->timeout_s,
		.max_out = max_out,
		.max_err = ERR_MAX,
		.cancel = c->req ? c->req->cancel : NULL,
	};
	int rc = tgi_spawn_run(hk->argv, &o, res);
	int saved = errno;
	tgi_strv_free(&env);
	errno = saved;
	return rc;
}

/* A sentence for a hook whose process did not end with an exit code we
 * read: could not start, cancelled, timed out, killed.  0 when it exited. */
static int process_failed(const hook *hk, int rc, const tgi_spawn_result *res, char *out,
                          size_t cap)
{
	if (rc < 0)
		tgi_snprintf(out, cap, "could not be started (%s)", strerror(errno));
	else if (res->spawn_errno)
		tgi_snprintf(out, cap, "could not be started (%s)", strerror(res->spawn_errno));
	else if (res->cancelled)
		tgi_snprintf(out, cap, "was stopped because the call was cancelled");
	else if (res->timed_out)
		tgi_snprintf(out, cap, "timed out after %d s", hk->timeout_s);
	else if (!res->exited)
		tgi_snprintf(out, cap, "was killed by signal %d", res->signal);
	else
		return 0;
	return 1;
}

/* Does hk run for a call to tool, which Claude Code calls cc_name (NULL:
 * no other name)?  A glob may name either. */
static int matches(const hook *hk, const char *tool, const char *cc_name)
{
	if (!hk->tools.n)
		return 1;
	for (size_t i = 0; i < hk->tools.n; i++)
		if (tgi_text_glob(hk->tools.v[i], tool) ||
		    (cc_name && tgi_text_glob(hk->tools.v[i], cc_name)))
			return 1;
	return 0;
}

/* The call as Claude Code's hooks see it, made once for all the hooks in
 * claude-code format (again after a hook rewrote the arguments). */
typedef struct cc_view {
	tgi_cc_kind kind;
	char       *name;    /* owned: the call's name in Claude Code's words */
	int         made;    /* runs made for the arguments as they are now */
	tgi_cc_runs runs;
} cc_view;

static void view_init(const tgi_call *c, cc_view *v)
{
	memset(v, 0, sizeof *v);
	v->kind = tgi_cc_kind_of(c->entry);
	v->name = tgi_cc_name(v->kind, c->tool);
}

/* resolve: also ask about the path a path resolves to (before a call). */
static const tgi_cc_runs *view_runs(const tgi_call *c, cc_view *v, int resolve)
{
	if (!v->made) {
		tgi_cc_runs_make(v->kind, c->tool, c->args, c->g->cfg->workspace,
		                 resolve ? c->g->ws_fd : -1, &v->runs);
		v->made = 1;
	}
	return &v->runs;
}

static void view_reset(cc_view *v)
{
	tgi_cc_runs_free(&v->runs);
	v->made = 0;
}

static void view_free(cc_view *v)
{
	view_reset(v);
	free(v->name);
}

/* Does a hook in toolgate's format run for the call?  Its globs may name
 * Claude Code's tools too: any of the call's names (a patch: Edit, and
 * Write when it adds a file). */
static int matches_call(const tgi_call *c, const hook *hk, cc_view *v, int resolve)
{
	if (matches(hk, c->tool, v->name))
		return 1;
	if (v->kind != TGI_CC_PATCH)
		return 0;
	const tgi_cc_runs *runs = view_runs(c, v, resolve);
	for (size_t i = 0; i < runs->n; i++)
		if (matches(hk, c->tool, runs->v[i].name))
			return 1;
	return 0;
}

/* The id the client knows this tool use by, else the call's. */
static json_t *use_id(const tgi_call *c)
{
	if (c->client_call_id[0])
		return json_string(c->client_call_id);
	return json_string(c->call_id[0] ? c->call_id : c->op_id);
}

/*
 * The object a hook reads: toolgate's fields, then Claude Code's.  With
 * run (format claude-code), tool_name and tool_input are Claude Code's and
 * cwd is where the command runs; without, toolgate's name and arguments.
 * transcript_path is null: the conversation is the client's, not the
 * gate's.
 */
static json_t *hook_input(const tgi_call *c, const char *cc_event, const tgi_cc_run *run)
{
	const tgi_config *cfg = c->g->cfg;
	const char *mode = tgi_mode_name(cfg->mode);
	const char *cwd = run && run->cwd ? run->cwd : cfg->workspace;
	json_t *args = c->args ? json_incref(c->args) : json_null();
	json_t *in = json_object();
	json_object_set_new(in, "op_id", json_string(c->op_id));
	json_object_set_new(in, "session", tgi_json_str_or_null(c->session));
	json_object_set_new(in, "principal", tgi_json_str_or_null(c->principal_name));
	json_object_set_new(in, "tool", tgi_json_str_or_null(c->tool));
	json_object_set(in, "args", args);
	json_object_set_new(in, "mode", json_string(mode));
	json_object_set_new(in, "hook_event_name", json_string(cc_event));
	json_object_set_new(in, "session_id", tgi_json_str_or_null(c->session));
	json_object_set_new(in, "transcript_path", json_null());
	json_object_set_new(in, "cwd", tgi_json_text(cwd, strlen(cwd)));
	/* Claude Code has no dry-run mode: plan is the one where nothing changes */
	json_object_set_new(in, "permission_mode",
	                    json_string(run && cfg->mode == TGI_MODE_DRY_RUN ? "plan" : mode));
	json_object_set_new(in, "tool_name", run ? tgi_json_text(run->name, strlen(run->name))
	                                         : tgi_json_str_or_null(c->tool));
	json_object_set_new(in, "tool_input", run ? json_incref(run->input) : json_incref(args));
	json_object_set_new(in, "tool_use_id", use_id(c));
	json_decref(args);
	return in;
}

static char *dump(json_t *in)
{
	char *s = json_dumps(in, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(in);
	return s;
}

/* Run one before-hook on the call as it now is (as run, in claude-code
 * format); its answer into r.  The milliseconds it took. */
static double ask_hook(const tgi_call *c, const hook *hk, const tgi_cc_run *run,
                       tgi_hook_reply *r)
{
	size_t max_out = c->g->cfg->max_args_bytes + OUT_EXTRA;   /* as tgi_hooks_new set it */
	char why[256];
	char *in = dump(hook_input(c, "PreToolUse", run));
	memset(r, 0, sizeof *r);
	if (!in) {
		reply_fail(r, "could not be given the call (its arguments do not encode)");
		return 0;
	}
	tgi_spawn_result res;
	int rc = run_hook(c, hk, "before_tool_call", in, max_out, &res);
	free(in);
	if (process_failed(hk, rc, &res, why, sizeof why))
		reply_fail(r, "%s", why);
	else if (res.out_truncated)
		reply_fail(r, "printed more than %zu bytes", max_out);
	else
		tgi_hook_reply_parse(res.exit_code, res.out, res.out_len, res.err, res.err_len, r);
	double ms = rc < 0 ? 0 : res.duration_ms;
	if (rc == 0)
		tgi_spawn_result_free(&res);
	return ms;
}

static tgi_verdict hook_denied(tgi_call *c, const hook *hk, const tgi_hook_reply *r)
{
	tgi_snprintf(c->rule, sizeof c->rule, "hook: %s", hk->label);
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "hook: %s", hk->label);
	c->decision = TGI_DENY;
	tgi_event_add(c, "tool.hook.denied", "hooks",
	              json_pack("{s:s, s:s, s:b}", "hook", hk->label, "reason", r->reason,
	                        "failed", r->failed));
	if (r->failed)
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "hook %s %s; the call is denied (fail closed); do not retry; ask the "
		                "owner to fix the hook", hk->label, r->reason);
	if (r->reason[0])
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL, "hook %s denied the call: %s",
		                hk->label, r->reason);
	return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
	                "hook %s denied the call; do not retry with these arguments", hk->label);
}

/* What validate derived from the old arguments. */
static void forget_args(tgi_call *c)
{
	free(c->args_canon);
	c->args_canon = NULL;
	c->args_sha256[0] = '\0';
	for (size_t i = 0; i < c->npaths; i++) {
		free(c->paths[i]);
		free(c->resolved[i]);
	}
	free(c->paths);
	free(c->resolved);
	c->paths = c->resolved = NULL;
	c->npaths = 0;
	tgi_cmdline_free(&c->cmds);
	memset(&c->cmds, 0, sizeof c->cmds);
	c->has_cmds = 0;
	c->contract = 0;
}

/* The new arguments (taken) replace the call's and are validated again.
 * The idempotency key stays the call's: one a hook sets, changes or drops
 * is put back as it was. */
static tgi_verdict rewrite(tgi_call *c, const hook *hk, json_t *args)
{
	json_t *key = json_object_get(c->args, "idempotency_key");
	if (key)
		json_object_set(args, "idempotency_key", key);
	else
		json_object_del(args, "idempotency_key");
	char *text = json_dumps(args, JSON_COMPACT);
	size_t len = text ? strlen(text) : SIZE_MAX;
	free(text);
	json_decref(c->args);
	c->args = args;
	forget_args(c);
	tgi_event_add(c, "tool.hook.rewrote", "hooks", json_pack("{s:s}", "hook", hk->label));

	size_t max = c->g->cfg->max_args_bytes;
	if (len > max)
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
		                "hook %s rewrote the arguments into more than %zu bytes, the limit; "
		                "ask the owner to fix the hook", hk->label, max);
	size_t nstages = json_array_size(c->stages);
	if (tgi_validate(c) == TGI_STOP) {
		char msg[sizeof c->message], field[sizeof c->field];
		int has_field = c->has_field;
		memcpy(msg, c->message, sizeof msg);
		memcpy(field, c->field, sizeof field);
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, has_field ? field : NULL,
		                "hook %s rewrote the arguments into something the schema refuses: %s "
		                "(ask the owner to fix the hook)", hk->label, msg);
	}
	/* one validate record in the trace: the hooks' record says it ran again */
	if (json_array_size(c->stages) > nstages)
		json_array_remove(c->stages, nstages);
	return TGI_NEXT;
}

static double round_ms(double ms)
{
	return (double)(long long)(ms * 1000 + 0.5) / 1000;
}

/* One hook's answer (r: its updated_args in toolgate's words, taken) into
 * the trace, then into the call: deny stops it, ask marks it, new
 * arguments replace its own.  runs: how many times the hook was asked. */
static tgi_verdict settle(tgi_call *c, const hook *hk, json_t *done, tgi_hook_reply *r,
                          double ms, size_t runs)
{
	json_t *rec = json_pack("{s:s, s:s, s:f}", "hook", hk->label, "decision",
	                        decision_names[r->decision], "ms", round_ms(ms));
	if (runs > 1)
		json_object_set_new(rec, "runs", json_integer((json_int_t)runs));
	if (r->reason[0])
		json_object_set_new(rec, "reason", json_string(r->reason));
	if (r->failed)
		json_object_set_new(rec, "failed", json_true());
	if (r->updated_args)
		json_object_set_new(rec, "rewrote", json_true());
	json_array_append_new(done, rec);

	if (r->decision == TGI_HOOK_DENY) {
		json_decref(r->updated_args);
		return hook_denied(c, hk, r);
	}
	if (r->decision == TGI_HOOK_ASK && !c->hook_ask) {
		c->hook_ask = 1;
		tgi_snprintf(c->hook_rule, sizeof c->hook_rule, "hook: %s", hk->label);
	}
	return r->updated_args ? rewrite(c, hk, r->updated_args) : TGI_NEXT;
}

/* A hook in toolgate's format: asked once, in toolgate's words. */
static tgi_verdict before_toolgate(tgi_call *c, const hook *hk, json_t *done)
{
	tgi_hook_reply r;
	double ms = ask_hook(c, hk, NULL, &r);
	r.updated_cc = 0;
	return settle(c, hk, done, &r, ms, 1);
}

/* updatedInput (Claude Code's words) of the one run that gave it, into
 * toolgate's arguments in r->updated_args; a hook asked more than once
 * may not rewrite (which of its answers would hold?).  -1: r failed. */
static int cc_rewrite(tgi_call *c, const cc_view *v, const tgi_cc_run *run, size_t asked,
                      tgi_hook_reply *r)
{
	json_t *mine = NULL;
	char why[400];
	if (!r->updated_args)
		return 0;
	if (r->updated_cc) {
		if (tgi_cc_args_back(v->kind, c->args, run, r->updated_args, c->g->cfg->workspace,
		                     &mine, why, sizeof why) < 0)
			return reply_fail(r, "answered with updatedInput toolgate cannot take: %s", why);
	} else if (!json_equal(r->updated_args, c->args)) {
		mine = json_incref(r->updated_args);
	}
	json_decref(r->updated_args);
	r->updated_args = mine;
	r->updated_cc = 0;
	if (mine && asked > 1) {
		json_decref(mine);
		r->updated_args = NULL;
		return reply_fail(r, "rewrote the arguments of a call it was asked about %zu times "
		                  "(once per file, or per name of a file); such a call cannot be "
		                  "rewritten", asked);
	}
	return 0;
}

/* A hook in Claude Code's format: asked once per run whose name it
 * matches (a patch: once per file); the first deny ends it, the strictest
 * answer holds. */
static tgi_verdict before_claude(tgi_call *c, const hook *hk, cc_view *v, json_t *done)
{
	const tgi_cc_runs *runs = view_runs(c, v, 1);
	size_t nmatch = 0;
	for (size_t i = 0; i < runs->n; i++)
		nmatch += matches(hk, c->tool, runs->v[i].name);
	tgi_hook_reply r = {0};
	if (!nmatch)
		return TGI_NEXT;
	if (nmatch > TGI_CC_RUNS_MAX) {
		reply_fail(&r, "would be asked about this call %zu times (once per file it touches), "
		           "more than %d; split the call", nmatch, TGI_CC_RUNS_MAX);
		return settle(c, hk, done, &r, 0, 0);
	}
	double ms = 0;
	size_t asked = 0;
	for (size_t i = 0; i < runs->n && r.decision != TGI_HOOK_DENY; i++) {
		if (!matches(hk, c->tool, runs->v[i].name))
			continue;
		tgi_hook_reply one;
		ms += ask_hook(c, hk, &runs->v[i], &one);
		asked++;
		if (cc_rewrite(c, v, &runs->v[i], nmatch, &one) < 0 || one.decision == TGI_HOOK_DENY) {
			json_decref(r.updated_args);
			r = one;                 /* it decides: its reason is the one given */
			break;
		}
		if (one.decision > r.decision) {
			r.decision = one.decision;
			memcpy(r.reason, one.reason, sizeof r.reason);
		} else if (!r.reason[0]) {
			memcpy(r.reason, one.reason, sizeof r.reason);
		}
		if (one.updated_args) {
			json_decref(r.updated_args);
			r.updated_args = one.updated_args;
		}
	}
	return settle(c, hk, done, &r, ms, asked);
}

static tgi_verdict hooks_before(tgi_call *c, void *state)
{
	const tgi_hooks *h = state;
	if (!h->before.n)
		return TGI_NEXT;
	json_t *done = json_array();
	tgi_verdict v = TGI_NEXT;
	cc_view view;
	view_init(c, &view);
	for (size_t i = 0; i < h->before.n && v == TGI_NEXT; i++) {
		const hook *hk = &h->before.v[i];
		const json_t *args = c->args;
		if (hk->format == FMT_CLAUDE)
			v = before_claude(c, hk, &view, done);
		else if (matches_call(c, hk, &view, 1))
			v = before_toolgate(c, hk, done);
		if (c->args != args)
			view_reset(&view);    /* rewritten: the next hooks see the new arguments */
	}
	view_free(&view);
	if (json_array_size(done))
		tgi_trace(c, "hooks", v == TGI_NEXT, json_pack("{s:o}", "hooks", done));
	else
		json_decref(done);
	return v;
}

/* ---- after the call ---- */

static void after_failed(tgi_call *c, const hook *hk, const char *why)
{
	tg_gate *g = c->g;
	char err[256], line[768];
	json_t *data = json_pack("{s:s, s:s}", "hook", hk->label, "reason", why);
	if (tgi_gate_event(g, c->op_id, "tool.hook.failed", "hooks", data, err, sizeof err) < 0)
		fprintf(stderr, "toolgate: recording a hook's failure: %s\n", err);
	json_decref(data);
	tgi_snprintf(line, sizeof line, "hook %s %s (op %s); the result stands", hk->label, why,
	             c->op_id);
	char *safe = tgi_redact_text(g->redact, line, strlen(line));
	fprintf(stderr, "toolgate: %s\n", safe ? safe : line);
	free(safe);
}

/* What an after-hook reads: the fields of a before-hook (PostToolUse), the
 * envelope, and its output as tool_response; caller frees. */
static char *after_input(const tgi_call *c, const json_t *envelope, const tgi_cc_run *run)
{
	json_t *j = hook_input(c, "PostToolUse", run);
	json_t *out = json_object_get(envelope, "output");
	json_object_set_new(j, "tool_response", out ? json_incref(out) : json_null());
	json_object_set_new(j, "envelope", envelope ? json_incref((json_t *)envelope) : json_null());
	return dump(j);
}

/* Run one after-hook with in; a failure is recorded. */
static void after_one(tgi_call *c, const hook *hk, const char *in)
{
	char why[512], text[TEXT_MAX + 8];
	if (!in) {
		after_failed(c, hk, "could not be given the call (it does not encode)");
		return;
	}
	tgi_spawn_result res;
	int rc = run_hook(c, hk, "after_tool_call", in, AFTER_OUT_MAX, &res);
	int failed = process_failed(hk, rc, &res, why, sizeof why);
	if (!failed && res.exit_code != 0) {
		last_line(text, sizeof text, res.err, res.err_len);
		tgi_snprintf(why, sizeof why, "exited with status %d%s%s%s", res.exit_code,
		             *text ? " (" : "", text, *text ? ")" : "");
		failed = 1;
	}
	if (rc == 0)
		tgi_spawn_result_free(&res);
	if (failed)
		after_failed(c, hk, why);
}

static void hooks_after(tgi_call *c, void *state)
{
	const tgi_hooks *h = state;
	const json_t *envelope = c->envelope;
	char *in = NULL, **cc_in = NULL;   /* made once, for the hooks that read them */
	int made = 0;
	cc_view view;
	if (!h->after.n || !c->tool[0])
		return;
	view_init(c, &view);
	for (size_t i = 0; i < h->after.n; i++) {
		const hook *hk = &h->after.v[i];
		if (hk->format == FMT_TOOLGATE) {
			if (!matches_call(c, hk, &view, 0))
				continue;
			if (!made++)
				in = after_input(c, envelope, NULL);
			after_one(c, hk, in);
			continue;
		}
		const tgi_cc_runs *runs = view_runs(c, &view, 0);
		size_t nmatch = 0;
		for (size_t k = 0; k < runs->n; k++)
			nmatch += matches(hk, c->tool, runs->v[k].name);
		if (nmatch > TGI_CC_RUNS_MAX) {
			char why[160];
			tgi_snprintf(why, sizeof why, "was not run: it would run %zu times for this call "
			             "(once per file it touched), more than %d", nmatch, TGI_CC_RUNS_MAX);
			after_failed(c, hk, why);
			continue;
		}
		if (!cc_in)
			cc_in = tgi_xcalloc(runs->n + 1, sizeof *cc_in);
		for (size_t k = 0; k < runs->n; k++) {
			if (!matches(hk, c->tool, runs->v[k].name))
				continue;
			if (!cc_in[k])
				cc_in[k] = after_input(c, envelope, &runs->v[k]);
			after_one(c, hk, cc_in[k]);
		}
	}
	for (size_t k = 0; cc_in && k < view.runs.n; k++)
		free(cc_in[k]);
	free(cc_in);
	free(in);
	view_free(&view);
}

/* Open when any hook is configured; a gate with after-hooks only has a
 * step that finds no before-hook, and the other way round. */
static int hooks_open(tg_gate *g, const tg_options *o, void **state, char *err, size_t errlen)
{
	return tgi_hooks_new(g->cfg, (tgi_hooks **)state, err, errlen);
}

static void hooks_close(void *state)
{
	tgi_hooks_free(state);
}

static const tgi_strv *hooks_files(const void *state)
{
	return tgi_hooks_programs(state);
}

const tgi_part tgi_part_hooks = {
	.name = "hooks", .after = TGI_PHASE_IDENTIFY, .open = hooks_open, .close = hooks_close,
	.step = hooks_before, .after_persist = hooks_after, .files = hooks_files,
};
