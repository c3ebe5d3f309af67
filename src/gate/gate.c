/*
 * gate.c — the pipeline driver and the gate's lifetime.
 *
 * tg_call() is a flat list of stages; the first stop exits through the one
 * persist path, which writes exactly one ledger row for every call.
 *
 * Owns: opening and closing a gate (config, registry, rules, workspace fd,
 * state dir, ledger), one call's state, results, the envelope.  Must not:
 * contain stage logic (each stage is its own file).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"
#include "exec/netgate.h"
#include "mcp/bridge.h"
#include "gate/batch.h"
#include "patch/patch.h"
#include "policy/rulecheck.h"
#include "util/fs.h"
#include "util/util.h"

/* ---- the driver ---- */

void tgi_call_begin(tgi_call *c, tg_gate *g, const tg_request *req)
{
	memset(c, 0, sizeof *c);
	c->g = g;
	c->req = req;
	c->stages = json_array();
	c->retry_after_s = -1;
	c->started_ms = tgi_unix_ms();
	c->t0 = tgi_now_ms();
}

/* Make sure the trace names the step that stopped the call. */
static void stopped_at(tgi_call *c, const char *step)
{
	json_t *last = json_array_get(c->stages, json_array_size(c->stages) - 1);
	const char *name = json_string_value(json_object_get(last, "stage"));
	if (!name || strcmp(name, step))
		tgi_trace(c, step, c->status == TG_REPLAYED || c->status == TG_DRY_RUN, NULL);
}

static tgi_verdict run_step(tgi_call *c, const tgi_step *s)
{
	tgi_verdict v = s->stage ? s->stage(c) : s->part(c, s->state);
	if (v == TGI_NEXT)
		return TGI_NEXT;
	/* a stop has set the call's status (tgi_stop, or a replay or dry run's
	 * own): invalid, the zero status, is never set without an error kind */
	assert(c->status != TG_INVALID || c->kind != TG_ERR_NONE);
	stopped_at(c, s->name);
	return TGI_STOP;
}

static tgi_verdict run_steps(tgi_call *c, const tgi_step *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (run_step(c, &s[i]) == TGI_STOP)
			return TGI_STOP;
	return TGI_NEXT;
}

tgi_verdict tgi_call_admit(tgi_call *c)
{
	return run_steps(c, c->g->chain, c->g->nadmit);
}

tgi_verdict tgi_call_run(tgi_call *c)
{
	const tg_gate *g = c->g;
	return run_steps(c, g->chain + g->nadmit, g->nchain - g->nadmit);
}

tg_result *tgi_call_finish(tgi_call *c)
{
	tg_gate *g = c->g;
	for (size_t i = 0; tgi_parts[i]; i++)
		if (g->part_on[i] && tgi_parts[i]->before_persist)
			tgi_parts[i]->before_persist(c, g->part[i]);
	tgi_persist(c);
	if (g->sinks)
		tgi_sinks_emit_call(g->sinks, c);
	for (size_t i = 0; tgi_parts[i]; i++)
		if (g->part_on[i] && tgi_parts[i]->after_persist)
			tgi_parts[i]->after_persist(c, g->part[i]);
	return tgi_call_result(c);
}

/* The steps that judge, up to and with the decide phase: what the call
 * would be told, with nothing kept, run or spent. */
tgi_verdict tgi_call_judge(tgi_call *c)
{
	const tg_gate *g = c->g;
	for (size_t i = 0; i < g->nadmit && g->chain[i].phase <= TGI_PHASE_DECIDE; i++)
		if (g->chain[i].judge && run_step(c, &g->chain[i]) == TGI_STOP)
			return TGI_STOP;
	return TGI_NEXT;
}

void tgi_call_drop(tgi_call *c)
{
	tg_result_free(tgi_call_result(c));
}

