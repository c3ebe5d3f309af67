/*
 * sandbox.c — run a process the gate starts inside a sandbox (sandbox.h):
 * probe what this machine can do (bubblewrap, Landlock, seccomp), then
 * prepare one sandboxed exec from the view sbview.c builds, start it, and
 * audit what it left.
 *
 * The probe runs once per process.  bubblewrap is used when it is found
 * and really creates its namespaces (with a user namespace and nested ones
 * disabled when it can); Landlock (ABI >= 1) when it does not, and then
 * only for a profile that accepts it; with neither, sandboxed modes refuse
 * (fail closed).  Both need seccomp.  TOOLGATE_SANDBOX_BACKEND
 * (bubblewrap|landlock|none|auto) overrides the choice; a forced backend
 * that does not work is "none".
 *
 * The seccomp program (libseccomp, exported as classic BPF, default
 * allow) refuses the kernel's administrative calls listed in sandbox.h
 * with EPERM (a name this libseccomp does not know is skipped), clone3
 * with ENOSYS, unshare and clone with a namespace flag; with the network
 * cut, socket() and socketpair() for any family but AF_UNIX (connect,
 * bind, sendto... need no rule: only AF_UNIX sockets can be made); under
 * Landlock also setsid() and setpgid(), so that nothing leaves the process
 * group spawn kills (bubblewrap has a pid namespace for that).  ptrace is
 * not filtered: the pid namespace (bubblewrap) and Landlock's own ptrace
 * rule keep it inside, and debuggers inside work.
 *
 * bubblewrap: the view's mounts in order (parents first), then its own
 * user, pid, ipc, uts, cgroup (and, unless the network is on, net)
 * namespaces, a new session, no capabilities, killed with its parent, the
 * seccomp program by fd.  Before it starts, the child scopes itself with
 * Landlock when the ABI is 6 or more (abstract unix sockets and signals
 * stay inside: this matters when the network, and so the host's abstract
 * sockets, is on).  A profile with hosts adds --info-fd and --block-fd:
 * tgi_sandbox_started reads the sandbox's pid, calls the attach hook, and
 * only then lets the command start.
 *
 * landlock: prepared in the parent (a ruleset from the same view: read
 * and execute on what it shows, write on what it makes writable, TCP
 * bind/connect handled with ABI >= 4, signals and abstract unix sockets
 * scoped with ABI >= 6); the child only makes async-signal-safe syscalls:
 * no_new_privs, drop capabilities, landlock_restrict_self,
 * PR_SET_SECCOMP.  Its HOME is the private tmp dir.
 *
 * Owns: the probe (and the bwrap checks it runs), the prepared argv, the
 * fds and the view behind it.  Must not: decide whether a command may run
 * (policy), or fork, reap or kill the command (spawn.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/netproxy.h"
#include "exec/sandbox.h"
#include "exec/sbview.h"
#include "util/util.h"

#define BWRAP_DEFAULT     "/usr/bin/bwrap"
#define BWRAP_CHECK_MS    3000       /* the namespace check's deadline */
#define INFO_MS           10000      /* bubblewrap's info, for the network attach */
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
	char userns_why[300];     /* what is missing of the user namespace ("" nothing) */
	int  disable_userns;      /* --disable-userns works */
	int  bwrap_setuid;        /* bwrap is installed setuid root */
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
 * fork/exec, with the user namespace flags given (NULL-terminated).  1 if
 * it worked, else 0 with the reason in why. */
static int check_bwrap(const char *bwrap, const char *const *user, char *why, size_t cap)
{
	const char *truebin = access("/bin/true", X_OK) == 0 ? "/bin/true" : "/usr/bin/true";
	const char *argv[48];
	size_t n = 0;
	static const char *const mounts[] = {
		"--ro-bind", "/usr", "/usr", "--ro-bind-try", "/bin", "/bin", "--ro-bind-try", "/lib",
		"/lib", "--ro-bind-try", "/lib64", "/lib64", "--dev", "/dev", "--proc", "/proc",
		"--unshare-net",
	};
	argv[n++] = bwrap;
	for (; *user; user++)
		argv[n++] = *user;
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

	if (find_bwrap(p->bwrap_path, sizeof p->bwrap_path) < 0) {
		tgi_snprintf(p->bwrap_why, sizeof p->bwrap_why,
		             "not found (install the bubblewrap package)");
	} else {
		/* a user namespace with nested ones disabled (bubblewrap >= 0.8);
		 * else one without that; as root, else none (said in doctor) */
		static const char *const full[] = {"--unshare-user", "--disable-userns", NULL};
		static const char *const plain[] = {"--unshare-user", NULL};
		static const char *const none[] = {NULL};
		struct stat st;
		char why2[256];
		P.bwrap_setuid = stat(p->bwrap_path, &st) == 0 && (st.st_mode & S_ISUID);
		if ((p->bwrap_ok = check_bwrap(p->bwrap_path, full, p->bwrap_why,
		                               sizeof p->bwrap_why))) {
			p->userns = P.disable_userns = 1;
		} else if ((p->bwrap_ok = check_bwrap(p->bwrap_path, plain, why2, sizeof why2))) {
			p->userns = 1;
			tgi_snprintf(P.userns_why, sizeof P.userns_why, "this bubblewrap cannot disable "
			             "nested user namespaces (%s); seccomp still refuses them", p->bwrap_why);
		} else if (geteuid() == 0 &&
		           (p->bwrap_ok = check_bwrap(p->bwrap_path, none, why2, sizeof why2))) {
			tgi_snprintf(P.userns_why, sizeof P.userns_why, "bubblewrap cannot make a user "
			             "namespace here (%s)", p->bwrap_why);
		}
		if (p->bwrap_ok)
			p->bwrap_why[0] = '\0';
	}
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

/* Refused with EPERM in every sandbox: the kernel's administrative calls
 * (sandbox.h).  Names, so that one this libseccomp does not know (or this
 * architecture lacks) is skipped rather than failing the build. */
static const char *const admin_calls[] = {
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "create_module",
	"mount", "umount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr", "swapon", "swapoff", "reboot", "acct",
	"quotactl", "quotactl_fd", "userfaultfd", "iopl", "ioperm", "syslog",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "setns", "nfsservctl",
	"uselib", "vhangup", "io_uring_setup", "io_uring_enter", "io_uring_register",
};

/* The namespace flags unshare and clone may not carry. */
static const unsigned long ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	CLONE_NEWCGROUP, 0x00000080UL /* CLONE_NEWTIME */,
};

