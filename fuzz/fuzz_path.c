/*
 * fuzz_path.c — tgi_path_check and tgi_path_resolve on arbitrary bytes,
 * inside a temporary workspace (made once) with symlinks that leave it
 * (../outside, /etc/passwd), symlinks that stay, .git and .toolgate.
 *
 * Invariants checked (a violation traps):
 *   - check refuses with a printable sentence, or yields a normalised
 *     relative path (no empty or "." component, not absolute) that is
 *     the text form of its bytes (tgi_path_bytes reads it back);
 *   - resolve fails with -errno, or yields a relative path with no "." or
 *     ".." component (it never leaves);
 *   - whatever openat2 opens for the input lies inside the workspace, and
 *     resolve names that same file;
 *   - tgi_path_writable never accepts a path whose resolution is protected;
 *   - tgi_path_within (the input as an absolute path under a root) places
 *     only an absolute path without a NUL, and then gives a relative one
 *     that tgi_path_check keeps as it is (taken exactly when it is the
 *     text form of its bytes: names.c), shorter than the input, whose
 *     components after the root's are exactly the input's (empty and "."
 *     ones aside) -- nothing resolved, ".." kept; it places every absolute
 *     path under "/".
 * Nothing here creates files.
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "fuzz.h"

static char root[64];
static int  ws_fd = -1;

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	if (ws_fd >= 0)
		close(ws_fd);
	if (root[0])
		nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *rel, const char *text)
{
	int fd = openat(ws_fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			abort();
		close(fd);
	}
}

static void make_workspace(void)
{
	char p[128];

	strcpy(root, "/tmp/tg-fuzz-XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
	snprintf(p, sizeof p, "%s/ws", root);
	mkdir(p, 0755);
	ws_fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof p, "%s/outside", root);
	mkdir(p, 0755);
	if (ws_fd < 0)
		abort();
	mkdirat(ws_fd, "src", 0755);
	mkdirat(ws_fd, "src/sub", 0755);
	mkdirat(ws_fd, ".git", 0755);
	mkdirat(ws_fd, ".toolgate", 0755);
	put("a", "a\n");
	put("src/x.c", "x\n");
	put(".git/config", "c\n");
	put(".toolgate/ledger.db", "l\n");
	symlinkat("../outside", ws_fd, "out");
	symlinkat("/etc/passwd", ws_fd, "abs");
	symlinkat("src", ws_fd, "s");
	symlinkat("src/sub/..", ws_fd, "t");
	symlinkat(".git", ws_fd, "g");
	symlinkat(".toolgate", ws_fd, "tg");
	symlinkat("loop", ws_fd, "loop");
	symlinkat("missing/deeper", ws_fd, "dangling");
	symlinkat("../../..", ws_fd, "src/up");
	put("caf\xE9", "latin1 name\n");            /* a name that is not UTF-8 */
	symlinkat("caf\xE9", ws_fd, "to_latin1");
}


/* A normalised relative path: no empty component; "." only alone; with
 * dots=0 also no ".." component. */
static int normal(const char *p, int dots_ok)
{
	if (!*p || *p == '/')
		return 0;
	if (strcmp(p, ".") == 0)
		return 1;
	for (const char *s = p;;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			return 0;
		if (!dots_ok && n == 2 && s[0] == '.' && s[1] == '.')
			return 0;
		if (!e)
			return 1;
		s = e + 1;
	}
}

static int same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The components of s[0..n) but empty and "." ones, '/'-joined, into out. */
static size_t components(const char *s, size_t n, char *out)
{
	size_t j = 0;
	for (size_t i = 0; i < n;) {
		size_t start = i;
		while (i < n && s[i] != '/')
			i++;
		size_t m = i - start;
		i += i < n;
		if (!m || (m == 1 && s[start] == '.'))
			continue;
		if (j)
			out[j++] = '/';
		memcpy(out + j, s + start, m);
		j += m;
	}
	out[j] = '\0';
	return j;
}

static void within(const uint8_t *data, size_t size)
{
	static const char *const roots[] = {"/w/s", "/"};
	static char rel[PATH_MAX], norm[PATH_MAX], a[2 * PATH_MAX], b[2 * PATH_MAX + 8];
	char err[512];
	const char *path = (const char *)data;

	for (size_t k = 0; k < sizeof roots / sizeof roots[0]; k++) {
		int r = tgi_path_within(roots[k], path, size, rel, sizeof rel);
		check(r >= -1 && r <= 1);
		int placeable = size && path[0] == '/' && !memchr(path, '\0', size);
		if (!placeable)
			check(r == 0);
		if (k == 1 && placeable)
			check(r != 0);
		if (r != 1)
			continue;
		check(strlen(rel) < size || (size == 1 && !strcmp(rel, ".")));
		check(normal(rel, 1));
		/* kept as it is, when it is the text form of a path (names.c) */
		int text = tgi_name_bytes(rel, strlen(rel), a, sizeof a, err, sizeof err) >= 0;
		check((tgi_path_check(rel, strlen(rel), norm, sizeof norm, err, sizeof err) == 0) == text);
		check(!text || !strcmp(norm, rel));
		/* the input's components are the root's, then rel's */
		size_t n = components(roots[k], strlen(roots[k]), b);
		if (strcmp(rel, ".")) {
			if (n)
				b[n++] = '/';
			memcpy(b + n, rel, strlen(rel) + 1);
		}
		if (size < sizeof a / 2)
			check(components(path, size, a) == strlen(b) && !strcmp(a, b));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char norm[PATH_MAX], err[512], res[PATH_MAX], real[PATH_MAX];

	if (ws_fd < 0)
		make_workspace();
	within(data, size);
	if (tgi_path_check((const char *)data, size, norm, sizeof norm, err, sizeof err) < 0) {
		check(err[0] != '\0' && printable(err));
		return 0;
	}
	check(normal(norm, 1) && strlen(norm) <= size);

	int r = tgi_path_resolve(ws_fd, norm, res, sizeof res);
	check(r <= 0);
	if (r == 0)
		check(normal(res, 0));

	/* a checked path is text (names.c): its bytes are what is opened */
	char bytes[PATH_MAX];
	check(tgi_path_bytes(norm, bytes, sizeof bytes) == 0);
	int fd = tgi_open_beneath(ws_fd, bytes, O_PATH, 0);
	if (fd >= 0) {
		check(tgi_fd_path(ws_fd, fd, real, sizeof real) == 0 && normal(real, 0));
		check(r == 0 && strcmp(real, res) == 0);
		check(tgi_path_bytes(res, bytes, sizeof bytes) == 0);
		int again = tgi_open_beneath(ws_fd, bytes, O_PATH, 0);
		check(again >= 0 && same_file(fd, again));
		close(again);
		close(fd);
	}

	tg_errkind kind;
	if (tgi_path_writable(ws_fd, norm, &kind, err, sizeof err) == 0)
		check(r == 0 && !tgi_path_protected(res) && !tgi_path_protected(norm));
	else
		check(kind != TG_ERR_NONE && err[0] && printable(err));
	return 0;
}
