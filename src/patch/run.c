/*
 * run.c — a patch from text to disk: parse, plan, commit.  Shared by the
 * apply_patch tool and `toolgate apply-patch` (admin/apply_patch.c).
 *
 * The journal lives in <state>/journal (<workspace>/.toolgate/journal);
 * leftovers of a crashed commit there are finished when a gate opens
 * (finish_patches in gate/gate.c: the files, and the ledger's claim of the
 * call whose patch it was), and before `toolgate apply-patch` applies
 * anything, by opening a gate there for it: one recovery, whoever comes
 * first -- never while a gate runs, where another call's commit may be in
 * flight.
 *
 * Owns: the order of the steps and what each failure means for the
 * caller.  Must not: decide policy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "patch/patch.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

int tgi_patch_journal_open(int state_fd, char *err, size_t errlen)
{
	return tgi_state_subdir_open(state_fd, "journal", ".toolgate/journal", "patch journals",
	                             NULL, err, errlen);
}

tg_errkind tgi_patch_run(int ws_fd, int journal_fd, const char *txid, const char *text,
                         size_t len, tgi_patch_plan *plan, int *unknown, char *err, size_t errlen)
{
	return tgi_patch_run_held(ws_fd, journal_fd, txid, text, len, NULL, 0, plan, unknown, err,
	                          errlen);
}

tg_errkind tgi_patch_run_held(int ws_fd, int journal_fd, const char *txid, const char *text,
                              size_t len, const char *const *judged, size_t njudged,
                              tgi_patch_plan *plan, int *unknown, char *err, size_t errlen)
{
	tgi_patch *p;

	*unknown = 0;
	memset(plan, 0, sizeof *plan);
	if (tgi_patch_parse(text, len, &p, err, errlen) < 0)
		return TG_ERR_INVALID_INPUT;
	tgi_patch_err pe = tgi_patch_plan_held(ws_fd, p, judged, njudged, plan, err, errlen);
	tgi_patch_free(p);
	switch (pe) {
	case TGI_PATCH_OK:
		break;
	case TGI_PATCH_ECHANGED:
		return TG_ERR_TRANSIENT;
	case TGI_PATCH_EREFUSED:
		return TG_ERR_NOT_PERMITTED;
	case TGI_PATCH_EINVAL:
	case TGI_PATCH_EIO:
		return TG_ERR_TOOL_ERROR;
	}
	int r = tgi_patch_commit(ws_fd, journal_fd, txid, plan, err, errlen);
	if (r == 0)
		return TG_ERR_NONE;
	tgi_patch_plan_free(plan);
	*unknown = r == -2;
	return *unknown ? TG_ERR_UNKNOWN_OUTCOME : TG_ERR_TOOL_ERROR;
}

/* ---- toolgate apply-patch ---- */
