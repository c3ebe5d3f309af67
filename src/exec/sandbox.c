/*
 * sandbox.c — run commands inside a sandbox: probe what this machine can
 * do (bubblewrap, Landlock, seccomp), then prepare one sandboxed exec.
 *
 * The probe runs once per process.  bubblewrap is used when it is found
 * and really creates its namespaces; Landlock (ABI >= 1) when it does
 * not; with neither, sandboxed modes refuse (fail closed).  Both need
 * seccomp.  TOOLGATE_SANDBOX_BACKEND (bubblewrap|landlock|none|auto)
 * overrides the choice; a forced backend that does not work is "none".
 *
 * The seccomp program (libseccomp, exported as classic BPF, default
 * allow):
 *   network cut: socket() and socketpair() for any family but AF_UNIX,
 *     and io_uring_setup/enter/register (io_uring can open sockets past a
 *     syscall filter) fail with EPERM.  connect, bind, listen, accept,
 *     sendto... cannot be told apart by their arguments, and need none:
 *     only AF_UNIX sockets can be made.
 *   landlock only: setsid() and setpgid() fail with EPERM, so nothing
 *     leaves the process group spawn kills (bubblewrap has a pid
 *     namespace for that).
 * ptrace is not filtered: bubblewrap's pid namespace and Landlock's own
 * ptrace rule already keep it inside the sandbox.
 *
 * bubblewrap: --ro-bind / /, a fresh /dev and /proc, a private /tmp
 * (tmpfs) and, with the network cut, a private /run (host daemons'
 * sockets: docker, dbus, agents), then the mounts (parents first): the
 * workspace (writable in workspace-write, read-only otherwise), the
 * private tmp dir (writable), each protected path inside a writable root
 * (read-only; one that does not exist yet is made as an empty directory
 * for the run, so that nothing can be created at its name, and removed
 * by tgi_sandbox_release unless another run still holds it).  Own
 * pid, ipc, uts, cgroup (and net) namespaces, a new session, no
 * capabilities, killed with its parent, the seccomp program by fd.
 *
 * landlock: prepared in the parent (ruleset: read/execute everywhere,
 * write under the writable roots and to /dev/null, /dev/zero, /dev/full;
 * TCP bind/connect handled with ABI >= 4; signals and abstract unix
 * sockets scoped with ABI >= 6); the child only makes async-signal-safe
 * syscalls: no_new_privs, drop capabilities, landlock_restrict_self,
 * PR_SET_SECCOMP.  It cannot keep .git/ or .toolgate/ inside a writable
 * workspace read-only, nor hide host unix sockets; without ABI 6 a command
 * can signal processes of the same user.
 *
 * Owns: the probe (and the one bwrap check it runs), the prepared argv,
 * the fds behind it and the directories made to hold missing protected
 * paths.  Must not: decide whether a command may run (policy), or fork,
 * reap or kill the command (spawn.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/sandbox.h"
#include "util/util.h"

#define BWRAP_DEFAULT     "/usr/bin/bwrap"
#define BWRAP_CHECK_MS    3000       /* the namespace check's deadline */
#define MAX_PROTECT       256        /* protected paths per exec */
#define MAX_BPF_INSNS     4096       /* BPF_MAXINSNS */
#define ENV_OVERRIDE      "TOOLGATE_SANDBOX_BACKEND"

/* ---- Landlock ABI (values from the kernel's uapi; declared here so that
 * rights newer than the installed header can be used) ---- */

#define LL_FS_EXECUTE     (1ULL << 0)
#define LL_FS_WRITE_FILE  (1ULL << 1)
#define LL_FS_READ_FILE   (1ULL << 2)
#define LL_FS_READ_DIR    (1ULL << 3)
#define LL_FS_MAKE_CHAR   (1ULL << 6)
#define LL_FS_MAKE_BLOCK  (1ULL << 11)
#define LL_FS_ABI1        ((1ULL << 13) - 1) /* execute .. make_sym */
#define LL_FS_REFER       (1ULL << 13)       /* ABI 2 */
#define LL_FS_TRUNCATE    (1ULL << 14)       /* ABI 3 */
#define LL_FS_IOCTL_DEV   (1ULL << 15)       /* ABI 5 */
#define LL_NET_TCP        (3ULL)             /* ABI 4: bind_tcp | connect_tcp */
#define LL_SCOPE_ABSTRACT (1ULL << 0)        /* ABI 6 */
#define LL_SCOPE_SIGNAL   (1ULL << 1)        /* ABI 6 */
#define LL_RULE_PATH_BENEATH 1
#define LL_CREATE_RULESET_VERSION (1U << 0)

struct ll_ruleset_attr {   /* grows with the ABI; older kernels accept zero tails */
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t  parent_fd;
} __attribute__((packed));

/* ---- the probe ---- */

