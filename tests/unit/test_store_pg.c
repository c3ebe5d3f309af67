/*
 * test_store_pg.c — the PostgreSQL ledger (src/store/postgres.c) against a
 * real server, named by $TOOLGATE_TEST_PG (tests/run starts a throwaway
 * cluster and exports it; without it this program fails, saying so).
 *
 * Each case makes its own database (tg_<random>) and drops it.  Covered,
 * against store.h and issue 9: an empty database migrated to the latest
 * schema at open; a newer schema refused; migrate(to=2), dry runs, and an
 * open that takes 2 to the latest; a version 4 ledger's approvals kept
 * through the upgrade to 5; an approval's plan and its decision's reason;
 * the claim lifecycle (claimed, in flight, done
 * with its envelope replayed, conflict, release, unknown), dead owners (a
 * process of this host that died holding a claim; a backend of another
 * host that is gone; a lease run out) and operator resolution; claims,
 * approvals and approval takes raced by several processes (one winner);
 * a record that fails leaves nothing; event seqs gap-free and in commit
 * order as a follower sees them while several processes write; rate-limit
 * buckets taken to empty and refilled on the server's clock; watches woken
 * by another process within a second, and after their connection is killed
 * quiet again, then woken by the next write; a connection killed under a handle
 * (transient, the backoff, the reconnect, claims moved to the new backend);
 * an unreachable server named without its password; and ops, events,
 * stats and export giving exactly what the SQLite ledger gives for the
 * same records.  Then what two reviews found: a connection that died
 * while idle (killed, or the server's idle timeout) found before the next
 * call, which goes through; a record whose connection broke under it sent
 * again on a fresh one, written once; a claim whose record failed settled
 * unknown (or deleted) after the reconnect or at once, never moved to the
 * new backend as a live one; a claim whose commit reply was lost deleted
 * by the close; reconnects, watches and the close bounded in time against
 * a server that never answers; owners whose backend went with a server
 * restart judged by their lease, and `ops resolve` judging an unknown
 * claim's owner too; the owner's host as hostname/boot id/pid namespace;
 * a waiter using its own approval; an export reading one snapshot.
 * Eval runs: kept and listed as in SQLite (the same columns, the same
 * lists), and a version 5 ledger's rows kept through the upgrade to 6.
 * One handle shared by several threads with no lock of theirs
 * (store_hammer.h).
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

#define BINDING_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define BINDING_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static const char *base_url; /* $TOOLGATE_TEST_PG */

/* A store call that must succeed: its sentence (in err) shown if not. */
#define OK(call)                                                      \
	do {                                                          \
		if ((call) != 0)                                      \
			fail_msg("%s: %s", #call, err);               \
	} while (0)

struct fx {
	char       db[40];      /* tg_<random> */
	char       url[1024];   /* base_url with that database */
	tgi_store *s;           /* open on url, or NULL */
	PGconn    *sql;         /* a plain connection to the database, for looking */
	char       tmp[64];     /* a temporary directory, or "" */
	tgi_store *lite;        /* an SQLite ledger in it, or NULL */
};

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

/* ---- fixtures ---- */

static int setup_db(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	char hex[17];
	tgi_random_hex(hex, 8);
	snprintf(f->db, sizeof f->db, "tg_%s", hex);
	url_with_db(f->url, sizeof f->url, f->db);
	if (admin_run(0, f->db) < 0)
		return -1;
	f->sql = pq_connect(f->url);
	*state = f;
	return f->sql ? 0 : -1;
}

static int open_store(struct fx *f, int flags)
{
	char err[512];
	if (tgi_store_open(f->url, flags, &f->s, err, sizeof err) < 0) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	return 0;
}

/* A ledger from before identities that holds records: refused as foreign
 * (its schema migrated all the same), then adopted. */
static void open_adopting(struct fx *f)
{
	char err[1024];
	tgi_ledger_rows n;
	assert_int_equal(tgi_store_open(f->url, 0, &f->s, err, sizeof err), -1);
	if (!strstr(err, "holds records but has no identity") || !strstr(err, "toolgate ledger adopt"))
		fail_msg("not refused as foreign: %s", err);
	assert_int_equal(tgi_store_open(f->url, TGI_STORE_FOREIGN_OK, &f->s, err, sizeof err), 0);
	assert_non_null(tgi_store_foreign(f->s));
	assert_int_equal(tgi_store_adopt(f->s, NULL, &n, err, sizeof err), 0);
	assert_null(tgi_store_foreign(f->s));
}

static int setup_store(void **state)
{
	if (setup_db(state) < 0)
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

/* ---- records ---- */

/* A record of op_id in session (NULL: none), with an envelope naming
 * status, and idem scope (NULL: none). */
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

static void record_ok(tgi_store *s, const tgi_op_record *r, tgi_event *ev, size_t nev,
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

static int wait_child(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- schema ---- */

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
	tgi_store *s2 = open_or_die(f->url);
	tgi_store_close(s2);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM toolgate_schema"), TGI_STORE_SCHEMA_VERSION);
}

static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	char err[512] = "", sql[96], want[64];
	tgi_store *s = NULL;
	snprintf(sql, sizeof sql, "INSERT INTO toolgate_schema(version) VALUES (%d)",
	         TGI_STORE_SCHEMA_VERSION + 1);
	sqlx(f->sql, sql, NULL, 0);
	assert_int_equal(tgi_store_open(f->url, 0, &s, err, sizeof err), -1);
	assert_null(s);
	snprintf(want, sizeof want, "schema version %d", TGI_STORE_SCHEMA_VERSION + 1);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof want, "newer than this toolgate understands (%d)",
	         TGI_STORE_SCHEMA_VERSION);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "upgrade toolgate"));
	/* and not by the migration command either */
	assert_int_equal(tgi_store_open(f->url, TGI_STORE_NO_MIGRATE, &s, err, sizeof err), -1);
}

static int told[8], ntold;
static void tell(void *arg, int n)
{
	(void)arg;
	if (ntold < 8)
		told[ntold++] = n;
}

static void test_migrate_steps(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	int v = -1;

	assert_int_equal(open_store(f, TGI_STORE_NO_MIGRATE), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 0);
	ntold = 0;
	assert_int_equal(tgi_store_migrate(f->s, 2, 0, tell, NULL, err, sizeof err), 0);
	assert_int_equal(ntold, 2);
	assert_int_equal(told[0], 1);
	assert_int_equal(told[1], 2);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 2);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename = 'pins'"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename = 'messages'"), 0);
	/* a dry run tells what would be applied, and applies nothing */
	ntold = 0;
	assert_int_equal(tgi_store_migrate(f->s, 0, 1, tell, NULL, err, sizeof err), 0);
	assert_int_equal(ntold, TGI_STORE_SCHEMA_VERSION - 2);
	for (int i = 0; i < ntold; i++)
		assert_int_equal(told[i], 3 + i);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 2);
	/* migrations only go forward */
	assert_int_equal(tgi_store_migrate(f->s, 1, 0, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "only go forward"));
	tgi_store_close(f->s);
	f->s = NULL;

	/* an ordinary open takes it from 2 to the latest */
	assert_int_equal(open_store(f, 0), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename = 'messages'"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM information_schema.columns"
	                                 " WHERE table_name = 'ops' AND column_name = 'loop'"), 1);
}

/* Two processes opening an empty database at once both end at the latest
 * version, each migration applied once. */
static void test_migrate_race(void **state)
{
	struct fx *f = *state;
	pid_t pids[3];
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char err[512];
			tgi_store *s = NULL;
			if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0) {
				fprintf(stderr, "child open: %s\n", err);
				_exit(1);
			}
			tgi_store_close(s);
			_exit(0);
		}
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(wait_child(pids[i]), 0);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM toolgate_schema"),
	                 TGI_STORE_SCHEMA_VERSION);
}

/* A version 4 ledger (before approvals kept a plan and a decision's
 * reason) is upgraded (through 5, to the latest) by an ordinary open: its approvals stay, as
 * they were, with no plan and no reason; the pending one is decided with
 * a reason afterwards. */
