/*
 * decide.c — stage 4: allow, ask or deny (DESIGN §3).
 *
 * Order, first match wins:
 *   availability (unavailable tools are denied: fail closed)
 *   for a command line (shell.h): the command floor, a sandboxed mode
 *     with no sandbox backend, execpolicy `forbidden` → deny; then read
 *     rules on the files each read-only command names (read_rules below:
 *     a deny for read_file → deny, an ask → ask)
 *   hard floor (compiled in; nothing lifts it) and protected paths
 *   deny rules  (global, then the caller's roles)
 *   requires_grant without a matching allow rule → deny (never ask)
 *   execpolicy `prompt`, a command the splitter cannot judge, or one the
 *     floor cannot see into (a path it would judge held in a variable the
 *     line does not set, code built at run time, …) → ask (deny in plan
 *     mode): what would otherwise run unasked asks
 *   ask rules, then a before-hook's ask (src/mw/hooks.c; a hook never allows)
 *   allow rules, or execpolicy `allow` for every simple command (for a
 *     configured tool marked `destructive: true`, only an allow rule that
 *     names the tool: `*` and other wildcard tool parts do not count)
 *   mode default (default / acceptEdits / plan / bypassPermissions; dryRun
 *     decides as default; a configured `destructive: true` asks in every
 *     mode but plan, which denies it)
 * then the approval policy `untrusted` turns a mode-default allow of
 * anything but a read-only call into ask.
 *
 * Deny and ask rules hold if any touched path (as written or as resolved)
 * matches; allow rules only if every path matches in both forms (see
 * policy.h).  Rules written for read_file are read rules: their deny and
 * ask also hold for every read-only file tool (list_dir, search_files), and
 * for every entry a directory walk would show (tgi_may_read).  Likewise
 * rules written for write_file are edit rules: their deny and ask also
 * hold for every tool that edits files (apply_patch), on every path it
 * touches.  Allow rules are never borrowed this way.
 *
 * Protected paths: .git and .toolgate at any depth are read-only (the
 * ledger is not readable either, except the spill files the gate itself
 * points the model at), and so are the gate's own configuration and every
 * file it runs (g->protected): a model must not rewrite its own policy.
 *
 * An absolute path outside the workspace (validate noted it; one inside
 * was made relative there) is denied first, with the workspace root named.
 * Paths are judged as written and as resolved inside the workspace (for a
 * writing tool: its parent resolved, the final component as written, since
 * the write replaces that component rather than following it); a path that
 * resolves outside the workspace is denied here (and the kernel would
 * refuse it at open anyway).  The resolved paths (c->resolved) go on to
 * the handler (tgi_exec_ctx.checked): a file tool's open must land on
 * them, so that a symlink or directory swapped after this judgement (while
 * an approval is asked, say) fails the call rather than escaping the rules.
 *
 * Owns: the decision and the rule that made it.  Must not: prompt, queue
 * approvals or run anything.  Stops with `denied`.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "gate/gate.h"
#include "exec/sandbox.h"
#include "util/fs.h"
#include "util/util.h"

static tgi_verdict deny(tgi_call *c, const char *rule, const char *msg)
{
	tgi_snprintf(c->rule, sizeof c->rule, "%s", rule);
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", rule);
	c->decision = TGI_DENY;
	tgi_trace(c, "decide", 0, json_pack("{s:s, s:s}", "decision", "deny", "rule", rule));
	return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL, "%s", msg);
}

/* First matching rule of `kind` in global, then in the caller's roles' sets. */
static const tgi_rule *first_in(const tgi_call *c, const tgi_ruleset *global,
                                tgi_ruleset *const *roles, tgi_rule_kind kind,
                                const tgi_match_input *in)
{
	tg_gate *g = c->g;
	const tgi_rule *r = tgi_ruleset_first(global, kind, in);
	if (r)
		return r;
	for (size_t i = 0; i < c->principal->roles.n; i++)
		for (size_t j = 0; j < g->cfg->nroles; j++)
			if (!strcmp(g->cfg->roles[j].name, c->principal->roles.v[i]) &&
			    (r = tgi_ruleset_first(roles[j], kind, in)))
				return r;
	return NULL;
}

/* First matching rule of `kind` among the global rules and the caller's roles. */
static const tgi_rule *first_rule(const tgi_call *c, tgi_rule_kind kind, const tgi_match_input *in)
{
	return first_in(c, c->g->rules, c->g->role_rules, kind, in);
}

