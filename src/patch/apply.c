/*
 * apply.c — plan a patch: every file's final bytes, computed in memory.
 *
 * Every path the patch names (Move targets included) is checked before
 * any file is read: relative, inside the workspace as resolved by the
 * kernel (openat2 RESOLVE_BENEATH), not under .git/ or .toolgate/.  Files
 * are keyed by where the write lands (parent resolved, final component as
 * written), so `a/../b` and `b`, or a path through a symlinked directory
 * and its target, are one file; held to the policy stage's judgement
 * (tgi_patch_plan_held), each key must be where decide placed that path.
 * Operations then run in order against an
 * in-memory view of the files, each seeing the ones before (an Add then an
 * Update of one file works, as in Codex).
 *
 * Updates follow Codex: chunks are found in file order from a moving
 * cursor; `@@ ctx` first moves the cursor past the context line; a chunk
 * of only `+` lines under a bare `@@` appends at the end, but under `@@
 * ctx` it goes right after the context line (Codex appends at the end
 * there too); an old-lines block ending in an empty line is retried
 * without it.  A CRLF file (every "\n" preceded by "\r") is matched
 * without its "\r"s and written back in CRLF.  The result always ends with
 * a newline -- and, unlike Codex, keeps a file's trailing blank lines.
 *
 * Owns: the plan and its messages.  Must not: write to the workspace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "patch/patch.h"
#include "util/fs.h"
#include "util/util.h"

#define SHOWN_MAX 200    /* bytes of a path or context line quoted in a message */
#define LINE_MAX_SHOWN 1000  /* bytes of each expected line quoted when not found */

/* One file as the patch sees it: on disk, then after the operations so far. */
typedef struct file {
	char   *key;          /* where the write lands, workspace-relative, as text (owned) */
	char   *fs;           /* its bytes: what is opened (owned) */
	int     disk;         /* 0 none, else S_IFREG, S_IFLNK, S_IFDIR or another S_IFMT */
	mode_t  disk_mode;
	char   *disk_data;    /* a regular file's bytes, read when first needed (owned) */
	size_t  disk_len;
	int     loaded;
	int     exists;       /* now */
	int     changed;
	char   *data;         /* now, when changed and exists (owned) */
	size_t  len;
	mode_t  mode;         /* now: the mode a written file gets (0: new, 0644 less umask) */
} file;

typedef struct planner {
	int      ws_fd;
	file    *files;
	size_t   nfiles, cap;
	tgi_buf  text[3];     /* summary lines: A, M, D */
	json_t  *result;
	char    *err;
	size_t   errlen;
} planner;

/* s[0..n) for a message: control characters made safe, cut to fit cap. */
static void shown(char *out, size_t cap, const char *s, size_t n)
{
	tgi_sanitize_n(out, cap, s, n, cap - 8 < LINE_MAX_SHOWN ? cap - 8 : LINE_MAX_SHOWN);
}

static tgi_patch_err refuse(planner *pl, const char *path, const char *why)
{
	char s[SHOWN_MAX + 8];
	shown(s, sizeof s, path, strlen(path));
	tgi_snprintf(pl->err, pl->errlen, "Refused path '%s': %s", s, why);
	return TGI_PATCH_EREFUSED;
}

/* Check a path as written; its key (where the write lands) goes to key.
 * A delete removes a symlink itself, so only where the link lies counts;
 * for the rest, where a symlink at the end points counts too (as for
 * write_file). */