tg_status tg_call(tg_gate *g, const tg_request *req, tg_result **out)
{
	tgi_call c;
	tgi_call_begin(&c, g, req);
	if (tgi_call_admit(&c) == TGI_NEXT)
		tgi_call_run(&c);
	*out = tgi_call_finish(&c);
	return tg_result_status(*out);
}

size_t tg_call_batch(tg_gate *g, const tg_request *reqs, size_t n, tg_result **out)
{
	return tgi_batch_run(g, reqs, n, out);
}

/* ---- opening a gate ---- */

/* The execpolicy .rules files, each example checked: a file that does not
 * load stops the gate (an unparseable policy denies nothing it should).
 * A program given by an absolute path is judged by its basename's rules
 * only where it cannot have been planted (hostpath.h). */
static int load_execpolicy(tg_gate *g, char **errmsg)
{
	char err[1024];
	g->execpolicy = tgi_execpolicy_new();
	g->hostpath = tgi_hostpath_for_gate(g->cfg->workspace, g->cfg->sandbox == TGI_SANDBOX_FULL);
	g->ep_resolve = (tgi_ep_resolve){ TGI_EP_TRUSTED, tgi_hostpath_ep, g->hostpath };
	for (size_t i = 0; i < g->cfg->execpolicy.n; i++)
		if (tgi_execpolicy_add_file(g->execpolicy, g->cfg->execpolicy.v[i], err, sizeof err) < 0)
			return tgi_fail(errmsg, "%s", err);
	return 0;
}

/* Apply the caller's overrides (they win over the file). */
static int apply_overrides(tgi_config *cfg, const tg_options *o, char **errmsg)
{
	if (o->mode && tgi_mode_parse(o->mode, &cfg->mode) < 0)
		return tgi_fail(errmsg, "unknown mode \"%s\"; expected default, acceptEdits, plan, "
		                    "bypassPermissions or dryRun", o->mode);
	if (o->approval && tgi_approval_parse(o->approval, &cfg->approval) < 0)
		return tgi_fail(errmsg, "unknown approval policy \"%s\"; expected ask, deny or "
		                    "untrusted", o->approval);
	if (o->profile) {
		free(cfg->profile);
		cfg->profile = tgi_strdup(o->profile);
	}
	if (o->sync_full >= 0)
		cfg->sync_full = o->sync_full;
	if (o->approval_wait_s > 0)
		cfg->approval_wait_s = o->approval_wait_s;
	if (o->max_parallel > 0)
		cfg->max_parallel = o->max_parallel;
	if (o->workspace) {
		char real[PATH_MAX];
		if (!realpath(o->workspace, real))
			return tgi_fail(errmsg, "workspace \"%s\": %s", o->workspace, strerror(errno));
		free(cfg->workspace);
		cfg->workspace = tgi_strdup(real);
		free(cfg->workspace_given);
		cfg->workspace_given = tgi_workspace_spelled(o->workspace, real);
		/* a store that was not given as an absolute path follows the workspace */
		const char *rel = tgi_config_store_given(cfg);
		if (!tgi_store_is_url(rel) && rel[0] != '/') {
			size_t n = strlen(real) + strlen(rel) + 2;
			free(cfg->store);
			cfg->store = tgi_xmalloc(n);
			snprintf(cfg->store, n, "%s/%s", real, rel);
		}
	}
	return 0;
}

/* Add file (absolute, or relative to the workspace) to the protected list
 * when it lies inside the workspace: as given and as resolved. */
