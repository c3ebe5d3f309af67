/*
 * test_ratelimit.c — rate limits (src/mw/ratelimit.c) through the public
 * contract: a token bucket per (principal, tool) from `rate_limits`, the
 * `rate_limited` answer with retry_after_s, isolation between principals
 * and tools, the first matching glob, dry runs, bad configuration with
 * file:line, many threads on one gate, two gates on one ledger drawing
 * from one bucket, many buckets, a restart that does not reset a
 * bucket, and the leases a high rate is drawn in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "toolgate.h"

static char ws[64];
static char cfg_path[128];

static int setup(void **state)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(ws, sizeof ws, "%s/tg-rate.XXXXXX", base);
	assert_non_null(mkdtemp(ws));
	snprintf(cfg_path, sizeof cfg_path, "%s/toolgate.yaml", ws);
	char p[128];
	snprintf(p, sizeof p, "%s/hello.txt", ws);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("one\ntwo\n", f);
	fclose(f);
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

static void write_config(const char *text)
{
	FILE *f = fopen(cfg_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Open a gate on the workspace with this configuration: 0, or -1 with the
 * error (caller frees). */
static int try_open(const char *yaml, tg_gate **g, char **err)
{
	write_config(yaml);
	tg_options o = {.config_path = cfg_path, .workspace = ws, .sync_full = 0};
	return tg_gate_open(&o, g, err);
}

/* Forget every saved bucket (buckets outlive a gate: see test_restart). */
static void fresh_ledger(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/.toolgate'", ws);
	assert_int_equal(system(cmd), 0);
}

static tg_gate *open_with(const char *yaml)
{
	tg_gate *g = NULL;
	char *err = NULL;
	if (try_open(yaml, &g, &err) < 0)
		fail_msg("open: %s", err ? err : "?");
	return g;
}

