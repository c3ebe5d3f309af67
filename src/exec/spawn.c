/*
 * spawn.c — run a command as a real process: its own process group, a
 * given environment only, stdin fed from memory, stdout/stderr captured
 * with caps, a timeout that kills the whole group (SIGTERM, then SIGKILL
 * after a grace period).
 *
 * Owns: the child and its pipes until it is reaped.  Must not: decide
 * whether the command may run (policy) or interpret its output.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/spawn.h"
#include "util/util.h"

#define GRACE_MS 2000
#define ERR_CAP  (64 * 1024)

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* In the child: never returns. */
static void child(char *const argv[], const tgi_spawn_opts *o, int in_r, int out_w, int err_w,
                  int status_w)
{
	const char *cwd = o->cwd;
	char *const *envp = o->envp;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* the parent blocks SIGPIPE around us */
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGXFSZ, SIG_DFL);
	if (in_r < 0)
		in_r = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in_r < 0 || dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		goto fail;
	if (cwd && chdir(cwd) < 0)
		goto fail;
	/* nothing of the gate's own (ledger, workspace fd) reaches the program;
	 * child_setup may hand one fd on (the sandbox's seccomp program) */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	if (o->child_setup) {
		int r = o->child_setup(o->child_arg);
		if (r < 0) {
			errno = -r;
			goto fail;
		}
	}
	/* a bare name is looked up in PATH only, never in the working
	 * directory (a command could have planted ./git there) */
	if (strchr(argv[0], '/'))
		execve(argv[0], argv, envp);
	else
		errno = ENOENT;
	if (errno == ENOENT && !strchr(argv[0], '/')) {
		/* search PATH from the given environment */
		const char *path = NULL;
		for (char *const *e = envp; e && *e; e++)
			if (!strncmp(*e, "PATH=", 5))
				path = *e + 5;
		char buf[4096];
		for (const char *p = path; p && *p;) {
			const char *end = strchr(p, ':');
			size_t n = end ? (size_t)(end - p) : strlen(p);
			if (n && n + strlen(argv[0]) + 2 < sizeof buf) {
				memcpy(buf, p, n);
				buf[n] = '/';
				strcpy(buf + n + 1, argv[0]);
				execve(buf, argv, envp);
			}
			p = end ? end + 1 : NULL;
		}
		errno = ENOENT;
	}
fail:;
	int e = errno;
	ssize_t w = write(status_w, &e, sizeof e);
	(void)w;
	_exit(127);
}

