/*
 * bridge_rows.c — the rows of bridged tools (see bridge.c): a downstream
 * tool turned into a registry row (filters, the exposed name, the name and
 * schema checks, aliases, the contract its annotations give), and a
 * listing put into the registry.
 *
 * Owns: the rows a server made (freed with the bridge), its skipped tools.
 * Must not: talk to the server (bridge_server.c does) or free a row the
 * registry may still hand out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/bridge_int.h"
#include "gate/gate.h"
#include "policy/policy.h"

/* ---- rows ---- */

void tgi_br_btool_free(btool *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->remote);
	free(t->title);
	free(t->description);
	free(t->annotations);
	free(t->def);
	json_decref(t->aliases);
	free(t);
}

/* The contract from a trusted server's annotations (MCP's defaults:
 * destructiveHint true unless read-only, idempotentHint false). */
static unsigned contract_of(const srv *s, const json_t *ann)
{
	if (!s->trusted || !json_is_object(ann))
		return 0;
	if (json_is_true(json_object_get(ann, "readOnlyHint")))
		return TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE |
		       (json_is_true(json_object_get(ann, "idempotentHint")) ? TGI_T_IDEMPOTENT : 0);
	unsigned f = json_is_false(json_object_get(ann, "destructiveHint")) ? 0 : TGI_T_DESTRUCTIVE;
	if (json_is_true(json_object_get(ann, "idempotentHint")))
		f |= TGI_T_IDEMPOTENT;
	return f;
}

/*
 * The configured aliases of remote that its listed input schema allows (a
 * new reference, or NULL): an old name must not be one of its properties
 * (it would never be rewritten), a new one must be (else the rewritten
 * value would go unchecked).  The schema is the server's, not the
 * operator's: an alias it breaks is left out with one line on stderr.
 */
