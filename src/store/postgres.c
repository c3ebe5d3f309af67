/*
 * postgres.c — the ledger on PostgreSQL through libpq (DESIGN §5), shared
 * by gates on many hosts: the same contracts as sqlite.c (store.h is the
 * spec), the same tables, the same migration numbers.
 *
 * libpq is loaded at run time (src/util/dl.c): the program is not linked
 * with it, so a `toolgate call` on an SQLite ledger never maps it.
 *
 * One connection per handle; store.c serialises calls on a handle with
 * the handle's lock, and a watch has a connection of its own.  Every operation
 * is one round trip where it can be: its statements go out in libpq's
 * pipeline mode, between two Syncs, which the server runs as one implicit
 * transaction (committed at the Sync, rolled back whole if any statement
 * fails).  Statements are prepared by name on first use on a connection,
 * in the same round trip as their first execution.
 *
 * Idempotency row lifecycle (scope is the key), as in sqlite.c:
 *
 *     (none) --claim--> in_flight --record DONE--> done      (replayed)
 *                           |  \---record RELEASE--> (none)   (may run again)
 *                           |   \--record UNKNOWN--> unknown
 *                           +--owner seen dead---> unknown   (never re-run)
 *                           +--its record failed--> unknown  (none for RELEASE)
 *     unknown | dead in_flight --resolve applied=1--> done
 *                              --resolve applied=0--> (none)
 *
 * The claim is one statement, INSERT ... ON CONFLICT DO NOTHING RETURNING,
 * committed (synchronous_commit on) before the tool may run; the row is
 * read back in the same round trip.  An owner is its host (hostname, boot
 * id and pid namespace: common.c), pid and process start time, its
 * PostgreSQL backend (pid and backend_start) and a lease on the server's
 * clock.  On this host the owner process itself is checked in /proc
 * (common.c, as for sqlite.c); an owner on another host is alive while its
 * lease has not run out and its backend still exists with that start time
 * or started before the server now running did (a server restart ends
 * every backend and says nothing about the processes).  A dead owner's row
 * becomes unknown by a conditional UPDATE (only if it is still that
 * in_flight row), so whoever asks next gets the same answer; it keeps its
 * owner, and `ops resolve` judges an unknown row's owner as an in-flight
 * one's.  A row its owner settles unknown itself loses its owner (no
 * process runs it any more).
 *
 * Events: seq comes from a one-row counter (event_seq), bumped by the
 * statement that inserts the events, the last one before the commit: its
 * row lock is held only through the commit, so seqs are gap-free (a
 * rollback gives them back) and in commit order across processes (a
 * follower reading seq > last never misses a row that commits later with
 * a lower seq).  The same statement sends NOTIFY toolgate_events, which
 * the server delivers at commit; a decided approval sends NOTIFY
 * toolgate_approvals with its id.
 *
 * A lost connection (the server gone, shut down, or this backend killed)
 * makes the failing call's sentence say so and tgi_store_transient() 1.
 * The next call reconnects, but not before a backoff (100 ms, doubling to
 * 5 s, back to 100 ms after a success); in the backoff a call fails at
 * once.  A connection that died while idle (a restart, a killed backend,
 * an idle timeout: the socket turned readable) is found before the next
 * round trip and made again at once; a record whose connection broke under
 * it is sent once more on a fresh one (its op_id is its key: a duplicate
 * means the first commit landed).  Reconnects wait PG_RECONNECT_S for a
 * server at most, and every connection has keepalives and a TCP user
 * timeout, so a server host that vanished does not hold a call for long.
 * After a reconnect the claims of calls still running are moved to the new
 * backend; a claim whose commit was lost with the connection is deleted
 * (its call was refused, so nothing ran under it), and one whose record
 * failed is settled unknown (or deleted when nothing was applied), never
 * moved: its call is over (struct held).  What is still unsettled when the
 * handle closes gets one bounded attempt then.
 *
 * Approvals compare expiries with the server's clock, as leases and
 * buckets do, not with each gate's.  An export reads one snapshot.
 *
 * The backend is five files (postgres_int.h is what they share): this
 * one, the writes each call of the table makes, and the table;
 * postgres_conn.c, the connection (the round trip, backoff, held claims,
 * open and close); postgres_schema.c, the tables and migrations;
 * postgres_read.c, the log, stats, unknown outcomes and export;
 * postgres_watch.c, the watches.
 *
 * Owns: the claim protocol and the writes (records, claims, approvals,
 * pins, conversations, eval runs, events), the identity's rows, the table.
 * Must not: decide policy, run tools, or build envelopes (the one it writes
 * itself is the minimal envelope of an op an operator settled as applied
 * when the process that ran it left no row, made by common.c), show a
 * password, or keep its own copy of what common.c holds for both stores
 * (the argument checks and their sentences, a claim owner's liveness on
 * this host, UUIDv7 times, the values both build alike).
 * A database error is -1 with a sentence, never an abort.
 */
#include "store/postgres_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the ledger's identity (identity.c) ---- */

static const char *pg_shown(const tgi_store *base)
{
	return ((const pg *)base)->shown;
}

/* The database's name, not a host: a fleet's gates reach one database
 * under several host names, and the name tells two ledgers of one server
 * apart. */
static int pg_ident_bound(tgi_store *base, char *out, size_t cap, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	tgi_pg_q_init(&x, ST_ADHOC, "SELECT current_database()");
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1) {
		char db[256];
		tgi_pg_val_copy(x.res, 0, 0, db, sizeof db);
		tgi_snprintf(out, cap, "postgresql database %s", db);
	}
	tgi_pg_q_free(&x, 1);
	return rc < 0 ? tgi_pg_fail(s, err, errlen, "cannot read the ledger's database name") : 0;
}

static int pg_ident_get(tgi_store *base, tgi_ledger_ident *id, int *found, char *err,
                        size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	memset(id, 0, sizeof *id);
	*found = 0;
	tgi_pg_q_init(&x, ST_ADHOC, "SELECT id, bound, created_ms, mac FROM ledger WHERE one = 1");
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1) {
		tgi_pg_val_copy(x.res, 0, 0, id->id, sizeof id->id);
		tgi_pg_val_copy(x.res, 0, 1, id->bound, sizeof id->bound);
		id->created_ms = tgi_pg_val_i64(x.res, 0, 2, 0);
		tgi_pg_val_copy(x.res, 0, 3, id->mac, sizeof id->mac);
		*found = 1;
	}
	tgi_pg_q_free(&x, 1);
	return rc < 0 ? tgi_pg_fail(s, err, errlen, "cannot read the ledger's identity") : 0;
}

/* One statement, so one transaction: the counts, and the identity written
 * when adopting or when there is none and no records (two gates making it
 * at once: the second's insert does nothing, and both read the first's). */
static int pg_ident_put(tgi_store *base, const tgi_ledger_ident *id, int adopt, int *made,
                        tgi_ledger_rows *out, char *err, size_t errlen)
{
	static const char sql[] =
		"WITH n AS (SELECT (SELECT count(*) FROM ops) AS o, (SELECT count(*) FROM events) AS e,"
		" (SELECT count(*) FROM approvals) AS a, (SELECT count(*) FROM idem) AS i,"
		" (SELECT count(*) FROM pins) AS p, (SELECT count(*) FROM rate_buckets) AS b,"
		" (SELECT count(*) FROM ledger) AS l),"
		" ins AS (INSERT INTO ledger(one, id, bound, created_ms, mac)"
		" SELECT 1, $1, $2, $3::bigint, $4 FROM n"
		" WHERE $5::boolean OR (n.l = 0 AND n.o + n.e + n.a + n.i + n.p + n.b = 0)"
		" ON CONFLICT (one) DO UPDATE SET id = excluded.id, bound = excluded.bound,"
		" created_ms = excluded.created_ms, mac = excluded.mac WHERE $5::boolean"
		" RETURNING 1)"
		" SELECT o, e, a, i, p, b, l, (SELECT count(*) FROM ins) FROM n";
	pg *s = tgi_pg_enter(base);
	q x;
	*made = 0;
	tgi_pg_q_init(&x, ST_ADHOC, sql);
	tgi_pg_q_text(&x, id->id);
	tgi_pg_q_text(&x, id->bound);
	tgi_pg_q_i64(&x, id->created_ms);
	tgi_pg_q_text(&x, id->mac);
	tgi_pg_q_text(&x, adopt ? "true" : "false");
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1) {
		int64_t n[8];
		for (int i = 0; i < 8; i++)
			n[i] = tgi_pg_val_i64(x.res, 0, i, 0);
		if (out)
			*out = (tgi_ledger_rows){ n[0], n[1], n[2], n[3], n[4], n[5] };
		/* not inserted: another gate's identity is there (made since this
		 * statement's snapshot, when it saw none and no records), or records */
		int64_t records = n[0] + n[1] + n[2] + n[3] + n[4] + n[5];
		*made = n[7] ? 1 : n[6] || !records ? 0 : -1;
	}
	tgi_pg_q_free(&x, 1);
	return rc < 0 ? tgi_pg_fail(s, err, errlen, "cannot write the ledger's identity") : 0;
}

