/*
 * test_openai_responses.c — the OpenAI Responses protocol (protocol.h,
 * src/protocol/openai_responses.c).
 *
 * Data-driven: tests/data/protocols/openai-responses/cases.json names each
 * fixture (a whole response .json or its .sse stream, in the API
 * reference's shapes) and the calls, text and stop it must decode to, or
 * the sentence it must be refused with: text only, one call, several calls
 * (deltas interleaved), calls without arguments, arguments that are not
 * valid JSON, a stream stopped by max_output_tokens inside a call, a stream
 * cut mid-event, a failed response, custom tool calls (raw text input),
 * a stream whose calls come only in the final response, and streams that
 * are not this API's.  Around them: both forms of one reply decode alike;
 * the stream's rules one by one (item ids and output indexes, done events
 * authoritative, events after the end, a malformed delta spoiling only its
 * call); calls made invalid one by one; every refusal with its sentence and
 * nothing left behind; the result items against a golden file; the tool
 * definitions against a golden file and the definitions refused.
 *
 * Owns: nothing outside its process.  Must not: touch the network or
 * files outside the repository.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <limits.h>

#include "protocol/protocol.h"
#include "util/sse.h"
#include "util/util.h"
#include "fixture.h"

static const tgi_protocol *P = &tgi_protocol_openai_responses;

/* ---- helpers ---- */

static int is_stream(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && !strcmp(name + n - 4, ".sse");
}

static int decode_text(const char *text, size_t len, int stream, tgi_pcalls *out, char *err,
                       size_t errlen)
{
	err[0] = '\0';
	return (stream ? P->decode_stream : P->decode)(text, len, out, err, errlen);
}

static int decode_file(const char *name, tgi_pcalls *out, char *err, size_t errlen)
{
	size_t len;
	char *text = fixture(name, &len);
	int rc = decode_text(text, len, is_stream(name), out, err, errlen);
	free(text);
	return rc;
}

/* Events, one JSON object each, as an SSE stream ("data: X\n\n" each). */
static char *sse(const char *const *events)
{
	tgi_buf b;
	tgi_buf_init(&b, 1u << 20);
	for (; *events; events++)
		tgi_buf_printf(&b, "data: %s\n\n", *events);
	return tgi_buf_steal(&b);
}

static int decode_events(const char *const *events, tgi_pcalls *out, char *err, size_t errlen)
{
	char *s = sse(events);
	int rc = decode_text(s, strlen(s), 1, out, err, errlen);
	free(s);
	return rc;
}