/* Build the filter and export it as classic BPF into a sealed memfd whose
 * read position is 0 and whose number is above stdio.  net: the profile's
 * network (OFF: sockets of AF_UNIX only; HOSTS: AF_UNIX, AF_INET and
 * AF_INET6 -- the private network namespace is the wall, and the proxy is
 * reached over TCP inside it; ON: any).  The fd (close on exec) or -1 with
 * err. */
static int seccomp_program(tgi_net net, int session, char *err, size_t errlen)
{
	static const char *const sock_names[] = {"socket", "socketpair"};
	static const int sess[] = {SCMP_SYS(setsid), SCMP_SYS(setpgid)};
	const struct scmp_arg_cmp not_unix = {.arg = 0, .op = SCMP_CMP_NE, .datum_a = AF_UNIX,
	                                      .datum_b = 0};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM, fd = -1;

	for (size_t i = 0; i < TGI_ARRAY_LEN(admin_calls) && !r; i++) {
		int nr = seccomp_syscall_resolve_name(admin_calls[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r == -EDOM || r == -EINVAL)  /* not on this architecture */
			r = 0;
	}
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	for (size_t i = 0; i < TGI_ARRAY_LEN(ns_flags) && !r; i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (!r)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			                     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	}
	for (size_t i = 0; net == TGI_NET_OFF && i < TGI_ARRAY_LEN(sock_names) && !r; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		                     seccomp_syscall_resolve_name(sock_names[i]), 1, not_unix);
	/* hosts: every family but 1 (AF_UNIX), 2 (AF_INET), 10 (AF_INET6); one
	 * comparison per rule (libseccomp takes an argument once per rule) */
	for (size_t i = 0; net == TGI_NET_HOSTS && i < TGI_ARRAY_LEN(sock_names) && !r; i++) {
		int nr = seccomp_syscall_resolve_name(sock_names[i]);
		for (unsigned f = 0; f < AF_INET6 && !r; f++)
			if (f != AF_UNIX && f != AF_INET)
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				                     SCMP_A0(SCMP_CMP_EQ, f, 0));
		if (!r)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
			                     SCMP_A0(SCMP_CMP_GT, AF_INET6, 0));
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

/* ---- prepared execs ---- */

typedef struct sb_child {
	tgi_sbview          view;        /* what it sees, and the audit */
	int                 ruleset_fd;  /* Landlock: the child's ruleset (-1: none) */
	int                 nnp;         /* bubblewrap: no_new_privs before the scope */
	struct sock_fprog   prog;        /* Landlock: the seccomp program; len 0: none */
	struct sock_filter *insns;       /* owned, behind prog */
	int                 info_r, info_w, block_r, block_w; /* network by host (-1: none) */
	tgi_sb_attach_fn    attach;
	void               *attach_arg;
	const tgi_sb_profile *profile;   /* borrowed from the spec (for attach) */
	char                home[PATH_MAX];
} sb_child;

static sb_child *child_new(tgi_sb_exec *out)
{
	sb_child *c = tgi_xcalloc(1, sizeof *c);
	c->ruleset_fd = c->info_r = c->info_w = c->block_r = c->block_w = -1;
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

static void push_fd(tgi_strv *sv, const char *opt, int fd)
{
	char num[16];
	snprintf(num, sizeof num, "%d", fd);
	push(sv, opt);
	push(sv, num);
}

/* A pipe whose ends are above stdio, close on exec. */
static int pipe_hi(int fds[2])
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		fds[i] = p[i] < 3 ? fcntl(p[i], F_DUPFD_CLOEXEC, 3) : p[i];
		if (fds[i] != p[i])
			close(p[i]);
	}
	return fds[0] < 0 || fds[1] < 0 ? -1 : 0;   /* the caller closes what is >= 0 */
}

