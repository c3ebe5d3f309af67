/*
 * test_dialogue.c — each API's conversation (src/agent/dialogue.c): the
 * request body of a turn, the first user entry, the assistant's entries
 * rebuilt from a decoded reply.
 *
 * The replies are the recorded responses and streams of the protocol tests
 * (tests/data/protocols/<api>/), decoded by src/protocol/.  Where the
 * decoder keeps everything a reply said, the rebuilt entry must be the
 * reply's own message (Chat's message, Responses' output items, Anthropic's
 * content, Gemini's content) less what the API adds on the way out (ids of
 * items, statuses, annotations, refusal) or what is not ours (reasoning,
 * thinking, server tools, thought parts); and the stream of the same turn
 * must rebuild the very same entry.  Then a whole two-turn conversation per
 * API — user, assistant with calls, the results protocol.h encodes for
 * them, the final answer — is checked for the pairing each API enforces.
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

#include "agent/agent.h"
#include "protocol/protocol.h"
#include "util/util.h"
#include "fixture.h"

/* ---- helpers --------------------------------------------------------------- */

static void assert_json_equal(const json_t *got, const json_t *want)
{
	if (json_equal(got, want))
		return;
	char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	print_error("got:  %s\nwant: %s\n", g ? g : "(null)", w ? w : "(null)");
	free(g);
	free(w);
	fail();
}

/* Decode a fixture of api's folder (a stream when the name ends in .sse). */
static void decode(const tgi_protocol *api, const char *name, tgi_pcalls *out)
{
	char err[512] = "";
	size_t len, nl = strlen(name);
	assert_int_equal(fixture_open(api->name), 0);
	char *text = fixture(name, &len);
	int stream = nl > 4 && !strcmp(name + nl - 4, ".sse");
	int rc = stream ? api->decode_stream(text, len, out, err, sizeof err)
	                : api->decode(text, len, out, err, sizeof err);
	free(text);
	if (rc != 0)
		fail_msg("%s/%s: %s", api->name, name, err);
}

/* The assistant entries rebuilt from a fixture.  New reference. */
static json_t *rebuilt(const tgi_protocol *api, const char *name)
{
	tgi_pcalls c;
	decode(api, name, &c);
	json_t *e = tgi_dialogue_assistant(api, &c);
	tgi_pcalls_free(&c);
	assert_non_null(e);
	assert_true(json_is_array(e));
	return e;
}

static json_t *fixture_of(const tgi_protocol *api, const char *name)
{
	assert_int_equal(fixture_open(api->name), 0);
	return fixture_json(name);
}

/* Keep only the listed keys of object o (NULL-terminated list). */
static void keep_keys(json_t *o, const char *const *keys)
{
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(o, tmp, k, v) {
		int keep = 0;
		for (size_t i = 0; keys[i]; i++)
			keep |= !strcmp(k, keys[i]);
		if (!keep)
			json_object_del(o, k);
	}
}

/* The JSON reply and the stream of the same turn rebuild the same entries. */
static void assert_same_turn(const tgi_protocol *api, const char *json_name,
                             const char *sse_name)
{
	json_t *a = rebuilt(api, json_name), *b = rebuilt(api, sse_name);
	assert_json_equal(b, a);
	json_decref(a);
	json_decref(b);
}

/* Fake results: every call "persisted" with a short text, the second (when
 * there is one) denied. */
static json_t *fake_results(const tgi_protocol *api, const tgi_pcalls *c)
{
	tgi_presult *res = calloc(c->n ? c->n : 1, sizeof *res);
	assert_non_null(res);
	for (size_t i = 0; i < c->n; i++) {
		res[i].status = i == 1 ? "denied" : "persisted";
		res[i].is_error = i == 1;
		res[i].text = i == 1 ? "denied (policy): not allowed here" : "ok";
	}
	json_t *out = api->results(c, res);
	free(res);
	assert_true(json_is_array(out));
	return out;
}

static void extend(json_t *history, json_t *entries)
{
	assert_int_equal(json_array_extend(history, entries), 0);
	json_decref(entries);
}

static const char *str_at(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	assert_non_null(s);
	return s;
}

/* ---- openai-chat ----------------------------------------------------------- */

static const tgi_protocol *CHAT = &tgi_protocol_openai_chat;
static const char *const chat_msg_keys[] = {"role", "content", "tool_calls", NULL};

