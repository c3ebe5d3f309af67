/*
 * limits.c — rlimits and a pids cgroup for one command.
 *
 * The cgroup is made under the pids hierarchy the gate itself runs in:
 * cgroup v2 where its controllers include "pids", else the v1 "pids"
 * hierarchy, as <our cgroup>/toolgate-<tag>.  The child joins it by
 * writing 0 to its cgroup.procs (opened by the parent) before exec, so
 * every process the command forks is counted by pids.max and listed for
 * the clean-up.  Where no such hierarchy is writable, only RLIMIT_NPROC
 * applies, set to the processes this user already has plus the limit
 * (root is exempt from it; doctor says so).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/limits.h"
#include "util/util.h"

/* The directory of our own cgroup in the hierarchy holding "pids":
 * v2 first, then v1.  0, or -1 when there is none. */
static int pids_base(char *out, size_t cap, int *v2)
{
	char line[PATH_MAX], mnt2[PATH_MAX] = "", mnt1[PATH_MAX] = "", rel2[PATH_MAX] = "",
	     rel1[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		/* id parent maj:min root mountpoint opts ... - fstype source superopts */
		char mp[PATH_MAX], *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		if (!strncmp(dash + 3, "cgroup2 ", 8))
			tgi_snprintf(mnt2, sizeof mnt2, "%s", mp);
		else if (!strncmp(dash + 3, "cgroup ", 7) && strstr(dash, "pids"))
			tgi_snprintf(mnt1, sizeof mnt1, "%s", mp);
	}
	fclose(f);
	if (!(f = fopen("/proc/self/cgroup", "re")))
		return -1;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		if (!strcmp(line, "0") && c1[1] == '\0')
			tgi_snprintf(rel2, sizeof rel2, "%s", c2 + 1);
		else if (strstr(c1 + 1, "pids"))
			tgi_snprintf(rel1, sizeof rel1, "%s", c2 + 1);
	}
	fclose(f);
	if (mnt2[0]) {
		char ctl[PATH_MAX + 32], buf[512] = "";
		tgi_snprintf(ctl, sizeof ctl, "%s%s/cgroup.controllers", mnt2, rel2);
		int fd = open(ctl, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof buf - 1);
			close(fd);
			buf[n > 0 ? n : 0] = '\0';
			if (strstr(buf, "pids")) {
				*v2 = 1;
				tgi_snprintf(out, cap, "%s%s", mnt2, rel2);
				return 0;
			}
		}
	}
	if (mnt1[0]) {
		*v2 = 0;
		tgi_snprintf(out, cap, "%s%s", mnt1, rel1);
		return 0;
	}
	return -1;
}

static int write_text(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX + 32];
	tgi_snprintf(path, sizeof path, "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* Processes of this real uid now (for RLIMIT_NPROC, which counts them all). */
static long user_processes(void)
{
	long n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat st;
		char p[300];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof p, "/proc/%s", e->d_name);
		if (stat(p, &st) == 0 && st.st_uid == getuid())
			n++;
	}
	closedir(d);
	return n;
}

int tgi_limits_prepare(const tgi_limits *l, const char *tag, tgi_limits_run *run)
{
	const struct { int res; long v; long unit; } want[] = {
		{RLIMIT_CPU, l->cpu_s, 1},
		{RLIMIT_AS, l->address_space_mb, 1L << 20},
		{RLIMIT_FSIZE, l->file_size_mb, 1L << 20},
		{RLIMIT_NOFILE, l->open_files, 1},
		{RLIMIT_NPROC, l->processes, 1},
	};
	memset(run, 0, sizeof *run);
	run->procs_fd = -1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(want); i++) {
		if (want[i].v <= 0)
			continue;
		rlim_t v = (rlim_t)want[i].v * (rlim_t)want[i].unit;
		if (want[i].res == RLIMIT_NPROC)
			v += (rlim_t)user_processes();
		run->res[run->nrl] = want[i].res;
		run->rl[run->nrl++] = (struct rlimit){v, v};
	}
	char base[PATH_MAX];
	int v2;
	if (l->processes <= 0 || pids_base(base, sizeof base, &v2) < 0)
		return 0;
	tgi_snprintf(run->cgroup, sizeof run->cgroup, "%s/toolgate-%s", base, tag);
	char max[32];
	snprintf(max, sizeof max, "%ld", l->processes);
	if (mkdir(run->cgroup, 0755) < 0) {     /* not ours to remove */
		run->cgroup[0] = '\0';
		return 0;
	}
	if (write_text(run->cgroup, "pids.max", max) < 0) {
		rmdir(run->cgroup);
		run->cgroup[0] = '\0';
		return 0;
	}
	char procs[PATH_MAX + 16];
	tgi_snprintf(procs, sizeof procs, "%s/cgroup.procs", run->cgroup);
	run->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (run->procs_fd < 0) {
		rmdir(run->cgroup);
		run->cgroup[0] = '\0';
	}
	return 0;
}

int tgi_limits_child(const tgi_limits_run *run)
{
	if (run->procs_fd >= 0 && write(run->procs_fd, "0", 1) < 0)
		return -errno;
	for (int i = 0; i < run->nrl; i++)
		if (setrlimit(run->res[i], &run->rl[i]) < 0)
			return -errno;
	return 0;
}

void tgi_limits_finish(tgi_limits_run *run)
{
	if (run->procs_fd >= 0)
		close(run->procs_fd);
	run->procs_fd = -1;
	if (!run->cgroup[0])
		return;
	char path[PATH_MAX + 16];
	tgi_snprintf(path, sizeof path, "%s/cgroup.procs", run->cgroup);
	/* kill until empty: a process may fork while we read */
	for (int round = 0; round < 100 && rmdir(run->cgroup) < 0 && errno == EBUSY; round++) {
		FILE *f = fopen(path, "re");
		long pid;
		if (!f)
			break;
		while (fscanf(f, "%ld", &pid) == 1)
			kill((pid_t)pid, SIGKILL);
		fclose(f);
		usleep(1000);
	}
	run->cgroup[0] = '\0';
}

const char *tgi_limits_pids_backend(void)
{
	char base[PATH_MAX];
	int v2;
	if (pids_base(base, sizeof base, &v2) < 0 || access(base, W_OK) < 0)
		return "RLIMIT_NPROC only (not enforced for root)";
	return v2 ? "cgroup v2 pids" : "cgroup v1 pids";
}
