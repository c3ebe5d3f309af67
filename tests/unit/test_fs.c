/*
 * test_fs.c — workspace-confined file access (src/util/fs.c).
 *
 * Each test gets a fresh temporary workspace with a sibling directory
 * "outside", symlinks that leave it (../outside, /etc/passwd), symlinks that
 * stay inside, .git and .toolgate.  Checks that the kernel refuses every
 * escape, that resolution never leaves, that atomic writes leave no temp
 * file and no partial file (also when the file size limit cuts a write
 * short), that openat2 missing means refusal, not a fallback, and that a
 * path with no symlink on the way is placed without reading it back
 * through /proc/self/fd (one through a symlink is read back).  Also:
 * .git and .toolgate are protected at any depth, only an exactly named
 * spill file under .toolgate is readable, and a walk puts every entry to
 * may_read in both its written and its resolved form.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "tools/walk.h"
#include "util/fs.h"

typedef struct fx {
	char root[64];
	char ws[96];
	int  ws_fd;
} fx;

static void put(const fx *f, const char *rel, const char *data, size_t len)
{
	int fd = openat(f->ws_fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static char *slurp(const fx *f, const char *rel, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	int r = tgi_read_all(f->ws_fd, rel, 64 << 20, &buf, &n);
	assert_int_equal(r, 0);
	if (len)
		*len = n;
	return buf;
}

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	char p[256];

	strcpy(f->root, "/tmp/tg-fs-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->ws, sizeof f->ws, "%s/ws", f->root);
	snprintf(p, sizeof p, "%s/outside", f->root);
	if (mkdir(f->ws, 0755) < 0 || mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/outside/secret.txt", f->root);
	FILE *s = fopen(p, "w");
	fputs("secret\n", s);
	fclose(s);
	f->ws_fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f->ws_fd < 0)
		return -1;
	mkdirat(f->ws_fd, "src", 0755);
	mkdirat(f->ws_fd, "src/sub", 0755);
	mkdirat(f->ws_fd, ".git", 0755);
	mkdirat(f->ws_fd, ".toolgate", 0755);
	put(f, "hello.txt", "one\ntwo\nthree\n", 14);
	put(f, "src/a.c", "int a;\n", 7);
	put(f, "src/sub/deep.c", "int d;\n", 7);
	put(f, ".git/config", "[core]\n", 7);
	put(f, ".toolgate/ledger.db", "ledger", 6);
	symlinkat("../outside/secret.txt", f->ws_fd, "link_out");
	symlinkat("/etc/passwd", f->ws_fd, "link_abs");
	symlinkat("hello.txt", f->ws_fd, "link_in");
	symlinkat("src", f->ws_fd, "dir_link");
	symlinkat("../outside", f->ws_fd, "dir_out");
	symlinkat(".git", f->ws_fd, "git_link");
	symlinkat(".toolgate/ledger.db", f->ws_fd, "state_link");
	symlinkat("missing.txt", f->ws_fd, "dangling");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	close(f->ws_fd);
	nftw(f->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* No ".tg-*" temp file anywhere under the workspace. */
static int temp_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type;
	return strncmp(p + ftw->base, ".tg-", 4) == 0;
}

static void assert_no_temp(const fx *f)
{
	assert_int_equal(nftw(f->ws, temp_cb, 16, FTW_PHYS), 0);
}

/* ---- tgi_path_check ---- */

static void check_ok(const char *in, const char *want)
{
	char out[PATH_MAX], err[256];
	assert_int_equal(tgi_path_check(in, strlen(in), out, sizeof out, err, sizeof err), 0);
	assert_string_equal(out, want);
}

