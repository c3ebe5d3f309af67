/*
 * shell.c — command lines as policy sees them (shell.h): a POSIX shell
 * tokeniser, the split into simple commands, normalisation, the unwrapping
 * of `sh -c` wrappers and the peeling of program wrappers.
 *
 * A line is read the way a shell reads it, as far as the shape of its
 * commands goes.  Quotes are removed (single quotes literal, double quotes
 * with their five escapes, backslash outside quotes, $'…' ANSI-C strings
 * decoded), backslash-newline is joined except inside single quotes,
 * comments are dropped, and the line is cut into simple commands at `&&`,
 * `||`, `;`, `&`, `|`, `|&`, newlines, parentheses and the reserved words
 * of compound commands (if … fi, while/until … do … done, { … },
 * function definitions), whose bodies are judged as if they ran.  `case`
 * is not supported: its `;;` is an error.
 *
 * Words are not expanded: `$HOME`, `${X}`, `~` and globs stay as written
 * (the floor reads them), with three exceptions that would otherwise hide
 * a command: an unquoted `$IFS` or `${IFS…}` breaks the word in two, the
 * positional parameters of the line (`$1`, `$@`, …) are empty, and each
 * word is NFKC-normalised (invalid UTF-8 is kept byte for byte).
 *
 * What cannot be judged makes its command opaque, with a phrase: command,
 * process and arithmetic substitution, `${…}` with an operator, eval, an
 * array assignment, a program name that is an expansion or a brace
 * expansion, `env -S`, a shell or interpreter reading its script from a
 * here-doc, a here-string or a pipe, a here-doc whose body substitutes
 * commands, a `sh -c` whose script is not a literal.  The text inside a
 * substitution runs too: it is split as well and its simple commands are
 * added before the one that holds it.
 *
 * `sh -c SCRIPT` (sh, bash, dash, zsh, ksh, ash, mksh, rbash) with a
 * literal SCRIPT is replaced by SCRIPT's simple commands, each prefixed
 * with the wrappers that ran the shell (`sudo`, `timeout 5`, …) and given
 * the shell's redirections and its pipe and background flags.
 *
 * Limits: TGI_SHELL_MAX bytes in, TGI_SHELL_MAX_CMDS commands out,
 * NORM_MAX bytes of normalised words out, MAX_UNWRAP nested wrappers,
 * MAX_LEVEL nested parses, MAX_NEST nested quotes inside one substitution.
 *
 * Owns: the grammar, normalisation and the wrapper table.  Must not:
 * decide (floor.c, readonly.c, execpolicy.c, rules.c and decide.c do),
 * read the environment, or run anything.
 */
#include "policy/shell.h"
#include "util/util.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_UNWRAP 4                          /* sh -c inside sh -c */
#define MAX_LEVEL  8                          /* nested parses: unwraps and substitutions */
#define MAX_NEST   64                         /* quotes and substitutions inside one */
#define NORM_MAX   (4 * (size_t)TGI_SHELL_MAX) /* bytes of every word once normalised */
#define FD_DIGITS  9

/* ---- small helpers ---- */

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int all_digits_n(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Is s[0..n) one of the NULL-terminated list? */
static int in_list(const char *const *list, const char *s, size_t n)
{
	for (; list && *list; list++)
		if (strlen(*list) == n && memcmp(*list, s, n) == 0)
			return 1;
	return 0;
}

/* Length of a leading "NAME=" or "NAME+=", or 0. */
static size_t assignment_len(const char *s, size_t n)
{
	size_t i = 1;
	if (!n || !is_name_start(s[0]))
		return 0;
	while (i < n && is_name_char(s[i]))
		i++;
	if (i < n && s[i] == '=')
		return i + 1;
	if (i + 1 < n && s[i] == '+' && s[i + 1] == '=')
		return i + 2;
	return 0;
}

static int is_assignment(const char *word)
{
	return assignment_len(word, strlen(word)) > 0;
}

static int errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- commands ---- */

static void cmd_free(tgi_cmd *c)
{
	for (size_t i = 0; c->argv && i < c->argc; i++)
		free(c->argv[i]);
	for (size_t i = 0; c->assigns && i < c->nassigns; i++)
		free(c->assigns[i]);
	for (size_t i = 0; c->redirs && i < c->nredirs; i++) {
		free(c->redirs[i].target);
		free(c->redirs[i].body);
	}
	free(c->argv);
	free(c->assigns);
	free(c->redirs);
	free(c->why);
	memset(c, 0, sizeof *c);
}

static size_t cmd_size(const tgi_cmd *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->argc; i++)
		n += c->argv[i] ? strlen(c->argv[i]) + 1 : 0;
	for (size_t i = 0; i < c->nassigns; i++)
		n += c->assigns[i] ? strlen(c->assigns[i]) + 1 : 0;
	for (size_t i = 0; i < c->nredirs; i++) {
		n += c->redirs[i].target ? strlen(c->redirs[i].target) + 1 : 0;
		n += c->redirs[i].body ? strlen(c->redirs[i].body) + 1 : 0;
	}
	return n;
}

/* Mark opaque with a phrase; the first reason stays. */
static void set_opaque(unsigned *flags, char **why, const char *what)
{
	if (*flags & TGI_CMD_OPAQUE)
		return;
	*flags |= TGI_CMD_OPAQUE;
	*why = tgi_strdup(what);
}

static void cmd_opaque(tgi_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_opaque(tgi_cmd *c, const char *fmt, ...)
{
	char why[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	set_opaque(&c->flags, &c->why, why);
}

void tgi_cmdline_free(tgi_cmdline *cl)
{
	if (!cl)
		return;
	for (size_t i = 0; i < cl->n; i++)
		cmd_free(&cl->v[i]);
	free(cl->v);
	for (size_t i = 0; i < cl->nfuncs; i++) {
		free(cl->funcs[i].name);
		free(cl->funcs[i].body);
	}
	free(cl->funcs);
	free(cl->src);
	for (size_t i = 0; cl->srcv && i < cl->srcc; i++)
		free(cl->srcv[i]);
	free(cl->srcv);
	memset(cl, 0, sizeof *cl);
}

const char *tgi_shell_basename(const char *word)
{
	const char *slash;
	if (!word)
		return "";
	slash = strrchr(word, '/');
	return slash ? slash + 1 : word;
}

/* ---- wrappers (tgi_shell_program) ---- */

enum {
	WR_ASSIGNS = 1u << 0, /* NAME=value words before the program (env, sudo) */
	WR_NUMERIC = 1u << 1, /* -N is an option (nice -10) */
	WR_DASH    = 1u << 2, /* a lone "-" is an option (env -) */
};

/* A program that runs another one, and how its options read. */
typedef struct wrapper {
	const char        *name;
	const char        *valued;      /* short options taking a value, attached or the next word */
	const char        *attached;    /* short options whose value can only be attached (-i[R]) */
	const char *const *long_valued; /* long options taking the next word when not given "=" */
	const char        *stop;        /* short options after which it runs no program */
	const char *const *long_stop;
	unsigned char      operands;    /* operands before the program (timeout DURATION) */
	unsigned char      flags;       /* WR_* */
} wrapper;

static const char *const sudo_long[] = { "user", "group", "close-from", "host", "prompt", "role",
	                                 "type", "other-user", "chdir", "chroot", "command-timeout",
	                                 NULL };
static const char *const sudo_stop[] = { "list", "version", "remove-timestamp", NULL };
static const char *const env_long[] = { "unset", "chdir", "split-string", NULL };
static const char *const nice_long[] = { "adjustment", NULL };
static const char *const ionice_long[] = { "class", "classdata", NULL };
static const char *const pid_stop[] = { "pid", "pgid", "uid", "max", NULL };
static const char *const time_long[] = { "format", "output", NULL };
static const char *const timeout_long[] = { "kill-after", "signal", NULL };
static const char *const stdbuf_long[] = { "input", "output", "error", NULL };
static const char *const chrt_long[] = { "sched-runtime", "sched-period", "sched-deadline", NULL };
static const char *const xargs_long[] = { "arg-file", "delimiter", "max-args", "max-procs",
	                                  "max-chars", "process-slot-var", NULL };

static const wrapper wrappers[] = {
	{ "sudo", "ugChprtUDRT", "", sudo_long, "lVK", sudo_stop, 0, WR_ASSIGNS },
	{ "doas", "ua", "", NULL, "C", NULL, 0, 0 },
	{ "env", "uCS", "", env_long, "", NULL, 0, WR_ASSIGNS | WR_DASH },
	{ "nice", "n", "", nice_long, "", NULL, 0, WR_NUMERIC },
	{ "ionice", "cn", "", ionice_long, "pPu", pid_stop, 0, 0 },
	{ "nohup", "", "", NULL, "", NULL, 0, 0 },
	{ "time", "fo", "", time_long, "", NULL, 0, 0 },
	{ "command", "", "", NULL, "vV", NULL, 0, 0 },
	{ "exec", "a", "", NULL, "", NULL, 0, 0 },
	{ "builtin", "", "", NULL, "", NULL, 0, 0 },
	{ "timeout", "ks", "", timeout_long, "", NULL, 1, 0 },
	{ "stdbuf", "ioe", "", stdbuf_long, "", NULL, 0, 0 },
	{ "chrt", "TPD", "", chrt_long, "pm", pid_stop, 1, 0 },
	{ "taskset", "", "", NULL, "p", pid_stop, 1, 0 },
	{ "setsid", "", "", NULL, "", NULL, 0, 0 },
	{ "xargs", "IaLnPsdE", "eil", xargs_long, "", NULL, 0, 0 },
};

static const wrapper *find_wrapper(const char *name)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(wrappers); i++)
		if (strcmp(wrappers[i].name, name) == 0)
			return &wrappers[i];
	return NULL;
}

/* The index after wrapper w at argv[i] and its options and operands, or
 * SIZE_MAX when the options say it runs nothing (command -v, taskset -p). */
static size_t peel(const wrapper *w, char *const *argv, size_t argc, size_t i)
{
	for (i++; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !a[1]) {
			if ((w->flags & WR_DASH) && a[0] == '-')
				continue;
			if ((w->flags & WR_ASSIGNS) && is_assignment(a))
				continue;
			break;
		}
		if (a[1] == '-') {
			const char *o = a + 2;
			size_t n = strcspn(o, "=");
			if (!*o) {
				i++;
				break;
			}
			if (in_list(w->long_stop, o, n))
				return SIZE_MAX;
			if (!o[n] && in_list(w->long_valued, o, n))
				i++;
			continue;
		}
		if ((w->flags & WR_NUMERIC) && all_digits(a + 1))
			continue;
		for (const char *o = a + 1; *o; o++) {
			if (strchr(w->stop, *o))
				return SIZE_MAX;
			if (strchr(w->valued, *o)) {
				i += !o[1];
				break;
			}
			if (strchr(w->attached, *o))
				break;
		}
	}
	while ((w->flags & WR_ASSIGNS) && i < argc && is_assignment(argv[i]))
		i++;
	return i >= argc ? argc : i + w->operands;
}

size_t tgi_shell_program(const tgi_cmd *cmd)
{
	size_t i = 0;
	if (!cmd || !cmd->argv)
		return cmd ? cmd->argc : 0;
	while (i < cmd->argc) {
		const wrapper *w = find_wrapper(tgi_shell_basename(cmd->argv[i]));
		size_t next;
		if (!w)
			return i;
		next = peel(w, cmd->argv, cmd->argc, i);
		if (next >= cmd->argc)
			return cmd->argc;
		i = next;
	}
	return cmd->argc;
}

/* ---- shells and interpreters ---- */

/* A program that reads a script: which options give the script inline and
 * which take a value (the next word when last in a cluster). */
typedef struct interp {
	const char *name;
	int         prefix; /* python3.12 is python */
	int         shell;  /* sh -c is unwrapped; +o takes a value; -s reads stdin */
	const char *inline_opts;
	const char *valued;
	int         user;   /* its operands name a user, not a script (su) */
} interp;

