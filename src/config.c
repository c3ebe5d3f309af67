/*
 * config.c — the configuration (DESIGN §7): discovery, built-in defaults,
 * and the semantic check that turns a parsed document into a tgi_config.
 *
 * Discovery: an explicit path (must exist), else $TOOLGATE_CONFIG (must
 * exist when set and not empty), else the search: the first directory,
 * from the current one (or --workspace) up to the root, holding one of
 * toolgate.yaml, toolgate.yml, toolgate.json (two non-empty ones are an
 * error; empty ones count only alone), trusting only what you or root own
 * (search()), else the built-in defaults.  The workspace is the file's
 * `workspace` (relative to the file's directory), else the directory a
 * found file is in, else the current directory.  YAML goes through
 * tgi_yaml_parse; a file ending in .json is parsed by jansson for exact
 * JSON semantics and through the YAML parser only for its source map.
 *
 * The workspace is kept as its real path and, when that differs, as
 * configured (through a symlink, or $PWD for the current directory): the
 * two spellings a model's absolute paths may use (tgi_workspace_spelled).
 *
 * Every key is checked: an unknown key, a wrong type, a dangling reference
 * (role, principal, profile) is an error "file:line:col: key.path: expected
 * X, got Y" — a typo must never silently weaken policy.
 *
 * Owns: the tgi_config it returns and everything in it.  Must not: compile
 * rules or schemas (the registry and policy do that; here they are only
 * checked to be strings and objects), touch the ledger, or run anything.
 */
#include "config.h"
#include "contract.h"
#include "exec/netproxy.h"
#include "policy/policy.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFG_MAX_BYTES   (4u << 20)  /* a config file larger than this is refused */
#define PTR_MAX         1024        /* JSON pointers built while checking */
#define TOOL_NAME_MAX   64
#define MAX_BYTES_LIMIT (1LL << 30) /* ceiling for byte and char limits */
#define MAX_TIMEOUT_S   86400
#define MAX_TTL_S       31536000

/* ---- enums ---- */

static const char *const mode_names[]     = {
#define XX(m, name) name,
	TGI_MODE_MAP(XX)
#undef XX
};
static const char *const approval_names[] = { "ask", "deny", "untrusted" };
/* The former names of ask and deny, still read: Codex's words, which mean
 * more there (its on-request and never run a sandboxed command unasked);
 * here they never run more than ask and deny do. */
static const char *const approval_former[] = { "on-request", "never" };
static const char *const sandbox_names[]  = { "read-only", "workspace-write", "danger-full-access" };
static const char *const sync_names[]     = { "normal", "full" };
static const char *const keep_names[]     = { "side_effects", "all" };
static const char *const via_names[]      = { "both", "elicitation", "queue" };

static int name_index(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

int tgi_mode_parse(const char *s, tgi_mode *out)
{
	int i = name_index(s, mode_names, TGI_ARRAY_LEN(mode_names));
	if (i < 0)
		return -1;
	*out = (tgi_mode)i;
	return 0;
}

int tgi_approval_parse(const char *s, tgi_approval *out)
{
	int i = name_index(s, approval_names, TGI_ARRAY_LEN(approval_names));
	if (i < 0)
		i = name_index(s, approval_former, TGI_ARRAY_LEN(approval_former));
	if (i < 0)
		return -1;
	*out = (tgi_approval)i;
	return 0;
}

int tgi_sandbox_parse(const char *s, tgi_sandbox *out)
{
	int i = name_index(s, sandbox_names, TGI_ARRAY_LEN(sandbox_names));
	if (i < 0)
		return -1;
	*out = (tgi_sandbox)i;
	return 0;
}

int tgi_approvals_via_parse(const char *s, tgi_approvals_via *out)
{
	int i = name_index(s, via_names, TGI_ARRAY_LEN(via_names));
	if (i < 0)
		return -1;
	*out = (tgi_approvals_via)i;
	return 0;
}

const char *tgi_approvals_via_name(tgi_approvals_via v)
{
	return (unsigned)v < TGI_ARRAY_LEN(via_names) ? via_names[v] : "unknown";
}

const char *tgi_mode_name(tgi_mode m)
{
	return (unsigned)m < TGI_ARRAY_LEN(mode_names) ? mode_names[m] : "unknown";
}

const char *tgi_approval_name(tgi_approval a)
{
	return (unsigned)a < TGI_ARRAY_LEN(approval_names) ? approval_names[a] : "unknown";
}

const char *tgi_sandbox_name(tgi_sandbox s)
{
	return (unsigned)s < TGI_ARRAY_LEN(sandbox_names) ? sandbox_names[s] : "unknown";
}

/* ---- the tables every key is checked against ---- */

static const struct {
	const char *key;
	unsigned    bit;
} tool_flag_keys[] = {
	{ "read_only",                TGI_T_READ_ONLY },
	{ "concurrency_safe",         TGI_T_CONCURRENCY_SAFE },
	{ "destructive",              TGI_T_DESTRUCTIVE | TGI_T_CONFIRM },
	{ "idempotent",               TGI_T_IDEMPOTENT },
	{ "requires_grant",           TGI_T_REQUIRES_GRANT },
	{ "requires_idempotency_key", TGI_T_REQUIRES_KEY },
	{ "edits_files",              TGI_T_EDITS_FILES },
};
static const char *const builtin_tools[] = {
	"read_file", "list_dir", "search_files", "write_file", "apply_patch", "shell",
};

static const struct {
	const char *name;
	const char *categories[4];
	int         read_only_only;
} builtin_profiles[] = {
	{ "minimal",   { "fs" },                         1 },
	{ "coding",    { "fs", "runtime", "mcp" },       0 },
	{ "messaging", { "messaging", "web", "memory" }, 0 },
	{ "full",      { "*" },                          0 },
};

/* ---- freeing ---- */

static void strv_free(tgi_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* An empty list: v is always allocated so it can be walked to its NULL. */
static tgi_strv strv_empty(void)
{
	return (tgi_strv){ tgi_xcalloc(1, sizeof(char *)), 0 };
}

void tgi_config_free(tgi_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nprincipals; i++) {
		free(c->principals[i].name);
		strv_free(&c->principals[i].roles);
		free(c->principals[i].token_env);
	}
	for (size_t i = 0; i < c->nroles; i++) {
		free(c->roles[i].name);
		strv_free(&c->roles[i].allow);
		strv_free(&c->roles[i].ask);
		strv_free(&c->roles[i].deny);
	}
	for (size_t i = 0; i < c->nprofiles; i++) {
		free(c->profiles[i].name);
		strv_free(&c->profiles[i].categories);
	}
	for (size_t i = 0; i < c->ntools; i++) {
		tgi_tool_cfg *t = &c->tools[i];
		free(t->name);
		free(t->description);
		json_decref(t->input_schema);
		json_decref(t->output_schema);
		json_decref(t->aliases);
		strv_free(&t->command);
		free(t->category);
		strv_free(&t->requires_env);
		strv_free(&t->check);
		tgi_sb_profile_free(&t->sandbox);
	}
	free(c->principals);
	free(c->roles);
	free(c->profiles);
	free(c->tools);
	strv_free(&c->allow);
	strv_free(&c->ask);
	strv_free(&c->deny);
	strv_free(&c->execpolicy);
	json_decref(c->permission_tests);
	tgi_sb_profile_free(&c->sandbox_profile);
	strv_free(&c->shell.env_allow);
	strv_free(&c->shell.read_only);
	free(c->shell.path);
	free(c->path);
	free(c->dir);
	free(c->workspace);
	free(c->workspace_given);
	free(c->store);
	free(c->key_file);
	free(c->key_env);
	free(c->profile);
	free(c->default_principal);
	json_decref(c->mcp_servers);
	json_decref(c->hooks);
	json_decref(c->loop_detection);
	json_decref(c->rate_limits);
	json_decref(c->redact);
	json_decref(c->events);
	free(c->console_listen);
	free(c->console_token_env);
	strv_free(&c->mcp_strip_args);
	json_decref(c->root);
	free(c->file);
	tgi_srcmap_free(c->srcmap);
	free(c);
}

/* ---- where a node is, and how to say what went wrong (config/section.c) ---- */

static const char *display_name(const tgi_config *c)
{
	return c->file ? c->file : c->path ? c->path : "built-in defaults";
}

tgi_conf_doc tgi_config_doc(const tgi_config *c)
{
	return (tgi_conf_doc){ .file = display_name(c), .root = c->root, .map = c->srcmap };
}

void tgi_config_where(const tgi_config *c, const char *ptr, char *out, size_t cap)
{
	tgi_conf_doc d = tgi_config_doc(c);
	tgi_conf_where(&d, ptr, 0, out, cap);
}

/* strerror, lowercased for a sentence ("permission denied"). */
static const char *errstr(int e, char *out, size_t cap)
{
	tgi_snprintf(out, cap, "%s", strerror(e));
	if (out[0] >= 'A' && out[0] <= 'Z' && !(out[1] >= 'A' && out[1] <= 'Z'))
		out[0] = (char)(out[0] | 0x20);
	return out;
}

int tgi_config_fail(const tgi_config *cfg, const char *ptr, char *err, size_t errlen,
                    const char *fmt, ...)
{
	tgi_conf_doc d = tgi_config_doc(cfg);
	tgi_conf_ctx x = { &d, err, errlen, NULL };
	va_list ap;
	va_start(ap, fmt);
	tgi_conf_vfail_at(&x, ptr, ptr, fmt, ap);
	va_end(ap);
	return -1;
}

int tgi_config_strings(const tgi_config *cfg, const json_t *v, const char *ptr, size_t max,
                       size_t maxlen, int argv, char *err, size_t errlen)
{
	char ip[PTR_MAX], tok[24], got[96];
	size_t i;
	const json_t *s;
	if (!json_is_array(v))
		return tgi_config_fail(cfg, ptr, err, errlen, "expected a list of strings, got %s",
		                       tgi_json_describe(v, got, sizeof got));
	if (json_array_size(v) > max)
		return tgi_config_fail(cfg, ptr, err, errlen, "more than %zu entries", max);
	json_array_foreach(v, i, s) {
		int may_be_empty = argv && i > 0;
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		if (!json_is_string(s) || (!json_string_length(s) && !may_be_empty))
			return tgi_config_fail(cfg, ip, err, errlen, "expected a %sstring, got %s",
			                       may_be_empty ? "" : "non-empty ",
			                       tgi_json_describe(s, got, sizeof got));
		if (json_string_length(s) > maxlen)
			return tgi_config_fail(cfg, ip, err, errlen, "longer than %zu bytes", maxlen);
		if (strlen(json_string_value(s)) != json_string_length(s))
			return tgi_config_fail(cfg, ip, err, errlen, "contains a NUL character");
	}
	return 0;
}

/* The loader's state for one document. */
typedef struct ld {
	tgi_config  *c;
	char        *err;
	size_t       errlen;
	int          found;   /* the file was found by the search (its directory is the
	                         default workspace), not named */
	tgi_conf_doc doc;
	tgi_conf_ctx cx;      /* doc, err; user: this */
	int          default_mode;   /* permissions.defaultMode's index, or -1 */
} ld;

/* Report a problem located at the node loc, under the key path of path. */
__attribute__((format(printf, 4, 5)))
static int fail_at(ld *x, const char *loc, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tgi_conf_vfail_at(&x->cx, loc, path, fmt, ap);
	va_end(ap);
	return -1;
}

#define fail(x, ptr, ...) fail_at((x), (ptr), (ptr), __VA_ARGS__)

static int fail_type(ld *x, const char *ptr, const json_t *v, const char *expected)
{
	char got[96];
	return fail(x, ptr, "expected %s, got %s", expected, tgi_json_describe(v, got, sizeof got));
}

/* ---- typed access ---- */

/* obj[key] with its pointer in ptr (PTR_MAX bytes); NULL when absent. */
static json_t *child(json_t *obj, const char *base, const char *key, char *ptr)
{
	tgi_json_pointer_join(ptr, PTR_MAX, base, key);
	return json_object_get(obj, key);
}

/* The section at root's key through table into st (absent or null: nothing). */
static int apply(ld *x, json_t *root, const char *key, const tgi_conf_key *table, size_t n,
                 void *st)
{
	char ptr[PTR_MAX];
	json_t *v = child(root, "", key, ptr);
	return tgi_conf_section_apply(&x->cx, table, n, v, ptr, st);
}

static int check_str(ld *x, const json_t *v, const char *ptr)
{
	if (!json_is_string(v))
		return fail_type(x, ptr, v, "a string");
	if (!json_string_length(v))
		return fail(x, ptr, "expected a non-empty string, got \"\"");
	return 0;
}

static int env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9') || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') || ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z')))
			return 0;
	return 1;
}

