/*
 * batch.h — parallel batches: the planner and the runner (src/gate/batch.c).
 *
 * A batch is cut into ordered segments; a call never jumps an earlier
 * barrier.  The calls of one segment run at once on the gate's pool; the
 * next segment starts when all of them have finished.
 *
 *   joins a segment        when nothing there conflicts with it
 *   conflicts              two calls, one of which writes, with an
 *                          overlapping path (equal, or one an ancestor
 *                          directory of the other; as written or as
 *                          resolved); or two calls with one idempotency
 *                          scope (they would race for one claim)
 *   alone (a barrier)      anything neither concurrency-safe nor
 *                          path-scoped: a command line (shell), a
 *                          configured or bridged tool that does not say
 *                          concurrency_safe, a tool whose paths are
 *                          unknown; it runs after everything before it
 *                          and before everything after it
 *
 * Owns: the segment rules.  Must not: decide permission or run a stage
 * itself (gate.c's driver does, through tgi_call_admit/run/finish).
 */
#ifndef TGI_BATCH_H
#define TGI_BATCH_H

#include <stddef.h>

#include "toolgate.h"

/* What the planner knows of one call; everything borrowed. */
typedef struct tgi_batch_item {
	int                 alone;     /* a barrier: runs by itself */
	int                 writes;    /* changes what its paths name (not read-only) */
	const char *const  *paths;     /* workspace-relative, normalised, as written */
	const char *const  *resolved;  /* the same, as resolved (entries may be NULL) */
	size_t              npaths;
	const char         *scope;     /* its idempotency scope, or NULL */
} tgi_batch_item;

/* The segment being filled.  tgi_segment_new's result is freed with
 * tgi_segment_free; the strings of admitted items are borrowed until
 * tgi_segment_clear (or free). */
typedef struct tgi_segment tgi_segment;

tgi_segment *tgi_segment_new(void);
void         tgi_segment_free(tgi_segment *s);

/* Empty the segment for the next one. */
void tgi_segment_clear(tgi_segment *s);

/* Add it if it may run beside every call already in s: 1 joined, 0 not
 * (it starts the next segment).  An empty segment admits any item. */
int tgi_segment_admit(tgi_segment *s, const tgi_batch_item *it);

/* Does s hold a barrier (nothing may join it)? */
int tgi_segment_closed(const tgi_segment *s);

/* Plan n items at once: seg[i] gets item i's segment number (0, 1, ...,
 * in order).  Returns the number of segments. */
size_t tgi_batch_plan(const tgi_batch_item *items, size_t n, size_t *seg);

/*
 * Run a batch through g (tg_call_batch).  Each call is admitted (decode …
 * approve) in call order in the calling thread, so its policy and approval
 * are settled after every earlier segment has run and before its own
 * starts; a call stopped there is persisted at once and takes no slot.
 * Then each segment runs (execute, shape, persist) on g's pool: out[i]
 * gets reqs[i]'s result (caller frees each).  Returns n.
 */
size_t tgi_batch_run(tg_gate *g, const tg_request *reqs, size_t n, tg_result **out);

#endif
