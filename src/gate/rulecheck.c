/*
 * rulecheck.c — the configuration's permission rules, compiled and checked
 * against the tools there are (rulecheck.h).
 *
 * Every rule of `permissions:` and of each role is parsed (policy/rules.c)
 * into an anchored ruleset: its paths start where Claude Code's do (the
 * workspace, the configuration's directory for `/x`, home for `~/x`, the
 * root for `//x`).  Then each is checked, because a rule that names
 * nothing denies nothing:
 *   - its tools (the tool part, or what a Claude Code name stands for):
 *     an exact name must be a tool of the registry, a glob must match one,
 *     or either must be able to name a tool of a configured MCP server
 *     (its prefix, `<server>__` by default); `mcp__server…` must name a
 *     configured server;
 *   - its specifier: a path on tools none of which takes paths, a
 *     key=glob pair on an argument none of its tools' input schemas has
 *     (a schema without `properties` takes any), or on a deprecated name
 *     (`aliases:`), which a call never carries by the time it is judged;
 *     a path made absolute (`/x` from the configuration's directory, `~/x`,
 *     `//x`) that lies wholly outside the workspace is reported.
 * Each problem is an error at load: file:line:col, the key path, the rule,
 * and a suggestion (the nearest name: tgi_closest) or the names there are.
 * What may name a bridged tool waits for its server's listing
 * (tgi_rulecheck_listed) and is checked then, against what it listed; a
 * rule written in Claude Code's name of a tool toolgate lacks is kept and
 * matches nothing.  Both are reported, not refused: the servers' tools are
 * not the configuration's to fix, and a copied Claude Code block must
 * load.
 *
 * Owns: compiling the rules, the check, the findings (under their own
 * lock: a server's thread reports a listing).  Must not: parse rule text,
 * decide calls, or start a server except to report (doctor, policy test).
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/rulecheck.h"
#include "gate/gate.h"
#include "util/util.h"

#define NAMES_SHOWN 12      /* names listed in a sentence before "..." */
#define PREFIX_CAP  80      /* a server's prefix (the bridge allows 64 bytes) */

typedef struct pending {
	const tgi_rule *rule;   /* borrowed from g's rulesets, which outlive the check */
	char      where[300];   /* file:line:col */
	tgi_strv  servers;      /* the configured servers whose tools it may name */
	tgi_strv  listed;       /* of those, the ones that have listed theirs */
	int       matched;      /* one of its targets names a tool now */
	char      why[600];     /* what the last listing found wrong ("" nothing) */
} pending;

struct tgi_rulecheck {
	pthread_mutex_t mu;
	pending *v;
	size_t   n;
	json_t  *notes;         /* [{rule, where, why}] known at load */
	int      quiet;         /* a report started the servers: it says what they found */
};

/* ---- names ---- */

typedef struct entries {
	const tgi_entry **v;
	size_t            n, cap;
} entries;

static int has_glob(const char *s)
{
	return strpbrk(s, "*?") != NULL;
}

/* The prefix of the tools of server `name` (section v): its `prefix:`, else
 * "<name>__". */
static void prefix_of(const char *name, const json_t *v, char *out, size_t cap)
{
	const char *p = json_string_value(json_object_get(v, "prefix"));
	if (p)
		tgi_snprintf(out, cap, "%s", p);
	else
		tgi_snprintf(out, cap, "%s__", name);
}

/* Can the text glob g (`*`, `?`, literals) match a name that starts with
 * prefix?  The positions of g reachable after each byte of prefix; any
 * rest of a glob can be met by some continuation. */
static int may_start(const char *g, const char *prefix)
{
	size_t gl = strlen(g);
	unsigned char *cur = tgi_xcalloc(gl + 1, 1), *nxt = tgi_xcalloc(gl + 1, 1);
	int any = 1;
	cur[0] = 1;
	for (const char *p = prefix; *p && any; p++) {
		for (size_t k = 0; k < gl; k++)          /* a star may take nothing */
			if (cur[k] && g[k] == '*')
				cur[k + 1] = 1;
		memset(nxt, 0, gl + 1);
		any = 0;
		for (size_t k = 0; k < gl; k++) {
			if (!cur[k])
				continue;
			if (g[k] == '*')
				nxt[k] = any = 1;
			else if (g[k] == '?' || g[k] == *p)
				nxt[k + 1] = any = 1;
		}
		unsigned char *t = cur;
		cur = nxt;
		nxt = t;
	}
	free(cur);
	free(nxt);
	return any;
}

