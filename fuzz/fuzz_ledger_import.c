/*
 * fuzz_ledger_import.c — arbitrary bytes into the line parser of `toolgate
 * ledger import` (tgi_ledger_parse), without a store: each line of the
 * input is parsed as import reads it.
 *
 * Every line ends as a record or a printable sentence; a record keeps what
 * the importer relies on (a UUID op_id, a status and error kind toolgate
 * has, canonical args, an envelope object, events with a type; a claim's
 * scope and state; a binding of 64 lowercase hex digits, only with a
 * scope; an eval run's UUID, time, rates and report object), and an op or
 * an eval run written back as an export line parses to the same record.
 *
 * Owns: nothing.  Must not: open a ledger or write files.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "admin/ledger.h"
#include "store/store.h"
#include "util/util.h"

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The record as an export line again. */
static json_t *row_of(const tgi_ledger_line *ln)
{
	const tgi_op_record *op = &ln->op;
	json_t *events = json_array();
	for (size_t i = 0; i < ln->nev; i++)
		json_array_append_new(events, json_pack("{s:I, s:s, s:o, s:O?}", "ts_ms",
		                                        (json_int_t)ln->ev[i].ts_ms, "type",
		                                        ln->ev[i].type, "stage",
		                                        str_or_null(ln->ev[i].stage), "data",
		                                        ln->ev[i].data));
	json_t *row = json_pack("{s:s, s:s, s:I, s:f, s:o, s:o}", "op_id", op->op_id, "status",
	                        op->status, "started_ms", (json_int_t)op->started_ms,
	                        "duration_ms", op->duration_ms, "args",
	                        json_loads(op->args_redacted, JSON_DECODE_ANY, NULL), "envelope",
	                        json_loads(op->envelope, 0, NULL));
	check(row != NULL);
	const char *keys[] = {"call_id", "session", "tool", "principal", "error_kind",
	                      "idem_scope", "idem_state", "idem_binding", "args_sha256", "loop"};
	const char *vals[] = {op->call_id, op->session, op->tool, op->principal, op->error_kind,
	                      op->idem_scope, ln->idem_state, ln->idem_binding, op->args_sha256,
	                      op->loop};
	for (size_t i = 0; i < TGI_ARRAY_LEN(keys); i++)
		json_object_set_new(row, keys[i], str_or_null(vals[i]));
	json_object_set_new(row, "events", events);
	return row;
}

/* NULL, or 64 lowercase hex digits. */
static int binding_ok(const char *b)
{
	return !b || (strlen(b) == 64 && strspn(b, "0123456789abcdef") == 64);
}

static void check_op(const tgi_ledger_line *ln)
{
	const tgi_op_record *op = &ln->op;
	check(tgi_uuid_ok(op->op_id));
	check(op->status && *op->status && op->args_redacted && op->envelope);
	check(!ln->idem_state || op->idem_scope);
	check(binding_ok(ln->idem_binding) && (!ln->idem_binding || op->idem_scope));
	check(ln->nev <= TGI_LEDGER_EVENTS_MAX);
	for (size_t i = 0; i < ln->nev; i++)
		check(ln->ev[i].type && *ln->ev[i].type && ln->ev[i].ts_ms >= 0);

	/* canonical args stay canonical; the envelope is an object */
	json_t *args = json_loads(op->args_redacted, JSON_DECODE_ANY, NULL);
	check(args != NULL);
	char *again = tgi_json_canonical(args);
	check(!strcmp(again, op->args_redacted));
	free(again);
	json_decref(args);

	/* written back and read again: the same record */
	json_t *row = row_of(ln);
	char *text = json_dumps(row, JSON_COMPACT);
	json_decref(row);
	check(text != NULL);
	tgi_ledger_line back;
	char err[512] = "";
	check(tgi_ledger_parse(text, strlen(text), &back, err, sizeof err) == 0);
	free(text);
	check(back.kind == TGI_LINE_OP && back.nev == ln->nev);
	check(same(back.op.op_id, op->op_id) && same(back.op.status, op->status) &&
	      same(back.op.call_id, op->call_id) && same(back.op.session, op->session) &&
	      same(back.op.tool, op->tool) && same(back.op.principal, op->principal) &&
	      same(back.op.error_kind, op->error_kind) && same(back.op.idem_scope, op->idem_scope) &&
	      same(back.idem_state, ln->idem_state) && same(back.idem_binding, ln->idem_binding) &&
	      same(back.op.loop, op->loop) &&
	      same(back.op.args_sha256, op->args_sha256) &&
	      same(back.op.args_redacted, op->args_redacted) &&
	      same(back.op.envelope, op->envelope));
	check(back.op.started_ms == op->started_ms && back.op.duration_ms == op->duration_ms);
	for (size_t i = 0; i < ln->nev; i++)
		check(back.ev[i].ts_ms == ln->ev[i].ts_ms && same(back.ev[i].type, ln->ev[i].type) &&
		      same(back.ev[i].stage, ln->ev[i].stage) &&
		      (back.ev[i].data ? json_equal(back.ev[i].data, ln->ev[i].data)
		                       : !ln->ev[i].data));
	tgi_ledger_line_free(&back);
}