/* Does a rule of kind name the tool, globally or in one of p's roles? */
static int named(tg_gate *g, const tgi_principal_cfg *p, tgi_rule_kind kind, const char *tool,
                 int bare)
{
	if (tgi_ruleset_names(g->rules, kind, tool, bare))
		return 1;
	for (size_t i = 0; i < p->roles.n; i++)
		for (size_t j = 0; j < g->cfg->nroles; j++)
			if (!strcmp(g->cfg->roles[j].name, p->roles.v[i]) &&
			    tgi_ruleset_names(g->role_rules[j], kind, tool, bare))
				return 1;
	return 0;
}

int tgi_tool_hidden(tg_gate *g, const tgi_principal_cfg *p, const tgi_entry *e)
{
	const char *tool = e->row->name;
	if (named(g, p, TGI_RULE_DENY, tool, 1))
		return 1;
	return (e->row->flags & TGI_T_REQUIRES_GRANT) && !named(g, p, TGI_RULE_ALLOW, tool, 0);
}

static tgi_decision mode_default(tgi_call *c, const char **why)
{
	unsigned k = c->contract;
	int ro = k & TGI_T_READ_ONLY;
	int edit = (k & TGI_T_EDITS_FILES) && !(k & TGI_T_DESTRUCTIVE);
	if ((k & TGI_T_CONFIRM) && c->g->cfg->mode != TGI_MODE_PLAN) {
		*why = "destructive: true (only an allow rule naming the tool lifts it)";
		return TGI_ASK;
	}
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
	case TGI_MODE_DRY_RUN:          /* decided as in default; nothing runs (decode.c) */
		*why = "mode dryRun";
		return ro ? TGI_ALLOW : TGI_ASK;
	case TGI_MODE_DEFAULT:
	default:
		*why = "mode default";
		return ro ? TGI_ALLOW : TGI_ASK;
	}
}

static void record(tgi_call *c, tgi_decision d, const char *rule)
{
	c->decision = d;
	tgi_snprintf(c->rule, sizeof c->rule, "%s", rule);
	tgi_trace(c, "decide", d != TGI_DENY,
	          json_pack("{s:s, s:s}", "decision", tgi_decision_name(d), "rule", rule));
}

/* Is relpath (workspace-relative, normalised) off limits?  For a write:
 * protected directories and the gate's own files; for a read: .toolgate
 * except spill files of the call's own session.  The floor holds for both.  msg gets the sentence. */
static int path_refused(const tgi_call *c, const char *relpath, int writing, char *msg,
                        size_t cap, const char **rule)
{
	tg_gate *g = c->g;
	char why[512];
	if (tgi_floor_paths(g->cfg->workspace, &relpath, 1, why, sizeof why)) {
		tgi_snprintf(msg, cap, "%s", why);
		*rule = "floor";
		return 1;
	}
	*rule = "protected path";
	size_t kl = g->key_dir_rel ? strlen(g->key_dir_rel) : 0;
	if (kl && !strncmp(relpath, g->key_dir_rel, kl) && (!relpath[kl] || relpath[kl] == '/')) {
		tgi_snprintf(msg, cap, "\"%s\" holds the ledger's key: not readable or writable by "
		             "tools; do not retry", relpath);
		return 1;
	}
	int prot = tgi_path_protected(relpath);
	if (writing) {
		int own = 0;
		for (size_t i = 0; i < g->nprotected && !own; i++)
			own = !strcmp(relpath, g->protected[i]);
		if (prot || own) {
			tgi_snprintf(msg, cap, "\"%s\" is read-only to tools%s; do not retry; ask the owner",
			             relpath, own ? " (the gate's own configuration)"
			                      : prot == TGI_PROTECTED_CONFIG ? " (a configuration's name: the "
			                        "gate loads it when run from that directory)" : "");
			return 1;
		}
	} else if (prot == TGI_PROTECTED_STATE && !tgi_path_is_spill(relpath)) {
		tgi_snprintf(msg, cap, "\"%s\" is not readable to tools; do not retry", relpath);
		return 1;
	} else if (prot == TGI_PROTECTED_STATE &&
	           !tgi_spill_readable(g->ws_fd, relpath, c->session, msg, cap)) {
		*rule = "spill of another session";
		return 1;
	}
	return 0;
}

/* Deny or ask rules for the tool itself, then those of the file tool it
 * stands in for: read_file for a read-only file tool, write_file for one
 * that edits files. */
static const tgi_rule *path_rule(const tgi_call *c, tgi_rule_kind kind, tgi_match_input *in)
{
	const tgi_rule *r = first_rule(c, kind, in);
	const char *as = c->contract & TGI_T_READ_ONLY   ? "read_file"
	               : c->contract & TGI_T_EDITS_FILES ? "write_file" : NULL;
	if (r || !as || !c->entry->row->paths || !strcmp(in->tool, as))
		return r;
	const char *tool = in->tool;
	in->tool = as;
	r = first_rule(c, kind, in);
	in->tool = tool;
	return r;
}

