/*
 * expand.h — a small, bounded evaluation of one command line, for the
 * floor (src/policy/expand.c).
 *
 * The splitter (shell.c) keeps expansions as written.  The floor must see
 * through the ones a line sets up itself: `d=/; rm -rf "$d"`, `for d in /`,
 * `echo / | while read d`, `echo / | xargs rm -rf`, `alias x='rm -rf /'`,
 * `f() { rm -rf "$1"; }; f /`, `eval "$c"`, `$(echo /)`.  An evaluation
 * reads the facts of a split line (what each variable may be assigned,
 * the aliases and functions it defines), then splits the line again once
 * per combination of values (a variant), each time with every expansion
 * it can tell replaced by its value: the floor judges every variant.
 *
 * Values are over-approximated, never guessed: a variable holds any value
 * any assignment in the line gives it (flow-insensitive), plus the value
 * it had before the line wherever no assignment dominates a use (shell.c
 * tells which uses are dominated).  What the line cannot tell (a read
 * from a file, a command substitution that is not a literal, a variable
 * set outside the line) stays as written: the floor cannot judge a word
 * holding it and says so (blind), which makes a call that would run
 * without asking ask instead.
 *
 * Bounded: at most TGI_EVAL_VARIANTS variants, TGI_EVAL_BYTES bytes split
 * and TGI_EVAL_SPLITS splits for one line and everything it leads to
 * (function bodies, aliases, eval, nested scripts share the budget), values
 * and feeds capped.  Past a bound the evaluation says why (tgi_eval_blind)
 * and the floor is blind: it never crashes and never gives up silently.
 *
 * Owns: the facts, the variants, the budget, and what a command prints or
 * reads when the line says (echo, printf, here-strings, here-docs, cat,
 * base64 -d, tr, rev, head/sort/grep passing lines on).  Must not: judge
 * (floor.c does), run anything, or read the environment.
 */
#ifndef TGI_EXPAND_H
#define TGI_EXPAND_H

#include <stddef.h>
#include "policy/shell.h"

#define TGI_EVAL_VARIANTS 64                 /* combinations of values judged */
#define TGI_EVAL_BYTES    (8u << 20)         /* bytes split in all, one line */
#define TGI_EVAL_SPLITS   2048               /* splits in all, one line */
#define TGI_EVAL_FEED     (64u << 10)        /* bytes of one command's known output */

/* What one line and everything it leads to may still spend. */
typedef struct tgi_eval_budget {
	size_t bytes, splits;
	char   why[200];       /* set once a bound is passed */
} tgi_eval_budget;

void tgi_eval_budget_init(tgi_eval_budget *b);

typedef struct tgi_eval tgi_eval;

/*
 * The facts of cl (borrowed; it must keep its source: tgi_shell_split
 * keeps it).  env: "NAME=value" the command gets besides the line (the
 * call's own variables; may be NULL); home: what ~ and $HOME are.  budget
 * is shared (borrowed).  Free with tgi_eval_free (NULL is a no-op).
 */
tgi_eval *tgi_eval_new(const tgi_cmdline *cl, const char *const *env, size_t nenv,
                       const char *home, tgi_eval_budget *budget);
void      tgi_eval_free(tgi_eval *e);

/* How many variants to judge (>= 1), or 0 when there are more than
 * TGI_EVAL_VARIANTS (the reason in the budget). */
size_t tgi_eval_variants(tgi_eval *e);
void   tgi_eval_select(tgi_eval *e, size_t k);

/*
 * Splits under the current variant: the whole line again; a text run by
 * the same shell (an alias, a function body with its arguments as $1…,
 * an eval'd string); an argv.  0, or -1 with err (a syntax error, or the
 * budget spent: then tgi_eval_blind says so).
 */
int tgi_eval_line(tgi_eval *e, tgi_cmdline *out, char *err, size_t errlen);
int tgi_eval_split(tgi_eval *e, const char *text, size_t len, const char *const *params,
                   size_t nparams, tgi_cmdline *out, char *err, size_t errlen);
int tgi_eval_argv(tgi_eval *e, const char *const *argv, size_t argc, tgi_cmdline *out, char *err,
                  size_t errlen);

/* Take n bytes (and one split) of a budget for work of the caller's (a
 * code scan, a nested script): 0, or -1 when spent (b->why then says so). */
int tgi_eval_budget_spend(tgi_eval_budget *b, size_t n);

/* Why the evaluation could not see (a bound passed), or NULL. */
const char *tgi_eval_blind(const tgi_eval *e);

/* The k-th definition of alias / function name, or NULL past the last. */
const char *tgi_eval_alias(const tgi_eval *e, const char *name, size_t k);
const char *tgi_eval_func(const tgi_eval *e, const char *name, size_t k);

/* Does the line set CDPATH (a relative cd may go anywhere)? */
int tgi_eval_cdpath(const tgi_eval *e);

/*
 * What a command prints on stdout or reads on stdin, as far as the line
 * says: text (owned, NUL-free) and unknown != 0 when some of it cannot be
 * told.  cl is a split of the evaluation's (a variant's, or a sub-split's),
 * i an index in it.  A feed with unknown set may still hold the parts that
 * are known.
 */
typedef struct tgi_feed {
	char *text;
	int   unknown;
} tgi_feed;

void tgi_eval_stdout(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out);
/* What it writes on fd 1 wherever that goes (`echo x > f`: x). */
void tgi_eval_prints(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out);
void tgi_eval_stdin(tgi_eval *e, const tgi_cmdline *cl, size_t i, tgi_feed *out);
void tgi_feed_free(tgi_feed *f);

#endif
