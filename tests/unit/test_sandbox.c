/*
 * test_sandbox.c — the sandbox (src/exec/sandbox.c), run for real.
 *
 * Every escape check forks, applies tgi_sandbox_child in the child and
 * execs the prepared argv, as spawn does, then looks at the host side.
 * The probe is once per process, so main() runs each backend's group in
 * its own forked process with TOOLGATE_SANDBOX_BACKEND set: bubblewrap,
 * landlock, none, and a value that is none of them.  A backend this
 * machine cannot run is skipped, not failed.
 *
 * Checked under bubblewrap and Landlock: writing inside the workspace
 * works; outside it (a sibling directory, /etc) it does not; in read-only
 * mode nothing but the private tmp dir is writable; a TCP connect to a
 * listener on 127.0.0.1 fails (and the listener sees nothing) unless
 * network is on; sockets of any family but AF_UNIX and io_uring fail with
 * EPERM; no capabilities; a process outside the sandbox cannot be killed
 * from it; killing the run leaves no process behind.  Under bubblewrap
 * .git/ (found by the sandbox) is read-only, .toolgate/ hidden, /proc/sys
 * read-only, /proc/keys and /etc/shadow hidden, the home private, a
 * missing protected path or a new .git removed by the audit after the
 * run (never made in the workspace before it), and a profile with hosts
 * calls its attach hook with the sandbox's pid before the command starts;
 * under Landlock .git and .toolgate are NOT protected (documented), a
 * profile must accept Landlock by name, and setsid is refused.  With no
 * backend, sandboxed modes refuse with the header's sentence and
 * danger-full-access runs the command unchanged.
 *
 * Run as root, it runs itself again as the user nobody (every group,
 * unprivileged), where that user can reach the binary.
 *
 * This binary doubles as the helper run inside the sandbox
 * (`test_sandbox --sb-helper sockets|session`).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/sandbox.h"
#include "util/util.h"

#define RUN_DEADLINE_MS 20000

static char self[PATH_MAX];          /* this binary, the in-sandbox helper */
static tgi_sb_backend want;          /* the backend this group tests */
static char self_dir[PATH_MAX];      /* shown read-only: the helper runs inside */
static tgi_sb_profile profile;       /* spec_for's, one at a time */

/* ---- the helper, run inside the sandbox ---- */

static const char *errname(int e)
{
	switch (e) {
	case 0:            return "ok";
	case EPERM:        return "EPERM";
	case EACCES:       return "EACCES";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EOPNOTSUPP:   return "EOPNOTSUPP";
	case ENOSYS:       return "ENOSYS";
	case EINVAL:       return "EINVAL";
	default:           return "other";
	}
}

static int helper(const char *what)
{
	if (!strcmp(what, "sockets")) {
		static const struct { const char *name; int family, type; } t[] = {
			{"inet", AF_INET, SOCK_STREAM}, {"udp", AF_INET, SOCK_DGRAM},
			{"inet6", AF_INET6, SOCK_STREAM}, {"netlink", AF_NETLINK, SOCK_RAW},
			{"unix", AF_UNIX, SOCK_STREAM},
		};
		for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
			int fd = socket(t[i].family, t[i].type | SOCK_CLOEXEC, 0);
			printf("%s:%s ", t[i].name, errname(fd < 0 ? errno : 0));
		}
		int sv[2];
		printf("unixpair:%s ", errname(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 ? errno : 0));
		char params[512] = {0};   /* struct io_uring_params, zeroed */
		long r = syscall(SYS_io_uring_setup, 2, params);
		printf("uring:%s\n", errname(r < 0 ? errno : 0));
	} else if (!strcmp(what, "session")) {
		/* from a child, which leads no group: only a filter can refuse */
		static const char *const names[] = {"setsid", "setpgid"};
		for (int i = 0; i < 2; i++) {
			pid_t pid = fork();
			if (pid == 0)
				_exit((i == 0 ? setsid() : setpgid(0, 0)) < 0 ? errno : 0);
			int st = 0;
			waitpid(pid, &st, 0);
			printf("%s:%s ", names[i], errname(WIFEXITED(st) ? WEXITSTATUS(st) : -1));
		}
		printf("\n");
	} else {
		return 2;
	}
	fflush(stdout);
	return 0;
}

/* ---- fixture: root/{ws/{.git/config,.toolgate/ledger.db,src/a.txt},outside/f,tmp} ---- */

typedef struct fx {
	char root[PATH_MAX];
	char ws[PATH_MAX];
	char out[PATH_MAX];    /* the sibling directory */
	char tmp[PATH_MAX];    /* the private tmp dir */
	char git[PATH_MAX];
	char state[PATH_MAX];  /* ws/.toolgate */
	char home[PATH_MAX];   /* the home the sandbox makes private */
	char output[8192];     /* the last run's stdout + stderr */
	json_t *audit;         /* the last run's audit (owned) */
	char started[512];     /* tgi_sandbox_started's refusal, "" none */
	char *envp[8];
	char envbuf[4][PATH_MAX + 16];
} fx;

