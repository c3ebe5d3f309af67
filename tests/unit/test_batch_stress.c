/*
 * test_batch_stress.c — many batches on one gate at once (run under
 * ThreadSanitizer by `make check`, and under ASan like every test).
 *
 * THREADS threads each send PER_THREAD calls to tg_call_batch, in batches
 * of 1 to 24: reads, writes with idempotency keys drawn from a pool small
 * enough that keys repeat within a batch and across threads, keyed
 * side effects of a concurrency-safe command tool that logs every run,
 * writes without keys, listings, and calls that stop at decode.  Then the
 * ledger must hold exactly one ops row and one `received` event per call,
 * the terminal event matching each row's status exactly once, and every
 * key must have been applied exactly once (one persisted op, one line in
 * the tool's log); its other uses were replayed or found it in flight.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "toolgate.h"

#define THREADS    8
#define PER_THREAD 1250           /* 10,000 calls in all */
#define MAX_BATCH  24
#define WKEYS      300            /* write_file keys */
#define AKEYS      150            /* keys of the command tool */

static char ws[96];

enum kind { K_READ, K_WKEY, K_AKEY, K_WRITE, K_LIST, K_BAD, K_UNKNOWN };

typedef struct {
	enum kind  kind;
	int        key;               /* K_WKEY, K_AKEY */
	tg_status  status;
	char       op_id[37];
} record;

typedef struct {
	int        id;
	tg_gate   *g;
	record    *rec;               /* PER_THREAD */
	int        failed;            /* a result that should not be */
	char       why[256];
} worker_state;

static unsigned next_rand(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static enum kind pick(unsigned r)
{
	unsigned p = r % 100;
	return p < 35 ? K_READ : p < 60 ? K_WKEY : p < 70 ? K_AKEY : p < 82 ? K_WRITE
	     : p < 92 ? K_LIST : p < 96 ? K_BAD : K_UNKNOWN;
}

/* Which statuses a call of this kind may end with. */
static int status_ok(enum kind k, tg_status st)
{
	switch (k) {
	case K_READ: case K_WRITE: case K_LIST:
		return st == TG_PERSISTED;
	case K_WKEY: case K_AKEY:
		return st == TG_PERSISTED || st == TG_REPLAYED || st == TG_PENDING;
	default:
		return st == TG_INVALID;
	}
}

static void *worker(void *arg)
{
	worker_state *w = arg;
	unsigned seed = 2463534242u + 7919u * (unsigned)w->id;
	char session[16];
	snprintf(session, sizeof session, "t%d", w->id);
	tg_request reqs[MAX_BATCH];
	tg_result *out[MAX_BATCH];
	char args[MAX_BATCH][128], keys[MAX_BATCH][16];

	for (int done = 0; done < PER_THREAD && !w->failed;) {
		int n = 1 + (int)(next_rand(&seed) % MAX_BATCH);
		if (n > PER_THREAD - done)
			n = PER_THREAD - done;
		for (int i = 0; i < n; i++) {
			record *r = &w->rec[done + i];
			tg_request *q = &reqs[i];
			memset(q, 0, sizeof *q);
			q->session = session;
			q->args = args[i];      /* keys come from the transport, as --key gives them */
			r->kind = pick(next_rand(&seed));
			switch (r->kind) {
			case K_READ:
				q->tool = "read_file";
				snprintf(args[i], sizeof args[i], "{\"path\":\"r%u.txt\"}", next_rand(&seed) % 10);
				break;
			case K_WKEY:
				r->key = (int)(next_rand(&seed) % WKEYS);
				q->tool = "write_file";
				snprintf(args[i], sizeof args[i],
				         "{\"path\":\"keyed/%d/w%d.txt\",\"content\":\"w%d\"}", r->key % 10,
				         r->key, r->key);
				snprintf(keys[i], sizeof keys[i], "w%d", r->key);
				q->idempotency_key = keys[i];
				break;
			case K_AKEY:
				r->key = (int)(next_rand(&seed) % AKEYS);
				q->tool = "append";
				snprintf(args[i], sizeof args[i], "{\"k\":\"a%d\"}", r->key);
				snprintf(keys[i], sizeof keys[i], "a%d", r->key);
				q->idempotency_key = keys[i];
				break;
			case K_WRITE:
				q->tool = "write_file";
				snprintf(args[i], sizeof args[i], "{\"path\":\"t%d/f%u.txt\",\"content\":\"%d\"}",
				         w->id, next_rand(&seed) % 20, done + i);
				break;
			case K_LIST:
				q->tool = "list_dir";
				snprintf(args[i], sizeof args[i], "{\"path\":\"keyed/%u\"}", next_rand(&seed) % 10);
				break;
			case K_BAD:
				q->tool = "read_file";
				snprintf(args[i], sizeof args[i], "{\"path\":");
				break;
			case K_UNKNOWN:
				q->tool = "no_such_tool";
				snprintf(args[i], sizeof args[i], "{}");
				break;
			}
		}
		if (tg_call_batch(w->g, reqs, (size_t)n, out) != (size_t)n) {
			w->failed = 1;
			snprintf(w->why, sizeof w->why, "a batch of %d answered short", n);
		}
		for (int i = 0; i < n; i++) {
			record *r = &w->rec[done + i];
			r->status = tg_result_status(out[i]);
			snprintf(r->op_id, sizeof r->op_id, "%s", tg_result_op_id(out[i]));
			if (!status_ok(r->kind, r->status) && !w->failed) {
				w->failed = 1;
				snprintf(w->why, sizeof w->why, "call %d: %.200s", done + i,
				         tg_result_json(out[i], 0));
			}
			tg_result_free(out[i]);
		}
		done += n;
	}
	return NULL;
}

/* ---- the workspace ---- */

static const char append_sh[] =
	"#!/bin/sh\n"
	"# stdin: the call JSON with args {\"k\": KEY}; logs KEY once per run.\n"
	"in=$(cat)\n"
	"k=${in#*\\\"k\\\":\\\"}; k=${k%%\\\"*}\n"
	"echo \"$k\" >> applied.log\n"
	"echo '{\"ok\":true}'\n";

static const char config_yaml[] =
	"mode: bypassPermissions\n"
	"loop_detection: {enabled: false}\n"   /* the same calls again and again on purpose */
	"tools:\n"
	"  append:\n"
	"    description: Appends its key to a log; a side effect that may run beside others.\n"
	"    input_schema: {type: object, properties: {k: {type: string}}, required: [k]}\n"
	"    command: [./append.sh]\n"
	"    concurrency_safe: true\n";

static void put(const char *name, const char *text, mode_t mode)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, mode);
}

