/*
 * jsonrpc.c — JSON-RPC 2.0 framing and messages for the MCP transports
 * (see jsonrpc.h for the contract).
 *
 * The line reader reads the descriptor in chunks of up to TGI_LINE_CHUNK
 * bytes into one buffer that never grows past cap + TGI_LINE_CHUNK.  It
 * holds at most one unfinished line: once the bytes after the last newline
 * are more than a line of cap bytes (plus the "\r" of a "\r\n" still to
 * come) can be, the line is reported as too long, its bytes are dropped,
 * and the reader skips everything up to the next newline.  A line ends at
 * "\n"; one "\r" before it (or before the end of input) is dropped; lines
 * left empty are skipped.  A returned line is NUL-terminated in place.
 * With a wake descriptor, each read waits in poll() on both; a wake-up
 * wins over input that is ready at the same moment, but lines already
 * held are handed out first.
 *
 *     bytes held:  [ handed out | pending (no newline yet, or lines to come) | free ]
 *                  0           off                                          len     size
 *
 * The classifier follows JSON-RPC 2.0 section 4-5: one object (batches are
 * refused: MCP 2025-06-18 dropped them), "jsonrpc":"2.0", then a request
 * (method + id), a notification (method, no id), a response (id + result)
 * or an error reply (id + error).  What is none of these gets the error
 * reply the peer is owed, with its id when that id was readable.
 *
 * The protocol revisions are here because both ends need them and neither
 * end should include the other: the server answers initialize with one,
 * the client (client.c) checks the server's answer against them.
 *
 * Owns: the reader's buffer, each message's parsed tree, the list of
 * protocol revisions.  Must not: know MCP methods, run anything, or write
 * to a descriptor.
 */
#include "mcp/jsonrpc.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define TGI_LINE_CHUNK       (64u << 10)   /* bytes asked of one read() */
#define TGI_LINE_DEFAULT_CAP (16u << 20)   /* cap 0: 16 MiB, the stdio default */

/* ---- the line reader ---- */

void tgi_linereader_init(tgi_linereader *r, int fd, size_t cap)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->wake_fd = -1;
	if (cap == 0)
		cap = TGI_LINE_DEFAULT_CAP;
	/* cap + chunk must not overflow */
	if (cap > SIZE_MAX / 2)
		cap = SIZE_MAX / 2;
	r->cap = cap;
}

void tgi_linereader_free(tgi_linereader *r)
{
	if (!r)
		return;
	free(r->buf);
	r->buf = NULL;
	r->len = r->off = r->size = 0;
}

/* Can n pending bytes without a newline still become a line within the
 * cap?  One byte more is allowed when it is the "\r" of a "\r\n". */
static int pending_fits(const tgi_linereader *r, const char *p, size_t n)
{
	if (n <= r->cap)
		return 1;
	return n == r->cap + 1 && p[n - 1] == '\r';
}

/* Move the pending bytes to the front and make room for one read (and the
 * NUL written after a last line at end of input).  Returns the room. */
static size_t make_room(tgi_linereader *r)
{
	size_t max = r->cap + TGI_LINE_CHUNK;

	if (r->off) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->size - r->len < TGI_LINE_CHUNK && r->size < max) {
		size_t want = r->size * 2;
		if (want < r->len + TGI_LINE_CHUNK)
			want = r->len + TGI_LINE_CHUNK;
		if (want > max)
			want = max;
		r->buf = tgi_xrealloc(r->buf, want);
		r->size = want;
	}
	/* pending <= cap + 1, so at least TGI_LINE_CHUNK - 2 bytes are free */
	size_t room = r->size - r->len - 1;
	return room < TGI_LINE_CHUNK ? room : TGI_LINE_CHUNK;
}

/* One complete line at p (n bytes, its "\n" already cut off): drop a
 * trailing "\r", then judge it.  -1: empty, skip it. */
static int take_line(tgi_linereader *r, char *p, size_t n, const char **line, size_t *len,
                     tgi_line_status *st)
{
	if (n && p[n - 1] == '\r')
		n--;
	if (n == 0)
		return -1;
	if (n > r->cap) {
		*st = TGI_LINE_TOO_LONG;
		return 0;
	}
	p[n] = '\0';
	*line = p;
	*len = n;
	*st = TGI_LINE_OK;
	return 0;
}

/* Wait until the input can be read (TGI_LINE_OK) or the wake descriptor
 * is readable (TGI_LINE_WOKEN); a wake descriptor that is not open is an
 * error (EBADF), not an endless wake-up. */
static tgi_line_status wait_readable(const tgi_linereader *r)
{
	struct pollfd fds[2] = { { r->fd, POLLIN, 0 }, { r->wake_fd, POLLIN, 0 } };

	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return TGI_LINE_ERROR;
		}
		if (fds[1].revents & POLLNVAL) {
			errno = EBADF;
			return TGI_LINE_ERROR;
		}
		if (fds[1].revents)
			return TGI_LINE_WOKEN;
		if (fds[0].revents)
			return TGI_LINE_OK; /* data, end of input or an error: read() says which */
	}
}