/* The response's own message, less refusal and annotations. */
static void chat_is_message(const char *name)
{
	json_t *resp = fixture_of(CHAT, name);
	json_t *msg = json_deep_copy(json_object_get(json_array_get(json_object_get(resp,
	                             "choices"), 0), "message"));
	keep_keys(msg, chat_msg_keys);
	json_t *e = rebuilt(CHAT, name);
	assert_int_equal(json_array_size(e), 1);
	assert_json_equal(json_array_get(e, 0), msg);
	json_decref(e);
	json_decref(msg);
	json_decref(resp);
}

static void test_chat_entry_is_the_message(void **state)
{
	(void)state;
	chat_is_message("one_call.json");
	chat_is_message("parallel_calls.json");
	chat_is_message("custom_call.json");     /* type "custom" with its raw input */
	chat_is_message("invalid_args.json");    /* the bad arguments kept as they came */
	chat_is_message("text.json");            /* no tool_calls key at all */
}

static void sse_event(tgi_buf *out, json_t *delta, const char *finish)
{
	json_t *chunk = json_pack("{s:s, s:[{s:i, s:o, s:o}]}", "object", "chat.completion.chunk",
	                          "choices", "index", 0, "delta", delta, "finish_reason",
	                          finish ? json_string(finish) : json_null());
	char *s = json_dumps(chunk, JSON_COMPACT);
	assert_int_equal(tgi_buf_append(out, "data: ", 6), 0);
	assert_int_equal(tgi_buf_append(out, s, strlen(s)), 0);
	assert_int_equal(tgi_buf_append(out, "\n\n", 2), 0);
	free(s);
	json_decref(chunk);
}

/* A string cut in two at its middle byte (pieces as a stream sends them). */
static json_t *half(const char *s, int second)
{
	size_t n = strlen(s), m = n / 2;
	return second ? json_stringn(s + m, n - m) : json_stringn(s, m);
}

/* The stream a Chat Completions server sends for this response: content
 * in two pieces, each call's id, type and name first, then its arguments
 * in two pieces, the finish_reason, [DONE]. */
static char *chat_stream_of(const json_t *resp, size_t *len)
{
	const json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
	const json_t *msg = json_object_get(choice, "message");
	const char *content = json_string_value(json_object_get(msg, "content"));
	const json_t *tc;
	size_t i;
	tgi_buf out;

	tgi_buf_init(&out, FIXTURE_MAX);
	sse_event(&out, json_pack("{s:s}", "role", "assistant"), NULL);
	if (content && *content)
		for (int k = 0; k < 2; k++)
			sse_event(&out, json_pack("{s:o}", "content", half(content, k)), NULL);
	json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
		const json_t *fn = json_object_get(tc, "function");
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		sse_event(&out, json_pack("{s:[{s:i, s:O, s:s, s:{s:O, s:s}}]}", "tool_calls", "index",
		                          (int)i, "id", json_object_get(tc, "id"), "type", "function",
		                          "function", "name", json_object_get(fn, "name"),
		                          "arguments", ""), NULL);
		for (int k = 0; k < 2; k++)
			sse_event(&out, json_pack("{s:[{s:i, s:{s:o}}]}", "tool_calls", "index", (int)i,
			                          "function", "arguments", half(args, k)), NULL);
	}
	sse_event(&out, json_object(), json_string_value(json_object_get(choice, "finish_reason")));
	assert_int_equal(tgi_buf_append(&out, "data: [DONE]\n\n", 14), 0);
	*len = out.len;
	return tgi_buf_steal(&out);
}

static void chat_stream_same(const char *name)
{
	json_t *resp = fixture_of(CHAT, name);
	size_t len;
	char *sse = chat_stream_of(resp, &len);
	char err[512] = "";
	tgi_pcalls c;
	if (CHAT->decode_stream(sse, len, &c, err, sizeof err) != 0)
		fail_msg("%s as a stream: %s", name, err);
	json_t *a = tgi_dialogue_assistant(CHAT, &c), *b = rebuilt(CHAT, name);
	assert_json_equal(a, b);
	json_decref(a);
	json_decref(b);
	tgi_pcalls_free(&c);
	free(sse);
	json_decref(resp);
}

