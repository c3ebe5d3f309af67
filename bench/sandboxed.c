/*
 * sandboxed.c — what the sandbox adds to the processes the gate starts
 * besides the shell (issue 20): a bridged MCP server's start, from spawn
 * to `initialize` answered (tgi_mcp_client_open), of a tiny server (a
 * /bin/sh script answering initialize), unsandboxed and inside its
 * default profile (read-only, no network), the way bridge.c starts it;
 * and a command tool's call, `true` with the call JSON on stdin, spawned
 * unsandboxed and inside the command tool's default profile
 * (workspace-write, a few of the gate's files protected), the way
 * tools/command.c runs it.  The two are run alternately, and what is
 * reported is the median of the unsandboxed runs, of the sandboxed ones,
 * and of each pair's difference (the machine's load moves both alike).
 *
 *   build/bench/sandboxed [runs]
 *
 * Works in a fresh directory under /var/tmp (a workspace under /tmp is
 * shown through the sandbox's own /tmp: one mount more than most) and
 * removes it afterwards.
 *
 * Owns: its temporary directory.  Must not: touch anything else.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"
#include "mcp/client.h"
#include "util/util.h"

#define MAX_RUNS 200

/* The tiniest server: answers initialize (our first request, id 1) and
 * waits; /bin/sh starts in about a millisecond, so the sandbox's share is
 * not lost in an interpreter's start. */
static const char server_sh[] =
	"read -r line\n"
	"printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"b\","
	"\"version\":\"1\"}}}'\n"
	"cat > /dev/null\n";

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int sb_started(void *arg, pid_t pid, char *err, size_t errlen)
{
	return tgi_sandbox_started(arg, pid, err, errlen);
}

/* One server start to initialized (and its close, not counted), in the
 * sandbox of spec, or unsandboxed when spec is NULL. */
