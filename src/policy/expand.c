/*
 * expand.c — a bounded evaluation of one command line for the floor
 * (expand.h).
 *
 * Facts.  The split line is read once for what its variables may hold:
 * NAME=value (alone, before a command, after export/declare/typeset/
 * local/readonly), arrays NAME=(a b), `for NAME in WORDS`, `read NAME`
 * (the lines and words of what it reads, when the line says), mapfile,
 * `printf -v`, `set -- ARGS` (the positional parameters), the aliases it
 * defines, whether it sets IFS or CDPATH, and the same inside eval'd
 * strings and alias values.  A value as written may refer to others
 * (`b=$a/x`, `c=$(echo /)`): it is resolved by substitution, a few rounds
 * deep; what stays unresolved makes the variable unknown.
 *
 * Variants.  A variable that a split of the line looks up, or that a text
 * judged later (function bodies, alias values, eval, interpreter code,
 * here-docs) names, takes part: its options are its values, the value it
 * had before the line when some use is not dominated (shell.c says which
 * are, in a first split, the probe), and "unknown" when an assignment was.
 * Every combination of options is a variant; past TGI_EVAL_VARIANTS the
 * line is not judged whole (blind).
 *
 * Lookups.  In a variant a variable is its chosen option; "unknown" and an
 * unknown value before the line keep the expansion as written.  $HOME and
 * $PWD are kept for the floor, which reads them itself (with the home and
 * the directory commands run in), unless the line assigns them; $?, $$,
 * $!, $RANDOM and their kin are numbers.  A command substitution is the
 * output of its text when every command in it prints what the line says.
 *
 * Owns: the facts, the variants, the budget and the feeds.  Must not:
 * judge, run, or read the environment.
 */
#include "policy/expand.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VALUES_MAX   16        /* values of one variable */
#define VALUE_MAX    4096      /* bytes of one value */
#define ROUNDS       4         /* resolution rounds (b=$a, c=$b, …) */
#define SUBST_DEPTH  3         /* command substitutions inside one another */
#define COLLECT_DEPTH 2        /* eval'd strings and aliases read for facts */
#define SPLIT_MARK   '\x01'    /* a raw value whose expansion is split into words too */
#define SUBTEXT_MAX  (256u << 10) /* bytes of texts judged later searched for names */

/* ------------------------------------------------------------------ budget */

void tgi_eval_budget_init(tgi_eval_budget *b)
{
	b->bytes = TGI_EVAL_BYTES;
	b->splits = TGI_EVAL_SPLITS;
	b->why[0] = '\0';
}

static int spend(tgi_eval_budget *b, size_t n)
{
	if (b->why[0])
		return -1;
	if (b->splits == 0 || n > b->bytes) {
		tgi_snprintf(b->why, sizeof b->why,
		             "the line needs more evaluation than the floor does (%u splits, %u bytes)",
		             TGI_EVAL_SPLITS, TGI_EVAL_BYTES);
		return -1;
	}
	b->splits--;
	b->bytes -= n;
	return 0;
}

/* ------------------------------------------------------------------ facts */

/* One value a variable may hold: its fields (a scalar has one). */
typedef struct value {
	char  **f;
	size_t  n;
} value;

typedef struct var {
	char    *name;
	value   *v;            /* known values */
	size_t   nv;
	tgi_strv raw;          /* values as written, still to resolve */
	int      unknown;      /* assigned something the line cannot tell */
	int      initial;      /* the value before the line may be seen */
	int      referenced;   /* takes part in the variants */
	size_t   opts;         /* options in the variants */
	size_t   choice;       /* < nv: that value; else SEL_INITIAL or SEL_UNKNOWN */
} var;

#define SEL_INITIAL ((size_t)-1)
#define SEL_UNKNOWN ((size_t)-2)

typedef struct alias {
	char *name, *value;
} alias;

struct tgi_eval {
	const tgi_cmdline *cl;
	char             *home;
	tgi_strv          env;       /* NAME=value before the line */
	var              *vars;
	size_t            nvars, capvars;
	alias            *aliases;
	size_t            naliases, capaliases;
	tgi_strv          subtexts;  /* texts judged later (bodies, aliases, code) */
	char              ifs[64];
	int               cdpath;
	int               probing;
	int               depth;     /* command substitutions being evaluated */
	size_t            variants;
	tgi_eval_budget  *budget;
	tgi_shell_env     senv;
	const char       *one[1];    /* a field lookup returns */
};

static void value_free(value *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->f[i]);
	free(v->f);
	v->f = NULL;
	v->n = 0;
}

static var *var_get(tgi_eval *e, const char *name, size_t n, int create)
{
	for (size_t i = 0; i < e->nvars; i++)
		if (strlen(e->vars[i].name) == n && !memcmp(e->vars[i].name, name, n))
			return &e->vars[i];
	if (!create || n == 0 || n > 64)
		return NULL;
	if (e->nvars == e->capvars) {
		e->capvars = e->capvars ? e->capvars * 2 : 8;
		e->vars = tgi_xrealloc(e->vars, e->capvars * sizeof *e->vars);
	}
	var *v = &e->vars[e->nvars++];
	memset(v, 0, sizeof *v);
	v->name = tgi_strndup(name, n);
	return v;
}

static int same_value(const value *a, char *const *f, size_t n)
{
	if (a->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a->f[i], f[i]))
			return 0;
	return 1;
}

/* Add a value (copies the fields); past VALUES_MAX the variable is unknown. */
static void add_value(var *v, char *const *f, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < v->nv; i++)
		if (same_value(&v->v[i], f, n))
			return;
	for (size_t i = 0; i < n; i++)
		total += strlen(f[i]);
	if (v->nv >= VALUES_MAX || total > VALUE_MAX) {
		v->unknown = 1;
		return;
	}
	v->v = tgi_xrealloc(v->v, (v->nv + 1) * sizeof *v->v);
	value *nv = &v->v[v->nv++];
	nv->f = tgi_xcalloc(n + 1, sizeof *nv->f);
	nv->n = n;
	for (size_t i = 0; i < n; i++)
		nv->f[i] = tgi_strdup(f[i]);
}

static void add_scalar(var *v, const char *s)
{
	char *one[1] = { (char *)s };
	add_value(v, one, 1);
}

/* A value as written: resolved now when it holds no expansion. */
static void add_raw(tgi_eval *e, const char *name, size_t n, const char *text)
{
	var *v = var_get(e, name, n, 1);
	if (!v)
		return;
	if (!strpbrk(text, "$`"))
		add_scalar(v, text);
	else if (v->raw.n < VALUES_MAX)
		tgi_strv_push(&v->raw, tgi_strdup(text));
	else
		v->unknown = 1;
}

static void mark_unknown(tgi_eval *e, const char *name, size_t n)
{
	var *v = var_get(e, name, n, 1);
	if (v)
		v->unknown = 1;
}

static int is_name(const char *s, size_t n)
{
	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static int in_list(const char *w, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(w, list[i]))
			return 1;
	return 0;
}

