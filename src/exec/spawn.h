/*
 * spawn.h — run a command as a real process (src/exec/spawn.c).
 */
#ifndef TGI_SPAWN_H
#define TGI_SPAWN_H

#include <stddef.h>

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
	double duration_ms;
} tgi_spawn_result;

int  tgi_spawn(char *const argv[], const char *cwd, char *const envp[], const char *in,
               size_t in_len, int timeout_s, size_t max_out, tgi_spawn_result *res);
void tgi_spawn_result_free(tgi_spawn_result *r);

#endif
