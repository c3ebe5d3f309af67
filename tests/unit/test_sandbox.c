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
 * .git/, .toolgate/ and the ledger are read-only and a missing protected
 * path is held; under Landlock they are NOT (documented), and setsid is
 * refused.  With no backend, sandboxed modes refuse with the header's
 * sentence and danger-full-access runs the command unchanged.
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
#include <poll.h>
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
	char output[8192];     /* the last run's stdout + stderr */
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
	char p[PATH_MAX];
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->out, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(mkdir(f->git, 0755), 0);
	assert_int_equal(mkdir(f->state, 0700), 0);
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

	snprintf(f->envbuf[0], sizeof f->envbuf[0], "HOME=%s", f->ws);
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
	free(f);
	return 0;
}

/* ---- running ---- */

typedef struct opts {
	tgi_sandbox        mode;
	int                network;
	const char *const *protect;   /* NULL: ws/.git and ws/.toolgate */
	size_t             nprotect;
} opts;

static void spec_for(const fx *f, const opts *o, tgi_sb_spec *spec, const char *prot[2])
{
	prot[0] = f->git;
	prot[1] = f->state;
	*spec = (tgi_sb_spec){
		.mode = o->mode, .network = o->network, .workspace = f->ws, .tmpdir = f->tmp,
		.protect = o->protect ? o->protect : prot, .nprotect = o->protect ? o->nprotect : 2,
	};
}

/* Fork and exec x as spawn does (own process group, cwd the workspace,
 * tgi_sandbox_child last); stdout and stderr into *fd. */
static pid_t start(fx *f, const tgi_sb_exec *x, int *fd)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
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
	const char *prot[2];
	tgi_sb_exec x;
	spec_for(f, o, &spec, prot);
	if (tgi_sandbox_prepare(&spec, argv, &x, err, sizeof err) < 0)
		fail_msg("prepare: %s", err);
	int fd;
	pid_t pid = start(f, &x, &fd);
	int rc = finish(f, pid, fd);
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

/* The helper is reachable inside the sandbox (bubblewrap hides /tmp and /run). */
static void need_helper(void)
{
	if (want == TGI_SB_BWRAP && (!strncmp(self, "/tmp/", 5) || !strncmp(self, "/run/", 5))) {
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
	      "echo out > /dev/stdout && echo err > /dev/stderr && mktemp > /dev/null");
	pathf(p, "%s/new.txt", f->ws);
	assert_string_equal(content(p), "hi\n");
	pathf(p, "%s/d/f", f->ws);
	assert_string_equal(content(p), "ok\n");
	pathf(p, "%s/src/a.txt", f->ws);
	assert_false(exists(p));
	pathf(p, "%s/t", f->tmp);
	assert_string_equal(content(p), "t\n");
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
	pathf(p, "%s/t", f->tmp);
	assert_string_equal(content(p), "t\n");
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
	WORKS(f, WW, "cat \"$WS/.git/config\" \"$WS/.toolgate/ledger.db\"");
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
	assert_non_null(strstr(notes, "cannot keep .git/ and .toolgate/"));
	json_decref(r);
}

/* A protected path that does not exist yet is held for the run (nothing
 * can be made there), then removed, with the parents made for it; one that
 * existed stays; another run holding it keeps it. */
