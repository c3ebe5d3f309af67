/*
 * sbview.c — what a sandboxed process sees (sbview.h, sandbox.h): the
 * system read-only with its secrets hidden, a fresh /dev and /proc with
 * the kernel's settings read-only, private /tmp, /var/tmp, /run and home,
 * the workspace, the private tmp dir and the profile's paths; inside the
 * writable ones, .git and the gate's own files read-only.
 *
 * Every path is resolved first (bubblewrap mounts at a path inside its new
 * root, where a symlink may point elsewhere).  The list is sorted parents
 * first (by depth, then by when each was added), one mount per path (the
 * stricter wins: hidden, then read-only, then writable), and:
 *   - a hidden path wins over everything below it: what lies under a mask
 *     is not shown (the workspace or tmp dir under one is refused);
 *   - a mount whose path lies under a host directory of the view (not a
 *     tmpfs of the sandbox's own) must exist there: bubblewrap would make
 *     it in the host's tree, so one that does not exist is left out;
 *     the workspace and tmp dir always exist.
 *
 * The gate's own files: in a writable root R, the top-most entry below R
 * that leads to the file is bound read-only (a mount point cannot be
 * renamed, so no directory above the file can be swapped from inside);
 * one that does not exist is left to the audit (sbaudit.h: created during
 * the run, removed after).  A unix socket among them is hidden, since a
 * read-only mount does not stop connect().
 *
 * /etc's secrets: the fixed list below, and every entry of /etc, /etc/ssh,
 * /etc/ssl and /etc/security that others may not read (what the system
 * keeps from other users is kept from a sandboxed root too).
 *
 * Owns: the view.  Must not: mount, exec or create anything on the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/sbview.h"
#include "util/util.h"

/* The system, shown read-only: where programs, libraries, their data and
 * the system's configuration live.  /nix/store is world-readable by
 * design (Nix and Guix keep toolchains there). */
static const char *const system_dirs[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc",
	"/nix/store", "/gnu/store",
};

/* Hidden whatever their mode: passwords, host keys, private keys, who may
 * use sudo. */
static const char *const etc_secrets[] = {
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
	"/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd", "/etc/krb5.keytab",
	"/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/letsencrypt",
};
/* Directories whose entries others may not read are hidden. */
static const char *const etc_scanned[] = {"/etc", "/etc/ssh", "/etc/ssl", "/etc/security"};

/* The kernel's settings: read-only (Docker's list; bubblewrap itself
 * mounts /proc/irq and /proc/bus read-only for root).  Their files are
 * root's: a sandbox of another user cannot write them anyway, so for it
 * only /proc/sys and sysrq-trigger are mounted (each mount costs). */
static const char *const proc_read_only[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/fs",
};
#define PROC_RO_ANYONE 2
/* The kernel's secrets and internals: hidden (Docker's list), when this
 * user could read them. */
static const char *const proc_hidden[] = {
	"/proc/keys", "/proc/kcore", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/latency_stats", "/proc/acpi", "/proc/asound", "/proc/scsi",
};
/* Of /sys, what programs read to size themselves (the CPUs); the rest of
 * it (firmware, debug and tracing, devices) is not shown. */
static const char *const sys_shown[] = {"/sys/devices/system/cpu"};

/* ---- paths ---- */

int tgi_sbview_clean(const char *what, const char *p, char *out, size_t cap, char *err,
                     size_t errlen)
{
	char shown[128];
	size_t n = p ? strlen(p) : 0;
	tgi_sanitize(shown, sizeof shown, p ? p : "");
	if (!n || p[0] != '/') {
		tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" is not an absolute path", what,
		             shown);
		return -1;
	}
	if (n >= cap) {
		tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" is too long", what, shown);
		return -1;
	}
	while (n > 1 && p[n - 1] == '/')
		n--;
	for (const char *c = p; c < p + n;) {
		while (*c == '/')
			c++;
		size_t len = strcspn(c, "/");
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) {
			tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" has a \".\" or \"..\" part",
			             what, shown);
			return -1;
		}
		c += len;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/* Does p have a "." or ".." part? */
