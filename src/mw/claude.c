/*
 * claude.c — a call as Claude Code's hooks read one, and a hook's
 * updatedInput back into the call's arguments (mw.h, docs/MIDDLEWARE.md
 * "Hooks written for Claude Code").
 *
 * A hook script written for Claude Code reads tool_name and tool_input in
 * Claude Code's words: `Write` with an absolute `file_path`, `Bash` with a
 * command string.  Given toolgate's own names (`write_file`, `path`) it
 * finds nothing and lets everything through, so this file speaks its
 * language, and does so for the whole class of tools: a patch is asked
 * about once per file it touches, a path that resolves through a symlink
 * once more under the name it resolves to, an argv is one quoted command
 * line.
 *
 * Going back is strict: an updatedInput key toolgate has no argument for,
 * or a rewrite of one file of a patch, is refused with a sentence (the
 * hook's call is then denied), never dropped in silence.
 *
 * Owns: Claude Code's names and argument shapes for toolgate's tools, and
 * the way back.  Must not: run hooks, read a hook's answer (hooks.c), or
 * judge anything; what it makes is validated and judged like any call.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "patch/patch.h"
#include "registry.h"
#include "util/fs.h"
#include "util/util.h"

tgi_cc_kind tgi_cc_kind_of(const tgi_entry *e)
{
	static const struct { const tgi_tool *row; tgi_cc_kind kind; } rows[] = {
		{&tgi_tool_read_file, TGI_CC_READ},     {&tgi_tool_list_dir, TGI_CC_LIST},
		{&tgi_tool_search_files, TGI_CC_SEARCH}, {&tgi_tool_write_file, TGI_CC_WRITE},
		{&tgi_tool_apply_patch, TGI_CC_PATCH},  {&tgi_tool_shell, TGI_CC_SHELL},
	};
	if (!e)
		return TGI_CC_OTHER;
	for (size_t i = 0; i < TGI_ARRAY_LEN(rows); i++)
		if (e->row == rows[i].row)
			return rows[i].kind;
	return e->row->mcp_result ? TGI_CC_MCP : TGI_CC_OTHER;
}

char *tgi_cc_name(tgi_cc_kind kind, const char *tool)
{
	static const char *const names[] = {
		[TGI_CC_READ] = "Read", [TGI_CC_LIST] = "Glob", [TGI_CC_SEARCH] = "Grep",
		[TGI_CC_WRITE] = "Write", [TGI_CC_PATCH] = "Edit", [TGI_CC_SHELL] = "Bash",
	};
	if (kind == TGI_CC_MCP) {
		size_t n = strlen(tool) + 6;
		char *s = tgi_xmalloc(n);
		snprintf(s, n, "mcp__%s", tool);   /* "server__tool" */
		return s;
	}
	if (kind == TGI_CC_OTHER || kind >= TGI_ARRAY_LEN(names) || !names[kind])
		return tgi_strdup(tool ? tool : "");
	return tgi_strdup(names[kind]);
}

/* ---- paths ---- */

static json_t *text(const char *s)
{
	return tgi_json_text(s, strlen(s));
}

/* ws + "/" + rel as one absolute path with "." and ".." taken out (as
 * text: nothing is resolved); rel absolute is taken as it is.  Caller
 * frees. */
static char *abs_path(const char *ws, const char *rel)
{
	size_t cap = strlen(ws) + strlen(rel) + 3;
	char *joined = tgi_xmalloc(cap), *out = tgi_xmalloc(cap);
	if (rel[0] == '/')
		snprintf(joined, cap, "%s", rel);
	else
		snprintf(joined, cap, "%s/%s", ws, rel);
	size_t j = 0;
	for (size_t i = 0; joined[i];) {
		size_t start = i;
		while (joined[i] && joined[i] != '/')
			i++;
		size_t n = i - start;
		if (joined[i])
			i++;
		if (n == 0 || (n == 1 && joined[start] == '.'))
			continue;
		if (n == 2 && joined[start] == '.' && joined[start + 1] == '.') {
			while (j && out[j - 1] != '/')
				j--;
			if (j)
				j--;              /* the '/' before it */
			continue;
		}
		out[j++] = '/';
		memcpy(out + j, joined + start, n);
		j += n;
	}
	if (!j)
		out[j++] = '/';
	out[j] = '\0';
	free(joined);
	return out;
}

