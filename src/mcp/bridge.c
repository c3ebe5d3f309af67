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
 * Calls (src/tools/bridged.c) hold the server's connection through
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
 * Owns: the servers, their clients and threads, the rows of their tools,
 * their pins and pin approvals.  Must not: decide policy (the pipeline
 * does, on the exposed name), rewrite a downstream description, or let a
 * downstream tool take the name of a built-in or configured tool.
 */
#include "mcp/bridge.h"
#include "mcp/client.h"
#include "config.h"
#include "exec/netgate.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"
#include "gate.h"
#include "mw/mw.h"
#include "policy/policy.h"
#include "registry.h"
#include "rulecheck.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SERVERS_MAX         64
#define SERVER_NAME_MAX     64
#define PREFIX_MAX          64
#define TOOL_NAME_MAX       128        /* exposed names, as the pipeline holds them */
#define TOOLS_MAX           1024       /* tools of one server */
#define PAGES_MAX           256        /* tools/list pages of one listing */
#define RELIST_MIN_MS       1000.0     /* re-list a server at most this often */
#define DESCRIPTION_MAX     (64 << 10) /* bytes of one tool's description */
#define URL_MAX             2048
#define TIMEOUT_MAX_S       86400
#define STARTUP_MAX_S       3600
#define BACKOFF_MIN_S       1.0
#define BACKOFF_MAX_S       60.0
#define STABLE_S            60.0       /* up this long: the next crash backs off from 1 s */
#define PIN_PRINCIPAL       "(bridge)"
#define PIN_ARGS_DESC_MAX   4000       /* characters of a new description shown in its approval */
#define PIN_ARGS_ANN_MAX    4000       /* bytes of new annotations shown in full there */
#define LOG_LINE_MAX        500
#define LOG_MAX             ((size_t)1 << 20) /* bytes of a server's log before it is moved */
#define LAST_LINE_MAX       300        /* bytes kept of the last line of its stderr */

typedef enum { SRV_STARTING, SRV_UP, SRV_DOWN } srv_state;

typedef enum {
	PIN_OK,       /* pinned, or its change accepted */
	PIN_WAITING,  /* changed under pin: true: an approval is pending */
	PIN_DENIED,   /* that approval was denied */
	PIN_BROKEN,   /* the ledger could not be asked */
} pin_state;

typedef struct srv srv;

/* A bridged tool: its registry row and what the row's strings point at. */
typedef struct btool {
	tgi_tool   row;             /* row.data is this */
	srv       *s;
	char      *name;            /* exposed: prefix + remote */
	char      *remote;
	char      *title;           /* or NULL */
	char      *description;
	char      *annotations;     /* canonical, or NULL; shown in a pin's approval */
	char      *def;             /* canonical downstream definition: same text, same row */
	json_t    *aliases;         /* owned or NULL: the configured ones its schema allows;
	                               the registry entry borrows it */
	char       digest[65];      /* the pin: see pin_digest */
	/* under b->mu */
	int        current;         /* the registry finds this row under its name */
	pin_state  pin;
	char       pinned[65];      /* the digest the ledger holds */
	char       binding[65];     /* of this change's approval */
	char       approval_id[37];
	char       pin_error[200];
} btool;

/* A tool the server listed that is not offered, and why (for explain). */
typedef struct skipped {
	char *remote;
	char  why[200];
} skipped;

struct tgi_bridge_call {
	srv                 *s;
	const tgi_exec_ctx  *ctx;
	int                  refs;     /* relays using ctx->cb now */
	tgi_bridge_call     *next;     /* older calls */
};

struct srv {
	tgi_bridge *b;
	char        name[SERVER_NAME_MAX + 1];
	char        prefix[PREFIX_MAX + 1];
	char       *category;
	char      **argv;               /* stdio: NULL-terminated */
	json_t     *env;                /* owned or NULL: its configured variables */
	char       *cwd;
	tgi_sb_profile sb;              /* stdio: its sandbox (tgi_bridge_profile) */
	char       *url;                /* or Streamable HTTP */
	char       *token_env;
	tgi_strv    include, exclude;
	json_t     *aliases;            /* owned or NULL: {remote tool: {old_field: new_field}} */
	int         trusted, pin;
	int         timeout_s, startup_timeout_s;

	pthread_t   thread;

	/* its log (stdio): under log_mu */
	pthread_mutex_t log_mu;
	int         log_dir, log_fd;    /* -1 until opened */
	size_t      log_size;
	int         log_said;           /* a log that cannot be written was said, once */
	char        err_line[LAST_LINE_MAX]; /* the line of stderr being written */
	size_t      err_len;
	char        last_line[LAST_LINE_MAX];

	/* under b->mu */
	int         thread_started;     /* spawn made its thread */
	double      spawned_ms;         /* monotonic: when */
	srv_state   state;
	int         ever_up;
	int         ready;              /* listed once, or failed to start once */
	int         closed;             /* the connection ended (handler) */
	int         relist;             /* tools/list_changed (handler) */
	char        why[512];           /* why it is down */
	double      next_start_ms;      /* monotonic */
	double      backoff_s;
	tgi_mcp_client *client;         /* while UP */
	int         users;              /* calls holding client */
	tgi_bridge_call *calls;         /* running calls, newest first */
	btool     **cur;                /* rows offered now */
	size_t      ncur;
	skipped    *skips;
	size_t      nskips;
	int         listed;             /* skips and cur hold a listing */

	/* the server's thread alone */
	tgi_sb_exec sbx;                /* the sandbox of the running child */
	struct tgi_netrun *net;         /* its network by host (netgate.h), or NULL */
	int         have_sbx;
	char        tmpdir[PATH_MAX];   /* its private tmp dir ("" when none) */
	btool     **all;                /* every row made, kept until free */
	size_t      nall, capall;
	tgi_strv    unlisted;           /* aliased tools said to be unlisted (once each) */
};

struct tgi_bridge {
	tg_gate         *g;
	srv             *v;
	size_t           n;
	pthread_mutex_t  mu;
	pthread_cond_t   cv;            /* any state change; CLOCK_MONOTONIC */
	pthread_mutex_t  list_mu;       /* one listing at a time claims names */
	volatile int     stopping;
	int              stopped;
	void           (*on_change)(void *);
	void            *on_change_arg;
	int              notifying;     /* calls of on_change in progress */
};

/* ---- small helpers ---- */

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "toolgate: %s\n", line);
}

