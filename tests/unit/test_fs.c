/*
 * test_fs.c — workspace-confined file access (src/util/fs.c).
 *
 * Each test gets a fresh temporary workspace with a sibling directory
 * "outside", symlinks that leave it (../outside, /etc/passwd), symlinks that
 * stay inside, .git and .toolgate.  Checks that the kernel refuses every
 * escape, that resolution never leaves, that atomic writes leave no temp
 * file and no partial file (also when the file size limit cuts a write
 * short), and that openat2 missing means refusal, not a fallback.
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
	assert_int_equal(tgi_path_protected("src/.git"), 0);
	assert_int_equal(tgi_path_protected("git"), 0);
	assert_int_equal(tgi_path_protected("."), 0);
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

/* ---- text ---- */

static void appends(const char *in, size_t n, const char *want)
{
	tgi_buf b;
	tgi_buf_init(&b, 1024);
	assert_int_equal(tgi_text_append(&b, in, n), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	tgi_buf_free(&b);
}

#define FFFD "\xEF\xBF\xBD"

static void test_text(void **state)
{
	(void)state;
	size_t chars;

	assert_int_equal(tgi_text_prefix("h\xC3\xA9llo", 6, 2, &chars), 3);
	assert_int_equal(chars, 2);
	assert_int_equal(tgi_text_prefix("ab", 2, 10, &chars), 2);
	assert_int_equal(chars, 2);
	assert_int_equal(tgi_text_prefix("\xF0\x9F\x98\x80!", 5, 1, &chars), 4);
	assert_int_equal(tgi_text_prefix("\xFF\xFE", 2, 1, NULL), 1);   /* one bad byte, one char */

	appends("plain", 5, "plain");
	appends("h\xC3\xA9", 3, "h\xC3\xA9");
	appends("a\xFF" "b", 3, "a" FFFD "b");
	appends("\xE2\x82", 2, FFFD FFFD);                  /* cut short */
	appends("\xED\xA0\x80", 3, FFFD FFFD FFFD);         /* a surrogate */
	appends("\xC0\xAF", 2, FFFD FFFD);                  /* overlong */
	appends("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* past U+10FFFF */

	tgi_buf b;
	tgi_buf_init(&b, 16);
	assert_int_equal(tgi_text_append(&b, "a\0b", 3), 0);   /* NUL is valid UTF-8 */
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.p, "a\0b", 3);
	tgi_buf_free(&b);

	tgi_buf_init(&b, 4);
	assert_int_equal(tgi_text_append(&b, "ab", 2), 0);
	assert_int_equal(tgi_text_append(&b, "c\xFF", 2), -1);    /* 1 + 3 bytes > room */
	assert_int_equal(b.len, 2);
	assert_string_equal(b.p, "ab");
	tgi_buf_free(&b);

	json_t *j = tgi_text_json("x\xFFy", 3);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "x" FFFD "y");
	json_decref(j);
	j = tgi_text_json("", 0);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_check),
		cmocka_unit_test_setup_teardown(test_open_beneath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_resolve, setup, teardown),
		cmocka_unit_test(test_path_protected),
		cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_atomic_efbig, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_openat2_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_read, setup, teardown),
		cmocka_unit_test(test_path_error),
		cmocka_unit_test_setup_teardown(test_path_open_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_writable, setup, teardown),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
