/*
 * test_hostpath.c — could a program path have been planted? (hostpath.h)
 *
 * The system's own programs pass (/usr/bin/env, and /bin/sh through the
 * root-owned links /bin -> usr/bin and sh -> dash); a file, or a link to
 * /usr/bin/env, in /tmp does not, nor anything in a place the gate avoids
 * (given as written, through "..", or through a symlink), nor what does
 * not exist or is not a regular file; nothing passes when commands run
 * unsandboxed as root.  As root, a tree made under the build directory
 * (root-owned all the way up) shows each rule on its own: a directory or
 * file owned by another user, or writable by its group or by others, a
 * link in a good directory to a file in a bad one, a link loop.  The
 * unprivileged side runs in tests/integration/program_paths.sh.
 *
 * Owns: $HOME and $TMPDIR for its own process, a directory under /tmp and
 * one under the build directory, removed at the end.  Must not: touch
 * anything else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/hostpath.h"
#include "util/util.h"

static char g_root[PATH_MAX];

static tgi_hostpath *avoiding(const char *a, const char *b)
{
	const char *list[] = { a, b };
	return tgi_hostpath_new(list, (a != NULL) + (b != NULL), 0);
}

/* Trusted or not, and the reason holds want (NULL: trusted). */
static void expect(const tgi_hostpath *hp, const char *path, const char *want)
{
	char why[512] = "";
	int ok = tgi_hostpath_trusted(hp, path, why, sizeof why);
	if (!want && !ok)
		fail_msg("%s: refused (%s)", path, why);
	if (want && ok)
		fail_msg("%s: trusted, want refused for \"%s\"", path, want);
	if (want && !strstr(why, want))
		fail_msg("%s: reason \"%s\", want \"%s\"", path, why, want);
}

static void touch(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_system_programs(void **state)
{
	tgi_hostpath *hp = avoiding("/tmp", "/var/tmp");
	expect(hp, "/usr/bin/env", NULL);
	expect(hp, "/bin/sh", NULL);               /* two root-owned links */
	expect(hp, "/usr/bin/../bin/env", NULL);   /* ".." after a real directory */
	expect(hp, "//usr/./bin//env", NULL);
	expect(hp, "/usr/bin/no-such-program", "No such file");
	expect(hp, "/usr/bin", "/usr/bin is not a regular file");
	expect(hp, "/usr/bin/", "/usr/bin is not a regular file");
	expect(hp, "/usr/bin/.", "names a directory");
	expect(hp, "/", "names a directory");
	expect(hp, "/usr/bin/env/x", "not a directory");
	expect(hp, "/proc/self/exe", "is in /proc");
	expect(hp, "/dev/fd/0", "is in /proc");                /* /dev/fd -> /proc/self/fd */
	expect(hp, "usr/bin/env", "not an absolute path");
	expect(hp, "", "not an absolute path");
	expect(NULL, "/usr/bin/env", "not an absolute path");
	assert_int_equal(tgi_hostpath_trusted(hp, NULL, NULL, 0), 0);
	assert_int_equal(tgi_hostpath_ep(hp, "/usr/bin/env"), 1);
	char longp[PATH_MAX + 8];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 1] = '\0';
	expect(hp, longp, "too long");
	tgi_hostpath_free(hp);
	tgi_hostpath_free(NULL);
}

static void test_avoided_places(void **state)
{
	tgi_hostpath *hp = avoiding("/usr", NULL);
	expect(hp, "/usr/bin/env", "/usr is in /usr (the workspace, a home or a temp directory)");
	expect(hp, "/bin/sh", "is in /usr");                   /* reached through /bin -> usr/bin */
	tgi_hostpath_free(hp);
	hp = avoiding("/usr/lib/../bin/.", NULL);               /* as written, folded */
	expect(hp, "/usr/bin/env", "is in /usr/bin");
	tgi_hostpath_free(hp);
	hp = avoiding("/bin", NULL);                            /* and as its real path */
	expect(hp, "/usr/bin/env", "is in /usr/bin");
	tgi_hostpath_free(hp);
	hp = avoiding("/usr/bin/env", NULL);                    /* the file itself */
	expect(hp, "/usr/bin/env", "/usr/bin/env is in /usr/bin/env");
	tgi_hostpath_free(hp);
	hp = avoiding("/", NULL);
	expect(hp, "/usr/bin/env", "/ is in /");
	tgi_hostpath_free(hp);
	hp = avoiding("relative/dir", "/usr/binx");             /* ignored; a prefix is not a parent */
	expect(hp, "/usr/bin/env", NULL);
	tgi_hostpath_free(hp);

	/* the gate's list: workspace, homes, temp dirs */
	const char *home = getenv("HOME"), *tmp = getenv("TMPDIR");
	char *sh = home ? tgi_strdup(home) : NULL, *st = tmp ? tgi_strdup(tmp) : NULL;
	setenv("HOME", "/nonexistent-home", 1);
	unsetenv("TMPDIR");
	hp = tgi_hostpath_for_gate("/usr/bin", 0);
	expect(hp, "/usr/bin/env", "is in /usr/bin");
	expect(hp, "/usr/sbin/nologin", NULL);
	tgi_hostpath_free(hp);
	setenv("HOME", "/usr/sbin", 1);
	setenv("TMPDIR", "/usr/lib", 1);
	hp = tgi_hostpath_for_gate("/nonexistent-workspace", 0);
	expect(hp, "/usr/sbin/nologin", "is in /usr/sbin");
	expect(hp, "/usr/bin/env", NULL);
	tgi_hostpath_free(hp);
	if (sh)
		setenv("HOME", sh, 1);
	else
		unsetenv("HOME");
	if (st)
		setenv("TMPDIR", st, 1);
	else
		unsetenv("TMPDIR");
	free(sh);
	free(st);
}

