/*
 * shell.c — the shell tool: run a command line in the workspace, inside
 * the sandbox, with a clean environment and resource limits.
 *
 * Args: command (a string, run by /bin/sh -c; or an argv array, run
 * directly), workdir (inside the workspace; default its root), timeout_s
 * (default the tool's, capped by shell.max_timeout_s), env (extra
 * variables whose names match shell.env_allow; loader and shell-startup
 * variables never).  The program gets PATH (shell.path), HOME, LANG,
 * TERM=dumb, TMPDIR (a private directory, removed afterwards),
 * TOOLGATE_OP_ID, with a list of hosts the proxy's variables
 * (HTTP_PROXY, HTTPS_PROXY, ... netproxy.h), and those extras; nothing
 * else of the gate's environment.  stdin is /dev/null; its own process
 * group; rlimits and a pids cgroup (exec/limits.h); the sandbox of config
 * `sandbox` (exec/sandbox.h), with the gate's own files and the
 * workspace's .git/ read-only, .toolgate/ hidden, and hidden too what read
 * rules keep from reading (gate.h tgi_read_masks: a deny rule for
 * read_file holds inside the sandbox); network by host through
 * ctx->net_attach (the call's run at the gate's proxy: what it refuses
 * becomes the call's events and warnings, execute.c).
 *
 * Output: {"exit_code","signal","timed_out","stdout","stderr",
 * "duration_ms"}, always an object within the call's result cap: a stream
 * over shell.max_output_chars, or streams that together would not fit the
 * cap, keep their head and tail around a marker, and both streams go in
 * full to one spill file (.toolgate/spill/<op_id>.txt), named in "spilled",
 * in the markers and in the envelope's `truncated` (the shape stage leaves
 * such an output as it is).  A non-zero exit or a timeout is a result the
 * model reads, not a gate failure.
 *
 * The policy gates (floor, execpolicy, shell(...) rules, modes) judge the
 * simple commands commands() reports before this runs (decide.c).
 *
 * plan() (a dry run) shows the argv, workdir, sandbox, environment and
 * timeout the command would get, and starts nothing.
 *
 * Owns: the tool row, its schema, its plan, the environment and output
 * shaping.
 * Must not: check permissions (the pipeline does).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/limits.h"
#include "exec/netproxy.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "registry.h"
#include "store/store.h"
#include "tools/plan.h"
#include "tools/walk.h"
#include "util/fs.h"
#include "util/util.h"

#define CAPTURE_MAX (8u << 20)   /* bytes of each stream kept for the spill file */
#define ENV_MAX     64

static const char schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"command\":{\"type\":[\"string\",\"array\"],\"minLength\":1,\"maxLength\":1048576,"
	"\"items\":{\"type\":\"string\",\"maxLength\":131072},\"minItems\":1,\"maxItems\":4096,"
	"\"description\":\"The command line, run by /bin/sh -c (pipes, &&, redirections work); or an "
	"argv array run directly.\"},"
	"\"workdir\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,"
	"\"description\":\"Directory to run in, relative to the workspace root or absolute "
	"within it (default: the root).\"},"
	"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,"
	"\"description\":\"Seconds before the command and everything it started is killed "
	"(default 120).\"},"
	"\"env\":{\"type\":\"object\",\"maxProperties\":64,"
	"\"additionalProperties\":{\"type\":\"string\",\"maxLength\":32768},"
	"\"description\":\"Extra environment variables (only names the configuration allows).\"}},"
	"\"required\":[\"command\"],\"additionalProperties\":false}";

