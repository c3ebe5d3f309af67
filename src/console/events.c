/*
 * events.c — GET /events: the Live and Approvals pages' Server-Sent Events
 * (console.h).
 *
 * One stream per connection.  Its follower thread runs tg_log_follow from
 * the seq the browser last saw (Last-Event-ID) or from now, turns each
 * event into bytes and queues them; the connection's thread (MHD's, in
 * server.c) takes them with tgc_stream_read, which waits for them and
 * sends a keepalive comment when nothing went for KEEPALIVE_MS.  What
 * goes out:
 *
 *     retry: 1000                      once, first: reconnect after a second
 *     id: <seq>                        once: where it starts (the browser
 *                                      resumes from there when it reconnects)
 *     id: <seq>  event: call      data: tgc_live_row   a call ended
 *     id: <seq>  event: approval  data: {type, approval_id}
 *     : keepalive
 *
 * A full queue (a browser that does not read) makes the follower wait,
 * not drop: tg_log_follow holds no lock while it calls back, and the seq
 * it resumes from never skips.
 *
 *   stream life:  open (follower started) -> read ... read
 *                 -> the peer leaves / the console stops / the ledger
 *                    cannot be read: read says so
 *                 -> close: the follower is told to stop and joined
 *
 * Owns: each stream, its follower thread and its queue.  Must not: write
 * the ledger (the store locks itself for each read).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console/console.h"

#define KEEPALIVE_MS 15000.0
#define WAKE_MS      250           /* a waiting read looks at its peer and the console this often */
#define QUEUE_MAX    (1u << 20)    /* bytes a stream holds for a slow reader */
#define QUEUE_ROOM   (64u << 10)   /* the follower waits while less than this is free */
#define RETRY_MS     1000

struct tgc_stream {
	tg_gate            *g;
	tgc_params          filters;   /* owned copies */
	long long           after;
	int                 fd;        /* the connection's socket */
	volatile const int *console_stop;

	pthread_t           follower;
	volatile int        stop;      /* tells the follower to end (tgi_flag_*) */
	pthread_mutex_t     mu;        /* everything below */
	pthread_cond_t      cv;        /* bytes queued, room made, or the follower ended */
	tgi_buf             out;
	size_t              off;       /* bytes of out already read */
	int                 ended;     /* the follower returned */
	double              last_ms;   /* when bytes last went out */
};

/* ---- one finished call as a row ---- */

/* A filter value of the query: NULL when absent or empty. */
static const char *filter(const tgc_params *p, const char *name)
{
	const char *v = tgc_param_get(p, name);
	return v && *v ? v : NULL;
}

/* Does the event's field name pass the filter of the same name? */
static int passes(const json_t *ev, const tgc_params *filters, const char *name)
{
	const char *want = filter(filters, name);
	const char *have = json_string_value(json_object_get(ev, name));
	return !want || (have && !strcmp(have, want));
}

/* The redacted args of a tg_log op, as JSON text (its events carry them). */
static char *op_args(const json_t *op)
{
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(op, "events"), i, ev) {
		json_t *a = json_object_get(ev, "args");
		if (json_is_string(a))
			return tgi_strdup(json_string_value(a));
		if (a && !json_is_null(a))
			return tgi_json_canonical(a);
	}
	return NULL;
}

/* The op of op_id as tg_log gives it (new reference), or NULL. */
static json_t *op_lookup(tg_gate *g, const char *op_id)
{
	tg_log_query q = {.op_id = op_id};
	char *err = NULL;
	char *text = tg_log(g, &q, &err);
	free(err);
	json_t *ops = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	json_t *op = json_incref(json_array_get(ops, 0));
	json_decref(ops);
	return op;
}

/* v's string, or JSON null (new reference). */
static json_t *str_or_null(const json_t *v)
{
	return json_is_string(v) ? json_incref((json_t *)v) : json_null();
}