/* One call; its envelope (caller frees with json_decref). */
static json_t *call_as(tg_gate *g, const char *principal, const char *tool, const char *args,
                       int dry_run)
{
	tg_request req = {.tool = tool, .args = args, .principal = principal, .dry_run = dry_run};
	tg_result *r;
	tg_call(g, &req, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(env);
	assert_string_equal(json_string_value(json_object_get(env, "status")),
	                    tg_status_name(tg_result_status(r)));
	tg_result_free(r);
	return env;
}

static const char *status_of(const json_t *env)
{
	return json_string_value(json_object_get(env, "status"));
}

static const char *kind_of(const json_t *env)
{
	const char *k = json_string_value(json_object_get(json_object_get(env, "error"), "kind"));
	return k ? k : "";
}

/* The status of one call, its envelope dropped; "rate_limited" when it
 * was denied as such (any other denial shows as "denied"). */
static const char *outcome(tg_gate *g, const char *principal, const char *tool, const char *args)
{
	json_t *env = call_as(g, principal, tool, args, 0);
	const char *st = status_of(env);
	const char *out = !strcmp(kind_of(env), "rate_limited") ? "rate_limited"
	                : !strcmp(st, "persisted")              ? "persisted"
	                : !strcmp(st, "denied")                 ? "denied"
	                                                        : "other";
	json_decref(env);
	return out;
}

#define READ "{\"path\":\"hello.txt\"}"
#define LIST "{\"path\":\".\"}"

/* The case: 3/sec lets three through, the fourth waits less than
 * a second, and after that wait the next one passes. */
static void test_three_per_second(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 3/sec\n");
	for (int i = 0; i < 3; i++)
		assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");

	json_t *env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(status_of(env), "denied");
	assert_string_equal(kind_of(env), "rate_limited");
	json_t *err = json_object_get(env, "error");
	double wait = json_number_value(json_object_get(err, "retry_after_s"));
	assert_true(json_is_number(json_object_get(err, "retry_after_s")));
	assert_true(wait > 0 && wait <= 1.0 / 3 + 0.001);     /* one token comes back in 1/3 s */
	assert_string_equal(json_string_value(json_object_get(err, "rule")),
	                    "rate_limits: read_file 3/sec");
	const char *msg = json_string_value(json_object_get(err, "message"));
	assert_non_null(strstr(msg, "read_file is limited to 3 calls a second for you; wait "));
	assert_non_null(strstr(msg, " s and retry"));
	assert_string_equal(json_string_value(json_object_get(err, "applied")), "no");
	/* the trace names the step that stopped it, just before persist */
	json_t *st = json_object_get(env, "stages");
	json_t *last = json_array_get(st, json_array_size(st) - 2);
	assert_string_equal(json_string_value(json_object_get(last, "stage")), "rate_limit");
	assert_false(json_is_true(json_object_get(last, "ok")));
	assert_string_equal(json_string_value(json_object_get(last, "limit")), "3/sec");
	assert_true(json_is_null(json_object_get(env, "output")));  /* nothing ran */
	json_decref(env);

	/* waiting exactly what it said is enough */
	usleep((useconds_t)(wait * 1e6));
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	tg_gate_close(g);
}

/* A call that passes shows its limit and what is left in the trace. */
static void test_trace_on_pass(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 5/hour\n");
	json_t *env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(status_of(env), "persisted");
	json_t *st = json_object_get(env, "stages");
	json_t *rec = NULL;
	for (size_t i = 0; i < json_array_size(st); i++) {
		json_t *s = json_array_get(st, i);
		if (!strcmp(json_string_value(json_object_get(s, "stage")), "rate_limit"))
			rec = s;
	}
	assert_non_null(rec);
	assert_true(json_is_true(json_object_get(rec, "ok")));
	assert_string_equal(json_string_value(json_object_get(rec, "limit")), "5/hour");
	assert_int_equal(json_integer_value(json_object_get(rec, "remaining")), 4);
	json_decref(env);
	tg_gate_close(g);
}

#define PRINCIPALS                                                                 \
	"default_principal: alice\n"                                               \
	"principals:\n"                                                            \
	"  alice: {roles: [owner]}\n"                                              \
	"  bob:   {roles: [owner]}\n"                                              \
	"roles:\n"                                                                 \
	"  owner: {allow: [\"*\"]}\n"

/* Each principal has its own bucket. */
static void test_per_principal(void **state)
{
	tg_gate *g = open_with(PRINCIPALS "rate_limits:\n  read_file: 2/hour\n");
	assert_string_equal(outcome(g, "alice", "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted"); /* alice, by default */
	assert_string_equal(outcome(g, "alice", "read_file", READ), "rate_limited");
	assert_string_equal(outcome(g, "bob", "read_file", READ), "persisted");
	assert_string_equal(outcome(g, "bob", "read_file", READ), "persisted");
	assert_string_equal(outcome(g, "bob", "read_file", READ), "rate_limited");
	assert_string_equal(outcome(g, "alice", "read_file", READ), "rate_limited");
	/* an unknown principal is denied before any bucket is touched */
	json_t *env = call_as(g, "mallory", "read_file", READ, 0);
	assert_string_equal(status_of(env), "denied");
	assert_string_not_equal(kind_of(env), "rate_limited");
	json_decref(env);
	tg_gate_close(g);
}

/* One glob covering two tools gives each tool its own bucket; the first
 * matching entry in file order sets the rate; other tools are free. */
static void test_per_tool_and_order(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  \"read_*\": 1/hour\n  \"*_*\": 2/hour\n");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "rate_limited");
	/* list_dir matches only the second glob: its own bucket of 2 */
	assert_string_equal(outcome(g, NULL, "list_dir", LIST), "persisted");
	assert_string_equal(outcome(g, NULL, "list_dir", LIST), "persisted");
	assert_string_equal(outcome(g, NULL, "list_dir", LIST), "rate_limited");
	tg_gate_close(g);

	/* the same entries the other way round: "*_*" now wins for read_file */
	fresh_ledger();
	g = open_with("rate_limits:\n  \"*_*\": 2/hour\n  \"read_*\": 1/hour\n");
	json_t *env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(status_of(env), "persisted");
	json_decref(env);
	env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(status_of(env), "persisted");
	json_decref(env);
	env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(kind_of(env), "rate_limited");
	assert_string_equal(json_string_value(json_object_get(json_object_get(env, "error"), "rule")),
	                    "rate_limits: *_* 2/hour");
	json_decref(env);
	tg_gate_close(g);

	/* a tool no glob names is not limited */
	fresh_ledger();
	g = open_with("rate_limits:\n  list_dir: 1/hour\n");
	for (int i = 0; i < 5; i++)
		assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	tg_gate_close(g);
}

/* A dry run takes no token, but says when the real call would be limited. */
static void test_dry_run(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 2/hour\n");
	for (int i = 0; i < 4; i++) {
		json_t *env = call_as(g, NULL, "read_file", READ, 1);
		assert_string_equal(status_of(env), "dry_run");
		json_decref(env);
	}
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	json_t *env = call_as(g, NULL, "read_file", READ, 1);
	assert_string_equal(kind_of(env), "rate_limited");
	json_decref(env);
	tg_gate_close(g);
}