/* tmpfs when there is one: the test is about threads, not disk syncs */
static int setup(void **state)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(ws, sizeof ws, "%s/tg-stress.XXXXXX", base);
	assert_non_null(mkdtemp(ws));
	put("append.sh", append_sh, 0755);
	put("toolgate.yaml", config_yaml, 0644);
	char dir[160];
	snprintf(dir, sizeof dir, "%s/keyed", ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(dir, sizeof dir, "%s/keyed/%d", ws, i);
		assert_int_equal(mkdir(dir, 0755), 0);
	}
	for (int i = 0; i < 10; i++) {
		char name[32], text[32];
		snprintf(name, sizeof name, "r%d.txt", i);
		snprintf(text, sizeof text, "read %d\n", i);
		put(name, text, 0644);
	}
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

/* ---- the ledger ---- */

static sqlite3 *db;

static long long q1(const char *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void expect(const char *sql, long long want)
{
	long long got = q1(sql);
	if (got != want)
		fail_msg("%s: %lld, expected %lld", sql, got, want);
}

static void test_stress(void **state)
{
	char cfg[160];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) != 0)
		fail_msg("open: %s", err);

	pthread_t t[THREADS];
	worker_state w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker_state){.id = i, .g = g, .rec = calloc(PER_THREAD, sizeof(record))};
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	tg_gate_close(g);
	for (int i = 0; i < THREADS; i++) {
		if (w[i].failed) {
			char why[300];
			snprintf(why, sizeof why, "thread %d: %s", i, w[i].why);
			for (int j = 0; j < THREADS; j++)
				free(w[j].rec);
			fail_msg("%s", why);
		}
	}

	/* what the threads saw */
	int wkey_used[WKEYS] = {0}, akey_used[AKEYS] = {0};
	int wkey_persisted[WKEYS] = {0}, akey_persisted[AKEYS] = {0};
	long long calls = 0, executed = 0, nw = 0, na = 0;
	for (int i = 0; i < THREADS; i++) {
		for (int j = 0; j < PER_THREAD; j++) {
			const record *r = &w[i].rec[j];
			calls++;
			executed += r->status == TG_PERSISTED;
			if (r->kind == K_WKEY) {
				nw += !wkey_used[r->key]++;
				wkey_persisted[r->key] += r->status == TG_PERSISTED;
			} else if (r->kind == K_AKEY) {
				na += !akey_used[r->key]++;
				akey_persisted[r->key] += r->status == TG_PERSISTED;
			}
		}
	}
	assert_int_equal(calls, THREADS * PER_THREAD);
	long long by_status[TG_STATUS__COUNT] = {0};
	for (int i = 0; i < THREADS; i++)
		for (int j = 0; j < PER_THREAD; j++)
			by_status[w[i].rec[j].status]++;
	fprintf(stderr, "      %lld calls: %lld persisted, %lld replayed, %lld pending, %lld invalid; "
	        "%lld + %lld keys\n", calls, by_status[TG_PERSISTED], by_status[TG_REPLAYED],
	        by_status[TG_PENDING], by_status[TG_INVALID], nw, na);
	for (int k = 0; k < WKEYS; k++)
		assert_int_equal(wkey_persisted[k], wkey_used[k] ? 1 : 0);
	for (int k = 0; k < AKEYS; k++)
		assert_int_equal(akey_persisted[k], akey_used[k] ? 1 : 0);

	/* the ledger: one row and one received event per call, nothing else */
	char p[256];
	snprintf(p, sizeof p, "%s/.toolgate/ledger.db", ws);
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	expect("select count(*) from ops", calls);
	expect("select count(distinct op_id) from ops", calls);
	expect("select count(*) from events where type = 'tool.call.received'", calls);
	expect("select count(distinct op_id) from events where type = 'tool.call.received'", calls);
	expect("select count(*) from events where op_id not in (select op_id from ops)", 0);
	/* each row's terminal event, exactly once */
	expect("select count(*) from ops o where (select count(*) from events e where "
	       "e.op_id = o.op_id and e.type = 'tool.call.' || o.status) <> 1", 0);
	expect("select count(*) from events where type in ('tool.call.persisted', "
	       "'tool.call.replayed', 'tool.call.pending', 'tool.call.invalid', "
	       "'tool.call.failed', 'tool.call.denied', 'tool.call.committed')", calls);
	expect("select count(*) from events where type = 'tool.call.started'", executed);
	expect("select count(*) from ops where status = 'persisted'", executed);
	/* every keyed op applied once: one persisted row per scope, every claim settled done */
	expect("select count(*) from (select idem_scope from ops where status = 'persisted' and "
	       "idem_scope like 'sha256:%' group by idem_scope having count(*) <> 1)", 0);
	expect("select count(distinct idem_scope) from ops where status = 'persisted' and "
	       "idem_scope like 'sha256:%'", nw + na);
	expect("select count(*) from idem where state <> 'done'", 0);
	expect("select count(*) from idem", nw + na);
	expect("select sum(calls) from sessions", calls);
	sqlite3_close(db);

	/* results agree with the ledger */
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "select status from ops where op_id = ?", -1, &st,
	                                    NULL), SQLITE_OK);
	for (int i = 0; i < THREADS; i++) {
		for (int j = 0; j < PER_THREAD; j++) {
			const record *r = &w[i].rec[j];
			sqlite3_bind_text(st, 1, r->op_id, -1, SQLITE_STATIC);
			assert_int_equal(sqlite3_step(st), SQLITE_ROW);
			assert_string_equal((const char *)sqlite3_column_text(st, 0),
			                    tg_status_name(r->status));
			sqlite3_reset(st);
		}
		free(w[i].rec);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);

	/* the command tool ran exactly once per key it was given */
	int runs[AKEYS] = {0};
	snprintf(p, sizeof p, "%s/applied.log", ws);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int k;
	while (fscanf(f, " a%d", &k) == 1) {
		assert_true(k >= 0 && k < AKEYS);
		runs[k]++;
	}
	assert_true(feof(f));
	fclose(f);
	for (k = 0; k < AKEYS; k++)
		assert_int_equal(runs[k], akey_used[k] ? 1 : 0);
	/* and every keyed file holds its content */
	for (k = 0; k < WKEYS; k++) {
		if (!wkey_used[k])
			continue;
		char want[16], got[16] = "";
		snprintf(p, sizeof p, "%s/keyed/%d/w%d.txt", ws, k % 10, k);
		snprintf(want, sizeof want, "w%d", k);
		f = fopen(p, "r");
		assert_non_null(f);
		assert_non_null(fgets(got, sizeof got, f));
		fclose(f);
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stress, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
