/*
 * test_floor.c — the hard floor for paths.
 *
 * The floor judges workspace + resolved path, so the same relative path is
 * floored or not depending on the workspace ("/" and $HOME are the cases
 * that matter).  $HOME is set per test to a directory the compiled-in
 * table does not cover, so a match there proves the $HOME check itself.
 * Nothing here touches the filesystem: the floor never looks at the disk.
 *
 * Owns: $HOME for its own process.  Must not: touch the filesystem or the
 * network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pwd.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/util.h"

#define SSH "hard floor: ~/.ssh is never readable or writable by tools"
#define DEV "hard floor: block devices are never readable or writable by tools"

typedef struct floor_case {
	const char *workspace;
	const char *resolved;
	const char *reason; /* NULL: not floored */
} floor_case;

static const floor_case cases[] = {
	/* the workspace is $HOME (/srv/tester in these tests) */
	{ "/srv/tester", ".ssh", SSH },
	{ "/srv/tester", ".ssh/id_ed25519", SSH },
	{ "/srv/tester", ".ssh/config", SSH },
	{ "/srv/tester", ".", NULL },
	{ "/srv/tester", "project/src/main.c", NULL },
	{ "/srv/tester", ".sshx", NULL },
	{ "/srv/tester", "project/.ssh", NULL },
	/* the workspace is ~/.ssh itself, or under it */
	{ "/srv/tester/.ssh", ".", SSH },
	{ "/srv/tester/.ssh", "known_hosts", SSH },
	{ "/srv/tester/.ssh/keys", "a", SSH },
	/* the workspace is "/" */
	{ "/", ".", NULL },
	{ "/", "srv/tester/.ssh/id_rsa", SSH },
	{ "/", "root/.ssh", SSH },
	{ "/", "root/.ssh/authorized_keys", SSH },
	{ "/", "root/notes.txt", NULL },
	{ "/", "home/alice/.ssh", SSH },
	{ "/", "home/alice/.ssh/id_rsa", SSH },
	{ "/", "home/alice/.sshrc", NULL },
	{ "/", "home/alice/code/x.c", NULL },
	{ "/", "etc/shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	{ "/", "etc/shadow-", "hard floor: /etc/shadow- is never readable or writable by tools" },
	{ "/", "etc/gshadow", "hard floor: /etc/gshadow is never readable or writable by tools" },
	{ "/", "etc/gshadow-", "hard floor: /etc/gshadow- is never readable or writable by tools" },
	{ "/", "etc/sudoers", "hard floor: /etc/sudoers is never readable or writable by tools" },
	{ "/", "etc/sudoers.d", "hard floor: /etc/sudoers.d is never readable or writable by tools" },
	{ "/", "etc/sudoers.d/90-cloud", "hard floor: /etc/sudoers.d is never readable or writable by tools" },
	{ "/", "etc/passwd", NULL },
	{ "/", "etc/shadowsocks.json", NULL },
	{ "/", "etc", NULL },
	/* block devices */
	{ "/", "dev/sda", DEV },
	{ "/", "dev/sda1", DEV },
	{ "/", "dev/nvme0n1p2", DEV },
	{ "/", "dev/vda", DEV },
	{ "/", "dev/xvdb", DEV },
	{ "/", "dev/hda", DEV },
	{ "/", "dev/mmcblk0p1", DEV },
	{ "/", "dev/loop7", DEV },
	{ "/", "dev/dm-0", DEV },
	{ "/", "dev/md127", DEV },
	{ "/", "dev/md/root", DEV },
	{ "/", "dev/mapper/vg-root", DEV },
	{ "/", "dev/disk/by-uuid/1234", DEV },
	{ "/", "dev/null", NULL },
	{ "/", "dev/tty", NULL },
	{ "/", "dev/urandom", NULL },
	{ "/", "dev/disk", NULL },
	{ "/dev", "sdb", DEV },
	{ "/dev", ".", NULL },
	/* other workspaces reaching the same files */
	{ "/etc", "shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	{ "/etc", ".", NULL },
	{ "/home", "bob/.ssh/id_rsa", SSH },
	{ "/home/bob", ".ssh", SSH },
	/* normalisation: "//", "/./", a trailing '/', ".." both ways */
	{ "//", "etc//shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	{ "/./etc/./", "./shadow/", "hard floor: /etc/shadow is never readable or writable by tools" },
	{ "/srv//tester/", ".//.ssh/./id_rsa", SSH },
	{ "/srv/tester/project", "../.ssh/id_rsa", SSH },
	{ "/srv/tester/.ssh", "../project", SSH },
	{ "/", "../../etc/shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	/* an absolute resolved path stands alone */
	{ "/srv/work", "/etc/shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	/* a workspace that is not absolute cannot be judged: fail closed */
	{ "relative/ws", "a.txt", "hard floor: the workspace is not an absolute path, so no path can be checked" },
	{ "", "a.txt", "hard floor: the workspace is not an absolute path, so no path can be checked" },
};

static char *saved_home;

static int setup(void **state)
{
	const char *h = getenv("HOME");
	saved_home = h ? tgi_strdup(h) : NULL;
	setenv("HOME", "/srv/tester", 1);
	return 0;
}

static int teardown(void **state)
{
	if (saved_home)
		setenv("HOME", saved_home, 1);
	else
		unsetenv("HOME");
	free(saved_home);
	return 0;
}

static void test_floor_table(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		const floor_case *c = &cases[i];
		char reason[256] = "";
		const char *const res[] = { c->resolved };
		int got = tgi_floor_paths(c->workspace, res, 1, reason, sizeof reason);
		if (got != (c->reason != NULL) || (c->reason && strcmp(reason, c->reason))) {
			fprintf(stderr, "floor \"%s\" + \"%s\": got %d \"%s\", want %s\n", c->workspace,
			        c->resolved, got, reason, c->reason ? c->reason : "not floored");
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* Any one floored path floors the call; unresolved entries are skipped. */
static void test_floor_many(void **state)
{
	char reason[256];
	const char *const res[] = { "a.txt", NULL, ".ssh/id_rsa", "b.txt" };

	assert_int_equal(tgi_floor_paths("/srv/tester", res, 4, reason, sizeof reason), 1);
	assert_string_equal(reason, SSH);
	assert_int_equal(tgi_floor_paths("/srv/tester", res, 2, reason, sizeof reason), 0);
	assert_int_equal(tgi_floor_paths("/srv/tester", res, 0, reason, sizeof reason), 0);
	assert_int_equal(tgi_floor_paths("/srv/tester", NULL, 3, reason, sizeof reason), 0);
	/* no room for a reason is still a floor */
	assert_int_equal(tgi_floor_paths("/srv/tester", res, 4, NULL, 0), 1);
	char tiny[12];
	assert_int_equal(tgi_floor_paths("/srv/tester", res, 4, tiny, sizeof tiny), 1);
	assert_int_equal(strlen(tiny), sizeof tiny - 1);
	assert_int_equal(tgi_floor_paths(NULL, res, 4, reason, sizeof reason), 1);
}

/* $HOME is taken literally: glob characters in it are not globs. */
static void test_home_literal(void **state)
{
	char reason[256];
	const char *const ssh[] = { ".ssh/id_rsa" };

	setenv("HOME", "/srv/a[b]*", 1);
	assert_int_equal(tgi_floor_paths("/srv/a[b]*", ssh, 1, reason, sizeof reason), 1);
	assert_string_equal(reason, SSH);
	assert_int_equal(tgi_floor_paths("/srv/ab", ssh, 1, reason, sizeof reason), 0);
	assert_int_equal(tgi_floor_paths("/srv/a[b]xyz", ssh, 1, reason, sizeof reason), 0);

	/* a home of "/" floors /.ssh */
	setenv("HOME", "/", 1);
	assert_int_equal(tgi_floor_paths("/", ssh, 1, reason, sizeof reason), 1);
	setenv("HOME", "/srv/tester", 1);
}

/* Without $HOME (or with a relative one) the passwd entry's home counts. */
static void test_passwd_home(void **state)
{
	char reason[256];
	const char *const ssh[] = { ".ssh/id_rsa" };
	struct passwd *pw = getpwuid(getuid());

	unsetenv("HOME");
	assert_int_equal(tgi_floor_paths("/srv/tester", ssh, 1, reason, sizeof reason), 0);
	if (pw && pw->pw_dir && pw->pw_dir[0] == '/') {
		assert_int_equal(tgi_floor_paths(pw->pw_dir, ssh, 1, reason, sizeof reason), 1);
		assert_string_equal(reason, SSH);
	}
	setenv("HOME", "relative", 1);
	assert_int_equal(tgi_floor_paths("/srv/tester", ssh, 1, reason, sizeof reason), 0);
	setenv("HOME", "/srv/tester", 1);
}

/* A path too long to build is floored rather than waved through. */
static void test_too_long(void **state)
{
	char reason[256];
	size_t n = 5000;
	char *big = tgi_xmalloc(n + 1);

	memset(big, 'a', n);
	big[n] = '\0';
	for (size_t i = 100; i < n; i += 100)
		big[i] = '/';
	const char *const res[] = { big };
	assert_int_equal(tgi_floor_paths("/srv/tester", res, 1, reason, sizeof reason), 1);
	assert_non_null(strstr(reason, "too long"));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor_table),
		cmocka_unit_test(test_floor_many),
		cmocka_unit_test(test_home_literal),
		cmocka_unit_test(test_passwd_home),
		cmocka_unit_test(test_too_long),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
