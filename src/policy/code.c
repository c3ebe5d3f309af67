/*
 * code.c — what inline interpreter code does, as far as its text says
 * (code.h).
 *
 * Each language has a small lexer that knows its strings (escapes,
 * prefixes, quote-like operators, interpolation), comments and regex
 * literals well enough not to read code inside them or miss code outside
 * them.  Tokens are identifiers, strings (decoded; interpolations kept as
 * markers), numbers, punctuation, command strings (backticks, qx, %x) and
 * line ends.
 *
 * Then:
 *   1. literal assignments (`d = '/'`, `my $d = "/"`, `const d = '/'`) give
 *      the code's variables their possible values;
 *   2. every call of a primitive in the tables below has its arguments
 *      evaluated (code.h says how far) and becomes an effect, a floor, or
 *      blindness;
 *   3. the raw text is checked for what the lexer may have missed: a
 *      call-like use of a dangerous name that is not a call the tokens
 *      show (hidden in a string, a comment, a misread construct), a
 *      string naming a dangerous function (reflection), /proc/sysrq-trigger
 *      anywhere, bytes no code holds.  Any of them makes the scan blind,
 *      or floors it.
 *
 * Owns: the lexers and the tables.  Must not: judge paths or commands.
 */
#include "policy/code.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS_MAX (1u << 18)  /* tokens of one piece of code */
#define ALTS_MAX   16          /* values one expression may take */
#define STR_MAX    8192        /* bytes of one value */
#define SCAN_DEPTH 4           /* code inside code (exec of a literal) */
#define CODE_MAX   (128u << 10) /* bytes of code read; past it the scan is blind */

#define WHY_FORK   "a fork loop in interpreter code"
#define WHY_DLEXEC "downloaded code run by an interpreter"
#define WHY_REBOOT "rebooting or shutting down the machine from interpreter code"
#define WHY_SYSRQ  "writing /proc/sysrq-trigger"
#define WHY_INIT   "signalling init or every process"

#define BLIND_ARG    "interpreter code that builds a command or a path at run time"
#define BLIND_EVAL   "interpreter code that runs code it builds at run time"
#define BLIND_HIDDEN "interpreter code the floor cannot read (a dangerous name hidden from it)"
#define BLIND_REFL   "interpreter code that names a dangerous function in a string"
#define BLIND_BIG    "interpreter code too long for the floor to read"

/* ------------------------------------------------------------------ languages */

tgi_lang tgi_code_lang(const char *prog)
{
	if (!strncmp(prog, "python", 6) || !strncmp(prog, "pypy", 4))
		return TGI_LANG_PYTHON;
	if (!strcmp(prog, "perl") || !strncmp(prog, "perl5", 5))
		return TGI_LANG_PERL;
	if (!strcmp(prog, "ruby") || !strncmp(prog, "ruby3", 5) || !strcmp(prog, "jruby"))
		return TGI_LANG_RUBY;
	if (!strcmp(prog, "node") || !strcmp(prog, "nodejs") || !strcmp(prog, "bun") ||
	    !strcmp(prog, "deno"))
		return TGI_LANG_JS;
	if (!strcmp(prog, "php") || !strncmp(prog, "php8", 4) || !strncmp(prog, "php7", 4))
		return TGI_LANG_PHP;
	if (!strcmp(prog, "awk") || !strcmp(prog, "gawk") || !strcmp(prog, "mawk") ||
	    !strcmp(prog, "nawk") || !strcmp(prog, "busybox-awk"))
		return TGI_LANG_AWK;
	if (!strcmp(prog, "lua") || !strncmp(prog, "lua5", 4) || !strcmp(prog, "luajit"))
		return TGI_LANG_LUA;
	return TGI_LANG_NONE;
}

/* How a language takes inline code: the short options whose value is code,
 * the long ones, the short options taking another value. */
static const struct lang_opts {
	tgi_lang    lang;
	const char *code;
	const char *const *lcode;
	const char *vals;
	const char *const *lvals;
} lang_opts[] = {
	{ TGI_LANG_PYTHON, "c", NULL, "WXQm", NULL },
	{ TGI_LANG_PERL, "eE", NULL, "IMmdDxlC0i", NULL },
	{ TGI_LANG_RUBY, "e", NULL, "ICrxEFK", NULL },
	{ TGI_LANG_JS, "ep", (const char *const[]){ "--eval", "--print", NULL }, "r",
	  (const char *const[]){ "--require", "--import", "--loader", "--experimental-loader",
	                         "--input-type", "--env-file", NULL } },
	{ TGI_LANG_PHP, "rBRE", NULL, "cdzt", NULL },
	{ TGI_LANG_AWK, "e", (const char *const[]){ "--source", NULL }, "fvF", (const char *const[]){ "--file", "--assign", "--field-separator", NULL } },
	{ TGI_LANG_LUA, "e", NULL, "l", NULL },
};

static int long_in(const char *w, const char *const *list, size_t *eq)
{
	for (size_t k = 0; list && list[k]; k++) {
		size_t n = strlen(list[k]);
		if (!strncmp(w, list[k], n) && (w[n] == '\0' || w[n] == '=')) {
			*eq = w[n] == '=' ? n + 1 : 0;
			return 1;
		}
	}
	return 0;
}

tgi_lang tgi_code_of(const tgi_cmd *cmd, size_t prog, tgi_strv *codes, int *from_stdin)
{
	const char *name = tgi_shell_basename(cmd->argv[prog]);
	tgi_lang lang = tgi_code_lang(name);
	const struct lang_opts *o = NULL;
	tgi_buf joined;
	int inline_code = 0, script = 0;
	size_t i = prog + 1;

	*from_stdin = 0;
	for (size_t k = 0; k < TGI_ARRAY_LEN(lang_opts); k++)
		if (lang_opts[k].lang == lang)
			o = &lang_opts[k];
	if (!o)
		return TGI_LANG_NONE;
	tgi_buf_init(&joined, TGI_SHELL_MAX);
	/* deno eval CODE, bun -e CODE, bun run FILE */
	if (!strcmp(name, "deno") && i < cmd->argc && !strcmp(cmd->argv[i], "eval")) {
		i++;
		while (i < cmd->argc && cmd->argv[i][0] == '-')
			i++;
		if (i < cmd->argc)
			tgi_strv_push(codes, tgi_strdup(cmd->argv[i]));
		tgi_buf_free(&joined);
		return lang;
	}
	for (; i < cmd->argc; i++) {
		const char *a = cmd->argv[i];
		size_t eq = 0;
		if (!strcmp(a, "-")) {
			*from_stdin = !inline_code;
			script = 1;
			break;
		}
		if (!strcmp(a, "--")) {
			script = i + 1 < cmd->argc;
			*from_stdin = !script && !inline_code;
			if (lang == TGI_LANG_AWK && i + 1 < cmd->argc && !inline_code)
				tgi_strv_push(codes, tgi_strdup(cmd->argv[i + 1]));
			break;
		}
		if (a[0] == '-' && a[1] == '-') {
			if (long_in(a, o->lcode, &eq)) {
				const char *c = eq ? a + eq : i + 1 < cmd->argc ? cmd->argv[++i] : NULL;
				if (c)
					tgi_strv_push(codes, tgi_strdup(c));
				inline_code = 1;
			} else if (long_in(a, o->lvals, &eq) && !eq) {
				i++;
			}
			continue;
		}
		if (a[0] == '-' && a[1]) {
			for (const char *q = a + 1; *q; q++) {
				if (strchr(o->code, *q)) {
					/* node -pe CODE: flags of code, then the code */
					int attached = q[1] && !(strchr(o->code, q[1]) && !q[2]);
					const char *c = attached ? q + 1 : i + 1 < cmd->argc ? cmd->argv[++i] : NULL;
					if (c) {
						/* perl -e A -e B: the lines of one program */
						if (lang == TGI_LANG_PERL || lang == TGI_LANG_RUBY) {
							if (joined.len)
								tgi_buf_puts(&joined, "\n");
							tgi_buf_puts(&joined, c);
						} else {
							tgi_strv_push(codes, tgi_strdup(c));
						}
					}
					inline_code = 1;
					break;
				}
				if (strchr(o->vals, *q)) {
					if (lang == TGI_LANG_AWK && *q == 'f')
						script = 1; /* awk -f FILE: the program is a file */
					i += !q[1];
					break;
				}
			}
			continue;
		}
		/* an operand: awk's program, or a script file */
		if (lang == TGI_LANG_AWK && !inline_code && !script) {
			tgi_strv_push(codes, tgi_strdup(a));
			inline_code = 1;
		} else {
			script = 1;
		}
		break;
	}
	if (joined.len)
		tgi_strv_push(codes, tgi_buf_steal(&joined));
	tgi_buf_free(&joined);
	if (!inline_code && !script && lang != TGI_LANG_AWK)
		*from_stdin = 1;
	return lang;
}

/* ------------------------------------------------------------------ tokens */

enum { T_END, T_ID, T_STR, T_NUM, T_P, T_CMD, T_NL };

#define MARK_OPEN  '\x01'   /* an interpolation in a string: \x01NAME\x02 */
#define MARK_CLOSE '\x02'

typedef struct tok {
	int    k;
	char  *s;      /* owned: name, decoded text, digits, punctuation */
	int    interp; /* the text holds interpolation markers */
	size_t at;
} tok;

typedef struct lexer {
	tgi_lang    lang;
	const char *s;
	size_t      n, i;
	tok        *t;
	size_t      nt, cap;
	int         broken;  /* the rest could not be read */
} lexer;

static void push(lexer *x, int k, char *s, int interp, size_t at)
{
	if (x->nt >= TOKENS_MAX) {
		free(s);
		x->broken = 1;
		return;
	}
	if (x->nt == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 64;
		x->t = tgi_xrealloc(x->t, x->cap * sizeof *x->t);
	}
	x->t[x->nt++] = (tok){ k, s, interp, at };
}

static int is_id_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_id(char c)
{
	return is_id_start(c) || (c >= '0' && c <= '9');
}

/* One backslash escape at s (after the backslash) into b: the bytes read. */
static size_t unescape(const char *s, size_t n, tgi_buf *b)
{
	char c = n ? s[0] : '\\', out;
	if (!n) {
		tgi_buf_append(b, "\\", 1);
		return 0;
	}
	switch (c) {
	case 'n': out = '\n'; break;
	case 't': out = '\t'; break;
	case 'r': out = '\r'; break;
	case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
		unsigned v = 0;
		size_t k = 0;
		for (; k < 3 && k < n && s[k] >= '0' && s[k] <= '7'; k++)
			v = v * 8 + (unsigned)(s[k] - '0');
		out = (char)v;
		if (out)
			tgi_buf_append(b, &out, 1);
		return k;
	}
	case 'x': {
		unsigned v = 0;
		size_t k = 1;
		if (k < n && s[k] == '{')
			k++;
		size_t st = k;
		for (; k < n && k < st + 2 && strchr("0123456789abcdefABCDEF", s[k]) && s[k]; k++)
			v = v * 16 + (unsigned)(s[k] <= '9' ? s[k] - '0' : (s[k] | 32) - 'a' + 10);
		if (k < n && s[k] == '}' && st == 2)
			k++;
		out = (char)v;
		if (out)
			tgi_buf_append(b, &out, 1);
		return k;
	}
	case 'u': {
		unsigned v = 0;
		size_t k = 1;
		for (; k < n && k < 5 && strchr("0123456789abcdefABCDEF", s[k]) && s[k]; k++)
			v = v * 16 + (unsigned)(s[k] <= '9' ? s[k] - '0' : (s[k] | 32) - 'a' + 10);
		if (v < 0x80 && v) {
			out = (char)v;
			tgi_buf_append(b, &out, 1);
		}
		return k;
	}
	default:
		out = c;
	}
	tgi_buf_append(b, &out, 1);
	return 1;
}

