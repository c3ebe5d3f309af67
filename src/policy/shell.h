/*
 * shell.h — command lines as policy sees them: tokenised with POSIX shell
 * quoting, split into simple commands, normalised (src/policy/shell.c);
 * the hard floor for commands (floor.c) and the read-only class
 * (readonly.c).
 *
 * A command string is split on `&&`, `||`, `;`, `|`, `&`, newlines and
 * subshell/group parentheses and braces.  Each simple command keeps its
 * leading VAR=value assignments apart, its words with quotes removed and
 * normalised (backslash-newline joined, `$IFS`/`${IFS}` read as a word
 * break, NFKC applied so Unicode lookalikes become what they look like),
 * and its redirections.  Constructs the splitter cannot judge make the
 * command opaque, with the reason: command substitution `$(…)` or
 * backticks (also inside double quotes), process substitution `<(…)`,
 * `>(…)`, `eval`, a shell fed by a here-doc, a here-string or a pipe, a
 * `sh -c`/`bash -c` whose script is not a literal, a program name that is
 * an expansion (`$CMD`), a here-doc whose body substitutes commands (other
 * here-doc bodies are data and are not judged).  The text inside a
 * substitution is split too: its simple commands come before the command
 * holding it.  `bash -lc "a && b"` (sh, bash, dash, zsh, ksh; -c with any
 * of -l, -e, -x, -u in one cluster) with a literal script is unwrapped:
 * its simple commands replace it (depth at most 4), each keeping the
 * wrappers before the shell (`sudo bash -c 'ls'` gives `sudo ls`) and the
 * shell's redirections, pipe and background flags.
 *
 * Owns: the grammar and normalisation.  Must not: decide (floor.c,
 * execpolicy.c, rules.c and decide.c do).
 */
#ifndef TGI_SHELL_H
#define TGI_SHELL_H

#include <stddef.h>
#include "util/util.h"

#define TGI_SHELL_MAX      (1u << 20)  /* bytes of one command string */
#define TGI_SHELL_MAX_CMDS 1024        /* simple commands in one line */
#define TGI_SHELL_MAX_FUNCS 64         /* function definitions kept from one line */

/* A redirection: [fd]op target.  op is one of "<", ">", ">>", ">|", "&>",
 * "&>>", "<>", ">&", "<&", "<<", "<<-", "<<<". */
typedef struct tgi_redir {
	int   fd;        /* the fd redirected (-1: the default for op) */
	char  op[4];
	char *target;    /* normalised word (owned); a here-doc: its delimiter */
	char *body;      /* a here-doc's body as written (owned; NULL for other ops, or
	                    when the line ends before it) */
} tgi_redir;

enum {
	TGI_CMD_OPAQUE    = 1u << 0,  /* cannot be judged: never auto-allowed */
	TGI_CMD_PIPED_IN  = 1u << 1,  /* its stdin is the previous command's stdout (`|`) */
	TGI_CMD_BACKGROUND= 1u << 2,  /* ended by `&` */
};

typedef struct tgi_cmd {
	char     **argv;     /* owned, NULL-terminated: the words, normalised */
	size_t     argc;     /* may be 0 (only assignments or redirections) */
	char     **assigns;  /* owned, NULL-terminated: leading NAME=value words */
	size_t     nassigns;
	tgi_redir *redirs;   /* owned */
	size_t     nredirs;
	unsigned   flags;    /* TGI_CMD_* */
	char      *why;      /* owned: for TGI_CMD_OPAQUE, a phrase ("command substitution $(…)") */
	size_t     depth;    /* 0, or how many `sh -c` wrappers it was unwrapped from */
	unsigned   subshell; /* the innermost `( … )` it runs in: an id unique in the line,
	                        0 for none (a cd inside one ends with it) */
	unsigned   sublevel; /* how many `( … )` it is inside */
	unsigned   nest;     /* how many compound commands (if, while, until, for,
	                        { … }, ( … )) of its own script it is inside */
	size_t     from;     /* with TGI_CMD_PIPED_IN: the index of the first command
	                        of the pipeline member whose output it reads (a
	                        compound member spans from there to it) */
} tgi_cmd;

/* A shell function the line defines: `NAME () BODY` or `function NAME`. */
typedef struct tgi_func {
	char *name;          /* owned, normalised */
	char *body;          /* owned: the compound command as written ("{ rm -rf \"$1\"; }") */
} tgi_func;

