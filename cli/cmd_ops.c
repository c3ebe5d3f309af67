/*
 * cmd_ops.c — `toolgate ops resolve OP --applied yes|no`: the operator
 * settles an unknown outcome (an in_flight call whose process died).
 * `yes`: a repeat of the call replays; `no`: a repeat may run again.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate ops resolve OP_ID --applied yes|no\n\n"
	"Settle a call whose outcome is unknown (its process stopped while it ran).\n\n"
	"options:\n"
	"  --applied yes|no     yes: it took effect, repeats of the call replay it; no: it\n"
	"                       did not, a repeat may run it again\n"
	CLI_GATE_OPTIONS_HELP;

int cmd_ops(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"applied", 1, 0, 'a'}, {"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	cli_gate_opts go;
	int applied = -1, opt;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			applied = !strcmp(optarg, "yes") ? 1 : !strcmp(optarg, "no") ? 0 : -2;
			if (applied == -2)
				return cli_error("--applied: expected yes or no, got \"%s\"", optarg);
			break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return 1;
		}
	}
	if (optind + 2 != argc || strcmp(argv[optind], "resolve")) {
		fputs(usage_text, stderr);
		return 1;
	}
	if (applied < 0)
		return cli_error("ops resolve: say whether it took effect with --applied yes|no");
	tg_gate *g = cli_gate_open(&go);
	if (!g)
		return 1;
	char *err = NULL;
	int code = 0;
	if (tg_op_resolve(g, argv[optind + 1], applied, &err) < 0)
		code = cli_error("%s", err ? err : "cannot resolve the op");
	else
		printf("resolved %s: applied %s\n", argv[optind + 1], applied ? "yes" : "no");
	free(err);
	tg_gate_close(g);
	return code;
}
