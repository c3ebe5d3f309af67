/*
 * walk.h — what the file tools share that reads the tool contract's types
 * (registry.h): failing with a tgi_tool_out, the deadline from the
 * tgi_exec_ctx, holding an open to the path the policy stage judged, and
 * asking ctx->may_read about an entry of a directory walk (whose paths,
 * tgi_walk_path, util/fs.h builds).
 *
 * Owns: nothing past one call.  Must not: decide policy (a walk asks the
 * pipeline's may_read for every entry), open or read files.
 */
#ifndef TGI_TOOLS_WALK_H
#define TGI_TOOLS_WALK_H

#include <stddef.h>
#include "toolgate.h"
#include "registry.h"
#include "util/fs.h"

/* A handler's failure: out->kind = kind, applied = no (a sentence is
 * already in out->message).  Returns -1. */
int tgi_tool_fail(tgi_tool_out *out, tg_errkind kind);

/* The tgi_now_ms() past which a file tool stops with TG_ERR_TIMEOUT:
 * ctx->deadline_ms, or when the pipeline set none, timeout_s (default 120)
 * from now. */
double tgi_tool_deadline(const tgi_exec_ctx *ctx);

/*
 * Did the open of the call's path i (norm, as the tool normalised it) land
 * where the policy stage judged it, ctx->checked[i]?  real is where it
 * landed, as tgi_path_open_placed gives it (no syscall: the open already
 * said).  0; or -1 with out set (tgi_path_error(-ESTALE): transient,
 * applied no) when they differ -- a symlink, or a directory on the way,
 * was replaced between the check and the open -- or when the policy
 * stage judged no path i.  The caller closes what it opened and reads or
 * writes nothing.  With ctx->checked NULL (nothing judged) 0.
 */
int tgi_tool_landed(const tgi_exec_ctx *ctx, size_t i, const char *norm, const char *real,
                    tgi_tool_out *out);

/*
 * May the walk show, open or descend the entry path[0..len)?  Asks
 * ctx->may_read for every form of it (a refusal of either holds; a NULL
 * may_read refuses).  1 or 0.
 */
int tgi_walk_may_read(const tgi_exec_ctx *ctx, tgi_walk_path *w, size_t len, int is_dir);

#endif
