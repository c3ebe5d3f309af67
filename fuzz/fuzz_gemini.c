/*
 * fuzz_gemini.c — libFuzzer target for the Gemini protocol
 * (src/protocol/gemini.c): the same bytes as a whole response, as an SSE
 * stream, and as tool definitions.
 *
 * A decode either refuses with one printable sentence and leaves its
 * output empty, or gives calls that each have an id and a name, and either
 * an error sentence or arguments that are a compact JSON object; echo is
 * NULL or {"thoughtSignature": string}; a second decode gives the same.
 * results() answers every call once, in order, by the call's name, and
 * dumps as JSON.  tools() gives one declaration per definition, or NULL
 * with a printable sentence.  Any crash, leak, hang or sanitizer report
 * is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "protocol/protocol.h"

#define INPUT_MAX (64u << 10)

static void check_calls(const tgi_pcalls *c)
{
	check(c->text != NULL);
	check(c->n <= 1024);
	for (size_t i = 0; i < c->n; i++) {
		const tgi_pcall *p = &c->v[i];
		check(p->id && *p->id && p->name && !p->raw);
		if (p->error) {
			check(*p->error && printable(p->error));
			check(!p->args || p->args_len == strlen(p->args));
		} else {
			json_error_t je;
			check(p->args && p->args_len == strlen(p->args));
			json_t *a = json_loads(p->args, 0, &je);
			check(json_is_object(a));
			char *again = json_dumps(a, JSON_COMPACT);
			check(again && !strcmp(again, p->args));
			free(again);
			json_decref(a);
		}
		if (p->echo) {
			check(json_is_object(p->echo) && json_object_size(p->echo) == 1);
			check(json_is_string(json_object_get(p->echo, "thoughtSignature")));
		}
	}
}

static void check_same(const tgi_pcalls *a, const tgi_pcalls *b)
{
	check(a->n == b->n && !strcmp(a->text, b->text));
	check(!a->stop == !b->stop && (!a->stop || !strcmp(a->stop, b->stop)));
	for (size_t i = 0; i < a->n; i++) {
		const tgi_pcall *x = &a->v[i], *y = &b->v[i];
		check(!strcmp(x->id, y->id) && !strcmp(x->name, y->name));
		check(!x->args == !y->args && (!x->args || !strcmp(x->args, y->args)));
		check(!x->error == !y->error && (!x->error || !strcmp(x->error, y->error)));
		check(!x->echo == !y->echo && (!x->echo || json_equal(x->echo, y->echo)));
	}
}

static void check_results(const tgi_pcalls *c)
{
	static const char *texts[] = {"ok", "", "denied (not_permitted): no", "b\xff"};
	tgi_presult *res = calloc(c->n + 1, sizeof *res);
	check(res != NULL);
	for (size_t i = 0; i < c->n; i++)
		res[i] = (tgi_presult){i % 2 ? "denied" : "persisted", (int)(i % 2), texts[i % 4], NULL};
	json_t *msgs = tgi_protocol_gemini.results(c, res);
	check(json_is_array(msgs));
	if (!c->n) {
		check(json_array_size(msgs) == 0);
	} else {
		json_t *parts = json_object_get(json_array_get(msgs, 0), "parts");
		check(json_array_size(msgs) == 1 && json_array_size(parts) == c->n);
		for (size_t i = 0; i < c->n; i++) {
			json_t *fr = json_object_get(json_array_get(parts, i), "functionResponse");
			check(!strcmp(json_string_value(json_object_get(fr, "name")), c->v[i].name));
			json_t *r = json_object_get(fr, "response");
			check(json_object_size(r) == 1 &&
			      json_object_get(r, i % 2 ? "error" : "output") != NULL);
		}
	}
	char *s = json_dumps(msgs, JSON_COMPACT);
	check(s != NULL);
	free(s);
	json_decref(msgs);
	free(res);
}

typedef int (*decode_fn)(const char *, size_t, tgi_pcalls *, char *, size_t);

static void one_decode(decode_fn decode, const char *text, size_t size)
{
	tgi_pcalls c, again;
	char err[512], err2[512];
	memset(err, 0, sizeof err);
	int rc = decode(text, size, &c, err, sizeof err);
	if (rc != 0) {
		check(rc == -1 && *err && printable(err));
		check(c.n == 0 && !c.v && !c.text && !c.stop);
		tgi_pcalls_free(&c);
		return;
	}
	check_calls(&c);
	check(decode(text, size, &again, err2, sizeof err2) == 0);
	check_same(&c, &again);
	check_results(&c);
	tgi_pcalls_free(&again);
	tgi_pcalls_free(&c);
}

static void one_tools(const char *text, size_t size)
{
	json_error_t je;
	json_t *defs = json_loadb(text, size, JSON_DECODE_ANY, &je);
	if (!defs)
		return;
	for (unsigned flags = 0; flags <= TGI_DIALECT_GEMINI_LEGACY; flags++) {
		char err[512] = "";
		json_t *t = tgi_protocol_gemini.tools(defs, flags, err, sizeof err);
		if (!t) {
			check(*err && printable(err));
			continue;
		}
		json_t *decls = json_object_get(json_array_get(t, 0), "functionDeclarations");
		check(json_is_array(t) && json_array_size(decls) == json_array_size(defs));
		check(json_array_size(t) == (json_array_size(defs) ? 1u : 0u));
		json_decref(t);
	}
	json_decref(defs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	const char *text = (const char *)data;
	one_decode(tgi_protocol_gemini.decode, text, size);
	one_decode(tgi_protocol_gemini.decode_stream, text, size);
	one_tools(text, size);
	return 0;
}
