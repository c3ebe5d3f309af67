/*
 * sandbox.h — run a process the gate starts inside a sandbox
 * (src/exec/sandbox.c, the view in src/exec/sbview.c, the audit in
 * src/exec/sbaudit.c).
 *
 * A sandbox is built from a profile (config.h tgi_sb_profile: mode,
 * network, read, write, sockets, accepted backends) and what the caller
 * knows of the run (tgi_sb_spec: workspace, private tmp dir, home, the
 * gate's own files, paths to hide, a network attach hook).  The same spec
 * serves the shell tool, command tools and bridged servers.
 *
 * What a sandboxed process sees (bubblewrap; sbview.c builds it):
 *   the system read-only: /usr, /bin, /sbin, /lib*, /opt, /etc (its
 *     secrets hidden: shadow, gshadow, sudoers*, ssh host keys, ssl/private,
 *     and every entry of /etc, /etc/ssh, /etc/ssl, /etc/security others
 *     may not read), /nix/store when there, /sys (firmware hidden);
 *   a fresh /dev and /proc (/proc/sys, sysrq-trigger, irq, bus, fs
 *     read-only; keys, key-users, kcore, timer_list, sched_debug... hidden);
 *   private, empty /tmp, /var/tmp, /run and $HOME (tmpfs);
 *   the workspace (writable in workspace-write), the private tmp dir, and
 *     the profile's read, write and sockets paths;
 *   inside writable roots, read-only: every .git below the workspace
 *     (found before the run), and for each of the gate's own files the
 *     top-most directory below the root that holds it (a mount point
 *     cannot be renamed), or the file itself at the root; hidden: the
 *     spec's masks (the workspace's .toolgate) and the gate's sockets.
 *   Nothing else: not the real home, other homes, /root, the host's /tmp,
 *   /var/tmp and /run (daemons' sockets), /srv, /mnt, /media.
 * Mount targets are only made inside the sandbox's own tree: a path that
 * does not exist under a host directory is never created there (not
 * mounted, or refused).
 *
 * Kernel: a user namespace (uid and gid mapped to themselves: bubblewrap
 * 0.8 can map only the caller's own ids, and root's workspace must stay
 * writable to it, so uid 0 inside is uid 0 outside -- with no capabilities
 * in any namespace, no_new_privs, nested user namespaces disabled), own
 * pid, ipc, uts, cgroup namespaces and, unless the network is on, a net
 * namespace; a new session; killed with its parent.  The seccomp program
 * (sandbox.c) refuses with EPERM: keyctl, add_key, request_key, bpf,
 * perf_event_open, kexec_load, kexec_file_load, init_module,
 * finit_module, delete_module, mount, umount2, pivot_root, fsopen,
 * fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr,
 * swapon, swapoff, reboot, acct, quotactl, quotactl_fd, userfaultfd,
 * iopl, ioperm, syslog, open_by_handle_at, name_to_handle_at,
 * lookup_dcookie, setns, unshare and clone with a namespace flag, the
 * io_uring calls; clone3 fails with ENOSYS (its flags cannot be seen, and
 * libc falls back to clone); with the network cut, socket() and
 * socketpair() for any family but AF_UNIX; with a list of hosts, for any
 * but AF_UNIX, AF_INET and AF_INET6 (the namespace is the wall).  Landlock ABI >= 6 scopes
 * abstract unix sockets and signals to the sandbox on top of that (before
 * bubblewrap starts).
 *
 * Backends, strongest first:
 *   bubblewrap: all of the above;
 *   landlock: in the child before exec: no_new_privs, no capabilities, a
 *     ruleset reading the system, /dev, /proc, /sys, the workspace and the
 *     profile's paths, writing the writable roots (and /dev/null, zero,
 *     full), the same seccomp program plus setsid/setpgid refused; it
 *     cannot hide a path inside a readable one (/etc's secrets, .toolgate),
 *     keep a path inside a writable one read-only (.git, the gate's files),
 *     stop a rename, a chmod or a utime on what it can write, or a connect
 *     to a host unix socket, and has no pid namespace.  So it is used only
 *     for a profile that accepts it by name (accept: [landlock]);
 *   none: sandboxed modes refuse to run anything (fail closed).
 * Operator override: TOOLGATE_SANDBOX_BACKEND=bubblewrap|landlock|none|auto
 * (read once, by the probe) forces a backend; one that does not work here,
 * `none`, or any other value means none.  It does not accept Landlock for a
 * profile: the configuration does.
 *
 * After the run (tgi_sandbox_audit): what the command created where
 * nothing may be created -- a .git below the workspace, one of the gate's
 * files that was missing -- is removed and reported (sbaudit.h).
 *
 * Owns: probing the backends, preparing a sandboxed exec and auditing it.
 * Must not: decide whether a command may run (policy), or fork, reap or
 * kill it (spawn.c).
 */
#ifndef TGI_SANDBOX_H
#define TGI_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>
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
	int            userns;        /* bwrap made a user namespace (--unshare-user) */
} tgi_sb_probe;

const tgi_sb_probe *tgi_sandbox_probe(void);

/*
 * Network by host: called in the gate once the sandbox's namespaces exist
 * and before its command starts (bubblewrap waits on --block-fd), with the
 * pid of the sandbox's first process (its network namespace is
 * /proc/PID/ns/net) and the profile's hosts.  0, or -1 with a sentence in
 * err: the run is then stopped before the command starts.
 */
typedef int (*tgi_sb_attach_fn)(void *arg, pid_t pid, const tgi_sb_profile *profile,
                                char *err, size_t errlen);

