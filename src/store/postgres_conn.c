/*
 * postgres_conn.c — the PostgreSQL ledger's connection (postgres.c says
 * how the backend works): a statement's parameters and results, the
 * sentences a failure makes (never with the password), connecting and
 * reconnecting with backoff, one pipelined round trip, the claims held
 * across a reconnect, and the handle's open and close.
 *
 * Owns: the connection, the prepared statements' names and texts on it,
 * the reconnect backoff, the held claims and the handle's lifetime.
 * Must not: know what a statement means (postgres.c and the others send
 * them), or show a password.
 */
#include "store/postgres_int.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct { const char *sql; int nparams; } st_def[ST__COUNT] = {
	PG_STORE_SQL(PG_ST_SQL)
};
/* ---- statements and their parameters ---- */

void tgi_pg_q_init(q *x, int st, const char *sql)
{
	memset(x, 0, sizeof *x);
	x->st = st;
	x->sql = sql;
}

void tgi_pg_q_text(q *x, const char *v)
{
	if (x->n < PG_MAXP)
		x->v[x->n] = v;
	x->n++;
}

/* Takes v (malloc'd): freed with the statement. */
void tgi_pg_q_owned(q *x, char *v)
{
	if (x->n < PG_MAXP) {
		x->owned[x->n] = v;
		x->v[x->n] = v;
	} else {
		free(v);
	}
	x->n++;
}

void tgi_pg_q_i64(q *x, int64_t v)
{
	if (x->n < PG_MAXP) {
		snprintf(x->num[x->n], sizeof x->num[x->n], "%lld", (long long)v);
		x->v[x->n] = x->num[x->n];
	}
	x->n++;
}

/* A double as PostgreSQL reads it back exactly; not finite: NULL (as
 * SQLite stores a NaN). */
void tgi_pg_q_f64(q *x, double v)
{
	if (x->n < PG_MAXP) {
		snprintf(x->num[x->n], sizeof x->num[x->n], "%.17g", v);
		x->v[x->n] = isfinite(v) ? x->num[x->n] : NULL;
	}
	x->n++;
}

/* The results only: the statements can be run again. */
void tgi_pg_q_results_free(q *qs, int n)
{
	for (int i = 0; i < n; i++) {
		if (qs[i].res)
			tgi_pq.clear(qs[i].res);
		qs[i].res = NULL;
	}
}

void tgi_pg_q_free(q *qs, int n)
{
	tgi_pg_q_results_free(qs, n);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < PG_MAXP; j++) {
			free(qs[i].owned[j]);
			qs[i].owned[j] = NULL;
		}
	}
}

/* Result accessors: a NULL value reads as NULL, 0, or def. */
const char *tgi_pg_val(const PGresult *r, int row, int col)
{
	return tgi_pq.getisnull(r, row, col) ? NULL : tgi_pq.getvalue(r, row, col);
}

int64_t tgi_pg_val_i64(const PGresult *r, int row, int col, int64_t def)
{
	const char *t = tgi_pg_val(r, row, col);
	return t ? (int64_t)strtoll(t, NULL, 10) : def;
}

double tgi_pg_val_f64(const PGresult *r, int row, int col)
{
	const char *t = tgi_pg_val(r, row, col);
	return t ? strtod(t, NULL) : 0.0;
}

int tgi_pg_val_bool(const PGresult *r, int row, int col)
{
	const char *t = tgi_pg_val(r, row, col);
	return t && t[0] == 't';
}

void tgi_pg_val_copy(const PGresult *r, int row, int col, char *out, size_t cap)
{
	const char *t = tgi_pg_val(r, row, col);
	tgi_snprintf(out, cap, "%s", t ? t : "");
}

int tgi_pg_rows(const q *x)
{
	return x->res ? tgi_pq.ntuples(x->res) : 0;
}

/* A text[] literal of n strings (NULL elements allowed), for unnest():
 * each element quoted, with backslash and quote escaped.  Caller frees. */
