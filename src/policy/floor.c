/*
 * floor.c — the hard floor, compiled in: nothing lifts it.
 *
 * Paths (tgi_floor_paths).  A file tool may never read or write ~/.ssh
 * (the user's, root's, any /home/NAME's), the shadow and sudoers files, or
 * a block device.  The floor judges the absolute path a call touches,
 * workspace + "/" + the path as resolved inside it, because the workspace
 * itself may be $HOME or "/".  A path is floored when it is a listed path
 * or lies under one.
 *
 * Paths are normalised first ("//" and "/./" collapsed, a trailing '/'
 * dropped).  A ".." is judged both ways, as written and folded lexically,
 * and either reading floors the path: resolved paths carry no "..", and if
 * one ever does the floor errs on the side of refusing.  Anything the floor
 * cannot judge (a workspace that is not absolute, a path longer than
 * PATH_MAX) is floored too: it fails closed.
 *
 * Commands (tgi_floor_command) are judged after shell.c has split and
 * normalised them, one simple command at a time, wrappers peeled
 * (tgi_shell_program) and the program read by its basename.  A word that
 * names a file is read as the shell would before globbing: brace
 * alternatives expanded, `~`, `~user`, `$HOME`, `${HOME}`, `$PWD`,
 * `${PWD}` replaced, a relative word joined to the directory the command
 * runs in, "." and ".." folded lexically.  Glob characters stay, and a
 * globbed segment is matched against the protected name (`/h*` reaches
 * /home), so a glob is judged by everything it could match.  A command
 * runs at the workspace root unless a `cd` earlier in the line moved it;
 * after a `cd` to somewhere the floor cannot name, relative words are not
 * judged for deletes, and are judged against both the workspace and the
 * home directory for the secret files.  A command's effects (what it
 * deletes, writes and reads) come from a table of programs below; a
 * program not in it is judged on its redirections alone.
 *
 * A line is judged as split, then once per variant of its evaluation
 * (expand.h: the values its variables, loops, reads may hold).  Within a
 * line the floor follows what the same shell runs (aliases, function bodies
 * with their arguments, eval, xargs with what it is fed) and what a new
 * one does (sh -c scripts, shells and interpreters reading the line's
 * literal input, inline interpreter code read by code.c, the command
 * lines programs such as trap, ssh, tmux, find -exec are given), files
 * downloaded or written with literal text and then run, and links made.
 * What it cannot place in a word it would judge for a delete or a write
 * (not a read), a bound of the evaluation, a command the splitter could not
 * judge: the floor is blind, which a caller that would not ask turns into
 * an ask (tgi_floor_judge).
 *
 * Owns: the floor tables and their checks, and what a line's judging
 * learns (downloads, written files, links, functions being expanded).
 * Must not: open or stat the paths, or consult rules, modes or approvals
 * (the floor is above them).
 */
#include "policy/code.h"
#include "policy/expand.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "util/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
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

static void home_ssh_dirs(home_ssh *h)
{
	h->n = 0;
	add_home(h, getenv("HOME"));
	add_home(h, tgi_passwd_home());
}

/* Does path lie under a top directory of the table (/root, /home, /etc,
 * /dev)?  Every entry does; a path elsewhere (most workspaces, and every
 * entry a directory walk shows there) skips the globs. */
static int in_table_tops(const char *path)
{
	static const char *const tops[] = {"/root/", "/home/", "/etc/", "/dev/"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(tops); i++)
		if (!strncmp(path, tops[i], strlen(tops[i])))
			return 1;
	return 0;
}

