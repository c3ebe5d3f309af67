/*
 * run.c — `toolgate eval` (tg_eval, eval.h): a suite run against a model.
 *
 *   cases ──► one request per case and run: the case's request as the
 *             first user message, the tools of its profile in the API's
 *             shape (turn.c, as the agent sends them); several at once,
 *             each worker with a provider of its own
 *         ──► each reply judged in case order: the scratch workspace reset
 *             to the case's setup files, the judged call (the first naming
 *             the expected tool, else the first) made a request as the
 *             agent would make it (tgi_dispatch_request), then judged by
 *             the gate (tgi_call_judge) and its dry-run plan asked whether
 *             it would fail; nothing runs and nothing is recorded
 *         ──► RESULTs, scores (report.c), the report
 *
 * The cases are judged on gates of their own ("judges"), one per profile,
 * opened from the same options as the caller's gate over a scratch
 * workspace (a private directory under $TMPDIR), so that a case sees its
 * setup files and nothing of the user's workspace.  --compare opens a
 * second set on the other configuration and runs the suite again.  Each
 * run is kept in the caller's ledger (an eval_runs row: the report less
 * its results).
 *
 * Owns: the scratch workspace, the judges, the providers of a run.  Must
 * not: run a tool, persist a call, or touch the caller's workspace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "eval/eval.h"
#include "gate/gate.h"
#include "mw/mw.h"
#include "util/fs.h"
#include "util/util.h"

#define RUNS_MAX   100
#define JOBS_MAX   32
#define JOBS_HTTP  4
#define SHOWN_MAX  500    /* characters of a reply's text kept in a result */
#define GIVE_UP    5      /* requests failed in a row: the provider is down */
#define TIMEOUT_S  60     /* a request, by default */
#define RETRIES    2      /* of a request on 429/5xx/connection errors */

/* A gate the cases of one profile are judged on. */
typedef struct judge {
	char    *profile;   /* NULL: the configuration's */
	tg_gate *g;
	json_t  *tools;     /* the definitions in the API's shape */
	size_t   ntools;
	char     manifest[65];
} judge;

/* One request: a case and a run. */
typedef struct item {
	size_t     ci;
	int        run;
	judge     *j;
	tgi_pcalls reply;
	int        asked;   /* reply holds the model's answer */
	char       err[1100];
	double     ms;
} item;

typedef struct eval {
	tg_gate               *home;     /* the caller's gate: the ledger */
	const tg_options      *gopts;
	const tg_eval_options *o;
	tgi_eval_suite         suite;
	char                   digest[65];
	char                  *scratch;
	tgi_provider         **provs;
	size_t                 nprov;
	const tgi_protocol    *api;

	/* one run */
	const char            *config;   /* the run's configuration (NULL: gopts') */
	judge                 *judges;
	size_t                 njudges;
	item                  *items;
	size_t                 nitems;
	size_t                 next, done, succeeded;
	size_t                 in_a_row;   /* requests failed since the last success */
	pthread_mutex_t        mu;
	pthread_cond_t         cv;
} eval;

/* ---- the scratch workspace ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

static int remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Empty the scratch workspace but for the judges' state directory. */
static int clear_scratch(eval *e, char *err, size_t errlen)
{
	DIR *d = opendir(e->scratch);
	if (!d) {
		tgi_snprintf(err, errlen, "the scratch workspace: %s", strerror(errno));
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".toolgate"))
			continue;
		char path[PATH_MAX];
		tgi_snprintf(path, sizeof path, "%s/%s", e->scratch, de->d_name);
		if (remove_tree(path) < 0) {
			tgi_snprintf(err, errlen, "cannot empty the scratch workspace: %s", strerror(errno));
			rc = -1;
			break;
		}
	}
	closedir(d);
	return rc;
}