/* Never settable by a call, whatever env_allow says: they run code. */
static int env_forbidden(const char *name)
{
	static const char *const names[] = {
		"PATH", "HOME", "TMPDIR", "TOOLGATE_OP_ID", "BASH_ENV", "ENV", "SHELLOPTS",
		"BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE", "PYTHONSTARTUP",
		"PYTHONPATH", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
		"NODE_OPTIONS", "NODE_PATH", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH",
		"HOSTALIASES", "RESOLV_HOST_CONF",
	};
	/* loader, allocator and git variables that run or load code */
	if (!strncmp(name, "LD_", 3) || !strncmp(name, "BASH_FUNC_", 10) ||
	    !strncmp(name, "GIT_", 4) || !strncmp(name, "MALLOC_", 7))
		return 1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

static int shell_commands(const json_t *args, tgi_cmdline *out, char *err, size_t errlen)
{
	const json_t *cmd = json_object_get(args, "command");
	if (json_is_string(cmd))
		return tgi_shell_split(json_string_value(cmd), json_string_length(cmd), out, err, errlen);
	if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
		tgi_snprintf(err, errlen, "\"command\" must be a string or a non-empty list of strings");
		return -1;
	}
	size_t n = json_array_size(cmd);
	const char **argv = tgi_xcalloc(n + 1, sizeof *argv);
	for (size_t i = 0; i < n; i++) {
		const json_t *w = json_array_get(cmd, i);
		if (!json_is_string(w) || memchr(json_string_value(w), '\0', json_string_length(w))) {
			free(argv);
			tgi_snprintf(err, errlen, "\"command\"[%zu] must be a string without NUL bytes", i);
			return -1;
		}
		argv[i] = json_string_value(w);
	}
	int r = tgi_shell_from_argv(argv, n, out, err, errlen);
	free(argv);
	return r;
}

/* ---- environment ---- */

static void env_push(tgi_strv *env, const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *s = tgi_xmalloc(len);
	snprintf(s, len, "%s=%s", name, value);
	tgi_strv_push(env, s);
}

/* Is name one of the variables the sandbox sets (sb_env, "NAME=value")? */
static int env_sandbox_sets(const char *const *sb_env, const char *name)
{
	size_t n = strlen(name);
	for (; sb_env && *sb_env; sb_env++)
		if (!strncmp(*sb_env, name, n) && (*sb_env)[n] == '=')
			return 1;
	return 0;
}

/* sb_env: what the sandbox sets (network by host: the proxy's variables),
 * NULL-terminated, or NULL; a call may not set those. */
