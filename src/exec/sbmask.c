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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "exec/sbmask.h"
#include "util/fs.h"

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
	struct timespec ctime; /* cannot be set back: a utime() of mtime moves it */
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

/* Read one directory (fd open on it): pick or queue its entries; a
 * directory among known (sorted; may be NULL) is not queued. */
static int read_dir(int fd, const char *rel, walk_state *w, tgi_strv *stack,
                    tgi_sbmask_match_fn fn, void *arg, tgi_strv *picked, char *buf,
                    const tgi_strv *known, char *err, size_t errlen)
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
			if (is_dir && strcmp(n, ".git") && strcmp(n, ".toolgate") &&
			    !(known && known->n &&
			      bsearch(&c, known->v, known->n, sizeof *known->v, str_cmp)))
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
		int fd = tgi_open_below(root_fd, rel, O_RDONLY | O_DIRECTORY);
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
		w->dirs[w->ndirs++] = (seen_dir){rel, st.st_dev, st.st_ino, st.st_mtim, st.st_ctim};
		rc = read_dir(fd, rel, w, &stack, fn, arg, picked, buf, NULL, err, errlen);
		close(fd);
	}
	tgi_strv_free(&stack);
	free(buf);
	return rc;
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Do the directories read last time still hold what they held? */
static int dirs_fresh(int root_fd, const seen_dir *dirs, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const seen_dir *d = &dirs[i];
		struct stat st;
		if (fstatat(root_fd, d->rel[0] ? d->rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_dev != d->dev || st.st_ino != d->ino ||
		    !same_time(&st.st_mtim, &d->mtime) || !same_time(&st.st_ctim, &d->ctime))
			return 0;
	}
	return 1;
}

/* A copy of n directories. */
static seen_dir *dirs_copy(const seen_dir *d, size_t n)
{
	seen_dir *c = tgi_xcalloc(n ? n : 1, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		c[i] = d[i];
		c[i].rel = tgi_strdup(d[i].rel);
	}
	return c;
}

/* The directory part of rel ("" for an entry of the root), into out. */
static void parent_of(const char *rel, char *out, size_t cap)
{
	const char *slash = strrchr(rel, '/');
	tgi_snprintf(out, cap, "%.*s", slash ? (int)(slash - rel) : 0, rel);
}

#define REFRESH_MAX 64   /* changed directories worth re-reading one by one */

/*
 * Bring a stale result up to date without walking everything: the
 * directories whose mtime or ctime moved are read again (their picks
 * found anew, their new subdirectories walked whole); picks in the others
 * stay.  0 with w (every directory, with its times now), picked and
 * *nread (the directories read) filled;
 * 1 when a walk is the better answer (a directory gone or replaced, more
 * than REFRESH_MAX changed); -1 with err.
 */