/* An interpolated name into the string being read: \x01NAME\x02 (empty
 * NAME: an expression the scan does not evaluate). */
static void put_interp(tgi_buf *b, const char *name, size_t n)
{
	char m = MARK_OPEN;
	tgi_buf_append(b, &m, 1);
	tgi_buf_append(b, name, n);
	m = MARK_CLOSE;
	tgi_buf_append(b, &m, 1);
}

/*
 * A quoted string from x->i (just past the opening quote) to the closer.
 * esc: backslash escapes count; interp: which interpolation the language
 * does inside ('$' perl/php, '#' ruby, '{' python f-strings, 'j' js
 * templates, 0 none); open/close differ for bracketing quote-likes.
 */
static char *read_string(lexer *x, char open, char close, int esc, int interp, int *has)
{
	tgi_buf b;
	int level = 0;

	tgi_buf_init(&b, STR_MAX * 8);
	*has = 0;
	while (x->i < x->n) {
		char c = x->s[x->i];
		if (c == '\\' && esc) {
			if (esc == 2) { /* single-quoted: only \\ and the quote */
				if (x->i + 1 < x->n && (x->s[x->i + 1] == '\\' || x->s[x->i + 1] == close)) {
					tgi_buf_append(&b, &x->s[x->i + 1], 1);
					x->i += 2;
				} else {
					tgi_buf_append(&b, "\\", 1);
					x->i++;
				}
				continue;
			}
			x->i++;
			x->i += unescape(x->s + x->i, x->n - x->i, &b);
			continue;
		}
		if (open != close && c == open) {
			level++;
		} else if (c == close) {
			if (level == 0) {
				x->i++;
				if (b.over) /* longer than the scan reads: what it holds is not seen */
					x->broken = 1;
				return tgi_buf_steal(&b);
			}
			level--;
		}
		if (interp && (c == '$' || c == '@') && (interp == '$') && x->i + 1 < x->n &&
		    (is_id_start(x->s[x->i + 1]) || x->s[x->i + 1] == '{')) {
			size_t st = x->i + 1 + (x->s[x->i + 1] == '{'), e = st;
			while (e < x->n && is_id(x->s[e]))
				e++;
			/* $name, ${name}, @name; $x->…, $x[…] evaluate to nothing known */
			int simple = e < x->n ? !strchr("[{-", x->s[e]) || (x->s[e] == '-' && e + 1 < x->n && x->s[e + 1] != '>') : 1;
			char nm[80];
			snprintf(nm, sizeof nm, "%c%.*s", c, (int)(e - st < 70 ? e - st : 70), x->s + st);
			put_interp(&b, simple ? nm : "", simple ? strlen(nm) : 0);
			*has = 1;
			x->i = e + (x->s[x->i + 1] == '{' && e < x->n && x->s[e] == '}');
			continue;
		}
		if (interp == '$' && c == '{' && x->i + 1 < x->n && x->s[x->i + 1] == '$') {
			/* php {$name} */
			size_t e = x->i + 2;
			while (e < x->n && is_id(x->s[e]))
				e++;
			char nm[80];
			snprintf(nm, sizeof nm, "$%.*s", (int)(e - x->i - 2 < 70 ? e - x->i - 2 : 70), x->s + x->i + 2);
			int simple = e < x->n && x->s[e] == '}';
			put_interp(&b, simple ? nm : "", simple ? strlen(nm) : 0);
			*has = 1;
			while (e < x->n && x->s[e] != '}')
				e++;
			x->i = e + 1;
			continue;
		}
		if ((interp == '#' && c == '#' && x->i + 1 < x->n && x->s[x->i + 1] == '{') ||
		    (interp == 'j' && c == '$' && x->i + 1 < x->n && x->s[x->i + 1] == '{') ||
		    (interp == '{' && c == '{')) {
			size_t st = x->i + (interp == '{' ? 1 : 2), e = st;
			if (interp == '{' && st < x->n && x->s[st] == '{') { /* {{ is a brace */
				tgi_buf_append(&b, "{", 1);
				x->i += 2;
				continue;
			}
			int depth = 1;
			for (; e < x->n && depth; e++)
				if (x->s[e] == '{')
					depth++;
				else if (x->s[e] == '}')
					depth--;
			size_t inner = e - 1 - st;
			size_t k = 0;
			while (k < inner && is_id(x->s[st + k]))
				k++;
			int simple = k == inner && k > 0 && is_id_start(x->s[st]);
			put_interp(&b, x->s + st, simple ? k : 0);
			*has = 1;
			x->i = e;
			continue;
		}
		if (interp == '{' && c == '}' && x->i + 1 < x->n && x->s[x->i + 1] == '}') {
			tgi_buf_append(&b, "}", 1);
			x->i += 2;
			continue;
		}
		tgi_buf_append(&b, &c, 1);
		x->i++;
	}
	tgi_buf_free(&b);
	x->broken = 1;
	return NULL;
}

static char closer_of(char c)
{
	return c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : c == '<' ? '>' : c;
}

/* Was the token before a value (so that '/' divides rather than opens a
 * regex)? */
static int after_value(const lexer *x)
{
	static const char *const kw[] = { "return", "split", "grep", "if", "unless", "and", "or",
		                           "not", "when", "while", "until", "map", "join", "typeof",
		                           "in", "of", "case", "print", NULL };
	if (!x->nt)
		return 0;
	const tok *t = &x->t[x->nt - 1];
	if (t->k == T_NUM || t->k == T_STR || t->k == T_CMD)
		return 1;
	if (t->k == T_ID) {
		for (size_t i = 0; kw[i]; i++)
			if (!strcmp(t->s, kw[i]))
				return 0;
		return 1;
	}
	return t->k == T_P && (t->s[0] == ')' || t->s[0] == ']' || t->s[0] == '}');
}

static void skip_regex(lexer *x, char close)
{
	int cls = 0;
	while (x->i < x->n) {
		char c = x->s[x->i++];
		if (c == '\\') {
			x->i++;
			continue;
		}
		if (c == '[')
			cls = 1;
		else if (c == ']')
			cls = 0;
		else if (c == close && !cls)
			break;
		else if (c == '\n' && close == '/')
			break;
	}
	while (x->i < x->n && is_id(x->s[x->i]))
		x->i++; /* flags */
}

/* Perl's and Ruby's quote-like operators at an identifier (q qq qw qx m s
 * tr y qr; %q %Q %w %x %r %i): 1 when one was read. */
static int quote_like(lexer *x, const char *id, size_t at)
{
	size_t j = x->i;
	while (j < x->n && (x->s[j] == ' ' || x->s[j] == '\t') && x->lang == TGI_LANG_PERL)
		j++;
	if (j >= x->n)
		return 0;
	char open = x->s[j];
	if (is_id(open) || open == ' ' || open == '\t' || open == '\n' || open == ',' || open == ';' ||
	    open == ')' || (open == '=' && (j + 1 >= x->n || x->s[j + 1] == '>' || x->s[j + 1] == '=' || x->s[j + 1] == ' ')))
		return 0;
	char close = closer_of(open);
	int has = 0;
	x->i = j + 1;
	if (!strcmp(id, "m") || !strcmp(id, "qr") || !strcmp(id, "r")) {
		skip_regex(x, close);
		return 1;
	}
	if (!strcmp(id, "s") || !strcmp(id, "tr") || !strcmp(id, "y")) {
		skip_regex(x, close);
		if (open != close) { /* s{a}{b}: the second part has its own brackets */
			while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\n'))
				x->i++;
			if (x->i < x->n) {
				char o2 = x->s[x->i++];
				skip_regex(x, closer_of(o2));
			}
		} else {
			skip_regex(x, close);
		}
		return 1;
	}
	int interp = (!strcmp(id, "qq") || !strcmp(id, "qx") || !strcmp(id, "Q") || !strcmp(id, "x") ||
	              !strcmp(id, "W") || !strcmp(id, "I")) ? (x->lang == TGI_LANG_PERL ? '$' : '#') : 0;
	char *s = read_string(x, open, close, open == '\'' ? 2 : 1, interp, &has);
	if (!s)
		return 1;
	if (!strcmp(id, "qw") || !strcmp(id, "w") || !strcmp(id, "W") || !strcmp(id, "i") ||
	    !strcmp(id, "I")) {
		/* a list of words: ( 'a', 'b' ) as tokens */
		push(x, T_P, tgi_strdup("("), 0, at);
		for (char *w = s; *w;) {
			w += strspn(w, " \t\n");
			size_t n = strcspn(w, " \t\n");
			if (n) {
				push(x, T_STR, tgi_strndup(w, n), 0, at);
				push(x, T_P, tgi_strdup(","), 0, at);
			}
			w += n;
		}
		push(x, T_P, tgi_strdup(")"), 0, at);
		free(s);
		return 1;
	}
	push(x, (!strcmp(id, "qx") || !strcmp(id, "x")) ? T_CMD : T_STR, s, has, at);
	return 1;
}

