/*
 * protocol.c — the table of model APIs: finding an API by name.  What the
 * APIs' decoders share (a list of decoded calls) is calls.c's, so that the
 * table calls its rows and no row calls back into the table.
 *
 * Owns: the list of the four protocol rows.  Must not: know any wire shape
 * (each API's file does).
 */
#include "protocol/protocol.h"

#include <stdlib.h>
#include <string.h>

static const tgi_protocol *const protocols[] = {
	&tgi_protocol_openai_chat,
	&tgi_protocol_openai_responses,
	&tgi_protocol_anthropic,
	&tgi_protocol_gemini,
};

const tgi_protocol *tgi_protocol_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
		if (strcmp(protocols[i]->name, name) == 0)
			return protocols[i];
	return NULL;
}
