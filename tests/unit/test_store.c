/*
 * test_store.c — the SQLite ledger and spill files (src/store/): the store
 * contract of store_contract.h run on an SQLite ledger (a file in a fresh
 * temporary directory), then what only SQLite does, against DESIGN §1
 * "Idempotency" and §5: the WAL kept bounded by the checkpointer thread
 * and by short handles' close, the thread stopped by close; the lean
 * schema; owners judged by pid on this host (pid reuse) and by lease
 * elsewhere (a bare hostname from an older toolgate, a container sharing
 * the hostname: pid namespaces apart), and operator resolution refused
 * while an unknown claim's owner may still run it; the state-directory and
 * ledger-file checks (symlinks, owners, non-regular files); corrupt,
 * read-only and full ledgers; spill files; ledgers of the schemas older
 * toolgates wrote, frozen here as they shipped (version 1 gains pins, 2
 * upgrades in place, 4's approvals kept through 5); a copy of a ledger,
 * adoption and mask keys, a ledger in memory.
 *
 * Owns: nothing outside its temporary directories.  Must not: depend on the
 * network or on files outside the repository.  Children of fork() report
 * through exit codes and pipes and leave with _exit(), never through cmocka.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/impl.h"
#include "util/util.h"

#define NOBODY 65534

struct fx {
	char       dir[64];    /* a fresh temporary directory */
	char       where[128]; /* <dir>/ledger.db */
	tgi_store *s;          /* open on where, or NULL */
};

#define CX_PG 0
#include "store_contract.h"

/* ---- the backend ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup_dir_in(void **state, const char *base)
{
	struct fx *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "%s/tg_store_XXXXXX", base);
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->where, sizeof f->where, "%s/ledger.db", f->dir);
	*state = f;
	return 0;
}

static int setup_empty(void **state)
{
	return setup_dir_in(state, "/tmp");
}

static int open_fixture(struct fx *f)
{
	char err[512];
	if (tgi_store_open(f->where, 0, &f->s, err, sizeof err) < 0) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	return 0;
}

static int setup_store(void **state)
{
	if (setup_empty(state) < 0)
		return -1;
	return open_fixture(*state);
}

/* In memory-backed /dev/shm when there is one, for tests that write a lot
 * and are about what is written, not how fast the disk syncs it. */