static void test_chat_stream_same_entry(void **state)
{
	(void)state;
	chat_stream_same("one_call.json");
	chat_stream_same("parallel_calls.json");
	chat_stream_same("text.json");
	chat_stream_same("invalid_args.json");
	chat_stream_same("forced_stop.json");
}

/* A call whose arguments never came (cut by the token limit) still has its
 * partner, with "{}"; a stream cut inside a call keeps what came. */
static void test_chat_invalid_calls_keep_their_place(void **state)
{
	(void)state;
	tgi_pcalls c;
	decode(CHAT, "length_cut.json", &c);
	json_t *e = tgi_dialogue_assistant(CHAT, &c);
	const json_t *tcs = json_object_get(json_array_get(e, 0), "tool_calls");
	assert_int_equal(json_array_size(tcs), c.n);
	for (size_t i = 0; i < c.n; i++) {
		const json_t *fn = json_object_get(json_array_get(tcs, i), "function");
		assert_string_equal(str_at(json_array_get(tcs, i), "id"), c.v[i].id);
		if (c.v[i].error && !c.v[i].args)
			assert_string_equal(str_at(fn, "arguments"), "{}");
	}
	json_decref(e);
	tgi_pcalls_free(&c);

	decode(CHAT, "truncated.sse", &c);
	assert_true(c.n > 0);
	e = tgi_dialogue_assistant(CHAT, &c);
	tcs = json_object_get(json_array_get(e, 0), "tool_calls");
	assert_int_equal(json_array_size(tcs), c.n);
	for (size_t i = 0; i < c.n; i++) {
		const json_t *fn = json_object_get(json_array_get(tcs, i), "function");
		assert_non_null(c.v[i].error);
		assert_true(json_is_string(json_object_get(fn, "arguments")));
		if (c.v[i].args)
			assert_memory_equal(json_string_value(json_object_get(fn, "arguments")),
			                    c.v[i].args, c.v[i].args_len);
	}
	json_decref(e);
	tgi_pcalls_free(&c);
}

static void test_chat_request_and_user(void **state)
{
	(void)state;
	json_t *hist = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	json_t *tools = json_pack("[{s:s, s:{s:s}}]", "type", "function", "function", "name", "x");

	json_t *b = tgi_dialogue_request(CHAT, "gpt-4.1", hist, tools, 1);
	assert_non_null(b);
	assert_string_equal(str_at(b, "model"), "gpt-4.1");
	assert_json_equal(json_object_get(b, "messages"), hist);
	assert_json_equal(json_object_get(b, "tools"), tools);
	assert_true(json_is_true(json_object_get(b, "stream")));
	json_decref(b);

	/* tools empty or missing: no key; no stream: false */
	json_t *empty = json_array();
	b = tgi_dialogue_request(CHAT, "m", hist, empty, 0);
	assert_null(json_object_get(b, "tools"));
	assert_true(json_is_false(json_object_get(b, "stream")));
	json_decref(b);
	b = tgi_dialogue_request(CHAT, "m", hist, NULL, 0);
	assert_null(json_object_get(b, "tools"));
	json_decref(b);

	/* the body is its own: changing the history after does not change it */
	b = tgi_dialogue_request(CHAT, "m", hist, tools, 0);
	json_array_append_new(hist, json_pack("{s:s}", "role", "assistant"));
	assert_int_equal(json_array_size(json_object_get(b, "messages")), 1);
	json_decref(b);

	json_t *u = tgi_dialogue_user(CHAT, "list the files");
	json_t *want = json_pack("{s:s, s:s}", "role", "user", "content", "list the files");
	assert_json_equal(u, want);
	json_decref(u);
	json_decref(want);
	json_decref(empty);
	json_decref(tools);
	json_decref(hist);
}

/* ---- openai-responses ------------------------------------------------------ */

static const tgi_protocol *RESP = &tgi_protocol_openai_responses;

/* The response's output items, less reasoning, item ids, statuses and
 * annotations. */