/* The fields of an array assignment's value "(a 'b c' d)". */
static int array_fields(tgi_eval *e, const char *val, tgi_strv *out)
{
	size_t n = strlen(val);
	tgi_cmdline cl;
	char err[128];

	if (n < 2 || val[0] != '(' || val[n - 1] != ')')
		return -1;
	if (spend(e->budget, n) < 0 || tgi_shell_split(val + 1, n - 2, &cl, err, sizeof err) < 0)
		return -1;
	for (size_t i = 0; i < cl.n; i++)
		for (size_t k = 0; k < cl.v[i].argc; k++)
			tgi_strv_push(out, tgi_strdup(cl.v[i].argv[k]));
	tgi_cmdline_free(&cl);
	return 0;
}

/* NAME=value or NAME+=value (a word): its value goes to NAME. */
static void assign_word(tgi_eval *e, const char *w)
{
	size_t n = strcspn(w, "+=");
	const char *val;
	tgi_strv fields = { 0 };

	if (!is_name(w, n) || !w[n] || (w[n] == '+' && w[n + 1] != '='))
		return;
	val = w[n] == '+' ? w + n + 2 : w + n + 1;
	if (n == 3 && !memcmp(w, "IFS", 3)) {
		size_t have = strlen(e->ifs);
		for (const char *q = val; *q && have + 1 < sizeof e->ifs; q++)
			if (!strchr(e->ifs, *q))
				e->ifs[have++] = *q, e->ifs[have] = '\0';
	}
	if (n == 6 && !memcmp(w, "CDPATH", 6))
		e->cdpath = 1;
	if (val[0] == '(') {
		var *v = var_get(e, w, n, 1);
		if (v && array_fields(e, val, &fields) == 0 && !strpbrk(val, "$`"))
			add_value(v, fields.v, fields.n);
		else if (v)
			v->unknown = 1;
		tgi_strv_free(&fields);
		return;
	}
	if (w[n] == '+') {
		/* NAME+=x: its value so far, then x */
		char *t = tgi_xmalloc(strlen(val) + n + 4);
		snprintf(t, strlen(val) + n + 4, "${%.*s}%s", (int)n, w, val);
		add_raw(e, w, n, t);
		free(t);
		add_raw(e, w, n, val);
		return;
	}
	add_raw(e, w, n, val);
}

/* The lines and words of a feed, as values of every name given. */
static void feed_values(tgi_eval *e, const tgi_feed *f, char *const *names, size_t nn, int array)
{
	for (size_t k = 0; k < nn; k++) {
		var *v = var_get(e, names[k], strlen(names[k]), 1);
		tgi_strv words = { 0 };
		if (!v)
			continue;
		if (f->unknown)
			v->unknown = 1;
		const char *t = f->text ? f->text : "";
		for (const char *line = t; *line;) {
			size_t ln = strcspn(line, "\n");
			char *l = tgi_strndup(line, ln);
			if (!array)
				add_raw(e, names[k], strlen(names[k]), l);
			for (char *w = l; *w;) {
				w += strspn(w, " \t\r");
				size_t wn = strcspn(w, " \t\r");
				if (wn) {
					char *word = tgi_strndup(w, wn);
					if (!array)
						add_raw(e, names[k], strlen(names[k]), word);
					if (array && strpbrk(word, "$`"))
						v->unknown = 1;
					tgi_strv_push(&words, word);
				}
				w += wn;
			}
			free(l);
			line += ln + (line[ln] == '\n');
		}
		if (!t[0] && !array)
			add_scalar(v, "");
		if (array)
			add_value(v, words.v, words.n);
		tgi_strv_free(&words);
	}
}

static void collect(tgi_eval *e, const tgi_cmdline *cl, int depth);

/* Facts inside a text the same shell runs (an eval'd string, an alias). */
static void collect_text(tgi_eval *e, const char *text, int depth)
{
	tgi_cmdline sub;
	char err[128];

	if (depth >= COLLECT_DEPTH || spend(e->budget, strlen(text)) < 0)
		return;
	if (tgi_shell_split(text, strlen(text), &sub, err, sizeof err) < 0)
		return;
	collect(e, &sub, depth + 1);
	tgi_cmdline_free(&sub);
}

static void add_alias(tgi_eval *e, const char *name, size_t n, const char *text)
{
	if (e->naliases >= 256)
		return;
	if (e->naliases == e->capaliases) {
		e->capaliases = e->capaliases ? e->capaliases * 2 : 4;
		e->aliases = tgi_xrealloc(e->aliases, e->capaliases * sizeof *e->aliases);
	}
	e->aliases[e->naliases].name = tgi_strndup(name, n);
	e->aliases[e->naliases].value = tgi_strdup(text);
	e->naliases++;
	tgi_strv_push(&e->subtexts, tgi_strdup(text));
}

/* Programs whose words are a text judged later (code, scripts). */
static const char *const code_runners[] = {
	"eval", "xargs", "awk", "gawk", "mawk", "nawk", "perl", "ruby", "node", "nodejs", "php", "lua",
	"deno", "bun", "Rscript", "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "source", ".",
	NULL,
};

