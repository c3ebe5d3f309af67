/*
 * journal.c — commit a patch plan all or nothing, and recover after a crash.
 *
 * A commit, in order:
 *   1. the journal <tx>.journal in journal_fd: every directory to create,
 *      every file with its temp and backup names (written under a temp
 *      name, locked, renamed into place);
 *   2. missing parent directories created;
 *   3. every new file's bytes in a temp file beside it;
 *   4. every file to be replaced or removed hard-linked to a backup name
 *      beside it;
 *   4b. when the patch creates files: the journal written again, the same
 *      way, now with what each created file is (device, inode and, where
 *      the file system keeps them, generation and birth time: "made");
 *      -- the first flush: all of the above durable --
 *   5. the renames (temp over file) and unlinks;
 *   6. the commit point: <tx>.journal renamed to <tx>.commit;
 *      -- the second flush: 5 and 6 durable --
 *   7. the backups and the journal removed (not flushed).
 * Two flushes for the whole patch, whatever its size: with BULK_SYNC
 * files or more each is one syncfs() of the file systems involved (the
 * workspace's, the journal's), else fsyncs of the temps (as written), the
 * journal and the directories changed.
 *
 * A failure before 6 rolls back in process: each backup renamed over its
 * file, each file that did not exist removed, temps and created
 * directories removed.  Recovery (tgi_patch_recover) finishes what a crash
 * left, by what it finds in journal_fd:
 *   - a kill (the kernel keeps everything it was given): <tx>.journal.tmp
 *     or nothing before 1's rename, <tx>.journal from there to 6 (rolled
 *     back: the files as they were), <tx>.commit after 6 (rolled forward:
 *     the backups removed); after 7 nothing.
 *   - a power loss, where only what a flush covered is sure to be there:
 *     before the first flush ends, no file was renamed yet (5 waits for
 *     it), so whatever journal is there -- .journal.tmp too, whose rename
 *     may not have reached the disk -- is rolled back, which only removes
 *     what is ours; one cut short does not parse and is only removed.  (A
 *     file system that keeps the order of metadata changes -- any with a
 *     journal of its own -- has the journal, made first, whenever it has
 *     anything made after it; on one that does not, ext4 without its
 *     journal, such a loss may leave temps or backups with no journal
 *     naming them: litter beside the files, never a changed file.)
 *     Between the flushes the journal, the backups and every temp's bytes
 *     are durable and any part of 5 and 6 may be: .journal is rolled back
 *     from the backups; .commit is rolled forward, and doing so redoes the
 *     renames and unlinks that did not reach the disk (a temp still there
 *     is renamed over its file; a file to remove that is still its
 *     backup's inode is removed).  After the second flush, a lost 7 leaves
 *     .commit, and rolling it forward again is the same clean-up.
 * So every file is either as it was or as the patch made it, never a mix,
 * and the patch is durable when the commit returns.  Two flushes is the
 * least for this order: the backups and the journal must be on disk before
 * the first rename (the first), and the commit record no earlier than the
 * renames, on disk before the call returns (the second).
 *
 * The old files (the backups' inodes) are freed apart: held open while
 * their names go at 7, and let go on a thread of their own (the reaper).
 *
 * A file that did not exist is removed by a rollback only when the file
 * at its path is the very one the commit made (its "made" identity): a
 * crash before 4b leaves no identity, and no rename happened yet, so what
 * is there is someone else's; one after may find the path replaced since.
 * Such a file is left, and said so (kept).  A journal of version 1 (before
 * identities) is still read; a file it created cannot be told from
 * another's and is left the same way.  The inode generation and birth
 * time tell a file from a later one that reuses the inode number (ext4
 * reuses them at once; a birth time is only as fine as a clock tick).
 *
 * Temp and backup files are named .tgpatch-<tx>-<n>.new / .old.  A live
 * commit holds an flock on its journal; recovery skips journals it cannot
 * lock, so two processes never undo each other's work.  Recovery acts only
 * on journals that are 0600 files of the current user (as written here;
 * git never checks out such a file), naming paths outside .git/ and
 * .toolgate/, with temps and backups of ours beside their files.
 *
 * Owns: the journal format and the commit protocol.  Must not: decide
 * what to write (apply.c) or leave the workspace (every open is beneath
 * ws_fd).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "patch/patch.h"
#include "util/fs.h"
#include "util/util.h"

#define JOURNAL_MAX (64u << 20)
#define TEMP_PREFIX ".tgpatch-"
#define BULK_SYNC   8   /* from this many files, one syncfs instead of an fsync each */
#define REAP_MAX    256 /* old files at most held open for freeing apart (fds) */

#define JOURNAL_VERSION 2   /* 1: no "made" identities (still read) */

/* What a created file is: its temp as the commit made it (a rename keeps
 * all three). */
typedef struct jmade {
	int      known;
	uint64_t dev, ino;
	int      born_known;   /* the file system keeps a birth time */
	int64_t  born_s;
	uint32_t born_ns;
	int      gen_known;    /* and an inode generation (FS_IOC_GETVERSION) */
	uint32_t gen;
} jmade;

/* One file of a transaction. */
typedef struct jfile {
	char *path;       /* the file, workspace-relative */
	char *temp;       /* its new bytes before the rename, or NULL (a removal) */
	char *backup;     /* its old self during the commit, or NULL (it did not exist) */
	jmade made;       /* temp without backup: the file created, once known */
} jfile;