/* May relpath be read, judged as tool with args (the floor, protected paths,
 * then deny and ask rules: an entry that would need asking is left out
 * too, as a walk or a plan cannot ask)?  as_read: judge it as read_file
 * itself rather than as c's tool borrowing read_file's rules. */
static int may_read_as(const tgi_call *c, const char *relpath, const char *tool,
                       const json_t *args, int as_read)
{
	char msg[512];
	const char *why;
	if (path_refused(c, relpath, 0, msg, sizeof msg, &why))
		return 0;
	const char *paths[1] = {relpath};
	tgi_match_input in = {
		.tool = tool, .args = args, .paths = paths, .resolved = paths,
		.npaths = 1, .has_paths = 1,
	};
	if (as_read)
		return !first_rule(c, TGI_RULE_DENY, &in) && !first_rule(c, TGI_RULE_ASK, &in);
	return !path_rule(c, TGI_RULE_DENY, &in) && !path_rule(c, TGI_RULE_ASK, &in);
}

int tgi_may_read(const tgi_exec_ctx *ctx, const char *relpath, int is_dir)
{
	const tgi_call *c = ctx->policy;
	(void)is_dir;
	return may_read_as(c, relpath, c->tool, c->args, 0);
}

int tgi_may_read_file(const tgi_exec_ctx *ctx, const char *relpath, int is_dir)
{
	(void)is_dir;
	json_t *args = json_pack("{s:s}", "path", relpath);
	int ok = args && may_read_as(ctx->policy, relpath, "read_file", args, 1);
	json_decref(args);
	return ok;
}

static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	if (h && h[0] == '/')
		return h;
	h = tgi_passwd_home();
	return h ? h : "/root";
}

/* A few words of a command for a message: "git push origin …". */
static void cmd_text(const tgi_cmd *cmd, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < cmd->argc && i < 6 && n + 8 < cap; i++) {
		char w[128];
		tgi_sanitize(w, sizeof w, cmd->argv[i]);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", w);
		if (n >= cap)
			n = cap - 1;
	}
	if (cmd->argc > 6 && n + 5 < cap)
		strcat(out, " ...");
}

/* The variables a command tool's call gives its command ("env": {NAME:
 * value}), as NAME=value for the floor, which resolves them in the line. */
static void call_env(const tgi_call *c, tgi_strv *out)
{
	const json_t *env = json_object_get(c->args, "env");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)env, k, v) {
		if (!json_is_string(v))
			continue;
		size_t n = strlen(k) + json_string_length(v) + 2;
		char *s = tgi_xmalloc(n);
		snprintf(s, n, "%s=%s", k, json_string_value(v));
		tgi_strv_push(out, s);
	}
}

/*
 * The gates of a command line before the permission rules: the command
 * floor, the sandbox backend, execpolicy.  Stops with `denied`; else sets
 * *ask (execpolicy prompt, an opaque command, or one the floor cannot see
 * into) with the rule in rule.
 */
