/*
 * test_gemini.c — the Gemini protocol (src/protocol/gemini.c) on the
 * fixtures in tests/data/protocols/gemini/: text-only replies, one call,
 * several (parallel) calls, calls without arguments, calls with and without
 * ids (synthesized ids are stable), thought parts and thought signatures,
 * finishReason never trusted, a stream and the same response as one JSON
 * and as the JSON array of chunks, cut streams (between chunks, inside the
 * last event, between the pieces of a Vertex-style streamed call), corrupt
 * and foreign input, the result message (output vs error, ids only where
 * the API gave them), and the tool definitions (default and legacy golden
 * files, names, $ref cycles).
 *
 * Owns: nothing beyond the test.  Must not: need the network or any file
 * outside the repository.
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

static const tgi_protocol *P = &tgi_protocol_gemini;

/* ---- helpers ---- */

/* A message fit for a model or a log line: one lowercase sentence. */
static void assert_sentence(const char *s)
{
	assert_non_null(s);
	assert_true(*s != '\0');
	assert_false(s[0] >= 'A' && s[0] <= 'Z');
	for (const char *p = s; *p; p++)
		assert_false((unsigned char)*p < 0x20 || *p == 0x7f);
}

/* Decode a fixture (a stream when its name ends in .sse); 0 or -1. */
static int decode(const char *name, tgi_pcalls *out, char *err, size_t errlen)
{
	size_t len;
	char *text = fixture(name, &len);
	size_t nl = strlen(name);
	int stream = nl > 4 && !strcmp(name + nl - 4, ".sse");
	memset(out, 0x5a, sizeof *out); /* decode must not read what was there */
	int rc = (stream ? P->decode_stream : P->decode)(text, len, out, err, errlen);
	free(text);
	return rc;
}

static void decode_ok(const char *name, tgi_pcalls *out)
{
	char err[512] = "";
	if (decode(name, out, err, sizeof err) != 0)
		fail_msg("%s: %s", name, err);
	assert_non_null(out->text);
}

/* A decode that is refused: out left empty, err a sentence containing want. */
static void decode_refused(const char *name, const char *want)
{
	tgi_pcalls c;
	char err[512] = "";
	assert_int_equal(decode(name, &c, err, sizeof err), -1);
	assert_sentence(err);
	if (!strstr(err, want))
		fail_msg("%s: \"%s\" does not mention \"%s\"", name, err, want);
	assert_int_equal(c.n, 0);
	assert_null(c.v);
	assert_null(c.text);
	assert_null(c.stop);
	tgi_pcalls_free(&c);
}

static void decode_text_refused(const char *text, int stream, const char *want)
{
	tgi_pcalls c;
	char err[512] = "";
	int rc = (stream ? P->decode_stream : P->decode)(text, strlen(text), &c, err, sizeof err);
	assert_int_equal(rc, -1);
	assert_sentence(err);
	if (!strstr(err, want))
		fail_msg("\"%s\" does not mention \"%s\"", err, want);
	assert_int_equal(c.n, 0);
	tgi_pcalls_free(&c);
}

/* A well-formed call. */
static void assert_call(const tgi_pcall *c, const char *id, const char *name, const char *args)
{
	assert_string_equal(c->id, id);
	assert_string_equal(c->name, name);
	assert_null(c->error);
	assert_int_equal(c->raw, 0);
	assert_non_null(c->args);
	assert_string_equal(c->args, args);
	assert_int_equal(c->args_len, strlen(args));
}

static void assert_signature(const tgi_pcall *c, const char *sig)
{
	if (!sig) {
		assert_null(c->echo);
		return;
	}
	assert_non_null(c->echo);
	assert_int_equal(json_object_size(c->echo), 1);
	assert_string_equal(json_string_value(json_object_get(c->echo, "thoughtSignature")), sig);
}

/* Two decodes agree call for call. */
static void assert_same_calls(const tgi_pcalls *a, const tgi_pcalls *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_string_equal(a->v[i].id, b->v[i].id);
		assert_string_equal(a->v[i].name, b->v[i].name);
		assert_string_equal(a->v[i].args, b->v[i].args);
		assert_true(!a->v[i].echo == !b->v[i].echo);
		if (a->v[i].echo)
			assert_true(json_equal(a->v[i].echo, b->v[i].echo));
	}
	assert_string_equal(a->text, b->text);
	assert_true(!a->stop == !b->stop);
	if (a->stop)
		assert_string_equal(a->stop, b->stop);
}

