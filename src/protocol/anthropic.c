/*
 * anthropic.c — the Anthropic Messages API (protocol.h): tool definitions
 * out, tool_use blocks in (a whole message or its SSE stream), tool_result
 * blocks back.
 *
 * Definitions: [{name, description, input_schema}]; a name must pass
 * tgi_dialect_name_ok("anthropic"), and input_schema is always an object
 * schema: "type":"object" is put first (added when the schema had none).
 *
 * A message: content[] blocks.  Every "tool_use" block {id, name, input}
 * is a call whose args are the compact JSON of input; "text" blocks are the
 * text; the rest (thinking, server_tool_use, ...) are not ours to run.
 * stop_reason is informational: tool_use blocks under "end_turn" count.
 *
 * A stream: message_start, then per block content_block_start /
 * content_block_delta... / content_block_stop (each with the block's
 * index, which is its place in content[]), message_delta (stop_reason),
 * message_stop; `ping` anywhere; `error` ends it.  A tool_use block's
 * input is the concatenation of its input_json_delta.partial_json pieces,
 * parsed at content_block_stop ("" is {}), then written compact like a
 * whole message's, so both forms of one reply decode to the same calls.
 * (message_start's content is empty by the API's contract and not read.)
 * State per block index:
 *
 *   (none) --content_block_start--> open --content_block_stop--> closed
 *                                   open <--content_block_delta--
 *
 * What makes a call invalid (it keeps its place and gets a result):
 *   - arguments that are not a JSON object;
 *   - a tool_use block with no id, no name or (whole message) no input object;
 *   - a block still open when the stream ends or fails: "the stream ended
 *     inside this call"; any call of a stream that never reached
 *     message_stop, or that sent an `error` event;
 *   - stop_reason "max_tokens" with a tool_use block last: the model was cut
 *     off inside that call, whatever its JSON looks like;
 *   - an id an earlier call of the reply already used.
 * What makes the whole reply an error (-1): not JSON (a duplicate key
 * anywhere included: ambiguous input is not guessed at), not a message, an
 * `error` response, events out of order or naming blocks that do not
 * exist, and a truncated stream with no call to hold the error.
 *
 * Results: one {"role":"user","content":[tool_result...]} message, one
 * block per call in call order, "is_error": true only on errors.
 *
 * Owns: the Anthropic wire shapes.  Must not: run or judge calls (dispatch
 * and the gate do), or trust stop_reason to find calls.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "util/sse.h"
#include "util/util.h"

#define ANTHROPIC_MAX  TGI_SSE_MAX  /* bytes of one reply, either form */
#define ARGS_MAX       (16u << 20)  /* bytes of one call's streamed arguments */
#define SHOWN          96           /* bytes of an outside string echoed in a message */

/* ---- calls ---- */

/* Make c invalid with a sentence; replace an earlier one only when told. */
static void __attribute__((format(printf, 3, 4)))
call_fail(tgi_pcall *c, int replace, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	if (c->error && !replace)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	free(c->error);
	free(c->args);
	c->error = tgi_strdup(msg);
	c->args = NULL;
	c->args_len = 0;
}

/* The args of c: input (a JSON object), compact. */
static void call_args(tgi_pcall *c, const json_t *input)
{
	char *s = json_dumps(input, JSON_COMPACT);
	if (!s) {
		call_fail(c, 0, "the arguments could not be written out as JSON");
		return;
	}
	free(c->args);
	c->args = s;
	c->args_len = strlen(s);
}

/* The args of c from streamed text: "" is {}, anything else must be a
 * JSON object (duplicate keys refused). */
static void call_args_text(tgi_pcall *c, const char *text, size_t len)
{
	json_error_t je;
	char shown[160];
	if (len == 0) {
		json_t *empty = json_object();
		call_args(c, empty);
		json_decref(empty);
		return;
	}
	json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		tgi_sanitize(shown, sizeof shown, je.text);
		call_fail(c, 0, "arguments are not valid JSON at byte %d: %s", je.position, shown);
	} else if (!json_is_object(v)) {
		call_fail(c, 0, "arguments are not a JSON object");
	} else {
		call_args(c, v);
	}
	json_decref(v);
}

