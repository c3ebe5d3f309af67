/*
 * fs.h — workspace-confined file access.
 *
 * Every path a tool touches is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) from the workspace directory fd, so `..`, absolute
 * paths and symlinks that leave the workspace fail in the kernel, not in a
 * string compare.
 *
 * Owns: the openat2 wrapper, path checks, atomic writes, sorted directory
 * reads, the sentences the file tools give for a failed path, and file
 * bytes made safe for JSON text.  Must not: decide policy (protected paths
 * are reported, the caller refuses); fall back to a plain openat.
 */
#ifndef TGI_FS_H
#define TGI_FS_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include "toolgate.h"
#include "util/util.h"

/* Open path beneath dirfd.  Returns an fd or -errno.  path must be relative,
 * non-empty and free of NUL (callers check for embedded NULs in JSON
 * strings first); EXDEV/ELOOP mean the path escapes the workspace. */
int tgi_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/*
 * Check a model-supplied path before use: not empty, no NUL (len is the
 * JSON string length), not absolute, shorter than PATH_MAX.  Normalises
 * "./a//b/" into "a/b" in out (cap bytes); "." or "./" becomes "."; ".."
 * is kept (the kernel refuses it where it leaves).  Returns 0 or -1 with a
 * sentence in err.
 */
int tgi_path_check(const char *path, size_t len, char *out, size_t cap, char *err, size_t errlen);

/*
 * The path as resolved inside the workspace (symlinks followed, confined),
 * relative to it: "src/link" -> ".env".  For a path that does not exist
 * yet, the deepest existing parent is resolved and the rest appended.
 * Returns 0, or -errno (EXDEV when it escapes).
 */
int tgi_path_resolve(int ws_fd, const char *path, char *out, size_t cap);

/* Is a workspace-relative (normalised) path inside .git/ or .toolgate/ ?
 * 0 if not, else which (both nonzero). */
enum { TGI_PROTECTED_GIT = 1, TGI_PROTECTED_STATE = 2 };
int tgi_path_protected(const char *relpath);

/* The path of the open fd relative to the workspace ws_fd ("." for the
 * workspace itself), read back from the kernel.  0, or -errno (EXDEV when
 * fd lies outside). */
int tgi_fd_path(int ws_fd, int fd, char *out, size_t cap);

/*
 * Write data to path beneath dirfd atomically: a temp file in the same
 * directory, fsync, rename, fsync the directory.  Parents are created
 * (mode 0755).  A new file gets mode (less the umask); a replaced regular
 * file keeps its mode.  On any failure the temp file is removed and the old
 * file, if any, is untouched -- except that -EIO after the rename means the
 * directory fsync failed: the new file is in place, its durability unknown.
 * Returns 0 or -errno.
 */
int tgi_write_atomic(int dirfd, const char *path, const void *data, size_t len, mode_t mode);

/* Read a whole regular file beneath dirfd, up to max bytes (-EFBIG past it).
 * *out is NUL-terminated; caller frees. */
int tgi_read_all(int dirfd, const char *path, size_t max, char **out, size_t *len);

/* One directory entry as lstat sees it (symlinks are not followed). */
typedef struct tgi_dirent {
	char  *name;   /* owned */
	mode_t mode;   /* st_mode */
	off_t  size;   /* st_size */
} tgi_dirent;

/*
 * Read the directory dirfd (any fd of it, O_PATH is fine) sorted by name
 * (bytewise), without "." and "..".  At most max entries are kept; *more
 * counts the rest.  Returns 0 with *out (caller frees with
 * tgi_dirents_free) and *n, or -errno.
 */
int  tgi_dir_read(int dirfd, size_t max, tgi_dirent **out, size_t *n, size_t *more);
void tgi_dirents_free(tgi_dirent *v, size_t n);

/* ---- for the file tools ---------------------------------------------------- */

/*
 * A sentence for the model about a failed operation on path (err is a
 * -errno from the functions above) and the error kind it maps to:
 * EXDEV/ELOOP not_permitted ("path \"../x\" leaves the workspace; do not
 * retry; ask the owner"), ENOENT tool_error ("no such file: \"x\""),
 * ENOSPC/EDQUOT/EFBIG tool_error ("the disk is full..."), EISDIR and
 * ENAMETOOLONG invalid_input, EAGAIN/EMFILE/ENOMEM transient.
 */
tg_errkind tgi_path_error(int err, const char *path, char *msg, size_t cap);

/*
 * For the read-only tools: check a model-supplied path (len bytes), open it
 * beneath ws_fd with flags, and refuse what lies in .toolgate/ as written or
 * as resolved (the gate's state is not the model's business; .git is
 * readable).  norm receives the normalised path.  Returns an fd (caller
 * closes), or -1 with *kind and a sentence in msg.
 */
int tgi_path_open_read(int ws_fd, const char *path, size_t len, int flags,
                       char *norm, size_t normcap, tg_errkind *kind, char *msg, size_t msgcap);

/*
 * For the tools that write: refuse a normalised path that is protected
 * (.git/, .toolgate/) as written or as resolved, or that leaves the
 * workspace.  0, or -1 with *kind and a sentence in msg.
 */
int tgi_path_writable(int ws_fd, const char *norm, tg_errkind *kind, char *msg, size_t msgcap);

/*
 * Argument helpers (args are validated before a handler runs, but a handler
 * never relies on it).  A missing key takes dflt (NULL: required).  *s is
 * borrowed from args; *len is its JSON length, which may exceed strlen.
 * 0, or -1 with a sentence in msg.
 */
int tgi_arg_str(const json_t *args, const char *key, const char *dflt,
                const char **s, size_t *len, char *msg, size_t cap);
int tgi_arg_int(const json_t *args, const char *key, long long dflt,
                long long lo, long long hi, long long *out, char *msg, size_t cap);

/*
 * File text.  A character is a UTF-8 sequence, or one byte that does not
 * start a valid one (it becomes U+FFFD when appended).
 *
 * tgi_text_prefix: bytes of the first max_chars characters of s (never
 *   ending inside a sequence); *chars (may be NULL) gets how many.
 * tgi_text_append: append s as valid UTF-8.  0, or -1 (buffer unchanged)
 *   past the buffer's maximum.
 * tgi_text_json:   a new JSON string of s as valid UTF-8 (caller owns).
 */
size_t  tgi_text_prefix(const char *s, size_t n, size_t max_chars, size_t *chars);
int     tgi_text_append(tgi_buf *b, const char *s, size_t n);
json_t *tgi_text_json(const char *s, size_t n);

#endif