/* The reason path (absolute, normalised) is floored, or NULL. */
static const char *floored(const char *path, const home_ssh *h)
{
	for (size_t i = 0; i < h->n; i++)
		if (is_under(path, h->dir[i]))
			return SSH_REASON;
	if (!in_table_tops(path))
		return NULL;
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

/* ------------------------------------------------------------------ commands */

#define CMD_DEPTH_MAX 6   /* scripts, bodies, aliases, eval, code judged inside one another */
#define ALTS_MAX      64  /* brace alternatives of one word */
#define HOMES_MAX     3   /* the home given, $HOME, the passwd entry's */
#define PEEL_MAX      8   /* wrappers peeled around one program */

/* A protected path: literal (a home, the workspace) or, with glob, a
 * pattern over segments (a table entry such as /home/ * /.ssh). */
typedef struct prot {
	const char *path;
	int         glob;
	const char *reason;
} prot;

#define WHY_ROOT  "recursive delete of the filesystem root"
#define WHY_HOME  "recursive delete of the home directory"
#define WHY_WS    "recursive delete of the workspace root"
#define WHY_SYS   "recursive delete of a system directory"
#define WHY_SSHW  "modifying ~/.ssh"
#define WHY_SSHR  "reading an ssh private key"
#define WHY_DEV   "writing to a block device"
#define WHY_PERM  "recursive permission or ownership change on a system directory"
#define WHY_PIPE  "downloaded content piped into an interpreter"
#define WHY_DLRUN "downloaded content run by an interpreter"
#define WHY_MKFS  "formatting a filesystem"
#define WHY_WIPE  "wiping filesystem signatures"
#define WHY_POWER "shutting down or rebooting the machine"
#define WHY_BOMB  "a fork bomb"
#define WHY_SYSRQ "writing /proc/sysrq-trigger"
#define WHY_KMEM  "writing kernel memory"
#define WHY_KILL  "signalling init or every process"
#define WHY_SYSRM "deleting a system directory or its link"

/* Top-level system directories: deleting one (or chmod -R on it) breaks
 * the machine, so they count as the root does. */
static const prot system_dirs[] = {
	{ "/bin", 0, WHY_SYS },  { "/boot", 0, WHY_SYS },  { "/dev", 0, WHY_SYS },
	{ "/etc", 0, WHY_SYS },  { "/home", 0, WHY_SYS },  { "/lib", 0, WHY_SYS },
	{ "/lib32", 0, WHY_SYS }, { "/lib64", 0, WHY_SYS }, { "/libx32", 0, WHY_SYS },
	{ "/proc", 0, WHY_SYS }, { "/root", 0, WHY_SYS },  { "/sbin", 0, WHY_SYS },
	{ "/sys", 0, WHY_SYS },  { "/usr", 0, WHY_SYS },   { "/var", 0, WHY_SYS },
};

/* Files no command may write, move or delete (the users' ~/.ssh are added
 * per call).  Block devices are the path floor's list. */
static const prot write_table[] = {
	{ "/etc/passwd", 0, "modifying /etc/passwd" },
	{ "/etc/shadow", 0, "modifying /etc/shadow" },
	{ "/etc/shadow-", 0, "modifying /etc/shadow" },
	{ "/etc/gshadow", 0, "modifying /etc/gshadow" },
	{ "/etc/gshadow-", 0, "modifying /etc/gshadow" },
	{ "/etc/sudoers", 0, "modifying /etc/sudoers" },
	{ "/etc/sudoers.d", 0, "modifying /etc/sudoers" },
	{ "/root/.ssh", 0, WHY_SSHW },
	{ "/home/*/.ssh", 1, WHY_SSHW },
	{ "/dev/sd*", 1, WHY_DEV },  { "/dev/nvme*", 1, WHY_DEV }, { "/dev/vd*", 1, WHY_DEV },
	{ "/dev/xvd*", 1, WHY_DEV }, { "/dev/hd*", 1, WHY_DEV },   { "/dev/mmcblk*", 1, WHY_DEV },
	{ "/dev/loop*", 1, WHY_DEV }, { "/dev/dm-*", 1, WHY_DEV }, { "/dev/md*", 1, WHY_DEV },
	{ "/dev/mapper", 0, WHY_DEV }, { "/dev/disk", 0, WHY_DEV },
	{ "/proc/sysrq-trigger", 0, WHY_SYSRQ },
	{ "/dev/mem", 0, WHY_KMEM }, { "/dev/kmem", 0, WHY_KMEM }, { "/dev/port", 0, WHY_KMEM },
};

/* Files no command may read.  ~/.ssh directories are judged apart: the
 * directory itself and the private keys in it, not the public files. */
static const prot read_table[] = {
	{ "/etc/shadow", 0, "reading /etc/shadow" },
	{ "/etc/shadow-", 0, "reading /etc/shadow" },
	{ "/etc/gshadow", 0, "reading /etc/gshadow" },
	{ "/etc/gshadow-", 0, "reading /etc/gshadow" },
	{ "/etc/ssh/ssh_host_*_key", 1, WHY_SSHR },
};

static const prot ssh_table[] = {
	{ "/root/.ssh", 0, WHY_SSHR },
	{ "/home/*/.ssh", 1, WHY_SSHR },
};

#define DL_MAX    64  /* downloaded files remembered in one line */
#define LINKS_MAX 32  /* symbolic links and bind mounts a line makes */
#define FUNCS_MAX 16  /* functions being expanded inside one another */

/* What judging a line learns as it goes (mutable, while the context is
 * const): what it could not see, the evaluation of the line in hand,
 * files downloaded, links made, functions being expanded. */
typedef struct fstate {
	char               blind[256];
	tgi_eval          *eval;      /* the evaluation of the script being judged */
	tgi_eval_budget    budget;
	const char *const *env;
	size_t             nenv;
	tgi_strv           dl;        /* absolute paths a download may have written */
	int                dl_unknown;
	tgi_strv           link_from, link_to;
	tgi_strv           fstack;
	tgi_strv           wpath, wtext;  /* files the line writes with what it says */
} fstate;

/* What one call knows: the workspace, the homes and their ~/.ssh, all
 * normalised.  home is what `~` and $HOME mean ("" when unknown). */
typedef struct fctx {
	char    ws[PATH_MAX];
	char    home[PATH_MAX];
	char    homes[HOMES_MAX][PATH_MAX];
	char    ssh[HOMES_MAX][PATH_MAX];
	size_t  nhomes;
	fstate *st;
} fctx;

/* Note what the floor cannot see: a phrase and the word it is about (the
 * first note stays). */
static void note_blind(const fctx *x, const char *phrase, const char *what)
{
	char w[96];
	if (x->st->blind[0])
		return;
	tgi_sanitize(w, sizeof w, what ? what : "");
	tgi_snprintf(x->st->blind, sizeof x->st->blind, "%s%s", phrase, w);
}

/* One simple command being judged.  The argument words are borrowed from
 * the command line. */
typedef struct jin {
	const fctx  *x;
	const char  *cwd;    /* where it runs; NULL after a cd the floor cannot follow */
	const char  *prog;   /* the program's basename */
	char *const *args;   /* the words after the program */
	size_t       nargs;
	int          quiet;  /* a word it cannot resolve is not worth asking about */
} jin;

/* ---- paths */

enum { REL_NONE, REL_EQUAL, REL_UNDER, REL_ABOVE };

/* The next segment of a normalised path: its start in *seg, its length
 * (0 at the end). */
static size_t next_segment(const char **s, const char **seg)
{
	while (**s == '/')
		(*s)++;
	*seg = *s;
	size_t n = strcspn(*s, "/");
	*s += n;
	return n;
}

/* Can segment t (a word's, glob characters live) name segment p (literal,
 * or a pattern itself when pglob)?  A leading '.' needs a literal '.', as
 * the shell's globbing has it. */
static int segment_match(const char *t, size_t tn, const char *p, size_t pn, int pglob)
{
	char tb[PATH_MAX], pb[PATH_MAX];

	if (tn == pn && memcmp(t, p, tn) == 0)
		return 1;
	if (tn >= sizeof tb || pn >= sizeof pb)
		return 0;
	memcpy(tb, t, tn);
	tb[tn] = '\0';
	memcpy(pb, p, pn);
	pb[pn] = '\0';
	return fnmatch(tb, pb, FNM_PERIOD) == 0 || (pglob && fnmatch(pb, tb, FNM_PERIOD) == 0);
}

/* How path t (absolute, normalised, may hold glob characters) stands to
 * the protected path p: it may name p, something under p, or an ancestor
 * of p. */
static int relate(const char *t, const prot *p)
{
	const char *a = t, *b = p->path, *ta, *pb;

	for (;;) {
		size_t tn = next_segment(&a, &ta), pn = next_segment(&b, &pb);
		if (!tn && !pn)
			return REL_EQUAL;
		if (!tn)
			return REL_ABOVE;
		if (!pn)
			return REL_UNDER;
		if (!segment_match(ta, tn, pb, pn, p->glob))
			return REL_NONE;
	}
}

/* Drop final segments that match everything in their directory (`*`,
 * `**`, `.*`): deleting /x/ * deletes what deleting /x does. */
static void strip_everything(char *path)
{
	for (;;) {
		char *slash = strrchr(path, '/');
		const char *seg = slash + 1;
		if (seg[0] == '.' && seg[1] == '*' && seg[2] == '\0')
			;
		else if (seg[0] != '*' || seg[strspn(seg, "*")] != '\0')
			return;
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* Brace alternatives of w (`/{etc,usr}` -> /etc, /usr), at most ALTS_MAX,
 * nested at most 8 deep, appended to out (owned copies).  Words longer
 * than PATH_MAX name no file and are kept whole. */
static void brace_expand(const char *w, tgi_strv *out, int depth)
{
	size_t len = strlen(w);

	if (out->n >= ALTS_MAX)
		return;
	if (len < PATH_MAX && depth < 8) {
		for (const char *o = strchr(w, '{'); o; o = strchr(o + 1, '{')) {
			const char *c = o, *comma = NULL;
			int level = 0;
			for (; *c; c++) {
				if (*c == '{')
					level++;
				else if (*c == '}' && --level == 0)
					break;
				else if (*c == ',' && level == 1)
					comma = c;
			}
			if (!*c || !comma)
				continue;
			/* each alternative is shorter than w: prefix + alt + suffix */
			char *buf = tgi_xmalloc(len + 1);
			const char *alt = o + 1;
			level = 0;
			for (const char *q = o + 1; q <= c && out->n < ALTS_MAX; q++) {
				if (q < c && *q == '{')
					level++;
				else if (q < c && *q == '}')
					level--;
				else if (q == c || (*q == ',' && level == 0)) {
					tgi_snprintf(buf, len + 1, "%.*s%.*s%s", (int)(o - w), w,
					             (int)(q - alt), alt, c + 1);
					brace_expand(buf, out, depth + 1);
					alt = q + 1;
				}
			}
			free(buf);
			return;
		}
	}
	tgi_strv_push(out, tgi_strdup(w));
}

/* A leading `name` of w (followed by '/' or the end): the rest, or NULL. */
static const char *after_prefix(const char *w, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(w, name, n) == 0 && (w[n] == '/' || w[n] == '\0'))
		return w + n;
	return NULL;
}

/*
 * The absolute, normalised path word names when it runs in cwd (NULL:
 * unknown), into out.  -1 when the floor cannot tell: another variable, a
 * command substitution other than $(pwd), a relative word in an unknown
 * directory, an unknown ~user, a path too long.
 */
#define USER_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

static int resolve_word(const fctx *x, const char *cwd, const char *w, char *out, size_t cap)
{
	char user[PATH_MAX];
	const char *dir = NULL, *rest = w;

	if (w[0] == '~') {
		size_t n = strcspn(w + 1, "/");
		rest = w + 1 + n;
		if (n == 0)
			dir = x->home[0] ? x->home : NULL;
		else if (n == 1 && w[1] == '+')
			dir = cwd;
		else if (n < 64 && strspn(w + 1, USER_CHARS) == n) {
			if (n == 4 && strncmp(w + 1, "root", 4) == 0)
				dir = "/root";
			else {
				tgi_snprintf(user, sizeof user, "/home/%.*s", (int)n, w + 1);
				dir = user;
			}
		}
		if (!dir)
			return -1;
	} else if ((rest = after_prefix(w, "$HOME")) || (rest = after_prefix(w, "${HOME}"))) {
		if (!x->home[0])
			return -1;
		dir = x->home;
	} else if ((rest = after_prefix(w, "$PWD")) || (rest = after_prefix(w, "${PWD}")) ||
	           (rest = after_prefix(w, "$(pwd)")) || (rest = after_prefix(w, "`pwd`"))) {
		dir = cwd;
		if (!dir)
			return -1;
	} else {
		rest = w;
		if (w[0] != '/') {
			if (!cwd)
				return -1;
			dir = cwd;
		}
	}
	if (strpbrk(rest, "$`"))
		return -1;
	while (dir && *rest == '/')
		rest++;
	return join_path(out, cap, dir ? dir : "/", rest, 1);
}

typedef const char *(*path_check)(const fctx *x, const char *path, int arg);

/*
 * Run check over every path word may name.  With guess, a relative word in
 * an unknown directory is tried in the workspace and in the home directory
 * (the secret files are judged so; deletes are not).  The first reason.
 */
static const char *read_check(const fctx *x, const char *path, int arg);

/* check on path, and on what it is through a symbolic link or a bind
 * mount the line made (`ln -s / x; rm -rf x/`). */
static const char *checked(const fctx *x, const char *path, path_check check, int arg)
{
	const char *why = check(x, path, arg);
	const fstate *st = x->st;
	char mapped[PATH_MAX];

	for (size_t k = 0; !why && k < st->link_from.n; k++) {
		const char *from = st->link_from.v[k];
		size_t n = strlen(from);
		if (strncmp(path, from, n) != 0 || (path[n] != '\0' && path[n] != '/' && strcmp(from, "/")))
			continue;
		if (join_path(mapped, sizeof mapped, st->link_to.v[k], path + n, 1) == 0)
			why = check(x, mapped, arg);
	}
	return why;
}

static const char *each_path(const jin *j, const char *word, int guess, path_check check, int arg)
{
	tgi_strv alts = { 0 };
	const char *why = NULL;
	char path[PATH_MAX];
	/* a word the floor cannot place is worth asking about when it would be
	 * deleted or written, not read */
	int ask = !j->quiet && check != read_check;

	if (!word[0])
		return NULL; /* an empty word names no file */
	brace_expand(word, &alts, 0);
	for (size_t i = 0; i < alts.n && !why; i++) {
		if (j->cwd || !guess || alts.v[i][0] == '/' || alts.v[i][0] == '~' || alts.v[i][0] == '$') {
			if (resolve_word(j->x, j->cwd, alts.v[i], path, sizeof path) == 0)
				why = checked(j->x, path, check, arg);
			else if (ask)
				note_blind(j->x, "a path the floor cannot tell: ", alts.v[i]);
			continue;
		}
		if (ask)
			note_blind(j->x, "a path in a directory the floor cannot tell: ", alts.v[i]);
		if (resolve_word(j->x, j->x->ws, alts.v[i], path, sizeof path) == 0)
			why = checked(j->x, path, check, arg);
		if (!why && j->x->home[0] &&
		    resolve_word(j->x, j->x->home, alts.v[i], path, sizeof path) == 0)
			why = checked(j->x, path, check, arg);
	}
	tgi_strv_free(&alts);
	return why;
}

/* The first of n protected paths that path relates to as one of the
 * relations in the mask (1 << REL_*). */
static const char *first_related(const char *path, const prot *p, size_t n, unsigned mask)
{
	for (size_t i = 0; i < n; i++)
		if (mask & (1u << relate(path, &p[i])))
			return p[i].reason;
	return NULL;
}

#define AT_OR_ABOVE ((1u << REL_EQUAL) | (1u << REL_ABOVE))
#define AT_OR_UNDER ((1u << REL_EQUAL) | (1u << REL_UNDER))
#define ANY_REL     (AT_OR_ABOVE | AT_OR_UNDER)

/* A recursive delete of path: the root, a home or the workspace (or an
 * ancestor of either), a system directory. */
static const char *delete_check(const fctx *x, const char *path, int arg)
{
	char t[PATH_MAX];
	const char *why;

	tgi_snprintf(t, sizeof t, "%s", path);
	strip_everything(t);
	if (strcmp(t, "/") == 0)
		return WHY_ROOT;
	for (size_t i = 0; i < x->nhomes; i++) {
		const prot h = { x->homes[i], 0, WHY_HOME };
		if (AT_OR_ABOVE & (1u << relate(t, &h)))
			return WHY_HOME;
	}
	const prot ws = { x->ws, 0, WHY_WS };
	if (AT_OR_ABOVE & (1u << relate(t, &ws)))
		return WHY_WS;
	if ((why = first_related(t, system_dirs, TGI_ARRAY_LEN(system_dirs), AT_OR_ABOVE)))
		return why;
	return NULL;
}

/* Removing a system directory's entry itself (`rm /bin` takes the /bin
 * link of a merged /usr; `rm -f /STAR` all of them). */
static const char *unlink_check(const fctx *x, const char *path, int arg)
{
	return first_related(path, system_dirs, TGI_ARRAY_LEN(system_dirs), 1u << REL_EQUAL) ? WHY_SYSRM : NULL;
}

/* A recursive chmod/chown/chgrp of path: the root or a system directory. */
static const char *perm_check(const fctx *x, const char *path, int arg)
{
	char t[PATH_MAX];

	tgi_snprintf(t, sizeof t, "%s", path);
	strip_everything(t);
	if (strcmp(t, "/") == 0)
		return "recursive permission or ownership change on the filesystem root";
	return first_related(t, system_dirs, TGI_ARRAY_LEN(system_dirs), AT_OR_ABOVE) ? WHY_PERM : NULL;
}

/* A write of path (arg != 0: a move or recursive delete, which also
 * takes everything under it). */
static const char *write_check(const fctx *x, const char *path, int remove)
{
	unsigned mask = remove ? ANY_REL : AT_OR_UNDER;
	const char *why = first_related(path, write_table, TGI_ARRAY_LEN(write_table), mask);

	for (size_t i = 0; !why && i < x->nhomes; i++) {
		const prot s = { x->ssh[i], 0, WHY_SSHW };
		if (mask & (1u << relate(path, &s)))
			why = WHY_SSHW;
	}
	return why;
}

/* Public files of ~/.ssh: anything else there may be a private key.  A
 * glob is public only when every name it matches is (`*.pub`). */
static int ssh_public(const char *name)
{
	size_t n = strlen(name);
	return (n > 4 && strcmp(name + n - 4, ".pub") == 0) || strncmp(name, "known_hosts", 11) == 0 ||
	       strncmp(name, "authorized_keys", 15) == 0 || strcmp(name, "config") == 0;
}

/* A read of path: the shadow files, host keys, a ~/.ssh directory itself
 * (recursive readers copy it whole) or a private key in one. */
static const char *read_check(const fctx *x, const char *path, int arg)
{
	const char *why = first_related(path, read_table, TGI_ARRAY_LEN(read_table), 1u << REL_EQUAL);
	if (why)
		return why;
	for (size_t i = 0; i < TGI_ARRAY_LEN(ssh_table) + x->nhomes; i++) {
		const prot s = i < TGI_ARRAY_LEN(ssh_table) ? ssh_table[i]
		                                           : (prot){ x->ssh[i - TGI_ARRAY_LEN(ssh_table)], 0, WHY_SSHR };
		int rel = relate(path, &s);
		if (rel == REL_EQUAL || (rel == REL_UNDER && !ssh_public(strrchr(path, '/') + 1)))
			return WHY_SSHR;
	}
	return NULL;
}

/* A word a reading program was given: the word, and what follows its
 * first '=' or a leading '@' (`--file=K`, curl's `-d @K`, `-F f=@K`). */
static const char *read_word(const jin *j, const char *word)
{
	const char *why = each_path(j, word, 1, read_check, 0);
	const char *eq = strchr(word, '=');

	if (!why && word[0] == '@' && word[1])
		why = each_path(j, word + 1, 1, read_check, 0);
	if (!why && eq && eq[1])
		why = each_path(j, eq[1] == '@' ? eq + 2 : eq + 1, 1, read_check, 0);
	return why;
}

/* ---- options */

/* An option word (before "--"); "-" alone is an operand. */
static int is_option(const char *w)
{
	return w[0] == '-' && w[1] != '\0';
}

/* Is long option word (`--recur`, `--recursive=x`) a spelling of name?
 * GNU takes any unambiguous prefix; the floor takes any of 3+ chars. */
static int long_is(const char *word, const char *name)
{
	size_t n = strcspn(word, "=");
	return n >= 3 && n <= strlen(name) && strncmp(word, name, n) == 0;
}

/*
 * The value of option c (short) or lng (long, may be NULL) if the command
 * carries it, else NULL; flag != 0 asks only whether it is there (returns
 * "" for a flag).  vals: the short options that take a value (the rest of
 * their cluster, else the next word), lvals: long ones taking the next
 * word.  Options end at "--".
 */
static const char *find_option(const jin *j, char c, const char *lng, const char *vals,
                               const char *const *lvals, int flag)
{
	for (size_t i = 0; i < j->nargs; i++) {
		const char *w = j->args[i];
		if (strcmp(w, "--") == 0)
			break;
		if (!is_option(w))
			continue;
		if (w[1] == '-') {
			if (lng && long_is(w, lng)) {
				const char *eq = strchr(w, '=');
				return flag ? "" : eq ? eq + 1 : i + 1 < j->nargs ? j->args[i + 1] : NULL;
			}
			for (size_t k = 0; lvals && lvals[k]; k++)
				if (!strchr(w, '=') && long_is(w, lvals[k])) {
					i++;
					break;
				}
			continue;
		}
		for (const char *q = w + 1; *q; q++) {
			if (*q == c)
				return flag ? "" : q[1] ? q + 1 : i + 1 < j->nargs ? j->args[i + 1] : NULL;
			if (vals && strchr(vals, *q)) {
				if (!q[1])
					i++;
				break;
			}
		}
	}
	return NULL;
}

static int has_flag(const jin *j, char c, const char *lng, const char *vals)
{
	return find_option(j, c, lng, vals, NULL, 1) != NULL;
}

/* The operands (borrowed; caller frees the array): words that are neither
 * options nor their values, GNU order (options anywhere before "--"). */
static size_t operands(const jin *j, const char *vals, const char *const *lvals, const char ***out)
{
	const char **v = tgi_xcalloc(j->nargs + 1, sizeof *v);
	size_t n = 0;
	int opts = 1;

	for (size_t i = 0; i < j->nargs; i++) {
		const char *w = j->args[i];
		if (opts && strcmp(w, "--") == 0) {
			opts = 0;
		} else if (opts && is_option(w) && w[1] == '-') {
			for (size_t k = 0; lvals && lvals[k]; k++)
				if (!strchr(w, '=') && long_is(w, lvals[k])) {
					i++;
					break;
				}
		} else if (opts && is_option(w)) {
			for (const char *q = w + 1; *q; q++)
				if (vals && strchr(vals, *q)) {
					if (!q[1])
						i++;
					break;
				}
		} else {
			v[n++] = w;
		}
	}
	*out = v;
	return n;
}

/* ---- programs */

static const char *judge_rm(const jin *j)
{
	int rec = has_flag(j, 'r', "--recursive", NULL) || has_flag(j, 'R', NULL, NULL);
	const char **ops, *why = NULL;
	size_t n = operands(j, NULL, NULL, &ops);

	jin q = *j;
	q.quiet = !rec; /* one file unknown is not the floor's business; a tree is */
	for (size_t i = 0; i < n && !why; i++) {
		if (rec)
			why = each_path(j, ops[i], 0, delete_check, 0);
		else
			why = each_path(&q, ops[i], 0, unlink_check, 0);
		if (!why)
			why = each_path(&q, ops[i], 1, write_check, rec);
	}
	free(ops);
	return why;
}

/* Tests that narrow what find matches; with any of them (and no -o or !
 * to turn them around) a find -delete is not a delete of everything. */
static const char *const find_narrowing[] = {
	"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-newer", "-anewer", "-cnewer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
	"-size", "-user", "-group", "-uid", "-gid", "-perm", "-empty", "-links", "-inum",
	"-samefile", "-lname", "-ilname", "-nouser", "-nogroup", "-used", NULL,
};

static int in_list(const char *w, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(w, list[i]) == 0)
			return 1;
	return 0;
}

/* find START... with -delete, or -exec rm/shred/unlink, matching
 * everything: a recursive delete of each start.  -fprint* and -fls write
 * their file. */
static const char *judge_find(const jin *j)
{
	static const char *const turn[] = { "-o", "-or", "-not", "!", ",", NULL };
	static const char *const exec[] = { "-exec", "-execdir", "-ok", "-okdir", NULL };
	static const char *const fout[] = { "-fprint", "-fprint0", "-fprintf", "-fls", NULL };
	static const char *const deleters[] = { "rm", "shred", "unlink", "rmdir", NULL };
	size_t i = 0, start, end;
	int deletes = 0, narrowed = 0, turned = 0;
	const char *why = NULL;

	while (i < j->nargs && (strcmp(j->args[i], "-H") == 0 || strcmp(j->args[i], "-L") == 0 ||
	                        strcmp(j->args[i], "-P") == 0 || strncmp(j->args[i], "-O", 2) == 0 ||
	                        strcmp(j->args[i], "-D") == 0))
		i += strcmp(j->args[i], "-D") == 0 ? 2 : 1;
	for (start = end = i; end < j->nargs; end++) {
		const char *w = j->args[end];
		if (w[0] == '-' || strcmp(w, "(") == 0 || strcmp(w, "!") == 0)
			break;
	}
	for (i = end; i < j->nargs && !why; i++) {
		const char *w = j->args[i];
		if (strcmp(w, "-delete") == 0)
			deletes = 1;
		else if (in_list(w, exec) && i + 1 < j->nargs && in_list(tgi_shell_basename(j->args[i + 1]), deleters))
			deletes = 1;
		else if (in_list(w, find_narrowing))
			narrowed = 1;
		else if (in_list(w, turn))
			turned = 1;
		else if (in_list(w, fout) && i + 1 < j->nargs)
			why = each_path(j, j->args[i + 1], 1, write_check, 0);
	}
	if (why || !deletes || (narrowed && !turned))
		return why;
	if (start == end)
		return each_path(j, ".", 0, delete_check, 0);
	for (i = start; i < end && !why; i++)
		why = each_path(j, j->args[i], 0, delete_check, 0);
	return why;
}

static const char *judge_chmod(const jin *j)
{
	const char **ops, *why = NULL;
	size_t n;

	if (!has_flag(j, 'R', "--recursive", NULL))
		return NULL;
	n = operands(j, NULL, NULL, &ops);
	for (size_t i = 0; i < n && !why; i++)
		why = each_path(j, ops[i], 0, perm_check, 0);
	free(ops);
	return why;
}

static const char *judge_dd(const jin *j)
{
	const char *why = NULL;

	for (size_t i = 0; i < j->nargs && !why; i++) {
		if (strncmp(j->args[i], "of=", 3) == 0)
			why = each_path(j, j->args[i] + 3, 1, write_check, 0);
		else if (strncmp(j->args[i], "if=", 3) == 0)
			why = each_path(j, j->args[i] + 3, 1, read_check, 0);
	}
	return why;
}

/* Programs whose every operand is written: tee, truncate, shred, touch. */
static const char *judge_writes(const jin *j)
{
	const char *vals = strcmp(j->prog, "truncate") == 0 ? "sr"
	                 : strcmp(j->prog, "shred") == 0    ? "ns"
	                 : strcmp(j->prog, "touch") == 0    ? "drt"
	                                                    : NULL;
	const char **ops, *why = NULL;
	size_t n = operands(j, vals, NULL, &ops);

	for (size_t i = 0; i < n && !why; i++)
		why = each_path(j, ops[i], 1, write_check, 0);
	free(ops);
	return why;
}

/* An scp/rsync word naming another host (`host:path`). */
static int remote_word(const char *w)
{
	size_t colon = strcspn(w, ":");
	return w[colon] == ':' && colon < strcspn(w, "/");
}

/*
 * cp, mv, install, ln, rsync, scp: the destination (last operand, or -t
 * DIR) is written, and so is DEST/NAME for each source NAME, since the
 * destination may be a directory; mv moves its sources away.
 */
static const char *judge_copy(const jin *j)
{
	static const char *const lvals[] = { "--target-directory", "--suffix", NULL };
	const char *p = j->prog;
	const char *vals = strcmp(p, "install") == 0 ? "tSmog"
	                 : strcmp(p, "rsync") == 0   ? "efBTM"
	                 : strcmp(p, "scp") == 0     ? "cDFiJloPSX"
	                                             : "tS";
	int mv = strcmp(p, "mv") == 0;
	const char *tdir = strcmp(p, "rsync") && strcmp(p, "scp")
	                 ? find_option(j, 't', "--target-directory", vals, lvals, 0) : NULL;
	const char **ops, *why = NULL;
	size_t n = operands(j, vals, lvals, &ops), nsrc = n;
	const char *dest = tdir;

	if (strcmp(p, "install") == 0 && has_flag(j, 'd', "--directory", vals))
		dest = NULL; /* install -d: every operand is a directory made */
	else if (!dest && n >= 2)
		dest = ops[--nsrc];
	else if (!dest)
		nsrc = n;
	for (size_t i = 0; i < nsrc && !why; i++) {
		if (remote_word(ops[i]) && (!strcmp(p, "scp") || !strcmp(p, "rsync")))
			continue;
		if (mv || !dest)
			why = each_path(j, ops[i], 1, write_check, mv);
		/* moving the root, a home or a system directory away deletes it
		 * where it was (moving the workspace's files about does not) */
		if (!why && mv) {
			why = each_path(j, ops[i], 0, delete_check, 0);
			if (why && !strcmp(why, WHY_WS))
				why = NULL;
		}
		if (!why && dest && !remote_word(dest)) {
			char both[2 * PATH_MAX];
			const char *name = tgi_shell_basename(ops[i]);
			tgi_snprintf(both, sizeof both, "%s/%s", dest, name);
			why = each_path(j, both, 1, write_check, 0);
		}
	}
	if (!why && dest && !(remote_word(dest) && (!strcmp(p, "scp") || !strcmp(p, "rsync"))))
		why = each_path(j, dest, 1, write_check, 0);
	/* rsync --delete (--del, --delete-after, …) empties what the destination
	 * holds beyond the source; --remove-source-files deletes the sources */
	if (!why && !strcmp(p, "rsync")) {
		int del = 0, rmsrc = 0;
		for (size_t i = 0; i < j->nargs && strcmp(j->args[i], "--"); i++) {
			del |= !strncmp(j->args[i], "--del", 5);
			rmsrc |= long_is(j->args[i], "--remove-source-files") && strlen(j->args[i]) > 8;
		}
		if (del && dest && !remote_word(dest))
			why = each_path(j, dest, 0, delete_check, 0);
		for (size_t i = 0; rmsrc && !why && i < nsrc; i++)
			if (!remote_word(ops[i]))
				why = each_path(j, ops[i], 0, delete_check, 0);
	}
	free(ops);
	return why;
}

/*
 * git clean with force (-f, or -c clean.requireForce=false) deletes what
 * git does not track under its work tree: -C DIR (each relative to the
 * last), --work-tree DIR, or where it runs.  The workspace itself is its
 * business; the root, a home, a system directory or anything above the
 * workspace are not.
 */
static const char *judge_git(const jin *j)
{
	char dir[PATH_MAX] = "";
	int known = j->cwd != NULL, force = 0;
	size_t i = 0;

	if (known)
		tgi_snprintf(dir, sizeof dir, "%s", j->cwd);
	for (; i < j->nargs; i++) {
		const char *a = j->args[i], *val = NULL;
		if (!strcmp(a, "-C") || !strcmp(a, "--work-tree") || !strcmp(a, "-c") ||
		    !strcmp(a, "--git-dir") || !strcmp(a, "--namespace") || !strcmp(a, "--exec-path") ||
		    !strcmp(a, "--config-env") || !strcmp(a, "--super-prefix")) {
			val = i + 1 < j->nargs ? j->args[++i] : "";
		} else if (!strncmp(a, "--work-tree=", 12)) {
			val = a + 12;
		} else if (a[0] == '-') {
			continue;
		} else {
			break;
		}
		if (!strcmp(a, "-c") && (strstr(val, "requireForce=false") || strstr(val, "requireforce=false") ||
		                         strstr(val, "requireForce=0")))
			force = 1;
		if (strcmp(a, "-C") && strncmp(a, "--work-tree", 11))
			continue;
		char path[PATH_MAX];
		if (!val[0])
			continue;
		if (resolve_word(j->x, known ? dir : NULL, val, path, sizeof path) == 0) {
			memcpy(dir, path, strlen(path) + 1);
			known = 1;
		} else {
			known = 0;
		}
	}
	if (i >= j->nargs || strcmp(j->args[i], "clean"))
		return NULL;
	for (size_t k = i + 1; k < j->nargs && strcmp(j->args[k], "--"); k++)
		if (!strcmp(j->args[k], "--force") ||
		    (j->args[k][0] == '-' && j->args[k][1] != '-' && strchr(j->args[k], 'f')))
			force = 1;
		else if (!strcmp(j->args[k], "-n") || !strcmp(j->args[k], "--dry-run"))
			return NULL;
	if (!force)
		return NULL;
	if (!known) {
		note_blind(j->x, "git clean in a directory the floor cannot tell", "");
		return NULL;
	}
	const prot ws = { j->x->ws, 0, WHY_WS };
	if (!strcmp(dir, j->x->ws))
		return NULL;
	if (relate(dir, &ws) == REL_ABOVE)
		return WHY_WS;
	return delete_check(j->x, dir, 0);
}

/* kill PID…: 1 is init (in a pid namespace, the sandbox's; outside it the
 * machine's), -1 every process the caller may signal. */
static const char *judge_kill(const jin *j)
{
	size_t i = 0;
	if (i < j->nargs && (!strcmp(j->args[i], "-s") || !strcmp(j->args[i], "-n")))
		i += 2;
	else if (i < j->nargs && j->args[i][0] == '-' && j->args[i][1] && strcmp(j->args[i], "--") &&
	         strcmp(j->args[i], "-1"))
		i++;
	else if (i < j->nargs && !strcmp(j->args[i], "-1") && j->nargs > 1)
		i++; /* kill -1 PID: signal 1 (HUP) */
	if (i < j->nargs && !strcmp(j->args[i], "--"))
		i++;
	for (; i < j->nargs; i++)
		if (!strcmp(j->args[i], "1") || !strcmp(j->args[i], "-1"))
			return WHY_KILL;
	return NULL;
}

static const char *judge_sed(const jin *j)
{
	static const char *const lvals[] = { "--expression", "--file", "--line-length", NULL };
	const char **ops, *why = NULL;
	size_t n;

	if (!has_flag(j, 'i', "--in-place", "efl"))
		return NULL;
	n = operands(j, "efl", lvals, &ops);
	for (size_t i = 0; i < n && !why; i++)
		why = each_path(j, ops[i], 1, write_check, 0);
	free(ops);
	return why;
}

static const char *judge_power(const jin *j)
{
	return WHY_POWER;
}

/* init 0 / init 6 (and telinit). */
static const char *judge_init(const jin *j)
{
	for (size_t i = 0; i < j->nargs; i++)
		if (strcmp(j->args[i], "0") == 0 || strcmp(j->args[i], "6") == 0)
			return WHY_POWER;
	return NULL;
}

/* systemctl/loginctl poweroff|reboot|halt|kexec|soft-reboot, or a start
 * or isolate of their targets. */
static const char *judge_systemctl(const jin *j)
{
	static const char *const verbs[] = { "poweroff", "reboot", "halt", "kexec", "soft-reboot", NULL };
	static const char *const targets[] = { "poweroff.target", "reboot.target", "halt.target",
		                                   "kexec.target", "ctrl-alt-del.target",
		                                   "rescue.target", "emergency.target", NULL };
	static const char *const lvals[] = { "--host", "--machine", "--signal", "--property", "--type",
		                                 "--state", "--root", NULL };
	const char **ops, *why = NULL;
	size_t n = operands(j, "HMpPtsn", lvals, &ops);

	if (n > 0 && in_list(ops[0], verbs))
		why = WHY_POWER;
	if (n > 1 && (strcmp(ops[0], "start") == 0 || strcmp(ops[0], "isolate") == 0 ||
	              strcmp(ops[0], "restart") == 0))
		for (size_t i = 1; i < n && !why; i++)
			if (in_list(ops[i], targets))
				why = WHY_POWER;
	free(ops);
	return why;
}

/* Partitioning and erasing tools: unless they only list, every device they
 * are given is written. */
static const char *judge_disk(const jin *j)
{
	static const char *const listing[] = { "-l", "--list", "-p", "--print", "print", "-d", "--dump",
		                               "-V", "--verify", "--show-size", "--version",
		                               "-h", "--help", "status", "luksDump", "isLuks", "-L",
		                               "--detail", "--examine", "-D", "-E", "-Q", NULL };
	const char *why = NULL;
	for (size_t i = 0; i < j->nargs; i++)
		if (in_list(j->args[i], listing) && strcmp(j->prog, "blkdiscard"))
			return NULL;
	for (size_t i = 0; i < j->nargs && !why; i++)
		if (j->args[i][0] != '-' || !j->args[i][1])
			why = each_path(j, j->args[i], 1, write_check, 0);
	return why;
}

static const char *judge_mkfs(const jin *j)
{
	return strcmp(j->prog, "wipefs") == 0 ? WHY_WIPE : WHY_MKFS;
}

/* A program a command line may run and what it does to files.  reads: its
 * words are judged as reads (any of them may be a file it opens). */
typedef const char *(*judge_fn)(const jin *j);

static const struct prog_rule {
	const char *name;
	judge_fn    judge;   /* NULL: a reader only */
	int         reads;
} prog_rules[] = {
	{ "rm", judge_rm, 0 },         { "unlink", judge_rm, 0 }, { "rmdir", judge_writes, 0 },
	{ "find", judge_find, 0 },
	{ "chmod", judge_chmod, 0 },   { "chown", judge_chmod, 0 },   { "chgrp", judge_chmod, 0 },
	{ "dd", judge_dd, 0 },
	{ "tee", judge_writes, 0 },    { "truncate", judge_writes, 0 }, { "shred", judge_writes, 0 },
	{ "touch", judge_writes, 0 },
	{ "cp", judge_copy, 1 },       { "mv", judge_copy, 0 },       { "install", judge_copy, 1 },
	{ "ln", judge_copy, 0 },       { "rsync", judge_copy, 1 },    { "scp", judge_copy, 1 },
	{ "sed", judge_sed, 1 },
	{ "git", judge_git, 0 },       { "kill", judge_kill, 0 },
	{ "kexec", judge_power, 0 },
	{ "shutdown", judge_power, 0 }, { "reboot", judge_power, 0 }, { "halt", judge_power, 0 },
	{ "poweroff", judge_power, 0 }, { "init", judge_init, 0 },    { "telinit", judge_init, 0 },
	{ "systemctl", judge_systemctl, 0 }, { "loginctl", judge_systemctl, 0 },
	{ "mkfs", judge_mkfs, 0 },     { "mke2fs", judge_mkfs, 0 },   { "mkswap", judge_mkfs, 0 },
	{ "mkntfs", judge_mkfs, 0 },   { "mkdosfs", judge_mkfs, 0 },  { "wipefs", judge_mkfs, 0 },
	{ "sgdisk", judge_disk, 0 },   { "sfdisk", judge_disk, 0 },   { "parted", judge_disk, 0 },
	{ "fdisk", judge_disk, 0 },    { "gdisk", judge_disk, 0 },    { "cfdisk", judge_disk, 0 },
	{ "blkdiscard", judge_disk, 0 }, { "cryptsetup", judge_disk, 0 }, { "mdadm", judge_disk, 0 },
	{ "pvcreate", judge_disk, 0 }, { "badblocks", judge_disk, 0 },
	/* readers: whatever file they are given, they print, copy or send */
	{ "cat", NULL, 1 },   { "tac", NULL, 1 },    { "nl", NULL, 1 },      { "less", NULL, 1 },
	{ "more", NULL, 1 },  { "most", NULL, 1 },   { "head", NULL, 1 },    { "tail", NULL, 1 },
	{ "base64", NULL, 1 }, { "base32", NULL, 1 }, { "basenc", NULL, 1 }, { "xxd", NULL, 1 },
	{ "od", NULL, 1 },    { "hexdump", NULL, 1 }, { "hd", NULL, 1 },     { "strings", NULL, 1 },
	{ "grep", NULL, 1 },  { "egrep", NULL, 1 },  { "fgrep", NULL, 1 },   { "zgrep", NULL, 1 },
	{ "rg", NULL, 1 },    { "ag", NULL, 1 },     { "ack", NULL, 1 },     { "awk", NULL, 1 },
	{ "gawk", NULL, 1 },  { "mawk", NULL, 1 },   { "nawk", NULL, 1 },    { "sort", NULL, 1 },
	{ "uniq", NULL, 1 },  { "cut", NULL, 1 },    { "paste", NULL, 1 },   { "fold", NULL, 1 },
	{ "fmt", NULL, 1 },   { "pr", NULL, 1 },     { "iconv", NULL, 1 },   { "diff", NULL, 1 },
	{ "cmp", NULL, 1 },   { "comm", NULL, 1 },   { "join", NULL, 1 },    { "split", NULL, 1 },
	{ "vi", NULL, 1 },    { "vim", NULL, 1 },    { "nvim", NULL, 1 },    { "view", NULL, 1 },
	{ "nano", NULL, 1 },  { "emacs", NULL, 1 },  { "ed", NULL, 1 },      { "gpg", NULL, 1 },
	{ "openssl", NULL, 1 }, { "tar", NULL, 1 },  { "zip", NULL, 1 },     { "gzip", NULL, 1 },
	{ "bzip2", NULL, 1 }, { "xz", NULL, 1 },     { "zstd", NULL, 1 },    { "7z", NULL, 1 },
	{ "cpio", NULL, 1 },  { "jq", NULL, 1 },     { "curl", NULL, 1 },    { "wget", NULL, 1 },
	{ "nc", NULL, 1 },    { "ncat", NULL, 1 },   { "socat", NULL, 1 },   { "mail", NULL, 1 },
	{ "sftp", NULL, 1 },
};

static const struct prog_rule *find_rule(const char *prog)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(prog_rules); i++)
		if (strcmp(prog, prog_rules[i].name) == 0)
			return &prog_rules[i];
	if (strncmp(prog, "mkfs.", 5) == 0)
		return find_rule("mkfs");
	return NULL;
}