/* A Landlock ruleset that only scopes (ABI >= 6): abstract unix sockets
 * and signals stay inside.  -1 when the ABI cannot. */
static int scope_ruleset(void)
{
	if (tgi_sandbox_probe()->landlock_abi < 6)
		return -1;
	struct ll_ruleset_attr attr = {.scoped = LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL};
	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd >= 0 && fd < 3) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = hi;
	}
	return fd;
}

static int prepare_bwrap(const tgi_sb_spec *spec, sb_child *c, char *const *argv,
                         tgi_sb_exec *out, char *err, size_t errlen)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	const tgi_sb_profile *pr = spec->profile;
	tgi_strv a = {0};

	push(&a, p->bwrap_path);
	if (p->userns)
		push(&a, "--unshare-user");
	if (P.disable_userns)
		push(&a, "--disable-userns");
	for (size_t i = 0; i < c->view.nops; i++) {
		const tgi_sbv_op *o = &c->view.ops[i];
		switch (o->kind) {
		case TGI_SBV_RO:
			push(&a, "--ro-bind");
			push(&a, o->dest);
			push(&a, o->dest);
			break;
		case TGI_SBV_RW:
			push(&a, "--bind");
			push(&a, o->dest);
			push(&a, o->dest);
			break;
		case TGI_SBV_TMPFS:
			push(&a, "--tmpfs");
			push(&a, o->dest);
			break;
		case TGI_SBV_HIDE_DIR:
			push(&a, "--tmpfs");
			push(&a, o->dest);
			if (o->sealed) {
				push(&a, "--remount-ro");
				push(&a, o->dest);
			}
			break;
		case TGI_SBV_HIDE_FILE:
			push(&a, "--ro-bind");
			push(&a, "/dev/null");
			push(&a, o->dest);
			break;
		case TGI_SBV_SYMLINK:
			push(&a, "--symlink");
			push(&a, o->target);
			push(&a, o->dest);
			break;
		case TGI_SBV_DEV:
			push(&a, "--dev");
			push(&a, o->dest);
			break;
		case TGI_SBV_PROC:
			push(&a, "--proc");
			push(&a, o->dest);
			break;
		}
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(bwrap_ns_flags); i++)
		push(&a, bwrap_ns_flags[i]);
	if (pr->net != TGI_NET_ON)
		push(&a, "--unshare-net");
	out->seccomp_fd = seccomp_program(pr->net, 0, err, errlen);
	if (out->seccomp_fd < 0)
		goto fail;
	push_fd(&a, "--seccomp", out->seccomp_fd);
	if (pr->net == TGI_NET_HOSTS) {
		int info[2] = {-1, -1}, block[2] = {-1, -1};
		out->env = tgi_netproxy_env;
		int bad = pipe_hi(info) < 0 || pipe_hi(block) < 0;
		c->info_r = info[0];
		c->info_w = info[1];
		c->block_r = block[0];
		c->block_w = block[1];
		if (bad) {
			tgi_snprintf(err, errlen, "cannot make the sandbox's pipes: %s", strerror(errno));
			goto fail;
		}
		c->attach = spec->attach;
		c->attach_arg = spec->attach_arg;
		c->profile = pr;
		push_fd(&a, "--info-fd", c->info_w);
		push_fd(&a, "--block-fd", c->block_r);
	}
	/* scope abstract sockets and signals too (a setuid bwrap run by a
	 * user would lose its setuid to no_new_privs: not then) */
	if (geteuid() == 0 || !P.bwrap_setuid) {
		c->ruleset_fd = scope_ruleset();
		c->nnp = geteuid() != 0;
	}
	push(&a, "--");
	push_argv(&a, argv);
	out->argv = a.v;
	out->backend = TGI_SB_BWRAP;
	tgi_snprintf(c->home, sizeof c->home, "%s", c->view.home);
	return 0;
fail:
	tgi_strv_free(&a);
	return -1;
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
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))   /* a file takes file rights only */
		access &= LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE |
		          LL_FS_IOCTL_DEV;
	struct ll_path_beneath pb = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

/* The view as Landlock rules: read what it shows, write what it makes
 * writable.  Its private directories (tmpfs) and masks cannot be made:
 * the first are simply not there, the second stay readable. */
