/*
 * sbmask.h — the entries below a root that a matcher picks, found by a
 * bounded walk and remembered between runs (src/exec/sbmask.c).  The
 * gate uses it to turn read rules with globs (`read_file(**` `/.env)`) into
 * the concrete paths a sandbox hides (tgi_sb_spec.mask; src/pipeline/readmask.c).
 *
 * The walk is depth first from the root's fd, each directory opened with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), never following a
 * symlink (a symlink entry is offered to the matcher as a file); entries
 * named .git and .toolgate are not entered (the sandbox binds the first
 * read-only and hides the second).  An entry the matcher picks is kept and,
 * when a directory, not entered: hiding it hides all below.  At most
 * TGI_SBMASK_MAX_DIRS directories and TGI_SBMASK_MAX_ENTRIES entries.
 *
 * The cache: one result per (root, key), with the inode, modification
 * and change times of every directory the walk read.  The next find with
 * the same root and key stats those directories only (no reading) and,
 * when none changed, answers from the cache; when a few changed (at most
 * 64, none gone or replaced), reads only those again, and walks only the
 * directories new in them: a directory's mtime and ctime
 * move whenever an entry is added, removed or renamed in it, which is all
 * a name-matcher can see (and ctime cannot be set back: a command that
 * restores an mtime with utime() moves it).  Kept in memory (one entry,
 * behind a lock) and, given a directory (the gate's state), in a file
 * there (readmask-<key digest>.json, this user's, 0600), so that a process of its own
 * per call (`toolgate call`) finds it too; a file that is not this user's,
 * not JSON of the right shape, or not fresh is a miss.
 *
 * Owns: the walk and the cache.  Must not: follow a symlink, leave the
 * root, or know what the matcher matches (policy does).
 */
#ifndef TGI_SBMASK_H
#define TGI_SBMASK_H

#include <stddef.h>
#include "util/util.h"

#define TGI_SBMASK_MAX_DIRS    100000
#define TGI_SBMASK_MAX_ENTRIES 2000000

/* Pick rel (relative to the root, normalised)?  is_dir: it is a
 * directory.  1: keep it (and do not enter it); 0: not. */
typedef int (*tgi_sbmask_match_fn)(void *arg, const char *rel, int is_dir);

typedef struct tgi_sbmask_stats {
	size_t dirs, entries;   /* what the walk read (0 when the cache answered) */
	int    cached;          /* 0: walked; 1: the memory cache answered; 2: the file;
	                           3: the cache, with the directories that changed read again */
	double ms;
} tgi_sbmask_stats;

/*
 * The entries below root (absolute, a directory) that fn picks, walking
 * from each of starts (relative to root; "" the root itself; one that is
 * not a directory is skipped), appended to out (relative paths, sorted).
 * key names what fn matches (and starts), for the cache (NULL: no cache);
 * store_fd is a directory to keep it in between processes (-1: memory
 * only).  0, or -1 with a sentence in err (the root cannot be opened, the
 * walk passed a bound, a directory cannot be read).  stats may be NULL.
 */
int tgi_sbmask_find(const char *root, const char *const *starts, size_t nstarts,
                    tgi_sbmask_match_fn fn, void *arg, const char *key, int store_fd,
                    tgi_strv *out, tgi_sbmask_stats *stats, char *err, size_t errlen);

/* The cache file's reader alone (for the fuzzer): 0 with the counts when
 * text is a cache for root and key_sha (sha256 hex of the key), -1 for
 * anything else. */
int tgi_sbmask_store_check(const char *text, size_t len, const char *root, const char *key_sha,
                           size_t *ndirs, size_t *npicked);

#endif
