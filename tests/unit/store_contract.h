/*
 * store_contract.h — the store contract (src/store/store.h), written once
 * and run on each backend, as SQLite runs one test body under several
 * permutations: test_store.c runs it on an SQLite ledger, test_store_pg.c
 * on a PostgreSQL one.  What only one backend does (SQLite's files, WAL and
 * checkpoints; PostgreSQL's connections lost and found again) stays in the
 * program of that backend.
 *
 * Covered, against store.h through its functions: a call's record read
 * back through the log filters (order, exact `since` bounds, statuses in
 * and out of the status index, events of filtered ops, sessions), a
 * record all or nothing (a refused one leaves no row, no event, no seq),
 * event seqs as the store gave them and in commit order as a follower sees
 * them while several processes write; loop windows and manifests; rate-limit
 * buckets (full when new, refilled at the rate up to the burst, a clock
 * gone back refilling nothing, one bucket for every handle and process);
 * watches woken by another process; migrations one at a time, a newer
 * schema and another program's tables refused, many processes opening one
 * new ledger; the idempotency claim lifecycle (claimed, in flight, conflict,
 * done and replayed, released, unknown), dead owners (a forked child that
 * dies holding a claim, a zombie), operator resolution, unknown outcomes
 * listed, the owner named by hostname/boot id/pid namespace, one winner
 * among claimers (threads and processes); approvals with expiry, single
 * use (across processes), a waiter using its own approval, plans and
 * reasons; MACs on the rows that carry authority (approvals, claims,
 * buckets, pins edited by hand carry none); pins; conversations; events of
 * no call and after a call; stats; export (from one snapshot); eval runs;
 * a version 4 and a version 5 ledger upgraded in place; the ledger's
 * identity under another machine's key, rebound, or missing.
 *
 * The program that includes this file defines first:
 *   struct fx   with at least `char where[]` (the ledger: a path or a URL)
 *               and `tgi_store *s` (open on it, or NULL)
 *   CX_PG       1 for PostgreSQL (a shared store, on the server's clock),
 *               0 for SQLite
 * and, anywhere after it, the functions declared under "the backend" below.
 * Raw SQL here is plain SQL that both databases read alike (a scope is
 * named by its digest, computed here).
 *
 * Owns: nothing outside the ledger its fixture made.  Must not: reach into
 * a store's insides; the two MAC helpers of store/impl.h are used only to
 * plant rows as the store would write them.  Children of fork() report
 * through exit codes and pipes and leave with _exit(), never through cmocka.
 */
#ifndef TG_STORE_CONTRACT_H
#define TG_STORE_CONTRACT_H

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/impl.h"   /* tgi_mac_bucket, tgi_mac_idem: rows planted by hand */
#include "store/store.h"
#include "util/util.h"

#define DIGEST_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIGEST_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* ---- the backend: defined by the program that includes this file ---- */

/* A new ledger open in f->s (setup_store), or a new place for one with
 * nothing there yet, f->s NULL (setup_empty); teardown removes either. */
static int setup_store(void **state);
static int setup_empty(void **state);
static int teardown(void **state);

/* Raw SQL on the ledger, on a connection of the test's own: the first
 * value of the first row as a number (-1: no row, or NULL), as text ("":
 * none), or run for its effect (several statements allowed).  A failed
 * statement fails the test. */
static long long cx_num(struct fx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cx_text(struct fx *f, char *out, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void cx_exec(struct fx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Is there a table, an index, or a column of table, of that name? */
static int cx_has_table(struct fx *f, const char *name);
static int cx_has_index(struct fx *f, const char *name);
static int cx_has_column(struct fx *f, const char *table, const char *column);

/* The schema version the database itself records (as no handle reads it),
 * asserted to be v, each migration recorded once. */
static void cx_schema_is(struct fx *f, int v);
/* Record a schema one version ahead of this program (no handle open). */
static void cx_schema_ahead(struct fx *f);
/* The database's own consistency check, where it has one. */
static void cx_integrity(struct fx *f);

/* ---- helpers ---- */

/* What the ledger keeps of scope (tgi_scope_digest): its idem row's name
 * in SQL.  Four at a time. */
static const char *dg(const char *scope)
{
	static char out[4][TGI_SCOPE_DIGEST_LEN + 1];
	static int i;
	char *o = out[i++ % 4];
	tgi_scope_digest(scope, o);
	return o;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait for a child and return its exit code (or 128 + signal). */
static int wait_child(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Read what a child wrote to a pipe until it closes it. */
static void read_pipe(int fd, char *out, size_t cap)
{
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, out + n, cap - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	close(fd);
}

/* Close f->s and open the ledger again (what outlives a handle). */
static void cx_reopen(struct fx *f)
{
	char err[1024];
	tgi_store_close(f->s);
	f->s = NULL;
	if (tgi_store_open(f->where, 0, &f->s, err, sizeof err) < 0)
		fail_msg("open again: %s", err);
}

/* A handle of its own on the fixture's ledger. */
static tgi_store *cx_open(const struct fx *f)
{
	char err[1024];
	tgi_store *s = NULL;
	if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	return s;
}

/* Record one call: four events, an envelope naming op and status. */
static int record(tgi_store *s, const char *op_id, const char *tool, const char *status,
                  const char *session, int64_t started, const char *scope, tgi_idem_settle how,
                  char *err, size_t errlen)
{
	char env[256];
	snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"%s\",\"output\":\"out-%s\"}", op_id,
	         status, tool ? tool : "");
	json_t *d = json_pack("{s:s}", "tool", tool ? tool : "");
	tgi_op_record op = {
		.op_id = op_id, .call_id = "call_1", .session = session, .tool = tool,
		.principal = "local", .status = status, .idem_scope = scope,
		.args_redacted = "{\"path\":\"a\"}", .args_sha256 = "ab12", .envelope = env,
		.started_ms = started, .duration_ms = 1.5,
	};
	tgi_event ev[4] = {
		{ "tool.call.received", "decode", d, started, 0 },
		{ "tool.call.started", "execute", NULL, started + 1, 0 },
		{ "tool.call.progress", NULL, d, started + 2, 0 },
		{ status[0] == 'p' ? "tool.call.persisted" : "tool.call.denied", "persist", d, started + 3, 0 },
	};
	int rc = tgi_store_record(s, &op, ev, 4, scope, how, err, errlen);
	json_decref(d);
	return rc;
}

/* A UUIDv7 as if made at unix ms `ms` (the gate makes an op's id just after
 * reading its start time, so the two agree). */
static void uuid_at(int64_t ms, char out[37])
{
	char t[13];
	tgi_uuidv7(out);
	snprintf(t, sizeof t, "%012llx", (unsigned long long)ms);
	memcpy(out, t, 8);
	memcpy(out + 9, t + 8, 4);
}

static void record_ok(tgi_store *s, const char *op_id, const char *tool, const char *status,
                      const char *session, int64_t started)
{
	char err[512] = "";
	int rc = record(s, op_id, tool, status, session, started, NULL, TGI_SETTLE_NONE, err, sizeof err);
	if (rc)
		fail_msg("record: %s", err);
}

static tgi_idem_state claim_b(tgi_store *s, const char *scope, const char *op_id,
                              const char *binding, int lease_s, tgi_idem_info *info)
{
	char err[512] = "";
	if (tgi_store_idem_claim(s, scope, op_id, binding, lease_s, info, err, sizeof err) < 0)
		fail_msg("claim %s: %s", scope, err);
	return info->state;
}

static tgi_idem_state claim(tgi_store *s, const char *scope, const char *op_id, int lease_s,
                            tgi_idem_info *info)
{
	return claim_b(s, scope, op_id, NULL, lease_s, info);
}

static size_t count_ops(tgi_store *s, const tgi_log_filter *flt)
{
	char err[512];
	json_t *a;
	assert_int_equal(tgi_store_ops(s, flt, &a, err, sizeof err), 0);
	size_t n = json_array_size(a);
	json_decref(a);
	return n;
}

/* The envelope of op_id, as the log reads it back (caller decrefs). */
static json_t *envelope_of(tgi_store *s, const char *op_id)
{
	char err[512];
	json_t *a = NULL;
	tgi_log_filter flt = { .op_id = op_id };
	assert_int_equal(tgi_store_ops(s, &flt, &a, err, sizeof err), 0);
	assert_int_equal(json_array_size(a), 1);
	json_t *env = json_incref(json_object_get(json_array_get(a, 0), "envelope"));
	json_decref(a);
	return env;
}

/* A ledger from before identities that holds records: refused as foreign
 * at open (its schema migrated all the same), read when that is allowed,
 * then adopted. */
static void open_adopting(struct fx *f)
{
	char err[1024];
	tgi_ledger_rows n;
	assert_int_equal(tgi_store_open(f->where, 0, &f->s, err, sizeof err), -1);
	if (!strstr(err, "holds records but has no identity") || !strstr(err, "toolgate ledger adopt"))
		fail_msg("not refused as foreign: %s", err);
	cx_schema_is(f, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(tgi_store_open(f->where, TGI_STORE_FOREIGN_OK, &f->s, err, sizeof err), 0);
	assert_non_null(tgi_store_foreign(f->s));
	assert_null(tgi_store_mask_key(f->s));
	assert_int_equal(tgi_store_adopt(f->s, NULL, &n, err, sizeof err), 0);
	assert_true(n.ops >= 1 || n.approvals >= 1);
	assert_null(tgi_store_foreign(f->s));
	assert_non_null(tgi_store_mask_key(f->s));
}

/* ---- the handle ---- */

/* A new ledger: of its kind, at the latest schema, nothing transient; a
 * second handle finds it current and leaves it so. */
static void test_open_new(void **state)
{
	struct fx *f = *state;
	char err[512];
	int v = -1;
	assert_string_equal(tgi_store_kind(f->s), CX_PG ? "postgres" : "sqlite");
	assert_int_equal(tgi_store_shared(f->s), CX_PG);
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(tgi_store_is_url(f->where), CX_PG);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	assert_null(tgi_store_foreign(f->s));
	assert_non_null(tgi_store_mask_key(f->s));
	tgi_store *s2 = cx_open(f);
	tgi_store_close(s2);
	cx_schema_is(f, TGI_STORE_SCHEMA_VERSION);
	tgi_store_close(NULL); /* a no-op */
}

/* ---- ops and events ---- */

static void test_record_read_back(void **state)
{
	struct fx *f = *state;
	char a[37], b[37], c[37], err[512], iso[32];
	json_t *v;
	int64_t t0 = 1760000000000;

	uuid_at(t0, a);
	uuid_at(t0 + 10, b);
	uuid_at(t0 + 20, c);
	record_ok(f->s, a, "read_file", "persisted", "s1", t0);
	record_ok(f->s, b, "write_file", "denied", "s1", t0 + 10);
	record_ok(f->s, c, "read_file", "invalid", "s2", t0 + 20);

	/* everything, oldest first, with every field */
	assert_int_equal(tgi_store_ops(f->s, NULL, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	json_t *o = json_array_get(v, 0);
	assert_string_equal(json_string_value(json_object_get(o, "op_id")), a);
	assert_string_equal(json_string_value(json_object_get(o, "call_id")), "call_1");
	assert_string_equal(json_string_value(json_object_get(o, "session")), "s1");
	assert_string_equal(json_string_value(json_object_get(o, "tool")), "read_file");
	assert_string_equal(json_string_value(json_object_get(o, "principal")), "local");
	assert_string_equal(json_string_value(json_object_get(o, "status")), "persisted");
	assert_true(json_is_null(json_object_get(o, "error_kind")));
	tgi_iso8601(t0, iso);
	assert_string_equal(json_string_value(json_object_get(o, "started")), iso);
	assert_true(json_real_value(json_object_get(o, "duration_ms")) == 1.5);
	assert_string_equal(json_string_value(json_object_get(o, "args_sha256")), "ab12");
	json_t *env = json_object_get(o, "envelope");
	assert_true(json_is_object(env));
	assert_string_equal(json_string_value(json_object_get(env, "op_id")), a);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 2), "op_id")), c);
	json_decref(v);

	/* filters */
	tgi_log_filter flt = { .tool = "read_file" };
	assert_int_equal(count_ops(f->s, &flt), 2);
	flt = (tgi_log_filter){ .status = "denied" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .since_ms = t0 + 10 };
	assert_int_equal(count_ops(f->s, &flt), 2);
	flt = (tgi_log_filter){ .op_id = c };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .tool = "read_file", .status = "invalid" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .tool = "no_such_tool" };
	assert_int_equal(count_ops(f->s, &flt), 0);
	/* a limit keeps the newest, still oldest first */
	flt = (tgi_log_filter){ .limit = 2 };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), b);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "op_id")), c);
	json_decref(v);

	/* events: all, in sequence, with parsed data and ISO times */
	assert_int_equal(tgi_store_events(f->s, NULL, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 12);
	json_t *e0 = json_array_get(v, 0);
	assert_string_equal(json_string_value(json_object_get(e0, "type")), "tool.call.received");
	assert_string_equal(json_string_value(json_object_get(e0, "stage")), "decode");
	assert_string_equal(json_string_value(json_object_get(e0, "op_id")), a);
	assert_string_equal(json_string_value(json_object_get(e0, "ts")), iso);
	assert_string_equal(json_string_value(json_object_get(json_object_get(e0, "data"), "tool")),
	                    "read_file");
	json_t *e1 = json_array_get(v, 1);
	assert_true(json_is_null(json_object_get(e1, "data")));
	assert_true(json_is_null(json_object_get(json_array_get(v, 2), "stage")));
	json_int_t seq4 = json_integer_value(json_object_get(json_array_get(v, 3), "seq"));
	for (size_t i = 1; i < 12; i++)
		assert_true(json_integer_value(json_object_get(json_array_get(v, i), "seq")) >
		            json_integer_value(json_object_get(json_array_get(v, i - 1), "seq")));
	json_decref(v);

	flt = (tgi_log_filter){ .op_id = b };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);
	flt = (tgi_log_filter){ .tool = "write_file" };   /* joins ops */
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), b);
	json_decref(v);
	flt = (tgi_log_filter){ .status = "invalid" };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);
	/* --follow: after a seq; with a limit, the next ones after it */
	assert_int_equal(tgi_store_events(f->s, NULL, seq4, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 8);
	json_decref(v);
	flt = (tgi_log_filter){ .limit = 2 };
	assert_int_equal(tgi_store_events(f->s, &flt, seq4, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 0), "seq")), seq4 + 1);
	json_decref(v);
	flt = (tgi_log_filter){ .limit = 3 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 2), "op_id")), c);
	json_decref(v);

	/* each event carries its op's columns */
	assert_int_equal(tgi_store_events(f->s, NULL, 0, &v, err, sizeof err), 0);
	e0 = json_array_get(v, 0);
	assert_string_equal(json_string_value(json_object_get(e0, "session")), "s1");
	assert_string_equal(json_string_value(json_object_get(e0, "principal")), "local");
	assert_string_equal(json_string_value(json_object_get(e0, "tool")), "read_file");
	assert_string_equal(json_string_value(json_object_get(e0, "status")), "persisted");
	assert_true(json_is_null(json_object_get(e0, "error_kind")));
	assert_true(json_is_null(json_object_get(e0, "message"))); /* its envelope has no error */
	assert_string_equal(json_string_value(json_object_get(e0, "args")), "{\"path\":\"a\"}");
	json_t *e8 = json_array_get(v, 8);
	assert_string_equal(json_string_value(json_object_get(e8, "session")), "s2");
	assert_string_equal(json_string_value(json_object_get(e8, "status")), "invalid");
	json_decref(v);

	/* sessions: ops and events of one session, alone or with other filters */
	flt = (tgi_log_filter){ .session = "s1" };
	assert_int_equal(count_ops(f->s, &flt), 2);
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 8);
	for (size_t i = 0; i < 8; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(v, i), "session")), "s1");
	json_decref(v);
	flt = (tgi_log_filter){ .session = "s2", .tool = "read_file" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .session = "s2", .tool = "write_file" };
	assert_int_equal(count_ops(f->s, &flt), 0);
	flt = (tgi_log_filter){ .session = "s1", .since_ms = t0 + 1 };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .session = "nope" };
	assert_int_equal(count_ops(f->s, &flt), 0);
	flt = (tgi_log_filter){ .session = "s1", .limit = 3 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(v, i), "op_id")), b);
	json_decref(v);
	flt = (tgi_log_filter){ .session = "s2" };
	assert_int_equal(tgi_store_events(f->s, &flt, seq4 + 4, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);

	/* sessions: first/last seen and call count */
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's1'"), 2);
	assert_int_equal(cx_num(f, "SELECT first_ms FROM sessions WHERE id = 's1'"), t0);
	assert_int_equal(cx_num(f, "SELECT last_ms FROM sessions WHERE id = 's1'"), t0 + 10);
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's2'"), 1);
}

static void test_record_refusals(void **state)
{
	struct fx *f = *state;
	char a[37], err[512];

	tgi_uuidv7(a);
	record_ok(f->s, a, "read_file", "persisted", NULL, 1000);
	/* no session: no sessions row */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM sessions"), 0);

	/* one row per op: a second record is refused and changes nothing */
	assert_int_equal(record(f->s, a, "read_file", "persisted", "s9", 2000, NULL, TGI_SETTLE_NONE,
	                        err, sizeof err), -1);
	assert_non_null(strstr(err, "already in the ledger"));
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events"), 4);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM sessions"), 0);

	/* op ids are UUIDs */
	assert_int_equal(record(f->s, "../etc/passwd", "t", "persisted", NULL, 1, NULL,
	                        TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "'../etc/passwd' is not a UUID"));

	/* status and envelope are required; an event needs a type */
	char b[37];
	tgi_uuidv7(b);
	tgi_op_record op = { .op_id = b, .status = "persisted" };
	assert_int_equal(tgi_store_record(f->s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "no envelope"));
	op.envelope = "{}";
	tgi_event ev = { .type = NULL };
	assert_int_equal(tgi_store_record(f->s, &op, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "has no type"));
	assert_int_equal(tgi_store_record(f->s, NULL, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);

	/* more events than one statement takes are all written, in order */
	tgi_event many[19];
	for (int i = 0; i < 19; i++)
		many[i] = (tgi_event){ .type = "tool.call.progress", .ts_ms = 5000 + i };
	assert_int_equal(tgi_store_record(f->s, &op, many, 19, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events WHERE op_id = '%s'", b), 19);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events e1 JOIN events e2 ON e2.seq = e1.seq + 1"
	                           " WHERE e1.op_id = '%s' AND e2.ts_ms = e1.ts_ms + 1", b), 18);
}

/* A record is all or nothing: the same op again is refused with nothing of
 * it written (events, seqs, the session's count, a claim, a bucket), and
 * the next record's seqs follow on without a gap. */