/* A path argument as Claude Code gives it: a string made absolute, any
 * other JSON as it is (a call that failed validation, seen by an
 * after-hook). */
static json_t *path_value(const char *ws, const json_t *v)
{
	if (!json_is_string(v))
		return json_deep_copy(v);
	char *p = abs_path(ws, json_string_value(v));
	json_t *s = text(p);
	free(p);
	return s;
}

/* A file_path or path from a hook back into a workspace path: inside the
 * workspace relative to it ("." for the workspace itself); anything else
 * as it is, for validate to refuse or take. */
static json_t *path_back(const char *ws, const json_t *v)
{
	if (!json_is_string(v))
		return json_deep_copy(v);
	const char *s = json_string_value(v);
	size_t n = strlen(ws);
	if (s[0] == '/') {
		char *norm = abs_path(ws, s);
		json_t *r = NULL;
		if (!strcmp(norm, ws))
			r = json_string(".");
		else if (!strncmp(norm, ws, n) && norm[n] == '/')
			r = text(norm + n + 1);
		free(norm);
		if (r)
			return r;
	}
	return json_deep_copy(v);
}

/* ---- building runs ---- */

static void push(tgi_cc_runs *r, const char *name, json_t *input, char *cwd)
{
	r->v = tgi_xrealloc(r->v, (r->n + 1) * sizeof *r->v);
	r->v[r->n++] = (tgi_cc_run){.name = tgi_strdup(name), .input = input, .cwd = cwd};
}

/* The run itself, and with ws_fd a second one under the path file_path
 * (at key) resolves to, when that is another path inside the workspace. */
static void push_path(tgi_cc_runs *r, const char *name, json_t *input, const char *key,
                      const char *rel, const char *ws, int ws_fd)
{
	char real[PATH_MAX];
	json_t *second = NULL;
	if (ws_fd >= 0 && rel && rel[0] != '/' && tgi_path_resolve(ws_fd, rel, real, sizeof real) == 0) {
		char *a = abs_path(ws, rel), *b = abs_path(ws, real);
		if (strcmp(a, b)) {
			second = json_deep_copy(input);
			json_object_set_new(second, key, text(b));
		}
		free(a);
		free(b);
	}
	push(r, name, input, NULL);
	if (second)
		push(r, name, second, NULL);
}

