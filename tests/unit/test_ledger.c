/*
 * test_ledger.c — the ledger without a gate (src/admin/ledger.c): `toolgate
 * migrate` (versions told in order, dry runs that change nothing, `--to`,
 * migrations only forward, a newer schema refused at open) and `toolgate
 * ledger export|import` from one SQLite ledger into another: a history of
 * every status made by a real gate (with a replay, an approval left
 * pending, an unknown outcome, an event after its call's row, events of no
 * call) reads back the same through tg_log and tg_stats, keys done in the
 * old ledger replay in the new one (and stay bound: the same key with
 * other arguments is ambiguous there) and unknown ones stay unknown, a second
 * import writes nothing, a bad line stops the import with its number and
 * nothing of it or after written, and the export line parser refuses what
 * is not an export line with a sentence; a ledger URL is shown without its
 * user and password whatever the password holds.  Runs of toolgate eval
 * move too: the same list in the new ledger, none twice, --since by the
 * run's time, a bad eval_run line refused by number; an export in format 1
 * (before eval runs) still reads, one newer than this program does not.  (The PostgreSQL side is
 * tests/integration/pg_migrate.sh.)
 *
 * Owns: nothing outside its temporary directories.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "admin/ledger.h"
#include "store/store.h"
#include "toolgate.h"
#include "util/util.h"

struct fx {
	char root[64];       /* a fresh temporary directory */
	char src[128];       /* <root>/src: the workspace of the ledger exported */
	char dst[128];       /* <root>/dst: the workspace imported into */
	char src_cfg[160], dst_cfg[160];
	char file[160];      /* <root>/export.jsonl */
};

/* ---- helpers ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void make_workspace(const char *dir, const char *cfg)
{
	char p[256], text[1024];
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(text, sizeof text,
	         "workspace: %s\n"
	         "store: .toolgate/ledger.db\n"
	         "permissions:\n"
	         "  allow: [\"write_file(./out/**)\"]\n"
	         "  ask: [\"write_file(./ask/**)\"]\n"
	         "  deny: [\"read_file(./secret.txt)\"]\n",
	         dir);
	write_text(cfg, text);
	snprintf(p, sizeof p, "%s/hello.txt", dir);
	write_text(p, "one\ntwo\n");
	snprintf(p, sizeof p, "%s/secret.txt", dir);
	write_text(p, "s3cret\n");
	snprintf(p, sizeof p, "%s/out", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/.toolgate", dir);
	assert_int_equal(mkdir(p, 0700), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	snprintf(f->root, sizeof f->root, "/tmp/tg_ledger_XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->src, sizeof f->src, "%s/src", f->root);
	snprintf(f->dst, sizeof f->dst, "%s/dst", f->root);
	snprintf(f->src_cfg, sizeof f->src_cfg, "%s/src.yaml", f->root);
	snprintf(f->dst_cfg, sizeof f->dst_cfg, "%s/dst.yaml", f->root);
	snprintf(f->file, sizeof f->file, "%s/export.jsonl", f->root);
	make_workspace(f->src, f->src_cfg);
	make_workspace(f->dst, f->dst_cfg);
	/* the configuration alone names the ledgers */
	unsetenv("TOOLGATE_STORE");
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
	int rc = system(cmd);
	free(f);
	return rc;
}

static tg_gate *gate(const char *cfg)
{
	tg_options o = {.config_path = cfg, .sync_full = -1};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0)
		fail_msg("gate: %s", err);
	return g;
}

static tg_ledger *ledger(const char *cfg, int migrate)
{
	tg_ledger *l = NULL;
	char *err = NULL;
	if (tg_ledger_open(cfg, migrate, &l, &err) < 0)
		fail_msg("ledger: %s", err);
	return l;
}

static tgi_store *store_of(const char *ws, int flags)
{
	char path[256], err[512];
	tgi_store *s = NULL;
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	if (tgi_store_open(path, flags, &s, err, sizeof err) < 0)
		fail_msg("store: %s", err);
	return s;
}

static tg_status call(tg_gate *g, const char *tool, const char *args, const char *key,
                      const char *session, char op_id[37])
{
	tg_request req = {.tool = tool, .args = args, .idempotency_key = key, .session = session};
	tg_result *r = NULL;
	tg_status st = tg_call(g, &req, &r);
	if (op_id)
		snprintf(op_id, 37, "%s", tg_result_op_id(r));
	tg_result_free(r);
	return st;
}

static int to_file(void *arg, const char *line, size_t len)
{
	FILE *f = arg;
	return fwrite(line, 1, len, f) != len || fputc('\n', f) == EOF;
}

static void export_to(const char *cfg, const char *path, long long since, tg_ledger_counts *c)
{
	tg_ledger *l = ledger(cfg, 1);
	FILE *out = fopen(path, "w");
	assert_non_null(out);
	char *err = NULL;
	if (tg_ledger_export(l, since, to_file, out, c, &err) < 0)
		fail_msg("export: %s", err);
	assert_int_equal(fclose(out), 0);
	tg_ledger_close(l);
}

/* Import path into cfg's ledger: the return code, counts and error. */
static int import_from(const char *cfg, const char *path, tg_ledger_counts *c, char **err)
{
	tg_ledger *l = ledger(cfg, 1);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	*err = NULL;
	int rc = tg_ledger_import(l, fd, c, err);
	close(fd);
	tg_ledger_close(l);
	return rc;
}

/* The log as `toolgate log --json` shows it, without the event seqs (a
 * ledger numbers its own events). */
static json_t *log_of(const char *cfg)
{
	tg_gate *g = gate(cfg);
	char *err = NULL;
	char *text = tg_log(g, NULL, &err);
	if (!text)
		fail_msg("log: %s", err);
	json_t *ops = json_loads(text, 0, NULL);
	assert_non_null(ops);
	free(text);
	size_t i, j;
	json_t *op, *ev;
	json_array_foreach(ops, i, op)
		json_array_foreach(json_object_get(op, "events"), j, ev)
			json_object_del(ev, "seq");
	tg_gate_close(g);
	return ops;
}

static json_t *stats_of(const char *cfg)
{
	tg_gate *g = gate(cfg);
	char *err = NULL;
	char *text = tg_stats(g, 0, &err);
	if (!text)
		fail_msg("stats: %s", err);
	json_t *v = json_loads(text, 0, NULL);
	free(text);
	tg_gate_close(g);
	return v;
}

static size_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = 0;
	int ch;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static int64_t event_count(tgi_store *s)
{
	json_t *all = NULL;
	char err[256];
	assert_int_equal(tgi_store_events(s, NULL, 0, &all, err, sizeof err), 0);
	int64_t n = (int64_t)json_array_size(all);
	json_decref(all);
	return n;
}

#define LONE_TS 1790000000000LL   /* events of no op, at a fixed time */

/* A process that claims scope for op_id and dies before its call has a
 * row (as a gate killed while its tool runs). */
