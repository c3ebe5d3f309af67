/*
 * store.c — the ledger alone (src/store/sqlite.c), without the rest of the
 * pipeline: what one call's record costs, how many WAL pages it writes, what
 * closing a handle costs, and how the log filters and the stats answer on a
 * large ledger.
 *
 *   build/bench/store [records] [rounds] [dir]   record cost at NORMAL and FULL,
 *                                                and with what middleware keeps
 *   build/bench/store cli [processes] [dir]      one record per short process,
 *                                                alone and beside a connection
 *                                                that keeps the ledger open
 *   build/bench/store scan [rows] [dir]          log queries and stats over a large
 *                                                ledger
 *
 * A record has the shape the gate writes for a read_file call: a ~1.7 KB
 * envelope, small redacted args, three events, no session.  With the
 * middleware (record_mw) it also has a session, a loop-window entry and the
 * session's manifest digest, as a call with loop detection on writes.  Every run
 * works in a fresh temporary directory under dir (default /tmp, a real
 * disk: what fsync costs matters) and removes it afterwards.
 *
 * Owns: its temporary directories.  Must not: touch anything else.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "util/util.h"

#define WAL_FRAME (4096 + 24) /* page plus frame header, at the default page size */

static char envelope[2048];

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "store: %s: %s\n", what, err);
	exit(1);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void make_dir(const char *base, char *out, size_t cap)
{
	snprintf(out, cap, "%s/toolgate-store-bench.XXXXXX", base);
	if (!mkdtemp(out))
		die("mkdtemp", strerror(errno));
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* An envelope like the gate's for a read_file call (~1.7 KB). */
static void make_envelope(void)
{
	int n = snprintf(envelope, sizeof envelope,
	                 "{\"op_id\":\"%s\",\"call_id\":null,\"session\":null,\"tool\":\"read_file\","
	                 "\"status\":\"persisted\",\"error\":null,\"output\":{\"content\":\"",
	                 "01a22abb-f00a-7a20-ad13-3d8ddbedfddd");
	for (int i = 1; i <= 20 && n < 1500; i++)
		n += snprintf(envelope + n, sizeof envelope - (size_t)n,
		              "%6d\\tline %d of a small file read through the gate\\n", i, i);
	snprintf(envelope + n, sizeof envelope - (size_t)n,
	         "\",\"total_lines\":20},\"truncated\":null,\"idempotency_key\":null,"
	         "\"principal\":\"local\",\"stages\":[{\"stage\":\"decode\",\"ok\":true},"
	         "{\"stage\":\"validate\",\"ok\":true},{\"stage\":\"identify\",\"ok\":true,"
	         "\"principal\":\"local\"},{\"stage\":\"decide\",\"ok\":true,\"decision\":\"allow\"}],"
	         "\"duration_ms\":0.031}");
}

static const char *const tools[] = { "read_file", "list_dir", "search_files", "write_file",
                                     "apply_patch", "shell" };

/* A loop-window entry of the size loop detection keeps (two hashes and a
 * status). */
static const char loop_entry[] =
	"{\"sig\":\"read_file:9f2b5c1e0a7d4e3f8b6c2a1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f\","
	"\"out\":\"5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f9f2b5c1e0a7d4e3f8b6c2a1d0e9f8a7b6c\",\"ok\":1}";
static const char manifest[] = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
static int with_mw; /* record what middleware keeps too */

/* Record one call with a fresh UUIDv7; tool and status vary with i when
 * mixed (for the scan), else it is the read_file shape. */
static void record(tgi_store *s, long i, int mixed)
{
	char id[37], err[512];
	tgi_uuidv7(id);
	int64_t t = tgi_unix_ms();
	const char *tool = mixed ? tools[i % 6] : "read_file";
	const char *status = mixed && i % 50 == 0 ? "denied" : "persisted";
	tgi_op_record op = { .op_id = id, .tool = tool, .principal = "local", .status = status,
	                     .args_redacted = "{\"path\":\"small.txt\",\"offset\":1,\"limit\":2000}",
	                     .args_sha256 = "9f2b5c1e0a7d4e3f8b6c2a1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f",
	                     .envelope = envelope, .started_ms = t, .duration_ms = 0.031 };
	if (with_mw) {
		op.session = "bench-session";
		op.loop = loop_entry;
		op.manifest = manifest;
	}
	if (mixed)
		op.duration_ms = 0.02 + (double)(i % 997) / 10.0;
	tgi_event ev[3] = { { "tool.call.received", "decode", NULL, t, 0 },
	                    { "tool.call.started", "execute", NULL, t, 0 },
	                    { "tool.call.persisted", "persist", NULL, t, 0 } };
	if (tgi_store_record(s, &op, ev, 3, NULL, TGI_SETTLE_NONE, err, sizeof err) < 0)
		die("record", err);
}

static tgi_store *open_store(const char *db, int full)
{
	char err[512];
	tgi_store *s;
	if (tgi_store_open(db, full, &s, err, sizeof err) < 0)
		die("open", err);
	return s;
}

/* ---- record cost ---- */

typedef struct {
	double wall, cpu, p50, p99, close_ms;
} figures;

static figures run_records(const char *base, int full, long n)
{
	char dir[256], db[300];
	make_dir(base, dir, sizeof dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	tgi_store *s = open_store(db, full);
	for (long i = 0; i < 200; i++) /* warm up: statements prepared, pages cached */
		record(s, i, 0);

	double *lat = malloc((size_t)n * sizeof *lat);
	double c0 = cpu_us(), t0 = now_us();
	for (long i = 0; i < n; i++) {
		double a = now_us();
		record(s, i, 0);
		lat[i] = now_us() - a;
	}
	figures f = { .wall = (now_us() - t0) / (double)n, .cpu = (cpu_us() - c0) / (double)n };
	qsort(lat, (size_t)n, sizeof *lat, cmp_double);
	f.p50 = lat[n / 2];
	f.p99 = lat[(size_t)((double)n * 0.99)];
	free(lat);
	double a = now_us();
	tgi_store_close(s);
	f.close_ms = (now_us() - a) / 1000.0;
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return f;
}

/* WAL frames and file bytes one record adds, on a new ledger, over a run
 * too short for any checkpoint. */
static void pages_per_record(const char *base)
{
	enum { N = 40 };
	char dir[256], db[300], wal[310];
	make_dir(base, dir, sizeof dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	snprintf(wal, sizeof wal, "%s-wal", db);
	tgi_store *s = open_store(db, 0);
	for (long i = 0; i < 200; i++)
		record(s, i, 0);
	tgi_store_close(s); /* the ledger is now in the main file */
	s = open_store(db, 0);
	record(s, 0, 0);
	long long w0 = file_size(wal);
	for (long i = 0; i < N; i++)
		record(s, i, 0);
	long long w1 = file_size(wal);
	tgi_store_close(s);
	long long size0 = file_size(db);
	s = open_store(db, 0);
	for (long i = 0; i < 1000; i++)
		record(s, i, 0);
	tgi_store_close(s);
	printf("wal_frames_per_record %.2f (%.1f KB written to the WAL per record)\n",
	       (double)(w1 - w0) / WAL_FRAME / N, (double)(w1 - w0) / N / 1024.0);
	printf("ledger_bytes_per_record %.0f\n", (double)(file_size(db) - size0) / 1000.0);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs: 0 NORMAL, 1 FULL, 2 NORMAL with what middleware keeps. */
static int bench_records(long n, int rounds, const char *base)
{
	static const char *const names[] = { "normal", "full  ", "mw    " };
	double w[3][99], c[3][99], p50[3][99], p99[3][99], cl[3][99];
	make_envelope();
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++) {
			with_mw = k == 2;
			figures f = run_records(base, k == 1, k == 1 ? n / 4 : n);
			w[k][r] = f.wall, c[k][r] = f.cpu, p50[k][r] = f.p50, p99[k][r] = f.p99;
			cl[k][r] = f.close_ms;
		}
		fprintf(stderr, "round %d: normal %.1f us/record, full %.1f us/record, mw %.1f us/record\n",
		        r + 1, w[0][r], w[1][r], w[2][r]);
	}
	for (int k = 0; k < 3; k++)
		printf("record_%s us_per_record %.1f cpu_us %.1f p50_us %.1f p99_us %.1f close_ms %.2f\n",
		       names[k], median(w[k], rounds), median(c[k], rounds), median(p50[k], rounds),
		       median(p99[k], rounds), median(cl[k], rounds));
	for (int k = 0; k < 2; k++) {
		with_mw = k;
		printf("%s", k ? "mw: " : "");
		pages_per_record(base);
	}
	with_mw = 0;
	return 0;
}

/* ---- one record per process, as `toolgate call` does ---- */

/* procs processes one after another, each opening the ledger, recording
 * one call and closing it.  held: another connection keeps the ledger open
 * meanwhile (a `toolgate serve`, or calls running side by side), so no
 * close is the last one and SQLite's own checkpoint at close never runs. */
static void run_cli(long procs, const char *base, int held)
{
	char dir[256], db[300], wal[310];
	sqlite3 *keep = NULL;
	make_dir(base, dir, sizeof dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	snprintf(wal, sizeof wal, "%s-wal", db);
	tgi_store_close(open_store(db, 0));
	if (held && (sqlite3_open_v2(db, &keep, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	             sqlite3_exec(keep, "SELECT count(*) FROM ops", NULL, NULL, NULL) != SQLITE_OK))
		die("hold", sqlite3_errmsg(keep));

	double *closes = malloc((size_t)procs * sizeof *closes);
	int fds[2];
	if (pipe(fds) < 0)
		die("pipe", strerror(errno));
	long long wal_max = 0;
	double t0 = now_us();
	for (long i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", strerror(errno));
		if (pid == 0) {
			tgi_store *s = open_store(db, 0);
			record(s, i, 0);
			double a = now_us();
			tgi_store_close(s);
			double us = now_us() - a;
			_exit(write(fds[1], &us, sizeof us) == sizeof us ? 0 : 1);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
		    read(fds[0], &closes[i], sizeof closes[i]) != sizeof closes[i])
			die("child", "failed");
		long long w = file_size(wal);
		if (w > wal_max)
			wal_max = w;
	}
	double per = (now_us() - t0) / (double)procs;
	qsort(closes, (size_t)procs, sizeof *closes, cmp_double);
	printf("cli_%s processes %ld us_per_process %.0f close_p50_us %.1f close_p99_us %.1f"
	       " close_max_us %.1f wal_max_kb %.0f\n",
	       held ? "held" : "alone", procs, per, closes[procs / 2],
	       closes[(size_t)((double)procs * 0.99)], closes[procs - 1], (double)wal_max / 1024.0);
	free(closes);
	close(fds[0]);
	close(fds[1]);
	sqlite3_close(keep);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int bench_cli(long procs, const char *base)
{
	make_envelope();
	run_cli(procs, base, 0);
	run_cli(procs, base, 1);
	return 0;
}

/* ---- log queries over a large ledger ---- */

/* Median of three runs of a log query: events when events, else ops. */
static void time_query(tgi_store *s, int events, const char *what, tgi_log_filter f)
{
	char err[512];
	double t[3];
	size_t n = 0;
	for (int r = 0; r < 3; r++) {
		json_t *v;
		double a = now_us();
		int rc = events ? tgi_store_events(s, &f, 0, &v, err, sizeof err)
		                : tgi_store_ops(s, &f, &v, err, sizeof err);
		if (rc < 0)
			die(what, err);
		t[r] = (now_us() - a) / 1000.0;
		n = json_array_size(v);
		json_decref(v);
	}
	printf("scan %-6s %-38s rows %8zu ms %9.1f\n", events ? "events" : "ops", what, n,
	       median(t, 3));
}

/* Median of three runs of tgi_store_stats. */
static void time_stats(tgi_store *s, const char *what, int64_t since_ms)
{
	char err[512];
	double t[3];
	json_int_t calls = 0;
	for (int r = 0; r < 3; r++) {
		json_t *v;
		double a = now_us();
		if (tgi_store_stats(s, since_ms, &v, err, sizeof err) < 0)
			die(what, err);
		t[r] = (now_us() - a) / 1000.0;
		calls = json_integer_value(json_object_get(v, "calls"));
		json_decref(v);
	}
	printf("scan stats  %-38s calls %7lld ms %9.1f\n", what, (long long)calls, median(t, 3));
}

static int bench_scan(long rows, const char *base)
{
	char dir[256], db[300];
	make_envelope();
	make_dir(base, dir, sizeof dir);
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	tgi_store *s = open_store(db, 0);
	double t0 = now_us();
	for (long i = 0; i < rows; i++)
		record(s, i, 1);
	double t1 = now_us();
	tgi_store_close(s);
	printf("scan filled %ld rows in %.1f s (%.1f us/record), ledger %.0f MB\n", rows,
	       (t1 - t0) / 1e6, (t1 - t0) / (double)rows, (double)file_size(db) / 1048576.0);

	s = open_store(db, 0);
	int64_t recent = tgi_unix_ms() - 1000;
	for (int events = 0; events <= 1; events++) {
		time_query(s, events, "--tool apply_patch --limit 50",
		           (tgi_log_filter){ .tool = "apply_patch", .limit = 50 });
		time_query(s, events, "--tool no_such_tool", (tgi_log_filter){ .tool = "no_such_tool" });
		time_query(s, events, "--tool no_such_tool --limit 50",
		           (tgi_log_filter){ .tool = "no_such_tool", .limit = 50 });
		time_query(s, events, "--status denied --limit 50",
		           (tgi_log_filter){ .status = "denied", .limit = 50 });
		time_query(s, events, "--status failed", (tgi_log_filter){ .status = "failed" });
		time_query(s, events, "--since 1s ago", (tgi_log_filter){ .since_ms = recent });
		time_query(s, events, "--limit 50", (tgi_log_filter){ .limit = 50 });
	}
	/* what `toolgate log` does for each call it shows, and a replay's
	 * lookup: one op by its id (one from the middle of the ledger) */
	json_t *mid;
	char err[512], op[37];
	if (tgi_store_ops(s, &(tgi_log_filter){ .since_ms = recent }, &mid, err, sizeof err) < 0)
		die("ops", err);
	json_t *one = json_array_get(mid, json_array_size(mid) / 2);
	snprintf(op, sizeof op, "%s", one ? json_string_value(json_object_get(one, "op_id")) : "");
	json_decref(mid);
	if (*op) {
		time_query(s, 0, "--op (one call)", (tgi_log_filter){ .op_id = op });
		time_query(s, 1, "--op (one call's events)", (tgi_log_filter){ .op_id = op });
	}
	/* `toolgate log --follow`: the events after a seq near the newest,
	 * a page at a time */
	int64_t top = 0;
	if (tgi_store_last_seq(s, &top, err, sizeof err) < 0)
		die("last seq", err);
	double tf[3];
	size_t nf = 0;
	for (int r = 0; r < 3; r++) {
		json_t *v;
		double a = now_us();
		if (tgi_store_events(s, &(tgi_log_filter){ .limit = 512 }, top - 300, &v, err,
		                     sizeof err) < 0)
			die("follow", err);
		tf[r] = (now_us() - a) / 1000.0;
		nf = json_array_size(v);
		json_decref(v);
	}
	printf("scan events %-38s rows %8zu ms %9.1f\n", "--follow (after newest - 300)", nf,
	       median(tf, 3));
	time_stats(s, "all", 0);
	time_stats(s, "--since 1s ago", recent);
	tgi_store_close(s);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: store [records] [rounds] [dir] | cli [processes] [dir] | scan [rows] [dir]\n";
	int mode = argc > 1 && !strcmp(argv[1], "cli") ? 1 : argc > 1 && !strcmp(argv[1], "scan") ? 2 : 0;
	int a = mode ? 2 : 1; /* the first number */
	long n = argc > a ? atol(argv[a]) : mode == 1 ? 2000 : mode == 2 ? 1000000 : 5000;
	int rounds = !mode && argc > 2 ? atoi(argv[2]) : 3;
	const char *dir = argc > a + 1 + !mode ? argv[a + 1 + !mode] : "/tmp";
	if (n < (mode == 1 ? 1 : 100) || rounds < 1 || rounds > 99)
		return fputs(usage, stderr), 2;
	if (mode == 1)
		return bench_cli(n, dir);
	if (mode == 2)
		return bench_scan(n, dir);
	return bench_records(n, rounds, dir);
}
