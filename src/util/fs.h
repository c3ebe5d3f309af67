/*
 * fs.h — workspace-confined file access.
 *
 * Every path a tool touches is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) from the workspace directory fd, so `..`, absolute
 * paths and symlinks that leave the workspace fail in the kernel, not in a
 * string compare.
 *
 * Paths come in two forms.  A workspace path as the model, policy, the
 * ledger and the tools' output hold it is text: the text form of its
 * names (tgi_name_text: a byte that is not UTF-8 as \xHH).  The kernel
 * takes bytes.  tgi_path_check, tgi_path_resolve(_parent), tgi_fd_path,
 * tgi_path_open_read(_placed), tgi_path_writable and the walk's paths speak text;
 * tgi_open_beneath, tgi_open_below, tgi_write_atomic, tgi_read_all and
 * tgi_dir_read take and give bytes (tgi_path_bytes turns a checked path
 * into them).
 *
 * Owns: the openat2 wrapper, path checks, atomic writes, sorted directory
 * reads, the paths of a directory walk, and what the file tools share that
 * knows no tool: the sentences for a failed path and their paths()
 * functions (failing, deadlines and a walk's may_read: tools/walk.h).
 * Must not: decide policy (protected paths are reported, the caller
 * refuses); know the registry's types; fall back to a plain openat.
 */
#ifndef TGI_FS_H
#define TGI_FS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include "toolgate.h"
#include "util/util.h"

/* Open path beneath dirfd.  Returns an fd or -errno.  path must be relative,
 * non-empty and free of NUL (callers check for embedded NULs in JSON
 * strings first); EXDEV/ELOOP mean the path escapes the workspace. */