/* Does target name a tool server (prefix) could list? */
static int server_may_have(const char *target, const char *prefix)
{
	size_t n = strlen(prefix);
	if (has_glob(target))
		return may_start(target, prefix);
	return !strncmp(target, prefix, n) && target[n];
}

static void push_unique(tgi_strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return;
	tgi_strv_push(v, tgi_strdup(s));
}

/* The configured servers whose tools one of r's targets may name. */
static void servers_for(const tgi_config *cfg, const tgi_rule *r, tgi_strv *out)
{
	const char *name;
	json_t *v;
	char prefix[PREFIX_CAP];
	json_object_foreach(cfg->mcp_servers, name, v) {
		prefix_of(name, v, prefix, sizeof prefix);
		for (size_t i = 0; i < tgi_rule_ntargets(r); i++)
			if (server_may_have(tgi_rule_target(r, i), prefix)) {
				push_unique(out, name);
				break;
			}
	}
}

/* The registry's tools one of r's targets names, into es. */
static void entries_for(tgi_registry *reg, const tgi_rule *r, entries *es)
{
	es->n = 0;
	for (size_t i = 0; i < tgi_registry_count(reg); i++) {
		const tgi_entry *e = tgi_registry_at(reg, i);
		int hit = 0;
		for (size_t k = 0; e && k < tgi_rule_ntargets(r) && !hit; k++)
			hit = tgi_text_glob(tgi_rule_target(r, k), e->row->name);
		if (!hit)
			continue;
		if (es->n == es->cap) {
			es->cap = es->cap ? 2 * es->cap : 16;
			es->v = tgi_xrealloc(es->v, es->cap * sizeof *es->v);
		}
		es->v[es->n++] = e;
	}
}

/* "a, b, c" of up to NAMES_SHOWN names, "..." after. */
static void join(tgi_buf *b, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i == NAMES_SHOWN) {
			tgi_buf_puts(b, ", ...");
			break;
		}
		tgi_buf_printf(b, "%s%s", i ? ", " : "", names[i]);
	}
}

/* The registry's tool names (those starting with prefix when not NULL),
 * borrowed, into names. */
static void tool_names(tgi_registry *reg, const char *prefix, tgi_strv *names)
{
	for (size_t i = 0; i < tgi_registry_count(reg); i++) {
		const tgi_entry *e = tgi_registry_at(reg, i);
		if (e && (!prefix || !strncmp(e->row->name, prefix, strlen(prefix))))
			tgi_strv_push(names, tgi_strdup(e->row->name));
	}
}

/* "; did you mean X?" for word among names, else "; <what>: a, b, ..."
 * (nothing when there are none), appended to b. */
static void suggest(tgi_buf *b, const char *word, const tgi_strv *names, const char *what)
{
	const char *near = word ? tgi_closest(word, (const char *const *)names->v, names->n) : NULL;
	if (near) {
		tgi_buf_printf(b, "; did you mean %s?", near);
	} else if (names->n) {
		tgi_buf_printf(b, "; %s: ", what);
		join(b, (const char *const *)names->v, names->n);
	}
}

/* The first token of a key (a property name, or a JSON pointer's first
 * reference token unescaped) into out. */
static void first_token(const char *key, char *out, size_t cap)
{
	size_t n = 0;
	if (key[0] != '/') {
		tgi_snprintf(out, cap, "%s", key);
		return;
	}
	for (const char *p = key + 1; *p && *p != '/' && n + 1 < cap; p++) {
		char c = *p;
		if (c == '~' && (p[1] == '0' || p[1] == '1'))
			c = *++p == '0' ? '~' : '/';
		out[n++] = c;
	}
	out[n] = '\0';
}

/* Does e take the argument tok: 1 yes (or its schema does not say: no
 * `properties`, or `patternProperties`), 0 no, -1 it is a deprecated name
 * (*to: the name calls carry instead). */
static int takes_arg(const tgi_entry *e, const char *tok, const char **to)
{
	const json_t *props = json_object_get(e->schema_json, "properties");
	const json_t *nw = e->aliases ? json_object_get(e->aliases, tok) : NULL;
	if (json_is_string(nw)) {
		*to = json_string_value(nw);
		return -1;
	}
	if (!json_is_object(props) || json_object_size(json_object_get(e->schema_json,
	                                                               "patternProperties")))
		return 1;
	return json_object_get(props, tok) != NULL;
}

