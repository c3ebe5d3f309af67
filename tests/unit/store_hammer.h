/*
 * store_hammer.h — one store handle shared by several threads, with no lock
 * of the caller's (store.h: the handle serializes itself), each thread
 * making every kind of call at once: claims, records and replays, a shared
 * rate-limit bucket, approvals added, decided, found and spent, events of
 * no call, pins, conversations, and the reads (ops, events, loop windows,
 * manifests, stats, last seq).  What the threads see is checked as they go
 * and what the ledger holds afterwards is checked whole: every op and
 * event there once, seqs gap-free, the bucket's tokens taken exactly once,
 * each approval spent once.  Included by the tests of each backend
 * (test_store_shared.c: SQLite; test_store_pg.c: PostgreSQL).
 *
 * Owns: nothing.  Must not: call cmocka from a worker thread (its failures
 * longjmp): a worker notes its first failure, the main thread fails with it.
 */
#ifndef TG_TEST_STORE_HAMMER_H
#define TG_TEST_STORE_HAMMER_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "util/util.h"

#define HAMMER_THREADS 6
#define HAMMER_ROUNDS  30
#define HAMMER_BURST   50   /* the shared bucket's tokens: fewer than the takes */
#define HAMMER_PIN_A   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HAMMER_PIN_B   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct hammer {
	tgi_store         *s;
	pthread_barrier_t  start;
	atomic_int         taken;       /* tokens taken from the shared bucket */
	pthread_mutex_t    mu;          /* guards why */
	char               why[512];    /* the first failure, or "" */
} hammer;

typedef struct hammer_arg {
	hammer *h;
	int     id;
} hammer_arg;

__attribute__((format(printf, 2, 3)))
static void hammer_fail(hammer *h, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&h->mu);
	if (!h->why[0]) {
		va_start(ap, fmt);
		vsnprintf(h->why, sizeof h->why, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&h->mu);
}

#define HAMMER_OK(h, call)                                                              \
	do {                                                                            \
		if ((call) != 0) {                                                      \
			hammer_fail((h), "%s: %s", #call, err);                         \
			return NULL;                                                    \
		}                                                                       \
	} while (0)

#define HAMMER_CHECK(h, cond, ...)                                                      \
	do {                                                                            \
		if (!(cond)) {                                                          \
			hammer_fail((h), __VA_ARGS__);                                  \
			return NULL;                                                    \
		}                                                                       \
	} while (0)

/* One round of thread `id`: a claimed call recorded, then replayed. */
static void *hammer_call(hammer *h, int id, int round, int64_t t0)
{
	tgi_store *s = h->s;
	char err[512] = "", op_id[37], scope[64], session[32], loop[32], env[128];
	tgi_idem_info info;
	tgi_uuidv7(op_id);
	snprintf(scope, sizeof scope, "hammer:%d:%d", id, round);
	snprintf(session, sizeof session, "s%d", id);
	snprintf(loop, sizeof loop, "e%d", round);
	snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"persisted\"}", op_id);
	HAMMER_OK(h, tgi_store_idem_claim(s, scope, op_id, NULL, 60, &info, err, sizeof err));
	HAMMER_CHECK(h, info.state == TGI_IDEM_CLAIMED, "%s: claimed as %d", scope, info.state);
	tgi_op_record op = {
		.op_id = op_id, .call_id = "c", .session = session, .tool = "write_file",
		.principal = "local", .status = "persisted", .idem_scope = scope,
		.args_redacted = "{}", .args_sha256 = "ab", .envelope = env,
		.started_ms = t0 + round, .duration_ms = 1, .loop = loop, .manifest = "m1",
	};
	tgi_event ev[4] = {
		{ "tool.call.received", "decode", NULL, t0 + round, 0 },
		{ "tool.call.started", "execute", NULL, t0 + round, 0 },
		{ "tool.call.finished", "execute", NULL, t0 + round, 0 },
		{ "tool.call.persisted", "persist", NULL, t0 + round, 0 },
	};
	HAMMER_OK(h, tgi_store_record(s, &op, ev, 4, scope, TGI_SETTLE_DONE, err, sizeof err));
	for (int i = 0; i < 4; i++)
		HAMMER_CHECK(h, ev[i].seq > 0 && (i == 0 || ev[i].seq == ev[i - 1].seq + 1),
		             "%s: event %d has seq %lld", op_id, i, (long long)ev[i].seq);
	char other[37];
	tgi_uuidv7(other);
	HAMMER_OK(h, tgi_store_idem_claim(s, scope, other, NULL, 60, &info, err, sizeof err));
	int replayed = info.state == TGI_IDEM_DONE && !strcmp(info.op_id, op_id) && info.envelope &&
	               strstr(info.envelope, op_id);
	free(info.envelope);
	HAMMER_CHECK(h, replayed, "%s: not replayed (state %d)", scope, info.state);

	/* read back at once: this op, its events, the session's window */
	tgi_log_filter one = {.op_id = op_id};
	json_t *rows = NULL;
	HAMMER_OK(h, tgi_store_ops(s, &one, &rows, err, sizeof err));
	size_t nops = json_array_size(rows);
	json_decref(rows);
	HAMMER_CHECK(h, nops == 1, "%s: %zu ops read back", op_id, nops);
	HAMMER_OK(h, tgi_store_events(s, &one, 0, &rows, err, sizeof err));
	size_t nev = json_array_size(rows);
	json_decref(rows);
	HAMMER_CHECK(h, nev == 4, "%s: %zu events read back", op_id, nev);
	tgi_strv w = {0};
	HAMMER_OK(h, tgi_store_loop_window(s, session, 3, &w, err, sizeof err));
	int newest = w.n >= 1 && !strcmp(w.v[0], loop);
	tgi_strv_free(&w);
	HAMMER_CHECK(h, newest, "%s: the window does not start with %s", session, loop);
	char manifest[65];
	HAMMER_OK(h, tgi_store_session_manifest(s, session, manifest, err, sizeof err));
	HAMMER_CHECK(h, !strcmp(manifest, "m1"), "%s: manifest \"%s\"", session, manifest);
	return h;
}

