/*
 * test_sse.c — the SSE framing (src/protocol/sse.c) against sse.h and the
 * WHATWG event-stream rules: LF, CRLF and CR line ends, data lines joined
 * with "\n", one space after the colon dropped, comments, event names,
 * `data: [DONE]` delivered like any event, events without data not
 * delivered, a stream cut inside an event (truncated, its last event still
 * delivered), a callback that stops, the size cap and NUL bytes.
 *
 * Owns: its tables.  Must not: touch the filesystem or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/sse.h"

#define MAX_EVENTS 4

typedef struct want_event {
	const char *event;
	const char *data;
	size_t      line;
} want_event;

typedef struct sse_case {
	const char *what;
	const char *in;
	size_t      len;        /* 0: strlen(in) */
	int         truncated;  /* 1: cut inside its last delivered event; 2: cut inside an
	                           event without data (nothing more delivered) */
	want_event  ev[MAX_EVENTS];
	size_t      n;
} sse_case;

static const sse_case cases[] = {
	{ "empty stream", "", 0, 0, { { 0 } }, 0 },
	{ "blank lines only", "\n\n\r\n\r", 0, 0, { { 0 } }, 0 },
	{ "LF", "data: a\n\ndata: b\n\n", 0, 0, { { "", "a", 1 }, { "", "b", 3 } }, 2 },
	{ "CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", 0, 0, { { "", "a", 1 }, { "", "b", 3 } }, 2 },
	{ "CR", "data: a\r\rdata: b\r\r", 0, 0, { { "", "a", 1 }, { "", "b", 3 } }, 2 },
	{ "mixed line ends", "data: a\r\n\rdata: b\n\r\n", 0, 0, { { "", "a", 1 }, { "", "b", 3 } },
	  2 },
	{ "CR LF is one line end, LF CR two", "data: a\n\r", 0, 0, { { "", "a", 1 } }, 1 },
	{ "multi-line data joined with LF", "data: a\ndata: b\ndata: c\n\n", 0, 0,
	  { { "", "a\nb\nc", 1 } }, 1 },
	{ "multi-line data across CRLF", "data: {\"x\":\r\ndata: 1}\r\n\r\n", 0, 0,
	  { { "", "{\"x\":\n1}", 1 } }, 1 },
	{ "empty data line", "data\n\n", 0, 0, { { "", "", 1 } }, 1 },
	{ "empty data value", "data:\n\n", 0, 0, { { "", "", 1 } }, 1 },
	{ "empty lines inside data", "data:\ndata:\n\n", 0, 0, { { "", "\n", 1 } }, 1 },
	{ "no space after colon", "data:x\n\n", 0, 0, { { "", "x", 1 } }, 1 },
	{ "only one space dropped", "data:  x \n\n", 0, 0, { { "", " x ", 1 } }, 1 },
	{ "a colon in the value", "data: a: b\n\n", 0, 0, { { "", "a: b", 1 } }, 1 },
	{ "comment only", ": ping\n\n", 0, 0, { { 0 } }, 0 },
	{ "comment before data", ":hi\ndata: x\n\n", 0, 0, { { "", "x", 2 } }, 1 },
	{ "comment between data lines", "data: a\n: keep-alive\ndata: b\n\n", 0, 0,
	  { { "", "a\nb", 1 } }, 1 },
	{ "event name", "event: content_block_delta\ndata: {}\n\n", 0, 0,
	  { { "content_block_delta", "{}", 1 } }, 1 },
	{ "event name does not carry over", "event: a\ndata: 1\n\ndata: 2\n\n", 0, 0,
	  { { "a", "1", 1 }, { "", "2", 4 } }, 2 },
	{ "last event line wins", "event: a\nevent: b\ndata: 1\n\n", 0, 0, { { "b", "1", 1 } }, 1 },
	{ "event without data is not delivered", "event: ping\n\nevent: x\ndata: 1\n\n", 0, 0,
	  { { "x", "1", 3 } }, 1 },
	{ "event name without space", "event:ping\ndata:1\n\n", 0, 0, { { "ping", "1", 1 } }, 1 },
	{ "id, retry and unknown fields ignored",
	  "id: 7\nretry: 100\nfoo: bar\nnocolon\ndata: x\n\n", 0, 0, { { "", "x", 1 } }, 1 },
	{ "field names are case-sensitive", "Data: x\nEVENT: y\ndata: z\n\n", 0, 0,
	  { { "", "z", 1 } }, 1 },
	{ "a space before the colon is part of the name", "data : x\ndata: y\n\n", 0, 0,
	  { { "", "y", 1 } }, 1 },
	{ "[DONE] is delivered like any event", "data: {\"a\":1}\n\ndata: [DONE]\n\n", 0, 0,
	  { { "", "{\"a\":1}", 1 }, { "", "[DONE]", 3 } }, 2 },
	{ "leading byte-order mark dropped", "\xEF\xBB\xBF" "data: x\n\n", 0, 0,
	  { { "", "x", 1 } }, 1 },
	{ "a later byte-order mark is part of the field name",
	  "data: a\n\n\xEF\xBB\xBF" "data: b\n\n", 0, 0, { { "", "a", 1 } }, 1 },
	{ "UTF-8 and high bytes pass through", "data: \xC3\xA9\xFF\n\n", 0, 0,
	  { { "", "\xC3\xA9\xFF", 1 } }, 1 },
	{ "truncated: no line end", "data: a\n\ndata: b", 0, 1,
	  { { "", "a", 1 }, { "", "b", 3 } }, 2 },
	{ "truncated: no blank line", "data: a\n\ndata: b\n", 0, 1,
	  { { "", "a", 1 }, { "", "b", 3 } }, 2 },
	{ "truncated: CR at the very end", "data: a\r", 0, 1, { { "", "a", 1 } }, 1 },
	{ "truncated: cut after the name", "data: a\n\nevent: message_stop\n", 0, 2,
	  { { "", "a", 1 } }, 1 },
	{ "truncated: cut inside a field name", "data: a\n\nda", 0, 2, { { "", "a", 1 } }, 1 },
	{ "not truncated: a trailing comment", "data: a\n\n: bye", 0, 0, { { "", "a", 1 } }, 1 },
	{ "not truncated: trailing blank lines", "data: a\n\n\n\n", 0, 0, { { "", "a", 1 } }, 1 },
};

