/*
 * readmask.c — read rules inside the sandbox: the workspace paths that
 * deny rules for reading name (and ask rules, for a call no one approved),
 * as the absolute paths a sandbox hides (tgi_sb_spec.mask), so that what
 * read_file may not read, `python3 -c "open('.env')"` cannot read either.
 *
 * The rules read are those whose tool part names read_file (`read_file(…)`,
 * `*(…)`, Claude Code's `Read(…)`: policy/rules.c), global and of the
 * principal's roles.  Each path glob becomes:
 *   - a literal path (`./.env`, `secrets/key`): that path, when it exists;
 *   - a literal directory and a final `**` (`./secrets/` `**`): the directory
 *     itself, hidden whole (nothing made in it later shows either);
 *   - anything else (`**` `/.env`, `.env`, `*.pem`, `src/` `*.key`): every entry
 *     a bounded walk below its literal leading directory finds
 *     (exec/sbmask.h; .git and .toolgate are not entered; cached between
 *     calls, in memory and in the state directory, by the directories'
 *     inodes, mtimes and ctimes; a few changed directories are read again
 *     rather than all).
 * What a glob matches that is created while the command runs is not hidden
 * (a mount needs a path that exists when the sandbox is set up); the next
 * call hides it.  Rules a sandbox cannot turn into paths are said in
 * `toolgate doctor` (tgi_read_masks_report): absolute patterns outside the
 * workspace (`~/.aws/…`; one inside it was made workspace-relative when the
 * rules were compiled), a bare `read_file` rule (it hides the tool, not a
 * path).
 *
 * Owns: turning rules into mask paths.  Must not: decide a call (decide.c
 * judges what a command names), or mount anything (the sandbox does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gate/gate.h"
#include "exec/sandbox.h"
#include "exec/sbmask.h"
#include "util/util.h"

typedef struct globset {
	tgi_strv globs, texts;   /* path globs of the rules, and the rules as written */
	size_t   bare;           /* rules without a specifier */
} globset;

static void collect(const tgi_ruleset *rs, tgi_rule_kind kind, globset *gs)
{
	gs->bare += tgi_ruleset_path_globs(rs, kind, "read_file", &gs->globs, &gs->texts);
}

/* The read rules that apply: global, then p's roles (p NULL: every role's,
 * the strictest reading for what serves every principal). */
static void gather(tg_gate *g, const tgi_principal_cfg *p, int with_ask, globset *gs)
{
	tgi_rule_kind kinds[2] = {TGI_RULE_DENY, TGI_RULE_ASK};
	for (int k = 0; k < 1 + (with_ask != 0); k++) {
		collect(g->rules, kinds[k], gs);
		for (size_t j = 0; j < g->cfg->nroles; j++) {
			int mine = !p;
			for (size_t i = 0; p && i < p->roles.n && !mine; i++)
				mine = !strcmp(g->cfg->roles[j].name, p->roles.v[i]);
			if (mine)
				collect(g->role_rules[j], kinds[k], gs);
		}
	}
}

static void globset_free(globset *gs)
{
	tgi_strv_free(&gs->globs);
	tgi_strv_free(&gs->texts);
}

typedef struct walk_arg {
	const tgi_strv *globs;   /* the ones a walk finds */
} walk_arg;

static int pick(void *arg, const char *rel, int is_dir)
{
	const walk_arg *a = arg;
	(void)is_dir;
	for (size_t i = 0; i < a->globs->n; i++)
		if (tgi_path_glob(a->globs->v[i], rel))
			return 1;
	return 0;
}

static void push_unique(tgi_strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return;
	tgi_strv_push(v, tgi_strdup(s));
}

/* Does another of starts hold starts[self] (the root holds all)? */
static int under_other(const tgi_strv *starts, size_t self)
{
	const char *p = starts->v[self];
	for (size_t i = 0; i < starts->n; i++) {
		const char *s = starts->v[i];
		size_t n = strlen(s);
		if (i != self && (!n || (!strncmp(p, s, n) && p[n] == '/')))
			return 1;
	}
	return 0;
}

