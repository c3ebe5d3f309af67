/*
 * ledger.c — the ledger on its own, without a gate: `toolgate migrate`
 * (the schema's versioned migrations), `toolgate ledger export` (the
 * history as JSON lines, src/admin/ledger.h) and `toolgate ledger import` (those
 * lines into another ledger, SQLite or PostgreSQL).
 *
 * An import writes each op as the gate recorded it: one tgi_store_record
 * per op (its row and events in one transaction), the op's idempotency
 * claim made first with the binding it had (so that the same key with
 * other arguments is refused, not replayed) and then settled done when it
 * was done (so that a repeat of the call replays it in the new ledger) or
 * unknown when it was unknown (never run again).  What is
 * already there is skipped, so an import can be run again after a failure
 * or twice by mistake: an op by its op_id, an event of no op by its time,
 * type, stage and data (looked up only when the ledger had events before
 * the import began), a claim by its scope, an eval run by its id.  Event
 * seqs are the new ledger's own.  A claim whose call left no row (the process died while
 * the tool ran) comes too, and stays an unknown outcome (see import_claim).
 *
 * Owns: the ledger a configuration names (tgi_config_load finds it: the
 * config's store, or $TOOLGATE_STORE), opened as a gate opens it
 * (tgi_store_open_for), without the gate; the export lines and their parser.
 * Must not: compile policy, run tools, or change what a call's record
 * says.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "gate/gate.h"
#include "admin/ledger.h"
#include "store/store.h"
#include "util/util.h"

#define TGI_LEDGER_ID_MAX    1024        /* call_id, session, tool, principal, loop, stage */
#define TGI_LEDGER_SCOPE_MAX 1024        /* an idempotency scope, as the store allows */
#define TGI_LEDGER_MS_MAX    253402300799999LL  /* 9999-12-31T23:59:59.999Z */
#define TGI_LEDGER_LEASE_S   60          /* the claim an unknown op is imported under */
#define TGI_LEDGER_READ      (64u << 10) /* bytes read at a time */

struct tg_ledger {
	tgi_store *store;
	char       where[1024];   /* fit for sentences: no user, password or parameters */
	char      *key_env, *key_file; /* the configuration's ledger.key_env, key_file */
	int        foreign_ok;    /* TG_LEDGER_FOREIGN_OK */
};

static tgi_key_source key_of(const tg_ledger *l)
{
	return (tgi_key_source){ .env = l->key_env, .file = l->key_file };
}

/* ---- parsing one line ---- */

static int expected(char *err, size_t errlen, const char *field, const char *want,
                    const json_t *got)
{
	char d[96];
	tgi_snprintf(err, errlen, "%s: expected %s, got %s", field, want,
	             got ? tgi_json_describe(got, d, sizeof d) : "nothing");
	return -1;
}

/* o[key] as a string of at most max bytes: *out NULL when absent or null
 * (unless required, when it must be a non-empty string). */
static int get_string(json_t *o, const char *key, const char *field, size_t max, int required,
                      const char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!required && (!v || json_is_null(v)))
		return 0;
	if (!json_is_string(v) || (required && !json_string_length(v)))
		return expected(err, errlen, field,
		                required ? "a non-empty string" : "a string or null", v);
	if (json_string_length(v) > max) {
		tgi_snprintf(err, errlen, "%s: longer than %zu bytes", field, max);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/* o[key] as unix ms (0 to the year 9999). */
static int get_ms(json_t *o, const char *key, const char *field, int64_t *out, char *err,
                  size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > TGI_LEDGER_MS_MAX)
		return expected(err, errlen, field, "a time in unix milliseconds", v);
	*out = (int64_t)json_integer_value(v);
	return 0;
}

/* Is s one of the n names name(0..n-1) gives? */
static int known_name(const char *s, int n, const char *(*name)(int))
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, name(i)))
			return 1;
	return 0;
}

static const char *status_name(int i) { return tg_status_name((tg_status)i); }
static const char *errkind_name(int i) { return tg_errkind_name((tg_errkind)i); }

