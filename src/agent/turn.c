/*
 * turn.c — what the agent loop and `toolgate eval` share to ask a model
 * (agent.h): the provider chosen by name, the tool definitions as a model
 * is given them, and one turn sent and decoded.
 *
 * Owns: nothing beyond one call.  Must not: judge or run calls, or keep
 * the conversation (the loop does).
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "gate/gate.h"
#include "util/util.h"

static int known_provider(const char *p)
{
	static const char *const names[] = {"scripted", "openai-chat", "openai-responses",
	                                    "anthropic", "gemini"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++)
		if (!strcmp(p, names[i]))
			return 1;
	return 0;
}

int tgi_provider_open(const tgi_provider_opts *o, tgi_provider **out, char **errmsg)
{
	const char *name = o->provider && *o->provider ? o->provider : "scripted";
	char err[1024] = "";
	char shown[64];
	*out = NULL;
	if (!known_provider(name)) {
		tgi_sanitize(shown, sizeof shown, name);
		return tgi_fail(errmsg, "unknown provider \"%s\"; expected scripted, openai-chat, "
		                "openai-responses, anthropic or gemini", shown);
	}
	tgi_provider_opts po = *o;
	po.provider = name;
	int rc = !strcmp(name, "scripted") ? tgi_provider_scripted(&po, out, err, sizeof err)
	                                   : tgi_provider_http(&po, out, err, sizeof err);
	if (rc < 0 || !*out) {
		*out = NULL;
		return tgi_fail(errmsg, "%s", err[0] ? err : "the provider could not be started");
	}
	return 0;
}

void tgi_provider_free(tgi_provider *p)
{
	if (p && p->ops->free)
		p->ops->free(p);
}

json_t *tgi_model_tools(tg_gate *g, const char *profile, const char *principal,
                        const tgi_protocol *api, size_t *ntools, char **errmsg)
{
	char err[512];
	json_t *defs = tgi_tool_defs(g, profile, errmsg);
	if (!defs)
		return NULL;
	const tgi_principal_cfg *p = tgi_principal_of(g, principal, NULL);
	if (p) {
		size_t i = 0;
		while (i < json_array_size(defs)) {
			const char *name = json_string_value(json_object_get(json_array_get(defs, i), "name"));
			const tgi_entry *e = name ? tgi_registry_find(g->reg, name) : NULL;
			if (e && tgi_tool_hidden(g, p, e))
				json_array_remove(defs, i);
			else
				i++;
		}
	}
	if (ntools)
		*ntools = json_array_size(defs);
	json_t *tools = api->tools(defs, 0, err, sizeof err);
	json_decref(defs);
	if (!tools)
		tgi_fail(errmsg, "the tools cannot be given to %s: %s", api->name, err);
	return tools;
}

int tgi_provider_turn(tgi_provider *p, const char *model, const json_t *history,
                      const json_t *tools, tgi_agent_text_fn on_text, void *arg,
                      tgi_pcalls *reply, char *err, size_t errlen)
{
	const tgi_protocol *api = p->api;
	int http = strcmp(p->ops->name, "scripted") != 0;
	json_t *body = tgi_dialogue_request(api, model, history, tools, http);
	if (!body) {
		tgi_snprintf(err, errlen, "cannot build a %s request", api->name);
		return -1;
	}
	/* Gemini names the model and the stream in its URL: the HTTP provider
	 * takes them from the body */
	if (http && !strcmp(api->name, "gemini")) {
		if (model && *model && !json_object_get(body, "model"))
			json_object_set_new(body, "model", json_string(model));
		if (!json_object_get(body, "stream"))
			json_object_set_new(body, "stream", json_true());
	}
	char perr[1024] = "", derr[1024] = "";
	char *bytes = NULL;
	size_t len = 0;
	int stream = 0;
	int rc = p->ops->send(p, body, on_text, arg, &bytes, &len, &stream, perr, sizeof perr);
	json_decref(body);
	if (rc < 0) {
		free(bytes);
		tgi_snprintf(err, errlen, "%s", perr[0] ? perr : "the provider failed");
		return -1;
	}
	rc = (stream ? api->decode_stream : api->decode)(bytes ? bytes : "", len, reply, derr,
	                                                   sizeof derr);
	free(bytes);
	if (rc < 0) {
		tgi_snprintf(err, errlen, "the model's reply is not a %s %s: %s", api->name,
		             stream ? "stream" : "response", derr);
		return -1;
	}
	return 0;
}