/* ---- calls in ---- */

static void test_row(void **state)
{
	assert_ptr_equal(tgi_protocol_find("gemini"), P);
	assert_string_equal(P->name, "gemini");
	assert_non_null(P->tools);
	assert_non_null(P->decode);
	assert_non_null(P->decode_stream);
	assert_non_null(P->results);
}

static void test_text_only(void **state)
{
	tgi_pcalls c;
	decode_ok("text_only.json", &c);
	assert_int_equal(c.n, 0);
	assert_string_equal(c.text, "The capital of France is Paris.");
	assert_string_equal(c.stop, "STOP");
	tgi_pcalls_free(&c);
}

static void test_one_call(void **state)
{
	tgi_pcalls c;
	decode_ok("one_call.json", &c);
	assert_int_equal(c.n, 1);
	/* no id from the API: synthesized; args compact, in the model's order */
	assert_call(&c.v[0], "gemini-0-read_file", "read_file", "{\"path\":\"src/main.c\",\"limit\":40}");
	assert_signature(&c.v[0], "CiIBVKhc7vB0ZXN0LXNpZ25hdHVyZS0x");
	assert_string_equal(c.text, "");
	assert_string_equal(c.stop, "STOP"); /* STOP with a call still counts */
	tgi_pcalls_free(&c);
}

static void test_several_calls(void **state)
{
	tgi_pcalls c;
	decode_ok("several_calls.json", &c);
	assert_int_equal(c.n, 3);
	assert_call(&c.v[0], "gemini-0-read_file", "read_file", "{\"path\":\"a.txt\"}");
	assert_call(&c.v[1], "gemini-1-read_file", "read_file", "{\"path\":\"b.txt\"}");
	assert_call(&c.v[2], "gemini-2-list_dir", "list_dir", "{\"path\":\".\",\"depth\":2}");
	/* parallel calls: only the first part carries the signature */
	assert_signature(&c.v[0], "CiIBVKhc7vBwYXJhbGxlbC1maXJzdA");
	assert_signature(&c.v[1], NULL);
	assert_signature(&c.v[2], NULL);
	assert_string_equal(c.text, "Checking both files and the directory.");
	assert_string_equal(c.stop, "STOP");

	/* the same response gives the same ids, every time */
	tgi_pcalls again;
	decode_ok("several_calls.json", &again);
	assert_same_calls(&c, &again);
	tgi_pcalls_free(&again);
	tgi_pcalls_free(&c);
}

