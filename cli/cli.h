/*
 * cli.h — what the subcommands share: the gate options every subcommand
 * accepts, output for people (term.c), the other helpers (util.c), and
 * the entry points of the command table (main.c).
 */
#ifndef TG_CLI_H
#define TG_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>
#include "toolgate.h"

/* Options that open a gate, shared by subcommands (--config, --workspace,
 * --mode, --approval, --profile, --sync). */
typedef struct cli_gate_opts {
	tg_options o;
} cli_gate_opts;

#define CLI_GATE_OPTIONS_HELP                                                   \
	"  --config FILE        configuration (default: $TOOLGATE_CONFIG, else toolgate.yaml\n" \
	"                       here or in the nearest directory above)\n"            \
	"  --workspace DIR      workspace directory (default: from the config, the found\n" \
	"                       file's directory, or .)\n"                            \
	"  --mode MODE          default | acceptEdits | plan | bypassPermissions | dryRun\n" \
	"  --approval POLICY    ask | deny | untrusted (docs/MODES.md)\n"             \
	"  --profile NAME       minimal | coding | messaging | full | a configured one\n" \
	"  --sync LEVEL         ledger durability: normal | full\n"                 \
	"  --max-parallel N     calls of a batch run at once (1: serial; default 8)\n" \
	"  --wait-approval S    a call queued for approval waits up to S seconds for the\n" \
	"                       decision, made anywhere, then runs or is denied\n"

/* getopt_long codes for the shared options */
enum { OPT_CONFIG = 1000, OPT_WORKSPACE, OPT_MODE, OPT_APPROVAL, OPT_PROFILE, OPT_SYNC,
       OPT_MAX_PARALLEL, OPT_WAIT_APPROVAL };
#define CLI_GATE_LONGOPTS                                        \
	{"config", 1, 0, OPT_CONFIG}, {"workspace", 1, 0, OPT_WORKSPACE}, \
	{"mode", 1, 0, OPT_MODE}, {"approval", 1, 0, OPT_APPROVAL},   \
	{"profile", 1, 0, OPT_PROFILE}, {"sync", 1, 0, OPT_SYNC},      \
	{"max-parallel", 1, 0, OPT_MAX_PARALLEL},                   \
	{"wait-approval", 1, 0, OPT_WAIT_APPROVAL}

/* ---- output for people (term.c) ----
 * On a terminal (stdout) the commands print a human form; to a pipe, or
 * with --json, the JSON they always printed.  The commands that colour
 * take --color. */
enum { OPT_COLOR = 1100 };
#define CLI_COLOR_LONGOPT {"color", 1, 0, OPT_COLOR}
#define CLI_COLOR_HELP                                                         \
	"  --color WHEN         colour on a terminal: auto (the default: not with\n" \
	"                       $NO_COLOR set or TERM=dumb), always or never\n"

/* --color WHEN: 1 handled, 0 not this option, -1 a bad value (said). */
int  cli_color_opt(int opt, const char *arg);
/* Is f a terminal (the human forms are for it)? */
int  cli_tty(FILE *f);
/* Colour what goes to f? */
int  cli_color(FILE *f);
/* s in colour sgr (ANSI SGR parameters, "" none) when f is coloured;
 * control characters as spaces. */
void cli_paint(FILE *f, const char *sgr, const char *s);
/* A status (or a decision: allow, ask, deny; or an approval's state) in
 * its colour, padded to width. */
void cli_status(FILE *f, const char *status, int width);
/* n bytes of s, from a tool, a model or the ledger: control characters (but
 * newline and tab) as spaces, so that nothing in it can drive the terminal. */
void cli_text(FILE *f, const char *s, size_t n);
/* A call's plan (a dry run's, an approval's) as tg_plan_text gives it. */
void cli_plan(FILE *f, const json_t *plan);
/* A JSON value as lines for a person: a string as its text, an object as
 * "key: value" lines (nulls left out, multi-line strings on lines of their
 * own), anything else as compact JSON; indent spaces before each line. */
void cli_value(FILE *f, const json_t *v, int indent);

/* ---- the gate, input, errors (util.c) ---- */

void cli_gate_opts_init(cli_gate_opts *g);
/* Handle a shared option; 1 if it was one, 0 if not, -1 on a bad value. */
int  cli_gate_opt(cli_gate_opts *g, int opt, const char *arg);
/* Open the gate or print the reason; NULL on failure. */
tg_gate *cli_gate_open(cli_gate_opts *g);
/* Say on stderr that the ledger is foreign (why: its sentence; NULL says
 * nothing) and only read. */
void cli_foreign_warning(const char *why);

/* A gate opened with no_create (the read-only commands) that found no
 * ledger: says so on stderr and returns 1; 0 when there is one. */
