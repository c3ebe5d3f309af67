/*
 * test_store_fault.c — fault simulation for the ledger, in the manner of
 * SQLite's own do_faultsim_test: SQLite's allocator is wrapped
 * (SQLITE_CONFIG_MALLOC) so that the Nth allocation fails, and open +
 * record + claim run for N = 1, 2, ... until a run completes without
 * reaching the Nth allocation.  After every run: no crash, every SQLite
 * allocation given back once the handle is closed, and the ledger
 * consistent — quick_check passes, a call's record is all or nothing (its
 * ops row with its loop entry, all its events and its session's manifest,
 * or none of them; its events' seqs set only when written), a token take
 * is all or nothing, and a call, claim or take that reported success is
 * really there.
 *
 * Two sweeps: a new ledger with a transient fault (only the Nth allocation
 * fails), and an existing ledger with a persistent fault (the Nth and
 * every later one fail, so the error paths themselves run out of memory).
 *
 * Owns: SQLite's allocator configuration for this process, and its
 * temporary directory.  Must not: depend on anything outside it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "util/util.h"

/* ---- the failing allocator ---- */

static sqlite3_mem_methods real;
static struct {
	int  armed;       /* counting allocations */
	long fail_at;     /* the allocation (1-based, since arming) that fails */
	int  persistent;  /* and every one after it */
	long count;       /* allocations since arming */
	int  fired;       /* a fault was injected since arming */
	long live;        /* SQLite allocations not yet freed */
} fs;

static int should_fail(void)
{
	if (!fs.armed)
		return 0;
	fs.count++;
	if (fs.count == fs.fail_at || (fs.persistent && fs.count > fs.fail_at)) {
		fs.fired = 1;
		return 1;
	}
	return 0;
}

static void *fs_malloc(int n)
{
	if (should_fail())
		return NULL;
	void *p = real.xMalloc(n);
	if (p)
		fs.live++;
	return p;
}

static void fs_free(void *p)
{
	if (p)
		fs.live--;
	real.xFree(p);
}

static void *fs_realloc(void *p, int n)
{
	if (should_fail())
		return NULL;
	return real.xRealloc(p, n);
}

static int fs_size(void *p)
{
	return real.xSize(p);
}

static int fs_roundup(int n)
{
	return real.xRoundup(n);
}

static int fs_init(void *app)
{
	(void)app;
	return real.xInit(real.pAppData);
}

static void fs_shutdown(void *app)
{
	(void)app;
	real.xShutdown(real.pAppData);
}

static void arm(long n, int persistent)
{
	fs.count = 0;
	fs.fail_at = n;
	fs.persistent = persistent;
	fs.fired = 0;
	fs.armed = 1;
}

static void disarm(void)
{
	fs.armed = 0;
}

/* ---- helpers ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* In memory-backed /dev/shm when there is one: thousands of runs, each
 * with a FULL commit, would otherwise wait on the disk. */