static int setup_store_mem(void **state)
{
	if (setup_dir_in(state, access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") < 0)
		return -1;
	return open_fixture(*state);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	tgi_store_close(f->s);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static void path_in(const struct fx *f, const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", f->dir, name);
}

/* toolgate_scope_digest(text) on a raw connection: what the ledger keeps of
 * a scope (tgi_scope_digest), so that queries can name a scope by its text */
static void raw_digest_fn(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	char d[TGI_SCOPE_DIGEST_LEN + 1];
	(void)argc;
	tgi_scope_digest((const char *)sqlite3_value_text(argv[0]), d);
	sqlite3_result_text(cx, d, -1, SQLITE_TRANSIENT);
}

static void raw_open(const char *path, sqlite3 **db)
{
	assert_int_equal(sqlite3_open(path, db), SQLITE_OK);
	sqlite3_busy_timeout(*db, 5000);
	sqlite3_create_function(*db, "toolgate_scope_digest", 1, SQLITE_UTF8, NULL, raw_digest_fn,
	                        NULL, NULL);
}

/* First column of the first row of sql on the ledger at path (raw SQLite),
 * or -1 when there is no row (or it is NULL). */
static int64_t raw_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;
	raw_open(path, &db);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void raw_text(const char *path, const char *sql, char *out, size_t cap)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	out[0] = '\0';
	raw_open(path, &db);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;
	raw_open(path, &db);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

static long long cx_num(struct fx *f, const char *fmt, ...)
{
	char sql[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	return raw_int(f->where, sql);
}

static void cx_text(struct fx *f, char *out, size_t cap, const char *fmt, ...)
{
	char sql[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	raw_text(f->where, sql, out, cap);
}

static void cx_exec(struct fx *f, const char *fmt, ...)
{
	char sql[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	raw_exec(f->where, sql);
}

static int cx_has_table(struct fx *f, const char *name)
{
	return (int)cx_num(f, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
	                   name);
}

static int cx_has_index(struct fx *f, const char *name)
{
	return (int)cx_num(f, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '%s'",
	                   name);
}

static int cx_has_column(struct fx *f, const char *table, const char *column)
{
	return (int)cx_num(f, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'", table,
	                   column);
}

static void cx_schema_is(struct fx *f, int v)
{
	assert_int_equal(cx_num(f, "PRAGMA user_version"), v);
}

static void cx_schema_ahead(struct fx *f)
{
	cx_exec(f, "PRAGMA user_version = %d", TGI_STORE_SCHEMA_VERSION + 1);
}

static void cx_integrity(struct fx *f)
{
	char text[256];
	cx_text(f, text, sizeof text, "PRAGMA integrity_check");
	assert_string_equal(text, "ok");
}

/* ---- checkpoints ---- */

/* Bytes of the WAL file of the ledger at db (0 when there is none). */
static long long wal_size(const char *db)
{
	char p[160];
	struct stat st;
	snprintf(p, sizeof p, "%s-wal", db);
	return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

/* How many times the WAL of the ledger at db has started over: its
 * header's checkpoint sequence number (bytes 12-15, big-endian). */
static unsigned wal_restarts(const char *db)
{
	char p[160];
	unsigned char h[16] = { 0 };
	snprintf(p, sizeof p, "%s-wal", db);
	FILE *fp = fopen(p, "rb");
	if (fp) {
		if (fread(h, 1, sizeof h, fp) != sizeof h)
			memset(h, 0, sizeof h);
		fclose(fp);
	}
	return (unsigned)h[12] << 24 | (unsigned)h[13] << 16 | (unsigned)h[14] << 8 | h[15];
}

/* Checkpointer threads (named by the store) in this process. */
static int checkpointers(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[300], name[32] = "";
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/proc/self/task/%s/comm", de->d_name);
		FILE *fp = fopen(p, "r");
		if (fp && fgets(name, sizeof name, fp))
			n += !strncmp(name, "tg-checkpoint", 13);
		if (fp)
			fclose(fp);
	}
	if (d)
		closedir(d);
	return n;
}

/* Record one call with an envelope of about env_kb KB and three events. */
static void record_sized(tgi_store *s, size_t env_kb)
{
	static char env[512 * 1024];
	static size_t filled;
	char id[37], err[512];
	size_t n = env_kb * 1024 < sizeof env ? env_kb * 1024 : sizeof env - 1;
	if (n != filled) {
		memset(env, 'x', n);
		memcpy(env, "{\"output\":\"", 11);
		memcpy(env + n - 2, "\"}", 3);
		filled = n;
	}
	tgi_uuidv7(id);
	int64_t t = tgi_unix_ms();
	tgi_op_record op = { .op_id = id, .tool = "read_file", .principal = "local",
	                     .status = "persisted", .args_redacted = "{\"path\":\"small.txt\"}",
	                     .envelope = env, .started_ms = t };
	tgi_event ev[3] = { { "tool.call.received", "decode", NULL, t, 0 },
	                    { "tool.call.started", "execute", NULL, t, 0 },
	                    { "tool.call.persisted", "persist", NULL, t, 0 } };
	if (tgi_store_record(s, &op, ev, 3, NULL, TGI_SETTLE_NONE, err, sizeof err) < 0)
		fail_msg("record: %s", err);
}

#define WAL_FRAME 4120 /* a 4 KB page and its frame header */

/* A long-lived handle: past a few thousand WAL pages its checkpointer
 * thread copies the WAL into the database and the WAL starts over, cycle
 * after cycle, before it reaches the size at which commits would
 * checkpoint themselves; closing the handle stops the thread; nothing
 * recorded is lost. */
static void test_wal_checkpointed_by_thread(void **state)
{
	struct fx *f = *state;
	enum { MAX = 20000 };
	long long most = 0;
	int n = 0, seen = 0;

	assert_int_equal(checkpointers(), 0);
	/* 4 KB envelopes, ~8 frames a call: a cycle is ~1,000 calls */
	for (; n < MAX && wal_restarts(f->where) < 2; n++) {
		record_sized(f->s, 4);
		if (n % 10 == 0) {
			long long w = wal_size(f->where);
			most = w > most ? w : most;
			seen |= checkpointers() == 1;
		}
	}
	if (n == MAX)
		fail_msg("the WAL did not start over twice in %d calls", MAX);
	if (most >= 24000LL * WAL_FRAME)
		fail_msg("the WAL grew to %lld bytes", most);
	assert_true(seen);
	tgi_store_close(f->s);
	f->s = NULL;
	assert_int_equal(checkpointers(), 0);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), n);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM events"), 3 * n);
	char ok[32];
	raw_text(f->where, "PRAGMA quick_check", ok, sizeof ok);
	assert_string_equal(ok, "ok");
}

/* Short processes (a `toolgate call` each) that add a row while another
 * process keeps the ledger open: SQLite's own checkpoint at close does not
 * run for them (they are not the last connection) and they start no
 * thread, so their close checkpoints a WAL past the threshold, and it
 * starts over instead of growing. */
static void test_wal_checkpointed_by_short_handles(void **state)
{
	struct fx *f = *state;
	enum { N = 110 }; /* 400 KB envelopes: ~11,000 frames in all */
	char err[512];
	sqlite3 *keep;
	long long most = 0;

	tgi_store_close(f->s);
	f->s = NULL;
	assert_int_equal(sqlite3_open(f->where, &keep), SQLITE_OK);
	assert_int_equal(sqlite3_exec(keep, "SELECT count(*) FROM ops", NULL, NULL, NULL), SQLITE_OK);
	for (int i = 0; i < N; i++) {
		tgi_store *s;
		assert_int_equal(tgi_store_open(f->where, 0, &s, err, sizeof err), 0);
		record_sized(s, 400);
		assert_int_equal(checkpointers(), 0);
		tgi_store_close(s);
		long long w = wal_size(f->where);
		most = w > most ? w : most;
	}
	assert_true(wal_restarts(f->where) >= 1);
	sqlite3_close(keep);
	if (most >= 9000LL * WAL_FRAME)
		fail_msg("the WAL grew to %lld bytes", most);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), N);
}

/* ---- owners: by pid on this host, by lease elsewhere ---- */

/* The MAC column of an in_flight row planted by hand (as the gate would
 * write it: no binding), quoted for SQL. */
static const char *fly_mac(tgi_store *s, const char *scope, const char *op)
{
	static char out[4][70];
	static int i;
	char mac[65], d[TGI_SCOPE_DIGEST_LEN + 1];
	tgi_scope_digest(scope, d);   /* the ledger keeps, and MACs, the scope's digest */
	tgi_mac_idem(s, d, op, NULL, "in_flight", NULL, mac);
	char *o = out[i++ % 4];
	snprintf(o, 70, "'%s'", mac);
	return o;
}

static void test_idem_pid_reuse_and_other_hosts(void **state)
{
	struct fx *f = *state;
	tgi_idem_info info;
	char host[512], name[256], boot[64], sql[1024], a[37], b[37], c[37], err[512];

	self_identity(host, sizeof host, name, boot);
	tgi_uuidv7(a);
	tgi_uuidv7(b);
	tgi_uuidv7(c);
	int64_t now = tgi_unix_ms();

	/* (that a claim names this host by hostname, boot id and pid
	 * namespace is the contract's test_owner_identity) */
	char d[37];
	tgi_uuidv7(d);

	/* our own pid, but another start time: a reused pid, the owner is dead */
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem VALUES(toolgate_scope_digest('r:reuse'), '%s', 'in_flight', '%s', %d, 1, %lld, 0, 0, NULL, %s)", a,
	         host, (int)getpid(), (long long)now + 60000, fly_mac(f->s, "r:reuse", a));
	raw_exec(f->where, sql);
	assert_int_equal(claim(f->s, "r:reuse", b, 10, &info), TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, a);

	/* the same hostname and boot, another pid namespace (a gate in a
	 * container sharing the hostname): its pid means nothing here, so it
	 * is not looked up; the lease decides */
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem VALUES(toolgate_scope_digest('r:container'), '%s', 'in_flight', '%s/%s/1', %d, 1, %lld,"
	         " 0, 0, NULL, %s)", c, name, boot, (int)getpid(), (long long)now + 20000, fly_mac(f->s, "r:container", c));
	raw_exec(f->where, sql);
	assert_int_equal(claim(f->s, "r:container", d, 10, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, c);
	raw_exec(f->where, "UPDATE idem SET lease_until_ms = 1 WHERE scope = toolgate_scope_digest('r:container')");
	assert_int_equal(claim(f->s, "r:container", d, 10, &info), TGI_IDEM_UNKNOWN);

	/* a bare hostname (a row from before the host said more): another
	 * host's too, whatever its pid; the lease decides */
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem VALUES(toolgate_scope_digest('r:bare'), '%s', 'in_flight', '%s', %d, 1, %lld, 0, 0, NULL, %s)", d,
	         name, (int)getpid(), (long long)now + 20000, fly_mac(f->s, "r:bare", d));
	raw_exec(f->where, sql);
	assert_int_equal(claim(f->s, "r:bare", a, 10, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, d);
	raw_exec(f->where, "UPDATE idem SET lease_until_ms = 1 WHERE scope = toolgate_scope_digest('r:bare')");
	assert_int_equal(claim(f->s, "r:bare", a, 10, &info), TGI_IDEM_UNKNOWN);

	/* unknown, marked so by another process while its owner (on another
	 * host, within its lease) may still run it: not resolved under it */
	char m[37];
	tgi_uuidv7(m);
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem VALUES(toolgate_scope_digest('r:marked'), '%s', 'unknown', 'elsewhere.invalid/%s/7', 1, 1,"
	         " %lld, 0, 0, NULL, NULL)", m, boot, (long long)now + 20000);
	raw_exec(f->where, sql);
	assert_int_equal(tgi_store_op_resolve(f->s, m, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "still running"));
	assert_non_null(strstr(err, "host 'elsewhere.invalid'"));   /* the hostname alone */
	raw_exec(f->where, "UPDATE idem SET lease_until_ms = 1 WHERE scope = toolgate_scope_digest('r:marked')");
	assert_int_equal(tgi_store_op_resolve(f->s, m, 0, err, sizeof err), 0);

	/* another host: the lease decides */
	snprintf(sql, sizeof sql,
	         "INSERT INTO idem VALUES(toolgate_scope_digest('r:remote'), '%s', 'in_flight', 'elsewhere.invalid', 1, 1, %lld, 0, 0, NULL, %s)",
	         b, (long long)now + 20000, fly_mac(f->s, "r:remote", b));
	raw_exec(f->where, sql);
	assert_int_equal(claim(f->s, "r:remote", c, 10, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, b);
	assert_true(info.retry_after_s > 15.0 && info.retry_after_s <= 20.0);
	assert_int_equal(tgi_store_op_resolve(f->s, b, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "still running"));
	assert_non_null(strstr(err, "elsewhere.invalid"));
	raw_exec(f->where, "UPDATE idem SET lease_until_ms = 1 WHERE scope = toolgate_scope_digest('r:remote')");
	assert_int_equal(claim(f->s, "r:remote", c, 10, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(tgi_store_op_resolve(f->s, b, 0, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "r:remote", c, 10, &info), TGI_IDEM_CLAIMED);
}

/* ---- the state directory and the ledger file ---- */

static void test_state_dir(void **state)
{
	struct fx *f = *state;
	char err[512], p[128], other[128];
	struct stat st;

	int ws = open(f->dir, O_RDONLY | O_DIRECTORY);
	assert_true(ws >= 0);

	/* created 0700 when missing, opened again when present */
	int fd = tgi_state_dir_open(ws, f->dir, err, sizeof err);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	close(fd);
	fd = tgi_state_dir_open(ws, f->dir, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);

	/* a symlink is refused, even to a directory we own */
	path_in(f, ".toolgate", p, sizeof p);
	path_in(f, "elsewhere", other, sizeof other);
	assert_int_equal(rename(p, other), 0);
	assert_int_equal(symlink("elsewhere", p), 0);
	assert_int_equal(tgi_state_dir_open(ws, f->dir, err, sizeof err), -1);
	assert_string_equal(err,
	                    ".toolgate is a symlink; refusing to use it (a repository must not redirect the ledger)");
	/* a dangling one too (mkdir must not follow it) */
	unlink(p);
	assert_int_equal(symlink("nowhere/at/all", p), 0);
	assert_int_equal(tgi_state_dir_open(ws, f->dir, err, sizeof err), -1);
	assert_non_null(strstr(err, "is a symlink"));
	path_in(f, "nowhere", other, sizeof other);
	assert_int_equal(access(other, F_OK), -1);
	unlink(p);

	/* a file */
	int x = open(p, O_CREAT | O_WRONLY, 0600);
	close(x);
	assert_int_equal(tgi_state_dir_open(ws, f->dir, err, sizeof err), -1);
	assert_string_equal(err, ".toolgate is not a directory; refusing to use it");
	unlink(p);

	/* someone else's */
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	assert_int_equal(tgi_state_dir_open(ws, f->dir, err, sizeof err), -1);
	assert_non_null(strstr(err, ".toolgate is owned by uid 65534, not by the current user"));
	close(ws);
}

static void test_ledger_file_checks(void **state)
{
	struct fx *f = *state;
	char err[512], p[256], target[256];
	tgi_store *s = NULL;

	/* the file is a symlink (to a valid ledger we own) */
	path_in(f, "real.db", target, sizeof target);
	assert_int_equal(tgi_store_open(target, 0, &s, err, sizeof err), 0);
	tgi_store_close(s);
	path_in(f, "link.db", p, sizeof p);
	assert_int_equal(symlink("real.db", p), 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_null(s);
	assert_non_null(strstr(err, "link.db' is a symlink; refusing to use it"));

	/* its directory is a symlink */
	char sub[128], sublink[128];
	path_in(f, "sub", sub, sizeof sub);
	path_in(f, "sublink", sublink, sizeof sublink);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(symlink("sub", sublink), 0);
	snprintf(p, sizeof p, "%s/ledger.db", sublink);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "the ledger directory"));
	assert_non_null(strstr(err, "is a symlink"));
	snprintf(p, sizeof p, "%s/ledger.db", sub);
	assert_int_equal(access(p, F_OK), -1); /* nothing created through it */

	/* a side file (the WAL) planted as a symlink */
	snprintf(target, sizeof target, "%s/ledger.db-wal", sub);
	assert_int_equal(symlink("/dev/null", target), 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "ledger.db-wal' is a symlink"));
	unlink(target);

	/* not a regular file: a FIFO (never opened, so no hang) and a directory */
	path_in(f, "fifo.db", p, sizeof p);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "fifo.db' is not a regular file"));
	path_in(f, "dir.db", p, sizeof p);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a regular file"));
	snprintf(p, sizeof p, "%s/", f->dir);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "names a directory"));

	/* owned by someone else: the file, or its directory */
	path_in(f, "theirs.db", p, sizeof p);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), 0);
	tgi_store_close(s);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "theirs.db' is owned by uid 65534"));
	assert_int_equal(chown(sub, NOBODY, NOBODY), 0);
	snprintf(p, sizeof p, "%s/ledger.db", sub);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "the ledger directory"));
	assert_non_null(strstr(err, "is owned by uid 65534"));

	/* a missing directory, an empty path */
	path_in(f, "missing/ledger.db", p, sizeof p);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(tgi_store_open("", 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "empty"));

	/* a new ledger file and its side files are private */
	struct stat st;
	path_in(f, "private.db", p, sizeof p);
	assert_int_equal(tgi_store_open(p, 1, &s, err, sizeof err), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char wal[300];
	snprintf(wal, sizeof wal, "%s-wal", p);
	assert_int_equal(stat(wal, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char mode[16];
	raw_text(p, "PRAGMA journal_mode", mode, sizeof mode);
	assert_string_equal(mode, "wal");
	tgi_store_close(s);

	/* a relative path works (through the process's directory) */
	char cwd[256];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(f->dir), 0);
	assert_int_equal(tgi_store_open("relative.db", 0, &s, err, sizeof err), 0);
	tgi_store_close(s);
	assert_int_equal(chdir(cwd), 0);
}

static void write_file(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, cap);
	close(fd);
	assert_true(n >= 0);
	return (size_t)n;
}

