/*
 * test_openai_chat.c — the OpenAI Chat Completions protocol
 * (src/protocol/openai_chat.c) and the protocol table (protocol.c).
 *
 * Fixtures in tests/data/protocols/openai-chat/: each response (NAME.json)
 * and stream (NAME.sse) has NAME[.sse].expect.json with the text, the stop
 * and every call (id, name, args, raw, error) it must decode to.  They
 * cover a text-only reply, one call, parallel calls, calls without
 * arguments, arguments that are not JSON, a forced call that ends with
 * "stop", a custom call, the token limit inside a call, and streams cut
 * inside a call and inside an event.  tools.defs.json -> tools.golden.json
 * is the definitions export (strict and non-strict schemas);
 * results.golden.json is the tool messages for custom_call.json.  The
 * tables below hold what is not a fixture: responses and streams that are
 * not this API's, malformed call entries, and the limits.
 *
 * Owns: its tables.  Must not: touch the network or files outside the
 * repository.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <cmocka.h>

#include "protocol/protocol.h"
#include "util/sse.h"
#include "util/util.h"
#include "fixture.h"


static const tgi_protocol *P = &tgi_protocol_openai_chat;

static void assert_opt_string(const char *got, const json_t *want, const char *what)
{
	if (json_is_null(want) || !want) {
		if (got)
			fail_msg("%s: got \"%s\", want null", what, got);
		return;
	}
	if (!got)
		fail_msg("%s: got null, want \"%s\"", what, json_string_value(want));
	assert_string_equal(got, json_string_value(want));
}

/* Decoded calls against an expect file's {text, stop, calls}. */
static void assert_calls(const tgi_pcalls *c, const json_t *want)
{
	const json_t *calls = json_object_get(want, "calls");
	assert_non_null(c->text);
	assert_string_equal(c->text, json_string_value(json_object_get(want, "text")));
	assert_opt_string(c->stop, json_object_get(want, "stop"), "stop");
	assert_int_equal(c->n, json_array_size(calls));
	for (size_t i = 0; i < c->n; i++) {
		const json_t *w = json_array_get(calls, i);
		const json_t *args = json_object_get(w, "args");
		print_message("  call %zu\n", i);
		assert_opt_string(c->v[i].id, json_object_get(w, "id"), "id");
		assert_opt_string(c->v[i].name, json_object_get(w, "name"), "name");
		assert_opt_string(c->v[i].error, json_object_get(w, "error"), "error");
		assert_int_equal(c->v[i].raw, json_is_true(json_object_get(w, "raw")));
		assert_null(c->v[i].echo);
		if (json_is_null(args)) {
			assert_null(c->v[i].args);
		} else {
			assert_non_null(c->v[i].args);
			assert_int_equal(c->v[i].args_len, json_string_length(args));
			assert_memory_equal(c->v[i].args, json_string_value(args), c->v[i].args_len);
			assert_int_equal(c->v[i].args[c->v[i].args_len], '\0');
		}
	}
}

static const char *const fixtures[] = {
	"text.json",           "one_call.json",       "parallel_calls.json", "no_args.json",
	"invalid_args.json",   "forced_stop.json",    "custom_call.json",    "length_cut.json",
	"text.sse",            "one_call.sse",        "parallel_calls.sse",  "no_args.sse",
	"invalid_args.sse",    "forced_stop.sse",     "truncated.sse",       "truncated_event.sse",
	"length_cut.sse",
};

static void test_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
		const char *name = fixtures[i];
		size_t n = strlen(name), len;
		int stream = n > 4 && strcmp(name + n - 4, ".sse") == 0;
		char expect[128], err[512] = "";
		tgi_pcalls c;

		print_message("%s\n", name);
		if (stream)
			snprintf(expect, sizeof expect, "%s.expect.json", name);
		else
			snprintf(expect, sizeof expect, "%.*s.expect.json", (int)(n - 5), name);
		char *text = fixture(name, &len);
		json_t *want = fixture_json(expect);
		int rc = (stream ? P->decode_stream : P->decode)(text, len, &c, err, sizeof err);
		if (rc != 0)
			fail_msg("%s: %s", name, err);
		assert_calls(&c, want);
		tgi_pcalls_free(&c);
		json_decref(want);
		free(text);
	}
}

/* ---- responses and streams that are not this API's ----------------------- */

typedef struct bad_case {
	const char *in;
	const char *err;    /* the whole sentence, or its start when prefix */
	int         prefix;
} bad_case;