static void die_holding(const char *ws, const char *scope, char op_id[37])
{
	tgi_uuidv7(op_id);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[256], err[512];
		tgi_store *s = NULL;
		tgi_idem_info info;
		snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
		int ok = tgi_store_open(path, 0, &s, err, sizeof err) == 0 &&
		         tgi_store_idem_claim(s, scope, op_id, NULL, 30, &info, err, sizeof err) == 0 &&
		         info.state == TGI_IDEM_CLAIMED;
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A history of every kind in the source ledger: persisted, failed,
 * invalid, denied, an idempotent write and its replay, an approval left
 * pending, an op settled unknown, an event written after its op's row,
 * three events of no op (two of them alike), and two claims of processes
 * that died mid-call and left no row (one seen dead since: unknown; one
 * not: still in flight).  *done_op is the idempotent write's op,
 * *unknown_op the unknown one, dead[2] the dead processes' ops.
 */
static void make_history(struct fx *f, char done_op[37], char unknown_op[37],
                         char dead[2][37])
{
	tg_gate *g = gate(f->src_cfg);
	char first[37];
	assert_int_equal(call(g, "read_file", "{\"path\":\"hello.txt\"}", NULL, "s1", first),
	                 TG_PERSISTED);
	assert_int_equal(call(g, "read_file", "{\"path\":\"missing.txt\"}", NULL, "s1", NULL),
	                 TG_FAILED);
	assert_int_equal(call(g, "no_such_tool", "{}", NULL, NULL, NULL), TG_INVALID);
	assert_int_equal(call(g, "read_file", "{\"path\":\"secret.txt\"}", NULL, "s2", NULL),
	                 TG_DENIED);
	assert_int_equal(call(g, "write_file", "{\"path\":\"out/a.txt\",\"content\":\"x\"}", "k1",
	                      NULL, done_op), TG_PERSISTED);
	assert_int_equal(call(g, "write_file", "{\"path\":\"out/a.txt\",\"content\":\"x\"}", "k1",
	                      NULL, NULL), TG_REPLAYED);
	assert_int_equal(call(g, "write_file", "{\"path\":\"ask/b.txt\",\"content\":\"y\"}", NULL,
	                      NULL, NULL), TG_PENDING);
	tg_gate_close(g);

	/* what the gate does on rarer paths, through the store itself */
	char err[512];
	die_holding(f->src, "key:5:local:6:deploy:k7", dead[0]);
	die_holding(f->src, "key:5:local:6:deploy:k8", dead[1]);
	tgi_store *s = store_of(f->src, 0);
	char other[37];
	tgi_uuidv7(other);
	tgi_idem_info seen;
	assert_int_equal(tgi_store_idem_claim(s, "key:5:local:6:deploy:k8", other, NULL, 30, &seen,
	                                      err, sizeof err), 0);
	assert_int_equal(seen.state, TGI_IDEM_UNKNOWN);   /* and it is unknown from now on */
	free(seen.envelope);
	tgi_uuidv7(unknown_op);
	tgi_idem_info info;
	assert_int_equal(tgi_store_idem_claim(s, "local:deploy:k9", unknown_op, NULL, 30, &info,
	                                      err, sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	tgi_event ev[2] = {
		{.type = "tool.call.received", .stage = "decode", .ts_ms = tgi_unix_ms()},
		{.type = "tool.call.failed", .stage = "execute", .ts_ms = tgi_unix_ms(),
		 .data = json_pack("{s:s}", "kind", "timeout")},
	};
	char env[256];
	snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"failed\",\"error\":{\"kind\":"
	         "\"timeout\",\"applied\":\"unknown\"},\"duration_ms\":0.123457}", unknown_op);
	tgi_op_record op = {
		.op_id = unknown_op, .tool = "deploy", .principal = "local", .status = "failed",
		.error_kind = "timeout", .idem_scope = "local:deploy:k9",
		.args_redacted = "{\"a\":[1.5,\"z\"],\"b\":1}",   /* canonical, as the gate keeps it */
		.args_sha256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		.envelope = env, .started_ms = tgi_unix_ms(), .duration_ms = 1234.5678901234,
		.loop = "loop-entry-1",
	};
	assert_int_equal(tgi_store_record(s, &op, ev, 2, op.idem_scope, TGI_SETTLE_UNKNOWN, err,
	                                  sizeof err), 0);
	json_decref(ev[1].data);

	tgi_event after = {.type = "tool.hook.after.failed", .stage = "after_hook",
	                   .ts_ms = tgi_unix_ms(), .data = json_pack("{s:s}", "hook", "h1")};
	assert_int_equal(tgi_store_event(s, first, &after, err, sizeof err), 0);
	json_decref(after.data);
	json_t *down = json_pack("{s:s}", "server", "fs");
	tgi_event lone[3] = {
		{.type = "mcp.server.down", .stage = NULL, .ts_ms = LONE_TS, .data = down},
		{.type = "mcp.server.down", .stage = NULL, .ts_ms = LONE_TS, .data = down},
		{.type = "mcp.tool.changed", .stage = "bridge", .ts_ms = LONE_TS + 1},
	};
	for (int i = 0; i < 3; i++)
		assert_int_equal(tgi_store_event(s, NULL, &lone[i], err, sizeof err), 0);
	json_decref(down);
	tgi_store_close(s);
}

/* ---- export then import ---- */

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	char done_op[37], unknown_op[37], dead[2][37];
	make_history(f, done_op, unknown_op, dead);

	tg_ledger_counts ex;
	export_to(f->src_cfg, f->file, 0, &ex);
	assert_int_equal(ex.ops, 8);
	assert_int_equal(ex.claims, 2);
	/* header, ops, events of no op, claims that left no op */
	assert_int_equal(count_lines(f->file), 1 + 8 + 3 + 2);
	/* the idempotent write's line carries what its key was bound to */
	FILE *in = fopen(f->file, "r");
	assert_non_null(in);
	char *line = NULL;
	size_t cap = 0;
	int bound = 0;
	while (getline(&line, &cap, in) > 0) {
		json_t *row = json_loads(line, 0, NULL);
		const char *b = json_string_value(json_object_get(row, "idem_binding"));
		if (row && json_object_get(row, "op_id") &&
		    !strcmp(json_string_value(json_object_get(row, "op_id")), done_op)) {
			assert_non_null(b);
			assert_int_equal(strlen(b), 64);
			bound = 1;
		}
		json_decref(row);
	}
	free(line);
	fclose(in);
	assert_true(bound);

	tg_ledger_counts c;
	char *err;
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import: %s", err);
	assert_int_equal(c.ops, 8);
	assert_int_equal(c.events, ex.events);
	assert_int_equal(c.claims, 2);
	assert_int_equal(c.skipped_ops + c.skipped_events + c.skipped_claims, 0);
	assert_int_equal(c.lines, 14);

	/* the same log and stats, op for op, envelope for envelope */
	json_t *a = log_of(f->src_cfg), *b = log_of(f->dst_cfg);
	assert_int_equal(json_array_size(a), 8);
	if (!json_equal(a, b)) {
		char *ta = json_dumps(a, JSON_INDENT(1)), *tb = json_dumps(b, JSON_INDENT(1));
		fail_msg("the logs differ:\n%s\n---\n%s", ta, tb);
	}
	json_decref(a);
	json_decref(b);
	a = stats_of(f->src_cfg);
	b = stats_of(f->dst_cfg);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);

	/* the rows as the gate wrote them, text for text */
	tgi_store *s = store_of(f->src, 0), *d = store_of(f->dst, 0);
	tgi_log_filter one = {.op_id = unknown_op};
	json_t *x = NULL, *y = NULL;
	char e[512];
	assert_int_equal(tgi_store_events(s, &one, 0, &x, e, sizeof e), 0);
	assert_int_equal(tgi_store_events(d, &one, 0, &y, e, sizeof e), 0);
	assert_int_equal(json_array_size(y), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(y, 0), "args")),
	                    "{\"a\":[1.5,\"z\"],\"b\":1}");
	json_decref(x);
	json_decref(y);

	/* the key done there replays here (and runs nothing); the unknown one stays unknown */
	tg_gate *g = gate(f->dst_cfg);
	char again[37];
	assert_int_equal(call(g, "write_file", "{\"path\":\"out/a.txt\",\"content\":\"x\"}", "k1",
	                      NULL, again), TG_REPLAYED);
	/* and stays bound to that call: the key with other arguments is
	 * refused as ambiguous, not answered with the first call's result */
	tg_request other = {.tool = "write_file", .idempotency_key = "k1",
	                    .args = "{\"path\":\"out/a.txt\",\"content\":\"other\"}"};
	tg_result *res = NULL;
	assert_int_equal(tg_call(g, &other, &res), TG_INVALID);
	json_t *env = json_loads(tg_result_json(res, 0), 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(env, "error"), "kind")),
	                    "ambiguous");
	json_decref(env);
	tg_result_free(res);
	tg_gate_close(g);
	char path[256];
	snprintf(path, sizeof path, "%s/out/a.txt", f->dst);
	assert_int_equal(access(path, F_OK), -1);   /* not written in the new workspace */
	tgi_idem_info info;
	char probe[37];
	tgi_uuidv7(probe);
	assert_int_equal(tgi_store_idem_claim(d, "local:deploy:k9", probe, NULL, 30, &info, e,
	                                      sizeof e), 0);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, unknown_op);
	free(info.envelope);

	/* and so do the calls whose process died: held by the importer (this
	 * process) while it lives, unknown after (test_dead_claims) */
	static const char *const dead_scope[2] = {"key:5:local:6:deploy:k7",
	                                          "key:5:local:6:deploy:k8"};
	for (int i = 0; i < 2; i++) {
		tgi_uuidv7(probe);
		assert_int_equal(tgi_store_idem_claim(d, dead_scope[i], probe, NULL, 30, &info, e,
		                                      sizeof e), 0);
		assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
		assert_string_equal(info.op_id, dead[i]);
		free(info.envelope);
	}

	/* a second import writes nothing */
	int64_t before = event_count(d);
	tgi_store_close(d);
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import again: %s", err);
	assert_int_equal(c.ops, 0);
	assert_int_equal(c.events, 0);
	assert_int_equal(c.skipped_ops, 8);
	assert_int_equal(c.skipped_events, 3);
	assert_int_equal(c.claims, 0);
	assert_int_equal(c.skipped_claims, 2);
	d = store_of(f->dst, 0);
	assert_int_equal(event_count(d), before);
	tgi_store_close(d);
	tgi_store_close(s);
}