static void lock(tgi_bridge *b)
{
	pthread_mutex_lock(&b->mu);
}

static void unlock(tgi_bridge *b)
{
	pthread_mutex_unlock(&b->mu);
}

/* Wait on b->cv until the monotonic time until_ms (<= 0: no limit). */
static void wait_until(tgi_bridge *b, double until_ms)
{
	if (until_ms <= 0) {
		pthread_cond_wait(&b->cv, &b->mu);
		return;
	}
	long long ms = (long long)until_ms;
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
	pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

static int name_char(char ch, int dot)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || (dot && ch == '.');
}

/* Are the n bytes of s all [A-Za-z0-9_-] (and '.' when dot)? */
static int name_ok(const char *s, size_t n, int dot)
{
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i], dot))
			return 0;
	return 1;
}

static int env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9') || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!name_char(*s, 0) || *s == '-')
			return 0;
	return 1;
}

static char *join_path(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = tgi_xmalloc(n);
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

static void push_ptr(void ***v, size_t *n, size_t *cap, void *p)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*v = tgi_xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = p;
}

/* ---- configuration ---- */

static const char *const server_keys[] = {
	"command", "args", "env", "cwd", "url", "token_env", "trusted", "pin", "prefix", "sandbox",
	"category", "tools", "timeout_s", "startup_timeout_s", "aliases",
};
static const char *const filter_keys[] = { "include", "exclude" };


/*
 * A problem in server `name`'s entry at sub ("command", "tools/include/0",
 * "" for the entry itself): "toolgate.yaml:LINE:COL: mcp_servers.fs.command:
 * <message>".  Returns -1.
 */
__attribute__((format(printf, 6, 7)))
static int bad(const tgi_config *cfg, const char *name, const char *sub, char *err, size_t errlen,
               const char *fmt, ...)
{
	char ptr[1024], where[300], shown[72], msg[512];
	tgi_buf kp;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_json_pointer_join(ptr, sizeof ptr, "/mcp_servers", name);
	tgi_sanitize_n(shown, sizeof shown, name, strlen(name), 64);
	tgi_buf_init(&kp, 256);
	tgi_buf_printf(&kp, "mcp_servers.%s", shown);
	for (const char *p = sub; *p;) {
		size_t n = strcspn(p, "/");
		size_t len = strlen(ptr);
		tgi_snprintf(ptr + len, sizeof ptr - len, "/%.*s", (int)n, p);
		if (strspn(p, "0123456789") >= n)
			tgi_buf_printf(&kp, "[%.*s]", (int)n, p);
		else
			tgi_buf_printf(&kp, ".%.*s", (int)n, p);
		p += n;
		p += *p == '/';
	}
	tgi_config_where(cfg, ptr, where, sizeof where);
	tgi_snprintf(err, errlen, "%s: %s: %s", where, kp.p ? kp.p : "mcp_servers", msg);
	tgi_buf_free(&kp);
	return -1;
}

static int bad_type(const tgi_config *cfg, const char *name, const char *sub, const json_t *v,
                    const char *expected, char *err, size_t errlen)
{
	char g[96];
	return bad(cfg, name, sub, err, errlen, "expected %s, got %s", expected, tgi_json_describe(v, g, sizeof g));
}

/* A list of strings (non-empty ones when nonempty) into out. */
static int parse_strings(const tgi_config *cfg, const char *name, const char *sub, const json_t *v,
                         int nonempty, tgi_strv *out, char *err, size_t errlen)
{
	size_t i;
	json_t *x;
	char at[64];

	if (!json_is_array(v))
		return bad_type(cfg, name, sub, v, "a list of strings", err, errlen);
	json_array_foreach(v, i, x) {
		tgi_snprintf(at, sizeof at, "%s/%zu", sub, i);
		if (!json_is_string(x))
			return bad_type(cfg, name, at, x, "a string", err, errlen);
		if (nonempty && !json_string_length(x))
			return bad(cfg, name, at, err, errlen, "expected a non-empty string, got \"\"");
		if (strlen(json_string_value(x)) != json_string_length(x))
			return bad(cfg, name, at, err, errlen, "expected a string without NUL characters");
		tgi_strv_push(out, tgi_strdup(json_string_value(x)));
	}
	return 0;
}

static int parse_int(const tgi_config *cfg, const char *name, const char *key, const json_t *v,
                     int lo, int hi, int *out, char *err, size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		char want[64];
		tgi_snprintf(want, sizeof want, "a whole number of seconds from %d to %d", lo, hi);
		return bad_type(cfg, name, key, v, want, err, errlen);
	}
	*out = (int)json_integer_value(v);
	return 0;
}

static int parse_bool(const tgi_config *cfg, const char *name, const char *key, const json_t *v,
                      int *out, char *err, size_t errlen)
{
	if (!json_is_boolean(v))
		return bad_type(cfg, name, key, v, "true or false", err, errlen);
	*out = json_is_true(v);
	return 0;
}

static int parse_string(const tgi_config *cfg, const char *name, const char *key, const json_t *v,
                        size_t max, const char **out, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return bad_type(cfg, name, key, v, "a string", err, errlen);
	if (!json_string_length(v))
		return bad(cfg, name, key, err, errlen, "expected a non-empty string, got \"\"");
	if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
		return bad(cfg, name, key, err, errlen,
		           "expected a string of at most %zu bytes without NUL characters", max);
	*out = json_string_value(v);
	return 0;
}

/* The child's environment: PATH, LANG, LC_ALL and TERM of ours (never
 * more: the gate's secrets stay out), HOME and TMPDIR its sandbox's (or
 * ours without one), then the configured ones, which replace any of the
 * same name. */