static json_t *tool_aliases(const srv *s, const char *remote, const json_t *in)
{
	const json_t *want = json_object_get(s->aliases, remote);
	const json_t *props = json_object_get(in, "properties");
	const char *old;
	json_t *nw, *out;

	if (!want)
		return NULL;
	out = json_object();
	json_object_foreach((json_t *)want, old, nw) {
		const char *to = json_string_value(nw);
		char so[72], sn[72], st[TOOL_NAME_MAX + 8];
		const char *why = NULL;
		if (json_object_get(props, old))
			why = "the old name is still a property of its input schema";
		else if (!json_is_object(props))
			why = "its input schema lists no properties";
		else if (!json_object_get(props, to))
			why = "the new name is not a property of its input schema";
		if (!why) {
			json_object_set_new(out, old, json_string(to));
			continue;
		}
		tgi_sanitize_n(so, sizeof so, old, strlen(old), 64);
		tgi_sanitize_n(sn, sizeof sn, to, strlen(to), 64);
		tgi_sanitize_n(st, sizeof st, remote, strlen(remote), TOOL_NAME_MAX);
		say("the MCP server \"%s\": the alias \"%s\" -> \"%s\" of its tool \"%s\" is left out: %s",
		    s->name, so, sn, st, why);
	}
	if (!json_object_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* The row for one listed tool, or NULL with why it is not offered. */
static btool *btool_new(srv *s, const json_t *tool, const char *remote, char *why, size_t cap)
{
	json_t *in = json_object_get(tool, "inputSchema");
	json_t *outs = json_object_get(tool, "outputSchema");
	json_t *desc = json_object_get(tool, "description");
	json_t *title = json_object_get(tool, "title");
	json_t *ann = json_object_get(tool, "annotations");

	if (!json_is_object(in)) {
		tgi_snprintf(why, cap, "its inputSchema is not a JSON object");
		return NULL;
	}
	if (outs && !json_is_null(outs) && !json_is_object(outs)) {
		tgi_snprintf(why, cap, "its outputSchema is not a JSON object");
		return NULL;
	}
	if (desc && !json_is_null(desc) && !json_is_string(desc)) {
		tgi_snprintf(why, cap, "its description is not a string");
		return NULL;
	}
	if (json_is_string(desc) && json_string_length(desc) > DESCRIPTION_MAX) {
		tgi_snprintf(why, cap, "its description is longer than %d bytes", DESCRIPTION_MAX);
		return NULL;
	}
	if (json_is_string(desc) && strlen(json_string_value(desc)) != json_string_length(desc)) {
		tgi_snprintf(why, cap, "its description holds a NUL character");
		return NULL;
	}
	if (!json_is_string(title) && json_is_object(ann))
		title = json_object_get(ann, "title");
	if (json_is_string(title) && (!json_string_length(title) || json_string_length(title) > 256 ||
	                              strlen(json_string_value(title)) != json_string_length(title)))
		title = NULL; /* the registry makes one from the name */

	btool *t = tgi_xcalloc(1, sizeof *t);
	size_t n = strlen(s->prefix) + strlen(remote) + 1;
	t->s = s;
	t->name = tgi_xmalloc(n);
	snprintf(t->name, n, "%s%s", s->prefix, remote);
	t->remote = tgi_strdup(remote);
	t->title = json_is_string(title) ? tgi_strdup(json_string_value(title)) : NULL;
	t->description = tgi_strdup(json_is_string(desc) ? json_string_value(desc) : "");
	t->annotations = json_is_object(ann) ? tgi_json_canonical(ann) : NULL;
	t->def = tgi_json_canonical(tool);
	tgi_br_pin_digest(t->description, t->title, in, json_is_object(outs) ? outs : NULL,
	                  json_is_object(ann) ? ann : NULL, t->digest);

	t->row.name = t->name;
	t->row.title = t->title;
	t->row.description = t->description;
	t->row.category = s->category;
	t->row.flags = contract_of(s, ann);
	t->row.handler = tgi_bridged_run;
	t->row.plan = tgi_bridged_plan;
	t->row.timeout_s = s->timeout_s;
	t->row.data = t;
	t->row.available = tgi_br_tool_available;
	t->row.mcp_result = 1;
	t->aliases = tool_aliases(s, remote, in);
	return t;
}

/* The output schema we register: the result's shape around the tool's. */
static json_t *output_schema(const json_t *tool)
{
	json_t *outs = json_object_get(tool, "outputSchema");
	if (!json_is_object(outs))
		return NULL;
	return json_pack("{s:s, s:{s:{s:s}, s:O}, s:[s]}", "type", "object", "properties", "content",
	                 "type", "array", "structuredContent", outs, "required", "content");
}

static int wanted(const srv *s, const char *remote)
{
	int in = !s->include.n;
	for (size_t i = 0; i < s->include.n && !in; i++)
		in = tgi_text_glob(s->include.v[i], remote);
	for (size_t i = 0; in && i < s->exclude.n; i++)
		in = !tgi_text_glob(s->exclude.v[i], remote);
	return in;
}

/* Does another server offer name now?  (b->mu) */
static const srv *owner_of(const tgi_bridge *b, const srv *self, const char *name)
{
	for (size_t i = 0; i < b->n; i++) {
		const srv *o = &b->v[i];
		if (o == self)
			continue;
		for (size_t j = 0; j < o->ncur; j++)
			if (!strcmp(o->cur[j]->name, name))
				return o;
	}
	return NULL;
}

/* The server other than self whose non-empty prefix starts name, or NULL:
 * a server with a shorter (or no) prefix must not take names in another's
 * namespace.  Prefixes are fixed at config: no lock. */
static const srv *prefix_owner(const tgi_bridge *b, const srv *self, const char *name)
{
	for (size_t i = 0; i < b->n; i++) {
		const srv *o = &b->v[i];
		size_t n = strlen(o->prefix);
		if (o != self && n && !strncmp(name, o->prefix, n))
			return o;
	}
	return NULL;
}

static btool *find_row(btool **v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i]->name, name))
			return v[i];
	return NULL;
}

typedef struct listing {
	btool  **cur;
	size_t   ncur, capcur;
	skipped *skips;
	size_t   nskips, capskips;
	int      changes;
} listing;

/* Leave remote out of the listing with why; logged unless quiet. */
__attribute__((format(printf, 5, 6)))
static void skip(srv *s, listing *l, const char *remote, int quiet, const char *fmt, ...)
{
	char shown[TOOL_NAME_MAX + 8];
	va_list ap;
	if (l->nskips == l->capskips) {
		l->capskips = l->capskips ? l->capskips * 2 : 8;
		l->skips = tgi_xrealloc(l->skips, l->capskips * sizeof *l->skips);
	}
	skipped *k = &l->skips[l->nskips++];
	k->remote = tgi_strdup(remote);
	va_start(ap, fmt);
	vsnprintf(k->why, sizeof k->why, fmt, ap);
	va_end(ap);
	tgi_sanitize_n(shown, sizeof shown, remote, strlen(remote), TOOL_NAME_MAX);
	if (!quiet)
		say("the MCP server \"%s\" offers \"%s\" but it is left out: %s", s->name, shown, k->why);
}

