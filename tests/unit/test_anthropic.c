/*
 * test_anthropic.c — the Anthropic Messages protocol (protocol.h,
 * src/protocol/anthropic.c).
 *
 * Data-driven: tests/data/protocols/anthropic/cases.json names each fixture
 * (a whole message .json or its .sse stream, in the API reference's shapes)
 * and the calls, text and stop_reason it must decode to, or the sentence it
 * must be refused with: text only, one call, several calls, calls with no
 * arguments, arguments that are not valid JSON, tool_use under end_turn,
 * max_tokens inside a call, streams cut short or without message_stop, an
 * error event, blocks that are not ours (thinking, server tools).  Both
 * forms of one reply must decode alike.  Around them: every refusal of a
 * malformed reply with its sentence, calls made invalid one by one, the
 * result message against a golden file, and the tool definitions against
 * golden files with the names and schemas Anthropic refuses.
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

static const tgi_protocol *P = &tgi_protocol_anthropic;

/* ---- helpers ---- */

static int is_stream(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && !strcmp(name + n - 4, ".sse");
}

/* Decode text as a message or a stream; the return code, out and err filled. */
static int run(int stream, const char *text, tgi_pcalls *out, char *err, size_t errlen)
{
	err[0] = '\0';
	return (stream ? P->decode_stream : P->decode)(text, strlen(text), out, err, errlen);
}

/* The one sentence text is refused with. */
static const char *refusal(int stream, const char *text)
{
	static char err[512];
	tgi_pcalls out;
	if (run(stream, text, &out, err, sizeof err) != -1)
		fail_msg("accepted: %s", text);
	assert_int_equal(out.n, 0);
	assert_null(out.v);
	assert_null(out.text);
	tgi_pcalls_free(&out);
	assert_true(err[0] != '\0');
	for (const char *p = err; *p; p++)
		assert_true((unsigned char)*p >= 0x20);
	return err;
}

/* Decode text that must be accepted. */
static void accept(int stream, const char *text, tgi_pcalls *out)
{
	char err[512];
	if (run(stream, text, out, err, sizeof err) != 0)
		fail_msg("refused (%s): %s", err, text);
	assert_non_null(out->text);
	for (size_t i = 0; i < out->n; i++) {
		assert_non_null(out->v[i].id);
		assert_non_null(out->v[i].name);
		assert_int_equal(out->v[i].raw, 0);
		assert_null(out->v[i].echo);
		/* exactly one of args and error */
		assert_true((out->v[i].args == NULL) != (out->v[i].error == NULL));
		if (out->v[i].args)
			assert_int_equal(out->v[i].args_len, strlen(out->v[i].args));
	}
}

/* The only call of a stream or message, which must have failed with want. */
static void one_call_error(int stream, const char *text, const char *want)
{
	tgi_pcalls out;
	accept(stream, text, &out);
	assert_int_equal(out.n, 1);
	if (!out.v[0].error)
		fail_msg("no error, args %s: %s", out.v[0].args, text);
	assert_string_equal(out.v[0].error, want);
	tgi_pcalls_free(&out);
}

/* A stream of events built from "NAME DATA" lines, each closed by a blank line. */
static char *stream_of(const char *first, ...)
{
	tgi_buf b;
	va_list ap;
	tgi_buf_init(&b, 1u << 20);
	va_start(ap, first);
	for (const char *e = first; e; e = va_arg(ap, const char *)) {
		const char *sp = strchr(e, ' ');
		tgi_buf_printf(&b, "event: %.*s\ndata: %s\n\n", (int)(sp - e), e, sp + 1);
	}
	va_end(ap);
	return tgi_buf_steal(&b);
}

#define START "message_start {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"," \
              "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null}}"
#define TOOL(i, id, name) "content_block_start {\"type\":\"content_block_start\",\"index\":" #i \
              ",\"content_block\":{\"type\":\"tool_use\",\"id\":\"" id "\",\"name\":\"" name \
              "\",\"input\":{}}}"
