/*
 * rules.c — permission rules: parse once, match per call; rulesets.
 *
 * Grammar (DESIGN §3, Claude Code's permission rules, extended):
 *
 *   rule      := tool [ "(" specifier ")" ]
 *   tool      := [A-Za-z0-9_*?-]+      a tgi_text_glob on the tool name
 *                                      (`*` every tool, `server__*`)
 *
 * Claude Code's tool names are read as the tools of toolgate that do the
 * same work (the rule's targets), so that a `permissions` block copied
 * from .claude/settings.json means here what it meant there:
 *   Read  -> read_file, list_dir, search_files     (path)
 *   Edit, MultiEdit -> write_file, apply_patch     (path)
 *   Write -> write_file                            (path)
 *   Glob  -> list_dir, search_files; Grep -> search_files; LS -> list_dir
 *   Bash  -> shell                                 (command prefix)
 *   mcp__server__tool -> server__tool; mcp__server -> server__*
 *   WebFetch, WebSearch, NotebookEdit, Task, ... -> nothing: toolgate has
 *     no such tool; the rule is kept as written and matches no call
 *     (tgi_rule_claude says so; doctor and policy test report it).
 * Deny and ask rules for read_file and write_file also hold for the tools
 * that stand in for them (decide.c), so `Read(./.env)` also stops what a
 * read-only shell command names and is hidden in the sandbox (readmask.c).
 *
 * What the specifier means depends on the tool part, decided at parse time
 * so that a rule reads the same for every call:
 *   - `Tool` and `Tool(*)` match every call of Tool; `Tool()` is an error.
 *   - A file tool (read_file, list_dir, search_files, write_file,
 *     apply_patch, and Claude Code's names for them): a path glob
 *     (glob.c), with `\` escaping '(' and ')'.
 *   - `shell` and `Bash`: a command prefix, split like a command line into
 *     words (`shell(git status)`, `shell(npm run test:*)`, `shell(git
 *     push *)`): one simple command; each word a text glob against the
 *     command's word at that place (the program by its basename); a word
 *     that is `*` alone takes one or more words; a last word `*`, ending in
 *     `:*` (removed) or ending in `*` (`push*`) lets any further words
 *     follow, else the command must have exactly these words.  So
 *     `shell(git push)` is exact while `shell(git push *)`, `shell(git
 *     push:*)` and `shell(git push*)` match `git push origin main`, as
 *     Claude Code's `Bash(...)` rules do (`push*` also matches `pushx`: no
 *     word boundary, like Claude Code's `Bash(ls*)` matching `lsof`).
 *     Deny and ask hold when ANY simple command of the call matches, as
 *     written or with wrappers (sudo, env, ...) peeled; allow only when
 *     EVERY simple command matches as written and none is opaque.
 *   - Any other tool: key=glob pairs when the specifier holds an '='
 *     (`deploy_service(env=staging)`, `x(/nested/key=v*, b=true)`), else a
 *     path glob for tools that declare paths (`*(./.env)`): such a rule
 *     matches no call without paths.
 *
 * Path rules match a call when ANY path it touches matches, as written or
 * as resolved inside the workspace (`src/link` -> `.env`).  For deny and
 * ask rules that is the safe reading: a call cannot slip past a rule by
 * naming a file through a link.  Where a pattern starts is Claude Code's
 * reading once a ruleset is anchored (tgi_ruleset_anchor): `./x` and `x`
 * in the workspace, `/x` in the directory of the configuration file,
 * `~/x` in the home directory, `//x` at the filesystem root; an absolute
 * result inside the workspace becomes the workspace-relative pattern,
 * another is matched against the call's paths made absolute.  Not
 * anchored (tests, fuzzing): `/x` is anchored at the workspace root, and
 * `~/...`, `//...` match nothing.
 *
 * key=glob pairs: all must match.  A key starting with '/' is a JSON
 * pointer into the args, else a top-level property name; an absent key
 * does not match.  A value is trimmed, or double-quoted to hold commas,
 * parens, '=' or edge spaces (escapes \" and \\ only); quoting does not
 * make `*` literal.  Arg values compare as text: strings as they are,
 * numbers, booleans and null as their JSON text (integral numbers without
 * ".0"); objects and arrays only match the glob `*`.  Model-supplied values
 * are only ever matched, never parsed: only rule text has structure.
 *
 * Owns: rule syntax, Claude Code's names, tgi_rule and tgi_ruleset.  Must
 * not: read config, know the registry, or decide between allow/ask/deny
 * (decide.c does); whether a rule names a tool that exists is
 * rulecheck.c's.
 */
#include "policy/policy.h"
#include "policy/shell.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RULE_MAX 4096       /* bytes of one rule, trimmed */
#define RULE_ECHO_MAX 80    /* bytes of the rule quoted back in an error */

typedef enum {
	SPEC_ANY,   /* `Tool`, `Tool(*)`: every call of the tool */
	SPEC_PATH,  /* a path glob over the call's paths */
	SPEC_SHELL, /* a command prefix: words, maybe open-ended */
	SPEC_ARGS,  /* key=glob pairs over the args */
	SPEC_TEXT,  /* a Claude Code tool toolgate lacks: kept as written, matches nothing */
} spec_kind;

typedef struct arg_pair {
	char *key;  /* a property name, or a JSON pointer when it starts with '/' */
	char *glob; /* a tgi_text_glob, unquoted */
} arg_pair;