static int check_env_name(ld *x, const json_t *v, const char *ptr)
{
	if (check_str(x, v, ptr) < 0)
		return -1;
	if (!env_name_ok(json_string_value(v)))
		return fail_type(x, ptr, v, "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
	return 0;
}

/* Any string, even empty (an argv element). */
static int check_any_str(ld *x, const json_t *v, const char *ptr)
{
	return json_is_string(v) ? 0 : fail_type(x, ptr, v, "a string");
}

typedef int (*item_check)(ld *x, const json_t *v, const char *ptr);

/* v at ptr must be a list whose items pass check; null is an empty list.
 * Replaces *out. */
static int strv_from(ld *x, json_t *v, const char *ptr, item_check check, tgi_strv *out)
{
	if (!json_is_null(v) && !json_is_array(v))
		return fail_type(x, ptr, v, "a list of strings");
	size_t n = json_is_array(v) ? json_array_size(v) : 0;
	strv_free(out);
	out->v = tgi_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		char ip[PTR_MAX], tok[24];
		json_t *item = json_array_get(v, i);
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		if (check(x, item, ip) < 0)
			return -1;
		out->v[out->n++] = tgi_strdup(json_string_value(item));
	}
	return 0;
}

/* ---- paths ---- */

/*
 * rel against base (ignored when rel is absolute), with empty and "."
 * components dropped; ".." is kept (it means what the file system says).
 * NULL when the result would exceed PATH_MAX.  Caller frees.
 */
static char *path_join(const char *base, const char *rel)
{
	tgi_buf b;
	const char *parts[2] = { rel[0] == '/' ? "" : base, rel };

	tgi_buf_init(&b, PATH_MAX - 1);
	for (size_t k = 0; k < 2; k++) {
		for (const char *s = parts[k]; *s;) {
			size_t n = strcspn(s, "/");
			if (n && !(n == 1 && s[0] == '.') && (tgi_buf_puts(&b, "/") < 0 ||
			                                      tgi_buf_append(&b, s, n) < 0)) {
				tgi_buf_free(&b);
				return NULL;
			}
			s += n;
			s += *s == '/';
		}
	}
	if (!b.len)
		tgi_buf_puts(&b, "/");
	return tgi_buf_steal(&b);
}

static char *current_dir(void)
{
	return realpath(".", NULL);
}

/* A command's argv[0]: relative with a '/' means relative to the config's
 * directory; a bare name is looked up in PATH when run. */
static int resolve_argv0(ld *x, tgi_strv *argv, const char *ptr)
{
	if (!argv->n || argv->v[0][0] == '/' || !strchr(argv->v[0], '/'))
		return 0;
	char *abs = path_join(x->c->dir, argv->v[0]);
	if (!abs)
		return fail(x, ptr, "expected a shorter path, got one over %d bytes", PATH_MAX);
	free(argv->v[0]);
	argv->v[0] = abs;
	return 0;
}

void tgi_workspace_shown(const tgi_config *c, char *out, size_t cap)
{
	const char *ws = c->workspace_given ? c->workspace_given : c->workspace;
	tgi_sanitize_n(out, cap, ws, strlen(ws), cap > 8 ? cap - 8 : 0);
}

/* The workspace as the configuration spells it: its `workspace` (relative
 * to the file's directory as the file was named), else the directory of a
 * file the search found, else the current directory. */
static char *workspace_given(const tgi_config *c, const json_t *v)
{
	const char *w = v ? json_string_value(v) : ".";
	const char *slash = c->file && w[0] != '/' ? strrchr(c->file, '/') : NULL;
	if (!slash)
		return tgi_workspace_spelled(w, c->workspace);
	size_t dn = (size_t)(slash - c->file) + 1, wn = strlen(w);
	char *given = tgi_xmalloc(dn + wn + 1);
	memcpy(given, c->file, dn);
	memcpy(given + dn, w, wn + 1);
	char *spelled = tgi_workspace_spelled(given, c->workspace);
	free(given);
	return spelled;
}

/* ---- the sections ---- */

static int load_workspace(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX], got[96], e[128];
	struct stat st;
	char *ws;

	json_t *v = child(root, "", "workspace", ptr);
	if (v) {
		if (check_str(x, v, ptr) < 0)
			return -1;
		ws = path_join(c->dir, json_string_value(v));
		if (!ws)
			return fail(x, ptr, "expected a shorter path, got one over %d bytes", PATH_MAX);
	} else if (x->found) {      /* as `workspace: .` */
		ws = tgi_strdup(c->dir);
	} else {
		ws = current_dir();
		if (!ws)
			return fail(x, "", "cannot determine the current directory: %s",
			            errstr(errno, e, sizeof e));
	}
	int missing = stat(ws, &st) < 0;
	if (!missing && S_ISDIR(st.st_mode))
		c->workspace = realpath(ws, NULL);
	free(ws);
	if (!c->workspace && !v)
		return fail(x, "", "the current directory cannot be used as the workspace");
	if (!c->workspace)
		return fail(x, ptr, "expected %s, got %s", missing ? "an existing directory" : "a directory",
		            tgi_json_describe(v, got, sizeof got));
	c->workspace_given = workspace_given(c, v);

	v = child(root, "", "store", ptr);
	if (v && check_str(x, v, ptr) < 0)
		return -1;
	const char *env = getenv("TOOLGATE_STORE");
	const char *store = tgi_config_store_given(c);
	c->store = tgi_store_is_url(store) ? tgi_strdup(store) : path_join(c->workspace, store);
	if (!c->store)
		return fail(x, env && *env ? "" : ptr, "expected a shorter %s path, got one over %d bytes",
		            env && *env ? "$TOOLGATE_STORE" : "store", PATH_MAX);
	return 0;
}

/* $TOOLGATE_STORE names the ledger over the file's `store` (a deployment
 * sets it once for every gate), else the default. */
const char *tgi_config_store_given(const tgi_config *c)
{
	const char *env = getenv("TOOLGATE_STORE");
	json_t *v = c->root ? json_object_get(c->root, "store") : NULL;
	if (env && *env)
		return env;
	return json_is_string(v) ? json_string_value(v) : ".toolgate/ledger.db";
}

/* approval: one of approval_names, or a former name of ask or deny */
static int set_approval(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	tgi_config *c = obj;
	int i = name_index(json_string_value(v), approval_former, TGI_ARRAY_LEN(approval_former));
	if (i < 0 && tgi_conf_enum(cx, v, ptr, approval_names, TGI_ARRAY_LEN(approval_names), &i) < 0)
		return -1;
	c->approval = (tgi_approval)i;
	return 0;
}