/* ---- pipelines and interpreters */

static const char *const downloaders[] = { "curl", "wget", "wget2", "fetch", "aria2c", NULL };
static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", NULL };

/*
 * Interpreters that run code read from stdin unless told otherwise: code
 * holds the short options that give the code (or a script file) in an
 * argument, vals the short options taking a value, lcode and lvals the
 * long ones.  A first operand other than "-" is a script file.  A shell's
 * -s reads the script from stdin whatever follows.
 */
static const struct interp {
	const char        *name;
	int                prefix;   /* python3.12, pypy3 */
	const char        *code;
	const char        *vals;
	const char *const *lcode;
	const char *const *lvals;
} interps[] = {
	{ "sh", 0, "c", "oO", NULL, (const char *const[]){ "--rcfile", "--init-file", NULL } },
	{ "python", 1, "cm", "WX", NULL, (const char *const[]){ "--check-hash-based-pycs", NULL } },
	{ "pypy", 1, "cm", "WX", NULL, NULL },
	{ "perl", 0, "eE", "IMmdDx", NULL, NULL },
	{ "ruby", 0, "e", "ICr", NULL, NULL },
	{ "node", 0, "ep", "r", (const char *const[]){ "--eval", "--print", NULL },
	  (const char *const[]){ "--require", "--import", "--loader", "--experimental-loader",
	                         "--input-type", NULL } },
	{ "php", 0, "rRBEFf", "cdzt", NULL, NULL },
};

