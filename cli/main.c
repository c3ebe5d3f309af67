/*
 * main.c — the `toolgate` program: a command table, like git's, with one
 * cmd_<name>() per subcommand in cli/cmd_<name>.c, and the runner that
 * opens the gate a row asks for (NEED_GATE, as git's RUN_SETUP).
 */
#include <assert.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cmd {
	const char *name;
	int (*fn)(cli_run *r, int argc, char **argv);   /* the options: CLI_RUN, or the exit code */
	int (*run)(cli_run *r);                         /* NEED_GATE: the work, with r->g */
	unsigned    flags;                              /* NEED_GATE, GATE_*: cli.h */
	const char *summary;
} commands[] = {
	{"serve", cmd_serve, cmd_serve_run, NEED_GATE | GATE_BRIDGE,
	 "serve the gate to MCP clients (stdio, Streamable HTTP), bridging servers"},
	{"console", cmd_console, cmd_console_run, NEED_GATE,
	 "the web console: calls live, approvals, stats, sessions"},
	{"call", cmd_call, cmd_call_run, NEED_GATE | GATE_BRIDGE | GATE_ASK,
	 "run one tool call (or a batch) through the gate"},
	{"dispatch", cmd_dispatch, cmd_dispatch_run, NEED_GATE | GATE_BRIDGE,
	 "run the tool calls of a model's response; print the results"},
	{"agent", cmd_agent, cmd_agent_run, NEED_GATE | GATE_BRIDGE | GATE_ASK,
	 "run a model with the gate's tools: a model API, a replay, the demo"},
	{"eval", cmd_eval, cmd_eval_run, NEED_GATE,   /* which gate: by the view (--history ...) */
	 "score how well a model calls the tools: per-tool evals, compare, history"},
	{"tools", cmd_tools, cmd_tools_run, NEED_GATE | GATE_BRIDGE | GATE_NO_CREATE,
	 "print the tool definitions for a profile (or in an API's shape)"},
	{"log", cmd_log, cmd_log_run, NEED_GATE | GATE_NO_CREATE | GATE_FOREIGN_OK,
	 "show the ledger: calls, statuses and their events"},
	{"stats", cmd_stats, cmd_stats_run, NEED_GATE | GATE_NO_CREATE | GATE_FOREIGN_OK,
	 "per-tool calls by status, p50/p99 duration, denials by rule"},
	{"approvals", cmd_approvals, cmd_approvals_run,   /* deciding: not in a foreign ledger */
	 NEED_GATE | GATE_NO_CREATE | GATE_FOREIGN_OK,
	 "list, approve or deny queued approvals"},
	{"ops", cmd_ops, cmd_ops_run, NEED_GATE,   /* list: no_create, foreign_ok */
	 "list and settle unknown outcomes (ops list --unknown, ops resolve)"},
	{"migrate", cmd_migrate, NULL, 0,
	 "bring the ledger's schema up to date (--dry-run: show what would)"},
	{"ledger", cmd_ledger, NULL, 0,
	 "export the ledger's history as JSON lines; import it into another"},
	{"apply-patch", cmd_apply_patch, NULL, 0,
	 "apply a V4A patch here, as Codex's apply_patch does"},
	{"policy", cmd_policy, cmd_policy_run, NEED_GATE | GATE_NO_CREATE | GATE_FOREIGN_OK,
	 "execpolicy check (Codex's JSON), explain a decision, run self-tests"},
	{"doctor", cmd_doctor, cmd_doctor_run, NEED_GATE | GATE_NO_CREATE | GATE_FOREIGN_OK,
	 "what this machine gives the gate: sandbox backend, limits"},
};

/* Run one command: its options, then, as its row asks, the gate it works on. */
static int run(const struct cmd *c, int argc, char **argv)
{
	cli_run r;
	memset(&r, 0, sizeof r);
	cli_gate_opts_init(&r.go);
	r.go.o.bridge = !!(c->flags & GATE_BRIDGE);
	r.go.o.interactive = !!(c->flags & GATE_ASK);
	r.go.o.no_create = !!(c->flags & GATE_NO_CREATE);
	r.go.o.foreign_ok = !!(c->flags & GATE_FOREIGN_OK);
	optind = 1;
	int rc = c->fn(&r, argc, argv);
	if (rc == CLI_RUN) {
		assert(c->flags & NEED_GATE);
		r.g = cli_gate_open(&r.go);
		rc = r.g ? c->run(&r) : 1;
		tg_gate_close(r.g);
	}
	if (r.done)
		r.done();
	return rc;
}

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
					return run(&commands[i], 2, sub);
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
			return run(&commands[i], argc - 1, argv + 1);
	cli_error("'%s' is not a toolgate command; see 'toolgate --help'", argv[1]);
	return 1;
}
