/*
 * loop.c — `toolgate agent` (agent.h): the turns of a model using tools
 * through the gate, the transcript, and the conversation in the ledger.
 *
 *   history = [user prompt]                    (or the saved one, --resume)
 *   turn:  request(history, tools) ──► provider ──► reply bytes
 *          decode (the API's decoder; JSON or SSE)
 *          no calls?  ──► history += assistant entries; done (0)
 *          every call through the gate as one batch (tgi_dispatch_calls)
 *          history += assistant entries, then the API's result entries
 *          save the turn's entries (redacted) to the ledger
 *          turn == max_turns?  ──► stopped (1)
 *
 * Every call carries the session, so `toolgate log --session S` shows the
 * calls and loop detection sees the session's window.  What is saved is
 * redacted like everything else the ledger keeps: a resumed conversation
 * sees masked values where the model once saw secrets.
 *
 * The transcript is written for a human (the model's text, live when the
 * reply streams, and one line per call: tool, status, the stage that
 * stopped it, a short result) or, with json, as one JSON object per line
 * per event.  Text from the model and from tools is data: control
 * characters are never written to the terminal as they are.
 *
 * Owns: the conversation of one run.  Must not: judge or run calls (the
 * gate does), speak HTTP or read keys (http.c does), or know an API's
 * wire shapes (src/protocol/ and dialogue.c do).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

#define DEFAULT_MAX_TURNS 20
#define SHORT_RESULT      100   /* characters of a result in the transcript */
#define SESSION_MAX       256

typedef struct agent {
	tg_gate                *g;
	const tg_agent_options *o;
	FILE                   *out;
	tgi_provider           *prov;
	const tgi_protocol     *api;
	const char             *principal;
	json_t                 *tools;     /* the definitions in the API's shape, or NULL */
	json_t                 *history;   /* every entry so far */
	size_t                  saved;     /* entries of history already in the ledger */
	char                    session[SESSION_MAX + 1];
	int                     turn;      /* the current turn of this run, from 1 */
	size_t                  calls;     /* calls made in this run */
	size_t                  stopped;   /* of them, stopped before or while running */
	int                     live;      /* text of this turn shown as it came */
	int                     live_nl;   /* that text ended with a newline */
	int                     c2;        /* the last byte shown was 0xC2 (a C1 control may follow) */
	int                     shown;     /* the session line was shown: the end will be too */
} agent;

/* ---- the transcript ---- */

/*
 * Write model or tool text for a terminal: C0 and C1 control characters
 * (an escape sequence could rewrite the screen) become spaces, except
 * newline and tab.  A C1 character is 0xC2 0x80..0x9F: c2 carries a 0xC2
 * at the end of one piece of a stream to the next.
 */
static void put_text(FILE *f, const char *s, size_t n, int *c2)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (*c2) {
			*c2 = 0;
			if (ch >= 0x80 && ch <= 0x9f) {
				fputs("  ", f);   /* the 0xC2 held back, and this */
				continue;
			}
			fputc(0xc2, f);
		}
		if (ch == 0xc2) {
			*c2 = 1;
			continue;
		}
		fputc((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? ' ' : ch, f);
	}
}

static void put_text_end(FILE *f, int *c2)
{
	if (*c2)
		fputc(0xc2, f);
	*c2 = 0;
}