static void test_corrupt_ledger(void **state)
{
	struct fx *f = *state;
	char err[512], p[160];
	tgi_store *s = NULL;

	/* garbage */
	path_in(f, "garbage.db", p, sizeof p);
	char junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)(i * 7 + 13);
	write_file(p, junk, sizeof junk);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_null(s);
	assert_non_null(strstr(err, "garbage.db' is not a valid database; move it aside"));

	/* a real ledger whose schema page is overwritten */
	path_in(f, "broken.db", p, sizeof p);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), 0);
	char a[37];
	tgi_uuidv7(a);
	record_ok(s, a, "read_file", "persisted", "s", 1);
	tgi_store_close(s); /* checkpoints: everything is in the main file */
	static char img[1 << 20];
	size_t n = read_file(p, img, sizeof img);
	assert_true(n >= 8192 && n < sizeof img);
	char bad[4096];
	memcpy(bad, img, sizeof bad);
	memset(bad + 100, 0xA5, 3000);
	write_file(p, bad, sizeof bad);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a valid database"));

	/* random damage anywhere: an error or a working handle, never a crash */
	srand(7);
	int opened = 0, refused = 0;
	for (int round = 0; round < 60; round++) {
		static char dmg[1 << 20];
		memcpy(dmg, img, n);
		for (int k = 0; k < 8; k++)
			dmg[(size_t)rand() % n] = (char)rand();
		write_file(p, dmg, n);
		if (tgi_store_open(p, 0, &s, err, sizeof err) < 0) {
			assert_true(strlen(err) > 0);
			refused++;
			continue;
		}
		opened++;
		json_t *v = NULL;
		if (tgi_store_ops(s, NULL, &v, err, sizeof err) == 0)
			json_decref(v);
		if (tgi_store_events(s, NULL, 0, &v, err, sizeof err) == 0)
			json_decref(v);
		char b[37];
		tgi_uuidv7(b);
		record(s, b, "t", "persisted", "s", 2, NULL, TGI_SETTLE_NONE, err, sizeof err);
		tgi_idem_info info;
		if (tgi_store_idem_claim(s, "x:y", b, NULL, 5, &info, err, sizeof err) == 0)
			free(info.envelope);
		tgi_store_close(s);
		s = NULL;
		char side[180];
		snprintf(side, sizeof side, "%s-wal", p);
		unlink(side);
		snprintf(side, sizeof side, "%s-shm", p);
		unlink(side);
	}
	assert_int_equal(opened + refused, 60);
}

