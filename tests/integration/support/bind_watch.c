/*
 * bind_watch.c — an LD_PRELOAD shim for tests/integration/events_socket.sh:
 * right after every bind() of a Unix socket to a path, and every link or
 * rename that gives a socket a new name, it looks at what another user
 * could see at that instant: the socket file's mode and the mode of the
 * directory that holds it.  The name is "open" when the socket lets group
 * or others connect (any of 0077) and its directory lets them reach it
 * (0011): a window in which another user can connect.
 *
 * Environment:
 *   BIND_LOG=FILE   append "bind|link|rename MODE DIRMODE open|closed" per
 *                   socket name made (octal modes)
 *
 * Owns: the looking.  Must not: change what a call does (each goes to the
 * real function, errno kept).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Log what a socket named PATH (relative to DIRFD) looks like now. */
static void look(const char *what, int dirfd, const char *path)
{
	const char *log = getenv("BIND_LOG");
	struct stat st, dst;
	char dir[PATH_MAX];
	if (!log || !path || !*path)
		return;
	int saved = errno;
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode)) {
		snprintf(dir, sizeof dir, "%s", path);
		char *d = dirname(dir);
		/* a bare name: its directory is DIRFD's */
		int rc = strchr(path, '/') ? fstatat(dirfd, d, &dst, 0)
		                           : fstatat(dirfd, ".", &dst, 0);
		if (rc == 0) {
			int open_ = (st.st_mode & 0077) && (dst.st_mode & 0011);
			FILE *f = fopen(log, "a");
			if (f) {
				fprintf(f, "%s %04o %04o %s\n", what, (unsigned)(st.st_mode & 07777),
				        (unsigned)(dst.st_mode & 07777), open_ ? "open" : "closed");
				fclose(f);
			}
		}
	}
	errno = saved;
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	int rc = real(fd, sa, len);
	if (rc == 0 && sa && sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		char path[sizeof un->sun_path + 1];
		memcpy(path, un->sun_path, sizeof un->sun_path);
		path[sizeof un->sun_path] = 0;
		look("bind", AT_FDCWD, path);
	}
	return rc;
}

int link(const char *a, const char *b)
{
	static int (*real)(const char *, const char *);
	if (!real)
		real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "link");
	int rc = real(a, b);
	if (rc == 0)
		look("link", AT_FDCWD, b);
	return rc;
}

int linkat(int fa, const char *a, int fb, const char *b, int flags)
{
	static int (*real)(int, const char *, int, const char *, int);
	if (!real)
		real = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
	int rc = real(fa, a, fb, b, flags);
	if (rc == 0)
		look("link", fb, b);
	return rc;
}

int rename(const char *a, const char *b)
{
	static int (*real)(const char *, const char *);
	if (!real)
		real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	int rc = real(a, b);
	if (rc == 0)
		look("rename", AT_FDCWD, b);
	return rc;
}

int renameat(int fa, const char *a, int fb, const char *b)
{
	static int (*real)(int, const char *, int, const char *);
	if (!real)
		real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	int rc = real(fa, a, fb, b);
	if (rc == 0)
		look("rename", fb, b);
	return rc;
}

int renameat2(int fa, const char *a, int fb, const char *b, unsigned flags)
{
	static int (*real)(int, const char *, int, const char *, unsigned);
	if (!real)
		real = (int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT,
		                                                                      "renameat2");
	int rc = real(fa, a, fb, b, flags);
	if (rc == 0)
		look("rename", fb, b);
	return rc;
}
