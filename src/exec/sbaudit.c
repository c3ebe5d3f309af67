/*
 * sbaudit.c — what a sandboxed command may not create (sbaudit.h): the
 * .git entries (and configuration files below the root: toolgate.yaml,
 * .yml, .json) of the workspace found before a run, and what appeared at
 * a refused name after it.
 *
 * The walk is depth first over paths relative to the root, each
 * directory opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * from the root's fd, so that a directory swapped for a symlink between
 * two steps is skipped, never followed.  An entry named .git or as a
 * configuration (of any type) is recorded with its inode and not entered;
 * other directories are entered unless skipped.  d_type is trusted when
 * the file system gives it; DT_UNKNOWN costs an fstatat.
 *
 * After the run a .git is new when its inode was not among those found
 * before: a directory above an old .git may have been renamed (the .git is
 * a read-only mount, its parents are not), and the old .git then stands at
 * a new path -- it is left alone.  A directory the command made
 * unreadable (chmod 0300) is made readable again when it belongs to this
 * user, as the command could only do to its own; before the run such a
 * directory is refused, since what is in it cannot be known.
 *
 * What is refused is moved into the quarantine directory when the caller
 * gives one (the gate's .toolgate/quarantine: out of the workspace's
 * sight, and nothing the user made by chance at the same moment is lost),
 * under "N-path%with%slashes".  Without one, or across file systems, it
 * is removed, from an fd of the parent, entry by entry with unlinkat,
 * never following a symlink, at most TGI_SBAUDIT_MAX_REMOVE entries and
 * REMOVE_DEPTH levels; what does not fit is renamed aside
 * (NAME.toolgate-refused[-N]) so that it loses the name.
 *
 * Owns: the root's fd, the lists and what it removes.  Must not: follow a
 * symlink, leave the root, or touch anything but the refused names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/sbaudit.h"
#include "util/fs.h"
#include "util/util.h"

#define REMOVE_DEPTH 128
#define DENTS_BUF    32768

struct linux_dirent64 {   /* what getdents64 fills in */
	ino64_t        d_ino;
	off64_t        d_off;
	unsigned short d_reclen;
	unsigned char  d_type;
	char           d_name[];
};
#define REFUSED_TAG  ".toolgate-refused"

typedef struct git_ent {
	char *rel;    /* owned */
	dev_t dev;
	ino_t ino;
} git_ent;

struct tgi_sbaudit {
	int      root_fd;    /* O_PATH | O_DIRECTORY */
	int      scan_git;
	tgi_strv skip;       /* sorted */
	git_ent *git;        /* found before the run, sorted by path */
	size_t   ngit;
	git_ent *by_ino;     /* the same, sorted by inode (borrowed rel) */
	tgi_strv absent;     /* paths that must not appear */
	size_t  *new_from;   /* of each: the offset of its first part missing before the run */
	size_t   dirs, entries;
	double   ms;
	int      ended;
	int      quarantine_fd;      /* where refused entries go (-1: removed instead) */
	char     quarantine_shown[160];
	int      quarantined;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int git_path_cmp(const void *a, const void *b)
{
	return strcmp(((const git_ent *)a)->rel, ((const git_ent *)b)->rel);
}

static int git_ino_cmp(const void *a, const void *b)
{
	const git_ent *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static void gits_free(git_ent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].rel);
	free(v);
}

/* Make the directory fd (O_PATH) readable and searchable again, when it is
 * this user's.  0 when done. */
static int make_readable(int fd)
{
	struct stat st;
	char proc[64];
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid())
		return -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return chmod(proc, (st.st_mode & 07777) | S_IRUSR | S_IWUSR | S_IXUSR);
}

static char *child_path(const char *rel, const char *name)
{
	size_t a = strlen(rel), b = strlen(name);
	char *p = tgi_xmalloc(a + b + 2);
	if (a) {
		memcpy(p, rel, a);
		p[a++] = '/';
	}
	memcpy(p + a, name, b + 1);
	return p;
}

/*
 * One walk from the root.  after: a run has happened (unreadable
 * directories of this user's are made readable).  The .git entries go in
 * *found.  0 when it finished; -1 with a sentence in why when not.
 */
