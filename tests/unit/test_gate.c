/*
 * test_gate.c — the public contract (include/toolgate.h): statuses and exit
 * codes, the envelope's keys, batches, several threads on one gate, and
 * the create/destroy rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "toolgate.h"
#include "util/util.h"   /* tgi_sha256_hex */

static char ws[64];

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-gate.XXXXXX");
	assert_non_null(mkdtemp(ws));
	char p[128];
	snprintf(p, sizeof p, "%s/hello.txt", ws);
	FILE *f = fopen(p, "w");
	fputs("one\ntwo\nthree\n", f);
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

static tg_gate *open_gate(void)
{
	tg_options o = {.workspace = ws, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = tg_gate_open(&o, &g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	return g;
}

static json_t *envelope(const tg_result *r)
{
	json_t *j = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(j);
	return j;
}

/* The stored envelope of op_id (a new string), from the ledger itself. */
static char *stored_envelope(const char *op_id)
{
	char p[128];
	sqlite3 *db;
	sqlite3_stmt *st;
	char *out = NULL;
	snprintf(p, sizeof p, "%s/.toolgate/ledger.db", ws);
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT envelope FROM ops WHERE op_id = ?1", -1, &st,
	                                    NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, op_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_non_null(out);
	return out;
}

/* What the ledger keeps of a call's output: a read-only call's as its size
 * and sha256 (no one replays it), a side-effecting call's whole (a replay
 * returns it); ledger.keep_output: all keeps every output.  The caller's
 * envelope has the output either way. */
static void test_kept_output(void **state)
{
	(void)state;
	char p[128];
	for (int all = 0; all < 2; all++) {
		snprintf(p, sizeof p, "%s/toolgate.yaml", ws);
		FILE *f = fopen(p, "w");
		fprintf(f, "permissions: {allow: [\"write_file(./out/**)\"]}\n%s",
		        all ? "ledger: {keep_output: all}\n" : "");
		fclose(f);
		tg_options o = {.workspace = ws, .config_path = p};
		tg_gate *g = NULL;
		char *err = NULL;
		assert_int_equal(tg_gate_open(&o, &g, &err), 0);

		tg_request rq = {.tool = "read_file", .args = "{\"path\":\"hello.txt\"}"};
		tg_result *r;
		assert_int_equal(tg_call(g, &rq, &r), TG_PERSISTED);
		json_t *env = envelope(r);
		char *out = json_dumps(json_object_get(env, "output"), JSON_COMPACT);
		char *kept = stored_envelope(json_string_value(json_object_get(env, "op_id")));
		json_t *k = json_loads(kept, 0, NULL);
		assert_non_null(k);
		assert_non_null(strstr(out, "three"));
		if (all) {
			assert_true(json_equal(json_object_get(k, "output"), json_object_get(env, "output")));
			assert_null(json_object_get(k, "output_digest"));
		} else {
			char sha[65];
			assert_true(json_is_null(json_object_get(k, "output")));
			json_t *d = json_object_get(k, "output_digest");
			assert_int_equal(json_integer_value(json_object_get(d, "bytes")), strlen(out));
			/* the sha256 of the compact JSON of the output */
			tgi_sha256_hex(out, strlen(out), sha);
			assert_string_equal(json_string_value(json_object_get(d, "sha256")), sha);
		}
		free(out);
		free(kept);
		json_decref(k);
		json_decref(env);
		tg_result_free(r);

		tg_request w = {.tool = "write_file",
		                .args = all ? "{\"path\":\"out/b.txt\",\"content\":\"x\\n\"}"
		                            : "{\"path\":\"out/a.txt\",\"content\":\"x\\n\"}",
		                .idempotency_key = all ? "k2" : "k1"};
		assert_int_equal(tg_call(g, &w, &r), TG_PERSISTED);
		env = envelope(r);
		kept = stored_envelope(json_string_value(json_object_get(env, "op_id")));
		k = json_loads(kept, 0, NULL);
		assert_true(json_equal(json_object_get(k, "output"), json_object_get(env, "output")));
		assert_null(json_object_get(k, "output_digest"));
		free(kept);
		json_decref(k);
		json_decref(env);
		tg_result_free(r);
		/* and its replay returns that output */
		assert_int_equal(tg_call(g, &w, &r), TG_REPLAYED);
		tg_result_free(r);
		tg_gate_close(g);
	}
}

/* DESIGN §1: names and exit codes, exactly. */
static void test_statuses(void **state)
{
	static const struct { tg_status s; const char *name; int code; } want[] = {
		{TG_INVALID, "invalid", 2},     {TG_DENIED, "denied", 3},
		{TG_PENDING, "pending", 5},     {TG_FAILED, "failed", 4},
		{TG_COMMITTED, "committed", 6}, {TG_PERSISTED, "persisted", 0},
		{TG_REPLAYED, "replayed", 0},   {TG_DRY_RUN, "dry_run", 0},
	};
	assert_int_equal(TG_STATUS__COUNT, 8);
	for (size_t i = 0; i < 8; i++) {
		assert_string_equal(tg_status_name(want[i].s), want[i].name);
		assert_int_equal(tg_status_exit_code(want[i].s), want[i].code);
	}
	assert_string_equal(tg_status_name((tg_status)99), "?");
	static const char *const kinds[] = {
		"invalid_input", "unknown_tool", "not_permitted", "needs_approval", "ambiguous",
		"transient",     "timeout",      "loop_detected", "rate_limited",   "tool_error",
		"unknown_outcome"};
	for (size_t i = 0; i < 11; i++)
		assert_string_equal(tg_errkind_name((tg_errkind)(i + 1)), kinds[i]);
}

/* The envelope has exactly DESIGN §1's keys, in its order. */
static void test_envelope_keys(void **state)
{
	tg_gate *g = open_gate();
	tg_request req = {.tool = "read_file", .args = "{\"path\":\"hello.txt\"}", .call_id = "c1",
	                  .session = "s1"};
	tg_result *r;
	assert_int_equal(tg_call(g, &req, &r), TG_PERSISTED);
	json_t *env = envelope(r);
	static const char *const keys[] = {"op_id", "call_id", "session", "tool", "status",
	                                   "error", "output", "truncated", "idempotency_key",
	                                   "principal", "stages", "duration_ms"};
	assert_int_equal(json_object_size(env), 12);
	const char *k;
	json_t *v;
	size_t i = 0;
	json_object_foreach(env, k, v)
		assert_string_equal(k, keys[i++]);
	assert_string_equal(json_string_value(json_object_get(env, "call_id")), "c1");
	assert_true(json_is_null(json_object_get(env, "error")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(env, "output"),
	                                                    "total_lines")), 3);
	/* the trace names every stage in order */
	static const char *const stages[] = {"decode", "validate", "identify", "decide",
	                                     "approve", "execute", "shape", "persist"};
	json_t *st = json_object_get(env, "stages");
	assert_int_equal(json_array_size(st), 8);
	for (i = 0; i < 8; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(st, i), "stage")),
		                    stages[i]);
	assert_string_equal(tg_result_op_id(r), json_string_value(json_object_get(env, "op_id")));
	json_decref(env);

	/* an error carries kind, message, rule, field, retry_after_s, applied */
	tg_request bad = {.tool = "read_file", .args = "{\"path\":7}"};
	tg_result *r2;
	assert_int_equal(tg_call(g, &bad, &r2), TG_INVALID);
	env = envelope(r2);
	json_t *err = json_object_get(env, "error");
	static const char *const ekeys[] = {"kind", "message", "rule", "field", "retry_after_s",
	                                    "applied"};
	for (i = 0; i < 6; i++)
		assert_non_null(json_object_get(err, ekeys[i]));
	assert_string_equal(json_string_value(json_object_get(err, "field")), "/path");
	assert_string_equal(json_string_value(json_object_get(err, "applied")), "no");
	json_decref(env);
	tg_result_free(r);
	tg_result_free(r2);
	tg_gate_close(g);
}