/* An empty file is a new ledger, of the lean schema: no started_ms index
 * (since is an op_id range), no AUTOINCREMENT (no sqlite_sequence row to
 * write per record), and a status index that leaves out the common
 * `persisted` rows. */
static void test_schema_lean(void **state)
{
	struct fx *f = *state;
	char err[512], p[160];
	tgi_store *s = NULL;

	path_in(f, "empty.db", p, sizeof p);
	write_file(p, "", 0);
	assert_int_equal(tgi_store_open(p, 0, &s, err, sizeof err), 0);
	tgi_store_close(s);
	assert_int_equal(raw_int(p, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name"
	                            " IN ('ops_id', 'ops_status', 'events_op', 'approvals_binding')"), 4);
	assert_int_equal(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE name IN"
	                            " ('ops_started', 'sqlite_sequence', 'ops_tool', 'idem_op')"), 0);
	char sql[256];
	raw_text(p, "SELECT sql FROM sqlite_master WHERE name = 'ops_status'", sql, sizeof sql);
	assert_non_null(strstr(sql, "WHERE status <> 'persisted'"));
}

static int as_nobody(const struct fx *f, int (*fn)(const struct fx *, int), char *out, size_t cap)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(77);
		_exit(fn(f, p[1]));
	}
	close(p[1]);
	read_pipe(p[0], out, cap);
	return wait_child(pid);
}

static int open_in_ro_dir(const struct fx *f, int fd)
{
	char err[512], p[160];
	tgi_store *s;
	snprintf(p, sizeof p, "%s/ro/ledger.db", f->dir);
	int rc = tgi_store_open(p, 0, &s, err, sizeof err);
	if (rc == 0)
		tgi_store_close(s);
	dprintf(fd, "%s", rc ? err : "opened");
	return 0;
}

static int open_ro_file(const struct fx *f, int fd)
{
	char err[512], p[160];
	tgi_store *s;
	snprintf(p, sizeof p, "%s/rw/ledger.db", f->dir);
	int rc = tgi_store_open(p, 0, &s, err, sizeof err);
	if (rc == 0)
		tgi_store_close(s);
	dprintf(fd, "%s", rc ? err : "opened");
	return 0;
}

/* Root ignores permission bits, so these run as nobody in a child. */
static void test_read_only_ledger(void **state)
{
	struct fx *f = *state;
	char out[512], p[160];
	tgi_store *s;

	assert_int_equal(chmod(f->dir, 0755), 0);
	/* a directory nobody owns but may not write */
	path_in(f, "ro", p, sizeof p);
	assert_int_equal(mkdir(p, 0500), 0);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	int rc = as_nobody(f, open_in_ro_dir, out, sizeof out);
	if (rc == 77) {
		print_message("skipped: cannot switch to uid %d here\n", NOBODY);
		return;
	}
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "cannot create the ledger"));
	assert_non_null(strstr(out, "Permission denied"));

	/* a ledger file that is read-only for its owner */
	path_in(f, "rw", p, sizeof p);
	assert_int_equal(mkdir(p, 0700), 0);
	char db[180], err[512];
	snprintf(db, sizeof db, "%s/ledger.db", p);
	assert_int_equal(tgi_store_open(db, 0, &s, err, sizeof err), 0);
	tgi_store_close(s);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	assert_int_equal(chown(db, NOBODY, NOBODY), 0);
	assert_int_equal(chmod(db, 0400), 0);
	assert_int_equal(as_nobody(f, open_ro_file, out, sizeof out), 0);
	assert_non_null(strstr(out, "is not writable by the current user"));
}

/* RLIMIT_FSIZE in a child makes the ledger's writes fail with EFBIG, as a
 * full disk would: the record fails with a sentence, the ledger stays
 * consistent, nothing of the failed call is in it. */
static void test_disk_full(void **state)
{
	struct fx *f = *state;
	char ids[3][37], big_id[37], err[512], out[512];

	for (int i = 0; i < 3; i++) {
		tgi_uuidv7(ids[i]);
		record_ok(f->s, ids[i], "read_file", "persisted", "s", 10 + i);
	}
	tgi_store_close(f->s);
	f->s = NULL;
	tgi_uuidv7(big_id);

	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tgi_store *s;
		char e[512];
		close(p[0]);
		signal(SIGXFSZ, SIG_IGN);
		if (tgi_store_open(f->where, 0, &s, e, sizeof e) < 0)
			_exit(1);
		struct rlimit rl = { 128 * 1024, 128 * 1024 };
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		size_t n = 512 * 1024;
		char *env = malloc(n + 32);
		snprintf(env, n + 32, "{\"output\":\"");
		memset(env + 11, 'x', n);
		snprintf(env + 11 + n, 21, "\"}");
		tgi_op_record op = { .op_id = big_id, .tool = "t", .status = "persisted", .envelope = env,
		                     .session = "s", .started_ms = 99 };
		tgi_event ev[2] = { { "tool.call.received", "decode", NULL, 99, 0 },
		                    { "tool.call.persisted", "persist", NULL, 99, 0 } };
		int rc = tgi_store_record(s, &op, ev, 2, NULL, TGI_SETTLE_NONE, e, sizeof e);
		dprintf(p[1], "%s", rc ? e : "recorded");
		/* the handle is still usable for reads after the failure */
		json_t *v = NULL;
		int rrc = tgi_store_ops(s, NULL, &v, e, sizeof e);
		int nops = v ? (int)json_array_size(v) : -1;
		json_decref(v);
		free(env);
		tgi_store_close(s);
		_exit(rc == -1 && rrc == 0 && nops == 3 ? 0 : 3);
	}
	close(p[1]);
	read_pipe(p[0], out, sizeof out);
	assert_int_equal(wait_child(pid), 0);
	if (!strstr(out, "disk is full") && !strstr(out, "too large"))
		fail_msg("disk full: %s", out);
	assert_non_null(strstr(out, big_id));

	/* consistent, the previous rows intact, no half row */
	char ok[32];
	raw_text(f->where, "PRAGMA quick_check", ok, sizeof ok);
	assert_string_equal(ok, "ok");
	assert_int_equal(tgi_store_open(f->where, 0, &f->s, err, sizeof err), 0);
	json_t *v;
	assert_int_equal(tgi_store_ops(f->s, NULL, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(v, (size_t)i), "op_id")),
		                    ids[i]);
	json_decref(v);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM events"), 12);
	assert_int_equal(raw_int(f->where, "SELECT calls FROM sessions WHERE id = 's'"), 3);
	/* and it takes new records */
	char a[37];
	tgi_uuidv7(a);
	record_ok(f->s, a, "read_file", "persisted", "s", 50);
}

/* ---- spill files ---- */