json_t *tgc_live_row(tg_gate *g, const char *event_json, const tgc_params *filters)
{
	json_t *ev = event_json ? json_loads(event_json, 0, NULL) : NULL;
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *status = json_string_value(json_object_get(ev, "status"));
	const char *op_id = json_string_value(json_object_get(ev, "op_id"));
	/* a call ends with the event named after its final status */
	if (!type || !status || !op_id || strncmp(type, "tool.call.", 10) ||
	    strcmp(type + 10, status) || !passes(ev, filters, "tool") ||
	    !passes(ev, filters, "status") || !passes(ev, filters, "session") ||
	    !passes(ev, filters, "principal")) {
		json_decref(ev);
		return NULL;
	}

	json_t *op = op_lookup(g, op_id);        /* NULL: the event alone says what it can */
	json_t *started = json_object_get(op, "started");
	json_t *dur = json_object_get(op, "duration_ms");
	char *args = op_args(op);
	char *summary = tgc_args_summary(args);
	json_t *row = json_object();
	json_object_set(row, "seq", json_object_get(ev, "seq"));
	json_object_set_new(row, "op_id", json_string(op_id));
	json_object_set_new(row, "ts", str_or_null(json_is_string(started) ? started
	                                                                   : json_object_get(ev, "ts")));
	json_object_set_new(row, "session", str_or_null(json_object_get(ev, "session")));
	json_object_set_new(row, "principal", str_or_null(json_object_get(ev, "principal")));
	json_object_set_new(row, "tool", str_or_null(json_object_get(ev, "tool")));
	json_object_set_new(row, "summary", tgi_json_text(summary, strlen(summary)));
	json_object_set_new(row, "status", json_string(status));
	json_object_set_new(row, "stage", json_string(tgc_stop_stage(json_object_get(op, "envelope"))));
	json_object_set_new(row, "duration_ms", json_is_number(dur) ? json_incref(dur) : json_null());
	free(summary);
	free(args);
	json_decref(op);
	json_decref(ev);
	return row;
}

/* ---- the follower ---- */

/* Is type an approval's news: queued, decided, or anything the store
 * names tool.approval.*? */
static int approval_event(const char *type)
{
	return !strcmp(type, "tool.call.approval_requested") || !strcmp(type, "tool.call.approved") ||
	       !strcmp(type, "tool.call.rejected") || !strncmp(type, "tool.approval.", 14);
}

/* The SSE bytes for one event line (caller frees), or NULL when it sends
 * nothing. */