static const interp interps[] = {
	{ "sh", 0, 1, "c", "oO", 0 },
	{ "bash", 0, 1, "c", "oO", 0 },
	{ "dash", 0, 1, "c", "oO", 0 },
	{ "zsh", 0, 1, "c", "oO", 0 },
	{ "ksh", 0, 1, "c", "oO", 0 },
	{ "ash", 0, 1, "c", "oO", 0 },
	{ "mksh", 0, 1, "c", "oO", 0 },
	{ "rbash", 0, 1, "c", "oO", 0 },
	{ "python", 1, 0, "cm", "WXQ", 0 },
	{ "perl", 0, 0, "eE", "", 0 },
	{ "ruby", 0, 0, "e", "Ir", 0 },
	{ "node", 0, 0, "ep", "r", 0 },
	{ "nodejs", 0, 0, "ep", "r", 0 },
	{ "su", 0, 0, "c", "gGsw", 1 },
	{ "runuser", 0, 0, "c", "gGsuw", 1 },
};

/* Shells whose -c script this file cannot read. */
static const char *const foreign_shells[] = { "fish", "csh", "tcsh", "elvish", "nu", "xonsh", NULL };

static const char *const long_inline[] = { "eval", "print", "command", NULL };
static const char *const long_valued[] = { "rcfile", "init-file", "require", "import", "loader",
	                                   NULL };
static const char *const shell_long[] = { "login", "noprofile", "norc", "posix", "restricted",
	                                  "verbose", "noediting", NULL };

static const interp *find_interp(const char *name)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(interps); i++) {
		size_t n = strlen(interps[i].name);
		if (interps[i].prefix ? strncmp(name, interps[i].name, n) == 0
		                      : strcmp(name, interps[i].name) == 0)
			return &interps[i];
	}
	return NULL;
}

/* Does the interpreter at argv[prog] read its script from stdin (no inline
 * script, no script file, or "-")? */
static int reads_stdin(const tgi_cmd *c, size_t prog, const interp *in)
{
	for (size_t i = prog + 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		if (in->user && (a[0] != '-' || !a[1] || strcmp(a, "--") == 0))
			continue; /* su - root: a login shell for a user */
		if (strcmp(a, "-") == 0)
			return 1;
		if (strcmp(a, "--") == 0)
			return i + 1 >= c->argc;
		if (a[0] == '-' && a[1] == '-') {
			const char *o = a + 2;
			size_t n = strcspn(o, "=");
			if (in_list(long_inline, o, n))
				return 0;
			if (!o[n] && in_list(long_valued, o, n))
				i++;
			continue;
		}
		if ((a[0] == '-' || (in->shell && a[0] == '+')) && a[1]) {
			for (const char *o = a + 1; *o; o++) {
				if (strchr(in->inline_opts, *o))
					return 0;
				if (in->shell && *o == 's')
					return 1;
				if (strchr(in->valued, *o)) {
					i += !o[1];
					break;
				}
			}
			continue;
		}
		return 0; /* a script file */
	}
	return 1;
}

/*
 * A shell's options: 0 when it has no -c, 1 with *si at its script (may be
 * argc: a -c with no script runs nothing), -1 for a -c among options this
 * file does not know.
 */
static int shell_script(const tgi_cmd *c, size_t prog, size_t *si)
{
	int has_c = 0, bad = 0;
	size_t i;
	for (i = prog + 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		int valued = 0;
		if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
			i++;
			break;
		}
		if (a[0] == '-' && a[1] == '-') {
			const char *o = a + 2;
			size_t n = strcspn(o, "=");
			if (!o[n] && in_list(long_valued, o, n))
				i++;
			else if (!in_list(shell_long, o, n))
				bad = 1;
			continue;
		}
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break;
		for (const char *o = a + 1; *o; o++) {
			if (*o == 'c')
				has_c = 1;
			else if (*o == 'o' || *o == 'O')
				valued = 1;
			else if (!is_name_start(*o) || *o == '_')
				bad = 1;
		}
		i += valued;
	}
	*si = i;
	if (!has_c)
		return 0;
	return bad ? -1 : 1;
}

/* Does a foreign shell at argv[prog] get a -c script? */
static int foreign_script(const tgi_cmd *c, size_t prog)
{
	for (size_t i = prog + 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		if (a[0] != '-')
			return 0;
		if (a[1] != '-' && strchr(a + 1, 'c'))
			return 1;
		if (strcmp(a, "--command") == 0 || strncmp(a, "--command=", 10) == 0)
			return 1;
	}
	return 0;
}

/* Is the command `sudo -s` or `sudo -i` (or doas -s) with nothing to run:
 * a shell that reads its commands from stdin? */
static int sudo_shell(const tgi_cmd *c, size_t prog)
{
	if (prog < c->argc)
		return 0;
	for (size_t i = 0; i < c->argc; i++) {
		const char *name = tgi_shell_basename(c->argv[i]);
		if (strcmp(name, "sudo") != 0 && strcmp(name, "doas") != 0)
			continue;
		for (size_t j = i + 1; j < c->argc && c->argv[j][0] == '-'; j++) {
			const char *a = c->argv[j];
			if (strcmp(a, "--shell") == 0 || strcmp(a, "--login") == 0)
				return 1;
			for (const char *o = a + 1; a[1] != '-' && *o; o++) {
				if (*o == 's' || *o == 'i')
					return 1;
				if (strchr("ugChprtUDRTa", *o)) {
					j += !o[1];
					break;
				}
			}
		}
	}
	return 0;
}

/* Is xargs among the wrappers before prog (it appends words from stdin)? */
static int via_xargs(const tgi_cmd *c, size_t prog)
{
	for (size_t i = 0; i < prog && i < c->argc; i++)
		if (strcmp(tgi_shell_basename(c->argv[i]), "xargs") == 0)
			return 1;
	return 0;
}

/* Does an xargs among the wrappers before prog replace a string in the
 * command with what it reads (-I R, -i, --replace)? */
static int xargs_fills(const tgi_cmd *c, size_t prog)
{
	for (size_t i = 0; i < prog && i < c->argc; i++) {
		if (strcmp(tgi_shell_basename(c->argv[i]), "xargs") != 0)
			continue;
		for (size_t j = i + 1; j < prog; j++) {
			const char *a = c->argv[j];
			if (a[0] != '-' || !strcmp(a, "--"))
				break;
			if (!strncmp(a, "--replace", 9) || (a[1] != '-' && strpbrk(a + 1, "Ii")))
				return 1;
		}
	}
	return 0;
}

/* Does an `env` among the wrappers before prog get -S / --split-string? */
static int env_split(const tgi_cmd *c, size_t prog)
{
	for (size_t i = 0; i < prog && i < c->argc; i++) {
		if (strcmp(tgi_shell_basename(c->argv[i]), "env") != 0)
			continue;
		for (size_t j = i + 1; j < prog; j++) {
			const char *a = c->argv[j];
			if (a[0] != '-')
				break;
			if (strncmp(a, "--split-string", 14) == 0 || (a[1] != '-' && strchr(a + 1, 'S')))
				return 1;
		}
	}
	return 0;
}

/* ---- the parser's state ---- */

enum {
	F_QUOTED = 1u << 0, /* some part was quoted or escaped */
	F_PARAM  = 1u << 1, /* holds a parameter expansion, kept as text */
	F_SUBST  = 1u << 2, /* holds a command, process or arithmetic substitution */
	F_BRACE  = 1u << 3, /* holds an unquoted brace expansion ({a,b}, {1..3}) */
	F_ARGV   = 1u << 4, /* taken as it is (the argv form): no expansion happens */
};

/* One field being read: a word, or a part of one that $IFS cut. */
typedef struct field {
	tgi_buf  text;
	unsigned flags;
	int      present;  /* a character or a quoted part: exists even when empty */
	int      overflow;
	unsigned braces;   /* unquoted '{' not yet closed */
	int      bsep;     /* an unquoted ',' or ".." after one */
	int      lastdot;
} field;

/* Words with flags (F_*), NULL-terminated. */
typedef struct wvec {
	char    **v;
	unsigned *fl;
	size_t    n, cap;
} wvec;

/* The simple command being read: raw words (quotes removed, not normalised). */
typedef struct builder {
	wvec       argv, assigns;
	tgi_redir *redirs;
	size_t     nredirs, capredirs;
	unsigned   flags;
	char      *why;
	int        any; /* a word (even one that expanded to nothing), assignment or redirection */
} builder;

typedef struct heredoc {
	char  *delim;        /* quotes removed */
	int    strip;        /* <<- */
	int    quoted;       /* the body is not expanded */
	size_t first, last;  /* the commands it feeds, in the output */
} heredoc;

/* The output, shared by nested parsers. */
typedef struct sink {
	tgi_cmdline *cl;
	size_t       cap;
	size_t       used; /* bytes of words in cl */
	unsigned     subshells; /* ids given to `( … )` so far */
} sink;

#define SUB_MAX 32   /* `( … )` nested in one another */
#define FRAMES_MAX 64 /* compound commands and their parts open at once, for evaluation */
#define DOMS_MAX 256  /* assignments remembered as dominating later uses */
#define FDEFS_MAX 16  /* function bodies being read inside one another */

enum { ST_START, ST_NEED, ST_CMD, ST_CLOSED };
enum { WM_ARG, WM_ASSIGN, WM_DELIM };
/* How the command being read joins the one before it. */
enum { CONN_NONE, CONN_AND, CONN_OR, CONN_PIPE };

/*
 * A compound command (construct: if, while, until, for, select, { }, ( ))
 * or one of its parts (then, elif, else, do): what an assignment inside
 * it dominates ends with it.
 */
typedef struct frame {
	unsigned id;
	int      construct;
	size_t   fdef;       /* 1 + the index of the function body it opens, or 0 */
} frame;

/* An assignment that dominates later uses while its frame is open (strong:
 * it was the first command of its list) or while its `&&` chain lasts. */
typedef struct dom {
	char    *name;
	unsigned frame, chain;
	int      strong;
} dom;

typedef struct fdef {
	char  *name;
	size_t start;        /* byte offset of the body's first token */
} fdef;