static int refresh(int root_fd, const seen_dir *dirs, size_t n, const tgi_strv *old_picked,
                   tgi_sbmask_match_fn fn, void *arg, walk_state *w, tgi_strv *picked,
                   size_t *nread, char *err, size_t errlen)
{
	unsigned char *changed = tgi_xcalloc(n ? n : 1, 1);
	struct stat *now = tgi_xcalloc(n ? n : 1, sizeof *now);
	size_t nchanged = 0;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const seen_dir *d = &dirs[i];
		struct stat *st = &now[i];
		if (fstatat(root_fd, d->rel[0] ? d->rel : ".", st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st->st_mode) || st->st_dev != d->dev || st->st_ino != d->ino)
			rc = 1;                          /* gone or replaced */
		else if (!same_time(&st->st_mtim, &d->mtime) || !same_time(&st->st_ctim, &d->ctime))
			changed[i] = 1, nchanged++;
	}
	if (rc || !n || nchanged > REFRESH_MAX) {
		free(changed);
		free(now);
		return 1;
	}
	/* the known directories, sorted, and which of them changed */
	tgi_strv known = {0}, fresh = {0};
	for (size_t i = 0; i < n; i++) {
		tgi_strv_push(&known, tgi_strdup(dirs[i].rel));
		if (changed[i])
			tgi_strv_push(&fresh, tgi_strdup(dirs[i].rel));
	}
	qsort(known.v, known.n, sizeof *known.v, str_cmp);
	if (fresh.n)
		qsort(fresh.v, fresh.n, sizeof *fresh.v, str_cmp);
	/* picks whose directory did not change stay */
	for (size_t i = 0; i < old_picked->n; i++) {
		char dir[PATH_MAX], *pd = dir;
		parent_of(old_picked->v[i], dir, sizeof dir);
		if (!fresh.n || !bsearch(&pd, fresh.v, fresh.n, sizeof *fresh.v, str_cmp))
			tgi_strv_push(picked, tgi_strdup(old_picked->v[i]));
	}
	w->dirs = dirs_copy(dirs, n);
	w->ndirs = w->cap = n;
	tgi_strv stack = {0};
	char *buf = tgi_xmalloc(DENTS_BUF);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!changed[i])
			continue;
		seen_dir *d = &w->dirs[i];
		int fd = tgi_open_below(root_fd, d->rel, O_RDONLY | O_DIRECTORY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino != d->ino) {
			rc = 1;                          /* changed under us: walk */
		} else {
			d->mtime = st.st_mtim;
			d->ctime = st.st_ctim;
			rc = read_dir(fd, d->rel, w, &stack, fn, arg, picked, buf, &known, err, errlen);
		}
		if (fd >= 0)
			close(fd);
	}
	free(buf);
	if (rc == 0 && stack.n)                  /* new directories: whole */
		rc = walk(root_fd, (const char *const *)stack.v, stack.n, fn, arg, w, picked, err,
		          errlen);
	*nread = nchanged + (w->ndirs - n);
	tgi_strv_free(&stack);
	tgi_strv_free(&known);
	tgi_strv_free(&fresh);
	free(changed);
	free(now);
	return rc;
}

/* ---- the cache kept between processes (a file in store_fd per key) ----
 *
 * JSON: {"v":1, "root":R, "key":sha256(key), "dirs":[[rel, dev, ino,
 * msec, mnsec, csec, cnsec], ...], "picked":[rel, ...]}.  Only this
 * user's regular file, at most STORE_MAX bytes, is read; anything else in
 * it (a field missing or of another type) is a miss.  A name that is not
 * UTF-8 cannot be written in JSON: then nothing is stored. */
#define STORE_MAX  (64u << 20)

/* The file for a key: one per set of rules (principals of different
 * roles have different sets), "readmask-<16 hex of sha256(key)>.json". */
static void store_name(const char *key_sha, char out[64])
{
	snprintf(out, 64, "readmask-%.16s.json", key_sha);
}

static json_int_t jint(const json_t *a, size_t i, int *ok)
{
	const json_t *v = json_array_get(a, i);
	*ok &= json_is_integer(v);
	return json_integer_value(v);
}

/* The cache file's text, for root and key: its directories and picks, or
 * -1 for anything not of the shape above (a miss). */
static int store_parse(const char *text, size_t len, const char *root, const char *key_sha,
                       seen_dir **dirs, size_t *ndirs, tgi_strv *picked)
{
	json_error_t je;
	*dirs = NULL;
	*ndirs = 0;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	const json_t *jd = json_object_get(j, "dirs"), *jp = json_object_get(j, "picked");
	const char *jroot = json_string_value(json_object_get(j, "root"));
	const char *jkey = json_string_value(json_object_get(j, "key"));
	int ok = json_is_object(j) && json_integer_value(json_object_get(j, "v")) == 1 &&
	         jroot && !strcmp(jroot, root) && jkey && !strcmp(jkey, key_sha) &&
	         json_is_array(jd) && json_is_array(jp) && json_array_size(jd) > 0 &&
	         json_array_size(jd) <= TGI_SBMASK_MAX_DIRS &&
	         json_array_size(jp) <= TGI_SBMASK_MAX_ENTRIES;
	size_t n = ok ? json_array_size(jd) : 0;
	seen_dir *d = n ? tgi_xcalloc(n, sizeof *d) : NULL;
	size_t got = 0;
	for (size_t i = 0; ok && i < n; i++) {
		const json_t *e = json_array_get(jd, i);
		const char *rel = json_string_value(json_array_get(e, 0));
		ok = json_is_array(e) && json_array_size(e) == 7 && rel &&
		     !memchr(rel, '\0', json_string_length(json_array_get(e, 0)));
		if (!ok)
			break;
		d[i] = (seen_dir){tgi_strdup(rel), (dev_t)jint(e, 1, &ok), (ino_t)jint(e, 2, &ok),
		                  {(time_t)jint(e, 3, &ok), (long)jint(e, 4, &ok)},
		                  {(time_t)jint(e, 5, &ok), (long)jint(e, 6, &ok)}};
		got = i + 1;
	}
	for (size_t i = 0; ok && i < json_array_size(jp); i++) {
		const json_t *e = json_array_get(jp, i);
		ok = json_is_string(e) && !memchr(json_string_value(e), '\0', json_string_length(e));
		if (ok)
			tgi_strv_push(picked, tgi_strdup(json_string_value(e)));
	}
	json_decref(j);
	if (!ok) {
		dirs_free(d, got);
		tgi_strv_free(picked);
		return -1;
	}
	*dirs = d;
	*ndirs = n;
	return 0;
}