static void test_no_arg_calls(void **state)
{
	tgi_pcalls c;
	decode_ok("no_args.json", &c);
	assert_int_equal(c.n, 2);
	assert_call(&c.v[0], "gemini-0-list_dir", "list_dir", "{}"); /* args absent */
	assert_call(&c.v[1], "gemini-1-list_dir", "list_dir", "{}"); /* args {} */
	tgi_pcalls_free(&c);

	/* args null is proto3 JSON for "not set" */
	const char *null_args = "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":"
	                        "{\"name\":\"list_dir\",\"args\":null}}]}}]}";
	char err[256];
	assert_int_equal(P->decode(null_args, strlen(null_args), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 1);
	assert_call(&c.v[0], "gemini-0-list_dir", "list_dir", "{}");
	assert_null(c.stop); /* no finishReason given */
	tgi_pcalls_free(&c);
}

static void test_ids_from_the_api(void **state)
{
	tgi_pcalls c;
	decode_ok("with_ids.json", &c);
	assert_int_equal(c.n, 2);
	assert_call(&c.v[0], "fc-7d2a9b1e", "read_file", "{\"path\":\"a.txt\"}");
	/* a call without one beside it: synthesized from its position */
	assert_call(&c.v[1], "gemini-1-list_dir", "list_dir", "{\"path\":\".\"}");
	tgi_pcalls_free(&c);

	/* an empty id is no id; a non-string id is an invalid call */
	const char *odd = "{\"candidates\":[{\"content\":{\"parts\":["
	                  "{\"functionCall\":{\"id\":\"\",\"name\":\"a\",\"args\":{}}},"
	                  "{\"functionCall\":{\"id\":7,\"name\":\"b\",\"args\":{}}}]}}]}";
	char err[256];
	assert_int_equal(P->decode(odd, strlen(odd), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 2);
	assert_call(&c.v[0], "gemini-0-a", "a", "{}");
	assert_string_equal(c.v[1].id, "gemini-1-b");
	assert_sentence(c.v[1].error);
	assert_non_null(strstr(c.v[1].error, "\"id\""));
	tgi_pcalls_free(&c);
}

static void test_thought_parts_are_not_text(void **state)
{
	tgi_pcalls c;
	decode_ok("thoughts.json", &c);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.text, "Let me read it.");
	assert_call(&c.v[0], "gemini-0-read_file", "read_file", "{\"path\":\"notes.md\"}");
	assert_signature(&c.v[0], "CiIBVKhc7vB0aG91Z2h0LXNpZw");
	tgi_pcalls_free(&c);
}

static void test_finish_reason_is_not_trusted(void **state)
{
	/* a call counts whatever the finishReason says; a reason without a call
	 * makes none */
	const char *r = "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":"
	                "{\"name\":\"a\",\"args\":{\"x\":1}}}]},\"finishReason\":\"MAX_TOKENS\"}]}";
	const char *none = "{\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}";
	tgi_pcalls c;
	char err[256];
	assert_int_equal(P->decode(r, strlen(r), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 1);
	assert_call(&c.v[0], "gemini-0-a", "a", "{\"x\":1}");
	assert_string_equal(c.stop, "MAX_TOKENS");
	tgi_pcalls_free(&c);
	assert_int_equal(P->decode(none, strlen(none), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 0);
	assert_string_equal(c.text, "");
	assert_string_equal(c.stop, "MALFORMED_FUNCTION_CALL");
	tgi_pcalls_free(&c);
}

static void test_only_the_first_candidate(void **state)
{
	const char *r = "{\"candidates\":["
	                "{\"index\":1,\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"other\"}}]}},"
	                "{\"index\":0,\"content\":{\"parts\":[{\"text\":\"hi\"},"
	                "{\"functionCall\":{\"name\":\"mine\"}}]},\"finishReason\":\"STOP\"}]}";
	tgi_pcalls c;
	char err[256];
	assert_int_equal(P->decode(r, strlen(r), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 1);
	assert_call(&c.v[0], "gemini-0-mine", "mine", "{}");
	assert_string_equal(c.text, "hi");
	tgi_pcalls_free(&c);
}

static void test_bad_calls_do_not_stop_the_others(void **state)
{
	tgi_pcalls c;
	decode_ok("bad_args.json", &c);
	assert_int_equal(c.n, 3);
	/* args an array: invalid, with what came */
	assert_string_equal(c.v[0].name, "read_file");
	assert_string_equal(c.v[0].id, "gemini-0-read_file");
	assert_sentence(c.v[0].error);
	assert_non_null(strstr(c.v[0].error, "not a JSON object"));
	assert_string_equal(c.v[0].args, "[\"a.txt\"]");
	/* no name: invalid */
	assert_string_equal(c.v[1].name, "");
	assert_string_equal(c.v[1].id, "gemini-1-");
	assert_sentence(c.v[1].error);
	assert_non_null(strstr(c.v[1].error, "name"));
	/* the good one is untouched */
	assert_call(&c.v[2], "gemini-2-read_file", "read_file", "{\"path\":\"b.txt\"}");
	tgi_pcalls_free(&c);

	const char *kinds = "{\"candidates\":[{\"content\":{\"parts\":["
	                    "{\"functionCall\":{\"name\":\"a\",\"args\":\"{}\"}},"
	                    "{\"functionCall\":{\"name\":\"b\",\"args\":5}},"
	                    "{\"functionCall\":[1]},"
	                    "{\"functionCall\":{\"name\":7}}]}}]}";
	char err[256];
	assert_int_equal(P->decode(kinds, strlen(kinds), &c, err, sizeof err), 0);
	assert_int_equal(c.n, 4);
	for (size_t i = 0; i < c.n; i++) {
		assert_sentence(c.v[i].error);
		assert_non_null(c.v[i].id);
		assert_non_null(c.v[i].name);
	}
	assert_string_equal(c.v[0].args, "\"{}\"");
	assert_non_null(strstr(c.v[0].error, "string"));
	assert_string_equal(c.v[1].args, "5");
	assert_non_null(strstr(c.v[2].error, "\"functionCall\""));
	assert_string_equal(c.v[3].name, "");
	tgi_pcalls_free(&c);
}

static void test_refused(void **state)
{
	decode_refused("api_error.json", "400 INVALID_ARGUMENT: Function call is missing");
	size_t len;
	char *sse = fixture("stream.sse", &len); /* an SSE stream is no JSON response */
	decode_text_refused(sse, 0, "the response is not JSON");
	free(sse);
	decode_text_refused("", 0, "not JSON");
	decode_text_refused("{\"candidates\": [", 0, "not JSON");
	decode_text_refused("[1, 2]", 0, "JSON object");
	decode_text_refused("\"text\"", 0, "not JSON"); /* jansson: a bare string is no document */
	decode_text_refused("{\"choices\":[{\"message\":{\"tool_calls\":[]}}]}", 0,
	                    "not a Gemini response");
	decode_text_refused("{\"candidates\":{}}", 0, "\"candidates\" is not an array");
	decode_text_refused("{\"candidates\":[7]}", 0, "candidate is not a JSON object");
	decode_text_refused("{\"candidates\":[{\"content\":[]}]}", 0, "\"content\"");
	decode_text_refused("{\"candidates\":[{\"content\":{\"parts\":{}}}]}", 0, "\"parts\"");
	decode_text_refused("{\"candidates\":[{\"content\":{\"parts\":[1]}}]}", 0,
	                    "part 0 of the candidate is not a JSON object");
	decode_text_refused("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":1}]}}]}", 0,
	                    "\"text\" that is not a string");
	decode_text_refused("{\"error\":{\"message\":\"bad\\u0001thing\"}}", 0,
	                    "the API answered with an error: bad thing");

	/* over the size cap: refused before a byte is read */
	static const char tiny[] = "{}";
	tgi_pcalls c;
	char err[256];
	assert_int_equal(P->decode(tiny, (size_t)TGI_SSE_MAX + 1, &c, err, sizeof err), -1);
	assert_sentence(err);
	assert_non_null(strstr(err, "larger than"));
	tgi_pcalls_free(&c);
}