struct tgi_rule {
	char     *text;     /* trimmed, as written */
	char     *tool;     /* the tool part as written */
	tgi_strv  targets;  /* text globs of the tools it is for: the tool part, or what a
	                       Claude Code name stands for here (none: it matches nothing) */
	const char *cc;     /* Claude Code's name the rule was written in, else NULL */
	char     *server;   /* `mcp__server[__tool]`: the server and the tool part after */
	char     *remote;   /*   it (NULL: every tool of the server) */
	spec_kind kind;
	char     *spec;     /* SPEC_PATH: the glob ("//..." absolute); SPEC_SHELL and
	                       SPEC_TEXT: the raw specifier */
	char     *root;     /* SPEC_PATH, absolute and anchored: the workspace, whose call
	                       paths are matched made absolute under it */
	arg_pair *pairs;    /* SPEC_ARGS */
	size_t    npairs;
	tgi_cmdline words;  /* SPEC_SHELL: the prefix as one simple command */
	int       open;     /* SPEC_SHELL: further words may follow */
};

struct tgi_ruleset {
	struct {
		tgi_rule **v;
		size_t     n, cap;
	} list[3]; /* indexed by tgi_rule_kind */
	char *ws, *ws_given, *settings, *home; /* tgi_ruleset_anchor's, or NULL */
	int   anchored;
};

/* Tools whose specifier is always a path glob. */
static const char *const file_tools[] = {
	"read_file", "list_dir", "search_files", "write_file", "apply_patch",
};

/* How a specifier reads, by the tool part. */
typedef enum { HOW_ARGS, HOW_PATH, HOW_SHELL, HOW_TEXT } spec_how;

/* Claude Code's tool names and what they are here (the table of the
 * header comment and docs/RULES.md).  No tools: toolgate has no such
 * tool, and the rule matches nothing. */
static const struct cc_name {
	const char *name;
	spec_how    how;
	const char *tools[3];
} cc_names[] = {
	{ "Read",         HOW_PATH,  { "read_file", "list_dir", "search_files" } },
	{ "Edit",         HOW_PATH,  { "write_file", "apply_patch" } },
	{ "MultiEdit",    HOW_PATH,  { "write_file", "apply_patch" } },
	{ "Write",        HOW_PATH,  { "write_file" } },
	{ "Glob",         HOW_PATH,  { "list_dir", "search_files" } },
	{ "Grep",         HOW_PATH,  { "search_files" } },
	{ "LS",           HOW_PATH,  { "list_dir" } },
	{ "Bash",         HOW_SHELL, { "shell" } },
	{ "WebFetch",     HOW_TEXT,  { NULL } },
	{ "WebSearch",    HOW_TEXT,  { NULL } },
	{ "NotebookEdit", HOW_TEXT,  { NULL } },
	{ "NotebookRead", HOW_TEXT,  { NULL } },
	{ "Task",         HOW_TEXT,  { NULL } },
	{ "Agent",        HOW_TEXT,  { NULL } },
	{ "TodoWrite",    HOW_TEXT,  { NULL } },
	{ "Skill",        HOW_TEXT,  { NULL } },
	{ "SlashCommand", HOW_TEXT,  { NULL } },
	{ "ExitPlanMode", HOW_TEXT,  { NULL } },
	{ "BashOutput",   HOW_TEXT,  { NULL } },
	{ "KillShell",    HOW_TEXT,  { NULL } },
	{ "KillBash",     HOW_TEXT,  { NULL } },
};

#define MCP_PREFIX "mcp__"

/* ---- parsing ------------------------------------------------------------ */

typedef struct parser {
	const char *s;      /* the trimmed rule (not NUL-terminated at len) */
	size_t      len;
	char       *err;
	size_t      errlen;
} parser;

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int is_tool_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '*' || c == '?';
}