static char **child_env(const json_t *env, const char *home, const char *tmpdir,
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

static int parse_env(const tgi_config *cfg, const char *name, const json_t *env, char *err,
                     size_t errlen)
{
	const char *k;
	json_t *v;
	char at[200], shown[72];

	if (!json_is_object(env))
		return bad_type(cfg, name, "env", env, "a mapping of variable names to strings", err, errlen);
	json_object_foreach((json_t *)env, k, v) {
		tgi_snprintf(at, sizeof at, "env/%s", k);
		if (!env_name_ok(k)) {
			tgi_sanitize_n(shown, sizeof shown, k, strlen(k), 64);
			return bad(cfg, name, "env", err, errlen,
			           "expected variable names of letters, digits and '_', got \"%s\"", shown);
		}
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return bad_type(cfg, name, at, v, "a string (quote numbers and booleans)", err,
			                errlen);
	}
	return 0;
}

static int parse_filters(const tgi_config *cfg, const char *name, const json_t *v, srv *s,
                         char *err, size_t errlen)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return bad_type(cfg, name, "tools", v, "a mapping with include and exclude", err, errlen);
	json_object_foreach((json_t *)v, k, x) {
		char sub[200], shown[72];
		int include = !strcmp(k, filter_keys[0]);
		tgi_snprintf(sub, sizeof sub, "tools/%s", k);
		if (!include && strcmp(k, filter_keys[1])) {
			tgi_sanitize_n(shown, sizeof shown, k, strlen(k), 64);
			return bad(cfg, name, sub, err, errlen,
			           "unknown key \"%s\"; expected one of include, exclude", shown);
		}
		if (parse_strings(cfg, name, sub, x, 1, include ? &s->include : &s->exclude, err,
		                  errlen) < 0)
			return -1;
	}
	return 0;
}

/* A field's place under aliases/<tool> for bad(): its own key when the
 * name can be a pointer token as it is, else the tool's mapping. */
static void alias_sub(char *out, size_t cap, const char *tool, const char *field)
{
	if (field && !strpbrk(field, "/~") && field[strspn(field, "0123456789")])
		tgi_snprintf(out, cap, "aliases/%s/%s", tool, field);
	else
		tgi_snprintf(out, cap, "aliases/%s", tool);
}

/* One tool's {old_field: new_field}: non-empty names without NUL, a new
 * name neither the old one nor itself an old one.  What the server's
 * schema allows is known only at listing (tool_aliases). */
static int parse_tool_aliases(const tgi_config *cfg, const char *name, const char *tool,
                              const json_t *v, char *err, size_t errlen)
{
	const char *old;
	json_t *nw;
	char sub[300], shown[72];

	alias_sub(sub, sizeof sub, tool, NULL);
	if (!json_is_object(v) || !json_object_size(v))
		return bad_type(cfg, name, sub, v, "a mapping of old field names to new ones", err,
		                errlen);
	json_object_foreach((json_t *)v, old, nw) {
		const char *to = json_string_value(nw);
		alias_sub(sub, sizeof sub, tool, old);
		if (!old[0])
			return bad(cfg, name, sub, err, errlen, "an old field's name is empty");
		if (!to || !json_string_length(nw) || strlen(to) != json_string_length(nw))
			return bad_type(cfg, name, sub, nw, "the new field's name (a non-empty string)", err,
			                errlen);
		if (!strcmp(old, to) || json_object_get(v, to)) {
			tgi_sanitize_n(shown, sizeof shown, to, strlen(to), 64);
			return bad(cfg, name, sub, err, errlen, "the new name \"%s\" is itself an old name",
			           shown);
		}
	}
	return 0;
}

/* aliases: {<tool as the server lists it>: {old_field: new_field}}. */
static int parse_aliases(const tgi_config *cfg, const char *name, const json_t *v, srv *s,
                         char *err, size_t errlen)
{
	const char *tool;
	json_t *x;

	if (!json_is_object(v))
		return bad_type(cfg, name, "aliases", v,
		                "a mapping of tool names to {old_field: new_field}", err, errlen);
	json_object_foreach((json_t *)v, tool, x) {
		if (!tool[0] || strlen(tool) > TOOL_NAME_MAX || !name_ok(tool, strlen(tool), 1)) {
			char shown[72];
			tgi_sanitize_n(shown, sizeof shown, tool, strlen(tool), 64);
			return bad(cfg, name, "aliases", err, errlen,
			           "expected tool names as the server lists them (at most %d letters, "
			           "digits, '_', '-' or '.'), got \"%s\"", TOOL_NAME_MAX, shown);
		}
		if (parse_tool_aliases(cfg, name, tool, x, err, errlen) < 0)
			return -1;
	}
	if (json_object_size(v))
		s->aliases = json_incref((json_t *)v);
	return 0;
}

static int parse_command(const tgi_config *cfg, const char *name, const json_t *cmd,
                         const json_t *args, srv *s, char *err, size_t errlen)
{
	tgi_strv argv = { 0 };

	if (json_is_string(cmd)) {
		const char *prog;
		if (parse_string(cfg, name, "command", cmd, PATH_MAX, &prog, err, errlen) < 0)
			return -1;
		tgi_strv_push(&argv, tgi_strdup(prog));
	} else if (json_is_array(cmd)) {
		if (!json_array_size(cmd))
			return bad(cfg, name, "command", err, errlen,
			           "expected a program name or a non-empty list, got an empty list");
		if (parse_strings(cfg, name, "command", cmd, 0, &argv, err, errlen) < 0)
			goto fail;
		if (!argv.v[0][0]) {
			bad(cfg, name, "command/0", err, errlen, "expected a program name, got \"\"");
			goto fail;
		}
	} else {
		return bad_type(cfg, name, "command", cmd, "a program name or a list (argv)", err, errlen);
	}
	if (args && parse_strings(cfg, name, "args", args, 0, &argv, err, errlen) < 0)
		goto fail;
	/* a relative program path is the config's, as for configured tools */
	if (strchr(argv.v[0], '/') && argv.v[0][0] != '/') {
		char *abs = join_path(cfg->dir ? cfg->dir : cfg->workspace, argv.v[0]);
		free(argv.v[0]);
		argv.v[0] = abs;
	}
	s->argv = argv.v;
	return 0;
fail:
	tgi_strv_free(&argv);
	return -1;
}

static int parse_url(const tgi_config *cfg, const char *name, const json_t *url,
                     const json_t *token_env, srv *s, char *err, size_t errlen)
{
	const char *u, *t;

	if (parse_string(cfg, name, "url", url, URL_MAX, &u, err, errlen) < 0)
		return -1;
	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return bad_type(cfg, name, "url", url, "an http:// or https:// URL", err, errlen);
	s->url = tgi_strdup(u);
	if (token_env) {
		if (parse_string(cfg, name, "token_env", token_env, 128, &t, err, errlen) < 0)
			return -1;
		if (!env_name_ok(t))
			return bad_type(cfg, name, "token_env", token_env,
			                "an environment variable name (letters, digits, '_')", err, errlen);
		s->token_env = tgi_strdup(t);
	}
	return 0;
}

