/*
 * openai_responses.c — the OpenAI Responses API (protocol.h):
 *
 *   out  tools:   [{"type":"function", name, description, parameters, strict}]
 *                 parameters strict-translated (strict:true) when the schema
 *                 can be made strict, else as given with strict:false (the
 *                 API's default is true, so false is always written out)
 *   in   JSON:    output[] items "function_call" {id, call_id, name,
 *                 arguments: JSON text} and "custom_tool_call" {id, call_id,
 *                 name, input: free text}; text from "message" items'
 *                 "output_text" parts; reasoning and other items ignored;
 *                 stop the status, or why it is incomplete (max_output_tokens)
 *   in   SSE:     the same items, built from the stream's events (below)
 *   back results: {"type":"function_call_output", call_id, output} items,
 *                 {"type":"custom_tool_call_output", ...} for custom calls
 *
 * The stream.  Every event's data is a JSON object whose "type" names it;
 * items are announced by response.output_item.added (carrying item id,
 * call_id and name) and then referred to by item_id (or, lacking one, by
 * output_index):
 *
 *   output_item.added ──► OPEN ──(function_call_arguments.delta |
 *                          │      custom_tool_call_input.delta)──► OPEN
 *                          │
 *                          └─(function_call_arguments.done | custom_tool_call_
 *                             input.done | output_item.done)──► DONE
 *
 * response.completed, response.incomplete, response.failed and error end
 * the stream, and nothing after them is read; the final response they
 * carry finishes calls still OPEN whose item it shows completed, and adds
 * call items the stream never announced.  A call still OPEN at the end is
 * invalid, with what came of its input and the reason: the stream stopped
 * before any terminal event ("the stream ended inside this call"), or the
 * response stopped (max_output_tokens) or failed.  A call that reached
 * DONE keeps its arguments whatever happens after it.  Calls come out in
 * the order they were announced; text is the output_text deltas, or the
 * final response's message text when there were none.
 *
 * Refused as a whole (-1): input that is not this API's (no "output"
 * array; a stream without a single response.* or error event), an API
 * error object, a failed response with no call in it (nothing to answer,
 * and the caller must see why), an event that is not JSON with more events
 * after it (the last one may be: that is where a stream was cut), a delta
 * or done event for an item no event announced, an item announced twice.
 * A malformed event that names its call spoils that call only.
 *
 * Owns: this API's wire shapes.  Must not: run, validate (beyond "is it
 * JSON") or decide anything about a call.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "util/sse.h"
#include "util/util.h"

#define API      "openai-responses"
#define RESP_MAX TGI_SSE_MAX /* bytes of one response, JSON or stream; also caps
                                each call's arguments and the text */
#define SHOWN    96          /* bytes of an outside string echoed in a message */
#define REASON   (2 * SHOWN) /* how a response ended: "code: message" */

static const char *str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

enum kind { NOT_A_CALL, FUNCTION_CALL, CUSTOM_CALL };

static enum kind item_kind(const json_t *item)
{
	const char *t = str_or(json_object_get(item, "type"), "");
	return !strcmp(t, "function_call") ? FUNCTION_CALL
	       : !strcmp(t, "custom_tool_call") ? CUSTOM_CALL : NOT_A_CALL;
}

/* The item field holding a call's input: JSON text, or free text. */
static const char *input_field(enum kind k)
{
	return k == CUSTOM_CALL ? "input" : "arguments";
}

/* An item the API marks as not finished ("in_progress", "incomplete"). */
static int item_unfinished(const json_t *item)
{
	const char *st = str_or(json_object_get(item, "status"), "");
	return !strcmp(st, "in_progress") || !strcmp(st, "incomplete");
}

/* ---- calls ------------------------------------------------------------- */