static void check_bad(const char *in, size_t len, const char *want)
{
	char out[PATH_MAX], err[256] = "";
	assert_int_equal(tgi_path_check(in, len, out, sizeof out, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void test_path_check(void **state)
{
	(void)state;
	check_ok("a", "a");
	check_ok("./a//b/", "a/b");
	check_ok(".", ".");
	check_ok("./", ".");
	check_ok("././.", ".");
	check_ok("a/./b/.", "a/b");
	check_ok("a/../b", "a/../b");      /* ".." is the kernel's to judge */
	check_ok("../x", "../x");
	check_ok(".git/config", ".git/config");

	check_bad("", 0, "path must not be empty");
	check_bad("/etc/passwd", 11, "path must be relative to the workspace, got \"/etc/passwd\"");
	check_bad("//x", 3, "must be relative");
	check_bad("a\0b", 3, "NUL byte");
	check_bad("/\n\x1b[2J", 6, "got \"/  [2J\"");   /* control characters are not echoed */

	char *longp = malloc(PATH_MAX + 10);
	memset(longp, 'a', PATH_MAX + 9);
	longp[PATH_MAX + 9] = '\0';
	check_bad(longp, PATH_MAX + 9, "bytes long");
	free(longp);

	char small[4], err[128];
	assert_int_equal(tgi_path_check("abcdef", 6, small, sizeof small, err, sizeof err), -1);
	assert_non_null(strstr(err, "too long"));
}

/* ---- tgi_path_within ---- */

static void within_ok(const char *root, const char *path, const char *want)
{
	char out[PATH_MAX];
	if (tgi_path_within(root, path, strlen(path), out, sizeof out) != 1)
		fail_msg("\"%s\" is not under \"%s\"", path, root);
	assert_string_equal(out, want);
}

static void within_no(const char *root, const char *path, size_t len)
{
	char out[PATH_MAX];
	if (tgi_path_within(root, path, len, out, sizeof out) != 0)
		fail_msg("\"%s\" is under \"%s\"", path, root);
}

static void test_path_within(void **state)
{
	(void)state;
	within_ok("/ws", "/ws/README.md", "README.md");
	within_ok("/ws", "/ws", ".");
	within_ok("/ws", "/ws/", ".");
	within_ok("/ws", "/ws/.", ".");
	within_ok("/ws", "//ws//./src///a.c/", "src/a.c");
	within_ok("/a/b/ws", "/a/b/ws/src/a.c", "src/a.c");
	within_ok("/a/b/ws/", "/a/b/ws/x", "x");              /* a root's trailing '/' */
	within_ok("/", "/etc/passwd", "etc/passwd");          /* a workspace of / */
	within_ok("/", "/", ".");
	/* ".." after the root is kept for the kernel (it refuses what leaves) */
	within_ok("/ws", "/ws/../etc/passwd", "../etc/passwd");
	within_ok("/ws", "/ws/src/../README.md", "src/../README.md");
	within_ok("/ws", "/ws/..", "..");
	/* by component, never by prefix; nothing resolved */
	within_no("/ws", "/ws2/x", 6);
	within_no("/ws", "/w", 2);
	within_no("/ws", "/", 1);
	within_no("/a/ws", "/a/b/../ws/x", 12);               /* ".." before the root: elsewhere */
	within_no("/a/ws", "/a/./wsx", 8);
	within_no("/ws", "ws/x", 4);                          /* not absolute */
	within_no("/ws", "", 0);
	within_no("/ws", "/ws/a\0b", 7);                      /* a NUL: not placed */
	within_no("ws", "/ws/x", 5);                          /* a root that is not absolute */
	within_no(NULL, "/ws/x", 5);

	/* the rest must fit */
	char small[4];
	assert_int_equal(tgi_path_within("/ws", "/ws/abcdef", 10, small, sizeof small), -1);
	assert_int_equal(tgi_path_within("/ws", "/ws/abc", 7, small, sizeof small), 1);
	assert_string_equal(small, "abc");
	char one[1];
	assert_int_equal(tgi_path_within("/ws", "/ws", 3, one, sizeof one), -1);
}

/* A map that makes "/ws/..." relative and counts its calls. */
static int calls;
static int map_ws(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	calls++;
	return tgi_path_within(ud, path, len, out, cap) == 1;
}

static void test_repath_key(void **state)
{
	(void)state;
	json_t *args = json_pack("{s:s, s:s, s:i}", "path", "/ws/src/a.c", "workdir", "/elsewhere",
	                         "n", 3);
	calls = 0;
	tgi_repath_path(args, map_ws, "/ws");
	assert_string_equal(json_string_value(json_object_get(args, "path")), "src/a.c");
	tgi_repath_key(args, "workdir", map_ws, "/ws");
	assert_string_equal(json_string_value(json_object_get(args, "workdir")), "/elsewhere");
	tgi_repath_key(args, "n", map_ws, "/ws");              /* not a string: left alone */
	tgi_repath_key(args, "missing", map_ws, "/ws");
	assert_int_equal(calls, 2);
	assert_int_equal(json_integer_value(json_object_get(args, "n")), 3);
	assert_null(json_object_get(args, "missing"));
	json_decref(args);
}

/* ---- tgi_open_beneath ---- */

static void test_open_beneath(void **state)
{
	fx *f = *state;
	char buf[64];

	int fd = tgi_open_beneath(f->ws_fd, "hello.txt", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 3), 3);
	assert_memory_equal(buf, "one", 3);
	close(fd);

	fd = tgi_open_beneath(f->ws_fd, "link_in", O_RDONLY, 0);     /* inside: followed */
	assert_true(fd >= 0);
	close(fd);
	fd = tgi_open_beneath(f->ws_fd, "src/../hello.txt", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(tgi_open_beneath(f->ws_fd, "../outside/secret.txt", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "src/../../outside", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "/etc/passwd", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "link_out", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "link_abs", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "dir_out/secret.txt", O_RDONLY, 0), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "dir_out/new", O_WRONLY | O_CREAT, 0644), -EXDEV);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "missing", O_RDONLY, 0), -ENOENT);
	assert_int_equal(tgi_open_beneath(f->ws_fd, "", O_RDONLY, 0), -ENOENT);

	/* nothing was created outside */
	char p[256];
	snprintf(p, sizeof p, "%s/outside/new", f->root);
	assert_int_equal(access(p, F_OK), -1);

	fd = tgi_open_beneath(f->ws_fd, "made.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777 & ~0600, 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

/* ---- tgi_fd_path, tgi_path_resolve ---- */

static void test_fd_path(void **state)
{
	fx *f = *state;
	char out[PATH_MAX];

	int fd = tgi_open_beneath(f->ws_fd, "src/sub", O_PATH, 0);
	assert_int_equal(tgi_fd_path(f->ws_fd, fd, out, sizeof out), 0);
	assert_string_equal(out, "src/sub");
	assert_int_equal(tgi_fd_path(f->ws_fd, fd, out, 4), -ENAMETOOLONG);
	close(fd);
	assert_int_equal(tgi_fd_path(f->ws_fd, f->ws_fd, out, sizeof out), 0);
	assert_string_equal(out, ".");

	/* a sibling whose name starts with the workspace's is still outside */
	char p[256];
	snprintf(p, sizeof p, "%s/outside", f->root);
	fd = open(p, O_PATH);
	assert_int_equal(tgi_fd_path(f->ws_fd, fd, out, sizeof out), -EXDEV);
	close(fd);
	snprintf(p, sizeof p, "%s/ws2", f->root);
	mkdir(p, 0755);
	fd = open(p, O_PATH);
	assert_int_equal(tgi_fd_path(f->ws_fd, fd, out, sizeof out), -EXDEV);
	close(fd);
}

static void resolves(const fx *f, const char *in, const char *want)
{
	char out[PATH_MAX];
	int r = tgi_path_resolve(f->ws_fd, in, out, sizeof out);
	if (r != 0)
		fail_msg("resolve \"%s\": %s", in, strerror(-r));
	if (strcmp(out, want) != 0)
		fail_msg("resolve \"%s\" gave \"%s\", want \"%s\"", in, out, want);
}

static void resolve_fails(const fx *f, const char *in, int err)
{
	char out[PATH_MAX];
	int r = tgi_path_resolve(f->ws_fd, in, out, sizeof out);
	if (r != err)
		fail_msg("resolve \"%s\" gave %d, want %d", in, r, err);
}

static void test_path_resolve(void **state)
{
	fx *f = *state;

	resolves(f, ".", ".");
	resolves(f, "hello.txt", "hello.txt");
	resolves(f, "link_in", "hello.txt");
	resolves(f, "dir_link/a.c", "src/a.c");
	resolves(f, "src/sub/../a.c", "src/a.c");
	resolves(f, "state_link", ".toolgate/ledger.db");
	resolves(f, "git_link/config", ".git/config");
	/* not there yet: the deepest existing parent, then the rest */
	resolves(f, "new.txt", "new.txt");
	resolves(f, "new/dir/file.txt", "new/dir/file.txt");
	resolves(f, "dir_link/new/x", "src/new/x");
	resolves(f, "git_link/hooks/pre-commit", ".git/hooks/pre-commit");
	resolves(f, "new/../hello.txt", "hello.txt");
	resolves(f, "new/../dir_link/q", "src/q");
	resolves(f, "src/new/../../git_link/x", ".git/x");
	resolves(f, "dangling", "dangling");

	resolve_fails(f, "../x", -EXDEV);
	resolve_fails(f, "link_out", -EXDEV);
	resolve_fails(f, "link_abs", -EXDEV);
	resolve_fails(f, "dir_out/x", -EXDEV);
	resolve_fails(f, "new/../../x", -EXDEV);
	resolve_fails(f, "new/../dir_out/x", -EXDEV);
	resolve_fails(f, "new/a/../../../x", -EXDEV);
	resolve_fails(f, "hello.txt/x", -ENOTDIR);

	char small[4];
	assert_int_equal(tgi_path_resolve(f->ws_fd, "src/sub", small, sizeof small), -ENAMETOOLONG);
}

static void parent_resolves(const fx *f, const char *in, const char *want)
{
	char out[PATH_MAX];
	int r = tgi_path_resolve_parent(f->ws_fd, in, out, sizeof out);
	if (r != 0)
		fail_msg("resolve_parent \"%s\": %s", in, strerror(-r));
	if (strcmp(out, want) != 0)
		fail_msg("resolve_parent \"%s\" gave \"%s\", want \"%s\"", in, out, want);
}

static void parent_fails(const fx *f, const char *in, int err)
{
	char out[PATH_MAX];
	int r = tgi_path_resolve_parent(f->ws_fd, in, out, sizeof out);
	if (r != err)
		fail_msg("resolve_parent \"%s\" gave %d, want %d", in, r, err);
}

static void test_path_resolve_parent(void **state)
{
	fx *f = *state;

	/* the final symlink is what a rename replaces: not followed */
	parent_resolves(f, "link_in", "link_in");
	parent_resolves(f, "state_link", "state_link");
	parent_resolves(f, "link_out", "link_out");
	parent_resolves(f, "dangling", "dangling");
	parent_resolves(f, "dir_link", "dir_link");
	/* the parent is followed */
	parent_resolves(f, "hello.txt", "hello.txt");
	parent_resolves(f, "dir_link/a.c", "src/a.c");
	parent_resolves(f, "dir_link/new.c", "src/new.c");
	parent_resolves(f, "git_link/config", ".git/config");
	parent_resolves(f, "git_link/hooks/pre-commit", ".git/hooks/pre-commit");
	parent_resolves(f, "src/sub/../a.c", "src/a.c");
	parent_resolves(f, "new/dir/f.txt", "new/dir/f.txt");
	parent_resolves(f, "new/../dir_link/q", "src/q");
	/* a symlink inside a directory reached through another */
	assert_int_equal(symlinkat("../hello.txt", f->ws_fd, ".git/out_link"), 0);
	parent_resolves(f, "git_link/out_link", ".git/out_link");
	resolves(f, "git_link/out_link", "hello.txt");     /* where tgi_path_resolve goes */
	/* a final "." or ".." names a directory: resolved whole */
	parent_resolves(f, ".", ".");
	parent_resolves(f, "dir_link/..", ".");
	parent_resolves(f, "src/sub/..", "src");

	parent_fails(f, "../x", -EXDEV);
	parent_fails(f, "dir_out/x", -EXDEV);
	parent_fails(f, "link_out/x", -EXDEV);
	parent_fails(f, "/x", -EXDEV);
	parent_fails(f, "hello.txt/x", -ENOTDIR);          /* the parent is a file */
	parent_fails(f, "link_in/x", -ENOTDIR);
	char small[6];
	assert_int_equal(tgi_path_resolve_parent(f->ws_fd, "src/sub/x", small, sizeof small),
	                 -ENAMETOOLONG);
}

static void test_path_protected(void **state)
{
	(void)state;
	assert_int_equal(tgi_path_protected(".git"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected(".git/config"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("./.git/hooks/x"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected(".toolgate"), TGI_PROTECTED_STATE);
	assert_int_equal(tgi_path_protected(".toolgate/ledger.db"), TGI_PROTECTED_STATE);
	assert_int_equal(tgi_path_protected(".gitignore"), 0);
	assert_int_equal(tgi_path_protected(".toolgates"), 0);
	assert_int_equal(tgi_path_protected(".GIT/config"), 0);   /* exact: Linux is case-sensitive */
	assert_int_equal(tgi_path_protected("git"), 0);
	assert_int_equal(tgi_path_protected("."), 0);
	assert_int_equal(tgi_path_protected(""), 0);

	/* at any depth: a submodule's or vendored repository's hooks run code */
	assert_int_equal(tgi_path_protected("src/.git"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("sub/mod/.git/hooks/pre-commit"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("./vendor//lib/.git/config"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("a/../.git/x"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("vendor/.toolgate/ledger.db"), TGI_PROTECTED_STATE);

	/* a configuration's name, at any depth: the gate finds one upward */
	assert_int_equal(tgi_path_protected("toolgate.yaml"), TGI_PROTECTED_CONFIG);
	assert_int_equal(tgi_path_protected("sub/toolgate.yml"), TGI_PROTECTED_CONFIG);
	assert_int_equal(tgi_path_protected("a/b/toolgate.json"), TGI_PROTECTED_CONFIG);
	assert_int_equal(tgi_path_protected("sub/.git/toolgate.yaml"), TGI_PROTECTED_GIT);
	assert_int_equal(tgi_path_protected("toolgate.yaml/x"), 0);     /* only the last part */
	assert_int_equal(tgi_path_protected("sub/toolgate.yaml.bak"), 0);
	assert_int_equal(tgi_path_protected("sub/toolgate.yam"), 0);
	assert_int_equal(tgi_path_protected("a/.toolgate"), TGI_PROTECTED_STATE);
	assert_int_equal(tgi_path_protected("a/.git/b/.toolgate/c"), TGI_PROTECTED_STATE); /* the stricter */
	assert_int_equal(tgi_path_protected(".toolgate/.git"), TGI_PROTECTED_STATE);
	assert_int_equal(tgi_path_protected("src/x.git"), 0);
	assert_int_equal(tgi_path_protected("src/.git.bak/config"), 0);
	assert_int_equal(tgi_path_protected("src/.gitmodules"), 0);
	assert_int_equal(tgi_path_protected("a.toolgate/b"), 0);
	assert_int_equal(tgi_path_protected("src/.toolgate~"), 0);
}

#define UUID "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77"

static void test_path_is_spill(void **state)
{
	(void)state;
	assert_int_equal(tgi_path_is_spill(".toolgate/spill/" UUID ".txt"), 1);
	assert_int_equal(tgi_path_is_spill(".toolgate/spill/00000000-0000-0000-0000-000000000000.txt"), 1);

	const char *near[] = {
		".toolgate/spill/x.txt",
		".toolgate/spill/" UUID ".txt/..",
		".toolgate/spill/" UUID ".txt/x",
		".toolgate/spill/" UUID ".txt.bak",
		".toolgate/spill/" UUID ".TXT",
		".toolgate/spill/" UUID,
		".toolgate/spill/0193A5F0-7C1E-7D2A-9B1E-4F0C2A9D1E77.txt",   /* uppercase */
		".toolgate/spill/0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e7.txt",    /* 35 characters */
		".toolgate/spill/0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e777.txt",  /* 37 */
		".toolgate/spill/0193a5f0x7c1e-7d2a-9b1e-4f0c2a9d1e77.txt",   /* no dash */
		".toolgate/spill/0193a5g0-7c1e-7d2a-9b1e-4f0c2a9d1e77.txt",   /* not hex */
		".toolgate/spill/." UUID ".abc.tmp",                            /* a temp file */
		".toolgate/spill/sub/" UUID ".txt",
		".toolgate/spill//" UUID ".txt",
		".toolgate/spill/../spill/" UUID ".txt",
		"./.toolgate/spill/" UUID ".txt",                               /* not normalised */
		"x/.toolgate/spill/" UUID ".txt",
		".toolgate/spill",
		".toolgate/spill/",
		".toolgate/ledger.db",
		".toolgate/ledger.db-wal",
		"spill/" UUID ".txt",
		"",
	};
	for (size_t i = 0; i < sizeof near / sizeof *near; i++)
		if (tgi_path_is_spill(near[i]))
			fail_msg("\"%s\" passed as a spill file", near[i]);
	assert_int_equal(tgi_path_is_spill(NULL), 0);
}

/* ---- tgi_write_atomic ---- */

static void test_write_atomic(void **state)
{
	fx *f = *state;
	struct stat st;
	size_t n;

	mode_t um = umask(022);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "n1/n2/f.txt", "hi\n", 3, 0644), 0);
	char *s = slurp(f, "n1/n2/f.txt", &n);
	assert_int_equal(n, 3);
	assert_memory_equal(s, "hi\n", 3);
	free(s);
	assert_int_equal(fstatat(f->ws_fd, "n1/n2/f.txt", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(fstatat(f->ws_fd, "n1/n2", &st, 0), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0755);

	/* replacing keeps the old mode */
	assert_int_equal(fchmodat(f->ws_fd, "hello.txt", 0600, 0), 0);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "hello.txt", "new", 3, 0644), 0);
	assert_int_equal(fstatat(f->ws_fd, "hello.txt", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	s = slurp(f, "hello.txt", &n);
	assert_memory_equal(s, "new", 3);
	free(s);

	/* empty content, NUL bytes kept */
	assert_int_equal(tgi_write_atomic(f->ws_fd, "empty", "", 0, 0644), 0);
	s = slurp(f, "empty", &n);
	assert_int_equal(n, 0);
	free(s);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "nul.bin", "a\0b", 3, 0644), 0);
	s = slurp(f, "nul.bin", &n);
	assert_int_equal(n, 3);
	assert_memory_equal(s, "a\0b", 3);
	free(s);

	/* through a symlinked directory inside: allowed, lands in src/ */
	assert_int_equal(tgi_write_atomic(f->ws_fd, "dir_link/via.txt", "v", 1, 0644), 0);
	assert_int_equal(fstatat(f->ws_fd, "src/via.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));

	/* a symlink as the target is replaced, not written through */
	assert_int_equal(tgi_write_atomic(f->ws_fd, "link_in", "L", 1, 0644), 0);
	assert_int_equal(fstatat(f->ws_fd, "link_in", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	s = slurp(f, "hello.txt", &n);
	assert_memory_equal(s, "new", 3);
	free(s);

	/* refusals */
	assert_int_equal(tgi_write_atomic(f->ws_fd, "src", "x", 1, 0644), -EISDIR);
	assert_int_equal(tgi_write_atomic(f->ws_fd, ".", "x", 1, 0644), -EISDIR);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "src/..", "x", 1, 0644), -EISDIR);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "../escape.txt", "x", 1, 0644), -EXDEV);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "dir_out/x.txt", "x", 1, 0644), -EXDEV);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "dir_out/made/x.txt", "x", 1, 0644), -EXDEV);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "/tmp/x.txt", "x", 1, 0644), -EXDEV);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "hello.txt/x", "x", 1, 0644), -ENOTDIR);
	assert_int_equal(tgi_write_atomic(f->ws_fd, "dangling/x", "x", 1, 0644), -ENOENT);
	char p[256];
	snprintf(p, sizeof p, "%s/escape.txt", f->root);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof p, "%s/outside/made", f->root);
	assert_int_equal(access(p, F_OK), -1);
	/* new/../x creates new/ on the way, and x lands inside */
	assert_int_equal(tgi_write_atomic(f->ws_fd, "made/../x.txt", "x", 1, 0644), 0);
	assert_int_equal(fstatat(f->ws_fd, "x.txt", &st, 0), 0);

	assert_no_temp(f);
	umask(um);
}

