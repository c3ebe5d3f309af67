/*
 * pipeline.c — `make bench`: read_file calls of a small file through the
 * whole pipeline (decode … persist, real SQLite ledger) in one process, one
 * thread pinned to one core.  Reports calls/s and p50/p99 latency with the
 * ledger at synchronous=NORMAL and at FULL, and a baseline measured in the
 * same run: the same file read directly (open, read, close), so the gate's
 * cost can be read as a ratio on a noisy machine.
 *
 * Then the middleware (src/mw/): the same reads in one session (each with
 * its own offset, as an agent reading a file in parts would) with every
 * part that can be switched off off, and with every part on but hooks —
 * loop detection, a rate limit on read_file, redaction keys, a JSONL event
 * sink and an event socket — in alternating rounds, so the two figures
 * share the machine's mood.  Redaction's secret patterns cannot be
 * switched off, so both sides pay for them (bench/redact.c measures them
 * alone).
 *
 * Last, what a call costs the ledger in pages: on a ledger of its own, a
 * reader holds a snapshot open so that the WAL cannot start over (a
 * checkpoint may copy pages back, but the file only grows), and the WAL's
 * growth over N read_file calls and N write_file calls (each with an
 * idempotency key: a claim and a record) is divided by a frame's size
 * (page_size + 24): `wal_pages_per_call`.
 *
 *   build/bench/pipeline [seconds-per-round] [rounds]
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "toolgate.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct {
	double per_s, p50, p99;
} figures;

static figures run_gate(const char *ws, int sync_full, double seconds, const char *config)
{
	tg_options o = {.workspace = ws, .sync_full = sync_full, .config_path = config};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0) {
		fprintf(stderr, "pipeline: %s\n", err);
		exit(1);
	}
	char args[64] = "{\"path\":\"small.txt\"}";
	tg_request req = {.tool = "read_file", .args = args, .session = config ? "bench" : NULL};
	unsigned part = 0;
	size_t cap = 1 << 22, n = 0;
	double *lat = malloc(cap * sizeof *lat);
	/* warm up */
	for (int i = 0; i < 200; i++) {
		tg_result *r;
		if (config)
			snprintf(args, sizeof args, "{\"path\":\"small.txt\",\"offset\":%u}", 1 + part++ % 20);
		tg_call(g, &req, &r);
		if (tg_result_status(r) != TG_PERSISTED) {
			fprintf(stderr, "pipeline: unexpected status %s\n%s\n",
			        tg_status_name(tg_result_status(r)), tg_result_json(r, 1));
			exit(1);
		}
		tg_result_free(r);
	}
	double t0 = now_us(), end = t0 + seconds * 1e6, t;
	do {
		tg_result *r;
		double a = now_us();
		if (config) /* the middleware rounds: a different part of the file each time */
			snprintf(args, sizeof args, "{\"path\":\"small.txt\",\"offset\":%u}", 1 + part++ % 20);
		tg_call(g, &req, &r);
		if (config && tg_result_status(r) != TG_PERSISTED) {
			fprintf(stderr, "pipeline: unexpected status %s\n%s\n",
			        tg_status_name(tg_result_status(r)), tg_result_json(r, 1));
			exit(1);
		}
		tg_result_free(r);
		t = now_us();
		if (n < cap)
			lat[n++] = t - a;
	} while (t < end);
	figures f = {.per_s = (double)n / ((t - t0) / 1e6)};
	qsort(lat, n, sizeof *lat, cmp_double);
	f.p50 = lat[n / 2];
	f.p99 = lat[(size_t)((double)n * 0.99)];
	free(lat);
	tg_gate_close(g);
	return f;
}

