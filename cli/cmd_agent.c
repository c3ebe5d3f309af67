/*
 * cmd_agent.c — `toolgate agent [--provider P] [--model M] [--base-url URL]
 * [--script FILE] [--max-turns N] [--session S | --resume S] [--json]
 * [--as P] [gate options] PROMPT`: a model using tools through the gate
 * (tg_agent).  A provider must be named: an HTTP one, scripted (a replay
 * of --script FILE, which alone implies it) or demo (the built-in demo
 * script, as make demo runs it); without one it refuses, exit 2, rather
 * than run a script the user did not ask for in their directory.
 * Exit 0 when the model finished, 2 when --max-turns stopped it or no
 * provider was named, 1 for a usage, configuration or provider error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PROMPT_MAX (1u << 20)

static const char usage_text[] =
	"usage: toolgate agent [--provider P] [--model M] [--base-url URL] [--script FILE]\n"
	"                      [--max-turns N] [--session S | --resume S] [--json] [--as P]\n"
	"                      [options] PROMPT...\n\n"
	"Runs a model with the gate's tools: every turn's tool calls go through the gate as\n"
	"one batch, their results go back to the model, until it answers without calls.\n"
	"The conversation is kept in the ledger under the session: `toolgate log --session S`\n"
	"shows its calls, `toolgate agent --resume S [PROMPT]` continues it.\n\n"
	"  --provider P         openai-chat | openai-responses | anthropic | gemini (keys from\n"
	"                       OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY); scripted:\n"
	"                       offline, replays --script FILE; demo: offline, the built-in demo\n"
	"                       script (make demo).  Required (--script FILE alone: scripted)\n"
	"  --model M            the provider's model (default: the provider's own)\n"
	"  --base-url URL       an OpenAI-compatible server (llama.cpp, vLLM, Ollama) or a proxy\n"
	"  --script FILE        scripted: the script of model turns\n"
	"  --max-turns N        model replies at most (default 20); exit 2 when reached\n"
	"  --session S          the session of a new conversation (default: agent-<uuid>)\n"
	"  --resume S           continue session S; PROMPT, if given, is a new user message\n"
	"  --json               one JSON line per event instead of the transcript\n"
	"  --as P               the principal every call is made as\n\n"
	"exit: 0 the model finished, 2 --max-turns stopped it (or no provider was named),\n"
	"      1 usage, configuration or provider error\n\n"
	"options:\n" CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

/* The words after the options, joined by spaces (caller frees), or NULL. */
static char *join_prompt(int argc, char **argv)
{
	size_t n = 0;
	for (int i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	if (!argc || n > PROMPT_MAX)
		return NULL;
	char *s = malloc(n + 1), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]);
		if (i)
			*p++ = ' ';
		memcpy(p, argv[i], l);
		p += l;
	}
	*p = '\0';
	return s;
}

static tg_agent_options ao;
static char            *prompt;   /* the words after the options, joined */

static void drop_prompt(void)
{
	free(prompt);
}

int cmd_agent(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"provider", 1, 0, 'P'}, {"model", 1, 0, 'm'}, {"base-url", 1, 0, 'u'},
		{"script", 1, 0, 'f'},   {"max-turns", 1, 0, 't'}, {"session", 1, 0, 'S'},
		{"resume", 1, 0, 'r'},   {"json", 0, 0, 'j'},     {"as", 1, 0, 'a'},
		{"help", 0, 0, 'h'},     CLI_COLOR_LONGOPT,       CLI_GATE_LONGOPTS,
		{0, 0, 0, 0},
	};
	const char *resume = NULL;
	int opt;
	r->usage = usage_text;
	r->done = drop_prompt;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		char *end;
		switch (opt) {
		case 'P': ao.provider = optarg; break;
		case 'm': ao.model = optarg; break;
		case 'u': ao.base_url = optarg; break;
		case 'f': ao.script = optarg; break;
		case 'S': ao.session = optarg; break;
		case 'r': resume = optarg; break;
		case 'j': ao.json = 1; break;
		case 'a': ao.principal = optarg; break;
		case 't': {
			long v = strtol(optarg, &end, 10);
			if (end == optarg || *end || v < 1 || v > 10000)
				return cli_error("agent: --max-turns takes a number from 1 to 10000, not "
				                 "\"%s\"", optarg);
			ao.max_turns = (int)v;
			break;
		}
		}
	}
	if (opt < 0)
		return r->rc;
	if (!ao.provider && !ao.script) {
		cli_error("agent: name the model with --provider: anthropic, openai-chat, "
		          "openai-responses or gemini (a real model), --provider scripted --script FILE "
		          "(a replay of your script), or --provider demo (the built-in demo script; "
		          "`make demo` runs it on a fresh copy of examples/demo)");
		return 2;
	}
	if (ao.provider && !strcmp(ao.provider, "demo")) {
		if (ao.script)
			return cli_error("agent: --provider demo plays the built-in script; --script is "
			                 "for --provider scripted");
		ao.provider = "scripted";    /* without a script: the built-in demo script */
	} else if (ao.provider && !strcmp(ao.provider, "scripted") && !ao.script) {
		cli_error("agent: --provider scripted replays a script: give it with --script FILE "
		          "(the built-in demo: --provider demo)");
		return 2;
	}
	ao.color = !ao.json && cli_color(stdout);
	if (resume && ao.session && strcmp(resume, ao.session))
		return cli_error("agent: --session and --resume name different sessions");
	if (resume) {
		ao.session = resume;
		ao.resume = 1;
	}
	prompt = join_prompt(argc - optind, argv + optind);
	if (!prompt && optind < argc)
		return cli_error("agent: the prompt is too long (at most %u bytes)", PROMPT_MAX);
	if (!resume && (!prompt || !*prompt)) {
		cli_usage(r);
		return cli_error("agent: say what the agent should do (a PROMPT)");
	}
	if (ao.script && ao.provider && strcmp(ao.provider, "scripted"))
		return cli_error("agent: --script is for --provider scripted");
	ao.prompt = prompt;
	return CLI_RUN;
}

int cmd_agent_run(cli_run *r)
{
	char *err = NULL;
	int rc = tg_agent(r->g, &ao, &err);
	fflush(stdout);
	if (rc < 0)
		cli_error("agent: %s", err ? err : "stopped");
	free(err);
	return rc < 0 ? 1 : rc == 1 ? 2 : 0;
}
