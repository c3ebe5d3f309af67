/*
 * sse.h — Server-Sent Events, as the model APIs stream them
 * (src/protocol/sse.c).
 *
 * Lines end in LF, CRLF or CR.  `event: NAME`, `data: TEXT` (several data
 * lines joined with "\n"), `id:`, `retry:` and `: comments`; a blank line
 * ends an event.  One leading space after the colon is dropped.  An event
 * with no data is not delivered.  OpenAI's `data: [DONE]` is delivered
 * like any other (the decoder decides).
 *
 * Owns: the framing.  Must not: parse the data (the protocol files do).
 */
#ifndef TGI_SSE_H
#define TGI_SSE_H

#include <stddef.h>

#define TGI_SSE_MAX (64u << 20)  /* bytes of one stream */

typedef struct tgi_sse_event {
	const char *event;   /* "" when the event had no `event:` line */
	const char *data;    /* the joined data lines, NUL-terminated */
	size_t      data_len;
	size_t      line;    /* the stream line the event started on, for messages */
} tgi_sse_event;

/* Called once per event, in order; borrowed for the call.  Return 0 to go
 * on, nonzero to stop (tgi_sse_parse then returns that value). */
typedef int (*tgi_sse_cb)(const tgi_sse_event *ev, void *arg);

/*
 * Parse len bytes of stream.  Returns 0 when every event was delivered,
 * the callback's nonzero value when it stopped, or -1 with a sentence in
 * err (over TGI_SSE_MAX, a NUL byte).  *truncated is set when the stream
 * ends inside an event (no blank line after its last data line); that
 * last event is still delivered, and *truncated is set before it is, so a
 * callback that can see the flag knows the event may be cut short.
 */
int tgi_sse_parse(const char *text, size_t len, tgi_sse_cb cb, void *arg, int *truncated,
                  char *err, size_t errlen);

/*
 * A stream arriving in pieces: where the events complete so far end.  The
 * caller keeps one cutter per stream (zeroed at its start) and asks again
 * after each piece with the whole of what it holds, p[0..n); scanning
 * resumes where it stopped, so a long line arriving in many pieces is read
 * once.  Returns the byte after the last blank line (0: no event is
 * complete); a CR at the very end waits for the next byte (it may be a
 * CRLF).  A caller that drops the first k bytes subtracts k from scan and
 * line.
 */
typedef struct tgi_sse_cutter {
	size_t scan;   /* the next byte to look at */
	size_t line;   /* where the unfinished line begins */
} tgi_sse_cutter;

size_t tgi_sse_cut(tgi_sse_cutter *c, const char *p, size_t n);

#endif
