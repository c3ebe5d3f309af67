/*
 * readonly.c — the read-only class of shell commands (shell.h).
 *
 * A command line is read-only when every simple command in it is: not
 * opaque, no leading assignments (`LD_PRELOAD=x ls` runs code), no
 * wrapper (sudo, env with arguments, xargs, nice, ...: the program is
 * argv[0]), a program named by its bare name or by a path in a system bin
 * directory (`./ls` is the workspace's own code), output redirected
 * nowhere but /dev/null, /dev/stdout, /dev/stderr or another fd, and the
 * program in the list below with its condition met.  The list is data: a
 * row is a program, an optional first argument (git's subcommand) and a
 * condition on the remaining arguments.  Left out on purpose: pagers
 * (less, more: they wait on a terminal), awk (system(), print > file),
 * tee, xargs, and every program with an option that writes or runs
 * another program unless the condition rules that option out.
 *
 * The config may add entries ("prog" or "prog word ..."; a prog with a
 * '/' is matched as written): an entry matches when the program is prog
 * and the arguments begin with the words, whatever follows.  With replace
 * the config's entries are the whole list.
 *
 * Owns: the built-in list and its conditions.  Must not: split or
 * normalise commands (shell.c does), or decide anything but the class.
 */
#include "policy/shell.h"
#include "util/util.h"

#include <stdint.h>
#include <string.h>

/* A condition on the arguments after the program (and after the
 * subcommand, for rows that name one): 1 when they keep it read-only. */
typedef int (*ro_cond)(char *const *a, size_t n);

/* ---- option scanning */

static int is_option(const char *w)
{
	return w[0] == '-' && w[1] != '\0';
}

/* Is long option word a spelling of name (any prefix of 3+ chars, as GNU
 * getopt takes unambiguous prefixes, with or without "=value")? */
static int long_is(const char *word, const char *name)
{
	size_t n = strcspn(word, "=");
	return n >= 3 && n <= strlen(name) && strncmp(word, name, n) == 0;
}

/*
 * Does any option before "--" spell a short option in bad or a long one
 * in lbad?  vals are the short options taking a value (the rest of their
 * cluster, else the next word), so a value is never read as options.
 */
static int has_any(char *const *a, size_t n, const char *bad, const char *vals,
                   const char *const *lbad)
{
	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (strcmp(w, "--") == 0)
			return 0;
		if (!is_option(w))
			continue;
		if (w[1] == '-') {
			for (size_t k = 0; lbad && lbad[k]; k++)
				if (long_is(w, lbad[k]))
					return 1;
			continue;
		}
		for (const char *q = w + 1; *q; q++) {
			if (strchr(bad, *q))
				return 1;
			if (vals && strchr(vals, *q)) {
				i += !q[1];
				break;
			}
		}
	}
	return 0;
}

/* The number of operands (words not options or their values). */
static size_t count_operands(char *const *a, size_t n, const char *vals)
{
	size_t ops = 0;
	int opts = 1;

	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (opts && strcmp(w, "--") == 0)
			opts = 0;
		else if (opts && is_option(w) && w[1] != '-') {
			for (const char *q = w + 1; *q; q++)
				if (vals && strchr(vals, *q)) {
					i += !q[1];
					break;
				}
		} else if (!(opts && is_option(w)))
			ops++;
	}
	return ops;
}

static int in_list(const char *w, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(w, list[i]) == 0)
			return 1;
	return 0;
}

/* ---- conditions */

/* tail, but not -f/-F/--follow (it never ends). */
static int ro_tail(char *const *a, size_t n)
{
	return !has_any(a, n, "fF", "ncs", (const char *const[]){ "--follow", NULL });
}

/* date prints; -s/--set or a MMDDhhmm operand set the clock. */
static int ro_date(char *const *a, size_t n)
{
	if (has_any(a, n, "s", "dfr", (const char *const[]){ "--set", NULL }))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i], "-d") == 0 || strcmp(a[i], "-f") == 0 || strcmp(a[i], "-r") == 0)
			i++;
		else if (!is_option(a[i]) && a[i][0] != '+')
			return 0;
	}
	return 1;
}

/* file -C compiles a magic file. */
static int ro_file(char *const *a, size_t n)
{
	return !has_any(a, n, "C", "emfFP", (const char *const[]){ "--compile", NULL });
}

