/*
 * bridge_server.c — one downstream server's life (see bridge.c): its log
 * (stderr), the handlers of its client (notifications, its requests
 * relayed to the one call in flight, the connection's end), its sandbox,
 * and the thread that starts, lists, re-lists and restarts it.
 *
 * Owns: the server's thread, client, sandbox and log.  Must not: hold
 * b->mu across I/O or a callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/bridge_int.h"
#include "exec/netgate.h"
#include "exec/spawn.h"
#include "gate/gate.h"
#include "mw/mw.h"

/* ---- the server's log: its stderr (s->log_mu) ---- */

/* Open .toolgate/logs/<server>.log for appending (log_mu held).  A log
 * that cannot be opened is said once; the server's stderr is then
 * dropped, never put on ours. */
static void log_open(srv *s)
{
	tg_gate *g = s->b->g;
	char err[512] = "", name[SERVER_NAME_MAX + 8];
	struct stat st;

	if (s->log_fd >= 0)
		return;
	if (s->log_dir < 0 && g->state_fd >= 0)
		s->log_dir = tgi_state_subdir_open(g->state_fd, "logs", ".toolgate/logs",
		                                   "the MCP servers' logs", g->cfg->workspace, err,
		                                   sizeof err);
	if (s->log_dir >= 0) {
		tgi_snprintf(name, sizeof name, "%s.log", s->name);
		/* non-blocking: a FIFO planted there must not hold the open */
		s->log_fd = openat(s->log_dir, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
		                   O_NONBLOCK | O_CLOEXEC, 0600);
		if (s->log_fd < 0)
			tgi_snprintf(err, sizeof err, "%s", strerror(errno));
		else if (fstat(s->log_fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			tgi_snprintf(err, sizeof err, "it is not a regular file of this user");
			close(s->log_fd);
			s->log_fd = -1;
		} else {
			s->log_size = (size_t)st.st_size;
		}
	} else if (!err[0]) {
		tgi_snprintf(err, sizeof err, "the gate has no state directory");
	}
	if (s->log_fd < 0 && !s->log_said) {
		s->log_said = 1;
		say("the MCP server \"%s\": its log .toolgate/logs/%s.log cannot be opened (%s); "
		    "what it writes on stderr is dropped", s->name, s->name, err);
	}
}

/* Append n bytes (log_mu held); past LOG_MAX the log is moved to
 * <server>.log.1 (replacing the one before) and begun again. */
static void log_write(srv *s, const char *p, size_t n)
{
	char name[SERVER_NAME_MAX + 8], old[SERVER_NAME_MAX + 8];

	if (s->log_fd < 0)
		return;
	if (s->log_size && s->log_size + n > LOG_MAX) {
		tgi_snprintf(name, sizeof name, "%s.log", s->name);
		tgi_snprintf(old, sizeof old, "%s.log.1", s->name);
		close(s->log_fd);
		/* when it cannot be moved, O_TRUNC cuts it short instead */
		(void)renameat(s->log_dir, name, s->log_dir, old);
		s->log_fd = openat(s->log_dir, name, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_NOFOLLOW |
		                   O_NONBLOCK | O_CLOEXEC, 0600);
		s->log_size = 0;
		if (s->log_fd < 0)
			return;
	}
	if (n > LOG_MAX) {                  /* never more than the bound: its end */
		p += n - LOG_MAX;
		n = LOG_MAX;
	}
	if (tgi_write_all(s->log_fd, p, n) == 0)
		s->log_size += n;
}

/* A line of ours in the log: "---- <time> <text>". */
__attribute__((format(printf, 2, 3)))
static void log_note(srv *s, const char *fmt, ...)
{
	char line[1024], ts[32];
	va_list ap;
	tgi_iso8601(tgi_unix_ms(), ts);
	int n = snprintf(line, sizeof line, "---- %s toolgate: ", ts);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = strlen(line);
	line[len++] = '\n';
	pthread_mutex_lock(&s->log_mu);
	log_write(s, line, len);
	pthread_mutex_unlock(&s->log_mu);
}

/* client: what the child wrote on stderr, into its log; the last line kept */
static void on_stderr(void *arg, const char *data, size_t n)
{
	srv *s = arg;
	pthread_mutex_lock(&s->log_mu);
	log_write(s, data, n);
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n' || data[i] == '\r') {
			if (s->err_len) {
				memcpy(s->last_line, s->err_line, s->err_len);
				s->last_line[s->err_len] = '\0';
			}
			s->err_len = 0;
		} else if (s->err_len < sizeof s->err_line - 1) {
			s->err_line[s->err_len++] = data[i];
		}
	}
	pthread_mutex_unlock(&s->log_mu);
}

