/*
 * scripted.h — the scripted provider's entry from text (src/agent/scripted.c),
 * for the tests and the fuzzer; the loop uses tgi_provider_scripted
 * (agent.h), which reads a file or takes the built-in demo script.
 *
 * A script:
 *
 *   {"api": "openai-chat" | "openai-responses" | "anthropic" | "gemini",
 *    "description": "...",                    (optional, not read)
 *    "turns": [<a complete response body of that API>
 *              | {"stream": "<the raw SSE text of one reply>"}, ...]}
 *
 * Owns: nothing global.  Must not: be used by the loop in place of
 * tgi_provider_scripted.
 */
#ifndef TGI_AGENT_SCRIPTED_H
#define TGI_AGENT_SCRIPTED_H

#include <stddef.h>

#include "agent/agent.h"

#define TGI_SCRIPT_MAX (64u << 20)  /* bytes of one script */

/* A scripted provider replaying the script in text (len bytes, borrowed).
 * 0, or -1 with a sentence saying what is wrong with the script. */
int tgi_scripted_from_text(const char *text, size_t len, tgi_provider **out, char *err,
                           size_t errlen);

/* How many turns the provider has given so far (the next is this + 1). */
size_t tgi_scripted_turns_given(const tgi_provider *p);

#endif