static tgi_patch_err check_path(planner *pl, const char *path, int del, char *key, size_t cap)
{
	char norm[PATH_MAX], why[320], real[PATH_MAX], text[PATH_MAX];
	int (*const resolve[])(int, const char *, char *, size_t) = {
		tgi_path_resolve,               /* where a symlink at the end points */
		tgi_path_resolve_parent,        /* what the write replaces: the key */
	};

	if (!*path)
		return refuse(pl, path, "empty path");
	/* a patch read from a file (toolgate apply-patch) may name a file by
	 * bytes that are not UTF-8: they can only be the name's own, so they
	 * are taken as its text form says them (fs.h) */
	if (tgi_utf8_bad(path, strlen(path), NULL)) {
		if (tgi_name_text(path, strlen(path), text, sizeof text) < 0)
			return refuse(pl, path, "it is too long");
		path = text;
	}
	if (path[0] == '/')
		return refuse(pl, path, "absolute paths are not allowed; use a path relative to the "
		              "workspace");
	if (tgi_path_check(path, strlen(path), norm, sizeof norm, why, sizeof why) < 0)
		return refuse(pl, path, why);
	if (!strcmp(norm, ".") || !strcmp(norm, "..") || path[strlen(path) - 1] == '/' ||
	    (strlen(norm) >= 3 && !strcmp(norm + strlen(norm) - 3, "/..")))
		return refuse(pl, path, "it names a directory, not a file");
	if (tgi_path_protected(norm))
		return refuse(pl, path, ".git/ and .toolgate/ are read-only to tools");
	for (size_t i = del; i < TGI_ARRAY_LEN(resolve); i++) {
		int r = resolve[i](pl->ws_fd, norm, real, sizeof real);
		if (r == -EXDEV || r == -ELOOP)
			return refuse(pl, path, "it leaves the workspace");
		if (r == -ENOTDIR) {
			refuse(pl, path, "a directory in it is a file");
			return TGI_PATCH_EINVAL;
		}
		if (r < 0) {
			tgi_snprintf(why, sizeof why, "it cannot be checked (%s)", strerror(-r));
			return refuse(pl, path, why);
		}
		if (tgi_path_protected(real))
			return refuse(pl, path, ".git/ and .toolgate/ are read-only to tools");
	}
	if (tgi_path_bytes(real, norm, sizeof norm) < 0)   /* a resolved path always reads back */
		return refuse(pl, path, "it cannot be checked (its name does not read back)");
	tgi_snprintf(key, cap, "%s", real);
	return TGI_PATCH_OK;
}

static file *file_get(planner *pl, const char *key)
{
	for (size_t i = 0; i < pl->nfiles; i++)
		if (!strcmp(pl->files[i].key, key))
			return &pl->files[i];
	if (pl->nfiles == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 16;
		pl->files = tgi_xrealloc(pl->files, pl->cap * sizeof *pl->files);
	}
	file *f = &pl->files[pl->nfiles++];
	memset(f, 0, sizeof *f);
	f->key = tgi_strdup(key);
	char bytes[PATH_MAX] = "";
	tgi_path_bytes(key, bytes, sizeof bytes);  /* check_path saw that it reads back */
	f->fs = tgi_strdup(bytes);

	struct stat st;
	int fd = tgi_open_beneath(pl->ws_fd, f->fs, O_PATH | O_NOFOLLOW, 0);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		f->disk = (int)(st.st_mode & S_IFMT);
		f->disk_mode = st.st_mode & 07777;
		f->exists = 1;
		f->mode = f->disk == S_IFREG ? f->disk_mode : 0;
	}
	if (fd >= 0)
		close(fd);
	return f;
}

