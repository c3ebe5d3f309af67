/*
 * contract.h — the tool contract's flag bits (TGI_T_*), which a tool row
 * (registry.h) carries and the configuration (config.c) reads from a
 * configured tool's keys.
 *
 * Owns: the bits and what each one means, defined once here.  Must not:
 * know a tool, a row or the registry.
 */
#ifndef TGI_CONTRACT_H
#define TGI_CONTRACT_H

/*
 * Contract flags.  Every flag defaults to off, which is the conservative
 * reading: a tool with no flags is assumed to have side effects, to be
 * unsafe beside other calls, not destructive-but-unconfirmed, not safe to
 * retry, and open to `ask`.
 *
 * TGI_T_READ_ONLY        No side effects.  May be allowed by the mode default;
 *                        never needs an idempotency key or an in_flight record.
 * TGI_T_CONCURRENCY_SAFE May run beside other concurrency-safe calls in one
 *                        batch (with disjoint paths).
 * TGI_T_DESTRUCTIVE      Needs confirmation even where edits are auto-accepted
 *                        (acceptEdits never allows it by default).
 * TGI_T_IDEMPOTENT       A retry is harmless.
 * TGI_T_REQUIRES_GRANT   Denied unless an allow rule (global or a role of the
 *                        caller) matches; the mode default never lets it run.
 * TGI_T_REQUIRES_KEY     The schema gains `idempotency_key` (string, required).
 * TGI_T_EDITS_FILES      Edits files inside the workspace (acceptEdits may
 *                        allow it when not destructive).
 * TGI_T_CONFIRM          A configured tool's `destructive: true` (with
 *                        TGI_T_DESTRUCTIVE): asked in every mode (plan denies),
 *                        bypassPermissions included, and under every allow rule
 *                        but one that names the tool (no wildcard in its tool
 *                        part: `deploy(env=staging)`, not `*`).
 */
enum {
	TGI_T_READ_ONLY        = 1u << 0,
	TGI_T_CONCURRENCY_SAFE = 1u << 1,
	TGI_T_DESTRUCTIVE      = 1u << 2,
	TGI_T_IDEMPOTENT       = 1u << 3,
	TGI_T_REQUIRES_GRANT   = 1u << 4,
	TGI_T_REQUIRES_KEY     = 1u << 5,
	TGI_T_EDITS_FILES      = 1u << 6,
	TGI_T_CONFIRM          = 1u << 7,
};

#endif