typedef struct journal {
	int     version;
	char   *tx;       /* the txid as given (an op id) */
	char  **dirs;     /* created, parents first */
	size_t  ndirs;
	jfile  *files;
	size_t  nfiles;
} journal;

static void journal_free(journal *j)
{
	free(j->tx);
	for (size_t i = 0; i < j->ndirs; i++)
		free(j->dirs[i]);
	for (size_t i = 0; i < j->nfiles; i++) {
		free(j->files[i].path);
		free(j->files[i].temp);
		free(j->files[i].backup);
	}
	free(j->dirs);
	free(j->files);
	memset(j, 0, sizeof *j);
}

/* dirname and basename of a workspace-relative path (parent "." at the top). */
static const char *split(const char *path, char *parent, size_t cap)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		tgi_snprintf(parent, cap, ".");
		return path;
	}
	tgi_snprintf(parent, cap, "%.*s", (int)(slash - path), path);
	return slash + 1;
}

/* A sibling of path named .tgpatch-<tx>-<n>.<ext>. */
static char *sibling(const char *path, const char *tx, size_t n, const char *ext)
{
	char parent[PATH_MAX], name[PATH_MAX + 80];
	split(path, parent, sizeof parent);
	tgi_snprintf(name, sizeof name, "%s%s%s-%zu.%s", strcmp(parent, ".") ? parent : "",
	             strcmp(parent, ".") ? "/" TEMP_PREFIX : TEMP_PREFIX, tx, n, ext);
	return tgi_strdup(name);
}

/*
 * The directories of a transaction's files, each opened once, beneath
 * ws_fd: every later step works on names in them, so no path is resolved
 * twice.  A directory that cannot be opened is not remembered (one
 * created later opens then).
 */
typedef struct dirset {
	int     ws_fd;
	char  **path;
	int    *fd;
	size_t  n;
} dirset;

/* The directory holding path (a borrowed fd, or -errno); *base gets the
 * final component. */
static int dirs_get(dirset *d, const char *path, const char **base)
{
	char parent[PATH_MAX];
	*base = split(path, parent, sizeof parent);
	for (size_t i = d->n; i-- > 0;)
		if (!strcmp(d->path[i], parent))
			return d->fd[i];
	int fd = tgi_open_beneath(d->ws_fd, parent, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	d->path = tgi_xrealloc(d->path, (d->n + 1) * sizeof *d->path);
	d->fd = tgi_xrealloc(d->fd, (d->n + 1) * sizeof *d->fd);
	d->path[d->n] = tgi_strdup(parent);
	d->fd[d->n++] = fd;
	return fd;
}

static void dirs_close(dirset *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->path[i]);
		close(d->fd[i]);
	}
	free(d->path);
	free(d->fd);
	memset(d, 0, sizeof *d);
}

static int sync_dir(int fd)
{
	return fsync(fd) < 0 && errno != EINVAL ? -errno : 0;
}

/* fsync the directory of every file of j (each once). */
static int sync_parents(dirset *d, const journal *j)
{
	const char *base;
	int r = 0;
	for (size_t i = 0; i < j->nfiles; i++)
		dirs_get(d, j->files[i].path, &base);   /* a missing one has nothing to sync */
	for (size_t i = 0; i < d->n && !r; i++)
		r = sync_dir(d->fd[i]);
	return r;
}

/* mkdir (make) or rmdir a directory.  0 or -errno. */
static int dir_op(dirset *d, const char *path, int make)
{
	const char *base;
	int pfd = dirs_get(d, path, &base);
	if (pfd < 0)
		return pfd;
	return (make ? mkdirat(pfd, base, 0755) : unlinkat(pfd, base, AT_REMOVEDIR)) < 0 ? -errno : 0;
}

static int exists(int pfd, const char *name)
{
	struct stat st;
	return fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* What the open file fd is.  0 or -errno. */
static int identify(int fd, jmade *m)
{
	struct statx sx;
	unsigned int gen;
	memset(m, 0, sizeof *m);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) < 0)
		return -errno;
	m->known = 1;
	/* the generation changes when an inode number is used again (ext4,
	 * XFS); the birth time is only as fine as the kernel's clock tick */
	if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0) {
		m->gen_known = 1;
		m->gen = gen;
	}
	m->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	m->ino = sx.stx_ino;
	if (sx.stx_mask & STATX_BTIME) {
		m->born_known = 1;
		m->born_s = sx.stx_btime.tv_sec;
		m->born_ns = sx.stx_btime.tv_nsec;
	}
	return 0;
}

static int same_file(const jmade *made, const jmade *now)
{
	return made->known && now->known && made->dev == now->dev && made->ino == now->ino &&
	       (!made->born_known || (now->born_known && made->born_s == now->born_s &&
	                              made->born_ns == now->born_ns)) &&
	       (!made->gen_known || (now->gen_known && made->gen == now->gen));
}

/* What the file name in the directory pfd is, if it is a regular file
 * (opened without following, blocking or taking a terminal: never a
 * device's open).  0, -ENOENT, or -errno; a file that is not regular
 * reads as unknown (now->known 0). */
