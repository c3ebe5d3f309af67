/*
 * read_file.c — the read_file tool: numbered lines of a text file beneath
 * the workspace, paged with offset and limit.
 *
 * The file is streamed in fixed chunks: memory holds one chunk, the first
 * bytes of the current line and the selection (refused past 100,000
 * characters), whatever the file's size.  total_lines counts every line.
 * The stream stops at the call's deadline (timeout).
 *
 * Bytes that are not UTF-8 (each byte of a sequence that is not valid
 * UTF-8, and NUL past the binary probe) become U+FFFD in the output, and
 * the result says so: `encoding` {utf8: false, invalid_bytes, first_line,
 * shown_as} over the whole file, and a warning the model reads, since a
 * patch built from those lines cannot match them.  A file that is UTF-8
 * has no `encoding`.
 *
 * Owns: the tool row, its schema, and turning a file into numbered lines.
 * Must not: check permissions (the pipeline does), read .toolgate/ (but a
 * spill file named exactly, which tgi_path_open_placed allows, of the
 * call's own session: tgi_spill_readable), open a path except through
 * openat2 beneath the workspace, read a file its open did not find where
 * the policy stage judged the path (tgi_tool_landed), or cap its output beyond
 * the 100,000-character rule (the shape stage does that).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "store/store.h"
#include "tools/plan.h"
#include "tools/walk.h"
#include "util/fs.h"
#include "util/util.h"

#define READ_MAX_CHARS  100000          /* a larger selection must be paged */
#define LINE_MAX_CHARS  2000            /* longer lines are cut */
#define LINE_MAX_BYTES  (LINE_MAX_CHARS * 4) /* holds any line of LINE_MAX_CHARS characters */
#define BINARY_PROBE    8192            /* a NUL in these first bytes: binary */
#define CHUNK           65536
#define ARG_MAX_LINES   (LLONG_MAX / 4) /* offset + limit cannot overflow */

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,"
	"\"description\":\"File path, relative to the workspace root or absolute within it.\"},"
	"\"offset\":{\"type\":\"integer\",\"minimum\":1,\"default\":1,"
	"\"description\":\"First line to return (1-based).\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"default\":2000,"
	"\"description\":\"Maximum number of lines to return.\"}},"
	"\"required\":[\"path\"],\"additionalProperties\":false}";

/* The selection being built while the file streams past. */
typedef struct reader {
	long long first, last;          /* selected lines, 1-based, inclusive */
	long long line;                 /* the line being read */
	size_t    line_bytes;           /* its length so far */
	size_t    held_len;             /* bytes of it kept in held (selected lines only) */
	long long shown;                /* selected lines seen */
	size_t    chars;                /* characters of the selection */
	int       over;                 /* past READ_MAX_CHARS: count, stop keeping */
	tgi_buf   content;              /* raw bytes of the numbered selection */
	/* UTF-8 over the whole file (utf8_scan) */
	int       need;                 /* continuation bytes the sequence still needs */
	int       got;                  /* of it so far, the lead byte included */
	unsigned char lo, hi;           /* the range of the next continuation byte */
	long long u_line;               /* the line the scan is on */
	long long bad;                  /* bytes shown as U+FFFD */
	long long bad_line;             /* the first line holding one (0: none) */
	char      held[LINE_MAX_BYTES];
	char      chunk[CHUNK];
} reader;

static int selected(const reader *r)
{
	return r->line >= r->first && r->line <= r->last;
}

static void end_line(reader *r)
{
	if (selected(r)) {
		char num[32], mark[96] = "";
		size_t keep = tgi_utf8_offset(r->held, r->held_len, LINE_MAX_CHARS);
		size_t nchars = tgi_utf8_len(r->held, keep);
		int nn = snprintf(num, sizeof num, "%6lld\t", r->line);
		int mn = 0;
		if (keep < r->line_bytes)
			mn = snprintf(mark, sizeof mark, " ... [line cut at %d characters; it is %zu bytes long]",
			              LINE_MAX_CHARS, r->line_bytes);
		r->chars += (size_t)nn + nchars + (size_t)mn + 1;
		r->shown++;
		if (r->chars > READ_MAX_CHARS)
			r->over = 1;
		if (!r->over && (tgi_buf_append(&r->content, num, (size_t)nn) < 0 ||
		                 tgi_buf_append(&r->content, r->held, keep) < 0 ||
		                 tgi_buf_append(&r->content, mark, (size_t)mn) < 0 ||
		                 tgi_buf_append(&r->content, "\n", 1) < 0))
			r->over = 1;
	}
	r->line++;
	r->line_bytes = 0;
	r->held_len = 0;
}