/*
 * What is wrong with r's specifier for the tools es (a sentence appended to
 * b, and 1), judged only where it can be: defer says the rule may also
 * name tools not listed yet, so a key none of es takes is not (yet) wrong.
 */
static int spec_wrong(const tgi_rule *r, const entries *es, int defer, tgi_buf *b)
{
	if (!es->n)
		return 0;
	if (tgi_rule_is_path(r)) {
		for (size_t i = 0; i < es->n; i++)
			if (es->v[i]->row->paths)
				return 0;
		if (defer)
			return 0;
		const char *t = es->v[0]->row->name, *key = "key";
		void *it = json_object_iter(json_object_get(es->v[0]->schema_json, "properties"));
		if (it)
			key = json_object_iter_key(it);
		if (es->n == 1)
			tgi_buf_printf(b, "%s takes no paths; write key=glob pairs, e.g. %s(%s=...)", t, t,
			               key);
		else
			tgi_buf_printf(b, "none of the tools it names takes paths");
		return 1;
	}
	for (size_t k = 0; k < tgi_rule_nkeys(r); k++) {
		char tok[256];
		const char *to = NULL, *alias_of = NULL;
		int known = 0;
		first_token(tgi_rule_key(r, k), tok, sizeof tok);
		for (size_t i = 0; i < es->n && !known; i++) {
			int t = takes_arg(es->v[i], tok, &to);
			known = t == 1;
			if (t < 0)
				alias_of = to;
		}
		if (known)
			continue;
		if (alias_of) {
			tgi_buf_printf(b, "\"%s\" is a deprecated name of \"%s\" (aliases), which calls "
			               "carry instead by the time they are judged; write %s=...", tok,
			               alias_of, alias_of);
			return 1;
		}
		if (defer)
			continue;
		tgi_strv props = {0};
		const char *name;
		json_t *v;
		for (size_t i = 0; i < es->n; i++)
			json_object_foreach(json_object_get(es->v[i]->schema_json, "properties"), name, v)
				push_unique(&props, name);
		if (es->n == 1)
			tgi_buf_printf(b, "%s has no argument \"%s\"", es->v[0]->row->name, tok);
		else
			tgi_buf_printf(b, "none of the tools it names has an argument \"%s\"", tok);
		suggest(b, tok, &props, "its arguments are");
		tgi_strv_free(&props);
		return 1;
	}
	return 0;
}

/* ---- at load ---- */

static void note(tgi_rulecheck *rc, const tgi_rule *r, const char *where, const char *why)
{
	json_array_append_new(rc->notes, json_pack("{s:s, s:s, s:s}", "rule", tgi_rule_text(r),
	                                           "where", where, "why", why));
}

/* The sentence for a rule that names no tool, into b: the nearest name
 * (of the tools and of Claude Code's names), else the tools there are. */
static void unknown_tool(tg_gate *g, const tgi_rule *r, tgi_buf *b)
{
	const char *tool = tgi_rule_tool(r), *near = NULL;
	tgi_strv names = {0}, all = {0};
	tool_names(g->reg, NULL, &names);
	tool_names(g->reg, NULL, &all);
	for (size_t i = 0; tgi_rule_claude_name(i); i++)
		tgi_strv_push(&all, tgi_strdup(tgi_rule_claude_name(i)));
	if (!has_glob(tool)) {
		tgi_buf_printf(b, "no tool is named %s", tool);
		near = tgi_closest(tool, (const char *const *)all.v, all.n);
	} else {
		tgi_buf_printf(b, "it matches no tool");
	}
	if (near)
		tgi_buf_printf(b, "; did you mean %s?", near);
	else
		suggest(b, NULL, &names, "the tools are");
	if (!json_object_size(g->cfg->mcp_servers) && strstr(tool, "__"))
		tgi_buf_puts(b, " (no MCP server is configured)");
	tgi_strv_free(&names);
	tgi_strv_free(&all);
}