char *tgi_pg_text_array(const char *const *v, size_t n)
{
	size_t len = 3;
	for (size_t i = 0; i < n; i++)
		len += v[i] ? 2 * strlen(v[i]) + 3 : 5;
	char *out = tgi_xmalloc(len), *p = out;
	*p++ = '{';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		if (!v[i]) {
			memcpy(p, "NULL", 4);
			p += 4;
			continue;
		}
		*p++ = '"';
		for (const char *c = v[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return out;
}

char *tgi_pg_int_array(const int64_t *v, size_t n)
{
	char *out = tgi_xmalloc(3 + n * 22), *p = out;
	*p++ = '{';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%lld", i ? "," : "", (long long)v[i]);
	*p++ = '}';
	*p = '\0';
	return out;
}

/* ---- sentences ---- */

/* Copy s into out as one line fit for a sentence: whitespace runs (libpq's
 * messages span lines) become one space, the password is masked, control
 * characters are stripped. */
void tgi_pg_one_line(const char *password, char *out, size_t cap, const char *msg)
{
	char flat[PG_WHY_MAX];
	size_t j = 0;
	int space = 0;
	for (const char *c = msg ? msg : ""; *c && j + 1 < sizeof flat; c++) {
		if (*c == '\n' || *c == '\t' || *c == '\r' || *c == ' ') {
			space = j > 0;
			continue;
		}
		if (space && j + 2 < sizeof flat)
			flat[j++] = ' ';
		space = 0;
		flat[j++] = *c;
	}
	flat[j] = '\0';
	/* libpq does not echo passwords, but a sentence is shown anywhere */
	size_t pl = password ? strlen(password) : 0;
	if (pl >= 4) {
		char *at;
		while ((at = strstr(flat, password)) != NULL) {
			memmove(at + 3, at + pl, strlen(at + pl) + 1);
			memcpy(at, "***", 3);
		}
	}
	tgi_sanitize(out, cap, flat);
}

/* Why the last statement failed, from its result (or the connection). */
void tgi_pg_result_why(pg *s, const PGresult *r)
{
	const char *primary = r ? tgi_pq.resultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *code = r ? tgi_pq.resultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *cons = r ? tgi_pq.resultErrorField(r, PG_DIAG_CONSTRAINT_NAME) : NULL;
	const char *msg = primary ? primary
	                : r && *tgi_pq.resultErrorMessage(r) ? tgi_pq.resultErrorMessage(r)
	                : s->conn ? tgi_pq.errorMessage(s->conn) : "no connection";
	tgi_pg_one_line(s->password, s->why, sizeof s->why, msg);
	tgi_snprintf(s->sqlstate, sizeof s->sqlstate, "%s", code ? code : "");
	tgi_snprintf(s->constraint, sizeof s->constraint, "%s", cons ? cons : "");
}

/* Is the failure in r (NULL: libpq gave no result) the database being
 * out of reach: the connection broken, or the server shutting down or
 * killing this backend (SQLSTATE class 08, 57P01..57P03)?  Only for a
 * failure. */
int tgi_pg_conn_error(const pg *s, const PGresult *r)
{
	if (!s->conn || tgi_pq.status(s->conn) != CONNECTION_OK)
		return 1;
	const char *code = r ? tgi_pq.resultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (!code)
		return !r; /* no result at all: the stream broke off */
	return !strncmp(code, "08", 2) || !strcmp(code, "57P01") || !strcmp(code, "57P02") ||
	       !strcmp(code, "57P03");
}

/* The connection is gone: drop it, and wait a backoff before the next
 * reconnect (100 ms after a working connection, doubling after each
 * failed reconnect, up to 5 s).  detail is why, already one line. */
void tgi_pg_conn_lost(pg *s, const char *detail)
{
	tgi_snprintf(s->lost_why, sizeof s->lost_why, "%s",
	             detail && *detail ? detail : "the connection was lost");
	tgi_snprintf(s->why, sizeof s->why, "the ledger database is unreachable (%s)", s->lost_why);
	s->sqlstate[0] = '\0';
	s->constraint[0] = '\0';
	s->transient = 1;
	s->lost = 1;
	if (s->conn)
		tgi_pq.finish(s->conn);
	s->conn = NULL;
	s->prepared = 0;
	s->backoff_ms = !s->backoff_ms ? PG_BACKOFF_MIN_MS
	              : s->backoff_ms >= PG_BACKOFF_MAX_MS / 2 ? PG_BACKOFF_MAX_MS
	                                                       : 2 * s->backoff_ms;
	s->retry_at = tgi_now_ms() + s->backoff_ms;
}

/* The sentence of a call refused while the connection is lost. */
static void unreachable(pg *s, double wait_ms)
{
	tgi_snprintf(s->why, sizeof s->why,
	             "the ledger database is unreachable (%s); retrying in %d ms", s->lost_why,
	             wait_ms > 0 ? (int)ceil(wait_ms) : 0);
	s->sqlstate[0] = '\0';
	s->constraint[0] = '\0';
	s->transient = 1;
}

/* Fail with "<what>: <why>" (the last failure). */
__attribute__((format(printf, 4, 5)))
int tgi_pg_fail(pg *s, char *err, size_t errlen, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tgi_snprintf(err, errlen, "%s: %s", what, s->why[0] ? s->why : "unknown error");
	return -1;
}

/* Every public function starts here: transient says only what the last
 * call met. */
pg *tgi_pg_enter(tgi_store *base)
{
	pg *s = (pg *)base;
	TGI_STORE_HELD(base);
	s->transient = 0;
	return s;
}

/* ---- connecting ---- */

/* Connect to url: connect_timeout, application_name, keepalives, the TCP
 * user timeout (a server host that vanished does not hold a call, and the
 * handle's lock, for the kernel's quarter of an hour) and the client
 * encoding are ours unless the URL says otherwise (it comes after them,
 * expanded).  A reconnect (reconnect_s > 0) gives that connect timeout
 * the last word instead: a gate that lost its server, or a watch waiting
 * out a timeout, must not wait ten seconds a try.  NULL with why (one
 * line) on failure. */
PGconn *tgi_pg_connect_url(const char *url, const char *password, int reconnect_s, char *why,
                           size_t cap)
{
	char rs[16];
	const char *keys[] = {
		"connect_timeout", "application_name", "client_encoding", "keepalives",
		"keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
		"dbname", reconnect_s > 0 ? "connect_timeout" : NULL, NULL,
	};
	snprintf(rs, sizeof rs, "%d", reconnect_s);
	const char *vals[] = { PG_CONNECT_TIMEOUT, "toolgate", "UTF8", "1", "10", "5", "3",
		               PG_TCP_USER_TIMEOUT, url, rs, NULL };
	PGconn *c = tgi_pq.connectdbParams(keys, vals, 1);
	if (!c) {
		tgi_snprintf(why, cap, "out of memory");
		return NULL;
	}
	if (tgi_pq.status(c) != CONNECTION_OK) {
		tgi_pg_one_line(password, why, cap, tgi_pq.errorMessage(c));
		tgi_pq.finish(c);
		return NULL;
	}
	return c;
}

void tgi_pg_no_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* A connection made without blocking past deadline (monotonic ms), for
 * the close's last attempt: libpq's connect timeout is per host and at
 * least two seconds, this is the whole.  NULL when it is not made in time. */
static PGconn *connect_by(const char *url, double deadline)
{
	const char *keys[] = { "application_name", "client_encoding", "tcp_user_timeout", "dbname",
		               NULL };
	const char *vals[] = { "toolgate", "UTF8", "2000", url, NULL };
	PGconn *c = tgi_pq.connectStartParams(keys, vals, 1);
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (c && tgi_pq.status(c) != CONNECTION_BAD && st != PGRES_POLLING_FAILED) {
		if (st == PGRES_POLLING_OK) {
			tgi_pq.setNoticeProcessor(c, tgi_pg_no_notices, NULL);
			return c;
		}
		int left = (int)ceil(deadline - tgi_now_ms());
		struct pollfd p = { .fd = tgi_pq.socket(c),
			            .events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
		if (left <= 0 || p.fd < 0)
			break;
		int rc = poll(&p, 1, left);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0)
			st = tgi_pq.connectPoll(c);
	}
	if (c)
		tgi_pq.finish(c);
	return NULL;
}

/* Run one statement on c without blocking past deadline.  0, or -1 when
 * it failed or the time ran out (c is then not fit for more). */
static int exec_by(PGconn *c, const char *sql, const q *x, double deadline)
{
	int ok = 1;
	if (!tgi_pq.sendQueryParams(c, sql, x->n, NULL, x->v, NULL, NULL, 0))
		return -1;
	for (;;) {
		if (!tgi_pq.consumeInput(c))
			return -1;
		while (!tgi_pq.isBusy(c)) {
			PGresult *r = tgi_pq.getResult(c);
			if (!r)
				return ok ? 0 : -1;
			ExecStatusType st = tgi_pq.resultStatus(r);
			ok &= st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
			tgi_pq.clear(r);
		}
		int left = (int)ceil(deadline - tgi_now_ms());
		struct pollfd p = { .fd = tgi_pq.socket(c), .events = POLLIN };
		if (left <= 0 || p.fd < 0)
			return -1;
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -1;
	}
}

/* "database 'db' at host:port" from what the connection used (or, before
 * one, the URL said). */
static void describe_target(pg *s, PGconn *c, const char *host, const char *port, const char *db)
{
	char h[128], p[16], d[128];
	const char *ch = c ? tgi_pq.host(c) : NULL, *cp = c ? tgi_pq.port(c) : NULL;
	const char *cd = c ? tgi_pq.db(c) : NULL;
	tgi_quoted(h, sizeof h, ch && *ch ? ch : host && *host ? host : "localhost");
	tgi_quoted(p, sizeof p, cp && *cp ? cp : port && *port ? port : "5432");
	tgi_quoted(d, sizeof d, cd && *cd ? cd : db && *db ? db : "(default)");
	tgi_snprintf(s->shown, sizeof s->shown, "database '%s' at %s:%s", d, h, p);
}

/* The session every connection of a handle has: synchronous_commit on
 * (a claim or a record is on disk when it is reported), no notices, and
 * our backend's start time for claim owners. */
static int session_setup(pg *s)
{
	tgi_pq.setNoticeProcessor(s->conn, tgi_pg_no_notices, NULL);
	PGresult *r = tgi_pq.exec(s->conn,
	                          "SET synchronous_commit = on; SET client_min_messages = warning;"
	                          " SELECT " PG_START_US("backend_start")
	                          " FROM pg_stat_get_activity(pg_backend_pid())");
	int ok = r && tgi_pq.resultStatus(r) == PGRES_TUPLES_OK && tgi_pq.ntuples(r) == 1;
	if (ok)
		s->backend_start = tgi_pg_val_i64(r, 0, 0, 0);
	else
		tgi_pg_result_why(s, r);
	if (r)
		tgi_pq.clear(r);
	return ok ? 0 : -1;
}

static int run_raw(pg *s, q *qs, int n);

static const char *const held_how[] = {
	[HELD_RUNNING] = "rebind", [HELD_DELETE] = "delete", [HELD_UNKNOWN] = "unknown",
};

/* The statement that settles the held claims (only the finished ones
 * unless running), with this process and backend as the owner a running
 * one moves to.  Returns how many claims it names. */
static size_t held_q(pg *s, int running, q *x)
{
	const char *scopes[PG_HELD_MAX], *ops[PG_HELD_MAX], *hows[PG_HELD_MAX];
	size_t n = 0;
	for (size_t i = 0; i < s->nheld; i++) {
		if (s->held[i].state == HELD_RUNNING && !running)
			continue;
		scopes[n] = s->held[i].scope;
		ops[n] = s->held[i].op_id;
		hows[n++] = held_how[s->held[i].state];
	}
	tgi_pg_q_init(x, ST_IDEM_SETTLE_HELD, NULL);
	tgi_pg_q_owned(x, tgi_pg_text_array(scopes, n));
	tgi_pg_q_owned(x, tgi_pg_text_array(ops, n));
	tgi_pg_q_owned(x, tgi_pg_text_array(hows, n));
	tgi_pg_q_i64(x, s->backend_start);
	tgi_pg_q_i64(x, (int64_t)getpid());
	tgi_self_start(&s->me);
	tgi_pg_q_text(x, s->me.host);
	return n;
}

/* Forget the held claims a settle statement took care of (all but the
 * running ones). */
static void held_forget_settled(pg *s)
{
	size_t keep = 0;
	for (size_t i = 0; i < s->nheld; i++) {
		if (s->held[i].state == HELD_RUNNING)
			s->held[keep++] = s->held[i];
		else
			free(s->held[i].scope);
	}
	s->nheld = keep;
}

/* On a (new) connection, in one statement: running claims now belong to
 * its backend, finished ones are settled (see struct held).  Best effort:
 * only the connection lost again is a failure (-1); a settle that failed
 * otherwise is tried again by the next connection or the close. */
int tgi_pg_settle_held(pg *s)
{
	if (!s->nheld)
		return 0;
	q x;
	int sent = s->sent;   /* the caller's statements were, or were not, sent */
	held_q(s, 1, &x);
	int rc = run_raw(s, &x, 1);
	tgi_pg_q_free(&x, 1);
	s->sent = sent;
	if (rc == 0)
		held_forget_settled(s);
	return rc < 0 && s->lost ? -1 : 0;
}

/* Is the connection, idle since the last call, still there?  A server
 * restarted, this backend killed, an idle timeout: the server said why
 * (when it could) and closed it, so the socket turned readable.  Read what
 * came; when something did, give the close that follows it a moment.
 * 0: it is there (or nothing says otherwise); -1 with why: it is gone. */
static int conn_idle_ok(pg *s, char *why, size_t cap)
{
	int wait_ms = 0;
	for (int round = 0; round < 2; round++) {
		struct pollfd p = { .fd = tgi_pq.socket(s->conn), .events = POLLIN };
		int rc = p.fd < 0 ? 1 : poll(&p, 1, wait_ms);
		if (rc <= 0)
			return 0;   /* nothing came (or a signal: the call finds out) */
		if (p.fd < 0 || !tgi_pq.consumeInput(s->conn) ||
		    tgi_pq.status(s->conn) != CONNECTION_OK) {
			tgi_pg_one_line(s->password, why, cap, tgi_pq.errorMessage(s->conn));
			return -1;
		}
		wait_ms = PG_IDLE_CLOSE_MS;
	}
	return 0;
}

/*
 * Before any statement: a connection that died while idle is made again
 * at once (no call has failed on it); a lost one once its backoff has
 * passed; until then, and when that fails, -1 (transient).  Inside an
 * explicit transaction nothing is made again: the transaction went with
 * the connection, and the caller aborts it.
 */
int tgi_pg_conn_ready(pg *s)
{
	char why[PG_WHY_MAX];
	if (!s->lost) {
		if (s->tx || conn_idle_ok(s, why, sizeof why) == 0)
			return 0;
		tgi_pg_conn_lost(s, why);
		s->retry_at = 0;
	}
	if (s->tx) {
		s->transient = 1;   /* s->why says it was lost */
		return -1;
	}
	double now = tgi_now_ms();
	if (now < s->retry_at) {
		unreachable(s, s->retry_at - now);
		return -1;
	}
	s->conn = tgi_pg_connect_url(s->url, s->password, s->reconnect_s, why, sizeof why);
	if (s->conn) {
		s->lost = 0;
		s->prepared = 0;
		if (session_setup(s) == 0 && tgi_pg_settle_held(s) == 0) {
			s->backoff_ms = 0;
			s->transient = 0;
			return 0;
		}
		if (!s->lost)      /* the session could not be set up */
			tgi_pg_conn_lost(s, s->why);
	} else {
		tgi_pg_conn_lost(s, why);
	}
	unreachable(s, s->backoff_ms);
	return -1;
}

/* ---- one round trip ---- */

static const char *st_name(int st, char buf[16])
{
	snprintf(buf, 16, "tg%d", st);
	return buf;
}

/* Send the statements (preparing those not yet prepared on this
 * connection, once each) and a Sync.  -1 when the connection broke while
 * sending. */
static int send_all(pg *s, q *qs, int n, int *prep)
{
	char name[16];
	uint64_t parsing = 0; /* Parse sent in this trip */
	for (int i = 0; i < n; i++) {
		q *x = &qs[i];
		int ok;
		prep[i] = 0;
		if (x->st == ST_ADHOC) {
			ok = tgi_pq.sendQueryParams(s->conn, x->sql, x->n, NULL, x->v, NULL, NULL, 0);
		} else {
			uint64_t bit = UINT64_C(1) << x->st;
			if (!((s->prepared | parsing) & bit)) {
				if (!tgi_pq.sendPrepare(s->conn, st_name(x->st, name), st_def[x->st].sql,
				                        st_def[x->st].nparams, NULL))
					return -1;
				parsing |= bit;
				prep[i] = 1;
			}
			ok = tgi_pq.sendQueryPrepared(s->conn, st_name(x->st, name), x->n, x->v, NULL,
			                              NULL, 0);
		}
		if (!ok)
			return -1;
	}
	return tgi_pq.pipelineSync(s->conn) ? 0 : -1;
}

/* Read the results up to the Sync: each statement's first result into its
 * q (a Parse's result checked on the way), a NULL after each.  The first
 * failure is the one remembered.  -1 when the stream broke off. */
static int read_all(pg *s, q *qs, int n, const int *prep, PGresult **first_bad)
{
	int item = 0, part = prep[0] ? 0 : 1; /* part 0: the Parse of item, 1: its execution */
	int guard = 4 * n + 8;
	for (;;) {
		PGresult *r = tgi_pq.getResult(s->conn);
		if (!r) {
			if (tgi_pq.status(s->conn) != CONNECTION_OK || --guard < 0)
				return -1;
			if (part == 0) {
				part = 1;
			} else if (++item < n) {
				part = prep[item] ? 0 : 1;
			}
			continue;
		}
		ExecStatusType st = tgi_pq.resultStatus(r);
		if (st == PGRES_PIPELINE_SYNC) {
			tgi_pq.clear(r);
			return 0;
		}
		int bad = st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK;
		if (bad && !*first_bad && st != PGRES_PIPELINE_ABORTED) {
			*first_bad = r;
			r = NULL;
		} else if (item < n && part == 1 && !qs[item].res) {
			qs[item].res = r;
			r = NULL;
		} else if (item < n && part == 0 && !bad) {
			s->prepared |= UINT64_C(1) << qs[item].st;
		}
		if (r)
			tgi_pq.clear(r);
	}
}

/*
 * Run qs (n of them) in one round trip, as one implicit transaction (or
 * inside the caller's BEGIN).  0: every statement succeeded (each q->res
 * holds its result; tgi_pg_q_free clears them).  -1: s->why says why (the
 * connection lost: transient, and the next call reconnects).  Without the
 * reconnect step: tgi_pg_settle_held uses it while reconnecting.
 */
static int run_raw(pg *s, q *qs, int n)
{
	int prep[PG_MAXQ];
	PGresult *bad = NULL;

	TGI_STORE_HELD(&s->base);   /* one round trip at a time on the connection */

	if (n > PG_MAXQ) {
		tgi_snprintf(s->why, sizeof s->why, "too many statements in one round trip");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (qs[i].n > PG_MAXP || (qs[i].st != ST_ADHOC && qs[i].n != st_def[qs[i].st].nparams)) {
			tgi_snprintf(s->why, sizeof s->why, "a statement has the wrong number of parameters");
			return -1;
		}
	}
	if (!tgi_pq.enterPipelineMode(s->conn)) {
		tgi_pg_result_why(s, NULL);
		tgi_pg_conn_lost(s, s->why);
		return -1;
	}
	s->sent = 1;
	int rc = send_all(s, qs, n, prep);
	if (rc == 0)
		rc = read_all(s, qs, n, prep, &bad);
	if (rc < 0 || (bad && tgi_pg_conn_error(s, bad))) {
		tgi_pg_result_why(s, bad);
		if (bad)
			tgi_pq.clear(bad);
		tgi_pg_conn_lost(s, s->why);
		return -1;
	}
	tgi_pq.exitPipelineMode(s->conn);
	if (bad) {
		tgi_pg_result_why(s, bad);
		tgi_pq.clear(bad);
		/* an explicit transaction the failure left open is rolled back */
		if (tgi_pq.transactionStatus(s->conn) != PQTRANS_IDLE) {
			PGresult *r = tgi_pq.exec(s->conn, "ROLLBACK");
			if (r)
				tgi_pq.clear(r);
		}
		s->tx = 0;
		return -1;
	}
	s->why[0] = '\0';
	return 0;
}

int tgi_pg_run(pg *s, q *qs, int n)
{
	s->sent = 0;
	if (tgi_pg_conn_ready(s) < 0)
		return -1;
	return run_raw(s, qs, n);
}

/* One ad hoc statement without parameters (transaction control). */
int tgi_pg_run_sql(pg *s, const char *sql)
{
	q x;
	tgi_pg_q_init(&x, ST_ADHOC, sql);
	int rc = tgi_pg_run(s, &x, 1);
	tgi_pg_q_free(&x, 1);
	return rc;
}

/* Open an explicit transaction (sql: BEGIN ...): until tgi_pg_tx_commit or
 * tgi_pg_tx_abort, a lost connection is not made again under it. */
int tgi_pg_tx_begin(pg *s, const char *sql)
{
	int rc = tgi_pg_run_sql(s, sql);
	s->tx = rc == 0;
	return rc;
}

int tgi_pg_tx_commit(pg *s)
{
	int rc = tgi_pg_run_sql(s, "COMMIT");
	s->tx = 0;
	return rc;
}

/* Roll back the explicit transaction a failure left open (if the
 * connection is still there). */
void tgi_pg_tx_abort(pg *s)
{
	s->tx = 0;
	if (s->conn && !s->lost && tgi_pq.transactionStatus(s->conn) != PQTRANS_IDLE) {
		char why[PG_WHY_MAX];
		tgi_snprintf(why, sizeof why, "%s", s->why); /* the failure says why, not this */
		PGresult *r = tgi_pq.exec(s->conn, "ROLLBACK");
		if (r)
			tgi_pq.clear(r);
		tgi_snprintf(s->why, sizeof s->why, "%s", why);
	}
}

/* ---- held claims ---- */

/* Remember (or change) what becomes of the claim of op_id on scope. */
void tgi_pg_held_add(pg *s, const char *scope, const char *op_id, enum held_state state)
{
	for (size_t i = 0; i < s->nheld; i++) {
		if (!strcmp(s->held[i].op_id, op_id) && !strcmp(s->held[i].scope, scope)) {
			s->held[i].state = state;
			return;
		}
	}
	if (s->nheld == PG_HELD_MAX) {
		/* the oldest running claim only misses a move to a new backend
		 * (and turns unknown to others sooner); a finished one, to be
		 * settled, goes only when all are */
		size_t i = 0;
		while (i < s->nheld && s->held[i].state != HELD_RUNNING)
			i++;
		if (i == s->nheld)
			i = 0;
		free(s->held[i].scope);
		memmove(&s->held[i], &s->held[i + 1], (s->nheld - i - 1) * sizeof *s->held);
		s->nheld--;
	}
	struct held *h = &s->held[s->nheld++];
	h->scope = tgi_strdup(scope);
	tgi_snprintf(h->op_id, sizeof h->op_id, "%s", op_id);
	h->state = state;
}

/* Any claim held that is not running (to settle before the handle goes)? */
static int held_unsettled(const pg *s)
{
	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].state != HELD_RUNNING)
			return 1;
	return 0;
}

