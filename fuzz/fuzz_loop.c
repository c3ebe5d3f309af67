/*
 * fuzz_loop.c — loop detection's readers of outside bytes (src/mw/loop.c):
 * the window entry read back from the ledger, and the outcome digest of a
 * tool's output or an error message (timestamps, UUIDs and volatile keys
 * left out).
 *
 * Invariants checked (a violation traps):
 *   - an entry is accepted only in its one canonical form: written back
 *     from its parts it is the input again, byte for byte; its tool name is
 *     printable and its flags are "-" or a subsequence of "rwb";
 *   - the digest is 64 lower-case hex, the same every time, the same for a
 *     deep copy and for an object whose keys were inserted in another
 *     order (keys are sorted);
 *   - an error message's digest does not depend on anything but its text.
 * Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mw/mw.h"
#include "fuzz.h"

static int hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

static void check_entry(const char *text)
{
	char sig[65], out[65], fl[4], tool[129], back[512];
	if (tgi_loop_entry_parse(text, sig, out, fl, tool) < 0)
		return;
	check(hex64(sig) && hex64(out));
	check(!strcmp(fl, "-") || (strspn(fl, "rwb") == strlen(fl) && fl[0]));
	check(tool[0] && printable(tool));
	snprintf(back, sizeof back, "v1 %s %s %s %s", sig, out, fl, tool);
	check(!strcmp(back, text));
}

/* v with each object's keys inserted in reverse order, at every depth. */
static json_t *reversed(const json_t *v)
{
	if (json_is_array(v)) {
		json_t *a = json_array();
		for (size_t i = 0; i < json_array_size(v); i++)
			json_array_append_new(a, reversed(json_array_get(v, i)));
		return a;
	}
	if (!json_is_object(v))
		return json_deep_copy(v);
	size_t n = json_object_size(v), k = 0;
	const char **keys = calloc(n ? n : 1, sizeof *keys);
	const char *key;
	json_t *val;
	json_object_foreach((json_t *)v, key, val)
		keys[k++] = key;
	json_t *o = json_object();
	while (k-- > 0)
		json_object_set_new(o, keys[k], reversed(json_object_get(v, keys[k])));
	free(keys);
	return o;
}

static void check_output(const json_t *v)
{
	char a[65], b[65], c[65];
	tgi_loop_outcome(TG_PERSISTED, TG_ERR_NONE, NULL, v, a);
	tgi_loop_outcome(TG_PERSISTED, TG_ERR_NONE, NULL, v, b);
	check(hex64(a) && !strcmp(a, b));
	json_t *copy = json_deep_copy(v);
	tgi_loop_outcome(TG_REPLAYED, TG_ERR_NONE, NULL, copy, c);
	check(!strcmp(a, c));
	json_decref(copy);
	json_t *rev = reversed(v);
	tgi_loop_outcome(TG_COMMITTED, TG_ERR_NONE, NULL, rev, c);
	check(!strcmp(a, c));
	json_decref(rev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	check_entry(text);

	json_error_t je;
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
	if (v) {
		check_output(v);
		json_decref(v);
	}

	char a[65], b[65];
	tgi_loop_outcome(TG_FAILED, TG_ERR_TOOL_ERROR, text, NULL, a);
	json_t *ignored = json_string("ignored: a failure's output is not its outcome");
	tgi_loop_outcome(TG_FAILED, TG_ERR_TOOL_ERROR, text, ignored, b);
	json_decref(ignored);
	check(hex64(a) && !strcmp(a, b));
	free(text);
	return 0;
}