/* One listed tool into the listing: kept as it was, a new row, or skipped. */
static void take_tool(srv *s, listing *l, const json_t *tool)
{
	tgi_bridge *b = s->b;
	json_t *jn = json_is_object(tool) ? json_object_get(tool, "name") : NULL;
	const char *remote = json_string_value(jn);
	char why[200], err[512];

	if (!remote || !*remote || strlen(remote) != json_string_length(jn)) {
		skip(s, l, "(no name)", 0, "a tool without a usable name");
		return;
	}
	if (!wanted(s, remote)) {
		skip(s, l, remote, 1, "the configuration filters it out (tools.include/exclude)");
		return;
	}
	size_t n = strlen(s->prefix) + strlen(remote);
	if (n > TOOL_NAME_MAX || !name_ok(remote, strlen(remote), 1)) {
		skip(s, l, remote, 0,
		     "its exposed name must be at most %d letters, digits, '_', '-' or '.' with the prefix "
		     "\"%s\"", TOOL_NAME_MAX, s->prefix);
		return;
	}
	char name[TOOL_NAME_MAX + 1];
	tgi_snprintf(name, sizeof name, "%s%s", s->prefix, remote);
	const srv *named = prefix_owner(b, s, name);
	if (named) {
		skip(s, l, remote, 0,
		     "its name \"%s\" carries the prefix \"%s\" of the MCP server \"%s\"", name,
		     named->prefix, named->name);
		return;
	}
	if (find_row(l->cur, l->ncur, name)) {
		skip(s, l, remote, 0, "the server lists it twice");
		return;
	}
	lock(b);
	const srv *other = owner_of(b, s, name);
	btool *old = find_row(s->cur, s->ncur, name);
	unlock(b);
	if (other) {
		skip(s, l, remote, 0, "\"%s\" is a tool of the MCP server \"%s\"", name, other->name);
		return;
	}
	char *def = tgi_json_canonical(tool);
	int same = old && !strcmp(old->def, def);
	free(def);
	if (same) {
		push_ptr((void ***)&l->cur, &l->ncur, &l->capcur, old);
		return;
	}

	btool *t = btool_new(s, tool, remote, why, sizeof why);
	if (!t) {
		skip(s, l, remote, 0, "%s", why);
		return;
	}
	tgi_br_pin_check(b, t);
	lock(b);
	t->current = 1;
	unlock(b);
	json_t *outs = output_schema(tool);
	int rc = tgi_registry_put(b->g->reg, &t->row, json_object_get(tool, "inputSchema"), outs,
	                          t->aliases, b->g->cfg->assert_formats, err, sizeof err);
	json_decref(outs);
	if (rc < 0) {
		skip(s, l, remote, 0, "%s", err);
		tgi_br_btool_free(t); /* the registry never saw it */
		if (old) {
			tgi_registry_drop(b->g->reg, name);
			l->changes++;
		}
		return;
	}
	push_ptr((void ***)&s->all, &s->nall, &s->capall, t);
	push_ptr((void ***)&l->cur, &l->ncur, &l->capcur, t);
	l->changes++;
}

void tgi_br_skips_free(skipped *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].remote);
	free(v);
}

/* Aliases configured for tools the server does not list are ignored: said
 * once per tool for the server's life.  (The server's thread.) */
static void unlisted_aliases(srv *s, const json_t *tools)
{
	const char *remote;
	json_t *x, *tool;
	size_t i;

	json_object_foreach(s->aliases, remote, x) {
		int listed = 0, said = 0;
		json_array_foreach(tools, i, tool) {
			const char *n = json_string_value(json_object_get(tool, "name"));
			listed |= n && !strcmp(n, remote);
		}
		for (i = 0; i < s->unlisted.n && !said; i++)
			said = !strcmp(s->unlisted.v[i], remote);
		if (listed || said)
			continue;
		tgi_strv_push(&s->unlisted, tgi_strdup(remote));
		say("the MCP server \"%s\" lists no tool \"%s\": its aliases are ignored", s->name,
		    remote);
	}
}

/* Put a listing into the registry: new and changed rows put, the rows that
 * went away dropped.  Returns the number of changes. */
int tgi_br_apply_listing(srv *s, const json_t *tools)
{
	tgi_bridge *b = s->b;
	listing l = { 0 };
	size_t i;
	json_t *tool;

	if (s->aliases)
		unlisted_aliases(s, tools);
	pthread_mutex_lock(&b->list_mu);
	json_array_foreach(tools, i, tool)
		take_tool(s, &l, tool);
	lock(b);
	btool **old = s->cur;
	size_t nold = s->ncur;
	for (i = 0; i < nold; i++)
		old[i]->current = 0;
	for (i = 0; i < l.ncur; i++)
		l.cur[i]->current = 1;
	skipped *oldskips = s->skips;
	size_t noldskips = s->nskips;
	s->cur = l.cur;
	s->ncur = l.ncur;
	s->skips = l.skips;
	s->nskips = l.nskips;
	s->listed = 1;
	unlock(b);
	/* gone: rows no longer current, and not replaced under their name */
	for (i = 0; i < nold; i++) {
		if (old[i]->current || find_row(l.cur, l.ncur, old[i]->name))
			continue;
		tgi_registry_drop(b->g->reg, old[i]->name);
		l.changes++;
	}
	pthread_mutex_unlock(&b->list_mu);
	free(old);
	tgi_br_skips_free(oldskips, noldskips);
	return l.changes;
}

