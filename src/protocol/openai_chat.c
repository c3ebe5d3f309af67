/*
 * openai_chat.c — OpenAI Chat Completions: the `tgi_protocol_openai_chat`
 * row (see protocol.h).
 *
 *   tools    [{"type":"function","function":{name, description, parameters,
 *            strict}}]: strict true with the strict-translated schema when
 *            the dialect can make one, else the schema as it is, strict false
 *   decode   a chat.completion: choices[0].message.tool_calls[], each
 *            {id, type:"function", function:{name, arguments}} (arguments a
 *            JSON text in a string) or {id, type:"custom", custom:{name,
 *            input}} (raw text); message.content is the text,
 *            finish_reason the stop
 *   stream   chat.completion.chunk events ending in `data: [DONE]`;
 *            choices[0].delta.tool_calls[] pieces joined per `index` (id,
 *            type and name come once, in the first piece; arguments come in
 *            pieces), delta.content pieces joined into the text
 *   results  one {"role":"tool", "tool_call_id", "content"} message per
 *            call, in call order (the API answers custom calls the same way)
 *
 * Calls are counted from tool_calls, never from finish_reason: a forced
 * call that ends with "stop" is still a call.  Arguments "" mean "{}";
 * arguments that are not JSON stay as given, with the parse error on the
 * call.  Chat deltas carry no end-of-call marker, so when a stream ends
 * with neither [DONE] nor a finish_reason nothing in it was finished:
 * every call it opened is invalid ("the stream ended inside this call"),
 * even one whose arguments happen to parse.  When the token limit ended
 * the response (finish_reason "length") its last function call may have
 * been cut before any arguments came: there "" is invalid, not "{}".
 *
 * Limits: a response or stream of at most 64 MiB, at most 1024 calls
 * (stream indexes 0..1023).  Decoded calls belong to the caller, who frees
 * them with tgi_pcalls_free (also after -1, when nothing is left).
 *
 * Owns: this API's wire shapes.  Must not: run, validate or decide calls
 * (dispatch and the gate do), or judge tool names in responses (the gate's
 * decode stage does).
 */
#include "protocol/protocol.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sse.h"
#include "util/util.h"

#define CHAT_API       "openai-chat"
#define CHAT_MAX_BYTES TGI_SSE_MAX  /* one response or stream */
#define CHAT_MAX_CALLS 1024u        /* calls in one response; stream indexes below it */

/* ---- definitions out ------------------------------------------------------ */

static json_t *chat_tools(const json_t *defs, unsigned flags, char *err, size_t errlen)
{
	json_t *out;
	const json_t *d;
	size_t i;

	(void)flags;
	if (!json_is_array(defs)) {
		tgi_snprintf(err, errlen, "the tool definitions are not a JSON array");
		return NULL;
	}
	out = json_array();
	json_array_foreach(defs, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *desc = json_object_get(d, "description");
		const json_t *schema = json_object_get(d, "input_schema");
		char shown[80];

		if (!name) {
			tgi_snprintf(err, errlen, "tool definition %zu has no name", i);
			goto fail;
		}
		if (tgi_dialect_name_ok(CHAT_API, name, err, errlen) < 0)
			goto fail;
		if (!json_is_object(schema)) {
			tgi_sanitize(shown, sizeof shown, name);
			tgi_snprintf(err, errlen, "tool \"%s\": input_schema is not a JSON object", shown);
			goto fail;
		}
		json_t *strict = tgi_dialect_openai_strict(schema);
		json_t *fn = json_object();
		json_object_set_new(fn, "name", json_string(name));
		if (json_is_string(desc))
			json_object_set_new(fn, "description", json_deep_copy(desc));
		json_object_set_new(fn, "parameters", strict ? strict : json_deep_copy(schema));
		json_object_set_new(fn, "strict", json_boolean(strict != NULL));
		json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn));
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* ---- one call ------------------------------------------------------------- */

/* Set c's error unless it has one: the first thing wrong with a call is the
 * one reported. */
__attribute__((format(printf, 2, 3)))
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

/* A label (id, name) from a JSON string: NULL when v is not a string or is
 * empty.  Text after a NUL byte cannot be carried: the call gets an error. */