/* In a child whose file size limit is 4 KiB (SIGXFSZ ignored, so write()
 * fails with EFBIG), a 1 MiB write must fail and leave no trace. */
static void test_write_atomic_efbig(void **state)
{
	fx *f = *state;
	size_t big = 1 << 20;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		char *data = malloc(big);
		memset(data, 'x', big);
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		int a = tgi_write_atomic(f->ws_fd, "hello.txt", data, big, 0644);
		int b = tgi_write_atomic(f->ws_fd, "fresh/big.txt", data, big, 0644);
		_exit(a == -EFBIG && b == -EFBIG ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	size_t n;
	char *s = slurp(f, "hello.txt", &n);
	assert_int_equal(n, 14);
	assert_memory_equal(s, "one\ntwo\nthree\n", 14);
	free(s);
	struct stat st;
	assert_int_equal(fstatat(f->ws_fd, "fresh/big.txt", &st, 0), -1);
	assert_no_temp(f);
}

/* Without openat2 (here: a seccomp filter makes it ENOSYS) every open is
 * refused: no fallback to openat. */
static void test_no_openat2_fails_closed(void **state)
{
	fx *f = *state;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sock_filter code[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { (unsigned short)(sizeof code / sizeof code[0]), code };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(2);
		char out[PATH_MAX], *buf;
		size_t n;
		int ok = tgi_open_beneath(f->ws_fd, "hello.txt", O_RDONLY, 0) == -ENOSYS &&
		         tgi_read_all(f->ws_fd, "hello.txt", 100, &buf, &n) == -ENOSYS &&
		         tgi_path_resolve(f->ws_fd, "hello.txt", out, sizeof out) == -ENOSYS &&
		         tgi_write_atomic(f->ws_fd, "w.txt", "x", 1, 0644) == -ENOSYS;
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		skip();                        /* no seccomp filters here */
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(faccessat(f->ws_fd, "w.txt", F_OK, 0), -1);
}

/* A path with no symlink on the way is placed by the kernel's walk alone:
 * with readlink refused (a seccomp filter makes it EPERM), such paths
 * resolve and open as before, ".." applied; a path through a symlink,
 * whose place must be read back, fails closed rather than guessed. */
static void test_place_without_readback(void **state)
{
	fx *f = *state;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sock_filter code[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_readlink, 1, 0),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_readlinkat, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { (unsigned short)(sizeof code / sizeof code[0]), code };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(2);
		char out[PATH_MAX], norm[PATH_MAX], real[PATH_MAX], msg[512];
		tg_errkind kind;
		int bad = 0;
#define CHECK(cond) ((cond) ? (void)0 : (void)(bad = 1, fprintf(stderr, "line %d\n", __LINE__)))
#define RES(fn, p, want) CHECK(fn(f->ws_fd, p, out, sizeof out) == 0 && strcmp(out, want) == 0)
		RES(tgi_path_resolve, "hello.txt", "hello.txt");
		RES(tgi_path_resolve, ".", ".");
		RES(tgi_path_resolve, "src/sub/../a.c", "src/a.c");
		RES(tgi_path_resolve, "src/new/../x/y", "src/x/y");
		RES(tgi_path_resolve, "src/sub/..", "src");
		RES(tgi_path_resolve_parent, "src/new.c", "src/new.c");
		RES(tgi_path_resolve_parent, "src/sub/../b.c", "src/b.c");
#undef RES
		CHECK(tgi_path_resolve(f->ws_fd, "src/../../outside", out, sizeof out) == -EXDEV);
		CHECK(tgi_path_resolve(f->ws_fd, "link_in", out, sizeof out) == -EPERM);
		CHECK(tgi_path_resolve(f->ws_fd, "dir_link/a.c", out, sizeof out) == -EPERM);
#define OPEN(p, fl) tgi_path_open_placed(f->ws_fd, p, strlen(p), fl, norm, sizeof norm, real, \
	                                 sizeof real, &kind, msg, sizeof msg)
		int fd = OPEN("src/sub/../a.c", O_RDONLY);
		CHECK(fd >= 0 && !strcmp(norm, "src/sub/../a.c") && !strcmp(real, "src/a.c"));
		if (fd >= 0)
			close(fd);
		fd = OPEN("./", O_PATH);
		CHECK(fd >= 0 && !strcmp(real, "."));
		if (fd >= 0)
			close(fd);
		CHECK(OPEN("link_in", O_RDONLY) == -1);
		CHECK(OPEN("state_link", O_RDONLY) == -1);
		CHECK(OPEN("src/../.toolgate/ledger.db", O_RDONLY) == -1 && kind == TG_ERR_NOT_PERMITTED);
#undef OPEN
#undef CHECK
		_exit(bad ? 1 : 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		skip();                        /* no seccomp filters here */
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_write_all(void **state)
{
	(void)state;
	int p[2];
	char buf[8];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(tgi_write_all(p[1], "abc", 3), 0);
	assert_int_equal(tgi_write_all(p[1], "", 0), 0);
	assert_int_equal(read(p[0], buf, sizeof buf), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(tgi_write_all(p[0], "x", 1), -EBADF);     /* the read end */
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(tgi_write_all(p[1], "x", 1), -EPIPE);     /* nobody reads */
	signal(SIGPIPE, SIG_DFL);
	close(p[1]);
}

/* ---- tgi_read_all, tgi_dir_read ---- */

static void test_read_all(void **state)
{
	fx *f = *state;
	char *buf;
	size_t n;

	assert_int_equal(tgi_read_all(f->ws_fd, "hello.txt", 14, &buf, &n), 0);
	assert_int_equal(n, 14);
	assert_string_equal(buf, "one\ntwo\nthree\n");
	free(buf);
	assert_int_equal(tgi_read_all(f->ws_fd, "hello.txt", 13, &buf, &n), -EFBIG);
	assert_null(buf);
	assert_int_equal(tgi_read_all(f->ws_fd, "src", 100, &buf, &n), -EISDIR);
	assert_int_equal(tgi_read_all(f->ws_fd, "link_out", 100, &buf, &n), -EXDEV);
	assert_int_equal(tgi_read_all(f->ws_fd, "nope", 100, &buf, &n), -ENOENT);
	assert_int_equal(mkfifoat(f->ws_fd, "fifo", 0644), 0);
	assert_int_equal(tgi_read_all(f->ws_fd, "fifo", 100, &buf, &n), -EINVAL); /* no hang */
	put(f, "zero", "", 0);
	assert_int_equal(tgi_read_all(f->ws_fd, "zero", 0, &buf, &n), 0);
	assert_int_equal(n, 0);
	assert_string_equal(buf, "");
	free(buf);

	/* from an open fd, its current offset on */
	int fd = tgi_open_beneath(f->ws_fd, "hello.txt", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 4, SEEK_SET), 4);
	assert_int_equal(tgi_read_fd(fd, 100, &buf, &n), 0);
	assert_int_equal(n, 10);
	assert_string_equal(buf, "two\nthree\n");
	free(buf);
	close(fd);
	fd = tgi_open_beneath(f->ws_fd, "src", O_RDONLY, 0);
	assert_int_equal(tgi_read_fd(fd, 100, &buf, &n), -EISDIR);
	assert_null(buf);
	close(fd);
	fd = tgi_open_beneath(f->ws_fd, "fifo", O_RDONLY | O_NONBLOCK, 0);
	assert_int_equal(tgi_read_fd(fd, 100, &buf, &n), -EINVAL);
	close(fd);
	fd = tgi_open_beneath(f->ws_fd, "hello.txt", O_PATH, 0);
	assert_int_equal(tgi_read_fd(fd, 100, &buf, &n), -EBADF);    /* O_PATH cannot be read */
	close(fd);
}

static void test_dir_read(void **state)
{
	fx *f = *state;
	tgi_dirent *v;
	size_t n, more;

	int fd = tgi_open_beneath(f->ws_fd, "src", O_PATH | O_DIRECTORY, 0);
	put(f, "src/0.txt", "zz", 2);
	assert_int_equal(tgi_dir_read(fd, 100, &v, &n, &more), 0);
	assert_int_equal(n, 3);
	assert_int_equal(more, 0);
	assert_string_equal(v[0].name, "0.txt");
	assert_true(S_ISREG(v[0].mode));
	assert_int_equal(v[0].size, 2);
	assert_string_equal(v[1].name, "a.c");
	assert_string_equal(v[2].name, "sub");
	assert_true(S_ISDIR(v[2].mode));
	tgi_dirents_free(v, n);

	assert_int_equal(tgi_dir_read(fd, 1, &v, &n, &more), 0);
	assert_int_equal(n, 1);
	assert_int_equal(more, 2);
	tgi_dirents_free(v, n);
	close(fd);

	assert_int_equal(tgi_dir_read(f->ws_fd, 1000, &v, &n, NULL), 0);
	int saw_link = 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, "dir_link") == 0)
			saw_link = S_ISLNK(v[i].mode);         /* lstat, not followed */
	assert_true(saw_link);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(v[i - 1].name, v[i].name) < 0);
	tgi_dirents_free(v, n);

	fd = tgi_open_beneath(f->ws_fd, "hello.txt", O_PATH, 0);
	assert_int_equal(tgi_dir_read(fd, 10, &v, &n, &more), -ENOTDIR);
	close(fd);
}