static int landlock_ruleset(const tgi_sb_spec *spec, const tgi_sbview *v, char *err,
                            size_t errlen)
{
	static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full"};
	int abi = tgi_sandbox_probe()->landlock_abi;
	uint64_t fs = ll_fs_rights(abi);
	uint64_t read = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	uint64_t file_rw = fs & (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE |
	                         LL_FS_IOCTL_DEV);
	uint64_t write = fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
	struct ll_ruleset_attr attr = {.handled_access_fs = fs};
	if (abi >= 4 && spec->profile->net != TGI_NET_ON)
		attr.handled_access_net = LL_NET_TCP;
	if (abi >= 6)
		attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT;

	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "cannot create a Landlock ruleset: %s", strerror(errno));
		return -1;
	}
	int e = 0;
	const char *where = "/";
	for (size_t i = 0; !e && i < v->nops; i++) {
		const tgi_sbv_op *o = &v->ops[i];
		where = o->dest;
		switch (o->kind) {
		case TGI_SBV_RO:
		case TGI_SBV_SYMLINK:
		case TGI_SBV_PROC:
		case TGI_SBV_DEV:
			e = ll_allow(fd, o->dest, read, 1);
			break;
		case TGI_SBV_RW:
			e = ll_allow(fd, o->dest, write, 1);
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; !e && i < TGI_ARRAY_LEN(devices); i++)
		e = ll_allow(fd, where = devices[i], file_rw, 1);
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

static int prepare_landlock(const tgi_sb_spec *spec, sb_child *c, char *const *argv,
                            tgi_sb_exec *out, char *err, size_t errlen)
{
	if ((c->ruleset_fd = landlock_ruleset(spec, &c->view, err, errlen)) < 0)
		return -1;

	int fd = seccomp_program(spec->profile->net, 1, err, errlen);
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
	tgi_snprintf(c->home, sizeof c->home, "%s", c->view.tmp);   /* its private home */
	return 0;
}

static void no_backend(tgi_sandbox mode, char *err, size_t errlen)
{
	tgi_snprintf(err, errlen, "no sandbox backend works here (bubblewrap: %s; Landlock: %s); "
	             "refusing to run commands in %s mode", P.bwrap_unused, P.landlock_unused,
	             tgi_sandbox_name(mode));
}

int tgi_sandbox_usable(const tgi_sb_profile *p, int attach, char *why, size_t cap)
{
	const tgi_sb_probe *pb = tgi_sandbox_probe();
	if (p->mode == TGI_SANDBOX_FULL)
		return 1;
	if (pb->backend == TGI_SB_NONE) {
		no_backend(p->mode, why, cap);
		return 0;
	}
	if (p->net == TGI_NET_HOSTS && pb->backend != TGI_SB_BWRAP) {
		tgi_snprintf(why, cap, "network by host (network: [%s%s]) needs bubblewrap, which "
		             "does not work here (%s); refusing to run commands", p->hosts.v[0],
		             p->hosts.n > 1 ? ", ..." : "", P.bwrap_unused);
		return 0;
	}
	if (p->net == TGI_NET_HOSTS && !attach) {
		tgi_snprintf(why, cap, "network by host (network: [%s%s]) needs the gate's filtering "
		             "proxy, which is not wired to this kind of process; refusing to run "
		             "commands (say network: true or false)", p->hosts.v[0],
		             p->hosts.n > 1 ? ", ..." : "");
		return 0;
	}
	if (pb->backend == TGI_SB_LANDLOCK && !(p->accept & TGI_SB_ACCEPT_LANDLOCK)) {
		tgi_snprintf(why, cap, "only Landlock works here (bubblewrap: %s), and it cannot "
		             "enforce %s fully (no hidden paths, no read-only .git or gate files "
		             "inside the workspace, no pid namespace; see toolgate doctor); refusing "
		             "to run commands unless the configuration accepts it by name "
		             "(sandbox: {accept: [landlock]})", P.bwrap_unused,
		             tgi_sandbox_name(p->mode));
		return 0;
	}
	return 1;
}

int tgi_sandbox_prepare(const tgi_sb_spec *spec, char *const *argv, tgi_sb_exec *out,
                        char *err, size_t errlen)
{
	int rc;
	memset(out, 0, sizeof *out);
	out->seccomp_fd = -1;
	out->backend = TGI_SB_NONE;
	if (!spec || !argv || !argv[0]) {
		tgi_snprintf(err, errlen, "the sandbox was given no command");
		return -1;
	}
	if (!spec->profile) {
		tgi_snprintf(err, errlen, "the sandbox was given no profile");
		return -1;
	}
	tgi_sandbox mode = spec->profile->mode;
	if (mode == TGI_SANDBOX_FULL) {
		tgi_strv a = {0};
		push_argv(&a, argv);
		out->argv = a.v;
		return 0;
	}
	if (mode != TGI_SANDBOX_READ_ONLY && mode != TGI_SANDBOX_WORKSPACE_WRITE) {
		tgi_snprintf(err, errlen, "the sandbox mode %d is unknown", (int)mode);
		return -1;
	}
	if (!tgi_sandbox_usable(spec->profile, spec->attach != NULL, err, errlen))
		return -1;
	sb_child *c = child_new(out);
	if (tgi_sbview_build(spec, &c->view, err, errlen) < 0) {
		tgi_sandbox_release(out);
		return -1;
	}
	if (tgi_sandbox_probe()->backend == TGI_SB_BWRAP)
		rc = prepare_bwrap(spec, c, argv, out, err, errlen);
	else
		rc = prepare_landlock(spec, c, argv, out, err, errlen);
	if (rc < 0) {
		tgi_sandbox_release(out);
		return -1;
	}
	out->home = c->home[0] ? c->home : NULL;
	out->tmpdir = out->backend == TGI_SB_BWRAP ? "/tmp" : c->view.tmp[0] ? c->view.tmp : NULL;
	return 0;
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

static int keep_fd(int fd)
{
	return fd < 0 || fcntl(fd, F_SETFD, 0) == 0 ? 0 : -errno;
}

int tgi_sandbox_child(const tgi_sb_exec *x)
{
	if (!x || !x->child)
		return 0;
	const sb_child *c = x->child;
	if (x->backend == TGI_SB_BWRAP) {
		/* bwrap reads the program and talks to the gate through these */
		int r;
		if ((r = keep_fd(x->seccomp_fd)) < 0 || (r = keep_fd(c->info_w)) < 0 ||
		    (r = keep_fd(c->block_r)) < 0)
			return r;
		if (x->seccomp_fd >= 0 && lseek(x->seccomp_fd, 0, SEEK_SET) < 0)
			return -errno;
		if (c->ruleset_fd >= 0) {
			if (c->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				return -errno;
			if (syscall(SYS_landlock_restrict_self, c->ruleset_fd, 0) < 0)
				return -errno;
		}
		return 0;
	}
	if (x->backend != TGI_SB_LANDLOCK)
		return 0;
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

/* ---- in the parent ---- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* bubblewrap's info ({"child-pid": N, ...}) from fd, within INFO_MS. */
static pid_t read_child_pid(int fd, char *err, size_t errlen)
{
	char buf[4096];
	size_t len = 0;
	double deadline = tgi_now_ms() + INFO_MS;
	for (;;) {
		int left = (int)(deadline - tgi_now_ms());
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&pf, 1, left) <= 0) {
			if (left > 0 && errno == EINTR)
				continue;
			tgi_snprintf(err, errlen, "the sandbox did not say its pid within %d ms", INFO_MS);
			return -1;
		}
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) == sizeof buf - 1)
			break;
	}
	buf[len] = '\0';
	json_t *j = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, NULL);
	json_t *pid = json_object_get(j, "child-pid");
	pid_t r = json_is_integer(pid) && json_integer_value(pid) > 0 ?
	          (pid_t)json_integer_value(pid) : -1;
	json_decref(j);
	if (r < 0)
		tgi_snprintf(err, errlen, "the sandbox ended before it said its pid");
	return r;
}