static void test_record_atomic(void **state)
{
	struct fx *f = *state;
	char err[512], op[37], op2[37];
	int64_t last = 0, after = 0;
	tgi_uuidv7(op);
	tgi_op_record r = { .op_id = op, .call_id = "call_1", .session = "s1", .tool = "echo",
	                    .principal = "ci", .status = "persisted", .args_redacted = "{\"x\":1}",
	                    .args_sha256 = DIGEST_A, .envelope = "{}", .started_ms = tgi_unix_ms(),
	                    .duration_ms = 1.5 };
	tgi_event ev[3] = {
		{ .type = "tool.call.received", .ts_ms = r.started_ms },
		{ .type = "tool.call.stage", .stage = "decide", .ts_ms = r.started_ms },
		{ .type = "tool.call.persisted", .ts_ms = r.started_ms },
	};
	assert_int_equal(tgi_store_record(f->s, &r, ev, 3, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	assert_int_equal(ev[0].seq, 1);
	assert_int_equal(ev[1].seq, 2);
	assert_int_equal(ev[2].seq, 3);
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 3);

	assert_int_equal(tgi_store_record(f->s, &r, ev, 3, "key:x", TGI_SETTLE_DONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "already in the ledger"));
	assert_int_equal(tgi_store_transient(f->s), 0);
	assert_int_equal(ev[0].seq, 0);
	assert_int_equal(ev[2].seq, 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events"), 3);
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's1'"), 1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM rate_buckets"), 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem"), 0);
	if (CX_PG)
		assert_int_equal(cx_num(f, "SELECT last FROM event_seq"), 3);
	tgi_uuidv7(op2);
	r.op_id = op2;
	r.manifest = DIGEST_B;
	assert_int_equal(tgi_store_record(f->s, &r, ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	assert_int_equal(ev[0].seq, 4);
	assert_int_equal(tgi_store_last_seq(f->s, &after, err, sizeof err), 0);
	assert_int_equal(after, 4);
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's1'"), 2);
	/* a record keeps no rate-limit bucket: tokens are taken by bucket_take */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM rate_buckets"), 0);
}

/* The log filters on a ledger whose rows were recorded out of order: rows
 * come back in op_id (start time) order, `since` bounds are exact to the
 * millisecond, --status works for the statuses its index keeps and for
 * `persisted`, which it leaves out, and event seqs only grow. */
static void test_log_filters(void **state)
{
	struct fx *f = *state;
	static const struct {
		int64_t     at;
		const char *tool, *status, *session;
	} rows[] = {
		{ 30, "read_file", "persisted", "sa" }, { 10, "shell", "failed", "sb" },
		{ 20, "read_file", "denied", "sa" },    { 40, "shell", "persisted", "sb" },
		{ 41, "read_file", "persisted", "sa" }, { 40, "list_dir", "invalid", NULL },
	};
	enum { N = sizeof rows / sizeof rows[0] };
	char ids[N][37], err[512];
	int64_t t0 = tgi_unix_ms() - 60000;
	json_t *v;

	for (int i = 0; i < N; i++) {
		uuid_at(t0 + rows[i].at, ids[i]);
		record_ok(f->s, ids[i], rows[i].tool, rows[i].status, rows[i].session, t0 + rows[i].at);
	}
	/* oldest first, whatever the order of recording */
	assert_int_equal(tgi_store_ops(f->s, NULL, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), N);
	for (size_t i = 1; i < N; i++)
		assert_true(strcmp(json_string_value(json_object_get(json_array_get(v, i - 1), "op_id")),
		                   json_string_value(json_object_get(json_array_get(v, i), "op_id"))) < 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), ids[1]);
	json_decref(v);

	/* since: inclusive, to the millisecond; 0 and negative mean all */
	static const struct {
		int64_t since;
		size_t  n;
	} since[] = { { 10, 6 }, { 11, 5 }, { 20, 5 }, { 21, 4 }, { 40, 3 }, { 41, 1 }, { 42, 0 } };
	for (size_t i = 0; i < TGI_ARRAY_LEN(since); i++) {
		tgi_log_filter flt = { .since_ms = t0 + since[i].since };
		if (count_ops(f->s, &flt) != since[i].n)
			fail_msg("since +%lld: %zu rows, want %zu", (long long)since[i].since,
			         count_ops(f->s, &flt), since[i].n);
	}
	tgi_log_filter flt = { .since_ms = -5 };
	assert_int_equal(count_ops(f->s, &flt), N);
	flt = (tgi_log_filter){ .since_ms = INT64_MAX };
	assert_int_equal(count_ops(f->s, &flt), 0);
	/* since with a limit: the newest of those, oldest first */
	flt = (tgi_log_filter){ .since_ms = t0 + 20, .limit = 2 };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "op_id")), ids[4]);
	json_decref(v);

	/* status: kept in the index (failed, denied, invalid) or left out (persisted) */
	flt = (tgi_log_filter){ .status = "persisted" };
	assert_int_equal(count_ops(f->s, &flt), 3);
	flt = (tgi_log_filter){ .status = "failed" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .status = "pending" };
	assert_int_equal(count_ops(f->s, &flt), 0);
	flt = (tgi_log_filter){ .status = "persisted", .tool = "shell" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .status = "denied", .tool = "read_file", .since_ms = t0 + 20 };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .status = "denied", .tool = "read_file", .since_ms = t0 + 21 };
	assert_int_equal(count_ops(f->s, &flt), 0);
	flt = (tgi_log_filter){ .tool = "read_file", .limit = 1 };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), ids[4]);
	json_decref(v);
	/* events follow their ops' filters */
	flt = (tgi_log_filter){ .status = "persisted" };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 12);
	json_decref(v);
	flt = (tgi_log_filter){ .status = "invalid", .tool = "list_dir" };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);
	/* the newest events of a filter's ops, whether enough are among the
	 * newest events or not, and after a seq (--follow) */
	flt = (tgi_log_filter){ .tool = "read_file", .limit = 2 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	json_int_t s0 = json_integer_value(json_object_get(json_array_get(v, 0), "seq"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 1), "seq")), s0 + 1);
	for (size_t i = 0; i < 2; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(v, i), "op_id")), ids[4]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "type")),
	                    "tool.call.persisted");
	json_decref(v);
	flt = (tgi_log_filter){ .tool = "list_dir", .limit = 10 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);
	flt = (tgi_log_filter){ .tool = "shell", .status = "failed", .limit = 3 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 2), "op_id")), ids[1]);
	json_decref(v);
	flt = (tgi_log_filter){ .tool = "shell" };
	assert_int_equal(tgi_store_events(f->s, &flt, s0 - 8, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4); /* row 3's, recorded just before row 4 */
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), ids[3]);
	json_decref(v);
	/* sessions: in op_id order, with since and status, and their newest
	 * events whether found among the newest events or through the ops */
	flt = (tgi_log_filter){ .session = "sa" };
	assert_int_equal(tgi_store_ops(f->s, &flt, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), ids[2]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 2), "op_id")), ids[4]);
	json_decref(v);
	flt = (tgi_log_filter){ .session = "sa", .since_ms = t0 + 21 };
	assert_int_equal(count_ops(f->s, &flt), 2);
	flt = (tgi_log_filter){ .session = "sb", .status = "failed" };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .session = "sa", .limit = 2 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 0), "seq")), s0);
	json_decref(v);
	flt = (tgi_log_filter){ .session = "sb", .limit = 10 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 8);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "op_id")), ids[1]);
	json_decref(v);

	/* seqs only grow, also after a failed (rolled back) record */
	int64_t top = cx_num(f, "SELECT max(seq) FROM events");
	assert_int_equal(record(f->s, ids[0], "t", "persisted", NULL, t0, NULL, TGI_SETTLE_NONE, err,
	                        sizeof err), -1);
	char e[37];
	tgi_uuidv7(e);
	record_ok(f->s, e, "t", "persisted", NULL, t0 + 50);
	assert_int_equal(cx_num(f, "SELECT min(seq) FROM events WHERE seq > (SELECT max(seq) - 4"
	                           " FROM events)"), top + 1);
}

/* Every event a record writes gets its seq, the one read back. */
static void test_record_sets_seqs(void **state)
{
	struct fx *f = *state;
	char a[37], b[37], err[512];
	tgi_event ev[19];
	json_t *v;
	int64_t last = -1;

	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 0);
	uuid_at(1760000000000, a);
	uuid_at(1760000000001, b);
	/* more than one INSERT's worth: the seqs run on across batches */
	for (int i = 0; i < 19; i++)
		ev[i] = (tgi_event){ .type = "tool.call.progress", .ts_ms = 1760000000000 + i, .seq = -1 };
	tgi_op_record op = { .op_id = a, .tool = "shell", .status = "persisted", .envelope = "{}",
	                     .started_ms = 1760000000000 };
	assert_int_equal(tgi_store_record(f->s, &op, ev, 19, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	record_ok(f->s, b, "read_file", "persisted", NULL, 1760000000001);
	tgi_event more[3] = { { "tool.call.received", "decode", NULL, 1, -1 },
	                      { "tool.call.denied", "persist", NULL, 2, -1 },
	                      { "tool.call.progress", NULL, NULL, 3, -1 } };
	char c[37];
	uuid_at(1760000000002, c);
	op = (tgi_op_record){ .op_id = c, .tool = "shell", .status = "denied", .envelope = "{}",
	                      .started_ms = 1760000000002 };
	assert_int_equal(tgi_store_record(f->s, &op, more, 3, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);

	tgi_log_filter flt = { .op_id = a };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 19);
	for (size_t i = 0; i < 19; i++) {
		json_t *e = json_array_get(v, i);
		assert_int_equal(json_integer_value(json_object_get(e, "seq")), ev[i].seq);
	}
	json_decref(v);
	flt = (tgi_log_filter){ .op_id = c };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *e = json_array_get(v, i);
		assert_int_equal(json_integer_value(json_object_get(e, "seq")), more[i].seq);
		assert_string_equal(json_string_value(json_object_get(e, "type")), more[i].type);
	}
	json_decref(v);
	assert_int_equal(more[0].seq, ev[18].seq + 5); /* b's four events came between */
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, more[2].seq);

	/* a record that fails leaves no seq behind */
	tgi_event again[2] = { { "tool.call.received", "decode", NULL, 1, -1 },
	                       { "tool.call.persisted", "persist", NULL, 2, -1 } };
	assert_int_equal(tgi_store_record(f->s, &op, again, 2, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_int_equal(again[0].seq, 0);
	assert_int_equal(again[1].seq, 0);
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, more[2].seq);
}

/* A call's message comes from its envelope's error; an envelope that is not
 * JSON gives none instead of failing the read. */
static void test_events_message(void **state)
{
	struct fx *f = *state;
	char a[37], b[37], err[512];
	json_t *v;

	uuid_at(1760000000000, a);
	uuid_at(1760000000001, b);
	tgi_event ev = { "tool.call.denied", "persist", NULL, 1760000000000, 0 };
	tgi_op_record op = {
		.op_id = a, .session = "s", .tool = "shell", .principal = "dev", .status = "denied",
		.error_kind = "not_permitted", .args_redacted = "{\"command\":\"rm -rf /\"}",
		.envelope = "{\"error\":{\"kind\":\"not_permitted\",\"message\":\"denied by rule; do not retry\"}}",
		.started_ms = 1760000000000,
	};
	assert_int_equal(tgi_store_record(f->s, &op, &ev, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);
	tgi_event ev2 = { "tool.call.denied", "persist", NULL, 1760000000001, 0 };
	op.op_id = b;
	op.envelope = "{not json";
	assert_int_equal(tgi_store_record(f->s, &op, &ev2, 1, NULL, TGI_SETTLE_NONE, err, sizeof err), 0);

	assert_int_equal(tgi_store_events(f->s, NULL, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	json_t *e = json_array_get(v, 0);
	assert_string_equal(json_string_value(json_object_get(e, "message")), "denied by rule; do not retry");
	assert_string_equal(json_string_value(json_object_get(e, "error_kind")), "not_permitted");
	assert_string_equal(json_string_value(json_object_get(e, "principal")), "dev");
	assert_string_equal(json_string_value(json_object_get(e, "args")), "{\"command\":\"rm -rf /\"}");
	assert_true(json_is_null(json_object_get(json_array_get(v, 1), "message")));
	json_decref(v);
	tgi_log_filter flt = { .status = "denied", .limit = 5 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 2);
	json_decref(v);
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
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			char err[512], op[37];
			tgi_store *s = NULL;
			if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
				_exit(1);
			for (int i = 0; i < WRITES; i++) {
				tgi_uuidv7(op);
				tgi_op_record r = { .op_id = op, .session = "sx", .tool = "echo",
				                    .principal = "ci", .status = "persisted", .envelope = "{}",
				                    .started_ms = tgi_unix_ms() };
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
	assert_int_equal(cx_num(f, "SELECT max(seq) FROM events"), expect);
	assert_int_equal(cx_num(f, "SELECT count(DISTINCT seq) FROM events"), expect);
	/* each record's events are consecutive, in its order */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM (SELECT op_id FROM events GROUP BY op_id"
	                           " HAVING max(seq) - min(seq) + 1 <> count(*)) x"), 0);
}

/* ---- what middleware keeps ---- */

static void record_mw(tgi_store *s, const char *op_id, const char *session, const char *principal,
                      int64_t at, const char *loop, const char *manifest)
{
	char err[512] = "";
	tgi_op_record op = { .op_id = op_id, .session = session, .tool = "read_file",
	                     .principal = principal, .status = "persisted", .envelope = "{}",
	                     .started_ms = at, .loop = loop, .manifest = manifest };
	if (tgi_store_record(s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err) < 0)
		fail_msg("record: %s", err);
}

/* The entries of a window, newest first, joined by spaces. */
static void window(tgi_store *s, const char *session, size_t limit, char *out, size_t cap)
{
	char err[512] = "";
	tgi_strv w = { 0 };
	if (tgi_store_loop_window(s, session, limit, &w, err, sizeof err) < 0)
		fail_msg("loop window: %s", err);
	out[0] = '\0';
	for (size_t i = 0; i < w.n; i++)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "", w.v[i]);
	tgi_strv_free(&w);
}

/* Loop windows: per session, whoever the principal, newest first (by when
 * the call started, not when it was recorded), at most limit, calls without
 * an entry skipped; calls without a session are in no window. */
static void test_loop_windows(void **state)
{
	struct fx *f = *state;
	static const struct {
		int64_t     at;
		const char *session, *principal, *loop;
	} rows[] = {
		{ 1, "s1", "dev", "L1" }, { 3, "s1", "dev", "L3" }, { 2, "s1", "dev", "L2" },
		{ 4, "s1", "dev", NULL }, { 5, "s1", "ops", "L5" }, { 6, "s2", "dev", "M6" },
		{ 7, NULL, "dev", "D7" }, { 8, NULL, "ci", "C8" },  { 9, NULL, "dev", "D9" },
		{ 10, NULL, NULL, "N10" }, { 11, NULL, "dev", NULL },
	};
	char id[37], got[256], err[512];
	int64_t t0 = 1760000000000;

	for (size_t i = 0; i < TGI_ARRAY_LEN(rows); i++) {
		uuid_at(t0 + rows[i].at, id);
		record_mw(f->s, id, rows[i].session, rows[i].principal, t0 + rows[i].at, rows[i].loop,
		          NULL);
	}
	window(f->s, "s1", 30, got, sizeof got);
	assert_string_equal(got, "L5 L3 L2 L1");
	window(f->s, "s1", 2, got, sizeof got);
	assert_string_equal(got, "L5 L3");
	window(f->s, "s1", 0, got, sizeof got);
	assert_string_equal(got, "");
	window(f->s, "s2", 30, got, sizeof got);
	assert_string_equal(got, "M6");
	window(f->s, "s3", 30, got, sizeof got);
	assert_string_equal(got, "");

	/* no session: refused with a sentence, the list untouched */
	tgi_strv w = { 0 };
	tgi_strv_push(&w, tgi_strdup("mine"));
	err[0] = '\0';
	assert_int_equal(tgi_store_loop_window(f->s, NULL, 30, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "session"));
	err[0] = '\0';
	assert_int_equal(tgi_store_loop_window(f->s, "", 30, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "session"));
	assert_int_equal(w.n, 1);

	/* appended to what the list holds */
	assert_int_equal(tgi_store_loop_window(f->s, "s2", 30, &w, err, sizeof err), 0);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.v[0], "mine");
	assert_string_equal(w.v[1], "M6");
	assert_null(w.v[2]);
	tgi_strv_free(&w);

	/* kept as written */
	uuid_at(t0 + 20, id);
	record_mw(f->s, id, "s1", "dev", t0 + 20, "{\"sig\":\"a b\",\"out\":\"\xc3\xa9\"}", NULL);
	window(f->s, "s1", 1, got, sizeof got);
	assert_string_equal(got, "{\"sig\":\"a b\",\"out\":\"\xc3\xa9\"}");
}

static void manifest_is(tgi_store *s, const char *session, const char *want)
{
	char err[512] = "", got[65] = "x";
	if (tgi_store_session_manifest(s, session, got, err, sizeof err) < 0)
		fail_msg("manifest: %s", err);
	assert_string_equal(got, want);
}

/* Manifests are saved with the call's row, in its transaction: a record
 * that fails leaves the manifest as it was. */
static void test_manifest(void **state)
{
	struct fx *f = *state;
	char id[37], err[512];
	int64_t t0 = 1760000000000;
	const char *dig_c = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";

	manifest_is(f->s, "s1", "");
	manifest_is(f->s, NULL, "");

	uuid_at(t0, id);
	record_mw(f->s, id, "s1", "dev", t0, NULL, DIGEST_A);
	manifest_is(f->s, "s1", DIGEST_A);
	/* a call that does not say keeps the manifest; another one replaces it */
	uuid_at(t0 + 1, id);
	record_mw(f->s, id, "s1", "dev", t0 + 1, NULL, NULL);
	manifest_is(f->s, "s1", DIGEST_A);
	uuid_at(t0 + 2, id);
	record_mw(f->s, id, "s1", "dev", t0 + 2, NULL, DIGEST_B);
	manifest_is(f->s, "s1", DIGEST_B);
	manifest_is(f->s, "nope", "");
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's1'"), 3);

	/* all or nothing: the same op again fails, and changes nothing */
	tgi_op_record op = { .op_id = id, .session = "s1", .tool = "read_file", .principal = "dev",
	                     .status = "persisted", .envelope = "{}", .started_ms = t0 + 20,
	                     .loop = "L", .manifest = dig_c };
	assert_int_equal(tgi_store_record(f->s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err), -1);
	assert_non_null(strstr(err, "already in the ledger"));
	manifest_is(f->s, "s1", DIGEST_B);

	/* and it outlives the handle */
	cx_reopen(f);
	manifest_is(f->s, "s1", DIGEST_B);
}

/* ---- rate-limit buckets ---- */

/* One take; 1 taken, 0 empty (with *left and *wait). */
static int take(tgi_store *s, const char *principal, double rate, double burst, double *left,
                double *wait)
{
	char err[512] = "";
	int ok = -1;
	double l = -1, w = -1;
	if (tgi_store_bucket_take(s, principal, "read_file", rate, burst, 1, &ok, &l, &w, err,
	                          sizeof err) < 0)
		fail_msg("take: %s", err);
	if (left)
		*left = l;
	if (wait)
		*wait = w;
	return ok;
}

/* The saved row of (principal, read_file): tokens and updated_ms. */
static void bucket_row(struct fx *f, const char *principal, double *tokens, int64_t *at)
{
	char text[64];
	cx_text(f, text, sizeof text, "SELECT tokens FROM rate_buckets WHERE principal = '%s'"
	        " AND tool = 'read_file'", principal);
	*tokens = text[0] ? strtod(text, NULL) : NAN;
	*at = cx_num(f, "SELECT updated_ms FROM rate_buckets WHERE principal = '%s'"
	             " AND tool = 'read_file'", principal);
}

/* Write a bucket by hand, with the MAC the store would give it (without
 * one it would be a fresh bucket). */
static void bucket_set(struct fx *f, const char *principal, double tokens, int64_t at)
{
	char mac[65];
	tgi_mac_bucket(f->s, principal, "read_file", tokens, at, mac);
	cx_exec(f, "DELETE FROM rate_buckets WHERE principal = '%s' AND tool = 'read_file';"
	        " INSERT INTO rate_buckets(principal, tool, tokens, updated_ms, mac)"
	        " VALUES('%s', 'read_file', %.17g, %lld, '%s')", principal, principal, tokens,
	        (long long)at, mac);
}

#define NEAR(a, b) (fabs((a) - (b)) < 1e-3)

/* bucket_take: a new bucket starts full; tokens are taken one at a time,
 * then the bucket is empty and says when the next one comes; it refills at
 * the rate since it was last written, capped at the burst (a stricter
 * burst caps a saved bucket); a clock that went backwards refills nothing
 * and empties nothing (the bucket's time moves back with it, so the next
 * token comes one token's time later, not after the jump); each
 * (principal, tool) is its own; bad arguments are refused; and a second
 * handle takes from the same bucket. */
static void test_bucket_take(void **state)
{
	struct fx *f = *state;
	double left, wait, tokens;
	int64_t at;
	char err[512];
	int ok;

	/* 3 tokens, one back every 30 minutes: no refill to speak of meanwhile */
	double slow = 1.0 / 1800;
	for (int i = 3; i-- > 0;) {
		assert_int_equal(take(f->s, "dev", slow, 3, &left, &wait), 1);
		assert_true(NEAR(left, i));
	}
	int64_t before = tgi_unix_ms();
	assert_int_equal(take(f->s, "dev", slow, 3, &left, &wait), 0);
	assert_true(left >= 0 && left < 1e-3);
	assert_true(wait > 1799 && wait <= 1800.001);
	bucket_row(f, "dev", &tokens, &at);
	assert_true(tokens >= 0 && tokens < 1e-3);
	assert_true(at <= before && at > before - 60000);
	/* another principal has its own, full */
	assert_int_equal(take(f->s, "ci", slow, 3, &left, NULL), 1);
	assert_true(NEAR(left, 2));

	/* refill: one a second; 2.5 s ago it held none (plus what the time
	 * the test takes refills, on a loaded machine) */
	int64_t now = tgi_unix_ms();
	bucket_set(f, "dev", 0, now - 2500);
	assert_int_equal(take(f->s, "dev", 1, 5, &left, NULL), 1);
	assert_true(left > 1.49 && left < 1.51 + (double)(tgi_unix_ms() - now) / 1000);
	/* capped at the burst, however long ago */
	bucket_set(f, "dev", 0, now - 3600000);
	assert_int_equal(take(f->s, "dev", 1, 5, &left, NULL), 1);
	assert_true(NEAR(left, 4));
	/* a stricter burst caps what was saved */
	assert_int_equal(take(f->s, "dev", 1, 2, &left, NULL), 1);
	assert_true(NEAR(left, 1));
	/* a damaged row (negative tokens) counts as empty, never below */
	bucket_set(f, "dev", -7, tgi_unix_ms());
	assert_int_equal(take(f->s, "dev", slow, 3, &left, &wait), 0);
	assert_true(left >= 0 && left < 1e-3);
	assert_true(wait > 1799 && wait <= 1800.001);

	/* the clock went back an hour since the bucket was written: its 2
	 * tokens stay 2, nothing refills, and the next token is one token's
	 * time away from now */
	int64_t back = tgi_unix_ms();
	bucket_set(f, "dev", 2, back + 3600000);
	assert_int_equal(take(f->s, "dev", 1, 5, &left, NULL), 1);
	assert_true(left >= 1 && left < 1.01);
	bucket_row(f, "dev", &tokens, &at);
	assert_true(at <= tgi_unix_ms());
	assert_int_equal(take(f->s, "dev", 1, 5, &left, NULL), 1);
	double spent = (double)(tgi_unix_ms() - back) / 1000;   /* refilled meanwhile, at most */
	assert_true(left < 0.01 + spent);
	/* empty now, the next token less than a token's time away (unless a
	 * loaded machine took a second over it: then it is back) */
	double had = left;
	if (take(f->s, "dev", 1, 5, &left, &wait) == 0)
		assert_true(wait > 0 && wait <= 1.0 - had + 1e-3);
	else
		assert_true((double)(tgi_unix_ms() - back) / 1000 > 1.0 - had - 1e-3);

	/* another handle on the same ledger takes from the same bucket */
	tgi_store *s2 = cx_open(f);
	assert_int_equal(take(s2, "ci", slow, 3, &left, NULL), 1);
	assert_true(NEAR(left, 1));
	assert_int_equal(take(f->s, "ci", slow, 3, &left, NULL), 1);
	assert_true(NEAR(left, 0));
	assert_int_equal(take(s2, "ci", slow, 3, NULL, NULL), 0);
	tgi_store_close(s2);

	/* a dry look (bucket_get) sees what was taken */
	int found = 0;
	assert_int_equal(tgi_store_bucket_get(f->s, "ci", "read_file", &tokens, &at, &found, err,
	                                      sizeof err), 0);
	assert_int_equal(found, 1);
	assert_true(tokens < 1e-3);

	/* refusals */
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "read_file", 0, 3, 1, &ok, &left, &wait,
	                                       err, sizeof err), -1);
	assert_non_null(strstr(err, "rate above 0"));
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "read_file", 1, 0.5, 1, &ok, &left, &wait,
	                                       err, sizeof err), -1);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "read_file", NAN, 3, 1, &ok, &left, &wait,
	                                       err, sizeof err), -1);
	assert_int_equal(tgi_store_bucket_take(f->s, NULL, "read_file", 1, 3, 1, &ok, &left, &wait,
	                                       err, sizeof err), -1);
	assert_string_equal(err, "a rate-limit bucket is found by principal and tool");
	assert_int_equal(tgi_store_bucket_get(f->s, NULL, "read_file", &tokens, &at, &found, err,
	                                      sizeof err), -1);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "read_file", 1, 3, 0, &ok, &left, &wait,
	                                       err, sizeof err), -1);

	/* a take of several: as many whole tokens as there are, up to want
	 * (a new bucket of 3 at a rate that adds none in the test's time) */
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "many", 1e-6, 3, 2, &ok, &left, &wait,
	                                       err, sizeof err), 0);
	assert_int_equal(ok, 2);
	assert_true(left > 0.99 && left < 1.01);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "many", 1e-6, 3, 5, &ok, &left, &wait,
	                                       err, sizeof err), 0);
	assert_int_equal(ok, 1);
	assert_true(left < 1e-3);
	assert_int_equal(tgi_store_bucket_take(f->s, "ci", "many", 1e-6, 3, 5, &ok, &left, &wait,
	                                       err, sizeof err), 0);
	assert_int_equal(ok, 0);
	assert_true(wait > 1);
}

