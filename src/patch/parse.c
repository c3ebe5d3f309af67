/*
 * parse.c — V4A patch text into operations, as Codex's apply_patch reads
 * it, plus a few tolerances of our own.
 *
 * The text is trimmed and split on "\n" (a "\r" before it dropped).  If it
 * does not open with `*** Begin Patch` and close with `*** End Patch`
 * (both compared trimmed), a heredoc wrapper is looked for: a first line
 * `<<EOF`, `<<'EOF'` or `<<"EOF"` (any delimiter word, `<<-` too),
 * optionally preceded by `apply_patch ` or `applypatch ` (the shell string
 * a model writes for a shell tool), and a last line ending in the word.
 *
 * Beyond Codex: blank lines between file operations are skipped, as
 * between chunks (Codex refuses them); everything Codex accepts is accepted
 * and read the same way.
 *
 * tgi_patch_map_paths rewrites the paths of the headers in the text (the
 * pipeline makes absolute paths inside the workspace relative with it),
 * finding them with this same parser.
 *
 * Owns: the grammar and its messages.  Must not: touch the file system.
 */
#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "util/util.h"

#define BEGIN_MARKER  "*** Begin Patch"
#define END_MARKER    "*** End Patch"
#define ADD_MARKER    "*** Add File: "
#define DELETE_MARKER "*** Delete File: "
#define UPDATE_MARKER "*** Update File: "
#define MOVE_MARKER   "*** Move to: "
#define EOF_MARKER    "*** End of File"
#define SHOWN_MAX     200   /* bytes of a patch line quoted in a message */

typedef struct parser {
	tgi_patch_line *lines;   /* the lines between the markers */
	size_t          n;
	size_t          first;   /* line number of lines[0] */
	const char     *base;    /* the patch's copy of the text, which starts */
	size_t          shift;   /* this many bytes into the text given */
	char           *err;
	size_t          errlen;
} parser;

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static tgi_patch_line trim(tgi_patch_line l)
{
	while (l.len && is_space(l.s[0]))
		l.s++, l.len--;
	while (l.len && is_space(l.s[l.len - 1]))
		l.len--;
	return l;
}

static int line_is(tgi_patch_line l, const char *s)
{
	size_t n = strlen(s);
	return l.len == n && memcmp(l.s, s, n) == 0;
}

static int starts_with(tgi_patch_line l, const char *s)
{
	size_t n = strlen(s);
	return l.len >= n && memcmp(l.s, s, n) == 0;
}

/* A patch line for a message: control characters shown safely, long lines cut. */
static void shown(char *out, size_t cap, tgi_patch_line l)
{
	tgi_sanitize_n(out, cap, l.s, l.len, SHOWN_MAX);
}

