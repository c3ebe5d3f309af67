/*
 * calls.c — the decoded calls every API's decoder fills (protocol.h
 * tgi_pcalls): adding one, freeing them all.
 *
 * Owns: the tgi_pcalls arrays' growth and teardown.  Must not: know any
 * wire shape (each API's file does) or the table of APIs (protocol.c).
 */
#include "protocol/protocol.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

tgi_pcall *tgi_pcalls_push(tgi_pcalls *c)
{
	if ((c->n & (c->n - 1)) == 0) /* 0, 1, 2, 4, ...: grow to double */
		c->v = tgi_xrealloc(c->v, (c->n ? 2 * c->n : 1) * sizeof *c->v);
	tgi_pcall *p = &c->v[c->n++];
	memset(p, 0, sizeof *p);
	return p;
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