static int build_env(const tgi_exec_ctx *ctx, const json_t *args, const char *tmpdir,
                     const char *sb_home, const char *const *sb_env, tgi_strv *env,
                     tgi_tool_out *out)
{
	const tgi_shell_cfg *sh = &ctx->cfg->shell;
	const char *home = sb_home ? sb_home : getenv("HOME");
	const char *lang = getenv("LANG");
	const json_t *extra = json_object_get(args, "env");
	const char *name;
	json_t *v;

	env_push(env, "PATH", sh->path);
	env_push(env, "HOME", home && home[0] == '/' ? home : ctx->workspace);
	env_push(env, "LANG", lang && *lang ? lang : "C.UTF-8");
	env_push(env, "TERM", "dumb");
	env_push(env, "TMPDIR", tmpdir);
	env_push(env, "TOOLGATE_OP_ID", ctx->op_id);
	for (const char *const *e = sb_env; e && *e; e++)
		tgi_strv_push(env, tgi_strdup(*e));
	if (json_object_size(extra) > ENV_MAX) {
		tgi_snprintf(out->message, sizeof out->message, "\"env\" sets more than %d variables",
		             ENV_MAX);
		return -1;
	}
	json_object_foreach((json_t *)extra, name, v) {
		char shown[80];
		int ok = 0;
		tgi_sanitize(shown, sizeof shown, name);
		for (size_t i = 0; i < sh->env_allow.n && !ok; i++)
			ok = tgi_text_glob(sh->env_allow.v[i], name);
		const char *c = name;
		int valid = (*c == '_' || (*c | 0x20) >= 'a') && strlen(name) <= 128;
		for (; *c && valid; c++)
			valid = *c == '_' || (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z');
		if (!valid || !json_is_string(v) ||
		    memchr(json_string_value(v), '\0', json_string_length(v))) {
			tgi_snprintf(out->message, sizeof out->message,
			             "env \"%s\": a variable name is [A-Za-z_][A-Za-z0-9_]* and its value a "
			             "string without NUL bytes", shown);
			return -1;
		}
		if (env_sandbox_sets(sb_env, name)) {
			tgi_snprintf(out->message, sizeof out->message,
			             "env \"%s\" is set by the sandbox (its network goes through the gate's "
			             "proxy); do not retry with it", shown);
			return -1;
		}
		if (!ok || env_forbidden(name)) {
			tgi_snprintf(out->message, sizeof out->message,
			             "env \"%s\" may not be set by a call (allowed: shell.env_allow in the "
			             "configuration%s); do not retry with it", shown,
			             env_forbidden(name) ? "; this name never" : "");
			return -1;
		}
		env_push(env, name, json_string_value(v));
	}
	return 0;
}

/* ---- output ---- */

/* The code point at s (n bytes left, n > 0) as the result's JSON text
 * shows it: *adv bytes of s, and the characters it takes there (an invalid
 * byte or a NUL is U+FFFD, tgi_json_text; a quote, a backslash or a
 * control character is escaped). */
static size_t json_width(const char *s, size_t n, size_t *adv)
{
	uint32_t cp;
	size_t k = tgi_utf8_decode(s, n, &cp);
	*adv = k ? k : 1;
	if (!k || cp == 0)
		return 1;
	if (cp == '"' || cp == '\\' || cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' ||
	    cp == '\t')
		return 2;
	return cp < 0x20 ? 6 : 1;
}

/* The code points of s and the characters its JSON text takes. */
static void measure(const char *s, size_t len, size_t *chars, size_t *width)
{
	size_t adv;
	*chars = *width = 0;
	for (size_t i = 0; i < len; i += adv, ++*chars)
		*width += json_width(s + i, len - i, &adv);
}

/*
 * The stream as the model sees it: whole, or head + marker + tail, where
 * head and tail keep at most max_cp code points (shell.max_output_chars)
 * and, with the marker, at most max_w characters of JSON text (the share
 * of the result cap this stream gets).  total is what the program wrote
 * (more than len: the capture was cut).  *cut says whether it was cut.
 */
static json_t *shaped(const char *s, size_t len, size_t total, size_t max_cp, size_t max_w,
                      const char *spill, int *cut)
{
	size_t chars, width, adv;
	measure(s, len, &chars, &width);
	*cut = chars > max_cp || width > max_w || total > len;
	if (!*cut)
		return tgi_json_text(s, len);
	char marker[PATH_MAX + 256];
	size_t mc, mw;
	if (spill[0])
		tgi_snprintf(marker, sizeof marker, "\n... [%zu bytes in all; the middle is left out; "
		             "the full output is in %s: read it with read_file and offset/limit] ...\n",
		             total, spill);
	else
		tgi_snprintf(marker, sizeof marker, "\n... [%zu bytes in all; the middle is left out; "
		             "the full output could not be saved] ...\n", total);
	measure(marker, strlen(marker), &mc, &mw);
	size_t room_w = max_w > mw ? max_w - mw : 0;
	size_t head = 0, hc = 0, hw = 0;            /* half of each budget for the head */
	while (head < len) {
		size_t w = json_width(s + head, len - head, &adv);
		if (hc + 1 > max_cp / 2 || hw + w > room_w / 2)
			break;
		head += adv, hc++, hw += w;
	}
	size_t tc = max_cp - hc, tw = room_w - hw;  /* the rest for the tail */
	size_t tail = head, rc = chars - hc, rw = width - hw;
	while (tail < len && (rc > tc || rw > tw)) {
		rw -= json_width(s + tail, len - tail, &adv);
		tail += adv, rc--;
	}
	tgi_buf b;
	tgi_buf_init(&b, head + sizeof marker + (len - tail));
	tgi_buf_append(&b, s, head);
	tgi_buf_puts(&b, marker);
	tgi_buf_append(&b, s + tail, len - tail);
	json_t *j = tgi_json_text(b.p, b.len);
	tgi_buf_free(&b);
	return j;
}

static void spill_both(const tgi_exec_ctx *ctx, const tgi_spawn_result *res, char *path,
                       size_t cap)
{
	char err[256];
	tgi_buf b;
	path[0] = '\0';
	int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return;
	tgi_buf_init(&b, 2 * CAPTURE_MAX + 256);
	tgi_buf_printf(&b, "--- stdout (%zu bytes%s) ---\n", res->out_total,
	               res->out_truncated ? ", the first 8 MiB kept" : "");
	tgi_buf_append(&b, res->out, res->out_len);
	tgi_buf_printf(&b, "\n--- stderr (%zu bytes%s) ---\n", res->err_total,
	               res->err_truncated ? ", the first 8 MiB kept" : "");
	tgi_buf_append(&b, res->err, res->err_len);
	if (tgi_spill_write(sfd, ctx->op_id, ctx->session, b.p, b.len, path, cap, err, sizeof err) < 0)
		path[0] = '\0';
	tgi_buf_free(&b);
	close(sfd);
}

/* The result with each stream cut to max_cp code points and to wo / we
 * characters of JSON text; *cut: was either cut. */
static json_t *result_object(const tgi_spawn_result *res, size_t max_cp, size_t wo, size_t we,
                             const char *spill, int *cut)
{
	int cut_out, cut_err;
	json_t *o = json_object();
	json_object_set_new(o, "exit_code", res->exited ? json_integer(res->exit_code) : json_null());
	json_object_set_new(o, "signal", res->signal ? json_string(sigabbrev_np(res->signal) ?
	                                                           sigabbrev_np(res->signal) : "?")
	                                             : json_null());
	json_object_set_new(o, "timed_out", json_boolean(res->timed_out));
	json_object_set_new(o, "stdout", shaped(res->out, res->out_len, res->out_total, max_cp, wo,
	                                        spill, &cut_out));
	json_object_set_new(o, "stderr", shaped(res->err, res->err_len, res->err_total, max_cp, we,
	                                        spill, &cut_err));
	json_object_set_new(o, "duration_ms", json_real((double)(long long)(res->duration_ms * 1000) / 1000));
	*cut = cut_out || cut_err;
	if (*cut)
		json_object_set_new(o, "spilled", spill[0] ? json_string(spill) : json_null());
	return o;
}

/* The characters of v's compact JSON text (what the shape stage counts). */
static size_t json_chars(const json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT);
	size_t n = t ? tgi_utf8_len(t, strlen(t)) : 0;
	free(t);
	return n;
}

