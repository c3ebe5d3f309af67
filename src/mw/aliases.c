/*
 * aliases.c — deprecated field names (mw.h, part.h): a step between decode and
 * validate, in the chain only when some configured tool or MCP server
 * declares aliases.
 *
 * A call that uses an old top-level name is rewritten to the new one before
 * validation and told so in `warnings` (the model reads them beside the
 * result, so it learns the new name).  A call that sends both names is
 * ambiguous: nothing is guessed.
 *
 * Owns: the rewrite and its warnings.  Must not: validate the arguments
 * (validate does, on the rewritten ones).  Stops with `invalid`.
 */
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"

static tgi_verdict aliases_step(tgi_call *c, void *state)
{
	const json_t *aliases = c->entry->aliases;
	const char *old;
	json_t *nw;
	if (!aliases)
		return TGI_NEXT;
	json_object_foreach((json_t *)aliases, old, nw) {
		json_t *v = json_object_get(c->args, old);
		const char *to = json_string_value(nw);
		if (!v || !to)
			continue;
		if (json_object_get(c->args, to))
			return tgi_stop(c, TG_INVALID, TG_ERR_AMBIGUOUS, NULL,
			                "both '%s' and '%s' were given; '%s' is deprecated: send only '%s'",
			                old, to, old, to);
		json_object_set(c->args, to, v);
		json_object_del(c->args, old);
		char w[600];
		tgi_snprintf(w, sizeof w, "'%s' is deprecated; use '%s'", old, to);
		if (!c->warnings)
			c->warnings = json_array();
		json_array_append_new(c->warnings, json_string(w));
	}
	if (c->warnings)
		tgi_trace(c, "aliases", 1, json_pack("{s:O}", "warnings", c->warnings));
	return TGI_NEXT;
}

/* On when any configured tool or MCP server declares deprecated field
 * names (a server's section is checked by the bridge; a malformed one
 * refuses the gate there). */
static int aliases_open(tg_gate *g, const tg_options *o, void **state, char *err, size_t errlen)
{
	const tgi_config *cfg = g->cfg;
	const char *name;
	json_t *v;
	*state = NULL;
	for (size_t i = 0; i < cfg->ntools; i++)
		if (cfg->tools[i].aliases)
			*state = g;
	json_object_foreach(cfg->mcp_servers, name, v)
		if (json_object_size(json_object_get(v, "aliases")))
			*state = g;
	return 0;
}

const tgi_part tgi_part_aliases = {
	.name = "aliases", .after = TGI_PHASE_DECODE, .judge = 1, .open = aliases_open,
	.step = aliases_step,
};
