/*
 * rulecheck.h — the configuration's permission rules against the tools
 * there are (src/policy/rulecheck.c).
 *
 * A rule that names no tool, or an argument its tool does not have, never
 * matches: a deny that denies nothing.  So the rules are compiled when the
 * gate opens and each is checked against the registry (built-in and
 * configured tools) and the configured MCP servers: a rule for no tool, a
 * key=glob pair on an argument the schema lacks (or a deprecated name the
 * call never carries), a path on a tool without paths is an error with
 * the rule's file:line and a suggestion.  A rule that may name a bridged
 * tool (`fs__read_file`, `mcp__fs__*`) is checked when its server lists
 * its tools; one that still matches none, and one in Claude Code's name
 * of a tool toolgate lacks (`WebFetch(domain:...)`), is reported by
 * doctor and policy test (tgi_rulecheck_report) and, at a listing, said
 * once on stderr.
 *
 * Owns: compiling g->rules and g->role_rules, the check, its findings.
 * Must not: parse rule text (policy/rules.c does) or decide a call.
 */
#ifndef TGI_RULECHECK_H
#define TGI_RULECHECK_H

#include <jansson.h>
#include "toolgate.h"

typedef struct tgi_rulecheck tgi_rulecheck;

/* Compile the configuration's rules into g->rules and g->role_rules
 * (anchored: policy.h tgi_ruleset_anchor) and check them (g->reg is
 * built); the findings to report later in g->rulecheck.  -1 with
 * "file:line:col: permissions.deny[0]: rule \"...\": ..." in *errmsg. */
int tgi_rules_compile(tg_gate *g, char **errmsg);

/* server has listed its tools (the bridge, after each listing; any
 * thread): check the rules that may name its tools. */
void tgi_rulecheck_listed(tg_gate *g, const char *server);

/* The rules that match no tool, for doctor and policy test: a new array of
 * {"rule", "where" (file:line:col), "why"}.  When some rule waits for a
 * server that has not listed its tools, the servers are started first
 * (and waited for) so that it can be checked. */
json_t *tgi_rulecheck_report(tg_gate *g);

void tgi_rulecheck_free(tgi_rulecheck *rc);   /* NULL is fine */

#endif