static void test_upgrade_v4_approvals(void **state)
{
	struct fx *f = *state;
	char err[512] = "", sql[1024];
	int v = -1, found = 0;
	int64_t later = tgi_unix_ms() + 3600 * 1000;
	tgi_approval_row got, *rows = NULL;
	size_t n = 0;
	static const char *const ids[] = {
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e01", /* pending */
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e02", /* denied by bob */
	};

	assert_int_equal(open_store(f, TGI_STORE_NO_MIGRATE), 0);
	assert_int_equal(tgi_store_migrate(f->s, 4, 0, NULL, NULL, err, sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;
	assert_int_equal(sql_num(f->sql, "SELECT max(version) FROM toolgate_schema"), 4);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM information_schema.columns"
	                                 " WHERE table_name = 'approvals' AND column_name = 'plan'"), 0);
	snprintf(sql, sizeof sql,
	         "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"
	         " created_ms, expires_ms, decided_by, decided_ms) VALUES"
	         " ('%s', NULL, 'write_file', 'local', '%s', 'pending', '{\"path\":\"a\"}',"
	         "  'ask: write_file', 1000, %lld, NULL, NULL),"
	         " ('%s', NULL, 'shell', 'local', '%s', 'denied', '{\"command\":\"rm\"}',"
	         "  'ask: shell', 1001, %lld, 'bob', 1500)",
	         ids[0], BINDING_A, (long long)later, ids[1], BINDING_B, (long long)later);
	sqlx(f->sql, sql, NULL, 0);

	open_adopting(f);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM information_schema.columns"
	                                 " WHERE table_name = 'approvals' AND column_name IN"
	                                 " ('plan', 'decided_reason')"), 2);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, ids[1]);
	assert_string_equal(rows[0].state, "denied");
	assert_string_equal(rows[0].decided_by, "bob");
	assert_int_equal(rows[0].decided_ms, 1500);
	assert_string_equal(rows[1].id, ids[0]);
	assert_string_equal(rows[1].state, "pending");
	assert_string_equal(rows[1].args, "{\"path\":\"a\"}");
	for (size_t i = 0; i < n; i++) {
		assert_null(rows[i].plan);
		assert_null(rows[i].decided_reason);
	}
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_decide(f->s, ids[0], 0, "carol", "not on a Friday", err,
	                                           sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, ids[0], &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.decided_by, "carol");
	assert_string_equal(got.decided_reason, "not on a Friday");
	tgi_approval_row_clear(&got);
}

static void test_not_a_ledger(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	tgi_store *s = NULL;
	sqlx(f->sql, "CREATE TABLE ops(id int)", NULL, 0);
	assert_int_equal(tgi_store_open(f->url, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "does not have the tables toolgate expects"));
	assert_non_null(strstr(err, "\"ops\""));
	/* the failed migration left nothing behind */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename IN"
	                                 " ('toolgate_schema', 'idem', 'events')"), 0);
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
static void self_identity(char *out, size_t cap)
{
	char host[256] = "", boot[64] = "";
	struct stat st;
	gethostname(host, sizeof host - 1);
	FILE *b = fopen("/proc/sys/kernel/random/boot_id", "r");
	assert_non_null(b);
	assert_non_null(fgets(boot, sizeof boot, b));
	fclose(b);
	boot[strcspn(boot, "\n")] = '\0';
	assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
	snprintf(out, cap, "%s/%s/%llu", host, boot, (unsigned long long)st.st_ino);
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
	record_ok(f->s, &r, &ev, 1, NULL, TGI_SETTLE_NONE);
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
	tgi_store *s2 = open_or_die(f->url);
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
		PGconn *c = pq_connect(f->url);
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
	tgi_store *s2 = open_or_die(f->url);
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
	record_ok(f->s, &r, NULL, 0, NULL, TGI_SETTLE_NONE);
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
	record_ok(f->s, &r, NULL, 0, NULL, TGI_SETTLE_NONE);
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
		PGconn *c = pq_connect(f->url);
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
	self_identity(host, sizeof host);
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

/* ---- MACs on the rows that carry authority (issue 22) ---- */

static void pg_approved(tgi_store *s, const char *binding, char id[37])
{
	char err[512];
	tgi_approval_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.tool, sizeof r.tool, "deploy");
	snprintf(r.principal, sizeof r.principal, "local");
	snprintf(r.binding, sizeof r.binding, "%s", binding);
	r.args = "{}";
	r.reason = "ask";
	r.created_ms = tgi_unix_ms();
	r.expires_ms = r.created_ms + 60000;
	assert_int_equal(tgi_store_approval_add(s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(s, r.id, 1, "alice", NULL, err, sizeof err), 0);
	memcpy(id, r.id, 37);
}

static void test_forged_rows_pg(void **state)
{
	struct fx *f = *state;
	char err[512], id[37], id2[37], got[37], sql[512], st[16], a[37], b[37], pinned[65];
	int found = 0, forged = 0, used = 0;
	tgi_idem_info info;

	/* an approval edited with SQL is no one's; a genuine one is found, unspent */
	pg_approved(f->s, BINDING_A, id);
	assert_int_equal(tgi_store_approval_find(f->s, BINDING_A, "local", &found, got, &forged,
	                                         err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got, id);
	snprintf(sql, sizeof sql, "UPDATE approvals SET expires_ms = expires_ms + 1 WHERE id = '%s'",
	         id);
	sqlx(f->sql, sql, NULL, 0);
	assert_int_equal(tgi_store_approval_find(f->s, BINDING_A, "local", &found, got, &forged,
	                                         err, sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(forged, 1);
	assert_int_equal(tgi_store_approval_use(f->s, id, "local", BINDING_A, &used, err, sizeof err), 0);
	assert_int_equal(used, -1);

	/* spent with a claim that is taken; left by one in flight or done */
	pg_approved(f->s, BINDING_B, id2);
	tgi_approval_spend sp = {id2, "local", BINDING_B};
	new_id(a);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "key:spend", a, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	snprintf(sql, sizeof sql, "SELECT state FROM approvals WHERE id = '%s'", id2);
	sqlx(f->sql, sql, st, sizeof st);
	assert_string_equal(st, "used");
	pg_approved(f->s, BINDING_B, id2);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "key:spend", new_id(b), NULL, 30, &sp,
	                                            &info, err, sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	snprintf(sql, sizeof sql, "SELECT state FROM approvals WHERE id = '%s'", id2);
	sqlx(f->sql, sql, st, sizeof st);
	assert_string_equal(st, "approved");
	tgi_op_record r = rec(a, "write", "persisted", NULL, "{\"output\":\"real\"}", tgi_unix_ms());
	record_ok(f->s, &r, NULL, 0, "key:spend", TGI_SETTLE_DONE);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "key:spend", new_id(b), NULL, 30, &sp,
	                                            &info, err, sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_DONE);
	free(info.envelope);
	sqlx(f->sql, sql, st, sizeof st);
	assert_string_equal(st, "approved");

	/* the done op's envelope edited: unknown, never replayed; resolvable */
	snprintf(sql, sizeof sql, "UPDATE ops SET envelope = '{\"output\":\"forged\"}' WHERE op_id = '%s'", a);
	sqlx(f->sql, sql, NULL, 0);
	claim_ok(f->s, "key:spend", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);
	assert_null(info.envelope);
	assert_int_equal(tgi_store_op_resolve(f->s, a, 0, err, sizeof err), 0);
	/* released: claimed anew, spending the approval the others left */
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "key:spend", new_id(b), NULL, 30, &sp,
	                                            &info, err, sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);

	/* a pin changed with SQL is CHANGED */
	tgi_pin_state ps;
	assert_int_equal(tgi_store_pin_check(f->s, "s__t", BINDING_A, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_NEW);
	assert_int_equal(tgi_store_pin_check(f->s, "s__t", BINDING_A, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_SAME);
	sqlx(f->sql, "UPDATE pins SET digest = '" BINDING_B "'", NULL, 0);
	assert_int_equal(tgi_store_pin_check(f->s, "s__t", BINDING_B, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_CHANGED);
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
	PGconn *other = pq_connect(f->url);
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

/* A claim names its owner's host by hostname, boot id and pid namespace,
 * so that gates of one hostname in two containers are two hosts. */
static void test_owner_identity(void **state)
{
	struct fx *f = *state;
	char a[37], want[512], got[512];
	tgi_idem_info info;
	claim_ok(f->s, "key:who", new_id(a), BINDING_A, &info);
	self_identity(want, sizeof want);
	sqlx(f->sql, "SELECT owner_host FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:who', 'UTF8')), 'hex')", got, sizeof got);
	assert_string_equal(got, want);
}

/* ---- idempotency ---- */

static void test_claim_lifecycle(void **state)
{
	struct fx *f = *state;
	char err[512], a[37], b[37], c[37];
	tgi_idem_info info;

	claim_ok(f->s, "key:1", new_id(a), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_string_equal(info.op_id, a);
	/* committed before it returned: another connection sees it */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:1', 'UTF8')), 'hex')"
	                                 " AND state = 'in_flight'"), 1);

	/* the same key again while the owner (this process) lives: pending */
	claim_ok(f->s, "key:1", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, a);
	assert_true(info.retry_after_s >= 1 && info.retry_after_s <= 30);
	/* the same key for another call: a conflict, never its result */
	claim_ok(f->s, "key:1", new_id(b), BINDING_B, &info);
	assert_int_equal(info.state, TGI_IDEM_CONFLICT);

	/* done: replayed with the stored envelope */
	const char *env = "{\"op_id\":\"x\",\"status\":\"persisted\",\"output\":\"hi\"}";
	tgi_op_record r = rec(a, "write", "persisted", NULL, env, tgi_unix_ms());
	r.idem_binding = BINDING_A;   /* the done row's MAC covers the claim's binding */
	record_ok(f->s, &r, NULL, 0, "key:1", TGI_SETTLE_DONE);
	claim_ok(f->s, "key:1", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_DONE);
	assert_string_equal(info.op_id, a);
	assert_non_null(info.envelope);
	assert_string_equal(info.envelope, env);
	free(info.envelope);
	/* without a binding it is not compared */
	claim_ok(f->s, "key:1", new_id(b), NULL, &info);
	assert_int_equal(info.state, TGI_IDEM_DONE);
	free(info.envelope);

	/* released: claimed again by the next call */
	claim_ok(f->s, "key:2", new_id(a), BINDING_A, &info);
	r = rec(a, "write", "failed", NULL, "{}", tgi_unix_ms());
	record_ok(f->s, &r, NULL, 0, "key:2", TGI_SETTLE_RELEASE);
	claim_ok(f->s, "key:2", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_string_equal(info.op_id, b);

	/* settled unknown: unknown, never run again */
	claim_ok(f->s, "key:3", new_id(c), BINDING_A, &info);
	r = rec(c, "write", "failed", NULL, "{}", tgi_unix_ms());
	record_ok(f->s, &r, NULL, 0, "key:3", TGI_SETTLE_UNKNOWN);
	claim_ok(f->s, "key:3", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, c);

	/* resolved as not applied: released */
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), 0);
	claim_ok(f->s, "key:3", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM events WHERE type = 'tool.call.resolved'"), 1);
	/* nothing left to resolve */
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));
	/* a live owner's op is not resolved under it */
	assert_int_equal(tgi_store_op_resolve(f->s, b, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "still running"));

	/* bad arguments */
	assert_int_equal(tgi_store_idem_claim(f->s, "", a, NULL, 30, &info, err, sizeof err), -1);
	assert_int_equal(tgi_store_idem_claim(f->s, "k", "nope", NULL, 30, &info, err, sizeof err), -1);
}

/* A process of this host that claims and dies: its claim is unknown (and
 * stays so), then an operator settles it as applied. */
static void test_dead_owner_this_host(void **state)
{
	struct fx *f = *state;
	char err[512], op[37], b[37];
	tgi_idem_info info;
	new_id(op);
	pid_t pid = fork();
	if (pid == 0) {
		tgi_store *s = NULL;
		tgi_idem_info i2;
		if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0 ||
		    tgi_store_idem_claim(s, "key:dead", op, BINDING_A, 30, &i2, err, sizeof err) < 0 ||
		    i2.state != TGI_IDEM_CLAIMED)
			_exit(1);
		_exit(0); /* a crash: no settle, no close */
	}
	assert_int_equal(wait_child(pid), 0);
	claim_ok(f->s, "key:dead", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, op);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' || encode(sha256(convert_to('key:dead', 'UTF8')), 'hex')"
	                                 " AND state = 'unknown'"), 1);
	claim_ok(f->s, "key:dead", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);

	/* settled by the operator as applied: replayed with a minimal envelope */
	assert_int_equal(tgi_store_op_resolve(f->s, op, 1, err, sizeof err), 0);
	claim_ok(f->s, "key:dead", new_id(b), BINDING_A, &info);
	assert_int_equal(info.state, TGI_IDEM_DONE);
	assert_non_null(info.envelope);
	assert_non_null(strstr(info.envelope, "settled by operator: applied"));
	free(info.envelope);
}