/* One JSON event line (ev is stolen; NULL: nothing). */
static void emit(agent *a, json_t *ev)
{
	if (!ev)
		return;
	char *s = json_dumps(ev, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (s) {
		fputs(s, a->out);
		fputc('\n', a->out);
		free(s);
	}
	json_decref(ev);
	fflush(a->out);
}

/* Text as the ledger and the event stream may hold it (caller frees). */
static char *masked(agent *a, const char *s)
{
	return tgi_redact_text(a->g->redact, s ? s : "", s ? strlen(s) : 0);
}

/* The provider's live text, shown as it arrives (not in json mode). */
static void on_text(void *arg, const char *text, size_t len)
{
	agent *a = arg;
	if (a->o->json || !len)
		return;
	put_text(a->out, text, len, &a->c2);
	a->live = 1;
	a->live_nl = text[len - 1] == '\n';
	fflush(a->out);
}

static void show_session(agent *a, size_t loaded)
{
	const char *prov = a->prov->ops->name;
	if (a->o->json) {
		emit(a, json_pack("{s:s, s:o, s:s, s:s, s:b, s:I}", "event", "session",
		                  "session", tgi_json_text(a->session, strlen(a->session)),
		                  "provider", prov, "api", a->api->name,
		                  "resumed", a->o->resume, "history", (json_int_t)loaded));
		return;
	}
	fprintf(a->out, "session %s (%s", a->session, prov);
	if (strcmp(prov, a->api->name))
		fprintf(a->out, ", %s", a->api->name);
	if (a->o->resume)
		fprintf(a->out, "; resumed with %zu entries", loaded);
	fputs(")\n", a->out);
	fflush(a->out);
}

static void show_turn(agent *a)
{
	if (a->o->json)
		emit(a, json_pack("{s:s, s:i, s:I}", "event", "turn", "turn", a->turn, "history",
		                  (json_int_t)json_array_size(a->history)));
	else
		fprintf(a->out, "\n-- turn %d\n", a->turn);
	fflush(a->out);
}

/* The model's text of this turn, unless it was shown live. */
static void show_text(agent *a, const char *text)
{
	if (a->o->json) {
		if (text && *text) {
			char *m = masked(a, text);
			emit(a, json_pack("{s:s, s:i, s:o}", "event", "text", "turn", a->turn, "text",
			                  tgi_json_text(m, strlen(m))));
			free(m);
		}
		return;
	}
	if (a->live) {
		put_text_end(a->out, &a->c2);
		if (!a->live_nl)
			fputc('\n', a->out);
	} else if (text && *text) {
		size_t n = strlen(text);
		put_text(a->out, text, n, &a->c2);
		put_text_end(a->out, &a->c2);
		if (text[n - 1] != '\n')
			fputc('\n', a->out);
	}
	fflush(a->out);
}

/* The stage that stopped a call: the first one not ok, or NULL. */
static const char *stopped_at(const json_t *env)
{
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st)
		if (json_is_false(json_object_get(st, "ok")))
			return json_string_value(json_object_get(st, "stage"));
	return NULL;
}

/* What a call came to, in one short line: "kind: message" for a call that
 * was stopped, else its output (a string, an object's summary, or compact
 * JSON).  Redacted, control characters made spaces, at most SHORT_RESULT
 * characters.  Caller frees. */
