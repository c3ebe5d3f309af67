/*
 * cmd_policy.c — `toolgate policy check [-r|--rules F]... [--pretty]
 * [--resolve-host-executables] [--explain [--json]] -- CMD...` and
 * `toolgate policy test`.
 *
 * check prints Codex's `execpolicy check` JSON and exits 0 whatever the
 * decision, so it can stand in for `codex execpolicy check`: the same
 * options, the words one command taken as they are, a program path read
 * by its basename only with --resolve-host-executables.  --explain prints
 * the gate's whole decision for the command instead (floor, execpolicy as
 * the gate reads it, from --rules when given, permission rules, mode): on a
 * terminal as lines for a person, to a pipe (or with --json, --pretty) as
 * JSON.  test runs every self-test of the configuration and exits 1 on any
 * failure: for a project's CI.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate policy check [-r|--rules FILE]... [--pretty] [--resolve-host-executables]\n"
	"                             [--explain [--json]] -- COMMAND...\n"
	"       toolgate policy test [options]\n\n"
	"check    Codex's execpolicy JSON for the command: the rules that match it and the\n"
	"         strictest decision (exit 0 for every decision), as `codex execpolicy check`\n"
	"         prints it.  Rules from --rules, else from the configuration's execpolicy files.\n"
	"  -r, --rules FILE  an execpolicy .rules file (repeatable): these rules instead of\n"
	"             the configuration's (with --explain too)\n"
	"  --pretty   indented JSON\n"
	"  --resolve-host-executables  a program given as a path (/usr/bin/git) is also\n"
	"             judged by the rules for its basename, where host_executable allows\n"
	"             that path (without it, only rules naming the path as written match)\n"
	"  --explain  the gate's whole decision instead: floor, execpolicy, permission\n"
	"             rules, mode, read-only class (nothing is run); on a terminal as\n"
	"             lines, to a pipe as JSON\n"
	"  --json     with --explain: JSON on a terminal too\n"
	"test     run every execpolicy example and every permissions.tests entry; print a\n"
	"         line per failure and \"N passed, N failed\"; exit 1 on any failure\n\n"
	"options:\n" CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

typedef struct policy_opts {
	cli_gate_opts go;
	const char  **rules;
	size_t        nrules;
	int           pretty, explain, resolve_host, json;
} policy_opts;

/* Options up to the next word that is not one (the subcommand, or the
 * command after "--"): 1 parsed, 0 --help shown, -1 usage error. */
static int parse_opts(int argc, char **argv, policy_opts *po)
{
	static const struct option longopts[] = {
		{"rules", 1, 0, 'r'}, {"pretty", 0, 0, 'p'}, {"explain", 0, 0, 'e'},
		{"resolve-host-executables", 0, 0, 'R'}, {"json", 0, 0, 'j'},
		{"help", 0, 0, 'h'}, CLI_COLOR_LONGOPT, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "+hr:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r': po->rules[po->nrules++] = optarg; break;
		case 'p': po->pretty = 1; break;
		case 'R': po->resolve_host = 1; break;
		case 'e': po->explain = 1; break;
		case 'j': po->json = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&po->go, opt, optarg) == 1 || cli_color_opt(opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return -1;
		}
	}
	return 1;
}

/* --explain on a terminal: the decision first, then what made it. */
static void print_explained(const char *text)
{
	json_t *x = json_loads(text, 0, NULL), *w;
	size_t i;
	const char *s;
	fputs("command    ", stdout);
	json_array_foreach(json_object_get(x, "command"), i, w) {
		if (i)
			putchar(' ');
		cli_paint(stdout, "1", json_string_value(w));
	}
	fputs("\ndecision   ", stdout);
	cli_status(stdout, json_string_value(json_object_get(x, "decision")), 0);
	if ((s = json_string_value(json_object_get(x, "stage"))) && strcmp(s, "decide")) {
		fputs(" (stopped at ", stdout);
		cli_paint(stdout, "", s);
		putchar(')');
	}
	if ((s = json_string_value(json_object_get(x, "rule")))) {
		fputs("\nrule       ", stdout);
		cli_paint(stdout, "", s);
	}
	fputs("\nfloor      ", stdout);
	s = json_string_value(json_object_get(x, "floor"));
	cli_paint(stdout, s ? "31" : "", s ? s : "nothing it stops");
	if ((s = json_string_value(json_object_get(x, "floor_cannot_judge")))) {
		fputs("\n           cannot judge: ", stdout);
		cli_paint(stdout, "", s);
	}
	json_t *ep = json_object_get(x, "execpolicy");
	fputs("\nexecpolicy ", stdout);
	s = json_string_value(json_object_get(ep, "decision"));
	if (s)
		cli_status(stdout, s, 0);
	else
		fputs("no rule matches", stdout);
	json_array_foreach(json_object_get(ep, "matchedRules"), i, w) {
		json_t *m = json_object_get(w, "prefixRuleMatch"), *p;
		size_t j;
		fputs("\n           ", stdout);
		json_array_foreach(json_object_get(m, "matchedPrefix"), j, p) {
			if (j)
				putchar(' ');
			cli_paint(stdout, "", json_string_value(p));
		}
		fputs(": ", stdout);
		cli_paint(stdout, "", json_string_value(json_object_get(m, "decision")));
		if ((s = json_string_value(json_object_get(m, "justification")))) {
			fputs(" (", stdout);
			cli_paint(stdout, "", s);
			putchar(')');
		}
	}
	json_array_foreach(json_object_get(x, "opaque"), i, w) {
		fputs(i ? "\n           " : "\nopaque     ", stdout);
		cli_paint(stdout, "", json_string_value(w));
	}
	printf("\nread-only  %s\nmode       ",
	       json_is_true(json_object_get(x, "read_only")) ? "yes" : "no");
	cli_paint(stdout, "", json_string_value(json_object_get(x, "mode")));
	fputs("\nsandbox    ", stdout);
	cli_paint(stdout, "", json_string_value(json_object_get(x, "sandbox")));
	fputs("\n(nothing was run; the JSON: toolgate policy check --explain --json -- ...)\n",
	      stdout);
	json_decref(x);
}

int cmd_policy(int argc, char **argv)
{
	policy_opts po = {.rules = calloc((size_t)argc + 1, sizeof(char *))};
	int code = 1, r;
	char *err = NULL, *out = NULL;

	cli_gate_opts_init(&po.go);
	po.go.o.no_create = 1;        /* check --explain and test make no ledger of their own */
	po.go.o.foreign_ok = 1;       /* nor use one's authority */
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
		if (po.json && !po.explain) {
			free(po.rules);
			return cli_error("policy check: --json goes with --explain (check prints "
			                 "Codex's JSON already)");
		}
		if (po.explain) {
			tg_gate *g = cli_gate_open(&po.go);
			if (g) {
				out = tg_policy_explain(g, po.rules, po.nrules, cmd, ncmd, po.pretty, &err);
				tg_gate_close(g);
			}
			if (out && !po.json && !po.pretty && cli_tty(stdout)) {
				print_explained(out);
				free(out);
				free(po.rules);
				return 0;
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
