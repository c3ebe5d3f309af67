/*
 * fuzz_openai_chat.c — libFuzzer target for the OpenAI Chat Completions
 * protocol (src/protocol/openai_chat.c).
 *
 * The input is decoded as a whole response and as an SSE stream.  A
 * refusal is -1 with one printable sentence and nothing left in the
 * output.  A decode that succeeds keeps protocol.h's promises: a text, at
 * most 1024 calls, args NUL-terminated at args_len, a call without an
 * error has args and, unless raw, args that are JSON; errors are one
 * printable sentence; no echo.  results() then answers every call with one
 * role:"tool" message, in order, carrying its id.  When the input is a
 * JSON array it is also tried as tool definitions: a list of the same
 * length, or NULL with a sentence.  Any crash, leak, hang or sanitizer
 * report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "protocol/protocol.h"

#define INPUT_MAX (256u << 10)

static void check_calls(int rc, const tgi_pcalls *c, const char *err)
{
	if (rc != 0) {
		check(rc == -1);
		check(c->n == 0 && !c->v && !c->text && !c->stop);
		check(*err && printable(err));
		return;
	}
	check(c->text != NULL);
	check(c->n <= 1024);
	for (size_t i = 0; i < c->n; i++) {
		const tgi_pcall *p = &c->v[i];
		check(!p->echo);
		check(p->raw == 0 || p->raw == 1);
		if (p->args)
			check(p->args[p->args_len] == '\0');
		if (p->error) {
			check(*p->error && printable(p->error));
			continue;
		}
		check(p->args != NULL && p->name != NULL && *p->name);
		if (!p->raw) {
			json_error_t je;
			json_t *v = json_loadb(p->args, p->args_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
			check(v != NULL);
			json_decref(v);
		}
	}

	tgi_presult *res = calloc(c->n + 1, sizeof *res);
	check(res != NULL);
	for (size_t i = 0; i < c->n; i++)
		res[i] = (tgi_presult){ "persisted", 0, i % 2 ? "ok" : NULL, NULL };
	json_t *msgs = tgi_protocol_openai_chat.results(c, res);
	check(json_is_array(msgs) && json_array_size(msgs) == c->n);
	for (size_t i = 0; i < c->n; i++) {
		const json_t *m = json_array_get(msgs, i);
		const char *id = json_string_value(json_object_get(m, "tool_call_id"));
		check(json_object_size(m) == 3);
		check(strcmp(json_string_value(json_object_get(m, "role")), "tool") == 0);
		check(json_is_string(json_object_get(m, "content")));
		/* ids come from JSON text, so they are UTF-8 and pass unchanged */
		check(id && strcmp(id, c->v[i].id ? c->v[i].id : "") == 0);
	}
	json_decref(msgs);
	free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char err[512];
	tgi_pcalls c;
	int rc;

	if (size > INPUT_MAX)
		return 0;

	err[0] = '\0';
	rc = tgi_protocol_openai_chat.decode(in, size, &c, err, sizeof err);
	check_calls(rc, &c, err);
	tgi_pcalls_free(&c);

	err[0] = '\0';
	rc = tgi_protocol_openai_chat.decode_stream(in, size, &c, err, sizeof err);
	check_calls(rc, &c, err);
	tgi_pcalls_free(&c);

	json_error_t je;
	json_t *defs = json_loadb(in, size, 0, &je);
	if (json_is_array(defs)) {
		err[0] = '\0';
		json_t *tools = tgi_protocol_openai_chat.tools(defs, 0, err, sizeof err);
		if (tools)
			check(json_array_size(tools) == json_array_size(defs));
		else
			check(*err && printable(err));
		json_decref(tools);
	}
	json_decref(defs);
	return 0;
}
