/*
 * test_batch.c — parallel batches (src/gate/batch.c, src/gate/pool.c):
 * the segment planner on its own (readers together, an overlapping writer
 * apart, barriers splitting, order kept, idempotency scopes), the pool,
 * and real batches through a gate: results in call order with the effects
 * a serial run would have, calls of one segment overlapping in time and a
 * barrier overlapping nothing, the speedup over max_parallel 1, stopped
 * calls taking no slot, failures not cancelling siblings, keys applied
 * once, and one ledger row per call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "toolgate.h"
#include "gate/batch.h"
#include "gate/pool.h"

/* ---- the planner ---- */

#define MAXP 4

/* An item from a short description: kind is 'r' (read-only, paths), 'w'
 * (writes its paths), 'B' (a barrier), 's' (concurrency-safe, no paths,
 * not read-only); paths separated by spaces, "written>resolved" when the
 * two differ. */
typedef struct {
	tgi_batch_item it;
	char          *buf;
	const char    *w[MAXP], *r[MAXP];
} titem;

static void titem_make(titem *t, char kind, const char *paths, const char *scope)
{
	memset(t, 0, sizeof *t);
	t->it.alone = kind == 'B';
	t->it.writes = kind != 'r';
	t->it.scope = scope;
	t->buf = strdup(paths ? paths : "");
	size_t n = 0;
	for (char *tok = strtok(t->buf, " "); tok && n < MAXP; tok = strtok(NULL, " ")) {
		char *gt = strchr(tok, '>');
		if (gt)
			*gt = '\0';
		t->w[n] = tok;
		t->r[n] = gt ? gt + 1 : tok;
		n++;
	}
	t->it.paths = t->w;
	t->it.resolved = t->r;
	t->it.npaths = n;
}

/* Plan "k:paths|k:paths|..." and return the segment numbers as a string
 * of digits ("0012"). */
static const char *plan(const char *spec)
{
	static char out[64];
	titem t[32];
	tgi_batch_item items[32];
	size_t seg[32], n = 0;
	char *copy = strdup(spec), *save = NULL;
	for (char *p = strtok_r(copy, "|", &save); p; p = strtok_r(NULL, "|", &save)) {
		assert_true(n < 32);
		const char *scope = NULL;
		char *at = strchr(p, '@');          /* "w:a.txt@key1": a scope */
		if (at) {
			*at = '\0';
			scope = at + 1;
		}
		titem_make(&t[n], p[0], p[1] == ':' ? p + 2 : "", scope);
		items[n] = t[n].it;
		n++;
	}
	size_t k = tgi_batch_plan(items, n, seg);
	for (size_t i = 0; i < n; i++) {
		out[i] = (char)('0' + seg[i]);
		free(t[i].buf);
	}
	out[n] = '\0';
	assert_int_equal(k, n ? seg[n - 1] + 1 : 0);
	free(copy);
	return out;
}

static void test_plan_readers_together(void **state)
{
	assert_string_equal(plan("r:a.txt|r:b.txt|r:a.txt|r:.|r:src/x.c"), "00000");
	/* concurrency-safe calls without paths join anything but a barrier */
	assert_string_equal(plan("s|r:a|w:b|s|s"), "00000");
	assert_string_equal(tgi_batch_plan(NULL, 0, NULL) == 0 ? "" : "x", "");
}

