/*
 * execpolicy.c — Codex-compatible execution-policy rules (.rules files):
 * a small Starlark-subset parser, the rules it builds, their load-time
 * self-tests and evaluation (execpolicy.h).
 *
 * What Codex does (codex-rs/execpolicy: README.md, parser.rs, rule.rs,
 * policy.rs, error.rs, execpolicycheck.rs) and what is followed here:
 *
 *  - prefix_rule(pattern, decision?, justification?, match?, not_match?).
 *    `decision` defaults to "allow"; "allow" | "prompt" | "forbidden", else
 *    "invalid decision: X".  A blank justification is "invalid rule:
 *    justification cannot be empty".  Pattern errors read "invalid pattern
 *    element: pattern cannot be empty", "... pattern alternatives cannot be
 *    empty", "... pattern alternative must be a string (got list)".  A
 *    one-item alternative list is a plain token.  Alternatives in the first
 *    position make one rule per program, keyed by it; alternatives further
 *    on are not expanded.
 *  - A rule matches when argv has at least as many tokens as the pattern
 *    and each token is equal to (one of) the pattern's; matchedPrefix is
 *    those argv tokens.  Every matching rule is listed, in load order; the
 *    decision is the strictest (forbidden > prompt > allow).
 *  - host_executable(name, paths): name is a bare program name, paths are
 *    absolute or "~/..." (folded lexically, "." and ".." too, as Codex's
 *    AbsolutePathBuf) and must have basename `name`; duplicates drop, and
 *    a later definition of a name replaces an earlier one, across files
 *    too.  Exact first-token rules are tried first.  Only when none
 *    matches, and only with --resolve-host-executables (Codex's CLI; off by
 *    default, always on for example checks), is the program made absolute
 *    ("~/" from the home directory, a relative path from the current
 *    directory, "." and ".." folded) and its basename tried
 *    ("/usr/bin/git" -> rules for "git"); then matchedPrefix starts with
 *    the basename and the match carries "resolvedProgram", the folded
 *    path.  If the name has a host_executable entry that path must be one
 *    of its paths (an empty list allows none); without an entry any path
 *    does.  That is TGI_EP_HOST; TGI_EP_EXACT is Codex's default.  The
 *    gate uses a third reading, TGI_EP_TRUSTED (execpolicy.h): a
 *    basename's prompt and forbidden rules for any program path, its
 *    allow rules only for a path host_executable lists or, without an
 *    entry, one its caller vouches for.
 *  - Examples: strings split with the shlex crate (POSIX words: '…'
 *    literal, "…" with \ escaping only $ ` " \ and newline, a word-initial
 *    # comments out the line; unbalanced quotes or a trailing \ are an
 *    error) or lists of strings.  They are checked when the whole file has
 *    been read (so a host_executable later in the file counts), rule by
 *    rule, not_match before match, each against that rule alone, in
 *    Codex's wording: "expected every example to match at least one rule.
 *    rules: [...]; unmatched examples: [...]" and "expected example to not
 *    match rule `...`: EXAMPLE" (examples shlex-joined).  Codex prints its
 *    rules with Rust's Debug; here a rule reads as Codex renders patterns
 *    elsewhere: "git [push|fetch]".
 *  - `codex execpolicy check` prints {"matchedRules":[{"prefixRuleMatch":
 *    {"matchedPrefix":[...],"decision":"prompt","resolvedProgram":"...",
 *    "justification":"..."}}],"decision":"prompt"}; resolvedProgram and
 *    justification are left out when absent; no match is
 *    {"matchedRules":[]} with no decision.
 *  - Starlark (starlark-rust) strings: no implicit joining of adjacent
 *    literals (a syntax error there, a load error here); escapes \n \r \t
 *    \a \b \f \v \\ \' \" \<newline>, \xHH \uHHHH \UHHHHHHHH and octal
 *    \OOO give the code point (so "\xe9" is "é"), any other \c keeps the
 *    backslash.
 *
 * Differences, on purpose: only keyword arguments (Codex's builtins also
 * take arguments by position, in the order above); no variables,
 * expressions, raw, triple-quoted or f-strings; network_rule is unknown
 * here; a host_executable path may begin with "~/" (Codex 0.171 refuses
 * it as not absolute).  In the gate (TGI_EP_TRUSTED) a program path with a
 * ".." component, or a relative one, never gets its basename's allow
 * rules (folding ".." lexically can name another file than the kernel
 * finds through a symlink).
 *
 * A file is parsed into one arena; its rules and host entries are staged
 * and kept only if the whole file, self-tests included, loads.
 *
 * Owns: the file format, its errors and evaluation.  Must not: split
 * command strings (shell.c does), or know about modes and approvals.
 */
#include "policy/execpolicy.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Limits on what one file may hold: every one is a load error past it. */
#define EP_FILE_MAX      (4u << 20) /* bytes in one file */
#define EP_STRING_MAX    (64u << 10) /* bytes in one string literal, as written */
#define EP_DEPTH_MAX     8           /* lists inside lists */
#define EP_LIST_MAX      4096        /* items in one list, tokens in one example */
#define EP_VALUES_MAX    (256u << 10) /* strings and lists in one file */
#define EP_PATTERN_MAX   256         /* tokens in one pattern */
#define EP_ALTS_MAX      256         /* alternatives for one token */
#define EP_EXAMPLES_MAX  1024        /* match or not_match examples of one rule */
#define EP_RULES_MAX     65536       /* rules in a policy, one per first-token alternative */
#define EP_HOSTS_MAX     4096        /* host_executable names in a policy */
#define EP_PATHS_MAX     256         /* paths of one host_executable */
#define EP_MSG_MAX       4096        /* bytes of one rendered message */

/* ---- the policy ---- */

typedef struct ep_alts {          /* one pattern token: any of v[0..n) */
	const char **v;
	size_t       n;
} ep_alts;

typedef struct ep_example {
	const char **argv;
	size_t       argc;
} ep_example;

/* One prefix_rule call.  Every pointer is into the arena of its file. */
typedef struct ep_rule {
	ep_alts           head;       /* the program, or its alternatives */
	const ep_alts    *rest;       /* the tokens after it */
	size_t            nrest;
	tgi_ep_decision   decision;
	const char       *justification; /* NULL: none given */
	const char       *file;
	unsigned          line;       /* of the call */
	const ep_example *match, *not_match;
	size_t            nmatch, nnot_match;
} ep_rule;

typedef struct ep_host {
	const char  *name;
	const char **paths;           /* normalised, absolute */
	size_t       npaths;
} ep_host;

/* Rules and host entries: the policy's, or one file's while it loads. */
typedef struct ep_set {
	ep_rule *rules;
	size_t   nrules, caprules;
	size_t   nheads;              /* rules as Codex counts them */
	ep_host *hosts;               /* one entry per name */
	size_t   nhosts, caphosts;
} ep_set;

/* Arena blocks: a file's strings, values and arrays live and die together. */
typedef struct ep_block {
	struct ep_block *next;
	size_t           used, cap;
	max_align_t      mem[];
} ep_block;

