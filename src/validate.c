/*
 * validate.c — stage 2: the arguments against the tool's JSON Schema.
 *
 * Owns: schema validation (defaults applied), the per-args contract, the
 * paths the call touches (checked: relative, no NUL, normalised), and the
 * canonical args text with its sha256.  Must not: resolve paths against
 * the file system for policy (decide does) or judge permission.  Stops with
 * `invalid`; the error carries a JSON pointer and sentences a model can act
 * on.
 */
#include <string.h>

#include "gate.h"
#include "schema/schema.h"
#include "util/fs.h"
#include "util/util.h"

static tgi_verdict schema_errors(tgi_call *c, const tgi_schema_result *res)
{
	tgi_buf b;
	tgi_buf_init(&b, sizeof c->message - 1);
	for (int i = 0; i < res->nerrors; i++) {
		const tgi_schema_error *e = &res->errors[i];
		if (tgi_buf_printf(&b, "%s%s %s.", i ? " " : "", *e->pointer ? e->pointer : "arguments",
		                   e->message) < 0)
			break;
	}
	if (res->truncated)
		tgi_buf_puts(&b, " (more errors not shown)");
	tgi_verdict v = tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT,
	                         res->nerrors ? res->errors[0].pointer : "", "%s",
	                         b.p ? b.p : "the arguments do not match the schema");
	tgi_buf_free(&b);
	return v;
}

tgi_verdict tgi_validate(tgi_call *c)
{
	const tgi_tool *t = c->entry->row;
	tgi_schema_result res;

	if (!tgi_schema_validate(c->entry->schema, c->args, 1, &res))
		return schema_errors(c, &res);

	c->contract = tgi_contract(t, c->args);

	if (t->paths) {
		tgi_strv raw = {0};
		char norm[4096], err[1024];
		if (t->paths(c->args, &raw, err, sizeof err) < 0) {
			tgi_strv_free(&raw);
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
		}
		if (raw.n > TGI_MAX_PATHS) {
			tgi_strv_free(&raw);
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
			                "the call touches more than %d paths; split it", TGI_MAX_PATHS);
		}
		c->paths = tgi_xcalloc(raw.n + 1, sizeof *c->paths);
		c->resolved = tgi_xcalloc(raw.n + 1, sizeof *c->resolved);
		for (size_t i = 0; i < raw.n; i++) {
			if (tgi_path_check(raw.v[i], strlen(raw.v[i]), norm, sizeof norm, err, sizeof err) < 0) {
				tgi_strv_free(&raw);
				return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
			}
			c->paths[c->npaths++] = tgi_strdup(norm);
		}
		tgi_strv_free(&raw);
	}

	if (t->commands) {
		char err[1024];
		if (t->commands(c->args, &c->cmds, err, sizeof err) < 0)
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
		c->has_cmds = 1;
		/* a command line the read-only class covers is read-only */
		const tgi_shell_cfg *sh = &c->g->cfg->shell;
		if (tgi_shell_readonly(&c->cmds, &sh->read_only, sh->read_only_replace))
			c->contract = (c->contract | TGI_T_READ_ONLY) & ~TGI_T_DESTRUCTIVE;
	}

	c->args_canon = tgi_json_canonical(c->args);
	tgi_sha256_hex(c->args_canon, strlen(c->args_canon), c->args_sha256);
	tgi_trace(c, "validate", 1, NULL);
	return TGI_NEXT;
}