typedef struct tgi_cmdline {
	tgi_cmd  *v;         /* owned */
	size_t    n;
	tgi_func *funcs;     /* owned: the functions defined, in order (at most TGI_SHELL_MAX_FUNCS) */
	size_t    nfuncs;
	char     *src;       /* owned: the command string split (NULL for the argv form) */
	size_t    srclen;
	char    **srcv;      /* owned, NULL-terminated: the argv form's words (NULL for a string) */
	size_t    srcc;
} tgi_cmdline;

/*
 * Split a command string.  0 with *out filled (free with
 * tgi_cmdline_free), or -1 with a sentence in err for what no shell would
 * run either: an unterminated quote, an empty command between operators
 * (`a && && b`), a line over TGI_SHELL_MAX, more than TGI_SHELL_MAX_CMDS
 * commands, a NUL byte.
 */
int  tgi_shell_split(const char *text, size_t len, tgi_cmdline *out, char *err, size_t errlen);

/*
 * The argv form (`{"command": ["git", "status"]}`): one simple command,
 * words taken as they are (no quote removal, no splitting), NFKC-normalised;
 * a shell wrapper with a literal script (`["bash", "-lc", "a && b"]`) is
 * unwrapped as above.  Same returns.
 */
int  tgi_shell_from_argv(const char *const *argv, size_t argc, tgi_cmdline *out, char *err,
                         size_t errlen);
void tgi_cmdline_free(tgi_cmdline *cl);

/*
 * A split that evaluates (src/policy/expand.c drives it for the floor):
 * the splitter asks env for what a parameter expansion holds instead of
 * keeping it as written, and for what a command substitution prints.  A
 * plain split (env NULL) keeps every expansion as text.
 *
 * lookup: the value of parameter name ("d", "HOME", "1", "@", "#", "?") at
 * one use.  dominated: an assignment to it earlier in the same script
 * always runs before this use (the first command of a list, not piped,
 * not in the background, not inside a compound command that has ended
 * since; or earlier in the same `&&` chain).  raw: an operator
 * (`${d%/x}`) needs the value itself, so "keep" is worth less.  Returns 1
 * with *fields (borrowed until the split returns; several for an array or
 * "$@"), or 0 to keep the expansion as written.
 * subst: what the text of a command substitution prints, when that can be
 * told without running it: 1 with *out (caller frees), else 0.
 * ifs: the characters unquoted expansions are split on (NULL: space, tab,
 * newline).
 */
typedef struct tgi_shell_env {
	void       *ctx;
	int       (*lookup)(void *ctx, const char *name, int dominated, int raw,
	                    const char *const **fields, size_t *n);
	int       (*subst)(void *ctx, const char *text, size_t len, char **out);
	const char *ifs;
} tgi_shell_env;

/*
 * Split with env (may be NULL).  params, when not NULL, are the positional
 * parameters $1… of the text (a function body called with arguments);
 * otherwise they are env's ("1", "@") or, without env, empty.  Inside it,
 * `sh -c SCRIPT A0 A1 …` binds $0 to A0 and $1… to the rest instead of
 * making the script opaque.  Same returns as tgi_shell_split.
 */
int tgi_shell_split_env(const char *text, size_t len, const tgi_shell_env *env,
                        const char *const *params, size_t nparams, tgi_cmdline *out, char *err,
                        size_t errlen);
int tgi_shell_from_argv_env(const char *const *argv, size_t argc, const tgi_shell_env *env,
                            tgi_cmdline *out, char *err, size_t errlen);

/* The basename of a program word: "/usr/bin/sudo" -> "sudo". */
const char *tgi_shell_basename(const char *word);

/*
 * Where the real program starts once wrappers are peeled: sudo/doas (with
 * their options), env (options and NAME=value), nice, ionice, nohup, time,
 * command, exec, builtin, timeout DURATION, stdbuf, chrt, taskset, setsid,
 * xargs (its options; the rest is the program it runs).  Returns the index
 * into cmd->argv (== argc when nothing is left).
 */
size_t tgi_shell_program(const tgi_cmd *cmd);

