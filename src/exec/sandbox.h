/*
 * sandbox.h — run commands inside a sandbox (src/exec/sandbox.c).
 *
 * Modes (config `sandbox`): read-only (nothing writable but a private tmp
 * dir), workspace-write (the workspace and a private tmp dir writable;
 * the protected subpaths inside it -- .git/, .toolgate/ at any depth the
 * caller lists -- stay read-only), danger-full-access (no sandbox).
 * Network is cut unless spec->network.
 *
 * Backends, strongest first:
 *   bubblewrap: `bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
 *     [--tmpfs /run unless network] then, parents first: --bind <writable>
 *     (--ro-bind the workspace in read-only mode), --ro-bind <protected>
 *     (one missing is made as an empty directory for the run, so that
 *     nothing can be created at its name, and removed after it unless
 *     another run still holds it), --bind <tmpdir>;
 *     --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try
 *     --die-with-parent --new-session --cap-drop ALL
 *     [--unshare-net --seccomp FD unless network] -- argv`;
 *   landlock: in the child before exec, no_new_privs, no capabilities, a
 *     Landlock ruleset (ABI >= 1) granting read/execute everywhere and
 *     write only under the writable roots and to /dev/null, /dev/zero,
 *     /dev/full (ABI >= 4: TCP handled too; ABI >= 6: signals and abstract
 *     unix sockets scoped to the sandbox) -- it cannot re-protect subpaths
 *     of a writable root, so .git/ inside the workspace is writable there
 *     (doctor says so), nor hide host unix sockets; no pid namespace;
 *   none: sandboxed modes refuse to run anything (fail closed).
 * Both backends need seccomp.  The filter (libseccomp, default allow)
 * fails with EPERM, unless spec->network: socket() and socketpair() for
 * any family but AF_UNIX, and io_uring_setup/enter/register (connect,
 * bind, sendto... need no rule: only AF_UNIX sockets can exist).  Under
 * landlock it also fails setsid() and setpgid(), so that nothing leaves
 * the process group spawn kills.  ptrace is left alone: the pid namespace
 * or Landlock's own ptrace rule keeps it inside.
 *
 * Operator override: TOOLGATE_SANDBOX_BACKEND=bubblewrap|landlock|none|auto
 * (read once, by the probe) forces a backend; one that does not work here,
 * `none`, or any other value means none: sandboxed modes refuse.
 *
 * Owns: probing the backends and preparing a sandboxed exec.  Must not:
 * decide whether a command may run (policy), or reap it (spawn.c).
 */
#ifndef TGI_SANDBOX_H
#define TGI_SANDBOX_H

#include <stddef.h>
#include "config.h"

typedef enum { TGI_SB_NONE, TGI_SB_BWRAP, TGI_SB_LANDLOCK } tgi_sb_backend;

const char *tgi_sb_backend_name(tgi_sb_backend b);  /* "bubblewrap", "landlock", "none" */

/* What this machine can do, probed once per process (thread-safe). */
typedef struct tgi_sb_probe {
	tgi_sb_backend backend;       /* the one sandboxed runs will use */
	int            bwrap_ok;      /* bwrap found and could create its namespaces */
	char           bwrap_path[256];
	char           bwrap_why[256];/* why not, when !bwrap_ok */
	int            landlock_abi;  /* 0: unavailable */
	int            seccomp_ok;
} tgi_sb_probe;

const tgi_sb_probe *tgi_sandbox_probe(void);

typedef struct tgi_sb_spec {
	tgi_sandbox         mode;
	int                 network;      /* allow the network */
	const char         *workspace;    /* absolute; writable in workspace-write */
	const char         *tmpdir;       /* absolute, private, created by the caller: writable */
	const char *const  *protect;      /* absolute paths inside writable roots kept read-only;
	                                     one ending in '/' is a directory, else a file (what is
	                                     made to hold its name while it does not exist) */
	size_t              nprotect;
} tgi_sb_spec;

/*
 * A prepared sandbox: argv to exec (owned: the bwrap prefix, then the
 * command) and, for landlock, what the child must do before exec.
 * tgi_sandbox_prepare: 0, or -1 with a sentence in err (no backend for a
 * sandboxed mode: "no sandbox backend works here (bubblewrap: ...;
 * Landlock: ...); refusing to run commands in workspace-write mode").
 * It always sets *out, so tgi_sandbox_release is safe after either.
 * Paths must be absolute, without "." or ".." parts; the workspace and
 * tmpdir must be directories; a protected path may not be a whole
 * writable root.
 */
typedef struct tgi_sb_exec {
	char         **argv;      /* owned, NULL-terminated */
	tgi_sb_backend backend;   /* what is used (NONE for danger-full-access) */
	int            seccomp_fd;/* bwrap: the BPF program's fd, given to bwrap (-1: none) */
	void          *child;     /* opaque: landlock ruleset and seccomp program for the child */
} tgi_sb_exec;

int  tgi_sandbox_prepare(const tgi_sb_spec *spec, char *const *argv, tgi_sb_exec *out,
                         char *err, size_t errlen);
/* In the child, after fork, last before exec (after setpgid, rlimits and
 * any fd clean-up; async-signal-safe): for landlock, parent-death signal,
 * no_new_privs, drop capabilities, Landlock, seccomp; for bubblewrap, keep
 * seccomp_fd open across exec; nothing for none.  0 or -errno. */
int  tgi_sandbox_child(const tgi_sb_exec *x);
/* After the command has been reaped (or was never started): frees argv,
 * closes the fds, removes the directories made to hold missing protected
 * paths.  Only for an x that tgi_sandbox_prepare filled; NULL is a no-op. */
void tgi_sandbox_release(tgi_sb_exec *x);

/* For `toolgate doctor`: {"backend","bubblewrap":{ok,path,why},"landlock_abi",
 * "seccomp","modes":{"read-only":{enforceable,notes},...}}, plus
 * "landlock_why"/"seccomp_why" when unavailable and "override" when
 * TOOLGATE_SANDBOX_BACKEND is set.  New reference. */
json_t *tgi_sandbox_report(void);

#endif