static tgi_verdict command_gates(tgi_call *c, int *ask, char *rule, size_t cap)
{
	tg_gate *g = c->g;
	const tgi_cmdline *cl = &c->cmds;
	char why[512], msg[768], r[512], words[256];
	tgi_ep_decision worst = TGI_EP_NONE;
	char worst_rule[512] = "";
	const tgi_cmd *worst_cmd = NULL;
	tgi_strv env = {0};

	call_env(c, &env);
	tgi_floor_in fin = {g->cfg->workspace, home_dir(), (const char *const *)env.v, env.n};
	tgi_floor_verdict fv = tgi_floor_judge(cl, &fin, why, sizeof why);
	tgi_strv_free(&env);
	if (fv == TGI_FLOOR_DENY) {
		tgi_snprintf(r, sizeof r, "floor: %s", why);
		tgi_snprintf(msg, sizeof msg, "%s: nothing lifts this; do not retry", why);
		return deny(c, r, msg);
	}
	if (g->cfg->sandbox != TGI_SANDBOX_FULL && tgi_sandbox_probe()->backend == TGI_SB_NONE) {
		tgi_snprintf(msg, sizeof msg, "no sandbox backend works on this machine, so commands "
		             "cannot run in %s mode; do not retry; ask the owner (toolgate doctor)",
		             tgi_sandbox_name(g->cfg->sandbox));
		return deny(c, "sandbox: no backend", msg);
	}
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *cmd = &cl->v[i];
		char rt[512] = "";
		if (cmd->flags & TGI_CMD_OPAQUE) {
			if (!*ask) {
				*ask = 1;
				tgi_snprintf(rule, cap, "opaque command: %s", cmd->why ? cmd->why : "not judged");
			}
			continue;
		}
		if (!cmd->argc)
			continue;
		tgi_ep_decision d = tgi_execpolicy_eval(g->execpolicy, &g->ep_resolve,
		                                        (const char *const *)cmd->argv,
		                                        cmd->argc, NULL, rt, sizeof rt);
		size_t p = tgi_shell_program(cmd);
		if (p > 0 && p < cmd->argc) {     /* `sudo rm …` is judged as `rm …` too */
			char pr[512] = "";
			tgi_ep_decision dp = tgi_execpolicy_eval(g->execpolicy, &g->ep_resolve,
			                                         (const char *const *)cmd->argv + p,
			                                         cmd->argc - p, NULL, pr, sizeof pr);
			if (dp >= TGI_EP_PROMPT && dp > d) {
				d = dp;
				memcpy(rt, pr, sizeof rt);
			}
		}
		if (d > worst) {
			worst = d;
			worst_cmd = cmd;
			memcpy(worst_rule, rt, sizeof worst_rule);
		}
	}
	/* the floor found nothing, but could not see all it would judge: what
	 * would run without asking asks */
	if (fv == TGI_FLOOR_BLIND && !*ask) {
		*ask = 1;
		tgi_snprintf(rule, cap, "floor cannot judge: %s", why);
	}
	if (worst == TGI_EP_FORBIDDEN) {
		cmd_text(worst_cmd, words, sizeof words);
		tgi_snprintf(msg, sizeof msg, "execpolicy forbids \"%s\"; do not retry; ask the owner",
		             words);
		return deny(c, worst_rule, msg);
	}
	if (*ask && g->cfg->mode == TGI_MODE_PLAN) {
		tgi_snprintf(msg, sizeof msg, "%s; plan mode runs no command it cannot judge; do not "
		             "retry", rule);
		return deny(c, rule, msg);
	}
	if (worst == TGI_EP_PROMPT && !*ask) {
		*ask = 1;
		tgi_snprintf(rule, cap, "%s", worst_rule);
	}
	return TGI_NEXT;
}

/* ---- read rules on what a command line reads (readonly.c names it) ---- */

#define READ_CWDS  8      /* directories a line may be in, followed through cd */
#define READ_GLOB  1024   /* names one glob word may expand to */

/* The first rule of kind, global or of the caller's roles, that names
 * read_file and could match dir or a path below it (NULL: any path). */
static const tgi_rule *read_rule_reaching(const tgi_call *c, tgi_rule_kind kind, const char *dir)
{
	tg_gate *g = c->g;
	const tgi_rule *r = tgi_ruleset_reaches(g->rules, kind, "read_file", dir);
	for (size_t i = 0; !r && i < c->principal->roles.n; i++)
		for (size_t j = 0; !r && j < g->cfg->nroles; j++)
			if (!strcmp(g->cfg->roles[j].name, c->principal->roles.v[i]))
				r = tgi_ruleset_reaches(g->role_rules[j], kind, "read_file", dir);
	return r;
}

/* p with "." and ".." parts folded and slashes single, into out; p is
 * absolute. */
static void fold_path(const char *p, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		size_t len = strcspn(s, "/");
		if (!len)
			break;
		if (len == 1 && s[0] == '.') {
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (n + len + 2 < cap) {
			out[n++] = '/';
			memcpy(out + n, s, len);
			n += len;
		}
		out[n] = '\0';
		s += len;
	}
	if (!n)
		tgi_snprintf(out, cap, "/");
}

/* abs (folded) relative to root, into rel: 1 when it lies inside. */
static int inside(const char *abs, const char *root, char *rel, size_t cap)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(abs, root, n) || (abs[n] != '/' && abs[n] != '\0'))
		return 0;
	tgi_snprintf(rel, cap, "%s", abs[n] ? abs + n + 1 : ".");
	return 1;
}

typedef struct read_judge {
	tgi_call   *c;
	const char *ws;             /* as configured */
	char        ws_real[4096];  /* resolved */
	int         sandboxed;      /* the sandbox hides what read rules name (bubblewrap) */
	int         ask;            /* an ask was found: rule says which */
	char        rule[512];
	char        msg[768];       /* a denial's sentence */
	const char *deny_rule;      /* set on a denial */
	char        deny_text[512];
} read_judge;

/* Judge one workspace-relative path (and what it resolves to) a command
 * reads; recursive: what lies below it too.  1 on a denial (j set). */
