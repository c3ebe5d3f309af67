/*
 * spill.c — spill files: the full output of a call whose result was capped
 * (DESIGN §2 max_result_chars), at <state dir>/spill/<op_id>.txt.
 *
 * A spill file is written atomically: a temp file opened O_EXCL|O_NOFOLLOW
 * (mode 0600), fsync, renameat over the final name, fsync the directory.
 * spill/ is created 0700 and checked like the state dir; the file name is
 * the op id and nothing else (it must look like a UUID: no path tricks).
 *
 * The output is kept unredacted, so it is kept only so long and shown only
 * to whom it was made for (issue 22):
 *   - beside it, <op_id>.session (written the same way, before the spill
 *     file appears) holds the sha256 of the session id of the call that made
 *     it ("" for a call of no session); tgi_spill_readable lets a read
 *     through only for that same session, and refuses a spill without one;
 *   - tgi_spill_prune, when a gate opens, removes what is older than
 *     spill.keep by its mtime (the spill file with its .session, and
 *     leftover temp files), looking at no more than SPILL_PRUNE_SCAN names:
 *     one getdents and a stat per name, never a long scan.
 *
 * Owns: the spill/ directory and the files in it.  Must not: decide what to
 * spill or how much (shape.c does), or follow a symlink.
 */
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPILL_PRUNE_SCAN 4096    /* names looked at per gate open */

/* name's content, atomically: temp file, fsync, rename.  0 or errno. */
static int write_atomic(int dfd, const char *name, const char *text, size_t len,
                        const char **failed)
{
	char tmp[96], rnd[17];
	tgi_random_hex(rnd, 8);
	tgi_snprintf(tmp, sizeof tmp, ".%s.%s.tmp", name, rnd);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		*failed = "create";
		return errno;
	}
	int e = -tgi_write_all(fd, text, len);
	*failed = NULL;
	if (e) {
		*failed = "write";
	} else if (fsync(fd) < 0) {
		*failed = "sync";
		e = errno;
	}
	if (close(fd) < 0 && !*failed) {
		*failed = "write";
		e = errno;
	}
	if (!*failed && renameat(dfd, tmp, dfd, name) < 0) {
		*failed = "rename";
		e = errno;
	}
	if (*failed)
		unlinkat(dfd, tmp, 0);
	return *failed ? e : 0;
}

/* What the .session file of a spill holds for session (NULL or "": none). */
static void session_mark(const char *session, char out[66])
{
	tgi_sha256_hex(session ? session : "", session ? strlen(session) : 0, out);
	out[64] = '\n';
	out[65] = '\0';
}

int tgi_spill_write(int state_fd, const char *op_id, const char *session, const char *text,
                    size_t len, char *path_out, size_t cap, char *err, size_t errlen)
{
	char name[64], side[64], shown[128], mark[66];

	if (!tgi_uuid_ok(op_id)) {
		char id[64];
		tgi_sanitize(id, sizeof id, op_id ? op_id : "");
		tgi_snprintf(err, errlen, "refusing to spill output for op id '%s': it is not a UUID", id);
		return -1;
	}
	if (!text && len) {
		tgi_snprintf(err, errlen, "no text to spill for op '%s'", op_id);
		return -1;
	}
	tgi_snprintf(name, sizeof name, "%s.txt", op_id);
	tgi_snprintf(side, sizeof side, "%s.session", op_id);
	tgi_snprintf(shown, sizeof shown, ".toolgate/spill/%s", name);
	if (!path_out || cap <= strlen(shown)) {
		tgi_snprintf(err, errlen, "no room for the spill path of op '%s' (%zu bytes needed)", op_id,
		             strlen(shown) + 1);
		return -1;
	}

	int dfd = tgi_state_subdir_open(state_fd, "spill", ".toolgate/spill", "spill files", NULL,
	                                err, errlen);
	if (dfd < 0)
		return -1;

	/* whose it is, first: a spill file never exists without it */
	const char *failed = NULL;
	session_mark(session, mark);
	int e = write_atomic(dfd, side, mark, 65, &failed);
	if (!e)
		e = write_atomic(dfd, name, text, len, &failed);
	if (e) {
		unlinkat(dfd, side, 0);
		close(dfd);
		tgi_snprintf(err, errlen, "cannot %s spill file '%s': %s", failed, shown, strerror(e));
		return -1;
	}
	/* The rename is durable once the directory is synced; a failure here
	 * leaves a complete file, so it is not an error for the caller. */
	fsync(dfd);
	close(dfd);
	tgi_snprintf(path_out, cap, "%s", shown);
	return 0;
}

int tgi_spill_readable(int ws_fd, const char *relpath, const char *session, char *msg,
                       size_t msgcap)
{
	static const char dir[] = ".toolgate/spill/";
	char side[128], mark[66], got[80], shown[96];
	struct stat st;

	tgi_sanitize(shown, sizeof shown, relpath);
	if (strncmp(relpath, dir, sizeof dir - 1) || strlen(relpath) != sizeof dir - 1 + 36 + 4) {
		tgi_snprintf(msg, msgcap, "\"%s\" is not a spill file", shown);
		return 0;
	}
	tgi_snprintf(side, sizeof side, "%.*s.session", (int)(strlen(relpath) - 4), relpath);
	int fd = tgi_open_beneath(ws_fd, side, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	ssize_t n = -1;
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    st.st_nlink == 1)
			n = read(fd, got, sizeof got);
		close(fd);
	}
	if (n < 0) {
		tgi_snprintf(msg, msgcap, "the spill file \"%s\" has no record of the session it was "
		             "made for, so it is not shown; run the call again to see its output", shown);
		return 0;
	}
	session_mark(session, mark);
	if ((size_t)n != 65 || memcmp(got, mark, 65)) {
		tgi_snprintf(msg, msgcap, "the spill file \"%s\" holds the output of a call of another "
		             "session; it is readable only in the session whose call made it", shown);
		return 0;
	}
	return 1;
}

/* Is name one of ours: "<uuid>.txt", "<uuid>.session", or a temp file
 * ".<uuid>.<txt|session>.<hex>.tmp"?  Sets *txt for a spill file. */
static int spill_name(const char *name, int *txt)
{
	char id[37];
	size_t n = strlen(name);
	*txt = 0;
	if (name[0] == '.')
		return n > 41 && !strcmp(name + n - 4, ".tmp") &&
		       (memcpy(id, name + 1, 36), id[36] = '\0', tgi_uuid_ok(id));
	if (n < 36)
		return 0;
	memcpy(id, name, 36);
	id[36] = '\0';
	if (!tgi_uuid_ok(id))
		return 0;
	*txt = !strcmp(name + 36, ".txt");
	return *txt || !strcmp(name + 36, ".session");
}

int tgi_spill_prune(int state_fd, long long keep_s, int64_t now_ms)
{
	if (state_fd < 0 || keep_s <= 0)
		return 0;
	int dfd = openat(state_fd, "spill", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	/* only a directory of ours, as the spill writer checks it */
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid()) {
		close(dfd);
		return -1;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -1;
	}
	int64_t before = now_ms / 1000 - keep_s;
	int removed = 0;
	struct dirent *e;
	for (int seen = 0; seen < SPILL_PRUNE_SCAN && (e = readdir(d)); seen++) {
		int txt;
		if (!spill_name(e->d_name, &txt))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    (int64_t)st.st_mtime >= before)
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
		if (txt) {   /* and what said whose it was */
			char side[64];
			tgi_snprintf(side, sizeof side, "%.36s.session", e->d_name);
			unlinkat(dfd, side, 0);
		}
	}
	closedir(d);
	return removed;
}