static struct probe_state {
	tgi_sb_probe pub;
	char override[32];        /* "" when not set */
	char landlock_why[160];   /* why Landlock is unavailable, when abi == 0 */
	char seccomp_why[160];
	char bwrap_unused[300];   /* why bubblewrap is not the backend ("" when it could be) */
	char landlock_unused[300];
} P;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

const char *tgi_sb_backend_name(tgi_sb_backend b)
{
	switch (b) {
	case TGI_SB_BWRAP:    return "bubblewrap";
	case TGI_SB_LANDLOCK: return "landlock";
	default:              return "none";
	}
}

/* bwrap at its Debian path, else the first absolute PATH entry holding it. */
static int find_bwrap(char *out, size_t cap)
{
	if (access(BWRAP_DEFAULT, X_OK) == 0) {
		tgi_snprintf(out, cap, "%s", BWRAP_DEFAULT);
		return 0;
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n && path[0] == '/' && n + sizeof "/bwrap" <= cap) {
			memcpy(out, path, n);
			memcpy(out + n, "/bwrap", sizeof "/bwrap");
			if (access(out, X_OK) == 0)
				return 0;
		}
		path = end ? end + 1 : NULL;
	}
	out[0] = '\0';
	return -1;
}

/* The namespace flags every sandboxed run uses; the check runs with them. */
static const char *const bwrap_ns_flags[] = {
	"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	"--die-with-parent", "--new-session", "--cap-drop", "ALL",
};

/* Run `bwrap <the real options> -- true` once, with a deadline, by plain
 * fork/exec.  1 if it worked, else 0 with the reason in why. */
static int check_bwrap(const char *bwrap, char *why, size_t cap)
{
	const char *truebin = access("/bin/true", X_OK) == 0 ? "/bin/true" : "/usr/bin/true";
	const char *argv[40];
	size_t n = 0;
	static const char *const mounts[] = {
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--tmpfs", "/run", "--unshare-net",
	};
	argv[n++] = bwrap;
	for (size_t i = 0; i < TGI_ARRAY_LEN(mounts); i++)
		argv[n++] = mounts[i];
	for (size_t i = 0; i < TGI_ARRAY_LEN(bwrap_ns_flags); i++)
		argv[n++] = bwrap_ns_flags[i];
	argv[n++] = "--";
	argv[n++] = truebin;
	argv[n] = NULL;
	char *const envp[] = {NULL};

	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		tgi_snprintf(why, cap, "cannot make a pipe: %s", strerror(errno));
		return 0;
	}
	pid_t pid = fork();
	if (pid < 0) {
		tgi_snprintf(why, cap, "cannot fork: %s", strerror(errno));
		close(ep[0]);
		close(ep[1]);
		return 0;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		dup2(ep[1], 2);
		execve(bwrap, (char *const *)argv, envp);
		_exit(127);
	}
	close(ep[1]);

	char msg[512];
	size_t len = 0;
	int status = 0, waited = 1, timed_out = 0, eof = 0;
	double deadline = tgi_now_ms() + BWRAP_CHECK_MS;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			waited = 0;
			break;
		}
		double left = deadline - tgi_now_ms();
		if (left <= 0) {
			timed_out = 1;
			kill(pid, SIGKILL);
			waited = waitpid(pid, &status, 0) == pid;
			break;
		}
		if (eof) {                      /* stderr closed: only the exit to wait for */
			usleep(2000);
			continue;
		}
		struct pollfd pf = {.fd = ep[0], .events = POLLIN};
		if (poll(&pf, 1, left > 100 ? 100 : (int)left + 1) > 0) {
			ssize_t r = read(ep[0], msg + len, sizeof msg - 1 - len);
			if (r > 0)
				len += (size_t)r;
			if (r == 0 || (r < 0 && errno != EINTR) || len == sizeof msg - 1)
				eof = 1;
		}
	}
	close(ep[0]);
	msg[len] = '\0';
	char *nl = strchr(msg, '\n');
	if (nl)
		*nl = '\0';
	char clean[256];
	tgi_sanitize(clean, sizeof clean, msg);

	if (timed_out) {
		tgi_snprintf(why, cap, "its namespace check did not finish in %d ms",
		             BWRAP_CHECK_MS);
		return 0;
	}
	if (!waited) {
		tgi_snprintf(why, cap, "cannot wait for its namespace check: %s", strerror(errno));
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 1;
	if (clean[0])
		tgi_snprintf(why, cap, "cannot create its namespaces here (%s)", clean);
	else if (WIFEXITED(status))
		tgi_snprintf(why, cap, "its namespace check exited with status %d",
		             WEXITSTATUS(status));
	else
		tgi_snprintf(why, cap, "its namespace check was killed by signal %d",
		             WTERMSIG(status));
	return 0;
}

