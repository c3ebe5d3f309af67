/*
 * cmd_ops.c — `toolgate ops list --unknown`: the calls whose outcome is
 * unknown (interrupted, killed, timed out while they could have acted);
 * `toolgate ops resolve OP --applied yes|no`: the operator settles one.
 * `yes`: a repeat of the call replays; `no`: a repeat may run again.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate ops list --unknown [--json]\n"
	"       toolgate ops resolve OP_ID --applied yes|no\n\n"
	"list --unknown: the calls whose outcome is unknown (they may or may not have\n"
	"taken effect: interrupted, timed out, or their process stopped while they ran).\n"
	"resolve: settle one of them.\n\n"
	"options:\n"
	"  --unknown            list the calls whose outcome is unknown\n"
	"  --applied yes|no     yes: it took effect, repeats of the call replay it; no: it\n"
	"                       did not, a repeat may run it again\n"
	"  --json               list as JSON\n" CLI_GATE_OPTIONS_HELP;

/* One call of the list, for people. */
static void print_unknown(const json_t *c)
{
	const char *tool = json_string_value(json_object_get(c, "tool"));
	const char *msg = json_string_value(json_object_get(c, "message"));
	const char *claim = json_string_value(json_object_get(c, "claim"));
	printf("%s  %s  %s%s%s\n", json_string_value(json_object_get(c, "op_id")),
	       json_string_value(json_object_get(c, "started")),
	       tool ? tool : "(its process stopped before the call was recorded)",
	       claim ? "  claim " : "", claim ? claim : "");
	if (msg)
		printf("    %s\n", msg);
}

static int list_unknown(tg_gate *g, int as_json)
{
	char *err = NULL;
	char *text = tg_ops_unknown(g, &err);
	if (!text) {
		cli_error("%s", err ? err : "cannot list the calls whose outcome is unknown");
		free(err);
		return 1;
	}
	json_t *arr = json_loads(text, 0, NULL);
	free(text);
	if (as_json) {
		char *s = json_dumps(arr, JSON_INDENT(2));
		puts(s ? s : "[]");
		free(s);
	} else if (!json_array_size(arr)) {
		puts("no call has an unknown outcome");
	} else {
		size_t i;
		json_t *c;
		json_array_foreach(arr, i, c)
			print_unknown(c);
		printf("\n%zu call%s; settle each with: toolgate ops resolve OP_ID --applied yes|no\n",
		       json_array_size(arr), json_array_size(arr) == 1 ? "" : "s");
	}
	json_decref(arr);
	return 0;
}

static int         applied = -1, unknown, as_json;   /* --applied, --unknown, --json */
static int         listing;                          /* ops list, else ops resolve */
static const char *op_id;                            /* ops resolve OP_ID */

int cmd_ops(cli_run *r, int argc, char **argv)
{
	enum { O_UNKNOWN = 1, O_JSON };
	static const struct option longopts[] = {
		{"applied", 1, 0, 'a'}, {"unknown", 0, 0, O_UNKNOWN}, {"json", 0, 0, O_JSON},
		{"help", 0, 0, 'h'},    CLI_GATE_LONGOPTS,           {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'a':
			applied = !strcmp(optarg, "yes") ? 1 : !strcmp(optarg, "no") ? 0 : -2;
			if (applied == -2)
				return cli_error("--applied: expected yes or no, got \"%s\"", optarg);
			break;
		case O_UNKNOWN: unknown = 1; break;
		case O_JSON: as_json = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	int list = optind + 1 == argc && !strcmp(argv[optind], "list");
	if (!list && (optind + 2 != argc || strcmp(argv[optind], "resolve")))
		return cli_usage(r);
	if (list && !unknown)
		return cli_error("ops list: say which calls: --unknown (those whose outcome is "
		                 "unknown); toolgate log lists every call");
	if (list && applied >= 0)
		return cli_error("ops list: --applied belongs to ops resolve");
	if (!list && (unknown || as_json))
		return cli_error("ops resolve: --unknown and --json belong to ops list");
	if (!list && applied < 0)
		return cli_error("ops resolve: say whether it took effect with --applied yes|no");
	r->go.o.no_create = list;        /* a list reads the ledger that is there */
	r->go.o.foreign_ok = list;       /* ... a foreign one too; resolving writes */
	listing = list;
	op_id = list ? NULL : argv[optind + 1];
	return CLI_RUN;
}

int cmd_ops_run(cli_run *r)
{
	if (listing)
		return list_unknown(r->g, as_json);
	char *err = NULL;
	int code = 0;
	if (tg_op_resolve(r->g, op_id, applied, &err) < 0)
		code = cli_error("%s", err ? err : "cannot resolve the op");
	else
		printf("resolved %s: applied %s\n", op_id, applied ? "yes" : "no");
	free(err);
	return code;
}