int tgi_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* Open rel beneath dirfd with no symlink in any component (the walks of a
 * tree the gate does not trust: the sandbox's audit and read masks);
 * "" is dirfd itself.  An fd, or -1 with errno (ELOOP/EXDEV: a link or
 * an escape). */
int tgi_open_below(int dirfd, const char *rel, int flags);

/*
 * File names as text (names.c).  The text form of a name: its bytes where
 * they are UTF-8; each byte that is not part of valid UTF-8 as \xHH (HH
 * upper-case hex, 80..FF); a backslash followed by 'x' and two hex digits
 * (either case) naming 5C or 80..FF as \x5C; every other byte as itself.
 * tgi_name_text writes it (its length, or -1 when cap is too small);
 * tgi_name_bytes reads one back (\xHH for 5C and 80..FF is that byte): the
 * length of the bytes, or -1 with a sentence when text is not exactly the
 * text form of those bytes (lower-case hex, an escape of a byte that is
 * UTF-8 there, a needless \x5C, raw bytes that are not UTF-8) or does not
 * fit.  Both NUL-terminate out.
 */
ssize_t tgi_name_text(const char *name, size_t n, char *out, size_t cap);
ssize_t tgi_name_bytes(const char *text, size_t n, char *out, size_t cap, char *err,
                       size_t errlen);

/* The bytes of a path tgi_path_check accepted (cap bytes): 0, or -EILSEQ
 * (it is not a text form) or -ENAMETOOLONG. */
int tgi_path_bytes(const char *text, char *out, size_t cap);

/*
 * Check a model-supplied path before use: not empty, no NUL (len is the
 * JSON string length), not absolute (the pipeline has made one inside the
 * workspace relative already), shorter than PATH_MAX, the text form of
 * the names it means (tgi_name_bytes: one spelling per name).  Normalises
 * "./a//b/" into "a/b" in out (cap bytes); "." or "./" becomes "."; ".."
 * is kept (the kernel refuses it where it leaves).  Returns 0 or -1 with a
 * sentence in err.
 */
int tgi_path_check(const char *path, size_t len, char *out, size_t cap, char *err, size_t errlen);

/*
 * An absolute path (len bytes, as the model wrote it) under root, the rest
 * relative: root is absolute; both are compared component by component,
 * as text, with empty and "." components skipped ("/ws//./a" is under
 * "/ws"; "/ws2/a" is not).  Nothing is resolved: ".." is a component like
 * any other -- it matches none of root's, and after root it stays in the
 * rest, for the kernel to judge where it leads.  1 with the rest (no empty
 * or "." component; "." for root itself) in out (cap bytes); 0 when path
 * is not absolute, holds a NUL or lies elsewhere; -1 when the rest does not
 * fit in cap.
 */
int tgi_path_within(const char *root, const char *path, size_t len, char *out, size_t cap);

/*
 * An absolute path folded as text, nothing resolved: "//", "/./" and a
 * trailing '/' taken out; with dotdot, each ".." also takes out the
 * component before it (at the root it stays there), as Codex's
 * AbsolutePathBuf folds; without, ".." stays as written.  in begins with
 * '/'; out has room for strlen(in) + 1 and may be in (it never runs ahead
 * of it).  Returns out.
 */
char *tgi_path_fold(const char *in, char *out, int dotdot);

/*
 * The workspace as spelled, where models may name it (DESIGN §2): given
 * (absolute, or relative to the current directory as the shell names it:
 * $PWD when that is ".") with "." and empty components dropped and ".."
 * taken lexically, as a shell's cd takes it.  NULL when that is real (the
 * real path) itself, or names another directory than real does now.
 * Caller frees.
 */
char *tgi_workspace_spelled(const char *given, const char *real);

/*
 * A path of a call's arguments, as written (len bytes), mapped to what the
 * arguments should hold instead: 1 with the replacement in out (cap bytes,
 * NUL-terminated), or 0 to keep it as written.  ud is the caller's.  (The
 * pipeline maps an absolute path inside the workspace to the relative one.)
 */
typedef int (*tgi_path_map_fn)(void *ud, const char *path, size_t len, char *out, size_t cap);

/*
 * The path as resolved inside the workspace (symlinks followed, confined),
 * relative to it: "src/link" -> ".env".  For a path that does not exist
 * yet, the deepest existing parent is resolved and the rest appended.
 * One openat2 (O_PATH) when no symlink is on the way; a symlink costs a
 * second and a read-back through /proc/self/fd.
 * Returns 0, or -errno (EXDEV when it escapes).
 */
int tgi_path_resolve(int ws_fd, const char *path, char *out, size_t cap);

/*
 * The path a write replaces: its parent directory resolved as above
 * (symlinks followed, confined), then the final component as written and
 * not followed (lstat semantics: a rename replaces a symlink, it does not
 * write through it).  "src/link" -> "src/link"; "dir_link/f" -> "src/f".
 * A final "." or ".." names a directory and is resolved whole.  Returns 0,
 * or -errno as tgi_path_resolve.
 */
int tgi_path_resolve_parent(int ws_fd, const char *path, char *out, size_t cap);

/*
 * Is a workspace-relative path protected?  Any component equal to ".git"
 * (the repository, or a submodule's or vendored one's: its hooks run code)
 * or ".toolgate" (the gate's state) makes it so, and so does a last
 * component that is a configuration's name (toolgate.yaml, .yml, .json:
 * at any depth, since the gate finds its configuration from the directory
 * it runs in upward).  0 if not, else which, TGI_PROTECTED_STATE first,
 * then TGI_PROTECTED_GIT.
 */
enum { TGI_PROTECTED_GIT = 1, TGI_PROTECTED_STATE = 2, TGI_PROTECTED_CONFIG = 4 };
int tgi_path_protected(const char *relpath);

/* Is name (one component) a name the gate loads its configuration from? */
int tgi_is_config_name(const char *name, size_t len);

/*
 * Is relpath exactly ".toolgate/spill/<op id>.txt", the op id a lowercase
 * 36-character UUID, with nothing before or after?  Such a spill file may
 * be read (the shape stage points the model at it); nothing else under
 * .toolgate may, and nothing under it may be written.  1 or 0.
 */
int tgi_path_is_spill(const char *relpath);

/* The path of the open fd relative to the workspace ws_fd ("." for the
 * workspace itself), read back from the kernel, as text.  0, or -errno
 * (EXDEV when fd lies outside). */
int tgi_fd_path(int ws_fd, int fd, char *out, size_t cap);

/* Write all of data to fd, retrying short writes and EINTR.  0, or -errno
 * (-EIO if the kernel accepts nothing). */
int tgi_write_all(int fd, const void *data, size_t len);

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

/*
 * The same, landing where the policy stage judged the write: expect is the
 * path as tgi_path_resolve_parent placed it then (text: its parent
 * resolved, the last component as written).  The parent path leads to now
 * (symlinks followed, confined) must be expect's, and the name expect's,
 * or nothing is written and -ESTALE returned; a missing parent is made
 * along expect, never through a symlink, so a directory is made only where
 * it was judged.  As cheap as tgi_write_atomic when no symlink is on the
 * way.  expect NULL: tgi_write_atomic.
 */
int tgi_write_atomic_landed(int dirfd, const char *path, const void *data, size_t len,
                            mode_t mode, const char *expect);

/* Read a whole regular file beneath dirfd, up to max bytes (-EFBIG past it).
 * *out is NUL-terminated; caller frees. */
int tgi_read_all(int dirfd, const char *path, size_t max, char **out, size_t *len);

/* The same for an open fd (borrowed; read from its current offset). */
int tgi_read_fd(int fd, size_t max, char **out, size_t *len);

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
 * ENAMETOOLONG invalid_input, EAGAIN/EMFILE/ENOMEM transient, ESTALE
 * transient ("path \"x\" changed between the policy check and its use
 * ...; nothing was read or written; retry ...": an open that did not land
 * where the policy stage judged the path, or an NFS handle gone stale).
 */
tg_errkind tgi_path_error(int err, const char *path, char *msg, size_t cap);

/*
 * For the read-only tools: check a model-supplied path (len bytes), open it
 * beneath ws_fd with flags, and refuse what lies in a .toolgate directory
 * as written or as resolved (the gate's state is not the model's business;
 * .git is readable) -- except a spill file (tgi_path_is_spill) named
 * exactly, which is opened without following a final symlink and must be
 * a regular file of ours with one link, resolving to that same path.  norm
 * receives the normalised path.  Returns an fd (caller closes), or -1 with
 * *kind and a sentence in msg.
 */
int tgi_path_open_read(int ws_fd, const char *path, size_t len, int flags,
                       char *norm, size_t normcap, tg_errkind *kind, char *msg, size_t msgcap);

/* The same, and where the open led in real (realcap bytes): the path as
 * resolved, relative to the workspace, as text ("." for the workspace) --
 * the normalised path with ".." applied when no symlink was on the way
 * (the kernel's walk refused any), else read back from the kernel. */
int tgi_path_open_placed(int ws_fd, const char *path, size_t len, int flags, char *norm,
                         size_t normcap, char *real, size_t realcap, tg_errkind *kind, char *msg,
                         size_t msgcap);

/*
 * For the tools that write: refuse a normalised path that is protected
 * (.git/, .toolgate/, at any depth) as written, as resolved, or as the
 * write would replace it (tgi_path_resolve_parent), or that leaves the
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
 * paths() for the file tools (tgi_paths_fn): the "path" argument as
 * written.  required: a missing path is -1; optional: it is "." (the
 * workspace).  1, or -1 with a sentence when it is not a string or holds
 * a NUL byte.
 */
int tgi_paths_required_path(const json_t *args, tgi_strv *out, char *err, size_t errlen);
int tgi_paths_optional_path(const json_t *args, tgi_strv *out, char *err, size_t errlen);

/*
 * repath() for the file tools (tgi_repath_fn): the string at args[key]
 * through map, replaced when map gives a replacement; tgi_repath_path is
 * it for "path".  A missing key or one that is not a string is left as it
 * is (the schema and paths() refuse it).
 */
void tgi_repath_key(json_t *args, const char *key, tgi_path_map_fn map, void *ud);
void tgi_repath_path(json_t *args, tgi_path_map_fn map, void *ud);

/* ---- directory walks --------------------------------------------------------- */

/*
 * The paths of one directory walk (list_dir, search_files).  `path` is the
 * entry as the model would name it: the root as written, then the names
 * below it, '/'-separated ("" for the root "." itself).  Policy sees each
 * entry in two forms, as it sees paths named in a call: under the root as
 * written (".." applied lexically) and under the root as resolved (they
 * differ when the root was reached through a symlink).  The walk itself
 * follows no symlink, so the names below the root are the same in both.
 */
typedef struct tgi_walk_path {
	char   path[PATH_MAX];
	size_t root_len;                /* bytes of path naming the root */
	char   form[2][PATH_MAX];       /* the root as policy sees it ("" for ".") */
	size_t form_len[2];
	int    nforms;                  /* 1 when both forms are the same */
	char   scratch[PATH_MAX];
} tgi_walk_path;

/* Start a walk at root_fd, opened from the normalised path norm.  0, or
 * -errno (the root's place in the workspace cannot be read back). */
int tgi_walk_path_init(tgi_walk_path *w, int ws_fd, int root_fd, const char *norm);
/* The same for a root whose place is known: real, as tgi_path_open_placed
 * gave it.  0, or -ENAMETOOLONG. */
int tgi_walk_path_start(tgi_walk_path *w, const char *norm, const char *real);

/* Name the entry `name` (its bytes, from the directory) below path[0..len),
 * in its text form: returns the length, or 0 when it would not fit (with
 * room for a trailing '/'). */
size_t tgi_walk_path_push(tgi_walk_path *w, size_t len, const char *name);

#endif