/* A refusal: -1, a one-line sentence holding want, and nothing left in out. */
static void assert_refused(int rc, const tgi_pcalls *out, const char *err, const char *want)
{
	if (rc != -1 || !strstr(err, want))
		fail_msg("want -1 with \"%s\", got %d with \"%s\"", want, rc, err);
	for (const char *p = err; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
	assert_int_equal(out->n, 0);
	assert_null(out->v);
	assert_null(out->text);
	assert_null(out->stop);
}

static void assert_call(const tgi_pcall *c, const char *id, const char *name, const char *args,
                        int raw, const char *error)
{
	assert_string_equal(c->id, id);
	assert_string_equal(c->name, name);
	if (args) {
		assert_non_null(c->args);
		assert_int_equal(c->args_len, strlen(args));
		assert_memory_equal(c->args, args, c->args_len);
	} else {
		assert_null(c->args);
	}
	assert_int_equal(c->raw, raw);
	assert_null(c->echo);
	if (!error)
		assert_null(c->error);
	else if (!c->error || !strstr(c->error, error))
		fail_msg("call %s: want an error holding \"%s\", got \"%s\"", id, error,
		         c->error ? c->error : "(none)");
}

/* ---- the fixtures ---- */

static void check_case(const json_t *cs)
{
	const char *file = json_string_value(json_object_get(cs, "file"));
	const char *fail = json_string_value(json_object_get(cs, "fail"));
	tgi_pcalls out;
	char err[512];
	int rc = decode_file(file, &out, err, sizeof err);
	print_message("  %s\n", file);
	if (fail) {
		assert_refused(rc, &out, err, fail);
		return;
	}
	if (rc != 0)
		fail_msg("%s: %s", file, err);
	const json_t *want = json_object_get(cs, "calls");
	const json_t *stop = json_object_get(cs, "stop");
	assert_string_equal(out.text, json_string_value(json_object_get(cs, "text")));
	if (json_is_null(stop))
		assert_null(out.stop);
	else
		assert_string_equal(out.stop, json_string_value(stop));
	if (out.n != json_array_size(want))
		fail_msg("%s: %zu calls, want %zu", file, out.n, json_array_size(want));
	size_t i;
	const json_t *w;
	json_array_foreach(want, i, w)
		assert_call(&out.v[i], json_string_value(json_object_get(w, "id")),
		            json_string_value(json_object_get(w, "name")),
		            json_string_value(json_object_get(w, "args")),
		            json_is_true(json_object_get(w, "raw")),
		            json_string_value(json_object_get(w, "error")));
	tgi_pcalls_free(&out);
}

static void test_cases(void **state)
{
	json_t *cases = fixture_json("cases.json");
	size_t i;
	const json_t *cs;
	assert_true(json_array_size(json_object_get(cases, "cases")) >= 20);
	json_array_foreach(json_object_get(cases, "cases"), i, cs)
		check_case(cs);
	json_decref(cases);
}

/* The same reply as one response and as its stream decodes alike. */
static void test_forms_agree(void **state)
{
	static const char *const pairs[] = {"no_args", "invalid_args", "truncated_incomplete"};
	for (size_t k = 0; k < TGI_ARRAY_LEN(pairs); k++) {
		char name[64], err[512];
		tgi_pcalls a, b;
		snprintf(name, sizeof name, "%s.json", strcmp(pairs[k], "truncated_incomplete")
		         ? pairs[k] : "incomplete");
		assert_int_equal(decode_file(name, &a, err, sizeof err), 0);
		snprintf(name, sizeof name, "%s.sse", pairs[k]);
		assert_int_equal(decode_file(name, &b, err, sizeof err), 0);
		assert_int_equal(a.n, b.n);
		assert_string_equal(a.stop, b.stop);
		for (size_t i = 0; i < a.n; i++) {
			assert_string_equal(a.v[i].id, b.v[i].id);
			assert_string_equal(a.v[i].name, b.v[i].name);
			assert_int_equal(a.v[i].args_len, b.v[i].args_len);
			assert_memory_equal(a.v[i].args, b.v[i].args, a.v[i].args_len);
			assert_int_equal(!a.v[i].error, !b.v[i].error);
			if (a.v[i].error)
				assert_string_equal(a.v[i].error, b.v[i].error);
		}
		tgi_pcalls_free(&a);
		tgi_pcalls_free(&b);
	}
}

/* ---- the stream's rules ---- */

#define ADDED(id, call, name)                                                                \
	"{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":"       \
	"\"function_call\",\"id\":\"" id "\",\"call_id\":\"" call "\",\"name\":\"" name "\","  \
	"\"arguments\":\"\",\"status\":\"in_progress\"}}"
#define DELTA(id, d) \
	"{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"" id "\",\"delta\":\"" d "\"}"
#define ARGS_DONE(id, a) \
	"{\"type\":\"response.function_call_arguments.done\",\"item_id\":\"" id "\",\"arguments\":\"" a "\"}"
#define COMPLETED "{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[]}}"

static void test_stream_item_keys(void **state)
{
	tgi_pcalls out;
	char err[512];

	/* deltas without item_id go by output_index */
	const char *const by_index[] = {
		"{\"type\":\"response.output_item.added\",\"output_index\":3,\"item\":{\"type\":"
		"\"function_call\",\"call_id\":\"c1\",\"name\":\"t\",\"arguments\":\"\"}}",
		"{\"type\":\"response.function_call_arguments.delta\",\"output_index\":3,\"delta\":\"{\\\"a\\\"\"}",
		"{\"type\":\"response.function_call_arguments.delta\",\"output_index\":3,\"delta\":\":1}\"}",
		"{\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"type\":"
		"\"function_call\",\"call_id\":\"c1\",\"name\":\"t\",\"arguments\":\"{\\\"a\\\":1}\"}}",
		COMPLETED, NULL};
	assert_int_equal(decode_events(by_index, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 1);
	assert_call(&out.v[0], "c1", "t", "{\"a\":1}", 0, NULL);
	tgi_pcalls_free(&out);

	/* an item added twice */
	const char *const twice[] = {ADDED("fc_1", "c1", "t"), ADDED("fc_1", "c2", "t"), COMPLETED, NULL};
	assert_refused(decode_events(twice, &out, err, sizeof err), &out, err,
	               "line 3: item \"fc_1\" was added twice");

	/* a delta naming no item at all */
	const char *const nowhere[] = {
		ADDED("fc_1", "c1", "t"),
		"{\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{}\"}", COMPLETED, NULL};
	assert_refused(decode_events(nowhere, &out, err, sizeof err), &out, err,
	               "line 3: \"response.function_call_arguments.delta\" names no item it belongs to");

	/* a done for an item never added; ids echoed without control characters */
	const char *const unknown[] = {
		ADDED("fc_1", "c1", "t"), ARGS_DONE("fc_\\u0007x", "{}"), COMPLETED, NULL};
	assert_refused(decode_events(unknown, &out, err, sizeof err), &out, err,
	               "names item \"fc_ x\", which no \"response.output_item.added\" announced");
}

static void test_stream_done_is_authoritative(void **state)
{
	tgi_pcalls out;
	char err[512];
	/* the done event wins over the deltas; deltas after it change nothing */
	const char *const ev[] = {
		ADDED("fc_1", "c1", "t"), DELTA("fc_1", "{\\\"x\\\":"), ARGS_DONE("fc_1", "{\\\"x\\\":2}"),
		DELTA("fc_1", "garbage"), ARGS_DONE("fc_1", "{\\\"x\\\":3}"),
		"{\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"id\":"
		"\"fc_1\",\"call_id\":\"c1\",\"name\":\"t\",\"arguments\":\"{\\\"x\\\":4}\"}}",
		COMPLETED, NULL};
	assert_int_equal(decode_events(ev, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 1);
	assert_call(&out.v[0], "c1", "t", "{\"x\":2}", 0, NULL);
	tgi_pcalls_free(&out);

	/* no done event: output_item.done finishes the call */
	const char *const item_done[] = {
		ADDED("fc_1", "c1", "t"), DELTA("fc_1", "{\\\"x\\\""),
		"{\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"id\":"
		"\"fc_1\",\"call_id\":\"c1\",\"name\":\"t\",\"arguments\":\"{\\\"x\\\":5}\","
		"\"status\":\"completed\"}}",
		COMPLETED, NULL};
	assert_int_equal(decode_events(item_done, &out, err, sizeof err), 0);
	assert_call(&out.v[0], "c1", "t", "{\"x\":5}", 0, NULL);
	tgi_pcalls_free(&out);

	/* neither: the final response's item finishes it */
	const char *const final[] = {
		ADDED("fc_1", "c1", "t"), DELTA("fc_1", "{"),
		"{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":["
		"{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"t\","
		"\"arguments\":\"{\\\"y\\\":1}\",\"status\":\"completed\"}]}}",
		NULL};
	assert_int_equal(decode_events(final, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 1);
	assert_call(&out.v[0], "c1", "t", "{\"y\":1}", 0, NULL);
	tgi_pcalls_free(&out);

	/* completed, but nothing finished the call: it is cut, with what came */
	const char *const unfinished[] = {ADDED("fc_1", "c1", "t"), DELTA("fc_1", "{"), COMPLETED, NULL};
	assert_int_equal(decode_events(unfinished, &out, err, sizeof err), 0);
	assert_call(&out.v[0], "c1", "t", "{", 0,
	            "the response ended before this call was complete");
	tgi_pcalls_free(&out);
}

static void test_stream_end(void **state)
{
	tgi_pcalls out;
	char err[512];

	/* no end at all: a finished call stands, an open one is cut, stop is NULL */
	const char *const no_end[] = {
		ADDED("fc_1", "c1", "a"), ARGS_DONE("fc_1", "{}"), ADDED("fc_2", "c2", "b"), NULL};
	assert_int_equal(decode_events(no_end, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 2);
	assert_call(&out.v[0], "c1", "a", "{}", 0, NULL);
	assert_call(&out.v[1], "c2", "b", NULL, 0, "the stream ended inside this call");
	assert_null(out.stop);
	assert_string_equal(out.text, "");
	tgi_pcalls_free(&out);

	/* events after the end are not read, whatever they hold */
	char *s = NULL;
	const char *const after[] = {
		ADDED("fc_1", "c1", "a"), ARGS_DONE("fc_1", "{}"), COMPLETED, ADDED("fc_2", "c2", "b"), NULL};
	char *body = sse(after);
	tgi_buf b;
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_printf(&b, "%sdata: not json\n\ndata: [DONE]\n\n", body);
	s = tgi_buf_steal(&b);
	assert_int_equal(decode_text(s, strlen(s), 1, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.stop, "completed");
	tgi_pcalls_free(&out);
	free(body);
	free(s);

	/* OpenAI-style [DONE] and events named only by their event: line */
	const char *named =
		"event: response.output_item.added\n"
		"data: {\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\","
		"\"name\":\"a\",\"arguments\":\"\"}}\n\n"
		"event: response.function_call_arguments.done\n"
		"data: {\"item_id\":\"fc_1\",\"arguments\":\"{\\\"k\\\":true}\"}\n\n"
		"event: response.completed\ndata: {\"response\":{\"output\":[]}}\n\n"
		"data: [DONE]\n\n";
	assert_int_equal(decode_text(named, strlen(named), 1, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 1);
	assert_call(&out.v[0], "c1", "a", "{\"k\":true}", 0, NULL);
	assert_string_equal(out.stop, "completed");
	tgi_pcalls_free(&out);

	/* a stream cut inside its last event: that event is dropped, the call is cut */
	const char *cut = "data: " ADDED("fc_1", "c1", "a") "\n\ndata: {\"type\":\"response.function";
	assert_int_equal(decode_text(cut, strlen(cut), 1, &out, err, sizeof err), 0);
	assert_call(&out.v[0], "c1", "a", NULL, 0, "the stream ended inside this call");
	tgi_pcalls_free(&out);

	/* incomplete without a reason: the status says why */
	const char *const inc[] = {
		ADDED("fc_1", "c1", "a"),
		"{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
		"\"incomplete_details\":null,\"output\":[]}}", NULL};
	assert_int_equal(decode_events(inc, &out, err, sizeof err), 0);
	assert_call(&out.v[0], "c1", "a", NULL, 0,
	            "the response stopped (incomplete) before this call was complete");
	assert_string_equal(out.stop, "incomplete");
	tgi_pcalls_free(&out);

	/* a text-only failure is refused with the API's reason */
	const char *const failed[] = {
		"{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":"
		"{\"code\":\"server_error\",\"message\":\"bad\\nthing\"},\"output\":[]}}", NULL};
	assert_refused(decode_events(failed, &out, err, sizeof err), &out, err,
	               "the response failed: server_error: bad thing");
}

static void test_stream_bad_events(void **state)
{
	tgi_pcalls out;
	char err[512];

	/* a delta without its text spoils its own call only */
	const char *const no_delta[] = {
		ADDED("fc_1", "c1", "a"),
		"{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":7}",
		ARGS_DONE("fc_1", "{}"), ADDED("fc_2", "c2", "b"), ARGS_DONE("fc_2", "{}"), COMPLETED, NULL};
	assert_int_equal(decode_events(no_delta, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 2);
	assert_call(&out.v[0], "c1", "a", "{}", 0,
	            "the stream sent \"response.function_call_arguments.delta\" without \"delta\" "
	            "for this call (line 3)");
	assert_call(&out.v[1], "c2", "b", "{}", 0, NULL);
	tgi_pcalls_free(&out);

	/* a text delta without text is a broken stream */
	const char *const no_text[] = {"{\"type\":\"response.output_text.delta\"}", COMPLETED, NULL};
	assert_refused(decode_events(no_text, &out, err, sizeof err), &out, err,
	               "line 1: \"response.output_text.delta\" has no \"delta\" string");

	/* an event that is not JSON, with more after it */
	const char *const bad[] = {ADDED("fc_1", "c1", "a"), "{\"type\":", COMPLETED, NULL};
	assert_refused(decode_events(bad, &out, err, sizeof err), &out, err,
	               "line 3: the event's data is not JSON (at byte ");

	/* the SSE layer's refusals come through */
	const char nul[] = "data: {\"type\":\"response.created\"}\n\0\n";
	assert_refused(decode_text(nul, sizeof nul - 1, 1, &out, err, sizeof err), &out, err,
	               "NUL byte");

	/* nothing of this API */
	assert_refused(decode_text("", 0, 1, &out, err, sizeof err), &out, err,
	               "the stream holds no OpenAI Responses events");
	const char *const other[] = {"{\"type\":\"message_start\"}", "[1]", NULL};
	assert_refused(decode_events(other, &out, err, sizeof err), &out, err,
	               "the stream holds no OpenAI Responses events");
}

/* Custom calls in a stream: the input is text, never parsed; empty is "". */
static void test_stream_custom(void **state)
{
	tgi_pcalls out;
	char err[512];
	const char *const ev[] = {
		"{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"custom_tool_call\","
		"\"id\":\"ctc_1\",\"call_id\":\"c1\",\"name\":\"apply_patch\",\"input\":\"\"}}",
		"{\"type\":\"response.custom_tool_call_input.delta\",\"item_id\":\"ctc_1\",\"delta\":\"{not\"}",
		"{\"type\":\"response.custom_tool_call_input.delta\",\"item_id\":\"ctc_1\",\"delta\":\" json\"}",
		"{\"type\":\"response.custom_tool_call_input.done\",\"item_id\":\"ctc_1\",\"input\":\"{not json\"}",
		"{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"custom_tool_call\","
		"\"id\":\"ctc_2\",\"call_id\":\"c2\",\"name\":\"note\",\"input\":\"\"}}",
		"{\"type\":\"response.custom_tool_call_input.done\",\"item_id\":\"ctc_2\",\"input\":\"\"}",
		"{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"custom_tool_call\","
		"\"id\":\"ctc_3\",\"call_id\":\"c3\",\"name\":\"note\",\"input\":\"\"}}",
		"{\"type\":\"response.custom_tool_call_input.delta\",\"item_id\":\"ctc_3\",\"delta\":\"half\"}",
		"{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
		"\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[]}}",
		NULL};
	assert_int_equal(decode_events(ev, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 3);
	assert_call(&out.v[0], "c1", "apply_patch", "{not json", 1, NULL);
	assert_call(&out.v[1], "c2", "note", "", 1, NULL);
	assert_call(&out.v[2], "c3", "note", "half", 1,
	            "the response stopped (max_output_tokens) before this call was complete");
	assert_string_equal(out.stop, "max_output_tokens");
	tgi_pcalls_free(&out);
}

/* ---- one response: calls made invalid one by one ---- */

static void test_json_items(void **state)
{
	tgi_pcalls out;
	char err[512];
	const char *text =
		"{\"status\":\"completed\",\"output\":["
		"{\"type\":\"function_call\",\"name\":\"a\",\"arguments\":\"{}\"},"
		"{\"type\":\"function_call\",\"call_id\":\"c2\",\"arguments\":\"{}\"},"
		"{\"type\":\"function_call\",\"call_id\":\"c3\",\"name\":\"c\",\"arguments\":{\"x\":1}},"
		"{\"type\":\"function_call\",\"call_id\":\"c4\",\"name\":\"d\",\"arguments\":\"[1,2]\"},"
		"{\"type\":\"function_call\",\"call_id\":\"c5\",\"name\":\"e\",\"arguments\":\"{\\\"a\\\":\\u0007\"},"
		"{\"type\":\"custom_tool_call\",\"call_id\":\"c6\",\"name\":\"f\"},"
		"{\"type\":\"function_call\",\"call_id\":\"c7\",\"name\":\"g\",\"arguments\":\"{}\","
		"\"status\":\"in_progress\"},"
		"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\"},"
		"{\"type\":\"computer_call\",\"call_id\":\"c8\",\"action\":{}},"
		"{\"type\":\"message\",\"role\":\"assistant\",\"content\":["
		"{\"type\":\"refusal\",\"refusal\":\"no\"},{\"type\":\"output_text\",\"text\":\"ok\"}]},"
		"\"stray\", 7, null]}";
	assert_int_equal(decode_text(text, strlen(text), 0, &out, err, sizeof err), 0);
	assert_int_equal(out.n, 7);
	assert_null(out.v[0].id);
	assert_string_equal(out.v[0].error, "the call has no \"call_id\"");
	assert_null(out.v[1].name);
	assert_string_equal(out.v[1].error, "the call has no tool name");
	assert_call(&out.v[2], "c3", "c", NULL, 0, "the call has no \"arguments\" string");
	/* JSON that is not an object is the gate's to refuse, not the decoder's */
	assert_call(&out.v[3], "c4", "d", "[1,2]", 0, NULL);
	assert_call(&out.v[4], "c5", "e", "{\"a\":\a", 0, "arguments are not valid JSON at byte ");
	for (const char *p = out.v[4].error; *p; p++)
		assert_true((unsigned char)*p >= 0x20);
	assert_call(&out.v[5], "c6", "f", NULL, 1, "the call has no \"input\" string");
	assert_call(&out.v[6], "c7", "g", "{}", 0,
	            "the response ended before this call was complete");
	assert_string_equal(out.text, "ok");
	assert_string_equal(out.stop, "completed");
	tgi_pcalls_free(&out);
}

static void test_json_refused(void **state)
{
	tgi_pcalls out;
	char err[512];
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"", "the response is not JSON (at byte 0: "},
		{"{\"output\": [", "the response is not JSON (at byte "},
		{"[]", "not an OpenAI Responses response: it is not a JSON object"},
		{"{}", "not an OpenAI Responses response: it has no \"output\" array"},
		{"{\"output\": {}}", "not an OpenAI Responses response: it has no \"output\" array"},
		{"{\"choices\": []}", "not an OpenAI Responses response: it has no \"output\" array"},
		{"{\"error\": {\"message\": \"no\\u0001key\"}}", "the response is an API error: \"no key\""},
		{"{\"status\":\"failed\",\"output\":[]}", "the response failed: no reason given"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		assert_refused(decode_text(cases[i].text, strlen(cases[i].text), 0, &out, err,
		                           sizeof err), &out, err, cases[i].want);

	/* over the size limit, before a byte is parsed */
	size_t big = TGI_SSE_MAX + 1;
	char *s = malloc(big);
	assert_non_null(s);
	memset(s, ' ', big);
	assert_refused(decode_text(s, big, 0, &out, err, sizeof err), &out, err,
	               "the response is 67108865 bytes, over the limit of 67108864");
	assert_refused(decode_text(s, big, 1, &out, err, sizeof err), &out, err, "over the limit");
	free(s);
}

/* ---- results and definitions ---- */

static void test_results(void **state)
{
	tgi_pcall v[] = {
		{.id = "call_unLAR8MvFNptuiZK6K6HCy5k", .name = "read_file"},
		{.id = "call_okunv0eUNIXE8kqY81fgYvCs", .name = "list_dir"},
		{.id = "call_patch1Xy2Zw3Vu4Ts5Rq6P", .name = "apply_patch", .raw = 1},
		{.id = "call_sql1Xy2Zw3Vu4Ts5Rq6Po", .name = "run_sql", .raw = 1},
		{.id = NULL, .name = "x", .error = "the call has no \"call_id\""},
		{.id = "call_cut1Xy2Zw3Vu4Ts5Rq6Pon", .name = "write_file", .error = "cut"},
	};
	tgi_pcalls calls = {.v = v, .n = TGI_ARRAY_LEN(v), .text = "", .stop = "completed"};
	tgi_presult res[] = {
		{"persisted", 0, "1\t# toolgate\n2\t", NULL},
		{"denied", 1, "denied (not_permitted): list_dir is not allowed here; do not retry; "
		              "ask the owner", NULL},
		{"persisted", 0, "Done!\nA hello.txt", NULL},
		{"failed", 1, "failed (tool_error): no such table \"t\"", NULL},
		{"invalid", 1, "invalid (invalid_input): the call has no \"call_id\"", NULL},
		{"invalid", 1, NULL, NULL},
	};
	json_t *got = P->results(&calls, res);
	json_t *want = fixture_json("results_expected.json");
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("results differ from results_expected.json:\n%s", s);
	}
	json_decref(got);
	json_decref(want);

	tgi_pcalls none = {.text = ""};
	got = P->results(&none, NULL);
	assert_true(json_is_array(got));
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
}

static void test_tools_golden(void **state)
{
	char err[512] = "";
	json_t *defs = fixture_json("tools_defs.json");
	json_t *want = fixture_json("tools_expected.json");
	json_t *got = P->tools(defs, 0, err, sizeof err);
	if (!got)
		fail_msg("tools: %s", err);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("tools differ from tools_expected.json:\n%s", s);
	}
	/* every tool: the strict translation when there is one, else the schema as given */
	size_t i;
	const json_t *t;
	json_array_foreach(got, i, t) {
		const json_t *schema = json_object_get(json_array_get(defs, i), "input_schema");
		json_t *strict = tgi_dialect_openai_strict(schema);
		assert_string_equal(json_string_value(json_object_get(t, "type")), "function");
		assert_int_equal(json_is_true(json_object_get(t, "strict")), strict != NULL);
		assert_true(json_is_boolean(json_object_get(t, "strict")));
		assert_true(json_equal(json_object_get(t, "parameters"), strict ? strict : schema));
		json_decref(strict);
	}
	/* Gemini's flag means nothing here */
	json_t *again = P->tools(defs, TGI_DIALECT_GEMINI_LEGACY, err, sizeof err);
	assert_true(json_equal(again, got));
	json_decref(again);
	json_decref(got);
	json_decref(want);
	json_decref(defs);
}

static void test_tools_refused(void **state)
{
	static const struct {
		const char *defs, *want;
	} cases[] = {
		{"{}", "the tool definitions are not a JSON array"},
		{"[{\"description\":\"x\",\"input_schema\":{\"type\":\"object\"}}]",
		 "tool definition 0 has no name"},
		{"[{\"name\":\"ok\",\"input_schema\":{}},{\"name\":\"has space\",\"input_schema\":{}}]",
		 "has space"},
		{"[{\"name\":\"a.b\",\"input_schema\":{}}]", "a.b"},
		{"[{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
		 "\"input_schema\":{}}]", "64"},
		{"[{\"name\":\"t\",\"input_schema\":[1]}]", "tool \"t\": input_schema is not a JSON object"},
		{"[{\"name\":\"t\"}]", "tool \"t\": input_schema is not a JSON object"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		char err[512] = "";
		json_t *defs = json_loads(cases[i].defs, 0, NULL);
		assert_non_null(defs);
		assert_null(P->tools(defs, 0, err, sizeof err));
		if (!strstr(err, cases[i].want))
			fail_msg("defs %s: want \"%s\", got \"%s\"", cases[i].defs, cases[i].want, err);
		for (const char *p = err; *p; p++)
			assert_true((unsigned char)*p >= 0x20);
		json_decref(defs);
	}
	/* a name of 64 characters is accepted */
	char err[512];
	json_t *defs = json_pack("[{s:s, s:{}}]", "name",
	                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	                         "input_schema");
	json_t *got = P->tools(defs, 0, err, sizeof err);
	assert_non_null(got);
	json_decref(got);
	json_decref(defs);
}

int main(void)
{
	if (fixture_open("openai-responses") < 0)
		return 1;
	assert_string_equal(P->name, "openai-responses");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_forms_agree),
		cmocka_unit_test(test_stream_item_keys),
		cmocka_unit_test(test_stream_done_is_authoritative),
		cmocka_unit_test(test_stream_end),
		cmocka_unit_test(test_stream_bad_events),
		cmocka_unit_test(test_stream_custom),
		cmocka_unit_test(test_json_items),
		cmocka_unit_test(test_json_refused),
		cmocka_unit_test(test_results),
		cmocka_unit_test(test_tools_golden),
		cmocka_unit_test(test_tools_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