static void lex(lexer *x)
{
	const char *s = x->s;
	size_t n = x->n;

	/* PHP code may open with a tag */
	if (x->lang == TGI_LANG_PHP && n >= 5 && !strncmp(s, "<?php", 5))
		x->i = 5;
	while (x->i < n && !x->broken) {
		char c = s[x->i], c1 = x->i + 1 < n ? s[x->i + 1] : '\0';
		size_t at = x->i;
		int has = 0;
		if (c == MARK_OPEN || c == MARK_CLOSE || c == '\0') {
			x->broken = 1;
			break;
		}
		if (c == '\n') {
			push(x, T_NL, tgi_strdup("\n"), 0, at); /* every token has its text */
			x->i++;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			x->i++;
			continue;
		}
		/* comments */
		if ((c == '#' && x->lang != TGI_LANG_JS && x->lang != TGI_LANG_LUA &&
		     !(x->lang == TGI_LANG_PERL && x->nt && x->t[x->nt - 1].k == T_P && x->t[x->nt - 1].s[0] == '$')) ||
		    (c == '/' && c1 == '/' && (x->lang == TGI_LANG_JS || x->lang == TGI_LANG_PHP)) ||
		    (c == '-' && c1 == '-' && x->lang == TGI_LANG_LUA)) {
			if (x->lang == TGI_LANG_LUA && x->i + 3 < n && s[x->i + 2] == '[' && s[x->i + 3] == '[') {
				const char *e = strstr(s + x->i + 4, "]]");
				x->i = e ? (size_t)(e - s) + 2 : n;
				if (!e)
					x->broken = 1;
				continue;
			}
			while (x->i < n && s[x->i] != '\n')
				x->i++;
			continue;
		}
		if (c == '/' && c1 == '*' && (x->lang == TGI_LANG_JS || x->lang == TGI_LANG_PHP)) {
			const char *e = strstr(s + x->i + 2, "*/");
			if (!e) {
				x->broken = 1;
				break;
			}
			x->i = (size_t)(e - s) + 2;
			continue;
		}
		if (x->lang == TGI_LANG_RUBY && c == '=' && (at == 0 || s[at - 1] == '\n') &&
		    !strncmp(s + at, "=begin", 6)) {
			const char *e = strstr(s + at, "\n=end");
			if (!e) {
				x->broken = 1;
				break;
			}
			x->i = (size_t)(e - s) + 5;
			continue;
		}
		/* strings */
		if (c == '\'' || c == '"' || c == '`') {
			int py = x->lang == TGI_LANG_PYTHON;
			if (py && x->i + 2 < n && s[x->i + 1] == c && s[x->i + 2] == c) {
				/* a triple-quoted string */
				char tq[4] = { c, c, c, 0 };
				const char *e = strstr(s + x->i + 3, tq);
				if (!e) {
					x->broken = 1;
					break;
				}
				lexer sub = *x;
				sub.n = (size_t)(e - s);
				sub.i = x->i + 3;
				tgi_buf b;
				tgi_buf_init(&b, STR_MAX * 8);
				while (sub.i < sub.n) {
					if (s[sub.i] == '\\') {
						sub.i++;
						sub.i += unescape(s + sub.i, sub.n - sub.i, &b);
					} else {
						tgi_buf_append(&b, &s[sub.i++], 1);
					}
				}
				if (b.over)
					x->broken = 1;
				push(x, T_STR, tgi_buf_steal(&b), 0, at);
				x->i = (size_t)(e - s) + 3;
				continue;
			}
			int interp = 0, esc = 1, kind = T_STR;
			if (c == '`') {
				if (x->lang == TGI_LANG_JS) {
					interp = 'j';
				} else if (x->lang == TGI_LANG_PYTHON || x->lang == TGI_LANG_LUA ||
				           x->lang == TGI_LANG_AWK) {
					push(x, T_P, tgi_strdup("`"), 0, at);
					x->i++;
					continue;
				} else {
					kind = T_CMD;
					interp = x->lang == TGI_LANG_RUBY ? '#' : '$';
				}
			} else if (c == '"') {
				interp = x->lang == TGI_LANG_PERL || x->lang == TGI_LANG_PHP ? '$'
				       : x->lang == TGI_LANG_RUBY                            ? '#' : 0;
			} else if (x->lang != TGI_LANG_PYTHON && x->lang != TGI_LANG_JS &&
			           x->lang != TGI_LANG_LUA) {
				esc = 2;
			}
			/* python prefixes: r (raw), f (interpolated), b, u */
			if (x->lang == TGI_LANG_PYTHON && x->nt && x->t[x->nt - 1].k == T_ID &&
			    x->t[x->nt - 1].at + strlen(x->t[x->nt - 1].s) == at &&
			    strlen(x->t[x->nt - 1].s) <= 2 &&
			    strspn(x->t[x->nt - 1].s, "rRbBuUfF") == strlen(x->t[x->nt - 1].s)) {
				const char *pre = x->t[x->nt - 1].s;
				if (strpbrk(pre, "rR"))
					esc = 0;
				if (strpbrk(pre, "fF"))
					interp = '{';
				free(x->t[--x->nt].s);
			}
			x->i++;
			char *str = read_string(x, c, c, esc, interp, &has);
			if (!str)
				break;
			push(x, kind, str, has, at);
			continue;
		}
		if (x->lang == TGI_LANG_LUA && c == '[' && (c1 == '[' || c1 == '=')) {
			size_t eq = 0;
			while (x->i + 1 + eq < n && s[x->i + 1 + eq] == '=')
				eq++;
			if (x->i + 1 + eq < n && s[x->i + 1 + eq] == '[') {
				char close[16] = "]";
				for (size_t k = 0; k < eq && k < 12; k++)
					strcat(close, "=");
				strcat(close, "]");
				const char *e = strstr(s + x->i + 2 + eq, close);
				if (!e) {
					x->broken = 1;
					break;
				}
				push(x, T_STR, tgi_strndup(s + x->i + 2 + eq, (size_t)(e - s) - x->i - 2 - eq), 0, at);
				x->i = (size_t)(e - s) + strlen(close);
				continue;
			}
		}
		/* ruby %q(...), %w(...), %x(...) */
		if (x->lang == TGI_LANG_RUBY && c == '%' && c1 && strchr("qQwWxrisI", c1) && x->i + 2 < n &&
		    !is_id(s[x->i + 2]) && s[x->i + 2] != ' ' && !after_value(x)) {
			char id[2] = { c1, 0 };
			x->i += 2;
			x->i--; /* quote_like reads the delimiter at x->i */
			quote_like(x, id, at);
			continue;
		}
		if (x->lang == TGI_LANG_RUBY && c == '%' && (c1 == '(' || c1 == '{' || c1 == '[') &&
		    !after_value(x)) {
			x->i++;
			quote_like(x, "Q", at);
			continue;
		}
		/* regex literals */
		if (c == '/' && x->lang != TGI_LANG_PYTHON && x->lang != TGI_LANG_LUA && !after_value(x)) {
			x->i++;
			skip_regex(x, '/');
			push(x, T_STR, tgi_strdup(""), 0, at); /* a value */
			continue;
		}
		/* identifiers, with perl/php sigils */
		if (is_id_start(c) || ((c == '$' || c == '@' || c == '%') && is_id_start(c1) &&
		                        (x->lang == TGI_LANG_PERL || x->lang == TGI_LANG_PHP ||
		                         (x->lang == TGI_LANG_RUBY && c != '%')))) {
			size_t st = x->i;
			if (!is_id_start(c))
				x->i++;
			while (x->i < n && is_id(s[x->i]))
				x->i++;
			char *id = tgi_strndup(s + st, x->i - st);
			if ((x->lang == TGI_LANG_PERL) &&
			    (!strcmp(id, "q") || !strcmp(id, "qq") || !strcmp(id, "qw") || !strcmp(id, "qx") ||
			     !strcmp(id, "m") || !strcmp(id, "s") || !strcmp(id, "tr") || !strcmp(id, "y") ||
			     !strcmp(id, "qr")) &&
			    !(x->nt && x->t[x->nt - 1].k == T_P && (x->t[x->nt - 1].s[0] == '>' || x->t[x->nt - 1].s[0] == '{')) &&
			    quote_like(x, id, at)) {
				free(id);
				continue;
			}
			push(x, T_ID, id, 0, at);
			continue;
		}
		if (c >= '0' && c <= '9') {
			size_t st = x->i;
			while (x->i < n && (is_id(s[x->i]) || s[x->i] == '.'))
				x->i++;
			push(x, T_NUM, tgi_strndup(s + st, x->i - st), 0, at);
			continue;
		}
		/* punctuation, with the two-character operators that matter */
		static const char *const two[] = { "==", "!=", "=>", "->", "::", "..", "=~", "!~", "<=",
			                           ">=", "&&", "||", "**", "+=", ".=", ">>", "<<", NULL };
		size_t len = 1;
		for (size_t k = 0; two[k]; k++)
			if (c == two[k][0] && c1 == two[k][1]) {
				len = 2;
				break;
			}
		push(x, T_P, tgi_strndup(s + x->i, len), 0, at);
		x->i += len;
	}
}

static void lexer_free(lexer *x)
{
	for (size_t i = 0; i < x->nt; i++)
		free(x->t[i].s);
	free(x->t);
}

/* ------------------------------------------------------------------ values */

/* What an expression may be: alternatives, each a list of words (a scalar
 * is one word).  unknown: some alternative cannot be told; ignore: an
 * options object, a keyword value, None. */
typedef struct val {
	tgi_strv *alts;
	size_t    n;
	int       unknown;
	int       ignore;
	int       list;
} val;

static void val_free(val *v)
{
	for (size_t i = 0; i < v->n; i++)
		tgi_strv_free(&v->alts[i]);
	free(v->alts);
	memset(v, 0, sizeof *v);
}

static void val_add(val *v, tgi_strv *words)
{
	if (v->n >= ALTS_MAX) {
		tgi_strv_free(words);
		v->unknown = 1;
		return;
	}
	v->alts = tgi_xrealloc(v->alts, (v->n + 1) * sizeof *v->alts);
	v->alts[v->n++] = *words;
	memset(words, 0, sizeof *words);
}

static void val_scalar(val *v, const char *s)
{
	tgi_strv w = { 0 };
	tgi_strv_push(&w, tgi_strdup(s));
	val_add(v, &w);
}

/* The code's variables and the values literal assignments give them. */
typedef struct cvar {
	char *name;
	val   v;
} cvar;

typedef struct scan {
	tgi_lang         lang;
	lexer           *x;
	cvar            *vars;
	size_t           nvars;
	tgi_code_report *r;
	int              depth;
	int              fetch, loop, subproc;
	int              unlinks, spawns, walk_unknown;
	char            *walks[16];     /* the roots the code walks */
	size_t           nwalks;
} scan;

static cvar *cvar_get(scan *sc, const char *name)
{
	for (size_t i = 0; i < sc->nvars; i++)
		if (!strcmp(sc->vars[i].name, name))
			return &sc->vars[i];
	return NULL;
}

static int eval_expr(scan *sc, size_t a, size_t b, val *out);

/* The index of the token closing the bracket at i, or b. */
static size_t match(const lexer *x, size_t i, size_t b)
{
	int level = 0;
	for (size_t k = i; k < b; k++) {
		const tok *t = &x->t[k];
		if (t->k != T_P)
			continue;
		char c = t->s[0];
		if (c == '(' || c == '[' || c == '{')
			level++;
		else if ((c == ')' || c == ']' || c == '}') && --level == 0)
			return k;
	}
	return b;
}

/* A string with interpolation markers: every text it may be. */
static void interpolate(scan *sc, const char *s, val *out)
{
	const char *m = strchr(s, MARK_OPEN);
	if (!m) {
		val_scalar(out, s);
		return;
	}
	const char *e = strchr(m, MARK_CLOSE);
	if (!e || e == m + 1) {
		out->unknown = 1;
		return;
	}
	char name[96];
	tgi_snprintf(name, sizeof name, "%.*s", (int)(e - m - 1), m + 1);
	cvar *v = cvar_get(sc, name);
	if (!v && (name[0] == '$' || name[0] == '@'))
		v = cvar_get(sc, name + 1);
	if (!v || v->v.unknown || !v->v.n) {
		out->unknown = 1;
		return;
	}
	for (size_t i = 0; i < v->v.n; i++) {
		tgi_buf b;
		tgi_buf_init(&b, STR_MAX);
		tgi_buf_append(&b, s, (size_t)(m - s));
		for (size_t k = 0; k < v->v.alts[i].n; k++)
			tgi_buf_printf(&b, "%s%s", k ? " " : "", v->v.alts[i].v[k]);
		tgi_buf_puts(&b, e + 1);
		if (b.over) {
			tgi_buf_free(&b);
			out->unknown = 1;
			continue;
		}
		char *t = tgi_buf_steal(&b);
		interpolate(sc, t, out);
		free(t);
	}
}

/* Concatenate alternatives: out = out × next (scalars). */
static void concat(val *acc, const val *next)
{
	val r = { 0 };
	r.unknown = acc->unknown || next->unknown;
	if (!acc->n) {
		for (size_t i = 0; i < next->n; i++) {
			tgi_strv w = { 0 };
			for (size_t k = 0; k < next->alts[i].n; k++)
				tgi_strv_push(&w, tgi_strdup(next->alts[i].v[k]));
			val_add(&r, &w);
		}
	} else {
		for (size_t i = 0; i < acc->n; i++)
			for (size_t j = 0; j < next->n; j++) {
				const char *l = acc->alts[i].n ? acc->alts[i].v[0] : "";
				const char *m = next->alts[j].n ? next->alts[j].v[0] : "";
				if (strlen(l) + strlen(m) >= STR_MAX) {
					r.unknown = 1; /* too long to hold: not what it is */
					continue;
				}
				char *s = tgi_xmalloc(STR_MAX);
				tgi_snprintf(s, STR_MAX, "%s%s", l, m);
				val_scalar(&r, s);
				free(s);
			}
	}
	r.list = acc->list || next->list;
	val_free(acc);
	*acc = r;
}

