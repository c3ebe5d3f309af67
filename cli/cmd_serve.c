/*
 * cmd_serve.c — `toolgate serve`: the gate as an MCP server, on stdio (the
 * default) and/or Streamable HTTP, with the configuration's mcp_servers
 * bridged.  SIGINT and SIGTERM stop it cleanly: running calls are
 * cancelled, bridged servers shut down.  Started by hand on a terminal, it
 * says on stderr what it is, so that it does not look hung.  Exit 0; 1 on
 * a usage or startup error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate serve [--stdio] [--http HOST:PORT] [options]\n\n"
	"Serve the gate to MCP clients (protocol 2025-11-25): every tools/call passes the\n"
	"gate's policy, approvals, ledger and events.  Without --http: stdio.\n\n"
	"options:\n"
	"  --stdio                serve on stdin/stdout (also with --http)\n"
	"  --http HOST:PORT       Streamable HTTP on http://HOST:PORT/mcp (port 0: any free one;\n"
	"                         the address is printed on stderr)\n"
	"  --http-any             allow a non-loopback HTTP address\n"
	"  --allow-origin ORIGIN  an Origin HTTP accepts besides loopback ones (repeatable)\n"
	"  --as PRINCIPAL         the principal of stdio calls (default: the default one)\n"
	"  --page-size N          tools/list page size (default 100)\n"
	"  --max-line BYTES       longest message accepted (default 16 MiB)\n"
	"  --elicitation-timeout S  how long an approval question may wait (default 300)\n"
	"  --progress-ms N        heartbeat progress interval of a long call (default 1000)\n"
	"  --approvals-via HOW    how a call that needs approval reaches the client's user:\n"
	"                         elicitation, queue, or both (ask; queue it when the question\n"
	"                         is cancelled); default: approvals.via, else both\n"
	CLI_GATE_OPTIONS_HELP;

static void on_signal(int sig)
{
	tg_serve_stop_signal(sig);
}

/* The value s of --name as a whole number from 1 to max; -1, said on
 * stderr, when it is not one. */
static int positive(const char *name, const char *s, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > max) {
		cli_error("serve: --%s takes a whole number from 1 to %ld, not \"%s\"", name, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static tg_serve_options so;
static const char     **origins;   /* --allow-origin, each */

static void drop_origins(void)
{
	free(origins);
}

int cmd_serve(cli_run *r, int argc, char **argv)
{
	enum { O_STDIO = 1, O_HTTP, O_ANY, O_ORIGIN, O_AS, O_PAGE, O_LINE, O_ELICIT, O_PROGRESS,
	       O_VIA };
	static const struct option longopts[] = {
		{"stdio", 0, 0, O_STDIO}, {"http", 1, 0, O_HTTP}, {"http-any", 0, 0, O_ANY},
		{"allow-origin", 1, 0, O_ORIGIN}, {"as", 1, 0, O_AS}, {"page-size", 1, 0, O_PAGE},
		{"max-line", 1, 0, O_LINE}, {"elicitation-timeout", 1, 0, O_ELICIT},
		{"progress-ms", 1, 0, O_PROGRESS}, {"approvals-via", 1, 0, O_VIA},
		{"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS,
		{0, 0, 0, 0},
	};
	int opt;
	long v;
	origins = calloc((size_t)argc + 1, sizeof *origins);
	r->done = drop_origins;
	so.origins = origins;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case O_STDIO:  so.stdio = 1; break;
		case O_HTTP:   so.http = optarg; break;
		case O_ANY:    so.http_any = 1; break;
		case O_ORIGIN: origins[so.norigins++] = optarg; break;
		case O_AS:     so.principal = optarg; break;
		case O_PAGE:
			if (positive("page-size", optarg, 100000, &v) < 0)
				return 1;
			so.page_size = (size_t)v;
			break;
		case O_LINE:
			if (positive("max-line", optarg, 1L << 30, &v) < 0)
				return 1;
			so.max_line = (size_t)v;
			break;
		case O_ELICIT:
			if (positive("elicitation-timeout", optarg, 86400, &v) < 0)
				return 1;
			so.elicit_timeout_s = (int)v;
			break;
		case O_PROGRESS:
			if (positive("progress-ms", optarg, 3600000, &v) < 0)
				return 1;
			so.progress_ms = (int)v;
			break;
		case O_VIA:
			if (strcmp(optarg, "elicitation") && strcmp(optarg, "queue") &&
			    strcmp(optarg, "both"))
				return cli_error("serve: --approvals-via takes elicitation, queue or both, "
				                 "not \"%s\"", optarg);
			so.approvals_via = optarg;
			break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind != argc)
		return cli_usage(r);
	if (!so.http)
		so.stdio = 1;
	return CLI_RUN;
}

int cmd_serve_run(cli_run *r)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (so.stdio && isatty(STDIN_FILENO))
		fputs("toolgate serve: an MCP server on stdin/stdout, for an MCP client to start "
		      "(see README.md, \"Use it from your MCP client\"); Ctrl-D to quit\n", stderr);
	char *err = NULL;
	if (tg_serve(r->g, &so, &err) < 0) {
		cli_error("%s", err);
		free(err);
		return 1;
	}
	return 0;
}