static int landlock_abi(char *why, size_t cap)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	if (abi >= 1)
		return (int)abi;
	if (errno == ENOSYS)
		tgi_snprintf(why, cap, "not built into this kernel");
	else if (errno == EOPNOTSUPP)
		tgi_snprintf(why, cap, "disabled in this kernel (not in the lsm= list)");
	else
		tgi_snprintf(why, cap, "unavailable (%s)", strerror(errno));
	return 0;
}

static int seccomp_works(char *why, size_t cap)
{
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
		tgi_snprintf(why, cap, "not built into this kernel");
		return 0;
	}
	if (seccomp_api_get() < 1) {
		tgi_snprintf(why, cap, "not usable through libseccomp here");
		return 0;
	}
	return 1;
}

static void probe_run(void)
{
	tgi_sb_probe *p = &P.pub;
	const char *ov = getenv(ENV_OVERRIDE);
	int want_bwrap = 1, want_landlock = 1;

	if (ov && *ov && strcmp(ov, "auto")) {
		tgi_sanitize(P.override, sizeof P.override, ov);
		want_bwrap = !strcmp(ov, "bubblewrap");
		want_landlock = !strcmp(ov, "landlock");
	}

	if (find_bwrap(p->bwrap_path, sizeof p->bwrap_path) < 0)
		tgi_snprintf(p->bwrap_why, sizeof p->bwrap_why,
		             "not found (install the bubblewrap package)");
	else
		p->bwrap_ok = check_bwrap(p->bwrap_path, p->bwrap_why, sizeof p->bwrap_why);
	p->landlock_abi = landlock_abi(P.landlock_why, sizeof P.landlock_why);
	p->seccomp_ok = seccomp_works(P.seccomp_why, sizeof P.seccomp_why);

	/* why each one is not the backend, for the refusal sentence and doctor */
	const char *none = "";
	char nosc[200];
	tgi_snprintf(nosc, sizeof nosc, "it needs seccomp, which is %s", P.seccomp_why);
	if (P.override[0] && !want_bwrap)
		tgi_snprintf(P.bwrap_unused, sizeof P.bwrap_unused, "not used: %s=%s",
		             ENV_OVERRIDE, P.override);
	else
		tgi_snprintf(P.bwrap_unused, sizeof P.bwrap_unused, "%s",
		             !p->bwrap_ok ? p->bwrap_why : !p->seccomp_ok ? nosc : none);
	if (P.override[0] && !want_landlock)
		tgi_snprintf(P.landlock_unused, sizeof P.landlock_unused, "not used: %s=%s",
		             ENV_OVERRIDE, P.override);
	else
		tgi_snprintf(P.landlock_unused, sizeof P.landlock_unused, "%s",
		             !p->landlock_abi ? P.landlock_why : !p->seccomp_ok ? nosc : none);
	if (P.override[0] && !want_bwrap && !want_landlock && strcmp(P.override, "none")) {
		char bad[200];
		tgi_snprintf(bad, sizeof bad, "%s=%s is not bubblewrap, landlock, none or auto",
		             ENV_OVERRIDE, P.override);
		tgi_snprintf(P.bwrap_unused, sizeof P.bwrap_unused, "%s", bad);
		tgi_snprintf(P.landlock_unused, sizeof P.landlock_unused, "%s", bad);
	}

	if (!P.bwrap_unused[0])
		p->backend = TGI_SB_BWRAP;
	else if (!P.landlock_unused[0])
		p->backend = TGI_SB_LANDLOCK;
	else
		p->backend = TGI_SB_NONE;
}

const tgi_sb_probe *tgi_sandbox_probe(void)
{
	pthread_once(&probe_once, probe_run);
	return &P.pub;
}

/* ---- the seccomp program ---- */

/* Build the filter and export it as classic BPF into a sealed memfd whose
 * read position is 0 and whose number is above stdio.  The fd (close on
 * exec) or -1 with err. */
static int seccomp_program(int net_cut, int session, char *err, size_t errlen)
{
	static const int uring[] = {SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter),
	                            SCMP_SYS(io_uring_register)};
	static const int sess[] = {SCMP_SYS(setsid), SCMP_SYS(setpgid)};
	const struct scmp_arg_cmp not_unix = {.arg = 0, .op = SCMP_CMP_NE, .datum_a = AF_UNIX,
	                                      .datum_b = 0};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM, fd = -1;

	if (net_cut) {
		if (!r)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, not_unix);
		if (!r)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
			                     not_unix);
		for (size_t i = 0; i < TGI_ARRAY_LEN(uring) && !r; i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), uring[i], 0);
	}
	for (size_t i = 0; session && i < TGI_ARRAY_LEN(sess) && !r; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sess[i], 0);
	if (!r) {
		fd = memfd_create("toolgate-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		r = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
	}
	if (ctx)
		seccomp_release(ctx);
	if (!r) {
		off_t size = lseek(fd, 0, SEEK_END);
		if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
		    size > (off_t)(MAX_BPF_INSNS * sizeof(struct sock_filter)))
			r = -EINVAL;
		else if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
		               F_SEAL_SEAL) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			r = -errno;
	}
	if (!r && fd < 3) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		r = hi < 0 ? -errno : 0;
		close(fd);
		fd = hi;
	}
	if (r) {
		if (fd >= 0)
			close(fd);
		tgi_snprintf(err, errlen, "cannot build the seccomp filter: %s", strerror(-r));
		return -1;
	}
	return fd;
}