/* ---- sentences, tool-facing checks, arguments ---- */

static void error_is(int err, const char *path, tg_errkind kind, const char *want)
{
	char msg[512];
	assert_int_equal(tgi_path_error(err, path, msg, sizeof msg), kind);
	if (!strstr(msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", msg, want);
}

static void test_path_error(void **state)
{
	(void)state;
	error_is(-EXDEV, "../x", TG_ERR_NOT_PERMITTED,
	         "path \"../x\" leaves the workspace; do not retry; ask the owner");
	error_is(-ELOOP, "l", TG_ERR_NOT_PERMITTED, "leaves the workspace");
	error_is(-ENOENT, "src/x.c", TG_ERR_TOOL_ERROR, "no such file: \"src/x.c\"");
	error_is(-ENOSPC, "f", TG_ERR_TOOL_ERROR, "the disk is full");
	error_is(-EFBIG, "f", TG_ERR_TOOL_ERROR, "the disk is full");
	error_is(-EISDIR, "src", TG_ERR_INVALID_INPUT, "is a directory");
	error_is(-ENOSYS, "f", TG_ERR_TOOL_ERROR, "no openat2");
	error_is(-EAGAIN, "f", TG_ERR_TRANSIENT, "retry");
	error_is(-EIO, "f", TG_ERR_TOOL_ERROR, "\"f\": input/output error");
	error_is(-ENOENT, "a\nb", TG_ERR_TOOL_ERROR, "\"a b\"");
}

static void test_path_open_read(void **state)
{
	fx *f = *state;
	char norm[PATH_MAX], msg[512];
	tg_errkind kind;

#define OPEN(p) tgi_path_open_read(f->ws_fd, p, strlen(p), O_RDONLY, norm, sizeof norm, &kind, msg, sizeof msg)
	int fd = OPEN("./.git//config");
	assert_true(fd >= 0);                 /* .git is readable */
	assert_string_equal(norm, ".git/config");
	close(fd);
	fd = OPEN("link_in");
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(OPEN(".toolgate/ledger.db"), -1);
	assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	assert_non_null(strstr(msg, "do not retry"));
	assert_int_equal(OPEN("state_link"), -1);          /* resolved into .toolgate */
	assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	assert_int_equal(OPEN("link_out"), -1);
	assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	assert_string_equal(msg, "path \"link_out\" leaves the workspace; do not retry; ask the owner");
	assert_int_equal(OPEN("/etc/passwd"), -1);
	assert_int_equal(kind, TG_ERR_INVALID_INPUT);
	assert_string_equal(msg, "path must be relative to the workspace, got \"/etc/passwd\"");
	assert_int_equal(OPEN("missing"), -1);
	assert_int_equal(kind, TG_ERR_TOOL_ERROR);
#undef OPEN
	assert_int_equal(tgi_path_open_read(f->ws_fd, "a\0b", 3, O_RDONLY, norm, sizeof norm,
	                                    &kind, msg, sizeof msg), -1);
	assert_int_equal(kind, TG_ERR_INVALID_INPUT);
	assert_non_null(strstr(msg, "NUL"));
}

/* A nested .toolgate is refused like the gate's own; a nested .git is
 * readable like the top one. */
static void test_path_open_read_nested(void **state)
{
	fx *f = *state;
	char norm[PATH_MAX], msg[512];
	tg_errkind kind;

	mkdirat(f->ws_fd, "vendor", 0755);
	mkdirat(f->ws_fd, "vendor/.toolgate", 0755);
	mkdirat(f->ws_fd, "vendor/.git", 0755);
	put(f, "vendor/.toolgate/ledger.db", "x", 1);
	put(f, "vendor/.git/config", "x", 1);
	symlinkat("vendor/.toolgate", f->ws_fd, "vstate");
#define OPEN(p) tgi_path_open_read(f->ws_fd, p, strlen(p), O_RDONLY, norm, sizeof norm, &kind, msg, sizeof msg)
	assert_int_equal(OPEN("vendor/.toolgate/ledger.db"), -1);
	assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	assert_int_equal(OPEN("vstate/ledger.db"), -1);          /* resolved into it */
	assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	int fd = OPEN("vendor/.git/config");
	assert_true(fd >= 0);
	close(fd);
#undef OPEN
}

/* Spill files: exactly .toolgate/spill/<uuid>.txt, a regular file of ours
 * with one link, reached without a symlink, is readable; nothing else
 * under .toolgate is. */
static void test_path_open_read_spill(void **state)
{
	fx *f = *state;
	char norm[PATH_MAX], msg[512], buf[16];
	tg_errkind kind;
	static const char spill[] = ".toolgate/spill/" UUID ".txt";

	assert_int_equal(mkdirat(f->ws_fd, ".toolgate/spill", 0700), 0);
	put(f, spill, "full output", 11);
#define OPEN(p) tgi_path_open_read(f->ws_fd, p, strlen(p), O_RDONLY, norm, sizeof norm, &kind, msg, sizeof msg)
#define REFUSED(p) do { \
		if (OPEN(p) != -1) \
			fail_msg("\"%s\" was opened", p); \
		assert_int_equal(kind, TG_ERR_NOT_PERMITTED); \
		assert_non_null(strstr(msg, "do not retry")); \
	} while (0)
	int fd = OPEN(spill);
	assert_true(fd >= 0);
	assert_string_equal(norm, spill);
	assert_int_equal(read(fd, buf, sizeof buf), 11);
	close(fd);
	fd = OPEN("./.toolgate//spill/" UUID ".txt");       /* normalises to the same */
	assert_true(fd >= 0);
	close(fd);
	fd = tgi_path_open_read(f->ws_fd, spill, strlen(spill), O_PATH, norm, sizeof norm, &kind,
	                        msg, sizeof msg);
	assert_true(fd >= 0);
	close(fd);

	put(f, ".toolgate/spill/x.txt", "x", 1);
	REFUSED(".toolgate/spill/x.txt");
	REFUSED(".toolgate/ledger.db");
	REFUSED(".toolgate/spill");
	REFUSED(".toolgate/spill/" UUID ".txt/..");
	REFUSED(".toolgate/spill/0193A5F0-7C1E-7D2A-9B1E-4F0C2A9D1E77.txt");
	REFUSED("src/../.toolgate/spill/" UUID ".txt");
	/* reached through a symlink: refused, whichever way */
	assert_int_equal(symlinkat(spill, f->ws_fd, "spill_link"), 0);
	REFUSED("spill_link");
	assert_int_equal(symlinkat(".toolgate", f->ws_fd, "state_dir_link"), 0);
	REFUSED("state_dir_link/spill/" UUID ".txt");

	/* a symlink, a directory or a hard link at the spill name */
	static const char s1[] = ".toolgate/spill/11111111-1111-1111-1111-111111111111.txt";
	static const char s2[] = ".toolgate/spill/22222222-2222-2222-2222-222222222222.txt";
	static const char s3[] = ".toolgate/spill/33333333-3333-3333-3333-333333333333.txt";
	assert_int_equal(symlinkat("../../hello.txt", f->ws_fd, s1), 0);
	REFUSED(s1);
	assert_int_equal(tgi_path_open_read(f->ws_fd, s1, strlen(s1), O_PATH, norm, sizeof norm,
	                                    &kind, msg, sizeof msg), -1);
	assert_int_equal(mkdirat(f->ws_fd, s2, 0700), 0);
	REFUSED(s2);
	assert_int_equal(linkat(f->ws_fd, "hello.txt", f->ws_fd, s3, 0), 0);
	REFUSED(s3);
#undef REFUSED
#undef OPEN
}

static void test_path_writable(void **state)
{
	fx *f = *state;
	char msg[512];
	tg_errkind kind;

	assert_int_equal(tgi_path_writable(f->ws_fd, "src/new.c", &kind, msg, sizeof msg), 0);
	assert_int_equal(tgi_path_writable(f->ws_fd, "brand/new/dir/x", &kind, msg, sizeof msg), 0);

	const char *refused[] = { ".git", ".git/config", ".toolgate/ledger.db", "git_link/config",
	                          "git_link/hooks/new", "state_link", "new/../.git/x",
	                          "../x", "link_out", "dir_out/x", "link_abs" };
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		if (tgi_path_writable(f->ws_fd, refused[i], &kind, msg, sizeof msg) != -1)
			fail_msg("\"%s\" was writable", refused[i]);
		assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
		assert_non_null(strstr(msg, "do not retry"));
	}
	assert_int_equal(tgi_path_writable(f->ws_fd, ".git/config", &kind, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "read-only to tools; do not retry"));

	/* nested repositories and state, the spill files, and what a rename
	 * would replace: git_link/out_link resolves to hello.txt, but the write
	 * replaces .git/out_link */
	mkdirat(f->ws_fd, "sub", 0755);
	mkdirat(f->ws_fd, "sub/mod", 0755);
	mkdirat(f->ws_fd, "sub/mod/.git", 0755);
	symlinkat("sub/mod/.git", f->ws_fd, "mod_git");
	assert_int_equal(symlinkat("../hello.txt", f->ws_fd, ".git/out_link"), 0);
	const char *more[] = { "sub/mod/.git/hooks/pre-commit", "sub/mod/.git", "mod_git/hooks/x",
	                       "vendor/.toolgate/ledger.db", ".toolgate/spill/" UUID ".txt",
	                       "git_link/out_link" };
	for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
		if (tgi_path_writable(f->ws_fd, more[i], &kind, msg, sizeof msg) != -1)
			fail_msg("\"%s\" was writable", more[i]);
		assert_int_equal(kind, TG_ERR_NOT_PERMITTED);
	}
	/* a symlink at the end that points into .git is refused as well */
	assert_int_equal(tgi_path_writable(f->ws_fd, "git_link", &kind, msg, sizeof msg), -1);
	assert_int_equal(tgi_path_writable(f->ws_fd, "sub/mod/git.txt", &kind, msg, sizeof msg), 0);
}