#define EP_BLOCK_SIZE (32u << 10)

struct tgi_execpolicy {
	ep_set    set;
	ep_block *blocks;             /* every loaded file's arena */
	size_t    nexamples;
};

/* ---- a file while it loads ---- */

typedef enum {
	T_EOF, T_IDENT, T_STRING, T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_COMMA, T_EQ, T_SEMI,
} ep_tok_kind;

typedef struct ep_token {
	ep_tok_kind kind;
	unsigned    line;
	int         nl;               /* a newline came before it */
	const char *s;                /* T_IDENT: into the text; T_STRING: decoded, NUL-terminated */
	size_t      n;
} ep_token;

/* A parsed value: a string or a list of values. */
typedef struct ep_val {
	struct ep_val *next;          /* the next item of the enclosing list */
	struct ep_val *items;         /* a list's first item */
	const char    *s;             /* a string: valid UTF-8, no NUL */
	size_t         n;             /* a string's length, a list's item count */
	unsigned       line;
	int            is_list;
} ep_val;

typedef struct ep_parse {
	const tgi_execpolicy *ep;
	const char *name;             /* in the arena */
	const char *text;
	size_t      len, pos;
	unsigned    line;
	ep_token    tok;
	ep_block   *arena;
	ep_set      stage;
	size_t      nvalues, nexamples;
	char       *err;
	size_t      errlen;
} ep_parse;