static int walk(tgi_sbaudit *a, int after, git_ent **found, size_t *nfound, char *why,
                size_t cap)
{
	tgi_strv stack = {0};
	size_t cap_found = 0, dirs = 0, entries = 0;
	char *buf = tgi_xmalloc(DENTS_BUF);
	int rc = 0;
	*found = NULL;
	*nfound = 0;
	tgi_strv_push(&stack, tgi_strdup(""));
	while (stack.n) {
		char *rel = stack.v[--stack.n];
		stack.v[stack.n] = NULL;
		if (++dirs > TGI_SBAUDIT_MAX_DIRS) {
			tgi_snprintf(why, cap, "the workspace has more than %d directories",
			             TGI_SBAUDIT_MAX_DIRS);
			free(rel);
			rc = -1;
			break;
		}
		int fd = tgi_open_below(a->root_fd, rel, O_RDONLY | O_DIRECTORY);
		if (fd < 0 && errno == EACCES) {
			int pfd = tgi_open_below(a->root_fd, rel, O_PATH | O_DIRECTORY);
			int fixed = after && pfd >= 0 && make_readable(pfd) == 0;
			int writable = pfd >= 0 && faccessat(a->root_fd, rel[0] ? rel : ".", W_OK | X_OK,
			                                     AT_EACCESS) == 0;
			if (pfd >= 0)
				close(pfd);
			if (fixed)
				fd = tgi_open_below(a->root_fd, rel, O_RDONLY | O_DIRECTORY);
			else if (!writable) {
				free(rel);        /* nothing can be made in it either */
				continue;
			}
			if (fd < 0) {
				char shown[160];
				tgi_sanitize(shown, sizeof shown, rel);
				tgi_snprintf(why, cap, "the directory \"%s\" cannot be read, so whether a .git "
				             "is in it cannot be known", shown);
				free(rel);
				rc = -1;
				break;
			}
		}
		if (fd < 0) {              /* gone, or no longer a directory: nothing in it */
			free(rel);
			continue;
		}
		/* getdents64 itself: fdopendir would cost an fstat and two fcntl */
		for (long got; rc == 0 && (got = syscall(SYS_getdents64, fd, buf, DENTS_BUF)) > 0;) {
			for (long off = 0; off < got;) {
				const struct linux_dirent64 *e = (const void *)(buf + off);
				off += e->d_reclen;
				const char *n = e->d_name;
				if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
					continue;
				if (++entries > TGI_SBAUDIT_MAX_ENTRIES) {
					tgi_snprintf(why, cap, "the workspace has more than %d entries",
					             TGI_SBAUDIT_MAX_ENTRIES);
					rc = -1;
					break;
				}
				/* a .git, or a configuration below the root (the root's are the
				 * gate's own files, held by the view) */
				if (!strcmp(n, ".git") || (rel[0] && tgi_is_config_name(n, strlen(n)))) {
					struct stat st;
					if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
						continue;
					if (*nfound == cap_found) {
						cap_found = cap_found ? cap_found * 2 : 16;
						*found = tgi_xrealloc(*found, cap_found * sizeof **found);
					}
					(*found)[(*nfound)++] = (git_ent){child_path(rel, n), st.st_dev, st.st_ino};
					continue;
				}
				int is_dir = e->d_type == DT_DIR;
				if (e->d_type == DT_UNKNOWN) {
					struct stat st;
					is_dir = fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					         S_ISDIR(st.st_mode);
				}
				if (!is_dir)
					continue;
				char *c = child_path(rel, n);
				if (a->skip.n &&
				    bsearch(&c, a->skip.v, a->skip.n, sizeof *a->skip.v, str_cmp)) {
					free(c);
					continue;
				}
				tgi_strv_push(&stack, c);
			}
		}
		close(fd);
		free(rel);
		if (rc < 0)
			break;
	}
	tgi_strv_free(&stack);
	free(buf);
	if (!after) {
		a->dirs = dirs;
		a->entries = entries;
	}
	return rc;
}