static void make_dir(char dir[64])
{
	snprintf(dir, 64, "%s/tg_fault_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(dir));
}

static void remove_dir(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* First column of the first row of sql on an open connection, or -1. */
__attribute__((format(printf, 2, 3)))
static int64_t query_int(sqlite3 *h, const char *fmt, ...)
{
	char sql[256];
	sqlite3_stmt *st;
	int64_t v = -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void quick_check_ok(sqlite3 *h)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA quick_check", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
}

struct outcome {
	int open_only;   /* the run stops after the open */
	int opened, recorded, claimed, took;
	char op[37], claimer[37], scope[48];
};

/* What the middleware and the operator read: each answers or fails with a
 * sentence, and gives back what it allocated either way. */
static void read_back(tgi_store *s, const struct outcome *o)
{
	char err[512], manifest[65];
	tgi_strv w = { 0 };
	json_t *v = NULL;
	double tokens;
	int64_t at, seq;
	int found;
	tgi_log_filter flt = { .session = o->op, .limit = 2 };

	err[0] = '\0';
	if (tgi_store_stats(s, 0, &v, err, sizeof err) < 0)
		assert_true(strlen(err) > 0 && !v);
	json_decref(v);
	v = NULL;
	err[0] = '\0';
	if (tgi_store_events(s, &flt, 0, &v, err, sizeof err) < 0)
		assert_true(strlen(err) > 0 && !v);
	json_decref(v);
	err[0] = '\0';
	if (tgi_store_loop_window(s, o->op, 30, &w, err, sizeof err) < 0)
		assert_true(strlen(err) > 0);
	tgi_strv_free(&w);
	err[0] = '\0';
	if (tgi_store_session_manifest(s, o->op, manifest, err, sizeof err) < 0)
		assert_true(strlen(err) > 0);
	err[0] = '\0';
	if (tgi_store_bucket_get(s, "p", o->op, &tokens, &at, &found, err, sizeof err) < 0)
		assert_true(strlen(err) > 0);
	err[0] = '\0';
	if (tgi_store_last_seq(s, &seq, err, sizeof err) < 0)
		assert_true(strlen(err) > 0);
}

/* The work under test: open (creating the tables in a new ledger), then,
 * unless open_only, record one call (4 events, a session, what middleware
 * keeps), claim a scope, take a rate-limit token and read what middleware
 * and operators read; a step after a failed one still runs on the same
 * handle. */
static void run_once(const char *db, struct outcome *o)
{
	char err[512];
	tgi_store *s = NULL;
	json_t *d = json_pack("{s:s}", "k", "v");

	o->opened = tgi_store_open(db, 0, &s, err, sizeof err) == 0;
	if (!o->opened) {
		assert_true(strlen(err) > 0);
		assert_null(s);
	} else if (!o->open_only) {
		tgi_op_record op = { .op_id = o->op, .call_id = "c1", .session = o->op, .tool = "t",
		                     .principal = "p", .status = "persisted", .envelope = "{\"ok\":true}",
		                     .args_redacted = "{}", .started_ms = 1, .loop = "loop-entry",
		                     .manifest = "m" };
		tgi_event ev[4] = { { "tool.call.received", "decode", d, 1, 0 },
		                    { "tool.call.started", "execute", NULL, 2, 0 },
		                    { "tool.call.progress", NULL, d, 3, 0 },
		                    { "tool.call.persisted", "persist", d, 4, 0 } };
		o->recorded = tgi_store_record(s, &op, ev, 4, NULL, TGI_SETTLE_NONE, err, sizeof err) == 0;
		if (!o->recorded)
			assert_true(strlen(err) > 0);
		for (int i = 0; i < 4; i++) /* seqs only when written, and in order */
			assert_true(o->recorded ? ev[i].seq > 0 && (!i || ev[i].seq == ev[i - 1].seq + 1)
			                        : ev[i].seq == 0);
		tgi_idem_info info;
		o->claimed = tgi_store_idem_claim(s, o->scope, o->claimer, NULL, 30, &info, err, sizeof err) == 0;
		if (o->claimed)
			assert_int_equal(info.state, TGI_IDEM_CLAIMED);
		else
			assert_true(strlen(err) > 0);
		int ok = 0;
		double left, wait;
		o->took = tgi_store_bucket_take(s, "p", o->op, 1, 3, 1, &ok, &left, &wait, err,
		                                sizeof err) == 0;
		if (o->took)
			assert_true(ok && left > 1.99 && left <= 2);
		else
			assert_true(strlen(err) > 0 && !ok);
		read_back(s, o);
	}
	tgi_store_close(s);
	json_decref(d);
}

/* After a run (faults off): the ledger passes quick_check and holds all
 * of the call or none of it; what reported success is there.  Every
 * `reopen` runs, and at the end, it must also open as a ledger again. */
static void check_consistent(const char *db, const struct outcome *o, int reopen)
{
	char err[512];
	tgi_store *s;
	sqlite3 *h;

	if (access(db, F_OK) != 0) {
		assert_false(o->opened);
		return;
	}
	if (reopen) {
		if (tgi_store_open(db, 0, &s, err, sizeof err) < 0)
			fail_msg("ledger unusable after a fault: %s", err);
		tgi_store_close(s);
	}
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	quick_check_ok(h);
	int64_t tables = query_int(h, "SELECT count(*) FROM sqlite_master WHERE name = 'ops'");
	if (tables == 1) {
		int64_t ops = query_int(h, "SELECT count(*) FROM ops WHERE op_id = '%s'", o->op);
		int64_t evs = query_int(h, "SELECT count(*) FROM events WHERE op_id = '%s'", o->op);
		char scope[TGI_SCOPE_DIGEST_LEN + 1];   /* the ledger keeps the scope's digest */
		tgi_scope_digest(o->scope, scope);
		int64_t claims = query_int(h, "SELECT count(*) FROM idem WHERE scope = '%s'"
		                              " AND state = 'in_flight'", scope);
		/* the call's row, its events, its loop entry and its session's
		 * manifest: all or nothing; the token taken, or not */
		int64_t loops = query_int(h, "SELECT count(*) FROM ops WHERE op_id = '%s'"
		                             " AND loop = 'loop-entry'", o->op);
		int64_t mans = query_int(h, "SELECT count(*) FROM sessions WHERE id = '%s'"
		                            " AND manifest = 'm'", o->op);
		int64_t buckets = query_int(h, "SELECT count(*) FROM rate_buckets WHERE tool = '%s'",
		                            o->op);
		assert_true((ops == 1 && evs == 4) || (ops == 0 && evs == 0));
		assert_int_equal(ops, o->recorded);
		assert_int_equal(loops, ops);
		assert_int_equal(mans, ops);
		assert_int_equal(buckets, o->took);
		assert_int_equal(claims, o->claimed);
		assert_int_equal(query_int(h, "PRAGMA user_version"), TGI_STORE_SCHEMA_VERSION);
	} else {
		/* failed while creating the tables: nothing was reported done */
		assert_false(o->opened);
	}
	sqlite3_close(h);
}

/* Sweep N until a run no longer reaches the Nth allocation.  fresh: a new
 * ledger each run, and the run is the open alone (record and claim are
 * the existing ledger's sweep; this one is the creation of the tables). */
static void sweep(const char *dir, const char *db, int fresh, int persistent)
{
	long n;
	int done = 0;

	for (n = 1; !done; n++) {
		struct outcome o = { .open_only = fresh };
		tgi_uuidv7(o.op);
		tgi_uuidv7(o.claimer);
		snprintf(o.scope, sizeof o.scope, "p:t:%ld", n);
		if (fresh) {
			remove_dir(dir);
			assert_int_equal(mkdir(dir, 0700), 0);
		}
		long before = fs.live;
		arm(n, persistent);
		run_once(db, &o);
		disarm();
		done = !fs.fired;
		if (fs.live != before)
			fail_msg("fault at allocation %ld: %ld SQLite allocations not freed", n,
			         fs.live - before);
		check_consistent(db, &o, done || n % 16 == 0);
		if (done)
			assert_true(o.opened && (fresh || (o.recorded && o.claimed && o.took)));
	}
	print_message("%s ledger, %s faults: %ld allocation points, all consistent\n",
	              fresh ? "new" : "existing", persistent ? "persistent" : "transient", n - 1);
}

static void test_fault_new_ledger(void **state)
{
	(void)state;
	char dir[64], db[128];
	make_dir(dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	sweep(dir, db, 1, 1);
	remove_dir(dir);
}

static void test_fault_existing_ledger(void **state)
{
	(void)state;
	char dir[64], db[128], err[512];
	tgi_store *s;
	make_dir(dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	assert_int_equal(tgi_store_open(db, 0, &s, err, sizeof err), 0);
	for (int i = 0; i < 20; i++) {
		char id[37];
		tgi_uuidv7(id);
		tgi_op_record op = { .op_id = id, .tool = "t", .status = "persisted", .envelope = "{}",
		                     .session = "s0", .started_ms = i };
		tgi_event ev = { "tool.call.received", "decode", NULL, i, 0 };
		assert_int_equal(tgi_store_record(s, &op, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	}
	tgi_store_close(s);
	sweep(dir, db, 0, 0);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(query_int(h, "SELECT count(*) FROM ops WHERE session = '%s'", "s0"), 20);
	sqlite3_close(h);
	remove_dir(dir);
}

int main(void)
{
	static sqlite3_mem_methods failing = {
		fs_malloc, fs_free, fs_realloc, fs_size, fs_roundup, fs_init, fs_shutdown, NULL,
	};
	sqlite3_shutdown();
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real) != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_MALLOC, &failing) != SQLITE_OK ||
	    sqlite3_initialize() != SQLITE_OK) {
		fprintf(stderr, "cannot install the failing allocator\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_new_ledger),
		cmocka_unit_test(test_fault_existing_ledger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
