/*
 * agent.h — `toolgate agent`: a model using tools through the gate
 * (src/agent/).
 *
 *   loop.c      the turns: request → reply → every call through the gate as
 *               one batch → results appended → again, until a reply has no
 *               calls or max_turns; the transcript; sessions in the ledger
 *   dialogue.c  what each API's conversation looks like: the request body
 *               for a turn, the assistant entry rebuilt from a decoded reply
 *               (a streamed one included), the first user entry
 *   scripted.c  the offline provider: replays a script of assistant turns
 *               written in one of the four APIs' response shapes; the demo
 *               script is compiled in
 *   turn.c      what the loop and `toolgate eval` share: the provider by
 *               name, the tools a model is given, one turn sent and decoded
 *   http.c      the HTTP providers over libcurl (src/util/dl.h): keys from
 *               the environment, streaming SSE shown live, timeouts,
 *               retries with backoff on 429/5xx honouring retry-after, one
 *               line for 400/401/403/404 with the provider's own message
 *
 * A provider turns one request body into one reply: the raw bytes of a
 * JSON response or of an SSE stream, which the API's decoder in
 * src/protocol/ reads (calls are counted from call blocks, never from
 * finish_reason).  Keys never leave http.c: not in the ledger, the events
 * or an error message.
 *
 * Owns: the conversation.  Must not: judge or run calls (the gate does,
 * through tgi_call_batch / tg_call_batch).
 */
#ifndef TGI_AGENT_H
#define TGI_AGENT_H

#include <stddef.h>
#include <jansson.h>

#include "protocol/protocol.h"

/* ---- providers ---- */

/* Live text of a streamed reply as it arrives (may be NULL). */
typedef void (*tgi_agent_text_fn)(void *arg, const char *text, size_t len);

typedef struct tgi_provider tgi_provider;

typedef struct tgi_provider_ops {
	const char *name;   /* "scripted", "openai-chat", ... */
	/* One turn: body is the request (dialogue.c); on 0 *reply (caller frees)
	 * holds len bytes, *stream says whether they are an SSE stream.  -1 with
	 * a one-line sentence in err (a 401 with the provider's message, a
	 * script with no more turns, a timeout after the retries). */
	int  (*send)(tgi_provider *p, const json_t *body, tgi_agent_text_fn on_text, void *arg,
	             char **reply, size_t *len, int *stream, char *err, size_t errlen);
	void (*free)(tgi_provider *p);
} tgi_provider_ops;

struct tgi_provider {
	const tgi_provider_ops *ops;
	const tgi_protocol     *api;    /* the dialect of its requests and replies */
	const char             *model;  /* the model it asks for (the API's default when none
	                                   was given); NULL: the scripted provider */
};

typedef struct tgi_provider_opts {
	const char *provider;   /* scripted (default) | openai-chat | openai-responses |
	                           anthropic | gemini */
	const char *model;      /* NULL: the provider's default */
	const char *base_url;   /* NULL: the API's own */
	const char *script;     /* scripted: a file, NULL: the built-in demo script */
	double      timeout_s;  /* per request (0: 120) */
	int         retries;    /* on 429/5xx/connection errors (0: 4) */
} tgi_provider_opts;

/* scripted.c */
int tgi_provider_scripted(const tgi_provider_opts *o, tgi_provider **out, char *err,
                          size_t errlen);
/* The built-in demo script (JSON text, static). */
const char *tgi_agent_demo_script(void);

/* http.c: the key from OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY
 * (not needed with --base-url for OpenAI-compatible local servers). */
int tgi_provider_http(const tgi_provider_opts *o, tgi_provider **out, char *err, size_t errlen);

/* ---- turn.c: asking a model (the loop and toolgate eval) ---- */

struct tg_gate;

/* The provider o->provider names (NULL: scripted).  0, or -1 with errmsg
 * (an unknown name, a missing key, a script that does not load). */
int  tgi_provider_open(const tgi_provider_opts *o, tgi_provider **out, char **errmsg);
void tgi_provider_free(tgi_provider *p);

/* The tool definitions a model is given under profile (NULL: the gate's)
 * in api's shape: the profile's, less those the principal could never use
 * (as an MCP client's list); *ntools (may be NULL) how many.  New
 * reference, or NULL with errmsg. */
json_t *tgi_model_tools(struct tg_gate *g, const char *profile, const char *principal,
                        const tgi_protocol *api, size_t *ntools, char **errmsg);

/* One turn: history (borrowed) and tools sent as p's API asks (a stream
 * from an HTTP provider), the reply decoded into reply.  0, or -1 with a
 * sentence in err (the provider's error, or a reply that is not the API's). */
int tgi_provider_turn(tgi_provider *p, const char *model, const json_t *history,
                      const json_t *tools, tgi_agent_text_fn on_text, void *arg,
                      tgi_pcalls *reply, char *err, size_t errlen);

/* ---- dialogue.c: one API's conversation ---- */

/* The request body of a turn: history (an array of this API's messages,
 * items or contents, borrowed), the tools array in its shape, model, and
 * whether to ask for a stream.  New reference. */
json_t *tgi_dialogue_request(const tgi_protocol *api, const char *model, const json_t *history,
                             const json_t *tools, int stream);

/* The first entry of a conversation: the user's prompt.  New reference. */
json_t *tgi_dialogue_user(const tgi_protocol *api, const char *prompt);

/* The assistant's turn as history entries (an array: Responses has one item
 * per output), rebuilt from what was decoded, so a streamed reply and a JSON
 * one give the same history (text, calls with their ids and arguments,
 * Gemini's thought signatures).  New reference. */
json_t *tgi_dialogue_assistant(const tgi_protocol *api, const tgi_pcalls *reply);

#endif