/* tree -o FILE writes it; -R (with -H) writes an index per directory. */
static int ro_tree(char *const *a, size_t n)
{
	return !has_any(a, n, "oR", "LPIHT", NULL);
}

/* sort -o FILE writes it; --compress-program runs one. */
static int ro_sort(char *const *a, size_t n)
{
	return !has_any(a, n, "o", "ktST",
	                (const char *const[]){ "--output", "--compress-program", NULL });
}

/* uniq IN OUT writes OUT. */
static int ro_uniq(char *const *a, size_t n)
{
	return count_operands(a, n, "fsw") <= 1;
}

/* rg --pre runs a program per file, -z/--search-zip a decompressor. */
static int ro_rg(char *const *a, size_t n)
{
	return !has_any(a, n, "z", "ABCEMTefgjmrtd",
	                (const char *const[]){ "--pre", "--search-zip", "--hostname-bin", NULL });
}

/* ag --pager runs one. */
static int ro_ag(char *const *a, size_t n)
{
	return !has_any(a, n, "", NULL, (const char *const[]){ "--pager", NULL });
}

/* find without the actions that run, delete or write. */
static int ro_find(char *const *a, size_t n)
{
	static const char *const bad[] = { "-exec", "-execdir", "-ok", "-okdir", "-delete",
		                               "-fprint", "-fprint0", "-fprintf", "-fls", NULL };
	for (size_t i = 0; i < n; i++)
		if (in_list(a[i], bad))
			return 0;
	return 1;
}

/* env alone prints the environment (with -0, NUL-separated). */
static int ro_env(char *const *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], "-0") != 0 && strcmp(a[i], "--null") != 0)
			return 0;
	return 1;
}

/*
 * One sed script made only of addresses (N, $, first~step, /re/, \cREc,
 * addr,+N, addr,~N, with !) and commands that print or move lines (p P =
 * l q Q d D n N g G h H x z, { }).  s, y, w, r, e, a, i, c and labels are
 * refused: they write files, run commands or need more parsing than a
 * class is worth.
 */
static const char *sed_address(const char *s)
{
	if (*s >= '0' && *s <= '9') {
		s += strspn(s, "0123456789");
		if (*s == '~')
			s += 1 + strspn(s + 1, "0123456789");
		return s;
	}
	if (*s == '$')
		return s + 1;
	if (*s == '/' || (*s == '\\' && s[1])) {
		char delim = *s == '/' ? '/' : s[1];
		s += *s == '/' ? 1 : 2;
		while (*s && *s != delim) {
			if (*s == '\\' && s[1])
				s++;
			if (*s == '\n')
				return NULL;
			s++;
		}
		if (*s != delim)
			return NULL;
		s++;
		while (*s == 'I' || *s == 'M')
			s++;
		return s;
	}
	return s;
}

static int sed_script_ok(const char *s)
{
	int depth = 0;

	for (;;) {
		s += strspn(s, " \t\n;");
		if (!*s)
			return depth == 0;
		const char *t = sed_address(s);
		if (!t)
			return 0;
		if (t != s && *t == ',') {
			s = t + 1;
			if (*s == '+' || *s == '~')
				t = s + 1 + strspn(s + 1, "0123456789");
			else if (!(t = sed_address(s)) || t == s)
				return 0;
		}
		s = t + strspn(t, " \t");
		if (*s == '!')
			s += 1 + strspn(s + 1, " \t");
		if (*s == '{') {
			depth++;
			s++;
			continue;
		}
		if (*s == '}') {
			if (--depth < 0)
				return 0;
			s++;
			continue;
		}
		if (!*s || !strchr("pP=lqQdDnNgGhHxz", *s))
			return 0;
		if (strchr("lqQ", *s))
			s += strspn(s + 1, "0123456789");
		s++;
		s += strspn(s, " \t");
		if (*s && !strchr(";\n}", *s))
			return 0;
	}
}