/* The same in real time, on the store's clock: 2 tokens a second and a
 * burst of 3 give three now, then none; 600 ms later one more; after
 * long enough never more than the burst. */
static void test_bucket_refill_in_time(void **state)
{
	struct fx *f = *state;
	double left = -1, wait = -1;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(take(f->s, "ci", 2, 3, &left, &wait), 1);
		assert_true(left >= 2 - i && left < 2 - i + 0.2);   /* what is left, a little refilled */
	}
	assert_int_equal(take(f->s, "ci", 2, 3, &left, &wait), 0);
	assert_true(wait > 0 && wait <= 0.5);
	/* another handle draws from the same bucket; another principal has its own */
	tgi_store *s2 = cx_open(f);
	assert_int_equal(take(s2, "ci", 2, 3, &left, &wait), 0);
	assert_int_equal(take(s2, "bob", 2, 3, &left, &wait), 1);
	tgi_store_close(s2);
	sleep_ms(600);
	assert_int_equal(take(f->s, "ci", 2, 3, &left, &wait), 1);
	assert_int_equal(take(f->s, "ci", 2, 3, &left, &wait), 0);
	sleep_ms(2100);
	int took = 0;
	for (int i = 0; i < 5; i++)
		took += take(f->s, "ci", 2, 3, &left, &wait);
	assert_int_equal(took, 3);
}

/* Processes taking from one bucket at once (each its own handle): exactly
 * the burst is handed out, whoever asks. */
#define TAKERS 4
static void test_bucket_take_processes(void **state)
{
	struct fx *f = *state;
	pid_t kids[TAKERS];
	int go[2];
	assert_int_equal(pipe(go), 0);
	for (int k = 0; k < TAKERS; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			char err[512], c;
			tgi_store *s;
			close(go[1]);
			if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
				_exit(100);
			if (read(go[0], &c, 1) != 0)   /* all start when the pipe closes */
				_exit(101);
			int n = 0;
			for (int i = 0; i < 25; i++) {
				int ok = 0;
				double left, wait;
				if (tgi_store_bucket_take(s, "dev", "read_file", 1.0 / 3600, 20, 1, &ok, &left,
				                          &wait, err, sizeof err) < 0)
					_exit(102);
				n += ok;
			}
			tgi_store_close(s);
			_exit(n);
		}
	}
	close(go[0]);
	close(go[1]);
	int total = 0;
	for (int k = 0; k < TAKERS; k++) {
		int st;
		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		assert_true(WIFEXITED(st));
		assert_true(WEXITSTATUS(st) <= 25);
		total += WEXITSTATUS(st);
	}
	assert_int_equal(total, 20);
}

/* ---- waiting for other processes ---- */

/* A watch wakes when another handle commits, within a slice, and a wait
 * with nothing written comes back "look again" no later than its slice;
 * an approvals watch wakes when another process decides one. */
static void test_watch(void **state)
{
	struct fx *f = *state;
	char err[512];
	tgi_watch *w = NULL, *wa = NULL;
	assert_int_equal(tgi_store_watch_open(f->s, TGI_WATCH_EVENTS, &w, err, sizeof err), 0);
	assert_non_null(w);
	assert_int_equal(tgi_store_watch_open(f->s, TGI_WATCH_APPROVALS, &wa, err, sizeof err), 0);
	/* nothing written: a zero wait times out */
	assert_int_equal(tgi_store_watch_wait(w, 0), 0);
	tgi_approval_row a;
	memset(&a, 0, sizeof a);
	snprintf(a.tool, sizeof a.tool, "deploy");
	snprintf(a.principal, sizeof a.principal, "ci");
	snprintf(a.binding, sizeof a.binding, DIGEST_A);
	a.expires_ms = tgi_unix_ms() + 60000;
	assert_int_equal(tgi_store_approval_add(f->s, &a, err, sizeof err), 0);

	pid_t pid = fork();
	if (pid == 0) {
		tgi_store *s2;
		usleep(100 * 1000);
		if (tgi_store_open(f->where, 0, &s2, err, sizeof err) < 0)
			_exit(1);
		char id[37];
		uuid_at(tgi_unix_ms(), id);
		int rc = record(s2, id, "read_file", "persisted", NULL, tgi_unix_ms(), NULL,
		                TGI_SETTLE_NONE, err, sizeof err);
		usleep(300 * 1000);
		if (rc == 0)
			rc = tgi_store_approval_decide(s2, a.id, 1, "alice", NULL, err, sizeof err);
		tgi_store_close(s2);
		_exit(rc ? 1 : 0);
	}
	int64_t seq = 0;
	double t0 = tgi_now_ms();
	while (seq == 0 && tgi_now_ms() - t0 < 5000) {
		tgi_store_watch_wait(w, 2000);
		assert_int_equal(tgi_store_last_seq(f->s, &seq, err, sizeof err), 0);
	}
	assert_true(seq > 0);
	assert_true(tgi_now_ms() - t0 < 1500);
	/* the approval decided: the approvals watch wakes (early or on it) */
	int found = 0;
	char pending[37];
	t0 = tgi_now_ms();
	while (found != 1 && tgi_now_ms() - t0 < 5000) {
		tgi_store_watch_wait(wa, 2000);
		assert_int_equal(tgi_store_approval_find(f->s, DIGEST_A, "ci", &found, pending, NULL, err,
		                                         sizeof err), 0);
	}
	assert_int_equal(found, 1);
	assert_true(tgi_now_ms() - t0 < 1500);
	assert_int_equal(wait_child(pid), 0);
	tgi_store_watch_close(w);
	tgi_store_watch_close(wa);
}

/* ---- schema ---- */

/* The migrations a callback was told, in order. */
static int told[TGI_STORE_SCHEMA_VERSION + 2], ntold;
static void tell(void *arg, int n)
{
	(void)arg;
	if (ntold < (int)TGI_ARRAY_LEN(told))
		told[ntold++] = n;
}

/* Migrations one at a time: a ledger left at version 2 reads as 2, is
 * upgraded by the next open, and never goes back; dry runs name what
 * would be applied and apply nothing. */
static void test_migrate_steps(void **state)
{
	struct fx *f = *state;
	char err[512];
	int v = -1;

	assert_int_equal(tgi_store_open(f->where, TGI_STORE_NO_MIGRATE, &f->s, err, sizeof err), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 0);
	/* a dry run from nothing names 1..latest and changes nothing */
	ntold = 0;
	assert_int_equal(tgi_store_migrate(f->s, 0, 1, tell, NULL, err, sizeof err), 0);
	assert_int_equal(ntold, TGI_STORE_SCHEMA_VERSION);
	for (int i = 0; i < ntold; i++)
		assert_int_equal(told[i], 1 + i);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 0);
	ntold = 0;
	assert_int_equal(tgi_store_migrate(f->s, 2, 0, tell, NULL, err, sizeof err), 0);
	assert_int_equal(ntold, 2);
	assert_int_equal(told[0], 1);
	assert_int_equal(told[1], 2);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 2);
	/* the pins table of migration 2 is there, migration 3's column and 4's table are not */
	assert_int_equal(cx_has_table(f, "pins"), 1);
	assert_int_equal(cx_has_column(f, "ops", "loop"), 0);
	assert_int_equal(cx_has_table(f, "messages"), 0);
	/* a dry run from 2 names what is left */
	ntold = 0;
	assert_int_equal(tgi_store_migrate(f->s, 0, 1, tell, NULL, err, sizeof err), 0);
	assert_int_equal(ntold, TGI_STORE_SCHEMA_VERSION - 2);
	for (int i = 0; i < ntold; i++)
		assert_int_equal(told[i], 3 + i);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 2);
	/* migrations only go forward, and only to versions there are */
	assert_int_equal(tgi_store_migrate(f->s, 1, 0, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "only go forward"));
	assert_int_equal(tgi_store_migrate(f->s, 9, 0, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "no schema version 9"));
	tgi_store_close(f->s);
	f->s = NULL;
	cx_schema_is(f, 2);

	/* an ordinary open takes it from 2 to the latest */
	assert_int_equal(tgi_store_open(f->where, 0, &f->s, err, sizeof err), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	cx_schema_is(f, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(cx_has_column(f, "ops", "loop"), 1);
	assert_int_equal(cx_has_table(f, "messages"), 1);
	for (int i = 1; i <= TGI_STORE_SCHEMA_VERSION; i++)
		assert_non_null(tgi_store_migration_title(i));
	assert_null(tgi_store_migration_title(0));
	assert_null(tgi_store_migration_title(TGI_STORE_SCHEMA_VERSION + 1));
}

/* A ledger of a newer schema is refused with a sentence, by an ordinary
 * open and by the migration command's. */
static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	char err[512] = "", want[128];
	tgi_store *s = NULL;
	tgi_store_close(f->s);
	f->s = NULL;
	cx_schema_ahead(f);
	assert_int_equal(tgi_store_open(f->where, 0, &s, err, sizeof err), -1);
	assert_null(s);
	snprintf(want, sizeof want, "has schema version %d, newer than this toolgate understands (%d)",
	         TGI_STORE_SCHEMA_VERSION + 1, TGI_STORE_SCHEMA_VERSION);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "upgrade toolgate"));
	assert_int_equal(tgi_store_open(f->where, TGI_STORE_NO_MIGRATE, &s, err, sizeof err), -1);
	assert_null(s);
}

/* Another program's database is not a ledger: refused with a sentence,
 * and the failed migration leaves nothing of its own behind. */
static void test_not_a_ledger(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	tgi_store *s = NULL;
	cx_exec(f, "CREATE TABLE ops(id integer)");
	assert_int_equal(tgi_store_open(f->where, 0, &s, err, sizeof err), -1);
	assert_null(s);
	if (!strstr(err, "does not have the tables toolgate expects"))
		fail_msg("not a ledger: %s", err);
	if (CX_PG)   /* its own tables are made without IF NOT EXISTS: the clash is named */
		assert_non_null(strstr(err, "\"ops\""));
	assert_int_equal(cx_has_table(f, "idem"), 0);
	assert_int_equal(cx_has_table(f, "events"), 0);
}

/* Many processes creating and writing one new ledger at once: every
 * record kept, each migration applied once. */
static void test_concurrent_open_new_ledger(void **state)
{
	struct fx *f = *state;
	enum { N = 6 };
	pid_t pids[N];
	int go[2];

	assert_int_equal(pipe(go), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char err[512], op[37], c;
			tgi_store *s;
			close(go[1]);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			tgi_uuidv7(op);
			if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0) {
				fprintf(stderr, "child open: %s\n", err);
				_exit(1);
			}
			int rc = record(s, op, "read_file", "persisted", "s", 1, NULL, TGI_SETTLE_NONE, err,
			                sizeof err);
			if (rc)
				fprintf(stderr, "child record: %s\n", err);
			tgi_store_close(s);
			_exit(rc ? 1 : 0);
		}
	}
	close(go[0]);
	close(go[1]);
	int failed = 0;
	for (int i = 0; i < N; i++)
		failed += wait_child(pids[i]) != 0;
	assert_int_equal(failed, 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM ops"), N);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events"), 4 * N);
	assert_int_equal(cx_num(f, "SELECT calls FROM sessions WHERE id = 's'"), N);
	cx_schema_is(f, TGI_STORE_SCHEMA_VERSION);
}

/* A version 4 ledger (before approvals kept a plan and a decision's
 * reason), as `toolgate migrate --to 4` leaves one, is upgraded (through
 * 5, to the latest) by an ordinary open: its approvals stay, as they
 * were, with no plan and no reason; the pending one is decided with a
 * reason afterwards. */
