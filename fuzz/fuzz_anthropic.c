/*
 * fuzz_anthropic.c — libFuzzer target for the Anthropic Messages protocol
 * (src/protocol/anthropic.c): the same bytes as a whole message, as an SSE
 * stream and, when they are a JSON array, as tool definitions.
 *
 * A refusal is -1 with one printable sentence and an empty tgi_pcalls.  An
 * accepted reply has text, and every call an id and a name and exactly one
 * of: args that are a JSON object written compact (parsing them back and
 * writing them again gives the same bytes), or a printable error.  Its
 * results are one user message with one tool_result per call, in order,
 * tool_use_id the call's id, is_error exactly where asked.  Definitions
 * are refused with a printable sentence or come out one per input, each
 * with an object input_schema.  Any crash, leak, hang or sanitizer report
 * is a bug.
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

static void check_refusal(int rc, const tgi_pcalls *out, const char *err)
{
	check(rc == -1);
	check(out->n == 0 && !out->v && !out->text && !out->stop);
	check(err[0] != '\0' && printable(err));
}

static void check_call(const tgi_pcall *c)
{
	check(c->id && c->name && !c->raw && !c->echo);
	check((c->args == NULL) != (c->error == NULL));
	if (c->error) {
		check(c->error[0] != '\0' && printable(c->error));
		return;
	}
	check(c->args_len == strlen(c->args));
	json_t *v = json_loadb(c->args, c->args_len, JSON_REJECT_DUPLICATES, NULL);
	check(json_is_object(v));
	char *again = json_dumps(v, JSON_COMPACT);
	check(again && !strcmp(again, c->args));
	free(again);
	json_decref(v);
}

static void check_results(const tgi_pcalls *calls)
{
	tgi_presult *res = calloc(calls->n + 1, sizeof *res);
	check(res != NULL);
	for (size_t i = 0; i < calls->n; i++)
		res[i] = (tgi_presult){i % 2 ? "denied" : "persisted", (int)(i % 2),
		                       calls->v[i].error ? calls->v[i].error : calls->v[i].args, NULL};
	json_t *msgs = tgi_protocol_anthropic.results(calls, res);
	check(json_is_array(msgs) && json_array_size(msgs) == (calls->n ? 1u : 0u));
	if (calls->n) {
		const json_t *m = json_array_get(msgs, 0);
		const json_t *content = json_object_get(m, "content");
		check(!strcmp(json_string_value(json_object_get(m, "role")), "user"));
		check(json_array_size(content) == calls->n);
		for (size_t i = 0; i < calls->n; i++) {
			const json_t *b = json_array_get(content, i);
			check(!strcmp(json_string_value(json_object_get(b, "type")), "tool_result"));
			check(!strcmp(json_string_value(json_object_get(b, "tool_use_id")), calls->v[i].id));
			check(!strcmp(json_string_value(json_object_get(b, "content")), res[i].text));
			check(json_is_true(json_object_get(b, "is_error")) == res[i].is_error);
			check(json_object_get(b, "is_error") == NULL || res[i].is_error);
		}
	}
	char *s = json_dumps(msgs, JSON_COMPACT);
	check(s != NULL);
	free(s);
	json_decref(msgs);
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
	json_t *got = tgi_protocol_anthropic.tools(defs, 0, err, sizeof err);
	if (!got) {
		check(err[0] != '\0' && printable(err));
	} else {
		size_t i;
		json_t *t;
		check(json_array_size(got) == json_array_size(defs));
		json_array_foreach(got, i, t) {
			const json_t *schema = json_object_get(t, "input_schema");
			check(json_is_string(json_object_get(t, "name")));
			check(!strcmp(json_string_value(json_object_get(schema, "type")), "object"));
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
	check_decoded(tgi_protocol_anthropic.decode(text, size, &out, err, sizeof err), &out, err);
	err[0] = '\0';
	check_decoded(tgi_protocol_anthropic.decode_stream(text, size, &out, err, sizeof err), &out,
	              err);
	check_tools(text, size);
	return 0;
}