static int has_dots(const char *p)
{
	for (const char *c = p; *c;) {
		while (*c == '/')
			c++;
		size_t len = strcspn(c, "/");
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return 1;
		c += len;
	}
	return 0;
}

/*
 * path with every symlink resolved, into out (PATH_MAX).  A dangling
 * symlink is followed to where it points; for a path that does not exist,
 * its deepest existing ancestor is resolved and the rest appended (a rest
 * with "." or ".." parts is refused).  0, or -1 with errno.
 */
static int canon(const char *path, char *out)
{
	char cur[PATH_MAX], head[PATH_MAX], link[PATH_MAX], next[PATH_MAX * 2];
	struct stat st;
	tgi_snprintf(cur, sizeof cur, "%s", path);
	for (int hops = 0;; hops++) {
		if (realpath(cur, out))
			return 0;
		if (errno != ENOENT && errno != ENOTDIR)
			return -1;
		if (hops >= 40 || lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
			break;
		ssize_t n = readlink(cur, link, sizeof link - 1);
		if (n <= 0)
			break;
		link[n] = '\0';
		const char *slash = strrchr(cur, '/');
		if (link[0] == '/')
			tgi_snprintf(next, sizeof next, "%s", link);
		else
			tgi_snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, link);
		if (strlen(next) >= PATH_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(cur, next, strlen(next) + 1);
	}
	tgi_snprintf(head, sizeof head, "%s", cur);
	for (char *slash; (slash = strrchr(head, '/')) && slash != head;) {
		*slash = '\0';
		if (realpath(head, out)) {
			const char *rest = cur + (slash - head);
			size_t n = strcmp(out, "/") ? strlen(out) : 0;
			if (n + strlen(rest) >= PATH_MAX || has_dots(rest)) {
				errno = ENAMETOOLONG;
				return -1;
			}
			memcpy(out + n, rest, strlen(rest) + 1);
			return 0;
		}
		if (errno != ENOENT && errno != ENOTDIR)
			return -1;
	}
	if (has_dots(cur)) {
		errno = EINVAL;
		return -1;
	}
	tgi_snprintf(out, PATH_MAX, "%s", cur);
	return 0;
}

/* 1 if p is root or lies beneath it. */
static int beneath(const char *p, const char *root)
{
	size_t n = strlen(root);
	if (n == 1)
		return 1;
	return !strncmp(p, root, n) && (p[n] == '/' || p[n] == '\0');
}

static size_t depth(const char *p)
{
	size_t d = 0;
	if (!strcmp(p, "/"))
		return 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int exists(const char *p, struct stat *st)
{
	struct stat tmp;
	return lstat(p, st ? st : &tmp) == 0;
}

static int empty_dir(const char *p)
{
	DIR *d = opendir(p);
	int empty = 1;
	for (struct dirent *e; d && empty && (e = readdir(d));)
		empty = e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, ".."));
	if (d)
		closedir(d);
	return empty;
}

/* ---- building ---- */

static int rank(tgi_sbv_kind k)
{
	switch (k) {
	case TGI_SBV_HIDE_DIR:
	case TGI_SBV_HIDE_FILE: return 5;
	case TGI_SBV_RO:        return 4;
	case TGI_SBV_RW:        return 3;
	case TGI_SBV_TMPFS:     return 2;
	default:                return 1;
	}
}

static void add(tgi_sbview *v, tgi_sbv_kind kind, const char *dest, const char *target,
                const char *why)
{
	for (size_t i = 0; i < v->nops; i++) {
		tgi_sbv_op *o = &v->ops[i];
		if (strcmp(o->dest, dest))
			continue;
		if (rank(kind) > rank(o->kind)) {      /* the stricter wins */
			o->kind = kind;
			free(o->target);
			o->target = tgi_strdup(target);
			o->why = why;
		}
		return;
	}
	if (v->nops == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		v->ops = tgi_xrealloc(v->ops, v->cap * sizeof *v->ops);
	}
	v->ops[v->nops] = (tgi_sbv_op){.kind = kind, .dest = tgi_strdup(dest),
	                               .target = tgi_strdup(target), .why = why,
	                               .order = (unsigned)v->nops};
	v->nops++;
}