/* ---- ops + events ---- */

/* The statement that inserts n events of op_id (NULL: of no op) with seqs
 * from the counter, and notifies followers at commit. */
static void events_q(q *x, const char *op_id, const tgi_event *ev, size_t n, char **data)
{
	const char **types = tgi_xcalloc(n, sizeof *types);
	const char **stages = tgi_xcalloc(n, sizeof *stages);
	int64_t *ts = tgi_xcalloc(n, sizeof *ts);
	for (size_t i = 0; i < n; i++) {
		types[i] = ev[i].type;
		stages[i] = ev[i].stage;
		ts[i] = ev[i].ts_ms;
	}
	tgi_pg_q_init(x, ST_EVENTS_INSERT, NULL);
	tgi_pg_q_i64(x, (int64_t)n);
	tgi_pg_q_text(x, op_id);
	tgi_pg_q_owned(x, tgi_pg_int_array(ts, n));
	tgi_pg_q_owned(x, tgi_pg_text_array(types, n));
	tgi_pg_q_owned(x, tgi_pg_text_array(stages, n));
	tgi_pg_q_owned(x, tgi_pg_text_array((const char *const *)data, n));
	free(types);
	free(stages);
	free(ts);
}

/* Each event's data as JSON text (NULL for none); -1 when one cannot be
 * encoded. */
static int events_data(const tgi_event *ev, size_t n, char **data)
{
	for (size_t i = 0; i < n; i++) {
		data[i] = NULL;
		if (ev[i].data && !(data[i] = json_dumps(ev[i].data, JSON_COMPACT | JSON_ENCODE_ANY))) {
			for (size_t j = 0; j < i; j++)
				free(data[j]);
			return -1;
		}
	}
	return 0;
}

/* binding and envelope: a `done` row's MAC covers them (rowmac.c). */
static void settle_q(pg *s, q *x, const char *scope, const char *op_id, tgi_idem_settle how,
                     const char *binding, const char *envelope)
{
	tgi_pg_q_init(x, how == TGI_SETTLE_DONE      ? ST_IDEM_DONE
	        : how == TGI_SETTLE_RELEASE ? ST_IDEM_RELEASE
	                                    : ST_IDEM_UNKNOWN, NULL);
	tgi_pg_q_text(x, scope);
	tgi_pg_q_text(x, op_id);
	if (how == TGI_SETTLE_DONE) {
		char mac[65];
		tgi_mac_idem(&s->base, scope, op_id, binding, "done", envelope, mac);
		tgi_pg_q_text(x, binding && *binding ? binding : NULL);
		tgi_pg_q_owned(x, *mac ? tgi_strdup(mac) : NULL);
	}
}

/* Did the last failure refuse an ops row already there? */
static int op_exists(const pg *s)
{
	return !s->transient && !strcmp(s->sqlstate, "23505") && !strcmp(s->constraint, "ops_pkey");
}

/* A record that committed though its reply was lost: the seqs its events
 * were given, read back (its events are the op's first). */
static int read_seqs(pg *s, const char *op_id, tgi_event *ev, size_t nev)
{
	if (!nev)
		return 0;
	q x;
	tgi_pg_q_init(&x, ST_EVENT_SEQS, NULL);
	tgi_pg_q_text(&x, op_id);
	tgi_pg_q_i64(&x, (int64_t)nev);
	int rc = tgi_pg_run(s, &x, 1);
	for (int i = 0; rc == 0 && i < tgi_pg_rows(&x) && (size_t)i < nev; i++)
		ev[i].seq = tgi_pg_val_i64(x.res, i, 0, 0);
	tgi_pg_q_free(&x, 1);
	return rc;
}

/* The record of a call that held a claim failed: the call is over all the
 * same (its tool ran, or was never to), so its claim must not look like a
 * live one (struct held).  It is settled now when the connection is there
 * (the record failed for another reason), else by the next connection or
 * the close.  What the record's failure said is kept. */
static void record_failed(pg *s, const char *scope, const char *op_id, tgi_idem_settle how)
{
	tgi_pg_held_add(s, scope, op_id, how == TGI_SETTLE_RELEASE ? HELD_DELETE : HELD_UNKNOWN);
	if (s->lost)
		return;
	char why[PG_WHY_MAX], code[6], cons[64];
	int transient = s->transient;
	memcpy(why, s->why, sizeof why);
	memcpy(code, s->sqlstate, sizeof code);
	memcpy(cons, s->constraint, sizeof cons);
	tgi_pg_settle_held(s);
	memcpy(s->why, why, sizeof why);
	memcpy(s->sqlstate, code, sizeof code);
	memcpy(s->constraint, cons, sizeof cons);
	s->transient = transient;
}

/*
 * One round trip, one transaction: the ops row, the session, the
 * idempotency row, and last the events with their seqs (and the
 * NOTIFY), so that the counter's row lock is held only through the commit.
 * Every record takes its row locks in that order: no two deadlock.
 */
static int pg_record(tgi_store *base, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle how, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q qs[4];
	int n = 0;

	for (size_t i = 0; ev && i < nev; i++)
		ev[i].seq = 0;
	if (tgi_check_record(op, ev, nev, idem_scope, how, err, errlen) < 0)
		return -1;
	const char *scope = idem_scope && how != TGI_SETTLE_NONE ? idem_scope : NULL;
	char **data = nev ? tgi_xcalloc(nev, sizeof *data) : NULL;
	if (nev && events_data(ev, nev, data) < 0) {
		free(data);
		if (scope)
			record_failed(s, scope, op->op_id, how);
		tgi_snprintf(err, errlen, "cannot encode the events of op '%s'", op->op_id);
		return -1;
	}

	q *x = &qs[n++];
	tgi_pg_q_init(x, ST_OP_INSERT, NULL);
	tgi_pg_q_text(x, op->op_id);
	tgi_pg_q_text(x, op->call_id);
	tgi_pg_q_text(x, op->session);
	tgi_pg_q_text(x, op->tool);
	tgi_pg_q_text(x, op->principal);
	tgi_pg_q_text(x, op->status);
	tgi_pg_q_text(x, op->error_kind);
	tgi_pg_q_text(x, op->idem_scope);
	tgi_pg_q_text(x, op->args_redacted);
	tgi_pg_q_text(x, op->args_sha256);
	tgi_pg_q_text(x, op->envelope);
	tgi_pg_q_i64(x, op->started_ms);
	tgi_pg_q_f64(x, op->duration_ms);
	tgi_pg_q_text(x, op->loop);
	if (op->session) {
		x = &qs[n++];
		tgi_pg_q_init(x, ST_SESSION_UPSERT, NULL);
		tgi_pg_q_text(x, op->session);
		tgi_pg_q_i64(x, op->started_ms);
		tgi_pg_q_text(x, op->manifest);
	}
	if (scope)
		settle_q(s, &qs[n++], scope, op->op_id, how, op->idem_binding, op->envelope);
	if (nev)
		events_q(&qs[n++], op->op_id, ev, nev, data);

	int rc = tgi_pg_run(s, qs, n), landed = 0;
	if (rc < 0 && s->lost && s->sent) {
		/* the connection broke under it: once more, on a fresh one now;
		 * the op_id is the record's key, so when the first one committed
		 * after all this one is refused on it, and that is success */
		tgi_pg_q_results_free(qs, n);
		s->retry_at = 0;
		rc = tgi_pg_run(s, qs, n);
		landed = rc < 0 && op_exists(s);
	}
	if (rc == 0 && nev) {
		int64_t last = tgi_pg_val_i64(qs[n - 1].res, 0, 0, 0);
		for (size_t i = 0; i < nev; i++)
			ev[i].seq = last - (int64_t)(nev - 1 - i);
	}
	tgi_pg_q_free(qs, n);
	for (size_t i = 0; i < nev; i++)
		free(data[i]);
	free(data);
	if (landed)
		rc = read_seqs(s, op->op_id, ev, nev);
	if (rc == 0 && scope)
		tgi_pg_held_drop(s, scope, op->op_id);
	if (rc < 0 && scope)
		record_failed(s, scope, op->op_id, how);
	if (rc < 0 && op_exists(s)) {
		tgi_snprintf(err, errlen, "op '%s' is already in the ledger", op->op_id);
		return -1;
	}
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot record op '%s'", op->op_id);
	return 0;
}