/* A call whose process died mid-call left a claim and no row: moved, it is
 * an unknown outcome in the new ledger once the importer has ended, never
 * run again, and `ops resolve` settles it there. */
static void test_dead_claims(void **state)
{
	struct fx *f = *state;
	char dead[37], e[512];
	tg_ledger_close(ledger(f->src_cfg, 1));
	die_holding(f->src, "key:5:local:6:deploy:k1", dead);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 0, &c);
	assert_int_equal(c.ops, 0);
	assert_int_equal(c.claims, 1);

	tg_ledger_close(ledger(f->dst_cfg, 1));
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {   /* the importer, a process of its own that ends */
		tg_ledger *l = NULL;
		int fd = open(f->file, O_RDONLY);
		int ok = fd >= 0 && tg_ledger_open(f->dst_cfg, 1, &l, NULL) == 0 &&
		         tg_ledger_import(l, fd, &c, NULL) == 0 && c.claims == 1;
		tg_ledger_close(l);
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	tgi_store *d = store_of(f->dst, 0);
	char probe[37];
	tgi_uuidv7(probe);
	tgi_idem_info info;
	assert_int_equal(tgi_store_idem_claim(d, "key:5:local:6:deploy:k1", probe, NULL, 30, &info,
	                                      e, sizeof e), 0);
	assert_int_equal(info.state, TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, dead);
	free(info.envelope);
	assert_int_equal(tgi_store_op_resolve(d, dead, 0, e, sizeof e), 0);
	assert_int_equal(tgi_store_idem_claim(d, "key:5:local:6:deploy:k1", probe, NULL, 30, &info,
	                                      e, sizeof e), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);   /* settled "not applied": may run */
	tgi_store_close(d);
}

/* An event of no op the ledger holds is skipped once for each time it is
 * there: of two alike in the export, one is new. */
static void test_lone_events_counted(void **state)
{
	struct fx *f = *state;
	char e[512];
	tgi_store *s = store_of(f->src, 0);
	json_t *down = json_pack("{s:s}", "server", "fs");
	tgi_event ev = {.type = "mcp.server.down", .ts_ms = LONE_TS, .data = down};
	for (int i = 0; i < 2; i++)
		assert_int_equal(tgi_store_event(s, NULL, &ev, e, sizeof e), 0);
	tgi_store_close(s);

	/* the destination already has one of them, and an unrelated one */
	tg_ledger_close(ledger(f->dst_cfg, 1));
	tgi_store *d = store_of(f->dst, 0);
	assert_int_equal(tgi_store_event(d, NULL, &ev, e, sizeof e), 0);
	tgi_event other = {.type = "mcp.server.down", .ts_ms = LONE_TS + 5, .data = down};
	assert_int_equal(tgi_store_event(d, NULL, &other, e, sizeof e), 0);
	tgi_store_close(d);
	json_decref(down);

	tg_ledger_counts c;
	char *err;
	export_to(f->src_cfg, f->file, 0, &c);
	assert_int_equal(c.events, 2);
	assert_int_equal(import_from(f->dst_cfg, f->file, &c, &err), 0);
	assert_int_equal(c.events, 1);
	assert_int_equal(c.skipped_events, 1);
	d = store_of(f->dst, 0);
	assert_int_equal(event_count(d), 3);
	tgi_store_close(d);
}

/* A bad line stops the import: named by number, what came before it
 * written, nothing of it or after; fixed, the rest goes in. */