static void test_missing_protected_path_held(void **state)
{
	fx *f = *state;
	char sub[PATH_MAX], git[PATH_MAX], p[PATH_MAX], err[512];
	need_backend();
	pathf(sub, "%s/sub", f->ws);
	pathf(git, "%s/sub/.git/", f->ws);       /* '/': a directory */
	const char *prot[] = {git, f->git};
	opts o = {.mode = TGI_SANDBOX_WORKSPACE_WRITE, .protect = prot, .nprotect = 2};
	REFUSED(f, &o, "mkdir -p \"$WS/sub/.git/hooks\"");
	REFUSED(f, &o, "touch \"$WS/sub/.git/HEAD\"");
	REFUSED(f, &o, "rmdir \"$WS/sub/.git\"");
	REFUSED(f, &o, "test -d \"$WS/sub/.git\" && rm -rf \"$WS/sub\"; test ! -e \"$WS/sub/.git\"");
	assert_false(exists(sub));                /* made for the run, removed after */
	assert_true(exists(f->git));              /* it was there: it stays */
	WORKS(f, &o, "touch \"$WS/sub/other\"");
	assert_false(exists(git));
	pathf(p, "%s/other", sub);
	assert_true(exists(p));                   /* a parent in use stays */

	/* two runs hold it: the first one's release leaves it to the second */
	char *cmd[] = {"/bin/true", NULL};
	tgi_sb_spec spec;
	const char *two[2];
	tgi_sb_exec a, b;
	spec_for(f, &o, &spec, two);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &a, err, sizeof err), 0);
	assert_true(exists(git));
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &b, err, sizeof err), 0);
	tgi_sandbox_release(&a);
	assert_true(exists(git));
	tgi_sandbox_release(&b);
	rmdir(git);
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
	assert_int_equal(symlink(f->out, f->state), 0);        /* outside: read-only */
	pathf(dangling, "%s/dangling", f->ws);
	assert_int_equal(symlink("nowhere", dangling), 0);
	const char *prot[] = {f->git, f->state, dangling};
	opts o = {.mode = TGI_SANDBOX_WORKSPACE_WRITE, .protect = prot, .nprotect = 3};
	WORKS(f, &o, "echo ok > \"$WS/file\" && cat \"$WS/.git/config\"");
	REFUSED(f, &o, "echo x >> \"$WS/.git/config\"");
	REFUSED(f, &o, "echo x >> \"$WS/realgit/config\"");
	REFUSED(f, &o, "echo x > \"$WS/.toolgate/new\"");
	pathf(p, "%s/config", real);
	assert_string_equal(content(p), "[core]\n");
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
	const char *prot[2];
	tgi_sb_exec x;
	spec_for(f, WW, &spec, prot);
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
	const char *prot[2];
	tgi_sb_exec x;

	spec_for(f, WW, &spec, prot);
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_int_equal(x.backend, TGI_SB_BWRAP);
	assert_string_equal(x.argv[0], tgi_sandbox_probe()->bwrap_path);
	assert_int_equal(index_of(x.argv, "--ro-bind", "/"), 1);
	static const char *const flags[] = {"--unshare-pid", "--unshare-net", "--die-with-parent",
	                                    "--new-session", "--seccomp", "--dev", "--proc"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(flags); i++)
		assert_true(has(x.argv, flags[i]));
	assert_true(index_of(x.argv, "--cap-drop", "ALL") > 0);
	int ws = index_of(x.argv, "--bind", f->ws), git = index_of(x.argv, "--ro-bind", f->git);
	int tmpfs = index_of(x.argv, "--tmpfs", "/tmp");
	assert_true(tmpfs > 0 && ws > tmpfs && git > ws);      /* parents first */
	assert_true(index_of(x.argv, "--bind", f->tmp) > tmpfs);
	assert_true(x.seccomp_fd > 2);
	assert_true(fcntl(x.seccomp_fd, F_GETFD) & FD_CLOEXEC);  /* only the child keeps it */
	size_t n = 0;
	while (x.argv[n])
		n++;
	assert_string_equal(x.argv[n - 3], "--");
	assert_string_equal(x.argv[n - 2], "/bin/echo");
	assert_string_equal(x.argv[n - 1], "a b");
	tgi_sandbox_release(&x);
	assert_null(x.argv);
	assert_int_equal(x.seccomp_fd, -1);

	spec.network = 1;
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_false(has(x.argv, "--unshare-net"));
	assert_false(has(x.argv, "--seccomp"));
	assert_int_equal(x.seccomp_fd, -1);
	tgi_sandbox_release(&x);

	spec.mode = TGI_SANDBOX_READ_ONLY;
	spec.network = 0;
	assert_int_equal(tgi_sandbox_prepare(&spec, cmd, &x, err, sizeof err), 0);
	assert_true(index_of(x.argv, "--ro-bind", f->ws) > 0);
	assert_true(index_of(x.argv, "--bind", f->ws) < 0);
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
	const char *prot[2];
	if (tgi_sandbox_probe()->backend == TGI_SB_NONE)
		skip();                           /* the refusal comes first there */
	spec_for(f, WW, &spec, prot);
	expect_refusal(&spec, NULL, "no command");
	expect_refusal(&spec, empty, "no command");
	expect_refusal(NULL, cmd, "no command");

	spec_for(f, WW, &spec, prot);
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

	spec_for(f, WW, &spec, prot);
	spec.tmpdir = "/tmp/../etc";
	expect_refusal(&spec, cmd, "has a \".\" or \"..\" part");

	spec_for(f, WW, &spec, prot);
	const char *badprot[] = {"x/.git"};
	spec.protect = badprot;
	spec.nprotect = 1;
	expect_refusal(&spec, cmd, "protected path \"x/.git\" is not an absolute path");
	const char *whole[] = {f->ws};
	spec.protect = whole;
	expect_refusal(&spec, cmd, "is a whole writable root");
	spec.nprotect = 257;
	expect_refusal(&spec, cmd, "257 protected paths (at most 256)");
	spec.nprotect = 1;
	spec.protect = NULL;
	expect_refusal(&spec, cmd, "protected paths are missing");

	spec_for(f, WW, &spec, prot);
	spec.mode = (tgi_sandbox)42;
	expect_refusal(&spec, cmd, "mode 42 is unknown");
}

