/*
 * fs.c — workspace-confined file access.
 *
 * Every model-supplied path is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) relative to a directory fd, so the kernel refuses
 * `..`, absolute paths and symlinks that leave.  Where a path leads is the
 * kernel's word, never computed from strings alone: a walk the kernel made
 * with every symlink refused went where the names say ("." and ".."
 * applied), and one through a symlink is read back (/proc/self/fd).
 *
 * Owns: the openat2 wrapper, path checks and resolution, atomic writes,
 * sorted directory reads, the paths of a directory walk, and what the file
 * tools share that knows no tool: the sentences for a failed path and
 * paths() (failing, deadlines and a walk's may_read are tools/walk.c's).
 * Must not: decide policy (protected paths are reported, the caller
 * refuses); know the registry's types (a tool's context or result); fall back
 * to a plain openat when the kernel has no openat2 (fail closed with
 * -ENOSYS); create or open anything by a string path from the filesystem
 * root.
 */
#include "util/fs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHOWN_MAX      160  /* bytes of a path echoed in a sentence */
#define OPEN_RETRIES   16   /* openat2 EAGAIN: a rename raced the lookup */
#define TEMP_RETRIES   8
#define DIR_CAP_START  32

/* ---- openat2 ---- */

/* openat2 beneath dirfd with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS and
 * what more resolve asks; an fd or -errno. */
static int open_resolve(int dirfd, const char *path, int flags, mode_t mode, unsigned long long more)
{
	struct open_how how;

	if (!path || !*path)
		return -ENOENT;
	memset(&how, 0, sizeof how);
	how.flags = (unsigned)(flags | O_CLOEXEC);
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		how.mode = mode;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | more;
	for (int tries = 0;;) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		if (fd >= 0)
			return (int)fd;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && ++tries < OPEN_RETRIES)
			continue;
		return -errno;
	}
}

int tgi_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	return open_resolve(dirfd, path, flags, mode, 0);
}

int tgi_open_below(int dirfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (;;) {
		long fd = syscall(SYS_openat2, dirfd, rel[0] ? rel : ".", &how, sizeof how);
		if (fd >= 0 || (errno != EINTR && errno != EAGAIN))
			return (int)fd;
	}
}

/* ---- path strings ---- */

/* Up to n bytes of s as printable text for a sentence. */
static void shown(char *out, size_t cap, const char *s, size_t n)
{
	tgi_sanitize_n(out, cap, s, n, SHOWN_MAX);
}

int tgi_path_check(const char *path, size_t len, char *out, size_t cap, char *err, size_t errlen)
{
	char s[SHOWN_MAX + 8];
	size_t j = 0;

	if (!path || len == 0) {
		tgi_snprintf(err, errlen, "path must not be empty; use \".\" for the workspace itself");
		return -1;
	}
	shown(s, sizeof s, path, len);
	if (memchr(path, '\0', len)) {
		tgi_snprintf(err, errlen, "path \"%s\" is cut short by a NUL byte; a path cannot contain one", s);
		return -1;
	}
	if (len >= PATH_MAX) {
		tgi_snprintf(err, errlen, "path \"%s\" is %zu bytes long; the limit is %d", s, len, PATH_MAX - 1);
		return -1;
	}
	if (path[0] == '/') {
		tgi_snprintf(err, errlen, "path must be relative to the workspace, got \"%s\"", s);
		return -1;
	}
	char bytes[PATH_MAX], why[512];
	if (tgi_name_bytes(path, len, bytes, sizeof bytes, why, sizeof why) < 0) {
		tgi_snprintf(err, errlen, "path %s", why);
		return -1;
	}
	for (size_t i = 0; i < len;) {
		size_t start = i;
		while (i < len && path[i] != '/')
			i++;
		size_t n = i - start;
		if (i < len)
			i++;
		if (n == 0 || (n == 1 && path[start] == '.'))
			continue;
		if (j + (j ? 1 : 0) + n + 1 > cap) {
			tgi_snprintf(err, errlen, "path \"%s\" is too long", s);
			return -1;
		}
		if (j)
			out[j++] = '/';
		memcpy(out + j, path + start, n);
		j += n;
	}
	if (!j) {
		if (cap < 2) {
			tgi_snprintf(err, errlen, "path \"%s\" is too long", s);
			return -1;
		}
		out[j++] = '.';
	}
	out[j] = '\0';
	return 0;
}

/* The next component of s[*i..len), skipping empty and "." ones: its
 * length (0 at the end) and where it starts in *part. */
static size_t next_component(const char *s, size_t len, size_t *i, const char **part)
{
	while (*i < len) {
		size_t start = *i;
		while (*i < len && s[*i] != '/')
			(*i)++;
		size_t n = *i - start;
		if (*i < len)
			(*i)++;
		if (n == 0 || (n == 1 && s[start] == '.'))
			continue;
		*part = s + start;
		return n;
	}
	return 0;
}

