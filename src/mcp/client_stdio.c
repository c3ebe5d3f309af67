/*
 * client_stdio.c — the MCP client's stdio transport (client_int.h): the
 * server is a child process, one JSON-RPC message per line.
 *
 * The child runs in its own process group with two pipes (three when its
 * stderr is passed on); our ends are close-on-exec and non-blocking.  A
 * reader thread reads lines (tgi_linereader) and polls the pipe beside a
 * wake pipe that close() uses, and the stderr pipe, whose pieces it hands
 * to cfg->stderr_data (what is left there when the reader ends is passed on
 * then, up to STDERR_DRAIN_MAX).  Writes are serialised by write_mu, with
 * SIGPIPE blocked in the writing thread (and a pending one consumed), so a
 * dead child is an error here, never a signal for the process.
 *
 * Owns: the child, its pipes, the reader thread.  Must not: know the
 * protocol beyond a message per line (client.c does).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mcp/client_int.h"
#include "mcp/jsonrpc.h"
#include "util/util.h"

#define GRACE_MS               2000     /* stdin closed → SIGTERM → SIGKILL */
#define EXIT_SETTLE_MS         1000     /* for a child whose pipes broke to be seen exiting */
#define STDERR_CHUNK           4096     /* bytes of the child's stderr read at once */
#define STDERR_DRAIN_MAX       ((size_t)1 << 20) /* passed on after the reader's end */

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static const char *errno_text(int e, char *buf, size_t cap)
{
	const char *s = strerror_r(e, buf, cap);
	if (s != buf)
		tgi_snprintf(buf, cap, "%s", s);
	return tgi_mcpc_lower_first(buf);
}

static wait_end wait_check_locked(tgi_mcp_client *c, const pending *p, volatile const int *cancel,
                                  double deadline)
{
	pthread_mutex_lock(&c->mu);
	wait_end w = tgi_mcpc_wait_check(c, p, cancel, deadline);
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* What the child writes to the status pipe when it cannot exec. */
enum { CHILD_DUP, CHILD_CWD, CHILD_SETUP, CHILD_EXEC };

/* In the child, after fork: only async-signal-safe calls.  Never returns. */
static void child_exec(const tgi_mcp_client_cfg *cfg, int in_r, int out_w, int err_w,
                       int status_w)
{
	int report[2] = {CHILD_DUP, 0};
	struct sigaction dfl;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL); /* ignored dispositions survive exec */
	sigaction(SIGXFSZ, &dfl, NULL);
	setpgid(0, 0);
	/* lift the ends above 2 first, so no dup2 can clobber another (our
	 * own 0, 1 or 2 may have been closed and reused by a pipe) */
	in_r = fcntl(in_r, F_DUPFD_CLOEXEC, 3);
	out_w = fcntl(out_w, F_DUPFD_CLOEXEC, 3);
	if (err_w >= 0)
		err_w = fcntl(err_w, F_DUPFD_CLOEXEC, 3);
	if (in_r < 0 || out_w < 0 || dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0)
		goto fail;
	if (cfg->stderr_data && (err_w < 0 || dup2(err_w, 2) < 0))
		goto fail;
	report[0] = CHILD_CWD;
	if (cfg->cwd && chdir(cfg->cwd) < 0)
		goto fail;
	/* nothing of ours but stdin/stdout/stderr reaches the server */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	report[0] = CHILD_SETUP;
	if (cfg->child_setup) {         /* the sandbox: last before exec */
		int r = cfg->child_setup(cfg->child_arg);
		if (r < 0) {
			errno = -r;
			goto fail;
		}
	}
	report[0] = CHILD_EXEC;
	if (cfg->envp)
		execvpe(cfg->argv[0], cfg->argv, cfg->envp);
	else
		execvp(cfg->argv[0], cfg->argv);
fail:
	report[1] = errno;
	if (write(status_w, report, sizeof report) < 0)
		_exit(127);
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int stdio_start(tgi_mcp_client *c, const tgi_mcp_client_cfg *cfg, char *err, size_t errlen)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, st[2] = {-1, -1}, er[2] = {-1, -1};
	int report[2] = {0, 0};
	char cmd[200], ebuf[512];
	ssize_t got;
	pid_t pid;

	tgi_sanitize(cmd, sizeof cmd, cfg->argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
	    pipe2(c->wake, O_CLOEXEC) < 0 || (cfg->stderr_data && pipe2(er, O_CLOEXEC) < 0)) {
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name,
		             errno_text(errno, ebuf, sizeof ebuf));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name,
		             errno_text(errno, ebuf, sizeof ebuf));
		goto fail;
	}
	if (pid == 0)
		child_exec(cfg, in[0], out[1], er[1], st[1]);
	setpgid(pid, pid); /* the child does it too; whoever is first wins */
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&st[1]);
	close_fd(&er[1]);
	do
		got = read(st[0], report, sizeof report);
	while (got < 0 && errno == EINTR);
	close_fd(&st[0]);
	if (got == (ssize_t)sizeof report) {
		char dir[200];
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno_text(report[1], ebuf, sizeof ebuf);
		if (report[0] == CHILD_CWD) {
			tgi_sanitize(dir, sizeof dir, cfg->cwd);
			tgi_snprintf(err, errlen,
			             "cannot start the server \"%s\": its directory \"%s\" cannot be "
			             "entered (%s)", c->name, dir, ebuf);
		} else if (report[0] == CHILD_SETUP) {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": its sandbox could not "
			             "be entered (%s)", c->name, ebuf);
		} else if (report[0] == CHILD_EXEC && report[1] == ENOENT) {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": \"%s\" was not found",
			             c->name, cmd);
		} else {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": \"%s\" cannot run (%s)",
			             c->name, cmd, ebuf);
		}
		goto fail;
	}
	if (cfg->started && cfg->started(cfg->started_arg, pid, ebuf, sizeof ebuf) < 0) {
		char why[400];
		tgi_sanitize(why, sizeof why, ebuf);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name, why);
		goto fail;
	}
	c->pid = pid;
	c->to_child = in[1];
	c->from_child = out[0];
	c->err_child = er[0];
	fcntl(c->to_child, F_SETFL, fcntl(c->to_child, F_GETFL) | O_NONBLOCK);
	fcntl(c->from_child, F_SETFL, fcntl(c->from_child, F_GETFL) | O_NONBLOCK);
	if (c->err_child >= 0)
		fcntl(c->err_child, F_SETFL, fcntl(c->err_child, F_GETFL) | O_NONBLOCK);
	return 0;