tgi_line_status tgi_linereader_next(tgi_linereader *r, const char **line, size_t *len)
{
	tgi_line_status st;

	*line = NULL;
	*len = 0;
	for (;;) {
		char  *p = r->buf ? r->buf + r->off : NULL;
		size_t n = r->len - r->off;
		char  *nl = n ? memchr(p, '\n', n) : NULL;

		if (nl) {
			size_t linelen = (size_t)(nl - p);
			r->off += linelen + 1;
			if (r->skipping) {
				/* the tail of a line already reported */
				r->skipping = 0;
				continue;
			}
			if (take_line(r, p, linelen, line, len, &st) == 0)
				return st;
			continue;
		}
		if (r->skipping) {
			r->off = r->len = 0;
			n = 0;
		} else if (!pending_fits(r, p, n)) {
			r->off = r->len = 0;
			r->skipping = 1;
			return TGI_LINE_TOO_LONG;
		}
		if (r->eof) {
			/* a last line without newline; its bytes stay put until a
			 * read that will never come */
			r->off = r->len = 0;
			r->skipping = 0;
			if (n && take_line(r, p, n, line, len, &st) == 0)
				return st;
			return TGI_LINE_EOF;
		}

		if (r->wake_fd >= 0 && (st = wait_readable(r)) != TGI_LINE_OK)
			return st;
		size_t room = make_room(r);
		ssize_t got;
		do
			got = read(r->fd, r->buf + r->len, room);
		while (got < 0 && errno == EINTR);
		if (got < 0)
			return TGI_LINE_ERROR;
		if (got == 0)
			r->eof = 1;
		r->len += (size_t)got;
	}
}

/* ---- messages ---- */

static json_t *must(json_t *v)
{
	if (!v) {
		fputs("toolgate: out of memory\n", stderr);
		abort();
	}
	return v;
}