static void test_upgrade_v4_approvals(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	int v = -1, found = 0;
	int64_t later = tgi_unix_ms() + 3600 * 1000;
	tgi_approval_row got, *rows = NULL;
	size_t n = 0;
	static const char *const ids[] = {
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e01", /* pending */
		"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e02", /* denied by bob */
	};

	assert_int_equal(tgi_store_open(f->where, TGI_STORE_NO_MIGRATE, &f->s, err, sizeof err), 0);
	assert_int_equal(tgi_store_migrate(f->s, 4, 0, NULL, NULL, err, sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;
	cx_schema_is(f, 4);
	assert_int_equal(cx_has_column(f, "approvals", "plan"), 0);
	cx_exec(f, "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"
	        " created_ms, expires_ms, decided_by, decided_ms) VALUES"
	        " ('%s', NULL, 'write_file', 'local', '%s', 'pending', '{\"path\":\"a\"}',"
	        "  'ask: write_file', 1000, %lld, NULL, NULL),"
	        " ('%s', NULL, 'shell', 'local', '%s', 'denied', '{\"command\":\"rm\"}',"
	        "  'ask: shell', 1001, %lld, 'bob', 1500)",
	        ids[0], DIGEST_A, (long long)later, ids[1], DIGEST_B, (long long)later);

	open_adopting(f);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	assert_int_equal(cx_has_column(f, "approvals", "plan"), 1);
	assert_int_equal(cx_has_column(f, "approvals", "decided_reason"), 1);
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

/* ---- idempotency ---- */

static void test_idem_lifecycle(void **state)
{
	struct fx *f = *state;
	tgi_idem_info info;
	char a[37], b[37], c[37], err[512];

	tgi_uuidv7(a);
	tgi_uuidv7(b);
	tgi_uuidv7(c);

	/* new scope: ours, committed in_flight with us as owner (another
	 * connection sees it) */
	assert_int_equal(claim(f->s, "local:deploy:k1", a, 10, &info), TGI_IDEM_CLAIMED);
	assert_string_equal(info.op_id, a);
	assert_null(info.envelope);
	assert_int_equal(cx_num(f, "SELECT owner_pid FROM idem WHERE scope = '%s'",
	                        dg("local:deploy:k1")), getpid());
	char st[32];
	cx_text(f, st, sizeof st, "SELECT state FROM idem WHERE scope = '%s'", dg("local:deploy:k1"));
	assert_string_equal(st, "in_flight");

	/* a second claimer while we (alive) hold it: pending, retry inside the lease */
	assert_int_equal(claim(f->s, "local:deploy:k1", b, 10, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, a);
	assert_true(info.retry_after_s >= 9.0 && info.retry_after_s <= 10.0);
	/* the wait is clamped to [1, 30] */
	assert_int_equal(claim(f->s, "local:long:k", a, 3600, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(claim(f->s, "local:long:k", b, 3600, &info), TGI_IDEM_IN_FLIGHT);
	assert_true(info.retry_after_s == 30.0);
	cx_exec(f, "UPDATE idem SET lease_until_ms = 0 WHERE scope = '%s'", dg("local:long:k"));
	assert_int_equal(claim(f->s, "local:long:k", b, 3600, &info), TGI_IDEM_IN_FLIGHT);
	assert_true(info.retry_after_s == 1.0);

	/* done: the original envelope comes back for a replay */
	assert_int_equal(record(f->s, a, "deploy", "persisted", "s1", 1000, "local:deploy:k1",
	                        TGI_SETTLE_DONE, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "local:deploy:k1", c, 10, &info), TGI_IDEM_DONE);
	assert_string_equal(info.op_id, a);
	assert_non_null(info.envelope);
	char want[256];
	snprintf(want, sizeof want, "{\"op_id\":\"%s\",\"status\":\"persisted\",\"output\":\"out-deploy\"}", a);
	assert_string_equal(info.envelope, want);
	free(info.envelope);

	/* release: nothing was applied, the next claim runs */
	char d[37], e[37];
	tgi_uuidv7(d);
	tgi_uuidv7(e);
	assert_int_equal(claim(f->s, "local:deploy:k2", d, 10, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(record(f->s, d, "deploy", "failed", "s1", 1001, "local:deploy:k2",
	                        TGI_SETTLE_RELEASE, err, sizeof err), 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem WHERE scope = '%s'",
	                        dg("local:deploy:k2")), 0);
	assert_int_equal(claim(f->s, "local:deploy:k2", e, 10, &info), TGI_IDEM_CLAIMED);
	assert_string_equal(info.op_id, e);

	/* unknown: may have been applied, never run again */
	char g[37], h[37];
	tgi_uuidv7(g);
	tgi_uuidv7(h);
	assert_int_equal(claim(f->s, "local:deploy:k3", g, 10, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(record(f->s, g, "deploy", "failed", "s1", 1002, "local:deploy:k3",
	                        TGI_SETTLE_UNKNOWN, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "local:deploy:k3", h, 10, &info), TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, g);
	assert_int_equal(claim(f->s, "local:deploy:k3", h, 10, &info), TGI_IDEM_UNKNOWN);
	/* resolved as not applied: released, claimed by the next call */
	assert_int_equal(tgi_store_op_resolve(f->s, g, 0, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "local:deploy:k3", h, 10, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events WHERE type = 'tool.call.resolved'"), 1);

	/* settling only touches the op's own claim */
	char i[37], j[37];
	tgi_uuidv7(i);
	tgi_uuidv7(j);
	assert_int_equal(claim(f->s, "local:deploy:k4", i, 10, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(record(f->s, j, "deploy", "failed", "s1", 1003, "local:deploy:k4",
	                        TGI_SETTLE_RELEASE, err, sizeof err), 0);
	char k[37];
	tgi_uuidv7(k);
	assert_int_equal(record(f->s, k, "deploy", "persisted", "s1", 1004, "local:deploy:k4",
	                        TGI_SETTLE_DONE, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "local:deploy:k4", j, 10, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, i);

	/* bindings: the same key for another call is a conflict, never its
	 * result; without a binding it is not compared */
	char m[37], n[37];
	tgi_uuidv7(m);
	tgi_uuidv7(n);
	assert_int_equal(claim_b(f->s, "key:bound", m, DIGEST_A, 30, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(claim_b(f->s, "key:bound", n, DIGEST_A, 30, &info), TGI_IDEM_IN_FLIGHT);
	assert_string_equal(info.op_id, m);
	assert_true(info.retry_after_s >= 1 && info.retry_after_s <= 30);
	assert_int_equal(claim_b(f->s, "key:bound", n, DIGEST_B, 30, &info), TGI_IDEM_CONFLICT);
	const char *env = "{\"op_id\":\"x\",\"status\":\"persisted\",\"output\":\"hi\"}";
	tgi_op_record r = { .op_id = m, .tool = "write", .principal = "ci", .status = "persisted",
	                    .envelope = env, .started_ms = tgi_unix_ms(),
	                    .idem_binding = DIGEST_A /* the done row's MAC covers it */ };
	assert_int_equal(tgi_store_record(f->s, &r, NULL, 0, "key:bound", TGI_SETTLE_DONE, err,
	                                  sizeof err), 0);
	assert_int_equal(claim_b(f->s, "key:bound", n, DIGEST_A, 30, &info), TGI_IDEM_DONE);
	assert_string_equal(info.op_id, m);
	assert_string_equal(info.envelope, env);
	free(info.envelope);
	assert_int_equal(claim_b(f->s, "key:bound", n, NULL, 30, &info), TGI_IDEM_DONE);
	free(info.envelope);

	/* bad arguments */
	assert_int_equal(tgi_store_idem_claim(f->s, "", a, NULL, 10, &info, err, sizeof err), -1);
	assert_non_null(strstr(err, "scope is empty"));
	char *huge = malloc(2000);
	memset(huge, 'k', 1999);
	huge[1999] = '\0';
	/* a scope of any length is kept as its digest */
	assert_int_equal(tgi_store_idem_claim(f->s, huge, a, NULL, 10, &info, err, sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem WHERE scope = '%s'", dg(huge)), 1);
	free(huge);
	assert_int_equal(tgi_store_idem_claim(f->s, "s", "not-a-uuid", NULL, 10, &info, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a UUID"));
}

/* A child that claims scope as op_id and dies without settling. */
static void claim_and_die(const struct fx *f, const char *scope, const char *op_id, int reap)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[512];
		tgi_store *s;
		tgi_idem_info info;
		close(p[0]);
		if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0 ||
		    tgi_store_idem_claim(s, scope, op_id, NULL, 3600, &info, err, sizeof err) < 0 ||
		    info.state != TGI_IDEM_CLAIMED)
			_exit(1);
		_exit(0); /* a crash: no settle, no close */
	}
	close(p[1]);
	char buf[8];
	read_pipe(p[0], buf, sizeof buf); /* closes when the child is gone */
	if (reap) {
		assert_int_equal(wait_child(pid), 0);
	} else {
		/* leave it a zombie: exited, not reaped */
		siginfo_t si;
		assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
		assert_int_equal(si.si_status, 0);
	}
}

static void test_idem_dead_owner(void **state)
{
	struct fx *f = *state;
	tgi_idem_info info;
	char a[37], b[37], err[512], st[32];
	json_t *v;

	tgi_uuidv7(a);
	tgi_uuidv7(b);
	claim_and_die(f, "s1:call_dead", a, 1);

	/* the owner is gone: unknown outcome, never re-run; the row says so now */
	assert_int_equal(claim(f->s, "s1:call_dead", b, 10, &info), TGI_IDEM_UNKNOWN);
	assert_string_equal(info.op_id, a);
	cx_text(f, st, sizeof st, "SELECT state FROM idem WHERE scope = '%s'", dg("s1:call_dead"));
	assert_string_equal(st, "unknown");
	assert_int_equal(claim(f->s, "s1:call_dead", b, 10, &info), TGI_IDEM_UNKNOWN);

	/* operator: it was applied -> done, with a minimal envelope to replay */
	assert_int_equal(tgi_store_op_resolve(f->s, a, 1, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "s1:call_dead", b, 10, &info), TGI_IDEM_DONE);
	assert_string_equal(info.op_id, a);
	json_t *env = json_loads(info.envelope, 0, NULL);
	free(info.envelope);
	assert_string_equal(json_string_value(json_object_get(env, "op_id")), a);
	assert_string_equal(json_string_value(json_object_get(env, "status")), "persisted");
	assert_string_equal(json_string_value(json_object_get(env, "note")),
	                    "settled by operator: applied");
	assert_true(json_is_null(json_object_get(env, "error")));
	assert_true(json_is_null(json_object_get(env, "output")));
	json_decref(env);
	tgi_log_filter flt = { .op_id = a };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 1);
	json_t *ev = json_array_get(v, 0);
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "tool.call.resolved");
	assert_true(json_is_true(json_object_get(json_object_get(ev, "data"), "applied")));
	json_decref(v);
	assert_int_equal(count_ops(f->s, &flt), 1);
	/* the minimal row started when its id was made, not at the resolve */
	char hex[13];
	snprintf(hex, sizeof hex, "%.8s%.4s", a, a + 9); /* a UUIDv7's 48 bits of unix ms */
	int64_t made = (int64_t)strtoll(hex, NULL, 16);
	assert_int_equal(cx_num(f, "SELECT started_ms FROM ops WHERE op_id = '%s'", a), made);
	flt = (tgi_log_filter){ .op_id = a, .since_ms = made };
	assert_int_equal(count_ops(f->s, &flt), 1);
	flt = (tgi_log_filter){ .op_id = a, .since_ms = made + 1 };
	assert_int_equal(count_ops(f->s, &flt), 0);
	flt = (tgi_log_filter){ .op_id = a };
	/* settled: nothing more to resolve */
	assert_int_equal(tgi_store_op_resolve(f->s, a, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));

	/* operator: it was not applied -> released, the next claim runs */
	char c[37], d[37];
	tgi_uuidv7(c);
	tgi_uuidv7(d);
	claim_and_die(f, "s1:call_dead2", c, 1);
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "s1:call_dead2", d, 10, &info), TGI_IDEM_CLAIMED);
	assert_string_equal(info.op_id, d);
	flt.op_id = c;
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 1);
	assert_true(json_is_false(json_object_get(json_object_get(json_array_get(v, 0), "data"), "applied")));
	json_decref(v);
	assert_int_equal(count_ops(f->s, &flt), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), -1);

	/* a zombie (exited, not yet reaped) is dead too */
	char z[37];
	tgi_uuidv7(z);
	claim_and_die(f, "s1:zombie", z, 0);
	assert_int_equal(claim(f->s, "s1:zombie", d, 10, &info), TGI_IDEM_UNKNOWN);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	/* resolve refuses a live owner and an op without a claim */
	char e[37];
	tgi_uuidv7(e);
	assert_int_equal(tgi_store_op_resolve(f->s, d, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "is still running"));
	assert_int_equal(tgi_store_op_resolve(f->s, e, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));
	assert_int_equal(tgi_store_op_resolve(f->s, "x", 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a UUID"));
}

static void test_idem_resolve_marks_envelope(void **state)
{
	struct fx *f = *state;
	tgi_idem_info info;
	char a[37], b[37], err[512];

	tgi_uuidv7(a);
	tgi_uuidv7(b);
	/* a tool that may have applied: failed, applied unknown, scope unknown */
	assert_int_equal(claim(f->s, "p:t:key", a, 10, &info), TGI_IDEM_CLAIMED);
	const char *env = "{\"op_id\":\"x\",\"status\":\"failed\",\"error\":{\"kind\":\"unknown_outcome\","
	                  "\"applied\":\"unknown\"},\"output\":null}";
	tgi_op_record op = { .op_id = a, .tool = "t", .status = "failed", .error_kind = "unknown_outcome",
	                     .envelope = env, .started_ms = 5 };
	assert_int_equal(tgi_store_record(f->s, &op, NULL, 0, "p:t:key", TGI_SETTLE_UNKNOWN, err,
	                                  sizeof err), 0);
	assert_int_equal(claim(f->s, "p:t:key", b, 10, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(tgi_store_op_resolve(f->s, a, 1, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "p:t:key", b, 10, &info), TGI_IDEM_DONE);
	json_t *e = json_loads(info.envelope, 0, NULL);
	free(info.envelope);
	assert_string_equal(json_string_value(json_object_get(e, "status")), "failed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(e, "error"), "applied")), "yes");
	assert_string_equal(json_string_value(json_object_get(e, "note")), "settled by operator: applied");
	json_decref(e);
	/* still one ops row */
	tgi_log_filter flt = { .op_id = a };
	assert_int_equal(count_ops(f->s, &flt), 1);
}

/* Record one op of status with an envelope whose error says applied
 * (NULL: no error), started at ms; scope/how its claim's settle. */
static void record_applied(tgi_store *s, const char *op_id, const char *status,
                           const char *applied, int64_t ms, const char *scope,
                           tgi_idem_settle how)
{
	char env[512], err[512] = "";
	if (applied)
		snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"%s\",\"error\":{\"kind\":"
		         "\"tool_error\",\"message\":\"stopped %s\",\"applied\":\"%s\"}}", op_id, status,
		         op_id, applied);
	else
		snprintf(env, sizeof env, "{\"op_id\":\"%s\",\"status\":\"%s\",\"error\":null}", op_id,
		         status);
	tgi_op_record op = { .op_id = op_id, .tool = "shell", .principal = "local",
	                     .status = status, .error_kind = applied ? "tool_error" : NULL,
	                     .idem_scope = scope, .envelope = env, .started_ms = ms };
	if (tgi_store_record(s, &op, NULL, 0, scope, how, err, sizeof err) < 0)
		fail_msg("record: %s", err);
}

/* The op ids tgi_store_unknown lists, space-separated, into out. */
static void unknown_ids(tgi_store *s, char *out, size_t cap, json_t **rows)
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
	if (rows)
		*rows = a;
	else
		json_decref(a);
}

/* ops list --unknown: calls that ran and may have acted, unsettled; claims
 * whose process died; not a running claim, a pending answer, a known
 * outcome.  ops resolve settles one without a claim too. */
static void test_unknown_outcomes(void **state)
{
	struct fx *f = *state;
	tgi_idem_info info;
	char a[37], b[37], c[37], d[37], e[37], g[37], h[37], live[37], err[512], ids[512],
	     want[512];
	json_t *rows;

	unknown_ids(f->s, ids, sizeof ids, NULL);
	assert_string_equal(ids, "");
	uuid_at(1000, a);
	uuid_at(2000, b);
	uuid_at(3000, c);
	uuid_at(4000, d);
	uuid_at(5000, e);
	uuid_at(6000, g);
	uuid_at(7000, h);
	tgi_uuidv7(live);
	record_applied(f->s, a, "failed", "unknown", 1000, NULL, TGI_SETTLE_NONE); /* listed */
	record_applied(f->s, b, "persisted", NULL, 2000, NULL, TGI_SETTLE_NONE);   /* known */
	record_applied(f->s, c, "failed", "no", 3000, NULL, TGI_SETTLE_NONE);       /* nothing ran */
	record_applied(f->s, d, "pending", "unknown", 4000, NULL, TGI_SETTLE_NONE); /* names another */
	assert_int_equal(claim(f->s, "p:shell:k", e, 10, &info), TGI_IDEM_CLAIMED);
	record_applied(f->s, e, "failed", "unknown", 5000, "p:shell:k", TGI_SETTLE_UNKNOWN);
	claim_and_die(f, "p:shell:dead", g, 1);      /* killed: a claim, no row */
	assert_int_equal(claim(f->s, "p:shell:live", live, 10, &info), TGI_IDEM_CLAIMED);
	record_applied(f->s, h, "committed", "unknown", 7000, NULL, TGI_SETTLE_NONE);

	unknown_ids(f->s, ids, sizeof ids, &rows);
	snprintf(want, sizeof want, "%s %s %s %s", a, e, h, g);
	/* the dead claim was made now: after every op of 1970 */
	assert_string_equal(ids, want);
	json_t *ra = json_array_get(rows, 0), *re = json_array_get(rows, 1),
	       *rg = json_array_get(rows, 3);
	assert_string_equal(json_string_value(json_object_get(ra, "tool")), "shell");
	assert_string_equal(json_string_value(json_object_get(ra, "status")), "failed");
	assert_string_equal(json_string_value(json_object_get(ra, "principal")), "local");
	assert_string_equal(json_string_value(json_object_get(ra, "started")),
	                    "1970-01-01T00:00:01.000Z");
	char msg[64];
	snprintf(msg, sizeof msg, "stopped %s", a);
	assert_string_equal(json_string_value(json_object_get(ra, "message")), msg);
	assert_true(json_is_null(json_object_get(ra, "claim")));
	assert_true(json_is_null(json_object_get(ra, "scope")));
	assert_string_equal(json_string_value(json_object_get(re, "claim")), "unknown");
	assert_string_equal(json_string_value(json_object_get(re, "scope")), dg("p:shell:k"));
	assert_true(json_is_null(json_object_get(rg, "tool")));
	assert_true(json_is_null(json_object_get(rg, "message")));
	assert_string_equal(json_string_value(json_object_get(rg, "claim")), "in_flight");
	assert_string_equal(json_string_value(json_object_get(rg, "scope")), dg("p:shell:dead"));
	json_decref(rows);

	/* settled: no longer listed; without a claim too, each once */
	assert_int_equal(tgi_store_op_resolve(f->s, a, 0, err, sizeof err), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, a, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));
	assert_int_equal(tgi_store_op_resolve(f->s, h, 1, err, sizeof err), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, e, 1, err, sizeof err), 0);
	assert_int_equal(tgi_store_op_resolve(f->s, g, 0, err, sizeof err), 0);
	unknown_ids(f->s, ids, sizeof ids, NULL);
	assert_string_equal(ids, "");
	/* applied yes marks the envelope; a known outcome is not resolvable */
	json_t *env = envelope_of(f->s, h);
	assert_string_equal(json_string_value(json_object_get(json_object_get(env, "error"), "applied")),
	                    "yes");
	json_decref(env);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM ops WHERE op_id = '%s' AND"
	                           " envelope LIKE '%%\"applied\":\"yes\"%%'", h), 1);
	assert_int_equal(tgi_store_op_resolve(f->s, b, 1, err, sizeof err), -1);
	assert_int_equal(tgi_store_op_resolve(f->s, c, 0, err, sizeof err), -1);
	assert_int_equal(tgi_store_op_resolve(f->s, d, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing to resolve"));
}

/* This process as a claim's owner host: hostname/boot id/pid namespace;
 * name gets the hostname alone, boot the boot id. */
static void self_identity(char *out, size_t cap, char name[256], char boot[64])
{
	struct stat st;
	name[0] = boot[0] = '\0';
	gethostname(name, 255);
	FILE *b = fopen("/proc/sys/kernel/random/boot_id", "r");
	assert_non_null(b);
	assert_non_null(fgets(boot, 64, b));
	fclose(b);
	boot[strcspn(boot, "\n")] = '\0';
	assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
	snprintf(out, cap, "%s/%s/%llu", name, boot, (unsigned long long)st.st_ino);
}

/* A claim names its owner's host by hostname, boot id and pid namespace,
 * so that gates of one hostname in two containers are two hosts. */
static void test_owner_identity(void **state)
{
	struct fx *f = *state;
	char a[37], host[512], name[256], boot[64], got[512];
	tgi_idem_info info;
	self_identity(host, sizeof host, name, boot);
	tgi_uuidv7(a);
	assert_int_equal(claim(f->s, "r:mine", a, 10, &info), TGI_IDEM_CLAIMED);
	cx_text(f, got, sizeof got, "SELECT owner_host FROM idem WHERE scope = '%s'", dg("r:mine"));
	assert_string_equal(got, host);
	assert_int_equal(cx_num(f, "SELECT owner_pid FROM idem WHERE scope = '%s'", dg("r:mine")),
	                 getpid());
}

#define NCLAIMERS 8

/* Fork n children that each open the ledger, wait for the start signal,
 * claim scope with their own op id, report the state on one pipe, and
 * hold on (alive) until the parent lets them go: one CLAIMED, the others
 * IN_FLIGHT. */
static void test_idem_concurrent_processes(void **state)
{
	struct fx *f = *state;
	int go[2], res[2], hold[2];
	pid_t pids[NCLAIMERS];

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(hold), 0);
	for (int i = 0; i < NCLAIMERS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char err[512], op[37], c;
			tgi_store *s;
			tgi_idem_info info;
			close(go[1]);
			close(res[0]);
			close(hold[1]);
			tgi_uuidv7(op);
			if (tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
				_exit(2);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			c = tgi_store_idem_claim(s, "k:race", op, DIGEST_A, 60, &info, err, sizeof err) < 0
			            ? 'E'
			            : (char)('0' + info.state);
			if (write(res[1], &c, 1) != 1)
				_exit(3);
			while (read(hold[0], &c, 1) < 0 && errno == EINTR)
				;
			tgi_store_close(s);
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	close(hold[0]);
	sleep_ms(300); /* all connected */
	close(go[1]); /* all start at once */
	int claimed = 0, in_flight = 0;
	for (int i = 0; i < NCLAIMERS; i++) {
		char c = 'E';
		if (read(res[0], &c, 1) != 1)
			break; /* a child died early: counted below */
		claimed += c == '0' + TGI_IDEM_CLAIMED;
		in_flight += c == '0' + TGI_IDEM_IN_FLIGHT;
	}
	close(hold[1]);
	close(res[0]);
	int failed = 0;
	for (int i = 0; i < NCLAIMERS; i++)
		failed += wait_child(pids[i]) != 0;
	assert_int_equal(failed, 0);
	assert_int_equal(claimed, 1);
	assert_int_equal(in_flight, NCLAIMERS - 1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem WHERE scope = '%s'", dg("k:race")), 1);
}

struct racer {
	const char        *where;
	pthread_barrier_t *start;
	int                state; /* tgi_idem_state, or -1 on error */
};

static void *race_thread(void *arg)
{
	struct racer *r = arg;
	char err[512], op[37];
	tgi_store *s;
	tgi_idem_info info;
	r->state = -1;
	tgi_uuidv7(op);
	if (tgi_store_open(r->where, 0, &s, err, sizeof err) < 0)
		return NULL;
	pthread_barrier_wait(r->start);
	if (tgi_store_idem_claim(s, "k:threads", op, NULL, 60, &info, err, sizeof err) == 0)
		r->state = (int)info.state;
	tgi_store_close(s);
	return NULL;
}

/* Threads, each with a handle of its own: one winner too. */
static void test_idem_concurrent_threads(void **state)
{
	struct fx *f = *state;
	pthread_t t[NCLAIMERS];
	struct racer r[NCLAIMERS];
	pthread_barrier_t start;
	int claimed = 0, in_flight = 0;

	pthread_barrier_init(&start, NULL, NCLAIMERS);
	for (int i = 0; i < NCLAIMERS; i++) {
		r[i] = (struct racer){ .where = f->where, .start = &start };
		assert_int_equal(pthread_create(&t[i], NULL, race_thread, &r[i]), 0);
	}
	for (int i = 0; i < NCLAIMERS; i++) {
		pthread_join(t[i], NULL);
		claimed += r[i].state == TGI_IDEM_CLAIMED;
		in_flight += r[i].state == TGI_IDEM_IN_FLIGHT;
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(claimed, 1);
	assert_int_equal(in_flight, NCLAIMERS - 1);
}

/* ---- approvals ---- */

static void approval(tgi_approval_row *r, const char *binding, const char *principal,
                     int64_t expires_ms)
{
	memset(r, 0, sizeof *r);
	snprintf(r->tool, sizeof r->tool, "deploy_service");
	snprintf(r->principal, sizeof r->principal, "%s", principal);
	snprintf(r->binding, sizeof r->binding, "%s", binding);
	r->args = "{\"env\":\"staging\"}";
	r->reason = "ask: deploy_service";
	r->expires_ms = expires_ms;
}

/* An approved approval of binding for "local": its id into id. */
static void approved(tgi_store *s, const char *binding, char id[37])
{
	char err[512];
	tgi_approval_row r;
	approval(&r, binding, "local", tgi_unix_ms() + 60000);
	assert_int_equal(tgi_store_approval_add(s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(s, r.id, 1, "alice", NULL, err, sizeof err), 0);
	memcpy(id, r.id, 37);
}

static const char *approval_state(struct fx *f, const char *id, char out[16])
{
	cx_text(f, out, 16, "SELECT state FROM approvals WHERE id = '%s'", id);
	return out;
}

/* One approval by id, with the state the list would show. */
static void test_approval_get(void **state)
{
	struct fx *f = *state;
	char err[512];
	tgi_approval_row row, got;
	int found = -1;
	memset(&row, 0, sizeof row);
	snprintf(row.tool, sizeof row.tool, "write_file");
	snprintf(row.principal, sizeof row.principal, "local");
	snprintf(row.binding, sizeof row.binding, "%064d", 7);
	row.args = "{\"path\":\"a\"}";
	row.reason = "ask rule";
	row.expires_ms = tgi_unix_ms() + 60000;
	assert_int_equal(tgi_store_approval_add(f->s, &row, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, row.id, &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "pending");
	assert_string_equal(got.args, "{\"path\":\"a\"}");
	assert_string_equal(got.tool, "write_file");
	free(got.args);
	free(got.reason);
	assert_int_equal(tgi_store_approval_decide(f->s, row.id, 0, "ops", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, row.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.decided_by, "ops");
	free(got.args);
	free(got.reason);
	assert_int_equal(tgi_store_approval_get(f->s, "01890000-0000-7000-8000-000000000000", &got,
	                                        &found, err, sizeof err), 0);
	assert_int_equal(found, 0);
}

/* An approval keeps the call's plan; a decision keeps who, when (the
 * store's clock) and why.  The reason is kept sanitized (controls as
 * spaces, bytes that are not UTF-8 as U+FFFD, trimmed; blank is none) and
 * at most 500 bytes. */
static void test_approval_plan_and_reason(void **state)
{
	struct fx *f = *state;
	char err[512], pid[37], big[TGI_APPROVAL_REASON_MAX + 2];
	tgi_approval_row row, got, *rows;
	size_t n;
	int found = -1;
	int64_t later = tgi_unix_ms() + 60000;
	const char *plan = "{\"path\":\"a.txt\",\"diff\":\"--- a/a.txt\\n+++ b/a.txt\\n@@ -1 +1 @@\\n-x\\n+y\\n\"}";

	memset(&row, 0, sizeof row);
	snprintf(row.tool, sizeof row.tool, "write_file");
	snprintf(row.principal, sizeof row.principal, "local");
	snprintf(row.binding, sizeof row.binding, "%064d", 9);
	row.args = "{\"path\":\"a.txt\"}";
	row.reason = "ask: write_file";
	row.plan = (char *)plan;
	row.expires_ms = later;
	assert_int_equal(tgi_store_approval_add(f->s, &row, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, row.id, &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.plan, plan);
	assert_null(got.decided_reason);
	assert_int_equal(got.decided_ms, 0);
	assert_string_equal(got.decided_by, "");
	tgi_approval_row_clear(&got);
	assert_null(got.plan);

	/* too long: refused, and the approval stays pending */
	memset(big, 'r', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(tgi_store_approval_decide(f->s, row.id, 0, "bob", big, err, sizeof err), -1);
	assert_non_null(strstr(err, "too long"));
	assert_non_null(strstr(err, "500"));
	assert_int_equal(tgi_store_approval_get(f->s, row.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "pending");
	tgi_approval_row_clear(&got);

	/* denied with a reason: kept sanitized, with who and when */
	int64_t t0 = tgi_unix_ms(), slack = CX_PG ? 5000 : 1000;
	assert_int_equal(tgi_store_approval_decide(f->s, row.id, 0, "bob",
	                                           "  prod\x01is\nfrozen \xff  ", err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_get(f->s, row.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.decided_by, "bob");
	assert_string_equal(got.decided_reason, "prod is frozen \xEF\xBF\xBD");
	assert_true(got.decided_ms >= t0 - slack && got.decided_ms <= tgi_unix_ms() + slack);
	assert_string_equal(got.plan, plan);
	tgi_approval_row_clear(&got);
	/* a denied one's id comes back from take */
	assert_int_equal(tgi_store_approval_take(f->s, row.binding, "local", &found, pid, err,
	                                         sizeof err), 0);
	assert_int_equal(found, -1);
	assert_string_equal(pid, row.id);
	/* a second decision changes nothing, the reason included */
	assert_int_equal(tgi_store_approval_decide(f->s, row.id, 1, "eve", "sure", err, sizeof err), -1);
	assert_non_null(strstr(err, "already denied"));

	/* without a plan; exactly 500 bytes of reason; a blank reason is none */
	tgi_approval_row r2 = row, r3 = row;
	r2.plan = NULL;
	sleep_ms(2);
	assert_int_equal(tgi_store_approval_add(f->s, &r2, err, sizeof err), 0);
	big[TGI_APPROVAL_REASON_MAX] = '\0';
	assert_int_equal(tgi_store_approval_decide(f->s, r2.id, 1, "alice", big, err, sizeof err), 0);
	sleep_ms(2);
	assert_int_equal(tgi_store_approval_add(f->s, &r3, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r3.id, 1, "alice", " \t\n ", err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	/* newest first: r3, r2, row */
	assert_string_equal(rows[0].id, r3.id);
	assert_null(rows[0].decided_reason);
	assert_string_equal(rows[0].decided_by, "alice");
	assert_true(rows[0].decided_ms > 0);
	assert_string_equal(rows[1].id, r2.id);
	assert_null(rows[1].plan);
	assert_int_equal(strlen(rows[1].decided_reason), TGI_APPROVAL_REASON_MAX);
	assert_string_equal(rows[2].decided_reason, "prod is frozen \xEF\xBF\xBD");
	assert_string_equal(rows[2].plan, plan);
	tgi_approval_rows_free(rows, n);

	/* a plan that is not a JSON object is refused */
	static const char *const bad_plans[] = { "[1, 2]", "\"text\"", "{not json" };
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad_plans); i++) {
		tgi_approval_row bad = row;
		bad.plan = (char *)bad_plans[i];
		assert_int_equal(tgi_store_approval_add(f->s, &bad, err, sizeof err), -1);
		assert_non_null(strstr(err, "plan"));
	}
	assert_int_equal(cx_num(f, "SELECT count(*) FROM approvals"), 3);
}

static void test_approvals_lifecycle(void **state)
{
	struct fx *f = *state;
	char bind[65], bind2[65], pid[37], err[512];
	tgi_approval_row r, r2, r3, got;
	tgi_approval_row *rows;
	size_t n;
	int found;
	int64_t later = tgi_unix_ms() + 3600 * 1000;

	tgi_sha256_hex("deploy_service\n{\"env\":\"staging\"}", 32, bind);
	tgi_sha256_hex("deploy_service\n{\"env\":\"prod\"}", 29, bind2);

	/* nothing queued */
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);

	/* queued: pending, listed, take says pending with its id */
	approval(&r, bind, "ci", later);
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	assert_true(tgi_uuid_ok(r.id));
	assert_string_equal(r.state, "pending");
	assert_true(r.created_ms > 0);
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 2);
	assert_string_equal(pid, r.id);
	/* bound to the principal too */
	assert_int_equal(tgi_store_approval_take(f->s, bind, "other", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_approval_list(f->s, NULL, &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, r.id);
	assert_string_equal(rows[0].state, "pending");
	assert_string_equal(rows[0].tool, "deploy_service");
	assert_string_equal(rows[0].principal, "ci");
	assert_string_equal(rows[0].binding, bind);
	assert_string_equal(rows[0].args, "{\"env\":\"staging\"}");
	assert_string_equal(rows[0].reason, "ask: deploy_service");
	assert_int_equal(rows[0].expires_ms, r.expires_ms);
	if (!tgi_store_shared(f->s))   /* else on the store's clock: test_approval_times_given */
		assert_int_equal(rows[0].expires_ms, later);
	tgi_approval_rows_free(rows, n);

	/* approved: taken once, by one of two handles, then used */
	assert_int_equal(tgi_store_approval_decide(f->s, r.id, 1, "alice", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r.id, 0, "bob", NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "is already approved"));
	assert_int_equal(tgi_store_approval_list(f->s, "approved", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].decided_by, "alice");
	tgi_approval_rows_free(rows, n);
	tgi_store *s2 = cx_open(f);
	assert_int_equal(tgi_store_approval_take(s2, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 1);
	tgi_store_close(s2);
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_approval_get(f->s, r.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "used");
	assert_string_equal(got.decided_by, "alice");
	tgi_approval_row_clear(&got);
	assert_int_equal(tgi_store_approval_list(f->s, NULL, &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 0);
	free(rows);
	assert_int_equal(tgi_store_approval_list(f->s, "used", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	tgi_approval_rows_free(rows, n);

	/* denied: the most recent decision says no; another principal's is not this one's */
	sleep_ms(2);
	approval(&r2, bind2, "ci", later);
	assert_int_equal(tgi_store_approval_add(f->s, &r2, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r2.id, 0, "alice", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_take(f->s, bind2, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, -1);
	assert_int_equal(tgi_store_approval_take(f->s, bind2, "eve", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_approval_list(f->s, "denied", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	tgi_approval_rows_free(rows, n);

	/* expired: cannot be decided, and is not listed as pending */
	sleep_ms(2);
	approval(&r3, bind, "ci", tgi_unix_ms() - 1000);
	assert_int_equal(tgi_store_approval_add(f->s, &r3, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_approval_list(f->s, "expired", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, r3.id);
	assert_string_equal(rows[0].state, "expired");
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_list(f->s, NULL, &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 0);
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 3); /* newest first */
	assert_string_equal(rows[0].id, r3.id);
	assert_string_equal(rows[0].state, "expired");
	assert_string_equal(rows[1].state, "denied");
	assert_string_equal(rows[2].state, "used");
	tgi_approval_rows_free(rows, n);
	assert_int_equal(tgi_store_approval_decide(f->s, r3.id, 1, "alice", NULL, err, sizeof err), -1);
	char iso[32], want[128];
	tgi_iso8601(r3.expires_ms, iso);
	snprintf(want, sizeof want, "approval '%s' expired at %s", r3.id, iso);
	assert_string_equal(err, want);
	char st[16];
	assert_string_equal(approval_state(f, r3.id, st), "expired");

	/* an approved one that expires before it is taken does not count */
	tgi_approval_row r4;
	approval(&r4, bind, "ci", tgi_unix_ms() + 400);
	assert_int_equal(tgi_store_approval_add(f->s, &r4, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r4.id, 1, NULL, NULL, err, sizeof err), 0);
	sleep_ms(600);
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 0);

	/* refusals */
	assert_int_equal(tgi_store_approval_decide(f->s, "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", 1, "a",
	                                           NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "no approval"));
	assert_int_equal(tgi_store_approval_decide(f->s, "'; DROP TABLE approvals; --", 1, "a", NULL,
	                                           err, sizeof err), -1);
	assert_non_null(strstr(err, "no approval"));
	tgi_approval_row bad;
	approval(&bad, "short", "ci", later);
	assert_int_equal(tgi_store_approval_add(f->s, &bad, err, sizeof err), -1);
	assert_non_null(strstr(err, "64-character binding"));
}

/* A store that is not shared keeps an approval's times as given: one made
 * 5 s back lists after one made now. */
static void test_approval_times_given(void **state)
{
	struct fx *f = *state;
	char err[512], bind[65];
	tgi_approval_row r, old, *rows;
	size_t n;
	if (tgi_store_shared(f->s)) {
		/* a shared store keeps them on its own clock: made now there,
		 * expiring as long after as asked */
		approval(&old, DIGEST_A, "ci", tgi_unix_ms() + 55000);
		old.created_ms = tgi_unix_ms() - 5000;
		assert_int_equal(tgi_store_approval_add(f->s, &old, err, sizeof err), 0);
		assert_true(old.created_ms > tgi_unix_ms() - 4000);
		assert_true(old.expires_ms - old.created_ms > 59000 &&
		            old.expires_ms - old.created_ms <= 60000);
		return;
	}
	tgi_sha256_hex("x", 1, bind);
	approval(&r, bind, "ci", tgi_unix_ms() + 60000);
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	approval(&old, bind, "ci", tgi_unix_ms() - 1000);
	old.created_ms = tgi_unix_ms() - 5000;
	assert_int_equal(tgi_store_approval_add(f->s, &old, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_list(f->s, "*", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, r.id);
	assert_string_equal(rows[1].id, old.id);
	assert_string_equal(rows[1].state, "expired");
	assert_int_equal(rows[1].created_ms, old.created_ms);
	tgi_approval_rows_free(rows, n);
}

/* A waiter uses the approval it waits on, not the newest of its binding:
 * of two queued for one call, approving the older one lets its waiter
 * run, and only once, for its own principal and binding, unexpired. */
static void test_approval_use(void **state)
{
	struct fx *f = *state;
	char bind[65], bind2[65], pid[37], err[512], older[37];
	tgi_approval_row r, got;
	int found, used = 9;
	int64_t later = tgi_unix_ms() + 3600 * 1000;

	tgi_sha256_hex("deploy_service\n{\"env\":\"staging\"}", 32, bind);
	tgi_sha256_hex("deploy_service\n{\"env\":\"prod\"}", 29, bind2);
	approval(&r, bind, "ci", later);
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	memcpy(older, r.id, sizeof older);
	sleep_ms(2);
	approval(&r, bind, "ci", later);   /* newer */
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, older, 1, "alice", NULL, err, sizeof err), 0);
	/* the newest of the binding is the pending one */
	assert_int_equal(tgi_store_approval_take(f->s, bind, "ci", &found, pid, err, sizeof err), 0);
	assert_int_equal(found, 2);
	assert_string_equal(pid, r.id);

	assert_int_equal(tgi_store_approval_use(f->s, r.id, "ci", bind, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);   /* pending */
	assert_int_equal(tgi_store_approval_use(f->s, older, "other", bind, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);   /* another principal's */
	assert_int_equal(tgi_store_approval_use(f->s, older, "ci", bind2, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);   /* another call's */
	assert_int_equal(tgi_store_approval_use(f->s, older, "ci", bind, &used, err, sizeof err), 0);
	assert_int_equal(used, 1);
	assert_int_equal(tgi_store_approval_use(f->s, older, "ci", bind, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);   /* once */
	assert_int_equal(tgi_store_approval_get(f->s, older, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "used");
	tgi_approval_row_clear(&got);
	assert_int_equal(tgi_store_approval_get(f->s, r.id, &got, &found, err, sizeof err), 0);
	assert_string_equal(got.state, "pending");
	tgi_approval_row_clear(&got);

	/* denied; approved but expired: not used */
	assert_int_equal(tgi_store_approval_decide(f->s, r.id, 0, "bob", NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_use(f->s, r.id, "ci", bind, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);
	approval(&r, bind2, "ci", tgi_unix_ms() + 400);
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r.id, 1, "alice", NULL, err, sizeof err), 0);
	sleep_ms(600);
	assert_int_equal(tgi_store_approval_use(f->s, r.id, "ci", bind2, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);
	/* refusals */
	assert_int_equal(tgi_store_approval_use(f->s, "nope", "ci", bind, &used, err, sizeof err), -1);
	assert_non_null(strstr(err, "no approval"));
	assert_int_equal(tgi_store_approval_use(f->s, older, "ci", NULL, &used, err, sizeof err), -1);
	assert_int_equal(tgi_store_approval_use(f->s, older, NULL, bind, &used, err, sizeof err), -1);
}

/* One approved approval, several processes taking it at once: one wins. */
static void test_approvals_single_use_across_processes(void **state)
{
	struct fx *f = *state;
	enum { N = 4 };
	char bind[65], err[512];
	tgi_approval_row r;
	pid_t pids[N];
	int go[2], res[2];

	tgi_sha256_hex("x", 1, bind);
	approval(&r, bind, "ci", tgi_unix_ms() + 3600 * 1000);
	assert_int_equal(tgi_store_approval_add(f->s, &r, err, sizeof err), 0);
	assert_int_equal(tgi_store_approval_decide(f->s, r.id, 1, "alice", NULL, err, sizeof err), 0);

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(res), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char e[512], c, p[37];
			int found;
			tgi_store *s;
			close(go[1]);
			close(res[0]);
			if (tgi_store_open(f->where, 0, &s, e, sizeof e) < 0)
				_exit(1);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			c = tgi_store_approval_take(s, bind, "ci", &found, p, e, sizeof e) < 0 ? 'E'
			                                                                    : (char)('2' + found);
			tgi_store_close(s);
			_exit(write(res[1], &c, 1) == 1 ? 0 : 1);
		}
	}
	close(go[0]);
	close(res[1]);
	sleep_ms(300); /* all connected */
	close(go[1]);
	int won = 0, none = 0;
	for (int i = 0; i < N; i++) {
		char c = 'E';
		if (read(res[0], &c, 1) != 1)
			break;
		won += c == '3';
		none += c == '2';
	}
	close(res[0]);
	int failed = 0;
	for (int i = 0; i < N; i++)
		failed += wait_child(pids[i]) != 0;
	assert_int_equal(failed, 0);
	assert_int_equal(won, 1);
	assert_int_equal(none, N - 1);
}

/* ---- MACs on the rows that carry authority (issue 22) ---- */

static void test_forged_approvals(void **state)
{
	struct fx *f = *state;
	char err[512], id[37], got[37], st[16];
	const char *b1 = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
	const char *b2 = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
	int found = 0, forged = 0, used = 0;

	/* an approved row verifies; found, not spent */
	approved(f->s, b1, id);
	assert_int_equal(tgi_store_approval_find(f->s, b1, "local", &found, got, &forged, err,
	                                         sizeof err), 0);
	assert_int_equal(found, 1);
	assert_int_equal(forged, 0);
	assert_string_equal(got, id);
	assert_string_equal(approval_state(f, id, st), "approved");
	tgi_approval_row row;
	assert_int_equal(tgi_store_approval_get(f->s, id, &row, &found, err, sizeof err), 0);
	assert_int_equal(row.verified, 1);
	tgi_approval_row_clear(&row);

	/* its expiry raised by hand: no one's approval */
	cx_exec(f, "UPDATE approvals SET expires_ms = expires_ms + 1 WHERE id = '%s'", id);
	assert_int_equal(tgi_store_approval_find(f->s, b1, "local", &found, got, &forged, err,
	                                         sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(forged, 1);
	assert_int_equal(tgi_store_approval_use(f->s, id, "local", b1, &used, err, sizeof err), 0);
	assert_int_equal(used, -1);
	assert_string_equal(approval_state(f, id, st), "approved");
	assert_int_equal(tgi_store_approval_get(f->s, id, &row, &found, err, sizeof err), 0);
	assert_int_equal(row.verified, 0);
	tgi_approval_row_clear(&row);

	/* another row's MAC copied onto a row of another binding */
	char id2[37];
	approved(f->s, b2, id2);
	cx_exec(f, "INSERT INTO approvals(id, tool, principal, binding, state, created_ms, expires_ms,"
	        " decided_by, decided_ms, mac) SELECT '01a22d03-4ed7-713f-b5b3-7dc7159d6c71', tool,"
	        " principal, '%s', state, created_ms, expires_ms, decided_by, decided_ms, mac"
	        " FROM approvals WHERE id = '%s'", b1, id2);
	assert_int_equal(tgi_store_approval_find(f->s, b1, "local", &found, got, &forged, err,
	                                         sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_approval_take(f->s, b1, "local", &found, got, err, sizeof err), 0);
	assert_int_equal(found, 0);

	/* the genuine one is spent once; its used row cannot be set back */
	assert_int_equal(tgi_store_approval_use(f->s, id2, "local", b2, &used, err, sizeof err), 0);
	assert_int_equal(used, 1);
	assert_int_equal(tgi_store_approval_use(f->s, id2, "local", b2, &used, err, sizeof err), 0);
	assert_int_equal(used, 0);
	cx_exec(f, "UPDATE approvals SET state = 'approved' WHERE id = '%s'", id2);
	assert_int_equal(tgi_store_approval_use(f->s, id2, "local", b2, &used, err, sizeof err), 0);
	assert_int_equal(used, -1);
}

static void test_approval_spent_with_claim(void **state)
{
	struct fx *f = *state;
	char err[512], id[37], op[37], op2[37], st[16];
	const char *b = "b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3";
	tgi_idem_info info;

	/* a claim taken: the approval is spent with it */
	approved(f->s, b, id);
	tgi_uuidv7(op);
	tgi_approval_spend sp = {id, "local", b};
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "k:spend", op, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_string_equal(approval_state(f, id, st), "used");

	/* that call in flight: a second approval is left unspent */
	char id2[37];
	approved(f->s, b, id2);
	tgi_uuidv7(op2);
	sp.id = id2;
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "k:spend", op2, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_IN_FLIGHT);
	assert_string_equal(approval_state(f, id2, st), "approved");

	/* done: a replay leaves it unspent too */
	assert_int_equal(record(f->s, op, "deploy", "persisted", NULL, tgi_unix_ms(), "k:spend",
	                        TGI_SETTLE_DONE, err, sizeof err), 0);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "k:spend", op2, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_DONE);
	assert_non_null(info.envelope);
	free(info.envelope);
	assert_string_equal(approval_state(f, id2, st), "approved");

	/* the done op's envelope edited: unknown, never replayed; resolved
	 * as not applied, the scope is claimed anew, spending the approval
	 * the others left */
	cx_exec(f, "UPDATE ops SET envelope = '{\"output\":\"forged\"}' WHERE op_id = '%s'", op);
	assert_int_equal(claim(f->s, "k:spend", op2, 30, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);
	assert_null(info.envelope);
	assert_int_equal(tgi_store_op_resolve(f->s, op, 0, err, sizeof err), 0);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "k:spend", op2, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_CLAIMED);
	assert_string_equal(approval_state(f, id2, st), "used");

	/* an approval used meanwhile: nothing is claimed */
	char id3[37], op3[37];
	approved(f->s, b, id3);
	sp.id = id3;
	tgi_uuidv7(op3);
	int used = 0;
	assert_int_equal(tgi_store_approval_use(f->s, id3, "local", b, &used, err, sizeof err), 0);
	assert_int_equal(used, 1);
	assert_int_equal(tgi_store_idem_claim_spend(f->s, "k:other", op3, NULL, 30, &sp, &info, err,
	                                            sizeof err), 0);
	assert_int_equal(info.state, TGI_IDEM_UNAPPROVED);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem WHERE scope = '%s'", dg("k:other")), 0);
}

static void test_forged_claims_buckets_pins(void **state)
{
	struct fx *f = *state;
	char err[512], op[37], op2[37], pinned[65];
	tgi_idem_info info;

	/* a done claim verifies, and replays */
	tgi_uuidv7(op);
	assert_int_equal(claim(f->s, "k:env", op, 30, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(record(f->s, op, "deploy", "persisted", NULL, tgi_unix_ms(), "k:env",
	                        TGI_SETTLE_DONE, err, sizeof err), 0);
	tgi_uuidv7(op2);
	assert_int_equal(claim(f->s, "k:env", op2, 30, &info), TGI_IDEM_DONE);
	free(info.envelope);
	/* its envelope edited: an unknown outcome, never a replay; resolvable */
	cx_exec(f, "UPDATE ops SET envelope = '{\"output\":\"forged\"}' WHERE op_id = '%s'", op);
	assert_int_equal(claim(f->s, "k:env", op2, 30, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);
	assert_null(info.envelope);
	assert_int_equal(tgi_store_op_resolve(f->s, op, 1, err, sizeof err), 0);
	assert_int_equal(claim(f->s, "k:env", op2, 30, &info), TGI_IDEM_DONE);   /* the operator's word */
	free(info.envelope);

	/* a done row planted with a made-up MAC; an in_flight one without */
	cx_exec(f, "INSERT INTO idem(scope, op_id, state, created_ms, updated_ms, mac) VALUES"
	        " ('%s', '%s', 'done', 0, 0, '%064d'),"
	        " ('%s', '%s', 'in_flight', 0, 0, NULL)", dg("k:planted"), op2, 0, dg("k:flying"), op2);
	char op3[37];
	tgi_uuidv7(op3);
	assert_int_equal(claim(f->s, "k:planted", op3, 30, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);
	assert_int_equal(claim(f->s, "k:flying", op3, 30, &info), TGI_IDEM_UNKNOWN);
	assert_int_equal(info.unverified, 1);

	/* a bucket: saved with its MAC by a take; edited, it is as a fresh one,
	 * whose tokens are the burst, not what the edit wrote */
	double tokens = 0, left = 0, retry = 0;
	int64_t upd = 0;
	int found = 0, ok = 0;
	assert_int_equal(tgi_store_bucket_take(f->s, "local", "deploy", 1, 3, 1, &ok, &left, &retry, err,
	                                       sizeof err), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(tgi_store_bucket_get(f->s, "local", "deploy", &tokens, &upd, &found, err,
	                                      sizeof err), 0);
	assert_int_equal(found, 1);
	cx_exec(f, "UPDATE rate_buckets SET tokens = 1000");
	assert_int_equal(tgi_store_bucket_get(f->s, "local", "deploy", &tokens, &upd, &found, err,
	                                      sizeof err), 0);
	assert_int_equal(found, 0);
	assert_int_equal(tgi_store_bucket_take(f->s, "local", "deploy", 1, 3, 1, &ok, &left, &retry, err,
	                                       sizeof err), 0);
	assert_int_equal(ok, 1);
	assert_true(left < 2.01);   /* the burst less one, not 999 */

	/* a pin: its digest changed by hand is CHANGED, even for that digest */
	const char *d1 = "d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1";
	const char *d2 = "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2";
	tgi_pin_state ps;
	assert_int_equal(tgi_store_pin_check(f->s, "srv__t", d1, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_NEW);
	assert_int_equal(tgi_store_pin_check(f->s, "srv__t", d1, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_SAME);
	cx_exec(f, "UPDATE pins SET digest = '%s'", d2);
	assert_int_equal(tgi_store_pin_check(f->s, "srv__t", d2, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_CHANGED);
	assert_string_equal(pinned, d2);   /* what the row holds */
	assert_int_equal(tgi_store_pin_set(f->s, "srv__t", d2, err, sizeof err), 0);
	assert_int_equal(tgi_store_pin_check(f->s, "srv__t", d2, &ps, pinned, err, sizeof err), 0);
	assert_int_equal(ps, TGI_PIN_SAME);
}

/* ---- pins of bridged MCP tools ---- */

static tgi_pin_state pin_check(tgi_store *s, const char *name, const char *digest,
                               char pinned[65])
{
	char err[512] = "";
	tgi_pin_state st = TGI_PIN_SAME;
	if (tgi_store_pin_check(s, name, digest, &st, pinned, err, sizeof err) < 0)
		fail_msg("pin_check: %s", err);
	return st;
}

static void test_pins(void **state)
{
	struct fx *f = *state;
	char pinned[65], err[512];

	/* first seen: pinned now; then the same; then a change leaves the pin */
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_A, pinned), TGI_PIN_NEW);
	assert_string_equal(pinned, DIGEST_A);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_A, pinned), TGI_PIN_SAME);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_B, pinned), TGI_PIN_CHANGED);
	assert_string_equal(pinned, DIGEST_A);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_B, pinned), TGI_PIN_CHANGED);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_A, pinned), TGI_PIN_SAME);

	/* pins are per tool */
	assert_int_equal(pin_check(f->s, "fs__write_file", DIGEST_B, pinned), TGI_PIN_NEW);
	assert_string_equal(pinned, DIGEST_B);

	/* an approved change moves the pin; the old digest is now the change */
	assert_int_equal(tgi_store_pin_set(f->s, "fs__read_text_file", DIGEST_B, err, sizeof err), 0);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_B, pinned), TGI_PIN_SAME);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_A, pinned), TGI_PIN_CHANGED);
	assert_string_equal(pinned, DIGEST_B);
	/* setting a pin that was never checked creates it */
	assert_int_equal(tgi_store_pin_set(f->s, "ev__echo", DIGEST_A, err, sizeof err), 0);
	assert_int_equal(pin_check(f->s, "ev__echo", DIGEST_A, pinned), TGI_PIN_SAME);

	/* pins outlive the handle */
	cx_reopen(f);
	assert_int_equal(pin_check(f->s, "fs__read_text_file", DIGEST_B, pinned), TGI_PIN_SAME);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM pins"), 3);
	/* first seen is kept when the pin moves */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM pins WHERE name = 'fs__read_text_file'"
	                           " AND first_ms <= updated_ms"), 1);
}

static void test_pin_refusals(void **state)
{
	struct fx *f = *state;
	char pinned[65], err[512], name[400];
	tgi_pin_state st;
	static const char *const bad_digests[] = {
		"", "abc", "XYZ", DIGEST_A "a",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg",
	};

	for (size_t i = 0; i < TGI_ARRAY_LEN(bad_digests); i++) {
		err[0] = '\0';
		assert_int_equal(tgi_store_pin_check(f->s, "t", bad_digests[i], &st, pinned, err, sizeof err), -1);
		assert_string_equal(err, "the pin of 't' is not a sha256 digest in lowercase hex");
		assert_int_equal(tgi_store_pin_set(f->s, "t", bad_digests[i], err, sizeof err), -1);
	}
	assert_int_equal(tgi_store_pin_check(f->s, "t", NULL, &st, pinned, err, sizeof err), -1);
	assert_int_equal(tgi_store_pin_check(f->s, "", DIGEST_A, &st, pinned, err, sizeof err), -1);
	assert_string_equal(err, "a pinned tool needs a name of 1 to 256 bytes");
	assert_int_equal(tgi_store_pin_check(f->s, NULL, DIGEST_A, &st, pinned, err, sizeof err), -1);
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	assert_int_equal(tgi_store_pin_set(f->s, name, DIGEST_A, err, sizeof err), -1);
	assert_string_equal(err, "a pinned tool needs a name of 1 to 256 bytes");
	/* a control character in a name is not echoed */
	assert_int_equal(tgi_store_pin_check(f->s, "a\nb", "x", &st, pinned, err, sizeof err), -1);
	assert_string_equal(err, "the pin of 'a b' is not a sha256 digest in lowercase hex");
	assert_int_equal(cx_num(f, "SELECT count(*) FROM pins"), 0);
}

/* Processes that see a tool for the first time at once: one pins it, the
 * others find that pin (the same or a change), never a second one. */
static void test_pin_one_winner(void **state)
{
	struct fx *f = *state;
	enum { N = 6 };
	pid_t pids[N];
	int go[2];
	assert_int_equal(pipe(go), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char err[512], pinned[65], c;
			tgi_store *s;
			tgi_pin_state st;
			close(go[1]);
			if (read(go[0], &c, 1) < 0 || tgi_store_open(f->where, 0, &s, err, sizeof err) < 0)
				_exit(10);
			int rc = tgi_store_pin_check(s, "ev__echo", i % 2 ? DIGEST_A : DIGEST_B, &st, pinned,
			                             err, sizeof err);
			tgi_store_close(s);
			if (rc < 0)
				_exit(11);
			if (st == TGI_PIN_NEW)
				_exit(strcmp(pinned, i % 2 ? DIGEST_A : DIGEST_B) ? 12 : 0);
			if (st == TGI_PIN_SAME)
				_exit(1);
			_exit(strcmp(pinned, i % 2 ? DIGEST_B : DIGEST_A) ? 13 : 2);
		}
	}
	close(go[0]);
	close(go[1]); /* go: every child reads end of file */
	int news = 0;
	for (int i = 0; i < N; i++) {
		int code = wait_child(pids[i]);
		if (code > 2)
			fail_msg("child %d exited %d", i, code);
		news += code == 0;
	}
	assert_int_equal(news, 1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM pins"), 1);
}

/* ---- an agent's conversation ---- */

/* An agent session's conversation: appended turn by turn, read back in
 * order (and as written, quotes and backslashes too) with its API; one
 * session holds one API; other sessions apart. */
static void test_messages(void **state)
{
	struct fx *f = *state;
	char err[512], api[32];
	json_t *v;

	/* a session that has none reads as empty */
	assert_int_equal(tgi_store_messages(f->s, "agent-1", &v, api, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 0);
	assert_string_equal(api, "");
	json_decref(v);

	json_t *t1 = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi \"there\" \\");
	json_t *t2 = json_pack("[{s:s, s:[]}, {s:s, s:i}]", "role", "assistant", "content",
	                       "role", "user", "n", 2);
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", "anthropic", t1, err, sizeof err), 0);
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", "anthropic", t2, err, sizeof err), 0);
	assert_int_equal(tgi_store_messages_append(f->s, "agent-2", "gemini", t1, err, sizeof err), 0);
	/* another API in the same session is refused, nothing written */
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", "gemini", t1, err, sizeof err), -1);
	assert_non_null(strstr(err, "anthropic"));
	/* an empty batch writes nothing; no session, no API, not an array: refused */
	json_t *none = json_array();
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", "anthropic", none, err, sizeof err), 0);
	assert_int_equal(tgi_store_messages_append(f->s, "", "anthropic", t1, err, sizeof err), -1);
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", NULL, t1, err, sizeof err), -1);
	assert_int_equal(tgi_store_messages_append(f->s, "agent-1", "anthropic", json_object_get(
	                 json_array_get(t1, 0), "role"), err, sizeof err), -1);
	assert_int_equal(tgi_store_messages(f->s, NULL, &v, api, err, sizeof err), -1);
	json_decref(none);

	assert_int_equal(tgi_store_messages(f->s, "agent-1", &v, api, err, sizeof err), 0);
	assert_string_equal(api, "anthropic");
	assert_int_equal(json_array_size(v), 3);
	assert_true(json_equal(json_array_get(v, 0), json_array_get(t1, 0)));
	assert_true(json_equal(json_array_get(v, 1), json_array_get(t2, 0)));
	assert_true(json_equal(json_array_get(v, 2), json_array_get(t2, 1)));
	json_decref(v);
	assert_int_equal(tgi_store_messages(f->s, "agent-2", &v, api, err, sizeof err), 0);
	assert_string_equal(api, "gemini");
	assert_int_equal(json_array_size(v), 1);
	json_decref(v);
	assert_int_equal(cx_num(f, "SELECT max(seq) FROM messages WHERE session = 'agent-1'"), 3);

	/* another handle (another process) appends after what is there */
	tgi_store *s2 = cx_open(f);
	assert_int_equal(tgi_store_messages_append(s2, "agent-1", "anthropic", t1, err, sizeof err), 0);
	tgi_store_close(s2);
	assert_int_equal(tgi_store_messages(f->s, "agent-1", &v, api, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 4);
	json_decref(v);

	/* a damaged row is an error with a sentence, not a crash */
	cx_exec(f, "UPDATE messages SET entry = '{not json' WHERE session = 'agent-2'");
	assert_int_equal(tgi_store_messages(f->s, "agent-2", &v, api, err, sizeof err), -1);
	assert_null(v);
	assert_non_null(strstr(err, "not JSON"));
	json_decref(t1);
	json_decref(t2);
}

/* ---- events that belong to no call ---- */

static void test_store_event(void **state)
{
	struct fx *f = *state;
	char err[512];
	json_t *a;

	json_t *d = json_pack("{s:s, s:s, s:s, s:s}", "tool", "fs__read_text_file", "server", "fs",
	                      "pinned", DIGEST_A, "now", DIGEST_B);
	tgi_event ev = { "mcp.tool.changed", NULL, d, 1234, 0 };
	assert_int_equal(tgi_store_event(f->s, NULL, &ev, err, sizeof err), 0);
	assert_int_equal(ev.seq, 1);
	json_decref(d);
	record_ok(f->s, "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77", "read_file", "persisted", "s1", 2000);
	/* no data, no time: now */
	int64_t t0 = tgi_unix_ms();
	tgi_event bare = { "mcp.server.exited", "bridge", NULL, 0, 0 };
	assert_int_equal(tgi_store_event(f->s, NULL, &bare, err, sizeof err), 0);

	assert_int_equal(tgi_store_events(f->s, NULL, 0, &a, err, sizeof err), 0);
	assert_int_equal(json_array_size(a), 6);
	json_t *first = json_array_get(a, 0), *last = json_array_get(a, 5);
	assert_string_equal(json_string_value(json_object_get(first, "type")), "mcp.tool.changed");
	assert_true(json_is_null(json_object_get(first, "op_id")));
	assert_true(json_is_null(json_object_get(first, "stage")));
	assert_string_equal(json_string_value(json_object_get(first, "ts")), "1970-01-01T00:00:01.234Z");
	json_t *data = json_object_get(first, "data");
	assert_string_equal(json_string_value(json_object_get(data, "server")), "fs");
	assert_string_equal(json_string_value(json_object_get(data, "pinned")), DIGEST_A);
	/* in sequence with the calls' events */
	assert_string_equal(json_string_value(json_object_get(last, "type")), "mcp.server.exited");
	assert_string_equal(json_string_value(json_object_get(last, "stage")), "bridge");
	assert_true(json_is_null(json_object_get(last, "data")));
	assert_true(json_integer_value(json_object_get(last, "seq")) >
	            json_integer_value(json_object_get(json_array_get(a, 4), "seq")));
	/* the seqs the store gave them are those read back */
	assert_int_equal(json_integer_value(json_object_get(first, "seq")), ev.seq);
	assert_int_equal(json_integer_value(json_object_get(last, "seq")), bare.seq);
	/* an event without an op has no op columns; a call's event has them */
	static const char *const from_op[] = { "session", "principal", "tool", "status",
	                                       "error_kind", "message", "args" };
	for (size_t i = 0; i < TGI_ARRAY_LEN(from_op); i++) {
		assert_null(json_object_get(first, from_op[i]));
		assert_null(json_object_get(last, from_op[i]));
		assert_non_null(json_object_get(json_array_get(a, 1), from_op[i]));
	}
	json_decref(a);
	assert_true(cx_num(f, "SELECT ts_ms FROM events WHERE type = 'mcp.server.exited'") >= t0);

	/* they belong to no op: a filter on a tool leaves them out */
	tgi_log_filter flt = { .tool = "read_file" };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &a, err, sizeof err), 0);
	assert_int_equal(json_array_size(a), 4);
	json_decref(a);

	/* refusals */
	tgi_event untyped = { NULL, NULL, NULL, 0, 0 };
	assert_int_equal(tgi_store_event(f->s, NULL, &untyped, err, sizeof err), -1);
	assert_string_equal(err, "an event needs a type");
	tgi_event empty = { "", NULL, NULL, 0, 0 };
	assert_int_equal(tgi_store_event(f->s, NULL, &empty, err, sizeof err), -1);
	assert_int_equal(tgi_store_event(f->s, NULL, NULL, err, sizeof err), -1);
	tgi_event bad_op = { "tool.hook.failed", "after", NULL, 0, 77 };
	assert_int_equal(tgi_store_event(f->s, "../x", &bad_op, err, sizeof err), -1);
	assert_string_equal(err, "op id '../x' is not a UUID");
	assert_int_equal(bad_op.seq, 0);
	assert_int_equal(tgi_store_event(f->s, "nope", &bad_op, err, sizeof err), -1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM events"), 6);
}

/* An event written after its call's row (an after-hook that failed) joins
 * that call's events, with the call's columns, and takes the next seq. */
static void test_store_event_of_op(void **state)
{
	struct fx *f = *state;
	char err[512], a[37];
	json_t *v;
	int64_t last = -1;

	uuid_at(1760000000000, a);
	record_ok(f->s, a, "shell", "persisted", "s1", 1760000000000);
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 4);
	json_t *d = json_pack("{s:s}", "hook", "./hooks/after.sh");
	tgi_event ev = { "tool.hook.failed", "after", d, 1760000000100, 0 };
	assert_int_equal(tgi_store_event(f->s, a, &ev, err, sizeof err), 0);
	json_decref(d);
	assert_int_equal(ev.seq, 5);
	assert_int_equal(tgi_store_last_seq(f->s, &last, err, sizeof err), 0);
	assert_int_equal(last, 5);

	tgi_log_filter flt = { .op_id = a };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 5);
	json_t *e = json_array_get(v, 4);
	assert_string_equal(json_string_value(json_object_get(e, "type")), "tool.hook.failed");
	assert_string_equal(json_string_value(json_object_get(e, "op_id")), a);
	assert_string_equal(json_string_value(json_object_get(e, "tool")), "shell");
	assert_string_equal(json_string_value(json_object_get(e, "session")), "s1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "hook")),
	                    "./hooks/after.sh");
	json_decref(v);
	/* and it follows the call's filters */
	flt = (tgi_log_filter){ .tool = "shell", .limit = 1 };
	assert_int_equal(tgi_store_events(f->s, &flt, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 0), "seq")), 5);
	json_decref(v);
}

/* ---- stats ---- */

static void record_stat(tgi_store *s, int64_t at, const char *tool, const char *status,
                        const char *kind, const char *rule, double ms)
{
	char id[37], env[256], err[512] = "";
	uuid_at(at, id);
	if (rule && !strcmp(rule, "(not json)"))
		snprintf(env, sizeof env, "{\"error\":");
	else if (rule)
		snprintf(env, sizeof env, "{\"status\":\"%s\",\"error\":{\"kind\":\"%s\",\"rule\":\"%s\"}}",
		         status, kind, rule);
	else if (kind)
		snprintf(env, sizeof env, "{\"status\":\"%s\",\"error\":{\"kind\":\"%s\",\"rule\":null}}",
		         status, kind);
	else
		snprintf(env, sizeof env, "{\"status\":\"%s\",\"error\":null}", status);
	tgi_op_record op = { .op_id = id, .tool = tool, .principal = "dev", .status = status,
	                     .error_kind = kind, .envelope = env, .started_ms = at, .duration_ms = ms };
	if (tgi_store_record(s, &op, NULL, 0, NULL, TGI_SETTLE_NONE, err, sizeof err) < 0)
		fail_msg("record: %s", err);
}

static json_t *stats(tgi_store *s, int64_t since)
{
	char err[512] = "";
	json_t *v = NULL;
	if (tgi_store_stats(s, since, &v, err, sizeof err) < 0)
		fail_msg("stats: %s", err);
	return v;
}

static json_int_t by_status(json_t *tool, const char *status)
{
	json_t *n = json_object_get(json_object_get(tool, "by_status"), status);
	return n ? json_integer_value(n) : -1;
}

#define R_RM "deny: shell(rm *)"
#define R_ETC "deny: list_dir(/etc)"

/* Per tool: calls, calls by status, nearest-rank p50/p99 of the calls
 * whose tool ran (persisted, committed, failed); denials by rule and kind;
 * both ordered by count; `since` exact to the millisecond. */
static void test_stats(void **state)
{
	struct fx *f = *state;
	static const struct {
		int         at;
		const char *tool, *status, *kind, *rule;
		double      ms;
	} rows[] = {
		{ 1, "read_file", "persisted", NULL, NULL, 4 },
		{ 2, "read_file", "persisted", NULL, NULL, 1 },
		{ 3, "read_file", "failed", "tool_error", NULL, 10 },
		{ 4, "read_file", "persisted", NULL, NULL, 3 },
		{ 5, "read_file", "invalid", "invalid_input", NULL, 0.1 },
		{ 6, "read_file", "replayed", NULL, NULL, 0.05 },
		{ 7, "read_file", "persisted", NULL, NULL, 2 },
		{ 8, "shell", "denied", "not_permitted", R_RM, 0.2 },
		{ 9, "shell", "committed", NULL, NULL, 7 },
		{ 10, "shell", "denied", "loop_detected", NULL, 0.3 },
		{ 11, "shell", "denied", "not_permitted", R_RM, 0.2 },
		{ 12, "list_dir", "denied", "not_permitted", R_ETC, 0.2 },
		{ 13, "list_dir", "pending", "needs_approval", "ask: list_dir(*)", 0.2 },
		{ 14, "list_dir", "denied", "not_permitted", "(not json)", 0.2 },
		{ 15, NULL, "invalid", "unknown_tool", NULL, 0.1 },
		{ 16, "apply_patch", "dry_run", NULL, NULL, 0.4 },
	};
	int64_t t0 = 1760000000000;
	char iso[32];

	/* an empty ledger */
	json_t *v = stats(f->s, 0);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 0);
	assert_true(json_is_null(json_object_get(v, "since")));
	assert_int_equal(json_array_size(json_object_get(v, "tools")), 0);
	assert_int_equal(json_array_size(json_object_get(v, "denials")), 0);
	json_decref(v);

	for (size_t i = 0; i < TGI_ARRAY_LEN(rows); i++)
		record_stat(f->s, t0 + rows[i].at, rows[i].tool, rows[i].status, rows[i].kind,
		            rows[i].rule, rows[i].ms);
	v = stats(f->s, 0);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 16);
	json_t *tools = json_object_get(v, "tools");
	assert_int_equal(json_array_size(tools), 5);
	/* by calls, then by name; a call with no tool named is a tool of its own */
	json_t *rf = json_array_get(tools, 0), *sh = json_array_get(tools, 1),
	       *ld = json_array_get(tools, 2), *ap = json_array_get(tools, 3),
	       *nt = json_array_get(tools, 4);
	assert_string_equal(json_string_value(json_object_get(rf, "tool")), "read_file");
	assert_string_equal(json_string_value(json_object_get(sh, "tool")), "shell");
	assert_string_equal(json_string_value(json_object_get(ld, "tool")), "list_dir");
	assert_string_equal(json_string_value(json_object_get(ap, "tool")), "apply_patch");
	assert_true(json_is_null(json_object_get(nt, "tool")));

	assert_int_equal(json_integer_value(json_object_get(rf, "calls")), 7);
	assert_int_equal(by_status(rf, "persisted"), 4);
	assert_int_equal(by_status(rf, "failed"), 1);
	assert_int_equal(by_status(rf, "invalid"), 1);
	assert_int_equal(by_status(rf, "replayed"), 1);
	assert_int_equal(by_status(rf, "denied"), -1);
	assert_int_equal(json_object_size(json_object_get(rf, "by_status")), 4);
	/* ran: 1 2 3 4 10 → p50 the 3rd, p99 the 5th */
	assert_true(json_real_value(json_object_get(rf, "p50_ms")) == 3);
	assert_true(json_real_value(json_object_get(rf, "p99_ms")) == 10);

	assert_int_equal(json_integer_value(json_object_get(sh, "calls")), 4);
	assert_int_equal(by_status(sh, "denied"), 3);
	assert_int_equal(by_status(sh, "committed"), 1);
	assert_true(json_real_value(json_object_get(sh, "p50_ms")) == 7);
	assert_true(json_real_value(json_object_get(sh, "p99_ms")) == 7);
	/* nothing ran: no durations */
	assert_int_equal(json_integer_value(json_object_get(ld, "calls")), 3);
	assert_true(json_is_null(json_object_get(ld, "p50_ms")));
	assert_true(json_is_null(json_object_get(ld, "p99_ms")));
	assert_int_equal(by_status(ap, "dry_run"), 1);
	assert_true(json_is_null(json_object_get(ap, "p50_ms")));
	assert_int_equal(by_status(nt, "invalid"), 1);

	/* denials: by count, then rule (none first), then kind; an envelope
	 * that is not JSON counts under no rule rather than failing */
	json_t *d = json_object_get(v, "denials");
	assert_int_equal(json_array_size(d), 4);
	static const struct {
		const char *rule, *kind;
		int         n;
	} want[] = { { R_RM, "not_permitted", 2 }, { NULL, "loop_detected", 1 },
	             { NULL, "not_permitted", 1 }, { R_ETC, "not_permitted", 1 } };
	for (size_t i = 0; i < TGI_ARRAY_LEN(want); i++) {
		json_t *e = json_array_get(d, i);
		if (want[i].rule)
			assert_string_equal(json_string_value(json_object_get(e, "rule")), want[i].rule);
		else
			assert_true(json_is_null(json_object_get(e, "rule")));
		assert_string_equal(json_string_value(json_object_get(e, "kind")), want[i].kind);
		assert_int_equal(json_integer_value(json_object_get(e, "count")), want[i].n);
	}
	json_decref(v);

	/* since: inclusive, to the millisecond */
	v = stats(f->s, t0 + 9);
	tgi_iso8601(t0 + 9, iso);
	assert_string_equal(json_string_value(json_object_get(v, "since")), iso);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 8);
	sh = json_array_get(json_object_get(v, "tools"), 0);
	assert_string_equal(json_string_value(json_object_get(sh, "tool")), "list_dir");
	assert_int_equal(json_integer_value(json_object_get(sh, "calls")), 3);
	sh = json_array_get(json_object_get(v, "tools"), 1);
	assert_string_equal(json_string_value(json_object_get(sh, "tool")), "shell");
	assert_int_equal(json_integer_value(json_object_get(sh, "calls")), 3);
	d = json_object_get(v, "denials");
	assert_int_equal(json_array_size(d), 4);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "count")), 1);
	json_decref(v);
	v = stats(f->s, t0 + 10);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 7);
	json_decref(v);
	v = stats(f->s, t0 + 17);
	assert_int_equal(json_integer_value(json_object_get(v, "calls")), 0);
	assert_int_equal(json_array_size(json_object_get(v, "tools")), 0);
	json_decref(v);
}

/* Nearest rank over many calls: p50 and p99 of 1..1000 ms are 500 and 990. */
static void test_stats_percentiles(void **state)
{
	struct fx *f = *state;
	int64_t t0 = 1760000000000;
	/* recorded out of order, so that the durations are not sorted by id */
	for (int i = 0; i < 1000; i++)
		record_stat(f->s, t0 + i, "search_files", "persisted", NULL, NULL, (double)((i * 7) % 1000 + 1));
	record_stat(f->s, t0 + 2000, "search_files", "failed", "timeout", NULL, 30000);
	json_t *v = stats(f->s, 0);
	json_t *t = json_array_get(json_object_get(v, "tools"), 0);
	assert_int_equal(json_integer_value(json_object_get(t, "calls")), 1001);
	/* 1001 ran: ranks 501 and 991 */
	assert_true(json_real_value(json_object_get(t, "p50_ms")) == 501);
	assert_true(json_real_value(json_object_get(t, "p99_ms")) == 991);
	json_decref(v);
	v = stats(f->s, t0 + 1000);
	t = json_array_get(json_object_get(v, "tools"), 0);
	assert_true(json_real_value(json_object_get(t, "p50_ms")) == 30000);
	json_decref(v);
}

/* ---- moving history between ledgers ---- */

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

/* Export: each op with its events and idempotency state, oldest first,
 * from `since`; then the events of no op; then claims that left no row.
 * A stop answered by the callback ends it, and the handle goes on. */
static void test_export(void **state)
{
	struct fx *f = *state;
	char err[512], a[37], b[37], c[37];
	int64_t t = 1700000000000;
	uuid_at(t, a);
	uuid_at(t + 1000, b);
	uuid_at(t + 2000, c);
	record_ok(f->s, a, "read_file", "persisted", "s1", t);
	tgi_idem_info info;
	assert_int_equal(claim(f->s, "key:k1", b, 60, &info), TGI_IDEM_CLAIMED);
	assert_int_equal(record(f->s, b, "write_file", "persisted", "s1", t + 1000, "key:k1",
	                        TGI_SETTLE_DONE, err, sizeof err), 0);
	record_ok(f->s, c, "shell", "denied", NULL, t + 2000);
	tgi_event lone = { "mcp.server.down", NULL, NULL, t + 3000, 0 };
	assert_int_equal(tgi_store_event(f->s, NULL, &lone, err, sizeof err), 0);
	char left[37];
	tgi_uuidv7(left);
	assert_int_equal(claim(f->s, "key:left", left, 60, &info), TGI_IDEM_CLAIMED);

	json_t *rows = json_array();
	assert_int_equal(tgi_store_export(f->s, 0, collect, rows, err, sizeof err), 0);
	assert_int_equal(json_array_size(rows), 5);
	json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
	assert_string_equal(json_string_value(json_object_get(r0, "op_id")), a);
	assert_true(json_is_null(json_object_get(r0, "idem_state")));
	assert_int_equal(json_array_size(json_object_get(r0, "events")), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r0, "args"), "path")), "a");
	assert_int_equal(json_integer_value(json_object_get(r0, "started_ms")), t);
	assert_string_equal(json_string_value(json_object_get(r1, "idem_state")), "done");
	/* the ledger keeps the scope's digest */
	assert_string_equal(json_string_value(json_object_get(r1, "idem_scope")), dg("key:k1"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(r1, "envelope"), "status")),
	                    "persisted");
	json_t *ev = json_object_get(json_array_get(rows, 3), "event");
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "mcp.server.down");
	json_t *cl = json_object_get(json_array_get(rows, 4), "claim");
	assert_string_equal(json_string_value(json_object_get(cl, "op_id")), left);
	assert_string_equal(json_string_value(json_object_get(cl, "state")), "in_flight");
	assert_string_equal(json_string_value(json_object_get(cl, "scope")), dg("key:left"));
	json_decref(rows);

	/* since: the first op is left out */
	rows = json_array();
	assert_int_equal(tgi_store_export(f->s, t + 500, collect, rows, err, sizeof err), 0);
	assert_int_equal(json_array_size(rows), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "op_id")), b);
	json_decref(rows);

	/* a stop answered by the callback ends it, and is returned */
	rows = json_array();
	assert_int_equal(tgi_store_export(f->s, 0, stop_after_two, rows, err, sizeof err), 7);
	assert_int_equal(json_array_size(rows), 2);
	json_decref(rows);
	int64_t seq;
	assert_int_equal(tgi_store_last_seq(f->s, &seq, err, sizeof err), 0);
}

/* The same history, written into a store: calls of three tools (one
 * without a tool), several statuses, denials by rule, an error message,
 * sessions, an idempotent call, events of no op, a claim that left no
 * row (what test_store_pg compares with SQLite's too). */
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
			.args_sha256 = DIGEST_A, .envelope = h[i].envelope, .started_ms = ms,
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
	struct during d = { .other = cx_open(f), .rows = json_array() };
	assert_int_equal(tgi_store_export(f->s, 0, write_during, &d, err, sizeof err), 0);
	assert_int_equal(d.failed, 0);
	assert_int_equal(json_array_size(d.rows), 12);   /* 10 ops, 1 event of no op, 1 claim */
	json_decref(d.rows);
	/* written, and in the next export */
	d.rows = json_array();
	d.wrote = 1;
	assert_int_equal(tgi_store_export(f->s, 0, write_during, &d, err, sizeof err), 0);
	assert_int_equal(json_array_size(d.rows), 14);
	json_decref(d.rows);
	tgi_store_close(d.other);
	/* the handle goes on after it */
	int64_t seq;
	assert_int_equal(tgi_store_last_seq(f->s, &seq, err, sizeof err), 0);
}

/* ---- eval runs (toolgate eval) ---- */

#define EVAL_ID(n) "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e0" #n
#define EVAL_REPORT "{\"scores\":{\"overall\":{\"cases\":98}},\"note\":\"caf\xc3\xa9 \\\"q\\\"\"}"

/* A run of model at ts_ms: tool 0.95, valid 0.75, no args rate, policy 1,
 * pass as given (NAN: none). */
static tgi_eval_row eval_row(const char *id, int64_t ts_ms, const char *model, double pass)
{
	tgi_eval_row r = {
		.id = id, .ts_ms = ts_ms, .provider = "scripted", .api = "openai-chat",
		.model = model, .profile = "coding", .manifest = DIGEST_A, .suite = DIGEST_B,
		.cases = 98, .runs = 1, .score = { 0.95, 0.75, NAN, 1.0, pass },
		.report = EVAL_REPORT,
	};
	return r;
}

/* Four runs put out of order: 1 (m1, ts 1000), 2 (m1, ts 2000, three runs,
 * no cases, an empty report), 3 (m2, ts 2000, no provider, profile nor
 * pass rate), 4 (m1, ts 3000); every run without an args rate. */
static void eval_put_four(tgi_store *s)
{
	char err[512];
	tgi_eval_row d = eval_row(EVAL_ID(4), 3000, "m1", 1.0);
	tgi_eval_row a = eval_row(EVAL_ID(1), 1000, "m1", 0.5);
	tgi_eval_row b = eval_row(EVAL_ID(3), 2000, "m2", NAN);
	b.provider = NULL;
	b.profile = NULL;
	tgi_eval_row c = eval_row(EVAL_ID(2), 2000, "m1", 0.875);
	c.cases = 0;
	c.runs = 3;
	c.report = "{}";
	const tgi_eval_row *all[] = { &d, &a, &b, &c };
	for (size_t i = 0; i < TGI_ARRAY_LEN(all); i++)
		if (tgi_store_eval_put(s, all[i], err, sizeof err) < 0)
			fail_msg("eval_put: %s", err);
}

/* The ids of the runs listed, in order, joined by ",": the last digit of each. */
static void eval_ids(tgi_store *s, const char *model, int64_t limit, char *out, size_t cap)
{
	char err[512];
	json_t *v = NULL;
	size_t i, k = 0;
	json_t *run;
	if (tgi_store_eval_list(s, model, limit, &v, err, sizeof err) < 0)
		fail_msg("eval_list: %s", err);
	out[0] = '\0';
	json_array_foreach(v, i, run) {
		const char *id = json_string_value(json_object_get(run, "id"));
		assert_non_null(id);
		k += (size_t)snprintf(out + k, cap - k, "%s%c", i ? "," : "", id[strlen(id) - 1]);
	}
	json_decref(v);
}

/* Runs kept and listed: newest limit, oldest first (a tie on ts_ms by
 * id), of one model or all; every field back as it was put, a rate not
 * given and a text not given as null, the report parsed. */
static void test_eval_runs(void **state)
{
	struct fx *f = *state;
	char err[512], ids[64], text[256];
	json_t *v = NULL;

	/* none yet: an empty list */
	assert_int_equal(tgi_store_eval_list(f->s, NULL, 20, &v, err, sizeof err), 0);
	assert_true(json_is_array(v));
	assert_int_equal(json_array_size(v), 0);
	json_decref(v);

	/* put out of order; 2 and 3 share a ts_ms */
	eval_put_four(f->s);

	eval_ids(f->s, NULL, 20, ids, sizeof ids);
	assert_string_equal(ids, "1,2,3,4");
	eval_ids(f->s, NULL, 0, ids, sizeof ids);      /* below 1: all */
	assert_string_equal(ids, "1,2,3,4");
	eval_ids(f->s, NULL, -5, ids, sizeof ids);
	assert_string_equal(ids, "1,2,3,4");
	eval_ids(f->s, NULL, 2, ids, sizeof ids);      /* the newest two, oldest first */
	assert_string_equal(ids, "3,4");
	eval_ids(f->s, NULL, 1, ids, sizeof ids);
	assert_string_equal(ids, "4");
	eval_ids(f->s, "m1", 20, ids, sizeof ids);
	assert_string_equal(ids, "1,2,4");
	eval_ids(f->s, "m1", 2, ids, sizeof ids);
	assert_string_equal(ids, "2,4");
	eval_ids(f->s, "m2", 20, ids, sizeof ids);
	assert_string_equal(ids, "3");
	eval_ids(f->s, "nobody", 20, ids, sizeof ids);
	assert_string_equal(ids, "");
	eval_ids(f->s, "m\xff", 20, ids, sizeof ids);  /* no run can have it: none */
	assert_string_equal(ids, "");

	assert_int_equal(tgi_store_eval_list(f->s, NULL, 20, &v, err, sizeof err), 0);
	/* the first: every field as put */
	json_t *r = json_array_get(v, 0);
	assert_int_equal(json_object_size(r), 12);
	assert_string_equal(json_string_value(json_object_get(r, "id")), EVAL_ID(1));
	assert_string_equal(json_string_value(json_object_get(r, "ts")), "1970-01-01T00:00:01.000Z");
	assert_string_equal(json_string_value(json_object_get(r, "provider")), "scripted");
	assert_string_equal(json_string_value(json_object_get(r, "api")), "openai-chat");
	assert_string_equal(json_string_value(json_object_get(r, "model")), "m1");
	assert_string_equal(json_string_value(json_object_get(r, "profile")), "coding");
	assert_string_equal(json_string_value(json_object_get(r, "manifest")), DIGEST_A);
	assert_string_equal(json_string_value(json_object_get(r, "suite")), DIGEST_B);
	assert_int_equal(json_integer_value(json_object_get(r, "cases")), 98);
	assert_int_equal(json_integer_value(json_object_get(r, "runs")), 1);
	json_t *sc = json_object_get(r, "scores");
	assert_int_equal(json_object_size(sc), 5);
	assert_true(json_real_value(json_object_get(sc, "tool")) == 0.95);
	assert_true(json_real_value(json_object_get(sc, "valid")) == 0.75);
	assert_true(json_is_null(json_object_get(sc, "args")));
	assert_true(json_real_value(json_object_get(sc, "policy")) == 1.0);
	assert_true(json_real_value(json_object_get(sc, "pass")) == 0.5);
	json_t *want = json_loads(EVAL_REPORT, 0, NULL);
	assert_non_null(want);
	assert_true(json_equal(json_object_get(r, "report"), want));
	json_decref(want);
	/* the second: no cases yet, three runs, an empty report */
	r = json_array_get(v, 1);
	assert_int_equal(json_integer_value(json_object_get(r, "cases")), 0);
	assert_int_equal(json_integer_value(json_object_get(r, "runs")), 3);
	assert_true(json_is_object(json_object_get(r, "report")));
	assert_int_equal(json_object_size(json_object_get(r, "report")), 0);
	assert_true(json_real_value(json_object_get(json_object_get(r, "scores"), "pass")) == 0.875);
	/* the third: texts not given and a rate not given read null */
	r = json_array_get(v, 2);
	assert_string_equal(json_string_value(json_object_get(r, "ts")), "1970-01-01T00:00:02.000Z");
	assert_true(json_is_null(json_object_get(r, "provider")));
	assert_true(json_is_null(json_object_get(r, "profile")));
	assert_string_equal(json_string_value(json_object_get(r, "api")), "openai-chat");
	assert_true(json_is_null(json_object_get(json_object_get(r, "scores"), "pass")));
	assert_true(json_real_value(json_object_get(json_object_get(r, "scores"), "tool")) == 0.95);
	json_decref(v);

	/* kept as given: a NAN rate is NULL, the report the text put */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM eval_runs WHERE score_args IS NULL"), 4);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM eval_runs WHERE score_pass IS NULL"), 1);
	cx_text(f, text, sizeof text, "SELECT report FROM eval_runs WHERE id = '" EVAL_ID(1) "'");
	assert_string_equal(text, EVAL_REPORT);
	/* and still there when opened again */
	cx_reopen(f);
	eval_ids(f->s, NULL, 20, ids, sizeof ids);
	assert_string_equal(ids, "1,2,3,4");
}

/* What an eval run may not be: each refused with a sentence, nothing kept. */
static void test_eval_refusals(void **state)
{
	struct fx *f = *state;
	char err[512], long_model[TGI_EVAL_TEXT_MAX + 2];
	json_t *v = NULL;
	tgi_eval_row r;

	assert_int_equal(tgi_store_eval_put(f->s, NULL, err, sizeof err), -1);
	assert_string_equal(err, "no eval run to keep");

	static const char *const bad_ids[] = { "", "nope", "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e0",
	                                       "0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e0\n" };
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad_ids); i++) {
		r = eval_row(bad_ids[i], 1000, "m", 0.5);
		assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
		if (!strstr(err, "is not a UUID"))
			fail_msg("id %zu: %s", i, err);
	}
	r = eval_row(NULL, 1000, "m", 0.5);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a UUID"));

	static const char *const bad_reports[] = { "[1]", "[]", "\"text\"", "3", "null", "{not json",
	                                           "", "{} {}" };
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad_reports); i++) {
		r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
		r.report = bad_reports[i];
		assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
		if (strcmp(err, "the report of eval run " EVAL_ID(1) " is not a JSON object"))
			fail_msg("report %zu: %s", i, err);
	}
	r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
	r.report = NULL;
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not a JSON object"));

	r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
	r.cases = -1;
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "negative count of cases"));
	r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
	r.runs = -2;
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "negative count of runs"));

	static const double bad_rates[] = { 1.5, -0.1, INFINITY, -INFINITY };
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad_rates); i++) {
		r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
		r.score[i % 5] = bad_rates[i];
		assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
		if (!strstr(err, "not within 0 to 1"))
			fail_msg("rate %zu: %s", i, err);
	}

	r = eval_row(EVAL_ID(1), 1000, "m\xff\xfe", 0.5);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_string_equal(err, "the model of an eval run is not UTF-8");
	r = eval_row(EVAL_ID(1), 1000, "\xc3", 0.5);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_string_equal(err, "the model of an eval run is not UTF-8");
	memset(long_model, 'x', sizeof long_model - 1);
	long_model[sizeof long_model - 1] = '\0';
	r = eval_row(EVAL_ID(1), 1000, long_model, 0.5);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "the model of an eval run is too long"));
	r = eval_row(EVAL_ID(1), 1000, "m", 0.5);
	r.suite = "\x80";
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_string_equal(err, "the suite of an eval run is not UTF-8");

	/* none of them was kept */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM eval_runs"), 0);

	/* the longest text allowed is kept; an id kept before is refused, the
	 * first one staying */
	long_model[TGI_EVAL_TEXT_MAX] = '\0';
	r = eval_row(EVAL_ID(1), 1000, long_model, 0.5);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), 0);
	r = eval_row(EVAL_ID(1), 2000, "other", 0.25);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot keep eval run " EVAL_ID(1)));
	assert_int_equal(tgi_store_eval_list(f->s, NULL, 0, &v, err, sizeof err), 0);
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "model")),
	                    long_model);
	json_decref(v);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM eval_runs WHERE model = 'other'"), 0);
	/* and the handle goes on */
	r = eval_row(EVAL_ID(2), 2000, "other", 0.25);
	assert_int_equal(tgi_store_eval_put(f->s, &r, err, sizeof err), 0);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM eval_runs"), 2);
}