/* A new start: the last line is this run's from now on. */
static void log_begin(srv *s)
{
	pthread_mutex_lock(&s->log_mu);
	log_open(s);
	s->err_len = 0;
	s->last_line[0] = '\0';
	pthread_mutex_unlock(&s->log_mu);
	char cmd[200];
	tgi_sanitize(cmd, sizeof cmd, s->argv[0]);
	log_note(s, "starting the MCP server \"%s\" (%s)", s->name, cmd);
}

/* "; its last line on stderr: \"...\" (.toolgate/logs/<server>.log)",
 * redacted and made printable, appended to why (cap bytes); nothing when
 * it wrote none. */
static void last_words(srv *s, char *why, size_t cap)
{
	char line[LAST_LINE_MAX], shown[LAST_LINE_MAX + 8];

	pthread_mutex_lock(&s->log_mu);
	if (s->err_len) {
		memcpy(line, s->err_line, s->err_len);
		line[s->err_len] = '\0';
	} else {
		tgi_snprintf(line, sizeof line, "%s", s->last_line);
	}
	int logged = s->log_fd >= 0;
	pthread_mutex_unlock(&s->log_mu);
	if (!line[strspn(line, " \t")])
		return;
	char *safe = tgi_redact_text(s->b->g->redact, line, strlen(line));
	tgi_sanitize_n(shown, sizeof shown, safe, strlen(safe), LAST_LINE_MAX);
	free(safe);
	size_t len = strlen(why);
	if (logged)
		tgi_snprintf(why + len, cap - len, "; its last line on stderr: \"%s\" (all of it is in "
		             ".toolgate/logs/%s.log)", shown, s->name);
	else
		tgi_snprintf(why + len, cap - len, "; its last line on stderr: \"%s\"", shown);
}

/*
 * After a listing of s has been put into the registry (its first, at each
 * start, and each re-list): the tools it offers now are known and
 * findable.  Runs on the server's thread with no lock held, before anyone
 * waiting for the server is woken, so a call or listing that started it
 * sees what this did.  The place for what needs to know a server's tools:
 * the permission rules that waited for them are checked, and the list goes
 * into the server's log.
 */
static void after_listing(srv *s)
{
	tgi_registry_listed(s->b->g->reg, s->name);
	tgi_buf names;
	tgi_buf_init(&names, 4000);
	lock(s->b);
	size_t n = s->ncur;
	for (size_t i = 0; i < n; i++)
		if (tgi_buf_printf(&names, "%s%s", i ? ", " : "", s->cur[i]->name) < 0) {
			tgi_buf_puts(&names, ", ...");
			break;
		}
	unlock(s->b);
	if (s->argv)
		log_note(s, "it offers %zu tool%s%s%s", n, n == 1 ? "" : "s", n ? ": " : "",
		         names.p ? names.p : "");
	tgi_buf_free(&names);
}

/* ---- talking to the server ---- */

/* A JSON-RPC error object or our own sentence, as one phrase. */
static void rpc_why(const json_t *error, const char *ours, char *out, size_t cap)
{
	const char *m = json_string_value(json_object_get(error, "message"));
	if (error)
		tgi_snprintf(out, cap, "it answered with error %" JSON_INTEGER_FORMAT ": %.200s",
		             json_integer_value(json_object_get(error, "code")), m ? m : "(no message)");
	else
		tgi_snprintf(out, cap, "%s", ours);
	char tmp[512];
	tgi_sanitize(tmp, sizeof tmp, out);
	tgi_snprintf(out, cap, "%s", tmp);
}

