/*
 * walk.c — what the file tools share that reads the tool contract's types:
 * failing, the deadline, whether an open landed where policy looked, and a
 * directory walk's question to the pipeline (may this entry be shown,
 * opened or descended?).
 *
 * Owns: nothing past one call.  Must not: decide policy (ctx->may_read
 * does, for every form of an entry), open or read files (util/fs.c does).
 */
#include "tools/walk.h"
#include "util/util.h"

#include <errno.h>
#include <string.h>

#define TIMEOUT_S 120  /* a tool's time when the pipeline set no deadline */

int tgi_tool_fail(tgi_tool_out *out, tg_errkind kind)
{
	out->kind = kind;
	out->applied = TGI_APPLIED_NO;
	return -1;
}

double tgi_tool_deadline(const tgi_exec_ctx *ctx)
{
	if (ctx->deadline_ms > 0)
		return ctx->deadline_ms;
	return tgi_now_ms() + 1000.0 * (ctx->timeout_s > 0 ? ctx->timeout_s : TIMEOUT_S);
}

int tgi_tool_landed(const tgi_exec_ctx *ctx, size_t i, const char *norm, const char *real,
                    tgi_tool_out *out)
{
	if (!ctx->checked)
		return 0;
	if (i < ctx->nchecked && ctx->checked[i] && !strcmp(ctx->checked[i], real))
		return 0;
	return tgi_tool_fail(out, tgi_path_error(-ESTALE, norm, out->message, sizeof out->message));
}

/* ---- directory walks ---- */

int tgi_walk_may_read(const tgi_exec_ctx *ctx, tgi_walk_path *w, size_t len, int is_dir)
{
	if (!ctx->may_read)
		return 0;                       /* fail closed */
	/* the names below the root, without the '/' that joins them to it */
	const char *below = w->path + w->root_len;
	size_t blen = len - w->root_len;
	if (blen && *below == '/') {
		below++;
		blen--;
	}

	for (int k = 0; k < w->nforms; k++) {
		size_t f = w->form_len[k], sep = f && blen ? 1 : 0;
		if (f + sep + blen + 1 > sizeof w->scratch)
			return 0;
		memcpy(w->scratch, w->form[k], f);
		if (sep)
			w->scratch[f] = '/';
		memcpy(w->scratch + f + sep, below, blen);
		w->scratch[f + sep + blen] = '\0';
		if (!ctx->may_read(ctx, w->scratch[0] ? w->scratch : ".", is_dir))
			return 0;
	}
	return 1;
}