static void test_bad_line_stops(void **state)
{
	struct fx *f = *state;
	tg_gate *g = gate(f->src_cfg);
	char ops[4][37];
	for (int i = 0; i < 4; i++)
		assert_int_equal(call(g, "read_file", "{\"path\":\"hello.txt\"}", NULL, NULL, ops[i]),
		                 TG_PERSISTED);
	tg_gate_close(g);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 0, &c);
	assert_int_equal(c.ops, 4);

	/* header, op 1, op 2, a bad line, op 3, op 4 */
	FILE *in = fopen(f->file, "r");
	char bad[192];
	snprintf(bad, sizeof bad, "%s.bad", f->file);
	FILE *out = fopen(bad, "w");
	assert_non_null(in);
	assert_non_null(out);
	char *line = NULL;
	size_t cap = 0;
	for (int n = 1; getline(&line, &cap, in) > 0; n++) {
		if (n == 4)
			fputs("{\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"status\":\"done\"}\n",
			      out);
		fputs(line, out);
	}
	free(line);
	fclose(in);
	fclose(out);

	char *err;
	assert_int_equal(import_from(f->dst_cfg, bad, &c, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "line 4: status"));
	free(err);
	assert_int_equal(c.ops, 2);
	assert_int_equal(c.lines, 4);

	tgi_store *d = store_of(f->dst, 0);
	char e[256];
	for (int i = 0; i < 4; i++) {
		tgi_log_filter one = {.op_id = ops[i]};
		json_t *have = NULL;
		assert_int_equal(tgi_store_ops(d, &one, &have, e, sizeof e), 0);
		assert_int_equal(json_array_size(have), i < 2);
		json_decref(have);
	}
	tgi_store_close(d);

	assert_int_equal(import_from(f->dst_cfg, f->file, &c, &err), 0);
	assert_int_equal(c.ops, 2);
	assert_int_equal(c.skipped_ops, 2);
}

/* What is not an export is refused before anything is written. */
static void test_not_an_export(void **state)
{
	struct fx *f = *state;
	static const struct { const char *text, *want; } cases[] = {
		{"", "holds no export"},
		{"\n  \n", "holds no export"},
		{"{\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\"}\n", "line 1: expected the export's header"},
		{"hello\n", "line 1: expected the export's header"},
		{"{\"toolgate_ledger\":3,\"schema\":1}\n", "line 1: the export is in format 3"},
		{"{\"toolgate_ledger\":3,\"schema\":1}\n", "import it with a newer toolgate"},
		{"{\"toolgate_ledger\":0,\"schema\":1}\n", "line 1: the export is in format 0"},
		{"{\"toolgate_ledger\":1,\"schema\":99}\n", "newer than this toolgate understands"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		write_text(f->file, cases[i].text);
		tg_ledger_counts c;
		char *err;
		assert_int_equal(import_from(f->dst_cfg, f->file, &c, &err), -1);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, cases[i].want);
		assert_int_equal(c.ops + c.events, 0);
		free(err);
	}
}

/* A line past the cap is refused by number, not read whole into memory. */
static void test_line_too_long(void **state)
{
	struct fx *f = *state;
	FILE *out = fopen(f->file, "w");
	assert_non_null(out);
	fputs("{\"toolgate_ledger\":1,\"schema\":4}\n{\"op_id\":\"", out);
	static char chunk[1 << 16];
	memset(chunk, 'x', sizeof chunk);
	for (size_t n = 0; n <= TGI_LEDGER_LINE_MAX; n += sizeof chunk)
		fwrite(chunk, 1, sizeof chunk, out);
	fclose(out);
	tg_ledger_counts c;
	char *err;
	assert_int_equal(import_from(f->dst_cfg, f->file, &c, &err), -1);
	assert_non_null(strstr(err, "line 2: longer than 64 MiB"));
	free(err);
}

/* --since: calls started since then, events of no op since then. */
static void test_export_since(void **state)
{
	struct fx *f = *state;
	tgi_store *s = store_of(f->src, 0);
	char e[256];
	static const int64_t when[2] = {1600000000000LL, 1800000000000LL};
	for (int i = 0; i < 2; i++) {
		char id[64], env[128];
		snprintf(id, sizeof id, "%08llx-%04llx-7000-8000-00000000000%d",
		         (unsigned long long)(when[i] >> 16), (unsigned long long)(when[i] & 0xffff), i);
		snprintf(env, sizeof env, "{\"op_id\":\"%s\"}", id);
		tgi_op_record op = {.op_id = id, .tool = "read_file", .status = "persisted",
		                    .args_redacted = "{}", .envelope = env, .started_ms = when[i]};
		assert_int_equal(tgi_store_record(s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, e, sizeof e),
		                 0);
		tgi_event ev = {.type = "mcp.server.down", .ts_ms = when[i]};
		assert_int_equal(tgi_store_event(s, NULL, &ev, e, sizeof e), 0);
	}
	tgi_store_close(s);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 1700000000000LL, &c);
	assert_int_equal(c.ops, 1);
	assert_int_equal(c.events, 1);
	FILE *in = fopen(f->file, "r");
	char line[4096];
	assert_non_null(fgets(line, sizeof line, in));
	json_t *head = json_loads(line, 0, NULL);
	fclose(in);
	assert_int_equal(json_integer_value(json_object_get(head, "toolgate_ledger")), 2);
	assert_int_equal(json_integer_value(json_object_get(head, "schema")),
	                 TGI_STORE_SCHEMA_VERSION);
	assert_string_equal(json_string_value(json_object_get(head, "since")),
	                    "2023-11-14T22:13:20.000Z");
	assert_string_equal(json_string_value(json_object_get(head, "store")), "sqlite");
	json_decref(head);
}

/* ---- eval runs ---- */

#define EVAL_A "01a22d03-4ed7-713f-b5b3-7dc7159d6c01"
#define EVAL_B "01a22d03-4ed7-713f-b5b3-7dc7159d6c02"
#define EVAL_C "01a22d03-4ed7-713f-b5b3-7dc7159d6c03"

/* A run of toolgate eval kept in s: model NULL keeps a null model, pass
 * NAN a null pass rate. */
static void put_eval(tgi_store *s, const char *id, int64_t ts_ms, const char *model,
                     double pass)
{
	char e[512];
	tgi_eval_row r = {
		.id = id, .ts_ms = ts_ms, .provider = "scripted", .api = "openai-chat",
		.model = model, .profile = "coding",
		.manifest = "cb52351068d095da59c8ad6d474c35105c99a121bf8f6e7d946414d9ca07c8bc",
		.suite = "983ff7a2d739acbeaca2ac5d3cd26f177c58180ba22efd0e8118dd5238b5c30f",
		.cases = 119, .runs = 2, .score = {1.0, 0.1 + 0.2, NAN, 0.0, pass},
		.report = "{\"definitions\":{\"chars\":6069,\"tokens\":1650},"
		          "\"scores\":{\"overall\":{\"pass\":{\"ok\":1,\"of\":3,"
		          "\"rate\":0.33333333333333331}}},\"note\":\"caf\\u00e9 \\u2192\"}",
	};
	if (tgi_store_eval_put(s, &r, e, sizeof e) < 0)
		fail_msg("eval put: %s", e);
}

