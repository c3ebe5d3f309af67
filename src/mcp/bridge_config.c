/*
 * bridge_config.c — the `mcp_servers:` section (bridge.h gives the format):
 * each server's entry checked key by key into its srv (bridge_int.h), with
 * a "file:line:col: mcp_servers.NAME.key: ..." sentence for what is wrong.
 *
 * Owns: nothing past a call (what it parses belongs to the srv).  Must
 * not: start a server, touch the registry or the ledger.
 */
#include "mcp/bridge_int.h"
#include "config.h"
#include "util/util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration ---- */

/*
 * A problem in server `name`'s entry at sub ("command", "tools/include/0",
 * "" for the entry itself): "toolgate.yaml:LINE:COL: mcp_servers.fs.command:
 * <message>".  Returns -1.
 */
__attribute__((format(printf, 6, 7)))
int tgi_bridge_bad(const tgi_config *cfg, const char *name, const char *sub, char *err, size_t errlen,
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
	return tgi_bridge_bad(cfg, name, sub, err, errlen, "expected %s, got %s", expected, tgi_json_describe(v, g, sizeof g));
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
			return tgi_bridge_bad(cfg, name, at, err, errlen, "expected a non-empty string, got \"\"");
		if (strlen(json_string_value(x)) != json_string_length(x))
			return tgi_bridge_bad(cfg, name, at, err, errlen, "expected a string without NUL characters");
		tgi_strv_push(out, tgi_strdup(json_string_value(x)));
	}
	return 0;
}