static void test_temp_dir(void **state)
{
	char dir[] = "/tmp/test_hostpath.XXXXXX", file[64], link[64];
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/git", dir);
	snprintf(link, sizeof link, "%s/env", dir);
	touch(file, 0755);
	assert_int_equal(symlink("/usr/bin/env", link), 0);

	tgi_hostpath *hp = avoiding("/tmp", NULL);
	expect(hp, file, "is in /tmp");
	expect(hp, link, "is in /tmp");            /* a link there could be re-pointed */
	tgi_hostpath_free(hp);
	hp = avoiding(NULL, NULL);                 /* even unlisted, /tmp is anyone's */
	expect(hp, file, "/tmp is writable by others");
	expect(hp, link, "/tmp is writable by others");
	tgi_hostpath_free(hp);

	/* commands unsandboxed as root can write everything */
	hp = tgi_hostpath_new(NULL, 0, 1);
	if (geteuid() == 0)
		expect(hp, "/usr/bin/env", "unsandboxed as root");
	else
		expect(hp, "/usr/bin/env", NULL);
	tgi_hostpath_free(hp);
	unlink(link);
	unlink(file);
	rmdir(dir);
}

/* As root: a tree under the build directory, each rule on its own. */
static void test_rules_one_by_one(void **state)
{
	char base[PATH_MAX + 64], d[PATH_MAX + 128], f[PATH_MAX + 160], l[PATH_MAX + 160], why[512];
	snprintf(base, sizeof base, "%s/build", g_root);
	tgi_hostpath *hp = avoiding("/tmp", NULL);
	snprintf(f, sizeof f, "%s/.", base);
	if (geteuid() != 0 || !tgi_hostpath_trusted(hp, "/usr/bin/env", why, sizeof why)) {
		printf("# not root: the unprivileged side is in tests/integration/program_paths.sh\n");
		tgi_hostpath_free(hp);
		return;
	}
	snprintf(d, sizeof d, "%s/hostpath.XXXXXX", base);
	assert_non_null(mkdtemp(d));
	snprintf(f, sizeof f, "%s/git", d);
	touch(f, 0755);
	/* is the build directory itself a place nobody else can write? */
	if (!tgi_hostpath_trusted(hp, f, why, sizeof why)) {
		printf("# the build directory is not root's alone (%s): nothing to build on\n", why);
		goto out;
	}
	assert_int_equal(chmod(d, 0775), 0);
	expect(hp, f, "writable by its group");
	assert_int_equal(chmod(d, 0757), 0);
	expect(hp, f, "writable by others");
	assert_int_equal(chmod(d, 0755), 0);
	assert_int_equal(chown(d, 65534, 65534), 0);
	expect(hp, f, "is not owned by root");
	assert_int_equal(chown(d, 0, 0), 0);
	expect(hp, f, NULL);

	assert_int_equal(chmod(f, 0775), 0);
	expect(hp, f, "writable by its group");
	assert_int_equal(chmod(f, 0757), 0);
	expect(hp, f, "writable by others");
	assert_int_equal(chmod(f, 0755), 0);
	assert_int_equal(chown(f, 65534, 65534), 0);
	expect(hp, f, "is not owned by root");
	assert_int_equal(chown(f, 0, 0), 0);

	/* links in a good directory: followed, and the target judged */
	snprintf(l, sizeof l, "%s/to-env", d);
	assert_int_equal(symlink("/usr/bin/env", l), 0);
	expect(hp, l, NULL);
	unlink(l);
	assert_int_equal(symlink("../../../../../../../../../../../../tmp", l), 0);
	snprintf(l, sizeof l, "%s/to-env/x", d);
	expect(hp, l, "is in /tmp");
	snprintf(l, sizeof l, "%s/to-env", d);
	unlink(l);
	assert_int_equal(symlink("git", l), 0);       /* relative, in the same directory */
	expect(hp, l, NULL);
	unlink(l);
	assert_int_equal(symlink("to-env", l), 0);    /* a loop */
	expect(hp, l, "too many symlinks");
	unlink(l);
	mkfifo(l, 0600);
	expect(hp, l, "not a regular file");
	unlink(l);
out:
	unlink(f);
	rmdir(d);
	tgi_hostpath_free(hp);
}

int main(void)
{
	const char *root = getenv("TOOLGATE_ROOT");
	if (!realpath(root && *root ? root : ".", g_root)) {
		perror("toolgate root");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_programs),
		cmocka_unit_test(test_avoided_places),
		cmocka_unit_test(test_temp_dir),
		cmocka_unit_test(test_rules_one_by_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