/* A version 5 ledger (made by migrating an empty one to 5, as `toolgate
 * migrate --to 5` does) with a call, an approval with its plan and
 * reason, a conversation, a pin, and a claim with its call as they were
 * written before version 7 (a plain scope, the key in the envelope) is
 * upgraded by an ordinary open: everything stays and reads back, the
 * scope is kept as its digest and the key masked, the old claim carries
 * no authority, and eval runs can be kept. */
static void test_schema_upgrade_v5(void **state)
{
	struct fx *f = *state;
	char err[512], api[32], ids[64];
	tgi_approval_row got;
	int v = -1, found = 0;
	json_t *j = NULL;
	int64_t later = tgi_unix_ms() + 3600 * 1000;

	assert_string_equal(tgi_store_migration_title(6), "eval runs (toolgate eval)");
	assert_int_equal(tgi_store_open(f->where, TGI_STORE_NO_MIGRATE, &f->s, err, sizeof err), 0);
	assert_int_equal(tgi_store_migrate(f->s, 5, 0, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, 5);
	tgi_store_close(f->s);
	f->s = NULL;
	cx_schema_is(f, 5);
	assert_int_equal(cx_has_table(f, "eval_runs"), 0);
	cx_exec(f, "INSERT INTO approvals(id, op_id, tool, principal, binding, state, args, reason,"
	        " created_ms, expires_ms, decided_by, decided_ms, plan, decided_reason) VALUES"
	        " ('" EVAL_ID(9) "', NULL, 'shell', 'local', '%064d', 'denied', '{}', 'ask: shell',"
	        " 1000, %lld, 'bob', 1500, '{\"argv\":[\"rm\"]}', 'not today')",
	        7, (long long)later);
	cx_exec(f, "INSERT INTO ops(op_id, tool, status, started_ms, envelope, loop) VALUES"
	        " ('0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77', 'read_file', 'persisted', 1000, '{}', 'L');"
	        "INSERT INTO messages(session, seq, api, ts_ms, entry) VALUES"
	        " ('agent-1', 1, 'anthropic', 1000, '{\"role\":\"user\",\"content\":\"hi\"}');"
	        "INSERT INTO pins(name, digest, first_ms, updated_ms) VALUES"
	        " ('fs__x', '" DIGEST_A "', 1, 1);"
	        "INSERT INTO idem(scope, op_id, state, created_ms, updated_ms) VALUES"
	        " ('key:old-sk-1', '0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'done', 1000, 1000);"
	        "INSERT INTO ops(op_id, tool, status, started_ms, idem_scope, envelope) VALUES"
	        " ('0193a5f0-7c1f-7d2a-9b1e-4f0c2a9d1e77', 'deploy', 'persisted', 1000,"
	        " 'key:old-sk-1', '{\"output\":{\"ok\":1},\"idempotency_key\":\"old-sk-1\"}')");

	open_adopting(f);
	assert_int_equal(tgi_store_schema_version(f->s, &v, err, sizeof err), 0);
	assert_int_equal(v, TGI_STORE_SCHEMA_VERSION);
	cx_integrity(f);
	assert_int_equal(cx_has_index(f, "eval_runs_ts"), 1);
	assert_int_equal(cx_has_index(f, "eval_runs_model"), 1);
	/* every row is still there and reads back */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM ops"), 2);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM pins"), 1);
	assert_int_equal(tgi_store_approval_get(f->s, EVAL_ID(9), &got, &found, err, sizeof err), 0);
	assert_int_equal(found, 1);
	assert_string_equal(got.state, "denied");
	assert_string_equal(got.plan, "{\"argv\":[\"rm\"]}");
	assert_string_equal(got.decided_reason, "not today");
	tgi_approval_row_clear(&got);
	assert_int_equal(tgi_store_messages(f->s, "agent-1", &j, api, err, sizeof err), 0);
	assert_string_equal(api, "anthropic");
	assert_int_equal(json_array_size(j), 1);
	json_decref(j);
	/* version 7: the scope is its digest, the key masked; the old done claim
	 * has no MAC, and so no authority: an unknown outcome, never a replay */
	assert_int_equal(cx_num(f, "SELECT count(*) FROM idem WHERE scope = '%s'", dg("key:old-sk-1")), 1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM ops WHERE idem_scope LIKE 'sha256:%%'"), 1);
	assert_int_equal(cx_num(f, "SELECT count(*) FROM ops WHERE envelope LIKE '%%old-sk-1%%'"), 0);
	tgi_idem_info oi;
	memset(&oi, 0, sizeof oi);
	assert_int_equal(claim(f->s, "key:old-sk-1", "0193a5f0-7c30-7d2a-9b1e-4f0c2a9d1e77", 10, &oi),
	                 TGI_IDEM_UNKNOWN);
	assert_int_equal(oi.unverified, 1);
	free(oi.envelope);
	/* no runs, then four */
	assert_int_equal(tgi_store_eval_list(f->s, NULL, 20, &j, err, sizeof err), 0);
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	eval_put_four(f->s);
	/* opened again: nothing more to do, the runs stay */
	cx_reopen(f);
	eval_ids(f->s, "m1", 0, ids, sizeof ids);
	assert_string_equal(ids, "1,2,4");
	cx_schema_is(f, TGI_STORE_SCHEMA_VERSION);
}