/* The characters a string member takes in o's JSON text. */
static size_t member_width(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	size_t chars, width;
	measure(json_string_value(v), json_string_length(v), &chars, &width);
	return width;
}

/* Split avail characters between the streams (full: the JSON widths of
 * what each would show uncut): one that fits in half keeps all of it and
 * leaves the rest to the other. */
static void share(size_t avail, size_t full_out, size_t full_err, size_t *wo, size_t *we)
{
	if (full_out <= avail / 2) {
		*wo = full_out;
		*we = avail - full_out;
	} else if (full_err <= avail / 2) {
		*we = full_err;
		*wo = avail - full_err;
	} else {
		*wo = avail / 2;
		*we = avail - avail / 2;
	}
}

/*
 * The result as the model gets it: the whole of it within the call's
 * result cap (ctx->max_result_chars, as the shape stage counts it), each
 * stream within shell.max_output_chars.  Whatever is cut goes to one spill
 * file with both streams in full (as captured), named in "spilled", in the
 * markers, and in out->truncated, so that the shape stage neither cuts
 * the object into a string nor spills a second time.  A cap too small
 * even for the fixed fields leaves the streams at their markers.
 */
static json_t *result_json(const tgi_exec_ctx *ctx, const tgi_spawn_result *res,
                           tgi_tool_out *out)
{
	size_t max = ctx->cfg->shell.max_output_chars;
	size_t cap = ctx->max_result_chars ? ctx->max_result_chars : SIZE_MAX;
	size_t wo = SIZE_MAX, we = SIZE_MAX, avail = SIZE_MAX, n, oc, ow, ec, ew;
	char spill[PATH_MAX] = "";
	int cut;
	json_t *o = result_object(res, max, wo, we, spill, &cut);
	/* surely within the cap (each byte at most a 6-character escape, and
	 * the fixed fields): no need to render it to know */
	if (!cut && ((cap > 512 && res->out_len + res->err_len < (cap - 512) / 6) ||
	             json_chars(o) <= cap))
		return o;
	spill_both(ctx, res, spill, sizeof spill);
	measure(res->out, res->out_len, &oc, &ow);
	measure(res->err, res->err_len, &ec, &ew);
	for (int i = 0; i < 6; i++) {
		json_decref(o);
		o = result_object(res, max, wo, we, spill, &cut);
		if ((n = json_chars(o)) <= cap)
			break;
		if (avail == SIZE_MAX) {       /* what the fixed fields and the markers leave */
			size_t shown = member_width(o, "stdout") + member_width(o, "stderr");
			avail = cap > n - shown ? cap - (n - shown) : 0;
		} else {                       /* a marker came or grew: take its room too */
			avail = avail > n - cap ? avail - (n - cap) : 0;
		}
		share(avail, ow, ew, &wo, &we);
	}
	if (json_chars(o) > cap) {         /* still over: the markers alone, pointing at the spill */
		json_decref(o);
		o = result_object(res, max, 0, 0, spill, &cut);
	}
	out->truncated = json_pack("{s:I, s:s?}", "original_chars",
	                           (json_int_t)(oc + ec + (res->out_total - res->out_len) +
	                                        (res->err_total - res->err_len)),
	                           "spill_path", spill[0] ? spill : NULL);
	return o;
}