/* Set c's error unless it has one: the first thing found wrong is kept. */
static void call_error(tgi_pcall *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void call_error(tgi_pcall *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	if (c->error)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	c->error = tgi_strdup(msg);
}

/* Room for one more in p, an array of n elements of sz bytes: doubled
 * when n reaches a power of two, so n pushes cost O(n). */
static void *grow(void *p, size_t n, size_t sz)
{
	if (n & (n - 1))
		return p;
	return tgi_xrealloc(p, (n ? 2 * n : 1) * sz);
}

/* A call as an item announces it (arguments not yet taken). */
static tgi_pcall *call_begin(tgi_pcalls *out, const json_t *item)
{
	tgi_pcall *c = tgi_pcalls_push(out);
	const char *id = json_string_value(json_object_get(item, "call_id"));
	const char *name = json_string_value(json_object_get(item, "name"));
	c->raw = item_kind(item) == CUSTOM_CALL;
	c->id = tgi_strdup(id);
	c->name = tgi_strdup(name);
	if (!id)
		call_error(c, "the call has no \"call_id\"");
	if (!name)
		call_error(c, "the call has no tool name");
	return c;
}

/* Give c its input (n bytes of s, copied).  Empty JSON arguments are
 * "{}"; arguments that are not JSON make the call invalid.  A call already
 * invalid keeps its input as it came, for the record. */
static void call_finish(tgi_pcall *c, const char *s, size_t n)
{
	if (!c->raw && !c->error && n == 0) {
		s = "{}";
		n = 2;
	}
	free(c->args);
	c->args = tgi_strndup(s, n);
	c->args_len = n;
	if (c->raw || c->error)
		return;
	json_error_t je;
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (v) {
		json_decref(v);
		return;
	}
	char why[sizeof je.text];
	tgi_sanitize(why, sizeof why, je.text);
	call_error(c, "arguments are not valid JSON at byte %d: %s", je.position, why);
}

/* Finish c from an item that carries its whole input. */
static void call_finish_item(tgi_pcall *c, const json_t *item)
{
	const json_t *in = json_object_get(item, input_field(item_kind(item)));
	if (!json_is_string(in)) {
		call_error(c, "the call has no \"%s\" string", input_field(item_kind(item)));
		return;
	}
	call_finish(c, json_string_value(in), json_string_length(in));
}

/* Why a call cut short is invalid: the stream stopped (status NULL), or
 * the response ended with status and reason ("" when none). */
static void call_unfinished(tgi_pcall *c, const char *status, const char *reason)
{
	if (!status)
		call_error(c, "the stream ended inside this call");
	else if (!strcmp(status, "failed"))
		call_error(c, "the response failed (%s) before this call was complete",
		           *reason ? reason : "no reason given");
	else if (*reason || strcmp(status, "completed"))
		call_error(c, "the response stopped (%s) before this call was complete",
		           *reason ? reason : status);
	else
		call_error(c, "the response ended before this call was complete");
}

/* ---- the response object ----------------------------------------------- */

/* Append a message item's output_text parts to text. */
static int message_text(tgi_buf *text, const json_t *item)
{
	size_t i;
	const json_t *part;
	if (strcmp(str_or(json_object_get(item, "type"), ""), "message"))
		return 0;
	json_array_foreach(json_object_get(item, "content"), i, part) {
		const json_t *s = json_object_get(part, "text");
		if (strcmp(str_or(json_object_get(part, "type"), ""), "output_text") ||
		    !json_is_string(s))
			continue;
		if (tgi_buf_append(text, json_string_value(s), json_string_length(s)) < 0)
			return -1;
	}
	return 0;
}

/* How a response ended: its status ("completed", "incomplete", "failed",
 * ...; NULL when it has none), sanitized into status[SHOWN + 1] since it is
 * the wire's text and goes into messages, and the reason,
 * incomplete_details.reason or the error's code and message, sanitized into
 * reason[REASON] ("" if none). */
static const char *response_end(const json_t *resp, char status[SHOWN + 1], char reason[REASON])
{
	const json_t *inc = json_object_get(json_object_get(resp, "incomplete_details"), "reason");
	const json_t *e = json_object_get(resp, "error");
	char code[SHOWN / 2], msg[SHOWN];
	reason[0] = '\0';
	if (json_is_string(inc)) {
		tgi_sanitize(reason, REASON, json_string_value(inc));
	} else if (json_is_object(e)) {
		tgi_sanitize(code, sizeof code, str_or(json_object_get(e, "code"), "error"));
		tgi_sanitize(msg, sizeof msg, str_or(json_object_get(e, "message"), ""));
		tgi_snprintf(reason, REASON, "%s: %s", code, msg);
	}
	const char *st = json_string_value(json_object_get(resp, "status"));
	if (!st)
		return NULL;
	tgi_sanitize(status, SHOWN + 1, st);
	return status;
}

/* What pcalls.stop says: the reason of an incomplete response
 * ("max_output_tokens"), else the status.  Caller frees. */
static char *stop_of(const char *status, const char *reason)
{
	return tgi_strdup(status && !strcmp(status, "incomplete") && *reason ? reason : status);
}

/* A failed response without a single call is an error as a whole: there
 * is nothing to answer, and the caller must see why. */
static int failed_empty(const tgi_pcalls *out, const char *status, const char *reason,
                        char *err, size_t errlen)
{
	if (out->n || !status || strcmp(status, "failed"))
		return 0;
	tgi_snprintf(err, errlen, "the response failed: %s", *reason ? reason : "no reason given");
	return -1;
}

static int decode_response(const json_t *resp, tgi_pcalls *out, tgi_buf *text, char *err,
                           size_t errlen)
{
	const json_t *output = json_object_get(resp, "output");
	const json_t *e = json_object_get(resp, "error");
	char reason[REASON], shown[SHOWN + 1];
	size_t i;
	const json_t *item;
	if (!json_is_array(output)) {
		char msg[SHOWN + 1] = "";
		tgi_sanitize(msg, sizeof msg, str_or(json_object_get(e, "message"), ""));
		if (json_is_object(e))
			tgi_snprintf(err, errlen, "the response is an API error: \"%s\"", msg);
		else
			tgi_snprintf(err, errlen, "not an OpenAI Responses response: it has no "
			             "\"output\" array");
		return -1;
	}
	const char *status = response_end(resp, shown, reason);
	json_array_foreach(output, i, item) {
		if (item_kind(item) == NOT_A_CALL) {
			if (message_text(text, item) < 0) {
				tgi_snprintf(err, errlen, "the response's text is over %u bytes", RESP_MAX);
				return -1;
			}
			continue;
		}
		tgi_pcall *c = call_begin(out, item);
		if (item_unfinished(item))
			call_unfinished(c, status ? status : "incomplete", reason);
		call_finish_item(c, item);
	}
	if (failed_empty(out, status, reason, err, errlen) < 0)
		return -1;
	out->stop = stop_of(status, reason);
	return 0;
}

static void fail_clear(tgi_pcalls *out)
{
	tgi_pcalls_free(out);
	memset(out, 0, sizeof *out);
}

static int resp_decode(const char *text, size_t len, tgi_pcalls *out, char *err, size_t errlen)
{
	tgi_buf tb;
	json_error_t je;
	memset(out, 0, sizeof *out);
	if (len > RESP_MAX) {
		tgi_snprintf(err, errlen, "the response is %zu bytes, over the limit of %u", len,
		             RESP_MAX);
		return -1;
	}
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root) {
		char why[sizeof je.text];
		tgi_sanitize(why, sizeof why, je.text);
		tgi_snprintf(err, errlen, "the response is not JSON (at byte %d: %s)", je.position, why);
		return -1;
	}
	if (!json_is_object(root)) {
		tgi_snprintf(err, errlen, "not an OpenAI Responses response: it is not a JSON object");
		json_decref(root);
		return -1;
	}
	tgi_buf_init(&tb, RESP_MAX);
	int rc = decode_response(root, out, &tb, err, errlen);
	json_decref(root);
	if (rc < 0) {
		tgi_buf_free(&tb);
		fail_clear(out);
		return -1;
	}
	out->text = tgi_buf_steal(&tb);
	return 0;
}