static int fail(ep_parse *p, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* file:line: sentence, control characters taken out.  Always -1. */
static int fail(ep_parse *p, unsigned line, const char *fmt, ...)
{
	char msg[EP_MSG_MAX], full[EP_MSG_MAX + 1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line)
		snprintf(full, sizeof full, "%.1000s:%u: %s", p->name, line, msg);
	else
		snprintf(full, sizeof full, "%.1000s: %s", p->name, msg);
	if (p->err)
		tgi_sanitize(p->err, p->errlen, full);
	return -1;
}

/* ---- arena ---- */

static void *arena_alloc(ep_block **arena, size_t n)
{
	const size_t align = _Alignof(max_align_t);
	ep_block *b = *arena;
	n = (n + align - 1) & ~(align - 1);
	if (b && b->cap - b->used >= n) {
		void *p = (char *)b->mem + b->used;
		b->used += n;
		return p;
	}
	size_t cap = n > EP_BLOCK_SIZE / 4 ? n : EP_BLOCK_SIZE;
	ep_block *nb = tgi_xmalloc(sizeof *nb + cap);
	nb->cap = cap;
	nb->used = n;
	if (b && cap == n) { /* a large piece gets a block of its own behind the current one */
		nb->next = b->next;
		b->next = nb;
	} else {
		nb->next = b;
		*arena = nb;
	}
	return nb->mem;
}

static char *arena_strndup(ep_block **arena, const char *s, size_t n)
{
	char *p = arena_alloc(arena, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static void arena_free(ep_block *b)
{
	while (b) {
		ep_block *next = b->next;
		free(b);
		b = next;
	}
}

/* ---- UTF-8 ---- */

/* Offset of the first NUL or byte that does not start valid UTF-8, or len. */
static size_t utf8_bad(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i], cp, min;
		size_t n;
		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1, min = 0x80;
		else if (c >= 0xE0 && c <= 0xEF)
			n = 2, min = 0x800;
		else if (c >= 0xF0 && c <= 0xF4)
			n = 3, min = 0x10000;
		else
			return i;
		if (len - i <= n)
			return i;
		cp = c & (0x3Fu >> n);
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += n + 1;
	}
	return len;
}

static size_t utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* ---- lexer ---- */

static int is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* How a token reads in a message. */
static void describe(const ep_token *t, char *out, size_t cap)
{
	switch (t->kind) {
	case T_EOF:    tgi_snprintf(out, cap, "the end of the file"); break;
	case T_IDENT:  tgi_snprintf(out, cap, "`%.*s`", (int)(t->n > 64 ? 64 : t->n), t->s); break;
	case T_STRING: tgi_snprintf(out, cap, "a string"); break;
	case T_LPAREN: tgi_snprintf(out, cap, "`(`"); break;
	case T_RPAREN: tgi_snprintf(out, cap, "`)`"); break;
	case T_LBRACK: tgi_snprintf(out, cap, "`[`"); break;
	case T_RBRACK: tgi_snprintf(out, cap, "`]`"); break;
	case T_COMMA:  tgi_snprintf(out, cap, "`,`"); break;
	case T_EQ:     tgi_snprintf(out, cap, "`=`"); break;
	case T_SEMI:   tgi_snprintf(out, cap, "`;`"); break;
	}
}

/*
 * A string literal at p->pos, decoded into the arena.  The closing quote
 * is found first (a backslash skips what follows it), so the decoded text,
 * never longer than the literal, fits one allocation.
 */
static int lex_string(ep_parse *p)
{
	const char *t = p->text;
	size_t len = p->len, i = p->pos, j;
	char q = t[i];
	unsigned line = p->line, lines = 0;

	if (i + 2 < len && t[i + 1] == q && t[i + 2] == q)
		return fail(p, line, "triple-quoted strings are not supported");
	for (j = i + 1;; j++) {
		if (j >= len || t[j] == '\n')
			return fail(p, line, "unterminated string");
		if (t[j] == q)
			break;
		if (t[j] == '\\' && j + 1 < len) {
			if (t[j + 1] == '\n')
				lines++;
			else if (t[j + 1] == '\r' && j + 2 < len && t[j + 2] == '\n')
				lines++, j++;
			j++;
		}
	}
	if (j - i - 1 > EP_STRING_MAX)
		return fail(p, line, "a string longer than %u bytes", EP_STRING_MAX);

	char *out = arena_alloc(&p->arena, j - i);
	size_t o = 0;
	for (size_t k = i + 1; k < j;) {
		char c = t[k++];
		if (c == '\r')
			continue; /* as Starlark: carriage returns drop */
		if (c != '\\') {
			out[o++] = c;
			continue;
		}
		char e = t[k++];
		uint32_t cp;
		size_t nd;
		switch (e) {
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case 'a': out[o++] = '\a'; continue;
		case 'b': out[o++] = '\b'; continue;
		case 'f': out[o++] = '\f'; continue;
		case 'v': out[o++] = '\v'; continue;
		case '\n': continue;
		case '\r':
			if (k < j && t[k] == '\n') {
				k++;
				continue;
			}
			return fail(p, line, "invalid string escape sequence: a backslash before a carriage return");
		case '"': case '\'': case '\\':
			out[o++] = e;
			continue;
		case 'x': case 'u': case 'U':
			nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
			cp = 0;
			for (size_t d = 0; d < nd; d++) {
				int v = k < j ? tgi_hex_value(t[k]) : -1;
				if (v < 0)
					return fail(p, line, "invalid string escape sequence `\\%c`: it takes %zu hex digits", e, nd);
				cp = cp << 4 | (uint32_t)v;
				k++;
			}
			break;
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
			cp = (uint32_t)(e - '0');
			for (int d = 1; d < 3 && k < j && t[k] >= '0' && t[k] <= '7'; d++)
				cp = cp << 3 | (uint32_t)(t[k++] - '0');
			break;
		default: /* as Starlark: an unknown escape keeps its backslash */
			out[o++] = '\\';
			k--;
			continue;
		}
		if (cp == 0)
			return fail(p, line, "a string may not hold a NUL character");
		if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return fail(p, line, "invalid string escape sequence: U+%X is not a character", (unsigned)cp);
		o += utf8_put(out + o, cp);
	}
	out[o] = '\0';
	p->tok.kind = T_STRING;
	p->tok.s = out;
	p->tok.n = o;
	p->line += lines;
	p->pos = j + 1;
	return 0;
}

/* The next token into p->tok. */
static int lex(ep_parse *p)
{
	const char *t = p->text;
	int nl = 0;
	for (;;) {
		if (p->pos >= p->len) {
			p->tok = (ep_token){ .kind = T_EOF, .line = p->line, .nl = 1 };
			return 0;
		}
		char c = t[p->pos];
		if (c == '\n') {
			p->line++;
			nl = 1;
			p->pos++;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			p->pos++;
		} else if (c == '#') {
			while (p->pos < p->len && t[p->pos] != '\n')
				p->pos++;
		} else {
			break;
		}
	}
	ep_token *tok = &p->tok;
	*tok = (ep_token){ .line = p->line, .nl = nl };
	char c = t[p->pos];
	if (is_ident_start(c)) {
		size_t start = p->pos;
		while (p->pos < p->len && is_ident(t[p->pos]))
			p->pos++;
		if (p->pos < p->len && (t[p->pos] == '"' || t[p->pos] == '\''))
			return fail(p, p->line, "string prefixes such as r\"...\" and f\"...\" are not supported");
		tok->kind = T_IDENT;
		tok->s = t + start;
		tok->n = p->pos - start;
		return 0;
	}
	if (c == '"' || c == '\'')
		return lex_string(p);
	static const char punct[] = "()[],=;";
	static const ep_tok_kind kinds[] = { T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_COMMA, T_EQ, T_SEMI };
	const char *at = strchr(punct, c);
	if (at && c) {
		tok->kind = kinds[at - punct];
		p->pos++;
		return 0;
	}
	if (c >= '0' && c <= '9')
		return fail(p, p->line, "numbers are not supported: values are strings or lists of strings");
	if ((unsigned char)c < 0x20 || c == 0x7f)
		return fail(p, p->line, "unexpected control character 0x%02x", (unsigned)(unsigned char)c);
	if ((unsigned char)c < 0x80)
		return fail(p, p->line, "unexpected `%c`: a rules file holds calls with strings and lists", c);
	size_t n = 1; /* the text is valid UTF-8: show the whole character */
	while (p->pos + n < p->len && ((unsigned char)t[p->pos + n] & 0xC0) == 0x80)
		n++;
	return fail(p, p->line, "unexpected `%.*s`: a rules file holds calls with strings and lists", (int)n,
	            t + p->pos);
}

/* ---- parser: values and calls ---- */

static int parse_value(ep_parse *p, unsigned depth, ep_val **out)
{
	char d[96];
	if (++p->nvalues > EP_VALUES_MAX)
		return fail(p, p->tok.line, "more than %u values in one file", EP_VALUES_MAX);
	ep_val *v = arena_alloc(&p->arena, sizeof *v);
	*v = (ep_val){ .line = p->tok.line };
	if (p->tok.kind == T_STRING) {
		v->s = p->tok.s;
		v->n = p->tok.n;
		if (lex(p) < 0)
			return -1;
		if (p->tok.kind == T_STRING)
			return fail(p, p->tok.line, "adjacent strings are not joined in Starlark: write one string");
		*out = v;
		return 0;
	}
	if (p->tok.kind != T_LBRACK) {
		describe(&p->tok, d, sizeof d);
		return fail(p, p->tok.line, "expected a string or a list, found %s", d);
	}
	if (depth >= EP_DEPTH_MAX)
		return fail(p, v->line, "lists nested deeper than %d", EP_DEPTH_MAX);
	v->is_list = 1;
	ep_val **tail = &v->items;
	if (lex(p) < 0)
		return -1;
	while (p->tok.kind != T_RBRACK) {
		ep_val *item = NULL;
		if (v->n == EP_LIST_MAX)
			return fail(p, v->line, "a list of more than %d items", EP_LIST_MAX);
		if (parse_value(p, depth + 1, &item) < 0)
			return -1;
		*tail = item;
		tail = &item->next;
		v->n++;
		if (p->tok.kind == T_COMMA) {
			if (lex(p) < 0)
				return -1;
		} else if (p->tok.kind != T_RBRACK) {
			describe(&p->tok, d, sizeof d);
			return fail(p, p->tok.line, "expected `,` or `]` in the list opened on line %u, found %s",
			            v->line, d);
		}
	}
	if (lex(p) < 0)
		return -1;
	*out = v;
	return 0;
}

/* The functions a rules file may call and their keyword arguments. */
enum { A_PATTERN, A_DECISION, A_JUSTIFICATION, A_MATCH, A_NOT_MATCH, A_MAX };
enum { A_NAME, A_PATHS };

typedef struct ep_func {
	const char *name;
	const char *params[A_MAX + 1];
	int (*compile)(ep_parse *p, unsigned line, ep_val *const *args);
} ep_func;

static int compile_prefix_rule(ep_parse *p, unsigned line, ep_val *const *args);
static int compile_host_executable(ep_parse *p, unsigned line, ep_val *const *args);

static const ep_func funcs[] = {
	{ "prefix_rule", { "pattern", "decision", "justification", "match", "not_match" }, compile_prefix_rule },
	{ "host_executable", { "name", "paths" }, compile_host_executable },
};

static int ident_is(const ep_token *t, const char *s)
{
	return t->kind == T_IDENT && strlen(s) == t->n && !memcmp(t->s, s, t->n);
}

/* name(kw = value, ...) followed by a new line, `;` or the end. */
static int parse_call(ep_parse *p)
{
	char d[96];
	const ep_func *f = NULL;
	unsigned line = p->tok.line;

	if (p->tok.kind != T_IDENT) {
		describe(&p->tok, d, sizeof d);
		return fail(p, line, "expected a call such as prefix_rule(...), found %s", d);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(funcs); i++)
		if (ident_is(&p->tok, funcs[i].name))
			f = &funcs[i];
	describe(&p->tok, d, sizeof d);
	if (lex(p) < 0)
		return -1;
	if (p->tok.kind != T_LPAREN) {
		char what[96];
		describe(&p->tok, what, sizeof what);
		return fail(p, line, "expected `(` after %s, found %s", d, what);
	}
	if (!f)
		return fail(p, line, "unknown function %s: a rules file calls prefix_rule and host_executable", d);
	if (lex(p) < 0)
		return -1;

	ep_val *args[A_MAX] = { 0 };
	while (p->tok.kind != T_RPAREN) {
		unsigned aline = p->tok.line;
		if (p->tok.kind == T_STRING || p->tok.kind == T_LBRACK)
			return fail(p, aline, "%s takes keyword arguments only: write `name = value`", f->name);
		if (p->tok.kind != T_IDENT) {
			describe(&p->tok, d, sizeof d);
			return fail(p, aline, "expected an argument or `)`, found %s", d);
		}
		ep_token kw = p->tok;
		int idx = -1;
		for (int i = 0; f->params[i]; i++)
			if (ident_is(&kw, f->params[i]))
				idx = i;
		if (lex(p) < 0)
			return -1;
		if (p->tok.kind != T_EQ)
			return fail(p, aline, "%s takes keyword arguments only: write `name = value`", f->name);
		if (idx < 0)
			return fail(p, aline, "unknown keyword argument `%.*s` to %s", (int)(kw.n > 64 ? 64 : kw.n),
			            kw.s, f->name);
		if (args[idx])
			return fail(p, aline, "duplicate keyword argument `%s` to %s", f->params[idx], f->name);
		if (lex(p) < 0 || parse_value(p, 0, &args[idx]) < 0)
			return -1;
		if (p->tok.kind == T_COMMA) {
			if (lex(p) < 0)
				return -1;
		} else if (p->tok.kind != T_RPAREN) {
			describe(&p->tok, d, sizeof d);
			return fail(p, p->tok.line, "expected `,` or `)` in the call on line %u, found %s", line, d);
		}
	}
	if (lex(p) < 0)
		return -1;
	if (p->tok.kind != T_EOF && p->tok.kind != T_SEMI && !p->tok.nl) {
		describe(&p->tok, d, sizeof d);
		return fail(p, p->tok.line, "expected a new line or `;` after the call, found %s", d);
	}
	return f->compile(p, line, args);
}

static int parse_file(ep_parse *p)
{
	if (lex(p) < 0)
		return -1;
	for (;;) {
		while (p->tok.kind == T_SEMI)
			if (lex(p) < 0)
				return -1;
		if (p->tok.kind == T_EOF)
			return 0;
		if (parse_call(p) < 0)
			return -1;
	}
}

/* ---- shlex: Codex splits string examples and joins them for messages ---- */

/*
 * Split s as the shlex crate does (POSIX shell words, no expansions) into
 * the arena.  0, or -1 with the Codex sentence.
 */
static int shlex_split(ep_parse *p, const ep_val *v, ep_example *ex)
{
	const char *s = v->s;
	size_t n = v->n, i = 0, count = 0, cap = 16;
	char *buf = arena_alloc(&p->arena, 2 * n + 2); /* words and their NULs */
	size_t o = 0;
	const char **words = tgi_xmalloc(cap * sizeof *words);

	for (;;) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '#')) {
			if (s[i] == '#')
				while (i < n && s[i] != '\n')
					i++;
			else
				i++;
		}
		if (i >= n)
			break;
		char *w = buf + o;
		while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') {
			char c = s[i++];
			if (c == '\'') {
				while (i < n && s[i] != '\'')
					buf[o++] = s[i++];
				if (i++ >= n)
					goto bad;
			} else if (c == '"') {
				for (;;) {
					if (i >= n)
						goto bad;
					c = s[i++];
					if (c == '"')
						break;
					if (c != '\\') {
						buf[o++] = c;
						continue;
					}
					if (i >= n)
						goto bad;
					c = s[i++];
					if (c == '\n')
						continue;
					if (c != '$' && c != '`' && c != '"' && c != '\\')
						buf[o++] = '\\';
					buf[o++] = c;
				}
			} else if (c == '\\') {
				if (i >= n)
					goto bad;
				if (s[i] != '\n')
					buf[o++] = s[i];
				i++;
			} else {
				buf[o++] = c;
			}
		}
		buf[o++] = '\0';
		if (count == EP_LIST_MAX) {
			free(words);
			return fail(p, v->line, "invalid example: more than %d words", EP_LIST_MAX);
		}
		if (count == cap)
			words = tgi_xrealloc(words, (cap *= 2) * sizeof *words);
		words[count++] = w;
	}
	if (!count) {
		free(words);
		return fail(p, v->line, "invalid example: example cannot be an empty string");
	}
	ex->argv = arena_alloc(&p->arena, count * sizeof *ex->argv);
	memcpy(ex->argv, words, count * sizeof *words);
	ex->argc = count;
	free(words);
	return 0;