/* sed -n with printing scripts only: no -i, no script file. */
static int ro_sed(char *const *a, size_t n)
{
	int quiet = 0, scripts = 0;

	for (size_t i = 0; i < n; i++) {
		const char *w = a[i], *script = NULL;
		if (strcmp(w, "--") == 0) {
			if (!scripts && i + 1 < n)
				script = a[i + 1];
			if (script && !sed_script_ok(script))
				return 0;
			scripts += script != NULL;
			break;
		}
		if (w[0] == '-' && w[1] == '-') {
			if (long_is(w, "--quiet") || long_is(w, "--silent"))
				quiet = 1;
			else if (strncmp(w, "--expression=", 13) == 0)
				script = w + 13;
			else if (strcmp(w, "--expression") == 0 && i + 1 < n)
				script = a[++i];
			else if (!in_list(w, (const char *const[]){ "--regexp-extended", "--posix", "--debug",
			                                           "--sandbox", "--null-data", "--separate",
			                                           "--unbuffered", NULL }))
				return 0;
		} else if (is_option(w)) {
			for (const char *q = w + 1; *q; q++) {
				if (*q == 'n')
					quiet = 1;
				else if (*q == 'e') {
					script = q[1] ? q + 1 : i + 1 < n ? a[++i] : NULL;
					if (!script)
						return 0;
					break;
				} else if (*q == 'l') {
					i += !q[1];
					break;
				} else if (!strchr("Ersuz", *q))
					return 0; /* -i writes, -f reads a script we cannot see */
			}
		} else if (!scripts) {
			script = w;
		} else {
			continue; /* a file to read */
		}
		if (script && !sed_script_ok(script))
			return 0;
		scripts += script != NULL;
	}
	return quiet && scripts > 0;
}

/* git log/diff/show/blame: --output writes a file, --ext-diff runs a program. */
static int ro_git_out(char *const *a, size_t n)
{
	for (size_t i = 0; i < n && strcmp(a[i], "--") != 0; i++)
		if (strcmp(a[i], "--output") == 0 || strncmp(a[i], "--output=", 9) == 0 ||
		    strcmp(a[i], "--ext-diff") == 0)
			return 0;
	return 1;
}

/* git branch lists with no arguments, -a, -r, -v, --list [PATTERN...];
 * anything else creates, renames or deletes. */
static int ro_git_branch(char *const *a, size_t n)
{
	static const char *const longs[] = { "--all", "--remotes", "--list", "--verbose",
		                                 "--show-current", "--no-color", "--color", NULL };
	int list = 0, patterns = 0;

	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (w[0] == '-' && w[1] == '-') {
			if (!in_list(w, longs) && strncmp(w, "--color=", 8) != 0)
				return 0;
			list |= strcmp(w, "--list") == 0;
		} else if (is_option(w)) {
			if (w[1 + strspn(w + 1, "arlv")] != '\0')
				return 0;
			list |= strchr(w, 'l') != NULL;
		} else {
			patterns = 1;
		}
	}
	return !patterns || list;
}

/* git remote, git remote -v. */
static int ro_git_remote(char *const *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], "-v") != 0 && strcmp(a[i], "--verbose") != 0)
			return 0;
	return 1;
}

/* git config --get/--get-all/--get-regexp/--list, scopes and output
 * options; nothing that sets, unsets, renames or edits. */
static int ro_git_config(char *const *a, size_t n)
{
	static const char *const reads[] = { "--get", "--get-all", "--get-regexp", "--get-urlmatch",
		                                 "--list", "-l", NULL };
	static const char *const fine[] = { "--global", "--system", "--local", "--worktree",
		                                "--show-origin", "--show-scope", "--null", "-z",
		                                "--name-only", "--includes", "--no-includes", "--bool",
		                                "--int", "--path", NULL };
	int reading = 0;

	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (in_list(w, reads))
			reading = 1;
		else if (strcmp(w, "--file") == 0 || strcmp(w, "-f") == 0)
			i++;
		else if (is_option(w) && !in_list(w, fine) && strncmp(w, "--type=", 7) != 0 &&
		         strncmp(w, "--file=", 7) != 0 && strncmp(w, "--default=", 10) != 0)
			return 0;
	}
	return reading;
}

/* ---- the list */

