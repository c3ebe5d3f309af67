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

static struct {
	const char **rules;                          /* --rules FILE, each */
	size_t       nrules;
	int          pretty, explain, resolve_host, json;
} po;
static const char         *sub;                /* check | test */
static const char *const  *cmd;                /* check: the command's words */
static size_t              ncmd;

static void drop_rules(void)
{
	free(po.rules);
}

/* Options up to the next word that is not one (the subcommand, or the
 * command after "--"): 0 parsed, -1 the command ends (cli_getopt). */
static int parse_opts(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"rules", 1, 0, 'r'}, {"pretty", 0, 0, 'p'}, {"explain", 0, 0, 'e'},
		{"resolve-host-executables", 0, 0, 'R'}, {"json", 0, 0, 'j'},
		{"help", 0, 0, 'h'}, CLI_COLOR_LONGOPT, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	while ((opt = cli_getopt(r, argc, argv, "+hr:", longopts)) > 0) {
		switch (opt) {
		case 'r': po.rules[po.nrules++] = optarg; break;
		case 'p': po.pretty = 1; break;
		case 'R': po.resolve_host = 1; break;
		case 'e': po.explain = 1; break;
		case 'j': po.json = 1; break;
		}
	}
	return opt;
}

/* Print the answer (JSON text) or say why there is none; frees both. */
static int answer(char *out, char *err)
{
	int code = 1;
	if (out) {
		printf("%s\n", out);
		code = 0;
	} else if (err) {
		cli_error("%s", err);
	}
	free(out);
	free(err);
	return code;
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

int cmd_policy(cli_run *r, int argc, char **argv)
{
	po.rules = calloc((size_t)argc + 1, sizeof(char *));
	r->done = drop_rules;
	r->usage = usage_text;
	/* options may come before the subcommand and after it */
	if (parse_opts(r, argc, argv) < 0)
		return r->rc;
	sub = optind < argc ? argv[optind++] : "";
	if (parse_opts(r, argc, argv) < 0)
		return r->rc;
	if (!strcmp(sub, "test") && optind == argc)
		return CLI_RUN;
	if (strcmp(sub, "check"))
		return cli_usage(r);
	if (optind >= argc)
		return cli_error("policy check: give the command after --, e.g. "
		                 "toolgate policy check -- git push origin main");
	cmd = (const char *const *)argv + optind;
	ncmd = (size_t)(argc - optind);
	if (po.json && !po.explain)
		return cli_error("policy check: --json goes with --explain (check prints "
		                 "Codex's JSON already)");
	if (po.explain)
		return CLI_RUN;           /* through the gate (its no_create, foreign_ok) */
	unsigned flags = (po.pretty ? TG_POLICY_PRETTY : 0) |
	                 (po.resolve_host ? TG_POLICY_RESOLVE_HOST : 0);
	char *err = NULL;
	char *out = tg_policy_check(r->go.o.config_path, po.rules, po.nrules, cmd, ncmd, flags,
	                            &err);
	return answer(out, err);
}

/* check --explain, or test */
int cmd_policy_run(cli_run *r)
{
	char *err = NULL;
	if (!strcmp(sub, "check")) {
		char *out = tg_policy_explain(r->g, po.rules, po.nrules, cmd, ncmd, po.pretty, &err);
		if (out && !po.json && !po.pretty && cli_tty(stdout)) {
			print_explained(out);
			free(out);
			return 0;
		}
		return answer(out, err);
	}
	char *report = NULL;
	int failed = tg_policy_test(r->g, &report, &err);
	if (report)
		fputs(report, stdout);
	if (failed < 0)
		cli_error("%s", err ? err : "policy test could not run");
	free(report);
	free(err);
	return failed != 0;
}
