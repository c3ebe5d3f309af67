/*
 * gemini.c — the Gemini API (generateContent, and streamGenerateContent
 * with alt=sse): tool definitions out, functionCall parts in,
 * functionResponse parts out.
 *
 *   out   [{"functionDeclarations": [{name, description,
 *          parametersJsonSchema}]}]; with TGI_DIALECT_GEMINI_LEGACY the
 *          OpenAPI-subset "parameters" instead (dialect.c).
 *   in    candidates[0].content.parts[]: a "functionCall" part {name, args,
 *          id} is one call; "text" parts are the model's text ("thought":
 *          true parts are not); finishReason is only reported.  A call
 *          without an id gets "gemini-<index>-<name>", index being its
 *          position among this response's calls, so the same response
 *          always yields the same ids.  A part's "thoughtSignature" is
 *          kept in the call's echo.
 *   out   [{"role": "user", "parts": [{"functionResponse": {name, id,
 *          response: {output | error}}}, ...]}], one part per call, in
 *          call order; "id" only when the API gave the call one.
 *
 * Thought signatures: the API wants each one back "in the exact part where
 * it was received", i.e. on the functionCall part of the model's turn,
 * which the caller keeps in its history (with parallel calls only the
 * first call carries one).  A functionResponse never carries it, so
 * results() needs only the name and id; the signature is in echo for
 * callers that rebuild the model's turn from our calls.
 *
 * Streams: every SSE event is one whole GenerateContentResponse, and in
 * the Gemini API a functionCall part always arrives whole (partialArgs
 * and willContinue are Vertex AI's streamFunctionCallArguments, "not
 * supported in Gemini API").  So a cut stream loses no part of any call it
 * delivered: those calls stand, and only `stop` says the stream was cut
 * (NULL: the last chunk had no finishReason).  A call that does come in
 * pieces is not assembled: its pieces become one invalid call, never run
 * with half its arguments.  An event cut mid-JSON at the end of the
 * stream is dropped the same way; a broken event before the end means the
 * stream is corrupt and is refused.
 *
 * Owns: Gemini's wire shapes.  Must not: run calls, decide anything, or
 * translate schemas itself (dialect.c does).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "util/sse.h"
#include "util/util.h"

#define GEMINI_MAX       TGI_SSE_MAX  /* bytes of one response or stream */
#define GEMINI_MAX_CALLS 1024         /* calls in one response */
#define SHOWN_MAX        160          /* bytes of outside text quoted in a message */

/* Outside text fit for a message: valid UTF-8, no control characters, capped. */
static void shown(char *out, size_t cap, const char *s)
{
	json_t *j = tgi_json_text(s, strlen(s));
	tgi_sanitize(out, cap, json_string_value(j));
	json_decref(j);
}

/* ---- definitions out ----------------------------------------------------- */

/* One FunctionDeclaration from one {name, description, input_schema} definition. */
static json_t *declaration(const json_t *def, size_t i, unsigned flags, char *err, size_t errlen)
{
	char name_shown[SHOWN_MAX], sub[512];
	const char *name = json_string_value(json_object_get(def, "name"));
	if (!json_is_object(def) || !name) {
		tgi_snprintf(err, errlen, "tool definition %zu has no \"name\"", i);
		return NULL;
	}
	if (tgi_dialect_name_ok("gemini", name, err, errlen) < 0)
		return NULL;
	shown(name_shown, sizeof name_shown, name);
	const json_t *desc = json_object_get(def, "description");
	const json_t *schema = json_object_get(def, "input_schema");
	if (schema && !json_is_object(schema)) {
		tgi_snprintf(err, errlen, "tool \"%s\": \"input_schema\" is not a JSON object",
		             name_shown);
		return NULL;
	}

	json_t *d = json_object();
	json_object_set_new(d, "name", json_string(name));
	json_object_set_new(d, "description", json_string(json_is_string(desc) ?
	                                                  json_string_value(desc) : ""));
	if (!schema)
		return d;
	if (flags & TGI_DIALECT_GEMINI_LEGACY) {
		json_t *p = tgi_dialect_gemini_legacy(schema, sub, sizeof sub);
		if (!p) {
			tgi_snprintf(err, errlen, "tool \"%s\": %s", name_shown, sub);
			json_decref(d);
			return NULL;
		}
		json_object_set_new(d, "parameters", p);
	} else {
		json_object_set_new(d, "parametersJsonSchema", json_deep_copy(schema));
	}
	return d;
}

