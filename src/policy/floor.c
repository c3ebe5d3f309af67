/*
 * floor.c — the hard floor for paths: compiled in, nothing lifts it.
 *
 * A file tool may never read or write ~/.ssh (the user's, root's, any
 * /home/NAME's), the shadow and sudoers files, or a block device.  The
 * floor judges the absolute path a call touches, workspace + "/" + the
 * path as resolved inside it, because the workspace itself may be $HOME or
 * "/".  A path is floored when it is a listed path or lies under one.
 *
 * Paths are normalised first ("//" and "/./" collapsed, a trailing '/'
 * dropped).  A ".." is judged both ways, as written and folded lexically,
 * and either reading floors the path: resolved paths carry no "..", and if
 * one ever does the floor errs on the side of refusing.  Anything the floor
 * cannot judge (a workspace that is not absolute, a path longer than
 * PATH_MAX) is floored too: it fails closed.
 *
 * Owns: the floor tables and their check.  Must not: open or stat the
 * paths, or consult rules, modes or approvals (the floor is above them).
 */
#include "policy/policy.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SSH_REASON "hard floor: ~/.ssh is never readable or writable by tools"
#define DEV_REASON "hard floor: block devices are never readable or writable by tools"

/*
 * Floored paths, as anchored path globs (glob.c) over the absolute path:
 * each matches the path and everything under it.  The current user's home
 * (from $HOME and from the passwd entry) is checked apart, literally, since
 * a home directory may hold glob characters.  Append only with care: every
 * entry here is refused for every tool under every policy.
 */
static const struct floor_entry {
	const char *glob;
	const char *reason;
} floor_table[] = {
	/* ssh keys and their configuration */
	{ "/root/.ssh", SSH_REASON },
	{ "/home/*/.ssh", SSH_REASON },
	/* password hashes and privilege configuration */
	{ "/etc/shadow", "hard floor: /etc/shadow is never readable or writable by tools" },
	{ "/etc/shadow-", "hard floor: /etc/shadow- is never readable or writable by tools" },
	{ "/etc/gshadow", "hard floor: /etc/gshadow is never readable or writable by tools" },
	{ "/etc/gshadow-", "hard floor: /etc/gshadow- is never readable or writable by tools" },
	{ "/etc/sudoers", "hard floor: /etc/sudoers is never readable or writable by tools" },
	{ "/etc/sudoers.d", "hard floor: /etc/sudoers.d is never readable or writable by tools" },
	/* block devices: disks, partitions, loop, device-mapper and RAID nodes */
	{ "/dev/sd*", DEV_REASON },
	{ "/dev/nvme*", DEV_REASON },
	{ "/dev/vd*", DEV_REASON },
	{ "/dev/xvd*", DEV_REASON },
	{ "/dev/hd*", DEV_REASON },
	{ "/dev/mmcblk*", DEV_REASON },
	{ "/dev/loop*", DEV_REASON },
	{ "/dev/dm-*", DEV_REASON },
	{ "/dev/md*", DEV_REASON },
	{ "/dev/mapper/*", DEV_REASON },
	{ "/dev/disk/*", DEV_REASON },
};

/*
 * Append the segments of s to out (absolute, "/" when empty), skipping
 * empty and "." segments; with fold, ".." drops the previous segment
 * (never above "/").  -1 when out (cap bytes) is too small.
 */
static int append_segments(char *out, size_t cap, size_t *len, const char *s, int fold)
{
	while (*s) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.')) {
			s += n;
			continue;
		}
		if (fold && n == 2 && s[0] == '.' && s[1] == '.') {
			while (*len > 0 && out[*len - 1] != '/')
				(*len)--;
			if (*len > 0)
				(*len)--; /* the '/' before it */
		} else {
			if (*len + 1 + n + 1 > cap)
				return -1;
			out[(*len)++] = '/';
			memcpy(out + *len, s, n);
			*len += n;
		}
		s += n;
	}
	return 0;
}

/* The normalised absolute path base + "/" + rel (rel NULL for base alone;
 * an absolute rel stands alone).  -1 when it does not fit. */
static int join_path(char *out, size_t cap, const char *base, const char *rel, int fold)
{
	size_t len = 0;

	if ((!rel || rel[0] != '/') && append_segments(out, cap, &len, base, fold) < 0)
		return -1;
	if (rel && append_segments(out, cap, &len, rel, fold) < 0)
		return -1;
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return 0;
}

/* Is path the directory dir or under it?  Both normalised. */
static int is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The current user's ~/.ssh directories, normalised: from $HOME and from
 * the passwd entry.  Unset, relative or oversized homes are left out (the
 * table still holds /root and /home/NAME). */
typedef struct home_ssh {
	char   dir[2][PATH_MAX];
	size_t n;
} home_ssh;

static void add_home(home_ssh *h, const char *home)
{
	if (home && home[0] == '/' && join_path(h->dir[h->n], sizeof h->dir[0], home, ".ssh", 1) == 0)
		h->n++;
}

/* The passwd entry's home does not change while the process runs: look it
 * up once (a getpwuid_r reads /etc/passwd, far too slow for every call). */
static pthread_once_t pw_once = PTHREAD_ONCE_INIT;
static char pw_home[PATH_MAX];

static void pw_home_lookup(void)
{
	struct passwd pw, *res = NULL;
	size_t size = 4096;

	for (;;) {
		char *buf = tgi_xmalloc(size);
		int rc = getpwuid_r(getuid(), &pw, buf, size, &res);
		if (rc == 0 && res && strlen(res->pw_dir) < sizeof pw_home)
			memcpy(pw_home, res->pw_dir, strlen(res->pw_dir) + 1);
		free(buf);
		if (rc != ERANGE || size >= (1u << 20))
			break;
		size *= 2;
	}
}

static void home_ssh_dirs(home_ssh *h)
{
	h->n = 0;
	add_home(h, getenv("HOME"));
	pthread_once(&pw_once, pw_home_lookup);
	add_home(h, pw_home[0] ? pw_home : NULL);
}

/* The reason path (absolute, normalised) is floored, or NULL. */
static const char *floored(const char *path, const home_ssh *h)
{
	for (size_t i = 0; i < h->n; i++)
		if (is_under(path, h->dir[i]))
			return SSH_REASON;
	for (size_t i = 0; i < TGI_ARRAY_LEN(floor_table); i++)
		if (tgi_path_glob(floor_table[i].glob, path))
			return floor_table[i].reason;
	return NULL;
}

static int floor_with(char *reason, size_t cap, const char *why)
{
	if (reason && cap)
		tgi_snprintf(reason, cap, "%s", why);
	return 1;
}

int tgi_floor_paths(const char *workspace, const char *const *resolved, size_t n,
                    char *reason, size_t cap)
{
	char path[PATH_MAX];
	home_ssh h;

	if (n == 0 || !resolved)
		return 0;
	if (!workspace || workspace[0] != '/')
		return floor_with(reason, cap, "hard floor: the workspace is not an absolute path, so no path can be checked");
	home_ssh_dirs(&h);
	for (size_t i = 0; i < n; i++) {
		if (!resolved[i])
			continue; /* unresolvable: the tool refuses it itself */
		for (int fold = 0; fold <= 1; fold++) {
			if (join_path(path, sizeof path, workspace, resolved[i], fold) < 0)
				return floor_with(reason, cap, "hard floor: a path is too long to check");
			const char *why = floored(path, &h);
			if (why)
				return floor_with(reason, cap, why);
		}
	}
	return 0;
}