static void drop(tgi_sbview *v, size_t i)
{
	free(v->ops[i].dest);
	free(v->ops[i].target);
	memmove(&v->ops[i], &v->ops[i + 1], (v->nops - i - 1) * sizeof *v->ops);
	v->nops--;
}

static int op_cmp(const void *a, const void *b)
{
	const tgi_sbv_op *x = a, *y = b;
	size_t dx = depth(x->dest), dy = depth(y->dest);
	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The op whose path is the nearest proper ancestor of ops[i]'s, or -1. */
static long container(const tgi_sbview *v, size_t i)
{
	long best = -1;
	size_t bd = 0;
	for (size_t j = 0; j < v->nops; j++) {
		if (j == i || !beneath(v->ops[i].dest, v->ops[j].dest) ||
		    !strcmp(v->ops[i].dest, v->ops[j].dest))
			continue;
		size_t d = depth(v->ops[j].dest) + 1;   /* "/" is depth 0 */
		if (best < 0 || d > bd) {
			best = (long)j;
			bd = d;
		}
	}
	return best;
}

static int host_backed(tgi_sbv_kind k)
{
	return k == TGI_SBV_RO || k == TGI_SBV_RW || k == TGI_SBV_PROC || k == TGI_SBV_DEV;
}

static int is_hidden(tgi_sbv_kind k)
{
	return k == TGI_SBV_HIDE_DIR || k == TGI_SBV_HIDE_FILE;
}

/* Hide p (resolved, existing) as what it is; sealed: a directory is
 * read-only too (the spec's masks).  A system path this user cannot read
 * needs no mount (unsealed ones only: a mask is the caller's word). */
static void hide(tgi_sbview *v, const char *p, const char *why, int sealed)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		return;
	if (!sealed && faccessat(AT_FDCWD, p, R_OK, AT_EACCESS) < 0) {
		tgi_strv_push(&v->unreadable, tgi_strdup(p));
		return;
	}
	add(v, S_ISDIR(st.st_mode) ? TGI_SBV_HIDE_DIR : TGI_SBV_HIDE_FILE, p, NULL, why);
	for (size_t i = 0; sealed && i < v->nops; i++)
		if (!strcmp(v->ops[i].dest, p))
			v->ops[i].sealed = 1;
}

static void add_system(tgi_sbview *v)
{
	char real[PATH_MAX], link[PATH_MAX];
	for (size_t i = 0; i < TGI_ARRAY_LEN(system_dirs); i++) {
		struct stat st;
		const char *p = system_dirs[i];
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (!strcmp(p, "/opt") && empty_dir(p))
				continue;                 /* nothing to show: no mount */
			add(v, TGI_SBV_RO, p, NULL, "system");
			continue;
		}
		if (!S_ISLNK(st.st_mode) || !realpath(p, real))
			continue;
		ssize_t n = readlink(p, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		add(v, TGI_SBV_SYMLINK, p, link, "system");
		int inside = 0;                   /* /bin -> usr/bin: shown already */
		for (size_t j = 0; j < TGI_ARRAY_LEN(system_dirs) && !inside; j++)
			inside = strcmp(system_dirs[j], p) && beneath(real, system_dirs[j]);
		struct stat rs;
		if (!inside && stat(real, &rs) == 0 && S_ISDIR(rs.st_mode))
			add(v, TGI_SBV_RO, real, NULL, "system");
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(sys_shown); i++)
		if (exists(sys_shown[i], NULL))
			add(v, TGI_SBV_RO, sys_shown[i], NULL, "system");
	add(v, TGI_SBV_DEV, "/dev", NULL, "devices");
	add(v, TGI_SBV_PROC, "/proc", NULL, "processes");
	size_t nro = geteuid() == 0 ? TGI_ARRAY_LEN(proc_read_only) : PROC_RO_ANYONE;
	for (size_t i = 0; i < nro; i++)
		if (exists(proc_read_only[i], NULL))
			add(v, TGI_SBV_RO, proc_read_only[i], NULL, "kernel settings");
	for (size_t i = 0; i < TGI_ARRAY_LEN(proc_hidden); i++)
		hide(v, proc_hidden[i], "kernel internals", 0);
}

