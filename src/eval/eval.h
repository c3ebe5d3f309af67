/*
 * eval.h — `toolgate eval` (src/eval/): the tools tested against a model.
 *
 *   suite.c    eval files (YAML) into cases; the built-in suite (the files of evals/,
 *              compiled in as tgi_eval_builtin[])
 *   match.c    the expected arguments: a subset whose values may be globs or
 *              JSON Schema fragments
 *   run.c      a run: each case's request sent to the model with the tool
 *              definitions (first turn only; several requests at once), the
 *              reply's call judged by the gate as a dry run (decode, validate,
 *              identify, decide: nothing executed, nothing recorded as a
 *              call), in a scratch workspace holding the case's setup files;
 *              the report; --compare runs the suite again on a second
 *              configuration
 *   report.c   scores from results; the report as a table, JSON or JUnit XML;
 *              --compare's differences and the thresholds; --history
 *
 * A report is JSON (the shape --format json prints, docs/EVAL.md):
 *
 *   {"suite": {"digest", "cases", "files": [...]},
 *    "provider", "api", "model", "runs", "config", "profile", "manifest",
 *    "definitions": {"profile", "api", "tools", "chars", "tokens_est"},
 *    "started", "duration_ms",
 *    "scores": {"overall": SCORE, "tools": {"read_file": SCORE, ..., "(none)": SCORE}},
 *    "results": [RESULT, ...],
 *    "baseline": REPORT, "difference": DIFF        (with --compare)
 *    "thresholds": {"fail_under", "max_drop", "failed": ["sentence", ...]}}
 *
 *   SCORE  {"cases", "results", "tool": RATE, "valid": RATE, "args": RATE,
 *           "policy": RATE, "pass": RATE}       RATE {"ok", "of", "rate"|null}
 *   RESULT {"case", "where", "expect": {"tool"|null, "args"|null, "decision": [...]},
 *           "run", "request", "pass", "checks": {"tool", "valid", "args",
 *           "policy": true|false|null (null: does not apply)},
 *           "got": {"tool"|null, "args"|null, "calls", "text"|null},
 *           "decision"|null, "rule"|null, "failure": {"check", "message"}|null,
 *           "error"|null, "ms"}
 *
 * Owns: the cases, the scratch workspace of a run, the report.  Must not:
 * run a tool, write an ops row, spend or queue an approval, or touch the
 * user's workspace.
 */
#ifndef TGI_EVAL_H
#define TGI_EVAL_H

#include <stddef.h>
#include <jansson.h>

#include "toolgate.h"
#include "policy/policy.h"

#define TGI_EVAL_FILE_MAX (16u << 20)   /* bytes of one eval file */

/* ---- match.c: expected arguments ---- */

typedef struct tgi_match tgi_match;

/*
 * Compile an expected-arguments object.  Each value is matched against the
 * call's argument of the same name, which must be present:
 *   a string      a glob (tgi_text_glob: `*` any run, `?` one character)
 *                 against a string argument; a string is never equal to a
 *                 number or a boolean
 *   a number, boolean or null   equal (1 equals 1.0)
 *   an array      an array of the same length, element by element
 *   an object     a JSON Schema fragment when every key is a JSON Schema
 *                 keyword (type, const, enum, pattern, minimum, contains,
 *                 items, ...): the argument must be valid against it;
 *                 otherwise a nested subset, matched the same way
 * NULL with "/pointer: what is wrong" in err (a fragment that does not
 * compile, one whose keywords only annotate and so would match anything,
 * nesting over 32 levels).
 */
tgi_match *tgi_match_compile(const json_t *expect, char *err, size_t errlen);

/* 1 when args (an object) matches; 0 with a sentence in why: "/path:
 * expected \"README*\", got \"docs/README.md\"", "/limit is missing". */
int  tgi_match_check(const tgi_match *m, const json_t *args, char *why, size_t cap);
void tgi_match_free(tgi_match *m);

/* ---- suite.c: the cases ---- */

#define TGI_EVAL_BIT(d) (1u << (d))   /* of a tgi_decision */
enum { TGI_EVAL_ALLOW = TGI_EVAL_BIT(TGI_ALLOW), TGI_EVAL_ASK = TGI_EVAL_BIT(TGI_ASK),
       TGI_EVAL_DENY = TGI_EVAL_BIT(TGI_DENY) };