/* ---- the stream -------------------------------------------------------- */

/* What the stream knows of each call beside out->v[i]. */
typedef struct slot {
	tgi_buf input;  /* the input so far */
	int     open;   /* announced, input not finished */
} slot;

typedef struct stream {
	tgi_pcalls *out;
	slot       *slots;     /* parallel to out->v */
	json_t     *by_id;     /* item id → index into out->v */
	json_t     *by_index;  /* output_index (decimal) → index into out->v */
	tgi_buf     text;
	int         text_seen; /* an output_text delta came: the final response's
	                          text is not taken again */
	int         events;    /* events of this API seen */
	int         ended;     /* a terminal event came */
	char       *status;    /* the terminal event's response status */
	char        reason[REASON];
	size_t      bad_line;  /* an event whose data was not JSON: only the last may be */
	char        bad[200];
	char       *err;
	size_t      errlen;
} stream;

enum { GO_ON = 0, STOP_END = 1, STOP_FAIL = 2 };

static int stream_fail(stream *s, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int stream_fail(stream *s, size_t line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_snprintf(s->err, s->errlen, "line %zu: %s", line, msg);
	return STOP_FAIL;
}

/* An output_index as a map key; -1 when v is not one. */
static int index_key(char out[32], const json_t *v)
{
	if (!json_is_integer(v))
		return -1;
	tgi_snprintf(out, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	return 0;
}

/* The call an item id (else an output_index) names: its index, or -1. */
static long find_call(const stream *s, const json_t *id, const json_t *index)
{
	char k[32];
	const json_t *v = json_is_string(id)
	                  ? json_object_getn(s->by_id, json_string_value(id), json_string_length(id))
	                  : index_key(k, index) == 0 ? json_object_get(s->by_index, k) : NULL;
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

/* A new call from item, found from now on by its id and its output_index:
 * open (its input to come, starting with what the item holds) or finished
 * from the item. */
static void stream_add(stream *s, const json_t *item, const json_t *index, int open)
{
	const json_t *id = json_object_get(item, "id");
	const json_t *in = json_object_get(item, input_field(item_kind(item)));
	char k[32];
	s->slots = grow(s->slots, s->out->n, sizeof *s->slots);
	tgi_pcall *c = call_begin(s->out, item);
	size_t i = s->out->n - 1;
	tgi_buf_init(&s->slots[i].input, RESP_MAX);
	s->slots[i].open = open;
	if (json_is_string(id))
		json_object_setn_new_nocheck(s->by_id, json_string_value(id), json_string_length(id),
		                             json_integer((json_int_t)i));
	if (index_key(k, index) == 0)
		json_object_set_new(s->by_index, k, json_integer((json_int_t)i));
	if (!open)
		call_finish_item(c, item);
	else if (json_is_string(in))  /* normally "" */
		tgi_buf_append(&s->slots[i].input, json_string_value(in), json_string_length(in));
}

static void slot_close(stream *s, size_t i, const char *text, size_t n)
{
	call_finish(&s->out->v[i], text, n);
	tgi_buf_free(&s->slots[i].input);
	s->slots[i].open = 0;
}

/* A whole item: output_item.done's, or one of the final response's.  It
 * finishes the open call it shows completed and adds a call the stream
 * never announced; an item still unfinished leaves its call open. */
static void stream_item(stream *s, const json_t *item, const json_t *index)
{
	if (item_kind(item) == NOT_A_CALL)
		return;
	long i = find_call(s, json_object_get(item, "id"), index);
	const json_t *in = json_object_get(item, input_field(item_kind(item)));
	if (i < 0)
		stream_add(s, item, index, item_unfinished(item));
	else if (s->slots[i].open && !item_unfinished(item) && json_is_string(in))
		slot_close(s, (size_t)i, json_string_value(in), json_string_length(in));
}

static int on_added(stream *s, const tgi_sse_event *ev, const json_t *data)
{
	const json_t *item = json_object_get(data, "item");
	const json_t *id = json_object_get(item, "id");
	if (item_kind(item) == NOT_A_CALL)
		return GO_ON;
	if (json_is_string(id) && find_call(s, id, NULL) >= 0) {
		char shown[SHOWN + 1];
		tgi_sanitize(shown, sizeof shown, json_string_value(id));
		return stream_fail(s, ev->line, "item \"%s\" was added twice", shown);
	}
	stream_add(s, item, json_object_get(data, "output_index"), 1);
	return GO_ON;
}

/* A piece of an open call's input (done = 0), or the whole of it. */
static int on_input(stream *s, const tgi_sse_event *ev, const json_t *data, const char *type,
                    const char *field, int done)
{
	const json_t *id = json_object_get(data, "item_id");
	long i = find_call(s, id, json_object_get(data, "output_index"));
	if (i < 0) {
		char shown[SHOWN + 1];
		tgi_sanitize(shown, sizeof shown, str_or(id, ""));
		return json_is_string(id)
		       ? stream_fail(s, ev->line, "\"%s\" names item \"%s\", which no "
		                     "\"response.output_item.added\" announced", type, shown)
		       : stream_fail(s, ev->line, "\"%s\" names no item it belongs to", type);
	}
	const json_t *in = json_object_get(data, field);
	tgi_pcall *c = &s->out->v[i];
	if (!s->slots[i].open)
		return GO_ON;  /* finished: its done event or item is authoritative */
	if (!json_is_string(in))
		call_error(c, "the stream sent \"%s\" without \"%s\" for this call (line %zu)", type,
		           field, ev->line);
	else if (done)
		slot_close(s, (size_t)i, json_string_value(in), json_string_length(in));
	else if (tgi_buf_append(&s->slots[i].input, json_string_value(in),
	                        json_string_length(in)) < 0)
		call_error(c, "the call's input is over %u bytes", RESP_MAX);
	return GO_ON;
}

static int on_text(stream *s, const tgi_sse_event *ev, const json_t *data)
{
	const json_t *d = json_object_get(data, "delta");
	if (!json_is_string(d))
		return stream_fail(s, ev->line, "\"response.output_text.delta\" has no \"delta\" "
		                   "string");
	if (tgi_buf_append(&s->text, json_string_value(d), json_string_length(d)) < 0)
		return stream_fail(s, ev->line, "the response's text is over %u bytes", RESP_MAX);
	s->text_seen = 1;
	return GO_ON;
}

/* response.completed / .incomplete / .failed, or error: the end.  The
 * final response finishes what the stream left open. */
static int on_end(stream *s, const tgi_sse_event *ev, const json_t *data, const char *type)
{
	const json_t *resp = json_object_get(data, "response");
	char shown[SHOWN + 1];
	size_t i;
	const json_t *item;
	s->ended = 1;
	if (!strcmp(type, "error")) {  /* the event is the error object itself */
		json_t *r = json_pack("{s:O}", "error", data);
		response_end(r, shown, s->reason);
		json_decref(r);
		s->status = tgi_strdup("failed");
		return STOP_END;
	}
	const char *st = response_end(resp, shown, s->reason);
	if (!st)  /* the event says how it ended when the response does not */
		st = !strcmp(type, "response.completed") ? "completed"
		     : !strcmp(type, "response.failed")  ? "failed" : "incomplete";
	s->status = tgi_strdup(st);
	json_array_foreach(json_object_get(resp, "output"), i, item) {
		json_t *index = json_integer((json_int_t)i);
		stream_item(s, item, index);
		json_decref(index);
		if (!s->text_seen && message_text(&s->text, item) < 0)
			return stream_fail(s, ev->line, "the response's text is over %u bytes", RESP_MAX);
	}
	return STOP_END;
}

static int on_event(const tgi_sse_event *ev, void *arg)
{
	stream *s = arg;
	json_error_t je;
	if (s->bad_line)  /* a bad event, and the stream went on after it */
		return stream_fail(s, s->bad_line, "%s", s->bad);
	if (!strcmp(ev->data, "[DONE]"))
		return GO_ON;
	json_t *data = json_loadb(ev->data, ev->data_len, 0, &je);
	if (!data) {
		char why[sizeof je.text];
		tgi_sanitize(why, sizeof why, je.text);
		s->bad_line = ev->line;
		tgi_snprintf(s->bad, sizeof s->bad, "the event's data is not JSON (at byte %d: %s)",
		             je.position, why);
		return GO_ON;
	}
	const char *type = str_or(json_object_get(data, "type"), ev->event);
	int rc = GO_ON;
	if (!strncmp(type, "response.", 9) || !strcmp(type, "error"))
		s->events++;
	if (!strcmp(type, "response.output_item.added"))
		rc = on_added(s, ev, data);
	else if (!strcmp(type, "response.function_call_arguments.delta") ||
	         !strcmp(type, "response.custom_tool_call_input.delta"))
		rc = on_input(s, ev, data, type, "delta", 0);
	else if (!strcmp(type, "response.function_call_arguments.done"))
		rc = on_input(s, ev, data, type, "arguments", 1);
	else if (!strcmp(type, "response.custom_tool_call_input.done"))
		rc = on_input(s, ev, data, type, "input", 1);
	else if (!strcmp(type, "response.output_item.done"))
		stream_item(s, json_object_get(data, "item"), json_object_get(data, "output_index"));
	else if (!strcmp(type, "response.output_text.delta"))
		rc = on_text(s, ev, data);
	else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
	         !strcmp(type, "response.failed") || !strcmp(type, "error"))
		rc = on_end(s, ev, data, type);
	json_decref(data);
	return rc;
}

/* After the last event: what is still open was cut short. */
static int stream_close(stream *s)
{
	tgi_pcalls *out = s->out;
	if (!s->events) {
		tgi_snprintf(s->err, s->errlen, "the stream holds no OpenAI Responses events");
		return -1;
	}
	for (size_t i = 0; i < out->n; i++) {
		if (!s->slots[i].open)
			continue;
		call_unfinished(&out->v[i], s->ended ? s->status : NULL, s->reason);
		if (s->slots[i].input.len)
			call_finish(&out->v[i], s->slots[i].input.p, s->slots[i].input.len);
	}
	if (failed_empty(out, s->status, s->reason, s->err, s->errlen) < 0)
		return -1;
	out->text = tgi_buf_steal(&s->text);
	out->stop = s->ended ? stop_of(s->status, s->reason) : NULL;
	return 0;
}

static int resp_decode_stream(const char *text, size_t len, tgi_pcalls *out, char *err,
                              size_t errlen)
{
	stream s = {.out = out, .by_id = json_object(), .by_index = json_object(),
	            .err = err, .errlen = errlen};
	int truncated = 0;  /* not needed: a cut shows as a missing end or a bad last event */
	memset(out, 0, sizeof *out);
	tgi_buf_init(&s.text, RESP_MAX);
	int rc = tgi_sse_parse(text, len, on_event, &s, &truncated, err, errlen);
	if (rc == GO_ON || rc == STOP_END)
		rc = stream_close(&s);
	for (size_t i = 0; i < out->n; i++)
		tgi_buf_free(&s.slots[i].input);
	free(s.slots);
	free(s.status);
	json_decref(s.by_id);
	json_decref(s.by_index);
	tgi_buf_free(&s.text);
	if (rc != 0) {
		fail_clear(out);
		return -1;
	}
	return 0;
}

/* ---- definitions and results ------------------------------------------- */

static json_t *resp_tools(const json_t *defs, unsigned flags, char *err, size_t errlen)
{
	size_t i;
	const json_t *d;
	if (!json_is_array(defs)) {
		tgi_snprintf(err, errlen, "the tool definitions are not a JSON array");
		return NULL;
	}
	json_t *tools = json_array();
	json_array_foreach(defs, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *desc = json_object_get(d, "description");
		const json_t *schema = json_object_get(d, "input_schema");
		char shown[SHOWN + 1];
		if (!name)
			tgi_snprintf(err, errlen, "tool definition %zu has no name", i);
		if (!name || tgi_dialect_name_ok(API, name, err, errlen) < 0) {
			json_decref(tools);
			return NULL;
		}
		if (!json_is_object(schema)) {
			tgi_sanitize(shown, sizeof shown, name);
			tgi_snprintf(err, errlen, "tool \"%s\": input_schema is not a JSON object", shown);
			json_decref(tools);
			return NULL;
		}
		json_t *strict = tgi_dialect_openai_strict(schema);
		json_t *t = json_pack("{s:s, s:s}", "type", "function", "name", name);
		if (json_is_string(desc))
			json_object_set_new(t, "description", json_deep_copy(desc));
		json_object_set_new(t, "parameters", strict ? strict : json_deep_copy(schema));
		json_object_set_new(t, "strict", json_boolean(strict != NULL));
		json_array_append_new(tools, t);
	}
	return tools;
}

static json_t *resp_results(const tgi_pcalls *calls, const tgi_presult *res)
{
	json_t *items = json_array();
	for (size_t i = 0; i < calls->n; i++) {
		const tgi_pcall *c = &calls->v[i];
		const char *text = res[i].text ? res[i].text : "";
		json_t *it = json_object();
		json_object_set_new(it, "type", json_string(c->raw ? "custom_tool_call_output"
		                                                   : "function_call_output"));
		json_object_set_new(it, "call_id", tgi_json_text(c->id ? c->id : "",
		                                                 c->id ? strlen(c->id) : 0));
		json_object_set_new(it, "output", tgi_json_text(text, strlen(text)));
		json_array_append_new(items, it);
	}
	return items;
}

const tgi_protocol tgi_protocol_openai_responses = {
	.name = API,
	.tools = resp_tools,
	.decode = resp_decode,
	.decode_stream = resp_decode_stream,
	.results = resp_results,
};