/* Every page of tools/list into *out (a new array), within timeout_ms. */
static int list_tools(srv *s, tgi_mcp_client *c, double deadline_ms, json_t **out, char *why,
                      size_t cap)
{
	json_t *all = json_array();
	char *cursor = NULL;
	int rc = -1;

	for (int page = 0;; page++) {
		json_t *res = NULL, *error = NULL;
		char err[512] = "";
		int cancelled = 0;
		if (page == PAGES_MAX) {
			tgi_snprintf(why, cap, "its tools/list went on for more than %d pages", PAGES_MAX);
			break;
		}
		double left = deadline_ms - tgi_now_ms();
		if (left < 1000)
			left = 1000;
		json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
		if (tgi_mcp_client_request(c, "tools/list", params, (int)left, &s->b->stopping, NULL, NULL,
		                           &res, &error, &cancelled, err, sizeof err) < 0) {
			char r[400];
			rpc_why(error, err, r, sizeof r);
			tgi_snprintf(why, cap, "tools/list failed: %s", r);
			json_decref(error);
			break;
		}
		json_t *tools = json_object_get(res, "tools");
		json_t *next = json_object_get(res, "nextCursor");
		if (!json_is_array(tools)) {
			tgi_snprintf(why, cap, "it answered tools/list without a list of tools");
			json_decref(res);
			break;
		}
		if (json_array_size(all) + json_array_size(tools) > TOOLS_MAX) {
			tgi_snprintf(why, cap, "it lists more than %d tools", TOOLS_MAX);
			json_decref(res);
			break;
		}
		json_array_extend(all, tools);
		if (!json_is_string(next) || !json_string_length(next)) {
			json_decref(res);
			rc = 0;
			break;
		}
		if (cursor && !strcmp(cursor, json_string_value(next))) {
			tgi_snprintf(why, cap, "its tools/list repeats the cursor of the page before");
			json_decref(res);
			break;
		}
		free(cursor);
		cursor = tgi_strdup(json_string_value(next));
		json_decref(res);
	}
	free(cursor);
	if (rc < 0) {
		json_decref(all);
		return -1;
	}
	*out = all;
	return 0;
}

/* Why a server's request or log message has no call to go to. */
typedef enum {
	RELAY_NO_CALL,  /* no call to the server is in flight */
	RELAY_SEVERAL,  /* several are: it may be any one's, so it is no one's */
	RELAY_UNABLE,   /* the one call's client cannot take it */
} relay_miss;

/*
 * The call a server's log message (want_request 0) or request (1) goes to:
 * the only call in flight on s, held (refs) until relay_done.  NULL with
 * *miss when there is none, when there are several, or when that call's
 * client cannot take it.  (b->mu)
 */
static tgi_bridge_call *relay_pick(srv *s, int want_request, relay_miss *miss)
{
	tgi_bridge_call *c = s->calls;
	if (!c || c->next) {
		*miss = c ? RELAY_SEVERAL : RELAY_NO_CALL;
		return NULL;
	}
	const tg_callbacks *cb = c->ctx->cb;
	if (!cb || !(want_request ? cb->request != NULL : cb->log != NULL)) {
		*miss = RELAY_UNABLE;
		return NULL;
	}
	c->refs++;
	return c;
}

static void relay_done(tgi_bridge_call *c)
{
	tgi_bridge *b = c->s->b;
	lock(b);
	c->refs--;
	pthread_cond_broadcast(&b->cv);
	unlock(b);
}

static int severe(const char *level)
{
	static const char *const levels[] = { "warning", "error", "critical", "alert", "emergency" };
	for (size_t i = 0; level && i < TGI_ARRAY_LEN(levels); i++)
		if (!strcmp(level, levels[i]))
			return 1;
	return 0;
}

/* notifications/message: to the client of the one call in flight.  While
 * several run, it is nobody's: one line on stderr says it was dropped (with
 * the text when it is a warning or worse).  With no call, a warning or
 * worse goes to stderr. */
static void relay_log(srv *s, const json_t *params)
{
	const char *level = json_string_value(json_object_get(params, "level"));
	const char *logger = json_string_value(json_object_get(params, "logger"));
	json_t *data = json_object_get(params, "data");
	char *text = data ? json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY) : tgi_strdup("null");
	relay_miss miss = RELAY_NO_CALL;
	if (!text)
		return;

	lock(s->b);
	tgi_bridge_call *c = relay_pick(s, 0, &miss);
	unlock(s->b);
	if (c) {
		c->ctx->cb->log(c->ctx->cb->arg, level ? level : "info", logger, text);
		relay_done(c);
	} else if (miss == RELAY_SEVERAL || severe(level)) {
		char lv[32], shown[LOG_LINE_MAX + 4];
		char *safe = tgi_redact_text(s->b->g->redact, text, strlen(text));
		tgi_sanitize(lv, sizeof lv, level ? level : "info");
		tgi_sanitize_n(shown, sizeof shown, safe, strlen(safe), LOG_LINE_MAX);
		free(safe);
		if (miss == RELAY_SEVERAL)
			say("the MCP server \"%s\" logged (%s) while several of its calls were running; "
			    "toolgate cannot tell which client it is for, so it tells none%s%s", s->name, lv,
			    severe(level) ? ": " : "", severe(level) ? shown : "");
		else
			say("the MCP server \"%s\" logged (%s): %s", s->name, lv, shown);
	}
	free(text);
}