static const bad_case bad_responses[] = {
	{ "", "the response is not JSON (line 1, column 0): ", 1 },
	{ "{\"choices\": [", "the response is not JSON (line 1, column 13): ", 1 },
	{ "[]", "the response is not a JSON object", 0 },
	{ "\"chat.completion\"", "the response is not JSON", 1 },
	{ "{\"error\": {\"message\": \"Incorrect API key provided: sk-xx.\", \"type\": "
	  "\"invalid_request_error\", \"code\": \"invalid_api_key\"}}",
	  "the response is an API error: Incorrect API key provided: sk-xx.", 0 },
	{ "{\"error\": {\"message\": \"bad\\nkey\\u001b[31m\"}}",
	  "the response is an API error: bad key [31m", 0 },
	{ "{\"error\": {}}", "the response is an API error: (no message)", 0 },
	{ "{\"object\": \"response\", \"output\": []}",
	  "the response is a \"response\" object, not a chat.completion", 0 },
	{ "{\"object\": \"chat.completion.chunk\", \"choices\": []}",
	  "the response is a \"chat.completion.chunk\" object, not a chat.completion", 0 },
	{ "{\"type\": \"message\", \"content\": []}",
	  "the response has no choices; is it a Chat Completions response?", 0 },
	{ "{\"choices\": []}", "the response has no choices; is it a Chat Completions response?",
	  0 },
	{ "{\"choices\": {}}", "the response has no choices; is it a Chat Completions response?",
	  0 },
	{ "{\"choices\": [{\"index\": 0, \"finish_reason\": \"stop\"}]}",
	  "the response's first choice has no message", 0 },
	{ "{\"choices\": [7]}", "the response's first choice has no message", 0 },
	{ "{\"choices\": [{\"message\": {\"tool_calls\": {}}}]}",
	  "the message's tool_calls is not an array", 0 },
};

static const bad_case bad_streams[] = {
	{ "", "the stream has no events; is it a Chat Completions stream?", 0 },
	{ ": ping\n\n\n", "the stream has no events; is it a Chat Completions stream?", 0 },
	{ "event: ping\n\n", "the stream has no events; is it a Chat Completions stream?", 0 },
	{ "data: {nope\n\ndata: [DONE]\n\n", "the event on line 1 is not JSON: ", 1 },
	{ "data: [1]\n\n", "the event on line 1 is not a JSON object", 0 },
	{ ": hi\ndata: \"x\"\n\n", "the event on line 2 is not JSON", 1 },
	{ "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n",
	  "the event on line 1 has no choices; is this a Chat Completions stream?", 0 },
	{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
	  "the event on line 1 has no choices; is this a Chat Completions stream?", 0 },
	{ "data: {\"object\":\"chat.completion\",\"choices\":[]}\n\n",
	  "the event on line 1 is a \"chat.completion\" object, not a chat.completion.chunk", 0 },
	{ "data: {\"choices\":[]}\n\ndata: {\"error\":{\"message\":\"The server had an error "
	  "while processing your request.\"}}\n\n",
	  "the event on line 3 is an API error: The server had an error while processing your "
	  "request.", 0 },
	{ "data: {\"choices\":[1]}\n\n", "the event on line 1 has a choice that is not an object",
	  0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":7}}]}\n\n",
	  "the event on line 1 has content that is not a string", 0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":{}}}]}\n\n",
	  "the event on line 1 has tool_calls that are not an array", 0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[7]}}]}\n\n",
	  "the event on line 1 has a tool_calls entry that is not an object", 0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"c\","
	  "\"function\":{\"name\":\"x\"}}]}}]}\n\n",
	  "the event on line 1 has a tool_calls entry without an index from 0 to 1023", 0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":\"0\"}]}}]}\n\n",
	  "the event on line 1 has a tool_calls entry without an index from 0 to 1023", 0 },
	{ "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n",
	  "the event on line 3 has a tool_calls entry without an index from 0 to 1023", 0 },
	{ "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1024}]}}]}\n\n",
	  "the event on line 1 has a tool_calls entry without an index from 0 to 1023", 0 },
};

static void check_bad(const bad_case *c, int stream)
{
	tgi_pcalls calls;
	char err[512] = "";
	print_message("%s\n", c->in);
	int rc = (stream ? P->decode_stream : P->decode)(c->in, strlen(c->in), &calls, err,
	                                                 sizeof err);
	assert_int_equal(rc, -1);
	if (c->prefix)
		assert_int_equal(strncmp(err, c->err, strlen(c->err)), 0);
	else
		assert_string_equal(err, c->err);
	/* nothing is left to the caller, and freeing is still safe */
	assert_int_equal(calls.n, 0);
	assert_null(calls.v);
	assert_null(calls.text);
	assert_null(calls.stop);
	tgi_pcalls_free(&calls);
}