static void test_plan_writer_overlap(void **state)
{
	assert_string_equal(plan("r:a.txt|w:a.txt"), "01");          /* equal */
	assert_string_equal(plan("w:a.txt|r:a.txt"), "01");
	assert_string_equal(plan("w:a.txt|w:a.txt"), "01");
	assert_string_equal(plan("w:a.txt|w:b.txt|w:c/d.txt"), "000"); /* disjoint writers */
	assert_string_equal(plan("r:src|w:src/a.c"), "01");          /* ancestor */
	assert_string_equal(plan("w:src/a.c|r:src"), "01");          /* descendant */
	assert_string_equal(plan("w:src/a/b/c.c|r:src/a"), "01");    /* deeper */
	assert_string_equal(plan("r:.|w:x"), "01");                  /* the workspace */
	assert_string_equal(plan("w:x|r:."), "01");
	assert_string_equal(plan("w:x|w:."), "01");
	assert_string_equal(plan("r:src|w:srcx/a.c|w:src.txt"), "000"); /* a prefix is not a parent */
	assert_string_equal(plan("w:src/a.c|w:src/b.c|r:src/c.c"), "000");
	/* readers of one path share a segment; a writer between them splits */
	assert_string_equal(plan("r:a|r:a|w:a|r:a|r:a"), "00122");
	/* the resolved form counts as well as the written one */
	assert_string_equal(plan("r:link>real/f|w:real/f"), "01");
	assert_string_equal(plan("w:real/f|r:link>real/f"), "01");
	assert_string_equal(plan("r:d/link>etc/x|w:etc"), "01");
	assert_string_equal(plan("w:link|r:link>target"), "01");
	/* one path of many is enough */
	assert_string_equal(plan("w:a b c d|r:x y d"), "01");
	assert_string_equal(plan("w:a b c d|r:x y z"), "00");
}

static void test_plan_barriers(void **state)
{
	assert_string_equal(plan("r:a|r:b|B|r:c|r:d"), "00122");
	assert_string_equal(plan("B|B|B"), "012");
	assert_string_equal(plan("B|r:a"), "01");
	assert_string_equal(plan("r:a|B"), "01");
	assert_string_equal(plan("s|B|s"), "012");
	assert_string_equal(plan("w:a|B|w:b|w:c|B"), "01223");
}

/* Order is kept: a call never joins an earlier segment, even one it would
 * fit in. */
static void test_plan_order_kept(void **state)
{
	assert_string_equal(plan("w:a|r:b|r:a|r:b"), "0011");
	assert_string_equal(plan("r:a|B|r:a"), "012");
	assert_string_equal(plan("w:a|w:a|r:zzz|w:a"), "0112");
}

/* Two calls with one idempotency scope never share a segment: they would
 * race for one claim, where a serial run replays the second. */
static void test_plan_scopes(void **state)
{
	assert_string_equal(plan("s@k1|s@k1"), "01");
	assert_string_equal(plan("s@k1|s@k2|s@k1"), "001");
	assert_string_equal(plan("w:a@k|w:b@k"), "01");
	assert_string_equal(plan("w:a@k|w:b@j"), "00");
	assert_string_equal(plan("s@k|r:x|s@k"), "001");
}

/* Sets grow past their first size and a cleared segment forgets all. */
static void test_plan_many_paths(void **state)
{
	enum { N = 3000 };
	char **names = calloc(N, sizeof *names);
	for (int i = 0; i < N; i++) {
		names[i] = malloc(32);
		snprintf(names[i], 32, "d%d/sub/f%d.txt", i % 50, i);
	}
	tgi_batch_item big = {.writes = 1, .paths = (const char *const *)names, .npaths = N};
	const char *hit[] = {"d49/sub/f2999.txt"}, *dir[] = {"d7"}, *miss[] = {"d7/other"};
	tgi_batch_item rd_hit = {.paths = hit, .npaths = 1};
	tgi_batch_item rd_dir = {.paths = dir, .npaths = 1};
	tgi_batch_item rd_miss = {.paths = miss, .npaths = 1};

	tgi_segment *s = tgi_segment_new();
	assert_int_equal(tgi_segment_admit(s, &big), 1);
	assert_int_equal(tgi_segment_admit(s, &rd_hit), 0);
	assert_int_equal(tgi_segment_admit(s, &rd_dir), 0);
	assert_int_equal(tgi_segment_admit(s, &rd_miss), 1);
	assert_int_equal(tgi_segment_closed(s), 0);
	tgi_segment_clear(s);
	assert_int_equal(tgi_segment_admit(s, &rd_hit), 1);
	assert_int_equal(tgi_segment_admit(s, &rd_dir), 1);
	assert_int_equal(tgi_segment_admit(s, &big), 0);
	tgi_segment_clear(s);
	tgi_batch_item barrier = {.alone = 1};
	assert_int_equal(tgi_segment_admit(s, &barrier), 1);
	assert_int_equal(tgi_segment_closed(s), 1);
	assert_int_equal(tgi_segment_admit(s, &rd_miss), 0);
	tgi_segment_free(s);
	tgi_segment_free(NULL);
	for (int i = 0; i < N; i++)
		free(names[i]);
	free(names);
}

