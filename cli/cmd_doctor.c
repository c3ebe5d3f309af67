/*
 * cmd_doctor.c — `toolgate doctor`: what this machine gives the gate: the
 * sandbox backend and whether each sandbox mode is enforceable, the
 * Landlock ABI, seccomp, how a process limit is enforced, and the
 * configuration's execpolicy files.  On a terminal as lines for a person;
 * to a pipe as indented JSON, with --json as compact JSON.  Exit 0; 1 if
 * the configuration does not load.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate doctor [--json]\n\n"
	"What this machine gives the gate: the sandbox backend (bubblewrap, Landlock, none),\n"
	"whether each sandbox mode is enforceable, seccomp, process limits, execpolicy files:\n"
	"on a terminal as a summary, to a pipe as the whole report in JSON.\n\n"
	"options:\n"
	"  --json               the whole report as compact JSON (a pipe gets it indented)\n"
	CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void label(const char *l)
{
	cli_paint(stdout, "1", l);
	printf("%*s", 12 - (int)strlen(l), "");
}

static void yes_no(int ok)
{
	cli_paint(stdout, ok ? "32" : "31", ok ? "yes" : "no");
}

/* A list of paths on one line, after a sub-label. */
static void paths(json_t *v, const char *what)
{
	size_t i;
	json_t *p;
	if (!json_array_size(v))
		return;
	printf("  %-10s", what);
	json_array_foreach(v, i, p) {
		if (i)
			putchar(' ');
		cli_paint(stdout, "", json_string_value(p));
	}
	putchar('\n');
}

/* A sandbox view (the shell's, a tool's, a server's): mode, backend, usable. */
static void view(json_t *v)
{
	if (json_string_value(json_object_get(v, "sandbox"))) {   /* a server over HTTP */
		cli_paint(stdout, "", str(v, "sandbox"));
		putchar('\n');
		return;
	}
	cli_paint(stdout, "", str(v, "mode"));
	fputs(" (", stdout);
	cli_paint(stdout, "", str(v, "backend"));
	fputs("), usable ", stdout);
	yes_no(json_is_true(json_object_get(v, "usable")));
	json_t *net = json_object_get(v, "network");
	fputs(", network ", stdout);
	if (json_is_array(net)) {
		char *s = json_dumps(net, JSON_COMPACT);
		cli_paint(stdout, "", s);
		free(s);
	} else {
		fputs(json_is_true(net) ? "on" : "off", stdout);
	}
	if (json_string_value(json_object_get(v, "why"))) {
		fputs(": ", stdout);
		cli_paint(stdout, "31", str(v, "why"));
	}
	putchar('\n');
}

/* What a person asks doctor: can this machine confine the commands, and
 * how; the rest (refused system calls, what each backend cannot do) is in
 * the JSON. */
static void print_human(const char *text)
{
	json_t *d = json_loads(text, 0, NULL), *v;
	const char *k;
	label("sandbox");
	cli_paint(stdout, "", str(d, "backend"));
	json_t *bw = json_object_get(d, "bubblewrap");
	if (json_is_true(json_object_get(bw, "ok"))) {
		fputs(" (", stdout);
		cli_paint(stdout, "", str(bw, "path"));
		putchar(')');
	}
	printf(", Landlock ABI %lld, seccomp ",
	       (long long)json_integer_value(json_object_get(d, "landlock_abi")));
	yes_no(json_is_true(json_object_get(d, "seccomp")));
	putchar('\n');
	if (json_string_value(json_object_get(bw, "why"))) {
		printf("%12s", "");
		cli_paint(stdout, "33", str(bw, "why"));
		putchar('\n');
	}
	label("modes");
	json_object_foreach(json_object_get(d, "modes"), k, v) {
		cli_paint(stdout, "", k);
		putchar(' ');
		yes_no(json_is_true(json_object_get(v, "enforceable")));
		fputs("  ", stdout);
	}
	putchar('\n');
	json_t *nets = json_object_get(d, "network");
	json_t *net = json_object_get(nets, str(nets, "backend"));   /* this machine's backend's */
	if (json_object_size(net)) {
		label("network");
		json_object_foreach(net, k, v) {
			fputs(!strcmp(k, "false") ? "off " : !strcmp(k, "true") ? "on " : "hosts ", stdout);
			yes_no(json_is_true(json_object_get(v, "enforceable")));
			fputs("  ", stdout);
		}
		putchar('\n');
	}
	label("processes");
	cli_paint(stdout, "", str(d, "process_limit"));
	putchar('\n');
	json_t *sh = json_object_get(d, "shell");
	if (sh) {
		label("shell");
		view(sh);
		paths(json_object_get(sh, "writable"), "writable");
		paths(json_object_get(sh, "hidden"), "hidden");
		paths(json_object_get(json_object_get(sh, "read_rules"), "hidden"), "read rules");
	}
	json_object_foreach(json_object_get(d, "tools"), k, v) {
		label("tool");
		cli_paint(stdout, "", k);
		fputs(": ", stdout);
		view(v);
	}
	json_object_foreach(json_object_get(d, "servers"), k, v) {
		label("server");
		cli_paint(stdout, "", k);
		fputs(": ", stdout);
		view(v);
	}
	json_t *cfg = json_object_get(d, "config");
	if (cfg) {
		label("config");
		cli_paint(stdout, "", json_string_value(json_object_get(cfg, "file"))
		                          ? str(cfg, "file") : "(built-in defaults)");
		putchar('\n');
		label("workspace");
		cli_paint(stdout, "", str(cfg, "workspace"));
		putchar('\n');
		label("execpolicy");
		printf("%zu file%s, %lld rule%s\n", json_array_size(json_object_get(cfg, "execpolicy")),
		       json_array_size(json_object_get(cfg, "execpolicy")) == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(cfg, "execpolicy_rules")),
		       json_integer_value(json_object_get(cfg, "execpolicy_rules")) == 1 ? "" : "s");
	}
	puts("(the whole report: toolgate doctor --json)");
	json_decref(d);
}

static int json;   /* --json */

int cmd_doctor(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", 0, 0, 'j'}, {"help", 0, 0, 'h'}, CLI_COLOR_LONGOPT, CLI_GATE_LONGOPTS,
		{0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'j': json = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind != argc)
		return cli_usage(r);
	return CLI_RUN;
}

int cmd_doctor_run(cli_run *r)
{
	char *out = tg_doctor(r->g, !json);
	if (!json && cli_tty(stdout))
		print_human(out);
	else
		printf("%s\n", out);
	free(out);
	return 0;
}