static void test_bad_responses(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_responses / sizeof bad_responses[0]; i++)
		check_bad(&bad_responses[i], 0);
}

static void test_bad_streams(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_streams / sizeof bad_streams[0]; i++)
		check_bad(&bad_streams[i], 1);
}

static void test_stream_nul_and_size(void **state)
{
	(void)state;
	static const char nul[] = "data: {\"choices\":[]}\n\ndata: [DO\0NE]\n\n";
	tgi_pcalls c;
	char err[256] = "";
	assert_int_equal(P->decode_stream(nul, sizeof nul - 1, &c, err, sizeof err), -1);
	assert_string_equal(err, "the stream has a NUL byte on line 3");
	assert_int_equal(c.n, 0);

	char *big = malloc((size_t)TGI_SSE_MAX + 1);
	assert_non_null(big);
	assert_int_equal(P->decode_stream(big, (size_t)TGI_SSE_MAX + 1, &c, err, sizeof err), -1);
	assert_string_equal(err, "the stream is 67108865 bytes, over the limit of 64 MiB");
	assert_int_equal(P->decode(big, (size_t)TGI_SSE_MAX + 1, &c, err, sizeof err), -1);
	assert_string_equal(err, "the response is 67108865 bytes, over the limit of 64 MiB");
	assert_int_equal(c.n, 0);
	free(big);
}

static void test_too_many_calls(void **state)
{
	(void)state;
	tgi_buf b;
	tgi_pcalls c;
	char err[256] = "";
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "{\"choices\":[{\"message\":{\"tool_calls\":[");
	for (int i = 0; i < 1025; i++)
		tgi_buf_printf(&b, "%s{\"id\":\"c%d\",\"type\":\"function\",\"function\":{\"name\":"
		               "\"list_dir\",\"arguments\":\"{}\"}}", i ? "," : "", i);
	tgi_buf_puts(&b, "]}}]}");
	assert_int_equal(P->decode(b.p, b.len, &c, err, sizeof err), -1);
	assert_string_equal(err, "the response has 1025 tool calls, over the limit of 1024");

	/* 1024 is fine */
	char *last = strstr(b.p, ",{\"id\":\"c1024\"");
	assert_non_null(last);
	strcpy(last, "]}}]}");
	assert_int_equal(P->decode(b.p, strlen(b.p), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 1024);
	assert_string_equal(c.v[1023].id, "c1023");
	tgi_pcalls_free(&c);
	tgi_buf_free(&b);
}

/* ---- malformed calls: each still counted, with its error ------------------ */

typedef struct call_case {
	const char *entry;  /* one element of message.tool_calls */
	const char *id, *name, *args;
	int         raw;
	const char *error;
} call_case;

