/*
 * state.c — the on-disk state directory (<workspace>/.toolgate) and the
 * checks on everything opened inside it (DESIGN §5).
 *
 * A hostile repository must not redirect the ledger or spill files: a
 * .toolgate (or anything under it that we open) that is a symlink, is not a
 * directory/regular file, or is not owned by the current user is refused
 * with a sentence.  Directories are opened with O_NOFOLLOW and checked on
 * the open fd (fstat), so a swap between check and use cannot slip in.
 *
 * Owns: tgi_state_dir_open (and _find) and the shared checks declared at the end of
 * store.h.  Must not: open the database or write files (sqlite.c and
 * spill.c do), or follow a symlink.
 */
#include "store/store.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Apply the checks to one stat result.  shown is already fit for a
 * sentence; guards is what a redirect would hijack. */
static int check_stat(const struct stat *st, int want_dir, const char *shown, const char *guards,
                      char *err, size_t errlen)
{
	if (S_ISLNK(st->st_mode)) {
		tgi_snprintf(err, errlen,
		             "%s is a symlink; refusing to use it (a repository must not redirect %s)",
		             shown, guards);
		return -1;
	}
	if (want_dir && !S_ISDIR(st->st_mode)) {
		tgi_snprintf(err, errlen, "%s is not a directory; refusing to use it", shown);
		return -1;
	}
	if (!want_dir && !S_ISREG(st->st_mode)) {
		tgi_snprintf(err, errlen, "%s is not a regular file; refusing to use it", shown);
		return -1;
	}
	if (st->st_uid != geteuid()) {
		tgi_snprintf(err, errlen,
		             "%s is owned by uid %u, not by the current user (uid %u); refusing to use it",
		             shown, (unsigned)st->st_uid, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

/* tgi_state_subdir_open; create 0: -2 when name is not there. */
static int subdir_open(int dir_fd, const char *name, const char *shown, const char *guards,
                       const char *where, int create, char *err, size_t errlen)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char in[512] = "";
	struct stat st;

	if (where) {
		char w[480];
		tgi_sanitize(w, sizeof w, where);
		tgi_snprintf(in, sizeof in, " in '%s'", w);
	}
	int fd = openat(dir_fd, name, flags);
	if (fd < 0 && errno == ENOENT && !create)
		return -2;
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(dir_fd, name, 0700) < 0 && errno != EEXIST) {
			tgi_snprintf(err, errlen, "cannot create %s%s: %s", shown, in, strerror(errno));
			return -1;
		}
		fd = openat(dir_fd, name, flags);
	}
	if (fd < 0) {
		int e = errno;
		/* O_NOFOLLOW|O_DIRECTORY fails with ELOOP or ENOTDIR on a symlink
		 * or a file: say which, with the check's own sentence. */
		if ((e == ELOOP || e == ENOTDIR) && fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    check_stat(&st, 1, shown, guards, err, errlen) < 0)
			return -1;
		tgi_snprintf(err, errlen, "cannot open %s%s: %s", shown, in, strerror(e));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		tgi_snprintf(err, errlen, "cannot inspect %s%s: %s", shown, in, strerror(errno));
		close(fd);
		return -1;
	}
	if (check_stat(&st, 1, shown, guards, err, errlen) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int tgi_state_subdir_open(int dir_fd, const char *name, const char *shown, const char *guards,
                          const char *where, char *err, size_t errlen)
{
	return subdir_open(dir_fd, name, shown, guards, where, 1, err, errlen);
}

int tgi_state_dir_find(int ws_fd, const char *ws_path, char *err, size_t errlen)
{
	return subdir_open(ws_fd, ".toolgate", ".toolgate", "the ledger", ws_path, 0, err, errlen);
}

int tgi_state_dir_open(int ws_fd, const char *ws_path, char *err, size_t errlen)
{
	int fd = tgi_state_subdir_open(ws_fd, ".toolgate", ".toolgate", "the ledger", ws_path, err,
	                               errlen);
	if (fd < 0)
		return fd;
	/* The ledger, its approvals and its spill files belong to this machine:
	 * keep them out of the repository (a committed ledger would carry
	 * approvals and replays into every clone).  Best effort, never replaced. */
	int g = openat(fd, ".gitignore", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (g >= 0) {
		static const char body[] = "# written by toolgate: the ledger stays on this machine\n*\n";
		ssize_t w = write(g, body, sizeof body - 1);
		(void)w;
		close(g);
	}
	return fd;
}

int tgi_state_check_path(const char *path, int want_dir, int may_be_missing, const char *shown,
                         char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT && may_be_missing)
			return 0;
		tgi_snprintf(err, errlen, "cannot inspect %s: %s", shown, strerror(errno));
		return -1;
	}
	return check_stat(&st, want_dir, shown, "the ledger", err, errlen);
}

int tgi_uuid_ok(const char *s)
{
	static const char shape[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (!s)
		return 0;
	for (size_t i = 0; i < sizeof shape - 1; i++) {
		unsigned char c = (unsigned char)s[i];
		if (shape[i] == '-' ? c != '-'
		                    : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		                        (c >= 'A' && c <= 'F')))
			return 0;
	}
	return s[sizeof shape - 1] == '\0';
}
