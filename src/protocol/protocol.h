/*
 * protocol.h — the four model APIs (DESIGN §6): tool definitions out, tool
 * calls in (a whole JSON response or its SSE stream), tool results out.
 * One file per API in src/protocol/, plus sse.c (stream framing) and
 * dialect.c (schemas translated to each API's dialect).
 *
 *   openai-chat       Chat Completions: choices[].message.tool_calls,
 *                     results as role:"tool" messages
 *   openai-responses  Responses: output[] function_call / custom_tool_call,
 *                     results as function_call_output / custom_tool_call_output items
 *   anthropic         Messages: content[] tool_use, results as one user
 *                     message of tool_result blocks
 *   gemini            generateContent: candidates[].content.parts[].functionCall,
 *                     results as functionResponse parts
 *
 * Calls are counted from the call blocks, never from finish_reason /
 * stop_reason.  A call whose arguments are not valid JSON, or that a
 * stream cut short, is decoded with `error` set: it becomes an `invalid`
 * call; the others in the batch still run.
 *
 * Owns: the wire shapes.  Must not: run calls or decide anything (the
 * dispatch in src/protocol/dispatch.c and the gate do).
 */
#ifndef TGI_PROTOCOL_H
#define TGI_PROTOCOL_H

#include <stddef.h>
#include <jansson.h>

#include "toolgate.h"

/* One tool call as the model made it. */
typedef struct tgi_pcall {
	char   *id;        /* the API's call id (tool_call_id, call_id, tool_use id); Gemini:
	                      synthesized "gemini-<index>-<name>", stable for one response */
	char   *name;      /* tool name as the model wrote it */
	char   *args;      /* arguments: JSON object text; for a custom/freeform call the raw
	                      input text (raw = 1); NULL when error is set and nothing came */
	size_t  args_len;
	int     raw;       /* custom/freeform call: args is text, not JSON */
	char   *error;     /* non-NULL: invalid call, with a sentence ("arguments are not
	                      valid JSON at byte 12: ...", "the stream ended inside this call") */
	json_t *echo;      /* what the result must carry back (Gemini thoughtSignature), or NULL */
} tgi_pcall;

typedef struct tgi_pcalls {
	tgi_pcall *v;
	size_t     n;
	char      *text;   /* the model's text beside the calls, concatenated ("" when none) */
	char      *stop;   /* finish_reason / stop_reason as given, or NULL (informational) */
} tgi_pcalls;

/* A new zeroed call at the end of c (its array doubled when its count
 * reaches a power of two); borrowed from c.  (calls.c) */
tgi_pcall *tgi_pcalls_push(tgi_pcalls *c);
/* Free every call and string of c and zero it; c NULL is a no-op. */
void tgi_pcalls_free(tgi_pcalls *c);

/* What one call came to: borrowed from the envelope. */
typedef struct tgi_presult {
	const char *status;   /* envelope status: persisted, denied, ... */
	int         is_error; /* invalid, denied, pending or failed */
	const char *text;     /* what the model reads: the tool's output as text (a string
	                         output itself; an object's "summary" if it has one, else the
	                         compact JSON), or for an error "status (kind): message" */
	const json_t *envelope;
} tgi_presult;

enum { TGI_DIALECT_GEMINI_LEGACY = 1u << 0 };

typedef struct tgi_protocol {
	const char *name;    /* "openai-chat", "openai-responses", "anthropic", "gemini" */
	/* The `tools` array in this API's shape, from definitions as tg_tools_json gives
	 * them ([{name, description, input_schema, annotations}]).  NULL with err when a
	 * definition cannot be expressed (a name the API refuses, a $ref cycle for
	 * Gemini's legacy schema). */
	json_t *(*tools)(const json_t *defs, unsigned flags, char *err, size_t errlen);
	/* Decode a complete JSON response.  0, or -1 with err when it is not this API's
	 * response at all (calls with bad arguments are not errors: see tgi_pcall). */
	int (*decode)(const char *text, size_t len, tgi_pcalls *out, char *err, size_t errlen);
	/* Decode a raw SSE stream of this API.  Same returns. */
	int (*decode_stream)(const char *text, size_t len, tgi_pcalls *out, char *err,
	                     size_t errlen);
	/* The result message(s) this API expects, one result per call, in call order:
	 * res[i] answers calls->v[i].  New reference: a JSON array of messages/items
	 * (Chat: tool messages; Responses: output items; Anthropic: [one user message];
	 * Gemini: [one content {role:"user", parts:[functionResponse...]}]). */
	json_t *(*results)(const tgi_pcalls *calls, const tgi_presult *res);
} tgi_protocol;

