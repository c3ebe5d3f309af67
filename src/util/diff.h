/*
 * diff.h — line diffs in unified format, as `diff -u` writes them.
 *
 *   --- a/path                  (or /dev/null for a file that is created)
 *   +++ b/path                  (or /dev/null for a file that is removed)
 *   @@ -l,n +l,n @@             one hunk per group of changes, with `context`
 *    context                    lines around each; groups closer than twice
 *   -removed                    the context are one hunk
 *   +added
 *   \ No newline at end of file (after a last line without one)
 *
 * Lines are compared as bytes, their end of line included: a CRLF file
 * diffs as CRLF lines, and a last line without "\n" differs from the same
 * line with one.  The edit script is Myers' O(ND) greedy algorithm on the
 * lines left between the common head and tail, so it is minimal; its work
 * is bounded (edit distance and edit-graph steps), and past the bound the
 * middle is replaced as a whole -- still a correct diff, just not a small
 * one.  Input with a NUL byte in it is binary: one "Binary files ... differ"
 * line.  Output past max_out bytes is cut at a line and a marker says so.
 *
 * Owns: the algorithm and the format.  Must not: read or write files.
 */
#ifndef TGI_DIFF_H
#define TGI_DIFF_H

#include <stddef.h>
#include "util/util.h"

#define TGI_DIFF_CONTEXT    3
#define TGI_DIFF_INPUT_MAX  (16u << 20)  /* bytes of each side that are diffed */
#define TGI_DIFF_MAX_D      2048         /* edit distance before the fallback */
#define TGI_DIFF_MAX_WORK   20000000u    /* edit-graph steps before the fallback */

typedef struct tgi_diff_opts {
	int    context;    /* lines of context around a change; < 0: TGI_DIFF_CONTEXT */
	size_t max_out;    /* bytes of diff before it is cut; 0: no limit */
	size_t max_d;      /* 0: TGI_DIFF_MAX_D */
	size_t max_work;   /* 0: TGI_DIFF_MAX_WORK */
} tgi_diff_opts;

typedef struct tgi_diff_info {
	size_t added, removed;   /* lines, as the written diff counts them */
	size_t hunks;
	int    identical;        /* the bytes are equal: nothing was written */
	int    binary;           /* a NUL byte on either side: the one-line answer */
	int    fallback;         /* the work bound was reached: the middle is replaced whole */
	int    cut;              /* the output reached max_out and was cut */
	int    too_large;        /* a side is over TGI_DIFF_INPUT_MAX: nothing was written */
} tgi_diff_info;

/*
 * Append to out the unified diff from a (alen bytes) to b (blen bytes).
 * old_label and new_label follow "--- " and "+++ " as given ("a/x",
 * "/dev/null"); control characters in them are written as '?'.  o may be
 * NULL (defaults).  info (may be NULL) says what was written.  Equal
 * inputs write nothing.  out is the caller's; its own maximum should leave
 * room past max_out for the marker (a failed append counts as a cut).
 */
void tgi_diff_unified(const char *a, size_t alen, const char *b, size_t blen,
                      const char *old_label, const char *new_label, const tgi_diff_opts *o,
                      tgi_buf *out, tgi_diff_info *info);

#endif