static const struct ro_entry {
	const char *prog;
	const char *sub;   /* the first argument it must have, or NULL */
	ro_cond     cond;  /* NULL: any arguments */
} ro_table[] = {
	{ "ls", NULL, NULL },        { "cat", NULL, NULL },       { "head", NULL, NULL },
	{ "tail", NULL, ro_tail },   { "wc", NULL, NULL },        { "nl", NULL, NULL },
	{ "tac", NULL, NULL },
	{ "grep", NULL, NULL },      { "egrep", NULL, NULL },     { "fgrep", NULL, NULL },
	{ "rg", NULL, ro_rg },       { "ag", NULL, ro_ag },
	{ "pwd", NULL, NULL },       { "cd", NULL, NULL },        { "echo", NULL, NULL },
	{ "printf", NULL, NULL },    { "which", NULL, NULL },     { "whoami", NULL, NULL },
	{ "id", NULL, NULL },        { "date", NULL, ro_date },   { "uname", NULL, NULL },
	{ "env", NULL, ro_env },     { "printenv", NULL, NULL },
	{ "du", NULL, NULL },        { "df", NULL, NULL },        { "file", NULL, ro_file },
	{ "stat", NULL, NULL },      { "tree", NULL, ro_tree },
	{ "sort", NULL, ro_sort },   { "uniq", NULL, ro_uniq },   { "cut", NULL, NULL },
	{ "tr", NULL, NULL },        { "diff", NULL, NULL },      { "cmp", NULL, NULL },
	{ "md5sum", NULL, NULL },    { "sha1sum", NULL, NULL },   { "sha224sum", NULL, NULL },
	{ "sha256sum", NULL, NULL }, { "sha384sum", NULL, NULL }, { "sha512sum", NULL, NULL },
	{ "b2sum", NULL, NULL },     { "cksum", NULL, NULL },
	{ "basename", NULL, NULL },  { "dirname", NULL, NULL },   { "realpath", NULL, NULL },
	{ "readlink", NULL, NULL },
	{ "test", NULL, NULL },      { "[", NULL, NULL },         { "true", NULL, NULL },
	{ "false", NULL, NULL },
	{ "find", NULL, ro_find },   { "sed", NULL, ro_sed },
	{ "git", "status", NULL },   { "git", "log", ro_git_out }, { "git", "diff", ro_git_out },
	{ "git", "show", ro_git_out }, { "git", "branch", ro_git_branch },
	{ "git", "rev-parse", NULL }, { "git", "ls-files", NULL }, { "git", "blame", ro_git_out },
	{ "git", "describe", NULL }, { "git", "remote", ro_git_remote },
	{ "git", "config", ro_git_config },
};

/* Where git's subcommand is, past the global options that change nothing
 * (-C DIR, --no-pager, ...); SIZE_MAX past any other (-c sets config that
 * may run programs). */
static size_t git_subcommand(char *const *a, size_t n)
{
	static const char *const fine[] = { "--no-pager", "-P", "--no-optional-locks",
		                                "--literal-pathspecs", "--no-replace-objects", NULL };
	size_t i = 0;

	while (i < n && is_option(a[i])) {
		if (strcmp(a[i], "-C") == 0)
			i += 2;
		else if (in_list(a[i], fine))
			i++;
		else
			return SIZE_MAX;
	}
	return i;
}

/* The program word names the system's program: a bare name, or a path in
 * a system bin directory. */
static int system_program(const char *w)
{
	static const char *const dirs[] = { "/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/",
		                                "/usr/sbin/", NULL };
	if (!strchr(w, '/'))
		return 1;
	for (size_t i = 0; dirs[i]; i++) {
		size_t n = strlen(dirs[i]);
		if (strncmp(w, dirs[i], n) == 0 && w[n] && !strchr(w + n, '/'))
			return 1;
	}
	return 0;
}

static int builtin_readonly(const char *prog, char *const *a, size_t n)
{
	size_t sub = strcmp(prog, "git") == 0 ? git_subcommand(a, n) : 0;

	if (sub == SIZE_MAX)
		return 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(ro_table); i++) {
		const struct ro_entry *e = &ro_table[i];
		if (strcmp(e->prog, prog) != 0)
			continue;
		if (!e->sub)
			return !e->cond || e->cond(a, n);
		if (sub < n && strcmp(a[sub], e->sub) == 0)
			return !e->cond || e->cond(a + sub + 1, n - sub - 1);
	}
	return 0;
}

/* Does the config entry ("prog word ...") cover argv? */
static int extra_covers(const char *entry, char *const *argv, size_t argc)
{
	const char *s = entry + strspn(entry, " \t");
	size_t k = 0;

	while (*s) {
		size_t n = strcspn(s, " \t");
		if (k >= argc)
			return 0;
		const char *w = k == 0 && !memchr(s, '/', n) ? tgi_shell_basename(argv[0]) : argv[k];
		if (k == 0 && !memchr(s, '/', n) && !system_program(argv[0]))
			return 0;
		if (strlen(w) != n || strncmp(w, s, n) != 0)
			return 0;
		k++;
		s += n;
		s += strspn(s, " \t");
	}
	return k > 0;
}

