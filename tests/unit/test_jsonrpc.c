/*
 * test_jsonrpc.c — JSON-RPC framing and messages (src/mcp/jsonrpc.c)
 * against jsonrpc.h and JSON-RPC 2.0: the line reader over pipes,
 * socketpairs and memory files (lines split across writes at every byte,
 * "\r\n", empty lines, over-long lines reported once and skipped, a last
 * line without newline, a cap of 16 bytes, a buffer that stays within cap
 * plus one chunk, EINTR, a bad descriptor, a wake descriptor), the classifier on every kind
 * and every refusal with its code, id echo and sentence, the builders, and
 * dumps that are always one line.
 *
 * Owns: its tables and the descriptors it opens.  Must not: touch the
 * filesystem or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"

#define CHUNK     (64u << 10)  /* the reader's read size, from the task */
#define MAX_LINES 8

/* ---- the line reader ---- */

typedef struct want_line {
	tgi_line_status st;
	const char     *line;  /* TGI_LINE_OK only */
} want_line;

typedef struct reader_case {
	const char *what;
	const char *in;
	size_t      cap;
	want_line   out[MAX_LINES];  /* up to and including TGI_LINE_EOF */
} reader_case;

#define OK(s)   { TGI_LINE_OK, s }
#define LONG    { TGI_LINE_TOO_LONG, NULL }
#define END     { TGI_LINE_EOF, NULL }

static const reader_case reader_cases[] = {
	{ "empty input", "", 16, { END } },
	{ "LF", "a\nb\n", 16, { OK("a"), OK("b"), END } },
	{ "CRLF", "a\r\nb\r\n", 16, { OK("a"), OK("b"), END } },
	{ "empty lines skipped", "\n\n\r\n a\n\r\n\n", 16, { OK(" a"), END } },
	{ "a lone CR is an empty line", "\r", 16, { END } },
	{ "last line without newline", "abc", 16, { OK("abc"), END } },
	{ "last line with a lone trailing CR", "x\nabc\r", 16, { OK("x"), OK("abc"), END } },
	{ "a CR inside a line is kept", "a\rb\n", 16, { OK("a\rb"), END } },
	{ "only one CR is dropped", "a\r\r\n", 16, { OK("a\r"), END } },
	{ "a line of exactly the cap", "0123456789abcdef\n", 16, { OK("0123456789abcdef"), END } },
	{ "a line of the cap with CRLF", "0123456789abcdef\r\n", 16,
	  { OK("0123456789abcdef"), END } },
	{ "a last line of the cap with a trailing CR", "0123456789abcdef\r", 16,
	  { OK("0123456789abcdef"), END } },
	{ "one byte over the cap", "0123456789abcdefX\n", 16, { LONG, END } },
	{ "one byte over the cap before CRLF", "0123456789abcdefX\r\n", 16, { LONG, END } },
	{ "over-long then a good line", "0123456789abcdefXYZ\n{\"ok\":1}\n", 16,
	  { LONG, OK("{\"ok\":1}"), END } },
	{ "two over-long lines are two reports",
	  "0123456789abcdefXYZ\n0123456789abcdefXYZ0123456789\r\nok\n", 16,
	  { LONG, LONG, OK("ok"), END } },
	{ "over-long last line without newline", "ok\n0123456789abcdefXYZ", 16,
	  { OK("ok"), LONG, END } },
	{ "a good line between CRLF lines", "\r\n{\"a\":1}\r\n\r\n", 16, { OK("{\"a\":1}"), END } },
	{ "a cap of one byte", "a\nbb\nc", 1, { OK("a"), LONG, OK("c"), END } },
};

/* Next result, checked against w; the reader must not report more. */
static void expect(tgi_linereader *r, const want_line *w, const char *what)
{
	const char *line = NULL;
	size_t len = 0;
	tgi_line_status st = tgi_linereader_next(r, &line, &len);
	if (st != w->st)
		fail_msg("%s: status %d, want %d (line \"%.*s\")", what, st, w->st,
		         st == TGI_LINE_OK ? (int)len : 0, st == TGI_LINE_OK ? line : "");
	if (st == TGI_LINE_OK) {
		assert_non_null(line);
		if (len != strlen(w->line) || memcmp(line, w->line, len) != 0)
			fail_msg("%s: line \"%.*s\", want \"%s\"", what, (int)len, line, w->line);
		assert_null(memchr(line, '\n', len));
	}
}

static size_t want_count(const reader_case *c)
{
	size_t n = 0;
	while (c->out[n].st != TGI_LINE_EOF)
		n++;
	return n + 1;
}

