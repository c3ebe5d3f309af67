/*
 * stdio.c — MCP over stdin/stdout: one JSON-RPC message per line, UTF-8,
 * nothing but MCP on stdout, logs on stderr.
 *
 * The reading loop runs on the caller's thread.  An answer is written
 * whole by the thread that made it, under the writer's lock, when nothing
 * waits before it and the pipe takes it without blocking (pwritev2 with
 * RWF_NOWAIT); else what is left of it is queued whole (so responses may
 * go out of order but never interleave) for a writer thread of its own.
 * So a call's answer costs no hand-off to another thread, and a client
 * that stops reading never blocks a call thread that holds a session's
 * lock.  Where RWF_NOWAIT is not to be had (a terminal, an older kernel)
 * every answer goes through the writer thread.  Back-pressure: while
 * OUT_HIGH bytes or more wait to be written, the reader takes no more
 * requests off stdin (the pipe then pushes back on the client), so the
 * calls that run are those already read, whose answers still have room
 * (the queue takes them up to OUT_MAX; past it the client is taken as
 * gone).  A client is gone when a write fails (EPIPE, its end closed) or
 * the queue overflows: from then on nothing more is read, the session's
 * probe (send with no text) says -1 so that no call not yet started
 * starts, and the calls running finish and are recorded (replayable by
 * key) before the session ends.  A line over the cap is skipped and
 * answered with an error; a trailing "\r" is dropped.
 *
 * Owns: the two descriptors while serving.  Must not: interpret a message
 * (server.c does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "util/util.h"

#define DEFAULT_LINE (16u << 20)
#define OUT_HIGH     (256u << 10)   /* bytes unwritten at which the reader stops reading */
#define OUT_MAX      (256u << 20)   /* bytes queued for a client that does not read */

typedef struct out {
	pthread_mutex_t mu;
	pthread_cond_t  cv;      /* something queued, or closing */
	pthread_cond_t  room;    /* bytes written, or the client gone */
	int             fd;      /* the real stdout */
	tgi_buf         q;       /* whole lines waiting for the writer */
	size_t          writing; /* bytes the writer took and has not written yet */
	int             broken;  /* a write failed or the queue overflowed: the client is gone */
	int             closing;
	int             queued_only; /* RWF_NOWAIT refused: every answer goes through the writer */
} out;

/* Write text and its newline now, without blocking (mu held, nothing
 * queued or being written).  Returns the bytes written (all, part or
 * none, the rest to queue), or -1 when the client is gone. */
static ssize_t write_now(out *o, const char *text, size_t len)
{
	struct iovec v[2] = {{(void *)text, len}, {"\n", 1}};
	for (;;) {
		ssize_t n = pwritev2(o->fd, v, 2, -1, RWF_NOWAIT);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		if (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS || errno == ESPIPE) {
			o->queued_only = 1;   /* the writer's poll() and write() from now on */
			return 0;
		}
		return -1;
	}
}

/* The session's send: write one line now or queue it; never blocks on the
 * client.  No text: a probe (or the end of a cancelled request): -1 once
 * the client is gone. */
static int write_line(void *arg, const json_t *related, int final, const char *text, size_t len)
{
	out *o = arg;
	pthread_mutex_lock(&o->mu);
	if (text && !o->broken && !o->q.len && !o->writing && !o->queued_only) {
		ssize_t n = write_now(o, text, len);
		if (n < 0) {
			o->broken = 1;
			pthread_cond_broadcast(&o->room);
			if (!o->closing)
				fprintf(stderr, "toolgate: the client closed its end of stdout; the calls "
				                "it sent that have not started will not start\n");
		} else if ((size_t)n > len) {
			text = NULL;          /* all of it went, its newline too */
		} else {
			text += n;            /* the rest (its newline at least) is queued */
			len -= (size_t)n;
		}
	}
	if (text && !o->broken &&
	    (tgi_buf_append(&o->q, text, len) < 0 || tgi_buf_puts(&o->q, "\n") < 0)) {
		o->broken = 1;
		pthread_cond_broadcast(&o->room);
		fprintf(stderr, "toolgate: the client has not read %u MiB of answers; it is taken "
		                "as gone\n", OUT_MAX >> 20);
	}
	if (text)
		pthread_cond_signal(&o->cv);
	int rc = o->broken ? -1 : 0;
	pthread_mutex_unlock(&o->mu);
	return rc;
}

/*
 * Write len bytes to the client.  Waits for room with poll() and writes at
 * most PIPE_BUF at a time, so that it never blocks for long: once the
 * session is closing, a client that has taken nothing for 2 s is given up
 * on and shutdown goes on.  Returns nonzero when the client is gone.
 */
static int write_out(out *o, const char *p, size_t len)
{
	double stuck_since = 0;
	while (len) {
		struct pollfd pfd = {.fd = o->fd, .events = POLLOUT};
		int r = poll(&pfd, 1, 200);
		if (r < 0 && errno != EINTR)
			return 1;
		if (r <= 0) {
			pthread_mutex_lock(&o->mu);
			int closing = o->closing;
			pthread_mutex_unlock(&o->mu);
			if (!closing)
				stuck_since = 0;
			else if (!stuck_since)
				stuck_since = tgi_now_ms();
			else if (tgi_now_ms() - stuck_since > 2000)
				return 1;
			continue;
		}
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
			return 1;
		ssize_t n = write(o->fd, p, len < PIPE_BUF ? len : PIPE_BUF);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return 1;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			stuck_since = 0;
		}
	}
	return 0;
}

