/*
 * stages.h — the pipeline's eight stages, in the order a call meets them
 * (DESIGN §1):
 *
 *   decode → validate → identify → decide → approve → execute → shape → persist
 *
 * Each stage is one file of src/pipeline/ with one entry point.  A stage
 * returns a verdict (call.h); a stop has already set the call's status.
 * The gate (src/gate/) builds its chain from this order and the parts
 * that are open (mw/part.h); a part's step runs after one of these.
 *
 * Owns: the phase enum and the entry points.  Must not: name a part.
 */
#ifndef TGI_STAGES_H
#define TGI_STAGES_H

#include "pipeline/call.h"

/* XX(PHASE, name, entry): the stages in order.  persist ends every call
 * (the gate runs it on every path), so it is no step of the chain. */
#define TGI_STAGE_MAP(XX)                        \
	XX(DECODE,   "decode",   tgi_decode)     \
	XX(VALIDATE, "validate", tgi_validate)   \
	XX(IDENTIFY, "identify", tgi_identify)   \
	XX(DECIDE,   "decide",   tgi_decide)     \
	XX(APPROVE,  "approve",  tgi_approve)    \
	XX(EXECUTE,  "execute",  tgi_execute)    \
	XX(SHAPE,    "shape",    tgi_shape)

typedef enum {
#define XX(p, name, fn) TGI_PHASE_##p,
	TGI_STAGE_MAP(XX)
#undef XX
	TGI_PHASE_PERSIST,
	TGI_NPHASES
} tgi_phase;

/* The stage that admits a call ends the admit chain; the rest run it. */
#define TGI_PHASE_LAST_ADMIT TGI_PHASE_APPROVE

tgi_verdict tgi_decode(tgi_call *c);
tgi_verdict tgi_validate(tgi_call *c);
tgi_verdict tgi_identify(tgi_call *c);
tgi_verdict tgi_decide(tgi_call *c);
tgi_verdict tgi_approve(tgi_call *c);
tgi_verdict tgi_execute(tgi_call *c);
tgi_verdict tgi_shape(tgi_call *c); /* never stops */
void        tgi_persist(tgi_call *c);

#endif
