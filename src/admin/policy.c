/*
 * policy.c — the policy side of the operator API: `toolgate policy
 * check` (Codex's execpolicy JSON), `policy check --explain` (the whole
 * decision for a command, without running it), `policy test` (every
 * self-test of a configuration, for a project's CI) and `doctor`; both
 * also say which rules match no tool (rulecheck.h).
 *
 * Owns: those JSON answers and reports.  Must not: run commands or hooks,
 * or write to the ledger (explain and test judge calls: tgi_call_judge).
 */
#include <stdlib.h>
#include <string.h>

#include "exec/limits.h"
#include "exec/netgate.h"
#include "exec/sandbox.h"
#include "gate/gate.h"
#include "mcp/bridge.h"
#include "gate/rulecheck.h"
#include "util/util.h"

static char *dump(json_t *v, int pretty)
{
	char *s = json_dumps(v, pretty ? JSON_INDENT(2) : JSON_COMPACT);
	json_decref(v);
	return s;
}

/* The gate's execpolicy JSON for the simple commands of a command line. */
static json_t *check_json(const tg_gate *g, const tgi_cmdline *cl)
{
	const char *const **argvs = tgi_xcalloc(cl->n + 1, sizeof *argvs);
	size_t *argcs = tgi_xcalloc(cl->n + 1, sizeof *argcs), n = 0;
	for (size_t i = 0; i < cl->n; i++)
		if (cl->v[i].argc) {
			argvs[n] = (const char *const *)cl->v[i].argv;
			argcs[n++] = cl->v[i].argc;
		}
	json_t *j = tgi_execpolicy_check(g->execpolicy, &g->ep_resolve,
	                                 (const char *const *const *)argvs, argcs, n);
	free(argvs);
	free(argcs);
	return j;
}

/* serde_json's spelling of a \uXXXX escape: lowercase hex (jansson
 * writes \u001B where Codex prints \u001b). */
static char *codex_escapes(char *s)
{
	for (char *p = s; p && *p; p++) {
		if (*p != '\\')
			continue;
		if (p[1] == 'u')
			for (int i = 2; i < 6 && p[i]; i++)
				if (p[i] >= 'A' && p[i] <= 'F')
					p[i] = (char)(p[i] - 'A' + 'a');
		if (p[1])
			p++; /* the escaped character is never the start of another escape */
	}
	return s;
}

char *tg_policy_check(const char *config_path, const char *const *files, size_t nfiles,
                      const char *const *argv, size_t argc, unsigned flags, char **errmsg)
{
	char err[1024];
	tgi_config *cfg = NULL;
	char *out = NULL;
	tgi_execpolicy *ep = tgi_execpolicy_new();
	const tgi_ep_resolve host = { TGI_EP_HOST, NULL, NULL };

	if (!nfiles) {
		if (tgi_config_load(config_path, &cfg, err, sizeof err) < 0) {
			tgi_fail(errmsg, "%s", err);
			goto done;
		}
		files = (const char *const *)cfg->execpolicy.v;
		nfiles = cfg->execpolicy.n;
	}
	for (size_t i = 0; i < nfiles; i++)
		if (tgi_execpolicy_add_file(ep, files[i], err, sizeof err) < 0) {
			tgi_fail(errmsg, "%s", err);
			goto done;
		}
	/* as Codex: the words are one command, taken as they are */
	out = codex_escapes(dump(tgi_execpolicy_check(ep, flags & TG_POLICY_RESOLVE_HOST ? &host : NULL,
	                                              &argv, &argc, argv && argc ? 1 : 0),
	                         flags & TG_POLICY_PRETTY));
done:
	tgi_execpolicy_free(ep);
	tgi_config_free(cfg);
	return out;
}

/* What the gate would decide for a call: judged, not made
 * (tgi_call_judge), so no ledger row is written, no hook runs, nothing is
 * counted and no approval is spent.  decision: allow, ask or deny, or
 * invalid when a stage before decide refused the arguments; rule: the
 * deciding rule, or the sentence that refused the call; stage: decide, or
 * the step that stopped it before. */
typedef struct judged {
	char decision[16];
	char rule[1024];
	char stage[64];
} judged;