/* The bytes of a file as the operations so far left it; -errno. */
static int file_bytes(planner *pl, file *f, const char **data, size_t *len)
{
	if (f->changed) {
		*data = f->data;
		*len = f->len;
		return 0;
	}
	if (f->disk == S_IFLNK)
		return -ELOOP;
	if (f->disk == S_IFDIR)
		return -EISDIR;
	if (f->disk != S_IFREG)
		return -EINVAL;
	if (!f->loaded) {
		int fd = tgi_open_beneath(pl->ws_fd, f->fs, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
		if (fd < 0)
			return fd;
		int r = tgi_read_fd(fd, TGI_PATCH_FILE_MAX, &f->disk_data, &f->disk_len);
		close(fd);
		if (r < 0)
			return r;
		f->loaded = 1;
	}
	*data = f->disk_data;
	*len = f->disk_len;
	return 0;
}

static void file_set(file *f, char *data, size_t len, mode_t mode)
{
	free(f->data);
	f->data = data;
	f->len = len;
	f->mode = mode;
	f->exists = data != NULL;
	f->changed = 1;
}

static const char *cause(int r)
{
	switch (-r) {
	case ELOOP:  return "it is a symbolic link; patch the file it points to";
	case EINVAL: return "it is not a regular file";
	case EFBIG:  return "it is larger than the limit of 64 MiB";
	default:     return strerror(-r);
	}
}

static tgi_patch_err io_error(planner *pl, const char *what, const char *path, int r)
{
	char s[SHOWN_MAX + 8];
	shown(s, sizeof s, path, strlen(path));
	tgi_snprintf(pl->err, pl->errlen, "%s %s: %s", what, s, cause(r));
	return r == -ELOOP || r == -EINVAL || r == -EISDIR || r == -ENOENT || r == -EFBIG
	           ? TGI_PATCH_EINVAL : TGI_PATCH_EIO;
}

static void note(planner *pl, int group, const char *path)
{
	static const char tag[] = "AMD";
	tgi_buf_printf(&pl->text[group], "%c %s\n", tag[group], path);
}

static void list_add(planner *pl, const char *list, json_t *v)
{
	json_array_append_new(json_object_get(pl->result, list), v);
}

/* ---- updating one file ---- */

typedef struct repl {
	size_t                seq;      /* patch order: breaks ties on start */
	size_t                start, nold;
	const tgi_patch_line *new;
	size_t                nnew;
} repl;

static int repl_cmp(const void *a, const void *b)
{
	const repl *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* equal starts keep patch order (qsort is not stable) */
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Does a line of the file match a line of the patch once the file's bytes
 * that are not UTF-8 are left aside: each of them matches any one
 * character of the patch's line (the U+FFFD read_file showed for it, or a
 * guess such as "é" for Latin-1's 0xE9)?  Trailing whitespace aside.
 */
static int like_shown(const tgi_patch_line *f, const tgi_patch_line *p)
{
	size_t fn = f->len, pn = p->len, i = 0, j = 0;
	while (fn && (f->s[fn - 1] == ' ' || f->s[fn - 1] == '\t'))
		fn--;
	while (pn && (p->s[pn - 1] == ' ' || p->s[pn - 1] == '\t'))
		pn--;
	while (i < fn && j < pn) {
		size_t l = f->s[i] ? tgi_utf8_decode(f->s + i, fn - i, NULL) : 0;
		if (l) {
			if (l > pn - j || memcmp(f->s + i, p->s + j, l))
				return 0;
			i += l;
			j += l;
		} else {
			size_t m = tgi_utf8_decode(p->s + j, pn - j, NULL);
			j += m ? m : 1;
			i++;
		}
	}
	return i == fn && j == pn;
}

/*
 * When the file is not UTF-8, what the message says of it first (the tool
 * passes the start of a long message on): where the chunk's lines are once
 * its bytes that are not UTF-8 are left aside -- the reason they were not
 * found -- or how many such bytes it has.
 */
static void encoding_note(tgi_buf *b, const char *s, const tgi_patch_chunk *ch,
                          const tgi_patch_text *t, size_t cursor)
{
	size_t bad = 0, bad_line = 0;
	for (size_t i = 0; i < t->n; i++) {
		size_t k = tgi_utf8_bad(t->lines[i].s, t->lines[i].len, NULL);
		if (k && !bad)
			bad_line = i + 1;
		bad += k;
	}
	if (!bad)
		return;
	size_t at = 0;
	int found = 0;
	for (size_t i = cursor; !found && ch->nold && i + ch->nold <= t->n; i++) {
		size_t k = 0;
		while (k < ch->nold && like_shown(&t->lines[i + k], &ch->old[k]))
			k++;
		found = k == ch->nold;
		at = i;
	}
	if (found)
		tgi_buf_printf(b, " (%s is not UTF-8: these lines are at line %zu, but there the file "
		               "holds bytes that are not UTF-8 text, which read_file shows as U+FFFD "
		               "and a patch cannot name; rewrite the file with write_file, or change it "
		               "with a command)", s, at + 1);
	else
		tgi_buf_printf(b, " (%s is not UTF-8: %zu byte%s of it, the first on line %zu, %s "
		               "shown by read_file as U+FFFD, and a patch cannot name %s)", s, bad,
		               bad == 1 ? "" : "s", bad_line, bad == 1 ? "is" : "are",
		               bad == 1 ? "it" : "them");
}

/* "Failed to find expected lines in p:\n<old lines>" and where it came
 * closest; first, when the file is not UTF-8, what that did. */
static void not_found(planner *pl, const char *path, const tgi_patch_chunk *ch,
                      const tgi_patch_text *t, size_t cursor)
{
	tgi_buf b;
	char s[SHOWN_MAX + 8];

	tgi_buf_init(&b, pl->errlen);
	shown(s, sizeof s, path, strlen(path));
	tgi_buf_printf(&b, "Failed to find expected lines in %s", s);
	encoding_note(&b, s, ch, t, cursor);
	tgi_buf_puts(&b, ":");
	for (size_t i = 0; i < ch->nold; i++) {
		char l[LINE_MAX_SHOWN + 8];
		shown(l, sizeof l, ch->old[i].s, ch->old[i].len);
		tgi_buf_printf(&b, "\n%s", l);
	}

	/* the longest run of leading old lines found anywhere past the cursor */
	size_t best = 0, at = 0;
	for (size_t i = cursor; i < t->n; i++) {
		size_t k = 0;
		while (k < ch->nold && i + k < t->n &&
		       tgi_patch_seek(&t->lines[i + k], 1, &ch->old[k], 1, 0, 0) == 0)
			k++;
		if (k > best)
			best = k, at = i;
	}
	if (best == ch->nold) {
		tgi_buf_printf(&b, "\n(these lines are at line %zu, but the chunk ends in '*** End of "
		               "File' and they are not the last lines of the file)", at + 1);
	} else if (best) {
		char e[SHOWN_MAX + 8], f[SHOWN_MAX + 8];
		shown(e, sizeof e, ch->old[best].s, ch->old[best].len);
		if (at + best < t->n)
			shown(f, sizeof f, t->lines[at + best].s, t->lines[at + best].len);
		tgi_buf_printf(&b, "\n(closest: the first %zu of these lines match at line %zu, then "
		               "'%s' was expected where the file has %s%s%s)", best, at + 1, e,
		               at + best < t->n ? "'" : "", at + best < t->n ? f : "its end",
		               at + best < t->n ? "'" : "");
	} else {
		tgi_buf_printf(&b, "\n(no line of the file%s matches the first of these lines)",
		               cursor ? " after the previous chunk" : "");
	}
	tgi_snprintf(pl->err, pl->errlen, "%s", b.p ? b.p : "Failed to find expected lines");
	tgi_buf_free(&b);
}

/* Split data into lines; *crlf when every "\n" is part of "\r\n". */
static void split_lines(const char *data, size_t len, tgi_patch_text *t, int *crlf)
{
	size_t nl = 0, crnl = 0;
	for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + len - p))); p++) {
		nl++;
		crnl += p > data && p[-1] == '\r';
	}
	*crlf = nl > 0 && nl == crnl;
	t->lines = tgi_xmalloc((nl + 1) * sizeof *t->lines);
	t->n = 0;
	for (const char *s = data, *end = data + len; s < end;) {
		const char *e = memchr(s, '\n', (size_t)(end - s));
		size_t l = (size_t)((e ? e : end) - s);
		if (e && *crlf)
			l--;
		t->lines[t->n++] = (tgi_patch_line){s, l};
		if (!e)
			break;
		s = e + 1;
	}
}

