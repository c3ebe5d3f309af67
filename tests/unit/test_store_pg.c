/*
 * test_store_pg.c — the PostgreSQL ledger (src/store/postgres.c) against a
 * real server, named by $TOOLGATE_TEST_PG (tests/run starts a throwaway
 * cluster and exports it; without it this program fails, saying so).
 *
 * Each case makes its own database (tg_<random>) and drops it.  The store
 * contract of store_contract.h runs on it first, as test_store runs it on
 * SQLite; then what only PostgreSQL does, against store.h and issue 9: one
 * row per migration in toolgate_schema; a connection killed under a handle
 * (transient, the backoff, the reconnect, claims moved to the new backend);
 * an unreachable server named without its password; watches that LISTEN
 * (quiet until something is written, and after their connection is
 * killed quiet again, then woken by the next write); owners judged by
 * their backend (another host's gone, its pid reused, a lease run out);
 * and ops, events, stats, export and eval runs giving exactly what the
 * SQLite ledger gives for the same records.  Then what two reviews found:
 * a connection that died while idle (killed, or the server's idle timeout)
 * found before the next call, which goes through; a record whose
 * connection broke under it sent again on a fresh one, written once; a
 * claim whose record failed settled unknown (or deleted) after the
 * reconnect or at once, never moved to the new backend as a live one; a
 * claim whose commit reply was lost deleted by the close; reconnects,
 * watches and the close bounded in time against a server that never
 * answers; owners whose backend went with a server restart judged by
 * their lease, and `ops resolve` judging an unknown claim's owner too.
 *
 * Owns: the databases it makes (dropped at the end of each case) and its
 * temporary directories.  Children of fork() report through exit codes
 * and pipes and leave with _exit(), never through cmocka.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/impl.h"
#include "util/dl.h"
#include "util/util.h"

#include "store_hammer.h"

static const char *base_url; /* $TOOLGATE_TEST_PG */

/* A store call that must succeed: its sentence (in err) shown if not. */
#define OK(call)                                                      \
	do {                                                          \
		if ((call) != 0)                                      \
			fail_msg("%s: %s", #call, err);               \
	} while (0)

struct fx {
	char       db[40];      /* tg_<random> */
	char       where[1024]; /* base_url with that database */
	tgi_store *s;           /* open on where, or NULL */
	PGconn    *sql;         /* a plain connection to the database, for looking */
	char       tmp[64];     /* a temporary directory, or "" */
	tgi_store *lite;        /* an SQLite ledger in it, or NULL */
};

#define CX_PG 1
#include "store_contract.h"

#define BINDING_A DIGEST_A
#define BINDING_B DIGEST_B

/* ---- a connection of the test's own ---- */

static PGconn *pq_connect(const char *url)
{
	const char *keys[] = { "dbname", NULL };
	const char *vals[] = { url, NULL };
	PGconn *c = tgi_pq.connectdbParams(keys, vals, 1);
	if (tgi_pq.status(c) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", tgi_pq.errorMessage(c));
		tgi_pq.finish(c);
		return NULL;
	}
	return c;
}

/* Run sql (several statements allowed); fail the test on an error.  The
 * first value of the last statement's first row into out (if any). */
static void sqlx(PGconn *c, const char *sql, char *out, size_t cap)
{
	PGresult *r = tgi_pq.exec(c, sql);
	ExecStatusType st = tgi_pq.resultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, tgi_pq.resultErrorMessage(r));
	if (out) {
		snprintf(out, cap, "%s", tgi_pq.ntuples(r) ? tgi_pq.getvalue(r, 0, 0) : "");
	}
	tgi_pq.clear(r);
}