static const call_case call_cases[] = {
	{ "7", NULL, NULL, NULL, 0, "the tool call is not a JSON object" },
	{ "{\"id\":\"c1\",\"type\":\"web_search\",\"web_search\":{}}", "c1", NULL, NULL, 0,
	  "the tool call has the unknown type \"web_search\"" },
	{ "{\"id\":\"c2\",\"type\":\"function\"}", "c2", NULL, NULL, 0,
	  "the tool call has no \"function\" object" },
	{ "{\"id\":\"c3\",\"type\":\"function\",\"function\":{\"arguments\":\"{}\"}}", "c3", NULL, "{}",
	  0, "the tool call has no tool name" },
	{ "{\"id\":\"c4\",\"type\":\"function\",\"function\":{\"name\":\"\",\"arguments\":\"{}\"}}",
	  "c4", NULL, "{}", 0, "the tool call has no tool name" },
	{ "{\"id\":\"c5\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":{\"a\":1}}}",
	  "c5", "x", NULL, 0, "the arguments are not a JSON string" },
	{ "{\"id\":\"c6\",\"type\":\"function\",\"function\":{\"name\":\"read\\u0000_file\","
	  "\"arguments\":\"{}\"}}",
	  "c6", "read", "{}", 0, "the tool name has a NUL byte" },
	{ "{\"id\":\"c\\u00007\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":"
	  "\"{}\"}}",
	  "c", "x", "{}", 0, "the call id has a NUL byte" },
	{ "{\"id\":\"c8\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":null}}",
	  "c8", "x", "{}", 0, NULL },
	{ "{\"id\":\"c9\",\"type\":\"function\",\"function\":{\"name\":\"x\"}}", "c9", "x", "{}", 0,
	  NULL },
	{ "{\"id\":\"c10\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":\" \\n\\t"
	  "\"}}",
	  "c10", "x", "{}", 0, NULL },
	/* valid JSON that is not an object is the gate's to refuse, with its own words */
	{ "{\"id\":\"c11\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":\"[1]\"}}",
	  "c11", "x", "[1]", 0, NULL },
	{ "{\"id\":\"c12\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}", "c12", "x", "{}", 0,
	  NULL },
	{ "{\"id\":\"c13\",\"custom\":{\"name\":\"apply_patch\",\"input\":\"text\"}}", "c13",
	  "apply_patch", "text", 1, NULL },
	{ "{\"id\":\"c14\",\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\",\"input\":\"\"}}",
	  "c14", "apply_patch", "", 1, NULL },
	{ "{\"id\":\"c15\",\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\",\"input\":5}}",
	  "c15", "apply_patch", NULL, 0, "the custom tool call's input is not a string" },
	{ "{\"id\":\"c16\",\"type\":\"custom\",\"function\":{\"name\":\"x\"}}", "c16", NULL, NULL, 0,
	  "the custom tool call has no \"custom\" object" },
	{ "{\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}", NULL, "x", "{}",
	  0, NULL },
	{ "{\"id\":\"c18\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":"
	  "\"{\\\"a\\\":1,}\"}}",
	  "c18", "x", "{\"a\":1,}", 0,
	  "the arguments are not valid JSON at byte 8: string or '}' expected near '}'" },
	{ "{\"id\":\"c19\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":"
	  "\"{\\\"a\\\":1} {}\"}}",
	  "c19", "x", "{\"a\":1} {}", 0,
	  "the arguments are not valid JSON at byte 9: end of file expected near '{'" },
	/* the parse error quotes the model's bytes: control characters do not pass */
	{ "{\"id\":\"c20\",\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":"
	  "\"{\\u001b[2J\"}}",
	  "c20", "x", "{\x1b[2J", 0,
	  "the arguments are not valid JSON at byte 2: string or '}' expected near ' '" },
};

static void test_malformed_calls(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof call_cases / sizeof call_cases[0]; i++) {
		const call_case *k = &call_cases[i];
		tgi_buf b;
		tgi_pcalls c;
		char err[256] = "";
		print_message("%s\n", k->entry);
		tgi_buf_init(&b, 1u << 16);
		/* the malformed call between two good ones: all three are counted */
		tgi_buf_printf(&b, "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":["
		               "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\","
		               "\"arguments\":\"{}\"}},%s,"
		               "{\"id\":\"z\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\","
		               "\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}",
		               k->entry);
		assert_int_equal(P->decode(b.p, b.len, &c, err, sizeof err), 0);
		assert_int_equal(c.n, 3);
		assert_string_equal(c.v[0].id, "a");
		assert_null(c.v[0].error);
		assert_string_equal(c.v[2].id, "z");
		assert_null(c.v[2].error);
		const tgi_pcall *m = &c.v[1];
		if (k->id)
			assert_string_equal(m->id, k->id);
		else
			assert_null(m->id);
		if (k->name)
			assert_string_equal(m->name, k->name);
		else
			assert_null(m->name);
		if (k->args) {
			assert_non_null(m->args);
			assert_int_equal(m->args_len, strlen(k->args));
			assert_string_equal(m->args, k->args);
		} else {
			assert_null(m->args);
		}
		if (k->raw)
			assert_true(m->raw);
		if (k->error)
			assert_string_equal(m->error, k->error);
		else
			assert_null(m->error);
		tgi_pcalls_free(&c);
		tgi_buf_free(&b);
	}
}