typedef struct parser {
	const char      *s;          /* borrowed */
	size_t           len, pos;
	size_t           depth;      /* sh -c wrappers this text came out of */
	size_t           level;      /* nested parses */
	int              params_unknown;
	int              deep;       /* compound commands nested past FRAMES_MAX */
	/* from the sh -c wrapper this text came out of (borrowed) */
	char *const     *prefix;
	size_t           nprefix;
	const tgi_redir *iredirs;
	size_t           niredirs;
	char *const     *iassigns;   /* the wrapper's NAME=value: the script's environment */
	size_t           niassigns;
	unsigned         iflags;
	const char      *iwhy;       /* when iflags has TGI_CMD_OPAQUE */

	sink            *out;
	char            *err;
	size_t           errlen;
	int              fatal;      /* err is a limit, not a syntax error: pass it up */

	int              state;      /* ST_* */
	const char      *need_what;  /* the token a command must follow (ST_NEED) */
	size_t           need_at;
	int              pipe_next;
	size_t           parens, paren_at;
	unsigned         sub[SUB_MAX]; /* ids of the open subshells, innermost last */
	size_t           nsub, sub_over;
	builder          b;
	heredoc         *hd;
	size_t           nhd, caphd, hd_read, hd_owned;

	/* evaluation (tgi_shell_split_env; env NULL for a plain split) */
	const tgi_shell_env *env;
	char *const     *params;     /* bound positional parameters, when bound */
	size_t           nparams;
	int              bound;
	const char      *arg0;       /* $0 when bound (may be NULL) */
	size_t           ifrom;      /* the wrapper's `from`, for a script it ran */
	const struct parser *outer;  /* the text holding this substitution */
	/* compound commands, and the assignments that dominate */
	frame            fr[FRAMES_MAX];
	size_t           nfr, fr_over;
	unsigned         frame_ids;
	unsigned         nest;       /* constructs open */
	unsigned         cmd_nest;   /* constructs open when the current command began */
	unsigned         chain;      /* `&&` chain id: a new list or `||` starts another */
	int              conn;       /* CONN_*: before the command being read */
	int              ending_pipe;
	unsigned         pipe_nest;  /* constructs open at the last `|` */
	size_t           member_at[FRAMES_MAX]; /* where the current pipeline member began, per nest */
	size_t           pipe_from;
	int              member_pending;
	dom             *doms;
	size_t           ndoms, capdoms;
	/* functions: a name whose body comes next, bodies being read */
	char            *fn_pending;
	fdef             fdefs[FDEFS_MAX];
	size_t           nfdefs;
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
	if (p->err && p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err, p->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void wvec_push(wvec *w, char *s, unsigned fl)
{
	if (w->n + 1 >= w->cap) {
		w->cap = w->cap ? w->cap * 2 : 8;
		w->v = tgi_xrealloc(w->v, w->cap * sizeof *w->v);
		w->fl = tgi_xrealloc(w->fl, w->cap * sizeof *w->fl);
	}
	w->fl[w->n] = fl;
	w->v[w->n++] = s;
	w->v[w->n] = NULL;
}

static void wvec_free(wvec *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	free(w->fl);
	memset(w, 0, sizeof *w);
}

static void builder_redir(builder *b, int fd, const char *op, char *target)
{
	tgi_redir *r;
	if (b->nredirs == b->capredirs) {
		b->capredirs = b->capredirs ? b->capredirs * 2 : 4;
		b->redirs = tgi_xrealloc(b->redirs, b->capredirs * sizeof *b->redirs);
	}
	r = &b->redirs[b->nredirs++];
	memset(r, 0, sizeof *r);
	r->fd = fd;
	memcpy(r->op, op, strlen(op) + 1);
	r->target = target;
	b->any = 1;
}

static void builder_reset(builder *b)
{
	wvec_free(&b->argv);
	wvec_free(&b->assigns);
	for (size_t i = 0; i < b->nredirs; i++)
		free(b->redirs[i].target);
	free(b->redirs);
	free(b->why);
	memset(b, 0, sizeof *b);
}

static void opaque(parser *p, const char *what)
{
	set_opaque(&p->b.flags, &p->b.why, what);
}

static void parser_init(parser *p, sink *out, const char *s, size_t len, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	p->s = s;
	p->len = len;
	p->out = out;
	p->err = err;
	p->errlen = errlen;
}

static void parser_free(parser *p)
{
	builder_reset(&p->b);
	for (size_t i = 0; i < p->nhd; i++)
		free(p->hd[i].delim);
	free(p->hd);
	p->hd = NULL;
	p->nhd = 0;
	for (size_t i = 0; i < p->ndoms; i++)
		free(p->doms[i].name);
	free(p->doms);
	p->doms = NULL;
	p->ndoms = 0;
	for (size_t i = 0; i < p->nfdefs; i++)
		free(p->fdefs[i].name);
	p->nfdefs = 0;
	free(p->fn_pending);
	p->fn_pending = NULL;
}

/* ---- evaluation: compound commands and what dominates a use ---- */

static unsigned nest_slot(unsigned nest)
{
	return nest < FRAMES_MAX ? nest : FRAMES_MAX - 1;
}

static unsigned cur_frame(const parser *p)
{
	return p->nfr ? p->fr[p->nfr - 1].id : 0;
}

static int frame_open(const parser *p, unsigned id)
{
	if (id == 0)
		return 1;
	for (size_t i = 0; i < p->nfr; i++)
		if (p->fr[i].id == id)
			return 1;
	return 0;
}

static void frame_push(parser *p, int construct, size_t fd)
{
	if (p->deep || p->nfr == FRAMES_MAX) {
		p->deep = 1;
		return;
	}
	p->fr[p->nfr++] = (frame){ ++p->frame_ids, construct, fd };
}

/* A new list starts: no `&&` chain carries over. */
static void new_list(parser *p)
{
	p->conn = CONN_NONE;
	p->chain++;
}

/* A construct begins at byte at (if, while, until, for, select, {, ( ):
 * a pipeline member may start with it; a function body may be it. */
static void construct_open(parser *p, size_t at)
{
	size_t fd = 0;

	if (p->state != ST_CLOSED)
		p->member_at[nest_slot(p->nest)] = p->out->cl->n;
	if (p->fn_pending) {
		if (p->nfdefs < FDEFS_MAX) {
			p->fdefs[p->nfdefs] = (fdef){ p->fn_pending, at };
			fd = ++p->nfdefs;
		} else {
			free(p->fn_pending);
		}
		p->fn_pending = NULL;
	}
	frame_push(p, 1, fd);
	p->nest++;
	new_list(p);
}

/* then, do: a part whose assignments end with it; elif, else: the part
 * before ends first. */
static void part_open(parser *p, int swap)
{
	if (!p->deep && swap && p->nfr && !p->fr[p->nfr - 1].construct)
		p->nfr--;
	frame_push(p, 0, 0);
	new_list(p);
}

static void record_func(parser *p, fdef *d, size_t end);

/* fi, done, }, ): the parts and the construct end (and a function body
 * with them). */
static void construct_close(parser *p)
{
	if (p->nest)
		p->nest--;
	while (!p->deep && p->nfr && !p->fr[p->nfr - 1].construct)
		p->nfr--;
	if (!p->deep && p->nfr) {
		frame *f = &p->fr[--p->nfr];
		if (f->fdef && f->fdef == p->nfdefs) {
			fdef *d = &p->fdefs[--p->nfdefs];
			record_func(p, d, p->pos); /* takes d->name */
			d->name = NULL;
		}
	}
	new_list(p);
}

/* Does an assignment to name dominate a use here (in this text, or in
 * the text a substitution sits in)? */
static int dominated(const parser *p, const char *name)
{
	for (; p; p = p->outer) {
		if (p->deep)
			return 0;
		for (size_t i = p->ndoms; i-- > 0;) {
			const dom *d = &p->doms[i];
			if (strcmp(d->name, name) == 0 && frame_open(p, d->frame) &&
			    (d->strong || d->chain == p->chain))
				return 1;
		}
	}
	return 0;
}

static void dom_add(parser *p, const char *name, size_t n, int strong)
{
	if (p->deep || p->ndoms >= DOMS_MAX || n == 0 || n > 64)
		return;
	if (p->ndoms == p->capdoms) {
		p->capdoms = p->capdoms ? p->capdoms * 2 : 8;
		p->doms = tgi_xrealloc(p->doms, p->capdoms * sizeof *p->doms);
	}
	char *nm = tgi_xmalloc(n + 1);
	memcpy(nm, name, n);
	nm[n] = '\0';
	p->doms[p->ndoms++] = (dom){ nm, cur_frame(p), p->chain, strong };
}

/* The names a finished command assigns in the shell that runs it:
 * NAME=value alone, export/declare/typeset/local/readonly NAME=value,
 * for/select NAME, read NAME…, set -- (the positional parameters),
 * mapfile/readarray NAME, printf -v NAME. */
static void note_assignments(parser *p, unsigned flags)
{
	static const char *const declares[] = { "export", "declare", "typeset", "local", "readonly",
		                                 NULL };
	static const char *const positionals[] = { "1", "2", "3", "4", "5", "6", "7", "8", "9", "@",
		                                    "*", "#", NULL };
	const builder *b = &p->b;
	int piped_in = p->pipe_next && !(p->cmd_nest > p->pipe_nest);
	int alone = !piped_in && !p->ending_pipe && !(flags & TGI_CMD_BACKGROUND);
	int strong = alone && p->conn == CONN_NONE;
	const char *cmd;

	if (!alone || (!strong && p->conn != CONN_AND))
		return;
	if (!b->argv.n) {
		for (size_t i = 0; i < b->assigns.n; i++)
			dom_add(p, b->assigns.v[i], strcspn(b->assigns.v[i], "+="), strong);
		return;
	}
	cmd = b->argv.v[0];
	if (in_list(declares, cmd, strlen(cmd))) {
		for (size_t i = 1; i < b->argv.n; i++)
			if (assignment_len(b->argv.v[i], strlen(b->argv.v[i])))
				dom_add(p, b->argv.v[i], strcspn(b->argv.v[i], "+="), strong);
	} else if ((!strcmp(cmd, "for") || !strcmp(cmd, "select")) && b->argv.n > 1) {
		dom_add(p, b->argv.v[1], strlen(b->argv.v[1]), strong);
	} else if (!strcmp(cmd, "read") || !strcmp(cmd, "mapfile") || !strcmp(cmd, "readarray")) {
		int rd = !strcmp(cmd, "read");
		const char *vals = rd ? "dinNptu" : "dnOsuCc";
		for (size_t i = 1; i < b->argv.n; i++) {
			const char *a = b->argv.v[i];
			if (a[0] != '-' || !a[1]) {
				dom_add(p, a, strlen(a), strong);
				continue;
			}
			for (const char *q = a + 1; *q; q++) {
				if (*q == 'a' && rd) {
					const char *nm = q[1] ? q + 1 : i + 1 < b->argv.n ? b->argv.v[i + 1] : "";
					dom_add(p, nm, strlen(nm), strong);
					i += !q[1];
					break;
				}
				if (strchr(vals, *q)) {
					i += !q[1];
					break;
				}
			}
		}
	} else if (!strcmp(cmd, "printf") && b->argv.n > 2 && !strcmp(b->argv.v[1], "-v")) {
		dom_add(p, b->argv.v[2], strlen(b->argv.v[2]), strong);
	} else if (!strcmp(cmd, "set")) {
		for (size_t i = 1; i < b->argv.n; i++)
			if (!strcmp(b->argv.v[i], "--") || (b->argv.v[i][0] != '-' && b->argv.v[i][0] != '+')) {
				for (size_t k = 0; positionals[k]; k++)
					dom_add(p, positionals[k], strlen(positionals[k]), strong);
				break;
			}
	}
}

/* A function body read whole (d->name is taken). */
static void record_func(parser *p, fdef *d, size_t end)
{
	tgi_cmdline *cl = p->out->cl;
	size_t n = end > d->start ? end - d->start : 0;

	if (cl->nfuncs >= TGI_SHELL_MAX_FUNCS || n + strlen(d->name) + 2 > NORM_MAX - p->out->used) {
		free(d->name);
		return;
	}
	if (!(cl->nfuncs & (cl->nfuncs - 1)) || !cl->nfuncs)
		cl->funcs = tgi_xrealloc(cl->funcs, (cl->nfuncs ? cl->nfuncs * 2 : 1) * sizeof *cl->funcs);
	cl->funcs[cl->nfuncs].name = d->name;
	cl->funcs[cl->nfuncs].body = tgi_strndup(p->s + d->start, n);
	cl->nfuncs++;
	p->out->used += n + strlen(d->name) + 2;
}

/* The first token of a simple command: where it stands. */
static void begin_command(parser *p)
{
	p->cmd_nest = p->nest;
	if (p->state != ST_CLOSED)
		p->member_at[nest_slot(p->nest)] = p->out->cl->n;
	free(p->fn_pending); /* `f() cmd`: no compound body follows */
	p->fn_pending = NULL;
}

/* ---- output ---- */

/* Take c into the output. */
static int push_cmd(parser *p, tgi_cmd *c)
{
	sink *o = p->out;
	size_t size = cmd_size(c);
	if (o->cl->n >= TGI_SHELL_MAX_CMDS) {
		cmd_free(c);
		p->fatal = 1;
		return fail(p, "the command has more than %d simple commands", TGI_SHELL_MAX_CMDS);
	}
	if (size > NORM_MAX - o->used) {
		cmd_free(c);
		p->fatal = 1;
		return fail(p, "the command is longer than %zu bytes once normalised", NORM_MAX);
	}
	if (o->cl->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 4;
		o->cl->v = tgi_xrealloc(o->cl->v, o->cap * sizeof *o->cl->v);
	}
	o->cl->v[o->cl->n++] = *c;
	o->used += size;
	memset(c, 0, sizeof *c);
	return 0;
}

static void rollback(sink *o, size_t mark)
{
	while (o->cl->n > mark) {
		tgi_cmd *c = &o->cl->v[--o->cl->n];
		o->used -= cmd_size(c);
		cmd_free(c);
	}
}

/*
 * NFKC, run by run: each maximal run of valid UTF-8 is normalised, each
 * invalid byte kept as it is.  Returns a new string, or NULL (with a fatal
 * error) past NORM_MAX.
 */
static char *normalize(parser *p, const char *s)
{
	const utf8proc_option_t nfkc = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
	size_t n = strlen(s), i = 0;
	int bad = 0;
	tgi_buf out;

	tgi_buf_init(&out, NORM_MAX);
	while (i < n && !bad) {
		size_t j = i;
		int ascii = 1;
		while (j < n) {
			utf8proc_int32_t cp;
			utf8proc_ssize_t k;
			if ((unsigned char)s[j] < 0x80) {
				j++;
				continue;
			}
			k = utf8proc_iterate((const utf8proc_uint8_t *)s + j, (utf8proc_ssize_t)(n - j), &cp);
			if (k <= 0)
				break;
			ascii = 0;
			j += (size_t)k;
		}
		if (j > i) {
			utf8proc_uint8_t *d = NULL;
			utf8proc_ssize_t m = ascii ? -1
			                           : utf8proc_map((const utf8proc_uint8_t *)s + i,
			                                          (utf8proc_ssize_t)(j - i), &d, nfkc);
			bad = m >= 0 ? tgi_buf_append(&out, d, (size_t)m) : tgi_buf_append(&out, s + i, j - i);
			free(d);
			i = j;
		} else {
			bad = tgi_buf_append(&out, s + i, 1); /* not UTF-8: the byte as it is */
			i++;
		}
	}
	if (bad) {
		tgi_buf_free(&out);
		p->fatal = 1;
		fail(p, "the command is longer than %zu bytes once normalised", NORM_MAX);
		return NULL;
	}
	return tgi_buf_steal(&out);
}

/* ---- words ---- */

/* The fields one word became. */
typedef struct fieldv {
	char    **s;
	unsigned *fl;
	size_t    n, cap;
} fieldv;

static void fieldv_free(fieldv *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->s[i]);
	free(w->s);
	free(w->fl);
	memset(w, 0, sizeof *w);
}

static void field_init(field *f)
{
	memset(f, 0, sizeof *f);
	tgi_buf_init(&f->text, TGI_SHELL_MAX);
}

/* Append quoted (or otherwise literal) bytes. */
static void fput(field *f, const char *s, size_t n)
{
	if (tgi_buf_append(&f->text, s, n) < 0)
		f->overflow = 1;
	f->present = 1;
	f->lastdot = 0;
}

/* Append one character; an unquoted one may take part in a brace expansion. */
static void fchar(field *f, char c, int quoted)
{
	int dot = !quoted && c == '.';
	if (!quoted) {
		if (c == '{')
			f->braces++;
		else if (c == '}' && f->braces) {
			if (f->bsep)
				f->flags |= F_BRACE;
			f->braces--;
		} else if (f->braces && (c == ',' || (dot && f->lastdot)))
			f->bsep = 1;
	}
	fput(f, &c, 1);
	f->lastdot = dot;
}

/* Finish f into w (when it exists) and make f ready for the next field. */
static int end_field(parser *p, field *f, fieldv *w)
{
	if (f->overflow) {
		tgi_buf_free(&f->text);
		return fail(p, "a word is longer than %u bytes", TGI_SHELL_MAX);
	}
	if (f->present) {
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 2;
			w->s = tgi_xrealloc(w->s, w->cap * sizeof *w->s);
			w->fl = tgi_xrealloc(w->fl, w->cap * sizeof *w->fl);
		}
		w->fl[w->n] = f->flags;
		w->s[w->n++] = tgi_buf_steal(&f->text);
	} else {
		tgi_buf_free(&f->text);
	}
	field_init(f);
	return 0;
}

