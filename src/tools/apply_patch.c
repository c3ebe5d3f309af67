/*
 * apply_patch.c — the apply_patch tool: a V4A patch (Codex's format),
 * applied to the workspace all or nothing (src/patch/).
 *
 * paths() parses the patch and reports every path it names -- each file
 * operation's path and every Move target -- so policy judges each one,
 * and rules written for write_file hold here too (decide.c).  repath()
 * rewrites those paths in the patch text (an absolute one inside the
 * workspace made relative) before anything else sees them.  A patch that
 * deletes a file is destructive.  The handler checks confinement and
 * protected paths again itself, as a second line of defence.
 *
 * Output: {"added","modified","deleted","moved":[{"from","to"}],"summary"}
 * where summary is Codex's text ("Success. Updated the following
 * files:\nA p\n...") for surfaces that show text.
 *
 * plan() (a dry run) computes the same final bytes in memory and shows
 * each file's unified diff; a patch that does not fit gives would_fail.
 *
 * Owns: the tool row, its schema, its plan and the mapping of patch
 * failures to error kinds.  Must not: check permissions (the pipeline does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"
#include "patch/patch.h"
#include "tools/plan.h"
#include "tools/walk.h"
#include "util/fs.h"
#include "util/util.h"

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"patch\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":16777216,"
	"\"description\":\"The whole patch, from '*** Begin Patch' to '*** End Patch'.\"}},"
	"\"required\":[\"patch\"],\"additionalProperties\":false}";

static const char *patch_arg(const json_t *args, size_t *len)
{
	const json_t *p = json_object_get(args, "patch");
	*len = json_string_length(p);
	return json_string_value(p);
}

static int patch_paths(const json_t *args, tgi_strv *out, char *err, size_t errlen)
{
	size_t len;
	const char *text = patch_arg(args, &len);
	tgi_patch *p;

	if (!text) {
		tgi_snprintf(err, errlen, "\"patch\" must be a string");
		return -1;
	}
	if (tgi_patch_parse(text, len, &p, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < p->nops; i++) {
		tgi_strv_push(out, tgi_strdup(p->ops[i].path));
		if (p->ops[i].move_to)
			tgi_strv_push(out, tgi_strdup(p->ops[i].move_to));
	}
	tgi_patch_free(p);
	return (int)out->n;
}

/* repath(): the header lines' paths through map, the rest of the patch
 * kept byte for byte. */
static void patch_repath(json_t *args, tgi_path_map_fn map, void *ud)
{
	size_t len, outlen;
	const char *text = patch_arg(args, &len);
	char *out;

	if (!text || !tgi_patch_map_paths(text, len, map, ud, &out, &outlen))
		return;
	json_t *s = json_stringn(out, outlen);
	if (s)
		json_object_set_new(args, "patch", s);
	free(out);
}

static unsigned patch_flags(unsigned flags, const json_t *args)
{
	size_t len;
	const char *text = patch_arg(args, &len);
	tgi_patch *p;
	char err[8];

	/* a patch that does not parse is refused by paths(); should anything
	 * judge it anyway, it counts as destructive (fail closed) */
	if (!text || tgi_patch_parse(text, len, &p, err, sizeof err) < 0)
		return flags | TGI_T_DESTRUCTIVE;
	if (tgi_patch_deletes(p))
		flags |= TGI_T_DESTRUCTIVE;
	tgi_patch_free(p);
	return flags;
}

static int apply_patch_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	size_t len;
	const char *text = patch_arg(args, &len);
	char err[8192];
	tgi_patch_plan plan;
	int unknown;

	if (!text) {
		tgi_snprintf(out->message, sizeof out->message, "\"patch\" must be a string");
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int jfd = sfd < 0 ? -1 : tgi_patch_journal_open(sfd, err, sizeof err);
	if (sfd < 0)
		tgi_snprintf(err, sizeof err, "cannot open the gate's state directory: %s", strerror(errno));
	if (sfd >= 0)
		close(sfd);
	if (jfd < 0) {
		tgi_snprintf(out->message, sizeof out->message, "%s; no file was changed", err);
		return tgi_tool_fail(out, TG_ERR_TOOL_ERROR);
	}
	/* every path where policy judged it, or nothing is written */
	tg_errkind kind = tgi_patch_run_held(ctx->ws_fd, jfd, ctx->op_id, text, len, ctx->checked,
	                                     ctx->nchecked, &plan, &unknown, err, sizeof err);
	close(jfd);
	if (kind != TG_ERR_NONE) {
		tgi_snprintf(out->message, sizeof out->message, "%s", err);
		tgi_tool_fail(out, kind);
		if (unknown)
			out->applied = TGI_APPLIED_UNKNOWN;
		return -1;
	}
	json_object_set_new(plan.result, "summary", json_string(plan.summary));
	out->output = plan.result;
	plan.result = NULL;
	tgi_patch_plan_free(&plan);
	out->kind = TG_ERR_NONE;
	return 0;
}

/* The Move in result.moved whose `key` (from or to) is path, or NULL. */
static const json_t *move_of(const json_t *result, const char *key, const char *path)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(result, "moved"), i, m) {
		const char *v = json_string_value(json_object_get(m, key));
		if (v && !strcmp(v, path))
			return m;
	}
	return NULL;
}

/*
 * Matching a patch against a file is reading it: whether the old lines
 * fit, and the engine's "closest" hint, tell what the file holds.  A dry
 * run of a patch that updates a file the call may not read is therefore
 * not matched at all (else it would be a free oracle for the file's
 * content): the plan lists the operations, unchecked.  NULL when every
 * updated file is readable.
 */
