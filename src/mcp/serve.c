/*
 * serve.c — tg_serve: the MCP server with its transports (stdio, Streamable
 * HTTP or both) and the bridge's change notices, until stdin ends or
 * tg_serve_stop().
 *
 * Owns: the stop flag and its self-pipe, and the signal that stopped the
 * server (the calls it cancels say so).  Must not: handle messages
 * (server.c) or speak a transport (stdio.c, http.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate/gate.h"
#include "mcp/server.h"
#include "util/util.h"

static int wake[2] = {-1, -1};
/* the signal that stopped the server, or 0: set by a handler, read by the
 * call threads (a lock-free atomic, so async-signal-safe and race-free) */
static atomic_int stop_signal;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler sets stop_signal: it must be lock-free");

void tg_serve_stop(void)
{
	int fd = wake[1];
	if (fd >= 0) {
		ssize_t n = write(fd, "x", 1);
		(void)n;
	}
}

void tg_serve_stop_signal(int sig)
{
	int none = 0;
	if (sig > 0 && sig < 256)
		atomic_compare_exchange_strong(&stop_signal, &none, sig);
	tg_serve_stop();
}

int tgi_mcp_stop_cancel(void)
{
	int sig = atomic_load(&stop_signal);
	return sig ? TG_CANCEL_SIGNAL(sig) : 1;
}

static void list_changed(void *arg)
{
	tgi_mcp_server_list_changed(arg);
}

int tg_serve(tg_gate *g, const tg_serve_options *o, char **errmsg)
{
	char err[512];
	if (errmsg)
		*errmsg = NULL;
	if (!o->stdio && !o->http)
		return tgi_fail(errmsg, "nothing to serve: ask for stdio, HTTP or both");
	tgi_approvals_via via;
	if (o->approvals_via && tgi_approvals_via_parse(o->approvals_via, &via) < 0)
		return tgi_fail(errmsg, "approvals via \"%.40s\": expected elicitation, queue or both",
		                o->approvals_via);
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return tgi_fail(errmsg, "cannot make a pipe: %s", strerror(errno));

	tgi_mcp_server *s = tgi_mcp_server_new(g, o);
	tgi_registry_on_change(g->reg, list_changed, s);
	tgi_mcp_http *http = NULL;
	int rc = 0;
	if (o->http && tgi_mcp_http_start(s, o, &http, err, sizeof err) < 0) {
		rc = tgi_fail(errmsg, "%s", err);
	} else if (o->stdio) {
		if (tgi_mcp_stdio_run(s, wake[0], err, sizeof err) < 0)
			rc = tgi_fail(errmsg, "%s", err);
	} else {
		struct pollfd p = {.fd = wake[0], .events = POLLIN};
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	}
	tgi_registry_on_change(g->reg, NULL, NULL);
	tgi_mcp_http_stop(http);
	tgi_mcp_server_free(s);
	int r = wake[0], w = wake[1];
	wake[0] = wake[1] = -1;
	close(r);
	close(w);
	return rc;
}