enum { K_PAREN, K_BRACE, K_DQ, K_BQ };

/*
 * From i, just inside an opener of the given kind opened at byte open,
 * find the end of the construct: *end is just past its closer.  Quotes,
 * escapes and substitutions inside are skipped whole (no recursion:
 * MAX_NEST levels at most); *subst is set when a command substitution
 * lies inside.
 */
static int skip_nested(parser *p, size_t i, int kind, size_t open, const char *what, size_t *end,
                       int *subst)
{
	const char *s = p->s;
	size_t n = p->len, sp = 0;
	unsigned char stack[MAX_NEST];

	stack[sp++] = (unsigned char)kind;
	while (sp) {
		int top = stack[sp - 1], push = -1;
		char c;
		if (i >= n)
			return fail(p, "unterminated %s starting at byte %zu", what, open);
		c = s[i];
		if (c == '\\') {
			i += 2;
			continue;
		}
		if (top == K_BQ) {
			if (c == '`')
				sp--;
			i++;
			continue;
		}
		if (top == K_DQ && c == '"') {
			sp--;
			i++;
			continue;
		}
		if (top != K_DQ) {
			if (c == '\'') {
				const char *q = memchr(s + i + 1, '\'', n - i - 1);
				if (!q)
					return fail(p, "unterminated %s starting at byte %zu", what, open);
				i = (size_t)(q - s) + 1;
				continue;
			}
			if (c == '"')
				push = K_DQ;
			else if (c == (top == K_PAREN ? '(' : '{'))
				push = top;
			else if (c == (top == K_PAREN ? ')' : '}')) {
				sp--;
				i++;
				continue;
			} else if (top == K_PAREN && c == '#' && strchr(" \t\n;&|(", s[i - 1])) {
				const char *nl = memchr(s + i, '\n', n - i);
				i = nl ? (size_t)(nl - s) : n;
				continue;
			}
			if (push >= 0)
				i++;
		}
		if (push < 0) {
			char c1 = i + 1 < n ? s[i + 1] : '\0';
			if (c == '`') {
				*subst = 1;
				push = K_BQ;
				i++;
			} else if (c == '$' && c1 == '(') {
				*subst = 1;
				push = K_PAREN;
				i += 2;
			} else if (c == '$' && c1 == '{') {
				push = K_BRACE;
				i += 2;
			} else if (c == '$' && c1 == '\'' && top != K_DQ) {
				size_t j = i + 2;
				while (j < n && s[j] != '\'')
					j += s[j] == '\\' ? 2 : 1;
				if (j >= n)
					return fail(p, "unterminated %s starting at byte %zu", what, open);
				i = j + 1;
				continue;
			} else {
				i++;
				continue;
			}
		}
		if (sp == MAX_NEST)
			return fail(p, "the %s starting at byte %zu nests more than %d levels deep", what,
			            open, MAX_NEST);
		stack[sp++] = (unsigned char)push;
	}
	*end = i;
	return 0;
}

static int parse_text(parser *p);

/*
 * Split the text of a substitution too: what it runs is added before the
 * command that holds it.  A syntax error inside leaves nothing added (the
 * command is opaque anyway); a limit is an error.
 */
static int parse_inner(parser *p, const char *text, size_t n)
{
	parser q;
	char cerr[256] = "";
	size_t mark = p->out->cl->n;
	int rc;

	if (p->level >= MAX_LEVEL)
		return 0;
	parser_init(&q, p->out, text, n, cerr, sizeof cerr);
	q.depth = p->depth;
	q.level = p->level + 1;
	q.params_unknown = p->params_unknown;
	memcpy(q.sub, p->sub, sizeof q.sub);
	q.nsub = p->nsub;
	q.sub_over = p->sub_over;
	q.env = p->env;
	q.outer = p;
	q.params = p->params;
	q.nparams = p->nparams;
	q.bound = p->bound;
	q.arg0 = p->arg0;
	q.deep = p->deep;
	rc = parse_text(&q);
	parser_free(&q);
	if (rc == 0)
		return 0;
	if (q.fatal) {
		p->fatal = 1;
		return fail(p, "%s", cerr);
	}
	rollback(p->out, mark);
	return 0;
}

/* ---- values an evaluation gives ---- */

/*
 * Put an expansion's fields into the word being read.  split (unquoted, in
 * an argument): each field is cut at the IFS characters, the first piece
 * joining the text before it, the last the text after.  join (an
 * assignment, "$*"): the fields joined with spaces into the word.
 * Otherwise ("$@" and arrays in double quotes) each field is a word.
 */
static int put_value(parser *p, field *f, fieldv *w, const char *const *v, size_t n, int split,
                     int join)
{
	const char *ifs = p->env && p->env->ifs ? p->env->ifs : " \t\n";

	for (size_t k = 0; k < n; k++) {
		const char *s = v[k] ? v[k] : "";
		if (split) {
			if (k && f->present && end_field(p, f, w) < 0)
				return -1;
			while (*s) {
				size_t m = strcspn(s, ifs);
				if (m == 0) {
					if (f->present && end_field(p, f, w) < 0)
						return -1;
					s++;
					continue;
				}
				fput(f, s, m);
				s += m;
			}
			continue;
		}
		if (k && join)
			fput(f, " ", 1);
		else if (k && end_field(p, f, w) < 0)
			return -1;
		fput(f, s, strlen(s));
	}
	if (!split && !n && join)
		f->present = 1;
	return 0;
}

/* The value env gives parameter name (1), or 0: keep it as written. */
static int env_lookup(parser *p, const char *name, int raw, const char *const **v, size_t *n)
{
	if (!p->env || !p->env->lookup)
		return 0;
	return p->env->lookup(p->env->ctx, name, dominated(p, name), raw, v, n) == 1;
}

/* The positional parameter name ("1".."9", digits, "@", "*", "#", "0")
 * when they are bound: 1 with the fields (a static one for "#"). */
static int bound_param(const parser *p, const char *name, const char *const **v, size_t *n,
                       char *num, size_t cap)
{
	if (!p->bound)
		return 0;
	if (!strcmp(name, "@") || !strcmp(name, "*")) {
		*v = (const char *const *)p->params;
		*n = p->nparams;
		return 1;
	}
	if (!strcmp(name, "#")) {
		snprintf(num, cap, "%zu", p->nparams);
		*v = (const char *const *)&p->arg0; /* replaced below: one field, num */
		*n = 1;
		return 2;
	}
	if (!strcmp(name, "0")) {
		*v = (const char *const *)&p->arg0;
		*n = p->arg0 ? 1 : 0;
		return 1;
	}
	if (all_digits(name)) {
		unsigned long k = strtoul(name, NULL, 10);
		*v = k >= 1 && k <= p->nparams ? (const char *const *)&p->params[k - 1] : NULL;
		*n = *v ? 1 : 0;
		return 1;
	}
	return 0;
}

/*
 * Parameter name at one use, with an evaluation or bound parameters: 1
 * when its value went into the word, 0 to keep it as written, -1 on a
 * limit.
 */
static int param_value(parser *p, field *f, fieldv *w, const char *name, int dq, int mode)
{
	const char *const *v = NULL;
	const char *one[1];
	char num[24];
	size_t n = 0;
	int got = bound_param(p, name, &v, &n, num, sizeof num);

	if (got == 2) {
		one[0] = num;
		v = one;
	}
	if (!got && !env_lookup(p, name, 0, &v, &n))
		return 0;
	int join = mode == WM_ASSIGN || (dq && !strcmp(name, "*"));
	return put_value(p, f, w, v, n, !dq && mode == WM_ARG, join) < 0 ? -1 : 1;
}

/* A here-doc word or operator operand with its quotes removed, or NULL
 * when it holds an expansion (the caller keeps the whole as written). */
static char *plain_word(const char *s, size_t n)
{
	tgi_buf b;
	char q = 0;

	tgi_buf_init(&b, TGI_SHELL_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!q && (c == '\'' || c == '"')) {
			q = c;
			continue;
		}
		if (q && c == q) {
			q = 0;
			continue;
		}
		if (q != '\'' && (c == '$' || c == '`')) {
			tgi_buf_free(&b);
			return NULL;
		}
		if (q != '\'' && c == '\\' && i + 1 < n)
			c = s[++i];
		tgi_buf_append(&b, &c, 1);
	}
	return tgi_buf_steal(&b);
}

/* Glob pattern match of pat against s[0..n). */
static int glob_n(const char *pat, const char *s, size_t n)
{
	char buf[1025];
	if (n >= sizeof buf)
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return fnmatch(pat, buf, 0) == 0;
}

/*
 * ${NAME OP WORD} with an evaluation: the defaults and alternatives (:- -
 * := = :+ +), prefix and suffix removal (# ## % %%), replacement of a
 * literal (/ //), case (^ ^^ , ,,) and substrings (:N, :N:M).  1 with the
 * result in *out (caller frees), 0 when it cannot be told.
 */