static void resp_is_output(const char *name)
{
	static const char *const item_keys[] = {"type", "role", "content", "call_id", "name",
	                                        "arguments", "input", NULL};
	static const char *const part_keys[] = {"type", "text", NULL};
	json_t *resp = fixture_of(RESP, name);
	json_t *want = json_array();
	const json_t *it;
	size_t i, j;
	json_array_foreach(json_object_get(resp, "output"), i, it) {
		if (!strcmp(str_at(it, "type"), "reasoning"))
			continue;
		json_t *c = json_deep_copy(it);
		keep_keys(c, item_keys);
		/* a message's output_text parts: one part of their joined text */
		json_t *part, *joined = NULL;
		json_array_foreach(json_object_get(c, "content"), j, part) {
			keep_keys(part, part_keys);
			if (!joined) {
				joined = json_deep_copy(part);
				continue;
			}
			char *t = NULL;
			assert_true(asprintf(&t, "%s%s", str_at(joined, "text"), str_at(part, "text")) > 0);
			json_object_set_new(joined, "text", json_string(t));
			free(t);
		}
		if (joined)
			json_object_set_new(c, "content", json_pack("[o]", joined));
		json_array_append_new(want, c);
	}
	json_t *e = rebuilt(RESP, name);
	assert_json_equal(e, want);
	json_decref(e);
	json_decref(want);
	json_decref(resp);
}

static void test_responses_entry_is_the_output(void **state)
{
	(void)state;
	resp_is_output("one_call.json");
	resp_is_output("several_calls.json");   /* a message item, then three calls */
	resp_is_output("custom_call.json");     /* custom_tool_call with input; reasoning dropped */
	resp_is_output("text_only.json");
}

static void test_responses_stream_same_entry(void **state)
{
	(void)state;
	assert_same_turn(RESP, "no_args.json", "no_args.sse");
	assert_same_turn(RESP, "invalid_args.json", "invalid_args.sse");
	assert_same_turn(RESP, "incomplete.json", "truncated_incomplete.sse");
}

static void test_responses_invalid_call_kept(void **state)
{
	(void)state;
	tgi_pcalls c;
	decode(RESP, "invalid_args.json", &c);
	json_t *e = tgi_dialogue_assistant(RESP, &c);
	size_t calls = 0;
	const json_t *it;
	size_t i;
	json_array_foreach(e, i, it) {
		if (strcmp(str_at(it, "type"), "function_call") != 0)
			continue;
		const tgi_pcall *pc = &c.v[calls++];
		assert_string_equal(str_at(it, "call_id"), pc->id);
		if (pc->error && pc->args)
			assert_memory_equal(str_at(it, "arguments"), pc->args, pc->args_len);
	}
	assert_int_equal(calls, c.n);
	json_decref(e);
	tgi_pcalls_free(&c);
}

static void test_responses_request_and_user(void **state)
{
	(void)state;
	json_t *hist = json_array();
	json_array_append_new(hist, tgi_dialogue_user(RESP, "hello"));
	json_t *tools = json_pack("[{s:s, s:s}]", "type", "function", "name", "x");
	json_t *b = tgi_dialogue_request(RESP, "gpt-5", hist, tools, 1);
	assert_string_equal(str_at(b, "model"), "gpt-5");
	assert_json_equal(json_object_get(b, "input"), hist);
	assert_json_equal(json_object_get(b, "tools"), tools);
	assert_true(json_is_true(json_object_get(b, "stream")));
	assert_null(json_object_get(b, "messages"));
	json_decref(b);

	json_t *u = json_array_get(hist, 0);
	assert_string_equal(str_at(u, "type"), "message");
	assert_string_equal(str_at(u, "role"), "user");
	assert_string_equal(str_at(u, "content"), "hello");
	json_decref(tools);
	json_decref(hist);
}

/* ---- anthropic ------------------------------------------------------------- */

static const tgi_protocol *ANTH = &tgi_protocol_anthropic;

/* {role:"assistant", content} with the message's own content, less the
 * blocks that are not ours (thinking, server tools and their results). */
static void anth_is_content(const char *name)
{
	json_t *resp = fixture_of(ANTH, name);
	json_t *content = json_array();
	const json_t *b;
	size_t i;
	json_array_foreach(json_object_get(resp, "content"), i, b) {
		const char *t = str_at(b, "type");
		if (!strcmp(t, "text") || !strcmp(t, "tool_use"))
			json_array_append(content, (json_t *)b);
	}
	json_t *want = json_pack("[{s:s, s:o}]", "role", "assistant", "content", content);
	json_t *e = rebuilt(ANTH, name);
	assert_json_equal(e, want);
	json_decref(e);
	json_decref(want);
	json_decref(resp);
}

