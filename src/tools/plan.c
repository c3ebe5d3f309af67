/*
 * plan.c — the parts of a dry-run plan the tools share (plan.h).
 *
 * Owns: reading a file's current content for a diff (only where the call
 * may read it), the diff fields, the read-only tools' plan.  Must not:
 * write anything, or follow a final symlink when reading old content.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/plan.h"
#include "util/diff.h"
#include "util/fs.h"
#include "util/util.h"

json_t *tgi_plan_fail(json_t *plan, tg_errkind kind, const char *msg)
{
	char clean[1024];
	if (!plan)
		plan = json_object();
	tgi_sanitize(clean, sizeof clean, msg);
	json_object_set_new(plan, "would_fail", tgi_json_text(clean, strlen(clean)));
	json_object_set_new(plan, "error_kind", json_string(tg_errkind_name(kind)));
	return plan;
}

static void hidden(tgi_plan_old *o, const char *why)
{
	o->state = TGI_OLD_HIDDEN;
	tgi_snprintf(o->why, sizeof o->why, "(current content not shown: %s)", why);
}

int tgi_plan_may_read(const tgi_exec_ctx *ctx, const char *norm)
{
	char real[PATH_MAX];
	if (!ctx->may_read || !ctx->may_read(ctx, norm, 0))
		return 0;
	int r = tgi_path_resolve(ctx->ws_fd, norm, real, sizeof real);
	return r == 0 && (!strcmp(real, norm) || ctx->may_read(ctx, real, 0));
}

void tgi_plan_old_read(const tgi_exec_ctx *ctx, const char *norm, tgi_plan_old *out)
{
	struct stat st;
	char bytes[PATH_MAX];
	memset(out, 0, sizeof *out);
	int fd = tgi_path_bytes(norm, bytes, sizeof bytes);
	if (fd == 0)
		fd = tgi_open_beneath(ctx->ws_fd, bytes, O_PATH | O_NOFOLLOW, 0);
	if (fd == -ENOENT) {
		out->state = TGI_OLD_MISSING;
		return;
	}
	if (fd < 0) {
		hidden(out, "it cannot be opened inside the workspace");
		return;
	}
	int r = fstat(fd, &st);
	close(fd);
	if (r < 0) {
		hidden(out, "it cannot be examined");
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		hidden(out, "it is a symbolic link, and the link itself is what changes");
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		hidden(out, S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file");
		return;
	}
	if (!tgi_plan_may_read(ctx, norm)) {
		hidden(out, "reading it is not permitted");
		return;
	}
	if ((size_t)st.st_size > TGI_DIFF_INPUT_MAX) {
		hidden(out, "the file is over 16 MiB");
		return;
	}
	fd = tgi_open_beneath(ctx->ws_fd, bytes, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -EINVAL;                   /* replaced since: show nothing */
	}
	if (fd < 0) {
		hidden(out, "it could not be read");
		return;
	}
	r = tgi_read_fd(fd, TGI_DIFF_INPUT_MAX, &out->data, &out->len);
	close(fd);
	if (r < 0) {
		hidden(out, r == -EFBIG ? "the file is over 16 MiB" : "it could not be read");
		return;
	}
	out->state = TGI_OLD_SHOWN;
}

void tgi_plan_old_free(tgi_plan_old *o)
{
	free(o->data);
	o->data = NULL;
}

void tgi_plan_diff(json_t *o, const char *old_path, const tgi_plan_old *old,
                   const char *new_path, const char *data, size_t len, size_t *budget)
{
	if (old->state == TGI_OLD_HIDDEN) {
		json_object_set_new(o, "diff", tgi_json_text(old->why, strlen(old->why)));
		return;
	}
	if (*budget == 0) {
		json_object_set_new(o, "diff", json_string("(diff not shown: the plan's diffs are over "
		                                           "200000 bytes)"));
		return;
	}
	char la[PATH_MAX + 8], lb[PATH_MAX + 8];
	if (old->state == TGI_OLD_MISSING)
		tgi_snprintf(la, sizeof la, "/dev/null");
	else
		tgi_snprintf(la, sizeof la, "a/%s", old_path);
	if (!data)
		tgi_snprintf(lb, sizeof lb, "/dev/null");
	else
		tgi_snprintf(lb, sizeof lb, "b/%s", new_path);

	tgi_diff_opts opts = {.context = TGI_DIFF_CONTEXT, .max_out = *budget};
	tgi_diff_info info;
	tgi_buf b;
	tgi_buf_init(&b, *budget + 256);
	tgi_diff_unified(old->data, old->len, data, data ? len : 0, la, lb, &opts, &b, &info);
	if (info.too_large) {
		json_object_set_new(o, "diff", json_string("(diff not shown: the new content is over "
		                                           "16 MiB)"));
		tgi_buf_free(&b);
		return;
	}
	*budget = b.len >= *budget ? 0 : *budget - b.len;
	json_object_set_new(o, "diff", tgi_json_text(b.p ? b.p : "", b.len));
	if (!info.binary) {
		json_object_set_new(o, "added_lines", json_integer((json_int_t)info.added));
		json_object_set_new(o, "removed_lines", json_integer((json_int_t)info.removed));
	}
	tgi_buf_free(&b);
}

/* ---- read-only tools ---- */

static json_t *plan_reads(const tgi_exec_ctx *ctx, const json_t *args, const char *dflt)
{
	const char *raw;
	size_t rawlen;
	char msg[512], norm[PATH_MAX], real[PATH_MAX];
	tg_errkind kind = TG_ERR_INVALID_INPUT;
	struct stat st;

	if (tgi_arg_str(args, "path", dflt, &raw, &rawlen, msg, sizeof msg) < 0)
		return tgi_plan_fail(NULL, TG_ERR_INVALID_INPUT, msg);
	int fd = tgi_path_open_read(ctx->ws_fd, raw, rawlen, O_PATH, norm, sizeof norm, &kind, msg,
	                            sizeof msg);
	if (fd < 0)
		return tgi_plan_fail(NULL, kind, msg);
	int r = fstat(fd, &st) < 0 ? -errno : tgi_fd_path(ctx->ws_fd, fd, real, sizeof real);
	close(fd);
	if (r < 0) {
		kind = tgi_path_error(r, norm, msg, sizeof msg);
		return tgi_plan_fail(NULL, kind, msg);
	}
	const char *type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory" : "other";
	json_t *read = json_object();
	json_object_set_new(read, "path", tgi_json_text(norm, strlen(norm)));
	json_object_set_new(read, "resolved", tgi_json_text(real, strlen(real)));
	json_object_set_new(read, "type", json_string(type));
	return json_pack("{s:[o]}", "reads", read);
}

json_t *tgi_plan_reads_required(const tgi_exec_ctx *ctx, const json_t *args)
{
	return plan_reads(ctx, args, NULL);
}

json_t *tgi_plan_reads_optional(const tgi_exec_ctx *ctx, const json_t *args)
{
	return plan_reads(ctx, args, ".");
}
