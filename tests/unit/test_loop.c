/*
 * test_loop.c — loop detection (src/mw/loop.c) through a real gate: the
 * hint at `warn`, the block at `block` (and the try after it), the false
 * positives users hit (different searches, re-reading after a write, a
 * status poll), a result that differs only by a timestamp or an id, the
 * ping-pong, observe mode, the window's size, calls that do not count,
 * calls without a session (not tracked), the configuration's checks, a
 * second gate continuing a session from the ledger, and two gates serving
 * one session at once.  The outcome digest
 * and the ledger entry are also tested on their own.
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
#include "mw/mw.h"

static char ws[64];

static void put(const char *rel, const char *text, int mode)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, (mode_t)mode);
}

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-loop.XXXXXX");
	assert_non_null(mkdtemp(ws));
	char p[128];
	snprintf(p, sizeof p, "%s/bin", ws);
	mkdir(p, 0755);
	put("hello.txt", "one\ntwo\nthree\n", 0644);
	put("a.txt", "same\n", 0644);
	for (int i = 0; i < 8; i++) {
		char name[32];
		snprintf(name, sizeof name, "other%d.txt", i);
		put(name, "other\n", 0644);
	}
	/* a status tool: the progress moves on every call */
	put("bin/progress.sh",
	    "#!/bin/sh\n"
	    "n=$(cat progress.count 2>/dev/null || echo 0)\n"
	    "n=$((n + 10)); echo $n > progress.count\n"
	    "printf '{\"status\":\"progress %s%%\"}\\n' \"$n\"\n", 0755);
	/* the same answer every time, but stamped with when and under which id */
	put("bin/stamp.sh",
	    "#!/bin/sh\n"
	    "n=$(cat stamp.count 2>/dev/null || echo 0)\n"
	    "n=$((n + 1)); echo $n > stamp.count\n"
	    "printf '{\"result\":\"built 3 targets at 2026-01-0%sT10:1%s:0%s.12%sZ as "
	    "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e7%s\",\"generated_at\":\"%s\",\"took_ms\":%s,"
	    "\"requestId\":\"r-%s\"}\\n' $n $n $n $n $n $n $n $n\n", 0755);
	/* a temporary failure: told to retry, never counted */
	put("bin/busy.sh", "#!/bin/sh\necho 'busy, try later' >&2\nexit 75\n", 0755);
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

static const char tools_yaml[] =
	"permissions:\n  allow: [write_file]\n"
	"tools:\n"
	"  progress:\n    description: How far the build is.\n"
	"    input_schema: {type: object}\n    command: [./bin/progress.sh]\n    read_only: true\n"
	"  stamp:\n    description: Build and say when.\n"
	"    input_schema: {type: object}\n    command: [./bin/stamp.sh]\n    read_only: true\n"
	"  busy:\n    description: Always busy.\n"
	"    input_schema: {type: object}\n    command: [./bin/busy.sh]\n    read_only: true\n";

/* Open a gate on ws with tools_yaml followed by extra (may be ""): 0, or
 * -1 with the error (caller frees). */
static int try_open(const char *extra, tg_gate **g, char **err)
{
	char cfg[128], *text;
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	assert_true(asprintf(&text, "%s%s", tools_yaml, extra) > 0);
	put("toolgate.yaml", text, 0644);
	free(text);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	*g = NULL;
	*err = NULL;
	return tg_gate_open(&o, g, err);
}