/* "rule "TEXT": WHAT at position N" (N 1-based in the trimmed rule); -1. */
static int fail_at(parser *ps, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(parser *ps, size_t pos, const char *fmt, ...)
{
	char echo[RULE_ECHO_MAX + 1], what[160], raw[RULE_ECHO_MAX + 1];
	size_t n = ps->len < RULE_ECHO_MAX ? ps->len : RULE_ECHO_MAX;
	va_list ap;

	if (n < ps->len) { /* cut before a UTF-8 sequence the echo would split */
		size_t k = n;
		while (k > 0 && ((unsigned char)ps->s[k - 1] & 0xC0) == 0x80)
			k--;
		if (k > 0 && (unsigned char)ps->s[k - 1] >= 0xC0) {
			unsigned char lead = (unsigned char)ps->s[k - 1];
			size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
			if (k - 1 + want > n)
				n = k - 1;
		}
	}
	memcpy(raw, ps->s, n);
	raw[n] = '\0';
	tgi_sanitize(echo, sizeof echo, raw);
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tgi_snprintf(ps->err, ps->errlen, "rule \"%s%s\": %s at position %zu", echo,
	             ps->len > n ? "..." : "", what, pos + 1);
	return -1;
}

/* A byte for an error message: 'c' when printable ASCII, else its name or value. */
static const char *show_byte(char c, char buf[16])
{
	unsigned char u = (unsigned char)c;
	if (u == ' ')
		snprintf(buf, 16, "a space");
	else if (u > 0x20 && u < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", u);
	return buf;
}

static char *dup_range(const char *s, size_t a, size_t b)
{
	char *p = tgi_xmalloc(b - a + 1);
	memcpy(p, s + a, b - a);
	p[b - a] = '\0';
	return p;
}

static void trim_range(const char *s, size_t *a, size_t *b)
{
	while (*a < *b && is_space(s[*a]))
		(*a)++;
	while (*b > *a && is_space(s[*b - 1]))
		(*b)--;
}

/*
 * A path specifier from open+1: up to the first ')' not escaped by '\'.
 * Sets *close to it; -1 on a '(' inside or a missing ')'.
 */
static int scan_path(parser *ps, size_t open, size_t *close)
{
	for (size_t i = open + 1; i < ps->len; i++) {
		if (ps->s[i] == '\\' && i + 1 < ps->len)
			i++;
		else if (ps->s[i] == '(')
			return fail_at(ps, i, "unexpected '(' in a path (write '\\(' for a literal one)");
		else if (ps->s[i] == ')') {
			*close = i;
			return 0;
		}
	}
	return fail_at(ps, ps->len, "missing ')'");
}

static int parse_path(parser *ps, tgi_rule *r, size_t a, size_t b)
{
	size_t at;
	const char *what;

	r->spec = dup_range(ps->s, a, b);
	if (tgi_path_glob_check(r->spec, &at, &what) < 0)
		return fail_at(ps, a + at, "%s in the path glob", what);
	return 0;
}

/* The double-quoted value at *i ('"'), unescaped into *out (caller frees).
 * *i ends after the closing quote. */
static int parse_quoted(parser *ps, size_t *i, char **out)
{
	size_t start = *i, n = 0;
	char *v = tgi_xmalloc(ps->len - start); /* never longer than the rest */

	for (size_t j = start + 1; j < ps->len; j++) {
		char c = ps->s[j], buf[16];
		if (c == '"') {
			v[n] = '\0';
			*out = v;
			*i = j + 1;
			return 0;
		}
		if (c == '\\') {
			if (j + 1 >= ps->len || (ps->s[j + 1] != '"' && ps->s[j + 1] != '\\')) {
				free(v);
				return fail_at(ps, j, "unknown escape %s in a quoted value (only \\\" and \\\\)",
				               j + 1 < ps->len ? show_byte(ps->s[j + 1], buf) : "at the end");
			}
			c = ps->s[++j];
		}
		v[n++] = c;
	}
	free(v);
	return fail_at(ps, start, "unterminated quoted value");
}

static void add_pair(tgi_rule *r, char *key, char *glob)
{
	r->pairs = tgi_xrealloc(r->pairs, (r->npairs + 1) * sizeof *r->pairs);
	r->pairs[r->npairs].key = key;
	r->pairs[r->npairs].glob = glob;
	r->npairs++;
}

/* JSON pointer escapes: '~' only as "~0" or "~1". */
static int check_pointer(parser *ps, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		if (ps->s[i] == '~' && (i + 1 >= b || (ps->s[i + 1] != '0' && ps->s[i + 1] != '1')))
			return fail_at(ps, i, "'~' in a JSON pointer must be \"~0\" or \"~1\"");
	return 0;
}

/*
 * key=glob pairs from open+1 up to the first ')' outside quotes, which is
 * stored in *close.
 */
static int parse_args(parser *ps, tgi_rule *r, size_t open, size_t *close)
{
	size_t i = open + 1;
	char buf[16];

	r->kind = SPEC_ARGS;
	for (;;) {
		/* key: up to '=' */
		size_t ka = i;
		while (i < ps->len && ps->s[i] != '=' && ps->s[i] != ',' && ps->s[i] != ')') {
			if (ps->s[i] == '(' || ps->s[i] == '"')
				return fail_at(ps, i, "unexpected %s in a key", show_byte(ps->s[i], buf));
			i++;
		}
		size_t kb = i;
		trim_range(ps->s, &ka, &kb);
		if (i >= ps->len)
			return fail_at(ps, ps->len, "missing ')'");
		if (ps->s[i] != '=') {
			if (ka == kb)
				return fail_at(ps, i, "empty key=glob pair");
			return fail_at(ps, i, "expected '=' after key \"%.*s\"", (int)(kb - ka < 40 ? kb - ka : 40),
			               ps->s + ka);
		}
		if (ka == kb)
			return fail_at(ps, i, "empty key before '='");
		if (ps->s[ka] == '/' && check_pointer(ps, ka, kb) < 0)
			return -1;
		size_t eq = i++;

		/* value: quoted, or up to ',' or ')' */
		while (i < ps->len && is_space(ps->s[i]))
			i++;
		char *glob = NULL;
		if (i < ps->len && ps->s[i] == '"') {
			if (parse_quoted(ps, &i, &glob) < 0)
				return -1;
			while (i < ps->len && is_space(ps->s[i]))
				i++;
			if (i < ps->len && ps->s[i] != ',' && ps->s[i] != ')') {
				free(glob);
				return fail_at(ps, i, "unexpected %s after a quoted value", show_byte(ps->s[i], buf));
			}
		} else {
			size_t va = i;
			while (i < ps->len && ps->s[i] != ',' && ps->s[i] != ')') {
				if (ps->s[i] == '(' || ps->s[i] == '"')
					return fail_at(ps, i, "unexpected %s in a value (quote the value to include it)",
					               show_byte(ps->s[i], buf));
				i++;
			}
			size_t vb = i;
			trim_range(ps->s, &va, &vb);
			if (va == vb)
				return fail_at(ps, eq, "empty glob after '='");
			glob = dup_range(ps->s, va, vb);
		}
		add_pair(r, dup_range(ps->s, ka, kb), glob);

		if (i >= ps->len)
			return fail_at(ps, ps->len, "missing ')'");
		if (ps->s[i] == ')') {
			*close = i;
			return 0;
		}
		i++; /* ',' */
	}
}

static int is_file_tool(const char *s, size_t n)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(file_tools); i++)
		if (strlen(file_tools[i]) == n && memcmp(file_tools[i], s, n) == 0)
			return 1;
	return 0;
}