int tgi_sbmask_store_check(const char *text, size_t len, const char *root, const char *key_sha,
                           size_t *ndirs, size_t *npicked)
{
	seen_dir *d;
	size_t n;
	tgi_strv picked = {0};
	*ndirs = *npicked = 0;
	if (store_parse(text, len, root, key_sha, &d, &n, &picked) < 0)
		return -1;
	*ndirs = n;
	*npicked = picked.n;
	dirs_free(d, n);
	tgi_strv_free(&picked);
	return 0;
}

static int store_load(int store_fd, const char *root, const char *key_sha, seen_dir **dirs,
                      size_t *ndirs, tgi_strv *picked)
{
	char name[64];
	*dirs = NULL;
	*ndirs = 0;
	store_name(key_sha, name);
	int fd = openat(store_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (size_t)st.st_size > STORE_MAX) {
		close(fd);
		return -1;
	}
	char *text = NULL;
	size_t len = 0;
	/* whole, then parsed: json_loadfd reads a byte per system call */
	int rc = tgi_read_fd(fd, STORE_MAX, &text, &len) == 0
	       ? store_parse(text, len, root, key_sha, dirs, ndirs, picked) : -1;
	free(text);
	close(fd);
	return rc;
}

static void store_save(int store_fd, const char *root, const char *key_sha, const seen_dir *dirs,
                       size_t ndirs, const tgi_strv *picked)
{
	json_t *jd = json_array(), *jp = json_array();
	int ok = 1;
	for (size_t i = 0; ok && i < ndirs; i++) {
		const seen_dir *d = &dirs[i];
		json_t *rel = json_string(d->rel);     /* NULL when not UTF-8 */
		ok = rel != NULL;
		if (ok)
			json_array_append_new(jd, json_pack("[o, I, I, I, I, I, I]", rel,
			                      (json_int_t)d->dev, (json_int_t)d->ino,
			                      (json_int_t)d->mtime.tv_sec, (json_int_t)d->mtime.tv_nsec,
			                      (json_int_t)d->ctime.tv_sec, (json_int_t)d->ctime.tv_nsec));
	}
	for (size_t i = 0; ok && i < picked->n; i++) {
		json_t *p = json_string(picked->v[i]);
		ok = p != NULL;
		if (ok)
			json_array_append_new(jp, p);
	}
	json_t *root_s = json_string(root);
	if (!ok || !root_s) {
		json_decref(jd);
		json_decref(jp);
		json_decref(root_s);
		return;
	}
	json_t *j = json_pack("{s:i, s:o, s:s, s:o, s:o}", "v", 1, "root", root_s, "key", key_sha,
	                      "dirs", jd, "picked", jp);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	char tmp[96], name[64];
	store_name(key_sha, name);
	static unsigned seq;   /* two threads of one process write apart */
	snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", name, (long)getpid(),
	         __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	int fd = text ? openat(store_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                       0600) : -1;
	if (fd >= 0) {
		size_t len = strlen(text), off = 0;
		while (off < len) {
			ssize_t w = write(fd, text + off, len - off);
			if (w <= 0 && errno != EINTR)
				break;
			off += w > 0 ? (size_t)w : 0;
		}
		close(fd);
		if (off != len || renameat(store_fd, tmp, store_fd, name) < 0)
			unlinkat(store_fd, tmp, 0);
	}
	free(text);
}

