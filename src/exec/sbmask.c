/*
 * sbmask.c — the entries below a root that a matcher picks (sbmask.h):
 * a bounded walk, and a cache validated by the mtimes of the directories
 * it read.
 *
 * Owns: the walk, the one cache entry and its lock.  Must not: follow a
 * symlink, leave the root, or judge what a name means.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/sbmask.h"

#define DENTS_BUF 32768

struct dirent64_raw {     /* what getdents64 fills in */
	ino64_t        d_ino;
	off64_t        d_off;
	unsigned short d_reclen;
	unsigned char  d_type;
	char           d_name[];
};

typedef struct seen_dir {
	char           *rel;   /* owned */
	dev_t           dev;
	ino_t           ino;
	struct timespec mtime;
} seen_dir;

typedef struct walk_state {
	seen_dir *dirs;
	size_t    ndirs, cap;
	size_t    entries;
} walk_state;

/* The one cache entry: (root, key) -> the directories read and what was
 * picked. */
static struct {
	pthread_mutex_t mu;
	char           *root, *key;
	seen_dir       *dirs;
	size_t          ndirs;
	tgi_strv        picked;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void dirs_free(seen_dir *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(d[i].rel);
	free(d);
}

static int open_below(int root_fd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (;;) {
		long fd = syscall(SYS_openat2, root_fd, rel[0] ? rel : ".", &how, sizeof how);
		if (fd >= 0 || (errno != EINTR && errno != EAGAIN))
			return (int)fd;
	}
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

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read one directory (fd open on it): pick or queue its entries. */
static int read_dir(int fd, const char *rel, walk_state *w, tgi_strv *stack,
                    tgi_sbmask_match_fn fn, void *arg, tgi_strv *picked, char *buf, char *err,
                    size_t errlen)
{
	for (long got; (got = syscall(SYS_getdents64, fd, buf, DENTS_BUF)) > 0;) {
		for (long off = 0; off < got;) {
			const struct dirent64_raw *e = (const void *)(buf + off);
			off += e->d_reclen;
			const char *n = e->d_name;
			if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
				continue;
			if (++w->entries > TGI_SBMASK_MAX_ENTRIES) {
				tgi_snprintf(err, errlen, "the workspace has more than %d entries",
				             TGI_SBMASK_MAX_ENTRIES);
				return -1;
			}
			int is_dir = e->d_type == DT_DIR;
			if (e->d_type == DT_UNKNOWN) {
				struct stat st;
				is_dir = fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
			}
			char *c = child_path(rel, n);
			if (fn(arg, c, is_dir)) {
				tgi_strv_push(picked, c);
				continue;
			}
			if (is_dir && strcmp(n, ".git") && strcmp(n, ".toolgate"))
				tgi_strv_push(stack, c);
			else
				free(c);
		}
	}
	return 0;
}

static int walk(int root_fd, const char *const *starts, size_t nstarts, tgi_sbmask_match_fn fn,
                void *arg, walk_state *w, tgi_strv *picked, char *err, size_t errlen)
{
	tgi_strv stack = {0};
	char *buf = tgi_xmalloc(DENTS_BUF);
	int rc = 0;
	for (size_t i = 0; i < nstarts; i++)
		tgi_strv_push(&stack, tgi_strdup(starts[i]));
	while (stack.n && rc == 0) {
		char *rel = stack.v[--stack.n];
		stack.v[stack.n] = NULL;
		if (w->ndirs >= TGI_SBMASK_MAX_DIRS) {
			tgi_snprintf(err, errlen, "the workspace has more than %d directories",
			             TGI_SBMASK_MAX_DIRS);
			free(rel);
			rc = -1;
			break;
		}
		int fd = open_below(root_fd, rel, O_RDONLY | O_DIRECTORY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			if (errno == EACCES) {
				char shown[160];
				tgi_sanitize(shown, sizeof shown, rel[0] ? rel : ".");
				tgi_snprintf(err, errlen, "the directory \"%s\" cannot be read, so what the "
				             "read rules name in it cannot be known", shown);
				rc = -1;
			}
			free(rel);     /* gone, a symlink, or not a directory: nothing in it */
			continue;
		}
		if (w->ndirs == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 64;
			w->dirs = tgi_xrealloc(w->dirs, w->cap * sizeof *w->dirs);
		}
		w->dirs[w->ndirs++] = (seen_dir){rel, st.st_dev, st.st_ino, st.st_mtim};
		rc = read_dir(fd, rel, w, &stack, fn, arg, picked, buf, err, errlen);
		close(fd);
	}
	tgi_strv_free(&stack);
	free(buf);
	return rc;
}

/* Do the directories read last time still hold what they held? */
static int cache_fresh(int root_fd)
{
	for (size_t i = 0; i < cache.ndirs; i++) {
		const seen_dir *d = &cache.dirs[i];
		struct stat st;
		if (fstatat(root_fd, d->rel[0] ? d->rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_dev != d->dev || st.st_ino != d->ino ||
		    st.st_mtim.tv_sec != d->mtime.tv_sec || st.st_mtim.tv_nsec != d->mtime.tv_nsec)
			return 0;
	}
	return 1;
}

static void strv_append(tgi_strv *out, const tgi_strv *from)
{
	for (size_t i = 0; i < from->n; i++)
		tgi_strv_push(out, tgi_strdup(from->v[i]));
}

int tgi_sbmask_find(const char *root, const char *const *starts, size_t nstarts,
                    tgi_sbmask_match_fn fn, void *arg, const char *key, tgi_strv *out,
                    tgi_sbmask_stats *stats, char *err, size_t errlen)
{
	tgi_sbmask_stats st = {0};
	double t0 = tgi_now_ms();
	int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		char shown[160];
		tgi_sanitize(shown, sizeof shown, root);
		tgi_snprintf(err, errlen, "cannot open the workspace \"%s\": %s", shown, strerror(errno));
		return -1;
	}
	if (key) {
		pthread_mutex_lock(&cache.mu);
		if (cache.root && !strcmp(cache.root, root) && !strcmp(cache.key, key) &&
		    cache_fresh(root_fd)) {
			strv_append(out, &cache.picked);
			pthread_mutex_unlock(&cache.mu);
			close(root_fd);
			st.cached = 1;
			st.ms = tgi_now_ms() - t0;
			if (stats)
				*stats = st;
			return 0;
		}
		pthread_mutex_unlock(&cache.mu);
	}
	walk_state w = {0};
	tgi_strv picked = {0};
	int rc = walk(root_fd, starts, nstarts, fn, arg, &w, &picked, err, errlen);
	close(root_fd);
	if (picked.n)
		qsort(picked.v, picked.n, sizeof *picked.v, str_cmp);
	st.dirs = w.ndirs;
	st.entries = w.entries;
	if (rc == 0) {
		strv_append(out, &picked);
		if (key) {
			pthread_mutex_lock(&cache.mu);
			free(cache.root);
			free(cache.key);
			dirs_free(cache.dirs, cache.ndirs);
			tgi_strv_free(&cache.picked);
			cache.root = tgi_strdup(root);
			cache.key = tgi_strdup(key);
			cache.dirs = w.dirs;
			cache.ndirs = w.ndirs;
			cache.picked = picked;
			pthread_mutex_unlock(&cache.mu);
			w.dirs = NULL;
			w.ndirs = 0;
			picked = (tgi_strv){0};
		}
	}
	dirs_free(w.dirs, w.ndirs);
	tgi_strv_free(&picked);
	st.ms = tgi_now_ms() - t0;
	if (stats)
		*stats = st;
	return rc;
}
