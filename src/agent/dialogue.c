/*
 * dialogue.c — what a conversation looks like in each of the four APIs
 * (agent.h): the request body of a turn, the user's first entry, and the
 * assistant's entries rebuilt from a decoded reply.
 *
 *                   request body                          user entry
 *   openai-chat       {model, messages, tools?, stream}     {role:"user", content}
 *   openai-responses  {model, input, tools?, stream}        {type:"message", role:"user",
 *                                                            content}
 *   anthropic         {model, max_tokens, messages,         {role:"user", content}
 *                      tools?, stream}
 *   gemini            {contents, tools?}                    {role:"user", parts:[{text}]}
 *
 * Gemini names the model and the choice of a stream in the URL
 * (models/M:generateContent or :streamGenerateContent?alt=sse), so they
 * are not in its body; http.c builds that URL.  A key whose value is
 * missing (no model, no tools or an empty tools array) is left out.
 *
 * The assistant's turn, from tgi_pcalls (text, then calls in call order):
 *
 *   openai-chat       [{role:"assistant", content: text | null,
 *                       tool_calls:[{id, type:"function", function:{name, arguments}}
 *                                 | {id, type:"custom", custom:{name, input}}]}]
 *   openai-responses  [{type:"message", role:"assistant",
 *                       content:[{type:"output_text", text}]}?,
 *                      {type:"function_call", call_id, name, arguments}
 *                    | {type:"custom_tool_call", call_id, name, input} ...]
 *   anthropic         [{role:"assistant", content:[{type:"text", text}?,
 *                       {type:"tool_use", id, name, input: object} ...]}]
 *   gemini            [{role:"model", parts:[{text}?, {functionCall:{name, args, id?},
 *                       thoughtSignature?} ...]}]
 *
 * Every call is there, an invalid one included, so that the result that
 * answers it has its partner: its arguments as they came (Chat, Responses)
 * or, where the API wants an object and there is none, {} (Anthropic,
 * Gemini).  Gemini's made-up ids ("gemini-<index>-<name>") are not sent
 * back: the API never gave them; the call's echo (its thoughtSignature)
 * goes on its functionCall part, "in the exact part where it was
 * received".  What a reply had that the decoder does not keep (reasoning
 * items, thinking blocks, thought parts, text between calls as separate
 * parts) is not rebuilt: a JSON reply and its stream give the same entries.
 * A reply with neither text nor calls adds nothing (an empty array): the
 * APIs refuse empty assistant content.
 *
 * Strings from the model go through tgi_json_text (valid UTF-8 out).
 *
 * Owns: the conversation's shapes.  Must not: send anything, decode a
 * reply (src/protocol/ does) or judge a call.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "util/util.h"

/* Anthropic's required cap on a reply: room for a tool call that writes a
 * file (a cut call is an invalid one). */
#define ANTHROPIC_MAX_TOKENS 8192

/* ---- small pieces ---------------------------------------------------------- */

/* A JSON string of s ("" for NULL). */
static json_t *text_of(const char *s)
{
	return tgi_json_text(s ? s : "", s ? strlen(s) : 0);
}

/* A call's arguments (or raw input) as a JSON string: as they came, or
 * "{}" (function) / "" (raw) when nothing came. */
static json_t *args_text(const tgi_pcall *c)
{
	if (c->args)
		return tgi_json_text(c->args, c->args_len);
	return json_string(c->raw ? "" : "{}");
}

/* A call's arguments as an object: parsed, or {} when they are not a JSON
 * object (an invalid call keeps its place with no arguments). */
static json_t *args_object(const tgi_pcall *c)
{
	json_t *v = NULL;

	if (c->args && !c->raw)
		v = json_loadb(c->args, c->args_len, 0, NULL);
	if (json_is_object(v))
		return v;
	json_decref(v);
	return json_object();
}

/* Is there text to keep? */
static int has_text(const tgi_pcalls *r)
{
	return r->text && *r->text;
}

/* Copy what is given into body under key: nothing when v is NULL; an
 * array only when it has elements. */
static void put_copy(json_t *body, const char *key, const json_t *v)
{
	if (!v || (json_is_array(v) && !json_array_size(v)))
		return;
	json_object_set_new(body, key, json_deep_copy(v));
}