/* passwd.lock, .pwd.lock: the lock files of the tools that edit /etc. */
static int lock_name(const char *name)
{
	size_t n = strlen(name);
	return n > 5 && !strcmp(name + n - 5, ".lock");
}

static void add_etc_secrets(tgi_sbview *v)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(etc_secrets); i++)
		hide(v, etc_secrets[i], "secret", 0);
	for (size_t i = 0; i < TGI_ARRAY_LEN(etc_scanned); i++) {
		DIR *d = opendir(etc_scanned[i]);
		if (!d)
			continue;
		for (struct dirent *e; (e = readdir(d));) {
			struct stat st;
			if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
				continue;
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    S_ISLNK(st.st_mode) || (st.st_mode & S_IROTH) ||
			    (S_ISREG(st.st_mode) && !st.st_size) ||  /* an empty lock file */
			    lock_name(e->d_name))  /* a pid, and gone by the time bubblewrap mounts */
				continue;
			char p[PATH_MAX];
			tgi_snprintf(p, sizeof p, "%s/%s", etc_scanned[i], e->d_name);
			hide(v, p, "secret", 0);
		}
		closedir(d);
	}
}

/* The private directories, and /var's links to /run. */
static void add_private(tgi_sbview *v, const tgi_sb_profile *pr)
{
	static const char *const links[] = {"/var/run", "/var/lock"};
	char link[PATH_MAX], real[PATH_MAX];
	add(v, TGI_SBV_TMPFS, "/tmp", NULL, "private");
	add(v, TGI_SBV_TMPFS, "/var/tmp", NULL, "private");
	add(v, TGI_SBV_TMPFS, "/run", NULL, "private");
	for (size_t i = 0; i < TGI_ARRAY_LEN(links); i++) {
		ssize_t n = readlink(links[i], link, sizeof link - 1);
		if (n > 0) {
			link[n] = '\0';
			add(v, TGI_SBV_SYMLINK, links[i], link, "system");
		}
	}
	/* with the network on, the resolver's file where /etc/resolv.conf
	 * points into /run (systemd-resolved) */
	if (pr->net == TGI_NET_ON && realpath("/etc/resolv.conf", real) &&
	    (beneath(real, "/run") || beneath(real, "/var/run")))
		add(v, TGI_SBV_RO, real, NULL, "name resolution");
	if (v->home[0])
		add(v, TGI_SBV_TMPFS, v->home, NULL, "private home");
}

/* A profile path: absolute, or relative to the workspace; resolved into
 * out.  0; 1 when it is not there; -1 with err. */
static int profile_path(const tgi_sbview *v, const char *list, const char *p, char *out,
                        char *err, size_t errlen)
{
	char joined[PATH_MAX * 2], clean[PATH_MAX], what[64];
	if (p[0] == '/')
		tgi_snprintf(joined, sizeof joined, "%s", p);
	else if (v->ws[0])
		tgi_snprintf(joined, sizeof joined, "%s/%s", v->ws, p);
	else
		return 1;
	tgi_snprintf(what, sizeof what, "%s path", list);
	/* a relative path may say ".." (the workspace's parent, say): fold it */
	char folded[PATH_MAX];
	if (!realpath(joined, folded))
		return 1;
	if (tgi_sbview_clean(what, folded, clean, sizeof clean, err, errlen) < 0)
		return -1;
	tgi_snprintf(out, PATH_MAX, "%s", clean);
	return 0;
}