/* The whole input written at once into a pipe, then the write end closed. */
static void test_reader_cases_whole(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof reader_cases / sizeof reader_cases[0]; i++) {
		const reader_case *c = &reader_cases[i];
		int p[2];
		assert_int_equal(pipe(p), 0);
		size_t n = strlen(c->in);
		assert_int_equal(write(p[1], c->in, n), (ssize_t)n);
		close(p[1]);

		tgi_linereader r;
		tgi_linereader_init(&r, p[0], c->cap);
		for (size_t k = 0; k < want_count(c); k++)
			expect(&r, &c->out[k], c->what);
		/* end of input stays the end */
		expect(&r, &(want_line)END, c->what);
		tgi_linereader_free(&r);
		close(p[0]);
	}
}

/*
 * The same cases, one byte per write over a nonblocking socketpair: after
 * each byte the reader is drained until it would block, so every line is
 * split at every position across reads.  Same results, same order.
 */
static void test_reader_cases_bytewise(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof reader_cases / sizeof reader_cases[0]; i++) {
		const reader_case *c = &reader_cases[i];
		int sv[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);

		tgi_linereader r;
		tgi_linereader_init(&r, sv[0], c->cap);
		size_t k = 0, n = strlen(c->in), total = want_count(c);
		for (size_t b = 0; b <= n; b++) {
			if (b < n)
				assert_int_equal(write(sv[1], c->in + b, 1), 1);
			else
				close(sv[1]);
			for (;;) {
				const char *line;
				size_t len;
				tgi_line_status st = tgi_linereader_next(&r, &line, &len);
				if (st == TGI_LINE_ERROR) {
					assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
					assert_true(b < n);
					break;
				}
				if (k >= total)
					fail_msg("%s: more results than expected", c->what);
				if (st != c->out[k].st)
					fail_msg("%s (byte %zu): status %d, want %d", c->what, b, st,
					         c->out[k].st);
				if (st == TGI_LINE_OK &&
				    (len != strlen(c->out[k].line) || memcmp(line, c->out[k].line, len)))
					fail_msg("%s: line \"%.*s\", want \"%s\"", c->what, (int)len, line,
					         c->out[k].line);
				k++;
				if (st == TGI_LINE_EOF)
					break;
			}
		}
		assert_int_equal(k, total);
		tgi_linereader_free(&r);
		close(sv[0]);
	}
}

/* A memory file holding n bytes, positioned at its start. */
static int memory_file(const char *data, size_t n)
{
	int fd = memfd_create("jsonrpc-test", 0);
	assert_true(fd >= 0);
	for (size_t at = 0; at < n;) {
		ssize_t w = write(fd, data + at, n - at);
		assert_true(w > 0);
		at += (size_t)w;
	}
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* Over-long lines far bigger than a chunk: reported once each, skipped, and
 * the buffer never grows past the cap plus one chunk. */
static void test_reader_long_lines_bounded(void **state)
{
	(void)state;
	size_t big = 300000, cap = 1000, n = 0;
	char *in = malloc(2 * big + 64);
	assert_non_null(in);
	memset(in, 'x', big);
	n += big;
	n += (size_t)sprintf(in + n, "\n{\"ok\":1}\r\n");
	memset(in + n, 'y', big);
	n += big;

	int fd = memory_file(in, n);
	tgi_linereader r;
	tgi_linereader_init(&r, fd, cap);
	expect(&r, &(want_line)LONG, "a 300 kB line");
	assert_true(r.size <= cap + CHUNK);
	expect(&r, &(want_line)OK("{\"ok\":1}"), "the line after it");
	expect(&r, &(want_line)LONG, "a 300 kB last line");
	expect(&r, &(want_line)END, "the end");
	assert_true(r.size <= cap + CHUNK);
	tgi_linereader_free(&r);
	close(fd);
	free(in);
}

/* Under the default-sized cap a 1 MiB line comes back whole, and thousands of
 * short lines across chunk boundaries come back one by one. */
static void test_reader_big_line_and_many_lines(void **state)
{
	(void)state;
	size_t big = 1u << 20, lines = 20000, n = 0;
	char *in = malloc(big + 1 + lines * 16);
	assert_non_null(in);
	for (size_t i = 0; i < big; i++)
		in[n++] = (char)('a' + i % 26);
	in[n++] = '\n';
	for (size_t i = 0; i < lines; i++)
		n += (size_t)sprintf(in + n, i % 2 ? "{\"n\":%zu}\n" : "{\"n\":%zu}\r\n", i);

	int fd = memory_file(in, n);
	tgi_linereader r;
	tgi_linereader_init(&r, fd, 16u << 20);
	const char *line;
	size_t len;
	assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_OK);
	assert_int_equal(len, big);
	assert_memory_equal(line, in, big);
	for (size_t i = 0; i < lines; i++) {
		char want[32];
		int wl = sprintf(want, "{\"n\":%zu}", i);
		assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_OK);
		assert_int_equal(len, (size_t)wl);
		assert_memory_equal(line, want, len);
	}
	assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_EOF);
	tgi_linereader_free(&r);
	close(fd);
	free(in);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A read interrupted by signals (handler installed without SA_RESTART) is
 * retried, not reported. */