/* Calls that stop before the rate limit (invalid, denied) take nothing. */
static void test_stopped_earlier(void **state)
{
	tg_gate *g = open_with("permissions:\n  deny: [\"read_file(./secret.txt)\"]\n"
	                       "rate_limits:\n  read_file: 1/hour\n");
	for (int i = 0; i < 3; i++) {
		json_t *env = call_as(g, NULL, "read_file", "{\"path\":7}", 0);
		assert_string_equal(status_of(env), "invalid");
		json_decref(env);
		env = call_as(g, NULL, "read_file", "{\"path\":\"secret.txt\"}", 0);
		assert_string_equal(kind_of(env), "not_permitted");
		json_decref(env);
	}
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "rate_limited");
	tg_gate_close(g);
}

/* Every spelling the docs promise opens. */
static void test_spellings(void **state)
{
	static const char *const ok[] = {
		"1/sec", "2/s", "3/second", "4/seconds", "5/min", "6/m", "7/minute", "8/minutes",
		"9/hour", "10/h", "11/hours", "12/hr", "13 / MIN", " 14/Hour ", "1000000/sec",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char yaml[256];
		snprintf(yaml, sizeof yaml, "rate_limits:\n  read_file: \"%s\"\n", ok[i]);
		tg_gate *g = NULL;
		char *err = NULL;
		if (try_open(yaml, &g, &err) < 0)
			fail_msg("\"%s\" refused: %s", ok[i], err);
		tg_gate_close(g);
	}
	/* an empty section limits nothing */
	tg_gate *g = open_with("rate_limits: {}\n");
	for (int i = 0; i < 3; i++)
		assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	tg_gate_close(g);
}

/* A bad entry is refused at open, naming file:line:column, the key and
 * what was expected. */
static void test_parse_errors(void **state)
{
	static const struct {
		const char *value, *want;
	} bad[] = {
		{"60/fortnight", "expected N/sec, N/min or N/hour, got \"60/fortnight\""},
		{"\"60\"", "expected N/sec, N/min or N/hour, got \"60\""},
		{"60", "expected N/sec, N/min or N/hour, got 60"},
		{"\"/min\"", "expected N/sec, N/min or N/hour, got \"/min\""},
		{"\"-1/min\"", "expected N/sec, N/min or N/hour, got \"-1/min\""},
		{"\"1.5/min\"", "expected N/sec, N/min or N/hour, got \"1.5/min\""},
		{"\"60/min please\"", "expected N/sec, N/min or N/hour, got \"60/min please\""},
		{"\"60/min/min\"", "expected N/sec, N/min or N/hour, got \"60/min/min\""},
		{"\"\"", "expected N/sec, N/min or N/hour, got \"\""},
		{"[60/min]", "expected N/sec, N/min or N/hour, got a list"},
		{"null", "expected N/sec, N/min or N/hour, got null"},
		{"0/min", "expected N/sec, N/min or N/hour with N from 1 to 1000000, got \"0/min\""},
		{"1000001/sec", "expected N/sec, N/min or N/hour with N from 1 to 1000000, got \"1000001/sec\""},
		{"99999999999999999999999/sec", "expected N/sec, N/min or N/hour with N from 1 to 1000000, got \"9999999999"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char yaml[256], want[256];
		snprintf(yaml, sizeof yaml, "# limits\nrate_limits:\n  read_file: 3/sec\n"
		                            "  search_files: %s\n", bad[i].value);
		tg_gate *g = NULL;
		char *err = NULL;
		assert_int_equal(try_open(yaml, &g, &err), -1);
		assert_null(g);
		assert_non_null(err);
		/* a bad scalar is pointed at; a list by its key */
		snprintf(want, sizeof want, "toolgate.yaml:4:%d: rate_limits.search_files: %s",
		         bad[i].value[0] == '[' ? 3 : 17, bad[i].want);
		if (!strstr(err, want))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].value, err, want);
		free(err);
	}

	/* the key must name tools */
	tg_gate *g = NULL;
	char *err = NULL;
	assert_int_equal(try_open("rate_limits:\n  \"read file\": 3/sec\n", &g, &err), -1);
	assert_non_null(strstr(err, "toolgate.yaml:2:"));
	assert_non_null(strstr(err, "rate_limits.read file: expected a tool name or glob"));
	free(err);
	err = NULL;
	assert_int_equal(try_open("rate_limits:\n  \"\": 3/sec\n", &g, &err), -1);
	assert_non_null(strstr(err, "expected a tool name or glob"));
	free(err);
	err = NULL;
	/* the section itself must be a mapping */
	assert_int_equal(try_open("rate_limits: [read_file]\n", &g, &err), -1);
	assert_non_null(strstr(err, "toolgate.yaml:1:"));
	assert_non_null(strstr(err, "rate_limits"));
	assert_non_null(strstr(err, "expected a mapping"));
	free(err);
	assert_null(g);
}