static char *label(tgi_pcall *c, const json_t *v, const char *what)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (!s || !n)
		return NULL;
	if (memchr(s, '\0', n))
		call_error(c, "the %s has a NUL byte", what);
	return tgi_strdup(s);
}

static int all_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return 0;
	return 1;
}

/* A function call's arguments as the model wrote them: nothing (or only
 * white space) is "{}", unless the response was cut by the token limit
 * inside this call (cut), when nothing means the arguments never came; text
 * that is not JSON is kept, with the error. */
static void call_args(tgi_pcall *c, const char *s, size_t n, int cut)
{
	json_error_t je;
	json_t *v;

	if (all_space(s, n) && cut) {
		call_error(c, "the response hit the token limit before this call's arguments came");
		return;
	}
	if (all_space(s, n)) {
		c->args = tgi_strdup("{}");
		c->args_len = 2;
		return;
	}
	c->args = tgi_strndup(s, n);
	c->args_len = n;
	v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (v) {
		json_decref(v);
		return;
	}
	char why[200];
	tgi_sanitize(why, sizeof why, je.text);
	call_error(c, "the arguments are not valid JSON at byte %d: %s", je.position, why);
}

/* A custom call's input: raw text, kept as it is. */
static void call_input(tgi_pcall *c, const char *s, size_t n)
{
	c->raw = 1;
	c->args = tgi_strndup(s, n);
	c->args_len = n;
}

/* Did the response stop at the token limit?  Then its last call was open. */
static int stopped_by_length(const char *stop)
{
	return stop && strcmp(stop, "length") == 0;
}

/* One entry of message.tool_calls; cut: the token limit ended the response
 * inside it. */
static void call_from_message(tgi_pcall *c, const json_t *tc, int cut)
{
	const char *type = json_string_value(json_object_get(tc, "type"));
	const json_t *fn = json_object_get(tc, "function");
	const json_t *cu = json_object_get(tc, "custom");
	const json_t *a;

	if (!json_is_object(tc)) {
		call_error(c, "the tool call is not a JSON object");
		return;
	}
	c->id = label(c, json_object_get(tc, "id"), "call id");
	if (type ? strcmp(type, "custom") == 0 : json_is_object(cu)) {
		if (!json_is_object(cu)) {
			call_error(c, "the custom tool call has no \"custom\" object");
			return;
		}
		c->name = label(c, json_object_get(cu, "name"), "tool name");
		a = json_object_get(cu, "input");
		if (json_is_string(a))
			call_input(c, json_string_value(a), json_string_length(a));
		else if (!a || json_is_null(a))
			call_input(c, "", 0);
		else
			call_error(c, "the custom tool call's input is not a string");
	} else if (!type || strcmp(type, "function") == 0) {
		if (!json_is_object(fn)) {
			call_error(c, "the tool call has no \"function\" object");
			return;
		}
		c->name = label(c, json_object_get(fn, "name"), "tool name");
		a = json_object_get(fn, "arguments");
		if (json_is_string(a))
			call_args(c, json_string_value(a), json_string_length(a), cut);
		else if (!a || json_is_null(a))
			call_args(c, "", 0, cut);
		else
			call_error(c, "the arguments are not a JSON string");
	} else {
		char shown[64];
		tgi_sanitize(shown, sizeof shown, type);
		call_error(c, "the tool call has the unknown type \"%s\"", shown);
	}
	if (!c->name)
		call_error(c, "the tool call has no tool name");
}

/* ---- a whole response ----------------------------------------------------- */

/* An API error object's message, sanitized, for a sentence. */
static void api_error(char *err, size_t errlen, const char *where, const json_t *e)
{
	char msg[300];
	const char *m = json_string_value(json_object_get(e, "message"));
	tgi_sanitize(msg, sizeof msg, m ? m : "(no message)");
	tgi_snprintf(err, errlen, "%s is an API error: %s", where, msg);
}