int tgi_path_within(const char *root, const char *path, size_t len, char *out, size_t cap)
{
	size_t ri = 0, pi = 0, rlen, rn, pn, j = 0;
	const char *rp, *pp;

	if (!root || root[0] != '/' || !path || !len || path[0] != '/' || memchr(path, '\0', len))
		return 0;
	rlen = strlen(root);
	while ((rn = next_component(root, rlen, &ri, &rp))) {
		pn = next_component(path, len, &pi, &pp);
		if (pn != rn || memcmp(pp, rp, rn) != 0)
			return 0;
	}
	while ((pn = next_component(path, len, &pi, &pp))) {
		if (j + (j ? 1 : 0) + pn + 1 > cap)
			return -1;
		if (j)
			out[j++] = '/';
		memcpy(out + j, pp, pn);
		j += pn;
	}
	if (!j) {
		if (cap < 2)
			return -1;
		out[j++] = '.';
	}
	out[j] = '\0';
	return 1;
}

char *tgi_path_fold(const char *in, char *out, int dotdot)
{
	size_t j = 0;
	for (const char *s = in; *s;) {
		while (*s == '/')
			s++;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - s);
		if (dotdot && n == 2 && s[0] == '.' && s[1] == '.') {
			while (j > 0 && out[j - 1] != '/')
				j--;
			if (j > 0)
				j--; /* the '/' before it */
		} else if (n && !(n == 1 && *s == '.')) {
			out[j++] = '/';
			memmove(out + j, s, n);
			j += n;
		}
		s = e;
	}
	if (!j)
		out[j++] = '/';
	out[j] = '\0';
	return out;
}