/* An op of status whose envelope's error says applied (NULL: no error),
 * started at ms, its claim settled how. */
static void record_applied(tgi_store *s, const char *op_id, const char *status,
                           const char *applied, int64_t ms, const char *scope,
                           tgi_idem_settle how)
{
	char env[512];
	if (applied)
		snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"%s\",\"error\":{\"kind\":"
		         "\"tool_error\",\"message\":\"stopped\",\"applied\":\"%s\"}}", op_id, status,
		         applied);
	else
		snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"%s\",\"error\":null}", op_id,
		         status);
	tgi_op_record r = rec(op_id, "shell", status, NULL, env, ms);
	record_ok(s, &r, NULL, 0, scope, how);
}

/* The op ids tgi_store_unknown lists, space-separated. */
static void unknown_ids(tgi_store *s, char *out, size_t cap)
{
	char err[512];
	json_t *a, *v;
	size_t i;
	if (tgi_store_unknown(s, &a, err, sizeof err) < 0)
		fail_msg("unknown: %s", err);
	out[0] = '\0';
	json_array_foreach(a, i, v)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "",
		         json_string_value(json_object_get(v, "op_id")));
	json_decref(a);
}

/* ops list --unknown as in SQLite: calls that ran and may have acted,
 * unsettled, and claims whose process died; not a running claim, a
 * pending answer or a known outcome.  ops resolve settles one without a
 * claim too. */
static void test_unknown_outcomes(void **state)
{
	struct fx *f = *state;
	char err[512], ids[512], want[512], a[37], b[37], c[37], d[37], e[37], g[37], live[37];
	tgi_idem_info info;
	unknown_ids(f->s, ids, sizeof ids);
	assert_string_equal(ids, "");
	record_applied(f->s, new_id(a), "failed", "unknown", 1000, NULL, TGI_SETTLE_NONE);
	record_applied(f->s, new_id(b), "persisted", NULL, 2000, NULL, TGI_SETTLE_NONE);
	record_applied(f->s, new_id(c), "pending", "unknown", 3000, NULL, TGI_SETTLE_NONE);
	claim_ok(f->s, "key:k", new_id(d), BINDING_A, &info);
	record_applied(f->s, d, "failed", "unknown", 4000, "key:k", TGI_SETTLE_UNKNOWN);
	new_id(e);
	pid_t pid = fork();
	if (pid == 0) {
		tgi_store *s = NULL;
		tgi_idem_info i2;
		if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0 ||
		    tgi_store_idem_claim(s, "key:dead", e, BINDING_A, 30, &i2, err, sizeof err) < 0)
			_exit(1);
		_exit(0); /* a crash: no settle, no close */
	}
	assert_int_equal(wait_child(pid), 0);
	claim_ok(f->s, "key:live", new_id(live), BINDING_A, &info);
	record_applied(f->s, new_id(g), "failed", "no", 5000, NULL, TGI_SETTLE_NONE);

	unknown_ids(f->s, ids, sizeof ids);
	snprintf(want, sizeof want, "%s %s %s", a, d, e);
	assert_string_equal(ids, want);
	json_t *rows;
	assert_int_equal(tgi_store_unknown(f->s, &rows, err, sizeof err), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "message")),
	                    "stopped");
	assert_true(json_is_null(json_object_get(json_array_get(rows, 0), "claim")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 1), "claim")),
	                    "unknown");
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 2), "claim")),
	                    "in_flight");
	assert_true(json_is_null(json_object_get(json_array_get(rows, 2), "tool")));
	json_decref(rows);

	assert_int_equal(tgi_store_op_resolve(f->s, a, 1, err, sizeof err), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, a, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops WHERE op_id = '%s' AND"
	                         " envelope::json #>> '{error,applied}' = 'yes'", a), 1);
	assert_int_equal(tgi_store_op_resolve(f->s, d, 0, err, sizeof err), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, e, 0, err, sizeof err), 0);
	unknown_ids(f->s, ids, sizeof ids);
	assert_string_equal(ids, "");
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), -1);
	assert_int_equal(tgi_store_op_resolve(f->s, g, 0, err, sizeof err), -1);
}

/* An owner on another host: alive while its backend exists (with that
 * start time) and its lease runs; a gone backend or a run-out lease is an
 * unknown outcome. */