static void put(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

/* The file's content, or "<missing>". */
static const char *content(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "<missing>";
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void pathf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, PATH_MAX, fmt, ap);
	va_end(ap);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	const char *t = getenv("TMPDIR");
	pathf(f->root, "%s/tg-sandbox.XXXXXX", t && t[0] == '/' ? t : "/tmp");
	assert_non_null(mkdtemp(f->root));
	pathf(f->ws, "%s/ws", f->root);
	pathf(f->out, "%s/outside", f->root);
	pathf(f->tmp, "%s/tmp", f->root);
	pathf(f->git, "%s/.git", f->ws);
	pathf(f->state, "%s/.toolgate", f->ws);
	pathf(f->home, "%s/home", f->root);
	char p[PATH_MAX];
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->out, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(mkdir(f->git, 0755), 0);
	assert_int_equal(mkdir(f->state, 0700), 0);
	assert_int_equal(mkdir(f->home, 0700), 0);
	pathf(p, "%s/secret", f->home);
	put(p, "HOME-SECRET\n");
	pathf(p, "%s/src", f->ws);
	assert_int_equal(mkdir(p, 0755), 0);
	pathf(p, "%s/src/a.txt", f->ws);
	put(p, "a\n");
	pathf(p, "%s/config", f->git);
	put(p, "[core]\n");
	pathf(p, "%s/ledger.db", f->state);
	put(p, "LEDGER\n");
	pathf(p, "%s/f", f->out);
	put(p, "orig\n");

	snprintf(f->envbuf[0], sizeof f->envbuf[0], "HOME=%s", f->home);
	snprintf(f->envbuf[1], sizeof f->envbuf[1], "TMPDIR=%s", f->tmp);
	snprintf(f->envbuf[2], sizeof f->envbuf[2], "WS=%s", f->ws);
	snprintf(f->envbuf[3], sizeof f->envbuf[3], "OUT=%s", f->out);
	char **e = f->envp;
	*e++ = "PATH=/usr/local/bin:/usr/bin:/bin";
	*e++ = "LANG=C";
	*e++ = "LC_ALL=C";
	for (int i = 0; i < 4; i++)
		*e++ = f->envbuf[i];
	*e = NULL;
	*state = f;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	fx *f = *state;
	nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	json_decref(f->audit);
	tgi_sb_profile_free(&profile);
	memset(&profile, 0, sizeof profile);
	free(f);
	return 0;
}

/* ---- running ---- */

typedef struct opts {
	tgi_sandbox        mode;
	int                network;
	const char *const *protect;   /* the gate's files (default none) */
	size_t             nprotect;
	int                strict;    /* the profile does not accept Landlock */
} opts;


/* The spec o describes: ws/.toolgate hidden, as the shell tool does. */
static void spec_for(const fx *f, const opts *o, tgi_sb_spec *spec, const char *mask[1])
{
	mask[0] = f->state;
	tgi_sb_profile_free(&profile);
	tgi_sb_profile_init(&profile, o->mode);
	profile.net = o->network ? TGI_NET_ON : TGI_NET_OFF;
	profile.accept = o->strict ? 0 : TGI_SB_ACCEPT_LANDLOCK;
	free(profile.read.v);
	profile.read = (tgi_strv){NULL, 0};
	tgi_strv_push(&profile.read, tgi_strdup(self_dir));
	*spec = (tgi_sb_spec){
		.profile = &profile, .workspace = f->ws, .tmpdir = f->tmp, .home = f->home,
		.protect = o->protect, .nprotect = o->protect ? o->nprotect : 0,
		.mask = mask, .nmask = 1,
	};
}

/* Fork and exec x as spawn does (own process group, cwd the workspace,
 * tgi_sandbox_child last); stdout and stderr into *fd. */
static pid_t start(fx *f, const tgi_sb_exec *x, int *fd)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	/* the TMPDIR the sandbox gives (its own /tmp under bubblewrap) */
	snprintf(f->envbuf[1], sizeof f->envbuf[1], "TMPDIR=%s", x->tmpdir ? x->tmpdir : f->tmp);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (chdir(f->ws) < 0)
			_exit(125);
		int r = tgi_sandbox_child(x);
		if (r < 0) {
			dprintf(1, "tgi_sandbox_child: %s\n", strerror(-r));
			_exit(126);
		}
		execve(x->argv[0], x->argv, f->envp);
		dprintf(1, "exec %s: %s\n", x->argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*fd = p[0];
	f->started[0] = '\0';
	if (tgi_sandbox_started((tgi_sb_exec *)x, pid, f->started, sizeof f->started) < 0)
		kill(-pid, SIGKILL);
	return pid;
}

/* Read fd to EOF into f->output, then reap pid: its exit status (128 + signal). */
static int finish(fx *f, pid_t pid, int fd)
{
	size_t len = 0;
	double deadline = tgi_now_ms() + RUN_DEADLINE_MS;
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int left = (int)(deadline - tgi_now_ms());
		if (left <= 0 || poll(&pf, 1, left) <= 0) {
			kill(-pid, SIGKILL);
			fail_msg("the sandboxed command did not finish in %d ms", RUN_DEADLINE_MS);
		}
		ssize_t n = read(fd, f->output + len, sizeof f->output - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof f->output - 1)
			break;
	}
	f->output[len] = '\0';
	close(fd);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run a bash script in the sandbox o describes: its exit status. */