/* Output redirections go nowhere but /dev/null, the standard streams or
 * another fd. */
static int redir_readonly(const tgi_redir *r)
{
	static const char *const writes[] = { ">", ">>", ">|", "&>", "&>>", "<>", NULL };
	static const char *const sinks[] = { "/dev/null", "/dev/stdout", "/dev/stderr", NULL };
	const char *t = r->target ? r->target : "";

	if (strcmp(r->op, ">&") == 0)
		return (t[0] && t[strspn(t, "0123456789")] == '\0') || strcmp(t, "-") == 0 ||
		       in_list(t, sinks);
	if (in_list(r->op, writes))
		return in_list(t, sinks);
	return 1; /* <, <&, <<<; a here-doc makes the command opaque */
}

static int cmd_readonly(const tgi_cmd *cmd, const tgi_strv *extra, int replace)
{
	size_t p;

	if ((cmd->flags & TGI_CMD_OPAQUE) || cmd->nassigns > 0 || cmd->argc == 0)
		return 0;
	for (size_t i = 0; i < cmd->nredirs; i++)
		if (!redir_readonly(&cmd->redirs[i]))
			return 0;
	/* a wrapper alone (`env`) is judged as itself; around a program, never */
	p = tgi_shell_program(cmd);
	if (p != 0 && p < cmd->argc)
		return 0;
	for (size_t i = 0; extra && i < extra->n; i++)
		if (extra->v[i] && extra_covers(extra->v[i], cmd->argv, cmd->argc))
			return 1;
	if (replace || !system_program(cmd->argv[0]))
		return 0;
	return builtin_readonly(tgi_shell_basename(cmd->argv[0]), cmd->argv + 1, cmd->argc - 1);
}

int tgi_shell_reads_only(const tgi_cmd *cmd, size_t from, const tgi_strv *extra, int replace)
{
	if (!cmd || from >= cmd->argc)
		return 0;
	for (size_t i = 0; extra && i < extra->n; i++)
		if (extra->v[i] && extra_covers(extra->v[i], cmd->argv + from, cmd->argc - from))
			return 1;
	if (replace || !system_program(cmd->argv[from]))
		return 0;
	return builtin_readonly(tgi_shell_basename(cmd->argv[from]), cmd->argv + from + 1,
	                        cmd->argc - from - 1);
}

int tgi_shell_readonly(const tgi_cmdline *cl, const tgi_strv *extra, int replace)
{
	if (!cl || cl->n == 0)
		return 0;
	for (size_t i = 0; i < cl->n; i++)
		if (!cmd_readonly(&cl->v[i], extra, replace))
			return 0;
	return 1;
}

/* ---- what a read-only command reads */

/*
 * How a program of the list names the files it reads: the short options
 * that take a value (the rest of their cluster, else the next word), the
 * long ones that take one as a separate word, the options whose value is
 * itself a file read (grep -f), how many leading operands are not files
 * (grep's pattern, sed's script), and whether it reads what lies below a
 * directory operand (always, or with one of rec_short / rec_long).  What
 * it reads when it names no file: nothing (stdin) or "." (dot).
 */