/* The eval runs of ws's ledger, as `toolgate eval --history --format json`
 * reads them (every model, all of them). */
static json_t *evals_of(const char *ws)
{
	tgi_store *s = store_of(ws, 0);
	json_t *all = NULL;
	char e[512];
	if (tgi_store_eval_list(s, NULL, 0, &all, e, sizeof e) < 0)
		fail_msg("eval list: %s", e);
	tgi_store_close(s);
	return all;
}

/* The line of path numbered n (1-based) as JSON. */
static json_t *line_of(const char *path, size_t n)
{
	FILE *in = fopen(path, "r");
	assert_non_null(in);
	char *line = NULL;
	size_t cap = 0;
	json_t *v = NULL;
	for (size_t i = 1; getline(&line, &cap, in) > 0; i++)
		if (i == n)
			v = json_loads(line, 0, NULL);
	free(line);
	fclose(in);
	assert_non_null(v);
	return v;
}

/* Calls and eval runs: the runs come after the calls, oldest first, and
 * read back the same in the new ledger, rate for rate and report for
 * report; a second import keeps none of them again. */
static void test_eval_round_trip(void **state)
{
	struct fx *f = *state;
	tg_gate *g = gate(f->src_cfg);
	assert_int_equal(call(g, "read_file", "{\"path\":\"hello.txt\"}", NULL, NULL, NULL),
	                 TG_PERSISTED);
	tg_gate_close(g);
	tgi_store *s = store_of(f->src, 0);
	put_eval(s, EVAL_B, 1790000000002LL, "gpt-4.1-mini", 0.75);
	put_eval(s, EVAL_A, 1790000000001LL, NULL, NAN);
	put_eval(s, EVAL_C, 1790000000002LL, "other", 1.0);
	tgi_store_close(s);

	tg_ledger_counts ex;
	export_to(f->src_cfg, f->file, 0, &ex);
	assert_int_equal(ex.ops, 1);
	assert_int_equal(ex.eval_runs, 3);
	assert_int_equal(count_lines(f->file), 1 + 1 + 3);
	json_t *head = line_of(f->file, 1);
	assert_int_equal(json_integer_value(json_object_get(head, "toolgate_ledger")), 2);
	json_decref(head);
	static const char *const order[3] = {EVAL_A, EVAL_B, EVAL_C};   /* by time, then id */
	for (size_t i = 0; i < 3; i++) {
		json_t *v = line_of(f->file, 3 + i);
		json_t *run = json_object_get(v, "eval_run");
		assert_non_null(run);
		assert_string_equal(json_string_value(json_object_get(run, "id")), order[i]);
		json_decref(v);
	}

	tg_ledger_counts c;
	char *err;
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import: %s", err);
	assert_int_equal(c.ops, 1);
	assert_int_equal(c.eval_runs, 3);
	assert_int_equal(c.skipped_eval_runs, 0);
	assert_int_equal(c.lines, 5);
	json_t *a = evals_of(f->src), *b = evals_of(f->dst);
	assert_int_equal(json_array_size(a), 3);
	if (!json_equal(a, b)) {
		char *ta = json_dumps(a, JSON_INDENT(1)), *tb = json_dumps(b, JSON_INDENT(1));
		fail_msg("the eval runs differ:\n%s\n---\n%s", ta, tb);
	}
	/* what a null and a rate read back as */
	json_t *first = json_array_get(b, 0);
	assert_true(json_is_null(json_object_get(first, "model")));
	assert_true(json_is_null(json_object_get(json_object_get(first, "scores"), "pass")));
	assert_true(json_real_value(json_object_get(json_object_get(first, "scores"), "valid")) ==
	            0.1 + 0.2);
	assert_string_equal(json_string_value(json_object_get(first, "ts")),
	                    "2026-09-21T14:13:20.001Z");
	json_decref(b);

	/* a second import keeps none again */
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import again: %s", err);
	assert_int_equal(c.eval_runs, 0);
	assert_int_equal(c.skipped_eval_runs, 3);
	assert_int_equal(c.ops, 0);
	b = evals_of(f->dst);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
}

/* A run the ledger holds already (by id) is skipped, one it does not is
 * kept, whatever else the ledger holds; the same run twice in one export
 * is kept once. */
static void test_eval_present_skipped(void **state)
{
	struct fx *f = *state;
	tgi_store *s = store_of(f->src, 0);   /* opened to migrate: the ledger is made */
	put_eval(s, EVAL_A, 1790000000001LL, "m", 0.5);
	put_eval(s, EVAL_B, 1790000000002LL, "m", 0.5);
	tgi_store_close(s);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 0, &c);
	assert_int_equal(c.eval_runs, 2);
	FILE *out = fopen(f->file, "a");   /* the last line again */
	assert_non_null(out);
	json_t *last = line_of(f->file, 3);
	char *text = json_dumps(last, JSON_COMPACT);
	fprintf(out, "%s\n", text);
	free(text);
	json_decref(last);
	fclose(out);

	tgi_store *d = store_of(f->dst, 0);
	put_eval(d, EVAL_A, 1790000000001LL, "m", 0.5);
	put_eval(d, EVAL_C, 1790000000003LL, "m", 0.5);
	tgi_store_close(d);
	char *err;
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import: %s", err);
	assert_int_equal(c.eval_runs, 1);
	assert_int_equal(c.skipped_eval_runs, 2);
	json_t *b = evals_of(f->dst);
	assert_int_equal(json_array_size(b), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(b, 1), "id")), EVAL_B);
	json_decref(b);
}

/* --since: the runs started since then (one started at that very time
 * included), with their counts. */
static void test_eval_since(void **state)
{
	struct fx *f = *state;
	tgi_store *s = store_of(f->src, 0);
	put_eval(s, EVAL_A, 1600000000000LL, "m", 0.5);
	put_eval(s, EVAL_B, 1700000000000LL, "m", 0.5);
	put_eval(s, EVAL_C, 1800000000000LL, "m", 0.5);
	tgi_store_close(s);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 1700000000000LL, &c);
	assert_int_equal(c.eval_runs, 2);
	assert_int_equal(count_lines(f->file), 1 + 2);
	json_t *v = line_of(f->file, 2);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "eval_run"), "id")),
	                    EVAL_B);
	json_decref(v);
	export_to(f->src_cfg, f->file, 1800000000001LL, &c);
	assert_int_equal(c.eval_runs, 0);
	assert_int_equal(count_lines(f->file), 1);
}

/* A bad eval_run line stops the import by its number: the runs before it
 * kept, nothing of it or after. */