static const char *str_arg(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

static void copy_key(json_t *to, const char *to_key, const json_t *from, const char *from_key)
{
	json_t *v = json_object_get(from, from_key);
	if (v)
		json_object_set_new(to, to_key, json_deep_copy(v));
}

/* A patch's lines, each ended by "\n" (end_last) or joined by it. */
static void lines_into(tgi_buf *b, const tgi_patch_line *l, size_t n, int end_last)
{
	for (size_t i = 0; i < n; i++) {
		tgi_buf_append(b, l[i].s, l[i].len);
		if (end_last || i + 1 < n)
			tgi_buf_puts(b, "\n");
	}
}

static json_t *buf_string(tgi_buf *b)
{
	json_t *s = tgi_json_text(b->p ? b->p : "", b->p ? b->len : 0);
	tgi_buf_free(b);
	return s;
}

/* An updated (moved, deleted) file as Claude Code's Edit: the lines its
 * chunks replace and the lines they put there, chunk after chunk. */
static json_t *edit_input(const char *ws, const char *path, const tgi_patch_op *op)
{
	tgi_buf o, n;
	tgi_buf_init(&o, TGI_PATCH_MAX);
	tgi_buf_init(&n, TGI_PATCH_MAX);
	for (size_t i = 0; i < op->nchunks; i++) {
		const tgi_patch_chunk *ch = &op->chunks[i];
		if (i && ch->nold)
			tgi_buf_puts(&o, "\n");
		if (i && ch->nnew)
			tgi_buf_puts(&n, "\n");
		lines_into(&o, ch->old, ch->nold, 0);
		lines_into(&n, ch->new, ch->nnew, 0);
	}
	char *fp = abs_path(ws, path);
	json_t *in = json_object();
	json_object_set_new(in, "file_path", text(fp));
	json_object_set_new(in, "old_string", buf_string(&o));
	json_object_set_new(in, "new_string", buf_string(&n));
	json_object_set_new(in, "replace_all", json_false());
	free(fp);
	return in;
}

static void patch_runs(tgi_cc_runs *r, const json_t *args, const char *ws, int ws_fd)
{
	const json_t *pv = json_object_get(args, "patch");
	tgi_patch *p = NULL;
	char err[256];
	if (!json_is_string(pv) ||
	    tgi_patch_parse(json_string_value(pv), json_string_length(pv), &p, err, sizeof err) < 0 ||
	    !p->nops) {
		/* only an after-hook sees a patch that does not parse, and one that names
		 * no file is refused when it runs: nothing is touched, one run says so */
		tgi_patch_free(p);
		push(r, "Edit", json_object(), NULL);
		return;
	}
	for (size_t i = 0; i < p->nops; i++) {
		const tgi_patch_op *op = &p->ops[i];
		if (op->kind == TGI_PATCH_ADD) {
			tgi_buf c;
			tgi_buf_init(&c, TGI_PATCH_MAX);
			lines_into(&c, op->add, op->nadd, 1);
			char *fp = abs_path(ws, op->path);
			json_t *in = json_object();
			json_object_set_new(in, "file_path", text(fp));
			json_object_set_new(in, "content", buf_string(&c));
			free(fp);
			push_path(r, "Write", in, "file_path", op->path, ws, ws_fd);
		} else {
			push_path(r, "Edit", edit_input(ws, op->path, op), "file_path", op->path, ws, ws_fd);
			if (op->move_to)
				push_path(r, "Edit", edit_input(ws, op->move_to, op), "file_path", op->move_to,
				          ws, ws_fd);
		}
	}
	tgi_patch_free(p);
}

/* A word as a POSIX shell reads it back: as it is when it holds only
 * characters no shell treats specially, else in single quotes. */
static void quote_word(tgi_buf *b, const char *w)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                           "0123456789_@%+=:,./-";
	if (*w && strspn(w, safe) == strlen(w)) {
		tgi_buf_puts(b, w);
		return;
	}
	tgi_buf_puts(b, "'");
	for (const char *s = w; *s; s++)
		tgi_buf_puts(b, *s == '\'' ? "'\\''" : (char[]){*s, 0});
	tgi_buf_puts(b, "'");
}

/* The shell tool's command as one command line (caller frees), or NULL
 * when it is neither a string nor an array of strings. */
static char *command_line(const json_t *cmd)
{
	if (json_is_string(cmd))
		return tgi_strdup(json_string_value(cmd));
	if (!json_is_array(cmd))
		return NULL;
	tgi_buf b;
	tgi_buf_init(&b, (size_t)1 << 30);
	size_t i;
	json_t *w;
	json_array_foreach(cmd, i, w) {
		if (!json_is_string(w)) {
			tgi_buf_free(&b);
			return NULL;
		}
		if (i)
			tgi_buf_puts(&b, " ");
		quote_word(&b, json_string_value(w));
	}
	char *s = tgi_buf_steal(&b);
	return s ? s : tgi_strdup("");
}

static void shell_run(tgi_cc_runs *r, const json_t *args, const char *ws)
{
	json_t *in = json_object();
	const json_t *cmd = json_object_get(args, "command");
	char *line = command_line(cmd);
	if (line)
		json_object_set_new(in, "command", tgi_json_text(line, strlen(line)));
	else if (cmd)
		json_object_set_new(in, "command", json_deep_copy(cmd));
	free(line);
	json_t *t = json_object_get(args, "timeout_s");
	if (json_is_integer(t))
		json_object_set_new(in, "timeout", json_integer(json_integer_value(t) * 1000));
	copy_key(in, "env", args, "env");
	const char *wd = str_arg(args, "workdir");
	push(r, "Bash", in, wd ? abs_path(ws, wd) : NULL);
}