/* ---- running ---- */

typedef struct child_setup_arg {
	const tgi_limits_run *limits;
	const tgi_sb_exec    *sandbox;
} child_setup_arg;

static int child_setup(void *p)
{
	const child_setup_arg *a = p;
	int r = tgi_limits_child(a->limits);
	return r < 0 ? r : tgi_sandbox_child(a->sandbox);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The workdir as an absolute path inside the workspace (symlinks resolved,
 * confined by the kernel), and relative to it in rel (PATH_MAX bytes). */
static int workdir_path(const tgi_exec_ctx *ctx, const json_t *args, char *out, size_t cap,
                        char *rel, tgi_tool_out *o)
{
	const char *raw;
	size_t rawlen;
	char norm[PATH_MAX];
	tg_errkind kind;
	if (tgi_arg_str(args, "workdir", ".", &raw, &rawlen, o->message, sizeof o->message) < 0 ||
	    tgi_path_check(raw, rawlen, norm, sizeof norm, o->message, sizeof o->message) < 0)
		return tgi_tool_fail(o, TG_ERR_INVALID_INPUT);
	int fd = tgi_open_beneath(ctx->ws_fd, norm, O_PATH | O_DIRECTORY, 0);
	int r = fd < 0 ? fd : tgi_fd_path(ctx->ws_fd, fd, rel, PATH_MAX);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		kind = tgi_path_error(r, norm, o->message, sizeof o->message);
		return tgi_tool_fail(o, kind == TG_ERR_TOOL_ERROR ? TG_ERR_INVALID_INPUT : kind);
	}
	tgi_snprintf(out, cap, "%s%s%s", ctx->workspace, strcmp(rel, ".") ? "/" : "",
	             strcmp(rel, ".") ? rel : "");
	return 0;
}

/* repath(): the workdir is a workspace path too (an absolute one inside
 * the workspace made relative; policy judges none: the sandbox confines
 * the command, the kernel the workdir). */
static void shell_repath(json_t *args, tgi_path_map_fn map, void *ud)
{
	tgi_repath_key(args, "workdir", map, ud);
}

/* The gate's own files, as absolute paths: the sandbox keeps them (and
 * the directories above them) read-only, and a missing one is removed if
 * the command creates it (sandbox.h).  .git needs no entry: the sandbox
 * finds every one; .toolgate is hidden. */
static void protected_paths(const tgi_exec_ctx *ctx, tgi_strv *out)
{
	char p[PATH_MAX];
	for (size_t i = 0; i < ctx->nprotect; i++) {
		tgi_snprintf(p, sizeof p, "%s/%s", ctx->workspace, ctx->protect[i]);
		tgi_strv_push(out, tgi_strdup(p));
	}
}

/* In the parent once bubblewrap runs: the network attach (sandbox.h). */
static int sandbox_started(void *arg, pid_t pid, char *err, size_t errlen)
{
	return tgi_sandbox_started(arg, pid, err, errlen);
}

/* What the audit found after the run, as the call's warnings and one
 * event (tool.sandbox.removed). */
static void audit_notes(json_t *found, tgi_tool_out *out)
{
	size_t i;
	json_t *f;
	if (!found)
		return;
	out->warnings = json_array();
	json_array_foreach(found, i, f) {
		char msg[1024];
		const char *path = json_string_value(json_object_get(f, "path"));
		const char *what = json_string_value(json_object_get(f, "what"));
		const char *action = json_string_value(json_object_get(f, "action"));
		char shown[300];
		tgi_sanitize(shown, sizeof shown, path ? path : "?");
		if (!strcmp(path ? path : "", "."))
			tgi_snprintf(msg, sizeof msg, "the sandbox could not check the workspace after the "
			             "command: %s", action ? action : "");
		else
			tgi_snprintf(msg, sizeof msg, "the command created %s (%s); %s", shown,
			             what ? what : "", action ? action : "");
		json_array_append_new(out->warnings, json_string(msg));
	}
	out->events = json_pack("[{s:s,s:{s:o}}]", "type", "tool.sandbox.removed", "data",
	                        "found", found);
}

/* What is exec'd (before the sandbox's wrapper): /bin/sh -c COMMAND for a
 * string, the list itself for a list.  0, or -1 with out set. */
