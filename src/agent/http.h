/*
 * http.h — the parts of the HTTP providers (http.c) that read what a
 * provider sent, apart from the transport so that tests and fuzz targets
 * reach them: an error body, a retry-after header, the text of one event
 * of a stream.
 *
 * Owns: nothing.  Must not: do I/O.
 */
#ifndef TGI_AGENT_HTTP_H
#define TGI_AGENT_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

/*
 * The provider's own message in an error body, as one printable line into
 * out (cap bytes, cut on a UTF-8 boundary): OpenAI {error:{message}},
 * Anthropic {type:"error", error:{message}}, Gemini {error:{message,
 * status}} (as "message (STATUS)", also inside a one-element array), and
 * the {error:"text"}, {message} or {detail} of OpenAI-compatible servers.
 * A body that is not JSON gives its first 160 characters unless it looks
 * like markup; "" when there is nothing to quote.
 */
void tgi_http_error_message(const char *body, size_t len, char *out, size_t cap);

/*
 * A `retry-after` value: delay-seconds (a decimal fraction accepted) or an
 * HTTP date (IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"), against the
 * wall clock now_unix_ms.  Milliseconds to wait (0 for a date already
 * past, at most one day), or -1 when the value is neither.
 */
int64_t tgi_http_retry_after(const char *value, int64_t now_unix_ms);

/* A `retry-after-ms` value (a decimal number of milliseconds): as above. */
int64_t tgi_http_retry_after_ms(const char *value);

/*
 * The text an event of api's stream adds to the answer, given to cb in
 * order: Chat choices[].delta.content, Responses response.output_text.delta,
 * Anthropic content_block_delta text_delta, Gemini
 * candidates[].content.parts[].text (thoughts left out).  data is the
 * event's data (not NUL-terminated); anything else, or what is not JSON,
 * gives nothing.  Returns the number of pieces given.
 */
int tgi_http_event_text(const char *api, const char *data, size_t len, tgi_agent_text_fn cb,
                        void *arg);

#endif