/* A shell prefix: one simple command of words; a last word `*`, `…:*` or
 * `…*` (not a path glob) opens it. */
static int parse_shell(parser *ps, tgi_rule *r, size_t a, size_t b)
{
	char err[256];
	r->spec = dup_range(ps->s, a, b);
	if (tgi_shell_split(r->spec, strlen(r->spec), &r->words, err, sizeof err) < 0)
		return fail_at(ps, a, "%s", err);
	if (r->words.n != 1 || r->words.v[0].argc == 0 || r->words.v[0].nassigns ||
	    r->words.v[0].nredirs || (r->words.v[0].flags & TGI_CMD_OPAQUE))
		return fail_at(ps, a, "a shell rule names the words of one command (write one rule per "
		                      "command)");
	tgi_cmd *c = &r->words.v[0];
	char *last = c->argv[c->argc - 1];
	size_t n = strlen(last);
	if (!strcmp(last, "*")) {
		free(last);
		c->argv[--c->argc] = NULL;
		r->open = 1;
	} else if (n >= 2 && !strcmp(last + n - 2, ":*")) {
		last[n - 2] = '\0';
		r->open = 1;
	} else if (n >= 1 && last[n - 1] == '*' && !memchr(last, '/', n)) {
		/* `git push*`: the word as a glob, and what follows.  A path glob
		 * (`rm build/x*`) stays one argument: opening it would let an allow
		 * rule take `rm build/x -rf ~` too. */
		r->open = 1;
	}
	if (!c->argc || !c->argv[0][0])
		return fail_at(ps, a, "a shell rule needs a program before '*'");
	return 0;
}

/* A specifier kept as written (a Claude Code tool toolgate lacks:
 * `WebFetch(domain:example.com)`): up to the rule's last ')'. */
static int scan_text(parser *ps, size_t open, size_t *close)
{
	if (ps->s[ps->len - 1] != ')')
		return fail_at(ps, ps->len, memchr(ps->s + open, ')', ps->len - open)
		                                ? "unexpected text after ')'" : "missing ')'");
	*close = ps->len - 1;
	return 0;
}

/* The specifier after the tool part; open is the '(' position. */
static int parse_spec(parser *ps, tgi_rule *r, size_t open, spec_how how)
{
	size_t close = 0, a, b;
	const char *s = ps->s;

	if (how == HOW_SHELL) {
		/* Shell specifiers are raw command text: parens and quotes are
		 * the shell's; the rule ends at its last ')'. */
		if (s[ps->len - 1] != ')')
			return fail_at(ps, ps->len, memchr(s + open, ')', ps->len - open)
			                                ? "expected ')' at the end of a shell rule"
			                                : "missing ')'");
		close = ps->len - 1;
		r->kind = SPEC_SHELL;
	} else if (how == HOW_TEXT) {
		if (scan_text(ps, open, &close) < 0)
			return -1;
		r->kind = SPEC_TEXT;
	} else if (how == HOW_PATH || !memchr(s + open, '=', ps->len - open)) {
		if (scan_path(ps, open, &close) < 0)
			return -1;
		r->kind = SPEC_PATH;
	} else if (parse_args(ps, r, open, &close) < 0) {
		return -1;
	}
	if (close + 1 != ps->len)
		return fail_at(ps, close + 1, "unexpected text after ')'");

	a = open + 1;
	b = close;
	trim_range(s, &a, &b);
	if (a == b)
		return fail_at(ps, open + 1, "empty specifier (write the tool name alone to match every call)");
	if (b - a == 1 && s[a] == '*' && r->kind != SPEC_ARGS) {
		r->kind = SPEC_ANY;
		return 0;
	}
	if (r->kind == SPEC_SHELL)
		return parse_shell(ps, r, a, b);
	else if (r->kind == SPEC_PATH)
		return parse_path(ps, r, a, b);
	else if (r->kind == SPEC_TEXT)
		r->spec = dup_range(s, a, b);
	return 0;
}

/*
 * The tools the tool part [0, n) stands for, into r->targets, and how its
 * specifier reads: Claude Code's names (cc_names), `mcp__server__tool`
 * (`mcp__server` and `mcp__server__*`: every tool of the server), else the
 * tool part itself (shell commands for `shell`, paths for a file tool).
 * -1 for an `mcp__` name with no server, or a glob in its server part.
 */