/* An approval of its own: added, approved, found, spent once. */
static void *hammer_approval(hammer *h, int id, int round)
{
	tgi_store *s = h->s;
	char err[512] = "", found_id[37];
	tgi_approval_row row;
	int found = 0, used = 0;
	memset(&row, 0, sizeof row);
	snprintf(row.tool, sizeof row.tool, "write_file");
	snprintf(row.principal, sizeof row.principal, "local");
	snprintf(row.binding, sizeof row.binding, "%032d%032d", id, round);
	row.args = "{}";
	row.reason = "ask rule";
	row.expires_ms = tgi_unix_ms() + 600000;
	HAMMER_OK(h, tgi_store_approval_add(s, &row, err, sizeof err));
	HAMMER_OK(h, tgi_store_approval_decide(s, row.id, 1, "ops", "fine", err, sizeof err));
	HAMMER_OK(h, tgi_store_approval_find(s, row.binding, "local", &found, found_id, NULL, err,
	                                     sizeof err));
	HAMMER_CHECK(h, found == 1 && !strcmp(found_id, row.id), "%s: found %d", row.id, found);
	HAMMER_OK(h, tgi_store_approval_use(s, row.id, "local", row.binding, &used, err, sizeof err));
	HAMMER_CHECK(h, used == 1, "%s: not spent (%d)", row.id, used);
	HAMMER_OK(h, tgi_store_approval_use(s, row.id, "local", row.binding, &used, err, sizeof err));
	HAMMER_CHECK(h, used == 0, "%s: spent twice", row.id);
	return h;
}