/* The writer: everything queued goes out in order, until closing and empty. */
static void *writer_main(void *arg)
{
	out *o = arg;
	tgi_buf w;
	tgi_buf_init(&w, OUT_MAX);
	pthread_mutex_lock(&o->mu);
	for (;;) {
		while (!o->q.len && !o->closing)
			pthread_cond_wait(&o->cv, &o->mu);
		if (o->broken)
			o->q.len = 0;        /* the client is gone: nothing more goes out */
		if (!o->q.len) {
			if (o->closing)
				break;
			continue;
		}
		tgi_buf t = w;           /* take the queue, leave an empty buffer */
		w = o->q;
		o->q = t;
		o->q.len = 0;
		o->writing = w.len;
		pthread_mutex_unlock(&o->mu);
		int failed = write_out(o, w.p, w.len);
		w.len = 0;
		if (w.p)
			w.p[0] = '\0';
		pthread_mutex_lock(&o->mu);
		o->writing = 0;
		if (failed && !o->broken) {
			o->broken = 1;
			if (!o->closing)
				fprintf(stderr, "toolgate: the client closed its end of stdout; the calls "
				                "it sent that have not started will not start\n");
		}
		pthread_cond_broadcast(&o->room);
	}
	pthread_mutex_unlock(&o->mu);
	tgi_buf_free(&w);
	return NULL;
}

/* Is fd readable now?  (The serve loop's wake pipe: the server stops.) */
static int readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Before reading the next request: wait while OUT_HIGH bytes or more are
 * unwritten.  1: read on; 0: the client is gone; -1: wake_fd (the server
 * stops). */
static int wait_room(out *o, int wake_fd)
{
	int rc = 1;
	pthread_mutex_lock(&o->mu);
	while (!o->broken && o->q.len + o->writing >= OUT_HIGH) {
		if (readable(wake_fd)) {
			rc = -1;
			break;
		}
		tgi_cond_wait_ms(&o->room, &o->mu, 100);   /* a signal writes to wake_fd: look often */
	}
	if (rc > 0 && o->broken)
		rc = 0;
	pthread_mutex_unlock(&o->mu);
	return rc;
}

int tgi_mcp_stdio_run(tgi_mcp_server *s, int wake_fd, char *err, size_t errlen)
{
	const tg_serve_options *so = tgi_mcp_server_options(s);
	size_t cap = so->max_line ? so->max_line : DEFAULT_LINE;
	out o = {.fd = fcntl(1, F_DUPFD_CLOEXEC, 3)};
	pthread_t writer;
	if (o.fd < 0 || dup2(2, 1) < 0) {
		tgi_snprintf(err, errlen, "cannot take over stdout: %s", strerror(errno));
		if (o.fd >= 0)
			close(o.fd);
		return -1;
	}
	pthread_mutex_init(&o.mu, NULL);
	pthread_cond_init(&o.cv, NULL);
	tgi_cond_init(&o.room);
	tgi_buf_init(&o.q, OUT_MAX);
	int rc = pthread_create(&writer, NULL, writer_main, &o);
	if (rc != 0) {
		tgi_snprintf(err, errlen, "cannot start the writer: %s", strerror(rc));
		dup2(o.fd, 1);
		close(o.fd);
		pthread_cond_destroy(&o.room);
		pthread_cond_destroy(&o.cv);
		pthread_mutex_destroy(&o.mu);
		return -1;
	}
	tgi_mcp_session *ss = tgi_mcp_session_new(s, so->principal, NULL, write_line, &o);
	tgi_mcp_session_inline(ss);      /* a quick read answers before the next line is read */

	tgi_linereader r;
	tgi_linereader_init(&r, 0, cap);
	r.wake_fd = wake_fd;
	int woken = 0;
	for (;;) {
		const char *line;
		size_t len;
		int room = wait_room(&o, wake_fd);
		if (room <= 0) {
			woken = room < 0;
			break;
		}
		tgi_line_status st = tgi_linereader_next(&r, &line, &len);
		if (st == TGI_LINE_OK) {
			tgi_mcp_session_handle(ss, line, len);
		} else if (st == TGI_LINE_TOO_LONG) {
			char msg[160];
			tgi_snprintf(msg, sizeof msg, "the message is longer than the limit of %zu bytes "
			             "(toolgate serve --max-line); it was skipped", cap);
			json_t *e = tgi_rpc_error(NULL, TGI_RPC_INVALID_REQUEST, msg, NULL);
			size_t n;
			char *text = tgi_rpc_dump(e, &n);
			json_decref(e);
			write_line(&o, NULL, 1, text, n);
			free(text);
		} else {
			if (st == TGI_LINE_ERROR)
				fprintf(stderr, "toolgate: reading stdin: %s\n", strerror(errno));
			woken = st == TGI_LINE_WOKEN;
			break;
		}
	}
	if (!woken)                      /* the client closed its side: finish what runs, */
		tgi_mcp_session_drain(ss, wake_fd);  /* unless the server is stopped meanwhile */
	tgi_mcp_session_free(ss);
	tgi_linereader_free(&r);
	pthread_mutex_lock(&o.mu);       /* the last answers go out, then the writer ends */
	o.closing = 1;
	pthread_cond_signal(&o.cv);
	pthread_mutex_unlock(&o.mu);
	pthread_join(writer, NULL);
	tgi_buf_free(&o.q);
	dup2(o.fd, 1);
	close(o.fd);
	pthread_cond_destroy(&o.room);
	pthread_cond_destroy(&o.cv);
	pthread_mutex_destroy(&o.mu);
	return 0;
}