typedef struct seen {
	size_t n;
	char   event[MAX_EVENTS + 1][64];
	char   data[MAX_EVENTS + 1][64];
	size_t data_len[MAX_EVENTS + 1];
	size_t line[MAX_EVENTS + 1];
	int    truncated_at[MAX_EVENTS + 1]; /* *truncated as the event was delivered */
	int   *truncated;
	int    stop_at;                      /* return 7 from this event (1-based); 0: never */
} seen;

static int record(const tgi_sse_event *ev, void *arg)
{
	seen *s = arg;
	assert_true(s->n <= MAX_EVENTS);
	assert_non_null(ev->event);
	assert_non_null(ev->data);
	assert_int_equal(ev->data[ev->data_len], '\0');
	assert_true(ev->data_len < sizeof s->data[0]);
	snprintf(s->event[s->n], sizeof s->event[0], "%s", ev->event);
	memcpy(s->data[s->n], ev->data, ev->data_len + 1);
	s->data_len[s->n] = ev->data_len;
	s->line[s->n] = ev->line;
	s->truncated_at[s->n] = *s->truncated;
	s->n++;
	return s->stop_at && (int)s->n == s->stop_at ? 7 : 0;
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const sse_case *c = &cases[i];
		int truncated = -1;
		seen s = { .truncated = &truncated };
		char err[256] = "";
		size_t len = c->len ? c->len : strlen(c->in);
		print_message("%s\n", c->what);
		assert_int_equal(tgi_sse_parse(c->in, len, record, &s, &truncated, err, sizeof err), 0);
		assert_string_equal(err, "");
		assert_int_equal(truncated, c->truncated != 0);
		assert_int_equal(s.n, c->n);
		for (size_t j = 0; j < c->n; j++) {
			assert_string_equal(s.event[j], c->ev[j].event);
			assert_string_equal(s.data[j], c->ev[j].data);
			assert_int_equal(s.data_len[j], strlen(c->ev[j].data));
			assert_int_equal(s.line[j], c->ev[j].line);
			/* the flag is set before a cut stream's last event is delivered */
			assert_int_equal(s.truncated_at[j], c->truncated == 1 && j == c->n - 1);
		}
	}
}

