/*
 * fuzz_scripted.c — libFuzzer target for the scripted provider's script
 * (src/agent/scripted.c): the bytes as a script.
 *
 * A refusal is -1 with one printable sentence and no provider.  An
 * accepted script gives its turns in order to a request of its own API,
 * each as bytes of the length said, flagged as a stream or as compact JSON
 * that parses back; a stream turn's text reaches on_text non-empty.  After
 * the last turn every send is refused with "the script has no turn N", N
 * one past the count.
 * Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "agent/scripted.h"

#define INPUT_MAX (64u << 10)

static json_t *request(const char *api)
{
	if (!strcmp(api, "openai-responses"))
		return json_pack("{s:[]}", "input");
	if (!strcmp(api, "gemini"))
		return json_pack("{s:[]}", "contents");
	return json_pack("{s:[]}", "messages");
}

static void on_text(void *arg, const char *text, size_t len)
{
	size_t *max = arg;
	check(text != NULL && len > 0 && len <= *max);
}

static void replay(tgi_provider *p)
{
	json_t *body = request(p->api->name);
	char err[512], want[64], *reply;
	size_t len, given = 0;
	int stream;
	for (;;) {
		err[0] = '\0';
		reply = NULL;
		size_t max = INPUT_MAX;
		if (p->ops->send(p, body, on_text, &max, &reply, &len, &stream, err, sizeof err) < 0)
			break;
		given++;
		check(reply != NULL && strlen(reply) == len && (stream == 0 || stream == 1));
		if (!stream) {
			json_t *v = json_loadb(reply, len, 0, NULL);
			check(json_is_object(v));
			json_decref(v);
		}
		free(reply);
	}
	check(reply == NULL && printable(err));
	check(given == tgi_scripted_turns_given(p));
	snprintf(want, sizeof want, "the script has no turn %zu (it has %zu)", given + 1, given);
	check(!strcmp(err, want));
	json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	tgi_provider *p = NULL;
	char err[512] = "";
	if (tgi_scripted_from_text((const char *)data, size, &p, err, sizeof err) < 0) {
		check(p == NULL && err[0] != '\0' && printable(err));
		return 0;
	}
	check(p != NULL && p->api != NULL);
	replay(p);
	p->ops->free(p);
	return 0;
}
