/*
 * main.c — the `toolgate` program: a command table, like git's, with one
 * cmd_<name>() per subcommand in cli/cmd_<name>.c.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"serve", cmd_serve, "serve the gate to MCP clients (stdio, Streamable HTTP), bridging servers"},
	{"console", cmd_console, "the web console: calls live, approvals, stats, sessions"},
	{"call", cmd_call, "run one tool call (or a batch) through the gate"},
	{"dispatch", cmd_dispatch, "run the tool calls of a model's response; print the results"},
	{"agent", cmd_agent, "run a model with the gate's tools: a model API, a replay, the demo"},
	{"eval", cmd_eval, "score how well a model calls the tools: per-tool evals, compare, history"},
	{"tools", cmd_tools, "print the tool definitions for a profile (or in an API's shape)"},
	{"log", cmd_log, "show the ledger: calls, statuses and their events"},
	{"stats", cmd_stats, "per-tool calls by status, p50/p99 duration, denials by rule"},
	{"approvals", cmd_approvals, "list, approve or deny queued approvals"},
	{"ops", cmd_ops, "list and settle unknown outcomes (ops list --unknown, ops resolve)"},
	{"migrate", cmd_migrate, "bring the ledger's schema up to date (--dry-run: show what would)"},
	{"ledger", cmd_ledger, "export the ledger's history as JSON lines; import it into another"},
	{"apply-patch", cmd_apply_patch, "apply a V4A patch here, as Codex's apply_patch does"},
	{"policy", cmd_policy, "execpolicy check (Codex's JSON), explain a decision, run self-tests"},
	{"doctor", cmd_doctor, "what this machine gives the gate: sandbox backend, limits"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: toolgate <command> [options]\n\n"
	           "toolgate puts a gate in front of every tool call an LLM agent makes.\n\n"
	           "commands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n  toolgate <command> --help   options of one command\n"
	           "  toolgate --version\n");
}

int main(int argc, char **argv)
{
	/* a write past RLIMIT_FSIZE must fail with EFBIG, not kill us mid-row */
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		if (argc >= 3 && !strcmp(argv[1], "help")) {
			char *sub[] = {argv[2], "--help", NULL};
			for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
				if (!strcmp(commands[i].name, argv[2]))
					return commands[i].fn(2, sub);
		}
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 1 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("toolgate %s\n", tg_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(commands[i].name, argv[1]))
			return commands[i].fn(argc - 1, argv + 1);
	cli_error("'%s' is not a toolgate command; see 'toolgate --help'", argv[1]);
	return 1;
}