static void collect(tgi_eval *e, const tgi_cmdline *cl, int depth)
{
	static const char *const declares[] = { "export", "declare", "typeset", "local", "readonly",
		                                 NULL };
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		size_t p = tgi_shell_program(c);
		const char *prog = p < c->argc ? tgi_shell_basename(c->argv[p]) : "";

		for (size_t k = 0; k < c->nassigns; k++)
			assign_word(e, c->assigns[k]);
		for (size_t k = 0; k < c->nredirs; k++) {
			if (c->redirs[k].body)
				tgi_strv_push(&e->subtexts, tgi_strdup(c->redirs[k].body));
			if (!strcmp(c->redirs[k].op, "<<<") && c->redirs[k].target)
				tgi_strv_push(&e->subtexts, tgi_strdup(c->redirs[k].target));
		}
		if (!c->argc)
			continue;
		/* words of programs that run text: judged later, with these names */
		if (in_list(prog, code_runners) || !strncmp(prog, "python", 6) || !strncmp(prog, "pypy", 4))
			for (size_t k = p; k < c->argc; k++)
				if (strchr(c->argv[k], '$'))
					tgi_strv_push(&e->subtexts, tgi_strdup(c->argv[k]));
		const char *a0 = c->argv[0];
		if (in_list(a0, declares)) {
			for (size_t k = 1; k < c->argc; k++)
				if (c->argv[k][0] != '-')
					assign_word(e, c->argv[k]);
		} else if ((!strcmp(a0, "for") || !strcmp(a0, "select")) && c->argc > 1) {
			const char *nm = c->argv[1];
			var *v = var_get(e, nm, strlen(nm), 1);
			if (!v)
				continue;
			if (c->argc > 2 && !strcmp(c->argv[2], "in")) {
				for (size_t k = 3; k < c->argc; k++) {
					add_raw(e, nm, strlen(nm), c->argv[k]);
					if (strpbrk(c->argv[k], "$`")) {
						/* unquoted, what it expands to is split too */
						char *t = tgi_xmalloc(strlen(c->argv[k]) + 2);
						t[0] = SPLIT_MARK;
						strcpy(t + 1, c->argv[k]);
						add_raw(e, nm, strlen(nm), t);
						free(t);
					}
				}
			} else {
				add_raw(e, nm, strlen(nm), "$@");
			}
		} else if (!strcmp(a0, "read") || !strcmp(a0, "mapfile") || !strcmp(a0, "readarray")) {
			int rd = !strcmp(a0, "read"), array = !rd;
			const char *vals = rd ? "dinNptu" : "dnOsuCc";
			tgi_strv names = { 0 };
			for (size_t k = 1; k < c->argc; k++) {
				const char *a = c->argv[k];
				if (a[0] != '-' || !a[1]) {
					tgi_strv_push(&names, tgi_strdup(a));
					continue;
				}
				for (const char *q = a + 1; *q; q++) {
					if (*q == 'a' && rd) {
						const char *nm = q[1] ? q + 1 : k + 1 < c->argc ? c->argv[k + 1] : "";
						tgi_strv_push(&names, tgi_strdup(nm));
						array = 1;
						k += !q[1];
						break;
					}
					if (strchr(vals, *q)) {
						k += !q[1];
						break;
					}
				}
			}
			if (!names.n)
				tgi_strv_push(&names, tgi_strdup(rd ? "REPLY" : "MAPFILE"));
			tgi_feed f = { 0 };
			tgi_eval_stdin(e, cl, i, &f);
			feed_values(e, &f, names.v, names.n, array);
			tgi_feed_free(&f);
			tgi_strv_free(&names);
		} else if (!strcmp(a0, "printf") && c->argc > 2 && !strcmp(c->argv[1], "-v")) {
			tgi_feed f = { 0 };
			tgi_eval_stdout(e, cl, i, &f); /* printf -v renders as printf would print */
			var *v = var_get(e, c->argv[2], strlen(c->argv[2]), 1);
			if (v && (f.unknown || strpbrk(f.text ? f.text : "", "$`")))
				v->unknown = 1;
			else if (v)
				add_scalar(v, f.text ? f.text : "");
			tgi_feed_free(&f);
		} else if (!strcmp(a0, "set")) {
			size_t k = 1;
			while (k < c->argc && (c->argv[k][0] == '-' || c->argv[k][0] == '+') &&
			       strcmp(c->argv[k], "--"))
				k += (c->argv[k][1] == 'o' && !c->argv[k][2]) ? 2 : 1;
			if (k < c->argc && !strcmp(c->argv[k], "--"))
				k++;
			else if (k >= c->argc)
				continue;
			char num[24];
			snprintf(num, sizeof num, "%zu", c->argc - k);
			add_raw(e, "#", 1, num);
			for (size_t j = k; j < c->argc && j - k < 9; j++) {
				char nm[4];
				snprintf(nm, sizeof nm, "%zu", j - k + 1);
				add_raw(e, nm, strlen(nm), c->argv[j]);
			}
			/* (each var_get may move the table: one at a time) */
			var *all = var_get(e, "@", 1, 1);
			if (all)
				add_value(all, c->argv + k, c->argc - k);
			var *star = var_get(e, "*", 1, 1);
			if (star)
				add_value(star, c->argv + k, c->argc - k);
		} else if (!strcmp(a0, "shift")) {
			/* $2 becomes $1: every positional value may be any of them */
			for (size_t a = 1; a <= 9; a++)
				for (size_t b = 1; b <= 9; b++) {
					char na[4], nb[4];
					snprintf(na, sizeof na, "%zu", a);
					snprintf(nb, sizeof nb, "%zu", b);
					if (a == b || !var_get(e, na, strlen(na), 0))
						continue;
					var *vb = var_get(e, nb, strlen(nb), 1); /* may move the table */
					var *va = var_get(e, na, strlen(na), 0);
					for (size_t x = 0; va && vb && x < va->nv; x++)
						add_value(vb, va->v[x].f, va->v[x].n);
				}
		} else if (!strcmp(a0, "alias")) {
			for (size_t k = 1; k < c->argc; k++) {
				const char *w = c->argv[k], *eq = strchr(w, '=');
				if (w[0] == '-' || !eq)
					continue;
				add_alias(e, w, (size_t)(eq - w), eq + 1);
				collect_text(e, eq + 1, depth);
			}
		} else if (!strcmp(a0, "getopts") && c->argc > 2) {
			mark_unknown(e, c->argv[2], strlen(c->argv[2]));
		} else if (!strcmp(a0, "cd") || !strcmp(a0, "pushd")) {
			/* nothing: the floor follows cd itself */
		}
		if (!strcmp(prog, "eval") && p + 1 < c->argc) {
			tgi_buf t;
			tgi_buf_init(&t, TGI_SHELL_MAX);
			for (size_t k = p + 1; k < c->argc; k++)
				if ((t.len && tgi_buf_puts(&t, " ") < 0) || tgi_buf_puts(&t, c->argv[k]) < 0)
					break;
			char *text = tgi_buf_steal(&t);
			collect_text(e, text, depth);
			free(text);
		}
	}
	for (size_t i = 0; i < cl->nfuncs; i++)
		tgi_strv_push(&e->subtexts, tgi_strdup(cl->funcs[i].body));
}

static const char *env_value(const tgi_eval *e, const char *name);

/* ------------------------------------------------------------------ resolution */

/* The end of a `$(` … `)` or `${` … `}` starting at s (at the '('/'{'),
 * quotes skipped; NULL when it does not close. */
static const char *closing(const char *s)
{
	char open = *s, close = open == '(' ? ')' : '}';
	int level = 0;
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
		} else if (*s == '\'') {
			const char *q = strchr(s + 1, '\'');
			if (!q)
				return NULL;
			s = q;
		} else if (*s == open) {
			level++;
		} else if (*s == close && --level == 0) {
			return s;
		}
	}
	return NULL;
}

static int subst_text(tgi_eval *e, const char *text, size_t len, char **out);

/*
 * Every text t may stand for once its expansions are replaced: $NAME and
 * ${NAME} by each value NAME has, $(…) and `…` by what they print when the
 * line says.  Appends to out; -1 when something stays unknown.
 */
