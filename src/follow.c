/*
 * follow.c — tg_log_follow: the ledger's events as they are written, by
 * this process or any other (`toolgate log --follow`).
 *
 * Every process that makes calls writes the ledger, so following it needs
 * nothing from them: ask the store for the events after the last seq seen,
 * then wait until the ledger's files change.  The wait is inotify on the
 * WAL (where a commit lands) and on the database file, with a 250 ms
 * timeout as the fallback (no inotify, a watch that could not be added)
 * and to look at *stop; it never spins.  After each wait one indexed
 * lookup of the newest seq says whether there is anything to read.  The WAL may not exist yet, or be
 * removed and made again: its directory is watched for it to appear.
 *
 * Each event becomes the line the sinks write (events.c): {seq, ts, type,
 * stage, op_id, session, principal, tool, status, summary, data}, with the
 * summary made from what the store returns of the event's op.
 *
 * Owns: the follow loop and its watches.  Must not: write the ledger, or
 * hold the store lock while it waits or while fn runs.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "gate.h"
#include "mw/mw.h"
#include "util/util.h"

#define FOLLOW_WAIT_MS 250
#define FOLLOW_BATCH   512   /* events per query once the start is known */

typedef struct follow_watch {
	int   fd;              /* inotify, or -1: poll every FOLLOW_WAIT_MS */
	int   wal_wd;          /* -1 while the WAL is not watched */
	char  wal[PATH_MAX];
	const char *wal_base;  /* in wal */
} follow_watch;

static void watch_wal(follow_watch *w)
{
	if (w->fd >= 0 && w->wal_wd < 0)
		w->wal_wd = inotify_add_watch(w->fd, w->wal, IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF);
}

/* Watch the ledger at path; without inotify the wait is a plain timeout. */
static void watch_open(follow_watch *w, const char *path)
{
	w->fd = -1;
	w->wal_wd = -1;
	if (!path || strlen(path) + sizeof "-wal" > sizeof w->wal)
		return;
	tgi_snprintf(w->wal, sizeof w->wal, "%s-wal", path);
	const char *slash = strrchr(w->wal, '/');
	w->wal_base = slash ? slash + 1 : w->wal;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return;
	inotify_add_watch(w->fd, path, IN_MODIFY);
	if (slash) {
		char dir[PATH_MAX];
		tgi_snprintf(dir, sizeof dir, "%.*s", (int)(slash - w->wal), w->wal);
		inotify_add_watch(w->fd, *dir ? dir : "/", IN_CREATE | IN_MOVED_TO);
	}
	watch_wal(w);
}

/* Read the queued notifications: the WAL's watch ends when it is removed. */
static void watch_drain(follow_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while ((n = read(w->fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			if (e->wd == w->wal_wd && (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))) {
				if (!(e->mask & IN_IGNORED))
					inotify_rm_watch(w->fd, w->wal_wd);
				w->wal_wd = -1;
			}
			p += sizeof *e + e->len;
		}
	}
	watch_wal(w);
}

/* Until the ledger's files change, or FOLLOW_WAIT_MS. */
static void watch_wait(follow_watch *w)
{
	struct pollfd p = {.fd = w->fd, .events = POLLIN};
	if (poll(&p, w->fd >= 0, FOLLOW_WAIT_MS) > 0)
		watch_drain(w);
	else
		watch_wal(w);   /* it may have appeared without a word to the directory's watch */
}

/* The JSON text of v: a string as it is, anything else canonical.  Caller frees. */
static char *text_of(const json_t *v)
{
	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v))
		return tgi_strdup(json_string_value(v));
	return tgi_json_canonical(v);
}

