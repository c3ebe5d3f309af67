/*
 * dispatch.c — model responses through the gate (src/protocol/): decode,
 * dispatch and encode a 3-call response of each API, in calls/s; and a
 * batch of 8 independent 20 ms read-only calls, serial (max_parallel 1)
 * against parallel, against one call alone.
 *
 *   build/bench/dispatch [seconds] [dir]
 *
 * Works in a fresh workspace under dir (default /tmp), removed afterwards.
 *
 * Owns: its temporary directory.  Must not: touch anything else.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "toolgate.h"
#include "util/util.h"

static const struct {
	const char *api, *response;
} responses[] = {
	{"openai-chat",
	 "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"finish_reason\":"
	 "\"tool_calls\",\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
	 "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\","
	 "\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}},"
	 "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\","
	 "\"arguments\":\"{}\"}},"
	 "{\"id\":\"call_3\",\"type\":\"function\",\"function\":{\"name\":\"read_file\","
	 "\"arguments\":\"{\\\"path\\\":\\\"b.txt\\\"}\"}}]}}]}"},
	{"openai-responses",
	 "{\"id\":\"r1\",\"object\":\"response\",\"status\":\"completed\",\"output\":["
	 "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"read_file\","
	 "\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"},"
	 "{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"call_2\",\"name\":\"list_dir\","
	 "\"arguments\":\"{}\"},"
	 "{\"type\":\"function_call\",\"id\":\"fc_3\",\"call_id\":\"call_3\",\"name\":\"read_file\","
	 "\"arguments\":\"{\\\"path\\\":\\\"b.txt\\\"}\"}]}"},
	{"anthropic",
	 "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"stop_reason\":\"tool_use\","
	 "\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":"
	 "{\"path\":\"a.txt\"}},{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"list_dir\","
	 "\"input\":{}},{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"read_file\",\"input\":"
	 "{\"path\":\"b.txt\"}}]}"},
	{"gemini",
	 "{\"candidates\":[{\"finishReason\":\"STOP\",\"content\":{\"role\":\"model\",\"parts\":["
	 "{\"functionCall\":{\"name\":\"read_file\",\"args\":{\"path\":\"a.txt\"}}},"
	 "{\"functionCall\":{\"name\":\"list_dir\",\"args\":{}}},"
	 "{\"functionCall\":{\"name\":\"read_file\",\"args\":{\"path\":\"b.txt\"}}}]}}]}"},
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(p);
		exit(1);
	}
}

static tg_gate *open_gate(const char *ws, const char *config, int max_parallel)
{
	tg_options o = {.config_path = config, .workspace = ws, .sync_full = -1,
	                .max_parallel = max_parallel};
	tg_gate *g;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	return g;
}

/* Wall time of one batch of n `slow` calls. */
static double batch_ms(tg_gate *g, size_t n)
{
	tg_request rq[8];
	tg_result *rs[8];
	for (size_t i = 0; i < n; i++)
		rq[i] = (tg_request){.tool = "slow", .args = "{}"};
	double t0 = tgi_now_ms();
	tg_call_batch(g, rq, n, rs);
	double t = tgi_now_ms() - t0;
	for (size_t i = 0; i < n; i++) {
		if (tg_result_status(rs[i]) != TG_PERSISTED) {
			fprintf(stderr, "slow: %s\n", tg_result_json(rs[i], 0));
			exit(1);
		}
		tg_result_free(rs[i]);
	}
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	const char *base = argc > 2 ? argv[2] : "/tmp";
	char ws[4096], cfg[4200];
	snprintf(ws, sizeof ws, "%s/tg-bench-dispatch-XXXXXX", base);
	if (!mkdtemp(ws)) {
		perror("mkdtemp");
		return 1;
	}
	write_file(ws, "a.txt", "alpha\nbeta\n");
	write_file(ws, "b.txt", "gamma\n");
	write_file(ws, "slow.sh", "#!/bin/sh\ncat > /dev/null\nsleep 0.02\necho done\n");
	chmod((snprintf(cfg, sizeof cfg, "%s/slow.sh", ws), cfg), 0755);
	write_file(ws, "bench.yaml",
	           "tools:\n  slow:\n    description: Sleeps 20 ms.\n    input_schema: {type: object}\n"
	           "    command: [./slow.sh]\n    read_only: true\n    concurrency_safe: true\n");
	snprintf(cfg, sizeof cfg, "%s/bench.yaml", ws);

	tg_gate *g = open_gate(ws, cfg, 0);
	printf("decode + dispatch + encode, a 3-call response of read-only file tools, %.0f s each:\n",
	       seconds);
	for (size_t i = 0; i < sizeof responses / sizeof responses[0]; i++) {
		size_t calls = 0;
		double t0 = tgi_now_ms();
		while (tgi_now_ms() - t0 < seconds * 1000) {
			char *err = NULL, *out = tg_dispatch(g, responses[i].api, responses[i].response,
			                                     strlen(responses[i].response), 0, NULL, NULL,
			                                     NULL, &err);
			if (!out) {
				fprintf(stderr, "%s: %s\n", responses[i].api, err);
				return 1;
			}
			free(out);
			calls += 3;
		}
		printf("  %-17s %8.0f calls/s\n", responses[i].api,
		       (double)calls / ((tgi_now_ms() - t0) / 1000));
	}
	tg_gate_close(g);

	/* a batch of 8 independent 20 ms read-only calls */
	enum { ROUNDS = 7 };
	double one[ROUNDS], par[ROUNDS], ser[ROUNDS];
	tg_gate *gp = open_gate(ws, cfg, 0), *gs = open_gate(ws, cfg, 1);
	batch_ms(gp, 8);                            /* warm: availability, pool */
	for (int r = 0; r < ROUNDS; r++) {
		one[r] = batch_ms(gp, 1);
		par[r] = batch_ms(gp, 8);
		ser[r] = batch_ms(gs, 8);
	}
	qsort(one, ROUNDS, sizeof *one, cmp_double);
	qsort(par, ROUNDS, sizeof *par, cmp_double);
	qsort(ser, ROUNDS, sizeof *ser, cmp_double);
	printf("8 independent 20 ms read-only calls (medians of %d): one call alone %.1f ms; "
	       "parallel %.1f ms (%.2fx one call); serial %.1f ms (%.2fx)\n", ROUNDS, one[ROUNDS / 2],
	       par[ROUNDS / 2], par[ROUNDS / 2] / one[ROUNDS / 2], ser[ROUNDS / 2],
	       ser[ROUNDS / 2] / one[ROUNDS / 2]);
	tg_gate_close(gp);
	tg_gate_close(gs);
	nftw(ws, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