static const struct ro_args {
	const char *prog;
	const char *vals;        /* short options with a value */
	const char *file_vals;   /* of those, the ones whose value is a file read */
	const char *const *lvals;/* long options with a separate value */
	int         skip;        /* leading operands that are not files */
	int         recursive;   /* 1: always; 0: with rec_short/rec_long */
	const char *rec_short;
	const char *const *rec_long;
	int         dot;         /* with no file operand it reads "." */
	int         none;        /* it names no files at all */
} ro_args[] = {
	{ "cat", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "tac", "bs", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "nl", "bdfhilnsvw", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "head", "nc", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "tail", "ncs", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "wc", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "grep", "efmABCdD", "f", (const char *const[]){ "--regexp", "--file", "--max-count",
	  "--after-context", "--before-context", "--context", "--directories", "--devices",
	  "--label", NULL }, 1, 0, "rR", (const char *const[]){ "--recursive",
	  "--dereference-recursive", "--directories=recurse", "--directories=r", NULL }, 1, 0 },
	{ "egrep", "efmABCdD", "f", NULL, 1, 0, "rR", (const char *const[]){ "--recursive", NULL }, 1, 0 },
	{ "fgrep", "efmABCdD", "f", NULL, 1, 0, "rR", (const char *const[]){ "--recursive", NULL }, 1, 0 },
	{ "rg", "ABCEMTefgjmrtd", "f", (const char *const[]){ "--regexp", "--file", "--glob",
	  "--iglob", "--type", "--type-not", "--max-count", "--max-depth", "--context",
	  "--after-context", "--before-context", "--encoding", "--replace", NULL }, 1, 1, NULL,
	  NULL, 1, 0 },
	{ "ag", "ABCGgm", NULL, NULL, 1, 1, NULL, NULL, 1, 0 },
	{ "du", "dBtX", "X", NULL, 0, 1, NULL, NULL, 1, 0 },
	{ "file", "emfFP", "f", NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "stat", "c", NULL, (const char *const[]){ "--format", "--printf", NULL }, 0, 0, NULL,
	  NULL, 0, 0 },
	{ "tree", "LPIHT", NULL, NULL, 0, 1, NULL, NULL, 1, 0 },
	{ "ls", "IwT", NULL, (const char *const[]){ "--ignore", "--hide", "--width", NULL }, 0,
	  0, "R", (const char *const[]){ "--recursive", NULL }, 1, 0 },
	{ "sort", "ktST", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "uniq", "fsw", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "cut", "dfcb", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "diff", "xXIFCUL", "X", NULL, 0, 0, "r", (const char *const[]){ "--recursive", NULL },
	  0, 0 },
	{ "cmp", "in", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "md5sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "sha1sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "sha224sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "sha256sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "sha384sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "sha512sum", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "b2sum", "l", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "cksum", "a", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "readlink", "", NULL, NULL, 0, 0, NULL, NULL, 0, 0 },
	{ "realpath", "", NULL, (const char *const[]){ "--relative-to", "--relative-base", NULL },
	  0, 0, NULL, NULL, 0, 0 },
	{ "tr", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "echo", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "printf", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "pwd", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "which", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "whoami", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "id", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "date", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "uname", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "env", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "printenv", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "df", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "basename", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "dirname", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "test", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "[", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "true", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
	{ "false", "", NULL, NULL, 0, 0, NULL, NULL, 0, 1 },
};

static void push_word(tgi_strv *out, const char *w)
{
	tgi_strv_push(out, tgi_strdup(w));
}

/* sed: the script is the first operand unless -e/-f/--expression gave it;
 * the rest are files. */
static void sed_reads(char *const *a, size_t n, tgi_strv *out)
{
	int given = 0, opts = 1;
	size_t ops = 0;
	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (opts && !strcmp(w, "--")) {
			opts = 0;
			continue;
		}
		if (opts && is_option(w)) {
			if (!strncmp(w, "--expression", 12) || !strncmp(w, "--file", 6)) {
				given = 1;
				i += strchr(w, '=') == NULL;
			} else if (w[1] != '-') {
				for (const char *q = w + 1; *q; q++)
					if (*q == 'e' || *q == 'f' || *q == 'l') {
						given |= *q != 'l';
						if (*q == 'f' && (q[1] || i + 1 < n))
							push_word(out, q[1] ? q + 1 : a[i + 1]);
						i += !q[1];
						break;
					}
			}
			continue;
		}
		if (ops++ == 0 && !given)
			continue;
		push_word(out, w);
	}
}

/* find: the starting points before the first expression word (default
 * "."), and the files its tests read (-newer F and the like). */
static void find_reads(char *const *a, size_t n, tgi_strv *out)
{
	static const char *const file_tests[] = { "-newer", "-anewer", "-cnewer", "-samefile",
		                                      "-files0-from", NULL };
	size_t i = 0, starts = 0;
	while (i < n && (!strcmp(a[i], "-H") || !strcmp(a[i], "-L") || !strcmp(a[i], "-P") ||
	                 !strncmp(a[i], "-D", 2) || !strncmp(a[i], "-O", 2)))
		i++;
	for (; i < n && a[i][0] != '-' && strcmp(a[i], "(") && strcmp(a[i], "!"); i++, starts++)
		push_word(out, a[i]);
	if (!starts)
		push_word(out, ".");
	for (; i + 1 < n; i++)
		if (in_list(a[i], file_tests))
			push_word(out, a[++i]);
}

/* git: every word after the subcommand that is not an option; REV:PATH
 * gives PATH (what `git show HEAD:.env` prints is .env as committed). */
static void git_reads(char *const *a, size_t n, tgi_strv *out)
{
	size_t sub = git_subcommand(a, n);
	if (sub == SIZE_MAX || sub >= n)
		return;
	int opts = 1;
	for (size_t i = sub + 1; i < n; i++) {
		const char *w = a[i];
		if (opts && !strcmp(w, "--")) {
			opts = 0;
			continue;
		}
		if (opts && is_option(w))
			continue;
		const char *colon = strchr(w, ':');
		push_word(out, colon ? colon + 1 : w);
	}
}

/* A generic reader (a config entry): every word not an option. */
static void generic_reads(char *const *a, size_t n, tgi_strv *out)
{
	int opts = 1;
	for (size_t i = 0; i < n; i++) {
		if (opts && !strcmp(a[i], "--"))
			opts = 0;
		else if (!(opts && is_option(a[i])))
			push_word(out, a[i]);
	}
}

static int rec_option(const struct ro_args *r, char *const *a, size_t n)
{
	if (r->recursive)
		return 1;
	return (r->rec_short || r->rec_long) &&
	       has_any(a, n, r->rec_short ? r->rec_short : "", r->vals, r->rec_long);
}

int tgi_shell_read_paths(const tgi_cmd *cmd, size_t from, tgi_strv *out, int *recursive)
{
	*recursive = 0;
	for (size_t i = 0; i < cmd->nredirs; i++)
		if ((!strcmp(cmd->redirs[i].op, "<") || !strcmp(cmd->redirs[i].op, "<>")) &&
		    cmd->redirs[i].target)
			push_word(out, cmd->redirs[i].target);
	if (from >= cmd->argc)
		return 0;
	const char *prog = tgi_shell_basename(cmd->argv[from]);
	char *const *a = cmd->argv + from + 1;
	size_t n = cmd->argc - from - 1;

	if (!strcmp(prog, "cd"))
		return 0;
	if (!strcmp(prog, "sed")) {
		sed_reads(a, n, out);
		return 0;
	}
	if (!strcmp(prog, "find")) {
		find_reads(a, n, out);
		*recursive = 1;
		return 0;
	}
	if (!strcmp(prog, "git")) {
		git_reads(a, n, out);
		return 0;
	}
	const struct ro_args *r = NULL;
	for (size_t i = 0; i < TGI_ARRAY_LEN(ro_args) && !r; i++)
		if (!strcmp(ro_args[i].prog, prog))
			r = &ro_args[i];
	if (!r) {
		generic_reads(a, n, out);
		return 1;
	}
	if (r->none)
		return 0;
	int opts = 1, given = 0;
	size_t ops = 0, files = 0;
	for (size_t i = 0; i < n; i++) {
		const char *w = a[i];
		if (opts && !strcmp(w, "--")) {
			opts = 0;
			continue;
		}
		if (opts && is_option(w)) {
			if (w[1] == '-') {
				const char *eq = strchr(w, '=');
				int takes = r->lvals && !eq && in_list(w, r->lvals);
				if (takes && i + 1 < n) {
					if (!strcmp(w, "--file") || !strcmp(w, "--exclude-from"))
						push_word(out, a[i + 1]);
					given |= !strcmp(w, "--regexp") || !strcmp(w, "--file");
					i++;
				} else if (eq && (!strncmp(w, "--file=", 7) || !strncmp(w, "--regexp=", 9))) {
					if (w[2] == 'f')
						push_word(out, eq + 1);
					given = 1;
				}
				continue;
			}
			for (const char *q = w + 1; *q; q++)
				if (strchr(r->vals, *q)) {
					const char *v = q[1] ? q + 1 : i + 1 < n ? a[i + 1] : NULL;
					if (v && r->file_vals && strchr(r->file_vals, *q))
						push_word(out, v);
					given |= r->skip && (*q == 'e' || *q == 'f');
					i += !q[1];
					break;
				}
			continue;
		}
		if (ops++ < (size_t)r->skip && !given)
			continue;
		push_word(out, w);
		files++;
	}
	*recursive = rec_option(r, a, n);
	if (!files && r->dot && (*recursive || !strcmp(prog, "ls")))
		push_word(out, ".");
	return 0;
}
