/*
 * cmd_policy.c — `toolgate policy check [-r|--rules F]... [--pretty]
 * [--resolve-host-executables] [--explain] -- CMD...` and `toolgate policy
 * test`.
 *
 * check prints Codex's `execpolicy check` JSON and exits 0 whatever the
 * decision, so it can stand in for `codex execpolicy check`: the same
 * options, the words one command taken as they are, a program path read
 * by its basename only with --resolve-host-executables.  --explain prints
 * the gate's whole decision for the command instead (floor, execpolicy as
 * the gate reads it, permission rules, mode).  test runs every self-test of the
 * configuration and exits 1 on any failure: for a project's CI.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate policy check [-r|--rules FILE]... [--pretty] [--resolve-host-executables]\n"
	"                             [--explain] -- COMMAND...\n"
	"       toolgate policy test\n\n"
	"check    Codex's execpolicy JSON for the command: the rules that match it and the\n"
	"         strictest decision (exit 0 for every decision), as `codex execpolicy check`\n"
	"         prints it.  Rules from --rules, else from the configuration's execpolicy files.\n"
	"  --resolve-host-executables  a program given as a path (/usr/bin/git) is also\n"
	"             judged by the rules for its basename, where host_executable allows\n"
	"             that path (without it, only rules naming the path as written match)\n"
	"  --explain  the gate's whole decision instead: floor, execpolicy, permission\n"
	"             rules, mode, read-only class (nothing is run)\n"
	"test     run every execpolicy example and every permissions.tests entry; print a\n"
	"         line per failure and \"N passed, N failed\"; exit 1 on any failure\n\n"
	"options:\n" CLI_GATE_OPTIONS_HELP;

typedef struct policy_opts {
	cli_gate_opts go;
	const char  **rules;
	size_t        nrules;
	int           pretty, explain, resolve_host;
} policy_opts;

/* Options up to the next word that is not one (the subcommand, or the
 * command after "--"): 1 parsed, 0 --help shown, -1 usage error. */
static int parse_opts(int argc, char **argv, policy_opts *po)
{
	static const struct option longopts[] = {
		{"rules", 1, 0, 'r'}, {"pretty", 0, 0, 'p'}, {"explain", 0, 0, 'e'},
		{"resolve-host-executables", 0, 0, 'R'},
		{"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "+hr:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r': po->rules[po->nrules++] = optarg; break;
		case 'p': po->pretty = 1; break;
		case 'R': po->resolve_host = 1; break;
		case 'e': po->explain = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&po->go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return -1;
		}
	}
	return 1;
}

int cmd_policy(int argc, char **argv)
{
	policy_opts po = {.rules = calloc((size_t)argc + 1, sizeof(char *))};
	int code = 1, r;
	char *err = NULL, *out = NULL;

	cli_gate_opts_init(&po.go);
	po.go.o.no_create = 1;        /* check --explain and test make no ledger of their own */
	optind = 1;
	/* options may come before the subcommand and after it */
	if ((r = parse_opts(argc, argv, &po)) <= 0) {
		free(po.rules);
		return r < 0;
	}
	const char *sub = optind < argc ? argv[optind++] : "";
	if ((r = parse_opts(argc, argv, &po)) <= 0) {
		free(po.rules);
		return r < 0;
	}
	if (!strcmp(sub, "check")) {
		if (optind >= argc) {
			free(po.rules);
			return cli_error("policy check: give the command after --, e.g. "
			                 "toolgate policy check -- git push origin main");
		}
		const char *const *cmd = (const char *const *)argv + optind;
		size_t ncmd = (size_t)(argc - optind);
		if (po.explain) {
			tg_gate *g = cli_gate_open(&po.go);
			if (g) {
				out = tg_policy_explain(g, cmd, ncmd, po.pretty, &err);
				tg_gate_close(g);
			}
		} else {
			unsigned flags = (po.pretty ? TG_POLICY_PRETTY : 0) |
			                 (po.resolve_host ? TG_POLICY_RESOLVE_HOST : 0);
			out = tg_policy_check(po.go.o.config_path, po.rules, po.nrules, cmd, ncmd,
			                      flags, &err);
		}
		if (out) {
			printf("%s\n", out);
			code = 0;
		} else if (err) {
			cli_error("%s", err);
		}
	} else if (!strcmp(sub, "test") && optind == argc) {
		tg_gate *g = cli_gate_open(&po.go);
		if (g) {
			char *report = NULL;
			int failed = tg_policy_test(g, &report, &err);
			if (report)
				fputs(report, stdout);
			if (failed < 0)
				cli_error("%s", err ? err : "policy test could not run");
			code = failed != 0;
			free(report);
			tg_gate_close(g);
		}
	} else {
		fputs(usage_text, stderr);
	}
	free(out);
	free(err);
	free(po.rules);
	return code;
}