static void test_spill(void **state)
{
	struct fx *f = *state;
	char err[512], out[128], p[200], buf[64], a[37];
	struct stat st;

	int ws = open(f->dir, O_RDONLY | O_DIRECTORY);
	int sd = tgi_state_dir_open(ws, f->dir, err, sizeof err);
	assert_true(sd >= 0);
	tgi_uuidv7(a);

	assert_int_equal(tgi_spill_write(sd, a, NULL, "hello, spill", 12, out, sizeof out, err, sizeof err), 0);
	char want[80];
	snprintf(want, sizeof want, ".toolgate/spill/%s.txt", a);
	assert_string_equal(out, want);
	snprintf(p, sizeof p, "%s/%s", f->dir, want);
	assert_int_equal(read_file(p, buf, sizeof buf), 12);
	assert_memory_equal(buf, "hello, spill", 12);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(p, sizeof p, "%s/.toolgate/spill", f->dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	/* replaced atomically, no temp file left behind */
	assert_int_equal(tgi_spill_write(sd, a, NULL, "again", 5, out, sizeof out, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/%s", f->dir, want);
	assert_int_equal(read_file(p, buf, sizeof buf), 5);
	assert_memory_equal(buf, "again", 5);
	char b[37];
	tgi_uuidv7(b);
	assert_int_equal(tgi_spill_write(sd, b, NULL, "", 0, out, sizeof out, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/.toolgate/spill", f->dir);
	int entries = 0;
	struct dirent *de;
	DIR *d = opendir(p);
	while ((de = readdir(d)))
		entries += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 4);   /* each spill file and the record of its session */

	/* readable only by the session it was made for */
	char msg[256], c[37], rel[80];
	snprintf(rel, sizeof rel, ".toolgate/spill/%s.txt", a);
	assert_int_equal(tgi_spill_readable(ws, rel, NULL, msg, sizeof msg), 1);
	assert_int_equal(tgi_spill_readable(ws, rel, "", msg, sizeof msg), 1);
	assert_int_equal(tgi_spill_readable(ws, rel, "s1", msg, sizeof msg), 0);
	assert_non_null(strstr(msg, "another session"));
	tgi_uuidv7(c);
	assert_int_equal(tgi_spill_write(sd, c, "s1", "mine", 4, out, sizeof out, err, sizeof err), 0);
	assert_int_equal(tgi_spill_readable(ws, out, "s1", msg, sizeof msg), 1);
	assert_int_equal(tgi_spill_readable(ws, out, "s2", msg, sizeof msg), 0);
	assert_int_equal(tgi_spill_readable(ws, out, NULL, msg, sizeof msg), 0);
	snprintf(p, sizeof p, "%s/.toolgate/spill/%s.session", f->dir, c);
	assert_int_equal(unlink(p), 0);   /* no record: refused, whoever asks */
	assert_int_equal(tgi_spill_readable(ws, out, "s1", msg, sizeof msg), 0);
	assert_non_null(strstr(msg, "no record"));

	/* kept spill.keep: older ones go with their record, fresh ones stay */
	snprintf(p, sizeof p, "%s/%s", f->dir, want);
	struct timespec old[2] = {{.tv_sec = time(NULL) - 8 * 86400}, {.tv_sec = time(NULL) - 8 * 86400}};
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	assert_int_equal(tgi_spill_prune(sd, 7 * 86400, tgi_unix_ms()), 1);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof p, "%s/.toolgate/spill/%s.session", f->dir, a);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof p, "%s/.toolgate/spill/%s.txt", f->dir, b);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(tgi_spill_prune(sd, 7 * 86400, tgi_unix_ms()), 0);
	snprintf(p, sizeof p, "%s/.toolgate/spill", f->dir);

	/* no path tricks: the name must be a UUID */
	const char *bad[] = { "../../etc/passwd", "a/b", "", "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77x",
	                      "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e7", "0193a5f0/7c1e-7d2a-9b1e-4f0c2a9d1e77" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(tgi_spill_write(sd, bad[i], NULL, "x", 1, out, sizeof out, err, sizeof err), -1);
		assert_non_null(strstr(err, "is not a UUID"));
	}
	assert_int_equal(tgi_spill_write(sd, NULL, NULL, "x", 1, out, sizeof out, err, sizeof err), -1);
	/* no room for the path */
	assert_int_equal(tgi_spill_write(sd, a, NULL, "x", 1, out, 20, err, sizeof err), -1);
	assert_non_null(strstr(err, "no room for the spill path"));

	/* spill/ redirected by a symlink, or not a directory */
	char moved[200];
	snprintf(moved, sizeof moved, "%s/moved", f->dir);
	assert_int_equal(rename(p, moved), 0);
	assert_int_equal(symlink(moved, p), 0);
	assert_int_equal(tgi_spill_write(sd, a, NULL, "x", 1, out, sizeof out, err, sizeof err), -1);
	assert_string_equal(err,
	                    ".toolgate/spill is a symlink; refusing to use it (a repository must not redirect spill files)");
	unlink(p);
	int x = open(p, O_CREAT | O_WRONLY, 0600);
	close(x);
	assert_int_equal(tgi_spill_write(sd, a, NULL, "x", 1, out, sizeof out, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a directory"));
	unlink(p);
	close(sd);
	close(ws);
}

/* ---- speed (reported, not asserted: sanitizers make it slow here) ---- */

static void test_record_speed(void **state)
{
	struct fx *f = *state;
	char err[512], env[1100];
	memset(env, 'x', sizeof env);
	memcpy(env, "{\"a\":\"", 6);
	memcpy(env + 1000, "\"}", 3);
	json_t *d = json_pack("{s:s}", "k", "v");

	for (int full = 0; full <= 1; full++) {
		char p[160];
		tgi_store *s;
		snprintf(p, sizeof p, "%s/speed%d.db", f->dir, full);
		assert_int_equal(tgi_store_open(p, full, &s, err, sizeof err), 0);
		enum { N = 400 };
		double t0 = tgi_now_ms();
		for (int i = 0; i < N; i++) {
			char id[37];
			tgi_uuidv7(id);
			tgi_op_record op = { .op_id = id, .call_id = "c", .session = "s", .tool = "read_file",
			                     .principal = "local", .status = "persisted", .envelope = env,
			                     .args_redacted = "{}", .args_sha256 = "00", .started_ms = i };
			tgi_event ev[4] = { { "a", "decode", d, i, 0 }, { "b", "decide", d, i, 0 },
			                    { "c", "execute", d, i, 0 }, { "d", "persist", d, i, 0 } };
			assert_int_equal(tgi_store_record(s, &op, ev, 4, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
		}
		double rec = (tgi_now_ms() - t0) * 1000.0 / N;
		t0 = tgi_now_ms();
		for (int i = 0; i < 50; i++) {
			char id[37], scope[32];
			tgi_idem_info info;
			tgi_uuidv7(id);
			snprintf(scope, sizeof scope, "p:t:%d", i);
			assert_int_equal(claim(s, scope, id, 60, &info), TGI_IDEM_CLAIMED);
		}
		print_message("store speed (%s, this build): %.1f us/record (4 events, 1 KB envelope), "
		              "%.1f us/claim (FULL)\n",
		              full ? "FULL" : "NORMAL", rec, (tgi_now_ms() - t0) * 1000.0 / 50);
		tgi_store_close(s);
	}
	json_decref(d);
}

/* ---- older ledgers ----
 *
 * The schemas older toolgates wrote, frozen here as they shipped: an
 * upgrade is tested on a ledger of that shape, not on today's schema with
 * its version number turned back. */

static const char schema_v1[] =
	"CREATE TABLE ops("
	"  op_id TEXT PRIMARY KEY, tool TEXT, status TEXT NOT NULL, started_ms INTEGER NOT NULL,"
	"  duration_ms REAL, call_id TEXT, session TEXT, principal TEXT, error_kind TEXT,"
	"  idem_scope TEXT, args_sha256 TEXT, args_redacted TEXT, envelope TEXT NOT NULL);"
	"CREATE INDEX ops_tool ON ops(tool, op_id);"
	"CREATE INDEX ops_status ON ops(status, op_id) WHERE status <> 'persisted';"
	"CREATE TABLE idem("
	"  scope TEXT PRIMARY KEY, op_id TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'unknown')),"
	"  owner_host TEXT, owner_pid INTEGER, owner_start INTEGER, lease_until_ms INTEGER,"
	"  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, binding TEXT);"
	"CREATE INDEX idem_op ON idem(op_id);"
	"CREATE TABLE events("
	"  seq INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, op_id TEXT,"
	"  type TEXT NOT NULL, stage TEXT, data TEXT);"
	"CREATE INDEX events_op ON events(op_id);"
	"CREATE TABLE approvals("
	"  id TEXT PRIMARY KEY, op_id TEXT, tool TEXT NOT NULL, principal TEXT NOT NULL,"
	"  binding TEXT NOT NULL, state TEXT NOT NULL, args TEXT, reason TEXT,"
	"  created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, decided_by TEXT,"
	"  decided_ms INTEGER);"
	"CREATE INDEX approvals_binding ON approvals(binding, principal, created_ms);"
	"CREATE TABLE sessions("
	"  id TEXT PRIMARY KEY, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,"
	"  calls INTEGER NOT NULL);"
	"PRAGMA user_version = 1;";

static const char schema_v2_more[] =
	"CREATE TABLE pins("
	"  name TEXT PRIMARY KEY, digest TEXT NOT NULL, first_ms INTEGER NOT NULL,"
	"  updated_ms INTEGER NOT NULL) WITHOUT ROWID;"
	"PRAGMA user_version = 2;";

static const char schema_v3_more[] =
	"ALTER TABLE ops ADD COLUMN loop TEXT;"
	"ALTER TABLE sessions ADD COLUMN manifest TEXT;"
	"CREATE TABLE rate_buckets("
	"  principal TEXT, tool TEXT, tokens REAL NOT NULL, updated_ms INTEGER NOT NULL,"
	"  PRIMARY KEY(principal, tool)) WITHOUT ROWID;"
	"DROP INDEX ops_tool;"
	"CREATE INDEX ops_tool ON ops(tool, op_id, status, started_ms, duration_ms);"
	"CREATE INDEX ops_session ON ops(session, op_id, loop) WHERE session IS NOT NULL;"
	"PRAGMA user_version = 3;";

static const char schema_v4_more[] =
	"CREATE TABLE messages("
	"  session TEXT NOT NULL, seq INTEGER NOT NULL, api TEXT NOT NULL,"
	"  ts_ms INTEGER NOT NULL, entry TEXT NOT NULL,"
	"  PRIMARY KEY(session, seq)) WITHOUT ROWID;"
	"PRAGMA user_version = 4;";


/* Two calls of session s1 and their events, a call without a session, an
 * idempotency row and a pin, as a version 2 toolgate wrote them. */
static const char rows_v2[] =
	"INSERT INTO ops(op_id, tool, status, started_ms, duration_ms, session, principal,"
	" error_kind, args_redacted, envelope) VALUES"
	" ('0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'read_file', 'persisted', 1000, 2.5, 's1',"
	"  'local', NULL, '{\"path\":\"a\"}', '{\"status\":\"persisted\",\"error\":null}'),"
	" ('0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'shell', 'denied', 1001, 0.5, 's1',"
	"  'local', 'not_permitted', '{\"command\":\"rm\"}',"
	"  '{\"status\":\"denied\",\"error\":{\"rule\":\"deny: shell(rm)\",\"message\":\"no\"}}'),"
	" ('0193a5f0-7c20-7d2a-9b1e-4f0c2a9d1e77', 'read_file', 'persisted', 1002, 1.5, NULL,"
	"  'ci', NULL, '{}', '{}');"
	"INSERT INTO events(ts_ms, op_id, type, stage) VALUES"
	" (1000, '0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'tool.call.received', 'decode'),"
	" (1001, '0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'tool.call.denied', 'persist'),"
	" (1003, NULL, 'mcp.server.exited', 'bridge');"
	"INSERT INTO sessions(id, first_ms, last_ms, calls) VALUES ('s1', 1000, 1001, 2);"
	"INSERT INTO idem(scope, op_id, state, created_ms, updated_ms) VALUES"
	" ('local:deploy:k', '0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'done', 1000, 1000);"
	"INSERT INTO pins(name, digest, first_ms, updated_ms) VALUES"
	" ('fs__x', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 1, 1);";

/* A ledger made before pins existed (schema version 1) gains the table. */
static void test_pins_migration(void **state)
{
	struct fx *f = *state;
	char pinned[65];

	raw_exec(f->where, schema_v1);
	raw_exec(f->where, "INSERT INTO ops(op_id, status, started_ms, envelope)"
	                " VALUES ('0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'persisted', 1000, '{}')");
	open_adopting(f);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), 1);
	assert_int_equal(pin_check(f->s, "fs__x", DIGEST_A, pinned), TGI_PIN_NEW);
}

/* A version 2 ledger upgrades in place to version 3: its rows stay and
 * read back as before, the new columns are empty, the new table and
 * indexes are there, and a call records its middleware state next to the
 * old ones. */
static void test_schema_upgrade_v2(void **state)
{
	struct fx *f = *state;
	char err[512], text[256], manifest[65];
	json_t *v;

	raw_exec(f->where, schema_v1);
	raw_exec(f->where, schema_v2_more);
	raw_exec(f->where, rows_v2);
	open_adopting(f);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);

	/* every row is still there and reads back */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), 3);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM events"), 3);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM idem"), 1);
	/* its scope is kept as its digest now (version 7); what a claim of it
	 * answers is checked below */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM idem"
	                                " WHERE scope = toolgate_scope_digest('local:deploy:k')"), 1);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM pins"), 1);
	assert_int_equal(raw_int(f->where, "SELECT calls FROM sessions WHERE id = 's1'"), 2);
	tgi_log_filter flt = { .tool = "shell" };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "status")), "denied");
	json_decref(v);
	flt = (tgi_log_filter){ .session = "s1" };
	assert_int_equal(count_ops(f->s, &flt), 2);
	assert_int_equal(tgi_store_events(f->s, NULL, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "message")), "no");
	json_decref(v);
	tgi_idem_info info;
	char id[37];
	tgi_uuidv7(id);
	/* a done claim from before migration 7 has no MAC, and so no authority:
	 * an unknown outcome for an operator to settle, never a replay */
	assert_int_equal(claim(f->s, "local:deploy:k", id, 10, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);
	free(info.envelope);

	/* the new columns are empty for the old rows */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops WHERE loop IS NULL"), 3);
	assert_int_equal(tgi_store_session_manifest(f->s, "s1", manifest, err, sizeof err), 0);
	assert_string_equal(manifest, "");
	tgi_strv w = { 0 };
	assert_int_equal(tgi_store_loop_window(f->s, "s1", 30, &w, err, sizeof err), 0);
	assert_int_equal(w.n, 0);

	/* the new table and indexes; ops_id (ops_tool before version 8)
	 * carries what stats reads */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM rate_buckets"), 0);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name"
	                                " = 'ops_session'"), 1);
	raw_text(f->where, "SELECT sql FROM sqlite_master WHERE name = 'ops_id'", text, sizeof text);
	assert_non_null(strstr(text, "duration_ms"));
	raw_text(f->where, "PRAGMA integrity_check", text, sizeof text);
	assert_string_equal(text, "ok");
	assert_int_equal(tgi_store_stats(f->s, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 3);
	json_decref(v);

	/* and new calls keep their state */
	char a[37];
	tgi_uuidv7(a);
	tgi_op_record op = { .op_id = a, .session = "s1", .tool = "read_file", .principal = "local",
	                     .status = "persisted", .envelope = "{}", .started_ms = 2000,
	                     .loop = "L1", .manifest = DIGEST_A };
	assert_int_equal(tgi_store_record(f->s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	assert_int_equal(tgi_store_loop_window(f->s, "s1", 30, &w, err, sizeof err), 0);
	assert_int_equal(w.n, 1);
	assert_string_equal(w.v[0], "L1");
	tgi_strv_free(&w);
	assert_int_equal(tgi_store_session_manifest(f->s, "s1", manifest, err, sizeof err), 0);
	assert_string_equal(manifest, DIGEST_A);
	assert_int_equal(raw_int(f->where, "SELECT calls FROM sessions WHERE id = 's1'"), 3);
	int ok = 0;
	double left, wait;
	assert_int_equal(tgi_store_bucket_take(f->s, "local", "read_file", 1, 5, 1, &ok, &left, &wait,
	                                       err, sizeof err), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM rate_buckets"), 1);

	/* opened again: nothing more to do */
	tgi_store_close(f->s);
	assert_int_equal(tgi_store_open(f->where, 0, &f->s, err, sizeof err), 0);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), 4);
}

/* A version 4 ledger (before approvals kept a plan and a decision's
 * reason) upgrades in place (through 5, to the latest): its approvals stay, pending, decided
 * and used, and read back as before with no plan and no reason; the
 * pending one can still be decided, now with a reason, and a new one
 * keeps its plan. */
/* A version 7 ledger upgrades to version 8 (a call's events in its ops
 * row, ops keyed by seq, idem WITHOUT ROWID, fewer indexes): its calls,
 * their events and seqs, its claims and its lone events all stay and read
 * back as before, and a new call's events take the seqs after them. */
static void test_schema_upgrade_v7(void **state)
{
	struct fx *f = *state;
	char err[512], text[256], a[37];
	json_t *v;
	tgi_store *s = NULL;
	static const char rows_v7[] =
		"INSERT INTO ops(op_id, tool, status, started_ms, duration_ms, session, principal,"
		" error_kind, args_redacted, envelope) VALUES"
		" ('0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'read_file', 'persisted', 1000, 2.5, 's1',"
		"  'local', NULL, '{\"path\":\"a\"}', '{\"status\":\"persisted\",\"output\":\"A\"}'),"
		" ('0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'shell', 'denied', 1001, 0.5, 's1',"
		"  'local', 'not_permitted', '{\"command\":\"rm\"}',"
		"  '{\"status\":\"denied\",\"error\":{\"rule\":\"deny: shell(rm)\",\"message\":\"no\"}}'),"
		" ('0193a5f0-7c20-7d2a-9b1e-4f0c2a9d1e77', 'write_file', 'failed', 1002, 1.5, NULL,"
		"  'ci', 'tool_error', '{}', '{\"error\":{\"applied\":\"unknown\"}}');"
		"INSERT INTO events(ts_ms, op_id, type, stage, data) VALUES"
		" (1000, '0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'tool.call.received', 'decode', NULL),"
		" (1000, '0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'tool.call.persisted', 'persist', NULL),"
		" (1001, '0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'tool.call.denied', 'persist',"
		"  '{\"kind\":\"not_permitted\"}'),"
		" (1003, NULL, 'mcp.server.exited', 'bridge', NULL);"
		"INSERT INTO idem(scope, op_id, state, owner_host, owner_pid, owner_start,"
		" lease_until_ms, created_ms, updated_ms) VALUES"
		" ('sha256:aaaa', '0193a5f0-7c21-7d2a-9b1e-4f0c2a9d1e77', 'unknown', NULL, NULL, NULL,"
		"  NULL, 1004, 1004);"
		"INSERT INTO sessions(id, first_ms, last_ms, calls) VALUES ('s1', 1000, 1001, 2);";

	/* a ledger at version 7, as that toolgate left it */
	assert_int_equal(tgi_store_open(f->where, TGI_STORE_NO_MIGRATE, &s, err, sizeof err), 0);
	assert_int_equal(tgi_store_migrate(s, 7, 0, NULL, NULL, err, sizeof err), 0);
	tgi_store_close(s);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), 7);
	raw_exec(f->where, rows_v7);

	open_adopting(f);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);
	raw_text(f->where, "PRAGMA integrity_check", text, sizeof text);
	assert_string_equal(text, "ok");
	/* the indexes a record writes: ops_id for both the op id and ops_tool;
	 * no idem_op; idem is one b-tree */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM sqlite_master WHERE name IN"
	                                " ('ops_tool', 'idem_op', 'sqlite_autoindex_ops_1',"
	                                " 'sqlite_autoindex_idem_1')"), 0);
	raw_text(f->where, "SELECT sql FROM sqlite_master WHERE name = 'ops_id'", text, sizeof text);
	assert_non_null(strstr(text, "duration_ms"));
	assert_int_equal(raw_int(f->where, "SELECT sql LIKE '%WITHOUT ROWID' FROM sqlite_master"
	                                " WHERE name = 'idem'"), 1);

	/* every row is there; the events are as they were, seqs and all */
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops"), 3);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM events"), 4);
	assert_int_equal(raw_int(f->where, "SELECT max(seq) FROM events"), 4);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM ops WHERE seq > 0"), 0);
	assert_int_equal(tgi_store_events(f->s, NULL, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(v, i), "seq")), i + 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 2), "message")), "no");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(v, 2),
	                                                                      "data"), "kind")),
	                    "not_permitted");
	json_decref(v);
	tgi_log_filter flt = { .tool = "shell" };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "status")), "denied");
	json_decref(v);
	flt = (tgi_log_filter){ .op_id = "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77" };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	json_decref(v);
	assert_int_equal(tgi_store_stats(f->s, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 3);
	json_decref(v);
	/* the unknown outcomes: the failed call and the claim whose call left no row */
	assert_int_equal(tgi_store_unknown(f->s, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	json_decref(v);

	/* a new call's events take the seqs after the old ones */
	tgi_uuidv7(a);
	tgi_event ev[2] = { { .type = "tool.call.received", .stage = "decode", .ts_ms = 2000 },
	                    { .type = "tool.call.persisted", .stage = "persist", .ts_ms = 2001 } };
	tgi_op_record op = { .op_id = a, .session = "s1", .tool = "read_file", .principal = "local",
	                     .status = "persisted", .envelope = "{}", .started_ms = 2000 };
	assert_int_equal(tgi_store_record(f->s, &op, ev, 2, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	assert_int_equal(ev[0].seq, 5);
	assert_int_equal(ev[1].seq, 6);
	int64_t last = 0;
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 6);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM event_rows"), 4);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM events"), 6);
	assert_int_equal(tgi_store_events(f->s, NULL, 4, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "type")),
	                    "tool.call.persisted");
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "op_id")), a);
	json_decref(v);

	/* an operator settles the old claim: it is found by its op id alone */
	assert_int_equal(tgi_store_op_resolve(f->s, "0193a5f0-7c21-7d2a-9b1e-4f0c2a9d1e77", 0, err,
	                                      sizeof err), 0);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM idem"), 0);
	assert_int_equal(raw_int(f->where, "SELECT max(seq) FROM events"), 7);
}

