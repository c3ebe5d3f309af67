/*
 * validate.c — stage 2: the arguments against the tool's JSON Schema.
 *
 * Absolute paths (DESIGN §2): models trained on other harnesses send them.
 * Before anything else reads the args, the tool's repath() passes every
 * workspace path they name through relative_path(): one inside the
 * workspace -- spelled through the workspace as configured or through its
 * real path, compared by component, nothing resolved -- is rewritten in
 * the args into the relative one, so that the hooks, policy, the ledger and
 * the handler only ever see that.  One outside is kept as written, left
 * out of the paths and noted in c->outside, for decide to deny; confinement
 * stays the kernel's (the relative path is opened beneath the workspace).
 *
 * Owns: schema validation (defaults applied), making absolute paths inside
 * the workspace relative, the per-args contract, the paths the call
 * touches (checked: relative, no NUL, normalised), and the canonical args
 * text with its sha256.  Must not: resolve paths against the file system
 * for policy (decide does) or judge permission.  Stops with `invalid`; the
 * error carries a JSON pointer and sentences a model can act on.
 */
#include <string.h>

#include "gate/gate.h"
#include "schema/schema.h"
#include "util/fs.h"
#include "util/util.h"

#define SHOWN_MAX 160   /* bytes of a path echoed in a sentence */

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

/*
 * Where an absolute path (len bytes) lies: 1 inside the workspace, with
 * the relative path in rel (cap bytes); 0 outside (noted in c->outside,
 * the first one only); -1 when it is not an absolute path this can place
 * (relative, a NUL in it, the rest too long) and is left to
 * tgi_path_check.
 */
static int place(tgi_call *c, const char *path, size_t len, char *rel, size_t cap)
{
	const tgi_config *cfg = c->g->cfg;
	const char *roots[2] = {cfg->workspace_given, cfg->workspace};
	int unplaced = 0;

	if (!len || path[0] != '/' || memchr(path, '\0', len))
		return -1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(roots); i++) {
		int r = roots[i] ? tgi_path_within(roots[i], path, len, rel, cap) : 0;
		if (r == 1)
			return 1;
		unplaced |= r < 0;
	}
	if (unplaced)
		return -1;
	if (!c->outside[0])
		tgi_sanitize_n(c->outside, sizeof c->outside, path, len, SHOWN_MAX);
	return 0;
}

/* tgi_path_map_fn for the tools' repath(). */
static int relative_path(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	return place(ud, path, len, out, cap) == 1;
}

/* The paths the call touches, checked and normalised into c->paths; one
 * outside the workspace is left out (c->outside has it). */
static tgi_verdict touched_paths(tgi_call *c, const tgi_strv *raw)
{
	char norm[4096], err[1024];

	c->paths = tgi_xcalloc(raw->n + 1, sizeof *c->paths);
	c->resolved = tgi_xcalloc(raw->n + 1, sizeof *c->resolved);
	for (size_t i = 0; i < raw->n; i++) {
		size_t len = strlen(raw->v[i]);
		int where = place(c, raw->v[i], len, norm, sizeof norm);
		if (where == 0)
			continue;
		if (where == 1) {               /* inside, but the tool did not rewrite it */
			char s[SHOWN_MAX + 8], r[SHOWN_MAX + 8], root[SHOWN_MAX + 48];
			tgi_sanitize_n(s, sizeof s, raw->v[i], len, SHOWN_MAX);
			tgi_sanitize_n(r, sizeof r, norm, strlen(norm), SHOWN_MAX);
			tgi_workspace_shown(c->g->cfg, root, sizeof root);
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
			                "path \"%s\" is absolute; use \"%s\", a path relative to the "
			                "workspace root %s", s, r, root);
		}
		if (tgi_path_check(raw->v[i], len, norm, sizeof norm, err, sizeof err) < 0)
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
		c->paths[c->npaths++] = tgi_strdup(norm);
	}
	return TGI_NEXT;
}

tgi_verdict tgi_validate(tgi_call *c)
{
	const tgi_tool *t = c->entry->row;
	tgi_schema_result res;

	if (!tgi_schema_validate(c->entry->schema, c->args, 1, &res))
		return schema_errors(c, &res);

	c->outside[0] = '\0';
	if (t->repath)
		t->repath(c->args, relative_path, c);
	c->contract = tgi_contract(t, c->args);

	if (t->paths) {
		tgi_strv raw = {0};
		char err[1024];
		if (t->paths(c->args, &raw, err, sizeof err) < 0) {
			tgi_strv_free(&raw);
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", err);
		}
		if (raw.n > TGI_MAX_PATHS) {
			tgi_strv_free(&raw);
			return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
			                "the call touches more than %d paths; split it", TGI_MAX_PATHS);
		}
		tgi_verdict v = touched_paths(c, &raw);
		tgi_strv_free(&raw);
		if (v == TGI_STOP)
			return v;
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