static void test_eval_bad_line(void **state)
{
	struct fx *f = *state;
	tgi_store *s = store_of(f->src, 0);
	put_eval(s, EVAL_A, 1790000000001LL, "m", 0.5);
	put_eval(s, EVAL_C, 1790000000003LL, "m", 0.5);
	tgi_store_close(s);
	tg_ledger_counts c;
	export_to(f->src_cfg, f->file, 0, &c);

	/* header, run A, a run B whose pass rate is 1.5, run C */
	json_t *bad = line_of(f->file, 2);
	json_t *run = json_object_get(bad, "eval_run");
	json_object_set_new(run, "id", json_string(EVAL_B));
	json_object_set_new(json_object_get(run, "scores"), "pass", json_real(1.5));
	char *text = json_dumps(bad, JSON_COMPACT);
	json_decref(bad);
	char path[192];
	snprintf(path, sizeof path, "%s.bad", f->file);
	FILE *in = fopen(f->file, "r"), *out = fopen(path, "w");
	assert_non_null(in);
	assert_non_null(out);
	char *line = NULL;
	size_t cap = 0;
	for (int n = 1; getline(&line, &cap, in) > 0; n++) {
		if (n == 3)
			fprintf(out, "%s\n", text);
		fputs(line, out);
	}
	free(line);
	free(text);
	fclose(in);
	fclose(out);

	char *err;
	assert_int_equal(import_from(f->dst_cfg, path, &c, &err), -1);
	assert_non_null(err);
	if (!strstr(err, "line 3: eval_run.scores.pass: expected a rate from 0 to 1 or null, got 1.5"))
		fail_msg("the refusal says \"%s\"", err);
	free(err);
	assert_int_equal(c.eval_runs, 1);
	assert_int_equal(c.lines, 3);
	json_t *b = evals_of(f->dst);
	assert_int_equal(json_array_size(b), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(b, 0), "id")), EVAL_A);
	json_decref(b);
}

/* An export in format 1 (from before eval runs were exported) reads as it
 * did. */
static void test_format_1_reads(void **state)
{
	struct fx *f = *state;
	write_text(f->file, "{\"toolgate_ledger\":1,\"schema\":5,\"store\":\"sqlite\"}\n"
	                    "{\"event\":{\"ts_ms\":1790000000000,\"type\":\"mcp.server.down\","
	                    "\"stage\":null,\"data\":{\"server\":\"fs\"}}}\n");
	tg_ledger_counts c;
	char *err;
	if (import_from(f->dst_cfg, f->file, &c, &err) < 0)
		fail_msg("import: %s", err);
	assert_int_equal(c.events, 1);
	assert_int_equal(c.eval_runs, 0);
}

/* ---- migrations ---- */

struct told {
	int n[8];
	size_t count;
};

static void tell(void *arg, int n, const char *title)
{
	struct told *t = arg;
	assert_non_null(title);
	assert_string_equal(title, tg_ledger_migration_title(n));
	if (t->count < 8)
		t->n[t->count++] = n;
}

static int version_of(tg_ledger *l)
{
	int v = -1;
	char *err = NULL;
	if (tg_ledger_version(l, &v, &err) < 0)
		fail_msg("version: %s", err);
	return v;
}

static void test_migrate_steps(void **state)
{
	struct fx *f = *state;
	assert_int_equal(tg_ledger_latest(), TGI_STORE_SCHEMA_VERSION);
	assert_null(tg_ledger_migration_title(0));
	assert_null(tg_ledger_migration_title(TGI_STORE_SCHEMA_VERSION + 1));

	/* an empty ledger: told every migration in a dry run, none applied */
	tg_ledger *l = ledger(f->src_cfg, 0);
	assert_string_equal(tg_ledger_kind(l), "sqlite");
	assert_non_null(strstr(tg_ledger_where(l), "/src/.toolgate/ledger.db"));
	assert_int_equal(version_of(l), 0);
	struct told t = {0};
	char *err = NULL;
	assert_int_equal(tg_ledger_migrate(l, 0, 1, tell, &t, &err), 0);
	assert_int_equal(t.count, TGI_STORE_SCHEMA_VERSION);
	for (size_t i = 0; i < t.count; i++)
		assert_int_equal(t.n[i], (int)i + 1);
	assert_int_equal(version_of(l), 0);

	/* --to 2, then the rest; never back */
	memset(&t, 0, sizeof t);
	assert_int_equal(tg_ledger_migrate(l, 2, 0, tell, &t, &err), 0);
	assert_int_equal(t.count, 2);
	assert_int_equal(version_of(l), 2);
	tg_ledger_close(l);

	l = ledger(f->src_cfg, 0);   /* left at 2 by an open that does not migrate */
	assert_int_equal(version_of(l), 2);
	assert_int_equal(tg_ledger_migrate(l, 1, 0, tell, &t, &err), -1);
	assert_non_null(strstr(err, "only go forward"));
	free(err);
	memset(&t, 0, sizeof t);
	assert_int_equal(tg_ledger_migrate(l, 0, 0, tell, &t, &err), 0);
	assert_int_equal(t.count, TGI_STORE_SCHEMA_VERSION - 2);
	assert_int_equal(t.n[0], 3);
	assert_int_equal(version_of(l), TGI_STORE_SCHEMA_VERSION);
	memset(&t, 0, sizeof t);
	assert_int_equal(tg_ledger_migrate(l, 0, 0, tell, &t, &err), 0);
	assert_int_equal(t.count, 0);   /* nothing to do */
	tg_ledger_close(l);

	/* a ledger opened to migrate is brought up to date */
	l = ledger(f->dst_cfg, 1);
	assert_int_equal(version_of(l), TGI_STORE_SCHEMA_VERSION);
	tg_ledger_close(l);

	/* a schema ahead of this program is refused at open, with the store's sentence */
	char path[256];
	sqlite3 *db;
	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", f->dst);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	for (int migrate = 0; migrate < 2; migrate++) {
		assert_int_equal(tg_ledger_open(f->dst_cfg, migrate, &l, &err), -1);
		assert_null(l);
		assert_non_null(strstr(err, "newer than this toolgate understands"));
		free(err);
	}
}

/* $TOOLGATE_STORE names the ledger over the configuration's store. */
static void test_store_from_env(void **state)
{
	struct fx *f = *state;
	char path[256];
	snprintf(path, sizeof path, "%s/elsewhere.db", f->root);
	setenv("TOOLGATE_STORE", path, 1);
	tg_ledger *l = ledger(f->src_cfg, 1);
	unsetenv("TOOLGATE_STORE");
	assert_string_equal(tg_ledger_where(l), path);
	tg_ledger_close(l);
	assert_int_equal(access(path, F_OK), 0);
}

/* ---- the line parser ---- */

/* A ledger's location as sentences show it: never a user or password,
 * whatever the password holds, nor a parameter but host and port. */