static void test_reader_eintr(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		usleep(60 * 1000);
		if (write(p[1], "late\n", 5) != 5)
			_exit(1);
		_exit(0);
	}
	close(p[1]);

	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	struct itimerval every = { { 0, 5000 }, { 0, 5000 } }, off = { { 0, 0 }, { 0, 0 } };
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);

	tgi_linereader r;
	tgi_linereader_init(&r, p[0], 16);
	const char *line;
	size_t len;
	tgi_line_status st = tgi_linereader_next(&r, &line, &len);

	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_int_equal(st, TGI_LINE_OK);
	assert_int_equal(len, 4);
	assert_memory_equal(line, "late", 4);
	assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_EOF);
	tgi_linereader_free(&r);
	close(p[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void next_is(tgi_linereader *r, tgi_line_status want, const char *line_want)
{
	const char *line;
	size_t len;
	tgi_line_status st = tgi_linereader_next(r, &line, &len);
	if (st != want)
		fail_msg("status %d, want %d", st, want);
	if (want == TGI_LINE_OK) {
		assert_int_equal(len, strlen(line_want));
		assert_memory_equal(line, line_want, len);
	}
}

static void drain(int fd)
{
	char b[16];
	assert_true(read(fd, b, sizeof b) > 0);
}

/* A readable wake descriptor stops a reader that would block, wins over
 * input ready at the same moment, keeps a half-read line for later, and
 * does not hide lines already held. */
static void test_reader_wake(void **state)
{
	(void)state;
	int sv[2], w[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(pipe(w), 0);
	tgi_linereader r;
	tgi_linereader_init(&r, sv[0], 64);
	assert_int_equal(r.wake_fd, -1);
	r.wake_fd = w[0];

	assert_int_equal(write(sv[1], "one\ntw", 6), 6);
	next_is(&r, TGI_LINE_OK, "one");
	assert_int_equal(write(w[1], "x", 1), 1);
	next_is(&r, TGI_LINE_WOKEN, NULL);          /* "tw" is kept */
	assert_int_equal(write(sv[1], "o\n", 2), 2);
	next_is(&r, TGI_LINE_WOKEN, NULL);          /* still awake: the wake-up wins */
	drain(w[0]);
	next_is(&r, TGI_LINE_OK, "two");

	assert_int_equal(write(sv[1], "a\nb\n", 4), 4);
	next_is(&r, TGI_LINE_OK, "a");
	assert_int_equal(write(w[1], "x", 1), 1);
	next_is(&r, TGI_LINE_OK, "b");              /* held lines first */
	next_is(&r, TGI_LINE_WOKEN, NULL);
	drain(w[0]);

	close(sv[1]);
	next_is(&r, TGI_LINE_EOF, NULL);

	/* a wake descriptor that is not open is an error, not an endless wake-up */
	tgi_linereader_free(&r);
	close(w[0]);
	close(w[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, w), 0);
	int dead = dup(w[0]);
	assert_true(dead >= 0);
	close(dead);
	tgi_linereader_init(&r, w[0], 64);
	r.wake_fd = dead;
	errno = 0;
	next_is(&r, TGI_LINE_ERROR, NULL);
	assert_int_equal(errno, EBADF);
	tgi_linereader_free(&r);
	close(w[0]);
	close(w[1]);
	close(sv[0]);
}

static void test_reader_error(void **state)
{
	(void)state;
	tgi_linereader r;
	const char *line = "x";
	size_t len = 9;
	tgi_linereader_init(&r, -1, 16);
	errno = 0;
	assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_ERROR);
	assert_int_equal(errno, EBADF);
	tgi_linereader_free(&r);
	tgi_linereader_free(&r); /* twice is fine */
	tgi_linereader_free(NULL);
}

/* ---- the classifier ---- */

typedef struct parse_case {
	const char  *what;
	const char  *in;
	tgi_rpc_kind kind;
	const char  *id;       /* the id as JSON text: of the message, or echoed in the reply */
	const char  *method;   /* REQUEST, NOTIFICATION */
	int          params;   /* REQUEST, NOTIFICATION: params present */
	int          code;     /* BAD */
	const char  *message;  /* BAD: the reply's sentence (a prefix for -32700) */
} parse_case;

#define V "\"jsonrpc\":\"2.0\""
#define NOT_JSON "the message is not valid JSON: "
#define BAD_VERSION "\"jsonrpc\" must be \"2.0\""
#define BAD_ID "\"id\" must be a string or an integer"
#define BAD_PARAMS "\"params\" must be an object when present"
#define BAD_ERROR "\"error\" must be an object with an integer \"code\" and a string \"message\""
#define ONE_OF "a response must have exactly one of \"result\" and \"error\""
#define BATCH "batches are not supported; send one message at a time"
#define NOT_OBJECT "the message must be a JSON object"

static const parse_case parse_cases[] = {
	/* the four kinds */
	{ "request, integer id", "{" V ",\"id\":1,\"method\":\"tools/list\",\"params\":{}}",
	  TGI_RPC_REQUEST, "1", "tools/list", 1, 0, NULL },
	{ "request, string id, no params", "{" V ",\"id\":\"a-1\",\"method\":\"ping\"}",
	  TGI_RPC_REQUEST, "\"a-1\"", "ping", 0, 0, NULL },
	{ "request, id 0", "{\"method\":\"ping\",\"id\":0," V "}", TGI_RPC_REQUEST, "0", "ping", 0,
	  0, NULL },
	{ "request, negative id", "{" V ",\"id\":-9007199254740993,\"method\":\"x\"}",
	  TGI_RPC_REQUEST, "-9007199254740993", "x", 0, 0, NULL },
	{ "request, empty string id and method", "{" V ",\"id\":\"\",\"method\":\"\"}",
	  TGI_RPC_REQUEST, "\"\"", "", 0, 0, NULL },
	{ "request, whitespace around", " \t{" V ", \"id\" : 2 , \"method\":\"x\"}\r\n ",
	  TGI_RPC_REQUEST, "2", "x", 0, 0, NULL },
	{ "request, unknown members ignored", "{" V ",\"id\":3,\"method\":\"x\",\"extra\":[1]}",
	  TGI_RPC_REQUEST, "3", "x", 0, 0, NULL },
	{ "request, duplicate keys: the last wins",
	  "{\"jsonrpc\":\"1.0\"," V ",\"id\":{},\"id\":4,\"method\":\"x\"}", TGI_RPC_REQUEST, "4",
	  "x", 0, 0, NULL },
	{ "notification", "{" V ",\"method\":\"notifications/initialized\"}", TGI_RPC_NOTIFICATION,
	  NULL, "notifications/initialized", 0, 0, NULL },
	{ "notification with params",
	  "{" V ",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
	  TGI_RPC_NOTIFICATION, NULL, "notifications/cancelled", 1, 0, NULL },
	{ "response", "{" V ",\"id\":\"x\",\"result\":{\"action\":\"accept\"}}", TGI_RPC_RESPONSE,
	  "\"x\"", NULL, 0, 0, NULL },
	{ "response with a null result", "{" V ",\"id\":5,\"result\":null}", TGI_RPC_RESPONSE, "5",
	  NULL, 0, 0, NULL },
	{ "error reply", "{" V ",\"id\":6,\"error\":{\"code\":-32601,\"message\":\"no\",\"data\":1}}",
	  TGI_RPC_ERROR_REPLY, "6", NULL, 0, 0, NULL },
	{ "error reply with a null id",
	  "{" V ",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}",
	  TGI_RPC_ERROR_REPLY, "null", NULL, 0, 0, NULL },

	/* not JSON: -32700, id null */
	{ "empty text", "", TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },
	{ "only blanks", "  \t ", TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },
	{ "unterminated", "{" V ",\"id\":1", TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },
	{ "trailing garbage", "{" V ",\"id\":1,\"method\":\"x\"} x", TGI_RPC_BAD, "null", NULL, 0,
	  -32700, NOT_JSON },
	{ "two messages on one line", "{" V ",\"method\":\"a\"}{" V ",\"method\":\"b\"}",
	  TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },
	{ "invalid UTF-8 in a string", "{" V ",\"id\":1,\"method\":\"\xff\xfe\"}", TGI_RPC_BAD,
	  "null", NULL, 0, -32700, NOT_JSON },
	{ "an overlong UTF-8 encoding", "{" V ",\"id\":1,\"method\":\"\xc0\xaf\"}", TGI_RPC_BAD,
	  "null", NULL, 0, -32700, NOT_JSON },
	{ "a byte-order mark", "\xef\xbb\xbf{" V ",\"id\":1,\"method\":\"x\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32700, NOT_JSON },
	{ "a raw control character", "{" V ",\"id\":1,\"method\":\"a\x01\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32700, NOT_JSON },
	{ "an escaped NUL", "{" V ",\"id\":1,\"method\":\"a\\u0000\"}", TGI_RPC_BAD, "null", NULL,
	  0, -32700, NOT_JSON "a string holds \\u0000 at line 1 column " },
	{ "single quotes", "{'jsonrpc':'2.0'}", TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },
	{ "an integer id too big for 64 bits", "{" V ",\"id\":99999999999999999999,\"method\":\"x\"}",
	  TGI_RPC_BAD, "null", NULL, 0, -32700, NOT_JSON },

	/* JSON, not a message: -32600 */
	{ "an empty batch", "[]", TGI_RPC_BAD, "null", NULL, 0, -32600, BATCH },
	{ "a batch", "[{" V ",\"id\":1,\"method\":\"ping\"}]", TGI_RPC_BAD, "null", NULL, 0, -32600,
	  BATCH },
	{ "a number", "1", TGI_RPC_BAD, "null", NULL, 0, -32600, NOT_OBJECT },
	{ "a string", "\"ping\"", TGI_RPC_BAD, "null", NULL, 0, -32600, NOT_OBJECT },
	{ "null", "null", TGI_RPC_BAD, "null", NULL, 0, -32600, NOT_OBJECT },
	{ "no jsonrpc, readable id echoed", "{\"id\":7,\"method\":\"ping\"}", TGI_RPC_BAD, "7", NULL,
	  0, -32600, BAD_VERSION },
	{ "jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":\"s\",\"method\":\"ping\"}", TGI_RPC_BAD,
	  "\"s\"", NULL, 0, -32600, BAD_VERSION },
	{ "jsonrpc 2.00", "{\"jsonrpc\":\"2.00\",\"method\":\"ping\"}", TGI_RPC_BAD, "null", NULL,
	  0, -32600, BAD_VERSION },
	{ "jsonrpc as a number", "{\"jsonrpc\":2.0,\"id\":8,\"method\":\"ping\"}", TGI_RPC_BAD, "8",
	  NULL, 0, -32600, BAD_VERSION },
	{ "jsonrpc with a space", "{\"jsonrpc\":\"2.0 \",\"id\":8,\"method\":\"ping\"}", TGI_RPC_BAD,
	  "8", NULL, 0, -32600, BAD_VERSION },
	{ "method not a string", "{" V ",\"id\":\"a\",\"method\":5}", TGI_RPC_BAD, "\"a\"", NULL, 0,
	  -32600, "\"method\" must be a string" },
	{ "method null in a notification", "{" V ",\"method\":null}", TGI_RPC_BAD, "null", NULL, 0,
	  -32600, "\"method\" must be a string" },
	{ "request with a null id", "{" V ",\"id\":null,\"method\":\"ping\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32600, BAD_ID },
	{ "request with a float id", "{" V ",\"id\":1.5,\"method\":\"ping\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32600, BAD_ID },
	{ "request with id 1.0", "{" V ",\"id\":1.0,\"method\":\"ping\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32600, BAD_ID },
	{ "request with an object id", "{" V ",\"id\":{\"a\":1},\"method\":\"ping\"}", TGI_RPC_BAD,
	  "null", NULL, 0, -32600, BAD_ID },
	{ "request with an array id", "{" V ",\"id\":[1],\"method\":\"ping\"}", TGI_RPC_BAD, "null",
	  NULL, 0, -32600, BAD_ID },
	{ "request with a boolean id", "{" V ",\"id\":true,\"method\":\"ping\"}", TGI_RPC_BAD,
	  "null", NULL, 0, -32600, BAD_ID },
	{ "params as an array", "{" V ",\"id\":3,\"method\":\"tools/call\",\"params\":[1,2]}",
	  TGI_RPC_BAD, "3", NULL, 0, -32600, BAD_PARAMS },
	{ "params as a string", "{" V ",\"id\":\"q\",\"method\":\"x\",\"params\":\"a\"}", TGI_RPC_BAD,
	  "\"q\"", NULL, 0, -32600, BAD_PARAMS },
	{ "params null", "{" V ",\"id\":3,\"method\":\"x\",\"params\":null}", TGI_RPC_BAD, "3", NULL,
	  0, -32600, BAD_PARAMS },
	{ "notification with array params", "{" V ",\"method\":\"x\",\"params\":[]}", TGI_RPC_BAD,
	  "null", NULL, 0, -32600, BAD_PARAMS },
	{ "neither method nor id", "{" V "}", TGI_RPC_BAD, "null", NULL, 0, -32600,
	  "the message has neither \"method\" nor \"id\"" },
	{ "result without id", "{" V ",\"result\":{}}", TGI_RPC_BAD, "null", NULL, 0, -32600,
	  "the message has neither \"method\" nor \"id\"" },
	{ "id alone", "{" V ",\"id\":1}", TGI_RPC_BAD, "1", NULL, 0, -32600, ONE_OF },
	{ "result and error", "{" V ",\"id\":\"r\",\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
	  TGI_RPC_BAD, "\"r\"", NULL, 0, -32600, ONE_OF },
	{ "response with a null id", "{" V ",\"id\":null,\"result\":{}}", TGI_RPC_BAD, "null", NULL,
	  0, -32600, BAD_ID },
	{ "response with a float id", "{" V ",\"id\":2.5,\"result\":{}}", TGI_RPC_BAD, "null", NULL,
	  0, -32600, BAD_ID },
	{ "error reply with a float id", "{" V ",\"id\":2.5,\"error\":{\"code\":1,\"message\":\"m\"}}",
	  TGI_RPC_BAD, "null", NULL, 0, -32600, "\"id\" must be a string, an integer or null" },
	{ "error not an object", "{" V ",\"id\":9,\"error\":\"boom\"}", TGI_RPC_BAD, "9", NULL, 0,
	  -32600, BAD_ERROR },
	{ "error code a string", "{" V ",\"id\":9,\"error\":{\"code\":\"-1\",\"message\":\"m\"}}",
	  TGI_RPC_BAD, "9", NULL, 0, -32600, BAD_ERROR },
	{ "error code a float", "{" V ",\"id\":9,\"error\":{\"code\":-32600.0,\"message\":\"m\"}}",
	  TGI_RPC_BAD, "9", NULL, 0, -32600, BAD_ERROR },
	{ "error without message", "{" V ",\"id\":9,\"error\":{\"code\":-32600}}", TGI_RPC_BAD, "9",
	  NULL, 0, -32600, BAD_ERROR },
	{ "error message not a string", "{" V ",\"id\":9,\"error\":{\"code\":1,\"message\":{}}}",
	  TGI_RPC_BAD, "9", NULL, 0, -32600, BAD_ERROR },
};

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static void check_bad(const parse_case *c, const tgi_rpc_msg *m, json_t *reply)
{
	assert_null(m->method);
	assert_null(m->id);
	assert_null(m->params);
	assert_null(m->result);
	assert_null(m->error);
	if (!reply)
		fail_msg("%s: no reply", c->what);
	assert_string_equal(json_string_value(json_object_get(reply, "jsonrpc")), "2.0");
	assert_int_equal(json_object_size(reply), 3);
	json_t *want_id = load(c->id);
	if (!json_equal(json_object_get(reply, "id"), want_id))
		fail_msg("%s: reply id is not %s", c->what, c->id);
	json_decref(want_id);

	json_t *err = json_object_get(reply, "error");
	assert_true(json_is_object(err));
	assert_null(json_object_get(err, "data"));
	if (json_integer_value(json_object_get(err, "code")) != c->code)
		fail_msg("%s: code %lld, want %d", c->what,
		         (long long)json_integer_value(json_object_get(err, "code")), c->code);
	const char *msg = json_string_value(json_object_get(err, "message"));
	assert_non_null(msg);
	assert_true(printable(msg));
	if (c->code == TGI_RPC_PARSE_ERROR) {
		if (strncmp(msg, c->message, strlen(c->message)) != 0 || !strstr(msg, " at line 1 column "))
			fail_msg("%s: message \"%s\"", c->what, msg);
	} else if (strcmp(msg, c->message) != 0) {
		fail_msg("%s: message \"%s\", want \"%s\"", c->what, msg, c->message);
	}
	/* only the text that was not JSON has no tree */
	assert_true((m->root == NULL) == (c->code == TGI_RPC_PARSE_ERROR));
}

static void test_parse_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
		const parse_case *c = &parse_cases[i];
		tgi_rpc_msg m;
		json_t *reply = (json_t *)1;
		tgi_rpc_parse(c->in, strlen(c->in), &m, &reply);
		if (m.kind != c->kind)
			fail_msg("%s: kind %d, want %d", c->what, m.kind, c->kind);
		if (c->kind == TGI_RPC_BAD) {
			check_bad(c, &m, reply);
			json_decref(reply);
			tgi_rpc_msg_free(&m);
			continue;
		}
		if (reply)
			fail_msg("%s: a reply for a good message", c->what);
		assert_true(json_is_object(m.root));
		if (c->id) {
			json_t *want_id = load(c->id);
			if (!m.id || !json_equal(m.id, want_id))
				fail_msg("%s: id is not %s", c->what, c->id);
			json_decref(want_id);
		} else {
			assert_null(m.id);
		}
		if (c->method)
			assert_string_equal(m.method, c->method);
		else
			assert_null(m.method);
		switch (c->kind) {
		case TGI_RPC_REQUEST:
		case TGI_RPC_NOTIFICATION:
			assert_true(c->params ? json_is_object(m.params) : m.params == NULL);
			assert_null(m.result);
			assert_null(m.error);
			break;
		case TGI_RPC_RESPONSE:
			assert_non_null(m.result);
			assert_true(m.result == json_object_get(m.root, "result"));
			assert_null(m.error);
			assert_null(m.params);
			break;
		default:
			assert_true(json_is_object(m.error));
			assert_null(m.result);
			assert_null(m.params);
			break;
		}
		tgi_rpc_msg_free(&m);
	}
}

/* The text is length-delimited, not NUL-terminated. */
static void test_parse_uses_len(void **state)
{
	(void)state;
	const char *text = "{" V ",\"id\":1,\"method\":\"ping\"}GARBAGE";
	tgi_rpc_msg m;
	json_t *reply;
	tgi_rpc_parse(text, strlen(text) - 7, &m, &reply);
	assert_int_equal(m.kind, TGI_RPC_REQUEST);
	assert_null(reply);
	tgi_rpc_msg_free(&m);

	/* an embedded NUL byte is not JSON */
	static const char nul[] = "{" V ",\"id\":1,\"method\":\"a\0b\"}";
	tgi_rpc_parse(nul, sizeof nul - 1, &m, &reply);
	assert_int_equal(m.kind, TGI_RPC_BAD);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "error"), "code")),
	                 TGI_RPC_PARSE_ERROR);
	json_decref(reply);
	tgi_rpc_msg_free(&m);

	tgi_rpc_parse(NULL, 0, &m, &reply);
	assert_int_equal(m.kind, TGI_RPC_BAD);
	json_decref(reply);
	tgi_rpc_msg_free(&m);
	tgi_rpc_msg_free(&m); /* twice is fine */
	tgi_rpc_msg_free(NULL);
}

/* jansson's reason quotes the bytes near the fault: they are made printable. */
static void test_parse_error_is_printable(void **state)
{
	(void)state;
	const char *texts[] = { "{\"a\":\x01\x02\x1b[31m}", "\x1b]0;title\x07", "{\"a\":\"\xff\"}",
	                        "{\"\xe2\x80\xa8\":tru\x7f}" };
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		tgi_rpc_msg m;
		json_t *reply;
		tgi_rpc_parse(texts[i], strlen(texts[i]), &m, &reply);
		assert_int_equal(m.kind, TGI_RPC_BAD);
		const char *msg =
		    json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
		assert_non_null(msg);
		assert_true(printable(msg));
		assert_true(strncmp(msg, NOT_JSON, strlen(NOT_JSON)) == 0);
		json_decref(reply);
		tgi_rpc_msg_free(&m);
	}
}

