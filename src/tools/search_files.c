/*
 * search_files.c — the search_files tool: lines of workspace files that
 * match a PCRE2 pattern, as file:line:text.
 *
 * The walk opens every directory through openat2 beneath its parent's fd,
 * in name order, and skips symlinks, `.git`, `.toolgate`, binary files (a
 * NUL in the first 8 KiB) and files over 10 MiB.  The pattern is JIT
 * compiled and every match runs under a match limit, so a pattern that
 * backtracks without bound is refused rather than left to hang.
 *
 * Owns: the tool row, its schema, the walk and the matching.  Must not:
 * check permissions (the pipeline does), search inside .toolgate/, or
 * follow a symlink.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "util/fs.h"
#include "util/util.h"

#define MAX_LIMIT       1000
#define PATTERN_MAX     10000
#define FILE_MAX        (10u << 20)   /* larger files are skipped */
#define BINARY_PROBE    8192
#define TEXT_MAX_CHARS  500           /* of a matching line */
#define DIR_MAX         100000        /* entries read from one directory */
#define MAX_DEPTH       128
#define MATCH_LIMIT     1000000       /* backtracking steps for one line */
#define DEPTH_LIMIT     10000
#define JIT_STACK_MAX   (1u << 20)

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":10000,"
	"\"description\":\"PCRE2 regular expression matched against each line.\"},"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,\"default\":\".\","
	"\"description\":\"File or directory to search, relative to the workspace root.\"},"
	"\"glob\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,"
	"\"description\":\"Only search files whose name matches this glob, e.g. \\\"*.c\\\"; "
	"a glob with a slash is matched against the path from the workspace root.\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":100,"
	"\"description\":\"Maximum number of matching lines to return.\"}},"
	"\"required\":[\"pattern\"],\"additionalProperties\":false}";

typedef struct search {
	pcre2_code          *code;
	pcre2_match_data    *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack     *jit;
	const char          *glob;       /* or NULL */
	int                  glob_path;  /* the glob has a '/': match the whole path */
	size_t               limit;
	json_t              *matches;
	int                  more;       /* a match past the limit was seen */
	int                  expensive;  /* a match hit a limit */
	size_t               files_scanned;
	char                 rel[PATH_MAX]; /* workspace-relative path of the entry */
} search;

static int fail(tgi_tool_out *out, tg_errkind kind)
{
	out->kind = kind;
	out->applied = TGI_APPLIED_NO;
	return -1;
}

static int stopped(const search *s)
{
	return s->more || s->expensive;
}

static int is_binary(const char *buf, size_t len)
{
	return memchr(buf, '\0', len < BINARY_PROBE ? len : BINARY_PROBE) != NULL;
}

static void add_match(search *s, const char *line, size_t n, size_t lineno)
{
	size_t keep = tgi_text_prefix(line, n, TEXT_MAX_CHARS, NULL);
	tgi_buf text;

	tgi_buf_init(&text, keep * 3 + 8);
	tgi_text_append(&text, line, keep);
	if (keep < n)
		tgi_buf_puts(&text, "...");
	json_t *m = json_object();
	json_object_set_new(m, "file", tgi_text_json(s->rel, strlen(s->rel)));
	json_object_set_new(m, "line", json_integer((json_int_t)lineno));
	json_object_set_new(m, "text", json_stringn(text.p ? text.p : "", text.len));
	json_array_append_new(s->matches, m);
	tgi_buf_free(&text);
}

/* Match every line of one file's text (s->rel names it). */
static void scan_text(search *s, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	s->files_scanned++;
	for (size_t lineno = 1; p < end && !stopped(s); lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t m = n && p[n - 1] == '\r' ? n - 1 : n;
		int rc = pcre2_match(s->code, (PCRE2_SPTR)p, m, 0, 0, s->md, s->mctx);
		if (rc >= 0) {
			if (json_array_size(s->matches) == s->limit)
				s->more = 1;
			else
				add_match(s, p, m, lineno);
		} else if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
		           rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
			s->expensive = 1;
		}
		p = nl ? nl + 1 : end;
	}
}

static void scan_file(search *s, int dirfd, const char *name)
{
	char *buf;
	size_t len;

	if (tgi_read_all(dirfd, name, FILE_MAX, &buf, &len) < 0)
		return;                      /* gone, grown past the cap, unreadable */
	if (!is_binary(buf, len))
		scan_text(s, buf, len);
	free(buf);
}