__attribute__((format(printf, 2, 3)))
static long long sql_num(PGconn *c, const char *fmt, ...)
{
	char sql[1024], out[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlx(c, sql, out, sizeof out);
	return strtoll(out, NULL, 10);
}

/* base_url with its database path replaced by db. */
static void url_with_db(char *out, size_t cap, const char *db)
{
	const char *auth = strstr(base_url, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;
	const char *query = strchr(auth ? auth + 3 : base_url, '?');
	size_t head = path ? (size_t)(path - base_url) : query ? (size_t)(query - base_url) : strlen(base_url);
	snprintf(out, cap, "%.*s/%s%s", (int)head, base_url, db, query ? query : "");
}

/* CREATE DATABASE or DROP DATABASE (drop: 1) db, on the server's own. */
static int admin_run(int drop, const char *db)
{
	char sql[256];
	PGconn *a = pq_connect(base_url);
	if (!a)
		return -1;
	if (drop)
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
	else
		snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
	PGresult *r = tgi_pq.exec(a, sql);
	int ok = tgi_pq.resultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		fprintf(stderr, "%s: %s", sql, tgi_pq.resultErrorMessage(r));
	tgi_pq.clear(r);
	tgi_pq.finish(a);
	return ok ? 0 : -1;
}

/* ---- the backend ---- */

static int setup_empty(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	char hex[17];
	tgi_random_hex(hex, 8);
	snprintf(f->db, sizeof f->db, "tg_%s", hex);
	url_with_db(f->where, sizeof f->where, f->db);
	*state = f;
	if (admin_run(0, f->db) < 0)
		return -1;
	f->sql = pq_connect(f->where);
	return f->sql ? 0 : -1;
}

static int open_store(struct fx *f, int flags)
{
	char err[512];
	if (tgi_store_open(f->where, flags, &f->s, err, sizeof err) < 0) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	return 0;
}

static int setup_store(void **state)
{
	if (setup_empty(state) < 0)
		return -1;
	return open_store(*state, 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	tgi_store_close(f->s);
	tgi_store_close(f->lite);
	if (f->tmp[0])
		nftw(f->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (f->sql)
		tgi_pq.finish(f->sql);
	admin_run(1, f->db);
	free(f);
	return 0;
}

static tgi_store *open_or_die(const char *url)
{
	char err[512];
	tgi_store *s = NULL;
	if (tgi_store_open(url, 0, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	return s;
}

/* The first value of the first row of the last statement of sql, or NULL
 * when there is none (or it is NULL): into out, "" then. */
static int sql_value(PGconn *c, const char *sql, char *out, size_t cap)
{
	PGresult *r = tgi_pq.exec(c, sql);
	ExecStatusType st = tgi_pq.resultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, tgi_pq.resultErrorMessage(r));
	int got = tgi_pq.ntuples(r) > 0 && !tgi_pq.getisnull(r, 0, 0);
	snprintf(out, cap, "%s", got ? tgi_pq.getvalue(r, 0, 0) : "");
	tgi_pq.clear(r);
	return got;
}

static long long cx_num(struct fx *f, const char *fmt, ...)
{
	char sql[4096], out[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (!sql_value(f->sql, sql, out, sizeof out))
		return -1;
	if (!strcmp(out, "t") || !strcmp(out, "f"))
		return out[0] == 't';
	return strtoll(out, NULL, 10);
}

static void cx_text(struct fx *f, char *out, size_t cap, const char *fmt, ...)
{
	char sql[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sql_value(f->sql, sql, out, cap);
}

static void cx_exec(struct fx *f, const char *fmt, ...)
{
	char sql[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlx(f->sql, sql, NULL, 0);
}

static int cx_has_table(struct fx *f, const char *name)
{
	return (int)cx_num(f, "SELECT count(*) FROM pg_tables WHERE tablename = '%s'"
	                   " AND schemaname = current_schema()", name);
}

static int cx_has_index(struct fx *f, const char *name)
{
	return (int)cx_num(f, "SELECT count(*) FROM pg_indexes WHERE indexname = '%s'"
	                   " AND schemaname = current_schema()", name);
}

static int cx_has_column(struct fx *f, const char *table, const char *column)
{
	return (int)cx_num(f, "SELECT count(*) FROM information_schema.columns WHERE table_name = '%s'"
	                   " AND column_name = '%s' AND table_schema = current_schema()", table, column);
}

/* One row per migration, 1..v. */
static void cx_schema_is(struct fx *f, int v)
{
	assert_int_equal(cx_num(f, "SELECT max(version) FROM toolgate_schema"), v);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM toolgate_schema"), v);
	assert_int_equal(cx_num(f, "SELECT min(version) FROM toolgate_schema"), 1);
}

static void cx_schema_ahead(struct fx *f)
{
	cx_exec(f, "INSERT INTO toolgate_schema(version) VALUES (%d)", TGI_STORE_SCHEMA_VERSION + 1);
}

static void cx_integrity(struct fx *f)
{
	(void)f;   /* nothing to check that a transaction did not */
}

/* ---- records ---- */

/* A record of op_id in session (NULL: none), with an envelope naming
 * status. */
static tgi_op_record rec(const char *op_id, const char *tool, const char *status,
                         const char *session, const char *envelope, int64_t started_ms)
{
	tgi_op_record r = {
		.op_id = op_id, .call_id = "call_1", .session = session, .tool = tool,
		.principal = "ci", .status = status, .args_redacted = "{\"x\":1}",
		.args_sha256 = BINDING_A, .envelope = envelope, .started_ms = started_ms,
		.duration_ms = 1.5,
	};
	return r;
}

static void rec_ok(tgi_store *s, const tgi_op_record *r, tgi_event *ev, size_t nev,
                   const char *scope, tgi_idem_settle how)
{
	char err[512] = "";
	if (tgi_store_record(s, r, ev, nev, scope, how, err, sizeof err) < 0)
		fail_msg("record %s: %s", r->op_id, err);
}

/* A fresh op id (UUIDv7, now). */
static char *new_id(char out[37])
{
	tgi_uuidv7(out);
	return out;
}

static void claim_ok(tgi_store *s, const char *scope, const char *op_id, const char *binding,
                     tgi_idem_info *info)
{
	char err[512] = "";
	if (tgi_store_idem_claim(s, scope, op_id, binding, 30, info, err, sizeof err) < 0)
		fail_msg("claim %s: %s", scope, err);
}

/* ---- schema ---- */

/* An empty database migrated at open: one row per migration in
 * toolgate_schema, every table there; a second open leaves it. */
static void test_open_migrates_empty(void **state)
{
	struct fx *f = *state;
	char err[256];
	int v = -1;
	assert_int_equal(open_store(f, 0), 0);
	assert_string_equal(tgi_store_kind(f->s), "postgres");
	assert_int_equal(tgi_store_shared(f->s), 1);
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	/* one row per migration, 1..N */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM toolgate_schema"), TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(sql_num(f->sql, "SELECT min(version) FROM toolgate_schema"), 1);
	/* every table is there */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename IN"
	                                 " ('ops', 'idem', 'events', 'approvals', 'sessions', 'pins',"
	                                 " 'rate_buckets', 'messages', 'event_seq', 'eval_runs')"), 10);
	/* a second open finds it current and leaves it */
	tgi_store *s2 = open_or_die(f->where);
	tgi_store_close(s2);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM toolgate_schema"), TGI_STORE_SCHEMA_VERSION);
}


/* ---- connecting ---- */

static void test_unreachable_named_without_password(void **state)
{
	(void)state;
	char err[1024] = "";
	tgi_store *s = NULL;
	/* port 1 on loopback: nothing listens there */
	const char *url = "postgresql://someone:s3cretPassw0rd@127.0.0.1:1/ledgerdb?connect_timeout=3";
	double t0 = tgi_now_ms();
	assert_int_equal(tgi_store_open(url, 0, &s, err, sizeof err), -1);
	assert_true(tgi_now_ms() - t0 < 5000);
	assert_null(s);
	assert_non_null(strstr(err, "ledgerdb"));
	assert_non_null(strstr(err, "127.0.0.1"));
	assert_non_null(strstr(err, ":1"));
	assert_null(strstr(err, "s3cretPassw0rd"));
	/* a URL libpq cannot read is refused without quoting it */
	url = "postgresql://someone:s3cretPassw0rd@host/db?nosuchoption=1";
	assert_int_equal(tgi_store_open(url, 0, &s, err, sizeof err), -1);
	assert_null(strstr(err, "s3cretPassw0rd"));
	assert_non_null(strstr(err, "URL"));
}

/* The backend of the handle's connection (application_name toolgate, not
 * this test's own connection). */
static long long handle_backend(struct fx *f)
{
	return sql_num(f->sql, "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE datname = '%s'"
	                       " AND application_name = 'toolgate'", f->db);
}

static void kill_backend(struct fx *f, long long pid)
{
	char sql[128], out[16];
	snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", pid);
	sqlx(f->sql, sql, out, sizeof out);
	assert_string_equal(out, "t");
	for (int i = 0; i < 200 && sql_num(f->sql, "SELECT count(*) FROM pg_stat_activity WHERE pid = %lld",
	                                   pid); i++)
		sleep_ms(10);
}

/* New connections to the case's database refused (yes 0), or let in
 * again: a lost connection cannot come back until they are.  (Said on
 * the server's own database: not on the one it is about.) */
static void db_allow(struct fx *f, int yes)
{
	char sql[160];
	PGconn *a = pq_connect(base_url);
	assert_non_null(a);
	snprintf(sql, sizeof sql, "ALTER DATABASE %s WITH ALLOW_CONNECTIONS %s", f->db,
	         yes ? "true" : "false");
	sqlx(a, sql, NULL, 0);
	tgi_pq.finish(a);
}

/* This process as a claim's owner host: hostname/boot id/pid namespace. */
static void self_host(char *out, size_t cap)
{
	char name[256], boot[64];
	self_identity(out, cap, name, boot);
}

static void test_transient_and_reconnect(void **state)
{
	struct fx *f = *state;
	char err[512] = "", op[37], op2[37];
	int64_t seq = -1;
	tgi_idem_info info;

	/* claims held across the reconnect */
	claim_ok(f->s, "key:held", new_id(op), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	claim_ok(f->s, "key:held2", new_id(op2), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	long long old = handle_backend(f);
	assert_true(old > 0);
	assert_int_equal(sql_num(f->sql, "SELECT owner_backend_pid FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:held', 'UTF8')), 'hex')"), old);

	/* the backend killed, and no new connection let in: the claim finds
	 * the connection gone and cannot make another */
	db_allow(f, 0);
	kill_backend(f, old);
	/* a claim meets the lost connection: refused, transient */
	assert_int_equal(tgi_store_idem_claim(f->s, "key:lost", new_id(op2), BINDING_A, 30, &info, err,
	                                      sizeof err), -1);
	assert_int_equal(tgi_store_transient(f->s), 1);
	assert_non_null(strstr(err, "cannot claim idempotency scope 'sha256:"));
	assert_non_null(strstr(err, "unreachable"));
	/* within the backoff: refused at once, saying when it tries again */
	double t0 = tgi_now_ms();
	assert_int_equal(tgi_store_last_seq(f->s, &seq, err, sizeof err), -1);
	assert_true(tgi_now_ms() - t0 < 50);
	assert_int_equal(tgi_store_transient(f->s), 1);
	assert_non_null(strstr(err, "the ledger database is unreachable ("));
	assert_non_null(strstr(err, "retrying in"));
	assert_null(strstr(strstr(err, "retrying in") + 1, "retrying in"));
	/* a failure that is not about the connection is not transient */
	assert_int_equal(tgi_store_op_resolve(f->s, "not-a-uuid", 1, err, sizeof err), -1);
	assert_int_equal(tgi_store_transient(f->s), 0);

	db_allow(f, 1);
	sleep_ms(250);   /* past the backoff (100 ms, then 200 ms after the failed reconnect) */
	assert_int_equal(tgi_store_last_seq(f->s, &seq, err, sizeof err), 0);
	assert_int_equal(tgi_store_transient(f->s), 0);
	long long now_pid = handle_backend(f);
	assert_true(now_pid > 0 && now_pid != old);
	/* the held claims moved to the new backend */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE owner_backend_pid = %lld",
	                         now_pid), 2);
	/* the refused claim left nothing: the scope is free */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:lost', 'UTF8')), 'hex')"), 0);
	claim_ok(f->s, "key:lost", new_id(op2), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);

	/* a record after the reconnect works (statements prepared again) */
	tgi_op_record r = rec(new_id(op2), "echo", "persisted", "s1", "{\"status\":\"persisted\"}",
	                      tgi_unix_ms());
	tgi_event ev = { .type = "tool.call.received", .ts_ms = r.started_ms };
	rec_ok(f->s, &r, &ev, 1, NULL, TGI_SETTLE_NONE);
	assert_true(ev.seq > 0);
	free(info.envelope);
}

/* A record while the connection is gone fails, transient, with no seqs,
 * and nothing is written. */
static void test_record_lost_connection(void **state)
{
	struct fx *f = *state;
	char err[512] = "", op[37];
	db_allow(f, 0);
	kill_backend(f, handle_backend(f));
	tgi_op_record r = rec(new_id(op), "echo", "persisted", NULL, "{}", tgi_unix_ms());
	tgi_event ev = { .type = "tool.call.received", .ts_ms = r.started_ms, .seq = 99 };
	assert_int_equal(tgi_store_record(f->s, &r, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_int_equal(tgi_store_transient(f->s), 1);
	assert_int_equal(ev.seq, 0);
	assert_non_null(strstr(err, "cannot record op"));
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops"), 0);
}

/* ---- connections lost and found again ---- */

/* A backend killed, or closed by the server's idle timeout, while the
 * handle is idle: the next call finds it gone before it sends anything,
 * connects again at once (no backoff) and succeeds. */
static void test_idle_connection_lost(void **state)
{
	struct fx *f = *state;
	char err[512], op[37];
	int64_t seq = -1;
	tgi_idem_info info;

	long long old = handle_backend(f);
	kill_backend(f, old);
	OK(tgi_store_last_seq(f->s, &seq, err, sizeof err));
	assert_int_equal(tgi_store_transient(f->s), 0);
	long long now_pid = handle_backend(f);
	assert_true(now_pid > 0 && now_pid != old);
	claim_ok(f->s, "key:idle", new_id(op), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);

	/* the server closes sessions idle for 300 ms: every call comes after one */
	char sql[160];
	snprintf(sql, sizeof sql, "ALTER DATABASE %s SET idle_session_timeout = '300ms'", f->db);
	sqlx(f->sql, sql, NULL, 0);
	tgi_store *s2 = open_or_die(f->where);
	for (int i = 0; i < 2; i++) {
		sleep_ms(700);
		tgi_op_record r = rec(new_id(op), "echo", "persisted", NULL, "{}", tgi_unix_ms());
		tgi_event ev = { .type = "tool.call.received", .ts_ms = r.started_ms };
		OK(tgi_store_record(s2, &r, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err));
		assert_int_equal(tgi_store_transient(s2), 0);
		assert_true(ev.seq > 0);
	}
	tgi_store_close(s2);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops"), 2);
}

/* A record whose connection breaks under it (its backend killed while it
 * waits for a lock) is sent once more on a fresh connection: it is
 * written once, its events numbered as one record's. */
static void test_record_retried_on_fresh_connection(void **state)
{
	struct fx *f = *state;
	char err[512], op[37];
	int ready[2];
	long long backend = handle_backend(f);
	assert_true(backend > 0);
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* hold the event counter's row, kill the handle's backend while
		 * its record waits for it, then let go */
		char sql[96];
		close(ready[0]);
		PGconn *c = pq_connect(f->where);
		PGresult *r = c ? tgi_pq.exec(c, "BEGIN; SELECT last FROM event_seq FOR UPDATE") : NULL;
		if (!r || tgi_pq.resultStatus(r) != PGRES_TUPLES_OK)
			_exit(1);
		tgi_pq.clear(r);
		close(ready[1]);
		sleep_ms(400);
		snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", backend);
		r = tgi_pq.exec(c, sql);
		int killed = r && tgi_pq.resultStatus(r) == PGRES_TUPLES_OK &&
		             !strcmp(tgi_pq.getvalue(r, 0, 0), "t");
		tgi_pq.clear(r);
		sleep_ms(200);
		r = tgi_pq.exec(c, "ROLLBACK");
		tgi_pq.clear(r);
		tgi_pq.finish(c);
		_exit(killed ? 0 : 2);
	}
	close(ready[1]);
	char ch;
	assert_int_equal(read(ready[0], &ch, 1), 0); /* the lock is held */
	close(ready[0]);
	tgi_op_record r = rec(new_id(op), "echo", "persisted", "s1", "{}", tgi_unix_ms());
	tgi_event ev[2] = {
		{ .type = "tool.call.received", .ts_ms = r.started_ms },
		{ .type = "tool.call.persisted", .ts_ms = r.started_ms },
	};
	OK(tgi_store_record(f->s, &r, ev, 2, NULL, TGI_SETTLE_NONE, err, sizeof err));
	assert_int_equal(wait_child(pid), 0);
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(ev[0].seq, 1);
	assert_int_equal(ev[1].seq, 2);
	assert_true(handle_backend(f) != backend);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM events"), 2);
	assert_int_equal(sql_num(f->sql, "SELECT calls FROM sessions WHERE id = 's1'"), 1);
}

/* The record that settles a claim fails with the connection gone: the
 * call is over (its tool ran, or did not), so after the reconnect its
 * claim is not moved to the new backend as a live one.  One settled done
 * or unknown turns unknown (a retry is told so, and an operator can
 * settle it); one released (nothing applied) is deleted.  A claim whose
 * tool still runs moves to the new backend. */
static void test_failed_settle_after_reconnect(void **state)
{
	struct fx *f = *state;
	char err[512], fin[37], rel[37], run[37], b[37];
	tgi_idem_info info;

	claim_ok(f->s, "key:fin", new_id(fin), BINDING_A, &info);
	claim_ok(f->s, "key:rel", new_id(rel), BINDING_A, &info);
	claim_ok(f->s, "key:run", new_id(run), BINDING_A, &info);
	db_allow(f, 0);
	kill_backend(f, handle_backend(f));
	tgi_op_record r = rec(fin, "write", "persisted", NULL, "{}", tgi_unix_ms());
	assert_int_equal(tgi_store_record(f->s, &r, NULL, 0, "key:fin", TGI_SETTLE_DONE, err,
	                                  sizeof err), -1);
	assert_int_equal(tgi_store_transient(f->s), 1);
	r = rec(rel, "write", "failed", NULL, "{}", tgi_unix_ms());
	assert_int_equal(tgi_store_record(f->s, &r, NULL, 0, "key:rel", TGI_SETTLE_RELEASE, err,
	                                  sizeof err), -1);
	db_allow(f, 1);
	sleep_ms(700);   /* past the backoff */
	int64_t seq;
	OK(tgi_store_last_seq(f->s, &seq, err, sizeof err));
	long long now_pid = handle_backend(f);

	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:fin', 'UTF8')), 'hex')"
	                                 " AND state = 'unknown' AND owner_pid IS NULL"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:rel', 'UTF8')), 'hex')"), 0);
	assert_int_equal(sql_num(f->sql, "SELECT owner_backend_pid FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:run', 'UTF8')), 'hex')"),
	                 now_pid);
	tgi_store *s2 = open_or_die(f->where);
	claim_ok(s2, "key:fin", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, fin);
	claim_ok(s2, "key:rel", b, BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	claim_ok(s2, "key:run", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	/* the operator may settle the finished one (its process still lives) */
	OK(tgi_store_op_resolve(s2, fin, 0, err, sizeof err));
	assert_int_equal(tgi_store_op_resolve(s2, run, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "still running"));
	tgi_store_close(s2);
}

/* The record that settles a claim fails for another reason than the
 * connection (here: the op is already in the ledger): the claim is
 * settled at once, unknown (or deleted when nothing was applied), on the
 * same connection. */
static void test_failed_settle_at_once(void **state)
{
	struct fx *f = *state;
	char err[512], a[37], c[37], b[37];
	tgi_idem_info info;

	claim_ok(f->s, "key:dup", new_id(a), BINDING_A, &info);
	tgi_op_record r = rec(a, "write", "persisted", NULL, "{}", tgi_unix_ms());
	rec_ok(f->s, &r, NULL, 0, NULL, TGI_SETTLE_NONE);
	assert_int_equal(tgi_store_record(f->s, &r, NULL, 0, "key:dup", TGI_SETTLE_DONE, err,
	                                  sizeof err), -1);
	assert_non_null(strstr(err, "already in the ledger"));
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:dup', 'UTF8')), 'hex')"
	                                 " AND state = 'unknown'"), 1);
	claim_ok(f->s, "key:dup", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);

	claim_ok(f->s, "key:dup2", new_id(c), BINDING_A, &info);
	r = rec(c, "write", "failed", NULL, "{}", tgi_unix_ms());
	rec_ok(f->s, &r, NULL, 0, NULL, TGI_SETTLE_NONE);
	assert_int_equal(tgi_store_record(f->s, &r, NULL, 0, "key:dup2", TGI_SETTLE_RELEASE, err,
	                                  sizeof err), -1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:dup2', 'UTF8')), 'hex')"), 0);
}

/* A claim whose commit reply was lost with the connection (its call was
 * refused, so nothing ran under it): the handle closed before it could
 * reconnect makes one short attempt to delete it. */
static void test_close_deletes_lost_claim(void **state)
{
	struct fx *f = *state;
	char err[512], a[37], host[512], sql[1024];
	tgi_idem_info info;
	long long backend = handle_backend(f);

	/* another transaction holds the scope: the claim waits for it, and
	 * its backend is killed meanwhile */
	sqlx(f->sql, "BEGIN", NULL, 0);
	sqlx(f->sql, "INSERT INTO idem(scope, op_id, state, created_ms, updated_ms) VALUES"
	             " ('sha256:' || encode(sha256(convert_to('key:lostreply', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-0000000000aa', 'in_flight', 0, 0)",
	     NULL, 0);
	pid_t pid = fork();
	if (pid == 0) {
		char q[96];
		PGconn *c = pq_connect(f->where);
		sleep_ms(300);
		snprintf(q, sizeof q, "SELECT pg_terminate_backend(%lld)", backend);
		PGresult *r = c ? tgi_pq.exec(c, q) : NULL;
		int ok = r && tgi_pq.resultStatus(r) == PGRES_TUPLES_OK;
		tgi_pq.clear(r);
		tgi_pq.finish(c);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(tgi_store_idem_claim(f->s, "key:lostreply", new_id(a), BINDING_A, 30, &info,
	                                      err, sizeof err), -1);
	assert_int_equal(tgi_store_transient(f->s), 1);
	assert_int_equal(wait_child(pid), 0);
	sqlx(f->sql, "ROLLBACK", NULL, 0);
	/* as if that claim had committed before its reply was lost */
	self_host(host, sizeof host);
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"
	         " lease_until_ms, created_ms, updated_ms) VALUES ('sha256:' || encode(sha256(convert_to('key:lostreply', 'UTF8')), 'hex'), '%s', 'in_flight',"
	         " '%s', %d, 1, (extract(epoch from now()) * 1000)::bigint + 60000, 0, 0)",
	         a, host, (int)getpid());
	sqlx(f->sql, sql, NULL, 0);
	double t0 = tgi_now_ms();
	tgi_store_close(f->s);
	f->s = NULL;
	assert_true(tgi_now_ms() - t0 < 2500);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:lostreply', 'UTF8')), 'hex')"), 0);
}

/* base_url with host:port first in its host list (NULL: it names no
 * host, a socket directory say). */
static int url_with_first_host(char *out, size_t cap, const char *db, int port)
{
	char url[1024];
	url_with_db(url, sizeof url, db);
	const char *auth = strstr(url, "://");
	if (!auth)
		return -1;
	auth += 3;
	size_t alen = strcspn(auth, "/?");
	const char *host = auth;
	for (const char *p = auth; p < auth + alen; p++)
		if (*p == '@')
			host = p + 1;
	if (host == auth + alen || *host == ':')
		return -1;
	snprintf(out, cap, "%.*s127.0.0.1:%d,%s", (int)(host - url), url, port, host);
	return 0;
}

/* A server host that takes connections and never answers (a listening
 * socket nobody accepts on), first in the URL's list: a reconnect gives it
 * a short connect timeout (a few seconds, not ten) before the next host,
 * and so does a watch's; the close's last attempt is bounded at 2 s. */
static void test_reconnect_bounded(void **state)
{
	struct fx *f = *state;
	char url[1100], err[512], a[37];
	int64_t seq;
	tgi_idem_info info;
	int bh = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	assert_true(bh >= 0);
	assert_int_equal(bind(bh, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(getsockname(bh, (struct sockaddr *)&sa, &len), 0);
	if (url_with_first_host(url, sizeof url, f->db, ntohs(sa.sin_port)) < 0) {
		close(bh);
		skip();
	}
	/* bound, not listening: refused, so the open goes on to the server */
	tgi_store *s = open_or_die(url);
	tgi_watch *w = NULL;
	OK(tgi_store_watch_open(s, TGI_WATCH_EVENTS, &w, err, sizeof err));
	assert_int_equal(listen(bh, 16), 0);
	sqlx(f->sql, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE"
	             " application_name = 'toolgate' AND datname = current_database()", NULL, 0);
	sleep_ms(200);

	double t0 = tgi_now_ms();
	OK(tgi_store_last_seq(s, &seq, err, sizeof err));
	double took = tgi_now_ms() - t0;
	assert_true(took >= 1500 && took < 6000);
	t0 = tgi_now_ms();
	tgi_store_watch_wait(w, 500);
	took = tgi_now_ms() - t0;
	assert_true(took < 500 + 4500);
	tgi_store_watch_close(w);

	/* a claim settled while the server is out of reach, then the close */
	claim_ok(s, "key:bh", new_id(a), BINDING_A, &info);
	db_allow(f, 0);
	sqlx(f->sql, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE"
	             " application_name = 'toolgate' AND datname = current_database()", NULL, 0);
	sleep_ms(200);
	tgi_op_record r = rec(a, "write", "persisted", NULL, "{}", tgi_unix_ms());
	assert_int_equal(tgi_store_record(s, &r, NULL, 0, "key:bh", TGI_SETTLE_DONE, err, sizeof err),
	                 -1);
	t0 = tgi_now_ms();
	tgi_store_close(s);
	took = tgi_now_ms() - t0;
	assert_true(took < 2500);
	db_allow(f, 1);
	close(bh);
}

/* Give an in_flight row planted by hand the MAC the gate would have
 * written (no binding): planted without one, it carries no authority. */
static void sign_flying(struct fx *f, const char *scope, const char *op)
{
	char mac[65], sql[512], d[TGI_SCOPE_DIGEST_LEN + 1];
	tgi_scope_digest(scope, d);   /* the ledger keeps, and MACs, the scope's digest */
	tgi_mac_idem(f->s, d, op, NULL, "in_flight", NULL, mac);
	snprintf(sql, sizeof sql, "UPDATE idem SET mac = '%s' WHERE scope = '%s'", mac, d);
	sqlx(f->sql, sql, NULL, 0);
}

/* ---- owners across a server restart ---- */

/* An owner on another host whose backend started before the server now
 * running did went away with the server, not with its process: the lease
 * alone decides.  A backend gone since the server started is a dead
 * owner.  `ops resolve` judges an unknown claim's owner as an in-flight
 * one's: not while it may still run. */
static void test_owner_through_server_restart(void **state)
{
	struct fx *f = *state;
	char sql[2048], pid_s[32], start_s[32], b[37], err[512];
	tgi_idem_info info;
	PGconn *other = pq_connect(f->where);
	assert_non_null(other);
	sqlx(other, "SELECT pg_backend_pid()", pid_s, sizeof pid_s);
	sqlx(other, "SELECT (extract(epoch from backend_start) * 1000000)::bigint"
	            " FROM pg_stat_get_activity(pg_backend_pid())", start_s, sizeof start_s);
	const char *now = "(extract(epoch from now()) * 1000)::bigint";
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"
	         " owner_backend_pid, owner_backend_start, lease_until_ms, created_ms, updated_ms)"
	         " VALUES"
	         " ('sha256:' || encode(sha256(convert_to('key:restart', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000011', 'in_flight', 'far.example',"
	         "  7, 1, 2147483000, 1000000, %s + 60000, 0, 0),"
	         " ('sha256:' || encode(sha256(convert_to('key:restart-late', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000012', 'in_flight',"
	         "  'far.example', 7, 1, 2147483000, 1000000, %s - 1000, 0, 0),"
	         " ('sha256:' || encode(sha256(convert_to('key:gone', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000013', 'in_flight', 'far.example',"
	         "  7, 1, 2147483000, (extract(epoch from now()) * 1000000)::bigint, %s + 60000, 0, 0),"
	         " ('sha256:' || encode(sha256(convert_to('key:marked', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000014', 'unknown', 'far.example',"
	         "  7, 1, %s, %s, %s + 60000, 0, 0)",
	         now, now, now, pid_s, start_s, now);
	sqlx(f->sql, sql, NULL, 0);
	sign_flying(f, "key:restart", "0190a000-0000-7000-8000-000000000011");
	sign_flying(f, "key:restart-late", "0190a000-0000-7000-8000-000000000012");
	sign_flying(f, "key:gone", "0190a000-0000-7000-8000-000000000013");

	claim_ok(f->s, "key:restart", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	assert_int_equal(tgi_store_op_resolve(f->s, "0190a000-0000-7000-8000-000000000011", 0, err,
	                                      sizeof err), -1);
	assert_non_null(strstr(err, "still running"));
	claim_ok(f->s, "key:restart-late", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	claim_ok(f->s, "key:gone", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);

	/* unknown (marked so by another gate), its owner still there */
	assert_int_equal(tgi_store_op_resolve(f->s, "0190a000-0000-7000-8000-000000000014", 0, err,
	                                      sizeof err), -1);
	assert_non_null(strstr(err, "still running"));
	assert_non_null(strstr(err, "far.example"));
	sqlx(f->sql, "UPDATE idem SET lease_until_ms = 1 WHERE scope = 'sha256:' || encode(sha256(convert_to('key:marked', 'UTF8')), 'hex')", NULL, 0);
	OK(tgi_store_op_resolve(f->s, "0190a000-0000-7000-8000-000000000014", 0, err, sizeof err));
	tgi_pq.finish(other);
}

/* An owner on another host: alive while its backend exists (with that
 * start time) and its lease runs; a gone backend or a run-out lease is an
 * unknown outcome. */
static void test_owner_other_host(void **state)
{
	struct fx *f = *state;
	char sql[1024], pid_s[32], start_s[32], b[37];
	tgi_idem_info info;
	PGconn *other = pq_connect(f->where);
	assert_non_null(other);
	sqlx(other, "SELECT pg_backend_pid()", pid_s, sizeof pid_s);
	sqlx(other, "SELECT (extract(epoch from backend_start) * 1000000)::bigint"
	            " FROM pg_stat_get_activity(pg_backend_pid())", start_s, sizeof start_s);
	/* a live backend, a lease of a minute */
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"
	         " owner_backend_pid, owner_backend_start, lease_until_ms, created_ms, updated_ms)"
	         " VALUES ('sha256:' || encode(sha256(convert_to('key:far', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000001', 'in_flight',"
	         " 'another-host.example', 4242, 1, %s, %s,"
	         " (extract(epoch from now()) * 1000)::bigint + 60000, 0, 0),"
	         " ('sha256:' || encode(sha256(convert_to('key:lease', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000002', 'in_flight',"
	         " 'another-host.example', 4242, 1, %s, %s,"
	         " (extract(epoch from now()) * 1000)::bigint - 1000, 0, 0),"
	         " ('sha256:' || encode(sha256(convert_to('key:reused', 'UTF8')), 'hex'), '0190a000-0000-7000-8000-000000000003', 'in_flight',"
	         " 'another-host.example', 4242, 1, %s, %s - 1,"
	         " (extract(epoch from now()) * 1000)::bigint + 60000, 0, 0)",
	         pid_s, start_s, pid_s, start_s, pid_s, start_s);
	sqlx(f->sql, sql, NULL, 0);
	sign_flying(f, "key:far", "0190a000-0000-7000-8000-000000000001");
	sign_flying(f, "key:lease", "0190a000-0000-7000-8000-000000000002");
	sign_flying(f, "key:reused", "0190a000-0000-7000-8000-000000000003");

	claim_ok(f->s, "key:far", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	assert_true(info.retry_after_s >= 1 && info.retry_after_s <= 30);
	/* the lease ran out: unknown even though the backend lives */
	claim_ok(f->s, "key:lease", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	/* that backend pid, but another start time (since the server started):
	 * a reused pid */
	claim_ok(f->s, "key:reused", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);

	/* the backend goes away: unknown */
	tgi_pq.finish(other);
	for (int i = 0; i < 200 && sql_num(f->sql, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
	                                   pid_s); i++)
		sleep_ms(10);
	claim_ok(f->s, "key:far", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, "0190a000-0000-7000-8000-000000000001");
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE state = 'unknown'"), 3);
}

/* Several processes claim one scope at the same moment: exactly one is
 * CLAIMED, the others IN_FLIGHT (the winner is alive until all answered). */
/* ---- watches ---- */

static void test_watches(void **state)
{
	struct fx *f = *state;
	char err[512];
	tgi_watch *we = NULL, *wa = NULL;
	assert_int_equal(tgi_store_watch_open(f->s, TGI_WATCH_EVENTS, &we, err, sizeof err), 0);
	assert_int_equal(tgi_store_watch_open(f->s, TGI_WATCH_APPROVALS, &wa, err, sizeof err), 0);
	/* nothing happens: the time runs out */
	double t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(we, 200), 0);
	assert_true(tgi_now_ms() - t0 >= 150);

	tgi_approval_row a;
	approval(&a, BINDING_A, "ci", tgi_unix_ms() + 60000);
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);

	/* another process, once connected, records a call 300 ms on and
	 * decides the approval 300 ms after that */
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char op[37];
		tgi_store *s = NULL;
		close(ready[0]);
		if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
			_exit(1);
		close(ready[1]);
		sleep_ms(300);
		tgi_uuidv7(op);
		tgi_op_record r = rec(op, "echo", "persisted", NULL, "{}", tgi_unix_ms());
		tgi_event ev = { .type = "tool.call.received", .ts_ms = 1 };
		if (tgi_store_record(s, &r, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err) < 0)
			_exit(2);
		sleep_ms(300);
		if (tgi_store_approval_decide(s, a.id, 1, "alice", NULL, err, sizeof err) < 0)
			_exit(3);
		tgi_store_close(s);
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 0); /* the child is connected */
	close(ready[0]);
	t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(we, 5000), 1);
	double woke = tgi_now_ms() - t0;
	assert_true(woke >= 250 && woke < 1000);
	t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(wa, 5000), 1);
	woke = tgi_now_ms() - t0;
	assert_true(woke < 1000);
	assert_int_equal(wait_child(pid), 0);
	int found = 0;
	char pending[37];
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_A, "ci", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, 1);

	/* the watch's connection killed: it comes back, and says look again */
	long long wpid = sql_num(f->sql, "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE"
	                                 " query LIKE 'LISTEN toolgate_events%%' AND datname = '%s'", f->db);
	assert_true(wpid > 0);
	kill_backend(f, wpid);
	t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(we, 3000), 1);
	assert_true(tgi_now_ms() - t0 < 2000);
	/* it LISTENs again, on a backend of its own */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_stat_activity WHERE query ="
	                                 " 'LISTEN toolgate_events' AND datname = '%s' AND pid <> %lld",
	                         f->db, wpid), 1);
	/* once the wakes the reconnect may add are spent (a few at most),
	 * nothing written means nothing heard: the time runs out */
	int quiet = 0;
	for (int i = 0; i < 5 && !quiet; i++)
		quiet = tgi_store_watch_wait(we, 200) == 0;
	assert_true(quiet);
	t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(we, 300), 0);
	assert_true(tgi_now_ms() - t0 >= 250);
	/* and it hears again: another process writes an event 200 ms into a
	 * wait, which ends on it (well before the wait's own 3 s) */
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		tgi_store *s = NULL;
		close(ready[0]);
		if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
			_exit(1);
		close(ready[1]);
		sleep_ms(200);
		tgi_event ev = { .type = "x.y" };
		if (tgi_store_event(s, NULL, &ev, err, sizeof err) < 0)
			_exit(2);
		tgi_store_close(s);
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 0); /* the child is connected */
	close(ready[0]);
	t0 = tgi_now_ms();
	assert_int_equal(tgi_store_watch_wait(we, 3000), 1);
	woke = tgi_now_ms() - t0;
	assert_int_equal(wait_child(pid), 0);
	assert_true(woke >= 150 && woke < 700);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM events WHERE type = 'x.y'"), 1);
	tgi_store_watch_close(we);
	tgi_store_watch_close(wa);
}

/* ---- the same answers as SQLite ---- */

static void same_json(const char *what, json_t *a, json_t *b)
{
	char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
	if (!json_equal(a, b) || strcmp(x, y))  /* equal, key order too */
		fail_msg("%s differ:\nsqlite:   %s\npostgres: %s", what, x, y);
	free(x);
	free(y);
}

/* The same history (write_history) in both stores: the same ops, events,
 * stats and export, filter by filter, to the byte. */
static void test_same_as_sqlite(void **state)
{
	struct fx *f = *state;
	char path[96], err[512];
	snprintf(f->tmp, sizeof f->tmp, "/tmp/tg_pgcmp_XXXXXX");
	assert_non_null(mkdtemp(f->tmp));
	snprintf(path, sizeof path, "%s/ledger.db", f->tmp);
	tgi_store *lite = f->lite = open_or_die(path);
	write_history(lite);
	write_history(f->s);

	static const tgi_log_filter filters[] = {
		{ 0 },
		{ .tool = "echo" },
		{ .status = "denied" },
		{ .status = "persisted" },
		{ .session = "s1" },
		{ .since_ms = 1750000004000 },
		{ .limit = 3 },
		{ .tool = "deploy", .limit = 1 },
		{ .op_id = "01977420-dc00-7000-8000-000000000001" },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(filters); i++) {
		json_t *a = NULL, *b = NULL;
		char what[32];
		assert_int_equal(tgi_store_ops(lite, &filters[i], &a, err, sizeof err), 0);
		assert_int_equal(tgi_store_ops(f->s, &filters[i], &b, err, sizeof err), 0);
		snprintf(what, sizeof what, "ops %zu", i);
		same_json(what, a, b);
		json_decref(a);
		json_decref(b);
		for (int64_t after = 0; after <= 6; after += 6) {
			assert_int_equal(tgi_store_events(lite, &filters[i], after, &a, err, sizeof err), 0);
			assert_int_equal(tgi_store_events(f->s, &filters[i], after, &b, err, sizeof err), 0);
			snprintf(what, sizeof what, "events %zu after %d", i, (int)after);
			same_json(what, a, b);
			json_decref(a);
			json_decref(b);
		}
	}
	/* the filters matched something: the comparison is not of empty lists */
	json_t *some = NULL;
	assert_int_equal(tgi_store_events(f->s, &filters[2], 0, &some, err, sizeof err), 0);
	assert_int_equal(json_array_size(some), 6);
	assert_string_equal(json_string_value(json_object_get(json_array_get(some, 0), "message")),
	                    "no \"prod\"");
	json_decref(some);

	for (int64_t since = 0; since <= 1750000005000; since += 1750000005000) {
		json_t *a = NULL, *b = NULL;
		assert_int_equal(tgi_store_stats(lite, since, &a, err, sizeof err), 0);
		assert_int_equal(tgi_store_stats(f->s, since, &b, err, sizeof err), 0);
		same_json("stats", a, b);
		json_decref(a);
		json_decref(b);
	}
	json_t *st = NULL;
	assert_int_equal(tgi_store_stats(f->s, 0, &st, err, sizeof err), 0);
	assert_int_equal(json_integer_value(json_object_get(st, "calls")), 10);
	assert_int_equal(json_array_size(json_object_get(st, "denials")), 2);
	json_decref(st);

	int64_t la = 0, lb = 0;
	assert_int_equal(tgi_store_last_seq(lite, &la, err, sizeof err), 0);
	assert_int_equal(tgi_store_last_seq(f->s, &lb, err, sizeof err), 0);
	assert_int_equal(la, lb);
	assert_int_equal(lb, 21);

	json_t *ea = json_array(), *eb = json_array();
	assert_int_equal(tgi_store_export(lite, 0, collect, ea, err, sizeof err), 0);
	assert_int_equal(tgi_store_export(f->s, 0, collect, eb, err, sizeof err), 0);
	assert_int_equal(json_array_size(eb), 12);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(eb, 11),
	                                                                      "claim"), "state")), "in_flight");
	same_json("export", ea, eb);
	json_decref(ea);
	json_decref(eb);
	ea = json_array();
	eb = json_array();
	assert_int_equal(tgi_store_export(lite, 1750000005000, collect, ea, err, sizeof err), 0);
	assert_int_equal(tgi_store_export(f->s, 1750000005000, collect, eb, err, sizeof err), 0);
	same_json("export since", ea, eb);
	assert_int_equal(json_array_size(eb), 6);
	json_decref(ea);
	json_decref(eb);
}