static void test_args(void **state)
{
	(void)state;
	char msg[256];
	const char *s;
	size_t len;
	long long x;
	json_t *a = json_pack("{s:s#, s:i, s:s, s:f}", "p", "a\0b", (int)3, "n", 5, "str", "x", "real", 1.5);

	assert_int_equal(tgi_arg_str(a, "p", NULL, &s, &len, msg, sizeof msg), 0);
	assert_int_equal(len, 3);
	assert_int_equal(strlen(s), 1);
	assert_int_equal(tgi_arg_str(a, "missing", ".", &s, &len, msg, sizeof msg), 0);
	assert_string_equal(s, ".");
	assert_int_equal(tgi_arg_str(a, "missing", NULL, &s, &len, msg, sizeof msg), -1);
	assert_string_equal(msg, "\"missing\" is required");
	assert_int_equal(tgi_arg_str(a, "n", NULL, &s, &len, msg, sizeof msg), -1);
	assert_string_equal(msg, "\"n\" must be a string");

	assert_int_equal(tgi_arg_int(a, "n", 1, 1, 10, &x, msg, sizeof msg), 0);
	assert_int_equal(x, 5);
	assert_int_equal(tgi_arg_int(a, "missing", 7, 1, 10, &x, msg, sizeof msg), 0);
	assert_int_equal(x, 7);
	assert_int_equal(tgi_arg_int(a, "n", 1, 6, 10, &x, msg, sizeof msg), -1);
	assert_string_equal(msg, "\"n\" must be between 6 and 10, got 5");
	assert_int_equal(tgi_arg_int(a, "real", 1, 1, 10, &x, msg, sizeof msg), -1);
	assert_int_equal(tgi_arg_int(a, "str", 1, 1, 10, &x, msg, sizeof msg), -1);
	json_decref(a);
}