static tg_gate *open_with(const char *extra)
{
	tg_gate *g;
	char *err;
	int rc = try_open(extra, &g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	return g;
}

/* The error tg_gate_open gives for extra (caller frees). */
static char *open_error(const char *extra)
{
	tg_gate *g;
	char *err;
	assert_int_equal(try_open(extra, &g, &err), -1);
	assert_null(g);
	assert_non_null(err);
	return err;
}

/* One call; its envelope (caller decrefs). */
static json_t *call(tg_gate *g, const char *session, const char *tool, const char *args)
{
	tg_request req = {.tool = tool, .args = args, .session = session};
	tg_result *r;
	tg_call(g, &req, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(env);
	tg_result_free(r);
	return env;
}

static const char *status_of(const json_t *env)
{
	return json_string_value(json_object_get(env, "status"));
}

static const char *kind_of(const json_t *env)
{
	return json_string_value(json_object_get(json_object_get(env, "error"), "kind"));
}

static const char *hint_of(const json_t *env)
{
	return json_string_value(json_object_get(env, "hint"));
}

/* Call n times; every result must be status, without a hint and not a
 * loop_detected. */
static void never_trips(tg_gate *g, const char *session, const char *tool, const char *args,
                        int n, const char *status)
{
	for (int i = 0; i < n; i++) {
		json_t *env = call(g, session, tool, args);
		if (hint_of(env) || strcmp(status_of(env), status))
			fail_msg("%s call %d: %s, hint %s", tool, i + 1, status_of(env),
			         hint_of(env) ? hint_of(env) : "none");
		json_decref(env);
	}
}

/* The ledger's rows of table that match where. */
static int64_t rows_in(const char *table, const char *where)
{
	char path[128], q[512];
	sqlite3 *db;
	sqlite3_stmt *st;
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	snprintf(q, sizeof q, "SELECT count(*) FROM %s WHERE %s", table, where);
	assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static int64_t ledger_count(const char *where)
{
	return rows_in("events", where);
}

/* ---- the thresholds ---- */

/* warn 3: the third identical call gets the hint, word for word; block 5:
 * the fifth is denied loop_detected and so is the sixth. */
static void test_warn_then_block(void **state)
{
	tg_gate *g = open_with("");
	const char *args = "{\"path\":\"hello.txt\"}";
	for (int i = 1; i <= 2; i++) {
		json_t *env = call(g, "s1", "read_file", args);
		assert_string_equal(status_of(env), "persisted");
		assert_null(hint_of(env));
		json_decref(env);
	}
	json_t *env = call(g, "s1", "read_file", args);
	assert_string_equal(status_of(env), "persisted");
	assert_string_equal(hint_of(env), "you have called read_file with these arguments 3 times "
	                                  "with the same result; try something else");
	json_decref(env);
	env = call(g, "s1", "read_file", args);
	assert_string_equal(hint_of(env), "you have called read_file with these arguments 4 times "
	                                  "with the same result; try something else");
	json_decref(env);
	assert_int_equal(ledger_count("type = 'tool.loop.warning'"), 2);

	for (int i = 5; i <= 6; i++) {
		env = call(g, "s1", "read_file", args);
		assert_string_equal(status_of(env), "denied");
		assert_string_equal(kind_of(env), "loop_detected");
		json_t *err = json_object_get(env, "error");
		assert_string_equal(json_string_value(json_object_get(err, "rule")),
		                    "loop_detection: block 5");
		assert_non_null(strstr(json_string_value(json_object_get(err, "message")),
		                       "read_file with these arguments"));
		assert_string_equal(json_string_value(json_object_get(err, "applied")), "no");
		assert_true(json_is_null(json_object_get(env, "output")));
		/* the trace names the loop step as the one that stopped it */
		json_t *st = json_object_get(env, "stages");
		int found = 0;
		for (size_t k = 0; k < json_array_size(st); k++) {
			json_t *s = json_array_get(st, k);
			if (!strcmp(json_string_value(json_object_get(s, "stage")), "loop")) {
				found = 1;
				assert_true(json_is_false(json_object_get(s, "ok")));
				assert_int_equal(json_integer_value(json_object_get(s, "count")), i);
			}
			assert_string_not_equal(json_string_value(json_object_get(s, "stage")), "execute");
		}
		assert_true(found);
		json_decref(env);
	}
	assert_int_equal(ledger_count("type = 'tool.loop.blocked'"), 2);

	/* another session, and other arguments, are not held to this loop */
	never_trips(g, "s2", "read_file", args, 2, "persisted");
	never_trips(g, "s1", "read_file", "{\"path\":\"a.txt\"}", 1, "persisted");
	tg_gate_close(g);
}

/* Calls without a session (people, scripts, CI jobs) are not tracked:
 * ten identical reads, and a write and a read alternating, are never
 * warned or blocked, leave no loop event and no window entry; and they do
 * not feed a session's window either. */
static void test_no_session_untracked(void **state)
{
	tg_gate *g = open_with("");
	const char *read_a = "{\"path\":\"a.txt\"}";
	never_trips(g, NULL, "read_file", "{\"path\":\"hello.txt\"}", 10, "persisted");
	for (int i = 0; i < 6; i++) {
		never_trips(g, NULL, "write_file", "{\"path\":\"a.txt\",\"content\":\"same\\n\"}", 1,
		            "persisted");
		never_trips(g, NULL, "read_file", read_a, 1, "persisted");
	}
	assert_int_equal(rows_in("ops", "session IS NULL"), 22);
	assert_int_equal(rows_in("ops", "loop IS NOT NULL"), 0);
	assert_int_equal(ledger_count("type LIKE 'tool.loop.%'"), 0);

	/* a session beside them starts from nothing, and is still held to its loops */
	never_trips(g, "s1", "read_file", read_a, 2, "persisted");
	json_t *env = call(g, "s1", "read_file", read_a);
	assert_non_null(hint_of(env));
	json_decref(env);
	assert_int_equal(rows_in("ops", "session = 's1' AND loop IS NOT NULL"), 3);
	tg_gate_close(g);
}

/* ---- the false positives users hit ---- */

/* Twenty searches, each for something else: never a hint. */
static void test_different_searches(void **state)
{
	tg_gate *g = open_with("");
	for (int i = 0; i < 20; i++) {
		char args[96];
		snprintf(args, sizeof args, "{\"pattern\":\"needle%d\"}", i);
		never_trips(g, "s1", "search_files", args, 1, "persisted");
	}
	tg_gate_close(g);
}

/* Reading a file again after writing it is not a loop: with the content
 * changed each time, and with a write elsewhere between identical reads. */
static void test_reread_after_write(void **state)
{
	tg_gate *g = open_with("");
	const char *read_a = "{\"path\":\"a.txt\"}";
	for (int i = 0; i < 4; i++) {
		char args[96];
		never_trips(g, "s1", "read_file", read_a, 1, "persisted");
		snprintf(args, sizeof args, "{\"path\":\"a.txt\",\"content\":\"version %d\\n\"}", i);
		never_trips(g, "s1", "write_file", args, 1, "persisted");
	}
	never_trips(g, "s1", "read_file", read_a, 1, "persisted");   /* the fifth read */

	/* identical reads, twice between writes of another file: each write ends the streak */
	for (int i = 0; i < 4; i++) {
		char args[96];
		never_trips(g, "s2", "read_file", read_a, 2, "persisted");
		snprintf(args, sizeof args, "{\"path\":\"b.txt\",\"content\":\"%d\"}", i);
		never_trips(g, "s2", "write_file", args, 1, "persisted");
	}
	tg_gate_close(g);
}

/* A status tool polled ten times, its progress moving: never a hint. */
static void test_status_poll(void **state)
{
	tg_gate *g = open_with("");
	never_trips(g, "s1", "progress", "{}", 10, "persisted");
	tg_gate_close(g);
}

/* The same answer stamped with a new time, id, duration and request id
 * each time is the same answer: the third gets the hint. */
static void test_timestamp_uuid_trips(void **state)
{
	tg_gate *g = open_with("");
	json_t *a = call(g, "s1", "stamp", "{}");
	json_t *b = call(g, "s1", "stamp", "{}");
	/* the outputs really differ */
	assert_false(json_equal(json_object_get(a, "output"), json_object_get(b, "output")));
	assert_null(hint_of(a));
	assert_null(hint_of(b));
	json_t *c = call(g, "s1", "stamp", "{}");
	assert_string_equal(hint_of(c), "you have called stamp with these arguments 3 times with "
	                                "the same result; try something else");
	json_decref(a);
	json_decref(b);
	json_decref(c);
	c = call(g, "s1", "stamp", "{}");
	json_decref(c);
	c = call(g, "s1", "stamp", "{}");
	assert_string_equal(kind_of(c), "loop_detected");
	json_decref(c);
	tg_gate_close(g);
}

/* Writing the same content and reading it back, over and over: a
 * ping-pong; hinted at the third round, blocked at the fifth, and the
 * other half of the pair is blocked next. */
static void test_ping_pong(void **state)
{
	tg_gate *g = open_with("");
	const char *w = "{\"path\":\"a.txt\",\"content\":\"same\\n\"}", *r = "{\"path\":\"a.txt\"}";
	for (int round = 1; round <= 2; round++) {
		never_trips(g, "s1", "write_file", w, 1, "persisted");
		never_trips(g, "s1", "read_file", r, 1, "persisted");
	}
	json_t *env = call(g, "s1", "write_file", w);
	assert_string_equal(status_of(env), "persisted");
	assert_string_equal(hint_of(env), "you are alternating between write_file and read_file "
	                                  "with the same results (3 times); try something else");
	json_decref(env);
	env = call(g, "s1", "read_file", r);
	assert_string_equal(hint_of(env), "you are alternating between read_file and write_file "
	                                  "with the same results (3 times); try something else");
	json_decref(env);
	env = call(g, "s1", "write_file", w);
	json_decref(env);
	env = call(g, "s1", "read_file", r);
	json_decref(env);
	env = call(g, "s1", "write_file", w);      /* the fifth write */
	assert_string_equal(status_of(env), "denied");
	assert_string_equal(kind_of(env), "loop_detected");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(env, "error"),
	                                                         "message")),
	                       "alternated between write_file and read_file 5 times"));
	json_decref(env);
	env = call(g, "s1", "read_file", r);       /* the fifth read */
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);
	tg_gate_close(g);
}