static void on_notify(void *arg, const char *method, const json_t *params)
{
	srv *s = arg;
	if (!strcmp(method, "notifications/tools/list_changed")) {
		lock(s->b);
		s->relist = 1;
		pthread_cond_broadcast(&s->b->cv);
		unlock(s->b);
	} else if (!strcmp(method, "notifications/message")) {
		relay_log(s, params);
	}
}

static json_t *rpc_error_obj(int code, const char *message)
{
	return json_pack("{s:i, s:s}", "code", code, "message", message);
}

/* A server's request (elicitation/create, sampling/createMessage, ...):
 * relayed to the client of the one call in flight on the server (see the
 * top of this file); sampling only for a trusted server. */
static int on_request(void *arg, const char *method, const json_t *params, json_t **result,
                      json_t **error)
{
	srv *s = arg;
	relay_miss miss = RELAY_NO_CALL;
	*result = *error = NULL;

	if (!strcmp(method, "sampling/createMessage") && !s->trusted) {
		*error = rpc_error_obj(-32603, "sampling is relayed only for servers marked trusted");
		return -1;
	}
	lock(s->b);
	tgi_bridge_call *c = relay_pick(s, 1, &miss);
	unlock(s->b);
	if (!c) {
		*error = rpc_error_obj(-32603,
		                       miss == RELAY_SEVERAL
		                           ? "several calls to this server are running; toolgate cannot "
		                             "tell which client to ask, so it asks none"
		                       : miss == RELAY_UNABLE
		                           ? "the client of the call in progress cannot be asked"
		                           : "no client request is in progress to relay this to");
		return -1;
	}
	/* the person asked must see who asks: a downstream server's question is
	 * never shown as if it were the gate's own */
	json_t *shown = params ? json_deep_copy(params) : json_object();
	const char *msg = json_string_value(json_object_get(shown, "message"));
	if (msg && !strcmp(method, "elicitation/create")) {
		char *m = tgi_xmalloc(strlen(msg) + strlen(s->name) + 64);
		sprintf(m, "[the MCP server \"%s\" asks] %s", s->name, msg);
		json_object_set_new(shown, "message", json_string(m));
		free(m);
	}
	char *p = json_dumps(shown, JSON_COMPACT);
	json_decref(shown);
	char *res = NULL, *errtext = NULL;
	int rc = p ? c->ctx->cb->request(c->ctx->cb->arg, method, p, &res, &errtext) : -1;
	relay_done(c);
	free(p);

	json_t *v = NULL;
	if (rc == 0 && res)
		v = json_loads(res, 0, NULL);
	else if (rc != 0 && errtext)
		v = json_loads(errtext, 0, NULL);
	free(res);
	free(errtext);
	if (rc == 0 && json_is_object(v)) {
		*result = v;
		return 0;
	}
	if (rc != 0 && json_is_object(v) && json_is_integer(json_object_get(v, "code"))) {
		*error = v;
		return -1;
	}
	json_decref(v);
	*error = rpc_error_obj(-32603, rc == 0 ? "the client's answer was not a JSON object"
	                                       : "the client could not answer the request");
	return -1;
}

static void on_closed(void *arg, const char *why)
{
	srv *s = arg;
	lock(s->b);
	s->closed = 1;
	tgi_sanitize(s->why, sizeof s->why, why && *why ? why : "the connection ended");
	pthread_cond_broadcast(&s->b->cv);
	unlock(s->b);
}

/* ---- the server's sandbox (exec/sandbox.h): for its whole life ---- */