/* ---- the ledger's identity ---- */

#define KEY_A "1111111111111111111111111111111111111111111111111111111111111111"
#define KEY_B "2222222222222222222222222222222222222222222222222222222222222222"

static void expect_foreign(const char *where, const tgi_key_source *k, const char *what)
{
	char err[1024];
	tgi_store *s = NULL;
	assert_int_equal(tgi_store_open_keyed(where, 0, k, &s, err, sizeof err), -1);
	assert_null(s);
	if (!strstr(err, what) || !strstr(err, "`toolgate ledger adopt`"))
		fail_msg("expected \"%s\", got: %s", what, err);
	/* a reader may open it: unkeyed, and nothing is written to it */
	assert_int_equal(tgi_store_open_keyed(where, TGI_STORE_FOREIGN_OK, k, &s, err, sizeof err), 0);
	assert_non_null(tgi_store_foreign(s));
	assert_null(tgi_store_mask_key(s));
	tgi_approval_row row = { .tool = "t", .principal = "p", .binding = DIGEST_A, .args = "{}",
	                         .reason = "r", .expires_ms = 1 };
	assert_int_equal(tgi_store_approval_add(s, &row, err, sizeof err), -1);
	assert_non_null(strstr(err, "nothing is written to a foreign ledger"));
	json_t *v = NULL;
	assert_int_equal(tgi_store_ops(s, NULL, &v, err, sizeof err), 0);
	json_decref(v);
	tgi_store_close(s);
}