/* ---- paths ---- */

/* Copy an absolute path without trailing slashes into out; -1 with err if
 * it is relative, too long, or has "." or ".." components. */
static int clean_path(const char *what, const char *p, char *out, size_t cap, char *err,
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

static int is_dir(const char *what, const char *p, char *err, size_t errlen)
{
	struct stat st;
	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	char shown[128];
	tgi_sanitize(shown, sizeof shown, p);
	tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" is not a directory", what, shown);
	return -1;
}

/*
 * p with every symlink resolved, into out (PATH_MAX): bubblewrap cannot
 * mount on a path whose symlinks point outside its new root.  For a path
 * that does not exist, its deepest existing ancestor is resolved and the
 * rest appended.  0, or -1 with errno.
 */
static int canon(const char *p, char *out)
{
	char head[PATH_MAX];
	if (realpath(p, out))
		return 0;
	if (errno != ENOENT)
		return -1;
	tgi_snprintf(head, sizeof head, "%s", p);
	for (char *slash; (slash = strrchr(head, '/')) && slash != head;) {
		*slash = '\0';
		if (realpath(head, out)) {
			const char *rest = p + (slash - head);
			size_t n = strcmp(out, "/") ? strlen(out) : 0;
			if (n + strlen(rest) >= PATH_MAX) {
				errno = ENAMETOOLONG;
				return -1;
			}
			memcpy(out + n, rest, strlen(rest) + 1);
			return 0;
		}
		if (errno != ENOENT)
			return -1;
	}
	tgi_snprintf(out, PATH_MAX, "%s", p);
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
	for (; *p; p++)
		d += *p == '/';
	return d;
}

/*
 * Holding protected paths.  A protected directory that does not exist yet
 * is made empty (a protected file: an empty file), so that it can be bound
 * read-only and nothing can be created at its name, and removed again
 * after the run.  Every held
 * directory is kept open with a shared flock while the sandbox runs;
 * whoever made it removes it only if it then gets the lock exclusively
 * (nobody else's sandbox has it bound) -- so a concurrent run never loses
 * its protection, and at worst an empty directory stays behind.
 */
typedef struct sb_hold {
	char *path;   /* owned: the protected directory */
	char *made;   /* owned: the first directory made for it; NULL: it was there */
	int   fd;     /* the directory, share-locked; -1: not held */
} sb_hold;

#define HOLD_TRIES 200   /* x 5 ms: a lock held longer is a refusal */

/* mkdir -p of p below root without following symlinks.  The first
 * directory made goes in *made (owned; NULL when none was).  1, 0 when a
 * parent is not a directory (nothing can be made there), -1 with errno. */