static int add_profile(tgi_sbview *v, const tgi_sb_profile *pr, char *err, size_t errlen)
{
	static const char *const names[] = {"read", "write", "sockets"};
	static const char *const whys[] = {"profile: read", "profile: write", "profile: socket"};
	const tgi_strv *lists[] = {&pr->read, &pr->write, &pr->sockets};
	char p[PATH_MAX];
	for (size_t k = 0; k < 3; k++) {
		for (size_t i = 0; i < lists[k]->n; i++) {
			int r = profile_path(v, names[k], lists[k]->v[i], p, err, errlen);
			if (r < 0)
				return -1;
			if (r > 0) {
				tgi_strv_push(&v->missing, tgi_strdup(lists[k]->v[i]));
				continue;
			}
			if (!strcmp(p, "/")) {
				tgi_snprintf(err, errlen, "the sandbox's %s path \"/\" would show everything",
				             names[k]);
				return -1;
			}
			add(v, k == 0 ? TGI_SBV_RO : TGI_SBV_RW, p, NULL, whys[k]);
		}
	}
	return 0;
}

/* The deepest writable host root p lies in, or -1. */
static long writable_root(const tgi_sbview *v, const char *p)
{
	long best = -1;
	for (size_t i = 0; i < v->nops; i++)
		if (v->ops[i].kind == TGI_SBV_RW && beneath(p, v->ops[i].dest) &&
		    (best < 0 || depth(v->ops[i].dest) > depth(v->ops[best].dest)))
			best = (long)i;
	return best;
}

/* The gate's own files: see the header comment. */
static int add_protected(tgi_sbview *v, const tgi_sb_spec *spec, tgi_strv *absent, char *err,
                         size_t errlen)
{
	char clean[PATH_MAX], p[PATH_MAX], top[PATH_MAX];
	for (size_t i = 0; i < spec->nprotect; i++) {
		struct stat st;
		if (tgi_sbview_clean("protected path", spec->protect[i], clean, sizeof clean, err,
		                     errlen) < 0)
			return -1;
		if (canon(clean, p) < 0)
			continue;                          /* unreachable: nothing to show */
		int have = lstat(p, &st) == 0;
		if (have && S_ISSOCK(st.st_mode))
			add(v, TGI_SBV_HIDE_FILE, p, NULL, "the gate's socket");
		long r = writable_root(v, p);
		if (r < 0)
			continue;                          /* read-only or not shown */
		const char *root = v->ops[r].dest;
		if (!strcmp(p, root)) {
			char shown[128];
			tgi_sanitize(shown, sizeof shown, p);
			tgi_snprintf(err, errlen, "the protected path \"%s\" is a whole writable root",
			             shown);
			return -1;
		}
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		const char *rel = p + rl + 1;
		size_t tl = strcspn(rel, "/");
		tgi_snprintf(top, sizeof top, "%.*s/%.*s", (int)rl, root, (int)tl, rel);
		if (exists(top, &st)) {
			if (S_ISSOCK(st.st_mode))
				add(v, TGI_SBV_HIDE_FILE, top, NULL, "the gate's socket");
			else
				add(v, TGI_SBV_RO, top, NULL, "the gate's files");
		} else if (v->ws[0] && !strcmp(root, v->ws)) {
			tgi_strv_push(absent, tgi_strdup(rel));   /* the audit's */
		}
	}
	return 0;
}