char *tgi_workspace_spelled(const char *given, const char *real)
{
	char *cwd = NULL, *p;
	struct stat a, b;

	if (!given || !real)
		return NULL;
	if (given[0] == '/') {
		p = tgi_strdup(given);
	} else {
		if (!(cwd = get_current_dir_name()))
			return NULL;
		size_t cn = strlen(cwd), gn = strlen(given);
		p = tgi_xmalloc(cn + gn + 2);
		memcpy(p, cwd, cn);
		p[cn] = '/';
		memcpy(p + cn + 1, given, gn + 1);
		free(cwd);
	}
	tgi_path_fold(p, p, 1);
	if (strlen(p) < PATH_MAX && strcmp(p, real) != 0 && stat(p, &a) == 0 &&
	    stat(real, &b) == 0 && S_ISDIR(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return p;
	free(p);
	return NULL;
}

int tgi_is_config_name(const char *name, size_t len)
{
	static const char *const names[] = {"toolgate.yaml", "toolgate.yml", "toolgate.json"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++)
		if (len == strlen(names[i]) && memcmp(name, names[i], len) == 0)
			return 1;
	return 0;
}

int tgi_path_protected(const char *relpath)
{
	int which = 0;

	for (const char *p = relpath; *p;) {
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - s);
		if (n == 9 && memcmp(s, ".toolgate", 9) == 0)
			return TGI_PROTECTED_STATE;
		if (n == 4 && memcmp(s, ".git", 4) == 0)
			which = TGI_PROTECTED_GIT;
		else if (!*p && !which && tgi_is_config_name(s, n))
			which = TGI_PROTECTED_CONFIG;
		if (*p)
			p++;
	}
	return which;
}

int tgi_path_is_spill(const char *relpath)
{
	static const char dir[] = ".toolgate/spill/";
	static const char uuid[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

	if (!relpath || strncmp(relpath, dir, sizeof dir - 1) != 0)
		return 0;
	const char *id = relpath + sizeof dir - 1;
	/* a NUL matches neither a '-' nor a digit: the loop stops at the end */
	for (size_t i = 0; i < sizeof uuid - 1; i++) {
		char c = id[i];
		if (uuid[i] == '-' ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return strcmp(id + sizeof uuid - 1, ".txt") == 0;
}

/* ---- resolution ---- */

/* The absolute path the kernel has for fd.  Its length, or -errno. */
static int fd_abspath(int fd, char *out, size_t cap)
{
	char proc[64];

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, out, cap);
	if (n < 0)
		return -errno;
	if ((size_t)n >= cap)
		return -ENAMETOOLONG;
	out[n] = '\0';
	if (out[0] != '/')
		return -EINVAL;
	return (int)n;
}

/*
 * The workspace's own path is needed on every resolution and rarely
 * changes: keep the last answer per thread, keyed by the fd and the
 * directory's identity (an fstat is far cheaper than a readlink through
 * /proc).  The cache is only a hint: when a path the kernel reports does
 * not start with it (the workspace was renamed, or an inode number was
 * reused), tgi_fd_path asks the kernel again before judging.
 */
static __thread struct {
	int   fd, len;
	dev_t dev;
	ino_t ino;
	char  path[PATH_MAX];
} ws_cache = {.fd = -1};

static int ws_abspath(int ws_fd, char *out, size_t cap, int fresh)
{
	struct stat st;
	if (fstat(ws_fd, &st) < 0)
		return -errno;
	if (!fresh && ws_cache.fd == ws_fd && ws_cache.dev == st.st_dev &&
	    ws_cache.ino == st.st_ino && (size_t)ws_cache.len < cap) {
		memcpy(out, ws_cache.path, (size_t)ws_cache.len + 1);
		return ws_cache.len;
	}
	int n = fd_abspath(ws_fd, out, cap);
	ws_cache.fd = -1;
	if (n > 0 && (size_t)n < sizeof ws_cache.path) {
		memcpy(ws_cache.path, out, (size_t)n + 1);
		ws_cache.fd = ws_fd;
		ws_cache.len = n;
		ws_cache.dev = st.st_dev;
		ws_cache.ino = st.st_ino;
	}
	return n;
}

/* tgi_fd_path, as bytes. */
static int fd_relpath(int ws_fd, int fd, char *out, size_t cap)
{
	char ws[PATH_MAX], p[PATH_MAX];
	const char *rel;

	int pn = fd_abspath(fd, p, sizeof p);
	if (pn < 0)
		return pn;
	for (int fresh = 0;; fresh++) {
		int wn = ws_abspath(ws_fd, ws, sizeof ws, fresh);
		if (wn < 0)
			return wn;
		if (wn == 1) {                  /* the workspace is "/" */
			rel = p + 1;
			break;
		}
		if (strncmp(p, ws, (size_t)wn) == 0 && (p[wn] == '/' || p[wn] == '\0')) {
			rel = p + wn + (p[wn] == '/');
			break;
		}
		if (fresh)
			return -EXDEV;
	}
	if (!*rel)
		rel = ".";
	size_t n = strlen(rel);
	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(out, rel, n + 1);
	return 0;
}

int tgi_fd_path(int ws_fd, int fd, char *out, size_t cap)
{
	char rel[PATH_MAX];
	int r = fd_relpath(ws_fd, fd, rel, sizeof rel);
	if (r < 0)
		return r;
	return tgi_name_text(rel, strlen(rel), out, cap) < 0 ? -ENAMETOOLONG : 0;
}

/*
 * out = base joined with rest, "." and ".." in rest applied lexically (they
 * follow a component that does not exist yet, so once created it is a real
 * directory and ".." is its parent).  *dots says whether rest had a "..".
 * -EXDEV when ".." climbs above the workspace.
 */
static int join_lexical(const char *base, const char *rest, char *out, size_t cap, int *dots)
{
	size_t j = 0;
	const char *parts[2] = { base, rest };

	*dots = 0;
	for (int k = 0; k < 2; k++) {
		const char *p = parts[k];
		while (*p) {
			const char *s = p;
			while (*p && *p != '/')
				p++;
			size_t n = (size_t)(p - s);
			if (*p)
				p++;
			if (n == 0 || (n == 1 && s[0] == '.'))
				continue;
			if (n == 2 && s[0] == '.' && s[1] == '.') {
				*dots = 1;
				if (j == 0)
					return -EXDEV;
				while (j > 0 && out[j - 1] != '/')
					j--;
				if (j > 0)
					j--;
				continue;
			}
			if (j + (j ? 1 : 0) + n + 1 > cap)
				return -ENAMETOOLONG;
			if (j)
				out[j++] = '/';
			memcpy(out + j, s, n);
			j += n;
		}
	}
	if (!j) {
		if (cap < 2)
			return -ENAMETOOLONG;
		out[j++] = '.';
	}
	out[j] = '\0';
	return 0;
}

/*
 * Open path (bytes) beneath ws_fd with flags and say where the kernel's
 * walk led, relative to the workspace, as bytes, in place (cap bytes).
 * First with every symlink refused (RESOLVE_NO_SYMLINKS): a walk that
 * succeeds so went where the path's own names say, each ".." to the
 * parent of the directory it followed and never above the workspace
 * (RESOLVE_BENEATH), so the place is the path with "." and ".." applied --
 * what /proc/self/fd would have answered when the walk ended, with no
 * read-back.  A symlink on the way (ELOOP) is the slow way: the path is
 * opened again, symlinks followed and confined, and its place read back
 * from the kernel.  Any other error is the one the full walk gives, since
 * the two walks differ only at a symlink.  An fd (caller closes) or -errno.
 */
static int open_placed(int ws_fd, const char *path, int flags, char *place, size_t cap)
{
	int dots, r;
	int fd = open_resolve(ws_fd, path, flags, 0, RESOLVE_NO_SYMLINKS);

	if (fd >= 0) {
		r = join_lexical(path, "", place, cap, &dots);
	} else {
		if (fd != -ELOOP)
			return fd;
		if ((fd = tgi_open_beneath(ws_fd, path, flags, 0)) < 0)
			return fd;
		r = fd_relpath(ws_fd, fd, place, cap);
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* tgi_path_resolve on bytes: the path given as its bytes, out as bytes. */
static int resolve_bytes(int ws_fd, char cur[PATH_MAX], char *out, size_t cap)
{
	char base[PATH_MAX];

	/* At most two rounds: the second starts from a path with no "..". */
	for (;;) {
		int fd = open_placed(ws_fd, cur, O_PATH, out, cap);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (fd != -ENOENT)
			return fd;

		/* The deepest existing parent: drop components from the end
		 * (none: the workspace itself). */
		size_t cut = strlen(cur);
		int pfd = -ENOENT;
		strcpy(base, ".");
		for (;;) {
			while (cut > 0 && cur[cut - 1] != '/')
				cut--;
			if (cut == 0)
				break;
			cur[cut - 1] = '\0';
			pfd = cur[0] ? open_placed(ws_fd, cur, O_PATH, base, sizeof base) : -ENOENT;
			cur[cut - 1] = '/';
			if (pfd != -ENOENT)
				break;
			cut--;
		}
		if (pfd >= 0)
			close(pfd);
		else if (pfd != -ENOENT)
			return pfd;
		int dots;
		int r = join_lexical(base, cur + cut, out, cap, &dots);
		if (r < 0 || !dots)
			return r;
		/* ".." brought us back among existing entries: resolve again. */
		if (strlen(out) >= PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(cur, out);
	}
}

int tgi_path_resolve(int ws_fd, const char *path, char *out, size_t cap)
{
	char cur[PATH_MAX], res[PATH_MAX];

	int r = tgi_path_bytes(path, cur, sizeof cur);
	if (r == 0)
		r = resolve_bytes(ws_fd, cur, res, sizeof res);
	if (r == 0 && tgi_name_text(res, strlen(res), out, cap) < 0)
		r = -ENAMETOOLONG;
	return r;
}

int tgi_path_resolve_parent(int ws_fd, const char *path, char *out, size_t cap)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return tgi_path_resolve(ws_fd, path, out, cap);
	if (slash && n == 0)
		return -EXDEV;                  /* "/x": absolute */
	if (n + 3 > sizeof parent)
		return -ENAMETOOLONG;
	/* "<parent>/." resolves as a directory: a file there is -ENOTDIR */
	memcpy(parent, path, n);
	memcpy(parent + n, n ? "/." : ".", n ? 3 : 2);
	int r = tgi_path_resolve(ws_fd, parent, out, cap);
	if (r < 0)
		return r;
	size_t o = strcmp(out, ".") == 0 ? 0 : strlen(out), b = strlen(base);
	if (o + 1 + b + 1 > cap)
		return -ENAMETOOLONG;
	if (o)
		out[o++] = '/';
	memcpy(out + o, base, b + 1);
	return 0;
}

/* ---- atomic write ---- */

/*
 * Open the directory `parent` beneath dirfd for reading, creating missing
 * components with mode 0755.  Each component is created with mkdirat on the
 * fd of its (confined) parent and then reopened through openat2 from
 * dirfd, so a symlink planted on the way cannot lead out.
 */
static int open_parent(int dirfd, char *parent)
{
	int fd = tgi_open_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY, 0);
	if (fd != -ENOENT)
		return fd;

	int cur = tgi_open_beneath(dirfd, ".", O_PATH | O_DIRECTORY, 0);
	if (cur < 0)
		return cur;
	for (char *p = parent;;) {
		char *slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		if (*p && strcmp(p, ".") != 0) {
			int next = tgi_open_beneath(dirfd, parent, O_PATH | O_DIRECTORY, 0);
			if (next == -ENOENT) {
				if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST)
					next = -errno;
				else
					next = tgi_open_beneath(dirfd, parent, O_PATH | O_DIRECTORY, 0);
			}
			close(cur);
			if (next < 0) {
				if (slash)
					*slash = '/';
				return next;
			}
			cur = next;
		}
		if (!slash)
			break;
		*slash = '/';
		p = slash + 1;
	}
	close(cur);
	return tgi_open_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY, 0);
}

/* Make the directories of want (bytes, "." or names joined by '/', no
 * ".."), each opened beneath the last with no symlink followed, as
 * mkdir -p would.  0, -ESTALE when a symlink stands on the way, or
 * -errno. */
static int make_dirs(int dirfd, const char *want)
{
	char buf[PATH_MAX];
	size_t n = strlen(want);

	if (n >= sizeof buf)
		return -ENAMETOOLONG;
	memcpy(buf, want, n + 1);
	int cur = open_resolve(dirfd, ".", O_PATH | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS);
	if (cur < 0)
		return cur;
	for (char *p = buf, *slash; p; p = slash ? slash + 1 : NULL) {
		if ((slash = strchr(p, '/')))
			*slash = '\0';
		if (!*p || !strcmp(p, "."))
			continue;
		int next = open_resolve(cur, p, O_PATH | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS);
		if (next == -ENOENT) {
			if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST)
				next = -errno;
			else
				next = open_resolve(cur, p, O_PATH | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS);
		}
		close(cur);
		if (next < 0)
			return next == -ELOOP ? -ESTALE : next;
		cur = next;
	}
	close(cur);
	return 0;
}

/* Does path hold a ".." component? */
static int has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (!p[2] || p[2] == '/'))
			return 1;
	return 0;
}

