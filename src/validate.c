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
		const char *raw[TGI_MAX_PATHS];
		int n = t->paths(c->args, raw, TGI_MAX_PATHS);
		if (n < 0)
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
			                "the paths in the arguments could not be read");
		for (int i = 0; i < n; i++) {
			/* the JSON length catches embedded NULs */
			json_t *pv = NULL;
			const char *key;
			json_t *v;
			json_object_foreach(c->args, key, v)
				if (json_is_string(v) && json_string_value(v) == raw[i])
					pv = v;
			size_t len = pv ? json_string_length(pv) : strlen(raw[i]);
			char norm[4096], err[256];
			if (tgi_path_check(raw[i], len, norm, sizeof norm, err, sizeof err) < 0)
				return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
			c->path_buf[c->npaths] = tgi_strdup(norm);
			c->paths[c->npaths] = c->path_buf[c->npaths];
			c->npaths++;
		}
	}

	c->args_canon = tgi_json_canonical(c->args);
	tgi_sha256_hex(c->args_canon, strlen(c->args_canon), c->args_sha256);
	tgi_trace(c, "validate", 1, NULL);
	return TGI_NEXT;
}