/* ---- what middleware keeps across processes and restarts ---- */

static int pg_session_manifest(tgi_store *base, const char *session, char out[65], char *err,
                               size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	out[0] = '\0';
	if (!session)
		return 0;
	tgi_pg_q_init(&x, ST_SESSION_MANIFEST, NULL);
	tgi_pg_q_text(&x, session);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x))
		tgi_pg_val_copy(x.res, 0, 0, out, 65);
	tgi_pg_q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return tgi_pg_fail(s, err, errlen, "cannot read the manifest of session '%s'",
		                   tgi_quoted(qs, sizeof qs, session));
	}
	return 0;
}

static int pg_loop_window(tgi_store *base, const char *session, size_t limit, tgi_strv *out,
                          char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	if (tgi_check_loop_window(session, err, errlen) < 0)
		return -1;
	if (!limit)
		return 0;
	tgi_pg_q_init(&x, ST_LOOP_SESSION, NULL);
	tgi_pg_q_text(&x, session);
	tgi_pg_q_i64(&x, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	int rc = tgi_pg_run(s, &x, 1);
	for (int i = 0; rc == 0 && i < tgi_pg_rows(&x); i++) {
		const char *t = tgi_pg_val(x.res, i, 0);
		if (t)
			tgi_strv_push(out, tgi_strdup(t));
	}
	tgi_pg_q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return tgi_pg_fail(s, err, errlen, "cannot read the loop window of session '%s'",
		                   tgi_quoted(qs, sizeof qs, session));
	}
	return 0;
}

static int pg_bucket_get(tgi_store *base, const char *principal, const char *tool, double *tokens,
                         int64_t *updated_ms, int *found, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	*found = 0;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	tgi_pg_q_init(&x, ST_BUCKET_GET, NULL);
	tgi_pg_q_text(&x, principal);
	tgi_pg_q_text(&x, tool);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x)) {
		char mac[65];
		*tokens = tgi_pg_val_f64(x.res, 0, 0);
		*updated_ms = tgi_pg_val_i64(x.res, 0, 1, 0);
		tgi_pg_val_copy(x.res, 0, 2, mac, sizeof mac);
		/* one that does not verify is as a fresh bucket (as if deleted) */
		*found = tgi_mac_bucket_ok(&s->base, principal, tool, *tokens, *updated_ms, mac);
	}
	tgi_pg_q_free(&x, 1);
	if (rc < 0) {
		char qs[80];
		return tgi_pg_fail(s, err, errlen, "cannot read the rate-limit bucket of '%s'",
		                   tgi_quoted(qs, sizeof qs, tool));
	}
	return 0;
}

/* The take of tgi_bucket_step on the server's clock, in one transaction
 * that holds the bucket's row (made empty and unsigned when there is none:
 * a new bucket, full), with its MAC checked here and written anew.
 * Seconds until the next whole token, to the millisecond above, when there
 * is none.  (store.c checked rate and burst.) */
static int pg_bucket_take(tgi_store *base, const char *principal, const char *tool, double rate,
                          double burst, int want, int *took, double *left, double *retry_after_s, char *err,
                          size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	if (tgi_check_bucket(principal, tool, err, errlen) < 0)
		return -1;
	int rc = tgi_pg_tx_begin(s, "BEGIN");
	if (rc == 0) {
		tgi_pg_q_init(&x, ST_BUCKET_LOCK, NULL);
		tgi_pg_q_text(&x, principal);
		tgi_pg_q_text(&x, tool);
		rc = tgi_pg_run(s, &x, 1);
		if (rc == 0 && tgi_pg_rows(&x) != 1) {
			tgi_snprintf(s->why, sizeof s->why, "the bucket was not returned");
			rc = -1;
		}
		double stored = 0;
		int64_t at = 0, now = 0;
		char mac[65] = "";
		if (rc == 0) {
			stored = tgi_pg_val_f64(x.res, 0, 0);
			at = tgi_pg_val_i64(x.res, 0, 1, 0);
			tgi_pg_val_copy(x.res, 0, 2, mac, sizeof mac);
			now = tgi_pg_val_i64(x.res, 0, 3, 0);
		}
		tgi_pg_q_free(&x, 1);
		if (rc == 0) {
			int found = tgi_mac_bucket_ok(&s->base, principal, tool, stored, at, mac);
			if (tgi_bucket_step(stored, at, found, now, rate, burst, want, took, left)) {
				tgi_mac_bucket(&s->base, principal, tool, *left, now, mac);
				tgi_pg_q_init(&x, ST_BUCKET_SET, NULL);
				tgi_pg_q_text(&x, principal);
				tgi_pg_q_text(&x, tool);
				tgi_pg_q_f64(&x, *left);
				tgi_pg_q_i64(&x, now);
				tgi_pg_q_text(&x, mac[0] ? mac : NULL);
				tgi_pg_q_text(&x, *took ? "true" : "false");
				rc = tgi_pg_run(s, &x, 1);
				tgi_pg_q_free(&x, 1);
			}
		}
		if (rc == 0)
			rc = tgi_pg_tx_commit(s);
	}
	if (rc < 0) {
		char qs[80];
		tgi_pg_tx_abort(s);
		*took = 0;
		return tgi_pg_fail(s, err, errlen, "cannot take from the rate-limit bucket of '%s'",
		                   tgi_quoted(qs, sizeof qs, tool));
	}
	if (!*took) {
		double ms = ceil((*left < 1 ? 1 - *left : 0) * 1000 / rate);
		*retry_after_s = (ms < 1 ? 1 : ms) / 1000;
	}
	return 0;
}

/* ---- idempotency ---- */

/* Is the owner of an in_flight row (or of an unknown one another process
 * marked so) still running it?  On this host (tgi_owner_same_host), as
 * tgi_owner_here_alive says.  On another host: its lease (on the server's
 * clock) has not run out, and its backend still exists with the recorded
 * start time, or started before the server now running did (it went with
 * a restart of the server, which says nothing about its process).  A row
 * its owner settled unknown itself has no owner left: not running. */
int tgi_pg_owner_alive(pg *s, const struct owner *o)
{
	if (!tgi_owner_same_host(&s->me, o->host))
		return (o->backend_alive || o->backend_before) && o->lease_until > o->now;
	return tgi_owner_here_alive(o->pid, o->start, o->lease_until > o->now);
}

/* Columns col.. of r: owner_host, owner_pid, owner_start, lease_until_ms,
 * then (at now_col) the server's now, whether the backend lives, and
 * whether it started before the server did. */