/* Apply op's chunks to data; the new bytes go to *out. */
static tgi_patch_err update(planner *pl, const tgi_patch_op *op, const char *data, size_t len,
                            char **out, size_t *outlen)
{
	tgi_patch_text t;
	int crlf;
	repl *rv = tgi_xmalloc((op->nchunks ? op->nchunks : 1) * sizeof *rv);
	size_t nr = 0, cursor = 0;
	tgi_patch_err rc = TGI_PATCH_OK;
	char s[SHOWN_MAX + 8], p[SHOWN_MAX + 8];

	split_lines(data, len, &t, &crlf);
	for (size_t c = 0; c < op->nchunks; c++) {
		const tgi_patch_chunk *ch = &op->chunks[c];
		if (ch->ctx.s) {
			long at = tgi_patch_seek(t.lines, t.n, &ch->ctx, 1, cursor, 0);
			if (at < 0) {
				shown(s, sizeof s, ch->ctx.s, ch->ctx.len);
				shown(p, sizeof p, op->path, strlen(op->path));
				tgi_snprintf(pl->err, pl->errlen, "Failed to find context '%s' in %s", s, p);
				rc = TGI_PATCH_EINVAL;
				goto out;
			}
			cursor = (size_t)at + 1;
		}
		if (ch->nold == 0) {
			/* at the end, before a final blank line (as Codex); after
			 * the context line when there is one */
			size_t end = t.n && t.lines[t.n - 1].len == 0 ? t.n - 1 : t.n;
			rv[nr] = (repl){nr, ch->ctx.s ? cursor : end, 0, ch->new, ch->nnew};
			nr++;
			continue;
		}
		/* empty lines ending the old lines are often the blank lines
		 * between chunks, or the file's final newline: retry without
		 * them, one at a time (Codex drops one) */
		size_t m = ch->nold, nn = ch->nnew;
		long at = tgi_patch_seek(t.lines, t.n, ch->old, m, cursor, ch->eof);
		while (at < 0 && m > 1 && ch->old[m - 1].len == 0) {
			m--;
			if (nn && ch->new[nn - 1].len == 0)
				nn--;
			at = tgi_patch_seek(t.lines, t.n, ch->old, m, cursor, ch->eof);
		}
		if (at < 0) {
			not_found(pl, op->path, ch, &t, cursor);
			rc = TGI_PATCH_EINVAL;
			goto out;
		}
		rv[nr] = (repl){nr, (size_t)at, m, ch->new, nn};
		nr++;
		cursor = (size_t)at + m;
	}
	qsort(rv, nr, sizeof *rv, repl_cmp);

	const char *eol = crlf ? "\r\n" : "\n";
	size_t eollen = crlf ? 2 : 1, total = 0, pos = 0;
	for (size_t i = 0; i < t.n; i++)
		total += t.lines[i].len + eollen;
	for (size_t i = 0; i < nr; i++)
		for (size_t k = 0; k < rv[i].nnew; k++)
			total += rv[i].new[k].len + eollen;
	char *buf = tgi_xmalloc(total + 1), *w = buf;
#define EMIT(l) (memcpy(w, (l).s, (l).len), w += (l).len, memcpy(w, eol, eollen), w += eollen)
	for (size_t i = 0; i < nr; i++) {
		for (; pos < rv[i].start && pos < t.n; pos++)
			EMIT(t.lines[pos]);
		for (size_t k = 0; k < rv[i].nnew; k++)
			EMIT(rv[i].new[k]);
		pos = rv[i].start + rv[i].nold > pos ? rv[i].start + rv[i].nold : pos;
	}
	for (; pos < t.n; pos++)
		EMIT(t.lines[pos]);
#undef EMIT
	*w = '\0';
	*out = buf;
	*outlen = (size_t)(w - buf);
out:
	free(rv);
	free(t.lines);
	return rc;
}

