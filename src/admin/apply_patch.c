/*
 * apply_patch.c — `toolgate apply-patch` (tg_apply_patch): a patch applied
 * to a directory without a call, through the same engine as the
 * apply_patch tool (patch/run.c).  A commit a crash interrupted there is
 * finished first the one way there is: by opening a gate on the directory
 * (its start settles the journal and the ledger's claim).
 *
 * Owns: the journal directory while a patch is applied, and the answer.
 * Must not: decide policy (nothing here is a call).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate/gate.h"
#include "toolgate.h"
#include "patch/patch.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

/* Open dir/name as a directory beneath dir_fd, creating it if asked;
 * *made says whether it was created here. */
static int subdir(int dir_fd, const char *name, int create, int *made)
{
	*made = 0;
	int fd = tgi_open_beneath(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd == -ENOENT && create) {
		if (mkdirat(dir_fd, name, 0700) < 0)
			return -errno;
		*made = 1;
		fd = tgi_open_beneath(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	}
	return fd;
}

/* tgi_path_map_fn: an absolute path inside the directory (ud: its two
 * spellings, either may be NULL), made relative, as the gate's tool takes
 * it; one elsewhere stays as written, and is refused as leaving it. */
static int within_dir(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	char *const *roots = ud;
	for (int i = 0; i < 2; i++)
		if (roots[i] && tgi_path_within(roots[i], path, len, out, cap) == 1)
			return 1;
	return 0;
}

/* Does the journal directory hold anything a crash may have left? */
static int journals_left(int jfd)
{
	static const char *const ext[] = {".journal", ".commit", ".journal.tmp"};
	tgi_dirent *ents;
	size_t n, more;
	int found = 0;
	if (tgi_dir_read(jfd, 100000, &ents, &n, &more) < 0)
		return 1;                       /* the gate's start says what is wrong */
	for (size_t i = 0; i < n && !found; i++)
		for (size_t k = 0; k < TGI_ARRAY_LEN(ext) && !found; k++) {
			size_t nl = strlen(ents[i].name), el = strlen(ext[k]);
			found = nl > el && !strcmp(ents[i].name + nl - el, ext[k]);
		}
	tgi_dirents_free(ents, n);
	return found || more;
}

/*
 * Finish what a crash left in dir's journal the one way there is: a gate's
 * start (finish_patches), with dir as its workspace, creating nothing, so
 * that the ledger it finds settles the interrupted call's claim as any
 * gate would.  *notes gets the sentences of the files it left (caller
 * frees; NULL when none).  0, or -1 with err.
 */
static int finish_by_gate(const char *dir, char **notes, char *err, size_t errlen)
{
	tg_options o = {.workspace = dir ? dir : ".", .no_create = 1, .sync_full = -1};
	tg_gate *g;
	char *msg = NULL;
	if (tg_gate_open(&o, &g, &msg) < 0) {
		tgi_snprintf(err, errlen, "Failed to finish the patch a crash interrupted (in "
		             ".toolgate/journal), as opening a gate there does: %s; no file was changed",
		             msg ? msg : "the gate did not open");
		free(msg);
		return -1;
	}
	const json_t *kept = tgi_gate_patch_kept(g), *k;
	size_t i, cap = 1, used = 0;
	json_array_foreach(kept, i, k)
		cap += strlen(json_string_value(json_object_get(k, "message"))) + 1;
	*notes = cap > 1 ? tgi_xmalloc(cap) : NULL;
	json_array_foreach(kept, i, k)
		used += (size_t)snprintf(*notes + used, cap - used, "%s%s", used ? "\n" : "",
		                         json_string_value(json_object_get(k, "message")));
	tg_gate_close(g);
	return 0;
}

int tg_apply_patch(const char *dir, const char *patch, size_t len, char **summary, char **message)
{
	char err[8192], tx[37], *notes = NULL;
	tgi_patch_plan plan;
	int made_state = 0, made_journal = 0, state_fd = -1, jfd = -1, unknown = 0;
	tg_errkind kind = TG_ERR_TOOL_ERROR;

	*summary = *message = NULL;
	int ws_fd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ws_fd < 0) {
		tgi_snprintf(err, sizeof err, "Failed to open the directory: %s", strerror(errno));
		goto out;
	}
	/* the journal is created only while a patch is applied, and removed
	 * after unless it was there before */
	state_fd = subdir(ws_fd, ".toolgate", 1, &made_state);
	if (state_fd >= 0)
		jfd = subdir(state_fd, "journal", 1, &made_journal);
	if (jfd < 0) {
		tgi_snprintf(err, sizeof err, "Failed to open the patch journal in .toolgate/journal: %s",
		             strerror(-(state_fd < 0 ? state_fd : jfd)));
		goto out;
	}
	tgi_uuidv7(tx);
	/* a commit a crash interrupted is finished before anything is read */
	if (journals_left(jfd) && finish_by_gate(dir, &notes, err, sizeof err) < 0)
		goto out;
	char *roots[2] = {realpath(dir ? dir : ".", NULL), NULL}, *mapped = NULL;
	size_t mlen = 0;
	roots[1] = tgi_workspace_spelled(dir ? dir : ".", roots[0]);
	if (roots[0] && tgi_patch_map_paths(patch, len, within_dir, roots, &mapped, &mlen))
		patch = mapped, len = mlen;
	kind = tgi_patch_run(ws_fd, jfd, tx, patch, len, &plan, &unknown, err, sizeof err);
	free(mapped);
	free(roots[0]);
	free(roots[1]);
	if (kind == TG_ERR_NONE) {
		*summary = plan.summary;
		plan.summary = NULL;
		tgi_patch_plan_free(&plan);
	}
out:
	if (jfd >= 0)
		close(jfd);
	if (made_journal)
		unlinkat(state_fd, "journal", AT_REMOVEDIR);    /* fails if a journal stays */
	if (state_fd >= 0)
		close(state_fd);
	if (made_state)
		unlinkat(ws_fd, ".toolgate", AT_REMOVEDIR);
	if (ws_fd >= 0)
		close(ws_fd);
	if (kind != TG_ERR_NONE && notes) {
		size_t n = strlen(err) + strlen(notes) + 2;
		*message = tgi_xmalloc(n);
		snprintf(*message, n, "%s\n%s", err, notes);
		free(notes);
	} else {
		*message = kind != TG_ERR_NONE ? tgi_strdup(err) : notes;
	}
	return kind == TG_ERR_NONE ? 0 : 1;
}
