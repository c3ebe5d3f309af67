/*
 * execpolicy.h — Codex-compatible execution-policy rules (.rules files),
 * src/policy/execpolicy.c.
 *
 *   prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "prompt",
 *               justification = "...", match = [...], not_match = [...])
 *   host_executable(name = "git", paths = ["/usr/bin/git"])
 *
 * Files are read by a small Starlark-subset parser written here: top-level
 * calls with keyword arguments, strings ('…', "…", with escapes), lists
 * (nested for alternatives), `#` comments, trailing commas.  Anything else
 * is a load error with file:line.  A rule's match / not_match examples
 * (strings, split shlex-style, or lists of tokens) are checked against
 * that rule when the file loads; a failing example is a load error in
 * Codex's wording.
 *
 * A command matches a prefix rule when the pattern is a prefix of its
 * argv, token by token (a nested list: any of its alternatives).  As in
 * Codex, rules naming the program exactly are tried first; only if none
 * matches, and the caller's tgi_ep_resolve allows it, are the rules for
 * the program's basename tried ("git" for "/usr/bin/git"); if a
 * host_executable entry exists for that name the path must be one of its
 * paths (an empty list allows none).  So pass argv[0] as written, not
 * reduced to its basename.  Decision: the strictest of all matching rules
 * (forbidden > prompt > allow).
 *
 * Owns: the file format, its errors and evaluation.  Must not: split
 * command strings (shell.c does), or know about modes and approvals.
 */
#ifndef TGI_EXECPOLICY_H
#define TGI_EXECPOLICY_H

#include <stddef.h>
#include <jansson.h>
#include "util/util.h"

typedef enum {
	TGI_EP_NONE = 0,      /* no rule matched */
	TGI_EP_ALLOW,
	TGI_EP_PROMPT,
	TGI_EP_FORBIDDEN,
} tgi_ep_decision;

const char *tgi_ep_decision_name(tgi_ep_decision d); /* "allow", "prompt", "forbidden", "none" */

typedef struct tgi_execpolicy tgi_execpolicy;

tgi_execpolicy *tgi_execpolicy_new(void);
void            tgi_execpolicy_free(tgi_execpolicy *ep);

/*
 * Add the rules of one file (name is used in messages: "rules/a.rules:12:
 * ...").  Every example of every rule in it is checked.  0, or -1 with a
 * sentence in err; on error nothing of the file is kept.
 */
int tgi_execpolicy_add_text(tgi_execpolicy *ep, const char *name, const char *text, size_t len,
                            char *err, size_t errlen);
/* The same, reading the file at path (at most 4 MiB). */
int tgi_execpolicy_add_file(tgi_execpolicy *ep, const char *path, char *err, size_t errlen);

/* How many prefix_rule calls were loaded. */
size_t tgi_execpolicy_nrules(const tgi_execpolicy *ep);
/* How many match / not_match examples were checked at load. */
size_t tgi_execpolicy_nexamples(const tgi_execpolicy *ep);

/*
 * When may argv[0] be read by its basename (no rule naming it as written
 * having matched)?
 *   TGI_EP_EXACT   never: Codex's `execpolicy check` by default.
 *   TGI_EP_HOST    Codex's --resolve-host-executables (and its example
 *                  checks): argv[0] made absolute as Codex does ("~/" from
 *                  the home directory, a relative path from the current
 *                  directory, "." and ".." folded lexically); the
 *                  basename's rules when its host_executable lists that
 *                  path, or when no host_executable names it.
 *   TGI_EP_TRUSTED the gate, for a program given as a path: the
 *                  basename's prompt and forbidden rules always (they
 *                  only tighten); its allow rules only for an absolute
 *                  path without ".." that the basename's host_executable
 *                  lists or, when none names it, that trusted(ctx, path)
 *                  says cannot have been planted (hostpath.h).  So an
 *                  allow rule for `git` does not allow `/tmp/evil/git`
 *                  or `./git`, while `git push --force` stays forbidden
 *                  for either.
 * A NULL tgi_ep_resolve is TGI_EP_EXACT.
 */
typedef enum {
	TGI_EP_EXACT = 0,
	TGI_EP_HOST,
	TGI_EP_TRUSTED,
} tgi_ep_resolve_mode;

typedef struct tgi_ep_resolve {
	tgi_ep_resolve_mode mode;
	/* TGI_EP_TRUSTED: 1 when the program at path (absolute, normalised, no
	 * "..") may be judged by its basename; NULL: never. */
	int  (*trusted)(void *ctx, const char *path);
	void  *ctx;                    /* borrowed */
} tgi_ep_resolve;

/*
 * Evaluate one simple command's argv.  Returns the strictest decision of
 * the rules that match (TGI_EP_NONE if none).  If matched is not NULL,
 * every matching rule is appended to it in Codex's shape:
 *   {"prefixRuleMatch": {"matchedPrefix": [...], "decision": "prompt",
 *                        "resolvedProgram": "/usr/bin/git",
 *                        "justification": "..."}}
 * (resolvedProgram only when matched through the basename, then
 * matchedPrefix starts with the basename; justification only if set).
 * If rule is not NULL it receives a short text of the strictest matching
 * rule for the envelope ("execpolicy prompt: git push (rules/a.rules:3)").
 */
tgi_ep_decision tgi_execpolicy_eval(const tgi_execpolicy *ep, const tgi_ep_resolve *res,
                                    const char *const *argv, size_t argc, json_t *matched,
                                    char *rule, size_t rulecap);

/*
 * Codex's JSON for `execpolicy check` over several simple commands:
 * {"matchedRules": [...], "decision": "forbidden"} with the strictest
 * decision over all of them, or {"matchedRules": []} when nothing
 * matched.  New reference.
 */
json_t *tgi_execpolicy_check(const tgi_execpolicy *ep, const tgi_ep_resolve *res,
                             const char *const *const *argvs, const size_t *argcs, size_t n);

#endif
