/*
 * sbaudit.h — what a sandboxed command may not create, found before it
 * runs and checked after it ran (src/exec/sbaudit.c).
 *
 * No mount can refuse a name, so a sandbox cannot stop a command from
 * making a directory called .git, or a file at the name of one of the
 * gate's own files that was missing when the sandbox was set up.  Before
 * the run, tgi_sbaudit_begin walks the workspace once for every entry
 * named .git (the sandbox binds each read-only) and notes the missing
 * paths it is given; after the run -- when the command and everything it
 * started are gone -- tgi_sbaudit_end walks it again and removes what
 * appeared at those names.
 *
 * Both walks are bounded: at most TGI_SBAUDIT_MAX_DIRS directories and
 * TGI_SBAUDIT_MAX_ENTRIES entries.  A workspace larger than that before
 * the run is refused (fail closed); one the command made larger is
 * reported as not checked, and the next run refuses it.  What is refused
 * goes to a quarantine directory the caller names (the gate's own state),
 * else is removed: at most TGI_SBAUDIT_MAX_REMOVE entries; a larger tree
 * is renamed aside instead, so that it no longer has the name.
 *
 * Owns: the walks, the state between them and the removals.  Must not:
 * follow a symlink, leave the walked root, or touch anything but what
 * appeared at a refused name.
 */
#ifndef TGI_SBAUDIT_H
#define TGI_SBAUDIT_H

#include <stddef.h>
#include <jansson.h>

#define TGI_SBAUDIT_MAX_DIRS    100000
#define TGI_SBAUDIT_MAX_ENTRIES 2000000
#define TGI_SBAUDIT_MAX_REMOVE  20000

typedef struct tgi_sbaudit tgi_sbaudit;

/*
 * Before the run.  root: absolute, resolved, a directory.  skip: paths
 * relative to root whose trees are not walked (what the command cannot
 * write: .toolgate, read-only directories).  scan_git 0: no walk (only the
 * absent paths are checked).  0 with *out (free it), or -1 with a
 * sentence in err (too large, or unreadable).
 */
int  tgi_sbaudit_begin(const char *root, const char *const *skip, size_t nskip, int scan_git,
                       tgi_sbaudit **out, char *err, size_t errlen);
/* Where what is refused goes instead of being removed: dir's
 * "quarantine" subdirectory, made 0700 when missing (dir: the gate's own
 * state directory, this user's; shown: how a report names dir).  0, or -1
 * (then refused entries are removed). */
int  tgi_sbaudit_quarantine(tgi_sbaudit *a, const char *dir, const char *shown);
/* A path relative to root that does not exist now and must not after. */
void tgi_sbaudit_absent(tgi_sbaudit *a, const char *rel);
/* The .git entries found before the run, relative to root. */
size_t      tgi_sbaudit_ngit(const tgi_sbaudit *a);
const char *tgi_sbaudit_git(const tgi_sbaudit *a, size_t i);
/* The directories and entries the walk before the run read (for doctor). */
void tgi_sbaudit_counts(const tgi_sbaudit *a, size_t *dirs, size_t *entries, double *ms);

/*
 * After the run: every .git below root that is new (not an inode found
 * before: one that was only moved stays) and every absent path that now
 * exists is removed.  Returns what was found, or NULL when nothing was:
 * [{"path": relative path, "what": "a .git directory" | "one of the gate's
 * files", "action": "removed (kept in Q/N-...)" | "removed" | "renamed to
 * NAME" | "left: WHY"}], and
 * {"path": ".", "what": "the workspace", "action": "not checked: WHY"} when
 * the walk could not finish.  Call once.
 */
json_t *tgi_sbaudit_end(tgi_sbaudit *a);
void    tgi_sbaudit_free(tgi_sbaudit *a);

#endif