static int hunk_error(parser *ps, size_t lineno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int hunk_error(parser *ps, size_t lineno, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_snprintf(ps->err, ps->errlen, "Invalid patch hunk on line %zu: %s", lineno, msg);
	return -1;
}

/* The path after a header's marker, trimmed; *at gets where it lies in
 * the text given to tgi_patch_parse. */
static char *path_dup(const parser *ps, tgi_patch_line header, size_t marker_len, size_t *at)
{
	tgi_patch_line p = {header.s + marker_len, header.len - marker_len};
	p = trim(p);
	*at = (size_t)(p.s - ps->base) + ps->shift;
	return tgi_strndup(p.s, p.len);
}

static void push_line(tgi_patch_line **v, size_t *n, tgi_patch_line l)
{
	/* capacity doubles at powers of two */
	if ((*n & (*n - 1)) == 0)
		*v = tgi_xrealloc(*v, (*n ? *n * 2 : 1) * sizeof **v);
	(*v)[(*n)++] = l;
}

/* One chunk from lines[i..): returns lines consumed, or -1. */
static long parse_chunk(parser *ps, size_t i, int first, tgi_patch_chunk *ch)
{
	size_t start = i;
	tgi_patch_line l = ps->lines[i];
	char s[SHOWN_MAX + 8];

	memset(ch, 0, sizeof *ch);
	ch->lineno = ps->first + i;
	if (line_is(l, "@@")) {
		i++;
	} else if (starts_with(l, "@@ ")) {
		ch->ctx = (tgi_patch_line){l.s + 3, l.len - 3};
		i++;
	} else if (!first) {
		shown(s, sizeof s, l);
		return hunk_error(ps, ps->first + i,
		                  "Expected update hunk to start with a @@ context marker, got: '%s'", s);
	}
	if (i >= ps->n)
		return hunk_error(ps, ps->first + i, "Update hunk does not contain any lines");

	size_t body = 0;
	for (; i < ps->n; i++) {
		l = ps->lines[i];
		if (line_is(l, EOF_MARKER)) {
			if (!body)
				return hunk_error(ps, ps->first + i, "Update hunk does not contain any lines");
			ch->eof = 1;
			i++;
			break;
		}
		if (l.len == 0) {       /* a fully empty line: empty context */
			push_line(&ch->old, &ch->nold, l);
			push_line(&ch->new, &ch->nnew, l);
		} else if (l.s[0] == ' ' || l.s[0] == '+' || l.s[0] == '-') {
			tgi_patch_line rest = {l.s + 1, l.len - 1};
			if (l.s[0] != '+')
				push_line(&ch->old, &ch->nold, rest);
			if (l.s[0] != '-')
				push_line(&ch->new, &ch->nnew, rest);
		} else if (!body) {
			shown(s, sizeof s, l);
			return hunk_error(ps, ps->first + i,
			                  "Unexpected line found in update hunk: '%s'. Every line should "
			                  "start with ' ' (context line), '+' (added line), or '-' "
			                  "(removed line)", s);
		} else {
			break;          /* the next chunk or file operation */
		}
		body++;
	}
	return (long)(i - start);
}

static void chunk_free(tgi_patch_chunk *ch)
{
	free(ch->old);
	free(ch->new);
}

static void op_free(tgi_patch_op *op)
{
	free(op->path);
	free(op->move_to);
	free(op->add);
	for (size_t i = 0; i < op->nchunks; i++)
		chunk_free(&op->chunks[i]);
	free(op->chunks);
}

/* One file operation from lines[i..): returns lines consumed, or -1. */
static long parse_op(parser *ps, size_t i, tgi_patch_op *op)
{
	size_t start = i;
	tgi_patch_line head = trim(ps->lines[i]);
	char s[SHOWN_MAX + 8];

	memset(op, 0, sizeof *op);
	op->lineno = ps->first + i;
	if (starts_with(head, ADD_MARKER)) {
		op->kind = TGI_PATCH_ADD;
		op->path = path_dup(ps, head, strlen(ADD_MARKER), &op->path_at);
		for (i++; i < ps->n && ps->lines[i].len && ps->lines[i].s[0] == '+'; i++)
			push_line(&op->add, &op->nadd,
			          (tgi_patch_line){ps->lines[i].s + 1, ps->lines[i].len - 1});
		return (long)(i - start);
	}
	if (starts_with(head, DELETE_MARKER)) {
		op->kind = TGI_PATCH_DELETE;
		op->path = path_dup(ps, head, strlen(DELETE_MARKER), &op->path_at);
		return 1;
	}
	if (!starts_with(head, UPDATE_MARKER)) {
		shown(s, sizeof s, head);
		return hunk_error(ps, ps->first + i,
		                  "'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: "
		                  "{path}', '*** Delete File: {path}', '*** Update File: {path}'", s);
	}
	op->kind = TGI_PATCH_UPDATE;
	op->path = path_dup(ps, head, strlen(UPDATE_MARKER), &op->path_at);
	i++;
	if (i < ps->n && starts_with(trim(ps->lines[i]), MOVE_MARKER))
		op->move_to = path_dup(ps, trim(ps->lines[i++]), strlen(MOVE_MARKER), &op->move_at);

	while (i < ps->n) {
		tgi_patch_line l = ps->lines[i];
		if (trim(l).len == 0) {         /* blank lines between chunks */
			i++;
			continue;
		}
		if (l.s[0] == '*')
			break;
		tgi_patch_chunk ch;
		long used = parse_chunk(ps, i, op->nchunks == 0, &ch);
		if (used < 0) {
			chunk_free(&ch);
			return -1;
		}
		if ((op->nchunks & (op->nchunks - 1)) == 0)
			op->chunks = tgi_xrealloc(op->chunks,
			                          (op->nchunks ? op->nchunks * 2 : 1) * sizeof *op->chunks);
		op->chunks[op->nchunks++] = ch;
		i += (size_t)used;
	}
	if (!op->nchunks) {
		tgi_patch_line p = {op->path, strlen(op->path)};
		shown(s, sizeof s, p);
		return hunk_error(ps, op->lineno, "Update file hunk for path '%s' is empty", s);
	}
	return (long)(i - start);
}

/* Are lines[0] and lines[n-1] the Begin and End markers? */
static int check_markers(const tgi_patch_line *lines, size_t n, char *err, size_t errlen)
{
	if (n >= 1 && line_is(trim(lines[0]), BEGIN_MARKER) && n >= 2 &&
	    line_is(trim(lines[n - 1]), END_MARKER))
		return 0;
	if (n == 0 || !line_is(trim(lines[0]), BEGIN_MARKER))
		tgi_snprintf(err, errlen,
		             "Invalid patch: The first line of the patch must be '*** Begin Patch'");
	else
		tgi_snprintf(err, errlen,
		             "Invalid patch: The last line of the patch must be '*** End Patch'");
	return -1;
}

/*
 * A heredoc opening line: [apply_patch |applypatch ]<<[-]WORD, the word
 * bare or in matching quotes.  The word goes to delim (cap bytes).
 */
static int heredoc_open(tgi_patch_line l, char *delim, size_t cap)
{
	l = trim(l);
	static const char *const cmds[] = {"apply_patch", "applypatch"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(cmds); i++)
		if (starts_with(l, cmds[i])) {
			size_t k = strlen(cmds[i]);
			if (k < l.len && is_space(l.s[k])) {
				l.s += k, l.len -= k;
				l = trim(l);
			}
			break;
		}
	if (!starts_with(l, "<<"))
		return 0;
	l.s += 2, l.len -= 2;
	if (l.len && l.s[0] == '-')
		l.s++, l.len--;
	char q = l.len && (l.s[0] == '\'' || l.s[0] == '"') ? l.s[0] : 0;
	if (q) {
		if (l.len < 3 || l.s[l.len - 1] != q)
			return 0;
		l.s++, l.len -= 2;
	}
	if (!l.len || l.len >= cap)
		return 0;
	for (size_t i = 0; i < l.len; i++)
		if (!(l.s[i] == '_' || (l.s[i] >= 'A' && l.s[i] <= 'Z') ||
		      (l.s[i] >= 'a' && l.s[i] <= 'z') || (l.s[i] >= '0' && l.s[i] <= '9')))
			return 0;
	memcpy(delim, l.s, l.len);
	delim[l.len] = '\0';
	return 1;
}

int tgi_patch_parse(const char *text, size_t len, tgi_patch **out, char *err, size_t errlen)
{
	*out = NULL;
	if (len > TGI_PATCH_MAX) {
		tgi_snprintf(err, errlen, "Invalid patch: the patch is %zu bytes; the limit is %u",
		             len, TGI_PATCH_MAX);
		return -1;
	}
	if (memchr(text, '\0', len)) {
		tgi_snprintf(err, errlen, "Invalid patch: the patch contains a NUL byte");
		return -1;
	}

	tgi_patch *p = tgi_xcalloc(1, sizeof *p);
	tgi_patch_line whole = trim((tgi_patch_line){text, len});
	p->text = tgi_strndup(whole.s, whole.len);

	/* split into lines, each without its "\n" or "\r\n" */
	tgi_patch_line *lines = NULL;
	size_t n = 0;
	for (char *s = p->text, *end = p->text + whole.len; whole.len && s <= end;) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		char *e = nl ? nl : end;
		*e = '\0';
		size_t l = (size_t)(e - s);
		if (l && s[l - 1] == '\r')
			s[--l] = '\0';
		push_line(&lines, &n, (tgi_patch_line){s, l});
		s = e + 1;
		if (!nl)
			break;
	}

	parser ps = {.err = err, .errlen = errlen, .base = p->text, .shift = (size_t)(whole.s - text)};
	char delim[64];
	size_t lo = 0, hi = n;     /* the marker lines are lines[lo] and lines[hi - 1] */
	if (check_markers(lines, n, err, errlen) < 0) {
		tgi_patch_line last = n ? trim(lines[n - 1]) : (tgi_patch_line){"", 0};
		size_t dl = 0;
		if (n >= 4 && heredoc_open(lines[0], delim, sizeof delim) &&
		    last.len >= (dl = strlen(delim)) && !memcmp(last.s + last.len - dl, delim, dl) &&
		    check_markers(lines + 1, n - 2, err, errlen) == 0) {
			lo = 1;
			hi = n - 1;
		} else {
			free(lines);
			tgi_patch_free(p);
			return -1;
		}
	}
	ps.lines = lines + lo + 1;
	ps.n = hi - lo - 2;
	ps.first = 2;

	for (size_t i = 0; i < ps.n;) {
		if (trim(ps.lines[i]).len == 0) {       /* blank lines between operations */
			i++;
			continue;
		}
		if (p->nops == TGI_PATCH_OPS_MAX) {
			hunk_error(&ps, ps.first + i, "the patch has more than %d file operations; split it",
			           TGI_PATCH_OPS_MAX);
			goto fail;
		}
		if ((p->nops & (p->nops - 1)) == 0)
			p->ops = tgi_xrealloc(p->ops, (p->nops ? p->nops * 2 : 1) * sizeof *p->ops);
		long used = parse_op(&ps, i, &p->ops[p->nops]);
		if (used < 0) {
			op_free(&p->ops[p->nops]);
			goto fail;
		}
		p->nops++;
		i += (size_t)used;
	}
	free(lines);
	*out = p;
	return 0;
fail:
	free(lines);
	tgi_patch_free(p);
	return -1;
}

