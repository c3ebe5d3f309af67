/*
 * readmask.c — what read rules cost a sandboxed call (issue 20): turning
 * `deny: ["read_file(**` `/.env)"]` into the paths a sandbox hides, in a
 * workspace of about 10,000 files (1,000 directories of 10 files, 20 of
 * them .env, and one at the root), and what the masks add to `true` under
 * bubblewrap.
 *
 *   derive, walk: the first call, and a call after a directory was
 *     removed or replaced: the bounded walk (exec/sbmask.c);
 *   derive, a file made: a call after one directory changed: that
 *     directory read again;
 *   derive, cached: a call when nothing changed: one stat per directory,
 *     in memory (a long-lived gate) or read from the state directory (a
 *     process per call, `toolgate call`);
 *   derive, literal: `read_file(./.env)` alone: no walk at all;
 *   true under bubblewrap, with and without the 20 masks.
 *
 * Medians of RUNS (argv[1], default 30).  Owns: its temporary workspace.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gate/gate.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"

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

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void touch(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static tg_gate *gate_for(const char *ws, const char *rule)
{
	char cfg[512], text[512];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	snprintf(text, sizeof text, "permissions:\n  deny: [\"%s\"]\n", rule);
	touch(cfg, text);
	tg_options o = {.config_path = cfg, .workspace = ws};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err)) {
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	return g;
}

/* A second gate on the same workspace and state, with other rules (its
 * own config file, so that the first's stays as it is). */
static tg_gate *gate_for2(const char *ws)
{
	char cfg[512];
	snprintf(cfg, sizeof cfg, "%s.other.yaml", ws);
	touch(cfg, "permissions:\n  deny: [\"read_file(**/.secret)\"]\n");
	tg_options o = {.config_path = cfg, .workspace = ws};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err)) {
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	unlink(cfg);
	return g;
}

/* One derivation: its wall time; n gets the number of paths. */
static double derive(tg_gate *g, size_t *n)
{
	tgi_strv m = {0};
	char err[512];
	double t0 = now_ms();
	if (tgi_read_masks_for(g, NULL, 0, &m, err, sizeof err) < 0) {
		fprintf(stderr, "masks: %s\n", err);
		exit(1);
	}
	double t = now_ms() - t0;
	*n = m.n;
	tgi_strv_free(&m);
	return t;
}