static int masks_of(tg_gate *g, const globset *gs, tgi_strv *out, tgi_sbmask_stats *stats,
                    char *err, size_t errlen)
{
	const char *ws = g->cfg->workspace;
	tgi_strv rels = {0}, walked = {0}, starts = {0};
	char base[PATH_MAX], abs[PATH_MAX * 2];
	struct stat st;
	int rc = 0;
	if (stats)
		memset(stats, 0, sizeof *stats);
	for (size_t i = 0; i < gs->globs.n; i++) {
		int r = tgi_path_glob_base(gs->globs.v[i], base, sizeof base);
		if (r < 0)
			continue;                      /* absolute: not the workspace's */
		if (r > 0) {                           /* a literal path, or a directory whole */
			/* (the whole workspace is not hidden: decide.c refuses its reads) */
			if (base[0] && fstatat(g->ws_fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
				push_unique(&rels, base);
			continue;
		}
		tgi_strv_push(&walked, tgi_strdup(gs->globs.v[i]));
		push_unique(&starts, base);
	}
	if (walked.n) {
		tgi_strv kept = {0};
		tgi_buf key;
		tgi_buf_init(&key, 1u << 20);
		for (size_t i = 0; i < starts.n; i++)
			if (!under_other(&starts, i))
				tgi_strv_push(&kept, tgi_strdup(starts.v[i]));
		for (size_t i = 0; i < walked.n; i++)
			tgi_buf_printf(&key, "%s\n", walked.v[i]);
		walk_arg wa = {&walked};
		for (size_t i = 0; i < kept.n; i++)
			tgi_buf_printf(&key, "start %s\n", kept.v[i]);
		rc = tgi_sbmask_find(ws, (const char *const *)kept.v, kept.n, pick, &wa,
		                     key.p ? key.p : "", g->state_fd, &rels, stats, err, errlen);
		tgi_buf_free(&key);
		tgi_strv_free(&kept);
	}
	size_t first = out->n;
	for (size_t i = 0; rc == 0 && i < rels.n; i++) {
		int dup = 0;
		for (size_t k = 0; k < i && !dup; k++)     /* a literal rule and a walk's find */
			dup = !strcmp(rels.v[k], rels.v[i]);
		if (dup)
			continue;
		if (out->n - first >= TGI_READ_MASKS_MAX) {
			tgi_snprintf(err, errlen, "the read rules name more than %d paths in the "
			             "workspace, more than a sandbox can hide one by one; name their "
			             "directories instead (read_file(./dir/**))", TGI_READ_MASKS_MAX);
			rc = -1;
			break;
		}
		tgi_snprintf(abs, sizeof abs, "%s/%s", ws, rels.v[i]);
		tgi_strv_push(out, tgi_strdup(abs));
	}
	tgi_strv_free(&rels);
	tgi_strv_free(&walked);
	tgi_strv_free(&starts);
	return rc;
}

int tgi_read_masks_for(tg_gate *g, const tgi_principal_cfg *p, int with_ask, tgi_strv *out,
                       char *err, size_t errlen)
{
	globset gs = {0};
	gather(g, p, with_ask, &gs);
	int rc = gs.globs.n ? masks_of(g, &gs, out, NULL, err, errlen) : 0;
	globset_free(&gs);
	/* the machine key's directory, when it is in the workspace: always */
	if (rc == 0 && g->key_dir)
		tgi_strv_push(out, tgi_strdup(g->key_dir));
	return rc;
}

int tgi_read_masks(const tgi_exec_ctx *ctx, tgi_strv *out, char *err, size_t errlen)
{
	const tgi_call *c = ctx->policy;
	/* a person approved this call: what ask rules name is theirs to show */
	return tgi_read_masks_for(c->g, c->principal, c->decision != TGI_ASK, out, err, errlen);
}

json_t *tgi_read_masks_report(tg_gate *g, tgi_strv *out)
{
	globset gs = {0};
	tgi_strv masks = {0};
	tgi_sbmask_stats stats;
	char err[512] = "", base[PATH_MAX];
	gather(g, NULL, 1, &gs);
	json_t *o = json_object(), *hidden = json_array(), *not_hidden = json_array();
	int rc = gs.globs.n ? masks_of(g, &gs, &masks, &stats, err, sizeof err) : 0;
	for (size_t i = 0; i < masks.n; i++)
		json_array_append_new(hidden, json_string(masks.v[i]));
	for (size_t i = 0; i < gs.globs.n; i++)
		if (tgi_path_glob_base(gs.globs.v[i], base, sizeof base) < 0)
			json_array_append_new(not_hidden, json_pack("{s:s, s:s}", "rule", gs.texts.v[i],
			                      "why", "an absolute pattern: read rules judge workspace "
			                      "paths, and the sandbox shows no path outside the "
			                      "workspace that the profile does not add"));
	if (gs.bare)
		json_array_append_new(not_hidden, json_pack("{s:s, s:s}", "rule", "read_file",
		                      "why", "a rule without a path hides the tool, not files"));
	if (tgi_sandbox_probe()->backend == TGI_SB_LANDLOCK)
		json_object_set_new(o, "enforced", json_string(
			"no: under Landlock nothing inside the workspace can be hidden; only policy's "
			"judgement of the files read-only commands name holds"));
	json_object_set_new(o, "hidden", hidden);
	json_object_set_new(o, "not_hidden", not_hidden);
	if (rc < 0)
		json_object_set_new(o, "error", json_string(err));
	else if (gs.globs.n)
		json_object_set_new(o, "walk", json_pack("{s:I, s:I, s:f, s:s}", "dirs",
		                    (json_int_t)stats.dirs, "entries", (json_int_t)stats.entries,
		                    "ms", stats.ms, "cached", stats.cached == 3 ? "refreshed" :
		                    stats.cached == 2 ? "file" : stats.cached ? "memory" : "no"));
	json_object_set_new(o, "created_during_a_run", json_string(
		"a file a glob rule names that a command creates is not hidden during that run; "
		"the next call hides it"));
	for (size_t i = 0; out && i < masks.n; i++)
		tgi_strv_push(out, tgi_strdup(masks.v[i]));
	tgi_strv_free(&masks);
	globset_free(&gs);
	return o;
}