static void protect(tg_gate *g, const char *file)
{
	char abs[PATH_MAX * 2], real[PATH_MAX];
	const char *ws = g->cfg->workspace;
	size_t wl = strlen(ws);
	if (!file || !*file)
		return;
	if (file[0] == '/')
		tgi_snprintf(abs, sizeof abs, "%s", file);
	else
		tgi_snprintf(abs, sizeof abs, "%s/%s", ws, file);
	const char *forms[2] = {abs, realpath(abs, real) ? real : NULL};
	for (int i = 0; i < 2; i++) {
		const char *f = forms[i];
		if (!f || strncmp(f, ws, wl) || (wl > 1 && f[wl] != '/'))
			continue;
		const char *rel = f + wl + (wl > 1);
		char text[PATH_MAX], norm[PATH_MAX], err[128];   /* paths are matched as text */
		if (tgi_name_text(rel, strlen(rel), text, sizeof text) < 0 ||
		    tgi_path_check(text, strlen(text), norm, sizeof norm, err, sizeof err) < 0)
			continue;
		g->protected = tgi_xrealloc(g->protected, (g->nprotected + 1) * sizeof *g->protected);
		g->protected[g->nprotected++] = tgi_strdup(norm);
	}
}

/*
 * A patch a crash interrupted is finished before any call runs: rolled
 * back if it had not committed, its backups removed if it had.  Files that
 * may be part-way through a patch are not worked on.  A call whose patch
 * was rolled back applied nothing, so its claim is released (a retry runs
 * again) rather than left an unknown outcome; one rolled forward keeps
 * its claim, an unknown outcome for the operator (its result may not be
 * recorded).  A file the rollback left because it is not the one the
 * patch created is a `patch.rollback.kept` event of the call.
 *
 * The one recovery of patches: `toolgate apply-patch` opens a gate for it
 * (tg_apply_patch), so the files and the ledger are settled the same way
 * whoever starts first.
 */
static int finish_patches(tg_gate *g, char **errmsg)
{
	char err[512], ignored[512];
	tgi_strv undone = {0};
	json_t *kept = json_array();
	int jfd = tgi_patch_journal_open(g->state_fd, err, sizeof err);
	int r = jfd < 0 ? -1 : tgi_patch_recover(g->ws_fd, jfd, &undone, kept, err, sizeof err);
	if (jfd >= 0)
		close(jfd);
	for (size_t i = 0; i < undone.n; i++)   /* an op without a claim has nothing to settle */
		tgi_store_op_resolve(g->store, undone.v[i], 0, ignored, sizeof ignored);
	tgi_strv_free(&undone);
	size_t i;
	json_t *k;
	json_array_foreach(kept, i, k) {
		const char *tx = json_string_value(json_object_get(k, "tx"));
		tgi_gate_event(g, tx && tgi_uuid_ok(tx) ? tx : NULL, "patch.rollback.kept", NULL, k,
		               ignored, sizeof ignored);
	}
	if (json_array_size(kept))
		g->patch_kept = kept;
	else
		json_decref(kept);
	return r < 0 ? tgi_fail(errmsg, "%s", err) : 0;
}

const json_t *tgi_gate_patch_kept(const tg_gate *g)
{
	return g->patch_kept;
}

/* A command's files: its program when it is a path, and every argument
 * that names a regular file (a script given to an interpreter), relative
 * to dir (where the command runs) or to the configuration's directory. */
static void protect_argv(tg_gate *g, char *const *argv, size_t argc, const char *dir)
{
	const char *bases[2] = {dir, g->cfg->dir};
	if (!argc)
		return;
	if (strchr(argv[0], '/'))
		protect(g, argv[0]);
	for (size_t i = 1; i < argc; i++) {
		const char *a = argv[i];
		char path[PATH_MAX * 2];
		struct stat st;
		if (!*a || a[0] == '-')
			continue;
		for (size_t b = 0; b < 2; b++) {
			if (a[0] != '/' && !bases[b])
				continue;
			if (a[0] == '/')
				tgi_snprintf(path, sizeof path, "%s", a);
			else
				tgi_snprintf(path, sizeof path, "%s/%s", bases[b], a);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				protect(g, path);
			if (a[0] == '/')
				break;
		}
	}
}

/* A bridged server's program and scripts (its section as configured:
 * command a string or a list, args, cwd relative to the configuration). */