static void test_args_with_nul_byte(void **state)
{
	(void)state;
	/* the arguments string carries a raw NUL: not JSON, kept whole */
	const char *in = "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"c\",\"type\":"
	                 "\"function\",\"function\":{\"name\":\"x\",\"arguments\":"
	                 "\"{\\\"a\\\":\\\"\\u0000\\\"}\"}}]}}]}";
	tgi_pcalls c;
	char err[256] = "";
	assert_int_equal(P->decode(in, strlen(in), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.v[0].args_len, 9);
	assert_memory_equal(c.v[0].args, "{\"a\":\"\0\"}", 9);
	assert_non_null(c.v[0].error);
	assert_int_equal(strncmp(c.v[0].error, "the arguments are not valid JSON at byte ", 41), 0);
	tgi_pcalls_free(&c);
}

static void test_first_choice_only(void **state)
{
	(void)state;
	const char *in = "{\"object\":\"chat.completion\",\"choices\":["
	                 "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"one\"},"
	                 "\"finish_reason\":\"stop\"},"
	                 "{\"index\":1,\"message\":{\"role\":\"assistant\",\"content\":null,"
	                 "\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":"
	                 "\"x\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}";
	tgi_pcalls c;
	char err[256] = "";
	assert_int_equal(P->decode(in, strlen(in), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 0);
	assert_string_equal(c.text, "one");
	assert_string_equal(c.stop, "stop");
	tgi_pcalls_free(&c);
}

/* ---- streams: what the fixtures do not show ------------------------------- */

#define CHUNK(delta, finish)                                                                   \
	"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":" delta      \
	",\"finish_reason\":" finish "}]}\n\n"
#define CALL(ix, rest) "{\"tool_calls\":[{\"index\":" #ix rest "}]}"

typedef struct stream_case {
	const char *what;
	const char *in;
	const char *expect; /* {text, stop, calls} as in the fixtures */
} stream_case;

static const stream_case stream_cases[] = {
	{ "[DONE] without a finish_reason is complete",
	  CHUNK(CALL(0, ",\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"x\","
	                "\"arguments\":\"{}\"}"), "null") "data: [DONE]\n\n",
	  "{\"text\":\"\",\"stop\":null,\"calls\":[{\"id\":\"c\",\"name\":\"x\",\"args\":\"{}\","
	  "\"raw\":false,\"error\":null}]}" },
	{ "a finish_reason without [DONE] is complete",
	  CHUNK(CALL(0, ",\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"x\","
	                "\"arguments\":\"{}\"}"), "null") CHUNK("{}", "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"c\",\"name\":\"x\","
	  "\"args\":\"{}\",\"raw\":false,\"error\":null}]}" },
	{ "nothing after [DONE] is read",
	  CHUNK("{\"content\":\"hi\"}", "\"stop\"") "data: [DONE]\n\ndata: {garbage\n\n"
	  CHUNK(CALL(0, ",\"id\":\"late\",\"function\":{\"name\":\"x\"}"), "null"),
	  "{\"text\":\"hi\",\"stop\":\"stop\",\"calls\":[]}" },
	{ "a cut text-only stream has no calls",
	  CHUNK("{\"content\":\"Hel\"}", "null") "data: {\"choices\":[{\"index\":0,\"delta\":{\"con",
	  "{\"text\":\"Hel\",\"stop\":null,\"calls\":[]}" },
	{ "[DONE] as a truncated last event still ends the stream",
	  CHUNK(CALL(0, ",\"id\":\"c\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}"), "null")
	  "data: [DONE]",
	  "{\"text\":\"\",\"stop\":null,\"calls\":[{\"id\":\"c\",\"name\":\"x\",\"args\":\"{}\","
	  "\"raw\":false,\"error\":null}]}" },
	{ "calls come back in index order",
	  CHUNK(CALL(1, ",\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{}\"}"), "null")
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}"), "null")
	  CHUNK("{}", "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":["
	  "{\"id\":\"a\",\"name\":\"x\",\"args\":\"{}\",\"raw\":false,\"error\":null},"
	  "{\"id\":\"b\",\"name\":\"y\",\"args\":\"{}\",\"raw\":false,\"error\":null}]}" },
	{ "interleaved pieces are joined per index",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"p\\\":\"}"),
	        "null")
	  CHUNK(CALL(1, ",\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"q\\\":\"}"),
	        "null")
	  CHUNK(CALL(0, ",\"function\":{\"arguments\":\"1}\"}"), "null")
	  CHUNK(CALL(1, ",\"function\":{\"arguments\":\"2}\"}"), "null")
	  CHUNK("{}", "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":["
	  "{\"id\":\"a\",\"name\":\"x\",\"args\":\"{\\\"p\\\":1}\",\"raw\":false,\"error\":null},"
	  "{\"id\":\"b\",\"name\":\"y\",\"args\":\"{\\\"q\\\":2}\",\"raw\":false,\"error\":null}]}" },
	{ "an id and name repeated in later pieces are not joined",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"x\","
	                "\"arguments\":\"{\"}"), "null")
	  CHUNK(CALL(0, ",\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"x\","
	                "\"arguments\":\"}\"}"), "null")
	  CHUNK("{}", "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"a\",\"name\":\"x\","
	  "\"args\":\"{}\",\"raw\":false,\"error\":null}]}" },
	{ "a call that never got a name",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"arguments\":\"{}\"}"), "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"a\",\"name\":null,"
	  "\"args\":\"{}\",\"raw\":false,\"error\":\"the tool call has no tool name\"}]}" },
	{ "arguments that are not a string",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":{}}"),
	        "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"a\",\"name\":\"x\","
	  "\"args\":\"{}\",\"raw\":false,\"error\":\"the arguments are not a string\"}]}" },
	{ "a function that is not an object",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":\"x\""), "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"a\",\"name\":null,"
	  "\"args\":\"{}\",\"raw\":false,\"error\":\"the tool call's \\\"function\\\" is not an "
	  "object\"}]}" },
	{ "other choices are not this answer",
	  "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\",\"tool_calls\":[{\"index\":0,"
	  "\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{}\"}}]},\"finish_reason\":null},"
	  "{\"index\":0,\"delta\":{\"content\":\"A\"},\"finish_reason\":\"stop\"}]}\n\n",
	  "{\"text\":\"A\",\"stop\":\"stop\",\"calls\":[]}" },
	{ "custom call pieces, in the message's custom shape",
	  CHUNK(CALL(0, ",\"id\":\"p\",\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\","
	                "\"input\":\"*** Begin Patch\\n\"}"), "null")
	  CHUNK(CALL(0, ",\"custom\":{\"input\":\"*** End Patch\\n\"}"), "null")
	  CHUNK("{}", "\"tool_calls\""),
	  "{\"text\":\"\",\"stop\":\"tool_calls\",\"calls\":[{\"id\":\"p\",\"name\":\"apply_patch\","
	  "\"args\":\"*** Begin Patch\\n*** End Patch\\n\",\"raw\":true,\"error\":null}]}" },
	{ "a cut custom call keeps its text and is invalid",
	  CHUNK(CALL(0, ",\"id\":\"p\",\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\","
	                "\"input\":\"*** Begin Patch\\n\"}"), "null"),
	  "{\"text\":\"\",\"stop\":null,\"calls\":[{\"id\":\"p\",\"name\":\"apply_patch\","
	  "\"args\":\"*** Begin Patch\\n\",\"raw\":true,"
	  "\"error\":\"the stream ended inside this call\"}]}" },
	{ "the token limit on a call with no arguments yet",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}"), "null")
	  CHUNK(CALL(1, ",\"id\":\"b\",\"function\":{\"name\":\"shell\",\"arguments\":\"\"}"), "null")
	  CHUNK("{}", "\"length\"") "data: [DONE]\n\n",
	  "{\"text\":\"\",\"stop\":\"length\",\"calls\":["
	  "{\"id\":\"a\",\"name\":\"x\",\"args\":\"{}\",\"raw\":false,\"error\":null},"
	  "{\"id\":\"b\",\"name\":\"shell\",\"args\":null,\"raw\":false,\"error\":"
	  "\"the response hit the token limit before this call's arguments came\"}]}" },
	{ "the token limit after complete arguments",
	  CHUNK(CALL(0, ",\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}"), "null")
	  CHUNK("{}", "\"length\""),
	  "{\"text\":\"\",\"stop\":\"length\",\"calls\":[{\"id\":\"a\",\"name\":\"x\",\"args\":\"{}\","
	  "\"raw\":false,\"error\":null}]}" },
	{ "usage chunk with no choices, and null content",
	  CHUNK("{\"role\":\"assistant\",\"content\":null}", "\"stop\"")
	  "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"total_tokens\":5}}"
	  "\n\ndata: [DONE]\n\n",
	  "{\"text\":\"\",\"stop\":\"stop\",\"calls\":[]}" },
	{ "a stream of only [DONE]", "data: [DONE]\n\n", "{\"text\":\"\",\"stop\":null,\"calls\":[]}" },
};