void tgi_br_free_list(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int sb_child(void *arg)
{
	return tgi_sandbox_child(arg);
}

static int sb_started(void *arg, pid_t pid, char *err, size_t errlen)
{
	return tgi_sandbox_started(arg, pid, err, errlen);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* After the child is reaped (or was never started): what it made at a
 * refused name is removed and said, the sandbox and its tmp dir go. */
static void sandbox_end(srv *s)
{
	if (s->have_sbx) {
		json_t *found = tgi_sandbox_audit(&s->sbx), *f;
		size_t i;
		json_array_foreach(found, i, f) {
			char shown[300];
			const char *path = json_string_value(json_object_get(f, "path"));
			tgi_sanitize(shown, sizeof shown, path ? path : "?");
			say("the MCP server \"%s\" created %s in the workspace; %s", s->name, shown,
			    json_string_value(json_object_get(f, "action")) ?
			    json_string_value(json_object_get(f, "action")) : "");
		}
		if (found)
			tgi_br_record_event(s->b, "mcp.server.sandbox.removed",
			                    json_pack("{s:s, s:o}", "server", s->name, "found", found));
		tgi_sandbox_release(&s->sbx);
		s->have_sbx = 0;
	}
	lock(s->b);                        /* a call's end may be taking from it */
	struct tgi_netrun *net = s->net;
	s->net = NULL;
	unlock(s->b);
	if (net)                           /* what the proxy refused it since the last call */
		tgi_gate_net_record(s->b->g, NULL, tgi_netrun_end(net));
	if (s->tmpdir[0])
		nftw(s->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	s->tmpdir[0] = '\0';
}

/* The one place a server's sandbox is made (the server's thread): the
 * spec (the gate's own files read-only, .toolgate hidden, the gate's
 * network hook), a private tmp dir, the wrapper's argv and the child's
 * environment with the sandbox's HOME and TMPDIR.  0 with *envp (free
 * it), or -1 with why. */
static int server_sandbox(srv *s, char ***envp, char *why, size_t cap)
{
	tg_gate *g = s->b->g;
	char err[512], p[PATH_MAX];
	tgi_strv prot = {0};
	if (s->sb.mode != TGI_SANDBOX_FULL && !tgi_spawn_findable(s->argv[0], getenv("PATH"))) {
		char cmd[200];
		tgi_sanitize(cmd, sizeof cmd, s->argv[0]);
		tgi_snprintf(why, cap, "cannot start the server \"%s\": \"%s\" was not found", s->name,
		             cmd);
		return -1;
	}
	const char *tbase = getenv("TMPDIR");
	tgi_snprintf(s->tmpdir, sizeof s->tmpdir, "%s/toolgate-mcp-XXXXXX",
	             tbase && tbase[0] == '/' ? tbase : "/tmp");
	if (!mkdtemp(s->tmpdir)) {
		tgi_snprintf(why, cap, "its private temporary directory cannot be made: %s",
		             strerror(errno));
		s->tmpdir[0] = '\0';
		return -1;
	}
	for (size_t i = 0; i < g->nprotected; i++) {
		tgi_snprintf(p, sizeof p, "%s/%s", g->cfg->workspace, g->protected[i]);
		tgi_strv_push(&prot, tgi_strdup(p));
	}
	/* hidden: the gate's state, and what read rules keep from reading --
	 * every principal's, ask rules too (no person approves a server's
	 * reads), as the files are now: fixed for the server's life */
	tgi_strv masks = {0};
	tgi_strv_push(&masks, tgi_strdup(g->state_dir));
	if (s->sb.mode != TGI_SANDBOX_FULL &&
	    tgi_read_masks_for(g, NULL, 1, &masks, err, sizeof err) < 0) {
		tgi_snprintf(why, cap, "its sandbox cannot hide what read rules keep: %s", err);
		tgi_strv_free(&prot);
		tgi_strv_free(&masks);
		sandbox_end(s);
		return -1;
	}
	tgi_sb_spec spec = {
		.profile = &s->sb,
		.workspace = g->cfg->workspace,
		.tmpdir = s->tmpdir,
		.protect = (const char *const *)prot.v,
		.nprotect = prot.n,
		.mask = (const char *const *)masks.v,
		.nmask = masks.n,
		.quarantine = g->state_dir,
		.attach = tgi_netrun_attach,
		.attach_arg = s->net = tgi_gate_net_run(g), /* ended with the sandbox */
	};
	int r = tgi_sandbox_prepare(&spec, s->argv, &s->sbx, err, sizeof err);
	tgi_strv_free(&prot);
	tgi_strv_free(&masks);
	s->have_sbx = 1;
	if (r < 0) {
		tgi_snprintf(why, cap, "its sandbox cannot be made: %s", err);
		sandbox_end(s);
		return -1;
	}
	*envp = tgi_br_child_env(s->env, s->sbx.home ? s->sbx.home : getenv("HOME"),
	                         s->sbx.tmpdir ? s->sbx.tmpdir : s->tmpdir, s->sbx.env);
	return 0;
}

/* Close the connection (its child reaped) and end its sandbox. */
static void stop_client(srv *s, tgi_mcp_client *c)
{
	tgi_mcp_client_close(c);
	sandbox_end(s);
}

/* Connect and list: the client on success, with the listing applied. */
static tgi_mcp_client *start(srv *s, char *why, size_t cap)
{
	tgi_bridge *b = s->b;
	char auth[4200], err[512] = "";
	const char *headers[1];
	char **envp = NULL;
	tgi_mcp_client_cfg cc = {
		.name = s->name, .cwd = s->cwd, .url = s->url,
		.init_timeout_s = s->startup_timeout_s,
	};
	if (s->argv) {
		log_begin(s);
		if (server_sandbox(s, &envp, why, cap) < 0)
			return NULL;
		cc.stderr_data = on_stderr;
		cc.stderr_arg = s;
		cc.argv = s->sbx.argv;
		cc.envp = envp;
		cc.child_setup = sb_child;
		cc.child_arg = &s->sbx;
		cc.started = sb_started;
		cc.started_arg = &s->sbx;
	}
	tgi_mcp_client_handlers h = {
		.arg = s, .notify = on_notify, .request = on_request, .closed = on_closed,
	};
	if (s->token_env) {
		const char *tok = getenv(s->token_env);
		if (!tok || !*tok) {
			tgi_snprintf(why, cap, "its token variable %s (token_env) is not set", s->token_env);
			return NULL;
		}
		if (strlen(tok) > sizeof auth - 32 || strpbrk(tok, "\r\n")) {
			tgi_snprintf(why, cap, "its token variable %s holds no usable token", s->token_env);
			return NULL;
		}
		tgi_snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
		headers[0] = auth;
		cc.headers = headers;
		cc.nheaders = 1;
	}

	lock(b);
	s->closed = s->relist = 0;
	unlock(b);
	double deadline = tgi_now_ms() + s->startup_timeout_s * 1000.0;
	tgi_mcp_client *c = NULL;
	int rc = tgi_mcp_client_open(&cc, &h, &c, err, sizeof err);
	tgi_br_free_list(envp);
	if (rc < 0) {
		char said[512];
		tgi_sanitize(said, sizeof said, err[0] ? err : "it did not start");
		/* inside, a program or package it needs may simply not be there */
		tgi_snprintf(why, cap, "%s", said);
		if (s->argv)
			last_words(s, why, cap);
		size_t len = strlen(why);
		tgi_snprintf(why + len, cap - len, "%s", s->have_sbx && s->sb.mode != TGI_SANDBOX_FULL ?
		             "; it runs in a sandbox: what it needs outside the system and the "
		             "workspace must be named in its sandbox.read (toolgate doctor shows "
		             "what it sees)" : "");
		sandbox_end(s);
		return NULL;
	}
	json_t *tools = NULL;
	if (list_tools(s, c, deadline, &tools, why, cap) < 0) {
		stop_client(s, c);
		return NULL;
	}
	tgi_br_apply_listing(s, tools);
	json_decref(tools);
	after_listing(s);
	return c;
}

/* Re-list after notifications/tools/list_changed (the server's thread). */
static void relist(srv *s, tgi_mcp_client *c)
{
	json_t *tools = NULL;
	char why[400];
	if (list_tools(s, c, tgi_now_ms() + s->timeout_s * 1000.0, &tools, why, sizeof why) < 0) {
		say("the MCP server \"%s\" changed its tools but could not list them: %s", s->name, why);
		return;
	}
	int n = tgi_br_apply_listing(s, tools);
	json_decref(tools);
	after_listing(s);
	if (n)
		tgi_br_changed(s->b);
}

/* Mark s down and set its next start (b->mu). */
static void went_down(srv *s, double up_since_ms)
{
	double now = tgi_now_ms();
	if (up_since_ms > 0 && now - up_since_ms >= STABLE_S * 1000)
		s->backoff_s = BACKOFF_MIN_S;
	s->state = SRV_DOWN;
	s->next_start_ms = now + s->backoff_s * 1000;
	s->backoff_s = s->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : s->backoff_s * 2;
}

void *tgi_br_srv_main(void *arg)
{
	srv *s = arg;
	tgi_bridge *b = s->b;
	char why[512];

	lock(b);
	while (!b->stopping) {
		s->state = SRV_STARTING;
		unlock(b);
		why[0] = '\0';
		tgi_mcp_client *c = start(s, why, sizeof why);
		if (!c && s->argv)
			log_note(s, "it could not be started: %s", why);
		lock(b);

		if (!c) {
			tgi_snprintf(s->why, sizeof s->why, "%s", why);
			went_down(s, 0);
			s->ready = 1;
			pthread_cond_broadcast(&b->cv);
			double in_s = tgi_br_restart_in_s(s);
			int was_up = s->ever_up, stopping = b->stopping;
			unlock(b);
			if (!stopping) {
				say("the MCP server \"%s\" could not be started: %s; trying again in %.0f s",
				    s->name, why, in_s);
				tgi_br_record_event(b, "mcp.server.exited",
				                    json_pack("{s:s, s:s, s:b, s:f}", "server", s->name, "reason", why,
				                              "started", 0, "restart_in_s", in_s));
				if (was_up)
					tgi_br_changed(b);
			}
			lock(b);
			while (!b->stopping && tgi_now_ms() < s->next_start_ms)
				wait_until(b, s->next_start_ms);
			continue;
		}

		double up_since = tgi_now_ms();
		s->client = c;
		s->state = SRV_UP;
		s->ever_up = 1;
		s->ready = 1;
		pthread_cond_broadcast(&b->cv);
		size_t ntools = s->ncur;
		unlock(b);
		tgi_br_record_event(b, "mcp.server.started",
		                    json_pack("{s:s, s:I, s:s?, s:I}", "server", s->name, "pid",
		                              (json_int_t)tgi_mcp_client_pid(c), "protocol",
		                              tgi_mcp_client_version(c), "tools", (json_int_t)ntools));
		tgi_br_changed(b);
		lock(b);

		double last_relist = 0;
		while (!b->stopping && !s->closed) {
			if (s->relist) {
				/* at most one re-list a second: a server that keeps saying its
				 * list changed cannot keep the gate busy re-reading it */
				double now = (double)tgi_unix_ms();
				if (now - last_relist < RELIST_MIN_MS) {
					wait_until(b, last_relist + RELIST_MIN_MS);
					continue;
				}
				s->relist = 0;
				last_relist = now;
				unlock(b);
				relist(s, c);
				lock(b);
				continue;
			}
			wait_until(b, 0);
		}

		/* down (or stopping): no call may hold the connection when it is closed */
		s->client = NULL;
		if (b->stopping) {
			s->state = SRV_DOWN;
			tgi_snprintf(s->why, sizeof s->why, "toolgate is shutting down");
		} else {
			if (s->argv)
				last_words(s, s->why, sizeof s->why);
			went_down(s, up_since);
		}
		while (s->users)
			pthread_cond_wait(&b->cv, &b->mu);
		int stopping = b->stopping;
		double in_s = tgi_br_restart_in_s(s);
		char reason[512];
		tgi_snprintf(reason, sizeof reason, "%s", s->why);
		unlock(b);
		stop_client(s, c);
		if (s->argv)
			log_note(s, "it ended: %s", reason);
		if (!stopping) {
			say("the MCP server \"%s\" %s (%s); restarting it in %.0f s", s->name,
			    s->url ? "closed its connection" : "exited", reason, in_s);
			tgi_br_record_event(b, "mcp.server.exited",
			                    json_pack("{s:s, s:s, s:b, s:f}", "server", s->name, "reason", reason,
			                              "started", 1, "restart_in_s", in_s));
			tgi_br_changed(b);
		}
		lock(b);
		while (!b->stopping && tgi_now_ms() < s->next_start_ms)
			wait_until(b, s->next_start_ms);
	}
	s->state = SRV_DOWN;
	pthread_cond_broadcast(&b->cv);
	unlock(b);
	return NULL;
}