static int make_below(const char *root, const char *p, char **made)
{
	int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *c = p + strlen(root);
	*made = NULL;
	while (dir >= 0 && *c) {
		char part[NAME_MAX + 1];
		while (*c == '/')
			c++;
		size_t len = strcspn(c, "/");
		if (!len)
			break;
		if (len > NAME_MAX) {
			close(dir);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(part, c, len);
		part[len] = '\0';
		c += len;
		if (mkdirat(dir, part, 0755) == 0) {
			if (!*made)
				*made = tgi_strndup(p, (size_t)(c - p));
		} else if (errno != EEXIST) {
			int e = errno;
			close(dir);
			errno = e;
			return e == ENOTDIR ? 0 : -1;
		}
		int next = openat(dir, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		dir = next;
		if (dir < 0 && (errno == ENOTDIR || errno == ELOOP))
			return 0;
	}
	if (dir < 0)
		return -1;
	close(dir);
	return 1;
}

static int same_file(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * Hold protected path p (beneath writable root): 1 bind it (h->fd >= 0
 * when it is a held directory), 0 nothing to bind (it cannot exist), -1
 * with err.
 */
static int hold_path(const char *root, const char *p, int is_dir, sb_hold *h, char *err,
                     size_t errlen)
{
	struct stat st;
	int e = 0;
	h->fd = -1;
	h->made = NULL;
	for (int tries = 0; tries < HOLD_TRIES; tries++) {
		char *made = NULL;
		if (lstat(p, &st) < 0) {
			if (errno != ENOENT) {
				e = errno;
				break;
			}
			if (!is_dir) {             /* a file: an empty one holds its name */
				int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (fd < 0 && errno != EEXIST) {
					e = errno;
					if (e == ENOENT || e == ENOTDIR)
						return 0;  /* its directory does not exist: nothing to hold */
					break;
				}
				if (fd >= 0) {
					close(fd);
					made = tgi_strdup(p);
				}
				goto lock;
			}
			int r = make_below(root, p, &made);
			if (r <= 0) {
				e = errno;
				free(made);
				if (r == 0)
					return 0;
				break;
			}
		} else if (S_ISLNK(st.st_mode)) {
			return 0;                  /* dangling (canon resolved the others) */
		} else if (!S_ISDIR(st.st_mode)) {
			return 1;                  /* a file: bound as it is */
		}
lock:;
		int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
		if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) == 0 && same_file(fd, p)) {
			h->fd = fd;
			h->made = made;
			return 1;
		}
		e = errno;
		if (fd >= 0)
			close(fd);
		free(made);
		if (fd < 0 && e != ENOENT)
			break;
		usleep(5000);                  /* being removed, or locked: again */
	}
	char shown[128];
	tgi_sanitize(shown, sizeof shown, p);
	tgi_snprintf(err, errlen, "cannot hold the protected path \"%s\" read-only: %s", shown,
	             e == EWOULDBLOCK || !e ? "it stays locked" : strerror(e));
	return -1;
}

/* After the run: remove what was made for h, when no other sandbox holds it. */
static void unhold(sb_hold *h)
{
	struct stat st;
	int file = h->fd >= 0 && fstat(h->fd, &st) == 0 && S_ISREG(st.st_mode);
	if (h->fd >= 0 && h->made && flock(h->fd, LOCK_EX | LOCK_NB) == 0 &&
	    same_file(h->fd, h->path) && (file ? st.st_size == 0 && unlink(h->path) == 0
	                                       : rmdir(h->path) == 0)) {
		/* then the parents made for it, deepest first, while empty */
		size_t stop = strlen(h->made);
		char *q = h->path;
		for (char *slash = strrchr(q, '/'); slash && (size_t)(slash - q) >= stop;
		     slash = strrchr(q, '/')) {
			*slash = '\0';
			if (rmdir(q) < 0)
				break;
		}
	}
	if (h->fd >= 0)
		close(h->fd);
	free(h->path);
	free(h->made);
}

/* ---- prepared execs ---- */

typedef struct sb_child {
	int                 ruleset_fd;  /* Landlock ruleset (close on exec); -1: none */
	struct sock_fprog   prog;        /* seccomp program; len 0: none */
	struct sock_filter *insns;       /* owned, behind prog */
	sb_hold            *holds;       /* bubblewrap: the protected paths held */
	size_t              nholds;
} sb_child;

static sb_child *child_new(tgi_sb_exec *out)
{
	sb_child *c = tgi_xcalloc(1, sizeof *c);
	c->ruleset_fd = -1;
	out->child = c;                  /* released with out, also on failure */
	return c;
}

static void push(tgi_strv *sv, const char *s)
{
	tgi_strv_push(sv, tgi_strdup(s));
}

static void push_argv(tgi_strv *sv, char *const *argv)
{
	for (; *argv; argv++)
		push(sv, *argv);
}

/* One bind of the sandbox: a path and whether it is read-only. */
typedef struct mount_op {
	char *path;   /* owned */
	int   ro;
} mount_op;

static int mount_cmp(const void *a, const void *b)
{
	const mount_op *x = a, *y = b;
	size_t dx = depth(x->path), dy = depth(y->path);
	if (dx != dy)
		return dx < dy ? -1 : 1;
	if (x->ro != y->ro)
		return x->ro - y->ro;    /* the same path: read-only last, so it holds */
	return strcmp(x->path, y->path);
}

typedef struct roots {
	char ws[PATH_MAX];      /* "" when none */
	char tmp[PATH_MAX];     /* "" when none */
	int  ws_writable;
} roots;

/* A writable root (or the workspace): clean, a directory, resolved. */
static int root_path(const char *what, const char *p, char *out, char *err, size_t errlen)
{
	char clean[PATH_MAX];
	if (clean_path(what, p, clean, sizeof clean, err, errlen) < 0 ||
	    is_dir(what, clean, err, errlen) < 0)
		return -1;
	if (canon(clean, out) < 0) {
		char shown[128];
		tgi_sanitize(shown, sizeof shown, clean);
		tgi_snprintf(err, errlen, "the sandbox's %s \"%s\" cannot be resolved: %s", what,
		             shown, strerror(errno));
		return -1;
	}
	return 0;
}

/* A protected path: clean, resolved (out: PATH_MAX). */
static int protected_path(const char *p, char *out, char *err, size_t errlen)
{
	char clean[PATH_MAX];
	if (clean_path("protected path", p, clean, sizeof clean, err, errlen) < 0)
		return -1;
	if (canon(clean, out) < 0) {
		char shown[128];
		tgi_sanitize(shown, sizeof shown, clean);
		tgi_snprintf(err, errlen, "the protected path \"%s\" cannot be resolved: %s", shown,
		             strerror(errno));
		return -1;
	}
	return 0;
}

/* The spec's paths, checked. */
static int spec_roots(const tgi_sb_spec *spec, roots *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->ws_writable = spec->mode == TGI_SANDBOX_WORKSPACE_WRITE;
	if (r->ws_writable && !spec->workspace) {
		tgi_snprintf(err, errlen, "the sandbox has no workspace for workspace-write mode");
		return -1;
	}
	if (spec->workspace && root_path("workspace", spec->workspace, r->ws, err, errlen) < 0)
		return -1;
	if (spec->tmpdir && root_path("tmp dir", spec->tmpdir, r->tmp, err, errlen) < 0)
		return -1;
	if (spec->nprotect > MAX_PROTECT) {
		tgi_snprintf(err, errlen, "the sandbox has %zu protected paths (at most %d)",
		             spec->nprotect, MAX_PROTECT);
		return -1;
	}
	if (spec->nprotect && !spec->protect) {
		tgi_snprintf(err, errlen, "the sandbox's protected paths are missing");
		return -1;
	}
	for (size_t i = 0; i < spec->nprotect; i++) {
		char path[PATH_MAX], shown[128];
		if (protected_path(spec->protect[i], path, err, errlen) < 0)
			return -1;
		if ((r->ws_writable && !strcmp(path, r->ws)) || !strcmp(path, r->tmp)) {
			tgi_sanitize(shown, sizeof shown, path);
			tgi_snprintf(err, errlen, "the protected path \"%s\" is a whole writable root",
			             shown);
			return -1;
		}
	}
	return 0;
}

/* The writable root p lies beneath, or NULL. */
static const char *writable_root(const roots *r, const char *p)
{
	if (r->ws_writable && beneath(p, r->ws))
		return r->ws;
	if (r->tmp[0] && beneath(p, r->tmp))
		return r->tmp;
	return NULL;
}

static int prepare_bwrap(const tgi_sb_spec *spec, const roots *r, char *const *argv,
                         tgi_sb_exec *out, char *err, size_t errlen)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	sb_child *c = child_new(out);
	mount_op ops[MAX_PROTECT + 2];
	size_t nops = 0;
	tgi_strv a = {0};
	int rc = -1;

	c->holds = tgi_xcalloc(spec->nprotect + 1, sizeof *c->holds);
	if (r->ws[0])
		ops[nops++] = (mount_op){tgi_strdup(r->ws), !r->ws_writable};
	if (r->tmp[0])
		ops[nops++] = (mount_op){tgi_strdup(r->tmp), 0};
	for (size_t i = 0; i < spec->nprotect; i++) {
		char path[PATH_MAX];
		const char *root;
		if (protected_path(spec->protect[i], path, err, errlen) < 0)
			goto out;
		if (!(root = writable_root(r, path)))
			continue;                       /* read-only already */
		sb_hold *h = &c->holds[c->nholds];
		size_t plen = strlen(spec->protect[i]);
		int held = hold_path(root, path, plen && spec->protect[i][plen - 1] == '/', h, err,
		                     errlen);
		if (held < 0)
			goto out;
		if (!held)
			continue;
		h->path = tgi_strdup(path);
		c->nholds++;
		ops[nops++] = (mount_op){tgi_strdup(path), 1};
	}
	qsort(ops, nops, sizeof *ops, mount_cmp);

	push(&a, p->bwrap_path);
	static const char *const base[] = {
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(base); i++)
		push(&a, base[i]);
	if (!spec->network) {
		push(&a, "--tmpfs");
		push(&a, "/run");
	}
	for (size_t i = 0; i < nops; i++) {
		push(&a, ops[i].ro ? "--ro-bind" : "--bind");
		push(&a, ops[i].path);
		push(&a, ops[i].path);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(bwrap_ns_flags); i++)
		push(&a, bwrap_ns_flags[i]);
	if (!spec->network) {
		char num[16];
		push(&a, "--unshare-net");
		out->seccomp_fd = seccomp_program(1, 0, err, errlen);
		if (out->seccomp_fd < 0)
			goto out;
		tgi_snprintf(num, sizeof num, "%d", out->seccomp_fd);
		push(&a, "--seccomp");
		push(&a, num);
	}
	push(&a, "--");
	push_argv(&a, argv);
	out->argv = a.v;
	a = (tgi_strv){0};
	out->backend = TGI_SB_BWRAP;
	rc = 0;
out:
	for (size_t i = 0; i < nops; i++)
		free(ops[i].path);
	tgi_strv_free(&a);
	return rc;
}