static void test_prompt_blocked(void **state)
{
	/* no candidates, but a Gemini answer: no calls, no text */
	tgi_pcalls c;
	decode_ok("blocked.json", &c);
	assert_int_equal(c.n, 0);
	assert_string_equal(c.text, "");
	assert_null(c.stop);
	tgi_pcalls_free(&c);
}

static void test_too_many_calls(void **state)
{
	tgi_buf b;
	tgi_buf_init(&b, 1u << 20);
	tgi_buf_puts(&b, "{\"candidates\":[{\"content\":{\"parts\":[");
	for (int i = 0; i < 1025; i++)
		tgi_buf_printf(&b, "%s{\"functionCall\":{\"name\":\"t\"}}", i ? "," : "");
	tgi_buf_puts(&b, "]}}]}");
	tgi_pcalls c;
	char err[256];
	assert_int_equal(P->decode(b.p, b.len, &c, err, sizeof err), -1);
	assert_sentence(err);
	assert_non_null(strstr(err, "more than 1024"));
	assert_int_equal(c.n, 0);
	tgi_pcalls_free(&c);
	tgi_buf_free(&b);
}

/* ---- streams ---- */

static void test_stream(void **state)
{
	tgi_pcalls s, whole, chunks;
	decode_ok("stream.sse", &s);
	assert_int_equal(s.n, 3);
	assert_call(&s.v[0], "gemini-0-read_file", "read_file", "{\"path\":\"a.txt\"}");
	assert_call(&s.v[1], "gemini-1-read_file", "read_file", "{\"path\":\"b.txt\"}");
	assert_call(&s.v[2], "gemini-2-list_dir", "list_dir", "{\"path\":\".\",\"depth\":2}");
	assert_signature(&s.v[0], "CiIBVKhc7vBwYXJhbGxlbC1maXJzdA");
	assert_string_equal(s.text, "Checking both files and the directory.");
	assert_string_equal(s.stop, "STOP");

	/* the same answer, whole and as streamGenerateContent's JSON array */
	decode_ok("several_calls.json", &whole);
	decode_ok("chunks.json", &chunks);
	assert_same_calls(&s, &whole);
	assert_same_calls(&s, &chunks);
	tgi_pcalls_free(&s);
	tgi_pcalls_free(&whole);
	tgi_pcalls_free(&chunks);
}