bad:
	free(words);
	return fail(p, v->line, "invalid example: example string has invalid shell syntax");
}

/* Append without growing past the buffer's cap; the first refusal freezes it. */
static void put(tgi_buf *b, const char *s, size_t n)
{
	if (tgi_buf_append(b, s, n) < 0)
		b->max = b->len;
}

static void puts_(tgi_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static const char *text(const tgi_buf *b)
{
	return b->p ? b->p : "";
}

static int sh_unquoted_ok(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c && strchr("+-./:@]_", c));
}

/* One word quoted as the shlex crate's quote(): plain, '…' or "…" chunks. */
static void shlex_quote(tgi_buf *b, const char *w)
{
	enum { U = 1, S = 2, D = 4 };
	size_t n = strlen(w);
	if (!n) {
		puts_(b, "''");
		return;
	}
	while (n) {
		int ok = U | S | D;
		size_t i = 0;
		if (w[0] == '^') {
			ok = S;
			i = 1;
		}
		for (; i < n; i++) {
			unsigned char c = (unsigned char)w[i];
			int cur = ok;
			if (c >= 0x80) {
				cur &= ~U;
			} else {
				if (!sh_unquoted_ok(c))
					cur &= ~U;
				if (c == '\'' || c == '^' || c == '\\')
					cur &= ~S;
				if (c == '`' || c == '$' || c == '!' || c == '^')
					cur &= ~D;
			}
			if (!cur)
				break;
			ok = cur;
		}
		if (ok & U) {
			put(b, w, i);
		} else if (ok & S) {
			put(b, "'", 1);
			put(b, w, i);
			put(b, "'", 1);
		} else {
			put(b, "\"", 1);
			for (size_t k = 0; k < i; k++) {
				if (strchr("$`\"\\", w[k]))
					put(b, "\\", 1);
				put(b, w + k, 1);
			}
			put(b, "\"", 1);
		}
		w += i;
		n -= i;
	}
}

static void shlex_join(tgi_buf *b, const char *first, const char *const *rest, size_t nrest)
{
	shlex_quote(b, first);
	for (size_t i = 0; i < nrest; i++) {
		put(b, " ", 1);
		shlex_quote(b, rest[i]);
	}
}