static int param_operator(parser *p, const char *in, size_t m, char **out)
{
	char name[65];
	size_t nl = 0;
	const char *const *v = NULL;
	size_t nv = 0;
	int known;

	if (m && (is_name_start(in[0]))) {
		while (nl < m && is_name_char(in[nl]))
			nl++;
	} else if (m && strchr("@*#?$!-0123456789", in[0])) {
		nl = 1;
	}
	if (!nl || nl >= sizeof name || nl >= m)
		return 0;
	memcpy(name, in, nl);
	name[nl] = '\0';
	const char *op = in + nl, *end = in + m;
	size_t ol = 0;
	static const char *const ops[] = { ":-", ":=", ":+", ":?", "##", "%%", "//", "/#", "/%", "^^",
		                           ",,", "-", "=", "+", "?", "#", "%", "/", "^", ",", ":", NULL };
	for (size_t i = 0; ops[i]; i++)
		if ((size_t)(end - op) >= strlen(ops[i]) && !strncmp(op, ops[i], strlen(ops[i]))) {
			ol = strlen(ops[i]);
			break;
		}
	if (!ol)
		return 0;
	char o0 = op[0], o1 = ol > 1 ? op[1] : '\0';
	const char *arg = op + ol;
	size_t al = (size_t)(end - arg);
	char num[24];
	const char *one[1];
	int got = bound_param(p, name, &v, &nv, num, sizeof num);
	if (got == 2) {
		one[0] = num;
		v = one;
	}
	known = got || env_lookup(p, name, 1, &v, &nv);
	const char *val = known && nv ? (v[0] ? v[0] : "") : "";
	size_t vl = strlen(val);

	if (o0 == '-' || o0 == '=' || o0 == '+' || ((o0 == ':') && (o1 == '-' || o1 == '=' || o1 == '+'))) {
		char which = o0 == ':' ? o1 : o0;
		int use_word = which == '+' ? (!known || vl > 0) : (!known || vl == 0);
		if (!use_word) {
			*out = tgi_strdup(which == '+' ? "" : val);
			return 1;
		}
		*out = plain_word(arg, al);
		return *out != NULL;
	}
	if (!known || vl > 1024)
		return 0;
	if (o0 == '#' || o0 == '%') {
		char *pat = plain_word(arg, al);
		int longest = o1 == o0;
		size_t cut = 0;
		int found = 0;
		if (!pat)
			return 0;
		for (size_t k = 0; k <= vl && !found; k++) {
			size_t len = longest ? vl - k : k;
			if (o0 == '#' ? glob_n(pat, val, len) : glob_n(pat, val + vl - len, len)) {
				cut = len;
				found = 1;
			}
		}
		free(pat);
		*out = o0 == '#' ? tgi_strdup(val + cut) : tgi_strndup(val, vl - cut);
		return 1;
	}
	if (o0 == '/') {
		const char *pat_at = arg, *slash = memchr(arg, '/', al);
		size_t pl = slash ? (size_t)(slash - arg) : al;
		char *pat = plain_word(pat_at, pl), *rep = slash ? plain_word(slash + 1, (size_t)(end - slash - 1))
		                                               : tgi_strdup("");
		tgi_buf b;
		int all = o1 == '/';
		if (!pat || !rep || !*pat || strpbrk(pat, "*?[") || o1 == '#' || o1 == '%') {
			free(pat);
			free(rep);
			return 0;
		}
		tgi_buf_init(&b, TGI_SHELL_MAX);
		for (const char *q = val; *q;) {
			const char *hit = strstr(q, pat);
			if (!hit) {
				tgi_buf_puts(&b, q);
				break;
			}
			tgi_buf_append(&b, q, (size_t)(hit - q));
			tgi_buf_puts(&b, rep);
			q = hit + strlen(pat);
			if (!all) {
				tgi_buf_puts(&b, q);
				break;
			}
		}
		free(pat);
		free(rep);
		*out = tgi_buf_steal(&b);
		return 1;
	}
	if (o0 == '^' || o0 == ',') {
		char *r = tgi_strdup(val);
		for (size_t k = 0; r[k] && (o1 || k == 0); k++)
			if (o0 == '^' && r[k] >= 'a' && r[k] <= 'z')
				r[k] = (char)(r[k] - 32);
			else if (o0 == ',' && r[k] >= 'A' && r[k] <= 'Z')
				r[k] = (char)(r[k] + 32);
		*out = r;
		return 1;
	}
	if (o0 == ':' && al && all_digits_n(arg, strcspn(arg, ":")) ) {
		size_t dl = strcspn(arg, ":");
		unsigned long off = strtoul(arg, NULL, 10), len = vl;
		if (dl < al) {
			if (!all_digits_n(arg + dl + 1, al - dl - 1))
				return 0;
			len = strtoul(arg + dl + 1, NULL, 10);
		}
		if (off > vl)
			off = vl;
		if (len > vl - off)
			len = vl - off;
		*out = tgi_strndup(val + off, len);
		return 1;
	}
	return 0;
}

/* `$(…)`, `$((…))`, `<(…)`, `>(…)` at byte at, the '(' at at + skip - 1.
 * cmd: a command substitution, which an evaluation may know the output
 * of (then put in the word: split unless dq, as the shell does). */
static int substitution(parser *p, field *f, fieldv *w, size_t skip, const char *what,
                        const char *why, int inner, int cmd, int split)
{
	size_t at = p->pos, end;
	int sub = 0;
	char *val = NULL;
	if (skip_nested(p, at + skip, K_PAREN, at, what, &end, &sub) < 0)
		return -1;
	p->pos = end;
	if (cmd && p->env && p->env->subst &&
	    p->env->subst(p->env->ctx, p->s + at + skip, end - 1 - (at + skip), &val) == 1) {
		size_t n = strlen(val);
		while (n && val[n - 1] == '\n')
			val[--n] = '\0';
		const char *one[1] = { val };
		int rc = put_value(p, f, w, one, 1, split, 0);
		free(val);
		if (rc < 0)
			return -1;
	} else {
		free(val);
		fput(f, p->s + at, end - at);
		f->flags |= F_SUBST;
		opaque(p, why);
	}
	return inner ? parse_inner(p, p->s + at + skip, end - 1 - (at + skip)) : 0;
}

/* `…` at p->pos; dq: inside double quotes, where \" is unescaped too. */
static int backquote(parser *p, field *f, fieldv *w, int dq, int mode)
{
	size_t at = p->pos, end;
	int sub = 0, rc;
	char *val = NULL;
	tgi_buf t;

	if (skip_nested(p, at + 1, K_BQ, at, "backquote", &end, &sub) < 0)
		return -1;
	p->pos = end;
	/* the text inside, less the backslashes that quoted \ $ ` (and ") */
	tgi_buf_init(&t, TGI_SHELL_MAX);
	for (size_t i = at + 1; i + 1 < end; i++) {
		char c1 = i + 2 < end ? p->s[i + 1] : '\0';
		if (p->s[i] == '\\' && c1 && (strchr("\\$`", c1) || (dq && c1 == '"')))
			i++;
		tgi_buf_append(&t, p->s + i, 1);
	}
	if (p->env && p->env->subst && p->env->subst(p->env->ctx, t.p ? t.p : "", t.len, &val) == 1) {
		size_t n = strlen(val);
		while (n && val[n - 1] == '\n')
			val[--n] = '\0';
		const char *one[1] = { val };
		rc = put_value(p, f, w, one, 1, !dq && mode == WM_ARG, 0);
		free(val);
		if (rc < 0) {
			tgi_buf_free(&t);
			return -1;
		}
	} else {
		free(val);
		fput(f, p->s + at, end - at);
		f->flags |= F_SUBST;
		opaque(p, "command substitution `…`");
	}
	rc = parse_inner(p, t.p ? t.p : "", t.len);
	tgi_buf_free(&t);
	return rc;
}

/* $'…' at p->pos: ANSI-C escapes decoded; a NUL ends the string. */
static int ansi_c(parser *p, field *f)
{
	const char *s = p->s;
	size_t at = p->pos, i = at + 2, n = p->len;
	int cut = 0;

	f->present = 1;
	f->flags |= F_QUOTED;
	for (;;) {
		char out[8], e;
		size_t on = 0, k;
		unsigned long v = 0;
		if (i >= n)
			return fail(p, "unterminated $'...' string starting at byte %zu", at);
		if (s[i] == '\'') {
			i++;
			break;
		}
		if (s[i] != '\\' || i + 1 >= n) {
			if (!cut)
				fput(f, s + i, 1);
			i++;
			continue;
		}
		e = s[i + 1];
		i += 2;
		switch (e) {
		case 'a': v = 7; break;
		case 'b': v = 8; break;
		case 'e': case 'E': v = 27; break;
		case 'f': v = 12; break;
		case 'n': v = 10; break;
		case 'r': v = 13; break;
		case 't': v = 9; break;
		case 'v': v = 11; break;
		case 'c':
			if (i < n)
				v = (unsigned char)s[i++] & 0x1f;
			break;
		case 'x': case 'u': case 'U': {
			size_t max = e == 'x' ? 2 : e == 'u' ? 4 : 8;
			for (k = 0; k < max && i < n; k++, i++) {
				char h = s[i];
				int d = h >= '0' && h <= '9' ? h - '0'
				      : h >= 'a' && h <= 'f' ? h - 'a' + 10
				      : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (d < 0)
					break;
				v = v * 16 + (unsigned long)d;
			}
			if (!k) {
				out[on++] = '\\';
				out[on++] = e;
			} else if (e != 'x') {
				if (v && utf8proc_codepoint_valid((utf8proc_int32_t)v))
					on = (size_t)utf8proc_encode_char((utf8proc_int32_t)v,
					                                  (utf8proc_uint8_t *)out);
				else if (!v)
					cut = 1;
			}
			break;
		}
		default:
			if (e >= '0' && e <= '7') {
				v = (unsigned long)(e - '0');
				for (k = 1; k < 3 && i < n && s[i] >= '0' && s[i] <= '7'; k++, i++)
					v = v * 8 + (unsigned long)(s[i] - '0');
				v &= 0xff;
			} else if (strchr("\\'\"?", e)) {
				v = (unsigned char)e;
			} else {
				out[on++] = '\\';
				out[on++] = e;
			}
		}
		if (!on && e != 'u' && e != 'U') {
			if (!v)
				cut = 1;
			out[on++] = (char)v;
		}
		if (!cut && on)
			fput(f, out, on);
	}
	p->pos = i;
	return 0;
}

/* An unquoted $IFS: the field ends here (an empty one is dropped). */
static int ifs_break(parser *p, field *f, fieldv *w)
{
	return f->present ? end_field(p, f, w) : 0;
}

/* $1…$9, ${N}, $@, $*: the line has none, so they are empty; in a sh -c
 * script given arguments they are unknown and make the command opaque.
 * Bound (a function body, an evaluated sh -c) or given by an evaluation,
 * they are their values.  name: "1", "12", "@", "*". */
static int positional(parser *p, field *f, fieldv *w, const char *text, size_t n,
                      const char *name, int dq, int mode)
{
	int rc = param_value(p, f, w, name, dq, mode);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (!p->params_unknown)
		return 0;
	fput(f, text, n);
	f->flags |= F_PARAM;
	opaque(p, "positional parameters of a sh -c script");
	return 0;
}

/* ${NAME}, ${#NAME} and ${?} and its kin: no operator. */
static int plain_param(const char *in, size_t m)
{
	size_t i = 0;
	if (m == 1 && strchr("#?$!-0@*", in[0]))
		return 1;
	if (m > 1 && in[0] == '#')
		i = 1;
	if (i >= m || !is_name_start(in[i]))
		return all_digits_n(in + i, m - i);
	for (i++; i < m; i++)
		if (!is_name_char(in[i]))
			return 0;
	return 1;
}

/* NAME[SUBSCRIPT] (an array element, or all of them): the name's length. */
static size_t array_ref(const char *in, size_t m)
{
	size_t i = 0;
	if (!m || !is_name_start(in[0]))
		return 0;
	while (i < m && is_name_char(in[i]))
		i++;
	return i + 2 < m + 1 && in[i] == '[' && in[m - 1] == ']' ? i : 0;
}

static int dquote(parser *p, field *f, fieldv *w, int mode);