static void protect_server(tg_gate *g, const json_t *srv)
{
	const json_t *cmd = json_object_get(srv, "command"), *args = json_object_get(srv, "args");
	const char *cwd = json_string_value(json_object_get(srv, "cwd"));
	char dir[PATH_MAX * 2];
	tgi_strv argv = {0};
	size_t i;
	const json_t *v;
	if (json_is_string(cmd))
		tgi_strv_push(&argv, tgi_strdup(json_string_value(cmd)));
	json_array_foreach(cmd, i, v)
		if (json_is_string(v))
			tgi_strv_push(&argv, tgi_strdup(json_string_value(v)));
	json_array_foreach(args, i, v)
		if (json_is_string(v))
			tgi_strv_push(&argv, tgi_strdup(json_string_value(v)));
	if (!cwd)
		tgi_snprintf(dir, sizeof dir, "%s", g->cfg->workspace);
	else if (cwd[0] == '/')
		tgi_snprintf(dir, sizeof dir, "%s", cwd);
	else
		tgi_snprintf(dir, sizeof dir, "%s/%s", g->cfg->dir ? g->cfg->dir : g->cfg->workspace,
		             cwd);
	if (argv.n && strchr(argv.v[0], '/') && argv.v[0][0] != '/' && g->cfg->dir) {
		char abs[PATH_MAX * 2];
		tgi_snprintf(abs, sizeof abs, "%s/%s", g->cfg->dir, argv.v[0]);
		protect(g, abs);
	}
	protect_argv(g, argv.v, argv.n, dir);
	tgi_strv_free(&argv);
}

/* The files a model must not rewrite: whatever configuration the gate
 * would load from the workspace, and every program, script and rule file
 * that configuration names (command tools and their checks, bridged
 * servers; the parts add theirs in open_parts). */
static void protect_own_files(tg_gate *g)
{
	static const char *const names[] = {"toolgate.yaml", "toolgate.yml", "toolgate.json"};
	const tgi_config *cfg = g->cfg;
	const char *name;
	json_t *srv;
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++)
		protect(g, names[i]);
	protect(g, cfg->path);
	for (size_t i = 0; i < cfg->execpolicy.n; i++)
		protect(g, cfg->execpolicy.v[i]);
	for (size_t i = 0; i < cfg->ntools; i++) {
		protect_argv(g, cfg->tools[i].command.v, cfg->tools[i].command.n, cfg->workspace);
		protect_argv(g, cfg->tools[i].check.v, cfg->tools[i].check.n, cfg->workspace);
	}
	json_object_foreach(cfg->mcp_servers, name, srv)
		protect_server(g, srv);
}

/* The machine key's default directory, when the gate uses it and it lies
 * in the workspace (a workspace of $HOME holds ~/.local/state/toolgate):
 * no tool reads or writes there (decide.c), and the sandbox hides it
 * (readmask.c) and pins the directories above it.  A configured key_file is never in the workspace
 * (config.c refuses it). */
static void hide_key_dir(tg_gate *g)
{
	char dir[PATH_MAX], real[PATH_MAX], norm[PATH_MAX], text[PATH_MAX], err[128];
	const char *ws = g->cfg->workspace;
	size_t wl = strlen(ws);
	if (g->cfg->key_env || g->cfg->key_file || tgi_key_default_dir(dir, sizeof dir) < 0)
		return;
	/* as resolved when it is there (a symlinked home), else as spelled */
	const char *p = realpath(dir, real) ? real : dir;
	if (strncmp(p, ws, wl) || (wl > 1 && p[wl] != '/') || !p[wl])
		return;
	const char *rel = p + wl + (wl > 1);
	if (tgi_name_text(rel, strlen(rel), text, sizeof text) < 0 ||
	    tgi_path_check(text, strlen(text), norm, sizeof norm, err, sizeof err) < 0)
		return;
	g->key_dir = tgi_strdup(p);
	g->key_dir_rel = tgi_strdup(norm);
	/* pinned as the gate's own files are: the top-most directory holding it
	 * is a read-only mount in a sandbox, so no parent can be renamed away
	 * from the path the checks know (`mv .local .moved`) */
	protect(g, norm);
}

