/*
 * patch.h — V4A patches (Codex's apply_patch format): parse, plan, commit.
 *
 *   *** Begin Patch
 *   *** Add File: P        + lines (zero lines: an empty file)
 *   *** Delete File: P
 *   *** Update File: P     [*** Move to: Q]  chunks: @@ [context] / ' ' '-' '+' lines
 *                          [*** End of File]
 *   *** End Patch
 *
 * Three steps, each its own file:
 *   parse.c   text → operations (tolerances: trimming, heredoc wrappers,
 *             CRLF patch text, blank lines between chunks and operations);
 *   apply.c   operations → every file's final bytes, computed in memory
 *             against the workspace (match.c finds each chunk), with every
 *             path checked before anything is written;
 *   journal.c the plan → disk, all or nothing: temp files, fsync, a rollback
 *             journal, renames; a crash part-way is undone by
 *             tgi_patch_recover() on the next start.
 *
 * Owns: the format and its semantics.  Must not: decide policy (the
 * pipeline checks every path the patch touches before the tool runs; this
 * code refuses only what leaves the workspace and protected paths, as a
 * second line of defence).
 */
#ifndef TGI_PATCH_H
#define TGI_PATCH_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include "toolgate.h"
#include "util/fs.h"
#include "util/util.h"

#define TGI_PATCH_MAX      (16u << 20)  /* bytes of patch text */
#define TGI_PATCH_FILE_MAX (64u << 20)  /* bytes of one file to update */
#define TGI_PATCH_OPS_MAX  4096         /* file operations in one patch */

typedef enum { TGI_PATCH_ADD, TGI_PATCH_DELETE, TGI_PATCH_UPDATE } tgi_patch_kind;

/* A line of the patch: a slice of the patch's own copy of the text. */
typedef struct tgi_patch_line {
	const char *s;
	size_t      len;
} tgi_patch_line;

typedef struct tgi_patch_chunk {
	tgi_patch_line  ctx;       /* `@@ ctx`; ctx.s NULL for a bare `@@` or none */
	tgi_patch_line *old;       /* context and '-' lines */
	size_t          nold;
	tgi_patch_line *new;       /* context and '+' lines */
	size_t          nnew;
	int             eof;       /* `*** End of File`: matches only at the end */
	size_t          lineno;    /* patch line where the chunk starts */
} tgi_patch_chunk;

typedef struct tgi_patch_op {
	tgi_patch_kind   kind;
	char            *path;     /* as written, trimmed (owned) */
	char            *move_to;  /* Update with `*** Move to:`, else NULL (owned) */
	size_t           path_at;  /* where path and move_to lie in the text given to */
	size_t           move_at;  /* tgi_patch_parse (byte offsets; move_at 0 without) */
	tgi_patch_line  *add;      /* Add: the content lines, without their '+' */
	size_t           nadd;
	tgi_patch_chunk *chunks;   /* Update */
	size_t           nchunks;
	size_t           lineno;   /* patch line of the header */
} tgi_patch_op;

typedef struct tgi_patch {
	char         *text;        /* owned: the unwrapped patch, lines NUL-split */
	tgi_patch_op *ops;
	size_t        nops;
} tgi_patch;

/*
 * Parse len bytes of patch text.  Returns 0 with *out (free with
 * tgi_patch_free), or -1 with Codex's message in err: "Invalid patch: ..."
 * or "Invalid patch hunk on line N: ...".
 */
int  tgi_patch_parse(const char *text, size_t len, tgi_patch **out, char *err, size_t errlen);
void tgi_patch_free(tgi_patch *p);

/*
 * The patch text with every path its headers name (Add, Delete and Update
 * File, Move to) passed through map and, where map gives a replacement,
 * that spliced in its place; every other byte is kept.  A replacement that
 * would lose whitespace at either end to the header's trimming is written
 * "./ x" or "x /" (as "dir/x /" named it); one holding a newline is not
 * used.  1 with the new text in *out (caller frees) and its length in
 * *outlen; 0 when map replaced nothing or the text does not parse (then
 * the paths are refused as they are), *out NULL.
 */
int tgi_patch_map_paths(const char *text, size_t len, tgi_path_map_fn map, void *ud, char **out,
                        size_t *outlen);

/* Does the patch delete a file (a destructive call)? */
int tgi_patch_deletes(const tgi_patch *p);

/* ---- matching (match.c) ---------------------------------------------------- */

/* A file split into lines (slices of its bytes, without "\n" or, in a
 * CRLF file, "\r\n"). */
typedef struct tgi_patch_text {
	tgi_patch_line *lines;
	size_t          n;
} tgi_patch_text;

/*
 * Find pattern (m lines) in lines[start..n) with four passes of decreasing
 * strictness: exact, trailing whitespace ignored, both ends trimmed, and
 * trimmed with typographic punctuation folded to ASCII.  With eof, only the
 * position that ends at the last line is tried (and only if it is not
 * before start).  Returns the index or -1.  An empty pattern matches at
 * start.
 */
long tgi_patch_seek(const tgi_patch_line *lines, size_t n, const tgi_patch_line *pattern,
                    size_t m, size_t start, int eof);

/* ---- planning (apply.c) ------------------------------------------------------ */

/* One file's final state: new bytes, or removal. */
typedef struct tgi_patch_write {
	char   *path;      /* normalised, workspace-relative, as text (owned; fs.h) */
	char   *fspath;    /* its bytes: what the journal opens (owned) */
	char   *data;      /* owned; NULL: remove the file */
	size_t  len;
	mode_t  mode;      /* for data: the mode the file gets */
	int     existed;   /* something is there now (file or symlink) */
} tgi_patch_write;