/* A string as Rust's Debug prints it: "…" with \" \\ \n \r \t \u{..}. */
static void debug_quote(tgi_buf *b, const char *s)
{
	put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[16];
		if (c == '"' || c == '\\') {
			put(b, "\\", 1);
			put(b, s, 1);
		} else if (c == '\n' || c == '\r' || c == '\t') {
			puts_(b, c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof esc, "\\u{%x}", c);
			puts_(b, esc);
		} else {
			put(b, s, 1);
		}
	}
	put(b, "\"", 1);
}

/* A rule with one program as Codex renders patterns: "git [push|fetch]". */
static void render_rule(tgi_buf *b, const ep_rule *r, const char *program)
{
	puts_(b, program);
	for (size_t i = 0; i < r->nrest; i++) {
		const ep_alts *a = &r->rest[i];
		put(b, " ", 1);
		if (a->n == 1) {
			puts_(b, a->v[0]);
			continue;
		}
		put(b, "[", 1);
		for (size_t k = 0; k < a->n; k++) {
			if (k)
				put(b, "|", 1);
			puts_(b, a->v[k]);
		}
		put(b, "]", 1);
	}
}

/* ---- matching ---- */

/* The last component of a normalised path, or NULL for "/" and "..". */
static const char *path_basename(const char *path)
{
	const char *base = strrchr(path, '/') + 1;
	return *base && strcmp(base, "..") ? base : NULL;
}

static int has_dotdot(const char *path)
{
	for (const char *s = strstr(path, "/.."); s; s = strstr(s + 1, "/.."))
		if (s[3] == '/' || s[3] == '\0')
			return 1;
	return 0;
}

static const ep_host *set_host(const ep_set *s, const char *name)
{
	for (size_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, name))
			return &s->hosts[i];
	return NULL;
}

/* A file's own entry first (it is the later definition), then the policy's. */
static const ep_host *find_host(const tgi_execpolicy *ep, const ep_set *stage, const char *name)
{
	const ep_host *h = stage ? set_host(stage, name) : NULL;
	return h ? h : set_host(&ep->set, name);
}

static int alts_have(const ep_alts *a, const char *tok)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->v[i], tok))
			return 1;
	return 0;
}

typedef struct ep_hit {
	const ep_rule *rule;
	const char    *program;   /* the rule's program that matched argv[0] or its basename */
	size_t         plen;      /* tokens in the matched prefix */
	const char    *resolved;  /* the absolute program, when matched by basename; else NULL */
} ep_hit;

typedef void (*ep_visit)(void *ctx, const ep_hit *hit);

/* Rules whose program is `program`, whose decision is at least min and
 * whose pattern prefixes argv[1..]. */
static size_t match_program(const ep_rule *rules, size_t n, const char *program, const char *const *argv,
                            size_t argc, const char *resolved, tgi_ep_decision min, ep_visit fn,
                            void *ctx)
{
	size_t hits = 0;
	for (size_t i = 0; i < n; i++) {
		const ep_rule *r = &rules[i];
		if (argc < r->nrest + 1 || r->decision < min)
			continue;
		if (!alts_have(&r->head, program))
			continue;
		size_t k = 0;
		while (k < r->nrest && alts_have(&r->rest[k], argv[k + 1]))
			k++;
		if (k < r->nrest)
			continue;
		/* as Codex: one rule per listed program, so one listed twice matches twice */
		for (size_t h = 0; h < r->head.n; h++) {
			if (strcmp(r->head.v[h], program))
				continue;
			ep_hit hit = { r, r->head.v[h], r->nrest + 1, resolved };
			hits++;
			if (fn)
				fn(ctx, &hit);
		}
	}
	return hits;
}

/* The home directory as Rust's dirs::home_dir finds it: $HOME unless it
 * is empty, else the user database; NULL when neither has one. */
static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	if (h && *h)
		return h;
	return tgi_passwd_home();
}

/*
 * argv[0] as Codex's --resolve-host-executables reads it (its
 * AbsolutePathBuf): "~" and "~/..." from the home directory, a relative
 * path from the current directory, then "." and ".." folded lexically.
 * Caller frees; NULL when it cannot be made absolute.
 */
static char *codex_absolute(const char *prog)
{
	const char *home = NULL, *rest = prog;
	char cwd[PATH_MAX] = "";
	if (prog[0] == '~' && (prog[1] == '\0' || prog[1] == '/') && (home = home_dir())) {
		rest = prog + 1;
		while (*rest == '/')
			rest++;
	}
	const char *start = home ? home : prog;
	if (start[0] != '/' && !getcwd(cwd, sizeof cwd))
		return NULL;
	size_t lc = strlen(cwd), lh = home ? strlen(home) : 0, lr = strlen(rest);
	char *out = tgi_xmalloc(lc + lh + lr + 4), *o = out;
	if (lc) {
		memcpy(o, cwd, lc);
		o += lc;
		*o++ = '/';
	}
	if (home) {
		memcpy(o, home, lh);
		o += lh;
		*o++ = '/';
	}
	memcpy(o, rest, lr + 1);
	if (out[0] != '/') { /* a relative home and no current directory */
		free(out);
		return NULL;
	}
	return tgi_path_fold(out, out, 1);
}

/* argv[0] as the gate reads it: only an absolute path, "//" and "/./"
 * folded, with no ".." (folding it lexically can name another file than
 * the kernel finds through a symlink).  Caller frees; NULL otherwise. */
static char *gate_absolute(const char *prog)
{
	if (prog[0] != '/')
		return NULL;
	char *out = tgi_path_fold(prog, tgi_strdup(prog), 0);
	if (has_dotdot(out)) {
		free(out);
		return NULL;
	}
	return out;
}

static int host_lists(const ep_host *h, const char *path)
{
	for (size_t i = 0; i < h->npaths; i++)
		if (!strcmp(h->paths[i], path))
			return 1;
	return 0;
}

/* Does a rule name program, with an allow decision when allow_only? */
static int rules_name(const ep_rule *rules, size_t n, const char *program, int allow_only)
{
	for (size_t i = 0; i < n; i++)
		if ((!allow_only || rules[i].decision == TGI_EP_ALLOW) && alts_have(&rules[i].head, program))
			return 1;
	return 0;
}

/* Codex's reading (TGI_EP_HOST): argv[0] made absolute; its basename's
 * rules if host_executable lists that path or does not name it. */
static size_t match_host(const ep_rule *rules, size_t n, const tgi_execpolicy *ep, const ep_set *stage,
                         const char *const *argv, size_t argc, ep_visit fn, void *ctx)
{
	size_t hits = 0;
	char *prog = codex_absolute(argv[0]);
	const char *base = prog ? path_basename(prog) : NULL;
	if (base && rules_name(rules, n, base, 0)) {
		const ep_host *h = find_host(ep, stage, base);
		if (!h || host_lists(h, prog))
			hits = match_program(rules, n, base, argv, argc, prog, TGI_EP_ALLOW, fn, ctx);
	}
	free(prog);
	return hits;
}