int tgi_bridge_profile(const tgi_config *cfg, const char *name, const json_t *v,
                       tgi_sb_profile *out, char *err, size_t errlen)
{
	char ptr[1024], sp[1100];
	const json_t *sb = json_object_get(v, "sandbox");
	tgi_sb_profile_init(out, TGI_SANDBOX_READ_ONLY);
	if (!sb)
		return 0;
	tgi_json_pointer_join(ptr, sizeof ptr, "/mcp_servers", name);
	tgi_json_pointer_join(sp, sizeof sp, ptr, "sandbox");
	if (tgi_sb_profile_parse(cfg, sb, sp, out, err, errlen) < 0)
		return -1;
	if (!json_is_false(json_object_get(v, "trusted")))
		return 0;
	/* trusted: false: the strictest, whatever else its entry says */
	const char *more = out->mode != TGI_SANDBOX_READ_ONLY ? tgi_sandbox_name(out->mode)
	                 : out->net != TGI_NET_OFF            ? "network"
	                 : out->write.n                       ? "write paths"
	                 : out->accept                        ? "a weaker backend (accept)"
	                                                      : NULL;
	if (more)
		return bad(cfg, name, "sandbox", err, errlen,
		           "a server marked trusted: false runs read-only, with no network, no "
		           "writable paths and under bubblewrap only; it cannot be given %s (remove "
		           "trusted: false to give it more)", more);
	return 0;
}

static int parse_server(tgi_bridge *b, const char *name, const json_t *v, srv *s, char *err,
                        size_t errlen)
{
	const tgi_config *cfg = b->g->cfg;
	const char *k, *str;
	json_t *x;
	size_t nlen = strlen(name);

	if (!nlen || nlen > SERVER_NAME_MAX || !name_ok(name, nlen, 0) || strstr(name, "__")) {
		char shown[72];
		tgi_sanitize_n(shown, sizeof shown, name, nlen, 64);
		return bad(cfg, name, "", err, errlen,
		           "expected a server name of 1 to %d letters, digits, '_' or '-' without \"__\" "
		           "(it separates the server from the tool in \"fs__read_file\"), got \"%s\"",
		           SERVER_NAME_MAX, shown);
	}
	if (!json_is_object(v))
		return bad_type(cfg, name, "", v, "a mapping (command or url, ...)", err, errlen);
	json_object_foreach((json_t *)v, k, x) {
		size_t i;
		for (i = 0; i < TGI_ARRAY_LEN(server_keys) && strcmp(k, server_keys[i]); i++)
			;
		if (i == TGI_ARRAY_LEN(server_keys)) {
			char shown[72];
			tgi_sanitize_n(shown, sizeof shown, k, strlen(k), 64);
			return bad(cfg, name, k, err, errlen,
			           "unknown key \"%s\"; expected one of command, args, env, cwd, url, "
			           "token_env, trusted, pin, prefix, category, tools, timeout_s, "
			           "startup_timeout_s, aliases", shown);
		}
	}

	s->b = b;
	tgi_snprintf(s->name, sizeof s->name, "%s", name);
	tgi_snprintf(s->prefix, sizeof s->prefix, "%s__", name);
	s->timeout_s = cfg->timeout_s > 0 ? cfg->timeout_s : 120;
	s->startup_timeout_s = 30;
	s->backoff_s = BACKOFF_MIN_S;

	json_t *cmd = json_object_get(v, "command"), *url = json_object_get(v, "url");
	json_t *args = json_object_get(v, "args"), *cwd = json_object_get(v, "cwd");
	json_t *token_env = json_object_get(v, "token_env"), *env = json_object_get(v, "env");
	if (cmd && url)
		return bad(cfg, name, "url", err, errlen,
		           "expected either command (a stdio server) or url (Streamable HTTP), not both");
	if (!cmd && !url)
		return bad(cfg, name, "", err, errlen,
		           "expected a command (a stdio server) or a url (Streamable HTTP)");
	json_t *sbx = json_object_get(v, "sandbox");
	if (url && (args || cwd || env || sbx))
		return bad(cfg, name, args ? "args" : cwd ? "cwd" : env ? "env" : "sandbox", err, errlen,
		           "expected %s only with command (a stdio server), not with url",
		           args ? "args" : cwd ? "cwd" : env ? "env" : "sandbox");
	if (cmd && token_env)
		return bad(cfg, name, "token_env", err, errlen,
		           "expected token_env only with url (Streamable HTTP), not with command");
	if (cmd && parse_command(cfg, name, cmd, args, s, err, errlen) < 0)
		return -1;
	if (url && parse_url(cfg, name, url, token_env, s, err, errlen) < 0)
		return -1;
	if (env && parse_env(cfg, name, env, err, errlen) < 0)
		return -1;
	if (cmd) {
		s->env = env ? json_incref(env) : NULL;
		if (tgi_bridge_profile(cfg, name, v, &s->sb, err, errlen) < 0)
			return -1;
		if (cwd) {
			if (parse_string(cfg, name, "cwd", cwd, PATH_MAX, &str, err, errlen) < 0)
				return -1;
			s->cwd = str[0] == '/' ? tgi_strdup(str)
			                       : join_path(cfg->dir ? cfg->dir : cfg->workspace, str);
		} else {
			s->cwd = tgi_strdup(cfg->workspace);
		}
	}
	if ((x = json_object_get(v, "trusted")) &&
	    parse_bool(cfg, name, "trusted", x, &s->trusted, err, errlen) < 0)
		return -1;
	if ((x = json_object_get(v, "pin")) && parse_bool(cfg, name, "pin", x, &s->pin, err, errlen) < 0)
		return -1;
	if ((x = json_object_get(v, "prefix"))) {
		if (!json_is_string(x) || json_string_length(x) > PREFIX_MAX ||
		    !name_ok(json_string_value(x), json_string_length(x), 0))
			return bad_type(cfg, name, "prefix", x,
			                "a prefix of at most 64 letters, digits, '_' or '-'", err, errlen);
		tgi_snprintf(s->prefix, sizeof s->prefix, "%s", json_string_value(x));
	}
	str = "mcp";
	if ((x = json_object_get(v, "category")) &&
	    parse_string(cfg, name, "category", x, 64, &str, err, errlen) < 0)
		return -1;
	s->category = tgi_strdup(str);
	if ((x = json_object_get(v, "tools")) && parse_filters(cfg, name, x, s, err, errlen) < 0)
		return -1;
	if ((x = json_object_get(v, "aliases")) && parse_aliases(cfg, name, x, s, err, errlen) < 0)
		return -1;
	if ((x = json_object_get(v, "timeout_s")) &&
	    parse_int(cfg, name, "timeout_s", x, 1, TIMEOUT_MAX_S, &s->timeout_s, err, errlen) < 0)
		return -1;
	if ((x = json_object_get(v, "startup_timeout_s")) &&
	    parse_int(cfg, name, "startup_timeout_s", x, 1, STARTUP_MAX_S, &s->startup_timeout_s, err,
	              errlen) < 0)
		return -1;
	return 0;
}