static void test_stream_cut_between_chunks(void **state)
{
	/* the last chunk has no finishReason: the calls it delivered are whole
	 * and stand; stop says it was cut */
	tgi_pcalls c;
	decode_ok("stream_cut.sse", &c);
	assert_int_equal(c.n, 2);
	assert_call(&c.v[0], "gemini-0-read_file", "read_file", "{\"path\":\"a.txt\"}");
	assert_call(&c.v[1], "gemini-1-read_file", "read_file", "{\"path\":\"b.txt\"}");
	assert_string_equal(c.text, "Checking both files ");
	assert_null(c.stop);
	tgi_pcalls_free(&c);
}

static void test_stream_cut_inside_an_event(void **state)
{
	/* the last event stops mid-JSON: dropped; what came before stands */
	tgi_pcalls c;
	decode_ok("stream_cut_mid_event.sse", &c);
	assert_int_equal(c.n, 2);
	assert_call(&c.v[1], "gemini-1-read_file", "read_file", "{\"path\":\"b.txt\"}");
	assert_null(c.stop);
	tgi_pcalls_free(&c);

	/* a complete last event that is not JSON is corruption, not a cut */
	decode_text_refused("data: {\"candidates\":[]}\n\ndata: {oops\n\n", 1,
	                    "the event at line 3: not JSON");
}

static void test_stream_corrupt(void **state)
{
	decode_refused("stream_corrupt.sse", "the event at line 3: not JSON");
}

static void test_stream_refused(void **state)
{
	decode_text_refused("", 1, "not a Gemini response");
	decode_text_refused(": keep-alive\n\n", 1, "not a Gemini response");
	decode_text_refused("data: {\"usageMetadata\":{}}\n\n", 1, "not a Gemini response");
	decode_text_refused("data: [7]\n\n", 1, "the event at line 1: not a Gemini response");
	decode_text_refused("data: {\"choices\":[]}\n\ndata: [DONE]\n\n", 1, "not JSON");
	decode_text_refused("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n"
	                    "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\","
	                    "\"status\":\"UNAVAILABLE\"}}\n\n", 1,
	                    "the event at line 3: the API answered with an error: 503 UNAVAILABLE: "
	                    "The model is overloaded.");
	/* the SSE framing's own refusals come through */
	static const char nul[] = "data: {}\n\0\n";
	tgi_pcalls c;
	char err[256];
	assert_int_equal(P->decode_stream(nul, sizeof nul - 1, &c, err, sizeof err), -1);
	assert_sentence(err);
	assert_non_null(strstr(err, "NUL"));
	assert_int_equal(c.n, 0);
	tgi_pcalls_free(&c);
}