static int check_rule(tg_gate *g, const tgi_rule *r, const char *ptr, char *err, size_t errlen)
{
	const tgi_config *cfg = g->cfg;
	tgi_rulecheck *rc = g->rulecheck;
	const char *text = tgi_rule_text(r), *cc = tgi_rule_claude(r), *srv = tgi_rule_server(r);
	char where[300];
	tgi_buf b;
	entries es = {0};
	tgi_strv servers = {0};
	int rcode = 0;

	tgi_config_where(cfg, ptr, where, sizeof where);
	tgi_buf_init(&b, 1024);
	if (cc && !tgi_rule_ntargets(r)) {
		tgi_buf_printf(&b, "Claude Code's %s has no counterpart among toolgate's tools: the rule "
		               "matches no call", cc);
		note(rc, r, where, b.p);
		goto done;
	}
	if (cc && tgi_registry_find(g->reg, tgi_rule_tool(r))) {
		tgi_buf_printf(&b, "%s is Claude Code's name for ", cc);
		for (size_t i = 0; i < tgi_rule_ntargets(r); i++)
			tgi_buf_printf(&b, "%s%s", i ? ", " : "", tgi_rule_target(r, i));
		tgi_buf_printf(&b, " here, and a configured tool has that name too: rename the tool");
		goto fail;
	}
	if (srv && !json_object_get(cfg->mcp_servers, srv)) {
		tgi_strv names = {0};
		const char *name;
		json_t *v;
		json_object_foreach(cfg->mcp_servers, name, v)
			tgi_strv_push(&names, tgi_strdup(name));
		tgi_buf_printf(&b, "it names the MCP server \"%s\", but no server of that name is "
		               "configured", srv);
		if (names.n)
			suggest(&b, srv, &names, "the servers are");
		else
			tgi_buf_puts(&b, " (mcp_servers is empty)");
		tgi_strv_free(&names);
		goto fail;
	}
	if (tgi_rule_outside(r)) {
		tgi_buf_printf(&b, "its path lies outside the workspace (%s): it matches no call",
		               cfg->workspace);
		note(rc, r, where, b.p);
		tgi_buf_free(&b);
		tgi_buf_init(&b, 1024);
	}
	entries_for(g->reg, r, &es);
	servers_for(cfg, r, &servers);
	if (!es.n && !servers.n) {
		unknown_tool(g, r, &b);
		goto fail;
	}
	if (spec_wrong(r, &es, servers.n > 0, &b))
		goto fail;
	tgi_buf scratch;
	tgi_buf_init(&scratch, 1024);
	int later = servers.n && (!es.n || spec_wrong(r, &es, 0, &scratch));
	tgi_buf_free(&scratch);
	if (later) {
		/* checked again, with the servers' tools, when they list them */
		rc->v = tgi_xrealloc(rc->v, (rc->n + 1) * sizeof *rc->v);
		pending *p = &rc->v[rc->n++];
		*p = (pending){.rule = r, .servers = servers, .matched = es.n > 0};
		tgi_snprintf(p->where, sizeof p->where, "%s", where);
		servers = (tgi_strv){0};
	}
	goto done;
fail:
	rcode = tgi_config_fail(cfg, ptr, err, errlen, "rule \"%s\": %s", text,
	                        b.p ? b.p : "a bad rule");
done:
	tgi_buf_free(&b);
	tgi_strv_free(&servers);
	free(es.v);
	return rcode;
}

/* One list of rule texts into rs, each refused with its place. */
static int add_rules(tg_gate *g, tgi_ruleset *rs, const tgi_strv *v, tgi_rule_kind kind,
                     const char *base, char **errmsg)
{
	char err[512], ptr[256], msg[1024];
	for (size_t i = 0; i < v->n; i++) {
		if (tgi_ruleset_add(rs, kind, v->v[i], err, sizeof err) == 0)
			continue;
		tgi_snprintf(ptr, sizeof ptr, "%s/%zu", base, i);
		tgi_config_fail(g->cfg, ptr, msg, sizeof msg, "%s", err);
		return tgi_fail(errmsg, "%s", msg);
	}
	return 0;
}

/* The allow rules of v whose tool part has no wildcard (they were checked
 * already): the rules that may let a `destructive: true` tool run unasked. */
static tgi_ruleset *named_allows(const tgi_strv *v, const tgi_rule_env *env)
{
	char err[64];
	tgi_ruleset *rs = tgi_ruleset_new();
	tgi_ruleset_anchor(rs, env);
	for (size_t i = 0; i < v->n; i++) {
		const char *t = v->v[i];
		size_t tool = strcspn(t, "(");
		/* `mcp__server` alone stands for all of a server's tools */
		int server = !strncmp(t, "mcp__", 5) &&
		             !memmem(t + 5, tool > 5 ? tool - 5 : 0, "__", 2);
		if (strcspn(t, "*?[") >= tool && !server)
			tgi_ruleset_add(rs, TGI_RULE_ALLOW, t, err, sizeof err);
	}
	return rs;
}