typedef struct tgi_eval_case {
	char      *id;          /* its `id`, or "<file stem>#<n>" (n from 1); unique */
	char      *where;       /* "name:line:col" of the case */
	char      *request;     /* the user's message */
	char      *tool;        /* the expected tool; NULL: no tool should be called */
	json_t    *args;        /* the expected subset as written, or NULL (any) */
	tgi_match *match;       /* args compiled, or NULL */
	unsigned   decisions;   /* TGI_EVAL_*: what policy may decide (default ALLOW) */
	char      *profile;     /* the case's or its file's profile, or NULL */
	json_t    *setup_files; /* {"relative/path": "content", ...} or NULL */
} tgi_eval_case;

typedef struct tgi_eval_suite {
	tgi_eval_case *v;
	size_t         n;
	json_t        *files;   /* the names loaded, in order */
} tgi_eval_suite;

/*
 * Add the cases of one eval file (YAML text, len bytes; name is how errors
 * and `where` name it).  A file is a list of cases, or {profile?, cases:
 * [...]}; a case is {id?, request, expect: {tool, args?, decision?} |
 * {no_tool: true}, profile?, setup_files?} (docs/EVAL.md).  0, or -1 with
 * "name:line:col: /cases/3/expect: what was expected" in err; on -1 the
 * suite holds no case of this file.
 */
int  tgi_eval_suite_load(tgi_eval_suite *s, const char *name, const char *text, size_t len,
                         char *err, size_t errlen);
/* Add the built-in suite (named "builtin:<file>").  0, or -1 with err. */
int  tgi_eval_suite_builtin(tgi_eval_suite *s, char *err, size_t errlen);
/* A case's decisions (TGI_EVAL_*) as ["allow", "ask", ...] (new reference). */
json_t *tgi_eval_decisions_json(unsigned decisions);
/* sha256 of the suite's cases in canonical JSON (what was loaded, not
 * where from): two runs of one suite share it. */
void tgi_eval_suite_digest(const tgi_eval_suite *s, char out[65]);
void tgi_eval_suite_free(tgi_eval_suite *s);

/* The built-in suite's files, generated from the files of evals/ at build time. */
typedef struct tgi_eval_file {
	const char *name;   /* "read_file.yaml" */
	const char *text;
	size_t      len;
} tgi_eval_file;
extern const tgi_eval_file tgi_eval_builtin[];
extern const size_t        tgi_eval_nbuiltin;

/* ---- report.c ---- */

/* Scores of a results array: {"overall": SCORE, "tools": {...}} (new
 * reference).  Each result counts once per run; a check that is null does
 * not count in that check's "of". */
json_t *tgi_eval_scores(const json_t *results);

/* rep's "difference" from its "baseline": candidate rate minus baseline
 * rate, per tool and overall, per check (null where either is null).  New
 * reference. */
json_t *tgi_eval_difference(const json_t *rep, const json_t *baseline);

/* Set rep's "thresholds" for fail_under and max_drop (< 0: not given)
 * against the pass rates, overall and per tool: a sentence for each one
 * failed ("read_file: pass 0.80 is under 0.90", "shell: pass dropped 0.10
 * (0.95 → 0.85), more than 0.05").  Returns how many failed. */
int tgi_eval_thresholds(json_t *rep, double fail_under, double max_drop);

/* The report as text: "table" (per tool, overall, the failing cases, the
 * definitions' size; with a baseline, the per-tool difference), "json"
 * (indented), "junit" (JUnit XML: a testsuite per tool, a testcase per
 * case and run, <failure> naming the check, a "thresholds" testsuite).
 * Caller frees; NULL for an unknown format. */
char *tgi_eval_render(const json_t *rep, const char *format);

/* Stored runs (an array, oldest first: tgi_store_eval_list's rows) as the
 * trend: "table" or "json".  Caller frees. */
char *tgi_eval_history_render(const json_t *rows, const char *format);

/* The rate of one check ("tool", ..., "pass") of a SCORE, or NAN when it
 * has none. */
double tgi_eval_rate(const json_t *score, const char *check);

/* tg_eval_sizes's rows ([{"profile", "tools", "apis": {"openai-chat":
 * {"chars", "tokens_est"}, ...}}]) as "table" or "json".  Caller frees. */
char *tgi_eval_sizes_render(const json_t *rows, const char *format);

/* Estimated tokens of text: a tokenizer-free estimate for JSON and English
 * (docs/BENCHMARKS.md compares it with a real BPE tokenizer). */
size_t tgi_eval_tokens(const char *text, size_t len);

#endif