/* ---- the operations ---- */

static tgi_patch_err op_add(planner *pl, const tgi_patch_op *op, const char *key)
{
	file *f = file_get(pl, key);
	if (f->exists && !f->changed && f->disk == S_IFDIR)
		return io_error(pl, "Failed to write file", op->path, -EISDIR);
	size_t len = 0;
	for (size_t i = 0; i < op->nadd; i++)
		len += op->add[i].len + 1;
	char *data = tgi_xmalloc(len + 1), *w = data;
	for (size_t i = 0; i < op->nadd; i++) {
		memcpy(w, op->add[i].s, op->add[i].len);
		w += op->add[i].len;
		*w++ = '\n';
	}
	*w = '\0';
	file_set(f, data, len, f->exists && f->mode ? f->mode : 0);
	note(pl, 0, op->path);
	list_add(pl, "added", json_string(key));
	return TGI_PATCH_OK;
}

static tgi_patch_err op_delete(planner *pl, const tgi_patch_op *op, const char *key)
{
	file *f = file_get(pl, key);
	if (!f->exists)
		return io_error(pl, "Failed to delete file", op->path, -ENOENT);
	if (!f->changed && f->disk == S_IFDIR)
		return io_error(pl, "Failed to delete file", op->path, -EISDIR);
	file_set(f, NULL, 0, 0);
	note(pl, 2, op->path);
	list_add(pl, "deleted", json_string(key));
	return TGI_PATCH_OK;
}