/* ---- builders and dumps ---- */

static void assert_dump(const json_t *msg, const char *want)
{
	size_t len = 0;
	char *s = tgi_rpc_dump(msg, &len);
	assert_non_null(s);
	assert_int_equal(len, strlen(s));
	assert_string_equal(s, want);
	free(s);
}

static void test_builders(void **state)
{
	(void)state;
	json_t *id = json_integer(7), *sid = json_string("abc");
	json_t *m;

	m = tgi_rpc_result(id, json_pack("{s:b}", "ok", 1));
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}");
	json_decref(m);

	m = tgi_rpc_result(NULL, NULL);
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
	json_decref(m);

	m = tgi_rpc_error(sid, TGI_RPC_METHOD_NOT_FOUND, "method \"server/discover\" is not known",
	                  NULL);
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"error\":{\"code\":-32601,"
	               "\"message\":\"method \\\"server/discover\\\" is not known\"}}");
	json_decref(m);

	m = tgi_rpc_error(NULL, TGI_RPC_INVALID_PARAMS, "bad", json_pack("{s:s}", "field", "/name"));
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32602,"
	               "\"message\":\"bad\",\"data\":{\"field\":\"/name\"}}}");
	json_decref(m);

	/* a message that is not UTF-8 still makes a reply */
	m = tgi_rpc_error(id, TGI_RPC_INTERNAL_ERROR, "bad \xff byte", NULL);
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,"
	               "\"message\":\"bad \xef\xbf\xbd byte\"}}");
	json_decref(m);

	m = tgi_rpc_request(sid, "elicitation/create", json_pack("{s:s}", "mode", "form"));
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"elicitation/create\","
	               "\"params\":{\"mode\":\"form\"}}");
	json_decref(m);

	m = tgi_rpc_request(id, "ping", NULL);
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	json_decref(m);

	m = tgi_rpc_notification("notifications/tools/list_changed", NULL);
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
	json_decref(m);

	m = tgi_rpc_notification("notifications/progress",
	                         json_pack("{s:s,s:i}", "progressToken", "t", "progress", 1));
	assert_dump(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	               "\"params\":{\"progressToken\":\"t\",\"progress\":1}}");
	json_decref(m);

	json_decref(id);
	json_decref(sid);
}

