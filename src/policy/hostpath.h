/*
 * hostpath.h — could the program at an absolute path have been planted?
 * (src/policy/hostpath.c)
 *
 * The gate reads `/usr/bin/git status` by the execpolicy rules for `git`
 * only where no one the gate answers to could have put that file there:
 * otherwise an allow rule for `git` would also allow `/tmp/evil/git` or a
 * file the model wrote into the workspace.  A path passes when resolving
 * it, one component at a time with every symlink followed by hand, looks
 * up each name only in directories that are
 *   - owned by root and writable by neither group nor others,
 *   - not writable by the gate's user (when it is not root: access(2), so
 *     ACLs count),
 *   - not the workspace, a home directory or a temp dir, nor under one
 *     ($HOME and the user database's home, $TMPDIR, /tmp, /var/tmp,
 *     /dev/shm, each also as its real path), nor in /proc (whose links
 *     name what the reader has open),
 * and ends at a regular file that is owned by root and writable by
 * neither group, others nor the gate's user.  A symlink therefore counts
 * only where it could not be re-pointed: `/bin/git` through a root-owned
 * `/bin -> usr/bin` passes, a link in /tmp to /usr/bin/git does not.
 *
 * As root, every root-owned directory is the gate's user's to write: the
 * sandbox is what keeps the model's commands out of them.  So when
 * commands run unsandboxed as root (danger-full-access), nothing passes.
 *
 * Owns: that test.  Must not: know execpolicy's rules (execpolicy.c asks
 * this only when no host_executable names the program) or run anything.
 */
#ifndef TGI_HOSTPATH_H
#define TGI_HOSTPATH_H

#include <stddef.h>

typedef struct tgi_hostpath tgi_hostpath;

/*
 * The places a program may not come from: the directories in avoid (each
 * absolute; its real path is added too).  unsandboxed: commands run with
 * the gate's own rights (danger-full-access).  Free with tgi_hostpath_free.
 */
tgi_hostpath *tgi_hostpath_new(const char *const *avoid, size_t navoid, int unsandboxed);
/* The gate's: avoid = the workspace, $HOME and the user database's home,
 * $TMPDIR, /tmp, /var/tmp and /dev/shm, read now. */
tgi_hostpath *tgi_hostpath_for_gate(const char *workspace, int unsandboxed);
void          tgi_hostpath_free(tgi_hostpath *hp);

/* 1 when the program at path (absolute) cannot have been planted, else 0
 * with the reason in why ("/tmp is writable by others"). */
int tgi_hostpath_trusted(const tgi_hostpath *hp, const char *path, char *why, size_t whylen);

/* The same for tgi_ep_resolve.trusted: ctx is a const tgi_hostpath. */
int tgi_hostpath_ep(void *ctx, const char *path);

#endif