/* ---- events and listeners ---- */

/* An event of no call into the ledger and the sinks (data stolen); a
 * failure is logged. */
static void record_event(tgi_bridge *b, const char *type, json_t *data)
{
	char err[512];
	if (b->g->store && tgi_gate_event(b->g, NULL, type, "bridge", data, err, sizeof err) < 0)
		say("cannot record %s: %s", type, err);
	json_decref(data);
}

static void changed(tgi_bridge *b)
{
	tgi_manifest_update(b->g);
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

static double restart_in_s(const srv *s)
{
	double left = (s->next_start_ms - tgi_now_ms()) / 1000.0;
	return left < 1 ? 1 : left;
}

static void down_sentence(const srv *s, char *out, size_t cap)
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
		             s->name, s->why, restart_in_s(s));
}

static void pin_sentence(const btool *t, char *out, size_t cap)
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

/* ---- pins ---- */

/*
 * The pin of a tool: sha256 of the canonical JSON of what changes its
 * contract or what the model reads -- its description, input and output
 * schema, annotations and title (NULL: absent).  An object with named
 * members, so no change can pass for another.
 */
static void pin_digest(const char *description, const char *title, const json_t *in,
                       const json_t *outs, const json_t *ann, char out[65])
{
	json_t *v = json_pack("{s:s, s:s?, s:O, s:O?, s:O?}", "description", description, "title",
	                      title, "inputSchema", in, "outputSchema", outs, "annotations", ann);
	char *text = tgi_json_canonical(v); /* the strings are jansson's own: only OOM fails */
	tgi_sha256_hex(text, strlen(text), out);
	free(text);
	json_decref(v);
}

/* Queue the approval of t's change. */
static int pin_queue(tgi_bridge *b, btool *t, char id[37], char *err, size_t errlen)
{
	tgi_approval_row row;
	memset(&row, 0, sizeof row);
	tgi_snprintf(row.tool, sizeof row.tool, "%s", t->name);
	tgi_snprintf(row.principal, sizeof row.principal, PIN_PRINCIPAL);
	tgi_snprintf(row.binding, sizeof row.binding, "%s", t->binding);
	size_t dlen = strlen(t->description);
	size_t cut = tgi_utf8_offset(t->description, dlen, PIN_ARGS_DESC_MAX);
	json_t *ann = NULL;
	if (t->annotations && strlen(t->annotations) <= PIN_ARGS_ANN_MAX)
		ann = json_loads(t->annotations, 0, NULL);
	else if (t->annotations)
		ann = json_sprintf("(%zu bytes; too long to show here)", strlen(t->annotations));
	json_t *args = json_pack("{s:s, s:s, s:o, s:s?, s:o?}", "pinned_sha256", t->pinned,
	                         "new_sha256", t->digest, "description",
	                         tgi_json_text(t->description, cut), "title", t->title,
	                         "annotations", ann);
	row.args = tgi_json_canonical(args);
	json_decref(args);
	char reason[TOOL_NAME_MAX + 160];
	tgi_snprintf(reason, sizeof reason,
	             "the definition of %s (description, schemas, annotations, title) changed since "
	             "it was first seen; approve to accept it", t->name);
	row.reason = reason;
	row.created_ms = tgi_unix_ms();
	row.expires_ms = row.created_ms + (int64_t)(b->g->cfg->approval_ttl_s > 0
	                                            ? b->g->cfg->approval_ttl_s : 3600) * 1000;
	int rc = tgi_store_approval_add(b->g->store, &row, err, errlen);
	free(row.args);
	if (rc == 0)
		tgi_snprintf(id, 37, "%s", row.id);
	return rc;
}

/*
 * A changed tool of a pinned server: take its approval if one was decided,
 * or see that one is pending (queueing it, once per digest).  Approved: the
 * pin moves and the tool is usable.  Returns 1 when an approval was queued
 * now.
 */
static int pin_review(tgi_bridge *b, btool *t)
{
	char err[512] = "", id[37] = "";
	int found = 0, queued = 0;

	/* three store calls, not one transaction, as for another gate on the
	 * ledger doing the same review: the take spends the approval alone,
	 * and moving the pin or queueing an approval again is harmless */
	int rc = tgi_store_approval_take(b->g->store, t->binding, PIN_PRINCIPAL, &found, id, err,
	                                 sizeof err);
	if (rc == 0 && found == 1)
		rc = tgi_store_pin_set(b->g->store, t->name, t->digest, err, sizeof err);
	if (rc == 0 && found == 0 && (rc = pin_queue(b, t, id, err, sizeof err)) == 0)
		queued = 1;

	lock(b);
	if (rc < 0) {
		t->pin = PIN_BROKEN;
		tgi_sanitize(t->pin_error, sizeof t->pin_error, err);
	} else if (found == 1) {
		t->pin = PIN_OK;
		tgi_snprintf(t->pinned, sizeof t->pinned, "%s", t->digest);
	} else if (found == -1) {
		t->pin = PIN_DENIED;
	} else {
		t->pin = PIN_WAITING;
		tgi_snprintf(t->approval_id, sizeof t->approval_id, "%s", id);
	}
	unlock(b);
	if (found == 1)
		say("the change to the definition of %s was approved; it is enabled", t->name);
	return queued;
}

/* Check a new row's digest against its pin (at a listing, before the row
 * is put).  A change is an event; under pin: true the row waits for an
 * approval, else the pin moves to it (so the change is reported once). */
