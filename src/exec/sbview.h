/*
 * sbview.h — what a sandboxed process sees, as a list of mounts
 * (src/exec/sbview.c).  sandbox.c turns it into bubblewrap's arguments
 * or a Landlock ruleset, and doctor into lists of paths.
 *
 * Owns: the view it builds (paths, the audit state).  Must not: mount,
 * exec, or create anything on the host.
 */
#ifndef TGI_SBVIEW_H
#define TGI_SBVIEW_H

#include <limits.h>
#include <stddef.h>
#include "exec/sandbox.h"
#include "exec/sbaudit.h"

typedef enum {
	TGI_SBV_RO,         /* the host path, read-only, at the same path */
	TGI_SBV_RW,         /* the host path, writable */
	TGI_SBV_TMPFS,      /* a private, empty, writable directory */
	TGI_SBV_HIDE_DIR,   /* an empty directory over it (read-only when sealed) */
	TGI_SBV_HIDE_FILE,  /* an unreadable device over it */
	TGI_SBV_SYMLINK,    /* a symlink (target) */
	TGI_SBV_DEV,        /* a fresh /dev */
	TGI_SBV_PROC,       /* a fresh /proc */
} tgi_sbv_kind;

typedef struct tgi_sbv_op {
	tgi_sbv_kind kind;
	char        *dest;    /* owned: absolute, symlinks resolved */
	char        *target;  /* owned: a symlink's target, else NULL */
	const char  *why;     /* static: what it is ("system", "workspace", ".git", ...) */
	int          sealed;  /* HIDE_DIR: read-only too (the spec's masks); else an empty
	                         tmpfs of the sandbox's own, whose writes go nowhere (one
	                         remount less each) */
	unsigned     order;   /* when it was added: ties of equal depth keep it */
} tgi_sbv_op;

#define TGI_SBV_MAX_OPS 1024

typedef struct tgi_sbview {
	tgi_sbv_op  *ops;        /* parents before children */
	size_t       nops, cap;
	char         ws[PATH_MAX];    /* "" when none */
	char         tmp[PATH_MAX];   /* "" when none */
	char         home[PATH_MAX];  /* "" when none */
	int          ws_writable;     /* the workspace itself */
	tgi_sbaudit *audit;      /* owned: .git found, paths that must stay absent (NULL: nothing
	                            under the workspace is writable) */
	tgi_strv     missing;    /* profile paths that are not there */
	tgi_strv     unreadable; /* system secrets this user cannot read: hidden without a mount */
	size_t       ngit;       /* .git entries bound read-only */
} tgi_sbview;

/* Build the view of spec (sandbox.h).  0, or -1 with a sentence in err;
 * *v is valid for tgi_sbview_free either way. */
int  tgi_sbview_build(const tgi_sb_spec *spec, tgi_sbview *v, char *err, size_t errlen);
void tgi_sbview_free(tgi_sbview *v);

/* The path's clean form: absolute, no "." or "..", no trailing slash; -1
 * with err naming what (the sandbox's "workspace", ...). */
int  tgi_sbview_clean(const char *what, const char *p, char *out, size_t cap, char *err,
                      size_t errlen);

#endif
