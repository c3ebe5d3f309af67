/*
 * sse.c — Server-Sent Events framing, as the model APIs stream them
 * (the WHATWG event-stream format; see sse.h for the contract).
 *
 * The whole stream is in memory.  It is checked first (size, NUL bytes), so
 * a stream that is refused delivers no event at all.  Then it is read line
 * by line: a line ends in LF, CRLF or CR; one leading byte-order mark is
 * dropped; `:` lines are comments; `event:` sets the event's name, each
 * `data:` line adds one line to its data; `id:`, `retry:` and unknown
 * fields are read and ignored; a blank line ends the event, which is
 * delivered when it has data.  Field names are case-sensitive.
 *
 * A stream that ends before the blank line closing an event (any field line
 * since the last blank line) is truncated: *truncated is set BEFORE that
 * last event is delivered, so a callback that shares the flag knows the
 * event it is reading may be cut short.
 *
 * Owns: the framing and two buffers per call (the event's name and data,
 * both capped at TGI_SSE_MAX).  Must not: parse or judge the data (the
 * protocol files do).
 */
#include "util/sse.h"

#include <string.h>

#include "util/util.h"

typedef struct sse_event_buf {
	tgi_buf name;
	tgi_buf data;
	int     has_data;  /* at least one data line (data may still be "") */
	int     open;      /* a field line was read since the last blank line */
	size_t  line;      /* the line of the event's first field */
} sse_event_buf;

static void event_reset(sse_event_buf *e)
{
	e->name.len = e->data.len = 0;
	if (e->name.p)
		e->name.p[0] = '\0';
	if (e->data.p)
		e->data.p[0] = '\0';
	e->has_data = e->open = 0;
	e->line = 0;
}

/* A blank line (or the end of the stream): deliver the event if it has
 * data, then start the next. */
static int event_dispatch(sse_event_buf *e, tgi_sse_cb cb, void *arg)
{
	int rc = 0;
	if (e->has_data) {
		tgi_sse_event ev = {
			.event = e->name.p ? e->name.p : "",
			.data = e->data.p ? e->data.p : "",
			.data_len = e->data.len,
			.line = e->line,
		};
		rc = cb(&ev, arg);
	}
	event_reset(e);
	return rc;
}

static int field_is(const char *name, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(name, want, n) == 0;
}

/* One field line: "name", "name:" or "name: value" (one leading space of
 * the value dropped).  0, or -1 when a buffer cap is hit. */
static int event_field(sse_event_buf *e, const char *line, size_t n, size_t lineno)
{
	const char *colon = memchr(line, ':', n);
	size_t flen = colon ? (size_t)(colon - line) : n;
	const char *value = colon ? colon + 1 : line + n;
	size_t vlen = (size_t)(line + n - value);

	if (vlen && value[0] == ' ')
		value++, vlen--;
	if (!e->open)
		e->line = lineno;
	e->open = 1;

	if (field_is(line, flen, "data")) {
		if (e->has_data && tgi_buf_append(&e->data, "\n", 1) < 0)
			return -1;
		if (tgi_buf_append(&e->data, value, vlen) < 0)
			return -1;
		e->has_data = 1;
	} else if (field_is(line, flen, "event")) {
		e->name.len = 0;
		if (tgi_buf_append(&e->name, value, vlen) < 0)
			return -1;
	}
	/* id, retry and unknown fields: nothing the decoders use */
	return 0;
}

/* 1-based line number of byte offset at (LF, CRLF and CR each end a line). */
static size_t line_of(const char *text, size_t at)
{
	size_t line = 1;
	for (size_t i = 0; i < at; i++) {
		if (text[i] == '\n')
			line++;
		else if (text[i] == '\r' && !(i + 1 < at && text[i + 1] == '\n'))
			line++;
	}
	return line;
}

int tgi_sse_parse(const char *text, size_t len, tgi_sse_cb cb, void *arg, int *truncated,
                  char *err, size_t errlen)
{
	sse_event_buf e;
	size_t pos = 0, lineno = 0;
	int rc = 0;

	if (truncated)
		*truncated = 0;
	if (len > TGI_SSE_MAX) {
		tgi_snprintf(err, errlen, "the stream is %zu bytes, over the limit of %u MiB", len,
		             TGI_SSE_MAX >> 20);
		return -1;
	}
	const char *nul = len ? memchr(text, '\0', len) : NULL;
	if (nul) {
		tgi_snprintf(err, errlen, "the stream has a NUL byte on line %zu",
		             line_of(text, (size_t)(nul - text)));
		return -1;
	}

	tgi_buf_init(&e.name, TGI_SSE_MAX);
	tgi_buf_init(&e.data, TGI_SSE_MAX);
	event_reset(&e);
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		pos = 3;

	while (pos < len) {
		const char *line = text + pos;
		size_t n = 0;
		while (pos + n < len && line[n] != '\n' && line[n] != '\r')
			n++;
		size_t next = pos + n;
		if (next < len)
			next += (line[n] == '\r' && next + 1 < len && line[n + 1] == '\n') ? 2 : 1;
		lineno++;

		if (n == 0)
			rc = event_dispatch(&e, cb, arg);
		else if (line[0] != ':' && event_field(&e, line, n, lineno) < 0) {
			tgi_snprintf(err, errlen, "the event on line %zu is over %u MiB", e.line,
			             TGI_SSE_MAX >> 20);
			rc = -1;
		}
		if (rc)
			goto out;
		pos = next;
	}
	if (e.open) {
		if (truncated)
			*truncated = 1;
		rc = event_dispatch(&e, cb, arg);
	}
out:
	tgi_buf_free(&e.name);
	tgi_buf_free(&e.data);
	return rc;
}

size_t tgi_sse_cut(tgi_sse_cutter *c, const char *p, size_t n)
{
	size_t i = c->scan, cut = 0;

	while (i < n) {
		size_t end;
		if (p[i] != '\n' && p[i] != '\r') {
			i++;
			continue;
		}
		end = i + 1;
		if (p[i] == '\r') {
			if (end == n)
				break;
			if (p[end] == '\n')
				end++;
		}
		if (i == c->line)
			cut = end;
		c->line = i = end;
	}
	c->scan = i;
	return cut;
}