/* Another machine's key (a fleet's key_env K1, opened with K2), a forged
 * identity, and records without one: each foreign.  A key that cannot be
 * loaded fails the open with its sentence. */
static void test_identity_key_and_forgery(void **state)
{
	struct fx *f = *state;
	char err[1024];
	tgi_key_source k = { .env = "TG_TEST_LEDGER_KEY" };
	setenv("TG_TEST_LEDGER_KEY", KEY_A, 1);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	char a[37];
	tgi_uuidv7(a);
	assert_int_equal(record(f->s, a, "t", "persisted", "s", 1, NULL, TGI_SETTLE_NONE, err,
	                        sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;
	setenv("TG_TEST_LEDGER_KEY", KEY_B, 1);
	expect_foreign(f->where, &k, "was not made by this machine's key");
	setenv("TG_TEST_LEDGER_KEY", KEY_A, 1);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), 0);
	tgi_store_close(f->s);
	f->s = NULL;

	/* its identity rebound by hand: the MAC no longer verifies */
	cx_exec(f, "UPDATE ledger SET bound = '/elsewhere/ledger.db'");
	expect_foreign(f->where, &k, "was not made by this machine's key (its identity is bound to "
	                             "/elsewhere/ledger.db)");
	/* ... and records with no identity at all (made by hand) */
	cx_exec(f, "DELETE FROM ledger");
	expect_foreign(f->where, &k, "holds records but has no identity");

	/* a bad key fails closed with its sentence */
	setenv("TG_TEST_LEDGER_KEY", "not-a-key", 1);
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), -1);
	assert_non_null(strstr(err, "$TG_TEST_LEDGER_KEY (ledger.key_env) does not hold 64 hex digits"));
	unsetenv("TG_TEST_LEDGER_KEY");
	assert_int_equal(tgi_store_open_keyed(f->where, 0, &k, &f->s, err, sizeof err), -1);
	assert_non_null(strstr(err, "which is not set: the ledger key is missing"));
}