static void test_schema_upgrade_v4(void **state)
{
	struct fx *f = *state;
	char err[512], sql[1024], text[256];
	tgi_approval_row got, *rows;
	size_t n;
	int found;
	int64_t later = tgi_unix_ms() + 3600 * 1000;
	static const char *const ids[] = {
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e01", /* pending */
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e02", /* denied by bob */
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e03", /* approved by alice, then used */
	};

	raw_exec(f->where, schema_v1);
	raw_exec(f->where, schema_v2_more);
	raw_exec(f->where, schema_v3_more);
	raw_exec(f->where, schema_v4_more);
	snprintf(sql, sizeof sql,
	         "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"
	         " created_ms, expires_ms, decided_by, decided_ms) VALUES"
	         " ('%s', NULL, 'write_file', 'local', '%064d', 'pending', '{\"path\":\"a\"}',"
	         "  'ask: write_file', 1000, %lld, NULL, NULL),"
	         " ('%s', NULL, 'shell', 'local', '%064d', 'denied', '{\"command\":\"rm\"}',"
	         "  'ask: shell', 1001, %lld, 'bob', 1500),"
	         " ('%s', NULL, 'shell', 'ci', '%064d', 'used', '{\"command\":\"ls\"}',"
	         "  'ask: shell', 1002, %lld, 'alice', 1600)",
	         ids[0], 1, (long long)later, ids[1], 2, (long long)later, ids[2], 3,
	         (long long)later);
	raw_exec(f->where, sql);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), 4);

	open_adopting(f);
	assert_int_equal(raw_int(f->where, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM pragma_table_info('approvals')"
	                                " WHERE name IN ('plan', 'decided_reason')"), 2);
	raw_text(f->where, "PRAGMA integrity_check", text, sizeof text);
	assert_string_equal(text, "ok");

	/* every approval is still there, as it was */
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].id, ids[2]);
	assert_string_equal(rows[0].state, "used");
	assert_string_equal(rows[0].decided_by, "alice");
	assert_int_equal(rows[0].decided_ms, 1600);
	assert_string_equal(rows[1].id, ids[1]);
	assert_string_equal(rows[1].state, "denied");
	assert_string_equal(rows[1].args, "{\"command\":\"rm\"}");
	assert_string_equal(rows[2].id, ids[0]);
	assert_string_equal(rows[2].state, "pending");
	assert_string_equal(rows[2].reason, "ask: write_file");
	for (size_t i = 0; i < n; i++) {
		assert_null(rows[i].plan);
		assert_null(rows[i].decided_reason);
	}
	tgi_approval_rows_free(rows, n);

	/* the old pending one is decided with a reason now */
	assert_int_equal(tgi_store_approval_decide(f->s, ids[0], 0, "carol", "not on a Friday", err,
	                                           sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, ids[0], &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.decided_by, "carol");
	assert_string_equal(got.decided_reason, "not on a Friday");
	tgi_approval_row_clear(&got);

	/* and a new one keeps its plan */
	tgi_approval_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.tool, sizeof r.tool, "shell");
	snprintf(r.principal, sizeof r.principal, "local");
	snprintf(r.binding, sizeof r.binding, "%064d", 4);
	r.plan = "{\"argv\":[\"ls\"]}";
	r.expires_ms = later;
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, r.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.plan, "{\"argv\":[\"ls\"]}");
	tgi_approval_row_clear(&got);

	/* opened again: nothing more to do */
	tgi_store_close(f->s);
	assert_int_equal(tgi_store_open(f->where, 0, &f->s, err, sizeof err), 0);
	assert_int_equal(raw_int(f->where, "SELECT count(*) FROM approvals"), 4);
}

