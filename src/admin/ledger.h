/*
 * ledger.h — one line of a ledger export (`toolgate ledger export`, read
 * back by `toolgate ledger import`), parsed without a store so that the
 * parser stands alone (fuzz/fuzz_ledger_import.c).
 *
 * The export is JSON lines, version TGI_LEDGER_FORMAT:
 *   {"toolgate_ledger": 2, "schema": N, "exported_at": "...", ...}   the header, first
 *   {"op_id": ..., "status": ..., "envelope": {...}, "events": [...], ...}
 *                                     one op with its events (tgi_store_export's row;
 *                                     "idem_binding": what its key was bound to)
 *   {"event": {"ts_ms": ..., "type": ..., "stage": ..., "data": ...}}
 *                                     an event of no op
 *   {"claim": {"scope": ..., "op_id": ..., "state": ..., "binding": ...,
 *              "created_ms": ...}}
 *                                     an idempotency claim in flight or unknown whose
 *                                     call left no op row (its process died)
 *   {"eval_run": {"id": ..., "ts": "2026-11-30T03:49:36.123Z", "provider": ...,
 *                 "scores": {...}, "report": {...}}}
 *                                     a run of toolgate eval (tgi_store_eval_list's row)
 * A binding (sha256 hex, or null) is what keeps a key from replaying
 * another call's result; exports made before it existed have none.
 * Format 2 added the eval_run lines: a format 1 export (none) reads as
 * before, and a toolgate that reads only format 1 refuses a format 2
 * export at its header, before it writes anything.
 *
 * Owns: the shape of those lines, and how a ledger's location is shown.
 * Must not: touch a store (src/admin/ledger.c writes what this parses).
 */
#ifndef TGI_LEDGER_H
#define TGI_LEDGER_H

#include <stddef.h>
#include <jansson.h>

#include "store/store.h"

#define TGI_LEDGER_FORMAT     2            /* the format written */
#define TGI_LEDGER_FORMAT_MIN 1            /* the oldest format read */
#define TGI_LEDGER_LINE_MAX   (64u << 20)  /* bytes of one line (an op with its envelope) */
#define TGI_LEDGER_EVENTS_MAX 4096         /* events of one op line */

typedef enum {
	TGI_LINE_BLANK,    /* nothing but white space */
	TGI_LINE_HEADER,   /* schema */
	TGI_LINE_OP,       /* op, idem_state, ev[nev] */
	TGI_LINE_EVENT,    /* ev[0], nev == 1 */
	TGI_LINE_CLAIM,    /* op.idem_scope, op.op_id, idem_state ("in_flight" or "unknown"),
	                      op.started_ms (when it was claimed) */
	TGI_LINE_EVAL_RUN, /* eval */
} tgi_line_kind;

typedef struct tgi_ledger_line {
	tgi_line_kind kind;
	int           schema;       /* HEADER: the exporting ledger's schema version */
	tgi_op_record op;           /* OP: strings borrowed from root, except args_redacted
	                               and envelope (owned: canonical args text, and the
	                               envelope as the gate writes it) */
	const char   *idem_state;   /* OP: "done", "unknown", "in_flight" or NULL (borrowed) */
	const char   *idem_binding; /* OP, CLAIM: the claim's binding, 64 hex digits, or NULL
	                               (borrowed) */
	tgi_event    *ev;           /* OP: its events, oldest first; EVENT: the event
	                               (owned array; type, stage and data borrowed from root;
	                               data NULL for JSON null) */
	size_t        nev;
	tgi_eval_row  eval;         /* EVAL_RUN: texts borrowed from root (NULL for null), ts_ms
	                               from "ts", score[i] NAN for null, report owned (the
	                               report object as compact JSON text) */
	json_t       *root;         /* owned: the parsed line */
} tgi_ledger_line;

/*
 * Parse one line (len bytes, without its newline; need not be
 * NUL-terminated).  0 with *out filled (release it with
 * tgi_ledger_line_free), or -1 with a printable sentence in err saying
 * what is wrong ("op_id: expected a UUID, got \"x\"") and *out empty.
 * Every string is checked for type and length, status and error_kind
 * against the names toolgate has, a header's format and schema against
 * this program's, an eval run as tgi_store_eval_put would check it.
 */
int  tgi_ledger_parse(const char *text, size_t len, tgi_ledger_line *out, char *err, size_t errlen);
void tgi_ledger_line_free(tgi_ledger_line *l);

#endif