static void test_owner_other_host(void **state)
{
	struct fx *f = *state;
	char sql[1024], pid_s[32], start_s[32], b[37];
	tgi_idem_info info;
	PGconn *other = pq_connect(f->url);
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
#define RACERS 4
static void test_claim_race(void **state)
{
	struct fx *f = *state;
	int go[2], res[2], done[2];
	pid_t pids[RACERS];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(done), 0);
	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char err[512], op[37], c;
			tgi_store *s = NULL;
			tgi_idem_info info;
			close(go[1]);
			close(done[1]);
			if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0)
				_exit(2);
			if (read(go[0], &c, 1) != 0) /* closed by the parent: go */
				_exit(3);
			tgi_uuidv7(op);
			if (tgi_store_idem_claim(s, "key:race", op, BINDING_A, 30, &info, err, sizeof err) < 0)
				c = 'E';
			else
				c = info.state == TGI_IDEM_CLAIMED ? 'C' : info.state == TGI_IDEM_IN_FLIGHT ? 'I' : 'X';
			if (write(res[1], &c, 1) != 1)
				_exit(4);
			(void)!read(done[0], &c, 1); /* live until everyone answered */
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	close(done[0]);
	sleep_ms(300); /* all connected */
	close(go[1]);
	int claimed = 0, in_flight = 0;
	for (int i = 0; i < RACERS; i++) {
		char c = 0;
		assert_int_equal(read(res[0], &c, 1), 1);
		claimed += c == 'C';
		in_flight += c == 'I';
	}
	close(done[1]);
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(wait_child(pids[i]), 0);
	close(res[0]);
	assert_int_equal(claimed, 1);
	assert_int_equal(in_flight, RACERS - 1);
}

/* ---- records and events ---- */

static void test_record_atomic(void **state)
{
	struct fx *f = *state;
	char err[512], op[37];
	int64_t last = 0, after = 0;
	tgi_op_record r = rec(new_id(op), "echo", "persisted", "s1", "{}", tgi_unix_ms());
	tgi_event ev[3] = {
		{ .type = "tool.call.received", .ts_ms = r.started_ms },
		{ .type = "tool.call.stage", .stage = "decide", .ts_ms = r.started_ms },
		{ .type = "tool.call.persisted", .ts_ms = r.started_ms },
	};
	record_ok(f->s, &r, ev, 3, NULL, TGI_SETTLE_NONE);
	assert_int_equal(ev[0].seq, 1);
	assert_int_equal(ev[1].seq, 2);
	assert_int_equal(ev[2].seq, 3);
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 3);

	/* the same op again: refused, and nothing of it is written (events,
	 * session count, seqs all as before) */
	assert_int_equal(tgi_store_record(f->s, &r, ev, 3, "key:x", TGI_SETTLE_DONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "already in the ledger"));
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(ev[0].seq, 0);
	assert_int_equal(ev[2].seq, 0);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM events"), 3);
	assert_int_equal(sql_num(f->sql, "SELECT calls FROM sessions WHERE id = 's1'"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM rate_buckets"), 0);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem"), 0);
	assert_int_equal(sql_num(f->sql, "SELECT last FROM event_seq"), 3);
	/* the next record's seqs follow on, without a gap */
	tgi_op_record r2 = rec(new_id(op), "echo", "persisted", "s1", "{}", tgi_unix_ms());
	r2.manifest = BINDING_B;
	record_ok(f->s, &r2, ev, 1, NULL, TGI_SETTLE_NONE);
	assert_int_equal(ev[0].seq, 4);
	assert_int_equal(tgi_store_last_seq(f->s, &after, err, sizeof err), 0);
	assert_int_equal(after, 4);
	assert_int_equal(sql_num(f->sql, "SELECT calls FROM sessions WHERE id = 's1'"), 2);

	/* what middleware reads back */
	char manifest[65];
	assert_int_equal(tgi_store_session_manifest(f->s, "s1", manifest, err, sizeof err), 0);
	assert_string_equal(manifest, BINDING_B);
	assert_int_equal(tgi_store_session_manifest(f->s, "nope", manifest, err, sizeof err), 0);
	assert_string_equal(manifest, "");
	/* a record keeps no rate-limit bucket: tokens are taken by bucket_take */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM rate_buckets"), 0);

	/* refusals before the database is asked */
	tgi_op_record r3 = rec(new_id(op), "echo", "persisted", NULL, "{}", tgi_unix_ms());
	r3.op_id = "nope";
	assert_int_equal(tgi_store_record(f->s, &r3, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a UUID"));
}

static void test_loop_window(void **state)
{
	struct fx *f = *state;
	char err[512], op[37];
	const char *loops[] = { "L1", NULL, "L3", "L4" };
	for (int i = 0; i < 4; i++) {
		tgi_op_record r = rec(new_id(op), "echo", "persisted", "sw", "{}", tgi_unix_ms());
		r.loop = loops[i];
		record_ok(f->s, &r, NULL, 0, NULL, TGI_SETTLE_NONE);
		sleep_ms(2); /* op ids in order */
	}
	tgi_strv v = { 0 };
	assert_int_equal(tgi_store_loop_window(f->s, "sw", 2, &v, err, sizeof err), 0);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "L4");
	assert_string_equal(v.v[1], "L3");
	tgi_strv_free(&v);
	assert_int_equal(tgi_store_loop_window(f->s, "sw", 10, &v, err, sizeof err), 0);
	assert_int_equal(v.n, 3);
	tgi_strv_free(&v);
	assert_int_equal(tgi_store_loop_window(f->s, "", 10, &v, err, sizeof err), -1);
}

/* Writers in several processes, a follower reading seq > last as they
 * go: every batch it reads starts right after the last seq it saw (a row
 * that commits later never has a lower seq), and at the end it has seen
 * every event once, seqs 1..N. */
#define WRITERS 3
#define WRITES  60
static void test_events_commit_order(void **state)
{
	struct fx *f = *state;
	pid_t pids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			char err[512], op[37];
			tgi_store *s = NULL;
			if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0)
				_exit(1);
			for (int i = 0; i < WRITES; i++) {
				tgi_op_record r = rec(new_id(op), "echo", "persisted", "sx", "{}", tgi_unix_ms());
				tgi_event ev[3] = {
					{ .type = "a", .ts_ms = 1 }, { .type = "b", .ts_ms = 2 }, { .type = "c", .ts_ms = 3 },
				};
				if (tgi_store_record(s, &r, ev, 1 + (size_t)(i % 3), NULL, TGI_SETTLE_NONE, err,
				                     sizeof err) < 0)
					_exit(2);
				for (int k = 1; k < 1 + i % 3; k++)
					if (ev[k].seq != ev[k - 1].seq + 1)
						_exit(3);
			}
			tgi_store_close(s);
			_exit(0);
		}
	}
	int64_t last = 0;
	int total = 0, expect = 0;
	for (int i = 0; i < WRITES; i++)
		expect += 1 + i % 3;
	expect *= WRITERS;
	char err[512];
	double deadline = tgi_now_ms() + 60000;
	while (total < expect && tgi_now_ms() < deadline) {
		json_t *evs = NULL;
		assert_int_equal(tgi_store_events(f->s, NULL, last, &evs, err, sizeof err), 0);
		for (size_t i = 0; i < json_array_size(evs); i++) {
			int64_t seq = json_integer_value(json_object_get(json_array_get(evs, i), "seq"));
			if (seq != last + 1)
				fail_msg("follower saw seq %lld after %lld", (long long)seq, (long long)last);
			last = seq;
			total++;
		}
		json_decref(evs);
	}
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(wait_child(pids[w]), 0);
	assert_int_equal(total, expect);
	assert_int_equal(sql_num(f->sql, "SELECT max(seq) FROM events"), expect);
	assert_int_equal(sql_num(f->sql, "SELECT count(DISTINCT seq) FROM events"), expect);
	/* each record's events are consecutive, in its order */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM (SELECT op_id FROM events GROUP BY op_id"
	                                 " HAVING max(seq) - min(seq) + 1 <> count(*)) x"), 0);
}

static void test_event_alone(void **state)
{
	struct fx *f = *state;
	char err[512];
	tgi_event ev = { .type = "mcp.server.down", .data = json_pack("{s:s}", "server", "fs") };
	assert_int_equal(tgi_store_event(f->s, NULL, &ev, err, sizeof err), 0);
	assert_int_equal(ev.seq, 1);
	json_decref(ev.data);
	tgi_event bad = { .type = "x" };
	assert_int_equal(tgi_store_event(f->s, "nope", &bad, err, sizeof err), -1);
	json_t *evs = NULL;
	assert_int_equal(tgi_store_events(f->s, NULL, 0, &evs, err, sizeof err), 0);
	assert_int_equal(json_array_size(evs), 1);
	json_t *e = json_array_get(evs, 0);
	assert_string_equal(json_string_value(json_object_get(e, "type")), "mcp.server.down");
	assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "server")), "fs");
	assert_null(json_object_get(e, "session")); /* no op: no op columns */
	json_decref(evs);
}