#define JSON(i, s) "content_block_delta {\"type\":\"content_block_delta\",\"index\":" #i \
              ",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" s "\"}}"
#define BSTOP(i) "content_block_stop {\"type\":\"content_block_stop\",\"index\":" #i "}"
#define MSTOP "message_stop {\"type\":\"message_stop\"}"

/* ---- fixtures ---- */

static void check_case(const json_t *c)
{
	const char *file = json_string_value(json_object_get(c, "file"));
	const json_t *want_calls = json_object_get(c, "calls");
	const char *refused = json_string_value(json_object_get(c, "refused"));
	size_t len;
	char *text = fixture(file, &len);
	char err[512] = "";
	tgi_pcalls out;
	int stream = is_stream(file);
	int rc = (stream ? P->decode_stream : P->decode)(text, len, &out, err, sizeof err);
	if (refused) {
		if (rc != -1)
			fail_msg("%s: accepted", file);
		assert_string_equal(err, refused);
		tgi_pcalls_free(&out);
		free(text);
		return;
	}
	if (rc != 0)
		fail_msg("%s: refused: %s", file, err);
	assert_string_equal(out.text, json_string_value(json_object_get(c, "text")));
	const json_t *stop = json_object_get(c, "stop");
	if (json_is_null(stop))
		assert_null(out.stop);
	else
		assert_string_equal(out.stop, json_string_value(stop));
	if (out.n != json_array_size(want_calls))
		fail_msg("%s: %zu calls, want %zu", file, out.n, json_array_size(want_calls));
	for (size_t i = 0; i < out.n; i++) {
		const json_t *w = json_array_get(want_calls, i);
		const char *args = json_string_value(json_object_get(w, "args"));
		const char *error = json_string_value(json_object_get(w, "error"));
		assert_string_equal(out.v[i].id, json_string_value(json_object_get(w, "id")));
		assert_string_equal(out.v[i].name, json_string_value(json_object_get(w, "name")));
		if (args) {
			if (!out.v[i].args)
				fail_msg("%s: call %zu: %s", file, i, out.v[i].error);
			assert_string_equal(out.v[i].args, args);
			assert_int_equal(out.v[i].args_len, strlen(args));
			assert_null(out.v[i].error);
		} else {
			if (!out.v[i].error)
				fail_msg("%s: call %zu: no error, args %s", file, i, out.v[i].args);
			assert_string_equal(out.v[i].error, error);
			assert_null(out.v[i].args);
		}
		assert_int_equal(out.v[i].raw, 0);
		assert_null(out.v[i].echo);
	}
	tgi_pcalls_free(&out);
	free(text);
}

static void test_fixtures(void **state)
{
	json_t *cases = fixture_json("cases.json");
	size_t i;
	json_t *c;
	assert_true(json_array_size(cases) >= 20);
	json_array_foreach(cases, i, c)
		check_case(c);
	json_decref(cases);
}

/* A whole message and its stream decode to the same calls, text and stop. */
static void test_stream_matches_message(void **state)
{
	static const char *const pairs[] = {"text_only", "one_call", "several_calls", "no_args",
	                                    "end_turn", "mixed_blocks", "max_tokens"};
	for (size_t k = 0; k < TGI_ARRAY_LEN(pairs); k++) {
		char name[64], err[512];
		size_t jl, sl;
		tgi_pcalls a, b;
		snprintf(name, sizeof name, "%s.json", pairs[k]);
		char *j = fixture(name, &jl);
		snprintf(name, sizeof name, "%s.sse", pairs[k]);
		char *s = fixture(name, &sl);
		assert_int_equal(P->decode(j, jl, &a, err, sizeof err), 0);
		assert_int_equal(P->decode_stream(s, sl, &b, err, sizeof err), 0);
		assert_int_equal(a.n, b.n);
		assert_string_equal(a.text, b.text);
		assert_string_equal(a.stop, b.stop);
		for (size_t i = 0; i < a.n; i++) {
			assert_string_equal(a.v[i].id, b.v[i].id);
			assert_string_equal(a.v[i].name, b.v[i].name);
			assert_true((a.v[i].args == NULL) == (b.v[i].args == NULL));
			if (a.v[i].args)
				assert_string_equal(a.v[i].args, b.v[i].args);
		}
		tgi_pcalls_free(&a);
		tgi_pcalls_free(&b);
		free(j);
		free(s);
	}
}