static void judge(tg_gate *g, const char *tool, const char *args, judged *out)
{
	tg_request rq = {.tool = tool, .args = args, .dry_run = 1};
	tgi_call c;
	tgi_call_begin(&c, g, &rq);
	tgi_verdict v = tgi_call_judge(&c);
	json_t *last = json_array_get(c.stages, json_array_size(c.stages) - 1);
	const char *step = json_string_value(json_object_get(last, "stage"));
	if (v == TGI_NEXT || (step && !strcmp(step, "decide"))) {
		tgi_snprintf(out->decision, sizeof out->decision, "%s", tgi_decision_name(c.decision));
		tgi_snprintf(out->rule, sizeof out->rule, "%s", c.rule);
		tgi_snprintf(out->stage, sizeof out->stage, "decide");
	} else {
		tgi_snprintf(out->decision, sizeof out->decision, "%s",
		             c.status == TG_DENIED ? "deny" : "invalid");
		tgi_snprintf(out->rule, sizeof out->rule, "%s", c.message);
		tgi_snprintf(out->stage, sizeof out->stage, "%s", step ? step : "decode");
	}
	tgi_call_drop(&c);
}

char *tg_policy_explain(tg_gate *g, const char *const *files, size_t nfiles,
                        const char *const *argv, size_t argc, int pretty, char **errmsg)
{
	char err[1024], why[512];
	tgi_cmdline cl = {0};
	tgi_execpolicy *own = NULL;
	if (nfiles) {   /* these files stand in for the configuration's, as for check */
		own = tgi_execpolicy_new();
		for (size_t i = 0; i < nfiles; i++)
			if (tgi_execpolicy_add_file(own, files[i], err, sizeof err) < 0) {
				tgi_execpolicy_free(own);
				tgi_fail(errmsg, "%s", err);
				return NULL;
			}
	}
	if (tgi_shell_from_argv(argv, argc, &cl, err, sizeof err) < 0) {
		tgi_execpolicy_free(own);
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	tgi_execpolicy *configured = g->execpolicy;
	if (own)
		g->execpolicy = own;
	json_t *cmd = json_array(), *opaque = json_array();
	for (size_t i = 0; i < argc; i++)
		json_array_append_new(cmd, tgi_json_text(argv[i], strlen(argv[i])));
	for (size_t i = 0; i < cl.n; i++)
		if (cl.v[i].flags & TGI_CMD_OPAQUE)
			json_array_append_new(opaque, json_string(cl.v[i].why ? cl.v[i].why : "opaque"));
	const char *home = getenv("HOME");
	tgi_floor_in fin = {g->cfg->workspace, home ? home : "/root", NULL, 0};
	tgi_floor_verdict fv = tgi_floor_judge(&cl, &fin, why, sizeof why);
	int floored = fv == TGI_FLOOR_DENY;
	const tgi_shell_cfg *sh = &g->cfg->shell;
	int ro = tgi_shell_readonly(&cl, &sh->read_only, sh->read_only_replace);

	json_t *args = json_pack("{s:O}", "command", cmd);
	char *args_text = json_dumps(args, JSON_COMPACT);
	json_decref(args);
	judged jd;
	judge(g, "shell", args_text, &jd);
	free(args_text);
	json_t *out = json_pack("{s:o, s:o, s:o, s:o, s:o, s:b, s:s, s:s, s:s, s:s?, s:s}",
	                        "command", cmd, "execpolicy", check_json(g, &cl),
	                        "floor", floored ? json_string(why) : json_null(),
	                        "floor_cannot_judge", fv == TGI_FLOOR_BLIND ? json_string(why) : json_null(),
	                        "opaque", opaque, "read_only", ro,
	                        "mode", tgi_mode_name(g->cfg->mode),
	                        "sandbox", tgi_sandbox_name(g->cfg->sandbox),
	                        "decision", jd.decision, "rule", jd.rule[0] ? jd.rule : NULL,
	                        "stage", jd.stage);
	tgi_cmdline_free(&cl);
	g->execpolicy = configured;
	tgi_execpolicy_free(own);
	return dump(out, pretty);
}

int tg_policy_test(tg_gate *g, char **report, char **errmsg)
{
	tgi_buf b;
	size_t passed = tgi_execpolicy_nexamples(g->execpolicy), failed = 0, i;
	json_t *t;
	(void)errmsg;

	tgi_buf_init(&b, 1u << 24);
	json_array_foreach(g->cfg->permission_tests, i, t) {
		json_t *call = json_object_get(t, "call");
		const char *tool = json_string_value(json_object_get(call, "tool"));
		const char *expect = json_string_value(json_object_get(t, "expect"));
		json_t *a = json_object_get(call, "args");
		char *args = a ? json_dumps(a, JSON_COMPACT) : NULL;
		judged jd;
		judge(g, tool, args, &jd);
		if (!strcmp(jd.decision, expect)) {
			passed++;
		} else {
			char where[128];
			char ptr[64];
			snprintf(ptr, sizeof ptr, "/permissions/tests/%zu", i);
			tgi_config_where(g->cfg, ptr, where, sizeof where);
			tgi_buf_printf(&b, "FAIL %s: %s %s: expected %s, got %s (%s: %s)\n", where, tool,
			               args ? args : "{}", expect, jd.decision, jd.stage, jd.rule);
			failed++;
		}
		free(args);
	}
	/* rules that match no tool: said, not failed (rulecheck.h) */
	json_t *un = tgi_rulecheck_report(g);
	json_array_foreach(un, i, t)
		tgi_buf_printf(&b, "WARN %s: rule \"%s\": %s\n",
		               json_string_value(json_object_get(t, "where")),
		               json_string_value(json_object_get(t, "rule")),
		               json_string_value(json_object_get(t, "why")));
	tgi_buf_printf(&b, "%zu passed, %zu failed", passed, failed);
	if (json_array_size(un))
		tgi_buf_printf(&b, ", %zu warning%s", json_array_size(un),
		               json_array_size(un) == 1 ? "" : "s");
	tgi_buf_puts(&b, "\n");
	json_decref(un);
	*report = tgi_buf_steal(&b);
	return (int)failed;
}

/* What a command of the shell tool would see under this configuration
 * (exec/sandbox.h tgi_sandbox_view), as shell.c sets it up; nothing runs. */
static json_t *shell_view(tg_gate *g)
{
	tgi_strv prot = {0};
	char p[PATH_MAX * 2];
	for (size_t i = 0; i < g->nprotected; i++) {
		tgi_snprintf(p, sizeof p, "%s/%s", g->cfg->workspace, g->protected[i]);
		tgi_strv_push(&prot, tgi_strdup(p));
	}
	/* hidden: the state directory, and what read rules name (every role's:
	 * the strictest; a call of a principal with fewer rules hides less) */
	tgi_strv masks = {0};
	tgi_strv_push(&masks, tgi_strdup(g->state_dir));
	json_t *rr = tgi_read_masks_report(g, g->cfg->sandbox_profile.mode != TGI_SANDBOX_FULL
	                                      ? &masks : NULL);
	tgi_sb_spec spec = {
		.profile = &g->cfg->sandbox_profile,
		.workspace = g->cfg->workspace,
		.protect = (const char *const *)prot.v,
		.nprotect = prot.n,
		.mask = (const char *const *)masks.v,
		.nmask = masks.n,
		.attach = tgi_netrun_attach,   /* as a call's (execute.c); never called here */
	};
	json_t *v = tgi_sandbox_view(&spec);
	json_object_set_new(v, "read_rules", rr);
	tgi_strv_free(&prot);
	tgi_strv_free(&masks);
	return v;
}

/* A view of the sandbox of spec, compact: what is the same for every
 * process (the system's directories and the secrets hidden in them, the
 * host's top level, the scan) is left out; doctor's "shell" has it in
 * full. */
static json_t *compact_view(const tgi_sb_spec *spec)
{
	static const char *const system[] = {"/usr", "/bin", "/sbin", "/lib", "/opt", "/etc",
	                                     "/nix", "/sys", "/proc", "/dev", "/var/run",
	                                     "/var/lock", "/run"};
	json_t *v = tgi_sandbox_view(spec), *e;
	size_t i;
	for (const char *const *key = (const char *const[]){"readable", "hidden", NULL}; *key; key++) {
		json_t *keep = json_array();
		json_array_foreach(json_object_get(v, *key), i, e) {
			const char *p = json_string_value(e);
			int sys = 0;
			for (size_t k = 0; p && k < TGI_ARRAY_LEN(system) && !sys; k++) {
				size_t n = strlen(system[k]);
				sys = !strncmp(p, system[k], n) && (!p[n] || p[n] == '/' || p[n] == ' ' ||
				                                    !strcmp(system[k], "/lib"));
			}
			if (!sys)
				json_array_append(keep, e);
		}
		if (json_object_get(v, *key))
			json_object_set_new(v, *key, keep);
		else
			json_decref(keep);
	}
	json_object_del(v, "not_shown");
	json_object_del(v, "scan");
	json_object_del(v, "kernel");
	if (!json_array_size(json_object_get(v, "missing")))
		json_object_del(v, "missing");
	return v;
}

/* What each configured command tool and bridged server would see (as
 * command.c and bridge.c set their sandboxes up); nothing runs. */
static void tools_views(tg_gate *g, json_t *d)
{
	tgi_strv prot = {0};
	char p[PATH_MAX * 2], err[1024];
	for (size_t i = 0; i < g->nprotected; i++) {
		tgi_snprintf(p, sizeof p, "%s/%s", g->cfg->workspace, g->protected[i]);
		tgi_strv_push(&prot, tgi_strdup(p));
	}
	const char *masks[] = {g->state_dir};
	tgi_sb_spec spec = {
		.workspace = g->cfg->workspace,
		.protect = (const char *const *)prot.v,
		.nprotect = prot.n,
		.mask = masks,
		.nmask = 1,
		.attach = tgi_netrun_attach,  /* the gate has its proxy: a hosts list is usable */
	};
	json_t *tools = json_object(), *servers = json_object(), *srv;
	const char *name;
	for (size_t i = 0; i < g->cfg->ntools; i++) {
		spec.profile = &g->cfg->tools[i].sandbox;
		json_object_set_new(tools, g->cfg->tools[i].name, compact_view(&spec));
	}
	json_object_foreach(g->cfg->mcp_servers, name, srv) {
		tgi_sb_profile pr;
		json_t *v;
		if (!json_object_get(srv, "command")) {
			v = json_pack("{s:s}", "sandbox", "none: reached over HTTP, not started by the gate");
		} else if (tgi_bridge_profile(g->cfg, name, srv, &pr, err, sizeof err) < 0) {
			v = json_pack("{s:b, s:s}", "usable", 0, "why", err);
		} else {
			spec.profile = &pr;
			v = compact_view(&spec);
			if (!json_is_true(json_object_get(v, "usable")))
				json_object_set_new(v, "starts", json_string("no: its tools are unavailable"));
		}
		if (json_object_get(srv, "command"))
			tgi_sb_profile_free(&pr);
		json_object_set_new(v, "trusted", json_boolean(json_is_true(json_object_get(srv, "trusted"))));
		json_object_set_new(servers, name, v);
	}
	tgi_strv_free(&prot);
	json_object_set_new(d, "tools", tools);
	json_object_set_new(d, "servers", servers);
}

char *tg_doctor(tg_gate *g, int pretty)
{
	json_t *d = tgi_sandbox_report();
	json_object_set_new(d, "process_limit", json_string(tgi_limits_pids_backend()));
	if (g)
		json_object_set_new(d, "shell", shell_view(g));
	if (g)
		tools_views(g, d);
	if (g) {
		json_t *files = json_array();
		for (size_t i = 0; i < g->cfg->execpolicy.n; i++)
			json_array_append_new(files, json_string(g->cfg->execpolicy.v[i]));
		const tgi_sb_profile *pr = &g->cfg->sandbox_profile;
		json_t *net = json_boolean(pr->net == TGI_NET_ON);
		if (pr->net == TGI_NET_HOSTS) {
			json_decref(net);
			net = json_array();
			for (size_t i = 0; i < pr->hosts.n; i++)
				json_array_append_new(net, json_string(pr->hosts.v[i]));
		}
		json_object_set_new(d, "rules", json_pack("{s:o}", "unmatched", tgi_rulecheck_report(g)));
		json_object_set_new(d, "config", json_pack("{s:s?, s:s, s:s, s:o, s:o, s:I}",
		                    "file", g->cfg->path, "workspace", g->cfg->workspace,
		                    "sandbox", tgi_sandbox_name(g->cfg->sandbox),
		                    "network", net, "execpolicy", files,
		                    "execpolicy_rules", (json_int_t)tgi_execpolicy_nrules(g->execpolicy)));
	}
	return dump(d, pretty);
}