/* ---- directory walks ---- */

/* A policy for the walk tests: ".env" and anything under "private" are
 * refused; every question is logged as "\npath[/]" ("/" for a directory). */
static char asked[8192];

static int test_may_read(const tgi_exec_ctx *ctx, const char *rel, int is_dir)
{
	(void)ctx;
	size_t n = strlen(asked);
	snprintf(asked + n, sizeof asked - n, "%s%s\n", rel, is_dir ? "/" : "");
	return strcmp(rel, ".env") != 0 && strncmp(rel, "private", 7) != 0;
}

static void reset_asked(void)
{
	strcpy(asked, "\n");
}

static int walk_open(const fx *f, tgi_walk_path *w, const char *norm)
{
	int fd = tgi_open_beneath(f->ws_fd, norm, O_PATH, 0);
	assert_true(fd >= 0);
	assert_int_equal(tgi_walk_path_init(w, f->ws_fd, fd, norm), 0);
	return fd;
}

static void test_walk_path(void **state)
{
	fx *f = *state;
	tgi_exec_ctx ctx = { .ws_fd = f->ws_fd, .may_read = test_may_read };
	tgi_walk_path *w = malloc(sizeof *w);

	put(f, ".env", "KEY=1", 5);
	mkdirat(f->ws_fd, "private", 0755);
	symlinkat(".", f->ws_fd, "root_link");
	symlinkat("private", f->ws_fd, "priv_link");

	/* the workspace itself: one form, names as they are */
	int fd = walk_open(f, w, ".");
	close(fd);
	assert_string_equal(w->path, "");
	assert_int_equal(w->root_len, 0);
	assert_int_equal(w->nforms, 1);
	reset_asked();
	assert_int_equal(tgi_walk_may_read(&ctx, w, 0, 1), 1);
	size_t len = tgi_walk_path_push(w, 0, "src");
	assert_int_equal(len, 3);
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 1), 1);
	len = tgi_walk_path_push(w, len, "a.c");
	assert_string_equal(w->path, "src/a.c");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 1);
	len = tgi_walk_path_push(w, 0, ".env");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 0);
	assert_string_equal(asked, "\n./\nsrc/\nsrc/a.c\n.env\n");

	/* a root reached through a symlink: both forms are asked */
	fd = walk_open(f, w, "dir_link");
	close(fd);
	assert_int_equal(w->nforms, 2);
	reset_asked();
	assert_int_equal(tgi_walk_may_read(&ctx, w, w->root_len, 1), 1);
	len = tgi_walk_path_push(w, w->root_len, "sub");
	len = tgi_walk_path_push(w, len, "deep.c");
	assert_string_equal(w->path, "dir_link/sub/deep.c");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 1);
	assert_string_equal(asked, "\nsrc/\ndir_link/\nsrc/sub/deep.c\ndir_link/sub/deep.c\n");

	/* root_link/.env is .env: refused by its resolved form */
	fd = walk_open(f, w, "root_link");
	close(fd);
	len = tgi_walk_path_push(w, w->root_len, ".env");
	assert_string_equal(w->path, "root_link/.env");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 0);
	len = tgi_walk_path_push(w, w->root_len, "hello.txt");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 1);
	fd = walk_open(f, w, "priv_link");
	close(fd);
	assert_int_equal(tgi_walk_may_read(&ctx, w, w->root_len, 1), 0);

	/* ".." as written is applied lexically; here both forms agree */
	fd = walk_open(f, w, "src/..");
	close(fd);
	assert_string_equal(w->path, "src/..");
	assert_int_equal(w->nforms, 1);
	reset_asked();
	len = tgi_walk_path_push(w, w->root_len, "hello.txt");
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 1);
	assert_string_equal(asked, "\nhello.txt\n");

	/* no may_read: fail closed */
	ctx.may_read = NULL;
	assert_int_equal(tgi_walk_may_read(&ctx, w, len, 0), 0);

	/* a name that would not fit */
	char *longname = malloc(PATH_MAX);
	memset(longname, 'n', PATH_MAX - 1);
	longname[PATH_MAX - 1] = '\0';
	assert_int_equal(tgi_walk_path_push(w, w->root_len, longname), 0);
	free(longname);
	free(w);
}