static void put_model(json_t *body, const char *model)
{
	if (model && *model)
		json_object_set_new(body, "model", text_of(model));
}

/* ---- openai-chat ----------------------------------------------------------- */

static json_t *chat_request(const char *model, const json_t *history, const json_t *tools,
                            int stream)
{
	json_t *body = json_object();
	put_model(body, model);
	json_object_set_new(body, "messages", history ? json_deep_copy(history) : json_array());
	put_copy(body, "tools", tools);
	json_object_set_new(body, "stream", json_boolean(stream));
	return body;
}

static json_t *chat_user(const char *prompt)
{
	return json_pack("{s:s, s:o}", "role", "user", "content", text_of(prompt));
}

static json_t *chat_call(const tgi_pcall *c)
{
	json_t *tc = json_pack("{s:o}", "id", text_of(c->id));
	if (c->raw) {
		json_object_set_new(tc, "type", json_string("custom"));
		json_object_set_new(tc, "custom", json_pack("{s:o, s:o}", "name", text_of(c->name),
		                                            "input", args_text(c)));
	} else {
		json_object_set_new(tc, "type", json_string("function"));
		json_object_set_new(tc, "function", json_pack("{s:o, s:o}", "name", text_of(c->name),
		                                              "arguments", args_text(c)));
	}
	return tc;
}

static json_t *chat_assistant(const tgi_pcalls *r)
{
	if (!has_text(r) && !r->n)
		return json_array();
	json_t *m = json_pack("{s:s}", "role", "assistant");
	json_object_set_new(m, "content", has_text(r) ? text_of(r->text) : json_null());
	if (r->n) {
		json_t *calls = json_array();
		for (size_t i = 0; i < r->n; i++)
			json_array_append_new(calls, chat_call(&r->v[i]));
		json_object_set_new(m, "tool_calls", calls);
	}
	return json_pack("[o]", m);
}

/* ---- openai-responses ------------------------------------------------------ */

static json_t *resp_request(const char *model, const json_t *history, const json_t *tools,
                            int stream)
{
	json_t *body = json_object();
	put_model(body, model);
	json_object_set_new(body, "input", history ? json_deep_copy(history) : json_array());
	put_copy(body, "tools", tools);
	json_object_set_new(body, "stream", json_boolean(stream));
	return body;
}

static json_t *resp_user(const char *prompt)
{
	return json_pack("{s:s, s:s, s:o}", "type", "message", "role", "user", "content",
	                 text_of(prompt));
}

static json_t *resp_call(const tgi_pcall *c)
{
	if (c->raw)
		return json_pack("{s:s, s:o, s:o, s:o}", "type", "custom_tool_call",
		                 "call_id", text_of(c->id), "name", text_of(c->name),
		                 "input", args_text(c));
	return json_pack("{s:s, s:o, s:o, s:o}", "type", "function_call",
	                 "call_id", text_of(c->id), "name", text_of(c->name),
	                 "arguments", args_text(c));
}

static json_t *resp_assistant(const tgi_pcalls *r)
{
	json_t *items = json_array();

	if (has_text(r)) {
		json_t *part = json_pack("{s:s, s:o}", "type", "output_text", "text", text_of(r->text));
		json_array_append_new(items, json_pack("{s:s, s:s, s:[o]}", "type", "message",
		                                       "role", "assistant", "content", part));
	}
	for (size_t i = 0; i < r->n; i++)
		json_array_append_new(items, resp_call(&r->v[i]));
	return items;
}

/* ---- anthropic ------------------------------------------------------------- */

static json_t *anth_request(const char *model, const json_t *history, const json_t *tools,
                            int stream)
{
	json_t *body = json_object();
	put_model(body, model);
	json_object_set_new(body, "max_tokens", json_integer(ANTHROPIC_MAX_TOKENS));
	json_object_set_new(body, "messages", history ? json_deep_copy(history) : json_array());
	put_copy(body, "tools", tools);
	json_object_set_new(body, "stream", json_boolean(stream));
	return body;
}

static json_t *anth_user(const char *prompt)
{
	return json_pack("{s:s, s:o}", "role", "user", "content", text_of(prompt));
}