/* ---- approvals ---- */

static void approval(tgi_approval_row *a, const char *binding, int64_t expires_ms)
{
	memset(a, 0, sizeof *a);
	snprintf(a->tool, sizeof a->tool, "deploy");
	snprintf(a->principal, sizeof a->principal, "ci");
	snprintf(a->binding, sizeof a->binding, "%s", binding);
	a->args = "{\"env\":\"prod\"}";
	a->reason = "ask: deploy";
	a->expires_ms = expires_ms;
}

static void test_approvals(void **state)
{
	struct fx *f = *state;
	char err[512], pending[37];
	int found = 9;
	tgi_approval_row a, got;
	int64_t later = tgi_unix_ms() + 60000;

	approval(&a, BINDING_A, later);
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);
	assert_true(tgi_uuid_ok(a.id));
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_A, "ci", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, 2);
	assert_string_equal(pending, a.id);
	assert_int_equal(tgi_store_approval_get(f->s, a.id, &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "pending");
	assert_string_equal(got.args, "{\"env\":\"prod\"}");
	free(got.args);
	free(got.reason);

	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 1, "alice", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 0, "bob", NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "already approved"));
	/* taken once, by one of two handles */
	tgi_store *s2 = open_or_die(f->url);
	assert_int_equal(tgi_store_approval_take(s2, BINDING_A, "ci", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_A, "ci", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, 0);
	tgi_store_close(s2);
	assert_int_equal(tgi_store_approval_get(f->s, a.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "used");
	assert_string_equal(got.decided_by, "alice");
	free(got.args);
	free(got.reason);

	/* denied: the most recent decision says no */
	approval(&a, BINDING_B, later);
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 0, "bob", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_B, "ci", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, -1);
	/* another principal's binding is not this one's */
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_B, "eve", &found, pending, err, sizeof err), 0);
	assert_int_equal(found, 0);

	/* expired: deciding says so, listing shows it */
	approval(&a, BINDING_B, tgi_unix_ms() - 1);
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 1, "alice", NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "expired at"));
	tgi_approval_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].state, "expired"); /* newest first */
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_list(f->s, NULL, &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 0);
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_list(f->s, "denied", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	tgi_approval_rows_free(rows, n);

	assert_int_equal(tgi_store_approval_decide(f->s, "0190a000-0000-7000-8000-00000000dead", 1, "x",
	                                           NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "no approval"));
	assert_int_equal(tgi_store_approval_get(f->s, "0190a000-0000-7000-8000-00000000dead", &got,
	                                        &found, err, sizeof err), 0);
	assert_int_equal(found, 0);
}

/* An approval keeps the call's plan; a decision keeps who, when (the
 * server's clock) and why, sanitized and bounded as in SQLite. */
static void test_approval_plan_and_reason(void **state)
{
	struct fx *f = *state;
	char err[512], pending[37], big[TGI_APPROVAL_REASON_MAX + 2];
	int found = 0;
	tgi_approval_row a, b, got, *rows = NULL;
	size_t n = 0;
	const char *plan = "{\"argv\":[\"rm\",\"-rf\",\"build\"],\"workdir\":\".\",\"sandbox\":\"workspace-write\"}";

	approval(&a, BINDING_A, tgi_unix_ms() + 60000);
	a.plan = (char *)plan;
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, a.id, &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.plan, plan);
	assert_null(got.decided_reason);
	assert_int_equal(got.decided_ms, 0);
	tgi_approval_row_clear(&got);

	memset(big, 'r', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 0, "bob", big, err, sizeof err), -1);
	assert_non_null(strstr(err, "too long"));
	int64_t t0 = tgi_unix_ms();
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 0, "bob",
	                                           "  prod\x01is\nfrozen \xff  ", err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, a.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.decided_by, "bob");
	assert_string_equal(got.decided_reason, "prod is frozen \xEF\xBF\xBD");
	assert_true(got.decided_ms >= t0 - 5000 && got.decided_ms <= tgi_unix_ms() + 5000);
	assert_string_equal(got.plan, plan);
	tgi_approval_row_clear(&got);
	assert_int_equal(tgi_store_approval_take(f->s, BINDING_A, "ci", &found, pending, err,
	                                         sizeof err), 0);
	assert_int_equal(found, -1);
	assert_string_equal(pending, a.id);

	/* no plan, a blank reason (none), then the list shows both */
	approval(&b, BINDING_B, tgi_unix_ms() + 60000);
	assert_int_equal(tgi_store_approval_add(f->s, &b, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, b.id, 1, "alice", " \t ", err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, b.id);
	assert_null(rows[0].plan);
	assert_null(rows[0].decided_reason);
	assert_true(rows[0].decided_ms > 0);
	assert_string_equal(rows[1].decided_reason, "prod is frozen \xEF\xBF\xBD");
	assert_string_equal(rows[1].plan, plan);
	tgi_approval_rows_free(rows, n);

	/* a plan that is not a JSON object is refused */
	approval(&b, BINDING_B, tgi_unix_ms() + 60000);
	b.plan = "\"text\"";
	assert_int_equal(tgi_store_approval_add(f->s, &b, err, sizeof err), -1);
	assert_non_null(strstr(err, "plan"));
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM approvals"), 2);
}

/* One approved approval, several processes taking it at once: one wins. */
static void test_approval_take_race(void **state)
{
	struct fx *f = *state;
	char err[512];
	int go[2], res[2];
	pid_t pids[RACERS];
	tgi_approval_row a;
	approval(&a, BINDING_A, tgi_unix_ms() + 60000);
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, a.id, 1, "alice", NULL, err, sizeof err), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(res), 0);
	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c, pending[37];
			int found = 9;
			tgi_store *s = NULL;
			close(go[1]);
			if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0)
				_exit(2);
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			if (tgi_store_approval_take(s, BINDING_A, "ci", &found, pending, err, sizeof err) < 0)
				c = 'E';
			else
				c = (char)('0' + found + 1); /* -1..2 -> '0'..'3' */
			_exit(write(res[1], &c, 1) == 1 ? 0 : 4);
		}
	}
	close(go[0]);
	close(res[1]);
	sleep_ms(300);
	close(go[1]);
	int won = 0, none = 0;
	for (int i = 0; i < RACERS; i++) {
		char c = 0;
		assert_int_equal(read(res[0], &c, 1), 1);
		won += c == '2';
		none += c == '1';
	}
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(wait_child(pids[i]), 0);
	close(res[0]);
	assert_int_equal(won, 1);
	assert_int_equal(none, RACERS - 1);
}

/* A waiter uses the approval it waits on, not the newest of its binding:
 * of two queued for one call, approving the older one lets its waiter
 * run, and only it; one approval counts once, for its own principal and
 * binding, while it has not expired. */
static void test_approval_use(void **state)
{
	struct fx *f = *state;
	char err[512], pending[37], older[37];
	int used = 9, found = 9;
	tgi_approval_row a, got;
	int64_t later = tgi_unix_ms() + 60000;

	approval(&a, BINDING_A, later);
	OK(tgi_store_approval_add(f->s, &a, err, sizeof err));
	memcpy(older, a.id, sizeof older);
	sleep_ms(2);
	approval(&a, BINDING_A, later);
	OK(tgi_store_approval_add(f->s, &a, err, sizeof err));
	OK(tgi_store_approval_decide(f->s, older, 1, "alice", NULL, err, sizeof err));
	/* the newest of the binding is still pending: a take finds that one */
	OK(tgi_store_approval_take(f->s, BINDING_A, "ci", &found, pending, err, sizeof err));
	assert_int_equal(found, 2);
	assert_string_equal(pending, a.id);

	OK(tgi_store_approval_use(f->s, a.id, "ci", BINDING_A, &used, err, sizeof err));
	assert_int_equal(used, 0);   /* pending */
	OK(tgi_store_approval_use(f->s, older, "eve", BINDING_A, &used, err, sizeof err));
	assert_int_equal(used, 0);   /* another principal's */
	OK(tgi_store_approval_use(f->s, older, "ci", BINDING_B, &used, err, sizeof err));
	assert_int_equal(used, 0);   /* another call's */
	OK(tgi_store_approval_use(f->s, older, "ci", BINDING_A, &used, err, sizeof err));
	assert_int_equal(used, 1);
	OK(tgi_store_approval_use(f->s, older, "ci", BINDING_A, &used, err, sizeof err));
	assert_int_equal(used, 0);   /* once */
	OK(tgi_store_approval_get(f->s, older, &got, &found, err, sizeof err));
	assert_string_equal(got.state, "used");
	free(got.args);
	free(got.reason);
	OK(tgi_store_approval_get(f->s, a.id, &got, &found, err, sizeof err));
	assert_string_equal(got.state, "pending");
	free(got.args);
	free(got.reason);

	/* denied, and expired once approved: not used */
	OK(tgi_store_approval_decide(f->s, a.id, 0, "bob", NULL, err, sizeof err));
	OK(tgi_store_approval_use(f->s, a.id, "ci", BINDING_A, &used, err, sizeof err));
	assert_int_equal(used, 0);
	approval(&a, BINDING_B, tgi_unix_ms() + 400);
	OK(tgi_store_approval_add(f->s, &a, err, sizeof err));
	OK(tgi_store_approval_decide(f->s, a.id, 1, "alice", NULL, err, sizeof err));
	sleep_ms(600);
	OK(tgi_store_approval_use(f->s, a.id, "ci", BINDING_B, &used, err, sizeof err));
	assert_int_equal(used, 0);
	/* not an approval id */
	assert_int_equal(tgi_store_approval_use(f->s, "nope", "ci", BINDING_A, &used, err, sizeof err), -1);
	assert_non_null(strstr(err, "no approval"));
	assert_int_equal(tgi_store_approval_use(f->s, older, NULL, BINDING_A, &used, err, sizeof err), -1);
}