static void test_anthropic_entry_is_the_content(void **state)
{
	(void)state;
	anth_is_content("one_call.json");
	anth_is_content("several_calls.json");
	anth_is_content("mixed_blocks.json");
	anth_is_content("text_only.json");
	anth_is_content("no_args.json");
}

static void test_anthropic_stream_same_entry(void **state)
{
	(void)state;
	assert_same_turn(ANTH, "one_call.json", "one_call.sse");
	assert_same_turn(ANTH, "several_calls.json", "several_calls.sse");
	assert_same_turn(ANTH, "mixed_blocks.json", "mixed_blocks.sse");
	assert_same_turn(ANTH, "text_only.json", "text_only.sse");
	assert_same_turn(ANTH, "no_args.json", "no_args.sse");
}

/* An invalid tool_use (arguments not a JSON object, or none) keeps its
 * block, with an empty input object. */
static void test_anthropic_invalid_call_kept(void **state)
{
	(void)state;
	tgi_pcall v[2] = {
		{.id = "toolu_bad", .name = "write_file", .args = "{\"path\": ", .args_len = 9,
		 .error = "the stream ended inside this call"},
		{.id = "toolu_none", .name = "read_file", .error = "no input"},
	};
	tgi_pcalls c = {.v = v, .n = 2, .text = ""};
	json_t *e = tgi_dialogue_assistant(ANTH, &c);
	json_t *want = json_pack("[{s:s, s:[{s:s, s:s, s:s, s:{}}, {s:s, s:s, s:s, s:{}}]}]",
	                         "role", "assistant", "content",
	                         "type", "tool_use", "id", "toolu_bad", "name", "write_file", "input",
	                         "type", "tool_use", "id", "toolu_none", "name", "read_file", "input");
	assert_json_equal(e, want);
	json_decref(e);
	json_decref(want);

	/* and the recorded stream cut in bad JSON gives one block per call */
	tgi_pcalls d;
	decode(ANTH, "invalid_json.sse", &d);
	e = tgi_dialogue_assistant(ANTH, &d);
	size_t uses = 0, i;
	const json_t *b;
	json_array_foreach(json_object_get(json_array_get(e, 0), "content"), i, b)
		if (!strcmp(str_at(b, "type"), "tool_use")) {
			assert_true(json_is_object(json_object_get(b, "input")));
			assert_string_equal(str_at(b, "id"), d.v[uses++].id);
		}
	assert_int_equal(uses, d.n);
	json_decref(e);
	tgi_pcalls_free(&d);
}

static void test_anthropic_request_and_user(void **state)
{
	(void)state;
	json_t *hist = json_array();
	json_array_append_new(hist, tgi_dialogue_user(ANTH, "hello"));
	json_t *tools = json_pack("[{s:s, s:{s:s}}]", "name", "x", "input_schema", "type", "object");
	json_t *b = tgi_dialogue_request(ANTH, "claude-sonnet-4-5", hist, tools, 0);
	assert_string_equal(str_at(b, "model"), "claude-sonnet-4-5");
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 8192);
	assert_json_equal(json_object_get(b, "messages"), hist);
	assert_json_equal(json_object_get(b, "tools"), tools);
	assert_true(json_is_false(json_object_get(b, "stream")));
	json_decref(b);

	json_t *want = json_pack("{s:s, s:s}", "role", "user", "content", "hello");
	assert_json_equal(json_array_get(hist, 0), want);
	json_decref(want);
	json_decref(tools);
	json_decref(hist);
}

/* ---- gemini ---------------------------------------------------------------- */

static const tgi_protocol *GEM = &tgi_protocol_gemini;

/* The candidate's own content, less thought parts. */
static void gemini_is_content(const char *name)
{
	json_t *resp = fixture_of(GEM, name);
	const json_t *content = json_object_get(json_array_get(json_object_get(resp,
	                                        "candidates"), 0), "content");
	json_t *parts = json_array();
	const json_t *p;
	size_t i;
	json_array_foreach(json_object_get(content, "parts"), i, p)
		if (!json_is_true(json_object_get(p, "thought")))
			json_array_append(parts, (json_t *)p);
	json_t *want = json_pack("[{s:s, s:o}]", "role", "model", "parts", parts);
	json_t *e = rebuilt(GEM, name);
	assert_json_equal(e, want);
	json_decref(e);
	json_decref(want);
	json_decref(resp);
}