static int sb_run(fx *f, const opts *o, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sb_run(fx *f, const opts *o, const char *fmt, ...)
{
	char script[2048], err[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(script, sizeof script, fmt, ap);
	va_end(ap);
	char *argv[] = {"/bin/bash", "-c", script, NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	spec_for(f, o, &spec, mask);
	if (tgi_sandbox_prepare(&spec, argv, &x, err, sizeof err) < 0)
		fail_msg("prepare: %s", err);
	int fd;
	pid_t pid = start(f, &x, &fd);
	int rc = finish(f, pid, fd);
	json_decref(f->audit);
	f->audit = tgi_sandbox_audit(&x);
	tgi_sandbox_release(&x);
	return rc;
}

#define WW  (&(opts){.mode = TGI_SANDBOX_WORKSPACE_WRITE})
#define RO  (&(opts){.mode = TGI_SANDBOX_READ_ONLY})
#define NET (&(opts){.mode = TGI_SANDBOX_WORKSPACE_WRITE, .network = 1})

/* The command must fail and say so. */
#define REFUSED(f, o, ...) do { \
	int rc_ = sb_run(f, o, __VA_ARGS__); \
	if (rc_ == 0) fail_msg("not refused: %s (output: %s)", #__VA_ARGS__, (f)->output); \
} while (0)
#define WORKS(f, o, ...) do { \
	int rc_ = sb_run(f, o, __VA_ARGS__); \
	if (rc_ != 0) fail_msg("refused (%d): %s (output: %s)", rc_, #__VA_ARGS__, (f)->output); \
} while (0)

static void need_backend(void)
{
	const tgi_sb_probe *p = tgi_sandbox_probe();
	if (p->backend != want) {
		print_message("skipped: %s does not work here (bubblewrap: %s; Landlock ABI %d)\n",
		              tgi_sb_backend_name(want), p->bwrap_ok ? "ok" : p->bwrap_why,
		              p->landlock_abi);
		skip();
	}
}

/* The helper is reachable inside the sandbox (the profile shows its
 * directory read-only; under /tmp or /run the private ones would hide it). */
static void need_helper(void)
{
	if (!strncmp(self, "/tmp/", 5) || !strncmp(self, "/run/", 5)) {
		print_message("skipped: the test binary is under a directory the sandbox hides\n");
		skip();
	}
}

/* ---- a listener on 127.0.0.1 ---- */

static int listener(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 4), 0);
	socklen_t len = sizeof a;
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return s;
}

/* 1 if a connection is waiting. */
static int accepted(int s)
{
	int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
	if (c >= 0)
		close(c);
	return c >= 0;
}

/* ---- tests under a backend ---- */

static void test_write_inside_workspace(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	WORKS(f, WW, "echo hi > \"$WS/new.txt\" && mkdir \"$WS/d\" && echo ok > \"$WS/d/f\" && "
	      "rm \"$WS/src/a.txt\" && echo t > \"$TMPDIR/t\" && echo x > /dev/null && "
	      "echo out > /dev/stdout && echo err > /dev/stderr && mktemp > /dev/null && "
	      "cat \"$TMPDIR/t\"");
	assert_non_null(strstr(f->output, "t\n"));
	pathf(p, "%s/new.txt", f->ws);
	assert_string_equal(content(p), "hi\n");
	pathf(p, "%s/d/f", f->ws);
	assert_string_equal(content(p), "ok\n");
	pathf(p, "%s/src/a.txt", f->ws);
	assert_false(exists(p));
}

static void test_write_outside_refused(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	REFUSED(f, WW, "echo x >> \"$OUT/f\"");
	REFUSED(f, WW, "touch \"$OUT/new\"");
	REFUSED(f, WW, "rm \"$OUT/f\"");
	REFUSED(f, WW, "ln -s /etc/passwd \"$OUT/link\"");
	REFUSED(f, WW, ": >> /etc/passwd");
	/* beside the workspace: refused, or (bubblewrap, under /tmp) a private tmpfs */
	sb_run(f, WW, "mkdir \"$WS/../escape\"; touch \"$WS/../escape/x\"");
	pathf(p, "%s/f", f->out);
	assert_string_equal(content(p), "orig\n");
	pathf(p, "%s/new", f->out);
	assert_false(exists(p));
	pathf(p, "%s/link", f->out);
	assert_false(exists(p));
	pathf(p, "%s/escape", f->root);
	assert_false(exists(p));
}

static void test_read_only_mode(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	REFUSED(f, RO, "echo x > \"$WS/new\"");
	REFUSED(f, RO, "echo x >> \"$WS/src/a.txt\"");
	REFUSED(f, RO, "rm \"$WS/src/a.txt\"");
	REFUSED(f, RO, "mkdir \"$WS/d\"");
	REFUSED(f, RO, "echo x >> \"$WS/.git/config\"");
	REFUSED(f, RO, "echo x >> \"$OUT/f\"");
	REFUSED(f, RO, ": >> /etc/passwd");
	WORKS(f, RO, "cat \"$WS/src/a.txt\" \"$WS/.git/config\" > /dev/null && "
	      "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"");
	pathf(p, "%s/new", f->ws);
	assert_false(exists(p));
	pathf(p, "%s/src/a.txt", f->ws);
	assert_string_equal(content(p), "a\n");
	pathf(p, "%s/d", f->ws);
	assert_false(exists(p));
	assert_non_null(strstr(f->output, "t\n"));
}

static void test_protected_paths_read_only(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	REFUSED(f, WW, "echo x >> \"$WS/.git/config\"");
	REFUSED(f, WW, "mkdir \"$WS/.git/hooks\"");
	REFUSED(f, WW, "rm \"$WS/.git/config\"");
	REFUSED(f, WW, "mv \"$WS/.git\" \"$WS/git2\"");
	REFUSED(f, WW, "rm -rf \"$WS/.git\"; test ! -e \"$WS/.git/config\"");
	REFUSED(f, WW, "echo x > \"$WS/.toolgate/new\"");
	REFUSED(f, WW, ": >> \"$WS/.toolgate/ledger.db\"");      /* the ledger, opened for writing */
	REFUSED(f, WW, "exec 3<> \"$WS/.toolgate/ledger.db\"");
	REFUSED(f, WW, "mv \"$WS/.toolgate\" \"$WS/state2\"");
	/* .git is readable, .toolgate is not there at all */
	WORKS(f, WW, "cat \"$WS/.git/config\" && test -z \"$(ls -A \"$WS/.toolgate\")\"");
	pathf(p, "%s/config", f->git);
	assert_string_equal(content(p), "[core]\n");
	pathf(p, "%s/ledger.db", f->state);
	assert_string_equal(content(p), "LEDGER\n");
	pathf(p, "%s/new", f->state);
	assert_false(exists(p));
	pathf(p, "%s/hooks", f->git);
	assert_false(exists(p));
}

/* Landlock cannot keep a subpath of a writable root read-only: shown, as documented. */
static void test_protected_paths_not_enforced(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	WORKS(f, WW, "echo x >> \"$WS/.git/config\" && : >> \"$WS/.toolgate/ledger.db\"");
	pathf(p, "%s/config", f->git);
	assert_string_equal(content(p), "[core]\nx\n");
	json_t *r = tgi_sandbox_report();
	const char *notes = json_string_value(json_object_get(
		json_object_get(json_object_get(r, "modes"), "workspace-write"), "notes"));
	assert_non_null(notes);
	assert_non_null(strstr(notes, ".git, .toolgate and the gate's files in it included"));
	json_decref(r);
}

/* The names of the gate's files that do not exist, and .git anywhere:
 * nothing is made in the workspace to hold them; what the command makes
 * there is removed after the run and reported; what was there stays. */
static void test_refused_names_audited(void **state)
{
	fx *f = *state;
	char sub[PATH_MAX], conf[PATH_MAX], p[PATH_MAX], err[512];
	need_backend();
	pathf(sub, "%s/sub", f->ws);
	pathf(conf, "%s/sub/conf.yaml", f->ws);
	const char *prot[] = {conf};
	opts o = {.mode = TGI_SANDBOX_WORKSPACE_WRITE, .protect = prot, .nprotect = 1};

	/* prepared, not run: nothing made in the workspace */
	char *cmd[] = {"/bin/true", NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	spec_for(f, &o, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_false(exists(sub));
	tgi_sandbox_release(&x);

	WORKS(f, &o, "mkdir -p \"$WS/sub\" && echo evil > \"$WS/sub/conf.yaml\" && "
	      "echo mine > \"$WS/sub/other\" && mkdir -p \"$WS/a/.git/hooks\" && "
	      "git init -q \"$WS/b\" && echo 'gitdir: /x' > \"$WS/sub/.git\"");
	assert_false(exists(conf));
	pathf(p, "%s/other", sub);
	assert_true(exists(p));                   /* the command's own file stays */
	pathf(p, "%s/a/.git", f->ws);
	assert_false(exists(p));
	pathf(p, "%s/a", f->ws);
	assert_true(exists(p));
	pathf(p, "%s/b/.git", f->ws);
	assert_false(exists(p));
	pathf(p, "%s/sub/.git", f->ws);
	assert_false(exists(p));
	assert_true(exists(f->git));              /* it was there: it stays */
	assert_int_equal(json_array_size(f->audit), 4);
	char *dump = json_dumps(f->audit, JSON_COMPACT);
	assert_non_null(strstr(dump, "\"path\":\"sub/conf.yaml\""));
	assert_non_null(strstr(dump, "\"path\":\"a/.git\""));
	assert_non_null(strstr(dump, "\"path\":\"b/.git\""));
	assert_non_null(strstr(dump, "\"action\":\"removed\""));
	free(dump);

	/* with a quarantine, what is refused is kept there, out of the workspace */
	char qdir[PATH_MAX];
	pathf(qdir, "%s/state", f->root);
	assert_int_equal(mkdir(qdir, 0700), 0);
	spec_for(f, &o, &spec, mask);
	spec.quarantine = qdir;
	char script[] = "git init -q \"$WS/c\"";
	char *sh[] = {"/bin/bash", "-c", script, NULL};
	assert_int_equal(tgi_sandbox_prepare(&spec, sh, &x, err, sizeof err), 0);
	int fd;
	pid_t pid = start(f, &x, &fd);
	assert_int_equal(finish(f, pid, fd), 0);
	json_t *found = tgi_sandbox_audit(&x);
	tgi_sandbox_release(&x);
	assert_int_equal(json_array_size(found), 1);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(found, 0), "action")),
	                       "kept in"));
	json_decref(found);
	pathf(p, "%s/c/.git", f->ws);
	assert_false(exists(p));
	pathf(p, "%s/quarantine/1-c%%.git/HEAD", qdir);
	assert_true(exists(p));

	/* a .git moved with its directory is the old one: kept, not reported */
	WORKS(f, &o, "mkdir -p \"$WS/v\" && true");
	pathf(p, "%s/v/.git", f->ws);
	assert_int_equal(mkdir(p, 0755), 0);
	WORKS(f, &o, "mv \"$WS/v\" \"$WS/w\"");
	assert_null(f->audit);
	pathf(p, "%s/w/.git", f->ws);
	assert_true(exists(p));
}

