/*
 * agent.c — `make bench`: what the agent loop costs a turn, apart from the
 * tools it runs.  A scripted conversation (OpenAI Chat shape) of N turns,
 * each one read_file call of another part of a small file, then a final
 * answer, through tg_agent() on a real gate and ledger.  Reports ms per
 * turn in all, the gate's own time per call (the envelopes' duration_ms,
 * from the ledger), and the loop's overhead per turn: the difference
 * (building the request, decoding the reply, the history, saving the
 * conversation to the ledger).  Median of rounds.
 *
 * Then the same loop over HTTP: the openai-chat provider against the local
 * fake provider (tests/fake_provider.c, scenario agent_chat: a streamed
 * turn with two read_file calls, then a streamed answer, no delays of its
 * own), so the figure is the loop plus libcurl, SSE and the fake's
 * serving, without any model.
 *
 *   build/bench/agent [turns] [rounds] [fake_provider data_dir]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "toolgate.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The script: turns read_file calls, then a text answer. */
static void write_script(const char *path, int turns)
{
	FILE *f = fopen(path, "w");
	fputs("{\"api\":\"openai-chat\",\"turns\":[", f);
	for (int i = 0; i < turns; i++)
		fprintf(f, "{\"id\":\"r%d\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
		        "\"finish_reason\":\"tool_calls\",\"message\":{\"role\":\"assistant\","
		        "\"content\":null,\"tool_calls\":[{\"id\":\"c%d\",\"type\":\"function\","
		        "\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":"
		        "\\\"small.txt\\\",\\\"offset\\\":%d,\\\"limit\\\":1}\"}}]}}]},",
		        i, i, 1 + i % 20);
	fputs("{\"id\":\"done\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
	      "\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\",\"content\":"
	      "\"Read it all.\"}}]}]}", f);
	fclose(f);
}

/* The gate's own time (ms) for the calls of session. */
static double gate_ms(tg_gate *g, const char *session, int *calls)
{
	tg_log_query q = {.session = session};
	char *err = NULL, *text = tg_log(g, &q, &err);
	json_t *ops = text ? json_loads(text, 0, NULL) : NULL;
	double sum = 0;
	size_t i;
	json_t *op;
	*calls = 0;
	json_array_foreach(ops, i, op) {
		sum += json_number_value(json_object_get(op, "duration_ms"));
		(*calls)++;
	}
	json_decref(ops);
	free(text);
	free(err);
	return sum;
}

/* The HTTP rounds: the fake provider on an ephemeral port; ms per turn. */
static int http_rounds(tg_gate *g, const char *ws, const char *fake, const char *data,
                       int rounds, FILE *devnull)
{
	char portfile[4200], cmd[9000], base[128];
	snprintf(portfile, sizeof portfile, "%s/fake.port", ws);
	snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' > /dev/null 2>&1 & echo $!", fake, portfile, data);
	FILE *p = popen(cmd, "r");
	int pid = 0;
	if (!p || fscanf(p, "%d", &pid) != 1)
		return fprintf(stderr, "agent: cannot start %s\n", fake), -1;
	pclose(p);
	int port = 0;
	for (int i = 0; i < 200 && !port; i++) {
		FILE *f = fopen(portfile, "r");
		if (!f || fscanf(f, "%d", &port) != 1)
			usleep(10000);
		if (f)
			fclose(f);
	}
	snprintf(base, sizeof base, "http://127.0.0.1:%d/s/agent_chat", port);
	unsetenv("OPENAI_API_KEY");
	double m[31];
	int runs = 20, rc = 0;
	for (int r = 0; r < rounds && port; r++) {
		double t0 = now_ms();
		for (int k = 0; k < runs; k++) {
			char session[64], *err = NULL;
			snprintf(session, sizeof session, "http-%d-%d", r, k);
			tg_agent_options ao = {.provider = "openai-chat", .base_url = base,
			                       .prompt = "read it", .session = session, .out = devnull};
			if (tg_agent(g, &ao, &err) != 0) {
				fprintf(stderr, "agent: http: %s\n", err ? err : "turn limit");
				free(err);
				rc = -1;
				goto out;
			}
		}
		m[r] = (now_ms() - t0) / (2.0 * runs);
		fprintf(stderr, "round %d: http %.3f ms a turn\n", r + 1, m[r]);
	}
	qsort(m, (size_t)rounds, sizeof *m, cmp_double);
	printf("agent_http_fake ms_per_turn %.3f (openai-chat streamed, 2 turns x %d runs, median of "
	       "%d rounds; includes the two read_file calls of each first turn)\n", m[rounds / 2],
	       runs, rounds);
out:
	if (pid > 0) {
		snprintf(cmd, sizeof cmd, "kill %d", pid);
		if (system(cmd) != 0)
			rc = -1;
	}
	return port ? rc : -1;
}