/* ---- Landlock ---- */

static uint64_t ll_fs_rights(int abi)
{
	uint64_t r = LL_FS_ABI1;
	if (abi >= 2)
		r |= LL_FS_REFER;
	if (abi >= 3)
		r |= LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LL_FS_IOCTL_DEV;
	return r;
}

/* Allow access beneath path (0, or -errno; a missing optional path is 0). */
static int ll_allow(int ruleset, const char *path, uint64_t access, int optional)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	struct ll_path_beneath pb = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

static int landlock_ruleset(const tgi_sb_spec *spec, const roots *r, char *err, size_t errlen)
{
	static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full"};
	int abi = tgi_sandbox_probe()->landlock_abi;
	uint64_t fs = ll_fs_rights(abi);
	uint64_t file_rw = fs & (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE |
	                         LL_FS_IOCTL_DEV);
	uint64_t write = fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
	struct ll_ruleset_attr attr = {.handled_access_fs = fs};
	if (abi >= 4 && !spec->network)
		attr.handled_access_net = LL_NET_TCP;
	if (abi >= 6)
		attr.scoped = LL_SCOPE_SIGNAL | (spec->network ? 0 : LL_SCOPE_ABSTRACT);

	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "cannot create a Landlock ruleset: %s", strerror(errno));
		return -1;
	}
	int e = ll_allow(fd, "/", LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR, 0);
	const char *where = "/";
	for (size_t i = 0; !e && i < TGI_ARRAY_LEN(devices); i++)
		e = ll_allow(fd, where = devices[i], file_rw, 1);
	if (!e && r->ws_writable)
		e = ll_allow(fd, where = r->ws, write, 0);
	if (!e && r->tmp[0])
		e = ll_allow(fd, where = r->tmp, write, 0);
	if (e) {
		char shown[128];
		tgi_sanitize(shown, sizeof shown, where);
		tgi_snprintf(err, errlen, "cannot add \"%s\" to the Landlock ruleset: %s", shown,
		             strerror(-e));
		close(fd);
		return -1;
	}
	return fd;
}

