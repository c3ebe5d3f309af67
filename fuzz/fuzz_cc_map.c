/*
 * fuzz_cc_map.c — arbitrary arguments into Claude Code's view of a call
 * (tgi_cc_runs_make) and an arbitrary updatedInput back into toolgate's
 * arguments (tgi_cc_args_back), for every kind of tool.
 *
 * Input: byte 0 picks the kind of tool; the rest is the call's arguments
 * as JSON text, up to a "\0\0" that starts the hook's updatedInput (JSON
 * text too).  Text that is not JSON is given as it is to what accepts any
 * JSON: null arguments, or no updatedInput at all.
 *
 * Owns: nothing.  Must not: read the file system (no ws_fd) or run
 * anything; every input must end in runs and an answer that keep the
 * invariants below, never a crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mw/mw.h"
#include "util/util.h"

#define WS "/work/space"

/* Every file_path a run gives is absolute with no "." or ".." left in it. */
static int clean_path(const json_t *v)
{
	const char *s = json_string_value(v);
	if (!s)
		return 1;
	return s[0] == '/' && !strstr(s, "/./") && !strstr(s, "/../") && !strstr(s, "//");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	tgi_cc_kind kind = (tgi_cc_kind)(data[0] % (TGI_CC_MCP + 1));
	const char *text = (const char *)data + 1;
	size_t len = size - 1, ulen = 0;
	const char *utext = NULL;
	const char *sep = memmem(text, len, "\0\0", 2);
	if (sep) {
		utext = sep + 2;
		ulen = len - (size_t)(utext - text);
		len = (size_t)(sep - text);
	}
	json_t *args = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *updated = utext ? json_loadb(utext, ulen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
	                        : NULL;

	tgi_cc_runs runs;
	tgi_cc_runs_make(kind, "srv__tool", args, WS, -1, &runs);
	check(runs.n >= 1);
	for (size_t i = 0; i < runs.n; i++) {
		const tgi_cc_run *r = &runs.v[i];
		check(r->name && r->name[0] && json_is_object(r->input));
		if (kind != TGI_CC_MCP && kind != TGI_CC_OTHER)
			check(clean_path(json_object_get(r->input, "file_path")));
		check(!r->cwd || r->cwd[0] == '/');
		/* a run's own input back is no rewrite */
		json_t *out = (json_t *)1;
		char why[256] = "x";
		check(tgi_cc_args_back(kind, args, r, r->input, WS, &out, why, sizeof why) == 0);
		check(!out && !why[0]);
	}
	if (updated) {
		json_t *out = NULL;
		char why[256];
		int rc = tgi_cc_args_back(kind, args, &runs.v[0], updated, WS, &out, why, sizeof why);
		if (rc == 0)
			check(!out || json_is_object(out));
		else
			check(!out && why[0] && printable(why));
		if (kind == TGI_CC_PATCH && !json_equal(updated, runs.v[0].input))
			check(rc < 0);        /* a patch is never rewritten one file at a time */
		json_decref(out);
	}
	tgi_cc_runs_free(&runs);
	json_decref(args);
	json_decref(updated);
	return 0;
}