int main(int argc, char **argv)
{
	int turns = argc > 1 ? atoi(argv[1]) : 100;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (turns < 1 || turns > 10000 || rounds < 1 || rounds > 31)
		return fprintf(stderr, "usage: agent [turns] [rounds]\n"), 2;
	char ws[] = "/tmp/toolgate-bench-agent.XXXXXX";
	if (!mkdtemp(ws))
		return perror("mkdtemp"), 1;
	char path[4200];
	snprintf(path, sizeof path, "%s/small.txt", ws);
	FILE *f = fopen(path, "w");
	for (int i = 1; i <= 20; i++)
		fprintf(f, "line %d of a small file read by a scripted model\n", i);
	fclose(f);
	char script[4200];
	snprintf(script, sizeof script, "%s/script.json", ws);
	write_script(script, turns);

	tg_options o = {.workspace = ws, .sync_full = -1};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0)
		return fprintf(stderr, "agent: %s\n", err), 1;
	FILE *devnull = fopen("/dev/null", "w");
	double per_turn[31], per_call[31], overhead[31];
	for (int r = 0; r < rounds; r++) {
		char session[64];
		snprintf(session, sizeof session, "bench-%d", r);
		tg_agent_options ao = {.provider = "scripted", .script = script, .prompt = "read it",
		                       .session = session, .max_turns = turns + 1, .out = devnull};
		double t0 = now_ms();
		int rc = tg_agent(g, &ao, &err);
		double ms = now_ms() - t0;
		if (rc != 0)
			return fprintf(stderr, "agent: round %d: %s\n", r + 1, err ? err : "turn limit"), 1;
		int calls;
		double gms = gate_ms(g, session, &calls);
		if (calls != turns)
			return fprintf(stderr, "agent: %d calls for %d turns\n", calls, turns), 1;
		per_turn[r] = ms / (turns + 1);
		per_call[r] = gms / calls;
		overhead[r] = (ms - gms) / (turns + 1);
		fprintf(stderr, "round %d: %.3f ms a turn, gate %.3f ms a call, loop %.3f ms a turn\n",
		        r + 1, per_turn[r], per_call[r], overhead[r]);
	}
	qsort(per_turn, (size_t)rounds, sizeof *per_turn, cmp_double);
	qsort(per_call, (size_t)rounds, sizeof *per_call, cmp_double);
	qsort(overhead, (size_t)rounds, sizeof *overhead, cmp_double);
	printf("agent_scripted turns %d ms_per_turn %.3f gate_ms_per_call %.3f "
	       "loop_overhead_ms_per_turn %.3f (median of %d rounds)\n", turns + 1,
	       per_turn[rounds / 2], per_call[rounds / 2], overhead[rounds / 2], rounds);
	int rc = 0;
	if (argc > 4 && http_rounds(g, ws, argv[3], argv[4], rounds, devnull) < 0)
		rc = 1;
	fclose(devnull);
	tg_gate_close(g);
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd) == 0 ? rc : 1;
}
