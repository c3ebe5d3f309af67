/*
 * list_dir.c — the list_dir tool: the entries of a workspace directory,
 * recursed to a depth, sorted by name, capped at a limit with a count of
 * what was left out.
 *
 * Every directory is opened through openat2 beneath its parent's fd and
 * read with tgi_dir_read (lstat: a symlink is listed as a symlink and never
 * descended).  `.git` and `.toolgate` (at any depth) are listed but not
 * descended.  Every entry, the listed directory too, is put to the
 * pipeline's may_read before it is listed or descended: a refused one is
 * left out without a word and only counted (`withheld`).  The walk stops
 * at the call's deadline (timeout).
 *
 * Owns: the tool row, its schema and the walk.  Must not: judge policy
 * itself (the pipeline and may_read do), list inside .toolgate/, name a
 * withheld entry, follow a symlink, or list a directory its open did not
 * find where the policy stage judged the path (tgi_tool_landed).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "tools/plan.h"
#include "tools/walk.h"
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
	"\"description\":\"Directory, relative to the workspace root or absolute within it.\"},"
	"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"default\":1,"
	"\"description\":\"How many levels to list: 1 lists only the directory's own entries.\"},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"default\":200,"
	"\"description\":\"Maximum number of entries to return.\"}},"
	"\"additionalProperties\":false}";

typedef struct walk {
	const tgi_exec_ctx *ctx;
	double        deadline;
	json_t       *entries;
	size_t        limit, shown, more, visited, withheld;
	int           depth;          /* levels to list */
	int           budget_hit;
	int           timed_out;
	tgi_walk_path at;             /* the entry; names are shown past the root */
} walk;

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

/* List the entry at.path[0..len), a directory when is_dir ("name/"). */
static void add_entry(walk *w, const tgi_dirent *e, size_t len, int is_dir)
{
	size_t skip = w->at.root_len ? w->at.root_len + 1 : 0;
	char *name = w->at.path + skip;
	size_t n = len - skip;

	if (is_dir)
		name[n++] = '/';        /* push() left room for it */
	json_t *o = json_object();
	json_object_set_new(o, "name", tgi_json_text(name, n));
	json_object_set_new(o, "type", json_string(type_name(e->mode)));
	json_object_set_new(o, "size", S_ISREG(e->mode) ? json_integer(e->size) : json_null());
	json_array_append_new(w->entries, o);
	name[len - skip] = '\0';
}

/* List dirfd's entries (named below at.path[0..len)), descending to
 * w->depth.  Returns 0, or -errno when dirfd itself cannot be read. */
static int walk_dir(walk *w, int dirfd, size_t len, int level)
{
	tgi_dirent *v;
	size_t n, extra;

	int r = tgi_dir_read(dirfd, DIR_MAX, &v, &n, &extra);
	if (r < 0)
		return r;
	w->more += extra;
	for (size_t i = 0; i < n && !w->budget_hit && !w->timed_out; i++) {
		const tgi_dirent *e = &v[i];
		int is_dir = S_ISDIR(e->mode);

		if (tgi_now_ms() > w->deadline) {
			w->timed_out = 1;
			break;
		}
		if (++w->visited > VISIT_BUDGET) {
			w->budget_hit = 1;
			break;
		}
		size_t end = tgi_walk_path_push(&w->at, len, e->name);
		if (!end)
			continue;               /* deeper than a path can be */
		if (!tgi_walk_may_read(w->ctx, &w->at, end, is_dir)) {
			w->withheld++;
			continue;
		}
		if (w->shown < w->limit) {
			add_entry(w, e, end, is_dir);
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
	char path[PATH_MAX], real[PATH_MAX], shown[160];
	const char *raw;
	size_t rawlen;
	long long depth, limit;
	tg_errkind kind;
	struct stat st;
	int rc = -1;

	if (tgi_arg_str(args, "path", ".", &raw, &rawlen, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "depth", 1, 1, MAX_DEPTH, &depth, out->message, sizeof out->message) < 0 ||
	    tgi_arg_int(args, "limit", 200, 1, MAX_LIMIT, &limit, out->message, sizeof out->message) < 0)
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);

	int fd = tgi_path_open_placed(ctx->ws_fd, raw, rawlen, O_PATH, path, sizeof path, real,
	                              sizeof real, &kind, out->message, sizeof out->message);
	if (fd < 0)
		return tgi_tool_fail(out, kind);
	if (tgi_tool_landed(ctx, 0, path, real, out) < 0) {
		close(fd);
		return -1;
	}
	tgi_sanitize(shown, sizeof shown, path);
	if (fstat(fd, &st) < 0) {
		kind = tgi_path_error(-errno, path, out->message, sizeof out->message);
		close(fd);
		return tgi_tool_fail(out, kind);
	}
	if (!S_ISDIR(st.st_mode)) {
		tgi_snprintf(out->message, sizeof out->message,
		             "\"%s\" is not a directory; use read_file for files", shown);
		close(fd);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}

	walk *w = tgi_xcalloc(1, sizeof *w);
	w->ctx = ctx;
	w->deadline = tgi_tool_deadline(ctx);
	w->entries = json_array();
	w->limit = (size_t)limit;
	w->depth = (int)depth;
	int r = tgi_walk_path_start(&w->at, path, real);
	if (r == 0) {
		if (tgi_walk_may_read(ctx, &w->at, w->at.root_len, 1))
			r = walk_dir(w, fd, w->at.root_len, 1);
		else
			w->withheld++;
	}
	close(fd);
	if (r < 0) {
		tgi_tool_fail(out, tgi_path_error(r, path, out->message, sizeof out->message));
	} else if (w->timed_out) {
		tgi_snprintf(out->message, sizeof out->message,
		             "the listing of \"%s\" did not finish within the time limit; list a "
		             "smaller directory or a lower depth", shown);
		tgi_tool_fail(out, TG_ERR_TIMEOUT);
	} else {
		json_t *o = json_object();
		json_object_set_new(o, "path", json_string(path));
		json_object_set_new(o, "entries", w->entries);
		json_object_set_new(o, "more", json_integer((json_int_t)w->more));
		json_object_set_new(o, "withheld", json_integer((json_int_t)w->withheld));
		if (w->budget_hit)
			json_object_set_new(o, "more_is_lower_bound", json_true());
		w->entries = NULL;
		out->output = o;
		out->kind = TG_ERR_NONE;
		rc = 0;
	}
	json_decref(w->entries);
	free(w);
	return rc;
}

const tgi_tool tgi_tool_list_dir = {
	.name = "list_dir",
	.description =
		"List a directory in the workspace: entries sorted by name, each with its type "
		"(file, dir, symlink, other) and size in bytes for files; directory names end in "
		"\"/\". `depth` lists subdirectories too (names relative to `path`). At most "
		"`limit` entries are returned and `more` says how many were left out; `withheld` "
		"counts entries that policy keeps from view. Symlinks, .git and .toolgate are not "
		"descended.",
	.category = "fs",
	.input_schema = schema,
	.flags = TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
	.paths = tgi_paths_optional_path,
	.repath = tgi_repath_path,
	.handler = list_dir_run,
	.plan = tgi_plan_reads_optional,
};