/* ---- many threads on one gate ---- */

#define THREADS 8
#define PER_THREAD 100

typedef struct {
	tg_gate *g;
	int      passed, limited, other;
} worker_state;

static void *worker(void *arg)
{
	worker_state *w = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		tg_request req = {.tool = "read_file", .args = READ};
		tg_result *r;
		tg_status st = tg_call(w->g, &req, &r);
		const char *json = tg_result_json(r, 0);
		if (st == TG_PERSISTED)
			w->passed++;
		else if (st == TG_DENIED && strstr(json, "\"kind\":\"rate_limited\""))
			w->limited++;
		else
			w->other++;
		tg_result_free(r);
	}
	return NULL;
}

/* 8 threads x 100 calls against 50 tokens: exactly 50 pass.  (Per hour,
 * not per minute, so that no token comes back while a slow build runs
 * the 800 calls.) */
static void test_threads(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 50/hour\n");
	pthread_t t[THREADS];
	worker_state w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker_state){.g = g};
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	int passed = 0, limited = 0, other = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		passed += w[i].passed;
		limited += w[i].limited;
		other += w[i].other;
	}
	tg_gate_close(g);
	assert_int_equal(other, 0);
	assert_int_equal(passed, 50);
	assert_int_equal(limited, THREADS * PER_THREAD - 50);
}

/* Two gates open at once on one ledger (two long-lived processes) draw
 * from one bucket: each meets it with a call, then they alternate; 10 of
 * 24 pass, and the last state each reports is the ledger's. */
static void test_two_gates(void **state)
{
	const char *yaml = "rate_limits:\n  read_file: 10/hour\n";
	tg_gate *g[2] = {open_with(yaml), open_with(yaml)};
	int passed = 0, limited = 0;
	for (int i = 0; i < 24; i++) {
		const char *o = outcome(g[i % 2], NULL, "read_file", READ);
		passed += !strcmp(o, "persisted");
		limited += !strcmp(o, "rate_limited");
	}
	assert_int_equal(passed, 10);
	assert_int_equal(limited, 14);
	tg_gate_close(g[0]);
	tg_gate_close(g[1]);
}

/* ---- across a restart ---- */

/* A bucket outlives the process: use 2 of 3, close, open again: one left. */
static void test_restart(void **state)
{
	const char *yaml = "rate_limits:\n  read_file: 3/min\n";
	tg_gate *g = open_with(yaml);
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	tg_gate_close(g);

	g = open_with(yaml);
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "rate_limited");
	tg_gate_close(g);

	/* a stricter limit after the restart caps what was saved */
	g = open_with("rate_limits:\n  read_file: 1/hour\n");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "rate_limited");
	tg_gate_close(g);
}

/* The token a call takes from a generous limit (saved every 1% of N) is
 * not lost when the process ends after that one call, as `toolgate call`
 * does: three one-call gates leave 197 of 200. */
static void test_restart_one_call_each(void **state)
{
	const char *yaml = "rate_limits:\n  read_file: 200/hour\n";
	for (int i = 0; i < 3; i++) {
		tg_gate *g = open_with(yaml);
		json_t *env = call_as(g, NULL, "read_file", READ, 0);
		assert_string_equal(status_of(env), "persisted");
		json_t *st = json_object_get(env, "stages"), *rec = NULL;
		for (size_t k = 0; k < json_array_size(st); k++) {
			json_t *s = json_array_get(st, k);
			if (!strcmp(json_string_value(json_object_get(s, "stage")), "rate_limit"))
				rec = s;
		}
		assert_non_null(rec);
		assert_int_equal(json_integer_value(json_object_get(rec, "remaining")), 199 - i);
		json_decref(env);
		tg_gate_close(g);
	}
}

/* Many buckets (more than the gate once kept in memory): each its own,
 * none forgotten. */