/*
 * open_parent for a write that must land where the policy stage judged it:
 * want (bytes) is the parent's place there.  The parent as written is
 * opened (symlinks followed, confined; its place known with no read-back
 * when none was on the way: open_placed) and must be at want.  One that
 * does not exist is made along want (make_dirs: a directory is made only
 * where it was judged) and opened again.  An fd; -ESTALE when the path now
 * leads elsewhere; or -errno (-ENOENT still, after the making, only for a
 * ".." over a name that does not exist, as the kernel says).
 */
static int open_parent_at(int dirfd, const char *parent, const char *want)
{
	char place[PATH_MAX];
	int fd = open_placed(dirfd, parent, O_RDONLY | O_DIRECTORY, place, sizeof place);

	if (fd == -ENOENT) {
		int r = make_dirs(dirfd, want);
		if (r < 0)
			return r;
		fd = open_placed(dirfd, parent, O_RDONLY | O_DIRECTORY, place, sizeof place);
		if (fd == -ENOENT && !has_dotdot(parent))
			return -ESTALE;
	}
	if (fd >= 0 && strcmp(place, want) != 0) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int tgi_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		size_t chunk = len > (1u << 30) ? (1u << 30) : len;
		ssize_t w = write(fd, p, chunk);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Create a fresh temp file in pfd; its name goes to name (32 bytes). */
static int create_temp(int pfd, char name[32], mode_t mode)
{
	char hex[17];
	int fd = -EEXIST;

	for (int i = 0; i < TEMP_RETRIES && fd == -EEXIST; i++) {
		tgi_random_hex(hex, 8);
		snprintf(name, 32, ".tg-%s.tmp", hex);
		fd = tgi_open_beneath(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	}
	return fd;
}

/* tgi_write_atomic(_landed); want: the parent's place and the name (bytes),
 * or NULL. */
static int write_atomic(int dirfd, const char *path, const void *data, size_t len, mode_t mode,
                        const char *want_parent, const char *want_base)
{
	char parent[PATH_MAX], tmp[32];
	const char *base;
	struct stat st;
	int r = 0;

	if (!path || strlen(path) >= sizeof parent)
		return -ENAMETOOLONG;
	const char *slash = strrchr(path, '/');
	if (slash) {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		if (!parent[0])
			return -EXDEV;          /* "/x": absolute */
		base = slash + 1;
	} else {
		strcpy(parent, ".");
		base = path;
	}
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EISDIR;
	if (want_base && strcmp(base, want_base) != 0)
		return -ESTALE;

	int pfd = want_parent ? open_parent_at(dirfd, parent, want_parent)
	                      : open_parent(dirfd, parent);
	if (pfd < 0)
		return pfd;

	int existed = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!existed && errno != ENOENT) {
		r = -errno;
		goto out;
	}
	if (existed && S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	int keep_mode = existed && S_ISREG(st.st_mode);
	if (keep_mode)
		mode = st.st_mode & 07777;

	int fd = create_temp(pfd, tmp, mode);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	if (keep_mode && fchmod(fd, mode) < 0)
		r = -errno;
	if (!r)
		r = tgi_write_all(fd, data, len);
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r && errno != EINTR)
		r = -errno;
	if (!r && renameat(pfd, tmp, pfd, base) < 0)
		r = -errno;
	if (r) {
		unlinkat(pfd, tmp, 0);
		goto out;
	}
	/* Some file systems cannot fsync a directory (EINVAL); that is no
	 * failure of ours. */
	if (fsync(pfd) < 0 && errno != EINVAL)
		r = -EIO;
out:
	close(pfd);
	return r;
}

int tgi_write_atomic(int dirfd, const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(dirfd, path, data, len, mode, NULL, NULL);
}

int tgi_write_atomic_landed(int dirfd, const char *path, const void *data, size_t len,
                            mode_t mode, const char *expect)
{
	char want[PATH_MAX];

	if (!expect)
		return tgi_write_atomic(dirfd, path, data, len, mode);
	if (tgi_path_bytes(expect, want, sizeof want) < 0)
		return -ESTALE;
	char *slash = strrchr(want, '/');
	if (!slash)
		return write_atomic(dirfd, path, data, len, mode, ".", want);
	*slash = '\0';
	return write_atomic(dirfd, path, data, len, mode, want, slash + 1);
}

/* ---- reading ---- */

int tgi_read_all(int dirfd, const char *path, size_t max, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	int fd = tgi_open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return fd;
	int r = tgi_read_fd(fd, max, out, len);
	close(fd);
	return r;
}

int tgi_read_fd(int fd, size_t max, char **out, size_t *len)
{
	struct stat st;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if ((uintmax_t)st.st_size > max)
		return -EFBIG;

	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = tgi_xmalloc(cap);
	int r = 0;
	for (;;) {
		if (n + 1 == cap) {
			if (n >= max) {          /* the file grew past max? */
				char probe;
				ssize_t k = read(fd, &probe, 1);
				if (k < 0 && errno == EINTR)
					continue;
				r = k > 0 ? -EFBIG : k < 0 ? -errno : 0;
				break;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = tgi_xrealloc(buf, cap);
		}
		ssize_t k = read(fd, buf + n, cap - 1 - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int dirent_cmp(const void *a, const void *b)
{
	return strcmp(((const tgi_dirent *)a)->name, ((const tgi_dirent *)b)->name);
}

int tgi_dir_read(int dirfd, size_t max, tgi_dirent **out, size_t *n, size_t *more)
{
	tgi_dirent *v = NULL;
	size_t cnt = 0, cap = 0, extra = 0;
	struct dirent *de;
	int r = 0;

	*out = NULL;
	*n = 0;
	if (more)
		*more = 0;
	int fd = tgi_open_beneath(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			r = errno ? -errno : 0;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (cnt == max) {
			extra++;
			continue;
		}
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;               /* gone since readdir */
		if (cnt == cap) {
			cap = cap ? cap * 2 : DIR_CAP_START;
			v = tgi_xrealloc(v, cap * sizeof *v);
		}
		v[cnt].name = tgi_strdup(de->d_name);
		v[cnt].mode = st.st_mode;
		v[cnt].size = st.st_size;
		cnt++;
	}
	closedir(d);
	if (r < 0) {
		tgi_dirents_free(v, cnt);
		return r;
	}
	if (cnt)
		qsort(v, cnt, sizeof *v, dirent_cmp);
	*out = v;
	*n = cnt;
	if (more)
		*more = extra;
	return 0;
}

void tgi_dirents_free(tgi_dirent *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

/* ---- sentences for the file tools ---- */

tg_errkind tgi_path_error(int err, const char *path, char *msg, size_t cap)
{
	char s[SHOWN_MAX + 8];
	char what[128], tmp[128];

	shown(s, sizeof s, path ? path : "", path ? strlen(path) : 0);
	switch (-err) {
	case EXDEV:
	case ELOOP:
		tgi_snprintf(msg, cap, "path \"%s\" leaves the workspace; do not retry; ask the owner", s);
		return TG_ERR_NOT_PERMITTED;
	case ENOENT:
		tgi_snprintf(msg, cap, "no such file: \"%s\"", s);
		return TG_ERR_TOOL_ERROR;
	case ENOTDIR:
		tgi_snprintf(msg, cap, "path \"%s\" goes through something that is not a directory", s);
		return TG_ERR_TOOL_ERROR;
	case EISDIR:
		tgi_snprintf(msg, cap, "path \"%s\" is a directory", s);
		return TG_ERR_INVALID_INPUT;
	case ENAMETOOLONG:
		tgi_snprintf(msg, cap, "path \"%s\" is too long, or has a name that is too long", s);
		return TG_ERR_INVALID_INPUT;
	case EILSEQ:
		tgi_snprintf(msg, cap, "path \"%s\" is not written as toolgate writes names (\\xHH, "
		             "upper-case, only for a byte that is not UTF-8)", s);
		return TG_ERR_INVALID_INPUT;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		tgi_snprintf(msg, cap, "the disk is full or the file is too large for \"%s\"; nothing was written", s);
		return TG_ERR_TOOL_ERROR;
	case EACCES:
	case EPERM:
		tgi_snprintf(msg, cap, "the system denies access to \"%s\"", s);
		return TG_ERR_TOOL_ERROR;
	case EROFS:
		tgi_snprintf(msg, cap, "\"%s\" is on a read-only file system", s);
		return TG_ERR_TOOL_ERROR;
	case ENOSYS:
		tgi_snprintf(msg, cap, "this kernel has no openat2, so file tools refuse to run; ask the owner");
		return TG_ERR_TOOL_ERROR;
	case ESTALE:
		tgi_snprintf(msg, cap, "path \"%s\" changed between the policy check and its use (a "
		             "symlink or a directory on it was replaced); nothing was read or written; "
		             "retry to have it checked as it is now", s);
		return TG_ERR_TRANSIENT;
	case EAGAIN:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		tgi_snprintf(msg, cap, "\"%s\" could not be opened just now; retry", s);
		return TG_ERR_TRANSIENT;
	default:
		/* GNU strerror_r: thread-safe; returns the text, maybe not in tmp */
		tgi_snprintf(what, sizeof what, "%s", strerror_r(-err, tmp, sizeof tmp));
		what[0] = (char)tolower((unsigned char)what[0]);
		tgi_snprintf(msg, cap, "\"%s\": %s", s, what);
		return TG_ERR_TOOL_ERROR;
	}
}

static tg_errkind refuse_protected(int which, const char *path, char *msg, size_t cap)
{
	char s[SHOWN_MAX + 8];

	shown(s, sizeof s, path, strlen(path));
	if (which == TGI_PROTECTED_STATE)
		tgi_snprintf(msg, cap, "path \"%s\" is in .toolgate/, the gate's own state, which tools may "
		             "not touch; do not retry; ask the owner", s);
	else if (which == TGI_PROTECTED_CONFIG)
		tgi_snprintf(msg, cap, "path \"%s\" is named as the gate's configuration, which tools may "
		             "not write; do not retry; ask the owner", s);
	else
		tgi_snprintf(msg, cap, "path \"%s\" is in .git/, which is read-only to tools; do not retry", s);
	return TG_ERR_NOT_PERMITTED;
}

/* A spill file as the gate writes it: regular, ours, one link (a hard link
 * planted there could name any file of ours). */
static int spill_file_ok(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       st.st_nlink == 1;
}

int tgi_path_open_placed(int ws_fd, const char *path, size_t len, int flags, char *norm,
                         size_t normcap, char *real, size_t realcap, tg_errkind *kind, char *msg,
                         size_t msgcap)
{
	char bytes[PATH_MAX], place[PATH_MAX];

	if (tgi_path_check(path, len, norm, normcap, msg, msgcap) < 0) {
		*kind = TG_ERR_INVALID_INPUT;
		return -1;
	}
	int spill = tgi_path_is_spill(norm);
	if (!spill && tgi_path_protected(norm) == TGI_PROTECTED_STATE) {
		*kind = refuse_protected(TGI_PROTECTED_STATE, norm, msg, msgcap);
		return -1;
	}
	int fd = tgi_path_bytes(norm, bytes, sizeof bytes);
	if (fd == 0)
		fd = open_placed(ws_fd, bytes, spill ? flags | O_NOFOLLOW : flags, place, sizeof place);
	if (fd >= 0 && tgi_name_text(place, strlen(place), real, realcap) < 0) {
		close(fd);
		fd = -ENAMETOOLONG;
	}
	if (fd < 0) {
		*kind = spill && fd == -ELOOP ? refuse_protected(TGI_PROTECTED_STATE, norm, msg, msgcap)
		                              : tgi_path_error(fd, norm, msg, msgcap);
		return -1;
	}
	if (spill ? strcmp(real, norm) != 0 || !spill_file_ok(fd)
	          : tgi_path_protected(real) == TGI_PROTECTED_STATE) {
		close(fd);
		*kind = refuse_protected(TGI_PROTECTED_STATE, norm, msg, msgcap);
		return -1;
	}
	return fd;
}

int tgi_path_open_read(int ws_fd, const char *path, size_t len, int flags,
                       char *norm, size_t normcap, tg_errkind *kind, char *msg, size_t msgcap)
{
	char real[PATH_MAX];

	return tgi_path_open_placed(ws_fd, path, len, flags, norm, normcap, real, sizeof real, kind,
	                            msg, msgcap);
}

int tgi_path_writable(int ws_fd, const char *norm, tg_errkind *kind, char *msg, size_t msgcap)
{
	char real[PATH_MAX];
	int (*const resolve[])(int, const char *, char *, size_t) = {
		tgi_path_resolve,               /* where a symlink at the end points */
		tgi_path_resolve_parent,        /* what the rename replaces */
	};

	int which = tgi_path_protected(norm);
	if (which) {
		*kind = refuse_protected(which, norm, msg, msgcap);
		return -1;
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(resolve); i++) {
		int r = resolve[i](ws_fd, norm, real, sizeof real);
		if (r < 0) {
			*kind = tgi_path_error(r, norm, msg, msgcap);
			return -1;
		}
		which = tgi_path_protected(real);
		if (which) {
			*kind = refuse_protected(which, norm, msg, msgcap);
			return -1;
		}
	}
	return 0;
}

/* ---- arguments ---- */

int tgi_arg_str(const json_t *args, const char *key, const char *dflt,
                const char **s, size_t *len, char *msg, size_t cap)
{
	const json_t *v = json_object_get(args, key);

	if (!v && dflt) {
		*s = dflt;
		*len = strlen(dflt);
		return 0;
	}
	if (!v) {
		tgi_snprintf(msg, cap, "\"%s\" is required", key);
		return -1;
	}
	if (!json_is_string(v)) {
		tgi_snprintf(msg, cap, "\"%s\" must be a string", key);
		return -1;
	}
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

int tgi_arg_int(const json_t *args, const char *key, long long dflt,
                long long lo, long long hi, long long *out, char *msg, size_t cap)
{
	const json_t *v = json_object_get(args, key);

	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v)) {
		tgi_snprintf(msg, cap, "\"%s\" must be an integer", key);
		return -1;
	}
	long long x = (long long)json_integer_value(v);
	if (x < lo || x > hi) {
		tgi_snprintf(msg, cap, "\"%s\" must be between %lld and %lld, got %lld", key, lo, hi, x);
		return -1;
	}
	*out = x;
	return 0;
}

/* ---- paths(), failing, deadlines ---- */

static int path_arg(const json_t *args, const char *dflt, tgi_strv *out, char *err, size_t errlen)
{
	const json_t *p = json_object_get(args, "path");
	char norm[PATH_MAX];

	if ((!p && !dflt) || (p && !json_is_string(p))) {
		tgi_snprintf(err, errlen, "\"path\" must be a string");
		return -1;
	}
	if (p && memchr(json_string_value(p), '\0', json_string_length(p))) {
		/* the sentence tgi_path_check gives for it */
		tgi_path_check(json_string_value(p), json_string_length(p), norm, sizeof norm, err, errlen);
		return -1;
	}
	tgi_strv_push(out, tgi_strdup(p ? json_string_value(p) : dflt));
	return 1;
}

int tgi_paths_required_path(const json_t *args, tgi_strv *out, char *err, size_t errlen)
{
	return path_arg(args, NULL, out, err, errlen);
}

int tgi_paths_optional_path(const json_t *args, tgi_strv *out, char *err, size_t errlen)
{
	return path_arg(args, ".", out, err, errlen);
}

void tgi_repath_key(json_t *args, const char *key, tgi_path_map_fn map, void *ud)
{
	const json_t *v = json_object_get(args, key);
	char rel[PATH_MAX];

	if (!json_is_string(v) || map(ud, json_string_value(v), json_string_length(v), rel,
	                              sizeof rel) != 1)
		return;
	json_t *s = json_string(rel);
	if (s)                          /* else not UTF-8: kept, and refused as it is */
		json_object_set_new(args, key, s);
}

void tgi_repath_path(json_t *args, tgi_path_map_fn map, void *ud)
{
	tgi_repath_key(args, "path", map, ud);
}

/* ---- directory walks ---- */

int tgi_walk_path_init(tgi_walk_path *w, int ws_fd, int root_fd, const char *norm)
{
	char real[PATH_MAX];

	int r = tgi_fd_path(ws_fd, root_fd, real, sizeof real);
	return r < 0 ? r : tgi_walk_path_start(w, norm, real);
}

int tgi_walk_path_start(tgi_walk_path *w, const char *norm, const char *real)
{
	int dots;

	size_t n = strcmp(norm, ".") == 0 ? 0 : strlen(norm);
	if (n + 2 > sizeof w->path || strlen(real) >= sizeof w->form[0])
		return -ENAMETOOLONG;
	memcpy(w->path, norm, n);
	w->path[n] = '\0';
	w->root_len = n;

	/* The root as resolved (the kernel's word), and as written when that
	 * differs.  A ".." that climbs out of the workspace lexically (it came
	 * after a symlink) leaves the resolved form alone. */
	strcpy(w->form[0], real);
	w->nforms = 1;
	if (join_lexical(norm, "", w->form[1], sizeof w->form[1], &dots) == 0 &&
	    strcmp(w->form[0], w->form[1]) != 0)
		w->nforms = 2;
	for (int k = 0; k < w->nforms; k++) {
		if (strcmp(w->form[k], ".") == 0)
			w->form[k][0] = '\0';
		w->form_len[k] = strlen(w->form[k]);
	}
	return 0;
}

size_t tgi_walk_path_push(tgi_walk_path *w, size_t len, const char *name)
{
	size_t sep = len ? 1 : 0;

	if (len + sep + 2 > sizeof w->path)
		return 0;
	/* room for the '/' a directory's name gets when it is listed */
	ssize_t n = tgi_name_text(name, strlen(name), w->path + len + sep,
	                          sizeof w->path - len - sep - 1);
	if (n < 0) {
		w->path[len] = '\0';
		return 0;
	}
	if (sep)
		w->path[len] = '/';
	return len + sep + (size_t)n;
}