static double server_once(const tgi_sb_spec *spec, char **argv, char **envp)
{
	char err[512];
	tgi_sb_exec x = {0};
	tgi_mcp_client *c;
	double t0 = now_ms();
	tgi_mcp_client_cfg cc = {.name = "bench", .argv = argv, .envp = envp, .cwd = NULL};
	if (spec) {
		if (tgi_sandbox_prepare(spec, argv, &x, err, sizeof err) < 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		cc.argv = x.argv;
		cc.cwd = spec->workspace;
		cc.child_setup = (int (*)(void *))tgi_sandbox_child;
		cc.child_arg = &x;
		cc.started = sb_started;
		cc.started_arg = &x;
	}
	if (tgi_mcp_client_open(&cc, NULL, &c, err, sizeof err) < 0) {
		fprintf(stderr, "the server did not start: %s\n", err);
		exit(1);
	}
	double t = now_ms() - t0;
	tgi_mcp_client_close(c);
	if (spec) {
		json_decref(tgi_sandbox_audit(&x));
		tgi_sandbox_release(&x);
	}
	return t;
}

/* One command tool call: `true` reading the call JSON, in the sandbox of
 * spec (NULL: unsandboxed). */
static double tool_once(const tgi_sb_spec *spec, const char *ws)
{
	static const char in[] = "{\"op_id\":\"x\",\"tool\":\"t\",\"args\":{},\"principal\":\"local\"}";
	char *argv[] = {"/bin/true", NULL}, err[512], *envp[] = {"PATH=/usr/bin:/bin", NULL};
	tgi_sb_exec x = {0};
	tgi_spawn_result res;
	double t0 = now_ms();
	tgi_spawn_opts o = {.cwd = ws, .envp = envp, .in = in, .in_len = sizeof in - 1,
	                    .timeout_s = 10, .max_out = 4096};
	char *const *run = argv;
	if (spec) {
		if (tgi_sandbox_prepare(spec, argv, &x, err, sizeof err) < 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		run = x.argv;
		o.child_setup = (int (*)(void *))tgi_sandbox_child;
		o.child_arg = &x;
		o.started = sb_started;
		o.started_arg = &x;
	}
	if (tgi_spawn_run(run, &o, &res) < 0 || !res.exited || res.exit_code) {
		fprintf(stderr, "true failed (exit %d, signal %d): %s\n", res.exit_code, res.signal,
		            res.err ? res.err : "");
		exit(1);
	}
	tgi_spawn_result_free(&res);
	if (spec) {
		json_decref(tgi_sandbox_audit(&x));
		tgi_sandbox_release(&x);
	}
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 20;
	if (runs < 1 || runs > MAX_RUNS)
		runs = 20;
	if (tgi_sandbox_probe()->backend != TGI_SB_BWRAP) {
		printf("bubblewrap does not work here: no sandboxed figures\n");
		return 0;
	}
	char dir[] = "/var/tmp/tg-bench-sb-XXXXXX", ws[128], tmp[128], py[160], p[200];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(ws, sizeof ws, "%s/ws", dir);
	snprintf(tmp, sizeof tmp, "%s/tmp", dir);
	mkdir(ws, 0755);
	mkdir(tmp, 0700);
	snprintf(p, sizeof p, "%s/mcp", ws);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/tools", ws);
	mkdir(p, 0755);
	snprintf(py, sizeof py, "%s/mcp/server.sh", ws);
	FILE *f = fopen(py, "w");
	if (!f || fputs(server_sh, f) < 0 || fclose(f) != 0) {
		perror(py);
		return 1;
	}
	snprintf(p, sizeof p, "%s/toolgate.yaml", ws);
	f = fopen(p, "w");
	if (f)
		fclose(f);

	/* the gate's own files, as the gate protects them */
	char prot_py[200], prot_cfg[200], prot_tools[200];
	snprintf(prot_py, sizeof prot_py, "%s/mcp/server.sh", ws);
	snprintf(prot_cfg, sizeof prot_cfg, "%s/toolgate.yaml", ws);
	snprintf(prot_tools, sizeof prot_tools, "%s/tools/t.py", ws);
	const char *protect[] = {prot_py, prot_cfg, prot_tools};
	char state[200];
	snprintf(state, sizeof state, "%s/.toolgate", ws);
	mkdir(state, 0700);
	const char *masks[] = {state};

	char *server[] = {"/bin/sh", py, NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL};
	double t[MAX_RUNS];
	tgi_sb_profile ro, ww;
	tgi_sb_profile_init(&ro, TGI_SANDBOX_READ_ONLY);
	tgi_sb_profile_init(&ww, TGI_SANDBOX_WORKSPACE_WRITE);
	tgi_sb_spec srv = {.profile = &ro, .workspace = ws, .tmpdir = tmp, .protect = protect,
	                   .nprotect = 3, .mask = masks, .nmask = 1};
	tgi_sb_spec tool = {.profile = &ww, .workspace = ws, .tmpdir = tmp, .protect = protect,
	                    .nprotect = 3, .mask = masks, .nmask = 1, .quarantine = state};

	double u[MAX_RUNS], d[MAX_RUNS];
	server_once(NULL, server, envp);          /* warm the page cache */
	server_once(&srv, server, envp);
	for (int i = 0; i < runs; i++) {
		u[i] = server_once(NULL, server, envp);
		t[i] = server_once(&srv, server, envp);
		d[i] = t[i] - u[i];
	}
	printf("bridged server, start to initialized (/bin/sh, a tiny server): unsandboxed %.2f ms, "
	       "sandboxed (read-only, no network) %.2f ms; the sandbox adds %.2f ms (median of "
	       "pairs)\n", median(u, runs), median(t, runs), median(d, runs));
	for (int i = 0; i < runs; i++) {
		u[i] = tool_once(NULL, ws);
		t[i] = tool_once(&tool, ws);
		d[i] = t[i] - u[i];
	}
	printf("command tool call (`true`, the call JSON on stdin): unsandboxed %.2f ms, sandboxed "
	       "(workspace-write, 3 protected files) %.2f ms; the sandbox adds %.2f ms (median of "
	       "pairs)\n", median(u, runs), median(t, runs), median(d, runs));
	/* the gate's own share: the view, the seccomp program, the .git walks */
	for (int i = 0; i < runs; i++) {
		char *argv1[] = {"/bin/true", NULL}, err[512];
		tgi_sb_exec x;
		double t0 = now_ms();
		if (tgi_sandbox_prepare(&tool, argv1, &x, err, sizeof err) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		json_decref(tgi_sandbox_audit(&x));
		tgi_sandbox_release(&x);
		t[i] = now_ms() - t0;
	}
	printf("of which preparing the sandbox and auditing after it (no process): %.2f ms; the "
	       "rest is bubblewrap\n", median(t, runs));
	tgi_sb_profile_free(&ro);
	tgi_sb_profile_free(&ww);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