/*
 * The gate's reading (TGI_EP_TRUSTED) of a program given as a path: its
 * basename's prompt and forbidden rules always (they only tighten), its
 * allow rules only for an absolute path without ".." that host_executable
 * lists or, when none names the basename, that res->trusted vouches for.
 */
static size_t match_trusted(const ep_rule *rules, size_t n, const tgi_execpolicy *ep, const tgi_ep_resolve *res,
                            const char *const *argv, size_t argc, ep_visit fn, void *ctx)
{
	if (!strchr(argv[0], '/'))
		return 0;
	char *prog = gate_absolute(argv[0]);
	const char *base = strrchr(prog ? prog : argv[0], '/') + 1;
	size_t hits = 0;
	if (*base && rules_name(rules, n, base, 0)) {
		tgi_ep_decision min = TGI_EP_PROMPT;
		if (prog && rules_name(rules, n, base, 1)) {
			const ep_host *h = find_host(ep, NULL, base);
			if (h ? host_lists(h, prog) : res->trusted && res->trusted(res->ctx, prog))
				min = TGI_EP_ALLOW;
		}
		hits = match_program(rules, n, base, argv, argc, prog ? prog : argv[0], min, fn, ctx);
	}
	free(prog);
	return hits;
}

/*
 * Codex's matching of one argv against rules: exact programs first; if
 * none matched, the rules of argv[0]'s basename as res says (execpolicy.h).
 * The number of matches.
 */
static size_t match_argv(const ep_rule *rules, size_t n, const tgi_execpolicy *ep, const ep_set *stage,
                         const tgi_ep_resolve *res, const char *const *argv, size_t argc, ep_visit fn,
                         void *ctx)
{
	if (!argc || !argv[0])
		return 0;
	size_t hits = match_program(rules, n, argv[0], argv, argc, NULL, TGI_EP_ALLOW, fn, ctx);
	if (hits || !res || res->mode == TGI_EP_EXACT)
		return hits;
	if (res->mode == TGI_EP_HOST)
		return match_host(rules, n, ep, stage, argv, argc, fn, ctx);
	return match_trusted(rules, n, ep, res, argv, argc, fn, ctx);
}

/* ---- compiling calls into rules ---- */

static int want_string(ep_parse *p, const ep_val *v, const char *arg, const char *fn)
{
	if (v->is_list)
		return fail(p, v->line, "`%s` of %s must be a string, not a list", arg, fn);
	return 0;
}

static int want_list(ep_parse *p, const ep_val *v, const char *arg, const char *fn)
{
	if (!v->is_list)
		return fail(p, v->line, "`%s` of %s must be a list, not a string", arg, fn);
	return 0;
}

static int compile_examples(ep_parse *p, const ep_val *list, const char *arg, const ep_example **out,
                            size_t *nout)
{
	if (!list)
		return 0;
	if (want_list(p, list, arg, "prefix_rule") < 0)
		return -1;
	if (list->n > EP_EXAMPLES_MAX)
		return fail(p, list->line, "more than %d examples in `%s`", EP_EXAMPLES_MAX, arg);
	ep_example *ex = arena_alloc(&p->arena, (list->n ? list->n : 1) * sizeof *ex);
	size_t i = 0;
	for (const ep_val *v = list->items; v; v = v->next, i++) {
		if (!v->is_list) {
			if (shlex_split(p, v, &ex[i]) < 0)
				return -1;
			continue;
		}
		if (!v->n)
			return fail(p, v->line, "invalid example: example cannot be an empty list");
		ex[i].argv = arena_alloc(&p->arena, v->n * sizeof *ex[i].argv);
		ex[i].argc = 0;
		for (const ep_val *t = v->items; t; t = t->next) {
			if (t->is_list)
				return fail(p, t->line, "invalid example: example tokens must be strings (got list)");
			ex[i].argv[ex[i].argc++] = t->s;
		}
	}
	*out = ex;
	*nout = list->n;
	p->nexamples += list->n;
	return 0;
}

/* A pattern token: a string, or a non-empty list of strings. */
static int compile_token(ep_parse *p, const ep_val *v, ep_alts *a)
{
	if (!v->is_list) {
		a->v = arena_alloc(&p->arena, sizeof *a->v);
		a->v[0] = v->s;
		a->n = 1;
		return 0;
	}
	if (!v->n)
		return fail(p, v->line, "invalid pattern element: pattern alternatives cannot be empty");
	if (v->n > EP_ALTS_MAX)
		return fail(p, v->line, "more than %d alternatives for one pattern element", EP_ALTS_MAX);
	a->v = arena_alloc(&p->arena, v->n * sizeof *a->v);
	a->n = 0;
	for (const ep_val *t = v->items; t; t = t->next) {
		if (t->is_list)
			return fail(p, t->line, "invalid pattern element: pattern alternative must be a string (got list)");
		a->v[a->n++] = t->s;
	}
	return 0;
}

static int blank(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\n\r\v\f", *s))
			return 0;
	return 1;
}

static int compile_prefix_rule(ep_parse *p, unsigned line, ep_val *const *args)
{
	const ep_val *pattern = args[A_PATTERN], *decision = args[A_DECISION],
	             *just = args[A_JUSTIFICATION];
	ep_rule r = { .decision = TGI_EP_ALLOW, .file = p->name, .line = line };

	if (!pattern)
		return fail(p, line, "prefix_rule is missing its `pattern` argument");
	if (decision) {
		if (want_string(p, decision, "decision", "prefix_rule") < 0)
			return -1;
		if (!strcmp(decision->s, "allow"))
			r.decision = TGI_EP_ALLOW;
		else if (!strcmp(decision->s, "prompt"))
			r.decision = TGI_EP_PROMPT;
		else if (!strcmp(decision->s, "forbidden"))
			r.decision = TGI_EP_FORBIDDEN;
		else
			return fail(p, decision->line, "invalid decision: %.200s", decision->s);
	}
	if (just) {
		if (want_string(p, just, "justification", "prefix_rule") < 0)
			return -1;
		if (blank(just->s))
			return fail(p, just->line, "invalid rule: justification cannot be empty");
		r.justification = just->s;
	}

	if (want_list(p, pattern, "pattern", "prefix_rule") < 0)
		return -1;
	if (!pattern->n)
		return fail(p, pattern->line, "invalid pattern element: pattern cannot be empty");
	if (pattern->n > EP_PATTERN_MAX)
		return fail(p, pattern->line, "a pattern of more than %d elements", EP_PATTERN_MAX);
	if (compile_token(p, pattern->items, &r.head) < 0)
		return -1;
	ep_alts *rest = arena_alloc(&p->arena, pattern->n * sizeof *rest);
	for (const ep_val *v = pattern->items->next; v; v = v->next)
		if (compile_token(p, v, &rest[r.nrest++]) < 0)
			return -1;
	r.rest = rest;

	if (compile_examples(p, args[A_MATCH], "match", &r.match, &r.nmatch) < 0 ||
	    compile_examples(p, args[A_NOT_MATCH], "not_match", &r.not_match, &r.nnot_match) < 0)
		return -1;

	ep_set *s = &p->stage;
	if (p->ep->set.nheads + s->nheads + r.head.n > EP_RULES_MAX)
		return fail(p, line, "more than %d rules in the policy", EP_RULES_MAX);
	if (s->nrules == s->caprules) {
		s->caprules = s->caprules ? 2 * s->caprules : 16;
		s->rules = tgi_xrealloc(s->rules, s->caprules * sizeof *s->rules);
	}
	s->rules[s->nrules++] = r;
	s->nheads += r.head.n;
	return 0;
}