/* ---- rate-limit buckets ---- */

static void test_bucket_take(void **state)
{
	struct fx *f = *state;
	char err[512];
	int ok = -1;
	double wait = -1, left = -1;
	/* 2 tokens a second, a burst of 3: three now, then empty */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
		assert_int_equal(ok, 1);
		assert_true(left >= 2 - i && left < 2 - i + 0.2);   /* what is left, a little refilled */
	}
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
	assert_int_equal(ok, 0);
	assert_true(wait > 0 && wait <= 0.5);
	/* another process draws from the same bucket */
	tgi_store *s2 = open_or_die(f->url);
	assert_int_equal(tgi_store_bucket_take(s2, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
	assert_int_equal(ok, 0);
	/* another principal has its own */
	assert_int_equal(tgi_store_bucket_take(s2, "bob", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
	assert_int_equal(ok, 1);
	tgi_store_close(s2);
	/* refilled on the server's clock */
	sleep_ms(600);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
	assert_int_equal(ok, 0);
	/* never above the burst */
	sleep_ms(2100);
	int took = 0;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 2, 3, &ok, &left, &wait, err, sizeof err), 0);
		took += ok;
	}
	assert_int_equal(took, 3);
	double tokens = -1;
	int64_t upd = 0;
	int found = 0;
	assert_int_equal(tgi_store_bucket_get(f->s, "ci", "deploy", &tokens, &upd, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_true(tokens >= 0 && tokens < 1);
	/* bad rates */
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 0, 3, &ok, &left, &wait, err, sizeof err), -1);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "deploy", 1, 0.5, &ok, &left, &wait, err, sizeof err), -1);
	assert_int_equal(tgi_store_bucket_take(f->s, NULL, "deploy", 1, 2, &ok, &left, &wait, err, sizeof err), -1);
}

/* ---- pins and conversations ---- */

static void test_pins_and_messages(void **state)
{
	struct fx *f = *state;
	char err[512], pinned[65];
	tgi_pin_state st;
	assert_int_equal(tgi_store_pin_check(f->s, "fs.read", BINDING_A, &st, pinned, err, sizeof err), 0);
	assert_int_equal(st, TGI_PIN_NEW);
	assert_int_equal(tgi_store_pin_check(f->s, "fs.read", BINDING_A, &st, pinned, err, sizeof err), 0);
	assert_int_equal(st, TGI_PIN_SAME);
	assert_int_equal(tgi_store_pin_check(f->s, "fs.read", BINDING_B, &st, pinned, err, sizeof err), 0);
	assert_int_equal(st, TGI_PIN_CHANGED);
	assert_string_equal(pinned, BINDING_A);
	assert_int_equal(tgi_store_pin_set(f->s, "fs.read", BINDING_B, err, sizeof err), 0);
	assert_int_equal(tgi_store_pin_check(f->s, "fs.read", BINDING_B, &st, pinned, err, sizeof err), 0);
	assert_int_equal(st, TGI_PIN_SAME);
	assert_int_equal(tgi_store_pin_check(f->s, "fs.read", "XYZ", &st, pinned, err, sizeof err), -1);

	json_t *e1 = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "user", "content", "hi \"there\" \\",
	                       "role", "assistant", "content", "hello");
	json_t *e2 = json_pack("[{s:s, s:s}]", "role", "user", "content", "again");
	OK(tgi_store_messages_append(f->s, "agent1", "openai_chat", e1, err, sizeof err));
	OK(tgi_store_messages_append(f->s, "agent1", "openai_chat", e2, err, sizeof err));
	assert_int_equal(tgi_store_messages_append(f->s, "agent1", "anthropic", e2, err, sizeof err), -1);
	assert_non_null(strstr(err, "openai_chat"));
	json_t *all = NULL;
	char api[32];
	assert_int_equal(tgi_store_messages(f->s, "agent1", &all, api, err, sizeof err), 0);
	assert_string_equal(api, "openai_chat");
	assert_int_equal(json_array_size(all), 3);
	assert_true(json_equal(json_array_get(all, 0), json_array_get(e1, 0)));
	assert_true(json_equal(json_array_get(all, 2), json_array_get(e2, 0)));
	json_decref(all);
	assert_int_equal(tgi_store_messages(f->s, "nobody", &all, api, err, sizeof err), 0);
	assert_int_equal(json_array_size(all), 0);
	assert_string_equal(api, "");
	json_decref(all);
	json_decref(e1);
	json_decref(e2);
}

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
	approval(&a, BINDING_A, tgi_unix_ms() + 60000);
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
		if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0)
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
		if (tgi_store_open(f->url, 0, &s, err, sizeof err) < 0)
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

/* The same history, written into a store: calls of three tools (one
 * without a tool), several statuses, denials by rule, an error message,
 * sessions, an idempotent call, events of no op. */
static void write_history(tgi_store *s)
{
	static const struct {
		const char *tool, *status, *error_kind, *session, *envelope, *scope;
		double duration;
	} h[] = {
		{ "echo", "persisted", NULL, "s1", "{\"status\":\"persisted\",\"output\":\"a\"}", NULL, 3.25 },
		{ "echo", "persisted", NULL, "s1", "{\"status\":\"persisted\",\"output\":\"b\"}", NULL, 1.5 },
		{ "deploy", "denied", "not_permitted", "s2",
		  "{\"status\":\"denied\",\"error\":{\"kind\":\"not_permitted\",\"message\":\"no \\\"prod\\\"\","
		  "\"rule\":\"deny: deploy(env=prod)\"}}", NULL, 0.2 },
		{ "echo", "failed", "tool_error", "s1",
		  "{\"status\":\"failed\",\"error\":{\"kind\":\"tool_error\",\"message\":\"boom\"}}", NULL, 7 },
		{ "deploy", "denied", "not_permitted", NULL,
		  "{\"status\":\"denied\",\"error\":{\"kind\":\"not_permitted\",\"message\":\"m\","
		  "\"rule\":\"deny: deploy(env=prod)\"}}", NULL, 0.1 },
		{ "deploy", "denied", "rate_limited", NULL,
		  "{\"status\":\"denied\",\"error\":{\"kind\":\"rate_limited\",\"message\":\"slow\"}}", NULL, 0 },
		{ "write", "persisted", NULL, "s2", "{\"status\":\"persisted\",\"output\":null}", "key:w", 12 },
		{ NULL, "invalid", "unknown_tool", NULL,
		  "{\"status\":\"invalid\",\"error\":{\"kind\":\"unknown_tool\",\"message\":\"what\"}}", NULL, 0 },
		{ "echo", "committed", NULL, "s3", "not json {", NULL, 2 },
		{ "echo", "persisted", NULL, "s1", "{\"status\":\"persisted\",\"b\":1,\"a\":2}", NULL, 2 },
	};
	char err[512];
	const int64_t t0 = 1750000000000; /* fixed: the same ids and times in both stores */
	for (size_t i = 0; i < TGI_ARRAY_LEN(h); i++) {
		char op[37];
		int64_t ms = t0 + (int64_t)i * 1000;
		snprintf(op, sizeof op, "%08llx-%04llx-7000-8000-%012zx", (unsigned long long)(ms >> 16),
		         (unsigned long long)(ms & 0xffff), i + 1);
		tgi_op_record r = {
			.op_id = op, .call_id = "c", .session = h[i].session, .tool = h[i].tool,
			.principal = "ci", .status = h[i].status, .error_kind = h[i].error_kind,
			.idem_scope = h[i].scope, .args_redacted = "{\"k\":\"v\",\"a\":[1,2]}",
			.args_sha256 = BINDING_A, .envelope = h[i].envelope, .started_ms = ms,
			.duration_ms = h[i].duration, .loop = i % 2 ? "loopentry" : NULL,
		};
		json_t *d = json_pack("{s:s, s:i}", "z", "last", "a", (int)i);
		tgi_event ev[2] = {
			{ .type = "tool.call.received", .ts_ms = ms, .data = d },
			{ .type = "tool.call.done", .stage = "persist", .ts_ms = ms + 1 },
		};
		if (tgi_store_record(s, &r, ev, 2, h[i].scope, h[i].scope ? TGI_SETTLE_DONE : TGI_SETTLE_NONE,
		                     err, sizeof err) < 0)
			fail_msg("record: %s", err);
		json_decref(d);
		if (i == 6) {
			/* a claim whose call left no row: exported as a claim */
			tgi_idem_info info;
			if (tgi_store_idem_claim(s, "key:left", "01977420-dc00-7000-8000-0000000000ff", NULL, 30,
			                         &info, err, sizeof err) < 0)
				fail_msg("claim: %s", err);
		}
		if (i == 4) {
			tgi_event lone = { .type = "mcp.server.down", .ts_ms = ms + 2,
			                   .data = json_pack("{s:s}", "server", "fs") };
			if (tgi_store_event(s, NULL, &lone, err, sizeof err) < 0)
				fail_msg("event: %s", err);
			json_decref(lone.data);
		}
	}
}