static void test_stream_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof stream_cases / sizeof stream_cases[0]; i++) {
		const stream_case *k = &stream_cases[i];
		tgi_pcalls c;
		char err[512] = "";
		json_error_t je;
		print_message("%s\n", k->what);
		json_t *want = json_loads(k->expect, 0, &je);
		if (!want)
			fail_msg("expectation: %s", je.text);
		if (P->decode_stream(k->in, strlen(k->in), &c, err, sizeof err) != 0)
			fail_msg("%s", err);
		assert_calls(&c, want);
		tgi_pcalls_free(&c);
		json_decref(want);
	}
}

/* ---- results -------------------------------------------------------------- */

static void test_results_golden(void **state)
{
	(void)state;
	size_t len;
	char *text = fixture("custom_call.json", &len);
	tgi_pcalls c;
	char err[256] = "";
	assert_int_equal(P->decode(text, len, &c, err, sizeof err), 0);
	assert_int_equal(c.n, 2);
	const tgi_presult res[2] = {
		{ "denied", 1, "denied (not_permitted): do not retry; ask the owner", NULL },
		{ "persisted", 0, "1\thello, world", NULL },
	};
	json_t *got = P->results(&c, res);
	json_t *want = fixture_json("results.golden.json");
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("results differ:\n%s", s);
	}
	json_decref(got);
	json_decref(want);
	tgi_pcalls_free(&c);
	free(text);
}

