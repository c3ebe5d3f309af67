/*
 * cli.h — what the subcommands share: the gate options every subcommand
 * accepts, output for people (term.c), the other helpers (util.c), and
 * the entry points of the command table (main.c).
 */
#ifndef TG_CLI_H
#define TG_CLI_H

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

int cmd_call(int argc, char **argv);
int cmd_tools(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_approvals(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_apply_patch(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_dispatch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_console(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_ledger(int argc, char **argv);

#endif
