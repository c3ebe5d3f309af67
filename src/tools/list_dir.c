/*
 * list_dir.c — the list_dir tool: the entries of a workspace directory,
 * recursed to a depth, sorted by name, capped at a limit with a count of
 * what was left out.
 *
 * Every directory is opened through openat2 beneath its parent's fd and
 * read with tgi_dir_read (lstat: a symlink is listed as a symlink and never
 * descended).  `.git` and `.toolgate` are listed but not descended.
 *
 * Owns: the tool row, its schema and the walk.  Must not: check
 * permissions (the pipeline does), list inside .toolgate/, or follow a
 * symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "util/fs.h"
#include "util/util.h"

#define MAX_DEPTH     10
#define MAX_LIMIT     10000
#define DIR_MAX       100000   /* entries read from one directory */
#define VISIT_BUDGET  200000   /* entries looked at in all, listed or counted */

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,\"default\":\".\","
	"\"description\":\"Directory relative to the workspace root.\"},"
	"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"default\":1,"
	"\"description\":\"How many levels to list: 1 lists only the directory's own entries.\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"default\":200,"
	"\"description\":\"Maximum number of entries to return.\"}},"
	"\"additionalProperties\":false}";

typedef struct walk {
	json_t *entries;
	size_t  limit, shown, more, visited;
	int     depth;                /* levels to list */
	int     budget_hit;
	char    rel[PATH_MAX];        /* the entry's name relative to the listed path */
} walk;

static int fail(tgi_tool_out *out, tg_errkind kind)
{
	out->kind = kind;
	out->applied = TGI_APPLIED_NO;
	return -1;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static void add_entry(walk *w, const tgi_dirent *e, size_t len)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", tgi_text_json(w->rel, len));
	json_object_set_new(o, "type", json_string(type_name(e->mode)));
	json_object_set_new(o, "size", S_ISREG(e->mode) ? json_integer(e->size) : json_null());
	json_array_append_new(w->entries, o);
}

/* List dirfd's entries (names prefixed by rel[0..len)), descending to
 * w->depth.  Returns 0, or -errno when dirfd itself cannot be read. */
static int walk_dir(walk *w, int dirfd, size_t len, int level)
{
	tgi_dirent *v;
	size_t n, extra;

	int r = tgi_dir_read(dirfd, DIR_MAX, &v, &n, &extra);
	if (r < 0)
		return r;
	w->more += extra;
	for (size_t i = 0; i < n && !w->budget_hit; i++) {
		const tgi_dirent *e = &v[i];
		int is_dir = S_ISDIR(e->mode);
		size_t nlen = strlen(e->name);

		if (++w->visited > VISIT_BUDGET) {
			w->budget_hit = 1;
			break;
		}
		if (len + nlen + 2 >= sizeof w->rel)
			continue;               /* deeper than a path can be */
		memcpy(w->rel + len, e->name, nlen);
		size_t end = len + nlen;
		if (is_dir)
			w->rel[end++] = '/';
		w->rel[end] = '\0';

		if (w->shown < w->limit) {
			add_entry(w, e, end);
			w->shown++;
		} else {
			w->more++;
		}
		if (!is_dir || level >= w->depth || strcmp(e->name, ".git") == 0 ||
		    strcmp(e->name, ".toolgate") == 0)
			continue;
		int fd = tgi_open_beneath(dirfd, e->name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
		if (fd < 0)
			continue;               /* gone or unreadable: listed, not descended */
		walk_dir(w, fd, end, level + 1);
		close(fd);
	}
	tgi_dirents_free(v, n);
	return 0;
}

static int list_dir_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	char path[PATH_MAX], shown[160];
	const char *raw;
	size_t rawlen;
	long long depth, limit;
	tg_errkind kind;
	struct stat st;

	if (tgi_arg_str(args, "path", ".", &raw, &rawlen, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "depth", 1, 1, MAX_DEPTH, &depth, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "limit", 200, 1, MAX_LIMIT, &limit, out->message, sizeof out->message) < 0)
		return fail(out, TG_ERR_INVALID_INPUT);

	int fd = tgi_path_open_read(ctx->ws_fd, raw, rawlen, O_PATH, path, sizeof path,
	                            &kind, out->message, sizeof out->message);
	if (fd < 0)
		return fail(out, kind);
	tgi_sanitize(shown, sizeof shown, path);
	if (fstat(fd, &st) < 0) {
		kind = tgi_path_error(-errno, path, out->message, sizeof out->message);
		close(fd);
		return fail(out, kind);
	}
	if (!S_ISDIR(st.st_mode)) {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is not a directory; use read_file for files", shown);
		close(fd);
		return fail(out, TG_ERR_INVALID_INPUT);
	}

	walk *w = tgi_xcalloc(1, sizeof *w);
	w->entries = json_array();
	w->limit = (size_t)limit;
	w->depth = (int)depth;
	int r = walk_dir(w, fd, 0, 1);
	close(fd);
	if (r < 0) {
		kind = tgi_path_error(r, path, out->message, sizeof out->message);
		json_decref(w->entries);
		free(w);
		return fail(out, kind);
	}

	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "entries", w->entries);
	json_object_set_new(o, "more", json_integer((json_int_t)w->more));
	if (w->budget_hit)
		json_object_set_new(o, "more_is_lower_bound", json_true());
	free(w);
	out->output = o;
	out->kind = TG_ERR_NONE;
	return 0;
}

static int list_dir_paths(const json_t *args, const char **out, size_t cap)
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

const tgi_tool tgi_tool_list_dir = {
	.name = "list_dir",
	.description =
		"List a directory in the workspace: entries sorted by name, each with its type "
		"(file, dir, symlink, other) and size in bytes for files; directory names end in "
		"\"/\". `depth` lists subdirectories too (names relative to `path`). At most "
		"`limit` entries are returned and `more` says how many were left out. Symlinks, "
		".git and .toolgate are not descended.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
	.paths = list_dir_paths,
	.handler = list_dir_run,
};