void tgi_pg_held_drop(pg *s, const char *scope, const char *op_id)
{
	for (size_t i = 0; i < s->nheld; i++) {
		if (!strcmp(s->held[i].op_id, op_id) && !strcmp(s->held[i].scope, scope)) {
			free(s->held[i].scope);
			memmove(&s->held[i], &s->held[i + 1], (s->nheld - i - 1) * sizeof *s->held);
			s->nheld--;
			return;
		}
	}
}

/* ---- open and close ---- */

/* Claims this handle could not settle (a claim whose commit reply was
 * lost, a record that failed with the connection): one attempt at them
 * before the handle goes, on its connection or a new one, bounded by
 * PG_CLOSE_WAIT_MS whatever the network does.  Left as they are, they
 * would turn unknown once this process is gone (a refused call's claim
 * too, though nothing ran under it), and only after their lease on
 * another host when the server restarted meanwhile. */
static void settle_at_close(pg *s)
{
	if (!held_unsettled(s))
		return;
	double deadline = tgi_now_ms() + PG_CLOSE_WAIT_MS;
	PGconn *own = NULL, *c = s->lost ? NULL : s->conn;
	if (!c)
		c = own = connect_by(s->url, deadline);
	if (c) {
		q x;
		held_q(s, 0, &x);
		exec_by(c, st_def[ST_IDEM_SETTLE_HELD].sql, &x, deadline);
		tgi_pg_q_free(&x, 1);
	}
	if (own)
		tgi_pq.finish(own);
}