/* ${…} at p->pos, in an argument, an assignment or double quotes. */
static int braced(parser *p, field *f, fieldv *w, int mode, int dq)
{
	size_t at = p->pos, end, m, an;
	const char *in;
	int sub = 0, split = !dq && mode == WM_ARG, rc;
	char name[72];

	if (skip_nested(p, at + 2, K_BRACE, at, "parameter expansion `${`", &end, &sub) < 0)
		return -1;
	in = p->s + at + 2;
	m = end - 1 - (at + 2);
	p->pos = end;
	if (split && m >= 3 && memcmp(in, "IFS", 3) == 0 && (m == 3 || !is_name_char(in[3])))
		return ifs_break(p, f, w);
	if (sub)
		opaque(p, "command substitution $(…)");
	if ((all_digits_n(in, m) && !(m == 1 && in[0] == '0')) ||
	    (m == 1 && (in[0] == '@' || in[0] == '*'))) {
		tgi_snprintf(name, sizeof name, "%.*s", (int)(m < 32 ? m : 32), in);
		return positional(p, f, w, p->s + at, end - at, name, dq, mode);
	}
	if (plain_param(in, m) && m < sizeof name - 1 && (p->env || p->bound)) {
		if (m > 1 && in[0] == '#') {
			/* ${#NAME}: the length of its value */
			const char *const *v;
			size_t nv;
			tgi_snprintf(name, sizeof name, "%.*s", (int)m - 1, in + 1);
			if (env_lookup(p, name, 1, &v, &nv)) {
				char num[24];
				const char *one[1] = { num };
				snprintf(num, sizeof num, "%zu", nv == 1 && v[0] ? strlen(v[0]) : nv);
				return put_value(p, f, w, one, 1, split, 0);
			}
		} else {
			tgi_snprintf(name, sizeof name, "%.*s", (int)m, in);
			if ((rc = param_value(p, f, w, name, dq, mode)) != 0)
				return rc < 0 ? -1 : 0;
		}
	} else if (p->env && (an = array_ref(in, m)) > 0 && an < sizeof name) {
		/* ${a[0]}, ${a[@]}: any element may be the one (all of them, then) */
		tgi_snprintf(name, sizeof name, "%.*s", (int)an, in);
		if ((rc = param_value(p, f, w, name, dq && in[m - 2] != '*', mode)) != 0)
			return rc < 0 ? -1 : 0;
	} else if (p->env || p->bound) {
		char *val = NULL;
		if (param_operator(p, in, m, &val)) {
			const char *one[1] = { val };
			rc = put_value(p, f, w, one, 1, split, 0);
			free(val);
			if (rc < 0)
				return -1;
			opaque(p, "parameter expansion ${…} with an operator");
			return 0;
		}
	}
	fput(f, p->s + at, end - at);
	f->flags |= F_PARAM;
	if (!plain_param(in, m))
		opaque(p, "parameter expansion ${…} with an operator");
	return 0;
}

/* '$' at p->pos, unquoted or inside double quotes (dq). */
static int dollar(parser *p, field *f, fieldv *w, int mode, int dq)
{
	const char *s = p->s;
	size_t at = p->pos, n = p->len;
	char c1 = at + 1 < n ? s[at + 1] : '\0';
	int split = !dq && mode == WM_ARG, rc;
	char name[72];

	if (!dq && c1 == '\'')
		return ansi_c(p, f);
	if (!dq && c1 == '"') {
		p->pos++; /* $"…": a translated string, read as "…" */
		return dquote(p, f, w, mode);
	}
	if (c1 == '(') {
		if (at + 2 < n && s[at + 2] == '(')
			return substitution(p, f, w, 2, "arithmetic expansion `$((`",
			                    "arithmetic expansion $((…))", 0, 0, split);
		return substitution(p, f, w, 2, "command substitution `$(`", "command substitution $(…)",
		                    1, 1, split);
	}
	if (c1 == '{')
		return braced(p, f, w, mode, dq);
	if (is_name_start(c1)) {
		size_t e = at + 1;
		while (e < n && is_name_char(s[e]))
			e++;
		p->pos = e;
		if (split && e - at - 1 == 3 && memcmp(s + at + 1, "IFS", 3) == 0)
			return ifs_break(p, f, w);
		if (e - at - 1 < sizeof name) {
			tgi_snprintf(name, sizeof name, "%.*s", (int)(e - at - 1), s + at + 1);
			if ((rc = param_value(p, f, w, name, dq, mode)) != 0)
				return rc < 0 ? -1 : 0;
		}
		fput(f, s + at, e - at);
		f->flags |= F_PARAM;
		return 0;
	}
	if ((c1 >= '1' && c1 <= '9') || c1 == '@' || c1 == '*') {
		p->pos = at + 2;
		name[0] = c1;
		name[1] = '\0';
		return positional(p, f, w, s + at, 2, name, dq, mode);
	}
	if (c1 && strchr("#?$!-0", c1)) {
		p->pos = at + 2;
		name[0] = c1;
		name[1] = '\0';
		if ((rc = param_value(p, f, w, name, dq, mode)) != 0)
			return rc < 0 ? -1 : 0;
		fput(f, s + at, 2);
		f->flags |= F_PARAM;
		return 0;
	}
	if (c1 == '[')
		opaque(p, "arithmetic expansion $[…]");
	fchar(f, '$', dq);
	p->pos++;
	return 0;
}

/* "…" at p->pos. */
static int dquote(parser *p, field *f, fieldv *w, int mode)
{
	size_t at = p->pos;

	p->pos++;
	f->present = 1;
	f->flags |= F_QUOTED;
	for (;;) {
		char c, c1;
		if (p->pos >= p->len)
			return fail(p, "unterminated double quote starting at byte %zu", at);
		c = p->s[p->pos];
		c1 = p->pos + 1 < p->len ? p->s[p->pos + 1] : '\0';
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c == '\\' && c1 == '\n') {
			p->pos += 2;
		} else if (c == '\\' && c1 && strchr("$`\"\\", c1)) {
			fchar(f, c1, 1);
			p->pos += 2;
		} else if (c == '`' && mode != WM_DELIM) {
			if (backquote(p, f, w, 1, mode) < 0)
				return -1;
		} else if (c == '$' && mode != WM_DELIM) {
			if (dollar(p, f, w, mode, 1) < 0)
				return -1;
		} else {
			fchar(f, c, 1);
			p->pos++;
		}
	}
}

/* Does a word end before s[i]? */
static int word_ends(const parser *p, size_t i)
{
	char c = p->s[i], c1 = i + 1 < p->len ? p->s[i + 1] : '\0';
	switch (c) {
	case ' ': case '\t': case '\n': case ';': case '&': case '|': case '(': case ')':
		return 1;
	case '<': case '>':
		return c1 != '(';
	}
	return 0;
}

/*
 * Read one word at p->pos into its fields (an unquoted $IFS cuts it; a
 * word that is only empty expansions has none).  WM_ASSIGN: NAME= is
 * value_at bytes long, and nothing splits the value.  WM_DELIM: a here-doc
 * delimiter, where '$' and '`' are plain characters.
 */
static int read_word(parser *p, int mode, size_t value_at, fieldv *w)
{
	field f;
	int rc = 0;

	field_init(&f);
	while (rc == 0 && p->pos < p->len) {
		size_t at = p->pos;
		char c = p->s[at], c1 = at + 1 < p->len ? p->s[at + 1] : '\0';
		if (c == '(' && mode == WM_ASSIGN && f.text.len == value_at) {
			size_t end;
			int sub = 0;
			rc = skip_nested(p, at + 1, K_PAREN, at, "array assignment `(`", &end, &sub);
			if (rc == 0) {
				fput(&f, p->s + at, end - at);
				opaque(p, "an array assignment");
				p->pos = end;
			}
			continue;
		}
		if (word_ends(p, at))
			break;
		if (c == '~' && p->env &&
		    (mode == WM_ARG ? !f.present : mode == WM_ASSIGN && f.text.len == value_at) &&
		    (at + 1 >= p->len || p->s[at + 1] == '/' || word_ends(p, at + 1))) {
			/* ~ is $HOME, which an evaluation may say the line set */
			const char *const *v;
			size_t nv;
			if (env_lookup(p, "HOME", 0, &v, &nv)) {
				rc = put_value(p, &f, w, v, nv, 0, 1);
				f.flags |= F_QUOTED;
				p->pos++;
				continue;
			}
		}
		if ((c == '<' || c == '>') && mode != WM_DELIM) {
			rc = substitution(p, &f, w, 2,
			                  c == '<' ? "process substitution `<(`" : "process substitution `>(`",
			                  c == '<' ? "process substitution <(…)" : "process substitution >(…)", 1,
			                  0, 0);
			continue;
		}
		switch (c) {
		case '\\':
			if (c1 == '\n') {
				p->pos += 2;
			} else if (!c1) {
				fchar(&f, '\\', 0);
				p->pos++;
			} else {
				fchar(&f, c1, 1);
				f.flags |= F_QUOTED;
				p->pos += 2;
			}
			break;
		case '\'': {
			const char *q = memchr(p->s + at + 1, '\'', p->len - at - 1);
			if (!q) {
				rc = fail(p, "unterminated single quote starting at byte %zu", at);
				break;
			}
			fput(&f, p->s + at + 1, (size_t)(q - p->s) - at - 1);
			f.flags |= F_QUOTED;
			p->pos = (size_t)(q - p->s) + 1;
			break;
		}
		case '"':
			rc = dquote(p, &f, w, mode);
			break;
		case '`':
			if (mode == WM_DELIM)
				goto plain;
			rc = backquote(p, &f, w, 0, mode);
			break;
		case '$':
			if (mode == WM_DELIM)
				goto plain;
			rc = dollar(p, &f, w, mode, 0);
			break;
		default:
		plain:
			fchar(&f, c, 0);
			p->pos++;
		}
	}
	if (rc == 0)
		return end_field(p, &f, w);
	tgi_buf_free(&f.text);
	return -1;
}

static void skip_blanks(parser *p)
{
	while (p->pos < p->len) {
		if (is_blank(p->s[p->pos]))
			p->pos++;
		else if (p->s[p->pos] == '\\' && p->pos + 1 < p->len && p->s[p->pos + 1] == '\n')
			p->pos += 2;
		else
			break;
	}
}

/* ---- here-docs ---- */

/* After a newline: each pending here-doc's body, up to its delimiter line,
 * is consumed.  A body that substitutes commands makes its commands opaque. */
static void read_heredocs(parser *p)
{
	for (; p->hd_read < p->nhd; p->hd_read++) {
		heredoc *h = &p->hd[p->hd_read];
		size_t dn = strlen(h->delim);
		int unsafe = 0;
		tgi_buf body;
		tgi_buf_init(&body, TGI_SHELL_MAX);
		while (p->pos < p->len) {
			const char *line = p->s + p->pos;
			const char *nl = memchr(line, '\n', p->len - p->pos);
			size_t ln = nl ? (size_t)(nl - line) : p->len - p->pos;
			size_t k = 0;
			p->pos += ln + (nl != NULL);
			if (h->strip)
				while (k < ln && line[k] == '\t')
					k++;
			if (ln - k == dn && memcmp(line + k, h->delim, dn) == 0)
				break;
			tgi_buf_append(&body, line + k, ln - k);
			tgi_buf_append(&body, "\n", 1);
			for (size_t j = 0; !h->quoted && j < ln; j++)
				if (line[j] == '`' || (line[j] == '$' && j + 1 < ln && line[j + 1] == '('))
					unsafe = 1;
		}
		for (size_t i = h->first; unsafe && i < h->last && i < p->out->cl->n; i++)
			cmd_opaque(&p->out->cl->v[i], "command substitution in a here-doc");
		/* the body goes to the first here-doc of each command it feeds
		 * that has none yet, while the output has room */
		for (size_t i = h->first; i < h->last && i < p->out->cl->n; i++) {
			tgi_cmd *c = &p->out->cl->v[i];
			for (size_t r = 0; r < c->nredirs; r++) {
				tgi_redir *rd = &c->redirs[r];
				if (rd->op[0] != '<' || rd->op[1] != '<' || rd->op[2] == '<' || rd->body)
					continue;
				if (body.len + 1 <= NORM_MAX - p->out->used) {
					rd->body = tgi_strndup(body.p ? body.p : "", body.len);
					p->out->used += body.len + 1;
				}
				break;
			}
		}
		tgi_buf_free(&body);
	}
}

/* ---- judging one simple command ---- */

/* Is the word an expansion (or, taken as it is, does it look like one)? */
static int expansion(const char *word, unsigned fl)
{
	if (fl & F_ARGV)
		return strpbrk(word, "$`") != NULL;
	return (fl & (F_PARAM | F_SUBST)) != 0;
}