static void pin_check(tgi_bridge *b, btool *t)
{
	char err[512] = "";
	tgi_pin_state st = TGI_PIN_SAME;
	srv *s = t->s;

	int rc = tgi_store_pin_check(b->g->store, t->name, t->digest, &st, t->pinned, err, sizeof err);
	if (rc < 0) {
		say("cannot check the pin of %s: %s", t->name, err);
		t->pin = s->pin ? PIN_BROKEN : PIN_OK;
		tgi_sanitize(t->pin_error, sizeof t->pin_error, err);
		return;
	}
	if (st != TGI_PIN_CHANGED) {
		t->pin = PIN_OK;
		return;
	}
	const char *parts[3] = { "pin", t->name, t->digest };
	tgi_sha256_lines(parts, 3, t->binding);
	int report = 1;
	if (s->pin) {
		report = pin_review(b, t);
	} else {
		if (tgi_store_pin_set(b->g->store, t->name, t->digest, err, sizeof err) < 0)
			say("cannot move the pin of %s: %s", t->name, err);
		t->pin = PIN_OK;
	}
	if (t->pin == PIN_WAITING)
		say("the definition of %s (description, schemas, annotations, title) changed since it "
		    "was first seen; it is disabled until approval %s is approved (toolgate approvals "
		    "approve %s)", t->name, t->approval_id, t->approval_id);
	else if (t->pin == PIN_DENIED)
		say("the definition of %s changed and the change was denied; it stays disabled",
		    t->name);
	else if (!s->pin)
		say("the definition of %s (description, schemas, annotations, title) changed since it "
		    "was first seen (the server is not pinned: it stays enabled)", t->name);
	if (report)
		record_event(b, "mcp.tool.changed",
		             json_pack("{s:s, s:s, s:s, s:s, s:b, s:s?}", "tool", t->name, "server",
		                       s->name, "pinned", t->pinned, "now", t->digest, "pin", s->pin,
		                       "approval_id", t->pin == PIN_WAITING ? t->approval_id : NULL));
}

/* registry row: is the tool usable now? */
static int tool_available(const void *data, char *reason, size_t cap)
{
	btool *t = (btool *)data; /* its mutable state is under b->mu */
	srv *s = t->s;
	tgi_bridge *b = s->b;

	lock(b);
	if (b->stopping || s->state != SRV_UP || s->closed) {
		down_sentence(s, reason, cap);
		int restarting = !b->stopping; /* back soon: worth a retry */
		unlock(b);
		return restarting ? -1 : 0;
	}
	if (!t->current) {
		tgi_snprintf(reason, cap, "the MCP server \"%s\" no longer offers \"%s\"", s->name,
		             t->remote);
		unlock(b);
		return 0;
	}
	pin_state pin = t->pin;
	unlock(b);
	if (pin == PIN_WAITING)
		pin_review(b, t); /* decided since? */
	lock(b);
	pin_sentence(t, reason, cap);
	int ok = t->pin == PIN_OK;
	unlock(b);
	return ok;
}

/* ---- rows ---- */

static void btool_free(btool *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->remote);
	free(t->title);
	free(t->description);
	free(t->annotations);
	free(t->def);
	json_decref(t->aliases);
	free(t);
}

/* The contract from a trusted server's annotations (MCP's defaults:
 * destructiveHint true unless read-only, idempotentHint false). */
static unsigned contract_of(const srv *s, const json_t *ann)
{
	if (!s->trusted || !json_is_object(ann))
		return 0;
	if (json_is_true(json_object_get(ann, "readOnlyHint")))
		return TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE |
		       (json_is_true(json_object_get(ann, "idempotentHint")) ? TGI_T_IDEMPOTENT : 0);
	unsigned f = json_is_false(json_object_get(ann, "destructiveHint")) ? 0 : TGI_T_DESTRUCTIVE;
	if (json_is_true(json_object_get(ann, "idempotentHint")))
		f |= TGI_T_IDEMPOTENT;
	return f;
}

/*
 * The configured aliases of remote that its listed input schema allows (a
 * new reference, or NULL): an old name must not be one of its properties
 * (it would never be rewritten), a new one must be (else the rewritten
 * value would go unchecked).  The schema is the server's, not the
 * operator's: an alias it breaks is left out with one line on stderr.
 */