static int sha256_hex(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* {ts_ms, type, stage, data} into ev (strings and data borrowed from v). */
static int parse_event(json_t *v, const char *field, tgi_event *ev, char *err, size_t errlen)
{
	char f[64];
	memset(ev, 0, sizeof *ev);
	if (!json_is_object(v))
		return expected(err, errlen, field, "an object {ts_ms, type, stage, data}", v);
	tgi_snprintf(f, sizeof f, "%s.ts_ms", field);
	if (get_ms(v, "ts_ms", f, &ev->ts_ms, err, errlen) < 0)
		return -1;
	tgi_snprintf(f, sizeof f, "%s.type", field);
	if (get_string(v, "type", f, 128, 1, &ev->type, err, errlen) < 0)
		return -1;
	tgi_snprintf(f, sizeof f, "%s.stage", field);
	if (get_string(v, "stage", f, TGI_LEDGER_ID_MAX, 0, &ev->stage, err, errlen) < 0)
		return -1;
	json_t *data = json_object_get(v, "data");
	ev->data = json_is_null(data) ? NULL : data;
	return 0;
}

/* o[key]: a binding (64 lowercase hex digits) or null/absent (*out NULL). */
static int get_binding(json_t *o, const char *key, const char *field, const char **out,
                       char *err, size_t errlen)
{
	if (get_string(o, key, field, 64, 0, out, err, errlen) < 0)
		return -1;
	if (*out && !sha256_hex(*out))
		return expected(err, errlen, field, "64 lowercase hex digits or null",
		                json_object_get(o, key));
	return 0;
}

static int parse_header(json_t *root, tgi_ledger_line *out, char *err, size_t errlen)
{
	json_t *fmt = json_object_get(root, "toolgate_ledger");
	json_t *schema = json_object_get(root, "schema");
	if (!json_is_integer(fmt))
		return expected(err, errlen, "toolgate_ledger", "the export format number", fmt);
	if (json_integer_value(fmt) < TGI_LEDGER_FORMAT_MIN ||
	    json_integer_value(fmt) > TGI_LEDGER_FORMAT) {
		tgi_snprintf(err, errlen,
		             "the export is in format %" JSON_INTEGER_FORMAT
		             "; this toolgate reads formats %d to %d%s",
		             json_integer_value(fmt), TGI_LEDGER_FORMAT_MIN, TGI_LEDGER_FORMAT,
		             json_integer_value(fmt) > TGI_LEDGER_FORMAT
		                     ? " (import it with a newer toolgate)" : "");
		return -1;
	}
	if (!json_is_integer(schema) || json_integer_value(schema) < 0)
		return expected(err, errlen, "schema", "a schema version", schema);
	if (json_integer_value(schema) > TGI_STORE_SCHEMA_VERSION) {
		tgi_snprintf(err, errlen,
		             "the export comes from a ledger at schema version %" JSON_INTEGER_FORMAT
		             ", newer than this toolgate understands (%d); import it with a newer "
		             "toolgate",
		             json_integer_value(schema), TGI_STORE_SCHEMA_VERSION);
		return -1;
	}
	out->kind = TGI_LINE_HEADER;
	out->schema = (int)json_integer_value(schema);
	return 0;
}

/* The text columns of an op row: op_id and status are checked apart. */
static int parse_op_strings(json_t *root, tgi_op_record *op, char *err, size_t errlen)
{
	static const struct { const char *key; size_t max; } cols[] = {
		{"call_id", TGI_LEDGER_ID_MAX},   {"session", TGI_LEDGER_ID_MAX},
		{"tool", TGI_LEDGER_ID_MAX},      {"principal", TGI_LEDGER_ID_MAX},
		{"error_kind", 64},               {"idem_scope", TGI_LEDGER_SCOPE_MAX},
		{"args_sha256", 64},              {"loop", TGI_LEDGER_ID_MAX},
	};
	const char **dst[] = { &op->call_id,    &op->session,     &op->tool, &op->principal,
	                       &op->error_kind, &op->idem_scope,  &op->args_sha256, &op->loop };
	for (size_t i = 0; i < TGI_ARRAY_LEN(cols); i++)
		if (get_string(root, cols[i].key, cols[i].key, cols[i].max, 0, dst[i], err, errlen) < 0)
			return -1;
	if (op->error_kind && !known_name(op->error_kind, TG_ERR__COUNT, errkind_name))
		return expected(err, errlen, "error_kind", "an error kind toolgate has",
		                json_object_get(root, "error_kind"));
	if (op->args_sha256 && !sha256_hex(op->args_sha256))
		return expected(err, errlen, "args_sha256", "64 lowercase hex digits",
		                json_object_get(root, "args_sha256"));
	if (op->idem_scope && !*op->idem_scope)
		return expected(err, errlen, "idem_scope", "a non-empty scope or null",
		                json_object_get(root, "idem_scope"));
	return 0;
}

static int parse_op(json_t *root, tgi_ledger_line *out, char *err, size_t errlen)
{
	tgi_op_record *op = &out->op;
	json_t *v;

	v = json_object_get(root, "op_id");
	if (!json_is_string(v) || !tgi_uuid_ok(json_string_value(v)))
		return expected(err, errlen, "op_id", "a UUID", v);
	op->op_id = json_string_value(v);
	if (get_string(root, "status", "status", 32, 1, &op->status, err, errlen) < 0)
		return -1;
	if (!known_name(op->status, TG_STATUS__COUNT, status_name))
		return expected(err, errlen, "status", "a status toolgate has",
		                json_object_get(root, "status"));
	if (parse_op_strings(root, op, err, errlen) < 0)
		return -1;

	if (get_string(root, "idem_state", "idem_state", 16, 0, &out->idem_state, err, errlen) < 0)
		return -1;
	if (out->idem_state && strcmp(out->idem_state, "done") &&
	    strcmp(out->idem_state, "unknown") && strcmp(out->idem_state, "in_flight"))
		return expected(err, errlen, "idem_state",
		                "\"done\", \"unknown\", \"in_flight\" or null",
		                json_object_get(root, "idem_state"));
	if (out->idem_state && !op->idem_scope) {
		tgi_snprintf(err, errlen, "idem_state: \"%s\" without an idem_scope", out->idem_state);
		return -1;
	}
	if (get_binding(root, "idem_binding", "idem_binding", &out->idem_binding, err, errlen) < 0)
		return -1;
	if (out->idem_binding && !op->idem_scope) {
		tgi_snprintf(err, errlen, "idem_binding: a binding without an idem_scope");
		return -1;
	}

	if (get_ms(root, "started_ms", "started_ms", &op->started_ms, err, errlen) < 0)
		return -1;
	v = json_object_get(root, "duration_ms");
	if (v && !json_is_null(v) && (!json_is_number(v) || !(json_number_value(v) >= 0) ||
	                              !isfinite(json_number_value(v))))
		return expected(err, errlen, "duration_ms", "a duration in milliseconds", v);
	op->duration_ms = v ? json_number_value(v) : 0;

	json_t *env = json_object_get(root, "envelope");
	if (!json_is_object(env))
		return expected(err, errlen, "envelope", "an object", env);
	json_t *eid = json_object_get(env, "op_id");
	if (eid && !(json_is_string(eid) && !strcmp(json_string_value(eid), op->op_id)))
		return expected(err, errlen, "envelope.op_id", "the op's own op_id", eid);

	json_t *events = json_object_get(root, "events");
	if (events && !json_is_null(events) && !json_is_array(events))
		return expected(err, errlen, "events", "a list of events", events);
	size_t n = json_array_size(events);
	if (n > TGI_LEDGER_EVENTS_MAX) {
		tgi_snprintf(err, errlen, "events: %zu events; an op has at most %d", n,
		             TGI_LEDGER_EVENTS_MAX);
		return -1;
	}
	out->ev = n ? tgi_xcalloc(n, sizeof *out->ev) : NULL;
	for (size_t i = 0; i < n; i++) {
		char f[32];
		tgi_snprintf(f, sizeof f, "events[%zu]", i);
		if (parse_event(json_array_get(events, i), f, &out->ev[i], err, errlen) < 0)
			return -1;
		out->nev++;
	}

	/* the texts the ledger keeps, as the gate writes them: canonical args,
	 * the envelope compact with six significant digits (persist.c) */
	json_t *args = json_object_get(root, "args");
	op->args_redacted = tgi_json_canonical(args ? args : json_null());
	op->envelope = json_dumps(env, JSON_COMPACT | JSON_REAL_PRECISION(6));
	if (!op->envelope) {
		tgi_snprintf(err, errlen, "envelope: cannot be encoded");
		return -1;
	}
	out->kind = TGI_LINE_OP;
	return 0;
}

/* {scope, op_id, state, created_ms}: a claim whose call left no row. */
static int parse_claim(json_t *v, tgi_ledger_line *out, char *err, size_t errlen)
{
	tgi_op_record *op = &out->op;
	if (!json_is_object(v))
		return expected(err, errlen, "claim", "an object {scope, op_id, state, created_ms}", v);
	json_t *id = json_object_get(v, "op_id");
	if (!json_is_string(id) || !tgi_uuid_ok(json_string_value(id)))
		return expected(err, errlen, "claim.op_id", "a UUID", id);
	op->op_id = json_string_value(id);
	if (get_string(v, "scope", "claim.scope", TGI_LEDGER_SCOPE_MAX, 1, &op->idem_scope, err,
	               errlen) < 0 ||
	    get_string(v, "state", "claim.state", 16, 1, &out->idem_state, err, errlen) < 0 ||
	    get_binding(v, "binding", "claim.binding", &out->idem_binding, err, errlen) < 0 ||
	    get_ms(v, "created_ms", "claim.created_ms", &op->started_ms, err, errlen) < 0)
		return -1;
	if (strcmp(out->idem_state, "in_flight") && strcmp(out->idem_state, "unknown"))
		return expected(err, errlen, "claim.state", "\"in_flight\" or \"unknown\"",
		                json_object_get(v, "state"));
	out->kind = TGI_LINE_CLAIM;
	return 0;
}

/* s as tgi_iso8601 writes it ("2026-11-30T03:49:36.123Z", 1970 to 9999):
 * 0 with *ms, or -1.  Strict: the time written back is s again, so that
 * a day past its month's end is refused, not moved on. */
static int parse_time(const char *s, int64_t *ms)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	int64_t f[7] = {0};   /* year, month, day, hour, minute, second, ms */
	int k = 0;
	if (!s || strlen(s) != sizeof shape - 1)
		return -1;
	for (size_t i = 0; i < sizeof shape - 1; i++) {
		if (shape[i] != 'd') {
			if (s[i] != shape[i])
				return -1;
			k += shape[i] != 'Z';
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			return -1;
		f[k] = f[k] * 10 + (s[i] - '0');
	}
	if (f[0] < 1970 || f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 ||
	    f[4] > 59 || f[5] > 59)
		return -1;
	int64_t t = ((tgi_days_from_civil(f[0], f[1], f[2]) * 24 + f[3]) * 60 + f[4]) * 60 + f[5];
	t = t * 1000 + f[6];
	char again[32];
	tgi_iso8601(t, again);
	if (t < 0 || t > TGI_LEDGER_MS_MAX || strcmp(again, s))
		return -1;
	*ms = t;
	return 0;
}

/* v[key] as a count: an integer of 0 or more. */
static int get_count(json_t *v, const char *key, const char *field, int64_t *out, char *err,
                     size_t errlen)
{
	json_t *n = json_object_get(v, key);
	if (!json_is_integer(n) || json_integer_value(n) < 0)
		return expected(err, errlen, field, "a count (0 or more)", n);
	*out = (int64_t)json_integer_value(n);
	return 0;
}

/* {tool, valid, args, policy, pass}: each a rate from 0 to 1, or null (NAN). */
static int get_scores(json_t *v, double score[5], char *err, size_t errlen)
{
	static const char *const checks[5] = {"tool", "valid", "args", "policy", "pass"};
	json_t *o = json_object_get(v, "scores");
	if (!json_is_object(o))
		return expected(err, errlen, "eval_run.scores",
		                "an object {tool, valid, args, policy, pass}", o);
	for (int i = 0; i < 5; i++) {
		json_t *r = json_object_get(o, checks[i]);
		double x = json_is_number(r) ? json_number_value(r) : NAN;
		if (!json_is_null(r) && !(x >= 0.0 && x <= 1.0)) {
			char f[32];
			tgi_snprintf(f, sizeof f, "eval_run.scores.%s", checks[i]);
			return expected(err, errlen, f, "a rate from 0 to 1 or null", r);
		}
		score[i] = x;
	}
	return 0;
}

/* {id, ts, provider, api, model, profile, manifest, suite, cases, runs,
 * scores, report}: a run of toolgate eval, as tgi_store_eval_list gives it. */
static int parse_eval_run(json_t *v, tgi_ledger_line *out, char *err, size_t errlen)
{
	static const char *const texts[6][2] = {
		{"provider", "eval_run.provider"}, {"api", "eval_run.api"},
		{"model", "eval_run.model"},       {"profile", "eval_run.profile"},
		{"manifest", "eval_run.manifest"}, {"suite", "eval_run.suite"},
	};
	tgi_eval_row *r = &out->eval;
	const char **dst[6] = {&r->provider, &r->api, &r->model, &r->profile, &r->manifest,
	                       &r->suite};
	if (!json_is_object(v))
		return expected(err, errlen, "eval_run",
		                "an object {id, ts, model, ..., scores, report}", v);
	json_t *id = json_object_get(v, "id");
	if (!json_is_string(id) || !tgi_uuid_ok(json_string_value(id)))
		return expected(err, errlen, "eval_run.id", "a UUID", id);
	r->id = json_string_value(id);
	json_t *ts = json_object_get(v, "ts");
	if (parse_time(json_string_value(ts), &r->ts_ms) < 0)
		return expected(err, errlen, "eval_run.ts",
		                "a time as 2026-11-30T03:49:36.123Z (UTC, 1970 to 9999)", ts);
	for (int i = 0; i < 6; i++)
		if (get_string(v, texts[i][0], texts[i][1], TGI_EVAL_TEXT_MAX, 0, dst[i], err,
		               errlen) < 0)
			return -1;
	if (get_count(v, "cases", "eval_run.cases", &r->cases, err, errlen) < 0 ||
	    get_count(v, "runs", "eval_run.runs", &r->runs, err, errlen) < 0 ||
	    get_scores(v, r->score, err, errlen) < 0)
		return -1;
	json_t *report = json_object_get(v, "report");
	if (!json_is_object(report))
		return expected(err, errlen, "eval_run.report", "an object", report);
	/* full precision: the rates read back are the same doubles */
	r->report = json_dumps(report, JSON_COMPACT);
	if (!r->report) {
		tgi_snprintf(err, errlen, "eval_run.report: cannot be encoded");
		return -1;
	}
	out->kind = TGI_LINE_EVAL_RUN;
	return 0;
}

void tgi_ledger_line_free(tgi_ledger_line *l)
{
	if (!l)
		return;
	free((char *)l->eval.report);
	free((char *)l->op.args_redacted);
	free((char *)l->op.envelope);
	free(l->ev);
	json_decref(l->root);
	memset(l, 0, sizeof *l);
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

int tgi_ledger_parse(const char *text, size_t len, tgi_ledger_line *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (blank(text, len))
		return 0;   /* TGI_LINE_BLANK */
	if (len > TGI_LEDGER_LINE_MAX) {
		tgi_snprintf(err, errlen, "longer than %u MiB", TGI_LEDGER_LINE_MAX >> 20);
		return -1;
	}
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		char why[sizeof je.text];
		tgi_sanitize(why, sizeof why, je.text);
		tgi_snprintf(err, errlen, "not JSON: %s (column %d)", why, je.column);
		return -1;
	}
	out->root = root;
	int rc;
	if (!json_is_object(root))
		rc = expected(err, errlen, "the line", "a JSON object", root);
	else if (json_object_get(root, "toolgate_ledger"))
		rc = parse_header(root, out, err, errlen);
	else if (json_object_get(root, "claim") && !json_object_get(root, "op_id"))
		rc = parse_claim(json_object_get(root, "claim"), out, err, errlen);
	else if (json_object_get(root, "eval_run") && !json_object_get(root, "op_id"))
		rc = parse_eval_run(json_object_get(root, "eval_run"), out, err, errlen);
	else if (json_object_get(root, "event") && !json_object_get(root, "op_id")) {
		out->ev = tgi_xcalloc(1, sizeof *out->ev);
		rc = parse_event(json_object_get(root, "event"), "event", out->ev, err, errlen);
		out->nev = rc == 0;
		out->kind = TGI_LINE_EVENT;
	} else if (json_object_get(root, "op_id"))
		rc = parse_op(root, out, err, errlen);
	else {
		tgi_snprintf(err, errlen, "neither an export header, an op, an event, a claim nor an "
		             "eval run (no \"toolgate_ledger\", \"op_id\", \"event\", \"claim\" or "
		             "\"eval_run\")");
		rc = -1;
	}
	if (rc < 0)
		tgi_ledger_line_free(out);
	return rc;
}

/* ---- opening the ledger ---- */

int tg_ledger_open(const char *config_path, int flags, tg_ledger **out, char **errmsg)
{
	char err[1024];
	tgi_config *cfg = NULL;
	int missing = 0;

	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (tgi_config_load(config_path, &cfg, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	tg_ledger *l = tgi_xcalloc(1, sizeof *l);
	l->key_env = cfg->key_env ? tgi_strdup(cfg->key_env) : NULL;
	l->key_file = cfg->key_file ? tgi_strdup(cfg->key_file) : NULL;
	l->foreign_ok = (flags & TG_LEDGER_FOREIGN_OK) != 0;
	if (tgi_store_open_for(cfg, (flags & TG_LEDGER_EXISTING ? TGI_STORE_EXISTING
	                                                        : TGI_STORE_STATE_DIR) |
	                            (flags & TG_LEDGER_MIGRATE ? 0 : TGI_STORE_NO_MIGRATE) |
	                            (flags & TG_LEDGER_FOREIGN_OK ? TGI_STORE_FOREIGN_OK : 0),
	                       &l->store, &missing, err, sizeof err) < 0) {
		tgi_config_free(cfg);
		tg_ledger_close(l);
		return tgi_fail(errmsg, "%s", err);
	}
	tgi_ledger_shown_where(cfg->store, l->where, sizeof l->where);
	tgi_config_free(cfg);
	*out = l;
	if (missing)
		tgi_fail(errmsg, "there is no ledger at '%s'", l->where);
	return missing;
}

void tg_ledger_close(tg_ledger *l)
{
	if (!l)
		return;
	tgi_store_close(l->store);
	free(l->key_env);
	free(l->key_file);
	free(l);
}

const char *tg_ledger_foreign(const tg_ledger *l)
{
	return tgi_store_foreign(l->store);
}

int tg_ledger_adopt(tg_ledger *l, tg_ledger_adopted *n, char **errmsg)
{
	char err[1024];
	tgi_ledger_rows rows;
	tgi_key_source key = key_of(l);
	memset(n, 0, sizeof *n);
	if (tgi_store_adopt(l->store, &key, &rows, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	*n = (tg_ledger_adopted){
		.ops = (size_t)rows.ops, .events = (size_t)rows.events,
		.approvals = (size_t)rows.approvals, .claims = (size_t)rows.idem,
		.pins = (size_t)rows.pins, .buckets = (size_t)rows.buckets,
	};
	return 0;
}

const char *tg_ledger_kind(const tg_ledger *l)
{
	return tgi_store_kind(l->store);
}

const char *tg_ledger_where(const tg_ledger *l)
{
	return l->where;
}

/* ---- migrations ---- */

int tg_ledger_version(tg_ledger *l, int *version, char **errmsg)
{
	char err[512];
	if (tgi_store_schema_version(l->store, version, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	return 0;
}

int tg_ledger_latest(void)
{
	return TGI_STORE_SCHEMA_VERSION;
}

const char *tg_ledger_migration_title(int n)
{
	return tgi_store_migration_title(n);
}

struct told {
	void (*fn)(void *arg, int n, const char *title);
	void *arg;
};

static void tell(void *arg, int n)
{
	struct told *t = arg;
	if (t->fn)
		t->fn(t->arg, n, tgi_store_migration_title(n));
}

int tg_ledger_migrate(tg_ledger *l, int to, int dry_run,
                      void (*fn)(void *arg, int n, const char *title), void *arg, char **errmsg)
{
	char err[512];
	struct told t = {fn, arg};
	if (tgi_store_migrate(l->store, to, dry_run, tell, &t, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	/* brought to the newest schema: identified now, as an open would (a
	 * ledger of records from before identities is foreign until adopted) */
	int v = 0;
	tgi_key_source key = key_of(l);
	if (!dry_run && !tgi_store_mask_key(l->store) && !tgi_store_foreign(l->store) &&
	    tgi_store_schema_version(l->store, &v, err, sizeof err) == 0 &&
	    v == TGI_STORE_SCHEMA_VERSION &&
	    tgi_store_identify(l->store, &key, l->foreign_ok ? TGI_STORE_FOREIGN_OK : 0, err,
	                       sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	return 0;
}

/* ---- export ---- */

struct exporter {
	int (*fn)(void *arg, const char *line, size_t len);
	void *arg;
	tg_ledger_counts *c;
	int stopped;      /* fn said stop */
	int unencoded;    /* a row could not be written as JSON */
};

static int emit(struct exporter *x, json_t *v)
{
	/* full precision: a duration read back is the same double */
	char *line = json_dumps(v, JSON_COMPACT);
	if (!line) {
		x->unencoded = 1;
		return 1;
	}
	int rc = x->fn(x->arg, line, strlen(line));
	free(line);
	if (rc)
		x->stopped = 1;
	return rc ? 1 : 0;
}

static int export_row(void *arg, json_t *row)
{
	struct exporter *x = arg;
	if (emit(x, row))
		return 1;
	if (json_object_get(row, "event")) {
		x->c->events++;
	} else if (json_object_get(row, "claim")) {
		x->c->claims++;
	} else {
		x->c->ops++;
		x->c->events += json_array_size(json_object_get(row, "events"));
	}
	return 0;
}

/* The runs of toolgate eval started at or after since_ms, oldest first:
 * 0, 1 when stopped, -1 with err. */
static int export_eval_runs(tg_ledger *l, struct exporter *x, int64_t since_ms, char *err,
                            size_t errlen)
{
	json_t *runs = NULL, *row;
	size_t i;
	int stop = 0;
	if (tgi_store_eval_list(l->store, NULL, 0, &runs, err, errlen) < 0)
		return -1;
	json_array_foreach(runs, i, row) {
		json_t *ts = json_object_get(row, "ts");
		int64_t ms;
		if (parse_time(json_string_value(ts), &ms) < 0) {
			char q[96];
			tgi_snprintf(err, errlen, "eval run %s: its time %s cannot be exported",
			             tgi_json_describe(json_object_get(row, "id"), q, sizeof q),
			             json_string_value(ts) ? json_string_value(ts) : "(none)");
			stop = -1;
			break;
		}
		if (ms < since_ms)
			continue;
		json_t *line = json_pack("{s:O}", "eval_run", row);
		stop = emit(x, line);
		json_decref(line);
		if (stop)
			break;
		x->c->eval_runs++;
	}
	json_decref(runs);
	return stop;
}

int tg_ledger_export(tg_ledger *l, long long since_ms,
                     int (*fn)(void *arg, const char *line, size_t len), void *arg,
                     tg_ledger_counts *counts, char **errmsg)
{
	char err[512], now[32], since[32];
	tg_ledger_counts scratch;
	struct exporter x = {fn, arg, counts ? counts : &scratch, 0, 0};
	int schema;

	memset(x.c, 0, sizeof *x.c);
	if (since_ms < 0)
		since_ms = 0;
	if (tgi_store_schema_version(l->store, &schema, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	tgi_iso8601(tgi_unix_ms(), now);
	tgi_iso8601(since_ms, since);
	json_t *head = json_pack("{s:i, s:i, s:s, s:o, s:s}", "toolgate_ledger", TGI_LEDGER_FORMAT,
	                         "schema", schema, "exported_at", now, "since",
	                         since_ms ? json_string(since) : json_null(), "store",
	                         tgi_store_kind(l->store));
	int stop = emit(&x, head);
	json_decref(head);
	if (!stop)
		stop = tgi_store_export(l->store, since_ms, export_row, &x, err, sizeof err);
	if (!stop)
		stop = export_eval_runs(l, &x, since_ms, err, sizeof err);
	if (stop < 0)
		return tgi_fail(errmsg, "%s", err);
	if (x.unencoded)
		return tgi_fail(errmsg, "cannot encode a row of the ledger as JSON; the export stopped");
	if (stop)
		return tgi_fail(errmsg, "the export stopped before its end (its output could not be "
		                "written)");
	return 0;
}

/* ---- import ---- */

/* Lines of fd, each at most TGI_LEDGER_LINE_MAX bytes. */
struct reader {
	int    fd;
	char  *buf;
	size_t cap, len, start;   /* bytes buf[start..len) are not yet returned */
	int    eof;
};

/* The next line (without its newline) in *line, *n: 1; 0 at the end; -1
 * with err when fd cannot be read, -2 when the line is too long. */
static int next_line(struct reader *r, const char **line, size_t *n, char *err, size_t errlen)
{
	size_t scanned = 0;   /* bytes after start known to hold no newline */
	for (;;) {
		char *nl = !r->buf ? NULL
		         : memchr(r->buf + r->start + scanned, '\n', r->len - r->start - scanned);
		if (nl || (r->eof && r->len > r->start)) {
			*line = r->buf + r->start;
			*n = nl ? (size_t)(nl - *line) : r->len - r->start;
			r->start += *n + (nl != NULL);
			if (*n > TGI_LEDGER_LINE_MAX)
				break;
			return 1;
		}
		if (r->eof)
			return 0;
		scanned = r->len - r->start;
		if (scanned > TGI_LEDGER_LINE_MAX)
			break;
		if (r->start) {   /* keep the unread part at the front */
			memmove(r->buf, r->buf + r->start, scanned);
			r->len = scanned;
			r->start = 0;
		}
		if (r->cap - r->len < TGI_LEDGER_READ) {
			r->cap = r->cap ? r->cap * 2 : 4 * TGI_LEDGER_READ;
			r->buf = tgi_xrealloc(r->buf, r->cap);
		}
		ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			tgi_snprintf(err, errlen, "cannot read the export: %s", strerror(errno));
			return -1;
		}
		if (got == 0)
			r->eof = 1;
		r->len += (size_t)got;
	}
	tgi_snprintf(err, errlen, "longer than %u MiB", TGI_LEDGER_LINE_MAX >> 20);
	return -2;
}

struct importer {
	tgi_store        *s;
	tg_ledger_counts *c;
	int64_t           seq0;      /* the ledger's newest event seq before the import */
	json_t           *present;   /* events of no op it held then: key -> count (NULL: not
	                                read yet) */
	json_t           *eval_ids;  /* ids of the eval runs it holds: id -> true (NULL: not
	                                read yet) */
	int               header;    /* a header was read */
};

/* What tells two events of no op apart: sha256 of [ts_ms, type, stage, data]. */
static void event_key(int64_t ts_ms, const char *type, const char *stage, json_t *data,
                      char out[65])
{
	json_t *k = json_pack("[I, s, o, O]", (json_int_t)ts_ms, type,
	                      stage ? json_string(stage) : json_null(), data ? data : json_null());
	char *text = k ? tgi_json_canonical(k) : NULL;
	tgi_sha256_hex(text ? text : "", text ? strlen(text) : 0, out);
	free(text);
	json_decref(k);
}

static void count_key(json_t *map, const char *key, json_int_t by)
{
	json_int_t n = json_integer_value(json_object_get(map, key)) + by;
	json_object_set_new(map, key, json_integer(n));
}

static int note_present(void *arg, json_t *row)
{
	json_t *ev = json_object_get(row, "event");
	if (!ev)
		return 0;
	char key[65];
	json_t *data = json_object_get(ev, "data");
	event_key((int64_t)json_integer_value(json_object_get(ev, "ts_ms")),
	          json_string_value(json_object_get(ev, "type")),
	          json_string_value(json_object_get(ev, "stage")), json_is_null(data) ? NULL : data,
	          key);
	count_key(arg, key, 1);
	return 0;
}

static int import_event(struct importer *im, tgi_event *ev, char *err, size_t errlen)
{
	if (im->seq0 > 0 && !im->present) {
		im->present = json_object();
		if (tgi_store_export(im->s, 0, note_present, im->present, err, errlen) != 0)
			return -1;
	}
	if (im->present) {
		char key[65];
		event_key(ev->ts_ms, ev->type, ev->stage, ev->data, key);
		if (json_integer_value(json_object_get(im->present, key)) > 0) {
			count_key(im->present, key, -1);
			im->c->skipped_events++;
			return 0;
		}
	}
	if (tgi_store_event(im->s, NULL, ev, err, errlen) < 0)
		return -1;
	im->c->events++;
	return 0;
}

static int import_op(struct importer *im, tgi_ledger_line *ln, char *err, size_t errlen)
{
	const tgi_op_record *op = &ln->op;
	tgi_log_filter one = {.op_id = op->op_id};
	json_t *have = NULL;
	if (tgi_store_ops(im->s, &one, &have, err, errlen) < 0)
		return -1;
	size_t there = json_array_size(have);
	json_decref(have);
	if (there) {
		im->c->skipped_ops++;
		return 0;
	}

	tgi_idem_settle how = TGI_SETTLE_NONE;
	if (ln->idem_state) {
		/* claim the scope with the binding it had, then record the op
		 * settling it: done, or unknown (in flight: its owner is not
		 * here, as good as unknown).  A scope held by another op is left
		 * as it is; one this op holds (an import that failed between the
		 * claim and the record) is settled now.  Should the record fail,
		 * the claim is left in flight under this process, and turns
		 * unknown when it ends: never run again either. */
		tgi_idem_info info;
		if (tgi_store_idem_claim(im->s, op->idem_scope, op->op_id, ln->idem_binding,
		                         TGI_LEDGER_LEASE_S, &info, err, errlen) < 0)
			return -1;
		free(info.envelope);
		if (info.state == TGI_IDEM_CLAIMED || !strcmp(info.op_id, op->op_id))
			how = !strcmp(ln->idem_state, "done") ? TGI_SETTLE_DONE : TGI_SETTLE_UNKNOWN;
	}
	const char *scope = how != TGI_SETTLE_NONE ? op->idem_scope : NULL;
	/* An import is the operator's act, with the key: the done claims of
	 * the export it names are signed here (rowmac.c), as `ops resolve
	 * --applied yes` signs one; approvals and pins are not imported. */
	tgi_op_record signed_op = *op;
	signed_op.idem_binding = ln->idem_binding;
	if (tgi_store_record(im->s, &signed_op, ln->ev, ln->nev, scope, how, err, errlen) < 0)
		return -1;
	im->c->ops++;
	im->c->events += ln->nev;
	return 0;
}

/* A claim whose call left no row (its process died while the tool ran):
 * claimed here under this process, which leaves it in flight until this
 * process ends, and so unknown from then on, as it was where it came from
 * (a short lease: a gate elsewhere need not wait long to see that).  One
 * already there is left as it is. */
static int import_claim(struct importer *im, const tgi_ledger_line *ln, char *err,
                        size_t errlen)
{
	tgi_idem_info info;
	if (tgi_store_idem_claim(im->s, ln->op.idem_scope, ln->op.op_id, ln->idem_binding, 1, &info,
	                         err, errlen) < 0)
		return -1;
	free(info.envelope);
	if (info.state == TGI_IDEM_CLAIMED)
		im->c->claims++;
	else
		im->c->skipped_claims++;
	return 0;
}

/* A run of toolgate eval: kept unless a run of its id is there.  The
 * ledger's ids are listed once, at the first run, and each run kept is
 * added (the same id twice in one export is kept once). */
static int import_eval_run(struct importer *im, const tgi_eval_row *r, char *err,
                           size_t errlen)
{
	if (!im->eval_ids) {
		json_t *runs = NULL, *row;
		size_t i;
		if (tgi_store_eval_list(im->s, NULL, 0, &runs, err, errlen) < 0)
			return -1;
		im->eval_ids = json_object();
		json_array_foreach(runs, i, row) {
			const char *id = json_string_value(json_object_get(row, "id"));
			if (id)
				json_object_set_new(im->eval_ids, id, json_true());
		}
		json_decref(runs);
	}
	if (json_object_get(im->eval_ids, r->id)) {
		im->c->skipped_eval_runs++;
		return 0;
	}
	if (tgi_store_eval_put(im->s, r, err, errlen) < 0)
		return -1;
	json_object_set_new(im->eval_ids, r->id, json_true());
	im->c->eval_runs++;
	return 0;
}

/* Before the first header: is this line blank or a header (right or
 * wrong: the parser says what is wrong with it)? */
static int is_header(const char *text, size_t len)
{
	if (blank(text, len))
		return 1;
	json_t *v = json_loadb(text, len, 0, NULL);
	int yes = json_object_get(v, "toolgate_ledger") != NULL;
	json_decref(v);
	return yes;
}

/* One line: 0, or -1 with err. */
static int import_line(struct importer *im, const char *text, size_t len, char *err,
                       size_t errlen)
{
	tgi_ledger_line ln;
	if (!im->header && !is_header(text, len)) {
		tgi_snprintf(err, errlen, "expected the export's header {\"toolgate_ledger\": %d, ...} "
		             "first; is this the output of toolgate ledger export?", TGI_LEDGER_FORMAT);
		return -1;
	}
	if (tgi_ledger_parse(text, len, &ln, err, errlen) < 0)
		return -1;
	int rc = 0;
	if (ln.kind == TGI_LINE_HEADER) {
		im->header = 1;
	} else if (ln.kind == TGI_LINE_OP) {
		rc = import_op(im, &ln, err, errlen);
	} else if (ln.kind == TGI_LINE_EVENT) {
		rc = import_event(im, ln.ev, err, errlen);
	} else if (ln.kind == TGI_LINE_CLAIM) {
		rc = import_claim(im, &ln, err, errlen);
	} else if (ln.kind == TGI_LINE_EVAL_RUN) {
		rc = import_eval_run(im, &ln.eval, err, errlen);
	}
	tgi_ledger_line_free(&ln);
	return rc;
}

int tg_ledger_import(tg_ledger *l, int fd, tg_ledger_counts *counts, char **errmsg)
{
	char err[1024], why[900];
	tg_ledger_counts scratch;
	struct importer im = {.s = l->store, .c = counts ? counts : &scratch};
	struct reader r = {.fd = fd};
	const char *line;
	size_t n;
	int rc;

	memset(im.c, 0, sizeof *im.c);
	if (errmsg)
		*errmsg = NULL;
	if (tgi_store_last_seq(l->store, &im.seq0, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	while ((rc = next_line(&r, &line, &n, why, sizeof why)) != 0) {
		if (rc == -1)   /* a read error: no line to name */
			break;
		im.c->lines++;
		if (rc == -2 || import_line(&im, line, n, why, sizeof why) < 0) {
			rc = -2;
			break;
		}
	}
	free(r.buf);
	json_decref(im.present);
	json_decref(im.eval_ids);
	if (rc == -1)
		return tgi_fail(errmsg, "%s", why);
	if (rc == -2)
		return tgi_fail(errmsg, "line %zu: %s", im.c->lines, why);
	if (!im.header)
		return tgi_fail(errmsg, "the input holds no export (expected the lines of toolgate "
		                "ledger export, starting with its header)");
	return 0;
}