/* ---- refusals ---- */

static void test_message_refused(void **state)
{
	assert_string_equal(refusal(0, ""),
	                    "the response is not valid JSON at byte 0: '[' or '{' expected near end of file");
	assert_true(!strncmp(refusal(0, "{\"type\":\"message\",\"content\":[}"),
	                     "the response is not valid JSON at byte ", 39));
	assert_string_equal(refusal(0, "{\"type\":\"message\",\"type\":\"message\",\"content\":[]}"),
	                    "the response is not valid JSON at byte 24: duplicate object key near "
	                    "'\"type\"'");
	const char *not_msg = "the response is not an anthropic message (no \"type\":\"message\" "
	                      "with a \"content\" array)";
	assert_string_equal(refusal(0, "[]"), not_msg);
	assert_string_equal(refusal(0, "{\"type\":\"message\",\"content\":\"hi\"}"), not_msg);
	assert_string_equal(refusal(0, "{\"type\":\"completion\",\"content\":[]}"), not_msg);
	/* an OpenAI chat completion is not ours */
	assert_string_equal(refusal(0, "{\"object\":\"chat.completion\",\"choices\":[]}"), not_msg);
	assert_string_equal(refusal(0, "{\"type\":\"message\",\"content\":[{\"type\":\"text\","
	                               "\"text\":\"a\"},7]}"),
	                    "content[1] is not a content block (no \"type\")");
	assert_string_equal(refusal(0, "{\"type\":\"error\"}"),
	                    "the response is an error: error: no message");
	/* control characters in the error are not echoed */
	assert_string_equal(refusal(0, "{\"type\":\"error\",\"error\":{\"type\":\"x\\u0007\","
	                               "\"message\":\"bad\\nthing\"}}"),
	                    "the response is an error: x : bad thing");

	/* a response over the cap is refused before it is read */
	size_t big = TGI_SSE_MAX + 1;
	char *huge = malloc(big);
	char err[256];
	tgi_pcalls out;
	assert_non_null(huge);
	memset(huge, ' ', big);
	assert_int_equal(P->decode(huge, big, &out, err, sizeof err), -1);
	assert_string_equal(err, "the response is over 67108864 bytes");
	assert_int_equal(P->decode_stream(huge, big, &out, err, sizeof err), -1);
	assert_non_null(strstr(err, "over the limit"));
	free(huge);
}