int cli_no_ledger(tg_gate *g);

/* Print to stderr "toolgate: <msg>\n"; returns 1 (the usage/config exit code). */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Read all of a file (or stdin for "-") up to max bytes; NULL + message on error. */
char *cli_read_input(const char *path, size_t max, size_t *len);

/* --since WHEN: 30s, 10m, 2h, 1d (before now) or 2026-11-30[T12:00:00Z]
 * (UTC), as unix ms into *out; -1 when it is neither. */
int cli_parse_since(const char *s, long long *out);

/* ---- the command table (main.c) ----
 * As git's run_builtin() does what a command's RUN_SETUP asks for, the
 * runner opens the gate a row asks for.  cmd_<name>() parses the options
 * (the shared ones through cli_getopt) and returns CLI_RUN; the runner opens
 * the gate (the row's GATE_* flags, then the options: cli_gate_open), calls
 * cmd_<name>_run() with it, closes it, then calls r->done.  A command ends
 * before that by returning its exit code: --help, a usage error, a command
 * without NEED_GATE, or one that needs no gate this time (policy check).
 * What a command parsed for its run is kept in statics of its file, as git's
 * builtins keep their options. */
#define NEED_GATE       (1u << 0) /* cmd_<name>() may return CLI_RUN */
#define GATE_BRIDGE     (1u << 1) /* tg_options.bridge: the configuration's mcp_servers */
#define GATE_ASK        (1u << 2) /* .interactive: `ask` may prompt on the terminal */
#define GATE_NO_CREATE  (1u << 3) /* .no_create: reads the ledger that is there */
#define GATE_FOREIGN_OK (1u << 4) /* .foreign_ok: a foreign ledger is read, with a warning */

#define CLI_RUN (-1)   /* from cmd_<name>(): parsed; open the gate and run */

typedef struct cli_run {
	cli_gate_opts go;     /* the gate's options: the row's flags, then the shared
	                         options; cmd_<name>() may change them (ops list reads) */
	tg_gate      *g;      /* cmd_<name>_run(): the gate (log --follow reopens it);
	                         the runner closes it */
	const char   *usage;  /* the command's usage text, set by cmd_<name>() */
	void        (*done)(void); /* or NULL: called last, whatever became of the command:
	                         lets go of what cmd_<name>() kept for its run */
	int           rc;     /* cli_getopt's -1: the exit code */
} cli_run;

/*
 * (util.c) getopt_long over a command's options (longopts has CLI_GATE_LONGOPTS, and
 * CLI_COLOR_LONGOPT if it colours; 'h' is --help): the next of its own
 * options (> 0), the shared ones taken on the way into r->go and the
 * colour; 0 at the end (the operands from argv[optind]); -1 when the
 * command ends here with r->rc: 0 after --help (r->usage on stdout), 1
 * after a bad option or value (r->usage on stderr).
 */
int cli_getopt(cli_run *r, int argc, char **argv, const char *shortopts,
               const struct option *longopts);
/* r->usage on stderr; returns 1. */
int cli_usage(const cli_run *r);

int cmd_call(cli_run *r, int argc, char **argv);
int cmd_call_run(cli_run *r);
int cmd_tools(cli_run *r, int argc, char **argv);
int cmd_tools_run(cli_run *r);
int cmd_log(cli_run *r, int argc, char **argv);
int cmd_log_run(cli_run *r);
int cmd_stats(cli_run *r, int argc, char **argv);
int cmd_stats_run(cli_run *r);
int cmd_approvals(cli_run *r, int argc, char **argv);
int cmd_approvals_run(cli_run *r);
int cmd_ops(cli_run *r, int argc, char **argv);
int cmd_ops_run(cli_run *r);
int cmd_policy(cli_run *r, int argc, char **argv);
int cmd_policy_run(cli_run *r);
int cmd_doctor(cli_run *r, int argc, char **argv);
int cmd_doctor_run(cli_run *r);
int cmd_dispatch(cli_run *r, int argc, char **argv);
int cmd_dispatch_run(cli_run *r);
int cmd_serve(cli_run *r, int argc, char **argv);
int cmd_serve_run(cli_run *r);
int cmd_console(cli_run *r, int argc, char **argv);
int cmd_console_run(cli_run *r);
int cmd_agent(cli_run *r, int argc, char **argv);
int cmd_agent_run(cli_run *r);
int cmd_eval(cli_run *r, int argc, char **argv);
int cmd_eval_run(cli_run *r);
int cmd_apply_patch(cli_run *r, int argc, char **argv);
int cmd_migrate(cli_run *r, int argc, char **argv);
int cmd_ledger(cli_run *r, int argc, char **argv);

#endif
