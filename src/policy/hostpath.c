/*
 * hostpath.c — could the program at an absolute path have been planted?
 * (hostpath.h)
 *
 * The path is walked by hand, one component at a time: each name is
 * looked up (lstat) in a directory that must pass dir_ok first, a symlink
 * is read and its target walked in its place (from the root when it is
 * absolute, from the directory that holds it when not), and ".." steps
 * back to the parent of the directory reached so far, which is a real
 * path (every symlink before it was followed), so stepping back by text
 * is what the kernel does too.  The last name must be a regular file that
 * passes file_ok.  Nothing here opens or runs the program.
 *
 * A check and a later exec are two moments, but every directory the walk
 * passed through is, by the test itself, out of reach of whoever might
 * swap what it holds in between.
 *
 * Owns: the test and its list of places to avoid.  Must not: know
 * execpolicy's rules or run anything.
 */
#include "policy/hostpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/util.h"

#define HP_LINKS_MAX 40   /* symlinks followed in one walk, as the kernel's MAXSYMLINKS */
#define HP_AVOID_MAX 64   /* places to avoid, as given and as real paths */

struct tgi_hostpath {
	char  *avoid[HP_AVOID_MAX]; /* owned: absolute, lexically normalised */
	size_t navoid;
	uid_t  uid;                 /* the gate's effective uid */
	int    none;                /* nothing passes: commands run unsandboxed as root */
};