static char *b64(const char *s)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";
	tgi_buf b;
	unsigned acc = 0;
	int bits = 0;
	tgi_buf_init(&b, STR_MAX * 8);
	for (; *s; s++) {
		if (strchr(" \t\r\n=", *s))
			continue;
		const char *p = strchr(alpha, *s);
		if (!p) {
			tgi_buf_free(&b);
			return NULL;
		}
		unsigned v = (unsigned)(p - alpha);
		acc = (acc << 6) | (v >= 64 ? (v == 64 ? 62 : 63) : v);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			char c = (char)((acc >> bits) & 0xff);
			if (c)
				tgi_buf_append(&b, &c, 1);
		}
	}
	return tgi_buf_steal(&b);
}

static char *unhex(const char *s)
{
	tgi_buf b;
	int half = -1;
	tgi_buf_init(&b, STR_MAX * 8);
	for (; *s; s++) {
		int v = *s >= '0' && *s <= '9' ? *s - '0' : (*s | 32) >= 'a' && (*s | 32) <= 'f' ? (*s | 32) - 'a' + 10 : -1;
		if (v < 0) {
			if (*s == ' ' || *s == ':')
				continue;
			tgi_buf_free(&b);
			return NULL;
		}
		if (half < 0)
			half = v;
		else {
			char c = (char)(half * 16 + v);
			if (c)
				tgi_buf_append(&b, &c, 1);
			half = -1;
		}
	}
	return tgi_buf_steal(&b);
}