static figures run_baseline(const char *ws, double seconds)
{
	char path[4096], buf[4096];
	snprintf(path, sizeof path, "%s/small.txt", ws);
	size_t n = 0;
	double t0 = now_us(), end = t0 + seconds * 1e6, t;
	do {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t r = read(fd, buf, sizeof buf);
		(void)r;
		close(fd);
		n++;
		t = now_us();
	} while (t < end);
	return (figures){.per_s = (double)n / ((t - t0) / 1e6)};
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* n calls numbered from base, each one persisted, or exit: read_file of a
 * part of small.txt, or (write) write_file of a new file with a key. */
static void calls(tg_gate *g, int write, int n, int base)
{
	char args[256], key[64];
	for (int i = 0; i < n; i++) {
		if (write)
			snprintf(args, sizeof args, "{\"path\":\"out/w%d.txt\",\"content\":\"a line\\n\"}",
			         base + i);
		else
			snprintf(args, sizeof args, "{\"path\":\"small.txt\",\"offset\":%d}", 1 + (base + i) % 20);
		snprintf(key, sizeof key, "bench-%d", base + i);
		tg_request req = {.tool = write ? "write_file" : "read_file", .args = args,
		                  .idempotency_key = write ? key : NULL};
		tg_result *r;
		tg_call(g, &req, &r);
		if (tg_result_status(r) != TG_PERSISTED) {
			fprintf(stderr, "pipeline: unexpected status %s\n%s\n",
			        tg_status_name(tg_result_status(r)), tg_result_json(r, 1));
			exit(1);
		}
		tg_result_free(r);
	}
}

/* WAL frames (pages) per read-only and per side-effecting call, from the
 * WAL's growth while a reader's snapshot keeps it from starting over. */
static void wal_pages(const char *ws0, int n, double *ro, double *se)
{
	char ws[4200], path[4300], wal[4310];
	snprintf(ws, sizeof ws, "%s/walcount", ws0);
	mkdir(ws, 0700);
	snprintf(path, sizeof path, "%s/small.txt", ws);
	FILE *f = fopen(path, "w");
	for (int i = 1; i <= 20; i++)
		fprintf(f, "line %d of a small file read through the gate\n", i);
	fclose(f);
	snprintf(path, sizeof path, "%s/toolgate.yaml", ws);
	f = fopen(path, "w");
	fprintf(f, "permissions:\n  allow: [\"write_file(./out/**)\"]\n");
	fclose(f);
	tg_options o = {.workspace = ws, .config_path = path};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0) {
		fprintf(stderr, "pipeline: %s\n", err);
		exit(1);
	}
	/* warm up: the trees get past their first pages */
	calls(g, 0, 300, 0);
	calls(g, 1, 300, 0);

	snprintf(path, sizeof path, "%s/.toolgate/ledger.db", ws);
	snprintf(wal, sizeof wal, "%s-wal", path);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		fprintf(stderr, "pipeline: cannot hold a snapshot of %s: %s\n", path, sqlite3_errmsg(db));
		exit(1);
	}
	sqlite3_finalize(st);
	int64_t page = 0;
	if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		page = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	long long a = file_size(wal);
	calls(g, 0, n, 1000);
	long long b = file_size(wal);
	calls(g, 1, n, 1000);
	long long c = file_size(wal);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	tg_gate_close(g);
	if (a < 0 || b < a || c < b || page <= 0) {
		fprintf(stderr, "pipeline: the WAL did not grow as it should (%lld %lld %lld)\n", a, b, c);
		exit(1);
	}
	*ro = (double)(b - a) / (double)(page + 24) / n;
	*se = (double)(c - b) / (double)(page + 24) / n;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (rounds < 1 || rounds > 99 || seconds <= 0)
		return fprintf(stderr, "usage: pipeline [seconds] [rounds]\n"), 2;

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof set, &set); /* one core */

	char ws[] = "/tmp/toolgate-bench.XXXXXX";
	if (!mkdtemp(ws))
		return perror("mkdtemp"), 1;
	char file[4096];
	snprintf(file, sizeof file, "%s/small.txt", ws);
	FILE *f = fopen(file, "w");
	for (int i = 1; i <= 20; i++)
		fprintf(f, "line %d of a small file read through the gate\n", i);
	fclose(f);

	char off[4200], on[4200];
	snprintf(off, sizeof off, "%s/off.yaml", ws);
	snprintf(on, sizeof on, "%s/on.yaml", ws);
	f = fopen(off, "w");
	fprintf(f, "loop_detection: {enabled: false}\n");
	fclose(f);
	f = fopen(on, "w");
	fprintf(f, "loop_detection: {window: 30, warn: 3, block: 5}\n"
	           "rate_limits: {read_file: \"1000000/sec\"}\n"
	           "redact: {keys: [password, token, api_key, secret]}\n"
	           "events: {jsonl: .toolgate/events.jsonl, socket: .toolgate/events.sock}\n");
	fclose(f);

	double np[99], n50[99], n99[99], fp[99], f50[99], f99[99], bp[99];
	double offp[99], onp[99], on50[99], on99[99], ratio[99];
	for (int r = 0; r < rounds; r++) {
		figures a = run_gate(ws, 0, seconds, NULL);
		figures b = run_gate(ws, 1, seconds, NULL);
		figures c = run_baseline(ws, seconds / 4);
		np[r] = a.per_s, n50[r] = a.p50, n99[r] = a.p99;
		fp[r] = b.per_s, f50[r] = b.p50, f99[r] = b.p99;
		bp[r] = c.per_s;
		fprintf(stderr, "round %d: normal %.0f/s  full %.0f/s  baseline %.0f/s\n", r + 1,
		        a.per_s, b.per_s, c.per_s);
	}
	for (int r = 0; r < rounds; r++) {
		figures a = run_gate(ws, 0, seconds, off);
		figures b = run_gate(ws, 0, seconds, on);
		offp[r] = a.per_s;
		onp[r] = b.per_s, on50[r] = b.p50, on99[r] = b.p99;
		ratio[r] = b.per_s / a.per_s;
		fprintf(stderr, "round %d: middleware off %.0f/s  on %.0f/s\n", r + 1, a.per_s, b.per_s);
	}
	double mb = median(bp, rounds), mn = median(np, rounds);
	printf("pipeline_normal calls_per_s %.0f p50_us %.1f p99_us %.1f\n", mn, median(n50, rounds),
	       median(n99, rounds));
	printf("pipeline_full   calls_per_s %.0f p50_us %.1f p99_us %.1f\n", median(fp, rounds),
	       median(f50, rounds), median(f99, rounds));
	printf("baseline_read   reads_per_s %.0f (open+read+close of the same file)\n", mb);
	printf("ratio gate_normal/baseline %.3f (median of %d rounds of %.1f s)\n", mn / mb, rounds,
	       seconds);
	printf("middleware_off  calls_per_s %.0f\n", median(offp, rounds));
	printf("middleware_on   calls_per_s %.0f p50_us %.1f p99_us %.1f (all but hooks)\n",
	       median(onp, rounds), median(on50, rounds), median(on99, rounds));
	printf("ratio middleware on/off %.3f (median of the rounds' ratios; target >= 0.80)\n",
	       median(ratio, rounds));

	double ro, se;
	wal_pages(ws, 400, &ro, &se);
	printf("wal_pages_per_call read_only %.2f side_effecting %.2f (WAL growth over 400 calls"
	       " each / (page_size + 24); write_file with an idempotency key: claim and record;"
	       " targets <= 3 and <= 6)\n", ro, se);

	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : 1;
}
