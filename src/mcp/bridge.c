/*
 * bridge.c — downstream MCP servers (config `mcp_servers:`) and the rows of
 * their tools in the gate's registry (DESIGN §6; the config and behaviour
 * are specified in bridge.h).
 *
 * No server is started with the gate.  A server's thread is made the first
 * time one of its tools is needed (spawn: tgi_bridge_need_tool for a call
 * naming a tool no row has, tgi_bridge_need_all for a listing), and whoever
 * needed it waits until the server is listed or has failed to start.  A
 * built-in or configured tool is found in the registry first and never
 * gets here.
 *
 * One thread per server runs its life:
 *
 *     STARTING --open + every page of tools/list--> UP --closed()--> DOWN
 *        ^  \--fails--> DOWN (never up)               |                |
 *        |                                  list_changed: re-list      |
 *        +------------- backoff 1 s doubling to 60 s (reset after -----+
 *                       60 s up), tools kept, unavailable meanwhile
 *
 * A listing turns each downstream tool into a row named prefix + name
 * (filters, name and schema checks, the pin of its definition), puts new
 * and changed rows into the registry and drops the ones that went away.
 * A name that starts with another server's non-empty prefix is left out:
 * a server with prefix "" must not offer `fs__write_file` beside a server
 * `fs`.  Rows are never freed before tgi_bridge_free: the registry keeps
 * retired entries, and a running call may hold one.
 *
 * Pins cover what changes a tool's contract or what the model reads: the
 * sha256 of the canonical JSON of its description, input and output
 * schema, annotations and title.  A trusted server flipping readOnlyHint
 * is a change like a new description.
 *
 * Calls (src/mcp/bridged.c) hold the server's connection through
 * tgi_bridge_call_begin/end, so it is closed only when no call uses it.
 * The server's own requests (elicitation/create, sampling/createMessage)
 * and its log messages carry nothing that says which of our calls they
 * belong to, and our calls may be different clients' and principals'.  So
 * they are relayed only while exactly one call is in flight on that
 * server, to that call's client; with none or several, a request is
 * refused (-32603, with a sentence saying why) and a log message goes to no
 * client (one line on stderr).  sampling/createMessage spends the client's
 * model and is relayed only for servers marked trusted.  The client's
 * handlers run on its reader thread (requests on threads of their own) and
 * never send requests themselves: a list_changed or a closed connection
 * only wakes the server's thread.
 *
 * A stdio server's stderr goes to its log, .toolgate/logs/<server>.log,
 * through the client's reader thread (on_stderr): a line at each start and
 * end, LOG_MAX bytes at most before the file is moved to <server>.log.1 and
 * begun again.  The last line it wrote is kept, and quoted (redacted) in
 * the sentence of a start that failed or of an exit.
 *
 * After each listing is put into the registry, after_listing(s) runs on the
 * server's thread, before anyone waiting for the server is woken: the one
 * place for what needs to know the tools a server offers.
 *
 * Locks: b->mu guards every server's state, its calls and its rows' pin
 * state, and is never held across I/O (the client, the store, the
 * registry, stderr) or a callback.  b->list_mu makes one listing at a time
 * claim exposed names, so two servers never put the same name.  s->log_mu
 * guards a server's log and last line; it may be taken under b->mu, never
 * the other way round.
 *
 * The files: bridge.c (configuration, events, the sentences, the bridge's
 * life and its entry points), bridge_pins.c (pins), bridge_rows.c (rows
 * and listings), bridge_server.c (a server's log, its client's handlers,
 * its sandbox and its thread); bridge_int.h is what they share.
 *
 * Owns: the servers, their clients and threads, the rows of their tools,
 * their pins and pin approvals.  Must not: decide policy (the pipeline
 * does, on the exposed name), rewrite a downstream description, or let a
 * downstream tool take the name of a built-in or configured tool.
 */
#include "mcp/bridge.h"
#include "mcp/bridge_int.h"
#include "mcp/client.h"
#include "config.h"
#include "exec/netgate.h"
#include "exec/sandbox.h"
#include "gate/gate.h"
#include "mw/part.h"
#include "mw/mw.h"
#include "registry.h"
#include "util/fs.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ---- the child's environment ---- */

/* The child's environment: PATH, LANG, LC_ALL and TERM of ours (never
 * more: the gate's secrets stay out), HOME and TMPDIR its sandbox's (or
 * ours without one), then the configured ones, which replace any of the
 * same name. */