int tgi_sbaudit_begin(const char *root, const char *const *skip, size_t nskip, int scan_git,
                      tgi_sbaudit **out, char *err, size_t errlen)
{
	char why[512];
	tgi_sbaudit *a = tgi_xcalloc(1, sizeof *a);
	*out = NULL;
	a->quarantine_fd = -1;
	a->scan_git = scan_git;
	a->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a->root_fd < 0) {
		char shown[160];
		tgi_sanitize(shown, sizeof shown, root);
		tgi_snprintf(err, errlen, "cannot open the workspace \"%s\": %s", shown,
		             strerror(errno));
		free(a);
		return -1;
	}
	for (size_t i = 0; i < nskip; i++)
		tgi_strv_push(&a->skip, tgi_strdup(skip[i]));
	if (a->skip.n)
		qsort(a->skip.v, a->skip.n, sizeof *a->skip.v, str_cmp);
	if (scan_git) {
		double t0 = tgi_now_ms();
		int r = walk(a, 0, &a->git, &a->ngit, why, sizeof why);
		a->ms = tgi_now_ms() - t0;
		if (r < 0) {
			tgi_snprintf(err, errlen, "%s; the sandbox looks for every .git in it before a "
			             "command runs, and refuses what it cannot look through", why);
			tgi_sbaudit_free(a);
			return -1;
		}
		a->by_ino = tgi_xmalloc((a->ngit ? a->ngit : 1) * sizeof *a->by_ino);
		if (a->ngit) {
			qsort(a->git, a->ngit, sizeof *a->git, git_path_cmp);
			memcpy(a->by_ino, a->git, a->ngit * sizeof *a->git);
			qsort(a->by_ino, a->ngit, sizeof *a->by_ino, git_ino_cmp);
		}
	}
	*out = a;
	return 0;
}

int tgi_sbaudit_quarantine(tgi_sbaudit *a, const char *dir, const char *shown)
{
	if (!a || !dir)
		return -1;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (mkdirat(fd, "quarantine", 0700) < 0 && errno != EEXIST) {
		close(fd);
		return -1;
	}
	int q = openat(fd, "quarantine", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (q < 0)
		return -1;
	struct stat st;
	if (fstat(q, &st) < 0 || st.st_uid != geteuid()) {
		close(q);
		return -1;
	}
	if (a->quarantine_fd >= 0)
		close(a->quarantine_fd);
	a->quarantine_fd = q;
	tgi_snprintf(a->quarantine_shown, sizeof a->quarantine_shown, "%s/quarantine", shown);
	return 0;
}

void tgi_sbaudit_absent(tgi_sbaudit *a, const char *rel)
{
	if (!a || !rel || !*rel)
		return;
	/* the parts that exist now are not the command's: only what follows
	 * the first missing one can be refused */
	size_t off = 0;
	int dir = fcntl(a->root_fd, F_DUPFD_CLOEXEC, 3);
	for (const char *p = rel; dir >= 0 && *p;) {
		size_t len = strcspn(p, "/");
		char part[NAME_MAX + 1];
		struct stat st;
		if (!len || len > NAME_MAX || !p[len])
			break;
		memcpy(part, p, len);
		part[len] = '\0';
		if (fstatat(dir, part, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			break;
		int next = openat(dir, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		dir = next;
		p += len + 1;
		off = (size_t)(p - rel);
	}
	if (dir >= 0)
		close(dir);
	a->new_from = tgi_xrealloc(a->new_from, (a->absent.n + 1) * sizeof *a->new_from);
	a->new_from[a->absent.n] = off;
	tgi_strv_push(&a->absent, tgi_strdup(rel));
}

size_t tgi_sbaudit_ngit(const tgi_sbaudit *a)
{
	return a ? a->ngit : 0;
}

const char *tgi_sbaudit_git(const tgi_sbaudit *a, size_t i)
{
	return a && i < a->ngit ? a->git[i].rel : NULL;
}

void tgi_sbaudit_counts(const tgi_sbaudit *a, size_t *dirs, size_t *entries, double *ms)
{
	*dirs = a ? a->dirs : 0;
	*entries = a ? a->entries : 0;
	*ms = a ? a->ms : 0;
}

/* ---- removal ---- */

/* Remove every entry of the directory fd (taken: closed here). */
static int empty_dir(int fd, size_t *budget, int depth);

/* Remove name in dir, whatever it is.  0, or -1 with errno (EFBIG: over
 * the budget or too deep). */
static int remove_at(int dir, const char *name, size_t *budget, int depth)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!*budget || depth > REMOVE_DEPTH) {
		errno = EFBIG;
		return -1;
	}
	--*budget;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dir, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		int pfd = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0 && make_readable(pfd) == 0)
			fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0)
			close(pfd);
	}
	if (fd < 0)
		return -1;
	if (empty_dir(fd, budget, depth + 1) < 0)
		return -1;
	return unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