static void test_gemini_entry_is_the_content(void **state)
{
	(void)state;
	gemini_is_content("one_call.json");   /* the thoughtSignature back on its part */
	gemini_is_content("thoughts.json");   /* thought text dropped, signature kept */
	gemini_is_content("with_ids.json");   /* the API's id kept, no made-up one */
	gemini_is_content("text_only.json");
}

/* Text between calls comes back first, joined (the decoder joins it); the
 * stream of that turn gives the same entry. */
static void test_gemini_stream_same_entry(void **state)
{
	(void)state;
	assert_same_turn(GEM, "several_calls.json", "stream.sse");
	json_t *e = rebuilt(GEM, "several_calls.json");
	const json_t *parts = json_object_get(json_array_get(e, 0), "parts");
	assert_int_equal(json_array_size(parts), 4);
	assert_string_equal(str_at(json_array_get(parts, 0), "text"),
	                    "Checking both files and the directory.");
	/* with parallel calls only the first carries the signature */
	assert_string_equal(str_at(json_array_get(parts, 1), "thoughtSignature"),
	                    "CiIBVKhc7vBwYXJhbGxlbC1maXJzdA");
	assert_null(json_object_get(json_array_get(parts, 2), "thoughtSignature"));
	for (size_t i = 1; i < 4; i++)
		assert_null(json_object_get(json_object_get(json_array_get(parts, i), "functionCall"),
		                            "id"));
	json_decref(e);
}

/* Calls with args that are not an object keep their part, with {}. */
static void test_gemini_invalid_call_kept(void **state)
{
	(void)state;
	tgi_pcalls c;
	decode(GEM, "bad_args.json", &c);
	json_t *e = rebuilt(GEM, "bad_args.json");
	const json_t *parts = json_object_get(json_array_get(e, 0), "parts");
	assert_int_equal(json_array_size(parts), c.n);
	for (size_t i = 0; i < c.n; i++) {
		const json_t *fc = json_object_get(json_array_get(parts, i), "functionCall");
		assert_true(json_is_object(json_object_get(fc, "args")));
		if (c.v[i].error && !c.v[i].args)
			assert_int_equal(json_object_size(json_object_get(fc, "args")), 0);
	}
	assert_int_equal(json_object_size(json_object_get(json_object_get(json_array_get(parts, 0),
	                 "functionCall"), "args")), 0);
	json_decref(e);
	tgi_pcalls_free(&c);
}

static void test_gemini_request_and_user(void **state)
{
	(void)state;
	json_t *hist = json_array();
	json_array_append_new(hist, tgi_dialogue_user(GEM, "hello"));
	json_t *tools = json_pack("[{s:[{s:s}]}]", "functionDeclarations", "name", "x");
	json_t *b = tgi_dialogue_request(GEM, "gemini-3-pro-preview", hist, tools, 1);
	assert_json_equal(json_object_get(b, "contents"), hist);
	assert_json_equal(json_object_get(b, "tools"), tools);
	assert_null(json_object_get(b, "model"));    /* in the URL */
	assert_null(json_object_get(b, "stream"));   /* in the URL */
	assert_int_equal(json_object_size(b), 2);
	json_decref(b);

	json_t *want = json_pack("{s:s, s:[{s:s}]}", "role", "user", "parts", "text", "hello");
	assert_json_equal(json_array_get(hist, 0), want);
	json_decref(want);
	json_decref(tools);
	json_decref(hist);
}

/* ---- whole conversations --------------------------------------------------- */

/* user, assistant with calls, results, final answer: the history of two
 * turns, and the body that would carry it. */
static json_t *conversation(const tgi_protocol *api, const char *calls_fixture,
                            const char *answer_fixture, tgi_pcalls *c)
{
	json_t *h = json_array();
	json_array_append_new(h, tgi_dialogue_user(api, "look around"));
	decode(api, calls_fixture, c);
	assert_true(c->n >= 2);
	extend(h, tgi_dialogue_assistant(api, c));
	extend(h, fake_results(api, c));
	extend(h, rebuilt(api, answer_fixture));

	json_t *b = tgi_dialogue_request(api, "m", h, NULL, 1);
	const char *key = !strcmp(api->name, "gemini")           ? "contents"
	                : !strcmp(api->name, "openai-responses") ? "input"
	                                                         : "messages";
	assert_json_equal(json_object_get(b, key), h);
	json_decref(b);
	return h;
}

