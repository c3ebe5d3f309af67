/*
 * cmd_tools.c — `toolgate tools [--format API] [--gemini-legacy] [--digest]`:
 * the tool definitions a model may use under a profile, as our JSON or as
 * the `tools` array of a model API, and the manifest digest that names them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate tools [--format API] [--gemini-legacy] [--digest] [options]\n\n"
	"Prints the definitions of the tools available under the profile: as a JSON array of\n"
	"{name, description, input_schema, annotations}, or with --format as the `tools` array\n"
	"of a model API: openai-chat, openai-responses, anthropic, gemini (schemas translated\n"
	"to its dialect; --gemini-legacy: Gemini's OpenAPI-subset `parameters`).\n"
	"The manifest digest (sha256 of the canonical definitions) goes to stderr; with\n"
	"--digest it alone is printed, on stdout.  A session whose digest changes between\n"
	"two of its calls gets a tool.manifest.changed event in the ledger.\n\n"
	"options:\n"
	"  --format API         the tools array of openai-chat, openai-responses, anthropic\n"
	"                       or gemini\n"
	"  --gemini-legacy      with --format gemini: the OpenAPI-subset `parameters`\n"
	"  --digest             print only the manifest digest\n"
	CLI_GATE_OPTIONS_HELP;

static const char *format;                /* --format API */
static int         legacy, digest_only;   /* --gemini-legacy, --digest */

int cmd_tools(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", 1, 0, 'f'}, {"gemini-legacy", 0, 0, 'g'}, {"digest", 0, 0, 'd'},
		{"help", 0, 0, 'h'},
		CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'f': format = optarg; break;
		case 'g': legacy = 1; break;
		case 'd': digest_only = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind < argc)
		return cli_error("unexpected argument '%s'", argv[optind]);
	if (legacy && (!format || strcmp(format, "gemini")))
		return cli_error("--gemini-legacy goes with --format gemini");
	return CLI_RUN;
}

int cmd_tools_run(cli_run *r)
{
	char *err = NULL, digest[65];
	int code = 0;
	if (tg_tools_digest(r->g, NULL, digest, &err) < 0) {
		code = cli_error("%s", err ? err : "cannot list tools");
		free(err);
		return code;
	}
	if (digest_only) {
		puts(digest);
		return 0;
	}
	char *s = format ? tg_tools_format(r->g, NULL, format, legacy, &err)
	                 : tg_tools_json(r->g, NULL, &err);
	if (s) {
		puts(s);
		fprintf(stderr, "manifest sha256:%s\n", digest);
	} else {
		code = cli_error("%s", err ? err : "cannot list tools");
	}
	free(s);
	free(err);
	return code;
}