static int check_set(tg_gate *g, const tgi_ruleset *rs, const char *base, char **errmsg)
{
	char ptr[300], msg[1024];
	for (int k = 0; k < TGI_NDECISIONS; k++)
		for (size_t i = 0; i < tgi_ruleset_count(rs, (tgi_rule_kind)k); i++) {
			tgi_snprintf(ptr, sizeof ptr, "%s/%s/%zu", base, tgi_decision_name((tgi_decision)k), i);
			if (check_rule(g, tgi_ruleset_at(rs, (tgi_rule_kind)k, i), ptr, msg, sizeof msg) < 0)
				return tgi_fail(errmsg, "%s", msg);
		}
	return 0;
}

int tgi_rules_compile(tg_gate *g, char **errmsg)
{
	tgi_config *cfg = g->cfg;
	char settings[PATH_MAX], base[256], esc[200], prefix[PREFIX_CAP];
	const char *home = getenv("HOME"), *name;
	json_t *v;
	if (!home || home[0] != '/')
		home = tgi_passwd_home();
	tgi_rule_env env = {
		.workspace = cfg->workspace,
		.workspace_given = cfg->workspace_given,
		.settings_dir = cfg->dir && realpath(cfg->dir, settings) ? settings : cfg->dir,
		.home = home,
	};

	g->rulecheck = tgi_xcalloc(1, sizeof *g->rulecheck);
	pthread_mutex_init(&g->rulecheck->mu, NULL);
	g->rulecheck->notes = json_array();
	g->rules = tgi_ruleset_new();
	tgi_ruleset_anchor(g->rules, &env);
	const tgi_strv *lists[] = {&cfg->allow, &cfg->ask, &cfg->deny};
	for (int k = 0; k < TGI_NDECISIONS; k++) {
		tgi_snprintf(base, sizeof base, "/permissions/%s", tgi_decision_name((tgi_decision)k));
		if (add_rules(g, g->rules, lists[k], (tgi_rule_kind)k, base, errmsg) < 0)
			return -1;
	}
	g->named = named_allows(&cfg->allow, &env);
	g->role_rules = tgi_xcalloc(cfg->nroles ? cfg->nroles : 1, sizeof *g->role_rules);
	g->role_named = tgi_xcalloc(cfg->nroles ? cfg->nroles : 1, sizeof *g->role_named);
	for (size_t i = 0; i < cfg->nroles; i++) {
		tgi_role_cfg *r = &cfg->roles[i];
		const tgi_strv *rl[] = {&r->allow, &r->ask, &r->deny};
		g->role_rules[i] = tgi_ruleset_new();
		tgi_ruleset_anchor(g->role_rules[i], &env);
		tgi_json_pointer_join(esc, sizeof esc, "", r->name);
		for (int k = 0; k < TGI_NDECISIONS; k++) {
			tgi_snprintf(base, sizeof base, "/roles%s/%s", esc, tgi_decision_name((tgi_decision)k));
			if (add_rules(g, g->role_rules[i], rl[k], (tgi_rule_kind)k, base, errmsg) < 0)
				return -1;
		}
		g->role_named[i] = named_allows(&r->allow, &env);
	}
	/* `mcp__server…` names the tools by the server's prefix */
	json_object_foreach(cfg->mcp_servers, name, v) {
		prefix_of(name, v, prefix, sizeof prefix);
		tgi_ruleset_mcp_prefix(g->rules, name, prefix);
		tgi_ruleset_mcp_prefix(g->named, name, prefix);
		for (size_t i = 0; i < cfg->nroles; i++) {
			tgi_ruleset_mcp_prefix(g->role_rules[i], name, prefix);
			tgi_ruleset_mcp_prefix(g->role_named[i], name, prefix);
		}
	}
	if (check_set(g, g->rules, "/permissions", errmsg) < 0)
		return -1;
	for (size_t i = 0; i < cfg->nroles; i++) {
		tgi_json_pointer_join(esc, sizeof esc, "", cfg->roles[i].name);
		tgi_snprintf(base, sizeof base, "/roles%s", esc);
		if (check_set(g, g->role_rules[i], base, errmsg) < 0)
			return -1;
	}
	return 0;
}

/* ---- when a server lists ---- */

static int all_listed(const pending *p)
{
	return p->listed.n == p->servers.n;
}