/* A call for a tool_use block (whole or as content_block_start gives it):
 * its id and name, or an error saying which is missing. */
static tgi_pcall *call_open(tgi_pcalls *out, const json_t *block)
{
	const char *id = json_string_value(json_object_get(block, "id"));
	const char *name = json_string_value(json_object_get(block, "name"));
	tgi_pcall *c = tgi_pcalls_push(out);
	c->id = tgi_strdup(id ? id : "");
	c->name = tgi_strdup(name ? name : "");
	if (!id || !*id)
		call_fail(c, 0, "the tool_use block has no \"id\"");
	else if (!name || !*name)
		call_fail(c, 0, "the tool_use block has no \"name\"");
	return c;
}

/*
 * What holds for both forms once every block is read.  A reply that
 * stopped at max_tokens with a tool_use block last was cut inside that
 * call; the error replaces a JSON one (the cut is the cause).  An id seen
 * before is refused: its result could not be told from the first's.
 */
static void finish(tgi_pcalls *out, int last_is_call, const char *form)
{
	if (last_is_call && out->n && out->stop && !strcmp(out->stop, "max_tokens"))
		call_fail(&out->v[out->n - 1], 1, "the %s ended inside this call (max_tokens)", form);

	json_t *seen = json_object();
	for (size_t i = 0; i < out->n; i++) {
		tgi_pcall *c = &out->v[i];
		char shown[SHOWN];
		if (!*c->id)
			continue;
		if (json_object_get(seen, c->id)) {
			tgi_sanitize(shown, sizeof shown, c->id);
			call_fail(c, 0, "the call id \"%s\" repeats an earlier call's id", shown);
		} else {
			json_object_set_new(seen, c->id, json_true());
		}
	}
	json_decref(seen);
}

/* Empty out after a refusal, so that tgi_pcalls_free stays safe on it. */
static int refuse(tgi_pcalls *out, tgi_buf *text)
{
	tgi_buf_free(text);
	tgi_pcalls_free(out);
	memset(out, 0, sizeof *out);
	return -1;
}

/* "type: message" of an error object, for a sentence. */
static void error_summary(char *out, size_t cap, const json_t *error)
{
	char type[SHOWN], msg[256];
	tgi_sanitize(type, sizeof type, json_string_value(json_object_get(error, "type")));
	tgi_sanitize(msg, sizeof msg, json_string_value(json_object_get(error, "message")));
	tgi_snprintf(out, cap, "%s: %s", *type ? type : "error", *msg ? msg : "no message");
}

/* ---- a whole message ---- */