static tgi_patch_err op_update(planner *pl, const tgi_patch_op *op, const char *key,
                               const char *dest)
{
	file *f = file_get(pl, key);
	const char *data;
	size_t len;
	if (!f->exists)
		return io_error(pl, "Failed to read file to update", op->path, -ENOENT);
	int r = file_bytes(pl, f, &data, &len);
	if (r < 0)
		return io_error(pl, "Failed to read file to update", op->path, r);

	char *out;
	size_t outlen;
	tgi_patch_err rc = update(pl, op, data, len, &out, &outlen);
	if (rc != TGI_PATCH_OK)
		return rc;
	mode_t mode = f->mode;
	if (dest && !strcmp(dest, key))
		dest = NULL;
	if (dest) {
		size_t fi = (size_t)(f - pl->files);
		file *d = file_get(pl, dest);     /* may move pl->files */
		if (d->exists && !d->changed && d->disk == S_IFDIR) {
			free(out);
			return io_error(pl, "Failed to write file", op->move_to, -EISDIR);
		}
		file_set(d, out, outlen, mode);
		file_set(&pl->files[fi], NULL, 0, 0);
	} else {
		file_set(f, out, outlen, mode);
	}
	note(pl, 1, dest ? op->move_to : op->path);
	if (dest)
		list_add(pl, "moved", json_pack("{s:s, s:s}", "from", key, "to", dest));
	else
		list_add(pl, "modified", json_string(key));
	return TGI_PATCH_OK;
}

static void files_free(planner *pl)
{
	for (size_t i = 0; i < pl->nfiles; i++) {
		free(pl->files[i].key);
		free(pl->files[i].fs);
		free(pl->files[i].disk_data);
		free(pl->files[i].data);
	}
	free(pl->files);
}

tgi_patch_err tgi_patch_plan_make(int ws_fd, const tgi_patch *p, tgi_patch_plan *plan,
                                  char *err, size_t errlen)
{
	return tgi_patch_plan_held(ws_fd, p, NULL, 0, plan, err, errlen);
}

