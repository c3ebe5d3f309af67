/*
 * spill.c — spill files: the full output of a call whose result was capped
 * (DESIGN §2 max_result_chars), at <state dir>/spill/<op_id>.txt.
 *
 * A spill file is written atomically: a temp file opened O_EXCL|O_NOFOLLOW
 * (mode 0600), fsync, renameat over the final name, fsync the directory.
 * spill/ is created 0700 and checked like the state dir; the file name is
 * the op id and nothing else (it must look like a UUID: no path tricks).
 *
 * Owns: the spill/ directory and the files in it.  Must not: decide what to
 * spill or how much (shape.c does), or follow a symlink.
 */
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tgi_spill_write(int state_fd, const char *op_id, const char *text, size_t len,
                    char *path_out, size_t cap, char *err, size_t errlen)
{
	char name[64], tmp[80], rnd[17], shown[128];

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

	tgi_random_hex(rnd, 8);
	tgi_snprintf(tmp, sizeof tmp, ".%s.%s.tmp", op_id, rnd);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "cannot create a spill file in .toolgate/spill: %s",
		             strerror(errno));
		close(dfd);
		return -1;
	}
	const char *failed = NULL;
	int e = -tgi_write_all(fd, text, len);
	if (e) {
		failed = "write";
	} else if (fsync(fd) < 0) {
		failed = "sync";
		e = errno;
	}
	if (close(fd) < 0 && !failed) {
		failed = "write";
		e = errno;
	}
	if (!failed && renameat(dfd, tmp, dfd, name) < 0) {
		failed = "rename";
		e = errno;
	}
	if (failed) {
		unlinkat(dfd, tmp, 0);
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