/* What this file cannot judge about a finished command. */
static void judge(tgi_cmd *c, const unsigned *wf)
{
	size_t prog = tgi_shell_program(c);
	const char *name = prog < c->argc ? tgi_shell_basename(c->argv[prog]) : NULL;
	const interp *in = name ? find_interp(name) : NULL;
	char nm[48];

	if (c->argc && (expansion(c->argv[0], wf[0]) || (name && expansion(c->argv[prog], wf[prog]))))
		cmd_opaque(c, "a program name that is an expansion");
	if (c->argc && ((wf[0] | (name ? wf[prog] : 0)) & F_BRACE))
		cmd_opaque(c, "brace expansion in the program name");
	if (name && strcmp(name, "eval") == 0)
		cmd_opaque(c, "eval");
	if (env_split(c, prog))
		cmd_opaque(c, "env -S (a command line in one word)");
	if (name && in_list(foreign_shells, name, strlen(name)) && foreign_script(c, prog)) {
		tgi_sanitize(nm, sizeof nm, name);
		cmd_opaque(c, "a %s -c script", nm);
	}
	if (sudo_shell(c, prog)) {
		in = &interps[0];
		name = "a root shell";
	}
	if (in && (prog >= c->argc || reads_stdin(c, prog, in))) {
		int from_file = 0;
		tgi_sanitize(nm, sizeof nm, name);
		for (size_t i = 0; i < c->nredirs; i++) {
			const tgi_redir *r = &c->redirs[i];
			if (r->op[0] != '<' || (r->fd != -1 && r->fd != 0))
				continue;
			if (strcmp(r->op, "<<") == 0 || strcmp(r->op, "<<-") == 0)
				cmd_opaque(c, "%s reading a here-doc", nm);
			else if (strcmp(r->op, "<<<") == 0)
				cmd_opaque(c, "%s reading a here-string", nm);
			else
				from_file = 1;
		}
		if ((c->flags & TGI_CMD_PIPED_IN) && !from_file)
			cmd_opaque(c, "%s reading its script from a pipe", nm);
	}
}

/* Replace the wrapper c (argv[prog] a shell, argv[si] its literal -c
 * script, raw the script before normalisation) by the script's commands. */
static int unwrap(parser *p, tgi_cmd *c, size_t prog, size_t si, const char *raw, const char *nm)
{
	parser q;
	char cerr[256] = "";
	size_t mark = p->out->cl->n;
	int rc;

	parser_init(&q, p->out, raw, strlen(raw), cerr, sizeof cerr);
	q.depth = p->depth + 1;
	q.level = p->level + 1;
	memcpy(q.sub, p->sub, sizeof q.sub);
	q.nsub = p->nsub;
	q.sub_over = p->sub_over;
	/* $0 and at least $1, or xargs appending words; an evaluation binds
	 * the words given (xargs's are not known here) */
	q.params_unknown = c->argc - si - 1 >= 2 || via_xargs(c, prog);
	q.env = p->env;
	q.deep = p->deep;
	if (p->env && !via_xargs(c, prog)) {
		q.params_unknown = 0;
		q.bound = 1;
		q.arg0 = si + 1 < c->argc ? c->argv[si + 1] : NULL;
		q.params = si + 2 < c->argc ? c->argv + si + 2 : NULL;
		q.nparams = si + 2 < c->argc ? c->argc - si - 2 : 0;
	}
	q.ifrom = c->from;
	q.prefix = c->argv;
	q.nprefix = prog;
	q.iredirs = c->redirs;
	q.niredirs = c->nredirs;
	q.iflags = c->flags & (TGI_CMD_PIPED_IN | TGI_CMD_BACKGROUND | TGI_CMD_OPAQUE);
	q.iwhy = c->why;
	q.iassigns = c->assigns;
	q.niassigns = c->nassigns;
	/* the wrapper's assignments are set before the script's first word */
	for (size_t i = 0; p->env && i < c->nassigns; i++)
		dom_add(&q, c->assigns[i], strcspn(c->assigns[i], "+="), 1);
	rc = parse_text(&q);
	parser_free(&q);
	if (rc == 0) {
		cmd_free(c);
		return 0;
	}
	if (q.fatal) {
		cmd_free(c);
		p->fatal = 1;
		return fail(p, "%s", cerr);
	}
	rollback(p->out, mark);
	cmd_opaque(c, "a %s -c script that does not parse (%s)", nm, cerr);
	return push_cmd(p, c);
}

/* Push c, or, for a shell with a literal -c script, what the script runs
 * (opaque too when c is).  Takes c. */
static int unwrap_or_push(parser *p, tgi_cmd *c, const unsigned *wf, size_t np)
{
	size_t prog = tgi_shell_program(c), si = 0;
	const char *name = prog < c->argc ? tgi_shell_basename(c->argv[prog]) : NULL;
	const interp *in = name ? find_interp(name) : NULL;
	char nm[48];
	int how;

	if (!in || !in->shell)
		return push_cmd(p, c);
	how = shell_script(c, prog, &si);
	if (how == 0 || (how > 0 && si >= c->argc && !via_xargs(c, prog)))
		return push_cmd(p, c);
	tgi_sanitize(nm, sizeof nm, name);
	if (how > 0 && si >= c->argc)
		cmd_opaque(c, "a %s -c script that xargs reads from stdin", nm);
	else if (xargs_fills(c, prog))
		/* xargs -I fills the words it reads into the script's text: the
		 * script as written is not what runs (the floor judges it with
		 * what xargs is fed, when the line says) */
		cmd_opaque(c, "a %s -c script that xargs fills in with the words it reads", nm);
	else if (how < 0)
		cmd_opaque(c, "%s -c with options that cannot be judged", nm);
	else if (expansion(c->argv[si], wf[si]) && !(wf[si] & F_ARGV))
		cmd_opaque(c, "a %s -c script that is not a literal", nm);
	else if (p->depth >= MAX_UNWRAP || p->level >= MAX_LEVEL)
		cmd_opaque(c, "shell wrappers nested more than %d deep", MAX_UNWRAP);
	else if (si >= np)
		return unwrap(p, c, prog, si, p->b.argv.v[si - np], nm);
	return push_cmd(p, c);
}

/* Normalise the builder into a command, judge it, push it (or what it
 * unwraps to). */
static int emit(parser *p, unsigned flags)
{
	builder *b = &p->b;
	size_t np = b->argv.n ? p->nprefix : 0;
	tgi_cmd c = { 0 };
	unsigned *wf;
	int rc = -1;

	c.argc = np + b->argv.n;
	c.argv = tgi_xcalloc(c.argc + 1, sizeof *c.argv);
	wf = tgi_xcalloc(c.argc + 1, sizeof *wf);
	c.nassigns = b->assigns.n + (c.argc ? p->niassigns : 0);
	c.assigns = tgi_xcalloc(c.nassigns + 1, sizeof *c.assigns);
	c.nredirs = b->nredirs + p->niredirs;
	c.redirs = c.nredirs ? tgi_xcalloc(c.nredirs, sizeof *c.redirs) : NULL;
	c.flags = b->flags | flags | p->iflags | (p->pipe_next ? TGI_CMD_PIPED_IN : 0);
	c.why = b->why;
	b->why = NULL;
	if (!c.why && (p->iflags & TGI_CMD_OPAQUE))
		c.why = tgi_strdup(p->iwhy);
	c.depth = p->depth;
	c.subshell = p->nsub ? p->sub[p->nsub - 1] : 0;
	c.sublevel = (unsigned)(p->nsub + p->sub_over);
	c.nest = p->cmd_nest;
	c.from = p->pipe_next ? p->pipe_from : (p->iflags & TGI_CMD_PIPED_IN) ? p->ifrom : 0;
	if (p->deep)
		cmd_opaque(&c, "compound commands nested more than %d deep", FRAMES_MAX);

	for (size_t i = 0; i < np; i++)
		c.argv[i] = tgi_strdup(p->prefix[i]);
	for (size_t i = 0; i < b->argv.n; i++) {
		if (!(c.argv[np + i] = normalize(p, b->argv.v[i])))
			goto out;
		wf[np + i] = b->argv.fl[i];
	}
	for (size_t i = 0; i < b->assigns.n; i++)
		if (!(c.assigns[i] = normalize(p, b->assigns.v[i])))
			goto out;
	for (size_t i = b->assigns.n; i < c.nassigns; i++)
		c.assigns[i] = tgi_strdup(p->iassigns[i - b->assigns.n]);
	for (size_t i = 0; i < c.nredirs; i++) {
		const tgi_redir *r = i < b->nredirs ? &b->redirs[i] : &p->iredirs[i - b->nredirs];
		c.redirs[i].fd = r->fd;
		memcpy(c.redirs[i].op, r->op, sizeof r->op);
		c.redirs[i].target = i < b->nredirs ? normalize(p, r->target) : tgi_strdup(r->target);
		if (!c.redirs[i].target)
			goto out;
	}
	judge(&c, wf);
	rc = unwrap_or_push(p, &c, wf, np);
out:
	if (rc < 0)
		cmd_free(&c);
	free(wf);
	return rc;
}

/* End the simple command being read. */
static int finish(parser *p, unsigned flags)
{
	builder *b = &p->b;
	size_t first = p->out->cl->n;
	int rc = 0;

	if (b->argv.n || b->assigns.n || b->nredirs) {
		if (p->env)
			note_assignments(p, flags);
		rc = emit(p, flags);
	}
	p->pipe_next = 0;
	for (; p->hd_owned < p->nhd; p->hd_owned++) {
		p->hd[p->hd_owned].first = first;
		p->hd[p->hd_owned].last = p->out->cl->n;
	}
	builder_reset(b);
	return rc;
}

/* ---- the grammar ---- */

static int redirection(parser *p, int fd)
{
	static const char *const ops[] = { "<<<", "<<-", "&>>", "<<", "<&", "<>", ">>",
		                            ">&",  ">|",  "&>",  "<",  ">" };
	size_t at = p->pos;
	const char *op = ">";
	fieldv w = { 0 };
	int is_hd;

	if (!p->b.any)
		begin_command(p);
	for (size_t i = 0; i < TGI_ARRAY_LEN(ops); i++) {
		size_t k = strlen(ops[i]);
		if (p->len - at >= k && memcmp(p->s + at, ops[i], k) == 0) {
			op = ops[i];
			break;
		}
	}
	p->pos += strlen(op);
	is_hd = op[0] == '<' && op[1] == '<' && op[2] != '<';
	skip_blanks(p);
	if (p->pos >= p->len || word_ends(p, p->pos))
		return is_hd ? fail(p, "the here-doc `%s` at byte %zu has no delimiter", op, at)
		               : fail(p, "the redirection `%s` at byte %zu has no target", op, at);
	if (read_word(p, is_hd ? WM_DELIM : WM_ARG, 0, &w) < 0) {
		fieldv_free(&w);
		return -1;
	}
	if (is_hd) {
		heredoc *h;
		if (!w.n) {
			fieldv_free(&w);
			return fail(p, "the here-doc `%s` at byte %zu has no delimiter", op, at);
		}
		if (p->nhd == p->caphd) {
			p->caphd = p->caphd ? p->caphd * 2 : 4;
			p->hd = tgi_xrealloc(p->hd, p->caphd * sizeof *p->hd);
		}
		h = &p->hd[p->nhd++];
		memset(h, 0, sizeof *h);
		h->delim = tgi_strdup(w.s[0]);
		h->strip = op[2] == '-';
		h->quoted = (w.fl[0] & F_QUOTED) != 0;
	} else if (w.n != 1) {
		opaque(p, "an ambiguous redirection");
	}
	builder_redir(&p->b, fd, op, w.n ? w.s[0] : tgi_strdup(""));
	if (w.n)
		w.s[0] = NULL;
	fieldv_free(&w);
	p->state = ST_CMD;
	return 0;
}

/* `function NAME [()]` at byte at: the body that follows is judged. */
static int function_word(parser *p, size_t at)
{
	fieldv w = { 0 };
	int rc;

	skip_blanks(p);
	if (p->pos >= p->len || word_ends(p, p->pos))
		return fail(p, "`function` at byte %zu has no name", at);
	rc = read_word(p, WM_ARG, 0, &w);
	if (rc == 0 && w.n == 1) {
		free(p->fn_pending);
		p->fn_pending = normalize(p, w.s[0]);
		rc = p->fn_pending ? 0 : -1;
	}
	fieldv_free(&w);
	if (rc < 0)
		return -1;
	skip_blanks(p);
	if (p->pos < p->len && p->s[p->pos] == '(') {
		size_t open = p->pos++;
		skip_blanks(p);
		if (p->pos >= p->len || p->s[p->pos] != ')')
			return fail(p, "unexpected `(` at byte %zu", open);
		p->pos++;
	}
	p->state = ST_NEED;
	p->need_what = "function";
	p->need_at = at;
	return 0;
}

