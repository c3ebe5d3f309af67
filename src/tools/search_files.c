/*
 * search_files.c — the search_files tool: lines of workspace files that
 * match a PCRE2 pattern, as file:line:text.
 *
 * The walk opens every directory through openat2 beneath its parent's fd,
 * in name order, and skips symlinks, `.git` and `.toolgate` (at any
 * depth), binary files (a NUL in the first 8 KiB) and files over 10 MiB.
 * Every directory it would descend and every file it would open, the named
 * path too, is first put to the pipeline's may_read: a refused one is left
 * out without a word and only counted (`withheld`).  The pattern is JIT
 * compiled and every match runs under a match limit, so a pattern that
 * backtracks without bound is refused rather than left to hang; the whole
 * search stops at the call's deadline (timeout) or after reading 256 MiB.
 *
 * Owns: the tool row, its schema, the walk and the matching.  Must not:
 * judge policy itself (the pipeline and may_read do), search inside
 * .toolgate/ (but a spill file named exactly, of its own session), name a
 * withheld entry, follow a symlink, or search what its open did not find
 * where the policy stage judged the path (tgi_tool_landed).
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
#include "store/store.h"
#include "tools/plan.h"
#include "tools/walk.h"
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
#define READ_BUDGET     (256u << 20)  /* bytes read by one search */
#define SCAN_SLICE      65536         /* bytes matched between deadline checks */

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":10000,"
	"\"description\":\"PCRE2 regular expression matched against each line.\"},"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,\"default\":\".\","
	"\"description\":\"File or directory to search, relative to the workspace root or "
	"absolute within it.\"},"
	"\"glob\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,"
	"\"description\":\"Only search files whose name matches this glob, e.g. \\\"*.c\\\"; "
	"a glob with a slash is matched against the path from the workspace root.\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":100,"
	"\"description\":\"Maximum number of matching lines to return.\"}},"
	"\"required\":[\"pattern\"],\"additionalProperties\":false}";

/* Why a search stopped before the end (the result is then an error). */
typedef enum { RUN_ON, RUN_EXPENSIVE, RUN_TIMEOUT, RUN_BUDGET } run_state;

typedef struct search {
	const tgi_exec_ctx  *ctx;
	double               deadline;
	pcre2_code          *code;
	pcre2_match_data    *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack     *jit;
	const char          *glob;       /* or NULL */
	int                  glob_path;  /* the glob has a '/': match the whole path */
	size_t               limit;
	json_t              *matches;
	int                  more;       /* a match past the limit was seen */
	run_state            stop;
	size_t               files_scanned, withheld, bytes_read;
	tgi_walk_path        at;         /* the entry, as written from the workspace root */
} search;

static int stopped(const search *s)
{
	return s->more || s->stop != RUN_ON;
}

static int out_of_time(search *s)
{
	if (tgi_now_ms() > s->deadline)
		s->stop = RUN_TIMEOUT;
	return s->stop == RUN_TIMEOUT;
}

static int is_binary(const char *buf, size_t len)
{
	return memchr(buf, '\0', len < BINARY_PROBE ? len : BINARY_PROBE) != NULL;
}

static void add_match(search *s, const char *line, size_t n, size_t lineno)
{
	size_t keep = tgi_utf8_offset(line, n, TEXT_MAX_CHARS);
	json_t *text;

	if (keep < n) {
		tgi_buf b;
		tgi_buf_init(&b, keep + 4);
		tgi_buf_append(&b, line, keep);
		tgi_buf_puts(&b, "...");
		text = tgi_json_text(b.p, b.len);
		tgi_buf_free(&b);
	} else {
		text = tgi_json_text(line, n);
	}
	json_t *m = json_object();
	json_object_set_new(m, "file", tgi_json_text(s->at.path, strlen(s->at.path)));
	json_object_set_new(m, "line", json_integer((json_int_t)lineno));
	json_object_set_new(m, "text", text);
	json_array_append_new(s->matches, m);
}

/* Match every line of one file's text (at.path names it). */
static void scan_text(search *s, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *slice = buf;

	s->files_scanned++;
	for (size_t lineno = 1; p < end && !stopped(s); lineno++) {
		if ((size_t)(p - slice) >= SCAN_SLICE) {
			slice = p;
			if (out_of_time(s))
				break;
		}
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
			s->stop = RUN_EXPENSIVE;
		}
		p = nl ? nl + 1 : end;
	}
}