/* Protected paths that are symlinks: the target is held when it lies in a
 * writable root, skipped when it is read-only anyway or dangling -- and
 * the run still starts. */
static void test_protected_symlinks(void **state)
{
	fx *f = *state;
	char real[PATH_MAX], p[PATH_MAX], dangling[PATH_MAX];
	need_backend();
	pathf(real, "%s/realgit", f->ws);
	assert_int_equal(rename(f->git, real), 0);
	assert_int_equal(symlink(real, f->git), 0);            /* absolute, inside */
	pathf(p, "%s/ledger.db", f->state);
	unlink(p);
	rmdir(f->state);
	assert_int_equal(symlink(f->out, f->state), 0);        /* outside: not shown */
	pathf(dangling, "%s/dangling", f->ws);
	assert_int_equal(symlink("nowhere", dangling), 0);
	const char *prot[] = {dangling};
	opts o = {.mode = TGI_SANDBOX_WORKSPACE_WRITE, .protect = prot, .nprotect = 1};
	WORKS(f, &o, "echo ok > \"$WS/file\" && cat \"$WS/.git/config\"");
	REFUSED(f, &o, "echo x >> \"$WS/.git/config\"");
	REFUSED(f, &o, "echo x >> \"$WS/realgit/config\"");
	REFUSED(f, &o, "cat \"$WS/.toolgate/f\"");
	pathf(p, "%s/config", real);
	assert_string_equal(content(p), "[core]\n");
}

/* The kernel's settings and secrets, and the user's home. */
static void test_kernel_and_home(void **state)
{
	fx *f = *state;
	char p[PATH_MAX];
	need_backend();
	REFUSED(f, WW, "echo 1 > /proc/sys/kernel/printk_ratelimit");
	/* root's kernel settings elsewhere: read-only mounts (bubblewrap's own
	 * for /proc/irq and /proc/bus) */
	if (geteuid() == 0)
		WORKS(f, WW, "grep -E ' /proc/(sys|irq|bus|fs) ' /proc/self/mountinfo | grep -c ' ro,' "
		      "| grep -qx 4");
	REFUSED(f, WW, "cat /proc/keys");
	REFUSED(f, WW, "cat /etc/shadow > /dev/null");
	REFUSED(f, WW, "cat \"$HOME/secret\"");
	WORKS(f, WW, "echo mine > \"$HOME/made\" && cat \"$HOME/made\" && cat /etc/passwd > /dev/null");
	pathf(p, "%s/made", f->home);
	assert_false(exists(p));                  /* the home is private */
}

/* A profile with hosts: the attach hook gets the sandbox's pid (its own
 * network namespace) before the command runs; one that fails stops it. */
