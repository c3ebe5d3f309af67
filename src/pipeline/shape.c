/*
 * shape.c — stage 7: fit the result to the model's context.
 *
 * Output over the tool's max_result_chars (code points of its text form:
 * the string itself, or compact JSON) is spilled in full to
 * .toolgate/spill/<op_id>.txt and replaced by head + a marker + tail;
 * `truncated` says how long it was and where the rest is.  A tool that
 * fitted its output to the cap and spilled it itself (tgi_tool_out's
 * truncated: the shell tool) keeps its output as it made it, and its one
 * spill file.
 *
 * Owns: the shaped output and the notes the model reads beside it.  Must
 * not: change the status or run anything.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "util/util.h"

/* An upper bound of the characters of v's compact JSON text, without
 * rendering it (every byte of a string may become a 6-char escape). */
static size_t text_bound(const json_t *v, int depth)
{
	const char *key;
	json_t *child;
	size_t i, n = 2;
	if (depth > 64)
		return SIZE_MAX / 2;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return 6 * json_string_length(v) + 2;
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, key, child)
			n += 6 * strlen(key) + 4 + text_bound(child, depth + 1);
		return n;
	case JSON_ARRAY:
		json_array_foreach(v, i, child)
			n += 1 + text_bound(child, depth + 1);
		return n;
	default:
		return 32; /* numbers, true, false, null */
	}
}

tgi_verdict tgi_shape(tgi_call *c)
{
	tg_gate *g = c->g;
	const tgi_tool *t = c->entry->row;
	size_t max = t->max_result_chars ? t->max_result_chars : g->cfg->max_result_chars;
	char *dumped = NULL;
	const char *text;
	size_t len;

	if (c->truncated) {
		/* the tool fitted its output to the cap and spilled it whole itself
		 * (the shell tool): one spill per call, the output as the tool made it */
		tgi_trace(c, "shape", 1, json_pack("{s:s}", "spilled", "by the tool"));
		return TGI_NEXT;
	}
	if (json_is_string(c->output)) {
		text = json_string_value(c->output);
		len = json_string_length(c->output);
	} else if (text_bound(c->output, 0) <= max) {
		tgi_trace(c, "shape", 1, NULL);
		return TGI_NEXT; /* surely fits: no need to render it to know */
	} else {
		dumped = json_dumps(c->output, JSON_COMPACT | JSON_ENCODE_ANY);
		text = dumped ? dumped : "";
		len = strlen(text);
	}
	size_t chars = len <= max ? len : tgi_utf8_len(text, len);
	if (chars <= max) {
		free(dumped);
		tgi_trace(c, "shape", 1, NULL);
		return TGI_NEXT;
	}

	char spill[256] = "", err[256];
	int rc = tgi_spill_write(g->state_fd, c->op_id, c->session, text, len, spill, sizeof spill, err,
	                         sizeof err);
	char marker[512];
	size_t keep = max > 400 ? max - 200 : max; /* leave room for the marker */
	size_t head_cp = keep * 2 / 3, tail_cp = keep - head_cp;
	size_t head = tgi_utf8_offset(text, len, head_cp);
	size_t tail = tgi_utf8_offset(text, len, chars - tail_cp);
	if (rc == 0)
		tgi_snprintf(marker, sizeof marker,
		             "\n\n[... %zu characters omitted; the full output (%zu characters) is in %s; "
		             "read it with read_file and offset/limit ...]\n\n",
		             chars - head_cp - tail_cp, chars, spill);
	else
		tgi_snprintf(marker, sizeof marker,
		             "\n\n[... %zu characters omitted; the full output could not be saved ...]\n\n",
		             chars - head_cp - tail_cp);
	tgi_buf b;
	tgi_buf_init(&b, head + sizeof marker + (len - tail));
	tgi_buf_append(&b, text, head);
	tgi_buf_puts(&b, marker);
	tgi_buf_append(&b, text + tail, len - tail);
	json_t *shaped = tgi_json_text(b.p, b.len);
	tgi_buf_free(&b);
	free(dumped);
	json_decref(c->output);
	c->output = shaped;
	c->truncated = json_pack("{s:I, s:s?}", "original_chars", (json_int_t)chars, "spill_path",
	                         rc == 0 ? spill : NULL);
	tgi_trace(c, "shape", 1, json_pack("{s:b}", "spilled", rc == 0));
	return TGI_NEXT;
}

char *tgi_envelope_notes(const json_t *env)
{
	const json_t *w = json_object_get(env, "warnings");
	const char *hint = json_string_value(json_object_get(env, "hint"));
	if (!json_array_size(w) && !hint)
		return NULL;
	tgi_buf b;
	tgi_buf_init(&b, 16384);
	size_t i;
	const json_t *one;
	json_array_foreach(w, i, one)
		if (json_is_string(one))
			tgi_buf_printf(&b, "%swarning: %s", b.len ? "\n" : "", json_string_value(one));
	if (hint)
		tgi_buf_printf(&b, "%shint: %s", b.len ? "\n" : "", hint);
	return tgi_buf_steal(&b);
}