static void *hammer_thread(void *arg)
{
	hammer_arg *a = arg;
	hammer *h = a->h;
	tgi_store *s = h->s;
	char err[512] = "", name[32], session[32], pinned[65];
	int64_t t0 = tgi_unix_ms(), last = 0;
	snprintf(name, sizeof name, "pin%d", a->id);
	snprintf(session, sizeof session, "m%d", a->id);
	pthread_barrier_wait(&h->start);
	for (int r = 0; r < HAMMER_ROUNDS; r++) {
		if (!hammer_call(h, a->id, r, t0) || !hammer_approval(h, a->id, r))
			return NULL;

		int ok = 0;
		double left = 0, retry = 0;
		HAMMER_OK(h, tgi_store_bucket_take(s, "local", "shared", 0.001, HAMMER_BURST, 1, &ok,
		                                   &left, &retry, err, sizeof err));
		if (ok)
			atomic_fetch_add(&h->taken, 1);

		tgi_event ev = {.type = "mcp.tool.changed", .ts_ms = tgi_unix_ms()};
		HAMMER_OK(h, tgi_store_event(s, NULL, &ev, err, sizeof err));
		HAMMER_CHECK(h, ev.seq > 0, "an event alone got no seq");

		tgi_pin_state st;
		HAMMER_OK(h, tgi_store_pin_check(s, name, r % 2 ? HAMMER_PIN_B : HAMMER_PIN_A, &st, pinned, err,
		                                 sizeof err));
		HAMMER_CHECK(h, st == (r == 0 ? TGI_PIN_NEW : r % 2 ? TGI_PIN_CHANGED : TGI_PIN_SAME),
		             "%s: pin state %d in round %d", name, st, r);
		if (r % 2)   /* the change approved: back and forth */
			HAMMER_OK(h, tgi_store_pin_set(s, name, HAMMER_PIN_A, err, sizeof err));

		json_t *entries = json_pack("[{s:s, s:i}]", "role", "user", "n", r);
		int rc = tgi_store_messages_append(s, session, "anthropic", entries, err, sizeof err);
		json_decref(entries);
		HAMMER_OK(h, rc);

		int64_t seq = 0;
		HAMMER_OK(h, tgi_store_last_seq(s, &seq, err, sizeof err));
		HAMMER_CHECK(h, seq >= last, "the last seq went back from %lld to %lld",
		             (long long)last, (long long)seq);
		last = seq;
		if (r % 10 == 0) {
			json_t *stats = NULL;
			HAMMER_OK(h, tgi_store_stats(s, 0, &stats, err, sizeof err));
			json_decref(stats);
		}
		HAMMER_CHECK(h, tgi_store_transient(s) == 0, "transient after a success");
	}
	json_t *msgs = NULL;
	char api[32];
	HAMMER_OK(h, tgi_store_messages(s, session, &msgs, api, err, sizeof err));
	size_t n = json_array_size(msgs);
	json_decref(msgs);
	HAMMER_CHECK(h, n == HAMMER_ROUNDS, "%s: %zu messages kept", session, n);
	return h;
}

/* Run the threads on s; the first failure (of a thread, or of the ledger
 * as they left it) into why, "" when there was none. */
static void hammer_run(tgi_store *s, char *why, size_t cap)
{
	hammer h = {.s = s};
	pthread_t t[HAMMER_THREADS];
	hammer_arg a[HAMMER_THREADS];
	char err[512] = "";
	atomic_init(&h.taken, 0);
	pthread_mutex_init(&h.mu, NULL);
	pthread_barrier_init(&h.start, NULL, HAMMER_THREADS);
	for (int i = 0; i < HAMMER_THREADS; i++) {
		a[i] = (hammer_arg){&h, i};
		pthread_create(&t[i], NULL, hammer_thread, &a[i]);
	}
	for (int i = 0; i < HAMMER_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&h.start);
	pthread_mutex_destroy(&h.mu);
	if (h.why[0]) {
		snprintf(why, cap, "%s", h.why);
		return;
	}

	/* the ledger whole: each op once, its events and the lone ones
	 * numbered 1, 2, 3, ... without a gap */
	size_t calls = (size_t)HAMMER_THREADS * HAMMER_ROUNDS;
	json_t *rows = NULL;
	tgi_log_filter all = {0};
	int64_t seq = 0;
	if (tgi_store_ops(s, &all, &rows, err, sizeof err) < 0 ||
	    tgi_store_last_seq(s, &seq, err, sizeof err) < 0) {
		snprintf(why, cap, "reading the ledger: %.400s", err);
		json_decref(rows);
		return;
	}
	size_t nops = json_array_size(rows);
	json_decref(rows);
	if (nops != calls || seq != (int64_t)(5 * calls)) {
		snprintf(why, cap, "%zu ops and last seq %lld; %zu and %zu expected", nops,
		         (long long)seq, calls, 5 * calls);
		return;
	}
	if (tgi_store_events(s, &all, 0, &rows, err, sizeof err) < 0) {
		snprintf(why, cap, "reading the events: %.400s", err);
		return;
	}
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		json_int_t got = json_integer_value(json_object_get(row, "seq"));
		if (got != (json_int_t)i + 1) {
			snprintf(why, cap, "event %zu has seq %lld", i + 1, (long long)got);
			break;
		}
	}
	if (!why[0] && json_array_size(rows) != 5 * calls)
		snprintf(why, cap, "%zu events read", json_array_size(rows));
	json_decref(rows);
	if (!why[0] && atomic_load(&h.taken) != HAMMER_BURST)
		snprintf(why, cap, "%d tokens taken from a bucket of %d", atomic_load(&h.taken),
		         HAMMER_BURST);
}

#endif