typedef struct attach_seen {
	pid_t pid;
	int   other_netns;
	int   ran_before;      /* the command's marker existed when attach was called */
	int   fail;
	char  marker[PATH_MAX];
} attach_seen;

static int attach_hook(void *arg, pid_t pid, const tgi_sb_profile *p, char *err, size_t errlen)
{
	attach_seen *a = arg;
	char mine[64], theirs[64], path[64];
	a->pid = pid;
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
	ssize_t n1 = readlink("/proc/self/ns/net", mine, sizeof mine - 1);
	ssize_t n2 = readlink(path, theirs, sizeof theirs - 1);
	a->other_netns = n1 > 0 && n2 > 0 && (n1 != n2 || memcmp(mine, theirs, (size_t)n1));
	a->ran_before = exists(a->marker);
	assert_int_equal(p->net, TGI_NET_HOSTS);
	if (a->fail) {
		snprintf(err, errlen, "the proxy is down");
		return -1;
	}
	return 0;
}

static void test_network_attach(void **state)
{
	fx *f = *state;
	char err[512], script[PATH_MAX + 64];
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	need_backend();
	attach_seen seen = {0};
	pathf(seen.marker, "%s/ran", f->ws);
	snprintf(script, sizeof script, "touch '%s'", seen.marker);
	char *cmd[] = {"/bin/sh", "-c", script, NULL};
	spec_for(f, WW, &spec, mask);
	profile.net = TGI_NET_HOSTS;
	tgi_strv_push(&profile.hosts, tgi_strdup("api.example.com:443"));

	/* no hook: a clear refusal */
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), -1);
	assert_non_null(strstr(err, "network by host"));
	tgi_sandbox_release(&x);

	spec.attach = attach_hook;
	spec.attach_arg = &seen;
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	int fd;
	pid_t pid = start(f, &x, &fd);
	assert_int_equal(finish(f, pid, fd), 0);
	tgi_sandbox_release(&x);
	assert_true(seen.pid > 0);
	assert_true(seen.other_netns);
	assert_false(seen.ran_before);
	assert_true(exists(seen.marker));

	unlink(seen.marker);
	seen.fail = 1;
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	pid = start(f, &x, &fd);
	finish(f, pid, fd);
	tgi_sandbox_release(&x);
	assert_non_null(strstr(f->started, "the proxy is down"));
	assert_false(exists(seen.marker));        /* the command never started */
}

/* What doctor shows of a spec. */
static void test_view_lists(void **state)
{
	fx *f = *state;
	tgi_sb_spec spec;
	const char *mask[1];
	need_backend();
	spec_for(f, WW, &spec, mask);
	json_t *v = tgi_sandbox_view(&spec);
	char *dump = json_dumps(v, JSON_COMPACT);
	assert_true(json_is_true(json_object_get(v, "usable")));
	assert_non_null(strstr(dump, "\"writable\":["));
	assert_non_null(strstr(dump, f->ws));
	assert_non_null(strstr(dump, "\"hidden\":["));
	assert_non_null(strstr(dump, f->state));
	assert_non_null(strstr(dump, "/proc/keys"));
	assert_non_null(strstr(dump, "\"private\":["));
	assert_non_null(strstr(dump, f->home));
	assert_int_equal(json_integer_value(json_object_get(v, "git_read_only")), 1);
	free(dump);
	json_decref(v);
}

/* Landlock runs only a profile that accepts it by name. */
static void test_landlock_accept(void **state)
{
	fx *f = *state;
	char *cmd[] = {"/bin/true", NULL}, err[512];
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	need_backend();
	spec_for(f, &(opts){.mode = TGI_SANDBOX_WORKSPACE_WRITE, .strict = 1}, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), -1);
	assert_non_null(strstr(err, "accept: [landlock]"));
	tgi_sandbox_release(&x);
}

static void test_network_cut(void **state)
{
	fx *f = *state;
	int port, s = listener(&port);
	need_backend();
	REFUSED(f, WW, "exec 3<>/dev/tcp/127.0.0.1/%d", port);
	assert_non_null(strstr(f->output, "Operation not permitted"));
	REFUSED(f, RO, "exec 3<>/dev/tcp/127.0.0.1/%d", port);
	REFUSED(f, WW, "exec 3<>/dev/udp/127.0.0.1/%d", port);
	assert_false(accepted(s));
	close(s);
}

static void test_socket_families(void **state)
{
	fx *f = *state;
	need_backend();
	need_helper();
	WORKS(f, WW, "'%s' --sb-helper sockets", self);
	assert_string_equal(f->output, "inet:EPERM udp:EPERM inet6:EPERM netlink:EPERM unix:ok "
	                    "unixpair:ok uring:EPERM\n");
}

static void test_network_allowed(void **state)
{
	fx *f = *state;
	int port, s = listener(&port);
	need_backend();
	WORKS(f, NET, "exec 3<>/dev/tcp/127.0.0.1/%d", port);
	assert_true(accepted(s));
	close(s);
	if (strncmp(self, "/tmp/", 5) && strncmp(self, "/run/", 5)) {
		WORKS(f, NET, "'%s' --sb-helper sockets", self);
		assert_non_null(strstr(f->output, "inet:ok "));
	}
}

/* bubblewrap without network: a private, empty /run (host daemons' sockets) */
static void test_private_run(void **state)
{
	fx *f = *state;
	need_backend();
	WORKS(f, WW, "test -z \"$(ls -A /run)\"");
}

static void test_no_capabilities(void **state)
{
	fx *f = *state;
	need_backend();
	WORKS(f, WW, "grep -E '^(CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status | tr -d ' \\t'");
	assert_string_equal(f->output, "CapPrm:0000000000000000\nCapEff:0000000000000000\n"
	                    "CapAmb:0000000000000000\nNoNewPrivs:1\n");
}

