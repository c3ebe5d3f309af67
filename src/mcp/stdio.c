/*
 * stdio.c — MCP over stdin/stdout: one JSON-RPC message per line, UTF-8,
 * nothing but MCP on stdout, logs on stderr.
 *
 * The reading loop runs on the caller's thread; answers are written by
 * whichever thread has them, one whole line at a time under a lock, so
 * responses may go out of order but never interleave.  A line over the
 * cap is skipped and answered with an error; a trailing "\r" is dropped.
 *
 * Owns: the two descriptors while serving.  Must not: interpret a message
 * (server.c does).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "util/util.h"

#define DEFAULT_LINE (16u << 20)

typedef struct out {
	pthread_mutex_t mu;
	int             fd;     /* the real stdout */
	int             broken; /* a write failed: the client is gone */
} out;

static int write_line(void *arg, const json_t *related, int final, const char *text, size_t len)
{
	out *o = arg;
	if (!text)
		return 0;
	pthread_mutex_lock(&o->mu);
	struct iovec iov[2] = {{(void *)text, len}, {(void *)"\n", 1}};
	int i = 0;
	while (!o->broken && i < 2) {
		ssize_t n = writev(o->fd, iov + i, 2 - i);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			o->broken = 1;
			break;
		}
		while (i < 2 && (size_t)n >= iov[i].iov_len)
			n -= (ssize_t)iov[i++].iov_len;
		if (i < 2) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	int rc = o->broken ? -1 : 0;
	pthread_mutex_unlock(&o->mu);
	return rc;
}

int tgi_mcp_stdio_run(tgi_mcp_server *s, int wake_fd, char *err, size_t errlen)
{
	const tg_serve_options *so = tgi_mcp_server_options(s);
	size_t cap = so->max_line ? so->max_line : DEFAULT_LINE;
	out o = {.fd = dup(1)};
	if (o.fd < 0 || dup2(2, 1) < 0) {
		tgi_snprintf(err, errlen, "cannot take over stdout: %s", strerror(errno));
		if (o.fd >= 0)
			close(o.fd);
		return -1;
	}
	pthread_mutex_init(&o.mu, NULL);
	tgi_mcp_session *ss = tgi_mcp_session_new(s, so->principal, NULL, write_line, &o);

	tgi_linereader r;
	tgi_linereader_init(&r, 0, cap);
	r.wake_fd = wake_fd;
	int woken = 0;
	for (;;) {
		const char *line;
		size_t len;
		tgi_line_status st = tgi_linereader_next(&r, &line, &len);
		if (st == TGI_LINE_OK) {
			tgi_mcp_session_handle(ss, line, len);
		} else if (st == TGI_LINE_TOO_LONG) {
			char msg[160];
			tgi_snprintf(msg, sizeof msg, "the message is longer than the limit of %zu bytes; "
			             "it was skipped", cap);
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
	if (!woken)
		tgi_mcp_session_drain(ss);   /* the client closed its side: finish what runs */
	tgi_mcp_session_free(ss);
	tgi_linereader_free(&r);
	dup2(o.fd, 1);
	close(o.fd);
	pthread_mutex_destroy(&o.mu);
	return 0;
}