#define MANY 4200
static void test_bounded(void **state)
{
	size_t cap = 64 + MANY * 40;
	char *yaml = malloc(cap), *p = yaml;
	p += sprintf(p, "default_principal: p0\nroles:\n  owner: {allow: [\"*\"]}\nprincipals:\n");
	for (int i = 0; i < MANY; i++)
		p += sprintf(p, "  p%d: {roles: [owner]}\n", i);
	sprintf(p, "rate_limits:\n  read_file: 1/hour\n");
	tg_gate *g = open_with(yaml);
	free(yaml);
	char name[16];
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof name, "p%d", i);
		const char *o = outcome(g, name, "read_file", READ);
		if (strcmp(o, "persisted"))
			fail_msg("%s's first call: %s", name, o);
	}
	/* the first and the last are both still used up */
	assert_string_equal(outcome(g, "p0", "read_file", READ), "rate_limited");
	assert_string_equal(outcome(g, "p4199", "read_file", READ), "rate_limited");
	tg_gate_close(g);
}


/* ---- leases: a high rate drawn a lease at a time ---- */

/* The tokens the ledger's bucket of read_file holds as last written. */
static double ledger_tokens(void)
{
	char path[160];
	sqlite3 *db;
	sqlite3_stmt *st;
	double v = -1;
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT tokens FROM rate_buckets WHERE tool = "
	                                    "'read_file'", -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static json_int_t remaining_of(const json_t *env)
{
	json_t *st = json_object_get(env, "stages");
	for (size_t k = 0; k < json_array_size(st); k++) {
		json_t *s = json_array_get(st, k);
		if (!strcmp(json_string_value(json_object_get(s, "stage")), "rate_limit"))
			return json_integer_value(json_object_get(s, "remaining"));
	}
	fail_msg("no rate_limit stage");
	return -1;
}

/* 1000/sec draws 64 tokens at once (100 ms of refill, at most 64): the
 * first call leaves 936 in the ledger (a new bucket is full and the draw
 * was made at its own time), and reports 999 — the bucket and the 63 the
 * gate holds — as one token a call would. */
static void test_lease_drawn(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 1000/sec\n");
	json_t *env = call_as(g, NULL, "read_file", READ, 0);
	assert_string_equal(status_of(env), "persisted");
	assert_int_equal(remaining_of(env), 999);
	json_decref(env);
	assert_true(ledger_tokens() == 936.0);
	tg_gate_close(g);
}

/* A low rate takes one token a call, as before: 19/sec (under two tokens
 * in 100 ms) leaves 18 in the ledger after one call. */
static void test_lease_not_below(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 19/sec\n");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_true(ledger_tokens() == 18.0);
	tg_gate_close(g);
}

/* A lease is at most a tenth of the limit: 100/sec (10 tokens in 100 ms,
 * a tenth is 10) and 300/min (5 a second: under two in 100 ms, no lease). */
static void test_lease_size(void **state)
{
	tg_gate *g = open_with("rate_limits:\n  read_file: 100/sec\n");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_true(ledger_tokens() == 90.0);
	tg_gate_close(g);
	fresh_ledger();
	g = open_with("rate_limits:\n  read_file: 300/min\n");
	assert_string_equal(outcome(g, NULL, "read_file", READ), "persisted");
	assert_true(ledger_tokens() == 299.0);
	tg_gate_close(g);
}

/* Two gates on one ledger, each drawing leases of 10 from 100/sec, never
 * pass more than the ledger handed out: at most the burst (100) plus the
 * refill of the time the calls took; every call persisted or
 * rate_limited. */
static void test_lease_two_gates_bounded(void **state)
{
	const char *yaml = "rate_limits:\n  read_file: 100/sec\n";
	tg_gate *g[2] = {open_with(yaml), open_with(yaml)};
	struct timespec a, b;
	int passed = 0, other = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 400; i++) {
		const char *o = outcome(g[i % 2], NULL, "read_file", READ);
		passed += !strcmp(o, "persisted");
		other += strcmp(o, "persisted") && strcmp(o, "rate_limited");
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	assert_int_equal(other, 0);
	assert_true(passed >= 10);
	if ((double)passed > 100 + 100 * s + 1e-6)
		fail_msg("%d calls passed in %.3f s: over 100 + 100/s", passed, s);
	tg_gate_close(g[0]);
	tg_gate_close(g[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_three_per_second, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trace_on_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_principal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_tool_and_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stopped_earlier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spellings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_gates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_one_call_each, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_drawn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_not_below, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_two_gates_bounded, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