static pid_t decoy(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static int alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

static void test_signals_stay_inside(void **state)
{
	fx *f = *state;
	need_backend();
	if (want == TGI_SB_LANDLOCK && tgi_sandbox_probe()->landlock_abi < 6) {
		print_message("skipped: Landlock ABI %d cannot scope signals (6 can); "
		              "the report says so\n", tgi_sandbox_probe()->landlock_abi);
		skip();
	}
	pid_t d = decoy();
	int rc_decoy = sb_run(f, WW, "kill -9 %d", (int)d);
	int rc_self = sb_run(f, WW, "kill -9 %d", (int)getpid());
	/* the command's parent: bubblewrap's init (ignores it) or this process */
	sb_run(f, WW, "kill -9 $PPID; echo still here");
	int ok = alive(d);
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	assert_true(ok);
	assert_int_not_equal(rc_decoy, 0);
	assert_int_not_equal(rc_self, 0);
	assert_non_null(strstr(f->output, "still here"));
}

/* Processes whose command line is exactly "sleep <marker>". */
static int count_marked(const char *marker)
{
	int n = 0;
	DIR *d = opendir("/proc");
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char p[300], buf[256];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		const char *arg = buf + strlen(buf) + 1;
		if (arg < buf + len && !strcmp(arg, marker) && strstr(buf, "sleep"))
			n++;
	}
	closedir(d);
	return n;
}

/* Killing the run the way spawn does at a timeout (the process group)
 * leaves nothing behind, background children included. */
static void test_kill_leaves_nothing(void **state)
{
	fx *f = *state;
	char marker[32], script[256], err[512];
	need_backend();
	snprintf(marker, sizeof marker, "%d.%d", 900 + (int)(getpid() % 97), (int)getpid());
	snprintf(script, sizeof script, "sleep %s & sleep %s & (sleep %s &) ; sleep %s", marker,
	         marker, marker, marker);
	char *argv[] = {"/bin/bash", "-c", script, NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	spec_for(f, WW, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, argv, &x, err, sizeof err), 0);
	int fd;
	pid_t pid = start(f, &x, &fd);
	for (int i = 0; i < 400 && count_marked(marker) < 4; i++)
		usleep(5000);
	assert_int_equal(count_marked(marker), 4);
	kill(-pid, SIGTERM);
	kill(-pid, SIGKILL);
	finish(f, pid, fd);
	tgi_sandbox_release(&x);
	int left = 0;
	for (int i = 0; i < 400 && (left = count_marked(marker)) > 0; i++)
		usleep(5000);
	assert_int_equal(left, 0);
}

/* Landlock has no pid namespace: setsid/setpgid are refused so that the
 * process group holds everything; bubblewrap leaves them alone. */
static void test_session_calls(void **state)
{
	fx *f = *state;
	need_backend();
	need_helper();
	WORKS(f, WW, "'%s' --sb-helper session; true", self);
	assert_string_equal(f->output, want == TGI_SB_LANDLOCK ? "setsid:EPERM setpgid:EPERM \n"
	                                                       : "setsid:ok setpgid:ok \n");
}

static int has(char **argv, const char *s)
{
	for (; *argv; argv++)
		if (!strcmp(*argv, s))
			return 1;
	return 0;
}

static int index_of(char **argv, const char *a, const char *b)
{
	for (int i = 0; argv[i] && argv[i + 1]; i++)
		if (!strcmp(argv[i], a) && !strcmp(argv[i + 1], b))
			return i;
	return -1;
}