static json_t *gemini_tools(const json_t *defs, unsigned flags, char *err, size_t errlen)
{
	if (!json_is_array(defs)) {
		tgi_snprintf(err, errlen, "the tool definitions are not a JSON array");
		return NULL;
	}
	json_t *decls = json_array();
	for (size_t i = 0; i < json_array_size(defs); i++) {
		json_t *d = declaration(json_array_get(defs, i), i, flags, err, errlen);
		if (!d) {
			json_decref(decls);
			return NULL;
		}
		json_array_append_new(decls, d);
	}
	if (!json_array_size(decls)) { /* no tools: no Tool at all, not an empty one */
		json_decref(decls);
		return json_array();
	}
	return json_pack("[{s:o}]", "functionDeclarations", decls);
}

/* ---- calls in ------------------------------------------------------------ */

/* One response (or stream) being decoded. */
typedef struct decoder {
	tgi_pcalls  calls;
	tgi_buf     text;
	char       *stop_own;   /* the latest candidate chunk's finishReason, owned */
	size_t      open;       /* a call whose pieces are still coming, or SIZE_MAX */
	int         answered;   /* some chunk had "candidates" or "promptFeedback" */
	size_t      line;       /* the SSE line of the chunk being read, or 0 */
	size_t      bad_line;   /* an event that was not JSON, or 0 */
	char        bad[SHOWN_MAX];
	char       *err;
	size_t      errlen;
} decoder;

static void decoder_init(decoder *d, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	tgi_buf_init(&d->text, GEMINI_MAX);
	d->open = SIZE_MAX;
	d->err = err;
	d->errlen = errlen;
}

static void decoder_free(decoder *d)
{
	tgi_pcalls_free(&d->calls);
	tgi_buf_free(&d->text);
	free(d->stop_own);
}