/* Two reads alternating are no ping-pong: each is only held to its own
 * repeats (the third identical read is the third, whatever came between). */
static void test_two_reads_alternating(void **state)
{
	tg_gate *g = open_with("");
	for (int i = 0; i < 2; i++) {
		never_trips(g, "s1", "read_file", "{\"path\":\"a.txt\"}", 1, "persisted");
		never_trips(g, "s1", "list_dir", "{}", 1, "persisted");
	}
	json_t *env = call(g, "s1", "read_file", "{\"path\":\"a.txt\"}");
	assert_string_equal(hint_of(env), "you have called read_file with these arguments 3 times "
	                                  "with the same result; try something else");
	json_decref(env);
	/* two reads of different things, alternating: nothing */
	for (int i = 0; i < 8; i++) {
		char args[64];
		snprintf(args, sizeof args, "{\"path\":\"other%d.txt\"}", i);
		never_trips(g, "s2", "read_file", args, 1, "persisted");
		snprintf(args, sizeof args, "{\"pattern\":\"x%d\"}", i);
		never_trips(g, "s2", "search_files", args, 1, "persisted");
	}
	tg_gate_close(g);
}

/* ---- modes, window, what does not count ---- */

static void test_observe(void **state)
{
	tg_gate *g = open_with("loop_detection: {mode: observe}\n");
	never_trips(g, "s1", "read_file", "{\"path\":\"hello.txt\"}", 7, "persisted");
	assert_int_equal(ledger_count("type = 'tool.loop.warning'"), 5);       /* calls 3..7 */
	assert_int_equal(ledger_count("type = 'tool.loop.blocked' AND "
	                              "json_extract(data, '$.enforced') = 0"), 3); /* 5..7 */
	tg_gate_close(g);
}