static char *short_result(agent *a, const json_t *env)
{
	const char *status = json_string_value(json_object_get(env, "status"));
	const json_t *e = json_object_get(env, "error");
	const json_t *out = json_object_get(env, "output");
	char *raw;
	if (tgi_status_is_error(status) || json_is_object(e)) {
		const char *kind = json_string_value(json_object_get(e, "kind"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		size_t n = 16 + (kind ? strlen(kind) : 5) + (msg ? strlen(msg) : 0);
		raw = tgi_xmalloc(n);
		snprintf(raw, n, "%s: %s", kind ? kind : "error", msg ? msg : "");
	} else if (json_is_string(out)) {
		raw = tgi_strdup(json_string_value(out));
	} else if (json_is_string(json_object_get(out, "summary"))) {
		raw = tgi_strdup(json_string_value(json_object_get(out, "summary")));
	} else {
		raw = out ? json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (!raw)
			raw = tgi_strdup("");
	}
	char *m = masked(a, raw);
	free(raw);
	/* one line: newlines and tabs too become spaces */
	for (char *p = m; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	size_t cut = tgi_utf8_offset(m, strlen(m), SHORT_RESULT);
	char *s = tgi_xmalloc(cut * 4 + 8);
	tgi_sanitize_n(s, cut * 4 + 8, m, strlen(m), cut);
	free(m);
	return s;
}

static void show_call(agent *a, const tgi_pcall *c, const json_t *env)
{
	const char *status = json_string_value(json_object_get(env, "status"));
	const char *stage = tgi_status_is_error(status) ? stopped_at(env) : NULL;
	const char *tool = json_string_value(json_object_get(env, "tool"));
	char *res = short_result(a, env);
	char name[160];
	tgi_sanitize(name, sizeof name, tool ? tool : c->name ? c->name : "?");
	a->calls++;
	a->stopped += tgi_status_is_error(status);
	if (a->o->json) {
		const json_t *e = json_object_get(env, "error");
		json_t *err = json_is_object(e)
			? json_pack("{s:O?, s:O?}", "kind", json_object_get(e, "kind"),
			            "message", json_object_get(e, "message"))
			: json_null();
		json_t *ev = json_pack("{s:s, s:i, s:O?, s:O?, s:o, s:s, s:s?, s:o, s:o}",
		                       "event", "call", "turn", a->turn,
		                       "op_id", json_object_get(env, "op_id"),
		                       "call_id", json_object_get(env, "call_id"),
		                       "tool", tgi_json_text(name, strlen(name)),
		                       "status", status ? status : "?", "stage", stage,
		                       "error", err, "result", tgi_json_text(res, strlen(res)));
		/* the error message as the ledger has it */
		json_t *red = ev ? tgi_redact_json(a->g->redact, ev, NULL) : NULL;
		json_decref(ev);
		if (red)
			emit(a, red);
	} else {
		fputs("\xE2\x86\x92 ", a->out);
		put_text(a->out, name, strlen(name), &a->c2);
		put_text_end(a->out, &a->c2);
		const char *sgr = a->o->color ? tgi_status_sgr(status) : "";
		fprintf(a->out, "  %s%s%s%s%s", *sgr ? "\033[" : "", sgr, *sgr ? "m" : "",
		        status ? status : "?", *sgr ? "\033[0m" : "");
		if (stage)
			fprintf(a->out, "  [%s]", stage);
		if (*res) {
			fputs("  ", a->out);
			put_text(a->out, res, strlen(res), &a->c2);
			put_text_end(a->out, &a->c2);
		}
		/* the approval whole, however short the result was cut */
		const char *approval = json_string_value(
			json_object_get(json_object_get(env, "error"), "approval_id"));
		if (approval) {
			char id[64];
			tgi_sanitize(id, sizeof id, approval);
			fprintf(a->out, "\n    approve: toolgate approvals approve %s", id);
		}
		fputc('\n', a->out);
		fflush(a->out);
	}
	free(res);
}

static void show_end(agent *a, int rc, const char *errmsg)
{
	const char *why = rc == 0 ? "done" : rc == 1 ? "max_turns" : "error";
	if (a->o->json) {
		char *m = errmsg ? masked(a, errmsg) : NULL;
		emit(a, json_pack("{s:s, s:s, s:o, s:i, s:I, s:I, s:o}", "event", "finished",
		                  "reason", why, "session", tgi_json_text(a->session, strlen(a->session)),
		                  "turns", a->turn, "calls", (json_int_t)a->calls,
		                  "stopped", (json_int_t)a->stopped,
		                  "error", m ? tgi_json_text(m, strlen(m)) : json_null()));
		free(m);
		return;
	}
	if (rc < 0)
		return;   /* the caller prints the error */
	fputc('\n', a->out);
	if (rc == 0)
		fprintf(a->out, "done: %d turn%s, %zu call%s (%zu stopped); session %s\n", a->turn,
		        a->turn == 1 ? "" : "s", a->calls, a->calls == 1 ? "" : "s", a->stopped,
		        a->session);
	else
		fprintf(a->out, "stopped at the turn limit (--max-turns %d): %zu call%s (%zu stopped); "
		        "continue with --resume %s (and the same --provider)\n", a->turn, a->calls,
		        a->calls == 1 ? "" : "s",
		        a->stopped, a->session);
	fflush(a->out);
}

/* ---- the conversation in the ledger ---- */

/* Mask the arguments of a tool call written in entry (any API's shape: an
 * object naming a tool with "name" beside "arguments" as JSON text, or
 * "input" / "args" as an object) with the configured keys and that tool's
 * x-sensitive ones: JSON text is masked as the JSON it holds, so a key
 * inside it is found too.  The secret patterns and configured keys are
 * masked over the whole entry afterwards.  Works in place on a private
 * copy. */
static void mask_calls(agent *a, json_t *v, int depth)
{
	if (depth > 64)
		return;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
			mask_calls(a, e, depth + 1);
		return;
	}
	if (!json_is_object(v))
		return;
	const char *name = json_string_value(json_object_get(v, "name"));
	const tgi_entry *te = name ? tgi_registry_find(a->g->reg, name) : NULL;
	const tgi_strv *keys = te && te->sensitive.n ? &te->sensitive : NULL;
	const char *key;
	json_t *val;
	void *tmp;
	json_object_foreach_safe(v, tmp, key, val) {
		if (!strcmp(key, "arguments") && json_is_string(val)) {
			json_error_t je;
			json_t *args = json_loads(json_string_value(val), 0, &je);
			json_t *red = args ? tgi_redact_json(a->g->redact, args, keys) : NULL;
			char *s = red && red != args ? json_dumps(red, JSON_COMPACT) : NULL;
			if (s)
				json_object_set_new(v, key, json_string(s));
			free(s);
			json_decref(red);
			json_decref(args);
		} else if (keys && (!strcmp(key, "input") || !strcmp(key, "args")) &&
		           json_is_object(val)) {
			json_t *red = tgi_redact_json(a->g->redact, val, keys);
			if (red != val)
				json_object_set(v, key, red);
			json_decref(red);
		} else {
			mask_calls(a, val, depth + 1);
		}
	}
}

/* Save the entries of history not yet saved, redacted.  0 or -1 with errmsg. */
static int save(agent *a, char **errmsg)
{
	size_t n = json_array_size(a->history);
	if (a->saved >= n)
		return 0;
	json_t *batch = json_array();
	for (size_t i = a->saved; i < n; i++) {
		json_t *copy = json_deep_copy(json_array_get(a->history, i));
		mask_calls(a, copy, 0);
		json_array_append_new(batch, tgi_redact_json(a->g->redact, copy, NULL));
		json_decref(copy);
	}
	char err[512];
	int rc = tgi_store_messages_append(a->g->store, a->session, a->api->name, batch, err,
	                                   sizeof err);
	json_decref(batch);
	if (rc < 0)
		return tgi_fail(errmsg, "cannot save the conversation: %s", err);
	a->saved = n;
	return 0;
}

/* The saved conversation of the session (resume), or a check that a new
 * run does not reuse a session that has one.  0 or -1 with errmsg. */
static int load(agent *a, char **errmsg)
{
	char err[512], api[32], shown[80];
	json_t *saved = NULL;
	int rc = tgi_store_messages(a->g->store, a->session, &saved, api, err, sizeof err);
	if (rc < 0)
		return tgi_fail(errmsg, "%s", err);
	tgi_sanitize(shown, sizeof shown, a->session);
	size_t n = json_array_size(saved);
	if (!a->o->resume) {
		json_decref(saved);
		if (n)
			return tgi_fail(errmsg, "session \"%s\" already has a conversation; continue it "
			                "with --resume %s, or choose another session", shown, shown);
		return 0;
	}
	if (!n) {
		json_decref(saved);
		return tgi_fail(errmsg, "session \"%s\" has no conversation to resume", shown);
	}
	if (strcmp(api, a->api->name)) {
		json_decref(saved);
		return tgi_fail(errmsg, "session \"%s\" is a conversation in the %s API, and this "
		                "provider speaks %s; resume it with a provider of that API", shown,
		                api, a->api->name);
	}
	json_array_extend(a->history, saved);
	json_decref(saved);
	a->saved = n;
	return 0;
}

/* ---- setting up ---- */

static int open_provider(agent *a, char **errmsg)
{
	const tg_agent_options *o = a->o;
	tgi_provider_opts po = {.provider = o->provider, .model = o->model,
	                        .base_url = o->base_url, .script = o->script};
	if (tgi_provider_open(&po, &a->prov, errmsg) < 0)
		return -1;
	a->api = a->prov->api;
	return 0;
}

static int make_tools(agent *a, char **errmsg)
{
	a->tools = tgi_model_tools(a->g, NULL, a->principal, a->api, NULL, errmsg);
	return a->tools ? 0 : -1;
}

static int make_session(agent *a, char **errmsg)
{
	const tg_agent_options *o = a->o;
	if (o->session && *o->session) {
		if (strlen(o->session) > SESSION_MAX)
			return tgi_fail(errmsg, "a session name is at most %d bytes", SESSION_MAX);
		/* as the gate takes labels: printable UTF-8, refused rather than rewritten */
		tgi_sanitize(a->session, sizeof a->session, o->session);
		if (strcmp(a->session, o->session))
			return tgi_fail(errmsg, "a session name is printable UTF-8, without control "
			                "characters");
		return 0;
	}
	if (o->resume)
		return tgi_fail(errmsg, "say which session to resume");
	char id[37];
	tgi_uuidv7(id);
	tgi_snprintf(a->session, sizeof a->session, "agent-%s", id);
	return 0;
}

/* ---- one turn ---- */

/* Ask the model.  0 with the decoded reply, or -1 with errmsg. */
static int ask(agent *a, tgi_pcalls *reply, char **errmsg)
{
	char err[1100];
	a->live = a->live_nl = 0;
	if (tgi_provider_turn(a->prov, a->o->model, a->history, a->tools, on_text, a, reply, err,
	                      sizeof err) == 0)
		return 0;
	if (a->live && !a->o->json) {
		put_text_end(a->out, &a->c2);
		fputc('\n', a->out);
	}
	return tgi_fail(errmsg, "turn %d: %s", a->turn, err);
}

/* One turn: 0 the model answered without calls, 1 it made calls, -1 error.
 * The history gets the turn whole or not at all: the model's calls only
 * with their results, since an API refuses a conversation with a call left
 * unanswered (and a resume would start from one). */
static int turn(agent *a, char **errmsg)
{
	tgi_pcalls reply = {0};
	show_turn(a);
	if (ask(a, &reply, errmsg) < 0) {
		tgi_pcalls_free(&reply);
		return -1;
	}
	show_text(a, reply.text);
	json_t *said = tgi_dialogue_assistant(a->api, &reply);
	if (!said) {
		tgi_pcalls_free(&reply);
		return tgi_fail(errmsg, "turn %d: cannot rebuild the model's reply", a->turn);
	}
	if (!reply.n) {
		json_array_extend(a->history, said);
		json_decref(said);
		tgi_pcalls_free(&reply);
		return 0;
	}
	json_t *envs = NULL;
	json_t *results = tgi_dispatch_calls(a->g, a->api, &reply, a->session, a->principal,
	                                     &envs);
	for (size_t i = 0; i < reply.n; i++)
		show_call(a, &reply.v[i], json_array_get(envs, i));
	json_decref(envs);
	tgi_pcalls_free(&reply);
	if (!results) {
		json_decref(said);
		return tgi_fail(errmsg, "turn %d: the results cannot be written in the %s shape",
		                a->turn, a->api->name);
	}
	json_array_extend(a->history, said);
	json_array_extend(a->history, results);
	json_decref(said);
	json_decref(results);
	return 1;
}

/* ---- the run ---- */

static int run(agent *a, char **errmsg)
{
	const tg_agent_options *o = a->o;
	int max = o->max_turns > 0 ? o->max_turns : DEFAULT_MAX_TURNS;
	if (!o->resume && (!o->prompt || !*o->prompt))
		return tgi_fail(errmsg, "say what the agent should do (a prompt)");
	if (make_session(a, errmsg) < 0 || open_provider(a, errmsg) < 0 ||
	    make_tools(a, errmsg) < 0 || load(a, errmsg) < 0)
		return -1;
	size_t loaded = json_array_size(a->history);
	if (o->prompt && *o->prompt) {
		json_t *u = tgi_dialogue_user(a->api, o->prompt);
		if (!u)
			return tgi_fail(errmsg, "cannot write the prompt as a %s message", a->api->name);
		json_array_append_new(a->history, u);
	}
	show_session(a, loaded);
	a->shown = 1;
	for (a->turn = 1;; a->turn++) {
		int rc = turn(a, errmsg);
		if (rc < 0) {
			save(a, NULL);   /* the complete turns are kept: a resume starts there */
			return -1;
		}
		if (save(a, errmsg) < 0)
			return -1;
		if (rc == 0)
			return 0;
		if (a->turn >= max)
			return 1;
	}
}

int tg_agent(tg_gate *g, const tg_agent_options *o, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	if (!g || !o)
		return tgi_fail(errmsg, "tg_agent needs a gate and options");
	agent a = {.g = g, .o = o, .out = o->out ? o->out : stdout, .principal = o->principal,
	           .history = json_array()};
	char *err = NULL;
	int rc = run(&a, &err);
	if (a.shown)
		show_end(&a, rc, rc < 0 ? err : NULL);
	if (rc < 0) {
		if (errmsg)
			*errmsg = err ? err : tgi_strdup("the agent stopped");
		else
			free(err);
	} else {
		free(err);
	}
	json_decref(a.history);
	json_decref(a.tools);
	tgi_provider_free(a.prov);
	return rc;
}