/* Write one setup file (rel was checked when the suite was loaded). */
static int put_file(eval *e, const char *rel, const char *text, size_t len, char *err,
                    size_t errlen)
{
	char path[PATH_MAX];
	tgi_snprintf(path, sizeof path, "%s/%s", e->scratch, rel);
	for (char *p = path + strlen(e->scratch) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		int r = mkdir(path, 0700);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			goto fail;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	while (len) {
		ssize_t w = write(fd, text, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			close(fd);
			goto fail;
		}
		text += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0)
		goto fail;
	return 0;
fail:
	tgi_snprintf(err, errlen, "setup file %s: %s", rel, strerror(errno));
	return -1;
}

static int setup_case(eval *e, const tgi_eval_case *c, char *err, size_t errlen)
{
	if (clear_scratch(e, err, errlen) < 0)
		return -1;
	const char *rel;
	json_t *v;
	json_object_foreach(c->setup_files, rel, v)
		if (put_file(e, rel, json_string_value(v), json_string_length(v), err, errlen) < 0)
			return -1;
	return 0;
}

/* ---- judges ---- */

static const char *profile_of(const eval *e, const tgi_eval_case *c)
{
	return e->o->profile ? e->o->profile : c->profile;
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static judge *judge_for(eval *e, const char *profile, char **errmsg)
{
	for (size_t i = 0; i < e->njudges; i++)
		if (same(e->judges[i].profile, profile))
			return &e->judges[i];
	tg_options jo = *e->gopts;
	jo.workspace = e->scratch;
	if (e->config)
		jo.config_path = e->config;
	if (profile)
		jo.profile = profile;
	jo.interactive = 0;
	jo.approval_wait_s = 0;
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&jo, &g, &err) < 0) {
		tgi_fail(errmsg, "%s%s%s", e->config ? e->config : "",
		         e->config ? ": " : "", err ? err : "the gate could not be opened");
		free(err);
		return NULL;
	}
	/* fail closed: an unknown principal, named or from the environment */
	if (!tgi_principal_of(g, e->o->principal, NULL)) {
		char names[512];
		tgi_principal_names(g->cfg, names, sizeof names);
		tg_gate_close(g);
		tgi_fail(errmsg, "unknown principal (from --as, $TOOLGATE_PRINCIPAL or the "
		         "configuration's default; the configuration has %s); every call would be "
		         "denied", names);
		return NULL;
	}
	size_t ntools = 0;
	json_t *tools = tgi_model_tools(g, NULL, e->o->principal, e->api, &ntools, errmsg);
	if (!tools) {
		tg_gate_close(g);
		return NULL;
	}
	/* never moved: items point at their judge (at most one per case and the run's) */
	if (!e->judges)
		e->judges = tgi_xcalloc(e->suite.n + 1, sizeof *e->judges);
	judge *j = &e->judges[e->njudges++];
	*j = (judge){.profile = tgi_strdup(profile), .g = g, .tools = tools, .ntools = ntools};
	tg_tools_digest(g, NULL, j->manifest, NULL);
	return j;
}

static void judges_close(eval *e)
{
	for (size_t i = 0; i < e->njudges; i++) {
		free(e->judges[i].profile);
		json_decref(e->judges[i].tools);
		tg_gate_close(e->judges[i].g);
	}
	free(e->judges);
	e->judges = NULL;
	e->njudges = 0;
}

/* ---- asking the model ---- */

static void ask_one(eval *e, tgi_provider *p, item *it)
{
	const tgi_eval_case *c = &e->suite.v[it->ci];
	json_t *history = json_array();
	json_t *u = tgi_dialogue_user(e->api, c->request);
	double t0 = tgi_now_ms();
	if (!u) {
		tgi_snprintf(it->err, sizeof it->err, "cannot write the request as a %s message",
		             e->api->name);
	} else {
		/* a copy of its own: the workers share the judge's definitions */
		json_t *tools = json_deep_copy(it->j->tools);
		json_array_append_new(history, u);
		it->asked = tgi_provider_turn(p, e->o->model, history, tools, NULL, NULL, &it->reply,
		                              it->err, sizeof it->err) == 0;
		json_decref(tools);
	}
	it->ms = tgi_now_ms() - t0;
	json_decref(history);
}

static int cancelled(const eval *e)
{
	return e->o->cancel && *e->o->cancel;
}

/* Asking goes on: requests are left, the provider has not failed GIVE_UP
 * in a row, and nobody cancelled.  Under e->mu. */
static int asking(const eval *e)
{
	return e->next < e->nitems && e->in_a_row < GIVE_UP && !cancelled(e);
}

/* Take the next request, or NULL when asking is over. */
static item *take(eval *e)
{
	item *it = NULL;
	pthread_mutex_lock(&e->mu);
	if (asking(e))
		it = &e->items[e->next++];
	pthread_mutex_unlock(&e->mu);
	return it;
}