static int glob_ok(const search *s, const char *name)
{
	return !s->glob || fnmatch(s->glob, s->glob_path ? s->rel : name, 0) == 0;
}

/* Search the directory dirfd, whose entries are named s->rel[0..len) + name. */
static void walk_dir(search *s, int dirfd, size_t len, int depth)
{
	tgi_dirent *v;
	size_t n;

	if (tgi_dir_read(dirfd, DIR_MAX, &v, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n && !stopped(s); i++) {
		const tgi_dirent *e = &v[i];
		size_t nlen = strlen(e->name);

		if (strcmp(e->name, ".git") == 0 || strcmp(e->name, ".toolgate") == 0)
			continue;
		if (len + nlen + 2 >= sizeof s->rel)
			continue;
		memcpy(s->rel + len, e->name, nlen + 1);
		if (S_ISDIR(e->mode) && depth < MAX_DEPTH) {
			int fd = tgi_open_beneath(dirfd, e->name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
			if (fd < 0)
				continue;
			s->rel[len + nlen] = '/';
			s->rel[len + nlen + 1] = '\0';
			walk_dir(s, fd, len + nlen + 1, depth + 1);
			close(fd);
		} else if (S_ISREG(e->mode) && (uintmax_t)e->size <= FILE_MAX && glob_ok(s, e->name)) {
			scan_file(s, dirfd, e->name);
		}
	}
	tgi_dirents_free(v, n);
}

/* The one file the model named: say why it cannot be searched. */
static int search_one(search *s, int ws_fd, const char *path, const char *shown, tgi_tool_out *out)
{
	char *buf;
	size_t len;

	int r = tgi_read_all(ws_fd, path, FILE_MAX, &buf, &len);
	if (r == -EFBIG) {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is over 10 MiB; search_files skips files that large", shown);
		return fail(out, TG_ERR_INVALID_INPUT);
	}
	if (r < 0)
		return fail(out, tgi_path_error(r, path, out->message, sizeof out->message));
	if (is_binary(buf, len)) {
		free(buf);
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is a binary file; search_files searches text only", shown);
		return fail(out, TG_ERR_INVALID_INPUT);
	}
	tgi_snprintf(s->rel, sizeof s->rel, "%s", path);
	scan_text(s, buf, len);
	free(buf);
	return 0;
}

static int compile(search *s, const char *pat, size_t patlen, tgi_tool_out *out)
{
	char shown[160];
	int errcode;
	PCRE2_SIZE erroff;

	s->code = pcre2_compile((PCRE2_SPTR)pat, patlen,
	                        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C,
	                        &errcode, &erroff, NULL);
	if (!s->code) {
		PCRE2_UCHAR why[256];
		if (pcre2_get_error_message(errcode, why, sizeof why) < 0)
			strcpy((char *)why, "unknown error");
		tgi_sanitize(shown, sizeof shown, pat);
		tgi_snprintf(out->message, sizeof out->message,
		             "pattern \"%s\" does not compile at offset %zu: %s", shown, (size_t)erroff, why);
		return fail(out, TG_ERR_INVALID_INPUT);
	}
	pcre2_jit_compile(s->code, PCRE2_JIT_COMPLETE);   /* the interpreter if JIT is missing */
	s->md = pcre2_match_data_create_from_pattern(s->code, NULL);
	s->mctx = pcre2_match_context_create(NULL);
	s->jit = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
	if (!s->md || !s->mctx || !s->jit) {
		tgi_snprintf(out->message, sizeof out->message, "out of memory compiling the pattern; retry");
		return fail(out, TG_ERR_TRANSIENT);
	}
	pcre2_jit_stack_assign(s->mctx, NULL, s->jit);
	pcre2_set_match_limit(s->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(s->mctx, DEPTH_LIMIT);
	return 0;
}

static void search_free(search *s)
{
	pcre2_jit_stack_free(s->jit);
	pcre2_match_context_free(s->mctx);
	pcre2_match_data_free(s->md);
	pcre2_code_free(s->code);
	json_decref(s->matches);
	free(s);
}

static int search_files_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	char path[PATH_MAX], shown[160];
	const char *pat, *raw, *glob = NULL;
	size_t patlen, rawlen, globlen = 0;
	long long limit;
	tg_errkind kind;
	struct stat st;
	int rc = -1;

	if (tgi_arg_str(args, "pattern", NULL, &pat, &patlen, out->message, sizeof out->message) < 0 ||
	    tgi_arg_str(args, "path", ".", &raw, &rawlen, out->message, sizeof out->message) < 0 ||
	    (json_object_get(args, "glob") &&
	     tgi_arg_str(args, "glob", NULL, &glob, &globlen, out->message, sizeof out->message) < 0) ||
	    tgi_arg_int(args, "limit", 100, 1, MAX_LIMIT, &limit, out->message, sizeof out->message) < 0)
		return fail(out, TG_ERR_INVALID_INPUT);
	if (patlen == 0 || patlen > PATTERN_MAX) {
		tgi_snprintf(out->message, sizeof out->message,
		             "pattern must be 1 to %d characters long", PATTERN_MAX);
		return fail(out, TG_ERR_INVALID_INPUT);
	}
	if (glob && (globlen == 0 || strlen(glob) != globlen)) {
		tgi_snprintf(out->message, sizeof out->message, "glob must be non-empty and contain no NUL byte");
		return fail(out, TG_ERR_INVALID_INPUT);
	}

	search *s = tgi_xcalloc(1, sizeof *s);
	s->matches = json_array();
	s->limit = (size_t)limit;
	s->glob = glob;
	s->glob_path = glob && strchr(glob, '/');
	if (compile(s, pat, patlen, out) < 0)
		goto done;

	int fd = tgi_path_open_read(ctx->ws_fd, raw, rawlen, O_PATH, path, sizeof path,
	                            &kind, out->message, sizeof out->message);
	if (fd < 0) {
		fail(out, kind);
		goto done;
	}
	tgi_sanitize(shown, sizeof shown, path);
	if (fstat(fd, &st) < 0) {
		fail(out, tgi_path_error(-errno, path, out->message, sizeof out->message));
	} else if (S_ISDIR(st.st_mode)) {
		size_t len = 0;
		if (strcmp(path, ".") != 0)
			len = (size_t)snprintf(s->rel, sizeof s->rel, "%s/", path);
		walk_dir(s, fd, len, 0);
		rc = 0;
	} else if (S_ISREG(st.st_mode)) {
		rc = search_one(s, ctx->ws_fd, path, shown, out);
	} else {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is neither a regular file nor a directory", shown);
		fail(out, TG_ERR_INVALID_INPUT);
	}
	close(fd);
	if (rc == 0 && s->expensive) {
		tgi_sanitize(shown, sizeof shown, pat);
		tgi_snprintf(out->message, sizeof out->message,
		             "pattern \"%s\" is too expensive to match: it backtracks without bound; "
		             "simplify it (avoid nested quantifiers such as (a+)+)", shown);
		rc = fail(out, TG_ERR_INVALID_INPUT);
	}
	if (rc == 0) {
		json_t *o = json_object();
		json_object_set_new(o, "matches", s->matches);
		json_object_set_new(o, "more", json_boolean(s->more));
		json_object_set_new(o, "files_scanned", json_integer((json_int_t)s->files_scanned));
		s->matches = NULL;
		out->output = o;
		out->kind = TG_ERR_NONE;
	}
done:
	search_free(s);
	return rc;
}

static int search_files_paths(const json_t *args, const char **out, size_t cap)
{
	const json_t *p = json_object_get(args, "path");

	if (cap < 1)
		return -1;
	if (!p) {
		out[0] = ".";
		return 1;
	}
	if (!json_is_string(p))
		return -1;
	out[0] = json_string_value(p);
	return 1;
}

const tgi_tool tgi_tool_search_files = {
	.name = "search_files",
	.description =
		"Search the lines of workspace files for a PCRE2 regular expression. Returns "
		"matches as {file, line, text} (text cut at 500 characters), in path order, at "
		"most `limit` of them, with `more` true when there were others. `path` may be a "
		"directory (searched recursively) or a file; `glob` filters file names (e.g. "
		"\"*.c\"). Binary files, files over 10 MiB, symlinks, .git and .toolgate are "
		"skipped.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
	.paths = search_files_paths,
	.handler = search_files_run,
};
