/*
 * cmd_dispatch.c — `toolgate dispatch --protocol API [--stream]
 * [--session S] [--as P] [--max-parallel N] [FILE|-]`: read what a model
 * returned (a JSON response, or with --stream its raw SSE stream), run
 * every tool call through the gate as one batch, print the result
 * message(s) in that API's shape on stdout and a line per call on stderr.
 * Exit 0 when every call got a result, whatever its status.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

#define INPUT_MAX (64u << 20)

static const char usage_text[] =
	"usage: toolgate dispatch --protocol API [--stream] [--session S] [--as P]\n"
	"                         [options] [FILE | -]\n\n"
	"API: openai-chat, openai-responses, anthropic, gemini.  Reads the model's response\n"
	"(or with --stream its SSE stream) from FILE or stdin, runs every tool call through\n"
	"the gate (in parallel where safe), prints the tool-result message(s) that API\n"
	"expects, and one line per call on stderr: call_id tool status [kind: message].\n\n"
	"options:\n"
	"  --protocol API       the API the response is in (required)\n"
	"  --stream             the input is the response's raw SSE stream\n"
	"  --session S          the session of every call\n"
	"  --as P               the principal of every call\n"
	CLI_GATE_OPTIONS_HELP;

int cmd_dispatch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"protocol", 1, 0, 'p'}, {"stream", 0, 0, 's'}, {"session", 1, 0, 'S'},
		{"as", 1, 0, 'a'}, {"help", 0, 0, 'h'},
		CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	cli_gate_opts go;
	const char *api = NULL, *session = NULL, *as = NULL;
	int opt, stream = 0;
	cli_gate_opts_init(&go);
	go.o.bridge = 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': api = optarg; break;
		case 's': stream = 1; break;
		case 'S': session = optarg; break;
		case 'a': as = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return 1;
		}
	}
	if (!api)
		return cli_error("dispatch: say which API with --protocol (openai-chat, "
		                 "openai-responses, anthropic, gemini)");
	if (argc - optind > 1)
		return cli_error("dispatch reads one response (a file or -)");
	size_t len;
	char *text = cli_read_input(optind < argc ? argv[optind] : "-", INPUT_MAX, &len);
	if (!text)
		return 1;
	tg_gate *g = cli_gate_open(&go);
	if (!g) {
		free(text);
		return 1;
	}
	char *err = NULL, *summary = NULL;
	char *out = tg_dispatch(g, api, text, len, stream, session, as, &summary, &err);
	int code = 0;
	if (out) {
		puts(out);
		if (summary)
			fputs(summary, stderr);
	} else {
		code = cli_error("%s", err ? err : "cannot dispatch");
	}
	free(out);
	free(summary);
	free(err);
	free(text);
	tg_gate_close(g);
	return code;
}