static int judge_rel(read_judge *j, const char *rel, int recursive)
{
	tgi_call *c = j->c;
	char res[4096], msg[512], shown[300];
	const char *why;
	if (tgi_path_resolve(c->g->ws_fd, rel, res, sizeof res) < 0)
		tgi_snprintf(res, sizeof res, "%s", rel);
	const char *forms[2] = {rel, res};
	for (int k = 0; k < 2; k++) {
		if (path_refused(c, forms[k], 0, msg, sizeof msg, &why)) {
			if (!strcmp(why, "floor"))
				tgi_snprintf(j->deny_text, sizeof j->deny_text, "floor: %s", msg);
			else
				tgi_snprintf(j->deny_text, sizeof j->deny_text, "%s", why);
			tgi_snprintf(j->msg, sizeof j->msg, "%s", msg);
			j->deny_rule = j->deny_text;
			return 1;
		}
	}
	json_t *args = json_pack("{s:s}", "path", rel);
	const char *paths[1] = {rel}, *resolved[1] = {res};
	tgi_match_input in = {
		.tool = "read_file", .args = args, .paths = paths, .resolved = resolved,
		.npaths = 1, .has_paths = 1,
	};
	const tgi_rule *d = first_rule(c, TGI_RULE_DENY, &in);
	const tgi_rule *a = d ? NULL : first_rule(c, TGI_RULE_ASK, &in);
	json_decref(args);
	tgi_sanitize(shown, sizeof shown, rel);
	if (d) {
		tgi_snprintf(j->deny_text, sizeof j->deny_text, "deny: %s", tgi_rule_text(d));
		tgi_snprintf(j->msg, sizeof j->msg, "policy does not allow reading \"%s\" (the command "
		             "reads it); do not retry; ask the owner", shown);
		j->deny_rule = j->deny_text;
		return 1;
	}
	if (a && !j->ask) {
		j->ask = 1;
		tgi_snprintf(j->rule, sizeof j->rule, "ask: %s", tgi_rule_text(a));
	}
	if (!recursive || j->ask || j->sandboxed)
		return 0;
	/* what lies below: the sandbox hides what deny rules name, and what
	 * ask rules name unless a person approves the call (tgi_read_masks);
	 * with no sandbox, a reading that reaches either asks */
	for (int k = 0; k < 2 && !j->ask; k++) {
		const tgi_rule *r = read_rule_reaching(c, TGI_RULE_DENY, forms[k]);
		if (!r)
			r = read_rule_reaching(c, TGI_RULE_ASK, forms[k]);
		if (r) {
			j->ask = 1;
			tgi_snprintf(j->rule, sizeof j->rule, "read rules: a recursive read of \"%s\" "
			             "reaches what %s names, and no sandbox hides it", shown,
			             tgi_rule_text(r));
		}
	}
	return 0;
}

/* Judge an absolute path a command reads: inside the workspace (as
 * written, or once resolved), as judge_rel; outside, not here (the floor
 * and the sandbox judge those). */
static int judge_abs(read_judge *j, const char *abs, int recursive)
{
	char folded[4096], rel[4096], real[4096];
	fold_path(abs, folded, sizeof folded);
	if (inside(folded, j->ws, rel, sizeof rel) || inside(folded, j->ws_real, rel, sizeof rel))
		return judge_rel(j, rel, recursive);
	if (realpath(folded, real) && inside(real, j->ws_real, rel, sizeof rel))
		return judge_rel(j, rel, recursive);
	return 0;
}

static void unknown_word(read_judge *j, const char *word)
{
	char shown[160];
	if (j->ask || !(read_rule_reaching(j->c, TGI_RULE_DENY, NULL) ||
	                read_rule_reaching(j->c, TGI_RULE_ASK, NULL)))
		return;
	tgi_sanitize(shown, sizeof shown, word);
	j->ask = 1;
	tgi_snprintf(j->rule, sizeof j->rule, "read rules: which files \"%s\" names cannot be told "
	             "before it runs", shown);
}

/* One word naming what a command reads, from each directory the line may
 * be in.  1 on a denial. */
