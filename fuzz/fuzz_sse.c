/*
 * fuzz_sse.c — libFuzzer target for the SSE framing (src/protocol/sse.c).
 *
 * Every delivered event must keep sse.h's promises: a name and data that
 * are NUL-terminated at their lengths, data with no CR (CR ends a line),
 * a name with no line end, increasing start lines, *truncated only for
 * the last event.  A stream is refused (-1, one printable sentence, no
 * event delivered) exactly when it holds a NUL byte.  The same stream with
 * every line end rewritten as LF must give the same events; a callback
 * that stops at event k must get k events and its own value back.  The
 * cutter (tgi_sse_cut), fed the stream in pieces, must cut where it cuts
 * the whole stream, never backwards, and before a blank line.  Any
 * crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/sse.h"
#include "util/util.h"

#define INPUT_MAX (256u << 10)

typedef struct seen {
	tgi_buf  log;       /* name \1 data \2 per event */
	size_t   n;
	size_t   last_line;
	size_t   stop_at;   /* stop (return 9) at this event, 1-based; 0: never */
	int     *truncated;
	int      flag_seen;       /* *truncated was set as an event was delivered */
	int      truncated_early; /* ... and another event followed it */
} seen;

static int on_event(const tgi_sse_event *ev, void *arg)
{
	seen *s = arg;
	size_t name_len = strlen(ev->event);

	check(ev->event && ev->data);
	check(ev->data[ev->data_len] == '\0');
	check(!memchr(ev->data, '\r', ev->data_len));
	check(!memchr(ev->event, '\r', name_len) && !memchr(ev->event, '\n', name_len));
	check(ev->line >= 1 && ev->line > s->last_line);
	if (s->flag_seen)
		s->truncated_early = 1; /* only the last event may see the flag */
	s->flag_seen = *s->truncated;
	s->last_line = ev->line;
	s->n++;
	check(tgi_buf_append(&s->log, ev->event, name_len) == 0);
	check(tgi_buf_append(&s->log, "\1", 1) == 0);
	check(tgi_buf_append(&s->log, ev->data, ev->data_len) == 0);
	check(tgi_buf_append(&s->log, "\2", 1) == 0);
	return s->stop_at && s->n == s->stop_at ? 9 : 0;
}

static int run(const char *in, size_t len, seen *s, int *truncated, char *err, size_t errlen)
{
	tgi_buf_init(&s->log, 16u * INPUT_MAX);
	s->n = s->last_line = 0;
	s->truncated = truncated;
	s->truncated_early = s->flag_seen = 0;
	err[0] = '\0';
	return tgi_sse_parse(in, len, on_event, s, truncated, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char err[256];
	int truncated = -1, rc;
	seen a = { 0 }, b = { 0 };

	if (size > INPUT_MAX)
		return 0;
	rc = run(in, size, &a, &truncated, err, sizeof err);
	if (memchr(in, '\0', size)) {
		check(rc == -1 && a.n == 0);
		check(*err && printable(err));
		tgi_buf_free(&a.log);
		return 0;
	}
	check(rc == 0 && !*err);
	check(truncated == 0 || truncated == 1);
	check(!a.truncated_early);

	/* every line end as LF: the same events */
	char *lf = tgi_xmalloc(size + 1);
	size_t n = 0;
	for (size_t i = 0; i < size; i++) {
		if (in[i] == '\r') {
			lf[n++] = '\n';
			if (i + 1 < size && in[i + 1] == '\n')
				i++;
		} else {
			lf[n++] = in[i];
		}
	}
	int truncated2 = -1;
	check(run(lf, n, &b, &truncated2, err, sizeof err) == 0);
	check(b.n == a.n && truncated2 == truncated);
	check(b.log.len == a.log.len && (!a.log.len || memcmp(a.log.p, b.log.p, a.log.len) == 0));
	tgi_buf_free(&b.log);
	free(lf);

	/* a callback that stops */
	if (a.n) {
		size_t k = 1 + (size ? data[0] % a.n : 0);
		seen c = { .stop_at = k };
		check(run(in, size, &c, &truncated2, err, sizeof err) == 9);
		check(c.n == k);
		tgi_buf_free(&c.log);
	}

	/* the cutter: fed in pieces it cuts where it cuts the whole, never
	 * backwards, and what is before a cut holds whole events only */
	tgi_sse_cutter once = { 0 }, step = { 0 };
	size_t whole = tgi_sse_cut(&once, in, size), last = 0, got = 0;
	size_t piece = 1 + (size ? data[size - 1] % 13 : 0);
	for (size_t end = 0; end < size;) {
		end = end + piece < size ? end + piece : size;
		size_t cut = tgi_sse_cut(&step, in, end);
		check(cut <= end);
		if (cut) {
			check(cut >= last);
			last = got = cut;
		}
	}
	check(got == whole && whole <= size);
	if (whole) {
		seen d = { 0 };
		check(run(in, whole, &d, &truncated2, err, sizeof err) == 0);
		check(truncated2 == 0);
		tgi_buf_free(&d.log);
	}
	tgi_buf_free(&a.log);
	return 0;
}