/* The columns of eval_runs in the SQLite ledger at path, in order. */
static void lite_columns(const char *path, char *out, size_t cap)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t k = 0;
	out[0] = '\0';
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('eval_runs') ORDER BY cid",
	                                    -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? "," : "",
		                      (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The same runs in SQLite and in PostgreSQL: a table of the same columns,
 * the same lists. */
static void test_eval_same_as_sqlite(void **state)
{
	struct fx *f = *state;
	char err[512], path[96], cols[512], pcols[512];
	eval_put_four(f->s);
	snprintf(f->tmp, sizeof f->tmp, "/tmp/tg_pgeval_XXXXXX");
	assert_non_null(mkdtemp(f->tmp));
	snprintf(path, sizeof path, "%s/ledger.db", f->tmp);
	f->lite = open_or_die(path);
	eval_put_four(f->lite);
	lite_columns(path, cols, sizeof cols);
	sqlx(f->sql, "SELECT string_agg(column_name, ',' ORDER BY ordinal_position)"
	             " FROM information_schema.columns WHERE table_name = 'eval_runs'", pcols, sizeof pcols);
	assert_string_equal(pcols, cols);
	assert_non_null(strstr(cols, "score_pass"));
	static const struct { const char *model; int64_t limit; } lists[] = {
		{ NULL, 20 }, { NULL, 0 }, { NULL, 2 }, { NULL, 1 }, { "m1", 20 }, { "m1", 2 },
		{ "m2", 5 }, { "nobody", 5 }, { "m\xff", 5 },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(lists); i++) {
		json_t *a = NULL, *b = NULL;
		char what[48];
		OK(tgi_store_eval_list(f->lite, lists[i].model, lists[i].limit, &a, err, sizeof err));
		OK(tgi_store_eval_list(f->s, lists[i].model, lists[i].limit, &b, err, sizeof err));
		snprintf(what, sizeof what, "eval runs %zu", i);
		same_json(what, a, b);
		json_decref(a);
		json_decref(b);
	}
}

/* One handle shared by threads with no lock of theirs: the handle locks
 * itself around each round trip (store_hammer.h). */
static void test_shared_handle(void **state)
{
	struct fx *f = *state;
	char why[512] = "";
	hammer_run(f->s, why, sizeof why);
	if (why[0])
		fail_msg("%s", why);
}

int main(void)
{
	char err[512];
	base_url = getenv("TOOLGATE_TEST_PG");
	if (!base_url || !*base_url) {
		fprintf(stderr, "test_store_pg: TOOLGATE_TEST_PG is not set: these tests need a "
		                "PostgreSQL server (tests/run starts one; or set it to a postgresql:// "
		                "URL of a server where this user may create databases)\n");
		return 1;
	}
	if (tgi_pq_load(err, sizeof err) < 0) {
		fprintf(stderr, "test_store_pg: %s\n", err);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		STORE_CONTRACT_TESTS,
		cmocka_unit_test_setup_teardown(test_open_migrates_empty, setup_empty, teardown),
		cmocka_unit_test(test_unreachable_named_without_password),
		cmocka_unit_test_setup_teardown(test_transient_and_reconnect, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_record_lost_connection, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_owner_other_host, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_shared_handle, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_watches, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_same_as_sqlite, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_eval_same_as_sqlite, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_lost, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_record_retried_on_fresh_connection, setup_store,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_failed_settle_after_reconnect, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_failed_settle_at_once, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_close_deletes_lost_claim, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_bounded, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_owner_through_server_restart, setup_store, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