static json_t *unreadable_updates(const tgi_exec_ctx *ctx, const tgi_patch *p)
{
	char norm[PATH_MAX], msg[256];
	int hidden = 0;
	for (size_t i = 0; i < p->nops && !hidden; i++)
		hidden = p->ops[i].kind == TGI_PATCH_UPDATE &&
		         (tgi_path_check(p->ops[i].path, strlen(p->ops[i].path), norm, sizeof norm, msg,
		                         sizeof msg) < 0 || !tgi_plan_may_read(ctx, norm));
	if (!hidden)
		return NULL;
	static const char *const ops[] = {"add", "delete", "update"};
	json_t *files = json_array();
	for (size_t i = 0; i < p->nops; i++) {
		const tgi_patch_op *op = &p->ops[i];
		json_t *f = json_pack("{s:s}", "operation", op->move_to ? "move" : ops[op->kind]);
		json_object_set_new(f, "path", tgi_json_text(op->move_to ? op->move_to : op->path,
		                                             strlen(op->move_to ? op->move_to : op->path)));
		if (op->move_to)
			json_object_set_new(f, "from", tgi_json_text(op->path, strlen(op->path)));
		json_array_append_new(files, f);
	}
	return json_pack("{s:o, s:s}", "files", files, "unchecked",
	                 "the patch updates a file the call may not read, so it was not matched "
	                 "against the files and no diff is shown");
}

/*
 * The plan: the patch engine computes every file's final bytes in memory
 * (nothing is written), and each file that would change gets
 * {operation: add|update|delete|move, path[, from], bytes, diff}.  A
 * patch that does not fit the files gives would_fail with the message the
 * call itself would get; one that updates a file the call may not read is
 * not matched (unreadable_updates).
 */
static json_t *apply_patch_plan(const tgi_exec_ctx *ctx, const json_t *args)
{
	size_t len, budget = TGI_PLAN_DIFF_MAX;
	const char *text = patch_arg(args, &len);
	char err[8192];
	tgi_patch *p;
	tgi_patch_plan pl;

	if (!text)
		return tgi_plan_fail(NULL, TG_ERR_INVALID_INPUT, "\"patch\" must be a string");
	if (tgi_patch_parse(text, len, &p, err, sizeof err) < 0)
		return tgi_plan_fail(NULL, TG_ERR_INVALID_INPUT, err);
	json_t *unchecked = unreadable_updates(ctx, p);
	if (unchecked) {
		tgi_patch_free(p);
		return unchecked;
	}
	tgi_patch_err pe = tgi_patch_plan_make(ctx->ws_fd, p, &pl, err, sizeof err);
	tgi_patch_free(p);
	if (pe != TGI_PATCH_OK)
		return tgi_plan_fail(NULL, pe == TGI_PATCH_EREFUSED ? TG_ERR_NOT_PERMITTED
		                                                    : TG_ERR_TOOL_ERROR, err);

	json_t *files = json_array();
	for (size_t i = 0; i < pl.nwrites; i++) {
		const tgi_patch_write *w = &pl.writes[i];
		const json_t *moved = move_of(pl.result, "to", w->path);
		if (!w->data && move_of(pl.result, "from", w->path))
			continue;                   /* shown with where it moves to */
		const char *from = moved ? json_string_value(json_object_get(moved, "from")) : w->path;
		const char *op = moved ? "move" : !w->data ? "delete" : w->existed ? "update" : "add";
		json_t *f = json_object();
		json_object_set_new(f, "operation", json_string(op));
		json_object_set_new(f, "path", tgi_json_text(w->path, strlen(w->path)));
		if (moved)
			json_object_set_new(f, "from", tgi_json_text(from, strlen(from)));
		if (w->data)
			json_object_set_new(f, "bytes", json_integer((json_int_t)w->len));
		tgi_plan_old old = {.state = TGI_OLD_MISSING};
		if (moved || w->existed)
			tgi_plan_old_read(ctx, from, &old);
		tgi_plan_diff(f, from, &old, w->path, w->data, w->len, &budget);
		tgi_plan_old_free(&old);
		json_array_append_new(files, f);
	}
	json_t *plan = json_pack("{s:o, s:o}", "files", files, "summary",
	                         tgi_json_text(pl.summary, strlen(pl.summary)));
	tgi_patch_plan_free(&pl);
	return plan;
}

const tgi_tool tgi_tool_apply_patch = {
	.name = "apply_patch",
	.description =
		"Edit files with a patch: add, delete, update or move files in one call. Format:\n"
		"*** Begin Patch\n"
		"*** Add File: path/new.txt\n+line one\n+line two\n"
		"*** Delete File: path/old.txt\n"
		"*** Update File: path/file.py\n*** Move to: path/renamed.py (optional)\n"
		"@@ def function_name():  (a line just above the change, to find the place)\n"
		" unchanged context line\n-removed line\n+added line\n"
		"*** End Patch\n"
		"Give about 3 lines of unchanged context around each change, prefixed with a space. "
		"Paths are relative to the workspace root (or absolute within it). The patch applies "
		"all or nothing: if any part does not match, no file is changed and the error says "
		"which lines were not found.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_EDITS_FILES,
	.flags_for = patch_flags,
	.paths = patch_paths,
	.repath = patch_repath,
	.handler = apply_patch_run,
	.plan = apply_patch_plan,
};