static void chain_add(tg_gate *g, tgi_step step)
{
	assert(g->nchain < TGI_ARRAY_LEN(g->chain));   /* TGI_CHAIN_MAX holds every part */
	g->chain[g->nchain++] = step;
}

/* The chain of DESIGN §1: each stage in its order (stages.h), each
 * followed by the steps of the open parts placed after it, in the parts'
 * order (gate/parts.c); built once, so a call walks an array and never
 * asks what is enabled.  approve ends the admit chain. */
static void build_chain(tg_gate *g)
{
	static const struct { const char *name; tgi_verdict (*run)(tgi_call *); } stage[] = {
#define XX(p, name, fn) {name, fn},
		TGI_STAGE_MAP(XX)
#undef XX
	};
	g->nchain = 0;
	for (size_t ph = 0; ph < TGI_ARRAY_LEN(stage); ph++) {
		chain_add(g, (tgi_step){.name = stage[ph].name, .phase = (tgi_phase)ph,
		                        .stage = stage[ph].run, .judge = ph <= TGI_PHASE_DECIDE});
		for (size_t i = 0; tgi_parts[i]; i++) {
			const tgi_part *p = tgi_parts[i];
			if (g->part_on[i] && p->step && p->after == (tgi_phase)ph)
				chain_add(g, (tgi_step){.name = p->name, .phase = (tgi_phase)ph,
				                        .part = p->step, .state = g->part[i],
				                        .judge = p->judge});
		}
		if (ph == TGI_PHASE_LAST_ADMIT)
			g->nadmit = g->nchain;
	}
}

/* The record (redaction, sinks) and the parts, each from its section; a
 * gate that creates nothing (no_create) opens and binds no event sink.
 * What a part runs or writes no tool may touch. */