/* ---- the pool ---- */

typedef struct {
	int   *log;
	int   *nlog;
	int    id;
	int    runs;
} ptask;

static void ptask_run(void *arg)
{
	ptask *t = arg;
	t->runs++;
	if (t->log)
		t->log[(*t->nlog)++] = t->id;
}

/* No workers: the waiter runs its tasks itself, in submit order. */
static void test_pool_no_workers(void **state)
{
	tgi_pool *p = tgi_pool_new(0);
	assert_int_equal(tgi_pool_size(p), 0);
	int log[16], nlog = 0;
	ptask t[16];
	tgi_pool_task pt[16];
	tgi_pool_group g = {0};
	for (int i = 0; i < 16; i++) {
		t[i] = (ptask){.log = log, .nlog = &nlog, .id = i};
		pt[i].fn = ptask_run;
		pt[i].arg = &t[i];
		tgi_pool_submit(p, &g, &pt[i]);
	}
	tgi_pool_wait(p, &g);
	assert_int_equal(nlog, 16);
	for (int i = 0; i < 16; i++)
		assert_int_equal(log[i], i);
	tgi_pool_wait(p, &g);              /* nothing pending: returns at once */
	tgi_pool_free(p);
	tgi_pool_free(NULL);
}

/* Workers: every task runs exactly once; a group can be used again. */
static void test_pool_workers(void **state)
{
	tgi_pool *p = tgi_pool_new(3);
	enum { N = 200 };
	ptask t[N];
	tgi_pool_task pt[N];
	tgi_pool_group g = {0};
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			t[i] = (ptask){.id = i};
			pt[i].fn = ptask_run;
			pt[i].arg = &t[i];
			tgi_pool_submit(p, &g, &pt[i]);
		}
		tgi_pool_wait(p, &g);
		assert_int_equal(g.pending, 0);
		for (int i = 0; i < N; i++)
			assert_int_equal(t[i].runs, 1);
	}
	tgi_pool_free(p);
	/* a pool that never ran a task starts no thread and frees cleanly */
	tgi_pool_free(tgi_pool_new(8));
}

/* ---- real batches ---- */

static char ws[64];

static const char mark_sh[] =
	"#!/bin/sh\n"
	"# stdin: the call JSON; args {\"n\": N}.  Logs its start and end.\n"
	"in=$(cat)\n"
	"n=${in#*\\\"n\\\":}; n=${n%%[!0-9]*}\n"
	"echo \"s $n $(date +%s%N)\" >> marks.log\n"
	"sleep 0.2\n"
	"echo \"e $n $(date +%s%N)\" >> marks.log\n"
	"if [ \"$n\" = 99 ]; then echo 'n is 99' >&2; exit 1; fi\n"
	"if [ \"$n\" = 50 ]; then ln -s secret.txt lnk; fi\n"
	"echo \"{\\\"n\\\":$n}\"\n";

static const char config_yaml[] =
	"mode: bypassPermissions\n"
	"permissions:\n"
	"  ask: [\"write_file(./ask/**)\"]\n"
	"  deny: [\"read_file(./secret.txt)\"]\n"
	"tools:\n"
	"  nap:\n"
	"    description: Sleeps; read-only and concurrency-safe.\n"
	"    input_schema: {type: object, properties: {n: {type: integer}}}\n"
	"    command: [./mark.sh]\n"
	"    read_only: true\n"
	"    concurrency_safe: true\n"
	"  act:\n"
	"    description: A side effect that may run beside others.\n"
	"    input_schema: {type: object, properties: {n: {type: integer}}}\n"
	"    command: [./mark.sh]\n"
	"    concurrency_safe: true\n"
	"  solo:\n"
	"    description: A side effect that runs alone.\n"
	"    input_schema: {type: object, properties: {n: {type: integer}}}\n"
	"    command: [./mark.sh]\n";

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

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-batch.XXXXXX");
	assert_non_null(mkdtemp(ws));
	put("mark.sh", mark_sh, 0755);
	put("toolgate.yaml", config_yaml, 0644);
	put("hello.txt", "one\ntwo\nthree\n", 0644);
	put("secret.txt", "the secret\n", 0644);
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