void tgi_cc_runs_make(tgi_cc_kind kind, const char *tool, const json_t *args, const char *ws,
                      int ws_fd, tgi_cc_runs *out)
{
	memset(out, 0, sizeof *out);
	const char *path = str_arg(args, "path");
	json_t *in;
	switch (kind) {
	case TGI_CC_READ:
		in = json_object();
		json_object_set_new(in, "file_path", path_value(ws, json_object_get(args, "path")));
		copy_key(in, "offset", args, "offset");
		copy_key(in, "limit", args, "limit");
		push_path(out, "Read", in, "file_path", path, ws, ws_fd);
		return;
	case TGI_CC_WRITE:
		in = json_object();
		json_object_set_new(in, "file_path", path_value(ws, json_object_get(args, "path")));
		copy_key(in, "content", args, "content");
		push_path(out, "Write", in, "file_path", path, ws, ws_fd);
		return;
	case TGI_CC_LIST: {
		json_t *d = json_object_get(args, "depth");
		int deep = json_is_integer(d) && json_integer_value(d) > 1;
		json_t *p = json_object_get(args, "path");
		in = json_object();
		json_object_set_new(in, "pattern", json_string(deep ? "**/*" : "*"));
		json_object_set_new(in, "path", p ? path_value(ws, p) : text(ws));
		push_path(out, "Glob", in, "path", p ? path : ".", ws, ws_fd);
		return;
	}
	case TGI_CC_SEARCH: {
		json_t *p = json_object_get(args, "path");
		in = json_object();
		copy_key(in, "pattern", args, "pattern");
		json_object_set_new(in, "path", p ? path_value(ws, p) : text(ws));
		copy_key(in, "glob", args, "glob");
		json_object_set_new(in, "output_mode", json_string("content"));
		json_object_set_new(in, "-n", json_true());
		copy_key(in, "head_limit", args, "limit");
		push_path(out, "Grep", in, "path", p ? path : ".", ws, ws_fd);
		return;
	}
	case TGI_CC_PATCH:
		patch_runs(out, args, ws, ws_fd);
		return;
	case TGI_CC_SHELL:
		shell_run(out, args, ws);
		return;
	case TGI_CC_MCP:
	case TGI_CC_OTHER:
		break;
	}
	char *name = tgi_cc_name(kind, tool ? tool : "");
	push(out, name, json_is_object(args) ? json_deep_copy(args) : json_object(), NULL);
	free(name);
}

void tgi_cc_runs_free(tgi_cc_runs *r)
{
	for (size_t i = 0; r && i < r->n; i++) {
		free(r->v[i].name);
		json_decref(r->v[i].input);
		free(r->v[i].cwd);
	}
	if (r) {
		free(r->v);
		r->v = NULL;
		r->n = 0;
	}
}

/* ---- updatedInput back into arguments ---- */

typedef struct back {
	const char *tool;     /* toolgate's tool, for sentences */
	const json_t *updated;
	char  *why;
	size_t cap;
} back;

static int refuse(back *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(back *b, const char *fmt, ...)
{
	char raw[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	tgi_sanitize(b->why, b->cap, raw);
	return -1;
}

/* Every key of updatedInput is one of keys (NULL-terminated). */
static int only_keys(back *b, const char *const *keys)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)b->updated, key, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], key))
			i++;
		if (keys[i])
			continue;
		char clean[64];
		tgi_sanitize_n(clean, sizeof clean, key, strlen(key), 40);
		return refuse(b, "updatedInput has \"%s\", which %s has no argument for", clean,
		              b->tool);
	}
	return 0;
}

/* updatedInput's file_path, back into o's path. */
static int file_path_back(back *b, json_t *o, const char *ws)
{
	json_t *fp = json_object_get(b->updated, "file_path");
	if (!fp)
		return refuse(b, "updatedInput has no \"file_path\"");
	json_object_set_new(o, "path", path_back(ws, fp));
	return 0;
}

/* updatedInput[key] must be absent or what the run gave. */
static int same_as_run(back *b, const tgi_cc_run *run, const char *key)
{
	json_t *v = json_object_get(b->updated, key);
	if (!v || json_equal(v, json_object_get(run->input, key)))
		return 0;
	return refuse(b, "updatedInput changes \"%s\", which %s cannot take", key, b->tool);
}

static void move_key(json_t *to, const char *to_key, const json_t *from, const char *from_key)
{
	json_t *v = json_object_get(from, from_key);
	if (v)
		json_object_set_new(to, to_key, json_deep_copy(v));
}