int tgi_sandbox_started(tgi_sb_exec *x, pid_t pid, char *err, size_t errlen)
{
	sb_child *c = x ? x->child : NULL;
	(void)pid;
	if (!c || c->info_r < 0)
		return 0;
	close_fd(&c->info_w);            /* the child has its own: EOF when bwrap closes it */
	close_fd(&c->block_r);
	pid_t inner = read_child_pid(c->info_r, err, errlen);
	close_fd(&c->info_r);
	if (inner < 0)
		return -1;
	char why[512] = "";
	if (c->attach(c->attach_arg, inner, c->profile, why, sizeof why) < 0) {
		tgi_snprintf(err, errlen, "the sandbox's network could not be set up: %s",
		             why[0] ? why : "the proxy refused");
		return -1;
	}
	ssize_t w;
	do
		w = write(c->block_w, "g", 1);
	while (w < 0 && errno == EINTR);
	close_fd(&c->block_w);
	if (w != 1) {
		tgi_snprintf(err, errlen, "the sandbox could not be told to start: %s",
		             strerror(errno));
		return -1;
	}
	return 0;
}

json_t *tgi_sandbox_audit(tgi_sb_exec *x)
{
	sb_child *c = x ? x->child : NULL;
	return c && c->view.audit ? tgi_sbaudit_end(c->view.audit) : NULL;
}

int tgi_sandbox_exec_failed(tgi_sb_backend backend, int exit_code, size_t out_len,
                            const char *err, char *why, size_t cap)
{
	static const char head[] = "bwrap: execvp ";
	const char *nl = err ? strchr(err, '\n') : NULL;
	if (backend != TGI_SB_BWRAP || exit_code != 1 || out_len || !nl || nl[1] ||
	    strncmp(err, head, sizeof head - 1))
		return 0;
	/* the program as the wrapper was given it (resolved: it may differ from
	 * what the caller named), then its reason */
	const char *r = NULL;
	for (const char *p = err + sizeof head - 1; p + 1 < nl; p++)
		if (p[0] == ':' && p[1] == ' ')
			r = p + 2;
	if (!r || r == nl)
		return 0;
	char reason[256];
	tgi_snprintf(reason, sizeof reason, "%.*s", (int)(nl - r), r);
	tgi_sanitize(why, cap, reason);
	return 1;
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
		close_fd(&c->ruleset_fd);
		close_fd(&c->info_r);
		close_fd(&c->info_w);
		close_fd(&c->block_r);
		close_fd(&c->block_w);
		tgi_sbview_free(&c->view);
		free(c->insns);
		free(c);
	}
	x->argv = NULL;
	x->seccomp_fd = -1;
	x->child = NULL;
	x->home = NULL;
	x->tmpdir = NULL;
	x->env = NULL;
	x->backend = TGI_SB_NONE;
}

/* ---- doctor ---- */

