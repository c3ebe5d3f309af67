/*
 * decide.c — stage 4: allow, ask or deny (DESIGN §3).
 *
 * Order, first match wins:
 *   availability (unavailable tools are denied: fail closed)
 *   hard floor (compiled in; nothing lifts it) and protected paths
 *   deny rules  (global, then the caller's roles)
 *   ask rules
 *   requires_grant without a matching allow rule → deny
 *   allow rules
 *   mode default (default / acceptEdits / plan / bypassPermissions)
 * then the approval policy `untrusted` turns a mode-default allow of
 * anything but a read-only call into ask.
 *
 * Paths are judged as written and as resolved inside the workspace; a path
 * that resolves outside the workspace is denied here (and the kernel would
 * refuse it at open anyway).
 *
 * Owns: the decision and the rule that made it.  Must not: prompt, queue
 * approvals or run anything.  Stops with `denied`.
 */
#include <errno.h>
#include <string.h>

#include "gate.h"
#include "util/fs.h"
#include "util/util.h"

static tgi_verdict deny(tgi_call *c, const char *rule, const char *fmt_msg)
{
	tgi_snprintf(c->rule, sizeof c->rule, "%s", rule);
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", rule);
	c->decision = TGI_DENY;
	tgi_trace(c, "decide", 0, json_pack("{s:s, s:s}", "decision", "deny", "rule", rule));
	return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL, "%s", fmt_msg);
}

/* First matching rule of `kind` among the global rules and the caller's roles. */
static const tgi_rule *first_rule(tgi_call *c, tgi_rule_kind kind, const tgi_match_input *in)
{
	tg_gate *g = c->g;
	const tgi_rule *r = tgi_ruleset_first(g->rules, kind, in);
	if (r)
		return r;
	for (size_t i = 0; i < c->principal->roles.n; i++)
		for (size_t j = 0; j < g->cfg->nroles; j++)
			if (!strcmp(g->cfg->roles[j].name, c->principal->roles.v[i]) &&
			    (r = tgi_ruleset_first(g->role_rules[j], kind, in)))
				return r;
	return NULL;
}

static tgi_decision mode_default(tgi_call *c, const char **why)
{
	unsigned k = c->contract;
	int ro = k & TGI_T_READ_ONLY;
	int edit = (k & TGI_T_EDITS_FILES) && !(k & TGI_T_DESTRUCTIVE);
	switch (c->g->cfg->mode) {
	case TGI_MODE_ACCEPT_EDITS:
		*why = "mode acceptEdits";
		return ro || edit ? TGI_ALLOW : TGI_ASK;
	case TGI_MODE_PLAN:
		*why = "mode plan";
		return ro ? TGI_ALLOW : TGI_DENY;
	case TGI_MODE_BYPASS:
		*why = "mode bypassPermissions";
		return TGI_ALLOW;
	case TGI_MODE_DEFAULT:
	default:
		*why = "mode default";
		return ro ? TGI_ALLOW : TGI_ASK;
	}
}

static void record(tgi_call *c, tgi_decision d, const char *rule)
{
	static const char *const names[] = {"allow", "ask", "deny"};
	c->decision = d;
	tgi_snprintf(c->rule, sizeof c->rule, "%s", rule);
	tgi_trace(c, "decide", d != TGI_DENY,
	          json_pack("{s:s, s:s}", "decision", names[d], "rule", rule));
}

tgi_verdict tgi_decide(tgi_call *c)
{
	tg_gate *g = c->g;
	const char *reason;
	char msg[768], rule[512];

	if (!tgi_registry_available(g->reg, c->entry, &reason))
		return deny(c, "unavailable", reason);

	/* resolve every path inside the workspace; leaving it is a denial */
	for (size_t i = 0; i < c->npaths; i++) {
		char res[4096];
		int rc = tgi_path_resolve(g->ws_fd, c->paths[i], res, sizeof res);
		if (rc == -EXDEV || rc == -ELOOP) {
			tgi_snprintf(msg, sizeof msg,
			             "path \"%s\" leaves the workspace; do not retry; ask the owner",
			             c->paths[i]);
			return deny(c, "confinement: outside the workspace", msg);
		}
		if (rc < 0) {
			/* fail closed: a path we cannot place is not judged by its text alone */
			tgi_snprintf(msg, sizeof msg, "path \"%s\" cannot be checked (%s); do not retry",
			             c->paths[i], strerror(-rc));
			return deny(c, "confinement: unresolvable path", msg);
		}
		c->resolved[i] = tgi_strdup(res);
	}

	if (tgi_floor_paths(g->cfg->workspace, (const char *const *)c->resolved, c->npaths, msg,
	                    sizeof msg)) {
		tgi_snprintf(rule, sizeof rule, "floor: %s", msg);
		return deny(c, rule, msg);
	}
	for (size_t i = 0; i < c->npaths; i++) {
		int wr = !(c->contract & TGI_T_READ_ONLY);
		const char *p[2] = {c->paths[i], c->resolved[i]};
		for (int j = 0; j < 2; j++) {
			if (!p[j] || !tgi_path_protected(p[j]))
				continue;
			/* .git is readable; .toolgate (the ledger) is not the model's */
			if (!wr && strncmp(p[j], ".toolgate", 9))
				continue;
			tgi_snprintf(msg, sizeof msg,
			             "\"%s\" is %s to tools; do not retry; ask the owner", c->paths[i],
			             wr ? "read-only" : "not readable");
			return deny(c, "protected path", msg);
		}
	}

	tgi_match_input in = {
		.tool = c->tool,
		.args = c->args,
		.paths = c->paths,
		.resolved = (const char *const *)c->resolved,
		.npaths = c->npaths,
		.has_paths = c->entry->row->paths != NULL,
	};
	const tgi_rule *r;
	if ((r = first_rule(c, TGI_RULE_DENY, &in))) {
		tgi_snprintf(rule, sizeof rule, "deny: %s", tgi_rule_text(r));
		tgi_snprintf(msg, sizeof msg,
		             "policy does not allow %s with these arguments; do not retry; ask the owner",
		             c->tool);
		return deny(c, rule, msg);
	}
	if ((r = first_rule(c, TGI_RULE_ASK, &in))) {
		tgi_snprintf(rule, sizeof rule, "ask: %s", tgi_rule_text(r));
		record(c, TGI_ASK, rule);
		return TGI_NEXT;
	}
	const tgi_rule *allow = first_rule(c, TGI_RULE_ALLOW, &in);
	if (!allow && (c->contract & TGI_T_REQUIRES_GRANT)) {
		tgi_snprintf(msg, sizeof msg,
		             "principal \"%s\" holds no grant for %s with these arguments; do not "
		             "retry; ask the owner", c->principal->name, c->tool);
		return deny(c, "requires_grant: no allow rule matches", msg);
	}
	if (allow) {
		tgi_snprintf(rule, sizeof rule, "allow: %s", tgi_rule_text(allow));
		record(c, TGI_ALLOW, rule);
		return TGI_NEXT;
	}

	const char *why;
	tgi_decision d = mode_default(c, &why);
	if (d == TGI_ALLOW && g->cfg->approval == TGI_APPROVAL_UNTRUSTED &&
	    !(c->contract & TGI_T_READ_ONLY)) {
		d = TGI_ASK;
		why = "approval untrusted: not read-only";
	}
	if (d == TGI_DENY) {
		tgi_snprintf(msg, sizeof msg,
		             "%s is not allowed in plan mode (read-only calls only); do not retry", c->tool);
		return deny(c, why, msg);
	}
	record(c, d, why);
	return TGI_NEXT;
}