static void test_results_edges(void **state)
{
	(void)state;
	tgi_pcall v[3] = {
		{ .id = "call_1", .name = "read_file" },
		{ .id = NULL, .name = NULL, .error = "the tool call is not a JSON object" },
		{ .id = "call_3", .name = "x" },
	};
	tgi_pcalls c = { .v = v, .n = 3, .text = "", .stop = NULL };
	const tgi_presult res[3] = {
		{ "persisted", 0, "caf\xC3\xA9 \xFF\xFE end", NULL },
		{ "invalid", 1, "invalid (invalid_input): the tool call is not a JSON object", NULL },
		{ "persisted", 0, NULL, NULL },
	};
	json_t *got = P->results(&c, res);
	json_error_t je;
	json_t *want = json_loads(
	    "[{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"caf\xC3\xA9 "
	    "\xEF\xBF\xBD\xEF\xBF\xBD end\"},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"\",\"content\":\"invalid (invalid_input): the tool "
	    "call is not a JSON object\"},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"call_3\",\"content\":\"\"}]",
	    0, &je);
	assert_non_null(want);
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);

	tgi_pcalls none = { .text = "" };
	got = P->results(&none, NULL);
	assert_true(json_is_array(got));
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
}

/* ---- definitions ---------------------------------------------------------- */

static void test_tools_golden(void **state)
{
	(void)state;
	json_t *defs = fixture_json("tools.defs.json");
	json_t *want = fixture_json("tools.golden.json");
	char err[256] = "";
	json_t *got = P->tools(defs, 0, err, sizeof err);
	if (!got)
		fail_msg("%s", err);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("definitions differ:\n%s", s);
	}
	/* the shape, whatever the dialect's translation: strict exactly when the
	 * dialect gives a strict schema, and then that schema */
	size_t i;
	json_t *t;
	json_array_foreach(got, i, t) {
		const json_t *def = json_array_get(defs, i);
		const json_t *fn = json_object_get(t, "function");
		json_t *strict = tgi_dialect_openai_strict(json_object_get(def, "input_schema"));
		assert_string_equal(json_string_value(json_object_get(t, "type")), "function");
		assert_int_equal(json_object_size(t), 2);
		assert_string_equal(json_string_value(json_object_get(fn, "name")),
		                    json_string_value(json_object_get(def, "name")));
		assert_true(json_equal(json_object_get(fn, "description"),
		                       json_object_get(def, "description")));
		assert_int_equal(json_is_true(json_object_get(fn, "strict")), strict != NULL);
		assert_true(json_is_boolean(json_object_get(fn, "strict")));
		assert_true(json_equal(json_object_get(fn, "parameters"),
		                       strict ? strict : json_object_get(def, "input_schema")));
		assert_null(json_object_get(fn, "annotations"));
		json_decref(strict);
	}
	/* both kinds are in the golden file */
	assert_true(json_is_true(json_object_get(json_object_get(json_array_get(got, 0), "function"),
	                                         "strict")));
	assert_true(json_is_false(json_object_get(json_object_get(json_array_get(got, 2), "function"),
	                                          "strict")));
	json_decref(got);
	json_decref(want);
	json_decref(defs);
}

static json_t *tools_of(const char *defs_text, char *err, size_t errlen)
{
	json_error_t je;
	json_t *defs = json_loads(defs_text, JSON_DECODE_ANY, &je);
	assert_non_null(defs);
	json_t *t = P->tools(defs, 0, err, errlen);
	json_decref(defs);
	return t;
}