static void test_stream_refused(void **state)
{
	char *s;
	assert_string_equal(refusal(1, ""),
	                    "the stream is not an anthropic message stream (no message_start event)");
	assert_string_equal(refusal(1, ": just a comment\n\n"),
	                    "the stream is not an anthropic message stream (no message_start event)");
	/* OpenAI's chat chunks are not ours */
	assert_string_equal(refusal(1, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\"}\n\n"
	                               "data: [DONE]\n\n"),
	                    "the event at line 1 has no \"type\" in its data");

	s = stream_of(TOOL(0, "toolu_1", "read_file"), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_start\" at line 1: it comes before message_start");
	free(s);
	s = stream_of(START, START, NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"message_start\" at line 4: a second message_start");
	free(s);
	s = stream_of(START, TOOL(1, "toolu_1", "read_file"), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_start\" at line 4: the block index is not 0");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "read_file"), TOOL(0, "toolu_2", "read_file"), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_start\" at line 7: the block index is not 1");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "read_file"), JSON(3, "{}"), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_delta\" at line 7: block 3 is not open");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "read_file"), BSTOP(0), BSTOP(0), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_stop\" at line 10: block 0 is not open");
	free(s);
	s = stream_of(START, "content_block_stop {\"type\":\"content_block_stop\",\"index\":\"0\"}",
	              NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_stop\" at line 4: no block \"index\"");
	free(s);
	s = stream_of(START, "content_block_start {\"type\":\"content_block_start\",\"index\":0}", NULL);
	assert_string_equal(refusal(1, s), "event \"content_block_start\" at line 4: no "
	                                   "\"content_block\" with a \"type\"");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "read_file"),
	              "content_block_delta {\"type\":\"content_block_delta\",\"index\":0,"
	              "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":7}}", NULL);
	assert_string_equal(refusal(1, s), "event \"content_block_delta\" at line 7: "
	                                   "\"partial_json\" is not a string");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "read_file"),
	              "content_block_delta {\"type\":\"content_block_delta\",\"index\":0}", NULL);
	assert_string_equal(refusal(1, s), "event \"content_block_delta\" at line 7: no \"delta\" "
	                                   "with a \"type\"");
	free(s);
	/* the event name and the data's type must agree */
	s = stream_of(START, "message_stop {\"type\":\"ping\"}", NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"message_stop\" at line 4: the data has type \"ping\"");
	free(s);
	s = stream_of(START, MSTOP, TOOL(0, "toolu_1", "read_file"), NULL);
	assert_string_equal(refusal(1, s),
	                    "event \"content_block_start\" at line 7: it comes after message_stop");
	free(s);
	/* data that is not a JSON object, before the end of the stream */
	s = stream_of(START, "ping {\"type\":", MSTOP, NULL);
	assert_string_equal(refusal(1, s), "the event at line 4 is not a JSON object: "
	                                   "unexpected token near end of file");
	free(s);
	s = stream_of(START, "ping [1]", MSTOP, NULL);
	assert_string_equal(refusal(1, s), "the event at line 4 is not a JSON object: not an object");
	free(s);
	s = stream_of(START, "ping [1]", NULL);
	assert_string_equal(refusal(1, s), "the event at line 4 is not a JSON object: not an object");
	free(s);
	/* a NUL byte: the framing refuses it */
	tgi_pcalls out;
	char err[256];
	assert_int_equal(P->decode_stream("data: {}\n\0\n", 11, &out, err, sizeof err), -1);
	assert_non_null(strstr(err, "NUL"));
	tgi_pcalls_free(&out);

	/* text only, cut short: no call can carry the error, so the reply is refused */
	s = stream_of(START, "content_block_start {\"type\":\"content_block_start\",\"index\":0,"
	              "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}", NULL);
	assert_string_equal(refusal(1, s), "the stream ended before message_stop");
	free(s);
}

/* ---- calls made invalid one by one ---- */

