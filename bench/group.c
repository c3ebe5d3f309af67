/*
 * group.c — `make bench`: durable side-effecting calls sharing one gate
 * (issue 24: group commit).  One process opens one gate on a SQLite
 * ledger at synchronous=FULL and makes write_file calls, each with a new
 * idempotency key (claim, write, record), from 1 thread and then from N
 * threads sharing the gate, for the same wall-clock window, in
 * alternating rounds.  Every call is answered only after its record is on
 * disk; with group commit, the records (and claims) of threads waiting at
 * the same moment share one commit.
 *
 * Prints calls/s for 1 and N threads and their ratio, as medians of the
 * rounds (the ratio is the median of each round's own ratio).
 *
 *   build/bench/group [threads] [seconds] [rounds]
 *
 * Owns: its temporary workspace.  Must not: touch anything else.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "toolgate.h"

#define MAX_THREADS 16

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

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

typedef struct {
	tg_gate     *g;
	int          id;
	int          round;
	double       warm, end;
	atomic_long *calls;
} worker;

static void *run(void *arg)
{
	worker *w = arg;
	char args[128], key[96];
	tg_request req = {.tool = "write_file", .args = args};
	for (unsigned long i = 0;; i++) {
		double a = now_us();
		if (a >= w->end)
			break;
		snprintf(args, sizeof args, "{\"path\":\"out-%d.txt\",\"content\":\"%lu\"}", w->id, i);
		snprintf(key, sizeof key, "group-%d-%d-%d-%lu", (int)getpid(), w->round, w->id, i);
		req.idempotency_key = key;
		tg_result *r;
		tg_status st = tg_call(w->g, &req, &r);
		if (st != TG_PERSISTED) {
			fprintf(stderr, "group: unexpected status %s\n%s\n", tg_status_name(st),
			        tg_result_json(r, 1));
			exit(1);
		}
		tg_result_free(r);
		if (a >= w->warm)
			atomic_fetch_add(w->calls, 1);
	}
	return NULL;
}

/* One round: n threads on gate g for seconds after a 0.3 s warm-up. */
static double round_of(tg_gate *g, int n, int round, double seconds)
{
	static int rounds_made;
	atomic_long calls = 0;
	pthread_t th[MAX_THREADS];
	worker w[MAX_THREADS];
	double warm = now_us() + 300e3, end = warm + seconds * 1e6;
	rounds_made++;
	for (int i = 0; i < n; i++) {
		w[i] = (worker){g, i, round * 100 + rounds_made, warm, end, &calls};
		if (pthread_create(&th[i], NULL, run, &w[i]))
			exit(1);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return (double)atomic_load(&calls) / seconds;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	if (threads < 1 || threads > MAX_THREADS || seconds <= 0 || rounds < 1 || rounds > 99)
		return fprintf(stderr, "usage: group [threads] [seconds] [rounds]\n"), 2;

	char ws[] = "/tmp/toolgate-bench-group.XXXXXX";
	if (!mkdtemp(ws))
		return perror("mkdtemp"), 1;
	char path[4200];
	snprintf(path, sizeof path, "%s/toolgate.yaml", ws);
	FILE *f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	/* acceptEdits: the writes are allowed without asking */
	fprintf(f, "mode: acceptEdits\nloop_detection: {enabled: false}\n");
	fclose(f);

	tg_options o = {.workspace = ws, .sync_full = 1, .config_path = path};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0)
		return fprintf(stderr, "group: %s\n", err), 1;

	double one[99], many[99], ratio[99];
	for (int r = 0; r < rounds; r++) {
		one[r] = round_of(g, 1, r, seconds);
		many[r] = round_of(g, threads, r, seconds);
		ratio[r] = many[r] / one[r];
		fprintf(stderr, "round %d: 1 thread %.0f/s  %d threads %.0f/s  ratio %.2f\n", r + 1,
		        one[r], threads, many[r], ratio[r]);
	}
	tg_gate_close(g);
	printf("full_keyed_write  1 thread  %7.0f calls/s\n", median(one, rounds));
	printf("full_keyed_write %2d threads %7.0f calls/s\n", threads, median(many, rounds));
	printf("ratio %d threads / 1 thread %.2f (median of %d rounds of %.1f s; target >= 3)\n",
	       threads, median(ratio, rounds), rounds, seconds);

	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : 1;
}