static void test_tools_errors(void **state)
{
	(void)state;
	char err[256] = "";
	json_t *t;

	t = tools_of("[]", err, sizeof err);
	assert_true(json_is_array(t));
	assert_int_equal(json_array_size(t), 0);
	json_decref(t);

	/* no description: none is invented */
	t = tools_of("[{\"name\":\"ping\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}]",
	             err, sizeof err);
	assert_non_null(t);
	assert_null(json_object_get(json_object_get(json_array_get(t, 0), "function"),
	                            "description"));
	json_decref(t);

	assert_null(tools_of("{}", err, sizeof err));
	assert_string_equal(err, "the tool definitions are not a JSON array");
	assert_null(tools_of("[{\"description\":\"x\",\"input_schema\":{}}]", err, sizeof err));
	assert_string_equal(err, "tool definition 0 has no name");
	assert_null(tools_of("[{\"name\":\"ok\",\"input_schema\":{\"type\":\"object\"}},"
	                     "{\"name\":\"x\\u001b\",\"input_schema\":[]}]",
	                     err, sizeof err));
	assert_true(*err); /* the dialect's sentence on the name comes first */
	assert_null(tools_of("[{\"name\":\"x\",\"input_schema\":[]}]", err, sizeof err));
	assert_string_equal(err, "tool \"x\": input_schema is not a JSON object");

	/* names the API refuses: the dialect says why */
	static const char *const bad_names[] = {
		"[{\"name\":\"has space\",\"input_schema\":{\"type\":\"object\"}}]",
		"[{\"name\":\"a.b\",\"input_schema\":{\"type\":\"object\"}}]",
		"[{\"name\":\"\",\"input_schema\":{\"type\":\"object\"}}]",
		("[{\"name\":\"a123456789b123456789c123456789d123456789e123456789f123456789g1234\","
		 "\"input_schema\":{\"type\":\"object\"}}]"),
	};
	for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
		err[0] = '\0';
		assert_null(tools_of(bad_names[i], err, sizeof err));
		assert_true(*err);
		for (const char *p = err; *p; p++)
			assert_true((unsigned char)*p >= 0x20);
	}
	/* 64 characters is allowed */
	t = tools_of("[{\"name\":\"a123456789b123456789c123456789d123456789e123456789f123456789g123\","
	             "\"input_schema\":{\"type\":\"object\"}}]",
	             err, sizeof err);
	assert_non_null(t);
	json_decref(t);
}

/* ---- the protocol table --------------------------------------------------- */

static void test_find(void **state)
{
	(void)state;
	assert_ptr_equal(tgi_protocol_find("openai-chat"), &tgi_protocol_openai_chat);
	assert_ptr_equal(tgi_protocol_find("openai-responses"), &tgi_protocol_openai_responses);
	assert_ptr_equal(tgi_protocol_find("anthropic"), &tgi_protocol_anthropic);
	assert_ptr_equal(tgi_protocol_find("gemini"), &tgi_protocol_gemini);
	assert_null(tgi_protocol_find("openai"));
	assert_null(tgi_protocol_find("OpenAI-Chat"));
	assert_null(tgi_protocol_find(""));
	assert_null(tgi_protocol_find(NULL));
	const tgi_protocol *all[] = { &tgi_protocol_openai_chat, &tgi_protocol_openai_responses,
		                      &tgi_protocol_anthropic, &tgi_protocol_gemini };
	for (size_t i = 0; i < 4; i++) {
		assert_non_null(all[i]->tools);
		assert_non_null(all[i]->decode);
		assert_non_null(all[i]->decode_stream);
		assert_non_null(all[i]->results);
	}
	assert_string_equal(P->name, "openai-chat");
}

static void test_pcalls_free(void **state)
{
	(void)state;
	tgi_pcalls c = { 0 };
	tgi_pcalls_free(&c);
	tgi_pcalls_free(NULL);
	c.v = tgi_xcalloc(2, sizeof *c.v);
	c.n = 2;
	c.v[0].id = tgi_strdup("a");
	c.v[0].name = tgi_strdup("b");
	c.v[0].args = tgi_strdup("{}");
	c.v[1].error = tgi_strdup("e");
	c.v[1].echo = json_pack("{s:s}", "thoughtSignature", "x");
	c.text = tgi_strdup("t");
	c.stop = tgi_strdup("stop");
	tgi_pcalls_free(&c);
	assert_null(c.v);
	assert_int_equal(c.n, 0);
	assert_null(c.text);
	tgi_pcalls_free(&c); /* twice is harmless */
}

int main(void)
{
	if (fixture_open("openai-chat") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_bad_responses),
		cmocka_unit_test(test_bad_streams),
		cmocka_unit_test(test_stream_nul_and_size),
		cmocka_unit_test(test_too_many_calls),
		cmocka_unit_test(test_malformed_calls),
		cmocka_unit_test(test_args_with_nul_byte),
		cmocka_unit_test(test_first_choice_only),
		cmocka_unit_test(test_stream_cases),
		cmocka_unit_test(test_results_golden),
		cmocka_unit_test(test_results_edges),
		cmocka_unit_test(test_tools_golden),
		cmocka_unit_test(test_tools_errors),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_pcalls_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