static int decode(const char *text, size_t len, tgi_pcalls *out, char *err, size_t errlen)
{
	json_error_t je;
	char shown[256];
	tgi_buf said;
	memset(out, 0, sizeof *out);
	tgi_buf_init(&said, ANTHROPIC_MAX);
	if (len > ANTHROPIC_MAX) {
		tgi_snprintf(err, errlen, "the response is over %u bytes", ANTHROPIC_MAX);
		return refuse(out, &said);
	}
	json_t *r = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!r) {
		tgi_sanitize(shown, sizeof shown, je.text);
		tgi_snprintf(err, errlen, "the response is not valid JSON at byte %d: %s", je.position,
		             shown);
		return refuse(out, &said);
	}
	const char *type = json_string_value(json_object_get(r, "type"));
	const json_t *content = json_object_get(r, "content");
	if (type && !strcmp(type, "error")) {
		error_summary(shown, sizeof shown, json_object_get(r, "error"));
		tgi_snprintf(err, errlen, "the response is an error: %s", shown);
		goto fail;
	}
	if ((type && strcmp(type, "message")) || !json_is_array(content)) {
		tgi_snprintf(err, errlen, "the response is not an anthropic message "
		             "(no \"type\":\"message\" with a \"content\" array)");
		goto fail;
	}
	const char *stop = json_string_value(json_object_get(r, "stop_reason"));
	out->stop = stop ? tgi_strdup(stop) : NULL;

	size_t i, n = json_array_size(content);
	int last_is_call = 0;
	for (i = 0; i < n; i++) {
		const json_t *b = json_array_get(content, i);
		const char *btype = json_string_value(json_object_get(b, "type"));
		if (!btype) {
			tgi_snprintf(err, errlen, "content[%zu] is not a content block (no \"type\")", i);
			goto fail;
		}
		last_is_call = !strcmp(btype, "tool_use");
		if (last_is_call) {
			tgi_pcall *c = call_open(out, b);
			const json_t *input = json_object_get(b, "input");
			if (!json_is_object(input))
				call_fail(c, 0, "the call's input is not a JSON object");
			else if (!c->error)
				call_args(c, input);
		} else if (!strcmp(btype, "text")) {
			const char *t = json_string_value(json_object_get(b, "text"));
			if (t && tgi_buf_puts(&said, t) < 0) {
				tgi_snprintf(err, errlen, "the response's text is over %u bytes", ANTHROPIC_MAX);
				goto fail;
			}
		}
	}
	finish(out, last_is_call, "response");
	out->text = tgi_buf_steal(&said);
	json_decref(r);
	return 0;
fail:
	json_decref(r);
	return refuse(out, &said);
}

/* ---- a stream ---- */

enum { BLOCK_TEXT, BLOCK_CALL, BLOCK_OTHER };

typedef struct sblock {
	int     kind;
	int     open;
	size_t  call;   /* BLOCK_CALL: its index in out->v */
	tgi_buf json;   /* BLOCK_CALL: partial_json so far */
	json_t *input;  /* BLOCK_CALL: a non-empty input in content_block_start, or NULL */
} sblock;

/* The callback's stops (tgi_sse_parse returns them). */
enum { GO_ON = 0, STOP_FAILED = 1, STOP_BAD = 2 };

typedef struct sstate {
	tgi_pcalls *out;
	sblock     *b;        /* by index: block i has index i */
	size_t      nb, cap;
	tgi_buf     text;
	int         started, stopped, failed;
	char        failure[320];   /* the error event, "type: message" */
	/* an event whose data was not a JSON object: refused unless it was the
	 * last one and the stream was cut inside it */
	int         bad;
	char        bad_msg[320];
	char       *err;
	size_t      errlen;
} sstate;

static int __attribute__((format(printf, 4, 5)))
violation(sstate *st, const tgi_sse_event *ev, const char *type, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tgi_snprintf(st->err, st->errlen, "event \"%s\" at line %zu: %s", type, ev->line, what);
	return STOP_BAD;
}

/* The block an event names by "index", or NULL after a violation. */
static sblock *event_block(sstate *st, const tgi_sse_event *ev, const char *type, const json_t *d)
{
	const json_t *ix = json_object_get(d, "index");
	if (!json_is_integer(ix) || json_integer_value(ix) < 0) {
		violation(st, ev, type, "no block \"index\"");
		return NULL;
	}
	json_int_t i = json_integer_value(ix);
	if ((unsigned long long)i >= st->nb || !st->b[i].open) {
		violation(st, ev, type, "block %lld is not open", (long long)i);
		return NULL;
	}
	return &st->b[i];
}

