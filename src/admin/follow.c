/*
 * follow.c — tg_log_follow: the ledger's events as they are written, by
 * this process or any other (`toolgate log --follow`).
 *
 * Every process that makes calls writes the ledger, so following it needs
 * nothing from them: ask the store for the events after the last seq seen,
 * then wait on a store watch (store.h: inotify on an SQLite ledger's files,
 * LISTEN on a PostgreSQL one), which may wake early and never spins.  After
 * each wait one indexed lookup of the newest seq says whether there is
 * anything to read.  Seqs are gap-free and in commit order in both stores,
 * so "after the last seq seen" misses nothing.
 *
 * Each event becomes the line the sinks write (events.c): {seq, ts, type,
 * stage, op_id, session, principal, tool, status, summary, data}, with the
 * summary made from what the store returns of the event's op.
 *
 * Owns: the follow loop and its watch.  Must not: write the ledger, or
 * call fn from inside a store call (the store's lock is held there).
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

#define FOLLOW_WAIT_MS 1000  /* to look at *stop; a change wakes the wait sooner */
#define FOLLOW_BATCH   512   /* events per query once the start is known */

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
		int rc = tgi_store_events(g->store, &page, *after, &rows, err, errlen);
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

/* Did the last store call fail because the database is out of reach? */
static int store_lost(tg_gate *g)
{
	int lost = tgi_store_transient(g->store);
	return lost;
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
		int rc = tgi_store_last_seq(g->store, &after, err, sizeof err);
		if (rc < 0)
			return tgi_fail(errmsg, "%s", err);
	}
	/* opened before the first look: nothing between the two is missed */
	tgi_watch *w;
	if (tgi_store_watch_open(g->store, TGI_WATCH_EVENTS, &w, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	/* after each wait, the newest seq (one indexed lookup) says whether to read */
	int rc = 0, first = 1;
	int64_t newest = 0;
	while (!tgi_flag_get(stop)) {
		int64_t top = 0;
		rc = tgi_store_last_seq(g->store, &top, err, sizeof err);
		int fresh = rc == 0 && (first || top > newest);
		if (fresh)
			rc = follow_round(g, &f, &after, fn, arg, err, sizeof err);
		if (rc < 0 && store_lost(g)) {
			/* the database went away: the next look reconnects (with
			 * backoff), and the seq says where to pick up */
			rc = 0;
			tgi_store_watch_wait(w, FOLLOW_WAIT_MS);
			continue;
		}
		if (rc != 0)
			break;
		if (fresh) {
			if (after < top)   /* up to top, the rest did not match the filter */
				after = top;
			newest = top;
			first = 0;
		}
		if (tgi_flag_get(stop))
			break;
		tgi_store_watch_wait(w, FOLLOW_WAIT_MS);
	}
	tgi_store_watch_close(w);
	if (rc < 0)
		return tgi_fail(errmsg, "%s", err);
	return 0;
}