char **tgi_br_child_env(const json_t *env, const char *home, const char *tmpdir,
                        const char *const *sb_env)
{
	static const char *const passed[] = {"PATH", "LANG", "LC_ALL", "TERM"};
	const char *own[2][2] = {{"HOME", home}, {"TMPDIR", tmpdir}};
	size_t nsb = 0;
	while (sb_env && sb_env[nsb])
		nsb++;
	size_t cap = TGI_ARRAY_LEN(passed) + 2 + nsb + json_object_size(env) + 1, n = 0;
	char **envp = tgi_xcalloc(cap, sizeof *envp);
	const char *k;
	json_t *v;

	for (size_t i = 0; i < nsb; i++)   /* network by host: the proxy's, first (they win) */
		envp[n++] = tgi_strdup(sb_env[i]);

	for (size_t i = 0; i < TGI_ARRAY_LEN(passed) + 2; i++) {
		const char *name = i < TGI_ARRAY_LEN(passed) ? passed[i] : own[i - TGI_ARRAY_LEN(passed)][0];
		const char *val = i < TGI_ARRAY_LEN(passed) ? getenv(name) : own[i - TGI_ARRAY_LEN(passed)][1];
		if (!val && !strcmp(name, "PATH"))
			val = "/usr/local/bin:/usr/bin:/bin";
		if (!val || json_object_get(env, name))
			continue;
		size_t len = strlen(name) + strlen(val) + 2;
		envp[n] = tgi_xmalloc(len);
		snprintf(envp[n++], len, "%s=%s", name, val);
	}
	json_object_foreach((json_t *)env, k, v) {
		size_t len = strlen(k) + json_string_length(v) + 2;
		envp[n] = tgi_xmalloc(len);
		snprintf(envp[n++], len, "%s=%s", k, json_string_value(v));
	}
	return envp;
}

/* ---- events and listeners ---- */

/* An event of no call into the ledger and the sinks (data stolen); a
 * failure is logged. */
void tgi_br_record_event(tgi_bridge *b, const char *type, json_t *data)
{
	char err[512];
	if (b->g->store && tgi_gate_event(b->g, NULL, type, "bridge", data, err, sizeof err) < 0)
		say("cannot record %s: %s", type, err);
	json_decref(data);
}

void tgi_br_changed(tgi_bridge *b)
{
	tgi_registry_changed(b->g->reg);
	lock(b);
	void (*fn)(void *) = b->on_change;
	void *arg = b->on_change_arg;
	if (fn)
		b->notifying++;
	unlock(b);
	if (!fn)
		return;
	fn(arg);
	lock(b);
	b->notifying--;
	pthread_cond_broadcast(&b->cv);
	unlock(b);
}

void tgi_bridge_on_change(tgi_bridge *b, void (*fn)(void *arg), void *arg)
{
	if (!b)
		return;
	lock(b);
	while (b->notifying) /* the old listener's arg may go once we return */
		pthread_cond_wait(&b->cv, &b->mu);
	b->on_change = fn;
	b->on_change_arg = arg;
	unlock(b);
}

/* ---- why a server or tool cannot be used (under b->mu) ---- */

double tgi_br_restart_in_s(const srv *s)
{
	double left = (s->next_start_ms - tgi_now_ms()) / 1000.0;
	return left < 1 ? 1 : left;
}

void tgi_br_down_sentence(const srv *s, char *out, size_t cap)
{
	if (s->b->stopping)
		tgi_snprintf(out, cap, "the MCP server \"%s\" has been shut down", s->name);
	else if (!s->thread_started && !s->ready)
		tgi_snprintf(out, cap, "the MCP server \"%s\" has not been started", s->name);
	else if (!s->ever_up && !s->ready)
		tgi_snprintf(out, cap, "the MCP server \"%s\" is still starting; try again shortly", s->name);
	else if (s->ever_up)
		tgi_snprintf(out, cap,
		             "the MCP server \"%s\" is not running (%s: %s); toolgate is restarting it",
		             s->name, s->url ? "its connection ended" : "it exited", s->why);
	else if (s->state == SRV_STARTING)
		tgi_snprintf(out, cap,
		             "the MCP server \"%s\" could not be started (%s); toolgate is trying again",
		             s->name, s->why);
	else
		tgi_snprintf(out, cap,
		             "the MCP server \"%s\" could not be started (%s); toolgate tries again in %.0f s",
		             s->name, s->why, tgi_br_restart_in_s(s));
}