static int command_argv(const json_t *args, tgi_strv *argv, tgi_tool_out *out)
{
	const json_t *cmd = json_object_get(args, "command");
	if (json_is_string(cmd)) {
		tgi_strv_push(argv, tgi_strdup("/bin/sh"));
		tgi_strv_push(argv, tgi_strdup("-c"));
		tgi_strv_push(argv, tgi_strdup(json_string_value(cmd)));
	} else {
		size_t i;
		json_t *w;
		json_array_foreach(cmd, i, w)
			tgi_strv_push(argv, tgi_strdup(json_string_value(w) ? json_string_value(w) : ""));
	}
	if (!argv->n) {
		tgi_snprintf(out->message, sizeof out->message, "\"command\" is empty");
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	return 0;
}

/* What the handler and the plan check first: the workdir (absolute in cwd,
 * relative in rel; PATH_MAX each), the timeout (capped by the config) and
 * argv.  0, or -1 with out set (argv left empty). */
static int prepare(const tgi_exec_ctx *ctx, const json_t *args, char *cwd, char *rel,
                   long long *timeout, tgi_strv *argv, tgi_tool_out *out)
{
	const tgi_shell_cfg *sh = &ctx->cfg->shell;
	if (workdir_path(ctx, args, cwd, PATH_MAX, rel, out) < 0)
		return -1;
	if (tgi_arg_int(args, "timeout_s", ctx->timeout_s > 0 ? ctx->timeout_s : 120, 1, 86400,
	                timeout, out->message, sizeof out->message) < 0)
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	if (*timeout > sh->max_timeout_s)
		*timeout = sh->max_timeout_s;
	if (command_argv(args, argv, out) < 0) {
		tgi_strv_free(argv);
		return -1;
	}
	/* a program named bare that the command's PATH does not hold: the
	 * gate's own sentence, not the sandbox's (it is looked up on the host,
	 * whose system directories the sandbox shows as they are) */
	if (json_is_array(json_object_get(args, "command")) && !strchr(argv->v[0], '/') &&
	    !tgi_spawn_findable(argv->v[0], sh->path)) {
		char prog[128];
		tgi_sanitize(prog, sizeof prog, argv->v[0]);
		tgi_snprintf(out->message, sizeof out->message, "there is no program \"%s\" on the "
		             "command's PATH (%s); nothing was run", prog, sh->path);
		tgi_strv_free(argv);
		return tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
	}
	return 0;
}

static int shell_run(const tgi_exec_ctx *ctx, const json_t *args, tgi_tool_out *out)
{
	const tgi_shell_cfg *sh = &ctx->cfg->shell;
	char cwd[PATH_MAX], rel[PATH_MAX], tmpdir[PATH_MAX], err[512];
	long long timeout;
	tgi_strv argv = {0}, env = {0}, prot = {0}, masks = {0};
	tgi_sb_exec sb = {0};
	tgi_limits_run lim;
	int rc = -1, have_lim = 0, have_sb = 0;

	if (prepare(ctx, args, cwd, rel, &timeout, &argv, out) < 0)
		return -1;

	const char *tbase = getenv("TMPDIR");
	tgi_snprintf(tmpdir, sizeof tmpdir, "%s/toolgate-shell-XXXXXX",
	             tbase && tbase[0] == '/' ? tbase : "/tmp");
	if (!mkdtemp(tmpdir)) {
		tgi_snprintf(out->message, sizeof out->message,
		             "cannot make a private temporary directory: %s; nothing was run",
		             strerror(errno));
		tgi_strv_free(&argv);
		return tgi_tool_fail(out, TG_ERR_TRANSIENT);
	}
	protected_paths(ctx, &prot);
	/* hidden: the gate's state, and what read rules keep from reading */
	tgi_strv_push(&masks, tgi_strdup(ctx->state_dir));
	if (ctx->cfg->sandbox_profile.mode != TGI_SANDBOX_FULL && ctx->read_masks &&
	    ctx->read_masks(ctx, &masks, err, sizeof err) < 0) {
		tgi_snprintf(out->message, sizeof out->message, "%s; nothing was run", err);
		tgi_tool_fail(out, TG_ERR_NOT_PERMITTED);
		goto done;
	}
	tgi_sb_spec spec = {
		.profile = &ctx->cfg->sandbox_profile,
		.workspace = ctx->workspace,
		.tmpdir = tmpdir,
		.protect = (const char *const *)prot.v,
		.nprotect = prot.n,
		.mask = (const char *const *)masks.v,
		.nmask = masks.n,
		.quarantine = ctx->state_dir,
		.attach = ctx->net_attach,
		.attach_arg = ctx->net_attach_arg,
	};
	if (tgi_sandbox_prepare(&spec, argv.v, &sb, err, sizeof err) < 0) {
		tgi_snprintf(out->message, sizeof out->message, "%s; nothing was run", err);
		tgi_tool_fail(out, TG_ERR_NOT_PERMITTED);
		goto done;
	}
	have_sb = 1;
	if (build_env(ctx, args, sb.tmpdir ? sb.tmpdir : tmpdir, sb.home, sb.env, &env, out) < 0) {
		tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
		goto done;
	}
	tgi_limits l = {
		.cpu_s = sh->cpu_s, .address_space_mb = sh->address_space_mb,
		.file_size_mb = sh->file_size_mb, .open_files = sh->open_files,
		.processes = sh->processes,
	};
	tgi_limits_prepare(&l, ctx->op_id, &lim);
	have_lim = 1;

	child_setup_arg ca = {&lim, &sb};
	tgi_spawn_opts o = {
		.cwd = cwd,
		.envp = env.v,
		.timeout_s = (int)timeout,
		.max_out = CAPTURE_MAX,
		.max_err = CAPTURE_MAX,
		.child_setup = child_setup,
		.child_arg = &ca,
		.cancel = ctx->cancel,
		.started = sandbox_started,
		.started_arg = &sb,
	};
	tgi_spawn_result res;
	if (tgi_spawn_run(sb.argv, &o, &res) < 0) {
		tgi_snprintf(out->message, sizeof out->message, "could not start the command: %s; "
		             "nothing was run", strerror(errno));
		tgi_tool_fail(out, TG_ERR_TRANSIENT);
		goto done;
	}
	/* the command and its pid namespace are gone: what it made at a
	 * refused name goes now (before any other result is given) */
	audit_notes(tgi_sandbox_audit(&sb), out);
	if (res.start_error[0]) {
		tgi_snprintf(out->message, sizeof out->message, "%s; nothing was run",
		             res.start_error);
		tgi_spawn_result_free(&res);
		tgi_tool_fail(out, TG_ERR_NOT_PERMITTED);
		goto done;
	}
	char why[256];
	if (res.exited && tgi_sandbox_exec_failed(sb.backend, res.exit_code, res.out_len, res.err, why,
	                                          sizeof why)) {
		char prog[128];
		tgi_sanitize(prog, sizeof prog, argv.v[0]);
		tgi_snprintf(out->message, sizeof out->message, "could not run \"%s\" inside the "
		             "sandbox: %s (it is not there, or not readable there: toolgate doctor "
		             "shows what the sandbox sees)", prog, why);
		tgi_spawn_result_free(&res);
		tgi_tool_fail(out, TG_ERR_INVALID_INPUT);
		/* the sandbox's own words, but a command can print them too: what
		 * ran is not known */
		out->applied = TGI_APPLIED_UNKNOWN;
		goto done;
	}
	if (res.spawn_errno) {
		char prog[128];
		tgi_sanitize(prog, sizeof prog, argv.v[0]);
		int e = res.spawn_errno;
		tgi_snprintf(out->message, sizeof out->message, "could not run \"%s\": %s", prog,
		             strerror(e));
		tgi_spawn_result_free(&res);
		tgi_tool_fail(out, e == ENOENT ? TG_ERR_INVALID_INPUT : TG_ERR_TOOL_ERROR);
		goto done;
	}
	if (res.cancelled) {           /* stopped part-way: no result to give */
		tgi_spawn_result_free(&res);
		tgi_snprintf(out->message, sizeof out->message, "the command was stopped because the "
		             "call was cancelled");
		out->kind = TG_ERR_TOOL_ERROR;
		out->applied = TGI_APPLIED_UNKNOWN;
		goto done;
	}
	out->output = result_json(ctx, &res, out);
	out->kind = TG_ERR_NONE;
	tgi_spawn_result_free(&res);
	rc = 0;
done:
	if (have_lim)
		tgi_limits_finish(&lim);
	if (have_sb)
		tgi_sandbox_release(&sb);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tgi_strv_free(&argv);
	tgi_strv_free(&env);
	tgi_strv_free(&prot);
	tgi_strv_free(&masks);
	return rc;
}

/* TMPDIR as a plan shows it: the directory is made only when it runs. */
#define PLAN_TMPDIR "(a private directory made for the run)"

/*
 * The plan: {argv (what runs, before the sandbox's wrapper), workdir
 * (relative to the workspace), sandbox {mode, backend, network}, env
 * {name: value} as the command would get it, timeout_s}.  Nothing is made
 * or started: the sandbox backend is the probe's answer (a sandboxed mode
 * without one would refuse to run: would_fail).
 */
static json_t *shell_plan(const tgi_exec_ctx *ctx, const json_t *args)
{
	char cwd[PATH_MAX], rel[PATH_MAX];
	long long timeout;
	tgi_strv argv = {0}, env = {0};
	tgi_tool_out out;

	memset(&out, 0, sizeof out);
	if (prepare(ctx, args, cwd, rel, &timeout, &argv, &out) < 0)
		return tgi_plan_fail(NULL, out.kind, out.message);

	json_t *plan = json_object(), *jargv = json_array(), *jenv = json_object();
	for (size_t i = 0; i < argv.n; i++)
		json_array_append_new(jargv, tgi_json_text(argv.v[i], strlen(argv.v[i])));
	tgi_strv_free(&argv);
	json_object_set_new(plan, "argv", jargv);
	json_object_set_new(plan, "workdir", tgi_json_text(rel, strlen(rel)));

	const tgi_sb_profile *pr = &ctx->cfg->sandbox_profile;
	tgi_sandbox mode = pr->mode;
	int sandboxed = mode != TGI_SANDBOX_FULL;
	tgi_sb_backend backend = sandboxed ? tgi_sandbox_probe()->backend : TGI_SB_NONE;
	char why[1024];
	int usable = tgi_sandbox_usable(pr, ctx->net_attach != NULL, why, sizeof why);
	json_t *net = json_boolean(pr->net == TGI_NET_ON);
	if (pr->net == TGI_NET_HOSTS) {
		json_decref(net);
		net = json_array();
		for (size_t i = 0; i < pr->hosts.n; i++)
			json_array_append_new(net, json_string(pr->hosts.v[i]));
	}
	json_object_set_new(plan, "sandbox",
	                    json_pack("{s:s, s:s, s:o}", "mode", tgi_sandbox_name(mode), "backend",
	                              tgi_sb_backend_name(backend), "network", net));
	int env_ok = build_env(ctx, args, PLAN_TMPDIR, NULL,
	                       sandboxed && pr->net == TGI_NET_HOSTS ? tgi_netproxy_env : NULL,
	                       &env, &out) == 0;
	for (size_t i = 0; env_ok && i < env.n; i++) {
		const char *eq = strchr(env.v[i], '=');
		char *name = tgi_strndup(env.v[i], (size_t)(eq - env.v[i]));
		json_object_set_new(jenv, name, tgi_json_text(eq + 1, strlen(eq + 1)));
		free(name);
	}
	tgi_strv_free(&env);
	json_object_set_new(plan, "env", jenv);
	json_object_set_new(plan, "timeout_s", json_integer(timeout));
	if (!env_ok)
		return tgi_plan_fail(plan, TG_ERR_INVALID_INPUT, out.message);
	if (sandboxed && backend == TGI_SB_NONE) {
		tgi_snprintf(out.message, sizeof out.message,
		             "no sandbox backend works here (toolgate doctor says why); refusing to run "
		             "commands in %s mode; nothing was run", tgi_sandbox_name(mode));
		return tgi_plan_fail(plan, TG_ERR_NOT_PERMITTED, out.message);
	}
	if (!usable) {
		tgi_snprintf(out.message, sizeof out.message, "%s; nothing was run", why);
		return tgi_plan_fail(plan, TG_ERR_NOT_PERMITTED, out.message);
	}
	return plan;
}

const tgi_tool tgi_tool_shell = {
	.name = "shell",
	.description =
		"Run a shell command in the workspace and return its exit code, stdout and stderr. "
		"Commands run in a sandbox (by default the workspace is writable, the network is off, "
		".git/ is read-only) with a clean environment and a timeout. Prefer short, "
		"non-interactive commands; stdin is empty.",
	.category = "runtime",
	.input_schema = schema,
	.flags = TGI_T_DESTRUCTIVE,
	.commands = shell_commands,
	.repath = shell_repath,
	.handler = shell_run,
	.plan = shell_plan,
};