/* Sort, let masks win, leave out what would be made in the host's tree. */
static int settle(tgi_sbview *v, char *err, size_t errlen)
{
	qsort(v->ops, v->nops, sizeof *v->ops, op_cmp);
	for (size_t i = 0; i < v->nops;) {
		tgi_sbv_op *o = &v->ops[i];
		int keep = 1;
		for (size_t j = 0; j < i && keep; j++)
			if (is_hidden(v->ops[j].kind) && beneath(o->dest, v->ops[j].dest))
				keep = 0;                          /* under a mask: not shown */
		long c = keep ? container(v, i) : -1;
		if (keep && c >= 0 && host_backed(v->ops[c].kind)) {
			struct stat st;
			if (lstat(o->dest, &st) < 0)
				keep = 0;                          /* would be made in the host's tree */
			else if (o->kind == TGI_SBV_SYMLINK)
				keep = 0;                          /* the host's own is there */
			else if ((o->kind == TGI_SBV_HIDE_DIR || o->kind == TGI_SBV_TMPFS) &&
			         !S_ISDIR(st.st_mode))
				keep = 0;
		}
		int required = !strcmp(o->dest, v->ws) || !strcmp(o->dest, v->tmp);
		if (!keep && required && (o->kind == TGI_SBV_RW || o->kind == TGI_SBV_RO)) {
			char shown[128];
			tgi_sanitize(shown, sizeof shown, o->dest);
			tgi_snprintf(err, errlen, "the sandbox cannot show \"%s\" (it lies in a hidden "
			             "path)", shown);
			return -1;
		}
		if (keep)
			i++;
		else
			drop(v, i);
	}
	return 0;
}

static int root_path(const char *what, const char *p, char *out, char *err, size_t errlen)
{
	char clean[PATH_MAX];
	struct stat st;
	if (tgi_sbview_clean(what, p, clean, sizeof clean, err, errlen) < 0)
		return -1;
	char shown[128];
	tgi_sanitize(shown, sizeof shown, clean);
	if (stat(clean, &st) < 0 || !S_ISDIR(st.st_mode)) {
		tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" is not a directory", what, shown);
		return -1;
	}
	if (canon(clean, out) < 0) {
		tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" cannot be resolved: %s", what,
		             shown, strerror(errno));
		return -1;
	}
	return 0;
}

/* The private home's path: spec->home, else $HOME; none for "" or a
 * path the system shows (HOME=/ or under /usr). */
static void home_path(tgi_sbview *v, const tgi_sb_spec *spec)
{
	char clean[PATH_MAX], e[64];
	const char *h = spec->home ? spec->home : getenv("HOME");
	v->home[0] = '\0';
	if (!h || !*h || tgi_sbview_clean("home", h, clean, sizeof clean, e, sizeof e) < 0 ||
	    canon(clean, v->home) < 0 || !strcmp(v->home, "/")) {
		v->home[0] = '\0';
		return;
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(system_dirs); i++)
		if (beneath(v->home, system_dirs[i]) || beneath(v->home, "/proc") ||
		    beneath(v->home, "/sys") || beneath(v->home, "/dev"))
			v->home[0] = '\0';
}

/* Under bubblewrap the sandbox's own /tmp (a tmpfs of its own) serves as
 * the private tmp dir: one mount less. */
static int spec_private_tmp(const tgi_sb_spec *spec)
{
	return tgi_sandbox_probe()->backend == TGI_SB_BWRAP;
}