static void test_chat_two_turns(void **state)
{
	(void)state;
	tgi_pcalls c;
	json_t *h = conversation(CHAT, "parallel_calls.json", "text.json", &c);
	/* user, assistant{tool_calls}, one tool message per call in call order, assistant */
	assert_int_equal(json_array_size(h), 3 + c.n);
	assert_string_equal(str_at(json_array_get(h, 0), "role"), "user");
	const json_t *a = json_array_get(h, 1);
	assert_string_equal(str_at(a, "role"), "assistant");
	const json_t *tcs = json_object_get(a, "tool_calls");
	assert_int_equal(json_array_size(tcs), c.n);
	for (size_t i = 0; i < c.n; i++) {
		const json_t *t = json_array_get(h, 2 + i);
		assert_string_equal(str_at(t, "role"), "tool");
		assert_string_equal(str_at(t, "tool_call_id"), str_at(json_array_get(tcs, i), "id"));
	}
	const json_t *last = json_array_get(h, 2 + c.n);
	assert_string_equal(str_at(last, "role"), "assistant");
	assert_true(json_is_string(json_object_get(last, "content")));
	assert_null(json_object_get(last, "tool_calls"));
	tgi_pcalls_free(&c);
	json_decref(h);
}

static void test_responses_two_turns(void **state)
{
	(void)state;
	tgi_pcalls c;
	json_t *h = conversation(RESP, "custom_call.json", "text_only.json", &c);
	/* every output item answers a call item before it, of the matching kind,
	 * each call answered once */
	size_t calls = 0, outputs = 0, i;
	const json_t *it;
	json_array_foreach(h, i, it) {
		const char *type = json_string_value(json_object_get(it, "type"));
		assert_non_null(type);
		if (!strcmp(type, "function_call") || !strcmp(type, "custom_tool_call")) {
			calls++;
			continue;
		}
		if (strcmp(type, "function_call_output") && strcmp(type, "custom_tool_call_output"))
			continue;
		const json_t *call = NULL, *x;
		for (size_t j = 0; j < i; j++) {
			x = json_array_get(h, j);
			const char *xid = json_string_value(json_object_get(x, "call_id"));
			const char *xt = str_at(x, "type");
			if (xid && !strcmp(xid, str_at(it, "call_id")) && strstr(xt, "_output") == NULL)
				call = x;
		}
		assert_non_null(call);
		char want[64];
		snprintf(want, sizeof want, "%s_output", str_at(call, "type"));
		assert_string_equal(type, want);
		outputs++;
	}
	assert_int_equal(calls, c.n);
	assert_int_equal(outputs, c.n);
	it = json_array_get(h, json_array_size(h) - 1);
	assert_string_equal(str_at(it, "role"), "assistant");
	tgi_pcalls_free(&c);
	json_decref(h);
}

