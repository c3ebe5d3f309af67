/*
 * kill_at.c — an LD_PRELOAD shim for tests/integration/patch_crash.sh: it
 * counts the calls that change directory entries (rename, renameat,
 * renameat2, linkat, unlinkat, mkdirat: every step of a patch commit that
 * shows on disk) and kills its own process with SIGKILL right before or
 * right after the Nth one, so a test can stop a commit between any two of
 * its steps (or, with KILL_SIG=STOP, freeze it there, alive).
 *
 * Environment (read at each call):
 *   KILL_AT=N               die at the Nth call (from 1); unset or 0: never
 *   KILL_WHEN=before|after  before the call is made (default) or after it
 *                           returned
 *   KILL_SIG=STOP           SIGSTOP instead of SIGKILL (the process stays,
 *                           holding what it holds, until SIGCONT)
 *   KILL_LOG=FILE           append "N call name [name2]" for every call,
 *                           written before the call is made
 *
 * Owns: the counting and the signal.  Must not: change what a call does
 * (each goes to the real function unchanged, errno kept), or count calls
 * nobody asked about (without KILL_AT and KILL_LOG it only forwards).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long calls;

static unsigned long kill_at(void)
{
	const char *s = getenv("KILL_AT");
	return s ? strtoul(s, NULL, 10) : 0;
}

static void die(void)
{
	const char *s = getenv("KILL_SIG");
	raise(s && !strcmp(s, "STOP") ? SIGSTOP : SIGKILL);
}

static int kill_after(void)
{
	const char *s = getenv("KILL_WHEN");
	return s && !strcmp(s, "after");
}

/* Count the call, log it, and stop here if it is the one to stop before.
 * Returns its number. */
static unsigned long enter(const char *fn, const char *a, const char *b)
{
	int saved = errno;
	unsigned long n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
	const char *log = getenv("KILL_LOG");

	if (log && *log) {
		char line[8192];
		int len = snprintf(line, sizeof line, "%lu %s %s%s%s\n", n, fn, a ? a : "-",
		                   b ? " " : "", b ? b : "");
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (len > (int)sizeof line - 1)
				len = (int)sizeof line - 1;
			if (write(fd, line, (size_t)len) < 0) {
				/* the log is best effort; the count is what matters */
			}
			close(fd);
		}
	}
	if (n == kill_at() && !kill_after())
		die();
	errno = saved;
	return n;
}

/* After the call returned: stop here if it is the one to stop after. */
static void leave(unsigned long n)
{
	if (n == kill_at() && kill_after())
		die();
}

#define REAL(name)                                                                  \
	static __typeof__(name) *real_##name;                                       \
	if (!real_##name)                                                           \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);          \
	if (!real_##name) {                                                         \
		errno = ENOSYS;                                                     \
		return -1;                                                          \
	}

int rename(const char *from, const char *to)
{
	REAL(rename);
	unsigned long n = enter("rename", from, to);
	int r = real_rename(from, to);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	REAL(renameat);
	unsigned long n = enter("renameat", from, to);
	int r = real_renameat(fromfd, from, tofd, to);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
	REAL(renameat2);
	unsigned long n = enter("renameat2", from, to);
	int r = real_renameat2(fromfd, from, tofd, to, flags);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}

int linkat(int fromfd, const char *from, int tofd, const char *to, int flags)
{
	REAL(linkat);
	unsigned long n = enter("linkat", from, to);
	int r = real_linkat(fromfd, from, tofd, to, flags);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}

int unlinkat(int dirfd, const char *name, int flags)
{
	REAL(unlinkat);
	unsigned long n = enter(flags & AT_REMOVEDIR ? "rmdirat" : "unlinkat", name, NULL);
	int r = real_unlinkat(dirfd, name, flags);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}

int mkdirat(int dirfd, const char *name, mode_t mode)
{
	REAL(mkdirat);
	unsigned long n = enter("mkdirat", name, NULL);
	int r = real_mkdirat(dirfd, name, mode);
	int e = errno;
	leave(n);
	errno = e;
	return r;
}