/* ---- the list, run by each program on its backend ---- */

#define CX_ON(t) cmocka_unit_test_setup_teardown(t, setup_store, teardown)
#define CX_EMPTY(t) cmocka_unit_test_setup_teardown(t, setup_empty, teardown)
#define STORE_CONTRACT_TESTS                                   \
	CX_ON(test_open_new),                                  \
	CX_ON(test_record_read_back),                          \
	CX_ON(test_record_refusals),                           \
	CX_ON(test_record_atomic),                             \
	CX_ON(test_log_filters),                               \
	CX_ON(test_record_sets_seqs),                          \
	CX_ON(test_events_message),                            \
	CX_ON(test_events_commit_order),                       \
	CX_ON(test_loop_windows),                              \
	CX_ON(test_manifest),                                  \
	CX_ON(test_bucket_take),                               \
	CX_ON(test_bucket_refill_in_time),                     \
	CX_ON(test_bucket_take_processes),                     \
	CX_ON(test_watch),                                     \
	CX_EMPTY(test_migrate_steps),                          \
	CX_ON(test_newer_schema_refused),                      \
	CX_EMPTY(test_not_a_ledger),                           \
	CX_EMPTY(test_concurrent_open_new_ledger),             \
	CX_EMPTY(test_upgrade_v4_approvals),                   \
	CX_EMPTY(test_schema_upgrade_v5),                      \
	CX_ON(test_idem_lifecycle),                            \
	CX_ON(test_idem_dead_owner),                           \
	CX_ON(test_idem_resolve_marks_envelope),               \
	CX_ON(test_unknown_outcomes),                          \
	CX_ON(test_owner_identity),                            \
	CX_ON(test_idem_concurrent_processes),                 \
	CX_ON(test_idem_concurrent_threads),                   \
	CX_ON(test_approval_get),                              \
	CX_ON(test_approval_plan_and_reason),                  \
	CX_ON(test_approvals_lifecycle),                       \
	CX_ON(test_approval_times_given),                      \
	CX_ON(test_approval_use),                              \
	CX_ON(test_approvals_single_use_across_processes),     \
	CX_ON(test_forged_approvals),                          \
	CX_ON(test_approval_spent_with_claim),                 \
	CX_ON(test_forged_claims_buckets_pins),                \
	CX_ON(test_pins),                                      \
	CX_ON(test_pin_refusals),                              \
	CX_ON(test_pin_one_winner),                            \
	CX_ON(test_messages),                                  \
	CX_ON(test_store_event),                               \
	CX_ON(test_store_event_of_op),                         \
	CX_ON(test_stats),                                     \
	CX_ON(test_stats_percentiles),                         \
	CX_ON(test_export),                                    \
	CX_ON(test_export_one_snapshot),                       \
	CX_ON(test_eval_runs),                                 \
	CX_ON(test_eval_refusals),                             \
	CX_EMPTY(test_identity_key_and_forgery)

#endif