static int resolve_text(tgi_eval *e, const char *t, tgi_strv *out, int depth)
{
	const char *d = strpbrk(t, "$`");
	if (!d) {
		if (out->n < VALUES_MAX)
			tgi_strv_push(out, tgi_strdup(t));
		return out->n < VALUES_MAX ? 0 : -1;
	}
	if (depth > 8)
		return -1;
	tgi_strv mids = { 0 };
	const char *rest = NULL;
	int rc = 0;
	if (d[0] == '$' && d[1] != '(' && d[1] != '{' && !strchr("@*#?$!0123456789", d[1] ? d[1] : ' ') &&
	    !((d[1] >= 'a' && d[1] <= 'z') || (d[1] >= 'A' && d[1] <= 'Z') || d[1] == '_')) {
		/* a '$' that starts no expansion is itself */
		tgi_strv_push(&mids, tgi_strdup("$"));
		rest = d + 1;
	} else if (d[0] == '`' || (d[1] == '(' && d[2] != '(')) {
		const char *end = d[0] == '`' ? strchr(d + 1, '`') : closing(d + 1);
		char *val = NULL;
		if (!end)
			return -1;
		const char *in = d[0] == '`' ? d + 1 : d + 2;
		if (subst_text(e, in, (size_t)(end - in), &val) != 1) {
			free(val);
			return -1;
		}
		size_t n = strlen(val);
		while (n && val[n - 1] == '\n')
			val[--n] = '\0';
		tgi_strv_push(&mids, val);
		rest = end + 1;
	} else {
		const char *nm = d + 1, *ne;
		int braced = *nm == '{';
		if (braced)
			nm++;
		ne = nm;
		while ((*ne >= 'a' && *ne <= 'z') || (*ne >= 'A' && *ne <= 'Z') || *ne == '_' ||
		       (ne > nm && *ne >= '0' && *ne <= '9'))
			ne++;
		if (ne == nm && *nm && strchr("@*#?$!0123456789", *nm))
			ne = nm + 1;
		if (ne == nm || (braced && *ne != '}'))
			return -1;
		var *v = var_get(e, nm, (size_t)(ne - nm), 0);
		char known[80];
		tgi_snprintf(known, sizeof known, "%.*s", (int)(ne - nm), nm);
		if (!v && env_value(e, known)) {
			tgi_strv_push(&mids, tgi_strdup(env_value(e, known)));
		} else if (!v && (!strcmp(known, "HOME") || !strcmp(known, "PWD"))) {
			/* kept as written: the floor reads these itself */
			tgi_strv_push(&mids, tgi_strdup(known[0] == 'H' ? "$HOME" : "$PWD"));
		} else if (v && v->nv && !v->unknown) {
			for (size_t k = 0; k < v->nv; k++) {
				tgi_buf b;
				tgi_buf_init(&b, VALUE_MAX);
				for (size_t j = 0; j < v->v[k].n; j++)
					if (j)
						tgi_buf_puts(&b, " "), tgi_buf_puts(&b, v->v[k].f[j]);
					else
						tgi_buf_puts(&b, v->v[k].f[j]);
				tgi_strv_push(&mids, tgi_buf_steal(&b));
			}
		} else if ((size_t)(ne - nm) == 1 && strchr("?$!#", *nm)) {
			tgi_strv_push(&mids, tgi_strdup("0"));
		} else {
			return -1;
		}
		rest = ne + braced;
	}
	for (size_t k = 0; k < mids.n && rc == 0; k++) {
		tgi_strv tails = { 0 };
		rc = resolve_text(e, rest, &tails, depth + 1);
		for (size_t j = 0; rc == 0 && j < tails.n; j++) {
			size_t n = (size_t)(d - t) + strlen(mids.v[k]) + strlen(tails.v[j]);
			if (n > VALUE_MAX || out->n >= VALUES_MAX) {
				rc = -1;
				break;
			}
			char *s = tgi_xmalloc(n + 1);
			snprintf(s, n + 1, "%.*s%s%s", (int)(d - t), t, mids.v[k], tails.v[j]);
			tgi_strv_push(out, s);
		}
		tgi_strv_free(&tails);
	}
	tgi_strv_free(&mids);
	return rc;
}

/* Resolve the values as written, a few rounds (b=$a needs a first). */
static void resolve(tgi_eval *e)
{
	for (int round = 0; round < ROUNDS; round++) {
		int progress = 0;
		for (size_t i = 0; i < e->nvars; i++) {
			var *v = &e->vars[i];
			for (size_t k = 0; k < v->raw.n; k++) {
				tgi_strv got = { 0 };
				const char *r = v->raw.v[k];
				int split = r[0] == SPLIT_MARK;
				if (resolve_text(e, r + split, &got, 0) < 0) {
					tgi_strv_free(&got);
					continue;
				}
				size_t before = v->nv;
				for (size_t j = 0; j < got.n; j++) {
					if (!split) {
						add_scalar(v, got.v[j]);
						continue;
					}
					for (char *w = got.v[j]; *w;) {
						w += strspn(w, " \t\n");
						size_t wn = strcspn(w, " \t\n");
						if (wn) {
							char *word = tgi_strndup(w, wn);
							add_scalar(v, word);
							free(word);
						}
						w += wn;
					}
				}
				progress |= v->nv != before;
				tgi_strv_free(&got);
			}
		}
		if (!progress)
			break;
	}
	/* what stays unresolved after the last round is unknown */
	for (size_t i = 0; i < e->nvars; i++) {
		var *v = &e->vars[i];
		for (size_t k = 0; k < v->raw.n; k++) {
			tgi_strv got = { 0 };
			if (resolve_text(e, v->raw.v[k] + (v->raw.v[k][0] == SPLIT_MARK), &got, 0) < 0)
				v->unknown = 1;
			tgi_strv_free(&got);
		}
	}
}

/* ------------------------------------------------------------------ lookups */

/* Variables whose value is a number the floor need not know. */
static const char *const numeric[] = { "RANDOM", "SECONDS", "LINENO", "UID", "EUID", "PPID",
	                               "BASHPID", "SRANDOM", "EPOCHSECONDS", "SHLVL", "OPTIND",
	                               NULL };

/* A variable's value before the line: the call's env, else what the gate
 * itself gives every command (TMPDIR is a private directory under /tmp,
 * the sandbox's own /tmp under bubblewrap; TOOLGATE_OP_ID an id). */
static const char *env_value(const tgi_eval *e, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < e->env.n; i++)
		if (!strncmp(e->env.v[i], name, n) && e->env.v[i][n] == '=')
			return e->env.v[i] + n + 1;
	if (!strcmp(name, "TMPDIR"))
		return "/tmp/toolgate-shell";
	if (!strcmp(name, "TOOLGATE_OP_ID"))
		return "op";
	return NULL;
}