static int empty_dir(int fd, size_t *budget, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	/* a directory changing under readdir may skip entries: again until a
	 * pass finds none */
	for (int found = 1; found;) {
		found = 0;
		rewinddir(d);
		for (struct dirent *e; (e = readdir(d));) {
			const char *n = e->d_name;
			if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
				continue;
			found = 1;
			if (remove_at(dirfd(d), n, budget, depth) < 0) {
				int er = errno;
				closedir(d);
				errno = er;
				return -1;
			}
		}
	}
	closedir(d);
	return 0;
}

/* Move parent/name (rel: its path, for the name) into the quarantine
 * directory, under a name of its own.  0, or -1 (EXDEV: another file
 * system; no quarantine). */
static int quarantine(tgi_sbaudit *a, int parent, const char *name, const char *rel,
                      char *out, size_t cap)
{
	char q[NAME_MAX + 1], flat[200];
	size_t j = 0;
	if (a->quarantine_fd < 0)
		return -1;
	for (const char *c = rel; *c && j < sizeof flat - 1; c++)
		flat[j++] = *c == '/' ? '%' : *c;
	flat[j] = '\0';
	for (int i = 0; i < 1000; i++) {
		snprintf(q, sizeof q, "%d-%s", ++a->quarantined, flat);
		if (renameat2(parent, name, a->quarantine_fd, q, RENAME_NOREPLACE) == 0) {
			char shown[300];
			tgi_sanitize(shown, sizeof shown, q);
			tgi_snprintf(out, cap, "removed (kept in %s/%s)", a->quarantine_shown, shown);
			return 0;
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/* Take parent/name away from its name: into the quarantine when there is
 * one, else removed, else (too large) renamed aside.  The action into out
 * ("removed (kept in ...)", "removed", "renamed to X", "left: why"). */
static void refuse_name(tgi_sbaudit *a, int parent, const char *name, const char *rel,
                        char *out, size_t cap)
{
	if (quarantine(a, parent, name, rel, out, cap) == 0)
		return;
	size_t budget = TGI_SBAUDIT_MAX_REMOVE;
	if (remove_at(parent, name, &budget, 0) == 0) {
		tgi_snprintf(out, cap, "removed");
		return;
	}
	int e = errno;
	char aside[NAME_MAX + 1];
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(aside, sizeof aside, "%.200s" REFUSED_TAG "-%d", name, i);
		else
			snprintf(aside, sizeof aside, "%.200s" REFUSED_TAG, name);
		if (renameat2(parent, name, parent, aside, RENAME_NOREPLACE) == 0) {
			char shown[256];
			tgi_sanitize(shown, sizeof shown, aside);
			tgi_snprintf(out, cap, "renamed to %s (%s)", shown,
			             e == EFBIG ? "too large to remove" : strerror(e));
			return;
		}
		if (errno != EEXIST)
			break;
	}
	tgi_snprintf(out, cap, "left: %s", strerror(errno));
}

static void report(json_t **list, const char *rel, const char *what, const char *action)
{
	if (!*list)
		*list = json_array();
	json_array_append_new(*list, json_pack("{s:o,s:s,s:s}", "path",
	                                       tgi_json_text(rel, strlen(rel)), "what", what,
	                                       "action", action));
}

/* rel's parent directory, opened beneath the root (O_PATH), and its last
 * name into *name (points into rel).  -1 when the parent cannot be
 * reached without a symlink. */
static int open_parent(int root_fd, const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	if (!slash)
		return fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	char *dir = tgi_strndup(rel, (size_t)(slash - rel));
	int fd = tgi_open_below(root_fd, dir, O_PATH | O_DIRECTORY);
	free(dir);
	return fd;
}

/*
 * An absent path that must stay absent: walk its parts from the root; a
 * part that is a symlink or not a directory now redirects the name and is
 * refused itself; the last part, if it is there, is refused.
 */
static void check_absent(tgi_sbaudit *a, const char *rel, size_t new_from, json_t **list)
{
	int dir = fcntl(a->root_fd, F_DUPFD_CLOEXEC, 3);
	const char *p = rel;
	char action[400];
	while (dir >= 0 && *p) {
		size_t len = strcspn(p, "/");
		char part[NAME_MAX + 1];
		if (!len || len > NAME_MAX)
			break;
		memcpy(part, p, len);
		part[len] = '\0';
		int last = !p[len];
		struct stat st;
		if (fstatat(dir, part, &st, AT_SYMLINK_NOFOLLOW) < 0)
			break;                                 /* not there: fine */
		if ((size_t)(p - rel) < new_from) {
			if (!S_ISDIR(st.st_mode))
				break;                             /* was there: not the command's */
		} else if (last || !S_ISDIR(st.st_mode)) {
			char *shown = tgi_strndup(rel, (size_t)(p - rel) + len);
			refuse_name(a, dir, part, shown, action, sizeof action);
			report(list, shown, "one of the gate's own files", action);
			free(shown);
			break;
		}
		int next = openat(dir, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		dir = next;
		p += len + 1;
	}
	if (dir >= 0)
		close(dir);
}

json_t *tgi_sbaudit_end(tgi_sbaudit *a)
{
	json_t *list = NULL;
	char why[512], action[400];
	if (!a || a->ended)
		return NULL;
	a->ended = 1;
	for (size_t i = 0; i < a->absent.n; i++)
		check_absent(a, a->absent.v[i], a->new_from[i], &list);
	if (!a->scan_git)
		return list;
	git_ent *now = NULL;
	size_t nnow = 0;
	if (walk(a, 1, &now, &nnow, why, sizeof why) < 0) {
		char msg[600];
		tgi_snprintf(msg, sizeof msg, "not checked: %s; the next command is refused until it "
		             "is smaller", why);
		report(&list, ".", "the workspace", msg);
	}
	for (size_t i = 0; i < nnow; i++) {
		if (bsearch(&now[i], a->by_ino, a->ngit, sizeof *a->by_ino, git_ino_cmp))
			continue;                              /* an old one, maybe moved */
		const char *name;
		int parent = open_parent(a->root_fd, now[i].rel, &name);
		if (parent < 0) {
			tgi_snprintf(action, sizeof action, "left: its directory cannot be reached "
			             "without a symlink");
		} else {
			struct stat st;
			/* still the entry that was found (not replaced since) */
			if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_dev == now[i].dev && st.st_ino == now[i].ino)
				refuse_name(a, parent, name, now[i].rel, action, sizeof action);
			else
				tgi_snprintf(action, sizeof action, "left: it changed while it was checked");
			close(parent);
		}
		const char *base = strrchr(now[i].rel, '/');
		report(&list, now[i].rel, strcmp(base ? base + 1 : now[i].rel, ".git")
		       ? "a configuration file, which commands may not create"
		       : "a .git, which commands may not create", action);
	}
	gits_free(now, nnow);
	return list;
}

void tgi_sbaudit_free(tgi_sbaudit *a)
{
	if (!a)
		return;
	if (a->root_fd >= 0)
		close(a->root_fd);
	if (a->quarantine_fd >= 0)
		close(a->quarantine_fd);
	tgi_strv_free(&a->skip);
	tgi_strv_free(&a->absent);
	free(a->new_from);
	free(a->by_ino);
	gits_free(a->git, a->ngit);
	free(a);
}