void tgi_pg_read_owner_at(const PGresult *r, int row, int col, int now_col, struct owner *o)
{
	tgi_pg_val_copy(r, row, col, o->host, sizeof o->host);
	o->pid = tgi_pg_val_i64(r, row, col + 1, 0);
	o->start = tgi_pg_val_i64(r, row, col + 2, -1);
	o->lease_until = tgi_pg_val_i64(r, row, col + 3, 0);
	o->now = tgi_pg_val_i64(r, row, now_col, 0);
	o->backend_alive = tgi_pg_val_bool(r, row, now_col + 1);
	o->backend_before = tgi_pg_val_bool(r, row, now_col + 2);
}

static void read_owner(const PGresult *r, int col, int now_col, struct owner *o)
{
	tgi_pg_read_owner_at(r, 0, col, now_col, o);
}

static void approval_row(const PGresult *r, int i, tgi_approval_row *a);

enum claim_step { CLAIM_DONE, CLAIM_AGAIN, CLAIM_MARK, CLAIM_FORGED };

/* Decide from the row read back (ST_IDEM_GET) what the claim answers;
 * CLAIM_MARK: its owner is dead, mark it unknown; CLAIM_FORGED: a done or
 * in_flight row whose MAC (into mac) does not verify, to mark unknown;
 * CLAIM_AGAIN: it went away meanwhile. */
static enum claim_step claim_answer(pg *s, const PGresult *r, const char *scope,
                                    const char *binding, tgi_idem_info *info, char mac[65])
{
	char state[16], bound[65];
	struct owner o;

	if (tgi_pq.ntuples(r) != 1)
		return CLAIM_AGAIN;
	tgi_pg_val_copy(r, 0, 0, info->op_id, sizeof info->op_id);
	tgi_pg_val_copy(r, 0, 1, state, sizeof state);
	read_owner(r, 2, 7, &o);
	tgi_pg_val_copy(r, 0, 6, bound, sizeof bound);
	tgi_pg_val_copy(r, 0, 11, mac, 65);
	int done = !strcmp(state, "done"), flying = !strcmp(state, "in_flight");
	const char *env = done ? tgi_pg_val(r, 0, 10) : NULL;
	if ((done || flying) &&
	    !tgi_mac_idem_ok(&s->base, scope, info->op_id, bound, state, env, mac))
		return CLAIM_FORGED;
	if (binding && bound[0] && strcmp(binding, bound)) {
		/* the same key for a different call: never someone else's result */
		info->state = TGI_IDEM_CONFLICT;
	} else if (done) {
		info->state = TGI_IDEM_DONE;
		info->envelope = env ? tgi_strdup(env) : NULL;
	} else if (flying && tgi_pg_owner_alive(s, &o)) {
		info->state = TGI_IDEM_IN_FLIGHT;
		info->retry_after_s = tgi_retry_after(o.lease_until, o.now);
	} else if (flying) {
		return CLAIM_MARK;
	} else {
		info->state = TGI_IDEM_UNKNOWN;
	}
	return CLAIM_DONE;
}

/* Mark the row found unknown (step CLAIM_MARK or CLAIM_FORGED): 1 marked,
 * 0 it changed meanwhile, -1 error. */
static int claim_mark(pg *s, const char *scope, enum claim_step step, const char *mac,
                      tgi_idem_info *info)
{
	q x;
	tgi_pg_q_init(&x, step == CLAIM_MARK ? ST_IDEM_MARK_UNKNOWN : ST_IDEM_FORGED, NULL);
	tgi_pg_q_text(&x, scope);
	tgi_pg_q_text(&x, info->op_id);
	if (step == CLAIM_FORGED)
		tgi_pg_q_text(&x, *mac ? mac : NULL);
	int rc = tgi_pg_run(s, &x, 1);
	int marked = rc == 0 && tgi_pg_rows(&x) == 1;
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return -1;
	if (marked) {
		info->state = TGI_IDEM_UNKNOWN;
		info->unverified = step == CLAIM_FORGED;
	}
	return marked;
}

/* A claim taken in the transaction spend opened: spend the approval
 * (locked by the same round trip, its row in r) and commit, or roll back
 * both.  0 (info says which), -1 error. */
