/*
 * fuzz_openai_responses.c — libFuzzer target for the OpenAI Responses
 * protocol (src/protocol/openai_responses.c): the same bytes as a whole
 * response, as an SSE stream and, when they are a JSON array, as tool
 * definitions.
 *
 * A refusal is -1 with one printable sentence and an empty tgi_pcalls.  An
 * accepted reply has text, and every call either a printable error or an
 * id, a name and its input: JSON text that parses back for a function
 * call, any text for a custom call (raw).  Its results are one item per
 * call, in order: function_call_output or custom_tool_call_output as the
 * call was, call_id the call's id, output the text given.  Definitions are
 * refused with a printable sentence or come out one per input, each a
 * function with an object of parameters and a boolean strict.  Any crash,
 * leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "protocol/protocol.h"

#define INPUT_MAX (64u << 10)

static const tgi_protocol *P = &tgi_protocol_openai_responses;

static int str_is(const json_t *v, const char *want)
{
	return json_is_string(v) && !strcmp(json_string_value(v), want);
}

static void check_refusal(int rc, const tgi_pcalls *out, const char *err)
{
	check(rc == -1);
	check(out->n == 0 && !out->v && !out->text && !out->stop);
	check(err[0] != '\0' && printable(err));
}

static void check_call(const tgi_pcall *c)
{
	check(!c->echo);
	check(!c->args || c->args_len == strlen(c->args));
	if (c->error) {
		check(c->error[0] != '\0' && printable(c->error));
		return;
	}
	check(c->id && c->name && c->args);
	if (c->raw)
		return;
	json_t *v = json_loadb(c->args, c->args_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	check(v != NULL);
	json_decref(v);
}

static void check_results(const tgi_pcalls *calls)
{
	tgi_presult *res = calloc(calls->n + 1, sizeof *res);
	check(res != NULL);
	for (size_t i = 0; i < calls->n; i++)
		res[i] = (tgi_presult){i % 2 ? "denied" : "persisted", (int)(i % 2),
		                       calls->v[i].error ? calls->v[i].error : calls->v[i].name, NULL};
	json_t *items = P->results(calls, res);
	check(json_is_array(items) && json_array_size(items) == calls->n);
	for (size_t i = 0; i < calls->n; i++) {
		const json_t *it = json_array_get(items, i);
		const tgi_pcall *c = &calls->v[i];
		check(str_is(json_object_get(it, "type"), c->raw ? "custom_tool_call_output"
		                                                 : "function_call_output"));
		check(str_is(json_object_get(it, "call_id"), c->id ? c->id : ""));
		check(str_is(json_object_get(it, "output"), res[i].text ? res[i].text : ""));
		check(json_object_size(it) == 3);
	}
	char *s = json_dumps(items, JSON_COMPACT);
	check(s != NULL);
	free(s);
	json_decref(items);
	free(res);
}

static void check_decoded(int rc, tgi_pcalls *out, const char *err)
{
	if (rc != 0) {
		check_refusal(rc, out, err);
	} else {
		check(out->text != NULL);
		for (size_t i = 0; i < out->n; i++)
			check_call(&out->v[i]);
		check_results(out);
	}
	tgi_pcalls_free(out);
}

static void check_tools(const char *text, size_t size)
{
	char err[512] = "";
	json_t *defs = json_loadb(text, size, 0, NULL);
	if (!json_is_array(defs)) {
		json_decref(defs);
		return;
	}
	json_t *got = P->tools(defs, 0, err, sizeof err);
	if (!got) {
		check(err[0] != '\0' && printable(err));
	} else {
		size_t i;
		json_t *t;
		check(json_array_size(got) == json_array_size(defs));
		json_array_foreach(got, i, t) {
			check(str_is(json_object_get(t, "type"), "function"));
			check(json_is_string(json_object_get(t, "name")));
			check(json_is_object(json_object_get(t, "parameters")));
			check(json_is_boolean(json_object_get(t, "strict")));
		}
		json_decref(got);
	}
	json_decref(defs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	const char *text = (const char *)data;
	char err[512];
	tgi_pcalls out;

	err[0] = '\0';
	check_decoded(P->decode(text, size, &out, err, sizeof err), &out, err);
	err[0] = '\0';
	check_decoded(P->decode_stream(text, size, &out, err, sizeof err), &out, err);
	check_tools(text, size);
	return 0;
}