/* ---- names as text (names.c) ---- */

static void text_is(const char *name, size_t n, const char *want)
{
	char out[256], back[256], err[512] = "";
	ssize_t m = tgi_name_text(name, n, out, sizeof out);
	assert_int_equal(m, (ssize_t)strlen(want));
	assert_string_equal(out, want);
	/* and it reads back to the same bytes */
	assert_int_equal(tgi_name_bytes(out, (size_t)m, back, sizeof back, err, sizeof err),
	                 (ssize_t)n);
	assert_memory_equal(back, name, n);
}

static void refused(const char *text, const char *want_said)
{
	char out[256], err[512] = "";
	assert_int_equal(tgi_name_bytes(text, strlen(text), out, sizeof out, err, sizeof err), -1);
	if (!strstr(err, want_said))
		fail_msg("\"%s\": error \"%s\" lacks \"%s\"", text, err, want_said);
}

static void test_name_text(void **state)
{
	/* UTF-8 is its own text form */
	text_is("caf\xC3\xA9.txt", 9, "caf\xC3\xA9.txt");
	text_is("plain/dir\\name", 14, "plain/dir\\name");      /* a lone backslash stays */
	text_is("a\\x41", 5, "a\\x41");                       /* \x41 is not an escape */
	/* a byte that is not UTF-8: \xHH, upper case */
	text_is("caf\xE9.txt", 8, "caf\\xE9.txt");
	text_is("\xFF\xFE", 2, "\\xFF\\xFE");
	text_is("\xC3", 1, "\\xC3");                          /* cut short */
	text_is("\xC0\xAF", 2, "\\xC0\\xAF");                 /* overlong '/' */
	text_is("\xED\xA0\x80", 3, "\\xED\\xA0\\x80");        /* a surrogate */
	/* a backslash that would read as an escape: \x5C */
	text_is("lit\\xE9", 7, "lit\\x5CxE9");
	text_is("lit\\xe9", 7, "lit\\x5Cxe9");
	text_is("a\\x5C", 5, "a\\x5Cx5C");
	text_is("\\x5c\xE9", 5, "\\x5Cx5c\\xE9");

	char small[4];
	assert_int_equal(tgi_name_text("\xE9", 1, small, sizeof small), -1);   /* needs 5 */

	/* only the one spelling is taken */
	refused("caf\\xe9.txt", "write \"caf\\xE9.txt\"");                  /* lower case */
	refused("caf\\xC3\\xA9.txt", "write \"caf\xC3\xA9.txt\"");          /* UTF-8 escaped */
	refused("a\\x5Cb", "write \"a\\b\"");                               /* needless \x5C */
	refused("caf\xE9", "write \"caf\\xE9\"");                           /* raw, not UTF-8 */

	/* paths: the check takes the text form and refuses other spellings */
	check_ok("d\\xE9r/f\\xFF.txt", "d\\xE9r/f\\xFF.txt");
	check_bad("d\\xe9r", 6, "is not how toolgate writes that name; write \"d\\xE9r\"");
	char bytes[PATH_MAX];
	assert_int_equal(tgi_path_bytes("d\\xE9r/f\\xFF.txt", bytes, sizeof bytes), 0);
	assert_string_equal(bytes, "d\xE9r/f\xFF.txt");
	assert_int_equal(tgi_path_bytes("d\\xe9r", bytes, sizeof bytes), -EILSEQ);
	assert_int_equal(tgi_path_bytes("d\\xE9r", bytes, 3), -ENAMETOOLONG);
}