/* The sinks' line for one event row of tgi_store_events.  Caller frees. */
static char *follow_line(tg_gate *g, const json_t *row)
{
	const char *tool = json_string_value(json_object_get(row, "tool"));
	const char *status = json_string_value(json_object_get(row, "status"));
	const char *kind = json_string_value(json_object_get(row, "error_kind"));
	const char *msg = json_string_value(json_object_get(row, "message"));
	char *args = text_of(json_object_get(row, "args"));
	char *message = msg ? tgi_redact_text(g->redact, msg, strlen(msg)) : NULL;
	char *summary = tool || status ? tgi_event_summary(tool, args, status, kind, message) : NULL;
	json_t *data = json_object_get(row, "data");
	json_t *clean = data && !json_is_null(data) ? tgi_redact_json(g->redact, data, NULL) : NULL;

	json_t *line = json_object();
	static const char *const copied[] = {"seq", "ts", "type", "stage", "op_id", "session",
	                                     "principal", "tool", "status"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(copied); i++) {
		json_t *v = json_object_get(row, copied[i]);
		json_object_set_new(line, copied[i], v ? json_incref(v) : json_null());
	}
	json_object_set_new(line, "summary",
	                    summary ? tgi_json_text(summary, strlen(summary)) : json_null());
	json_object_set_new(line, "data", clean ? clean : json_null());
	char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(line);
	free(summary);
	free(message);
	free(args);
	return text;
}

/* The events after *after, to fn.  1 when fn asked to stop, 0 when they
 * were all passed (*after moved on), -1 with err. */
static int follow_round(tg_gate *g, const tgi_log_filter *f, int64_t *after,
                        int (*fn)(void *, const char *), void *arg, char *err, size_t errlen)
{
	for (;;) {
		tgi_log_filter page = *f;
		page.limit = *after > 0 ? FOLLOW_BATCH : 0;   /* from 0 the store would give the tail */
		json_t *rows = NULL;
		tgi_store_lock(g);
		int rc = tgi_store_events(g->store, &page, *after, &rows, err, errlen);
		tgi_store_unlock(g);
		if (rc < 0)
			return -1;
		size_t i, n = json_array_size(rows);
		json_t *row;
		json_array_foreach(rows, i, row) {
			json_int_t seq = json_integer_value(json_object_get(row, "seq"));
			if (seq <= *after)
				continue;
			*after = seq;
			char *line = follow_line(g, row);
			int stop = line && fn(arg, line);
			free(line);
			if (stop) {
				json_decref(rows);
				return 1;
			}
		}
		json_decref(rows);
		if (!page.limit || n < page.limit)
			return 0;
	}
}

int tg_log_follow(tg_gate *g, const tg_log_query *q, long long after_seq,
                  int (*fn)(void *arg, const char *event_json), void *arg,
                  volatile const int *stop, char **errmsg)
{
	char err[512];
	int64_t after = after_seq;
	tgi_log_filter f = {
		.tool = q ? q->tool : NULL,
		.status = q ? q->status : NULL,
		.session = q ? q->session : NULL,
	};
	if (errmsg)
		*errmsg = NULL;
	/* a reader leaves the events socket to a process that makes calls */
	tgi_sinks_yield_socket(g->sinks);
	if (after < 0) {
		tgi_store_lock(g);
		int rc = tgi_store_last_seq(g->store, &after, err, sizeof err);
		tgi_store_unlock(g);
		if (rc < 0)
			return tgi_fail(errmsg, "%s", err);
	}
	follow_watch w;
	watch_open(&w, tgi_store_path(g->store));
	/* After each wait, the newest seq (one indexed lookup) says whether to
	 * read: a commit writes the WAL (the notification) before it makes the
	 * transaction visible (the WAL index, in shared memory, after a sync),
	 * so a look on the notification may come too early, and the next one,
	 * FOLLOW_WAIT_MS later at most, sees it. */
	int rc = 0, first = 1;
	int64_t newest = 0;
	while (!tgi_flag_get(stop)) {
		int64_t top = 0;
		tgi_store_lock(g);
		rc = tgi_store_last_seq(g->store, &top, err, sizeof err);
		tgi_store_unlock(g);
		if (rc < 0)
			break;
		if (first || top > newest) {
			if ((rc = follow_round(g, &f, &after, fn, arg, err, sizeof err)) != 0)
				break;
			if (after < top)   /* up to top, the rest did not match the filter */
				after = top;
			newest = top;
			first = 0;
		}
		if (tgi_flag_get(stop))
			break;
		watch_wait(&w);
	}
	if (w.fd >= 0)
		close(w.fd);
	if (rc < 0)
		return tgi_fail(errmsg, "%s", err);
	return 0;
}