/* UUIDv7 op ids are time-ordered. */
static void test_op_ids_ordered(void **state)
{
	tg_gate *g = open_gate();
	tg_request req = {.tool = "read_file", .args = "{\"path\":\"hello.txt\"}"};
	char prev[37] = "";
	for (int i = 0; i < 50; i++) {
		tg_result *r;
		tg_call(g, &req, &r);
		const char *id = tg_result_op_id(r);
		assert_int_equal(strlen(id), 36);
		assert_int_equal(id[14], '7');
		assert_true(strcmp(prev, id) <= 0 || strncmp(prev, id, 13) == 0);
		strcpy(prev, id);
		tg_result_free(r);
	}
	tg_gate_close(g);
}

/* A batch answers in call order, one result per call; a bad call does not
 * cancel its siblings. */
static void test_batch(void **state)
{
	tg_gate *g = open_gate();
	tg_request reqs[3] = {
		{.tool = "read_file", .args = "{\"path\":\"hello.txt\"}", .call_id = "a"},
		{.tool = "nope", .args = "{}", .call_id = "b"},
		{.tool = "list_dir", .args = "{}", .call_id = "c"},
	};
	tg_result *out[3];
	assert_int_equal(tg_call_batch(g, reqs, 3, out), 3);
	assert_int_equal(tg_result_status(out[0]), TG_PERSISTED);
	assert_int_equal(tg_result_status(out[1]), TG_INVALID);
	assert_int_equal(tg_result_status(out[2]), TG_PERSISTED);
	for (int i = 0; i < 3; i++) {
		json_t *env = envelope(out[i]);
		assert_string_equal(json_string_value(json_object_get(env, "call_id")),
		                    reqs[i].call_id);
		json_decref(env);
		tg_result_free(out[i]);
	}
	tg_gate_close(g);
}