static int no(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A reason, control characters taken out.  Always 0. */
static int no(char *why, size_t whylen, const char *fmt, ...)
{
	char msg[PATH_MAX + 256];
	va_list ap;
	if (!why || !whylen)
		return 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_sanitize(why, whylen, msg);
	return 0;
}

/* Takes p. */
static void avoid_one(tgi_hostpath *hp, char *p)
{
	if (hp->navoid < HP_AVOID_MAX)
		hp->avoid[hp->navoid++] = p;
	else
		free(p);
}

/* Avoid p as written (lexically folded) and as its real path. */
static void avoid(tgi_hostpath *hp, const char *p)
{
	if (!p || p[0] != '/' || strlen(p) >= PATH_MAX)
		return;
	char *a = tgi_strdup(p);
	tgi_path_fold(a, a, 1);
	avoid_one(hp, a);
	char *r = realpath(p, NULL);
	if (r && strcmp(r, a))
		avoid_one(hp, r);
	else
		free(r);
}

tgi_hostpath *tgi_hostpath_new(const char *const *list, size_t n, int unsandboxed)
{
	tgi_hostpath *hp = tgi_xcalloc(1, sizeof *hp);
	hp->uid = geteuid();
	hp->none = unsandboxed && hp->uid == 0;
	for (size_t i = 0; i < n; i++)
		avoid(hp, list[i]);
	return hp;
}

tgi_hostpath *tgi_hostpath_for_gate(const char *workspace, int unsandboxed)
{
	const char *list[] = {
		workspace, getenv("HOME"), tgi_passwd_home(), getenv("TMPDIR"),
		"/tmp", "/var/tmp", "/dev/shm",
	};
	return tgi_hostpath_new(list, TGI_ARRAY_LEN(list), unsandboxed);
}

void tgi_hostpath_free(tgi_hostpath *hp)
{
	if (!hp)
		return;
	for (size_t i = 0; i < hp->navoid; i++)
		free(hp->avoid[i]);
	free(hp);
}

/* The avoided place path is or lies under, or NULL. */
static const char *avoided(const tgi_hostpath *hp, const char *path)
{
	for (size_t i = 0; i < hp->navoid; i++) {
		const char *a = hp->avoid[i];
		size_t n = strlen(a);
		if (n == 1 || (!strncmp(path, a, n) && (path[n] == '\0' || path[n] == '/')))
			return a;
	}
	return NULL;
}

/* Owned by root, not writable by group or others, nor by the gate's user. */
static int owner_ok(const tgi_hostpath *hp, const char *path, const struct stat *st, char *why,
                    size_t whylen)
{
	if (st->st_uid != 0)
		return no(why, whylen, "%s is not owned by root", path);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return no(why, whylen, "%s is writable by %s", path,
		          st->st_mode & S_IWOTH ? "others" : "its group");
	if (hp->uid != 0 && faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0)
		return no(why, whylen, "%s is writable by the gate's user", path);
	return 1;
}

/* May a name be looked up in dir (a real path)?  Not in /proc: its
 * links (/proc/self/fd/N, /proc/self/exe) name what the gate has open,
 * not what the command will. */
static int dir_ok(const tgi_hostpath *hp, const char *dir, char *why, size_t whylen)
{
	struct stat st;
	const char *a = avoided(hp, dir);
	if (a)
		return no(why, whylen, "%s is in %s (the workspace, a home or a temp directory)", dir, a);
	if (!strncmp(dir, "/proc", 5) && (dir[5] == '\0' || dir[5] == '/'))
		return no(why, whylen, "%s is in /proc, whose links depend on who reads them", dir);
	if (lstat(dir, &st) < 0)
		return no(why, whylen, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return no(why, whylen, "%s is not a directory", dir);
	return owner_ok(hp, dir, &st, why, whylen);
}

/* Does only '/' follow in s? */
static int at_end(const char *s)
{
	while (*s == '/')
		s++;
	return !*s;
}

int tgi_hostpath_trusted(const tgi_hostpath *hp, const char *path, char *why, size_t whylen)
{
	char cur[PATH_MAX] = "";    /* the directory reached, a real path; "" is "/" */
	char todo[PATH_MAX];        /* what is left to walk */
	char next[PATH_MAX], target[PATH_MAX], joined[2 * PATH_MAX];
	struct stat st;
	int links = 0;

	if (!hp || !path || path[0] != '/')
		return no(why, whylen, "not an absolute path");
	if (hp->none)
		return no(why, whylen, "commands run unsandboxed as root, so they can write every "
		          "directory");
	if (strlen(path) >= sizeof todo)
		return no(why, whylen, "the path is too long");
	strcpy(todo, path);
	for (size_t pos = 0;;) {
		while (todo[pos] == '/')
			pos++;
		size_t e = pos;
		while (todo[e] && todo[e] != '/')
			e++;
		size_t n = e - pos;
		int dot = n == 1 && todo[pos] == '.', dotdot = n == 2 && !strncmp(todo + pos, "..", 2);
		if (!n || (at_end(todo + e) && (dot || dotdot)))
			return no(why, whylen, "%s names a directory", path);
		if (dot || dotdot) {
			if (dotdot && strrchr(cur, '/'))
				*strrchr(cur, '/') = '\0';
			pos = e;
			continue;
		}
		if (!dir_ok(hp, cur[0] ? cur : "/", why, whylen))
			return 0;
		size_t lc = strlen(cur);
		if (lc + 1 + n >= sizeof next)
			return no(why, whylen, "the path is too long");
		memcpy(next, cur, lc);
		next[lc] = '/';
		memcpy(next + lc + 1, todo + pos, n);
		next[lc + 1 + n] = '\0';
		if (lstat(next, &st) < 0)
			return no(why, whylen, "%s: %s", next, strerror(errno));
		if (S_ISLNK(st.st_mode)) {
			if (++links > HP_LINKS_MAX)
				return no(why, whylen, "%s: too many symlinks", path);
			ssize_t k = readlink(next, target, sizeof target - 1);
			if (k <= 0)
				return no(why, whylen, "%s: cannot read the link", next);
			target[k] = '\0';
			if ((size_t)snprintf(joined, sizeof joined, "%s%s", target, todo + e) >= sizeof todo)
				return no(why, whylen, "the path is too long");
			strcpy(todo, joined);
			if (target[0] == '/')
				cur[0] = '\0';
			pos = 0;
			continue;
		}
		if (!at_end(todo + e)) {
			if (!S_ISDIR(st.st_mode))
				return no(why, whylen, "%s is not a directory", next);
			strcpy(cur, next);
			pos = e;
			continue;
		}
		if (!S_ISREG(st.st_mode))
			return no(why, whylen, "%s is not a regular file", next);
		const char *a = avoided(hp, next);
		if (a)
			return no(why, whylen, "%s is in %s (the workspace, a home or a temp directory)", next, a);
		return owner_ok(hp, next, &st, why, whylen);
	}
}

int tgi_hostpath_ep(void *ctx, const char *path)
{
	return tgi_hostpath_trusted(ctx, path, NULL, 0);
}