/* Collects the export's rows; a claim's created_ms (the store's clock:
 * the server's for PostgreSQL) is checked to be about now and left out. */
static int collect(void *arg, json_t *row)
{
	json_t *claim = json_object_get(row, "claim");
	if (claim) {
		int64_t made = json_integer_value(json_object_get(claim, "created_ms"));
		if (llabs((long long)(made - tgi_unix_ms())) > 60000)
			fail_msg("a claim made %lld ms from now", (long long)(made - tgi_unix_ms()));
		json_object_del(claim, "created_ms");
	}
	json_array_append(arg, row);
	return 0;
}

static int stop_after_two(void *arg, json_t *row)
{
	json_array_append(arg, row);
	return json_array_size(arg) == 2 ? 7 : 0;
}

static void same_json(const char *what, json_t *a, json_t *b)
{
	char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
	if (!json_equal(a, b) || strcmp(x, y))  /* equal, key order too */
		fail_msg("%s differ:\nsqlite:   %s\npostgres: %s", what, x, y);
	free(x);
	free(y);
}

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
	/* a stop answered by the callback ends it, and the handle goes on */
	eb = json_array();
	assert_int_equal(tgi_store_export(f->s, 0, stop_after_two, eb, err, sizeof err), 7);
	assert_int_equal(json_array_size(eb), 2);
	json_decref(eb);
	OK(tgi_store_last_seq(f->s, &lb, err, sizeof err));
}

/* An export reads one snapshot: what another process writes while it
 * runs (an event of no op, a claim that left no row) is not in it, though
 * the parts that list those are read after it was written. */
struct during {
	tgi_store *other;
	json_t    *rows;
	int        wrote, failed;
};

static int write_during(void *arg, json_t *row)
{
	struct during *d = arg;
	char err[512];
	json_array_append(d->rows, row);
	if (d->wrote++)
		return 0;
	tgi_event ev = { .type = "mcp.server.down", .ts_ms = tgi_unix_ms() };
	tgi_idem_info info;
	d->failed = tgi_store_event(d->other, NULL, &ev, err, sizeof err) < 0 ||
	            tgi_store_idem_claim(d->other, "key:during", "0190a000-0000-7000-8000-0000000000dd",
	                                 NULL, 30, &info, err, sizeof err) < 0;
	return 0;
}

static void test_export_one_snapshot(void **state)
{
	struct fx *f = *state;
	char err[512];
	write_history(f->s);
	struct during d = { .other = open_or_die(f->url), .rows = json_array() };
	OK(tgi_store_export(f->s, 0, write_during, &d, err, sizeof err));
	assert_int_equal(d.failed, 0);
	assert_int_equal(json_array_size(d.rows), 12);   /* 10 ops, 1 event of no op, 1 claim */
	json_decref(d.rows);
	/* written, and in the next export */
	d.rows = json_array();
	d.wrote = 1;
	OK(tgi_store_export(f->s, 0, write_during, &d, err, sizeof err));
	assert_int_equal(json_array_size(d.rows), 14);
	json_decref(d.rows);
	tgi_store_close(d.other);
	/* the handle goes on after it */
	int64_t seq;
	OK(tgi_store_last_seq(f->s, &seq, err, sizeof err));
}

/* ---- eval runs (toolgate eval) ---- */

#define EVAL_ID(n) "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e0" #n
#define EVAL_REPORT "{\"scores\":{\"overall\":{\"cases\":98}},\"note\":\"caf\xc3\xa9 \\\"q\\\"\"}"

/* Four runs put out of order: 1 (m1, ts 1000), 2 (m1, ts 2000, three runs,
 * no cases, an empty report), 3 (m2, ts 2000, no provider, profile nor
 * pass rate), 4 (m1, ts 3000); every run without an args rate. */
static void eval_put_four(tgi_store *s)
{
	char err[512];
	tgi_eval_row r[4];
	static const struct { int id; int64_t ts; const char *model; double pass; } k[4] = {
		{ 4, 3000, "m1", 1.0 }, { 1, 1000, "m1", 0.5 }, { 3, 2000, "m2", NAN },
		{ 2, 2000, "m1", 0.875 },
	};
	static const char *const ids[] = { "", EVAL_ID(1), EVAL_ID(2), EVAL_ID(3), EVAL_ID(4) };
	for (int i = 0; i < 4; i++) {
		r[i] = (tgi_eval_row){
			.id = ids[k[i].id], .ts_ms = k[i].ts, .provider = "scripted", .api = "openai-chat",
			.model = k[i].model, .profile = "coding", .manifest = BINDING_A, .suite = BINDING_B,
			.cases = 98, .runs = 1, .score = { 0.95, 0.75, NAN, 1.0, k[i].pass },
			.report = EVAL_REPORT,
		};
	}
	r[2].provider = r[2].profile = NULL;
	r[3].cases = 0;
	r[3].runs = 3;
	r[3].report = "{}";
	for (int i = 0; i < 4; i++)
		OK(tgi_store_eval_put(s, &r[i], err, sizeof err));
}