/* What a patch does: the writes, the result and Codex's summary text. */
typedef struct tgi_patch_plan {
	tgi_patch_write *writes;
	size_t           nwrites;
	json_t          *result;   /* {"added","modified","deleted","moved":[{from,to}]} */
	char            *summary;  /* "Success. Updated the following files:\nA p\n..." */
} tgi_patch_plan;

/* Why a patch could not be planned. */
typedef enum {
	TGI_PATCH_OK,
	TGI_PATCH_EINVAL,    /* the patch does not fit the files (or is empty) */
	TGI_PATCH_EREFUSED,  /* a path leaves the workspace or is protected */
	TGI_PATCH_EIO,       /* a file could not be read */
	TGI_PATCH_ECHANGED,  /* a path leads elsewhere than where policy judged it */
} tgi_patch_err;

/*
 * Compute every file's final bytes against the workspace ws_fd, reading
 * but never writing.  Operations apply in order, each seeing the result of
 * the ones before.  Every path is checked first (relative, confined,
 * not under .git/ or .toolgate/, as written and as resolved).  Returns
 * TGI_PATCH_OK with *plan filled (free with tgi_patch_plan_free), or the
 * error with a message in err ("Failed to find expected lines in p:\n...").
 */
tgi_patch_err tgi_patch_plan_make(int ws_fd, const tgi_patch *p, tgi_patch_plan *plan,
                                  char *err, size_t errlen);
/*
 * The same, each path held to where the policy stage judged it: judged
 * holds the patch's paths in order (each op's path, then its Move target)
 * as decide placed them (tgi_path_resolve_parent), and a path that now
 * lands elsewhere -- a symlink or directory on it replaced since -- is
 * TGI_PATCH_ECHANGED before anything is read (err: tgi_path_error's
 * sentence for -ESTALE).  judged NULL: tgi_patch_plan_make.
 */
tgi_patch_err tgi_patch_plan_held(int ws_fd, const tgi_patch *p, const char *const *judged,
                                  size_t njudged, tgi_patch_plan *plan, char *err,
                                  size_t errlen);
void          tgi_patch_plan_free(tgi_patch_plan *plan);

/* ---- committing (journal.c) -------------------------------------------------- */

/*
 * Write the plan all or nothing.  journal_fd is a directory (in the gate's
 * state, outside what tools may touch) for the rollback journal; txid
 * names the transaction (an op id: [0-9a-f-], at most 36 characters).
 *
 * Returns 0 when every file is in place and durable; -1 with err when
 * nothing was changed (everything rolled back); -2 with err when the
 * outcome is unknown (the rollback itself failed: the journal stays, and
 * the next tgi_patch_recover finishes it).
 */
int tgi_patch_commit(int ws_fd, int journal_fd, const char *txid, const tgi_patch_plan *plan,
                     char *err, size_t errlen);

/*
 * Finish every journal a crashed commit left behind in journal_fd: roll a
 * prepared one back (every file as before), a committed one forward
 * (remove its backups).  Journals held by a live commit are skipped.  The
 * txid of each transaction rolled back is appended to undone (if not
 * NULL): nothing of it was applied.  A file the transaction was to create
 * is removed only when it is the very file the commit made (device, inode,
 * birth time); one that is not -- made or replaced by another since, or
 * named by a journal of version 1, which does not say -- is left, and
 * {"tx", "path" (as text), "message" (a sentence)} appended to kept (a
 * JSON array, if not NULL).  Returns the number of transactions finished,
 * or -1 with err if one could not be (a journal of a version this build
 * does not know, or unreadable, is kept and named).
 *
 * The gate's start is the one caller that settles what it finds
 * (finish_patches in gate/gate.c: the claims of the calls rolled back);
 * `toolgate apply-patch` opens a gate for it.
 */
int tgi_patch_recover(int ws_fd, int journal_fd, tgi_strv *undone, json_t *kept, char *err,
                      size_t errlen);

/*
 * The journal file's parser, for fuzz/fuzz_journal.c: text read back as
 * recovery reads it.  Returns its version (1 or 2) with *canon the text it
 * would be written as (caller frees; read back, the same), or -1 with the
 * reason in err (*canon NULL).
 */
int tgi_patch_journal_check(const char *text, size_t len, char **canon, char *err, size_t errlen);

/* ---- the whole (run.c) --------------------------------------------------------- */

/* Open <state>/journal (created if missing, checked like the rest of the
 * gate's state).  An fd, or -1 with err. */
int tgi_patch_journal_open(int state_fd, char *err, size_t errlen);

/*
 * Parse, plan and commit the patch text (leftover journals are the
 * caller's to finish first: tgi_patch_recover).
 * TG_ERR_NONE with *plan filled (its summary and result; free with
 * tgi_patch_plan_free), or the kind with Codex's message in err:
 * invalid_input (the patch does not parse), not_permitted (a path is
 * refused), tool_error (the patch does not fit the files; nothing
 * changed), unknown_outcome (*unknown set: the commit failed and could not
 * be undone; the journal finishes it at the next start).
 */
tg_errkind tgi_patch_run(int ws_fd, int journal_fd, const char *txid, const char *text,
                         size_t len, tgi_patch_plan *plan, int *unknown, char *err, size_t errlen);
/* The same, planned with tgi_patch_plan_held: a path that changed since
 * the policy stage judged it is TG_ERR_TRANSIENT, nothing written. */
tg_errkind tgi_patch_run_held(int ws_fd, int journal_fd, const char *txid, const char *text,
                              size_t len, const char *const *judged, size_t njudged,
                              tgi_patch_plan *plan, int *unknown, char *err, size_t errlen);

#endif
