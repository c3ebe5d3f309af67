/*
 * util.c — what the subcommands share beyond output for people (term.c):
 * the error line, the shared gate options (cli_getopt: the getopt tail every
 * command had) and opening the gate with them, reading an input file, --since.
 *
 * Owns: those helpers.  Must not: know a subcommand (main.c has the table,
 * cmd_<name>.c the commands).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("toolgate: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_parse_since(const char *s, long long *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && *end && !end[1]) {
		double mult = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600
		            : *end == 'd'  ? 86400 : 0;
		/* at most back to the epoch (larger durations, inf: every call) */
		double now = (double)time(NULL);
		if (mult > 0 && v >= 0) {
			*out = v * mult < now ? (long long)((now - v * mult) * 1000) : 1;
			return 0;
		}
	}
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *rest = strptime(s, "%Y-%m-%d", &tm);
	if (rest && *rest == 'T')
		rest = strptime(rest + 1, "%H:%M:%S", &tm);
	if (!rest || (*rest && strcmp(rest, "Z")))
		return -1;
	*out = (long long)timegm(&tm) * 1000;
	return 0;
}

void cli_gate_opts_init(cli_gate_opts *g)
{
	memset(g, 0, sizeof *g);
	g->o.sync_full = -1;
}

int cli_gate_opt(cli_gate_opts *g, int opt, const char *arg)
{
	switch (opt) {
	case OPT_CONFIG:    g->o.config_path = arg; return 1;
	case OPT_WORKSPACE: g->o.workspace = arg; return 1;
	case OPT_MODE:      g->o.mode = arg; return 1;
	case OPT_APPROVAL:  g->o.approval = arg; return 1;
	case OPT_PROFILE:   g->o.profile = arg; return 1;
	case OPT_MAX_PARALLEL:
		g->o.max_parallel = atoi(arg);
		return g->o.max_parallel >= 1 ? 1 : -1;
	case OPT_WAIT_APPROVAL:
		g->o.approval_wait_s = atoi(arg);
		return g->o.approval_wait_s >= 1 && g->o.approval_wait_s <= 86400 ? 1 : -1;
	case OPT_SYNC:
		if (!strcmp(arg, "full"))
			g->o.sync_full = 1;
		else if (!strcmp(arg, "normal"))
			g->o.sync_full = 0;
		else
			return -1;
		return 1;
	default:
		return 0;
	}
}

void cli_foreign_warning(const char *why)
{
	if (why)
		fprintf(stderr, "toolgate: warning: %s.  It is shown as it is: nothing in it carries "
		        "authority, and nothing is written to it.\n", why);
}

tg_gate *cli_gate_open(cli_gate_opts *g)
{
	tg_gate *gate;
	char *err = NULL;
	if (tg_gate_open(&g->o, &gate, &err) < 0) {
		cli_error("%s", err ? err : "cannot open the gate");
		free(err);
		return NULL;
	}
	cli_foreign_warning(tg_gate_foreign(gate));
	return gate;
}

int cli_no_ledger(tg_gate *g)
{
	char where[1024];
	int exists;
	tg_gate_ledger(g, &exists, where, sizeof where);
	if (exists)
		return 0;
	fprintf(stderr, "toolgate: there is no ledger at '%s' yet: nothing has been recorded "
	        "here\n", where);
	return 1;
}

char *cli_read_input(const char *path, size_t max, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f) {
		cli_error("cannot read \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap > max) /* read one byte past max so the gate can say it is too big */
				break;
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	if (f != stdin)
		fclose(f);
	if (bad) {
		free(buf);
		cli_error("cannot read \"%s\"", path);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int cli_getopt(cli_run *r, int argc, char **argv, const char *shortopts,
               const struct option *longopts)
{
	for (;;) {
		int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
		if (opt == -1)
			return 0;
		if (opt == 'h') {
			fputs(r->usage, stdout);
			r->rc = 0;
			return -1;
		}
		int shared = cli_gate_opt(&r->go, opt, optarg);
		if (!shared)
			shared = cli_color_opt(opt, optarg);
		if (shared == 1)
			continue;
		if (!shared && opt != '?')
			return opt;
		r->rc = cli_usage(r);   /* not an option, or a bad value of a shared one */
		return -1;
	}
}

int cli_usage(const cli_run *r)
{
	fputs(r->usage, stderr);
	return 1;
}