/* The last digit of each id listed, joined by ",". */
static void eval_ids(tgi_store *s, const char *model, int64_t limit, char *out, size_t cap)
{
	char err[512];
	json_t *v = NULL, *run;
	size_t i, k = 0;
	OK(tgi_store_eval_list(s, model, limit, &v, err, sizeof err));
	out[0] = '\0';
	json_array_foreach(v, i, run) {
		const char *id = json_string_value(json_object_get(run, "id"));
		assert_non_null(id);
		k += (size_t)snprintf(out + k, cap - k, "%s%c", i ? "," : "", id[strlen(id) - 1]);
	}
	json_decref(v);
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

/* Runs kept and listed as store.h says (newest limit, oldest first, a tie
 * on ts_ms by id; of one model or all; rates and texts not given null,
 * the report parsed), refused alike, and the same lists as the SQLite
 * ledger gives for the same runs, from a table of the same columns. */
static void test_eval_runs(void **state)
{
	struct fx *f = *state;
	char err[512], ids[64], path[96], cols[512], pcols[512];
	json_t *v = NULL;

	OK(tgi_store_eval_list(f->s, NULL, 20, &v, err, sizeof err));
	assert_int_equal(json_array_size(v), 0);
	json_decref(v);
	eval_put_four(f->s);
	eval_ids(f->s, NULL, 20, ids, sizeof ids);
	assert_string_equal(ids, "1,2,3,4");
	eval_ids(f->s, NULL, 0, ids, sizeof ids);
	assert_string_equal(ids, "1,2,3,4");
	eval_ids(f->s, NULL, 2, ids, sizeof ids);
	assert_string_equal(ids, "3,4");
	eval_ids(f->s, "m1", 20, ids, sizeof ids);
	assert_string_equal(ids, "1,2,4");
	eval_ids(f->s, "m1", 2, ids, sizeof ids);
	assert_string_equal(ids, "2,4");
	eval_ids(f->s, "nobody", 20, ids, sizeof ids);
	assert_string_equal(ids, "");

	OK(tgi_store_eval_list(f->s, NULL, 20, &v, err, sizeof err));
	json_t *r = json_array_get(v, 0);
	assert_int_equal(json_object_size(r), 12);
	assert_string_equal(json_string_value(json_object_get(r, "ts")), "1970-01-01T00:00:01.000Z");
	assert_string_equal(json_string_value(json_object_get(r, "manifest")), BINDING_A);
	assert_int_equal(json_integer_value(json_object_get(r, "cases")), 98);
	json_t *sc = json_object_get(r, "scores");
	assert_true(json_real_value(json_object_get(sc, "tool")) == 0.95);
	assert_true(json_is_null(json_object_get(sc, "args")));
	assert_true(json_real_value(json_object_get(sc, "pass")) == 0.5);
	json_t *want = json_loads(EVAL_REPORT, 0, NULL);
	assert_true(json_equal(json_object_get(r, "report"), want));
	json_decref(want);
	r = json_array_get(v, 2);
	assert_true(json_is_null(json_object_get(r, "provider")));
	assert_true(json_is_null(json_object_get(r, "profile")));
	assert_true(json_is_null(json_object_get(json_object_get(r, "scores"), "pass")));
	json_decref(v);
	/* kept as given: NAN as NULL, the report's text as put */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM eval_runs WHERE score_args IS NULL"), 4);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM eval_runs WHERE score_pass IS NULL"), 1);
	char text[256];
	sqlx(f->sql, "SELECT report FROM eval_runs WHERE id = '" EVAL_ID(1) "'", text, sizeof text);
	assert_string_equal(text, EVAL_REPORT);

	/* refused: an id kept before (the first stays), a report not an object, a bad id */
	tgi_eval_row dup = { .id = EVAL_ID(1), .ts_ms = 5000, .model = "m9", .report = "{}",
	                     .score = { NAN, NAN, NAN, NAN, NAN } };
	assert_int_equal(tgi_store_eval_put(f->s, &dup, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot keep eval run " EVAL_ID(1)));
	dup.id = EVAL_ID(5);
	dup.report = "[]";
	assert_int_equal(tgi_store_eval_put(f->s, &dup, err, sizeof err), -1);
	assert_string_equal(err, "the report of eval run " EVAL_ID(5) " is not a JSON object");
	dup.id = "nope";
	dup.report = "{}";
	assert_int_equal(tgi_store_eval_put(f->s, &dup, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a UUID"));
	dup.id = EVAL_ID(5);
	dup.model = "\xc3";
	assert_int_equal(tgi_store_eval_put(f->s, &dup, err, sizeof err), -1);
	assert_string_equal(err, "the model of an eval run is not UTF-8");
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM eval_runs"), 4);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM eval_runs WHERE model = 'm9'"), 0);

	/* the same runs in SQLite: the same table, the same lists */
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

/* A version 5 ledger (migrated to 5 and no further) with an approval
 * that has its plan and reason, a call and a conversation is upgraded to
 * 6 by an ordinary open: its rows stay and read back, and runs are kept. */
static void test_upgrade_v5_eval(void **state)
{
	struct fx *f = *state;
	char err[512] = "", sql[1024], api[32];
	int v = -1, found = 0;
	tgi_approval_row got;
	json_t *j = NULL;
	int64_t later = tgi_unix_ms() + 3600 * 1000;

	assert_int_equal(open_store(f, TGI_STORE_NO_MIGRATE), 0);
	OK(tgi_store_migrate(f->s, 5, 0, NULL, NULL, err, sizeof err));
	tgi_store_close(f->s);
	f->s = NULL;
	assert_int_equal(sql_num(f->sql, "SELECT max(version) FROM toolgate_schema"), 5);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_tables WHERE tablename = 'eval_runs'"), 0);
	snprintf(sql, sizeof sql,
	         "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"
	         " created_ms, expires_ms, decided_by, decided_ms, plan, decided_reason) VALUES"
	         " ('%s', NULL, 'shell', 'local', '%s', 'denied', '{}', 'ask: shell', 1000, %lld,"
	         " 'bob', 1500, '{\"argv\":[\"rm\"]}', 'not today');"
	         "INSERT INTO ops(op_id, tool, status, started_ms, envelope) VALUES"
	         " ('0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'read_file', 'persisted', 1000, '{}');"
	         "INSERT INTO messages(session, seq, api, ts_ms, entry) VALUES"
	         " ('agent-1', 1, 'anthropic', 1000, '{\"role\":\"user\",\"content\":\"hi\"}')",
	         EVAL_ID(9), BINDING_A, (long long)later);
	sqlx(f->sql, sql, NULL, 0);

	/* a claim and a call written before version 7: a plain scope, the key in the envelope */
	sqlx(f->sql, "INSERT INTO idem(scope, op_id, state, created_ms, updated_ms) VALUES"
	             " ('key:old-sk-1', '0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'done', 1000, 1000);"
	             "INSERT INTO ops(op_id, tool, status, started_ms, idem_scope, envelope) VALUES"
	             " ('0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'deploy', 'persisted', 1000,"
	             " 'key:old-sk-1', '{\"output\":{\"ok\":1},\"idempotency_key\":\"old-sk-1\"}')",
	     NULL, 0);

	open_adopting(f);
	OK(tgi_store_schema_version(f->s, &v, err, sizeof err));
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM toolgate_schema"), TGI_STORE_SCHEMA_VERSION);
	/* version 7: the scope is its digest, the key masked; the old done claim
	 * has no MAC, and so no authority: an unknown outcome, never a replay */
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM idem WHERE scope = 'sha256:' ||"
	                                 " encode(sha256(convert_to('key:old-sk-1', 'UTF8')), 'hex')"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops WHERE idem_scope LIKE 'sha256:%%'"), 1);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops WHERE strpos(envelope, 'old-sk-1') > 0"), 0);
	{
		tgi_idem_info oi;
		memset(&oi, 0, sizeof oi);
		OK(tgi_store_idem_claim(f->s, "key:old-sk-1", "0193a5f0-7c30-7d2a-9b1e-4f0c2a9d1e77", NULL,
		                        10, &oi, err, sizeof err));
		assert_int_equal(oi.state, TGI_IDEM_UNKNOWN);
		assert_int_equal(oi.unverified, 1);
		free(oi.envelope);
	}
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM pg_indexes WHERE indexname IN"
	                                 " ('eval_runs_ts', 'eval_runs_model')"), 2);
	assert_int_equal(sql_num(f->sql, "SELECT count(*) FROM ops"), 2);
	OK(tgi_store_approval_get(f->s, EVAL_ID(9), &got, &found, err, sizeof err));
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.plan, "{\"argv\":[\"rm\"]}");
	assert_string_equal(got.decided_reason, "not today");
	tgi_approval_row_clear(&got);
	OK(tgi_store_messages(f->s, "agent-1", &j, api, err, sizeof err));
	assert_string_equal(api, "anthropic");
	assert_int_equal(json_array_size(j), 1);
	json_decref(j);
	OK(tgi_store_eval_list(f->s, NULL, 20, &j, err, sizeof err));
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	eval_put_four(f->s);
	char ids[64];
	eval_ids(f->s, "m1", 0, ids, sizeof ids);
	assert_string_equal(ids, "1,2,4");
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
		cmocka_unit_test_setup_teardown(test_open_migrates_empty, setup_db, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_steps, setup_db, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_race, setup_db, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_ledger, setup_db, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_v4_approvals, setup_db, teardown),
		cmocka_unit_test(test_unreachable_named_without_password),
		cmocka_unit_test_setup_teardown(test_transient_and_reconnect, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_record_lost_connection, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_claim_lifecycle, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_forged_rows_pg, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_dead_owner_this_host, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_outcomes, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_owner_other_host, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_claim_race, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_record_atomic, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_loop_window, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_events_commit_order, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_event_alone, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_approvals, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_shared_handle, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_approval_plan_and_reason, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_approval_take_race, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_take, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_pins_and_messages, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_watches, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_same_as_sqlite, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_lost, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_record_retried_on_fresh_connection, setup_store,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_failed_settle_after_reconnect, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_failed_settle_at_once, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_close_deletes_lost_claim, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_bounded, setup_db, teardown),
		cmocka_unit_test_setup_teardown(test_owner_through_server_restart, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_owner_identity, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_approval_use, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_export_one_snapshot, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_eval_runs, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_v5_eval, setup_db, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