static int prepare_landlock(const tgi_sb_spec *spec, const roots *r, char *const *argv,
                            tgi_sb_exec *out, char *err, size_t errlen)
{
	sb_child *c = child_new(out);
	if ((c->ruleset_fd = landlock_ruleset(spec, r, err, errlen)) < 0)
		return -1;

	int fd = seccomp_program(!spec->network, 1, err, errlen);
	if (fd < 0)
		return -1;
	off_t size = lseek(fd, 0, SEEK_END);
	c->insns = tgi_xmalloc((size_t)size);
	ssize_t got = pread(fd, c->insns, (size_t)size, 0);
	close(fd);
	if (got != size) {
		tgi_snprintf(err, errlen, "cannot read back the seccomp filter");
		return -1;
	}
	c->prog.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	c->prog.filter = c->insns;

	tgi_strv a = {0};
	push_argv(&a, argv);
	out->argv = a.v;
	out->backend = TGI_SB_LANDLOCK;
	return 0;
}

static void no_backend(const tgi_sb_spec *spec, char *err, size_t errlen)
{
	tgi_snprintf(err, errlen, "no sandbox backend works here (bubblewrap: %s; Landlock: %s); "
	             "refusing to run commands in %s mode", P.bwrap_unused, P.landlock_unused,
	             tgi_sandbox_name(spec->mode));
}

int tgi_sandbox_prepare(const tgi_sb_spec *spec, char *const *argv, tgi_sb_exec *out,
                        char *err, size_t errlen)
{
	roots r;
	int rc;
	memset(out, 0, sizeof *out);
	out->seccomp_fd = -1;
	out->backend = TGI_SB_NONE;
	if (!spec || !argv || !argv[0]) {
		tgi_snprintf(err, errlen, "the sandbox was given no command");
		return -1;
	}
	if (spec->mode == TGI_SANDBOX_FULL) {
		tgi_strv a = {0};
		push_argv(&a, argv);
		out->argv = a.v;
		return 0;
	}
	if (spec->mode != TGI_SANDBOX_READ_ONLY && spec->mode != TGI_SANDBOX_WORKSPACE_WRITE) {
		tgi_snprintf(err, errlen, "the sandbox mode %d is unknown", (int)spec->mode);
		return -1;
	}
	if (spec_roots(spec, &r, err, errlen) < 0)
		return -1;
	switch (tgi_sandbox_probe()->backend) {
	case TGI_SB_BWRAP:
		rc = prepare_bwrap(spec, &r, argv, out, err, errlen);
		break;
	case TGI_SB_LANDLOCK:
		rc = prepare_landlock(spec, &r, argv, out, err, errlen);
		break;
	default:
		no_backend(spec, err, errlen);
		rc = -1;
	}
	if (rc < 0)
		tgi_sandbox_release(out);
	return rc;
}

/* ---- in the child (async-signal-safe: syscalls only) ---- */