/* A reply does not lean on the request it answers: free the request first. */
static void test_reply_outlives_request(void **state)
{
	(void)state;
	const char *in = "{" V ",\"id\":\"req-1\",\"method\":\"tools/call\",\"params\":{}}";
	tgi_rpc_msg m;
	json_t *reply;
	tgi_rpc_parse(in, strlen(in), &m, &reply);
	assert_int_equal(m.kind, TGI_RPC_REQUEST);
	json_t *r = tgi_rpc_result(m.id, json_object());
	json_t *e = tgi_rpc_error(m.id, TGI_RPC_INVALID_PARAMS, "no", NULL);
	tgi_rpc_msg_free(&m);
	assert_dump(r, "{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"result\":{}}");
	assert_dump(e, "{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"error\":{\"code\":-32602,"
	               "\"message\":\"no\"}}");
	json_decref(r);
	json_decref(e);
}

/* Every control character, CR, LF, U+2028 and U+2029 in every place: the dump
 * is one line, and it reads back as the same message. */
static void test_dump_is_one_line(void **state)
{
	(void)state;
	char nasty[64];
	size_t n = 0;
	for (int c = 1; c < 0x20; c++)
		nasty[n++] = (char)c;
	memcpy(nasty + n, "\xe2\x80\xa8\xe2\x80\xa9\x7f", 7);
	n += 7;

	json_t *key = json_stringn(nasty, n);
	assert_non_null(key);
	json_t *params = json_object();
	json_object_set_new(params, json_string_value(key), json_stringn(nasty, n));
	json_object_set_new(params, "list", json_pack("[O,{s:O}]", key, "k", key));
	json_t *msg = tgi_rpc_request(key, "tools/call", params);

	size_t len;
	char *s = tgi_rpc_dump(msg, &len);
	assert_int_equal(len, strlen(s));
	assert_null(memchr(s, '\n', len));
	assert_null(memchr(s, '\r', len));
	for (size_t i = 0; i < len; i++)
		assert_true((unsigned char)s[i] >= 0x20);

	tgi_rpc_msg m;
	json_t *reply;
	tgi_rpc_parse(s, len, &m, &reply);
	assert_int_equal(m.kind, TGI_RPC_REQUEST);
	assert_null(reply);
	assert_true(tgi_rpc_id_equal(m.id, key));
	assert_true(json_equal(m.root, msg));
	tgi_rpc_msg_free(&m);
	free(s);
	json_decref(msg);
	json_decref(key);
}