/* Every top-level key; the scalars are set here, the sections by their loaders. */
static const tgi_conf_key top_keys[] = {
	TGI_CONF_OWN("workspace", "the directory the tools work in (default: the file's)"),
	TGI_CONF_OWN("store", "the ledger: a path (in the workspace) or a postgres:// URL"),
	TGI_CONF_STRING("profile", tgi_config, profile, 0, "the tools offered: a profile's name"),
	TGI_CONF_ENUM("mode", tgi_config, mode, mode_names, "how calls are decided"),
	TGI_CONF_CUSTOM("approval", set_approval, "what an ask becomes: ask, deny or untrusted"),
	TGI_CONF_OWN("sandbox", "the shell tool's sandbox profile"),
	TGI_CONF_STRING("default_principal", tgi_config, default_principal, 0,
	                "who a call without a token is"),
	TGI_CONF_OWN("principals", "who may call: roles and token variables"),
	TGI_CONF_OWN("roles", "allow, ask and deny rules by role"),
	TGI_CONF_OWN("permissions", "everyone's rules, Claude Code's defaultMode, rule tests"),
	TGI_CONF_OWN("execpolicy", "Codex rule files"),
	TGI_CONF_OWN("tools", "configured command tools"),
	TGI_CONF_OWN("profiles", "more profiles (tool categories)"),
	TGI_CONF_OWN("limits", "argument, result and time limits"),
	TGI_CONF_OWN("formats", "whether JSON Schema formats are asserted"),
	TGI_CONF_OWN("approvals", "how long approvals last and how they are asked"),
	TGI_CONF_OWN("ledger", "durability, leases and the machine key"),
	TGI_CONF_OWN("mcp_servers", "downstream MCP servers (mcp/bridge_config.c)"),
	TGI_CONF_OWN("hooks", "programs run before and after calls (mw/hooks.c)"),
	TGI_CONF_OWN("loop_detection", "repeated calls warned and blocked (mw/loop.c)"),
	TGI_CONF_OWN("rate_limits", "calls per tool glob and time (mw/ratelimit.c)"),
	TGI_CONF_OWN("redact", "what is masked in records (mw/redact.c)"),
	TGI_CONF_OWN("shell", "the shell tool's limits and read-only commands"),
	TGI_CONF_BOOL("hide_denied", tgi_config, hide_denied,
	              "MCP tools/list leaves out what a bare deny rule forbids"),
	TGI_CONF_OWN("events", "event sinks: a JSONL file, a socket (mw/events.c)"),
	TGI_CONF_OWN("console", "toolgate console's address and token"),
	TGI_CONF_OWN("mcp", "toolgate serve's client arguments and call threads"),
	TGI_CONF_OWN("spill", "how long spilled results are kept"),
};

/* ---- sandbox profiles ---- */

#define SB_PATHS_MAX 64     /* entries of read, write, sockets */
#define SB_HOSTS_MAX 256
#define SB_HOST_MAX  261    /* a 253-byte name, ":" and a port */

void tgi_sb_profile_init(tgi_sb_profile *p, tgi_sandbox m)
{
	*p = (tgi_sb_profile){ .mode = m, .net = TGI_NET_OFF };
	p->hosts = strv_empty();
	p->read = strv_empty();
	p->write = strv_empty();
	p->sockets = strv_empty();
}

static tgi_strv strv_copy(const tgi_strv *src)
{
	tgi_strv d = strv_empty();
	for (size_t i = 0; i < src->n; i++)
		tgi_strv_push(&d, tgi_strdup(src->v[i]));
	return d;
}

void tgi_sb_profile_copy(tgi_sb_profile *dst, const tgi_sb_profile *src)
{
	*dst = (tgi_sb_profile){ .mode = src->mode, .net = src->net, .accept = src->accept };
	dst->hosts = strv_copy(&src->hosts);
	dst->read = strv_copy(&src->read);
	dst->write = strv_copy(&src->write);
	dst->sockets = strv_copy(&src->sockets);
}

void tgi_sb_profile_free(tgi_sb_profile *p)
{
	if (!p)
		return;
	strv_free(&p->hosts);
	strv_free(&p->read);
	strv_free(&p->write);
	strv_free(&p->sockets);
}

/* A profile's path as kept: "~" and "~/x" expanded to the home directory
 * ($HOME, else the user database's), an absolute path as it is, a relative
 * one as it is (the workspace's, resolved when the sandbox is prepared).
 * NULL with why set. */
static char *profile_path(const char *s, char *why, size_t cap)
{
	if (s[0] == '~') {
		if (s[1] && s[1] != '/') {
			tgi_snprintf(why, cap, "expected ~ or ~/path (another user's home is not "
			             "expanded), got \"%s\"", s);
			return NULL;
		}
		const char *home = getenv("HOME");
		if (!home || home[0] != '/')
			home = tgi_passwd_home();
		if (!home || home[0] != '/') {
			tgi_snprintf(why, cap, "\"%s\" names the home directory, and this user has none", s);
			return NULL;
		}
		char *p = path_join(home, s[1] ? s + 2 : "");
		if (!p)
			tgi_snprintf(why, cap, "expected a shorter path, got one over %d bytes", PATH_MAX);
		return p;
	}
	if (strlen(s) >= PATH_MAX) {
		tgi_snprintf(why, cap, "expected a shorter path, got one over %d bytes", PATH_MAX);
		return NULL;
	}
	return tgi_strdup(s);
}

static int profile_paths(const tgi_config *cfg, const json_t *v, const char *ptr,
                         tgi_strv *out, char *err, size_t errlen)
{
	char ip[PTR_MAX], tok[24], why[PATH_MAX + 128];
	size_t i;
	const json_t *s;
	if (tgi_config_strings(cfg, v, ptr, SB_PATHS_MAX, PATH_MAX - 1, 0, err, errlen) < 0)
		return -1;
	tgi_strv got = strv_empty();
	json_array_foreach(v, i, s) {
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		const char *str = json_string_value(s);
		char *p = profile_path(str, why, sizeof why);
		if (p && !strcmp(p, "/")) {
			free(p);
			p = NULL;
			tgi_snprintf(why, sizeof why, "expected a path below /, got \"/\" (the whole file "
			             "system is mode danger-full-access)");
		}
		if (!p) {
			strv_free(&got);
			return tgi_config_fail(cfg, ip, err, errlen, "%s", why);
		}
		tgi_strv_push(&got, p);
	}
	strv_free(out);
	*out = got;
	return 0;
}

/* "host", "*.domain", "1.2.3.4" or "[v6]", each with an optional ":port";
 * lowercased into out (SB_HOST_MAX + 1).  0, or -1 with why. */
static int host_entry(const char *s, char *out, char *why, size_t cap)
{
	size_t n = strlen(s), hlen;
	const char *port = NULL;
	if (!n || n > SB_HOST_MAX) {
		tgi_snprintf(why, cap, "expected a host name of 1 to %d bytes", SB_HOST_MAX);
		return -1;
	}
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end == s + 1 || (end[1] && end[1] != ':')) {
			tgi_snprintf(why, cap, "expected [IPv6 address] or [IPv6 address]:port, got \"%s\"", s);
			return -1;
		}
		for (const char *c = s + 1; c < end; c++)
			if (!(*c == ':' || *c == '.' || (*c >= '0' && *c <= '9') ||
			      ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'f'))) {
				tgi_snprintf(why, cap, "expected an IPv6 address in brackets, got \"%s\"", s);
				return -1;
			}
		hlen = (size_t)(end - s) + 1;
		port = end[1] ? end + 2 : NULL;
	} else {
		const char *colon = strchr(s, ':');
		hlen = colon ? (size_t)(colon - s) : n;
		port = colon ? colon + 1 : NULL;
		const char *h = s;
		if (hlen > 2 && s[0] == '*' && s[1] == '.')
			h += 2;
		size_t label = 0;
		for (const char *c = h; c < s + hlen; c++) {
			int ok = *c == '-' || (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z');
			if (*c == '.') {
				if (!label)
					break;
				label = 0;
				continue;
			}
			if (!ok || ++label > 63) {
				label = 0;
				break;
			}
		}
		if (!label || h[0] == '-' || hlen - (size_t)(h - s) > 253) {
			tgi_snprintf(why, cap, "expected a host name (letters, digits, '-' and '.', or "
			             "*.domain), an IPv4 address or [IPv6], with an optional :port; got "
			             "\"%s\"", s);
			return -1;
		}
	}
	if (port) {
		char *end;
		errno = 0;
		unsigned long p = *port >= '0' && *port <= '9' ? strtoul(port, &end, 10) : 0;
		if (!p || p > 65535 || *end || errno) {
			tgi_snprintf(why, cap, "expected a port from 1 to 65535 after ':', got \"%s\"", s);
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] | 0x20 : s[i]);
	out[n] = '\0';
	return 0;
}

static int profile_network(const tgi_config *cfg, const json_t *v, const char *ptr,
                           tgi_sb_profile *out, char *err, size_t errlen)
{
	char ip[PTR_MAX], tok[24], why[512], host[SB_HOST_MAX + 1], got[96];
	size_t i;
	const json_t *s;
	if (json_is_boolean(v)) {
		out->net = json_is_true(v) ? TGI_NET_ON : TGI_NET_OFF;
		strv_free(&out->hosts);
		out->hosts = strv_empty();
		return 0;
	}
	if (!json_is_array(v))
		return tgi_config_fail(cfg, ptr, err, errlen, "expected true, false or a list of "
		                       "hosts ([api.github.com:443, registry.npmjs.org]), got %s",
		                       tgi_json_describe(v, got, sizeof got));
	if (tgi_config_strings(cfg, v, ptr, SB_HOSTS_MAX, SB_HOST_MAX, 0, err, errlen) < 0)
		return -1;
	tgi_strv hosts = strv_empty();
	json_array_foreach(v, i, s) {
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		if (host_entry(json_string_value(s), host, why, sizeof why) < 0) {
			strv_free(&hosts);
			return tgi_config_fail(cfg, ip, err, errlen, "%s", why);
		}
		tgi_strv_push(&hosts, tgi_strdup(host));
	}
	/* the proxy's own reading of the list (exec/netproxy.h): what it would
	 * refuse at a call is refused here, at load */
	tgi_netallow *allow = NULL;
	if (tgi_netallow_new((const char *const *)hosts.v, hosts.n, &allow, why, sizeof why) < 0) {
		strv_free(&hosts);
		return tgi_config_fail(cfg, ptr, err, errlen, "%s", why);
	}
	tgi_netallow_unref(allow);
	strv_free(&out->hosts);
	out->hosts = hosts;
	out->net = hosts.n ? TGI_NET_HOSTS : TGI_NET_OFF;   /* no host: nothing to reach */
	return 0;
}

static int profile_accept(const tgi_config *cfg, const json_t *v, const char *ptr,
                          unsigned *out, char *err, size_t errlen)
{
	char ip[PTR_MAX], tok[24];
	size_t i;
	const json_t *s;
	unsigned acc = 0;
	if (tgi_config_strings(cfg, v, ptr, 4, 32, 0, err, errlen) < 0)
		return -1;
	json_array_foreach(v, i, s) {
		const char *b = json_string_value(s);
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		if (!strcmp(b, "landlock"))
			acc |= TGI_SB_ACCEPT_LANDLOCK;
		else if (strcmp(b, "bubblewrap"))
			return tgi_config_fail(cfg, ip, err, errlen, "expected a sandbox backend to "
			                       "accept (landlock; bubblewrap always is), got \"%s\"%s", b,
			                       !strcmp(b, "none") ? "; to run without a sandbox, say mode: "
			                       "danger-full-access" : "");
	}
	*out = acc;
	return 0;
}