/* A name that is not UTF-8 on disk: opened, resolved and walked as text. */
static void test_names_on_disk(void **state)
{
	fx *f = *state;
	char out[PATH_MAX], norm[PATH_MAX], msg[512];
	tg_errkind kind;

	mkdirat(f->ws_fd, "d\xE9r", 0755);
	put(f, "d\xE9r/f\xFF.txt", "x\n", 2);
	put(f, "lit\\xE9", "literal\n", 8);
	symlinkat("d\xE9r/f\xFF.txt", f->ws_fd, "to_latin1");

	/* resolve and fd_path give text */
	resolves(f, "to_latin1", "d\\xE9r/f\\xFF.txt");
	resolves(f, "d\\xE9r/new", "d\\xE9r/new");
	assert_int_equal(tgi_path_resolve_parent(f->ws_fd, "d\\xE9r/f\\xFF.txt", out, sizeof out), 0);
	assert_string_equal(out, "d\\xE9r/f\\xFF.txt");

	/* open_read takes the text form, and names the file as text */
	int fd = tgi_path_open_read(f->ws_fd, "d\\xE9r/f\\xFF.txt", 16, O_RDONLY, norm, sizeof norm,
	                            &kind, msg, sizeof msg);
	assert_true(fd >= 0);
	assert_int_equal(tgi_fd_path(f->ws_fd, fd, out, sizeof out), 0);
	assert_string_equal(out, "d\\xE9r/f\\xFF.txt");
	close(fd);
	/* a literal backslash name is reached by its own text form, not the escape */
	fd = tgi_path_open_read(f->ws_fd, "lit\\x5CxE9", 10, O_RDONLY, norm, sizeof norm, &kind, msg,
	                        sizeof msg);
	assert_true(fd >= 0);
	char buf[16] = "";
	assert_int_equal(read(fd, buf, sizeof buf - 1), 8);
	assert_string_equal(buf, "literal\n");
	close(fd);
	assert_int_equal(tgi_path_open_read(f->ws_fd, "lit\\xE9", 7, O_RDONLY, norm, sizeof norm,
	                                    &kind, msg, sizeof msg), -1);
	assert_int_equal(tgi_path_writable(f->ws_fd, "d\\xE9r/g\\xFF", &kind, msg, sizeof msg), 0);

	/* a walk names what it finds as text */
	tgi_walk_path *w = malloc(sizeof *w);
	fd = tgi_open_beneath(f->ws_fd, "d\xE9r", O_PATH, 0);
	assert_true(fd >= 0);
	assert_int_equal(tgi_walk_path_init(w, f->ws_fd, fd, "d\\xE9r"), 0);
	assert_string_equal(w->form[0], "d\\xE9r");         /* the kernel's word, as text */
	close(fd);
	size_t len = tgi_walk_path_push(w, w->root_len, "f\xFF.txt");
	assert_string_equal(w->path, "d\\xE9r/f\\xFF.txt");
	assert_int_equal(len, strlen("d\\xE9r/f\\xFF.txt"));
	free(w);
}

/* ---- what the file tools share ---- */

static void test_tool_helpers(void **state)
{
	(void)state;
	tgi_tool_out out;
	tgi_exec_ctx ctx = { .timeout_s = 5 };

	memset(&out, 0, sizeof out);
	out.applied = TGI_APPLIED_YES;
	assert_int_equal(tgi_tool_fail(&out, TG_ERR_TIMEOUT), -1);
	assert_int_equal(out.kind, TG_ERR_TIMEOUT);
	assert_int_equal(out.applied, TGI_APPLIED_NO);

	/* no deadline from the pipeline: timeout_s (else 120 s) from now */
	double now = tgi_now_ms(), d = tgi_tool_deadline(&ctx);
	assert_true(d >= now + 5000 && d < now + 6000);
	ctx.timeout_s = 0;
	d = tgi_tool_deadline(&ctx);
	assert_true(d >= now + 120000 && d < now + 121000);
	ctx.deadline_ms = now - 1;
	assert_true(tgi_tool_deadline(&ctx) == now - 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_check),
		cmocka_unit_test(test_name_text),
		cmocka_unit_test(test_path_within),
		cmocka_unit_test(test_repath_key),
		T(test_open_beneath),
		T(test_fd_path),
		T(test_path_resolve),
		T(test_path_resolve_parent),
		cmocka_unit_test(test_path_protected),
		cmocka_unit_test(test_path_is_spill),
		T(test_write_atomic),
		T(test_write_atomic_efbig),
		T(test_no_openat2_fails_closed),
		T(test_place_without_readback),
		cmocka_unit_test(test_write_all),
		T(test_read_all),
		T(test_dir_read),
		cmocka_unit_test(test_path_error),
		T(test_path_open_read),
		T(test_path_open_read_nested),
		T(test_path_open_read_spill),
		T(test_path_writable),
		cmocka_unit_test(test_args),
		T(test_walk_path),
		T(test_names_on_disk),
		cmocka_unit_test(test_tool_helpers),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