static json_t *tool_aliases(const srv *s, const char *remote, const json_t *in)
{
	const json_t *want = json_object_get(s->aliases, remote);
	const json_t *props = json_object_get(in, "properties");
	const char *old;
	json_t *nw, *out;

	if (!want)
		return NULL;
	out = json_object();
	json_object_foreach((json_t *)want, old, nw) {
		const char *to = json_string_value(nw);
		char so[72], sn[72], st[TOOL_NAME_MAX + 8];
		const char *why = NULL;
		if (json_object_get(props, old))
			why = "the old name is still a property of its input schema";
		else if (!json_is_object(props))
			why = "its input schema lists no properties";
		else if (!json_object_get(props, to))
			why = "the new name is not a property of its input schema";
		if (!why) {
			json_object_set_new(out, old, json_string(to));
			continue;
		}
		tgi_sanitize_n(so, sizeof so, old, strlen(old), 64);
		tgi_sanitize_n(sn, sizeof sn, to, strlen(to), 64);
		tgi_sanitize_n(st, sizeof st, remote, strlen(remote), TOOL_NAME_MAX);
		say("the MCP server \"%s\": the alias \"%s\" -> \"%s\" of its tool \"%s\" is left out: %s",
		    s->name, so, sn, st, why);
	}
	if (!json_object_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* The row for one listed tool, or NULL with why it is not offered. */
static btool *btool_new(srv *s, const json_t *tool, const char *remote, char *why, size_t cap)
{
	json_t *in = json_object_get(tool, "inputSchema");
	json_t *outs = json_object_get(tool, "outputSchema");
	json_t *desc = json_object_get(tool, "description");
	json_t *title = json_object_get(tool, "title");
	json_t *ann = json_object_get(tool, "annotations");

	if (!json_is_object(in)) {
		tgi_snprintf(why, cap, "its inputSchema is not a JSON object");
		return NULL;
	}
	if (outs && !json_is_null(outs) && !json_is_object(outs)) {
		tgi_snprintf(why, cap, "its outputSchema is not a JSON object");
		return NULL;
	}
	if (desc && !json_is_null(desc) && !json_is_string(desc)) {
		tgi_snprintf(why, cap, "its description is not a string");
		return NULL;
	}
	if (json_is_string(desc) && json_string_length(desc) > DESCRIPTION_MAX) {
		tgi_snprintf(why, cap, "its description is longer than %d bytes", DESCRIPTION_MAX);
		return NULL;
	}
	if (json_is_string(desc) && strlen(json_string_value(desc)) != json_string_length(desc)) {
		tgi_snprintf(why, cap, "its description holds a NUL character");
		return NULL;
	}
	if (!json_is_string(title) && json_is_object(ann))
		title = json_object_get(ann, "title");
	if (json_is_string(title) && (!json_string_length(title) || json_string_length(title) > 256 ||
	                              strlen(json_string_value(title)) != json_string_length(title)))
		title = NULL; /* the registry makes one from the name */

	btool *t = tgi_xcalloc(1, sizeof *t);
	size_t n = strlen(s->prefix) + strlen(remote) + 1;
	t->s = s;
	t->name = tgi_xmalloc(n);
	snprintf(t->name, n, "%s%s", s->prefix, remote);
	t->remote = tgi_strdup(remote);
	t->title = json_is_string(title) ? tgi_strdup(json_string_value(title)) : NULL;
	t->description = tgi_strdup(json_is_string(desc) ? json_string_value(desc) : "");
	t->annotations = json_is_object(ann) ? tgi_json_canonical(ann) : NULL;
	t->def = tgi_json_canonical(tool);
	pin_digest(t->description, t->title, in, json_is_object(outs) ? outs : NULL,
	           json_is_object(ann) ? ann : NULL, t->digest);

	t->row.name = t->name;
	t->row.title = t->title;
	t->row.description = t->description;
	t->row.category = s->category;
	t->row.flags = contract_of(s, ann);
	t->row.handler = tgi_bridged_run;
	t->row.plan = tgi_bridged_plan;
	t->row.timeout_s = s->timeout_s;
	t->row.data = t;
	t->row.available = tool_available;
	t->row.mcp_result = 1;
	t->aliases = tool_aliases(s, remote, in);
	return t;
}

/* The output schema we register: the result's shape around the tool's. */
static json_t *output_schema(const json_t *tool)
{
	json_t *outs = json_object_get(tool, "outputSchema");
	if (!json_is_object(outs))
		return NULL;
	return json_pack("{s:s, s:{s:{s:s}, s:O}, s:[s]}", "type", "object", "properties", "content",
	                 "type", "array", "structuredContent", outs, "required", "content");
}

static int wanted(const srv *s, const char *remote)
{
	int in = !s->include.n;
	for (size_t i = 0; i < s->include.n && !in; i++)
		in = tgi_text_glob(s->include.v[i], remote);
	for (size_t i = 0; in && i < s->exclude.n; i++)
		in = !tgi_text_glob(s->exclude.v[i], remote);
	return in;
}

/* Does another server offer name now?  (b->mu) */
static const srv *owner_of(const tgi_bridge *b, const srv *self, const char *name)
{
	for (size_t i = 0; i < b->n; i++) {
		const srv *o = &b->v[i];
		if (o == self)
			continue;
		for (size_t j = 0; j < o->ncur; j++)
			if (!strcmp(o->cur[j]->name, name))
				return o;
	}
	return NULL;
}

/* The server other than self whose non-empty prefix starts name, or NULL:
 * a server with a shorter (or no) prefix must not take names in another's
 * namespace.  Prefixes are fixed at config: no lock. */
static const srv *prefix_owner(const tgi_bridge *b, const srv *self, const char *name)
{
	for (size_t i = 0; i < b->n; i++) {
		const srv *o = &b->v[i];
		size_t n = strlen(o->prefix);
		if (o != self && n && !strncmp(name, o->prefix, n))
			return o;
	}
	return NULL;
}

static btool *find_row(btool **v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i]->name, name))
			return v[i];
	return NULL;
}

typedef struct listing {
	btool  **cur;
	size_t   ncur, capcur;
	skipped *skips;
	size_t   nskips, capskips;
	int      changes;
} listing;

/* Leave remote out of the listing with why; logged unless quiet. */
__attribute__((format(printf, 5, 6)))
static void skip(srv *s, listing *l, const char *remote, int quiet, const char *fmt, ...)
{
	char shown[TOOL_NAME_MAX + 8];
	va_list ap;
	if (l->nskips == l->capskips) {
		l->capskips = l->capskips ? l->capskips * 2 : 8;
		l->skips = tgi_xrealloc(l->skips, l->capskips * sizeof *l->skips);
	}
	skipped *k = &l->skips[l->nskips++];
	k->remote = tgi_strdup(remote);
	va_start(ap, fmt);
	vsnprintf(k->why, sizeof k->why, fmt, ap);
	va_end(ap);
	tgi_sanitize_n(shown, sizeof shown, remote, strlen(remote), TOOL_NAME_MAX);
	if (!quiet)
		say("the MCP server \"%s\" offers \"%s\" but it is left out: %s", s->name, shown, k->why);
}

/* One listed tool into the listing: kept as it was, a new row, or skipped. */
static void take_tool(srv *s, listing *l, const json_t *tool)
{
	tgi_bridge *b = s->b;
	json_t *jn = json_is_object(tool) ? json_object_get(tool, "name") : NULL;
	const char *remote = json_string_value(jn);
	char why[200], err[512];

	if (!remote || !*remote || strlen(remote) != json_string_length(jn)) {
		skip(s, l, "(no name)", 0, "a tool without a usable name");
		return;
	}
	if (!wanted(s, remote)) {
		skip(s, l, remote, 1, "the configuration filters it out (tools.include/exclude)");
		return;
	}
	size_t n = strlen(s->prefix) + strlen(remote);
	if (n > TOOL_NAME_MAX || !name_ok(remote, strlen(remote), 1)) {
		skip(s, l, remote, 0,
		     "its exposed name must be at most %d letters, digits, '_', '-' or '.' with the prefix "
		     "\"%s\"", TOOL_NAME_MAX, s->prefix);
		return;
	}
	char name[TOOL_NAME_MAX + 1];
	tgi_snprintf(name, sizeof name, "%s%s", s->prefix, remote);
	const srv *named = prefix_owner(b, s, name);
	if (named) {
		skip(s, l, remote, 0,
		     "its name \"%s\" carries the prefix \"%s\" of the MCP server \"%s\"", name,
		     named->prefix, named->name);
		return;
	}
	if (find_row(l->cur, l->ncur, name)) {
		skip(s, l, remote, 0, "the server lists it twice");
		return;
	}
	lock(b);
	const srv *other = owner_of(b, s, name);
	btool *old = find_row(s->cur, s->ncur, name);
	unlock(b);
	if (other) {
		skip(s, l, remote, 0, "\"%s\" is a tool of the MCP server \"%s\"", name, other->name);
		return;
	}
	char *def = tgi_json_canonical(tool);
	int same = old && !strcmp(old->def, def);
	free(def);
	if (same) {
		push_ptr((void ***)&l->cur, &l->ncur, &l->capcur, old);
		return;
	}

	btool *t = btool_new(s, tool, remote, why, sizeof why);
	if (!t) {
		skip(s, l, remote, 0, "%s", why);
		return;
	}
	pin_check(b, t);
	lock(b);
	t->current = 1;
	unlock(b);
	json_t *outs = output_schema(tool);
	int rc = tgi_registry_put(b->g->reg, &t->row, json_object_get(tool, "inputSchema"), outs,
	                          t->aliases, b->g->cfg->assert_formats, err, sizeof err);
	json_decref(outs);
	if (rc < 0) {
		skip(s, l, remote, 0, "%s", err);
		btool_free(t); /* the registry never saw it */
		if (old) {
			tgi_registry_drop(b->g->reg, name);
			l->changes++;
		}
		return;
	}
	push_ptr((void ***)&s->all, &s->nall, &s->capall, t);
	push_ptr((void ***)&l->cur, &l->ncur, &l->capcur, t);
	l->changes++;
}