static tg_gate *open_gate(int max_parallel)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0,
	                .max_parallel = max_parallel};
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = tg_gate_open(&o, &g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	return g;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run n requests as one batch; the wall time in seconds. */
static double batch(tg_gate *g, const tg_request *reqs, size_t n, tg_result **out)
{
	double t0 = now_s();
	assert_int_equal(tg_call_batch(g, reqs, n, out), n);
	return now_s() - t0;
}

static void free_all(tg_result **out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tg_result_free(out[i]);
}

static json_t *envelope(const tg_result *r)
{
	json_t *j = json_loads(tg_result_json(r, 0), 0, NULL);
	assert_non_null(j);
	return j;
}

/* The marks.log intervals: start[n], end[n] in ns (0: none), and how many
 * times n started. */
#define MAXN 100
typedef struct {
	long long start[MAXN], end[MAXN];
	int       starts[MAXN];
} marks;

static void read_marks(marks *m)
{
	char p[256], kind;
	int n;
	long long t;
	memset(m, 0, sizeof *m);
	snprintf(p, sizeof p, "%s/marks.log", ws);
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	while (fscanf(f, " %c %d %lld", &kind, &n, &t) == 3) {
		assert_true(n >= 0 && n < MAXN);
		if (kind == 's') {
			m->start[n] = t;
			m->starts[n]++;
		} else {
			m->end[n] = t;
		}
	}
	fclose(f);
}

static void clear_marks(void)
{
	char p[256];
	snprintf(p, sizeof p, "%s/marks.log", ws);
	unlink(p);
}

static int overlap(const marks *m, int a, int b)
{
	return m->start[a] < m->end[b] && m->start[b] < m->end[a];
}

static const char *content_of(const tg_result *r)
{
	static char buf[256];
	json_t *env = envelope(r);
	const char *c = json_string_value(json_object_get(json_object_get(env, "output"), "content"));
	snprintf(buf, sizeof buf, "%s", c ? c : "(none)");
	json_decref(env);
	return buf;
}

/* Results come back in call order with the effects a serial run would
 * have: a read after a write of its file sees that write. */
static void test_run_serial_effects(void **state)
{
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "read_file", .args = "{\"path\":\"hello.txt\"}", .call_id = "c0"},
		{.tool = "write_file", .args = "{\"path\":\"a.txt\",\"content\":\"first\\n\"}", .call_id = "c1"},
		{.tool = "read_file", .args = "{\"path\":\"a.txt\"}", .call_id = "c2"},
		{.tool = "write_file", .args = "{\"path\":\"a.txt\",\"content\":\"second\\n\"}", .call_id = "c3"},
		{.tool = "read_file", .args = "{\"path\":\"a.txt\"}", .call_id = "c4"},
		{.tool = "list_dir", .args = "{}", .call_id = "c5"},
		{.tool = "write_file", .args = "{\"path\":\"sub/b.txt\",\"content\":\"b\\n\"}", .call_id = "c6"},
		{.tool = "read_file", .args = "{\"path\":\"sub/b.txt\"}", .call_id = "c7"},
	};
	enum { N = sizeof reqs / sizeof reqs[0] };
	tg_result *out[N];
	batch(g, reqs, N, out);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
		json_t *env = envelope(out[i]);
		assert_string_equal(json_string_value(json_object_get(env, "call_id")), reqs[i].call_id);
		json_decref(env);
	}
	assert_non_null(strstr(content_of(out[2]), "first"));
	assert_non_null(strstr(content_of(out[4]), "second"));
	assert_non_null(strstr(content_of(out[7]), "b"));
	/* the listing of the whole workspace ran after the write before it */
	assert_non_null(strstr(tg_result_json(out[5], 0), "a.txt"));
	free_all(out, N);
	tg_gate_close(g);
}