/* Set h's paths, or add h; a later definition of a name replaces the earlier. */
static void set_put_host(ep_set *s, const ep_host *h)
{
	for (size_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, h->name)) {
			s->hosts[i] = *h;
			return;
		}
	if (s->nhosts == s->caphosts) {
		s->caphosts = s->caphosts ? 2 * s->caphosts : 8;
		s->hosts = tgi_xrealloc(s->hosts, s->caphosts * sizeof *s->hosts);
	}
	s->hosts[s->nhosts++] = *h;
}

static int compile_host_executable(ep_parse *p, unsigned line, ep_val *const *args)
{
	const ep_val *name = args[A_NAME], *paths = args[A_PATHS];

	if (!name || !paths)
		return fail(p, line, "host_executable is missing its `%s` argument", name ? "paths" : "name");
	if (want_string(p, name, "name", "host_executable") < 0 ||
	    want_list(p, paths, "paths", "host_executable") < 0)
		return -1;
	if (!name->n)
		return fail(p, name->line, "invalid rule: host_executable name cannot be empty");
	if (strchr(name->s, '/') || !strcmp(name->s, ".") || !strcmp(name->s, ".."))
		return fail(p, name->line, "invalid rule: host_executable name must be a bare executable name (got %.200s)",
		            name->s);
	if (paths->n > EP_PATHS_MAX)
		return fail(p, paths->line, "more than %d paths for one host_executable", EP_PATHS_MAX);
	if (!set_host(&p->stage, name->s) && !set_host(&p->ep->set, name->s) &&
	    p->ep->set.nhosts + p->stage.nhosts >= EP_HOSTS_MAX)
		return fail(p, line, "more than %d host_executable names in the policy", EP_HOSTS_MAX);

	ep_host h = { .name = name->s, .paths = arena_alloc(&p->arena, (paths->n ? paths->n : 1) * sizeof(char *)) };
	for (const ep_val *v = paths->items; v; v = v->next) {
		const char *raw = v->s, *home = "";
		if (v->is_list)
			return fail(p, v->line, "invalid rule: host_executable paths must be strings (got list)");
		if (raw[0] == '~' && raw[1] == '/') {
			home = getenv("HOME");
			if (!home || home[0] != '/')
				return fail(p, v->line, "invalid rule: host_executable path `%.200s` needs HOME "
				            "to be an absolute path", raw);
			raw++;
		} else if (raw[0] != '/') {
			return fail(p, v->line, "invalid rule: host_executable paths must be absolute or use "
			            "`~/...` home-relative syntax (got %.200s)", raw);
		}
		size_t hl = strlen(home), rl = strlen(raw);
		char *full = arena_alloc(&p->arena, hl + rl + 1);
		memcpy(full, home, hl);
		memcpy(full + hl, raw, rl + 1);
		tgi_path_fold(full, full, 1);
		const char *base = path_basename(full);
		if (!base || strcmp(base, name->s))
			return fail(p, v->line, "invalid rule: host_executable path `%.200s` must have basename `%.200s`",
			            v->s, name->s);
		size_t k = 0;
		while (k < h.npaths && strcmp(h.paths[k], full))
			k++;
		if (k == h.npaths)
			h.paths[h.npaths++] = full;
	}
	set_put_host(&p->stage, &h);
	return 0;
}

/* ---- self-tests ---- */

static void first_hit(void *ctx, const ep_hit *hit)
{
	const char **program = ctx;
	if (!*program)
		*program = hit->program;
}

/* Codex checks examples with --resolve-host-executables on. */
static const tgi_ep_resolve codex_host = { TGI_EP_HOST, NULL, NULL };

/* Every rule of the file against its own examples, as Codex checks them. */
static int check_examples(ep_parse *p)
{
	tgi_buf b;
	for (size_t i = 0; i < p->stage.nrules; i++) {
		const ep_rule *r = &p->stage.rules[i];
		for (size_t e = 0; e < r->nnot_match; e++) {
			const ep_example *ex = &r->not_match[e];
			const char *program = NULL;
			if (!match_argv(r, 1, p->ep, &p->stage, &codex_host, ex->argv, ex->argc, first_hit, &program))
				continue;
			tgi_buf_init(&b, EP_MSG_MAX);
			render_rule(&b, r, program);
			puts_(&b, "`: ");
			shlex_join(&b, ex->argv[0], ex->argv + 1, ex->argc - 1);
			fail(p, r->line, "expected example to not match rule `%s", text(&b));
			tgi_buf_free(&b);
			return -1;
		}
		size_t unmatched = 0;
		tgi_buf_init(&b, EP_MSG_MAX);
		for (size_t e = 0; e < r->nmatch; e++) {
			const ep_example *ex = &r->match[e];
			if (match_argv(r, 1, p->ep, &p->stage, &codex_host, ex->argv, ex->argc, NULL, NULL))
				continue;
			tgi_buf j;
			tgi_buf_init(&j, EP_MSG_MAX);
			shlex_join(&j, ex->argv[0], ex->argv + 1, ex->argc - 1);
			puts_(&b, unmatched++ ? ", " : "");
			debug_quote(&b, text(&j));
			tgi_buf_free(&j);
		}
		if (unmatched) {
			tgi_buf rules;
			tgi_buf_init(&rules, EP_MSG_MAX);
			for (size_t h = 0; h < r->head.n; h++) {
				tgi_buf one;
				tgi_buf_init(&one, EP_MSG_MAX);
				render_rule(&one, r, r->head.v[h]);
				puts_(&rules, h ? ", " : "");
				debug_quote(&rules, text(&one));
				tgi_buf_free(&one);
			}
			fail(p, r->line, "expected every example to match at least one rule. "
			     "rules: [%s]; unmatched examples: [%s]", text(&rules), text(&b));
			tgi_buf_free(&rules);
			tgi_buf_free(&b);
			return -1;
		}
		tgi_buf_free(&b);
	}
	return 0;
}

/* ---- the public face ---- */

const char *tgi_ep_decision_name(tgi_ep_decision d)
{
	switch (d) {
	case TGI_EP_ALLOW:     return "allow";
	case TGI_EP_PROMPT:    return "prompt";
	case TGI_EP_FORBIDDEN: return "forbidden";
	case TGI_EP_NONE:      break;
	}
	return "none";
}

tgi_execpolicy *tgi_execpolicy_new(void)
{
	return tgi_xcalloc(1, sizeof(tgi_execpolicy));
}