static const struct interp *find_interp(const char *prog)
{
	if (in_list(prog, shells))
		return &interps[0];
	if (strcmp(prog, "nodejs") == 0)
		prog = "node";
	for (size_t i = 0; i < TGI_ARRAY_LEN(interps); i++) {
		size_t n = strlen(interps[i].name);
		if (strcmp(prog, interps[i].name) == 0 || (interps[i].prefix && strncmp(prog, interps[i].name, n) == 0))
			return &interps[i];
	}
	return NULL;
}

static int long_in(const char *w, const char *const *list)
{
	for (size_t k = 0; list && list[k]; k++)
		if (long_is(w, list[k]))
			return 1;
	return 0;
}

/* Does the interpreter take its code from stdin? */
static int reads_code_from_stdin(const jin *j, const struct interp *it)
{
	int shell = it == &interps[0];

	for (size_t i = 0; i < j->nargs; i++) {
		const char *w = j->args[i];
		if (strcmp(w, "--") == 0)
			return i + 1 >= j->nargs || strcmp(j->args[i + 1], "-") == 0;
		if (w[0] == '-' && w[1] == '-') {
			if (long_in(w, it->lcode))
				return 0;
			if (!strchr(w, '=') && long_in(w, it->lvals))
				i++;
			continue;
		}
		if ((w[0] == '-' || (shell && w[0] == '+')) && w[1]) {
			for (const char *q = w + 1; *q; q++) {
				if (w[0] == '-' && strchr(it->code, *q))
					return 0;
				if (shell && w[0] == '-' && *q == 's')
					return 1;
				if (strchr(it->vals, *q)) {
					if (!q[1])
						i++;
					break;
				}
			}
			continue;
		}
		return strcmp(w, "-") == 0;
	}
	return 1;
}

/* Does text run a downloader as a command (`$(curl ...`, `<(wget -qO-
 * ...`, `x; curl ...`)?  The name must start a command: at the start, or
 * after `(`, a backquote, `|`, `;`, `&`, a quote or a newline (spaces
 * between allowed), or as the last part of a path. */
static int mentions_downloader(const char *s)
{
	for (size_t i = 0; downloaders[i]; i++) {
		size_t n = strlen(downloaders[i]);
		for (const char *q = strstr(s, downloaders[i]); q; q = strstr(q + 1, downloaders[i])) {
			const char *b = q;
			while (b > s && (b[-1] == ' ' || b[-1] == '\t'))
				b--;
			int before = b == s || strchr("(`|;&\"'\n", b[-1]) != NULL || (b == q && b[-1] == '/');
			int after = q[n] == '\0' || strchr(" \t\n)`\"'", q[n]) != NULL;
			if (before && after)
				return 1;
		}
	}
	return 0;
}

/*
 * Extra wrappers tgi_shell_program does not peel: their options (vals
 * take a value) and, with skip, one operand (chroot NEWROOT, flock FILE)
 * come before the program they run.
 */
static const struct wrapper {
	const char *name;
	const char *vals;
	int         skip;
} wrappers[] = {
	{ "busybox", "", 0 },  { "toybox", "", 0 },   { "pkexec", "", 0 },      { "fakeroot", "", 0 },
	{ "torsocks", "", 0 }, { "proxychains", "f", 0 }, { "proxychains4", "f", 0 },
	{ "chroot", "", 1 },   { "flock", "wEc", 1 }, { "unshare", "SGRw", 0 }, { "nsenter", "tSG", 0 },
	{ "strace", "abeEIoOpPsSuX", 0 }, { "ltrace", "aeEFnoOpsuUwxX", 0 }, { "valgrind", "", 0 },
	{ "firejail", "", 0 }, { "catchsegv", "", 0 }, { "watch", "n", 0 },
	{ "systemd-run", "pusEMGH", 0 }, { "runcon", "", 0 },
};

/* The index of the program a command runs: tgi_shell_program's, then
 * the wrappers above peeled too. */
static size_t program_index(const tgi_cmd *cmd)
{
	size_t p = tgi_shell_program(cmd);

	for (int round = 0; round < PEEL_MAX && p < cmd->argc; round++) {
		const char *name = tgi_shell_basename(cmd->argv[p]);
		const struct wrapper *w = NULL;
		for (size_t i = 0; i < TGI_ARRAY_LEN(wrappers) && !w; i++)
			if (strcmp(name, wrappers[i].name) == 0)
				w = &wrappers[i];
		if (!w)
			break;
		size_t k = p + 1;
		while (k < cmd->argc && is_option(cmd->argv[k])) {
			const char *o = cmd->argv[k++];
			if (strcmp(o, "--") == 0)
				break;
			if (o[1] != '-')
				for (const char *q = o + 1; *q; q++)
					if (strchr(w->vals, *q)) {
						k += !q[1];
						break;
					}
		}
		k += w->skip;
		if (k >= cmd->argc)
			return cmd->argc;
		if (!strcmp(name, "flock") && (!strcmp(cmd->argv[k], "-c") || !strcmp(cmd->argv[k], "--command")))
			break; /* flock FILE -c SCRIPT: flock runs the script itself */
		tgi_cmd sub = *cmd;
		sub.argv = cmd->argv + k;
		sub.argc = cmd->argc - k;
		p = k + tgi_shell_program(&sub);
	}
	return p;
}

/*
 * A download run by an interpreter: `curl … | sh` (any downloader earlier
 * in the same pipeline, whatever sits between), or, in a command the
 * splitter could not judge, a shell, eval or source given `$(curl …)` or
 * `<(wget …)`.
 */
static const char *judge_download(const tgi_cmdline *cl, size_t i, const jin *j)
{
	const tgi_cmd *cmd = &cl->v[i];
	const struct interp *it = find_interp(j->prog);
	static const char *const runners[] = { "eval", "source", ".", "exec", NULL };

	if (it && (cmd->flags & TGI_CMD_PIPED_IN) && reads_code_from_stdin(j, it))
		for (size_t m = i; m > 0 && (cl->v[m].flags & TGI_CMD_PIPED_IN); m--) {
			const tgi_cmd *up = &cl->v[m - 1];
			size_t p = program_index(up);
			if (p < up->argc && in_list(tgi_shell_basename(up->argv[p]), downloaders))
				return WHY_PIPE;
		}
	if (!(cmd->flags & TGI_CMD_OPAQUE))
		return NULL;
	if (!it && !in_list(j->prog, runners) && !strchr("$`", j->prog[0]))
		return NULL;
	for (size_t k = 0; k < cmd->argc; k++)
		if (mentions_downloader(cmd->argv[k]))
			return WHY_DLRUN;
	for (size_t k = 0; k < cmd->nredirs; k++)
		if (cmd->redirs[k].target && mentions_downloader(cmd->redirs[k].target))
			return WHY_DLRUN;
	return NULL;
}

/* ---- nested scripts */

/* The script a command runs through a shell: sh -c SCRIPT (when the
 * splitter left it whole), su/runuser -c SCRIPT, flock … -c SCRIPT. */
static const char *nested_script(const jin *j)
{
	if (in_list(j->prog, shells)) {
		int c = 0;
		for (size_t i = 0; i < j->nargs; i++) {
			const char *w = j->args[i];
			if (strcmp(w, "--") == 0)
				return c && i + 1 < j->nargs ? j->args[i + 1] : NULL;
			if (w[0] == '-' && w[1] == '-')
				continue;
			if ((w[0] == '-' || w[0] == '+') && w[1]) {
				for (const char *q = w + 1; *q; q++) {
					if (*q == 'c' && w[0] == '-')
						c = 1;
					if (*q == 'o' || *q == 'O') {
						i += !q[1];
						break;
					}
				}
				continue;
			}
			return c ? w : NULL;
		}
		return NULL;
	}
	if (strcmp(j->prog, "su") == 0 || strcmp(j->prog, "runuser") == 0)
		return find_option(j, 'c', "--command", "sgGw", NULL, 0);
	if (strcmp(j->prog, "flock") == 0)
		return find_option(j, 'c', "--command", "wE", NULL, 0);
	return NULL;
}

static const char *judge_line(const fctx *x, const tgi_cmdline *cl, const char *cwd, size_t depth);
static const char *judge_fresh(const fctx *x, const tgi_cmdline *cl, const char *cwd, size_t depth);

/* Too deep to judge: say so, so that the call asks. */
static int too_deep(const fctx *x, size_t depth)
{
	if (depth + 1 < CMD_DEPTH_MAX)
		return 0;
	note_blind(x, "scripts, functions or code nested too deep to judge", "");
	return 1;
}

/* A script a new shell runs (a sh -c the splitter left whole, a command
 * line in interpreter code, what a shell reads on stdin): split, and
 * judged with an evaluation of its own, in the directory the command
 * runs in. */
static const char *judge_script(const jin *j, const char *script, size_t len, size_t depth)
{
	tgi_cmdline sub = { 0 };
	char err[256];
	const char *why;

	if (too_deep(j->x, depth))
		return NULL;
	if (tgi_eval_budget_spend(&j->x->st->budget, len) < 0)
		return NULL;
	if (tgi_shell_split(script, len, &sub, err, sizeof err) < 0)
		return NULL; /* no shell runs it either */
	why = judge_fresh(j->x, &sub, j->cwd, depth + 1);
	tgi_cmdline_free(&sub);
	return why;
}

/* A program and its words run by exec (interpreter code): judged like a
 * line of its own. */
static const char *judge_exec(const jin *j, char *const *words, size_t n, size_t depth)
{
	tgi_cmdline sub = { 0 };
	char err[256];
	const char *why;

	if (!n || too_deep(j->x, depth))
		return NULL;
	if (tgi_shell_from_argv((const char *const *)words, n, &sub, err, sizeof err) < 0)
		return NULL;
	why = judge_fresh(j->x, &sub, j->cwd, depth + 1);
	tgi_cmdline_free(&sub);
	return why;
}

/* A text the same shell runs (an alias, a function body with its
 * arguments bound, an eval'd string): split under the line's evaluation
 * and judged where the command runs. */
static const char *judge_same(const jin *j, const char *text, char *const *params, size_t nparams,
                              int bind, size_t depth)
{
	tgi_eval *e = j->x->st->eval;
	tgi_cmdline sub = { 0 };
	char err[256];
	const char *why;
	static const char *const none[1] = { NULL };

	if (!e || too_deep(j->x, depth))
		return NULL;
	if (tgi_eval_split(e, text, strlen(text),
	                   bind ? (params ? (const char *const *)params : none) : NULL, nparams, &sub, err,
	                   sizeof err) < 0) {
		if (tgi_eval_blind(e))
			note_blind(j->x, "", tgi_eval_blind(e));
		return NULL;
	}
	why = judge_line(j->x, &sub, j->cwd, depth + 1);
	tgi_cmdline_free(&sub);
	return why;
}

/* ---- downloads and the files they write */

/* The name a download of url takes by default: its last path segment
 * (query and fragment dropped); NULL when it has none. */
static char *remote_name(const char *url)
{
	const char *s = strstr(url, "://");
	s = s ? s + 3 : url;
	s += strcspn(s, "/");
	if (!*s)
		return NULL;
	size_t n = strcspn(s, "?#");
	const char *last = s;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			last = s + i + 1;
	size_t ln = (size_t)(s + n - last);
	return ln ? tgi_strndup(last, ln) : NULL;
}

static void dl_add(const jin *j, const char *dir, const char *word)
{
	fstate *st = j->x->st;
	char path[PATH_MAX], joined[2 * PATH_MAX];

	if (dir) {
		tgi_snprintf(joined, sizeof joined, "%s/%s", dir, word);
		word = joined;
	}
	if (!word[0] || strcmp(word, "-") == 0)
		return;
	if (st->dl.n >= DL_MAX || resolve_word(j->x, j->cwd, word, path, sizeof path) < 0) {
		st->dl_unknown = 1;
		return;
	}
	tgi_strv_push(&st->dl, tgi_strdup(path));
}

static int is_url(const char *w)
{
	return strstr(w, "://") != NULL || !strncmp(w, "www.", 4);
}

/* Where a downloader's output goes: the files it names (-o, -O, the URL's
 * name), or stdout (then a redirection's file). */
