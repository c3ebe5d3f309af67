/*
 * scripted.c — the offline provider (agent.h): replays a script of
 * assistant turns written in one of the four APIs' response shapes.  The
 * default script is the built-in demo (demo_script.c); `--script FILE`
 * names another.  The format is in scripted.h.
 *
 * Each send() gives the next turn, in order: a response body as compact
 * JSON (stream 0) or a stream turn's SSE text as it is (stream 1).  The
 * request is not answered, only checked to be one of the script's API (the
 * conversation's array and the shape of each tool definition), so that a
 * dialogue written for the wrong API fails here and not in a test's
 * expectations.  Turns run out with "the script has no turn N".  A stream
 * turn's text is handed to on_text once, as an HTTP provider would show
 * it while it arrives.
 *
 * A script is checked whole when it is loaded, each problem one sentence
 * naming where it is (turns[3] is the fourth turn): not JSON (duplicate
 * keys refused), an unknown key, an unknown api, no turns, a turn that is
 * neither a response object nor {"stream": "..."}.  Whether a turn
 * decodes is the loop's business (a script may hold a broken reply on
 * purpose, to see it refused).
 *
 * Owns: the script and the place in it.  Must not: run calls, or answer
 * anything from the request's content.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/scripted.h"
#include "util/fs.h"
#include "util/util.h"

#define SHOWN 96   /* bytes of a script's string echoed in a message */

typedef struct scripted {
	tgi_provider base;   /* first: a tgi_provider * is a scripted * */
	json_t      *turns;  /* the script's turns array, checked */
	size_t       next;   /* index of the next turn to give */
} scripted;

/* ---- loading ---- */

/* Is turn a stream turn: {"stream": "<text>"} and nothing else? */
static int is_stream_turn(const json_t *turn)
{
	return json_object_size(turn) == 1 && json_object_get(turn, "stream");
}

/* A turn is a response object, or a stream turn with a non-empty string. */
static int turn_ok(const json_t *turn, size_t i, char *err, size_t errlen)
{
	char what[64];
	if (!json_is_object(turn)) {
		tgi_snprintf(err, errlen, "the script's turns[%zu] is %s, not a response object "
		             "or {\"stream\": \"...\"}", i, tgi_json_describe(turn, what, sizeof what));
		return -1;
	}
	if (json_object_size(turn) == 0) {
		tgi_snprintf(err, errlen, "the script's turns[%zu] is an empty object", i);
		return -1;
	}
	if (!is_stream_turn(turn))
		return 0;
	const json_t *s = json_object_get(turn, "stream");
	if (!json_is_string(s) || json_string_length(s) == 0) {
		tgi_snprintf(err, errlen, "the script's turns[%zu].stream must be the SSE text of a "
		             "reply, a non-empty string, not %s", i,
		             tgi_json_describe(s, what, sizeof what));
		return -1;
	}
	return 0;
}

/* The api named by the script, or NULL with a sentence. */
static const tgi_protocol *script_api(const json_t *root, char *err, size_t errlen)
{
	const json_t *v = json_object_get(root, "api");
	char shown[SHOWN], what[64];
	if (!v) {
		tgi_snprintf(err, errlen, "the script has no \"api\" (openai-chat, openai-responses, "
		             "anthropic or gemini)");
		return NULL;
	}
	if (!json_is_string(v)) {
		tgi_snprintf(err, errlen, "the script's \"api\" must be a string, not %s",
		             tgi_json_describe(v, what, sizeof what));
		return NULL;
	}
	const tgi_protocol *api = tgi_protocol_find(json_string_value(v));
	if (!api) {
		tgi_sanitize(shown, sizeof shown, json_string_value(v));
		tgi_snprintf(err, errlen, "the script's api \"%s\" is not one of openai-chat, "
		             "openai-responses, anthropic, gemini", shown);
	}
	return api;
}

/* Only api, turns and description: a misspelt key is an error, not ignored. */
static int keys_ok(const json_t *root, char *err, size_t errlen)
{
	const char *key;
	const json_t *v;
	char shown[SHOWN];
	json_object_foreach((json_t *)root, key, v) {
		if (strcmp(key, "api") && strcmp(key, "turns") && strcmp(key, "description")) {
			tgi_sanitize(shown, sizeof shown, key);
			tgi_snprintf(err, errlen, "the script has an unknown key \"%s\" (it may have api, "
			             "turns and description)", shown);
			return -1;
		}
	}
	return 0;
}