static int set_sb_paths(const tgi_conf_ctx *cx, const json_t *v, const char *ptr,
                        tgi_strv *out)
{
	return profile_paths(cx->user, v, ptr, out, cx->err, cx->errlen);
}

static int set_sb_read(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return set_sb_paths(cx, v, ptr, &((tgi_sb_profile *)obj)->read);
}

static int set_sb_write(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return set_sb_paths(cx, v, ptr, &((tgi_sb_profile *)obj)->write);
}

static int set_sb_sockets(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return set_sb_paths(cx, v, ptr, &((tgi_sb_profile *)obj)->sockets);
}

static int set_sb_network(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return profile_network(cx->user, v, ptr, obj, cx->err, cx->errlen);
}

static int set_sb_accept(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return profile_accept(cx->user, v, ptr, &((tgi_sb_profile *)obj)->accept, cx->err,
	                      cx->errlen);
}

static const tgi_conf_key sandbox_keys[] = {
	TGI_CONF_ENUM("mode", tgi_sb_profile, mode, sandbox_names, "read-only, workspace-write "
	              "or danger-full-access"),
	TGI_CONF_CUSTOM("network", set_sb_network, "true, false or a list of host[:port]"),
	TGI_CONF_CUSTOM("read", set_sb_read, "more paths shown read-only"),
	TGI_CONF_CUSTOM("write", set_sb_write, "more paths shown writable"),
	TGI_CONF_CUSTOM("sockets", set_sb_sockets, "unix sockets reachable"),
	TGI_CONF_CUSTOM("accept", set_sb_accept, "weaker backends accepted (landlock)"),
};

int tgi_sb_profile_parse(const tgi_config *cfg, const json_t *v, const char *ptr,
                         tgi_sb_profile *out, char *err, size_t errlen)
{
	char got[96], list[256];
	int i;
	if (json_is_string(v) || !json_is_object(v)) {
		i = name_index(json_string_value(v), sandbox_names, TGI_ARRAY_LEN(sandbox_names));
		if (i < 0)
			return tgi_config_fail(cfg, ptr, err, errlen, "expected one of %s%s, got %s",
			                       tgi_conf_join(sandbox_names, TGI_ARRAY_LEN(sandbox_names), list,
			                                  sizeof list),
			                       json_is_string(v) ? "" : ", or a mapping {mode, network, read, "
			                       "write, sockets, accept}",
			                       tgi_json_describe(v, got, sizeof got));
		out->mode = (tgi_sandbox)i;
		return 0;
	}
	tgi_conf_doc d = tgi_config_doc(cfg);
	tgi_conf_ctx cx = { &d, err, errlen, (void *)cfg };
	return tgi_conf_section_apply(&cx, sandbox_keys, TGI_ARRAY_LEN(sandbox_keys), v, ptr, out);
}

/* sandbox: the shell tool's profile (after the workspace: nothing here
 * depends on it, but a relative path means the workspace's) */
static int load_sandbox(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX];
	json_t *v = child(root, "", "sandbox", ptr);
	if (v && tgi_sb_profile_parse(c, v, ptr, &c->sandbox_profile, x->err, x->errlen) < 0)
		return -1;
	c->sandbox = c->sandbox_profile.mode;
	c->sandbox_network = c->sandbox_profile.net != TGI_NET_OFF;
	return 0;
}

/* ledger.key_env (a variable's name) and ledger.key_file (absolute, `~/`,
 * or relative to the configuration's directory; never inside the
 * workspace: a key the workspace holds is no secret from what runs there,
 * nor from a repository that ships one with a ledger it signed). */
static int set_key_env(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	ld *x = cx->user;
	tgi_config *c = obj;
	if (check_str(x, v, ptr) < 0)
		return -1;
	const char *n = json_string_value(v);
	size_t len = strlen(n);
	if (!len || strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != len ||
	    (n[0] >= '0' && n[0] <= '9'))
		return fail(x, ptr, "expected the name of an environment variable (letters, digits "
		            "and _), got \"%s\"", n);
	free(c->key_env);
	c->key_env = tgi_strdup(n);
	return 0;
}

static int set_key_file(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	ld *x = cx->user;
	tgi_config *c = obj;
	char why[PATH_MAX + 128];
	if (check_str(x, v, ptr) < 0)
		return -1;
	const char *f = json_string_value(v);
	char *p = f[0] == '~' ? profile_path(f, why, sizeof why)
	        : f[0] ? path_join(c->dir ? c->dir : c->workspace, f) : NULL;
	if (!p)
		return fail(x, ptr, "%s", f[0] == '~' ? why : "expected a path, got an empty string");
	size_t wl = strlen(c->workspace);
	if (!strncmp(p, c->workspace, wl) && (p[wl] == '/' || !p[wl] || wl == 1)) {
		fail(x, ptr, "the ledger key %s is inside the workspace: a key the workspace holds is no "
		     "secret from what runs there; keep it outside (e.g. /etc/toolgate/key, or leave "
		     "key_file out for the one in $XDG_STATE_HOME/toolgate)", p);
		free(p);
		return -1;
	}
	free(c->key_file);
	c->key_file = p;
	return 0;
}

static const tgi_conf_key limits_keys[] = {
	TGI_CONF_INT("max_args_bytes", tgi_config, max_args_bytes, 1, MAX_BYTES_LIMIT,
	             "bytes of a call's arguments"),
	TGI_CONF_INT("max_result_chars", tgi_config, max_result_chars, 1, MAX_BYTES_LIMIT,
	             "characters of a result the model is given"),
	TGI_CONF_INT("timeout_s", tgi_config, timeout_s, 1, MAX_TIMEOUT_S, "a tool's timeout"),
	TGI_CONF_INT("max_parallel", tgi_config, max_parallel, 1, 256, "calls of a batch at once"),
};
static const tgi_conf_key formats_keys[] = {
	TGI_CONF_BOOL("assert", tgi_config, assert_formats, "JSON Schema formats are checked"),
};
static const tgi_conf_key approvals_keys[] = {
	TGI_CONF_INT("ttl_s", tgi_config, approval_ttl_s, 1, MAX_TTL_S, "how long an approval waits"),
	TGI_CONF_INT("wait_s", tgi_config, approval_wait_s, 0, MAX_TTL_S,
	             "how long a queued call waits before answering pending"),
	TGI_CONF_ENUM("via", tgi_config, approvals_via, via_names, "how toolgate serve asks"),
};
static const tgi_conf_key ledger_keys[] = {
	TGI_CONF_ENUM("sync", tgi_config, sync_full, sync_names, "SQLite's synchronous"),
	TGI_CONF_INT("lease_grace_s", tgi_config, lease_grace_s, 1, MAX_TTL_S,
	             "an in_flight claim's lease beyond its timeout"),
	TGI_CONF_CUSTOM("key_file", set_key_file, "the machine key's file, outside the workspace"),
	TGI_CONF_CUSTOM("key_env", set_key_env, "the variable holding the machine key"),
	TGI_CONF_ENUM("keep_output", tgi_config, keep_output_all, keep_names,
	              "whose output the ledger keeps whole"),
};
static const tgi_conf_key spill_keys[] = {
	TGI_CONF_DURATION("keep", tgi_config, spill_keep_s, 60, 10LL * MAX_TTL_S,
	                  "how long a spill file is kept"),
};

static int load_limits(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	return apply(x, root, "limits", limits_keys, TGI_ARRAY_LEN(limits_keys), c) < 0 ||
	       apply(x, root, "formats", formats_keys, TGI_ARRAY_LEN(formats_keys), c) < 0 ||
	       apply(x, root, "approvals", approvals_keys, TGI_ARRAY_LEN(approvals_keys), c) < 0 ||
	       apply(x, root, "ledger", ledger_keys, TGI_ARRAY_LEN(ledger_keys), c) < 0 ||
	       apply(x, root, "spill", spill_keys, TGI_ARRAY_LEN(spill_keys), c) < 0 ? -1 : 0;
}

/* permissions.tests: [{call: {tool, args?}, expect: allow|ask|deny}], kept
 * as parsed for `toolgate policy test`. */