static int judge_word(read_judge *j, const char *word, const tgi_strv *cwds, int recursive)
{
	char abs[8192], subst[8192];
	const char *home = home_dir();
	/* the variables the gate itself sets (tools/shell.c): HOME is the home
	 * (the workspace may lie in it), TMPDIR a private directory that never
	 * holds the workspace */
	static const char *const own[][2] = {{"$HOME", "~"}, {"${HOME}", "~"},
	                                     {"$TMPDIR", NULL}, {"${TMPDIR}", NULL}};
	for (size_t i = 0; i < TGI_ARRAY_LEN(own); i++) {
		size_t n = strlen(own[i][0]);
		if (strncmp(word, own[i][0], n) || (word[n] && word[n] != '/'))
			continue;
		if (!own[i][1])
			return 0;
		tgi_snprintf(subst, sizeof subst, "%s%s", own[i][1], word + n);
		word = subst;
		break;
	}
	if (strchr(word, '$') || strchr(word, '`') ||
	    (word[0] == '~' && word[1] && word[1] != '/')) {
		unknown_word(j, word);
		return 0;
	}
	for (size_t i = 0; i < cwds->n; i++) {
		if (word[0] == '/')
			tgi_snprintf(abs, sizeof abs, "%s", word);
		else if (word[0] == '~')
			tgi_snprintf(abs, sizeof abs, "%s%s", home, word + 1);
		else
			tgi_snprintf(abs, sizeof abs, "%s/%s", cwds->v[i], word[0] ? word : ".");
		if (!strpbrk(word, "*?[")) {
			if (judge_abs(j, abs, recursive))
				return 1;
			continue;
		}
		/* a glob: what the shell would expand it to now, else the word */
		glob_t gl;
		int r = glob(abs, GLOB_NOSORT | GLOB_NOCHECK, NULL, &gl);
		if (r != 0 || gl.gl_pathc > READ_GLOB) {
			if (r == 0)
				globfree(&gl);
			unknown_word(j, word);
			continue;
		}
		int denied = 0;
		for (size_t k = 0; k < gl.gl_pathc && !denied; k++)
			denied = judge_abs(j, gl.gl_pathv[k], recursive);
		globfree(&gl);
		if (denied)
			return 1;
	}
	return 0;
}

/* `cd DIR`: the line may now be in DIR (from each directory it may have
 * been in) as well; a directory it cannot tell makes every later relative
 * word unknown (cwds emptied, *lost set). */
static void follow_cd(const tgi_cmd *cmd, size_t p, tgi_strv *cwds, int *lost)
{
	const char *dir = NULL;
	char abs[8192], folded[4096];
	for (size_t i = p + 1; i < cmd->argc && !dir; i++)
		if (strcmp(cmd->argv[i], "-L") && strcmp(cmd->argv[i], "-P") &&
		    strcmp(cmd->argv[i], "--"))
			dir = cmd->argv[i];
	if (!dir)
		dir = "~";
	if (!strcmp(dir, "-") || strchr(dir, '$') || strchr(dir, '`') || strpbrk(dir, "*?[") ||
	    (dir[0] == '~' && dir[1] && dir[1] != '/') || cmd->argc > p + 3) {
		*lost = 1;
		return;
	}
	size_t n = cwds->n;
	for (size_t i = 0; i < n && !*lost; i++) {
		if (dir[0] == '/')
			tgi_snprintf(abs, sizeof abs, "%s", dir);
		else if (dir[0] == '~')
			tgi_snprintf(abs, sizeof abs, "%s%s", home_dir(), dir + 1);
		else
			tgi_snprintf(abs, sizeof abs, "%s/%s", cwds->v[i], dir);
		fold_path(abs, folded, sizeof folded);
		int have = 0;
		for (size_t k = 0; k < cwds->n && !have; k++)
			have = !strcmp(cwds->v[k], folded);
		if (have)
			continue;
		if (cwds->n >= READ_CWDS)
			*lost = 1;
		else
			tgi_strv_push(cwds, tgi_strdup(folded));
	}
}

/*
 * Read rules on what the line reads: every simple command in the
 * read-only class (wrappers peeled) is judged on the files it names
 * (tgi_shell_read_paths), from every directory the line may be in (the
 * workdir, then each `cd`), as read_file would judge them: the floor and
 * protected paths, then deny (stops) and ask rules.  What a recursive
 * reader (grep -r, find, ...) meets below a directory it names is hidden
 * by the sandbox (tgi_read_masks); with no sandbox that can hide it
 * (danger-full-access, Landlock) it asks when a deny or ask rule could
 * match there.  A word whose
 * files cannot be told (a variable, a glob over too much) asks when any
 * read rule exists.  Other commands are left to the rest of the policy
 * and to the sandbox, which hides what deny rules name (tgi_read_masks).
 */