tgi_patch_err tgi_patch_plan_held(int ws_fd, const tgi_patch *p, const char *const *judged,
                                  size_t njudged, tgi_patch_plan *plan, char *err,
                                  size_t errlen)
{
	planner pl = {.ws_fd = ws_fd, .err = err, .errlen = errlen};
	size_t nth = 0;                 /* paths checked so far: judged[nth] is the next's */
	tgi_patch_err rc = TGI_PATCH_OK;
	char key[PATH_MAX], **keys;     /* keys[2i]: the op's path, keys[2i+1]: its Move target */

	memset(plan, 0, sizeof *plan);
	for (int i = 0; i < 3; i++)
		tgi_buf_init(&pl.text[i], (size_t)p->nops * (PATH_MAX + 4));
	if (!p->nops) {
		tgi_snprintf(err, errlen, "No files were modified.");
		return TGI_PATCH_EINVAL;
	}
	/* every path first: nothing is read before all are known to be ours */
	keys = tgi_xcalloc(2 * p->nops, sizeof *keys);
	for (size_t i = 0; i < 2 * p->nops && rc == TGI_PATCH_OK; i++) {
		const char *path = i % 2 ? p->ops[i / 2].move_to : p->ops[i / 2].path;
		int del = i % 2 == 0 && p->ops[i / 2].kind == TGI_PATCH_DELETE;
		if (!path || (rc = check_path(&pl, path, del, key, sizeof key)) != TGI_PATCH_OK)
			continue;
		/* where policy judged it, or nowhere: nothing is read yet */
		if (judged && (nth >= njudged || !judged[nth] || strcmp(judged[nth], key) != 0)) {
			tgi_path_error(-ESTALE, path, err, errlen);
			rc = TGI_PATCH_ECHANGED;
			continue;
		}
		nth++;
		keys[i] = tgi_strdup(key);
	}
	if (rc != TGI_PATCH_OK)
		goto out;

	pl.result = json_pack("{s:[], s:[], s:[], s:[]}", "added", "modified", "deleted", "moved");
	for (size_t i = 0; i < p->nops && rc == TGI_PATCH_OK; i++) {
		const tgi_patch_op *op = &p->ops[i];
		switch (op->kind) {
		case TGI_PATCH_ADD:
			rc = op_add(&pl, op, keys[2 * i]);
			break;
		case TGI_PATCH_DELETE:
			rc = op_delete(&pl, op, keys[2 * i]);
			break;
		case TGI_PATCH_UPDATE:
			rc = op_update(&pl, op, keys[2 * i], keys[2 * i + 1]);
			break;
		}
	}
	if (rc != TGI_PATCH_OK)
		goto out;

	/* the writes: every file whose final state differs from the disk's */
	plan->writes = tgi_xcalloc(pl.nfiles ? pl.nfiles : 1, sizeof *plan->writes);
	for (size_t i = 0; i < pl.nfiles; i++) {
		file *f = &pl.files[i];
		if (!f->changed || (!f->exists && !f->disk))
			continue;
		tgi_patch_write *w = &plan->writes[plan->nwrites++];
		w->path = f->key;
		f->key = NULL;
		w->fspath = f->fs;
		f->fs = NULL;
		w->data = f->data;
		f->data = NULL;
		w->len = f->len;
		w->mode = f->mode;
		w->existed = f->disk != 0;
	}
	tgi_buf sum;
	tgi_buf_init(&sum, SIZE_MAX / 2);
	tgi_buf_puts(&sum, "Success. Updated the following files:\n");
	for (int i = 0; i < 3; i++)
		if (pl.text[i].p)
			tgi_buf_puts(&sum, pl.text[i].p);
	plan->summary = tgi_buf_steal(&sum);
	plan->result = pl.result;
	pl.result = NULL;
out:
	for (int i = 0; i < 3; i++)
		tgi_buf_free(&pl.text[i]);
	json_decref(pl.result);
	files_free(&pl);
	for (size_t i = 0; i < 2 * p->nops; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

void tgi_patch_plan_free(tgi_patch_plan *plan)
{
	for (size_t i = 0; i < plan->nwrites; i++) {
		free(plan->writes[i].path);
		free(plan->writes[i].fspath);
		free(plan->writes[i].data);
	}
	free(plan->writes);
	json_decref(plan->result);
	free(plan->summary);
	memset(plan, 0, sizeof *plan);
}