static int lookup(void *ctx, const char *name, int dominated, int raw, const char *const **fields,
                  size_t *n)
{
	tgi_eval *e = ctx;
	static const char *const zero[] = { "0" }, *const flags[] = { "hB" };
	var *v = var_get(e, name, strlen(name), 0);

	if (v && e->probing) {
		v->referenced = 1;
		if (!dominated)
			v->initial = 1;
	}
	if (v && (v->opts || e->probing)) {
		size_t c = v->choice;
		if (c == SEL_INITIAL && dominated && v->nv)
			c = 0; /* an assignment always ran first: its values are the other variants */
		if (c < v->nv) {
			const value *val = &v->v[c];
			*fields = (const char *const *)val->f;
			*n = val->n;
			return 1;
		}
		if (c != SEL_INITIAL)
			return 0; /* unknown: kept as written */
	}
	/* the value before the line */
	const char *ev = env_value(e, name);
	if (ev) {
		e->one[0] = ev;
		*fields = e->one;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "HOME") && raw && e->home) {
		e->one[0] = e->home;
		*fields = e->one;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "?") || !strcmp(name, "$") || !strcmp(name, "!") || in_list(name, numeric)) {
		*fields = zero;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "-")) {
		*fields = flags;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "#") && !v) {
		*fields = zero;
		*n = 1;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ splits */

static int split_env(tgi_eval *e, const char *text, size_t len, const char *const *params,
                     size_t nparams, tgi_cmdline *out, char *err, size_t errlen)
{
	if (spend(e->budget, len + 1) < 0) {
		tgi_snprintf(err, errlen, "%s", e->budget->why);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return tgi_shell_split_env(text, len, &e->senv, params, nparams, out, err, errlen);
}

/* What the text of a command substitution prints, when the line says. */
static int subst_text(tgi_eval *e, const char *text, size_t len, char **out)
{
	tgi_cmdline cl;
	char err[128];
	tgi_buf b;
	int known = 1;

	*out = NULL;
	if (e->depth >= SUBST_DEPTH)
		return 0;
	e->depth++;
	if (split_env(e, text, len, NULL, 0, &cl, err, sizeof err) < 0) {
		e->depth--;
		return 0;
	}
	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (size_t i = 0; i < cl.n && known; i++) {
		/* a command whose output another in the line reads is not printed */
		if (i + 1 < cl.n && (cl.v[i + 1].flags & TGI_CMD_PIPED_IN) && cl.v[i + 1].from <= i)
			continue;
		tgi_feed f = { 0 };
		tgi_eval_stdout(e, &cl, i, &f);
		known = !f.unknown && tgi_buf_puts(&b, f.text ? f.text : "") == 0;
		tgi_feed_free(&f);
	}
	size_t ncmds = cl.n;
	tgi_cmdline_free(&cl);
	e->depth--;
	if (!known || !ncmds || b.over) {
		tgi_buf_free(&b);
		return 0;
	}
	*out = tgi_buf_steal(&b);
	return 1;
}

static int subst(void *ctx, const char *text, size_t len, char **out)
{
	return subst_text(ctx, text, len, out);
}

/* ------------------------------------------------------------------ the evaluation */

static int mentions(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *q = strchr(text, '$'); q; q = strchr(q + 1, '$')) {
		const char *s = q + 1 + (q[1] == '{');
		if (!strncmp(s, name, n) &&
		    !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_' ||
		      (s[n] >= '0' && s[n] <= '9' && !(name[0] >= '0' && name[0] <= '9'))))
			return 1;
		if (s[0] == '@' && name[0] >= '1' && name[0] <= '9')
			return 1;
	}
	return 0;
}

tgi_eval *tgi_eval_new(const tgi_cmdline *cl, const char *const *env, size_t nenv,
                       const char *home, tgi_eval_budget *budget)
{
	tgi_eval *e = tgi_xcalloc(1, sizeof *e);
	e->cl = cl;
	e->home = home ? tgi_strdup(home) : NULL;
	e->budget = budget;
	for (size_t i = 0; env && i < nenv; i++)
		if (env[i] && strchr(env[i], '='))
			tgi_strv_push(&e->env, tgi_strdup(env[i]));
	e->senv.ctx = e;
	e->senv.lookup = lookup;
	e->senv.subst = subst;
	collect(e, cl, 0);
	resolve(e);
	if (e->ifs[0]) {
		char all[80];
		tgi_snprintf(all, sizeof all, " \t\n%s", e->ifs);
		memcpy(e->ifs, all, strlen(all) + 1 < sizeof e->ifs ? strlen(all) + 1 : sizeof e->ifs);
		e->ifs[sizeof e->ifs - 1] = '\0';
		e->senv.ifs = e->ifs;
	}
	return e;
}

void tgi_eval_free(tgi_eval *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nvars; i++) {
		var *v = &e->vars[i];
		for (size_t k = 0; k < v->nv; k++)
			value_free(&v->v[k]);
		free(v->v);
		tgi_strv_free(&v->raw);
		free(v->name);
	}
	free(e->vars);
	for (size_t i = 0; i < e->naliases; i++) {
		free(e->aliases[i].name);
		free(e->aliases[i].value);
	}
	free(e->aliases);
	tgi_strv_free(&e->subtexts);
	tgi_strv_free(&e->env);
	free(e->home);
	free(e);
}

size_t tgi_eval_variants(tgi_eval *e)
{
	tgi_cmdline probe;
	char err[128];
	size_t total = 1;

	if (e->variants)
		return e->variants;
	/* the probe: every variable at its first value (or kept), noting which
	 * are looked up and where no assignment dominates a use */
	for (size_t i = 0; i < e->nvars; i++) {
		var *v = &e->vars[i];
		v->opts = 0;
		v->referenced = 0;
		v->choice = v->nv ? 0 : SEL_UNKNOWN;
	}
	e->probing = 1;
	int rc = tgi_eval_line(e, &probe, err, sizeof err);
	e->probing = 0;
	if (rc == 0)
		tgi_cmdline_free(&probe);
	if (e->budget->why[0])
		return 0;
	size_t sub = 0;
	for (size_t k = 0; k < e->subtexts.n; k++)
		sub += strlen(e->subtexts.v[k]);
	for (size_t i = 0; i < e->nvars; i++) {
		var *v = &e->vars[i];
		/* texts judged later name it: they may use the value from before
		 * (past SUBTEXT_MAX bytes of them, every variable is taken to) */
		for (size_t k = 0; k < e->subtexts.n && !(v->referenced && v->initial); k++)
			if (sub > SUBTEXT_MAX || mentions(e->subtexts.v[k], v->name) ||
			    (!strcmp(v->name, "HOME") && strchr(e->subtexts.v[k], '~'))) {
				v->referenced = 1;
				v->initial = 1;
			}
		if (!v->referenced)
			continue;
		/* its values, then the value before the line, then unknown (the
		 * two are one option when the value before is kept as written) */
		v->opts = v->nv + (v->initial ? 1 : 0) + (v->unknown || !v->nv ? 1 : 0);
		if (v->initial && (v->unknown || !v->nv) && !env_value(e, v->name) &&
		    strcmp(v->name, "HOME") != 0)
			v->opts--;
		if (!v->opts)
			v->opts = 1;
		if (total * v->opts > TGI_EVAL_VARIANTS) {
			tgi_snprintf(e->budget->why, sizeof e->budget->why,
			             "the variables of the line take more than %d combinations of values",
			             TGI_EVAL_VARIANTS);
			return 0;
		}
		total *= v->opts;
	}
	e->variants = total;
	tgi_eval_select(e, 0);
	return total;
}

void tgi_eval_select(tgi_eval *e, size_t k)
{
	for (size_t i = 0; i < e->nvars; i++) {
		var *v = &e->vars[i];
		if (!v->opts)
			continue;
		size_t c = k % v->opts;
		k /= v->opts;
		v->choice = c < v->nv ? c : (c == v->nv && v->initial) ? SEL_INITIAL : SEL_UNKNOWN;
	}
}

int tgi_eval_line(tgi_eval *e, tgi_cmdline *out, char *err, size_t errlen)
{
	const tgi_cmdline *cl = e->cl;
	if (cl->srcv) {
		size_t n = 0;
		for (size_t i = 0; i < cl->srcc; i++)
			n += strlen(cl->srcv[i]) + 1;
		if (spend(e->budget, n) < 0) {
			tgi_snprintf(err, errlen, "%s", e->budget->why);
			memset(out, 0, sizeof *out);
			return -1;
		}
		return tgi_shell_from_argv_env((const char *const *)cl->srcv, cl->srcc, &e->senv, out, err,
		                               errlen);
	}
	return split_env(e, cl->src ? cl->src : "", cl->src ? cl->srclen : 0, NULL, 0, out, err,
	                 errlen);
}