static int is_name_in(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* Names whose call stands for the home or the working directory, or
 * joins its arguments as a path, or passes its argument on, or decodes. */
static const char *const home_calls[] = { "homedir", "home", "gethomedir", "expanduser", NULL };
static const char *const cwd_calls[] = { "getcwd", "cwd", "pwd", "getcwdb", NULL };
static const char *const join_calls[] = { "join", "resolve", "Path", "PurePath", "PosixPath",
	                                  "glob",
	                                  "expanduser", "expandvars_home",
	                                  "Pathname", "catfile", "catdir", "expand_path", "abspath",
	                                  "realpath", "normpath", "absolute_path", "str", "String",
	                                  "fspath", "new", "toString", "decode", "strip", "trim",
	                                  "format_path", "encode", "fsdecode", "fsencode", "bytes",
	                                  "to_s", "chomp", "dup", "freeze", NULL };
static const char *const b64_calls[] = { "b64decode", "decodebytes", "decodestring",
	                                 "standard_b64decode", "urlsafe_b64decode", "base64_decode",
	                                 "decode64", "decode_base64", "atob", "strict_decode64",
	                                 "urlsafe_decode64", NULL };
static const char *const hex_calls[] = { "fromhex", "unhexlify", "a2b_hex", "hex2bin", NULL };

/* A term at a..b: one value. */
static int eval_term(scan *sc, size_t a, size_t b, val *out)
{
	const lexer *x = sc->x;
	const tok *t = &x->t[a];

	if (a >= b) {
		out->ignore = 1;
		return 0;
	}
	/* keyword arguments and options: name=value, name: value */
	if (t->k == T_ID && a + 1 < b && x->t[a + 1].k == T_P &&
	    (!strcmp(x->t[a + 1].s, "=") || !strcmp(x->t[a + 1].s, ":") || !strcmp(x->t[a + 1].s, "=>")) &&
	    sc->lang != TGI_LANG_PERL && sc->lang != TGI_LANG_PHP) {
		out->ignore = 1;
		return 0;
	}
	if (t->k == T_STR || t->k == T_CMD) {
		if (t->interp)
			interpolate(sc, t->s, out);
		else
			val_scalar(out, t->s);
		return 0;
	}
	if (t->k == T_NUM) {
		val_scalar(out, t->s);
		return 0;
	}
	if (t->k == T_P && (t->s[0] == '[' || t->s[0] == '(')) {
		size_t e = match(x, a, b);
		/* a list: the product of its elements' alternatives */
		val acc = { 0 };
		tgi_strv empty = { 0 };
		val_add(&acc, &empty);
		acc.list = 1;
		size_t st = a + 1;
		int level = 0;
		for (size_t k = a + 1; k <= e && k < b; k++) {
			const tok *u = &x->t[k];
			if (u->k == T_P && strchr("([{", u->s[0]))
				level++;
			if (u->k == T_P && strchr(")]}", u->s[0]) && k != e)
				level--;
			if (k == e || (level == 0 && u->k == T_P && (!strcmp(u->s, ",") || !strcmp(u->s, "=>")))) {
				if (k > st) {
					val el = { 0 };
					eval_expr(sc, st, k, &el);
					if (el.unknown)
						acc.unknown = 1;
					if (!el.ignore && el.n) {
						val r = { 0 };
						r.list = 1;
						r.unknown = acc.unknown;
						for (size_t i = 0; i < acc.n; i++)
							for (size_t j = 0; j < el.n; j++) {
								tgi_strv w = { 0 };
								for (size_t q = 0; q < acc.alts[i].n; q++)
									tgi_strv_push(&w, tgi_strdup(acc.alts[i].v[q]));
								for (size_t q = 0; q < el.alts[j].n; q++)
									tgi_strv_push(&w, tgi_strdup(el.alts[j].v[q]));
								val_add(&r, &w);
							}
						val_free(&acc);
						acc = r;
					}
					val_free(&el);
				}
				st = k + 1;
			}
		}
		*out = acc;
		return 0;
	}
	if (t->k == T_P && t->s[0] == '{') {
		out->ignore = 1; /* an options object, a block */
		return 0;
	}
	if (t->k == T_ID) {
		/* a qualified name: os.path.join, File::Spec->catfile,
		 * process.env.HOME, require('os').homedir */
		size_t k = a;
		const char *last = t->s;
		for (;;) {
			size_t q = k + 1;
			if (q < b && x->t[q].k == T_P && x->t[q].s[0] == '(' && k + 1 < b) {
				size_t e2 = match(x, q, b);
				if (e2 + 2 < b && x->t[e2 + 1].k == T_P &&
				    (!strcmp(x->t[e2 + 1].s, ".") || !strcmp(x->t[e2 + 1].s, "->")) &&
				    x->t[e2 + 2].k == T_ID) {
					k = e2 + 2;
					last = x->t[k].s;
					continue;
				}
				break;
			}
			if (k + 2 < b && x->t[k + 1].k == T_P &&
			    (!strcmp(x->t[k + 1].s, ".") || !strcmp(x->t[k + 1].s, "::") || !strcmp(x->t[k + 1].s, "->")) &&
			    x->t[k + 2].k == T_ID) {
				k += 2;
				last = x->t[k].s;
				continue;
			}
			break;
		}
		int called = k + 1 < b && x->t[k + 1].k == T_P && x->t[k + 1].s[0] == '(';
		size_t ce = called ? match(x, k + 1, b) : k;
		/* perl and ruby call without parentheses: glob "/x*" */
		if (!called && k + 1 < b && (sc->lang == TGI_LANG_PERL || sc->lang == TGI_LANG_RUBY) &&
		    (x->t[k + 1].k == T_STR || x->t[k + 1].k == T_ID) && is_name_in(last, join_calls)) {
			val args = { 0 };
			eval_expr(sc, k + 1, b, &args);
			*out = args;
			return 0;
		}
		/* the environment: HOME is home, anything else unknown */
		for (size_t q = a; q <= k && q < b; q++)
			if (!strcmp(x->t[q].s, "environ") || !strcmp(x->t[q].s, "getenv") ||
			    !strcmp(x->t[q].s, "ENV") || !strcmp(x->t[q].s, "%ENV") || !strcmp(x->t[q].s, "$ENV") ||
			    !strcmp(x->t[q].s, "env") || !strcmp(x->t[q].s, "$_SERVER") || !strcmp(x->t[q].s, "$_ENV")) {
				for (size_t z = a; z < b && z <= ce + 3; z++)
					if ((x->t[z].k == T_STR || x->t[z].k == T_ID) && x->t[z].s && !strcmp(x->t[z].s, "HOME")) {
						val_scalar(out, "~");
						return 0;
					}
				out->unknown = 1;
				return 0;
			}
		if (is_name_in(last, home_calls) && called && ce == k + 2) {
			val_scalar(out, "~");
			return 0;
		}
		if (is_name_in(last, cwd_calls) && (called || !strcmp(last, "pwd"))) {
			val_scalar(out, ".");
			return 0;
		}
		if (!strcmp(last, "sep") || !strcmp(last, "rootdir") || !strcmp(last, "SEPARATOR") ||
		    !strcmp(last, "DIRECTORY_SEPARATOR")) {
			val_scalar(out, "/");
			return 0;
		}
		if (!strcmp(last, "True") || !strcmp(last, "False") || !strcmp(last, "None") ||
		    !strcmp(last, "true") || !strcmp(last, "false") || !strcmp(last, "null") ||
		    !strcmp(last, "nil") || !strcmp(last, "undef") || !strcmp(last, "undefined")) {
			out->ignore = 1;
			return 0;
		}
		if (called && (is_name_in(last, join_calls) || is_name_in(last, b64_calls) ||
		               is_name_in(last, hex_calls) || !strcmp(last, "dirname"))) {
			val args = { 0 };
			val acc = { 0 };
			size_t st = k + 2;
			int level = 0, first = 1;
			for (size_t q = k + 2; q <= ce && q < b; q++) {
				const tok *u = &x->t[q];
				if (u->k == T_P && strchr("([{", u->s[0]))
					level++;
				if (u->k == T_P && strchr(")]}", u->s[0]) && q != ce)
					level--;
				if (q == ce || (level == 0 && u->k == T_P && !strcmp(u->s, ","))) {
					if (q > st) {
						val el = { 0 };
						eval_expr(sc, st, q, &el);
						if (!el.ignore) {
							if (!first && !strcmp(last, "join")) {
								val slash = { 0 };
								val_scalar(&slash, "/");
								concat(&acc, &slash);
								val_free(&slash);
							}
							if (first || !strcmp(last, "join") || is_name_in(last, join_calls))
								concat(&acc, &el);
							first = 0;
						}
						val_free(&el);
					}
					st = q + 1;
				}
			}
			val_free(&args);
			if (!acc.n && !acc.unknown)
				val_scalar(&acc, "");
			/* decoders turn their literal into what it encodes */
			if (is_name_in(last, b64_calls) || is_name_in(last, hex_calls)) {
				val dec = { 0 };
				dec.unknown = acc.unknown;
				for (size_t i = 0; i < acc.n; i++) {
					char *d = is_name_in(last, b64_calls) ? b64(acc.alts[i].v[0]) : unhex(acc.alts[i].v[0]);
					if (d)
						val_scalar(&dec, d);
					else
						dec.unknown = 1;
					free(d);
				}
				val_free(&acc);
				acc = dec;
			}
			if (!strcmp(last, "dirname"))
				for (size_t i = 0; i < acc.n; i++) {
					char *s = acc.alts[i].v[0], *sl = strrchr(s, '/');
					if (sl && sl != s)
						*sl = '\0';
					else if (sl)
						sl[1] = '\0';
					else
						strcpy(s, ".");
				}
			/* a method on a value: Path('/') / 'x', "…".decode() */
			*out = acc;
			if (ce + 1 < b && x->t[ce + 1].k == T_P && !strcmp(x->t[ce + 1].s, "/")) {
				val rest = { 0 }, slash = { 0 };
				eval_expr(sc, ce + 2, b, &rest);
				val_scalar(&slash, "/");
				concat(out, &slash);
				concat(out, &rest);
				val_free(&slash);
				val_free(&rest);
			}
			return 0;
		}
		/* a variable the code assigned */
		if (!called && k == a) {
			cvar *v = cvar_get(sc, t->s);
			if (v && v->v.n) {
				for (size_t i = 0; i < v->v.n; i++) {
					tgi_strv w = { 0 };
					for (size_t q = 0; q < v->v.alts[i].n; q++)
						tgi_strv_push(&w, tgi_strdup(v->v.alts[i].v[q]));
					val_add(out, &w);
				}
				out->unknown |= v->v.unknown;
				out->list = v->v.list;
				return 0;
			}
		}
	}
	out->unknown = 1;
	return 0;
}

/* An expression: terms joined by concatenation (+ . .. adjacency), a
 * method that passes its value on (.decode()), a % or .format() of a
 * literal format. */
static int eval_expr(scan *sc, size_t a, size_t b, val *out)
{
	const lexer *x = sc->x;
	size_t st = a;
	int level = 0, any = 0;
	val acc = { 0 };

	if (a >= b) {
		out->ignore = 1;
		return 0;
	}
	for (size_t k = a; k <= b; k++) {
		const tok *t = k < b ? &x->t[k] : NULL;
		if (t && t->k == T_P && strchr("([{", t->s[0]))
			level++;
		if (t && t->k == T_P && strchr(")]}", t->s[0]))
			level--;
		int cut = !t || (level == 0 && t->k == T_P &&
		                 (!strcmp(t->s, "+") || (!strcmp(t->s, ".") && (sc->lang == TGI_LANG_PERL || sc->lang == TGI_LANG_PHP)) ||
		                  (!strcmp(t->s, "..") && sc->lang == TGI_LANG_LUA)));
		/* adjacent strings concatenate (python, awk) */
		if (!cut && t && k > st && level == 0 && t->k == T_STR && x->t[k - 1].k == T_STR &&
		    (sc->lang == TGI_LANG_PYTHON || sc->lang == TGI_LANG_AWK))
			cut = 2;
		if (!cut)
			continue;
		size_t end = k;
		/* trailing methods that pass the value on */
		while (end > st + 2 && x->t[end - 1].k == T_P && x->t[end - 1].s[0] == ')' &&
		       x->t[end - 2].k == T_P && x->t[end - 2].s[0] == '(' && x->t[end - 3].k == T_ID &&
		       is_name_in(x->t[end - 3].s, join_calls) && end - 4 > st &&
		       x->t[end - 4].k == T_P && x->t[end - 4].s[0] == '.')
			end -= 4;
		if (end > st) {
			val term = { 0 };
			if (end == st + 1 || (x->t[st].k == T_P && match(x, st, end) == end - 1) ||
			    x->t[st].k == T_ID)
				eval_term(sc, st, end, &term);
			else
				term.unknown = 1;
			/* a term followed by more than one token it does not use */
			if (x->t[st].k == T_STR && end > st + 1)
				term.unknown = 1;
			if (term.ignore && !any) {
				*out = term;
				val_free(&acc);
				return 0;
			}
			if (!term.ignore)
				concat(&acc, &term);
			any = 1;
			val_free(&term);
		}
		st = cut == 2 ? k : k + 1;
	}
	*out = acc;
	return 0;
}

/* ------------------------------------------------------------------ primitives */

enum {
	P_RUN,        /* its string arguments are command lines, its words a program */
	P_EVAL,       /* it runs code in the same language */
	P_RMTREE,     /* its arguments are deleted recursively */
	P_RMTREE_OPT, /* … when `recursive` is among its options */
	P_OPEN,       /* opens its first argument; a mode decides a write */
	P_WRITE,      /* writes its first argument */
	P_FETCH,      /* downloads */
	P_FETCH_TO,   /* downloads to its second argument */
	P_FORK,
	P_REBOOT,
	P_KILL,       /* signals the pids among its arguments */
	P_UNLINK,     /* removes its arguments, one file or empty directory each */
	P_WALK,       /* walks the trees under its arguments */
	P_SPAWN,      /* starts a process without waiting for it */
};

#define L_PY  (1u << TGI_LANG_PYTHON)
#define L_PL  (1u << TGI_LANG_PERL)
#define L_RB  (1u << TGI_LANG_RUBY)
#define L_JS  (1u << TGI_LANG_JS)
#define L_PHP (1u << TGI_LANG_PHP)
#define L_AWK (1u << TGI_LANG_AWK)
#define L_LUA (1u << TGI_LANG_LUA)
#define L_ALL (L_PY | L_PL | L_RB | L_JS | L_PHP | L_AWK | L_LUA)

static const struct prim {
	const char *name;
	unsigned    langs;
	int         kind;
	const char *needs;   /* a name the code must mention for this one to count */
} prims[] = {
	/* running commands */
	{ "system", L_PY | L_PL | L_RB | L_PHP | L_AWK, P_RUN, NULL },
	{ "popen", L_PY | L_RB | L_PHP | L_LUA, P_RUN, NULL },
	{ "popen2", L_PY | L_RB, P_RUN, NULL }, { "popen3", L_PY | L_RB, P_RUN, NULL },
	{ "spawnl", L_PY, P_RUN, NULL }, { "spawnle", L_PY, P_RUN, NULL }, { "spawnlp", L_PY, P_RUN, NULL },
	{ "spawnlpe", L_PY, P_RUN, NULL }, { "spawnv", L_PY, P_RUN, NULL }, { "spawnve", L_PY, P_RUN, NULL },
	{ "spawnvp", L_PY, P_RUN, NULL }, { "spawnvpe", L_PY, P_RUN, NULL },
	{ "execl", L_PY, P_RUN, NULL }, { "execle", L_PY, P_RUN, NULL }, { "execlp", L_PY, P_RUN, NULL },
	{ "execlpe", L_PY, P_RUN, NULL }, { "execv", L_PY, P_RUN, NULL }, { "execve", L_PY, P_RUN, NULL },
	{ "execvp", L_PY, P_RUN, NULL }, { "execvpe", L_PY, P_RUN, NULL },
	{ "posix_spawn", L_PY, P_RUN, NULL }, { "posix_spawnp", L_PY, P_RUN, NULL },
	{ "run", L_PY, P_RUN, "subprocess" }, { "call", L_PY, P_RUN, "subprocess" },
	{ "check_call", L_PY, P_RUN, NULL }, { "check_output", L_PY, P_RUN, NULL },
	{ "Popen", L_PY, P_RUN, NULL }, { "getoutput", L_PY, P_RUN, NULL },
	{ "getstatusoutput", L_PY, P_RUN, NULL }, { "spawn", L_PY | L_RB | L_JS, P_RUN, NULL },
	{ "exec", L_PL | L_RB | L_JS | L_PHP, P_RUN, NULL }, { "readpipe", L_PL, P_RUN, NULL },
	{ "open2", L_PL, P_RUN, NULL }, { "open3", L_PL, P_RUN, NULL },
	{ "capture2", L_RB, P_RUN, NULL }, { "capture2e", L_RB, P_RUN, NULL },
	{ "capture3", L_RB, P_RUN, NULL }, { "pipeline", L_RB, P_RUN, NULL },
	{ "execSync", L_JS, P_RUN, NULL }, { "execFile", L_JS, P_RUN, NULL },
	{ "execFileSync", L_JS, P_RUN, NULL }, { "spawnSync", L_JS, P_RUN, NULL },
	{ "execa", L_JS, P_RUN, NULL }, { "execaSync", L_JS, P_RUN, NULL },
	{ "execaCommand", L_JS, P_RUN, NULL }, { "execaCommandSync", L_JS, P_RUN, NULL },
	{ "shell_exec", L_PHP, P_RUN, NULL }, { "passthru", L_PHP, P_RUN, NULL },
	{ "proc_open", L_PHP, P_RUN, NULL }, { "pcntl_exec", L_PHP, P_RUN, NULL },
	{ "execute", L_LUA, P_RUN, NULL },
	/* running code */
	{ "exec", L_PY, P_EVAL, NULL }, { "eval", L_PY | L_PL | L_RB | L_JS | L_PHP, P_EVAL, NULL },
	{ "compile", L_PY, P_EVAL, NULL }, { "execfile", L_PY, P_EVAL, NULL },
	{ "run_path", L_PY, P_EVAL, NULL }, { "run_module", L_PY, P_EVAL, NULL },
	{ "instance_eval", L_RB, P_EVAL, NULL }, { "class_eval", L_RB, P_EVAL, NULL },
	{ "module_eval", L_RB, P_EVAL, NULL }, { "Function", L_JS, P_EVAL, NULL },
	{ "runInThisContext", L_JS, P_EVAL, NULL }, { "runInNewContext", L_JS, P_EVAL, NULL },
	{ "runInContext", L_JS, P_EVAL, NULL }, { "assert", L_PHP, P_EVAL, NULL },
	{ "create_function", L_PHP, P_EVAL, NULL }, { "loadstring", L_LUA, P_EVAL, NULL },
	{ "load", L_LUA, P_EVAL, NULL }, { "dofile", L_LUA, P_EVAL, NULL },
	/* deleting trees */
	{ "rmtree", L_PY | L_PL | L_RB, P_RMTREE, NULL }, { "remove_tree", L_PL, P_RMTREE, NULL },
	{ "rm_rf", L_RB, P_RMTREE, NULL }, { "rm_r", L_RB, P_RMTREE, NULL },
	{ "remove_dir", L_RB, P_RMTREE, NULL }, { "remove_entry", L_RB, P_RMTREE, NULL },
	{ "remove_entry_secure", L_RB, P_RMTREE, NULL }, { "rimraf", L_JS, P_RMTREE, NULL },
	{ "rimrafSync", L_JS, P_RMTREE, NULL }, { "removeSync", L_JS, P_RMTREE, NULL },
	{ "emptyDirSync", L_JS, P_RMTREE, NULL }, { "emptyDir", L_JS, P_RMTREE, NULL },
	{ "deleteSync", L_JS, P_RMTREE, NULL },
	{ "rmSync", L_JS, P_RMTREE_OPT, NULL }, { "rmdirSync", L_JS, P_RMTREE_OPT, NULL },
	{ "rm", L_JS, P_RMTREE_OPT, NULL }, { "rmdir", L_JS, P_RMTREE_OPT, NULL },
	/* writing files */
	{ "open", L_PY | L_PL | L_RB | L_LUA, P_OPEN, NULL }, { "fopen", L_PHP, P_OPEN, NULL },
	{ "sysopen", L_PL, P_OPEN, NULL }, { "openSync", L_JS, P_OPEN, NULL },
	{ "write_text", L_PY, P_WRITE, NULL }, { "write_bytes", L_PY, P_WRITE, NULL },
	{ "writeFileSync", L_JS, P_WRITE, NULL }, { "writeFile", L_JS, P_WRITE, NULL },
	{ "appendFileSync", L_JS, P_WRITE, NULL }, { "appendFile", L_JS, P_WRITE, NULL },
	{ "createWriteStream", L_JS, P_WRITE, NULL }, { "file_put_contents", L_PHP, P_WRITE, NULL },
	{ "binwrite", L_RB, P_WRITE, NULL }, { "copyfile", L_PY, P_FETCH_TO, NULL },
	/* downloading */
	{ "urlopen", L_PY, P_FETCH, NULL }, { "urlretrieve", L_PY, P_FETCH_TO, NULL },
	{ "requests", L_PY, P_FETCH, NULL }, { "httpx", L_PY, P_FETCH, NULL },
	{ "urllib3", L_PY, P_FETCH, NULL }, { "HTTPConnection", L_PY, P_FETCH, NULL },
	{ "HTTPSConnection", L_PY, P_FETCH, NULL }, { "aiohttp", L_PY, P_FETCH, NULL },
	{ "pycurl", L_PY, P_FETCH, NULL }, { "LWP", L_PL, P_FETCH, NULL },
	{ "getstore", L_PL, P_FETCH_TO, NULL }, { "getprint", L_PL, P_FETCH, NULL },
	{ "mirror", L_PL, P_FETCH_TO, NULL }, { "HTTP", L_PL | L_RB, P_FETCH, NULL },
	{ "Net", L_RB, P_FETCH, NULL }, { "URI", L_RB, P_FETCH, NULL },
	{ "Faraday", L_RB, P_FETCH, NULL }, { "HTTParty", L_RB, P_FETCH, NULL },
	{ "RestClient", L_RB, P_FETCH, NULL }, { "fetch", L_JS, P_FETCH, NULL },
	{ "axios", L_JS, P_FETCH, NULL }, { "got", L_JS, P_FETCH, NULL },
	{ "XMLHttpRequest", L_JS, P_FETCH, NULL }, { "http", L_JS, P_FETCH, NULL },
	{ "https", L_JS, P_FETCH, NULL }, { "curl_exec", L_PHP, P_FETCH, NULL },
	{ "curl_init", L_PHP, P_FETCH, NULL }, { "file_get_contents", L_PHP, P_OPEN, NULL },
	{ "socket", L_LUA, P_FETCH, NULL },
	/* forks, reboots, signals */
	{ "fork", L_PY | L_PL | L_RB | L_JS, P_FORK, NULL }, { "forkpty", L_PY, P_FORK, NULL },
	{ "pcntl_fork", L_PHP, P_FORK, NULL },
	{ "reboot", L_ALL, P_REBOOT, NULL }, { "syscall", L_PL | L_PY | L_RB, P_REBOOT, NULL },
	{ "kill", L_PY | L_PL | L_RB | L_JS, P_KILL, NULL }, { "killpg", L_PY, P_KILL, NULL },
	{ "posix_kill", L_PHP, P_KILL, NULL },
	/* removing one by one, walking trees: a walk and a removal delete the tree */
	{ "unlink", L_PY | L_PL | L_PHP, P_UNLINK, NULL }, { "remove", L_PY | L_LUA, P_UNLINK, NULL },
	{ "unlinkSync", L_JS, P_UNLINK, NULL }, { "delete", L_RB, P_UNLINK, NULL },
	{ "rmdir", L_PY | L_PL | L_PHP | L_RB, P_UNLINK, NULL }, { "rm", L_RB, P_UNLINK, NULL },
	{ "rm_f", L_RB, P_UNLINK, NULL }, { "removedirs", L_PY, P_UNLINK, NULL },
	{ "walk", L_PY, P_WALK, NULL }, { "rglob", L_PY, P_WALK, NULL }, { "glob", L_PY | L_RB | L_PHP, P_WALK, NULL },
	{ "iglob", L_PY, P_WALK, NULL }, { "scandir", L_PY | L_PHP, P_WALK, NULL },
	{ "listdir", L_PY, P_WALK, NULL }, { "find", L_PL | L_RB, P_WALK, NULL },
	{ "finddepth", L_PL, P_WALK, NULL }, { "readdirSync", L_JS, P_WALK, NULL },
	{ "readdir", L_JS, P_WALK, NULL }, { "opendir", L_PL | L_PHP, P_WALK, NULL },
	{ "entries", L_RB, P_WALK, NULL }, { "each_child", L_RB, P_WALK, NULL },
	{ "RecursiveDirectoryIterator", L_PHP, P_WALK, NULL },
	/* processes started without waiting: a flood in an endless loop */
	{ "Popen", L_PY, P_SPAWN, NULL }, { "Process", L_PY, P_SPAWN, NULL },
	{ "spawnl", L_PY, P_SPAWN, NULL }, { "spawnv", L_PY, P_SPAWN, NULL },
	{ "spawn", L_RB | L_JS, P_SPAWN, NULL }, { "exec", L_JS, P_SPAWN, NULL },
	{ "execFile", L_JS, P_SPAWN, NULL },
};

/* Calls by a computed name. */
static const char *const reflection[] = { "getattr", "__getattribute__", "globals", "locals",
	                                  "vars", "__builtins__", "__dict__", "send", "public_send",
	                                  "__send__", "call_user_func", "call_user_func_array",
	                                  "Reflect", "constructor", "instance_variable_get",
	                                  "const_get", "getglobal", "rawget", "_G", NULL };

static const char *const loops[] = { "while", "for", "foreach", "until", "loop", "times", "each",
	                             "upto", "step", "repeat", "redo", "goto", "setInterval",
	                             "setImmediate", "do", NULL };

/* Reboot magic and the reboot syscall's numbers. */
static const char *const reboot_magic[] = { "0xfee1dead", "0xFEE1DEAD", "0x28121969", "0x1234567",
	                                    "0x01234567", "0x4321fedc", "0x4321FEDC", "0xcdef0123",
	                                    "0xCDEF0123", "0x89abcdef", "4276215469", "672274793",
	                                    "19088743", "1126301404", NULL };

static const struct prim *find_prim(scan *sc, const char *name)
{
	unsigned bit = 1u << sc->lang;
	for (size_t i = 0; i < TGI_ARRAY_LEN(prims); i++)
		if ((prims[i].langs & bit) && !strcmp(prims[i].name, name))
			return &prims[i];
	return NULL;
}

/* The second entry of a name in the table (Popen runs a command and
 * starts a process without waiting: both), or NULL. */
static const struct prim *find_prim_also(scan *sc, const struct prim *first)
{
	unsigned bit = 1u << sc->lang;
	for (const struct prim *p = first + 1; p < prims + TGI_ARRAY_LEN(prims); p++)
		if ((p->langs & bit) && !strcmp(p->name, first->name))
			return p;
	return NULL;
}

/* Does the code loop for ever: while True / while 1 / while(true),
 * for(;;), until 0, loop, setInterval? */
static int endless(const lexer *x)
{
	for (size_t i = 0; i + 1 < x->nt; i++) {
		const tok *t = &x->t[i];
		if (t->k != T_ID)
			continue;
		if (!strcmp(t->s, "loop") || !strcmp(t->s, "setInterval") || !strcmp(t->s, "redo") ||
		    !strcmp(t->s, "repeat"))
			return 1;
		size_t k = i + 1;
		if (k < x->nt && x->t[k].k == T_P && x->t[k].s[0] == '(')
			k++;
		if (k >= x->nt)
			continue;
		const char *v = x->t[k].s;
		if (!strcmp(t->s, "while") && (!strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1") ||
		                               !strcmp(v, "TRUE")))
			return 1;
		if (!strcmp(t->s, "until") && (!strcmp(v, "false") || !strcmp(v, "0")))
			return 1;
		if (!strcmp(t->s, "for") && x->t[k].k == T_P && x->t[k].s[0] == ';' && k + 1 < x->nt &&
		    x->t[k + 1].k == T_P && x->t[k + 1].s[0] == ';')
			return 1;
	}
	return 0;
}

static int mentioned(const scan *sc, const char *name)
{
	for (size_t i = 0; i < sc->x->nt; i++) {
		const tok *t = &sc->x->t[i];
		if ((t->k == T_ID || t->k == T_STR) && t->s && !strcmp(t->s, name))
			return 1;
	}
	return 0;
}

static void effect(tgi_code_report *r, tgi_code_kind kind, tgi_strv *words)
{
	if (r->n >= 256) {
		tgi_strv_free(words);
		r->blind = BLIND_ARG;
		return;
	}
	r->v = tgi_xrealloc(r->v, (r->n + 1) * sizeof *r->v);
	r->v[r->n].kind = kind;
	r->v[r->n].words = *words;
	memset(words, 0, sizeof *words);
	r->n++;
}

static void effect1(tgi_code_report *r, tgi_code_kind kind, const char *s)
{
	tgi_strv w = { 0 };
	tgi_strv_push(&w, tgi_strdup(s));
	effect(r, kind, &w);
}

static void blind(scan *sc, const char *why)
{
	if (!sc->r->blind)
		sc->r->blind = why;
}

/* The arguments of a call at token i (a primitive's name): from its '('
 * to the matching ')', or (perl, ruby, lua, awk: a call without
 * parentheses) to the end of the statement.  *a, *b: the argument tokens. */
static void call_args(const scan *sc, size_t i, size_t *a, size_t *b)
{
	const lexer *x = sc->x;
	size_t k = i + 1;
	if (k < x->nt && x->t[k].k == T_P && x->t[k].s[0] == '(') {
		*a = k + 1;
		*b = match(x, k, x->nt);
		return;
	}
	*a = k;
	int level = 0;
	for (; k < x->nt; k++) {
		const tok *t = &x->t[k];
		if (t->k == T_NL && level == 0)
			break;
		if (t->k != T_P)
			continue;
		if (strchr("([{", t->s[0]))
			level++;
		else if (strchr(")]}", t->s[0]) && --level < 0)
			break;
		else if (level == 0 && (t->s[0] == ';' || (!strcmp(t->s, "||") || !strcmp(t->s, "&&"))))
			break;
		else if (level == 0 && sc->lang == TGI_LANG_PERL && !strcmp(t->s, "or"))
			break;
	}
	*b = k;
}

/* The values of the arguments a..b, cut at top-level commas. */
static size_t split_args(scan *sc, size_t a, size_t b, val *args, size_t max)
{
	const lexer *x = sc->x;
	size_t n = 0, st = a;
	int level = 0;
	for (size_t k = a; k <= b && n < max; k++) {
		const tok *t = k < b ? &x->t[k] : NULL;
		if (t && t->k == T_P && strchr("([{", t->s[0]))
			level++;
		if (t && t->k == T_P && strchr(")]}", t->s[0]))
			level--;
		if (!t || (level == 0 && t->k == T_P && (!strcmp(t->s, ",") || !strcmp(t->s, "=>")))) {
			if (k > st) {
				memset(&args[n], 0, sizeof args[n]);
				eval_expr(sc, st, k, &args[n]);
				n++;
			}
			st = k + 1;
		}
	}
	return n;
}

static void scan_code(tgi_lang lang, const char *code, size_t len, tgi_code_report *r, int depth);

/* A run primitive's arguments: each string a command line, and the words
 * of all of them (lists flattened) a program run with its words. */
static void run_call(scan *sc, val *args, size_t n, const char *prim)
{
	tgi_code_report *r = sc->r;
	int unknown = 0;
	tgi_strv argv = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (args[i].ignore)
			continue;
		unknown |= args[i].unknown || !args[i].n;
		for (size_t k = 0; k < args[i].n; k++)
			for (size_t j = 0; j < args[i].alts[k].n; j++) {
				const char *w = args[i].alts[k].v[j];
				if (!args[i].list && j == 0)
					effect1(r, TGI_CODE_SHELL, w);
				if (k == 0)
					tgi_strv_push(&argv, tgi_strdup(w));
			}
		/* other alternatives of a list: programs of their own */
		for (size_t k = 1; args[i].list && k < args[i].n; k++) {
			tgi_strv w = { 0 };
			for (size_t j = 0; j < args[i].alts[k].n; j++)
				tgi_strv_push(&w, tgi_strdup(args[i].alts[k].v[j]));
			effect(r, TGI_CODE_ARGV, &w);
		}
	}
	/* perl open "|cmd" / "cmd|" and friends reach here through P_OPEN */
	(void)prim;
	if (argv.n)
		effect(r, TGI_CODE_ARGV, &argv);
	tgi_strv_free(&argv);
	if (unknown)
		blind(sc, BLIND_ARG);
}