static char *event_bytes(tgc_stream *s, const char *line)
{
	json_t *ev = json_loads(line, 0, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_int_t seq = json_integer_value(json_object_get(ev, "seq"));
	const char *name = NULL;
	json_t *data = NULL;
	if (type && approval_event(type)) {
		json_t *id = json_object_get(json_object_get(ev, "data"), "approval_id");
		name = "approval";
		data = json_pack("{s:s, s:o}", "type", type, "approval_id", str_or_null(id));
	} else if (type) {
		name = "call";
		data = tgc_live_row(s->g, line, &s->filters);
	}
	json_decref(ev);
	if (!data)
		return NULL;
	char *text = json_dumps(data, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(data);
	if (!text)
		return NULL;
	/* compact JSON has no line break: one data line */
	tgi_buf b;
	tgi_buf_init(&b, QUEUE_MAX);
	tgi_buf_printf(&b, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)seq, name, text);
	free(text);
	return tgi_buf_steal(&b);
}

/* tg_log_follow's callback: queue the event's bytes, waiting for room. */
static int on_event(void *arg, const char *line)
{
	tgc_stream *s = arg;
	char *bytes = event_bytes(s, line);
	if (!bytes)
		return tgi_flag_get(&s->stop);
	size_t n = strlen(bytes);
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (tgi_flag_get(&s->stop)) {
			rc = 1;
			break;
		}
		size_t pending = s->out.len - s->off;
		if (pending + n <= QUEUE_MAX - QUEUE_ROOM || pending == 0) {
			if (s->off) {                     /* the part read makes room */
				memmove(s->out.p, s->out.p + s->off, pending);
				s->out.len = pending;
				s->out.p[pending] = '\0';
				s->off = 0;
			}
			/* fails only for one event larger than the queue: dropped */
			tgi_buf_append(&s->out, bytes, n);
			break;
		}
		tgi_cond_wait_ms(&s->cv, &s->mu, WAKE_MS);
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	free(bytes);
	return rc;
}

static void *follow_main(void *arg)
{
	tgc_stream *s = arg;
	tg_log_query q = {
		.tool = filter(&s->filters, "tool"),
		.status = filter(&s->filters, "status"),
		.session = filter(&s->filters, "session"),
	};
	char *err = NULL;
	if (tg_log_follow(s->g, &q, s->after, on_event, s, &s->stop, &err) < 0) {
		char shown[200];
		tgi_sanitize(shown, sizeof shown, err ? err : "unknown error");
		fprintf(stderr, "toolgate: console: the live stream ended: %s\n", shown);
	}
	free(err);
	pthread_mutex_lock(&s->mu);
	s->ended = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- the stream ---- */

static void params_copy(tgc_params *to, const tgc_params *from)
{
	to->n = 0;
	for (size_t i = 0; from && i < from->n; i++) {
		to->v[to->n].name = tgi_strdup(from->v[i].name);
		to->v[to->n].value = tgi_strdup(from->v[i].value);
		to->n++;
	}
}

tgc_stream *tgc_stream_open(tg_gate *g, const tgc_params *filters, long long after, int fd,
                            volatile const int *stop, char *err, size_t errlen)
{
	if (after < 0) {
		/* from now: from the newest seq, which the browser is told (below), so
		 * that its reconnect resumes there even when no call came meanwhile
		 * (a ledger that cannot be read: tg_log_follow says so) */
		int64_t top;
		char e[256];
		if (tgi_store_last_seq(g->store, &top, e, sizeof e) == 0)
			after = top;
	}
	tgc_stream *s = tgi_xcalloc(1, sizeof *s);
	s->g = g;
	params_copy(&s->filters, filters);
	s->after = after;
	s->fd = fd;
	s->console_stop = stop;
	pthread_mutex_init(&s->mu, NULL);
	tgi_cond_init(&s->cv);
	tgi_buf_init(&s->out, QUEUE_MAX);
	tgi_buf_printf(&s->out, "retry: %d\n\n", RETRY_MS);
	if (after >= 0)   /* no data: sets the browser's last event id, fires nothing */
		tgi_buf_printf(&s->out, "id: %lld\n\n", after);
	s->last_ms = tgi_now_ms();
	int rc = pthread_create(&s->follower, NULL, follow_main, s);
	if (rc != 0) {
		tgi_snprintf(err, errlen, "cannot start the live stream: %s", strerror(rc));
		tgi_buf_free(&s->out);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		tgc_params *p = &s->filters;
		for (size_t i = 0; i < p->n; i++) {
			free(p->v[i].name);
			free(p->v[i].value);
		}
		free(s);
		return NULL;
	}
	return s;
}

/* Has the peer on fd closed its side (or the connection failed)? */
static int peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

long tgc_stream_read(tgc_stream *s, char *buf, size_t max)
{
	long n;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (tgi_flag_get(s->console_stop)) {
			n = 0;
			break;
		}
		if (s->off < s->out.len) {
			size_t k = s->out.len - s->off < max ? s->out.len - s->off : max;
			memcpy(buf, s->out.p + s->off, k);
			s->off += k;
			if (s->off == s->out.len)
				s->off = s->out.len = 0;
			s->last_ms = tgi_now_ms();
			pthread_cond_broadcast(&s->cv);   /* room for the follower */
			n = (long)k;
			break;
		}
		if (s->ended) {
			n = 0;
			break;
		}
		double idle = tgi_now_ms() - s->last_ms;
		if (idle >= KEEPALIVE_MS) {
			tgi_buf_puts(&s->out, ": keepalive\n\n");
			continue;
		}
		long left = (long)(KEEPALIVE_MS - idle) + 1;
		tgi_cond_wait_ms(&s->cv, &s->mu, left < WAKE_MS ? left : WAKE_MS);
		if (s->off == s->out.len && peer_gone(s->fd)) {
			n = -1;
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

void tgc_stream_close(tgc_stream *s)
{
	if (!s)
		return;
	tgi_flag_set(&s->stop);
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->follower, NULL);
	tgi_buf_free(&s->out);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	for (size_t i = 0; i < s->filters.n; i++) {
		free(s->filters.v[i].name);
		free(s->filters.v[i].value);
	}
	free(s);
}
