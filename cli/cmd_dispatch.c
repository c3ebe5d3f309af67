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

static const char *api, *session, *as;   /* --protocol, --session, --as */
static int         stream;                /* --stream */
static char       *text;                  /* the response, read before the gate opens */
static size_t      len;

static void drop_text(void)
{
	free(text);
}

int cmd_dispatch(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"protocol", 1, 0, 'p'}, {"stream", 0, 0, 's'}, {"session", 1, 0, 'S'},
		{"as", 1, 0, 'a'}, {"help", 0, 0, 'h'},
		CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'p': api = optarg; break;
		case 's': stream = 1; break;
		case 'S': session = optarg; break;
		case 'a': as = optarg; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (!api)
		return cli_error("dispatch: say which API with --protocol (openai-chat, "
		                 "openai-responses, anthropic, gemini)");
	if (argc - optind > 1)
		return cli_error("dispatch reads one response (a file or -)");
	text = cli_read_input(optind < argc ? argv[optind] : "-", INPUT_MAX, &len);
	if (!text)
		return 1;
	r->done = drop_text;
	return CLI_RUN;
}

int cmd_dispatch_run(cli_run *r)
{
	char *err = NULL, *summary = NULL;
	char *out = tg_dispatch(r->g, api, text, len, stream, session, as, &summary, &err);
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
	return code;
}