typedef struct tgi_sb_spec {
	const tgi_sb_profile *profile;  /* mode, network, read/write/sockets, accept */
	const char         *workspace;  /* absolute, a directory */
	const char         *tmpdir;     /* absolute, private, made by the caller: writable (under
	                                   bubblewrap the sandbox's own /tmp serves instead:
	                                   tgi_sb_exec.tmpdir says which) */
	const char         *home;       /* shown as a private, empty directory (NULL: $HOME; "":
	                                   none) */
	const char *const  *protect;    /* the gate's own files (absolute): not changeable by
	                                   the command, nor by renaming a directory above them,
	                                   nor by creating one that is missing */
	size_t              nprotect;
	const char *const  *mask;       /* absolute paths hidden (an empty read-only directory,
	                                   or an unreadable file); one missing is nothing */
	size_t              nmask;
	const char         *quarantine; /* where what the audit refuses goes: its quarantine/
	                                   subdirectory (the gate's state dir, hidden from the
	                                   command); NULL: removed */
	tgi_sb_attach_fn    attach;     /* network by host (NULL: a hosts list is refused) */
	void               *attach_arg;
} tgi_sb_spec;

/*
 * A prepared sandbox: argv to exec (owned: the bwrap prefix, then the
 * command) and what the child, the parent and the audit need.
 * tgi_sandbox_prepare: 0, or -1 with a sentence in err (no backend for a
 * sandboxed mode: "no sandbox backend works here (bubblewrap: ...;
 * Landlock: ...); refusing to run commands in workspace-write mode"; a
 * mount that cannot be made; a workspace too large to look through).  It
 * always sets *out, so tgi_sandbox_release is safe after either.  Paths
 * must be absolute, without "." or ".." parts; the workspace and tmpdir
 * must be directories; a protected path may not be a whole writable root.
 */
typedef struct tgi_sb_exec {
	char         **argv;      /* owned, NULL-terminated */
	tgi_sb_backend backend;   /* what is used (NONE for danger-full-access) */
	int            seccomp_fd;/* bwrap: the BPF program's fd, given to bwrap (-1: none) */
	const char    *home;      /* the HOME the command gets (borrowed from the exec; NULL:
	                             the caller's) */
	const char    *tmpdir;    /* the TMPDIR it gets: the sandbox's own /tmp under
	                             bubblewrap, the spec's tmpdir under Landlock (borrowed) */
	const char *const *env;   /* variables the command must get, NULL-terminated (static),
	                             or NULL: network by host's proxy variables
	                             (netproxy.h tgi_netproxy_env) */
	void          *child;     /* opaque: fds, Landlock ruleset, seccomp program, audit */
} tgi_sb_exec;

int  tgi_sandbox_prepare(const tgi_sb_spec *spec, char *const *argv, tgi_sb_exec *out,
                         char *err, size_t errlen);
/* In the child, after fork, last before exec (after setpgid, rlimits and
 * any fd clean-up; async-signal-safe): for landlock, parent-death signal,
 * no_new_privs, drop capabilities, Landlock, seccomp; for bubblewrap, keep
 * its fds open across exec and scope the process with Landlock (ABI 6);
 * nothing for none.  0 or -errno. */
int  tgi_sandbox_child(const tgi_sb_exec *x);
/* In the parent once the child's exec succeeded (pid: the child): for a
 * profile with hosts, wait for bubblewrap's namespaces, call the attach
 * hook, then let the command start.  0 (nothing to do, or done), or -1
 * with a sentence in err: the caller stops the child. */
int  tgi_sandbox_started(tgi_sb_exec *x, pid_t pid, char *err, size_t errlen);
/* After the command and everything it started are gone: what it created
 * at a refused name, removed (sbaudit.h's list), or NULL for nothing.
 * Call at most once. */
json_t *tgi_sandbox_audit(tgi_sb_exec *x);
/* After the command has been reaped (or was never started): frees argv
 * and closes the fds.  Only for an x that tgi_sandbox_prepare filled;
 * NULL is a no-op. */
void tgi_sandbox_release(tgi_sb_exec *x);

/* Did the sandbox's wrapper fail to start the program (bubblewrap's
 * execvp: exit 1, no output, and only its one line on stderr)?  1 with
 * the system's reason ("No such file or directory") in why, for a
 * sentence of the caller's own (the wrapper's text never reaches a
 * model); else 0.  backend: the run's (tgi_sb_exec.backend, before its
 * release). */
int  tgi_sandbox_exec_failed(tgi_sb_backend backend, int exit_code, size_t out_len,
                             const char *err, char *why, size_t cap);

/* Can a sandbox of this profile run here?  1, or 0 with a sentence in
 * why (no backend; Landlock not accepted; hosts without a proxy). */
int  tgi_sandbox_usable(const tgi_sb_profile *p, int attach, char *why, size_t cap);

/* For `toolgate doctor`: {"backend","bubblewrap":{ok,path,why},"landlock_abi",
 * "seccomp","user_namespace","modes":{"read-only":{enforceable,notes},...},
 * "network":{"backend","bubblewrap":{"false"|"true"|"hosts":{enforceable,notes}},
 * "landlock":{...}},"kernel":{...},"landlock_gaps":[...]}, plus "landlock_why"/"seccomp_why"
 * when unavailable and "override" when TOOLGATE_SANDBOX_BACKEND is set.
 * New reference. */
json_t *tgi_sandbox_report(void);
/* What a command sandboxed by spec would see, without running anything:
 * {"backend","usable","why"?,"readable":[...],"writable":[...],"hidden":[...],
 * "not_shown":[...],"git_read_only":N,"scan":{dirs,entries,ms},
 * "kernel":"..."}.  New reference (never NULL). */
json_t *tgi_sandbox_view(const tgi_sb_spec *spec);

#endif