/* A reserved word in command position: 1 (handled), 0 (not one), -1. */
static int keyword(parser *p, const char *t, size_t at)
{
	static const char *const openers[] = { "if", "then", "else", "elif", "while",
		                                "until", "do", "!", "{" };
	static const char *const closers[] = { "fi", "done", "esac", "}" };

	for (size_t i = 0; i < TGI_ARRAY_LEN(openers); i++)
		if (strcmp(t, openers[i]) == 0) {
			if (!strcmp(t, "if") || !strcmp(t, "while") || !strcmp(t, "until") || !strcmp(t, "{"))
				construct_open(p, at);
			else if (!strcmp(t, "then") || !strcmp(t, "do"))
				part_open(p, 0);
			else if (!strcmp(t, "else") || !strcmp(t, "elif"))
				part_open(p, 1);
			p->state = ST_NEED;
			p->need_what = openers[i];
			p->need_at = at;
			return 1;
		}
	for (size_t i = 0; i < TGI_ARRAY_LEN(closers); i++)
		if (strcmp(t, closers[i]) == 0) {
			if (p->state == ST_NEED)
				return fail(p, "empty command before `%s` at byte %zu", closers[i], at);
			construct_close(p);
			p->state = ST_CLOSED;
			return 1;
		}
	if (strcmp(t, "function") == 0)
		return function_word(p, at) < 0 ? -1 : 1;
	return 0;
}

/* A word where a token starts: an assignment, an fd number before a
 * redirection, a reserved word, or words of the command. */
static int on_word(parser *p)
{
	builder *b = &p->b;
	size_t at = p->pos, vat;
	int cmdpos = !b->any, rc;
	fieldv w = { 0 };

	if (!b->argv.n && (vat = assignment_len(p->s + at, p->len - at)) > 0) {
		rc = read_word(p, WM_ASSIGN, vat, &w);
		if (rc == 0 && cmdpos)
			begin_command(p);
		for (size_t i = 0; rc == 0 && i < w.n; i++) {
			wvec_push(&b->assigns, w.s[i], w.fl[i]);
			w.s[i] = NULL;
		}
		goto out;
	}
	rc = read_word(p, WM_ARG, 0, &w);
	if (rc < 0)
		goto out;
	if (w.n == 1 && !w.fl[0] && strlen(w.s[0]) == p->pos - at) {
		const char *t = w.s[0];
		if (p->pos < p->len && (p->s[p->pos] == '<' || p->s[p->pos] == '>') && all_digits(t)) {
			rc = p->pos - at > FD_DIGITS
			       ? fail(p, "the file descriptor number at byte %zu is too large", at)
			       : redirection(p, atoi(t));
			fieldv_free(&w);
			return rc;
		}
		if (cmdpos && (rc = keyword(p, t, at)) != 0) {
			fieldv_free(&w);
			return rc < 0 ? -1 : 0;
		}
	}
	if (cmdpos && w.n) {
		/* for and select head a construct: the loop's body follows */
		int loop = w.n >= 1 && !w.fl[0] && (!strcmp(w.s[0], "for") || !strcmp(w.s[0], "select"));
		char *fn = p->fn_pending;
		if (loop)
			p->fn_pending = NULL; /* kept for the loop: it is the body */
		begin_command(p);
		if (loop)
			p->fn_pending = fn;
		if (loop)
			construct_open(p, at);
	}
	for (size_t i = 0; i < w.n; i++) {
		wvec_push(&b->argv, w.s[i], w.fl[i]);
		w.s[i] = NULL;
	}
out:
	fieldv_free(&w);
	if (rc == 0) {
		b->any = 1;
		p->state = ST_CMD;
	}
	return rc;
}

/* `;` and `&` end a command; `&&`, `||`, `|`, `|&` join it to the next. */
static int end_command(parser *p, const char *tok, size_t at, unsigned flags, int joins)
{
	int pipe = tok[0] == '|' && tok[1] != '|';
	if (p->state == ST_CMD) {
		p->ending_pipe = pipe;
		int rc = finish(p, flags);
		p->ending_pipe = 0;
		if (rc < 0)
			return -1;
	} else if (p->state != ST_CLOSED) {
		return fail(p, "empty command before `%s` at byte %zu", tok, at);
	}
	if (pipe) {
		p->pipe_from = p->member_at[nest_slot(p->nest)];
		p->pipe_nest = p->nest;
		p->conn = CONN_PIPE;
	} else if (!strcmp(tok, "&&")) {
		p->conn = CONN_AND;
	} else if (!strcmp(tok, "||")) {
		p->conn = CONN_OR;
		p->chain++;
	} else {
		new_list(p);
	}
	p->state = joins ? ST_NEED : ST_START;
	p->need_what = tok;
	p->need_at = at;
	return 0;
}

static int operator(parser *p)
{
	size_t at = p->pos;
	char c = p->s[at], c1 = at + 1 < p->len ? p->s[at + 1] : '\0';

	switch (c) {
	case ';':
		if (c1 == ';')
			return fail(p, "`;;` at byte %zu ends a case branch, and case statements are not "
			               "supported", at);
		p->pos++;
		return end_command(p, ";", at, 0, 0);
	case '&':
		if (c1 == '>')
			return redirection(p, -1);
		p->pos += c1 == '&' ? 2 : 1;
		return c1 == '&' ? end_command(p, "&&", at, 0, 1)
		                 : end_command(p, "&", at, TGI_CMD_BACKGROUND, 0);
	case '|':
		if (c1 == '|') {
			p->pos += 2;
			return end_command(p, "||", at, 0, 1);
		}
		if (c1 == '&' && p->state == ST_CMD) /* |& is 2>&1 | */
			builder_redir(&p->b, 2, ">&", tgi_strdup("1"));
		p->pos += c1 == '&' ? 2 : 1;
		if (end_command(p, c1 == '&' ? "|&" : "|", at, 0, 1) < 0)
			return -1;
		p->pipe_next = 1;
		return 0;
	case '(':
		if (p->b.any) {
			/* NAME ( ) is a function definition: its body follows */
			size_t q = at + 1;
			while (q < p->len && is_blank(p->s[q]))
				q++;
			if (p->b.argv.n != 1 || p->b.assigns.n || p->b.nredirs ||
			    (p->b.flags & TGI_CMD_OPAQUE) || q >= p->len || p->s[q] != ')')
				return fail(p, "unexpected `(` at byte %zu", at);
			free(p->fn_pending);
			if (!(p->fn_pending = normalize(p, p->b.argv.v[0])))
				return -1;
			builder_reset(&p->b);
			p->pos = q + 1;
			p->state = ST_NEED;
			p->need_what = "()";
			p->need_at = at;
			return 0;
		}
		if (p->nsub < SUB_MAX)    /* deeper ones count as the deepest kept */
			p->sub[p->nsub++] = ++p->out->subshells;
		else
			p->sub_over++;
		if (!p->parens++)
			p->paren_at = at;
		construct_open(p, at);
		p->pos++;
		p->state = ST_NEED;
		p->need_what = "(";
		p->need_at = at;
		return 0;
	case ')':
		if (!p->parens)
			return fail(p, "unexpected `)` at byte %zu", at);
		if (p->state == ST_NEED)
			return fail(p, "empty command before `)` at byte %zu", at);
		if (p->state == ST_CMD && finish(p, 0) < 0)
			return -1;
		p->pos++;
		construct_close(p);
		p->pos--;
		p->parens--;
		if (p->sub_over)
			p->sub_over--;
		else if (p->nsub)
			p->nsub--;
		p->pos++;
		p->state = ST_CLOSED;
		return 0;
	default: /* '<' or '>' */
		return redirection(p, -1);
	}
}

static int parse_text(parser *p)
{
	while (1) {
		char c, c1;
		int rc;
		skip_blanks(p);
		if (p->pos >= p->len)
			break;
		c = p->s[p->pos];
		c1 = p->pos + 1 < p->len ? p->s[p->pos + 1] : '\0';
		if (c == '#') {
			const char *nl = memchr(p->s + p->pos, '\n', p->len - p->pos);
			p->pos = nl ? (size_t)(nl - p->s) : p->len;
			continue;
		}
		if (c == '\n') {
			p->pos++;
			rc = 0;
			if (p->state == ST_CMD)
				rc = finish(p, 0);
			new_list(p);
			if (p->state != ST_NEED)
				p->state = ST_START;
			read_heredocs(p);
		} else if (strchr(";&|()", c) || ((c == '<' || c == '>') && c1 != '(')) {
			rc = operator(p);
		} else {
			rc = on_word(p);
		}
		if (rc < 0)
			return -1;
	}
	if (p->state == ST_CMD && finish(p, 0) < 0)
		return -1;
	if (p->state == ST_NEED)
		return fail(p, "`%s` at byte %zu is not followed by a command", p->need_what, p->need_at);
	if (p->parens)
		return fail(p, "the `(` at byte %zu is never closed", p->paren_at);
	return 0;
}

/* ---- entry points ---- */

int tgi_shell_split_env(const char *text, size_t len, const tgi_shell_env *env,
                        const char *const *params, size_t nparams, tgi_cmdline *out, char *err,
                        size_t errlen)
{
	sink o = { out, 0, 0, 0 };
	const char *nul;
	parser p;
	int rc;

	memset(out, 0, sizeof *out);
	if (!text && len)
		return errf(err, errlen, "the command is missing");
	if (!text)
		text = "";
	if (len > TGI_SHELL_MAX)
		return errf(err, errlen, "the command is longer than %u bytes", TGI_SHELL_MAX);
	if ((nul = memchr(text, '\0', len)) != NULL)
		return errf(err, errlen, "the command contains a NUL byte at byte %zu",
		            (size_t)(nul - text));
	parser_init(&p, &o, text, len, err, errlen);
	p.env = env;
	if (params) {
		p.bound = 1;
		p.params = (char *const *)params;
		p.nparams = nparams;
	}
	rc = parse_text(&p);
	parser_free(&p);
	if (rc < 0) {
		tgi_cmdline_free(out);
		return rc;
	}
	out->src = tgi_strndup(text, len);
	out->srclen = len;
	return 0;
}

int tgi_shell_split(const char *text, size_t len, tgi_cmdline *out, char *err, size_t errlen)
{
	return tgi_shell_split_env(text, len, NULL, NULL, 0, out, err, errlen);
}

int tgi_shell_from_argv_env(const char *const *argv, size_t argc, const tgi_shell_env *env,
                            tgi_cmdline *out, char *err, size_t errlen)
{
	sink o = { out, 0, 0, 0 };
	size_t total = 0;
	parser p;
	int rc;

	memset(out, 0, sizeof *out);
	if (!argv || !argc)
		return errf(err, errlen, "the command has no words");
	for (size_t i = 0; i < argc; i++) {
		if (!argv[i])
			return errf(err, errlen, "word %zu of the command is missing", i);
		total += strlen(argv[i]) + 1;
		if (total > TGI_SHELL_MAX)
			return errf(err, errlen, "the command is longer than %u bytes", TGI_SHELL_MAX);
	}
	parser_init(&p, &o, "", 0, err, errlen);
	p.env = env;
	for (size_t i = 0; i < argc; i++)
		wvec_push(&p.b.argv, tgi_strdup(argv[i]), F_ARGV);
	p.b.any = 1;
	rc = finish(&p, 0);
	parser_free(&p);
	if (rc < 0) {
		tgi_cmdline_free(out);
		return rc;
	}
	out->srcv = tgi_xcalloc(argc + 1, sizeof *out->srcv);
	for (size_t i = 0; i < argc; i++)
		out->srcv[i] = tgi_strdup(argv[i]);
	out->srcc = argc;
	return 0;
}

int tgi_shell_from_argv(const char *const *argv, size_t argc, tgi_cmdline *out, char *err,
                        size_t errlen)
{
	return tgi_shell_from_argv_env(argv, argc, NULL, out, err, errlen);
}