static void feed(reader *r, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		if (selected(r) && r->held_len < LINE_MAX_BYTES) {
			size_t take = LINE_MAX_BYTES - r->held_len;
			if (take > k)
				take = k;
			memcpy(r->held + r->held_len, p, take);
			r->held_len += take;
		}
		r->line_bytes += k;
		if (nl) {
			end_line(r);
			k++;
		}
		p += k;
		n -= k;
	}
}

static void bad_bytes(reader *r, int n)
{
	r->bad += n;
	if (!r->bad_line)
		r->bad_line = r->u_line;
}

/*
 * Follow UTF-8 across the file (chunks may cut a sequence): each byte not
 * part of a valid sequence counts, as tgi_json_text replaces each with
 * U+FFFD, and NUL too.  The ranges are RFC 3629's: no overlong forms, no
 * surrogates, nothing past U+10FFFF.
 */
static void utf8_scan(reader *r, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char b = p[i];
		if (r->need) {
			if (b >= r->lo && b <= r->hi) {
				r->need--;
				r->got++;
				r->lo = 0x80;
				r->hi = 0xBF;
				continue;
			}
			bad_bytes(r, r->got);       /* the sequence so far; b starts afresh */
			r->need = 0;
		}
		r->got = 1;
		r->lo = 0x80;
		r->hi = 0xBF;
		if (b == '\n')
			r->u_line++;
		if (b == 0)
			bad_bytes(r, 1);
		else if (b < 0x80)
			;
		else if (b >= 0xC2 && b <= 0xDF)
			r->need = 1;
		else if (b >= 0xE0 && b <= 0xEF) {
			r->need = 2;
			r->lo = b == 0xE0 ? 0xA0 : 0x80;
			r->hi = b == 0xED ? 0x9F : 0xBF;
		} else if (b >= 0xF0 && b <= 0xF4) {
			r->need = 3;
			r->lo = b == 0xF0 ? 0x90 : 0x80;
			r->hi = b == 0xF4 ? 0x8F : 0xBF;
		} else {
			bad_bytes(r, 1);
		}
	}
}