static void skips_free(skipped *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].remote);
	free(v);
}

/* Aliases configured for tools the server does not list are ignored: said
 * once per tool for the server's life.  (The server's thread.) */
static void unlisted_aliases(srv *s, const json_t *tools)
{
	const char *remote;
	json_t *x, *tool;
	size_t i;

	json_object_foreach(s->aliases, remote, x) {
		int listed = 0, said = 0;
		json_array_foreach(tools, i, tool) {
			const char *n = json_string_value(json_object_get(tool, "name"));
			listed |= n && !strcmp(n, remote);
		}
		for (i = 0; i < s->unlisted.n && !said; i++)
			said = !strcmp(s->unlisted.v[i], remote);
		if (listed || said)
			continue;
		tgi_strv_push(&s->unlisted, tgi_strdup(remote));
		say("the MCP server \"%s\" lists no tool \"%s\": its aliases are ignored", s->name,
		    remote);
	}
}

/* Put a listing into the registry: new and changed rows put, the rows that
 * went away dropped.  Returns the number of changes. */
static int apply_listing(srv *s, const json_t *tools)
{
	tgi_bridge *b = s->b;
	listing l = { 0 };
	size_t i;
	json_t *tool;

	if (s->aliases)
		unlisted_aliases(s, tools);
	pthread_mutex_lock(&b->list_mu);
	json_array_foreach(tools, i, tool)
		take_tool(s, &l, tool);
	lock(b);
	btool **old = s->cur;
	size_t nold = s->ncur;
	for (i = 0; i < nold; i++)
		old[i]->current = 0;
	for (i = 0; i < l.ncur; i++)
		l.cur[i]->current = 1;
	skipped *oldskips = s->skips;
	size_t noldskips = s->nskips;
	s->cur = l.cur;
	s->ncur = l.ncur;
	s->skips = l.skips;
	s->nskips = l.nskips;
	s->listed = 1;
	unlock(b);
	/* gone: rows no longer current, and not replaced under their name */
	for (i = 0; i < nold; i++) {
		if (old[i]->current || find_row(l.cur, l.ncur, old[i]->name))
			continue;
		tgi_registry_drop(b->g->reg, old[i]->name);
		l.changes++;
	}
	pthread_mutex_unlock(&b->list_mu);
	free(old);
	skips_free(oldskips, noldskips);
	return l.changes;
}

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
	tgi_rulecheck_listed(s->b->g, s->name);
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

static void free_list(char **v)
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
			record_event(s->b, "mcp.server.sandbox.removed",
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
	*envp = child_env(s->env, s->sbx.home ? s->sbx.home : getenv("HOME"),
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
	free_list(envp);
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
	apply_listing(s, tools);
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
	int n = apply_listing(s, tools);
	json_decref(tools);
	after_listing(s);
	if (n)
		changed(s->b);
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

static void *srv_main(void *arg)
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
			double in_s = restart_in_s(s);
			int was_up = s->ever_up, stopping = b->stopping;
			unlock(b);
			if (!stopping) {
				say("the MCP server \"%s\" could not be started: %s; trying again in %.0f s",
				    s->name, why, in_s);
				record_event(b, "mcp.server.exited",
				             json_pack("{s:s, s:s, s:b, s:f}", "server", s->name, "reason", why,
				                       "started", 0, "restart_in_s", in_s));
				if (was_up)
					changed(b);
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
		record_event(b, "mcp.server.started",
		             json_pack("{s:s, s:I, s:s?, s:I}", "server", s->name, "pid",
		                       (json_int_t)tgi_mcp_client_pid(c), "protocol",
		                       tgi_mcp_client_version(c), "tools", (json_int_t)ntools));
		changed(b);
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
		double in_s = restart_in_s(s);
		char reason[512];
		tgi_snprintf(reason, sizeof reason, "%s", s->why);
		unlock(b);
		stop_client(s, c);
		if (s->argv)
			log_note(s, "it ended: %s", reason);
		if (!stopping) {
			say("the MCP server \"%s\" %s (%s); restarting it in %.0f s", s->name,
			    s->url ? "closed its connection" : "exited", reason, in_s);
			record_event(b, "mcp.server.exited",
			             json_pack("{s:s, s:s, s:b, s:f}", "server", s->name, "reason", reason,
			                       "started", 1, "restart_in_s", in_s));
			changed(b);
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

/* ---- the bridge ---- */

static void srv_free(srv *s)
{
	free_list(s->argv);
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
		btool_free(s->all[i]);
	free(s->all);
	free(s->cur);
	skips_free(s->skips, s->nskips);
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
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&b->mu, NULL);
	pthread_mutex_init(&b->list_mu, NULL);
	b->g = g;
	b->v = tgi_xcalloc(json_object_size(servers), sizeof *b->v);
	json_object_foreach((json_t *)servers, name, v) {
		srv *s = &b->v[b->n++];
		s->log_dir = s->log_fd = -1;
		pthread_mutex_init(&s->log_mu, NULL);
		if (parse_server(b, name, v, s, err, errlen) < 0) {
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
				bad(g->cfg, b->v[j].name, "prefix", err, errlen,
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
	int rc = pthread_create(&s->thread, NULL, srv_main, s);
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
		down_sentence(s, out, cap);
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
		*retry_after_s = s->state == SRV_DOWN ? restart_in_s(s) : 1;
		down_sentence(s, err, errlen);
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