/* A sentence into err, prefixed with where in a stream it happened.  -1. */
static int fail(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(decoder *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (d->line)
		tgi_snprintf(d->err, d->errlen, "the event at line %zu: %s", d->line, msg);
	else
		tgi_snprintf(d->err, d->errlen, "%s", msg);
	return -1;
}

static tgi_pcall *new_call(decoder *d)
{
	if (d->calls.n == GEMINI_MAX_CALLS) {
		fail(d, "the response holds more than %d function calls", GEMINI_MAX_CALLS);
		return NULL;
	}
	return tgi_pcalls_push(&d->calls);
}

/* Did we make this id up, so that the API never saw it?  (An id the API
 * gave that reads exactly like ours is taken as made up too: the API then
 * matches that response by name and order, as for any call without an
 * id.) */
int tgi_gemini_id_made_up(const tgi_pcall *c, size_t index)
{
	char want[64];
	const char *name = c->name ? c->name : "";
	int n = snprintf(want, sizeof want, "gemini-%zu-", index);
	return c->id && !strncmp(c->id, want, (size_t)n) && !strcmp(c->id + n, name);
}

/* Is this functionCall a piece of a call streamed in parts (Vertex AI's
 * streamFunctionCallArguments)? */
static int is_piece(const json_t *fc)
{
	return json_array_size(json_object_get(fc, "partialArgs")) > 0 ||
	       json_is_true(json_object_get(fc, "willContinue"));
}

static void keep_signature(tgi_pcall *c, const json_t *part)
{
	const json_t *sig = json_object_get(part, "thoughtSignature");
	if (json_is_string(sig) && !c->echo)
		c->echo = json_pack("{s:O}", "thoughtSignature", sig);
}

/* A later piece of the open call: it may bring the id or the signature, and
 * ends the call unless it says more will follow. */
static void continue_call(decoder *d, const json_t *part, const json_t *fc)
{
	tgi_pcall *c = &d->calls.v[d->open];
	keep_signature(c, part);
	const char *id = json_string_value(json_object_get(fc, "id"));
	if (id && *id && tgi_gemini_id_made_up(c, d->open)) {
		free(c->id);
		c->id = tgi_strdup(id);
	}
	if (!json_is_true(json_object_get(fc, "willContinue")))
		d->open = SIZE_MAX;
}

/* What is wrong with a call's "args", or NULL. */
static const char *args_problem(const json_t *args)
{
	if (!args)
		return NULL;
	switch (json_typeof(args)) {
	case JSON_OBJECT: return NULL;
	case JSON_ARRAY:  return "\"args\" is an array, not a JSON object";
	case JSON_STRING: return "\"args\" is a string, not a JSON object";
	case JSON_NULL:   return NULL; /* proto3 JSON: null is "not set" */
	default:          return "\"args\" is not a JSON object";
	}
}

/* One part holding a functionCall. */
static int take_call(decoder *d, const json_t *part, const json_t *fc)
{
	const char *name = json_string_value(json_object_get(fc, "name"));
	if (d->open != SIZE_MAX) {
		const char *open_name = d->calls.v[d->open].name;
		if (json_is_object(fc) && (!name || (is_piece(fc) && !strcmp(name, open_name)))) {
			continue_call(d, part, fc);
			return 0;
		}
		d->open = SIZE_MAX; /* a new call: the open one ended unannounced */
	}

	size_t index = d->calls.n;
	tgi_pcall *c = new_call(d);
	if (!c)
		return -1;
	c->name = tgi_strdup(name ? name : "");
	const json_t *idv = json_object_get(fc, "id");
	const char *id = json_string_value(idv);
	if (id && *id) {
		c->id = tgi_strdup(id);
	} else {
		size_t n = strlen(c->name) + 32;
		c->id = tgi_xmalloc(n);
		snprintf(c->id, n, "gemini-%zu-%s", index, c->name);
	}
	keep_signature(c, part);

	const json_t *args = json_object_get(fc, "args");
	int piece = is_piece(fc);
	const char *problem = !json_is_object(fc) ? "\"functionCall\" is not a JSON object"
	                    : !name || !*name      ? "the call has no function name"
	                    : idv && !id && !json_is_null(idv) ? "the call's \"id\" is not a string"
	                    : piece ? "its arguments came in pieces (streamFunctionCallArguments), "
	                              "which the Gemini API does not send and toolgate does not "
	                              "assemble; it was not run"
	                    : args_problem(args);
	if (piece && json_is_true(json_object_get(fc, "willContinue")))
		d->open = index; /* its later pieces join this call */
	if (problem)
		c->error = tgi_strdup(problem);
	if (!problem || (args && !json_is_null(args) && !piece)) {
		/* what came, as compact JSON text; no args at all is {} */
		c->args = args && !json_is_null(args) ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY)
		                                      : tgi_strdup("{}");
		if (!c->args)
			return fail(d, "the arguments of call %zu cannot be written out", index);
		c->args_len = strlen(c->args);
	}
	return 0;
}

/* The candidate a client reads: index 0 (a missing index is the position). */
static const json_t *first_candidate(const json_t *cands)
{
	for (size_t i = 0; i < json_array_size(cands); i++) {
		const json_t *c = json_array_get(cands, i);
		const json_t *ix = json_object_get(c, "index");
		if ((json_is_integer(ix) ? (size_t)json_integer_value(ix) : i) == 0)
			return c;
	}
	return NULL;
}