static void test_shown_where(void **state)
{
	(void)state;
	static const struct { const char *url, *shown; } cases[] = {
		{"postgresql://u:pa?ss@db/x", "postgresql://db/x"},
		{"postgresql://u:pa#ss@db:5433/x", "postgresql://db:5433/x"},
		{"postgresql://u:p@ss@db/x", "postgresql://db/x"},
		{"postgres://u:pw@db", "postgres://db"},
		{"postgresql://u:pw@db?port=5433&password=s3cret&sslmode=require",
		 "postgresql://db?port=5433"},
		{"postgresql://u:pa/ss@db/x", "postgresql://db/x"},
		{"postgresql://db/x?user=u&password=s3cret&host=h", "postgresql://db/x?host=h"},
		{"postgresql:///x?host=/run/pg&password=p", "postgresql:///x?host=/run/pg"},
		{"postgresql://db/x", "postgresql://db/x"},
		{".toolgate/ledger.db", ".toolgate/ledger.db"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[256];
		tgi_ledger_shown_where(cases[i].url, out, sizeof out);
		if (strcmp(out, cases[i].shown))
			fail_msg("%s: shown as %s, not %s", cases[i].url, out, cases[i].shown);
	}
	char out[64];
	tgi_ledger_shown_where("postgresql://u:s3cret\x01@db/x\n", out, sizeof out);
	assert_null(strstr(out, "s3cret"));
	assert_null(strchr(out, '\n'));
}

#define BINDING "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define EVAL(rest) "{\"eval_run\":{" rest "}}"
#define EVAL_ID "\"id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\""
#define EVAL_TS "\"ts\":\"2026-11-30T03:49:36.123Z\""
#define EVAL_SCORES "\"scores\":{\"tool\":1,\"valid\":1,\"args\":1,\"policy\":1,\"pass\":1}"
#define EVAL_REPORT "\"report\":{}"
#define EVAL_REST "\"cases\":1,\"runs\":1," EVAL_SCORES "," EVAL_REPORT

static void test_parse(void **state)
{
	(void)state;
	static const char op_ok[] =
		"{\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"status\":\"failed\","
		"\"error_kind\":\"timeout\",\"tool\":\"t\",\"idem_scope\":\"p:t:k\","
		"\"idem_state\":\"done\",\"idem_binding\":\"" BINDING "\","
		"\"args\":{\"b\":2,\"a\":1},\"envelope\":{\"op_id\":"
		"\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"x\":0.20999999999999999},"
		"\"started_ms\":5,\"duration_ms\":1.25,\"events\":[{\"ts_ms\":6,\"type\":\"a\","
		"\"stage\":null,\"data\":null},{\"ts_ms\":7,\"type\":\"b\",\"stage\":\"s\","
		"\"data\":{\"k\":1}}]}";
	tgi_ledger_line ln;
	char err[512];
	assert_int_equal(tgi_ledger_parse(op_ok, strlen(op_ok), &ln, err, sizeof err), 0);
	assert_int_equal(ln.kind, TGI_LINE_OP);
	assert_string_equal(ln.op.op_id, "01a22d03-4ed7-713f-b5b3-7dc7159d6c78");
	assert_string_equal(ln.op.args_redacted, "{\"a\":1,\"b\":2}");
	assert_string_equal(ln.op.envelope,
	                    "{\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"x\":0.21}");
	assert_string_equal(ln.idem_state, "done");
	assert_string_equal(ln.idem_binding, BINDING);
	assert_int_equal(ln.op.started_ms, 5);
	assert_true(ln.op.duration_ms == 1.25);
	assert_null(ln.op.call_id);
	assert_int_equal(ln.nev, 2);
	assert_null(ln.ev[0].stage);
	assert_null(ln.ev[0].data);
	assert_string_equal(ln.ev[1].stage, "s");
	assert_int_equal(ln.ev[1].ts_ms, 7);
	tgi_ledger_line_free(&ln);

	static const char ev_ok[] = "{\"event\":{\"ts_ms\":1,\"type\":\"mcp.server.down\"}}";
	assert_int_equal(tgi_ledger_parse(ev_ok, strlen(ev_ok), &ln, err, sizeof err), 0);
	assert_int_equal(ln.kind, TGI_LINE_EVENT);
	assert_int_equal(ln.nev, 1);
	tgi_ledger_line_free(&ln);
	static const char claim_ok[] = "{\"claim\":{\"scope\":\"k\",\"op_id\":"
		"\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"state\":\"in_flight\",\"created_ms\":9}}";
	assert_int_equal(tgi_ledger_parse(claim_ok, strlen(claim_ok), &ln, err, sizeof err), 0);
	assert_int_equal(ln.kind, TGI_LINE_CLAIM);
	assert_string_equal(ln.op.idem_scope, "k");
	assert_string_equal(ln.idem_state, "in_flight");
	assert_null(ln.idem_binding);   /* an export from before bindings came along */
	assert_int_equal(ln.op.started_ms, 9);
	tgi_ledger_line_free(&ln);
	static const char claim_bound[] = "{\"claim\":{\"scope\":\"k\",\"op_id\":"
		"\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\",\"state\":\"unknown\",\"binding\":\""
		BINDING "\",\"created_ms\":9}}";
	assert_int_equal(tgi_ledger_parse(claim_bound, strlen(claim_bound), &ln, err, sizeof err), 0);
	assert_string_equal(ln.idem_binding, BINDING);
	tgi_ledger_line_free(&ln);
	assert_int_equal(tgi_ledger_parse(" \r", 2, &ln, err, sizeof err), 0);
	assert_int_equal(ln.kind, TGI_LINE_BLANK);

	static const char eval_ok[] = "{\"eval_run\":{\"id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\","
		"\"ts\":\"2024-02-29T23:59:59.999Z\",\"provider\":\"scripted\",\"api\":null,"
		"\"model\":\"m\",\"cases\":3,\"runs\":1,\"scores\":{\"tool\":1,\"valid\":0.5,"
		"\"args\":null,\"policy\":0,\"pass\":0.25},\"report\":{\"b\":[1, 2],\"a\":0.1}}}";
	assert_int_equal(tgi_ledger_parse(eval_ok, strlen(eval_ok), &ln, err, sizeof err), 0);
	assert_int_equal(ln.kind, TGI_LINE_EVAL_RUN);
	assert_string_equal(ln.eval.id, "01a22d03-4ed7-713f-b5b3-7dc7159d6c78");
	assert_true(ln.eval.ts_ms == 1709251199999LL);
	assert_string_equal(ln.eval.provider, "scripted");
	assert_null(ln.eval.api);
	assert_null(ln.eval.profile);   /* absent: null */
	assert_string_equal(ln.eval.model, "m");
	assert_true(ln.eval.cases == 3 && ln.eval.runs == 1);
	assert_true(ln.eval.score[0] == 1.0 && ln.eval.score[1] == 0.5 && isnan(ln.eval.score[2]) &&
	            ln.eval.score[3] == 0.0 && ln.eval.score[4] == 0.25);
	assert_string_equal(ln.eval.report, "{\"b\":[1,2],\"a\":0.10000000000000001}");
	tgi_ledger_line_free(&ln);

#define OP(rest) "{\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\"," rest "}"
#define OK_OP "\"status\":\"persisted\",\"started_ms\":1,\"envelope\":{}"
	static const struct { const char *line, *want; } bad[] = {
		{"[1]", "the line: expected a JSON object"},
		{"{\"a\":1", "not JSON"},
		{"{\"a\":1,\"a\":2}", "not JSON"},
		{"{\"x\":1}", "neither an export header"},
		{"{\"toolgate_ledger\":\"1\",\"schema\":1}", "toolgate_ledger: expected"},
		{"{\"toolgate_ledger\":1}", "schema: expected"},
		{"{\"op_id\":\"x\"," OK_OP "}", "op_id: expected a UUID"},
		{OP("\"status\":\"great\",\"started_ms\":1,\"envelope\":{}"), "status: expected"},
		{OP(OK_OP ",\"error_kind\":\"oops\""), "error_kind: expected"},
		{OP(OK_OP ",\"tool\":7"), "tool: expected a string or null, got 7"},
		{OP(OK_OP ",\"args_sha256\":\"ABC\""), "args_sha256: expected 64"},
		{OP(OK_OP ",\"idem_state\":\"done\""), "without an idem_scope"},
		{OP(OK_OP ",\"idem_scope\":\"s\",\"idem_state\":\"maybe\""), "idem_state: expected"},
		{OP(OK_OP ",\"idem_scope\":\"s\",\"idem_binding\":\"ABC\""), "idem_binding: expected 64"},
		{OP(OK_OP ",\"idem_scope\":\"s\",\"idem_binding\":7"), "idem_binding: expected"},
		{OP(OK_OP ",\"idem_binding\":\"" BINDING "\""), "without an idem_scope"},
		{"{\"claim\":{\"scope\":\"k\",\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\","
		 "\"state\":\"unknown\",\"binding\":\"xyz\",\"created_ms\":1}}", "claim.binding: expected"},
		{OP("\"status\":\"persisted\",\"started_ms\":-1,\"envelope\":{}"), "started_ms: expected"},
		{OP("\"status\":\"persisted\",\"started_ms\":1,\"envelope\":[]"), "envelope: expected an object"},
		{OP("\"status\":\"persisted\",\"started_ms\":1,\"envelope\":{\"op_id\":\"other\"}"),
		 "envelope.op_id: expected the op's own op_id"},
		{OP(OK_OP ",\"duration_ms\":\"1\""), "duration_ms: expected"},
		{OP(OK_OP ",\"events\":{}"), "events: expected a list"},
		{OP(OK_OP ",\"events\":[{\"ts_ms\":1}]"), "events[0].type: expected a non-empty string"},
		{OP(OK_OP ",\"events\":[{\"ts_ms\":1,\"type\":\"a\"},7]"), "events[1]: expected an object"},
		{"{\"event\":{\"type\":\"a\"}}", "event.ts_ms: expected a time"},
		{"{\"event\":{\"ts_ms\":1,\"type\":\"a\",\"stage\":[]}}", "event.stage: expected"},
		{"{\"claim\":{\"scope\":\"k\",\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\","
		 "\"state\":\"done\",\"created_ms\":1}}", "claim.state: expected"},
		{"{\"claim\":{\"scope\":\"\",\"op_id\":\"01a22d03-4ed7-713f-b5b3-7dc7159d6c78\","
		 "\"state\":\"unknown\",\"created_ms\":1}}", "claim.scope: expected a non-empty"},
		{"{\"claim\":{\"scope\":\"k\",\"op_id\":7,\"state\":\"unknown\",\"created_ms\":1}}",
		 "claim.op_id: expected a UUID"},
		{"{\"claim\":[]}", "claim: expected an object"},
		{"{\"x\":1}", "nor an eval run"},
		{"{\"eval_run\":[]}", "eval_run: expected an object"},
		{EVAL("\"id\":\"x\"," EVAL_TS "," EVAL_REST), "eval_run.id: expected a UUID"},
		{EVAL(EVAL_ID "," EVAL_REST), "eval_run.ts: expected a time"},
		{EVAL(EVAL_ID ",\"ts\":1790000000000," EVAL_REST), "eval_run.ts: expected a time"},
		{EVAL(EVAL_ID ",\"ts\":\"2026-02-30T00:00:00.000Z\"," EVAL_REST), "eval_run.ts"},
		{EVAL(EVAL_ID ",\"ts\":\"2026-11-30T24:00:00.000Z\"," EVAL_REST), "eval_run.ts"},
		{EVAL(EVAL_ID ",\"ts\":\"2026-11-30T03:49:36Z\"," EVAL_REST), "eval_run.ts"},
		{EVAL(EVAL_ID ",\"ts\":\"1969-12-31T23:59:59.999Z\"," EVAL_REST), "eval_run.ts"},
		{EVAL(EVAL_ID ",\"ts\":\"2026-11-30 03:49:36.123Z\"," EVAL_REST), "eval_run.ts"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"model\":7," EVAL_REST),
		 "eval_run.model: expected a string or null, got 7"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":-1,\"runs\":1," EVAL_SCORES "," EVAL_REPORT),
		 "eval_run.cases: expected a count"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1.5," EVAL_SCORES "," EVAL_REPORT),
		 "eval_run.runs: expected a count"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1," EVAL_REPORT),
		 "eval_run.scores: expected an object"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1,\"scores\":{\"tool\":1,"
		      "\"valid\":1,\"args\":1,\"policy\":1}," EVAL_REPORT),
		 "eval_run.scores.pass: expected a rate from 0 to 1 or null, got nothing"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1,\"scores\":{\"tool\":-0.5,"
		      "\"valid\":1,\"args\":1,\"policy\":1,\"pass\":1}," EVAL_REPORT),
		 "eval_run.scores.tool: expected a rate"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1,\"scores\":{\"tool\":\"1\","
		      "\"valid\":1,\"args\":1,\"policy\":1,\"pass\":1}," EVAL_REPORT),
		 "eval_run.scores.tool: expected a rate"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1," EVAL_SCORES ",\"report\":\"{}\""),
		 "eval_run.report: expected an object"},
		{EVAL(EVAL_ID "," EVAL_TS ",\"cases\":1,\"runs\":1," EVAL_SCORES),
		 "eval_run.report: expected an object"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad); i++) {
		err[0] = '\0';
		memset(&ln, 0x5a, sizeof ln);
		if (tgi_ledger_parse(bad[i].line, strlen(bad[i].line), &ln, err, sizeof err) != -1)
			fail_msg("case %zu (%s) was accepted", i, bad[i].line);
		if (!strstr(err, bad[i].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, bad[i].want);
		assert_null(ln.root);
		assert_null(ln.ev);
		for (const char *p = err; *p; p++)
			assert_true((unsigned char)*p >= 0x20);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_shown_where),
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lone_events_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_line_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_an_export, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_since, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eval_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eval_present_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eval_since, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eval_bad_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_format_1_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_from_env, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