/* An eval run keeps what tgi_store_eval_put checks, and written back as
 * tgi_store_eval_list gives it (rates null for NAN) parses to the same run. */
static void check_eval_run(const tgi_ledger_line *ln)
{
	static const char *const checks[5] = {"tool", "valid", "args", "policy", "pass"};
	const tgi_eval_row *r = &ln->eval;
	char ts[32];
	check(tgi_uuid_ok(r->id) && r->ts_ms >= 0 && r->cases >= 0 && r->runs >= 0);
	json_t *scores = json_object();
	for (int i = 0; i < 5; i++) {
		check(isnan(r->score[i]) || (r->score[i] >= 0.0 && r->score[i] <= 1.0));
		json_object_set_new(scores, checks[i],
		                    isnan(r->score[i]) ? json_null() : json_real(r->score[i]));
	}
	json_t *report = json_loads(r->report, 0, NULL);
	check(json_is_object(report));
	tgi_iso8601(r->ts_ms, ts);
	json_t *row = json_pack("{s:{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o}}",
	                        "eval_run", "id", r->id, "ts", ts, "provider",
	                        str_or_null(r->provider), "api", str_or_null(r->api), "model",
	                        str_or_null(r->model), "profile", str_or_null(r->profile),
	                        "manifest", str_or_null(r->manifest), "suite",
	                        str_or_null(r->suite), "cases", (json_int_t)r->cases, "runs",
	                        (json_int_t)r->runs, "scores", scores, "report", report);
	check(row != NULL);
	char *text = json_dumps(row, JSON_COMPACT);
	json_decref(row);
	check(text != NULL);
	tgi_ledger_line back;
	char err[512] = "";
	check(tgi_ledger_parse(text, strlen(text), &back, err, sizeof err) == 0);
	free(text);
	check(back.kind == TGI_LINE_EVAL_RUN && back.eval.ts_ms == r->ts_ms &&
	      same(back.eval.id, r->id) && same(back.eval.provider, r->provider) &&
	      same(back.eval.api, r->api) && same(back.eval.model, r->model) &&
	      same(back.eval.profile, r->profile) && same(back.eval.manifest, r->manifest) &&
	      same(back.eval.suite, r->suite) && back.eval.cases == r->cases &&
	      back.eval.runs == r->runs && same(back.eval.report, r->report));
	for (int i = 0; i < 5; i++)
		check(isnan(r->score[i]) ? isnan(back.eval.score[i])
		                         : back.eval.score[i] == r->score[i]);
	tgi_ledger_line_free(&back);
}

static void one_line(const char *text, size_t len)
{
	tgi_ledger_line ln;
	char err[512] = "";
	if (tgi_ledger_parse(text, len, &ln, err, sizeof err) < 0) {
		check(err[0] && printable(err));
		check(!ln.root && !ln.ev && !ln.op.envelope && !ln.op.args_redacted);
		return;
	}
	switch (ln.kind) {
	case TGI_LINE_BLANK:
		check(!ln.root);
		break;
	case TGI_LINE_HEADER:
		check(ln.schema >= 0 && ln.schema <= TGI_STORE_SCHEMA_VERSION);
		break;
	case TGI_LINE_EVENT:
		check(ln.nev == 1 && ln.ev[0].type && *ln.ev[0].type);
		break;
	case TGI_LINE_OP:
		check_op(&ln);
		break;
	case TGI_LINE_CLAIM:
		check(tgi_uuid_ok(ln.op.op_id) && ln.op.idem_scope && *ln.op.idem_scope);
		check(!strcmp(ln.idem_state, "in_flight") || !strcmp(ln.idem_state, "unknown"));
		check(ln.op.started_ms >= 0 && !ln.ev && !ln.op.envelope);
		check(binding_ok(ln.idem_binding));
		break;
	case TGI_LINE_EVAL_RUN:
		check(!ln.ev && !ln.op.envelope);
		check_eval_run(&ln);
		break;
	}
	tgi_ledger_line_free(&ln);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		one_line(p, n);
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}