static int id_readable(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

/* A BAD message: its reply carries the id when it was readable. */
static void bad(tgi_rpc_msg *m, json_t **reply, int code, const char *message)
{
	json_t *id = m->root ? json_object_get(m->root, "id") : NULL;

	m->kind = TGI_RPC_BAD;
	m->method = NULL;
	m->id = m->params = m->result = m->error = NULL;
	*reply = tgi_rpc_error(id_readable(id) ? id : NULL, code, message, NULL);
}

static int error_object_ok(const json_t *e)
{
	return json_is_object(e) && json_is_integer(json_object_get(e, "code")) &&
	       json_is_string(json_object_get(e, "message"));
}

/* Classify a parsed object (m->root): NULL, or the sentence saying why it
 * is not a JSON-RPC 2.0 message. */
static const char *classify(tgi_rpc_msg *m)
{
	json_t *root = m->root;
	json_t *version = json_object_get(root, "jsonrpc");
	json_t *method = json_object_get(root, "method");
	json_t *id = json_object_get(root, "id");
	json_t *params = json_object_get(root, "params");
	json_t *result = json_object_get(root, "result");
	json_t *error = json_object_get(root, "error");

	if (!json_is_string(version) || json_string_length(version) != 3 ||
	    memcmp(json_string_value(version), "2.0", 3) != 0)
		return "\"jsonrpc\" must be \"2.0\"";

	if (method) {
		if (!json_is_string(method))
			return "\"method\" must be a string";
		if (id && !id_readable(id))
			return "\"id\" must be a string or an integer";
		if (params && !json_is_object(params))
			return "\"params\" must be an object when present";
		m->kind = id ? TGI_RPC_REQUEST : TGI_RPC_NOTIFICATION;
		m->method = json_string_value(method);
		m->id = id;
		m->params = params;
		return NULL;
	}

	if (!id)
		return "the message has neither \"method\" nor \"id\"";
	if (!result == !error)
		return "a response must have exactly one of \"result\" and \"error\"";
	if (result) {
		if (!id_readable(id))
			return "\"id\" must be a string or an integer";
		m->kind = TGI_RPC_RESPONSE;
		m->id = id;
		m->result = result;
		return NULL;
	}
	if (!id_readable(id) && !json_is_null(id))
		return "\"id\" must be a string, an integer or null";
	if (!error_object_ok(error))
		return "\"error\" must be an object with an integer \"code\" and a string "
		       "\"message\"";
	m->kind = TGI_RPC_ERROR_REPLY;
	m->id = id;
	m->error = error;
	return NULL;
}

/* Text that jansson refused: -32700 with jansson's reason, made printable
 * (it quotes the bytes near the fault). */
static void parse_failed(tgi_rpc_msg *m, json_t **reply, const json_error_t *jerr)
{
	char detail[JSON_ERROR_TEXT_LENGTH], msg[JSON_ERROR_TEXT_LENGTH + 96];

	switch (json_error_code(jerr)) {
	case json_error_out_of_memory:
		bad(m, reply, TGI_RPC_INTERNAL_ERROR, "out of memory while reading the message");
		return;
	case json_error_null_character:
		tgi_snprintf(detail, sizeof detail, "a string holds \\u0000");
		break;
	default:
		tgi_sanitize(detail, sizeof detail, jerr->text);
		break;
	}
	tgi_snprintf(msg, sizeof msg, "the message is not valid JSON: %s at line %d column %d",
	             detail, jerr->line, jerr->column);
	bad(m, reply, TGI_RPC_PARSE_ERROR, msg);
}

void tgi_rpc_parse(const char *text, size_t len, tgi_rpc_msg *m, json_t **reply)
{
	json_error_t jerr;
	const char *why;

	memset(m, 0, sizeof *m);
	*reply = NULL;
	/* flags: any value at the top (a scalar is JSON, just not a message);
	 * duplicate keys allowed (last wins); trailing bytes, invalid UTF-8 and
	 * "\u0000" refused */
	m->root = json_loadb(text ? text : "", text ? len : 0, JSON_DECODE_ANY, &jerr);
	if (!m->root) {
		parse_failed(m, reply, &jerr);
		return;
	}
	if (json_is_array(m->root))
		why = "batches are not supported; send one message at a time";
	else if (!json_is_object(m->root))
		why = "the message must be a JSON object";
	else
		why = classify(m);
	if (why)
		bad(m, reply, TGI_RPC_INVALID_REQUEST, why);
}

void tgi_rpc_msg_free(tgi_rpc_msg *m)
{
	if (!m)
		return;
	json_decref(m->root);
	memset(m, 0, sizeof *m);
}

/* ---- builders ---- */

/* {"jsonrpc":"2.0"} (members keep their insertion order when dumped). */
static json_t *message(void)
{
	json_t *o = must(json_object());
	json_object_set_new(o, "jsonrpc", must(json_string("2.0")));
	return o;
}

/* A copy of id (so a reply does not share the request's tree), null for NULL. */
static json_t *id_copy(const json_t *id)
{
	return must(id ? json_deep_copy(id) : json_null());
}

static json_t *text(const char *s)
{
	return must(tgi_json_text(s ? s : "", s ? strlen(s) : 0));
}

json_t *tgi_rpc_result(json_t *id, json_t *result)
{
	json_t *o = message();
	json_object_set_new(o, "id", id_copy(id));
	json_object_set_new(o, "result", result ? result : must(json_object()));
	return o;
}

json_t *tgi_rpc_error(json_t *id, int code, const char *msg, json_t *data)
{
	json_t *o = message();
	json_t *e = must(json_object());
	json_object_set_new(e, "code", must(json_integer(code)));
	json_object_set_new(e, "message", text(msg));
	if (data)
		json_object_set_new(e, "data", data);
	json_object_set_new(o, "id", id_copy(id));
	json_object_set_new(o, "error", e);
	return o;
}

json_t *tgi_rpc_request(json_t *id, const char *method, json_t *params)
{
	json_t *o = message();
	json_object_set_new(o, "id", id_copy(id));
	json_object_set_new(o, "method", text(method));
	if (params)
		json_object_set_new(o, "params", params);
	return o;
}

json_t *tgi_rpc_notification(const char *method, json_t *params)
{
	json_t *o = message();
	json_object_set_new(o, "method", text(method));
	if (params)
		json_object_set_new(o, "params", params);
	return o;
}

/*
 * jansson escapes every control character, so a compact dump is one line.
 * A tree jansson cannot encode (a string built without a UTF-8 check, a
 * cycle) is a bug of ours, not the peer's: the peer gets an internal error
 * with the message's id instead of nothing.
 */
char *tgi_rpc_dump(const json_t *msg, size_t *len)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (!s) {
		json_t *id = json_is_object(msg) ? json_object_get(msg, "id") : NULL;
		json_t *e = tgi_rpc_error(id_readable(id) ? id : NULL, TGI_RPC_INTERNAL_ERROR,
		                          "the reply could not be encoded as JSON", NULL);
		s = json_dumps(e, JSON_COMPACT);
		json_decref(e);
		if (!s) {
			fputs("toolgate: out of memory\n", stderr);
			abort();
		}
	}
	if (len)
		*len = strlen(s);
	return s;
}

int tgi_rpc_id_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_string(a) && json_is_string(b))
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	return 0;
}

/* ---- protocol revisions ---- */

const char *const tgi_mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

int tgi_mcp_version_known(const char *v)
{
	for (size_t i = 0; v && tgi_mcp_versions[i]; i++)
		if (!strcmp(v, tgi_mcp_versions[i]))
			return 1;
	return 0;
}

int tgi_mcp_version_primes(const char *v)
{
	return v && strcmp(v, "2025-11-25") >= 0;
}