void tgi_br_pin_sentence(const btool *t, char *out, size_t cap)
{
	switch (t->pin) {
	case PIN_WAITING:
		tgi_snprintf(out, cap,
		             "the definition of %s (description, schemas, annotations, title) changed; "
		             "it is disabled until approval %s is approved (toolgate approvals approve %s)",
		             t->name, t->approval_id, t->approval_id);
		break;
	case PIN_DENIED:
		tgi_snprintf(out, cap,
		             "the change to the definition of %s was denied; it stays disabled while the "
		             "MCP server \"%s\" offers it so", t->name, t->s->name);
		break;
	case PIN_BROKEN:
		tgi_snprintf(out, cap,
		             "the definition of %s changed and its approval cannot be checked (%s)",
		             t->name, t->pin_error);
		break;
	case PIN_OK:
		out[0] = '\0';
		break;
	}
}

/* ---- the bridge ---- */

static void srv_free(srv *s)
{
	tgi_br_free_list(s->argv);
	json_decref(s->env);
	tgi_sb_profile_free(&s->sb);
	free(s->cwd);
	free(s->url);
	free(s->token_env);
	free(s->category);
	tgi_strv_free(&s->include);
	tgi_strv_free(&s->exclude);
	json_decref(s->aliases);
	tgi_strv_free(&s->unlisted);
	if (s->log_fd >= 0)
		close(s->log_fd);
	if (s->log_dir >= 0)
		close(s->log_dir);
	pthread_mutex_destroy(&s->log_mu);
	for (size_t i = 0; i < s->nall; i++)
		tgi_br_btool_free(s->all[i]);
	free(s->all);
	free(s->cur);
	tgi_br_skips_free(s->skips, s->nskips);
}