static int identify_at(int pfd, const char *name, jmade *now)
{
	struct stat st;
	memset(now, 0, sizeof *now);
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : 0;
	int r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? identify(fd, now) : 0;
	close(fd);
	return r;
}

/* A file a rollback left where the patch was to create one: a sentence
 * in kept ({tx, path, message}), if kept. */
static void left(json_t *kept, const journal *j, const char *path, const char *why)
{
	char text[4 * PATH_MAX], shown[PATH_MAX], msg[PATH_MAX + 512];
	if (!kept)
		return;
	if (tgi_name_text(path, strlen(path), text, sizeof text) < 0)
		tgi_snprintf(text, sizeof text, "(a path too long to show)");
	tgi_sanitize(shown, sizeof shown, text);
	tgi_snprintf(msg, sizeof msg, "%s was left as it is while undoing an interrupted patch: %s",
	             shown, why);
	json_array_append_new(kept, json_pack("{s:s?, s:s, s:s}", "tx", j->tx, "path", text,
	                                      "message", msg));
}

/* A file the transaction was to create (no backup): removed when the
 * file at its path is the one the commit made, else left (and said so).
 * 0 or -errno. */
static int undo_created(int pfd, const char *base, const char *tbase, const journal *j,
                        const jfile *f, json_t *kept)
{
	jmade now;
	if (!exists(pfd, base))
		return 0;
	if (tbase && exists(pfd, tbase)) {
		/* the rename never came: whatever is there is another's */
		left(kept, j, f->path, "the patch had not put its file there yet, so another made it");
		return 0;
	}
	if (!f->made.known) {
		left(kept, j, f->path, j->version < 2 ?
		     "the journal (an earlier version) does not say which file the patch created; "
		     "remove it if it is the patch's" :
		     "the patch had not put its file there yet, so another made it");
		return 0;
	}
	int r = identify_at(pfd, base, &now);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (!same_file(&f->made, &now)) {
		left(kept, j, f->path, "it is not the file the patch created (another replaced it since)");
		return 0;
	}
	return unlinkat(pfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/*
 * Undo a transaction that did not reach its commit point: every backup
 * back in place, every file that did not exist removed when it is the one
 * the commit made (undo_created; others are left, each with a sentence in
 * kept if not NULL), temps and created directories removed.  Idempotent.
 * 0 or -errno.
 */
static int rollback(int ws_fd, const journal *j, json_t *kept)
{
	dirset d = {.ws_fd = ws_fd};
	int r = 0;

	for (size_t i = j->nfiles; i-- > 0;) {
		const jfile *f = &j->files[i];
		const char *base, *tbase = NULL, *bbase = NULL;
		char parent[PATH_MAX];
		int pfd = dirs_get(&d, f->path, &base);
		if (pfd == -ENOENT || pfd == -ENOTDIR)
			continue;               /* its directory was never made: nothing of ours */
		if (pfd < 0) {
			r = pfd;
			continue;
		}
		if (f->temp)
			tbase = split(f->temp, parent, sizeof parent);
		if (f->backup)
			bbase = split(f->backup, parent, sizeof parent);
		if (bbase && exists(pfd, bbase)) {
			/* over a replaced file; a no-op when the rename never came
			 * (both names are one inode), hence the unlink after */
			if (renameat(pfd, bbase, pfd, base) < 0)
				r = -errno;
			else
				unlinkat(pfd, bbase, 0);
		} else if (!bbase && f->temp) {
			int k = undo_created(pfd, base, tbase, j, f, kept);
			if (k < 0)
				r = k;
		}
		if (tbase && unlinkat(pfd, tbase, 0) < 0 && errno != ENOENT)
			r = -errno;
	}
	int s = sync_parents(&d, j);
	if (!r)
		r = s;
	for (size_t i = j->ndirs; i-- > 0;)
		dir_op(&d, j->dirs[i], 0);      /* fails if not empty: then not only ours */
	dirs_close(&d);
	return r;
}

/* Are the names a and b in the directory pfd one file (two links)? */
static int one_file(int pfd, const char *a, const char *b)
{
	struct stat sa, sb;
	return fstatat(pfd, a, &sa, AT_SYMLINK_NOFOLLOW) == 0 &&
	       fstatat(pfd, b, &sb, AT_SYMLINK_NOFOLLOW) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * The old files of a commit, freed apart.  Freeing a file is the costly
 * part of removing its last name (its blocks released, on some file
 * systems each discarded, synchronously): a backup's name is removed in
 * the commit, with the file held open, and the last close -- the freeing
 * -- happens on a thread of its own once the commit has returned.  Nothing
 * of the workspace waits for it: the names are gone, and the patch
 * durable, before.  A process that ends first lets the kernel free them.
 */
typedef struct reaper {
	int    fd[REAP_MAX];
	size_t n;
	int    fd_max;     /* held only below half the process's limit of fds */
} reaper;

static void *reap_main(void *arg)
{
	reaper *r = arg;
	for (size_t i = 0; i < r->n; i++)
		close(r->fd[i]);
	free(r);
	return NULL;
}

/* Hold the file name in pfd open (if r has room) before its name goes. */
static void reap_hold(reaper *r, int pfd, const char *name)
{
	if (!r || r->n == REAP_MAX)
		return;
	int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= r->fd_max) {
		close(fd);
		r->n = REAP_MAX;        /* the rest are freed as their names go */
	} else if (fd >= 0) {
		r->fd[r->n++] = fd;
	}
}

/* Let go of what r holds: on a thread of its own, or here if none starts. */
static void reap(reaper *r)
{
	pthread_attr_t at;
	pthread_t t;
	if (!r->n) {
		free(r);
		return;
	}
	int ok = pthread_attr_init(&at) == 0;
	if (ok) {
		ok = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
		     pthread_create(&t, &at, reap_main, r) == 0;
		pthread_attr_destroy(&at);
	}
	if (!ok)
		reap_main(r);
}

/*
 * After the commit point: the backups go (with r, each held open first:
 * the reaper above frees them).  With redo (recovery), first whatever of
 * step 5 a crash lost is done again: the commit record is made durable in
 * the same flush as the renames (see the header), so after a power loss it
 * may stand while some of them do not.  A temp still there is renamed over
 * its file (its bytes were durable before any rename: the first flush),
 * and a file to remove that is still the backup's inode is removed.
 * Without a crash (the commit's own clean-up, or a kill, which loses
 * nothing the kernel was given) no temp is left and both are no-ops.
 * Returns how many files were finished that way.
 */
static size_t roll_forward(dirset *d, const journal *j, int redo, reaper *r)
{
	size_t redone = 0;
	for (size_t i = 0; i < j->nfiles; i++) {
		const jfile *f = &j->files[i];
		const char *base, *tbase = NULL, *bbase = NULL;
		char parent[PATH_MAX];
		int pfd = dirs_get(d, f->path, &base);
		if (pfd < 0)
			continue;               /* its directory is gone: nothing of ours */
		if (f->temp)
			tbase = split(f->temp, parent, sizeof parent);
		if (f->backup)
			bbase = split(f->backup, parent, sizeof parent);
		if (redo && tbase && exists(pfd, tbase)) {
			/* over the old file (still the backup's inode), or where none
			 * was, only if nothing has taken the name since */
			int k = bbase ? renameat(pfd, tbase, pfd, base)
			              : renameat2(pfd, tbase, pfd, base, RENAME_NOREPLACE);
			if (k < 0)
				unlinkat(pfd, tbase, 0);
			else
				redone++;
		} else if (redo && !tbase && bbase && one_file(pfd, base, bbase)) {
			if (unlinkat(pfd, base, 0) == 0)
				redone++;
		}
		if (bbase) {
			reap_hold(r, pfd, bbase);
			unlinkat(pfd, bbase, 0);
		}
	}
	return redone;
}

/* ---- the journal file ---- */

/* A path of the journal (bytes) as JSON: its text form (fs.h), or null
 * for NULL. */
static json_t *jpath(const char *path)
{
	char text[4 * PATH_MAX];
	if (!path)
		return json_null();
	if (tgi_name_text(path, strlen(path), text, sizeof text) < 0)
		return NULL;                    /* never: paths are under PATH_MAX */
	return json_string(text);
}

/* The bytes of a journal path read back (caller frees), or NULL. */
static char *jpath_bytes(const json_t *v)
{
	char bytes[PATH_MAX], err[8];
	const char *text = json_string_value(v);
	if (!text || tgi_name_bytes(text, json_string_length(v), bytes, sizeof bytes, err,
	                            sizeof err) < 0)
		return NULL;
	return tgi_strdup(bytes);
}

/* A made identity as JSON: {"dev", "ino"[, "born": [s, ns]]} (the
 * unsigned numbers as JSON's signed ones, bit for bit). */
static json_t *jmade_json(const jmade *m)
{
	json_t *o = json_pack("{s:I, s:I}", "dev", (json_int_t)m->dev, "ino", (json_int_t)m->ino);
	if (m->born_known)
		json_object_set_new(o, "born", json_pack("[I, I]", (json_int_t)m->born_s,
		                                         (json_int_t)m->born_ns));
	if (m->gen_known)
		json_object_set_new(o, "gen", json_integer((json_int_t)m->gen));
	return o;
}

static int jmade_parse(const json_t *v, jmade *m)
{
	const json_t *dev = json_object_get(v, "dev"), *ino = json_object_get(v, "ino");
	const json_t *born = json_object_get(v, "born"), *gen = json_object_get(v, "gen");
	memset(m, 0, sizeof *m);
	if (!json_is_object(v) || !json_is_integer(dev) || !json_is_integer(ino) ||
	    json_object_size(v) != 2u + (born != NULL) + (gen != NULL))
		return -1;
	m->known = 1;
	m->dev = (uint64_t)json_integer_value(dev);
	m->ino = (uint64_t)json_integer_value(ino);
	if (gen) {
		if (!json_is_integer(gen) || json_integer_value(gen) < 0 ||
		    json_integer_value(gen) > UINT32_MAX)
			return -1;
		m->gen_known = 1;
		m->gen = (uint32_t)json_integer_value(gen);
	}
	if (!born)
		return 0;
	const json_t *bs = json_array_get(born, 0), *bn = json_array_get(born, 1);
	if (json_array_size(born) != 2 || !json_is_integer(bs) || !json_is_integer(bn) ||
	    json_integer_value(bn) < 0 || json_integer_value(bn) > 999999999)
		return -1;
	m->born_known = 1;
	m->born_s = json_integer_value(bs);
	m->born_ns = (uint32_t)json_integer_value(bn);
	return 0;
}

static json_t *journal_json(const journal *j)
{
	json_t *dirs = json_array(), *files = json_array();
	for (size_t i = 0; i < j->ndirs; i++)
		json_array_append_new(dirs, jpath(j->dirs[i]));
	for (size_t i = 0; i < j->nfiles; i++) {
		const jfile *f = &j->files[i];
		json_t *o = json_pack("{s:o, s:o, s:o}", "path", jpath(f->path), "temp", jpath(f->temp),
		                      "backup", jpath(f->backup));
		if (f->made.known)
			json_object_set_new(o, "made", jmade_json(&f->made));
		json_array_append_new(files, o);
	}
	json_t *doc = json_pack("{s:i}", "version", j->version ? j->version : JOURNAL_VERSION);
	if (j->tx)
		json_object_set_new(doc, "tx", json_string(j->tx));
	json_object_set_new(doc, "dirs", dirs);
	json_object_set_new(doc, "files", files);
	return doc;
}

/* A name the journal may use: a path beneath the workspace outside .git/
 * and .toolgate/ (no patch writes there), and for a temp or backup one of
 * ours in the same directory as its file (of). */
static int jname_ok(const char *s, const char *of)
{
	if (!s || !*s || s[0] == '/' || strlen(s) >= PATH_MAX || tgi_path_protected(s))
		return 0;
	if (!of)
		return 1;
	char p1[PATH_MAX], p2[PATH_MAX];
	const char *base = split(s, p1, sizeof p1);
	split(of, p2, sizeof p2);
	return !strcmp(p1, p2) && strncmp(base, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0;
}

/* A transaction id as a journal may give it: an op id's characters. */
static int tx_ok(const char *tx)
{
	size_t n = tx ? strlen(tx) : 0;
	if (!n || n > 36)
		return 0;
	for (const char *c = tx; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
			return 0;
	return 1;
}

/* A journal's text read back.  0, or -1 with why (a sentence's end: "it
 * is not ...") in why. */
static int journal_parse(const char *text, size_t len, journal *j, char *why, size_t whylen)
{
	json_error_t e;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e), *v;
	const json_t *ver = json_object_get(root, "version"), *jtx = json_object_get(root, "tx");
	size_t i;

	memset(j, 0, sizeof *j);
	tgi_snprintf(why, whylen, "it is not a patch journal this toolgate can read");
	if (json_is_integer(ver) && json_integer_value(ver) != 1 &&
	    json_integer_value(ver) != JOURNAL_VERSION)
		tgi_snprintf(why, whylen, "it is of version %" JSON_INTEGER_FORMAT ", which this "
		             "toolgate does not know (a newer one wrote it?)", json_integer_value(ver));
	int version = json_is_integer(ver) ? (int)json_integer_value(ver) : 0;
	int ok = root && (version == 1 || version == JOURNAL_VERSION) &&
	         json_integer_value(ver) == version &&
	         json_is_array(json_object_get(root, "dirs")) &&
	         json_is_array(json_object_get(root, "files")) &&
	         (jtx ? tx_ok(json_string_value(jtx)) : version == 1);

	if (ok) {
		json_t *dirs = json_object_get(root, "dirs"), *files = json_object_get(root, "files");
		j->version = version;
		j->tx = jtx ? tgi_strdup(json_string_value(jtx)) : NULL;
		j->dirs = tgi_xcalloc(json_array_size(dirs) + 1, sizeof *j->dirs);
		j->files = tgi_xcalloc(json_array_size(files) + 1, sizeof *j->files);
		json_array_foreach(dirs, i, v) {
			char *d = ok ? jpath_bytes(v) : NULL;
			ok = ok && jname_ok(d, NULL);
			if (ok)
				j->dirs[j->ndirs++] = d;
			else
				free(d);
		}
		json_array_foreach(files, i, v) {
			json_t *jt = json_object_get(v, "temp"), *jb = json_object_get(v, "backup");
			json_t *jm = json_object_get(v, "made");
			char *p = ok ? jpath_bytes(json_object_get(v, "path")) : NULL;
			char *t = ok && jt && !json_is_null(jt) ? jpath_bytes(jt) : NULL;
			char *b = ok && jb && !json_is_null(jb) ? jpath_bytes(jb) : NULL;
			jmade m = {0};
			ok = ok && jname_ok(p, NULL) && (!jt || json_is_null(jt) || jname_ok(t, p)) &&
			     (!jb || json_is_null(jb) || jname_ok(b, p));
			/* an identity only from version 2, and only of a file created */
			ok = ok && (!jm || (version >= 2 && t && !b && jmade_parse(jm, &m) == 0));
			if (ok) {
				j->files[j->nfiles++] = (jfile){p, t, b, m};
			} else {
				free(p);
				free(t);
				free(b);
			}
		}
	}
	json_decref(root);
	if (!ok)
		journal_free(j);
	return ok ? 0 : -1;
}

/* Write <tx>.journal (again: replace, and on failure the one in place
 * stays), not yet durable: the commit's first flush makes it so, before
 * any file is renamed.  Returns the fd that holds its lock, or -errno. */
static int journal_write(int jfd, const char *tx, const journal *j, int replace)
{
	char tmp[96], name[96];
	tgi_snprintf(tmp, sizeof tmp, "%s.journal.tmp", tx);
	tgi_snprintf(name, sizeof name, "%s.journal", tx);

	json_t *doc = journal_json(j);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	int fd = tgi_open_beneath(jfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	int r = fd < 0 ? fd : 0;
	if (!r && flock(fd, LOCK_EX) < 0)
		r = -errno;
	if (!r)
		r = text ? tgi_write_all(fd, text, strlen(text)) : -ENOMEM;
	if (!r && renameat(jfd, tmp, jfd, name) < 0)
		r = -errno;
	free(text);
	if (r) {
		unlinkat(jfd, tmp, 0);
		if (!replace)
			unlinkat(jfd, name, 0);
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

/* Remove the journal of tx (either state); sync: and make that durable. */
static void journal_remove(int jfd, const char *tx, int sync)
{
	static const char *const ext[] = {"journal", "commit"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(ext); i++) {
		char name[96];
		tgi_snprintf(name, sizeof name, "%s.%s", tx, ext[i]);
		unlinkat(jfd, name, 0);
	}
	if (sync)
		sync_dir(jfd);
}

/* Every directory the writes need that does not exist yet, parents first. */
static void plan_dirs(int ws_fd, const tgi_patch_plan *plan, journal *j)
{
	for (size_t i = 0; i < plan->nwrites; i++) {
		if (!plan->writes[i].data)
			continue;
		char dir[PATH_MAX];
		tgi_snprintf(dir, sizeof dir, "%s", plan->writes[i].fspath);
		for (char *s = dir; (s = strchr(s, '/')); *s++ = '/') {
			*s = '\0';
			int known = 0;
			for (size_t k = 0; k < j->ndirs && !known; k++)
				known = !strcmp(j->dirs[k], dir);
			int fd = known ? -EEXIST : tgi_open_beneath(ws_fd, dir, O_PATH, 0);
			if (fd >= 0)
				close(fd);
			else if (fd == -ENOENT) {
				j->dirs = tgi_xrealloc(j->dirs, (j->ndirs + 1) * sizeof *j->dirs);
				j->dirs[j->ndirs++] = tgi_strdup(dir);
			}
		}
	}
}

/* path: its bytes, shown as text (fs.h) */
static int fail(char *err, size_t errlen, const char *what, const char *path, int r)
{
	char s[256], text[PATH_MAX];
	if (tgi_name_text(path, strlen(path), text, sizeof text) < 0)
		tgi_snprintf(text, sizeof text, "(a path too long to show)");
	tgi_sanitize(s, sizeof s, text);
	tgi_snprintf(err, errlen, "%s %s: %s", what, s, strerror(-r));
	return -1;
}

/*
 * One flush of the commit (see the header): everything the commit did so
 * far durable.  With bulk, one syncfs() of each file system the files and
 * the journal lie on (a workspace may hold mount points); else an fsync of
 * the journal file (jlock, if not -1; the temps were synced as they were
 * written) and of every directory the commit changed: the files', the
 * created directories' parents and the journal's.  0 or -errno.
 */
static int flush(dirset *d, const journal *j, int jfd, int jlock, int bulk)
{
	const char *base;
	int r = 0;
	for (size_t i = 0; i < j->nfiles; i++)
		dirs_get(d, j->files[i].path, &base);   /* a missing one has nothing to sync */
	for (size_t i = 0; i < j->ndirs; i++)
		dirs_get(d, j->dirs[i], &base);
	if (!bulk) {
		if (jlock >= 0 && fsync(jlock) < 0)
			return -errno;
		for (size_t i = 0; i < d->n && !r; i++)
			r = sync_dir(d->fd[i]);
		return r ? r : sync_dir(jfd);
	}
	dev_t *done = tgi_xmalloc((d->n + 1) * sizeof *done);
	size_t ndone = 0;
	for (size_t i = 0; i <= d->n && !r; i++) {
		int fd = i < d->n ? d->fd[i] : jfd;
		struct stat st;
		size_t k = 0;
		if (fstat(fd, &st) < 0) {
			r = -errno;
			break;
		}
		while (k < ndone && done[k] != st.st_dev)
			k++;
		if (k == ndone) {
			done[ndone++] = st.st_dev;
			r = syncfs(fd) < 0 ? -errno : 0;
		}
	}
	free(done);
	return r;
}

/* Steps 2-5 (the first flush between 4b and 5); *relock gets the lock of
 * the journal written again at 4b (or stays -1).  0, or -1 with err (the
 * caller rolls back). */
static int apply_steps(dirset *d, int jfd, int lock, const char *tx, const tgi_patch_plan *plan,
                       journal *j, int bulk, int *relock, char *err, size_t errlen)
{
	int r = 0, pfd, creates = 0;
	const char *base, *tbase, *bbase;
	const char *what = NULL, *path = NULL;

	for (size_t i = 0; i < j->ndirs && !what; i++)
		if ((r = dir_op(d, j->dirs[i], 1)) < 0 && r != -EEXIST)
			what = "Failed to create directory", path = j->dirs[i];

	/* 3: the new bytes beside each file */
	for (size_t i = 0; i < plan->nwrites && !what; i++) {
		const tgi_patch_write *w = &plan->writes[i];
		if (!w->data)
			continue;
		int fd = (pfd = dirs_get(d, j->files[i].temp, &tbase)) < 0 ? pfd :
		         tgi_open_beneath(pfd, tbase, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
		                          w->mode ? w->mode : 0644);
		r = fd < 0 ? fd : 0;
		if (!r && !j->files[i].backup) {        /* a file created: what it is */
			r = identify(fd, &j->files[i].made);
			creates = 1;
		}
		if (!r && w->mode && fchmod(fd, w->mode) < 0)
			r = -errno;
		if (!r)
			r = tgi_write_all(fd, w->data, w->len);
		if (!r && !bulk && fsync(fd) < 0)
			r = -errno;
		if (fd >= 0 && close(fd) < 0 && !r && errno != EINTR)
			r = -errno;
		if (r)
			what = "Failed to write file", path = w->fspath;
	}
	/* 4: the old selves kept (the backup lies in the same directory) */
	for (size_t i = 0; i < plan->nwrites && !what; i++) {
		if (!j->files[i].backup)
			continue;
		dirs_get(d, j->files[i].backup, &bbase);
		pfd = dirs_get(d, plan->writes[i].fspath, &base);
		r = pfd < 0 ? pfd : linkat(pfd, base, pfd, bbase, 0) < 0 ? -errno : 0;
		if (r)
			what = "Failed to keep a backup of", path = plan->writes[i].fspath;
	}
	/* 4b: what was created, in the journal before any of it takes a file's place */
	if (!what && creates && (*relock = journal_write(jfd, tx, j, 1)) < 0) {
		r = *relock;
		*relock = -1;
		what = "Failed to write the patch journal for", path = j->files[0].path;
	}
	/* the first flush: the journal, the directories, temps and backups */
	if (!what && (r = flush(d, j, jfd, *relock >= 0 ? *relock : lock, bulk)) < 0)
		what = "Failed to sync the files of the patch, such as", path = j->files[0].path;

	/* 5: in place */
	for (size_t i = 0; i < plan->nwrites && !what; i++) {
		const tgi_patch_write *w = &plan->writes[i];
		if ((pfd = dirs_get(d, w->fspath, &base)) < 0) {
			r = pfd;
		} else if (w->data) {
			dirs_get(d, j->files[i].temp, &tbase);
			r = renameat(pfd, tbase, pfd, base) < 0 ? -errno : 0;
		} else {
			r = unlinkat(pfd, base, 0) < 0 ? -errno : 0;
		}
		if (r)
			what = w->data ? "Failed to write file" : "Failed to delete file", path = w->fspath;
	}
	return what ? fail(err, errlen, what, path, r) : 0;
}

int tgi_patch_commit(int ws_fd, int journal_fd, const char *txid, const tgi_patch_plan *plan,
                     char *err, size_t errlen)
{
	char tx[40], from[96], to[96];
	journal j = {0};
	size_t n = 0;

	for (const char *s = txid; *s && n < 32; s++)
		if (*s != '-')
			tx[n++] = *s;
	tx[n] = '\0';
	if (!plan->nwrites)
		return 0;

	j.tx = tgi_strdup(txid);
	plan_dirs(ws_fd, plan, &j);
	j.files = tgi_xcalloc(plan->nwrites, sizeof *j.files);
	for (size_t i = 0; i < plan->nwrites; i++) {
		const tgi_patch_write *w = &plan->writes[i];
		j.files[i].path = tgi_strdup(w->fspath);
		j.files[i].temp = w->data ? sibling(w->fspath, tx, i, "new") : NULL;
		j.files[i].backup = w->existed ? sibling(w->fspath, tx, i, "old") : NULL;
	}
	j.nfiles = plan->nwrites;

	int lock = journal_write(journal_fd, tx, &j, 0), relock = -1;
	if (lock < 0) {
		tgi_snprintf(err, errlen, "Failed to write the patch journal: %s; no file was changed",
		             strerror(-lock));
		journal_free(&j);
		return -1;
	}
	dirset d = {.ws_fd = ws_fd};
	int rc = 0, bulk = plan->nwrites >= BULK_SYNC;
	if (apply_steps(&d, journal_fd, lock, tx, plan, &j, bulk, &relock, err, errlen) < 0) {
		/* before the commit point: undo; if that fails too the journal stays */
		int r = rollback(ws_fd, &j, NULL);
		size_t l = strlen(err);
		if (r < 0) {
			tgi_snprintf(err + l, errlen - l, "; undoing the files already changed failed "
			             "too (%s): they are undone at the next start", strerror(-r));
			rc = -2;
		} else {
			tgi_snprintf(err + l, errlen - l, "; no file was changed");
			journal_remove(journal_fd, tx, 1);
			rc = -1;
		}
		goto out;
	}
	/* 6 and the second flush: the renames and the commit record durable
	 * together (a crash in between is rolled forward, renames redone) */
	tgi_snprintf(from, sizeof from, "%s.journal", tx);
	tgi_snprintf(to, sizeof to, "%s.commit", tx);
	int k = renameat(journal_fd, from, journal_fd, to) < 0 ? -errno : 0;
	if (!k)
		k = flush(&d, &j, journal_fd, -1, bulk);
	if (k < 0) {
		/* the files are in place; whether the mark is durable is unknown */
		tgi_snprintf(err, errlen, "Failed to record the patch as committed: %s", strerror(-k));
		rc = -2;
		goto out;
	}
	/* 7: nothing synced: a clean-up lost to a crash is done again by the
	 * roll forward of the commit record it left */
	reaper *old = tgi_xcalloc(1, sizeof *old);
	struct rlimit rl;
	old->fd_max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < INT_MAX ?
	              (int)(rl.rlim_cur / 2) : 512;
	roll_forward(&d, &j, 0, old);
	journal_remove(journal_fd, tx, 0);
	reap(old);
out:
	dirs_close(&d);
	/* the first lock was held to here: a recovery that opened the journal
	 * before 4b replaced it must not lock the old one while we run */
	if (relock >= 0)
		close(relock);
	close(lock);
	journal_free(&j);
	return rc;
}

/* Finish one journal file (name ends in .journal, .commit or .journal.tmp). */
static int recover_one(int ws_fd, int jfd, const char *name, tgi_strv *undone, json_t *kept,
                       char *err, size_t errlen)
{
	size_t len = strlen(name);
	int committed = len > 7 && !strcmp(name + len - 7, ".commit");
	int prepared = len > 8 && !strcmp(name + len - 8, ".journal");
	int partial = len > 12 && !strcmp(name + len - 12, ".journal.tmp");
	if (!committed && !prepared && !partial)
		return 0;

	int fd = tgi_open_beneath(jfd, name, O_RDWR | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : (tgi_snprintf(err, errlen, "cannot open patch journal %s: %s",
		                                         name, strerror(-fd)), -1);
	/* ours are 0600 files of this user: anything else (a journal a
	 * repository carried in, say) is not acted on */
	struct stat st, now;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0077) || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;                       /* not ours, or a live commit holds it */
	}
	/* locked, but is it still the journal of that name?  A commit writes
	 * its journal again (4b) and renames it on; one that finished since
	 * the open let go of a file that is no longer what the name says */
	if (fstatat(jfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_ino != st.st_ino ||
	    now.st_dev != st.st_dev) {
		close(fd);
		return 0;
	}
	int rc = 1, k;
	char *text = NULL;
	size_t tlen;
	char why[160] = "it cannot be read";
	journal j;
	int parsed = tgi_read_fd(fd, JOURNAL_MAX, &text, &tlen) == 0 &&
	             journal_parse(text, tlen, &j, why, sizeof why) == 0;
	free(text);
	if (partial) {
		/* written but not yet renamed into place, so nothing was done --
		 * as far as a kill goes; the commit's first flush makes the rename
		 * durable, so after a power loss before it the temps, backups and
		 * directories the journal names may be there: undone too (no file
		 * was renamed yet, so this only removes what is ours).  One cut
		 * short does not parse and is only removed. */
		if (parsed && (k = rollback(ws_fd, &j, kept)) < 0) {
			tgi_snprintf(err, errlen, "undoing the interrupted patch in %s failed: %s", name,
			             strerror(-k));
			rc = -1;
		}
	} else if (!parsed) {
		tgi_snprintf(err, errlen, "patch journal .toolgate/journal/%s is not acted on: %s; "
		             "the files it names may be part-way through a patch: check them, then "
		             "remove the journal", name, why);
		close(fd);
		return -1;
	} else if (committed) {
		dirset d = {.ws_fd = ws_fd};
		/* what was done again durable before the record goes */
		if (roll_forward(&d, &j, 1, NULL) && (k = sync_parents(&d, &j)) < 0) {
			tgi_snprintf(err, errlen, "finishing the committed patch in %s failed: %s", name,
			             strerror(-k));
			rc = -1;
		}
		dirs_close(&d);
	} else if ((k = rollback(ws_fd, &j, kept)) < 0) {
		tgi_snprintf(err, errlen, "undoing the interrupted patch in %s failed: %s", name,
		             strerror(-k));
		rc = -1;
	} else if (undone && j.tx) {
		tgi_strv_push(undone, tgi_strdup(j.tx));
	}
	if (parsed)
		journal_free(&j);
	if (rc > 0) {
		unlinkat(jfd, name, 0);
		sync_dir(jfd);
	}
	close(fd);
	return rc;
}

int tgi_patch_recover(int ws_fd, int journal_fd, tgi_strv *undone, json_t *kept, char *err,
                      size_t errlen)
{
	tgi_dirent *ents;
	size_t n, more;
	int done = 0;

	int r = tgi_dir_read(journal_fd, 100000, &ents, &n, &more);
	if (r < 0) {
		tgi_snprintf(err, errlen, "cannot read the patch journal directory: %s", strerror(-r));
		return -1;
	}
	/* a .commit sorts before .journal of the same tx; each tx has one */
	for (size_t i = 0; i < n && done >= 0; i++) {
		if (!S_ISREG(ents[i].mode))
			continue;
		int k = recover_one(ws_fd, journal_fd, ents[i].name, undone, kept, err, errlen);
		done = k < 0 ? -1 : done + k;
	}
	tgi_dirents_free(ents, n);
	return done;
}

int tgi_patch_journal_check(const char *text, size_t len, char **canon, char *err, size_t errlen)
{
	journal j;
	*canon = NULL;
	if (journal_parse(text, len, &j, err, errlen) < 0)
		return -1;
	json_t *doc = journal_json(&j);
	*canon = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	int version = j.version;
	journal_free(&j);
	return *canon ? version : -1;
}