/* Strip a perl/ruby open mode ("> /dev/sda", "+</x", "|cmd"): the path, or
 * NULL for a pipe (*cmd then names the command). */
static const char *open_target(const char *s, int *write, const char **cmd)
{
	*cmd = NULL;
	while (*s == ' ')
		s++;
	if (*s == '|') {
		*cmd = s + 1;
		return NULL;
	}
	size_t n = strlen(s);
	if (n && s[n - 1] == '|') {
		*cmd = s;
		return NULL;
	}
	if (*s == '>' || *s == '+') {
		*write = 1;
		s += strspn(s, "+<>&= ");
	} else if (*s == '<') {
		s += strspn(s, "< ");
	}
	return s;
}

static int write_mode(const char *m)
{
	return strpbrk(m, "wax+>") != NULL && strlen(m) <= 4;
}

static void on_call(scan *sc, size_t i, const struct prim *p)
{
	const lexer *x = sc->x;
	tgi_code_report *r = sc->r;
	size_t a, b;
	val args[16];
	size_t n;

	call_args(sc, i, &a, &b);
	/* a method on a constructed path: Pathname.new('/').rmtree */
	if (a >= b && i >= 2 && x->t[i - 1].k == T_P && x->t[i - 1].s[0] == '.' && x->t[i - 2].k == T_P &&
	    x->t[i - 2].s[0] == ')') {
		size_t open = i - 2;
		int level = 0;
		for (size_t k = i - 2 + 1; k-- > 0;) {
			if (x->t[k].k == T_P && x->t[k].s[0] == ')')
				level++;
			else if (x->t[k].k == T_P && x->t[k].s[0] == '(' && --level == 0) {
				open = k;
				break;
			}
		}
		a = open + 1;
		b = i - 2;
	}
	n = split_args(sc, a, b, args, TGI_ARRAY_LEN(args));
	switch (p->kind) {
	case P_RUN:
		run_call(sc, args, n, p->name);
		break;
	case P_EVAL:
		if (sc->lang == TGI_LANG_PERL && a < b && x->t[a].k == T_P && x->t[a].s[0] == '{')
			break; /* eval { … }: a block, run as code the scan reads anyway */
		for (size_t k = 0; k < n; k++) {
			if (args[k].ignore)
				continue;
			if (args[k].unknown || !args[k].n) {
				int reads_stdin = 0;
				for (size_t q = a; q < b; q++)
					if (x->t[q].k == T_ID && (!strcmp(x->t[q].s, "stdin") || !strcmp(x->t[q].s, "STDIN") ||
					                          !strcmp(x->t[q].s, "ARGF") || !strcmp(x->t[q].s, "readFileSync")))
						reads_stdin = 1;
				if (reads_stdin)
					r->stdin_eval = 1;
				if (sc->fetch && !reads_stdin)
					r->floor = r->floor ? r->floor : WHY_DLEXEC;
				else if (!reads_stdin)
					blind(sc, BLIND_EVAL);
				continue;
			}
			for (size_t q = 0; q < args[k].n; q++)
				if (args[k].alts[q].n)
					scan_code(sc->lang, args[k].alts[q].v[0], strlen(args[k].alts[q].v[0]), r,
					          sc->depth + 1);
			break; /* the first argument is the code */
		}
		break;
	case P_RMTREE_OPT: {
		int rec = 0;
		for (size_t q = a; q < b; q++)
			if ((x->t[q].k == T_ID || x->t[q].k == T_STR) && x->t[q].s && !strcmp(x->t[q].s, "recursive"))
				rec = 1;
		if (!rec)
			break;
	}
		/* fall through */
	case P_RMTREE:
		for (size_t k = 0; k < n; k++) {
			if (args[k].ignore)
				continue;
			if (args[k].unknown || !args[k].n) {
				blind(sc, BLIND_ARG);
				sc->unlinks = 1; /* a path from a walk, may be */
			}
			for (size_t q = 0; q < args[k].n; q++)
				for (size_t j = 0; j < args[k].alts[q].n; j++)
					effect1(r, TGI_CODE_RMTREE, args[k].alts[q].v[j]);
			if (sc->lang == TGI_LANG_JS)
				break; /* the path; then options and a callback */
		}
		break;
	case P_OPEN:
	case P_WRITE: {
		int write = p->kind == P_WRITE;
		for (size_t k = 1; k < n; k++)
			for (size_t q = 0; q < args[k].n; q++)
				if (args[k].alts[q].n && write_mode(args[k].alts[q].v[0]))
					write = 1;
		for (size_t q = a; q < b; q++)
			if (x->t[q].k == T_ID && (strstr(x->t[q].s, "WRONLY") || strstr(x->t[q].s, "RDWR") ||
			                          strstr(x->t[q].s, "O_CREAT") || strstr(x->t[q].s, "O_TRUNC")))
				write = 1;
		/* perl: open(F, '>', PATH) and open(F, '-|', CMD): the path or
		 * command comes after the mode */
		for (size_t k = 0; k < n; k++) {
			if (args[k].ignore || (sc->lang == TGI_LANG_PERL && k == 0 && n > 1))
				continue;
			for (size_t q = 0; q < args[k].n; q++) {
				if (!args[k].alts[q].n)
					continue;
				const char *cmd, *s = args[k].alts[q].v[0];
				int w = write;
				if (!strcmp(s, "-|") || !strcmp(s, "|-")) {
					/* the rest of the arguments are a command */
					run_call(sc, args + k + 1, n - k - 1, p->name);
					k = n;
					break;
				}
				if (write_mode(s) && k > 0)
					continue; /* the mode itself */
				const char *path = open_target(s, &w, &cmd);
				if (cmd) {
					effect1(r, TGI_CODE_SHELL, cmd);
					continue;
				}
				if (w)
					effect1(r, TGI_CODE_WRITE, path);
				if (!strncmp(path, "http://", 7) || !strncmp(path, "https://", 8) || !strncmp(path, "ftp://", 6))
					sc->fetch = 1;
			}
			if (!(sc->lang == TGI_LANG_PERL && n > 2))
				break; /* the path is the first argument (perl's may follow a mode) */
		}
		break;
	}
	case P_FETCH_TO:
		sc->fetch = 1;
		if (n >= 2 && !args[1].unknown) {
			for (size_t q = 0; q < args[1].n; q++)
				if (args[1].alts[q].n)
					effect1(r, TGI_CODE_DOWNLOAD, args[1].alts[q].v[0]);
		} else {
			r->dl_unknown = 1;
		}
		break;
	case P_FETCH:
		sc->fetch = 1;
		break;
	case P_FORK:
		sc->subproc = 1;
		if (sc->loop)
			r->floor = r->floor ? r->floor : WHY_FORK;
		break;
	case P_REBOOT:
		if (!strcmp(p->name, "reboot")) {
			r->floor = r->floor ? r->floor : WHY_REBOOT;
		} else {
			/* syscall(169, …): reboot on x86-64 (142 on arm64) */
			if (n && args[0].n && args[0].alts[0].n &&
			    (!strcmp(args[0].alts[0].v[0], "169") || !strcmp(args[0].alts[0].v[0], "142") ||
			     !strcmp(args[0].alts[0].v[0], "88")))
				r->floor = r->floor ? r->floor : WHY_REBOOT;
			else if (n && (args[0].unknown || !args[0].n))
				blind(sc, BLIND_ARG);
		}
		break;
	case P_UNLINK:
		sc->unlinks = 1;
		for (size_t k = 0; k < n; k++) {
			if (args[k].ignore)
				continue;
			sc->unlinks = 1;
			for (size_t q = 0; q < args[k].n; q++)
				for (size_t j = 0; j < args[k].alts[q].n; j++)
					effect1(r, TGI_CODE_UNLINK, args[k].alts[q].v[j]);
			break;
		}
		break;
	case P_WALK:
		/* Path('/').rglob('*'): the receiver is the root too */
		if (i >= 2 && x->t[i - 1].k == T_P && x->t[i - 1].s[0] == '.' && x->t[i - 2].k == T_P &&
		    x->t[i - 2].s[0] == ')') {
			size_t open = i - 2;
			int level = 0;
			for (size_t k = i - 1; k-- > 0;) {
				if (x->t[k].k == T_P && x->t[k].s[0] == ')')
					level++;
				else if (x->t[k].k == T_P && x->t[k].s[0] == '(' && --level == 0) {
					open = k;
					break;
				}
			}
			val recv[4];
			size_t nr = split_args(sc, open + 1, i - 2, recv, TGI_ARRAY_LEN(recv));
			for (size_t k = 0; k < nr; k++) {
				if (recv[k].unknown)
					sc->walk_unknown = 1;
				for (size_t q = 0; q < recv[k].n; q++)
					for (size_t j = 0; j < recv[k].alts[q].n && sc->nwalks < TGI_ARRAY_LEN(sc->walks); j++)
						sc->walks[sc->nwalks++] = tgi_strdup(recv[k].alts[q].v[j]);
				val_free(&recv[k]);
			}
		}
		for (size_t k = 0; k < n; k++) {
			if (args[k].ignore)
				continue;
			if (args[k].unknown || !args[k].n)
				sc->walk_unknown = 1;
			for (size_t q = 0; q < args[k].n; q++)
				for (size_t j = 0; j < args[k].alts[q].n && sc->nwalks < TGI_ARRAY_LEN(sc->walks); j++)
					sc->walks[sc->nwalks++] = tgi_strdup(args[k].alts[q].v[j]);
		}
		if (!n)
			sc->walk_unknown = 1;
		break;
	case P_SPAWN:
		sc->spawns = 1;
		break;
	case P_KILL: {
		/* the pid is the first argument, but perl's and ruby's signal comes first */
		size_t from = (sc->lang == TGI_LANG_PERL || sc->lang == TGI_LANG_RUBY) ? 1 : 0;
		for (size_t k = from; k < n && k < from + 1 + (from ? 8 : 0); k++)
			for (size_t q = 0; q < args[k].n; q++)
				if (args[k].alts[q].n && (!strcmp(args[k].alts[q].v[0], "1") || !strcmp(args[k].alts[q].v[0], "-1")))
					r->floor = r->floor ? r->floor : WHY_INIT;
		break;
	}
	}
	for (size_t k = 0; k < n; k++)
		val_free(&args[k]);
}