/* What holds of uid 0 and the kernel, for this user and backend. */
static void kernel_sentence(tgi_sb_backend b, char *out, size_t cap)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	unsigned uid = (unsigned)geteuid();
	const char *rest = "with no capabilities in any namespace and no_new_privs; /proc/sys, "
	                   "/proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs and /sys "
	                   "read-only; /proc/keys, /proc/kcore, /proc/timer_list and /etc's "
	                   "secrets hidden; keyctl, add_key, request_key, bpf, perf_event_open, "
	                   "kexec, module loading, mount calls, new namespaces, swapon, reboot, "
	                   "acct, quotactl, userfaultfd, iopl/ioperm and io_uring refused by "
	                   "seccomp; other processes out of sight (pid namespace)";
	if (b == TGI_SB_BWRAP && uid == 0 && p->userns)
		tgi_snprintf(out, cap, "uid 0 inside is uid 0 outside: the user namespace maps root "
		             "to itself, because bubblewrap 0.8 maps only the caller's own uid and a "
		             "root user's workspace must stay writable to it (another uid would need "
		             "idmapped mounts); so files root owns are protected by being mounted "
		             "read-only or not at all, %s%s%s", rest, P.userns_why[0] ? "; " : "",
		             P.userns_why);
	else if (b == TGI_SB_BWRAP && uid == 0)
		tgi_snprintf(out, cap, "uid 0 inside is uid 0 outside, in no user namespace (%s); "
		             "files root owns are protected by being mounted read-only or not at "
		             "all, %s", P.userns_why, rest);
	else if (b == TGI_SB_BWRAP)
		tgi_snprintf(out, cap, "uid %u inside is uid %u outside, in a user namespace; %s%s%s",
		             uid, uid, rest, P.userns_why[0] ? "; " : "", P.userns_why);
	else if (b == TGI_SB_LANDLOCK)
		tgi_snprintf(out, cap, "uid %u inside is uid %u outside (Landlock has no user "
		             "namespace), with no capabilities and no_new_privs; /proc/sys is not "
		             "writable (Landlock grants no write there) and the same calls are "
		             "refused by seccomp, but %s; other processes of this user are in "
		             "sight%s", uid, uid, uid == 0 ? "/etc/shadow and whatever else root "
		             "owns stay readable" : "nothing is hidden inside what it may read",
		             p->landlock_abi >= 6 ? " (signals to them are refused: Landlock ABI 6)"
		                                  : " and can be signalled (Landlock ABI 6 is needed "
		                                    "to refuse that)");
	else
		tgi_snprintf(out, cap, "no sandbox: commands are refused in sandboxed modes");
}

/* What Landlock cannot enforce, whatever the backend in use. */
static json_t *landlock_gaps(void)
{
	return json_pack("[s,s,s,s,s,s]",
		"metadata: chmod, chown, utime, extended attributes and setuid bits are not "
		"controlled, on any file the user may change, inside the workspace or outside it",
		"renames and protected paths: .git, .toolgate and the gate's own files inside a "
		"writable workspace stay writable, and any directory above them can be renamed",
		"hidden paths: nothing inside a readable directory can be hidden (/etc's secrets, "
		".toolgate, masks), and what root owns stays readable to root",
		"sockets: connect() to unix sockets on the host is not controlled (only abstract ones "
		"are scoped, with ABI 6)",
		"processes: no pid namespace: other processes of the user are visible",
		"network by host needs a network namespace: not available");
}

static json_t *mode_entry(int enforceable, const char *notes)
{
	return json_pack("{s:b,s:s}", "enforceable", enforceable, "notes", notes);
}

/* What each backend does with each network setting, for doctor. */
static json_t *network_modes(void)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	int bw_ok = p->bwrap_ok && p->seccomp_ok, ll_ok = p->landlock_abi > 0 && p->seccomp_ok;
	json_t *bw = json_pack("{s:o,s:o,s:o}",
		"false", mode_entry(bw_ok, "enforced: a network namespace of its own (a "
		                    "loopback device and nothing else) and seccomp refusing every "
		                    "socket family but AF_UNIX; host unix sockets only where the "
		                    "profile's sockets name them"),
		"true", mode_entry(bw_ok, "not filtered: the host's network namespace, every "
		                   "address the gate can reach (abstract unix sockets scoped away "
		                   "with Landlock ABI 6)"),
		"hosts", mode_entry(bw_ok, "enforced: a network namespace of its own whose only "
		                    "way out is the gate's filtering proxy at 127.0.0.1:3128 inside it "
		                    "(HTTP CONNECT and plain http:// to the listed hosts and ports, "
		                    "names resolved by the gate; a refusal is a tool.network.denied "
		                    "event naming the host); sockets of AF_UNIX, AF_INET and AF_INET6 "
		                    "only; the proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, "
		                    "NO_PROXY) set for the command"));
	int ll4 = p->landlock_abi >= 4;
	json_t *ll = json_pack("{s:o,s:o,s:o}",
		"false", mode_entry(ll_ok, ll4 ?
		                    "enforced for IP: seccomp refuses every socket family but AF_UNIX "
		                    "and Landlock (ABI >= 4) refuses TCP bind and connect; but a host "
		                    "unix socket the user may open stays reachable by connect()" :
		                    "enforced for IP by seccomp (every socket family but AF_UNIX "
		                    "refused); but a host unix socket the user may open stays "
		                    "reachable by connect()"),
		"true", mode_entry(ll_ok, "not filtered: the host's network"),
		"hosts", mode_entry(0, "not enforceable: without a network namespace nothing keeps "
		                    "a command to the proxy, so a profile with a list of hosts is "
		                    "refused under Landlock, whatever it accepts"));
	return json_pack("{s:s,s:o,s:o}", "backend", tgi_sb_backend_name(p->backend),
	                 "bubblewrap", bw, "landlock", ll);
}