void tgi_pg_close(tgi_store *base)
{
	pg *s = (pg *)base;
	settle_at_close(s);
	if (s->conn)
		tgi_pq.finish(s->conn);
	for (size_t i = 0; i < s->nheld; i++)
		free(s->held[i].scope);
	if (s->url) {
		explicit_bzero(s->url, strlen(s->url));
		free(s->url);
	}
	explicit_bzero(s->password, sizeof s->password);
	tgi_store_fini(&s->base);
	free(s);
}

/* What the URL says, for sentences before a connection exists, and its
 * password (to keep it out of them).  -1 with err when it is not a URL
 * libpq can read; its message is not shown (it may quote the password). */
static int parse_url(pg *s, const char *url, char *host, char *port, char *db, size_t cap,
                     char *err, size_t errlen)
{
	char *msg = NULL;
	PQconninfoOption *opts = tgi_pq.conninfoParse(url, &msg);
	if (!opts) {
		if (msg)
			tgi_pq.freemem(msg);
		tgi_snprintf(err, errlen,
		             "the ledger URL is not a PostgreSQL connection URL libpq can read (postgresql://user@host:port/database?options)");
		return -1;
	}
	if (msg)
		tgi_pq.freemem(msg);
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "password"))
			tgi_snprintf(s->password, sizeof s->password, "%s", o->val);
		else if (!strcmp(o->keyword, "host"))
			tgi_snprintf(host, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "port"))
			tgi_snprintf(port, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "dbname"))
			tgi_snprintf(db, cap, "%s", o->val);
		else if (!strcmp(o->keyword, "connect_timeout") && atoi(o->val) > 0 &&
		         atoi(o->val) < s->reconnect_s)
			s->reconnect_s = atoi(o->val);
	}
	tgi_pq.conninfoFree(opts);
	return 0;
}