static void dl_note_downloader(const jin *j, const tgi_cmd *cmd)
{
	const char *p = j->prog, *dir = NULL;
	int curl = !strcmp(p, "curl"), wget = !strncmp(p, "wget", 4), named = 0, remote = 0, out = 0;

	if (!curl && !wget && strcmp(p, "aria2c") && strcmp(p, "fetch") && strcmp(p, "http") &&
	    strcmp(p, "https") && strcmp(p, "xh") && strcmp(p, "lwp-download"))
		return;
	remote = !curl; /* wget, aria2c, fetch save under the URL's name unless told */
	for (size_t i = 0; i < j->nargs; i++) {
		const char *a = j->args[i];
		if (a[0] != '-' || !a[1])
			continue;
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			const char *val = eq ? eq + 1 : i + 1 < j->nargs ? j->args[i + 1] : "";
			size_t n = eq ? (size_t)(eq - a) : strlen(a);
			if ((!strncmp(a, "--output", n) && n > 5 && curl) || (!strncmp(a, "--output-document", n) && n > 9) ||
			    !strncmp(a, "--out", n > 5 ? n : 5)) {
				if (!strncmp(a, "--output-dir", 12)) {
					dir = val;
				} else {
					if (strcmp(val, "-")) {
						dl_add(j, NULL, val);
						out = 1;
					}
					named = 1;
				}
				i += !eq;
			} else if (!strncmp(a, "--remote-name", 13)) {
				remote = 1;
			} else if (!strncmp(a, "--remote-header-name", 20) || !strncmp(a, "--content-disposition", 21) ||
			           !strncmp(a, "--trust-server-names", 20) || !strncmp(a, "--input-file", 12) ||
			           !strncmp(a, "--config", 8) || !strncmp(a, "--download", 10)) {
				j->x->st->dl_unknown = 1;
			} else if (!strncmp(a, "--directory-prefix", 18) || !strncmp(a, "--dir", 5)) {
				dir = val;
				i += !eq;
			}
			continue;
		}
		for (const char *q = a + 1; *q; q++) {
			if ((*q == 'o' && (curl || !wget)) || (*q == 'O' && wget)) {
				const char *val = q[1] ? q + 1 : i + 1 < j->nargs ? j->args[++i] : "";
				if (strcmp(val, "-")) {
					dl_add(j, NULL, val);
					out = 1;
				}
				named = 1;
				break;
			}
			if (*q == 'O' && curl)
				remote = 1;
			else if (*q == 'J' && curl)
				j->x->st->dl_unknown = 1;
			else if ((*q == 'P' && wget) || (*q == 'd' && !curl && !wget)) {
				dir = q[1] ? q + 1 : i + 1 < j->nargs ? j->args[++i] : "";
				break;
			} else if (*q == 'i' && !curl) {
				j->x->st->dl_unknown = 1;
			} else if (curl && strchr("HdXuAebcFTwxrmKCEyYzQtUhP", *q)) {
				i += !q[1];
				break;
			}
		}
	}
	if (remote && !named) {
		for (size_t i = 0; i < j->nargs; i++)
			if (is_url(j->args[i])) {
				char *name = remote_name(j->args[i]);
				if (name)
					dl_add(j, dir, name);
				else if (wget)
					dl_add(j, dir, "index.html");
				else
					j->x->st->dl_unknown = 1;
				free(name);
				out = 1;
			}
	}
	if (!out) {
		/* to stdout: a redirection's file holds it */
		for (size_t r = 0; r < cmd->nredirs; r++)
			if ((!strcmp(cmd->redirs[r].op, ">") || !strcmp(cmd->redirs[r].op, ">>") ||
			     !strcmp(cmd->redirs[r].op, ">|") || !strcmp(cmd->redirs[r].op, "&>")) &&
			    (cmd->redirs[r].fd == -1 || cmd->redirs[r].fd == 1))
				dl_add(j, NULL, cmd->redirs[r].target);
	}
}

static int is_downloader(const tgi_cmd *c)
{
	size_t p = program_index(c);
	return p < c->argc && in_list(tgi_shell_basename(c->argv[p]), downloaders);
}

/* Downloaded content passed on (`curl … | tee i.sh`, `| cat > i.sh`):
 * the files it lands in. */
static void dl_note_passed(const jin *j, const tgi_cmdline *cl, size_t i)
{
	const tgi_cmd *cmd = &cl->v[i];
	int from_dl = 0;

	if (!(cmd->flags & TGI_CMD_PIPED_IN))
		return;
	for (size_t k = cmd->from; k < i && !from_dl; k++)
		from_dl = is_downloader(&cl->v[k]);
	if (!from_dl)
		return;
	if (!strcmp(j->prog, "tee"))
		for (size_t k = 0; k < j->nargs; k++)
			if (j->args[k][0] != '-')
				dl_add(j, NULL, j->args[k]);
	for (size_t r = 0; r < cmd->nredirs; r++)
		if ((!strcmp(cmd->redirs[r].op, ">") || !strcmp(cmd->redirs[r].op, ">>")) &&
		    (cmd->redirs[r].fd == -1 || cmd->redirs[r].fd == 1))
			dl_add(j, NULL, cmd->redirs[r].target);
}

/* The file a command runs as code: an interpreter's script, source/.,
 * a program named by a path, a shell's stdin read from a file, or a file
 * cat into an interpreter reading its stdin. */
static void run_targets(const jin *j, const tgi_cmdline *cl, size_t i, size_t p, tgi_strv *out)
{
	const tgi_cmd *cmd = &cl->v[i];
	const struct interp *it = find_interp(j->prog);
	int lang = tgi_code_lang(j->prog) != TGI_LANG_NONE;

	if (strchr(cmd->argv[p], '/'))
		tgi_strv_push(out, tgi_strdup(cmd->argv[p]));
	if ((!strcmp(j->prog, "source") || !strcmp(j->prog, ".")) && j->nargs)
		tgi_strv_push(out, tgi_strdup(j->args[0]));
	if (!it && !lang)
		return;
	if (it && !reads_code_from_stdin(j, it)) {
		/* the first operand after the options, unless code is inline */
		tgi_strv codes = { 0 };
		int from_stdin = 0;
		if (lang)
			tgi_code_of(cmd, p, &codes, &from_stdin);
		int inline_code = codes.n > 0;
		tgi_strv_free(&codes);
		for (size_t k = 0; k < j->nargs && !inline_code; k++) {
			const char *a = j->args[k];
			if (a[0] == '-' && a[1]) {
				if (it == &interps[0] && strchr(a, 'c') && a[1] != '-')
					break;
				if (a[1] != '-' && strchr(it->vals, a[strlen(a) - 1]))
					k++;
				continue;
			}
			tgi_strv_push(out, tgi_strdup(a));
			break;
		}
		return;
	}
	for (size_t r = 0; r < cmd->nredirs; r++)
		if (!strcmp(cmd->redirs[r].op, "<") && (cmd->redirs[r].fd == -1 || cmd->redirs[r].fd == 0))
			tgi_strv_push(out, tgi_strdup(cmd->redirs[r].target));
	if (cmd->flags & TGI_CMD_PIPED_IN)
		for (size_t k = cmd->from; k < i; k++) {
			const tgi_cmd *up = &cl->v[k];
			size_t q = program_index(up);
			if (q >= up->argc || strcmp(tgi_shell_basename(up->argv[q]), "cat"))
				continue;
			for (size_t w = q + 1; w < up->argc; w++)
				if (up->argv[w][0] != '-')
					tgi_strv_push(out, tgi_strdup(up->argv[w]));
		}
}

/* Does the command run a file the line downloaded? */
static const char *dl_check(const jin *j, const tgi_cmdline *cl, size_t i, size_t p)
{
	fstate *st = j->x->st;
	tgi_strv t = { 0 };
	const char *why = NULL;
	char path[PATH_MAX];

	if (!st->dl.n && !st->dl_unknown)
		return NULL;
	run_targets(j, cl, i, p, &t);
	for (size_t k = 0; k < t.n && !why; k++) {
		if (resolve_word(j->x, j->cwd, t.v[k], path, sizeof path) < 0) {
			note_blind(j->x, "a file that may have been downloaded is run: ", t.v[k]);
			continue;
		}
		for (size_t d = 0; d < st->dl.n && !why; d++)
			if (!strcmp(st->dl.v[d], path))
				why = WHY_DLRUN;
		if (!why && st->dl_unknown)
			note_blind(j->x, "a file the line may have downloaded is run: ", t.v[k]);
	}
	tgi_strv_free(&t);
	return why;
}

/* ln -s TARGET LINK, mount --bind SRC DST: later paths under the link are
 * judged as what it points at too. */
static void note_link(const jin *j)
{
	fstate *st = j->x->st;
	const char **ops = NULL;
	size_t n;
	int ln = !strcmp(j->prog, "ln"), bind = 0;

	if (st->link_from.n >= LINKS_MAX)
		return;
	if (ln && !has_flag(j, 's', "--symbolic", "tS"))
		return;
	if (!ln && strcmp(j->prog, "mount"))
		return;
	if (!ln) {
		for (size_t i = 0; i < j->nargs; i++)
			bind |= !strcmp(j->args[i], "--bind") || !strcmp(j->args[i], "--rbind") ||
			        ((!strcmp(j->args[i], "-o") || !strcmp(j->args[i], "--options")) && i + 1 < j->nargs &&
			         strstr(j->args[i + 1], "bind"));
		if (!bind)
			return;
	}
	n = operands(j, ln ? "tS" : "otTLU", (const char *const[]){ "--options", "--types", "--target-directory", NULL }, &ops);
	if (n >= 1) {
		const char *target = ops[0], *link = n >= 2 ? ops[n - 1] : tgi_shell_basename(ops[0]);
		const char *tdir = ln ? find_option(j, 't', "--target-directory", "S", NULL, 0) : NULL;
		char lpath[PATH_MAX], tpath[PATH_MAX], both[2 * PATH_MAX];
		if (tdir) {
			tgi_snprintf(both, sizeof both, "%s/%s", tdir, tgi_shell_basename(target));
			link = both;
		}
		if (resolve_word(j->x, j->cwd, link, lpath, sizeof lpath) == 0) {
			/* a relative target is relative to the link's directory */
			char ldir[PATH_MAX];
			tgi_snprintf(ldir, sizeof ldir, "%s", lpath);
			char *sl = strrchr(ldir, '/');
			if (sl && sl != ldir)
				*sl = '\0';
			else if (sl)
				sl[1] = '\0';
			if (resolve_word(j->x, ln && target[0] != '/' && target[0] != '~' && target[0] != '$' ? ldir : j->cwd,
			                 target, tpath, sizeof tpath) == 0) {
				tgi_strv_push(&st->link_from, tgi_strdup(lpath));
				tgi_strv_push(&st->link_to, tgi_strdup(tpath));
				/* LINK may be a directory: LINK/NAME is the link then */
				if (n == 2 && st->link_from.n < LINKS_MAX) {
					tgi_snprintf(both, sizeof both, "%s/%s", lpath, tgi_shell_basename(target));
					tgi_strv_push(&st->link_from, tgi_strdup(both));
					tgi_strv_push(&st->link_to, tgi_strdup(tpath));
				}
			} else {
				note_blind(j->x, "a link to a place the floor cannot tell: ", target);
			}
		}
	}
	free(ops);
}

/* ---- what the line defines and feeds */

/* A command line the floor built (an alias with its words, an eval, …):
 * its text, or "" when it grew past the buffer's bound (then the floor
 * cannot judge it and says so). */
static char *built(const fctx *x, tgi_buf *b)
{
	if (b->over) {
		tgi_buf_free(b);
		note_blind(x, "a command line too long for the floor to judge", "");
		return tgi_strdup("");
	}
	return tgi_buf_steal(b);
}

/* Is command i a member of a pipeline that starts processes (piped into
 * or out of, or in the background)? */
static int spawns(const tgi_cmdline *cl, size_t i)
{
	const tgi_cmd *c = &cl->v[i];
	return (c->flags & (TGI_CMD_PIPED_IN | TGI_CMD_BACKGROUND)) ||
	       (i + 1 < cl->n && (cl->v[i + 1].flags & TGI_CMD_PIPED_IN) && cl->v[i + 1].from <= i);
}

static int on_stack(const fstate *st, const char *kind, const char *name)
{
	for (size_t i = 0; i < st->fstack.n; i++)
		if (!strncmp(st->fstack.v[i], kind, strlen(kind)) && !strcmp(st->fstack.v[i] + strlen(kind), name))
			return 1;
	return 0;
}

static void push_stack(fstate *st, const char *kind, const char *name)
{
	char *s = tgi_xmalloc(strlen(kind) + strlen(name) + 1);
	strcpy(s, kind);
	strcat(s, name);
	tgi_strv_push(&st->fstack, s);
}

static void pop_stack(fstate *st)
{
	if (st->fstack.n) {
		free(st->fstack.v[--st->fstack.n]);
		st->fstack.v[st->fstack.n] = NULL;
	}
}

/* An alias the line defines, as the first word: its text, then the
 * remaining words quoted, run by the same shell. */
static const char *judge_alias(const jin *j, const tgi_cmd *cmd, size_t depth)
{
	fstate *st = j->x->st;
	const char *why = NULL, *val;

	if (!st->eval || !cmd->argc || on_stack(st, "alias:", cmd->argv[0]))
		return NULL;
	for (size_t k = 0; !why && (val = tgi_eval_alias(st->eval, cmd->argv[0], k)); k++) {
		tgi_buf b;
		tgi_buf_init(&b, TGI_SHELL_MAX);
		tgi_buf_puts(&b, val);
		for (size_t w = 1; w < cmd->argc; w++) {
			tgi_buf_puts(&b, " '");
			for (const char *q = cmd->argv[w]; *q; q++)
				if (*q == '\'')
					tgi_buf_puts(&b, "'\\''");
				else
					tgi_buf_append(&b, q, 1);
			tgi_buf_puts(&b, "'");
		}
		char *text = built(j->x, &b);
		push_stack(st, "alias:", cmd->argv[0]);
		why = judge_same(j, text, NULL, 0, 0, depth);
		pop_stack(st);
		free(text);
	}
	return why;
}

/* A function the line defines, called: its body with the arguments as $1…
 * A call of a function already being expanded that starts processes is a
 * fork bomb; any other recursion stops. */
static const char *judge_function(const jin *j, const tgi_cmdline *cl, size_t i, size_t p, size_t depth)
{
	fstate *st = j->x->st;
	const tgi_cmd *cmd = &cl->v[i];
	const char *why = NULL, *body;
	const char *names[2] = { cmd->argv[0], cmd->argv[p] };

	if (!st->eval)
		return NULL;
	for (int n = 0; n < 2 && !why; n++) {
		const char *name = names[n];
		if (n == 1 && !strcmp(names[0], names[1]))
			break;
		if (!tgi_eval_func(st->eval, name, 0))
			continue;
		if (on_stack(st, "func:", name)) {
			if (spawns(cl, i))
				return WHY_BOMB;
			continue;
		}
		size_t first = n == 0 ? 1 : p + 1;
		for (size_t k = 0; !why && (body = tgi_eval_func(st->eval, name, k)); k++) {
			push_stack(st, "func:", name);
			why = judge_same(j, body, cmd->argv + first, cmd->argc - first, 1, depth);
			pop_stack(st);
		}
	}
	return why;
}

