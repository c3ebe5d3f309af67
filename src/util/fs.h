/*
 * fs.h — workspace-confined file access.
 *
 * Every path a tool touches is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) from the workspace directory fd, so `..`, absolute
 * paths and symlinks that leave the workspace fail in the kernel, not in a
 * string compare.
 *
 * Owns: the openat2 wrapper, path checks, atomic writes.  Must not: decide
 * policy (protected paths are reported, the caller refuses).
 */
#ifndef TGI_FS_H
#define TGI_FS_H

#include <stddef.h>
#include <sys/types.h>

/* Open path beneath dirfd.  Returns an fd or -errno.  path must be relative,
 * non-empty and free of NUL (callers check for embedded NULs in JSON
 * strings first); EXDEV/ELOOP mean the path escapes the workspace. */
int tgi_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/*
 * Check a model-supplied path before use: not empty, no NUL (len is the
 * JSON string length), not absolute, at most PATH_MAX.  Normalises "./a//b"
 * into "a/b" in out (cap bytes); "" or "." becomes ".".  Returns 0 or -1
 * with a sentence in err.
 */
int tgi_path_check(const char *path, size_t len, char *out, size_t cap, char *err, size_t errlen);

/*
 * The path as resolved inside the workspace (symlinks followed, confined),
 * relative to it: "src/link" -> ".env".  For a path that does not exist
 * yet, the deepest existing parent is resolved and the rest appended.
 * Returns 0, or -errno (EXDEV when it escapes).
 */
int tgi_path_resolve(int ws_fd, const char *path, char *out, size_t cap);

/* Is a workspace-relative (normalised) path inside .git/ or .toolgate/ ? */
int tgi_path_protected(const char *relpath);

/*
 * Write data to path beneath dirfd atomically: a temp file in the same
 * directory, fsync, rename, fsync the directory.  Parents are created
 * (mode 0755).  On any failure the temp file is removed and the old file,
 * if any, is untouched.  Returns 0 or -errno.
 */
int tgi_write_atomic(int dirfd, const char *path, const void *data, size_t len, mode_t mode);

/* Read a whole regular file beneath dirfd, up to max bytes (-EFBIG past it).
 * *out is NUL-terminated; caller frees. */
int tgi_read_all(int dirfd, const char *path, size_t max, char **out, size_t *len);

#endif