static void test_disabled(void **state)
{
	tg_gate *g = open_with("loop_detection: {enabled: false}\n");
	never_trips(g, "s1", "read_file", "{\"path\":\"hello.txt\"}", 7, "persisted");
	assert_int_equal(ledger_count("type LIKE 'tool.loop.%'"), 0);
	tg_gate_close(g);
}

/* window 6: four identical reads then two others still block the next;
 * after six others the streak has left the window. */
static void test_window(void **state)
{
	tg_gate *g = open_with("loop_detection: {window: 6}\n");
	const char *a = "{\"path\":\"a.txt\"}";
	never_trips(g, "s1", "read_file", a, 2, "persisted");
	for (int i = 0; i < 2; i++) {
		json_t *env = call(g, "s1", "read_file", a);
		assert_non_null(hint_of(env));
		json_decref(env);
	}
	for (int i = 0; i < 2; i++) {
		char args[64];
		snprintf(args, sizeof args, "{\"path\":\"other%d.txt\"}", i);
		never_trips(g, "s1", "read_file", args, 1, "persisted");
	}
	json_t *env = call(g, "s1", "read_file", a);
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);

	never_trips(g, "s2", "read_file", a, 2, "persisted");
	for (int i = 0; i < 2; i++)
		json_decref(call(g, "s2", "read_file", a));
	for (int i = 0; i < 6; i++) {
		char args[64];
		snprintf(args, sizeof args, "{\"path\":\"other%d.txt\"}", i);
		never_trips(g, "s2", "read_file", args, 1, "persisted");
	}
	never_trips(g, "s2", "read_file", a, 1, "persisted");
	tg_gate_close(g);
}

