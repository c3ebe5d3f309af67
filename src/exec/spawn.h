/*
 * spawn.h — run a command as a real process (src/exec/spawn.c).
 */
#ifndef TGI_SPAWN_H
#define TGI_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Spawn (src/exec/spawn.c): run argv with stdin data, a clean environment,
 * its own process group, a timeout (SIGTERM, then SIGKILL after a grace
 * period) and capped stdout/stderr. */
typedef struct tgi_spawn_result {
	int    exited;       /* 1: normal exit, exit_code valid */
	int    exit_code;
	int    signal;       /* killed by this signal, 0 if none */
	int    timed_out;
	int    spawn_errno;  /* nonzero: could not start (exec failed) */
	char  *out;          /* owned, NUL-terminated */
	size_t out_len;
	int    out_truncated;
	char  *err;          /* owned, NUL-terminated */
	size_t err_len;
	int    err_truncated;
	size_t out_total;    /* bytes the program wrote to stdout (kept or not) */
	size_t err_total;
	int    cancelled;    /* stopped because *cancel was set */
	double duration_ms;
	char   start_error[512]; /* not empty: opts.started refused, and the child was killed */
} tgi_spawn_result;

int  tgi_spawn(char *const argv[], const char *cwd, char *const envp[], const char *in,
               size_t in_len, int timeout_s, size_t max_out, tgi_spawn_result *res);

/* Everything tgi_spawn takes, and what the shell tool needs besides. */
typedef struct tgi_spawn_opts {
	const char   *cwd;
	char *const  *envp;
	const char   *in;          /* stdin bytes; NULL: /dev/null */
	size_t        in_len;
	int           timeout_s;   /* <= 0: 120 */
	size_t        max_out;     /* stdout bytes kept; the rest is counted, not kept */
	size_t        max_err;     /* stderr bytes kept; 0: 64 KiB */
	int         (*child_setup)(void *arg); /* in the child before exec, async-signal-safe:
	                                           0, or -errno to fail the spawn */
	void         *child_arg;
	volatile const int *cancel;/* set nonzero from elsewhere: stop the group as a timeout does */
	int         (*started)(void *arg, pid_t pid, char *err, size_t errlen);
	                           /* in the parent once the exec succeeded, before any output is
	                              read (the sandbox's network attach): 0, or -1 with a
	                              sentence: the group is killed, res->start_error says why */
	void         *started_arg;
} tgi_spawn_opts;

int tgi_spawn_run(char *const argv[], const tgi_spawn_opts *o, tgi_spawn_result *res);

/* Can prog be run: a path that is executable, or a name found in path (a
 * PATH value; NULL: /usr/local/bin:/usr/bin:/bin)?  1 or 0.  Asked before
 * a sandbox wraps a program: inside it, a missing program is only the
 * wrapper's exit status. */
int tgi_spawn_findable(const char *prog, const char *path);
void tgi_spawn_result_free(tgi_spawn_result *r);

#endif
