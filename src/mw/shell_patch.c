/*
 * shell_patch.c — Codex's apply_patch through the shell (mw.h, part.h): a step
 * between decode and validate, in every chain; it acts only on a shell
 * call that is one of the forms Codex intercepts.
 *
 * Codex's models edit files by running apply_patch as a command, and Codex
 * runs that as its patch tool instead of a program.  So does the gate: a
 * shell call whose command is
 *   ["apply_patch", PATCH]  (or "applypatch"),
 *   ["bash"|"sh"|"zsh"|"dash", "-c"|"-lc", SCRIPT], or the string SCRIPT,
 * where SCRIPT is, alone, `apply_patch <<'EOF'` (the delimiter quoted or
 * not), the patch, and `EOF` -- optionally after `cd DIR &&` -- becomes an
 * apply_patch call with that patch before anything judges it: validated,
 * decided, approved, run and recorded as apply_patch (its tool column,
 * rules, hooks, rate limits), never as a command.  The shell's workdir and
 * the cd's directory are where the patch's relative paths start: they are
 * written into its headers.  The trace says what was rewritten: {stage:
 * "shell_patch", from: "shell", workdir}.  Anything else is left as the
 * shell call it is.
 *
 * Owns: recognising the forms and the rewrite.  Must not: judge the patch
 * (validate and decide do, as for any apply_patch call).  Stops with
 * `invalid` when the profile offers no apply_patch.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"
#include "patch/patch.h"
#include "util/util.h"

#define DIR_MAX 4096

static int is_name(const char *s, size_t n)
{
	return (n == 11 && !memcmp(s, "apply_patch", 11)) || (n == 10 && !memcmp(s, "applypatch", 10));
}

static const char *blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* A character of a bare word (no quoting, expansion or operator). */
static int word_char(char c)
{
	return (unsigned char)c > ' ' && !strchr(";&|<>()'\"$`\\#*?[]{}~=", c) && c != 0x7f;
}

/* One word at p: bare, 'single-quoted' or "double-quoted" without $, `
 * or \ inside (so that no shell would read it otherwise).  The word's
 * text into *w, *wn; returns the end, or NULL. */
static const char *word(const char *p, const char *end, const char **w, size_t *wn)
{
	if (p < end && (*p == '\'' || *p == '"')) {
		char q = *p++;
		const char *s = p;
		while (p < end && *p != q && *p != '\n' && (q == '\'' || !strchr("$`\\", *p)))
			p++;
		if (p >= end || *p != q)
			return NULL;
		*w = s;
		*wn = (size_t)(p - s);
		return p + 1;
	}
	const char *s = p;
	while (p < end && word_char(*p))
		p++;
	*w = s;
	*wn = (size_t)(p - s);
	return p > s ? p : NULL;
}

/* A line of exactly n bytes equal to d at p (ending at '\n' or end)? */
static int line_is(const char *p, const char *end, const char *d, size_t n)
{
	return (size_t)(end - p) >= n && !memcmp(p, d, n) && (p + n == end || p[n] == '\n');
}

/*
 * SCRIPT alone: [cd DIR &&] apply_patch <<DELIM, the body, DELIM, nothing
 * after but blank space.  1 with the body (up to the delimiter's line, its
 * last newline kept) and the cd's directory (NULL: none); else 0.
 */