static int claim_spend(pg *s, const PGresult *r, const tgi_approval_spend *spend,
                       tgi_idem_info *info)
{
	tgi_approval_row row;
	char mac[65] = "";
	int ok = tgi_pq.ntuples(r) == 1;
	if (ok) {
		approval_row(r, 0, &row);
		tgi_pg_val_copy(r, 0, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		ok = tgi_approval_spendable(&row, spend->principal, spend->binding,
		                            tgi_pg_val_i64(r, 0, 15, 0)) &&
		     tgi_mac_approval_ok(&s->base, &row, mac);
	}
	if (!ok) {
		tgi_pg_tx_abort(s);   /* the claim goes with it */
		info->state = TGI_IDEM_UNAPPROVED;
		return 0;
	}
	tgi_mac_approval(&s->base, &row, "used", mac);
	q qs[2];
	tgi_pg_q_init(&qs[0], ST_APPROVAL_USED, NULL);
	tgi_pg_q_text(&qs[0], row.id);
	tgi_pg_q_text(&qs[0], mac);
	tgi_pg_q_init(&qs[1], ST_ADHOC, "COMMIT");
	int rc = tgi_pg_run(s, qs, 2);
	int used = rc == 0 && tgi_pg_rows(&qs[0]) == 1;
	tgi_pg_q_free(qs, 2);
	s->tx = 0;
	if (rc < 0)
		return -1;
	if (!used) {   /* cannot be: the row was locked approved; refuse all the same */
		info->state = TGI_IDEM_UNAPPROVED;
		return 0;
	}
	return 0;
}

/* The claim itself and the row read back, in one round trip; when the
 * owner of the row found is dead, its row turns unknown (only if it is
 * still that in_flight row: else look again).  With spend, the same trip
 * opens a transaction and locks the approval, spent (claim_spend) only
 * when the claim was taken. */
static int claim(pg *s, const char *scope, const char *op_id, const char *binding, int lease_s,
                 const tgi_approval_spend *spend, tgi_idem_info *info)
{
	char mine[65];
	tgi_mac_idem(&s->base, scope, op_id, binding, "in_flight", NULL, mine);
	for (int tries = 0; tries < PG_CLAIM_TRIES; tries++) {
		q qs[4];
		int n = 0;
		if (spend)
			tgi_pg_q_init(&qs[n++], ST_ADHOC, "BEGIN");
		q *c = &qs[n++];
		tgi_pg_q_init(c, ST_IDEM_CLAIM, NULL);
		int64_t start = tgi_self_start(&s->me);   /* first: it also renews me.host */
		tgi_pg_q_text(c, scope);
		tgi_pg_q_text(c, op_id);
		tgi_pg_q_text(c, s->me.host);
		tgi_pg_q_i64(c, (int64_t)getpid());
		tgi_pg_q_i64(c, start);
		tgi_pg_q_i64(c, s->backend_start);
		tgi_pg_q_i64(c, lease_s > 0 ? lease_s : 1);
		tgi_pg_q_text(c, binding);
		tgi_pg_q_text(c, *mine ? mine : NULL);
		q *g = &qs[n++];
		tgi_pg_q_init(g, ST_IDEM_GET, NULL);
		tgi_pg_q_text(g, scope);
		q *a = NULL;
		if (spend) {
			a = &qs[n++];
			tgi_pg_q_init(a, ST_APPROVAL_LOCK, NULL);
			tgi_pg_q_text(a, spend->id);
		}
		if (tgi_pg_run(s, qs, n) < 0) {
			tgi_pg_q_free(qs, n);
			return -1;
		}
		s->tx = spend != NULL;
		if (tgi_pg_rows(c) == 1) {
			info->state = TGI_IDEM_CLAIMED;
			tgi_snprintf(info->op_id, sizeof info->op_id, "%s", op_id);
			int rc = spend ? claim_spend(s, a->res, spend, info) : 0;
			tgi_pg_q_free(qs, n);
			if (rc == 0 && info->state == TGI_IDEM_CLAIMED)
				tgi_pg_held_add(s, scope, op_id, HELD_RUNNING);
			return rc;
		}
		char mac[65] = "";
		enum claim_step step = claim_answer(s, g->res, scope, binding, info, mac);
		tgi_pg_q_free(qs, n);
		int rc = step == CLAIM_MARK || step == CLAIM_FORGED
		         ? claim_mark(s, scope, step, mac, info) : step == CLAIM_DONE;
		if (rc == 1 && spend && tgi_pg_run_sql(s, "COMMIT") < 0)
			rc = -1;
		if (rc != 1 && spend)
			tgi_pg_tx_abort(s);
		s->tx = 0;
		if (rc < 0) {
			free(info->envelope);
			info->envelope = NULL;
			return -1;
		}
		if (rc == 1)
			return 0;
		free(info->envelope);
		memset(info, 0, sizeof *info);
	}
	tgi_snprintf(s->why, sizeof s->why, "the scope changed hands %d times while it was claimed",
	             PG_CLAIM_TRIES);
	return -1;
}

static int pg_idem_claim(tgi_store *base, const char *scope, const char *op_id, const char *binding,
                         int lease_s, const tgi_approval_spend *spend, tgi_idem_info *info,
                         char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char qs[96];

	memset(info, 0, sizeof *info);
	if (tgi_check_scope(scope, err, errlen) < 0 || tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	if (claim(s, scope, op_id, binding, lease_s, spend, info) < 0) {
		/* the claim may have committed before the connection broke: its
		 * call is refused, so the next connection deletes it */
		if (s->transient && s->sent)
			tgi_pg_held_add(s, scope, op_id, HELD_DELETE);
		free(info->envelope);
		memset(info, 0, sizeof *info);
		return tgi_pg_fail(s, err, errlen, "cannot claim idempotency scope '%s'",
		                   tgi_quoted(qs, sizeof qs, scope));
	}
	return 0;
}

/* The op was applied: make its stored envelope say so, or, when the
 * process that ran it died before writing a row, insert a minimal one so
 * that a replay has something to return.  Inside the caller's
 * transaction; the statement is added to qs. */
static int mark_applied(pg *s, const char *op_id, const char *scope, q *x, char **kept)
{
	q e;
	tgi_pg_q_init(&e, ST_OP_ENVELOPE, NULL);
	tgi_pg_q_text(&e, op_id);
	if (tgi_pg_run(s, &e, 1) < 0) {
		tgi_pg_q_free(&e, 1);
		return -1;
	}
	int had_row = tgi_pg_rows(&e) == 1;
	char *out;
	const char *text = had_row ? tgi_pg_val(e.res, 0, 0) : NULL;
	int made_env = tgi_applied_envelope(op_id, had_row, text, &out);
	if (made_env == 0) {
		/* not an object: leave the stored text as it is */
		*kept = text ? tgi_strdup(text) : NULL;
		tgi_pg_q_free(&e, 1);
		return 0;
	}
	tgi_pg_q_free(&e, 1);
	if (made_env < 0) {
		tgi_snprintf(s->why, sizeof s->why, "out of memory");
		return -1;
	}
	*kept = tgi_strdup(out);
	if (had_row) {
		tgi_pg_q_init(x, ST_OP_SET_ENVELOPE, NULL);
		tgi_pg_q_text(x, op_id);
		tgi_pg_q_owned(x, out);
		return 1;
	}
	int64_t made = tgi_uuid_ms(op_id); /* the op started when its id was made, not now */
	tgi_pg_q_init(x, ST_OP_INSERT, NULL);
	tgi_pg_q_text(x, op_id);
	for (int i = 0; i < 4; i++)
		tgi_pg_q_text(x, NULL);           /* call_id, session, tool, principal */
	tgi_pg_q_text(x, "persisted");
	tgi_pg_q_text(x, NULL);               /* error_kind */
	tgi_pg_q_text(x, scope);
	tgi_pg_q_text(x, NULL);               /* args_redacted */
	tgi_pg_q_text(x, NULL);               /* args_sha256 */
	tgi_pg_q_owned(x, out);
	tgi_pg_q_i64(x, made >= 0 ? made : tgi_unix_ms());
	tgi_pg_q_f64(x, 0.0);
	tgi_pg_q_text(x, NULL);               /* loop */
	return 1;
}

/* The claim of op_id, locked in the caller's transaction; *none when it
 * has no unsettled one. */
static int resolve_find(pg *s, const char *op_id, char *scope, size_t cap, char state[16],
                        char bound[65], struct owner *o, int *none)
{
	q x;
	tgi_pg_q_init(&x, ST_IDEM_BY_OP, NULL);
	tgi_pg_q_text(&x, op_id);
	int rc = tgi_pg_run(s, &x, 1);
	*none = rc == 0 && tgi_pg_rows(&x) != 1;
	if (rc == 0 && !*none) {
		tgi_pg_val_copy(x.res, 0, 0, scope, cap);
		tgi_pg_val_copy(x.res, 0, 1, state, 16);
		read_owner(x.res, 2, 6, o);
		tgi_pg_val_copy(x.res, 0, 9, bound, 65);
	}
	tgi_pg_q_free(&x, 1);
	return rc;
}

/* The rest of a resolve, after the n queries in qs (at most 1 of 5):
 * the envelope marked applied when it was (and then, with a claim on
 * scope, the scope done, its MAC over bound and that envelope), or the
 * claim released; the operator's word as an event, COMMIT.  The queries
 * are freed.  0, or -1 (the caller aborts). */
static int resolve_commit(pg *s, const char *op_id, const char *scope, const char *bound,
                          int applied, q *qs, int n)
{
	int rc = 0;
	if (applied) {
		char *kept = NULL;
		rc = mark_applied(s, op_id, scope, &qs[n], &kept);
		if (rc > 0)
			n++;
		if (rc >= 0 && scope)
			settle_q(s, &qs[n++], scope, op_id, TGI_SETTLE_DONE, bound, kept);
		free(kept);
	} else if (scope) {
		settle_q(s, &qs[n++], scope, op_id, TGI_SETTLE_RELEASE, NULL, NULL);
	}
	tgi_event ev = { .type = "tool.call.resolved", .ts_ms = tgi_unix_ms() };
	char *data = tgi_strdup(applied ? "{\"applied\":true}" : "{\"applied\":false}");
	if (rc >= 0) {
		events_q(&qs[n++], op_id, &ev, 1, &data);
		tgi_pg_q_init(&qs[n++], ST_ADHOC, "COMMIT");
		rc = tgi_pg_run(s, qs, n);
		if (rc == 0)
			s->tx = 0;
	}
	tgi_pg_q_free(qs, n);
	free(data);
	return rc < 0 ? -1 : 0;
}

/* Resolve an op that holds no claim, in the caller's transaction: one
 * whose outcome is unknown is settled by the record of the operator's
 * word alone (and its envelope marked applied, when it was). */
static int resolve_claimless(pg *s, const char *op_id, int applied, char *err, size_t errlen)
{
	q qs[5];
	tgi_pg_q_init(&qs[0], ST_OP_UNSETTLED, NULL);
	tgi_pg_q_text(&qs[0], op_id);
	int rc = tgi_pg_run(s, qs, 1);
	int found = rc == 0 && tgi_pg_rows(&qs[0]) == 1;
	tgi_pg_q_free(qs, 1);
	if (rc < 0) {
		tgi_pg_tx_abort(s);
		return tgi_pg_fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	if (!found) {
		tgi_pg_tx_abort(s);
		tgi_snprintf(err, errlen, "op '%s' has no unsettled idempotency claim and no unknown "
		             "outcome; nothing to resolve", op_id);
		return -1;
	}
	if (resolve_commit(s, op_id, NULL, NULL, applied, qs, 0) < 0) {
		tgi_pg_tx_abort(s);
		return tgi_pg_fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	return 0;
}

static int pg_op_resolve(tgi_store *base, const char *op_id, int applied, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char scope[TGI_SCOPE_MAX + 1], state[16], bound[65] = "";
	struct owner o;
	int none = 0;

	if (tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	if (tgi_pg_tx_begin(s, "BEGIN") < 0)
		return tgi_pg_fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	if (resolve_find(s, op_id, scope, sizeof scope, state, bound, &o, &none) < 0) {
		tgi_pg_tx_abort(s);
		return tgi_pg_fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	if (none)     /* no claim (a call without a key): an op whose outcome is unknown? */
		return resolve_claimless(s, op_id, applied, err, errlen);
	/* unknown too: one marked so by another gate may still run */
	if (tgi_pg_owner_alive(s, &o)) {
		char host[128];
		tgi_pg_tx_abort(s);
		tgi_snprintf(err, errlen,
		             "op '%s' is still running (pid %lld on host '%s'); wait for it to finish before resolving it",
		             op_id, (long long)o.pid, tgi_owner_host_shown(o.host, host, sizeof host));
		return -1;
	}
	q qs[5];
	if (resolve_commit(s, op_id, scope, bound, applied, qs, 0) < 0) {
		tgi_pg_tx_abort(s);
		return tgi_pg_fail(s, err, errlen, "cannot resolve op '%s'", op_id);
	}
	tgi_pg_held_drop(s, scope, op_id);
	return 0;
}

/* ---- approvals ---- */

static int pg_approval_add(tgi_store *base, tgi_approval_row *row, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	if (tgi_approval_new(row, err, errlen) < 0)
		return -1;
	tgi_pg_q_init(&x, ST_APPROVAL_INSERT, NULL);
	tgi_pg_q_text(&x, row->id);
	tgi_pg_q_text(&x, row->op_id[0] ? row->op_id : NULL);
	tgi_pg_q_text(&x, row->tool);
	tgi_pg_q_text(&x, row->principal);
	tgi_pg_q_text(&x, row->binding);
	tgi_pg_q_text(&x, row->args);
	tgi_pg_q_text(&x, row->reason);
	tgi_pg_q_i64(&x, row->expires_ms - row->created_ms);
	tgi_pg_q_text(&x, row->plan);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1) {
		row->created_ms = tgi_pg_val_i64(x.res, 0, 0, row->created_ms);
		row->expires_ms = tgi_pg_val_i64(x.res, 0, 1, row->expires_ms);
	}
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot queue an approval for '%s'", row->tool);
	return 0;
}

/* One statement: pending -> approved/denied (or expired, past its
 * expiry on the server's clock, as every approval statement reads it:
 * gates' clocks may differ), with NOTIFY toolgate_approvals at commit.
 * When it changed nothing, the row says why. */
static int pg_approval_decide(tgi_store *base, const char *id, int approve, const char *by,
                              const char *reason, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char state[16] = "", when[32];
	int64_t expires = 0;
	q x;

	if (tgi_check_approval_id(id, err, errlen) < 0)
		return -1;
	/* the decision on the server's clock, read back, then its MAC (made
	 * here: the key never goes to the database) in the same transaction */
	q qs[2];
	tgi_pg_q_init(&qs[0], ST_ADHOC, "BEGIN");
	tgi_pg_q_init(&qs[1], ST_APPROVAL_DECIDE, NULL);
	tgi_pg_q_text(&qs[1], id);
	tgi_pg_q_text(&qs[1], approve ? "approved" : "denied");
	tgi_pg_q_text(&qs[1], by);
	tgi_pg_q_text(&qs[1], reason);
	int rc = tgi_pg_run(s, qs, 2);
	s->tx = rc == 0;
	int changed = rc == 0 && tgi_pg_rows(&qs[1]) == 1;
	tgi_approval_row row;
	if (changed) {
		approval_row(qs[1].res, 0, &row);
		tgi_approval_row_clear(&row);
		memcpy(state, row.state, sizeof state);
		expires = row.expires_ms;
	}
	tgi_pg_q_free(qs, 2);
	if (rc == 0 && changed && strcmp(state, "expired")) {
		char mac[65];
		tgi_mac_approval(base, &row, state, mac);
		tgi_pg_q_init(&qs[0], ST_APPROVAL_MAC, NULL);
		tgi_pg_q_text(&qs[0], id);
		tgi_pg_q_text(&qs[0], tgi_mac_col(mac));
		tgi_pg_q_init(&qs[1], ST_ADHOC, "COMMIT");
		rc = tgi_pg_run(s, qs, 2);
		tgi_pg_q_free(qs, 2);
	} else if (rc == 0) {
		rc = tgi_pg_run_sql(s, "COMMIT");
	}
	if (rc < 0)
		tgi_pg_tx_abort(s);
	s->tx = 0;
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot decide approval '%s'", id);
	if (changed && !strcmp(state, "expired")) {
		tgi_iso8601(expires, when);
		tgi_snprintf(err, errlen, "approval '%s' expired at %s", id, when);
		return -1;
	}
	if (changed)
		return 0;
	tgi_pg_q_init(&x, ST_APPROVAL_STATE, NULL);
	tgi_pg_q_text(&x, id);
	rc = tgi_pg_run(s, &x, 1);
	int found = rc == 0 && tgi_pg_rows(&x) == 1;
	if (found)
		tgi_pg_val_copy(x.res, 0, 0, state, sizeof state);
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot decide approval '%s'", id);
	if (!found)
		tgi_snprintf(err, errlen, "no approval '%s'", id);
	else
		tgi_snprintf(err, errlen, "approval '%s' is already %s", id, state);
	return -1;
}

/* The newest live row whose decision verifies answers (a pending one has
 * none to verify); the rows before it that did not verify are counted in
 * *forged.  Nothing is spent here. */
static int pg_approval_find(tgi_store *base, const char *binding, const char *principal,
                            int *found, char id[37], int *forged, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char state[16] = "", got[37] = "", mac[65];
	tgi_approval_row row;
	q x;

	tgi_pg_q_init(&x, ST_APPROVAL_LIVE, NULL);
	tgi_pg_q_text(&x, binding);
	tgi_pg_q_text(&x, principal);
	int rc = tgi_pg_run(s, &x, 1);
	for (int i = 0; rc == 0 && i < tgi_pg_rows(&x); i++) {
		approval_row(x.res, i, &row);
		tgi_pg_val_copy(x.res, i, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		if (strcmp(row.state, "pending") && !tgi_mac_approval_ok(base, &row, mac)) {
			(*forged)++;
			continue;
		}
		memcpy(state, row.state, sizeof state);
		memcpy(got, row.id, sizeof got);
		break;
	}
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot look for an approval");
	tgi_approval_answer(state, got, found, id);
	return 0;
}

/* The approval id, and only it, becomes used if it may (store.h): locked
 * and read in one round trip, checked and its MAC verified here, spent
 * and committed in a second. */
static int pg_approval_use(tgi_store *base, const char *id, const char *principal,
                           const char *binding, int *used, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	tgi_approval_row row;
	char mac[65] = "";
	q qs[2];
	*used = 0;
	tgi_pg_q_init(&qs[0], ST_ADHOC, "BEGIN");
	tgi_pg_q_init(&qs[1], ST_APPROVAL_LOCK, NULL);
	tgi_pg_q_text(&qs[1], id);
	int rc = tgi_pg_run(s, qs, 2);
	s->tx = rc == 0;
	int ok = rc == 0 && tgi_pg_rows(&qs[1]) == 1;
	if (ok) {
		approval_row(qs[1].res, 0, &row);
		tgi_pg_val_copy(qs[1].res, 0, 14, mac, sizeof mac);
		tgi_approval_row_clear(&row);
		ok = tgi_approval_spendable(&row, principal, binding, tgi_pg_val_i64(qs[1].res, 0, 15, 0));
		if (ok && !tgi_mac_approval_ok(base, &row, mac)) {
			ok = 0;
			*used = -1;
		}
	}
	tgi_pg_q_free(qs, 2);
	if (rc == 0 && ok) {
		tgi_mac_approval(base, &row, "used", mac);
		tgi_pg_q_init(&qs[0], ST_APPROVAL_USED, NULL);
		tgi_pg_q_text(&qs[0], id);
		tgi_pg_q_text(&qs[0], mac);
		tgi_pg_q_init(&qs[1], ST_ADHOC, "COMMIT");
		rc = tgi_pg_run(s, qs, 2);
		*used = rc == 0 && tgi_pg_rows(&qs[0]) == 1;
		tgi_pg_q_free(qs, 2);
	} else if (rc == 0) {
		tgi_pg_tx_abort(s);
	}
	if (rc < 0) {
		*used = 0;
		tgi_pg_tx_abort(s);
	}
	s->tx = 0;
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot use approval '%s'", id);
	return 0;
}

static void approval_row(const PGresult *r, int i, tgi_approval_row *a)
{
	const char *t;
	memset(a, 0, sizeof *a);
	tgi_pg_val_copy(r, i, 0, a->id, sizeof a->id);
	tgi_pg_val_copy(r, i, 1, a->op_id, sizeof a->op_id);
	tgi_pg_val_copy(r, i, 2, a->tool, sizeof a->tool);
	tgi_pg_val_copy(r, i, 3, a->principal, sizeof a->principal);
	tgi_pg_val_copy(r, i, 4, a->binding, sizeof a->binding);
	tgi_pg_val_copy(r, i, 5, a->state, sizeof a->state);
	t = tgi_pg_val(r, i, 6);
	a->args = t ? tgi_strdup(t) : NULL;
	t = tgi_pg_val(r, i, 7);
	a->reason = t ? tgi_strdup(t) : NULL;
	a->created_ms = tgi_pg_val_i64(r, i, 8, 0);
	a->expires_ms = tgi_pg_val_i64(r, i, 9, 0);
	tgi_pg_val_copy(r, i, 10, a->decided_by, sizeof a->decided_by);
	t = tgi_pg_val(r, i, 11);
	a->plan = t ? tgi_strdup(t) : NULL;
	a->decided_ms = tgi_pg_val_i64(r, i, 12, 0);
	t = tgi_pg_val(r, i, 13);
	a->decided_reason = t ? tgi_strdup(t) : NULL;
}

static int pg_approval_list(tgi_store *base, const char *state, tgi_approval_row **out, size_t *n,
                            char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	*out = NULL;
	*n = 0;
	tgi_pg_q_init(&x, ST_APPROVAL_LIST, NULL);
	tgi_pg_q_text(&x, state);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc < 0) {
		tgi_pg_q_free(&x, 1);
		return tgi_pg_fail(s, err, errlen, "cannot list approvals");
	}
	size_t len = (size_t)tgi_pg_rows(&x);
	tgi_approval_row *v = len ? tgi_xcalloc(len, sizeof *v) : NULL;
	for (size_t i = 0; i < len; i++)
		approval_row(x.res, (int)i, &v[i]);
	tgi_pg_q_free(&x, 1);
	*out = v;
	*n = len;
	return 0;
}

static int pg_approval_get(tgi_store *base, const char *id, tgi_approval_row *row, int *found,
                           char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	memset(row, 0, sizeof *row);
	*found = 0;
	if (!id || !tgi_uuid_ok(id))
		return 0; /* not an approval id: there is none */
	tgi_pg_q_init(&x, ST_APPROVAL_ONE, NULL);
	tgi_pg_q_text(&x, id);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0 && tgi_pg_rows(&x) == 1) {
		char mac[65];
		approval_row(x.res, 0, row);
		tgi_pg_val_copy(x.res, 0, 14, mac, sizeof mac);
		row->verified = tgi_mac_approval_ok(base, row, mac);
		*found = 1;
	}
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot read approval %s", id);
	return 0;
}

/* ---- pins of bridged MCP tools ---- */

/* The pinned digest of name into pinned[65]; *found 0 when there is none,
 * 1 when its MAC verifies, 2 when it does not. */
static int pin_get(pg *s, const char *name, char pinned[65], int *found)
{
	char mac[65];
	q x;
	tgi_pg_q_init(&x, ST_PIN_GET, NULL);
	tgi_pg_q_text(&x, name);
	int rc = tgi_pg_run(s, &x, 1);
	*found = rc == 0 && tgi_pg_rows(&x) == 1;
	if (*found) {
		tgi_pg_val_copy(x.res, 0, 0, pinned, 65);
		tgi_pg_val_copy(x.res, 0, 1, mac, sizeof mac);
		if (!tgi_mac_pin_ok(&s->base, name, pinned, mac))
			*found = 2;
	}
	tgi_pg_q_free(&x, 1);
	return rc;
}

/* A pin's state: one that does not verify is CHANGED whatever it says. */
static tgi_pin_state pin_state(const char *pinned, int found, const char *digest)
{
	return found == 1 && !strcmp(pinned, digest) ? TGI_PIN_SAME : TGI_PIN_CHANGED;
}

/* Read first (the common case: it is there and the same); a tool seen for
 * the first time is pinned by an insert that loses to another process's
 * (which is then read). */
static int pg_pin_check(tgi_store *base, const char *name, const char *digest, tgi_pin_state *st,
                        char pinned[65], char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char qn[80];
	int found = 0;

	pinned[0] = '\0';
	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	if (pin_get(s, name, pinned, &found) < 0)
		return tgi_pg_fail(s, err, errlen, "cannot pin the description of '%s'",
		                   tgi_quoted(qn, sizeof qn, name));
	if (found) {
		*st = pin_state(pinned, found, digest);
		return 0;
	}
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	q x;
	tgi_pg_q_init(&x, ST_PIN_ADD, NULL);
	tgi_pg_q_text(&x, name);
	tgi_pg_q_text(&x, digest);
	tgi_pg_q_i64(&x, tgi_unix_ms());
	tgi_pg_q_text(&x, tgi_mac_col(mac));
	int rc = tgi_pg_run(s, &x, 1);
	int added = rc == 0 && tgi_pg_rows(&x) == 1;
	tgi_pg_q_free(&x, 1);
	if (rc == 0 && !added)
		rc = pin_get(s, name, pinned, &found);
	if (rc == 0 && !added && !found) {
		tgi_snprintf(s->why, sizeof s->why, "the pin was neither added nor found");
		rc = -1;
	}
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot pin the description of '%s'",
		                   tgi_quoted(qn, sizeof qn, name));
	if (added) {
		tgi_snprintf(pinned, 65, "%s", digest);
		*st = TGI_PIN_NEW;
	} else {
		*st = pin_state(pinned, found, digest);
	}
	return 0;
}

static int pg_pin_set(tgi_store *base, const char *name, const char *digest, char *err,
                      size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char qn[80];
	q x;
	if (tgi_check_pin(name, digest, err, errlen) < 0)
		return -1;
	char mac[65];
	tgi_mac_pin(base, name, digest, mac);
	tgi_pg_q_init(&x, ST_PIN_SET, NULL);
	tgi_pg_q_text(&x, name);
	tgi_pg_q_text(&x, digest);
	tgi_pg_q_i64(&x, tgi_unix_ms());
	tgi_pg_q_text(&x, tgi_mac_col(mac));
	int rc = tgi_pg_run(s, &x, 1);
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot move the pin of '%s'",
		                   tgi_quoted(qn, sizeof qn, name));
	return 0;
}

/* ---- an agent's conversation (toolgate agent) ---- */

/* Under a lock of the session (two appends at once number their entries
 * one after the other), in one round trip: the entries go after the last
 * one, unless the conversation is in another API (then nothing is added
 * and that API is returned). */
static int pg_messages_append(tgi_store *base, const char *session, const char *api,
                              const json_t *entries, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char qn[80], have[TGI_MSG_API_MAX] = "", **text;
	size_t n;
	if (tgi_check_messages(session, api ? api : "", err, errlen) < 0 ||
	    tgi_messages_encode(entries, &text, &n, err, errlen) < 0)
		return -1;
	if (!n)
		return 0;
	q qs[2];
	tgi_pg_q_init(&qs[0], ST_MSG_LOCK, NULL);
	tgi_pg_q_text(&qs[0], session);
	tgi_pg_q_init(&qs[1], ST_MSG_APPEND, NULL);
	tgi_pg_q_text(&qs[1], session);
	tgi_pg_q_text(&qs[1], api);
	tgi_pg_q_i64(&qs[1], tgi_unix_ms());
	tgi_pg_q_owned(&qs[1], tgi_pg_text_array((const char *const *)text, n));
	int rc = tgi_pg_run(s, qs, 2);
	if (rc == 0 && tgi_pg_rows(&qs[1]) == 1)
		tgi_pg_val_copy(qs[1].res, 0, 0, have, sizeof have);
	tgi_pg_q_free(qs, 2);
	tgi_texts_free(text, n);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot save the conversation of session '%s'",
		                   tgi_quoted(qn, sizeof qn, session));
	if (have[0] && strcmp(have, api)) {
		tgi_snprintf(err, errlen, "session '%s' is a conversation in the %s API, not %s",
		             tgi_quoted(qn, sizeof qn, session), have, api);
		return -1;
	}
	return 0;
}

static int pg_messages(tgi_store *base, const char *session, json_t **out, char api[32],
                       char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char qn[80];
	q x;
	*out = NULL;
	api[0] = '\0';
	if (tgi_check_messages(session, NULL, err, errlen) < 0)
		return -1;
	tgi_pg_q_init(&x, ST_MSG_LIST, NULL);
	tgi_pg_q_text(&x, session);
	if (tgi_pg_run(s, &x, 1) < 0) {
		tgi_pg_q_free(&x, 1);
		return tgi_pg_fail(s, err, errlen, "cannot read the conversation of session '%s'",
		                   tgi_quoted(qn, sizeof qn, session));
	}
	json_t *arr = json_array();
	for (int i = 0; i < tgi_pg_rows(&x); i++) {
		const char *entry = tgi_pg_val(x.res, i, 1);
		json_t *v = entry ? json_loads(entry, JSON_DECODE_ANY, NULL) : NULL;
		if (!v) {
			tgi_pg_q_free(&x, 1);
			json_decref(arr);
			api[0] = '\0';
			tgi_snprintf(err, errlen, "the conversation of session '%s' holds an entry that is "
			             "not JSON", tgi_quoted(qn, sizeof qn, session));
			return -1;
		}
		if (!api[0])
			tgi_pg_val_copy(x.res, i, 0, api, TGI_MSG_API_MAX);
		json_array_append_new(arr, v);
	}
	tgi_pg_q_free(&x, 1);
	*out = arr;
	return 0;
}

/* ---- eval runs (toolgate eval) ---- */

/* One statement (a transaction of its own); a rate not given (NAN) is
 * sent as NULL by tgi_pg_q_f64. */
static int pg_eval_put(tgi_store *base, const tgi_eval_row *r, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	const char *text[] = { r->provider, r->api, r->model, r->profile, r->manifest, r->suite };
	q x;
	tgi_pg_q_init(&x, ST_EVAL_INSERT, NULL);
	tgi_pg_q_text(&x, r->id);
	tgi_pg_q_i64(&x, r->ts_ms);
	for (size_t i = 0; i < TGI_ARRAY_LEN(text); i++)
		tgi_pg_q_text(&x, text[i]);
	tgi_pg_q_i64(&x, r->cases);
	tgi_pg_q_i64(&x, r->runs);
	for (int i = 0; i < 5; i++)
		tgi_pg_q_f64(&x, r->score[i]);
	tgi_pg_q_text(&x, r->report);
	int rc = tgi_pg_run(s, &x, 1);
	tgi_pg_q_free(&x, 1);
	if (rc < 0)
		return tgi_pg_fail(s, err, errlen, "cannot keep eval run %s", r->id);
	return 0;
}

/* Row i of r, as eval_list gives it. */
static json_t *eval_row_json(const PGresult *r, int i)
{
	tgi_eval_row e = {
		.id = tgi_pg_val(r, i, 0), .ts_ms = tgi_pg_val_i64(r, i, 1, 0),
		.provider = tgi_pg_val(r, i, 2), .api = tgi_pg_val(r, i, 3), .model = tgi_pg_val(r, i, 4),
		.profile = tgi_pg_val(r, i, 5), .manifest = tgi_pg_val(r, i, 6), .suite = tgi_pg_val(r, i, 7),
		.cases = tgi_pg_val_i64(r, i, 8, 0), .runs = tgi_pg_val_i64(r, i, 9, 0), .report = tgi_pg_val(r, i, 15),
	};
	for (int k = 0; k < 5; k++)
		e.score[k] = tgi_pg_val(r, i, 10 + k) ? tgi_pg_val_f64(r, i, 10 + k) : NAN;
	return tgi_eval_json(&e);
}

static int pg_eval_list(tgi_store *base, const char *model, int64_t limit, json_t **out,
                        char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	q x;
	tgi_pg_q_init(&x, model ? ST_EVAL_LIST_MODEL : ST_EVAL_LIST, NULL);
	if (model)
		tgi_pg_q_text(&x, model);
	tgi_pg_q_i64(&x, limit);
	if (tgi_pg_run(s, &x, 1) < 0) {
		tgi_pg_q_free(&x, 1);
		return tgi_pg_fail(s, err, errlen, "cannot read the eval runs");
	}
	json_t *arr = json_array();
	for (int i = 0; i < tgi_pg_rows(&x); i++)
		json_array_append_new(arr, eval_row_json(x.res, i));
	tgi_pg_q_free(&x, 1);
	*out = arr;
	return 0;
}

/* ---- events written on their own ---- */

static int pg_event(tgi_store *base, const char *op_id, tgi_event *ev, char *err, size_t errlen)
{
	pg *s = tgi_pg_enter(base);
	char *data;
	if (tgi_event_encode(op_id, ev, &data, err, errlen) < 0)
		return -1;
	tgi_event e = *ev;
	if (!e.ts_ms)
		e.ts_ms = tgi_unix_ms();
	q x;
	events_q(&x, op_id, &e, 1, &data);
	int rc = tgi_pg_run(s, &x, 1);
	if (rc == 0)
		ev->seq = tgi_pg_val_i64(x.res, 0, 0, 0);
	tgi_pg_q_free(&x, 1);
	free(data);
	if (rc < 0) {
		char qt[80];
		return tgi_pg_fail(s, err, errlen, "cannot record event '%s'",
		                   tgi_quoted(qt, sizeof qt, ev->type));
	}
	return 0;
}

const tgi_store_impl tgi_pg_impl = {
	.kind = "postgres",
	.shared = 1,
	.close = tgi_pg_close,
	.transient = tgi_pg_transient,
	.schema_version = tgi_pg_schema_version,
	.migrate = tgi_pg_migrate,
	.record = pg_record,
	.session_manifest = pg_session_manifest,
	.loop_window = pg_loop_window,
	.bucket_get = pg_bucket_get,
	.bucket_take = pg_bucket_take,
	.idem_claim = pg_idem_claim,
	.op_resolve = pg_op_resolve,
	.approval_add = pg_approval_add,
	.approval_decide = pg_approval_decide,
	.approval_find = pg_approval_find,
	.approval_use = pg_approval_use,
	.approval_get = pg_approval_get,
	.approval_list = pg_approval_list,
	.pin_check = pg_pin_check,
	.pin_set = pg_pin_set,
	.messages_append = pg_messages_append,
	.messages = pg_messages,
	.eval_put = pg_eval_put,
	.eval_list = pg_eval_list,
	.event = pg_event,
	.ops = tgi_pg_ops,
	.events = tgi_pg_events,
	.last_seq = tgi_pg_last_seq,
	.stats = tgi_pg_stats,
	.export = tgi_pg_export,
	.unknown = tgi_pg_unknown,
	.shown = pg_shown,
	.ident_bound = pg_ident_bound,
	.ident_get = pg_ident_get,
	.ident_put = pg_ident_put,
	.watch_open = tgi_pg_watch_open,
	.watch_wait = tgi_pg_watch_wait,
	.watch_close = tgi_pg_watch_close,
};