static void strv_append(tgi_strv *out, const tgi_strv *from)
{
	for (size_t i = 0; i < from->n; i++)
		tgi_strv_push(out, tgi_strdup(from->v[i]));
}

/* Take a result as the one-entry memory cache's. */
static void remember(const char *root, const char *key, seen_dir *dirs, size_t ndirs,
                     tgi_strv *picked)
{
	pthread_mutex_lock(&cache.mu);
	free(cache.root);
	free(cache.key);
	dirs_free(cache.dirs, cache.ndirs);
	tgi_strv_free(&cache.picked);
	cache.root = tgi_strdup(root);
	cache.key = tgi_strdup(key);
	cache.dirs = dirs;
	cache.ndirs = ndirs;
	cache.picked = *picked;
	*picked = (tgi_strv){0};
	pthread_mutex_unlock(&cache.mu);
}

int tgi_sbmask_find(const char *root, const char *const *starts, size_t nstarts,
                    tgi_sbmask_match_fn fn, void *arg, const char *key, int store_fd,
                    tgi_strv *out, tgi_sbmask_stats *stats, char *err, size_t errlen)
{
	tgi_sbmask_stats st = {0};
	double t0 = tgi_now_ms();
	char key_sha[65] = "";
	int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		char shown[160];
		tgi_sanitize(shown, sizeof shown, root);
		tgi_snprintf(err, errlen, "cannot open the workspace \"%s\": %s", shown, strerror(errno));
		return -1;
	}
	/* what was found last time, from memory or the state directory */
	seen_dir *dirs = NULL;
	size_t ndirs = 0;
	tgi_strv was = {0};
	int from = 0;
	if (key) {
		pthread_mutex_lock(&cache.mu);
		if (cache.root && !strcmp(cache.root, root) && !strcmp(cache.key, key)) {
			dirs = dirs_copy(cache.dirs, cache.ndirs);
			ndirs = cache.ndirs;
			strv_append(&was, &cache.picked);
			from = 1;
		}
		pthread_mutex_unlock(&cache.mu);
		tgi_sha256_hex(key, strlen(key), key_sha);
		if (!from && store_fd >= 0 &&
		    store_load(store_fd, root, key_sha, &dirs, &ndirs, &was) == 0)
			from = 2;
	}
	walk_state w = {0};
	tgi_strv picked = {0};
	int rc;
	if (from && dirs_fresh(root_fd, dirs, ndirs)) {
		strv_append(out, &was);
		if (from == 2)
			remember(root, key, dirs, ndirs, &was);
		else
			dirs_free(dirs, ndirs);
		tgi_strv_free(&was);
		st.cached = from;
		goto done;
	}
	size_t nread = 0;
	rc = from ? refresh(root_fd, dirs, ndirs, &was, fn, arg, &w, &picked, &nread, err, errlen)
	          : 1;
	dirs_free(dirs, ndirs);
	tgi_strv_free(&was);
	if (rc == 0) {
		st.cached = 3;
	} else {                                 /* walk everything */
		dirs_free(w.dirs, w.ndirs);
		tgi_strv_free(&picked);
		w = (walk_state){0};
		rc = walk(root_fd, starts, nstarts, fn, arg, &w, &picked, err, errlen);
	}
	if (picked.n)
		qsort(picked.v, picked.n, sizeof *picked.v, str_cmp);
	st.dirs = st.cached == 3 ? nread : w.ndirs;
	st.entries = w.entries;
	if (rc == 0) {
		strv_append(out, &picked);
		if (key) {
			if (store_fd >= 0)
				store_save(store_fd, root, key_sha, w.dirs, w.ndirs, &picked);
			remember(root, key, w.dirs, w.ndirs, &picked);
			w.dirs = NULL;
			w.ndirs = 0;
		}
	}
	dirs_free(w.dirs, w.ndirs);
	tgi_strv_free(&picked);
	close(root_fd);
	st.ms = tgi_now_ms() - t0;
	if (stats)
		*stats = st;
	return rc;
done:
	close(root_fd);
	st.ms = tgi_now_ms() - t0;
	if (stats)
		*stats = st;
	return 0;
}