static tgi_verdict read_rules(tgi_call *c, int *ask, char *rule, size_t cap)
{
	tg_gate *g = c->g;
	const tgi_shell_cfg *sh = &g->cfg->shell;
	/* only bubblewrap can hide a path inside the workspace (not Landlock) */
	read_judge j = {.c = c, .ws = g->cfg->workspace,
	                .sandboxed = g->cfg->sandbox_profile.mode != TGI_SANDBOX_FULL &&
	                             tgi_sandbox_probe()->backend == TGI_SB_BWRAP};
	tgi_strv cwds = {0}, words = {0};
	char start[8192], folded[4096];
	int lost = 0;
	if (!realpath(j.ws, j.ws_real))
		tgi_snprintf(j.ws_real, sizeof j.ws_real, "%s", j.ws);
	const char *wd = json_string_value(json_object_get(c->args, "workdir"));
	if (wd && wd[0] == '/')
		tgi_snprintf(start, sizeof start, "%s", wd);
	else
		tgi_snprintf(start, sizeof start, "%s/%s", j.ws, wd ? wd : ".");
	fold_path(start, folded, sizeof folded);
	tgi_strv_push(&cwds, tgi_strdup(folded));

	for (size_t i = 0; i < c->cmds.n && !j.deny_rule; i++) {
		const tgi_cmd *cmd = &c->cmds.v[i];
		if ((cmd->flags & TGI_CMD_OPAQUE) || !cmd->argc)
			continue;
		size_t p = tgi_shell_program(cmd);
		if (p >= cmd->argc)
			p = 0;
		if (!strcmp(tgi_shell_basename(cmd->argv[p]), "cd")) {
			follow_cd(cmd, p, &cwds, &lost);
			continue;
		}
		if (!tgi_shell_reads_only(cmd, p, &sh->read_only, sh->read_only_replace))
			continue;
		int recursive = 0;
		tgi_strv_free(&words);
		tgi_shell_read_paths(cmd, p, &words, &recursive);
		for (size_t k = 0; k < words.n && !j.deny_rule; k++) {
			if (lost && words.v[k][0] != '/' && words.v[k][0] != '~')
				unknown_word(&j, words.v[k]);
			else
				judge_word(&j, words.v[k], &cwds, recursive);
		}
	}
	tgi_strv_free(&cwds);
	tgi_strv_free(&words);
	if (j.deny_rule)
		return deny(c, j.deny_rule, j.msg);
	if (j.ask && !*ask) {
		*ask = 1;
		tgi_snprintf(rule, cap, "%s", j.rule);
	}
	return TGI_NEXT;
}

/*
 * Is every simple command of the line allowed, each by an allow rule
 * (global or a role's) or by execpolicy `allow`?  A rule covers a command
 * only as written (wrappers are not peeled for allow), never an opaque or
 * empty one.  rule gets the rules that did, "allow: A, B".
 */
static int commands_allowed(const tgi_call *c, const tgi_match_input *in, char *rule, size_t cap)
{
	tgi_match_input one = *in;
	tgi_snprintf(rule, cap, "allow:");
	for (size_t i = 0; i < c->cmds.n; i++) {
		const tgi_cmd *cmd = &c->cmds.v[i];
		char rt[512] = "", part[520];
		if ((cmd->flags & TGI_CMD_OPAQUE) || !cmd->argc)
			return 0;
		tgi_cmdline single = {.v = (tgi_cmd *)cmd, .n = 1};
		one.cmds = &single;
		const tgi_rule *r = first_rule(c, TGI_RULE_ALLOW, &one);
		if (r)
			tgi_snprintf(part, sizeof part, "%s", tgi_rule_text(r));
		else if (tgi_execpolicy_eval(c->g->execpolicy, &c->g->ep_resolve,
		                             (const char *const *)cmd->argv, cmd->argc,
		                             NULL, rt, sizeof rt) == TGI_EP_ALLOW)
			tgi_snprintf(part, sizeof part, "%s", rt);
		else
			return 0;
		size_t n = strlen(rule);
		if (!strstr(rule, part))
			tgi_snprintf(rule + n, cap - n, "%s %s", i ? "," : "", part);
	}
	return c->cmds.n > 0;
}

