/*
 * limits.h — resource limits for a command (src/exec/limits.c): rlimits,
 * and a pids cgroup so that a process limit holds even for root (the
 * kernel does not apply RLIMIT_NPROC to uid 0) and everything the command
 * started can be found and killed afterwards.
 *
 * Owns: the cgroup it creates for one command.  Must not: fork or exec
 * (spawn.c does).
 */
#ifndef TGI_LIMITS_H
#define TGI_LIMITS_H

#include <limits.h>
#include <sys/resource.h>

typedef struct tgi_limits {
	long cpu_s;            /* RLIMIT_CPU; 0: not set */
	long address_space_mb; /* RLIMIT_AS */
	long file_size_mb;     /* RLIMIT_FSIZE */
	long open_files;       /* RLIMIT_NOFILE */
	long processes;        /* a pids cgroup's pids.max, and RLIMIT_NPROC above the
	                          processes this user already has */
} tgi_limits;

typedef struct tgi_limits_run {
	int           res[5];
	struct rlimit rl[5];
	int           nrl;
	char          cgroup[PATH_MAX]; /* "" when none could be made */
	int           procs_fd;         /* the cgroup's cgroup.procs, for the child (-1: none) */
} tgi_limits_run;

/* Before fork: work out the rlimits and make a pids cgroup named after
 * tag (best effort: none where no pids controller is writable).  0. */
int  tgi_limits_prepare(const tgi_limits *l, const char *tag, tgi_limits_run *run);
/* In the child, before exec (async-signal-safe): join the cgroup, set the
 * rlimits.  0 or -errno. */
int  tgi_limits_child(const tgi_limits_run *run);
/* After the command is reaped: kill whatever is left in its cgroup (a
 * process that escaped the process group), then remove the cgroup. */
void tgi_limits_finish(tgi_limits_run *run);

/* How a process limit is enforced here, for doctor: "cgroup v2 pids",
 * "cgroup v1 pids", or "RLIMIT_NPROC only (not enforced for root)". */
const char *tgi_limits_pids_backend(void);

#endif