/* Several threads on one gate: every call answered, one ledger row each. */
#define THREADS 4
#define PER_THREAD 40
static void *worker(void *arg)
{
	tg_gate *g = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		tg_request req = {.tool = i % 2 ? "read_file" : "list_dir",
		                  .args = i % 2 ? "{\"path\":\"hello.txt\"}" : "{}"};
		tg_result *r;
		if (tg_call(g, &req, &r) != TG_PERSISTED)
			return (void *)1;
		tg_result_free(r);
	}
	return NULL;
}

static void test_threads(void **state)
{
	tg_gate *g = open_gate();
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, g), 0);
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	tg_gate_close(g);
	char path[128];
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db, "select count(*) from ops", -1, &st, NULL);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true(sqlite3_column_int(st, 0) >= THREADS * PER_THREAD);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Dry run: decided, planned, not run; the tool's file is not written. */
static void test_dry_run(void **state)
{
	tg_options o = {.workspace = ws, .sync_full = 0, .mode = "acceptEdits"};
	tg_gate *g;
	char *err = NULL;
	assert_int_equal(tg_gate_open(&o, &g, &err), 0);
	tg_request req = {.tool = "write_file", .args = "{\"path\":\"d.txt\",\"content\":\"x\"}",
	                  .dry_run = 1};
	tg_result *r;
	assert_int_equal(tg_call(g, &req, &r), TG_DRY_RUN);
	char p[128];
	snprintf(p, sizeof p, "%s/d.txt", ws);
	assert_int_not_equal(access(p, F_OK), 0);
	/* the plan: the path and the diff that would create it */
	json_t *env = envelope(r);
	json_t *plan = json_object_get(json_object_get(env, "output"), "plan");
	assert_string_equal(json_string_value(json_object_get(plan, "path")), "d.txt");
	assert_true(json_is_false(json_object_get(plan, "exists")));
	assert_string_equal(json_string_value(json_object_get(plan, "diff")),
	                    "--- /dev/null\n+++ b/d.txt\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n");
	assert_string_equal(json_string_value(json_object_get(json_object_get(env, "output"),
	                                                      "would_run")), "write_file");
	json_decref(env);
	tg_result_free(r);
	tg_gate_close(g);
}