/* Calls told to retry later, and dry runs, are not counted. */
static void test_not_counted(void **state)
{
	tg_gate *g = open_with("");
	for (int i = 0; i < 7; i++) {
		json_t *env = call(g, "s1", "busy", "{}");
		assert_string_equal(status_of(env), "failed");
		assert_string_equal(kind_of(env), "transient");
		assert_null(hint_of(env));
		json_decref(env);
	}
	for (int i = 0; i < 7; i++) {
		tg_request req = {.tool = "read_file", .args = "{\"path\":\"a.txt\"}", .session = "s2",
		                  .dry_run = 1};
		tg_result *r;
		assert_int_equal(tg_call(g, &req, &r), TG_DRY_RUN);
		tg_result_free(r);
	}
	/* the real reads start from nothing */
	never_trips(g, "s2", "read_file", "{\"path\":\"a.txt\"}", 2, "persisted");
	tg_gate_close(g);
}

/* A call that fails the same way, again and again, is a loop too. */
static void test_same_error_repeats(void **state)
{
	tg_gate *g = open_with("");
	const char *args = "{\"path\":\"missing.txt\"}";
	never_trips(g, "s1", "read_file", args, 2, "failed");
	json_t *env = call(g, "s1", "read_file", args);
	assert_string_equal(status_of(env), "failed");
	assert_non_null(hint_of(env));
	json_decref(env);
	json_decref(call(g, "s1", "read_file", args));
	env = call(g, "s1", "read_file", args);
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);
	tg_gate_close(g);
}

/* A second gate on the same workspace (another process, a restart)
 * continues the session's streak from the ledger. */
static void test_warm_from_ledger(void **state)
{
	const char *args = "{\"path\":\"hello.txt\"}";
	tg_gate *g = open_with("");
	never_trips(g, "s1", "read_file", args, 2, "persisted");
	tg_gate_close(g);

	g = open_with("");
	json_t *env = call(g, "s1", "read_file", args);
	assert_string_equal(hint_of(env), "you have called read_file with these arguments 3 times "
	                                  "with the same result; try something else");
	json_decref(env);
	json_decref(call(g, "s1", "read_file", args));
	tg_gate_close(g);

	g = open_with("");
	env = call(g, "s1", "read_file", args);
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);
	tg_gate_close(g);

	g = open_with("");                         /* the block itself was kept */
	env = call(g, "s1", "read_file", args);
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);
	tg_gate_close(g);
}

/* Two gates open at once on one ledger (two long-lived processes: a gate
 * shares nothing with another but the ledger) serving one session, the
 * calls alternating between them: each sees the other's calls, so the
 * streak counts as in one process — the hint at 3 and 4, the block at 5,
 * and the block made by one holds in the other.  Then a ping-pong split
 * the same way: one gate writes, the other reads. */
static void test_two_gates_one_session(void **state)
{
	const char *args = "{\"path\":\"hello.txt\"}";
	tg_gate *g[2] = {open_with(""), open_with("")};
	for (int i = 1; i <= 6; i++) {
		json_t *env = call(g[(i - 1) % 2], "s1", "read_file", args);
		char want[160];
		snprintf(want, sizeof want, "you have called read_file with these arguments %d times "
		         "with the same result; try something else", i);
		if (i <= 2) {
			assert_string_equal(status_of(env), "persisted");
			assert_null(hint_of(env));
		} else if (i <= 4) {
			assert_string_equal(status_of(env), "persisted");
			if (!hint_of(env) || strcmp(hint_of(env), want))
				fail_msg("call %d: hint %s", i, hint_of(env) ? hint_of(env) : "none");
		} else {
			assert_string_equal(kind_of(env), "loop_detected");
		}
		json_decref(env);
	}

	const char *w = "{\"path\":\"a.txt\",\"content\":\"same\\n\"}", *r = "{\"path\":\"a.txt\"}";
	for (int round = 1; round <= 2; round++) {
		never_trips(g[0], "s2", "write_file", w, 1, "persisted");
		never_trips(g[1], "s2", "read_file", r, 1, "persisted");
	}
	json_t *env = call(g[0], "s2", "write_file", w);
	assert_string_equal(hint_of(env), "you are alternating between write_file and read_file "
	                                  "with the same results (3 times); try something else");
	json_decref(env);
	env = call(g[1], "s2", "read_file", r);
	assert_string_equal(hint_of(env), "you are alternating between read_file and write_file "
	                                  "with the same results (3 times); try something else");
	json_decref(env);
	tg_gate_close(g[0]);
	tg_gate_close(g[1]);
}

/* Several threads on one gate, each with its own session and all in a
 * shared one: each session's count is its own (run under ThreadSanitizer
 * too). */
