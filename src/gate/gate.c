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
#include "gate/batch.h"
#include "patch/patch.h"
#include "gate/rulecheck.h"
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

static void rules_listed(void *g, const char *server)
{
	tgi_rulecheck_listed(g, server);
}

static int open_part(tg_gate *g, size_t i, const tg_options *o, char **errmsg)
{
	const tgi_part *p = tgi_parts[i];
	char err[1024];
	if (p->open && p->open(g, o, &g->part[i], err, sizeof err) < 0)
		return tgi_fail(errmsg, "%s", err);
	g->part_on[i] = !p->open || g->part[i] != NULL;
	return 0;
}

/* The late parts (mw/part.h), once the ledger is open and settled: none
 * has a step, so the chain built before stands. */
static int open_late_parts(tg_gate *g, const tg_options *o, char **errmsg)
{
	for (size_t i = 0; tgi_parts[i]; i++) {
		assert(!tgi_parts[i]->late || !tgi_parts[i]->step);
		if (tgi_parts[i]->late && open_part(g, i, o, errmsg) < 0)
			return -1;
	}
	return 0;
}

int tgi_gate_every_tool(tg_gate *g, char *err, size_t errlen)
{
	char *msg = NULL;
	int rc = 0;
	for (size_t i = 0; tgi_parts[i] && rc == 0; i++)
		if (tgi_parts[i]->late && !g->part_on[i] && open_part(g, i, NULL, &msg) < 0) {
			tgi_snprintf(err, errlen, "%s", msg);
			rc = -1;
		}
	free(msg);
	tgi_registry_need_all(g->reg);
	return rc;
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
		assert(i < TGI_PARTS_MAX);
		if (!tgi_parts[i]->late && open_part(g, i, o, errmsg) < 0)
			return -1;
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
	g->interactive = o->interactive;
	g->net = tgi_netgate_new(NULL);

	if (tgi_config_find(o->config_path, o->workspace, &g->cfg, err, sizeof err) < 0) {
		tgi_fail(errmsg, "%s", err);
		goto fail;
	}
	if (tgi_config_apply(g->cfg, o, errmsg) < 0)
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
	/* a source's listing is checked against the rules that may name its tools */
	tgi_registry_on_listed(g->reg, rules_listed, g);
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
	if (open_late_parts(g, o, errmsg) < 0)
		goto fail;
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
	for (size_t i = 0; tgi_parts[i]; i++)   /* no call of a part runs past here */
		if (g->part[i] && tgi_parts[i]->stop)
			tgi_parts[i]->stop(g->part[i]);
	tgi_pool_free(g->pool);
	tgi_store_close(g->store);
	tgi_registry_free(g->reg);
	for (size_t i = 0; tgi_parts[i]; i++)   /* a part's rows may outlive the registry's entries */
		if (g->part[i] && tgi_parts[i]->close)
			tgi_parts[i]->close(g->part[i]);
	tgi_rulecheck_free(g->rulecheck);   /* no server lists any more */
	tgi_netgate_free(g->net);           /* every call and bridged server has ended */
	tgi_ruleset_free(g->rules);
	tgi_execpolicy_free(g->execpolicy);
	tgi_hostpath_free(g->hostpath);
	tgi_sinks_close(g->sinks);
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
	free(g);
}

/* ---- definitions ---- */

json_t *tgi_tool_defs(tg_gate *g, const char *profile, char **errmsg)
{
	tgi_registry_need_all(g->reg); /* a listing: every source's tools are in it */
	return tgi_registry_defs(g->reg, g->cfg, profile ? profile : g->profile, errmsg);
}

char *tg_tools_json(tg_gate *g, const char *profile, char **errmsg)
{
	json_t *arr = tgi_tool_defs(g, profile, errmsg);
	char *s = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
	json_decref(arr);
	return s;
}

int tg_tools_digest(tg_gate *g, const char *profile, char out[65], char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	tgi_registry_need_all(g->reg); /* a listing */
	return tgi_registry_digest(g->reg, g->cfg, profile ? profile : g->profile, out, errmsg);
}