/* The checked turns array of root (borrowed), or NULL with a sentence. */
static json_t *script_turns(json_t *root, char *err, size_t errlen)
{
	json_t *turns = json_object_get(root, "turns");
	char what[64];
	if (!turns) {
		tgi_snprintf(err, errlen, "the script has no \"turns\" (an array of replies)");
		return NULL;
	}
	if (!json_is_array(turns)) {
		tgi_snprintf(err, errlen, "the script's \"turns\" must be an array of replies, not %s",
		             tgi_json_describe(turns, what, sizeof what));
		return NULL;
	}
	if (json_array_size(turns) == 0) {
		tgi_snprintf(err, errlen, "the script's \"turns\" is empty: it needs at least one reply");
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(turns); i++)
		if (turn_ok(json_array_get(turns, i), i, err, errlen) < 0)
			return NULL;
	return turns;
}

static const tgi_provider_ops scripted_ops;

int tgi_scripted_from_text(const char *text, size_t len, tgi_provider **out, char *err,
                           size_t errlen)
{
	json_error_t je;
	char shown[256], what[64];
	*out = NULL;
	if (len > TGI_SCRIPT_MAX) {
		tgi_snprintf(err, errlen, "the script is over %u bytes", TGI_SCRIPT_MAX);
		return -1;
	}
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		tgi_sanitize(shown, sizeof shown, je.text);
		tgi_snprintf(err, errlen, "the script is not valid JSON (line %d, column %d): %s",
		             je.line, je.column, shown);
		return -1;
	}
	if (!json_is_object(root)) {
		tgi_snprintf(err, errlen, "the script must be a JSON object {\"api\", \"turns\"}, not %s",
		             tgi_json_describe(root, what, sizeof what));
		json_decref(root);
		return -1;
	}
	const tgi_protocol *api;
	json_t *turns;
	if (keys_ok(root, err, errlen) < 0 || !(api = script_api(root, err, errlen)) ||
	    !(turns = script_turns(root, err, errlen))) {
		json_decref(root);
		return -1;
	}
	scripted *s = tgi_xcalloc(1, sizeof *s);
	s->base.ops = &scripted_ops;
	s->base.api = api;
	s->turns = json_incref(turns);
	json_decref(root);
	*out = &s->base;
	return 0;
}

/* The script file, whole (a regular file, at most TGI_SCRIPT_MAX bytes). */
static int script_read(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	char shown[SHOWN];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int r = fd < 0 ? -errno : tgi_read_fd(fd, TGI_SCRIPT_MAX, text, len);
	if (fd >= 0)
		close(fd);
	if (r >= 0)
		return 0;
	tgi_sanitize(shown, sizeof shown, path);
	if (r == -EFBIG)
		tgi_snprintf(err, errlen, "cannot read the script %s: it is over %u bytes", shown,
		             TGI_SCRIPT_MAX);
	else if (r == -EINVAL || r == -EISDIR)
		tgi_snprintf(err, errlen, "cannot read the script %s: not a regular file", shown);
	else
		tgi_snprintf(err, errlen, "cannot read the script %s: %s", shown, strerror(-r));
	return -1;
}

int tgi_provider_scripted(const tgi_provider_opts *o, tgi_provider **out, char *err,
                          size_t errlen)
{
	const char *path = o ? o->script : NULL;
	char *text = NULL, inner[512], shown[SHOWN];
	size_t len;
	*out = NULL;
	if (!path || !*path) {
		const char *demo = tgi_agent_demo_script();
		if (tgi_scripted_from_text(demo, strlen(demo), out, inner, sizeof inner) == 0)
			return 0;
		tgi_snprintf(err, errlen, "the built-in demo script: %s", inner);
		return -1;
	}
	if (script_read(path, &text, &len, err, errlen) < 0)
		return -1;
	int r = tgi_scripted_from_text(text, len, out, inner, sizeof inner);
	free(text);
	if (r < 0) {
		tgi_sanitize(shown, sizeof shown, path);
		tgi_snprintf(err, errlen, "%s: %s", shown, inner);
	}
	return r;
}

/* ---- one turn ---- */

/* Is each tool definition shaped as api's (a dialogue for another API, or
 * definitions exported in the wrong format, are refused)? */