/* A tree jansson cannot encode still gives one line: an internal error
 * carrying the message's id. */
static void test_dump_unencodable(void **state)
{
	(void)state;
	json_t *id = json_integer(4);
	json_t *msg = tgi_rpc_result(id, json_pack("{s:o}", "x", json_stringn_nocheck("\xff", 1)));
	assert_dump(msg, "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32603,"
	                 "\"message\":\"the reply could not be encoded as JSON\"}}");
	json_decref(msg);
	json_decref(id);

	/* a NULL length pointer is fine */
	msg = tgi_rpc_notification("x", NULL);
	char *s = tgi_rpc_dump(msg, NULL);
	assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}");
	free(s);
	json_decref(msg);
}

static void test_id_equal(void **state)
{
	(void)state;
	json_t *i1 = json_integer(1), *i1b = json_integer(1), *i2 = json_integer(2);
	json_t *s1 = json_string("1"), *s1b = json_string("1"), *s12 = json_string("12");
	json_t *r1 = json_real(1.0), *nul = json_null();

	assert_true(tgi_rpc_id_equal(i1, i1b));
	assert_true(tgi_rpc_id_equal(i1, i1));
	assert_false(tgi_rpc_id_equal(i1, i2));
	assert_true(tgi_rpc_id_equal(s1, s1b));
	assert_false(tgi_rpc_id_equal(s1, s12));
	assert_false(tgi_rpc_id_equal(s12, s1));
	assert_false(tgi_rpc_id_equal(i1, s1));
	assert_false(tgi_rpc_id_equal(s1, i1));
	assert_false(tgi_rpc_id_equal(i1, r1));
	assert_false(tgi_rpc_id_equal(nul, nul));
	assert_false(tgi_rpc_id_equal(NULL, NULL));
	assert_false(tgi_rpc_id_equal(i1, NULL));

	json_decref(i1);
	json_decref(i1b);
	json_decref(i2);
	json_decref(s1);
	json_decref(s1b);
	json_decref(s12);
	json_decref(r1);
	json_decref(nul);
}