static int targets_of(parser *ps, tgi_rule *r, size_t n, spec_how *how)
{
	const char *s = ps->s;
	size_t pl = sizeof MCP_PREFIX - 1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(cc_names); i++) {
		if (strlen(cc_names[i].name) != n || memcmp(cc_names[i].name, s, n))
			continue;
		r->cc = cc_names[i].name;
		*how = cc_names[i].how;
		for (size_t k = 0; k < TGI_ARRAY_LEN(cc_names[i].tools) && cc_names[i].tools[k]; k++)
			tgi_strv_push(&r->targets, tgi_strdup(cc_names[i].tools[k]));
		return 0;
	}
	*how = n == 5 && !memcmp(s, "shell", 5) ? HOW_SHELL : is_file_tool(s, n) ? HOW_PATH : HOW_ARGS;
	if (n <= pl || memcmp(s, MCP_PREFIX, pl)) {
		tgi_strv_push(&r->targets, dup_range(s, 0, n));
		return 0;
	}
	/* mcp__server[__tool] */
	const char *srv = s + pl, *end = s + n, *sep = NULL;
	for (const char *p = srv; p + 1 < end && !sep; p++)
		if (p[0] == '_' && p[1] == '_')
			sep = p;
	const char *srv_end = sep ? sep : end;
	if (srv_end == srv)
		return fail_at(ps, pl, "expected a server name after \"mcp__\"");
	for (const char *p = srv; p < srv_end; p++)
		if (*p == '*' || *p == '?')
			return fail_at(ps, (size_t)(p - s), "a glob in the server part of an mcp__ rule "
			               "(write mcp__server or mcp__server__tool*)");
	r->server = dup_range(s, pl, (size_t)(srv_end - s));
	if (sep && sep + 2 < end && !(sep + 3 == end && sep[2] == '*'))
		r->remote = dup_range(s, (size_t)(sep + 2 - s), n);
	size_t cap = strlen(r->server) + (r->remote ? strlen(r->remote) : 1) + 3;
	char *t = tgi_xmalloc(cap);
	snprintf(t, cap, "%s__%s", r->server, r->remote ? r->remote : "*");
	tgi_strv_push(&r->targets, t);
	r->cc = "mcp__";
	return 0;
}

void tgi_rule_free(tgi_rule *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->npairs; i++) {
		free(r->pairs[i].key);
		free(r->pairs[i].glob);
	}
	free(r->pairs);
	tgi_cmdline_free(&r->words);
	tgi_strv_free(&r->targets);
	free(r->server);
	free(r->remote);
	free(r->root);
	free(r->spec);
	free(r->tool);
	free(r->text);
	free(r);
}

tgi_rule *tgi_rule_parse(const char *text, char *err, size_t errlen)
{
	char dummy[1];
	parser ps = { .err = err && errlen ? err : dummy, .errlen = err && errlen ? errlen : sizeof dummy };
	size_t a = 0, b, i;
	char buf[16];

	if (!text) {
		tgi_snprintf(ps.err, ps.errlen, "a rule is empty");
		return NULL;
	}
	b = strlen(text);
	trim_range(text, &a, &b);
	ps.s = text + a;
	ps.len = b - a;
	if (ps.len == 0) {
		tgi_snprintf(ps.err, ps.errlen, "a rule is empty");
		return NULL;
	}
	if (ps.len > RULE_MAX) {
		fail_at(&ps, RULE_MAX, "longer than %d bytes", RULE_MAX);
		return NULL;
	}
	for (i = 0; i < ps.len; i++) {
		unsigned char c = (unsigned char)ps.s[i];
		if (c < 0x20 || c == 0x7f) {
			fail_at(&ps, i, "control character (%s)", show_byte(ps.s[i], buf));
			return NULL;
		}
	}

	for (i = 0; i < ps.len && is_tool_char(ps.s[i]); i++)
		;
	if (i == 0) {
		fail_at(&ps, 0, "expected a tool name, found %s", show_byte(ps.s[0], buf));
		return NULL;
	}
	if (i < ps.len && ps.s[i] != '(') {
		fail_at(&ps, i, "unexpected %s in the tool name", show_byte(ps.s[i], buf));
		return NULL;
	}

	tgi_rule *r = tgi_xcalloc(1, sizeof *r);
	spec_how how;
	r->text = dup_range(ps.s, 0, ps.len);
	r->tool = dup_range(ps.s, 0, i);
	r->kind = SPEC_ANY;
	if (targets_of(&ps, r, i, &how) < 0 || (i < ps.len && parse_spec(&ps, r, i, how) < 0)) {
		tgi_rule_free(r);
		return NULL;
	}
	return r;
}

static const char *const decision_names[] = {
#define XX(d, name) name,
	TGI_DECISION_MAP(XX)
#undef XX
};

const char *tgi_decision_name(tgi_decision d)
{
	return (unsigned)d < TGI_NDECISIONS ? decision_names[d] : "?";
}

int tgi_decision_parse(const char *s)
{
	for (int d = 0; s && d < TGI_NDECISIONS; d++)
		if (!strcmp(s, decision_names[d]))
			return d;
	return -1;
}

const char *tgi_rule_text(const tgi_rule *r)
{
	return r ? r->text : NULL;
}

/* ---- matching ----------------------------------------------------------- */

/* A real number as JSON text: integral values without ".0", others in the
 * shortest form that reads back to the same double. */