static void test_call_errors(void **state)
{
	char *s;
#define MSG(blocks) "{\"type\":\"message\",\"stop_reason\":\"tool_use\",\"content\":[" blocks "]}"
	one_call_error(0, MSG("{\"type\":\"tool_use\",\"name\":\"read_file\",\"input\":{}}"),
	               "the tool_use block has no \"id\"");
	one_call_error(0, MSG("{\"type\":\"tool_use\",\"id\":\"\",\"name\":\"read_file\",\"input\":{}}"),
	               "the tool_use block has no \"id\"");
	one_call_error(0, MSG("{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"input\":{}}"),
	               "the tool_use block has no \"name\"");
	one_call_error(0, MSG("{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"x\",\"input\":\"{}\"}"),
	               "the call's input is not a JSON object");
	one_call_error(0, MSG("{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"x\"}"),
	               "the call's input is not a JSON object");

	/* a repeated id: the second call is invalid, the first runs */
	tgi_pcalls out;
	accept(0, MSG("{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"a\",\"input\":{\"k\":1}},"
	              "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"b\",\"input\":{}}"), &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0].args, "{\"k\":1}");
	assert_string_equal(out.v[1].error, "the call id \"toolu_1\" repeats an earlier call's id");
	tgi_pcalls_free(&out);

	/* max_tokens only touches a call that is the last block */
	accept(0, "{\"type\":\"message\",\"stop_reason\":\"max_tokens\",\"content\":["
	          "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"a\",\"input\":{}},"
	          "{\"type\":\"text\",\"text\":\"and then I\"}]}", &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0].args, "{}");
	assert_string_equal(out.text, "and then I");
	tgi_pcalls_free(&out);

	/* streamed arguments */
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, "[1]"), BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "arguments are not a JSON object");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, " "), BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "arguments are not valid JSON at byte 1: unexpected token near end of "
	                     "file");
	free(s);
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, "{\\\"k\\\":1,"), JSON(0, "\\\"k\\\":2}"),
	              BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "arguments are not valid JSON at byte 10: duplicate object key near "
	                     "'\"k\"'");
	free(s);
	s = stream_of(START, "content_block_start {\"type\":\"content_block_start\",\"index\":0,"
	              "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"a\","
	              "\"input\":[]}}", BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "the call's input is not a JSON object");
	free(s);
	s = stream_of(START, "content_block_start {\"type\":\"content_block_start\",\"index\":0,"
	              "\"content_block\":{\"type\":\"tool_use\",\"name\":\"a\",\"input\":{}}}",
	              JSON(0, "{}"), BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "the tool_use block has no \"id\"");
	free(s);
	/* a tool_use block that is never closed, though the message stops */
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, "{}"), MSTOP, NULL);
	one_call_error(1, s, "the stream ended inside this call");
	free(s);
	/* an error event inside a call */
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, "{\\\"pa"),
	              "error {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal "
	              "server error\"}}", JSON(0, "th\\\"}"), BSTOP(0), MSTOP, NULL);
	one_call_error(1, s, "the stream failed inside this call (api_error: Internal server error)");
	free(s);
	/* the last event cut inside its data: the stream ended there */
	s = stream_of(START, TOOL(0, "toolu_1", "a"), JSON(0, "{}"), BSTOP(0), NULL);
	char *cut = tgi_xmalloc(strlen(s) + 64);
	sprintf(cut, "%sevent: message_stop\ndata: {\"type\":\"message_st", s);
	one_call_error(1, cut, "the stream ended before message_stop; the call was not run");
	free(cut);
	free(s);
#undef MSG
}

/* What the stream form accepts beyond the fixtures. */
static void test_stream_forms(void **state)
{
	tgi_pcalls out;
	char *s;
	/* a non-empty input in content_block_start and no deltas: that input */
	s = stream_of(START, "content_block_start {\"type\":\"content_block_start\",\"index\":0,"
	              "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"a\","
	              "\"input\":{\"path\":\"x\"}}}", BSTOP(0), MSTOP, NULL);
	accept(1, s, &out);
	assert_string_equal(out.v[0].args, "{\"path\":\"x\"}");
	tgi_pcalls_free(&out);
	free(s);
	/* no event: lines (the data's type alone), CRLF line ends, pings and unknown events */
	const char *bare =
	    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\r\n\r\n"
	    "data: {\"type\":\"ping\"}\r\n\r\n"
	    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\","
	    "\"id\":\"toolu_9\",\"name\":\"list_dir\",\"input\":{}}}\r\n\r\n"
	    "event: some_new_event\r\ndata: {\"type\":\"some_new_event\"}\r\n\r\n"
	    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\","
	    "\"partial_json\":\"{\\\"path\\\": \\\"\\u00e9t\\u00e9\\\"}\"}}\r\n\r\n"
	    "data: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n"
	    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\r\n\r\n"
	    "data: {\"type\":\"message_stop\"}\r\n\r\n"
	    "data: {\"type\":\"ping\"}\r\n\r\n";
	accept(1, bare, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0].id, "toolu_9");
	assert_string_equal(out.v[0].args, "{\"path\":\"\xc3\xa9t\xc3\xa9\"}");
	assert_string_equal(out.stop, "tool_use");
	tgi_pcalls_free(&out);
	/* two blocks open at once, deltas interleaved */
	s = stream_of(START, TOOL(0, "toolu_1", "a"), TOOL(1, "toolu_2", "b"), JSON(1, "{\\\"y\\\""),
	              JSON(0, "{\\\"x\\\":1}"), JSON(1, ":2}"), BSTOP(1), BSTOP(0), MSTOP, NULL);
	accept(1, s, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0].args, "{\"x\":1}");
	assert_string_equal(out.v[1].args, "{\"y\":2}");
	tgi_pcalls_free(&out);
	free(s);
}