/* Wall time of `true` under the sandbox (workspace-write), with masks. */
static double true_once(const char *ws, const tgi_strv *masks)
{
	static tgi_sb_profile prof;
	static int init;
	if (!init) {
		tgi_sb_profile_init(&prof, TGI_SANDBOX_WORKSPACE_WRITE);
		init = 1;
	}
	tgi_sb_spec spec = {.profile = &prof, .workspace = ws,
	                    .mask = (const char *const *)masks->v, .nmask = masks->n};
	char *argv[] = {"/bin/true", NULL}, err[512], *envp[] = {"PATH=/usr/bin:/bin", NULL};
	tgi_sb_exec x;
	tgi_spawn_result res;
	double t0 = now_ms();
	if (tgi_sandbox_prepare(&spec, argv, &x, err, sizeof err) < 0) {
		fprintf(stderr, "prepare: %s\n", err);
		exit(1);
	}
	tgi_spawn_opts o = {.cwd = ws, .envp = envp, .timeout_s = 10, .max_out = 4096,
	                    .child_setup = (int (*)(void *))tgi_sandbox_child, .child_arg = &x};
	if (tgi_spawn_run(x.argv, &o, &res) < 0 || !res.exited || res.exit_code) {
		fprintf(stderr, "true failed under %s\n", tgi_sb_backend_name(x.backend));
		exit(1);
	}
	tgi_spawn_result_free(&res);
	json_decref(tgi_sandbox_audit(&x));
	tgi_sandbox_release(&x);
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 30;
	if (runs < 1 || runs > 10000)
		runs = 30;
	char ws[] = "/var/tmp/tg-readmask.XXXXXX";
	if (!mkdtemp(ws)) {
		perror("mkdtemp");
		return 1;
	}
	char p[512];
	snprintf(p, sizeof p, "%s/.env", ws);
	touch(p, "TOKEN=x\n");
	for (int d = 0; d < 1000; d++) {
		snprintf(p, sizeof p, "%s/d%02d", ws, d / 100);
		mkdir(p, 0755);
		snprintf(p, sizeof p, "%s/d%02d/s%03d", ws, d / 100, d);
		mkdir(p, 0755);
		for (int f = 0; f < 10; f++) {
			if (d % 50 == 0 && f == 0)      /* 20 of them are .env */
				snprintf(p, sizeof p, "%s/d%02d/s%03d/.env", ws, d / 100, d);
			else
				snprintf(p, sizeof p, "%s/d%02d/s%03d/f%d.txt", ws, d / 100, d, f);
			touch(p, "x\n");
		}
	}
	double *walk = calloc((size_t)runs, sizeof *walk), *hit = calloc((size_t)runs, sizeof *hit),
	       *lit = calloc((size_t)runs, sizeof *lit), *bw0 = calloc((size_t)runs, sizeof *bw0),
	       *bw1 = calloc((size_t)runs, sizeof *bw1), *file = calloc((size_t)runs, sizeof *file),
	       *fresh = calloc((size_t)runs, sizeof *fresh);
	size_t n = 0, nlit = 0;

	tg_gate *g = gate_for(ws, "read_file(**/.env)");
	snprintf(p, sizeof p, "%s/d05/s500", ws);
	tg_gate *other = gate_for2(ws);
	for (int i = 0; i < runs; i++) {
		char f[600];
		size_t n2;
		/* a file made in one directory: that directory is read again */
		snprintf(f, sizeof f, "%s/new%d", p, i);
		touch(f, "");
		fresh[i] = derive(g, &n);
		hit[i] = derive(g, &n);
		/* a directory removed: everything is walked again */
		snprintf(f, sizeof f, "%s/dir%d", p, i);
		mkdir(f, 0755);
		derive(g, &n);
		rmdir(f);
		walk[i] = derive(g, &n);
		derive(other, &n2);         /* other rules: the memory now holds theirs */
		file[i] = derive(g, &n);    /* as a new process finds it: in the state dir */
	}
	tg_gate_close(other);
	tgi_strv masks = {0};
	char err[512];
	tgi_read_masks_for(g, NULL, 0, &masks, err, sizeof err);
	tg_gate_close(g);
	g = gate_for(ws, "read_file(./.env)");
	for (int i = 0; i < runs; i++)
		lit[i] = derive(g, &nlit);
	tg_gate_close(g);

	int sb = tgi_sandbox_probe()->backend == TGI_SB_BWRAP;
	tgi_strv none = {0};
	for (int i = 0; sb && i < runs; i++) {
		bw0[i] = true_once(ws, &none);
		bw1[i] = true_once(ws, &masks);
	}
	printf("workspace: 1,010 directories, 10,001 files; `read_file(**/.env)` names %zu\n", n);
	printf("derive, walk (a directory removed)  %8.3f ms\n", median(walk, runs));
	printf("derive, a file made in one dir      %8.3f ms (that directory read again)\n",
	       median(fresh, runs));
	printf("derive, cached in memory            %8.3f ms\n", median(hit, runs));
	printf("derive, cached in the state dir     %8.3f ms (a new process: toolgate call)\n",
	       median(file, runs));
	printf("derive, `read_file(./.env)` alone   %8.3f ms (%zu paths)\n", median(lit, runs), nlit);
	if (sb) {
		printf("true under bubblewrap, no masks     %8.3f ms\n", median(bw0, runs));
		printf("true under bubblewrap, %zu masks    %8.3f ms\n", masks.n, median(bw1, runs));
	} else {
		printf("true under bubblewrap: no bubblewrap here\n");
	}
	tgi_strv_free(&masks);
	free(walk), free(hit), free(lit), free(bw0), free(bw1), free(file), free(fresh);
	nftw(ws, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