/* Literal assignments: NAME = EXPR (sigils included, my/local/our/const/
 * let/var skipped). */
static void collect_vars(scan *sc)
{
	const lexer *x = sc->x;
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i + 2 < x->nt; i++) {
			if (x->t[i].k != T_ID || x->t[i + 1].k != T_P || strcmp(x->t[i + 1].s, "=") != 0)
				continue;
			if (i > 0 && x->t[i - 1].k == T_P && (x->t[i - 1].s[0] == '.' || x->t[i - 1].s[0] == ','))
				continue;
			size_t e = i + 2;
			int level = 0;
			for (; e < x->nt; e++) {
				const tok *t = &x->t[e];
				if (t->k == T_NL && level == 0)
					break;
				if (t->k == T_P && strchr("([{", t->s[0]))
					level++;
				if (t->k == T_P && strchr(")]}", t->s[0]) && --level < 0)
					break;
				if (t->k == T_P && level == 0 && (t->s[0] == ';' || t->s[0] == ','))
					break;
			}
			val v = { 0 };
			eval_expr(sc, i + 2, e, &v);
			cvar *cv = cvar_get(sc, x->t[i].s);
			if (!cv) {
				if (sc->nvars >= 256) {
					val_free(&v);
					continue;
				}
				sc->vars = tgi_xrealloc(sc->vars, (sc->nvars + 1) * sizeof *sc->vars);
				cv = &sc->vars[sc->nvars++];
				memset(cv, 0, sizeof *cv);
				cv->name = tgi_strdup(x->t[i].s);
			}
			if (round == 1) {
				val_free(&v);
				continue;
			}
			cv->v.unknown |= v.unknown || v.ignore;
			cv->v.list |= v.list;
			for (size_t k = 0; k < v.n; k++)
				val_add(&cv->v, &v.alts[k]);
			val_free(&v);
		}
}

