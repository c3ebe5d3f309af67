/*
 * plan.h — what the tools' plan functions share (dry runs, registry.h
 * tgi_plan_fn): a file's current content as the call may see it, a diff
 * as fields of a plan, the paths a read-only tool would read, and the
 * "would_fail" answer.
 *
 * Reading a file's current content for a diff is reading: it is shown
 * only when ctx->may_read allows the path as written and as resolved (a
 * file the model may write but not read stays hidden), and only for a
 * regular file reached without a final symlink.
 *
 * Owns: the shape of the plan's file fields.  Must not: write, or decide
 * policy beyond asking ctx->may_read.
 */
#ifndef TGI_TOOLS_PLAN_H
#define TGI_TOOLS_PLAN_H

#include <stddef.h>
#include <jansson.h>

#include "registry.h"

#define TGI_PLAN_DIFF_MAX (200u * 1000)   /* bytes of diff text in one plan */

/* The plan (a new object when NULL) with "would_fail": msg and
 * "error_kind": the kind's name.  Returns the plan. */
json_t *tgi_plan_fail(json_t *plan, tg_errkind kind, const char *msg);

/* May the call read norm (normalised, workspace-relative), as written and
 * as resolved (ctx->may_read; none: no)?  1 or 0. */
int tgi_plan_may_read(const tgi_exec_ctx *ctx, const char *norm);

typedef enum { TGI_OLD_MISSING, TGI_OLD_SHOWN, TGI_OLD_HIDDEN } tgi_old_state;

/* A file's content before the call, as a plan may show it. */
typedef struct tgi_plan_old {
	tgi_old_state state;
	char         *data;      /* TGI_OLD_SHOWN: the bytes (owned) */
	size_t        len;
	char          why[200];  /* TGI_OLD_HIDDEN: "(current content not shown: ...)" */
} tgi_plan_old;

/* Read norm (normalised, workspace-relative) for a diff.  Never fails:
 * what cannot or may not be shown is TGI_OLD_HIDDEN with the reason. */
void tgi_plan_old_read(const tgi_exec_ctx *ctx, const char *norm, tgi_plan_old *out);
void tgi_plan_old_free(tgi_plan_old *o);

/*
 * Set "diff" on o: the unified diff (3 lines of context) from old, under
 * the label a/old_path (/dev/null when old is missing), to data (len
 * bytes) under b/new_path (data NULL: the file is removed, /dev/null).
 * With it "added_lines" and "removed_lines".  An old content that may not
 * be shown gives its sentence as the diff and no counts (the new content
 * of an update would show the old).  *budget is the diff text left for
 * the plan, spent here; past it a diff is cut with a marker, and once it
 * is spent a diff says so instead.
 */
void tgi_plan_diff(json_t *o, const char *old_path, const tgi_plan_old *old,
                   const char *new_path, const char *data, size_t len, size_t *budget);

/* Plans of the read-only file tools: {"reads": [{"path", "resolved",
 * "type": file|directory|other}]}, or would_fail as the handler would
 * (bad path, .toolgate, leaving the workspace, no such file).  The path
 * argument is required, or defaults to "." (the workspace). */
json_t *tgi_plan_reads_required(const tgi_exec_ctx *ctx, const json_t *args);
json_t *tgi_plan_reads_optional(const tgi_exec_ctx *ctx, const json_t *args);

#endif