void tgi_execpolicy_free(tgi_execpolicy *ep)
{
	if (!ep)
		return;
	free(ep->set.rules);
	free(ep->set.hosts);
	arena_free(ep->blocks);
	free(ep);
}

/* Keep what a file staged: its rules after the policy's, its host entries
 * over the policy's, its arena with the policy's. */
static void commit(tgi_execpolicy *ep, ep_parse *p)
{
	ep_set *s = &ep->set, *st = &p->stage;
	if (s->nrules + st->nrules > s->caprules) {
		s->caprules = s->nrules + st->nrules + s->caprules;
		s->rules = tgi_xrealloc(s->rules, s->caprules * sizeof *s->rules);
	}
	if (st->nrules)
		memcpy(s->rules + s->nrules, st->rules, st->nrules * sizeof *st->rules);
	s->nrules += st->nrules;
	s->nheads += st->nheads;
	for (size_t i = 0; i < st->nhosts; i++)
		set_put_host(s, &st->hosts[i]);
	ep_block **tail = &p->arena;
	while (*tail)
		tail = &(*tail)->next;
	*tail = ep->blocks;
	ep->blocks = p->arena;
	p->arena = NULL;
	ep->nexamples += p->nexamples;
}

int tgi_execpolicy_add_text(tgi_execpolicy *ep, const char *name, const char *text, size_t len,
                            char *err, size_t errlen)
{
	ep_parse p = { .ep = ep, .text = text ? text : "", .len = text ? len : 0, .line = 1,
	               .err = err, .errlen = err ? errlen : 0 };
	int rc = -1;

	p.name = arena_strndup(&p.arena, name ? name : "<rules>", strlen(name ? name : "<rules>"));
	if (len > EP_FILE_MAX) {
		fail(&p, 0, "the file is larger than 4 MiB");
		goto out;
	}
	size_t bad = utf8_bad((const unsigned char *)p.text, p.len);
	if (bad < p.len) {
		unsigned line = 1;
		for (size_t i = 0; i < bad; i++)
			line += p.text[i] == '\n';
		fail(&p, line, p.text[bad] ? "the file is not valid UTF-8" : "the file holds a NUL byte");
		goto out;
	}
	if (parse_file(&p) < 0 || check_examples(&p) < 0)
		goto out;
	commit(ep, &p);
	rc = 0;
out:
	free(p.stage.rules);
	free(p.stage.hosts);
	arena_free(p.arena);
	return rc;
}

static int file_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A sentence about the file itself (the path may hold anything).  -1. */
static int file_fail(char *err, size_t errlen, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (err && errlen)
		tgi_sanitize(err, errlen, msg);
	return -1;
}

int tgi_execpolicy_add_file(tgi_execpolicy *ep, const char *path, char *err, size_t errlen)
{
	struct stat st;
	tgi_buf b;
	char chunk[65536];
	int rc = -1, fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return file_fail(err, errlen, "%.1000s: cannot open the rules file: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return file_fail(err, errlen, "%.1000s: not a regular file", path);
	}
	tgi_buf_init(&b, EP_FILE_MAX);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			file_fail(err, errlen, "%.1000s: cannot read the rules file: %s", path, strerror(errno));
			break;
		}
		if (n == 0) {
			rc = tgi_execpolicy_add_text(ep, path, text(&b), b.len, err, errlen);
			break;
		}
		if (tgi_buf_append(&b, chunk, (size_t)n) < 0) {
			file_fail(err, errlen, "%.1000s: the file is larger than 4 MiB", path);
			break;
		}
	}
	close(fd);
	tgi_buf_free(&b);
	return rc;
}

size_t tgi_execpolicy_nrules(const tgi_execpolicy *ep)
{
	return ep ? ep->set.nrules : 0;
}

size_t tgi_execpolicy_nexamples(const tgi_execpolicy *ep)
{
	return ep ? ep->nexamples : 0;
}

typedef struct eval_ctx {
	const char *const *argv;
	json_t            *matched;
	tgi_ep_decision    best;
	char              *rule;
	size_t             rulecap;
} eval_ctx;

static json_t *hit_json(const ep_hit *h, const char *const *argv)
{
	json_t *prefix = json_array(), *m = json_object();
	json_array_append_new(prefix, tgi_json_text(h->program, strlen(h->program)));
	for (size_t i = 1; i < h->plen; i++)
		json_array_append_new(prefix, tgi_json_text(argv[i], strlen(argv[i])));
	json_object_set_new(m, "matchedPrefix", prefix); /* Codex's field order */
	json_object_set_new(m, "decision", json_string(tgi_ep_decision_name(h->rule->decision)));
	if (h->resolved)
		json_object_set_new(m, "resolvedProgram", tgi_json_text(h->resolved, strlen(h->resolved)));
	if (h->rule->justification)
		json_object_set_new(m, "justification", json_string(h->rule->justification));
	json_t *w = json_object();
	json_object_set_new(w, "prefixRuleMatch", m);
	return w;
}

static void on_hit(void *arg, const ep_hit *h)
{
	eval_ctx *c = arg;
	if (c->matched)
		json_array_append_new(c->matched, hit_json(h, c->argv));
	if (h->rule->decision <= c->best)
		return;
	c->best = h->rule->decision;
	if (c->rule && c->rulecap) {
		tgi_buf b;
		tgi_buf_init(&b, EP_MSG_MAX);
		tgi_buf_printf(&b, "execpolicy %s: ", tgi_ep_decision_name(c->best));
		shlex_join(&b, h->program, c->argv + 1, h->plen - 1);
		tgi_buf_printf(&b, " (%s:%u)", h->rule->file, h->rule->line);
		tgi_sanitize(c->rule, c->rulecap, text(&b));
		tgi_buf_free(&b);
	}
}

tgi_ep_decision tgi_execpolicy_eval(const tgi_execpolicy *ep, const tgi_ep_resolve *res,
                                    const char *const *argv, size_t argc, json_t *matched,
                                    char *rule, size_t rulecap)
{
	eval_ctx c = { argv, matched, TGI_EP_NONE, rule, rule ? rulecap : 0 };
	if (c.rulecap)
		rule[0] = '\0';
	if (ep && argv)
		match_argv(ep->set.rules, ep->set.nrules, ep, NULL, res, argv, argc, on_hit, &c);
	return c.best;
}

json_t *tgi_execpolicy_check(const tgi_execpolicy *ep, const tgi_ep_resolve *res,
                             const char *const *const *argvs, const size_t *argcs, size_t n)
{
	json_t *rules = json_array();
	tgi_ep_decision best = TGI_EP_NONE;
	for (size_t i = 0; i < n; i++) {
		tgi_ep_decision d = tgi_execpolicy_eval(ep, res, argvs[i], argcs[i], rules, NULL, 0);
		if (d > best)
			best = d;
	}
	json_t *out = json_object();
	json_object_set_new(out, "matchedRules", rules);
	if (best != TGI_EP_NONE)
		json_object_set_new(out, "decision", json_string(tgi_ep_decision_name(best)));
	return out;
}