static int set_permission_tests(const tgi_conf_ctx *cx, const json_t *v, const char *ptr,
                                void *obj)
{
	static const char *const expects[] = {
#define XX(d, name) name,
		TGI_DECISION_MAP(XX)
#undef XX
	};
	static const tgi_conf_key test_keys[] = {
		TGI_CONF_OWN("call", "{tool: NAME, args: {...}}"),
		TGI_CONF_OWN("expect", "allow, ask or deny"),
	};
	ld *x = cx->user;
	size_t i;
	json_t *t;
	if (json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return fail_type(x, ptr, v, "a list of {call, expect}");
	json_array_foreach(v, i, t) {
		char tp[PTR_MAX], tok[24], cp[PTR_MAX];
		int e = 0;
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(tp, sizeof tp, ptr, tok);
		if (!json_is_object(t))
			return fail_type(x, tp, t, "a mapping {call, expect}");
		if (tgi_conf_known_keys(cx, test_keys, TGI_ARRAY_LEN(test_keys), t, tp) < 0)
			return -1;
		json_t *call = child(t, tp, "call", cp);
		(void)e;
		if (!call || !json_is_object(call) || !json_is_string(json_object_get(call, "tool")) ||
		    (json_object_get(call, "args") && !json_is_object(json_object_get(call, "args"))))
			return fail_type(x, call ? cp : tp, call, "a call {tool: NAME, args: {...}}");
		if (!child(t, tp, "expect", cp))
			return fail(x, tp, "expected an `expect` of allow, ask or deny");
		if (tgi_conf_enum(cx, json_object_get(t, "expect"), cp, expects,
		                  TGI_ARRAY_LEN(expects), &e) < 0)
			return -1;
	}
	((tgi_config *)obj)->permission_tests = json_incref((json_t *)v);
	return 0;
}

static const tgi_conf_key rlimit_keys[] = {
	TGI_CONF_INT("cpu_s", tgi_shell_cfg, cpu_s, 0, 1LL << 40, "RLIMIT_CPU (0: unset)"),
	TGI_CONF_INT("address_space_mb", tgi_shell_cfg, address_space_mb, 0, 1LL << 40, "RLIMIT_AS"),
	TGI_CONF_INT("file_size_mb", tgi_shell_cfg, file_size_mb, 0, 1LL << 40, "RLIMIT_FSIZE"),
	TGI_CONF_INT("open_files", tgi_shell_cfg, open_files, 0, 1LL << 40, "RLIMIT_NOFILE"),
	TGI_CONF_INT("processes", tgi_shell_cfg, processes, 0, 1LL << 40, "RLIMIT_NPROC"),
};
/* shell: the shell tool's limits, environment and read-only list. */
static const tgi_conf_key shell_keys[] = {
	TGI_CONF_INT("max_timeout_s", tgi_shell_cfg, max_timeout_s, 1, MAX_TIMEOUT_S,
	             "a call's timeout_s is capped here"),
	TGI_CONF_INT("max_output_chars", tgi_shell_cfg, max_output_chars, 1, MAX_BYTES_LIMIT,
	             "per stream, head and tail kept"),
	TGI_CONF_STRINGS("env_allow", tgi_shell_cfg, env_allow, 0,
	                 "globs of variables a call may set"),
	TGI_CONF_STRINGS("read_only_commands", tgi_shell_cfg, read_only, 0,
	                 "more read-only commands (\"prog\" or \"prog sub\")"),
	TGI_CONF_BOOL("read_only_replace", tgi_shell_cfg, read_only_replace,
	              "read_only_commands replaces the built-in list"),
	TGI_CONF_STRING("path", tgi_shell_cfg, path, 0, "PATH the command gets"),
	{ .key = "rlimits", .type = TGI_CONF_SECTION, .sub = rlimit_keys,   /* the same struct */
	  .nsub = TGI_ARRAY_LEN(rlimit_keys), .doc = "resource limits of the command" },
};

static int set_default_mode(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	ld *x = cx->user;
	return tgi_conf_enum(cx, v, ptr, mode_names, TGI_ARRAY_LEN(mode_names), &x->default_mode);
}

/* permissions: a role's lists, and Claude Code's defaultMode (a block copied
 * from .claude/settings.json loads as it is) */
static const tgi_conf_key perm_keys[] = {
	TGI_CONF_STRINGS("allow", tgi_config, allow, 0, "rules that allow a call"),
	TGI_CONF_STRINGS("ask", tgi_config, ask, 0, "rules that ask a person"),
	TGI_CONF_STRINGS("deny", tgi_config, deny, 0, "rules that refuse a call"),
	TGI_CONF_CUSTOM("tests", set_permission_tests, "[{call, expect}] for toolgate policy test"),
	TGI_CONF_CUSTOM("defaultMode", set_default_mode, "Claude Code's word for mode"),
};

static int load_permissions(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX];
	json_t *v;

	x->default_mode = -1;
	if (apply(x, root, "permissions", perm_keys, TGI_ARRAY_LEN(perm_keys), c) < 0)
		return -1;
	int dm = x->default_mode;
	/* defaultMode is the mode; beside a `mode:` that says another, neither wins */
	if (dm >= 0 && child(root, "", "mode", ptr) && (int)c->mode != dm)
		return fail(x, "/permissions/defaultMode", "\"%s\" contradicts mode: %s; keep one of them",
		            mode_names[dm], mode_names[c->mode]);
	if (dm >= 0)
		c->mode = (tgi_mode)dm;

	v = child(root, "", "execpolicy", ptr);
	if (!v)
		return 0;
	if (strv_from(x, v, ptr, check_str, &c->execpolicy) < 0)
		return -1;
	for (size_t i = 0; i < c->execpolicy.n; i++) {
		char *abs = path_join(c->dir, c->execpolicy.v[i]);
		if (!abs)
			return fail(x, ptr, "expected a shorter path, got one over %d bytes", PATH_MAX);
		free(c->execpolicy.v[i]);
		c->execpolicy.v[i] = abs;
	}
	return 0;
}

static const tgi_conf_key rule_keys[] = {
	TGI_CONF_STRINGS("allow", tgi_role_cfg, allow, 0, "rules that allow a call"),
	TGI_CONF_STRINGS("ask", tgi_role_cfg, ask, 0, "rules that ask a person"),
	TGI_CONF_STRINGS("deny", tgi_role_cfg, deny, 0, "rules that refuse a call"),
	TGI_CONF_OWN("tests", "accepted beside a role's rules; permissions.tests are the ones run"),
};

static int load_roles(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX];
	const char *name;
	json_t *roles, *v;

	roles = child(root, "", "roles", ptr);
	if (!roles || json_is_null(roles))
		return 0;
	if (!json_is_object(roles))
		return fail_type(x, ptr, roles, "a mapping");
	c->roles = tgi_xcalloc(json_object_size(roles), sizeof *c->roles);
	json_object_foreach(roles, name, v) {
		char rp[PTR_MAX];
		tgi_role_cfg *r = &c->roles[c->nroles++];
		r->name = tgi_strdup(name);
		r->allow = strv_empty();
		r->ask = strv_empty();
		r->deny = strv_empty();
		tgi_json_pointer_join(rp, sizeof rp, ptr, name);
		if (!*name)
			return fail(x, rp, "expected a role name, got \"\"");
		if (json_is_null(v))
			continue;
		if (!json_is_object(v))
			return fail_type(x, rp, v, "a mapping with allow, ask and deny lists");
		if (tgi_conf_section_apply(&x->cx, rule_keys, TGI_ARRAY_LEN(rule_keys), v, rp, r) < 0)
			return -1;
	}
	return 0;
}

static const tgi_role_cfg *find_role(const tgi_config *c, const char *name)
{
	for (size_t i = 0; i < c->nroles; i++)
		if (!strcmp(c->roles[i].name, name))
			return &c->roles[i];
	return NULL;
}

static int set_token_env(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	tgi_principal_cfg *p = obj;
	if (check_env_name(cx->user, v, ptr) < 0)
		return -1;
	free(p->token_env);
	p->token_env = tgi_strdup(json_string_value(v));
	return 0;
}

static const tgi_conf_key principal_keys[] = {
	TGI_CONF_STRINGS("roles", tgi_principal_cfg, roles, 0, "roles defined under roles"),
	TGI_CONF_CUSTOM("token_env", set_token_env, "the variable holding its token (none: no "
	                "token needed)"),
};

static int load_principal(ld *x, tgi_principal_cfg *p, json_t *v, const char *pp)
{
	char got[96];

	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return fail_type(x, pp, v, "a mapping with roles and token_env");
	if (tgi_conf_section_apply(&x->cx, principal_keys, TGI_ARRAY_LEN(principal_keys), v, pp,
	                           p) < 0)
		return -1;
	for (size_t i = 0; i < p->roles.n; i++) {
		if (find_role(x->c, p->roles.v[i]))
			continue;
		char rp[PTR_MAX], ip[PTR_MAX], tok[24];
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(rp, sizeof rp, pp, "roles");
		tgi_json_pointer_join(ip, sizeof ip, rp, tok);
		return fail(x, ip, "expected a role defined under roles, got %s",
		            tgi_json_describe(json_array_get(json_object_get(v, "roles"), i), got, sizeof got));
	}
	return 0;
}

static int load_principals(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX], dp[PTR_MAX];
	const char *name;
	json_t *ps, *v;

	if (!child(root, "", "principals", ptr)) {
		c->principals = tgi_xcalloc(1, sizeof *c->principals);
		c->nprincipals = 1;
		c->principals[0].name = tgi_strdup("local");
		c->principals[0].roles = strv_empty();
	} else {
		ps = child(root, "", "principals", ptr);
		if (json_is_null(ps))
			ps = NULL;
		else if (!json_is_object(ps))
			return fail_type(x, ptr, ps, "a mapping");
		c->principals = tgi_xcalloc(ps ? json_object_size(ps) : 0, sizeof *c->principals);
		json_object_foreach(ps, name, v) {
			char pp[PTR_MAX];
			tgi_principal_cfg *p = &c->principals[c->nprincipals++];
			p->name = tgi_strdup(name);
			p->roles = strv_empty();
			tgi_json_pointer_join(pp, sizeof pp, ptr, name);
			if (!*name)
				return fail(x, pp, "expected a principal name, got \"\"");
			if (load_principal(x, p, v, pp) < 0)
				return -1;
		}
	}

	for (size_t i = 0; i < c->nprincipals; i++)
		if (!strcmp(c->principals[i].name, c->default_principal))
			return 0;
	tgi_buf names;
	char d[72];
	tgi_buf_init(&names, 200);
	for (size_t i = 0; i < c->nprincipals; i++)
		tgi_buf_printf(&names, "%s%s", i ? ", " : "", c->principals[i].name);
	tgi_sanitize(d, sizeof d, c->default_principal);
	v = child(root, "", "default_principal", dp);
	fail_at(x, v ? dp : ptr, "/default_principal", "expected one of the principals (%s), got \"%s\"",
	        names.p ? names.p : "none", d);
	tgi_buf_free(&names);
	return -1;
}

static int set_categories(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	if (!json_is_array(v))
		return tgi_conf_fail_type(cx, ptr, v, "a list of categories");
	return strv_from(cx->user, (json_t *)v, ptr, check_str, &((tgi_profile_cfg *)obj)->categories);
}

static const tgi_conf_key profile_keys[] = {
	{ .key = "categories", .type = TGI_CONF_CUSTOM, .flags = TGI_CONF_REQUIRED,
	  .set = set_categories, .doc = "tool categories (\"*\": all)" },
	TGI_CONF_BOOL("read_only", tgi_profile_cfg, read_only_only, "only read-only tools"),
};

static int load_profile(ld *x, tgi_profile_cfg *p, json_t *v, const char *pp)
{
	p->read_only_only = 0;
	if (json_is_array(v))
		return strv_from(x, v, pp, check_str, &p->categories);
	if (!json_is_object(v))
		return fail_type(x, pp, v, "a list of categories, or a mapping with categories and read_only");
	return tgi_conf_section_apply(&x->cx, profile_keys, TGI_ARRAY_LEN(profile_keys), v, pp, p);
}