int tgi_eval_split(tgi_eval *e, const char *text, size_t len, const char *const *params,
                   size_t nparams, tgi_cmdline *out, char *err, size_t errlen)
{
	return split_env(e, text, len, params, nparams, out, err, errlen);
}

int tgi_eval_argv(tgi_eval *e, const char *const *argv, size_t argc, tgi_cmdline *out, char *err,
                  size_t errlen)
{
	size_t n = 0;
	for (size_t i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	if (spend(e->budget, n) < 0) {
		tgi_snprintf(err, errlen, "%s", e->budget->why);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return tgi_shell_from_argv_env(argv, argc, &e->senv, out, err, errlen);
}

int tgi_eval_budget_spend(tgi_eval_budget *b, size_t n)
{
	return spend(b, n);
}

const char *tgi_eval_blind(const tgi_eval *e)
{
	return e && e->budget->why[0] ? e->budget->why : NULL;
}

const char *tgi_eval_alias(const tgi_eval *e, const char *name, size_t k)
{
	for (size_t i = 0; i < e->naliases; i++)
		if (!strcmp(e->aliases[i].name, name) && k-- == 0)
			return e->aliases[i].value;
	return NULL;
}

const char *tgi_eval_func(const tgi_eval *e, const char *name, size_t k)
{
	const tgi_cmdline *cl = e->cl;
	for (size_t i = 0; i < cl->nfuncs; i++)
		if (!strcmp(cl->funcs[i].name, name) && k-- == 0)
			return cl->funcs[i].body;
	return NULL;
}

int tgi_eval_cdpath(const tgi_eval *e)
{
	return e->cdpath || env_value(e, "CDPATH") != NULL;
}

/* ------------------------------------------------------------------ feeds */

/* The buffer's text, or NULL when it overflowed (the text is then not
 * what the command prints: the feed is unknown). */
static char *steal_known(tgi_buf *b)
{
	if (b->over) {
		tgi_buf_free(b);
		return NULL;
	}
	return tgi_buf_steal(b);
}

void tgi_feed_free(tgi_feed *f)
{
	free(f->text);
	f->text = NULL;
	f->unknown = 0;
}

static void feed_set(tgi_feed *f, char *text, int unknown)
{
	free(f->text);
	f->text = text;
	f->unknown = unknown;
}

/* One escape sequence of echo -e / printf %b / a printf format at s
 * (after the backslash): the byte(s) into b, the characters read. */
static size_t escape(const char *s, tgi_buf *b, int octal0)
{
	char c = *s, out;
	size_t used = 1;
	switch (c) {
	case 'n': out = '\n'; break;
	case 't': out = '\t'; break;
	case 'r': out = '\r'; break;
	case 'a': out = '\a'; break;
	case 'b': out = '\b'; break;
	case 'f': out = '\f'; break;
	case 'v': out = '\v'; break;
	case 'e': case 'E': out = 27; break;
	case '\\': out = '\\'; break;
	case '"': out = '"'; break;
	case '\'': out = '\''; break;
	case 'x': {
		unsigned v = 0;
		size_t k = 1;
		for (; k < 3 && strchr("0123456789abcdefABCDEF", s[k]) && s[k]; k++)
			v = v * 16 + (unsigned)(s[k] <= '9' ? s[k] - '0' : (s[k] | 32) - 'a' + 10);
		if (k == 1) {
			tgi_buf_puts(b, "\\x");
			return 1;
		}
		out = (char)v;
		used = k;
		break;
	}
	default:
		if (c >= '0' && c <= '7') {
			unsigned v = 0;
			size_t k = 0, max = (octal0 && c == '0') ? 4 : 3;
			for (; k < max && s[k] >= '0' && s[k] <= '7'; k++)
				v = v * 8 + (unsigned)(s[k] - '0');
			out = (char)(v & 0xff);
			used = k;
			break;
		}
		tgi_buf_append(b, "\\", 1);
		if (c)
			tgi_buf_append(b, &c, 1);
		return c ? 1 : 0;
	}
	if (out)
		tgi_buf_append(b, &out, 1);
	return used;
}

static void put_escaped(tgi_buf *b, const char *s, int octal0)
{
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			if (s[1] == 'c')
				return;
			s += escape(s + 1, b, octal0);
		} else {
			tgi_buf_append(b, s, 1);
		}
	}
}

/* echo's output: the words, then a newline (-n none); escapes read too,
 * as dash's echo reads them. */
static char *render_echo(char *const *a, size_t n)
{
	tgi_buf b;
	size_t k = 0;
	int nl = 1;

	while (k < n && a[k][0] == '-' && a[k][1] && a[k][strspn(a[k] + 1, "neE") + 1] == '\0') {
		if (strchr(a[k], 'n'))
			nl = 0;
		k++;
	}
	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (size_t i = k; i < n; i++) {
		if (i > k)
			tgi_buf_puts(&b, " ");
		put_escaped(&b, a[i], 1);
	}
	if (nl)
		tgi_buf_puts(&b, "\n");
	return steal_known(&b);
}

/* printf FORMAT ARGS: conversions take the arguments in turn, the format
 * is used again while arguments remain. */
static char *render_printf(char *const *a, size_t n)
{
	tgi_buf b;
	size_t k = 1;

	if (n == 0)
		return tgi_strdup("");
	const char *fmt = a[0];
	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (int pass = 0; pass < 64; pass++) {
		size_t before = k;
		for (const char *s = fmt; *s; s++) {
			if (*s == '\\' && s[1]) {
				s += escape(s + 1, &b, 0);
				continue;
			}
			if (*s != '%') {
				tgi_buf_append(&b, s, 1);
				continue;
			}
			s++;
			if (*s == '%') {
				tgi_buf_puts(&b, "%");
				continue;
			}
			s += strspn(s, "-+ #0123456789.*");
			const char *arg = k < n ? a[k++] : "";
			if (*s == 'b')
				put_escaped(&b, arg, 1);
			else if (*s == 'c')
				tgi_buf_append(&b, arg, arg[0] ? 1 : 0);
			else if (*s)
				tgi_buf_puts(&b, arg);
			if (!*s)
				break;
		}
		if (k >= n || k == before)
			break;
	}
	return steal_known(&b);
}

/* Standard base64, blanks ignored: the bytes, or NULL when it is not. */
static char *base64_decode(const char *s)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	tgi_buf b;
	unsigned acc = 0;
	int bits = 0;

	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (; *s; s++) {
		if (strchr(" \t\r\n=", *s))
			continue;
		const char *p = strchr(alpha, *s);
		if (!p || !*s) {
			tgi_buf_free(&b);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)(p - alpha);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			char c = (char)((acc >> bits) & 0xff);
			if (c)
				tgi_buf_append(&b, &c, 1);
		}
	}
	return steal_known(&b);
}