json_t *tgi_sandbox_report(void)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	char ro[900], ww[900], refuse[720], kernel[1400];
	const char *net = "no network unless network: true (or a list of hosts)";
	int ok = p->backend == TGI_SB_BWRAP;

	kernel_sentence(p->backend, kernel, sizeof kernel);
	switch (p->backend) {
	case TGI_SB_BWRAP:
		tgi_snprintf(ro, sizeof ro, "bubblewrap: the system, the workspace and the profile's "
		             "read paths read-only, /etc's secrets hidden; private /tmp, /var/tmp, /run "
		             "and home; only the private tmp dir and the profile's write paths "
		             "writable; own pid namespace; %s (network namespace and seccomp)", net);
		tgi_snprintf(ww, sizeof ww, "bubblewrap: as read-only, and the workspace writable "
		             "but for every .git below it, .toolgate (hidden) and the directories "
		             "holding the gate's own files (read-only mounts, which cannot be "
		             "renamed); a .git or a missing gate file made during a run is removed "
		             "after it; %s (network namespace and seccomp)", net);
		break;
	case TGI_SB_LANDLOCK: {
		tgi_snprintf(ro, sizeof ro, "landlock (ABI %d) is the only backend here, and it "
		             "cannot enforce this mode fully (see landlock_cannot): commands run "
		             "only under a profile that accepts it (sandbox: {accept: [landlock]}); "
		             "then: writes only to the private tmp dir and the profile's write paths, "
		             "reads only of the system, the workspace and the profile's paths",
		             p->landlock_abi);
		tgi_snprintf(ww, sizeof ww, "landlock (ABI %d) is the only backend here, and it "
		             "cannot enforce this mode fully (see landlock_cannot): commands run "
		             "only under a profile that accepts it (sandbox: {accept: [landlock]}); "
		             "then: the workspace writable, .git, .toolgate and the gate's files "
		             "in it included; a .git or missing gate file made during a run is still "
		             "removed after it", p->landlock_abi);
		break;
	}
	default:
		tgi_snprintf(refuse, sizeof refuse, "not enforceable: no sandbox backend works "
		             "here (bubblewrap: %s; Landlock: %s), so commands are refused in this "
		             "mode", P.bwrap_unused, P.landlock_unused);
		tgi_snprintf(ro, sizeof ro, "%s", refuse);
		tgi_snprintf(ww, sizeof ww, "%s", refuse);
	}
	json_t *modes = json_pack("{s:o,s:o,s:o}",
		"read-only", mode_entry(ok, ro),
		"workspace-write", mode_entry(ok, ww),
		"danger-full-access", mode_entry(1, "no sandbox: commands run with the gate's own "
		                                    "rights, files and network"));
	json_t *bw = json_pack("{s:b,s:s?,s:s?}", "ok", p->bwrap_ok,
	                       "path", p->bwrap_path[0] ? p->bwrap_path : NULL,
	                       "why", p->bwrap_ok ? NULL : p->bwrap_why);
	json_t *calls = json_array();
	for (size_t i = 0; i < TGI_ARRAY_LEN(admin_calls); i++)
		json_array_append_new(calls, json_string(admin_calls[i]));
	json_t *r = json_pack("{s:s,s:o,s:i,s:b,s:{s:b,s:b,s:s?},s:s,s:o,s:o,s:o}",
	                      "backend", tgi_sb_backend_name(p->backend),
	                      "bubblewrap", bw, "landlock_abi", p->landlock_abi,
	                      "seccomp", p->seccomp_ok,
	                      "user_namespace", "made", p->backend == TGI_SB_BWRAP && p->userns,
	                      "nested_disabled", p->backend == TGI_SB_BWRAP && P.disable_userns,
	                      "why", P.userns_why[0] ? P.userns_why : NULL,
	                      "kernel", kernel, "refused_calls", calls,
	                      "landlock_cannot", landlock_gaps(), "modes", modes);
	json_object_set_new(r, "network", network_modes());
	if (!p->landlock_abi)
		json_object_set_new(r, "landlock_why", json_string(P.landlock_why));
	if (!p->seccomp_ok)
		json_object_set_new(r, "seccomp_why", json_string(P.seccomp_why));
	if (P.override[0])
		json_object_set_new(r, "override", json_string(P.override));
	return r;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_add(json_t *o, const char *key, const char *path)
{
	json_t *a = json_object_get(o, key);
	if (!a)
		json_object_set_new(o, key, a = json_array());
	json_array_append_new(a, tgi_json_text(path, strlen(path)));
}