/* Check p against the tools there are now (rc->mu held). */
static void recheck(tg_gate *g, pending *p)
{
	entries es = {0};
	tgi_buf b;
	tgi_buf_init(&b, sizeof p->why - 1);
	entries_for(g->reg, p->rule, &es);
	p->matched = es.n > 0;
	if (es.n) {
		spec_wrong(p->rule, &es, !all_listed(p), &b);
	} else if (all_listed(p)) {
		const char *tool = tgi_rule_tool(p->rule);
		tgi_strv names = {0};
		char prefix[PREFIX_CAP];
		for (size_t i = 0; i < p->servers.n; i++) {
			prefix_of(p->servers.v[i], json_object_get(g->cfg->mcp_servers, p->servers.v[i]),
			          prefix, sizeof prefix);
			tool_names(g->reg, prefix, &names);
		}
		tgi_buf_printf(&b, "it matches no tool: ");
		for (size_t i = 0; i < p->servers.n; i++)
			tgi_buf_printf(&b, "%s\"%s\"", i ? (i + 1 == p->servers.n ? " and " : ", ") : "",
			               p->servers.v[i]);
		tgi_buf_printf(&b, " listed no such tool");
		suggest(&b, has_glob(tool) || tgi_rule_server(p->rule) ? tgi_rule_target(p->rule, 0)
		                                                        : tool,
		        &names, "they list");
		tgi_strv_free(&names);
	}
	const char *now = b.p ? b.p : "";
	if (now[0] && strcmp(now, p->why) && !g->rulecheck->quiet)
		fprintf(stderr, "toolgate: %s: rule \"%s\": %s\n", p->where, tgi_rule_text(p->rule), now);
	tgi_snprintf(p->why, sizeof p->why, "%s", now);
	tgi_buf_free(&b);
	free(es.v);
}

void tgi_rulecheck_listed(tg_gate *g, const char *server)
{
	tgi_rulecheck *rc = g ? g->rulecheck : NULL;
	if (!rc || !server)
		return;
	pthread_mutex_lock(&rc->mu);
	for (size_t i = 0; i < rc->n; i++) {
		pending *p = &rc->v[i];
		int mine = 0;
		for (size_t k = 0; k < p->servers.n && !mine; k++)
			mine = !strcmp(p->servers.v[k], server);
		if (!mine)
			continue;
		push_unique(&p->listed, server);
		recheck(g, p);
	}
	pthread_mutex_unlock(&rc->mu);
}

/* ---- the report ---- */

json_t *tgi_rulecheck_report(tg_gate *g)
{
	tgi_rulecheck *rc = g->rulecheck;
	json_t *out = json_array();
	char err[1024];
	if (!rc)
		return out;
	pthread_mutex_lock(&rc->mu);
	int waiting = 0;
	for (size_t i = 0; i < rc->n && !waiting; i++)
		waiting = !all_listed(&rc->v[i]);
	pthread_mutex_unlock(&rc->mu);
	/* a rule waits for a server's listing: start the servers to have it */
	if (waiting) {
		pthread_mutex_lock(&rc->mu);
		rc->quiet = 1;
		pthread_mutex_unlock(&rc->mu);
		if (tgi_gate_every_tool(g, err, sizeof err) < 0)
			json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "rule", "(bridged tools)",
			                      "where", "mcp_servers", "why", err));
	}
	json_array_extend(out, rc->notes);
	pthread_mutex_lock(&rc->mu);
	for (size_t i = 0; i < rc->n; i++) {
		pending *p = &rc->v[i];
		char why[700];
		if (p->why[0]) {
			tgi_snprintf(why, sizeof why, "%s", p->why);
		} else if (!p->matched && !all_listed(p)) {
			char told[400] = "";
			const char *t = tgi_rule_target(p->rule, 0);
			if (!has_glob(t))
				tgi_registry_explain(g->reg, t, told, sizeof told);
			tgi_snprintf(why, sizeof why, "not checked: %s",
			             told[0] ? told : "its server has not listed its tools");
		} else {
			continue;
		}
		json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "rule", tgi_rule_text(p->rule),
		                                     "where", p->where, "why", why));
	}
	pthread_mutex_unlock(&rc->mu);
	return out;
}

void tgi_rulecheck_free(tgi_rulecheck *rc)
{
	if (!rc)
		return;
	for (size_t i = 0; i < rc->n; i++) {
		tgi_strv_free(&rc->v[i].servers);
		tgi_strv_free(&rc->v[i].listed);
	}
	free(rc->v);
	json_decref(rc->notes);
	pthread_mutex_destroy(&rc->mu);
	free(rc);
}