static void answered(eval *e, item *it)
{
	pthread_mutex_lock(&e->mu);
	e->done++;
	if (it->asked) {
		e->succeeded++;
		e->in_a_row = 0;
	} else {
		e->in_a_row++;
	}
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

typedef struct worker {
	eval         *e;
	tgi_provider *p;
} worker;

static void *work(void *arg)
{
	worker *w = arg;
	item *it;
	while ((it = take(w->e))) {
		ask_one(w->e, w->p, it);
		answered(w->e, it);
	}
	return NULL;
}

static void progress(eval *e, size_t done)
{
	if (e->o->progress)
		e->o->progress(e->o->progress_arg, done, e->nitems);
}

/* Ask every request: on this thread with one provider, else with a worker
 * per provider while this thread reports progress. */
static void ask_all(eval *e)
{
	e->next = e->done = e->succeeded = e->in_a_row = 0;
	if (e->nprov == 1) {
		item *it;
		while ((it = take(e))) {
			ask_one(e, e->provs[0], it);
			answered(e, it);
			progress(e, e->done);
		}
		return;
	}
	pthread_t *th = tgi_xcalloc(e->nprov, sizeof *th);
	worker *ws = tgi_xcalloc(e->nprov, sizeof *ws);
	size_t started = 0;
	for (size_t i = 0; i < e->nprov; i++) {
		ws[i] = (worker){e, e->provs[i]};
		if (pthread_create(&th[started], NULL, work, &ws[i]) == 0)
			started++;
	}
	if (!started)
		work(&ws[0]);
	pthread_mutex_lock(&e->mu);
	size_t shown = 0;
	for (;;) {
		int finished = e->done == e->next && !asking(e);
		if (e->done != shown) {
			shown = e->done;
			pthread_mutex_unlock(&e->mu);
			progress(e, shown);
			pthread_mutex_lock(&e->mu);
			continue;
		}
		if (finished)
			break;
		tgi_cond_wait_ms(&e->cv, &e->mu, 200);   /* wakes now and then to see a cancel */
	}
	pthread_mutex_unlock(&e->mu);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	free(ws);
}

/* ---- judging a reply ---- */

/* A verdict in the making: each check 1, 0 or -1 (does not apply). */
typedef struct verdict {
	int         tool, valid, args, policy;
	const char *failed;        /* the first check that failed */
	char        why[1024];
	const char *decision;      /* allow / ask / deny, or NULL */
	char        rule[512];
	json_t     *got_args;      /* redacted, or NULL */
} verdict;

static void fail_check(verdict *v, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail_check(verdict *v, const char *check, const char *fmt, ...)
{
	if (v->failed)
		return;
	v->failed = check;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof v->why, fmt, ap);
	va_end(ap);
}

/* The call a case is judged on: the first naming the expected tool, else
 * the first; NULL when the reply has none. */
static const tgi_pcall *judged_call(const tgi_eval_case *c, const tgi_pcalls *r)
{
	for (size_t i = 0; c->tool && i < r->n; i++)
		if (r->v[i].name && !strcmp(r->v[i].name, c->tool))
			return &r->v[i];
	return r->n ? &r->v[0] : NULL;
}

/* The arguments as the model sent them, for the report: parsed when they
 * are JSON (else the text), masked as the ledger would keep them. */
static json_t *shown_args(judge *j, const tgi_pcall *call, const tg_request *rq)
{
	if (!rq->args)
		return json_null();
	json_error_t je;
	json_t *a = json_loadb(rq->args, rq->args_len ? rq->args_len : strlen(rq->args), 0, &je);
	if (!a) {
		char *m = tgi_redact_text(j->g->redact, rq->args,
		                          rq->args_len ? rq->args_len : strlen(rq->args));
		json_t *s = tgi_json_text(m, strlen(m));
		free(m);
		return s;
	}
	const tgi_entry *te = call->name ? tgi_registry_find(j->g->reg, call->name) : NULL;
	json_t *red = tgi_redact_json(j->g->redact, a, te && te->sensitive.n ? &te->sensitive : NULL);
	json_decref(a);
	return red;
}

/* The gate's verdict on the call: decode, validate, identify, decide, and
 * the dry-run plan's would_fail. */
static void judge_call(eval *e, judge *j, const tgi_eval_case *c, const tgi_pcall *call,
                       verdict *v)
{
	tg_request rq;
	char *wrapped = NULL;
	tgi_dispatch_request(j->g, e->api, call, &rq, &wrapped);
	rq.principal = e->o->principal;
	rq.dry_run = 1;
	v->got_args = shown_args(j, call, &rq);

	tgi_call cl;
	tgi_call_begin(&cl, j->g, &rq);
	tgi_verdict gv = tgi_call_judge(&cl);
	json_t *plan = gv == TGI_NEXT ? tgi_call_plan(&cl) : NULL;
	const char *fails = json_string_value(json_object_get(plan, "would_fail"));
	int invalid = gv == TGI_STOP && cl.status == TG_INVALID;   /* a status is set only by a stop */
	int valid = !invalid && !fails;

	/* the message names its field when it has one ("/path is required") */
	if (invalid)
		fail_check(v, "valid", "invalid: %s", cl.message);
	else if (fails)
		fail_check(v, "valid", "would fail: %s", fails);
	v->valid = valid;

	/* the arguments as the tool would get them when valid, else as sent */
	if (c->match) {
		char why[512];
		json_t *args = valid ? json_incref(cl.args) : NULL;
		if (!args && rq.args)
			args = json_loadb(rq.args, rq.args_len ? rq.args_len : strlen(rq.args), 0, NULL);
		if (!json_is_object(args)) {
			v->args = 0;
			fail_check(v, "args", "the arguments are not a JSON object");
		} else if (!(v->args = tgi_match_check(c->match, args, why, sizeof why))) {
			fail_check(v, "args", "%s", why);
		}
		json_decref(args);
	} else {
		v->args = 1;
	}

	if (gv == TGI_STOP && cl.status == TG_DENIED) {
		v->decision = "deny";
		tgi_snprintf(v->rule, sizeof v->rule, "%s", cl.error_rule[0] ? cl.error_rule
		             : cl.rule[0] ? cl.rule : cl.message);
	} else if (gv == TGI_NEXT) {
		v->decision = tgi_decision_name(cl.decision);
		tgi_snprintf(v->rule, sizeof v->rule, "%s", cl.rule);
	}
	unsigned bit = !v->decision ? 0 : !strcmp(v->decision, "deny") ? TGI_EVAL_DENY
	             : TGI_EVAL_BIT(cl.decision);
	v->policy = valid && (bit & c->decisions) != 0;
	if (valid && !v->policy) {
		char want[32] = "";
		json_t *d = tgi_eval_decisions_json(c->decisions);
		size_t i;
		json_t *x;
		json_array_foreach(d, i, x) {
			if (i)
				strcat(want, i + 1 == json_array_size(d) ? " or " : ", ");
			strcat(want, json_string_value(x));
		}
		json_decref(d);
		fail_check(v, "policy", "decided %s (%s), expected %s",
		           v->decision ? v->decision : "nothing", v->rule, want);
	}
	json_decref(plan);
	tgi_call_drop(&cl);
	free(wrapped);
}

static json_t *check_json(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

/* A reply's text as a result keeps it: masked, cut. */
static json_t *shown_text(judge *j, const char *text)
{
	if (!text || !*text)
		return json_null();
	char *m = tgi_redact_text(j->g->redact, text, strlen(text));
	size_t n = strlen(m), cut = tgi_utf8_offset(m, n, SHOWN_MAX);
	if (cut < n) {
		m = tgi_xrealloc(m, cut + 4);
		memcpy(m + cut, "\xE2\x80\xA6", 4);   /* … */
		cut += 3;
	}
	json_t *s = tgi_json_text(m, cut);
	free(m);
	return s;
}

static json_t *result_of(eval *e, item *it)
{
	const tgi_eval_case *c = &e->suite.v[it->ci];
	verdict v = {.tool = 0, .valid = c->tool ? 0 : -1, .args = c->tool ? 0 : -1,
	             .policy = c->tool ? 0 : -1};
	const tgi_pcall *call = NULL;
	json_t *got = json_null();

	if (it->asked) {
		char name[160];
		call = judged_call(c, &it->reply);
		tgi_sanitize(name, sizeof name, call && call->name && *call->name ? call->name
		             : "a tool without a name");
		if (!c->tool) {
			v.tool = call == NULL;
			if (call)
				fail_check(&v, "tool", "called %s, expected no tool call", name);
		} else if (!call) {
			fail_check(&v, "tool", "no tool was called, expected %s", c->tool);
		} else if (!call->name || strcmp(call->name, c->tool)) {
			fail_check(&v, "tool", "called %s, expected %s", name, c->tool);
		} else {
			v.tool = 1;
			judge_call(e, it->j, c, call, &v);
		}
		if (call && !v.got_args) {
			tg_request rq;
			char *wrapped = NULL;
			tgi_dispatch_request(it->j->g, e->api, call, &rq, &wrapped);
			v.got_args = shown_args(it->j, call, &rq);
			free(wrapped);
		}
		got = json_pack("{s:o, s:o, s:I, s:o}",
		                "tool", call ? tgi_json_text(name, strlen(name)) : json_null(),
		                "args", v.got_args ? v.got_args : json_null(),
		                "calls", (json_int_t)it->reply.n,
		                "text", shown_text(it->j, it->reply.text));
	}
	int pass = it->asked && v.tool == 1 && v.valid != 0 && v.args != 0 && v.policy != 0;
	/* what the model or the provider said is kept as the ledger keeps text */
	char *why = tgi_redact_text(it->j->g->redact, it->asked ? v.why : it->err,
	                            strlen(it->asked ? v.why : it->err));
	json_t *failure = json_null(), *error = json_null();
	if (!it->asked) {
		failure = json_pack("{s:s, s:o}", "check", "tool", "message", tgi_json_text(why, strlen(why)));
		error = tgi_json_text(why, strlen(why));
	} else if (v.failed) {
		failure = json_pack("{s:s, s:o}", "check", v.failed, "message",
		                    tgi_json_text(why, strlen(why)));
	}
	free(why);
	return json_pack("{s:s, s:s, s:{s:s?, s:O?, s:o}, s:i, s:s, s:b, "
	                 "s:{s:o, s:o, s:o, s:o}, s:o, s:s?, s:o, s:o, s:o, s:f}",
	                 "case", c->id, "where", c->where,
	                 "expect", "tool", c->tool, "args", c->args,
	                 "decision", c->tool ? tgi_eval_decisions_json(c->decisions) : json_array(),
	                 "run", it->run, "request", c->request, "pass", pass,
	                 "checks", "tool", check_json(v.tool), "valid", check_json(v.valid),
	                 "args", check_json(v.args), "policy", check_json(v.policy),
	                 "got", got, "decision", v.decision,
	                 "rule", v.rule[0] ? tgi_json_text(v.rule, strlen(v.rule)) : json_null(),
	                 "failure", failure, "error", error, "ms", it->ms);
}

/* ---- one run ---- */

static json_t *definitions(eval *e, judge *j)
{
	char *text = json_dumps(j->tools, JSON_COMPACT);
	size_t n = text ? strlen(text) : 0;
	json_t *d = json_pack("{s:s?, s:s, s:I, s:I, s:I}", "profile",
	                      j->profile ? j->profile : j->g->profile, "api", e->api->name,
	                      "tools", (json_int_t)j->ntools, "chars", (json_int_t)n,
	                      "tokens_est", (json_int_t)tgi_eval_tokens(text ? text : "", n));
	free(text);
	return d;
}

static void items_free(eval *e)
{
	for (size_t i = 0; i < e->nitems; i++)
		tgi_pcalls_free(&e->items[i].reply);
	free(e->items);
	e->items = NULL;
	e->nitems = 0;
}

/* Run the suite on config (NULL: the caller's): the report, or NULL with
 * errmsg. */
static json_t *run_suite(eval *e, const char *config, char **errmsg)
{
	const tg_eval_options *o = e->o;
	int runs = o->runs > 0 ? o->runs : 1;
	char started[32];
	int64_t t_unix = tgi_unix_ms();
	double t0 = tgi_now_ms();
	tgi_iso8601(t_unix, started);
	e->config = config;

	judge *main_judge = judge_for(e, o->profile, errmsg);
	if (!main_judge)
		return NULL;
	e->nitems = e->suite.n * (size_t)runs;
	e->items = tgi_xcalloc(e->nitems ? e->nitems : 1, sizeof *e->items);
	for (size_t ci = 0; ci < e->suite.n; ci++) {
		char *why = NULL;
		judge *j = judge_for(e, profile_of(e, &e->suite.v[ci]), &why);
		if (!j) {
			tgi_fail(errmsg, "%s: %s", e->suite.v[ci].where, why ? why : "no gate");
			free(why);
			return NULL;
		}
		for (int r = 0; r < runs; r++)
			e->items[ci * (size_t)runs + (size_t)r] = (item){.ci = ci, .run = r + 1, .j = j};
	}

	ask_all(e);
	if (cancelled(e)) {
		tgi_fail(errmsg, "interrupted: %zu of %zu requests answered", e->done, e->nitems);
		return NULL;
	}
	if (!e->succeeded) {
		const char *why = e->nitems ? e->items[0].err : "no case to ask";
		tgi_fail(errmsg, "the model could not be asked: %s", why[0] ? why : "no answer");
		return NULL;
	}
	for (size_t i = e->next; i < e->nitems; i++)
		tgi_snprintf(e->items[i].err, sizeof e->items[i].err, "not asked: the provider "
		             "failed %d requests in a row", GIVE_UP);

	json_t *results = json_array();
	for (size_t ci = 0; ci < e->suite.n; ci++) {
		char err[1024];
		if (setup_case(e, &e->suite.v[ci], err, sizeof err) < 0) {
			json_decref(results);
			tgi_fail(errmsg, "%s: %s", e->suite.v[ci].where, err);
			return NULL;
		}
		for (int r = 0; r < runs; r++) {
			json_t *res = result_of(e, &e->items[ci * (size_t)runs + (size_t)r]);
			if (json_array_append_new(results, res) < 0) {
				json_decref(results);
				tgi_fail(errmsg, "%s: the result of this case cannot be written as JSON",
				         e->suite.v[ci].where);
				return NULL;
			}
		}
	}

	const char *cfg_path = main_judge->g->cfg->path;
	json_t *rep = json_pack("{s:{s:s, s:I, s:O}, s:s, s:s, s:s?, s:i, s:o, s:s, s:s, "
	                        "s:o, s:s, s:f, s:o, s:o}",
	                        "suite", "digest", e->digest, "cases", (json_int_t)e->suite.n,
	                        "files", e->suite.files,
	                        "provider", e->provs[0]->ops->name, "api", e->api->name,
	                        "model", o->model && *o->model ? o->model : e->provs[0]->model,
	                        "runs", runs, "config", tgi_json_str_or_null(cfg_path),
	                        "profile", main_judge->g->profile, "manifest", main_judge->manifest,
	                        "definitions", definitions(e, main_judge), "started", started,
	                        "duration_ms", tgi_now_ms() - t0,
	                        "scores", tgi_eval_scores(results), "results", results);
	if (!rep)
		tgi_fail(errmsg, "the report cannot be written as JSON");
	return rep;
}

/* ---- keeping a run ---- */

/* Keep rep as a run that started at ts_ms. */
static int record(eval *e, json_t *rep, int64_t ts_ms, char **errmsg)
{
	static const char *const checks[] = {"tool", "valid", "args", "policy", "pass"};
	json_t *kept = json_copy(rep);
	json_object_del(kept, "results");
	json_object_del(kept, "baseline");
	json_object_del(kept, "difference");
	json_object_del(kept, "thresholds");
	char *text = json_dumps(kept, JSON_COMPACT);
	json_decref(kept);
	const json_t *overall = json_object_get(json_object_get(rep, "scores"), "overall");
	char id[37], err[512];
	tgi_uuidv7(id);
	tgi_eval_row row = {
		.id = id, .ts_ms = ts_ms,
		.provider = json_string_value(json_object_get(rep, "provider")),
		.api = json_string_value(json_object_get(rep, "api")),
		.model = json_string_value(json_object_get(rep, "model")),   /* NULL: scripted */
		.profile = json_string_value(json_object_get(rep, "profile")),
		.manifest = json_string_value(json_object_get(rep, "manifest")),
		.suite = e->digest,
		.cases = (int64_t)e->suite.n,
		.runs = json_integer_value(json_object_get(rep, "runs")),
		.report = text,
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(checks); i++)
		row.score[i] = tgi_eval_rate(overall, checks[i]);
	int rc = tgi_store_eval_put(e->home->store, &row, err, sizeof err);
	free(text);
	if (rc < 0)
		return tgi_fail(errmsg, "the run could not be kept in the ledger: %s", err);
	json_object_set_new(rep, "id", json_string(id));
	return 0;
}

/* ---- the eval ---- */

static int check_options(const tg_eval_options *o, char **errmsg)
{
	const char *f = o->format;
	if (f && strcmp(f, "table") && strcmp(f, "json") && strcmp(f, "junit"))
		return tgi_fail(errmsg, "unknown format; expected table, json or junit");
	if (o->runs < 0 || o->runs > RUNS_MAX)
		return tgi_fail(errmsg, "runs is from 1 to %d", RUNS_MAX);
	if (o->jobs < 0 || o->jobs > JOBS_MAX)
		return tgi_fail(errmsg, "jobs is from 1 to %d", JOBS_MAX);
	if (o->fail_under > 1 || o->max_drop > 1)
		return tgi_fail(errmsg, "a threshold is a rate from 0 to 1");
	if (o->max_drop >= 0 && !o->compare)
		return tgi_fail(errmsg, "a maximum drop needs a baseline to compare with "
		                "(--compare OTHER_CONFIG)");
	if (o->timeout_s < 0 || o->timeout_s > 3600)
		return tgi_fail(errmsg, "a request's timeout is from 1 to 3600 seconds");
	/* what a run is kept under: the ledger takes printable UTF-8 of TGI_EVAL_TEXT_MAX bytes */
	const char *texts[] = {o->model, o->profile};
	for (size_t i = 0; i < TGI_ARRAY_LEN(texts); i++) {
		char shown[TGI_EVAL_TEXT_MAX + 1];
		if (!texts[i])
			continue;
		tgi_sanitize(shown, sizeof shown, texts[i]);
		if (strlen(texts[i]) > TGI_EVAL_TEXT_MAX || strcmp(shown, texts[i]))
			return tgi_fail(errmsg, "a %s is printable UTF-8 of at most %d bytes",
			                i ? "profile" : "model name", TGI_EVAL_TEXT_MAX);
	}
	return 0;
}

static int load_suite(eval *e, char **errmsg)
{
	const tg_eval_options *o = e->o;
	char err[1024];
	if (!o->nfiles) {
		if (tgi_eval_suite_builtin(&e->suite, err, sizeof err) < 0)
			return tgi_fail(errmsg, "the built-in suite: %s", err);
	}
	for (size_t i = 0; i < o->nfiles; i++) {
		size_t len = 0;
		char *text = NULL;
		int fd = open(o->files[i], O_RDONLY | O_CLOEXEC);
		int r = fd < 0 ? -errno : tgi_read_fd(fd, TGI_EVAL_FILE_MAX, &text, &len);
		if (fd >= 0)
			close(fd);
		if (r < 0)
			return tgi_fail(errmsg, "%s: %s", o->files[i], r == -EFBIG
			                ? "too big for an eval file (at most 16 MiB)" : strerror(-r));
		int rc = tgi_eval_suite_load(&e->suite, o->files[i], text, len, err, sizeof err);
		free(text);
		if (rc < 0)
			return tgi_fail(errmsg, "%s", err);
	}
	if (!e->suite.n)
		return tgi_fail(errmsg, "the suite has no case");
	tgi_eval_suite_digest(&e->suite, e->digest);
	return 0;
}

static int open_providers(eval *e, char **errmsg)
{
	const tg_eval_options *o = e->o;
	int scripted = !o->provider || !*o->provider || !strcmp(o->provider, "scripted");
	if (scripted && !o->script)
		return tgi_fail(errmsg, "the scripted provider needs a script of answers (--script "
		                "FILE); its built-in script is the agent's demo");
	size_t n = scripted ? 1 : o->jobs > 0 ? (size_t)o->jobs : JOBS_HTTP;
	e->provs = tgi_xcalloc(n, sizeof *e->provs);
	tgi_provider_opts po = {.provider = o->provider, .model = o->model,
	                        .base_url = o->base_url, .script = o->script,
	                        .timeout_s = o->timeout_s > 0 ? o->timeout_s : TIMEOUT_S,
	                        .retries = RETRIES};
	for (; e->nprov < n; e->nprov++)
		if (tgi_provider_open(&po, &e->provs[e->nprov], errmsg) < 0)
			return -1;
	e->api = e->provs[0]->api;
	return 0;
}

static int make_scratch(eval *e, char **errmsg)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX], real[PATH_MAX];
	tgi_snprintf(path, sizeof path, "%s/toolgate-eval-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(path))
		return tgi_fail(errmsg, "cannot make a scratch workspace in %s: %s",
		                tmp && *tmp ? tmp : "/tmp", strerror(errno));
	if (!realpath(path, real)) {
		remove_tree(path);
		return tgi_fail(errmsg, "the scratch workspace: %s", strerror(errno));
	}
	e->scratch = tgi_strdup(real);
	return 0;
}

static void eval_free(eval *e)
{
	judges_close(e);
	items_free(e);
	for (size_t i = 0; i < e->nprov; i++)
		tgi_provider_free(e->provs[i]);
	free(e->provs);
	if (e->scratch)
		remove_tree(e->scratch);
	free(e->scratch);
	tgi_eval_suite_free(&e->suite);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
}

/* Open the gates a run on config would judge on, and close them again: a
 * baseline that cannot be judged on is found before any request is paid
 * for. */
static int check_config(eval *e, const char *config, char **errmsg)
{
	e->config = config;
	int rc = judge_for(e, e->o->profile, errmsg) ? 0 : -1;
	for (size_t ci = 0; rc == 0 && ci < e->suite.n; ci++) {
		char *why = NULL;
		if (!judge_for(e, profile_of(e, &e->suite.v[ci]), &why)) {
			rc = tgi_fail(errmsg, "%s: %s", e->suite.v[ci].where, why ? why : "no gate");
			free(why);
		}
	}
	judges_close(e);
	return rc;
}

static json_t *run_all(eval *e, char **errmsg)
{
	const tg_eval_options *o = e->o;
	if (o->compare && check_config(e, o->compare, errmsg) < 0)
		return NULL;
	int64_t started = tgi_unix_ms();
	json_t *rep = run_suite(e, NULL, errmsg);
	judges_close(e);
	items_free(e);
	if (!rep)
		return NULL;
	if (o->compare) {
		json_t *base = run_suite(e, o->compare, errmsg);
		judges_close(e);
		items_free(e);
		if (!base) {
			json_decref(rep);
			return NULL;
		}
		json_object_set_new(rep, "difference", tgi_eval_difference(rep, base));
		json_object_set_new(rep, "baseline", base);
	}
	/* a run that cannot be kept is still reported: errmsg carries the warning.
	 * The baseline is kept as the older of the two: it is the state before. */
	if (!o->no_record) {
		json_t *base = json_object_get(rep, "baseline");
		if (!base || record(e, base, started - 1, errmsg) == 0)
			record(e, rep, started, errmsg);
	}
	return rep;
}

int tg_eval(tg_gate *g, const tg_options *gate, const tg_eval_options *o, char **out,
            char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	*out = NULL;
	if (!g || !o)
		return tgi_fail(errmsg, "tg_eval needs a gate and options");
	if (check_options(o, errmsg) < 0)
		return -1;
	tg_options none = {.sync_full = -1};
	eval e = {.home = g, .gopts = gate ? gate : &none, .o = o, .suite = {.files = json_array()}};
	pthread_mutex_init(&e.mu, NULL);
	tgi_cond_init(&e.cv);
	int rc = -1;
	json_t *rep = NULL;
	if (load_suite(&e, errmsg) == 0 && open_providers(&e, errmsg) == 0 &&
	    make_scratch(&e, errmsg) == 0 && (rep = run_all(&e, errmsg))) {
		/* errmsg may hold a warning now (the run was not kept) */
		int failed = tgi_eval_thresholds(rep, o->fail_under, o->compare ? o->max_drop : -1);
		*out = tgi_eval_render(rep, o->format ? o->format : "table");
		rc = failed > 0;
		if (!*out) {
			if (errmsg) {
				free(*errmsg);
				*errmsg = NULL;
			}
			rc = tgi_fail(errmsg, "the report could not be written");
		}
	}
	json_decref(rep);
	eval_free(&e);
	return rc;
}

/* ---- operator views ---- */

/* The format of --history and --sizes: 0, or -1 with errmsg. */
static int view_format(const char *format, char **errmsg)
{
	if (format && strcmp(format, "table") && strcmp(format, "json"))
		return tgi_fail(errmsg, "unknown format; expected table or json");
	return 0;
}

char *tg_eval_history(tg_gate *g, const char *model, int limit, const char *format,
                      char **errmsg)
{
	char err[512];
	json_t *rows = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (view_format(format, errmsg) < 0)
		return NULL;
	int rc = tgi_store_eval_list(g->store, model, limit > 0 ? limit : 20, &rows, err, sizeof err);
	if (rc < 0) {
		tgi_fail(errmsg, "%s", err);
		return NULL;
	}
	char *s = tgi_eval_history_render(rows, format ? format : "table");
	json_decref(rows);
	return s;
}

char *tg_eval_sizes(tg_gate *g, const char *format, char **errmsg)
{
	static const char *const apis[] = {"openai-chat", "openai-responses", "anthropic", "gemini"};
	if (errmsg)
		*errmsg = NULL;
	if (view_format(format, errmsg) < 0)
		return NULL;
	json_t *rows = json_array();
	for (size_t i = 0; i < g->cfg->nprofiles; i++) {
		const char *profile = g->cfg->profiles[i].name;
		json_t *per = json_object();
		size_t ntools = 0;
		for (size_t k = 0; k < TGI_ARRAY_LEN(apis); k++) {
			json_t *tools = tgi_model_tools(g, profile, NULL, tgi_protocol_find(apis[k]), &ntools,
			                                errmsg);
			if (!tools) {
				json_decref(per);
				json_decref(rows);
				return NULL;
			}
			char *text = json_dumps(tools, JSON_COMPACT);
			size_t n = text ? strlen(text) : 0;
			json_object_set_new(per, apis[k], json_pack("{s:I, s:I}", "chars", (json_int_t)n,
			                    "tokens_est", (json_int_t)tgi_eval_tokens(text ? text : "", n)));
			free(text);
			json_decref(tools);
		}
		json_array_append_new(rows, json_pack("{s:s, s:I, s:o}", "profile", profile, "tools",
		                                      (json_int_t)ntools, "apis", per));
	}
	char *s = tgi_eval_sizes_render(rows, format ? format : "table");
	json_decref(rows);
	return s;
}