/* Is the "object" member, when present, the one this API sends? */
static int object_is(const json_t *root, const char *want, const char *where, char *err,
                     size_t errlen)
{
	const json_t *o = json_object_get(root, "object");
	char shown[64];
	if (!o || (json_is_string(o) && strcmp(json_string_value(o), want) == 0))
		return 0;
	tgi_sanitize(shown, sizeof shown, json_is_string(o) ? json_string_value(o) : "?");
	tgi_snprintf(err, errlen, "%s is a \"%s\" object, not a %s", where, shown, want);
	return -1;
}

static int chat_decode(const char *text, size_t len, tgi_pcalls *out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = NULL;
	const json_t *choices, *choice, *msg, *tcs, *v;
	size_t i;

	memset(out, 0, sizeof *out);
	if (len > CHAT_MAX_BYTES) {
		tgi_snprintf(err, errlen, "the response is %zu bytes, over the limit of %u MiB", len,
		             CHAT_MAX_BYTES >> 20);
		return -1;
	}
	root = json_loadb(text, len, JSON_ALLOW_NUL, &je);
	if (!root) {
		char why[200];
		tgi_sanitize(why, sizeof why, je.text);
		tgi_snprintf(err, errlen, "the response is not JSON (line %d, column %d): %s", je.line,
		             je.column, why);
		return -1;
	}
	choices = json_object_get(root, "choices");
	if (!json_is_object(root)) {
		tgi_snprintf(err, errlen, "the response is not a JSON object");
		goto fail;
	}
	if (!choices && json_is_object(json_object_get(root, "error"))) {
		api_error(err, errlen, "the response", json_object_get(root, "error"));
		goto fail;
	}
	if (object_is(root, "chat.completion", "the response", err, errlen) < 0)
		goto fail;
	if (!json_is_array(choices) || !json_array_size(choices)) {
		tgi_snprintf(err, errlen, "the response has no choices; is it a Chat Completions "
		             "response?");
		goto fail;
	}
	choice = json_array_get(choices, 0);
	msg = json_object_get(choice, "message");
	if (!json_is_object(msg)) {
		tgi_snprintf(err, errlen, "the response's first choice has no message");
		goto fail;
	}
	tcs = json_object_get(msg, "tool_calls");
	if (tcs && !json_is_null(tcs) && !json_is_array(tcs)) {
		tgi_snprintf(err, errlen, "the message's tool_calls is not an array");
		goto fail;
	}
	if (json_array_size(tcs) > CHAT_MAX_CALLS) {
		tgi_snprintf(err, errlen, "the response has %zu tool calls, over the limit of %u",
		             json_array_size(tcs), CHAT_MAX_CALLS);
		goto fail;
	}

	v = json_object_get(msg, "content");
	out->text = tgi_strdup(json_is_string(v) ? json_string_value(v) : "");
	v = json_object_get(choice, "finish_reason");
	out->stop = json_is_string(v) ? tgi_strdup(json_string_value(v)) : NULL;
	json_array_foreach(tcs, i, v)
		call_from_message(tgi_pcalls_push(out), v,
		                  i + 1 == json_array_size(tcs) && stopped_by_length(out->stop));
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	tgi_pcalls_free(out);
	return -1;
}

/* ---- a stream ------------------------------------------------------------- */

/* One call as its pieces arrive. */
typedef struct chat_part {
	tgi_pcall call;   /* id, name, raw, error as they come; args below until the end */
	tgi_buf   args;
} chat_part;

typedef struct chat_stream {
	chat_part *parts;             /* in order of first appearance */
	size_t     n, cap;
	uint16_t   slot[CHAT_MAX_CALLS]; /* delta index -> position in parts + 1; 0: none yet */
	tgi_buf    text;
	char      *stop;              /* the last finish_reason */
	int        done;              /* `data: [DONE]` came */
	int        cut;               /* the framing: the stream ended inside its last event */
	size_t     events;
	char      *err;
	size_t     errlen;
} chat_stream;

static chat_part *part_for(chat_stream *st, size_t index)
{
	if (!st->slot[index]) {
		if (st->n == st->cap) {
			st->cap = st->cap ? st->cap * 2 : 4;
			st->parts = tgi_xrealloc(st->parts, st->cap * sizeof *st->parts);
		}
		chat_part *p = &st->parts[st->n++];
		memset(p, 0, sizeof *p);
		tgi_buf_init(&p->args, CHAT_MAX_BYTES);
		st->slot[index] = (uint16_t)st->n;
	}
	return &st->parts[st->slot[index] - 1];
}

