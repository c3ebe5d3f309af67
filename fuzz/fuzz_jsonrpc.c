/*
 * fuzz_jsonrpc.c — libFuzzer target for JSON-RPC framing and messages
 * (src/mcp/jsonrpc.c).
 *
 * The input is parsed as one message: exactly the BAD ones get a reply,
 * and that reply is a JSON-RPC error (-32700 or -32600, or -32603 when
 * memory ran out) with a printable sentence and an id that is null or a
 * string or integer; the other kinds carry the members jsonrpc.h promises;
 * every dump is one line that reads back as the same message.  Then the
 * input goes through a pipe to the line reader with a cap of 1..64 bytes
 * taken from its first byte, and the lines must be exactly those of a
 * plain model of the framing (split at "\n", one trailing "\r" dropped,
 * empty lines skipped, lines over the cap reported once); each line is
 * parsed too.  Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: one pipe per input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mcp/jsonrpc.h"
#include "util/util.h"

#define INPUT_MAX (32u << 10)  /* fits in a pipe without a second thread */

/* A dump is one line of JSON equal to the message. */
static void check_dump(const json_t *msg)
{
	size_t len;
	char *s = tgi_rpc_dump(msg, &len);
	check(s != NULL && len == strlen(s));
	check(!memchr(s, '\n', len) && !memchr(s, '\r', len));
	json_t *back = json_loadb(s, len, JSON_DECODE_ANY, NULL);
	check(back && json_equal(back, msg));
	json_decref(back);
	free(s);
}

static void check_reply(const json_t *reply)
{
	json_t *err = json_object_get(reply, "error");
	json_t *id = json_object_get(reply, "id");
	json_int_t code = json_integer_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));

	check(json_is_object(reply) && json_object_size(reply) == 3);
	check(json_is_object(err));
	check(json_is_null(id) || json_is_string(id) || json_is_integer(id));
	check(code == TGI_RPC_PARSE_ERROR || code == TGI_RPC_INVALID_REQUEST ||
	      code == TGI_RPC_INTERNAL_ERROR);
	check(msg && *msg && printable(msg));
	check_dump(reply);
}

static void parse_one(const char *text, size_t len)
{
	tgi_rpc_msg m;
	json_t *reply = NULL;

	tgi_rpc_parse(text, len, &m, &reply);
	switch (m.kind) {
	case TGI_RPC_BAD:
		check(reply != NULL);
		check(!m.method && !m.id && !m.params && !m.result && !m.error);
		check_reply(reply);
		break;
	case TGI_RPC_REQUEST:
	case TGI_RPC_NOTIFICATION:
		check(reply == NULL && m.method);
		check(m.kind == TGI_RPC_REQUEST ? (json_is_string(m.id) || json_is_integer(m.id))
		                                : m.id == NULL);
		check(!m.params || json_is_object(m.params));
		check(!m.result && !m.error);
		if (m.kind == TGI_RPC_REQUEST) {
			check(tgi_rpc_id_equal(m.id, m.id));
			json_t *r = tgi_rpc_error(m.id, TGI_RPC_METHOD_NOT_FOUND, m.method, NULL);
			check_dump(r);
			json_decref(r);
		}
		break;
	case TGI_RPC_RESPONSE:
		check(reply == NULL && m.result && !m.error && !m.method);
		check(json_is_string(m.id) || json_is_integer(m.id));
		break;
	case TGI_RPC_ERROR_REPLY:
		check(reply == NULL && json_is_object(m.error) && !m.result && !m.method);
		check(json_is_string(m.id) || json_is_integer(m.id) || json_is_null(m.id));
		break;
	default:
		check(0);
	}
	if (m.root)
		check_dump(m.root);
	json_decref(reply);
	tgi_rpc_msg_free(&m);
}

/* The model: what the reader must return for in[0..n), as a log of
 * "L<line>\n" and "T\n" records. */
static void model(const char *in, size_t n, size_t cap, tgi_buf *log)
{
	size_t start = 0;
	while (start < n) {
		const char *nl = memchr(in + start, '\n', n - start);
		size_t end = nl ? (size_t)(nl - in) : n, len = end - start;
		if (len && in[start + len - 1] == '\r')
			len--;
		if (len > cap)
			check(tgi_buf_append(log, "T\n", 2) == 0);
		else if (len) {
			check(tgi_buf_append(log, "L", 1) == 0);
			check(tgi_buf_append(log, in + start, len) == 0);
			check(tgi_buf_append(log, "\n", 1) == 0);
		}
		start = end + 1;
	}
}

static void read_lines(const char *in, size_t n, size_t cap, tgi_buf *log)
{
	int p[2];
	check(pipe(p) == 0);
	check(write(p[1], in, n) == (ssize_t)n);
	close(p[1]);

	tgi_linereader r;
	tgi_linereader_init(&r, p[0], cap);
	for (;;) {
		const char *line;
		size_t len;
		tgi_line_status st = tgi_linereader_next(&r, &line, &len);
		check(r.size <= cap + (64u << 10));
		if (st == TGI_LINE_EOF)
			break;
		check(st != TGI_LINE_ERROR);
		if (st == TGI_LINE_TOO_LONG) {
			check(tgi_buf_append(log, "T\n", 2) == 0);
			continue;
		}
		check(line && len >= 1 && len <= cap && !memchr(line, '\n', len));
		check(tgi_buf_append(log, "L", 1) == 0);
		check(tgi_buf_append(log, line, len) == 0);
		check(tgi_buf_append(log, "\n", 1) == 0);
		parse_one(line, len);
	}
	tgi_linereader_free(&r);
	close(p[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	tgi_buf want, got;

	if (size > INPUT_MAX)
		return 0;
	parse_one(in, size);

	size_t cap = size ? 1 + data[0] % 64 : 16;
	tgi_buf_init(&want, 4 * INPUT_MAX);
	tgi_buf_init(&got, 4 * INPUT_MAX);
	model(in, size, cap, &want);
	read_lines(in, size, cap, &got);
	check(want.len == got.len && (!want.len || memcmp(want.p, got.p, want.len) == 0));
	tgi_buf_free(&want);
	tgi_buf_free(&got);
	return 0;
}
