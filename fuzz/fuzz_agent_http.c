/*
 * fuzz_agent_http.c — libFuzzer target for what the HTTP providers read
 * from a provider (src/agent/http.h): an error body, a retry-after or
 * retry-after-ms value, one event of each API's stream.
 *
 * The error message must be one printable line that fits the room it was
 * given (the first byte of the input chooses the room); a wait must be -1
 * or from 0 to one day; the text of an event must come in non-empty
 * pieces, as many as the function counts.  Any crash, leak, hang or
 * sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the network.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http.h"
#include "fuzz.h"
#include "util/util.h"

#define INPUT_MAX (256u << 10)

static void on_piece(void *arg, const char *text, size_t len)
{
	int *n = arg;
	check(text != NULL && len > 0);
	check(text[len] == '\0'); /* a jansson string: terminated at its length */
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const apis[] = {"openai-chat", "openai-responses", "anthropic",
	                                   "gemini"};
	const char *in = (const char *)data;
	char out[300], *text;
	size_t cap;
	int64_t ms;

	if (size > INPUT_MAX)
		return 0;

	/* the error body, in a room of 1 to 256 bytes */
	cap = size ? 1 + data[0] : sizeof out;
	memset(out, 'x', sizeof out);
	tgi_http_error_message(in, size, out, cap);
	check(memchr(out, '\0', cap) != NULL);
	check(printable(out));
	check(cap == sizeof out || out[cap] == 'x'); /* nothing written past the room */

	/* the headers' values, as text */
	text = tgi_strndup(in, strnlen(in, size));
	ms = tgi_http_retry_after(text, 1700000000000LL);
	check(ms == -1 || (ms >= 0 && ms <= 86400000));
	ms = tgi_http_retry_after_ms(text);
	check(ms == -1 || (ms >= 0 && ms <= 86400000));
	free(text);

	/* one event of each API */
	for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
		int pieces = 0;
		int n = tgi_http_event_text(apis[i], in, size, on_piece, &pieces);
		check(n == pieces && n >= 0);
	}
	return 0;
}
