/*
 * cli.h — what the subcommands share: the command table entry point type
 * and the gate options every subcommand accepts.
 */
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stddef.h>
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

void cli_gate_opts_init(cli_gate_opts *g);
/* Handle a shared option; 1 if it was one, 0 if not, -1 on a bad value. */
int  cli_gate_opt(cli_gate_opts *g, int opt, const char *arg);
/* Open the gate or print the reason; NULL on failure. */
tg_gate *cli_gate_open(cli_gate_opts *g);

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