/* ---- the ledger's identity ---- */

static void test_identity_copy(void **state)
{
	struct fx *f = *state;
	char err[1024], p[192], cmd[1024], want[PATH_MAX + 128], real[PATH_MAX];
	tgi_key_source k = { .env = NULL };
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	assert_null(tgi_store_foreign(f->s));
	assert_non_null(tgi_store_mask_key(f->s));
	char a[37];
	tgi_uuidv7(a);
	assert_int_equal(record(f->s, a, "t", "persisted", "s", 1, NULL, TGI_SETTLE_NONE, err,
	                        sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;
	path_in(f, "b", p, sizeof p);
	snprintf(cmd, sizeof cmd, "mkdir %s && cp %s %s/ledger.db", p, f->where, p);
	assert_int_equal(system(cmd), 0);
	strcat(p, "/ledger.db");
	assert_non_null(realpath(f->where, real));
	snprintf(want, sizeof want, "is a copy of another ledger (its identity is bound to %s)", real);
	expect_foreign(p, &k, want);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
}

/* Another machine's key (a fleet's key_env K1, opened with K2), a forged
 * identity, and records without one: each foreign. */
static void test_identity_adopt_and_keys(void **state)
{
	struct fx *f = *state;
	char err[1024], key[192], other[192];
	tgi_ledger_rows n;
	path_in(f, "key", key, sizeof key);
	int fd = open(key, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, KEY_A "\n", 65), 65);
	close(fd);
	assert_int_equal(chmod(key, 0644), 0);
	tgi_key_source k = { .file = key };
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), -1);
	if (!strstr(err, "can be read by others (mode 0644)"))
		fail_msg("%s", err);
	assert_int_equal(chmod(key, 0600), 0);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	unsigned char m1[32];
	memcpy(m1, tgi_store_mask_key(f->s), 32);
	assert_int_equal(tgi_store_adopt(f->s, &k, &n, err, sizeof err), -1);
	assert_non_null(strstr(err, "is this machine's already"));
	tgi_store_close(f->s);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	assert_memory_equal(tgi_store_mask_key(f->s), m1, 32);
	tgi_store_close(f->s);
	f->s = NULL;

	/* another ledger, the same key: another mask key */
	path_in(f, "other.db", other, sizeof other);
	tgi_store *o = NULL;
	assert_int_equal(tgi_store_open_keyed(other, 0, &k, &o, err, sizeof err), 0);
	assert_memory_not_equal(tgi_store_mask_key(o), m1, 32);
	tgi_store_close(o);

	/* adopted under another key: bound here, with a new mask key */
	char a[37];
	tgi_uuidv7(a);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	assert_int_equal(record(f->s, a, "t", "persisted", "s", 1, NULL, TGI_SETTLE_NONE, err,
	                        sizeof err), 0);
	tgi_store_close(f->s);
	tgi_key_source kb = { .env = "TG_TEST_LEDGER_KEY" };
	setenv("TG_TEST_LEDGER_KEY", KEY_B, 1);
	assert_int_equal(tgi_store_open_keyed(f->where, TGI_STORE_FOREIGN_OK, &kb, &f->s, err,
	                                      sizeof err), 0);
	assert_non_null(tgi_store_foreign(f->s));
	assert_int_equal(tgi_store_adopt(f->s, &kb, &n, err, sizeof err), 0);
	assert_int_equal(n.ops, 1);
	assert_null(tgi_store_foreign(f->s));
	assert_memory_not_equal(tgi_store_mask_key(f->s), m1, 32);
	tgi_store_close(f->s);
	f->s = NULL;
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &kb, &f->s, err, sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;
	expect_foreign(f->where, &k, "was not made by this machine's key");
	unsetenv("TG_TEST_LEDGER_KEY");

	/* in memory: keyed by a key of its own, nothing loaded */
	tgi_key_source bad = { .env = "TG_TEST_NO_SUCH_KEY" };
	assert_int_equal(tgi_store_open_keyed("mem", TGI_STORE_MEMORY, &bad, &f->s, err, sizeof err), 0);
	assert_non_null(tgi_store_mask_key(f->s));
	assert_null(tgi_store_foreign(f->s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		STORE_CONTRACT_TESTS,
		cmocka_unit_test_setup_teardown(test_wal_checkpointed_by_thread, setup_store_mem, teardown),
		cmocka_unit_test_setup_teardown(test_wal_checkpointed_by_short_handles, setup_store_mem, teardown),
		cmocka_unit_test_setup_teardown(test_idem_pid_reuse_and_other_hosts, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_state_dir, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_ledger_file_checks, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_ledger, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_schema_lean, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_ledger, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_disk_full, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_spill, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_record_speed, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_pins_migration, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_schema_upgrade_v2, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_schema_upgrade_v4, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_schema_upgrade_v7, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_identity_copy, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_identity_adopt_and_keys, setup_empty, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