static int load_profiles(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX], pp[PTR_MAX];
	const char *name;
	json_t *ps, *v;

	ps = child(root, "", "profiles", ptr);
	if (json_is_null(ps))
		ps = NULL;
	else if (ps && !json_is_object(ps))
		return fail_type(x, ptr, ps, "a mapping");
	c->profiles = tgi_xcalloc(TGI_ARRAY_LEN(builtin_profiles) + (ps ? json_object_size(ps) : 0),
	                          sizeof *c->profiles);
	for (size_t i = 0; i < TGI_ARRAY_LEN(builtin_profiles); i++) {
		tgi_profile_cfg *p = &c->profiles[c->nprofiles++];
		p->name = tgi_strdup(builtin_profiles[i].name);
		p->categories = strv_empty();
		p->read_only_only = builtin_profiles[i].read_only_only;
		for (const char *const *cat = builtin_profiles[i].categories; *cat; cat++) {
			p->categories.v = tgi_xrealloc(p->categories.v, (p->categories.n + 2) * sizeof(char *));
			p->categories.v[p->categories.n++] = tgi_strdup(*cat);
			p->categories.v[p->categories.n] = NULL;
		}
	}
	json_object_foreach(ps, name, v) {
		tgi_profile_cfg *p = NULL;
		for (size_t i = 0; i < c->nprofiles && !p; i++)
			if (!strcmp(c->profiles[i].name, name))
				p = &c->profiles[i];   /* a config entry replaces the built-in */
		if (!p) {
			p = &c->profiles[c->nprofiles++];
			p->name = tgi_strdup(name);
			p->categories = strv_empty();
		}
		tgi_json_pointer_join(pp, sizeof pp, ptr, name);
		if (!*name)
			return fail(x, pp, "expected a profile name, got \"\"");
		if (load_profile(x, p, v, pp) < 0)
			return -1;
	}

	for (size_t i = 0; i < c->nprofiles; i++)
		if (!strcmp(c->profiles[i].name, c->profile))
			return 0;
	tgi_buf names;
	char got[72];
	tgi_buf_init(&names, 200);
	for (size_t i = 0; i < c->nprofiles; i++)
		tgi_buf_printf(&names, "%s%s", i ? ", " : "", c->profiles[i].name);
	tgi_sanitize(got, sizeof got, c->profile);
	v = child(root, "", "profile", pp);
	fail_at(x, v ? pp : "", "/profile", "expected one of the profiles (%s), got \"%s\"",
	        names.p, got);
	tgi_buf_free(&names);
	return -1;
}

static int tool_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > TOOL_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || *s == '-' || (*s >= '0' && *s <= '9') ||
		      ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z')))
			return 0;
	return 1;
}

/* A program and its arguments: a non-empty list of strings whose first is
 * not empty; argv[0] resolved (see resolve_argv0).  An empty list is
 * accepted only when may_be_empty. */
static int load_argv(ld *x, json_t *v, const char *ptr, int may_be_empty, tgi_strv *out)
{
	if (!json_is_array(v) || (!may_be_empty && !json_array_size(v)))
		return fail_type(x, ptr, v, "a non-empty list of strings (the program and its arguments)");
	if (strv_from(x, v, ptr, check_any_str, out) < 0)
		return -1;
	if (out->n && !out->v[0][0]) {
		char p0[PTR_MAX];
		tgi_json_pointer_join(p0, sizeof p0, ptr, "0");
		return fail(x, p0, "expected a program name, got \"\"");
	}
	return resolve_argv0(x, out, ptr);
}

/* aliases: {old_field: new_field}, both top-level property names; a new
 * name is not itself an old one, no old name is a property of the schema
 * (it would never be rewritten), and where the schema lists its
 * properties the new name is one of them (else the rewritten value would
 * go unchecked, or be refused under a name the model never sent). */
static int load_aliases(ld *x, json_t *f, const char *ptr, tgi_tool_cfg *t)
{
	char ep[PTR_MAX];
	const char *old;
	json_t *nw;
	if (!json_is_object(f))
		return fail_type(x, ptr, f, "a mapping of old field names to new ones");
	json_t *props = json_object_get(t->input_schema, "properties");
	json_object_foreach(f, old, nw) {
		tgi_json_pointer_join(ep, sizeof ep, ptr, old);
		if (!old[0])
			return fail(x, ptr, "an old field's name is empty");
		if (!json_is_string(nw) || !json_string_length(nw) ||
		    strlen(json_string_value(nw)) != json_string_length(nw))
			return fail_type(x, ep, nw, "the new field's name (a string)");
		if (!strcmp(old, json_string_value(nw)) || json_object_get(f, json_string_value(nw)))
			return fail(x, ep, "the new name \"%s\" is itself an old name",
			            json_string_value(nw));
		if (json_object_get(props, old))
			return fail(x, ep, "\"%s\" is still a property of input_schema; an alias names a "
			            "field that was renamed", old);
		if (json_is_object(props) && !json_object_get(props, json_string_value(nw)))
			return fail(x, ep, "the new name \"%s\" is not a property of input_schema",
			            json_string_value(nw));
	}
	t->aliases = json_incref(f);
	return 0;
}

static int set_schema(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, json_t **out)
{
	if (!json_is_object(v))
		return tgi_conf_fail_type(cx, ptr, v, "a JSON Schema (a mapping)");
	json_decref(*out);
	*out = json_incref((json_t *)v);
	return 0;
}

static int set_input_schema(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return set_schema(cx, v, ptr, &((tgi_tool_cfg *)obj)->input_schema);
}

static int set_output_schema(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return set_schema(cx, v, ptr, &((tgi_tool_cfg *)obj)->output_schema);
}

static int set_command(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return load_argv(cx->user, (json_t *)v, ptr, 0, &((tgi_tool_cfg *)obj)->command);
}

static int set_check(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return load_argv(cx->user, (json_t *)v, ptr, 1, &((tgi_tool_cfg *)obj)->check);
}

static int set_tool_aliases(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	return load_aliases(cx->user, (json_t *)v, ptr, obj);
}

static int set_tool_sandbox(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	ld *x = cx->user;
	return tgi_sb_profile_parse(x->c, v, ptr, &((tgi_tool_cfg *)obj)->sandbox, x->err, x->errlen);
}

/* A contract flag: the key (the pointer's last token) names its bits. */
static int set_flag(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	const char *key = strrchr(ptr, '/') + 1;
	if (!json_is_boolean(v))
		return tgi_conf_fail_type(cx, ptr, v, "true or false");
	for (size_t i = 0; json_is_true(v) && i < TGI_ARRAY_LEN(tool_flag_keys); i++)
		if (!strcmp(key, tool_flag_keys[i].key))
			((tgi_tool_cfg *)obj)->flags |= tool_flag_keys[i].bit;
	return 0;
}

static int set_requires_env(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	tgi_tool_cfg *t = obj;
	if (!json_is_string(v))
		return strv_from(cx->user, (json_t *)v, ptr, check_env_name, &t->requires_env);
	if (check_env_name(cx->user, v, ptr) < 0)
		return -1;
	tgi_strv_push(&t->requires_env, tgi_strdup(json_string_value(v)));
	return 0;
}

#define TOOL_FLAG(k, d) TGI_CONF_CUSTOM(k, set_flag, d)
static const tgi_conf_key tool_keys[] = {
	{ .key = "description", .type = TGI_CONF_STRING, .flags = TGI_CONF_REQUIRED,
	  .offset = offsetof(tgi_tool_cfg, description), .doc = "what the model reads" },
	TGI_CONF_CUSTOM("input_schema", set_input_schema, "its arguments' JSON Schema"),
	TGI_CONF_CUSTOM("output_schema", set_output_schema, "its result's JSON Schema"),
	{ .key = "command", .type = TGI_CONF_CUSTOM, .flags = TGI_CONF_REQUIRED,
	  .set = set_command, .doc = "the program and its arguments" },
	TGI_CONF_STRING("category", tgi_tool_cfg, category, 0, "its category (default runtime)"),
	TOOL_FLAG("read_only", "it changes nothing"),
	TOOL_FLAG("concurrency_safe", "it may run beside other calls"),
	TOOL_FLAG("destructive", "it may destroy; confirmed"),
	TOOL_FLAG("idempotent", "running it twice is running it once"),
	TOOL_FLAG("requires_grant", "a grant must allow it"),
	TOOL_FLAG("requires_idempotency_key", "a call must carry a key"),
	TOOL_FLAG("edits_files", "it writes files in the workspace"),
	TGI_CONF_INT("max_result_chars", tgi_tool_cfg, max_result_chars, 1, MAX_BYTES_LIMIT,
	             "its result's cap"),
	TGI_CONF_INT("timeout_s", tgi_tool_cfg, timeout_s, 1, MAX_TIMEOUT_S, "its timeout"),
	TGI_CONF_CUSTOM("requires_env", set_requires_env, "variables that must be set"),
	TGI_CONF_CUSTOM("check", set_check, "a command that says whether it is available"),
	TGI_CONF_CUSTOM("aliases", set_tool_aliases, "{old_field: new_field}"),
	TGI_CONF_CUSTOM("sandbox", set_tool_sandbox, "its sandbox profile over the shell tool's"),
};
#undef TOOL_FLAG

static int load_tool(ld *x, tgi_tool_cfg *t, const char *name, json_t *v, const char *tp)
{
	char names[200], n[72], file[sizeof t->where];
	int line, col;

	t->name = tgi_strdup(name);
	/* like the shell tool's (`sandbox:`) unless the entry says otherwise */
	tgi_sb_profile_copy(&t->sandbox, &x->c->sandbox_profile);
	t->command = strv_empty();
	t->requires_env = strv_empty();
	t->check = strv_empty();
	tgi_sanitize(file, sizeof file, display_name(x->c));
	if (tgi_conf_locate(&x->doc, tp, 1, &line, &col))   /* where the tool is named */
		tgi_snprintf(t->where, sizeof t->where, "%s:%d", file, line);
	else
		tgi_snprintf(t->where, sizeof t->where, "%s", file);

	tgi_sanitize(n, sizeof n, name);
	if (!tool_name_ok(name))
		return fail_at(x, tp, "/tools", "expected a tool name of 1 to %d letters, digits, "
		               "'_' or '-', got \"%s\"", TOOL_NAME_MAX, n);
	if (name_index(name, builtin_tools, TGI_ARRAY_LEN(builtin_tools)) >= 0)
		return fail_at(x, tp, "/tools", "expected a name other than the built-in tools (%s), "
		               "got \"%s\"", tgi_conf_join(builtin_tools, TGI_ARRAY_LEN(builtin_tools),
		                                        names, sizeof names), n);
	if (!json_is_object(v))
		return fail_type(x, tp, v, "a mapping with description and command");
	t->input_schema = json_pack("{s:s}", "type", "object");
	t->category = tgi_strdup("runtime");
	return tgi_conf_section_apply(&x->cx, tool_keys, TGI_ARRAY_LEN(tool_keys), v, tp, t);
}