/* Eight concurrency-safe 200 ms calls overlap: far faster than with
 * max_parallel 1, which runs them one after another. */
static void test_run_speedup(void **state)
{
	tg_request reqs[8];
	char args[8][32];
	for (int i = 0; i < 8; i++) {
		snprintf(args[i], sizeof args[i], "{\"n\":%d}", i);
		reqs[i] = (tg_request){.tool = "nap", .args = args[i]};
	}
	tg_result *out[8];

	tg_gate *g = open_gate(0);                 /* the default: 8 */
	double single = batch(g, reqs, 1, out);
	free_all(out, 1);
	double parallel = batch(g, reqs, 8, out);
	for (int i = 0; i < 8; i++)
		assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
	free_all(out, 8);
	tg_gate_close(g);

	g = open_gate(1);
	double serial = batch(g, reqs, 8, out);
	for (int i = 0; i < 8; i++)
		assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
	free_all(out, 8);
	tg_gate_close(g);

	fprintf(stderr, "      8 x 200 ms: single %.3f s, parallel %.3f s, serial %.3f s\n", single,
	        parallel, serial);
	assert_true(serial >= 8 * 0.2);
	assert_true(parallel < serial / 3);
	assert_true(parallel < 2.5 * single);
}

/* Calls of one segment overlap in time; a barrier overlaps nothing, and
 * nothing after it starts before it ends. */
static void test_run_barrier(void **state)
{
	clear_marks();
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "nap", .args = "{\"n\":1}"},
		{.tool = "nap", .args = "{\"n\":2}"},
		{.tool = "solo", .args = "{\"n\":3}"},
		{.tool = "nap", .args = "{\"n\":4}"},
		{.tool = "act", .args = "{\"n\":5}"},
		{.tool = "solo", .args = "{\"n\":6}"},
	};
	enum { N = sizeof reqs / sizeof reqs[0] };
	tg_result *out[N];
	batch(g, reqs, N, out);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(tg_result_status(out[i]), TG_PERSISTED);
	free_all(out, N);
	tg_gate_close(g);

	marks m;
	read_marks(&m);
	for (int n = 1; n <= 6; n++)
		assert_int_equal(m.starts[n], 1);
	assert_true(overlap(&m, 1, 2));
	assert_true(overlap(&m, 4, 5));
	assert_true(m.start[3] >= m.end[1] && m.start[3] >= m.end[2]);
	assert_true(m.start[4] >= m.end[3] && m.start[5] >= m.end[3]);
	assert_true(m.start[6] >= m.end[4] && m.start[6] >= m.end[5]);
}

/* A call stopped before execute is answered at once and takes no slot:
 * the calls around it still share their segment. */
static void test_run_stopped_calls(void **state)
{
	clear_marks();
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "nap", .args = "{\"n\":1}", .call_id = "a"},
		{.tool = "nap", .args = "{\"n\":", .call_id = "b"},           /* not JSON */
		{.tool = "nope", .args = "{}", .call_id = "c"},               /* unknown */
		{.tool = "nap", .args = "{\"n\":\"x\"}", .call_id = "d"},     /* schema */
		{.tool = "write_file", .args = "{\"path\":\"ask/x.txt\",\"content\":\"x\"}", .call_id = "e"},
		{.tool = "read_file", .args = "{\"path\":\".toolgate/ledger.db\"}", .call_id = "f"},
		{.tool = "nap", .args = "{\"n\":2}", .call_id = "g", .invalid = "truncated"},
		{.tool = "nap", .args = "{\"n\":3}", .call_id = "h"},
	};
	enum { N = sizeof reqs / sizeof reqs[0] };
	static const tg_status want[N] = {TG_PERSISTED, TG_INVALID, TG_INVALID, TG_INVALID,
	                                  TG_PENDING,   TG_DENIED,  TG_INVALID, TG_PERSISTED};
	tg_result *out[N];
	batch(g, reqs, N, out);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(tg_result_status(out[i]), want[i]);
		json_t *env = envelope(out[i]);
		assert_string_equal(json_string_value(json_object_get(env, "call_id")), reqs[i].call_id);
		json_decref(env);
	}
	free_all(out, N);
	tg_gate_close(g);
	marks m;
	read_marks(&m);
	assert_int_equal(m.starts[1], 1);
	assert_int_equal(m.starts[2], 0);
	assert_int_equal(m.starts[3], 1);
	assert_true(overlap(&m, 1, 3));
	char p[256];
	snprintf(p, sizeof p, "%s/ask/x.txt", ws);
	assert_int_not_equal(access(p, F_OK), 0);
}