void tgi_patch_free(tgi_patch *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nops; i++)
		op_free(&p->ops[i]);
	free(p->ops);
	free(p->text);
	free(p);
}

int tgi_patch_map_paths(const char *text, size_t len, tgi_path_map_fn map, void *ud, char **out,
                        size_t *outlen)
{
	tgi_patch *p;
	char err[8], rep[PATH_MAX];
	size_t at = 0;
	int n = 0;
	tgi_buf b;

	*out = NULL;
	*outlen = 0;
	if (tgi_patch_parse(text, len, &p, err, sizeof err) < 0)
		return 0;
	/* room for every path replaced by the longest replacement, "./" and "/" */
	tgi_buf_init(&b, len + 2 * p->nops * (sizeof rep + 3) + 1);
	for (size_t i = 0; i < p->nops; i++) {
		const char *paths[2] = {p->ops[i].path, p->ops[i].move_to};
		const size_t ats[2] = {p->ops[i].path_at, p->ops[i].move_at};
		for (int k = 0; k < 2; k++) {
			if (!paths[k])
				continue;
			size_t plen = strlen(paths[k]);
			if (map(ud, paths[k], plen, rep, sizeof rep) != 1 || strchr(rep, '\n'))
				continue;       /* kept; a newline would end the header line */
			/* whitespace at either end would be trimmed off with the header's:
			 * " x" is written "./ x", and "x " (from ".../x /") "x /" */
			size_t rlen = strlen(rep);
			const char *pre = rlen && is_space(rep[0]) ? "./" : "";
			const char *post = rlen && is_space(rep[rlen - 1]) ? "/" : "";
			assert(ats[k] >= at && ats[k] + plen <= len);
			if (tgi_buf_append(&b, text + at, ats[k] - at) < 0 || tgi_buf_puts(&b, pre) < 0 ||
			    tgi_buf_puts(&b, rep) < 0 || tgi_buf_puts(&b, post) < 0)
				goto over;
			at = ats[k] + plen;
			n++;
		}
	}
	if (tgi_buf_append(&b, text + at, len - at) < 0)
		goto over;
	tgi_patch_free(p);
	if (!n) {
		tgi_buf_free(&b);
		return 0;
	}
	*outlen = b.len;
	*out = tgi_buf_steal(&b);
	return 1;
over:                                   /* past the cap, which no map reaches: keep it */
	tgi_patch_free(p);
	tgi_buf_free(&b);
	return 0;
}

int tgi_patch_deletes(const tgi_patch *p)
{
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].kind == TGI_PATCH_DELETE)
			return 1;
	return 0;
}