static json_t *anth_assistant(const tgi_pcalls *r)
{
	json_t *content = json_array();

	if (!has_text(r) && !r->n) {
		json_decref(content);
		return json_array();
	}
	if (has_text(r))
		json_array_append_new(content, json_pack("{s:s, s:o}", "type", "text",
		                                         "text", text_of(r->text)));
	for (size_t i = 0; i < r->n; i++) {
		const tgi_pcall *c = &r->v[i];
		json_array_append_new(content, json_pack("{s:s, s:o, s:o, s:o}", "type", "tool_use",
		                                         "id", text_of(c->id), "name", text_of(c->name),
		                                         "input", args_object(c)));
	}
	return json_pack("[{s:s, s:o}]", "role", "assistant", "content", content);
}

/* ---- gemini ---------------------------------------------------------------- */

static json_t *gemini_request(const char *model, const json_t *history, const json_t *tools,
                              int stream)
{
	json_t *body = json_object();
	(void)model;
	(void)stream;
	json_object_set_new(body, "contents", history ? json_deep_copy(history) : json_array());
	put_copy(body, "tools", tools);
	return body;
}

static json_t *gemini_user(const char *prompt)
{
	return json_pack("{s:s, s:[{s:o}]}", "role", "user", "parts", "text", text_of(prompt));
}

static json_t *gemini_call(const tgi_pcall *c, size_t index)
{
	json_t *fc = json_pack("{s:o, s:o}", "name", text_of(c->name), "args", args_object(c));
	if (c->id && *c->id && !tgi_gemini_id_made_up(c, index))
		json_object_set_new(fc, "id", text_of(c->id));
	json_t *part = json_pack("{s:o}", "functionCall", fc);
	/* the echo is what the part carried beside the call: its thoughtSignature */
	const char *key;
	json_t *v;
	if (json_is_object(c->echo))
		json_object_foreach(c->echo, key, v)
			if (strcmp(key, "functionCall") != 0)
				json_object_set_new(part, key, json_deep_copy(v));
	return part;
}

static json_t *gemini_assistant(const tgi_pcalls *r)
{
	json_t *parts = json_array();

	if (!has_text(r) && !r->n) {
		json_decref(parts);
		return json_array();
	}
	if (has_text(r))
		json_array_append_new(parts, json_pack("{s:o}", "text", text_of(r->text)));
	for (size_t i = 0; i < r->n; i++)
		json_array_append_new(parts, gemini_call(&r->v[i], i));
	return json_pack("[{s:s, s:o}]", "role", "model", "parts", parts);
}

/* ---- the table ------------------------------------------------------------- */

typedef struct dialogue {
	const char *api;
	json_t *(*request)(const char *model, const json_t *history, const json_t *tools,
	                   int stream);
	json_t *(*user)(const char *prompt);
	json_t *(*assistant)(const tgi_pcalls *reply);
} dialogue;

static const dialogue dialogues[] = {
	{ "openai-chat",      chat_request,   chat_user,   chat_assistant   },
	{ "openai-responses", resp_request,   resp_user,   resp_assistant   },
	{ "anthropic",        anth_request,   anth_user,   anth_assistant   },
	{ "gemini",           gemini_request, gemini_user, gemini_assistant },
};

static const dialogue *dialogue_of(const tgi_protocol *api)
{
	if (!api || !api->name)
		return NULL;
	for (size_t i = 0; i < sizeof dialogues / sizeof dialogues[0]; i++)
		if (strcmp(dialogues[i].api, api->name) == 0)
			return &dialogues[i];
	return NULL;
}

/* ---- agent.h --------------------------------------------------------------- */

json_t *tgi_dialogue_request(const tgi_protocol *api, const char *model, const json_t *history,
                             const json_t *tools, int stream)
{
	const dialogue *d = dialogue_of(api);
	return d ? d->request(model, history, tools, stream) : NULL;
}

json_t *tgi_dialogue_user(const tgi_protocol *api, const char *prompt)
{
	const dialogue *d = dialogue_of(api);
	return d ? d->user(prompt) : NULL;
}

json_t *tgi_dialogue_assistant(const tgi_protocol *api, const tgi_pcalls *reply)
{
	const dialogue *d = dialogue_of(api);
	if (!d)
		return NULL;
	if (!reply)
		return json_array();
	return d->assistant(reply);
}