/* A failed call never cancels its siblings; each gets its own result. */
static void test_run_failure_isolated(void **state)
{
	clear_marks();
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "nap", .args = "{\"n\":1}"},
		{.tool = "nap", .args = "{\"n\":99}"},
		{.tool = "nap", .args = "{\"n\":2}"},
		{.tool = "read_file", .args = "{\"path\":\"missing.txt\"}"},
		{.tool = "nap", .args = "{\"n\":3}"},
	};
	enum { N = sizeof reqs / sizeof reqs[0] };
	static const tg_status want[N] = {TG_PERSISTED, TG_FAILED, TG_PERSISTED, TG_FAILED,
	                                  TG_PERSISTED};
	tg_result *out[N];
	batch(g, reqs, N, out);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(tg_result_status(out[i]), want[i]);
	json_t *env = envelope(out[1]);
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(env, "error"),
	                                                         "message")), "n is 99"));
	json_decref(env);
	free_all(out, N);
	tg_gate_close(g);
	marks m;
	read_marks(&m);
	assert_true(overlap(&m, 1, 99) && overlap(&m, 99, 3));
}

/* Keys in one batch: a repeat is replayed (as in a serial run), never
 * run twice and never left `pending` by a race with its twin; one key for
 * another call is refused. */
static void test_run_keys(void **state)
{
	clear_marks();
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "act", .args = "{\"n\":8}", .idempotency_key = "k8"},
		{.tool = "act", .args = "{\"n\":7}", .idempotency_key = "k7"},
		{.tool = "act", .args = "{\"n\":7}", .idempotency_key = "k7"},
		{.tool = "act", .args = "{\"n\":9}", .idempotency_key = "k7"},
		{.tool = "write_file", .args = "{\"path\":\"k.txt\",\"content\":\"k\"}", .idempotency_key = "w"},
		{.tool = "write_file", .args = "{\"path\":\"k.txt\",\"content\":\"k\"}", .idempotency_key = "w"},
		{.tool = "act", .args = "{\"n\":10}", .session = "s", .call_id = "same"},
		{.tool = "act", .args = "{\"n\":10}", .session = "s", .call_id = "same"},
	};
	enum { N = sizeof reqs / sizeof reqs[0] };
	static const tg_status want[N] = {TG_PERSISTED, TG_PERSISTED, TG_REPLAYED, TG_INVALID,
	                                  TG_PERSISTED, TG_REPLAYED, TG_PERSISTED, TG_REPLAYED};
	tg_result *out[N];
	batch(g, reqs, N, out);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(tg_result_status(out[i]), want[i]);
	free_all(out, N);
	tg_gate_close(g);
	marks m;
	read_marks(&m);
	assert_int_equal(m.starts[7], 1);
	assert_int_equal(m.starts[8], 1);
	assert_int_equal(m.starts[9], 0);
	assert_int_equal(m.starts[10], 1);
	assert_true(overlap(&m, 7, 8));      /* different keys still run together */
}

/* A call's policy is judged after every earlier barrier has run: a link a
 * barrier makes to a denied file is judged as that file. */