/* eval WORDS: the words joined, run by the same shell. */
static const char *judge_eval(const jin *j, size_t depth)
{
	tgi_buf b;
	const char *why;

	if (strcmp(j->prog, "eval") || !j->nargs)
		return NULL;
	tgi_buf_init(&b, TGI_SHELL_MAX);
	for (size_t k = 0; k < j->nargs; k++)
		if ((b.len && tgi_buf_puts(&b, " ") < 0) || tgi_buf_puts(&b, j->args[k]) < 0)
			break;
	char *text = built(j->x, &b);
	why = judge_same(j, text, NULL, 0, 0, depth);
	free(text);
	return why;
}

#define XARGS_ITEMS  256   /* words xargs is fed that are judged at once */
#define XARGS_RUNS   32    /* commands `xargs -I` makes that are judged */
#define XARGS_UNKNOWN "${xargs input}"

/* The words a literal feed gives xargs: its words (quotes removed as
 * xargs removes them, and as they are), and its lines. */
static void feed_items(const tgi_feed *f, tgi_strv *items)
{
	const char *t = f->text ? f->text : "";
	for (const char *line = t; *line && items->n < XARGS_ITEMS;) {
		size_t ln = strcspn(line, "\n");
		char *l = tgi_strndup(line, ln);
		for (char *w = l; *w && items->n < XARGS_ITEMS;) {
			w += strspn(w, " \t\r");
			size_t wn = strcspn(w, " \t\r");
			if (wn) {
				char *word = tgi_strndup(w, wn), *bare = tgi_xmalloc(wn + 1);
				size_t bn = 0;
				for (size_t q = 0; q < wn; q++)
					if (word[q] != '\'' && word[q] != '"' && word[q] != '\\')
						bare[bn++] = word[q];
				bare[bn] = '\0';
				tgi_strv_push(items, word);
				if (strcmp(bare, word))
					tgi_strv_push(items, bare);
				else
					free(bare);
			}
			w += wn;
		}
		if (strcspn(l, " \t") < strlen(l) && items->n < XARGS_ITEMS)
			tgi_strv_push(items, tgi_strdup(l));
		free(l);
		line += ln + (line[ln] == '\n');
	}
	/* what is past the cap is as good as unknown */
	if (f->unknown || items->n >= XARGS_ITEMS)
		tgi_strv_push(items, tgi_strdup(XARGS_UNKNOWN));
}

/* xargs CMD fed by what the line says: CMD with the words appended, or
 * (-I R) once per word with R replaced. */
static const char *judge_xargs(const jin *j, const tgi_cmdline *cl, size_t i, size_t depth)
{
	const tgi_cmd *cmd = &cl->v[i];
	fstate *st = j->x->st;
	size_t xi = cmd->argc, k;
	const char *repl = NULL, *why = NULL;
	int from_file = 0;

	for (size_t q = 0; q < tgi_shell_program(cmd) && q < cmd->argc; q++)
		if (!strcmp(tgi_shell_basename(cmd->argv[q]), "xargs")) {
			xi = q;
			break;
		}
	if (xi >= cmd->argc || !st->eval || too_deep(j->x, depth))
		return NULL;
	for (k = xi + 1; k < cmd->argc; k++) {
		const char *a = cmd->argv[k];
		if (!strcmp(a, "--")) {
			k++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			if (!strncmp(a, "--replace", 9))
				repl = eq ? eq + 1 : "{}";
			else if (!strncmp(a, "--arg-file", 10))
				from_file = 1, k += !eq;
			else if (!eq && (!strncmp(a, "--delimiter", 11) || !strncmp(a, "--max-", 6) ||
			                 !strncmp(a, "--process-slot-var", 18) || !strncmp(a, "--eof", 5)))
				k += strncmp(a, "--eof", 5) != 0;
			continue;
		}
		for (const char *q = a + 1; *q; q++) {
			if (*q == 'I') {
				repl = q[1] ? q + 1 : k + 1 < cmd->argc ? cmd->argv[++k] : "{}";
				break;
			}
			if (*q == 'i') {
				repl = q[1] ? q + 1 : "{}";
				break;
			}
			if (*q == 'a') {
				from_file = 1;
				k += !q[1];
				break;
			}
			if (strchr("dnLPsE", *q)) {
				k += !q[1];
				break;
			}
			if (strchr("el", *q))
				break;
		}
	}
	if (k >= cmd->argc)
		return NULL; /* echo */
	tgi_feed f = { 0 };
	tgi_strv items = { 0 };
	if (from_file)
		f.unknown = 1;
	else
		tgi_eval_stdin(st->eval, cl, i, &f);
	feed_items(&f, &items);
	tgi_feed_free(&f);
	if (!items.n) {
		tgi_strv_free(&items);
		return NULL;
	}
	if (!repl) {
		tgi_strv argv = { 0 };
		for (size_t w = k; w < cmd->argc; w++)
			tgi_strv_push(&argv, tgi_strdup(cmd->argv[w]));
		for (size_t w = 0; w < items.n; w++)
			tgi_strv_push(&argv, tgi_strdup(items.v[w]));
		tgi_cmdline sub;
		char err[256];
		if (tgi_eval_argv(st->eval, (const char *const *)argv.v, argv.n, &sub, err, sizeof err) == 0) {
			why = judge_line(j->x, &sub, j->cwd, depth + 1);
			tgi_cmdline_free(&sub);
		} else if (tgi_eval_blind(st->eval)) {
			note_blind(j->x, "", tgi_eval_blind(st->eval));
		}
		tgi_strv_free(&argv);
	} else {
		if (items.n > XARGS_RUNS)
			note_blind(j->x, "xargs -I fed more words than the floor judges", "");
		for (size_t w = 0; w < items.n && w < XARGS_RUNS && !why; w++) {
			tgi_strv argv = { 0 };
			for (size_t q = k; q < cmd->argc; q++) {
				tgi_buf b;
				tgi_buf_init(&b, TGI_SHELL_MAX);
				for (const char *s = cmd->argv[q]; *s;) {
					const char *hit = *repl ? strstr(s, repl) : NULL;
					if (!hit) {
						tgi_buf_puts(&b, s);
						break;
					}
					tgi_buf_append(&b, s, (size_t)(hit - s));
					tgi_buf_puts(&b, items.v[w]);
					s = hit + strlen(repl);
				}
				tgi_strv_push(&argv, built(j->x, &b));
			}
			tgi_cmdline sub;
			char err[256];
			if (tgi_eval_argv(st->eval, (const char *const *)argv.v, argv.n, &sub, err, sizeof err) == 0) {
				why = judge_line(j->x, &sub, j->cwd, depth + 1);
				tgi_cmdline_free(&sub);
			}
			tgi_strv_free(&argv);
		}
	}
	tgi_strv_free(&items);
	return why;
}

/* Interpreter code: its own floors, what it cannot see, and its effects
 * judged by the floor's rules. */
static const char *judge_code(const jin *j, const tgi_cmdline *cl, size_t i, tgi_lang lang,
                              const char *code, size_t depth)
{
	fstate *st = j->x->st;
	tgi_code_report r;
	const char *why;

	if (too_deep(j->x, depth) || tgi_eval_budget_spend(&st->budget, strlen(code)) < 0)
		return NULL;
	tgi_code_scan(lang, code, strlen(code), &r);
	why = r.floor;
	if (r.blind)
		note_blind(j->x, r.blind, "");
	if (r.fetches && r.dl_unknown)
		st->dl_unknown = 1;
	for (size_t k = 0; k < r.n && !why; k++) {
		tgi_code_effect *e = &r.v[k];
		if (!e->words.n)
			continue;
		switch (e->kind) {
		case TGI_CODE_SHELL:
			why = judge_script(j, e->words.v[0], strlen(e->words.v[0]), depth);
			break;
		case TGI_CODE_ARGV:
			why = judge_exec(j, e->words.v, e->words.n, depth);
			break;
		case TGI_CODE_RMTREE:
			why = each_path(j, e->words.v[0], 0, delete_check, 0);
			break;
		case TGI_CODE_WRITE:
			why = each_path(j, e->words.v[0], 1, write_check, 0);
			break;
		case TGI_CODE_DOWNLOAD:
			dl_add(j, NULL, e->words.v[0]);
			break;
		case TGI_CODE_UNLINK:
			why = each_path(j, e->words.v[0], 0, unlink_check, 0);
			if (!why)
				why = each_path(j, e->words.v[0], 1, write_check, 1);
			break;
		case TGI_CODE_WALKDEL:
			/* what it removes of the tree it walks the floor cannot tell:
			 * the root, a home or a system directory are floored, the
			 * workspace asked about */
			why = each_path(j, e->words.v[0], 0, delete_check, 0);
			if (why && !strcmp(why, WHY_WS)) {
				note_blind(j->x, "interpreter code that removes what it finds walking the workspace", "");
				why = NULL;
			}
			break;
		}
	}
	/* code that runs what it reads on stdin: from a download, or a literal */
	if (!why && r.stdin_eval && st->eval) {
		const tgi_cmd *cmd = &cl->v[i];
		for (size_t k = cmd->from; (cmd->flags & TGI_CMD_PIPED_IN) && k < i && !why; k++)
			if (is_downloader(&cl->v[k]))
				why = WHY_PIPE;
		if (!why) {
			tgi_feed f = { 0 };
			tgi_eval_stdin(st->eval, cl, i, &f);
			if (f.text && f.text[0])
				why = judge_code(j, cl, i, lang, f.text, depth + 1);
			if (f.unknown)
				note_blind(j->x, "interpreter code that runs what it reads from a pipe", "");
			tgi_feed_free(&f);
		}
	}
	tgi_code_report_free(&r);
	return why;
}

/* Inline code (-c, -e, -r, …) and code an interpreter reads on stdin when
 * the line says what it is (a here-doc, a here-string, a literal pipe). */
static const char *judge_interp(const jin *j, const tgi_cmdline *cl, size_t i, size_t p, size_t depth)
{
	const tgi_cmd *cmd = &cl->v[i];
	tgi_strv codes = { 0 };
	int from_stdin = 0;
	const char *why = NULL;
	tgi_lang lang = tgi_code_of(cmd, p, &codes, &from_stdin);

	if (lang == TGI_LANG_NONE)
		return NULL;
	for (size_t k = 0; k < codes.n && !why; k++)
		why = judge_code(j, cl, i, lang, codes.v[k], depth);
	if (!why && from_stdin && j->x->st->eval) {
		tgi_feed f = { 0 };
		tgi_eval_stdin(j->x->st->eval, cl, i, &f);
		if (f.text && f.text[0])
			why = judge_code(j, cl, i, lang, f.text, depth);
		tgi_feed_free(&f);
	}
	tgi_strv_free(&codes);
	return why;
}

static const char *judge_nested(const tgi_cmdline *cl, size_t i, const jin *j, size_t depth)
{
	const char *script = nested_script(j), *why = NULL;
	const struct interp *it = find_interp(j->prog);

	if (script)
		why = judge_script(j, script, strlen(script), depth);
	if (!why && it == &interps[0] && reads_code_from_stdin(j, it) && j->x->st->eval) {
		tgi_feed f = { 0 };
		tgi_eval_stdin(j->x->st->eval, cl, i, &f);
		if (f.text && f.text[0])
			why = judge_script(j, f.text, strlen(f.text), depth);
		tgi_feed_free(&f);
	}
	return why;
}

/* ---- files the line writes, then runs */

#define WRITTEN_MAX 32

/* Remember that path (a word) now holds text (NULL: what it holds cannot be
 * told); append adds to what it held. */
static void note_written(const jin *j, const char *word, const char *text, int append)
{
	fstate *st = j->x->st;
	char path[PATH_MAX];
	size_t k;

	if (resolve_word(j->x, j->cwd, word, path, sizeof path) < 0)
		return;
	for (k = 0; k < st->wpath.n && strcmp(st->wpath.v[k], path); k++)
		;
	if (k == st->wpath.n) {
		if (!text || st->wpath.n >= WRITTEN_MAX)
			return;
		tgi_strv_push(&st->wpath, tgi_strdup(path));
		tgi_strv_push(&st->wtext, tgi_strdup(""));
		append = 0;
	}
	if (!text) {
		free(st->wtext.v[k]);
		st->wtext.v[k] = NULL;
		return;
	}
	if (!st->wtext.v[k] && append)
		return;
	size_t old = append && st->wtext.v[k] ? strlen(st->wtext.v[k]) : 0;
	if (old + strlen(text) > TGI_EVAL_FEED)
		text = NULL;
	char *t = text ? tgi_xmalloc(old + strlen(text) + 1) : NULL;
	if (t) {
		memcpy(t, st->wtext.v[k], old);
		strcpy(t + old, text);
	}
	free(st->wtext.v[k]);
	st->wtext.v[k] = t;
}

/* What a command writes into files, when the line says: echo/printf/cat
 * <<EOF … > F, tee F, cp KNOWN F. */
static void note_writes(const jin *j, const tgi_cmdline *cl, size_t i)
{
	const tgi_cmd *cmd = &cl->v[i];
	tgi_eval *e = j->x->st->eval;
	tgi_feed f = { 0 };

	if (!e)
		return;
	for (size_t r = 0; r < cmd->nredirs; r++) {
		const tgi_redir *rd = &cmd->redirs[r];
		int out = (!strcmp(rd->op, ">") || !strcmp(rd->op, ">>") || !strcmp(rd->op, ">|") ||
		           !strcmp(rd->op, "&>") || !strcmp(rd->op, "&>>")) && (rd->fd == -1 || rd->fd == 1);
		if (!out || !rd->target)
			continue;
		tgi_eval_prints(e, cl, i, &f);
		note_written(j, rd->target, f.unknown ? NULL : f.text, rd->op[1] == '>' || rd->op[2] == '>');
		tgi_feed_free(&f);
	}
	if (!strcmp(j->prog, "tee")) {
		int append = has_flag(j, 'a', "--append", NULL);
		tgi_eval_stdin(e, cl, i, &f);
		for (size_t k = 0; k < j->nargs; k++)
			if (j->args[k][0] != '-')
				note_written(j, j->args[k], f.unknown ? NULL : f.text, append);
		tgi_feed_free(&f);
	}
	if (!strcmp(j->prog, "cp") && j->nargs == 2 && j->args[0][0] != '-') {
		const fstate *st = j->x->st;
		char path[PATH_MAX];
		const char *text = NULL;
		if (resolve_word(j->x, j->cwd, j->args[0], path, sizeof path) == 0)
			for (size_t k = 0; k < st->wpath.n; k++)
				if (!strcmp(st->wpath.v[k], path))
					text = st->wtext.v[k];
		note_written(j, j->args[1], text, 0);
	}
}

/* The text the line wrote into path, or NULL. */
static const char *written(const fctx *x, const char *path)
{
	for (size_t k = 0; k < x->st->wpath.n; k++)
		if (!strcmp(x->st->wpath.v[k], path))
			return x->st->wtext.v[k];
	return NULL;
}

/* The recipes of a makefile's text: tab-led lines, and what follows `;` on
 * a rule's line. */