json_t *tgi_sandbox_view(const tgi_sb_spec *spec)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	const tgi_sb_profile *pr = spec->profile;
	char why[1024], err[1024], kernel[1400];
	tgi_sbview v;
	json_t *o = json_object();
	int usable = tgi_sandbox_usable(pr, spec->attach != NULL, why, sizeof why);
	tgi_sb_backend b = pr->mode == TGI_SANDBOX_FULL ? TGI_SB_NONE : p->backend;

	json_object_set_new(o, "mode", json_string(tgi_sandbox_name(pr->mode)));
	json_object_set_new(o, "backend", json_string(tgi_sb_backend_name(b)));
	json_object_set_new(o, "usable", json_boolean(usable));
	if (!usable)
		json_object_set_new(o, "why", json_string(why));
	if (pr->net == TGI_NET_HOSTS) {
		json_t *h = json_array();
		for (size_t i = 0; i < pr->hosts.n; i++)
			json_array_append_new(h, json_string(pr->hosts.v[i]));
		json_object_set_new(o, "network", h);
	} else {
		json_object_set_new(o, "network", json_boolean(pr->net == TGI_NET_ON));
	}
	if (pr->mode == TGI_SANDBOX_FULL) {
		json_object_set_new(o, "kernel", json_string("no sandbox: the gate's own rights"));
		return o;
	}
	kernel_sentence(b, kernel, sizeof kernel);
	json_object_set_new(o, "kernel", json_string(kernel));
	if (tgi_sbview_build(spec, &v, err, sizeof err) < 0) {
		json_object_set_new(o, "usable", json_false());
		json_object_set_new(o, "why", json_string(err));
		tgi_sbview_free(&v);
		return o;
	}
	json_t *lists = json_object();
	for (const char *const *k = (const char *const[]){"readable", "writable", "private",
	                                                  "hidden", NULL}; *k; k++)
		json_object_set_new(lists, *k, json_array());
	for (size_t i = 0; i < v.nops; i++) {
		const tgi_sbv_op *op = &v.ops[i];
		switch (op->kind) {
		case TGI_SBV_RO:        list_add(lists, "readable", op->dest); break;
		case TGI_SBV_RW:        list_add(lists, "writable", op->dest); break;
		case TGI_SBV_TMPFS:     list_add(lists, "private", op->dest); break;
		case TGI_SBV_HIDE_DIR:
		case TGI_SBV_HIDE_FILE: list_add(lists, "hidden", op->dest); break;
		case TGI_SBV_PROC:      list_add(lists, "readable", "/proc (this sandbox's processes)"); break;
		case TGI_SBV_DEV:       list_add(lists, "readable", "/dev (null, zero, random, tty, shm)"); break;
		case TGI_SBV_SYMLINK:   break;
		}
	}
	for (size_t i = 0; i < v.unreadable.n; i++)   /* hidden by their own modes */
		list_add(lists, "hidden", v.unreadable.v[i]);
	json_object_update(o, lists);
	json_decref(lists);
	/* the host's top-level entries the view has nothing at or above */
	tgi_strv tops = {0};
	DIR *d = opendir("/");
	for (struct dirent *e; d && (e = readdir(d));) {
		char top[NAME_MAX + 2];
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(top, sizeof top, "/%s", e->d_name);
		int seen = 0;
		for (size_t i = 0; i < v.nops && !seen; i++)
			seen = !strcmp(v.ops[i].dest, top);
		if (!seen)
			tgi_strv_push(&tops, tgi_strdup(top));
	}
	if (d)
		closedir(d);
	if (tops.n)
		qsort(tops.v, tops.n, sizeof *tops.v, str_cmp);
	json_t *none = json_array();
	for (size_t i = 0; i < tops.n; i++)
		json_array_append_new(none, tgi_json_text(tops.v[i], strlen(tops.v[i])));
	tgi_strv_free(&tops);
	json_object_set_new(o, "not_shown", none);
	json_t *miss = json_array();
	for (size_t i = 0; i < v.missing.n; i++)
		json_array_append_new(miss, tgi_json_text(v.missing.v[i], strlen(v.missing.v[i])));
	json_object_set_new(o, "missing", miss);
	size_t dirs, entries;
	double ms;
	tgi_sbaudit_counts(v.audit, &dirs, &entries, &ms);
	json_object_set_new(o, "git_read_only", json_integer((json_int_t)v.ngit));
	json_object_set_new(o, "scan", json_pack("{s:I,s:I,s:f}", "dirs", (json_int_t)dirs,
	                                         "entries", (json_int_t)entries, "ms",
	                                         (double)(long long)(ms * 100) / 100));
	if (b == TGI_SB_LANDLOCK)
		json_object_set_new(o, "landlock", json_string(
			"under Landlock the hidden paths stay readable, the read-only ones inside the "
			"workspace stay writable, and the private directories are simply absent"));
	tgi_sbview_free(&v);
	return o;
}