/* Lines from the reader go straight into the classifier. */
static void test_reader_to_parse(void **state)
{
	(void)state;
	static const char in[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\r\n"
	    "\n"
	    "not json\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	static const tgi_rpc_kind want[] = { TGI_RPC_REQUEST, TGI_RPC_BAD, TGI_RPC_NOTIFICATION };
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], in, sizeof in - 1), (ssize_t)(sizeof in - 1));
	close(p[1]);
	tgi_linereader r;
	tgi_linereader_init(&r, p[0], 1u << 20);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *line;
		size_t len;
		assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_OK);
		tgi_rpc_msg m;
		json_t *reply;
		tgi_rpc_parse(line, len, &m, &reply);
		assert_int_equal(m.kind, want[i]);
		assert_true((reply != NULL) == (want[i] == TGI_RPC_BAD));
		json_decref(reply);
		tgi_rpc_msg_free(&m);
	}
	const char *line;
	size_t len;
	assert_int_equal(tgi_linereader_next(&r, &line, &len), TGI_LINE_EOF);
	tgi_linereader_free(&r);
	close(p[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_cases_whole),
		cmocka_unit_test(test_reader_cases_bytewise),
		cmocka_unit_test(test_reader_long_lines_bounded),
		cmocka_unit_test(test_reader_big_line_and_many_lines),
		cmocka_unit_test(test_reader_eintr),
		cmocka_unit_test(test_reader_wake),
		cmocka_unit_test(test_reader_error),
		cmocka_unit_test(test_parse_cases),
		cmocka_unit_test(test_parse_uses_len),
		cmocka_unit_test(test_parse_error_is_printable),
		cmocka_unit_test(test_builders),
		cmocka_unit_test(test_reply_outlives_request),
		cmocka_unit_test(test_dump_is_one_line),
		cmocka_unit_test(test_dump_unencodable),
		cmocka_unit_test(test_id_equal),
		cmocka_unit_test(test_reader_to_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