#define THREADS 4
static void *loop_worker(void *arg)
{
	tg_gate *g = ((void **)arg)[0];
	const char *session = ((void **)arg)[1];
	static const char *const want[] = {"persisted", "persisted", "persisted", "persisted",
	                                   "denied", "denied", "denied"};
	for (int i = 0; i < 7; i++) {
		json_t *env = call(g, session, "read_file", "{\"path\":\"hello.txt\"}");
		int ok = !strcmp(status_of(env), want[i]) && (hint_of(env) != NULL) == (i == 2 || i == 3);
		json_decref(env);
		char args[64];
		snprintf(args, sizeof args, "{\"pattern\":\"%s-%d\"}", session, i);
		env = call(g, "shared", "search_files", args);
		ok = ok && !hint_of(env) && !strcmp(status_of(env), "persisted");
		json_decref(env);
		if (!ok)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	tg_gate *g = open_with("");
	pthread_t t[THREADS];
	char names[THREADS][16];
	void *args[THREADS][2];
	for (int i = 0; i < THREADS; i++) {
		snprintf(names[i], sizeof names[i], "t%d", i);
		args[i][0] = g;
		args[i][1] = names[i];
		assert_int_equal(pthread_create(&t[i], NULL, loop_worker, args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	tg_gate_close(g);
}

/* Calls in sessions named prefix0, prefix1, ... (n of them, a multiple of 64). */
static void other_sessions(tg_gate *g, const char *prefix, int n)
{
	const char *args = "{\"path\":\"hello.txt\"}";
	tg_request *reqs = calloc(64, sizeof *reqs);
	tg_result *out[64];
	char (*names)[16] = calloc(64, sizeof *names);
	for (int done = 0; done < n; done += 64) {
		for (int i = 0; i < 64; i++) {
			snprintf(names[i], sizeof names[i], "%s-%d", prefix, done + i);
			reqs[i] = (tg_request){.tool = "read_file", .args = args, .session = names[i]};
		}
		assert_int_equal(tg_call_batch(g, reqs, 64, out), 64);
		for (int i = 0; i < 64; i++) {
			assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
			tg_result_free(out[i]);
		}
	}
	free(reqs);
	free(names);
}

/* Many sessions between two calls of one (more than the gate once kept
 * windows for in memory: 4096; 131 of window 1000): its window is still
 * whole when it returns. */
static void test_many_sessions(void **state)
{
	static const struct { const char *config, *session; int others; } runs[] = {
		{"", "first", 4160},
		{"loop_detection: {window: 1000}\n", "second", 192},
	};
	const char *args = "{\"path\":\"hello.txt\"}";
	for (size_t i = 0; i < 2; i++) {
		tg_gate *g = open_with(runs[i].config);
		never_trips(g, runs[i].session, "read_file", args, 2, "persisted");
		other_sessions(g, runs[i].session, runs[i].others);
		json_t *env = call(g, runs[i].session, "read_file", args);
		assert_string_equal(hint_of(env), "you have called read_file with these arguments 3 "
		                                  "times with the same result; try something else");
		json_decref(env);
		tg_gate_close(g);
	}
}

/* ---- configuration ---- */

/* The error names toolgate.yaml, the line of the section (it follows
 * tools_yaml), and what is wrong. */
static void expect_error(const char *extra, const char *what)
{
	char where[64];
	int line = 1;
	for (const char *p = tools_yaml; *p; p++)
		line += *p == '\n';
	snprintf(where, sizeof where, "toolgate.yaml:%d:", line);
	char *err = open_error(extra);
	if (!strstr(err, where) || !strstr(err, what))
		fail_msg("expected \"%s\" ... \"%s\", got: %s", where, what, err);
	free(err);
}

static void test_config_errors(void **state)
{
	expect_error("loop_detection: {warn: 4, block: 3}\n", "loop_detection.block: must be at least warn (4), got 3");
	expect_error("loop_detection: {warn: 6}\n", "loop_detection.warn: must be at most block (5, its default), got 6");
	expect_error("loop_detection: {window: 4}\n", "loop_detection.window: must be at least block (5), got 4");
	expect_error("loop_detection: {block: 40}\n", "loop_detection.block: must be at most window (30, its default), got 40");
	expect_error("loop_detection: {warn: 1}\n", "loop_detection.warn: expected an integer from 2 to 1000, got 1");
	expect_error("loop_detection: {window: \"30\"}\n", "loop_detection.window: expected an integer from 2 to 1000");
	expect_error("loop_detection: {window: 100000}\n", "expected an integer from 2 to 1000");
	expect_error("loop_detection: {mode: block}\n", "loop_detection.mode: expected one of enforce, observe");
	expect_error("loop_detection: {enabled: yes please}\n", "loop_detection.enabled: expected true or false");
	expect_error("loop_detection: {windw: 10}\n", "unknown key \"windw\"");
	/* a disabled section is still checked */
	expect_error("loop_detection: {enabled: false, warn: 9}\n", "loop_detection.warn");
	/* warn == block is a block without a warning first */
	tg_gate *g = open_with("loop_detection: {warn: 2, block: 2, window: 2}\n");
	never_trips(g, "s1", "list_dir", "{}", 1, "persisted");
	json_t *env = call(g, "s1", "list_dir", "{}");
	assert_string_equal(kind_of(env), "loop_detected");
	json_decref(env);
	tg_gate_close(g);
}

/* ---- the parts on their own ---- */

static void outcome_of(const char *json, char out[65])
{
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
	assert_non_null(v);
	tgi_loop_outcome(TG_PERSISTED, TG_ERR_NONE, NULL, v, out);
	json_decref(v);
}

static void same(const char *a, const char *b)
{
	char x[65], y[65];
	outcome_of(a, x);
	outcome_of(b, y);
	if (strcmp(x, y))
		fail_msg("expected the same outcome:\n  %s\n  %s", a, b);
}

static void differ(const char *a, const char *b)
{
	char x[65], y[65];
	outcome_of(a, x);
	outcome_of(b, y);
	if (!strcmp(x, y))
		fail_msg("expected different outcomes:\n  %s\n  %s", a, b);
}

static void test_outcome(void **state)
{
	/* volatile keys, in snake and camel case */
	same("{\"v\":1,\"ts\":1}", "{\"v\":1,\"ts\":2}");
	same("{\"v\":1,\"created_at\":\"x\",\"updatedAt\":\"y\",\"duration_ms\":3,\"elapsed\":4,"
	     "\"op_id\":\"a\",\"requestId\":\"b\",\"timestamp\":5,\"start_time\":6}",
	     "{\"v\":1,\"created_at\":\"z\",\"updatedAt\":\"w\",\"duration_ms\":9,\"elapsed\":8,"
	     "\"op_id\":\"c\",\"requestId\":\"d\",\"timestamp\":7,\"start_time\":8}");
	same("{\"a\":[{\"durationMs\":1,\"k\":2}]}", "{\"a\":[{\"durationMs\":5,\"k\":2}]}");
	/* shell's shape: duration_ms only */
	same("{\"exit_code\":0,\"stdout\":\"ok\",\"stderr\":\"\",\"duration_ms\":1.5}",
	     "{\"exit_code\":0,\"stdout\":\"ok\",\"stderr\":\"\",\"duration_ms\":7.25}");
	differ("{\"exit_code\":0,\"stdout\":\"ok\"}", "{\"exit_code\":1,\"stdout\":\"ok\"}");
	differ("{\"exit_code\":0,\"stdout\":\"ok\"}", "{\"exit_code\":0,\"stdout\":\"ok!\"}");
	/* keys that only look like them are kept */
	differ("{\"format\":1}", "{\"format\":2}");
	differ("{\"counts\":1}", "{\"counts\":2}");
	differ("{\"items\":1}", "{\"items\":2}");
	differ("{\"runtime\":\"a\"}", "{\"runtime\":\"b\"}");
	differ("{\"durations_list\":[1]}", "{\"durations_list\":[2]}");
	differ("{\"user_id\":1}", "{\"user_id\":2}");
	/* timestamps and UUIDs inside strings */
	same("\"done at 2026-01-02T03:04:05Z\"", "\"done at 2027-11-12T13:14:15.123456+02:00\"");
	same("\"done at 2026-01-02 03:04\"", "\"done at 2026-01-03 03:05\"");
	same("\"op 0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77 ok\"",
	     "\"op 0193A5F0-7C1E-7D2A-9B1E-4F0C2A9D1E78 ok\"");
	same("\"see .toolgate/spill/0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77.txt\"",
	     "\"see .toolgate/spill/11111111-2222-3333-4444-555555555555.txt\"");
	differ("\"progress 10%\"", "\"progress 20%\"");
	differ("\"on 2026-01-02\"", "\"on 2026-01-03\"");        /* a date alone is data */
	differ("\"done at 2026-01-02T03:04:05Z\"", "\"done on 2026-01-02T03:04:05Z\"");
	differ("\"0193a5f0-7c1e-7d2a-9b1e\"", "\"0193a5f0-7c1e-7d2a-9b1f\"");
	differ("[1,2]", "[2,1]");
	differ("{\"a\":1}", "{\"a\":1.0}");
	differ("null", "\"\"");
	same("{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}");

	/* errors: status, kind and message, timestamps left out */
	char x[65], y[65];
	tgi_loop_outcome(TG_FAILED, TG_ERR_TOOL_ERROR, "failed at 2026-01-02T03:04:05Z", NULL, x);
	tgi_loop_outcome(TG_FAILED, TG_ERR_TOOL_ERROR, "failed at 2026-02-02T03:04:05Z", NULL, y);
	assert_string_equal(x, y);
	tgi_loop_outcome(TG_FAILED, TG_ERR_TIMEOUT, "failed at 2026-02-02T03:04:05Z", NULL, y);
	assert_string_not_equal(x, y);
	tgi_loop_outcome(TG_DENIED, TG_ERR_TOOL_ERROR, "failed at 2026-02-02T03:04:05Z", NULL, y);
	assert_string_not_equal(x, y);
	/* a success's output is what counts, not its status name */
	json_t *o = json_string("x");
	tgi_loop_outcome(TG_PERSISTED, TG_ERR_NONE, NULL, o, x);
	tgi_loop_outcome(TG_REPLAYED, TG_ERR_NONE, NULL, o, y);
	assert_string_equal(x, y);
	json_decref(o);
	/* deep nesting is hashed, not walked without end */
	char deep[4096] = "";
	for (int i = 0; i < 1000; i++)
		strcat(deep, "[");
	for (int i = 0; i < 1000; i++)
		strcat(deep, "]");
	json_t *d = json_loads(deep, 0, NULL);
	assert_non_null(d);
	tgi_loop_outcome(TG_PERSISTED, TG_ERR_NONE, NULL, d, x);
	json_decref(d);
	/* ... and what lies below the cut still counts */
	char deep1[4096] = "", deep2[4096];
	for (int i = 0; i < 200; i++)
		strcat(deep1, "[");
	strcat(deep1, "1");
	for (int i = 0; i < 200; i++)
		strcat(deep1, "]");
	strcpy(deep2, deep1);
	deep2[200] = '2';
	same(deep1, deep1);
	differ(deep1, deep2);
}

static void test_entry_parse(void **state)
{
	char sig[65], out[65], fl[4], tool[129], line[512];
	const char *h1 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	const char *h2 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
	snprintf(line, sizeof line, "v1 %s %s rw read_file", h1, h2);
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), 0);
	assert_string_equal(sig, h1);
	assert_string_equal(out, h2);
	assert_string_equal(fl, "rw");
	assert_string_equal(tool, "read_file");
	snprintf(line, sizeof line, "v1 %s %s - srv__a tool", h1, h2);
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), 0);
	assert_string_equal(fl, "-");
	assert_string_equal(tool, "srv__a tool");

	static const char *const bad_flags[] = {"", "x", "wr", "rr", "-r", "rwbx"};
	for (size_t i = 0; i < sizeof bad_flags / sizeof *bad_flags; i++) {
		snprintf(line, sizeof line, "v1 %s %s %s t", h1, h2, bad_flags[i]);
		assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1);
	}
	snprintf(line, sizeof line, "v2 %s %s r t", h1, h2);
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1);
	snprintf(line, sizeof line, "v1 %s %s r ", h1, h2);              /* no tool */
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1);
	snprintf(line, sizeof line, "v1 %s %s r a\tb", h1, h2);          /* a control character */
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1);
	snprintf(line, sizeof line, "v1 %.63s %s r t", h1, h2);          /* short */
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1);
	snprintf(line, sizeof line, "v1 %s %s r t", h2, "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_int_equal(tgi_loop_entry_parse(line, sig, out, fl, tool), -1); /* upper case */
	assert_int_equal(tgi_loop_entry_parse("", sig, out, fl, tool), -1);
	assert_int_equal(tgi_loop_entry_parse(NULL, sig, out, fl, tool), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_warn_then_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_session_untracked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_different_searches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reread_after_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timestamp_uuid_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ping_pong, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_reads_alternating, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_error_repeats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_from_ledger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_gates_one_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
		cmocka_unit_test(test_outcome),
		cmocka_unit_test(test_entry_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