static int shell_back(back *b, const json_t *args, const tgi_cc_run *run, json_t *out)
{
	static const char *const keys[] = {"command", "timeout", "description", "env",
	                                   "run_in_background", NULL};
	const json_t *u = b->updated;
	if (only_keys(b, keys) < 0)
		return -1;
	json_t *cmd = json_object_get(u, "command");
	if (!json_is_string(cmd))
		return refuse(b, "updatedInput has no \"command\" string");
	json_t *bg = json_object_get(u, "run_in_background");
	if (bg && !json_is_false(bg))
		return refuse(b, "updatedInput asks to run the command in the background, which "
		              "shell cannot do");
	/* the command as the run gave it: the call's own (an argv stays one) */
	if (json_equal(cmd, json_object_get(run->input, "command")))
		move_key(out, "command", args, "command");
	else
		json_object_set_new(out, "command", json_deep_copy(cmd));
	json_t *t = json_object_get(u, "timeout");
	if (t && !json_is_null(t)) {
		if (!json_is_number(t) || json_number_value(t) <= 0 || json_number_value(t) > 1e12)
			return refuse(b, "updatedInput's \"timeout\" is not a number of milliseconds");
		json_object_set_new(out, "timeout_s",
		                    json_integer((json_int_t)ceil(json_number_value(t) / 1000)));
	}
	/* what Claude Code has no words for stays the call's */
	move_key(out, "workdir", args, "workdir");
	move_key(out, "env", json_object_get(u, "env") ? u : args, "env");
	return 0;
}

int tgi_cc_args_back(tgi_cc_kind kind, const json_t *args, const tgi_cc_run *run,
                     const json_t *updated, const char *ws, json_t **out, char *why, size_t cap)
{
	static const char *const names[] = {
		[TGI_CC_READ] = "read_file", [TGI_CC_LIST] = "list_dir",
		[TGI_CC_SEARCH] = "search_files", [TGI_CC_WRITE] = "write_file",
		[TGI_CC_PATCH] = "apply_patch", [TGI_CC_SHELL] = "shell",
	};
	back b = {.updated = updated, .why = why, .cap = cap,
	          .tool = kind < TGI_ARRAY_LEN(names) && names[kind] ? names[kind] : "the tool"};
	*out = NULL;
	if (cap)
		why[0] = '\0';
	if (!json_is_object(updated))
		return refuse(&b, "updatedInput is not an object");
	if (json_equal(updated, run->input))
		return 0;
	json_t *o = json_object();
	int rc = 0;
	switch (kind) {
	case TGI_CC_READ: {
		static const char *const keys[] = {"file_path", "offset", "limit", NULL};
		if ((rc = only_keys(&b, keys)) < 0 || (rc = file_path_back(&b, o, ws)) < 0)
			break;
		move_key(o, "offset", updated, "offset");
		move_key(o, "limit", updated, "limit");
		break;
	}
	case TGI_CC_WRITE: {
		static const char *const keys[] = {"file_path", "content", NULL};
		if ((rc = only_keys(&b, keys)) < 0 || (rc = file_path_back(&b, o, ws)) < 0)
			break;
		move_key(o, "content", updated, "content");
		break;
	}
	case TGI_CC_LIST: {
		static const char *const keys[] = {"pattern", "path", NULL};
		if ((rc = only_keys(&b, keys)) < 0 || (rc = same_as_run(&b, run, "pattern")) < 0)
			break;
		json_t *p = json_object_get(updated, "path");
		json_object_set_new(o, "path", p ? path_back(ws, p) : json_string("."));
		move_key(o, "depth", args, "depth");
		move_key(o, "limit", args, "limit");
		break;
	}
	case TGI_CC_SEARCH: {
		static const char *const keys[] = {"pattern", "path", "glob", "output_mode", "-n",
		                                   "head_limit", NULL};
		if ((rc = only_keys(&b, keys)) < 0 || (rc = same_as_run(&b, run, "output_mode")) < 0 ||
		    (rc = same_as_run(&b, run, "-n")) < 0)
			break;
		move_key(o, "pattern", updated, "pattern");
		json_t *p = json_object_get(updated, "path");
		if (p)
			json_object_set_new(o, "path", path_back(ws, p));
		move_key(o, "glob", updated, "glob");
		move_key(o, "limit", updated, "head_limit");
		break;
	}
	case TGI_CC_PATCH:
		rc = refuse(&b, "updatedInput rewrites %s of a patch; a patch cannot be rewritten "
		            "one file at a time", run->name);
		break;
	case TGI_CC_SHELL:
		rc = shell_back(&b, args, run, o);
		break;
	case TGI_CC_MCP:
	case TGI_CC_OTHER:
		json_object_update(o, (json_t *)updated);
		break;
	}
	if (rc < 0) {
		json_decref(o);
		return -1;
	}
	*out = o;
	return 0;
}