/* The API's own error object {code, message, status}, as a refusal. */
static int api_error(decoder *d, const json_t *e)
{
	char msg[SHOWN_MAX], status[64], code[32] = "";
	const char *m = json_string_value(json_object_get(e, "message"));
	const char *s = json_string_value(json_object_get(e, "status"));
	const json_t *c = json_object_get(e, "code");
	shown(msg, sizeof msg, m ? m : "no message");
	shown(status, sizeof status, s ? s : "");
	if (json_is_integer(c))
		tgi_snprintf(code, sizeof code, "%" JSON_INTEGER_FORMAT " ", json_integer_value(c));
	return fail(d, "the API answered with an error: %s%s%s%s", code, status,
	            *code || *status ? ": " : "", msg);
}

/* One GenerateContentResponse: the whole response, or one chunk of a stream. */
static int take_response(decoder *d, const json_t *r)
{
	if (!json_is_object(r))
		return fail(d, "not a Gemini response: expected a JSON object");
	const json_t *e = json_object_get(r, "error");
	if (e)
		return api_error(d, e);
	const json_t *cands = json_object_get(r, "candidates");
	if (cands || json_object_get(r, "promptFeedback"))
		d->answered = 1;
	if (cands && !json_is_array(cands))
		return fail(d, "\"candidates\" is not an array");
	const json_t *cand = first_candidate(cands);
	if (!cand)
		return 0;
	if (!json_is_object(cand))
		return fail(d, "the first candidate is not a JSON object");

	const json_t *content = json_object_get(cand, "content");
	const json_t *parts = json_object_get(content, "parts");
	if (content && !json_is_object(content))
		return fail(d, "the candidate's \"content\" is not a JSON object");
	if (parts && !json_is_array(parts))
		return fail(d, "the candidate's \"parts\" is not an array");
	for (size_t i = 0; i < json_array_size(parts); i++) {
		const json_t *part = json_array_get(parts, i);
		if (!json_is_object(part))
			return fail(d, "part %zu of the candidate is not a JSON object", i);
		const json_t *fc = json_object_get(part, "functionCall");
		const json_t *text = json_object_get(part, "text");
		if (fc && take_call(d, part, fc) < 0)
			return -1;
		if (text && !json_is_string(text))
			return fail(d, "part %zu of the candidate has a \"text\" that is not a string", i);
		if (text && !json_is_true(json_object_get(part, "thought")) &&
		    tgi_buf_append(&d->text, json_string_value(text), json_string_length(text)) < 0)
			return fail(d, "the model's text is longer than %u bytes", GEMINI_MAX);
	}
	/* the finishReason of the latest candidate chunk: none means not finished */
	const char *stop = json_string_value(json_object_get(cand, "finishReason"));
	free(d->stop_own);
	d->stop_own = stop ? tgi_strdup(stop) : NULL;
	return 0;
}

/* Move the result into out.  0, or -1 when the input was no Gemini answer. */
static int finish(decoder *d, tgi_pcalls *out)
{
	if (!d->answered) {
		tgi_snprintf(d->err, d->errlen, "not a Gemini response: it has no \"candidates\"");
		return -1;
	}
	if (d->open != SIZE_MAX) { /* the stream ended between a call's pieces */
		tgi_pcall *c = &d->calls.v[d->open];
		free(c->error);
		c->error = tgi_strdup("the stream ended inside this call");
		free(d->stop_own);
		d->stop_own = NULL;
	}
	*out = d->calls;
	out->text = d->text.p ? tgi_buf_steal(&d->text) : tgi_strdup("");
	out->stop = d->stop_own;
	memset(&d->calls, 0, sizeof d->calls);
	d->stop_own = NULL;
	return 0;
}

/* jansson's complaint, fit for a message. */
static void parse_error(char *out, size_t cap, const json_error_t *je)
{
	char what[SHOWN_MAX];
	shown(what, sizeof what, je->text);
	tgi_snprintf(out, cap, "%s at byte %zu", what, (size_t)je->position);
}

