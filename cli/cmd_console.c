/*
 * cmd_console.c — `toolgate console`: the web console (tg_console) for the
 * ledger of the configuration's workspace.  The gate is opened without its
 * bridged servers (the console runs no call).  Once it listens, the
 * one-use sign-in URL and the access token are printed on stderr; SIGINT
 * and SIGTERM stop it cleanly.  Exit 0; 1 on a usage or startup error (a
 * taken port, a ledger that cannot be opened).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate console [--http HOST:PORT] [--allow-remote] [options]\n\n"
	"Serve the web console: every call live, the approvals queue (approve or deny),\n"
	"one call in full, stats and agent sessions, from the ledger.  It prints a one-use\n"
	"sign-in URL and the access token on stderr.\n\n"
	"options:\n"
	"  --http HOST:PORT       where to listen (default: console.listen, else\n"
	"                         127.0.0.1:8760; port 0: any free one)\n"
	"  --allow-remote         allow a non-loopback address\n"
	"  the access token: $NAME when the config says console: {token_env: NAME},\n"
	"  else a random one each start\n"
	CLI_GATE_OPTIONS_HELP;

static void on_signal(int sig)
{
	(void)sig;
	tg_console_stop();
}

static void on_ready(void *arg, const char *login_url, const char *token)
{
	(void)arg;
	/* a token the configuration gave is a secret of the deployment: not for logs */
	fprintf(stderr, "console: %s\ntoken: %s\n", login_url,
	        token ? token : "(from console.token_env)");
	fflush(stderr);
}

static tg_console_options co;   /* --http, --allow-remote */

int cmd_console(cli_run *r, int argc, char **argv)
{
	enum { O_HTTP = 1, O_REMOTE };
	static const struct option longopts[] = {
		{"http", 1, 0, O_HTTP}, {"allow-remote", 0, 0, O_REMOTE}, {"help", 0, 0, 'h'},
		CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	co.ready = on_ready;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case O_HTTP:   co.listen = optarg; break;
		case O_REMOTE: co.allow_remote = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind != argc)
		return cli_usage(r);
	return CLI_RUN;
}

int cmd_console_run(cli_run *r)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	char *err = NULL;
	if (tg_console(r->g, &co, &err) < 0) {
		cli_error("%s", err);
		free(err);
		return 1;
	}
	return 0;
}