int tgi_bridge_new(tg_gate *g, tgi_bridge **out, char *err, size_t errlen)
{
	const json_t *servers = g->cfg->mcp_servers;
	const char *name;
	json_t *v;

	*out = NULL;
	if (!json_is_object(servers) || !json_object_size(servers))
		return 0;
	if (json_object_size(servers) > SERVERS_MAX) {
		char where[300];
		tgi_config_where(g->cfg, "/mcp_servers", where, sizeof where);
		tgi_snprintf(err, errlen, "%s: mcp_servers: expected at most %d servers, got %zu", where,
		             SERVERS_MAX, json_object_size(servers));
		return -1;
	}

	tgi_bridge *b = tgi_xcalloc(1, sizeof *b);
	tgi_cond_init(&b->cv);
	pthread_mutex_init(&b->mu, NULL);
	pthread_mutex_init(&b->list_mu, NULL);
	b->g = g;
	b->v = tgi_xcalloc(json_object_size(servers), sizeof *b->v);
	json_object_foreach((json_t *)servers, name, v) {
		srv *s = &b->v[b->n++];
		s->log_dir = s->log_fd = -1;
		pthread_mutex_init(&s->log_mu, NULL);
		s->b = b;
		if (tgi_bridge_parse_server(g->cfg, name, v, s, err, errlen) < 0) {
			tgi_bridge_free(b);
			return -1;
		}
	}
	/* exposed names: no prefix may make one server's tools look like another's */
	for (size_t i = 0; i < b->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (i != j && b->v[i].prefix[0] && !strncmp(b->v[j].prefix, b->v[i].prefix,
			                                           strlen(b->v[i].prefix)) &&
			    (strlen(b->v[j].prefix) > strlen(b->v[i].prefix) || i < j)) {
				tgi_bridge_bad(g->cfg, b->v[j].name, "prefix", err, errlen,
				    "expected a prefix that does not start with the prefix \"%s\" of the MCP "
				    "server \"%s\"", b->v[i].prefix, b->v[i].name);
				tgi_bridge_free(b);
				return -1;
			}

	*out = b;
	return 0;
}

/* ---- starting servers when their tools are needed (b->mu) ---- */

/* Make s's thread unless it has one.  A thread that cannot be made leaves
 * s down with why (its tools are not offered); the next need tries again. */
static void spawn(srv *s)
{
	tgi_bridge *b = s->b;
	sigset_t all, old;

	if (s->thread_started || b->stopping)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the caller's */
	int rc = pthread_create(&s->thread, NULL, tgi_br_srv_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	s->spawned_ms = tgi_now_ms();
	if (rc) {
		tgi_snprintf(s->why, sizeof s->why, "toolgate cannot start a thread for it: %s",
		             strerror(rc));
		s->state = SRV_DOWN;
		s->next_start_ms = s->spawned_ms;
		s->ready = 1;
		return;
	}
	s->thread_started = 1;
	s->ready = 0;
}

/* Wait until s has been listed once or has failed to start: opening and
 * listing share its startup timeout, with a margin for the rest. */
static void wait_listed(srv *s)
{
	tgi_bridge *b = s->b;
	double until = s->spawned_ms + s->startup_timeout_s * 1000.0 + 2000;
	while (s->thread_started && !s->ready && !b->stopping && tgi_now_ms() < until)
		wait_until(b, until);
}

void tgi_bridge_need_all(tgi_bridge *b)
{
	if (!b)
		return;
	lock(b);
	for (size_t i = 0; i < b->n; i++)
		spawn(&b->v[i]);
	for (size_t i = 0; i < b->n; i++)
		wait_listed(&b->v[i]);
	unlock(b);
}

/* The server whose prefix name carries (the longest such prefix). */
static srv *server_of(tgi_bridge *b, const char *name)
{
	srv *best = NULL;
	for (size_t i = 0; i < b->n; i++) {
		size_t n = strlen(b->v[i].prefix);
		if (!strncmp(name, b->v[i].prefix, n) && (!best || n > strlen(best->prefix)))
			best = &b->v[i];
	}
	return best;
}

int tgi_bridge_need_tool(tgi_bridge *b, const char *name)
{
	if (!b || !name)
		return 0;
	/* a name under a server's prefix can only be that server's (the others
	 * may not take it); any other name, only a server's with prefix "" */
	const srv *owner = server_of(b, name);
	int found = 0;
	lock(b);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; owner && i < b->n; i++) {
			srv *s = &b->v[i];
			if (owner->prefix[0] ? s != owner : s->prefix[0] != '\0')
				continue;
			if (pass == 0)
				spawn(s);
			else
				wait_listed(s);
			found = 1;
		}
	unlock(b);
	return found;
}

int tgi_bridge_all_listed(tgi_bridge *b)
{
	if (!b)
		return 1;
	int all = 1;
	lock(b);
	for (size_t i = 0; i < b->n && all; i++)
		all = b->v[i].thread_started && b->v[i].ready;
	unlock(b);
	return all;
}

int tgi_bridge_explain(tgi_bridge *b, const char *name, char *out, size_t cap)
{
	if (!b || !name)
		return 0;
	srv *s = server_of(b, name);
	if (!s)
		return 0;
	const char *remote = name + strlen(s->prefix);
	char shown[TOOL_NAME_MAX + 8];
	tgi_sanitize_n(shown, sizeof shown, remote, strlen(remote), TOOL_NAME_MAX);

	lock(b);
	const skipped *k = NULL;
	for (size_t i = 0; i < s->nskips && !k; i++)
		if (!strcmp(s->skips[i].remote, remote))
			k = &s->skips[i];
	if (k) {
		tgi_snprintf(out, cap, "the MCP server \"%s\" offers \"%s\" but toolgate does not: %s",
		             s->name, shown, k->why);
	} else if (!s->prefix[0]) {
		unlock(b); /* without a prefix any name could be its: only what it listed is told */
		return 0;
	} else if (!s->listed || s->state != SRV_UP) {
		tgi_br_down_sentence(s, out, cap);
	} else {
		tgi_buf names;
		tgi_buf_init(&names, 300);
		for (size_t i = 0; i < s->ncur; i++)
			if (tgi_buf_printf(&names, "%s%s", i ? ", " : "", s->cur[i]->name) < 0) {
				tgi_buf_puts(&names, ", ...");
				break;
			}
		if (s->ncur)
			tgi_snprintf(out, cap,
			             "the MCP server \"%s\" has no tool \"%s\"; its tools here are: %s",
			             s->name, shown, names.p);
		else
			tgi_snprintf(out, cap, "the MCP server \"%s\" has no tool \"%s\" (it offers none here)",
			             s->name, shown);
		tgi_buf_free(&names);
	}
	unlock(b);
	return 1;
}

void tgi_bridge_tool_names(const void *tool, const char **server, const char **remote)
{
	const btool *bt = tool;
	*server = bt->s->name;      /* both fixed while the row lives */
	*remote = bt->remote;
}

tgi_bridge_call *tgi_bridge_call_begin(const void *tool, const tgi_exec_ctx *ctx,
                                       tgi_bridge_target *t, double *retry_after_s, char *err,
                                       size_t errlen)
{
	const btool *bt = tool;
	srv *s = bt->s;
	tgi_bridge *b = s->b;

	lock(b);
	if (b->stopping || s->state != SRV_UP || !s->client || s->closed) {
		*retry_after_s = s->state == SRV_DOWN ? tgi_br_restart_in_s(s) : 1;
		tgi_br_down_sentence(s, err, errlen);
		unlock(b);
		return NULL;
	}
	tgi_bridge_call *c = tgi_xcalloc(1, sizeof *c);
	c->s = s;
	c->ctx = ctx;
	c->next = s->calls;
	s->calls = c;
	s->users++;
	t->client = s->client;
	t->server = s->name;
	t->remote = bt->remote;
	unlock(b);
	return c;
}

void tgi_bridge_call_end(tgi_bridge_call *c)
{
	if (!c)
		return;
	srv *s = c->s;
	lock(s->b);
	for (tgi_bridge_call **p = &s->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	while (c->refs) /* a relay still uses the call's callbacks */
		pthread_cond_wait(&s->b->cv, &s->b->mu);
	s->users--;
	/* what the proxy refused the server while it served: this call's events
	 * (a concurrent call's may land here too: the server is one process) */
	json_t *denied = s->net ? tgi_netrun_take(s->net) : NULL;
	pthread_cond_broadcast(&s->b->cv);
	unlock(s->b);
	if (denied)
		tgi_gate_net_record(s->b->g, c->ctx ? c->ctx->op_id : NULL, denied);
	free(c);
}

void tgi_bridge_stop(tgi_bridge *b)
{
	if (!b || b->stopped)
		return;
	lock(b);
	tgi_flag_set(&b->stopping);        /* no thread is made past here (spawn); the
	                                     * listing in progress is cancelled */
	pthread_cond_broadcast(&b->cv);
	unlock(b);
	for (size_t i = 0; i < b->n; i++) {
		lock(b);
		int started = b->v[i].thread_started;
		unlock(b);
		if (started)
			pthread_join(b->v[i].thread, NULL);
	}
	b->stopped = 1;
}

void tgi_bridge_free(tgi_bridge *b)
{
	if (!b)
		return;
	tgi_bridge_stop(b);
	for (size_t i = 0; i < b->n; i++)
		srv_free(&b->v[i]);
	free(b->v);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	pthread_mutex_destroy(&b->list_mu);
	free(b);
}

/* ---- the bridge as a part of the chain (mw/part.h) ----
 *
 * It has no step: it is a source of tools (registry.h), opened when the
 * caller asks for bridged tools (tg_options.bridge) or on demand (a report
 * that needs every tool), once the ledger is open (pins and events live
 * there).  No server starts here: the first call or listing that needs
 * its tools does. */

static int source_need(void *b, const char *name)
{
	return tgi_bridge_need_tool(b, name);
}

static void source_need_all(void *b)
{
	tgi_bridge_need_all(b);
}

static int source_all_listed(void *b)
{
	return tgi_bridge_all_listed(b);
}

static int source_explain(void *b, const char *name, char *out, size_t cap)
{
	return tgi_bridge_explain(b, name, out, cap);
}

static void source_on_change(void *b, void (*fn)(void *), void *arg)
{
	tgi_bridge_on_change(b, fn, arg);
}

static int bridge_open(tg_gate *g, const tg_options *o, void **state, char *err, size_t errlen)
{
	tgi_bridge *b = NULL;
	*state = NULL;
	if (o && !o->bridge)
		return 0;
	if (tgi_bridge_new(g, &b, err, errlen) < 0)
		return -1;
	if (b)
		tgi_registry_set_source(g->reg, &(tgi_tool_source){
			.need = source_need, .need_all = source_need_all, .all_listed = source_all_listed,
			.explain = source_explain, .on_change = source_on_change, .arg = b});
	*state = b;
	return 0;
}

static void bridge_stop(void *b)
{
	tgi_bridge_stop(b);
}

static void bridge_close(void *b)
{
	tgi_bridge_free(b);    /* its rows outlived the registry's entries */
}

const tgi_part tgi_part_bridge = {
	.name = "bridge", .after = TGI_PHASE_DECODE, .late = 1, .open = bridge_open,
	.stop = bridge_stop, .close = bridge_close,
};