/*
 * The hard floor for commands (floor.c), compiled in; nothing lifts it.
 * Judged on every simple command's program (wrappers peeled, basename),
 * arguments and redirections, and on pipelines: recursive delete of / (or everything in it),
 * ~, $HOME or the workspace root; mkfs*; dd or redirects to block devices;
 * fork bombs; curl/wget piped into sh/bash/zsh/python/perl/ruby/node;
 * chmod/chown -R on /; writes to /etc/passwd, /etc/shadow, /etc/sudoers,
 * ~/.ssh; /proc/sysrq-trigger, /dev/mem; shutdown, reboot, halt, poweroff,
 * kexec, init 0/6, kill 1/-1; rsync --delete and git clean -f of those
 * directories.  workspace and home are absolute.  Returns 1 with a reason
 * ("recursive delete of the filesystem root"), else 0: tgi_floor_judge's
 * DENY (its BLIND is 0 here).
 */
int tgi_floor_command(const tgi_cmdline *cl, const char *workspace, const char *home,
                      char *reason, size_t cap);

/*
 * The floor with its third answer: what it cannot see into.  Before
 * judging, the line is evaluated (expand.h): literal variables, loops over
 * literal lists, reads and xargs fed by literals, aliases and functions
 * the line defines, eval of a literal, sh -c at any depth, command
 * substitutions of literals; inline interpreter code (code.h) is read for
 * the floor's targets; a download run in a later command of the line is a
 * download run.
 *
 * TGI_FLOOR_DENY: floored, reason says why.  TGI_FLOOR_BLIND: nothing
 * floored, but a word the floor would judge (a path deleted or written, a
 * program, code) holds something the line does not tell (a variable set
 * outside it, a read from a file, a command substitution, code built at run
 * time), or a bound was passed: reason says what; a caller that would run
 * the line without asking asks instead.  TGI_FLOOR_CLEAR: neither.
 * env: "NAME=value" the command gets besides the line (its own variables,
 * which the line may use); may be NULL.
 */
typedef enum { TGI_FLOOR_CLEAR, TGI_FLOOR_BLIND, TGI_FLOOR_DENY } tgi_floor_verdict;

typedef struct tgi_floor_in {
	const char        *workspace;  /* absolute */
	const char        *home;       /* absolute, or NULL: $HOME, then the passwd entry */
	const char *const *env;
	size_t             nenv;
} tgi_floor_in;

tgi_floor_verdict tgi_floor_judge(const tgi_cmdline *cl, const tgi_floor_in *in, char *reason,
                                  size_t cap);

/*
 * Is every simple command read-only (readonly.c)?  A command is when its
 * program (wrappers peeled; a wrapper like sudo makes it not) is in the
 * list with its conditions: `ls`, `cat`, `grep`, `rg`, `pwd`, `wc`,
 * `head`, `tail`, `find` without -exec/-execdir/-ok/-delete/-fprint*,
 * `git status|log|diff|show|branch (no args)|rev-parse`, ...; it is not
 * opaque; and it redirects output nowhere but /dev/null (or to another
 * fd).  extra (may be NULL) is the config's list: entries "prog" or
 * "prog sub" added to the built-in ones; replace != 0 uses extra alone.
 * 1 or 0.
 */
int tgi_shell_readonly(const tgi_cmdline *cl, const tgi_strv *extra, int replace);

/* Is the program at cmd->argv[from] (wrappers before it peeled) with its
 * arguments in the read-only class, whatever its redirections?  1 or 0. */
int tgi_shell_reads_only(const tgi_cmd *cmd, size_t from, const tgi_strv *extra, int replace);

/*
 * What a command reads, for judging it against read rules (readonly.c):
 * the words naming files it reads, as written (appended to out, copies):
 * its input redirections (`< F`), then for the program at argv[from]
 * (wrappers peeled by the caller) its file operands -- grep's pattern,
 * sed's script and option values left out, `git show REV:PATH` giving
 * PATH, find's starting points, "." for a recursive reader naming none.
 * *recursive: it reads what lies below a directory it names (grep -r,
 * rg, find, du, ls -R, ...).  Returns 0 when the program is one whose
 * arguments it knows (cd: none; the caller follows it), 1 when every word
 * not an option was taken as a file (a program it does not know).
 */
int tgi_shell_read_paths(const tgi_cmd *cmd, size_t from, tgi_strv *out, int *recursive);

#endif