extern const tgi_protocol tgi_protocol_openai_chat;
extern const tgi_protocol tgi_protocol_openai_responses;
extern const tgi_protocol tgi_protocol_anthropic;
extern const tgi_protocol tgi_protocol_gemini;

/* By name; NULL if unknown. */
const tgi_protocol *tgi_protocol_find(const char *name);

/* Is call number index of a Gemini reply's id one the decoder made up
 * ("gemini-<index>-<name>"), so that the API never gave it (gemini.c)? */
int tgi_gemini_id_made_up(const tgi_pcall *c, size_t index);

/* ---- dispatch.c: decoded calls through the gate ---------------------- */

struct tg_gate;

/*
 * The request the gate gets for one decoded call (tool, arguments, the
 * decoder's "invalid" sentence, call_id the API's id): OpenAI's strict-mode
 * nulls for optional arguments dropped, a custom/freeform call's text given
 * as the tool's one string argument (or refused as invalid).  *wrapped
 * (caller frees, may be NULL) holds rewritten arguments rq points into.
 */
void tgi_dispatch_request(struct tg_gate *g, const tgi_protocol *api, const tgi_pcall *c,
                          tg_request *rq, char **wrapped);

/*
 * Run every call of `calls` through the gate as one batch (session and
 * principal, either may be NULL, applied to each), as tg_dispatch does,
 * and return the results in api's shape (api->results: a new JSON array,
 * one result per call in call order).  The gate records each call under
 * the API's id, which scopes its idempotency within the session; an id
 * the Gemini decoder made up is the same in every reply, so the gate gets
 * it with this batch's own token appended (the results still answer the
 * API by name and order).  *envelopes (if not NULL) gets a new JSON array
 * of the calls' envelopes, in call order.
 */
json_t *tgi_dispatch_calls(struct tg_gate *g, const tgi_protocol *api, const tgi_pcalls *calls,
                           const char *session, const char *principal, json_t **envelopes);

/* Is status (an envelope's) one the model reads as an error: invalid,
 * denied, pending or failed?  NULL or an unknown name: yes. */
int tgi_status_is_error(const char *status);

/* ---- dialect.c: schemas per API ---------------------------------------- */

/*
 * Is name a tool name the API accepts?  [A-Za-z0-9_-]{1,64} for OpenAI and
 * Anthropic; Gemini also allows '.' and ':' (and up to 64 characters).  0,
 * or -1 with a sentence.
 */
int tgi_dialect_name_ok(const char *api, const char *name, char *err, size_t errlen);

/*
 * OpenAI strict: the schema made strict (every object closed with
 * additionalProperties:false, every property required, optional ones made
 * nullable, keywords strict mode does not support moved into the
 * description), or NULL when it cannot be (then the caller emits
 * strict:false with the schema as it is).  New reference.
 */
json_t *tgi_dialect_openai_strict(const json_t *schema);

/*
 * Gemini's legacy OpenAPI-subset `parameters`: $ref inlined (a cycle is an
 * error), no oneOf/allOf/const/additionalProperties (anyOf kept), enums of
 * strings only, types uppercase (STRING, OBJECT, ...), nullable for
 * ["x","null"].  NULL with a sentence in err.  New reference.
 */
json_t *tgi_dialect_gemini_legacy(const json_t *schema, char *err, size_t errlen);

#endif
