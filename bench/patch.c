/*
 * patch.c — apply_patch on large patches (src/patch/): parse, plan (every
 * file's new bytes in memory) and commit (temp files, fsync, journal,
 * renames), timed apart, medians of rounds.
 *
 *   build/bench/patch [rounds] [dir]
 *
 * Two patches: 1,000 hunks over 100 files of 300 lines, and 500 hunks in
 * one file of 10,000 lines.  The baseline in the same run: writing the
 * same final files with tgi_write_atomic one by one (what write_file does
 * per call), so the commit's cost reads as a ratio.  Every round restores
 * the files first (untimed).  Works in a fresh directory under dir
 * (default /tmp) and removes it afterwards.
 *
 * Codex's own apply_patch, in the same rounds, when its binary is here:
 * $CODEX, or the native binary the Codex npm package installs under
 * build/clients (scripts/install-node-deps).  It is run as Codex runs it,
 * a process named apply_patch reading the patch on stdin, in the same
 * directory on the same files (restored first, untimed); the time is the
 * process's, start to exit.  Its start alone (a one-line patch of one file)
 * is printed too: it writes each file in place (truncate, write), with no
 * journal and no fsync.
 *
 * Owns: its temporary directory.  Must not: touch anything else.
 */
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "patch/patch.h"
#include "util/fs.h"
#include "util/util.h"

#define MAX_ROUNDS 50

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

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *file_text(int file, int lines)
{
	tgi_buf b;
	tgi_buf_init(&b, (size_t)1 << 30);
	for (int i = 0; i < lines; i++)
		tgi_buf_printf(&b, "    value_%d_%d = compute(%d, \"line %d of file %d\");\n", file, i,
		               i * 7, i, file);
	return tgi_buf_steal(&b);
}