static void test_stream_lines_and_comments(void **state)
{
	/* CR line ends, comments, a data field split over two lines */
	const char *s = ": ping\r"
	                "data: {\"candidates\":[{\"content\":{\"parts\":[\r"
	                "data: {\"text\":\"x\"}]},\"finishReason\":\"STOP\"}]}\r\r";
	tgi_pcalls c;
	char err[256] = "";
	if (P->decode_stream(s, strlen(s), &c, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.n, 0);
	assert_string_equal(c.text, "x");
	assert_string_equal(c.stop, "STOP");
	tgi_pcalls_free(&c);
}

static void test_streamed_pieces_are_not_run(void **state)
{
	/* Vertex AI's streamFunctionCallArguments: one call in pieces becomes
	 * one invalid call; the whole call after it is fine and keeps its index */
	tgi_pcalls c;
	decode_ok("stream_pieces.sse", &c);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.v[0].name, "write_file");
	assert_string_equal(c.v[0].id, "gemini-0-write_file");
	assert_sentence(c.v[0].error);
	assert_non_null(strstr(c.v[0].error, "in pieces"));
	assert_null(c.v[0].args);
	assert_signature(&c.v[0], "CiIBVKhc7vBwaWVjZXMtc2ln");
	assert_call(&c.v[1], "gemini-1-read_file", "read_file", "{\"path\":\"a.txt\"}");
	assert_string_equal(c.stop, "STOP");
	tgi_pcalls_free(&c);

	/* cut between the pieces */
	decode_ok("stream_pieces_cut.sse", &c);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.v[0].error, "the stream ended inside this call");
	assert_null(c.v[0].args);
	assert_null(c.stop);
	tgi_pcalls_free(&c);

	/* an id that comes with a later piece replaces the synthesized one */
	const char *late = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":"
	                   "{\"name\":\"w\",\"willContinue\":true}}]}}]}\n\n"
	                   "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":"
	                   "{\"id\":\"fc-9\",\"partialArgs\":[{\"jsonPath\":\"$.a\",\"boolValue\":true}]}}]},"
	                   "\"finishReason\":\"STOP\"}]}\n\n";
	char err[256] = "";
	if (P->decode_stream(late, strlen(late), &c, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.v[0].id, "fc-9");
	assert_sentence(c.v[0].error);
	tgi_pcalls_free(&c);

	/* a whole call ends an open one; a nameless piece after it is a call
	 * of its own (invalid), not a piece of the whole call */
	const char *mixed = "{\"candidates\":[{\"content\":{\"parts\":["
	                    "{\"functionCall\":{\"name\":\"w\",\"willContinue\":true}},"
	                    "{\"functionCall\":{\"name\":\"r\",\"args\":{\"p\":1}}},"
	                    "{\"functionCall\":{\"partialArgs\":[{\"jsonPath\":\"$.a\",\"nullValue\":"
	                    "\"NULL_VALUE\"}],\"willContinue\":true}},"
	                    "{\"functionCall\":{\"partialArgs\":[{\"jsonPath\":\"$.b\",\"numberValue\":2}]}}"
	                    "]},\"finishReason\":\"STOP\"}]}";
	if (P->decode(mixed, strlen(mixed), &c, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.n, 3);
	assert_non_null(strstr(c.v[0].error, "in pieces"));
	assert_call(&c.v[1], "gemini-1-r", "r", "{\"p\":1}");
	assert_string_equal(c.v[2].id, "gemini-2-");
	assert_non_null(strstr(c.v[2].error, "no function name"));
	assert_string_equal(c.stop, "STOP"); /* the last piece closed the open call */
	tgi_pcalls_free(&c);
}

/* ---- results out ---- */

static void test_results_shape(void **state)
{
	tgi_pcalls c;
	decode_ok("with_ids.json", &c);
	tgi_presult res[2] = {
		{"persisted", 0, "alpha\n", NULL},
		{"denied", 1, "denied (not_permitted): list_dir is not allowed here; do not retry; "
		              "ask the owner", NULL},
	};
	json_t *got = P->results(&c, res);
	json_t *want = fixture_json("results.golden.json");
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("results differ from the golden file:\n%s", s);
	}
	json_decref(got);
	json_decref(want);
	tgi_pcalls_free(&c);
}

static void test_results_follow_call_order(void **state)
{
	tgi_pcalls c;
	decode_ok("several_calls.json", &c);
	tgi_presult res[3] = {
		{"persisted", 0, "A", NULL},
		{"invalid", 1, "invalid (invalid_input): bad", NULL},
		{"failed", 1, NULL, NULL},
	};
	json_t *got = P->results(&c, res);
	assert_int_equal(json_array_size(got), 1);
	json_t *msg = json_array_get(got, 0);
	assert_string_equal(json_string_value(json_object_get(msg, "role")), "user");
	json_t *parts = json_object_get(msg, "parts");
	assert_int_equal(json_array_size(parts), 3);
	const char *names[3] = {"read_file", "read_file", "list_dir"};
	for (size_t i = 0; i < 3; i++) {
		json_t *fr = json_object_get(json_array_get(parts, i), "functionResponse");
		assert_string_equal(json_string_value(json_object_get(fr, "name")), names[i]);
		/* synthesized ids never reach the API; nor does the signature */
		assert_null(json_object_get(fr, "id"));
		assert_null(json_object_get(json_array_get(parts, i), "thoughtSignature"));
		json_t *r = json_object_get(fr, "response");
		assert_int_equal(json_object_size(r), 1);
	}
	json_t *r0 = json_object_get(json_object_get(json_array_get(parts, 0), "functionResponse"), "response");
	json_t *r1 = json_object_get(json_object_get(json_array_get(parts, 1), "functionResponse"), "response");
	json_t *r2 = json_object_get(json_object_get(json_array_get(parts, 2), "functionResponse"), "response");
	assert_string_equal(json_string_value(json_object_get(r0, "output")), "A");
	assert_string_equal(json_string_value(json_object_get(r1, "error")), "invalid (invalid_input): bad");
	assert_string_equal(json_string_value(json_object_get(r2, "error")), "");
	json_decref(got);
	tgi_pcalls_free(&c);
}

