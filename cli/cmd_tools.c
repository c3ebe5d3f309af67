/*
 * cmd_tools.c — `toolgate tools`: the tool definitions a model may use
 * under a profile, as JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate tools [options]\n\n"
	"Prints the definitions (name, description, input_schema, annotations) of the\n"
	"tools available under the profile, as a JSON array.\n\n"
	"options:\n" CLI_GATE_OPTIONS_HELP;

int cmd_tools(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	cli_gate_opts go;
	int opt;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return 0;
		}
		if (cli_gate_opt(&go, opt, optarg) != 1) {
			fputs(usage_text, stderr);
			return 1;
		}
	}
	if (optind < argc)
		return cli_error("unexpected argument '%s'", argv[optind]);
	tg_gate *g = cli_gate_open(&go);
	if (!g)
		return 1;
	char *err = NULL;
	char *s = tg_tools_json(g, NULL, &err);
	int code = 0;
	if (s)
		puts(s);
	else
		code = cli_error("%s", err ? err : "cannot list tools");
	free(s);
	free(err);
	tg_gate_close(g);
	return code;
}