static const char *judge_makefile(const jin *j, const char *text, size_t depth)
{
	const char *why = NULL;
	for (const char *l = text; *l && !why;) {
		size_t n = strcspn(l, "\n");
		char *line = tgi_strndup(l, n);
		const char *semi = strchr(line, ';'), *colon = strchr(line, ':');
		if (line[0] == '\t')
			why = judge_script(j, line + 1 + strspn(line + 1, "@-+"), strlen(line + 1 + strspn(line + 1, "@-+")), depth);
		else if (colon && semi && semi > colon)
			why = judge_script(j, semi + 1, strlen(semi + 1), depth);
		free(line);
		l += n + (l[n] == '\n');
	}
	return why;
}

/* Run a file's text as its runner would: code for an interpreter, the
 * language of a #! line, else a shell script. */
static const char *judge_file_text(const jin *j, const tgi_cmdline *cl, size_t i, const char *text,
                                   size_t depth)
{
	tgi_lang lang = tgi_code_lang(j->prog);
	if (!strcmp(j->prog, "make") || !strcmp(j->prog, "gmake"))
		return judge_makefile(j, text, depth);
	if (lang == TGI_LANG_NONE && !strncmp(text, "#!", 2)) {
		char first[256];
		tgi_snprintf(first, sizeof first, "%.*s", (int)strcspn(text + 2, "\n"), text + 2);
		char *w = strtok(first, " \t"), *next = w ? strtok(NULL, " \t") : NULL;
		if (w && !strcmp(tgi_shell_basename(w), "env") && next)
			w = next;
		if (w)
			lang = tgi_code_lang(tgi_shell_basename(w));
	}
	if (lang != TGI_LANG_NONE)
		return judge_code(j, cl, i, lang, text, depth);
	return judge_script(j, text, strlen(text), depth);
}

/* Does the command run a file the line wrote (`echo 'rm -rf /' > s.sh; sh
 * s.sh`), or its stdin as a file (`sh /dev/stdin <<< …`)? */
static const char *written_check(const jin *j, const tgi_cmdline *cl, size_t i, size_t p,
                                 size_t depth)
{
	tgi_strv t = { 0 };
	const char *why = NULL;
	char path[PATH_MAX];

	run_targets(j, cl, i, p, &t);
	if (!strcmp(j->prog, "make") || !strcmp(j->prog, "gmake")) {
		const char *f = find_option(j, 'f', "--file", "CIfjlWo", NULL, 0);
		if (f)
			tgi_strv_push(&t, tgi_strdup(f));
		else
			for (int k = 0; k < 3; k++)
				tgi_strv_push(&t, tgi_strdup((const char *const[]){ "GNUmakefile", "makefile", "Makefile" }[k]));
	}
	if ((!strcmp(j->prog, "at") || !strcmp(j->prog, "batch"))) {
		const char *f = find_option(j, 'f', NULL, "fqt", NULL, 0);
		if (f)
			tgi_strv_push(&t, tgi_strdup(f));
	}
	for (size_t k = 0; k < t.n && !why; k++) {
		const char *w = t.v[k];
		if (!strcmp(w, "/dev/stdin") || !strcmp(w, "/dev/fd/0") || !strcmp(w, "/proc/self/fd/0") ||
		    (!strcmp(w, "-") && (!strcmp(j->prog, "make") || !strcmp(j->prog, "gmake")))) {
			tgi_feed f = { 0 };
			if (j->x->st->eval)
				tgi_eval_stdin(j->x->st->eval, cl, i, &f);
			if (f.text && f.text[0])
				why = judge_file_text(j, cl, i, f.text, depth);
			tgi_feed_free(&f);
			continue;
		}
		if (resolve_word(j->x, j->cwd, w, path, sizeof path) < 0)
			continue;
		const char *text = written(j->x, path);
		if (text)
			why = judge_file_text(j, cl, i, text, depth);
	}
	tgi_strv_free(&t);
	return why;
}

/* ---- programs that run a command line they are given */

/* Variables whose value a program runs as a command line. */
static const char *const command_vars[] = {
	"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
	"GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "PAGER", "MANPAGER",
	"SYSTEMD_PAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND",
	"BASH_ENV", "ENV", NULL,
};

/* A NAME=value word: its value is a command line when NAME is one of
 * command_vars. */
static const char *judge_command_var(const jin *j, const char *w, size_t depth)
{
	size_t n = strcspn(w, "=");
	if (!w[n])
		return NULL;
	for (size_t k = 0; command_vars[k]; k++)
		if (strlen(command_vars[k]) == n && !strncmp(w, command_vars[k], n)) {
			const char *v = w + n + 1;
			v += strspn(v, "|!");
			return judge_script(j, v, strlen(v), depth);
		}
	return NULL;
}

static int word_in(const char *w, const char *const *list)
{
	return in_list(w, list);
}

/* A feed of the command's stdin, judged as a shell script (at, batch,
 * a root shell) or as a crontab (each line's command). */
static const char *judge_feed_script(const jin *j, const tgi_cmdline *cl, size_t i, int crontab,
                                     size_t depth)
{
	tgi_feed f = { 0 };
	const char *why = NULL;

	if (!j->x->st->eval)
		return NULL;
	tgi_eval_stdin(j->x->st->eval, cl, i, &f);
	if (f.text && f.text[0] && !crontab)
		why = judge_script(j, f.text, strlen(f.text), depth);
	for (const char *l = f.text ? f.text : ""; crontab && *l && !why;) {
		size_t n = strcspn(l, "\n");
		char *line = tgi_strndup(l, n), *c = line + strspn(line, " \t");
		if (*c && *c != '#') {
			int fields = *c == '@' ? 1 : 5;
			for (int k = 0; k < fields && *c; k++) {
				c += strcspn(c, " \t");
				c += strspn(c, " \t");
			}
			if (*c)
				why = judge_script(j, c, strlen(c), depth);
		}
		free(line);
		l += n + (l[n] == '\n');
	}
	tgi_feed_free(&f);
	return why;
}

/*
 * Programs that run a command line given as a word: trap, script -c,
 * ssh HOST CMD, tmux, screen, GNU parallel, git -c KEY=CMD, find -exec,
 * vim -c '!CMD', gdb -ex 'shell CMD', expect -c 'spawn CMD', env -S,
 * at/batch/crontab (their stdin), a root shell (sudo -s, -i) fed by the
 * line; and D-Bus calls that reboot.
 */
static const char *judge_runners(const jin *j, const tgi_cmdline *cl, size_t i, size_t depth)
{
	const char *p = j->prog, *why = NULL;
	char *const *a = j->args;
	size_t n = j->nargs;

	if (!strcmp(p, "trap") && n >= 1 && strcmp(a[0], "-p") && strcmp(a[0], "-l")) {
		const char *c = !strcmp(a[0], "--") && n >= 2 ? a[1] : a[0];
		if (strcmp(c, "-") && strcmp(c, ""))
			why = judge_same(j, c, NULL, 0, 0, depth);
	} else if (!strcmp(p, "script")) {
		const char *c = find_option(j, 'c', "--command", "ETIOBt", NULL, 0);
		if (c)
			why = judge_script(j, c, strlen(c), depth);
	} else if (!strcmp(p, "ssh") || !strcmp(p, "autossh")) {
		size_t k = 0;
		for (; k < n && a[k][0] == '-'; k++)
			if (a[k][1] && strchr("bcDEeFIiJLlmOopQRSWw", a[k][strlen(a[k]) - 1]) && !a[k][2])
				k++;
		if (k + 1 < n) {
			tgi_buf b;
			tgi_buf_init(&b, TGI_SHELL_MAX);
			for (size_t q = k + 1; q < n; q++)
				tgi_buf_printf(&b, "%s%s", q > k + 1 ? " " : "", a[q]);
			char *c = built(j->x, &b);
			why = judge_script(j, c, strlen(c), depth);
			free(c);
		}
	} else if (!strcmp(p, "tmux") || !strcmp(p, "screen") || !strcmp(p, "parallel") ||
	           !strcmp(p, "expect") || !strcmp(p, "dtach") || !strcmp(p, "abduco")) {
		/* every word may be a command line (a window's, a key stroke's) */
		for (size_t k = 0; k < n && !why; k++) {
			const char *w = a[k];
			if (w[0] == '-' || !strcmp(w, ":::") || !strcmp(w, "::::"))
				continue;
			if (!strcmp(p, "expect")) {
				const char *s = strstr(w, "spawn ");
				if (!s)
					s = strstr(w, "exec ");
				if (!s)
					continue;
				w = s + strcspn(s, " ") + 1;
			}
			why = judge_script(j, w, strlen(w), depth);
		}
		if (!why && !strcmp(p, "screen")) {
			/* screen [opts] PROGRAM ARGS… */
			size_t k = 0;
			while (k < n && a[k][0] == '-')
				k += (!strcmp(a[k], "-S") || !strcmp(a[k], "-X") || !strcmp(a[k], "-c") || !strcmp(a[k], "-p")) ? 2 : 1;
			if (k < n)
				why = judge_exec(j, a + k, n - k, depth);
		}
		if (!why && !strcmp(p, "parallel")) {
			/* parallel TEMPLATE ::: ARGS: the template with each argument */
			size_t sep = 0;
			while (sep < n && strcmp(a[sep], ":::"))
				sep++;
			for (size_t k = sep + 1; k < n && k < sep + 1 + XARGS_RUNS && !why; k++) {
				tgi_buf b;
				size_t q = 0;
				tgi_buf_init(&b, TGI_SHELL_MAX);
				while (q < sep && a[q][0] == '-')
					q++; /* parallel's own options */
				for (; q < sep; q++)
					tgi_buf_printf(&b, "%s ", a[q]);
				if (!strstr(b.p ? b.p : "", "{}"))
					tgi_buf_puts(&b, a[k]);
				char *c = built(j->x, &b);
				for (size_t at = 0; strstr(c + at, "{}");) {
					char *h = strstr(c + at, "{}");
					char *r = tgi_xmalloc(strlen(c) + strlen(a[k]) + 1);
					sprintf(r, "%.*s%s%s", (int)(h - c), c, a[k], h + 2);
					at = (size_t)(h - c) + strlen(a[k]);
					free(c);
					c = r;
				}
				why = judge_script(j, c, strlen(c), depth);
				free(c);
			}
		}
	} else if (!strcmp(p, "git")) {
		for (size_t k = 0; k + 1 < n && !why; k++) {
			if (strcmp(a[k], "-c"))
				continue;
			const char *eq = strchr(a[k + 1], '=');
			if (eq)
				why = judge_script(j, eq + 1 + strspn(eq + 1, "!"), strlen(eq + 1 + strspn(eq + 1, "!")), depth);
		}
	} else if (!strcmp(p, "find")) {
		static const char *const execs[] = { "-exec", "-execdir", "-ok", "-okdir", NULL };
		const char *start = n && a[0][0] != '-' ? a[0] : ".";
		for (size_t k = 0; k < n && !why; k++) {
			if (!word_in(a[k], execs))
				continue;
			size_t e = k + 1;
			while (e < n && strcmp(a[e], ";") && strcmp(a[e], "+"))
				e++;
			tgi_strv argv = { 0 };
			for (size_t q = k + 1; q < e; q++) {
				const char *w = a[q];
				const char *h = strstr(w, "{}");
				if (!h) {
					tgi_strv_push(&argv, tgi_strdup(w));
					continue;
				}
				char *r = tgi_xmalloc(strlen(w) + strlen(start) + 1);
				sprintf(r, "%.*s%s%s", (int)(h - w), w, start, h + 2);
				tgi_strv_push(&argv, r);
			}
			why = judge_exec(j, argv.v, argv.n, depth);
			tgi_strv_free(&argv);
			k = e;
		}
	} else if (!strcmp(p, "vim") || !strcmp(p, "vi") || !strcmp(p, "nvim") || !strcmp(p, "ex") ||
	           !strcmp(p, "view") || !strcmp(p, "gdb")) {
		for (size_t k = 0; k < n && !why; k++) {
			const char *c = NULL;
			if ((!strcmp(a[k], "-c") || !strcmp(a[k], "--cmd") || !strcmp(a[k], "-ex") ||
			     !strcmp(a[k], "--eval-command")) && k + 1 < n)
				c = a[++k];
			else if (a[k][0] == '+')
				c = a[k] + 1;
			else if (!strncmp(a[k], "--eval-command=", 15))
				c = a[k] + 15;
			if (!c)
				continue;
			const char *bang = strchr(c, '!');
			if (!strncmp(c, "shell ", 6))
				bang = c + 5;
			if (bang)
				why = judge_script(j, bang + 1, strlen(bang + 1), depth);
		}
	} else if (!strcmp(p, "at") || !strcmp(p, "batch")) {
		why = judge_feed_script(j, cl, i, 0, depth);
	} else if (!strcmp(p, "crontab")) {
		why = judge_feed_script(j, cl, i, 1, depth);
	} else if (!strcmp(p, "dbus-send") || !strcmp(p, "gdbus") || !strcmp(p, "busctl") ||
	           !strcmp(p, "qdbus") || !strcmp(p, "dbus")) {
		static const char *const verbs[] = { "Reboot", "PowerOff", "Halt", "KExec", "RebootWithFlags",
			                              "PowerOffWithFlags", "HaltWithFlags", "SoftReboot", NULL };
		for (size_t k = 0; k < n && !why; k++) {
			const char *dot = strrchr(a[k], '.');
			if (word_in(a[k], verbs) || (dot && word_in(dot + 1, verbs)))
				why = WHY_POWER;
		}
	} else if (!strcmp(p, "killall5")) {
		why = WHY_KILL;
	}
	return why;
}

/* env -S STRING (a command line in one word, split by env). */
static const char *judge_env_split(const jin *j, const tgi_cmd *cmd, size_t depth)
{
	const char *why = NULL;
	for (size_t k = 0; !why && k + 1 < cmd->argc; k++)
		if (!strcmp(tgi_shell_basename(cmd->argv[k]), "env"))
			for (size_t q = k + 1; q < cmd->argc && cmd->argv[q][0] == '-' && !why; q++) {
				const char *v = NULL;
				if (!strcmp(cmd->argv[q], "-S") || !strcmp(cmd->argv[q], "--split-string"))
					v = q + 1 < cmd->argc ? cmd->argv[q + 1] : NULL;
				else if (!strncmp(cmd->argv[q], "--split-string=", 15))
					v = cmd->argv[q] + 15;
				else if (cmd->argv[q][1] == 'S' && cmd->argv[q][2])
					v = cmd->argv[q] + 2;
				if (!v)
					continue;
				tgi_buf b;
				tgi_buf_init(&b, TGI_SHELL_MAX);
				tgi_buf_puts(&b, v);
				for (size_t r = q + 2; r < cmd->argc; r++)
					tgi_buf_printf(&b, " '%s'", cmd->argv[r]);
				char *c = built(j->x, &b);
				why = judge_script(j, c, strlen(c), depth);
				free(c);
			}
	return why;
}

/* ---- commands and lines */

static const char *judge_redir(const jin *j, const tgi_redir *r)
{
	static const char *const writes[] = { ">", ">>", ">|", "&>", "&>>", "<>", NULL };

	if (!r->target)
		return NULL;
	if (in_list(r->op, writes) ||
	    (strcmp(r->op, ">&") == 0 && r->target[strspn(r->target, "0123456789")] != '\0' &&
	     strcmp(r->target, "-") != 0)) {
		const char *why = each_path(j, r->target, 1, write_check, 0);
		if (why || strcmp(r->op, "<>") != 0)
			return why;
	}
	if (strcmp(r->op, "<") == 0 || strcmp(r->op, "<>") == 0)
		return each_path(j, r->target, 1, read_check, 0);
	return NULL;
}