static void test_results_edge_cases(void **state)
{
	/* no calls: nothing to answer */
	tgi_pcalls none = {0};
	json_t *got = P->results(&none, NULL);
	assert_true(json_is_array(got));
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);

	/* output that is not UTF-8 still makes valid JSON; a nameless invalid
	 * call is answered too */
	tgi_pcalls c;
	decode_ok("bad_args.json", &c);
	tgi_presult res[3] = {
		{"invalid", 1, "x", NULL}, {"invalid", 1, "y", NULL}, {"persisted", 0, "b\xff\xfe", NULL},
	};
	got = P->results(&c, res);
	json_t *parts = json_object_get(json_array_get(got, 0), "parts");
	assert_int_equal(json_array_size(parts), 3);
	json_t *fr1 = json_object_get(json_array_get(parts, 1), "functionResponse");
	assert_string_equal(json_string_value(json_object_get(fr1, "name")), "");
	json_t *fr2 = json_object_get(json_array_get(parts, 2), "functionResponse");
	assert_string_equal(json_string_value(json_object_get(json_object_get(fr2, "response"), "output")),
	                    "b\xEF\xBF\xBD\xEF\xBF\xBD");
	char *s = json_dumps(got, JSON_COMPACT);
	assert_non_null(s);
	free(s);
	json_decref(got);
	tgi_pcalls_free(&c);
}

/* ---- definitions out ---- */

static void assert_tools_golden(unsigned flags, const char *golden)
{
	char err[512] = "";
	json_t *defs = fixture_json("defs.json");
	json_t *got = P->tools(defs, flags, err, sizeof err);
	if (!got)
		fail_msg("tools: %s", err);
	json_t *want = fixture_json(golden);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(2));
		fail_msg("%s differs:\n%s", golden, s);
	}
	json_decref(got);
	json_decref(want);
	json_decref(defs);
}

static void test_tools_default(void **state)
{
	assert_tools_golden(0, "tools_default.golden.json");

	/* the schema goes out verbatim, and as a copy */
	char err[256];
	json_t *defs = fixture_json("defs_cycle.json");
	json_t *got = P->tools(defs, 0, err, sizeof err);
	assert_non_null(got);
	json_t *decl = json_array_get(json_object_get(json_array_get(got, 0), "functionDeclarations"), 0);
	json_t *schema = json_object_get(decl, "parametersJsonSchema");
	json_t *in = json_object_get(json_array_get(defs, 0), "input_schema");
	assert_true(json_equal(schema, in));
	assert_ptr_not_equal(schema, in);
	assert_null(json_object_get(decl, "parameters"));
	json_decref(got);
	json_decref(defs);
}

static void test_tools_legacy(void **state)
{
	assert_tools_golden(TGI_DIALECT_GEMINI_LEGACY, "tools_legacy.golden.json");

	/* what the dialect makes of the schema is what goes out */
	char err[256], err2[256];
	json_t *defs = fixture_json("defs.json");
	json_t *got = P->tools(defs, TGI_DIALECT_GEMINI_LEGACY, err, sizeof err);
	for (size_t i = 0; i < json_array_size(defs); i++) {
		json_t *decl = json_array_get(json_object_get(json_array_get(got, 0),
		                                              "functionDeclarations"), i);
		json_t *want = tgi_dialect_gemini_legacy(
			json_object_get(json_array_get(defs, i), "input_schema"), err2, sizeof err2);
		assert_non_null(want);
		assert_true(json_equal(json_object_get(decl, "parameters"), want));
		assert_null(json_object_get(decl, "parametersJsonSchema"));
		json_decref(want);
	}
	json_decref(got);
	json_decref(defs);

	/* a $ref cycle cannot be inlined: refused, naming the tool */
	defs = fixture_json("defs_cycle.json");
	assert_null(P->tools(defs, TGI_DIALECT_GEMINI_LEGACY, err, sizeof err));
	assert_sentence(err);
	assert_non_null(strstr(err, "tool \"walk_list\": "));
	json_decref(defs);
}