/* danger-full-access: the argv unchanged, no backend, and really unsandboxed. */
static void test_full_access(void **state)
{
	fx *f = *state;
	char err[512], p[PATH_MAX];
	char *cmd[] = {"/bin/bash", "-c", "echo free >> \"$OUT/f\"", NULL};
	tgi_sb_spec spec;
	const char *prot[2];
	tgi_sb_exec x;
	spec_for(f, &(opts){.mode = TGI_SANDBOX_FULL}, &spec, prot);
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
	const char *prot[2];
	const char *ov = getenv("TOOLGATE_SANDBOX_BACKEND");
	char needle[256];
	assert_int_equal(tgi_sandbox_probe()->backend, TGI_SB_NONE);

	spec_for(f, WW, &spec, prot);
	expect_refusal(&spec, cmd, "no sandbox backend works here (bubblewrap: ");
	expect_refusal(&spec, cmd, "); refusing to run commands in workspace-write mode");
	if (!strcmp(ov, "none"))
		snprintf(needle, sizeof needle, "(bubblewrap: not used: TOOLGATE_SANDBOX_BACKEND=none; "
		         "Landlock: not used: TOOLGATE_SANDBOX_BACKEND=none)");
	else
		snprintf(needle, sizeof needle, "TOOLGATE_SANDBOX_BACKEND=%s is not bubblewrap, "
		         "landlock, none or auto", ov);
	expect_refusal(&spec, cmd, needle);
	spec.mode = TGI_SANDBOX_READ_ONLY;
	expect_refusal(&spec, cmd, "refusing to run commands in read-only mode");

	tgi_sb_exec x;
	char err[512];
	spec.mode = TGI_SANDBOX_FULL;
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
		assert_true(json_is_true(json_object_get(m, "enforceable")));
		assert_true(json_is_string(json_object_get(m, "notes")));
	}
	json_decref(r);
}

/* ---- groups, one process each ---- */

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

static int run_group(const char *backend)
{
	const struct CMUnitTest bwrap_tests[] = {
		T(test_write_inside_workspace), T(test_write_outside_refused), T(test_read_only_mode),
		T(test_protected_paths_read_only), T(test_missing_protected_path_held),
		T(test_protected_symlinks), T(test_network_cut), T(test_socket_families), T(test_network_allowed),
		T(test_no_capabilities), T(test_signals_stay_inside), T(test_kill_leaves_nothing),
		T(test_session_calls), T(test_bwrap_argv), T(test_private_run), T(test_bad_specs),
		T(test_full_access), T(test_report),
	};
	const struct CMUnitTest landlock_tests[] = {
		T(test_write_inside_workspace), T(test_write_outside_refused), T(test_read_only_mode),
		T(test_protected_paths_not_enforced), T(test_network_cut), T(test_socket_families),
		T(test_network_allowed), T(test_no_capabilities), T(test_signals_stay_inside),
		T(test_kill_leaves_nothing), T(test_session_calls), T(test_bad_specs),
		T(test_full_access), T(test_report),
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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--sb-helper")) {
		int rc = helper(argv[2]);
		_exit(rc);
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = '\0';

	const char *forced = getenv("TOOLGATE_SANDBOX_BACKEND");
	if (forced && *forced)
		return run_group(forced);

	static const char *const groups[] = {"bubblewrap", "landlock", "none", "sideways"};
	int failed = 0;
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