static int on_block_start(sstate *st, const tgi_sse_event *ev, const char *type, const json_t *d)
{
	const json_t *ix = json_object_get(d, "index");
	const json_t *cb = json_object_get(d, "content_block");
	const char *btype = json_string_value(json_object_get(cb, "type"));
	/* blocks arrive in content[] order: block i has index i */
	if (!json_is_integer(ix) || json_integer_value(ix) < 0 ||
	    (unsigned long long)json_integer_value(ix) != st->nb)
		return violation(st, ev, type, "the block index is not %zu", st->nb);
	if (!btype)
		return violation(st, ev, type, "no \"content_block\" with a \"type\"");
	if (st->nb == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 8;
		st->b = tgi_xrealloc(st->b, st->cap * sizeof *st->b);
	}
	sblock *b = &st->b[st->nb++];
	memset(b, 0, sizeof *b);
	b->open = 1;
	b->kind = BLOCK_OTHER;
	tgi_buf_init(&b->json, ARGS_MAX);
	if (!strcmp(btype, "tool_use")) {
		const json_t *input = json_object_get(cb, "input");
		tgi_pcall *c = call_open(st->out, cb);
		b->kind = BLOCK_CALL;
		b->call = st->out->n - 1;
		if (input && !json_is_object(input))
			call_fail(c, 0, "the call's input is not a JSON object");
		else if (json_object_size(input))
			b->input = json_incref((json_t *)input);
	} else if (!strcmp(btype, "text")) {
		const char *t = json_string_value(json_object_get(cb, "text"));
		b->kind = BLOCK_TEXT;
		if (t && tgi_buf_puts(&st->text, t) < 0)
			return violation(st, ev, type, "the text is over %u bytes", ANTHROPIC_MAX);
	}
	return GO_ON;
}

static int on_block_delta(sstate *st, const tgi_sse_event *ev, const char *type, const json_t *d)
{
	sblock *b = event_block(st, ev, type, d);
	if (!b)
		return STOP_BAD;
	const json_t *delta = json_object_get(d, "delta");
	const char *dtype = json_string_value(json_object_get(delta, "type"));
	if (!dtype)
		return violation(st, ev, type, "no \"delta\" with a \"type\"");
	if (b->kind == BLOCK_CALL && !strcmp(dtype, "input_json_delta")) {
		const json_t *pj = json_object_get(delta, "partial_json");
		tgi_pcall *c = &st->out->v[b->call];
		if (pj && !json_is_string(pj))
			return violation(st, ev, type, "\"partial_json\" is not a string");
		if (tgi_buf_append(&b->json, json_string_value(pj), json_string_length(pj)) < 0)
			call_fail(c, 0, "the arguments are over %u bytes", ARGS_MAX);
	} else if (b->kind == BLOCK_TEXT && !strcmp(dtype, "text_delta")) {
		const json_t *t = json_object_get(delta, "text");
		if (!json_is_string(t))
			return violation(st, ev, type, "\"text\" is not a string");
		if (tgi_buf_append(&st->text, json_string_value(t), json_string_length(t)) < 0)
			return violation(st, ev, type, "the text is over %u bytes", ANTHROPIC_MAX);
	}
	/* thinking, signature, citations and deltas of server tools: not ours */
	return GO_ON;
}

static int on_block_stop(sstate *st, const tgi_sse_event *ev, const char *type, const json_t *d)
{
	sblock *b = event_block(st, ev, type, d);
	if (!b)
		return STOP_BAD;
	b->open = 0;
	if (b->kind == BLOCK_CALL) {
		tgi_pcall *c = &st->out->v[b->call];
		if (c->error)
			;
		else if (b->json.len || !b->input)
			call_args_text(c, b->json.p, b->json.len);
		else
			call_args(c, b->input);
	}
	tgi_buf_free(&b->json);
	return GO_ON;
}

static void set_stop(sstate *st, const json_t *holder)
{
	const char *stop = json_string_value(json_object_get(holder, "stop_reason"));
	if (stop) {
		free(st->out->stop);
		st->out->stop = tgi_strdup(stop);
	}
}