static void test_callback_stops(void **state)
{
	(void)state;
	const char *in = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
	int truncated = -1;
	seen s = { .truncated = &truncated, .stop_at = 2 };
	char err[256] = "";
	assert_int_equal(tgi_sse_parse(in, strlen(in), record, &s, &truncated, err, sizeof err), 7);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.data[1], "2");
	assert_int_equal(truncated, 0);
	assert_string_equal(err, "");

	/* stopping on a cut stream's last event still returns the callback's value */
	s = (seen){ .truncated = &truncated, .stop_at = 1 };
	assert_int_equal(tgi_sse_parse("data: x", 7, record, &s, &truncated, err, sizeof err), 7);
	assert_int_equal(truncated, 1);
}

static void test_nul_byte(void **state)
{
	(void)state;
	static const char in[] = "data: a\n\ndata: b\0c\n\n";
	int truncated = -1;
	seen s = { .truncated = &truncated };
	char err[256] = "";
	assert_int_equal(tgi_sse_parse(in, sizeof in - 1, record, &s, &truncated, err, sizeof err), -1);
	assert_string_equal(err, "the stream has a NUL byte on line 3");
	assert_int_equal(s.n, 0); /* refused whole: not even the first event */
	assert_int_equal(truncated, 0);

	static const char crlf[] = "data: a\r\n\r\n\0";
	assert_int_equal(tgi_sse_parse(crlf, sizeof crlf - 1, record, &s, &truncated, err, sizeof err),
	                 -1);
	assert_string_equal(err, "the stream has a NUL byte on line 3");
}

static void test_size_limit(void **state)
{
	(void)state;
	int truncated = -1;
	seen s = { .truncated = &truncated };
	char err[256] = "";
	/* the cap is checked before a byte is read */
	char *big = malloc((size_t)TGI_SSE_MAX + 1);
	assert_non_null(big);
	assert_int_equal(tgi_sse_parse(big, (size_t)TGI_SSE_MAX + 1, record, &s, &truncated, err,
	                               sizeof err),
	                 -1);
	assert_string_equal(err, "the stream is 67108865 bytes, over the limit of 64 MiB");
	assert_int_equal(s.n, 0);
	free(big);
}

static int count_big(const tgi_sse_event *ev, void *arg)
{
	size_t *n = arg;
	assert_string_equal(ev->event, "big");
	for (size_t i = 0; i < ev->data_len; i++)
		if (ev->data[i] != (i % 1001 == 1000 ? '\n' : 'x'))
			fail_msg("byte %zu is wrong", i);
	*n += ev->data_len;
	return 0;
}

static void test_large_event(void **state)
{
	(void)state;
	/* 4 MiB of data lines, each 1000 bytes: joined exactly */
	size_t lines = 4096, cap = lines * 1008 + 32, at = 0, got = 0;
	char *in = malloc(cap);
	assert_non_null(in);
	at += (size_t)sprintf(in, "event: big\n");
	for (size_t i = 0; i < lines; i++) {
		memcpy(in + at, "data: ", 6);
		memset(in + at + 6, 'x', 1000);
		in[at + 1006] = '\n';
		at += 1007;
	}
	in[at++] = '\n';
	int truncated = -1;
	char err[256] = "";
	assert_int_equal(tgi_sse_parse(in, at, count_big, &got, &truncated, err, sizeof err), 0);
	assert_int_equal(got, lines * 1001 - 1);
	assert_int_equal(truncated, 0);
	free(in);
}

static int never(const tgi_sse_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	fail_msg("no event expected");
	return 0;
}

static int count_events(const tgi_sse_event *ev, void *arg)
{
	assert_string_equal(ev->data, "x");
	(*(int *)arg)++;
	return 0;
}

static void test_truncated_may_be_null(void **state)
{
	(void)state;
	char err[256] = "";
	assert_int_equal(tgi_sse_parse("event: x", 8, never, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(tgi_sse_parse(NULL, 0, never, NULL, NULL, err, sizeof err), 0);
	/* a cut stream still delivers its last event when nobody asks about the cut */
	int events = 0;
	assert_int_equal(tgi_sse_parse("data: x", 7, count_events, &events, NULL, err, sizeof err), 0);
	assert_int_equal(events, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_large_event),
		cmocka_unit_test(test_truncated_may_be_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