/*
 * Read the open file fd and match its lines, unless it is binary.  Files
 * the walk finds are skipped when unreadable (gone, grown past the cap);
 * for the file the model named, the reason is returned: -errno, or 1 for
 * a binary file.
 */
static int scan_fd(search *s, int fd)
{
	char *buf;
	size_t len;

	if (out_of_time(s))
		return 0;
	int r = tgi_read_fd(fd, FILE_MAX, &buf, &len);
	if (r < 0)
		return r;
	s->bytes_read += len;
	r = is_binary(buf, len);
	if (!r)
		scan_text(s, buf, len);
	free(buf);
	return r;
}

/* Does the glob take the entry at.path names (its name as text, fs.h)? */
static int glob_ok(const search *s)
{
	const char *name = strrchr(s->at.path, '/');
	name = name ? name + 1 : s->at.path;
	return !s->glob || fnmatch(s->glob, s->glob_path ? s->at.path : name, 0) == 0;
}

/* Search the directory dirfd, whose entries are named below at.path[0..len). */
static void walk_dir(search *s, int dirfd, size_t len, int depth)
{
	tgi_dirent *v;
	size_t n;

	if (tgi_dir_read(dirfd, DIR_MAX, &v, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n && !stopped(s) && !out_of_time(s); i++) {
		const tgi_dirent *e = &v[i];
		int is_dir = S_ISDIR(e->mode);

		if (strcmp(e->name, ".git") == 0 || strcmp(e->name, ".toolgate") == 0)
			continue;
		size_t end = tgi_walk_path_push(&s->at, len, e->name);
		if (!end)
			continue;
		if (is_dir ? depth >= MAX_DEPTH
		           : !S_ISREG(e->mode) || (uintmax_t)e->size > FILE_MAX || !glob_ok(s))
			continue;
		if (!tgi_walk_may_read(s->ctx, &s->at, end, is_dir)) {
			s->withheld++;
			continue;
		}
		if (!is_dir && s->bytes_read + (size_t)e->size > READ_BUDGET) {
			s->stop = RUN_BUDGET;
			break;
		}
		int flags = is_dir ? O_PATH | O_DIRECTORY : O_RDONLY | O_NONBLOCK | O_NOCTTY;
		int fd = tgi_open_beneath(dirfd, e->name, flags | O_NOFOLLOW, 0);
		if (fd < 0)
			continue;
		if (is_dir)
			walk_dir(s, fd, end, depth + 1);
		else
			scan_fd(s, fd);
		close(fd);
	}
	tgi_dirents_free(v, n);
}

/* The one file the model named: withheld if policy refuses it, else searched,
 * or a sentence saying why it cannot be. */
static int search_one(search *s, int fd, const char *path, const char *shown, tgi_tool_out *out)
{
	if (!tgi_walk_may_read(s->ctx, &s->at, s->at.root_len, 0)) {
		s->withheld++;
		return 0;
	}
	int r = scan_fd(s, fd);
	if (r == -EFBIG) {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is over 10 MiB; search_files skips files that large", shown);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	if (r < 0)
		return tgi_tool_fail(out, tgi_path_error(r, path, out->message, sizeof out->message));
	if (r > 0) {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is a binary file; search_files searches text only", shown);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
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
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	pcre2_jit_compile(s->code, PCRE2_JIT_COMPLETE);   /* the interpreter if JIT is missing */
	s->md = pcre2_match_data_create_from_pattern(s->code, NULL);
	s->mctx = pcre2_match_context_create(NULL);
	s->jit = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
	if (!s->md || !s->mctx || !s->jit) {
		tgi_snprintf(out->message, sizeof out->message, "out of memory compiling the pattern; retry");
		return tgi_tool_fail(out, TG_ERR_TRANSIENT);
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

/* The sentence for a search that stopped early; -1. */
static int stopped_early(const search *s, const char *pat, tgi_tool_out *out)
{
	char shown[160];

	switch (s->stop) {
	case RUN_EXPENSIVE:
		tgi_sanitize(shown, sizeof shown, pat);
		tgi_snprintf(out->message, sizeof out->message,
		             "pattern \"%s\" is too expensive to match: it backtracks without bound; "
		             "simplify it (avoid nested quantifiers such as (a+)+)", shown);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	case RUN_TIMEOUT:
		tgi_snprintf(out->message, sizeof out->message,
		             "the search did not finish within the time limit; narrow path or glob");
		return tgi_tool_fail(out, TG_ERR_TIMEOUT);
	case RUN_BUDGET:
	default:
		tgi_snprintf(out->message, sizeof out->message,
		             "the search would read more than %u MiB; narrow path or glob",
		             READ_BUDGET >> 20);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
}

static int search_files_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	char path[PATH_MAX], real[PATH_MAX], shown[160];
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
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	if (patlen == 0 || patlen > PATTERN_MAX) {
		tgi_snprintf(out->message, sizeof out->message,
		             "pattern must be 1 to %d characters long", PATTERN_MAX);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	if (glob && (globlen == 0 || strlen(glob) != globlen)) {
		tgi_snprintf(out->message, sizeof out->message, "glob must be non-empty and contain no NUL byte");
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}

	search *s = tgi_xcalloc(1, sizeof *s);
	s->ctx = ctx;
	s->deadline = tgi_tool_deadline(ctx);
	s->matches = json_array();
	s->limit = (size_t)limit;
	s->glob = glob;
	s->glob_path = glob && strchr(glob, '/');
	if (compile(s, pat, patlen, out) < 0)
		goto done;

	/* opened for reading (not O_PATH): a named file is read from this fd */
	int fd = tgi_path_open_placed(ctx->ws_fd, raw, rawlen, O_RDONLY | O_NONBLOCK | O_NOCTTY, path,
	                              sizeof path, real, sizeof real, &kind, out->message,
	                              sizeof out->message);
	if (fd < 0) {
		tgi_tool_fail(out, kind);
		goto done;
	}
	if (tgi_tool_landed(ctx, 0, path, real, out) < 0) {
		close(fd);
		goto done;
	}
	/* a spill file holds a call's whole output: only its own session's */
	if (tgi_path_is_spill(path) &&
	    !tgi_spill_readable(ctx->ws_fd, path, ctx->session, out->message, sizeof out->message)) {
		close(fd);
		tgi_tool_fail(out, TG_ERR_NOT_PERMITTED);
		goto done;
	}
	tgi_sanitize(shown, sizeof shown, path);
	int r = tgi_walk_path_start(&s->at, path, real);
	if (r < 0) {
		tgi_tool_fail(out, tgi_path_error(r, path, out->message, sizeof out->message));
	} else if (fstat(fd, &st) < 0) {
		tgi_tool_fail(out, tgi_path_error(-errno, path, out->message, sizeof out->message));
	} else if (S_ISDIR(st.st_mode)) {
		if (tgi_walk_may_read(ctx, &s->at, s->at.root_len, 1))
			walk_dir(s, fd, s->at.root_len, 0);
		else
			s->withheld++;
		rc = 0;
	} else if (S_ISREG(st.st_mode)) {
		rc = search_one(s, fd, path, shown, out);
	} else {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is neither a regular file nor a directory", shown);
		tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	close(fd);
	if (rc == 0 && s->stop != RUN_ON)
		rc = stopped_early(s, pat, out);
	if (rc == 0) {
		json_t *o = json_object();
		json_object_set_new(o, "matches", s->matches);
		json_object_set_new(o, "more", json_boolean(s->more));
		json_object_set_new(o, "files_scanned", json_integer((json_int_t)s->files_scanned));
		json_object_set_new(o, "withheld", json_integer((json_int_t)s->withheld));
		s->matches = NULL;
		out->output = o;
		out->kind = TG_ERR_NONE;
	}
done:
	search_free(s);
	return rc;
}

const tgi_tool tgi_tool_search_files = {
	.name = "search_files",
	.description =
		"Search the lines of workspace files for a PCRE2 regular expression. Returns "
		"matches as {file, line, text} (text cut at 500 characters), in path order, at "
		"most `limit` of them, with `more` true when there were others. `path` may be a "
		"directory (searched recursively) or a file; `glob` filters file names (e.g. "
		"\"*.c\"). Binary files, files over 10 MiB, symlinks, .git and .toolgate are "
		"skipped; `withheld` counts files and directories that policy keeps from view.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
	.paths = tgi_paths_optional_path,
	.repath = tgi_repath_path,
	.handler = search_files_run,
	.plan = tgi_plan_reads_optional,
};