/* Bad options and configs fail with a sentence; destroy(NULL) is a no-op. */
static void test_open_errors(void **state)
{
	tg_gate *g = (tg_gate *)1;
	char *err = NULL;
	tg_options o = {.workspace = ws, .sync_full = -1, .mode = "yolo"};
	assert_int_equal(tg_gate_open(&o, &g, &err), -1);
	assert_null(g);
	assert_non_null(strstr(err, "yolo"));
	free(err);

	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/bad.yaml", ws);
	FILE *f = fopen(cfg, "w");
	fputs("mode: default\nprincipals:\n  ci: {roles: [nobody]}\n", f);
	fclose(f);
	tg_options o2 = {.config_path = cfg, .sync_full = -1};
	assert_int_equal(tg_gate_open(&o2, &g, &err), -1);
	assert_non_null(strstr(err, "bad.yaml:3:"));
	free(err);

	tg_options o3 = {.workspace = "/nonexistent/dir", .sync_full = -1};
	assert_int_equal(tg_gate_open(&o3, &g, &err), -1);
	assert_non_null(strstr(err, "/nonexistent/dir"));
	free(err);

	tg_gate_close(NULL);
	tg_result_free(NULL);
}

/* Definitions: a JSON array with the contract as annotations. */
static void test_tools_json(void **state)
{
	tg_gate *g = open_gate();
	char *err = NULL;
	char *s = tg_tools_json(g, "minimal", &err);
	assert_non_null(s);
	json_t *a = json_loads(s, 0, NULL);
	assert_int_equal(json_array_size(a), 3);
	size_t i;
	json_t *t;
	json_array_foreach(a, i, t) {
		assert_true(json_is_true(json_object_get(json_object_get(t, "annotations"),
		                                         "readOnlyHint")));
		assert_true(json_is_object(json_object_get(t, "input_schema")));
	}
	json_decref(a);
	free(s);
	assert_null(tg_tools_json(g, "nope", &err));
	assert_non_null(strstr(err, "nope"));
	free(err);

	/* the manifest digest: sha256 hex, stable, one per set of definitions */
	char d1[65], d2[65], d3[65];
	assert_int_equal(tg_tools_digest(g, "minimal", d1, &err), 0);
	assert_int_equal(strlen(d1), 64);
	assert_int_equal(strspn(d1, "0123456789abcdef"), 64);
	assert_int_equal(tg_tools_digest(g, "minimal", d2, &err), 0);
	assert_string_equal(d1, d2);
	assert_int_equal(tg_tools_digest(g, "coding", d3, &err), 0);
	assert_string_not_equal(d1, d3);
	assert_int_equal(tg_tools_digest(g, "nope", d3, &err), -1);
	assert_non_null(strstr(err, "nope"));
	free(err);
	tg_gate_close(g);
}

/* A tool that exits without reading a large stdin must not kill the host
 * with SIGPIPE: this process does not ignore it, as an embedder may not. */
static void test_tool_ignores_stdin(void **state)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	FILE *f = fopen(cfg, "w");
	fputs("tools:\n  quick:\n    description: Exits at once.\n"
	      "    input_schema: {type: object}\n    command: [/bin/true]\n    read_only: true\n", f);
	fclose(f);
	signal(SIGPIPE, SIG_DFL);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	tg_gate *g;
	char *err = NULL;
	assert_int_equal(tg_gate_open(&o, &g, &err), 0);
	size_t n = 600 * 1024;
	char *args = malloc(n + 32);
	strcpy(args, "{\"pad\":\"");
	memset(args + 8, 'x', n);
	strcpy(args + 8 + n, "\"}");
	tg_request req = {.tool = "quick", .args = args};
	for (int i = 0; i < 5; i++) {
		tg_result *r;
		assert_int_equal(tg_call(g, &req, &r), TG_PERSISTED);
		tg_result_free(r);
	}
	free(args);
	tg_gate_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statuses),
		cmocka_unit_test_setup_teardown(test_envelope_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_op_ids_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tools_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tool_ignores_stdin, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
