/*
 * cmd_doctor.c — `toolgate doctor`: what this machine gives the gate: the
 * sandbox backend and whether each sandbox mode is enforceable, the
 * Landlock ABI, seccomp, how a process limit is enforced, and the
 * configuration's execpolicy files.  Exit 0; 1 if the configuration does
 * not load.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate doctor [--json]\n\n"
	"What this machine gives the gate: the sandbox backend (bubblewrap, Landlock, none),\n"
	"whether each sandbox mode is enforceable, seccomp, process limits, execpolicy files.\n\n"
	"options:\n" CLI_GATE_OPTIONS_HELP;

int cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", 0, 0, 'j'}, {"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	cli_gate_opts go;
	int opt, json = 0;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fputs(usage_text, stderr);
		return 1;
	}
	go.o.no_create = 1;
	tg_gate *g = cli_gate_open(&go);
	if (!g)
		return 1;
	char *out = tg_doctor(g, !json);
	printf("%s\n", out);
	free(out);
	tg_gate_close(g);
	return 0;
}