static void real_text(double d, char *out, size_t cap)
{
	if (d > -1e17 && d < 1e17 && d == (double)(long long)d) {
		snprintf(out, cap, "%lld", (long long)d); /* -0.0 is "0" too */
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/*
 * Two readings of "matches", chosen by the rule's list:
 *   deny and ask (lenient): the rule holds if ANY touched path, in either
 *     form (as written or as resolved), matches, and an array argument
 *     matches if any element does — the safe reading for a restriction;
 *   allow (strict): EVERY touched path must match in BOTH forms, and every
 *     element of an array argument must match; an empty array or an object
 *     matches only `*` — the safe reading for a permission.  Without it,
 *     "src/../Makefile" (written form under src/) or a symlink src/x → ../y
 *     would pass an allow rule for src/ while touching something else.
 */
static int value_matches(const char *glob, const json_t *v, int strict, int depth)
{
	char text[64];
	size_t i;
	json_t *e;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return tgi_text_glob_n(glob, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		real_text(json_real_value(v), text, sizeof text);
		break;
	case JSON_TRUE:
		return tgi_text_glob(glob, "true");
	case JSON_FALSE:
		return tgi_text_glob(glob, "false");
	case JSON_NULL:
		return tgi_text_glob(glob, "null");
	case JSON_ARRAY:
		if (!strcmp(glob, "*"))
			return 1;
		if (depth > 32 || json_array_size(v) == 0)
			return !strict && depth > 32; /* too deep: a restriction holds */
		json_array_foreach(v, i, e) {
			int m = value_matches(glob, e, strict, depth + 1);
			if (strict && !m)
				return 0;
			if (!strict && m)
				return 1;
		}
		return strict;
	default: /* objects have no text form */
		return strcmp(glob, "*") == 0;
	}
	return tgi_text_glob(glob, text);
}

static int args_match(const tgi_rule *r, const json_t *args, int strict)
{
	if (!json_is_object(args))
		return 0;
	for (size_t i = 0; i < r->npairs; i++) {
		const char *key = r->pairs[i].key;
		/* tgi_json_pointer only reads; its root is not const for its callers' sake */
		const json_t *v = key[0] == '/' ? tgi_json_pointer((json_t *)args, key)
		                                : json_object_get(args, key);
		if (!v || !value_matches(r->pairs[i].glob, v, strict, 0))
			return 0;
	}
	return 1;
}

/* One call path against the rule's glob: as it is, or made absolute under
 * the workspace for an absolute pattern of an anchored ruleset. */
static int path_matches(const tgi_rule *r, const char *path)
{
	if (!path)
		return 0;
	if (!r->root)
		return tgi_path_glob(r->spec, path);
	const char *root = r->root + strspn(r->root, "/");
	size_t rn = strlen(root), pn = strlen(path);
	char *abs = tgi_xmalloc(rn + pn + 2);  /* no cap: "too long" must not be "no match" */
	memcpy(abs, root, rn);
	abs[rn] = '/';
	memcpy(abs + rn + 1, path, pn + 1);
	int m = tgi_path_glob(r->spec + 1, abs);   /* "//x" -> "/x": anchored at the root */
	free(abs);
	return m;
}

/* Lenient: any touched path in either form.  Strict: every path in both
 * forms (a path that could not be resolved fails).  Absolute patterns
 * (`~/`, `//`) of a ruleset not anchored match no workspace-relative path. */
static int paths_match(const tgi_rule *r, const tgi_match_input *in, int strict)
{
	if (strict && in->npaths == 0)
		return 0;
	for (size_t i = 0; i < in->npaths; i++) {
		int w = in->paths && path_matches(r, in->paths[i]);
		int rs = in->resolved && path_matches(r, in->resolved[i]);
		if (strict && !(w && rs))
			return 0;
		if (!strict && (w || rs))
			return 1;
	}
	return strict;
}

static int is_star_word(const char *w)
{
	return w[0] == '*' && w[1] == '\0';
}

/*
 * Do the rule's words match argv[0..argc)?  Each word is a text glob
 * against the word at its place (the program by its basename); a word
 * that is `*` alone takes one or more words; r->open lets any words
 * follow.  Two pointers, the last `*` word taking one more word on a
 * mismatch: O(words x argc), no recursion.  With exact (allow), a program
 * given as a path must be the rule's own text (`./git` or `src/git` is a
 * file of the workspace, not git).
 */
static int words_match(const tgi_rule *r, char *const *argv, size_t argc, int exact)
{
	const tgi_cmd *w = &r->words.v[0];
	size_t i = 0, j = 0, star_i = 0, star_j = 0;
	int star = 0;
	if (!argc || (exact && strchr(argv[0], '/') && !tgi_text_glob(w->argv[0], argv[0])))
		return 0;
	while (j < argc) {
		if (i < w->argc && is_star_word(w->argv[i])) {
			star = 1;              /* this word, and maybe more on a mismatch */
			star_i = ++i;
			star_j = ++j;
			continue;
		}
		if (i < w->argc &&
		    tgi_text_glob(j == 0 ? tgi_shell_basename(w->argv[i]) : w->argv[i],
		                  j == 0 ? tgi_shell_basename(argv[0]) : argv[j])) {
			i++;
			j++;
			continue;
		}
		if (i == w->argc && r->open)
			return 1;
		if (!star)
			return 0;
		i = star_i;
		j = ++star_j;
	}
	return i == w->argc;
}

/* Lenient: any simple command, as written or with wrappers peeled.
 * Strict: every simple command as written, none opaque. */
static int shell_match(const tgi_rule *r, const tgi_match_input *in, int strict)
{
	const tgi_cmdline *cl = in->cmds;
	if (!cl || !cl->n)
		return 0;
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		int m;
		if (strict) {
			m = !(c->flags & TGI_CMD_OPAQUE) && words_match(r, c->argv, c->argc, 1);
			if (!m)
				return 0;
		} else {
			size_t p = tgi_shell_program(c);
			m = words_match(r, c->argv, c->argc, 0) ||
			    (p < c->argc && words_match(r, c->argv + p, c->argc - p, 0));
			if (m)
				return 1;
		}
	}
	return strict;
}

/* Is the rule for tool (one of its targets matches the name)? */
static int for_tool(const tgi_rule *r, const char *tool)
{
	for (size_t i = 0; tool && i < r->targets.n; i++)
		if (tgi_text_glob(r->targets.v[i], tool))
			return 1;
	return 0;
}

static int rule_match(const tgi_rule *r, const tgi_match_input *in, int strict)
{
	if (!r || !in || !in->tool || !for_tool(r, in->tool))
		return 0;
	switch (r->kind) {
	case SPEC_ANY:
		return 1;
	case SPEC_TEXT:
		return 0;
	case SPEC_PATH:
		return in->has_paths && paths_match(r, in, strict);
	case SPEC_ARGS:
		return args_match(r, in->args, strict);
	case SPEC_SHELL:
		return shell_match(r, in, strict);
	}
	return 0;
}

int tgi_rule_matches(const tgi_rule *r, const tgi_match_input *in)
{
	return rule_match(r, in, 0);
}

int tgi_rule_allows(const tgi_rule *r, const tgi_match_input *in)
{
	return rule_match(r, in, 1);
}

int tgi_rule_is_path(const tgi_rule *r)
{
	return r && r->kind == SPEC_PATH;
}

const char *tgi_rule_tool(const tgi_rule *r)
{
	return r ? r->tool : NULL;
}

size_t tgi_rule_ntargets(const tgi_rule *r)
{
	return r ? r->targets.n : 0;
}

const char *tgi_rule_target(const tgi_rule *r, size_t i)
{
	return r && i < r->targets.n ? r->targets.v[i] : NULL;
}

const char *tgi_rule_claude(const tgi_rule *r)
{
	return r && r->cc && strcmp(r->cc, "mcp__") ? r->cc : NULL;
}

const char *tgi_rule_claude_name(size_t i)
{
	return i < TGI_ARRAY_LEN(cc_names) ? cc_names[i].name : NULL;
}

const char *tgi_rule_server(const tgi_rule *r)
{
	return r ? r->server : NULL;
}

int tgi_rule_outside(const tgi_rule *r)
{
	if (!r || r->kind != SPEC_PATH || !r->root)
		return 0;
	return !tgi_path_glob_reaches(r->spec + 1, r->root + strspn(r->root, "/"));
}

int tgi_rule_has_spec(const tgi_rule *r)
{
	return r && r->kind != SPEC_ANY;
}

size_t tgi_rule_nkeys(const tgi_rule *r)
{
	return r && r->kind == SPEC_ARGS ? r->npairs : 0;
}

const char *tgi_rule_key(const tgi_rule *r, size_t i)
{
	return r && r->kind == SPEC_ARGS && i < r->npairs ? r->pairs[i].key : NULL;
}

/* ---- where paths start ---------------------------------------------------- */

/* The literal text of a pattern up to its first glob character. */
static size_t literal_len(const char *s)
{
	return strcspn(s, "*?[\\");
}

/* Does abs start with the directory dir (literally, then '/' or its end)? */
static const char *under(const char *abs, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (!n || strncmp(abs, dir, n) || literal_len(abs) < n)
		return NULL;
	if (n == 1)                      /* the root: everything is under it */
		return abs + 1;
	if (abs[n] == '\0')
		return abs + n;
	return abs[n] == '/' ? abs + n + 1 : NULL;
}

/*
 * Claude Code's reading of where a path pattern starts (header comment):
 * `//x` the filesystem root, `~/x` the home directory, `/x` the settings
 * directory, anything else the workspace (left as it is).  An absolute
 * pattern inside the workspace becomes the workspace-relative one ("/" +
 * the rest, anchored); another stays absolute ("//" + the path) and keeps
 * the workspace to match call paths under.
 */
static void anchor_path(tgi_rule *r, const tgi_ruleset *rs)
{
	const char *s = r->spec, *base, *rest;
	if (s[0] == '/' && s[1] == '/') {
		base = "";
		rest = s + 1;
	} else if (s[0] == '~' && (s[1] == '\0' || s[1] == '/')) {
		if (!rs->home)
			return;
		base = rs->home;
		rest = s + 1;
	} else if (s[0] == '/') {
		if (!rs->settings)
			return;
		base = rs->settings;
		rest = s;
	} else {
		return;
	}
	size_t bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	size_t cap = bl + strlen(rest) + 3;
	char *abs = tgi_xmalloc(cap);
	snprintf(abs, cap, "%.*s%s%s", (int)bl, base, rest[0] == '/' ? "" : "/", rest);
	const char *in = under(abs, rs->ws);
	if (!in)
		in = under(abs, rs->ws_given);
	char *spec = tgi_xmalloc(cap + 1);
	if (in) {
		snprintf(spec, cap + 1, "/%s", in);
	} else {
		snprintf(spec, cap + 1, "/%s", abs);
		r->root = rs->ws ? tgi_strdup(rs->ws) : NULL;
	}
	free(abs);
	free(r->spec);
	r->spec = spec;
}

/* ---- rulesets ----------------------------------------------------------- */

int tgi_ruleset_names(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool, int bare)
{
	for (size_t i = 0; i < rs->list[kind].n; i++) {
		const tgi_rule *r = rs->list[kind].v[i];
		if ((!bare || r->kind == SPEC_ANY) && for_tool(r, tool))
			return 1;
	}
	return 0;
}

tgi_ruleset *tgi_ruleset_new(void)
{
	return tgi_xcalloc(1, sizeof(tgi_ruleset));
}

void tgi_ruleset_free(tgi_ruleset *rs)
{
	if (!rs)
		return;
	for (size_t k = 0; k < TGI_ARRAY_LEN(rs->list); k++) {
		for (size_t i = 0; i < rs->list[k].n; i++)
			tgi_rule_free(rs->list[k].v[i]);
		free(rs->list[k].v);
	}
	free(rs->ws);
	free(rs->ws_given);
	free(rs->settings);
	free(rs->home);
	free(rs);
}

void tgi_ruleset_anchor(tgi_ruleset *rs, const tgi_rule_env *env)
{
	if (!rs || !env)
		return;
	free(rs->ws);
	free(rs->ws_given);
	free(rs->settings);
	free(rs->home);
	rs->ws = env->workspace ? tgi_strdup(env->workspace) : NULL;
	rs->ws_given = env->workspace_given ? tgi_strdup(env->workspace_given) : NULL;
	rs->settings = env->settings_dir ? tgi_strdup(env->settings_dir) : NULL;
	rs->home = env->home && env->home[0] == '/' ? tgi_strdup(env->home) : NULL;
	rs->anchored = 1;
}

size_t tgi_ruleset_count(const tgi_ruleset *rs, tgi_rule_kind kind)
{
	return rs && (kind == TGI_RULE_ALLOW || kind == TGI_RULE_ASK || kind == TGI_RULE_DENY)
	           ? rs->list[kind].n : 0;
}

const tgi_rule *tgi_ruleset_at(const tgi_ruleset *rs, tgi_rule_kind kind, size_t i)
{
	return i < tgi_ruleset_count(rs, kind) ? rs->list[kind].v[i] : NULL;
}

void tgi_ruleset_mcp_prefix(tgi_ruleset *rs, const char *server, const char *prefix)
{
	for (size_t k = 0; rs && k < TGI_ARRAY_LEN(rs->list); k++)
		for (size_t i = 0; i < rs->list[k].n; i++) {
			tgi_rule *r = rs->list[k].v[i];
			if (!r->server || strcmp(r->server, server))
				continue;
			size_t cap = strlen(prefix) + (r->remote ? strlen(r->remote) : 1) + 1;
			char *t = tgi_xmalloc(cap);
			snprintf(t, cap, "%s%s", prefix, r->remote ? r->remote : "*");
			free(r->targets.v[0]);
			r->targets.v[0] = t;
		}
}

static int kind_ok(tgi_rule_kind kind)
{
	return kind == TGI_RULE_ALLOW || kind == TGI_RULE_ASK || kind == TGI_RULE_DENY;
}

int tgi_ruleset_add(tgi_ruleset *rs, tgi_rule_kind kind, const char *text, char *err, size_t errlen)
{
	if (!rs || !kind_ok(kind)) {
		if (err)
			tgi_snprintf(err, errlen, "a rule list must be one of allow, ask or deny");
		return -1;
	}
	tgi_rule *r = tgi_rule_parse(text, err, errlen);
	if (!r)
		return -1;
	if (rs->anchored && r->kind == SPEC_PATH)
		anchor_path(r, rs);
	if (rs->list[kind].n == rs->list[kind].cap) {
		rs->list[kind].cap = rs->list[kind].cap ? 2 * rs->list[kind].cap : 8;
		rs->list[kind].v = tgi_xrealloc(rs->list[kind].v, rs->list[kind].cap * sizeof(tgi_rule *));
	}
	rs->list[kind].v[rs->list[kind].n++] = r;
	return 0;
}

const tgi_rule *tgi_ruleset_first(const tgi_ruleset *rs, tgi_rule_kind kind, const tgi_match_input *in)
{
	if (!rs || !kind_ok(kind))
		return NULL;
	for (size_t i = 0; i < rs->list[kind].n; i++)
		if (rule_match(rs->list[kind].v[i], in, kind == TGI_RULE_ALLOW))
			return rs->list[kind].v[i];
	return NULL;
}

const tgi_rule *tgi_ruleset_reaches(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool,
                                    const char *dir)
{
	if (!rs || !kind_ok(kind) || !tool)
		return NULL;
	for (size_t i = 0; i < rs->list[kind].n; i++) {
		const tgi_rule *r = rs->list[kind].v[i];
		if (!for_tool(r, tool))
			continue;
		if (r->kind == SPEC_ANY || (r->kind == SPEC_PATH && (!dir || tgi_path_glob_reaches(r->spec, dir))))
			return r;
	}
	return NULL;
}

size_t tgi_ruleset_path_globs(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool,
                              tgi_strv *globs, tgi_strv *texts)
{
	size_t bare = 0;
	if (!rs || !kind_ok(kind) || !tool)
		return 0;
	for (size_t i = 0; i < rs->list[kind].n; i++) {
		const tgi_rule *r = rs->list[kind].v[i];
		if (!for_tool(r, tool))
			continue;
		if (r->kind == SPEC_ANY)
			bare++;
		else if (r->kind == SPEC_PATH) {
			tgi_strv_push(globs, tgi_strdup(r->spec));
			if (texts)
				tgi_strv_push(texts, tgi_strdup(r->text));
		}
	}
	return bare;
}