static void test_anthropic_two_turns(void **state)
{
	(void)state;
	tgi_pcalls c;
	json_t *h = conversation(ANTH, "several_calls.json", "text_only.json", &c);
	/* user / assistant alternate; the tool_results answer the tool_uses in order */
	assert_int_equal(json_array_size(h), 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(str_at(json_array_get(h, i), "role"),
		                    i % 2 ? "assistant" : "user");
	const json_t *uses = json_object_get(json_array_get(h, 1), "content");
	const json_t *results = json_object_get(json_array_get(h, 2), "content");
	size_t n = 0, i;
	const json_t *b;
	json_array_foreach(uses, i, b) {
		if (strcmp(str_at(b, "type"), "tool_use"))
			continue;
		const json_t *r = json_array_get(results, n++);
		assert_string_equal(str_at(r, "type"), "tool_result");
		assert_string_equal(str_at(r, "tool_use_id"), str_at(b, "id"));
	}
	assert_int_equal(n, c.n);
	assert_int_equal(json_array_size(results), c.n);
	tgi_pcalls_free(&c);
	json_decref(h);
}

static void test_gemini_two_turns(void **state)
{
	(void)state;
	tgi_pcalls c;
	json_t *h = conversation(GEM, "with_ids.json", "text_only.json", &c);
	assert_int_equal(json_array_size(h), 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(str_at(json_array_get(h, i), "role"), i % 2 ? "model" : "user");
	/* one functionResponse per functionCall, same name, same id where there is one */
	const json_t *calls = json_object_get(json_array_get(h, 1), "parts");
	const json_t *resps = json_object_get(json_array_get(h, 2), "parts");
	size_t n = 0, i;
	const json_t *p;
	json_array_foreach(calls, i, p) {
		const json_t *fc = json_object_get(p, "functionCall");
		if (!fc)
			continue;
		const json_t *fr = json_object_get(json_array_get(resps, n++), "functionResponse");
		assert_non_null(fr);
		assert_string_equal(str_at(fr, "name"), str_at(fc, "name"));
		assert_true(json_equal(json_object_get(fr, "id"), json_object_get(fc, "id")) ||
		            (!json_object_get(fr, "id") && !json_object_get(fc, "id")));
	}
	assert_int_equal(n, c.n);
	assert_int_equal(json_array_size(resps), c.n);
	tgi_pcalls_free(&c);
	json_decref(h);
}

/* ---- edges ----------------------------------------------------------------- */

/* A reply with nothing in it adds nothing; an unknown API gets NULL; text
 * that is not UTF-8 goes out as valid JSON text. */
static void test_edges(void **state)
{
	(void)state;
	static const tgi_protocol *apis[] = {&tgi_protocol_openai_chat,
	                                     &tgi_protocol_openai_responses,
	                                     &tgi_protocol_anthropic, &tgi_protocol_gemini};
	tgi_pcalls none = {.text = ""};
	tgi_pcall bad = {.id = "c1", .name = "t\xff", .args = "{\"a\":\"\xfe\"}", .args_len = 10};
	tgi_pcalls one = {.v = &bad, .n = 1, .text = "x\xc3"};
	for (size_t i = 0; i < 4; i++) {
		json_t *e = tgi_dialogue_assistant(apis[i], &none);
		assert_true(json_is_array(e));
		assert_int_equal(json_array_size(e), 0);
		json_decref(e);
		e = tgi_dialogue_assistant(apis[i], &one);
		assert_true(json_array_size(e) >= 1);
		char *s = json_dumps(e, JSON_COMPACT);
		assert_non_null(s);
		json_t *back = json_loads(s, 0, NULL);
		assert_non_null(back);
		json_decref(back);
		free(s);
		json_decref(e);
		json_t *u = tgi_dialogue_user(apis[i], "\xff");
		assert_non_null(u);
		json_decref(u);
		u = tgi_dialogue_user(apis[i], NULL);
		assert_non_null(u);
		json_decref(u);
	}
	tgi_protocol other = {.name = "cohere"};
	assert_null(tgi_dialogue_user(&other, "x"));
	assert_null(tgi_dialogue_request(&other, "m", NULL, NULL, 0));
	assert_null(tgi_dialogue_assistant(&other, &none));
	assert_null(tgi_dialogue_user(NULL, "x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chat_entry_is_the_message),
		cmocka_unit_test(test_chat_stream_same_entry),
		cmocka_unit_test(test_chat_invalid_calls_keep_their_place),
		cmocka_unit_test(test_chat_request_and_user),
		cmocka_unit_test(test_responses_entry_is_the_output),
		cmocka_unit_test(test_responses_stream_same_entry),
		cmocka_unit_test(test_responses_invalid_call_kept),
		cmocka_unit_test(test_responses_request_and_user),
		cmocka_unit_test(test_anthropic_entry_is_the_content),
		cmocka_unit_test(test_anthropic_stream_same_entry),
		cmocka_unit_test(test_anthropic_invalid_call_kept),
		cmocka_unit_test(test_anthropic_request_and_user),
		cmocka_unit_test(test_gemini_entry_is_the_content),
		cmocka_unit_test(test_gemini_stream_same_entry),
		cmocka_unit_test(test_gemini_invalid_call_kept),
		cmocka_unit_test(test_gemini_request_and_user),
		cmocka_unit_test(test_chat_two_turns),
		cmocka_unit_test(test_responses_two_turns),
		cmocka_unit_test(test_anthropic_two_turns),
		cmocka_unit_test(test_gemini_two_turns),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
