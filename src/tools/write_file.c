/*
 * write_file.c — the write_file tool: replace (or create) a workspace file
 * with the given content, atomically, creating parent directories.
 *
 * The write goes through tgi_write_atomic (temp file, fsync, rename, fsync
 * of the directory), so a failure leaves the old file as it was and the
 * error says nothing was applied.
 *
 * paths() reports the path as written; a symlink named by it is replaced,
 * not written through (tgi_path_resolve_parent names what is replaced).
 * The write lands where the policy stage judged that (ctx->checked,
 * tgi_write_atomic_landed): a symlink or directory on the way replaced
 * since fails the call with nothing written.
 *
 * plan() (a dry run) makes the same checks and shows the unified diff from
 * the current content, which it shows only where the call may read it.
 *
 * Owns: the tool row, its schema and its plan.  Must not: check
 * permissions (the pipeline does) -- except that it refuses protected
 * paths (.git/, .toolgate/, at any depth) itself, as written, as resolved
 * and as replaced, as a second line of defence behind the policy stage.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "tools/plan.h"
#include "tools/walk.h"
#include "util/fs.h"
#include "util/util.h"

#define CONTENT_MAX (10u << 20)   /* bytes */

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,"
	"\"description\":\"File path, relative to the workspace root or absolute within it; "
	"missing parent directories are created.\"},"
	"\"content\":{\"type\":\"string\",\"maxLength\":10485760,"
	"\"description\":\"The complete new content of the file.\"}},"
	"\"required\":[\"path\",\"content\"],\"additionalProperties\":false}";

/* The checks before a write (the handler's and the plan's): path into
 * path (PATH_MAX, as text) and bytes (PATH_MAX, what is opened), the
 * content.  0, or -1 with out's kind and sentence. */
static int prepare(const tgi_exec_ctx *ctx, const json_t *args, char *path, char *bytes,
                   const char **content, size_t *len, tgi_tool_out *out)
{
	char shown[160];
	const char *raw;
	size_t rawlen;
	tg_errkind kind;

	if (tgi_arg_str(args, "path", NULL, &raw, &rawlen, out->message, sizeof out->message) < 0 ||
	    tgi_arg_str(args, "content", NULL, content, len, out->message, sizeof out->message) < 0 ||
	    tgi_path_check(raw, rawlen, path, PATH_MAX, out->message, sizeof out->message) < 0)
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	tgi_sanitize(shown, sizeof shown, path);
	if (*len > CONTENT_MAX) {
		tgi_snprintf(out->message, sizeof out->message,
		             "content for \"%s\" is %zu bytes; the limit is %u", shown, *len, CONTENT_MAX);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	if (tgi_path_writable(ctx->ws_fd, path, &kind, out->message, sizeof out->message) < 0)
		return tgi_tool_fail(out, kind);
	int r = tgi_path_bytes(path, bytes, PATH_MAX);
	if (r < 0)
		return tgi_tool_fail(out, tgi_path_error(r, path, out->message, sizeof out->message));
	return 0;
}

static int write_file_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	char path[PATH_MAX], bytes[PATH_MAX], shown[160];
	const char *content;
	size_t len;
	tg_errkind kind;

	if (prepare(ctx, args, path, bytes, &content, &len, out) < 0)
		return -1;
	tgi_sanitize(shown, sizeof shown, path);

	/* Does it exist now?  (The link itself, if it is one: the rename
	 * replaces a symlink, it does not write through it.) */
	int fd = tgi_open_beneath(ctx->ws_fd, bytes, O_PATH | O_NOFOLLOW, 0);
	int created = fd == -ENOENT;
	if (fd >= 0)
		close(fd);

	/* the write lands where policy judged it (what it replaces), or nowhere */
	const char *expect = NULL;
	if (ctx->checked) {
		if (!ctx->nchecked || !ctx->checked[0])
			return tgi_tool_fail(out, tgi_path_error(-ESTALE, path, out->message,
			                                         sizeof out->message));
		expect = ctx->checked[0];
	}
	int r = tgi_write_atomic_landed(ctx->ws_fd, bytes, content, len, 0644, expect);
	if (r < 0) {
		kind = tgi_path_error(r, path, out->message, sizeof out->message);
		if (r == -EISDIR)
			tgi_snprintf(out->message, sizeof out->message,
			             "\"%s\" is a directory; write_file writes files", shown);
		else if (r == -ENOSPC || r == -EDQUOT || r == -EFBIG)
			tgi_snprintf(out->message, sizeof out->message,
			             "the disk is full (or the file is over the size limit): \"%s\" "
			             "was not written and is unchanged", shown);
		tgi_tool_fail(out, kind);
		if (r == -EIO)                  /* renamed; the directory sync failed */
			out->applied = TGI_APPLIED_UNKNOWN;
		return -1;
	}

	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "bytes", json_integer((json_int_t)len));
	json_object_set_new(o, "created", json_boolean(created));
	out->output = o;
	out->kind = TG_ERR_NONE;
	return 0;
}

/*
 * The plan: {path, exists, bytes, diff (from the current content, or
 * /dev/null for a new file), added_lines, removed_lines}.  The current
 * content shows only where the call may read the file (tools/plan.h).
 */
static json_t *write_file_plan(const tgi_exec_ctx *ctx, const json_t *args)
{
	char path[PATH_MAX], bytes[PATH_MAX];
	const char *content;
	size_t len, budget = TGI_PLAN_DIFF_MAX;
	tgi_tool_out out;
	struct stat st;

	memset(&out, 0, sizeof out);
	if (prepare(ctx, args, path, bytes, &content, &len, &out) < 0)
		return tgi_plan_fail(NULL, out.kind, out.message);
	json_t *plan = json_object();
	json_object_set_new(plan, "path", tgi_json_text(path, strlen(path)));
	int fd = tgi_open_beneath(ctx->ws_fd, bytes, O_PATH | O_NOFOLLOW, 0);
	int exists = fd >= 0;
	int dir = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
	if (fd >= 0)
		close(fd);
	json_object_set_new(plan, "exists", json_boolean(exists));
	json_object_set_new(plan, "bytes", json_integer((json_int_t)len));
	if (dir) {
		char shown[160];
		tgi_sanitize(shown, sizeof shown, path);
		tgi_snprintf(out.message, sizeof out.message,
		             "\"%s\" is a directory; write_file writes files", shown);
		return tgi_plan_fail(plan, TG_ERR_INVALID_INPUT, out.message);
	}
	tgi_plan_old old;
	tgi_plan_old_read(ctx, path, &old);
	tgi_plan_diff(plan, path, &old, path, content, len, &budget);
	tgi_plan_old_free(&old);
	return plan;
}

const tgi_tool tgi_tool_write_file = {
	.name = "write_file",
	.description =
		"Write a file in the workspace, replacing its whole content (or creating it, with "
		"any missing parent directories). The write is atomic: on any failure the old file "
		"is left as it was. .git/ and .toolgate/ are read-only to tools.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_EDITS_FILES | TGI_T_IDEMPOTENT,
	.paths = tgi_paths_required_path,
	.repath = tgi_repath_path,
	.handler = write_file_run,
	.plan = write_file_plan,
};