static int load_tools(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	char ptr[PTR_MAX];
	const char *name;
	json_t *tools, *v;

	tools = child(root, "", "tools", ptr);
	if (json_is_null(tools))
		tools = NULL;
	else if (tools && !json_is_object(tools))
		return fail_type(x, ptr, tools, "a mapping");
	c->tools = tgi_xcalloc(tools ? json_object_size(tools) : 0, sizeof *c->tools);
	json_object_foreach(tools, name, v) {
		char tp[PTR_MAX];
		tgi_json_pointer_join(tp, sizeof tp, ptr, name);
		if (load_tool(x, &c->tools[c->ntools++], name, v, tp) < 0)
			return -1;
	}
	return 0;
}

/* "HOST:PORT" or "[V6]:PORT", PORT 0 to 65535. */
static int listen_ok(const char *s)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s)
		return 0;
	size_t hl = (size_t)(colon - s), pl = strlen(colon + 1);
	if (s[0] == '[' ? s[hl - 1] != ']' || hl < 3 : memchr(s, ':', hl) != NULL)
		return 0;
	if (pl == 0 || pl > 5 || strspn(colon + 1, "0123456789") != pl || atoi(colon + 1) > 65535)
		return 0;
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == '@' || s[i] == 0x7f)
			return 0;
	return 1;
}

static int set_console_token_env(const tgi_conf_ctx *cx, const json_t *v, const char *ptr,
                                 void *obj)
{
	tgi_config *c = obj;
	if (check_env_name(cx->user, v, ptr) < 0)
		return -1;
	free(c->console_token_env);
	c->console_token_env = tgi_strdup(json_string_value(v));
	return 0;
}

static int set_console_listen(const tgi_conf_ctx *cx, const json_t *v, const char *ptr,
                              void *obj)
{
	tgi_config *c = obj;
	if (check_str(cx->user, v, ptr) < 0)
		return -1;
	if (!listen_ok(json_string_value(v)))
		return tgi_conf_fail_type(cx, ptr, v, "HOST:PORT (127.0.0.1:8760, [::1]:8760)");
	free(c->console_listen);
	c->console_listen = tgi_strdup(json_string_value(v));
	return 0;
}

/* console: {listen: "HOST:PORT", token_env: NAME} (toolgate console). */
static const tgi_conf_key console_keys[] = {
	TGI_CONF_CUSTOM("listen", set_console_listen, "HOST:PORT of toolgate console"),
	TGI_CONF_CUSTOM("token_env", set_console_token_env, "the variable holding its access "
	                "token (none: a random one each start)"),
};

/* An argument name a client may add: a string of 1 to 128 bytes, no NUL. */
static int check_arg_name(ld *x, const json_t *v, const char *ptr)
{
	if (check_str(x, v, ptr) < 0)
		return -1;
	if (json_string_length(v) > 128 || strlen(json_string_value(v)) != json_string_length(v))
		return fail_type(x, ptr, v, "an argument name (1 to 128 bytes, no NUL)");
	return 0;
}

static int set_strip_args(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	if (json_is_array(v) && json_array_size(v) > 64)
		return tgi_conf_fail(cx, ptr, "expected at most 64 names, got %zu", json_array_size(v));
	return strv_from(cx->user, (json_t *)v, ptr, check_arg_name,
	                 &((tgi_config *)obj)->mcp_strip_args);
}

/* mcp: {strip_client_args: [NAME...], max_calls_per_principal: N} (toolgate
 * serve; N up to the server's 256 call threads). */
static const tgi_conf_key mcp_keys[] = {
	TGI_CONF_CUSTOM("strip_client_args", set_strip_args, "more argument names MCP clients "
	                "add on their own"),
	TGI_CONF_INT("max_calls_per_principal", tgi_config, mcp_max_calls_per_principal, 1, 256,
	             "call threads one principal's sessions hold at once"),
};

/* Sections other parts of toolgate own: kept as JSON, checked for shape only. */
static int load_opaque(ld *x, json_t *root)
{
	tgi_config *c = x->c;
	enum { ANY = -1 };
	const struct {
		const char *key;
		json_t    **slot;
		int         member; /* the json_type each entry must have, or ANY */
	} sections[] = {
		{ "mcp_servers",    &c->mcp_servers,    JSON_OBJECT },
		{ "hooks",          &c->hooks,          JSON_ARRAY },
		{ "loop_detection", &c->loop_detection, ANY },
		{ "rate_limits",    &c->rate_limits,    ANY },
		{ "redact",         &c->redact,         ANY },
		{ "events",         &c->events,         ANY },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(sections); i++) {
		char ptr[PTR_MAX], ep[PTR_MAX];
		const char *key;
		json_t *s = child(root, "", sections[i].key, ptr), *v;
		if (json_is_null(s))
			s = NULL;
		else if (s && !json_is_object(s))
			return fail_type(x, ptr, s, "a mapping");
		json_object_foreach(s, key, v) {
			if (sections[i].member == ANY || (int)json_typeof(v) == sections[i].member)
				continue;
			tgi_json_pointer_join(ep, sizeof ep, ptr, key);
			return fail_type(x, ep, v, sections[i].member == JSON_OBJECT ? "a mapping" : "a list");
		}
		*sections[i].slot = json_incref(s);
	}
	return 0;
}

/* ---- the document ---- */