static int on_event(const tgi_sse_event *ev, void *arg)
{
	sstate *st = arg;
	json_error_t je;
	char shown[SHOWN], named[SHOWN];
	if (st->bad) { /* a bad event that was not the last one */
		tgi_snprintf(st->err, st->errlen, "%s", st->bad_msg);
		return STOP_BAD;
	}
	json_t *d = json_loadb(ev->data, ev->data_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(d)) {
		tgi_sanitize(shown, sizeof shown, d ? "not an object" : je.text);
		tgi_snprintf(st->bad_msg, sizeof st->bad_msg,
		             "the event at line %zu is not a JSON object: %s", ev->line, shown);
		st->bad = 1;
		json_decref(d);
		return GO_ON;
	}
	const char *type = json_string_value(json_object_get(d, "type"));
	int rc = GO_ON;
	tgi_sanitize(shown, sizeof shown, type);
	tgi_sanitize(named, sizeof named, ev->event);
	if (!type) {
		tgi_snprintf(st->err, st->errlen, "the event at line %zu has no \"type\" in its data",
		             ev->line);
		rc = STOP_BAD;
	} else if (*ev->event && strcmp(ev->event, type))
		rc = violation(st, ev, named, "the data has type \"%s\"", shown);
	else if (!strcmp(type, "ping"))
		rc = GO_ON;
	else if (!strcmp(type, "error")) {
		st->failed = 1;
		error_summary(st->failure, sizeof st->failure, json_object_get(d, "error"));
		rc = STOP_FAILED;
	} else if (st->stopped)
		rc = violation(st, ev, shown, "it comes after message_stop");
	else if (!st->started && strcmp(type, "message_start"))
		rc = violation(st, ev, shown, "it comes before message_start");
	else if (!strcmp(type, "message_start")) {
		if (st->started)
			rc = violation(st, ev, shown, "a second message_start");
		st->started = 1;
		set_stop(st, json_object_get(d, "message"));
	} else if (!strcmp(type, "content_block_start"))
		rc = on_block_start(st, ev, type, d);
	else if (!strcmp(type, "content_block_delta"))
		rc = on_block_delta(st, ev, type, d);
	else if (!strcmp(type, "content_block_stop"))
		rc = on_block_stop(st, ev, type, d);
	else if (!strcmp(type, "message_delta"))
		set_stop(st, json_object_get(d, "delta"));
	else if (!strcmp(type, "message_stop"))
		st->stopped = 1;
	/* other event types may be added to the API: skipped */
	json_decref(d);
	return rc;
}

static void stream_free(sstate *st)
{
	for (size_t i = 0; i < st->nb; i++) {
		tgi_buf_free(&st->b[i].json);
		json_decref(st->b[i].input);
	}
	free(st->b);
}

static int decode_stream(const char *text, size_t len, tgi_pcalls *out, char *err,
                         size_t errlen)
{
	sstate st = {.out = out, .err = err, .errlen = errlen};
	int truncated = 0;
	memset(out, 0, sizeof *out);
	tgi_buf_init(&st.text, ANTHROPIC_MAX);
	int rc = tgi_sse_parse(text, len, on_event, &st, &truncated, err, errlen);
	if (rc == -1 || rc == STOP_BAD)
		goto fail;
	/* data that is not a JSON object is refused, unless the stream was cut
	 * inside that (last) event: then the stream simply ended there */
	if (st.bad && !truncated) {
		tgi_snprintf(err, errlen, "%s", st.bad_msg);
		goto fail;
	}
	if (!st.started && !st.failed) {
		tgi_snprintf(err, errlen, "the stream is not an anthropic message stream "
		             "(no message_start event)");
		goto fail;
	}

	int complete = st.stopped && !st.failed;
	for (size_t i = 0; i < st.nb; i++) {
		const sblock *b = &st.b[i];
		tgi_pcall *c = b->kind == BLOCK_CALL ? &out->v[b->call] : NULL;
		if (!c)
			continue;
		if (b->open && st.failed)
			call_fail(c, 0, "the stream failed inside this call (%s)", st.failure);
		else if (b->open)
			call_fail(c, 0, "the stream ended inside this call");
		else if (st.failed)
			call_fail(c, 0, "the stream failed before message_stop (%s); the call was not run",
			          st.failure);
		else if (!complete)
			call_fail(c, 0, "the stream ended before message_stop; the call was not run");
	}
	if (!complete && !out->n) {
		if (st.failed)
			tgi_snprintf(err, errlen, "the stream reported an error: %s", st.failure);
		else
			tgi_snprintf(err, errlen, "the stream ended before message_stop");
		goto fail;
	}
	finish(out, st.nb && st.b[st.nb - 1].kind == BLOCK_CALL, "stream");
	out->text = tgi_buf_steal(&st.text);
	stream_free(&st);
	return 0;
fail:
	stream_free(&st);
	return refuse(out, &st.text);
}

