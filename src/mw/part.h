/*
 * part.h — an optional part of the chain (DESIGN §4), one const row each,
 * as nginx's modules are: built from its configuration section when the
 * gate opens (a bad section refuses the gate there, with file:line), its
 * step placed after one stage, its hooks around persist.
 *
 *   decode → [shell patch] → [client args] → [aliases] → validate → identify
 *   → [loop check] → [before-hooks] → decide → [rate limit] → approve
 *   → execute → shape → [loop record] → persist → sinks → [after-hooks]
 *
 * The gate (src/gate/) names no part: gate/parts.c lists the rows, and the
 * gate builds its chain from the stages' order (stages.h) and the parts
 * that opened, in the list's order after the same stage.  A part that is
 * not configured opens to no state and costs a call nothing.  A part's
 * per-gate state (windows, buckets, programs) is its own, behind its own
 * lock; a step touches only its call and that state.
 *
 * Owns: the row.  Must not: decide permission (decide does) or run tools
 * (execute does).
 */
#ifndef TGI_PART_H
#define TGI_PART_H

#include <stddef.h>

#include "toolgate.h"
#include "pipeline/call.h"
#include "pipeline/stages.h"
#include "util/util.h"

typedef struct tgi_part {
	const char *name;     /* its step's name in the chain and the trace: "loop" */
	tgi_phase   after;    /* its step runs after this stage */
	int         judge;    /* its step runs when a call is only judged (tgi_call_judge):
	                         it keeps no state, runs no program, spends nothing */
	/* From the gate's configuration (g is being opened: its cfg, registry
	 * and rules are there; the ledger is not yet) and the caller's options:
	 * 0 with *state NULL when the part is off, 0 with its state, or -1
	 * with a sentence in err (file:line of the section).  NULL: always on,
	 * with no state.  o is NULL when a late part is opened on demand. */
	int  (*open)(tg_gate *g, const tg_options *o, void **state, char *err, size_t errlen);
	void (*stop)(void *state);     /* first when the gate closes: no call of the part runs
	                                  past it (NULL: none) */
	void (*close)(void *state);    /* after every call has ended and the tools are freed */
	int   late;   /* opened once the ledger is open and a crash's patches are settled
	                 (never on a foreign ledger, which is only read); when its open left
	                 it off, opened on demand by tgi_gate_every_tool with o NULL */
	tgi_verdict (*step)(tgi_call *c, void *state);      /* NULL: no step */
	void (*before_persist)(tgi_call *c, void *state);   /* NULL: none */
	void (*after_persist)(tgi_call *c, void *state);    /* NULL: none; c->envelope is set */
	/* Files in the workspace the part runs or writes, which no tool may
	 * touch (borrowed; NULL: none). */
	const tgi_strv *(*files)(const void *state);
} tgi_part;

/* Every part, in chain order for those after the same stage; NULL ends it
 * (gate/parts.c). */
extern const tgi_part *const tgi_parts[];

#endif