static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {{0, 0, 0}};
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int tgi_sandbox_child(const tgi_sb_exec *x)
{
	if (!x)
		return 0;
	if (x->backend == TGI_SB_BWRAP && x->seccomp_fd >= 0) {
		/* bwrap reads the program from this fd: keep it across exec */
		if (fcntl(x->seccomp_fd, F_SETFD, 0) < 0 || lseek(x->seccomp_fd, 0, SEEK_SET) < 0)
			return -errno;
		return 0;
	}
	if (x->backend != TGI_SB_LANDLOCK || !x->child)
		return 0;
	const sb_child *c = x->child;
	/* like bwrap's --die-with-parent (the forking thread's exit) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	int r = drop_capabilities();
	if (r < 0)
		return r;
	if (syscall(SYS_landlock_restrict_self, c->ruleset_fd, 0) < 0)
		return -errno;
	if (c->prog.len && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &c->prog, 0, 0) < 0)
		return -errno;
	return 0;
}

void tgi_sandbox_release(tgi_sb_exec *x)
{
	if (!x)
		return;
	if (x->argv) {
		for (char **s = x->argv; *s; s++)
			free(*s);
		free(x->argv);
	}
	if (x->seccomp_fd >= 0)
		close(x->seccomp_fd);
	sb_child *c = x->child;
	if (c) {
		if (c->ruleset_fd >= 0)
			close(c->ruleset_fd);
		for (size_t i = 0; i < c->nholds; i++)
			unhold(&c->holds[i]);
		free(c->holds);
		free(c->insns);
		free(c);
	}
	x->argv = NULL;
	x->seccomp_fd = -1;
	x->child = NULL;
	x->backend = TGI_SB_NONE;
}

/* ---- doctor ---- */

static json_t *mode_entry(int enforceable, const char *notes)
{
	return json_pack("{s:b,s:s}", "enforceable", enforceable, "notes", notes);
}

json_t *tgi_sandbox_report(void)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	char ro[640], ww[640], refuse[720];
	const char *net = "no network unless network: true";

	switch (p->backend) {
	case TGI_SB_BWRAP:
		tgi_snprintf(ro, sizeof ro, "bubblewrap: the whole file system read-only but a "
		             "private tmp dir and /tmp (and /run while the network is cut); own pid "
		             "namespace, no capabilities; %s (network namespace and seccomp)", net);
		tgi_snprintf(ww, sizeof ww, "bubblewrap: the workspace and a private tmp dir "
		             "writable; .git/, .toolgate/ and the gate's files inside it read-only; "
		             "private /tmp (and /run while the network is cut); own pid namespace, "
		             "no capabilities; %s (network namespace and seccomp)", net);
		break;
	case TGI_SB_LANDLOCK: {
		const char *sig = p->landlock_abi >= 6
			? "signals to processes outside the sandbox are refused (Landlock ABI 6)"
			: "no pid namespace: a command can signal other processes of this user "
			  "(Landlock ABI 6 is needed to refuse that)";
		tgi_snprintf(ro, sizeof ro, "landlock (ABI %d): read-only everywhere but a private "
		             "tmp dir; no capabilities; %s (seccomp); host unix sockets stay "
		             "reachable; %s", p->landlock_abi, net, sig);
		tgi_snprintf(ww, sizeof ww, "landlock (ABI %d): the workspace and a private tmp dir "
		             "writable; Landlock cannot keep .git/ and .toolgate/ inside the "
		             "workspace read-only, so they are writable in this mode; no "
		             "capabilities; %s (seccomp); host unix sockets stay reachable; %s",
		             p->landlock_abi, net, sig);
		break;
	}
	default:
		tgi_snprintf(refuse, sizeof refuse, "not enforceable: no sandbox backend works "
		             "here (bubblewrap: %s; Landlock: %s), so commands are refused in this "
		             "mode", P.bwrap_unused, P.landlock_unused);
		tgi_snprintf(ro, sizeof ro, "%s", refuse);
		tgi_snprintf(ww, sizeof ww, "%s", refuse);
	}
	int ok = p->backend != TGI_SB_NONE;
	json_t *modes = json_pack("{s:o,s:o,s:o}",
		"read-only", mode_entry(ok, ro),
		"workspace-write", mode_entry(ok, ww),
		"danger-full-access", mode_entry(1, "no sandbox: commands run with the gate's own "
		                                    "rights, files and network"));
	json_t *bw = json_pack("{s:b,s:s?,s:s?}", "ok", p->bwrap_ok,
	                       "path", p->bwrap_path[0] ? p->bwrap_path : NULL,
	                       "why", p->bwrap_ok ? NULL : p->bwrap_why);
	json_t *r = json_pack("{s:s,s:o,s:i,s:b,s:o}", "backend", tgi_sb_backend_name(p->backend),
	                      "bubblewrap", bw, "landlock_abi", p->landlock_abi,
	                      "seccomp", p->seccomp_ok, "modes", modes);
	if (!p->landlock_abi)
		json_object_set_new(r, "landlock_why", json_string(P.landlock_why));
	if (!p->seccomp_ok)
		json_object_set_new(r, "seccomp_why", json_string(P.seccomp_why));
	if (P.override[0])
		json_object_set_new(r, "override", json_string(P.override));
	return r;
}