static int heredoc(const char *s, size_t len, const char **body, size_t *blen, const char **dir,
                   size_t *dlen)
{
	const char *p = s, *end = s + len, *w;
	size_t wn;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
		p++;
	*dir = NULL;
	*dlen = 0;
	if (!(p = word(p, end, &w, &wn)))
		return 0;
	if (wn == 2 && !memcmp(w, "cd", 2) && p < end && (*p == ' ' || *p == '\t')) {
		p = blanks(p, end);
		if (!(p = word(p, end, dir, dlen)) || !*dlen)
			return 0;
		p = blanks(p, end);
		if (end - p < 2 || memcmp(p, "&&", 2))
			return 0;
		p = blanks(p + 2, end);
		if (!(p = word(p, end, &w, &wn)))
			return 0;
	}
	if (!is_name(w, wn))
		return 0;
	p = blanks(p, end);
	if (end - p < 2 || memcmp(p, "<<", 2) || (p + 2 < end && (p[2] == '-' || p[2] == '<')))
		return 0;
	p = blanks(p + 2, end);
	const char *d;
	size_t dn;
	if (!(p = word(p, end, &d, &dn)) || !dn)
		return 0;
	p = blanks(p, end);
	if (p >= end || *p != '\n')
		return 0;
	const char *b = ++p;
	for (;;) {                           /* the body's lines, up to the delimiter's */
		if (line_is(p, end, d, dn))
			break;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return 0;
		p = nl + 1;
	}
	*body = b;
	*blen = (size_t)(p - b);
	for (p += dn; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n')
			return 0;
	return 1;
}

static const char *base_name(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash ? slash + 1 : s;
}

int tgi_shell_patch_of(const json_t *args, char **patch, size_t *len, char **dir)
{
	const json_t *cmd = json_object_get(args, "command");
	const char *script = NULL, *body, *d;
	size_t slen = 0, blen, dlen;
	*patch = *dir = NULL;
	*len = 0;
	if (json_is_array(cmd) && json_array_size(cmd) == 2 &&
	    json_is_string(json_array_get(cmd, 0)) && json_is_string(json_array_get(cmd, 1))) {
		const json_t *name = json_array_get(cmd, 0), *p = json_array_get(cmd, 1);
		if (!is_name(json_string_value(name), json_string_length(name)))
			return 0;
		*len = json_string_length(p);
		*patch = tgi_xmalloc(*len + 1);
		memcpy(*patch, json_string_value(p), *len + 1);
		return 1;
	}
	if (json_is_string(cmd)) {
		script = json_string_value(cmd);
		slen = json_string_length(cmd);
	} else if (json_is_array(cmd) && json_array_size(cmd) == 3) {
		const char *sh = json_string_value(json_array_get(cmd, 0));
		const char *flag = json_string_value(json_array_get(cmd, 1));
		const char *b = sh ? base_name(sh) : "";
		if (!flag || (strcmp(b, "bash") && strcmp(b, "sh") && strcmp(b, "zsh") &&
		              strcmp(b, "dash")) || (strcmp(flag, "-c") && strcmp(flag, "-lc")))
			return 0;
		script = json_string_value(json_array_get(cmd, 2));
		slen = json_string_length(json_array_get(cmd, 2));
	}
	if (!script || !heredoc(script, slen, &body, &blen, &d, &dlen))
		return 0;
	*patch = tgi_strndup(body, blen);
	*len = blen;
	if (d)
		*dir = tgi_strndup(d, dlen);
	return 1;
}

/* The patch's relative paths, from dir. */
typedef struct from_dir {
	const char *dir;
	int         failed;   /* a path that could not be moved: the call is refused */
} from_dir;

static int prefix_path(void *ud, const char *path, size_t len, char *out, size_t cap)
{
	from_dir *f = ud;
	if (len && path[0] == '/')
		return 0;
	size_t dn = strlen(f->dir);
	if (dn + 1 + len + 1 > cap || memchr(path, '\n', len)) {
		f->failed = 1;
		return 0;
	}
	memcpy(out, f->dir, dn);
	out[dn] = '/';
	memcpy(out + dn + 1, path, len);
	out[dn + 1 + len] = '\0';
	return 1;
}

/* Where the patch's paths start: the shell's workdir, then the cd's
 * directory (an absolute one replaces it); "" for the workspace's root.
 * -1 when the directory is not one a path may name. */
static int start_dir(const char *workdir, const char *cd, char *out, size_t cap)
{
	const char *parts[2] = {workdir, cd};
	out[0] = '\0';
	for (size_t i = 0; i < 2; i++) {
		const char *p = parts[i];
		if (!p || !*p || !strcmp(p, "."))
			continue;
		for (const char *c = p; *c; c++)
			if ((unsigned char)*c < 0x20)
				return -1;
		size_t n = strlen(out);
		if (p[0] == '/' || !n)
			n = 0;
		if (n + strlen(p) + 2 > cap)
			return -1;
		tgi_snprintf(out + n, cap - n, "%s%s", n ? "/" : "", p);
	}
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

static tgi_verdict shell_patch_step(tgi_call *c, void *state)
{
	tg_gate *g = c->g;
	char *patch, *cd, dir[DIR_MAX];
	size_t len;
	if (c->entry->row != &tgi_tool_shell || !tgi_shell_patch_of(c->args, &patch, &len, &cd))
		return TGI_NEXT;
	int bad = start_dir(json_string_value(json_object_get(c->args, "workdir")), cd, dir,
	                    sizeof dir);
	free(cd);
	const tgi_entry *e = tgi_registry_find(g->reg, tgi_tool_apply_patch.name);
	if (!e || tgi_registry_in_profile(g->cfg, g->profile, e) != 1) {
		free(patch);
		return tgi_stop(c, TG_INVALID, TG_ERR_UNKNOWN_TOOL, "/command",
		                "this command is apply_patch, which runs as the apply_patch tool, and "
		                "that tool is not offered here; nothing was run");
	}
	from_dir f = {dir, bad};
	char *moved = NULL;
	size_t movedlen = 0;
	if (!bad && dir[0])
		tgi_patch_map_paths(patch, len, prefix_path, &f, &moved, &movedlen);
	if (f.failed) {
		free(patch);
		free(moved);
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, "/command",
		                "the directory this apply_patch runs in cannot start the patch's paths; "
		                "call apply_patch with paths relative to the workspace");
	}
	json_t *text = moved ? json_stringn(moved, movedlen) : json_stringn(patch, len);
	free(patch);
	free(moved);
	json_t *args = json_object();
	json_object_set_new(args, "patch", text ? text : json_string(""));
	json_decref(c->args);
	c->args = args;
	c->entry = e;
	tgi_snprintf(c->tool, sizeof c->tool, "%s", e->row->name);
	tgi_trace(c, "shell_patch", 1, json_pack("{s:s, s:s}", "from", "shell", "workdir",
	                                         dir[0] ? dir : "."));
	return TGI_NEXT;
}

/* Always on: it acts only on a shell call that is Codex's apply_patch. */
const tgi_part tgi_part_shell_patch = {
	.name = "shell_patch", .after = TGI_PHASE_DECODE, .judge = 1, .step = shell_patch_step,
};