tgi_verdict tgi_decide(tgi_call *c)
{
	tg_gate *g = c->g;
	const char *why;
	char msg[768], rule[512];
	int writing = !(c->contract & TGI_T_READ_ONLY);

	char reason[256];
	int avail = tgi_registry_available(g->reg, c->entry, reason, sizeof reason);
	if (avail == -1) {            /* down for now: not run, and worth a retry */
		deny(c, "unavailable", reason);
		c->kind = TG_ERR_TRANSIENT;
		c->retry_after_s = 2;
		return TGI_STOP;
	}
	if (avail != 1)
		return deny(c, "unavailable", reason);

	/* an absolute path outside the workspace (validate kept it out of the
	 * paths): the root named, so that the model can name a file inside */
	char root[200];
	if (c->outside[0]) {
		tgi_workspace_shown(g->cfg, root, sizeof root);
		tgi_snprintf(msg, sizeof msg,
		             "path \"%s\" is outside the workspace root %s; tools reach only files "
		             "under it, named relative to it (\"src/a.c\") or absolute; do not retry "
		             "this path", c->outside, root);
		return deny(c, "confinement: outside the workspace", msg);
	}

	int cmd_ask = 0;
	char cmd_rule[512] = "";
	if (c->has_cmds && command_gates(c, &cmd_ask, cmd_rule, sizeof cmd_rule) == TGI_STOP)
		return TGI_STOP;
	if (c->has_cmds && read_rules(c, &cmd_ask, cmd_rule, sizeof cmd_rule) == TGI_STOP)
		return TGI_STOP;

	/* resolve every path inside the workspace; leaving it is a denial */
	for (size_t i = 0; i < c->npaths; i++) {
		/* a writing tool replaces the final component rather than writing
		 * through it: judge what it will replace */
		char res[4096];
		int rc = writing ? tgi_path_resolve_parent(g->ws_fd, c->paths[i], res, sizeof res)
		                 : tgi_path_resolve(g->ws_fd, c->paths[i], res, sizeof res);
		if (rc == -EXDEV || rc == -ELOOP) {
			tgi_workspace_shown(g->cfg, root, sizeof root);
			tgi_snprintf(msg, sizeof msg,
			             "path \"%s\" leaves the workspace (its root is %s); do not retry; "
			             "ask the owner", c->paths[i], root);
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
	for (size_t i = 0; i < c->npaths; i++) {
		const char *p[2] = {c->paths[i], c->resolved[i]};
		for (int j = 0; j < 2; j++) {
			if (!path_refused(c, p[j], writing, msg, sizeof msg, &why))
				continue;
			if (!strcmp(why, "floor"))
				tgi_snprintf(rule, sizeof rule, "floor: %s", msg);
			else
				tgi_snprintf(rule, sizeof rule, "%s", why);
			return deny(c, rule, msg);
		}
	}

	tgi_match_input in = {
		.tool = c->tool,
		.args = c->args,
		.paths = (const char *const *)c->paths,
		.resolved = (const char *const *)c->resolved,
		.npaths = c->npaths,
		.has_paths = c->entry->row->paths != NULL,
		.cmds = c->has_cmds ? &c->cmds : NULL,
	};
	const tgi_rule *r;
	if ((r = path_rule(c, TGI_RULE_DENY, &in))) {
		tgi_snprintf(rule, sizeof rule, "deny: %s", tgi_rule_text(r));
		tgi_snprintf(msg, sizeof msg,
		             "policy does not allow %s with these arguments; do not retry; ask the owner",
		             c->tool);
		return deny(c, rule, msg);
	}
	const tgi_rule *allow = first_rule(c, TGI_RULE_ALLOW, &in);
	char parts_rule[512];
	int parts_allowed = c->has_cmds && commands_allowed(c, &in, parts_rule, sizeof parts_rule);
	if (!allow && !parts_allowed && (c->contract & TGI_T_REQUIRES_GRANT)) {
		tgi_snprintf(msg, sizeof msg,
		             "principal \"%s\" holds no grant for %s with these arguments; do not "
		             "retry; ask the owner", c->principal->name, c->tool);
		return deny(c, "requires_grant: no allow rule matches", msg);
	}
	/* a configured `destructive: true` runs unasked only under an allow
	 * rule that names the tool: `*` may grant it, never lift the asking */
	if (c->contract & TGI_T_CONFIRM) {
		allow = allow ? first_in(c, g->named, g->role_named, TGI_RULE_ALLOW, &in) : NULL;
		parts_allowed = 0;
	}
	if (cmd_ask) {
		record(c, TGI_ASK, cmd_rule);
		return TGI_NEXT;
	}
	if ((r = path_rule(c, TGI_RULE_ASK, &in))) {
		tgi_snprintf(rule, sizeof rule, "ask: %s", tgi_rule_text(r));
		record(c, TGI_ASK, rule);
		return TGI_NEXT;
	}
	/* a hook tightens: its ask outranks any allow, never plan mode's deny */
	if (c->hook_ask && (allow || parts_allowed || mode_default(c, &why) != TGI_DENY)) {
		record(c, TGI_ASK, c->hook_rule);
		return TGI_NEXT;
	}
	if (allow) {
		tgi_snprintf(rule, sizeof rule, "allow: %s", tgi_rule_text(allow));
		record(c, TGI_ALLOW, rule);
		return TGI_NEXT;
	}
	if (parts_allowed) {
		record(c, TGI_ALLOW, parts_rule);
		return TGI_NEXT;
	}

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
