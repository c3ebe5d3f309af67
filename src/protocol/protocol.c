/*
 * protocol.c — the table of model APIs and what every protocol shares:
 * finding an API by name, freeing decoded calls.
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

void tgi_pcalls_free(tgi_pcalls *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].id);
		free(c->v[i].name);
		free(c->v[i].args);
		free(c->v[i].error);
		json_decref(c->v[i].echo);
	}
	free(c->v);
	free(c->text);
	free(c->stop);
	memset(c, 0, sizeof *c);
}