static int stream_fail(chat_stream *st, size_t line, const char *what)
{
	tgi_snprintf(st->err, st->errlen, "the event on line %zu %s", line, what);
	return -1;
}

/* Append a string piece to buf.  0, or -1 when it is not a string. */
static int piece(tgi_buf *buf, const json_t *v)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	/* cannot overflow: every buffer holds less than the stream, which is capped */
	return tgi_buf_append(buf, json_string_value(v), json_string_length(v)) < 0 ? -1 : 0;
}

/* One entry of delta.tool_calls. */
static int chat_delta(chat_stream *st, const json_t *tc, size_t line)
{
	const json_t *ix = json_object_get(tc, "index");
	const json_t *fn = json_object_get(tc, "function");
	const json_t *cu = json_object_get(tc, "custom");
	const char *type = json_string_value(json_object_get(tc, "type"));
	json_int_t index = json_integer_value(ix);
	chat_part *p;

	if (!json_is_object(tc))
		return stream_fail(st, line, "has a tool_calls entry that is not an object");
	if (!json_is_integer(ix) || index < 0 || index >= (json_int_t)CHAT_MAX_CALLS)
		return stream_fail(st, line, "has a tool_calls entry without an index from 0 to 1023");
	p = part_for(st, (size_t)index);
	if (!p->call.id)
		p->call.id = label(&p->call, json_object_get(tc, "id"), "call id");
	if ((type && strcmp(type, "custom") == 0) || json_is_object(cu))
		p->call.raw = 1;
	/* a custom call's pieces, should a stream carry them, mirror the message's */
	const json_t *body = p->call.raw ? cu : fn;
	if (body && !json_is_object(body)) {
		call_error(&p->call, "the tool call's \"%s\" is not an object",
		           p->call.raw ? "custom" : "function");
		return 0;
	}
	if (!p->call.name)
		p->call.name = label(&p->call, json_object_get(body, "name"), "tool name");
	if (piece(&p->args, json_object_get(body, p->call.raw ? "input" : "arguments")) < 0)
		call_error(&p->call, "%s", p->call.raw ? "the input is not a string"
		                                       : "the arguments are not a string");
	return 0;
}

static int chat_chunk(chat_stream *st, const json_t *chunk, size_t line)
{
	const json_t *choices = json_object_get(chunk, "choices");
	const json_t *choice, *delta, *v;
	size_t i, j;
	char where[64];

	if (!json_is_object(chunk))
		return stream_fail(st, line, "is not a JSON object");
	tgi_snprintf(where, sizeof where, "the event on line %zu", line);
	if (!choices && json_is_object(json_object_get(chunk, "error"))) {
		api_error(st->err, st->errlen, where, json_object_get(chunk, "error"));
		return -1;
	}
	if (object_is(chunk, "chat.completion.chunk", where, st->err, st->errlen) < 0)
		return -1;
	if (!json_is_array(choices))
		return stream_fail(st, line, "has no choices; is this a Chat Completions stream?");
	json_array_foreach(choices, i, choice) {
		v = json_object_get(choice, "index");
		if (!json_is_object(choice))
			return stream_fail(st, line, "has a choice that is not an object");
		if (v && json_integer_value(v) != 0)
			continue; /* the first choice is the answer, as in a whole response */
		delta = json_object_get(choice, "delta");
		if (piece(&st->text, json_object_get(delta, "content")) < 0)
			return stream_fail(st, line, "has content that is not a string");
		v = json_object_get(delta, "tool_calls");
		if (v && !json_is_null(v) && !json_is_array(v))
			return stream_fail(st, line, "has tool_calls that are not an array");
		json_array_foreach(v, j, delta)
			if (chat_delta(st, delta, line) < 0)
				return -1;
		v = json_object_get(choice, "finish_reason");
		if (json_is_string(v)) {
			free(st->stop);
			st->stop = tgi_strdup(json_string_value(v));
		}
	}
	return 0;
}