/* Is name used like a call in the raw text (name, blanks, then ( or a
 * quote)? */
static size_t raw_calls(const char *s, size_t n, const char *name)
{
	size_t count = 0, m = strlen(name);
	for (const char *q = memmem(s, n, name, m); q; q = memmem(q + 1, n - (size_t)(q + 1 - s), name, m)) {
		if (q > s && (is_id(q[-1]) || q[-1] == '$'))
			continue;
		const char *e = q + m;
		if (e < s + n && is_id(*e))
			continue;
		while (e < s + n && (*e == ' ' || *e == '\t'))
			e++;
		if (e < s + n && strchr("(\"'`$[@{", *e))
			count++;
	}
	return count;
}

static void scan_code(tgi_lang lang, const char *code, size_t len, tgi_code_report *r, int depth)
{
	lexer x = { lang, code, len, 0, NULL, 0, 0, 0 };
	scan sc = { lang, &x, NULL, 0, r, depth, 0, 0, 0, 0, 0, 0, { NULL }, 0 };

	if (depth >= SCAN_DEPTH || lang == TGI_LANG_NONE)
		return;
	if (len > CODE_MAX) {
		blind(&sc, BLIND_BIG);
		return;
	}
	if (memmem(code, len, "sysrq-trigger", 13))
		r->floor = r->floor ? r->floor : WHY_SYSRQ;
	lex(&x);
	collect_vars(&sc);
	/* what the code does anywhere: loops, downloads, URLs */
	for (size_t i = 0; i < x.nt; i++) {
		const tok *t = &x.t[i];
		if (t->k == T_ID && is_name_in(t->s, loops))
			sc.loop = 1;
		if (t->k == T_ID && is_name_in(t->s, reflection))
			blind(&sc, "interpreter code that calls functions by computed names");
		if (t->k == T_NUM && is_name_in(t->s, reboot_magic))
			r->floor = r->floor ? r->floor : WHY_REBOOT;
		if (t->k == T_ID && !strcmp(t->s, "LINUX_REBOOT_CMD_RESTART"))
			r->floor = r->floor ? r->floor : WHY_REBOOT;
		if (t->k == T_STR && t->s && (!strncmp(t->s, "http://", 7) || !strncmp(t->s, "https://", 8) ||
		                              !strncmp(t->s, "ftp://", 6)))
			sc.fetch = 1;
		if ((t->k == T_STR || t->k == T_ID) && t->s && (!strcmp(t->s, "open-uri") || !strcmp(t->s, "LWP::Simple")))
			sc.fetch = 1;
		if (t->k == T_ID) {
			const struct prim *p = find_prim(&sc, t->s);
			if (p && (p->kind == P_FETCH || p->kind == P_FETCH_TO))
				sc.fetch = 1;
		}
	}
	/* awk: "cmd" | getline, print … | "cmd", print > "file" */
	for (size_t i = 0; lang == TGI_LANG_AWK && i < x.nt; i++) {
		const tok *t = &x.t[i];
		if (t->k != T_STR)
			continue;
		int pipe_before = i > 0 && x.t[i - 1].k == T_P && !strcmp(x.t[i - 1].s, "|");
		int pipe_after = i + 1 < x.nt && x.t[i + 1].k == T_P && !strcmp(x.t[i + 1].s, "|");
		int redir = i > 0 && x.t[i - 1].k == T_P && (!strcmp(x.t[i - 1].s, ">") || !strcmp(x.t[i - 1].s, ">>"));
		if (pipe_before || pipe_after)
			effect1(r, TGI_CODE_SHELL, t->s);
		if (redir)
			effect1(r, TGI_CODE_WRITE, t->s);
	}
	for (size_t i = 0; i < x.nt; i++) {
		const tok *t = &x.t[i];
		if (t->k == T_CMD) {
			val v = { 0 };
			if (t->interp)
				interpolate(&sc, t->s, &v);
			else
				val_scalar(&v, t->s);
			for (size_t k = 0; k < v.n; k++)
				effect1(r, TGI_CODE_SHELL, v.alts[k].v[0]);
			if (v.unknown)
				blind(&sc, BLIND_ARG);
			val_free(&v);
			continue;
		}
		if (t->k == T_STR && t->s && find_prim(&sc, t->s) && strlen(t->s) > 3) {
			const struct prim *p = find_prim(&sc, t->s);
			if (p->kind == P_RUN || p->kind == P_EVAL || p->kind == P_RMTREE || p->kind == P_FORK)
				blind(&sc, BLIND_REFL);
		}
		if (t->k != T_ID)
			continue;
		const struct prim *p = find_prim(&sc, t->s);
		if (!p || (p->needs && !mentioned(&sc, p->needs)))
			continue;
		/* a field or a definition, not a call: obj.system = …, def system */
		if (i > 0 && x.t[i - 1].k == T_ID && (!strcmp(x.t[i - 1].s, "def") || !strcmp(x.t[i - 1].s, "function") ||
		                                       !strcmp(x.t[i - 1].s, "sub")))
			continue;
		int callish = i + 1 < x.nt && (x.t[i + 1].k == T_STR || x.t[i + 1].k == T_ID ||
		                               x.t[i + 1].k == T_NUM || x.t[i + 1].k == T_CMD ||
		                               (x.t[i + 1].k == T_P && strchr("([{", x.t[i + 1].s[0])));
		int method_no_args = i >= 2 && x.t[i - 1].k == T_P && x.t[i - 1].s[0] == '.' &&
		                     x.t[i - 2].k == T_P && x.t[i - 2].s[0] == ')';
		if (p->kind == P_FETCH || p->kind == P_FORK || (p->kind == P_REBOOT && !strcmp(p->name, "reboot"))) {
			on_call(&sc, i, p);
			continue;
		}
		if (!callish && !method_no_args && p->kind == P_UNLINK) {
			sc.unlinks = 1; /* perl's unlink of $_ */
			continue;
		}
		if (!callish && !method_no_args) {
			/* named but not called here: passed around, aliased */
			if (p->kind == P_RUN || p->kind == P_EVAL || p->kind == P_RMTREE || p->kind == P_RMTREE_OPT)
				blind(&sc, BLIND_HIDDEN);
			continue;
		}
		if (sc.lang == TGI_LANG_JS && !strcmp(t->s, "exec") && i >= 2 && x.t[i - 1].k == T_P &&
		    x.t[i - 2].k == T_STR && !x.t[i - 2].s[0])
			continue; /* /re/.exec(s) */
		on_call(&sc, i, p);
		const struct prim *also = find_prim_also(&sc, p);
		if (also && (!also->needs || mentioned(&sc, also->needs)))
			on_call(&sc, i, also);
	}
	/* a download written to a file the code names, or to one it does not */
	if (sc.fetch) {
		r->fetches = 1;
		int named = 0;
		for (size_t k = 0; k < r->n; k++)
			if (r->v[k].kind == TGI_CODE_WRITE || r->v[k].kind == TGI_CODE_DOWNLOAD)
				named = 1;
		for (size_t k = 0, n = r->n; k < n; k++)
			if (r->v[k].kind == TGI_CODE_WRITE)
				effect1(r, TGI_CODE_DOWNLOAD, r->v[k].words.v[0]);
		if (!named)
			r->dl_unknown = 1;
	}
	/* a fork seen before the loop keyword, or in a function that calls
	 * itself; processes started in an endless loop */
	if (sc.subproc && !sc.loop)
		for (size_t i = 0; i + 1 < x.nt && !sc.loop; i++) {
			if (x.t[i].k != T_ID || (strcmp(x.t[i].s, "def") && strcmp(x.t[i].s, "sub") &&
			                         strcmp(x.t[i].s, "function")) || x.t[i + 1].k != T_ID)
				continue;
			size_t calls = 0;
			for (size_t k = 0; k + 1 < x.nt; k++)
				if (k != i + 1 && x.t[k].k == T_ID && !strcmp(x.t[k].s, x.t[i + 1].s) &&
				    ((x.t[k + 1].k == T_P && x.t[k + 1].s[0] == '(') || x.t[k + 1].k == T_NL ||
				     (x.t[k + 1].k == T_P && x.t[k + 1].s[0] == ';')))
					calls++;
			sc.loop = calls >= 2;
		}
	if (sc.loop && sc.subproc && !r->floor)
		r->floor = WHY_FORK;
	if (sc.spawns && endless(&x) && !r->floor)
		r->floor = WHY_FORK;
	/* a walk and a removal: the walked trees are deleted */
	if (sc.unlinks) {
		for (size_t k = 0; k < sc.nwalks; k++)
			effect1(r, TGI_CODE_WALKDEL, sc.walks[k]);
		if (sc.walk_unknown)
			blind(&sc, BLIND_ARG);
	}
	for (size_t k = 0; k < sc.nwalks; k++)
		free(sc.walks[k]);
	/* what the tokens do not show: a dangerous name called in the raw text
	 * more often than the tokens call it */
	if (x.broken)
		blind(&sc, BLIND_HIDDEN);
	for (size_t i = 0; i < TGI_ARRAY_LEN(prims) && !r->blind; i++) {
		const struct prim *p = &prims[i];
		if (!(p->langs & (1u << lang)) || p->kind == P_OPEN || p->kind == P_FETCH || p->kind == P_KILL)
			continue;
		size_t raw = raw_calls(code, len, p->name), toks = 0;
		if (!raw)
			continue;
		for (size_t k = 0; k < x.nt; k++)
			if (x.t[k].k == T_ID && !strcmp(x.t[k].s, p->name))
				toks++;
		if (raw > toks)
			blind(&sc, BLIND_HIDDEN);
	}
	for (size_t i = 0; i < sc.nvars; i++) {
		free(sc.vars[i].name);
		val_free(&sc.vars[i].v);
	}
	free(sc.vars);
	lexer_free(&x);
}

void tgi_code_scan(tgi_lang lang, const char *code, size_t len, tgi_code_report *out)
{
	memset(out, 0, sizeof *out);
	scan_code(lang, code, len, out, 0);
}

void tgi_code_report_free(tgi_code_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		tgi_strv_free(&r->v[i].words);
	free(r->v);
	memset(r, 0, sizeof *r);
}