static void test_tools_refused(void **state)
{
	static const struct {
		const char *defs;
		const char *want;
	} bad[] = {
		{"{}", "not a JSON array"},
		{"[1]", "tool definition 0 has no \"name\""},
		{"[{\"name\":\"ok\"},{\"description\":\"x\"}]", "tool definition 1 has no \"name\""},
		{"[{\"name\":\"read file\",\"input_schema\":{\"type\":\"object\"}}]", "read file"},
		{"[{\"name\":\"\",\"input_schema\":{\"type\":\"object\"}}]", ""},
		{"[{\"name\":\"a\",\"input_schema\":[]}]", "tool \"a\": \"input_schema\" is not a JSON object"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad); i++) {
		json_error_t je;
		json_t *defs = json_loads(bad[i].defs, 0, &je);
		assert_non_null(defs);
		for (unsigned flags = 0; flags <= TGI_DIALECT_GEMINI_LEGACY; flags++) {
			char err[512] = "";
			assert_null(P->tools(defs, flags, err, sizeof err));
			assert_sentence(err);
			if (!strstr(err, bad[i].want))
				fail_msg("%s: \"%s\" does not mention \"%s\"", bad[i].defs, err, bad[i].want);
		}
		json_decref(defs);
	}

	/* Gemini's wider name set (dots, colons) is accepted, up to 64 characters */
	const char *ok = "[{\"name\":\"ns.tool:v1\",\"input_schema\":{\"type\":\"object\"}}]";
	json_error_t je;
	json_t *defs = json_loads(ok, 0, &je);
	char err[256];
	json_t *got = P->tools(defs, 0, err, sizeof err);
	assert_non_null(got);
	json_decref(got);
	json_decref(defs);

	/* no tools: an empty tools array, not an empty Tool */
	defs = json_array();
	got = P->tools(defs, 0, err, sizeof err);
	assert_true(json_is_array(got));
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	json_decref(defs);

	/* a definition without a schema or a description: a function without parameters */
	defs = json_loads("[{\"name\":\"ping\"}]", 0, &je);
	got = P->tools(defs, TGI_DIALECT_GEMINI_LEGACY, err, sizeof err);
	json_t *want = json_loads("[{\"functionDeclarations\":[{\"name\":\"ping\",\"description\":\"\"}]}]",
	                          0, &je);
	assert_true(json_equal(got, want));
	json_decref(want);
	json_decref(got);
	json_decref(defs);
}

int main(void)
{
	if (fixture_open("gemini") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_row),
		cmocka_unit_test(test_text_only),
		cmocka_unit_test(test_one_call),
		cmocka_unit_test(test_several_calls),
		cmocka_unit_test(test_no_arg_calls),
		cmocka_unit_test(test_ids_from_the_api),
		cmocka_unit_test(test_thought_parts_are_not_text),
		cmocka_unit_test(test_finish_reason_is_not_trusted),
		cmocka_unit_test(test_only_the_first_candidate),
		cmocka_unit_test(test_bad_calls_do_not_stop_the_others),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_prompt_blocked),
		cmocka_unit_test(test_too_many_calls),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_stream_cut_between_chunks),
		cmocka_unit_test(test_stream_cut_inside_an_event),
		cmocka_unit_test(test_stream_corrupt),
		cmocka_unit_test(test_stream_refused),
		cmocka_unit_test(test_stream_lines_and_comments),
		cmocka_unit_test(test_streamed_pieces_are_not_run),
		cmocka_unit_test(test_results_shape),
		cmocka_unit_test(test_results_follow_call_order),
		cmocka_unit_test(test_results_edge_cases),
		cmocka_unit_test(test_tools_default),
		cmocka_unit_test(test_tools_legacy),
		cmocka_unit_test(test_tools_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