/*
 * A complete response: one GenerateContentResponse object, or the JSON
 * array of them that streamGenerateContent returns without alt=sse (read
 * like a stream).
 */
static int gemini_decode(const char *text, size_t len, tgi_pcalls *out, char *err,
                         size_t errlen)
{
	decoder d;
	json_error_t je;
	char why[SHOWN_MAX + 32];
	memset(out, 0, sizeof *out);
	if (len > GEMINI_MAX) {
		tgi_snprintf(err, errlen, "the response is larger than %u bytes", GEMINI_MAX);
		return -1;
	}
	json_t *r = json_loadb(text, len, 0, &je);
	if (!r) {
		parse_error(why, sizeof why, &je);
		tgi_snprintf(err, errlen, "the response is not JSON: %s", why);
		return -1;
	}
	decoder_init(&d, err, errlen);
	int rc = 0;
	if (json_is_array(r)) {
		for (size_t i = 0; rc == 0 && i < json_array_size(r); i++)
			rc = take_response(&d, json_array_get(r, i));
	} else {
		rc = take_response(&d, r);
	}
	json_decref(r);
	if (rc == 0)
		rc = finish(&d, out);
	decoder_free(&d);
	return rc;
}

static int on_event(const tgi_sse_event *ev, void *arg)
{
	decoder *d = arg;
	json_error_t je;
	if (d->bad_line) { /* a broken event with more after it: not a cut, corruption */
		d->line = d->bad_line;
		fail(d, "not JSON: %s", d->bad);
		return 1;
	}
	json_t *r = json_loadb(ev->data, ev->data_len, 0, &je);
	if (!r) {
		d->bad_line = ev->line ? ev->line : 1;
		parse_error(d->bad, sizeof d->bad, &je);
		return 0;
	}
	d->line = ev->line ? ev->line : 1;
	int rc = take_response(d, r);
	json_decref(r);
	return rc < 0;
}

static int gemini_decode_stream(const char *text, size_t len, tgi_pcalls *out, char *err,
                                size_t errlen)
{
	decoder d;
	int truncated = 0;
	memset(out, 0, sizeof *out);
	decoder_init(&d, err, errlen);
	int rc = tgi_sse_parse(text, len, on_event, &d, &truncated, err, errlen);
	d.line = 0;
	if (rc == 0 && d.bad_line) {
		if (truncated) { /* the stream was cut inside its last event: drop it */
			free(d.stop_own);
			d.stop_own = NULL;
		} else {
			d.line = d.bad_line;
			rc = fail(&d, "not JSON: %s", d.bad);
		}
	}
	if (rc == 0)
		rc = finish(&d, out);
	decoder_free(&d);
	return rc == 0 ? 0 : -1;
}

/* ---- results out --------------------------------------------------------- */

static json_t *gemini_results(const tgi_pcalls *calls, const tgi_presult *res)
{
	if (!calls->n)
		return json_array();
	json_t *parts = json_array();
	for (size_t i = 0; i < calls->n; i++) {
		const tgi_pcall *c = &calls->v[i];
		const char *text = res[i].text ? res[i].text : "";
		const char *name = c->name ? c->name : "";
		json_t *fr = json_object();
		json_object_set_new(fr, "name", tgi_json_text(name, strlen(name)));
		if (c->id && !tgi_gemini_id_made_up(c, i))
			json_object_set_new(fr, "id", tgi_json_text(c->id, strlen(c->id)));
		json_object_set_new(fr, "response", json_pack("{s:o}", res[i].is_error ? "error" : "output",
		                                              tgi_json_text(text, strlen(text))));
		json_array_append_new(parts, json_pack("{s:o}", "functionResponse", fr));
	}
	return json_pack("[{s:s, s:o}]", "role", "user", "parts", parts);
}

const tgi_protocol tgi_protocol_gemini = {
	.name          = "gemini",
	.tools         = gemini_tools,
	.decode        = gemini_decode,
	.decode_stream = gemini_decode_stream,
	.results       = gemini_results,
};