fail:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
	close_fd(&er[0]);
	close_fd(&er[1]);
	return -1;
}

/* " (it exited with status 1)" when the child has ended (not reaped:
 * close() does that), else "".  Looks for up to ms. */
static void exit_text(tgi_mcp_client *c, char *out, size_t cap, int ms)
{
	siginfo_t si;

	out[0] = '\0';
	for (int waited = 0;; waited += 10) {
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
			break;
		if (waited >= ms)
			return;
		sleep_ms(10);
	}
	if (si.si_code == CLD_EXITED)
		tgi_snprintf(out, cap, " (it exited with status %d)", si.si_status);
	else
		tgi_snprintf(out, cap, " (it was killed by signal %d)", si.si_status);
}

/*
 * Pass on what the child's stderr holds now, up to max bytes: 1 while the
 * pipe is open, 0 once it has ended (*fd is then -1; the client still
 * closes it).  The reader's thread alone.
 */
static int stderr_pass(tgi_mcp_client *c, int *fd, size_t max)
{
	char buf[STDERR_CHUNK];
	size_t done = 0;

	while (*fd >= 0 && done < max) {
		ssize_t n = read(*fd, buf, sizeof buf);
		if (n > 0) {
			c->stderr_data(c->stderr_arg, buf, (size_t)n);
			done += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return 1;
		} else {
			*fd = -1;               /* the end, or an error: nothing more comes */
		}
	}
	return *fd >= 0;
}

static void *stdio_reader(void *arg)
{
	tgi_mcp_client *c = arg;
	tgi_linereader r;
	char why[400], status[64];
	int errfd = c->err_child;

	tgi_linereader_init(&r, c->from_child, c->max_message);
	for (;;) {
		const char *line;
		size_t len;
		tgi_line_status st = tgi_linereader_next(&r, &line, &len);

		if (st == TGI_LINE_OK) {
			tgi_mcpc_dispatch(c, line, len);
		} else if (st == TGI_LINE_TOO_LONG) {
			tgi_mcpc_note(c, "a message over %zu bytes was dropped", c->max_message);
		} else if (st == TGI_LINE_ERROR && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd fds[3] = {{c->from_child, POLLIN, 0}, {c->wake[0], POLLIN, 0},
			                        {errfd, POLLIN, 0}};   /* -1: not polled */
			if (poll(fds, 3, -1) < 0 && errno != EINTR)
				break;
			if (fds[1].revents)
				break; /* close() is done with the child */
			if (fds[2].revents)
				stderr_pass(c, &errfd, STDERR_CHUNK * 16);
		} else {
			break; /* end of input, or a read error */
		}
	}
	tgi_linereader_free(&r);

	pthread_mutex_lock(&c->mu);
	int closing = c->closing;
	pthread_mutex_unlock(&c->mu);
	exit_text(c, status, sizeof status, closing ? 0 : EXIT_SETTLE_MS / 2);
	/* its last words (why it exited, as a rule) */
	if (errfd >= 0)
		stderr_pass(c, &errfd, STDERR_DRAIN_MAX);
	tgi_snprintf(why, sizeof why, "the server \"%s\" closed the connection%s", c->name, status);
	tgi_mcpc_connection_lost(c, why);
	return NULL;
}