/* At open: bring the schema up to date (unless told not to), or refuse a
 * newer one. */
static int open_schema(pg *s, char *err, size_t errlen)
{
	int v;
	if (tgi_pg_schema_version(&s->base, &v, err, errlen) < 0)
		return -1;
	if (v < 0 || v > TGI_STORE_SCHEMA_VERSION)
		return tgi_pg_schema_ahead(s, v, err, errlen);
	if (v == TGI_STORE_SCHEMA_VERSION || s->no_migrate)
		return 0;
	return tgi_pg_migrate_from(s, v, TGI_STORE_SCHEMA_VERSION, 0, NULL, NULL, err, errlen);
}

int tgi_pg_open(const char *url, int flags, tgi_store **out, char *err, size_t errlen)
{
	char host[256] = "", port[32] = "", db[256] = "", why[PG_WHY_MAX];

	*out = NULL;
	if (tgi_pq_load(err, errlen) < 0)
		return -1;
	pg *s = tgi_xcalloc(1, sizeof *s);
	tgi_store_init(&s->base, &tgi_pg_impl);
	s->no_migrate = flags & TGI_STORE_NO_MIGRATE ? 1 : 0;
	s->reconnect_s = PG_RECONNECT_S;
	tgi_self_init(&s->me);
	if (parse_url(s, url, host, port, db, sizeof host, err, errlen) < 0) {
		tgi_pg_close(&s->base);
		return -1;
	}
	s->url = tgi_strdup(url);
	describe_target(s, NULL, host, port, db);
	s->conn = tgi_pg_connect_url(url, s->password, 0, why, sizeof why);
	if (!s->conn) {
		tgi_snprintf(err, errlen, "cannot connect to the ledger %s: %s", s->shown, why);
		tgi_pg_close(&s->base);
		return -1;
	}
	describe_target(s, s->conn, host, port, db);
	if (session_setup(s) < 0) {
		tgi_snprintf(err, errlen, "cannot set up the connection to the ledger %s: %s", s->shown,
		             s->why);
		tgi_pg_close(&s->base);
		return -1;
	}
	if (open_schema(s, err, errlen) < 0) {
		tgi_pg_close(&s->base);
		return -1;
	}
	s->transient = 0;
	*out = &s->base;
	return 0;
}

int tgi_pg_transient(const tgi_store *base)
{
	return ((const pg *)base)->transient;
}