static int open_parts(tg_gate *g, const tg_options *o, char **errmsg)
{
	char err[1024];
	const tgi_config *cfg = g->cfg;
	if (tgi_redactor_new(cfg, &g->redact, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	for (size_t i = 0; tgi_parts[i]; i++) {
		const tgi_part *p = tgi_parts[i];
		assert(i < TGI_PARTS_MAX);
		if (p->open && p->open(g, o, &g->part[i], err, sizeof err) < 0)
			return tgi_fail(errmsg, "%s", err);
		g->part_on[i] = !p->open || g->part[i] != NULL;
	}
	if (tgi_sinks_open(cfg, o->no_create, &g->sinks, err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	const tgi_strv *own = g->sinks ? tgi_sinks_paths(g->sinks) : NULL;
	for (size_t i = 0; own && i < own->n; i++)
		protect(g, own->v[i]);
	for (size_t i = 0; tgi_parts[i]; i++) {
		const tgi_strv *f = g->part_on[i] && tgi_parts[i]->files ?
		                    tgi_parts[i]->files(g->part[i]) : NULL;
		for (size_t k = 0; f && k < f->n; k++)
			protect(g, f->v[k]);
	}
	build_chain(g);
	return 0;
}

const char *tgi_profile_names(const tgi_config *cfg, char *out, size_t cap)
{
	const char **v = tgi_xcalloc(cfg->nprofiles + 1, sizeof *v);
	for (size_t i = 0; i < cfg->nprofiles; i++)
		v[i] = cfg->profiles[i].name;
	tgi_names_join(out, cap, v, cfg->nprofiles);
	free(v);
	return out;
}

static int profile_exists(const tgi_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nprofiles; i++)
		if (!strcmp(cfg->profiles[i].name, name))
			return 1;
	return 0;
}

int tg_gate_open(const tg_options *opts, tg_gate **out, char **errmsg)
{
	tg_options none = {.sync_full = -1};
	const tg_options *o = opts ? opts : &none;
	char err[1024];
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;

	tg_gate *g = tgi_xcalloc(1, sizeof *g);
	g->ws_fd = g->state_fd = -1;
	pthread_mutex_init(&g->manifest_mu, NULL);
	g->interactive = o->interactive;
	g->net = tgi_netgate_new(NULL);

	if (tgi_config_find(o->config_path, o->workspace, &g->cfg, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	if (apply_overrides(g->cfg, o, errmsg) < 0)
		goto fail;
	g->profile = tgi_strdup(g->cfg->profile);
	g->pool = tgi_pool_new(g->cfg->max_parallel > 1 ? (size_t)g->cfg->max_parallel - 1 : 0);

	g->ws_fd = open(g->cfg->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (g->ws_fd < 0) {
		tgi_fail(errmsg, "workspace \"%s\": %s", g->cfg->workspace, strerror(errno));
		goto fail;
	}
	g->state_fd = o->no_create ? tgi_state_dir_find(g->ws_fd, g->cfg->workspace, err, sizeof err)
	                           : tgi_state_dir_open(g->ws_fd, g->cfg->workspace, err, sizeof err);
	if (g->state_fd == -1) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	if (g->state_fd < 0)          /* no_create, and there is none */
		g->state_fd = -1;
	/* spill files hold whole outputs, unredacted: kept spill.keep, no longer */
	if (!o->no_create && g->state_fd >= 0)
		(void)tgi_spill_prune(g->state_fd, g->cfg->spill_keep_s, (int64_t)tgi_unix_ms());
	size_t n = strlen(g->cfg->workspace) + sizeof "/.toolgate";
	g->state_dir = tgi_xmalloc(n);
	snprintf(g->state_dir, n, "%s/.toolgate", g->cfg->workspace);

	protect_own_files(g);
	hide_key_dir(g);
	if (tgi_registry_build(g->cfg, &g->reg, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	if (tgi_rules_compile(g, errmsg) < 0 || load_execpolicy(g, errmsg) < 0 ||
	    open_parts(g, o, errmsg) < 0)
		goto fail;
	if (!profile_exists(g->cfg, g->profile)) {
		char names[512];
		tgi_fail(errmsg, "unknown profile \"%s\"; the profiles are %s", g->profile,
		         tgi_profile_names(g->cfg, names, sizeof names));
		goto fail;
	}
	if (tgi_store_open_for(g->cfg, (o->no_create ? TGI_STORE_EXISTING : 0) |
	                               (o->foreign_ok ? TGI_STORE_FOREIGN_OK : 0),
	                       &g->store, &g->no_ledger, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	/* masks are keyed by the ledger's mask key: stable within it, and no
	 * guess at a secret can be confirmed from them without the key */
	tgi_redactor_key(g->redact, tgi_store_mask_key(g->store));
	if (tgi_store_foreign(g->store)) {   /* to be read only: nothing is run or settled */
		*out = g;
		return 0;
	}
	/* a patch a crash interrupted is finished by the next gate, one that
	 * creates nothing too when there is a journal directory to look in */
	struct stat jst;
	if ((!o->no_create || (g->state_fd >= 0 &&
	                       fstatat(g->state_fd, "journal", &jst, AT_SYMLINK_NOFOLLOW) == 0)) &&
	    finish_patches(g, errmsg) < 0)
		goto fail;
	/* no server starts here: the first call or listing that needs its tools does */
	if (o->bridge && tgi_bridge_new(g, &g->bridge, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	*out = g;
	return 0;
fail:
	tg_gate_close(g);
	return -1;
}

const char *tg_gate_foreign(const tg_gate *g)
{
	return g && g->store ? tgi_store_foreign(g->store) : NULL;
}

const char *tg_gate_ledger(const tg_gate *g, int *exists, char *where, size_t cap)
{
	if (exists)
		*exists = !g->no_ledger;
	tgi_ledger_shown_where(g->cfg->store, where, cap);
	return where;
}

void tg_gate_close(tg_gate *g)
{
	if (!g)
		return;
	if (g->bridge)
		tgi_bridge_stop(g->bridge);  /* no bridged call runs past here */
	tgi_pool_free(g->pool);
	tgi_store_close(g->store);
	tgi_registry_free(g->reg);
	tgi_bridge_free(g->bridge);         /* its rows outlived the registry's entries */
	tgi_rulecheck_free(g->rulecheck);   /* no server lists any more */
	tgi_netgate_free(g->net);           /* every call and bridged server has ended */
	tgi_ruleset_free(g->rules);
	tgi_execpolicy_free(g->execpolicy);
	tgi_hostpath_free(g->hostpath);
	tgi_sinks_close(g->sinks);
	for (size_t i = 0; tgi_parts[i]; i++)
		if (g->part[i] && tgi_parts[i]->close)
			tgi_parts[i]->close(g->part[i]);
	tgi_redactor_free(g->redact);
	if (g->role_rules && g->cfg)
		for (size_t i = 0; i < g->cfg->nroles; i++)
			tgi_ruleset_free(g->role_rules[i]);
	free(g->role_rules);
	tgi_ruleset_free(g->named);
	if (g->role_named && g->cfg)
		for (size_t i = 0; i < g->cfg->nroles; i++)
			tgi_ruleset_free(g->role_named[i]);
	free(g->role_named);
	if (g->ws_fd >= 0)
		close(g->ws_fd);
	if (g->state_fd >= 0)
		close(g->state_fd);
	free(g->state_dir);
	json_decref(g->patch_kept);
	free(g->key_dir);
	free(g->key_dir_rel);
	free(g->profile);
	for (size_t i = 0; i < g->nprotected; i++)
		free(g->protected[i]);
	free(g->protected);
	tgi_config_free(g->cfg);
	pthread_mutex_destroy(&g->manifest_mu);
	free(g);
}

/* ---- definitions and operator actions ---- */

json_t *tgi_tool_def(const tgi_entry *e)
{
	unsigned f = e->row->flags;
	char title[160];
	tgi_tool_title(e->row, title, sizeof title);
	/* read-only is never destructive; anything else may be, as MCP reads a missing hint.
	 * The schemas are copied, not shared: calls on several threads list the
	 * tools at once (the manifest, tools/list), and a shared reference count
	 * would be touched by all of them */
	json_t *d = json_pack("{s:s, s:s, s:s, s:o, s:s, s:{s:b, s:b, s:b, s:b}}", "name",
	                      e->row->name, "title", title, "description",
	                      e->row->description ? e->row->description : "", "input_schema",
	                      json_deep_copy(e->schema_json), "category", e->row->category, "annotations",
	                      "readOnlyHint", (f & TGI_T_READ_ONLY) != 0, "destructiveHint",
	                      (f & TGI_T_DESTRUCTIVE) != 0, "idempotentHint",
	                      (f & (TGI_T_IDEMPOTENT | TGI_T_READ_ONLY)) != 0, "openWorldHint",
	                      e->row->handler == tgi_command_run || e->row->mcp_result);
	if (e->output_schema)
		json_object_set_new(d, "output_schema", json_deep_copy(e->output_schema));
	return d;
}

const tgi_entry *tgi_tool_find(tg_gate *g, const char *name)
{
	const tgi_entry *e = tgi_registry_find(g->reg, name);
	if (!e && g->bridge && tgi_bridge_need_tool(g->bridge, name))
		e = tgi_registry_find(g->reg, name);
	return e;
}

/* The definitions as they stand: no bridged server is started. */
static json_t *defs_now(tg_gate *g, const char *profile, char **errmsg)
{
	const char *p = profile ? profile : g->profile;
	json_t *arr = json_array();
	for (size_t i = 0; i < tgi_registry_count(g->reg); i++) {
		const tgi_entry *e = tgi_registry_at(g->reg, i);
		int in = tgi_registry_in_profile(g->cfg, p, e);
		if (in < 0) {
			json_decref(arr);
			char names[512];
			tgi_fail(errmsg, "unknown profile \"%s\"; the profiles are %s", p,
			         tgi_profile_names(g->cfg, names, sizeof names));
			return NULL;
		}
		if (!in || tgi_registry_available(g->reg, e, NULL, 0) != 1)
			continue;
		json_array_append_new(arr, tgi_tool_def(e));
	}
	return arr;
}

json_t *tgi_tool_defs(tg_gate *g, const char *profile, char **errmsg)
{
	tgi_bridge_need_all(g->bridge); /* a listing: every server's tools are in it */
	return defs_now(g, profile, errmsg);
}

char *tg_tools_json(tg_gate *g, const char *profile, char **errmsg)
{
	json_t *arr = tgi_tool_defs(g, profile, errmsg);
	char *s = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
	json_decref(arr);
	return s;
}

/* ---- events of no call ---- */

int tgi_gate_event(tg_gate *g, const char *op_id, const char *type, const char *stage,
                   const json_t *data, char *err, size_t errlen)
{
	json_t *d = data ? tgi_redact_json(g->redact, (json_t *)data, NULL) : NULL;
	tgi_event ev = {.type = type, .stage = stage, .data = d, .ts_ms = tgi_unix_ms()};
	int rc = tgi_store_event(g->store, op_id, &ev, err, errlen);
	if (g->sinks) {
		char ts[32];
		tgi_iso8601(ev.ts_ms, ts);
		json_t *line = json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:O?}", "seq", (json_int_t)ev.seq,
		                         "ts", ts, "type", type, "stage", stage, "op_id", op_id, "data", d);
		tgi_sinks_emit(g->sinks, line);
		json_decref(line);
	}
	json_decref(d);
	return rc;
}

/* ---- the manifest digest ---- */

static int manifest_of(tg_gate *g, const char *profile, char out[65], char **errmsg)
{
	json_t *defs = defs_now(g, profile, errmsg);
	if (!defs)
		return -1;
	char *text = tgi_json_canonical(defs);
	tgi_sha256_hex(text, strlen(text), out);
	free(text);
	json_decref(defs);
	return 0;
}

void tgi_manifest_update(tg_gate *g)
{
	pthread_mutex_lock(&g->manifest_mu);
	g->manifest_gen++;
	g->manifest_fresh = 0;
	pthread_mutex_unlock(&g->manifest_mu);
}

/* Computed outside the lock (listing the tools takes the bridge's and the
 * registry's locks, and the bridge says a change while holding none); kept
 * only when the tools did not change meanwhile.  Two first calls may both
 * compute it: the same answer. */
void tgi_manifest_get(tg_gate *g, char out[65])
{
	char d[65];
	if (!tgi_bridge_all_listed(g->bridge)) {
		out[0] = '\0';                 /* a server not started yet: not known */
		return;
	}
	pthread_mutex_lock(&g->manifest_mu);
	int fresh = g->manifest_fresh;
	unsigned gen = g->manifest_gen;
	memcpy(out, g->manifest, sizeof d);
	pthread_mutex_unlock(&g->manifest_mu);
	if (fresh || manifest_of(g, NULL, d, NULL) < 0)
		return;
	pthread_mutex_lock(&g->manifest_mu);
	if (g->manifest_gen == gen) {
		memcpy(g->manifest, d, sizeof d);
		g->manifest_fresh = 1;
	}
	pthread_mutex_unlock(&g->manifest_mu);
	memcpy(out, d, sizeof d);
}

int tg_tools_digest(tg_gate *g, const char *profile, char out[65], char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	tgi_bridge_need_all(g->bridge); /* a listing */
	return manifest_of(g, profile, out, errmsg);
}
