/*
 * postgres_watch.c — waiting for other processes on a PostgreSQL ledger:
 * a watch is a connection of its own that LISTENs, never the handle's.
 *
 * Owns: each watch's connection and its reconnect backoff.  Must not:
 * touch the handle's connection or its lock.
 */
#include "store/postgres_int.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- watches ----
 *
 * A watch is a connection of its own that LISTENs on toolgate_events or
 * toolgate_approvals; a wait is poll() on its socket.  A lost connection
 * is made again after a backoff (as the handle's), and the wait that made
 * it returns 1: what changed meanwhile was not heard, so the caller looks.
 */

typedef struct pg_watch {
	tgi_watch   base;
	PGconn     *conn;            /* NULL while lost */
	char       *url;             /* the handle's, copied: password and all */
	char        password[256];
	char        why[PG_WHY_MAX];
	const char *channel;
	int         reconnect_s;     /* the handle's: a reconnect's connect timeout */
	int         backoff_ms;
	double      retry_at;
} pg_watch;

/* Connect and LISTEN (again, when reconnect: with the short connect
 * timeout, so that a wait overruns its timeout by seconds, not tens). */
static int watch_listen(pg_watch *w, int reconnect)
{
	char sql[64];
	w->conn = tgi_pg_connect_url(w->url, w->password, reconnect ? w->reconnect_s : 0, w->why,
	                             sizeof w->why);
	if (!w->conn)
		return -1;
	tgi_pq.setNoticeProcessor(w->conn, tgi_pg_no_notices, NULL);
	tgi_snprintf(sql, sizeof sql, "LISTEN %s", w->channel);
	PGresult *r = tgi_pq.exec(w->conn, sql);
	int ok = r && tgi_pq.resultStatus(r) == PGRES_COMMAND_OK;
	if (!ok) {
		tgi_pg_one_line(w->password, w->why, sizeof w->why,
		                r ? tgi_pq.resultErrorMessage(r) : tgi_pq.errorMessage(w->conn));
		tgi_pq.finish(w->conn);
		w->conn = NULL;
	}
	if (r)
		tgi_pq.clear(r);
	return ok ? 0 : -1;
}

static void watch_lost(pg_watch *w)
{
	if (w->conn)
		tgi_pq.finish(w->conn);
	w->conn = NULL;
	w->backoff_ms = !w->backoff_ms ? PG_BACKOFF_MIN_MS
	              : w->backoff_ms >= PG_BACKOFF_MAX_MS / 2 ? PG_BACKOFF_MAX_MS
	                                                       : 2 * w->backoff_ms;
	w->retry_at = tgi_now_ms() + w->backoff_ms;
}

static void watch_free(pg_watch *w)
{
	if (w->conn)
		tgi_pq.finish(w->conn);
	explicit_bzero(w->url, strlen(w->url));
	free(w->url);
	explicit_bzero(w->password, sizeof w->password);
	free(w);
}

int tgi_pg_watch_open(tgi_store *base, tgi_watch_what what, tgi_watch **out, char *err,
                      size_t errlen)
{
	pg *s = (pg *)base;
	pg_watch *w = tgi_xcalloc(1, sizeof *w);
	w->base.impl = &tgi_pg_impl;
	w->channel = what == TGI_WATCH_APPROVALS ? "toolgate_approvals" : "toolgate_events";
	w->url = tgi_strdup(s->url);
	w->reconnect_s = s->reconnect_s;
	tgi_snprintf(w->password, sizeof w->password, "%s", s->password);
	if (watch_listen(w, 0) < 0) {
		tgi_snprintf(err, errlen, "cannot watch the ledger %s: %s", s->shown, w->why);
		watch_free(w);
		return -1;
	}
	*out = &w->base;
	return 0;
}

/* Drop the notifications read so far: 1 if there was one. */
static int watch_drain(pg_watch *w)
{
	int any = 0;
	PGnotify *n;
	while ((n = tgi_pq.notifies(w->conn)) != NULL) {
		any = 1;
		tgi_pq.freemem(n);
	}
	return any;
}

static void sleep_ms(double ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000),
		               .tv_nsec = (long)(fmod(ms, 1000) * 1e6) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The connection is lost: wait out its backoff (not past the caller's
 * timeout) and make it again; 1 once tried (look again), 0 when the time
 * ran out first. */
static int watch_reconnect(pg_watch *w, int timeout_ms)
{
	double left = w->retry_at - tgi_now_ms();
	if (left > timeout_ms) {
		sleep_ms(timeout_ms);
		return 0;
	}
	sleep_ms(left);
	if (watch_listen(w, 1) == 0)
		w->backoff_ms = 0;
	else
		watch_lost(w);
	return 1;
}

int tgi_pg_watch_wait(tgi_watch *base, int timeout_ms)
{
	pg_watch *w = (pg_watch *)base;
	double start = tgi_now_ms();
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (!w->conn)
		return watch_reconnect(w, timeout_ms);
	/* what an earlier wait read but did not hand out, or a close seen now */
	if (!tgi_pq.consumeInput(w->conn) || tgi_pq.status(w->conn) != CONNECTION_OK) {
		watch_lost(w);
		return watch_reconnect(w, timeout_ms);
	}
	if (watch_drain(w))
		return 1;
	struct pollfd p = { .fd = tgi_pq.socket(w->conn), .events = POLLIN };
	int rc = p.fd < 0 ? -2 : poll(&p, 1, timeout_ms);
	if (rc == -1)
		return 1; /* a signal: early is allowed */
	if (rc == 0)
		return 0;
	if (rc == -2 || !tgi_pq.consumeInput(w->conn) || tgi_pq.status(w->conn) != CONNECTION_OK) {
		int left = timeout_ms - (int)(tgi_now_ms() - start);
		watch_lost(w);
		return watch_reconnect(w, left > 0 ? left : 0);
	}
	watch_drain(w);
	return 1;
}

void tgi_pg_watch_close(tgi_watch *base)
{
	watch_free((pg_watch *)base);
}