/* ---- definitions ---- */

/* A JSON Schema "type" that admits objects. */
static int admits_object(const json_t *type)
{
	size_t i;
	const json_t *t;
	if (json_is_string(type))
		return !strcmp(json_string_value(type), "object");
	json_array_foreach(type, i, t)
		if (json_is_string(t) && !strcmp(json_string_value(t), "object"))
			return 1;
	return 0;
}

/* input_schema as Anthropic takes it: an object schema, "type":"object"
 * first.  New reference, or NULL with a sentence. */
static json_t *object_schema(const char *name, const json_t *s, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	if (!s || json_is_true(s))
		return json_pack("{s:s}", "type", "object");
	const json_t *type = json_object_get(s, "type");
	if (!json_is_object(s) || (type && !admits_object(type))) {
		tgi_snprintf(err, errlen, "tool \"%s\": anthropic takes only an object schema "
		             "(\"type\":\"object\") as input_schema", name);
		return NULL;
	}
	json_t *o = json_pack("{s:s}", "type", "object");
	json_object_foreach((json_t *)s, key, v)
		if (strcmp(key, "type"))
			json_object_set_new(o, key, json_deep_copy(v));
	return o;
}

static json_t *tools(const json_t *defs, unsigned flags, char *err, size_t errlen)
{
	size_t i;
	const json_t *d;
	if (!json_is_array(defs)) {
		tgi_snprintf(err, errlen, "the tool definitions are not a JSON array");
		return NULL;
	}
	json_t *arr = json_array();
	json_array_foreach(defs, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *desc = json_object_get(d, "description");
		if (!name) {
			tgi_snprintf(err, errlen, "tool definition %zu has no \"name\"", i);
			goto fail;
		}
		if (tgi_dialect_name_ok("anthropic", name, err, errlen) < 0)
			goto fail;
		json_t *schema = object_schema(name, json_object_get(d, "input_schema"), err, errlen);
		if (!schema)
			goto fail;
		json_t *t = json_pack("{s:s}", "name", name);
		if (json_is_string(desc))
			json_object_set(t, "description", (json_t *)desc);
		json_object_set_new(t, "input_schema", schema);
		json_array_append_new(arr, t);
	}
	return arr;
fail:
	json_decref(arr);
	return NULL;
}

/* ---- results ---- */

static json_t *results(const tgi_pcalls *calls, const tgi_presult *res)
{
	json_t *msgs = json_array();
	if (!calls->n)
		return msgs;
	json_t *blocks = json_array();
	for (size_t i = 0; i < calls->n; i++) {
		const char *id = calls->v[i].id ? calls->v[i].id : "";
		const char *text = res[i].text ? res[i].text : "";
		json_t *b = json_pack("{s:s, s:o, s:o}", "type", "tool_result",
		                      "tool_use_id", tgi_json_text(id, strlen(id)),
		                      "content", tgi_json_text(text, strlen(text)));
		if (res[i].is_error)
			json_object_set_new(b, "is_error", json_true());
		json_array_append_new(blocks, b);
	}
	json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", blocks));
	return msgs;
}

const tgi_protocol tgi_protocol_anthropic = {
	.name = "anthropic",
	.tools = tools,
	.decode = decode,
	.decode_stream = decode_stream,
	.results = results,
};