/*
 * Write all n bytes to the child.  SIGPIPE is blocked in this thread
 * meanwhile (a pending one is consumed), so a dead child is EPIPE here.
 * Gives up when the connection goes or, before the first byte, when the
 * deadline passes; a message cut in half breaks the stream, so a wait
 * after that ends only with the connection.
 */
static int stdio_write(tgi_mcp_client *c, const char *p, size_t n, double deadline)
{
	sigset_t pipe_set, old, pend;
	int rc = 0, was_pending, epipe = 0;
	size_t total = n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_mutex_lock(&c->write_mu);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pend);
	was_pending = sigismember(&pend, SIGPIPE);
	while (n) {
		ssize_t w;
		if (c->to_child < 0) {
			rc = -1;
			break;
		}
		w = write(c->to_child, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {c->to_child, POLLOUT, 0};
			wait_end end = wait_check_locked(c, NULL, NULL, n == total ? deadline : 0);
			if (end != WAIT_ON) {
				rc = -1;
				break;
			}
			poll(&pfd, 1, POLL_MS);
			continue;
		}
		epipe = errno == EPIPE;
		rc = -1;
		break;
	}
	if (epipe && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&c->write_mu);
	if (rc < 0 && n != total && n) {
		char why[300];
		tgi_snprintf(why, sizeof why, "the server \"%s\" stopped reading its input", c->name);
		tgi_mcpc_connection_lost(c, why);
	}
	return rc;
}

/* Close the child's stdin, then SIGTERM, then SIGKILL its group; reap it. */
static void stdio_stop(tgi_mcp_client *c)
{
	siginfo_t si;
	int waited = 0;

	pthread_mutex_lock(&c->write_mu);
	close_fd(&c->to_child);
	pthread_mutex_unlock(&c->write_mu);

	for (int round = 0; round < 3; round++) {
		if (round == 1)
			kill(-c->pid, SIGTERM);
		else if (round == 2)
			kill(-c->pid, SIGKILL);
		for (waited = 0;; waited += 20) {
			memset(&si, 0, sizeof si);
			int r = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT);
			if ((r == 0 && si.si_pid) || (r < 0 && errno == ECHILD))
				goto ended; /* (ECHILD: SIGCHLD is ignored, it reaped itself) */
			if (round < 2 && waited >= GRACE_MS)
				break;
			sleep_ms(20);
		}
	}
ended:
	/* the leader is a zombie, so its group id is still ours: whatever it
	 * left behind in the group goes too */
	kill(-c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* The message text on a line of its own; caller frees.  *len grows by the newline. */
static char *stdio_line(const char *text, size_t *len)
{
	char *line = tgi_xmalloc(*len + 2);
	memcpy(line, text, *len);
	line[(*len)++] = '\n';
	line[*len] = '\0';
	return line;
}

static int stdio_send(tgi_mcp_client *c, const char *text, size_t len, double deadline)
{
	char *line = stdio_line(text, &len);
	int rc = stdio_write(c, line, len, deadline);
	free(line);
	return rc;
}

/* Write the request, then wait for its answer on the condition variable
 * (the reader dispatches it). */
static wait_end stdio_exchange(tgi_mcp_client *c, pending *p, const char *text, size_t len,
                               volatile const int *cancel, double deadline, char *why,
                               size_t whylen)
{
	char *line = stdio_line(text, &len);
	wait_end w;

	if (stdio_write(c, line, len, deadline) == 0) {
		w = tgi_mcpc_wait_answer(c, p, cancel, deadline);
	} else {
		/* the child closed its input: give the reader a moment to see
		 * it go, so that the sentence can say how it ended */
		double soon = tgi_now_ms() + EXIT_SETTLE_MS;
		w = tgi_mcpc_wait_answer(c, p, cancel, deadline > 0 && deadline < soon ? deadline : soon);
		if (w == WAIT_TIMEOUT && (deadline <= 0 || tgi_now_ms() < deadline))
			w = WAIT_GONE;
	}
	free(line);
	return w;
}

static void stdio_close(tgi_mcp_client *c)
{
	if (c->pid > 0)
		stdio_stop(c);
	if (c->reader_started) {
		if (write(c->wake[1], "x", 1) < 0)
			tgi_mcpc_note(c, "the reader could not be woken");
		pthread_join(c->reader, NULL);
	}
}

static void stdio_release(tgi_mcp_client *c)
{
	close_fd(&c->to_child);
	close_fd(&c->from_child);
	close_fd(&c->err_child);
	close_fd(&c->wake[0]);
	close_fd(&c->wake[1]);
}

const tgi_mcpc_transport tgi_mcpc_stdio = {
	.name     = "stdio",
	.start    = stdio_start,
	.reader   = stdio_reader,
	.send     = stdio_send,
	.exchange = stdio_exchange,
	.close    = stdio_close,
	.release  = stdio_release,
};