/* ---- results ---- */

static void test_results(void **state)
{
	tgi_pcall v[4] = {
		{.id = "toolu_01A09q90qw90lq917835lq9", .name = "read_file"},
		{.id = "toolu_01B8sKdP4ZrV3Lq2Wm7Nx5Tc", .name = "list_dir"},
		{.id = "toolu_01C3hYt6VbN9Qm2Xr8Lk4Pwe", .name = "search_files"},
		{.id = "toolu_01D4jUu7WcM1Rn3Ys9Mp5Qxf", .name = "list_dir"},
	};
	tgi_pcalls calls = {.v = v, .n = 4, .text = "", .stop = "tool_use"};
	tgi_presult res[4] = {
		{"persisted", 0, "1\t# toolgate\n2\t", NULL},
		{"denied", 1, "denied (not_permitted): list_dir is not allowed here; do not retry; ask the owner", NULL},
		{"failed", 1, "failed (tool_error): pattern \"TODO(\" does not compile: missing closing parenthesis", NULL},
		{"replayed", 0, "{\"entries\":[]}", NULL},
	};
	json_t *got = P->results(&calls, res);
	json_t *want = fixture_json("results_expected.json");
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("results differ:\n%s", s);
	}
	/* the tool_result blocks are the whole content, in call order */
	json_t *content = json_object_get(json_array_get(got, 0), "content");
	assert_int_equal(json_array_size(got), 1);
	assert_int_equal(json_array_size(content), 4);
	assert_null(json_object_get(json_array_get(content, 0), "is_error"));
	assert_true(json_is_true(json_object_get(json_array_get(content, 1), "is_error")));
	json_decref(got);
	json_decref(want);

	/* bytes that are not UTF-8 still make valid JSON; no calls, no message */
	res[0].text = "caf\xe9";
	calls.n = 1;
	got = P->results(&calls, res);
	json_t *c0 = json_array_get(json_object_get(json_array_get(got, 0), "content"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "content")), "caf\xef\xbf\xbd");
	json_decref(got);
	calls.n = 0;
	got = P->results(&calls, NULL);
	assert_true(json_is_array(got));
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
}

/* Decoded calls answered as they came: ids line up in order. */
static void test_results_from_decode(void **state)
{
	size_t len;
	char *text = fixture("several_calls.sse", &len), err[256];
	tgi_pcalls calls;
	assert_int_equal(P->decode_stream(text, len, &calls, err, sizeof err), 0);
	tgi_presult res[3] = {{"persisted", 0, "a", NULL}, {"invalid", 1, "b", NULL},
	                      {"persisted", 0, "c", NULL}};
	json_t *got = P->results(&calls, res);
	json_t *content = json_object_get(json_array_get(got, 0), "content");
	assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "role")), "user");
	for (size_t i = 0; i < 3; i++) {
		json_t *b = json_array_get(content, i);
		assert_string_equal(json_string_value(json_object_get(b, "type")), "tool_result");
		assert_string_equal(json_string_value(json_object_get(b, "tool_use_id")), calls.v[i].id);
		assert_string_equal(json_string_value(json_object_get(b, "content")), res[i].text);
		assert_int_equal(json_object_get(b, "is_error") != NULL, res[i].is_error);
	}
	json_decref(got);
	tgi_pcalls_free(&calls);
	free(text);
}

/* ---- definitions ---- */