static int tool_ok(const char *api, const json_t *t)
{
	if (!json_is_object(t))
		return 0;
	const char *type = json_string_value(json_object_get(t, "type"));
	if (!strcmp(api, "openai-chat"))
		return type && (!strcmp(type, "function") ? json_is_object(json_object_get(t, "function"))
		                                          : !strcmp(type, "custom"));
	if (!strcmp(api, "openai-responses"))
		return type && !json_object_get(t, "function");
	if (!strcmp(api, "anthropic"))
		return json_is_string(json_object_get(t, "name")) && !json_object_get(t, "function");
	return !json_object_get(t, "function") && !json_object_get(t, "input_schema");
}

/* The key a request of api holds its conversation in, and what it must be. */
static int request_ok(const tgi_protocol *api, const json_t *body, char *err, size_t errlen)
{
	const char *name = api->name;
	const char *key = !strcmp(name, "openai-responses") ? "input"
	                : !strcmp(name, "gemini")           ? "contents" : "messages";
	const json_t *conv = json_object_get(body, key);
	const json_t *tools = json_object_get(body, "tools");
	size_t i;
	if (!json_is_object(body)) {
		tgi_snprintf(err, errlen, "the request is not a JSON object");
		return -1;
	}
	if (!json_is_array(conv) && !(json_is_string(conv) && !strcmp(key, "input"))) {
		tgi_snprintf(err, errlen, "the request is not one of the %s API: it has no \"%s\" array",
		             name, key);
		return -1;
	}
	if (tools && !json_is_array(tools)) {
		tgi_snprintf(err, errlen, "the request's \"tools\" is not an array");
		return -1;
	}
	for (i = 0; i < json_array_size(tools); i++)
		if (!tool_ok(name, json_array_get(tools, i))) {
			tgi_snprintf(err, errlen, "the request's tools[%zu] is not a tool definition of the %s API",
			             i, name);
			return -1;
		}
	return 0;
}

/* Show a stream turn's text as a live provider would: decoded, once. */
static void stream_text(const tgi_protocol *api, const char *text, size_t len,
                        tgi_agent_text_fn on_text, void *arg)
{
	tgi_pcalls calls;
	char err[256];
	if (!on_text || api->decode_stream(text, len, &calls, err, sizeof err) < 0)
		return;
	if (calls.text && *calls.text)
		on_text(arg, calls.text, strlen(calls.text));
	tgi_pcalls_free(&calls);
}

static int scripted_send(tgi_provider *p, const json_t *body, tgi_agent_text_fn on_text,
                         void *arg, char **reply, size_t *len, int *stream, char *err,
                         size_t errlen)
{
	scripted *s = (scripted *)p;
	size_t n = json_array_size(s->turns);
	char inner[256];
	*reply = NULL;
	*len = 0;
	*stream = 0;
	if (request_ok(p->api, body, inner, sizeof inner) < 0) {
		tgi_snprintf(err, errlen, "turn %zu: %s", s->next + 1, inner);
		return -1;
	}
	if (s->next >= n) {
		tgi_snprintf(err, errlen, "the script has no turn %zu (it has %zu)", s->next + 1, n);
		return -1;
	}
	const json_t *turn = json_array_get(s->turns, s->next++);
	if (is_stream_turn(turn)) {
		const json_t *sse = json_object_get(turn, "stream");
		*len = json_string_length(sse);
		*reply = tgi_strndup(json_string_value(sse), *len);
		*stream = 1;
		stream_text(p->api, *reply, *len, on_text, arg);
		return 0;
	}
	*reply = json_dumps(turn, JSON_COMPACT);
	if (!*reply) {
		tgi_snprintf(err, errlen, "turn %zu could not be written out as JSON", s->next);
		return -1;
	}
	*len = strlen(*reply);
	return 0;
}

static void scripted_free(tgi_provider *p)
{
	scripted *s = (scripted *)p;
	if (!s)
		return;
	json_decref(s->turns);
	free(s);
}

size_t tgi_scripted_turns_given(const tgi_provider *p)
{
	return p && p->ops == &scripted_ops ? ((const scripted *)p)->next : 0;
}

static const tgi_provider_ops scripted_ops = {
	.name = "scripted",
	.send = scripted_send,
	.free = scripted_free,
};