static void test_run_policy_after_barrier(void **state)
{
	tg_gate *g = open_gate(0);
	tg_request reqs[] = {
		{.tool = "read_file", .args = "{\"path\":\"hello.txt\"}"},
		{.tool = "solo", .args = "{\"n\":50}"},
		{.tool = "read_file", .args = "{\"path\":\"lnk\"}"},
	};
	tg_result *out[3];
	batch(g, reqs, 3, out);
	assert_int_equal(tg_result_status(out[0]), TG_PERSISTED);
	assert_int_equal(tg_result_status(out[1]), TG_PERSISTED);
	assert_int_equal(tg_result_status(out[2]), TG_DENIED);
	assert_null(strstr(tg_result_json(out[2], 0), "the secret"));
	free_all(out, 3);
	tg_gate_close(g);
}

static long long ledger_count(const char *sql)
{
	char p[256];
	snprintf(p, sizeof p, "%s/.toolgate/ledger.db", ws);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* Every call of a large mixed batch ends in exactly one ledger row and one
 * `received` event, whatever segment it ran in; dry runs run nothing. */
static void test_run_ledger(void **state)
{
	enum { N = 120 };
	tg_request reqs[N];
	char args[N][96];
	for (int i = 0; i < N; i++) {
		switch (i % 6) {
		case 0:
			snprintf(args[i], sizeof args[i], "{\"path\":\"hello.txt\"}");
			reqs[i] = (tg_request){.tool = "read_file"};
			break;
		case 1:
			snprintf(args[i], sizeof args[i], "{\"path\":\"w/%d.txt\",\"content\":\"%d\"}", i % 4, i);
			reqs[i] = (tg_request){.tool = "write_file"};
			break;
		case 2:
			snprintf(args[i], sizeof args[i], "{\"path\":\"w\"}");
			reqs[i] = (tg_request){.tool = "list_dir"};
			break;
		case 3:
			snprintf(args[i], sizeof args[i], "{\"path\":\"dry/%d.txt\",\"content\":\"x\"}", i);
			reqs[i] = (tg_request){.tool = "write_file", .dry_run = 1};
			break;
		case 4:
			snprintf(args[i], sizeof args[i], "{");
			reqs[i] = (tg_request){.tool = "read_file"};
			break;
		default:
			snprintf(args[i], sizeof args[i], "{\"pattern\":\"two\",\"path\":\".\"}");
			reqs[i] = (tg_request){.tool = "search_files"};
			break;
		}
		reqs[i].args = args[i];
	}
	tg_result *out[N];
	tg_gate *g = open_gate(4);
	batch(g, reqs, N, out);
	char ids[N][37];
	for (int i = 0; i < N; i++) {
		tg_status want = i % 6 == 3 ? TG_DRY_RUN : i % 6 == 4 ? TG_INVALID : TG_PERSISTED;
		assert_int_equal(tg_result_status(out[i]), want);
		snprintf(ids[i], sizeof ids[i], "%s", tg_result_op_id(out[i]));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ids[i], ids[j]);
	}
	free_all(out, N);
	tg_gate_close(g);
	assert_int_equal(ledger_count("select count(*) from ops"), N);
	assert_int_equal(ledger_count("select count(distinct op_id) from ops"), N);
	assert_int_equal(ledger_count("select count(*) from events where type='tool.call.received'"), N);
	assert_int_equal(ledger_count("select count(distinct op_id) from events"), N);
	char p[256];
	snprintf(p, sizeof p, "%s/dry", ws);
	assert_int_not_equal(access(p, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_readers_together),
		cmocka_unit_test(test_plan_writer_overlap),
		cmocka_unit_test(test_plan_barriers),
		cmocka_unit_test(test_plan_order_kept),
		cmocka_unit_test(test_plan_scopes),
		cmocka_unit_test(test_plan_many_paths),
		cmocka_unit_test(test_pool_no_workers),
		cmocka_unit_test(test_pool_workers),
		cmocka_unit_test_setup_teardown(test_run_serial_effects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_speedup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_barrier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_stopped_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_failure_isolated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_policy_after_barrier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_ledger, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