static void test_bwrap_argv(void **state)
{
	fx *f = *state;
	char err[512];
	need_backend();
	char *cmd[] = {"/bin/echo", "a b", NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;

	spec_for(f, WW, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_int_equal(x.backend, TGI_SB_BWRAP);
	assert_string_equal(x.argv[0], tgi_sandbox_probe()->bwrap_path);
	assert_true(index_of(x.argv, "--ro-bind", "/") < 0);     /* not the whole root */
	assert_true(index_of(x.argv, "--ro-bind", "/usr") > 0);
	assert_true(index_of(x.argv, "--ro-bind", "/etc") > 0);
	assert_true(index_of(x.argv, "--ro-bind", "/proc/sys") > index_of(x.argv, "--proc", "/proc"));
	assert_true(index_of(x.argv, "/dev/null", "/proc/keys") > 0);
	/* /etc/shadow: hidden by a mount where this user could read it */
	assert_int_equal(index_of(x.argv, "/dev/null", "/etc/shadow") > 0,
	                 access("/etc/shadow", R_OK) == 0);
	static const char *const flags[] = {"--unshare-pid", "--unshare-net", "--die-with-parent",
	                                    "--new-session", "--seccomp", "--dev", "--proc"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(flags); i++)
		assert_true(has(x.argv, flags[i]));
	if (tgi_sandbox_probe()->userns)
		assert_true(has(x.argv, "--unshare-user"));
	assert_true(index_of(x.argv, "--cap-drop", "ALL") > 0);
	int ws = index_of(x.argv, "--bind", f->ws), git = index_of(x.argv, "--ro-bind", f->git);
	int tmpfs = index_of(x.argv, "--tmpfs", "/tmp");
	int state_ = index_of(x.argv, "--tmpfs", f->state);
	assert_true(tmpfs > 0 && ws > tmpfs && git > ws && state_ > ws);   /* parents first */
	assert_true(index_of(x.argv, "--remount-ro", f->state) > state_);   /* sealed */
	assert_true(index_of(x.argv, "--tmpfs", f->home) > 0);              /* private home */
	assert_true(index_of(x.argv, "--bind", f->tmp) < 0);   /* its own /tmp serves */
	assert_string_equal(x.tmpdir, "/tmp");
	assert_true(index_of(x.argv, "--ro-bind", self_dir) > 0);           /* profile read */
	assert_true(x.seccomp_fd > 2);
	assert_true(fcntl(x.seccomp_fd, F_GETFD) & FD_CLOEXEC);  /* only the child keeps it */
	assert_string_equal(x.home, f->home);
	size_t n = 0;
	while (x.argv[n])
		n++;
	assert_string_equal(x.argv[n - 3], "--");
	assert_string_equal(x.argv[n - 2], "/bin/echo");
	assert_string_equal(x.argv[n - 1], "a b");
	assert_false(has(x.argv, "--info-fd"));
	json_decref(tgi_sandbox_audit(&x));
	tgi_sandbox_release(&x);
	assert_null(x.argv);
	assert_int_equal(x.seccomp_fd, -1);

	spec_for(f, NET, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_false(has(x.argv, "--unshare-net"));
	assert_true(has(x.argv, "--seccomp"));       /* the administrative calls, always */
	tgi_sandbox_release(&x);

	spec_for(f, RO, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_true(index_of(x.argv, "--ro-bind", f->ws) > 0);
	assert_true(index_of(x.argv, "--bind", f->ws) < 0);
	assert_true(index_of(x.argv, "--ro-bind", f->git) < 0);   /* read-only already */
	tgi_sandbox_release(&x);
}

/* ---- tests that need no backend ---- */

static void expect_refusal(const tgi_sb_spec *spec, char *const *argv, const char *needle)
{
	char err[512] = "";
	tgi_sb_exec x;
	assert_int_equal(tgi_sandbox_prepare(spec, argv, &x, err, sizeof err), -1);
	if (!strstr(err, needle))
		fail_msg("expected \"%s\" in: %s", needle, err);
	assert_null(x.argv);
	assert_int_equal(x.seccomp_fd, -1);
	assert_null(x.child);
	tgi_sandbox_release(&x);            /* safe after a failure */
}

static void test_bad_specs(void **state)
{
	fx *f = *state;
	char *cmd[] = {"/bin/true", NULL}, *empty[] = {NULL};
	char missing[PATH_MAX], file[PATH_MAX];
	tgi_sb_spec spec;
	const char *mask[1];
	if (tgi_sandbox_probe()->backend == TGI_SB_NONE)
		skip();                           /* the refusal comes first there */
	spec_for(f, WW, &spec, mask);
	expect_refusal(&spec, NULL, "no command");
	expect_refusal(&spec, empty, "no command");
	expect_refusal(NULL, cmd, "no command");
	spec.profile = NULL;
	expect_refusal(&spec, cmd, "no profile");

	spec_for(f, WW, &spec, mask);
	spec.workspace = "relative/ws";
	expect_refusal(&spec, cmd, "workspace \"relative/ws\" is not an absolute path");
	spec.workspace = NULL;
	expect_refusal(&spec, cmd, "no workspace for workspace-write mode");
	pathf(missing, "%s/nope", f->root);
	spec.workspace = missing;
	expect_refusal(&spec, cmd, "is not a directory");
	pathf(file, "%s/f", f->out);
	spec.workspace = file;
	expect_refusal(&spec, cmd, "is not a directory");

	spec_for(f, WW, &spec, mask);
	spec.tmpdir = "/tmp/../etc";
	expect_refusal(&spec, cmd, "has a \".\" or \"..\" part");

	spec_for(f, WW, &spec, mask);
	const char *badprot[] = {"x/.git"};
	spec.protect = badprot;
	spec.nprotect = 1;
	expect_refusal(&spec, cmd, "protected path \"x/.git\" is not an absolute path");
	const char *whole[] = {f->ws};
	spec.protect = whole;
	expect_refusal(&spec, cmd, "is a whole writable root");
	spec.nprotect = 1025;
	expect_refusal(&spec, cmd, "1025 protected and 1 hidden paths (at most 1024 each)");
	spec.nprotect = 1;
	spec.protect = NULL;
	expect_refusal(&spec, cmd, "protected or hidden paths are missing");

	spec_for(f, WW, &spec, mask);
	profile.mode = (tgi_sandbox)42;
	expect_refusal(&spec, cmd, "mode 42 is unknown");
}

/* danger-full-access: the argv unchanged, no backend, and really unsandboxed. */
static void test_full_access(void **state)
{
	fx *f = *state;
	char err[512], p[PATH_MAX];
	char *cmd[] = {"/bin/bash", "-c", "echo free >> \"$OUT/f\"", NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	tgi_sb_exec x;
	spec_for(f, &(opts){.mode = TGI_SANDBOX_FULL}, &spec, mask);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_int_equal(x.backend, TGI_SB_NONE);
	assert_int_equal(x.seccomp_fd, -1);
	assert_null(x.child);
	for (int i = 0; i < 4; i++)
		assert_true(cmd[i] ? !strcmp(x.argv[i], cmd[i]) && x.argv[i] != cmd[i] : !x.argv[i]);
	int fd;
	pid_t pid = start(f, &x, &fd);
	assert_int_equal(finish(f, pid, fd), 0);
	tgi_sandbox_release(&x);
	pathf(p, "%s/f", f->out);
	assert_string_equal(content(p), "orig\nfree\n");
}

static void test_no_backend_refuses(void **state)
{
	fx *f = *state;
	char *cmd[] = {"/bin/true", NULL};
	tgi_sb_spec spec;
	const char *mask[1];
	const char *ov = getenv("TOOLGATE_SANDBOX_BACKEND");
	char needle[256];
	assert_int_equal(tgi_sandbox_probe()->backend, TGI_SB_NONE);

	spec_for(f, WW, &spec, mask);
	expect_refusal(&spec, cmd, "no sandbox backend works here (bubblewrap: ");
	expect_refusal(&spec, cmd, "); refusing to run commands in workspace-write mode");
	if (!strcmp(ov, "none"))
		snprintf(needle, sizeof needle, "(bubblewrap: not used: TOOLGATE_SANDBOX_BACKEND=none; "
		         "Landlock: not used: TOOLGATE_SANDBOX_BACKEND=none)");
	else
		snprintf(needle, sizeof needle, "TOOLGATE_SANDBOX_BACKEND=%s is not bubblewrap, "
		         "landlock, none or auto", ov);
	expect_refusal(&spec, cmd, needle);
	profile.mode = TGI_SANDBOX_READ_ONLY;
	expect_refusal(&spec, cmd, "refusing to run commands in read-only mode");

	tgi_sb_exec x;
	char err[512];
	profile.mode = TGI_SANDBOX_FULL;
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_string_equal(x.argv[0], "/bin/true");
	assert_null(x.argv[1]);
	assert_int_equal(tgi_sandbox_child(&x), 0);    /* nothing to do in the child */
	tgi_sandbox_release(&x);
	tgi_sandbox_release(NULL);

	json_t *r = tgi_sandbox_report(), *m = json_object_get(r, "modes");
	assert_string_equal(json_string_value(json_object_get(r, "backend")), "none");
	assert_string_equal(json_string_value(json_object_get(r, "override")), ov);
	assert_true(json_is_false(json_object_get(json_object_get(m, "read-only"), "enforceable")));
	assert_true(json_is_false(json_object_get(json_object_get(m, "workspace-write"),
	                                          "enforceable")));
	assert_true(json_is_true(json_object_get(json_object_get(m, "danger-full-access"),
	                                         "enforceable")));
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(m, "read-only"),
	                                                         "notes")), "not enforceable"));
	json_decref(r);
}

static void test_report(void **state)
{
	(void)state;
	need_backend();
	const tgi_sb_probe *p = tgi_sandbox_probe();
	json_t *r = tgi_sandbox_report();
	assert_string_equal(json_string_value(json_object_get(r, "backend")),
	                    tgi_sb_backend_name(want));
	json_t *bw = json_object_get(r, "bubblewrap");
	assert_true(json_is_boolean(json_object_get(bw, "ok")));
	assert_int_equal(json_is_true(json_object_get(bw, "ok")), p->bwrap_ok);
	assert_true(json_is_string(json_object_get(bw, "path")));
	assert_true(p->bwrap_ok ? json_is_null(json_object_get(bw, "why"))
	                        : json_is_string(json_object_get(bw, "why")));
	assert_int_equal(json_integer_value(json_object_get(r, "landlock_abi")), p->landlock_abi);
	assert_true(json_is_true(json_object_get(r, "seccomp")));
	static const char *const modes[] = {"read-only", "workspace-write", "danger-full-access"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(modes); i++) {
		json_t *m = json_object_get(json_object_get(r, "modes"), modes[i]);
		/* Landlock cannot enforce a sandboxed mode fully: only when accepted */
		int full = want == TGI_SB_BWRAP || !strcmp(modes[i], "danger-full-access");
		assert_int_equal(json_is_true(json_object_get(m, "enforceable")), full);
		assert_true(json_is_string(json_object_get(m, "notes")));
	}
	assert_true(json_is_string(json_object_get(r, "kernel")));
	assert_true(json_array_size(json_object_get(r, "landlock_cannot")) >= 5);
	assert_true(json_array_size(json_object_get(r, "refused_calls")) >= 30);
	json_decref(r);
}

/* ---- groups, one process each ---- */

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

static int run_group(const char *backend)
{
	const struct CMUnitTest bwrap_tests[] = {
		T(test_write_inside_workspace), T(test_write_outside_refused), T(test_read_only_mode),
		T(test_protected_paths_read_only), T(test_refused_names_audited),
		T(test_protected_symlinks), T(test_kernel_and_home), T(test_network_attach),
		T(test_view_lists), T(test_network_cut), T(test_socket_families), T(test_network_allowed),
		T(test_no_capabilities), T(test_signals_stay_inside), T(test_kill_leaves_nothing),
		T(test_session_calls), T(test_bwrap_argv), T(test_private_run), T(test_bad_specs),
		T(test_full_access), T(test_report),
	};
	const struct CMUnitTest landlock_tests[] = {
		T(test_write_inside_workspace), T(test_write_outside_refused), T(test_read_only_mode),
		T(test_protected_paths_not_enforced), T(test_landlock_accept), T(test_network_cut),
		T(test_socket_families), T(test_network_allowed), T(test_no_capabilities),
		T(test_signals_stay_inside), T(test_kill_leaves_nothing), T(test_session_calls),
		T(test_bad_specs), T(test_full_access), T(test_report),
	};
	const struct CMUnitTest none_tests[] = {
		T(test_no_backend_refuses), T(test_full_access),
	};
	setenv("TOOLGATE_SANDBOX_BACKEND", backend, 1);
	if (!strcmp(backend, "bubblewrap")) {
		want = TGI_SB_BWRAP;
		return cmocka_run_group_tests_name("sandbox: bubblewrap", bwrap_tests, NULL, NULL);
	}
	if (!strcmp(backend, "landlock")) {
		want = TGI_SB_LANDLOCK;
		return cmocka_run_group_tests_name("sandbox: landlock", landlock_tests, NULL, NULL);
	}
	want = TGI_SB_NONE;
	return cmocka_run_group_tests_name("sandbox: no backend", none_tests, NULL, NULL);
}

/* As root: the whole binary again as an unprivileged user ("nobody"),
 * since what holds differs between the two.  Skipped, saying so, where
 * that user cannot reach this binary.  The number of failed runs. */
static int as_user_too(void)
{
	if (geteuid() != 0 || getenv("TG_SANDBOX_TEST_AS_USER"))
		return 0;
	struct passwd *pw = getpwnam("nobody");
	if (!pw) {
		fprintf(stderr, "the unprivileged half is skipped: there is no user nobody\n");
		return 0;
	}
	uid_t uid = pw->pw_uid;
	gid_t gid = pw->pw_gid;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(1);
		setenv("TG_SANDBOX_TEST_AS_USER", "1", 1);
		if (access(self, X_OK) < 0)
			_exit(77);
		char *argv[] = {self, NULL};
		execv(self, argv);
		_exit(77);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		fprintf(stderr, "the unprivileged half is skipped: nobody cannot run %s\n", self);
		return 0;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the unprivileged half failed\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--sb-helper")) {
		int rc = helper(argv[2]);
		_exit(rc);
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = '\0';
	snprintf(self_dir, sizeof self_dir, "%s", self);
	char *slash = strrchr(self_dir, '/');
	if (slash && slash != self_dir)
		*slash = '\0';

	const char *forced = getenv("TOOLGATE_SANDBOX_BACKEND");
	if (forced && *forced)
		return run_group(forced);

	static const char *const groups[] = {"bubblewrap", "landlock", "none", "sideways"};
	int failed = as_user_too();
	for (size_t i = 0; i < TGI_ARRAY_LEN(groups); i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			exit(run_group(groups[i]));
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "group %s failed\n", groups[i]);
			failed++;
		}
	}
	return failed;
}