static const char *judge_cmd(const fctx *x, const tgi_cmdline *cl, size_t i, const char *cwd,
                             size_t depth)
{
	const tgi_cmd *cmd = &cl->v[i];
	size_t p = program_index(cmd);
	jin j = { x, cwd, "", NULL, 0, 0 };
	const struct prog_rule *rule;
	const char *why = NULL;

	if (cmd->flags & TGI_CMD_OPAQUE)
		note_blind(x, "", cmd->why ? cmd->why : "a command the floor cannot read");
	for (size_t r = 0; r < cmd->nredirs && !why; r++)
		why = judge_redir(&j, &cmd->redirs[r]);
	for (size_t k = 0; k < cmd->nassigns && !why; k++)
		why = judge_command_var(&j, cmd->assigns[k], depth);
	if (!why)
		why = judge_env_split(&j, cmd, depth);
	if (!why && cmd->argc && p >= cmd->argc)
		for (size_t k = 0; k < cmd->argc && !why; k++)
			if (!strcmp(tgi_shell_basename(cmd->argv[k]), "sudo") ||
			    !strcmp(tgi_shell_basename(cmd->argv[k]), "doas"))
				/* sudo -s, sudo -i: a root shell reading the line's feed */
				why = judge_feed_script(&j, cl, i, 0, depth);
	if (why || p >= cmd->argc)
		return why;
	j.prog = tgi_shell_basename(cmd->argv[p]);
	if (!strcmp(j.prog, "export") || !strcmp(j.prog, "declare") || !strcmp(j.prog, "typeset") ||
	    !strcmp(j.prog, "readonly") || !strcmp(j.prog, "local"))
		for (size_t k = p + 1; k < cmd->argc && !why; k++)
			why = judge_command_var(&j, cmd->argv[k], depth);
	if (why)
		return why;
	j.args = cmd->argv + p + 1;
	j.nargs = cmd->argc - p - 1;
	if (!strchr("$`", cmd->argv[p][0]) && strchr(cmd->argv[p], '$'))
		note_blind(x, "a program the floor cannot tell: ", cmd->argv[p]);
	rule = find_rule(j.prog);
	if (rule && rule->judge)
		why = rule->judge(&j);
	for (size_t k = 0; rule && rule->reads && !why && k < j.nargs; k++)
		why = read_word(&j, j.args[k]);
	if (!why)
		why = judge_download(cl, i, &j);
	if (!why)
		why = dl_check(&j, cl, i, p);
	if (!why)
		why = written_check(&j, cl, i, p, depth);
	if (!why)
		why = judge_runners(&j, cl, i, depth);
	if (!why)
		why = judge_nested(cl, i, &j, depth);
	if (!why)
		why = judge_interp(&j, cl, i, p, depth);
	if (!why)
		why = judge_alias(&j, cmd, depth);
	if (!why)
		why = judge_function(&j, cl, i, p, depth);
	if (!why)
		why = judge_eval(&j, depth);
	if (!why)
		why = judge_xargs(&j, cl, i, depth);
	if (!why) {
		dl_note_downloader(&j, cmd);
		dl_note_passed(&j, cl, i);
		note_link(&j);
		note_writes(&j, cl, i);
	}
	return why;
}

/* After a cd (or pushd), where later commands run: cwd, or unknown
 * (*known = 0) when the floor cannot name the directory. */
static void follow_cd(const fctx *x, const tgi_cmd *cmd, char *cwd, int *known)
{
	size_t p = tgi_shell_program(cmd);
	const char *prog, *dir = NULL;
	tgi_strv alts = { 0 };
	char path[PATH_MAX];

	if (p >= cmd->argc)
		return;
	prog = tgi_shell_basename(cmd->argv[p]);
	if (strcmp(prog, "popd") == 0) {
		*known = 0;
		return;
	}
	if (strcmp(prog, "cd") != 0 && strcmp(prog, "pushd") != 0)
		return;
	for (size_t k = p + 1; k < cmd->argc && !dir; k++) {
		if (strcmp(cmd->argv[k], "--") == 0)
			dir = k + 1 < cmd->argc ? cmd->argv[k + 1] : NULL;
		else if (!is_option(cmd->argv[k]))
			dir = cmd->argv[k];
		if (strcmp(cmd->argv[k], "--") == 0)
			break;
	}
	if (!dir && strcmp(prog, "cd") == 0 && x->home[0]) {
		tgi_snprintf(cwd, PATH_MAX, "%s", x->home);
		*known = 1;
		return;
	}
	int was = *known;
	*known = 0;
	if (!dir || !strcmp(dir, "-"))
		return; /* cd -: back to a directory the floor does not keep */
	if (x->st->eval && tgi_eval_cdpath(x->st->eval) && dir[0] != '/' && dir[0] != '.' &&
	    dir[0] != '~' && dir[0] != '$')
		return; /* CDPATH: the directory may be under any of its entries */
	brace_expand(dir, &alts, 0);
	if (alts.n == 1 && !strpbrk(alts.v[0], "*?[") &&
	    resolve_word(x, was ? cwd : NULL, alts.v[0], path, sizeof path) == 0) {
		memcpy(cwd, path, strlen(path) + 1);
		*known = 1;
	}
	tgi_strv_free(&alts);
}

/* A one-word command naming name (a function call or definition). */
static int lone_word(const tgi_cmd *cmd, const char *name)
{
	return cmd->argc == 1 && (!name || strcmp(cmd->argv[0], name) == 0);
}

/*
 * Fork bombs, the classic shapes only: a function that pipes into itself
 * in the background (`:(){ :|:& };:`, any name, any spacing), which the
 * splitter leaves as the lone words N, N | N &, N; and Perl's
 * `fork while fork`.  Loops that fork (`while true; do x & done`) are left
 * to the process limit of the sandbox.
 */
static const char *fork_bomb(const tgi_cmdline *cl)
{
	for (size_t i = 0; i + 1 < cl->n; i++) {
		const tgi_cmd *a = &cl->v[i], *b = &cl->v[i + 1];
		if (!lone_word(a, NULL) || !lone_word(b, a->argv[0]) || !(b->flags & TGI_CMD_PIPED_IN) ||
		    !(b->flags & TGI_CMD_BACKGROUND))
			continue;
		for (size_t k = 0; k < cl->n; k++)
			if (k != i && k != i + 1 && lone_word(&cl->v[k], a->argv[0]))
				return WHY_BOMB;
	}
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		size_t p = program_index(c);
		if (p >= c->argc || strcmp(tgi_shell_basename(c->argv[p]), "perl") != 0)
			continue;
		for (size_t k = p + 1; k < c->argc; k++)
			if (strstr(c->argv[k], "fork while fork"))
				return WHY_BOMB;
	}
	return NULL;
}

/* Where commands run at each `( … )` level of the line: a cd inside a
 * subshell ends with it.  Levels past SCOPES share the deepest slot. */
#define SCOPES 8
typedef struct scopes {
	char     cwd[SCOPES][PATH_MAX];
	int      known[SCOPES];
	unsigned id[SCOPES];        /* the subshell the slot belongs to */
} scopes;

/* Before cmd runs: entering a new subshell starts from its parent's
 * directory; leaving one returns to the directory of the level it left to. */
static void scope_enter(scopes *s, const tgi_cmd *cmd, char *cwd, int *known)
{
	unsigned l = cmd->sublevel < SCOPES ? cmd->sublevel : SCOPES - 1;
	unsigned from = l;
	if (l && s->id[l] != cmd->subshell) {
		from = l - 1;           /* a new subshell: its parent's directory */
		s->id[l] = cmd->subshell;
	}
	*known = s->known[from];
	if (*known)
		memcpy(cwd, s->cwd[from], strlen(s->cwd[from]) + 1);
}

/* After cmd ran (and any cd was followed): its level's directory. */
static void scope_leave(scopes *s, const tgi_cmd *cmd, const char *cwd, int known)
{
	unsigned l = cmd->sublevel < SCOPES ? cmd->sublevel : SCOPES - 1;
	s->known[l] = known;
	if (known)
		memcpy(s->cwd[l], cwd, strlen(cwd) + 1);
}

/*
 * Judge every simple command of a line in order, following cd.  A cd in a
 * script the splitter unwrapped (`bash -c "cd /tmp"`, depth > 0) holds
 * for the rest of that script only: when the line comes back to depth 0
 * the directory is the one before it.  Likewise a cd inside `( … )` holds
 * only inside it: `(cd /tmp); rm -rf *` deletes where the line started.
 */
static const char *judge_line(const fctx *x, const tgi_cmdline *cl, const char *cwd0, size_t depth)
{
	char cwd[PATH_MAX], outer[PATH_MAX];
	int known = cwd0 != NULL, outer_known = known;
	const char *why = fork_bomb(cl);
	scopes *sc = tgi_xcalloc(1, sizeof *sc);

	if (known) {
		tgi_snprintf(cwd, sizeof cwd, "%s", cwd0);
		tgi_snprintf(outer, sizeof outer, "%s", cwd0);
		tgi_snprintf(sc->cwd[0], sizeof sc->cwd[0], "%s", cwd0);
	}
	sc->known[0] = known;
	for (size_t i = 0; i < cl->n && !why; i++) {
		const tgi_cmd *cmd = &cl->v[i];
		scope_enter(sc, cmd, cwd, &known);
		if (cmd->depth == 0 && i > 0 && cl->v[i - 1].depth > 0) {
			known = outer_known;
			if (known)
				memcpy(cwd, outer, strlen(outer) + 1);
		}
		why = judge_cmd(x, cl, i, known ? cwd : NULL, depth);
		follow_cd(x, cmd, cwd, &known);
		scope_leave(sc, cmd, cwd, known);
		if (cmd->depth == 0) {
			outer_known = known;
			if (known)
				memcpy(outer, cwd, strlen(cwd) + 1);
		}
	}
	free(sc);
	return why;
}

/* Add a home (normalised) and its .ssh, once each. */
static void add_cmd_home(fctx *x, const char *home)
{
	char norm[PATH_MAX];

	if (!home || home[0] != '/' || x->nhomes >= HOMES_MAX ||
	    join_path(norm, sizeof norm, home, NULL, 1) < 0)
		return;
	for (size_t i = 0; i < x->nhomes; i++)
		if (strcmp(x->homes[i], norm) == 0)
			return;
	if (join_path(x->ssh[x->nhomes], sizeof x->ssh[0], norm, ".ssh", 1) < 0)
		return;
	memcpy(x->homes[x->nhomes++], norm, strlen(norm) + 1);
}

/* Does the line hold anything an evaluation could change: an expansion,
 * a backquote, a tilde? */
static int expandable(const tgi_cmdline *cl)
{
	if (cl->src)
		return memchr(cl->src, '$', cl->srclen) || memchr(cl->src, '`', cl->srclen) ||
		       memchr(cl->src, '~', cl->srclen);
	for (size_t i = 0; i < cl->srcc; i++)
		if (strpbrk(cl->srcv[i], "$`~"))
			return 1;
	return 0;
}

/*
 * A line with an evaluation of its own (a whole call, or a script a new
 * shell runs): judged as split, then once per variant of its values.  The
 * evaluation stays the current one for what the same shell runs inside it
 * (aliases, function bodies, eval).
 */
static const char *judge_fresh(const fctx *x, const tgi_cmdline *cl, const char *cwd, size_t depth)
{
	fstate *st = x->st;
	tgi_eval *saved = st->eval, *e;
	const char *why;

	e = tgi_eval_new(cl, st->env, st->nenv, x->home[0] ? x->home : NULL, &st->budget);
	st->eval = e;
	/* as split: what it cannot see there the variants may (their notes count) */
	char before[sizeof st->blind];
	int expand = expandable(cl);
	memcpy(before, st->blind, sizeof before);
	why = judge_line(x, cl, cwd, depth);
	if (expand)
		memcpy(st->blind, before, sizeof before);
	if (!why && expand) {
		size_t n = tgi_eval_variants(e);
		for (size_t k = 0; k < n && !why; k++) {
			tgi_cmdline v;
			char err[256];
			tgi_eval_select(e, k);
			if (tgi_eval_line(e, &v, err, sizeof err) < 0)
				break;
			why = judge_line(x, &v, cwd, depth);
			tgi_cmdline_free(&v);
		}
	}
	st->eval = saved;
	tgi_eval_free(e);
	return why;
}

tgi_floor_verdict tgi_floor_judge(const tgi_cmdline *cl, const tgi_floor_in *in, char *reason,
                                  size_t cap)
{
	const char *why, *home = in ? in->home : NULL;
	fstate st;
	fctx *x;
	tgi_floor_verdict v = TGI_FLOOR_CLEAR;

	if (reason && cap)
		reason[0] = '\0';
	if (!cl || cl->n == 0)
		return TGI_FLOOR_CLEAR;
	if (!in || !in->workspace || in->workspace[0] != '/') {
		floor_with(reason, cap, "the workspace is not an absolute path, so no command can be checked");
		return TGI_FLOOR_DENY;
	}
	x = tgi_xcalloc(1, sizeof *x);
	if (join_path(x->ws, sizeof x->ws, in->workspace, NULL, 1) < 0) {
		free(x);
		floor_with(reason, cap, "the workspace path is too long to check a command against");
		return TGI_FLOOR_DENY;
	}
	if (!home || home[0] != '/')
		home = getenv("HOME");
	if (!home || home[0] != '/')
		home = tgi_passwd_home();
	add_cmd_home(x, home);
	if (x->nhomes)
		memcpy(x->home, x->homes[0], strlen(x->homes[0]) + 1);
	add_cmd_home(x, getenv("HOME"));
	add_cmd_home(x, tgi_passwd_home());
	memset(&st, 0, sizeof st);
	tgi_eval_budget_init(&st.budget);
	st.env = in->env;
	st.nenv = in->nenv;
	x->st = &st;
	why = judge_fresh(x, cl, x->ws, 0);
	if (why) {
		floor_with(reason, cap, why);
		v = TGI_FLOOR_DENY;
	} else if (st.blind[0] || st.budget.why[0]) {
		floor_with(reason, cap, st.blind[0] ? st.blind : st.budget.why);
		v = TGI_FLOOR_BLIND;
	}
	tgi_strv_free(&st.dl);
	tgi_strv_free(&st.link_from);
	tgi_strv_free(&st.link_to);
	tgi_strv_free(&st.fstack);
	tgi_strv_free(&st.wpath);
	tgi_strv_free(&st.wtext);
	free(x);
	return v;
}

int tgi_floor_command(const tgi_cmdline *cl, const char *workspace, const char *home,
                      char *reason, size_t cap)
{
	tgi_floor_in in = { workspace, home, NULL, 0 };
	char why[512];

	if (tgi_floor_judge(cl, &in, why, sizeof why) != TGI_FLOOR_DENY)
		return 0;
	return floor_with(reason, cap, why);
}