static char *hex_decode(const char *s)
{
	tgi_buf b;
	int half = -1;

	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (; *s; s++) {
		int v = *s >= '0' && *s <= '9' ? *s - '0' : (*s | 32) >= 'a' && (*s | 32) <= 'f' ? (*s | 32) - 'a' + 10 : -1;
		if (v < 0)
			continue;
		if (half < 0) {
			half = v;
		} else {
			char c = (char)(half * 16 + v);
			if (c)
				tgi_buf_append(&b, &c, 1);
			half = -1;
		}
	}
	return steal_known(&b);
}

static char *reverse_lines(const char *s)
{
	tgi_buf b;
	tgi_buf_init(&b, TGI_EVAL_FEED);
	while (*s) {
		size_t n = strcspn(s, "\n");
		for (size_t i = n; i-- > 0;)
			tgi_buf_append(&b, s + i, 1);
		if (s[n] == '\n')
			tgi_buf_puts(&b, "\n");
		s += n + (s[n] == '\n');
	}
	return steal_known(&b);
}

/* A tr set: ranges (a-z) and escapes expanded; NULL for classes. */
static char *tr_set(const char *s)
{
	tgi_buf b;
	tgi_buf_init(&b, 4096);
	for (; *s; s++) {
		if (*s == '[' && (s[1] == ':' || s[1] == '=')) {
			tgi_buf_free(&b);
			return NULL;
		}
		if (*s == '\\' && s[1]) {
			s += escape(s + 1, &b, 0);
			continue;
		}
		if (s[1] == '-' && s[2] && (unsigned char)s[2] >= (unsigned char)s[0]) {
			for (unsigned c = (unsigned char)s[0]; c <= (unsigned char)s[2]; c++) {
				char ch = (char)c;
				tgi_buf_append(&b, &ch, 1);
			}
			s += 2;
			continue;
		}
		tgi_buf_append(&b, s, 1);
	}
	return tgi_buf_steal(&b);
}

/* tr SET1 SET2 / tr -d SET1 on the input; NULL when it cannot tell. */
static char *render_tr(char *const *a, size_t n, const char *in)
{
	int del = 0;
	size_t k = 0;
	while (k < n && a[k][0] == '-' && a[k][1]) {
		if (strchr(a[k], 'c') || strchr(a[k], 'C') || strchr(a[k], 's'))
			return NULL;
		del |= strchr(a[k], 'd') != NULL;
		k++;
	}
	if (k >= n || (!del && k + 2 != n) || (del && k + 1 != n))
		return NULL;
	char *s1 = tr_set(a[k]), *s2 = del ? tgi_strdup("") : tr_set(a[k + 1]);
	if (!s1 || !s2) {
		free(s1);
		free(s2);
		return NULL;
	}
	size_t l1 = strlen(s1), l2 = strlen(s2);
	tgi_buf b;
	tgi_buf_init(&b, TGI_EVAL_FEED);
	for (const char *q = in; *q; q++) {
		const char *hit = memchr(s1, *q, l1);
		if (!hit) {
			tgi_buf_append(&b, q, 1);
		} else if (!del && l2) {
			size_t at = (size_t)(hit - s1);
			tgi_buf_append(&b, &s2[at < l2 ? at : l2 - 1], 1);
		}
	}
	free(s1);
	free(s2);
	return steal_known(&b);
}

/* Is xargs among the wrappers before the program (its output is then the
 * program's, run on words the floor expands apart)? */
static int wrapped_by_xargs(const tgi_cmd *c, size_t p)
{
	for (size_t i = 0; i < p && i < c->argc; i++)
		if (!strcmp(tgi_shell_basename(c->argv[i]), "xargs"))
			return 1;
	return 0;
}

/* Does the command send fd 1 to a file? */
static int stdout_redirected(const tgi_cmd *c)
{
	for (size_t i = 0; i < c->nredirs; i++) {
		const tgi_redir *r = &c->redirs[i];
		if ((r->op[0] == '>' || (r->op[0] == '&' && r->op[1] == '>')) && (r->fd == -1 || r->fd == 1) &&
		    strcmp(r->op, ">&") != 0)
			return 1;
	}
	return 0;
}

/* Operands (words not starting with '-'), after the program. */
static size_t operands_after(const tgi_cmd *c, size_t p)
{
	size_t n = 0;
	for (size_t i = p + 1; i < c->argc; i++)
		if (c->argv[i][0] != '-' || !c->argv[i][1])
			n++;
	return n;
}

static int has_opt(const tgi_cmd *c, size_t p, char o, const char *lng)
{
	for (size_t i = p + 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		if (a[0] != '-' || !a[1])
			continue;
		if (a[1] == '-') {
			if (lng && !strcmp(a, lng))
				return 1;
		} else if (strchr(a + 1, o)) {
			return 1;
		}
	}
	return 0;
}

static const char *const silent[] = { "true", "false", ":", "cd", "pushd", "popd", "export",
	                              "declare", "typeset", "local", "readonly", "read", "set",
	                              "unset", "alias", "unalias", "shift", "mapfile", "readarray",
	                              "test", "[", "[[", "mkdir", "touch", "rm", "chmod", "sleep",
	                              NULL };
static const char *const passing[] = { "head", "tail", "sort", "uniq", "tac", "shuf", "cat",
	                               "grep", "egrep", "fgrep", "dos2unix", NULL };

static void output(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out, int redirected);

void tgi_eval_stdout(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out)
{
	output(e, cl, i, out, 1);
}

void tgi_eval_prints(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out)
{
	output(e, cl, i, out, 0);
}