int tgi_sbview_build(const tgi_sb_spec *spec, tgi_sbview *v, char *err, size_t errlen)
{
	const tgi_sb_profile *pr = spec->profile;
	tgi_strv absent = {0}, skip = {0};
	int rc = -1;
	memset(v, 0, sizeof *v);
	v->ws_writable = pr->mode == TGI_SANDBOX_WORKSPACE_WRITE;
	if (v->ws_writable && !spec->workspace) {
		tgi_snprintf(err, errlen, "the sandbox has no workspace for workspace-write mode");
		return -1;
	}
	if (spec->workspace && root_path("workspace", spec->workspace, v->ws, err, errlen) < 0)
		return -1;
	if (spec->tmpdir && root_path("tmp dir", spec->tmpdir, v->tmp, err, errlen) < 0)
		return -1;
	if (spec->nprotect > TGI_SBV_MAX_OPS || spec->nmask > TGI_SBV_MAX_OPS) {
		tgi_snprintf(err, errlen, "the sandbox has %zu protected and %zu hidden paths (at "
		             "most %d each)", spec->nprotect, spec->nmask, TGI_SBV_MAX_OPS);
		return -1;
	}
	if ((spec->nprotect && !spec->protect) || (spec->nmask && !spec->mask)) {
		tgi_snprintf(err, errlen, "the sandbox's protected or hidden paths are missing");
		return -1;
	}
	home_path(v, spec);

	add_system(v);
	add_etc_secrets(v);
	add_private(v, pr);
	if (add_profile(v, pr, err, errlen) < 0)
		goto out;
	if (v->ws[0])
		add(v, v->ws_writable ? TGI_SBV_RW : TGI_SBV_RO, v->ws, NULL, "workspace");
	if (v->tmp[0] && !spec_private_tmp(spec))
		add(v, TGI_SBV_RW, v->tmp, NULL, "private tmp dir");
	for (size_t i = 0; i < spec->nmask; i++) {
		char clean[PATH_MAX], p[PATH_MAX];
		if (tgi_sbview_clean("hidden path", spec->mask[i], clean, sizeof clean, err,
		                     errlen) < 0)
			goto out;
		if (canon(clean, p) == 0)
			hide(v, p, "hidden", 1);
	}
	if (add_protected(v, spec, &absent, err, errlen) < 0)
		goto out;

	/* .git below the workspace, wherever a command may write there */
	int ws_write = 0;
	for (size_t i = 0; v->ws[0] && i < v->nops; i++)
		if (v->ops[i].kind == TGI_SBV_RW && beneath(v->ops[i].dest, v->ws))
			ws_write = 1;
	if (ws_write) {
		size_t wl = strlen(v->ws);
		for (size_t i = 0; i < v->nops; i++) {
			const tgi_sbv_op *o = &v->ops[i];
			if ((o->kind == TGI_SBV_RO || is_hidden(o->kind)) && beneath(o->dest, v->ws) &&
			    strcmp(o->dest, v->ws))
				tgi_strv_push(&skip, tgi_strdup(o->dest + wl + 1));
		}
		if (tgi_sbaudit_begin(v->ws, (const char *const *)skip.v, skip.n, 1, &v->audit, err,
		                      errlen) < 0)
			goto out;
		for (size_t i = 0; i < absent.n; i++)
			tgi_sbaudit_absent(v->audit, absent.v[i]);
		if (spec->quarantine) {
			const char *q = spec->quarantine;
			const char *shown = !strncmp(q, v->ws, wl) && q[wl] == '/' ? q + wl + 1 : q;
			tgi_sbaudit_quarantine(v->audit, q, shown);
		}
		for (size_t i = 0; i < tgi_sbaudit_ngit(v->audit); i++) {
			char joined[PATH_MAX * 2], p[PATH_MAX];
			tgi_snprintf(joined, sizeof joined, "%s/%s", v->ws, tgi_sbaudit_git(v->audit, i));
			if (strlen(joined) >= PATH_MAX || canon(joined, p) < 0)
				continue;                          /* a .git symlink: where it leads */
			long r = writable_root(v, p);
			if (r >= 0 && strcmp(p, v->ops[r].dest)) {
				const char *rel = tgi_sbaudit_git(v->audit, i), *b = strrchr(rel, '/');
				add(v, TGI_SBV_RO, p, NULL, strcmp(b ? b + 1 : rel, ".git") ? "configuration"
				                                                           : ".git");
				v->ngit++;
			}
		}
	}
	if (v->nops > TGI_SBV_MAX_OPS) {
		tgi_snprintf(err, errlen, "the sandbox would need %zu mounts (at most %d): the "
		             "workspace has too many .git directories", v->nops, TGI_SBV_MAX_OPS);
		goto out;
	}
	rc = settle(v, err, errlen);
out:
	tgi_strv_free(&absent);
	tgi_strv_free(&skip);
	return rc;
}

void tgi_sbview_free(tgi_sbview *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nops; i++) {
		free(v->ops[i].dest);
		free(v->ops[i].target);
	}
	free(v->ops);
	tgi_sbaudit_free(v->audit);
	tgi_strv_free(&v->missing);
	tgi_strv_free(&v->unreadable);
	memset(v, 0, sizeof *v);
}