/* read() that retries EINTR and fills up to want bytes unless EOF. */
static ssize_t read_full(int fd, char *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		ssize_t k = read(fd, buf + got, want - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

static int stream(int fd, reader *r, const char *shown, double deadline, tgi_tool_out *out)
{
	ssize_t n;

	for (size_t want = BINARY_PROBE;; want = CHUNK) {
		if (tgi_now_ms() > deadline) {
			tgi_snprintf(out->message, sizeof out->message,
			             "reading \"%s\" did not finish within the time limit; the file is "
			             "too large or too slow to read", shown);
			return tgi_tool_fail(out, TG_ERR_TIMEOUT);
		}
		n = read_full(fd, r->chunk, want);
		if (n <= 0)
			break;
		if (want == BINARY_PROBE && memchr(r->chunk, '\0', (size_t)n)) {
			tgi_snprintf(out->message, sizeof out->message,
			             "\"%s\" is a binary file; read_file shows text only", shown);
			return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
		}
		utf8_scan(r, (const unsigned char *)r->chunk, (size_t)n);
		feed(r, r->chunk, (size_t)n);
	}
	if (n < 0)
		return tgi_tool_fail(out, tgi_path_error(-errno, shown, out->message, sizeof out->message));
	if (r->need)                    /* cut short by the end */
		bad_bytes(r, r->got);
	if (r->line_bytes > 0)          /* a last line without a newline */
		end_line(r);
	return 0;
}

static int read_file_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	char path[PATH_MAX], real[PATH_MAX], shown[160];
	const char *raw;
	size_t rawlen;
	long long offset, limit;
	tg_errkind kind;
	struct stat st;
	int rc = -1;
	double deadline = tgi_tool_deadline(ctx);

	if (tgi_arg_str(args, "path", NULL, &raw, &rawlen, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "offset", 1, 1, ARG_MAX_LINES, &offset, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "limit", 2000, 1, ARG_MAX_LINES, &limit, out->message, sizeof out->message) < 0)
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);

	int fd = tgi_path_open_placed(ctx->ws_fd, raw, rawlen, O_RDONLY | O_NONBLOCK | O_NOCTTY,
	                              path, sizeof path, real, sizeof real, &kind, out->message,
	                              sizeof out->message);
	if (fd < 0)
		return tgi_tool_fail(out, kind);
	/* where policy looked, or nothing is read */
	if (tgi_tool_landed(ctx, 0, path, real, out) < 0) {
		close(fd);
		return -1;
	}
	/* a spill file holds a call's whole output: only its own session's */
	if (tgi_path_is_spill(path) &&
	    !tgi_spill_readable(ctx->ws_fd, path, ctx->session, out->message, sizeof out->message)) {
		close(fd);
		return tgi_tool_fail(out, TG_ERR_NOT_PERMITTED);
	}
	tgi_sanitize(shown, sizeof shown, path);
	if (fstat(fd, &st) < 0) {
		tgi_tool_fail(out, tgi_path_error(-errno, path, out->message, sizeof out->message));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		tgi_snprintf(out->message, sizeof out->message, S_ISDIR(st.st_mode)
		             ? "\"%s\" is a directory; use list_dir"
		             : "\"%s\" is not a regular file", shown);
		close(fd);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}

	/* the buffers are large: zero only the bookkeeping in front of them */
	reader *r = tgi_xmalloc(sizeof *r);
	memset(r, 0, offsetof(reader, held));
	r->first = offset;
	r->last = offset + limit - 1;
	r->line = 1;
	r->u_line = 1;
	tgi_buf_init(&r->content, (size_t)READ_MAX_CHARS * 4 + LINE_MAX_BYTES + 256);
	if (stream(fd, r, shown, deadline, out) < 0)
		goto done;

	long long total = r->line - 1;
	if (offset > total && offset > 1) {
		tgi_snprintf(out->message, sizeof out->message,
		             "offset %lld is past the end of \"%s\", which has %lld line%s",
		             offset, shown, total, total == 1 ? "" : "s");
		tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
		goto done;
	}
	if (r->over) {
		long long fit = (long long)((double)r->shown * (READ_MAX_CHARS * 0.9) / (double)r->chars);
		tgi_snprintf(out->message, sizeof out->message,
		             "the selection is %zu characters (over %d); read fewer lines with offset "
		             "and limit, e.g. offset=%lld limit=%lld",
		             r->chars, READ_MAX_CHARS, offset, fit > 0 ? fit : 1);
		tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
		goto done;
	}

	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "content", tgi_json_text(r->content.p ? r->content.p : "", r->content.len));
	json_object_set_new(o, "start_line", json_integer(offset));
	json_object_set_new(o, "lines", json_integer(r->shown));
	json_object_set_new(o, "total_lines", json_integer(total));
	if (r->bad) {
		json_object_set_new(o, "encoding",
		                    json_pack("{s:b, s:I, s:I, s:s}", "utf8", 0, "invalid_bytes",
		                              (json_int_t)r->bad, "first_line", (json_int_t)r->bad_line,
		                              "shown_as", "U+FFFD"));
		char w[512];
		tgi_snprintf(w, sizeof w,
		             "\"%s\" is not UTF-8: %lld byte%s of it (the first on line %lld) %s shown "
		             "as U+FFFD; apply_patch cannot match a line that holds such a byte, and "
		             "write_file would replace such bytes with what you send", shown, r->bad,
		             r->bad == 1 ? "" : "s", r->bad_line, r->bad == 1 ? "is" : "are");
		out->warnings = json_pack("[s]", w);
	}
	out->output = o;
	out->kind = TG_ERR_NONE;
	rc = 0;
done:
	tgi_buf_free(&r->content);
	free(r);
	close(fd);
	return rc;
}

const tgi_tool tgi_tool_read_file = {
	.name = "read_file",
	.description =
		"Read a text file in the workspace. Returns the lines numbered like `cat -n`, "
		"starting at `offset` (1-based) and at most `limit` lines, with `total_lines` for "
		"the whole file. Lines over 2000 characters are cut. A selection over 100,000 "
		"characters is refused: page through large files with offset and limit. Binary "
		"files are refused; use list_dir for directories.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE | TGI_T_IDEMPOTENT,
	.paths = tgi_paths_required_path,
	.repath = tgi_repath_path,
	.handler = read_file_run,
	.plan = tgi_plan_reads_required,
};