static void output(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out, int redirected)
{
	const tgi_cmd *c = &cl->v[i];
	size_t p = tgi_shell_program(c);
	const char *prog = p < c->argc ? tgi_shell_basename(c->argv[p]) : "";
	char *const *a = c->argv + p + 1;
	size_t na = p < c->argc ? c->argc - p - 1 : 0;

	feed_set(out, NULL, 0);
	if (redirected && stdout_redirected(c)) {
		feed_set(out, tgi_strdup(""), 0);
		return;
	}
	if (!c->argc || p >= c->argc || wrapped_by_xargs(c, p) || (c->flags & TGI_CMD_OPAQUE)) {
		feed_set(out, tgi_strdup(""), c->argc > 0);
		return;
	}
	if (!strcmp(prog, "echo") || !strcmp(prog, "printf")) {
		char *r = prog[0] == 'e' ? render_echo(a, na)
		        : na >= 2 && !strcmp(a[0], "-v") ? render_printf(a + 2, na - 2) : render_printf(a, na);
		feed_set(out, r ? r : tgi_strdup(""), r == NULL);
	} else if (!strcmp(prog, "yes")) {
		tgi_buf b;
		tgi_buf_init(&b, TGI_EVAL_FEED);
		for (size_t k = 0; k < na; k++)
			tgi_buf_printf(&b, "%s%s", k ? " " : "", a[k]);
		if (!na)
			tgi_buf_puts(&b, "y");
		tgi_buf_puts(&b, "\n");
		char *r = steal_known(&b);
		feed_set(out, r ? r : tgi_strdup(""), r == NULL);
	} else if ((!strcmp(prog, "dirname") || !strcmp(prog, "basename")) && na >= 1 && a[0][0] != '-') {
		char *t = tgi_xmalloc(strlen(a[0]) + 3), *sl;
		strcpy(t, a[0]);
		size_t n = strlen(t);
		while (n > 1 && t[n - 1] == '/')
			t[--n] = '\0';
		sl = strrchr(t, '/');
		if (prog[0] == 'd') {
			if (!sl)
				strcpy(t, ".");
			else if (sl == t)
				t[1] = '\0';
			else
				*sl = '\0';
		} else if (sl && sl[1]) {
			memmove(t, sl + 1, strlen(sl + 1) + 1);
		}
		strcat(t, "\n");
		feed_set(out, t, 0);
	} else if (!strcmp(prog, "tee")) {
		tgi_eval_stdin(e, cl, i, out);
	} else if (!strcmp(prog, "find")) {
		/* its start points first (unless a test narrows what it prints),
		 * then what lies under them */
		static const char *const narrow[] = { "-name", "-iname", "-path", "-ipath", "-regex",
			                              "-iregex", "-newer", "-mtime", "-mmin",
			                              "-size", "-user", "-group", "-perm", "-empty",
			                              "-mindepth", "-wholename", "-iwholename", "-lname",
			                              "-links", "-inum", "-samefile", NULL };
		tgi_buf b;
		size_t k = 0;
		int narrowed = 0;
		while (k < na && (!strcmp(a[k], "-H") || !strcmp(a[k], "-L") || !strcmp(a[k], "-P")))
			k++;
		size_t st = k;
		while (k < na && a[k][0] != '-' && strcmp(a[k], "(") && strcmp(a[k], "!"))
			k++;
		for (size_t q = k; q < na; q++)
			narrowed |= in_list(a[q], narrow);
		tgi_buf_init(&b, TGI_EVAL_FEED);
		/* START, then everything under it (START/ followed by **, which
		 * the floor reads as any path below) */
		for (size_t q = st; q < k && !narrowed; q++)
			tgi_buf_printf(&b, "%s\n%s%s**\n", a[q], a[q], a[q][strlen(a[q]) - 1] == '/' ? "" : "/");
		if (st == k && !narrowed)
			tgi_buf_puts(&b, ".\n./**\n");
		char *r = steal_known(&b);
		feed_set(out, r ? r : tgi_strdup(""), 1);
	} else if (in_list(prog, silent)) {
		feed_set(out, tgi_strdup(""), 0);
	} else if (in_list(prog, passing)) {
		/* cat FILE, grep PATTERN FILE: a file the line cannot read */
		size_t ops = operands_after(c, p);
		int grep = strstr(prog, "grep") != NULL;
		if (ops > (size_t)grep && !(ops == 1 + (size_t)grep && !strcmp(c->argv[c->argc - 1], "-")))
			feed_set(out, tgi_strdup(""), 1);
		else
			tgi_eval_stdin(e, cl, i, out);
	} else if (!strcmp(prog, "base64") || !strcmp(prog, "base32") || !strcmp(prog, "xxd") ||
	           !strcmp(prog, "rev") || !strcmp(prog, "tr")) {
		tgi_feed in = { 0 };
		char *r = NULL;
		int dec = has_opt(c, p, 'd', "--decode") || has_opt(c, p, 'D', NULL);
		tgi_eval_stdin(e, cl, i, &in);
		if (!strcmp(prog, "base64") && dec && !operands_after(c, p))
			r = base64_decode(in.text ? in.text : "");
		else if (!strcmp(prog, "xxd") && has_opt(c, p, 'r', NULL) && has_opt(c, p, 'p', NULL))
			r = hex_decode(in.text ? in.text : "");
		else if (!strcmp(prog, "rev") && !operands_after(c, p))
			r = reverse_lines(in.text ? in.text : "");
		else if (!strcmp(prog, "tr"))
			r = render_tr(a, na, in.text ? in.text : "");
		feed_set(out, r ? r : tgi_strdup(""), !r || in.unknown);
		tgi_feed_free(&in);
	} else {
		feed_set(out, tgi_strdup(""), 1);
	}
}

/* The here-string or here-doc a command reads, when it has one: 1. */
static int own_input(const tgi_cmd *c, tgi_feed *out)
{
	for (size_t r = c->nredirs; r-- > 0;) {
		const tgi_redir *rd = &c->redirs[r];
		if (rd->fd != -1 && rd->fd != 0)
			continue;
		if (!strcmp(rd->op, "<<<")) {
			size_t n = strlen(rd->target ? rd->target : "");
			char *t = tgi_xmalloc(n + 2);
			memcpy(t, rd->target ? rd->target : "", n);
			t[n] = '\n';
			t[n + 1] = '\0';
			feed_set(out, t, 0);
			return 1;
		}
		if (!strcmp(rd->op, "<<") || !strcmp(rd->op, "<<-")) {
			feed_set(out, tgi_strdup(rd->body ? rd->body : ""), rd->body == NULL);
			return 1;
		}
		if (!strcmp(rd->op, "<") || !strcmp(rd->op, "<&") || !strcmp(rd->op, "<>")) {
			feed_set(out, tgi_strdup(""), 1);
			return 1;
		}
	}
	return 0;
}

void tgi_eval_stdin(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out)
{
	const tgi_cmd *c = &cl->v[i];

	feed_set(out, NULL, 0);
	if (own_input(c, out))
		return;
	if ((c->flags & TGI_CMD_PIPED_IN) && c->from < i) {
		tgi_buf b;
		int unknown = 0;
		tgi_buf_init(&b, TGI_EVAL_FEED);
		for (size_t k = c->from; k < i; k++) {
			tgi_feed f = { 0 };
			if (e->depth >= 8) {
				unknown = 1;
				break;
			}
			e->depth++;
			tgi_eval_stdout(e, cl, k, &f);
			e->depth--;
			if (tgi_buf_puts(&b, f.text ? f.text : "") < 0)
				unknown = 1;
			unknown |= f.unknown;
			tgi_feed_free(&f);
		}
		feed_set(out, tgi_buf_steal(&b), unknown);
		return;
	}
	if (c->flags & TGI_CMD_PIPED_IN) {
		feed_set(out, tgi_strdup(""), 1);
		return;
	}
	if (c->nest > 0) {
		/* inside a compound: what the compound reads, from a redirection
		 * after its end, or the pipe into its first command */
		for (size_t k = i + 1; k < cl->n; k++) {
			const tgi_cmd *d = &cl->v[k];
			if (d->nest >= c->nest)
				continue;
			if (!d->argc && !d->nassigns && own_input(d, out))
				return;
			break;
		}
		for (size_t k = i; k-- > 0;) {
			const tgi_cmd *d = &cl->v[k];
			if (d->nest < c->nest)
				break;
			if (d->nest == c->nest && (d->flags & TGI_CMD_PIPED_IN)) {
				tgi_eval_stdin(e, cl, k, out);
				return;
			}
		}
		feed_set(out, tgi_strdup(""), 1);
		return;
	}
	/* the line's own stdin: nothing (the gate gives commands /dev/null) */
	feed_set(out, tgi_strdup(""), 0);
}