static void set_defaults(tgi_config *c)
{
	c->profile = tgi_strdup("coding");
	c->default_principal = tgi_strdup("local");
	c->mode = TGI_MODE_DEFAULT;
	c->approval = TGI_APPROVAL_ASK;
	c->sandbox = TGI_SANDBOX_WORKSPACE_WRITE;
	tgi_sb_profile_init(&c->sandbox_profile, TGI_SANDBOX_WORKSPACE_WRITE);
	c->allow = strv_empty();
	c->ask = strv_empty();
	c->deny = strv_empty();
	c->execpolicy = strv_empty();
	c->max_args_bytes = 1048576;
	c->max_result_chars = 50000;
	c->timeout_s = 120;
	c->max_parallel = 8;
	c->assert_formats = 1;
	c->hide_denied = 1;
	c->approval_ttl_s = 3600;
	c->lease_grace_s = 60;
	c->spill_keep_s = 7 * 86400;
	c->sync_full = 0;
	c->shell.max_timeout_s = 600;
	c->shell.max_output_chars = 50000;
	c->shell.env_allow = strv_empty();
	c->shell.read_only = strv_empty();
	c->mcp_strip_args = strv_empty();
	c->shell.path = tgi_strdup("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	c->shell.file_size_mb = 1024;
	c->shell.open_files = 1024;
	c->shell.processes = 512;
}

static int from_json(json_t *root, tgi_srcmap *map, const char *name, const char *dir,
                     int found, tgi_config **out, char *err, size_t errlen)
{
	tgi_config *c = tgi_xcalloc(1, sizeof *c);
	ld x = { .c = c, .err = err, .errlen = errlen, .found = found };

	*out = NULL;
	c->root = root;
	c->srcmap = map;
	c->file = tgi_strdup(name);
	set_defaults(c);
	if (json_is_null(root)) {             /* an empty file: all defaults */
		json_decref(root);
		c->root = root = json_object();
	}
	x.doc = tgi_config_doc(c);
	x.cx = (tgi_conf_ctx){ &x.doc, err, errlen, &x };
	c->dir = dir ? tgi_strdup(dir) : current_dir();
	if (!c->dir) {
		char e[128];
		tgi_snprintf(err, errlen, "cannot determine the current directory: %s",
		             errstr(errno, e, sizeof e));
		tgi_config_free(c);
		return -1;
	}
	if (!json_is_object(root)) {
		fail_type(&x, "", root, "a mapping at the top level");
		tgi_config_free(c);
		return -1;
	}
	/* Order: keys first (a typo is the likeliest mistake), then what later
	 * checks refer to (roles before principals, profiles after profile). */
	if (tgi_conf_section_apply(&x.cx, top_keys, TGI_ARRAY_LEN(top_keys), root, "", c) < 0 ||
	    load_workspace(&x, root) < 0 ||
	    load_sandbox(&x, root) < 0 ||
	    load_limits(&x, root) < 0 ||
	    load_permissions(&x, root) < 0 ||
	    load_roles(&x, root) < 0 ||
	    load_principals(&x, root) < 0 ||
	    load_profiles(&x, root) < 0 ||
	    load_tools(&x, root) < 0 ||
	    apply(&x, root, "shell", shell_keys, TGI_ARRAY_LEN(shell_keys), &c->shell) < 0 ||
	    load_opaque(&x, root) < 0 ||
	    apply(&x, root, "console", console_keys, TGI_ARRAY_LEN(console_keys), c) < 0 ||
	    apply(&x, root, "mcp", mcp_keys, TGI_ARRAY_LEN(mcp_keys), c) < 0) {
		tgi_config_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

int tgi_config_from_json(json_t *root, tgi_srcmap *map, const char *name,
                         const char *dir, tgi_config **out, char *err, size_t errlen)
{
	return from_json(root, map, name, dir, 0, out, err, errlen);
}

/* ---- files ---- */

/* May the search trust a file or directory uid owns?  Yours or root's:
 * what another user owns, they can change. */
static int trusted_owner(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* Read the whole file (at most CFG_MAX_BYTES).  -errno, -EFBIG when too
 * large, -EISDIR/-EINVAL when not a regular file, -EPERM when owner_check
 * and the file opened is not trusted_owner's. */
static int read_text(const char *path, int owner_check, char **text, size_t *len)
{
	struct stat st;
	char chunk[65536];
	tgi_buf b;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int rc = fstat(fd, &st) < 0 ? -errno
	       : S_ISDIR(st.st_mode) ? -EISDIR
	       : !S_ISREG(st.st_mode) ? -EINVAL
	       : st.st_size > (off_t)CFG_MAX_BYTES ? -EFBIG
	       : owner_check && !trusted_owner(st.st_uid) ? -EPERM : 0;
	tgi_buf_init(&b, CFG_MAX_BYTES);
	while (rc == 0) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno != EINTR)
			rc = -errno;
		else if (r == 0)
			break;
		else if (r > 0 && tgi_buf_append(&b, chunk, (size_t)r) < 0)
			rc = -EFBIG;   /* it grew past the cap since fstat */
	}
	close(fd);
	if (rc < 0) {
		tgi_buf_free(&b);
		return rc;
	}
	*len = b.len;
	*text = tgi_buf_steal(&b);
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)s[i];
		int d = c >= '0' && c <= '9' ? c - '0'
		      : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

/*
 * JSON text (already valid) made fit for the YAML parser, which only maps
 * positions: YAML refuses the UTF-16 surrogate pairs JSON spells non-BMP
 * characters with ("\ud83d\ude00"), so each becomes the same-length
 * "\U0001F600  " — every later node keeps its line and column.  Caller frees.
 */
static char *json_for_yaml(const char *text, size_t len)
{
	char *t = tgi_xmalloc(len + 1);
	size_t slashes = 0; /* backslashes just before t[i] */

	memcpy(t, text, len);
	t[len] = '\0';
	for (size_t i = 0; i < len; i++) {
		unsigned hi, lo;
		/* a "u" after an odd run of backslashes starts an escape: uXXXX, backslash, uXXXX */
		if (t[i] == 'u' && slashes % 2 && i + 10 < len && t[i + 5] == '\\' && t[i + 6] == 'u' &&
		    hex4(t + i + 1, &hi) == 0 && hex4(t + i + 7, &lo) == 0 &&
		    hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) {
			char rep[16];
			snprintf(rep, sizeof rep, "U%08X  ", 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
			memcpy(t + i, rep, 11);
			i += 10;
		}
		slashes = t[i] == '\\' ? slashes + 1 : 0;
	}
	return t;
}

/* Parse text from file into a document and its map; -1 with err set. */
static int parse_text(const char *file, const char *text, size_t len,
                      json_t **root, tgi_srcmap **map, char *err, size_t errlen)
{
	char name[256], yerr[400];
	tgi_sanitize(name, sizeof name, file);

	if (ends_with(file, ".json")) {
		json_error_t je;
		*root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		if (!*root) {
			tgi_snprintf(err, errlen, "%s:%d:%d: %s", name, je.line > 0 ? je.line : 1,
			             je.column > 0 ? je.column : 1, je.text);
			return -1;
		}
		/* YAML is a superset of JSON: its parser supplies line:col only */
		char *t = json_for_yaml(text, len);
		json_decref(tgi_yaml_parse(t, len, map, yerr, sizeof yerr));
		free(t);
		return 0;
	}
	*root = tgi_yaml_parse(text, len, map, yerr, sizeof yerr);
	if (!*root) {
		tgi_snprintf(err, errlen, "%s:%s", name, yerr);
		return -1;
	}
	return 0;
}

/* Load file: named by the caller (how 0), by $TOOLGATE_CONFIG (1), or
 * found by the search (2: its owner is checked again once it is open). */
enum { NAMED, FROM_ENV, FOUND };

static int load_file(const char *file, int how, tgi_config **out, char *err, size_t errlen)
{
	char name[256], e[128];
	char *text = NULL, *abs = NULL, *dir;
	size_t len = 0;
	json_t *root;
	tgi_srcmap *map = NULL;
	int from_env = how == FROM_ENV;

	tgi_sanitize(name, sizeof name, file);
	int rc = read_text(file, how == FOUND, &text, &len);
	if (rc == -EPERM)
		tgi_snprintf(err, errlen, "config file \"%s\" is not owned by you or root; it is not "
		             "loaded (name it with --config if you trust it)", name);
	else if (rc == -ENOENT && from_env)
		tgi_snprintf(err, errlen, "$TOOLGATE_CONFIG names \"%s\", which does not exist", name);
	else if (rc == -ENOENT)
		tgi_snprintf(err, errlen, "config file \"%s\" does not exist", name);
	else if (rc == -EFBIG)
		tgi_snprintf(err, errlen, "config file \"%s\" is larger than %u MiB", name, CFG_MAX_BYTES >> 20);
	else if (rc == -EISDIR || rc == -EINVAL)
		tgi_snprintf(err, errlen, "config file \"%s\" is not a regular file", name);
	else if (rc < 0)
		tgi_snprintf(err, errlen, "cannot read config file \"%s\": %s", name,
		             errstr(-rc, e, sizeof e));
	if (rc < 0)
		return -1;

	if (!(abs = realpath(file, NULL))) {
		tgi_snprintf(err, errlen, "cannot resolve config file \"%s\": %s", name,
		             errstr(errno, e, sizeof e));
		free(text);
		return -1;
	}
	rc = parse_text(file, text, len, &root, &map, err, errlen);
	free(text);
	if (rc < 0) {
		free(abs);
		return -1;
	}
	dir = tgi_strdup(abs);
	*strrchr(dir, '/') = '\0';
	rc = from_json(root, map, file, dir[0] ? dir : "/", how == FOUND, out, err, errlen);
	free(dir);
	if (rc < 0) {
		free(abs);
		return -1;
	}
	(*out)->path = abs;
	return 0;
}

/* The configuration files the search looks for, in one directory. */
static const char *const candidates[] = { "toolgate.yaml", "toolgate.yml", "toolgate.json" };

/*
 * The configuration file in the directory prefix names ("" the current
 * one, else ending in '/'), into found (prefix + name): 1 when there is
 * one, 0 when none, -1 with err when two are there.  Two of them is
 * refused rather than one picked: a file that appears beside the real one
 * (a command's, say) must not replace it; the sandbox also removes one a
 * command made (exec/sbaudit.h).  An empty file (all defaults) counts only
 * when no other is there.  *owner gets the owner of the name (lstat).
 */
static int config_in(const char *prefix, char *found, size_t cap, uid_t *owner, char *err,
                     size_t errlen)
{
	const char *full = NULL, *empty = NULL;
	uid_t full_uid = 0, empty_uid = 0;
	struct stat st;
	char p[PATH_MAX];
	for (size_t i = 0; i < TGI_ARRAY_LEN(candidates); i++) {
		tgi_snprintf(p, sizeof p, "%s%s", prefix, candidates[i]);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode) && st.st_size == 0) {
			if (!empty) {
				empty = candidates[i];
				empty_uid = st.st_uid;
			}
			continue;
		}
		if (full) {
			char where[PATH_MAX];
			tgi_sanitize(where, sizeof where, prefix);
			tgi_snprintf(err, errlen, "both %s%s and %s%s are here; keep one configuration "
			             "file (or name one with --config)", where, full, where, candidates[i]);
			return -1;
		}
		full = candidates[i];
		full_uid = st.st_uid;
	}
	if (!full && !empty)
		return 0;
	tgi_snprintf(found, cap, "%s%s", prefix, full ? full : empty);
	*owner = full ? full_uid : empty_uid;
	return 1;
}

/*
 * The search for a configuration when none is named: the directory `from`
 * (NULL: the current one), then each one above it, up to the filesystem
 * root, as git looks for its repository; the first that holds one is the
 * configuration, and its directory the default workspace.  Only what you
 * or root own is trusted: the search stops, with the built-in defaults, at
 * a directory someone else owns (above the start, without looking in it)
 * or one that holds a file someone else owns; in the start directory such
 * a file (or any configuration file, when the directory is someone else's)
 * is an error rather than passed over, so that the policy of the project
 * you are in is never silently not applied.
 */
static int search(const char *from, tgi_config **out, char *err, size_t errlen)
{
	char prefix[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], shown[PATH_MAX];
	size_t n = 0;
	struct stat st, up;
	uid_t owner = 0;

	prefix[0] = '\0';
	if (from && *from)
		n = (size_t)snprintf(prefix, sizeof prefix, "%s%s", from,
		                     from[strlen(from) - 1] == '/' ? "" : "/");
	if (n + 4 >= sizeof prefix) {
		tgi_snprintf(err, errlen, "the workspace path is too long to look for a configuration "
		             "from (at most %zu bytes)", sizeof prefix - 5);
		return -1;
	}
	for (int level = 0; n + 4 < sizeof prefix; level++) {
		tgi_snprintf(dir, sizeof dir, "%s", n ? prefix : ".");
		if (stat(dir, &st) < 0)
			break;                        /* a directory it cannot reach: no further */
		int trusted = trusted_owner(st.st_uid);
		if (!trusted && level > 0)
			break;                        /* neither looked in nor crossed */
		int r = config_in(prefix, file, sizeof file, &owner, err, errlen);
		if (r < 0)
			return -1;
		if (!trusted || (r > 0 && !trusted_owner(owner))) {
			if (r == 0 || level > 0)
				break;
			tgi_sanitize(shown, sizeof shown, file);
			tgi_snprintf(err, errlen, "%s %s owned by uid %u, not by you (uid %u) or root: "
			             "it is not loaded, as what another user can change must not set your "
			             "policy (name it with --config if you trust it)", shown,
			             trusted ? "is" : "is in a directory",
			             (unsigned)(trusted ? owner : st.st_uid), (unsigned)geteuid());
			return -1;
		}
		if (r > 0)
			return load_file(file, FOUND, out, err, errlen);
		/* the root is its own parent */
		tgi_snprintf(file, sizeof file, "%s..", prefix);
		if (stat(file, &up) < 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino))
			break;
		n += (size_t)snprintf(prefix + n, sizeof prefix - n, "../");
	}
	return from_json(json_object(), NULL, NULL, NULL, 0, out, err, errlen);
}

int tgi_config_load(const char *path, tgi_config **out, char *err, size_t errlen)
{
	return tgi_config_find(path, NULL, out, err, errlen);
}

int tgi_config_find(const char *path, const char *from, tgi_config **out, char *err,
                    size_t errlen)
{
	const char *env = getenv("TOOLGATE_CONFIG");

	*out = NULL;
	if (path) {
		if (!*path) {
			tgi_snprintf(err, errlen, "config file \"\" does not exist");
			return -1;
		}
		return load_file(path, NAMED, out, err, errlen);
	}
	if (env && *env)
		return load_file(env, FROM_ENV, out, err, errlen);
	return search(from, out, err, errlen);
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

int tgi_config_apply(tgi_config *cfg, const tg_options *o, char **errmsg)
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