static void test_tools(void **state)
{
	char err[512] = "";
	json_t *defs = fixture_json("tools_defs.json");
	json_t *want = fixture_json("tools_expected.json");
	json_t *got = P->tools(defs, 0, err, sizeof err);
	if (!got)
		fail_msg("refused: %s", err);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("definitions differ:\n%s", s);
	}
	/* "type" comes first in every input_schema; flags change nothing here */
	size_t i;
	json_t *t;
	json_array_foreach(got, i, t)
		assert_string_equal(json_object_iter_key(json_object_iter(json_object_get(t, "input_schema"))),
		                    "type");
	json_t *again = P->tools(defs, TGI_DIALECT_GEMINI_LEGACY, err, sizeof err);
	assert_true(json_equal(got, again));
	/* the definitions given are not changed */
	json_t *fresh = fixture_json("tools_defs.json");
	assert_true(json_equal(defs, fresh));
	json_decref(fresh);
	json_decref(again);
	json_decref(got);
	json_decref(defs);
	json_decref(want);
}

static const char *tools_refusal(const char *defs_text)
{
	static char err[512];
	json_error_t je;
	json_t *defs = json_loads(defs_text, JSON_DECODE_ANY, &je);
	assert_non_null(defs);
	err[0] = '\0';
	json_t *got = P->tools(defs, 0, err, sizeof err);
	if (got)
		fail_msg("accepted: %s", defs_text);
	json_decref(defs);
	assert_true(err[0] != '\0');
	return err;
}

static void test_tools_refused(void **state)
{
	char long_name[200];
	assert_string_equal(tools_refusal("{}"), "the tool definitions are not a JSON array");
	assert_string_equal(tools_refusal("[{\"description\":\"x\"}]"),
	                    "tool definition 0 has no \"name\"");
	assert_string_equal(tools_refusal("[{\"name\":\"ok\"},{\"name\":7}]"),
	                    "tool definition 1 has no \"name\"");
	assert_string_equal(tools_refusal("[{\"name\":\"t\",\"input_schema\":{\"type\":\"string\"}}]"),
	                    "tool \"t\": anthropic takes only an object schema (\"type\":\"object\") "
	                    "as input_schema");
	assert_string_equal(tools_refusal("[{\"name\":\"t\",\"input_schema\":{\"type\":[\"array\",\"null\"]}}]"),
	                    "tool \"t\": anthropic takes only an object schema (\"type\":\"object\") "
	                    "as input_schema");
	assert_string_equal(tools_refusal("[{\"name\":\"t\",\"input_schema\":false}]"),
	                    "tool \"t\": anthropic takes only an object schema (\"type\":\"object\") "
	                    "as input_schema");
	/* names Anthropic refuses: the dialect's sentence, naming the tool */
	const char *e = tools_refusal("[{\"name\":\"fs.read\"}]");
	assert_non_null(strstr(e, "fs.read"));
	e = tools_refusal("[{\"name\":\"has space\"}]");
	assert_non_null(strstr(e, "has space"));
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	char defs[300];
	snprintf(defs, sizeof defs, "[{\"name\":\"%s\"}]", long_name);
	e = tools_refusal(defs);
	assert_non_null(strstr(e, "aaaa"));
	/* 64 characters are fine */
	long_name[64] = '\0';
	snprintf(defs, sizeof defs, "[{\"name\":\"%s\"}]", long_name);
	json_t *d = json_loads(defs, 0, NULL);
	char err[256];
	json_t *got = P->tools(d, 0, err, sizeof err);
	assert_non_null(got);
	json_decref(got);
	json_decref(d);
}

int main(void)
{
	if (fixture_open("anthropic") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_stream_matches_message),
		cmocka_unit_test(test_message_refused),
		cmocka_unit_test(test_stream_refused),
		cmocka_unit_test(test_call_errors),
		cmocka_unit_test(test_stream_forms),
		cmocka_unit_test(test_results),
		cmocka_unit_test(test_results_from_decode),
		cmocka_unit_test(test_tools),
		cmocka_unit_test(test_tools_refused),
	};
	return cmocka_run_group_tests_name("anthropic", tests, NULL, NULL);
}