/* hunks per file, spread evenly, each: 3 context, 1 removed, 1 added, 3 context */
static char *patch_text(int files, int lines, int hunks)
{
	tgi_buf b;
	tgi_buf_init(&b, (size_t)1 << 30);
	tgi_buf_puts(&b, "*** Begin Patch\n");
	for (int f = 0; f < files; f++) {
		tgi_buf_printf(&b, "*** Update File: src/f%03d.py\n", f);
		int step = lines / (hunks + 1);
		for (int h = 1; h <= hunks; h++) {
			int at = h * step;
			if (h % 2)
				tgi_buf_puts(&b, "@@\n");
			else    /* every other hunk names the line above its context */
				tgi_buf_printf(&b, "@@     value_%d_%d = compute(%d, \"line %d of file %d\");\n",
				               f, at - 4, (at - 4) * 7, at - 4, f);
			for (int i = at - 3; i < at; i++)
				tgi_buf_printf(&b, "     value_%d_%d = compute(%d, \"line %d of file %d\");\n", f,
				               i, i * 7, i, f);
			tgi_buf_printf(&b, "-    value_%d_%d = compute(%d, \"line %d of file %d\");\n", f, at,
			               at * 7, at, f);
			tgi_buf_printf(&b, "+    value_%d_%d = compute_faster(%d);\n", f, at, at * 7);
			for (int i = at + 1; i <= at + 3; i++)
				tgi_buf_printf(&b, "     value_%d_%d = compute(%d, \"line %d of file %d\");\n", f,
				               i, i * 7, i, f);
		}
	}
	tgi_buf_puts(&b, "*** End Patch\n");
	return tgi_buf_steal(&b);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void restore(int ws_fd, char **orig, int files)
{
	for (int f = 0; f < files; f++) {
		char path[64];
		snprintf(path, sizeof path, "src/f%03d.py", f);
		int fd = tgi_open_beneath(ws_fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || tgi_write_all(fd, orig[f], strlen(orig[f])) < 0) {
			fprintf(stderr, "cannot restore %s\n", path);
			exit(1);
		}
		close(fd);
	}
}

/* Codex's native binary, or NULL. */
static const char *codex_binary(void)
{
	static char found[4096];
	const char *env = getenv("CODEX");
	glob_t g;
	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	if (glob("build/clients/node_modules/@openai/codex-linux-*/vendor/*/bin/codex", 0, NULL,
	         &g) != 0)
		return NULL;
	int ok = g.gl_pathc && access(g.gl_pathv[0], X_OK) == 0;
	if (ok)
		snprintf(found, sizeof found, "%s", g.gl_pathv[0]);
	globfree(&g);
	return ok ? found : NULL;
}

/* Codex's apply_patch on patch_path (its stdin), in dir: ms, start to exit. */
static double codex_run(const char *codex, const char *dir, const char *patch_path)
{
	double t0 = now_ms();
	pid_t pid = fork();
	if (pid == 0) {
		int in = open(patch_path, O_RDONLY), out = open("/dev/null", O_WRONLY);
		if (in < 0 || out < 0 || chdir(dir) < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0)
			_exit(126);
		execl(codex, "apply_patch", (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "codex apply_patch failed (%s)\n", codex);
		exit(1);
	}
	return now_ms() - t0;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

static void run(const char *name, const char *base, int files, int lines, int hunks, int rounds,
                const char *codex)
{
	char dir[4096], err[8192];
	double t_parse[MAX_ROUNDS], t_plan[MAX_ROUNDS], t_commit[MAX_ROUNDS], t_total[MAX_ROUNDS],
	       t_base[MAX_ROUNDS], t_codex[MAX_ROUNDS], t_start[MAX_ROUNDS];
	char patch_path[4200], tiny_path[4200];

	snprintf(dir, sizeof dir, "%s/tg-bench-patch-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	int ws_fd = open(dir, O_RDONLY | O_DIRECTORY);
	mkdirat(ws_fd, "src", 0755);
	mkdirat(ws_fd, "journal", 0700);
	int jfd = openat(ws_fd, "journal", O_RDONLY | O_DIRECTORY);
	char **orig = tgi_xcalloc((size_t)files, sizeof *orig);
	for (int f = 0; f < files; f++)
		orig[f] = file_text(f, lines);
	char *text = patch_text(files, lines, hunks);
	size_t len = strlen(text);
	/* the patch file and a one-line patch beside the workspace's files */
	snprintf(patch_path, sizeof patch_path, "%s/patch.txt", dir);
	snprintf(tiny_path, sizeof tiny_path, "%s/tiny.txt", dir);
	if (codex) {
		write_text(patch_path, text);
		write_text(tiny_path, "*** Begin Patch\n*** Add File: tiny.out\n+x\n*** End Patch\n");
	}

	for (int r = 0; r < rounds; r++) {
		tgi_patch *p;
		tgi_patch_plan plan;
		restore(ws_fd, orig, files);
		double t0 = now_ms();
		if (tgi_patch_parse(text, len, &p, err, sizeof err) < 0) {
			fprintf(stderr, "%s: %s\n", name, err);
			exit(1);
		}
		double t1 = now_ms();
		if (tgi_patch_plan_make(ws_fd, p, &plan, err, sizeof err) != TGI_PATCH_OK) {
			fprintf(stderr, "%s: %s\n", name, err);
			exit(1);
		}
		double t2 = now_ms();
		char tx[37];
		tgi_uuidv7(tx);
		if (tgi_patch_commit(ws_fd, jfd, tx, &plan, err, sizeof err) != 0) {
			fprintf(stderr, "%s: %s\n", name, err);
			exit(1);
		}
		double t3 = now_ms();
		t_parse[r] = t1 - t0;
		t_plan[r] = t2 - t1;
		t_commit[r] = t3 - t2;
		t_total[r] = t3 - t0;

		/* baseline: the same final bytes, one atomic write per file */
		double b0 = now_ms();
		for (size_t i = 0; i < plan.nwrites; i++)
			if (tgi_write_atomic(ws_fd, plan.writes[i].path, plan.writes[i].data,
			                     plan.writes[i].len, 0644) < 0) {
				fprintf(stderr, "%s: baseline write failed\n", name);
				exit(1);
			}
		t_base[r] = now_ms() - b0;
		tgi_patch_plan_free(&plan);
		tgi_patch_free(p);

		if (codex) {    /* the same patch on the same files */
			restore(ws_fd, orig, files);
			t_codex[r] = codex_run(codex, dir, patch_path);
			t_start[r] = codex_run(codex, dir, tiny_path);
			unlinkat(ws_fd, "tiny.out", 0);
		}
	}
	double total = median(t_total, rounds), bl = median(t_base, rounds);
	printf("%-34s %7.2f ms total (parse %.2f, plan %.2f, commit %.2f); "
	       "baseline atomic writes %.2f ms; commit/baseline %.2f\n",
	       name, total, median(t_parse, rounds), median(t_plan, rounds),
	       median(t_commit, rounds), bl, median(t_commit, rounds) / bl);
	if (codex) {
		double cx = median(t_codex, rounds);
		printf("%-34s %7.2f ms codex apply_patch (its start alone %.2f ms); toolgate/codex %.2f\n",
		       "", cx, median(t_start, rounds), total / cx);
	}

	for (int f = 0; f < files; f++)
		free(orig[f]);
	free(orig);
	free(text);
	close(jfd);
	close(ws_fd);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	const char *base = argc > 2 ? argv[2] : "/tmp";
	const char *codex = codex_binary();
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 7;
	printf("medians of %d rounds; the disk under %s, fsync on every file; %s%s\n", rounds, base,
	       codex ? "codex: " : "codex's apply_patch not found (set CODEX to its binary)",
	       codex ? codex : "");
	run("1,000 hunks over 100 files", base, 100, 300, 10, rounds, codex);
	run("500 hunks in one 10,000-line file", base, 1, 10000, 500, rounds, codex);
	return 0;
}