static int chat_event(const tgi_sse_event *ev, void *arg)
{
	chat_stream *st = arg;
	json_error_t je;
	json_t *chunk;
	int rc;

	st->events++;
	if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
		st->done = 1;
		return 1; /* the end: anything after it is not this response's */
	}
	chunk = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &je);
	if (!chunk) {
		if (st->cut)
			return 0; /* the last event, cut short: the stream is truncated */
		char why[200], what[260];
		tgi_sanitize(why, sizeof why, je.text);
		tgi_snprintf(what, sizeof what, "is not JSON: %s", why);
		return stream_fail(st, ev->line, what);
	}
	rc = chat_chunk(st, chunk, ev->line);
	json_decref(chunk);
	return rc;
}

static void stream_free(chat_stream *st)
{
	for (size_t i = 0; i < st->n; i++) {
		tgi_pcall *c = &st->parts[i].call;
		free(c->id);
		free(c->name);
		free(c->args);
		free(c->error);
		tgi_buf_free(&st->parts[i].args);
	}
	free(st->parts);
	tgi_buf_free(&st->text);
	free(st->stop);
}

/* The calls in index order, each finished: arguments checked, or, when the
 * stream was cut, kept as they came and marked. */
static void stream_finish(chat_stream *st, tgi_pcalls *out)
{
	int truncated = !st->done && !st->stop;
	size_t last = 0;

	for (size_t ix = 0; ix < CHAT_MAX_CALLS; ix++)
		if (st->slot[ix])
			last = ix;
	for (size_t ix = 0; ix < CHAT_MAX_CALLS; ix++) {
		if (!st->slot[ix])
			continue;
		chat_part *p = &st->parts[st->slot[ix] - 1];
		const char *args = p->args.p ? p->args.p : "";
		tgi_pcall *c = tgi_pcalls_push(out);
		*c = p->call;
		memset(&p->call, 0, sizeof p->call);
		if (truncated) {
			free(c->error);
			c->error = tgi_strdup("the stream ended inside this call");
			c->args = p->args.len ? tgi_strndup(args, p->args.len) : NULL;
			c->args_len = p->args.len;
		} else if (c->raw) {
			call_input(c, args, p->args.len);
		} else {
			call_args(c, args, p->args.len, ix == last && stopped_by_length(st->stop));
		}
		if (!c->name)
			call_error(c, "the tool call has no tool name");
	}
	out->text = tgi_buf_steal(&st->text);
	out->stop = st->stop;
	st->stop = NULL;
}

static int chat_decode_stream(const char *text, size_t len, tgi_pcalls *out, char *err,
                              size_t errlen)
{
	chat_stream *st = tgi_xcalloc(1, sizeof *st);
	int rc;

	memset(out, 0, sizeof *out);
	st->err = err;
	st->errlen = errlen;
	tgi_buf_init(&st->text, CHAT_MAX_BYTES);
	rc = tgi_sse_parse(text, len, chat_event, st, &st->cut, err, errlen);
	if (rc >= 0 && !st->events) {
		tgi_snprintf(err, errlen, "the stream has no events; is it a Chat Completions stream?");
		rc = -1;
	}
	if (rc >= 0)
		stream_finish(st, out);
	stream_free(st);
	free(st);
	return rc < 0 ? -1 : 0;
}

/* ---- results out ---------------------------------------------------------- */

static json_t *chat_results(const tgi_pcalls *calls, const tgi_presult *res)
{
	json_t *msgs = json_array();

	for (size_t i = 0; i < calls->n; i++) {
		const char *id = calls->v[i].id ? calls->v[i].id : "";
		const char *text = res[i].text ? res[i].text : "";
		json_t *m = json_object();
		json_object_set_new(m, "role", json_string("tool"));
		json_object_set_new(m, "tool_call_id", tgi_json_text(id, strlen(id)));
		json_object_set_new(m, "content", tgi_json_text(text, strlen(text)));
		json_array_append_new(msgs, m);
	}
	return msgs;
}

const tgi_protocol tgi_protocol_openai_chat = {
	.name = CHAT_API,
	.tools = chat_tools,
	.decode = chat_decode,
	.decode_stream = chat_decode_stream,
	.results = chat_results,
};