static int parse_string(const tgi_config *cfg, const char *name, const char *key, const json_t *v,
                        size_t max, const char **out, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return bad_type(cfg, name, key, v, "a string", err, errlen);
	if (!json_string_length(v))
		return tgi_bridge_bad(cfg, name, key, err, errlen, "expected a non-empty string, got \"\"");
	if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
		return tgi_bridge_bad(cfg, name, key, err, errlen,
		           "expected a string of at most %zu bytes without NUL characters", max);
	*out = json_string_value(v);
	return 0;
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
			return tgi_bridge_bad(cfg, name, "env", err, errlen,
			           "expected variable names of letters, digits and '_', got \"%s\"", shown);
		}
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return bad_type(cfg, name, at, v, "a string (quote numbers and booleans)", err,
			                errlen);
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
			return tgi_bridge_bad(cfg, name, sub, err, errlen, "an old field's name is empty");
		if (!to || !json_string_length(nw) || strlen(to) != json_string_length(nw))
			return bad_type(cfg, name, sub, nw, "the new field's name (a non-empty string)", err,
			                errlen);
		if (!strcmp(old, to) || json_object_get(v, to)) {
			tgi_sanitize_n(shown, sizeof shown, to, strlen(to), 64);
			return tgi_bridge_bad(cfg, name, sub, err, errlen, "the new name \"%s\" is itself an old name",
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
			return tgi_bridge_bad(cfg, name, "aliases", err, errlen,
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
			return tgi_bridge_bad(cfg, name, "command", err, errlen,
			           "expected a program name or a non-empty list, got an empty list");
		if (parse_strings(cfg, name, "command", cmd, 0, &argv, err, errlen) < 0)
			goto fail;
		if (!argv.v[0][0]) {
			tgi_bridge_bad(cfg, name, "command/0", err, errlen, "expected a program name, got \"\"");
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
		return tgi_bridge_bad(cfg, name, "sandbox", err, errlen,
		           "a server marked trusted: false runs read-only, with no network, no "
		           "writable paths and under bubblewrap only; it cannot be given %s (remove "
		           "trusted: false to give it more)", more);
	return 0;
}

static int set_prefix(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	srv *s = obj;
	if (!json_is_string(v) || json_string_length(v) > PREFIX_MAX ||
	    !name_ok(json_string_value(v), json_string_length(v), 0))
		return tgi_conf_fail_type(cx, ptr, v, "a prefix of at most 64 letters, digits, '_' or '-'");
	tgi_snprintf(s->prefix, sizeof s->prefix, "%s", json_string_value(v));
	return 0;
}

static int set_aliases(const tgi_conf_ctx *cx, const json_t *v, const char *ptr, void *obj)
{
	srv *s = obj;
	return parse_aliases(cx->user, s->name, v, s, cx->err, cx->errlen);
}

static const tgi_conf_key filter_keys[] = {
	TGI_CONF_STRINGS("include", srv, include, 0, "globs of the tools offered (default: all)"),
	TGI_CONF_STRINGS("exclude", srv, exclude, 0, "globs of the tools left out"),
};

/* An entry's keys: the ones the code below reads together (command or url
 * and what goes with each) are OWN; the rest are read by the table. */
static const tgi_conf_key server_keys[] = {
	TGI_CONF_OWN("command", "a stdio server: its program, or its argv"),
	TGI_CONF_OWN("args", "more arguments after command"),
	TGI_CONF_OWN("env", "its variables beyond PATH, LANG, LC_ALL, TERM, HOME, TMPDIR"),
	TGI_CONF_OWN("cwd", "its directory (default: the workspace)"),
	TGI_CONF_OWN("url", "a Streamable HTTP server: its http:// or https:// URL"),
	TGI_CONF_OWN("token_env", "the variable holding its bearer token"),
	TGI_CONF_BOOL("trusted", srv, trusted, "it may sample the client's model; false: the "
	              "strictest sandbox"),
	TGI_CONF_BOOL("pin", srv, pin, "a changed tool definition waits for an approval"),
	TGI_CONF_CUSTOM("prefix", set_prefix, "its tools' names begin so (default NAME__)"),
	TGI_CONF_OWN("sandbox", "the sandbox profile a stdio server runs in"),
	TGI_CONF_STRING("category", srv, category, 64, "for profiles (default mcp)"),
	{ .key = "tools", .type = TGI_CONF_SECTION, .sub = filter_keys,   /* the same srv */
	  .nsub = TGI_ARRAY_LEN(filter_keys), .doc = "which of its tools are offered" },
	TGI_CONF_INT("timeout_s", srv, timeout_s, 1, TIMEOUT_MAX_S, "a call's timeout"),
	TGI_CONF_INT("startup_timeout_s", srv, startup_timeout_s, 1, STARTUP_MAX_S,
	             "how long it may take to start and list its tools"),
	TGI_CONF_CUSTOM("aliases", set_aliases, "{tool: {old_field: new_field}}"),
};

int tgi_bridge_parse_server(const tgi_config *cfg, const char *name, const json_t *v, srv *s,
                            char *err, size_t errlen)
{
	const char *str;
	size_t nlen = strlen(name);

	if (!nlen || nlen > SERVER_NAME_MAX || !name_ok(name, nlen, 0) || strstr(name, "__")) {
		char shown[72];
		tgi_sanitize_n(shown, sizeof shown, name, nlen, 64);
		return tgi_bridge_bad(cfg, name, "", err, errlen,
		           "expected a server name of 1 to %d letters, digits, '_' or '-' without \"__\" "
		           "(it separates the server from the tool in \"fs__read_file\"), got \"%s\"",
		           SERVER_NAME_MAX, shown);
	}
	if (!json_is_object(v))
		return bad_type(cfg, name, "", v, "a mapping (command or url, ...)", err, errlen);
	tgi_snprintf(s->name, sizeof s->name, "%s", name);
	tgi_snprintf(s->prefix, sizeof s->prefix, "%s__", name);
	s->timeout_s = cfg->timeout_s > 0 ? cfg->timeout_s : 120;
	s->startup_timeout_s = 30;
	s->backoff_s = BACKOFF_MIN_S;
	s->category = tgi_strdup("mcp");
	char ptr[1024];
	tgi_json_pointer_join(ptr, sizeof ptr, "/mcp_servers", name);
	tgi_conf_doc d = tgi_config_doc(cfg);
	tgi_conf_ctx cx = { &d, err, errlen, (void *)cfg };
	if (tgi_conf_section_apply(&cx, server_keys, TGI_ARRAY_LEN(server_keys), v, ptr, s) < 0)
		return -1;

	json_t *cmd = json_object_get(v, "command"), *url = json_object_get(v, "url");
	json_t *args = json_object_get(v, "args"), *cwd = json_object_get(v, "cwd");
	json_t *token_env = json_object_get(v, "token_env"), *env = json_object_get(v, "env");
	if (cmd && url)
		return tgi_bridge_bad(cfg, name, "url", err, errlen,
		           "expected either command (a stdio server) or url (Streamable HTTP), not both");
	if (!cmd && !url)
		return tgi_bridge_bad(cfg, name, "", err, errlen,
		           "expected a command (a stdio server) or a url (Streamable HTTP)");
	json_t *sbx = json_object_get(v, "sandbox");
	if (url && (args || cwd || env || sbx))
		return tgi_bridge_bad(cfg, name, args ? "args" : cwd ? "cwd" : env ? "env" : "sandbox", err, errlen,
		           "expected %s only with command (a stdio server), not with url",
		           args ? "args" : cwd ? "cwd" : env ? "env" : "sandbox");
	if (cmd && token_env)
		return tgi_bridge_bad(cfg, name, "token_env", err, errlen,
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
	return 0;
}

