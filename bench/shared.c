/*
 * shared.c — `make bench`: the pipeline with one ledger shared by several
 * gate processes (issue: one ledger for many gates).  Each process opens
 * its own gate on the same ledger (the store's URL or file path, as
 * $TOOLGATE_STORE would name it) and its own workspace, and makes calls
 * back to back for the same wall-clock window:
 *
 *   read   read_file of a small file: decode … persist, one record a call;
 *   write  write_file with a new idempotency key each call: the claim
 *          (in_flight, committed before the write), the write itself
 *          (a small file, fsync, rename), then the record that settles
 *          the claim — the exactly-once path.
 *
 * Prints the calls/s of all processes together and the p50/p99 latency
 * of one call (over every process's calls), for 1 and N processes, as
 * medians of rounds.
 *
 *   build/bench/shared STORE read|write PROCS [seconds] [rounds]
 *
 * STORE "-" takes $TOOLGATE_STORE (a URL with a password stays off the
 * command line, which other users can read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "toolgate.h"

#define MAX_PROCS 16
#define LAT_CAP   (1 << 20)

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

/* One process's calls until `end` (CLOCK_MONOTONIC µs, shared by all):
 * their latencies, as raw doubles, written to fd.  Exits non-zero on an
 * unexpected status. */
static void child(const char *ws, int writes, double warm_until, double end, int id, int fd)
{
	tg_options o = {.workspace = ws, .sync_full = -1};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0) {
		fprintf(stderr, "shared: %s\n", err);
		_exit(1);
	}
	char args[128], key[64];
	tg_request req = {.tool = writes ? "write_file" : "read_file", .args = args};
	double *lat = malloc(LAT_CAP * sizeof *lat);
	size_t n = 0;
	unsigned long i = 0;
	for (double t = now_us(); t < end; t = now_us(), i++) {
		if (writes) {
			snprintf(args, sizeof args, "{\"path\":\"out-%d.txt\",\"content\":\"%lu\"}", id, i);
			snprintf(key, sizeof key, "bench-%d-%d-%lu", getpid(), id, i);
			req.idempotency_key = key;
		} else {
			snprintf(args, sizeof args, "{\"path\":\"small.txt\"}");
		}
		tg_result *r;
		double a = now_us();
		tg_status st = tg_call(g, &req, &r);
		double b = now_us();
		if (st != TG_PERSISTED) {
			fprintf(stderr, "shared: unexpected status %s\n%s\n", tg_status_name(st),
			        tg_result_json(r, 1));
			_exit(1);
		}
		tg_result_free(r);
		if (a >= warm_until && n < LAT_CAP)
			lat[n++] = b - a;
	}
	tg_gate_close(g);
	size_t bytes = n * sizeof *lat;
	const char *p = (const char *)lat;
	while (bytes) {
		ssize_t w = write(fd, p, bytes);
		if (w <= 0 && errno != EINTR)
			_exit(1);
		if (w > 0) {
			p += w;
			bytes -= (size_t)w;
		}
	}
	_exit(0);
}

typedef struct {
	double per_s, p50, p99;
} figures;

/* One round: procs processes for `seconds` after a 0.5 s warm-up. */
static figures round_of(const char *ws, int write, int procs, double seconds)
{
	double start = now_us() + 300e3;   /* every child opened its gate by then */
	double warm = start + 500e3, end = warm + seconds * 1e6;
	int fds[MAX_PROCS];
	pid_t pids[MAX_PROCS];
	for (int p = 0; p < procs; p++) {
		int pipefd[2];
		if (pipe(pipefd) < 0)
			exit(1);
		pids[p] = fork();
		if (pids[p] == 0) {
			close(pipefd[0]);
			child(ws, write, warm, end, p, pipefd[1]);
		}
		close(pipefd[1]);
		fds[p] = pipefd[0];
	}
	size_t n = 0, cap = LAT_CAP;
	double *lat = malloc(cap * sizeof *lat);
	for (int p = 0; p < procs; p++) {
		for (;;) {
			if (n == cap)
				lat = realloc(lat, (cap *= 2) * sizeof *lat);
			ssize_t r = read(fds[p], lat + n, (cap - n) * sizeof *lat);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			n += (size_t)r / sizeof *lat;   /* whole doubles: pipe writes of 8-byte multiples */
		}
		close(fds[p]);
		int status;
		waitpid(pids[p], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			exit(1);
	}
	figures f = {.per_s = (double)n / seconds};
	qsort(lat, n, sizeof *lat, cmp_double);
	f.p50 = n ? lat[n / 2] : 0;
	f.p99 = n ? lat[(size_t)((double)n * 0.99)] : 0;
	free(lat);
	return f;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return fprintf(stderr, "usage: shared STORE read|write PROCS [seconds] [rounds]\n"), 2;
	const char *store = strcmp(argv[1], "-") ? argv[1] : getenv("TOOLGATE_STORE");
	int write = !strcmp(argv[2], "write");
	int procs = atoi(argv[3]);
	double seconds = argc > 4 ? atof(argv[4]) : 2.0;
	int rounds = argc > 5 ? atoi(argv[5]) : 3;
	if (!store || procs < 1 || procs > MAX_PROCS || rounds < 1 || rounds > 99 || seconds <= 0 ||
	    (!write && strcmp(argv[2], "read")))
		return fprintf(stderr, "usage: shared STORE read|write PROCS [seconds] [rounds]\n"), 2;

	/* $TMPDIR: where the workspaces are (a tmpfs there takes the tool's
	 * own syncs out of the figure, leaving the ledger's) */
	char ws[2048];
	const char *tmp = getenv("TMPDIR");
	snprintf(ws, sizeof ws, "%s/toolgate-bench-shared.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(ws))
		return perror("mkdtemp"), 1;
	char path[4096];
	snprintf(path, sizeof path, "%s/small.txt", ws);
	FILE *f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	fputs("one\ntwo\nthree\n", f);
	fclose(f);
	/* acceptEdits: the writes are allowed without asking */
	snprintf(path, sizeof path, "%s/toolgate.yaml", ws);
	if (!(f = fopen(path, "w")))
		return perror(path), 1;
	fprintf(f, "mode: acceptEdits\nloop_detection: {enabled: false}\n");
	fclose(f);
	setenv("TOOLGATE_CONFIG", path, 1);
	setenv("TOOLGATE_STORE", store, 1);

	double per_s[99], p50[99], p99[99];
	for (int r = 0; r < rounds; r++) {
		figures fg = round_of(ws, write, procs, seconds);
		per_s[r] = fg.per_s;
		p50[r] = fg.p50;
		p99[r] = fg.p99;
	}
	printf("%-5s %2d process%s  %9.0f calls/s   p50 %7.1f us   p99 %8.1f us   (median of %d "
	       "rounds of %.1f s)\n",
	       write ? "write" : "read", procs, procs == 1 ? "  " : "es", median(per_s, rounds),
	       median(p50, rounds), median(p99, rounds), rounds, seconds);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : 1;
}