static void drain(int *fd, tgi_buf *b, int *truncated, size_t *total)
{
	char chunk[16384];
	for (;;) {
		ssize_t n = read(*fd, chunk, sizeof chunk);
		if (n > 0) {
			*total += (size_t)n;
			if (tgi_buf_append(b, chunk, (size_t)n) < 0) {
				/* keep what fits, discard the rest, keep draining */
				size_t room = b->max - b->len;
				if (room)
					tgi_buf_append(b, chunk, room < (size_t)n ? room : (size_t)n);
				*truncated = 1;
			}
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		close(*fd);
		*fd = -1;
		return;
	}
}

/* Start stopping the group once the deadline passes or *cancel is set:
 * SIGTERM now, SIGKILL at *kill_at.  1 if it started now. */
static int stop_check(pid_t pid, const tgi_spawn_opts *o, tgi_spawn_result *res, double now,
                      double deadline, double *kill_at)
{
	if (res->timed_out || res->cancelled)
		return 0;
	if (tgi_flag_get(o->cancel))
		res->cancelled = 1;
	else if (now >= deadline)
		res->timed_out = 1;
	else
		return 0;
	kill(-pid, SIGTERM);
	*kill_at = now + GRACE_MS;
	return 1;
}

int tgi_spawn(char *const argv[], const char *cwd, char *const envp[], const char *in,
              size_t in_len, int timeout_s, size_t max_out, tgi_spawn_result *res)
{
	tgi_spawn_opts o = {
		.cwd = cwd, .envp = envp, .in = in, .in_len = in_len, .timeout_s = timeout_s,
		.max_out = max_out,
	};
	return tgi_spawn_run(argv, &o, res);
}

int tgi_spawn_run(char *const argv[], const tgi_spawn_opts *o, tgi_spawn_result *res)
{
	int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1}, stp[2] = {-1, -1};
	const char *in = o->in;
	size_t in_len = o->in_len;
	memset(res, 0, sizeof *res);
	if ((in && pipe2(inp, O_CLOEXEC) < 0) || pipe2(outp, O_CLOEXEC) < 0 ||
	    pipe2(errp, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0)
		goto fail_pipes;

	/* A tool that exits without reading its stdin must not kill the host
	 * with SIGPIPE: block it in this thread while we write, and take the
	 * pending signal back before unblocking (the embedder may not ignore
	 * SIGPIPE as the CLI does). */
	sigset_t pipe_set, old_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

	double t0 = tgi_now_ms();
	pid_t pid = fork();
	if (pid < 0) {
		pthread_sigmask(SIG_SETMASK, &old_set, NULL);
		goto fail_pipes;
	}
	if (pid == 0)
		child(argv, o, inp[0], outp[1], errp[1], stp[1]);
	setpgid(pid, pid); /* also in the parent: no race with kill(-pid) */
	if (inp[0] >= 0)
		close(inp[0]);
	close(outp[1]);
	close(errp[1]);
	close(stp[1]);

	int e = 0;
	ssize_t sn = read(stp[0], &e, sizeof e); /* EOF on successful exec */
	close(stp[0]);
	if (sn == (ssize_t)sizeof e)
		res->spawn_errno = e;
	if (!res->spawn_errno && o->started &&
	    o->started(o->started_arg, pid, res->start_error, sizeof res->start_error) < 0) {
		if (!res->start_error[0])
			tgi_snprintf(res->start_error, sizeof res->start_error, "it could not be started");
		kill(-pid, SIGKILL);
	}

	int in_fd = inp[1], out_fd = outp[0], err_fd = errp[0];
	set_nonblock(in_fd);
	set_nonblock(out_fd);
	set_nonblock(err_fd);
	size_t in_off = 0;
	if (!in || !in_len || res->spawn_errno) {
		close(in_fd);
		in_fd = -1;
	}

	tgi_buf out, err;
	tgi_buf_init(&out, o->max_out);
	tgi_buf_init(&err, o->max_err ? o->max_err : ERR_CAP);
	double deadline = t0 + (o->timeout_s > 0 ? o->timeout_s : 120) * 1000.0;
	double kill_at = 0, hard_stop = 0;

	while (out_fd >= 0 || err_fd >= 0) {
		struct pollfd p[3];
		int np = 0;
		if (in_fd >= 0)
			p[np++] = (struct pollfd){.fd = in_fd, .events = POLLOUT};
		if (out_fd >= 0)
			p[np++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
		if (err_fd >= 0)
			p[np++] = (struct pollfd){.fd = err_fd, .events = POLLIN};
		double now = tgi_now_ms();
		stop_check(pid, o, res, now, deadline, &kill_at);
		if ((res->timed_out || res->cancelled) && kill_at && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
			hard_stop = now + 1000; /* a descendant outside the group may hold the pipes */
		}
		if (hard_stop && now >= hard_stop)
			break;
		int stopping = res->timed_out || res->cancelled;
		double until = stopping ? (kill_at ? kill_at : now + 1000) : deadline;
		if (o->cancel && !stopping && until > now + 50)
			until = now + 50;           /* look at the cancel flag often */
		int wait_ms = (int)(until - now) + 1;
		int r = poll(p, (nfds_t)np, wait_ms > 0 ? wait_ms : 1);
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; r > 0 && i < np; i++) {
			if (!p[i].revents)
				continue;
			if (p[i].fd == in_fd) {
				ssize_t w = write(in_fd, in + in_off, in_len - in_off);
				if (w > 0)
					in_off += (size_t)w;
				if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len) {
					close(in_fd);
					in_fd = -1;
				}
			} else if (p[i].fd == out_fd) {
				drain(&out_fd, &out, &res->out_truncated, &res->out_total);
			} else if (p[i].fd == err_fd) {
				drain(&err_fd, &err, &res->err_truncated, &res->err_total);
			}
		}
		if (stopping && out_fd < 0 && err_fd < 0)
			break;
	}
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);

	if (!sigismember(&old_set, SIGPIPE)) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);

	/* The streams are closed; wait for the exit (without reaping, so the
	 * process group id stays ours), still honouring the deadline: a child
	 * may close its stdout and keep running. */
	for (;;) {
		siginfo_t si;
		si.si_pid = 0;
		int w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
		if ((w == 0 && si.si_pid == pid) || (w < 0 && errno != EINTR))
			break;
		double now = tgi_now_ms();
		if (!stop_check(pid, o, res, now, deadline, &kill_at) &&
		    (res->timed_out || res->cancelled) && kill_at && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		usleep(2000);
	}
	/* whatever the child left behind in its group goes too — before the
	 * reap, while the zombie still holds the group id */
	kill(-pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st)) {
		res->exited = !res->spawn_errno;
		res->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->signal = WTERMSIG(st);
	}
	res->out_len = out.len;
	res->out = tgi_buf_steal(&out);
	res->err_len = err.len;
	res->err = tgi_buf_steal(&err);
	res->duration_ms = tgi_now_ms() - t0;
	return 0;

fail_pipes:;
	int saved = errno;
	int *fds[] = {inp, outp, errp, stp};
	for (size_t i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			if (fds[i][j] >= 0)
				close(fds[i][j]);
	errno = saved;
	return -1;
}

void tgi_spawn_result_free(tgi_spawn_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

int tgi_spawn_findable(const char *prog, const char *path)
{
	char buf[4096];
	if (!prog || !*prog)
		return 0;
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		if (n && n + strlen(prog) + 2 <= sizeof buf) {
			memcpy(buf, p, n);
			buf[n] = '/';
			memcpy(buf + n + 1, prog, strlen(prog) + 1);
			if (access(buf, X_OK) == 0)
				return 1;
		}
		p += n + (p[n] == ':');
	}
	return 0;
}
