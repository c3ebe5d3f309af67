/*
 * mcp_pipe.c — the smallest MCP client: spawns a server on pipes, sends
 * initialize, then N sequential tools/call requests (the JSON text of the
 * call's params is an argument), each waiting for its response line, and
 * prints "calls/s p50_ms p99_ms rss_kib": the last the server's resident
 * memory after the calls (VmRSS of the process it spawned, from
 * /proc/PID/status; 0 where it cannot be read).  It costs the client
 * almost nothing, so what it measures is the server; bench/mcp.mjs
 * measures the same servers through the official SDK client, whose own
 * cost per call is most of a fast server's round trip.
 *
 * usage: mcp_pipe N PARAMS_JSON SERVER ARGS...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char buf[1 << 22];
static size_t blen;

/* Read one line (the next message) into the void; exit on EOF, or when it
 * is not a result or is a tool's error (a denied or failed call is not one
 * to count, as bench/mcp.mjs does not count it either). */
static void read_line(int fd)
{
	static const char want[] = "\"result\"", error[] = "\"isError\":true";
	for (;;) {
		char *nl = memchr(buf, '\n', blen);
		if (nl) {
			size_t k = (size_t)(nl - buf) + 1;
			if (!memmem(buf, k, want, strlen(want)) || memmem(buf, k, error, strlen(error))) {
				fprintf(stderr, "mcp_pipe: unexpected answer: %.300s\n", buf);
				exit(1);
			}
			memmove(buf, buf + k, blen - k);
			blen -= k;
			return;
		}
		if (blen == sizeof buf) {
			fprintf(stderr, "mcp_pipe: an answer longer than %zu bytes\n", sizeof buf);
			exit(1);
		}
		ssize_t n = read(fd, buf + blen, sizeof buf - blen);
		if (n <= 0) {
			fprintf(stderr, "mcp_pipe: the server closed its output\n");
			exit(1);
		}
		blen += (size_t)n;
	}
}

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0) {
			perror("mcp_pipe: write");
			exit(1);
		}
		s += w;
		n -= (size_t)w;
	}
}

/* VmRSS of pid in KiB, or 0. */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = 0;
	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int cmp(const void *a, const void *b)
{
	double d = *(const double *)a - *(const double *)b;
	return d < 0 ? -1 : d > 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: mcp_pipe N PARAMS_JSON SERVER ARGS...\n");
		return 2;
	}
	int n = atoi(argv[1]);
	const char *params = argv[2];
	int in[2], out[2];
	if (n < 1 || pipe(in) < 0 || pipe(out) < 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
	                   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
	                   "{\"name\":\"mcp_pipe\",\"version\":\"1\"}}}\n"
	                   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
	put(in[1], init, strlen(init));
	read_line(out[0]);
	double *lat = malloc((size_t)n * sizeof *lat);
	size_t cap = strlen(params) + 128;
	char *req = malloc(cap);
	double t0 = now_ms();
	for (int i = 0; i < n; i++) {
		int len = snprintf(req, cap, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		                   "\"params\":%s}\n", i + 1, params);
		double a = now_ms();
		put(in[1], req, (size_t)len);
		read_line(out[0]);
		lat[i] = now_ms() - a;
	}
	double dt = now_ms() - t0;
	long rss = rss_kib(pid);         /* the server is still there: its input is open */
	qsort(lat, (size_t)n, sizeof *lat, cmp);
	printf("%.0f %.3f %.3f %ld\n", n / dt * 1e3, lat[n / 2], lat[(size_t)n * 99 / 100], rss);
	close(in[1]);
	waitpid(pid, NULL, 0);
	free(lat);
	free(req);
	return 0;
}
